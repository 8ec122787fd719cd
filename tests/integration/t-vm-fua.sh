#!/bin/bash
# The FUA board, several virtual boards at once, and a host whose KVM is
# broken.
#
# One campaign on four virtual boards, one of each disk the qemu relay
# builds: vm1 the SD card (sdhci, no FUA), vm2 a SCSI disk (virtio-scsi +
# scsi-hd, write cache on, DPOFUA: the sd driver, UFS's path), vm3 an NVMe
# namespace (volatile write cache, FUA) and vm4 the SCSI disk without DPOFUA
# (relay.fua false: write cache on, no FUA), the last three booting
# build/vm/initrd-fua.img (tools/board/mkfua). The FUA disks' verdicts must
# say queue.fua 1, write cache "write back", and the fua mode run as fua; the
# SCSI disk's QEMU must have seen WRITEs with the FUA bit in the fua cycles
# and SYNCHRONIZE CACHE in the flush cycles (QEMU's scsi_disk_new_request
# trace); each board is a device of its own in `powercut report`.
# What reached each disk comes from the verdicts' io_audit (the agent's
# tracefs audit): native FUA writes on vm2 and vm3, FUA emulated by flushes
# on vm4, FUA and flushes dropped on the write-through SD card (vm1), each
# said by the report's "io: mode -> ..." lines.
#
# Every board runs a QEMU wrapper that aborts like QEMU on a host whose
# /dev/kvm opens but whose KVM fails at the first vCPU (kvm_buf_set_msrs:
# Assertion failed, SIGABRT) when asked for -accel kvm or -cpu host, and runs
# the real QEMU otherwise: accel "auto" must probe once, fall back to TCG,
# say so once, and record it (qemu.log, the kernel command line in the
# console logs), and the campaign must pass.
#
# Takes 2-3 minutes under software emulation, so `make check` skips it:
# `make vm-check` runs it (PC_VM_REQUIRE=1: a skip is a failure there), and
# PC_VM=1 runs it from tests/integration/run-all.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
passes=0
ok() { echo "  ok: $*"; passes=$((passes + 1)); }

CYCLES=${PC_VM_FUA_CYCLES:-4}
BOARDS="vm1 vm2 vm3 vm4"
vm_setup "four virtual boards take 2-3 min under TCG"
QEMU=$(command -v qemu-system-x86_64)

# a serial cable per board
cables=""
trap 'pc_rc=$?; kill $cables 2>/dev/null; rm_T' EXIT
for b in $BOARDS; do
	"$TOOLS/ptypair" "$T/ptys-$b" & cables="$cables $!"
done
for b in $BOARDS; do
	for _ in $(seq 300); do [ -s "$T/ptys-$b" ] && break; sleep 0.1; done
done

# QEMU on a host with a broken KVM: what kvm_buf_set_msrs does there, for
# any -accel kvm or -cpu host; the real QEMU for everything else
cat > "$T/qemu-brokenkvm" <<SH
#!/bin/sh
prev=
for a in "\$@"; do
	case "\$prev \$a" in
	"-accel kvm"*|"-machine accel=kvm"*|"-enable-kvm "*|"-cpu host")
		echo "\$*" >> "$T/kvm-attempts"
		echo "qemu-system-x86_64: ../../accel/kvm/kvm-all.c:1234: kvm_buf_set_msrs: Assertion \\\`ret == cpu->kvm_msr_buf->nmsrs' failed." >&2
		ulimit -c 0
		kill -ABRT \$\$ ;;
	esac
	prev=\$a
done
exec "$QEMU" "\$@"
SH
chmod +x "$T/qemu-brokenkvm"

# fresh disks: copies of the template's GPT and prepared region (the SCSI
# and NVMe disks need no power-of-two size, but the same image does)
for b in $BOARDS; do cp "$VM/sd.img" "$T/disk-$b.img"; done

board_json() { # NAME DISK INITRD MORE-RELAY-KEYS
	cat <<JSON
  { "name": "$1",
    "device": { "backend": "posix", "record_size": $record_size, "path": "PARTLABEL=$partlabel" },
    "link": { "type": "serial", "device": "$(sed -n 1p "$T/ptys-$1")", "baud": 115200,
              "boot_patterns": ["Linux version", "pc-init: starting"] },
    "relay": { "driver": "qemu", "qemu": "$T/qemu-brokenkvm", "disk": "$2", "kernel": "$VM/kernel",
               "initrd": "$VM/$3", "drive": "$T/disk-$1.img", "console": "$(sed -n 2p "$T/ptys-$1")"$4 },
    "modes": ["fua", "flush"], "records_per_cycle": 300, "flush_every": 4,
    "cut": { "at": "random", "window_ms": [100, 800] },
    "boot_timeout_ms": 90000, "verify_timeout_ms": 60000, "off_ms": 20 }
JSON
}
cat > "$T/c.json" <<JSON
{ "campaign": "it-vm-fua", "cycles": $CYCLES, "seed": 11,
  "boards": [
$(board_json vm1 sd initrd.img ""),
$(board_json vm2 scsi initrd-fua.img ', "extra_args": ["-trace", "scsi_disk_new_request"]'),
$(board_json vm3 nvme initrd-fua.img ', "serial": "PC-NVME-0003"'),
$(board_json vm4 scsi initrd-fua.img ', "fua": false')
  ] }
JSON
check "the campaign is valid" "$PC" check-config "$T/c.json"
check "the shipped configs/vm-fua.json is valid" "$PC" check-config configs/vm-fua.json

# the new keys' mistakes
cfg() { jq "$2" "$T/c.json" > "$1"; }
cfg "$T/bad1.json" '.boards[0].relay.serial = "X1"'
expect_fail "a serial for the SD card is refused (its CID is QEMU's, fixed)" \
	"serial: QEMU's SD card and eMMC have a fixed CID" "$PC" check-config "$T/bad1.json"
cfg "$T/bad2.json" '.boards[2].relay.serial = "123456789012345678901"'
expect_fail "a serial longer than NVMe's 20 characters is refused" "serial: expected 1 to 20 printable" \
	"$PC" check-config "$T/bad2.json"
cfg "$T/bad3.json" '.boards[1].relay.disk = "usb"'
expect_fail "an unknown disk is refused" 'disk: expected one of "sd", "scsi", "nvme"' "$PC" check-config "$T/bad3.json"
cfg "$T/bad5.json" '.boards[2].relay.fua = false'
expect_fail "fua false is refused for a disk other than SCSI" 'fua: only the SCSI disk ("disk": "scsi") can be told' \
	"$PC" check-config "$T/bad5.json"
cfg "$T/bad6.json" '.boards[3].relay.fua = "no"'
expect_fail "fua must be true or false" 'fua' "$PC" check-config "$T/bad6.json"
# accel kvm where KVM is broken: an error at open, never a QEMU dying at every power-on
cfg "$T/bad4.json" '.boards[1].relay.accel = "kvm"'
expect_fail "accel kvm on a broken KVM is refused at open, quoting QEMU" \
	"accel \"kvm\": KVM does not work here: QEMU with -accel kvm -cpu host exited at start (signal 6, aborted): qemu-system-x86_64: ../../accel/kvm/kvm-all.c:1234: kvm_buf_set_msrs: Assertion" \
	"$PC" relay "$T/bad4.json" vm2 on
rm -f "$T/kvm-attempts"

start=$(date +%s)
"$PC" run "$T/c.json" --results "$T/r" --quiet --no-report > "$T/out" 2>&1
rc=$?
wall=$(($(date +%s) - start))
check "$CYCLES cycles on each of the four boards pass (exit 0)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || { tail -5 "$T/out"; for b in $BOARDS; do tail -3 "$T/r/boards/$b/qemu.log"; done; }
V="$T/r/verdicts.jsonl"
for b in $BOARDS; do
	n=$(jq -s '[.[] | select(.board == "'$b'" and .verdict == "PASS")] | length' "$V")
	check "$b: $CYCLES PASS verdicts" [ "$n" -eq "$CYCLES" ]
done
check "zero violations" [ "$(jq -s 'map(.violations // 0) | add' "$V")" -eq 0 ]

# the broken KVM: probed once, fallen back from, said once, recorded
check "KVM was tried once for the four boards (one probe per process)" \
	[ "$(wc -l < "$T/kvm-attempts" 2>/dev/null || echo 0)" -eq 1 ]
check "the fallback to TCG was said once, quoting QEMU's abort" \
	[ "$(grep -c 'relay qemu: KVM does not work here (QEMU with -accel kvm -cpu host exited at start (signal 6, aborted): .*kvm_buf_set_msrs: Assertion.*); the virtual boards run under software emulation (TCG)' "$T/out")" -eq 1 ]
for b in $BOARDS; do
	check "$b: qemu.log records the accelerator and why" \
		grep -q "^--- board $b opened at .*: accel tcg (relay.accel \"auto\": KVM does not work here; KVM probe: QEMU with -accel kvm -cpu host exited at start (signal 6, aborted)" "$T/r/boards/$b/qemu.log"
	check "$b: every power-on ran TCG" [ "$(grep '^--- power on' "$T/r/boards/$b/qemu.log" | grep -vc -- '-accel tcg -cpu max ')" -eq 0 ]
	check "$b: the console log of a power-on says it too (kernel command line, init)" \
		grep -q "pc-init: board $b, disk .*, accelerator tcg" "$T/r/console/$b/cycle-1.log"
done

# the FUA disks, as the guest kernel saw them
for b in vm2 vm3; do
	check "$b: queue.fua 1 in every verdict" [ "$(jq -r 'select(.board == "'$b'") | .queue.fua' "$V" | sort -u)" = 1 ]
	check "$b: write cache \"write back\"" \
		[ "$(jq -r 'select(.board == "'$b'") | .queue.write_cache' "$V" | sort -u)" = "write back" ]
	check "$b: the fua cycles ran as fua" \
		[ "$(jq -r 'select(.board == "'$b'" and .mode == "fua") | .mode_run' "$V" | sort -u)" = fua ]
done
check "vm1: the SD card has no FUA (queue.fua 0)" [ "$(jq -r 'select(.board == "vm1") | .queue.fua' "$V" | sort -u)" = 0 ]
check "vm4: the SCSI disk without DPOFUA: queue.fua 0, write cache \"write back\"" \
	[ "$(jq -r 'select(.board == "vm4") | "\(.queue.fua) \(.queue.write_cache)"' "$V" | sort -u)" = "0 write back" ]
check "vm2: a SCSI disk (sda1)" \
	[ "$(jq -r 'select(.board == "vm2") | "\(.device.type) \(.device.partition)"' "$V" | sort -u)" = "scsi sda1" ]
check "vm3: an NVMe namespace (nvme0n1p1) with the configured serial" \
	[ "$(jq -r 'select(.board == "vm3") | "\(.device.type) \(.device.partition) \(.device.serial)"' "$V" | sort -u)" = "nvme nvme0n1p1 PC-NVME-0003" ]
check "vm2: its disk's serial is the board name (relay.serial not given)" \
	grep -q "pc-init: disk: QEMU QEMU HARDDISK serial vm2 fua 1 write_cache write back" "$T/r/console/vm2/cycle-1.log"
# What QEMU's SCSI disk received, power-on by power-on (power-on N runs
# cycle N's writes): WRITE(10) 0x2a / WRITE(16) 0x8a with FUA (byte 1, 0x08),
# SYNCHRONIZE CACHE(10) 0x35 / (16) 0x91.
awk '
	/^--- power on/ { n++; next }
	/scsi_disk_new_request/ {
		s = $0; sub(/.*data=/, "", s); split(s, b, " ")
		op = tolower(b[1])
		# the FUA bit, 0x08, of the second byte: its last hex digit is 8-f
		if (op == "0x2a" || op == "0x8a") { if (b[2] ~ /[89a-fA-F]$/) fua[n]++; else plain[n]++ }
		if (op == "0x35" || op == "0x91") sync[n]++
	}
	END { for (i = 1; i <= n; i++) printf "%d %d %d %d\n", i, fua[i], plain[i], sync[i] }
' "$T/r/boards/vm2/qemu.log" > "$T/vm2-cmds"
# A cut can come before a cycle's first flush (flush_every records), so a
# flush cycle need not show a SYNCHRONIZE CACHE; none may show a FUA write,
# and no fua cycle a write without FUA or a cache sync.
fua_w=0 fua_bad=0 flush_s=0 flush_bad=0
while read -r n f p s; do
	[ "$n" -le "$CYCLES" ] || continue
	if [ $((n % 2)) -eq 1 ]; then
		fua_w=$((fua_w + f)); [ "$p" -eq 0 ] && [ "$s" -eq 0 ] || fua_bad=$((fua_bad + 1))
	else
		flush_s=$((flush_s + s)); [ "$f" -eq 0 ] || flush_bad=$((flush_bad + 1))
	fi
done < "$T/vm2-cmds"
echo "  vm2's SCSI commands per power-on (n, FUA writes, other writes, cache syncs): $(tr '\n' ';' < "$T/vm2-cmds")"
check "vm2: QEMU received WRITEs with FUA in the fua cycles ($fua_w), none without FUA and no cache sync there" \
	[ "$fua_w" -gt 0 -a "$fua_bad" -eq 0 ]
check "vm2: ...and SYNCHRONIZE CACHE in the flush cycles ($flush_s), no FUA WRITE there" \
	[ "$flush_s" -gt 0 -a "$flush_bad" -eq 0 ]

# What reached each disk, as the guest kernel issued it (the agent's tracefs
# audit, docs/io-audit.md). A cycle "wrote" when its audit counted a write
# (a cut can come before the first AUDIT line after the first writes).
audit_sum() { # BOARD MODE: "cycles-that-wrote WFS WS FF cycles-with-FF cycles-with-a-note"
	jq -s -r --arg b "$1" --arg m "$2" '
		[.[] | select(.board == $b and .mode_run == $m and .io_audit.src == "tracefs") |
		 {fua: (.io_audit.rq.WFS // 0), ws: (.io_audit.rq.WS // 0), ff: (.io_audit.rq.FF // 0), note: .io_note} |
		 select(.fua + .ws > 0)] |
		"\(length) \(map(.fua) | add // 0) \(map(.ws) | add // 0) \(map(.ff) | add // 0) " +
		"\(map(select(.ff > 0)) | length) \(map(select(.note != null)) | length)"' "$V"
}
check "every verdict that wrote carries a tracefs io_audit" \
	[ "$(jq -s 'map(select(.records.submitted > 0 and .io_audit.src == "tracefs")) | length' "$V")" -eq "$(jq -s 'map(select(.records.submitted > 0)) | length' "$V")" ]
declare -A A=()	# "board.mode": the audit_sum line
for b in $BOARDS; do
	for m in fua flush; do
		read -r nw wfs ws ff nff nnote <<< "$(audit_sum $b $m)"
		echo "  $b $m: $nw cycles wrote: WFS $wfs, WS $ws, FF $ff (flushes in $nff cycles), io_note in $nnote"
		A[$b.$m]="$nw $wfs $ws $ff $nff $nnote"
	done
done
for b in vm2 vm3; do
	read -r nw wfs ws ff nff nnote <<< "${A[$b.fua]}"
	check "$b: the fua cycles that wrote ($nw) sent FUA writes ($wfs WFS) in each, no plain write ($ws WS), no io_note ($nnote)" \
		[ "$nw" -gt 0 -a "$(jq -s '[.[] | select(.board == "'$b'" and .mode_run == "fua" and (.io_audit.rq.WS // 0) + (.io_audit.rq.WFS // 0) > 0 and (.io_audit.rq.WFS // 0) == 0)] | length' "$V")" -eq 0 -a "$ws" -eq 0 -a "$nnote" -eq 0 ]
	read -r nw wfs ws ff nff nnote <<< "${A[$b.flush]}"
	check "$b: the flush cycles that wrote ($nw) sent plain writes ($ws WS), no FUA write ($wfs), and flushes ($ff FF in $nff cycles)" \
		[ "$nw" -gt 0 -a "$ws" -gt 0 -a "$wfs" -eq 0 -a "$nff" -gt 0 ]
done
read -r nw wfs ws ff nff nnote <<< "${A[vm1.fua]}"
check "vm1: the SD card's fua cycles that wrote ($nw) sent plain writes only ($ws WS, $wfs WFS, $ff FF): FUA dropped" \
	[ "$nw" -gt 0 -a "$wfs" -eq 0 -a "$ff" -eq 0 -a "$ws" -gt 0 ]
check "vm1: ...and their io_note names the write-through queue" \
	[ "$(jq -s '[.[] | select(.board == "vm1" and .mode_run == "fua" and (.io_audit.rq.WS // 0) > 0 and
		((.io_note // "") | test("^fua: plain writes: FUA and flushes dropped \\(write-through queue: no cache to flush\\)$") | not))] | length' "$V")" -eq 0 -a "$nnote" -eq "$nw" ]
read -r nw wfs ws ff nff nnote <<< "${A[vm4.fua]}"
# (the block layer's post-flushes of writes in flight coalesce: fewer
# flushes than writes; a cycle cut between a write and its post-flush may
# show the write alone)
check "vm4: without FUA on a write-back disk the fua cycles that wrote ($nw) sent writes and flushes ($ws WS, $ff FF in $nff cycles, $wfs WFS): FUA emulated" \
	[ "$nw" -gt 0 -a "$wfs" -eq 0 -a "$ws" -gt 0 -a "$nff" -gt 0 ]
check "vm4: ...and the io_note of those with flushes says FUA was emulated" \
	[ "$(jq -s '[.[] | select(.board == "vm4" and .mode_run == "fua" and (.io_audit.rq.WS // 0) > 0 and
		(.io_audit.rq.FF // 0) > 0 and .io_note == "fua: writes + flushes: FUA emulated (the queue has no FUA)")] | length' "$V")" -eq "$nff" ]
read -r nw wfs ws ff nff nnote <<< "${A[vm1.flush]}"
check "vm1: the flush cycles sent no flush ($ff FF in $nw cycles that wrote)" [ "$nw" -gt 0 -a "$ff" -eq 0 ]
# the report states, per device and mode, what the mode became
"$PC" report "$T/r" > "$T/report.txt" 2>&1
grep "io: " "$T/report.txt" | sed 's/^ */  report: /'
check "report: fua became FUA writes (native) on the SCSI and NVMe disks" \
	[ "$(grep -c "io: fua -> FUA writes (native) " "$T/report.txt")" -eq 2 ]
check "report: flush became writes and flushes on the SCSI and NVMe disks" \
	[ "$(grep -c "io: flush -> writes and flushes " "$T/report.txt")" -eq 3 ]
check "report: on the SCSI disk without DPOFUA fua became writes + flushes, FUA emulated" \
	grep -q "io: fua -> writes + flushes: FUA emulated (the queue has no FUA) " "$T/report.txt"
check "report: on the SD card fua became plain writes, FUA and flushes dropped by the write-through queue" \
	grep -q "io: fua -> plain writes: FUA and flushes dropped (write-through queue: no cache to flush) " "$T/report.txt"
check "report: ...and flush plain writes, flushes dropped" \
	grep -q "io: flush -> plain writes: flushes dropped (write-through queue: no cache to flush) " "$T/report.txt"

# four boards, four devices
ids=$(jq -r '"\(.board) \(.device.id)"' "$V" | sort -u)
echo "  devices: $(echo "$ids" | tr '\n' ';')"
check "each board's verdicts name one device, and the four are distinct" \
	[ "$(echo "$ids" | wc -l)" -eq 4 -a "$(echo "$ids" | cut -d' ' -f2- | sort -u | wc -l)" -eq 4 ]
"$PC" report --format json "$T/r" > "$T/report.json"
check "powercut report counts four devices" [ "$(jq '.devices | length' "$T/report.json")" -eq 4 ]
# the SD card with one FUA disk, one board of each type: the same results
# without vm3 and vm4 (their verdicts, and their boards in campaign.json)
mkdir -p "$T/r2" && jq -c 'select(.board != "vm3" and .board != "vm4")' "$V" > "$T/r2/verdicts.jsonl" &&
	jq '.config.boards |= map(select(.name != "vm3" and .name != "vm4"))' "$T/r/campaign.json" > "$T/r2/campaign.json"
check "...and two for the SD card and the SCSI disk alone" \
	[ "$("$PC" report --format json "$T/r2" 2>/dev/null | jq '.devices | length')" -eq 2 ]
check "replay reproduces every verdict" "$PC" replay "$T/r"

jq -s -r --argjson cycles "$CYCLES" '
	group_by(.board)[] | "  \(.[0].board) (\(.[0].device.type), fua=\(.[0].queue.fua)): " +
	([group_by(.mode)[] | "\(.[0].mode) \((map(.records.acked) | add) / length | floor) acked/cycle"] | join(", "))
' "$V"
echo "  campaign: $CYCLES cycles on each of 4 boards in $wall s"
if [ "$fails" -gt 0 ]; then
	keep=${PC_TEST_TMP:-build/test-tmp}/t-vm-fua-failed
	rm -rf "$keep" && mkdir -p "$keep" && cp -a "$T/r" "$T/c.json" "$T/out" "$keep/" 2>/dev/null
	echo "  the results are kept in $keep"
fi
echo "t-vm-fua: $passes passed, $fails failed"
finish

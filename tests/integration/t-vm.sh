#!/bin/bash
# The virtual board: QEMU running Debian's kernel with its real MMC stack
# (sdhci-pci, mmc_core, mmc_block) on an SD card image, the agent started by
# the board's init and finding its region by PARTLABEL through libblkid,
# talking to the harness over the board's serial console (a pty pair), and
# power cut by SIGKILL of QEMU in the middle of whatever the guest kernel is
# transferring (the qemu relay). Then the card is tampered with between two
# cycles and the damage must be reported as collateral, in the right slot.
#
# accel "auto" probes KVM once and falls back to TCG where it does not work
# (no /dev/kvm here): what it chose is in qemu.log and the console logs.
# t-vm-fua.sh runs the FUA board, several boards at once and a broken KVM.
#
# Takes 2 to 4 minutes under software emulation, so `make check` skips it:
# `make vm-check` runs it (PC_VM_REQUIRE=1: a skip is a failure there), and
# PC_VM=1 runs it from tests/integration/run-all.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
passes=0
ok() { echo "  ok: $*"; passes=$((passes + 1)); }

CYCLES=${PC_VM_CYCLES:-20}
MORE=3	# cycles after the tampering
vm_setup "the virtual board takes 2-4 min under TCG"
kver=$(cat "$VM/kcache/kver" 2>/dev/null || sed -n 's/^kernel: .*), \([^;]*\);.*/\1/p' "$VM/board.txt")

"$TOOLS/ptypair" "$T/ptys" & cable=$!
trap 'pc_rc=$?; kill $cable 2>/dev/null; rm_T' EXIT
for _ in $(seq 300); do [ -s "$T/ptys" ] && break; sleep 0.1; done
host_end=$(sed -n 1p "$T/ptys"); board_end=$(sed -n 2p "$T/ptys")
check "a pty pair stands in for the serial cable (host end $host_end)" test -c "$host_end"
check "a pty pair stands in for the serial cable (board end $board_end)" test -c "$board_end"

# a fresh card for this test: the template's GPT and prepared region
cp "$VM/sd.img" "$T/sd.img"
outside() { { head -c "$offset" "$1"; tail -c +$((offset + length + 1)) "$1"; } | sha256sum; }
before=$(outside "$T/sd.img")

cat > "$T/c.json" <<JSON
{ "campaign": "it-vm", "cycles": $CYCLES, "seed": 5,
  "boards": [ { "name": "vm1",
    "device": { "backend": "posix", "record_size": $record_size, "path": "PARTLABEL=$partlabel" },
    "link": { "type": "serial", "device": "$host_end", "baud": 115200,
              "boot_patterns": ["Linux version", "mmcblk0: p1", "pc-init: starting"] },
    "relay": { "driver": "qemu", "kernel": "$VM/kernel", "initrd": "$VM/initrd.img",
               "drive": "$T/sd.img", "console": "$board_end", "memory_mb": 256 },
    "modes": ["fua", "flush"], "records_per_cycle": 300,
    "cut": { "at": "random", "window_ms": [30, 600] },
    "boot_timeout_ms": 60000, "verify_timeout_ms": 60000, "off_ms": 20 } ] }
JSON
check "the shipped configs/vm-sd.json is valid" "$PC" check-config configs/vm-sd.json

# The relay's mistakes come out at once, naming the key or quoting QEMU,
# never as a boot timeout blamed on the device.
relay_cfg() { # FILE JQ-EDIT: the campaign with the board's relay section edited
	jq "$2" "$T/c.json" > "$1"
}
relay_cfg "$T/bad1.json" '.boards[0].relay.kernal = "x"'
expect_fail "a misspelt relay key is refused" "relay: unknown key 'kernal' (valid: driver, kernel, initrd" \
	"$PC" check-config "$T/bad1.json"
relay_cfg "$T/bad2.json" '.boards[0].relay.extra_args = "-smp 2"'
expect_fail "extra_args must be an array" "extra_args: expected an array" "$PC" check-config "$T/bad2.json"
truncate -s 1000000 "$T/odd.img"
relay_cfg "$T/bad3.json" '.boards[0].relay.drive = "'"$T/odd.img"'"'
expect_fail "an SD image QEMU would refuse is refused at open" "must be a power of two" \
	"$PC" relay "$T/bad3.json" vm1 on
relay_cfg "$T/bad4.json" '.boards[0].relay.console = "'"$T/no-cable"'"'
expect_fail "a missing serial cable is named" "start the serial cable first" "$PC" relay "$T/bad4.json" vm1 on
relay_cfg "$T/bad5.json" '.boards[0].relay.extra_args = ["-device", "no-such-device"]'
expect_fail "QEMU failing at start is an error of 'on', quoting QEMU" \
	"QEMU exited at start (status 1): qemu-system-x86_64: -device no-such-device: 'no-such-device' is not a valid device model name" \
	"$PC" relay "$T/bad5.json" vm1 on
start=$(date +%s)
"$PC" run "$T/c.json" --results "$T/r" --quiet --no-report > "$T/out" 2>&1
rc=$?
wall=$(($(date +%s) - start))
check "$CYCLES cycles on the virtual board pass (exit 0)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || { tail -5 "$T/out"; tail -3 "$T/r/boards/vm1/qemu.log" 2>/dev/null; }
V="$T/r/verdicts.jsonl"
E="$T/r/events.jsonl"
npass=$(jq -s '[.[] | select(.verdict == "PASS")] | length' "$V")
inflight=$(jq -s '[.[] | select(.counts.not_written + .counts.torn + .counts.torn_sector > 0)] | length' "$V")
check "$CYCLES PASS verdicts" [ "$npass" -eq "$CYCLES" ]
check "zero violations" [ "$(jq -s 'map(.violations // 0) | add' "$V")" -eq 0 ]
check "cuts landed mid-write ($inflight of $CYCLES cycles with records in flight)" [ "$inflight" -ge $((CYCLES / 4)) ]
check "records were acknowledged before the cuts" [ "$(jq -s 'map(.records.acked) | add' "$V")" -gt 0 ]
check "fua ran as fua, through io_uring" [ "$(jq -r 'select(.mode == "fua") | .mode_run' "$V" | sort -u)" = "fua" ]
# the card's identity, from the guest's sysfs, in every verdict
check "verdicts name the SD card: name QEMU!" [ "$(jq -r '.device.name' "$V" | sort -u)" = "QEMU!" ]
check "...manfid 0x0000aa" [ "$(jq -r '.device.manfid' "$V" | sort -u)" = "0x0000aa" ]
check "...its CID" [ "$(jq -r '.device.cid' "$V" | sort -u | grep -c '^aa[0-9a-f]\{30\}$')" -eq 1 ]
check "...type sd, found as partition mmcblk0p1 (PARTLABEL through libblkid)" \
	[ "$(jq -r '"\(.device.type) \(.device.partition)"' "$V" | sort -u)" = "sd mmcblk0p1" ]
check "...queue fua=0 (the SD stack sends no FUA)" [ "$(jq -r '.queue.fua' "$V" | sort -u)" = "0" ]
check "...write_cache \"write through\"" [ "$(jq -r '.queue.write_cache' "$V" | sort -u)" = "write through" ]
check "...the guest kernel $kver" [ "$(jq -r '.kernel' "$V" | sort -u)" = "$kver" ]
# what reached the card (the agent's tracefs audit, docs/io-audit.md): the
# SD queue claims write-through, so the kernel drops FUA and flushes
wrote='select(.io_audit.src == "tracefs" and (.io_audit.rq.WS // 0) + (.io_audit.rq.WFS // 0) > 0)'
nfua=$(jq -s "[.[] | select(.mode_run == \"fua\") | $wrote] | length" "$V")
echo "  io_audit per cycle: $(jq -c '"\(.cycle) \(.mode_run) \(.io_audit.rq)"' "$V" | tr -d '"\\' | tr '\n' ';')"
check "the fua cycles that wrote ($nfua) sent plain writes only: no FUA write, no flush" \
	[ "$nfua" -gt 0 -a "$(jq -s "[.[] | select(.mode_run == \"fua\") | $wrote |
		select((.io_audit.rq.WFS // 0) + (.io_audit.rq.FF // 0) > 0)] | length" "$V")" -eq 0 ]
check "...and their io_note says the write-through queue dropped FUA and flushes" \
	[ "$(jq -s "[.[] | select(.mode_run == \"fua\") | $wrote | select(.io_note ==
		\"fua: plain writes: FUA and flushes dropped (write-through queue: no cache to flush)\")] | length" "$V")" -eq "$nfua" ]
check "no flush reached the card in any cycle" [ "$(jq -s 'map(.io_audit.rq.FF // 0) | add' "$V")" -eq 0 ]
"$PC" report "$T/r" > "$T/report.txt" 2>&1
grep "io: " "$T/report.txt" | sed 's/^ */  report: /'
check "the report says what fua became on the SD card" \
	grep -q "io: fua -> plain writes: FUA and flushes dropped (write-through queue: no cache to flush) " "$T/report.txt"
# the console of every power-on, captured by the harness from the serial line
ncons=0
for n in $(seq $((CYCLES + 1))); do
	f="$T/r/console/vm1/cycle-$n.log"
	grep -q "Linux version $kver" "$f" 2>/dev/null && grep -q '@@PC {"type":"hello"' "$f" && ncons=$((ncons + 1))
done
check "a console log per cycle with the kernel's boot and the agent's lines ($ncons of $((CYCLES + 1)))" \
	[ "$ncons" -eq $((CYCLES + 1)) ]
check "...and the MMC driver's messages" grep -q "mmcblk0: p1" "$T/r/console/vm1/cycle-2.log"
check "boot stages were timed on every power-on" \
	[ "$(jq -s '[.[] | select(.ev == "boot_stage" and .pattern == "Linux version")] | length' "$E")" -ge $((CYCLES + 1)) ]
check "no agent line was garbled by kernel output" [ "$(jq -s '[.[] | select(.ev == "rx_bad")] | length' "$E")" -eq 0 ]
check "replay reproduces every verdict" "$PC" replay "$T/r"
check "every byte of the card outside the region is unchanged (GPT intact)" [ "$(outside "$T/sd.img")" = "$before" ]
# accel "auto" with this host's QEMU: KVM if a probe machine ran under it,
# else TCG, said once and recorded (t-vm-fua.sh fakes a broken KVM)
acc=$(sed -n 's/^--- board vm1 opened at .*: accel \([a-z]*\) (relay.accel "auto".*/\1/p' "$T/r/boards/vm1/qemu.log" | head -1)
check "qemu.log records the accelerator auto chose (${acc:-none}) and why" [ "$acc" = kvm -o "$acc" = tcg ]
if [ "$acc" = tcg ]; then
	check "...TCG: the harness said once that KVM does not work here" \
		[ "$(grep -c 'relay qemu: KVM does not work here (.*); the virtual boards run under software emulation (TCG)' "$T/out")" -eq 1 ]
else
	check "...KVM: nothing said about it" [ "$(grep -c 'KVM does not work' "$T/out")" -eq 0 ]
fi
if [ ! -e /dev/kvm ]; then
	check "...no /dev/kvm here: TCG, quoting QEMU's reason" \
		grep -q 'accel tcg (relay.accel "auto": KVM does not work here; KVM probe: QEMU with -accel kvm -cpu host exited at start (status 1): .*kvm' "$T/r/boards/vm1/qemu.log"
fi
check "...every power-on ran it" \
	[ "$(grep '^--- power on' "$T/r/boards/vm1/qemu.log" | grep -vc -- "-accel $acc ")" -eq 0 ]
check "...and the console log says so" \
	grep -q "pc-init: board vm1, disk sd, accelerator $acc" "$T/r/console/vm1/cycle-1.log"

# how long one cycle takes: power-on to power-on, and where the time goes
jq -s -r '
	def avg: if length == 0 then 0 else (add / length / 100 | round) / 10 end;
	reduce (.[] | select(.board == "vm1")) as $e ({on: [], boot: [], scan: [], write: []};
		if $e.ev == "power_on" then .on += [$e.t] | .last_on = $e.t
		elif $e.ev == "rx" and $e.msg.type == "hello" then .boot += [$e.t - .last_on] | .last_hello = $e.t
		elif $e.ev == "rx" and $e.msg.type == "scan_end" then .scan += [$e.t - .last_hello]
		elif $e.ev == "work" then .last_work = $e.t
		elif $e.ev == "cut" then .write += [$e.t - .last_work]
		else . end)
	| "  one cycle: \([range(1; .on | length) as $i | .on[$i] - .on[$i - 1]] | avg) s power-on to power-on"
	  + " (power-on to HELLO \(.boot | avg) s, scan \(.scan | avg) s, writes to the cut \(.write | avg) s)"
' "$E"
echo "  campaign: $CYCLES cycles in $wall s, $npass PASS, $inflight with records in flight at the cut"

# Acceptance 2: flip bytes in a cold slot between two cycles. Half a ring away
# from the last cycle's records, so no write comes near it before the scan.
last=$(jq -s -r 'map(select(.cycle == '"$CYCLES"'))[0] | .records.first + .records.planned - 1' "$V")
slot=$(( (last - 1 + nslots / 2) % nslots ))
at=$(( offset + (8 + slot * spr) * 512 + 3 * 512 + 100 ))
flip() { # FILE OFFSET COUNT: invert COUNT bytes
	local i b
	for i in $(seq 0 $(($3 - 1))); do
		b=$(od -An -tu1 -j $(($2 + i)) -N1 "$1" | tr -d ' ')
		printf "$(printf '\\%03o' $((b ^ 0xff)))" | dd of="$1" bs=1 seek=$(($2 + i)) conv=notrunc,fsync status=none
	done
}
flip "$T/sd.img" "$at" 8
echo "  tampered: 8 bytes flipped in slot $slot (sector 3 of the record, byte $at of the card image)"
"$PC" run "$T/c.json" --results "$T/r" --cycles $((CYCLES + MORE)) --quiet --no-report > "$T/out2" 2>&1
rc=$?
check "the continued campaign fails (exit 1): the card was damaged" [ $rc -eq 1 ]
[ $rc -eq 1 ] || tail -5 "$T/out2"
check "$((CYCLES + MORE)) verdicts, one per cycle" [ "$(wc -l < "$V")" -eq $((CYCLES + MORE)) ]
found=$(jq -c 'select(.cycle > '"$CYCLES"') | .findings[]? | select(.class == "collateral" and .slot == '"$slot"')' "$V" | head -1)
check "the damage is reported as collateral in slot $slot" [ -n "$found" ]
echo "  finding: $found"
check "...as a violation" [ "$(printf '%s' "$found" | jq -r '.violation')" = "true" ]
check "...and nothing else is: no other violation class, no other slot" \
	[ "$(jq -s '[.[] | select(.cycle > '"$CYCLES"') | .findings[]? | select(.violation and (.class != "collateral" or .slot != '"$slot"'))] | length' "$V")" -eq 0 ]
check "...reported once, by the first scan after the tampering" \
	[ "$(jq -s '[.[] | .findings[]? | select(.class == "collateral")] | length' "$V")" -eq 1 ]
check "the cycles after it pass" [ "$(jq -s '[.[] | select(.cycle > '"$CYCLES"' and .verdict == "PASS")] | length' "$V")" -eq $((MORE - 1)) ]
check "replay reproduces every verdict, the FAIL too" "$PC" replay "$T/r"
if [ "$fails" -gt 0 ]; then
	keep=${PC_TEST_TMP:-build/test-tmp}/t-vm-failed
	rm -rf "$keep" && mkdir -p "$keep" && cp -a "$T/r" "$T/c.json" "$T/out" "$T/out2" "$keep/" 2>/dev/null
	echo "  the results are kept in $keep"
fi
echo "t-vm: $passes passed, $fails failed"
finish

#!/bin/bash
# The eMMC board (docs/vm.md#the-emmc-board): QEMU 10's ast2600-evb, its eMMC
# behind the SoC's SDHCI, Debian's armmp kernel (the real mmc_block: CMD23,
# reliable writes, MMC_IOC_CMD) and the static armhf agent.
#
#   main    one honest board (no volatile cache), PC_VM_EMMC_CYCLES (20)
#           cycles over fua, fua+flush, flush, journal, none and relwr: every
#           verdict PASS, the eMMC's identity (CID, EXT_CSD reliability and
#           cache fields, queue fua 1 / write back) in each, each mode's I/O
#           as the tracefs audit saw it (fua as reliable writes: WFS only;
#           flush with flushes; relwr as driver commands), replay agrees.
#   faults  three boards, PC_VM_EMMC_FAULT_CYCLES (4) cycles each: a volatile
#           cache under the eMMC (relay.volatile_cache), reliable writes read
#           from QEMU's MMC trace (CMD23 with bit 31):
#             ef1 lying-flush: plain writes lost or torn at the cut, reliable
#                 writes kept: flush cycles FAIL exactly as the rebuild says,
#                 fua and relwr cycles PASS (cut after 8-40 acknowledged
#                 records, so each cycle has acknowledged writes to lose);
#             ef2 fua-ignored: reliable writes cached too: fua cycles FAIL
#                 exactly as the rebuild says;
#             ef3 a blkdebug read error in a cold slot from power-on 2 on:
#                 QEMU's card swallows it and sends the previous block's
#                 data: misdirected at exactly that sector.
# PC_VM_EMMC_PARTS="main faults" picks the parts (both by default).
#
# Minutes under software emulation (always: an armhf guest), so `make check`
# skips it; `make vm-check` runs it (PC_VM_REQUIRE=1: a skip is a failure).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
passes=0
ok() { echo "  ok: $*"; passes=$((passes + 1)); }

CYCLES=${PC_VM_EMMC_CYCLES:-20}
FCYCLES=${PC_VM_EMMC_FAULT_CYCLES:-4}
PARTS=${PC_VM_EMMC_PARTS:-main faults}
vm_setup "the eMMC board takes 5-20 min under TCG"
E=$VM/emmc
for f in zImage aspeed-ast2600-evb.dtb initrd.img emmc.img qemu-system-arm; do
	[ -e "$E/$f" ] || vm_skip "$E/$f is missing: build the eMMC board with 'make vm-image-emmc'"
done
[ build/armhf/powercut-agent -nt "$E/initrd.img" ] &&
	vm_skip "the armhf agent is newer than $E/initrd.img: 'make vm-image-emmc'"
start=$((offset / 512))		# the region's first sector on the disk
slot_sector() { echo $((start + 8 + $1 * spr + ${2:-0})); }
CID=aa015851454d55212101deadbeef2900

cables=""
trap 'pc_rc=$?; kill $cables 2>/dev/null; rm_T' EXIT
cable() {
	"$TOOLS/ptypair" "$T/ptys-$1" & cables="$cables $!"
	for _ in $(seq 300); do [ -s "$T/ptys-$1" ] && break; sleep 0.1; done
	cp "$E/emmc.img" "$T/emmc-$1.img"
}
board_json() { # NAME MODES [MORE-RELAY-KEYS]
	cat <<JSON
  { "name": "$1",
    "device": { "backend": "posix", "record_size": $record_size, "path": "PARTLABEL=$partlabel" },
    "link": { "type": "serial", "device": "$(sed -n 1p "$T/ptys-$1")", "baud": 115200,
              "boot_patterns": ["Linux version", "mmcblk0: p1", "pc-init: starting"] },
    "relay": { "driver": "qemu", "machine": "ast2600-evb", "qemu": "$PWD/$E/qemu-system-arm",
               "kernel": "$PWD/$E/zImage", "dtb": "$PWD/$E/aspeed-ast2600-evb.dtb",
               "initrd": "$PWD/$E/initrd.img", "drive": "$T/emmc-$1.img", "memory_mb": 512, "timeout_ms": 60000,
               "console": "$(sed -n 2p "$T/ptys-$1")"${3:+, $3} },
    "modes": $2, "records_per_cycle": 64, "flush_every": 8,
    "cut": { "at": "random", "window_ms": [100, 1500] },
    "boot_timeout_ms": 240000, "verify_timeout_ms": 120000, "off_ms": 20 }
JSON
}
cfg() { jq "$2" "$T/$3" > "$T/$1"; }

# ---- main: the honest eMMC board --------------------------------------------
if [[ " $PARTS " == *" main "* ]]; then
cable em1
cat > "$T/c.json" <<JSON
{ "campaign": "it-vm-emmc", "cycles": $CYCLES, "seed": 28,
  "boards": [
$(board_json em1 '["fua", "fua+flush", "flush", "journal", "none", "relwr"]')
  ] }
JSON
check "the campaign is valid" "$PC" check-config "$T/c.json"
cfg bad1.json '.boards[0].relay.dtb = ""' c.json
expect_fail "an empty dtb is refused" 'dtb: expected a non-empty string' "$PC" check-config "$T/bad1.json"
cfg bad2.json 'del(.boards[0].relay.dtb)' c.json
expect_fail "the eMMC board needs its dtb" 'dtb: missing' "$PC" check-config "$T/bad2.json"
cfg bad3.json '.boards[0].relay.disk = "sd"' c.json
expect_fail "the eMMC board's disk is its eMMC" 'disk: the eMMC board' "$PC" check-config "$T/bad3.json"
cfg bad4.json '.boards[0].relay.accel = "kvm"' c.json
expect_fail "KVM cannot run an armhf guest here" 'accel: "kvm" cannot run the eMMC board' "$PC" check-config "$T/bad4.json"
cfg bad5.json '.boards[0].relay.machine = "ast2500"' c.json
expect_fail "an unknown machine is refused" 'machine: expected one of "pc", "ast2600-evb"' "$PC" check-config "$T/bad5.json"
cfg bad6.json 'del(.boards[0].relay.machine)' c.json
expect_fail "a dtb on the PC is refused" 'dtb: only the eMMC board' "$PC" check-config "$T/bad6.json"
cfg bad7.json '.boards[0].relay.serial = "E1"' c.json
expect_fail "the eMMC's CID is fixed: no serial" 'serial: QEMU' "$PC" check-config "$T/bad7.json"

t0=$(date +%s)
"$PC" run "$T/c.json" --results "$T/r" --quiet --no-report > "$T/out" 2>&1
rc=$?
wall=$(($(date +%s) - t0))
V="$T/r/verdicts.jsonl"
# (or exit 3, INCONCLUSIVE: a fresh clone's .ci/run, ecfee23, saw a mode's
# cuts all come after the TCG board's writes; the verdicts are checked below)
check "the campaign passes (exit 0, or 3 INCONCLUSIVE; was $rc)" passed_or_late $rc "$T/r"
[ $rc -eq 0 ] || { tail -5 "$T/out"; tail -3 "$T/r/boards/em1/qemu.log"; }
n=$(jq -s 'length' "$V")
check "$CYCLES verdicts" [ "$n" -eq "$CYCLES" ]
check "every verdict PASS, 0 violations" \
	[ "$(jq -s '[.[] | select(.verdict != "PASS" or .violations != 0)] | length' "$V")" -eq 0 ]
check "every mode ran (fua fua+flush flush journal none relwr), each as itself" \
	[ "$(jq -r 'select(.mode == .mode_run) | .mode' "$V" | sort -u | tr '\n' ' ')" = "flush fua fua+flush journal none relwr " ]
check "cuts with records in flight" \
	[ "$(jq -s '[.[] | select(.records.submitted > .records.acked)] | length' "$V")" -gt 0 ]
check "every verdict: an MMC device mmcblk0p1 with QEMU's eMMC CID, name QEMU!!, rel_sectors 0x1" \
	[ "$(jq -s --arg c "$CID" '[.[] | .device | select(.type == "mmc" and .partition == "mmcblk0p1" and .cid == $c and .name == "QEMU!!" and .rel_sectors == "0x1" and .id == "mmc:QEMU!!:" + $c)] | length' "$V")" -eq "$n" ]
check "every verdict: EXT_CSD read through MMC_IOC_CMD: rev, wr_rel_param, rel_wr_sec_c 1, cache_ctrl, cache_size" \
	[ "$(jq -s '[.[] | .device.ext_csd | select(.available == true and .source == "ioctl" and (.rev | type) == "number" and (.wr_rel_param | type) == "number" and .rel_wr_sec_c == 1 and (.cache_ctrl | type) == "number" and (.cache_size | type) == "number")] | length' "$V")" -eq "$n" ]
check "every verdict: queue fua 1, write_cache write back (reliable writes), the guest's armmp kernel" \
	[ "$(jq -s '[.[] | select(.queue.fua == 1 and .queue.write_cache == "write back" and (.kernel | test("armmp$")))] | length' "$V")" -eq "$n" ]
# the tracefs audit, mode by mode (a cut before the first request leaves none)
aud() { jq -s --arg m "$1" "[.[] | select(.mode == \$m and (.io_audit.rq // {} | length) > 0) | .io_audit.rq] | $2" "$V"; }
for m in fua fua+flush flush none relwr; do
	echo "    audit $m: $(jq -s -c --arg m "$m" '[.[] | select(.mode == $m) | .io_audit // "none"]' "$V")"
done
check "fua: reliable writes, every request FUA (WFS), no plain write, no flush" \
	[ "$(aud fua 'length > 0 and all(keys == ["WFS"])')" = true ]
# rel_wr_sec_c 1: each 4 KiB FUA write is issued 8 times, for 8, 7, ... 1
# sectors; the audit counts the request once and its sectors once
check "fua: each request counted once with its $spr sectors (re-issued remainders are not new sectors)" \
	[ "$(jq -s --argjson spr "$spr" '[.[] | select(.mode == "fua" and (.io_audit.rq.WFS // 0) > 0) | .io_audit.sectors.WFS == $spr * .io_audit.rq.WFS] | (length > 0 and all)' "$V")" = true ]
check "fua+flush: FUA writes and flushes (WFS, FF), no plain write" \
	[ "$(aud fua+flush 'length > 0 and all(has("WS") | not) and any(has("FF"))')" = true ]
check "flush: plain writes and flushes (WS, FF), no FUA write" \
	[ "$(aud flush 'length > 0 and all(has("WFS") | not) and any(has("FF"))')" = true ]
check "none: plain writes only (WS)" [ "$(aud none 'length > 0 and all(keys == ["WS"])')" = true ]
check "relwr: driver commands (MMC_IOC_MULTI_CMD), no block-layer write" \
	[ "$(aud relwr 'length > 0 and all(keys == ["N"])')" = true ]
check "the console log of a power-on holds the card pc-init saw: QEMU!! type MMC, fua 1" \
	grep -q "pc-init: card: QEMU!! type MMC cid $CID fua 1 write_cache write back" "$T/r/console/em1/cycle-1.log"
check "QEMU ran the AST2600 evaluation board with the eMMC drive (if=sd,index=2)" \
	grep -q -- '-M ast2600-evb .*if=sd,index=2' "$T/r/boards/em1/qemu.log"
check "qemu.log: tcg, no KVM probe for an armhf guest" grep -q 'accel tcg (the eMMC board is an armhf guest' "$T/r/boards/em1/qemu.log"
check "replay agrees" "$PC" replay "$T/r"
"$PC" report "$T/r" > "$T/report.txt" 2>&1
sed -n '/mode  *cycles/,/result:/p' "$T/report.txt" | sed 's/^/    /'
check "the report's io line says what fua became" grep -q 'io: fua -> ' "$T/report.txt"
echo "    $CYCLES cycles in ${wall}s ($((wall / CYCLES)) s a cycle); boot stages (ms after power-on):"
jq -r 'select(.ev == "boot_stage") | "\(.pattern)\t\(.ms)"' "$T/r/events.jsonl" |
	awk -F'\t' '{ s[$1] += $2; c[$1]++ } END { for (k in s) printf "      %-20s mean %d ms over %d\n", k, s[k] / c[k], c[k] }'
fi

# ---- faults: a volatile cache and an I/O error under the eMMC ---------------
if [[ " $PARTS " == *" faults "* ]]; then
for b in ef1 ef2 ef3; do cable $b; done
RD=$(slot_sector 700 3)		# sector 3 of a slot the campaign never writes
cat > "$T/f.json" <<JSON
{ "campaign": "it-vm-emmc-faults", "cycles": $FCYCLES, "seed": 29,
  "boards": [
$(board_json ef1 '["flush", "fua", "relwr"]' '"volatile_cache": {"profile": "lying-flush", "seed": 11}'),
$(board_json ef2 '["fua"]' '"volatile_cache": {"profile": "fua-ignored", "seed": 12}'),
$(board_json ef3 '["flush"]' '"errors": [{"op": "read", "sector": '"$RD"', "from_power_on": 2}]')
  ] }
JSON
# ef1 is cut after 8 to 40 acknowledged records, not at a random instant:
# under load a cut 100-1500 ms into the work can come before the first flush
# group is acknowledged, and a lying flush has nothing acknowledged to lose
cfg f1.json '.boards[0].cut = {"at": "acks", "acks": [8, 40]}' f.json
mv "$T/f1.json" "$T/f.json"
check "the fault campaign is valid" "$PC" check-config "$T/f.json"
"$PC" run "$T/f.json" --results "$T/rf" --quiet --no-report > "$T/outf" 2>&1
rc=$?
V="$T/rf/verdicts.jsonl"
check "the fault campaign FAILs (exit 1)" [ $rc -eq 1 ]
[ $rc -eq 1 ] || { tail -5 "$T/outf"; for b in ef1 ef2 ef3; do tail -3 "$T/rf/boards/$b/qemu.log"; done; }
for b in ef1 ef2 ef3; do
	check "$b: $FCYCLES verdicts, none INFRA_ERROR or BOOT_FAIL" \
		[ "$(jq -s '[.[] | select(.board == "'$b'" and (.verdict == "PASS" or .verdict == "FAIL"))] | length' "$V")" -eq "$FCYCLES" ]
done
for b in ef1 ef2; do
	/usr/bin/python3 tests/tools/vcache-check.py "$T/rf" "$b" "$start" "$spr" "$nslots" > "$T/$b.check"
	rc=$?
	check "$b: each FAIL names exactly the acknowledged records the rebuild lost (0 mismatches)" [ $rc -eq 0 ]
	sed 's/^/    /' "$T/$b.check"
done
jq -c '{power_on, writes, fua_writes, trace_writes, kept, dropped, torn: (.torn | length?) }' "$T/rf/boards/ef1/vcache.jsonl" 2>/dev/null | sed 's/^/    ef1 /' | head -8
check "ef1: QEMU's MMC trace marked reliable writes (CMD23 bit 31) in some power-on" \
	[ "$(jq -s 'map(.fua_writes) | add' "$T/rf/boards/ef1/vcache.jsonl")" -gt 0 ]
check "ef1: a flush cycle FAILs with lost_acked or torn (the card kept plain writes in a cache)" \
	[ "$(jq -s '[.[] | select(.board == "ef1" and .mode == "flush" and .verdict == "FAIL")] | length' "$V")" -gt 0 ]
check "ef1: every fua and relwr cycle PASSes (reliable writes kept)" \
	[ "$(jq -s '[.[] | select(.board == "ef1" and .mode != "flush" and .verdict != "PASS")] | length' "$V")" -eq 0 ]
check "ef2 (reliable writes ignored): a fua cycle FAILs" \
	[ "$(jq -s '[.[] | select(.board == "ef2" and .verdict == "FAIL")] | length' "$V")" -gt 0 ]
# QEMU's card swallows the read error and sends the previous block's data
# (docs/vm.md#the-emmc-board): the scan finds the wrong data at that sector
u=$(jq -c 'select(.board == "ef3") | .findings[]? | select(.class == "misdirected" or .class == "unreadable")' "$V" | head -1)
echo "    ef3 first finding at the failing sector: $u"
check "ef3: QEMU's card logged the injected read error (and told the guest nothing)" \
	grep -q 'sd_blk_read: read error on host side' "$T/rf/boards/ef3/qemu.log"
check "ef3: the verdict names the failing sector: misdirected at the record's lba + sector, a violation" \
	[ "$(printf '%s' "$u" | jq -r '"\(.class) \(.lba + .sector + '"$start"') \(.violation)"' 2>/dev/null)" = "misdirected $RD true" ]
check "ef3: ...holding the sector before it (what the card's buffer still held)" \
	[ "$(printf '%s' "$u" | jq '.found_lba - .belongs_lba' 2>/dev/null)" = 1 ]
check "replay agrees" "$PC" replay "$T/rf"
fi

finish

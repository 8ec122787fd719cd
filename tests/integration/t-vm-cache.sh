#!/bin/bash
# Faults below a real kernel: virtual boards whose SCSI disk has a volatile
# write cache that really loses data at the cut (relay.volatile_cache: QEMU's
# blklogwrites log replayed onto the disk as the profile says, vboard/vcache.c),
# and a disk with I/O errors injected by QEMU's blkdebug (relay.errors).
#
#   vc1  honest:      flushes and FUA honoured; all five modes; every cycle
#                     PASSes, and the cache loses or tears unacknowledged
#                     records (mode none, and writes in flight at the cut);
#   vc2  lying-flush: flushes ignored, FUA honoured: fua cycles PASS, and a
#                     cycle FAILs exactly when the rebuild lost an
#                     acknowledged record, naming exactly those seqs
#                     (tests/tools/vcache-check.py against the rebuild's own
#                     record, boards/vc2/vcache.jsonl);
#   vc4  lying-flush on a queue without FUA ("fua": false): the kernel
#                     emulates FUA with flushes, which this device ignores:
#                     fua cycles FAIL as the rebuild says, and their verdicts'
#                     io_note says FUA was emulated;
#   The harness is killed (-9) once mid-campaign and resumed: the logs of
#   the boards that were on are replayed at their next power-on.
#   vc3  errors:      a read error on one sector of the region from the
#                     second power-on on (the verdict that scan judges says
#                     unreadable, at that sector), a write error on the
#                     first record cycle 2 writes (write_refused, at that
#                     sector, the cycle cut at once), nothing hangs; its cut
#                     planned 3-4 s into the work, so only the error cuts it.
#
# Takes 1-3 minutes under software emulation, so `make check` skips it:
# `make vm-check` runs it (PC_VM_REQUIRE=1: a skip is a failure there), and
# PC_VM=1 runs it from tests/integration/run-all. bench/vm-cache runs the
# long campaigns (200 cycles).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
passes=0
ok() { echo "  ok: $*"; passes=$((passes + 1)); }

CYCLES=${PC_VM_CACHE_CYCLES:-6}
BOARDS="vc1 vc2 vc3 vc4"
vm_setup "four virtual boards take 1-3 min under TCG"
start=$((offset / 512))		# the region's first sector on the disk
slot_sector() { echo $((start + 8 + $1 * spr + ${2:-0})); }
RD=$(slot_sector 5 3)		# a sector in the middle of slot 5
WR=$(slot_sector 300)		# the first record of cycle 2 (records_per_cycle 300)

cables=""
trap 'pc_rc=$?; kill $cables 2>/dev/null; rm_T' EXIT
for b in $BOARDS; do
	"$TOOLS/ptypair" "$T/ptys-$b" & cables="$cables $!"
	cp "$VM/sd.img" "$T/disk-$b.img"
done
for b in $BOARDS; do
	for _ in $(seq 300); do [ -s "$T/ptys-$b" ] && break; sleep 0.1; done
done

board_json() { # NAME MODES MORE-RELAY-KEYS [CUT-WINDOW]
	cat <<JSON
  { "name": "$1",
    "device": { "backend": "posix", "record_size": $record_size, "path": "PARTLABEL=$partlabel" },
    "link": { "type": "serial", "device": "$(sed -n 1p "$T/ptys-$1")", "baud": 115200,
              "boot_patterns": ["Linux version", "pc-init: starting"] },
    "relay": { "driver": "qemu", "disk": "scsi", "kernel": "$VM/kernel", "initrd": "$VM/initrd-fua.img",
               "drive": "$T/disk-$1.img", "console": "$(sed -n 2p "$T/ptys-$1")", $3 },
    "modes": $2, "records_per_cycle": 300, "flush_every": 4,
    "cut": { "at": "random", "window_ms": ${4:-[100, 1000]} },
    "boot_timeout_ms": 90000, "verify_timeout_ms": 60000, "off_ms": 20 }
JSON
}
cat > "$T/c.json" <<JSON
{ "campaign": "it-vm-cache", "cycles": $CYCLES, "seed": 21,
  "boards": [
$(board_json vc1 '["none", "fua", "flush", "fua+flush", "journal"]' '"volatile_cache": {"profile": "honest", "seed": 7}'),
$(board_json vc2 '["flush", "fua"]' '"volatile_cache": {"profile": "lying-flush", "seed": 8}'),
$(board_json vc3 '["flush"]' '"errors": [{"op": "read", "sector": '$RD', "from_power_on": 2},
               {"op": "write", "sector": '$WR', "from_power_on": 2, "to_power_on": 2}]' '[3000, 4000]'),
$(board_json vc4 '["fua"]' '"fua": false, "volatile_cache": {"profile": "lying-flush", "seed": 9}')
  ] }
JSON
check "the campaign is valid" "$PC" check-config "$T/c.json"

# the keys' mistakes
cfg() { jq "$2" "$T/c.json" > "$1"; }
cfg "$T/bad1.json" '.boards[0].relay.volatile_cache.profile = "lying"'
expect_fail "an unknown profile is refused" 'volatile_cache.profile: expected "honest"' "$PC" check-config "$T/bad1.json"
cfg "$T/bad2.json" '.boards[0].relay.disk = "sd"'
expect_fail "a volatile cache on the SD card is refused" 'volatile_cache: only the SCSI disk' \
	"$PC" check-config "$T/bad2.json"
cfg "$T/bad3.json" '.boards[0].relay.volatile_cache.sead = 1'
expect_fail "an unknown key in volatile_cache is refused" "unknown key 'sead'" "$PC" check-config "$T/bad3.json"
cfg "$T/bad4.json" '.boards[2].relay.errors[0].op = "trim"'
expect_fail "an error rule's op is read or write" 'errors[0].op: expected one of "read", "write"' \
	"$PC" check-config "$T/bad4.json"
cfg "$T/bad5.json" '.boards[2].relay.errors[1].to_power_on = 1'
expect_fail "to_power_on before from_power_on is refused" 'errors[1].to_power_on: before from_power_on' \
	"$PC" check-config "$T/bad5.json"
cfg "$T/bad6.json" '.boards[2].relay.errors[0].sector = -1'
expect_fail "a negative sector is refused" 'errors[0].sector: expected an integer from 0' "$PC" check-config "$T/bad6.json"
cfg "$T/bad7.json" '.boards[2].relay.errors = [range(9) | {"op": "read", "sector": 1}]'
expect_fail "at most 8 rules" 'errors: expected an array of 1 to 8 rules' "$PC" check-config "$T/bad7.json"

t0=$(date +%s)
# The harness is killed (-9) mid-campaign, its QEMUs with it: a board that
# was on leaves its log unreplayed (vc-pending); the resumed run replays it
# before that board's next power-on, so what the cache lost at that cut is on
# record and judged like any other cut (vcache-check below covers it).
"$PC" run "$T/c.json" --results "$T/r" --quiet --no-report > "$T/out0" 2>&1 &
pid=$!
for _ in $(seq 600); do
	[ "$(grep -c . "$T/r/verdicts.jsonl" 2>/dev/null || echo 0)" -ge 6 ] && break
	sleep 0.5
done
kill -9 $pid
wait $pid 2>/dev/null
pending=$(ls "$T"/r/boards/vc[124]/vc-pending 2>/dev/null | wc -l)
check "killed mid-campaign: the powered boards' logs were left to replay ($pending of 3 vc-pending)" [ "$pending" -ge 1 ]
"$PC" run "$T/c.json" --results "$T/r" --quiet --no-report > "$T/out" 2>&1
rc=$?
wall=$(($(date +%s) - t0))
V="$T/r/verdicts.jsonl"
check "the resumed run replayed them: no vc-pending left" [ "$(ls "$T"/r/boards/*/vc-pending 2>/dev/null | wc -l)" -eq 0 ]
check "the campaign ends with a FAIL (exit 1: the lying board and the failing disk)" [ $rc -eq 1 ]
[ $rc -eq 1 ] || { tail -5 "$T/out"; for b in $BOARDS; do tail -3 "$T/r/boards/$b/qemu.log"; done; }
for b in $BOARDS; do
	check "$b: $CYCLES verdicts, none INFRA_ERROR or BOOT_FAIL" \
		[ "$(jq -s '[.[] | select(.board == "'$b'" and (.verdict == "PASS" or .verdict == "FAIL"))] | length' "$V")" -eq "$CYCLES" ]
done

# vc1, honest: every cycle PASSes, and the cache really lost data
/usr/bin/python3 tests/tools/vcache-check.py "$T/r" vc1 $start $spr $nslots > "$T/vc1.check"
rc=$?
check "vc1 (honest): the verdicts agree with the rebuild, cycle by cycle" [ $rc -eq 0 ]
sed 's/^/    /' "$T/vc1.check"
check "vc1: every cycle PASSes" [ "$(jq -s '[.[] | select(.board == "vc1" and .verdict != "PASS")] | length' "$V")" -eq 0 ]
check "vc1: the cache lost or tore unacknowledged records" \
	[ "$(sed -n 's/.* \([0-9]*\) unacknowledged records lost or torn.*/\1/p' "$T/vc1.check")" -gt 0 ]
check "vc1: ...and the scans found them: not_written or torn in a none cycle" \
	[ "$(jq -s '[.[] | select(.board == "vc1" and .mode == "none") | .counts.not_written + .counts.torn] | add' "$V")" -gt 0 ]
check "vc1: its rebuilds kept every write a flush or FUA made durable" \
	[ "$(jq -s '[.[] | select(.durable > .kept)] | length' "$T/r/boards/vc1/vcache.jsonl")" -eq 0 ]

# vc2, lying-flush: FAIL exactly when an acknowledged record was lost
/usr/bin/python3 tests/tools/vcache-check.py "$T/r" vc2 $start $spr $nslots > "$T/vc2.check"
rc=$?
check "vc2 (lying-flush): each FAIL names exactly the acknowledged records the rebuild lost" [ $rc -eq 0 ]
sed 's/^/    /' "$T/vc2.check"
check "vc2: a flush cycle FAILs with lost_acked" \
	[ "$(jq -s '[.[] | select(.board == "vc2" and .mode == "flush" and .verdict == "FAIL" and .counts.lost_acked > 0)] | length' "$V")" -gt 0 ]
check "vc2: every fua cycle PASSes (FUA writes are durable)" \
	[ "$(jq -s '[.[] | select(.board == "vc2" and .mode == "fua" and .verdict != "PASS")] | length' "$V")" -eq 0 ]
check "vc2: QEMU's trace showed power-ons of FUA writes only (fua) and of plain writes only (flush), none mixed" \
	[ "$(jq -s '[([.[] | select(.writes > 0 and .fua_writes == .writes)] | length > 0),
		([.[] | select(.writes > 0 and .fua_writes == 0)] | length > 0),
		([.[] | select(.fua_writes > 0 and .fua_writes < .writes)] | length == 0)] | all' "$T/r/boards/vc2/vcache.jsonl")" = true ]

# vc4, lying-flush without FUA: the emulated FUA is only as good as the flushes
/usr/bin/python3 tests/tools/vcache-check.py "$T/r" vc4 $start $spr $nslots > "$T/vc4.check"
rc=$?
check "vc4 (lying-flush, no FUA): each FAIL names exactly the acknowledged records the rebuild lost" [ $rc -eq 0 ]
sed 's/^/    /' "$T/vc4.check"
check "vc4: its queue has no FUA, a write-back cache" \
	[ "$(jq -r 'select(.board == "vc4") | "\(.queue.fua) \(.queue.write_cache)"' "$V" | sort -u)" = "0 write back" ]
check "vc4: no write reached QEMU with FUA" [ "$(jq -s 'map(.fua_writes) | add' "$T/r/boards/vc4/vcache.jsonl")" -eq 0 ]
check "vc4: a fua cycle FAILs with lost_acked" \
	[ "$(jq -s '[.[] | select(.board == "vc4" and .verdict == "FAIL" and .counts.lost_acked > 0)] | length' "$V")" -gt 0 ]
check "vc4: ...and every verdict whose audit saw requests says FUA was emulated by flushes" \
	[ "$(jq -s '[.[] | select(.board == "vc4" and (.io_audit.rq // {} | length) > 0) | (.io_note // "" | test("FUA emulated"))] | (length > 0 and all)' "$V")" = true ]

# vc3, errors below the kernel
u=$(jq -c 'select(.board == "vc3") | .findings[]? | select(.class == "unreadable")' "$V" | head -1)
echo "    first unreadable: $u"
check "vc3: a read error gives unreadable, at the failing sector (record's lba + sector)" \
	[ "$(printf '%s' "$u" | jq '.lba + .sector + '$start'')" = "$RD" ]
check "vc3: ...first in the verdict of cycle 1 (judged by the scan of power-on 2)" \
	[ "$(jq -s '[.[] | select(.board == "vc3" and .counts.unreadable > 0)][0].cycle' "$V")" = 1 ]
w=$(jq -c 'select(.board == "vc3" and .cycle == 2) | .findings[]? | select(.what == "write_refused")' "$V")
echo "    write_refused: $w"
check "vc3: the write error gives the device finding write_refused in cycle 2" \
	[ "$(printf '%s' "$w" | jq -r '"\(.class) \(.errno) \(.seq)"' 2>/dev/null)" = "collateral 5 301" ]
check "vc3: ...at the failing sector" [ "$(printf '%s' "$w" | jq '.lba + '$start'' 2>/dev/null)" = "$WR" ]
# from the work sent to the agent's error, and to the cut it triggered
ms=$(jq -s '[.[] | select(.board == "vc3" and .cycle == 2)] |
	([.[] | select(.ev == "rx" and .msg.type == "error")][0].t - [.[] | select(.ev == "work")][0].t),
	([.[] | select(.ev == "cut")][0].t - [.[] | select(.ev == "rx" and .msg.type == "error")][0].t)' "$T/r/events.jsonl" 2>/dev/null | tr '\n' ' ')
echo "    work to the agent's error, error to the cut: $ms ms"
# the order of events, not their timing (a loaded machine takes its time):
# the error came after the work, and the cut that ended the cycle is the
# one the refused write fired, not a work timeout (no hang)
check "vc3: the agent reported it after the work, and the cut followed" \
	[ "$(echo $ms | awk '{ print ($1 >= 0 && $2 >= 0) }')" = 1 ]
check "vc3: ...fired by the refused write (not a work timeout)" \
	[ "$(jq -r 'select(.board == "vc3" and .cycle == 2 and .ev == "cut") | .trigger' "$T/r/events.jsonl" | head -1)" = "write refused" ]
check "vc3: ...and cycle 2 FAILs" [ "$(jq -r 'select(.board == "vc3" and .cycle == 2) | .verdict' "$V")" = FAIL ]
check "replay reproduces every verdict" "$PC" replay "$T/r"
echo "  campaign: $CYCLES cycles on each of 4 boards in $wall s"
if [ "$fails" -gt 0 ]; then
	keep=${PC_TEST_TMP:-build/test-tmp}/t-vm-cache-failed
	rm -rf "$keep" && mkdir -p "$keep" && cp -a "$T/r" "$T/c.json" "$T/out" "$keep/" 2>/dev/null
	echo "  the results are kept in $keep"
fi
echo "t-vm-cache: $passes passed, $fails failed"
finish

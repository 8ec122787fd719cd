#!/bin/bash
# Every crash state of a virtual board's cycles (docs/crash-states.md,
# docs/vm.md): an honest SCSI board with a volatile cache keeps each
# power-on's inputs (relay.keep_inputs: the region before, QEMU's write log
# in the SCSI disk's completion order with the FUA bit of each WRITE, the
# region after the cut; vboard/vckeep.c), 20 cycles over fua, flush and
# fua+flush, then `powercut crash-states` over them: every cycle has 0
# acknowledged records the log does not make durable, 0 mismatches,
# caught = injected, and the state the cut left among those enumerated (a
# cycle whose rebuild tore a write by a sector mask no row of the covering
# design has: "added" to the enumeration, judged like the others against
# its known truth, its verdict the recorded one).
#
# Takes 2-5 minutes under software emulation, so `make check` skips it:
# `make vm-check` runs it (PC_VM_REQUIRE=1: a skip is a failure there), and
# PC_VM=1 runs it from tests/integration/run-all.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
passes=0
ok() { echo "  ok: $*"; passes=$((passes + 1)); }
jqt() { jq -e "$@" > /dev/null; }	# a jq condition, quietly

CYCLES=${PC_VM_KEEP_CYCLES:-20}
vm_setup "20 cycles of a virtual board take 2-5 min under TCG"
"$TOOLS/ptypair" "$T/ptys" & cable=$!
trap 'pc_rc=$?; kill $cable 2>/dev/null; rm_T' EXIT
cp "$VM/sd.img" "$T/disk.img"
for _ in $(seq 300); do [ -s "$T/ptys" ] && break; sleep 0.1; done

cat > "$T/c.json" <<JSON
{ "campaign": "it-vm-crash-keep", "cycles": $CYCLES, "seed": 31,
  "boards": [
  { "name": "ck1",
    "device": { "backend": "posix", "record_size": $record_size, "path": "PARTLABEL=$partlabel" },
    "link": { "type": "serial", "device": "$(sed -n 1p "$T/ptys")", "baud": 115200,
              "boot_patterns": ["Linux version", "pc-init: starting"] },
    "relay": { "driver": "qemu", "disk": "scsi", "kernel": "$VM/kernel", "initrd": "$VM/initrd-fua.img",
               "drive": "$T/disk.img", "console": "$(sed -n 2p "$T/ptys")",
               "volatile_cache": {"profile": "honest", "seed": 5}, "keep_inputs": $CYCLES },
    "modes": ["fua", "flush", "fua+flush"], "records_per_cycle": 64, "flush_every": 4, "queue_depth": 4,
    "cut": { "at": "random", "window_ms": [100, 600] },
    "boot_timeout_ms": 90000, "verify_timeout_ms": 60000, "off_ms": 20 } ] }
JSON
check "the campaign is valid" "$PC" check-config "$T/c.json"

# the key's mistakes
cfg() { jq "$2" "$T/c.json" > "$1"; }
cfg "$T/bad1.json" '.boards[0].relay.keep_inputs = 1001'
expect_fail "keep_inputs past 1000 is refused" 'keep_inputs: expected an integer from 0 to 1000' \
	"$PC" check-config "$T/bad1.json"
cfg "$T/bad2.json" 'del(.boards[0].relay.volatile_cache)'
expect_fail "keep_inputs without a volatile cache is refused" 'keep_inputs: only a SCSI disk with a volatile cache' \
	"$PC" check-config "$T/bad2.json"
cfg "$T/bad3.json" '.boards[0].relay.keep_inputs = "20"'
expect_fail "keep_inputs as a string is refused" 'keep_inputs: expected an integer' "$PC" check-config "$T/bad3.json"

t0=$(date +%s)
"$PC" run "$T/c.json" --results "$T/r" --quiet --no-report > "$T/out" 2>&1
rc=$?
wall=$(($(date +%s) - t0))
V="$T/r/verdicts.jsonl"
K="$T/r/boards/ck1/vc-inputs"
# (or exit 3, INCONCLUSIVE: a random instant 100-600 ms in can come after a
# TCG board's 64 records on a loaded machine; the kept logs are checked below)
check "the campaign passes (exit 0, or 3 INCONCLUSIVE; was $rc)" passed_or_late $rc "$T/r"
[ $rc -eq 0 ] || { tail -5 "$T/out"; tail -3 "$T/r/boards/ck1/qemu.log"; }
check "$CYCLES verdicts, every one PASS" [ "$(jq -s '[.[] | select(.verdict == "PASS")] | length' "$V")" -eq "$CYCLES" ]

# the inputs kept: one finished session per power-on, the last one running
# (a cut that comes before the guest sent its first WRITE leaves a session of no records: nothing to check)
fin=$(cat "$K"/session-*/cycle.json 2>/dev/null | jq -s '[.[] | select(.finished and (.cycles | length) == 1)] | length')
check "finished sessions that wrote one cycle's records each: ${fin:-0} of $CYCLES cycles, at least $((CYCLES - 2))" \
	[ "${fin:-0}" -ge $((CYCLES - 2)) ]
check "every finished session has its four files" sh -c 'for d in "$1"/session-*; do
	grep -q "\"finished\":true" "$d/cycle.json" || continue
	for f in base.img writes.log after.img; do [ -s "$d/$f" ] || exit 1; done; done' sh "$K"
check "each power-on's base.img is the last one's after.img, hard-linked (one copy of the region a power-on)" \
	sh -c 'for d in "$1"/session-*; do s=${d##*-}; p="$1/session-$((s - 1))/after.img"; [ -e "$p" ] || continue
		[ "$(stat -c %i "$d/base.img")" = "$(stat -c %i "$p")" ] || exit 1; done' sh "$K"
check "the base and after images are the region (the partition, $length bytes)" \
	[ "$(stat -c %s "$K"/session-*/base.img | sort -u)" = "$length" ]
cat "$K"/session-*/cycle.json | jq -s -c 'map(select(.finished)) | sort_by(.session) | .[] |
	{session, cycles, writes, fua_writes, flushes, in_flight_writes, unlogged_writes, unmatched_writes,
	 completed_unlogged_writes, outside_writes}' > "$T/sessions.jsonl"
sed 's/^/    /' "$T/sessions.jsonl"
check "every session's writes were matched to a SCSI command, none outside the region, none lost" \
	jqt -s 'all(.[]; .unmatched_writes == 0 and .outside_writes == 0 and .completed_unlogged_writes == 0)' \
	"$T/sessions.jsonl"
# each session's mode, from its cycle's verdict
jq -c '{cycle, mode}' "$V" > "$T/modes.jsonl"
check "fua sessions: every write completed is FUA in the log" \
	jqt -s --slurpfile m "$T/modes.jsonl" '[.[] | . as $s | select(($m[] | select(.cycle == $s.cycles[0]) | .mode) == "fua"
		and .writes > .in_flight_writes)] | length > 0 and all(.[]; .fua_writes == .writes - .in_flight_writes)' \
	"$T/sessions.jsonl"
check "flush sessions: no FUA write, and flushes" \
	jqt -s --slurpfile m "$T/modes.jsonl" '[.[] | . as $s | select(($m[] | select(.cycle == $s.cycles[0]) | .mode) == "flush")] |
		length > 0 and all(.[]; .fua_writes == 0) and any(.[]; .flushes > 0)' "$T/sessions.jsonl"
check "QEMU traced the commands' completions (scsi_req_dequeue)" grep -q scsi_req_dequeue "$T/r/boards/ck1/qemu.log"

# crash-states over the kept inputs, with no change for a qemu board
t1=$(date +%s)
"$PC" crash-states "$T/r" --board ck1 --all > "$T/cs.jsonl" 2> "$T/cs.err"
rc=$?
cs_wall=$(($(date +%s) - t1))
check "crash-states exits 0 (was $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || { head -c 3000 "$T/cs.jsonl"; head -5 "$T/cs.err"; }
jq -c '{cycle, mode, states, writes, durable, volatile, acked, acked_not_durable, mismatches, injected, caught,
	observed: .observed.enumerated, ms}' "$T/cs.jsonl" | sed 's/^/    /'
check "every cycle that wrote was checked (${fin:-0})" [ "$(grep -c . "$T/cs.jsonl")" -eq "${fin:-0}" ]
check "every cycle: 0 acked_not_durable, 0 mismatches, caught = injected, states judged" \
	jqt -s 'all(.[]; .acked_not_durable == 0 and .mismatches == 0 and .caught == .injected and .states > 0)' \
	"$T/cs.jsonl"
check "acknowledged records were checked, and illegal states injected and caught" \
	jqt -s '(map(.acked) | add) > 0 and (map(.injected) | add) > 0' "$T/cs.jsonl"
check "every cycle's state after the cut is legal, and gets the verdict verdicts.jsonl holds" \
	jqt -s 'all(.[]; .observed.legal and .observed.verdict == .observed.recorded)' "$T/cs.jsonl"
# the rebuild's tears per power-on (vcache.jsonl): a torn write's sector mask is drawn at random
jq -c '{power_on, torn}' "$T/r/boards/ck1/vcache.jsonl" > "$T/torn.jsonl"
check "the state after each cut is among those enumerated (exact or by slot; added only when its rebuild tore a write)" \
	jqt -s --slurpfile t "$T/torn.jsonl" 'all(.[]; . as $c | .observed.enumerated == "exact" or
		.observed.enumerated == "by_slot" or (.observed.enumerated == "added" and
		([$t[] | select(.power_on == $c.cycle) | .torn] | add // 0) > 0))' "$T/cs.jsonl"
# what blklogwrites' own order would have called durable (the rebuild's rule: logged before a
# flush, or FUA by LBA) against the kept log's completion order: the difference is the leniency
echo "    durable writes, blklogwrites' order: $(jq -s 'map(.durable) | add' "$T/r/boards/ck1/vcache.jsonl");" \
	"the kept log's completion order: $(jq -s 'map(.durable) | add' "$T/cs.jsonl")" \
	"(writes $(jq -s 'map(.writes) | add' "$T/cs.jsonl"))"
enum=$(jq -s '[.[] | select(.observed.enumerated == "exact" or .observed.enumerated == "by_slot")] | length' "$T/cs.jsonl")
check "...which holds for most cycles ($enum of ${fin:-0})" [ "$((enum * 2))" -gt "${fin:-0}" ]
check "replay reproduces every verdict" "$PC" replay "$T/r"
echo "  campaign: $CYCLES cycles in $wall s; crash-states $cs_wall s"
if [ "$fails" -gt 0 ]; then
	keep=${PC_TEST_TMP:-build/test-tmp}/t-vm-crash-keep-failed
	rm -rf "$keep" && mkdir -p "$keep" && cp -a "$T/r" "$T/c.json" "$T/out" "$keep/" 2>/dev/null
	echo "  the results are kept in $keep"
fi
echo "t-vm-crash-keep: $passes passed, $fails failed"
finish

#!/bin/bash
# powercut crash-states on cycles a sim board kept the inputs of
# (docs/crash-states.md): one honest cycle per write mode (fua, fua+flush,
# flush, journal, none, relwr) has 0 mismatches, caught = injected, 0
# acknowledged records the log does not make durable, and the sim's own
# state after the cut among the states enumerated, with the verdict it got
# in verdicts.jsonl. A lying-flush board: every state that loses an
# acknowledged record (its own cut's among them) is a FAIL naming exactly
# those seqs (mismatches 0 while lost_acked_states > 0). Every cut comes
# after 4 to 12 ACKs (mode none, which has none: once its work is done), so
# that each cycle wrote and the lying board lost acknowledged records. Then the negative
# controls: an ACK in the mode none cycle (never durable), added to events.jsonl,
# gives acked_not_durable >= 1 and exit 1; no kept inputs is exit 2.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

command -v jq > /dev/null || skip "jq is not installed"
jqt() { jq -e "$@" > /dev/null; }	# a jq condition, quietly

R="$T/r"
cat > "$T/c.json" <<'JSON'
{
  "campaign": "it-crash-states", "cycles": 6, "seed": 23,
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096, "keep_inputs": 20 },
    "records_per_cycle": 24, "flush_every": 4, "queue_depth": 4,
    "modes": ["fua", "fua+flush", "flush", "journal", "none", "relwr"],
    "pattern": "sequential",
    "cut": { "at": "acks", "acks": [4, 12] }, "off_ms": 5
  },
  "boards": [
    { "name": "honest", "device": { "profile": "honest" } },
    { "name": "lying", "device": { "profile": "lying-flush" }, "modes": ["flush"] }
  ]
}
JSON
# the sim keeps its inputs only where device.keep_inputs exists (docs/sim.md)
if "$PC" check-config "$T/c.json" 2>&1 | grep -q "keep_inputs"; then
	skip "this build's sim keeps no inputs (device.keep_inputs is refused)"
fi
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report > "$T/run.out" 2>&1
rc=$?
check "the campaign runs (exit 0 or 1; was $rc)" [ $rc -le 1 ]
[ $rc -le 1 ] || tail -5 "$T/run.out"

"$PC" crash-states "$R" --board honest --all > "$T/honest.jsonl" 2> "$T/honest.err"
rc=$?
check "honest: crash-states exits 0 (was $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || { head -c 3000 "$T/honest.jsonl"; cat "$T/honest.err"; }
# the mode of each checked cycle, from verdicts.jsonl
jq -c 'select(.board == "honest") | {cycle, mode, verdict}' "$R/verdicts.jsonl" > "$T/modes.jsonl"
for m in fua fua+flush flush journal none relwr; do
	c=$(jq -r --arg m "$m" 'select(.mode == $m) | .cycle' "$T/modes.jsonl" | head -1)
	line=$(jq -c --argjson c "${c:-0}" 'select(.cycle == $c)' "$T/honest.jsonl")
	check "honest $m: cycle ${c:-?} checked" [ -n "$line" ]
	[ -n "$line" ] || continue
	echo "    $m: $(jq -c '{states, durable, volatile, acked, acked_not_durable, mismatches, injected, caught, observed, ms}' <<< "$line")"
	check "honest $m: states judged, 0 mismatches, caught = injected, 0 acked not durable" \
		jqt '.states > 0 and .mismatches == 0 and .caught == .injected and .acked_not_durable == 0' <<< "$line"
	check "honest $m: the state after the cut is among those enumerated" \
		jqt '.observed.enumerated == "exact" or .observed.enumerated == "by_slot"' <<< "$line"
	check "honest $m: the state after the cut gets the verdict verdicts.jsonl holds" \
		jqt '.observed.verdict == .observed.recorded' <<< "$line"
done

"$PC" crash-states "$R" --board lying --all > "$T/lying.jsonl" 2> "$T/lying.err"
rc=$?
check "lying-flush: crash-states exits 0: the agent and the judge are right, the device lies (was $rc)" [ $rc -eq 0 ]
check "lying-flush: every state losing an acknowledged record is a FAIL naming exactly those seqs" \
	jqt -s 'length > 0 and all(.[]; .mismatches == 0 and .caught == .injected) and any(.[]; .lost_acked_states > 0)' \
	"$T/lying.jsonl"
check "lying-flush: some cut lost a flushed write, and its verdict is the recorded FAIL" \
	jqt -s 'any(.[]; .observed.legal == false and .observed.verdict == "FAIL" and .observed.recorded == "FAIL")' \
	"$T/lying.jsonl"

# negative control: an ACK in the mode none cycle, where nothing is ever flushed
c=$(jq -r 'select(.mode == "none") | .cycle' "$T/modes.jsonl" | head -1)
last=$(jq -r --argjson c "$c" 'select(.board == "honest" and .cycle == $c and .ev == "work") | .work.first' \
	"$R/events.jsonl")
cp -r "$R" "$T/lie"
jq -c --argjson c "$c" --argjson s "$last" \
	'if .board == "honest" and .cycle == $c and .ev == "cut" then
		({t: .t, board: .board, cycle: .cycle, ev: "rx", msg: {type: "ack", v: 1, first: $s, n: 1}}, .)
	else . end' "$R/events.jsonl" > "$T/lie/events.jsonl"
"$PC" crash-states "$T/lie" --board honest --cycle "$c" > "$T/lie.jsonl" 2> "$T/lie.err"
rc=$?
check "mode none, an ACK of seq $last added: exit 1 (was $rc)" [ $rc -eq 1 ]
check "mode none, an ACK of seq $last added: acked_not_durable 1" jqt '.acked_not_durable == 1' "$T/lie.jsonl"

rm -rf "$T/lie/boards/honest/media.img.inputs" "$T/lie/boards/lying/media.img.inputs"
expect_fail "no kept inputs: exit 2 saying how to keep them" "keep_inputs" "$PC" crash-states "$T/lie"
# a damaged kept log is damaged input (exit 2), never a finding against the agent
cp -r "$R" "$T/dmg"
log=$(ls "$T"/dmg/boards/honest/media.img.inputs/session-*/writes.log | head -1)
head -c 700 /dev/urandom > "$log"
"$PC" crash-states "$T/dmg" --all > "$T/dmg.out" 2>&1
rc=$?
check "a damaged log: exit 2 (was $rc)" test $rc -eq 2
check "...naming the log as damaged" grep -q "no dm-log-writes superblock (damaged" "$T/dmg.out"
finish

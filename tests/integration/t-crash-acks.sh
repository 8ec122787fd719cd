#!/bin/bash
# powercut crash-states checks the agent's ordering at every ACK (issue 38,
# docs/crash-states.md "ACK marks"): the sim's agent puts a mark in the kept
# write log right before each ACK it sends, so each ACK stands in the
# device's own order. Two sim boards, 20 cycles each, modes flush and
# fua+flush alternating, random cuts: the agent of board "early" (the sim's
# ack-early profile: the agent's fault, the card is honest) acknowledges each
# record before the device makes it durable (a flush group before its flush,
# a FUA write before it is issued). crash-states must exit 1 on each of its
# 20 cycles by its own exit code, with acked_not_durable >= 1, whatever the
# campaign's verdict of that cycle was; the honest board's cycles all exit 0
# with acked_not_durable 0 at every mark and the host's ACKs all marked.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

command -v jq > /dev/null || skip "jq is not installed"
jqt() { jq -e "$@" > /dev/null; }	# a jq condition, quietly

R="$T/r"
cat > "$T/c.json" <<'JSON'
{
  "campaign": "it-crash-acks", "cycles": 20, "seed": 38,
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096, "keep_inputs": 30, "program_us": 300 },
    "records_per_cycle": 12, "flush_every": 4, "queue_depth": 1,
    "modes": ["flush", "fua+flush"],
    "pattern": "sequential",
    "cut": { "at": "random", "window_ms": [20, 60] }, "off_ms": 5
  },
  "boards": [
    { "name": "early", "device": { "profile": "ack-early" } },
    { "name": "honest", "device": { "profile": "honest" } }
  ]
}
JSON
if "$PC" check-config "$T/c.json" 2>&1 | grep -qE "keep_inputs|ack-early"; then
	skip "this build's sim keeps no inputs or has no ack-early profile"
fi
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report > "$T/run.out" 2>&1
rc=$?
check "the campaign runs (exit 0 or 1; was $rc)" [ $rc -le 1 ]
[ $rc -le 1 ] || tail -5 "$T/run.out"

# the early agent: each of its 20 cycles, one crash-states run each, exit 1 by its own exit code (the
# window starts late enough that the agent has sent an ACK: a cycle cut before its first SUBMIT,
# on a machine too loaded, has nothing to catch and is named)
caught=0; camp_fail=0; flush_n=0; fua_n=0
for c in $(seq 1 20); do
	"$PC" crash-states "$R" --board early --cycle "$c" > "$T/early-$c.jsonl" 2> "$T/early-$c.err"
	rc=$?
	mode=$(jq -r 'select(.board == "early" and .cycle == '"$c"') | .mode' "$R/verdicts.jsonl")
	verdict=$(jq -r 'select(.board == "early" and .cycle == '"$c"') | .verdict' "$R/verdicts.jsonl")
	[ "$mode" = flush ] && flush_n=$((flush_n + 1))
	[ "$mode" = fua+flush ] && fua_n=$((fua_n + 1))
	[ "$verdict" = FAIL ] && camp_fail=$((camp_fail + 1))
	if [ $rc -eq 1 ] && jqt '.acked_not_durable >= 1 and .ack_marks >= 1 and .ok == false' "$T/early-$c.jsonl"; then
		caught=$((caught + 1))
	else
		sub=$(jq -r 'select(.board == "early" and .cycle == '"$c"') | .records.submitted' "$R/verdicts.jsonl")
		echo "    early cycle $c ($mode, campaign $verdict, $sub records submitted before the cut): exit $rc $(head -c 600 "$T/early-$c.jsonl") $(head -c 300 "$T/early-$c.err")"
	fi
done
echo "    early: crash-states caught $caught of 20 cycles ($flush_n flush, $fua_n fua+flush); the campaign's own verdict FAILed $camp_fail"
check "early ACKs: crash-states exits 1 with acked_not_durable >= 1 on all 20 cycles (caught $caught)" [ "$caught" -eq 20 ]
check "...10 of them flush cycles (was $flush_n)" [ "$flush_n" -eq 10 ]
check "...10 of them fua+flush cycles (was $fua_n)" [ "$fua_n" -eq 10 ]
check "...naming the ACK mark that came before the log made the record durable" \
	grep -q "acknowledged (its ACK mark is log entry [0-9]*) before the log made it durable" "$T/early-1.jsonl"

"$PC" crash-states "$R" --board honest --all > "$T/honest.jsonl" 2> "$T/honest.err"
rc=$?
check "honest: crash-states exits 0 (was $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || { head -c 2000 "$T/honest.jsonl"; cat "$T/honest.err"; }
n=$(wc -l < "$T/honest.jsonl")
echo "    honest: $n cycles checked: $(jq -s -c '{acked: (map(.acked) | add), ack_marks: (map(.ack_marks) | add), acked_not_durable: (map(.acked_not_durable) | add)}' "$T/honest.jsonl")"
check "honest: cycles checked ($n)" [ "$n" -ge 10 ]
check "honest: 0 acked_not_durable and every host ACK marked, in every cycle" \
	jqt -s 'all(.[]; .acked_not_durable == 0 and (.ack_marks == 0 or .acks_unmarked == 0))' "$T/honest.jsonl"
check "honest: the ACKs are marked in the log (some cycle acknowledged, every acknowledged cycle has marks)" \
	jqt -s 'any(.[]; .acked > 0) and all(.[]; .acked == 0 or .ack_marks > 0)' "$T/honest.jsonl"
finish

#!/bin/bash
# powercut crash-states checks the agent's ordering at every ACK (issue 38,
# docs/crash-states.md "ACK marks"): the sim's agent puts a mark in the kept
# write log right before each ACK it sends, so each ACK stands in the
# device's own order. Two sim boards, modes flush and fua+flush alternating,
# random cuts: the agent of board "early" (the sim's ack-early profile: the
# agent's fault, the card is honest) acknowledges each record before the
# device makes it durable (a flush group before its flush, a FUA write
# before it is issued). crash-states must exit 1, by its own exit code, with
# acked_not_durable >= 1, on every cycle in which the agent had sent an ACK
# before the cut, whatever the campaign's verdict of that cycle was; at
# least 20 such cycles, both modes among them. A cycle cut before the
# agent's first ACK (on a loaded machine the agent may not have written
# yet) has nothing to catch: counted apart, never a pass. So that such
# cycles cannot crowd out the 20 under load (5 runs of make check under
# stress-ng --cpu 2: 19, 11 and 19 of 30 random cuts came after an ACK), a
# second early board, "early-acks", is cut after 3 to 10 ACKs reached the
# host (after the first, a FUA write acknowledged before it was issued may
# have left no log to check: "no kept inputs", seen once in 30): the 20
# are counted over both boards, and random cuts must catch some (>= 5) on
# their own, where the campaign's verdict misses some. The honest
# board's cycles all exit 0 with acked_not_durable 0 at every mark and the
# host's ACKs all marked.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

command -v jq > /dev/null || skip "jq is not installed"
jqt() { jq -e "$@" > /dev/null; }	# a jq condition, quietly

R="$T/r"
cat > "$T/c.json" <<'JSON'
{
  "campaign": "it-crash-acks", "cycles": 30, "seed": 38,
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096, "keep_inputs": 40, "program_us": 500 },
    "records_per_cycle": 12, "flush_every": 4, "queue_depth": 1,
    "modes": ["flush", "fua+flush"],
    "pattern": "sequential",
    "cut": { "at": "random", "window_ms": [20, 80] }, "off_ms": 5
  },
  "boards": [
    { "name": "early", "device": { "profile": "ack-early" } },
    { "name": "early-acks", "device": { "profile": "ack-early" }, "cut": { "at": "acks", "acks": [3, 10] } },
    { "name": "honest", "device": { "profile": "honest" } }
  ]
}
JSON
if "$PC" check-config "$T/c.json" 2>&1 | grep -qE "keep_inputs|ack-early"; then
	skip "this build's sim keeps no inputs or has no ack-early profile"
fi
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report > "$T/run.out" 2>&1
rc=$?
ran_or_late() { [ "$1" -le 1 ] || passed_or_late "$1" "$2"; }
check "the campaign runs (exit 0 or 1, or 3 INCONCLUSIVE; was $rc)" ran_or_late $rc "$R"
[ $rc -le 1 ] || tail -5 "$T/run.out"

# the early agents: each of their 30 cycles, one crash-states run each, its own exit code
caught=0; none=0; nolog=0; missed=0; camp_fail=0; flush_n=0; fua_n=0; rnd_caught=0; rnd_missed_by_camp=0
for b in early early-acks; do
for c in $(seq 1 30); do
	"$PC" crash-states "$R" --board $b --cycle "$c" > "$T/$b-$c.jsonl" 2> "$T/$b-$c.err"
	rc=$?
	sel='select(.board == "'$b'" and .cycle == '"$c"')'
	mode=$(jq -r "$sel | .mode" "$R/verdicts.jsonl")
	verdict=$(jq -r "$sel | .verdict" "$R/verdicts.jsonl")
	acked=$(jq -r "$sel | .records.acked" "$R/verdicts.jsonl")
	if [ $rc -eq 1 ] && jqt '.acked_not_durable >= 1 and .ack_marks >= 1 and .ok == false' "$T/$b-$c.jsonl"; then
		caught=$((caught + 1))
		if [ $b = early ]; then
			rnd_caught=$((rnd_caught + 1))
			[ "$verdict" = FAIL ] || rnd_missed_by_camp=$((rnd_missed_by_camp + 1))
		fi
		[ "$verdict" = FAIL ] && camp_fail=$((camp_fail + 1))
		[ "$mode" = flush ] && flush_n=$((flush_n + 1))
		[ "$mode" = fua+flush ] && fua_n=$((fua_n + 1))
	elif [ "$acked" = 0 ] && { [ $rc -eq 2 ] || jqt '.ack_marks == 0' "$T/$b-$c.jsonl"; }; then
		none=$((none + 1))	# cut before the agent's first ACK: its log holds no mark
	elif [ "$acked" = 1 ] && [ $rc -eq 2 ] && grep -q 'no kept inputs' "$T/$b-$c.err"; then
		# cut right at the first ACK, which the ACK-early agent sent before
		# its first write: the power-on kept no log at all (seen 2 times in
		# some 300 cycles; why the mark before that ACK is in no log is
		# open). Nothing to check; counted apart, never a pass
		nolog=$((nolog + 1))
		echo "    $b cycle $c: cut at its first ACK, no kept log (crash-states: $(head -c 200 "$T/$b-$c.err"))"
	else
		missed=$((missed + 1))
		echo "    $b cycle $c ($mode, campaign $verdict, $acked ACKs at the host): exit $rc $(head -c 600 "$T/$b-$c.jsonl") $(head -c 300 "$T/$b-$c.err")"
	fi
done
done
echo "    early, early-acks: crash-states caught $caught of $((caught + missed)) cycles with an ACK before the cut ($flush_n flush, $fua_n fua+flush); the campaign's own verdict FAILed $camp_fail of them; $none cycles cut before the first ACK, $nolog at the first ACK with no kept log"
echo "    early (random cuts): caught $rnd_caught, of which the campaign's verdict had not FAILed $rnd_missed_by_camp"
check "early ACKs: crash-states exits 1 with acked_not_durable >= 1 on every cycle with an ACK before the cut (missed $missed)" \
	[ "$missed" -eq 0 ]
check "...at least 20 such cycles (caught $caught)" [ "$caught" -ge 20 ]
check "...at least 5 of them under random cuts (caught $rnd_caught)" [ "$rnd_caught" -ge 5 ]
check "...flush cycles among them (was $flush_n)" [ "$flush_n" -ge 5 ]
check "...fua+flush cycles among them (was $fua_n)" [ "$fua_n" -ge 5 ]
# (a cycle may be caught at its real cut alone, when its early ACK and the
# cut fall between the same two log entries: some caught cycle names a mark)
check "...naming the ACK mark that came before the log made the record durable" \
	sh -c 'cat "$@" 2> /dev/null | grep -q "acknowledged (its ACK mark is log entry [0-9]*) before the log made it durable"' \
	_ "$T"/early*-*.jsonl

"$PC" crash-states "$R" --board honest --all > "$T/honest.jsonl" 2> "$T/honest.err"
rc=$?
check "honest: crash-states exits 0 (was $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || { head -c 2000 "$T/honest.jsonl"; cat "$T/honest.err"; }
n=$(wc -l < "$T/honest.jsonl")
echo "    honest: $n cycles checked: $(jq -s -c '{acked: (map(.acked) | add), ack_marks: (map(.ack_marks) | add), acked_not_durable: (map(.acked_not_durable) | add)}' "$T/honest.jsonl")"
# a cycle cut before its first write keeps nothing to check: on a loaded
# machine (run-all -j6 in a fresh clone's .ci/run) 18 of the 30 random cuts
# at 20-80 ms came before the slow agent's first write, and 12 were checked
check "honest: cycles checked ($n)" [ "$n" -ge 5 ]
check "honest: 0 acked_not_durable and every host ACK marked, in every cycle" \
	jqt -s 'all(.[]; .acked_not_durable == 0 and (.ack_marks == 0 or .acks_unmarked == 0))' "$T/honest.jsonl"
check "honest: the ACKs are marked in the log (some cycle acknowledged, every acknowledged cycle has marks)" \
	jqt -s 'any(.[]; .acked > 0) and all(.[]; .acked == 0 or .ack_marks > 0)' "$T/honest.jsonl"
finish

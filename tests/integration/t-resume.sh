#!/bin/bash
# The harness's own records survive the harness being killed: SIGKILL it in the
# middle of a campaign, tear the last line of both files, run the same command
# again: the campaign completes with one verdict per cycle, none lost or
# written twice, and replay agrees with every one.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cat > "$T/c.json" <<JSON
{
  "campaign": "it-resume", "cycles": 60, "seed": 3,
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "2M", "record_size": 4096 },
    "records_per_cycle": 100, "modes": ["fua", "flush"],
    "cut": { "at": "random", "window_ms": [2, 30] }, "off_ms": 5
  },
  "boards": [ { "name": "b1" }, { "name": "b2", "device": { "profile": "lying-flush" } } ]
}
JSON
for kill_after in 1.5 1.0; do
	"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet --no-report > "$T/out1" 2>&1 &
	pid=$!
	# kill mid-campaign, not mid-prepare: a prepare dies with its harness and
	# starts over at the next run (relays.md, orphans), which under a loaded
	# ASan build could eat every kill_after
	for _ in $(seq 300); do [ -s "$T/r/verdicts.jsonl" ] && break; sleep 0.1; done
	sleep $kill_after
	kill -KILL $pid
	wait $pid 2>/dev/null
	sleep 0.3
	n1=$(grep -c . "$T/r/verdicts.jsonl")
	echo "  killed the harness after ${kill_after}s with $n1 verdicts on record"
	# a crash in the middle of a write leaves a torn last line
	printf '{"t":1,"board":"b1","cyc' >> "$T/r/events.jsonl"
	printf '{"campaign":"it-resume","bo' >> "$T/r/verdicts.jsonl"
done
check "some verdicts were on record before the kills" [ "$n1" -gt 0 ]
"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet --no-report > "$T/out2" 2>&1
rc=$?
check "resumed run finishes (exit 0 or 1)" [ $rc -le 1 ]
check "resumed run said it resumed" grep -q "resuming" "$T/out2"
check "torn tails were cut off and reported" grep -q "torn last line" "$T/out2"
check "120 verdicts in all" [ "$(grep -c . "$T/r/verdicts.jsonl")" -eq 120 ]
check "no duplicates" [ "$(jq -r '"\(.board)/\(.cycle)"' "$T/r/verdicts.jsonl" | sort | uniq -d | wc -l)" -eq 0 ]
check "cycles 1..60 for each board" [ "$(jq -r 'select(.board=="b1") | .cycle' "$T/r/verdicts.jsonl" | sort -n | uniq | tr '\n' ' ')" = "$(seq 1 60 | tr '\n' ' ')" ]
check "every line of both files is whole JSON" jq -e . "$T/r/verdicts.jsonl" "$T/r/events.jsonl" > /dev/null
check "replay reproduces every verdict after the crashes" "$PC" replay "$T/r"
check "b2 ground truth still agrees" "$TOOLS/truthcheck" "$T/r" b2
# a finished campaign run again does nothing and loses nothing
"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet --no-report > "$T/out3" 2>&1
check "re-running a finished campaign adds nothing" [ "$(grep -c . "$T/r/verdicts.jsonl")" -eq 120 ]
# a different configuration must not be mixed into these results
sed 's/"seed": 3/"seed": 4/' "$T/c.json" > "$T/c2.json"
expect_fail "a changed configuration is refused for the same results folder" "different configuration" \
	"$PC" run "$T/c2.json" --results "$T/r" --agent "$AGENT" --quiet
finish

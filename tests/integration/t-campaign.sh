#!/bin/bash
# A sim campaign end to end: honest and lying-flush boards, verdicts against
# the sim's ground truth, replay of every verdict.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cat > "$T/c.json" <<JSON
{
  "campaign": "it-campaign", "cycles": 40, "seed": 7,
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "2M", "record_size": 4096 },
    "records_per_cycle": 150, "flush_every": 8, "queue_depth": 4,
    "cut": { "at": "random", "window_ms": [2, 40] }, "off_ms": 5
  },
  "boards": [
    { "name": "honest-1", "device": { "profile": "honest" }, "modes": ["fua", "flush", "fua+flush", "journal", "none"] },
    { "name": "lying-1", "device": { "profile": "lying-flush" }, "modes": ["flush"] },
    { "name": "acks-1", "device": { "profile": "honest" }, "modes": ["fua"], "pattern": "random",
      "cut": { "at": "acks", "acks": [1, 120] } }
  ]
}
JSON
"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet > "$T/out" 2>&1
rc=$?
check "run finishes with exit 1 (lying-flush FAILs)" [ $rc -eq 1 ]
check "one verdict per cycle per board" [ "$(jq -s 'length' "$T/r/verdicts.jsonl")" -eq 120 ]
check "no duplicate verdicts" [ "$(jq -r '"\(.board)/\(.cycle)"' "$T/r/verdicts.jsonl" | sort | uniq -d | wc -l)" -eq 0 ]
check "honest boards: zero FAIL" [ "$(jq -s '[.[] | select(.board != "lying-1" and .verdict != "PASS")] | length' "$T/r/verdicts.jsonl")" -eq 0 ]
inflight=$(jq -s '[.[] | select(.board == "honest-1" and (.counts.not_written + .counts.torn) > 0)] | length' "$T/r/verdicts.jsonl")
check "cuts caught unacknowledged writes in flight ($inflight cycles)" [ "$inflight" -gt 0 ]
check "lying-flush: some FAIL" [ "$(jq -s '[.[] | select(.board == "lying-1" and .verdict == "FAIL")] | length' "$T/r/verdicts.jsonl")" -gt 0 ]
check "lying-flush: violations are exactly the acked records the truth log dropped" "$TOOLS/truthcheck" "$T/r" lying-1
check "honest: truth log and verdicts agree" "$TOOLS/truthcheck" "$T/r" honest-1
check "every mode ran on honest-1" [ "$(jq -r 'select(.board == "honest-1") | .mode' "$T/r/verdicts.jsonl" | sort -u | wc -l)" -eq 5 ]
check "verdicts carry device identity and queue facts" \
	[ "$(jq -s '[.[] | select(.device.cid and .device.id and .queue.write_cache and .kernel)] | length' "$T/r/verdicts.jsonl")" -eq 120 ]
check "console logs captured per cycle" [ -s "$T/r/console/honest-1/cycle-1.log" -o -f "$T/r/console/honest-1/cycle-1.log" ]
check "replay reproduces every verdict" "$PC" replay "$T/r"
check "report names each device" grep -q "honest-1" "$T/out"

# a verdicts.jsonl that is not the campaign's text line for line (two lines
# swapped) is compared verdict by verdict
cp "$T/r/verdicts.jsonl" "$T/v.orig"
{ sed -n 2p "$T/v.orig"; sed -n 1p "$T/v.orig"; sed -n '3,$p' "$T/v.orig"; } > "$T/r/verdicts.jsonl"
check "replay agrees with the same verdicts in another order" "$PC" replay "$T/r"
cp "$T/v.orig" "$T/r/verdicts.jsonl"
# replay must notice a verdict that does not follow from the events
sed -i '0,/"verdict":"PASS"/s//"verdict":"FAIL"/' "$T/r/verdicts.jsonl"
expect_fail "replay exits non-zero on a changed verdict" "differ" "$PC" replay "$T/r"
finish

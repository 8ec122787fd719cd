#!/bin/bash
# The sim's deterministic cut point: the board loses power after exactly N
# sectors programmed in each power session. Two runs of the same campaign give
# the same verdicts, finding for finding: a cut that can be replayed.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cat > "$T/c.json" <<JSON
{ "campaign": "it-cutpoint", "cycles": 12, "seed": 8,
  "defaults": { "relay": { "driver": "sim", "boot_delay_ms": 2 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096, "cut_after_sectors": 301 },
    "records_per_cycle": 100, "cut": { "at": "random", "window_ms": [5000, 6000] },
    "work_timeout_ms": 10000, "off_ms": 2 },
  "boards": [ { "name": "h", "modes": ["fua", "flush", "none"] },
              { "name": "l", "modes": ["flush"], "device": { "profile": "lying-flush" } } ] }
JSON
for run in 1 2; do
	"$PC" run "$T/c.json" --results "$T/r$run" --agent "$AGENT" --quiet --no-report > "$T/out$run" 2>&1
	# what must not depend on timing: outcomes, counts, records, findings
	jq -c '{board, cycle, verdict, records, counts, findings}' "$T/r$run/verdicts.jsonl" | sort > "$T/v$run"
done
check "every cut came at the cut point (link lost, no random instant)" \
	[ "$(jq -s '[.[] | select(.ev == "cut" and .trigger == "link lost")] | length' "$T/r1/events.jsonl")" -eq 24 ]
check "the sim logged each cut point" [ "$(grep -c '"cut_point"' "$T/r1/boards/h/media.img.truth.jsonl")" -eq 12 ]
check "cuts landed mid-record (torn records)" [ "$(jq -s 'map(.counts.torn) | add' "$T/r1/verdicts.jsonl")" -gt 0 ]
check "the lying board fails the same way both times" [ "$(jq -s '[.[] | select(.board == "l" and .verdict == "FAIL")] | length' "$T/r1/verdicts.jsonl")" -gt 0 ]
check "two runs, identical verdicts finding for finding" cmp -s "$T/v1" "$T/v2"
cmp -s "$T/v1" "$T/v2" || diff "$T/v1" "$T/v2" | head -4
finish

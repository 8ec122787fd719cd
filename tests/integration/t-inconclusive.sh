#!/bin/bash
# No PASS without evidence (issue 37): a mode whose cuts never landed during
# its writes (fewer than one and 10% of its judged cuts, docs/verdicts.md
# "No PASS without evidence") proved nothing about the part. A campaign
# whose cut window lies after the writes (16 records, cut at 4 to 5 s: the
# agent's `done` comes first and the cut with it) reads INCONCLUSIVE, not
# PASS, in every report format, with the advice, and `run` and `report`
# exit 3 (INCOMPLETE's status: neither a PASS nor a FAIL). The same board
# cut by the "mix" plan (random, at a flush, at a FUA write) PASSes.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo "t-inconclusive: a window after the writes is INCONCLUSIVE in every format, exit 3"
command -v jq >/dev/null || skip "jq not installed (tools/debian-packages.txt lists it)"
command -v python3 >/dev/null || skip "python3 not installed (it reads the JUnit XML)"

camp() { # NAME CUT
	cat >"$T/$1.json" <<JSON
{ "campaign": "$1", "cycles": 6, "seed": 5, "listen": "127.0.0.1:0",
  "defaults": { "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096, "profile": "honest" },
    "modes": ["fua", "flush"], "records_per_cycle": 16, "flush_every": 4, "cut": $2, "off_ms": 5 },
  "boards": [ { "name": "b1" } ] }
JSON
}
camp late '{ "at": "random", "window_ms": [4000, 5000] }'
"$PC" run "$T/late.json" --results "$T/late" --agent "$AGENT" --quiet >"$T/late.out" 2>&1
rc=$?
check "run: a window after the writes exits 3, not 0 (was $rc)" [ $rc -eq 3 ]
check "...every verdict is PASS (nothing was lost: nothing was at stake)" \
	[ "$(jq -s '[.[] | select(.verdict != "PASS")] | length' "$T/late/verdicts.jsonl")" -eq 0 ]
check "...and run's own report says INCONCLUSIVE" grep -q '^  result: INCONCLUSIVE (6 cycles)$' "$T/late.out"

for f in text md html json junit csv; do
	"$PC" report --format $f -o "$T/r.$f" "$T/late" >"$T/r.$f.log" 2>&1
	rc=$?
	check "report --format $f: exit 3 (was $rc)" [ $rc -eq 3 ]
done
why='mode fua: 0 of 3 cuts landed during writes, fewer than 1 (at least one, and 10%): 0 before the first write, 3 after the last ACK; cut earlier'
check "text: the result, and why per mode with the advice" \
	sh -c "grep -q '^  result: INCONCLUSIVE' '$T/r.text' && [ \$(grep -c '^  inconclusive: mode f' '$T/r.text') -eq 2 ] &&
		tr -s ' \n' ' ' <'$T/r.text' | grep -qF '$why' && grep -q 'records_per_cycle' '$T/r.text'"
check "text: the summary line" grep -qE '^  INCONCLUSIVE .*inconclusive: mode fua 0 of 3 cuts during writes; mode flush 0 of 3' "$T/r.text"
check "md: the summary row, the heading and the why" \
	sh -c "grep -q '^| \*\*INCONCLUSIVE\*\* |' '$T/r.md' && grep -q '^## .*: INCONCLUSIVE$' '$T/r.md' &&
		[ \$(grep -c '^- inconclusive: mode f' '$T/r.md') -eq 2 ]"
check "html: the overall badge, the device's, and why" \
	sh -c "[ \$(grep -o '<span class=\"badge INCONCLUSIVE\">INCONCLUSIVE</span>' '$T/r.html' | wc -l) -eq 3 ] &&
		grep -qF '<li>inconclusive: $why' '$T/r.html'"
check "json: result, the device's, and its inconclusive modes" \
	[ "$(jq -r '[.result, .devices[0].result, (.devices[0].inconclusive | map("\(.mode):\(.cuts_in_writes)/\(.cuts)") | join(","))] | join(" ")' "$T/r.json")" = \
	"INCONCLUSIVE INCONCLUSIVE fua:0/3,flush:0/3" ]
python3 - "$T/r.junit" >"$T/junit.out" 2>&1 <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "0", "2"), root.attrib
for c in root.iter("testcase"):
    e = c.find("error")
    assert e is not None and e.get("type") == "INCONCLUSIVE" and "after the last ACK" in e.get("message"), c.attrib
props = {p.get("name"): p.get("value") for p in root.iter("property")}
assert props["result"] == "INCONCLUSIVE", props
print("ok")
PY
check "junit: each mode's testcase errs INCONCLUSIVE, none passes" [ "$(cat "$T/junit.out")" = ok ]
check "csv: every row names the device's result INCONCLUSIVE" \
	[ "$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["device_result"] == "INCONCLUSIVE"' "$T/r.csv" | wc -l)" -eq 6 ]

# the same board, cut at flushes, FUA writes and random instants: PASS
camp mixed '{ "at": "mix", "window_ms": [0, 5] }'
"$PC" run "$T/mixed.json" --results "$T/mixed" --agent "$AGENT" --quiet --no-report >"$T/mixed.out" 2>&1
rc=$?
check "run: the mix plan on the same board exits 0 (was $rc)" [ $rc -eq 0 ]
"$PC" report --format json -o "$T/m.json" "$T/mixed" >/dev/null 2>&1
check "...PASS, every mode's cuts during writes, a flush and a FUA write reached" \
	[ "$(jq -r '[.result, (.devices[0].inconclusive | length), (.devices[0].modes[] | .flags | length)] | map(tostring) | join(" ")' "$T/m.json")" = "PASS 0 0 0" ]
finish

#!/bin/bash
# t-report: `powercut report` in every format over two real results folders,
# one of them given twice (it counts once), parsed back by real parsers: the
# JSON by jq, the JUnit by python3's XML parser, the CSV by pandas; the jq
# and pandas one-liners of docs/results.md run as written; exit codes 1 for
# a FAIL, 2 for a newer format, and hostile verdicts refused with a line.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo "t-report: report formats, merging, de-duplication, docs one-liners"
command -v jq >/dev/null || skip "jq not installed (tools/debian-packages.txt lists it)"
# Debian's python3 (with python3-pandas) before any other on PATH (pyenv, venvs)
PATH=/usr/bin:$PATH

A=$T/a; B=$T/b
# folder A: an honest and a lying board (the lying one FAILs: run exits 1)
sim_quick_caught > "$T/sq.json"
"$PC" run "$T/sq.json" --results "$A" --cycles 16 --agent "$AGENT" --quiet --no-report >"$T/a.log" 2>&1
rc=$?
check "campaign A ran (exit 1: the lying board FAILed; was $rc)" test $rc -eq 1
# folder B: another campaign, two honest boards
"$PC" run configs/sim-honest.json --results "$B" --cycles 6 --agent "$AGENT" --quiet --no-report >"$T/b.log" 2>&1
rc=$?
check "campaign B ran (exit 0)" test $rc -eq 0
na=$(grep -c . "$A/verdicts.jsonl"); nb=$(grep -c . "$B/verdicts.jsonl")
echo "  folders: A $na verdicts, B $nb verdicts"

# every verdict of format 2 carries the core fields, whatever its outcome
check "format-2 verdicts: format, time, host, mode, counts, violations on every line" \
	test "$(jq -s 'map(select(.format == "2.0" and (.time | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$")) and (.host | length > 0) and has("mode") and (.counts | length == 11) and (.violations | type == "number"))) | length' "$A/verdicts.jsonl")" = "$na"
check "campaign.json says its format" test "$(jq -r .format "$A/campaign.json")" = "2.0"
check "fua cycles carry latency" test "$(jq -s 'map(select(.mode_run == "fua" and .latency_us.n > 0 and .latency_us.p50 <= .latency_us.p99 and .latency_us.p99 <= .latency_us.max)) | length' "$A/verdicts.jsonl")" -gt 0

for f in text md html json junit csv; do
	"$PC" report --format $f -o "$T/r.$f" "$A" "$B" "$A" >"$T/r.$f.log" 2>&1
	rc=$?
	check "report --format $f exits 1 (a device FAILed)" test $rc -eq 1
	check "report --format $f wrote a file" test -s "$T/r.$f"
done
# options in any order
"$PC" report "$A" --format md >/dev/null 2>&1
rc=$?
check "report DIR --format md works in any order" test $rc -eq 1
"$PC" report --help | grep -q -- "--format" && ok "report --help" || bad "report --help"
expect_fail "an unknown format is refused" "expected text, md, html, json, junit or csv" "$PC" report --format pdf "$A"

# de-duplication: A given twice counts once
grep -q "given again: read once" "$T/r.text" && ok "text: the folder given twice is read once" || bad "text: no note of the folder given twice"
check "json: 4 devices (2 + 2), the doubled folder counted once" \
	test "$(jq '.devices | length' "$T/r.json")" = 4
check "json: cycles add up to the verdict lines of A and B" \
	test "$(jq '[.devices[].cycles] | add' "$T/r.json")" = $((na + nb))
check "json: result FAIL, and the lying device FAILs with lost_acked" \
	test "$(jq -r '[.result, (.devices[] | select(.boards == ["lying-1"]) | .result, (.violations_by_class.lost_acked > 0))] | join(" ")' "$T/r.json")" = "FAIL FAIL true"
cp -r "$A" "$T/a-copy"; rm -f "$T/a-copy/lock"
"$PC" report --format json "$A" "$T/a-copy" >"$T/copy.json" 2>/dev/null
check "a copy of a folder (another path) de-duplicates on host, campaign, board, cycle" \
	test "$(jq '[.duplicates_ignored, ([.devices[].cycles] | add)] | join(" ")' -r "$T/copy.json")" = "$na $na"

# JUnit: a real XML parser, counts that agree with the JSON
python3 - "$T/r.junit" <<'EOF' && ok "junit: parses; a testsuite per device, a testcase per mode, failures where FAIL" || bad "junit"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
suites = root.findall("testsuite")
assert len(suites) == 4, len(suites)
fails = [tc for s in suites for tc in s.findall("testcase") if tc.find("failure") is not None]
assert fails and all(f.find("failure").get("type") in ("FAIL", "BOOT_FAIL") for f in fails)
assert any("lost_acked" in f.find("failure").get("message") for f in fails)
assert int(root.get("failures")) == len(fails), (root.get("failures"), len(fails))
assert int(root.get("tests")) == sum(len(s.findall("testcase")) for s in suites)
EOF

# CSV: pandas reads it, one row per cycle
if python3 -c 'import pandas' 2>/dev/null; then
	python3 - "$T/r.csv" $((na + nb)) <<'EOF' && ok "csv: pandas reads one row per cycle, the columns documented" || bad "csv"
import sys, pandas as pd
d = pd.read_csv(sys.argv[1])
assert len(d) == int(sys.argv[2]), (len(d), sys.argv[2])
for c in ["board", "cycle", "time", "mode", "verdict", "device", "lost_acked", "violations", "records_per_s", "latency_p99_us"]:
    assert c in d.columns, c
assert set(d.verdict) <= {"PASS", "FAIL", "BOOT_FAIL", "INFRA_ERROR"}
assert (d[d.verdict == "FAIL"].violations > 0).all()
EOF
else
	skip_part "python3-pandas not installed: the CSV was not loaded by pandas"
fi
check "csv: a header and one line per cycle" test "$(wc -l <"$T/r.csv")" -eq $((na + nb + 1))

# Markdown and text: the one-line result per device before the details
check "md: a result table" grep -q '^| \*\*FAIL\*\* |' "$T/r.md"
check "text: the summary comes first" test "$(grep -n '^summary' "$T/r.text" | cut -d: -f1)" -lt "$(grep -n '^device ' "$T/r.text" | head -1 | cut -d: -f1)"
check "text: speed and latency per mode" grep -q "lat p50" "$T/r.text"

# docs/results.md's one-liners, as written (the folder and the binary swapped in)
pcabs=$(readlink -f "$PC"); docs=$(readlink -f docs/results.md)
cd "$T" || exit 1
"$pcabs" report --format csv "$A" > cycles.csv 2>/dev/null
n=0
while IFS= read -r line; do
	cmd=${line//results\/sim-quick/$A}
	cmd=${cmd//powercut report/$pcabs report}
	out=$(bash -c "$cmd" 2>&1); rc=$?
	n=$((n + 1))
	if [ $rc -eq 0 ] && [ -n "$out" ]; then ok "docs one-liner $n: ${line:0:60}"; else
		case "$line" in python3*) python3 -c 'import pandas' 2>/dev/null || { skip_part "pandas one-liner $n (no pandas)"; continue; };; esac
		bad "docs one-liner $n: $line (exit $rc: $(echo "$out" | head -2))"
	fi
done < <(awk '/^```sh/{on=1; next} /^```/{on=0} on && /^(jq|python3|powercut report --format json)/' "$docs")
cd "$OLDPWD" || exit 1
check "docs/results.md has jq and pandas one-liners (found $n)" test "$n" -ge 6

# a newer major format is refused, an older one read
mkdir -p "$T/newer"; cp "$A/verdicts.jsonl" "$A/events.jsonl" "$T/newer/"
jq '.format = "3.0"' "$A/campaign.json" >"$T/newer/campaign.json"
expect_fail "report refuses a newer major format, naming it" "results format 3.0 is newer than this powercut reads" "$PC" report "$T/newer"
"$PC" report "$T/newer" >/dev/null 2>&1
rc=$?
check "  ... with exit 2 (was $rc)" test $rc -eq 2
expect_fail "replay refuses it too" "results format 3.0 is newer" "$PC" replay "$T/newer"
mkdir -p "$T/v3"; cp "$A/campaign.json" "$A/events.jsonl" "$T/v3/"
sed '1s/"format":"2.0"/"format":"7.1"/' "$A/verdicts.jsonl" >"$T/v3/verdicts.jsonl"
expect_fail "a verdict of a newer major format is refused with its line" "verdicts.jsonl:1: verdict: results format 7.1" "$PC" report "$T/v3"

# hostile verdicts: a clear error naming the line, nothing printed
mkdir -p "$T/bad"
for v in '"time":"yesterday"' '"latency_us":{"n":2,"p50":1,"p99":1,"max":1,"hist":[[1,1]]}' \
	 '"latency_us":{"n":1,"p50":1,"p99":1,"max":1,"hist":[[17,1]]}' '"rate":{"mib_per_s":-1}' \
	 '"latency_us":{"n":1,"p50":5,"p99":5,"max":99999999999,"hist":[[5,1]]}'; do
	printf '{"board":"x","cycle":1,"verdict":"PASS",%s}\n' "$v" >"$T/bad/verdicts.jsonl"
	out=$("$PC" report "$T/bad" 2>&1); rc=$?
	if [ $rc -eq 2 ] && printf '%s' "$out" | grep -q "verdicts.jsonl:1:"; then ok "refused: $v"; else bad "not refused (exit $rc): $v: $out"; fi
done

finish

#!/bin/bash
# Recorded runs replay with today's engine: every folder under
# tests/recordings/ that holds campaign.json, events.jsonl and verdicts.jsonl
# (found, not listed: a lab's own recording is picked up as soon as it is
# committed) must give exactly its recorded verdicts. Then what replay says
# when they do not: a tampered copy names the board, the cycle and the field,
# --junit is XML a CI server reads, --report judges the recording afresh.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
R=tests/recordings
passes=0
ok() { echo "  ok: $*"; passes=$((passes + 1)); }
command -v jq > /dev/null || skip "jq is not installed"
command -v python3 > /dev/null || skip "python3 is not installed (it reads the JUnit XML)"

recs=()
nver=0
for d in "$R"/*/; do
	d=${d%/}
	n=0
	for f in campaign.json events.jsonl verdicts.jsonl; do [ -f "$d/$f" ] && n=$((n + 1)); done
	case $n in
	0) ;;	# not a recording (configs/)
	3) recs+=("$d"); nver=$((nver + $(grep -c . "$d/verdicts.jsonl"))) ;;
	*) bad "$d is an incomplete recording: it needs campaign.json, events.jsonl and verdicts.jsonl" ;;
	esac
done
[ ${#recs[@]} -gt 0 ] || { bad "no recordings under $R"; finish; }
for want in format-1 vm-sd long-honest sim-honest sim-lying-flush; do
	[ -f "$R/$want/verdicts.jsonl" ] || bad "the recording $R/$want is missing"
done

# every recording, in one call
"$PC" replay --junit "$T/all.xml" "${recs[@]}" > "$T/all.out" 2>&1
rc=$?
check "every recording replays to its recorded verdicts (exit $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || grep -v ' 0 differ, 0 missing, 0 extra$' "$T/all.out" | head -40
total=$(grep '^replay: ' "$T/all.out")
matched=$(printf '%s' "$total" | sed -n 's/^replay: [0-9]* folders, [0-9]* verdicts recomputed, \([0-9]*\) match, .*/\1/p')
check "...all $nver recorded verdicts reproduced (replay says: $total)" [ "${matched:-x}" = "$nver" ]
check "...one summary line per recording" [ "$(grep -c "^replay $R/.* 0 differ, 0 missing, 0 extra$" "$T/all.out")" -eq ${#recs[@]} ]
python3 - "$T/all.xml" ${#recs[@]} > "$T/all.py" 2>&1 <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = root.findall("testsuite")
assert root.tag == "testsuites", root.tag
assert len(suites) == int(sys.argv[2]), (len(suites), sys.argv[2])
assert all(s.get("failures") == "0" and s.get("errors") == "0" for s in suites)
assert all(int(s.get("tests")) == len(s.findall("testcase")) >= 1 for s in suites)
assert not root.findall(".//failure") and not root.findall(".//error")
PY
rc=$?
check "--junit: one testsuite per recording, a testcase per board, no failure" [ $rc -eq 0 ]
out=$("$PC" replay --quiet "${recs[@]}" 2>&1)
rc=$?
check "--quiet: exit 0 when every verdict matches (was $rc)" [ $rc -eq 0 ]
check "--quiet says nothing when every verdict matches" [ -z "$out" ]

# a tampered copy of a recording: one verdict's value changed
# shows FILE FIELD RECORDED RECOMPUTED: the diff in FILE has those three lines
shows() {
	grep -A2 -x "  $2" "$1" | tr -d '\n' | grep -qxF "  $2    - $3    + $4"
}
tam() { # NAME: a copy of recording NAME in $T/NAME
	mkdir -p "$T/$1" && cp "$R/$1/campaign.json" "$R/$1/events.jsonl" "$R/$1/verdicts.jsonl" "$T/$1/"
}
tam sim-lying-flush
V=$T/sim-lying-flush/verdicts.jsonl
line=$(grep -n '"verdict":"FAIL"' "$V" | head -1 | cut -d: -f1)
cycle=$(sed -n "${line}p" "$V" | jq .cycle)
board=$(sed -n "${line}p" "$V" | jq -r .board)
sed -i "${line}s/\"verdict\":\"FAIL\"/\"verdict\":\"PASS\"/" "$V"
"$PC" replay "$T/sim-lying-flush" > "$T/tam.out" 2>&1
rc=$?
check "a verdict changed from FAIL to PASS: exit 1 (got $rc)" [ $rc -eq 1 ]
check "...naming the board and the cycle (board $board, cycle $cycle)" \
	grep -q "board $board, cycle $cycle: the verdict differs" "$T/tam.out"
check "...and the field, recorded and recomputed" shows "$T/tam.out" verdict '"PASS"' '"FAIL"'
check "...not two JSON blobs: the diff is 4 lines" [ "$(wc -l < "$T/tam.out")" -eq 5 ]
sed -n 1,5p "$T/tam.out" | sed 's/^/    | /'

# a nested field, in a recording of many boards; and a board name XML must escape
tam format-1
V=$T/format-1/verdicts.jsonl
line=$(grep -n '"board":"stale".*"stale":[1-9]' "$V" | head -1 | cut -d: -f1)
cycle=$(sed -n "${line}p" "$V" | jq .cycle)
stale=$(sed -n "${line}p" "$V" | jq .counts.stale)
sed -i "${line}s/\"stale\":$stale,/\"stale\":$((stale + 7)),/" "$V"
odd='a<b&"c'"'"'d>'
sed -n 1p "$V" | jq -c --arg b "$odd" '.board = $b' >> "$V"
"$PC" replay --junit "$T/tam.xml" "$T/sim-lying-flush" "$R/sim-honest" "$T/format-1" > "$T/tam2.out" 2>&1
rc=$?
check "a nested field changed: exit 1 (got $rc)" [ $rc -eq 1 ]
check "...naming board stale, cycle $cycle" grep -q "board stale, cycle $cycle: the verdict differs" "$T/tam2.out"
check "...and the field counts.stale, recorded and recomputed" shows "$T/tam2.out" counts.stale $((stale + 7)) $stale
check "...and the verdict no event accounts for" grep -qF "board $odd, cycle 1: in verdicts.jsonl but not recomputed" "$T/tam2.out"
python3 - "$T/tam.xml" "$odd" "$cycle" > "$T/tam.py" 2>&1 <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
s = {x.get("name").rsplit("/", 1)[-1]: x for x in root.findall("testsuite")}
assert list(s) == ["sim-lying-flush", "sim-honest", "format-1"], list(s)
assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("17", "3", "0"), root.attrib
assert (s["sim-lying-flush"].get("tests"), s["sim-lying-flush"].get("failures")) == ("1", "1")
assert (s["sim-honest"].get("tests"), s["sim-honest"].get("failures")) == ("1", "0")
assert (s["format-1"].get("tests"), s["format-1"].get("failures")) == ("15", "2")
f = {c.get("name"): c.find("failure") for c in s["format-1"].findall("testcase")}
assert f["stale"] is not None and "counts.stale" in f["stale"].get("message"), f["stale"].attrib
assert "cycle %s" % sys.argv[3] in f["stale"].text, f["stale"].text
assert f[sys.argv[2]] is not None, list(f)
assert sum(v is not None for v in f.values()) == 2
print("ok")
PY
check "--junit: a testsuite per folder, the failures counted and named, the odd board name escaped" \
	[ "$(cat "$T/tam.py")" = ok ]
[ "$(cat "$T/tam.py")" = ok ] || cat "$T/tam.py"

# errors are not differences
"$PC" replay "$R/sim-honest" "$T/no-such" > "$T/err.out" 2>&1
rc=$?
check "a folder that is not a recording: exit 2 (got $rc)" [ $rc -eq 2 ]
check "a folder that is not a recording: the others still replayed" \
	grep -q "^replay $R/sim-honest: 30 verdicts recomputed, 30 match" "$T/err.out"
expect_fail "a JUnit file that cannot be written is an error" "no-dir/x.xml" \
	"$PC" replay --junit "$T/no-dir/x.xml" "$R/sim-honest"
"$PC" replay --nonsense "$R/sim-honest" > /dev/null 2>&1
rc=$?
check "an unknown option: exit 2" [ $rc -eq 2 ]
"$PC" replay "$R/sim-honest" --quiet > "$T/order.out" 2>&1
rc=$?
check "options after the folders: exit 0 (was $rc)" [ $rc -eq 0 ]
check "options after the folders: --quiet taken" [ ! -s "$T/order.out" ]
"$PC" replay --help > "$T/help" 2>&1
check "--help names the options and the exit codes" grep -q -- "--junit FILE.*--report.*--quiet" "$T/help"

# damage: a recording with one damaged middle line is not a passing replay.
# It says which line, still compares what the others make, and exits 2; a
# torn last line (a crash mid-write) is not damage.
for kind in json utf8 event; do
	cp -r "$R/sim-honest" "$T/dmg-$kind"
	case $kind in
	json) sed -i '200s/.*/{"t":1,"ev":"rx"/' "$T/dmg-$kind/events.jsonl" ;;
	utf8) sed -i "200s/\$/$(printf '\377')/" "$T/dmg-$kind/events.jsonl" ;;
	event) sed -i '200s/.*/{"t":5}/' "$T/dmg-$kind/events.jsonl" ;;
	esac
	"$PC" replay "$T/dmg-$kind" > "$T/dmg-$kind.out" 2>&1
	rc=$?
	check "replay of a recording with a damaged line ($kind): exit 2 (got $rc)" [ $rc -eq 2 ]
	check "...naming file:line and the count" \
		grep -q "dmg-$kind/events.jsonl: 1 line refused or skipped (line 200)" "$T/dmg-$kind.out"
	check "...the verdicts of the other lines still compared" \
		grep -q "^replay $T/dmg-$kind: 30 verdicts recomputed" "$T/dmg-$kind.out"
done
cp -r "$R/sim-honest" "$T/torn"
head -c -40 "$R/sim-honest/events.jsonl" > "$T/torn/events.jsonl"
"$PC" replay "$T/torn" > "$T/torn.out" 2>&1
rc=$?
check "replay of a recording with a torn last line: exit 0 (got $rc)" [ $rc -eq 0 ]
"$PC" replay --junit "$T/dmg.xml" "$R/sim-honest" "$T/dmg-json" > /dev/null 2>&1
rc=$?
check "a damaged folder among clean ones: exit 2 (got $rc)" [ $rc -eq 2 ]
check "...an error testcase in the JUnit XML naming the line" grep -q 'line 200).*type="replay.error"' "$T/dmg.xml"
# report: a damaged verdicts.jsonl is an error naming its line; clean is not
"$PC" report "$R/sim-honest" > /dev/null 2>&1
rc=$?
check "report of a clean recording: exit 0 (got $rc)" [ $rc -eq 0 ]
cp -r "$R/sim-honest" "$T/vdmg"
sed -i '10s/.*/{"board":"honest","cycle":/' "$T/vdmg/verdicts.jsonl"
"$PC" report "$T/vdmg" > "$T/vdmg.out" 2>&1
rc=$?
check "report of a damaged verdicts.jsonl: exit 2 (got $rc)" [ $rc -eq 2 ]
check "...naming file:line" grep -q "vdmg/verdicts.jsonl:10: " "$T/vdmg.out"

# --report: the recording judged by today's engine
mkdir -p "$T/tmp"
TMPDIR=$T/tmp "$PC" replay --report "$R/sim-lying-flush" > "$T/rep.out" 2>&1
rc=$?
check "--report on the lying-flush recording: exit 0 (the verdicts match)" [ $rc -eq 0 ]
check "...the device FAILs, losing acknowledged records" grep -q "result: FAIL.*lost_acked=" "$T/rep.out"
check "...and the temporary folder is gone" [ -z "$(ls -A "$T/tmp")" ]
TMPDIR=$T/tmp "$PC" replay --report --quiet "$R/sim-honest" > "$T/rep2.out" 2>&1
check "--report on an honest recording: PASS" grep -q "result: PASS" "$T/rep2.out"

echo "  $((${#recs[@]})) recordings, $nver verdicts reproduced"
echo "t-recordings: $passes passed, $fails failed"
finish

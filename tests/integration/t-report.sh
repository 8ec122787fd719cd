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
# (6 cycles of 5 modes: mode none's one random cut can come after its fast
# writes on a loaded machine, INCONCLUSIVE, exit 3; the report's parts below
# hold either way)
check "campaign B ran (exit 0, or 3 INCONCLUSIVE; was $rc)" passed_or_late $rc "$B"
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

# what a qualification signs, in every format: per device and mode the bound
# on the per-cut violation rate (Clopper-Pearson, recomputed here by bisection
# on the exact binomial sum) and where the cuts landed
J=$T/r.json
nmodes=$(jq '[.devices[].modes[] | select(.mode != null and .violation_rate.cuts > 0)] | length' "$J")
ndevs=$(jq '[.devices[] | select([.modes[] | select(.mode != null and .violation_rate.cuts > 0)] | length > 0)] | length' "$J")
echo "  modes with judged cuts: $nmodes on $ndevs devices"
check "json: modes with judged cuts on every device ($nmodes on $ndevs)" test "$ndevs" -eq 4
check "json: every such mode names the method, 95%, cuts = PASS + FAIL, an upper bound in (0, 1]" \
	test "$(jq '[.devices[].modes[] | select(.mode != null and .violation_rate.cuts > 0) | .violation_rate as $v |
		select($v.method == "Clopper-Pearson exact binomial, one-sided" and $v.confidence == 0.95 and
		$v.cuts == (.verdicts.PASS + .verdicts.FAIL) and $v.violated == .verdicts.FAIL and $v.upper > 0 and
		$v.upper <= 1)] | length' "$J")" -eq "$nmodes"
check "json: no violation reads 'below X at 95%', never 0%" \
	test "$(jq '[.devices[].modes[] | select(.violation_rate.cuts > 0 and .violation_rate.violated == 0) |
		select(.violation_rate.text | test("^below [0-9.]+% at 95%$"))] | length' "$J")" -eq \
	"$(jq '[.devices[].modes[] | select(.violation_rate.cuts > 0 and .violation_rate.violated == 0)] | length' "$J")"
check "json: the lying device's flush mode has violations, bounded ('K of N cuts ... below')" \
	test "$(jq -r '.devices[] | select(.boards == ["lying-1"]) | .modes[] | select(.mode == "flush") | .violation_rate.text' "$J" |
		grep -cE '^[1-9][0-9]* of [0-9]+ cuts \([0-9.]+%\): below [0-9.]+% at 95%$')" -eq 1
jq -r '.devices[].modes[] | select(.violation_rate.cuts > 0) | [.violation_rate.violated, .violation_rate.cuts, .violation_rate.upper] | @tsv' "$J" >"$T/bounds.tsv"
python3 - "$T/bounds.tsv" >"$T/bounds.out" 2>&1 <<'PY'
import sys
from math import comb
def cdf(k, n, p):
    return sum(comb(n, i) * p**i * (1 - p)**(n - i) for i in range(k + 1))
def upper(k, n, c):
    if k == n:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if cdf(k, n, mid) > 1 - c: lo = mid
        else: hi = mid
    return hi
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
assert rows
for k, n, u in rows:
    want = upper(int(k), int(n), 0.95)
    assert abs(float(u) - want) <= 1e-6 * want, (k, n, u, want)
    print(k, n, u, "%.8f" % want)
PY
rc=$?
check "json: every bound agrees with the exact binomial recomputed by bisection ($(wc -l <"$T/bounds.tsv") modes)" test $rc -eq 0
head -3 "$T/bounds.out" | sed 's/^/    k n upper reference: /'
check "json: the cut phases add up to the cuts with writes (none beyond the judged cuts)" \
	test "$(jq '[.devices[].modes[] | select(.violation_rate.cuts > 0) | select(([.cut_phases[]] | add) > 0 and
		([.cut_phases[]] | add) <= .violation_rate.cuts)] | length' "$J")" -eq "$nmodes"
check "text: a bound row per mode with cuts ($nmodes)" \
	test "$(grep -cE '^  [a-z+-]+ +[0-9]+ +[0-9]+ +[0-9]+  ([0-9]+ of [0-9]+ cuts \([0-9.]+%\): )?below [0-9.]+% at 95%$' "$T/r.text")" -eq "$nmodes"
check "text: the method named once per device" test "$(grep -c 'violation rate per cut (Clopper-Pearson exact binomial, one-sided, 95% confidence)' "$T/r.text")" -eq "$ndevs"
check "text: a cut-phase table per device" test "$(grep -c '^  where the cuts landed: before  none-acked  acked+more  flush  FUA  after-ACK$' "$T/r.text")" -eq "$ndevs"
check "text: a random or acks plan never lands at a flush: flagged" grep -q '^  flag: no cut landed during a flush in mode flush$' "$T/r.text"
check "md: the bound and the cut-phase table per device" \
	test "$(grep -c '^Violation rate per cut (Clopper-Pearson' "$T/r.md") $(grep -c '^Where the cuts landed:$' "$T/r.md")" = "$ndevs $ndevs"
check "md: a bound row per mode with cuts" test "$(grep -cE '^\| [a-z+-]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \| .*below [0-9.]+% at 95% \|$' "$T/r.md")" -eq "$nmodes"
check "html: the bound and the cut-phase table per device" \
	test "$(grep -c '<h4>Violation rate per cut, 95% confidence</h4>' "$T/r.html") $(grep -c '<h4>Where the cuts landed</h4>' "$T/r.html")" = "$ndevs $ndevs"
check "html: a bound cell per mode with cuts" test "$(grep -oE '<td( class="bad")?>([0-9]+ of [0-9]+ cuts \([0-9.]+%\): )?below [0-9.]+% at 95%</td>' "$T/r.html" | wc -l)" -eq "$nmodes"
check "junit: a violation_rate property per mode with cuts" \
	test "$(grep -cE '<property name="violation_rate\.[a-z+-]+" value="([0-9]+ of [0-9]+ cuts \([0-9.]+%\): )?below [0-9.]+% at 95%"/>' "$T/r.junit")" -eq "$nmodes"
check "junit: the cut phases in each testcase's output" test "$(grep -c '^cuts landed: before_first_write=' "$T/r.junit")" -eq "$nmodes"
check "csv: a cut phase on every cycle with a cut, the mode's bound beside it" \
	test "$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["cut_phase"] != "" && $c["mode_rate_upper"] > 0 && $c["confidence"] == 0.95' "$T/r.csv" | wc -l)" -eq \
	"$(jq '[.devices[].modes[] | select(.mode != null) | .cut_phases[]] | add' "$J")"
"$PC" report --format json --confidence 99% "$A" >"$T/r99.json" 2>/dev/null
check "--confidence 99%: every bound is at 99%" \
	test "$(jq '[.devices[].modes[] | select(.violation_rate.cuts > 0) | select(.violation_rate.confidence == 0.99 and
		(.violation_rate.text | test(" at 99%$")))] | length' "$T/r99.json")" -eq \
	"$(jq '[.devices[].modes[] | select(.violation_rate.cuts > 0)] | length' "$T/r99.json")"
expect_fail "--confidence out of range is refused" "expected 0.5 to 0.9999" "$PC" report --confidence 99.999% "$A"

# two parts side by side: devices of a folder, and two folders
"$PC" report --compare honest-1 lying-1 "$A" >"$T/cmp.txt" 2>&1
rc=$?
check "--compare honest-1 lying-1: exit 0 (was $rc)" test $rc -eq 0
check "--compare: each side's result (A PASS, B FAIL)" \
	test "$(grep -cE '^A: honest-1: PASS \(|^B: lying-1: FAIL \(' "$T/cmp.txt")" -eq 2
check "--compare: flush fails on B with its bound, passes on A below its bound" \
	test "$(grep -A1 -E '^flush +A' "$T/cmp.txt" | grep -cE ' A +PASS .*below [0-9.]+% at 95%$| B +FAIL .*[0-9]+ of [0-9]+ cuts .*below [0-9.]+% at 95%$')" -eq 2
check "--compare: B's speed over A's per mode" grep -qE '^ +speed B/A [0-9]+\.[0-9]{2}x$' "$T/cmp.txt"
"$PC" report --compare "$A" "$B" --format html -o "$T/cmp.html" >/dev/null 2>&1
rc=$?
check "--compare two folders, html: exit 0 (was $rc)" test $rc -eq 0
check "--compare html: both sides' results (B's PASS, or INCONCLUSIVE as above) and the per-mode table" \
	test "$(grep -c '<span class="badge FAIL">FAIL</span>\|<span class="badge \(PASS\|INCONCLUSIVE\)">\(PASS\|INCONCLUSIVE\)</span>\|<th>per-cut violation rate (95%)</th>' "$T/cmp.html")" -eq 3
check "--compare html: a mode that FAILs is marked bad, one that PASSes is not" \
	sh -c "grep -q '<td class=\"bad\">FAIL</td>' '$T/cmp.html' && ! grep -q '<td class=\"bad\">PASS</td>' '$T/cmp.html'"
expect_fail "--compare naming no device is refused, listing the devices" "names no device of the folders given" \
	"$PC" report --compare nosuch lying-1 "$A"
expect_fail "--compare in json is refused" "text or html only" "$PC" report --compare "$A" "$B" --format json

finish

#!/bin/bash
# t-wear: wear over a night. The sim profile "wear" reports EXT_CSD's
# DEVICE_LIFE_TIME_EST_TYP_A/B and PRE_EOL_INFO, rising with the sectors it
# programmed (docs/sim.md); every verdict carries them in its device, replay
# reproduces them, and the report shows the first, every change and the last
# in text, md, html and json (docs/results.md, "Wear").
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo "t-wear: EXT_CSD life time and pre-EOL through a campaign"
command -v jq >/dev/null || skip "jq not installed (tools/debian-packages.txt lists it)"

# 24 cycles of 128 4 KiB records, each cut once 64 to 96 ACKs reached the
# host: at least 64 records a cycle whatever the load (the mix plan's cuts
# at a flush or a random instant left too few at load 20: B rose 2 steps),
# 12,288 sectors or more after prepare's 8,192 (a 4 MiB region): life time
# B 3 steps up or more. The cuts meet the writes while 32 records are left
# (docs/verdicts.md#no-pass-without-evidence); a relay that cuts later
# under load makes the run INCONCLUSIVE, exit 3, which is no wear matter
cat >"$T/wear.json" <<'EOF'
{
  "campaign": "sim-wear",
  "cycles": 24,
  "seed": 3,
  "listen": "127.0.0.1:0",
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 20 },
    "device": { "backend": "sim", "size": "4M", "record_size": 4096 },
    "pattern": "sequential",
    "modes": ["flush", "fua"],
    "records_per_cycle": 128,
    "flush_every": 8,
    "queue_depth": 4,
    "cut": { "at": "acks", "acks": [64, 96] }
  },
  "boards": [
    { "name": "wear-1", "device": { "profile": "wear" } },
    { "name": "plain-1", "device": { "profile": "honest" } }
  ]
}
EOF
R=$T/res
"$PC" run "$T/wear.json" --results "$R" --agent "$AGENT" --quiet --no-report >"$T/run.log" 2>&1
rc=$?
check "the campaign ran (exit 0, or 3 INCONCLUSIVE; was $rc)" passed_or_late $rc "$R"
V=$R/verdicts.jsonl
first_b=$(jq -s '[.[] | select(.board == "wear-1")][0].device.ext_csd.life_time_b' "$V")
last_b=$(jq -s '[.[] | select(.board == "wear-1")][-1].device.ext_csd.life_time_b' "$V")
first_a=$(jq -s '[.[] | select(.board == "wear-1")][0].device.ext_csd.life_time_a' "$V")
last_a=$(jq -s '[.[] | select(.board == "wear-1")][-1].device.ext_csd.life_time_a' "$V")
echo "  life time A $first_a -> $last_a, B $first_b -> $last_b"
check "verdicts: life time B rose by 3 steps or more ($first_b -> $last_b)" test "$last_b" -ge $((first_b + 3))
check "verdicts: life time A rose too, at its slower pace ($first_a -> $last_a)" test "$last_a" -gt "$first_a"
check "verdicts: never down from one cycle to the next" \
	test "$(jq -s '[.[] | select(.board == "wear-1") | .device.ext_csd.life_time_b] | . as $b |
		[range(1; length) | select($b[.] < $b[. - 1])] | length' "$V")" -eq 0
check "verdicts: the honest sim claims no EXT_CSD" \
	test "$(jq -s '[.[] | select(.board == "plain-1" and .device.ext_csd != null)] | length' "$V")" -eq 0
"$PC" replay --quiet "$R" >"$T/replay.out" 2>&1
rc=$?
check "replay reproduces every verdict, the wear in each (exit $rc)" test $rc -eq 0

for f in text md html json; do
	"$PC" report --format $f -o "$T/r.$f" "$R" >/dev/null 2>&1
	rc=$?
	check "report --format $f: exit 0 (was $rc)" test $rc -eq 0
done
J=$T/r.json
changes=$(jq '.devices[] | select(.boards == ["wear-1"]) | .wear.changes' "$J")
check "json: the wear device's first, its $changes changes and its last" \
	test "$(jq '.devices[] | select(.boards == ["wear-1"]) | .wear | [(.points | length) == (.changes + 1),
		.points[0].life_time_b == '"$first_b"', .last.life_time_b == '"$last_b"', .last.cycle == 24] | all' "$J")" = true
check "json: the honest device has no wear" test "$(jq '[.devices[] | select(.boards == ["plain-1"]) | has("wear")] | .[0]' "$J")" = false
check "text: the trend, first to last" \
	test "$(grep -cE "^    (first|last ) board wear-1 cycle [0-9]+ \(.*\): life time A [0-9]+ \(.*\), B [0-9]+ \(.*\), pre-EOL [1-3] \(" "$T/r.text")" -eq 2
check "text: first B $first_b, last B $last_b" \
	test "$(grep -E '^    (first|last ) board wear-1' "$T/r.text" | sed -E 's/.*, B ([0-9]+) .*/\1/' | tr '\n' ' ')" = "$first_b $last_b "
check "text: a line per change" test "$(grep -c '^    then  board wear-1 cycle' "$T/r.text")" -eq "$changes"
check "md: the wear list" grep -q "^Wear (EXT_CSD), $changes change" "$T/r.md"
check "html: the wear table, a row per point and the last" \
	test "$(grep -c '<tr><td>\(first\|change\|last\)</td><td>wear-1</td>' "$T/r.html")" -eq $((changes + 2))
finish

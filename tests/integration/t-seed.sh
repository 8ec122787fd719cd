#!/bin/bash
# Seeds of 2^63 and above survive the whole path unchanged: config ->
# campaign.json -> sim relay -> agent prepare --seed / --sim-seed -> superblock
# -> HELLO -> events.jsonl -> engine (replay). They were read as signed 64-bit
# in the sim relay and clamped to 2^63-1 in the superblock and HELLO while
# campaign.json kept the configured value. Out-of-range seeds are refused
# with an error naming the option or the field.
#
# The seeds are compared as text (grep), never through jq: jq 1.6 reads
# numbers as doubles and rounds 64-bit integers.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# all_eq WANT FILE PATTERN: every match of PATTERN's number in FILE is WANT, and there is at least one
all_eq() {
	local want=$1 file=$2 pat=$3 got
	got=$(grep -o "$pat" "$file" | grep -o '[0-9-]*$' | sort -u)
	[ -n "$got" ] && [ "$got" = "$want" ] || { echo "    want $want, got: $(echo $got)"; return 1; }
}

campaign() { # campaign SEED DIR
	cat > "$2.json" <<JSON
{
  "campaign": "it-seed", "cycles": 6, "seed": $1,
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096, "seed": $1 },
    "records_per_cycle": 40, "flush_every": 8, "queue_depth": 4, "modes": ["fua", "flush"],
    "pattern": "random",
    "cut": { "at": "random", "window_ms": [2, 30] }, "off_ms": 5
  },
  "boards": [
    { "name": "honest-1", "device": { "profile": "honest" } },
    { "name": "bitrot-1", "device": { "profile": "bitrot", "rate": 0.01 } }
  ]
}
JSON
	"$PC" run "$2.json" --results "$2" --agent "$AGENT" --quiet > "$2.out" 2>&1
}

# exit 0 or 1 (bitrot may FAIL), or 3 with every device INCONCLUSIVE
ran_or_late() { [ "$1" -le 1 ] || passed_or_late "$1" "$2"; }
for seed in 18446744073709551615 9223372036854775808; do
	r="$T/r-$seed"
	campaign "$seed" "$r"
	rc=$?
	check "seed $seed: the campaign runs (exit 0 or 1, or 3 INCONCLUSIVE; was $rc)" \
		ran_or_late $rc "$r"
	[ $rc -le 1 ] || tail -5 "$r.out"
	check "seed $seed: campaign.json keeps it (config.seed and each board's device.seed)" \
		all_eq "$seed" "$r/campaign.json" '"seed":[0-9-]*'
	check "seed $seed: campaign.json has all three" [ "$(grep -c '"seed":' "$r/campaign.json")" -eq 3 ]
	grep '"type":"hello"' "$r/events.jsonl" > "$T/hello"
	check "seed $seed: every HELLO in events.jsonl says region.seed $seed ($(grep -c . "$T/hello") HELLOs)" \
		all_eq "$seed" "$T/hello" '"region":{[^}]*"seed":[0-9-]*'
	check "seed $seed: the bitrot board's HELLO says faults.seed $seed" \
		all_eq "$seed" "$T/hello" '"faults":{[^}]*"seed":[0-9-]*'
	check "seed $seed: the sim's truth log has the fault seed" \
		all_eq "$seed" "$r/boards/bitrot-1/media.img.truth.jsonl" '"seed":[0-9-]*'
	for b in honest-1 bitrot-1; do
		"$AGENT" info --device "sim:$r/boards/$b/media.img" 2> "$T/info.err" | tr -d ' \t\n' > "$T/info"
		check "seed $seed: $b's superblock (powercut-agent info) says region.seed $seed" \
			all_eq "$seed" "$T/info" '"region":{[^}]*"seed":[0-9-]*'
	done
	check "seed $seed: the honest board PASSes every cycle (payloads derived from the seed)" \
		[ "$(grep '"board":"honest-1"' "$r/verdicts.jsonl" | grep -c '"verdict":"PASS"')" -eq 6 ]
	check "seed $seed: replay reproduces every verdict" "$PC" replay "$r"
done

# out of range: refused, naming the option or the field
expect_fail "prepare --seed 2^64 is refused" "--seed '18446744073709551616'" \
	"$AGENT" prepare --device "sim:$T/x.img" --size 1M --seed 18446744073709551616 --yes
expect_fail "prepare --seed -1 is refused" "--seed '-1'" \
	"$AGENT" prepare --device "sim:$T/x.img" --size 1M --seed -1 --yes
expect_fail "prepare --seed ' 5' is refused (no spaces, no sign)" "--seed ' 5'" \
	"$AGENT" prepare --device "sim:$T/x.img" --size 1M --seed " 5" --yes
expect_fail "prepare --sim-seed 2^64 is refused" "--sim-seed '18446744073709551616'" \
	"$AGENT" prepare --device "sim:$T/x.img" --size 1M --sim-seed 18446744073709551616 --yes
"$AGENT" prepare --device "sim:$T/x.img" --size 1M --seed 18446744073709551615 --yes > "$T/prep.out" 2>&1
rc=$?
check "prepare --seed 2^64-1 is taken (exit $rc)" [ $rc -eq 0 ]
"$AGENT" info --device "sim:$T/x.img" 2> "$T/info.err" | tr -d ' \t\n' > "$T/info"
check "... and its superblock says so" all_eq 18446744073709551615 "$T/info" '"region":{[^}]*"seed":[0-9-]*'
sed 's/"seed": 18446744073709551615 }/"seed": -1 }/' "$T/r-18446744073709551615.json" > "$T/neg.json"
expect_fail "a config with device.seed -1 is refused, naming the field" "device.seed" "$PC" check-config "$T/neg.json"
finish

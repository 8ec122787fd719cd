#!/bin/bash
# Bad input gets a clear error naming what is wrong, and loses nothing:
# malformed configurations, unprepared and foreign regions, garbage protocol lines.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# ---- what the build has: --version names each optional library (the
# Makefile's tools/build-config decides them); CI's build has them all, so a
# degraded build (a library missing when it was made) fails CI
hv=$("$PC" --version); av=$("$AGENT" --version)
check "powercut --version names libgpiod, libblkid and liburing: '$hv'" \
	grep -Eq '^powercut [0-9.]+ \(libgpiod (v[12]|no)[^,]*, libblkid (yes|no)[^,]*, liburing (yes|no)' <<< "$hv"
check "powercut-agent --version names libblkid and liburing: '$av'" \
	grep -Eq '^powercut-agent [0-9.]+ \(libblkid (yes|no)[^,]*, liburing (yes|no)' <<< "$av"
if [ "${PC_CI:-0}" = 1 ]; then
	check "CI's build has libgpiod, libblkid and liburing" \
		grep -Eq '\(libgpiod v[12], libblkid yes, liburing yes\)$' <<< "$hv"
fi

# ---- every subcommand's --help is its own: exit 0, its usage first, each of
# its options named, no printf escape left as '%%' (issue 37)
# helpcheck PROG SUB OPTION...: what is wrong with `PROG SUB --help`, or nothing
helpcheck() {
	local prog=$1 sub=$2 out rc o miss=""
	shift 2
	out=$("$BIN/$prog" "$sub" --help 2>&1); rc=$?
	for o in "$@"; do grep -q -- "$o\b" <<< "$out" || miss="$miss $o"; done
	[ $rc -eq 0 ] || echo "exit $rc"
	head -1 <<< "$out" | grep -q "^usage: $prog $sub\b" || echo "starts '$(head -1 <<< "$out")'"
	[ -z "$miss" ] || echo "no$miss"
	! grep -n '%%' <<< "$out"
}
while read -r prog sub opts; do
	# shellcheck disable=SC2086 # the options, one word each
	problems=$(helpcheck "$prog" "$sub" $opts | tr '\n' ' ')
	check "$prog $sub --help: its own usage and options${problems:+: $problems}" [ -z "$problems" ]
done <<'HELP'
powercut run --results --cycles --target --agent --quiet --no-report --help
powercut replay --junit --report --quiet --help
powercut report --format --json --output --confidence --compare --help
powercut status --json
powercut check-config CONFIG
powercut relay on off cycle get release
powercut key new show --force
powercut plan --rate --confidence --failures --cuts --cycle-s
powercut lava --results --board --cycles --agent --print
powercut crash-states --board --cycle --all --exhaustive --random --seed --locality
powercut-agent prepare --device --yes --record-size --seed --size --force --confirm-device --offset --length
powercut-agent run --device --connect --console --baud --board --key --boot-delay-ms --connect-timeout-ms --fresh-boot-id --sysrq
powercut-agent scan --device --pattern
powercut-agent info --device --offset --length --allow-whole-disk
powercut-agent write --device --mode --yes --records --qd --flush-every --pattern
HELP
problems=$({ "$PC" --help; "$AGENT" --help; } 2>&1 | grep -n '%%')
check "powercut --help and powercut-agent --help have no '%%'${problems:+: $problems}" [ -z "$problems" ]

# ---- configurations
cat > "$T/typo.json" <<'JSON'
{ "campaign": "x", "cycles": 2,
  "boards": [ { "name": "a", "relay": { "driver": "sim" }, "recods_per_cycle": 10 } ] }
JSON
expect_fail "unknown key is named, with a suggestion" "boards[0]: unknown key 'recods_per_cycle'" "$PC" check-config "$T/typo.json"
expect_fail "...and the suggestion is the right key" "records_per_cycle" "$PC" check-config "$T/typo.json"
printf '{ "campaign": "x",\n  "cycles": 2,\n  "boards": [ { "name": "a" ] }\n' > "$T/syntax.json"
expect_fail "JSON syntax error names file:line:col" "syntax.json:3:" "$PC" check-config "$T/syntax.json"
cat > "$T/range.json" <<'JSON'
{ "campaign": "x", "cycles": 2,
  "boards": [ { "name": "a", "relay": { "driver": "sim" }, "queue_depth": 64 } ] }
JSON
expect_fail "out-of-range value names its key" "boards[0].queue_depth" "$PC" check-config "$T/range.json"
cat > "$T/driver.json" <<'JSON'
{ "campaign": "x", "cycles": 2, "boards": [ { "name": "a", "relay": { "driver": "gpoid" } } ] }
JSON
expect_fail "unknown relay driver is named" "gpoid" "$PC" check-config "$T/driver.json"
expect_fail "missing file is named" "nonexistent.json" "$PC" check-config "$T/nonexistent.json"
expect_fail "run refuses a bad configuration before touching anything" "recods_per_cycle" "$PC" run "$T/typo.json" --results "$T/never"
check "...and creates no results" [ ! -e "$T/never" ]
check "the example configurations are valid" sh -c "for f in configs/*.json; do '$PC' check-config \$f > /dev/null || exit 1; done"

# ---- regions
expect_fail "prepare refuses without --yes" "add --yes" "$AGENT" prepare --device "sim:$T/m.img"
check "...and writes nothing" [ ! -e "$T/m.img" ]
truncate -s 4M "$T/zero.img"
expect_fail "an unprepared device is refused" "not a prepared powercut region" "$AGENT" scan --device "$T/zero.img"
head -c 4194304 /dev/urandom > "$T/foreign.img"
cp "$T/foreign.img" "$T/foreign.orig"
expect_fail "a foreign device is refused" "not a prepared powercut region" "$AGENT" scan --device "$T/foreign.img"
check "...and left untouched" cmp -s "$T/foreign.img" "$T/foreign.orig"
truncate -s 4M "$T/dev.img"
check "prepare on a file (posix backend, O_DIRECT)" "$AGENT" prepare --device "$T/dev.img" --length 2M --yes
expect_fail "a region past the device's end is refused" "past the device's end" "$AGENT" scan --device "$T/dev.img" --offset 3M --length 2M
expect_fail "a length that differs from the superblock is refused, naming the length to give" "the region prepared at offset 0 is 2097152 bytes (its superblock A), but --length 1048576 asks for less: run with --length 2097152" "$AGENT" scan --device "$T/dev.img" --length 1M
expect_fail "a bad record size is refused" "--record-size" "$AGENT" prepare --device "$T/x.img" --record-size 1000 --yes
"$AGENT" prepare --device "sim:$T/m2.img" --size 1M --yes > /dev/null 2>&1
expect_fail "a sim region with an offset is refused" "starts at offset 0" "$AGENT" scan --device "sim:$T/m2.img" --offset 4096

# ---- the harness with a board whose region is not prepared
cat > "$T/unprep.json" <<JSON
{ "campaign": "unprep", "cycles": 3, "listen": "127.0.0.1:0",
  "boards": [ { "name": "u1", "device": { "backend": "posix", "record_size": 4096 },
    "relay": { "driver": "command",
      "on": "setsid $PWD/$AGENT run --fresh-boot-id --device $T/zero.img --connect \$PC_CONNECT --board u1 > $T/u1.log 2>&1 & echo \$! > $T/u1.pid",
      "off": "kill -KILL \$(cat $T/u1.pid 2>/dev/null) 2>/dev/null; true" },
    "boot_timeout_ms": 3000, "boot_retries": 0, "off_ms": 10 } ] }
JSON
"$PC" run "$T/unprep.json" --results "$T/ru" --quiet > "$T/unprep.out" 2>&1
rc=$?
check "the harness gives up on the unprepared board (exit 3: INCOMPLETE; was $rc)" [ $rc -eq 3 ]
check "...saying why" grep -q "not a prepared powercut region" "$T/unprep.out"
check "...as INFRA_ERROR verdicts, never FAIL" [ "$(jq -s '[.[] | select(.verdict == "INFRA_ERROR")] | length' "$T/ru/verdicts.jsonl")" -ge 1 ]
check "...and nothing counted against the device" [ "$(jq -s '[.[] | select(.verdict == "FAIL")] | length' "$T/ru/verdicts.jsonl")" -eq 0 ]
check "...and the zero device is still all zeros" cmp -s "$T/zero.img" <(head -c 4194304 /dev/zero)

# ---- garbage on the protocol link
"$AGENT" info --device "$T/dev.img" > "$T/info.json"
hello=$(jq -c '. + {type: "hello", v: 1, board: "g1"}' "$T/info.json")
printf '%s\n' "$hello" > "$T/hello.json"
# an agent that authenticates (it has the key: PC_KEY_FILE), then sends an
# untagged line (dropped as not the agent's) and a tagged line that is not a
# valid message (the agent's own garbage: a protocol error)
cat > "$T/fake.sh" <<SH
exec "$PWD/$TOOLS/pcpeer" --connect "\$PC_CONNECT" --key "\$PC_KEY_FILE" hello:$T/hello.json auth expect:verify \\
	raw:'this is {not json' tagged:'{"type":"scan_end","v":1,"slots":"many"}' hold:5000
SH
cat > "$T/garbage.json" <<JSON
{ "campaign": "garbage", "cycles": 2, "listen": "127.0.0.1:0",
  "boards": [ { "name": "g1", "device": { "backend": "posix", "record_size": 4096 },
    "relay": { "driver": "command",
      "on": "setsid bash $T/fake.sh > /dev/null 2>&1 & echo \$! > $T/g1.pid",
      "off": "kill -KILL \$(cat $T/g1.pid 2>/dev/null) 2>/dev/null; true" },
    "boot_timeout_ms": 3000, "boot_retries": 0, "off_ms": 10 } ] }
JSON
"$PC" run "$T/garbage.json" --results "$T/rg" --quiet > "$T/garbage.out" 2>&1
rc=$?
check "the harness survives garbage lines (exit 3: board given up, INCOMPLETE; was $rc)" [ $rc -eq 3 ]
check "the untagged line is dropped, on record" \
	[ "$(jq -s '[.[] | select(.ev == "link_reject" and (.line | contains("not json")))] | length' "$T/rg/events.jsonl")" -ge 1 ]
check "the tagged garbage line is recorded with its error" \
	[ "$(jq -s '[.[] | select(.ev == "rx_bad" and (.line | contains("many")) and (.error | length > 0))] | length' "$T/rg/events.jsonl")" -ge 1 ]
check "the cycle is INFRA_ERROR naming the protocol error" \
	[ "$(jq -s '[.[] | select(.verdict == "INFRA_ERROR" and (.reason | contains("protocol error")))] | length' "$T/rg/verdicts.jsonl")" -ge 1 ]
grep -h "protocol error" "$T/garbage.out" | head -2 | sed 's/^/    /'
finish

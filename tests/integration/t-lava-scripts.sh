#!/bin/bash
# t-lava-scripts: `powercut lava` through LAVA's own lava-test-case (the
# script lava-dispatcher puts in every test shell), on a sim board behind
# the command relay: LAVA records a lying-flush board's flush case as fail
# with records/s as its measurement, signalled as the test shell does, and
# a second job on the same results folder resumes it (nothing run twice).
# Needs lava-dispatcher (make lava-check installs it, PC_LAVA_REQUIRE=1:
# then a skip fails).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo "t-lava-scripts: powercut lava through LAVA's lava-test-case"
LTS=/usr/lib/python3/dist-packages/lava_dispatcher/lava_test_shell
lava_setup
[ -f "$LTS/lava-test-case" ] || lava_skip "lava-dispatcher is not installed ($LTS/lava-test-case is missing)"
command -v jq > /dev/null || lava_skip "jq is not installed"
trap 'pc_rc=$?; [ -s "$T/b.pid" ] && kill -KILL -- "-$(cat "$T/b.pid")" 2>/dev/null; rm_T' EXIT

# LAVA's scripts, as the test shell installs them (an interpreter line added)
mkdir -p "$T/lts" "$T/lava-results"
for f in lava-test-case lava-test-raise lava-common-functions; do
	{ echo '#!/bin/sh'; cat "$LTS/$f"; } > "$T/lts/$f"; chmod +x "$T/lts/$f"
done
"$PC" key new "$T/agent.key" > /dev/null 2>&1
"$AGENT" prepare --device "sim:$T/b.img" --size 4M --yes > /dev/null 2>&1
lport=$(free_port)
cat > "$T/power.sh" <<SH
#!/bin/bash
case \$1 in
on) setsid "$PWD/$AGENT" run --fresh-boot-id --device "sim:$T/b.img" --sim-profile lying-flush \\
	--connect 127.0.0.1:$lport --key "$T/agent.key" --board b >> "$T/b.log" 2>&1 < /dev/null & echo \$! > "$T/b.pid" ;;
off) { read -r p < "$T/b.pid"; } 2> /dev/null && kill -KILL -- -\$p 2> /dev/null; : > "$T/b.pid" ;;
esac
SH
cat > "$T/c.json" <<JSON
{ "campaign": "lava-scripts", "cycles": 10, "seed": 4, "listen": "127.0.0.1:$lport", "key_file": "$T/agent.key",
  "boards": [ { "name": "b", "device": { "backend": "sim", "record_size": 4096 },
    "modes": ["fua", "flush"], "records_per_cycle": 200, "flush_every": 8,
    "cut": { "at": "acks", "acks": [16, 120] }, "boot_timeout_ms": 8000, "off_ms": 50 } ] }
JSON
export LAVA_POWER_ON_COMMAND="bash $T/power.sh on" LAVA_POWER_OFF_COMMAND="bash $T/power.sh off"
PATH="$T/lts:$PATH" LAVA_RESULT_DIR="$T/lava-results" "$PC" lava "$T/c.json" --results "$T/r" --cycles 6 > "$T/j1.out" 2>&1
rc=$?
check "the first job: exit 0 (was $rc)" test $rc -eq 0
check "...6 cycles judged" test "$(grep -c . "$T/r/verdicts.jsonl")" -eq 6
PATH="$T/lts:$PATH" LAVA_RESULT_DIR="$T/lava-results" "$PC" lava "$T/c.json" --results "$T/r" > "$T/j2.out" 2>&1
rc=$?
check "the second job resumes the folder: exit 0 (was $rc)" test $rc -eq 0
check "...to the campaign's 10 cycles, none twice" \
	test "$(jq -s '[.[] | "\(.board)/\(.cycle)"] | unique | length' "$T/r/verdicts.jsonl") $(grep -c . "$T/r/verdicts.jsonl")" = "10 10"
check "LAVA recorded the flush mode's case as fail" \
	test "$(cat "$T/lava-results/results/powercut-b-flush/result" 2>/dev/null)" = fail
check "...and the board's" test "$(cat "$T/lava-results/results/powercut-b/result" 2>/dev/null)" = fail
check "...with records/s as the fua case's measurement" \
	grep -Eq '^[0-9]+\.[0-9]$' "$T/lava-results/results/powercut-b-fua/measurement"
check "...signalled as the test shell does" grep -q '<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=powercut-b-flush RESULT=fail' "$T/j2.out"
finish

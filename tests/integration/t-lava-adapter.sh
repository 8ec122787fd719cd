#!/bin/bash
# t-lava-adapter: `powercut lava`, the adapter a LAVA docker test shell runs
# (docs/lava.md). LAVA's environment is set as the dispatcher sets it
# (LAVA_POWER_ON_COMMAND, LAVA_POWER_OFF_COMMAND, LAVA_CONNECTION_COMMAND):
#   - the power commands are requests to Debian's real pdudaemon (curl on its
#     HTTP API, as device dictionaries write them), whose localcmdline PDU
#     starts and SIGKILLs a sim board's agent: the adapter must recognise
#     them and switch through the pdudaemon driver, not a process per switch;
#   - an honest board gives passing cases per mode with records/s as the
#     measurement, a lying-flush board failing cases (a FAIL is a failed
#     case, never lava-test-raise);
#   - a missing power-off command, a console LAVA names with a command
#     powercut cannot read, and pdudaemon stopped are each lava-test-raise
#     naming the board and the cause, exit 2;
#   - what the adapter tells LAVA is checked as the commands it says
#     (--print); t-lava-scripts (make lava-check) runs LAVA's own scripts.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo "t-lava-adapter: powercut lava"
command -v pdudaemon > /dev/null || skip "pdudaemon is not installed (apt-get install pdudaemon)"
command -v jq > /dev/null || skip "jq is not installed"

pids=""
cleanup() {
	for f in "$T"/*.pid; do
		[ -s "$f" ] && kill -KILL -- "-$(cat "$f" 2> /dev/null)" 2> /dev/null
	done
	# shellcheck disable=SC2086
	stop_daemons $pids
	rm_T
}
trap 'pc_rc=$?; cleanup' EXIT

"$PC" key new "$T/agent.key" > /dev/null 2>&1
pdu_lab "$PWD/$AGENT"
rc=$?
check "pdudaemon (HTTP) starts on port $dport (was $rc)" test $rc -eq 0

# The lab's campaign for board NAME on OUTLET with PROFILE: no relay, no link
# address of its own (LAVA's device gives them)
campaign() { # NAME OUTLET PROFILE
	local lport
	lport=$(free_port)
	echo "$1 127.0.0.1:$lport $3" > "$T/outlet-$2"
	"$AGENT" prepare --device "sim:$T/$1.img" --size 4M --yes > /dev/null 2>&1
	cat > "$T/$1.json" <<JSON
{ "campaign": "lava-$1", "cycles": 12, "seed": 4, "listen": "127.0.0.1:$lport", "key_file": "$T/agent.key",
  "boards": [ { "name": "$1", "device": { "backend": "sim", "record_size": 4096 },
    "modes": ["fua", "flush"], "records_per_cycle": 200, "flush_every": 8,
    "cut": { "at": "acks", "acks": [16, 120] }, "boot_timeout_ms": 8000, "off_ms": 50 } ] }
JSON
}
lava_env() { # OUTLET: LAVA's power commands for the outlet, as a device dictionary writes them
	export LAVA_POWER_ON_COMMAND="curl -s 'http://127.0.0.1:$dport/power/control/on?hostname=lab&port=$1'"
	export LAVA_POWER_OFF_COMMAND="curl -s 'http://127.0.0.1:$dport/power/control/off?hostname=lab&port=$1'"
	export LAVA_HARD_RESET_COMMAND="$LAVA_POWER_OFF_COMMAND && sleep 1 && $LAVA_POWER_ON_COMMAND"
	unset LAVA_CONNECTION_COMMAND
}

# ---- an honest board ----
campaign honest 1 honest
lava_env 1
"$PC" lava "$T/honest.json" --results "$T/r-honest" --print > "$T/honest.out" 2> "$T/honest.err"
rc=$?
check "honest board: powercut lava exits 0 (was $rc)" test $rc -eq 0
check "the campaign as run switches through the pdudaemon driver" \
	test "$(jq -r '.boards[0].relay | "\(.driver) \(.url) \(.hostname) \(.port)"' "$T/r-honest.lava.json")" = "pdudaemon http://127.0.0.1:$dport lab 1"
check "every cycle was judged (12 verdicts)" test "$(grep -c . "$T/r-honest/verdicts.jsonl")" -eq 12
check "every switch went through the daemon" \
	test "$(grep -c 'power/control/off?hostname=lab&port=1' "$T/daemon.log")" -ge 12
# (a PDU's cut, through curl and the daemon, can come after the board's
# writes under load: its modes are then INCONCLUSIVE and their cases
# "unknown", never "pass" -- the late campaign below makes that certain)
hres=$("$PC" report --format json "$T/r-honest" 2>/dev/null | jq -r .result)
hcase=pass; [ "$hres" != INCONCLUSIVE ] || hcase=unknown
echo "  (the honest board's report: $hres)"
for m in fua flush; do
	mcase=pass
	[ "$hres" != INCONCLUSIVE ] || ! jq -e --arg m $m '[.devices[].inconclusive[].mode] | index($m)' \
		"$T/r-honest.report.json" > /dev/null 2>&1 || mcase=unknown
	if ! check "a $mcase case for mode $m with records/s" \
		grep -Eq "^lava-test-case powercut-honest-$m --result $mcase --measurement [0-9]+\.[0-9] --units records/s$" "$T/honest.out"; then
		cat "$T/honest.out"
	fi
done
check "a $hcase case for the board" grep -qx "lava-test-case powercut-honest --result $hcase" "$T/honest.out"
check "nothing raised" test "$(grep -c lava-test-raise "$T/honest.out")" -eq 0
# the cases count what verdicts.jsonl holds: the per-mode counts add up
check "the report the cases come from counts 12 cycles" \
	test "$(jq '[.devices[].modes[].cycles] | add' "$T/r-honest.report.json")" -eq 12

# ---- a lying-flush board: failing cases, a Complete job ----
campaign lying 2 lying-flush
lava_env 2
"$PC" lava "$T/lying.json" --results "$T/r-lying" --print > "$T/lying.out" 2> "$T/lying.err"
rc=$?
check "lying board: powercut lava exits 0 (a FAIL is a result, was $rc)" test $rc -eq 0
check "the flush mode's case fails" grep -q '^lava-test-case powercut-lying-flush --result fail' "$T/lying.out"
check "the board's case fails" grep -qx 'lava-test-case powercut-lying --result fail' "$T/lying.out"
check "a FAIL is never lava-test-raise" test "$(grep -c lava-test-raise "$T/lying.out")" -eq 0

# ---- cuts after the writes: INCONCLUSIVE is "unknown", never "pass" ----
campaign late 4 honest
jq '.cycles = 2 | .boards[0].records_per_cycle = 16 | .boards[0].cut = { "at": "random", "window_ms": [3000, 3500] }' \
	"$T/late.json" > "$T/late2.json"
lava_env 4
"$PC" lava "$T/late2.json" --results "$T/r-late" --print > "$T/late.out" 2> "$T/late.err"
rc=$?
check "cuts after the writes: powercut lava exits 0 (was $rc)" test $rc -eq 0
check "...each mode's case is unknown, not pass" \
	test "$(grep -Ec '^lava-test-case powercut-late-(fua|flush) --result unknown ' "$T/late.out")" -eq 2
check "...the board's case is unknown" grep -qx 'lava-test-case powercut-late --result unknown' "$T/late.out"
check "...said INCONCLUSIVE, with the reason, not INCOMPLETE" \
	grep -q '^powercut lava: board late is INCONCLUSIVE, neither PASS nor FAIL: mode .* cuts landed during writes' "$T/late.out"

# ---- the lab's mistakes: lava-test-raise naming the board and the cause ----
lava_env 1
unset LAVA_POWER_OFF_COMMAND
"$PC" lava "$T/honest.json" --results "$T/r-nooff" --print > "$T/nooff.out" 2>&1
rc=$?
check "no power-off command: exit 2 (was $rc)" test $rc -eq 2
check "...lava-test-raise names the board and LAVA_POWER_OFF_COMMAND" \
	grep -q "^lava-test-raise 'powercut: board honest: LAVA_POWER_OFF_COMMAND is not set" "$T/nooff.out"
lava_env 1
export LAVA_CONNECTION_COMMAND="ssh -p 22 lab"
"$PC" lava "$T/honest.json" --results "$T/r-ssh" --print > "$T/ssh.out" 2>&1
rc=$?
check "a console through ssh: exit 2 (was $rc)" test $rc -eq 2
check "...lava-test-raise names the board and the command" \
	grep -q "^lava-test-raise 'powercut: board honest: LAVA_CONNECTION_COMMAND .*ssh -p 22 lab.*: powercut reads a console from" "$T/ssh.out"
lava_env 1
export LAVA_CONNECTION_COMMAND="telnet 127.0.0.1 7001"
"$PC" lava "$T/honest.json" --results "$T/r-tel" --cycles 0 --print > /dev/null 2>&1
check "telnet HOST PORT becomes the board's console telnet://HOST:PORT" \
	test "$(jq -r '.boards[0].link.console' "$T/r-tel.lava.json")" = "telnet://127.0.0.1:7001"

# hostile campaign files: refused with lava-test-raise, never a crash
lava_env 1
echo '{"boards":[5]}' > "$T/h1.json"
echo '{"boards":[{"name":"x","link":7}]}' > "$T/h2.json"
for h in h1 h2; do
	"$PC" lava "$T/$h.json" --results "$T/r-$h" --print > "$T/$h.out" 2>&1
	rc=$?
	check "a campaign file $h.json with a board that is not one: exit 2 (was $rc)" test $rc -eq 2
	check "...said with lava-test-raise" grep -q "^lava-test-raise 'powercut: .*not an object" "$T/$h.out"
done

stop_daemons "$dpid"
campaign dark 3 honest
lava_env 3
"$PC" lava "$T/dark.json" --results "$T/r-dark" --print > "$T/dark.out" 2> "$T/dark.err"
rc=$?
check "pdudaemon stopped: exit 2 (was $rc)" test $rc -eq 2
if ! check "...lava-test-raise names the board" grep -q "^lava-test-raise 'powercut: board dark: " "$T/dark.out"; then
	cat "$T/dark.out"; tail -5 "$T/dark.err"
fi
check "...and no verdict is against the device (INFRA_ERROR only)" \
	test "$(jq -s '[.[] | select(.verdict != "INFRA_ERROR")] | length' "$T/r-dark/verdicts.jsonl" 2>/dev/null || echo 0)" -eq 0

finish

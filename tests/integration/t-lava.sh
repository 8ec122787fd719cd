#!/bin/bash
# t-lava: a powercut campaign as a real LAVA job. lava-run (the runner
# lava-worker spawns) runs a job whose docker test shell runs
# `powercut lava` in a Debian 12 image (tools/lava/shell-image) with the
# build and this test's folder bind-mounted; the device's power commands are
# requests to Debian's real pdudaemon, whose localcmdline PDU starts and
# SIGKILLs a sim board's agent on the host. The honest board's agent talks
# on its serial console (one end of a pty pair), Debian's real ser2net
# exports the other end as telnet (max-connections 2: LAVA holds the console
# too), and the device's connection command is `telnet HOST PORT`. Checked:
#   1. the job completes; its results hold one powercut case per board and
#      mode with records/s as the measurement, and the cycles they count are
#      those of verdicts.jsonl; the campaign reached the board's console as
#      telnet:// through ser2net while a second client (LAVA's) held it;
#   2. the PDU saw one off/on pair per cut, matching the campaign's cut events;
#   3. a lying-flush board gives failed cases in a Complete job;
#   4. pdudaemon stopped, no power_off command, a console command powercut
#      cannot read (ssh): the job is Incomplete, its error names the board
#      and the cause;
#   5. a job timeout shorter than the campaign leaves the folder, and a
#      second job resumes and completes it, no verdict lost or duplicated;
#   7. lava-run --validate passes on the job.
# Needs lava-dispatcher, docker.io, debootstrap, pdudaemon, ser2net and telnet (make
# lava-check installs them; PC_LAVA_REQUIRE=1 makes a skip a failure).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo "t-lava: powercut campaigns as LAVA jobs (lava-run, docker test shell, pdudaemon)"
lava_setup
for c in lava-run docker dockerd debootstrap pdudaemon ser2net telnet curl jq; do
	command -v $c > /dev/null || lava_skip "$c is not installed"
done
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$ROOT/build/powercut" ] || lava_skip "build/powercut is not built (make all): the test shell runs the plain build"

pids=""
cleanup() {
	for f in "$T"/*.pid; do
		[ -s "$f" ] && kill -KILL -- "-$(cat "$f" 2> /dev/null)" 2> /dev/null
	done
	docker ps -aq --filter name=lava-docker-test-shell 2> /dev/null | xargs -r docker rm -f > /dev/null 2>&1
	# shellcheck disable=SC2086
	stop_daemons $pids
	rm_T
}
trap 'pc_rc=$?; cleanup' EXIT
check "dockerd runs (tools/lava/dockerd)" tools/lava/dockerd start
if ! check "the test shell's image is there (tools/lava/shell-image)" tools/lava/shell-image powercut-shell; then
	finish
fi

"$ROOT/build/powercut" key new "$T/agent.key" > /dev/null 2>&1
pdu_lab "$ROOT/build/powercut-agent"
rc=$?
check "pdudaemon (HTTP) starts on port $dport (was $rc)" test $rc -eq 0

# The device: its power commands are pdudaemon requests, as a lab's device
# dictionary renders them, and its console CONNECT (a command, tagged
# primary) if given; the test shell shares the worker's network.
device() { # NAME OUTLET [CONNECT]
	{
		echo "device_type: powercut-board"
		echo "commands:"
		echo "  power_on: \"curl -sf 'http://127.0.0.1:$dport/power/control/on?hostname=lab&port=$2'\""
		echo "  power_off: \"curl -sf 'http://127.0.0.1:$dport/power/control/off?hostname=lab&port=$2'\""
		echo "  hard_reset: \"curl -sf 'http://127.0.0.1:$dport/power/control/reboot?hostname=lab&port=$2'\""
		[ -z "${3:-}" ] || printf '  connections:\n    uart0:\n      connect: %s\n      tags: [primary, telnet]\n' "$3"
		cat configs/lava/device-common.yaml
	} > "$T/$1.device.yaml"
}
# A serial cable (pty pair) for board NAME, Debian's ser2net exporting its host
# end as telnet on $sport; sets board_end (the agent's --console). Two clients
# at once (max-connections 2): LAVA's own connection and powercut's.
console() { # NAME
	"$TOOLS/ptypair" "$T/$1.ptys" &
	pids="$pids $!"
	for _ in $(seq 300); do [ -s "$T/$1.ptys" ] && break; sleep 0.1; done
	board_end=$(sed -n 2p "$T/$1.ptys")
	sport=$(free_port)
	cat > "$T/$1.ser2net.yaml" <<Y
%YAML 1.1
---
connection: &$1
    accepter: telnet,tcp,127.0.0.1,$sport
    connector: serialdev,$(sed -n 1p "$T/$1.ptys"),115200n81,local
    options:
      max-connections: 2
Y
	ser2net -n -c "$T/$1.ser2net.yaml" -P "$T/$1.s2npid" > "$T/$1.s2nlog" 2>&1 &
	pids="$pids $!"
	for _ in $(seq 100); do (exec 3<> "/dev/tcp/127.0.0.1/$sport") 2> /dev/null && return 0; sleep 0.1; done
	return 1
}
cat > "$T/dispatcher.yaml" <<YAML
test_docker_bind_mounts:
- ["$ROOT", "$ROOT"]
- ["$T", "$T", "rw"]
YAML
job() { # NAME TIMEOUT-S: the job running board NAME's campaign
	sed -e "s|@CAMPAIGN@|$T/$1.json|; s|@RESULTS@|$T/r-$1|; s|@POWERCUT@|$ROOT/build/powercut|; s|@TIMEOUT@|$2|" \
		configs/lava/job.yaml > "$T/$1.job.yaml"
}
campaign() { # NAME OUTLET PROFILE CYCLES [CONNECT]: with CONNECT, the agent on its serial console ($board_end);
	# the board stays off for $off_ms (default 50) at each cut
	local lport link=""
	lport=$(free_port)
	if [ -n "${5:-}" ]; then
		echo "$1 $board_end $3" > "$T/outlet-$2"
		link='"link": { "type": "serial" },'
	else
		echo "$1 127.0.0.1:$lport $3" > "$T/outlet-$2"
	fi
	"$ROOT/build/powercut-agent" prepare --device "sim:$T/$1.img" --size 4M --yes > /dev/null 2>&1
	cat > "$T/$1.json" <<JSON
{ "campaign": "lava-$1", "cycles": $4, "seed": 4, "listen": "127.0.0.1:$lport", "key_file": "$T/agent.key",
  "boards": [ { "name": "$1", "device": { "backend": "sim", "record_size": 4096 }, $link
    "modes": ["fua", "flush"], "records_per_cycle": 200, "flush_every": 8,
    "cut": { "at": "acks", "acks": [16, 120] }, "boot_timeout_ms": 8000, "off_ms": ${off_ms:-50} } ] }
JSON
	device "$1" "$2" "${5:-}"
}
lava() { # NAME N: lava-run job N of board NAME; its log is $T/NAME.N.log, results $T/NAME.N.results
	timeout 1200 lava-run --job-id "$2" --output-dir "$T/out-$1-$2" --device "$T/$1.device.yaml" \
		--dispatcher "$T/dispatcher.yaml" "$T/$1.job.yaml" > "$T/$1.$2.log" 2>&1
	local rc=$?
	# lava-run's results lines are JSON but for YAML tags on some values
	# (`"endtc": ! "121"`); other lines may be the test shell's own output
	grep '^{"dt": "[^"]*", "lvl": "results"' "$T/$1.$2.log" | sed 's/": ! "/": "/g' | jq -c 'select(.lvl == "results") | .msg' > "$T/$1.$2.results" 2> "$T/$1.$2.jq"
	return $rc
}
result_of() { # NAME N CASE: the result LAVA recorded
	jq -r --arg c "$3" 'select(.case == $c) | .result' "$T/$1.$2.results" | head -1
}
job_result() { # NAME N: the job's own result (pass: Complete)
	jq -r 'select(.definition == "lava" and .case == "job") | .result' "$T/$1.$2.results" | tail -1
}

# ---- 7 and 1, 2: an honest board, its console through ser2net ----
console honest
rc=$?
check "ser2net exports the honest board's console as telnet on port $sport (was $rc)" test $rc -eq 0
campaign honest 1 honest 10 "telnet 127.0.0.1 $sport"
job honest 1200
check "lava-run --validate passes on the job" \
	lava-run --job-id 100 --output-dir "$T/out-validate" --validate --device "$T/honest.device.yaml" \
	--dispatcher "$T/dispatcher.yaml" "$T/honest.job.yaml"
# LAVA's own connection to the console, held through the job (a device's
# connection is LAVA's as well as the test's: ser2net's max-connections 2)
setsid sh -c "tail -f /dev/null | exec telnet 127.0.0.1 $sport" > "$T/lava-console.log" 2>&1 < /dev/null &
echo $! > "$T/telnet.pid"
lava honest 1
rc=$?
kill -KILL -- "-$(cat "$T/telnet.pid")" 2> /dev/null
: > "$T/telnet.pid"
if ! check "the honest board's job: lava-run exits 0 (was $rc)" test $rc -eq 0; then
	grep -E '"lvl": "(error|exception)"' "$T/honest.1.log" | tail -5 | cut -c1-300
fi
check "...the job is Complete" test "$(job_result honest 1)" = pass
nv=$(grep -c . "$T/r-honest/verdicts.jsonl")
check "...10 verdicts" test "$nv" -eq 10
for m in fua flush; do
	check "...a passing case powercut-honest-$m" test "$(result_of honest 1 "powercut-honest-$m")" = pass
	check "...with records/s as its measurement" \
		test "$(jq -r --arg c "powercut-honest-$m" 'select(.case == $c) | "\(.units) \(.measurement | tonumber > 0)"' "$T/honest.1.results")" = "records/s true"
done
check "...and powercut-honest passes" test "$(result_of honest 1 powercut-honest)" = pass
check "...the campaign's console was LAVA's telnet command, as telnet://" \
	test "$(jq -r '.boards[0].link.device' "$T/r-honest.lava.json")" = "telnet://127.0.0.1:$sport"
# (a console log per power-on: the cycles', and the last power-on's after them)
check "...through ser2net: the agent's lines in every cycle's console log" \
	test "$(grep -l '@@PC {"type":"hello"' "$T"/r-honest/console/honest/cycle-*.log | wc -l)" -ge "$nv"
check "...while LAVA's own telnet client held the console and read them too" \
	grep -q '@@PC {"type":"hello"' "$T/lava-console.log"
check "...the report LAVA read counts the cycles of verdicts.jsonl" \
	test "$(jq '[.devices[].modes[].cycles] | add' "$T/r-honest.report.json")" -eq "$nv"
cuts=$(jq -s '[.[] | select(.ev == "cut")] | length' "$T/r-honest/events.jsonl")
powered=$(jq -s '[.[] | select(.ev == "power_on")] | length' "$T/r-honest/events.jsonl")
offs=$(grep -c '^off honest' "$T/pdu.log"); ons=$(grep -c '^on honest' "$T/pdu.log")
echo "  cuts $cuts; the PDU switched honest off $offs times, on $ons times"
check "the PDU switched on once per power_on event ($ons for $powered)" test "$ons" -eq "$powered"
check "...the cuts are the campaign's cut events ($cuts for $nv cycles)" test "$cuts" -eq "$nv"
# off: once per cut, plus the harness's off before the first power-on, its
# off at the campaign's end, and LAVA's own power-off action after the test
check "...and off once per cut, plus three ($offs for $cuts cuts)" test "$offs" -eq $((cuts + 3))
check "...the first switch was the harness's off before the first power-on" test "$(head -1 "$T/pdu.log")" = "off honest"
check "...LAVA's own power-off ran after the test" test "$(result_of honest 1 power-off)" = pass

# ---- 3: a lying-flush board: failed cases, a Complete job ----
campaign lying 2 lying-flush 10
job lying 1200
lava lying 1
rc=$?
check "the lying board's job: lava-run exits 0 (was $rc)" test $rc -eq 0
check "...the job is Complete" test "$(job_result lying 1)" = pass
check "...powercut-lying-flush failed" test "$(result_of lying 1 powercut-lying-flush)" = fail
check "...powercut-lying failed" test "$(result_of lying 1 powercut-lying)" = fail

# ---- 5: a job timeout shorter than the campaign, then a second job ----
# off 600 ms at each of 60 cuts: the campaign takes at least 36 s however
# fast the machine, longer than the first job's 25 s (on an idle machine 60
# cycles with 50 ms off took under 25 s and the job completed)
off_ms=600 campaign long 3 honest 60
job long 25
lava long 1
check "the first job ran out of time (not Complete)" test "$(job_result long 1)" != pass
n1=$(grep -c . "$T/r-long/verdicts.jsonl" 2> /dev/null || echo 0)
echo "  the first job left $n1 verdicts"
check "...and left verdicts in the folder on the bind mount" test "$n1" -gt 0
check "...fewer than the campaign's 60" test "$n1" -lt 60
docker ps -aq --filter name=lava-docker-test-shell | xargs -r docker rm -f > /dev/null 2>&1
job long 1200
lava long 2
rc=$?
check "the second job resumes and completes: lava-run exits 0 (was $rc)" test $rc -eq 0
check "...the job is Complete" test "$(job_result long 2)" = pass
check "...60 cycles judged, none twice" \
	test "$(jq -s '[.[] | "\(.board)/\(.cycle)"] | unique | length' "$T/r-long/verdicts.jsonl") $(grep -c . "$T/r-long/verdicts.jsonl")" = "60 60"
check "...replay reproduces every verdict" "$ROOT/build/powercut" replay --quiet "$T/r-long"

# ---- 4: pdudaemon stopped: Incomplete, the board named ----
stop_daemons "$dpid"
campaign dark 4 honest 10
job dark 1200
lava dark 1
check "pdudaemon stopped: the job is not Complete" test "$(job_result dark 1)" != pass
if ! check "...its error names the board and pdudaemon" \
	grep -q "powercut: board dark: .*pdudaemon" "$T/dark.1.log"; then
	grep -E '"lvl": "(error|results)"' "$T/dark.1.log" | tail -4 | cut -c1-300
fi
check "...no verdict against the device" \
	test "$(jq -s '[.[] | select(.verdict == "FAIL" or .verdict == "BOOT_FAIL")] | length' "$T/r-dark/verdicts.jsonl")" -eq 0

# ---- 4: no power_off command; a console powercut cannot read ----
campaign nooff 5 honest 10
sed -i '/power_off:/d' "$T/nooff.device.yaml"
job nooff 1200
lava nooff 1
check "no power_off command: the job is not Complete" test "$(job_result nooff 1)" != pass
check "...its error names the board and LAVA_POWER_OFF_COMMAND" \
	grep -q "powercut: board nooff: LAVA_POWER_OFF_COMMAND is not set" "$T/nooff.1.log"
check "...nothing was run" test ! -e "$T/r-nooff/verdicts.jsonl"
campaign ssh 6 honest 10 "ssh -p 22 lab"
job ssh 1200
lava ssh 1
check "a console over ssh: the job is not Complete" test "$(job_result ssh 1)" != pass
check "...its error names the board and the command" \
	grep -q "powercut: board ssh: LAVA_CONNECTION_COMMAND .*ssh -p 22 lab" "$T/ssh.1.log"
finish

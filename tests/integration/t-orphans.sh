#!/bin/bash
# No orphan agents: a sim campaign on a fixed listen port, its harness
# SIGKILLed 20 times at random moments and resumed each time, then run to the
# end: no agent of the folder outlives its harness, every cycle has exactly one
# verdict, and replay agrees. Then the record in boards/<board>/pgid on its
# own (an agent whose parent is not the harness, so PR_SET_PDEATHSIG cannot
# reach it): a restarted harness kills it before any power-on, leaves an
# unrelated process that got the same pid alone, and refuses to take a group
# from a harness that still runs.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

PORT=$(free_port)
N=40
cat > "$T/c.json" <<JSON
{
  "campaign": "it-orphans", "cycles": $N, "seed": 11, "listen": "127.0.0.1:$PORT",
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096 },
    "records_per_cycle": 30, "modes": ["fua", "flush"],
    "cut": { "at": "random", "window_ms": [2, 20] }, "off_ms": 5
  },
  "boards": [ { "name": "b1" }, { "name": "b2", "device": { "profile": "lying-flush" } } ]
}
JSON
R="$T/r"
agents() { pgrep -f "$R/boards/" | tr '\n' ' '; }
# gone_within MS: until no agent of the folder runs; 0, or 1 after MS
gone_within() {
	for _ in $(seq $(($1 / 20))); do
		[ -z "$(agents)" ] && return 0
		sleep 0.02
	done
	[ -z "$(agents)" ]
}

# --- 20 SIGKILLs of the harness at random moments -----------------------------
check "port $PORT is free" [ "$PORT" -ne 0 ]
# A run that finishes before its kill grows the campaign by 20 cycles
# (--cycles may grow one), so a fast build gets its 20 kills mid-campaign too.
kills=0 late=0 errs=0 runs=0
while [ $kills -lt 20 ] && [ $runs -lt 60 ]; do
	runs=$((runs + 1))
	"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report --cycles $N >> "$T/runs.log" 2>&1 &
	pid=$!
	# 0.4 to 1.6 s: past the start-up, into the cycles
	ms=$((400 + RANDOM % 1200))
	sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
	if ! kill -0 $pid 2>/dev/null; then
		wait $pid
		rc=$?
		echo "  (run $runs ended by itself, exit $rc; the campaign grows to $((N + 20)) cycles)"
		[ $rc -le 1 ] || errs=$((errs + 1))
		N=$((N + 20))
		continue
	fi
	kill -KILL $pid
	wait $pid 2>/dev/null
	kills=$((kills + 1))
	# PR_SET_PDEATHSIG: the agents die with their harness, not at the next start
	gone_within 1000 || { late=$((late + 1)); echo "  agents alive 1 s after kill $kills: $(agents)"; }
	echo "  kill $kills: $(grep -c . "$R/verdicts.jsonl" 2>/dev/null) verdicts on record"
done
echo "  $kills SIGKILLs, $(grep -c . "$R/verdicts.jsonl" 2>/dev/null) verdicts on record"
check "the harness was killed 20 times mid-campaign" [ $kills -eq 20 ]
check "no run ended in an error (exit 2) between the kills" [ $errs -eq 0 ]
check "no agent outlived its harness by 1 s, after any of the kills ($late did)" [ $late -eq 0 ]
check "no restart was refused for the port or the folder" sh -c "! grep -E 'in use|cannot listen|Address already' '$T/runs.log'"
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report --cycles $N > "$T/last" 2>&1
rc=$?
ran_or_late() { [ "$1" -le 1 ] || passed_or_late "$1" "$2"; }
check "the last run finishes (exit $rc: 0 or 1, or 3 INCONCLUSIVE)" ran_or_late $rc "$R"
check "no agent of the folder is left running" gone_within 1000
for b in b1 b2; do
	check "$b: cycles 1..$N each have exactly one verdict" \
		[ "$(jq -r "select(.board==\"$b\") | .cycle" "$R/verdicts.jsonl" | sort -n | tr '\n' ' ')" = "$(seq 1 $N | tr '\n' ' ')" ]
done
check "no verdict twice" [ "$(jq -r '"\(.board)/\(.cycle)"' "$R/verdicts.jsonl" | sort | uniq -d | wc -l)" -eq 0 ]
check "replay agrees with every verdict" "$PC" replay "$R"
check "b2's ground truth agrees with its verdicts" "$TOOLS/truthcheck" "$R" b2
check "b1 (honest) never FAILed" [ "$(jq -s '[.[] | select(.board=="b1" and .verdict=="FAIL")] | length' "$R/verdicts.jsonl")" -eq 0 ]

# --- the record alone: an orphan PR_SET_PDEATHSIG cannot reach ----------------
boot=$(cat /proc/sys/kernel/random/boot_id)
start_of() { awk '{ print $22 }' "/proc/$1/stat"; }
sh -c 'exit 0' &
dead=$!
wait $dead
# write_record FILE PGID START HARNESS_PID HARNESS_START [WHAT [BOOT_ID]]
write_record() {
	printf '{"pgid":%s,"start":%s,"boot_id":"%s","what":"%s","harness_pid":%s,"harness_start":%s}\n' \
		"$2" "$3" "${7:-$boot}" "${6:-agent}" "$4" "$5" > "$1"
}
# an agent of board b1, started by this script in a session of its own, that
# keeps trying to reach the campaign's port for a minute
# (a subshell's job, so that this shell has no job to report killed)
( setsid "$AGENT" run --device "sim:$R/boards/b1/media.img" --connect "127.0.0.1:$PORT" --board b1 \
	--key "$R/agent.key" --fresh-boot-id --connect-timeout-ms 60000 > "$T/orphan.log" 2>&1 & )
# until it runs (a deadline, not a time)
for _ in $(seq 300); do pgrep -f "$R/boards/b1/media.img" > /dev/null && break; sleep 0.1; done
opid=$(pgrep -f "$R/boards/b1/media.img")
check "the orphan runs (pid $opid), in a group of its own" [ -n "$opid" -a "$(ps -o pgid= -p "${opid:-1}" | tr -d ' ')" = "$opid" ]
write_record "$R/boards/b1/pgid" "$opid" "$(start_of "$opid")" "$dead" 1
# an unrelated process whose pid a stale record names, with another start time
sleep 60 &
spid=$!
write_record "$R/boards/b2/pgid" "$spid" "$(( $(start_of $spid) + 1 ))" "$dead" 1
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report --cycles $((N + 4)) > "$T/out" 2>&1
rc=$?
check "the run after it finishes (exit $rc: 0 or 1)" [ $rc -le 1 ]
check "it killed the orphan and said so" grep -qF "board b1: relay sim: killed agent process group $opid, left running by an earlier powercut (pid $dead, gone)" "$T/out"
# gone, or a zombie nobody reaped yet, or being reaped (Z, X: it runs
# nothing), as the harness judged it; what the harness saw as such may be
# read here a moment later in a state of its exit, so a short wait (CI once
# found it neither gone nor Z right after the run)
orphan_gone() {
	local st
	for _ in $(seq 50); do
		st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)
		case "$st" in "" | Z | X) return 0 ;; esac
		sleep 0.1
	done
	echo "  pid $1 still in state $st 5 s after the run said it was gone"
	return 1
}
check "the orphan is gone" orphan_gone "$opid"
check "the unrelated process with a recycled pid is left alone" kill -0 $spid
check "it says nothing about b2's stale record" sh -c "! grep -q 'board b2: relay sim: killed' '$T/out'"
check "the records are gone once their groups are" [ ! -e "$R/boards/b1/pgid" -a ! -e "$R/boards/b2/pgid" ]
check "cycles 1..$((N + 4)), one verdict each, per board" \
	[ "$(jq -r '"\(.board)/\(.cycle)"' "$R/verdicts.jsonl" | sort -u | wc -l)" -eq $((2 * (N + 4))) -a \
	  "$(grep -c . "$R/verdicts.jsonl")" -eq $((2 * (N + 4))) ]
check "replay agrees" "$PC" replay "$R"
check "no agent left running" gone_within 1000

# --- a group whose harness still runs is not an orphan: refused ---------------
# (an agent of this board that reaches for a closed port, and the earlier
# sleep standing in for its live harness: their pids and start times match)
( setsid "$AGENT" run --device "sim:$R/boards/b1/media.img" --connect 127.0.0.1:1 --board b1 \
	--key "$R/agent.key" --fresh-boot-id --connect-timeout-ms 60000 > /dev/null 2>&1 & echo $! > "$T/gpid" )
gpid=$(cat "$T/gpid")
sleep 0.2
write_record "$R/boards/b1/pgid" "$gpid" "$(start_of $gpid)" "$spid" "$(start_of $spid)"
expect_fail "a group a running harness owns: the run exits 2, naming it" "belongs to powercut pid $spid, which still runs" \
	"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report --cycles $((N + 5))
check "and that group was left alone" kill -0 $gpid
kill -KILL $gpid
kill $spid
wait $spid 2>/dev/null
# a record that is garbage names nothing: nothing is killed, the run goes on;
# a record from another boot of the host names a process long gone, whatever
# runs under that pid now
head -c 3000 /dev/urandom > "$R/boards/b1/pgid"
# (setsid, not a group leader in this subshell, execs sleep: $! is its pid)
( setsid sleep 60 > /dev/null 2>&1 & echo $! > "$T/bpid" )
bpid=$(cat "$T/bpid")
write_record "$R/boards/b2/pgid" "$bpid" "$(start_of "$bpid")" "$dead" 1 agent 00000000-0000-0000-0000-000000000000
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report --cycles $((N + 5)) > "$T/out2" 2>&1
rc=$?
check "a garbage record: the run goes on (exit $rc)" [ $rc -le 1 ]
check "a garbage record: it says it killed nothing" grep -q "pgid names no process group (unreadable); nothing killed" "$T/out2"
check "a record from another boot: the process under that pid now is left alone" kill -0 "$bpid"
# the very process recorded, whose harness is gone, but not on this board (its
# command line names no sim:<this board's media>): a record is just a file,
# and this one is left alone, said so
write_record "$R/boards/b1/pgid" "$bpid" "$(start_of "$bpid")" "$dead" 1
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report --cycles $((N + 6)) > "$T/out3" 2>&1
rc=$?
check "a recorded process not on this board: the run goes on (exit $rc)" [ $rc -le 1 ]
check "...and leaves it alone" kill -0 "$bpid"
check "...and says so" grep -qF "board b1: relay sim: process group $bpid recorded in $R/boards/b1/pgid still runs, but its command line does not name sim:$R/boards/b1/media.img: not this board's agent, left alone" "$T/out3"
kill "$bpid"
check "no agent left running at the end" gone_within 1000

# --- the qemu relay: the same gate and record ----------------------------------
# A stand-in for QEMU that speaks just enough QMP on the socket the relay gives
# it (-chardev socket,id=pcqmp,fd=N), optionally slowly, then idles; one bash
# process from start to end (it waits on a FIFO, not in a child), so pgrep
# finds it by its name for its whole life.
mkdir -p "$T/q"
cat > "$T/q/fake-qemu" <<'SH'
#!/bin/bash
fd=
for a in "$@"; do case "$a" in socket,id=pcqmp,fd=*) fd=${a##*=} ;; esac; done
[ -n "$fd" ] || { echo "fake-qemu: no QMP socket in $*" >&2; exit 1; }
f=$(mktemp -u "${TMPDIR:-/tmp}/fake-qemu.XXXXXX") && mkfifo "$f" && exec 8<>"$f" && rm -f "$f" || exit 1
echo '{"QMP": {"version": {}, "capabilities": []}}' >&"$fd"
read -r -u "$fd" line
echo '{"return": {}}' >&"$fd"
read -r -u "$fd" line
read -r -t "${FAKE_QEMU_DELAY:-0}" -u 8 line
echo '{"return": {"status": "running", "running": true}}' >&"$fd"
read -r -t 600 -u 8 line
SH
chmod +x "$T/q/fake-qemu"
: > "$T/q/kernel"; : > "$T/q/initrd"
truncate -s 1M "$T/q/sd.img"
cat > "$T/q/c.json" <<JSON
{
  "campaign": "it-orphans-qemu", "cycles": 1,
  "boards": [ { "name": "vm1",
    "device": { "backend": "posix", "record_size": 4096, "path": "/dev/mmcblk0p1" },
    "relay": { "driver": "qemu", "qemu": "$T/q/fake-qemu", "accel": "tcg", "kernel": "$T/q/kernel",
               "initrd": "$T/q/initrd", "drive": "$T/q/sd.img", "console": "/dev/null", "timeout_ms": 10000 } } ]
}
JSON
QS="$T/q/results/it-orphans-qemu/boards/vm1"	# `relay` keeps its state under ./results
PCA=$(cd "$(dirname "$PC")" && pwd)/$(basename "$PC")
qemus() { pgrep -f "$T/q/fake-qemu" | tr '\n' ' '; }
qemus_gone_within() {
	for _ in $(seq $(($1 / 20))); do
		[ -z "$(qemus)" ] && return 0
		sleep 0.02
	done
	[ -z "$(qemus)" ]
}
(cd "$T/q" && "$PCA" relay c.json vm1 on) > "$T/q/on.out" 2>&1
check "qemu relay: on and off through the gate (fake QEMU)" grep -q "board vm1: relay on done" "$T/q/on.out"
check "qemu relay: nothing left running, no record left" [ -z "$(qemus)" -a ! -e "$QS/pgid" ]
# killed while QEMU starts: it dies with the harness
(cd "$T/q" && FAKE_QEMU_DELAY=20 exec "$PCA" relay c.json vm1 on) > "$T/q/on2.out" 2>&1 &
hp=$!
for _ in $(seq 100); do [ -e "$QS/pgid" ] && [ -n "$(qemus)" ] && break; sleep 0.05; done
qp=$(qemus)
check "qemu relay: its group is on record while it starts (pid $qp)" grep -q "\"pgid\":${qp%% *}," "$QS/pgid"
kill -KILL $hp
wait $hp 2>/dev/null
check "qemu relay: QEMU dies with the harness that started it" qemus_gone_within 1000
# an orphan PR_SET_PDEATHSIG cannot reach: killed at the next open
( setsid "$T/q/fake-qemu" -chardev socket,id=pcqmp,fd=9 -drive "id=sd,if=none,format=raw,cache=none,file=$T/q/sd.img" \
	9<>/dev/null > /dev/null 2>&1 & )
for _ in $(seq 300); do [ -n "$(qemus)" ] && break; sleep 0.1; done
qp=$(qemus)
qp=${qp%% *}
check "qemu relay: a stand-in orphan runs (pid $qp)" [ -n "$qp" ]
write_record "$QS/pgid" "$qp" "$(start_of "$qp")" "$dead" 1 QEMU
(cd "$T/q" && "$PCA" relay c.json vm1 get) > "$T/q/get.out" 2>&1
check "qemu relay: open killed the orphan QEMU and said so" \
	grep -qF "board vm1: relay qemu: killed QEMU process group $qp, left running by an earlier powercut (pid $dead, gone)" "$T/q/get.out"
check "qemu relay: the orphan is gone" qemus_gone_within 100
check "qemu relay: get still answers" grep -qx "off" "$T/q/get.out"
finish

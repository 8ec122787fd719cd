#!/bin/bash
# One campaign per results folder: a second `powercut run` on a folder in use
# exits 2 naming the first's pid; `status` says whether a run is at it; a lock
# left by a killed run is taken over; replay, report and status read a live
# folder without the lock.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cat > "$T/c.json" <<JSON
{
  "campaign": "it-lock", "cycles": 100000, "seed": 5,
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096 },
    "records_per_cycle": 20, "modes": ["fua"],
    "cut": { "at": "random", "window_ms": [2, 10] }, "off_ms": 5
  },
  "boards": [ { "name": "b1" } ]
}
JSON
R="$T/r"

# wait_status "text": poll `powercut status` (10 s at most) until it prints text
wait_status() {
	for _ in $(seq 100); do
		"$PC" status "$R" 2>/dev/null | head -1 | grep -qF -- "$1" && return 0
		sleep 0.1
	done
	return 1
}
# wait_verdicts N: until verdicts.jsonl holds N lines (30 s at most)
wait_verdicts() {
	for _ in $(seq 300); do
		n=$(grep -c . "$R/verdicts.jsonl" 2>/dev/null)
		[ "${n:-0}" -ge "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
nodups() { [ "$(jq -r '"\(.board)/\(.cycle)"' "$R/verdicts.jsonl" | sort | uniq -d | wc -l)" -eq 0 ]; }

check "status of a folder never run: not running" sh -c "'$PC' status '$R' 2>/dev/null | head -1 | grep -q 'not running (no lock file'"

# --- a live run, and a second one on the same folder --------------------------
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report > "$T/out1" 2>&1 &
pid1=$!
check "status: running, pid $pid1" wait_status "running, pid $pid1 on $(hostname) since "
check "the first run judges cycles" wait_verdicts 3
n0=$(grep -c . "$R/events.jsonl")
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report > "$T/out2" 2>&1
rc=$?
check "a second run on the live folder exits 2 (got $rc)" [ $rc -eq 2 ]
check "its error names the first run's pid and host" grep -qF "in use by another powercut run: pid $pid1 on $(hostname)" "$T/out2"
check "its error says since when" grep -qE "since [0-9]{4}-[0-9]{2}-[0-9]{2} " "$T/out2"
check "it started no board (no power-on in its output)" [ "$(grep -c . "$T/out2")" -eq 1 ]
check "the first run is still alive" kill -0 $pid1
# read-only tools keep working on the live folder
"$PC" report "$R" > "$T/rep" 2>&1
rc=$?
check "report works on the live folder: exit 3, INCOMPLETE while it runs (was $rc)" [ $rc -eq 3 ]
check "report works on the live folder: it prints a result" grep -q "result:" "$T/rep"
"$PC" replay "$R" > "$T/rpl" 2>&1
rc=$?
check "replay runs on the live folder (exit $rc: 0 or 1)" [ $rc -le 1 ]
check "replay printed its summary" grep -q "^replay .*verdicts recomputed" "$T/rpl"
"$PC" status "$R" > "$T/st" 2>&1
check "status prints counts on the live folder" grep -qE "[0-9]+ events, [0-9]+ verdicts" "$T/st"
check "the first run kept going after all that" [ "$(grep -c . "$R/events.jsonl")" -gt "$n0" ]
kill -INT $pid1
wait $pid1
rc=$?
check "the first run stops on SIGINT with exit 3 (got $rc)" [ $rc -eq 3 ]
check "status: not running, last run ended" wait_status "not running; last run pid $pid1 on $(hostname) ended "
check "no verdict twice" nodups
check "replay agrees with every verdict" "$PC" replay "$R"

# --- a killed run's lock is taken over ------------------------------------------
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report > "$T/out3" 2>&1 &
pid3=$!
check "the resumed run holds the folder" wait_status "running, pid $pid3 "
n=$(grep -c . "$R/verdicts.jsonl")
check "it judges more cycles" wait_verdicts $((n + 2))
kill -KILL $pid3
wait $pid3 2>/dev/null
check "status after SIGKILL: not running, killed" wait_status "not running; last run pid $pid3 on $(hostname) (started "
check "status says it never closed the folder" sh -c "'$PC' status '$R' | head -1 | grep -q 'was killed: it never closed the folder'"
n=$(grep -c . "$R/verdicts.jsonl")
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report --cycles $((n + 3)) > "$T/out4" 2>&1
rc=$?
check "a run after the killed one takes the folder over and finishes (exit 0, or 3 INCONCLUSIVE; was $rc)" passed_or_late $rc "$R"
check "it says whose lock it took over" grep -qF "taken over: not running; last run pid $pid3 " "$T/out4"
check "no verdict twice after the takeover" nodups
check "replay agrees after the takeover" "$PC" replay "$R"

# --- two runs started at the same instant: exactly one runs -------------------
# (the runs must outlast the 1.5 s a run waits for a held lock, or the second
# just follows the first, harmlessly: 15 cycles took under 1.5 s on an idle
# machine, so give them 80; the first to hold the lock runs them all)
rm -rf "$R"
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report --cycles 80 > "$T/outA" 2>&1 &
pa=$!
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report --cycles 80 > "$T/outB" 2>&1 &
pb=$!
wait $pa; ra=$?
wait $pb; rb=$?
check "simultaneous starts: one finishes, one exits 2 (got $ra and $rb)" \
	[ "$(printf '%s\n' $ra $rb | sort -n | tr '\n' ' ')" = "0 2 " ]
check "simultaneous starts: 80 verdicts" [ "$(grep -c . "$R/verdicts.jsonl")" -eq 80 ]
check "simultaneous starts: none twice" nodups
check "the refused one named the other's pid" grep -qE "in use by another powercut run: pid ($pa|$pb) " "$T/outA" "$T/outB"
check "simultaneous starts: replay agrees" "$PC" replay "$R"

# --- a lock held by something that is not powercut, and a hostile lock file ----
printf 'garbage \033[31m not json\n' > "$R/lock"
# the subshell takes the lock on fd 9, then becomes the sleep that holds it
( flock 9 && exec sleep 30 ) 9< "$R/lock" &
fpid=$!
# until it holds the lock (a deadline, not a time)
for _ in $(seq 300); do flock -n "$R/lock" true || break; sleep 0.1; done
expect_fail "a lock held by another process with a garbage file: refused, says so" "names no pid" \
	"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report --cycles 4
check "status: running, holder unknown" wait_status "running (a process holds the lock"
kill $fpid
wait $fpid 2>/dev/null
check "status: a garbage lock file nobody holds names no run" wait_status "not running (the lock file names no earlier run)"
printf '{"pid":-5,"host":"\\u001b[2Jevil host","started":99999999999999999}\n' > "$R/lock"
check "status: out-of-range fields are not believed" wait_status "not running (the lock file names no earlier run)"
printf '{"pid":77,"host":"\\u001b[2Jx y","started":1}\n' > "$R/lock"
"$PC" status "$R" > "$T/st2" 2>&1
check "status prints a hostile host name without control characters" grep -qF "last run pid 77 on ?[2Jx?y (started" "$T/st2"
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report --cycles 84 > "$T/out5" 2>&1
rc=$?
check "a run takes over a hostile lock file nobody holds: exit 0, or 3 INCONCLUSIVE (was $rc)" passed_or_late $rc "$R"
check "a run takes over a hostile lock file nobody holds: 84 verdicts" [ "$(grep -c . "$R/verdicts.jsonl")" -eq 84 ]
check "the lock file then names that run, ended" jq -e '.pid > 1 and .ended >= .started' "$R/lock" > /dev/null

# --- `relay` by hand on a board whose campaign runs: refused ------------------
# (`relay` keeps a board's state in the default folder, results/<campaign>/)
PCA=$(cd "$(dirname "$PC")" && pwd)/$(basename "$PC")
AGA=$(cd "$(dirname "$AGENT")" && pwd)/$(basename "$AGENT")
(cd "$T" && exec "$PCA" run c.json --agent "$AGA" --quiet --no-report) > "$T/out6" 2>&1 &
pid6=$!
R="$T/results/it-lock"
check "a run in the default folder holds it" wait_status "running, pid $pid6 "
# (past its prepare: a run stopped during one leaves a media to prepare again,
# which `relay` would do with the powercut-agent in PATH)
check "and judges cycles" wait_verdicts 1
(cd "$T" && "$PCA" relay c.json b1 get) > "$T/relay.out" 2>&1
rc=$?
check "relay by hand on its board: refused (exit $rc)" [ $rc -eq 1 ]
check "the refusal names the run" grep -qF "results/it-lock is in use by a campaign (running, pid $pid6 on " "$T/relay.out"
check "the campaign went on" kill -0 $pid6
kill -INT $pid6
wait $pid6
(cd "$T" && "$PCA" relay c.json b1 get) > "$T/relay2.out" 2>&1
rc=$?
check "relay by hand once it stopped: exit 0 (was $rc)" [ $rc -eq 0 ]
check "relay by hand once it stopped: it says off" grep -qx "off" "$T/relay2.out"
# --- `relay` by hand on a board whose campaign runs with --results elsewhere --
# (as powercut@.service runs it): the relay's own lock, not the folder's,
# refuses; it names the campaign, its pid and its results folder. A command
# relay (a real board's kind: the sim board lives in its results folder,
# whose lock covers it); the board never says HELLO, the run waits for it.
cat > "$T/c2.json" <<JSON
{
  "campaign": "it-lock2", "cycles": 10,
  "defaults": { "relay": { "driver": "command", "on": "echo on >> '$T/switched'", "off": "echo off >> '$T/switched'" },
                "device": { "backend": "sim", "size": "1M", "record_size": 4096 },
                "boot_timeout_ms": 600000 },
  "boards": [ { "name": "b1" } ]
}
JSON
# wait_run_lock PID: until the relay lock of it-lock2/b1 names run PID (20 s at most)
wait_run_lock() {
	for _ in $(seq 200); do
		grep -qs "\"pid\":$1,.*\"role\":\"run\",\"key\":\"board:it-lock2/b1\"" "$POWERCUT_LOCK_DIR"/board_it-lock2_b1-*.lock &&
			return 0
		sleep 0.1
	done
	return 1
}
(cd "$T" && exec "$PCA" run c2.json --results "$T/far/away" --quiet --no-report) > "$T/out7" 2>&1 &
pid7=$!
check "a run with --results elsewhere holds its board's relay lock in \$POWERCUT_LOCK_DIR" wait_run_lock $pid7
# (then it switches its board off and on, and waits for a HELLO)
check "the run switched its board off, then on" sh -c "for i in \$(seq 200); do [ \"\$(tr '\n' ' ' < '$T/switched' 2>/dev/null)\" = 'off on ' ] && exit 0; sleep 0.1; done; exit 1"
(cd "$T" && "$PCA" relay c2.json b1 off) > "$T/relay3.out" 2>&1
rc=$?
check "relay by hand on its board: refused (exit $rc)" [ $rc -eq 1 ]
check "the refusal names the campaign, its pid and its results folder" \
	grep -qF "is in use by campaign it-lock2 (powercut run pid $pid7 on $(hostname) since " "$T/relay3.out"
check "and the results folder" grep -qF "results $T/far/away" "$T/relay3.out"
check "the refused relay switched nothing" [ "$(tr '\n' ' ' < "$T/switched")" = "off on " ]
check "the campaign went on" kill -0 $pid7
kill -INT $pid7
wait $pid7
(cd "$T" && "$PCA" relay c2.json b1 off) > "$T/relay4.out" 2>&1
rc=$?
check "relay by hand once it stopped: exit 0 (was $rc)" [ $rc -eq 0 ]
check "relay by hand once it stopped: works, no stale lock to take over" \
	sh -c "grep -q 'relay off done' '$T/relay4.out' && ! grep -q stale '$T/relay4.out'"
# a run killed outright leaves its lock file naming it: the next user says so
(cd "$T" && exec "$PCA" run c2.json --results "$T/far/away" --quiet --no-report) > "$T/out8" 2>&1 &
pid8=$!
check "another run holds the relay lock" wait_run_lock $pid8
kill -KILL $pid8
wait $pid8 2>/dev/null
(cd "$T" && "$PCA" relay c2.json b1 off) > "$T/relay5.out" 2>&1
rc=$?
check "relay after a killed run: exit 0 (was $rc)" [ $rc -eq 0 ]
check "relay after a killed run: works" grep -q "relay off done" "$T/relay5.out"
check "and says it took the killed run's lock over" \
	grep -qF "stale lock taken over: it named campaign it-lock2 (powercut run pid $pid8 " "$T/relay5.out"
# --- one physical board, two campaigns: the second is refused naming the first --
# (relay_lock.h: the lock is keyed by the board's power, not the campaign).
# Each campaign has its own folder and port; the board never says HELLO, the
# first run waits for it. two_campaigns WHAT CONFIG-A CONFIG-B [PREFIX...]:
# A runs, B is refused naming A's pid and folder and switches nothing.
two_campaigns() {
	local what=$1 ca=$2 cb=$3 pid rc
	shift 3
	"$@" "$PC" run "$ca" --results "$T/fold-a" --quiet --no-report > "$T/run-a" 2>&1 &
	pid=$!
	check "$what: the first campaign holds the board's lock" sh -c "for i in \$(seq 200); do
		grep -qs '\"pid\":$pid,.*\"role\":\"run\"' '$POWERCUT_LOCK_DIR'/*.lock && exit 0; sleep 0.1; done; exit 1"
	# (stopped after 60 s if it is not refused: it would wait for its board for ever)
	"$@" timeout -s INT 60 "$PC" run "$cb" --results "$T/fold-b" --quiet --no-report > "$T/run-b" 2>&1
	rc=$?
	check "$what: a second campaign on the same board, other folder and port: exit 2 (was $rc)" [ $rc -eq 2 ]
	check "$what: the refusal names the first campaign, its pid and its folder" grep -qE \
		"is in use by campaign it-board-a \(powercut run pid $pid on .* results $T/fold-a" "$T/run-b"
	check "$what: the first campaign goes on" kill -0 $pid
	kill -INT $pid
	wait $pid
}
board_cfg() { # board_cfg FILE CAMPAIGN BOARD PORT RELAY
	cat > "$1" <<JSON
{ "campaign": "$2", "cycles": 5, "listen": "127.0.0.1:$4",
  "defaults": { "device": { "backend": "sim", "size": "1M", "record_size": 4096 },
                "boot_timeout_ms": 600000, "off_ms": 600, "relay": $5 },
  "boards": [ { "name": "$3" } ] }
JSON
}
cmdrelay() { echo "{ \"driver\": \"command\", \"on\": \"echo on >> '$T/sw-$1'\", \"off\": \"echo off >> '$T/sw-$1'\", \"board_id\": \"bench-rpi4.2\" }"; }
board_cfg "$T/ba.json" it-board-a b1 "$(free_port)" "$(cmdrelay a)"
board_cfg "$T/bb.json" it-board-b slot7 "$(free_port)" "$(cmdrelay b)"
two_campaigns "command relays, one board_id" "$T/ba.json" "$T/bb.json"
check "command relays: the refused campaign switched nothing" [ ! -e "$T/sw-b" ]
check "command relays: the refusal names the board_id" grep -qF "relay board:bench-rpi4.2 is in use" "$T/run-b"
rm -rf "$T/fold-a" "$T/fold-b"
# command relays without board_id on one listen port: the second campaign's
# listen fails, and names the powercut that holds the port
port=$(free_port)
cmdnoid() { echo "{ \"driver\": \"command\", \"on\": \"echo on >> '$T/sw-$1'\", \"off\": \"echo off >> '$T/sw-$1'\" }"; }
board_cfg "$T/pa.json" it-port-a b1 "$port" "$(cmdnoid pa)"
board_cfg "$T/pb.json" it-port-b b2 "$port" "$(cmdnoid pb)"
"$PC" run "$T/pa.json" --results "$T/fold-a" --quiet --no-report > "$T/run-pa" 2>&1 &
pid=$!
check "one port: the first campaign listens" sh -c "for i in \$(seq 200); do
	grep -qs '\"ev\":\"relay_on\"\|\"ev\":\"power_on\"\|\"ev\":\"cycle_start\"' '$T/fold-a/events.jsonl' && exit 0; sleep 0.1; done; exit 1"
timeout -s INT 60 "$PC" run "$T/pb.json" --results "$T/fold-b" --quiet --no-report > "$T/run-pb" 2>&1
rc=$?
check "one port: the second campaign fails (exit 2, was $rc)" [ $rc -eq 2 ]
check "one port: its error names the other powercut, its pid and command line" \
	grep -qE "Address already in use: another powercut holds port $port \(pid $pid: .*powercut run $T/pa.json" "$T/run-pb"
kill -INT $pid
wait $pid
# check-config warns of a real board's command relay without board_id
cat > "$T/nb.json" <<JSON
{ "campaign": "it-noid", "cycles": 5, "listen": "0.0.0.0:7878", "key_file": "$T/nb.key",
  "boards": [ { "name": "rpi", "device": { "backend": "posix", "record_size": 4096, "path": "/dev/mmcblk0p3" },
    "relay": $(cmdnoid nb), "boot_timeout_ms": 60000, "off_ms": 3000 } ] }
JSON
"$PC" check-config "$T/nb.json" > "$T/nb.out" 2>&1
check "check-config: a command relay without board_id is warned of, naming the board" \
	grep -qF "boards[0].relay: a command relay without board_id is locked for this campaign only" "$T/nb.out"
jq '.boards[0].relay.board_id = "rpi-3"' "$T/nb.json" > "$T/nb2.json"
"$PC" check-config "$T/nb2.json" > "$T/nb2.out" 2>&1
check "...and not with one" sh -c "! grep -q 'without board_id' '$T/nb2.out'"
rm -rf "$T/fold-a" "$T/fold-b"
# one GPIO line, named by chip label and line name, and by chip path and offset,
# through the gpiosim shim (tests/gpiosim: the state file is the hardware)
if [ -f "$BIN/gpiosim.so" ] || env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s B="$BIN" gpiosim > "$T/shim.log" 2>&1; then
	printf 'chip gpiochip0 lines=8 label=relay-hat\nline gpiochip0 5 value=0 pull=0 name=RELAY_5\n' > "$T/gpio.state"
	asan=$(ldd "$PC" 2>/dev/null | awk '/libasan/ { print $3 }')
	board_cfg "$T/ga.json" it-board-a b1 "$(free_port)" '{ "driver": "gpiod", "chip": "relay-hat", "line": "RELAY_5" }'
	board_cfg "$T/gb.json" it-board-b slot7 "$(free_port)" '{ "driver": "gpiod", "chip": "/dev/gpiochip0", "line": 5 }'
	two_campaigns "one GPIO line" "$T/ga.json" "$T/gb.json" \
		env GPIOSIM_STATE="$T/gpio.state" LD_PRELOAD="${asan:+$asan:}$PWD/$BIN/gpiosim.so"
	check "one GPIO line: the refusal names the line" grep -qF "relay gpiod:gpiochip0:5 is in use" "$T/run-b"
else
	cat "$T/shim.log"
	bad "build the gpiosim shim in $BIN"
fi

# --- what `relay` by hand tells a command relay ---------------------------------
# PC_CONNECT and PC_KEY_FILE only when the configuration fixes them (a listen
# port, a key_file): never a made-up address or an empty path
envcfg() { # envcfg FILE TOP-LEVEL-KEYS
	cat > "$1" <<JSON
{ "campaign": "it-env", "cycles": 1, $2
  "boards": [ { "name": "b1", "relay": { "driver": "command",
    "on": "env | grep -E '^PC_' | sort > '$T/env.on'", "off": "true" } } ] }
JSON
}
envcfg "$T/e1.json" ""
"$PC" relay "$T/e1.json" b1 on > "$T/e1.out" 2>&1
rc=$?
check "port-0 listen, no key_file: exit 0 (was $rc)" [ $rc -eq 0 ]
check "port-0 listen, no key_file: relay on works" grep -q "relay on done" "$T/e1.out"
check "...and sets neither PC_CONNECT nor PC_KEY_FILE" sh -c "! grep -qE '^PC_(CONNECT|KEY_FILE)=' '$T/env.on'"
check "...but PC_BOARD and PC_ACTION" sh -c "grep -qx PC_BOARD=b1 '$T/env.on' && grep -qx PC_ACTION=on '$T/env.on'"
envcfg "$T/e2.json" "\"listen\": \"0.0.0.0:7878\", \"key_file\": \"$T/lab.key\","
PC_CONNECT=127.0.0.1:1 PC_KEY_FILE="" "$PC" relay "$T/e2.json" b1 on > "$T/e2.out" 2>&1
rc=$?
check "fixed listen and key_file: exit 0 (was $rc)" [ $rc -eq 0 ]
check "fixed listen and key_file: relay on works" grep -q "relay on done" "$T/e2.out"
check "...PC_CONNECT is the listen address (0.0.0.0 as 127.0.0.1)" grep -qx "PC_CONNECT=127.0.0.1:7878" "$T/env.on"
check "...PC_KEY_FILE the configured key" grep -qx "PC_KEY_FILE=$T/lab.key" "$T/env.on"
# a relative key_file is relative to the configuration's folder, not the working directory
envcfg "$T/e3.json" "\"key_file\": \"keys/lab.key\","
(cd / && "$PCA" check-config "$T/e3.json") > "$T/e3.chk" 2>&1
check "check-config from /: a missing relative key_file is named in the configuration's folder" \
	grep -qF "key_file: $T/keys/lab.key does not exist: \`powercut run\` would make a new key there" "$T/e3.chk"
mkdir -p "$T/keys" && "$PC" key new "$T/keys/lab.key" > /dev/null
(cd / && "$PCA" check-config "$T/e3.json") > "$T/e3.chk" 2>&1
check "check-config from /: the key made, no warning" grep -qx "configuration OK: campaign it-env, 1 board, 1 cycle" "$T/e3.chk"
(cd / && "$PCA" relay "$T/e3.json" b1 on) > "$T/e3.out" 2>&1
check "a relative key_file, relay from /: PC_KEY_FILE is in the configuration's folder" \
	grep -qx "PC_KEY_FILE=$T/keys/lab.key" "$T/env.on"
finish

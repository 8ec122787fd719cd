#!/bin/bash
# The authenticated link under attack (issue 8, acceptance 1). A campaign with
# deterministic cuts runs once undisturbed and once while rogue processes on
# loopback copy the board's hello, replay a recorded session, squat 64
# connections, and send oversized and out-of-range hellos -- and once more on
# a serial console with a second writer. The honest board's verdicts must be
# identical to the undisturbed run's, every rogue attempt must be on record in
# events.jsonl (a link_reject event, or counted in a link_reject_summary), and
# replay must agree.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

PEER="$TOOLS/pcpeer"
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	pkill -KILL -f "$T/" 2>/dev/null
	rm_T
}
trap 'pc_rc=$?; cleanup' EXIT
write_get "$T/get.sh"
verdicts() { jq -c '{cycle, verdict, records: {submitted: .records.submitted, acked: .records.acked}, counts, findings}' "$1/verdicts.jsonl" | sort; }

# ---- TCP: one board whose agent runs through a logging proxy (the recorded
# session a rogue replays later), with the sim's deterministic cut point
# The attacked run's first power-on waits (gate: a file) until the first
# squat of 64 connections has come and gone: the campaign, a second or two
# long, would otherwise end before the squatters it must have dealt with were
# closed, and their count would depend on how fast it ran. A boot that waits
# changes no verdict.
campaign_cfg() { # name port proxyport media [gate]
	local wait=""
	[ -z "${5:-}" ] || wait="while [ ! -e $5 ]; do sleep 0.05; done; "
	cat > "$T/$1.json" <<JSON
{ "campaign": "$1", "cycles": 10, "seed": 21, "listen": "127.0.0.1:$2",
  "boards": [ { "name": "a1", "device": { "backend": "posix", "record_size": 4096 },
    "relay": { "driver": "command",
      "on": "setsid sh -c '${wait}exec $PWD/$AGENT run --fresh-boot-id --device sim:$4 --sim-cut-after 150 --connect 127.0.0.1:$3 --board a1' >> $T/$1.agent.log 2>&1 & echo \$! > $T/$1.pid",
      "off": "kill -KILL \$(cat $T/$1.pid 2>/dev/null) 2>/dev/null; true",
      "get": "sh $T/get.sh $T/$1.pid" },
    "modes": ["fua", "flush"], "records_per_cycle": 40,
    "cut": { "at": "random", "window_ms": [5000, 6000] }, "work_timeout_ms": 10000,
    "boot_timeout_ms": 60000, "off_ms": 5 } ] }
JSON
}
pA=$(free_port); xA=$(free_port); pB=$(free_port); xB=$(free_port)
"$AGENT" prepare --device "sim:$T/mA.img" --size 1M --yes > /dev/null 2>&1
"$AGENT" prepare --device "sim:$T/mB.img" --size 1M --yes > /dev/null 2>&1
campaign_cfg undisturbed "$pA" "$xA" "$T/mA.img"
campaign_cfg attacked "$pB" "$xB" "$T/mB.img" "$T/squatted"
"$PEER" --proxy "$xA" "127.0.0.1:$pA" "$T/sessionA.log" & pids="$pids $!"
"$PEER" --proxy "$xB" "127.0.0.1:$pB" "$T/sessionB.log" & pids="$pids $!"
sleep 0.3

"$PC" run "$T/undisturbed.json" --results "$T/rA" --quiet --no-report > "$T/A.out" 2>&1
rc=$?
check "the undisturbed run passes (exit 0)" [ $rc -eq 0 ]
check "...and recorded its sessions through the proxy" grep -q '"type":"auth"' "$T/sessionA.log"
head -60 "$T/sessionA.log" > "$T/old-session.log"

# the hellos a rogue sends: copies of the genuine one, and crafted ones
jq -c 'select(.ev == "rx" and .msg.type == "hello") | .msg' "$T/rA/events.jsonl" | head -1 > "$T/copied-hello.json"
jq -c '.region.bytes = 1125899906842624 | .region.slots = 274877906943' "$T/copied-hello.json" > "$T/huge-hello.json"
jq -c '.queue.fua = 7 | .region.record_size = 1000' "$T/copied-hello.json" > "$T/bad-hello.json"
jq -c '.board = "nosuchboard"' "$T/copied-hello.json" > "$T/other-hello.json"
jq -c 'del(.nonce)' "$T/copied-hello.json" > "$T/nononce-hello.json"
head -c 9000 /dev/zero | tr '\0' 'x' > "$T/long-line"

"$PC" run "$T/attacked.json" --results "$T/rB" --quiet --no-report > "$T/B.out" 2>&1 & run=$!
rogue() { # name steps...: repeat until the campaign ends
	local name=$1; shift
	echo "  rogue $name: $*"
	( while kill -0 $run 2>/dev/null; do "$PEER" --connect "127.0.0.1:$pB" "$@" > /dev/null 2>&1; sleep 0.05; done ) &
	pids="$pids $!"
}
# a fresh copy of the board's latest genuine hello, with its own nonce or the original
( while kill -0 $run 2>/dev/null; do
	jq -c 'select(.ev == "rx" and .msg.type == "hello") | .msg' "$T/rB/events.jsonl" 2>/dev/null | tail -1 > "$T/latest-hello.json"
	[ -s "$T/latest-hello.json" ] && "$PEER" --connect "127.0.0.1:$pB" line:"$T/latest-hello.json" auth-bogus hold:100 > /dev/null 2>&1
	sleep 0.05; done ) & pids="$pids $!"
rogue copy line:"$T/copied-hello.json" auth-bogus hold:200
rogue replay lines:"$T/old-session.log" hold:300
# the squatters: 64 silent connections held 2.5 s, again and again; the
# gate opens once the first 64 are closed (pcpeer's exit 0: it dialled and
# held them all)
echo "  rogue squat: squat:64:2500"
( while kill -0 $run 2>/dev/null; do
	"$PEER" --connect "127.0.0.1:$pB" squat:64:2500 > /dev/null 2>&1 && touch "$T/squatted"
	sleep 0.05; done ) & pids="$pids $!"
rogue huge line:"$T/huge-hello.json" hold:100
rogue bad line:"$T/bad-hello.json" hold:100
rogue other line:"$T/other-hello.json" hold:100
rogue nononce line:"$T/nononce-hello.json" hold:100
rogue long line:"$T/long-line" hold:100
rogue notfirst raw:'{"type":"ack","v":1,"first":1,"n":40}' hold:100
wait $run
rc=$?
for p in $pids; do kill "$p" 2>/dev/null; done
check "the attacked run passes too (exit 0; was $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || tail -5 "$T/B.out"
check "10 verdicts in the undisturbed run" [ "$(wc -l < "$T/rA/verdicts.jsonl")" -eq 10 ]
check "10 verdicts in the run under attack" [ "$(wc -l < "$T/rB/verdicts.jsonl")" -eq 10 ]
check "the honest board's verdicts are identical to the undisturbed run's" \
	[ "$(verdicts "$T/rA")" = "$(verdicts "$T/rB")" ]
[ "$(verdicts "$T/rA")" = "$(verdicts "$T/rB")" ] || diff <(verdicts "$T/rA") <(verdicts "$T/rB") | head -6
# refusals on record: whole link_reject events, and those counted in the
# link_reject_summary events (by reason) once a peer passed its few whole ones
rejects() { jq -s "([.[] | select(.ev == \"link_reject\" and (.reason | test(\"$1\")))] | length) +
	([.[] | select(.ev == \"link_reject_summary\") | .reasons | to_entries[] | select(.key | test(\"$1\")) | .value] | add // 0)" \
	"$T/rB/events.jsonl"; }
check "copied hellos: refused at the proof, on record ($(rejects 'proof does not verify'))" [ "$(rejects 'proof does not verify')" -ge 1 ]
check "replayed session: on record ($(rejects 'proof|hello while|closed before'))" [ "$(rejects 'proof|hello while|closed before')" -ge 1 ]
check "squatters: closed, on record ($(rejects 'no hello within|too many connections|without a hello'))" \
	[ "$(rejects 'no hello within|too many connections|without a hello')" -ge 64 ]
check "oversized hello: refused, on record ($(rejects 'slots|bytes|region'))" [ "$(rejects 'slots|bytes|region')" -ge 1 ]
check "out-of-range hello: refused, on record ($(rejects 'queue.fua|record_size'))" [ "$(rejects 'queue.fua|record_size')" -ge 1 ]
check "unknown board: on record ($(rejects 'unknown board'))" [ "$(rejects 'unknown board')" -ge 1 ]
check "hello without a nonce: on record ($(rejects 'without a nonce'))" [ "$(rejects 'without a nonce')" -ge 1 ]
check "over-long line: on record ($(rejects 'longer than'))" [ "$(rejects 'longer than')" -ge 1 ]
check "a first line that is not a hello: on record ($(rejects 'not hello'))" [ "$(rejects 'not hello')" -ge 1 ]
check "replay of the attacked run agrees" "$PC" replay "$T/rB"
check "no rogue line reached the engine as the agent's" \
	[ "$(jq -s '[.[] | select(.ev == "rx_bad")] | length' "$T/rB/events.jsonl")" -eq 0 ]

# ---- serial: a second writer on the board's console (a serial link has no
# end-of-file: the cut plan's instant, after the sim's own cut, ends the cycle)
"$TOOLS/ptypair" "$T/ptys" & pids="$pids $!"
for _ in $(seq 300); do [ -s "$T/ptys" ] && break; sleep 0.1; done
host_end=$(sed -n 1p "$T/ptys"); board_end=$(sed -n 2p "$T/ptys")
serial_cfg() { # name media
	cat > "$T/$1.sh" <<SH
printf 'U-Boot 2023.01 (sim)\r\n'
exec "$PWD/$AGENT" run --fresh-boot-id --device "sim:$2" --sim-cut-after 150 --console "$board_end" --board s1 --boot-delay-ms 5
SH
	cat > "$T/$1.json" <<JSON
{ "campaign": "$1", "cycles": 8, "seed": 22,
  "boards": [ { "name": "s1", "device": { "backend": "posix", "record_size": 4096 },
    "link": { "type": "serial", "device": "$host_end", "baud": 115200 },
    "relay": { "driver": "command",
      "on": "setsid sh $T/$1.sh > $board_end 2>&1 & echo \$! > $T/$1.pid",
      "off": "kill -KILL -\$(cat $T/$1.pid) 2>/dev/null; true",
      "get": "sh $T/get.sh $T/$1.pid" },
    "modes": ["fua", "flush"], "records_per_cycle": 40,
    "cut": { "at": "random", "window_ms": [1500, 1600] }, "work_timeout_ms": 10000,
    "boot_timeout_ms": 8000, "off_ms": 5 } ] }
JSON
}
"$AGENT" prepare --device "sim:$T/sA.img" --size 1M --yes > /dev/null 2>&1
"$AGENT" prepare --device "sim:$T/sB.img" --size 1M --yes > /dev/null 2>&1
serial_cfg s-undisturbed "$T/sA.img"
serial_cfg s-attacked "$T/sB.img"
"$PC" run "$T/s-undisturbed.json" --results "$T/sA" --quiet --no-report > "$T/sA.out" 2>&1
rc=$?
check "serial: the undisturbed run passes" [ $rc -eq 0 ]
# what the second writer says: the first cycle's marked lines (an old session:
# hello, proof, tagged lines), forged acks and hellos, marked garbage
grep -a '@@PC ' "$T/sA/console/s1/cycle-1.log" | sed 's/.*@@PC /@@PC /' | tr -d '\r' | head -40 > "$T/s-old.txt"
"$PC" run "$T/s-attacked.json" --results "$T/sB" --quiet --no-report > "$T/sB.out" 2>&1 & run=$!
( while kill -0 $run 2>/dev/null; do
	while read -r l; do printf '%s\n' "$l"; sleep 0.01; done < "$T/s-old.txt"
	printf '@@PC {"type":"ack","v":1,"first":1,"n":40,"mac":"00000000000000000000000000000000"}\n'
	printf '@@PC {"type":"hello","v":1,"board":"s1"}\n'
	printf '@@PC this is not json\n'
	sleep 0.1; done > "$board_end" ) & writer=$!
pids="$pids $writer"
wait $run
rc=$?
kill $writer 2>/dev/null
check "serial: the attacked run passes (exit 0; was $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || tail -5 "$T/sB.out"
check "serial: the verdicts are identical to the undisturbed run's" [ "$(verdicts "$T/sA")" = "$(verdicts "$T/sB")" ]
[ "$(verdicts "$T/sA")" = "$(verdicts "$T/sB")" ] || diff <(verdicts "$T/sA") <(verdicts "$T/sB") | head -6
n=$(jq -s '([.[] | select(.ev == "link_reject")] | length) + ([.[] | select(.ev == "link_reject_summary") | .refused] | add // 0)' "$T/sB/events.jsonl")
check "serial: the second writer's lines are on record ($n link_reject events)" [ "$n" -ge 10 ]
tagged=$(jq -s '([.[] | select(.ev == "link_reject" and (.reason | test("tag")))] | length) +
	([.[] | select(.ev == "link_reject_summary") | .reasons | to_entries[] | select(.key | test("tag")) | .value] | add // 0)' "$T/sB/events.jsonl")
check "serial: its forged tagged lines were dropped ($tagged)" [ "$tagged" -ge 1 ]
check "serial: replay agrees" "$PC" replay "$T/sB"
finish

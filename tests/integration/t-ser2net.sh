#!/bin/bash
# Consoles over the network, through Debian's real ser2net (4.x, YAML
# configuration): a sim board whose agent talks on one end of a pty pair (the
# serial cable), ser2net exporting the other end, and the harness reaching it
# as link.device "tcp://", "telnet://" and "rfc2217://". Each mode runs a
# campaign with console capture and boot-stage timing as over a local tty.
# Then the network peer turns hostile (a proxy in front of ser2net): telnet
# sequences split byte by byte, junk negotiation, over-long lines, a peer that
# closes, one that stalls, one that goes away, one that is no telnet server:
# each break is an INFRA_ERROR naming the board and the address, never a
# crash or a hang.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

command -v ser2net > /dev/null || skip "ser2net is not installed (apt-get install ser2net)"
# Debian's python3 (a python3 earlier in PATH may be a slow shim)
PY=$(command -v /usr/bin/python3 || command -v python3) || skip "python3 is not installed"

pids=""
cleanup() {
	# shellcheck disable=SC2086
	stop_daemons $pids
	for f in "$T"/*.boardpid; do
		[ -s "$f" ] && kill -KILL -- "-$(cat "$f" 2> /dev/null)" 2> /dev/null
	done
	rm_T
}
trap 'pc_rc=$?; cleanup' EXIT
write_get "$T/get.sh"

# A cable (pty pair) and an emulated eMMC for board NAME; sets host_end, board_end.
cable() {
	"$TOOLS/ptypair" "$T/$1.ptys" & pids="$pids $!"
	for _ in $(seq 300); do [ -s "$T/$1.ptys" ] && break; sleep 0.1; done
	host_end=$(sed -n 1p "$T/$1.ptys"); board_end=$(sed -n 2p "$T/$1.ptys")
	"$AGENT" prepare --device "sim:$T/$1.img" --size 1M --yes > /dev/null 2>&1
	# the board: a boot banner, a kernel that logs (with a 0xFF byte: telnet
	# must double it on the wire and the harness undo that), the agent
	cat > "$T/$1.sh" <<SH
printf 'U-Boot 2023.01 (sim)\r\nStarting kernel ...\r\n'
printf '[    0.000000] Linux version 6.1.0-sim (noise \377 byte)\r\n'
board=\$\$
( while kill -0 \$board 2>/dev/null; do
  printf '[    %d.%06d] mmc0: new HS200 MMC card at address 0001\r\n' \$((RANDOM % 9)) \$RANDOM
  sleep 0.0\$((RANDOM % 9 + 1)); done ) &
printf '[    0.500000] random: crng init do'
exec "$PWD/$AGENT" run --fresh-boot-id --device "sim:$T/$1.img" --console "$board_end" --board $1 --boot-delay-ms 5
SH
}

# ser2net exporting NAME's host end: accepter ACC (e.g. "tcp,127.0.0.1,PORT")
# and the line it opens the pty with.
export_it() { # NAME ACCEPTER LINE
	cat > "$T/$1.yaml" <<Y
%YAML 1.1
---
connection: &$1
    accepter: $2
    connector: serialdev,$host_end,$3,local
    options:
      kickolduser: true
Y
	ser2net -n -c "$T/$1.yaml" -P "$T/$1.s2npid" > "$T/$1.s2nlog" 2>&1 &
	pids="$pids $!"
	for _ in $(seq 300); do [ -s "$T/$1.s2npid" ] && break; sleep 0.1; done
	sleep 0.3
}

# The campaign file for board NAME on console URL, CYCLES cycles.
campaign() { # NAME URL CYCLES [BAUD [OFF_MS]]
	cat > "$T/$1.json" <<JSON
{ "campaign": "it-$1", "cycles": $3, "seed": 9,
  "boards": [ { "name": "$1", "device": { "backend": "sim", "record_size": 4096 },
    "link": { "type": "serial", "device": "$2", "baud": ${4:-115200},
              "boot_patterns": ["U-Boot", "Starting kernel", "Linux version"] },
    "relay": { "driver": "command",
      "on": "setsid sh $T/$1.sh > $board_end 2>&1 & echo \$! > $T/$1.boardpid",
      "off": "kill -KILL -\$(cat $T/$1.boardpid) 2>/dev/null; true",
      "get": "sh $T/get.sh $T/$1.boardpid" },
    "modes": ["fua", "flush"], "records_per_cycle": 60,
    "cut": { "at": "random", "window_ms": [2, 30] }, "boot_timeout_ms": 4000, "off_ms": ${5:-5} } ] }
JSON
}

verdicts() { jq -s "[.[] | select(.verdict == \"$2\")] | length" "$T/$1/verdicts.jsonl"; }

# ---- 1. the three modes, against ser2net ----
# Three boards, each with its own cable, ser2net and campaign, all at once
# (they wait on boots and cuts more than they compute); their checks come
# after the hostile peer's (part 2), which runs meanwhile.
n=40
declare -A mode_run=()
for mode in tcp telnet rfc2217; do
	b=$mode
	cable $b
	port=$(free_port)
	case $mode in
	tcp) export_it $b "tcp,127.0.0.1,$port" 115200n81 ;;
	telnet) export_it $b "telnet,tcp,127.0.0.1,$port" 115200n81 ;;
	# the line starts at 9600: only RFC 2217 can have set 115200
	rfc2217) export_it $b "telnet(rfc2217),tcp,127.0.0.1,$port" 9600n81 ;;
	esac
	campaign $b "$mode://127.0.0.1:$port" $n
	(
		timeout 300 "$PC" run "$T/$b.json" --results "$T/r-$b" --quiet --no-report > "$T/$b.out" 2>&1 &
		run=$!
		# while connected, the line runs at what the connection set (ser2net
		# puts the pty back as it found it when the connection closes)
		speed=""
		while kill -0 $run 2> /dev/null; do
			[ -n "$speed" ] || speed=$(stty -F "$host_end" speed 2> /dev/null | grep -x 115200)
			sleep 0.2
		done
		echo "$speed" > "$T/$b.speed"
		wait $run
		echo $? > "$T/$b.rc"
	) &
	mode_run[$b]=$!
done
modes_checked() {
	local mode b rc speed
	for mode in tcp telnet rfc2217; do
		b=$mode
		wait "${mode_run[$b]}"
		rc=$(cat "$T/$b.rc" 2> /dev/null)
		speed=$(cat "$T/$b.speed" 2> /dev/null)
		check "$mode: $n cycles over ser2net pass (exit 0, or 3 INCONCLUSIVE: a late relay)" passed_or_late "${rc:-1}" "$T/r-$b"
		[ "${rc:-1}" -eq 0 ] || tail -5 "$T/$b.out"
		check "$mode: $n PASS verdicts" [ "$(verdicts r-$b PASS)" -eq $n ]
		check "$mode: cuts caught writes in flight" \
			[ "$(jq -s '[.[] | select(.counts.not_written + .counts.torn > 0)] | length' "$T/r-$b/verdicts.jsonl")" -gt 0 ]
		check "$mode: a console log per cycle" [ "$(ls "$T/r-$b/console/$b" | wc -l)" -ge $n ]
		check "$mode: the console logs hold the noise" grep -q "mmc0: new HS200" "$T/r-$b/console/$b/cycle-20.log"
		check "$mode: ...and the agent's marked lines" grep -q '@@PC {"type":"hello"' "$T/r-$b/console/$b/cycle-20.log"
		check "$mode: boot stages were timed" \
			[ "$(jq -s '[.[] | select(.ev == "boot_stage" and .pattern == "Starting kernel")] | length' "$T/r-$b/events.jsonl")" -ge $n ]
		check "$mode: no line was garbled" [ "$(jq -s '[.[] | select(.ev == "rx_bad")] | length' "$T/r-$b/events.jsonl")" -eq 0 ]
		# the board's 0xFF byte arrives as one byte: telnet's doubling undone, no
		# negotiation (IAC WILL/DO ...) left in the log
		check "$mode: the board's 0xFF byte arrives as itself" \
			sh -c "LC_ALL=C grep -c \"(noise $(printf '\377') byte)\" '$T/r-$b/console/$b/cycle-20.log' | grep -qx 1"
		check "$mode: no telnet sequence in the console log" \
			sh -c "! LC_ALL=C grep -q \"$(printf '\377')[$(printf '\372-\376')]\" '$T'/r-$b/console/$b/*.log"
		check "$mode: replay reproduces every verdict" "$PC" replay "$T/r-$b"
		if [ $mode = rfc2217 ]; then
			check "rfc2217: the harness set the line to 115200 (ser2net opened it at 9600)" [ "$speed" = 115200 ]
		else
			check "$mode: ser2net's own rate stood (115200 in its configuration)" [ "$speed" = 115200 ]
		fi
		kill "$(cat "$T/$b.s2npid" 2> /dev/null)" 2> /dev/null
	done
}

# ---- 2. the network peer turns hostile ----
# A proxy in front of a real ser2net forwards both ways, fragmenting and
# injecting junk; told to (a file it watches), it waits for the agent's next
# hello -- the board is then booting, and the harness waiting -- and instead
# of forwarding it closes the connection, stalls, or sends what no telnet
# server would; or it goes away for good.
cat > "$T/proxy.py" <<'PY'
import os, select, socket, sys, time
listen_port, up_port, ctl = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", listen_port)); ls.listen(8)
IAC, SB, SE, WILL, DO, NOP, AYT = 255, 250, 240, 251, 253, 241, 246
HELLO = b'@@PC {"type":"hello"'
cli = up = None
armed = ""
tail = b""
injected = False
def closeall():
    global cli, up
    for s in (cli, up):
        if s:
            s.close()
    cli = up = None
def send(s, d):
    try:
        s.sendall(d)
    except OSError:
        closeall()
deadline = time.time() + 900
while time.time() < deadline:
    if os.path.exists(ctl):
        armed = open(ctl).read().strip(); os.unlink(ctl)
        if armed == "away":
            closeall(); ls.close(); time.sleep(900)
    rd, _, _ = select.select([ls] + [s for s in (cli, up) if s], [], [], 0.05)
    for s in rd:
        if s is ls:
            c, _ = ls.accept()
            closeall()
            cli = c
            up = socket.create_connection(("127.0.0.1", up_port))
            break
        try:
            d = s.recv(4096)
        except OSError:
            d = b""
        if not d:
            closeall(); break
        if s is cli:
            send(up, d); break
        seen = tail + d
        tail = seen[-len(HELLO):]
        if armed and HELLO in seen:
            act, armed = armed, ""
            if act == "close":
                closeall(); break
            if act == "stall":
                # forward nothing, read nothing, until the harness gives up
                # on this peer and closes (at most 30 s): a stall lasts as
                # long as it takes to be seen, whatever the machine's load
                p = select.poll()
                p.register(cli, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
                end = time.time() + 30
                while time.time() < end and not p.poll(50):
                    pass
                print("proxy: stalled %.1f s" % (30 - (end - time.time())), file=sys.stderr)
                closeall(); break
            if act == "sb":
                send(cli, bytes([IAC, SB, 24]) + b"x" * 6000); break
        if not injected:
            # junk the harness must ignore: NOP, AYT, options it refuses, a
            # subnegotiation it does not know (with an escaped IAC), a line
            # longer than any the protocol allows
            d = bytes([IAC, NOP, IAC, AYT, IAC, WILL, 24, IAC, DO, 31, IAC, SB, 24, 1, IAC, IAC, 7, IAC, SE]) \
                + b"\r\n" + b"y" * 20000 + b"\r\n" + d
            injected = True
        # every byte on its own: telnet sequences split at every point
        for i in range(len(d)):
            if cli:
                send(cli, d[i:i + 1])
            if i % 64 == 0:
                time.sleep(0.0005)
PY

b=hostile
cable $b
s2nport=$(free_port)
export_it $b "telnet(rfc2217),tcp,127.0.0.1,$s2nport" 115200n81
pport=$(free_port)
"$PY" "$T/proxy.py" "$pport" "$s2nport" "$T/ctl" & pids="$pids $!"; proxy=$!
for _ in $(seq 100); do (exec 3<> "/dev/tcp/127.0.0.1/$pport") 2> /dev/null && break; sleep 0.1; done
url="rfc2217://127.0.0.1:$pport"
ctl() { echo "$1" > "$T/ctl"; for _ in $(seq 300); do [ -e "$T/ctl" ] || return; sleep 0.1; done; }
# wait until the campaign has N verdicts (bounded)
at_verdicts() { for _ in $(seq 600); do [ "$(cat "$T/r-$b/verdicts.jsonl" 2>/dev/null | wc -l)" -ge "$1" ] && return; sleep 0.1; done; }
reasons() { jq -s -r '.[] | select(.ev == "infra" or .ev == "give_up") | .reason' "$T/r-$b/events.jsonl"; }

campaign $b "$url" 40 115200 300
timeout 300 "$PC" run "$T/$b.json" --results "$T/r-$b" --quiet --no-report > "$T/$b.out" 2>&1 &
run=$!
at_verdicts 8; ctl close	# the peer closes
at_verdicts 16; ctl stall	# the peer stops until the harness closes (it allows 1 s)
at_verdicts 24; ctl sb		# no telnet server would send this
wait $run
rc=$?
if ! check "hostile: the campaign finished (no crash, no hang: exit $rc, 0 or 3)" rc_in $rc 0 3; then
	tail -5 "$T/$b.out"
fi
check "hostile: one verdict per cycle" [ "$(wc -l < "$T/r-$b/verdicts.jsonl")" -eq 40 ]
check "hostile: the other cycles passed" [ "$(verdicts r-$b PASS)" -ge 34 ]
check "hostile: no cycle failed" [ "$(verdicts r-$b FAIL)" -eq 0 ]
check "hostile: no BOOT_FAIL blamed on the device" [ "$(verdicts r-$b BOOT_FAIL)" -eq 0 ]
check "hostile: a closed connection is an INFRA_ERROR naming the address" \
	sh -c "$(declare -f reasons); T='$T' b=$b reasons | grep -q 'console $url: the peer closed the connection'"
# a stall shows as whichever the harness sees first: its TIMING-MARK probe
# unanswered, or its own output not taken (when it had a line to send); both
# name the stall. The reasons are printed when neither is there.
if ! check "hostile: a stalled peer is an INFRA_ERROR" \
	sh -c "$(declare -f reasons); T='$T' b=$b reasons | grep -Eq 'console $url: stalled: (no answer to a telnet TIMING-MARK|it has not taken the host.s output)'"; then
	T=$T b=$b reasons | sed 's/^/    reason: /'
fi
check "hostile: a peer that is no telnet server is an INFRA_ERROR" \
	sh -c "$(declare -f reasons); T='$T' b=$b reasons | grep -q 'console $url: not a telnet server'"
check "hostile: the warnings name the board" grep -q "board hostile cycle [0-9]*: console $url" "$T/$b.out"
check "hostile: split sequences and junk garbled no line" \
	[ "$(jq -s '[.[] | select(.ev == "rx_bad")] | length' "$T/r-$b/events.jsonl")" -eq 0 ]
check "hostile: the 20000-byte line reached the console log" \
	sh -c "grep -l 'yyyyyyyyyyyyyyyyyyyy' '$T'/r-$b/console/$b/*.log | grep -q ."
check "hostile: replay reproduces every verdict" "$PC" replay "$T/r-$b"

# A peer that goes away for good: INFRA_ERROR cycles, then the board is
# given up, and the harness exits promptly.
rm -rf "$T/r-$b"
campaign $b "$url" 30 115200 300
timeout 120 "$PC" run "$T/$b.json" --results "$T/r-$b" --quiet --no-report > "$T/$b.out" 2>&1 &
run=$!
at_verdicts 5; ctl away
t0=$(date +%s)
wait $run
rc=$?
check "gone: the board is given up (exit 3: INCOMPLETE), not hung (exit $rc)" [ $rc -eq 3 ]
check "gone: within seconds ($(( $(date +%s) - t0 )) s)" [ $(( $(date +%s) - t0 )) -lt 60 ]
check "gone: the give-up names the console" \
	sh -c "$(declare -f reasons); T='$T' b=$b reasons | grep -q 'infrastructure errors in a row, the last: console $url'"
kill $proxy 2> /dev/null

# the three modes' campaigns, which ran beside part 2
modes_checked

# Nothing there at the start: refused like a tty that does not exist.
campaign nobody "tcp://127.0.0.1:$(free_port)" 2
expect_fail "refused at the start: the campaign does not start, naming board and address" \
	"board nobody: cannot connect to its console tcp://127.0.0.1:" "$PC" run "$T/nobody.json" --results "$T/r-nobody" --quiet
expect_fail "a bad console URL is a configuration error" "link.device: 'telnet://127.0.0.1': missing :PORT" \
	sh -c "sed 's|tcp://127.0.0.1:[0-9]*|telnet://127.0.0.1|' '$T/nobody.json' > '$T/bad.json'; '$PC' check-config '$T/bad.json'"
expect_fail "an unknown scheme too" "unknown scheme 'ssh'" \
	sh -c "sed 's|tcp://|ssh://|' '$T/nobody.json' > '$T/bad.json'; '$PC' check-config '$T/bad.json'"
finish

#!/bin/bash
# A process without the campaign key connects to the harness's listen port
# again and again (issue 26): each connection is refused, and the refusals are
# bounded on record -- the first few per peer address as link_reject events,
# the rest counted in link_reject_summary events -- so events.jsonl and
# stderr stay small, the summaries count every refused connection, and the
# honest boards' verdicts all PASS. The flood lasts 5 s here, the campaign
# longer; t-link-flood-soak (make check-long) runs this test with the flood a
# minute long (PC_FLOOD_S=60, issue 26's acceptance). Loopback only, bounded
# in count (3,000,000 connections at most: a quiet fast machine made 500,000
# in 50 s) and time.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
command -v jq > /dev/null || skip "jq is not installed"
command -v python3 > /dev/null || skip "python3 is not installed (it is the flooding client)"
pids=""
trap 'pc_rc=$?; for p in $pids; do kill $p 2>/dev/null; done; rm_T' EXIT
EV_MAX=65536	# bytes of refusal records in events.jsonl, for the whole minute
ERR_MAX=16384	# bytes of stderr, for the whole run
FLOOD_S=${PC_FLOOD_S:-5}	# how long the flood lasts (the soak: 60)
case "$FLOOD_S" in ''|*[!0-9]*|0) skip "PC_FLOOD_S=$FLOOD_S: seconds, 1 or more" ;; esac
FLOOD_MAX=3000000	# connections at most
CYCLES=$((FLOOD_S * 2 / 3 > 5 ? FLOOD_S * 2 / 3 : 5))	# per board: cycles of >= 2 s off outlive the flood (40 for the minute)

p=$(free_port)
[ "$p" != 0 ] || skip "no free port on 127.0.0.1"
cat > "$T/flood.json" <<JSON
{ "campaign": "flood", "cycles": $CYCLES, "seed": 26, "listen": "127.0.0.1:$p",
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "4M", "record_size": 4096, "profile": "honest" },
    "records_per_cycle": 100, "flush_every": 8, "queue_depth": 4,
    "cut": { "at": "random", "window_ms": [2, 60] }, "off_ms": 2000 },
  "boards": [ { "name": "h1", "modes": ["fua", "flush"] },
              { "name": "h2", "pattern": "random", "modes": ["fua", "flush"] } ] }
JSON
"$PC" run "$T/flood.json" --results "$T/r" --quiet --no-report > "$T/run.out" 2> "$T/run.err" & run=$!
pids="$pids $run"
# the client: a line that is not a hello, then wait for the harness to close;
# a connection counts once the harness closed it (refused, whatever the reason);
# it waits for the port itself (a probe would be one more refusal)
cat > "$T/flood.py" <<'PY'
import socket, sys, time, os
port, secs, most, pid = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
end, n = time.time() + secs, 0
def alive():
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False
while time.time() < end and n < most and alive():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        time.sleep(0.01)
        continue
    try:
        s.sendall(b'{"type":"nope"}\n')
        s.settimeout(10)
        while s.recv(4096):
            pass
        n += 1
    except OSError:
        n += 1		# reset by the harness: refused too
    finally:
        s.close()
print(n)
PY
t0=$(date +%s)
python3 "$T/flood.py" "$p" $FLOOD_S $FLOOD_MAX "$run" > "$T/flood.n" 2> "$T/flood.err"
secs=$(( $(date +%s) - t0 ))
# a connection open when the harness ends is closed, not refused: the count
# is exact only when the campaign outlived the flood ($CYCLES cycles of >= 2 s)
kill -0 $run 2> /dev/null
alive=$?
wait $run
rc=$?
n=$(cat "$T/flood.n")
echo "  flood: $n connections in $secs s refused by the harness's count on the client side"
check "the campaign under the flood passes (exit 0, or 3 INCONCLUSIVE; was $rc)" passed_or_late "$rc" "$T/r"
check "the flood made many connections (${n:-0} >= 200)" [ "${n:-0}" -ge 200 ]
check "the flood lasted its $FLOOD_S s, or reached its count ($secs s >= $FLOOD_S, or ${n:-0} = $FLOOD_MAX)" \
	sh -c '[ "$1" -ge "$2" ] || [ "$3" -ge "$4" ]' sh "$secs" $FLOOD_S "${n:-0}" $FLOOD_MAX
check "$((2 * CYCLES)) verdicts, all PASS" \
	[ "$(jq -s '[.[] | select(.verdict == "PASS")] | length' "$T/r/verdicts.jsonl")" -eq $((2 * CYCLES)) ]
whole=$(jq -s '[.[] | select(.ev == "link_reject")] | length' "$T/r/events.jsonl")
sums=$(jq -s '[.[] | select(.ev == "link_reject_summary")] | length' "$T/r/events.jsonl")
counted=$(jq -s '[.[] | select(.ev == "link_reject_summary") | .refused] | add // 0' "$T/r/events.jsonl")
echo "  events.jsonl: $whole link_reject, $sums link_reject_summary counting $counted"
check "a handful of whole link_reject events ($whole <= 20)" [ "$whole" -le 20 ]
check "at least one summary ($sums)" [ "$sums" -ge 1 ]
check "the campaign outlived the flood" [ $alive -eq 0 ]
check "every refused connection on record: $whole whole + $counted counted = $n" [ $((whole + counted)) -eq "$n" ]
check "each summary's reasons add up to its count" \
	[ "$(jq -s '[.[] | select(.ev == "link_reject_summary") | select(([.reasons[]] | add) + (.other_reasons // 0) != .refused)] | length' "$T/r/events.jsonl")" -eq 0 ]
evb=$(grep -E '"ev":"link_reject(_summary)?"' "$T/r/events.jsonl" | wc -c)
errb=$(wc -c < "$T/run.err")
echo "  bytes: refusal records in events.jsonl $evb (of $(wc -c < "$T/r/events.jsonl")), stderr $errb"
check "refusal records in events.jsonl under $EV_MAX bytes ($evb)" [ "$evb" -le $EV_MAX ]
check "stderr under $ERR_MAX bytes ($errb)" [ "$errb" -le $ERR_MAX ]
check "replay agrees, the summaries ignored by the engine" "$PC" replay "$T/r"
finish

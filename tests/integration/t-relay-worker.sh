#!/bin/bash
# Relays off the poll loop (relay/relay_worker.h): each board's relay runs
# in a worker process of its own, so
#   - a board whose relay takes 2 s to switch (sim relay switch_ms) does not
#     hold up another board: the fast board keeps booting, writing and being
#     cut while the slow relay switches, and both pass;
#   - every cut says how long its relay took (relay_us) and, for a random
#     instant, how late the power went against it (late_us);
#   - a relay that hangs past its deadline is that board's INFRA_ERROR, the
#     other board passes, and the campaign ends;
#   - a worker killed mid-campaign is replaced: the campaign goes on, one
#     verdict per cycle per board.
# No wall-clock assertion beyond the slow relay's own sleep (a lower bound).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo "t-relay-worker: relays in workers of their own"

cfg() { # NAME CYCLES SLOW-RELAY-JSON
	cat > "$T/$1.json" <<JSON
{ "campaign": "rw-$1", "cycles": $2, "seed": 3, "listen": "127.0.0.1:0",
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096, "profile": "honest" },
    "modes": ["fua", "flush"], "records_per_cycle": 60, "flush_every": 4,
    "cut": { "at": "random", "window_ms": [5, 40] }, "off_ms": 5, "boot_timeout_ms": 20000 },
  "boards": [ { "name": "fast" }, { "name": "slow", "relay": $3 } ] }
JSON
}

# --- a slow relay beside a fast one
cfg slow 3 '{ "driver": "sim", "boot_delay_ms": 5, "switch_ms": 2000 }'
"$PC" run "$T/slow.json" --results "$T/s" --agent "$AGENT" --quiet --no-report > "$T/s.out" 2>&1
rc=$?
# a cut that takes the relay 2 s comes after the board's 60 records: its
# device may read INCONCLUSIVE (no cut met a write), exit 3, never FAIL
res=$("$PC" report --format json "$T/s" 2>/dev/null | jq -r .result)
check "slow relay: the campaign passes, or is INCONCLUSIVE (exit $rc, $res)" \
	sh -c "{ [ $rc -eq 0 ] && [ '$res' = PASS ]; } || { [ $rc -eq 3 ] && [ '$res' = INCONCLUSIVE ]; }"
E=$T/s/events.jsonl
check "slow relay: 3 PASS per board" \
	[ "$(jq -s '[.[] | select(.verdict == "PASS")] | group_by(.board) | map(length) | join(",")' -r "$T/s/verdicts.jsonl")" = "3,3" ]
check "every cut says how long its relay took (relay_us)" \
	[ "$(jq -s '[.[] | select(.ev == "cut" and (.relay_us | type) != "number")] | length' "$E")" -eq 0 ]
check "every random-instant cut says how late it was (late_us)" \
	[ "$(jq -s '[.[] | select(.ev == "cut" and .trigger == "random instant" and (.late_us | type) != "number")] | length' "$E")" -eq 0 ]
check "the verdicts carry them (cut.relay_us), and the instant the power went (cut.power_off_ms >= at_ms)" \
	[ "$(jq -s '[.[] | select(.cut and (.cut.relay_us | type) == "number" and .cut.power_off_ms >= .cut.at_ms)] | length' "$T/s/verdicts.jsonl")" -ge 4 ]
check "the slow relay took its 2 s at every cut" \
	[ "$(jq -s '[.[] | select(.ev == "cut" and .board == "slow" and .relay_us < 2000000)] | length' "$E")" -eq 0 ]
# while the slow relay switched the slow board on (from its power_on to its
# agent's hello: 2 s at least), the fast board went on being cut
during=$(jq -s '
	([.[] | select(.board == "slow" and .cycle == 1 and .ev == "power_on")][0].t) as $from |
	([.[] | select(.board == "slow" and .cycle == 1 and .ev == "rx" and .msg.type == "hello")][0].t) as $to |
	[.[] | select(.board == "fast" and .ev == "cut" and .t > $from and .t < $to)] | length' "$E")
check "the fast board is cut while the slow relay switches on ($during cuts)" [ "$during" -gt 0 ]

# --- a relay that hangs: its deadline is 2 x timeout_ms + off_ms + 2 s (4 s)
cfg hang 3 '{ "driver": "sim", "boot_delay_ms": 5, "switch_ms": 60000, "timeout_ms": 1000 }'
"$PC" run "$T/hang.json" --results "$T/h" --agent "$AGENT" --quiet --no-report > "$T/h.out" 2>&1
rc=$?
V=$T/h/verdicts.jsonl
check "hung relay: the campaign ends, INCOMPLETE (exit $rc, wanted 3)" [ $rc -eq 3 ]
check "hung relay: the fast board passes every cycle" \
	[ "$(jq -s '[.[] | select(.board == "fast" and .verdict == "PASS")] | length' "$V")" -eq 3 ]
check "hung relay: the hung board's cycles are INFRA_ERROR, naming the hang" \
	[ "$(jq -s '[.[] | select(.board == "slow" and .verdict == "INFRA_ERROR" and (.reason | test("relay worker did not answer within")))] | length' "$V")" -ge 1 ]
check "hung relay: no other verdict for the hung board" \
	[ "$(jq -s '[.[] | select(.board == "slow" and .verdict != "INFRA_ERROR")] | length' "$V")" -eq 0 ]
check "hung relay: the board is given up after 3 in a row" grep -q "giving up: 3 infrastructure errors in a row" "$T/h.out"

# --- a worker killed mid-campaign
cfg kill 12 '{ "driver": "sim", "boot_delay_ms": 5 }'
"$PC" run "$T/kill.json" --results "$T/k" --agent "$AGENT" --quiet --no-report > "$T/k.out" 2>&1 &
pc=$!
killed=""
for _ in $(seq 100); do
	# the workers: the harness's children that are powercut themselves
	# (the agents they start are powercut-agent, in groups of their own)
	for w in $(pgrep -P $pc -x powercut 2>/dev/null); do
		if [ -e "$T/k/verdicts.jsonl" ] && [ "$(grep -c . "$T/k/verdicts.jsonl")" -ge 4 ]; then
			kill -KILL "$w" && killed=$w
			break 2
		fi
	done
	sleep 0.1
done
wait $pc
rc=$?
check "killed worker: one was killed (pid ${killed:-none})" [ -n "$killed" ]
check "killed worker: the campaign ends (exit $rc: 0, or 3 if the kill cost a cycle)" [ $rc -eq 0 -o $rc -eq 3 ]
check "killed worker: it said so and started a new one" grep -q "relay worker died" "$T/k.out"
check "killed worker: one verdict per cycle per board" \
	[ "$(jq -s 'group_by(.board) | map([.[].cycle] | unique | length) | join(",")' -r "$T/k/verdicts.jsonl")" = "12,12" ]
# the killed worker's agent dies with it (PR_SET_PDEATHSIG); a moment to go
left=""
for _ in $(seq 300); do left=$(pgrep -f "$T/k/boards/"); [ -z "$left" ] && break; sleep 0.1; done
check "killed worker: no agent left running (${left:-none})" [ -z "$left" ]
finish

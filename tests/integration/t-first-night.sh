#!/bin/bash
# The first night (issue 37): a lab mistake in the middle of a campaign is
# never the part's verdict. A device verdict (BOOT_FAIL, "the device is
# dead") needs positive evidence against the device (docs/verdicts.md, "What
# counts as evidence"): the board known to have lost power and booted, and
# the device shown to be what failed. Two mistakes made after PASS cycles:
#   - the relay wired to another board, the board under test left on: a
#     `command` relay whose off does nothing. Its agent exits when the host
#     hangs up and nothing starts it again: the console shows no boot, the
#     cause is "no power cut happened". An agent started again on the same
#     boot (a respawn) comes back with the same boot id: "the relay did not
#     cut power"; on a serial link with boot ids the agent makes itself
#     (--fresh-boot-id), the console that showed a boot at the first
#     power-on and none since says the same;
#   - the agent binary removed from the board: the console shows the kernel
#     and the init script's own line (agent/powercut-agent.init):
#     "the agent did not start", quoting it.
# Each: no BOOT_FAIL, no FAIL, the board given up after three in a row
# naming the relay and the board, exit 3 (INCOMPLETE), never 1; replay
# agrees. And a truly dead device (the sim's brick profile, whose agent says
# the device does not respond) is still BOOT_FAIL, the device dead, exit 1.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
command -v jq > /dev/null || skip "jq is not installed"
REAL="$PWD/$AGENT"
INIT="$PWD/agent/powercut-agent.init"

# the first INFRA_ERROR's reason of folder $1, shown
first_reason() { echo "    e.g. cycle $(jq -rs 'map(select(.verdict == "INFRA_ERROR")) | .[0] | "\(.cycle): \(.reason)"' "$1/verdicts.jsonl")"; }
# report $1 says INCOMPLETE, the board given up, the last reason starting $2
given_up() { grep -q '^  result: INCOMPLETE' "$1" && joined "$1" | grep -q "given up at cycle [0-9]*: 3 infrastructure errors in a row, the last: $2"; }
# outcomes of a folder, in cycle order
outcomes() { jq -rs 'sort_by(.cycle) | map(.verdict) | join(" ")' "$1/verdicts.jsonl"; }
# no verdict of folder $1 blames the device
blameless() { [ "$(jq -s '[.[] | select(.verdict == "BOOT_FAIL" or .verdict == "FAIL" or .dead_device)] | length' "$1/verdicts.jsonl")" -eq 0 ]; }
# the INFRA_ERROR verdicts of folder $1 whose reason matches regex $2: how many
infra_with() { jq -s --arg re "$2" '[.[] | select(.verdict == "INFRA_ERROR" and (.reason | test($re)))] | length' "$1/verdicts.jsonl"; }

# ---- 1. the relay cuts nothing: the board, started once, stays on
cable_start
"$AGENT" prepare --device "sim:$T/b.img" --size 1M --yes > /dev/null 2>&1
# on: the board's first power-on boots it (a banner, then its agent, which
# exits when the host hangs up); every later "on" and "off" switch another
# board. RESPAWN=1: an agent started again at each "on" on the same boot.
cat > "$T/on.sh" <<SH
if [ -e "$T/booted" ] && [ "\${RESPAWN:-0}" != 1 ]; then exit 0; fi
[ -e "$T/booted" ] || printf '[    0.000000] Linux version 6.1.0-sim (powercut test)\r\n' > $board_end
touch "$T/booted"
setsid "$REAL" run --device "sim:$T/b.img" --connect "\$PC_CONNECT" --board b1 --key "\$PC_KEY_FILE" \
	--connect-timeout-ms 3000 < /dev/null > $board_end 2>&1 &
SH
nocut() { # NAME
	rm -f "$T/booted"
	cat > "$T/$1.json" <<JSON
{ "campaign": "$1", "cycles": 5, "seed": 3, "listen": "127.0.0.1:0",
  "boards": [ { "name": "b1", "device": { "backend": "posix", "record_size": 4096 },
    "link": { "type": "tcp", "console": "$host_end", "boot_patterns": ["Linux version"] },
    "relay": { "driver": "command", "on": "sh $T/on.sh", "off": "true" },
    "records_per_cycle": 16, "modes": ["flush"], "cut": { "at": "random", "window_ms": [5, 20] },
    "boot_timeout_ms": 1500, "boot_retries": 0, "off_ms": 5 } ] }
JSON
}
nocut nocut
"$PC" run "$T/nocut.json" --results "$T/nocut" --quiet --no-report > "$T/nocut.out" 2>&1
rc=$?
echo "  relay that cuts nothing: $(outcomes "$T/nocut"), exit $rc"
first_reason "$T/nocut"
check "no cut: no BOOT_FAIL, no FAIL, no dead device" blameless "$T/nocut"
check "...exit 3 (INCOMPLETE: an infrastructure stop), not 1 (was $rc)" [ "$rc" -eq 3 ]
check "...three INFRA_ERRORs naming it: no power cut happened, the console showed no boot" \
	[ "$(infra_with "$T/nocut" "^no power cut happened: the console showed no boot since power-on.*relay command.*board b1")" -eq 3 ]
check "...quoting the console's evidence (its log, empty)" \
	[ "$(infra_with "$T/nocut" "console log [^ ]*/console/b1/cycle-[0-9]+\\.log is empty")" -eq 3 ]
check "...the infra events say why, as evidence" \
	[ "$(jq -s '[.[] | select(.ev == "infra" and .cause == "no_cut" and .console == "empty" and .evidence.power == null)] | length' "$T/nocut/events.jsonl")" -eq 3 ]
check "...the board given up, naming the relay and the board" \
	grep -q "board b1: giving up: 3 infrastructure errors in a row, the last: no power cut happened.*relay command" "$T/nocut.out"
check "...never 'the device is dead'" sh -c "! grep -q 'device is dead' '$T/nocut.out' '$T/nocut/events.jsonl'"
"$PC" report "$T/nocut" > "$T/nocut.rep" 2>&1
check "...the report: INCOMPLETE, the board given up for the cut that did not happen" \
	given_up "$T/nocut.rep" "no power cut happened"
check "...replay agrees" "$PC" replay --quiet "$T/nocut"

nocut respawn
RESPAWN=1 "$PC" run "$T/respawn.json" --results "$T/respawn" --quiet --no-report > "$T/respawn.out" 2>&1
rc=$?
echo "  the same, the agent started again on the same boot: $(outcomes "$T/respawn"), exit $rc"
first_reason "$T/respawn"
check "respawned agent, same boot: no BOOT_FAIL, no FAIL" blameless "$T/respawn"
check "...exit 3, not 1 (was $rc)" [ "$rc" -eq 3 ]
check "...INFRA_ERROR: the relay did not cut power, the boot id unchanged" \
	[ "$(infra_with "$T/respawn" "^the relay did not cut power: the agent's boot id [0-9a-f-]+ did not change since the last power-on \\(board b1, relay command\\)")" -eq 3 ]
check "...replay agrees" "$PC" replay --quiet "$T/respawn"

# ... and on a serial link with boot ids the agent makes itself
# (--fresh-boot-id, as a board of processes has): each new agent has a new
# one, so only the console can tell. It showed a boot at the first power-on,
# and none since: the agent was started again on the same boot.
rm -f "$T/booted"
cat > "$T/on-serial.sh" <<SH
[ -s "$T/apid" ] && kill -KILL \$(cat "$T/apid") 2> /dev/null
[ -e "$T/booted" ] || printf '[    0.000000] Linux version 6.1.0-sim (powercut test)\r\n' > $board_end
touch "$T/booted"
setsid "$REAL" run --fresh-boot-id --device "sim:$T/b.img" --console $board_end --board b1 --key "\$PC_KEY_FILE" \
	< /dev/null > /dev/null 2>&1 &
echo \$! > "$T/apid"
SH
cat > "$T/fresh.json" <<JSON
{ "campaign": "fresh", "cycles": 5, "seed": 3,
  "boards": [ { "name": "b1", "device": { "backend": "posix", "record_size": 4096 },
    "link": { "type": "serial", "device": "$host_end" },
    "relay": { "driver": "command", "on": "sh $T/on-serial.sh", "off": "true" },
    "records_per_cycle": 16, "modes": ["flush"], "cut": { "at": "random", "window_ms": [5, 20] },
    "boot_timeout_ms": 3000, "boot_retries": 0, "off_ms": 5 } ] }
JSON
"$PC" run "$T/fresh.json" --results "$T/fresh" --quiet --no-report > "$T/fresh.out" 2>&1
rc=$?
[ -s "$T/apid" ] && kill -KILL "$(cat "$T/apid")" 2> /dev/null
echo "  a serial link, each agent with a boot id of its own: $(outcomes "$T/fresh"), exit $rc"
first_reason "$T/fresh"
check "fresh boot ids, no boot on the console: no PASS, no BOOT_FAIL, no FAIL" \
	sh -c "$(declare -f blameless); blameless '$T/fresh' && [ \$(jq -s '[.[] | select(.verdict == \"PASS\")] | length' '$T/fresh/verdicts.jsonl') -eq 0 ]"
check "...exit 3, not 0 or 1 (was $rc)" [ "$rc" -eq 3 ]
check "...INFRA_ERROR: the relay did not cut power, the console showed no boot since power-on" \
	[ "$(infra_with "$T/fresh" "^the relay did not cut power: the console showed no boot since power-on .*though an earlier power-on printed \"Linux version 6.1.0-sim.*--fresh-boot-id.*\\(board b1, relay command\\)")" -eq 3 ]
check "...replay agrees" "$PC" replay --quiet "$T/fresh"

# ---- 2. the agent binary removed after PASS cycles: a board that boots at
# each power-on (its banner on the console), whose shipped init script then
# says the agent is missing; the relay really cuts (kills the board)
"$AGENT" prepare --device "sim:$T/g.img" --size 1M --yes > /dev/null 2>&1
mkdir -p "$T/bin"
ln -s "$REAL" "$T/bin/powercut-agent"
cat > "$T/board.sh" <<SH
n=\$(cat "$T/boots" 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n > "$T/boots"
[ "\$n" -gt 3 ] && rm -f "$T/bin/powercut-agent"
printf '[    0.000000] Linux version 6.1.0-sim (powercut test)\r\n'
printf '[    0.412000] Run /sbin/init as init process\r\n'
printf 'DEVICE=sim:%s\nLINK="--connect %s"\nBOARD=b1\nKEY=%s\nAGENT_OPTS=--fresh-boot-id\n' \
	"$T/g.img" "\$PC_CONNECT" "\$PC_KEY_FILE" > "$T/conf"
AGENT="$T/bin/powercut-agent" CONF="$T/conf" PIDFILE="$T/pid" CONSOLE=$board_end sh "$INIT" start
exec sleep 60
SH
cat > "$T/gone.json" <<JSON
{ "campaign": "gone", "cycles": 6, "seed": 5, "listen": "127.0.0.1:0",
  "boards": [ { "name": "b1", "device": { "backend": "posix", "record_size": 4096 },
    "link": { "type": "tcp", "console": "$host_end" },
    "relay": { "driver": "command",
      "on": "setsid sh $T/board.sh > $board_end 2>&1 & echo \$! > $T/gpid",
      "off": "kill -KILL -\$(cat $T/gpid) 2>/dev/null; true" },
    "records_per_cycle": 16, "modes": ["flush"], "cut": { "at": "random", "window_ms": [5, 20] },
    "boot_timeout_ms": 1500, "boot_retries": 0, "off_ms": 5 } ] }
JSON
"$PC" run "$T/gone.json" --results "$T/gone" --quiet --no-report > "$T/gone.out" 2>&1
rc=$?
echo "  agent removed after 3 boots: $(outcomes "$T/gone"), exit $rc"
first_reason "$T/gone"
check "agent removed: cycles 1 and 2 PASS first" \
	[ "$(jq -rs 'sort_by(.cycle) | .[:2] | map(.verdict) | join(" ")' "$T/gone/verdicts.jsonl")" = "PASS PASS" ]
check "...then no BOOT_FAIL, no FAIL, no dead device" blameless "$T/gone"
check "...exit 3, not 1 (was $rc)" [ "$rc" -eq 3 ]
check "...three INFRA_ERRORs: the agent did not start, quoting the init script's line" \
	[ "$(infra_with "$T/gone" "^the agent did not start \\(console: .*powercut-agent: [^ ]*/bin/powercut-agent is missing or not executable")" -eq 3 ]
check "...the power cut known from the console: the kernel's line after power-on" \
	[ "$(jq -s '[.[] | select(.ev == "infra" and .cause == "agent_not_started" and .console == "kernel" and (.evidence.power | test("^the console showed a boot after power-on: \"Linux version 6.1.0-sim")))] | length' "$T/gone/events.jsonl")" -eq 3 ]
check "...cycle 3's writes, the last that ran, are never rewritten as BOOT_FAIL" \
	[ "$(jq -r 'select(.cycle == 3) | .verdict' "$T/gone/verdicts.jsonl")" != BOOT_FAIL ]
check "...the board given up, never 'the device is dead'" \
	sh -c "grep -q 'board b1: giving up: 3 infrastructure errors in a row, the last: the agent did not start' '$T/gone.out' && ! grep -q 'device is dead' '$T/gone.out'"
"$PC" report "$T/gone" > "$T/gone.rep" 2>&1
check "...the report: INCOMPLETE, the board given up for the agent that did not start" \
	given_up "$T/gone.rep" "the agent did not start"
check "...replay agrees" "$PC" replay --quiet "$T/gone"

# ---- 3. a truly dead device: the sim's brick profile (the fault matrix's
# brick board) is still BOOT_FAIL, the device dead
sed 's/@CYCLES@/6/' bench/fault-matrix.json | jq '.campaign = "brick" |
	.boards |= map(select(.name == "brick") | .boot_timeout_ms = 1500 | .boot_retries = 0 | .device.rate = 1.0)' \
	> "$T/brick.json"
"$PC" run "$T/brick.json" --results "$T/brick" --quiet --no-report > "$T/brick.out" 2>&1
rc=$?
echo "  brick: $(outcomes "$T/brick"), exit $rc"
echo "    e.g. $(jq -rs 'map(select(.dead_device)) | .[0] | "cycle \(.cycle): \(.reason)"' "$T/brick/verdicts.jsonl")"
check "brick: exit 1 (was $rc)" [ "$rc" -eq 1 ]
check "...the last three cycles BOOT_FAIL, the third naming the device dead" \
	[ "$(jq -sc 'sort_by(.cycle) | .[-3:] | map([.verdict, .dead_device])' "$T/brick/verdicts.jsonl")" = \
	  '[["BOOT_FAIL",null],["BOOT_FAIL",null],["BOOT_FAIL",3]]' ]
check "...each on the evidence: the relay's off ends the board, the agent says the device does not respond" \
	[ "$(jq -s '[.[] | select(.ev == "boot_fail" and (.evidence.power | test("sim relay")) and (.evidence.device | test("^the agent said: ")))] | length' "$T/brick/events.jsonl")" -eq 3 ]
check "...replay agrees" "$PC" replay --quiet "$T/brick"
finish

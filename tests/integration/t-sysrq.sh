#!/bin/bash
# The sysrq "cut": the agent reboots its board without syncing when the host
# asks; the device keeps power. On a sim eMMC whose flush lies, a power cut
# loses acknowledged data -- a sysrq crash does not, because the card keeps
# its cache powered: a crash test, not a power cut.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

check "prepare the board's emulated eMMC (lying-flush)" "$AGENT" prepare --device "sim:$T/m.img" --size 1M --yes
: > "$T/trigger"
# The board: the agent, and a stand-in for the kernel's sysrq 'b' (reboot now).
cat > "$T/board.sh" <<SH
: > "$T/trigger"
"$PWD/$AGENT" run --fresh-boot-id --device "sim:$T/m.img" --sim-profile lying-flush --connect "\$PC_CONNECT" --board s1 \\
	--sysrq "$T/trigger" --boot-delay-ms 5 &
agent=\$!
while kill -0 \$agent 2>/dev/null; do
	if [ -s "$T/trigger" ]; then echo reboot >> "$T/reboots"; kill -KILL 0; fi
	sleep 0.002
done
SH
cat > "$T/c.json" <<JSON
{ "campaign": "it-sysrq", "cycles": 20, "seed": 6, "listen": "127.0.0.1:0",
  "boards": [ { "name": "s1", "device": { "backend": "sim", "size": "1M", "record_size": 4096 },
    "relay": { "driver": "sysrq", "on": "setsid sh $T/board.sh > /dev/null 2>&1 &" },
    "modes": ["flush"], "records_per_cycle": 60, "cut": { "at": "mix", "window_ms": [2, 30] },
    "boot_timeout_ms": 5000, "off_ms": 5 } ] }
JSON
"$PC" run "$T/c.json" --results "$T/r" --quiet --no-report > "$T/out" 2>&1
rc=$?
check "20 crash cycles on a lying-flush card pass (exit 0, or 3 INCONCLUSIVE; was $rc)" passed_or_late $rc "$T/r"
[ $rc -eq 0 ] || tail -5 "$T/out"
check "every cut was a sysrq crash" [ "$(jq -s '[.[] | select(.ev == "cut" and (.how | startswith("sysrq")))] | length' "$T/r/events.jsonl")" -eq 20 ]
check "the agent pulled the trigger each time" [ "$(wc -l < "$T/reboots")" -ge 20 ]
check "acknowledged data survived every crash" [ "$(jq -s '[.[] | .counts.lost_acked] | add' "$T/r/verdicts.jsonl")" -eq 0 ]
check "records were acknowledged" [ "$(jq -s '[.[] | .records.acked] | add' "$T/r/verdicts.jsonl")" -gt 0 ]
check "replay reproduces every verdict" "$PC" replay "$T/r"
# The first campaign's last board cannot be powered off (a sysrq relay has no
# off): its agent lives on, retrying the harness that is gone, and holds the
# emulated eMMC. It goes before the next campaign's agent opens that eMMC
# (at load 8 the new agent found it held and closed the link).
pkill -KILL -f "$T/board.sh" 2> /dev/null
pkill -KILL -f "sim:$T/m.img" 2> /dev/null
gone() { ! pgrep -f "sim:$T/m.img" > /dev/null; }
for _ in $(seq 300); do gone && break; sleep 0.1; done
check "the first campaign's last agent is gone" gone
# an agent started without --sysrq refuses to crash anything
cat > "$T/c2.json" <<JSON
{ "campaign": "it-sysrq-refused", "cycles": 1, "listen": "127.0.0.1:0",
  "boards": [ { "name": "s2", "device": { "backend": "sim", "size": "1M", "record_size": 4096 },
    "relay": { "driver": "sysrq", "on": "setsid $PWD/$AGENT run --fresh-boot-id --device sim:$T/m.img --connect \$PC_CONNECT --board s2 > /dev/null 2>&1 &" },
    "modes": ["flush"], "records_per_cycle": 20, "cut": { "at": "random", "window_ms": [1, 5] },
    "boot_timeout_ms": 3000, "boot_retries": 0, "off_ms": 5 } ] }
JSON
"$PC" run "$T/c2.json" --results "$T/r2" --quiet --no-report > "$T/out2" 2>&1
check "without --sysrq the agent refuses, and says so" grep -q "crash refused" "$T/r2/events.jsonl"
pkill -KILL -f "sim:$T/m.img .*--board s2" 2>/dev/null	# this test's only: another beside it may have a board s2
finish

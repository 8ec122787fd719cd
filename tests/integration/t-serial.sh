#!/bin/bash
# The serial console link: a sim board whose agent talks over a pseudo-terminal
# pair (a null-modem cable) that also carries boot and kernel log noise,
# including noise glued in front of the agent's lines. 100 cycles, zero
# violations, every cycle's console captured, boot stages timed.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cable_start
check "prepare the board's emulated eMMC" "$AGENT" prepare --device "sim:$T/m.img" --size 1M --yes

# The board: a boot banner, the agent, and a kernel that keeps logging (in the
# same session, so the cut kills all of it).
cat > "$T/board.sh" <<SH
printf 'U-Boot 2023.01 (sim)\r\nStarting kernel ...\r\n'
printf '[    0.000000] Linux version 6.1.0-sim (noise)\r\n'
board=\$\$
( while kill -0 \$board 2>/dev/null; do
  printf '[    %d.%06d] mmc0: new HS200 MMC card at address 0001\r\n' \$((RANDOM % 9)) \$RANDOM
  sleep 0.00\$((RANDOM % 9 + 1)); done ) &
# a kernel line cut short: the agent's HELLO lands right after it
printf '[    0.500000] random: crng init do'
exec "$PWD/$AGENT" run --fresh-boot-id --device "sim:$T/m.img" --console "$board_end" --board s1 --boot-delay-ms 5
SH
write_get "$T/get.sh"
cat > "$T/c.json" <<JSON
{ "campaign": "it-serial", "cycles": 100, "seed": 9,
  "boards": [ { "name": "s1", "device": { "backend": "posix", "record_size": 4096 },
    "link": { "type": "serial", "device": "$host_end", "baud": 115200,
              "boot_patterns": ["U-Boot", "Starting kernel", "Linux version"] },
    "relay": { "driver": "command",
      "on": "setsid sh $T/board.sh > $board_end 2>&1 & echo \$! > $T/pid",
      "off": "kill -KILL -\$(cat $T/pid) 2>/dev/null; true",
      "get": "sh $T/get.sh $T/pid" },
    "modes": ["fua", "flush"], "records_per_cycle": 60,
    "cut": { "at": "random", "window_ms": [2, 30] }, "boot_timeout_ms": 5000, "off_ms": 5 } ] }
JSON
"$PC" run "$T/c.json" --results "$T/r" --quiet --no-report > "$T/out" 2>&1
rc=$?
check "100 cycles over the serial link pass (exit 0, or 3 INCONCLUSIVE: a late relay; was $rc)" passed_or_late $rc "$T/r"
[ $rc -eq 0 ] || tail -5 "$T/out"
check "100 PASS verdicts" [ "$(jq -s '[.[] | select(.verdict == "PASS")] | length' "$T/r/verdicts.jsonl")" -eq 100 ]
check "cuts caught writes in flight" [ "$(jq -s '[.[] | select(.counts.not_written + .counts.torn > 0)] | length' "$T/r/verdicts.jsonl")" -gt 0 ]
check "a console log per cycle" [ "$(ls "$T/r/console/s1" | wc -l)" -ge 100 ]
check "the console logs hold the noise" grep -q "mmc0: new HS200" "$T/r/console/s1/cycle-50.log"
check "...and the agent's marked lines" grep -q '@@PC {"type":"hello"' "$T/r/console/s1/cycle-50.log"
check "boot stages were timed" [ "$(jq -s '[.[] | select(.ev == "boot_stage" and .pattern == "Starting kernel")] | length' "$T/r/events.jsonl")" -ge 100 ]
check "the HELLO behind the cut-short kernel line was found" [ "$(jq -s '[.[] | select(.ev == "rx_bad")] | length' "$T/r/events.jsonl")" -eq 0 ]
check "replay reproduces every verdict" "$PC" replay "$T/r"
finish

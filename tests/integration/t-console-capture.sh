#!/bin/bash
# A TCP agent link that also captures the board's serial console: the agent
# speaks over TCP, the board's boot banner and the agent's own log go to a
# pseudo-terminal pair (the serial cable), and the harness captures that
# console into each cycle's console log and times the boot stages from it,
# as on a serial link, without ever taking a protocol line from it (a line
# there that looks like the agent's is the board's output, nothing more).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo "t-console-capture: a tcp link with the board's console captured"

cable_start
check "prepare the board's emulated eMMC" "$AGENT" prepare --device "sim:$T/m.img" --size 1M --yes

cat > "$T/board.sh" <<SH
printf 'U-Boot 2024.01 (sim)\r\nStarting kernel ...\r\n'
# what a serial-link agent's hello would look like: on a tcp link, noise
printf '@@PC {"type":"hello","v":1,"board":"t1"}\r\n'
exec "$PWD/$AGENT" run --fresh-boot-id --device "sim:$T/m.img" --connect "\$PC_CONNECT" --key "$T/agent.key" \
	--board t1 --boot-delay-ms 5
SH
write_get "$T/get.sh"
cfg() { # LINK-JSON
	cat <<JSON
{ "campaign": "it-console", "cycles": 8, "seed": 5, "listen": "127.0.0.1:0", "key_file": "$T/agent.key",
  "boards": [ { "name": "t1", "device": { "backend": "posix", "record_size": 4096 },
    "link": $1,
    "relay": { "driver": "command",
      "on": "setsid sh $T/board.sh > $board_end 2>&1 & echo \$! > $T/pid",
      "off": "kill -KILL -\$(cat $T/pid) 2>/dev/null; true",
      "get": "sh $T/get.sh $T/pid" },
    "modes": ["fua", "flush"], "records_per_cycle": 60,
    "cut": { "at": "mix", "window_ms": [2, 30] }, "boot_timeout_ms": 5000, "off_ms": 5 } ] }
JSON
}
cfg "{ \"type\": \"tcp\", \"console\": \"$host_end\", \"baud\": 115200, \"boot_patterns\": [\"U-Boot\", \"Starting kernel\"] }" > "$T/c.json"
"$PC" run "$T/c.json" --results "$T/r" --quiet --no-report > "$T/out" 2>&1
rc=$?
check "8 cycles over the tcp link pass (exit 0, or 3 INCONCLUSIVE; was $rc)" passed_or_late $rc "$T/r"
check "...one PASS per cycle" [ "$(jq -s '[.[] | select(.verdict == "PASS")] | length' "$T/r/verdicts.jsonl")" -eq 8 ]
logs=0
for n in $(seq 8); do grep -q "U-Boot 2024.01 (sim)" "$T/r/console/t1/cycle-$n.log" 2>/dev/null && logs=$((logs + 1)); done
check "every cycle's console log holds the board's banner ($logs of 8)" [ "$logs" -eq 8 ]
check "...and what followed it on the console (the noise line)" \
	sh -c "cat '$T/r/console/t1/'cycle-*.log | grep -q '\"type\":\"hello\"'"
stages=$(jq -s '[.[] | select(.ev == "boot_stage")] | group_by(.pattern) | map(length) | join(",")' -r "$T/r/events.jsonl")
check "every power-on timed both boot stages (counts per pattern: $stages)" \
	[ "$(jq -s '[.[] | select(.ev == "boot_stage" and .pattern == "U-Boot")] | length' "$T/r/events.jsonl")" -ge 9 ]
check "no protocol line was taken from the console (no link_reject, no rx over it)" \
	[ "$(jq -s '[.[] | select(.ev == "link_reject")] | length' "$T/r/events.jsonl")" -eq 0 ]
check "the resolved configuration keeps the console" \
	[ "$(jq -r '.config.boards[0].link.console' "$T/r/campaign.json")" = "$host_end" ]
check "replay reproduces every verdict" "$PC" replay "$T/r"

cfg '{ "type": "tcp", "baud": 115200 }' > "$T/bad.json"
expect_fail "baud on a tcp link without a console is refused, saying why" \
	"'baud' and 'boot_patterns' on a tcp link are for its 'console'" "$PC" check-config "$T/bad.json"
cfg '{ "type": "tcp", "console": "ftp://x:1" }' > "$T/bad2.json"
expect_fail "a console URL of another scheme is refused" "boards[0].link.console: 'ftp://x:1': unknown scheme 'ftp'" \
	"$PC" check-config "$T/bad2.json"
cfg '{ "type": "tcp", "console": "" }' > "$T/bad3.json"
expect_fail "an empty console is refused" "boards[0].link.console: empty: name the board's serial console" \
	"$PC" check-config "$T/bad3.json"
finish

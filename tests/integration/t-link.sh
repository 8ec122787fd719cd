#!/bin/bash
# The authenticated link's rules, one at a time: an agent the host drops
# before the challenge tries again (an honest board never turns BOOT_FAIL for
# it); an agent with another key is refused, on record, and says what to
# check; a board whose boot id does not change did not lose power, so its
# cycle is not judged; an agent without a key does not start.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

PEER="$TOOLS/pcpeer"
pids=""
trap 'pc_rc=$?; for p in $pids; do kill $p 2>/dev/null; done; pkill -KILL -f "$T/" 2>/dev/null; rm_T' EXIT
write_get "$T/get.sh"
board_cfg() { # name port agent-connect extra-agent-args media cycles
	cat > "$T/$1.json" <<JSON
{ "campaign": "$1", "cycles": $6, "seed": 3, "listen": "127.0.0.1:$2",
  "boards": [ { "name": "k1", "device": { "backend": "posix", "record_size": 4096 },
    "relay": { "driver": "command",
      "on": "setsid $PWD/$AGENT run $4 --device sim:$5 --connect $3 --board k1 --connect-timeout-ms 4000 >> $T/$1.log 2>&1 & echo \$! > $T/$1.pid",
      "off": "kill -KILL \$(cat $T/$1.pid 2>/dev/null) 2>/dev/null; true",
      "get": "sh $T/get.sh $T/$1.pid" },
    "records_per_cycle": 20, "cut": { "at": "mix", "window_ms": [2, 20] },
    "boot_timeout_ms": 6000, "boot_retries": 0, "off_ms": 5 } ] }
JSON
}
"$AGENT" prepare --device "sim:$T/m.img" --size 1M --yes > /dev/null 2>&1

# ---- dropped before the challenge: the agent starts over
p=$(free_port); x=$(free_port)
"$PEER" --proxy-drop "$x" "127.0.0.1:$p" "$T/drops.log" & pids="$pids $!"
board_cfg drop "$p" "127.0.0.1:$x" --fresh-boot-id "$T/m.img" 6
"$PC" run "$T/drop.json" --results "$T/rd" --quiet --no-report > "$T/drop.out" 2>&1
rc=$?
check "every agent's first connection was dropped ($(grep -c dropped "$T/drops.log"))" [ "$(grep -c dropped "$T/drops.log")" -ge 6 ]
check "...and each tried again and got in: exit 0, or 3 INCONCLUSIVE (was $rc)" passed_or_late $rc "$T/rd"
check "...6 PASS" [ "$(jq -s '[.[] | select(.verdict == "PASS")] | length' "$T/rd/verdicts.jsonl")" -eq 6 ]
check "...saying so" grep -q "trying again" "$T/drop.log"

# ---- another key
p=$(free_port)
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/wrong.key"; echo >> "$T/wrong.key"; chmod 600 "$T/wrong.key"
board_cfg wrongkey "$p" "127.0.0.1:$p" "--fresh-boot-id --key $T/wrong.key" "$T/m.img" 2
"$PC" run "$T/wrongkey.json" --results "$T/rw" --quiet --no-report > "$T/wrongkey.out" 2>&1
rc=$?
check "an agent with another key: nothing judged (exit 3: INCOMPLETE; was $rc)" [ $rc -eq 3 ]
check "...its proofs refused, on record" \
	[ "$(jq -s '[.[] | select(.ev == "link_reject" and (.reason | test("proof does not verify")))] | length' "$T/rw/events.jsonl")" -ge 1 ]
check "...INFRA_ERROR, never BOOT_FAIL or FAIL" \
	[ "$(jq -s '[.[] | .verdict] | unique == ["INFRA_ERROR"]' "$T/rw/verdicts.jsonl")" = true ]
check "...and the agent says what to check" grep -q "is --key the campaign's key" "$T/wrongkey.log"

# ---- a boot id that does not change (the kernel's, on this host: no power was cut)
p=$(free_port)
board_cfg sameboot "$p" "127.0.0.1:$p" "" "$T/m.img" 3
"$PC" run "$T/sameboot.json" --results "$T/rs" --quiet --no-report > "$T/sameboot.out" 2>&1
check "the same boot id at the next power-on: that cycle is INFRA_ERROR" \
	[ "$(jq -s '[.[] | select(.verdict == "INFRA_ERROR" and (.reason | test("boot id")))] | length' "$T/rs/verdicts.jsonl")" -ge 1 ]
check "...and never PASS after the first" \
	[ "$(jq -s '[.[] | select(.cycle > 1 and .verdict == "PASS")] | length' "$T/rs/verdicts.jsonl")" -eq 0 ]
check "replay agrees" "$PC" replay "$T/rs"

# ---- no key at all
expect_fail "run without a key refuses to start" "--key FILE" env -u PC_KEY_FILE "$AGENT" run --device "sim:$T/m.img" --connect 127.0.0.1:1 --board k1
chmod 644 "$T/wrong.key"
expect_fail "a key others can read is refused" "chmod 600" "$AGENT" run --key "$T/wrong.key" --device "sim:$T/m.img" --connect 127.0.0.1:1 --board k1
finish

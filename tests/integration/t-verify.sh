#!/bin/bash
# Cold data: each cycle checks the slots the cut cycle wrote plus a seeded
# sample of cold slots, and every full_every cycles the whole region. Damage
# to a cold slot between two runs of a campaign is found and named
# collateral; the policy of each cycle is recorded in its verdict.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cat > "$T/c.json" <<JSON
{ "campaign": "it-verify", "cycles": 10, "seed": 5,
  "defaults": { "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "2M", "record_size": 4096 },
    "records_per_cycle": 40, "cut": { "at": "random", "window_ms": [2, 30] }, "off_ms": 5,
    "verify": { "full_every": 4, "cold_sample": 16 } },
  "boards": [ { "name": "v1", "modes": ["fua", "flush"],
                "policy": { "flush": { "torn": "violation" } } } ] }
JSON
"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet --no-report > "$T/out" 2>&1
check "fua cycles pass" [ "$(jq -s '[.[] | select(.mode == "fua" and .verdict != "PASS")] | length' "$T/r/verdicts.jsonl")" -eq 0 ]
check "by this policy an unacknowledged torn record in flush mode is a violation" \
	[ "$(jq -s '[.[] | select(.mode == "flush") | select((.verdict == "FAIL") != (.counts.torn > 0 and .counts.lost_acked == 0))] | length' "$T/r/verdicts.jsonl")" -eq 0 ]
check "partial scans check the written slots plus 16 cold ones" \
	[ "$(jq -s '[.[] | select(.scan.full == false and .scan.cold_checked == 16)] | length' "$T/r/verdicts.jsonl")" -ge 5 ]
check "every 4th boot scans the whole region" \
	[ "$(jq -s '[.[] | select(.scan.full == true)] | length' "$T/r/verdicts.jsonl")" -ge 2 ]
check "the policy is recorded per cycle" \
	[ "$(jq -r 'select(.mode == "flush") | .policy.torn_unacked' "$T/r/verdicts.jsonl" | sort -u)" = "violation" ]
check "fua keeps the default policy" \
	[ "$(jq -r 'select(.mode == "fua") | .policy.torn_sector_unacked' "$T/r/verdicts.jsonl" | sort -u)" = "violation" ]
# flip bytes in a cold slot: 10 cycles x 40 records used slots 0..399; slot 480 is cold
slot=480; lba=$((8 + slot * 8 + 3))
printf '\xde\xad\xbe\xef' | dd of="$T/r/boards/v1/media.img" bs=1 seek=$((lba * 512 + 100)) conv=notrunc status=none
"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --cycles 16 --quiet --no-report > "$T/out2" 2>&1
check "the damage was seen at a boot with no writes pending, and reported" grep -q "reported in the next verdict" "$T/out2"
check "resumed with more cycles: 16 verdicts" [ "$(grep -c . "$T/r/verdicts.jsonl")" -eq 16 ]
f=$(jq -c '.findings[] | select(.class == "collateral")' "$T/r/verdicts.jsonl" | head -1)
check "the damaged cold slot is reported as collateral" [ -n "$f" ]
check "...naming the slot ($slot)" [ "$(printf '%s' "$f" | jq .slot)" -eq $slot ]
check "...and the sector" [ "$(printf '%s' "$f" | jq .sector)" -eq 3 ]
check "...once, not every cycle after" [ "$(jq -c '.findings[] | select(.class == "collateral")' "$T/r/verdicts.jsonl" | wc -l)" -eq 1 ]
check "replay agrees" "$PC" replay "$T/r"
finish

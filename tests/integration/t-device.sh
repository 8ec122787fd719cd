#!/bin/bash
# Device-level outcomes: a superblock copy that goes bad and a device whose
# identity changes -- each a finding in the next verdict, never a crash -- and
# both copies gone: the agent refuses the region (no scan, no write; the host
# never imposes the geometry it remembers), so the board is given up.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cat > "$T/c.json" <<JSON
{ "campaign": "it-device", "cycles": 4, "seed": 5,
  "defaults": { "relay": { "driver": "sim", "boot_delay_ms": 5 }, "device": { "backend": "sim", "size": "1M" },
    "records_per_cycle": 30, "cut": { "at": "random", "window_ms": [2, 20] }, "off_ms": 5 },
  "boards": [ { "name": "d1", "modes": ["fua"] } ] }
JSON
media="$T/r/boards/d1/media.img"
run() { "$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet --no-report --cycles "$1" > "$T/out.$1" 2>&1; }
finding() { jq -c ".findings[] | select(.what == \"$1\")" "$T/r/verdicts.jsonl"; }
run 4
check "4 clean cycles" [ "$(jq -s '[.[] | select(.verdict == "PASS")] | length' "$T/r/verdicts.jsonl")" -eq 4 ]
dd if=/dev/zero of="$media" bs=512 count=1 conv=notrunc status=none
run 6
check "superblock A lost: a collateral finding" [ "$(finding superblock | jq -r .copy)" = "A" ]
check "...and the cycle is FAIL" [ "$(jq -r 'select(.cycle == 5) | .verdict' "$T/r/verdicts.jsonl")" = "FAIL" ]
# a different card in the slot: same bytes, new identity (the sim's serial is
# kept beside its media, <media>.id, and a new card has none yet: its CID then
# follows the new media's inode)
cp "$media" "$media.new" && mv "$media.new" "$media" && rm -f "$media.id"
run 8
check "a changed CID is reported" [ "$(finding identity | jq -r .field | head -1)" = "cid" ]
# both copies gone: the agent cannot tell this is its region, so it neither
# scans nor writes, and the host never imposes the geometry it remembers
dd if=/dev/zero of="$media" bs=512 count=1 seek=$((2048 - 8)) conv=notrunc status=none
sum_before=$(sha256sum < "$media")
"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet --no-report --cycles 10 > "$T/out.10" 2>&1; rc=$?
check "both superblocks lost: the run ends (exit 1: cycle 5's FAIL stands; was $rc)" [ $rc -eq 1 ]
check "...saying the region is not usable" grep -q "no usable powercut region" "$T/out.10"
# the copy lost is a device finding in the first verdict after it was seen
# (docs/design.md section 6); the cycles the agent then refuses are INFRA_ERROR
check "...copy B's loss: a finding in exactly one verdict, a FAIL" \
	[ "$(jq -c 'select(.cycle > 8) | [.verdict, [.findings[]? | select(.what == "superblock") | .copy]]' "$T/r/verdicts.jsonl" | head -1)" = '["FAIL",["B"]]' ]
check "...every later cycle INFRA_ERROR, neither PASS nor FAIL" \
	[ "$(jq -s '[.[] | select(.cycle > 9) | .verdict] | unique == ["INFRA_ERROR"]' "$T/r/verdicts.jsonl")" = true ]
check "...and the agent wrote nothing to the media" [ "$(sha256sum < "$media")" = "$sum_before" ]
check "replay agrees with every verdict" "$PC" replay "$T/r"
finish

#!/bin/bash
# The region's continuity over a campaign (issue 9): a region replaced
# between two runs (the medium lost and prepared again: a new UUID) and a
# superblock copy rewritten by "the device" are device-level findings, each
# in exactly one verdict, and the device's report is never PASS; the
# campaign goes on against the new region only after the finding.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cfg() { # cfg NAME
	cat > "$T/$1.json" <<JSON
{ "campaign": "it-$1", "cycles": 6, "seed": 3,
  "defaults": { "relay": { "driver": "sim", "boot_delay_ms": 2 },
    "device": { "backend": "sim", "size": "2M", "record_size": 4096, "seed": 11 },
    "records_per_cycle": 20, "cut": { "at": "random", "window_ms": [2, 20] }, "off_ms": 2,
    "boot_retries": 1, "boot_timeout_ms": 4000 },
  "boards": [ { "name": "c1", "modes": ["fua"] } ] }
JSON
}
what() { # what DIR WHAT: findings with that "what" in every verdict
	jq -c --arg w "$2" '.findings[]? | select(.what == $w)' "$1/verdicts.jsonl" | wc -l
}

# 1. the medium lost between two runs: the relay prepares a new one
cfg rep
"$PC" run "$T/rep.json" --results "$T/rep" --agent "$AGENT" --quiet --no-report > "$T/out1" 2>&1
check "a first run passes" [ "$(jq -s '[.[] | select(.verdict != "PASS")] | length' "$T/rep/verdicts.jsonl")" -eq 0 ]
rm -f "$T/rep/boards/c1/media.img"
"$PC" run "$T/rep.json" --results "$T/rep" --agent "$AGENT" --cycles 12 --quiet --no-report > "$T/out2" 2>&1
rc=$?
check "the run does not exit 0 (exit $rc)" [ $rc -ne 0 ]
check "region_replaced: in exactly one verdict" [ "$(what "$T/rep" region_replaced)" -eq 1 ]
v=$(jq -c 'select([.findings[]? | select(.what == "region_replaced")] | length > 0)' "$T/rep/verdicts.jsonl")
check "...a FAIL" [ "$(printf '%s' "$v" | jq -r .verdict)" = FAIL ]
check "...naming the old and the new UUID" \
	[ "$(printf '%s' "$v" | jq -r '.findings[] | select(.what == "region_replaced") | .changes.uuid.before != .changes.uuid.after')" = true ]
check "...a device-level finding" \
	[ "$(printf '%s' "$v" | jq -r '.findings[] | select(.what == "region_replaced") | .subject')" = device ]
check "the campaign went on: 12 verdicts" [ "$(grep -c . "$T/rep/verdicts.jsonl")" -eq 12 ]
check "...its later cycles judged against the new region" \
	[ "$(jq -s '[.[] | select(.cycle > 8 and .verdict == "PASS")] | length' "$T/rep/verdicts.jsonl")" -ge 3 ]
"$PC" report "$T/rep" > "$T/report1" 2>&1
rc=$?
check "the report exits 1 (exit $rc)" [ $rc -eq 1 ]
# the sim's new medium is a new part (another CID): the device whose verdict
# holds the finding FAILs; with a real card re-flashed (same CID) it is one device
dev=$(printf '%s' "$v" | jq -r .device.id)
check "...and that device's result is FAIL" grep -q "^  FAIL *$dev" "$T/report1"
check "replay agrees" "$PC" replay "$T/rep"

# 2. superblock copy B rewritten with another region's (another seed, UUID
# and creation time): the agent uses neither copy, the host names the change
cfg sb
"$PC" run "$T/sb.json" --results "$T/sb" --agent "$AGENT" --quiet --no-report > "$T/out3" 2>&1
# the creation time is in whole seconds and a sim prepare is now quick: a
# second later, the other region's creation time differs for certain
sleep 1
"$AGENT" prepare --device "sim:$T/other.img" --size 2M --record-size 4096 --seed 99 --yes > "$T/prep" 2>&1
media="$T/sb/boards/c1/media.img"
size=$((2 * 1024 * 1024))
dd if="$T/other.img" of="$media" bs=4096 skip=$((size / 4096 - 1)) seek=$((size / 4096 - 1)) count=1 \
	conv=notrunc status=none
"$AGENT" info --device "sim:$media" > "$T/info" 2>&1
check "the agent refuses the region: the copies disagree" grep -q "superblock copies disagree" "$T/info"
"$PC" run "$T/sb.json" --results "$T/sb" --agent "$AGENT" --cycles 9 --quiet --no-report > "$T/out4" 2>&1
check "superblock_mismatch: in exactly one verdict" [ "$(what "$T/sb" superblock_mismatch)" -eq 1 ]
f=$(jq -c '.findings[]? | select(.what == "superblock_mismatch")' "$T/sb/verdicts.jsonl")
check "...copy B" [ "$(printf '%s' "$f" | jq -r .copy)" = B ]
check "...its seed 11 -> 99" [ "$(printf '%s' "$f" | jq -c '[.changes.seed.before, .changes.seed.after]')" = "[11,99]" ]
check "...and its creation time" [ "$(printf '%s' "$f" | jq -r '.changes | has("created")')" = true ]
check "...a violation" [ "$(printf '%s' "$f" | jq -r .violation)" = true ]
"$PC" report "$T/sb" > "$T/report2" 2>&1
check "the device's report is not PASS" bash -c "! grep -q 'result: PASS' '$T/report2'"
check "replay agrees" "$PC" replay "$T/sb"
finish

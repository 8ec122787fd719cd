# Device-level outcomes: a superblock copy that goes bad, both copies gone
# (the scan goes on with the geometry the host remembers), and a device whose
# identity changes -- each a finding in the next verdict, never a crash.
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
dd if=/dev/zero of="$media" bs=512 count=1 seek=$((2048 - 8)) conv=notrunc status=none
run 8
check "both superblocks lost: the agent still scans with the host's geometry" \
	[ "$(jq -s 'length' "$T/r/verdicts.jsonl")" -eq 8 ]
check "...copy B reported" [ "$(finding superblock | jq -r .copy | tr '\n' ' ')" = "A B " ]
check "...and the cycles after it pass" [ "$(jq -r 'select(.cycle == 8) | .verdict' "$T/r/verdicts.jsonl")" = "PASS" ]
check "...said so in the log" grep -q "lost both superblocks" "$T/out.8"
# a different card in the slot: same bytes, new identity (the sim's CID follows the media's inode)
cp "$media" "$media.new" && mv "$media.new" "$media"
run 10
check "a changed CID is reported" [ "$(finding identity | jq -r .field | head -1)" = "cid" ]
check "replay agrees with every verdict" "$PC" replay "$T/r"
finish

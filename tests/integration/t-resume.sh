#!/bin/bash
# The harness's own records survive the harness being killed: SIGKILL it in the
# middle of a campaign, tear the last line of both files, run the same command
# again: the campaign completes with one verdict per cycle, none lost or
# written twice, and replay agrees with every one.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cat > "$T/c.json" <<JSON
{
  "campaign": "it-resume", "cycles": 60, "seed": 3,
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "2M", "record_size": 4096 },
    "records_per_cycle": 100, "modes": ["fua", "flush"],
    "cut": { "at": "random", "window_ms": [2, 30] }, "off_ms": 5
  },
  "boards": [ { "name": "b1" }, { "name": "b2", "device": { "profile": "lying-flush" } } ]
}
JSON
for kill_after in 1.5 1.0; do
	"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet --no-report > "$T/out1" 2>&1 &
	pid=$!
	# kill mid-campaign, not mid-prepare: a prepare dies with its harness and
	# starts over at the next run (relays.md, orphans), which under a loaded
	# ASan build could eat every kill_after
	for _ in $(seq 300); do [ -s "$T/r/verdicts.jsonl" ] && break; sleep 0.1; done
	sleep $kill_after
	kill -KILL $pid
	wait $pid 2>/dev/null
	sleep 0.3
	n1=$(grep -c . "$T/r/verdicts.jsonl")
	echo "  killed the harness after ${kill_after}s with $n1 verdicts on record"
	# a crash in the middle of a write leaves a torn last line
	printf '{"t":1,"board":"b1","cyc' >> "$T/r/events.jsonl"
	printf '{"campaign":"it-resume","bo' >> "$T/r/verdicts.jsonl"
done
check "some verdicts were on record before the kills" [ "$n1" -gt 0 ]
"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet --no-report > "$T/out2" 2>&1
rc=$?
check "resumed run finishes (exit 0 or 1)" [ $rc -le 1 ]
check "resumed run said it resumed" grep -q "resuming" "$T/out2"
check "torn tails were cut off and reported" grep -q "torn last line" "$T/out2"
check "120 verdicts in all" [ "$(grep -c . "$T/r/verdicts.jsonl")" -eq 120 ]
check "no duplicates" [ "$(jq -r '"\(.board)/\(.cycle)"' "$T/r/verdicts.jsonl" | sort | uniq -d | wc -l)" -eq 0 ]
check "cycles 1..60 for each board" [ "$(jq -r 'select(.board=="b1") | .cycle' "$T/r/verdicts.jsonl" | sort -n | uniq | tr '\n' ' ')" = "$(seq 1 60 | tr '\n' ' ')" ]
check "every line of both files is whole JSON" jq -e . "$T/r/verdicts.jsonl" "$T/r/events.jsonl" > /dev/null
check "replay reproduces every verdict after the crashes" "$PC" replay "$T/r"
check "b2 ground truth still agrees" "$TOOLS/truthcheck" "$T/r" b2
# a finished campaign run again does nothing and loses nothing
"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet --no-report > "$T/out3" 2>&1
check "re-running a finished campaign adds nothing" [ "$(grep -c . "$T/r/verdicts.jsonl")" -eq 120 ]
# --- resuming with operational changes (docs/config.md#resuming-a-campaign) ----
# a slow boot's advice followed: boot_timeout_ms raised, and the campaign grown
sed 's/"off_ms": 5/"off_ms": 5, "boot_timeout_ms": 18000/' "$T/c.json" > "$T/c-slow.json"
"$PC" run "$T/c-slow.json" --results "$T/r" --agent "$AGENT" --quiet --no-report --cycles 62 > "$T/out4" 2>&1
rc=$?
check "resume with boot_timeout_ms raised runs (exit $rc: 0 or 1)" [ $rc -le 1 ]
check "it ran the 2 more cycles: 124 verdicts" [ "$(grep -c . "$T/r/verdicts.jsonl")" -eq 124 ]
check "it said the change" grep -qF "resuming with boards[0].boot_timeout_ms 18000 (was 10000)" "$T/out4"
check "events.jsonl logs the change of each board, from 10000 to 18000" [ "$(jq -c 'select(.ev == "config_change") |
	[.board, .key, .from, .to]' "$T/r/events.jsonl" | tr '\n' ' ')" = \
	'["b1","boards[0].boot_timeout_ms",10000,18000] ["b2","boards[1].boot_timeout_ms",10000,18000] ' ]
check "campaign.json records the new value, and the first run's cycles" \
	jq -e '.config.boards[1].boot_timeout_ms == 18000 and .config.cycles == 60' "$T/r/campaign.json" > /dev/null
check "replay agrees across the change" "$PC" replay "$T/r"
# the test's identity is not an operational setting: refused, naming the key
sed 's/"record_size": 4096/"record_size": 8192/' "$T/c-slow.json" > "$T/c-rs.json"
expect_fail "a changed record size is refused naming record_size and both values" \
	"boards[0].device.record_size: 4096 on record, 8192 in $T/c-rs.json" \
	"$PC" run "$T/c-rs.json" --results "$T/r" --agent "$AGENT" --quiet --cycles 64
sed 's/"seed": 3/"seed": 4/' "$T/c-slow.json" > "$T/c2.json"
expect_fail "a changed seed is refused naming seed" "seed: 3 on record, 4 in $T/c2.json" \
	"$PC" run "$T/c2.json" --results "$T/r" --agent "$AGENT" --quiet --cycles 64
check "the refused runs ran nothing: 124 verdicts" [ "$(grep -c . "$T/r/verdicts.jsonl")" -eq 124 ]
check "...and logged nothing: 2 config_change events" [ "$(grep -c '"ev":"config_change"' "$T/r/events.jsonl")" -eq 2 ]
# a results folder copied (cp -a) and the copy resumed: the sim boards'
# devices are the same devices (their serial is kept beside the media,
# <media>.id), so no cycle reads a changed identity as the device's fault
cp -a "$T/r" "$T/rc"
"$PC" run "$T/c-slow.json" --results "$T/rc" --agent "$AGENT" --quiet --no-report --cycles 64 > "$T/out5" 2>&1
rc=$?
check "a copied folder resumes (exit $rc: 0 or 1)" [ $rc -le 1 ]
check "...to its 128 verdicts" [ "$(grep -c . "$T/rc/verdicts.jsonl")" -eq 128 ]
check "...on the same devices: no cid or serial changed" [ "$(grep -c 'changed from' "$T/out5")" -eq 0 ]
check "...and no verdict has an identity finding" \
	[ "$(jq -c 'select(any(.findings[]?; .what == "identity"))' "$T/rc/verdicts.jsonl" | wc -l)" -eq 0 ]
check "...the honest board b1 passed its 2 new cycles" \
	[ "$(jq -r 'select(.board == "b1" and .cycle > 62) | .verdict' "$T/rc/verdicts.jsonl" | tr '\n' ' ')" = "PASS PASS " ]
# a FIFO where the serial is kept (a crafted folder) must not hold the sim
# agent's boot at its open: the run goes on (the serial then comes from the
# media's inode again) and the file is written anew, a regular file
rm -f "$T/rc/boards/b1/media.img.id" && mkfifo "$T/rc/boards/b1/media.img.id"
timeout 300 "$PC" run "$T/c-slow.json" --results "$T/rc" --agent "$AGENT" --quiet --no-report --cycles 65 > "$T/out6" 2>&1
rc=$?
check "a FIFO as <media>.id: the run goes on (exit $rc: 0 or 1, not a timeout)" [ $rc -le 1 ]
check "...to its 130 verdicts" [ "$(grep -c . "$T/rc/verdicts.jsonl")" -eq 130 ]
check "...and <media>.id is a regular file again" test -f "$T/rc/boards/b1/media.img.id" -a ! -p "$T/rc/boards/b1/media.img.id"
finish

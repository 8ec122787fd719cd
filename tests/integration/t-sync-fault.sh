#!/bin/bash
# A results disk that fails a sync stops the campaign at once (issue 41):
# after a failed fdatasync the kernel may have dropped the pages it could
# not write, so a later sync that succeeds proves nothing ("fsyncgate"). The
# syncfault shim (tests/gpiosim/syncfault.c, LD_PRELOAD) fails one
# fdatasync/fsync of events.jsonl, of verdicts.jsonl, or of campaign.json,
# and lets every later one through: a harness that retried or went on would
# finish the campaign. Each time the run must stop at that first failure
# with exit 2, naming the file and the errno, sync nothing after it, keep
# every verdict it had written; then, the fault gone, the same command
# resumes to the end with every cycle's verdict once (cycles unique and
# contiguous), and replay agrees.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
command -v jq > /dev/null || skip "jq is not installed"
SO="$PWD/$BIN/syncfault.so"
if [ ! -f "$SO" ]; then
	make --no-print-directory B="$BIN" "$BIN/syncfault.so" > "$T/shim.log" 2>&1 ||
		{ cat "$T/shim.log"; bad "build the syncfault shim in $BIN"; finish; }
fi
# The sanitizer runtime must come first in LD_PRELOAD.
asan=$(ldd "$PC" 2> /dev/null | awk '/libasan/ { print $3 }')
CYCLES=8
cat > "$T/c.json" <<JSON
{ "campaign": "syncfault", "cycles": $CYCLES, "seed": 41,
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096, "profile": "honest" },
    "records_per_cycle": 40, "flush_every": 8, "modes": ["fua", "flush"],
    "cut": { "at": "random", "window_ms": [2, 20] }, "off_ms": 5 },
  "boards": [ { "name": "s1" }, { "name": "s2", "pattern": "random" } ] }
JSON

# faulty NAME AFTER FILES: a run whose results folder $T/NAME fails the
# sync after the first AFTER ones of FILES (comma-separated names). A run
# that neither stops nor ends (boards waiting for a sync that failed) is
# killed after 120 s: exit 124.
faulty() {
	SYNCFAULT_PATH="$T/$1/" SYNCFAULT_NAMES="$3" SYNCFAULT_AFTER="$2" SYNCFAULT_LOG="$T/$1.sync" \
		LD_PRELOAD="${asan:+$asan:}$SO" timeout 120 "$PC" run "$T/c.json" --results "$T/$1" --agent "$AGENT" \
		--quiet --no-report > "$T/$1.out" 2> "$T/$1.err"
}
# whole NAME: every cycle of both boards judged once, 1..CYCLES, nothing else
whole() {
	local want
	want=$(for b in s1 s2; do seq 1 $CYCLES | sed "s/^/$b\//"; done | tr '\n' ' ')
	[ "$(jq -r '"\(.board)/\(.cycle)"' "$T/$1/verdicts.jsonl" | sort -t/ -k1,1 -k2,2n | tr '\n' ' ')" = "$want" ]
}

# one NAME FILE AFTER: fail FILE's sync after AFTER of them, then resume
one() {
	local name=$1 file=$2 after=$3 rc n1 failed last
	faulty "$name" "$after" "$file"
	rc=$?
	n1=$(grep -c . "$T/$name/verdicts.jsonl" 2> /dev/null)
	failed=$(grep -c ' 5$' "$T/$name.sync")
	last=$(tail -1 "$T/$name.sync")
	echo "  $file: stopped with exit $rc, $n1 verdicts, $(grep -c . "$T/$name.sync") syncs of it; said: $(grep -m1 'failed' "$T/$name.err")"
	check "$file: the run stopped with exit 2 (was $rc)" [ "$rc" -eq 2 ]
	check "...at the one failed sync: the shim failed one ($failed)" [ "$failed" -eq 1 ]
	check "...nothing synced after it, no retry (the last call: $last)" sh -c "case '$last' in *' 5') exit 0 ;; esac; exit 1"
	check "...naming the file and the errno" grep -qE "$T/$name/$file: f(data)?sync failed: Input/output error" "$T/$name.err"
	check "...saying how to go on" grep -q "run the same command to resume" "$T/$name.err"
	check "...before the end: $n1 of $((2 * CYCLES)) verdicts" [ "${n1:-0}" -lt $((2 * CYCLES)) ]
	# a sim board's group is on record in boards/B/pgid while it runs; the
	# relay's off forgets it (a killed harness would leave it behind)
	check "...every board switched off by its relay" \
		sh -c "! ls '$T/$name'/boards/*/pgid > /dev/null 2>&1"
	cp "$T/$name/verdicts.jsonl" "$T/$name.before" 2> /dev/null || : > "$T/$name.before"
	cp "$T/$name/events.jsonl" "$T/$name.events" 2> /dev/null || : > "$T/$name.events"
	timeout 120 "$PC" run "$T/c.json" --results "$T/$name" --agent "$AGENT" --quiet --no-report \
		> "$T/$name.out2" 2> "$T/$name.err2"
	rc=$?
	echo "  resumed: exit $rc, $(grep -c . "$T/$name/verdicts.jsonl") verdicts"
	check "$file fault gone: the same command resumes to the end, exit 0 or 3 INCONCLUSIVE (was $rc)" passed_or_late "$rc" "$T/$name"
	check "...every verdict written before is still there, first" \
		cmp -n "$(stat -c %s "$T/$name.before")" "$T/$name.before" "$T/$name/verdicts.jsonl"
	check "...every cycle of both boards once, contiguous" whole "$name"
	check "...replay agrees" "$PC" replay --quiet "$T/$name"
}

# early and late in the run, at whatever each board is doing then
one ev3 events.jsonl 3
one ev11 events.jsonl 11
one vd5 verdicts.jsonl 5
one vd10 verdicts.jsonl 10
# a new folder whose campaign.json cannot be made durable: nothing starts
one cj campaign.json 0
check "campaign.json: no board was switched on before it was durable" \
	sh -c "! grep -q power_on '$T/cj.events'"
finish

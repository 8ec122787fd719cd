#!/bin/bash
# powercut crash-states on cycles a sim board kept the inputs of
# (docs/crash-states.md): one honest cycle per write mode (fua, fua+flush,
# flush, journal, none, relwr) has 0 mismatches, caught = injected, 0
# acknowledged records the log does not make durable, and the sim's own
# state after the cut among the states enumerated, with the verdict it got
# in verdicts.jsonl. A lying-flush board: every state that loses an
# acknowledged record (its own cut's among them) is a FAIL naming exactly
# those seqs (mismatches 0 while lost_acked_states > 0). Every cut comes
# after 4 to 12 ACKs (mode none, which has none: once its work is done), so
# that each cycle wrote and the lying board lost acknowledged records. Then the negative
# controls: an ACK in the mode none cycle (never durable), added to events.jsonl,
# gives acked_not_durable >= 1 and exit 1; no kept inputs is exit 2. Every
# state judged incrementally gets the full judge's verdict (--check-incremental),
# and --every-state refuses the none cycle's 2^192 states with its estimate.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

command -v jq > /dev/null || skip "jq is not installed"
jqt() { jq -e "$@" > /dev/null; }	# a jq condition, quietly

R="$T/r"
cat > "$T/c.json" <<'JSON'
{
  "campaign": "it-crash-states", "cycles": 6, "seed": 23,
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096, "keep_inputs": 20 },
    "records_per_cycle": 24, "flush_every": 4, "queue_depth": 4,
    "modes": ["fua", "fua+flush", "flush", "journal", "none", "relwr"],
    "pattern": "sequential",
    "cut": { "at": "acks", "acks": [4, 12] }, "off_ms": 5
  },
  "boards": [
    { "name": "honest", "device": { "profile": "honest" } },
    { "name": "lying", "device": { "profile": "lying-flush" }, "modes": ["flush"] }
  ]
}
JSON
# the sim keeps its inputs only where device.keep_inputs exists (docs/sim.md)
if "$PC" check-config "$T/c.json" 2>&1 | grep -q "keep_inputs"; then
	skip "this build's sim keeps no inputs (device.keep_inputs is refused)"
fi
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report > "$T/run.out" 2>&1
rc=$?
check "the campaign runs (exit 0 or 1; was $rc)" [ $rc -le 1 ]
[ $rc -le 1 ] || tail -5 "$T/run.out"

"$PC" crash-states "$R" --board honest --all > "$T/honest.jsonl" 2> "$T/honest.err"
rc=$?
check "honest: crash-states exits 0 (was $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || { head -c 3000 "$T/honest.jsonl"; cat "$T/honest.err"; }
# the mode of each checked cycle, from verdicts.jsonl
jq -c 'select(.board == "honest") | {cycle, mode, verdict}' "$R/verdicts.jsonl" > "$T/modes.jsonl"
for m in fua fua+flush flush journal none relwr; do
	c=$(jq -r --arg m "$m" 'select(.mode == $m) | .cycle' "$T/modes.jsonl" | head -1)
	line=$(jq -c --argjson c "${c:-0}" 'select(.cycle == $c)' "$T/honest.jsonl")
	check "honest $m: cycle ${c:-?} checked" [ -n "$line" ]
	[ -n "$line" ] || continue
	echo "    $m: $(jq -c '{states, durable, volatile, acked, acked_not_durable, mismatches, injected, caught, observed, ms}' <<< "$line")"
	check "honest $m: states judged, 0 mismatches, caught = injected, 0 acked not durable" \
		jqt '.states > 0 and .mismatches == 0 and .caught == .injected and .acked_not_durable == 0' <<< "$line"
	check "honest $m: every ACK the host got is one of the agent's marks in the log" \
		jqt '(.acked == 0 or .ack_marks > 0) and (.ack_marks == 0 or .acks_unmarked == 0)' <<< "$line"
	check "honest $m: the state after the cut is among those enumerated" \
		jqt '.observed.enumerated == "exact" or .observed.enumerated == "by_slot"' <<< "$line"
	check "honest $m: the state after the cut gets the verdict verdicts.jsonl holds" \
		jqt '.observed.verdict == .observed.recorded' <<< "$line"
done

"$PC" crash-states "$R" --board lying --all > "$T/lying.jsonl" 2> "$T/lying.err"
rc=$?
check "lying-flush: crash-states exits 0: the agent and the judge are right, the device lies (was $rc)" [ $rc -eq 0 ]
check "lying-flush: every state losing an acknowledged record is a FAIL naming exactly those seqs" \
	jqt -s 'length > 0 and all(.[]; .mismatches == 0 and .caught == .injected) and any(.[]; .lost_acked_states > 0)' \
	"$T/lying.jsonl"
check "lying-flush: some cut lost a flushed write, and its verdict is the recorded FAIL" \
	jqt -s 'any(.[]; .observed.legal == false and .observed.verdict == "FAIL" and .observed.recorded == "FAIL")' \
	"$T/lying.jsonl"
check "lying-flush: an image after the cut that lost a flushed write is observed illegal, never counted" \
	jqt -s 'all(.[]; .observed.legal or (.observed.state == "illegal" and .observed.counted == false))' \
	"$T/lying.jsonl"
check "honest: the image after the cut is legal, and counted only when it is not a state judged already" \
	jqt -s 'all(.[]; .observed.state == "legal" and .observed.counted == (.observed.enumerated != "exact"))' \
	"$T/honest.jsonl"

# crash-states.jsonl in the results folder: the lines printed, one per cycle; a rerun replaces a
# cycle's line (never a second one); the report says per mode how many crash states were checked
nh=$(wc -l < "$T/honest.jsonl"); nl=$(wc -l < "$T/lying.jsonl")
check "crash-states.jsonl holds the $nh honest and $nl lying lines" \
	[ "$(wc -l < "$R/crash-states.jsonl")" -eq $((nh + nl)) ]
check "...the honest lines as printed" sh -c "grep -F -x -f '$T/honest.jsonl' '$R/crash-states.jsonl' | wc -l | grep -qx $nh"
"$PC" crash-states "$R" --board honest --all > /dev/null 2>&1
check "a rerun replaces its cycles' lines: still $((nh + nl)), one per board and cycle" \
	jqt -s --argjson n $((nh + nl)) 'length == $n and ([.[] | [.board, .cycle]] | unique | length) == $n' \
	"$R/crash-states.jsonl"
"$PC" report "$R" > "$T/report.txt" 2>&1
"$PC" report "$R" --format md > "$T/report.md" 2>&1
"$PC" report "$R" --format html > "$T/report.html" 2>&1
"$PC" report "$R" --format json > "$T/report.json" 2>&1
check "every line says its bound: judged N of M legal states at the cut, the design, what it leaves out" \
	jqt -s 'all(.[]; (.bound.judged | type) == "number" and (.bound.legal | test("^[0-9]+(\\^[0-9]+( x [0-9]+\\^[0-9]+)*)?$"))
		and (.bound.design | length) > 0 and (.bound.leaves_out | type) == "array"
		and .bound.judged + .bound.earlier == .states)' "$T/honest.jsonl" "$T/lying.jsonl"
check "honest none (24 volatile writes of 8 sectors): judged of 2^192, the sample's gaps named" \
	jqt -s 'any(.[]; .mode == "none" and .bound.legal == "2^192" and .bound.exhaustive == false and
		(.bound.leaves_out | index("subsets of the volatile writes not drawn")) != null)' "$T/honest.jsonl"
for m in flush none; do
	n=$(jq -r --arg m "$m" 'select(.mode == $m) | .states' "$T/honest.jsonl" | head -1)
	j=$(jq -r --arg m "$m" 'select(.mode == $m) | .bound.judged' "$T/honest.jsonl" | head -1)
	if jqt -s --arg m "$m" 'map(select(.mode == $m))[0].bound.exhaustive' "$T/honest.jsonl"; then
		says="this cycle's verdict holds for all $j crash state"
	else
		says="this cycle's verdict holds for the $j crash states judged of $(jq -r --arg m "$m" 'select(.mode == $m) | .bound.legal' "$T/honest.jsonl" | head -1) the block layer allows at the cut"
	fi
	check "report (text), honest $m: '$says'" grep -qF "board honest, mode $m, 1 cycle: $says" "$T/report.txt"
	check "report (md), honest $m: a row of $n crash states" grep -qE "^\| honest \| $m \| 1 \| $n \|" "$T/report.md"
	check "report (html), honest $m: a row of $n crash states" \
		grep -qF "<tr><td>honest</td><td>$m</td><td>1</td><td>$n</td>" "$T/report.html"
	check "report (json), honest $m: $n crash states, $j judged at the cut, holds" \
		jqt --arg m "$m" --argjson n "$n" --argjson j "$j" \
		'any(.crash_states[]; .board == "honest" and .mode == $m and .states == $n and .judged == $j and .holds)' \
		"$T/report.json"
done

nli=$(jq -s '[.[] | select(.observed.state == "illegal")] | length' "$T/lying.jsonl")
check "report (text): the lying board's images after the cut on their own line, $nli illegal" \
	grep -qE "^    observed after the cut: [0-9]+ legal, $nli illegal, 0 unknown; 0 not judged as verdicts.jsonl says" \
	"$T/report.txt"
check "report (json): the honest rows' images after the cut legal, none disagreeing" \
	jqt 'all(.crash_states[] | select(.board == "honest"); .observed.illegal == 0 and .observed.disagree == 0)' \
	"$T/report.json"

# incremental judging (docs/crash-states.md, "How a state is judged"): every state of every cycle,
# honest (each mode) and lying (states that lose acknowledged records), judged both ways gets the full
# judge's verdict byte for byte; and the default run judged its states incrementally
for b in honest lying; do
	"$PC" crash-states "$R" --board $b --all --check-incremental > "$T/$b-inc.jsonl" 2> "$T/$b-inc.err"
	rc=$?
	check "$b --check-incremental: exits 0 (was $rc)" [ $rc -eq 0 ]
	echo "    $b: $(jq -s -c '{cycles: length, incremental: (map(.incremental) | add), checked: (map(.incremental_checked) | add), diffs: (map(.incremental_diffs) | add)}' "$T/$b-inc.jsonl")"
	check "$b --check-incremental: every state judged incrementally judged by the full judge too, 0 differences" \
		jqt -s 'length > 0 and all(.[]; .incremental_checked == .incremental and .incremental_diffs == 0)
			and (map(.incremental) | add) > 0' "$T/$b-inc.jsonl"
done
check "honest: the default run judges the cycles' states incrementally (journal, none: all but the observed image)" \
	jqt -s 'all(.[] | select(.mode == "none" or .mode == "journal"); .incremental >= .states - 1)' "$T/honest.jsonl"
# --every-state: the none cycle's 2^192 refused with its estimate, exit 2, nothing written for it
c=$(jq -r 'select(.mode == "none") | .cycle' "$T/modes.jsonl" | head -1)
"$PC" crash-states "$R" --board honest --cycle "${c:-0}" --every-state > "$T/every.out" 2> "$T/every.err"
rc=$?
check "--every-state on 2^192 states: refused, exit 2 (was $rc)" [ $rc -eq 2 ]
check "...with the estimate: how many states, how long, the limit" \
	grep -qE "every state at the cut is about 2\^192\.0 states, about 10\^[0-9]+ s of CPU at the [0-9]+ states/s of this cycle's first states: over the limit of 1000000" "$T/every.err"
[ $rc -eq 2 ] || cat "$T/every.err"

# negative control: an ACK in the mode none cycle, where nothing is ever flushed
c=$(jq -r 'select(.mode == "none") | .cycle' "$T/modes.jsonl" | head -1)
last=$(jq -r --argjson c "$c" 'select(.board == "honest" and .cycle == $c and .ev == "work") | .work.first' \
	"$R/events.jsonl")
cp -r "$R" "$T/lie"
jq -c --argjson c "$c" --argjson s "$last" \
	'if .board == "honest" and .cycle == $c and .ev == "cut" then
		({t: .t, board: .board, cycle: .cycle, ev: "rx", msg: {type: "ack", v: 1, first: $s, n: 1}}, .)
	else . end' "$R/events.jsonl" > "$T/lie/events.jsonl"
"$PC" crash-states "$T/lie" --board honest --cycle "$c" > "$T/lie.jsonl" 2> "$T/lie.err"
rc=$?
check "mode none, an ACK of seq $last added: exit 1 (was $rc)" [ $rc -eq 1 ]
check "mode none, an ACK of seq $last added: acked_not_durable 1" jqt '.acked_not_durable == 1' "$T/lie.jsonl"

rm -rf "$T/lie/boards/honest/media.img.inputs" "$T/lie/boards/lying/media.img.inputs"
expect_fail "no kept inputs: exit 2 saying how to keep them" "keep_inputs" "$PC" crash-states "$T/lie"
# a damaged kept log is damaged input (exit 2), never a finding against the agent
cp -r "$R" "$T/dmg"
log=$(ls "$T"/dmg/boards/honest/media.img.inputs/session-*/writes.log | head -1)
head -c 700 /dev/urandom > "$log"
"$PC" crash-states "$T/dmg" --all > "$T/dmg.out" 2>&1
rc=$?
check "a damaged log: exit 2 (was $rc)" test $rc -eq 2
check "...naming the log as damaged" grep -q "no dm-log-writes superblock (damaged" "$T/dmg.out"

# Hostile kept inputs: every field of cycle.json and of writes.log is bounded before it sizes
# anything, and checked against the log, the base image and its region; a bad one is damaged
# input: exit 2 naming the file and the field (never a cycle judged ok, never a finding).
rm -rf "$T/dmg" "$T/lie"
cp -r "$R" "$T/h"
hc=$(jq -r 'select(.mode == "flush") | .cycle' "$T/modes.jsonl" | head -1)
hfirst=$(jq -r --argjson c "$hc" 'select(.board == "honest" and .cycle == $c and .ev == "work") | .work.first' \
	"$R/events.jsonl")
hdir=""
for f in "$T"/h/boards/honest/media.img.inputs/session-*/cycle.json; do
	jqt --argjson c "$hc" '.cycles == [$c]' "$f" && hdir=$(dirname "$f")
done
check "the flush cycle $hc's kept session found" [ -n "$hdir" ]
cp "$hdir/cycle.json" "$T/cycle.json.orig"
cp "$hdir/writes.log" "$T/writes.log.orig"
hostile() { # hostile "what" "field": crash-states on the altered copy exits 2 naming the file and field
	local out rc
	out=$("$PC" crash-states "$T/h" --board honest --cycle "$hc" 2>&1); rc=$?
	check "$1: exit 2 (was $rc)" [ $rc -eq 2 ]
	check "$1: ...naming $2" grep -qF -- "$2" <<< "$out"
	[ $rc -eq 2 ] || head -c 600 <<< "$out"
	cp "$T/cycle.json.orig" "$hdir/cycle.json"
	cp "$T/writes.log.orig" "$hdir/writes.log"
}
cj() { jq -c "$@" "$T/cycle.json.orig" > "$hdir/cycle.json"; }
cj '.cycles = [4294967296]';		hostile "cycle.json cycles [2^32]" "cycle.json: field cycles"
cj '.seed = -1';			hostile "cycle.json seed -1" "cycle.json: field seed"
cj '.format = 2';			hostile "cycle.json format 2" "cycle.json: field format"
cj '.session = 99999';			hostile "cycle.json session not its folder's" "cycle.json: field session"
cj '.end = "boom"';			hostile "cycle.json end" "cycle.json: field end"
cj '.writes = 1000000000';		hostile "cycle.json writes 10^9" "cycle.json: field writes"
cj '.writes += 1 | .log_entries += 1';	hostile "cycle.json writes one more than the log" "cycle.json: field log_entries"
cj '.log_bytes += 512';			hostile "cycle.json log_bytes not the log's" "cycle.json: field log_bytes"
cj '.media_bytes += 512';		hostile "cycle.json media_bytes not the base image's" "cycle.json: field media_bytes"
cj '.region.nslots += 1';		hostile "cycle.json region.nslots not the region's" "cycle.json: field region.nslots"
cj '.region.seed = 5';			hostile "cycle.json region.seed not the region's" "cycle.json: field region.seed"
cj '.rate = 7';				hostile "cycle.json rate 7" "cycle.json: field rate"
cj '.cycles = [range(0; 65) | . + 1]';	hostile "cycle.json 65 cycles" "cycle.json: field cycles"
cj '.log_error = "No space left on device"'; hostile "cycle.json log_error" "cycle.json: field log_error"
cj '.in_flight_writes = 99999999999';	hostile "cycle.json in_flight_writes 10^11 (a qemu relay's count)" \
	"cycle.json: field in_flight_writes"
inf() { cj --argjson s "$hfirst" --argjson c "$hc" \
	".in_flight = ({op: \"write\", lba: 40, n: 8, fua: false, raw: false, seq: \$s, cycle: \$c, flags: 3} + $1)"; }
inf '{lba: 100000000000}';		hostile "in flight at LBA 10^11" "cycle.json: field in_flight.lba"
inf '{n: 4000000000}';			hostile "in flight of 4*10^9 sectors" "cycle.json: field in_flight.n"
inf '{n: 600000}';			hostile "in flight of 600000 sectors (past the bound)" "cycle.json: field in_flight.n"
inf '{seq: 1000000}';			hostile "in flight, a seq not the cycle's" "cycle.json: field in_flight.seq"
inf '{cycle: 4294967296}';		hostile "in flight, cycle 2^32" "cycle.json: field in_flight.cycle"
inf '{flags: 65535}';			hostile "in flight, flags not a record's" "cycle.json: field in_flight.flags"
inf '{op: "trim"}';			hostile "in flight, op trim" "cycle.json: field in_flight.op"
# writes.log: its first entry's header (at byte 512: sector, nr_sectors, flags, data_len)
poke() { printf "$2" | dd of="$hdir/writes.log" bs=1 seek="$1" conv=notrunc status=none; }
poke 519 '\x10';			hostile "writes.log sector 2^60" "entry 0: sector"
poke 536 '\x01';			hostile "writes.log data_len not its sectors' bytes" "entry 0: data_len"
poke 524 '\x01';			hostile "writes.log nr_sectors 2^32+8" "entry count is not the entries it holds"
poke 16 '\xff\xff\xff\x7f';		hostile "writes.log superblock count 2^31" "entry count is not the entries it holds"
cj '.marks += 1 | .log_entries += 1';	hostile "cycle.json marks not the log's" "cycle.json: field marks"

# A disagreement fails: the image after the cut judged again must get the verdict verdicts.jsonl
# holds, whether what it holds is known (the verdict edited to FAIL) or not (a byte of a written
# sector changed in the image the judging boot scanned: its verdict FAIL, the recorded PASS).
disagree() { # disagree "what" "note": exit 1, ok false, the note naming both verdicts
	local out rc
	out=$("$PC" crash-states "$T/h" --board honest --cycle "$hc" 2> "$T/dis.err"); rc=$?
	check "$1: exit 1 (was $rc)" [ $rc -eq 1 ]
	check "$1: ...not ok, the observed verdict not the recorded one" \
		jqt '.ok == false and .observed.agrees == false and .mismatches == 0' <<< "$out"
	check "$1: ...named: $2" grep -qF -- "$2" <<< "$out"
}
cp "$T/h/verdicts.jsonl" "$T/verdicts.orig"
jq -c --argjson c "$hc" 'if .board == "honest" and .cycle == $c then .verdict = "FAIL" else . end' \
	"$T/verdicts.orig" > "$T/h/verdicts.jsonl"
disagree "the recorded verdict FAIL, the image (known) PASS" \
	"(legal, its content known) is judged PASS again; verdicts.jsonl holds FAIL"
cp "$T/verdicts.orig" "$T/h/verdicts.jsonl"
hs=${hdir##*/session-}
next="$(dirname "$hdir")/session-$((hs + 1))/base.img"
[ -f "$next" ] || next="$hdir/after.img"
sect=$(od -An -tu8 -j 512 -N 8 "$hdir/writes.log" | tr -d ' ')
cp "$next" "$T/next.orig"
printf '\x5a' | dd of="$next" bs=1 seek=$((sect * 512 + 200)) conv=notrunc status=none
disagree "a byte changed in a written sector (unknown content), recorded PASS" \
	"its content not known) is judged FAIL again; verdicts.jsonl holds PASS"
cp "$T/next.orig" "$next"
finish

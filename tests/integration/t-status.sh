#!/bin/bash
# `powercut status` from a second shell: while a campaign runs (each board's
# cycle n of N, its state, its counts, an ETA h:mm; the run's pid; --json),
# after the run is killed (-9: "killed"), stopped (SIGINT: cycles left) and
# finished; on folders with a garbage line, a huge number, a hostile board
# name, a torn or very long line, a missing file (a clear error, never a
# crash); and on an events.jsonl larger than the tail it reads.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cat > "$T/c.json" <<JSON
{
  "campaign": "it-status", "cycles": 100000, "seed": 3,
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096 },
    "records_per_cycle": 40, "modes": ["flush"], "flush_every": 4,
    "cut": { "at": "random", "window_ms": [3, 12] }, "off_ms": 5
  },
  "boards": [ { "name": "b1" }, { "name": "liar", "device": { "profile": "lying-flush" } } ]
}
JSON
sed -e 's/"cycles": 100000/"cycles": 4/' -e 's/it-status/it-status-short/' "$T/c.json" > "$T/short.json"
R="$T/r"
H=$(hostname)
# jqe FILE FILTER [ARGS...]: the filter holds for the JSON in FILE
jqe() { local f=$1; shift; jq -e "$@" "$f" > /dev/null; }

# wait_for N CMD...: until CMD succeeds (N tenths of a second at most)
wait_for() {
	local n=$1
	shift
	for _ in $(seq "$n"); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
# has_verdicts BOARD N [VERDICT]: verdicts.jsonl holds N of BOARD's (of that verdict)
has_verdicts() {
	[ "$(grep -F "\"board\":\"$1\"" "$R/verdicts.jsonl" 2>/dev/null | grep -cF "\"verdict\":\"${3:-}")" -ge "$2" ]
}

# --- while it runs --------------------------------------------------------------
"$PC" run "$T/c.json" --results "$R" --agent "$AGENT" --quiet --no-report > "$T/run.out" 2>&1 &
pid=$!
check "the campaign judges cycles of both boards" wait_for 300 has_verdicts b1 6
check "the lying board FAILs" wait_for 300 has_verdicts liar 1 FAIL
"$PC" status "$R" > "$T/st" 2> "$T/st.err"
rc=$?
check "status on the live folder exits 0 (got $rc)" [ $rc -eq 0 ]
check "its first line: running, pid $pid" grep -q "^$R: running, pid $pid on $H since " "$T/st"
check "the campaign: running, with the pid" grep -qF "campaign it-status: running (pid $pid on $H" "$T/st"
check "when the last event was appended, and how long ago" \
	grep -qE "^last event appended [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} [-+][0-9]{4} \([0-9]+ s ago\); [0-9]+ events, [0-9]+ verdicts$" "$T/st"
for b in b1 liar; do
	check "$b: cycle n of 100000 and a state" \
		grep -qE "^  $b: +cycle [1-9][0-9]* of 100000, (off|booting|verifying|writing);" "$T/st"
	check "$b: its counts and an ETA h:mm" \
		grep -qE "^  $b: .*; PASS [0-9]+, FAIL [0-9]+, BOOT_FAIL 0, INFRA_ERROR 0; ETA [0-9]+:[0-5][0-9] \([0-9.]+ s a cycle\)$" "$T/st"
done
check "the lying board's last FAIL, with its classes" grep -qE "^ +last FAIL: cycle [0-9]+ \(lost_acked=[0-9]+" "$T/st"
check "nothing on stderr" [ ! -s "$T/st.err" ]
"$PC" status --json "$R" > "$T/st.json"
check "--json parses" jqe "$T/st.json" .
check "--json: running, the run's pid and host" \
	jqe "$T/st.json" --argjson p "$pid" --arg h "$H" '.run == "running" and .running and .lock.state == "held" and .lock.pid == $p and .lock.host == $h and .lock.pid_alive'
check "--json: two boards with cycle, cycles, state, counts, ETA" \
	jqe "$T/st.json" '(.boards | length) == 2 and ([.boards[] | .cycles == 100000 and .cycle >= 1 and
		(.state | IN("off","booting","verifying","writing")) and (.eta | test("^[0-9]+:[0-5][0-9]$")) and
		.eta_s >= 0 and .cycle_ms > 0 and .counts.PASS >= 0 and .counts.INFRA_ERROR == 0] | all)'
check "--json: the lying board's last FAIL" \
	jqe "$T/st.json" '.boards[1].last_fail.cycle >= 1 and .boards[1].last_fail.classes.lost_acked >= 1 and .boards[0].last_fail == null'
check "--json: events and verdicts counted, the last event's time" \
	jqe "$T/st.json" '.events > 0 and .events_exact and .verdicts > 0 and (.last_event.time | test("^[0-9-]{10}T[0-9:]{8}Z$")) and .last_event.age_s >= 0'
"$PC" status "$R" --json > "$T/st2.json"
check "options in any order: DIR --json" jqe "$T/st2.json" '.run == "running"'

# --- killed -----------------------------------------------------------------------
kill -KILL $pid
wait $pid 2>/dev/null
"$PC" status "$R" > "$T/st" 2>&1
check "after kill -9: the lock line says it was killed" grep -q "^$R: not running; last run pid $pid on $H (started .*) was killed" "$T/st"
check "after kill -9: not running: the last run was killed" grep -qF "campaign it-status: not running: the last run was killed (pid $pid" "$T/st"
check "after kill -9: no ETA, the boards' states as the run left them" \
	sh -c "grep -E '^  (b1|liar): ' '$T/st' | grep -v 'ETA - ' | grep -q . && exit 1; grep -qE 'when the run stopped|, off;' '$T/st'"
"$PC" status --json "$R" > "$T/st.json"
check "after kill -9, --json: run killed, not running" \
	jqe "$T/st.json" --argjson p "$pid" '.run == "killed" and (.running | not) and .lock.state == "free" and .lock.pid == $p and .lock.ended == null and ([.boards[].eta_s == null] | all)'

# --- stopped (SIGINT, resumable) --------------------------------------------------------
n=$(grep -c . "$R/verdicts.jsonl")
"$PC" run "$T/c.json" --results "$R" --cycles 5000 --agent "$AGENT" --quiet --no-report > "$T/run2.out" 2>&1 &
pid2=$!
check "the resumed run judges more cycles" wait_for 300 sh -c "[ \$(grep -c . '$R/verdicts.jsonl') -ge $((n + 4)) ]"
check "status names the resumed run" sh -c "'$PC' status '$R' | grep -qF 'running (pid $pid2 on $H'"
check "...and its plan, given by --cycles 5000 (not the configuration's 100000)" \
	sh -c "'$PC' status --json '$R' | jq -e '[.boards[].cycles == 5000] | all' > /dev/null"
kill -INT $pid2
wait $pid2
"$PC" status "$R" > "$T/st" 2>&1
check "after SIGINT: stopped with cycles left, resumable" grep -qF "campaign it-status: not running: the last run (pid $pid2 on $H) stopped with cycles left" "$T/st"
check "after SIGINT, --json: stopped" sh -c "'$PC' status --json '$R' | jq -e '.run == \"stopped\" and .lock.ended > 0' > /dev/null"

# --- finished ---------------------------------------------------------------------------
F="$T/f"
"$PC" run "$T/short.json" --results "$F" --agent "$AGENT" --quiet --no-report > "$T/run3.out" 2>&1
"$PC" status "$F" > "$T/st" 2>&1
rc=$?
check "a finished folder: exit 0 (got $rc)" [ $rc -eq 0 ]
check "a finished folder: finished" grep -qF "campaign it-status-short: finished: every board ran its cycles (the last run ended " "$T/st"
check "a finished folder: every board done, cycle 4 of 4" \
	[ "$(grep -cE '^  (b1|liar): +cycle 4 of 4, done; .*; ETA done$' "$T/st")" -eq 2 ]
check "a finished folder, --json" \
	sh -c "'$PC' status --json '$F' | jq -e '.run == \"finished\" and ([.boards[] | .state == \"done\" and .eta == \"done\" and .cycle == 4] | all)' > /dev/null"

# --- damaged folders: a clear error naming file and line, never a crash ---------------------
# damaged NAME "what" "error text" EDIT: a copy of the finished folder, edited by sh -c EDIT
damaged() {
	local name=$1 what=$2 want=$3
	shift 3
	rm -rf "${T:?}/$name"
	cp -r "$F" "$T/$name"
	(cd "$T/$name" && sh -c "$1")
	"$PC" status "$T/$name" > "$T/$name.out" 2> "$T/$name.err"
	local rc=$?
	if [ $rc -eq 1 ] && grep -qF -- "$want" "$T/$name.err" && grep -q "^$T/$name: not running" "$T/$name.out"; then
		ok "$what"
	else
		bad "$what (exit $rc, wanted '$want', got: $(head -c 300 "$T/$name.err"))"
	fi
	"$PC" status --json "$T/$name" > /dev/null 2>&1
	rc=$?
	check "$what (--json: exit $rc)" [ $rc -eq 1 ]
}
nev=$(($(grep -c '' "$F/events.jsonl") + 1))
nv=$(($(grep -c '' "$F/verdicts.jsonl") + 1))
damaged g1 "a garbage events line" "events.jsonl:$nev: not a JSON object" "echo 'garbage line' >> events.jsonl"
damaged g2 "a huge time in events" "events.jsonl:$nev: \"t\" is not a time" \
	"echo '{\"t\":99999999999999999999999,\"board\":\"b1\",\"cycle\":1,\"ev\":\"cut\"}' >> events.jsonl"
damaged g3 "a huge cycle in events" "events.jsonl:$nev: \"cycle\" is not an integer" \
	"echo '{\"t\":1,\"board\":\"b1\",\"cycle\":1e999,\"ev\":\"cut\"}' >> events.jsonl"
damaged g4 "a huge cycle in verdicts" "verdicts.jsonl:$nv: \"cycle\" is not an integer" \
	"echo '{\"board\":\"b1\",\"cycle\":18446744073709551617,\"verdict\":\"PASS\"}' >> verdicts.jsonl"
damaged g5 "an unknown verdict" "verdicts.jsonl:$nv: \"verdict\" is not one of PASS, FAIL" \
	"echo '{\"board\":\"b1\",\"cycle\":2,\"verdict\":\"MAYBE\"}' >> verdicts.jsonl"
damaged g6 "a garbage verdicts line" "verdicts.jsonl:$nv: not a JSON object" "echo '{\"board\":' >> verdicts.jsonl"
damaged g7 "a missing verdicts.jsonl" "verdicts.jsonl: cannot open: No such file" "rm verdicts.jsonl"
damaged g8 "a missing events.jsonl" "events.jsonl: cannot open: No such file" "rm events.jsonl"
damaged g9 "a garbage campaign.json" "campaign.json: not a JSON object" "echo '{garbage' > campaign.json"
damaged g10 "a campaign.json with a huge cycles" "campaign.json: config.cycles is not an integer" \
	"jq -c '.config.cycles = 99999999999999999999' campaign.json > x && mv x campaign.json"
damaged g11 "a campaign.json with a hostile board name" "config.boards[0].name is not a board name" \
	"jq -c '.config.boards[0].name = \"\\u001b[2J\"' campaign.json > x && mv x campaign.json"
expect_fail "a folder that does not exist" "$T/nope/campaign.json: cannot open" "$PC" status "$T/nope"

# what status ignores: a torn last line, another board's or a hostile name, a very long line
G="$T/ok"
cp -r "$F" "$G"
printf '{"t":1,"board":"\\u001b[2J","cycle":1,"ev":"cut"}\n{"t":2,"board":"nobody","cycle":7,"ev":"work"}\n' >> "$G/events.jsonl"
{ printf '{"t":3,"board":"b1","cycle":4,"ev":"rx_stray","pad":"'; head -c 3000000 /dev/zero | tr '\0' x; printf '"}\n'; } >> "$G/events.jsonl"
printf '{"t":4,"board":"b1","cycle":5,"ev":"po' >> "$G/events.jsonl"
printf '{"board":"nobody","cycle":3,"verdict":"FAIL"}\n{"board":"b1","cycle":2,"verd' >> "$G/verdicts.jsonl"
"$PC" status "$G" > "$T/ok.out" 2>&1
rc=$?
check "torn lines, strangers' lines and a 3 MB line are no error (exit $rc)" [ $rc -eq 0 ]
check "... and change nothing: still finished" grep -qF "finished: every board ran its cycles" "$T/ok.out"
check "... nothing unprintable reaches the terminal" sh -c "! grep -q \$(printf '\\033') '$T/ok.out'"

# --- an events.jsonl larger than the tail status reads ---------------------------------
# 20 MB of one board's events after the other's last: status reads further
# back for that one; 20 MB of both boards' events: status reads the last 8 MB
# only, and says the count of events is an estimate
filler() { # filler BOARD... : 200,000 informational events, ~30 MB, the boards in turn
	awk -v boards="$*" 'BEGIN { n = split(boards, b, " "); for (i = 0; i < 200000; i++)
		printf "{\"t\":%d,\"board\":\"%s\",\"cycle\":5,\"ev\":\"rx_stray\",\"pad\":\"%090d\"}\n", 100000 + i, b[i % n + 1], i }'
}
B="$T/big"
cp -r "$F" "$B"
filler b1 >> "$B/events.jsonl"
# How much of events.jsonl status reads, from the system calls (strace -y
# names each descriptor's file): a bound on work, not on time, which would
# depend on the machine's load.
read_bytes() { # STRACE-LOG FILE: the bytes read(2) and pread64(2) returned from FILE
	awk -v f="<$2>" 'index($0, f) && $NF ~ /^[0-9]+$/ { n += $NF } END { print n + 0 }' "$1"
}
"$PC" status "$B" > "$T/big.out" 2>&1
rc=$?
check "30 MB of one board's events: exit 0 (got $rc)" [ $rc -eq 0 ]
check "... the board whose last event is 30 MB back is found: done" grep -qE '^  liar: +cycle 4 of 4, done;' "$T/big.out"
B2="$T/big2"
cp -r "$F" "$B2"
filler b1 liar >> "$B2/events.jsonl"
"$PC" status "$B2" > "$T/big2.out" 2>&1
rc=$?
check "30 MB of both boards' events: exit 0 (got $rc)" [ $rc -eq 0 ]
check "... the count of events is an estimate" grep -qE '; about [0-9]+ events, ' "$T/big2.out"
if command -v strace > /dev/null; then
	strace -f -qq -y -e trace=read,pread64 -e signal=none -o "$T/big2.strace" "$PC" status "$B2" > /dev/null 2>&1
	nread=$(read_bytes "$T/big2.strace" "$(cd "$B2" && pwd -P)/events.jsonl")
	check "... it read the last 8 MB of the $(($(stat -c %s "$B2/events.jsonl") / 1048576)) MB file, not all of it ($nread bytes)" \
		sh -c '[ "$1" -gt 0 ] && [ "$1" -le "$2" ]' _ "$nread" $((8 * 1048576 + 65536))
else
	skip_part "strace is not installed: how much of events.jsonl status reads was not measured"
fi
"$PC" status --json "$B2" > "$T/big2.json"
check "... --json: events_exact false" jqe "$T/big2.json" '.events_exact == false and .events > 100000'

# --- usage ---------------------------------------------------------------------------------
"$PC" status > /dev/null 2>&1; rc=$?
check "status without a folder: exit 2 (got $rc)" [ $rc -eq 2 ]
"$PC" status --frob "$F" > /dev/null 2>&1; rc=$?
check "an unknown option: exit 2 (got $rc)" [ $rc -eq 2 ]
"$PC" status "$F" "$G" > /dev/null 2>&1; rc=$?
check "two folders: exit 2 (got $rc)" [ $rc -eq 2 ]
check "--help: the usage on stdout, exit 0" sh -c "'$PC' status --help | grep -q '^usage: powercut status \[--json\] RESULTS_DIR'"
check "powercut --help names status --json" sh -c "'$PC' --help | grep -qF 'status [--json] RESULTS_DIR'"
finish

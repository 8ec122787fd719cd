#!/bin/bash
# A campaign that judged too little is INCOMPLETE, never PASS (issue 9, item 4):
# a board given up after infrastructure errors, too large a share of
# INFRA_ERROR cycles (incomplete_infra_share, default 10%), cycles left to run,
# a run still going or killed. The report says why; `report` and `run` exit 3
# (0 all PASS, 1 any FAIL or BOOT_FAIL, which still wins, 2 errors). Results
# folders from before give_up and run_end events still report.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# ---- (a) a board given up: its relay stops working after 4 power-ons -------
# An honest sim board beside it passes all its cycles. The flaky board runs
# its agent on a sim media through a command relay whose "on" then fails
# (INFRA_ERROR, never the device's fault): three in a row give the board up.
"$AGENT" prepare --device "sim:$T/flaky.img" --size 1M --yes > /dev/null 2>&1
cat > "$T/on.sh" <<SH
n=\$(cat "$T/ons" 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n > "$T/ons"
if [ \$n -gt 4 ]; then echo "the relay's fuse blew" >&2; exit 1; fi
setsid "$PWD/$AGENT" run --fresh-boot-id --device "sim:$T/flaky.img" --connect "\$PC_CONNECT" --board flaky \
	>> "$T/flaky.log" 2>&1 & echo \$! > "$T/flaky.pid"
SH
campaign() { # name profile-of-the-sim-board modes
	cat > "$T/$1.json" <<JSON
{ "campaign": "$1", "cycles": 8, "seed": 3, "listen": "127.0.0.1:0",
  "defaults": { "records_per_cycle": 20, "modes": $3, "cut": { "at": "random", "window_ms": [5, 30] },
    "off_ms": 5 },
  "boards": [
    { "name": "simb", "relay": { "driver": "sim", "boot_delay_ms": 5 },
      "device": { "backend": "sim", "size": "1M", "record_size": 4096, "profile": "$2" },
      "cut": { "at": "acks", "acks": [8, 20] } },
    { "name": "flaky", "device": { "backend": "posix", "record_size": 4096 },
      "relay": { "driver": "command", "on": "sh $T/on.sh",
        "off": "kill -KILL \$(cat $T/flaky.pid 2>/dev/null) 2>/dev/null; true" },
      "boot_timeout_ms": 8000, "boot_retries": 0 } ] }
JSON
}
campaign given-up honest '["fua", "flush"]'
"$PC" run "$T/given-up.json" --results "$T/ra" --agent "$AGENT" --quiet > "$T/a.out" 2> "$T/a.err"; rc=$?
check "run with a board given up exits 3 (INCOMPLETE; was $rc)" [ $rc -eq 3 ]
check "...the board was given up after three INFRA_ERRORs in a row" grep -q "board flaky: giving up: 3 infrastructure errors in a row" "$T/a.err"
check "...on record: a give_up event with the cycle and the reason" \
	[ "$(jq -s '[.[] | select(.ev == "give_up" and .board == "flaky" and .cycle == 8 and (.reason | contains("fuse blew")))] | length' "$T/ra/events.jsonl")" -eq 1 ]
check "...and a run_end event per board with the plan" \
	[ "$(jq -s '[.[] | select(.ev == "run_end" and .cycles == 8)] | map(.end) | sort | join(",")' -r "$T/ra/events.jsonl")" = "finished,given_up" ]
"$PC" report "$T/ra" > "$T/a.rep" 2>&1; rc=$?
check "report exits 3 (was $rc)" [ $rc -eq 3 ]
check "...the flaky board's device is INCOMPLETE, not PASS" grep -q "^  result: INCOMPLETE (6 cycles, 3 INFRA_ERROR)" "$T/a.rep"
check "...saying it was given up, at which cycle and why" \
	grep -q "^  incomplete: board flaky given up at cycle 8: 3 infrastructure errors in a row, the last: relay" "$T/a.rep"
check "...and the share of INFRA_ERROR cycles against the limit" \
	grep -q "^  incomplete: 50% of cycles INFRA_ERROR (3 of 6; limit 10%, incomplete_infra_share)" "$T/a.rep"
check "...in the summary too" grep -q "^  INCOMPLETE .*(flaky): 6 cycles, 3 INFRA_ERROR; incomplete: board flaky given up at cycle 8; 50% INFRA_ERROR (limit 10%)" "$T/a.rep"
check "...the honest board still PASSes" grep -q "^  PASS      .*(simb): 8 cycles" "$T/a.rep"
check "the report at the end of the run is the same report" diff <(grep -v "^powercut report" "$T/a.out") <(grep -v "^powercut report" "$T/a.rep")
"$PC" report --json "$T/ra" > "$T/a.json"; rc=$?
check "report --json exits 3 too, result INCOMPLETE (was $rc)" [ $rc -eq 3 ]
check "report --json: result INCOMPLETE" [ "$(jq -r .result "$T/a.json")" = INCOMPLETE ]
check "...the reasons as objects" [ "$(jq -r '.devices[] | select(.boards == ["flaky"]) | [.result, (.incomplete | map(.why) | join(","))] | join(" ")' "$T/a.json")" = "INCOMPLETE given_up,infra_share" ]
check "replay agrees with every verdict (give_up and run_end are only on record)" "$PC" replay "$T/ra"

# ---- (c) a FAIL beside a given-up board: FAIL wins ---------------------------
rm -f "$T/ons"
"$AGENT" prepare --device "sim:$T/flaky.img" --size 1M --yes > /dev/null 2>&1
campaign fail-too lying-flush '["flush"]'
"$PC" run "$T/fail-too.json" --results "$T/rc" --agent "$AGENT" --quiet --no-report > /dev/null 2>&1; rc=$?
check "run with a FAIL and a board given up exits 1 (was $rc)" [ $rc -eq 1 ]
"$PC" report "$T/rc" > "$T/c.rep" 2>&1; rc=$?
check "report exits 1 (was $rc)" [ $rc -eq 1 ]
check "...the lying device FAILs" grep -q "^  FAIL      .*(simb): 8 cycles, [0-9]* FAIL; violations lost_acked=" "$T/c.rep"
check "...the flaky one is INCOMPLETE" grep -q "^  INCOMPLETE .*(flaky): .*board flaky given up at cycle 8" "$T/c.rep"

# ---- (b) the share of INFRA_ERROR cycles, from crafted files ----------------
# 20 cycles of one board, N of them INFRA_ERROR; campaign.json as a run writes it
craft() { # dir infra-cycles [share]
	mkdir -p "$1"
	jq -n --arg s "${3:-}" '{campaign: "crafted", config: ({campaign: "crafted", cycles: 20, boards: [{name: "b1"}]}
		+ (if $s == "" then {} else {incomplete_infra_share: ($s | tonumber)} end))}' > "$1/campaign.json"
	: > "$1/verdicts.jsonl"
	for c in $(seq 1 20); do
		if [ "$c" -le "$2" ]; then v=INFRA_ERROR; else v=PASS; fi
		printf '{"campaign":"crafted","board":"b1","cycle":%d,"verdict":"%s","mode":"fua","device":{"id":"mmc:X:1"}}\n' "$c" "$v" >> "$1/verdicts.jsonl"
	done
}
craft "$T/b15" 3
"$PC" report "$T/b15" > "$T/b15.rep" 2>&1; rc=$?
check "15% INFRA_ERROR (limit 10%): INCOMPLETE, exit 3 (was $rc)" [ $rc -eq 3 ]
check "15% INFRA_ERROR (limit 10%): INCOMPLETE: what the report says" grep -q "^  result: INCOMPLETE (20 cycles, 3 INFRA_ERROR)" "$T/b15.rep"
check "...saying so" grep -q "^  incomplete: 15% of cycles INFRA_ERROR (3 of 20; limit 10%, incomplete_infra_share)" "$T/b15.rep"
craft "$T/b05" 1
"$PC" report "$T/b05" > "$T/b05.rep" 2>&1; rc=$?
check "5% INFRA_ERROR: PASS, exit 0 (was $rc)" [ $rc -eq 0 ]
check "5% INFRA_ERROR: PASS: what the report says" grep -q "^  result: PASS (20 cycles, 1 INFRA_ERROR)" "$T/b05.rep"
craft "$T/b15l" 3 0.2
"$PC" report "$T/b15l" > /dev/null 2>&1; rc=$?
check "15% with incomplete_infra_share 0.2 in campaign.json: PASS (was $rc)" [ $rc -eq 0 ]
craft "$T/b05z" 1 0
"$PC" report "$T/b05z" > /dev/null 2>&1; rc=$?
check "5% with incomplete_infra_share 0: INCOMPLETE (was $rc)" [ $rc -eq 3 ]
craft "$T/bbad" 1 7
expect_fail "a campaign.json whose limit is out of range is an error" "campaign.json: config.incomplete_infra_share: expected a number from 0 to 1, got 7" "$PC" report "$T/bbad"
"$PC" report "$T/bbad" > /dev/null 2>&1; rc=$?
check "...exit 2 (was $rc)" [ $rc -eq 2 ]
head -15 "$T/b05/verdicts.jsonl" > "$T/b05/v" && mv "$T/b05/v" "$T/b05/verdicts.jsonl"
"$PC" report "$T/b05" > "$T/short.rep" 2>&1; rc=$?
check "15 of the 20 configured cycles: INCOMPLETE, exit 3 (was $rc)" [ $rc -eq 3 ]
check "15 of the 20 configured cycles: INCOMPLETE: what the report says" grep -q "^  incomplete: board b1 has verdicts for 15 of the 20 cycles planned" "$T/short.rep"
expect_fail "a missing folder is an error" "cannot read" "$PC" report "$T/nowhere"
"$PC" report "$T/nowhere" > /dev/null 2>&1; rc=$?
check "...exit 2 (was $rc)" [ $rc -eq 2 ]
check "the usage names the exit statuses" sh -c "'$PC' --help | grep -q '3 when one is INCOMPLETE or INCONCLUSIVE and none failed'"

# ---- (d) a folder from before give_up and run_end events ---------------------
# (a) again without its new records: no run_end, no give_up, no lock; the
# report falls back on campaign.json's cycles and the default limit
mkdir "$T/old"
cp "$T/ra/campaign.json" "$T/ra/verdicts.jsonl" "$T/old/"
grep -v '"ev":"give_up"\|"ev":"run_end"' "$T/ra/events.jsonl" > "$T/old/events.jsonl"
"$PC" report "$T/old" > "$T/old.rep" 2>&1; rc=$?
check "an old folder still reports (exit 3: the flaky board's 6 of 8 cycles; was $rc)" [ $rc -eq 3 ]
check "...the honest board PASSes" grep -q "^  PASS      .*(simb): 8 cycles" "$T/old.rep"
check "...the flaky one is INCOMPLETE for its missing cycles and its INFRA_ERROR" \
	grep -q "^  INCOMPLETE .*(flaky): 6 cycles, 3 INFRA_ERROR; incomplete: board flaky: 6 of 8 cycles; 50% INFRA_ERROR (limit 10%)" "$T/old.rep"
mkdir "$T/old2"
grep '"board":"simb"' "$T/ra/verdicts.jsonl" > "$T/old2/verdicts.jsonl"
"$PC" report "$T/old2" > "$T/old2.rep" 2>&1; rc=$?
check "a folder holding only verdicts.jsonl of a good board: PASS, exit 0 (was $rc)" [ $rc -eq 0 ]
check "a folder holding only verdicts.jsonl of a good board: PASS: what the report says" grep -q "^  result: PASS (8 cycles)" "$T/old2.rep"
"$PC" report "$T/old2/verdicts.jsonl" "$T/b05z/verdicts.jsonl" > "$T/merge.rep" 2>&1; rc=$?
check "two folders merge; the strict one's device is INCOMPLETE (exit 3; was $rc)" [ $rc -eq 3 ]
check "two folders merge; the strict one's device is INCOMPLETE: its limit of 0% INFRA_ERROR, from its own campaign.json" \
	grep -q "^  INCOMPLETE mmc:X:1 (b1): 20 cycles, 1 INFRA_ERROR; incomplete: 5% INFRA_ERROR (limit 0%)" "$T/merge.rep"
check "two folders merge; the other device PASSes" grep -q "^  PASS      .*(simb): 8 cycles" "$T/merge.rep"
# the truncated folder beside the good one: its missing cycles named with the file they came from
"$PC" report "$T/old2/verdicts.jsonl" "$T/b05/verdicts.jsonl" > "$T/merge2.rep" 2>&1; rc=$?
check "two folders merge; the short one is INCOMPLETE (exit 3; was $rc)" [ $rc -eq 3 ]
check "two folders merge; the short one's missing cycles are named with its file" \
	sh -c 'printf "%s" "$1" | grep -qF "incomplete: board b1 (in $2) has verdicts for 15 of the 20 cycles planned"' _ "$(joined "$T/merge2.rep")" "$T/b05/verdicts.jsonl"

# ---- (e) a run still going, then killed --------------------------------------
sed 's/"cycles": 8/"cycles": 100000/' "$T/given-up.json" | jq '.boards |= [.[0]]' > "$T/long.json"
"$PC" run "$T/long.json" --results "$T/re" --agent "$AGENT" --quiet --no-report > /dev/null 2>&1 & run=$!
for _ in $(seq 100); do [ "$(grep -c . "$T/re/verdicts.jsonl" 2>/dev/null)" -ge 3 ] 2>/dev/null && break; sleep 0.1; done
"$PC" report "$T/re" > "$T/e1.rep" 2>&1; rc=$?
check "a campaign still running: INCOMPLETE, exit 3 (was $rc)" [ $rc -eq 3 ]
check "a campaign still running: the report says so, with the folder and the pid" \
	sh -c 'printf "%s" "$1" | grep -qF "incomplete: the campaign is still running ($2: running, pid $3 "' _ "$(joined "$T/e1.rep")" "$T/re" "$run"
kill -KILL $run; wait $run 2>/dev/null
"$PC" report "$T/re" > "$T/e2.rep" 2>&1; rc=$?
check "its run killed: INCOMPLETE, exit 3 (was $rc)" [ $rc -eq 3 ]
check "its run killed: the report says so, with the folder and the pid" \
	sh -c 'printf "%s" "$1" | grep -qF "incomplete: the last run was killed before it finished ($2: not running; last run pid $3 "' _ "$(joined "$T/e2.rep")" "$T/re" "$run"
finish

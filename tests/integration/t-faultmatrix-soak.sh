#!/bin/bash
# run-all: long
# The long fault matrix, at length: every fault profile of the sim for 600
# short cycles (bench/fault-matrix --long 600: 10 records a cycle, cuts 1..8 ms
# after the work starts), so that old damage piles up past the scan's raw
# budget and the engine's limits as in an overnight campaign; every observable
# fault detected with the right class, no false finding, and no violation
# judged from bytes never received. A soak: make check-long runs it (minutes);
# make check runs t-faultmatrix's 60 cycles.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
long_setup "the long fault matrix, 600 cycles per profile"
command -v jq > /dev/null || long_skip "jq is not installed"
CYCLES=${PC_FM_CYCLES:-600}
PC_BIN=$BIN bench/fault-matrix --long "$CYCLES" "$T/fml" > "$T/outl" 2>&1
rc=$?
sed 's/^/    /' "$T/outl"
check "long form ($CYCLES short cycles): every observable fault detected, rightly classed, no false finding" [ $rc -eq 0 ]
check "...and no violation judged from bytes never received" \
	[ "$(jq -s '[.[].findings[]? | select(.class == "unclassified" and .violation)] | length' "$T/fml/verdicts.jsonl")" -eq 0 ]
n=$("$TOOLS/faultmatrix" "$T/fml" --json 2>/dev/null | jq '[.[].faults[] | select(.observable > 0)] | length')
check "the fault profiles injected observable faults of $n kinds (at least 8)" [ "${n:-0}" -ge 8 ]
finish

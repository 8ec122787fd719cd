#!/bin/bash
# The fault matrix, shortened: every fault profile of the sim for a few dozen
# cycles; every observable injected fault detected with the right class, and
# no false finding on any board (bench/fault-matrix runs the full-size one).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# Cut after 16..60 acknowledged records, not at a random instant: on a loaded
# machine a random 1..25 ms can come before any acknowledged flush, and the
# lying boards' faults are then never observable (seen at load 12: 7 kinds).
# The two forms are independent campaigns (own folders and ports): the long
# one runs beside the short one, its checks after.
PC_BIN=$BIN bench/fault-matrix --long 60 "$T/fml" > "$T/outl" 2>&1 &
long=$!
PC_BIN=$BIN FM_CUT='{"at": "acks", "acks": [16, 60]}' bench/fault-matrix 25 "$T/fm" > "$T/out" 2>&1
rc=$?
sed 's/^/    /' "$T/out"
check "fault matrix: all observable faults detected with the right class, no false findings" [ $rc -eq 0 ]
n=$("$TOOLS/faultmatrix" "$T/fm" --json 2>/dev/null | jq '[.[].faults[] | select(.observable > 0)] | length')
check "the fault profiles injected observable faults of $n kinds (at least 8)" [ "${n:-0}" -ge 8 ]
# the long form, shortened: short cycles, so old damage piles up over the
# cycles (bench/fault-matrix --long runs 2,000 per profile; t-faultmatrix-soak,
# in make check-long, 600)
wait $long
rc=$?
sed 's/^/    /' "$T/outl"
check "long form (60 short cycles): every observable fault detected, rightly classed, no false finding" [ $rc -eq 0 ]
check "...and no violation judged from bytes never received" \
	[ "$(jq -s '[.[].findings[]? | select(.class == "unclassified" and .violation)] | length' "$T/fml/verdicts.jsonl")" -eq 0 ]
finish

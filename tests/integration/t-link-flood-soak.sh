#!/bin/bash
# run-all: long alone
# The link flood of t-link-flood for a whole minute (issue 26's acceptance:
# bounded refusal records, every refused connection counted, the honest
# boards all PASS while a process without the key connects again and again):
# the same test, its checks and bounds, with PC_FLOOD_S=60 and its campaign
# 40 cycles. A soak: make check-long runs it, with nothing beside it (the
# flood keeps both cores busy); make check runs t-link-flood's 5 s flood.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
long_setup "a minute-long link flood"
PC_FLOOD_S=60 PC_TEST_TMP="$T" bash "$(dirname "$0")/t-link-flood.sh" | tee "$T/flood.out"
rc=${PIPESTATUS[0]}
[ $rc -ne 77 ] || long_skip "t-link-flood: $(sed -n 's/^SKIP: //p' "$T/flood.out" | tail -1)"
check "t-link-flood with a minute-long flood passes (exit $rc)" [ $rc -eq 0 ]
finish

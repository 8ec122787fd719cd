#!/bin/bash
# t-plan: `powercut plan`, the cuts a qualification target needs: the
# figures of docs/results.md ("Confidence bounds") are what the command
# prints, the reference values hold (2,995 cuts for 0.1% at 95% with no
# violation), and bad options exit 2 naming the option.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo "t-plan: powercut plan"

"$PC" plan --rate 0.1% >"$T/p1" 2>&1
rc=$?
check "plan --rate 0.1% exits 0 (was $rc)" test $rc -eq 0
check "0.1% at 95% with no violation: 2,995 cuts" grep -qx '  with 0 violations: 2,995 cuts' "$T/p1"
check "the method is named" grep -q 'Clopper-Pearson exact binomial, one-sided' "$T/p1"
"$PC" plan --rate 0.1% --failures 1 --cuts 1200 --cycle-s 40 >"$T/p2" 2>&1
rc=$?
check "plan with a campaign under way exits 0 (was $rc)" test $rc -eq 0
check "1 of 1,200: below 0.395%" grep -q 'the rate is below 0.395% at 95% confidence' "$T/p2"

# docs/results.md's example output is what the commands print, line for line
awk '/^## Confidence bounds/{s=1} s && /^```$/{n++; next} s && n==1' docs/results.md >"$T/doc"
grep -v '^\$ ' "$T/doc" >"$T/doc.out"
cat "$T/p1" "$T/p2" >"$T/real.out"
check "docs/results.md shows two commands' output" test "$(grep -c '^\$ ' "$T/doc")" -eq 2
if ! check "docs/results.md's plan output is what powercut prints" cmp -s "$T/doc.out" "$T/real.out"; then
	diff "$T/doc.out" "$T/real.out"
fi

# what it refuses, each with exit 2 and the option named
bad() { # expect-in-message args...
	local want=$1; shift
	"$PC" plan "$@" >"$T/bad" 2>&1
	local rc=$?
	check "plan $* exits 2 (was $rc)" test $rc -eq 2
	check "plan $*: the message names $want" grep -q -- "$want" "$T/bad"
}
bad '--rate' --rate 5
bad '--rate' --rate 0
bad '--rate is required' --confidence 95%
bad '--confidence' --rate 0.01 --confidence 100%
bad '--failures' --rate 0.01 --failures -1 --cuts 10
bad 'go together' --rate 0.01 --cuts 10
bad 'more than --cuts' --rate 0.01 --failures 11 --cuts 10
bad '--cuts' --rate 0.01 --failures 0 --cuts 99999999999999
bad '--cycle-s' --rate 0.01 --cycle-s nan
finish

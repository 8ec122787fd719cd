# The fault matrix, shortened: every fault profile of the sim for a few dozen
# cycles; every observable injected fault detected with the right class, and
# no false finding on any board (bench/fault-matrix runs the full-size one).
. "$(dirname "$0")/lib.sh"
PC_BIN=$BIN bench/fault-matrix 25 "$T/fm" > "$T/out" 2>&1
rc=$?
sed 's/^/    /' "$T/out"
check "fault matrix: all observable faults detected with the right class, no false findings" [ $rc -eq 0 ]
n=$("$TOOLS/faultmatrix" "$T/fm" --json 2>/dev/null | jq '[.[].faults[] | select(.observable > 0)] | length')
check "the fault profiles injected observable faults of $n kinds (at least 8)" [ "${n:-0}" -ge 8 ]
finish

# lib.sh - shared helpers for the integration tests (sourced).
set -u
BIN=${PC_BIN:-build}
PC="$BIN/powercut"
AGENT="$BIN/powercut-agent"
TOOLS="$BIN/tools"
T=$(mktemp -d "${PC_TEST_TMP:-${TMPDIR:-/tmp}}/pc-it.XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0

ok()   { echo "  ok: $*"; }
bad()  { echo "  FAILED: $*"; fails=$((fails + 1)); }
check() { # check "what" command...
	local what=$1; shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}
# expect_fail "what" "substring" command... : command must exit non-zero and print substring
expect_fail() {
	local what=$1 sub=$2; shift 2
	local out rc
	out=$("$@" 2>&1); rc=$?
	if [ $rc -ne 0 ] && printf '%s' "$out" | grep -qF -- "$sub"; then
		ok "$what"
	else
		bad "$what (exit $rc, wanted '$sub', got: $(printf '%s' "$out" | head -3))"
	fi
}
finish() { [ "$fails" -eq 0 ]; exit $?; }

# A free TCP port on loopback.
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 30000))
		(exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }
	done
	echo 0
}

# A relay "get" command for a board started with setsid whose pid is in $1:
# "on" while that process lives (a zombie counts as dead: nobody may reap it).
write_get() {
	cat > "$1" <<'SH'
s=$(ps -o stat= -p "$(cat "$1" 2>/dev/null)" 2>/dev/null)
case "$s" in ""|Z*) echo off ;; *) echo on ;; esac
SH
}

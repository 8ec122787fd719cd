#!/bin/bash
# The gpiod relay driver against the real libgpiod, through the gpiosim
# LD_PRELOAD shim that plays the GPIO character device (and the hidrelay
# driver through hidrawsim): libgpiod 1.x, the system's, always; libgpiod
# 2.x from bookworm-backports when `make gpiod2` can fetch and build it
# (apt only), else skipped with the reason.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# A make of our own, not a sub-make of `make check`'s jobserver.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory "$@"; }

sim_cases_ran() { # the output of a run under the shims
	grep -q "gpiod: requested OFF at open, held, set and read back, released ...passed" "$1" &&
		grep -q "hidrelay: exact feature reports, state read back ...passed" "$1" &&
		! grep -q "SKIPPED" "$1"
}

if [ ! -f "$BIN/gpiosim.so" ] || [ ! -f "$BIN/hidrawsim.so" ]; then
	mk B="$BIN" gpiosim > "$T/shim.log" 2>&1 || { cat "$T/shim.log"; bad "build the shims in $BIN"; }
fi
# The sanitizer runtime must come first in LD_PRELOAD.
asan=$(ldd "$BIN/test-unit" 2>/dev/null | awk '/libasan/ { print $3 }')
preload="${asan:+$asan:}$PWD/$BIN/gpiosim.so:$PWD/$BIN/hidrawsim.so"
LD_PRELOAD=$preload "$BIN/test-unit" relay_hw > "$T/v1.out" 2>&1
rc=$?
check "libgpiod $(pkg-config --modversion libgpiod 2>/dev/null): gpiod and hidrelay cases pass under the shims" [ $rc -eq 0 ]
check "libgpiod 1.x: the simulator cases really ran" sim_cases_ran "$T/v1.out"
[ $rc -eq 0 ] || grep -E "FAILED|[0-9]+\. " "$T/v1.out" | head -10

if mk gpiod2 > "$T/gpiod2.log" 2>&1; then
	ver=$(sed -n 's/^Version:[[:space:]]*//p' build/gpiod2/usr/lib/*/pkgconfig/libgpiod.pc)
	build/gpiod2/test-relay-gpiod relay_hw > "$T/v2.out" 2>&1
	rc=$?
	check "libgpiod $ver (build/gpiod2): the whole relay_hw suite passes" [ $rc -eq 0 ]
	check "libgpiod $ver: the simulator cases really ran" grep -q \
		"gpiod: requested OFF at open, held, set and read back, released ...passed" "$T/v2.out"
	check "libgpiod $ver: the test binary uses build/gpiod2's libgpiod" \
		sh -c "ldd build/gpiod2/test-relay-gpiod | grep -q 'libgpiod.so.3 => .*build/gpiod2/'"
	[ $rc -eq 0 ] || grep -E "FAILED|[0-9]+\. " "$T/v2.out" | head -10
else
	tail -3 "$T/gpiod2.log" | sed 's/^/    /'
	skip_part "libgpiod 2.x: \`make gpiod2\` failed (no network or no bookworm-backports?); only libgpiod 1.x was tested"
fi
finish	# exits 77 (when nothing failed) if libgpiod 2.x was not tested

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

# --- `powercut relay` on gpiod boards, through the shim -----------------------
# The state file is the hardware: value is the line's physical level, owner
# the pid holding its request (0: free; a free line rests at its pull).
S="$T/gpio.state"
cat > "$S" <<STATE
chip gpiochip0 lines=8 label=relay-hat
line gpiochip0 3 value=1 pull=1 name=RELAY_B1
line gpiochip0 4 value=0 pull=0 name=RELAY_B2
STATE
cat > "$T/g.json" <<JSON
{ "campaign": "gp", "cycles": 5,
  "defaults": { "device": { "backend": "sim", "size": "1M", "record_size": 4096 },
                "boot_timeout_ms": 600000, "off_ms": 50 },
  "boards": [ { "name": "b1", "relay": { "driver": "gpiod", "chip": "relay-hat", "line": 3 } },
              { "name": "b2", "relay": { "driver": "gpiod", "chip": "gpiochip0", "line": "RELAY_B2" } } ] }
JSON
# another campaign's configuration naming b2's line its own way
cat > "$T/g2.json" <<JSON
{ "campaign": "other", "cycles": 5,
  "defaults": { "device": { "backend": "sim", "size": "1M", "record_size": 4096 } },
  "boards": [ { "name": "x9", "relay": { "driver": "gpiod", "chip": "/dev/gpiochip0", "line": 4 } } ] }
JSON
# a check that fails mid-way must not leave a relay holder behind: kill the
# ones this test's lock directory names (ours only), then clean up as lib.sh does
trap 'for p in $(sed -n "s/^{\"pid\":\([0-9]*\),.*\"role\":\"holder\".*/\1/p" "$POWERCUT_LOCK_DIR"/*.lock 2>/dev/null); do kill "$p"; done; rm -rf "$T"' EXIT
pcg() { GPIOSIM_STATE="$S" LD_PRELOAD="${asan:+$asan:}$PWD/$BIN/gpiosim.so" "$PC" "$@"; }
line() { # line OFFSET FIELD: that field of gpiochip0's line
	awk -v o="$1" -v k="$2=" '$1 == "line" && $3 == o { for (i = 4; i <= NF; i++) if (index($i, k) == 1) print substr($i, length(k) + 1) }' "$S"
}
lockfile() { grep -l "\"key\":\"$1\"" "$POWERCUT_LOCK_DIR"/*.lock 2>/dev/null; }

# get on a line held high (b1 rests at its pull-up: a board left powered)
pcg relay "$T/g.json" b1 get > "$T/get1" 2>&1
check "get on a line held high reads on (got: $(cat "$T/get1"))" grep -qx on "$T/get1"
check "and leaves it high" [ "$(line 3 value)" = 1 ]
check "and never made it an output" [ "$(line 3 dir)" = in ]

# on stays on after the command returns: a holder keeps the request
pcg relay "$T/g.json" b2 on > "$T/on" 2>&1
rc=$?
check "relay b2 on: exit 0 (was $rc)" [ $rc -eq 0 ]
check "relay b2 on: done, a holder keeps it" grep -q "relay on done; holder pid [0-9]* keeps it on" "$T/on"
hpid=$(sed -n 's/.*holder pid \([0-9]*\).*/\1/p' "$T/on")
sleep 0.5
check "after the command returned the line is high" [ "$(line 4 value)" = 1 ]
check "and driven (an output)" [ "$(line 4 dir)" = out ]
check "held by the holder pid $hpid (owner $(line 4 owner)), which lives" sh -c "[ '$(line 4 owner)' = '$hpid' ] && kill -0 $hpid"
check "the lock file names the holder, on" grep -q "\"pid\":$hpid,.*\"role\":\"holder\".*\"state\":\"on\"" "$(lockfile gpiod:gpiochip0:4)"
pcg relay "$T/g.json" b2 get > "$T/get2" 2>&1
check "get asks the holder: on" grep -qx on "$T/get2"
check "the line still high, still the holder's: value 1" [ "$(line 4 value)" = "1" ]
check "the line still high, still the holder's: owner $hpid" [ "$(line 4 owner)" = "$hpid" ]
pcg relay "$T/g2.json" x9 get > "$T/get3" 2>&1
check "another configuration naming the same line (by path and offset) reaches the same holder" grep -qx on "$T/get3"
pcg run "$T/g.json" --results "$T/elsewhere" --quiet --no-report > "$T/run0" 2>&1
rc=$?
check "a campaign on the held board is refused (exit $rc)" [ $rc -eq 2 ]
check "the refusal names the holder and how to let it go" \
	grep -q "board b2: relay gpiod:gpiochip0:4 is in use by a relay holder keeping board b2 on (pid $hpid .*powercut relay .*g.json b2 release" "$T/run0"
check "the refused campaign left the line alone: value 1" [ "$(line 4 value)" = "1" ]
check "the refused campaign left the line alone: owner $hpid" [ "$(line 4 owner)" = "$hpid" ]
pcg relay "$T/g.json" b2 off > "$T/off" 2>&1
check "off through the holder: low, still held: value 0" [ "$(line 4 value)" = "0" ]
check "off through the holder: low, still held: owner $hpid" [ "$(line 4 owner)" = "$hpid" ]
check "off through the holder: low, still held: dir out" [ "$(line 4 dir)" = "out" ]
pcg relay "$T/g.json" b2 cycle > "$T/cycle" 2>&1
check "cycle through the holder: on again, same holder: value 1" [ "$(line 4 value)" = "1" ]
check "cycle through the holder: on again, same holder: owner $hpid" [ "$(line 4 owner)" = "$hpid" ]
pcg relay "$T/g.json" b2 release > "$T/rel" 2>&1
check "release: the holder let go" grep -q "relay released: holder pid $hpid" "$T/rel"
check "the holder exited" sh -c "for i in \$(seq 50); do kill -0 $hpid 2>/dev/null || exit 0; sleep 0.1; done; exit 1"
check "the line is free and rests at its pull (low): owner 0" [ "$(line 4 owner)" = "0" ]
check "the line is free and rests at its pull (low): value 0" [ "$(line 4 value)" = "0" ]
# a holder killed outright: the kernel frees its line and its lock; the next
# user says it took the stale lock over
pcg relay "$T/g.json" b2 on > "$T/on2" 2>&1
hpid=$(sed -n 's/.*holder pid \([0-9]*\).*/\1/p' "$T/on2")
kill -KILL "$hpid"
# until it is gone (the kernel then frees its line and its lock)
for _ in $(seq 300); do kill -0 "$hpid" 2> /dev/null || break; sleep 0.1; done
pcg relay "$T/g.json" b2 get > "$T/get4" 2>&1
check "after a killed holder: get works and reads off (the line fell to its pull)" grep -qx off "$T/get4"
check "and says it took the stale lock over, naming the dead holder" grep -q "stale lock taken over: it named a relay holder keeping board b2 on (pid $hpid " "$T/get4"

# a campaign running with --results elsewhere: relay refuses its boards
# (not through pcg: $! must be powercut's pid, not a subshell's)
GPIOSIM_STATE="$S" LD_PRELOAD="${asan:+$asan:}$PWD/$BIN/gpiosim.so" \
	"$PC" run "$T/g.json" --results "$T/elsewhere" --quiet --no-report > "$T/run1" 2>&1 &
rpid=$!
check "the campaign holds b1's relay lock" sh -c "for i in \$(seq 100); do grep -q '\"pid\":$rpid,.*\"role\":\"run\"' \$(grep -l 'gpiod:gpiochip0:3' '$POWERCUT_LOCK_DIR'/*.lock) 2>/dev/null && exit 0; sleep 0.1; done; exit 1"
pcg relay "$T/g.json" b1 get > "$T/ref1" 2>&1
rc=$?
check "relay get on a board of the campaign running elsewhere: refused (exit $rc)" [ $rc -eq 1 ]
check "the refusal names the campaign, its pid and its results folder" \
	grep -q "in use by campaign gp (powercut run pid $rpid on .* results $T/elsewhere" "$T/ref1"
pcg relay "$T/g2.json" x9 on > "$T/ref2" 2>&1
rc=$?
check "another configuration naming b2's line: refused too (exit $rc)" grep -q "relay gpiod:gpiochip0:4 is in use by campaign gp (powercut run pid $rpid" "$T/ref2"
o=$(line 4 owner)
check "the campaign (its relay worker, pid $o) still holds b2's line" [ "$(ps -o ppid= -p "$o" | tr -d ' ')" = "$rpid" ]
kill -INT $rpid
wait $rpid
rc=$?
check "the campaign stops on SIGINT (exit $rc: 3, cycles left)" [ $rc -eq 3 ]
pcg relay "$T/g.json" b1 get > "$T/get5" 2>&1
rc=$?
check "once the campaign stopped, relay get works: exit 0 (was $rc)" [ $rc -eq 0 ]
check "once the campaign stopped, relay get works" grep -qxE "on|off" "$T/get5"

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

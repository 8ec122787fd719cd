#!/bin/bash
# An agent built without the emulated eMMC (`make agent SIM=0`,
# docs/target.md): no sim/ object in it, a sim: device and every --sim-*
# option refused with the reason, and a file region prepared, scanned and
# written as by the full agent.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# a make of our own, not a sub-make of `make check`'s jobserver; the flags of
# $PC_BIN's build (the sanitized one's, when it is that one)
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$ROOT" "$@"; }
case "$BIN" in
*san) OPTS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" ;;
*) OPTS="-O2 -g" ;;
esac
NB="$T/nosim"
mk agent SIM=0 B="$NB" OPT="$OPTS" > "$T/build.log" 2>&1
rc=$?
check "make agent SIM=0 (exit $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || { tail -5 "$T/build.log"; finish; }
A="$NB/powercut-agent"

# the symbols tell what was linked: the full agent has the emulator, this one not
check "the full agent links the emulator (sim_emmc_open)" sh -c 'nm "$1" | grep -q " T sim_emmc_open$"' _ "$AGENT"
check "the SIM=0 agent links nothing of sim/ (no sim_emmc_*, sim_opts_*, sim_truth_*)" \
	sh -c '! nm "$1" | grep -E " [TtDdBbRr] (sim_emmc_|sim_opts_|sim_truth_|sim_profile_)"' _ "$A"

"$A" info --device "sim:$T/m.img" > "$T/info.out" 2> "$T/info.err"
rc=$?
check "info on a sim: device fails (exit $rc)" [ $rc -eq 1 ]
check "  ... saying the agent was built without the sim board" \
	grep -q "sim:$T/m.img: this agent was built without the sim board (make SIM=0)" "$T/info.err"
"$A" prepare --device "sim:$T/m.img" --yes > "$T/prep.out" 2> "$T/prep.err"
rc=$?
check "prepare on a sim: device fails (exit $rc)" [ $rc -eq 1 ]
check "  ... saying why" grep -q "built without the sim board" "$T/prep.err"
check "  ... and makes no media file" [ ! -e "$T/m.img" ]
for o in profile program-us cache-sectors seed rate cut-after cut-at; do
	"$A" info --device "$T/f.img" "--sim-$o" 1 > /dev/null 2> "$T/opt.err"
	rc=$?
	check "--sim-$o is a usage error (exit $rc)" [ $rc -eq 2 ]
	check "  ... saying why" grep -q -- "--sim-$o '1': this agent was built without the sim board" "$T/opt.err"
done

# a posix region works as in the full agent
dd if=/dev/zero of="$T/f.img" bs=1M count=4 status=none
check "prepare a file region" "$A" prepare --device "$T/f.img" --yes
check "scan it" sh -c '"$1" scan --device "$2" > "$3"' _ "$A" "$T/f.img" "$T/scan.out"
check "  ... the scan ends with scan_end" grep -q '"type":"scan_end"' "$T/scan.out"
check "write 16 records in flush mode" sh -c '"$1" write --device "$2" --mode flush --records 16 --yes > "$3"' \
	_ "$A" "$T/f.img" "$T/write.out"
check "  ... the io audit is the kernel's, not the sim's" sh -c '! grep -q "\"src\":\"sim\"" "$1"' _ "$T/write.out"
finish

#!/bin/bash
# The cross-built agents (aarch64, armhf; static) under qemu-user: --version,
# a prepared file region (posix backend, O_DIRECT), scan, info, the portable
# unit suites (CRC32C with the ARMv8 CRC path on aarch64), and a short
# campaign driven by the host controller with the command relay starting the
# cross agent under qemu. qemu-user has no io_uring: the HELLO must say so and
# fua cycles must report that they ran as fua+flush.
#
# Skips (exit 77) unless PC_CROSS=1 or PC_CROSS_REQUIRE=1, and when a cross
# toolchain, qemu or the target libraries are missing, unless
# PC_CROSS_REQUIRE=1 (make cross-check), which installs them.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

require=${PC_CROSS_REQUIRE:-0}
# make check leaves it to make cross-check (or PC_CROSS=1): in .ci/run the
# cross toolchain installs in the background while make check runs, and a
# half-installed one must not decide a test
[ "${PC_CROSS:-0}" = 1 ] || [ "$require" = 1 ] ||
	skip "not asked for (PC_CROSS=1 runs it); make cross-check installs what it needs and runs it"
# name  triplet-  qemu  qemu options  uname -m  crc32c implementation
targets="aarch64:aarch64-linux-gnu-:qemu-aarch64:-cpu max:aarch64:armv8-crc
armhf:arm-linux-gnueabihf-:qemu-arm::armv7l:table"

missing_why() { # triplet- qemu -> why it cannot run, or nothing
	local t=$1 q=$2 tr=${1%-}
	command -v "${t}gcc" >/dev/null || { echo "no ${t}gcc"; return; }
	command -v "$q" >/dev/null || { echo "no $q (qemu-user)"; return; }
	[ -e "/usr/lib/$tr/pkgconfig/json-c.pc" ] || [ -e "/opt/powercut-cross/$tr/usr/lib/$tr/pkgconfig/json-c.pc" ] ||
		{ echo "no json-c/liburing/blkid for $tr"; return; }
	[ -e "/usr/lib/$tr/pkgconfig/libsodium.pc" ] || [ -e "/opt/powercut-cross/$tr/usr/lib/$tr/pkgconfig/libsodium.pc" ] ||
		{ echo "no libsodium for $tr"; return; }
}

# Build (or bring up to date) the static agent and the portable unit runner.
build_target() { # triplet-
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory \
		CROSS_COMPILE="$1" STATIC=1 agent cross-unit > "$T/build.log" 2>&1 ||
		{ tail -5 "$T/build.log"; return 1; }
}

quiet() { "$@" > /dev/null 2>&1; }

is_static() { # binary: no program interpreter
	! LC_ALL=C readelf -lW "$1" 2>/dev/null | grep -q 'program interpreter'
}

# O_DIRECT through qemu: the host syscall qemu makes must carry it.
check_odirect() { # qemu opts agent file
	local q=$1 o=$2 a=$3 f=$4
	if ! command -v strace >/dev/null; then
		skip_part "O_DIRECT pass-through through $q not checked: strace is not installed (tools/debian-packages-cross.txt lists it)"
		return
	fi
	# shellcheck disable=SC2086
	strace -f -qq -e trace=openat -o "$T/strace" "$q" $o "$a" scan --device "$f" > /dev/null 2>&1
	check "$q passes O_DIRECT to the host open of the region" \
		grep -q "\"$f\", O_RDONLY|O_DIRECT" "$T/strace"
}

# A short campaign; the host controller starts the cross agent under qemu.
campaign() { # name qemu opts agent
	local n=$1 q=$2 o=$3 a=$4 img="$T/$1.img"
	cat > "$T/$n.json" <<JSON
{ "campaign": "cross-$n", "cycles": 10, "listen": "127.0.0.1:0",
  "boards": [ { "name": "$n", "device": { "backend": "posix", "record_size": 4096, "path": "$img" },
    "relay": { "driver": "command",
      "on": "setsid $q $o $PWD/$a run --fresh-boot-id --device $img --offset 1M --length 2M --connect \$PC_CONNECT --board $n >> $T/$n.log 2>&1 & echo \$! > $T/$n.pid",
      "off": "p=\$(cat $T/$n.pid 2>/dev/null) && kill -KILL -\$p 2>/dev/null; true" },
    "modes": ["fua", "fua+flush", "flush", "journal", "none"], "records_per_cycle": 150, "queue_depth": 8,
    "cut": { "at": "random", "window_ms": [5, 40] }, "boot_timeout_ms": 20000, "off_ms": 5 } ] }
JSON
	"$PC" run "$T/$n.json" --results "$T/r-$n" --quiet > "$T/$n.out" 2>&1
}

run_target() { # name triplet- qemu qopts machine crc
	local n=$1 t=$2 q=$3 o=$4 m=$5 crc=$6 a img out v rc
	a="build/$n/powercut-agent"
	img="$T/$n.img"
	echo " $n ($q $o)"
	if ! check "$n: static agent and unit runner build" build_target "$t"; then return; fi
	check "$n: the agent is statically linked" is_static "$a"
	# shellcheck disable=SC2086
	v=$("$q" $o "$a" --version 2>&1)
	check "$n: --version under $q: '$v'" quiet expr "$v" : 'powercut-agent [0-9][0-9.]* (libblkid [yesno]*[^,]*, liburing [yesno]*.*)$'

	head -c 4194304 /dev/urandom > "$img"
	outside() { { head -c 1048576 "$img"; tail -c 1048576 "$img"; } | sha256sum; }
	local before
	before=$(outside)
	# shellcheck disable=SC2086
	check "$n: prepare a 2M region at 1M (posix, O_DIRECT)" \
		"$q" $o "$a" prepare --device "$img" --offset 1M --length 2M --record-size 4096 --yes 2> "$T/$n.prep"
	check_odirect "$q" "$o" "$a" "$img"
	# shellcheck disable=SC2086
	"$q" $o "$a" scan --device "$img" --offset 1M --length 2M > "$T/$n.scan" 2> "$T/$n.scan.err"
	rc=$?
	check "$n: scan exits 0" [ $rc -eq 0 ]
	check "$n: scan sees 510 slots, all whole" \
		test "$(jq -r 'select(.type == "scan_begin") | .slots' "$T/$n.scan")" = 510 -a \
		-n "$(grep -F '510 slots: 0 not whole' "$T/$n.scan.err")"
	# shellcheck disable=SC2086
	out=$("$q" $o "$a" info --device "$img" --offset 1M --length 2M 2>&1)
	check "$n: info names the agent's machine ($m)" [ "$(printf '%s' "$out" | jq -r .machine)" = "$m" ]
	check "$n: info: crc32c implementation is $crc" [ "$(printf '%s' "$out" | jq -r .crc32c)" = "$crc" ]
	check "$n: info: region geometry" [ "$(printf '%s' "$out" | jq -c '[.region.slots, .region.record_size]')" = "[510,4096]" ]

	for s in crc32c record proto; do
		# shellcheck disable=SC2086
		"$q" $o "build/$n/test-unit-portable" "$s" > "$T/$n.$s.unit" 2>&1
		rc=$?
		check "$n: unit suite $s passes under $q" \
			test $rc -eq 0 -a -n "$(grep "Suite: $s" "$T/$n.$s.unit")"
		[ $rc -eq 0 ] || grep -E '^ +[0-9]+\. |asserts' "$T/$n.$s.unit" | head -4
	done

	campaign "$n" "$q" "$o" "$a"
	rc=$?
	local r="$T/r-$n" V
	V="$r/verdicts.jsonl"
	check "$n: campaign exits 0" [ $rc -eq 0 ]
	[ $rc -eq 0 ] || tail -5 "$T/$n.out"
	check "$n: 10 verdicts, zero FAIL" test "$(jq -s 'length' "$V")" -eq 10 -a \
		"$(jq -s '[.[] | select(.verdict == "FAIL")] | length' "$V")" -eq 0
	check "$n: HELLO: no async path (\"async\":false)" \
		[ "$(jq -r 'select(.msg.type == "hello") | .msg.io.async' "$r/events.jsonl" | sort -u)" = false ]
	check "$n: HELLO: async_unavailable names ENOSYS" \
		quiet jq -e -s '[.[] | select(.msg.type == "hello")] | length > 0 and all(.msg.io.async_unavailable | test("ENOSYS"))' \
		"$r/events.jsonl"
	check "$n: HELLO: machine is $m" \
		[ "$(jq -r 'select(.msg.type == "hello") | .msg.machine' "$r/events.jsonl" | sort -u)" = "$m" ]
	check "$n: fua cycles say they ran as fua+flush" \
		[ "$(jq -r 'select(.mode == "fua") | .mode_run' "$V" | sort -u)" = "fua+flush" ]
	check "$n: flush and none cycles PASS" \
		[ "$(jq -s '[.[] | select(.mode == "flush" or .mode == "none") | select(.verdict != "PASS")] | length' "$V")" -eq 0 ]
	check "$n: some records were acknowledged" [ "$(jq -s 'map(.records.acked) | add' "$V")" -gt 0 ]
	# Cycles that need RWF_DSYNC (fua as fua+flush, fua+flush, the journal
	# commit) pass, or, where pwritev2 does not exist (qemu-user 7.2; kernels
	# before 4.7), end INFRA_ERROR saying so: never a PASS that was not run.
	local dsync_bad nosup
	dsync_bad=$(jq -s '[.[] | select(.mode == "fua" or .mode == "fua+flush" or .mode == "journal")
		| select(.verdict != "PASS")] | length' "$V")
	nosup=$(jq -s '[.[] | select(.verdict == "INFRA_ERROR")
		| select(.reason | test("RWF_DSYNC|dsync write|commit"; "i") and test("not supported"; "i"))] | length' "$V")
	if [ "$dsync_bad" -eq 0 ]; then
		ok "$n: fua, fua+flush and journal cycles PASS"
	elif [ "$dsync_bad" -eq "$nosup" ]; then
		# not a pass and not a failure of ours: the part is not tested, and
		# says so as a counted skip (the agent named it in each verdict's reason)
		skip_part "$n: fua, fua+flush and journal untested: their $nosup cycles ended INFRA_ERROR," \
			"pwritev2(RWF_DSYNC) not supported under $q (ENOSYS, glibc: EOPNOTSUPP)"
	else
		bad "$n: $dsync_bad fua/fua+flush/journal cycles did not PASS ($nosup for lack of pwritev2)"
		jq -c 'select(.verdict != "PASS") | [.cycle, .mode, .verdict, .reason]' "$V" | head -3
	fi
	check "$n: replay reproduces every verdict" "$PC" replay "$r"
	check "$n: every byte outside the region is unchanged" [ "$(outside)" = "$before" ]
}

ran=0 skipped=""
while IFS=: read -r n t q o m crc; do
	why=$(missing_why "$t" "$q")
	if [ -n "$why" ]; then
		skipped="$skipped $n ($why)"
		[ "$require" = 1 ] && bad "$n: cannot run: $why (make cross-check installs it: tools/install-cross-deps)"
		continue
	fi
	run_target "$n" "$t" "$q" "$o" "$m" "$crc"
	ran=$((ran + 1))
done <<EOF
$targets
EOF
if [ $ran -eq 0 ] && [ "$require" != 1 ]; then
	skip "no target can run here:$skipped; run make cross-check (installs them via tools/install-cross-deps)"
fi
[ -n "$skipped" ] && [ "$require" != 1 ] && skip_part "targets not run:$skipped"
finish	# exits 77 (when nothing failed) if a target was not run

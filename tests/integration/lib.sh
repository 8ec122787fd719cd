# lib.sh - shared helpers for the integration tests (sourced).
# shellcheck shell=bash
set -u
BIN=${PC_BIN:-build}
# shellcheck disable=SC2034  # PC and AGENT: for the tests that source this
PC="$BIN/powercut"
# shellcheck disable=SC2034
AGENT="$BIN/powercut-agent"
TOOLS="$BIN/tools"
T=$(mktemp -d "${PC_TEST_TMP:-${TMPDIR:-/tmp}}/pc-it.XXXXXX")
# the per-relay locks (relay/relay_lock.h) of this test only: tests running
# side by side name the same boards and relays
export POWERCUT_LOCK_DIR="$T/locks"
fails=0
# A test that failed keeps its folder for reading (the path is printed);
# one that passed or skipped removes it. Every EXIT trap starts with
# pc_rc=$? and ends with rm_T.
pc_rc=0
rm_T() {
	free_ports
	if [ "$fails" -gt 0 ] || { [ "$pc_rc" -ne 0 ] && [ "$pc_rc" -ne 77 ]; }; then
		echo "  kept for reading: $T (the test failed: exit $pc_rc, $fails check(s) failed)"
	else
		rm -rf "$T"
	fi
}
trap 'pc_rc=$?; rm_T' EXIT

ok()   { echo "  ok: $*"; }
# bad returns 1, so that a check's status is its condition's: a caller may
# branch on it (check ... || diagnose), and one that must not (check ... &&
# more) is refused by tools/lint-tests, since what follows && would run
# outside the check and its failure would be lost.
bad()  { echo "  FAILED: $*"; fails=$((fails + 1)); return 1; }
check() { # check "what" command...   (status: the command's, 0 or 1)
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
# A test that cannot run here says why and exits 77: run-all counts it as
# skipped, never as passed, and shows the reason -- the last line of the
# test's output that starts with "SKIP:". CI fails on a skip of a test that
# tests/integration/ci-expected says it must run.
skip() { echo "SKIP: $*"; exit 77; }
# A part that cannot run here: the rest of the test goes on, and finish then
# exits 77 (when nothing failed) with every skipped part's reason.
skipped_parts=""
skip_part() {
	echo "  skipped part: $*"
	skipped_parts="${skipped_parts:+$skipped_parts; }$*"
}
finish() {
	[ "$fails" -eq 0 ] || exit 1
	if [ -n "$skipped_parts" ]; then
		echo "SKIP: $skipped_parts"
		exit 77
	fi
	exit 0
}

# Loop devices. A partition that partx (BLKPG) added outlives `losetup -d`:
# the next image on that loop device, with another layout, then finds a
# stale /dev/loopNp1 at the old offset, partx -a fails ("error adding
# partition 1") and PARTLABEL finds nothing. loop_attach drops any stale
# partition of the device it got before adding the image's own (a kernel
# without the GPT parser scans nothing on -P); loop_detach drops them first.
# loop_attach IMG [losetup options]: prints the device; its partition 1 (if
# the image has one) exists when it returns 0.
loop_attach() {
	local img=$1 d; shift
	d=$(losetup -f --show -P "$@" "$img") || return 1
	partx -d "$d" > /dev/null 2>&1
	if partx -s "$d" > /dev/null 2>&1; then
		partx -a "$d" > /dev/null 2>&1
		for _ in $(seq 100); do [ -b "${d}p1" ] && break; sleep 0.1; done
	fi
	echo "$d"
}
loop_detach() { # DEV...
	local d
	for d in "$@"; do
		[ -n "$d" ] || continue
		partx -d "$d" > /dev/null 2>&1
		losetup -d "$d" 2> /dev/null
	done
	return 0
}

# sim_quick_caught: configs/sim-quick.json with its cut at 16..120
# acknowledged records instead of a random 5..60 ms. A lying board is caught
# only once a flush it lied about was acknowledged; on a loaded machine a
# random instant can come before the first one in every cycle, and the
# campaign then shows no FAIL at all. A cut after 16 ACKs (two flushes at
# flush_every 8) catches it whatever the load. (none cycles never ACK: they
# are cut when their work is done, never during writes: the lying board's
# mode none is INCONCLUSIVE, under its FAIL. The honest board keeps the
# demo's mix.)
sim_quick_caught() {
	jq '.boards |= map(if .name == "lying-1" then .cut = {"at": "acks", "acks": [16, 120]} else . end)' \
		configs/sim-quick.json
}

# joined FILE: the text with its lines joined by single spaces (the report
# wraps a long line, a long path breaks one: match a message in this)
joined() { tr '\n' ' ' < "$1" | tr -s ' '; }

# rc_in RC N...: RC is one of the Ns (check "..." rc_in $rc 0 3)
rc_in() {
	local r=$1 x; shift
	for x in "$@"; do [ "$r" = "$x" ] && return 0; done
	return 1
}

# passed_or_late RC RESULTS: the campaign's exit RC is 0, or 3 with the
# report's result INCONCLUSIVE and nothing else: its relay (a shell, a
# process kill, a PDU, under load) cut after the sim's fast writes had
# ended, so no mode's cuts met its writes (docs/verdicts.md#no-pass-without-evidence).
# For a test of plumbing, not of the evidence rule (t-inconclusive's): a
# FAIL, BOOT_FAIL or INCOMPLETE still fails it. Says which it was.
passed_or_late() {
	local rc=$1 res
	[ "$rc" = 0 ] && return 0
	[ "$rc" = 3 ] || { echo "    exit $rc"; return 1; }
	res=$("$PC" report --format json "$2" 2>/dev/null | jq -r .result)
	echo "    exit 3, $res: the cuts came after the writes (a late relay)"
	[ "$res" = INCONCLUSIVE ]
}

# A free TCP port on loopback: one nothing listens on, below the kernel's
# ephemeral range (a port within it can be handed to any outgoing
# connection, an agent's or a relay's HTTP request, between this probe and
# the bind that wants it), and reserved for this test until it ends: tests
# run side by side (run-all -j), here and in other checkouts, and two of them
# probing the same free port would both take it. A reservation is a folder
# $PC_PORTS_DIR/PORT (default /tmp/powercut-ports) holding the test's pid;
# rm_T drops the test's own, and one whose test is gone is taken over.
PC_PORTS_DIR=${PC_PORTS_DIR:-/tmp/powercut-ports}
free_port() {
	local p lo owner
	read -r lo _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
	[ "${lo:-0}" -gt 12000 ] || lo=32768
	mkdir -p "$PC_PORTS_DIR" 2> /dev/null
	for _ in $(seq 100); do
		p=$((10000 + RANDOM % (lo - 10000)))
		(exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && continue
		if mkdir "$PC_PORTS_DIR/$p" 2> /dev/null; then
			echo $$ > "$PC_PORTS_DIR/$p/pid"
			echo "$p" >> "$T/.ports"
			echo "$p"
			return
		fi
		# another test's; taken over when that test is gone
		owner=""
		read -r owner < "$PC_PORTS_DIR/$p/pid" 2> /dev/null
		if [ -n "$owner" ] && ! kill -0 "$owner" 2> /dev/null; then
			rm -rf "${PC_PORTS_DIR:?}/$p"
		fi
	done
	echo 0
}
free_ports() { # the reservations of this test (rm_T)
	local p
	[ -f "$T/.ports" ] || return 0
	while read -r p; do
		[ -n "$p" ] && rm -rf "${PC_PORTS_DIR:?}/$p"
	done < "$T/.ports"
	rm -f "$T/.ports"
}

# A relay "get" command for a board started with setsid whose pid is in $1:
# "on" while that process lives (a zombie counts as dead: nobody may reap it).
write_get() {
	cat > "$1" <<'SH'
s=$(ps -o stat= -p "$(cat "$1" 2>/dev/null)" 2>/dev/null)
case "$s" in ""|Z*) echo off ;; *) echo on ;; esac
SH
}

# long_setup WHAT: a soak's start ("# run-all: long" in its file: it runs for
# minutes to prove endurance). Skips (exit 77) unless PC_LONG=1 or
# PC_LONG_REQUIRE=1 (make check-long, run-all --long): there a test that
# cannot run fails. make check leaves the soaks to make check-long.
long_setup() {
	[ "${PC_LONG:-0}" = 1 ] || [ "${PC_LONG_REQUIRE:-0}" = 1 ] ||
		skip "$1; make check-long runs it (or PC_LONG=1)"
}
long_skip() { # a soak that cannot run here: a failure under make check-long
	if [ "${PC_LONG_REQUIRE:-0}" = 1 ]; then
		bad "the soak must run here (PC_LONG_REQUIRE=1) but: $*"
		finish
	fi
	skip "$*"
}

# A pty pair as the board's serial cable (tools/ptypair): sets host_end (the
# harness's end), board_end and cable (its pid, killed on exit).
cable_start() {
	"$TOOLS/ptypair" "$T/ptys" & cable=$!
	trap 'pc_rc=$?; kill $cable 2>/dev/null; rm_T' EXIT
	for _ in $(seq 300); do [ -s "$T/ptys" ] && break; sleep 0.1; done
	host_end=$(sed -n 1p "$T/ptys"); board_end=$(sed -n 2p "$T/ptys")
	check "a pty pair stands in for the serial cable (host end $host_end)" test -c "$host_end"
	check "a pty pair stands in for the serial cable (board end $board_end)" test -c "$board_end"
}

# Stop the daemons a test started (pids): SIGTERM, at most 5 s for them to
# go, then SIGKILL, so that none outlives the test.
stop_daemons() {
	local p alive
	for p in "$@"; do kill "$p" 2> /dev/null; done
	for _ in $(seq 50); do
		alive=""
		for p in "$@"; do kill -0 "$p" 2> /dev/null && alive=1; done
		[ -n "$alive" ] || break
		sleep 0.1
	done
	for p in "$@"; do kill -KILL "$p" 2> /dev/null; done
}

# lava_skip WHY: a LAVA test that cannot run here skips, unless
# PC_LAVA_REQUIRE=1 (make lava-check): then it fails, naming WHY.
# lava_setup: the LAVA tests' start. They run only with PC_LAVA=1 or
# PC_LAVA_REQUIRE=1: make check leaves them to make lava-check, so a LAVA
# package that happens to be installed (or, in .ci/run, is being installed
# in the background while make check runs) never runs them twice or half.
lava_skip() {
	if [ "${PC_LAVA_REQUIRE:-0}" = 1 ]; then
		bad "LAVA must run here (PC_LAVA_REQUIRE=1) but: $*"
		finish
	fi
	skip "$*; make lava-check installs what it needs and runs it"
}
lava_setup() {
	[ "${PC_LAVA:-0}" = 1 ] || [ "${PC_LAVA_REQUIRE:-0}" = 1 ] ||
		lava_skip "not asked for (PC_LAVA=1 runs it)"
}

# vm_setup WHAT: the virtual-board tests' start. Skips (exit 77) unless
# PC_VM=1 or PC_VM_REQUIRE=1 (then a skip is a failure: make vm-check), or
# when QEMU or ptypair is missing; builds the board image (make vm-image)
# when it is missing or older than the static agent (an old image would test
# an old agent: make's own dependencies rebuild the agent when its sources
# changed). WHAT says how long the test takes, for the skip message. Sets VM
# and sources $VM/sd.geometry (offset length record_size spr nslots partlabel).
vm_skip() {
	if [ "${PC_VM_REQUIRE:-0}" = 1 ]; then
		bad "the virtual boards must run here (PC_VM_REQUIRE=1) but: $*"
		finish
	fi
	echo "SKIP: $*"
	exit 77	# run-all counts it as skipped, never as passed, and shows the reason
}
vm_setup() {
	local stale=""
	VM=${PC_VM_DIR:-build/vm}
	[ "${PC_VM:-0}" = 1 ] || [ "${PC_VM_REQUIRE:-0}" = 1 ] ||
		vm_skip "$1; run it with 'make vm-check' (or PC_VM=1)"
	command -v qemu-system-x86_64 >/dev/null ||
		vm_skip "qemu-system-x86_64 is not installed ('make vm-deps' installs qemu-system-x86)"
	[ -x "$TOOLS/ptypair" ] || vm_skip "$TOOLS/ptypair is not built"
	if [ "$VM" = build/vm ] && [ -e "$VM/initrd.img" ]; then
		make --no-print-directory STATIC=1 B=build/static agent > "$T/static.log" 2>&1 ||
			vm_skip "the static agent does not build: $(tail -1 "$T/static.log")"
		{ [ build/static/powercut-agent -nt "$VM/initrd.img" ] || [ "$VM/initrd.img" -nt "$VM/initrd-fua.img" ]; } &&
			stale=" (the agent changed since it was built)"
	fi
	if [ ! -e "$VM/kernel" ] || [ ! -e "$VM/initrd.img" ] || [ ! -e "$VM/initrd-fua.img" ] ||
		[ ! -e "$VM/sd.img" ] || [ -n "$stale" ]; then
		echo "  building the board image (make vm-image)$stale"
		make --no-print-directory vm-image > "$T/vm-image.log" 2>&1 ||
			vm_skip "make vm-image failed (are Debian's kernel packages reachable?): $(tail -1 "$T/vm-image.log")"
	fi
	# the geometry make vm-image wrote (each must be set by it)
	offset="" length="" record_size="" spr="" nslots="" partlabel=""
	# shellcheck source=/dev/null
	. "$VM/sd.geometry"
	[ -n "$offset" ] && [ -n "$length" ] && [ -n "$record_size" ] && [ -n "$spr" ] && [ -n "$nslots" ] &&
		[ -n "$partlabel" ] || vm_skip "$VM/sd.geometry lacks one of offset length record_size spr nslots partlabel (make vm-image)"
}

# A lab PDU for sim boards behind Debian's real pdudaemon (the LAVA tests):
# pdu_lab AGENT writes $T/pdu.sh (outlet N powers the board named in
# $T/outlet-N: "NAME HOST:PORT PROFILE", or "NAME /dev/pts/N PROFILE" for an
# agent on its serial console (a pty); on starts its agent with setsid,
# off SIGKILLs its process group; each switch is logged in $T/pdu.log),
# starts pdudaemon with a localcmdline PDU "lab" on a free port ($dport,
# its pid added to $pids) and waits for it to answer.
pdu_lab() {
	local agent=$1
	cat > "$T/pdu.sh" <<SH
#!/bin/bash
act=\$1 outlet=\$2
read -r b connect profile < "$T/outlet-\$outlet" || exit 1
echo "\$act \$b" >> "$T/pdu.log"
case \$act in
on) case \$connect in /*) link="--console \$connect" ;; *) link="--connect \$connect" ;; esac
	setsid "$agent" run --fresh-boot-id --device "sim:$T/\$b.img" --sim-profile "\$profile" \
	\$link --key "$T/agent.key" --board \$b >> "$T/\$b.log" 2>&1 < /dev/null & echo \$! > "$T/\$b.pid" ;;
off) { read -r p < "$T/\$b.pid"; } 2> /dev/null && kill -KILL -- -\$p 2> /dev/null; : > "$T/\$b.pid" ;;
esac
SH
	dport=$(free_port)
	cat > "$T/pdudaemon.conf" <<JSON
{ "daemon": { "hostname": "127.0.0.1", "port": $dport, "logging_level": "INFO", "listener": "http" },
  "pdus": { "lab": { "driver": "localcmdline", "cmd_on": "bash $T/pdu.sh on %s", "cmd_off": "bash $T/pdu.sh off %s" } } }
JSON
	pdudaemon --conf "$T/pdudaemon.conf" --listener http --logfile "$T/daemon.log" &
	dpid=$!
	pids="$pids $dpid"
	for _ in $(seq 100); do (exec 3<> "/dev/tcp/127.0.0.1/$dport") 2> /dev/null && return 0; sleep 0.1; done
	return 1
}

#!/bin/bash
# A device that refuses writes is a finding, never a hang (issue 8): a loop
# device made read-only (blockdev --setro) after the agent opened it fails
# every later write with EPERM. In every mode at queue depth 1, 4 and 32,
# `powercut-agent write` must exit 1 within 1 s of the device going
# read-only, name the device, LBA, errno and mode, and spin no CPU while it
# waits. A device that is read-only before the agent starts (losetup -r) is
# refused at open with its own clear error, and can still be scanned.
#
# Without root, losetup or blockdev this test cannot run: it says SKIP and
# exits 77, which run-all counts as skipped, not passed.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# skip (lib.sh): prints "SKIP: why" and exits 77
[ "$(id -u)" = 0 ] || skip "needs root (loop devices)"
for tool in losetup blockdev pgrep od; do
	command -v $tool > /dev/null || skip "needs $tool"
done

loops=""
cleanup() {
	for l in $loops; do blockdev --setrw "$l" 2> /dev/null; losetup -d "$l" 2> /dev/null; done
	rm_T
}
trap 'pc_rc=$?; cleanup' EXIT

# 128 MiB of 512-byte records: far more than any mode writes in the time it
# takes to make the device read-only, so the failure lands mid-run.
truncate -s 128M "$T/disk.img"
dev=$(losetup -f --show "$T/disk.img" 2> "$T/losetup.err") || skip "no loop device ($(cat "$T/losetup.err"))"
loops="$dev"
check "prepare $dev" "$AGENT" prepare --device "$dev" --allow-whole-disk --record-size 512 --yes

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# CPU ticks (utime + stime) of a live process
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2> /dev/null; }
hz=$(getconf CLK_TCK)

# one mode at one queue depth
one() {
	local mode=$1 qd=$2 name="$1 qd $2" sub apid t0 t1 trep c0 cpu ms seq lba op got
	rm -f "$T/out" "$T/err" "$T/time"
	# every slot back to generation 0: what lands below is this run's
	"$AGENT" prepare --device "$dev" --allow-whole-disk --record-size 512 --yes 2> "$T/prep" ||
		{ bad "$name: re-prepare failed: $(cat "$T/prep")"; return; }
	# bash's time measures the agent's own CPU (user + system) and wall time
	( TIMEFORMAT='%R %U %S'; time "$AGENT" write --device "$dev" --allow-whole-disk --mode "$mode" --qd "$qd" \
		--yes > "$T/out" 2> "$T/err" ) 2> "$T/time" &
	sub=$!
	apid=""
	for _ in $(seq 500); do
		apid=$(pgrep -P "$sub" -f powercut-agent | head -1)
		# the agent has the device open: its writes are under way
		[ -n "$apid" ] && [ -n "$(find "/proc/$apid/fd" -lname "$dev" 2> /dev/null)" ] && break
		kill -0 "$sub" 2> /dev/null || break
		sleep 0.01
	done
	sleep 0.1
	c0=$(ticks "$apid")
	blockdev --setro "$dev"
	t0=$(now_ms)
	trep=""
	while kill -0 "$sub" 2> /dev/null && [ $(($(now_ms) - t0)) -lt 5000 ]; do
		[ -z "$trep" ] && grep -q "refused" "$T/err" 2> /dev/null && trep=$(now_ms)
		sleep 0.01
	done
	t1=$(now_ms)
	[ -z "$trep" ] && grep -q "refused" "$T/err" 2> /dev/null && trep=$t1
	if kill -0 "$sub" 2> /dev/null; then
		bad "$name: still running $((t1 - t0)) ms after the device went read-only (a hang), $(( ($(ticks "$apid") - ${c0:-0}) * 1000 / hz )) ms of CPU since"
		kill -KILL "$apid" 2> /dev/null
		wait "$sub" 2> /dev/null
		blockdev --setrw "$dev"
		return
	fi
	wait "$sub"
	blockdev --setrw "$dev"
	ms=$((trep - t0))
	read -r _ u s < "$T/time"
	cpu=$(awk -v u="$u" -v s="$s" -v c0="${c0:-0}" -v hz="$hz" 'BEGIN { printf "%d", (u + s - c0 / hz) * 1000 }')
	if [ -z "$(jq -r '.write_error.seq // empty' "$T/out" 2> /dev/null)" ]; then
		bad "$name: no write_error (did the run finish before the device went read-only?): $(head -c 300 "$T/err")"
		return
	fi
	seq=$(jq -r '.write_error.seq' "$T/out")
	lba=$(jq -r '.write_error.lba' "$T/out")
	op=$(jq -r '.write_error.op' "$T/out")
	echo "    $name: reported after $ms ms, exited after $((t1 - t0)) ms, agent CPU after setro ${cpu} ms; refused $op of seq $seq at LBA $lba (errno $(jq -r '.write_error.errno' "$T/out"))"
	check "$name: reported within 1 s of the device going read-only ($ms ms)" [ "$ms" -le 1000 ]
	check "$name: no CPU burnt while waiting ($cpu ms of CPU after setro)" [ "$cpu" -le 500 ]
	check "$name: the message names device, LBA, errno and mode" \
		grep -q "$dev: the device refused .*seq $seq, LBA $lba .*mode $mode, queue depth $qd: .*(errno [0-9]*)" "$T/err"
	check "$name: the JSON names the mode" [ "$(jq -r '.write_error.mode' "$T/out")" = "$mode" ]
	check "$name: the LBA lies in the region's slots (>= 8: $lba)" [ "$lba" -ge 8 ]
	check "$name: the LBA lies in the region's slots (< $((128 * 2048 - 8)): $lba)" [ "$lba" -lt $((128 * 2048 - 8)) ]
	if [ "$op" != "cache flush" ]; then
		# the refused write never landed: its sector holds no record of that seq
		got=$(od -A n -t u8 -j $((lba * 512 + 24)) -N 8 "$dev" | tr -d ' ')
		check "$name: the refused write did not land (seq at LBA $lba is $got, not $seq)" [ "$got" != "$seq" ]
	fi
}

for mode in fua fua+flush flush journal none; do
	for qd in 1 4 32; do
		one "$mode" "$qd"
	done
done

# relwr needs an eMMC: on a loop device it is refused as such, at once, and
# that is the agent's limit, not a finding about the device
expect_fail "relwr on a loop device: not an MMC device" "not an MMC device" \
	timeout 5 "$AGENT" write --device "$dev" --allow-whole-disk --mode relwr --yes
check "...and no write_error is claimed" sh -c "! timeout 5 '$AGENT' write --device '$dev' --allow-whole-disk --mode relwr-off --yes 2>/dev/null | grep -q write_error"

# read-only before the agent starts: refused at open, distinctly
losetup -d "$dev"
loops=""
rodev=$(losetup -r -f --show "$T/disk.img") || skip "no read-only loop device"
loops="$rodev"
before=$(sha256sum < "$rodev")
expect_fail "write on a losetup -r device: read-only (EROFS) at open" "$rodev is read-only (EROFS)" \
	timeout 5 "$AGENT" write --device "$rodev" --allow-whole-disk --mode fua --qd 4 --yes
expect_fail "prepare on it too" "$rodev is read-only (EROFS)" \
	timeout 5 "$AGENT" prepare --device "$rodev" --allow-whole-disk --yes
check "scan still reads it" sh -c "timeout 20 '$AGENT' scan --device '$rodev' --allow-whole-disk > '$T/scan' 2>/dev/null"
check "...every byte unchanged" [ "$(sha256sum < "$rodev")" = "$before" ]
finish

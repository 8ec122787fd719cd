#!/bin/bash
# The agent writes only where it may (issue 8, acceptance point 2). Against
# its own commands (prepare, write, scan, and run under a real harness): a
# device without a powercut superblock, a foreign ext4 image (a file and a
# loop partition), a partition table, a mounted filesystem's backing file,
# an attached loop device's backing file, a superblock whose region is
# larger than --length. Each refusal names the device and the reason, and
# every byte is unchanged (sha256 of the whole device, and of the parts
# outside the region where a region is written).
#
# The file cases need no privileges; the loop-device and mount cases need
# root, losetup and mount: without them they are SKIPPED loudly and the
# test exits 77 (run-all counts it as skipped, never as passed).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

have_e2fs=1
command -v mkfs.ext4 > /dev/null || { have_e2fs=0; skip_part "no mkfs.ext4 (package e2fsprogs): the foreign-filesystem cases"; }

loops="" mnt=""
cleanup() {
	[ -n "$mnt" ] && umount "$mnt" 2> /dev/null
	# shellcheck disable=SC2086
	loop_detach $loops
	rm_T
}
trap 'pc_rc=$?; cleanup' EXIT

sum() { sha256sum < "$1" | cut -d' ' -f1; }
# sha256 of everything outside [off, off + len) of a file or device
outside() { { head -c "$2" "$1"; tail -c +$(($2 + $3 + 1)) "$1"; } | sha256sum | cut -d' ' -f1; }
# refused "what" "must appear" command...: exit 1, the device and the reason named
refused() {
	local what=$1 sub=$2 out rc; shift 2
	out=$(timeout 30 "$@" 2>&1); rc=$?
	if [ $rc -eq 1 ] && printf '%s' "$out" | grep -qF -- "$sub"; then
		ok "$what"
	else
		bad "$what (exit $rc, wanted '$sub', got: $(printf '%s' "$out" | head -3))"
	fi
}

# ---- no superblock: nothing is written, nothing is scanned
head -c 8388608 /dev/urandom > "$T/raw.img"
s=$(sum "$T/raw.img")
for m in fua none; do
	refused "write ($m) on a device without a superblock" "$T/raw.img: not a prepared powercut region" \
		"$AGENT" write --device "$T/raw.img" --mode "$m" --qd 4 --yes
done
refused "scan of it" "$T/raw.img: not a prepared powercut region" "$AGENT" scan --device "$T/raw.img"
refused "...and at an offset, both superblocks named" "superblock A: no powercut superblock (magic missing); superblock B:" \
	"$AGENT" write --device "$T/raw.img" --offset 1M --length 4M --mode flush --yes
check "...every byte unchanged" [ "$(sum "$T/raw.img")" = "$s" ]

# ---- a foreign filesystem in a file
if [ $have_e2fs = 1 ]; then
	truncate -s 16M "$T/ext4.img"
	mkfs.ext4 -q -F -L pcforeign "$T/ext4.img"
	s=$(sum "$T/ext4.img")
	refused "prepare refuses an ext4 image, naming device and filesystem" \
		"$T/ext4.img holds an ext4 filesystem (LABEL=pcforeign): prepare would destroy it" \
		"$AGENT" prepare --device "$T/ext4.img" --yes
	refused "...also for a region in its middle" "$T/ext4.img holds an ext4 filesystem" \
		"$AGENT" prepare --device "$T/ext4.img" --offset 4M --length 4M --yes
	expect_fail "...--force alone is a usage error" "--confirm-device" \
		"$AGENT" prepare --device "$T/ext4.img" --force --yes
	refused "...--force with another device's name is refused" "does not name the device being prepared" \
		"$AGENT" prepare --device "$T/ext4.img" --force --confirm-device /dev/sda --yes
	refused "write refuses it" "$T/ext4.img: not a prepared powercut region" \
		"$AGENT" write --device "$T/ext4.img" --mode fua --yes
	refused "scan refuses it" "$T/ext4.img: not a prepared powercut region" "$AGENT" scan --device "$T/ext4.img"
	check "...every byte unchanged" [ "$(sum "$T/ext4.img")" = "$s" ]
	cp "$T/ext4.img" "$T/forced.img"
	check "--force --confirm-device with the device typed again overwrites it" \
		"$AGENT" prepare --device "$T/forced.img" --force --confirm-device "$T/forced.img" --yes
	check "...and then it is ours: re-prepared with --yes alone" \
		"$AGENT" prepare --device "$T/forced.img" --record-size 8192 --yes
fi

# ---- a superblock whose region is larger than --length
head -c 8388608 /dev/urandom > "$T/geom.img"
check "prepare a 4M region at 1M" "$AGENT" prepare --device "$T/geom.img" --offset 1M --length 4M --yes
s=$(sum "$T/geom.img")
refused "write with --length 2M refuses the 4M superblock" \
	"the region prepared at offset 1048576 is 4194304 bytes (its superblock A), but --length 2097152 asks for less: run with --length 4194304" \
	"$AGENT" write --device "$T/geom.img" --offset 1M --length 2M --mode none --qd 32 --yes
refused "...so does scan" "but --length 2097152 asks for less: run with --length 4194304" \
	"$AGENT" scan --device "$T/geom.img" --offset 1M --length 2M
check "...every byte unchanged" [ "$(sum "$T/geom.img")" = "$s" ]
o=$(outside "$T/geom.img" 1048576 4194304)
for m in fua flush none journal fua+flush; do
	check "write ($m) inside the region it was given" \
		sh -c "'$AGENT' write --device '$T/geom.img' --offset 1M --length 4M --mode $m --qd 32 --yes > /dev/null"
done
check "...and not one byte outside it changed" [ "$(outside "$T/geom.img" 1048576 4194304)" = "$o" ]

# ---- run, under a real harness: the agent says why and writes nothing
run_refused() { # NAME DEVICE-ARGS SUBSTRING FILE
	local name=$1 args=$2 sub=$3 file=$4 before rc
	before=$(sum "$file")
	cat > "$T/$name.json" <<JSON
{ "campaign": "$name", "cycles": 2, "listen": "127.0.0.1:0",
  "boards": [ { "name": "$name", "device": { "backend": "posix", "record_size": 4096 },
    "relay": { "driver": "command",
      "on": "setsid $PWD/$AGENT run --fresh-boot-id $args --connect \$PC_CONNECT --board $name >> $T/$name.log 2>&1 & echo \$! > $T/$name.pid",
      "off": "kill -KILL \$(cat $T/$name.pid 2>/dev/null) 2>/dev/null; true" },
    "modes": ["fua"], "queue_depth": 8, "records_per_cycle": 50,
    "boot_timeout_ms": 3000, "boot_retries": 0, "off_ms": 10 } ] }
JSON
	"$PC" run "$T/$name.json" --results "$T/r-$name" --quiet --no-report > "$T/$name.out" 2>&1
	rc=$?
	check "run ($name): the harness gives up on the board (exit 3: INCOMPLETE, was $rc)" [ $rc -eq 3 ]
	check "run ($name): the agent says why ($sub)" grep -qF -- "$sub" "$T/$name.log"
	check "run ($name): INFRA_ERROR, never PASS or FAIL" \
		[ "$(jq -s '[.[] | .verdict] | unique == ["INFRA_ERROR"]' "$T/r-$name/verdicts.jsonl")" = true ]
	check "run ($name): every byte unchanged" [ "$(sum "$file")" = "$before" ]
}
if "$AGENT" run --help | grep -q -- --key; then
	run_refused raw "--device $T/raw.img" "$T/raw.img: not a prepared powercut region" "$T/raw.img"
	run_refused geom "--device $T/geom.img --offset 1M --length 2M" "but --length 2097152 asks for less" "$T/geom.img"
	[ $have_e2fs = 1 ] && run_refused ext4 "--device $T/ext4.img" "$T/ext4.img: not a prepared powercut region" "$T/ext4.img"
else
	skip_part "this agent has no run --key: the run cases"
fi

# ---- loop devices and mounts (root)
if [ "$(id -u)" != 0 ] || ! command -v losetup > /dev/null || ! command -v mount > /dev/null || [ $have_e2fs = 0 ]; then
	skip_part "needs root, losetup, mount and mkfs.ext4: the loop-device and mounted-filesystem cases"
	finish	# exits 77 with the skipped parts' reasons when nothing failed
fi

# a mounted filesystem's backing file (mounted read-only, so the filesystem
# itself writes nothing and every byte can be compared)
cp "$T/ext4.img" "$T/mounted.img"
s=$(sum "$T/mounted.img")
if lo=$(loop_attach "$T/mounted.img" 2> "$T/lo.err"); then
	loops="$loops $lo"
	mkdir -p "$T/mnt"
	if mount -o ro,noload -t ext4 "$lo" "$T/mnt" 2> "$T/mount.err"; then
		mnt="$T/mnt"
		refused "prepare refuses a mounted filesystem's backing file, naming loop and mount point" \
			"$T/mounted.img is the backing file of a mounted filesystem: $lo is mounted on $T/mnt" \
			"$AGENT" prepare --device "$T/mounted.img" --yes
		refused "...even with --force --confirm-device" "is the backing file of a mounted filesystem" \
			"$AGENT" prepare --device "$T/mounted.img" --force --confirm-device "$T/mounted.img" --yes
		refused "write refuses it" "$T/mounted.img is the backing file of a mounted filesystem" \
			"$AGENT" write --device "$T/mounted.img" --mode fua --yes
		refused "prepare refuses the mounted loop device itself" "$lo is mounted on $T/mnt" \
			"$AGENT" prepare --device "$lo" --allow-whole-disk --force --confirm-device "$lo" --yes
		refused "write refuses it" "$lo is mounted on $T/mnt" \
			"$AGENT" write --device "$lo" --allow-whole-disk --mode none --yes
		if "$AGENT" run --help | grep -q -- --key; then
			run_refused mounted "--device $T/mounted.img" "is the backing file of a mounted filesystem" "$T/mounted.img"
		fi
		umount "$T/mnt" && mnt=""
	else
		skip_part "cannot mount an ext4 loop device here ($(cat "$T/mount.err")): the mounted cases"
	fi
	# attached but not mounted: still in use
	refused "prepare refuses an attached loop device's backing file" \
		"$T/mounted.img is the backing file of the loop device $lo, which is in use" \
		"$AGENT" prepare --device "$T/mounted.img" --force --confirm-device "$T/mounted.img" --yes
	refused "the loop device itself: prepare sees the ext4" "$lo holds an ext4 filesystem" \
		"$AGENT" prepare --device "$lo" --allow-whole-disk --yes
	loop_detach "$lo"
	loops=""
	check "...every byte of the image unchanged" [ "$(sum "$T/mounted.img")" = "$s" ]
else
	skip_part "no loop device ($(cat "$T/lo.err")): the mounted cases"
fi

# a GPT disk with an ext4 partition
truncate -s 24M "$T/gpt.img"
printf 'label: gpt\nsize=8M, name="pc-safety-%s"\n' "$$" | sfdisk -q "$T/gpt.img" > /dev/null
if lo=$(loop_attach "$T/gpt.img" 2> "$T/lo.err"); then
	loops="$lo"
	if [ -b "${lo}p1" ]; then
		mkfs.ext4 -q -F -L pcpart "${lo}p1"
		s=$(sum "$lo")
		refused "prepare refuses the ext4 partition" "${lo}p1 holds an ext4 filesystem (LABEL=pcpart)" \
			"$AGENT" prepare --device "${lo}p1" --yes
		refused "...also found through its PARTLABEL" "${lo}p1 holds an ext4 filesystem" \
			"$AGENT" prepare --device "PARTLABEL=pc-safety-$$" --yes
		refused "prepare refuses the whole disk's partition table" "$lo holds a gpt partition table" \
			"$AGENT" prepare --device "$lo" --allow-whole-disk --yes
		refused "...also for a region past the partition" "$lo holds a gpt partition table" \
			"$AGENT" prepare --device "$lo" --allow-whole-disk --offset 12M --length 4M --yes
		refused "write refuses the partition" "${lo}p1: not a prepared powercut region" \
			"$AGENT" write --device "${lo}p1" --mode fua --qd 32 --yes
		check "...every byte of the disk unchanged" [ "$(sum "$lo")" = "$s" ]
	else
		skip_part "the loop device's partition never appeared: the partition cases"
	fi
	loop_detach "$lo"
	loops=""
else
	skip_part "no loop device ($(cat "$T/lo.err")): the partition cases"
fi

finish	# exits 77 with the skipped parts' reasons when nothing failed

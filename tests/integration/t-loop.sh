#!/bin/bash
# The real block-device path on a loop device (root): a GPT image with a
# PARTLABEL partition, the region claimed through libblkid discovery, and a
# 200-cycle campaign with the posix backend where each cut is SIGKILL of the
# agent. Zero violations, and every byte outside the region unchanged.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v losetup > /dev/null || ! command -v sfdisk > /dev/null; then
	skip "needs root, losetup and sfdisk"
fi
label="pc-loop-$$"
truncate -s 24M "$T/disk.img"
printf 'label: gpt\nsize=8M, name="%s"\n' "$label" | sfdisk -q "$T/disk.img" > /dev/null
dev=$(loop_attach "$T/disk.img") || skip "no loop device"
trap 'pc_rc=$?; loop_detach "$dev"; [ -n "${PC_KEEP:-}" ] || rm_T' EXIT
check "the partition appears (${dev}p1)" [ -b "${dev}p1" ]
# bytes outside the partition, and the partition table itself, must never change
outside() { { head -c 1048576 "$dev"; tail -c +$((9 * 1048576 + 1)) "$dev"; } | sha256sum; }
before=$(outside)
check "prepare through PARTLABEL (libblkid)" "$AGENT" prepare --device "PARTLABEL=$label" --record-size 4096 --yes
expect_fail "the whole disk is refused" "whole disk" "$AGENT" scan --device "$dev"
write_get "$T/get.sh"
cat > "$T/c.json" <<JSON
{ "campaign": "loop", "cycles": ${PC_LOOP_CYCLES:-200}, "seed": 4, "listen": "127.0.0.1:0",
  "boards": [ { "name": "l1", "device": { "backend": "posix", "record_size": 4096, "path": "PARTLABEL=$label" },
    "relay": { "driver": "command",
      "on": "setsid $PWD/$AGENT run --fresh-boot-id --device PARTLABEL=$label --connect \$PC_CONNECT --board l1 >> $T/l1.log 2>&1 & echo \$! > $T/l1.pid",
      "off": "p=\$(cat $T/l1.pid 2>/dev/null) && kill -KILL -\$p 2>/dev/null; true",
      "get": "sh $T/get.sh $T/l1.pid" },
    "modes": ["fua", "flush", "fua+flush", "journal", "none"], "records_per_cycle": 150, "queue_depth": 8,
    "cut": { "at": "random", "window_ms": [1, 30] }, "boot_timeout_ms": 5000, "off_ms": 2 } ] }
JSON
"$PC" run "$T/c.json" --results "$T/r" --quiet --no-report > "$T/out" 2>&1
rc=$?
n=${PC_LOOP_CYCLES:-200}
check "campaign of $n cycles passes (exit 0, or 3 INCONCLUSIVE: a late relay; was $rc)" passed_or_late $rc "$T/r"
[ $rc -eq 0 ] || tail -5 "$T/out"
check "$n verdicts, all PASS, zero violations" \
	[ "$(jq -s '[.[] | select(.verdict == "PASS" and .violations == 0)] | length' "$T/r/verdicts.jsonl")" -eq "$n" ]
inflight=$(jq -s '[.[] | select(.counts.not_written + .counts.torn > 0)] | length' "$T/r/verdicts.jsonl")
check "cuts landed mid-write ($inflight cycles)" [ "$inflight" -gt 0 ]
check "the verdicts name the loop device" grep -q '"type":"loop"' "$T/r/verdicts.jsonl"
check "every byte outside the region is unchanged" [ "$(outside)" = "$before" ]
check "replay reproduces every verdict" "$PC" replay "$T/r"

# the board's configuration names another device than the agent opened: the
# board is given up at its first HELLO, before anything is written
sed -e 's/"path": "PARTLABEL=[^"]*"/"path": "\/dev\/disk\/by-partlabel\/not-this-one"/' -e 's/"cycles": [0-9]*/"cycles": 3/' \
	"$T/c.json" > "$T/wrong.json"
before=$(outside); sum=$(sha256sum < "${dev}p1")
"$PC" run "$T/wrong.json" --results "$T/w" --quiet --no-report > "$T/wout" 2>&1
rc=$?
check "a device.path the agent did not open: the board is given up (exit 3, was $rc)" [ $rc -eq 3 ]
check "  ... saying which device it opened and which the configuration names" \
	grep -q 'device.path \\"/dev/disk/by-partlabel/not-this-one\\" but the agent opened' "$T/w/events.jsonl"
check "  ... before any work was sent" [ "$(grep -c '"ev":"work"' "$T/w/events.jsonl")" -eq 0 ]
check "  ... and nothing in the region changed" [ "$(sha256sum < "${dev}p1")" = "$sum" ]
check "  ... and nothing outside the region changed" [ "$(outside)" = "$before" ]
"$PC" report "$T/w" > "$T/wrep" 2>&1
check "  ... the report says INCOMPLETE, given up" grep -q "INCOMPLETE.*given up" "$T/wrep"
finish

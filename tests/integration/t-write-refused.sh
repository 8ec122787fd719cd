#!/bin/bash
# A write the device refused, end to end (docs/design.md section 6: a device-level
# finding belongs to the verdict of the cycle that saw it). A posix board on a
# loop device; while cycle 3 writes, the device goes read-only (blockdev
# --setro: every later write fails with EPERM). The agent reports the refused
# write, the campaign cuts as usual, and cycle 3's verdict is FAIL with a
# write_refused finding naming errno, LBA, seq and mode -- the refused record
# was never acknowledged, so it is not lost_acked. The other cycles pass, the
# report counts it, replay agrees.
#
# Without root, losetup or blockdev this test cannot run: it says SKIP and
# exits 77, which run-all counts as skipped, not passed.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# skip (lib.sh): prints "SKIP: why" and exits 77
[ "$(id -u)" = 0 ] || skip "needs root (loop devices)"
for tool in losetup blockdev jq; do
	command -v $tool > /dev/null || skip "needs $tool"
done
dev=""
watcher=""
cleanup() {
	[ -n "$watcher" ] && kill "$watcher" 2> /dev/null
	[ -n "$dev" ] && { blockdev --setrw "$dev" 2> /dev/null; loop_detach "$dev"; }
	rm_T
}
trap 'pc_rc=$?; cleanup' EXIT

truncate -s 8M "$T/disk.img"
dev=$(loop_attach "$T/disk.img" 2> "$T/losetup.err") || { dev=""; skip "no loop device ($(cat "$T/losetup.err"))"; }
check "prepare $dev" "$AGENT" prepare --device "$dev" --allow-whole-disk --record-size 4096 --yes
write_get "$T/get.sh"
cat > "$T/c.json" <<JSON
{ "campaign": "write-refused", "cycles": 4, "listen": "127.0.0.1:0",
  "boards": [ { "name": "w1", "device": { "backend": "posix", "record_size": 4096, "path": "$dev" },
    "relay": { "driver": "command",
      "on": "setsid $PWD/$AGENT run --fresh-boot-id --device $dev --allow-whole-disk --connect \$PC_CONNECT --board w1 >> $T/w1.log 2>&1 & echo \$! > $T/w1.pid",
      "off": "p=\$(cat $T/w1.pid 2>/dev/null) && kill -KILL -\$p 2>/dev/null; blockdev --setrw $dev; true",
      "get": "sh $T/get.sh $T/w1.pid" },
    "modes": ["fua+flush"], "records_per_cycle": 2000, "queue_depth": 1,
    "cut": { "at": "random", "window_ms": [8000, 9000] }, "work_timeout_ms": 10000,
    "boot_timeout_ms": 5000, "off_ms": 5 } ] }
JSON
# the device goes read-only as soon as cycle 3's work is on record (the
# harness logs it before sending it); the relay's off makes it writable again
mkdir -p "$T/r"
(
	for _ in $(seq 3000); do
		grep -q '"cycle":3,"ev":"work"' "$T/r/events.jsonl" 2> /dev/null && { blockdev --setro "$dev"; exit 0; }
		sleep 0.005
	done
) &
watcher=$!
"$PC" run "$T/c.json" --results "$T/r" --quiet --no-report > "$T/out" 2>&1; rc=$?
wait "$watcher" 2> /dev/null
watcher=""
check "the campaign ends with a FAIL (exit 1; was $rc)" [ $rc -eq 1 ]
[ $rc -eq 1 ] || tail -5 "$T/out"
v3=$(jq -c 'select(.cycle == 3)' "$T/r/verdicts.jsonl")
f=$(printf '%s' "$v3" | jq -c '[.findings[] | select(.what == "write_refused")] | first // empty')
check "the agent reported the refused write during cycle 3" \
	grep -q '"cycle":3,"ev":"rx","msg":{"type":"error".*"write_error"' "$T/r/events.jsonl"
check "cycle 3 is FAIL" [ "$(printf '%s' "$v3" | jq -r .verdict)" = "FAIL" ]
check "...with a write_refused finding (${f:-none})" [ -n "$f" ]
check "...naming errno, LBA, seq and mode" \
	[ "$(printf '%s' "$f" | jq '(.errno > 0) and (.lba >= 8) and (.seq >= 1) and (.mode == "fua+flush") and .violation')" = true ]
check "...a seq of cycle 3's work" \
	[ "$(printf '%s' "$v3" | jq --argjson s "$(printf '%s' "$f" | jq .seq)" '.records.first <= $s and $s < .records.first + .records.planned')" = true ]
check "...whose record was never acknowledged, so nothing is lost_acked" \
	[ "$(printf '%s' "$v3" | jq '.counts.lost_acked == 0 and .counts.collateral == 1 and .violations == 1')" = true ]
check "...and cut as usual, not an infrastructure error" \
	[ "$(jq -s '[.[] | select(.verdict == "INFRA_ERROR")] | length' "$T/r/verdicts.jsonl")" -eq 0 ]
check "the other cycles pass" \
	[ "$(jq -s '[.[] | select(.cycle != 3) | .verdict] | unique == ["PASS"]' "$T/r/verdicts.jsonl")" = true ]
check "the report counts it" sh -c "'$PC' report '$T/r' | grep -q 'violations write_refused=1'"
check "replay agrees" "$PC" replay "$T/r"
finish

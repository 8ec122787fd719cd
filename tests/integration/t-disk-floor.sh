#!/bin/bash
# The results folder's budget (issue 26): a sim campaign writes its results
# to a small filesystem (a loop device); the test fills it under the running
# campaign. Before free space runs out the harness stops at the floor
# (results_min_free) as it does on a full disk, but with room to say so:
# exit 2, why on stderr, each board's run_end "disk_floor", every verdict so
# far kept. Still full, a new run refuses to start (exit 2); once space is
# freed the same command resumes to completion: every cycle judged once,
# replay agrees. status shows the free space and how fast the folder grows.
# Needs root, losetup, mkfs.ext4 and mount (else skipped).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
command -v jq > /dev/null || skip "jq is not installed"
[ "$(id -u)" = 0 ] || skip "needs root (a loop device and a mount)"
command -v losetup > /dev/null || skip "losetup is not installed"
command -v mkfs.ext4 > /dev/null || skip "mkfs.ext4 is not installed (e2fsprogs)"
dev="" mnt="$T/mnt" run=""
cleanup() {
	[ -n "$run" ] && kill "$run" 2> /dev/null
	mountpoint -q "$mnt" 2> /dev/null && umount "$mnt"
	[ -n "$dev" ] && losetup -d "$dev" 2> /dev/null
}
trap 'pc_rc=$?; cleanup; rm_T' EXIT
CYCLES=30
FLOOR=$((8 << 20))

truncate -s 32M "$T/fs.img"
mkfs.ext4 -q -F -m 0 "$T/fs.img" > "$T/mkfs.out" 2>&1 || skip "mkfs.ext4 failed: $(tail -1 "$T/mkfs.out")"
dev=$(losetup -f --show "$T/fs.img" 2> "$T/losetup.err") || skip "no loop device: $(cat "$T/losetup.err")"
mkdir -p "$mnt"
mount "$dev" "$mnt" 2> "$T/mount.err" || skip "cannot mount a loop device here: $(cat "$T/mount.err")"
echo "  a $(($(stat -f -c '%b * %S' "$mnt") / 1048576)) MiB ext4 filesystem on $dev"

cat > "$T/floor.json" <<JSON
{ "campaign": "floor", "cycles": $CYCLES, "seed": 26, "results_min_free": $FLOOR,
  "defaults": {
    "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096, "profile": "honest" },
    "records_per_cycle": 60, "flush_every": 8, "modes": ["fua", "flush"],
    "cut": { "at": "random", "window_ms": [2, 30] }, "off_ms": 300 },
  "boards": [ { "name": "h1" }, { "name": "h2", "pattern": "random" } ] }
JSON
R="$mnt/r"
"$PC" run "$T/floor.json" --results "$R" --agent "$AGENT" --quiet --no-report > "$T/run1.out" 2> "$T/run1.err" &
run=$!
for _ in $(seq 600); do
	[ "$(cat "$R/verdicts.jsonl" 2> /dev/null | wc -l)" -ge 4 ] && break
	kill -0 $run 2> /dev/null || break
	sleep 0.1
done
"$PC" status "$R" > "$T/status1" 2>&1
free=$(($(stat -f -c '%a * %S' "$mnt")))
fill=$((free - FLOOR + (1 << 20)))
echo "  $(wc -l < "$R/verdicts.jsonl") verdicts; $free bytes free; filling $fill bytes (floor $FLOOR)"
fallocate -l "$fill" "$mnt/filler" 2> /dev/null || dd if=/dev/zero of="$mnt/filler" bs=1M count=$((fill >> 20)) 2> /dev/null
for _ in $(seq 600); do kill -0 $run 2> /dev/null || break; sleep 0.1; done
wait $run
rc=$?
run=""
n1=$(wc -l < "$R/verdicts.jsonl")
echo "  stopped with $n1 verdicts; stderr: $(grep -m1 results_min_free "$T/run1.err")"
check "status showed the free space and the folder's growth" \
	grep -qE "^results filesystem: [0-9.]+[KMG] free \(floor 8.0M, results_min_free\); events.jsonl grows [0-9.]+[KMG]?( bytes)?/min" "$T/status1"
check "the campaign stopped at the floor with exit 2 (was $rc)" [ "$rc" -eq 2 ]
check "...saying why, naming the floor" grep -q "below results_min_free" "$T/run1.err"
check "...before its $CYCLES cycles ($n1 verdicts of $((2 * CYCLES)))" [ "$n1" -lt $((2 * CYCLES)) ]
check "...each board's run_end says disk_floor" \
	[ "$(jq -sc '[.[] | select(.ev == "run_end") | .end]' "$R/events.jsonl")" = '["disk_floor","disk_floor"]' ]
check "...every verdict kept, none twice" \
	[ "$(jq -s 'map("\(.board)/\(.cycle)") | unique | length' "$R/verdicts.jsonl")" -eq "$n1" ]
check "...replay agrees" "$PC" replay --quiet "$R"
"$PC" run "$T/floor.json" --results "$R" --agent "$AGENT" --quiet --no-report > "$T/run2.out" 2> "$T/run2.err"
rc=$?
check "still below the floor, a run refuses to start: exit 2 (was $rc), no new verdict" \
	sh -c "[ $rc -eq 2 ] && [ \$(wc -l < '$R/verdicts.jsonl') -eq $n1 ]"
check "...saying why" grep -q "below results_min_free" "$T/run2.err"
rm -f "$mnt/filler"
"$PC" run "$T/floor.json" --results "$R" --agent "$AGENT" --quiet --no-report > "$T/run3.out" 2> "$T/run3.err"
rc=$?
echo "  resumed: exit $rc, $(wc -l < "$R/verdicts.jsonl") verdicts"
check "space freed, the same command resumes to completion: exit 0, or 3 INCONCLUSIVE (was $rc)" passed_or_late "$rc" "$R"
check "...every cycle of both boards judged once" \
	[ "$(jq -s 'map("\(.board)/\(.cycle)") | unique | length' "$R/verdicts.jsonl")" -eq $((2 * CYCLES)) ]
check "...no verdict twice" [ "$(wc -l < "$R/verdicts.jsonl")" -eq $((2 * CYCLES)) ]
check "...all PASS" [ "$(jq -s '[.[] | select(.verdict != "PASS")] | length' "$R/verdicts.jsonl")" -eq 0 ]
check "...replay agrees" "$PC" replay --quiet "$R"
finish

#!/bin/bash
# t-audit: what reached the device (docs/io-audit.md). On a loop device (a
# queue with a write-back cache and no FUA) the agent's tracefs audit must
# show what the kernel really issued: fua emulated by flushes (an io_note),
# flushes where the mode flushes, none where it does not; audit "require"
# turns a cycle whose mode did not reach the device as asked into
# INFRA_ERROR; with tracefs out of reach the audit says unavailable and the
# campaign runs. On the sim the device counts the requests itself.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo "t-audit: the io audit (tracefs on a loop device, and the sim)"
command -v jq >/dev/null || skip "jq not installed"

# --- the sim: the device's own counts ---
# The agent sends its io audit every 8 completions or 50 ms, and whole with
# DONE: a random cut under load can land before the first count was sent.
# These campaigns cut when the work is done (an acks plan never reached:
# "whatever the plan, the cut also comes when the agent says done"), so each
# verdict carries the cycle's whole audit, whatever the machine's load.
sim_cfg() { # [board profile]: configs/sim-quick.json, 40 records a cycle, cut at done
	jq --arg p "${1:-}" '.defaults.records_per_cycle = 40 | .defaults.cut = {"at": "acks", "acks": [1000, 1000]}
		| if $p == "" then . else .boards = [{"name": "nofua-1", "device": {"profile": $p}}] end' configs/sim-quick.json
}
sim_cfg > "$T/sim.json"
"$PC" run "$T/sim.json" --results "$T/sim" --cycles 9 --agent "$AGENT" --quiet --no-report >/dev/null 2>&1
check "sim: every cycle's cut came when its work was done" \
	test "$(jq -s 'map(select(.cut.trigger == "work done")) | length' "$T/sim/verdicts.jsonl")" = 18
# (every cycle that wrote: a BOOT_FAIL or INFRA_ERROR cycle never reached its work)
check "sim: every verdict of a cycle that wrote says what reached the device (src sim)" \
	test "$(jq -s 'map(select(.records.submitted > 0 and .io_audit.src == "sim")) | length' "$T/sim/verdicts.jsonl")" = \
	     "$(jq -s 'map(select(.records.submitted > 0)) | length' "$T/sim/verdicts.jsonl")"
check "sim: the 6 fua cycles issued their 40 records as FUA writes and no flush" \
	test "$(jq -s '[.[] | select(.mode_run == "fua" and .io_audit.rq.WFS == 40 and (.io_audit.rq.WS // 0) == 0 and (.io_audit.rq.FF // 0) == 0)] | length' "$T/sim/verdicts.jsonl")" = 6
check "sim: the 6 none cycles, plain writes only" \
	test "$(jq -s '[.[] | select(.mode == "none" and .io_audit.rq.WS == 40 and ((.io_audit.rq.WFS // 0) + (.io_audit.rq.FF // 0)) == 0)] | length' "$T/sim/verdicts.jsonl")" = 6
check "sim: the report says fua reached the device as FUA (native)" \
	grep -q "io: fua -> FUA writes (native)" <("$PC" report "$T/sim" 2>/dev/null)
# a queue without FUA (sim profile no-fua: what the block layer does for an
# SD card or an eMMC whose host disabled FUA): HELLO says queue fua 0, and
# every FUA write reaches the card as a write and a flush
sim_cfg no-fua > "$T/nofua.json"
"$PC" run "$T/nofua.json" --results "$T/nf" --cycles 9 --agent "$AGENT" --quiet --no-report >/dev/null 2>&1
check "sim no-fua: the verdicts say queue fua 0" \
	test "$(jq -s 'map(select(.queue.fua == 0)) | length' "$T/nf/verdicts.jsonl")" = 9
# Each emulated FUA write is a write and then its flush: cut at done, every
# write had its flush.
nf_fua='[.[] | select(.mode_run == "fua" and .records.submitted > 0)]'
check "sim no-fua: the 3 fua cycles wrote, and their audits counted 120 writes" \
	test "$(jq -s "$nf_fua | map(.io_audit.rq.WS // 0) | add // 0" "$T/nf/verdicts.jsonl")" = 120
if ! check "sim no-fua: fua cycles that wrote: no FUA write, a flush for every write, io_note 'FUA emulated'" \
	test "$(jq -s "$nf_fua"' | map(select((.io_audit.rq.WFS // 0) > 0 or (.io_audit.rq.WS // 0) == 0 or
		(.io_audit.rq.FF // 0) != (.io_audit.rq.WS // 0) or
		((.io_note // "") | test("fua: writes \\+ flushes: FUA emulated \\(the queue has no FUA\\)") | not))) | length' \
		"$T/nf/verdicts.jsonl")" = 0; then
	jq -c '{cycle, mode_run, verdict, records, io_audit, io_note}' "$T/nf/verdicts.jsonl" | sed 's/^/    /'
fi
check "sim no-fua: the honest card keeps what was emulated (no FAIL)" \
	test "$(jq -s 'map(select(.verdict == "FAIL")) | length' "$T/nf/verdicts.jsonl")" = 0
check "sim no-fua: the report says fua was emulated" \
	grep -q "io: fua -> writes + flushes: FUA emulated (the queue has no FUA)" <("$PC" report "$T/nf" 2>/dev/null)
check "sim no-fua: replay reproduces the verdicts" "$PC" replay "$T/nf"
# the mode benchmark prints the same io_audit object
"$AGENT" prepare --device "sim:$T/w.img" --size 4M --record-size 4096 --yes >/dev/null 2>&1
for m in fua flush none; do
	"$AGENT" write --device "sim:$T/w.img" --mode $m --records 64 --qd 4 --yes 2>/dev/null > "$T/w-$m.json"
done
if ! check "sim: powercut-agent write prints io_audit: fua 64 WFS, flush 64 WS + 8 FF, none 64 WS" \
	test "$(jq -c .io_audit "$T/w-fua.json")" = '{"src":"sim","rq":{"WFS":64},"sectors":{"WFS":512}}' -a \
	     "$(jq -c .io_audit "$T/w-flush.json")" = '{"src":"sim","rq":{"WS":64,"FF":8},"sectors":{"WS":512}}' -a \
	     "$(jq -c .io_audit "$T/w-none.json")" = '{"src":"sim","rq":{"WS":64},"sectors":{"WS":512}}'; then
	cat "$T"/w-*.json | sed 's/^/    /'
fi
"$AGENT" write --device "sim:$T/w.img" --sim-profile no-fua --mode fua --records 64 --qd 4 --yes 2>/dev/null > "$T/w-nofua.json"
if ! check "sim no-fua: powercut-agent write: fua became 64 WS + 64 FF" \
	test "$(jq -c .io_audit "$T/w-nofua.json")" = '{"src":"sim","rq":{"WS":64,"FF":64},"sectors":{"WS":512}}'; then
	sed 's/^/    /' "$T/w-nofua.json"
fi

# --- a loop device: the kernel's own account (tracefs) ---
if [ "$(id -u)" != 0 ] || ! command -v losetup >/dev/null || ! command -v sfdisk >/dev/null; then
	skip_part "the loop-device part needs root, losetup and sfdisk"
	finish
fi
label="pc-audit-$$"
truncate -s 16M "$T/disk.img"
printf 'label: gpt\nsize=8M, name="%s"\n' "$label" | sfdisk -q "$T/disk.img" >/dev/null
dev=$(loop_attach "$T/disk.img") || { skip_part "no loop device"; finish; }
trap 'pc_rc=$?; loop_detach "$dev"; rm_T' EXIT
check "loop: the partition appears (${dev}p1)" test -b "${dev}p1"
"$AGENT" prepare --device "PARTLABEL=$label" --record-size 4096 --yes >/dev/null 2>&1
write_get "$T/get.sh"
# $1 results, $2 extra board keys, $3 a wrapper before the agent (hides tracefs)
campaign() {
	cat > "$T/c.json" <<JSON
{ "campaign": "audit", "cycles": 9, "seed": 5, "listen": "127.0.0.1:0",
  "boards": [ { "name": "a1", "device": { "backend": "posix", "record_size": 4096, "path": "PARTLABEL=$label" },
    "relay": { "driver": "command",
      "on": "setsid $3 $PWD/$AGENT run --fresh-boot-id --device PARTLABEL=$label --connect \$PC_CONNECT --board a1 >> $T/a1.log 2>&1 & echo \$! > $T/a1.pid",
      "off": "p=\$(cat $T/a1.pid 2>/dev/null) && kill -KILL -\$p 2>/dev/null; true",
      "get": "sh $T/get.sh $T/a1.pid" },
    "modes": ["fua", "flush", "none"], "records_per_cycle": 64, "queue_depth": 4, "flush_every": 8,
    "cut": { "at": "random", "window_ms": [2000, 3000] }, "work_timeout_ms": 4000, "boot_timeout_ms": 5000,
    "off_ms": 2 $2 } ] }
JSON
	"$PC" run "$T/c.json" --results "$1" --quiet --no-report >"$1.out" 2>&1
}
# an agent killed at a cut leaves its trace instance behind; the next
# agent removes those of dead agents (here: one planted for a dead pid, its
# event enabled on this disk, as a killed agent leaves it)
tr=$(awk '$3 == "tracefs" {print $2; exit}' /proc/self/mounts)
tr=${tr:-/sys/kernel/tracing}
dead=$(sh -c 'echo $$')
stale=""
if [ -d "$tr/instances" ] && mkdir "$tr/instances/powercut-agent-$dead" 2>/dev/null; then
	stale=$tr/instances/powercut-agent-$dead
	echo "dev == $(( $(stat -c '0x%t' "$dev") << 20 | $(stat -c '0x%T' "$dev") ))" \
		> "$stale/events/block/block_rq_issue/filter" 2>/dev/null
	echo 1 > "$stale/events/block/block_rq_issue/enable" 2>/dev/null
fi
dead_before=""
for i in "$tr"/instances/powercut-agent-*; do
	[ -e "$i" ] || continue
	p=${i##*-}
	[ -d "/proc/$p" ] || dead_before="$dead_before $p"
done
campaign "$T/l" "" ""
rc=$?
if [ -n "$stale" ]; then
	check "loop: a dead agent's trace instance is removed (the planted one)" test ! -e "$stale"
	# other agents may run beside this test (another suite) and die at any
	# time: the instances of agents already dead before the campaign must
	# be gone after it (its agents removed them)
	dead_left=""
	for p in $dead_before; do
		[ -e "$tr/instances/powercut-agent-$p" ] && dead_left="$dead_left $p"
	done
	check "loop: no instance of an agent dead before the campaign is left (${dead_left:-none} of$dead_before)" test -z "$dead_left"
fi
# its cuts come after the work (a window past it: each verdict's audit is
# whole), so no cut met a write: every verdict PASS, the device INCONCLUSIVE,
# exit 3 (docs/verdicts.md#no-pass-without-evidence)
check "loop: the campaign's verdicts all PASS, its device INCONCLUSIVE (exit 3, was $rc)" \
	sh -c "[ $rc -eq 3 ] && [ \$(jq -s '[.[] | select(.verdict != \"PASS\")] | length' '$T/l/verdicts.jsonl') -eq 0 ]"
v=$T/l/verdicts.jsonl
check "loop: the agent read the kernel's tracefs (src tracefs)" \
	test "$(jq -s 'map(select(.io_audit.src == "tracefs")) | length' "$v")" = 9
check "loop: fua became writes + flushes (no FUA on a loop queue), said in io_note" \
	test "$(jq -s '[.[] | select(.mode_run == "fua" and .io_audit.sectors.WS == 512 and (.io_audit.rq.WFS // 0) == 0 and .io_audit.rq.FF > 0 and (.io_note | test("FUA emulated")))] | length' "$v")" = 3
# the block layer may merge adjacent plain writes (it did on a loaded CI
# machine): the records' bytes are the sectors, not the request count
if ! check "loop: flush cycles flushed (64 records' 512 sectors, 8 groups), none cycles never did" \
	test "$(jq -s '[.[] | select(.mode == "flush" and .io_audit.sectors.WS == 512 and .io_audit.rq.FF >= 8)] | length' "$v")" = 3 -a \
	     "$(jq -s '[.[] | select(.mode == "none" and .io_audit.sectors.WS == 512 and (.io_audit.rq.FF // 0) == 0)] | length' "$v")" = 3; then
	jq -c '{cycle, mode, verdict, io_audit}' "$v" | sed 's/^/    /'
fi
"$PC" report "$T/l" >"$T/l.rep" 2>&1
check "loop: the report says what fua became" grep -q "io: fua -> writes + flushes: FUA emulated" "$T/l.rep"
check "loop: replay reproduces the verdicts" "$PC" replay "$T/l"

# audit "require": fua was not FUA, so those cycles did not test what was asked
campaign "$T/q" ', "audit": "require"' ""
check "require: the fua cycles are INFRA_ERROR, naming what reached the device" \
	test "$(jq -s '[.[] | select(.mode == "fua" and .verdict == "INFRA_ERROR" and (.reason | test("audit \"require\": mode fua was asked for, but writes \\+ flushes")))] | length' "$T/q/verdicts.jsonl")" = 3
check "require: the flush and none cycles PASS" \
	test "$(jq -s '[.[] | select(.mode != "fua" and .verdict == "PASS")] | length' "$T/q/verdicts.jsonl")" = 6

# tracefs out of reach (a read-only, empty tmpfs over it in the agent's own
# mount namespace): the audit says so, and the campaign runs
if command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
	printf '#!/bin/sh\nmount -t tmpfs -o ro none /sys/kernel/tracing && exec "$@"\n' > "$T/hide.sh"
	campaign "$T/u" "" "unshare -m sh $T/hide.sh"
	rc=$?
	check "no tracefs: the campaign still runs (exit 3: INCONCLUSIVE, its cuts after the work; was $rc)" test $rc -eq 3
	check "no tracefs: every verdict says the audit is unavailable, and why" \
		test "$(jq -s 'map(select(.io_audit.unavailable | test("trace instance|tracefs"))) | length' "$T/u/verdicts.jsonl")" = 9
	"$PC" report "$T/u" >"$T/u.rep" 2>&1
	check "no tracefs: the report says not seen" grep -q "io: fua -> not seen" "$T/u.rep"
else
	skip_part "unshare -m is not permitted here: the no-tracefs case was not run"
fi

# the mode benchmark on the loop device (after the campaigns: it overwrites
# their records): the same io_audit as a verdict's, from tracefs
for m in fua flush none; do
	"$AGENT" write --device "PARTLABEL=$label" --mode $m --records 64 --qd 4 --yes 2>/dev/null > "$T/lw-$m.json"
done
if ! check "loop: powercut-agent write's io_audit: fua writes + flushes, flush >= 8 flushes, none no flush" \
	test "$(jq '.io_audit | select(.src == "tracefs" and .sectors.WS == 512 and (.rq.WFS // 0) == 0 and .rq.FF > 0) | 1' "$T/lw-fua.json")" = 1 -a \
	     "$(jq '.io_audit | select(.src == "tracefs" and .sectors.WS == 512 and .rq.FF >= 8) | 1' "$T/lw-flush.json")" = 1 -a \
	     "$(jq '.io_audit | select(.src == "tracefs" and .sectors.WS == 512 and (.rq.FF // 0) == 0) | 1' "$T/lw-none.json")" = 1; then
	cat "$T"/lw-*.json | sed 's/^/    /'
fi
# the text trace_pipe (kernels whose binary pages the agent does not read)
# counts what the binary pages count
for m in flush none; do
	PC_AUDIT_TEXT=1 "$AGENT" write --device "PARTLABEL=$label" --mode $m --records 64 --qd 4 --yes 2>/dev/null \
		> "$T/lt-$m.json"
done
if ! check "loop: the text trace_pipe reader counts as the binary one (flush: 512 sectors, >= 8 flushes; none: no flush)" \
	test "$(jq '.io_audit | select(.src == "tracefs" and .sectors.WS == 512 and .rq.FF >= 8) | 1' "$T/lt-flush.json")" = 1 -a \
	     "$(jq '.io_audit | select(.src == "tracefs" and .sectors.WS == 512 and (.rq.FF // 0) == 0) | 1' "$T/lt-none.json")" = 1; then
	cat "$T"/lt-*.json | sed 's/^/    /'
fi
if [ -e "$T/hide.sh" ]; then
	unshare -m sh "$T/hide.sh" "$AGENT" write --device "PARTLABEL=$label" --mode fua --records 8 --yes \
		2>/dev/null > "$T/lw-u.json"
	if ! check "no tracefs: powercut-agent write says the audit is unavailable, and still writes" \
		test "$(jq 'select(.records == 8 and (.io_audit.unavailable | test("trace instance|tracefs"))) | 1' "$T/lw-u.json")" = 1; then
		sed 's/^/    /' "$T/lw-u.json"
	fi
fi
finish

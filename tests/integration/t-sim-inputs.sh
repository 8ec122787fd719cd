#!/bin/bash
# The inputs a sim board keeps per power-on (device.keep_inputs; docs/sim.md,
# "Inputs kept per power-on"): a short campaign keeps them, and for every
# finished power-on the write log parses strictly and with the virtual
# board's reader (vboard/vcache.c), and base.img with every completed write
# replayed gives after.img wherever the block layer says the data is durable
# (a FUA write, or a later flush) and nothing was in flight; every other
# sector holds bytes some write gave it (tests/tools/inputcheck). A lying
# card breaks that: the negative control. cycle.json maps each power-on to
# the campaign cycle whose verdict judged it.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cat > "$T/c.json" <<JSON
{ "campaign": "it-inputs", "cycles": 8, "seed": 5,
  "defaults": { "relay": { "driver": "sim", "boot_delay_ms": 2 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096, "program_us": 100, "keep_inputs": 20 },
    "records_per_cycle": 60, "flush_every": 4, "queue_depth": 4,
    "cut": { "at": "acks", "acks": [20, 50] }, "off_ms": 2 },
  "boards": [ { "name": "h", "modes": ["fua", "flush", "none", "journal"] },
              { "name": "l", "modes": ["flush"], "device": { "profile": "lying-flush" } },
              { "name": "off", "modes": ["flush"], "device": { "keep_inputs": 0 } } ] }
JSON
"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet --no-report > "$T/out" 2>&1
H=$T/r/boards/h/media.img.inputs
L=$T/r/boards/l/media.img.inputs

check "the campaign ran its cycles (verdicts for h)" \
	[ "$(jq -s '[.[] | select(.board == "h" and .cycle >= 1)] | length' "$T/r/verdicts.jsonl")" -ge 8 ]
nfin=$(cat "$H"/session-*/cycle.json 2>/dev/null | jq -s '[.[] | select(.finished)] | length')
check "h kept a finished folder for each cycle's power-on" [ "${nfin:-0}" -ge 8 ]
check "no folder for a board without keep_inputs" [ ! -e "$T/r/boards/off/media.img.inputs" ]
check "prepare kept no inputs (no session-1 folder)" [ ! -e "$H/session-1" ]

"$TOOLS/inputcheck" "$H" > "$T/h.jsonl" 2> "$T/h.err"
rc=$?
if ! check "honest: every log parses (strictly and with vcache's reader) and after.img is the replay where durable" \
	[ $rc -eq 0 ]; then
	head -5 "$T/h.err"
fi
check "honest: the check saw settled and volatile sectors and durable writes" \
	jq -se '(map(.settled) | add) > 0 and (map(.volatile) | add) > 0 and (map(.vc_durable) | add) > 0' "$T/h.jsonl"
check "honest: FUA writes and flushes are in the logs" \
	jq -se '(map(.fua_writes) | add) > 0 and (map(.flushes) | add) > 0' "$T/h.jsonl"

# cycle.json -> the campaign cycle: the verdict of cycle C says device.session S + 1
jq -c 'select(.board == "h" and .device.session != null) | [.cycle, .device.session]' "$T/r/verdicts.jsonl" > "$T/v.map"
cat "$H"/session-*/cycle.json | jq -c 'select(.finished and (.cycles | length) > 0) | [.cycles[0], .session + 1, (.cycles | length)]' > "$T/s.map"
check "each power-on wrote one cycle's records" sh -c "[ -s '$T/s.map' ] && ! jq -e 'select(.[2] != 1)' '$T/s.map' > /dev/null"
check "each power-on's cycle is the verdict that judged it (device.session = S + 1)" \
	sh -c "jq -c '.[0:2]' '$T/s.map' | while read -r p; do grep -qxF \"\$p\" '$T/v.map' || exit 1; done"

"$TOOLS/inputcheck" "$L" > "$T/l.jsonl" 2> "$T/l.err"
rc=$?
if grep -q '"ev":"dropped"' "$T/r/boards/l/media.img.truth.jsonl"; then
	check "lying-flush: the card dropped flushed writes, and the check says so (exit 1)" [ $rc -eq 1 ]
	check "... as durable sectors after.img does not hold" jq -se 'map(.settled_bad) | add > 0' "$T/l.jsonl"
else
	skip_part "the lying card dropped nothing in this run (no negative control)"
fi
finish

#!/bin/bash
# Numbers from the link and from events.jsonl are hostile: a HELLO claiming a
# region beyond the board's device.max_region_bytes is refused (INFRA_ERROR,
# nothing scanned or written), and an events.jsonl holding a HELLO of 2^25
# slots, cycles near 2^31 and 2^64 and a time of 2^63 - 1 neither crashes
# `powercut replay` nor a resumed `powercut run` (both once did: ~1 GB
# allocated per such HELLO, a failed allocation dereferenced, a 32-bit size
# wrapped into a heap overflow, the resumed clock overflowed).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# ---- live: a real agent whose region is larger than its board allows
head -c 8388608 /dev/urandom > "$T/disk.img"
check "prepare a 4M region" "$AGENT" prepare --device "$T/disk.img" --offset 1M --length 4M --record-size 8192 --yes
sum_before=$(sha256sum < "$T/disk.img")
write_get "$T/get.sh"
cat > "$T/big.json" <<JSON
{ "campaign": "hostile-big", "cycles": 5, "listen": "127.0.0.1:0",
  "boards": [ { "name": "p1",
    "device": { "backend": "posix", "record_size": 8192, "max_region_bytes": "1M", "path": "$T/disk.img" },
    "relay": { "driver": "command",
      "on": "setsid $PWD/$AGENT run --fresh-boot-id --device $T/disk.img --offset 1M --length 4M --connect \$PC_CONNECT --board p1 >> $T/p1.log 2>&1 & echo \$! > $T/p1.pid",
      "off": "p=\$(cat $T/p1.pid 2>/dev/null) && kill -KILL -\$p 2>/dev/null; true",
      "get": "sh $T/get.sh $T/p1.pid" },
    "modes": ["fua"], "records_per_cycle": 50, "boot_timeout_ms": 5000, "off_ms": 5 } ] }
JSON
"$PC" run "$T/big.json" --results "$T/big" --quiet --no-report > "$T/big.out" 2>&1; rc=$?
check "a region beyond max_region_bytes: the board is given up, nothing judged (exit 3: INCOMPLETE; was $rc)" [ $rc -eq 3 ]
check "...every verdict INFRA_ERROR" \
	[ "$(jq -s '[.[] | .verdict] | unique == ["INFRA_ERROR"]' "$T/big/verdicts.jsonl")" = true ]
check "...saying why" [ "$(jq -s '[.[] | select(.reason | test("more than device.max_region_bytes 1048576"))] | length' \
	"$T/big/verdicts.jsonl")" -ge 1 ]
check "...no scan was asked for" [ "$(jq -s '[.[] | select(.ev == "verify")] | length' "$T/big/events.jsonl")" -eq 0 ]
check "...and nothing was written" [ "$(sha256sum < "$T/disk.img")" = "$sum_before" ]
check "replay agrees" "$PC" replay "$T/big"

# ---- recorded: a short honest campaign, then hostile events appended
cat > "$T/c.json" <<JSON
{ "campaign": "hostile", "cycles": 4, "seed": 3,
  "defaults": { "relay": { "driver": "sim", "boot_delay_ms": 5 },
    "device": { "backend": "sim", "size": "1M", "record_size": 4096 },
    "records_per_cycle": 40, "cut": { "at": "random", "window_ms": [2, 20] }, "off_ms": 5 },
  "boards": [ { "name": "h1", "modes": ["fua", "flush"] } ] }
JSON
"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet --no-report > "$T/out" 2>&1; rc=$?
check "a short honest campaign passes (exit 0, or 3 INCONCLUSIVE: cut after its writes; was $rc)" passed_or_late $rc "$T/r"
n_before=$(jq -s 'length' "$T/r/verdicts.jsonl")
t=$(tail -1 "$T/r/events.jsonl" | jq .t)
n_ev=$(wc -l < "$T/r/events.jsonl")
slots=33554432
bytes=$(( (slots * 8 + 16) * 512 ))
{
	echo "{\"t\":$((t + 1)),\"board\":\"h1\",\"cycle\":5,\"ev\":\"power_on\",\"attempt\":1}"
	echo "{\"t\":$((t + 2)),\"board\":\"h1\",\"cycle\":5,\"ev\":\"rx\",\"msg\":{\"type\":\"hello\",\"v\":1,\"board\":\"h1\",\"agent\":\"x\",\"boot_id\":\"evil\",\"kernel\":\"k\",\"backend\":\"sim\",\"region\":{\"uuid\":\"11111111-2222-4333-8444-555555555555\",\"bytes\":$bytes,\"record_size\":4096,\"slots\":$slots,\"seed\":1},\"device\":{},\"queue\":{\"fua\":1,\"write_cache\":\"write back\"}}}"
	echo "{\"t\":$((t + 3)),\"board\":\"h1\",\"cycle\":5,\"ev\":\"verify\"}"
	echo "{\"t\":$((t + 4)),\"board\":\"h1\",\"cycle\":5,\"ev\":\"rx\",\"msg\":{\"type\":\"scan_begin\",\"v\":1,\"slots\":$slots,\"pattern\":\"sequential\",\"full\":true}}"
	echo "{\"t\":$((t + 5)),\"board\":\"h1\",\"cycle\":5,\"ev\":\"rx\",\"msg\":{\"type\":\"runs\",\"v\":1,\"r\":[[0,$slots,0,0,0]]}}"
	echo "{\"t\":$((t + 6)),\"board\":\"h1\",\"cycle\":2147483648,\"ev\":\"boot_fail\",\"reason\":\"x\"}"
	echo "{\"t\":$((t + 7)),\"board\":\"h1\",\"cycle\":4294967295,\"ev\":\"infra\",\"reason\":\"x\"}"
	echo "{\"t\":$((t + 8)),\"board\":\"h1\",\"cycle\":18446744073709551615,\"ev\":\"infra\",\"reason\":\"x\"}"
	echo "{\"t\":-1,\"board\":\"h1\",\"cycle\":5,\"ev\":\"infra\",\"reason\":\"x\"}"
	echo "{\"t\":9223372036854775807,\"board\":\"h1\",\"cycle\":5,\"ev\":\"infra\",\"reason\":\"x\"}"
} >> "$T/r/events.jsonl"
"$PC" replay "$T/r" > "$T/replay.out" 2>&1; rc=$?
check "replay of the hostile events: no crash, exit 2 (lines refused; was $rc)" [ $rc -eq 2 ]
check "...the recorded verdicts still match" grep -q "^replay $T/r: $n_before verdicts recomputed, $n_before match, 0 differ" "$T/replay.out"
check "...the 5 malformed events named (the HELLO is the engine's to refuse, as it did live)" \
	grep -q "events.jsonl: 5 lines refused or skipped (lines $((n_ev + 6)), $((n_ev + 7)), $((n_ev + 8)), $((n_ev + 9)), $((n_ev + 10)))" "$T/replay.out"
check "...the huge HELLO is refused, naming the limit" grep -q "more than device.max_region_bytes 4294967296" "$T/replay.out"
check "...the huge cycles are refused" grep -q 'field "cycle": expected an integer 0..10000001, got 2147483648' "$T/replay.out"
"$PC" run "$T/c.json" --results "$T/r" --agent "$AGENT" --quiet --no-report --cycles 7 > "$T/out2" 2>&1; rc=$?
check "a resume over the hostile events runs on (exit 0, or 3 INCONCLUSIVE; was $rc)" passed_or_late $rc "$T/r"
check "...one verdict per cycle 1..7" \
	[ "$(jq -s '[.[] | .cycle] | sort == [1,2,3,4,5,6,7]' "$T/r/verdicts.jsonl")" = true ]
check "...the cycles after the hostile boot pass" \
	[ "$(jq -s '[.[] | select(.cycle > 4) | .verdict] | unique == ["PASS"]' "$T/r/verdicts.jsonl")" = true ]
"$PC" replay "$T/r" > "$T/replay2.out" 2>&1; rc=$?
n_after=$(jq -s length "$T/r/verdicts.jsonl")
check "...and replay agrees with all $n_after (was $n_before)" \
	grep -q "^replay $T/r: $n_after verdicts recomputed, $n_after match, 0 differ, 0 missing, 0 extra" "$T/replay2.out"
check "...exiting 2: the hostile lines are still there (was $rc)" [ $rc -eq 2 ]
finish

#!/bin/bash
# The verdict engine is a pipeline in one direction (harness/engine/engine_board.h):
# intake (engine.c) -> scan assembly (engine_scan.c) -> judge (engine_judge.c,
# engine_region.c) -> verdict (engine_verdict.c) -> state (engine_state.c, and
# engine_ledger.c: the verdicts issued, engine_carry.c: the findings carried);
# beside the intake, engine_hold.c (crash-states' incremental judging).
# No part calls a part above it or beside it: read from the objects' symbols
# (nm), each file's undefined symbols against the engine file defining them.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

objs="$BIN/obj/harness/engine"
[ -f "$objs/engine.o" ] || skip "no engine objects in $objs (build with make, or make san)"
command -v nm > /dev/null || skip "nm (binutils) is not installed"

declare -A level=([engine]=0 [engine_hold]=0 [engine_scan]=1 [engine_judge]=2 [engine_region]=2 [engine_verdict]=3
		  [engine_state]=4 [engine_ledger]=4 [engine_carry]=4)
declare -A def
unknown=
for o in "$objs"/*.o; do
	f=$(basename "$o" .o)
	[ -n "${level[$f]:-}" ] || unknown="$unknown $f"
	for s in $(nm --defined-only "$o" | awk '$2 == "T" { print $3 }'); do
		def[$s]=$f
	done
done
check "every engine file has its place in the pipeline (unplaced:${unknown:- none})" [ -z "$unknown" ]

up=
calls=0
for o in "$objs"/*.o; do
	f=$(basename "$o" .o)
	[ -n "${level[$f]:-}" ] || continue
	for s in $(nm -u "$o" | awk '{ print $2 }'); do
		g=${def[$s]:-}
		if [ -z "$g" ] || [ "$g" = "$f" ]; then
			continue
		fi
		calls=$((calls + 1))
		[ "${level[$g]}" -gt "${level[$f]}" ] || up="$up $f->$g:$s"
	done
done
check "the engine's files call each other ($calls calls seen)" [ "$calls" -gt 10 ]
check "no engine file calls a part above or beside it (${up:- none})" [ -z "$up" ]
finish

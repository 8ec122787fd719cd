/*
 * engine_judgement.h - one judgement in progress (struct judge): the
 * findings of a scan judged, counted per class and listed, that the judge
 * (engine_judge.c) fills, the verdict (engine_verdict.c) encodes and the
 * carried findings (engine_carry.c) feed or take. The object alone is
 * here, so that those below the judge see it without an arrow up to
 * engine_judge.c. Private to harness/engine.
 */
#ifndef PC_HARNESS_ENGINE_JUDGEMENT_H
#define PC_HARNESS_ENGINE_JUDGEMENT_H

#include <stdint.h>

#include <json-c/json.h>

#include "harness/results/verdict.h"

struct engine;
struct board;
struct wcycle;

struct judge {
	struct engine *e;
	struct board *b;
	struct wcycle *w;
	uint32_t counts[PC_NCLASSES];
	uint32_t violations;
	json_object *findings;
	uint32_t nlisted;	/* findings in the array */
	uint32_t unlisted;	/* findings counted beyond ENGINE_MAX_FINDINGS */
	json_object *scratch;	/* the last unlisted finding (its details go nowhere) */
	uint64_t *hot;		/* a bitmap of the slots written by the judged cycle */
	/* pending not_written range, to list unacked ones compactly */
	uint64_t nw_first;
	uint32_t nw_n, nw_slot;
};

#endif

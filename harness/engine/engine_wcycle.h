/*
 * engine_wcycle.h - one cycle's writes, as the work, SUBMIT, ACK, DONE,
 * AUDIT, write-error and cut events said them: filled by the intake
 * (engine.c), read by the judge and the verdict, released by
 * eng_wcycle_free() (engine_state.c; engine_hold.c copies it). A board
 * holds at most one (b->w), until its scan is judged. Its own header
 * since the hub retired (issue 41). Private to harness/engine.
 */
#ifndef PC_HARNESS_ENGINE_WCYCLE_H
#define PC_HARNESS_ENGINE_WCYCLE_H

#include <stdint.h>

#include <json-c/json.h>

#include "harness/engine/engine_types.h"
#include "harness/results/verdict.h"

/* The most records one work may name: the protocol's limit (proto.c
 * MAX_RANGE_N) and records_per_cycle's (config.c). */
#define MAX_WORK_RECORDS	1048576u

/* Seqs a work may name: every one is then a JSON integer as it is. */
#define MAX_SEQ			((uint64_t)INT64_MAX)

/* A write the device refused (an agent error with write_error). */
struct werr {
	uint32_t err;
	int mode;
	uint64_t lba, seq;
	char msg[256];
};

struct wcycle {
	unsigned cycle;
	uint64_t first;
	uint32_t n;
	int mode, mode_run, pattern;
	uint8_t *sub, *ack;	/* one byte per record */
	uint32_t nsub, nack;
	int64_t t_work, t_last;
	json_object *cut;
	char infra[512];
	struct pc_policy pol;		/* what the work event's policy says (verdict.h) */
	int pol_has_unclassified;	/* it named "unclassified" (older ones do not) */
	struct werr werr[ENGINE_MAX_WRITE_ERRORS];
	uint32_t nwerr;		/* refused writes reported (the first ENGINE_MAX_WRITE_ERRORS kept) */
	/* each acknowledged record's latency (us), as ACKs said (format 2):
	 * at most n, allocated with the first */
	uint32_t *lat;
	uint32_t nlat;
	/* what reached the device so far (the latest AUDIT or DONE audit, a
	 * reference; format 2), or NULL */
	json_object *audit;
	int done;		/* the agent said DONE: the work ran to its end */
};

/* A cycle's writes, released (accepts NULL). */
void eng_wcycle_free(struct wcycle *w);

#endif

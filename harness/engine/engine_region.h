/*
 * engine_region.h - the region as HELLO describes it: adopted, and its
 * continuity judged (engine_region.c, which owns struct sbrec: the board
 * keeps the last one as b->rec). Its own header since the hub retired
 * (issue 41). Private to harness/engine.
 */
#ifndef PC_HARNESS_ENGINE_REGION_H
#define PC_HARNESS_ENGINE_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"

/* A region or one superblock copy, as HELLO describes it. */
struct sbrec {
	char uuid[37];
	uint64_t bytes, record_size, slots, seed, created;
	int has_created;	/* agents before it existed do not say */
};

struct engine;
struct board;

/* 1 when the region changed (the scan in progress is the caller's to
 * drop), 0, or -EINVAL (refused: b->refused says so) */
int eng_set_geom(struct engine *e, struct board *b, const struct pc_msg *m, unsigned cycle,
		    char *err, size_t errlen);

#endif

/*
 * engine_region.h - the region as HELLO describes it: adopted, and its
 * continuity judged (engine_region.c, which owns struct sbrec, defined with
 * the board that keeps the last one as b->rec: engine_board.h). Its own header since the hub retired
 * (issue 41). Private to harness/engine.
 */
#ifndef PC_HARNESS_ENGINE_REGION_H
#define PC_HARNESS_ENGINE_REGION_H

#include <stddef.h>
#include "common/proto.h"

struct engine;
struct board;

/* 1 when the region changed (the scan in progress is the caller's to
 * drop), 0, or -EINVAL (refused: b->refused says so) */
int eng_set_geom(struct engine *e, struct board *b, const struct pc_msg *m, unsigned cycle,
		    char *err, size_t errlen);

#endif

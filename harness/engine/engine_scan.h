/*
 * engine_scan.h - the scan's assembly (engine_scan.c): the wanted slots of
 * a VERIFY, and the scan's lines (scan_begin, runs, slot, same, scan_end)
 * taken into the observed scan (engine_observed.h), a complete one judged
 * and adopted as the expected state. Private to harness/engine.
 */
#ifndef PC_HARNESS_ENGINE_SCAN_H
#define PC_HARNESS_ENGINE_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "harness/engine/engine_observed.h"

/* The slots a partial VERIFY m asks for, located by geometry g, become the
 * wanted ones. 0, -ENOMEM or -EINVAL (a position past the region: err
 * says); on failure every slot is wanted. */
int eng_scan_want(struct eng_scan *s, const struct pc_geom *g, const struct pc_msg *m, char *err, size_t errlen);

struct board;
struct engine;

void eng_scan_reset(struct board *b);
int eng_take_runs(struct board *b, const struct pc_msg *m, char *err, size_t errlen);
int eng_take_slot(struct board *b, const struct pc_msg *m, uint32_t dmg_ceiling, char *err, size_t errlen);
int eng_take_same(struct board *b, const struct pc_msg *m, uint32_t dmg_ceiling, char *err, size_t errlen);
int eng_scan_begin(struct board *b, const struct pc_msg *m, char *err, size_t errlen);
int eng_scan_end(struct engine *e, struct board *b);

#endif

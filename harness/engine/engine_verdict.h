/*
 * engine_verdict.h - the verdict: findings and verdicts encoded to JSON
 * and emitted, one per cycle (engine_ledger.h), typed beside their line
 * (struct pc_verdict); notes to the campaign. engine_verdict.c owns the
 * encoding; it reads the board's identity, HELLO and device caches, and
 * takes the carried findings (engine_carry.h). Its own header since the
 * hub retired (issue 41). Private to harness/engine.
 */
#ifndef PC_HARNESS_ENGINE_VERDICT_H
#define PC_HARNESS_ENGINE_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "harness/results/verdict.h"

struct engine;
struct board;
struct judge;
struct wcycle;
struct occ;

void eng_note(struct engine *e, struct board *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void eng_wall_time(const struct engine *e, char *buf, size_t len);
int eng_verdict_simple(struct engine *e, struct board *b, unsigned cycle, enum pc_outcome outcome,
			  const char *reason);
int eng_verdict_write(struct judge *j, unsigned cycle, enum pc_outcome outcome, const struct wcycle *w,
		      json_object *judged, json_object *speed, const char *reason);
void eng_take_carry(struct judge *j);
void eng_flush_nw(struct judge *j);
json_object *eng_finding(struct judge *j, enum pc_class c, uint64_t seq, uint32_t slot, int acked, int mode);
void eng_add_int(json_object *o, const char *k, int64_t v);
void eng_describe_prev(json_object *f, const struct occ *prev);
void eng_audit_require(const struct engine *e, const struct board *b, struct wcycle *w);
void eng_add_refused(struct judge *j, const struct wcycle *w);
int eng_verdict_unjudged(struct engine *e, struct board *b, enum pc_outcome outcome, const char *reason,
			    json_object *extra);
void eng_carry_device(struct board *b, json_object *f);

#endif

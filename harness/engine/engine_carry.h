/*
 * engine_carry.h - a board's carried findings: damage a scan found with no
 * writes to judge, and damage to the device itself (superblocks, identity,
 * the region replaced), held until the next verdict takes them, whatever
 * its outcome (docs/architecture.md, "Nothing found is dropped"). One
 * object, opaque to the rest of the engine, split out of struct board
 * (issue 41). NULL: nothing carried; an object, even with no finding
 * listed, makes the next verdict one that carries (engine_verdict.c).
 * Private to harness/engine.
 */
#ifndef PC_HARNESS_ENGINE_CARRY_H
#define PC_HARNESS_ENGINE_CARRY_H

#include <json-c/json.h>

struct eng_carry;
struct judge;

/* Is anything carried (an object, findings listed or not)? */
int eng_carry_any(const struct eng_carry *c);
/* A device-level finding f (taken) for the next verdict: a collateral
 * violation, found at boot found_at_boot; listed up to ENGINE_MAX_FINDINGS,
 * counted beyond. -ENOMEM: f dropped. */
int eng_carry_add(struct eng_carry **c, json_object *f, unsigned found_at_boot);
/* The carried findings, counts and violations move into j (j->findings
 * an array already); *c is NULL after. */
void eng_carry_take(struct eng_carry **c, struct judge *j);
/* A quiet boot's judge adds to the carried list: j->findings is it (or a
 * new array), j->nlisted and j->unlisted its counts; eng_carry_close keeps
 * what the judge holds then (j->findings taken; j->counts and
 * j->violations added). close: 0 or -ENOMEM (nothing kept). */
void eng_carry_open(struct eng_carry *c, struct judge *j);
int eng_carry_close(struct eng_carry **c, struct judge *j);
/* A copy (NULL for NULL), or NULL with *oom set. */
struct eng_carry *eng_carry_dup(const struct eng_carry *c, int *oom);
void eng_carry_free(struct eng_carry *c);

#endif

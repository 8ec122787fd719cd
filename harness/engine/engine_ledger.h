/*
 * engine_ledger.h - a board's ledger of the verdicts the engine has issued:
 * one verdict per cycle, enforced where verdicts leave the engine
 * (engine_verdict.c), how many, and the highest cycle judged. One object,
 * opaque to the rest of the engine, split out of struct board (issue 41).
 * A NULL ledger is an empty one: it is allocated with its first verdict.
 * Private to harness/engine.
 */
#ifndef PC_HARNESS_ENGINE_LEDGER_H
#define PC_HARNESS_ENGINE_LEDGER_H

struct eng_ledger;

/* Has cycle a verdict already? */
int eng_ledger_judged(const struct eng_ledger *l, unsigned cycle);
/* Cycle (<= ENGINE_MAX_CYCLE: at most 1.25 MB of bitmap) has its verdict
 * now; *l allocated when NULL. 0, -EINVAL (a cycle past the limit) or
 * -ENOMEM (*l unchanged). */
int eng_ledger_mark(struct eng_ledger **l, unsigned cycle);
/* The verdicts issued, and the highest cycle among them (0: none). */
unsigned eng_ledger_count(const struct eng_ledger *l);
unsigned eng_ledger_last(const struct eng_ledger *l);
/* A copy (NULL for NULL), or NULL with *oom set. */
struct eng_ledger *eng_ledger_dup(const struct eng_ledger *l, int *oom);
void eng_ledger_free(struct eng_ledger *l);

#endif

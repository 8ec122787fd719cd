/*
 * engine_ledger.c - a board's ledger of the verdicts issued (engine_ledger.h):
 * one bit per cycle, the count and the highest cycle.
 */
#include "harness/engine/engine_ledger.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/engine/engine_types.h"

struct eng_ledger {
	uint8_t *bits;		/* one bit per cycle */
	size_t nbits;		/* bytes */
	unsigned count;		/* verdicts issued */
	unsigned last;		/* the highest cycle with a verdict */
};

int eng_ledger_judged(const struct eng_ledger *l, unsigned cycle)
{
	return l && cycle / 8 < l->nbits && (l->bits[cycle / 8] >> (cycle % 8) & 1);
}

int eng_ledger_mark(struct eng_ledger **lp, unsigned cycle)
{
	struct eng_ledger *l = *lp;

	if (cycle > ENGINE_MAX_CYCLE)
		return -EINVAL;
	if (!l && !(l = calloc(1, sizeof(*l))))
		return -ENOMEM;
	*lp = l;
	if (cycle / 8 >= l->nbits) {
		size_t max = ENGINE_MAX_CYCLE / 8 + 1, n = l->nbits * 2 > cycle / 8 + 64 ?
			l->nbits * 2 : cycle / 8 + 64;
		uint8_t *p;

		if (n > max)
			n = max;
		p = realloc(l->bits, n);
		if (!p)
			return -ENOMEM;
		memset(p + l->nbits, 0, n - l->nbits);
		l->bits = p;
		l->nbits = n;
	}
	l->bits[cycle / 8] |= (uint8_t)(1u << (cycle % 8));
	l->count++;
	if (cycle > l->last)
		l->last = cycle;
	return 0;
}

unsigned eng_ledger_count(const struct eng_ledger *l)
{
	return l ? l->count : 0;
}

unsigned eng_ledger_last(const struct eng_ledger *l)
{
	return l ? l->last : 0;
}

struct eng_ledger *eng_ledger_dup(const struct eng_ledger *l, int *oom)
{
	struct eng_ledger *c;

	if (!l)
		return NULL;
	c = malloc(sizeof(*c));
	if (c) {
		*c = *l;
		c->bits = l->nbits ? malloc(l->nbits) : NULL;
		if (c->bits || !l->nbits) {
			if (l->nbits)
				memcpy(c->bits, l->bits, l->nbits);
			return c;
		}
		free(c);
	}
	*oom = 1;
	return NULL;
}

void eng_ledger_free(struct eng_ledger *l)
{
	if (l)
		free(l->bits);
	free(l);
}

/*
 * engine_hold.c - a board's state held just before a partial scan, and put
 * back after the scan was judged: `powercut crash-states` judges one cycle
 * on many scans of the same slots (one per crash state) without feeding the
 * cycle and its full base scan again for each (docs/crash-states.md,
 * "Incremental judging"). A scan judged against a held board changes only
 * what is listed here: the scan's own tables (reset), the wanted slots of
 * the expected state (adopted), the cycle's writes (judged, freed), the
 * carried findings, the kept raw sectors, the ledger of verdicts issued
 * (engine_ledger.h) and the board's counters; each is held and put back. Everything else the scan
 * only reads; a board whose expected state or wanted slots changed anyway
 * is refused (-EAGAIN: feed the cycle again).
 *
 * It sits beside the intake (engine.c) and calls the state (engine_state.c)
 * and the scan's reset (engine_scan.c).
 */
#include "harness/engine/engine.h"
#include "harness/engine/engine_board.h"
#include "harness/engine/engine_carry.h"
#include "harness/engine/engine_ledger.h"
#include "harness/engine/engine_scan.h"
#include "harness/engine/engine_state.h"
#include "harness/engine/engine_wcycle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct engine_hold {
	struct board *live;
	struct board b;		/* the board as held (its pointers are the live board's or below) */
	struct wcycle *w;	/* owned copies of what a judged scan changes */
	struct eng_carry *carry;
	struct raw *exp_raws;
	struct eng_ledger *ledger;
	uint32_t *slot;		/* the wanted slots and their expected occupants (sectors owned) */
	struct occ *occ;
	uint32_t nslot;
	int64_t t_now;
	uint32_t dead_device;
};

static void *dup_bytes(const void *p, size_t n)
{
	void *q;

	if (!p || !n)
		return NULL;
	q = malloc(n);
	if (q)
		memcpy(q, p, n);
	return q;
}

static json_object *dup_json(json_object *o)
{
	json_object *c = NULL;

	if (o && (json_object_deep_copy(o, &c, NULL) || !c))
		return NULL;
	return c;
}

/* An owned copy of a cycle's writes (NULL: none, or out of memory: *oom). */
static struct wcycle *wcycle_dup(const struct wcycle *w, int *oom)
{
	struct wcycle *c;

	if (!w)
		return NULL;
	c = dup_bytes(w, sizeof(*w));
	if (!c) {
		*oom = 1;
		return NULL;
	}
	c->sub = dup_bytes(w->sub, w->n);
	c->ack = dup_bytes(w->ack, w->n);
	c->lat = dup_bytes(w->lat, (size_t)w->n * sizeof(*w->lat));
	c->cut = dup_json(w->cut);
	c->audit = dup_json(w->audit);
	if ((w->sub && !c->sub) || (w->ack && !c->ack) || (w->lat && !c->lat) || (w->cut && !c->cut) ||
	    (w->audit && !c->audit)) {
		eng_wcycle_free(c);
		*oom = 1;
		return NULL;
	}
	return c;
}

void engine_hold_free(struct engine_hold *h)
{
	if (!h)
		return;
	eng_wcycle_free(h->w);
	eng_carry_free(h->carry);
	free(h->exp_raws);
	eng_ledger_free(h->ledger);
	for (uint32_t i = 0; h->occ && i < h->nslot; i++)
		free(h->occ[i].sect);
	free(h->occ);
	free(h->slot);
	free(h);
}

struct engine_hold *engine_hold(struct engine *e, const char *board)
{
	struct board *b = e->boards;
	struct engine_hold *h;
	uint32_t spr, n = 0;
	int oom = 0;

	while (b && strcmp(b->name, board))
		b = b->next;
	/* a board between a partial VERIFY and its scan, with an expected state to judge it against */
	if (!b || !b->scan.want || !b->exp.slots || !b->exp.baseline || b->scan.scanning || b->scan.obs || b->refused ||
	    !b->have_geom)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	spr = pc_geom_spr(&b->g);
	h->live = b;
	h->b = *b;
	h->t_now = e->t_now;
	h->dead_device = e->dead_device;
	h->w = wcycle_dup(b->w, &oom);
	h->carry = eng_carry_dup(b->carry, &oom);
	h->exp_raws = dup_bytes(b->exp.raws, (size_t)b->exp.nraws * sizeof(*b->exp.raws));
	h->ledger = eng_ledger_dup(b->ledger, &oom);
	h->slot = calloc(b->scan.nwant ? b->scan.nwant : 1, sizeof(*h->slot));
	h->occ = calloc(b->scan.nwant ? b->scan.nwant : 1, sizeof(*h->occ));
	if (oom || (b->exp.nraws && !h->exp_raws) ||
	    !h->slot || !h->occ)
		goto fail;
	for (size_t wd = 0; wd < BITMAP_WORDS(b->g.nslots); wd++)
		for (uint64_t bits = b->scan.want[wd]; bits; bits &= bits - 1) {
			uint32_t s = (uint32_t)(wd * 64 + (unsigned)__builtin_ctzll(bits));
			struct occ o;

			if (s >= b->g.nslots || n >= b->scan.nwant)
				goto fail;
			eng_slots_get(b->exp.slots, s, &o);
			if (o.sect) {
				o.sect = dup_bytes(o.sect, spr * sizeof(*o.sect));
				if (!o.sect)
					goto fail;
			}
			h->slot[n] = s;
			h->occ[n++] = o;
		}
	h->nslot = n;
	return h;
fail:
	h->nslot = n;
	engine_hold_free(h);
	return NULL;
}

int engine_hold_restore(struct engine *e, struct engine_hold *h)
{
	struct board *b = h->live, keep;
	uint32_t spr = pc_geom_spr(&h->b.g);
	int oom = 0;

	eng_scan_reset(b);
	/* what a judged scan never replaces: if it did, the held state is no longer the board's */
	if (b->exp.slots != h->b.exp.slots || b->scan.want != h->b.scan.want || b->hello != h->b.hello || b->next != h->b.next)
		return -EAGAIN;
	for (uint32_t i = 0; i < h->nslot; i++) {
		struct occ o = h->occ[i];

		if (o.sect && !(o.sect = dup_bytes(o.sect, spr * sizeof(*o.sect))))
			return -ENOMEM;
		if (eng_slots_set(b->exp.slots, h->slot[i], &o)) {
			free(o.sect);
			return -ENOMEM;
		}
	}
	keep = *b;
	eng_wcycle_free(b->w);
	eng_carry_free(b->carry);
	free(b->exp.raws);
	eng_ledger_free(b->ledger);
	*b = h->b;
	/* the live board's own: its expected state (now as held), the HELLO's caches it built */
	b->exp.slots = keep.exp.slots;
	b->dev_cache = keep.dev_cache;
	b->queue_cache = keep.queue_cache;
	b->last_device = keep.last_device;
	b->scan.obs = NULL;
	b->scan.seen = NULL;
	b->scan.raws = NULL;
	b->scan.nraws = 0;
	b->w = wcycle_dup(h->w, &oom);
	b->carry = eng_carry_dup(h->carry, &oom);
	b->exp.raws = dup_bytes(h->exp_raws, (size_t)h->b.exp.nraws * sizeof(*h->exp_raws));
	b->ledger = eng_ledger_dup(h->ledger, &oom);
	e->t_now = h->t_now;
	e->dead_device = h->dead_device;
	if (oom || (h->b.exp.nraws && !b->exp.raws)) {
		/* nothing dangles: what is missing is counted as none, and the caller feeds again */
		if (!b->exp.raws)
			b->exp.nraws = 0;
		return -ENOMEM;
	}
	return 0;
}

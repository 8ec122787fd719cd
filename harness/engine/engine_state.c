/*
 * engine_state.c - the per-slot state, compact, and a cycle's writes: the
 * bottom of the engine (it calls no other part of it).
 *
 * A region of 64 GiB holds 16 Mi slots of 4 KiB records, so what the engine
 * keeps per slot decides its memory (docs/architecture.md, engine bounds).
 * A slot table keeps, per slot, one packed 8-byte entry: the low 32 bits of
 * the occupant's seq, and a tag holding its state and the index of its
 * "generation" -- the (cycle, flags, high 32 bits of seq) it shares with
 * the other records of its cycle, interned once per table. What only a few
 * slots carry (the sectors of a damaged slot) lives in a side table keyed
 * by slot. A sparse table has no entries at all, only the side table: the
 * scan in progress holds there only the slots that differ from the expected
 * state (the records the cycle wrote, damage), and a seen bitmap says the
 * rest were found as expected. It turns dense when the differences grow
 * past a 64th of the slots. Per slot: 8 bytes for the expected state, and
 * while a scan is judged a bit each for seen, wanted and written, and when
 * it differs in many slots 8 more and at most 2.5 of side table: 8 to 19.
 */
#include "harness/engine/engine_board.h"
#include "harness/engine/engine_state.h"
#include "harness/engine/engine_wcycle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The tag's low 2 bits: OCC_UNKNOWN, OCC_WHOLE, or SIDE (the side table
 * holds the slot). */
#define TAG_SIDE	3u
#define TAG_STATE(t)	((t) & 3u)
#define TAG_GEN(t)	((t) >> 2)
#define MAX_GENS	(1u << 30)

struct gen {
	uint32_t seq_hi, cycle;
	uint16_t flags;
};

struct xent {
	uint32_t key;		/* slot + 1; 0: empty */
	struct occ o;
};

struct slots {
	uint32_t n;
	uint64_t *ent;		/* dense: n entries; NULL: sparse */
	/* generations: gens[] and an open-addressed index of them (idx + 1) */
	struct gen *gens;
	uint32_t ngens, gcap;
	uint32_t *gidx;
	uint32_t gidx_cap;	/* a power of 2, or 0 */
	uint32_t gc_at;		/* ngens at which unused generations are dropped */
	/* the side table: open addressing, linear probing */
	struct xent *x;
	uint32_t xn, xcap;	/* xcap a power of 2, or 0 */
	uint64_t *xbits;	/* sparse: a bitmap of the slots in x (a miss costs no probe) */
};

static uint32_t hash32(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	return (uint32_t)v;
}

static uint32_t gen_hash(uint32_t seq_hi, uint32_t cycle, uint16_t flags)
{
	return hash32(((uint64_t)seq_hi << 32 | cycle) ^ ((uint64_t)flags * 0x9e3779b97f4a7c15ull));
}

struct slots *eng_slots_new(uint32_t n, int dense)
{
	struct slots *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->n = n;
	t->gc_at = 1024;
	if (dense && n)
		t->ent = calloc(n, sizeof(*t->ent));
	else
		t->xbits = calloc(BITMAP_WORDS(n) ? BITMAP_WORDS(n) : 1, sizeof(*t->xbits));
	if (!t->ent && !t->xbits) {
		free(t);
		return NULL;
	}
	return t;
}

void eng_slots_free(struct slots *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->xcap; i++)
		if (t->x[i].key)
			free(t->x[i].o.sect);
	free(t->x);
	free(t->xbits);
	free(t->ent);
	free(t->gens);
	free(t->gidx);
	free(t);
}

int eng_slots_dense(const struct slots *t)
{
	return t->ent != NULL;
}

/* ---- the side table ---- */

static struct xent *side_find(const struct slots *t, uint32_t slot)
{
	if (!t->xn || (t->xbits && !BIT_GET(t->xbits, slot)))
		return NULL;
	for (uint32_t i = hash32(slot) & (t->xcap - 1);; i = (i + 1) & (t->xcap - 1)) {
		if (!t->x[i].key)
			return NULL;
		if (t->x[i].key == slot + 1)
			return &t->x[i];
	}
}

static int side_grow(struct slots *t)
{
	uint32_t cap = t->xcap ? t->xcap * 2 : 64;
	struct xent *x = calloc(cap, sizeof(*x));

	if (!x)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->xcap; i++) {
		uint32_t k;

		if (!t->x[i].key)
			continue;
		for (k = hash32(t->x[i].key - 1) & (cap - 1); x[k].key; k = (k + 1) & (cap - 1))
			;
		x[k] = t->x[i];
	}
	free(t->x);
	t->x = x;
	t->xcap = cap;
	return 0;
}

/* The slot's side entry, made (state OCC_UNKNOWN) when create says so. A
 * pointer valid until the next entry is made or dropped; NULL when absent,
 * or out of memory. */
struct occ *eng_slots_side(struct slots *t, uint32_t slot, int create)
{
	struct xent *e = side_find(t, slot);
	uint32_t i;

	if (e || !create)
		return e ? &e->o : NULL;
	if ((t->xn + 1) * 2 > t->xcap && side_grow(t))
		return NULL;
	for (i = hash32(slot) & (t->xcap - 1); t->x[i].key; i = (i + 1) & (t->xcap - 1))
		;
	memset(&t->x[i], 0, sizeof(t->x[i]));
	t->x[i].key = slot + 1;
	t->xn++;
	if (t->xbits)
		BIT_SET(t->xbits, slot);
	if (t->ent)
		t->ent[slot] = (uint64_t)TAG_SIDE << 32;
	return &t->x[i].o;
}

/* Drop the slot's side entry (its sectors are the caller's, or freed when
 * free_sect says so): backward-shift deletion keeps the probes unbroken. */
static void side_drop(struct slots *t, uint32_t slot, int free_sect)
{
	struct xent *e = side_find(t, slot);
	uint32_t i, j, k;

	if (!e)
		return;
	if (free_sect)
		free(e->o.sect);
	i = (uint32_t)(e - t->x);
	t->x[i].key = 0;
	t->xn--;
	if (t->xbits)
		t->xbits[slot / 64] &= ~((uint64_t)1 << (slot % 64));
	for (j = (i + 1) & (t->xcap - 1); t->x[j].key; j = (j + 1) & (t->xcap - 1)) {
		k = hash32(t->x[j].key - 1) & (t->xcap - 1);
		/* entry j may move to the hole i if its home k is not in (i, j] */
		if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->x[i] = t->x[j];
		t->x[j].key = 0;
		i = j;
	}
}

uint32_t eng_slots_nside(const struct slots *t)
{
	return t->xn;
}

/* ---- generations ---- */

static int gidx_grow(struct slots *t)
{
	uint32_t cap = t->gidx_cap ? t->gidx_cap * 2 : 64;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (uint32_t g = 0; g < t->ngens; g++) {
		uint32_t k = gen_hash(t->gens[g].seq_hi, t->gens[g].cycle, t->gens[g].flags) & (cap - 1);

		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = g + 1;
	}
	free(t->gidx);
	t->gidx = h;
	t->gidx_cap = cap;
	return 0;
}

/* The index of generation (seq_hi, cycle, flags), interned. -ENOMEM. */
static int64_t gen_intern(struct slots *t, uint32_t seq_hi, uint32_t cycle, uint16_t flags)
{
	uint32_t k;

	if (t->gidx_cap) {
		for (k = gen_hash(seq_hi, cycle, flags) & (t->gidx_cap - 1); t->gidx[k]; k = (k + 1) & (t->gidx_cap - 1)) {
			const struct gen *g = &t->gens[t->gidx[k] - 1];

			if (g->seq_hi == seq_hi && g->cycle == cycle && g->flags == flags)
				return t->gidx[k] - 1;
		}
	}
	if (t->ngens >= MAX_GENS)
		return -ENOMEM;
	if (t->ngens == t->gcap) {
		uint32_t cap = t->gcap ? t->gcap * 2 : 16;
		struct gen *g = realloc(t->gens, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		t->gens = g;
		t->gcap = cap;
	}
	if ((t->ngens + 1) * 2 > t->gidx_cap) {
		if (gidx_grow(t))
			return -ENOMEM;
	}
	t->gens[t->ngens] = (struct gen){ seq_hi, cycle, flags };
	for (k = gen_hash(seq_hi, cycle, flags) & (t->gidx_cap - 1); t->gidx[k]; k = (k + 1) & (t->gidx_cap - 1))
		;
	t->gidx[k] = t->ngens + 1;
	return t->ngens++;
}

/*
 * Drop the generations no entry uses any more (the expected state forgets
 * the cycles whose records were all overwritten), renumbering the rest:
 * O(slots), when the table has doubled since the last time.
 */
static void gen_collect(struct slots *t)
{
	uint32_t *map, n = 0;

	if (!t->ent || t->ngens < t->gc_at)
		return;
	map = calloc(t->ngens, sizeof(*map));
	if (!map)
		return;	/* kept: it only costs memory */
	for (uint32_t s = 0; s < t->n; s++)
		if (TAG_STATE(t->ent[s] >> 32) == OCC_WHOLE)
			map[TAG_GEN(t->ent[s] >> 32)] = 1;
	for (uint32_t g = 0; g < t->ngens; g++)
		if (map[g]) {
			t->gens[n] = t->gens[g];
			map[g] = n++;
		}
	for (uint32_t s = 0; s < t->n; s++) {
		uint32_t tag = (uint32_t)(t->ent[s] >> 32);

		if (TAG_STATE(tag) == OCC_WHOLE)
			t->ent[s] = (uint64_t)(map[TAG_GEN(tag)] << 2 | OCC_WHOLE) << 32 | (uint32_t)t->ent[s];
	}
	free(map);
	t->ngens = n;
	free(t->gidx);
	t->gidx = NULL;
	t->gidx_cap = 0;
	if (gidx_grow(t) == 0)
		while (t->ngens * 2 > t->gidx_cap && gidx_grow(t) == 0)
			;
	t->gc_at = n * 2 > 1024 ? n * 2 : 1024;
}

/* ---- entries ---- */

/* The slot's occupant into o (a damaged slot's sectors borrowed from the
 * table). 1 when the table holds the slot; 0 when a sparse table does not
 * (o is then OCC_UNKNOWN). */
int eng_slots_get(const struct slots *t, uint32_t slot, struct occ *o)
{
	const struct xent *e;
	uint32_t tag;

	memset(o, 0, sizeof(*o));
	if (t->ent) {
		tag = (uint32_t)(t->ent[slot] >> 32);
		if (TAG_STATE(tag) == OCC_WHOLE) {
			const struct gen *g = &t->gens[TAG_GEN(tag)];

			o->state = OCC_WHOLE;
			o->seq = (uint64_t)g->seq_hi << 32 | (uint32_t)t->ent[slot];
			o->cycle = g->cycle;
			o->flags = g->flags;
			return 1;
		}
		if (TAG_STATE(tag) != TAG_SIDE)
			return 1;
	}
	e = side_find(t, slot);
	if (!e)
		return 0;
	*o = e->o;
	return 1;
}

/* Does the slot hold whole record (seq, cycle, flags)? Without unpacking. */
static int slots_holds(const struct slots *t, uint32_t slot, uint64_t seq, uint32_t cycle, uint16_t flags)
{
	uint64_t ent;
	const struct gen *g;

	if (!t->ent)
		return 0;
	ent = t->ent[slot];
	if (TAG_STATE(ent >> 32) != OCC_WHOLE || (uint32_t)ent != (uint32_t)seq)
		return 0;
	g = &t->gens[TAG_GEN(ent >> 32)];
	return g->seq_hi == (uint32_t)(seq >> 32) && g->cycle == cycle && g->flags == flags;
}

/*
 * Every side entry of from that want names (NULL: all) moves into to,
 * sectors and all (from keeps the entries, without their sectors). 0 or
 * -ENOMEM.
 */
int eng_slots_move_side(struct slots *from, struct slots *to, const uint64_t *want)
{
	for (uint32_t i = 0; i < from->xcap; i++) {
		struct xent *x = &from->x[i];

		if (!x->key || (want && !BIT_GET(want, x->key - 1)))
			continue;
		if (eng_slots_set(to, x->key - 1, &x->o))
			return -ENOMEM;
		x->o.sect = NULL;
	}
	return 0;
}

/* The damaged slots of t, counted in and out of want (NULL: every slot is in): what a loop over
 * every slot asking eng_slots_state() counts, at the cost of the side table (a damaged slot is
 * always there). */
void eng_slots_count_damaged(const struct slots *t, const uint64_t *want, uint64_t *in, uint64_t *out)
{
	*in = *out = 0;
	for (uint32_t i = 0; i < t->xcap; i++) {
		const struct xent *x = &t->x[i];
		uint32_t slot;

		if (!x->key || x->o.state != OCC_DAMAGED)
			continue;
		slot = x->key - 1;
		if (t->ent && TAG_STATE(t->ent[slot] >> 32) != TAG_SIDE)
			continue;
		if (!want || BIT_GET(want, slot))
			(*in)++;
		else
			(*out)++;
	}
}

/* The slot's state (OCC_*) without unpacking it. */
int eng_slots_state(const struct slots *t, uint32_t slot)
{
	const struct xent *e;

	if (t->ent && TAG_STATE(t->ent[slot] >> 32) != TAG_SIDE)
		return (int)TAG_STATE(t->ent[slot] >> 32);
	e = side_find(t, slot);
	return e ? e->o.state : OCC_UNKNOWN;
}

/*
 * The slot holds o from now on: a whole record packed in the dense entry,
 * a damaged slot (its sectors, o->sect, now the table's) in the side
 * table. The slot's previous sectors are freed. 0 or -ENOMEM (then o->sect
 * is still the caller's).
 */
int eng_slots_set(struct slots *t, uint32_t slot, const struct occ *o)
{
	struct occ *x;

	if (t->ent && o->state != OCC_DAMAGED) {
		uint32_t tag = OCC_UNKNOWN;

		if (o->state == OCC_WHOLE) {
			int64_t g = gen_intern(t, (uint32_t)(o->seq >> 32), o->cycle, o->flags);

			if (g < 0)
				return -ENOMEM;
			tag = (uint32_t)g << 2 | OCC_WHOLE;
		}
		side_drop(t, slot, 1);
		t->ent[slot] = (uint64_t)tag << 32 | (uint32_t)o->seq;
		return 0;
	}
	x = side_find(t, slot) ? eng_slots_side(t, slot, 0) : eng_slots_side(t, slot, 1);
	if (!x)
		return -ENOMEM;
	if (x->sect != o->sect)
		free(x->sect);
	*x = *o;
	return 0;
}

/* Take the slot's side entry out of t, sectors and all, into o. 1 when
 * there was one. */
int eng_slots_take(struct slots *t, uint32_t slot, struct occ *o)
{
	struct xent *e = side_find(t, slot);

	if (!e)
		return 0;
	*o = e->o;
	side_drop(t, slot, 0);
	if (t->ent)
		t->ent[slot] = 0;
	return 1;
}

/* A sparse table turned dense: every slot not in its side table is what
 * base holds where seen says it was seen, OCC_UNKNOWN elsewhere. 0 or
 * -ENOMEM (t unchanged). */
int eng_slots_densify(struct slots *t, const struct slots *base, const uint64_t *seen)
{
	struct occ o;

	if (t->ent)
		return 0;
	t->ent = calloc(t->n, sizeof(*t->ent));
	if (!t->ent)
		return -ENOMEM;
	for (uint32_t s = 0; s < t->n; s++) {
		if (side_find(t, s)) {
			t->ent[s] = (uint64_t)TAG_SIDE << 32;
			continue;
		}
		if (!base || !BIT_GET(seen, s))
			continue;
		eng_slots_get(base, s, &o);
		o.sect = NULL;	/* a damaged slot seen as expected is in t's side table */
		if (o.state == OCC_WHOLE && eng_slots_set(t, s, &o)) {
			free(t->ent);
			t->ent = NULL;
			return -ENOMEM;
		}
	}
	/* whole records move from the side table into their entries */
	for (uint32_t i = 0; i < t->xcap; i++) {
		if (!t->x[i].key || t->x[i].o.state == OCC_DAMAGED)
			continue;
		o = t->x[i].o;
		if (eng_slots_set(t, t->x[i].key - 1, &o))
			return 0;	/* stays in the side table: still right */
		i--;	/* an entry may have shifted into this one */
	}
	return 0;
}

/* After a run of updates: the generations no entry uses go. */
void eng_slots_compact(struct slots *t)
{
	gen_collect(t);
}

/* ---- a board's expected state and the scan in progress ---- */

/* The slot's expected occupant (OCC_UNKNOWN without an expected state). */
void eng_exp_get(const struct board *b, uint32_t slot, struct occ *o)
{
	memset(o, 0, sizeof(*o));
	if (b->exp.slots)
		eng_slots_get(b->exp.slots, slot, o);
}

/* What the scan in progress found in the slot: what its table holds, or
 * (sparse) the expected occupant when the slot was reported as that. */
void eng_obs_get(const struct board *b, uint32_t slot, struct occ *o)
{
	if (eng_slots_get(b->scan.obs, slot, o))
		return;
	if (BIT_GET(b->scan.seen, slot))
		eng_exp_get(b, slot, o);
}

/* Can the slot's scan differ from its expected occupant? 0 only when it
 * was reported as exactly that (a sparse table without the slot). */
int eng_obs_differs(const struct board *b, uint32_t slot)
{
	return eng_slots_dense(b->scan.obs) || !BIT_GET(b->scan.seen, slot) || eng_slots_side(b->scan.obs, slot, 0);
}

/*
 * The scan found whole record o in the slot: a sparse scan keeps only what
 * differs from the expected state, and turns dense when that is more than
 * a 64th of the slots (a side entry takes 40 bytes, twice over at least:
 * 2.5 bytes per slot at most, besides the 8 of the dense entries). 0 or
 * -ENOMEM.
 */
int eng_obs_put(struct board *b, uint32_t slot, const struct occ *o)
{
	if (!eng_slots_dense(b->scan.obs)) {
		if (b->exp.slots && slots_holds(b->exp.slots, slot, o->seq, o->cycle, o->flags))
			return 0;
		if (eng_slots_nside(b->scan.obs) >= b->g.nslots / 64 + 64 &&
		    eng_slots_densify(b->scan.obs, b->exp.slots, b->scan.seen))
			return -ENOMEM;
	}
	return eng_slots_set(b->scan.obs, slot, o);
}

/* The expected state given up, and the writes that were to be judged
 * against it: the next scan takes a new baseline. */
void eng_exp_drop(struct board *b)
{
	eng_wcycle_free(b->w);
	b->w = NULL;
	eng_slots_free(b->exp.slots);
	b->exp.slots = NULL;
	free(b->exp.raws);
	b->exp.raws = NULL;
	b->exp.nraws = 0;
	b->exp.baseline = 0;
}

/* A cycle's writes, released (accepts NULL). */
void eng_wcycle_free(struct wcycle *w)
{
	if (!w)
		return;
	free(w->lat);
	json_object_put(w->audit);
	free(w->sub);
	free(w->ack);
	json_object_put(w->cut);
	free(w);
}

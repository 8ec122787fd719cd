/*
 * engine_scan.c - a scan assembled from the agent's lines: scan_begin, runs
 * of whole records, slot reports (in parts, for large records), same lines
 * for damage already held. A complete scan goes down to the judge
 * (engine_judge.c), then becomes the expected state, with the bytes of its
 * damaged sectors kept for later.
 */
#include "harness/engine/engine_board.h"
#include "harness/engine/engine_judge.h"
#include "harness/engine/engine_scan.h"
#include "harness/engine/engine_state.h"
#include "harness/engine/engine_verdict.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/json.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"

void eng_scan_reset(struct board *b)
{
	eng_slots_free(b->scan.obs);
	b->scan.obs = NULL;
	free(b->scan.seen);
	b->scan.seen = NULL;
	free(b->scan.raws);
	b->scan.raws = NULL;
	b->scan.nraws = 0;
	b->scan.nseen = 0;
	b->scan.scanning = 0;
	b->scan.err[0] = 0;
	b->scan.sect_obs = 0;
	b->scan.dmg_seen = 0;
	b->scan.dmg_over = 0;
}

int eng_scan_want(struct eng_scan *s, const struct pc_geom *g, const struct pc_msg *m, char *err, size_t errlen)
{
	eng_scan_want_clear(s);
	s->want = calloc(BITMAP_WORDS(g->nslots), sizeof(*s->want));
	if (!s->want)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->u.verify.nranges; i++) {
		const struct pc_posrange *r = &m->u.verify.ranges[i];
		if ((uint64_t)r->pos + r->n > g->nslots) {
			snprintf(err, errlen, "verify: positions %u+%u past the region's %u slots", r->pos, r->n,
				 g->nslots);
			eng_scan_want_clear(s);
			return -EINVAL;
		}
		for (uint64_t p = r->pos; p < (uint64_t)r->pos + r->n; p++) {
			uint32_t slot = pc_slot_of_pos(g, m->u.verify.pattern, (uint32_t)p);
			s->nwant += !BIT_GET(s->want, slot);
			BIT_SET(s->want, slot);
		}
	}
	return 0;
}

/* The scanned slots' damaged-sector bytes become the expected state's. */
static void keep_raws(struct board *b)
{
	unsigned k = 0;

	for (unsigned i = 0; i < b->exp.nraws; i++) {
		const struct raw *r = &b->exp.raws[i];
		struct occ ob;
		const struct occ *o = NULL;

		if (b->scan.obs) {
			eng_obs_get(b, r->slot, &ob);
			o = &ob;
		}

		/* not looked at: still expected; looked at and unchanged (sent by
		 * hash because the host named it in a KNOWN line): still its bytes */
		if (!eng_scan_wanted(&b->scan, r->slot) ||
		    (o && o->state == OCC_DAMAGED && o->sect && r->idx < o->got &&
		     o->sect[r->idx].kind == PC_SK_HASH &&
		     o->sect[r->idx].value == pc_crc32c(0, r->bytes, PC_SECTOR)))
			b->exp.raws[k++] = *r;
	}
	b->exp.nraws = k;
	if (!b->scan.nraws)
		return;
	{
		struct raw *n = realloc(b->exp.raws, (b->exp.nraws + b->scan.nraws) * sizeof(*n));
		if (!n)
			return;	/* then a later tear over them is reported as corrupt */
		memcpy(n + b->exp.nraws, b->scan.raws, b->scan.nraws * sizeof(*n));
		b->exp.raws = n;
		b->exp.nraws += b->scan.nraws;
	}
	if (b->exp.nraws > ENGINE_MAX_KEPT_RAWS) {
		/* the oldest go: a tear over them is then reported as corrupt */
		unsigned drop = b->exp.nraws - ENGINE_MAX_KEPT_RAWS;
		memmove(b->exp.raws, b->exp.raws + drop, ENGINE_MAX_KEPT_RAWS * sizeof(*b->exp.raws));
		b->exp.nraws = ENGINE_MAX_KEPT_RAWS;
	}
}

int eng_take_runs(struct board *b, const struct pc_msg *m, char *err, size_t errlen)
{
	if (!b->scan.obs)
		return 0;	/* the scan already failed (scan_err says why) */
	for (uint32_t k = 0; k < m->u.runs.nruns; k++) {
		const struct pc_run *r = &m->u.runs.runs[k];

		if ((uint64_t)r->pos + r->n > b->g.nslots)
			return pc_fail(err, errlen, -EINVAL, "runs: positions %u+%u past the %u slots", r->pos, r->n, b->g.nslots);
		for (uint32_t i = 0; i < r->n; i++) {
			uint32_t slot = pc_slot_of_pos(&b->g, b->scan.pattern, r->pos + i);
			struct occ o = { .state = OCC_WHOLE, .seq = r->seq ? r->seq + i : 0, .cycle = r->cycle,
					 .flags = r->flags };

			if (BIT_GET(b->scan.seen, slot))
				return pc_fail(err, errlen, -EINVAL, "runs: slot %u reported twice", slot);
			BIT_SET(b->scan.seen, slot);
			b->scan.nseen++;
			if (eng_obs_put(b, slot, &o))
				return pc_fail(err, errlen, -EINVAL, "out of memory for slot %u", slot);
		}
	}
	return 0;
}

/* A damaged sector's bytes, kept for the judge (a tear is located in them). */
static int take_raw(struct board *b, uint32_t slot, uint16_t idx, const uint8_t *bytes, char *err, size_t errlen)
{
	struct raw *nr;

	if (b->scan.nraws >= PC_PROTO_MAX_RAW)
		return pc_fail(err, errlen, -EINVAL, "slot %u: more than %d raw sectors in one scan", slot, PC_PROTO_MAX_RAW);
	nr = realloc(b->scan.raws, (b->scan.nraws + 1) * sizeof(*nr));
	if (!nr)
		return pc_fail(err, errlen, -EINVAL, "out of memory for a raw sector");
	b->scan.raws = nr;
	nr[b->scan.nraws].slot = slot;
	nr[b->scan.nraws].idx = idx;
	memcpy(nr[b->scan.nraws].bytes, bytes, PC_SECTOR);
	b->scan.nraws++;
	return 0;
}

/* A slot that is not one whole record; a large record's report may come in
 * several messages, each continuing in sector order where the last stopped. */
int eng_take_slot(struct board *b, const struct pc_msg *m, uint32_t dmg_ceiling, char *err, size_t errlen)
{
	const struct pc_slot_report *s = &m->u.slot;
	uint32_t spr = pc_geom_spr(&b->g);
	struct occ *o;

	if (!b->scan.obs)
		return 0;	/* the scan already failed (scan_err says why) */
	if (s->slot >= b->g.nslots || s->nsect == 0)
		return pc_fail(err, errlen, -EINVAL, "slot %u does not fit the region (%u slots)", s->slot, b->g.nslots);
	o = BIT_GET(b->scan.seen, s->slot) ? eng_slots_side(b->scan.obs, s->slot, 0) : NULL;
	if (BIT_GET(b->scan.seen, s->slot) && (!o || o->state != OCC_DAMAGED || o->got == spr))
		return pc_fail(err, errlen, -EINVAL, "slot %u reported twice", s->slot);
	if (!o) {
		o = eng_slots_side(b->scan.obs, s->slot, 1);
		if (!o)
			return pc_fail(err, errlen, -EINVAL, "out of memory for slot %u", s->slot);
		BIT_SET(b->scan.seen, s->slot);
		o->state = OCC_DAMAGED;
		o->got = 0;
		b->scan.dmg_seen += spr;
		/* the damage the engine holds per board has a ceiling: past it
		 * the scan is only counted (eng_scan_overflow() judges what it can) */
		if ((uint64_t)b->scan.sect_base + b->scan.sect_obs + spr > dmg_ceiling)
			b->scan.dmg_over = 1;
		if (!b->scan.dmg_over) {
			o->sect = calloc(spr, sizeof(*o->sect));
			if (!o->sect)
				return pc_fail(err, errlen, -EINVAL, "out of memory for slot %u", s->slot);
			b->scan.sect_obs += spr;
		}
	}
	for (uint32_t k = 0; k < s->nsect; k++) {
		const struct pc_sect_report *r = &s->sect[k];
		uint32_t i = o->got;
		struct sect *d;

		if (i >= spr || r->idx != i)
			return pc_fail(err, errlen, -EINVAL, "slot %u: sector %u where sector %u was expected (%u per record)",
				 s->slot, r->idx, i, spr);
		o->got++;
		if (!o->sect)
			continue;	/* counted, not held */
		d = &o->sect[i];
		d->kind = (uint8_t)r->kind;
		switch (r->kind) {
		case PC_SK_VALID:
			d->seq = r->seq;
			d->cycle = r->cycle;
			d->flags = r->flags;
			d->lba = r->lba;
			d->hidx = r->hidx;
			break;
		case PC_SK_RAW:
			if (take_raw(b, s->slot, (uint16_t)i, r->raw, err, errlen))
				return -EINVAL;
			d->value = pc_crc32c(0, r->raw, PC_SECTOR);
			/* the same bytes seen again compare equal however they travelled */
			d->kind = PC_SK_HASH;
			break;
		default:
			d->value = r->value;
		}
	}
	if (o->got == spr)
		b->scan.nseen++;
	return 0;
}

/* Damaged slots the agent found exactly as the expected state holds them
 * (it had their digests from KNOWN): the expected damage is what was seen. */
int eng_take_same(struct board *b, const struct pc_msg *m, uint32_t dmg_ceiling, char *err, size_t errlen)
{
	uint32_t spr = pc_geom_spr(&b->g);

	if (!b->scan.obs)
		return 0;	/* the scan already failed (scan_err says why) */
	for (uint32_t k = 0; k < m->u.same.n; k++) {
		uint32_t slot = m->u.same.slots[k];
		struct occ xo, *o;
		const struct occ *x = NULL;

		if (slot >= b->g.nslots || BIT_GET(b->scan.seen, slot))
			return pc_fail(err, errlen, -EINVAL, "same: slot %u %s", slot, slot >= b->g.nslots ? "past the region" :
				 "reported twice");
		if (b->exp.slots) {
			eng_exp_get(b, slot, &xo);
			x = &xo;
		}
		if (!x || x->state != OCC_DAMAGED || !x->sect)
			return pc_fail(err, errlen, -EINVAL, "same: slot %u is not damage the engine holds", slot);
		o = eng_slots_side(b->scan.obs, slot, 1);
		if (!o)
			return pc_fail(err, errlen, -EINVAL, "out of memory for slot %u", slot);
		BIT_SET(b->scan.seen, slot);
		b->scan.nseen++;
		o->state = OCC_DAMAGED;
		o->got = (uint16_t)spr;
		b->scan.dmg_seen += spr;
		if ((uint64_t)b->scan.sect_base + b->scan.sect_obs + spr > dmg_ceiling)
			b->scan.dmg_over = 1;
		if (b->scan.dmg_over)
			continue;	/* counted, not held (eng_scan_overflow()) */
		o->sect = malloc(spr * sizeof(*o->sect));
		if (!o->sect)
			return pc_fail(err, errlen, -EINVAL, "out of memory for slot %u", slot);
		memcpy(o->sect, x->sect, spr * sizeof(*o->sect));
		b->scan.sect_obs += spr;
	}
	return 0;
}

/* A scan starts: what it may hold is sized by the adopted geometry only. */
int eng_scan_begin(struct board *b, const struct pc_msg *m, char *err, size_t errlen)
{
	uint32_t spr = pc_geom_spr(&b->g);

	if (!b->have_geom)
		return pc_fail(err, errlen, -EINVAL, "scan before hello");
	eng_scan_reset(b);
	b->scan.scanning = 1;
	b->scan.pattern = pc_pattern_from_name(pc_jstr(m->obj, "pattern", "sequential"));
	/* damaged slots the expected state keeps outside this scan count
	 * against the same ceiling as the ones it reports */
	b->scan.sect_base = 0;
	b->scan.dmg_prev = 0;
	if (b->exp.slots) {
		uint64_t in, out;

		/* from the side table, not slot by slot: a partial scan costs its slots */
		eng_slots_count_damaged(b->exp.slots, b->scan.want, &in, &out);
		b->scan.dmg_prev = in * spr;
		b->scan.sect_base = (uint32_t)(out * spr);
	}
	/* a baseline holds every slot; a later scan what differs from exp */
	b->scan.obs = eng_slots_new(b->g.nslots, !b->exp.slots);
	b->scan.seen = calloc(BITMAP_WORDS(b->g.nslots), sizeof(*b->scan.seen));
	if (!b->scan.obs || !b->scan.seen) {
		eng_slots_free(b->scan.obs);
		b->scan.obs = NULL;
		free(b->scan.seen);
		b->scan.seen = NULL;
		snprintf(b->scan.err, sizeof(b->scan.err), "out of memory for a scan of %u slots; ", b->g.nslots);
		return pc_fail(err, errlen, -ENOMEM, "out of memory for a scan of %u slots", b->g.nslots);
	}
	return 0;
}

/* The scan, judged, becomes the expected state: the slots it looked at hold
 * what it found. 0, or -ENOMEM: the expected state is given up (the next
 * scan takes a new baseline). */
static int adopt(struct board *b)
{
	struct occ o;
	int dense = eng_slots_dense(b->scan.obs);

	if (!b->exp.slots || (!b->scan.want && dense)) {
		eng_slots_free(b->exp.slots);
		b->exp.slots = b->scan.obs;
		b->scan.obs = NULL;
		return 0;
	}
	if (!dense) {
		/* what the scan found otherwise than expected, and the slots it
		 * did not report: every other slot it looked at is as expected */
		if (eng_slots_move_side(b->scan.obs, b->exp.slots, b->scan.want))
			goto fail;
		for (size_t w = 0; w < BITMAP_WORDS(b->g.nslots); w++) {
			uint64_t miss = ~b->scan.seen[w] & (b->scan.want ? b->scan.want[w] : ~(uint64_t)0);

			for (; miss; miss &= miss - 1) {
				uint32_t s = (uint32_t)(w * 64 + (unsigned)__builtin_ctzll(miss));

				memset(&o, 0, sizeof(o));
				if (s < b->g.nslots && eng_slots_set(b->exp.slots, s, &o))
					goto fail;
			}
		}
		eng_slots_compact(b->exp.slots);
		return 0;
	}
	/* a dense scan of part of the region: slot by slot */
	for (uint32_t s = 0; s < b->g.nslots; s++) {
		if (!eng_scan_wanted(&b->scan, s))
			continue;
		if (!eng_slots_take(b->scan.obs, s, &o))	/* damage: its sectors move */
			eng_slots_get(b->scan.obs, s, &o);
		if (eng_slots_set(b->exp.slots, s, &o)) {
			free(o.sect);
			goto fail;
		}
	}
	eng_slots_compact(b->exp.slots);
	return 0;
fail:
	eng_slots_free(b->exp.slots);
	b->exp.slots = NULL;
	b->exp.baseline = 0;
	return -ENOMEM;
}

/* The scan is complete: judged (or adopted as the baseline), then the
 * expected state. */
int eng_scan_end(struct engine *e, struct board *b)
{
	uint32_t expect = b->scan.want ? b->scan.nwant : b->g.nslots;
	int ret;

	b->scan_ok = 0;
	if (!b->scan.obs || b->scan.nseen != expect || b->scan.err[0] || (!b->exp.baseline && b->scan.want)) {
		char why[320];
		snprintf(why, sizeof(why), "scan incomplete: %s%u of %u slots reported%s",
			 b->scan.err, b->scan.nseen, expect, !b->exp.baseline && b->scan.want ? " (a baseline needs a full scan)" : "");
		ret = eng_verdict_simple(e, b, b->cur_cycle, PC_OUT_INFRA_ERROR, why);
		eng_scan_reset(b);
		return ret;
	}
	if (b->scan.dmg_over) {
		ret = eng_scan_overflow(e, b);
		eng_scan_reset(b);
		return ret;
	}
	ret = eng_judge_scan(e, b);
	b->scan_ok = 1;
	keep_raws(b);
	if (adopt(b)) {
		b->scan_ok = 0;
		eng_note(e, b, "out of memory for the expected state of %u slots: a new baseline follows",
			 b->g.nslots);
	}
	eng_scan_reset(b);
	return ret;
}

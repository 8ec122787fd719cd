/*
 * engine_judge.c - judgement: every sector of a damaged slot classified
 * against the new record and the old occupant (regenerated from seed, seq and
 * LBA), every written record and every cold slot judged, a complete scan
 * (engine_scan.c hands it down) adopted as the baseline or judged; the
 * verdicts go down to engine_verdict.c.
 */
#include "harness/engine/engine_board.h"
#include "harness/engine/engine_carry.h"
#include "harness/engine/engine_judge.h"
#include "harness/engine/engine_observed.h"
#include "harness/engine/engine_state.h"
#include "harness/engine/engine_verdict.h"
#include "harness/engine/engine_wcycle.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"

static uint16_t wflags(const struct wcycle *w, uint64_t seq)
{
	uint16_t f = (uint16_t)(w->mode_run | (w->pattern == PC_PAT_RANDOM ? PC_FL_RANDOM : 0));

	/* journal: the last record of each group of flush_every+1 is its commit;
	 * the flags are checked loosely (see same_rec) so this is informative */
	(void)seq;
	return f;
}

/* Does a whole occupant match record (seq, cycle)? Flags are compared
 * without the journal commit bit, which only the agent knows per record. */
static int same_rec(uint64_t seq, uint32_t cycle, uint16_t flags, uint64_t s2, uint32_t c2, uint16_t f2)
{
	return seq == s2 && cycle == c2 && (flags & ~PC_FL_COMMIT) == (f2 & ~PC_FL_COMMIT);
}

static int occ_equal(const struct occ *a, const struct occ *b, uint32_t spr)
{
	if (a->state != b->state)
		return 0;
	if (a->state == OCC_WHOLE)
		return a->seq == b->seq && a->cycle == b->cycle && a->flags == b->flags;
	if (a->state == OCC_DAMAGED)
		return memcmp(a->sect, b->sect, spr * sizeof(*a->sect)) == 0;
	return 1;
}

static const struct raw *find_raw(const struct board *b, uint32_t slot, uint16_t idx)
{
	for (unsigned i = 0; i < b->scan.nraws; i++)
		if (b->scan.raws[i].slot == slot && b->scan.raws[i].idx == idx)
			return &b->scan.raws[i];
	return NULL;
}

static void regen(const struct board *b, uint64_t seq, uint32_t cycle, uint16_t flags, uint64_t lba,
		  uint16_t idx, uint8_t out[PC_SECTOR])
{
	struct pc_sector_hdr h = {
		.flags = flags, .seq = seq, .cycle = cycle, .idx = idx,
		.cnt = (uint16_t)pc_geom_spr(&b->g), .lba = lba,
	};

	memcpy(h.region, b->g.uuid, 16);
	pc_sector_build(out, &h, b->g.seed);
}

static unsigned popcount_diff(const uint8_t *a, const uint8_t *b)
{
	unsigned n = 0;

	for (unsigned i = 0; i < PC_SECTOR; i++)
		n += (unsigned)__builtin_popcount(a[i] ^ b[i]);
	return n;
}

/* raw == first[0..k) + second[k..512) for some k: returns 1 and the range of k. */
static int tear_point(const uint8_t *raw, const uint8_t *first, const uint8_t *second,
		      unsigned *kmin, unsigned *kmax)
{
	unsigned a = 0, s = 0;

	while (a < PC_SECTOR && raw[a] == first[a])
		a++;
	while (s < PC_SECTOR && raw[PC_SECTOR - 1 - s] == second[PC_SECTOR - 1 - s])
		s++;
	if (a == PC_SECTOR || s == PC_SECTOR || a + s < PC_SECTOR)
		return 0;
	*kmin = PC_SECTOR - s;
	*kmax = a;
	return 1;
}

enum sc { S_NEW, S_OLD, S_TORN, S_CORRUPT, S_MISDIR, S_STALE, S_UNCLASS, S_UNREAD };

struct sector_finding {
	enum sc c;
	unsigned kmin, kmax, bits;
	int order_old_new;
	const char *nearest;
	uint64_t found_seq;
	uint64_t belongs_lba;
	int err;
	int fill;
};

/* Sector i of the slot's previous occupant prev, as bytes, when they can
 * be known: regenerated from its header, or kept from an earlier scan. */
static int old_image(const struct board *b, uint32_t slot, uint16_t i, const struct occ *prev,
		     uint8_t oimg[PC_SECTOR])
{
	uint64_t lba = pc_slot_lba(&b->g, slot) + i;
	int have_old = 0;

	if (prev->state == OCC_WHOLE) {
		regen(b, prev->seq, prev->cycle, prev->flags, lba, i, oimg);
		have_old = 1;
	} else if (prev->state == OCC_DAMAGED && prev->sect[i].kind == PC_SK_VALID) {
		const struct sect *p = &prev->sect[i];
		regen(b, p->seq, p->cycle, p->flags, p->lba, p->hidx, oimg);
		have_old = 1;
	} else if (prev->state == OCC_DAMAGED && prev->sect[i].kind == PC_SK_HASH) {
		/* old damage whose bytes an earlier scan sent: they are the old content */
		for (unsigned k = 0; k < b->exp.nraws && !have_old; k++) {
			const struct raw *pr = &b->exp.raws[k];
			if (pr->slot == slot && pr->idx == i &&
			    pc_crc32c(0, pr->bytes, PC_SECTOR) == prev->sect[i].value) {
				memcpy(oimg, pr->bytes, PC_SECTOR);
				have_old = 1;
			}
		}
	}
	return have_old;
}

/* A sector that holds a valid record header: the new record, the old, one
 * landed at another address, an older one back, or some other record. */
static void classify_valid(const struct board *b, uint16_t i, uint64_t lba, const struct sect *o, uint64_t seq,
			   uint32_t cycle, uint16_t flags, const struct occ *prev, struct sector_finding *f)
{
	f->found_seq = o->seq;
	if (prev->state == OCC_DAMAGED && memcmp(&prev->sect[i], o, sizeof(*o)) == 0) {
		/* damage reported before, unchanged: it is the old occupant */
		f->c = S_OLD;
		return;
	}
	if (o->lba != lba || o->hidx != i) {
		f->c = S_MISDIR;
		f->belongs_lba = o->lba;
		return;
	}
	if (seq != 0 && same_rec(seq, cycle, flags, o->seq, o->cycle, o->flags)) {
		f->c = S_NEW;
		return;
	}
	if (prev->state == OCC_WHOLE && same_rec(prev->seq, prev->cycle, prev->flags, o->seq, o->cycle, o->flags)) {
		f->c = S_OLD;
		return;
	}
	if (prev->state == OCC_DAMAGED && memcmp(&prev->sect[i], o, sizeof(*o)) == 0) {
		f->c = S_OLD;
		return;
	}
	if (prev->state == OCC_WHOLE && o->seq < prev->seq) {
		f->c = S_STALE;
		return;
	}
	f->c = S_CORRUPT;
	f->nearest = "unexpected record";
}

/* A bad sector (a fill, or a hash with its bytes perhaps sent): unchanged
 * damage, a tear between new and old, or corruption nearest to one of them. */
static void classify_bad(const struct board *b, uint32_t slot, uint16_t i, uint64_t lba, const struct sect *o,
			 uint64_t seq, uint32_t cycle, uint16_t flags, const struct occ *prev,
			 struct sector_finding *f)
{
	uint8_t nimg[PC_SECTOR], oimg[PC_SECTOR];
	int have_new = seq != 0, have_old;
	const struct raw *r;

	if (prev->state == OCC_DAMAGED && memcmp(&prev->sect[i], o, sizeof(*o)) == 0) {
		f->c = S_OLD;
		return;
	}
	if (o->kind == PC_SK_FILL) {
		f->c = S_CORRUPT;
		f->fill = (int)o->value;
		f->nearest = "fill";
		return;
	}
	r = o->kind == PC_SK_HASH ? find_raw(b, slot, i) : NULL;
	if (!r) {
		/* new damage whose bytes never came (the scan's raw budget was
		 * spent): a tear and corruption look alike by hash, so no class is
		 * guessed */
		f->c = S_UNCLASS;
		return;
	}
	have_old = old_image(b, slot, i, prev, oimg);
	/* the new record's flags are known but for the journal commit bit, which only the agent
	 * knows per record (same_rec): a tear is looked for against both */
	for (int commit = 0; commit < 2 && have_new && have_old; commit++) {
		if (commit && ((flags & PC_FL_MODE_MASK) != PC_MODE_JOURNAL || (flags & PC_FL_COMMIT)))
			break;
		regen(b, seq, cycle, (uint16_t)(flags | (commit ? PC_FL_COMMIT : 0)), lba, i, nimg);
		if (tear_point(r->bytes, nimg, oimg, &f->kmin, &f->kmax)) {
			f->c = S_TORN;
			return;
		}
		if (tear_point(r->bytes, oimg, nimg, &f->kmin, &f->kmax)) {
			f->c = S_TORN;
			f->order_old_new = 1;
			return;
		}
	}
	if (have_new)
		regen(b, seq, cycle, flags, lba, i, nimg);
	f->c = S_CORRUPT;
	f->bits = PC_SECTOR * 8;
	f->nearest = "none";
	if (have_new) {
		f->bits = popcount_diff(r->bytes, nimg);
		f->nearest = "new";
	}
	if (have_old && popcount_diff(r->bytes, oimg) < f->bits) {
		f->bits = popcount_diff(r->bytes, oimg);
		f->nearest = "old";
	}
}

/* What one sector of a damaged slot is, against the new record (seq, cycle,
 * flags; seq 0 = none) and the previous occupant prev. */
static void classify_sector(const struct board *b, uint32_t slot, uint16_t i, const struct sect *o,
			    uint64_t seq, uint32_t cycle, uint16_t flags, const struct occ *prev,
			    struct sector_finding *f)
{
	uint64_t lba = pc_slot_lba(&b->g, slot) + i;

	memset(f, 0, sizeof(*f));
	f->fill = -1;
	switch (o->kind) {
	case PC_SK_ERR:
		f->c = S_UNREAD;
		f->err = (int)o->value;
		return;
	case PC_SK_VALID:
		classify_valid(b, i, lba, o, seq, cycle, flags, prev, f);
		return;
	default:
		classify_bad(b, slot, i, lba, o, seq, cycle, flags, prev, f);
		return;
	}
}

/* A written record whose slot holds one whole record: the new one, the
 * previous occupant, or another. */
static void judge_whole(struct judge *j, uint64_t seq, uint32_t slot, const struct occ *o, const struct occ *prev)
{
	struct wcycle *w = j->w;
	int acked = w->ack[seq - w->first], mode = w->mode_run;
	enum pc_class c;
	json_object *f;

	if (same_rec(seq, w->cycle, wflags(w, seq), o->seq, o->cycle, o->flags)) {
		j->counts[PC_CLS_INTACT]++;
		return;
	}
	if (occ_equal(o, prev, pc_geom_spr(&j->b->g))) {
		if (!acked) {
			j->counts[PC_CLS_NOT_WRITTEN]++;
			if (j->nw_n && j->nw_first + j->nw_n == seq) {
				j->nw_n++;
			} else {
				eng_flush_nw(j);
				j->nw_first = seq;
				j->nw_n = 1;
				j->nw_slot = slot;
			}
			return;
		}
		f = eng_finding(j, PC_CLS_LOST_ACKED, seq, slot, acked, mode);
		json_object_object_add(f, "found", json_object_new_string("previous occupant"));
		eng_describe_prev(f, prev);
		return;
	}
	c = (prev->state == OCC_WHOLE && o->seq < prev->seq) ? PC_CLS_STALE : acked ? PC_CLS_LOST_ACKED : PC_CLS_CORRUPT;
	f = eng_finding(j, c, seq, slot, acked, mode);
	json_object_object_add(f, "found", json_object_new_string("another whole record"));
	eng_add_int(f, "found_seq", (int64_t)o->seq);
	eng_add_int(f, "found_cycle", o->cycle);
	eng_describe_prev(f, prev);
}

/* The details of a damaged record's finding of class c: the first sector
 * found so (first_bad) and what it is (worst). */
static void damage_details(const struct board *b, json_object *f, enum pc_class c, uint32_t slot,
			   const struct sector_finding *sf, unsigned first_bad, const int *have)
{
	const struct sector_finding worst = sf[first_bad];
	uint32_t spr = pc_geom_spr(&b->g);

	switch (c) {
	case PC_CLS_TORN: {
		int boundary = -1;
		for (uint16_t i = 1; i < spr && boundary < 0; i++)
			if ((sf[i].c == S_NEW) != (sf[i - 1].c == S_NEW))
				boundary = i;
		eng_add_int(f, "boundary", boundary);
		break;
	}
	case PC_CLS_TORN_SECTOR:
		eng_add_int(f, "sector", first_bad);
		eng_add_int(f, "offset", worst.kmin);
		if (worst.kmax != worst.kmin)
			eng_add_int(f, "offset_max", worst.kmax);
		json_object_object_add(f, "order", json_object_new_string(worst.order_old_new ? "old-new" : "new-old"));
		break;
	case PC_CLS_CORRUPT:
		eng_add_int(f, "sector", first_bad);
		if (worst.fill >= 0)
			eng_add_int(f, "fill", worst.fill);
		else if (worst.bits)
			eng_add_int(f, "bits", worst.bits);
		json_object_object_add(f, "nearest", json_object_new_string(worst.nearest ? worst.nearest : "?"));
		break;
	case PC_CLS_MISDIRECTED:
		eng_add_int(f, "sector", first_bad);
		eng_add_int(f, "found_lba", (int64_t)(pc_slot_lba(&b->g, slot) + first_bad));
		eng_add_int(f, "belongs_lba", (int64_t)worst.belongs_lba);
		eng_add_int(f, "found_seq", (int64_t)worst.found_seq);
		break;
	case PC_CLS_STALE:
		eng_add_int(f, "sector", first_bad);
		eng_add_int(f, "found_seq", (int64_t)worst.found_seq);
		break;
	case PC_CLS_UNREADABLE:
		eng_add_int(f, "sector", first_bad);
		eng_add_int(f, "errno", worst.err);
		break;
	case PC_CLS_UNCLASSIFIED:
		eng_add_int(f, "sector", first_bad);
		eng_add_int(f, "sectors", have[S_UNCLASS]);
		json_object_object_add(f, "reason", json_object_new_string(
			"bytes not received: the scan's raw budget went to other damage, and by its hash "
			"alone a tear cannot be told from corruption"));
		break;
	default:
		break;
	}
}

/* Judge one record the cycle wrote. */
static void judge_record(struct judge *j, uint64_t seq)
{
	struct board *b = j->b;
	struct wcycle *w = j->w;
	uint32_t slot = pc_slot_of_seq(&b->g, w->pattern, seq), spr = pc_geom_spr(&b->g);
	struct occ ob, pv;
	const struct occ *o = &ob, *prev = &pv;
	int acked = w->ack[seq - w->first], mode = w->mode_run;
	uint16_t fl = wflags(w, seq);
	struct sector_finding sf[2048];
	enum pc_class c;
	json_object *f;
	unsigned nnew = 0, nold = 0, first_bad = 0;
	int have[S_UNREAD + 1] = { 0 };

	BIT_SET(j->hot, slot);
	eng_obs_get(b, slot, &ob);
	eng_exp_get(b, slot, &pv);
	if (o->state == OCC_WHOLE) {
		judge_whole(j, seq, slot, o, prev);
		return;
	}
	if (o->state != OCC_DAMAGED) {
		f = eng_finding(j, PC_CLS_UNREADABLE, seq, slot, acked, mode);
		json_object_object_add(f, "found", json_object_new_string("slot missing from the scan"));
		return;
	}
	for (uint16_t i = 0; i < spr; i++) {
		classify_sector(b, slot, i, &o->sect[i], seq, w->cycle, fl, prev, &sf[i]);
		have[sf[i].c]++;
		if (sf[i].c == S_NEW)
			nnew++;
		else if (sf[i].c == S_OLD)
			nold++;
	}
	/* the most serious thing found decides the class */
	static const enum sc order[] = { S_UNREAD, S_MISDIR, S_CORRUPT, S_STALE, S_UNCLASS, S_TORN };
	static const enum pc_class as[] = { PC_CLS_UNREADABLE, PC_CLS_MISDIRECTED, PC_CLS_CORRUPT, PC_CLS_STALE, PC_CLS_UNCLASSIFIED,
				       PC_CLS_TORN_SECTOR };
	c = PC_CLS_TORN;
	for (unsigned k = 0; k < PC_ARRAY_SIZE(order); k++) {
		if (!have[order[k]])
			continue;
		c = as[k];
		for (first_bad = 0; first_bad < spr && sf[first_bad].c != order[k]; first_bad++)
			;
		break;
	}
	if (c == PC_CLS_TORN && nnew == 0) {
		/* all old: the damage it had before is unchanged */
		if (!acked) {
			j->counts[PC_CLS_NOT_WRITTEN]++;
			eng_flush_nw(j);
			j->nw_first = seq;
			j->nw_n = 1;
			j->nw_slot = slot;
			return;
		}
		c = PC_CLS_LOST_ACKED;
	}
	if (c == PC_CLS_TORN && nold == 0) {
		j->counts[PC_CLS_INTACT]++;	/* whole after all (reported for another reason) */
		return;
	}
	f = eng_finding(j, c, seq, slot, acked, mode);
	{
		json_object *ns = json_object_new_array();
		for (uint16_t i = 0; i < spr; i++)
			if (sf[i].c == S_NEW)
				json_object_array_add(ns, json_object_new_int(i));
		json_object_object_add(f, "new_sectors", ns);
	}
	damage_details(b, f, c, slot, sf, first_bad, have);
	eng_describe_prev(f, prev);
}

/* A slot the cycle did not write must hold what it held. */
static void judge_cold(struct judge *j, uint32_t slot)
{
	struct board *b = j->b;
	struct occ ob, pv;
	const struct occ *o = &ob, *prev = &pv;
	uint32_t spr = pc_geom_spr(&b->g);
	json_object *f;
	enum pc_class c = PC_CLS_COLLATERAL;
	struct sector_finding sf;
	int sector = -1;

	if (!eng_obs_differs(b, slot))
		return;	/* reported as expected */
	eng_obs_get(b, slot, &ob);
	eng_exp_get(b, slot, &pv);
	if (occ_equal(o, prev, spr))
		return;
	if (o->state == OCC_WHOLE && prev->state == OCC_WHOLE && o->seq < prev->seq)
		c = PC_CLS_STALE;
	else if (o->state == OCC_DAMAGED) {
		for (uint16_t i = 0; i < spr; i++) {
			classify_sector(b, slot, i, &o->sect[i], 0, 0, 0, prev, &sf);
			if (sf.c == S_MISDIR) {
				c = PC_CLS_MISDIRECTED;
				sector = i;
				break;
			}
			if (sf.c == S_UNREAD && c == PC_CLS_COLLATERAL) {
				c = PC_CLS_UNREADABLE;
				sector = i;
			}
			if (sf.c != S_OLD && sector < 0)
				sector = i;
		}
	}
	f = eng_finding(j, c, prev->state == OCC_WHOLE ? prev->seq : 0, slot, 0, j->w ? j->w->mode_run : 0);
	json_object_object_add(f, "cold", json_object_new_boolean(1));
	eng_describe_prev(f, prev);
	if (prev->state == OCC_WHOLE)
		eng_add_int(f, "last_written_cycle", prev->cycle);
	if (o->state == OCC_WHOLE) {
		eng_add_int(f, "found_seq", (int64_t)o->seq);
		eng_add_int(f, "found_cycle", o->cycle);
	} else if (sector >= 0) {
		eng_add_int(f, "sector", sector);
		if (c == PC_CLS_MISDIRECTED) {
			eng_add_int(f, "found_lba", (int64_t)(pc_slot_lba(&b->g, slot) + (unsigned)sector));
			eng_add_int(f, "belongs_lba", (int64_t)o->sect[sector].lba);
			eng_add_int(f, "found_seq", (int64_t)o->sect[sector].seq);
		}
	}
}

/*
 * The cycle's write latency (SUBMIT to ACK, as the agent measured it): how
 * many, the median, the 99th percentile and the maximum to the microsecond,
 * and the log-bucket histogram (verdict.h) a report merges cycles with.
 */
static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static json_object *latency_json(const struct wcycle *w)
{
	uint64_t hist[PC_LAT_BUCKETS] = { 0 };
	json_object *o = json_object_new_object(), *h = json_object_new_array();
	uint32_t *v = malloc(w->nlat * sizeof(*v)), max = 0;

	for (uint32_t i = 0; i < w->nlat; i++) {
		hist[pc_lat_bucket(w->lat[i])]++;
		if (w->lat[i] > max)
			max = w->lat[i];
	}
	eng_add_int(o, "n", w->nlat);
	if (v) {
		/* exact percentiles of the cycle: the value at rank ceil(q*n) */
		memcpy(v, w->lat, w->nlat * sizeof(*v));
		qsort(v, w->nlat, sizeof(*v), cmp_u32);
		eng_add_int(o, "p50", v[(w->nlat + 1) / 2 - 1]);
		eng_add_int(o, "p99", v[(uint32_t)(((uint64_t)w->nlat * 99 + 99) / 100) - 1]);
		free(v);
	}
	eng_add_int(o, "max", max);
	for (unsigned k = 0; k < PC_LAT_BUCKETS; k++)
		if (hist[k]) {
			json_object *pair = json_object_new_array_ext(2);

			json_object_array_add(pair, json_object_new_int64(pc_lat_lo(k)));
			json_object_array_add(pair, json_object_new_int64((int64_t)hist[k]));
			json_object_array_add(h, pair);
		}
	json_object_object_add(o, "hist", h);
	return o;
}

/* What a judged verdict says of its policy and its scan (after the work's mode). */
static json_object *judged_facts(const struct board *b, const struct wcycle *w, uint32_t cold)
{
	json_object *v = json_object_new_object();
	json_object *p = json_object_new_object(), *sc = json_object_new_object();

	json_object_object_add(p, "torn_unacked", json_object_new_string(w->pol.torn ? "violation" : "allowed"));
	json_object_object_add(p, "torn_sector_unacked",
			       json_object_new_string(w->pol.torn_sector ? "violation" : "allowed"));
	if (w->pol_has_unclassified)
		json_object_object_add(p, pc_class_names[PC_CLS_UNCLASSIFIED],
				       json_object_new_string(w->pol.unclassified ? "violation" : "allowed"));
	json_object_object_add(v, "policy", p);
	json_object_object_add(sc, "full", json_object_new_boolean(b->scan.want == NULL));
	eng_add_int(sc, "slots", b->scan.want ? b->scan.nwant : b->g.nslots);
	eng_add_int(sc, "cold_checked", cold);
	json_object_object_add(v, "scan", sc);
	return v;
}

/* What a judged verdict says of the cycle's speed (after its findings). */
static json_object *speed_facts(const struct engine *e, const struct board *b, const struct wcycle *w)
{
	json_object *v = json_object_new_object(), *rate;
	uint32_t done;
	int64_t ms;

	/* speed: what the device confirmed (or, in mode none, accepted) per second */
	done = w->mode_run == PC_MODE_NONE || w->mode_run == PC_MODE_RELWR_OFF ? w->nsub : w->nack;
	ms = w->t_last > w->t_work ? w->t_last - w->t_work : 0;
	rate = json_object_new_object();
	eng_add_int(rate, "records", done);
	eng_add_int(rate, "ms", ms);
	if (ms > 0 && done > 0) {
		/* one decimal, written as such: the file says 1183.6, not 1183.5999999999999 */
		char txt[32];
		snprintf(txt, sizeof(txt), "%.1f", (double)done * 1000.0 / (double)ms);
		json_object_object_add(rate, "records_per_s", json_object_new_double_s(strtod(txt, NULL), txt));
	}
	if (e->format >= 2 && ms > 0 && done > 0) {
		char txt[32];
		snprintf(txt, sizeof(txt), "%.3f", (double)done * b->g.record_size * 1000.0 / (double)ms / 1048576.0);
		json_object_object_add(rate, "mib_per_s", json_object_new_double_s(strtod(txt, NULL), txt));
	}
	json_object_object_add(v, "rate", rate);
	if (e->format >= 2 && w->nlat)
		json_object_object_add(v, "latency_us", latency_json(w));
	return v;
}

static int judge_cycle(struct engine *e, struct board *b)
{
	struct wcycle *w = b->w;
	struct judge j = { .e = e, .b = b, .w = w, .findings = json_object_new_array() };
	uint32_t cold = 0;

	j.hot = calloc(BITMAP_WORDS(b->g.nslots), sizeof(*j.hot));
	if (!j.hot) {
		json_object_put(j.findings);
		return -ENOMEM;
	}
	/* what an earlier scan, or this boot's HELLO, found with no writes to pin it on */
	eng_take_carry(&j);
	eng_add_refused(&j, w);
	for (uint64_t s = w->first; s < w->first + w->n; s++)
		judge_record(&j, s);
	eng_flush_nw(&j);
	/* the cold slots looked at, in slot order: a partial scan's word by word (it costs its slots) */
	for (size_t wd = 0; wd < BITMAP_WORDS(b->g.nslots); wd++)
		for (uint64_t bits = ~j.hot[wd] & (b->scan.want ? b->scan.want[wd] : ~(uint64_t)0); bits; bits &= bits - 1) {
			uint32_t s = (uint32_t)(wd * 64 + (unsigned)__builtin_ctzll(bits));

			if (s >= b->g.nslots)
				break;
			judge_cold(&j, s);
			cold++;
		}
	free(j.hot);
	json_object_put(j.scratch);

	eng_audit_require(e, b, w);
	return eng_verdict_write(&j, w->cycle, w->infra[0] ? PC_OUT_INFRA_ERROR : PC_OUT_PASS, w,
				 judged_facts(b, w, cold), speed_facts(e, b, w), w->infra[0] ? w->infra : NULL);
}

/*
 * A complete scan that reported more damaged sectors than the engine holds
 * (ENGINE_MAX_DAMAGED_SECTORS). Record by record it cannot be judged, but
 * more damage than the scanned slots had before plus every sector the cycle
 * wrote is new damage for certain: a device-level finding, and the pending
 * cycle FAILs (a device that wipes its region must not escape as an
 * infrastructure error). Otherwise it is INFRA_ERROR. Either way the expected
 * state is given up: the next scan takes a new baseline (the caller drops
 * the scan).
 */
int eng_scan_overflow(struct engine *e, struct board *b)
{
	uint32_t spr = pc_geom_spr(&b->g);
	uint64_t allow = b->scan.dmg_prev + (b->w ? (uint64_t)b->w->n * spr : 0);
	char why[400];
	int ret;

	snprintf(why, sizeof(why), "the scan reports %" PRIu64 " sectors of damaged slots, more than the %u the "
		 "engine holds per board", b->scan.dmg_seen, e->dmg_ceiling);
	if (!b->exp.baseline) {
		char w2[480];
		snprintf(w2, sizeof(w2), "%s: no baseline can be taken", why);
		ret = eng_verdict_simple(e, b, b->cur_cycle, PC_OUT_INFRA_ERROR, w2);
	} else if (b->scan.dmg_seen > allow) {
		json_object *f = json_object_new_object();
		json_object_object_add(f, "class", json_object_new_string(pc_class_names[PC_CLS_COLLATERAL]));
		json_object_object_add(f, "what", json_object_new_string("damage_overflow"));
		eng_add_int(f, "damaged_sectors", (int64_t)b->scan.dmg_seen);
		eng_add_int(f, "previously_damaged", (int64_t)b->scan.dmg_prev);
		json_object_object_add(f, "detail", json_object_new_string(why));
		eng_note(e, b, "%s; at least %" PRIu64 " of them are new: a new baseline follows", why, b->scan.dmg_seen - allow);
		if (b->w) {
			json_object_object_add(f, "acked", json_object_new_boolean(0));
			json_object_object_add(f, "violation", json_object_new_boolean(1));
			ret = eng_verdict_unjudged(e, b, PC_OUT_FAIL, why, f);
		} else {
			eng_carry_device(b, f);
			ret = 0;
		}
	} else {
		ret = b->w ? eng_verdict_unjudged(e, b, PC_OUT_INFRA_ERROR, why, NULL) :
			     eng_verdict_simple(e, b, b->cur_cycle, PC_OUT_INFRA_ERROR, why);
	}
	eng_exp_drop(b);
	b->scan_ok = 0;	/* nothing may be written on top of what was not judged */
	return ret;
}

/* Nothing was written since the last scan: every slot is cold, and what
 * changed is carried to the next verdict. */
static int judge_quiet(struct engine *e, struct board *b)
{
	struct judge j = { .e = e, .b = b };
	size_t before;
	uint32_t damaged, unlisted;
	int ret;

	eng_carry_open(b->carry, &j);
	before = j.nlisted;
	unlisted = j.unlisted;
	for (uint32_t s = 0; s < b->g.nslots; s++)
		if (eng_scan_wanted(&b->scan, s))
			judge_cold(&j, s);
	json_object_put(j.scratch);
	for (size_t i = before; i < json_object_array_length(j.findings); i++)
		eng_add_int(json_object_array_get_idx(j.findings, i), "found_at_boot", b->cur_cycle);
	damaged = (uint32_t)(json_object_array_length(j.findings) - before) + (j.unlisted - unlisted);
	ret = eng_carry_close(&b->carry, &j);
	if (damaged)
		eng_note(e, b, "boot of cycle %u: %u slots changed with no writes pending; reported in the "
		     "next verdict", b->cur_cycle, damaged);
	return ret;
}

/*
 * A complete scan (engine_scan.c checked it and adopts it after): the
 * baseline taken, or the pending cycle judged, or, with nothing written
 * since the last scan, every slot judged cold and the findings carried to
 * the next verdict.
 */
int eng_judge_scan(struct engine *e, struct board *b)
{
	uint32_t damaged = 0;
	int ret = 0;

	if (!b->exp.baseline) {
		uint64_t maxseq = 0;
		for (uint32_t s = 0; s < b->g.nslots; s++) {
			struct occ o;

			eng_obs_get(b, s, &o);
			if (o.state == OCC_DAMAGED)
				damaged++;
			else if (o.seq > maxseq)
				maxseq = o.seq;
		}
		if (damaged)
			eng_note(e, b, "baseline scan: %u slots are not whole records already; they are "
			     "watched for further change", damaged);
		/* never reuse a seq the region may have seen: skip a lap past the newest */
		b->exp.next_seq = !maxseq ? 1 : maxseq <= MAX_SEQ - b->g.nslots - 1 ? maxseq + b->g.nslots + 1 : MAX_SEQ;
		b->exp.baseline = 1;
	} else if (b->w) {
		ret = judge_cycle(e, b);
		eng_wcycle_free(b->w);
		b->w = NULL;
	} else {
		ret = judge_quiet(e, b);
	}
	return ret;
}

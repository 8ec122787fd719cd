/*
 * engine.c - from recorded events to verdicts (DESIGN sections 3, 6).
 *
 * Per board it keeps the expected occupant of every slot. A cycle's work
 * names the seqs it will write; the scan at the next boot says what every
 * slot holds. Each written record is then intact, not_written, lost_acked,
 * torn, torn_sector, corrupt, misdirected, stale or unreadable; every other
 * slot must hold what it held before, or the change is a finding too.
 */
#include "engine.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/crc32c.h"
#include "../common/proto.h"
#include "../common/record.h"
#include "../common/util.h"

/* The most records one work may name: the protocol's limit (proto.c
 * MAX_RANGE_N) and records_per_cycle's (config.c). */
#define MAX_WORK_RECORDS	1048576u
/* Seqs a work may name: every one is then a JSON integer as it is. */
#define MAX_SEQ			((uint64_t)INT64_MAX)


/* A sector as seen in a slot that was not one whole record. */
struct sect {
	uint8_t kind;		/* enum pc_sect_kind */
	uint16_t hidx;
	uint16_t flags;
	uint32_t cycle;
	uint32_t value;		/* fill value, crc of raw bytes, or errno */
	uint64_t seq;
	uint64_t lba;
};

enum { OCC_UNKNOWN, OCC_WHOLE, OCC_DAMAGED };

struct occ {
	uint8_t state;
	uint16_t flags;
	uint16_t got;		/* OCC_DAMAGED while scanning: sectors reported so far */
	uint32_t cycle;
	uint64_t seq;
	struct sect *sect;	/* OCC_DAMAGED: spr entries, owned */
};

struct raw {
	uint32_t slot;
	uint16_t idx;
	uint8_t bytes[PC_SECTOR];
};

/* A write the device refused (an agent error with write_error). */
struct werr {
	uint32_t err;
	int mode;
	uint64_t lba, seq;
	char msg[256];
};

/* A region or one superblock copy, as HELLO describes it. */
struct sbrec {
	char uuid[37];
	uint64_t bytes, record_size, slots, seed, created;
	int has_created;	/* agents before it existed do not say */
};

struct wcycle {
	unsigned cycle;
	uint64_t first;
	uint32_t n;
	int mode, mode_run, pattern;
	uint8_t *sub, *ack;	/* one byte per record */
	uint32_t nsub, nack;
	int64_t t_work, t_last;
	json_object *cut;
	char infra[512];
	struct pc_policy pol;		/* what the work event's policy says (verdict.h) */
	int pol_has_unclassified;	/* it named "unclassified" (older ones do not) */
	struct werr werr[ENGINE_MAX_WRITE_ERRORS];
	uint32_t nwerr;		/* refused writes reported (the first ENGINE_MAX_WRITE_ERRORS kept) */
};

struct board {
	char name[64];
	/* the configured limits (engine_configure) */
	uint32_t lim_record_size;	/* 0: any */
	uint64_t lim_region_bytes;
	uint32_t lim_records;		/* work records per cycle, at most */
	/* a HELLO refused in this boot: the rest of the boot is ignored */
	int refused;
	unsigned refused_cycle;
	char refused_why[320];
	struct pc_geom g;
	int have_geom;
	/* the region as the engine knows it (every superblock field), and per
	 * superblock copy the difference from it last reported ("" none) */
	struct sbrec rec;
	int have_rec;
	char copy_sig[2][512];
	json_object *hello;
	json_object *last_device;	/* the last non-empty HELLO device (a reference) */
	struct occ *exp;
	int baseline;
	struct wcycle *w;
	/* the scan in progress, and what the last VERIFY asked for */
	uint8_t *want;		/* NULL: every slot */
	uint32_t nwant;
	int full;
	int scanning;
	int scan_pattern;
	struct occ *obs;
	uint32_t nseen;
	uint8_t *seen;
	uint32_t sect_base;	/* damaged sectors the expected state keeps besides this scan's */
	uint32_t sect_obs;	/* damaged sectors this scan reported and the engine holds */
	uint64_t dmg_seen;	/* damaged sectors this scan reported, held or not */
	uint64_t dmg_prev;	/* damaged sectors the expected state had in the scanned slots */
	int dmg_over;		/* the scan reported more than the engine holds */
	struct raw *raws;
	unsigned nraws;
	/* bytes of damaged sectors the expected state holds (a later tear over
	 * them is located against these) */
	struct raw *exp_raws;
	unsigned nexp_raws;
	char scan_err[256];
	/* bookkeeping */
	/* damage found by a scan that had no writes to judge: it goes into the
	 * next verdict, so nothing found is ever dropped */
	json_object *carry;
	uint32_t carry_counts[PC_NCLASSES];
	uint32_t carry_viol;
	uint32_t carry_unlisted;	/* carried findings counted but not listed */
	unsigned cur_cycle, last_cycle, last_work_cycle, last_verdict_cycle;
	uint64_t next_seq;
	unsigned verdicts;
	int scan_ok;		/* the last scan was complete and judged */
	uint8_t *verdicted;	/* one bit per cycle */
	size_t nverdicted;	/* bytes */
	struct board *next;
};

struct engine {
	char campaign[64];
	engine_verdict_fn vfn;
	engine_note_fn nfn;
	void *arg;
	struct board *boards;
	unsigned nboards;
	int configured;		/* only the configured boards exist */
	uint64_t slots;		/* slots of every board's adopted geometry, together */
	uint32_t dmg_ceiling;	/* damaged sectors held per board */
};

struct engine *engine_new(const char *campaign, engine_verdict_fn vfn, engine_note_fn nfn, void *arg)
{
	struct engine *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	pc_strlcpy(e->campaign, campaign, sizeof(e->campaign));
	e->dmg_ceiling = ENGINE_MAX_DAMAGED_SECTORS;
	e->vfn = vfn;
	e->nfn = nfn;
	e->arg = arg;
	return e;
}

static void occ_free_all(struct occ *o, uint32_t n)
{
	if (!o)
		return;
	for (uint32_t i = 0; i < n; i++)
		free(o[i].sect);
	free(o);
}

static void wcycle_free(struct wcycle *w)
{
	if (!w)
		return;
	free(w->sub);
	free(w->ack);
	json_object_put(w->cut);
	free(w);
}

static int wanted(const struct board *b, uint32_t slot)
{
	return !b->want || b->want[slot];
}

static void scan_reset(struct board *b)
{
	occ_free_all(b->obs, b->g.nslots);
	b->obs = NULL;
	free(b->seen);
	b->seen = NULL;
	free(b->raws);
	b->raws = NULL;
	b->nraws = 0;
	b->nseen = 0;
	b->scanning = 0;
	b->scan_err[0] = 0;
	b->sect_obs = 0;
	b->dmg_seen = 0;
	b->dmg_over = 0;
}

void engine_free(struct engine *e)
{
	if (!e)
		return;
	while (e->boards) {
		struct board *b = e->boards;
		e->boards = b->next;
		scan_reset(b);
		free(b->want);
		free(b->exp_raws);
		json_object_put(b->carry);
		occ_free_all(b->exp, b->g.nslots);
		wcycle_free(b->w);
		json_object_put(b->hello);
		json_object_put(b->last_device);
		free(b->verdicted);
		free(b);
	}
	free(e);
}

static struct board *board_find(struct engine *e, const char *name)
{
	for (struct board *b = e->boards; b; b = b->next)
		if (strcmp(b->name, name) == 0)
			return b;
	return NULL;
}

static struct board *board_add(struct engine *e, const char *name)
{
	struct board *b, **pp = &e->boards;

	while (*pp)
		pp = &(*pp)->next;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	pc_strlcpy(b->name, name, sizeof(b->name));
	b->next_seq = 1;
	b->lim_region_bytes = CFG_DEFAULT_MAX_REGION;
	b->lim_records = MAX_WORK_RECORDS;
	*pp = b;
	e->nboards++;
	return b;
}

/* The board an event names: a configured one, or (unconfigured) any of at
 * most CFG_MAX_BOARDS names. NULL with err set. */
static struct board *board_get(struct engine *e, const char *name, int *ret, char *err, size_t errlen)
{
	struct board *b = board_find(e, name);

	*ret = 0;
	if (b)
		return b;
	*ret = -EINVAL;
	if (e->configured) {
		snprintf(err, errlen, "board \"%.63s\" is not in the campaign's configuration", name);
		return NULL;
	}
	if (strlen(name) < 1 || strlen(name) > 63) {
		snprintf(err, errlen, "field \"board\": expected a board name of 1 to 63 characters");
		return NULL;
	}
	if (e->nboards >= CFG_MAX_BOARDS) {
		snprintf(err, errlen, "board \"%s\": more than %u boards", name, CFG_MAX_BOARDS);
		return NULL;
	}
	b = board_add(e, name);
	if (!b) {
		*ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
	}
	return b;
}

/* Read a board's limits from its resolved configuration. */
static int board_limits(json_object *bo, size_t i, const char **name, uint32_t *rs, uint64_t *maxb,
			uint32_t *maxrec, char *err, size_t errlen)
{
	json_object *dev;
	uint64_t v;
	char why[256];

	if (!json_object_is_type(bo, json_type_object)) {
		snprintf(err, errlen, "config.boards[%zu]: expected an object", i);
		return -EINVAL;
	}
	if (pc_json_str(bo, "name", name, why, sizeof(why)) || strlen(*name) < 1 || strlen(*name) > 63) {
		snprintf(err, errlen, "config.boards[%zu]: %s", i, why[0] ? why : "name: 1 to 63 characters");
		return -EINVAL;
	}
	why[0] = 0;
	if (!json_object_object_get_ex(bo, "device", &dev) ||
	    pc_json_u64(dev, "record_size", PC_MAX_RECORD_SIZE, &v, why, sizeof(why)) || v < PC_SECTOR ||
	    v % PC_SECTOR) {
		snprintf(err, errlen, "config.boards[%zu].device: %s", i,
			 why[0] ? why : "record_size: a multiple of 512, 512..1048576");
		return -EINVAL;
	}
	*rs = (uint32_t)v;
	*maxb = CFG_DEFAULT_MAX_REGION;
	if (json_object_object_get_ex(dev, "max_region_bytes", NULL) &&
	    (pc_json_u64(dev, "max_region_bytes", CFG_MAX_REGION_LIMIT, maxb, why, sizeof(why)) ||
	     *maxb < CFG_MIN_REGION_LIMIT)) {
		snprintf(err, errlen, "config.boards[%zu].device: %s", i,
			 why[0] ? why : "max_region_bytes: too small");
		return -EINVAL;
	}
	*maxrec = MAX_WORK_RECORDS;
	if (json_object_object_get_ex(bo, "records_per_cycle", NULL)) {
		if (pc_json_u64(bo, "records_per_cycle", MAX_WORK_RECORDS, &v, why, sizeof(why)) || v < 1) {
			snprintf(err, errlen, "config.boards[%zu]: %s", i, why[0] ? why : "records_per_cycle: at least 1");
			return -EINVAL;
		}
		*maxrec = (uint32_t)v;
	}
	return 0;
}

int engine_configure(struct engine *e, json_object *config, char *err, size_t errlen)
{
	json_object *arr;
	size_t n;

	if (e->configured || e->boards) {
		snprintf(err, errlen, "the engine is configured once, before any event");
		return -EINVAL;
	}
	if (!config)
		return 0;
	if (!json_object_is_type(config, json_type_object) || !json_object_object_get_ex(config, "boards", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		snprintf(err, errlen, "config: expected an object with a \"boards\" array");
		return -EINVAL;
	}
	n = json_object_array_length(arr);
	if (n < 1 || n > CFG_MAX_BOARDS) {
		snprintf(err, errlen, "config.boards: expected 1 to %u boards, got %zu", CFG_MAX_BOARDS, n);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name;
		uint32_t rs, maxrec;
		uint64_t maxb;
		struct board *b;

		if (board_limits(json_object_array_get_idx(arr, i), i, &name, &rs, &maxb, &maxrec, err, errlen))
			goto fail;
		if (board_find(e, name)) {
			snprintf(err, errlen, "config.boards[%zu]: board \"%s\" twice", i, name);
			goto fail;
		}
		b = board_add(e, name);
		if (!b) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		b->lim_record_size = rs;
		b->lim_region_bytes = maxb;
		b->lim_records = maxrec;
	}
	e->configured = 1;
	return 0;
fail:
	while (e->boards) {
		struct board *b = e->boards;
		e->boards = b->next;
		free(b);
	}
	e->nboards = 0;
	return -EINVAL;
}

void engine_set_damage_ceiling(struct engine *e, uint32_t sectors)
{
	e->dmg_ceiling = sectors < ENGINE_MAX_DAMAGED_SECTORS ? sectors : ENGINE_MAX_DAMAGED_SECTORS;
}

const char *engine_board_refused(struct engine *e, const char *name)
{
	struct board *b = board_find(e, name);

	return b && b->refused ? b->refused_why : NULL;
}

int engine_board_state(struct engine *e, const char *name, struct engine_board_state *st)
{
	memset(st, 0, sizeof(*st));
	for (struct board *b = e->boards; b; b = b->next) {
		if (strcmp(b->name, name))
			continue;
		st->last_cycle = b->last_cycle;
		st->last_work_cycle = b->last_work_cycle;
		st->last_verdict_cycle = b->last_verdict_cycle;
		st->pending = b->w != NULL;
		st->next_seq = b->next_seq;
		st->verdicts = b->verdicts;
		st->baseline = b->baseline;
		st->scan_ok = b->scan_ok;
		st->nslots = b->have_geom ? b->g.nslots : 0;
		if (b->w) {
			st->pending_first = b->w->first;
			st->pending_n = b->w->n;
			st->pending_pattern = b->w->pattern;
		}
		return 0;
	}
	st->next_seq = 1;
	return -ENOENT;
}

static void note(struct engine *e, struct board *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(struct engine *e, struct board *b, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!e->nfn)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	e->nfn(b->name, buf, e->arg);
}

/* ---- verdict output ---- */

static int already_judged(struct board *b, unsigned cycle)
{
	return cycle / 8 < b->nverdicted && (b->verdicted[cycle / 8] >> (cycle % 8) & 1);
}

/* cycle <= ENGINE_MAX_CYCLE (engine_feed checks it): at most 1.25 MB. */
static int mark_judged(struct board *b, unsigned cycle)
{
	if (cycle > ENGINE_MAX_CYCLE)
		return -EINVAL;
	if (cycle / 8 >= b->nverdicted) {
		size_t max = ENGINE_MAX_CYCLE / 8 + 1, n = b->nverdicted * 2 > cycle / 8 + 64 ?
			b->nverdicted * 2 : cycle / 8 + 64;
		uint8_t *p;

		if (n > max)
			n = max;
		p = realloc(b->verdicted, n);
		if (!p)
			return -ENOMEM;
		memset(p + b->nverdicted, 0, n - b->nverdicted);
		b->verdicted = p;
		b->nverdicted = n;
	}
	b->verdicted[cycle / 8] |= (uint8_t)(1u << (cycle % 8));
	b->verdicts++;
	if (cycle > b->last_verdict_cycle)
		b->last_verdict_cycle = cycle;
	return 0;
}

static const char *jstr(json_object *o, const char *key, const char *def)
{
	json_object *v;

	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return def;
}

static json_object *jcopy(json_object *o, const char *key)
{
	json_object *v, *out = NULL;

	if (o && json_object_object_get_ex(o, key, &v))
		json_object_deep_copy(v, &out, NULL);
	return out;
}

/* A stable identity for the device: what a supplier's part is known by. */
static json_object *device_json(struct board *b)
{
	json_object *dev = jcopy(b->hello, "device");
	char id[512];
	const char *cid, *serial;

	if ((!dev || !json_object_object_length(dev)) && b->last_device) {
		/* an agent that refused its region cannot say what it opened: the
		 * board's device is the one it last named */
		json_object_put(dev);
		dev = NULL;
		json_object_deep_copy(b->last_device, &dev, NULL);
	}
	if (!dev)
		dev = json_object_new_object();
	cid = jstr(dev, "cid", NULL);
	serial = jstr(dev, "serial", NULL);
	if (cid)
		snprintf(id, sizeof(id), "%s:%s:%s", jstr(dev, "type", "mmc"), jstr(dev, "name", "?"), cid);
	else if (serial)
		snprintf(id, sizeof(id), "%s:%s:%s", jstr(dev, "type", "disk"), jstr(dev, "model", "?"), serial);
	else {
		char u[37] = "unknown";
		if (b->have_geom)
			pc_uuid_format(b->g.uuid, u);
		snprintf(id, sizeof(id), "board:%s:region:%s", b->name, u);
	}
	json_object_object_add(dev, "id", json_object_new_string(id));
	return dev;
}

static json_object *verdict_base(struct engine *e, struct board *b, unsigned cycle, enum pc_outcome outcome)
{
	json_object *v = json_object_new_object();
	json_object *q = jcopy(b->hello, "queue");

	json_object_object_add(v, "campaign", json_object_new_string(e->campaign));
	json_object_object_add(v, "board", json_object_new_string(b->name));
	json_object_object_add(v, "cycle", json_object_new_int64(cycle));
	json_object_object_add(v, "verdict", json_object_new_string(pc_outcome_names[outcome]));
	json_object_object_add(v, "device", device_json(b));
	if (q)
		json_object_object_add(v, "queue", q);
	if (b->hello) {
		json_object_object_add(v, "kernel", json_object_new_string(jstr(b->hello, "kernel", "?")));
		json_object_object_add(v, "agent", json_object_new_string(jstr(b->hello, "agent", "?")));
	}
	return v;
}

static int emit(struct engine *e, struct board *b, unsigned cycle, json_object *v)
{
	int ret;

	if (already_judged(b, cycle)) {
		/* one verdict per cycle: the first one stands */
		json_object_put(v);
		return 0;
	}
	if (mark_judged(b, cycle)) {
		json_object_put(v);
		return -ENOMEM;
	}
	ret = e->vfn ? e->vfn(v, e->arg) : 0;
	json_object_put(v);
	return ret;
}

static json_object *counts_json(const uint32_t *counts);
static void add_int(json_object *o, const char *k, int64_t v);
static int verdict_carried(struct engine *e, struct board *b, unsigned cycle, enum pc_outcome outcome,
			   const char *reason);

/* A verdict with no records judged. Device-level findings waiting for a
 * verdict (the carry) go into it: they belong to the first verdict after
 * they were seen, whatever its outcome, and are never dropped. */
static int verdict_simple(struct engine *e, struct board *b, unsigned cycle, enum pc_outcome outcome,
			  const char *reason)
{
	json_object *v;

	if (already_judged(b, cycle))
		return 0;
	if (b->carry)
		return verdict_carried(e, b, cycle, outcome, reason);
	v = verdict_base(e, b, cycle, outcome);
	json_object_object_add(v, "reason", json_object_new_string(reason));
	return emit(e, b, cycle, v);
}

/* ---- judging ---- */

struct judge {
	struct engine *e;
	struct board *b;
	struct wcycle *w;
	uint32_t counts[PC_NCLASSES];
	uint32_t violations;
	json_object *findings;
	uint32_t nlisted;	/* findings in the array */
	uint32_t unlisted;	/* findings counted beyond ENGINE_MAX_FINDINGS */
	json_object *scratch;	/* the last unlisted finding (its details go nowhere) */
	uint8_t *hot;		/* slots written by the judged cycle */
	/* pending not_written range, to list unacked ones compactly */
	uint64_t nw_first;
	uint32_t nw_n, nw_slot;
};

/* The carried findings move into the verdict being built. */
static void take_carry(struct judge *j)
{
	struct board *b = j->b;

	if (!j->findings)
		j->findings = json_object_new_array();
	if (b->carry) {
		for (size_t i = 0; i < json_object_array_length(b->carry); i++)
			json_object_array_add(j->findings, json_object_get(json_object_array_get_idx(b->carry, i)));
		j->nlisted += (uint32_t)json_object_array_length(b->carry);
		for (int i = 0; i < PC_NCLASSES; i++)
			j->counts[i] += b->carry_counts[i];
		j->violations += b->carry_viol;
		json_object_put(b->carry);
		b->carry = NULL;
		memset(b->carry_counts, 0, sizeof(b->carry_counts));
		b->carry_viol = 0;
	}
	j->unlisted += b->carry_unlisted;
	b->carry_unlisted = 0;
}

/* verdict_simple() with carried findings: FAIL when any is a violation. */
static int verdict_carried(struct engine *e, struct board *b, unsigned cycle, enum pc_outcome outcome,
			   const char *reason)
{
	struct judge j = { .e = e, .b = b };
	json_object *v;

	take_carry(&j);
	v = verdict_base(e, b, cycle, j.violations ? PC_OUT_FAIL : outcome);
	json_object_object_add(v, "counts", counts_json(j.counts));
	add_int(v, "violations", j.violations);
	json_object_object_add(v, "findings", j.findings);
	if (j.unlisted)
		add_int(v, "findings_unlisted", j.unlisted);
	json_object_object_add(v, "reason", json_object_new_string(reason));
	return emit(e, b, cycle, v);
}

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
	for (unsigned i = 0; i < b->nraws; i++)
		if (b->raws[i].slot == slot && b->raws[i].idx == idx)
			return &b->raws[i];
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

/* What one sector of a damaged slot is, against the new record (seq, cycle,
 * flags; seq 0 = none) and the previous occupant prev. */
static void classify_sector(const struct board *b, uint32_t slot, uint16_t i, const struct sect *o,
			    uint64_t seq, uint32_t cycle, uint16_t flags, const struct occ *prev,
			    struct sector_finding *f)
{
	uint64_t lba = pc_slot_lba(&b->g, slot) + i;
	uint8_t nimg[PC_SECTOR], oimg[PC_SECTOR];
	int have_new = seq != 0, have_old = 0;
	const struct raw *r;

	memset(f, 0, sizeof(*f));
	f->fill = -1;
	if (prev->state == OCC_WHOLE) {
		regen(b, prev->seq, prev->cycle, prev->flags, lba, i, oimg);
		have_old = 1;
	} else if (prev->state == OCC_DAMAGED && prev->sect[i].kind == PC_SK_VALID) {
		const struct sect *p = &prev->sect[i];
		regen(b, p->seq, p->cycle, p->flags, p->lba, p->hidx, oimg);
		have_old = 1;
	} else if (prev->state == OCC_DAMAGED && prev->sect[i].kind == PC_SK_HASH) {
		/* old damage whose bytes an earlier scan sent: they are the old content */
		for (unsigned k = 0; k < b->nexp_raws && !have_old; k++) {
			const struct raw *pr = &b->exp_raws[k];
			if (pr->slot == slot && pr->idx == i &&
			    pc_crc32c(0, pr->bytes, PC_SECTOR) == prev->sect[i].value) {
				memcpy(oimg, pr->bytes, PC_SECTOR);
				have_old = 1;
			}
		}
	}
	switch (o->kind) {
	case PC_SK_ERR:
		f->c = S_UNREAD;
		f->err = (int)o->value;
		return;
	case PC_SK_VALID:
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
		if (have_new && same_rec(seq, cycle, flags, o->seq, o->cycle, o->flags)) {
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
		return;
	default:
		break;
	}
	/* a bad sector: unchanged damage, a tear between new and old, or corruption */
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
	if (have_new)
		regen(b, seq, cycle, flags, lba, i, nimg);
	if (have_new && have_old) {
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

/* The policy: what the cycle's configuration says, or DESIGN section 6's
 * defaults for a finding with no cycle (events that carry none). */
static int is_violation(const struct wcycle *w, enum pc_class c, int acked, int mode)
{
	struct pc_policy d;

	if (!w)
		pc_policy_default(&d, mode);
	return pc_is_violation(c, acked, w ? &w->pol : &d);
}

/* List a finding, or past ENGINE_MAX_FINDINGS only count it: a device that
 * damages a whole region must not make one verdict line gigabytes long. */
static void list_finding(struct judge *j, json_object *f)
{
	if (j->nlisted < ENGINE_MAX_FINDINGS) {
		json_object_array_add(j->findings, f);
		j->nlisted++;
		return;
	}
	json_object_put(j->scratch);
	j->scratch = f;
	j->unlisted++;
}

static void flush_nw(struct judge *j)
{
	json_object *f;

	if (!j->nw_n)
		return;
	f = json_object_new_object();
	json_object_object_add(f, "class", json_object_new_string("not_written"));
	json_object_object_add(f, "seq", json_object_new_int64((int64_t)j->nw_first));
	json_object_object_add(f, "n", json_object_new_int64(j->nw_n));
	json_object_object_add(f, "slot", json_object_new_int64(j->nw_slot));
	json_object_object_add(f, "lba", json_object_new_int64((int64_t)pc_slot_lba(&j->b->g, j->nw_slot)));
	json_object_object_add(f, "acked", json_object_new_boolean(0));
	json_object_object_add(f, "violation", json_object_new_boolean(0));
	list_finding(j, f);
	j->nw_n = 0;
}

static json_object *finding(struct judge *j, enum pc_class c, uint64_t seq, uint32_t slot, int acked, int mode)
{
	json_object *f = json_object_new_object();
	int viol = is_violation(j->w, c, acked, mode);

	flush_nw(j);
	j->counts[c]++;
	if (viol)
		j->violations++;
	json_object_object_add(f, "class", json_object_new_string(pc_class_names[c]));
	json_object_object_add(f, "seq", json_object_new_int64((int64_t)seq));
	json_object_object_add(f, "slot", json_object_new_int64(slot));
	json_object_object_add(f, "lba", json_object_new_int64((int64_t)pc_slot_lba(&j->b->g, slot)));
	json_object_object_add(f, "acked", json_object_new_boolean(acked));
	json_object_object_add(f, "violation", json_object_new_boolean(viol));
	list_finding(j, f);
	return f;
}

static void add_int(json_object *o, const char *k, int64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v));
}

static void describe_prev(json_object *f, const struct occ *prev)
{
	if (prev->state == OCC_WHOLE) {
		add_int(f, "previous_seq", (int64_t)prev->seq);
		add_int(f, "previous_cycle", prev->cycle);
	} else {
		json_object_object_add(f, "previous", json_object_new_string("damaged"));
	}
}

/* Judge one record the cycle wrote. */
static void judge_record(struct judge *j, uint64_t seq)
{
	struct board *b = j->b;
	struct wcycle *w = j->w;
	uint32_t slot = pc_slot_of_seq(&b->g, w->pattern, seq), spr = pc_geom_spr(&b->g);
	const struct occ *o = &b->obs[slot], *prev = &b->exp[slot];
	int acked = w->ack[seq - w->first], mode = w->mode_run;
	uint16_t fl = wflags(w, seq);
	struct sector_finding sf[2048], worst = { 0 };
	enum pc_class c;
	json_object *f;
	unsigned nnew = 0, nold = 0, first_bad = 0;
	int have[S_UNREAD + 1] = { 0 };

	j->hot[slot] = 1;
	if (o->state == OCC_WHOLE) {
		if (same_rec(seq, w->cycle, fl, o->seq, o->cycle, o->flags)) {
			j->counts[PC_CLS_INTACT]++;
			return;
		}
		if (occ_equal(o, prev, spr)) {
			if (!acked) {
				j->counts[PC_CLS_NOT_WRITTEN]++;
				if (j->nw_n && j->nw_first + j->nw_n == seq) {
					j->nw_n++;
				} else {
					flush_nw(j);
					j->nw_first = seq;
					j->nw_n = 1;
					j->nw_slot = slot;
				}
				return;
			}
			f = finding(j, PC_CLS_LOST_ACKED, seq, slot, acked, mode);
			json_object_object_add(f, "found", json_object_new_string("previous occupant"));
			describe_prev(f, prev);
			return;
		}
		c = (prev->state == OCC_WHOLE && o->seq < prev->seq) ? PC_CLS_STALE : acked ? PC_CLS_LOST_ACKED : PC_CLS_CORRUPT;
		f = finding(j, c, seq, slot, acked, mode);
		json_object_object_add(f, "found", json_object_new_string("another whole record"));
		add_int(f, "found_seq", (int64_t)o->seq);
		add_int(f, "found_cycle", o->cycle);
		describe_prev(f, prev);
		return;
	}
	if (o->state != OCC_DAMAGED) {
		f = finding(j, PC_CLS_UNREADABLE, seq, slot, acked, mode);
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
		worst = sf[first_bad];
		break;
	}
	if (c == PC_CLS_TORN && nnew == 0) {
		/* all old: the damage it had before is unchanged */
		if (!acked) {
			j->counts[PC_CLS_NOT_WRITTEN]++;
			flush_nw(j);
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
	f = finding(j, c, seq, slot, acked, mode);
	{
		json_object *ns = json_object_new_array();
		for (uint16_t i = 0; i < spr; i++)
			if (sf[i].c == S_NEW)
				json_object_array_add(ns, json_object_new_int(i));
		json_object_object_add(f, "new_sectors", ns);
	}
	switch (c) {
	case PC_CLS_TORN: {
		int boundary = -1;
		for (uint16_t i = 1; i < spr && boundary < 0; i++)
			if ((sf[i].c == S_NEW) != (sf[i - 1].c == S_NEW))
				boundary = i;
		add_int(f, "boundary", boundary);
		break;
	}
	case PC_CLS_TORN_SECTOR:
		add_int(f, "sector", first_bad);
		add_int(f, "offset", worst.kmin);
		if (worst.kmax != worst.kmin)
			add_int(f, "offset_max", worst.kmax);
		json_object_object_add(f, "order", json_object_new_string(worst.order_old_new ? "old-new" : "new-old"));
		break;
	case PC_CLS_CORRUPT:
		add_int(f, "sector", first_bad);
		if (worst.fill >= 0)
			add_int(f, "fill", worst.fill);
		else if (worst.bits)
			add_int(f, "bits", worst.bits);
		json_object_object_add(f, "nearest", json_object_new_string(worst.nearest ? worst.nearest : "?"));
		break;
	case PC_CLS_MISDIRECTED:
		add_int(f, "sector", first_bad);
		add_int(f, "found_lba", (int64_t)(pc_slot_lba(&b->g, slot) + first_bad));
		add_int(f, "belongs_lba", (int64_t)worst.belongs_lba);
		add_int(f, "found_seq", (int64_t)worst.found_seq);
		break;
	case PC_CLS_STALE:
		add_int(f, "sector", first_bad);
		add_int(f, "found_seq", (int64_t)worst.found_seq);
		break;
	case PC_CLS_UNREADABLE:
		add_int(f, "sector", first_bad);
		add_int(f, "errno", worst.err);
		break;
	case PC_CLS_UNCLASSIFIED:
		add_int(f, "sector", first_bad);
		add_int(f, "sectors", have[S_UNCLASS]);
		json_object_object_add(f, "reason", json_object_new_string(
			"bytes not received: the scan's raw budget went to other damage, and by its hash "
			"alone a tear cannot be told from corruption"));
		break;
	default:
		break;
	}
	describe_prev(f, prev);
}

/* A slot the cycle did not write must hold what it held. */
static void judge_cold(struct judge *j, uint32_t slot)
{
	struct board *b = j->b;
	const struct occ *o = &b->obs[slot], *prev = &b->exp[slot];
	uint32_t spr = pc_geom_spr(&b->g);
	json_object *f;
	enum pc_class c = PC_CLS_COLLATERAL;
	struct sector_finding sf;
	int sector = -1;

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
	f = finding(j, c, prev->state == OCC_WHOLE ? prev->seq : 0, slot, 0, j->w ? j->w->mode_run : 0);
	json_object_object_add(f, "cold", json_object_new_boolean(1));
	describe_prev(f, prev);
	if (prev->state == OCC_WHOLE)
		add_int(f, "last_written_cycle", prev->cycle);
	if (o->state == OCC_WHOLE) {
		add_int(f, "found_seq", (int64_t)o->seq);
		add_int(f, "found_cycle", o->cycle);
	} else if (sector >= 0) {
		add_int(f, "sector", sector);
		if (c == PC_CLS_MISDIRECTED) {
			add_int(f, "found_lba", (int64_t)(pc_slot_lba(&b->g, slot) + (unsigned)sector));
			add_int(f, "belongs_lba", (int64_t)o->sect[sector].lba);
			add_int(f, "found_seq", (int64_t)o->sect[sector].seq);
		}
	}
}

static json_object *counts_json(const uint32_t *counts)
{
	json_object *o = json_object_new_object();

	for (int i = 0; i < PC_NCLASSES; i++)
		if (i != PC_CLS_UNCLASSIFIED || counts[i])	/* as verdicts before it existed read */
			add_int(o, pc_class_names[i], counts[i]);
	return o;
}

/*
 * The writes the device refused during the cycle (DESIGN section 6: a
 * device-level finding belongs to the verdict of the cycle that saw it):
 * violations whatever the scan finds. Shaped like the other device-level
 * findings: class collateral, "what" says what happened.
 */
static void add_refused(struct judge *j, const struct wcycle *w)
{
	uint32_t kept = w->nwerr < ENGINE_MAX_WRITE_ERRORS ? w->nwerr : ENGINE_MAX_WRITE_ERRORS;

	for (uint32_t i = 0; i < kept; i++) {
		const struct werr *we = &w->werr[i];
		json_object *f = json_object_new_object();

		json_object_object_add(f, "class", json_object_new_string("collateral"));
		json_object_object_add(f, "what", json_object_new_string("write_refused"));
		add_int(f, "seq", we->seq > INT64_MAX ? INT64_MAX : (int64_t)we->seq);
		if (we->lba > INT64_MAX)
			json_object_object_add(f, "lba", json_object_new_uint64(we->lba));
		else
			add_int(f, "lba", (int64_t)we->lba);
		add_int(f, "errno", we->err);
		json_object_object_add(f, "mode", json_object_new_string(pc_mode_name(we->mode)));
		json_object_object_add(f, "detail", json_object_new_string(we->msg));
		json_object_object_add(f, "acked", json_object_new_boolean(0));
		json_object_object_add(f, "violation", json_object_new_boolean(1));
		j->counts[PC_CLS_COLLATERAL]++;
		j->violations++;
		list_finding(j, f);
	}
	if (w->nwerr > kept) {
		json_object *f = json_object_new_object();
		char txt[96];

		snprintf(txt, sizeof(txt), "%" PRIu32 " more refused writes, not listed one by one", w->nwerr - kept);
		json_object_object_add(f, "class", json_object_new_string("collateral"));
		json_object_object_add(f, "what", json_object_new_string("write_refused"));
		add_int(f, "n", w->nwerr - kept);
		json_object_object_add(f, "detail", json_object_new_string(txt));
		json_object_object_add(f, "acked", json_object_new_boolean(0));
		json_object_object_add(f, "violation", json_object_new_boolean(1));
		j->counts[PC_CLS_COLLATERAL] += w->nwerr - kept;
		j->violations += w->nwerr - kept;
		list_finding(j, f);
	}
}

/* The parts of a verdict about the cycle's work, whether or not it was judged. */
static void verdict_work(json_object *v, const struct wcycle *w)
{
	json_object *rec = json_object_new_object();

	json_object_object_add(v, "mode", json_object_new_string(pc_mode_name(w->mode)));
	json_object_object_add(v, "mode_run", json_object_new_string(pc_mode_name(w->mode_run)));
	json_object_object_add(v, "pattern", json_object_new_string(pc_pattern_name(w->pattern)));
	add_int(rec, "first", (int64_t)w->first);
	add_int(rec, "planned", w->n);
	add_int(rec, "submitted", w->nsub);
	add_int(rec, "acked", w->nack);
	json_object_object_add(v, "records", rec);
}

/*
 * The pending cycle's verdict when its writes cannot be judged (no scan will
 * come, or none can tell them apart any more): outcome with reason -- unless
 * the device refused a write in that cycle, which needs no scan to be a
 * violation: then FAIL, with the refused writes and the reason the records
 * were not judged.
 */
static int verdict_unjudged(struct engine *e, struct board *b, enum pc_outcome outcome, const char *reason,
			    json_object *extra)
{
	struct wcycle *w = b->w;
	struct judge j = { .e = e, .b = b, .w = w };
	json_object *v;
	char why[640];

	if (!w->nwerr && !extra && !b->carry)
		return verdict_simple(e, b, w->cycle, outcome, reason);
	if (already_judged(b, w->cycle)) {
		json_object_put(extra);
		return 0;
	}
	take_carry(&j);
	if (extra) {
		/* a device-level finding the scan proved (scan_overflow()) */
		j.counts[PC_CLS_COLLATERAL]++;
		j.violations++;
		list_finding(&j, extra);
	}
	add_refused(&j, w);
	json_object_put(j.scratch);
	v = verdict_base(e, b, w->cycle, j.violations ? PC_OUT_FAIL : outcome);
	verdict_work(v, w);
	json_object_object_add(v, "counts", counts_json(j.counts));
	add_int(v, "violations", j.violations);
	json_object_object_add(v, "findings", j.findings);
	if (j.unlisted)
		add_int(v, "findings_unlisted", j.unlisted);
	if (w->cut)
		json_object_object_add(v, "cut", json_object_get(w->cut));
	snprintf(why, sizeof(why), "the records were not judged: %s", reason);
	json_object_object_add(v, "reason", json_object_new_string(why));
	return emit(e, b, w->cycle, v);
}

static int judge_cycle(struct engine *e, struct board *b)
{
	struct wcycle *w = b->w;
	struct judge j = { .e = e, .b = b, .w = w, .findings = json_object_new_array() };
	json_object *v, *rate;
	int64_t ms;
	uint32_t done, cold = 0;
	int ret;

	j.hot = calloc(b->g.nslots, 1);
	if (!j.hot) {
		json_object_put(j.findings);
		return -ENOMEM;
	}
	/* what an earlier scan, or this boot's HELLO, found with no writes to pin it on */
	take_carry(&j);
	add_refused(&j, w);
	for (uint64_t s = w->first; s < w->first + w->n; s++)
		judge_record(&j, s);
	flush_nw(&j);
	for (uint32_t s = 0; s < b->g.nslots; s++)
		if (!j.hot[s] && wanted(b, s)) {
			judge_cold(&j, s);
			cold++;
		}
	free(j.hot);
	json_object_put(j.scratch);

	v = verdict_base(e, b, w->cycle,
			 j.violations ? PC_OUT_FAIL : w->infra[0] ? PC_OUT_INFRA_ERROR : PC_OUT_PASS);
	json_object_object_add(v, "mode", json_object_new_string(pc_mode_name(w->mode)));
	json_object_object_add(v, "mode_run", json_object_new_string(pc_mode_name(w->mode_run)));
	json_object_object_add(v, "pattern", json_object_new_string(pc_pattern_name(w->pattern)));
	{
		json_object *p = json_object_new_object(), *sc = json_object_new_object();
		json_object_object_add(p, "torn_unacked", json_object_new_string(w->pol.torn ? "violation" : "allowed"));
		json_object_object_add(p, "torn_sector_unacked",
				       json_object_new_string(w->pol.torn_sector ? "violation" : "allowed"));
		if (w->pol_has_unclassified)
			json_object_object_add(p, "unclassified",
					       json_object_new_string(w->pol.unclassified ? "violation" : "allowed"));
		json_object_object_add(v, "policy", p);
		json_object_object_add(sc, "full", json_object_new_boolean(b->want == NULL));
		add_int(sc, "slots", b->want ? b->nwant : b->g.nslots);
		add_int(sc, "cold_checked", cold);
		json_object_object_add(v, "scan", sc);
	}
	{
		json_object *rec = json_object_new_object();
		add_int(rec, "first", (int64_t)w->first);
		add_int(rec, "planned", w->n);
		add_int(rec, "submitted", w->nsub);
		add_int(rec, "acked", w->nack);
		json_object_object_add(v, "records", rec);
	}
	json_object_object_add(v, "counts", counts_json(j.counts));
	add_int(v, "violations", j.violations);
	json_object_object_add(v, "findings", j.findings);
	if (j.unlisted)
		add_int(v, "findings_unlisted", j.unlisted);
	if (w->cut)
		json_object_object_add(v, "cut", json_object_get(w->cut));
	/* speed: what the device confirmed (or, in mode none, accepted) per second */
	done = w->mode_run == PC_MODE_NONE || w->mode_run == PC_MODE_RELWR_OFF ? w->nsub : w->nack;
	ms = w->t_last > w->t_work ? w->t_last - w->t_work : 0;
	rate = json_object_new_object();
	add_int(rate, "records", done);
	add_int(rate, "ms", ms);
	if (ms > 0 && done > 0) {
		/* one decimal, written as such: the file says 1183.6, not 1183.5999999999999 */
		char txt[32];
		snprintf(txt, sizeof(txt), "%.1f", (double)done * 1000.0 / (double)ms);
		json_object_object_add(rate, "records_per_s", json_object_new_double_s(strtod(txt, NULL), txt));
	}
	json_object_object_add(v, "rate", rate);
	if (w->infra[0])
		json_object_object_add(v, "reason", json_object_new_string(w->infra));
	ret = emit(e, b, w->cycle, v);
	return ret;
}

/* The scanned slots' damaged-sector bytes become the expected state's. */
static void keep_raws(struct board *b)
{
	unsigned k = 0;

	for (unsigned i = 0; i < b->nexp_raws; i++) {
		const struct raw *r = &b->exp_raws[i];
		const struct occ *o = b->obs ? &b->obs[r->slot] : NULL;

		/* not looked at: still expected; looked at and unchanged (sent by
		 * hash because the host named it in a KNOWN line): still its bytes */
		if (!wanted(b, r->slot) ||
		    (o && o->state == OCC_DAMAGED && o->sect && r->idx < o->got &&
		     o->sect[r->idx].kind == PC_SK_HASH &&
		     o->sect[r->idx].value == pc_crc32c(0, r->bytes, PC_SECTOR)))
			b->exp_raws[k++] = *r;
	}
	b->nexp_raws = k;
	if (!b->nraws)
		return;
	{
		struct raw *n = realloc(b->exp_raws, (b->nexp_raws + b->nraws) * sizeof(*n));
		if (!n)
			return;	/* then a later tear over them is reported as corrupt */
		memcpy(n + b->nexp_raws, b->raws, b->nraws * sizeof(*n));
		b->exp_raws = n;
		b->nexp_raws += b->nraws;
	}
	if (b->nexp_raws > ENGINE_MAX_KEPT_RAWS) {
		/* the oldest go: a tear over them is then reported as corrupt */
		unsigned drop = b->nexp_raws - ENGINE_MAX_KEPT_RAWS;
		memmove(b->exp_raws, b->exp_raws + drop, ENGINE_MAX_KEPT_RAWS * sizeof(*b->exp_raws));
		b->nexp_raws = ENGINE_MAX_KEPT_RAWS;
	}
}

static void carry_device(struct board *b, json_object *f);

/*
 * A complete scan that reported more damaged sectors than the engine holds
 * (ENGINE_MAX_DAMAGED_SECTORS). Record by record it cannot be judged, but
 * more damage than the scanned slots had before plus every sector the cycle
 * wrote is new damage for certain: a device-level finding, and the pending
 * cycle FAILs (a device that wipes its region must not escape as an
 * infrastructure error). Otherwise it is INFRA_ERROR. Either way the expected
 * state is given up: the next scan takes a new baseline.
 */
static int scan_overflow(struct engine *e, struct board *b)
{
	uint32_t spr = pc_geom_spr(&b->g);
	uint64_t allow = b->dmg_prev + (b->w ? (uint64_t)b->w->n * spr : 0);
	char why[400];
	int ret;

	snprintf(why, sizeof(why), "the scan reports %" PRIu64 " sectors of damaged slots, more than the %u the "
		 "engine holds per board", b->dmg_seen, e->dmg_ceiling);
	if (!b->baseline) {
		char w2[480];
		snprintf(w2, sizeof(w2), "%s: no baseline can be taken", why);
		ret = verdict_simple(e, b, b->cur_cycle, PC_OUT_INFRA_ERROR, w2);
	} else if (b->dmg_seen > allow) {
		json_object *f = json_object_new_object();
		json_object_object_add(f, "class", json_object_new_string("collateral"));
		json_object_object_add(f, "what", json_object_new_string("damage_overflow"));
		add_int(f, "damaged_sectors", (int64_t)b->dmg_seen);
		add_int(f, "previously_damaged", (int64_t)b->dmg_prev);
		json_object_object_add(f, "detail", json_object_new_string(why));
		note(e, b, "%s; at least %" PRIu64 " of them are new: a new baseline follows", why, b->dmg_seen - allow);
		if (b->w) {
			json_object_object_add(f, "acked", json_object_new_boolean(0));
			json_object_object_add(f, "violation", json_object_new_boolean(1));
			ret = verdict_unjudged(e, b, PC_OUT_FAIL, why, f);
		} else {
			carry_device(b, f);
			ret = 0;
		}
	} else {
		ret = b->w ? verdict_unjudged(e, b, PC_OUT_INFRA_ERROR, why, NULL) :
			     verdict_simple(e, b, b->cur_cycle, PC_OUT_INFRA_ERROR, why);
	}
	wcycle_free(b->w);
	b->w = NULL;
	occ_free_all(b->exp, b->g.nslots);
	b->exp = NULL;
	free(b->exp_raws);
	b->exp_raws = NULL;
	b->nexp_raws = 0;
	b->baseline = 0;
	b->scan_ok = 0;	/* nothing may be written on top of what was not judged */
	scan_reset(b);
	return ret;
}

/* The scan is complete: adopt it as the baseline or judge the pending cycle. */
static int scan_done(struct engine *e, struct board *b)
{
	uint32_t damaged = 0;
	int ret = 0;

	uint32_t expect = b->want ? b->nwant : b->g.nslots;

	b->scan_ok = 0;
	if (!b->obs || b->nseen != expect || b->scan_err[0] || (!b->baseline && b->want)) {
		char why[320];
		snprintf(why, sizeof(why), "scan incomplete: %s%u of %u slots reported%s",
			 b->scan_err, b->nseen, expect, !b->baseline && b->want ? " (a baseline needs a full scan)" : "");
		ret = verdict_simple(e, b, b->cur_cycle, PC_OUT_INFRA_ERROR, why);
		scan_reset(b);
		return ret;
	}
	if (b->dmg_over)
		return scan_overflow(e, b);
	if (!b->baseline) {
		uint64_t maxseq = 0;
		for (uint32_t s = 0; s < b->g.nslots; s++) {
			if (b->obs[s].state == OCC_DAMAGED)
				damaged++;
			else if (b->obs[s].seq > maxseq)
				maxseq = b->obs[s].seq;
		}
		if (damaged)
			note(e, b, "baseline scan: %u slots are not whole records already; they are "
			     "watched for further change", damaged);
		/* never reuse a seq the region may have seen: skip a lap past the newest */
		b->next_seq = !maxseq ? 1 : maxseq <= MAX_SEQ - b->g.nslots - 1 ? maxseq + b->g.nslots + 1 : MAX_SEQ;
		b->baseline = 1;
	} else if (b->w) {
		ret = judge_cycle(e, b);
		wcycle_free(b->w);
		b->w = NULL;
	} else {
		/* nothing was written since the last scan: every slot is cold */
		struct judge j = { .e = e, .b = b, .findings = b->carry ? b->carry : json_object_new_array() };
		size_t before = json_object_array_length(j.findings);

		j.nlisted = (uint32_t)before;
		j.unlisted = b->carry_unlisted;
		for (uint32_t s = 0; s < b->g.nslots; s++)
			if (wanted(b, s))
				judge_cold(&j, s);
		json_object_put(j.scratch);
		for (size_t i = before; i < json_object_array_length(j.findings); i++)
			add_int(json_object_array_get_idx(j.findings, i), "found_at_boot", b->cur_cycle);
		damaged = (uint32_t)(json_object_array_length(j.findings) - before) + (j.unlisted - b->carry_unlisted);
		for (int i = 0; i < PC_NCLASSES; i++)
			b->carry_counts[i] += j.counts[i];
		b->carry_viol += j.violations;
		b->carry_unlisted = j.unlisted;
		b->carry = j.findings;
		if (damaged)
			note(e, b, "boot of cycle %u: %u slots changed with no writes pending; reported in the "
			     "next verdict", b->cur_cycle, damaged);
	}
	b->scan_ok = 1;
	keep_raws(b);
	if (b->want && b->exp) {
		/* a partial scan: what was not looked at stays as expected */
		for (uint32_t s = 0; s < b->g.nslots; s++) {
			if (!b->want[s])
				continue;
			free(b->exp[s].sect);
			b->exp[s] = b->obs[s];
			b->obs[s].sect = NULL;
		}
	} else {
		occ_free_all(b->exp, b->g.nslots);
		b->exp = b->obs;
		b->obs = NULL;
	}
	scan_reset(b);
	return ret;
}

/* ---- event intake ---- */

/* A device-level finding, reported in the next verdict. */
static void carry_device(struct board *b, json_object *f)
{
	if (!b->carry)
		b->carry = json_object_new_array();
	json_object_object_add(f, "acked", json_object_new_boolean(0));
	json_object_object_add(f, "violation", json_object_new_boolean(1));
	json_object_object_add(f, "found_at_boot", json_object_new_int64(b->cur_cycle));
	if (json_object_array_length(b->carry) < ENGINE_MAX_FINDINGS) {
		json_object_array_add(b->carry, f);
	} else {
		json_object_put(f);
		b->carry_unlisted++;
	}
	b->carry_counts[PC_CLS_COLLATERAL]++;
	b->carry_viol++;
}

/*
 * What HELLO says about the device itself, against what it said before: a
 * superblock copy that went bad, or an identity (CID, serial, size) that
 * changed, is damage outside the records -- reported once, as collateral.
 */
static void check_device(struct engine *e, struct board *b, json_object *hello)
{
	static const char *const idkeys[] = { "cid", "serial", "size", "manfid", "name" };
	json_object *sb, *old_sb = NULL, *dev, *old_dev = NULL, *v, *ov;
	const char *region_err = jstr(hello, "region_error", NULL);

	if (!b->hello)
		return;
	json_object_object_get_ex(b->hello, "superblock", &old_sb);
	if (json_object_object_get_ex(hello, "superblock", &sb) && old_sb) {
		for (int c = 0; c < 2; c++) {
			const char *k = c ? "b" : "a", *now = jstr(sb, k, "ok"), *was = jstr(old_sb, k, "ok");
			if (!strcmp(was, "ok") && strcmp(now, "ok")) {
				json_object *f = json_object_new_object();
				json_object_object_add(f, "class", json_object_new_string("collateral"));
				json_object_object_add(f, "what", json_object_new_string("superblock"));
				json_object_object_add(f, "copy", json_object_new_string(c ? "B" : "A"));
				json_object_object_add(f, "detail", json_object_new_string(now));
				carry_device(b, f);
				note(e, b, "superblock copy %s is gone: %s", c ? "B" : "A", now);
			}
		}
	}
	if (region_err && !jstr(b->hello, "region_error", NULL))
		note(e, b, "the agent refuses the region (%s): no scan, no writes", region_err);
	if (json_object_object_get_ex(hello, "device", &dev) && json_object_object_get_ex(b->hello, "device", &old_dev)) {
		for (size_t i = 0; i < PC_ARRAY_SIZE(idkeys); i++) {
			if (!json_object_object_get_ex(old_dev, idkeys[i], &ov) ||
			    !json_object_object_get_ex(dev, idkeys[i], &v) || json_object_equal(v, ov))
				continue;
			json_object *f = json_object_new_object();
			json_object_object_add(f, "class", json_object_new_string("collateral"));
			json_object_object_add(f, "what", json_object_new_string("identity"));
			json_object_object_add(f, "field", json_object_new_string(idkeys[i]));
			json_object_object_add(f, "before", json_object_get(ov));
			json_object_object_add(f, "after", json_object_get(v));
			carry_device(b, f);
			note(e, b, "device %s changed from %s to %s", idkeys[i], json_object_get_string(ov),
			     json_object_get_string(v));
		}
	}
}

static void remember_device(struct board *b)
{
	json_object *d;

	if (json_object_object_get_ex(b->hello, "device", &d) && json_object_is_type(d, json_type_object) &&
	    json_object_object_length(d)) {
		json_object_put(b->last_device);
		b->last_device = json_object_get(d);
	}
}

/* ---- the region's continuity ---- */

/* 0, or -EINVAL with why when o is not a region description (hostile
 * input: every field checked; the one parse of HELLO's region and of each
 * superblock copy). */
static int sbrec_parse(json_object *o, struct sbrec *r, char *why, size_t whylen)
{
	const char *u;

	memset(r, 0, sizeof(*r));
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(why, whylen, "expected an object");
		return -EINVAL;
	}
	if (pc_json_str(o, "uuid", &u, why, whylen) ||
	    pc_json_u64(o, "bytes", UINT64_MAX, &r->bytes, why, whylen) ||
	    pc_json_u64(o, "record_size", PC_MAX_RECORD_SIZE, &r->record_size, why, whylen) ||
	    pc_json_u64(o, "slots", UINT32_MAX, &r->slots, why, whylen) ||
	    pc_json_u64(o, "seed", UINT64_MAX, &r->seed, why, whylen))
		return -EINVAL;
	if (strlen(u) != 36) {
		snprintf(why, whylen, "field \"uuid\": expected 36 characters");
		return -EINVAL;
	}
	memcpy(r->uuid, u, 37);
	if (json_object_object_get_ex(o, "created", NULL)) {
		if (pc_json_u64(o, "created", UINT64_MAX, &r->created, why, whylen))
			return -EINVAL;
		r->has_created = 1;
	}
	return 0;
}

/* {"field": {"before": .., "after": ..}, ...} for every field in which b
 * differs from a (a creation time only when both say one), or NULL. */
static json_object *sbrec_changes(const struct sbrec *a, const struct sbrec *b)
{
	static const char *const names[] = { "bytes", "record_size", "slots", "seed", "created" };
	const uint64_t va[] = { a->bytes, a->record_size, a->slots, a->seed, a->created };
	const uint64_t vb[] = { b->bytes, b->record_size, b->slots, b->seed, b->created };
	json_object *ch = NULL, *pair;

	if (strcmp(a->uuid, b->uuid)) {
		ch = json_object_new_object();
		pair = json_object_new_object();
		json_object_object_add(pair, "before", json_object_new_string(a->uuid));
		json_object_object_add(pair, "after", json_object_new_string(b->uuid));
		json_object_object_add(ch, "uuid", pair);
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(names); i++) {
		if (va[i] == vb[i] || (i == 4 && !(a->has_created && b->has_created)))
			continue;
		if (!ch)
			ch = json_object_new_object();
		pair = json_object_new_object();
		json_object_object_add(pair, "before", json_object_new_uint64(va[i]));
		json_object_object_add(pair, "after", json_object_new_uint64(vb[i]));
		json_object_object_add(ch, names[i], pair);
	}
	return ch;
}

/* A device-level finding about the region (DESIGN section 6), for the next verdict. */
static void region_finding(struct engine *e, struct board *b, const char *what, const char *copy,
			   json_object *changes, const char *detail)
{
	json_object *f = json_object_new_object();

	json_object_object_add(f, "class", json_object_new_string("collateral"));
	json_object_object_add(f, "subject", json_object_new_string("device"));
	json_object_object_add(f, "what", json_object_new_string(what));
	if (copy)
		json_object_object_add(f, "copy", json_object_new_string(copy));
	if (changes)
		json_object_object_add(f, "changes", json_object_get(changes));
	json_object_object_add(f, "detail", json_object_new_string(detail));
	carry_device(b, f);
	note(e, b, "%s%s%s: %s", what, copy ? " of copy " : "", copy ? copy : "",
	     changes ? json_object_to_json_string_ext(changes, JSON_C_TO_STRING_PLAIN) : detail);
}

/*
 * What this HELLO says about the region against the engine's record of it:
 * both superblock copies rewritten alike (a new UUID: the region was
 * replaced, by a re-flash, a new prepare, another campaign, a lost medium;
 * the same UUID: its metadata rewritten), or one copy that differs from the
 * record in any field, creation time included. Each is reported once, when
 * it appears; a campaign that goes on does so against the new region only
 * after the finding. now: the region the agent uses (NULL: none).
 */
static void check_region(struct engine *e, struct board *b, json_object *hello, const struct sbrec *now)
{
	json_object *sb, *copies = NULL, *c, *ch[2] = { NULL, NULL };
	struct sbrec cr[2];
	int have[2] = { 0, 0 };
	char sig[2][512] = { "", "" };

	if (!b->have_rec)
		return;
	if (json_object_object_get_ex(hello, "superblock", &sb) && json_object_is_type(sb, json_type_object))
		json_object_object_get_ex(sb, "copies", &copies);
	if (copies && json_object_is_type(copies, json_type_object)) {
		for (int k = 0; k < 2; k++) {
			if (!json_object_object_get_ex(copies, k ? "b" : "a", &c))
				continue;
			char why[160];

			if (sbrec_parse(c, &cr[k], why, sizeof(why))) {
				snprintf(sig[k], sizeof(sig[k]), "unreadable");
				continue;
			}
			have[k] = 1;
			ch[k] = sbrec_changes(&b->rec, &cr[k]);
			if (ch[k])
				pc_strlcpy(sig[k], json_object_to_json_string_ext(ch[k], JSON_C_TO_STRING_PLAIN),
					   sizeof(sig[k]));
		}
	} else if (now) {
		/* an agent that does not show its copies: the region it uses */
		cr[0] = cr[1] = *now;
		have[0] = have[1] = 1;
		ch[0] = sbrec_changes(&b->rec, now);
		ch[1] = ch[0] ? json_object_get(ch[0]) : NULL;
	}
	if (have[0] && have[1] && ch[0] && ch[1] && json_object_equal(ch[0], ch[1])) {
		/* both copies changed alike: the region is another one now */
		int replaced = json_object_object_get_ex(ch[0], "uuid", NULL);
		region_finding(e, b, replaced ? "region_replaced" : "region_changed", NULL, ch[0], replaced ?
			       "both superblock copies name another region: the one this campaign judged is gone, "
			       "and nothing written before can be checked against it" :
			       "both superblock copies were rewritten with other values");
		b->rec = cr[0];
		memset(b->copy_sig, 0, sizeof(b->copy_sig));
	} else {
		for (int k = 0; k < 2; k++) {
			if (!strcmp(sig[k], b->copy_sig[k]))
				continue;	/* as the last HELLO said: reported then */
			if (sig[k][0])
				region_finding(e, b, "superblock_mismatch", k ? "B" : "A", ch[k],
					       ch[k] ? "a valid superblock copy differs from the region's record" :
					       "a superblock copy's fields cannot be read");
			memcpy(b->copy_sig[k], sig[k], sizeof(sig[k]));
		}
	}
	json_object_put(ch[0]);
	json_object_put(ch[1]);
}

/*
 * A HELLO the engine will not adopt: the board's state stays as it was, the
 * rest of this boot is ignored, and the boot's cycle gets INFRA_ERROR (from
 * the campaign's infra event, or at the next boot). Always -EINVAL.
 */
static int refuse(struct board *b, unsigned cycle, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int refuse(struct board *b, unsigned cycle, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b->refused_why, sizeof(b->refused_why), fmt, ap);
	va_end(ap);
	b->refused = 1;
	b->refused_cycle = cycle;
	scan_reset(b);
	snprintf(err, errlen, "%s", b->refused_why);
	return -EINVAL;
}

static int set_geom(struct engine *e, struct board *b, const struct pc_msg *m, unsigned cycle,
		    char *err, size_t errlen)
{
	json_object *region;
	struct pc_geom g;
	struct sbrec now;
	char why[256] = "";

	if (!json_object_object_get_ex(m->obj, "region", &region)) {
		/* both superblocks gone: keep the geometry we know, if we know one */
		if (!b->have_geom)
			return refuse(b, cycle, err, errlen, "the board's region has no superblock and no geometry "
				      "is known: %.200s", jstr(m->obj, "region_error", "?"));
		check_device(e, b, m->obj);
		check_region(e, b, m->obj, NULL);
		if (b->w && b->carry) {
			/* the agent will not scan a region it cannot trust: the pending
			 * writes are never checked, and the finding is why */
			char reason[400];
			snprintf(reason, sizeof(reason), "the agent has no usable region (%.300s)",
				 jstr(m->obj, "region_error", "?"));
			verdict_unjudged(e, b, PC_OUT_INFRA_ERROR, reason, NULL);
			wcycle_free(b->w);
			b->w = NULL;
		}
		json_object_put(b->hello);
		b->hello = json_object_get(m->obj);
		remember_device(b);
		return 0;
	}
	/* every number is checked against the configured board before the
	 * engine holds anything sized by it */
	if (sbrec_parse(region, &now, why, sizeof(why)))
		return refuse(b, cycle, err, errlen, "hello refused: %s", why);
	if (b->lim_record_size && now.record_size != b->lim_record_size)
		return refuse(b, cycle, err, errlen, "hello refused: the region holds %" PRIu64 "-byte records but "
			      "the configuration says device.record_size %" PRIu32, now.record_size, b->lim_record_size);
	if (now.bytes > b->lim_region_bytes)
		return refuse(b, cycle, err, errlen, "hello refused: the region claims %" PRIu64 " bytes (%" PRIu64
			      " slots), more than device.max_region_bytes %" PRIu64 " allows this board",
			      now.bytes, now.slots, b->lim_region_bytes);
	if (pc_geom_init(&g, now.bytes, (uint32_t)now.record_size, now.seed, why, sizeof(why)))
		return refuse(b, cycle, err, errlen, "hello refused: %s", why);
	if (g.nslots != now.slots || pc_uuid_parse(now.uuid, g.uuid))
		return refuse(b, cycle, err, errlen, "hello refused: region geometry is inconsistent");
	/* without a configuration nothing bounds the boards' sum: one budget */
	if (!e->configured &&
	    e->slots - (b->have_geom ? b->g.nslots : 0) + g.nslots > ENGINE_UNCONFIGURED_SLOTS)
		return refuse(b, cycle, err, errlen, "hello refused: %" PRIu32 " slots, and without the campaign's "
			      "configuration the engine holds at most %" PRIu32 " for all boards together (%" PRIu64
			      " held)", g.nslots, ENGINE_UNCONFIGURED_SLOTS, e->slots - (b->have_geom ? b->g.nslots : 0));
	check_device(e, b, m->obj);
	check_region(e, b, m->obj, &now);
	if (b->have_geom && (memcmp(g.uuid, b->g.uuid, 16) || g.nslots != b->g.nslots ||
			     g.record_size != b->g.record_size || g.seed != b->g.seed)) {
		note(e, b, "the region changed (uuid %s): starting a new baseline", now.uuid);
		if (b->w)
			verdict_unjudged(e, b, PC_OUT_INFRA_ERROR, "the region was replaced before its writes were checked", NULL);
		wcycle_free(b->w);
		b->w = NULL;
		scan_reset(b);
		occ_free_all(b->exp, b->g.nslots);
		b->exp = NULL;
		/* what was sized or located by the old geometry goes with it */
		free(b->want);
		b->want = NULL;
		b->nwant = 0;
		free(b->exp_raws);
		b->exp_raws = NULL;
		b->nexp_raws = 0;
		b->baseline = 0;
		b->have_geom = 0;
		e->slots -= b->g.nslots;
	}
	if (!b->have_geom) {
		/* the region judged from here on, and the record its superblock
		 * copies are held against */
		b->g = g;
		b->have_geom = 1;
		e->slots += g.nslots;
		b->rec = now;
		b->have_rec = 1;
		memset(b->copy_sig, 0, sizeof(b->copy_sig));
	}
	json_object_put(b->hello);
	b->hello = json_object_get(m->obj);
	remember_device(b);
	return 0;
}

uint32_t engine_board_known(struct engine *e, const char *name, struct pc_known *out, uint32_t max)
{
	struct board *b = board_find(e, name);
	uint32_t n = 0, spr;

	if (!b || !b->have_geom || !b->exp)
		return 0;
	spr = pc_geom_spr(&b->g);
	for (uint32_t s = 0; s < b->g.nslots && n < max; s++) {
		const struct occ *o = &b->exp[s];
		if (o->state != OCC_DAMAGED || !o->sect)
			continue;
		for (uint32_t i = 0; i < spr && i <= UINT16_MAX && n < max; i++)
			if (o->sect[i].kind == PC_SK_HASH)
				out[n++] = (struct pc_known){ s, (uint16_t)i, o->sect[i].value };
	}
	return n;
}

/* What the engine holds for a damaged slot, as the agent reports it. */
static uint64_t occ_digest(const struct occ *o, uint32_t spr)
{
	struct pc_sect_report r;
	uint64_t h = PC_SLOT_DIGEST_INIT;

	memset(&r, 0, sizeof(r));
	for (uint32_t i = 0; i < spr; i++) {
		const struct sect *x = &o->sect[i];

		r.idx = (uint16_t)i;
		r.kind = (enum pc_sect_kind)x->kind;
		r.seq = x->seq;
		r.cycle = x->cycle;
		r.flags = x->flags;
		r.lba = x->lba;
		r.hidx = x->hidx;
		r.value = x->value;
		h = pc_slot_digest_add(h, &r);
	}
	return h;
}

uint32_t engine_board_known_slots(struct engine *e, const char *name, struct pc_known_slot *out, uint32_t max)
{
	struct board *b = board_find(e, name);
	uint32_t n = 0, spr;

	if (!b || !b->have_geom || !b->exp)
		return 0;
	spr = pc_geom_spr(&b->g);
	for (uint32_t s = 0; s < b->g.nslots && n < max; s++)
		if (b->exp[s].state == OCC_DAMAGED && b->exp[s].sect)
			out[n++] = (struct pc_known_slot){ s, occ_digest(&b->exp[s], spr) };
	return n;
}

json_object *engine_board_region(struct engine *e, const char *name)
{
	for (struct board *b = e->boards; b; b = b->next) {
		json_object *o;
		char u[37];

		if (strcmp(b->name, name) || !b->have_geom)
			continue;
		o = json_object_new_object();
		pc_uuid_format(b->g.uuid, u);
		json_object_object_add(o, "uuid", json_object_new_string(u));
		json_object_object_add(o, "bytes", json_object_new_uint64(b->g.region_bytes));
		json_object_object_add(o, "record_size", json_object_new_int64(b->g.record_size));
		json_object_object_add(o, "slots", json_object_new_int64(b->g.nslots));
		json_object_object_add(o, "seed", json_object_new_uint64(b->g.seed));
		return o;
	}
	return NULL;
}

static int take_runs(struct board *b, const struct pc_msg *m, char *err, size_t errlen)
{
	if (!b->obs)
		return 0;	/* the scan already failed (scan_err says why) */
	for (uint32_t k = 0; k < m->u.runs.nruns; k++) {
		const struct pc_run *r = &m->u.runs.runs[k];

		if ((uint64_t)r->pos + r->n > b->g.nslots) {
			snprintf(err, errlen, "runs: positions %u+%u past the %u slots", r->pos, r->n, b->g.nslots);
			return -EINVAL;
		}
		for (uint32_t i = 0; i < r->n; i++) {
			uint32_t slot = pc_slot_of_pos(&b->g, b->scan_pattern, r->pos + i);
			struct occ *o = &b->obs[slot];

			if (b->seen[slot]) {
				snprintf(err, errlen, "runs: slot %u reported twice", slot);
				return -EINVAL;
			}
			b->seen[slot] = 1;
			b->nseen++;
			o->state = OCC_WHOLE;
			o->seq = r->seq ? r->seq + i : 0;
			o->cycle = r->cycle;
			o->flags = r->flags;
		}
	}
	return 0;
}

/* A slot that is not one whole record; a large record's report may come in
 * several messages, each continuing in sector order where the last stopped. */
static int take_slot(struct board *b, const struct pc_msg *m, uint32_t dmg_ceiling, char *err, size_t errlen)
{
	const struct pc_slot_report *s = &m->u.slot;
	uint32_t spr = pc_geom_spr(&b->g);
	struct occ *o;

	if (!b->obs)
		return 0;	/* the scan already failed (scan_err says why) */
	if (s->slot >= b->g.nslots || s->nsect == 0) {
		snprintf(err, errlen, "slot %u does not fit the region (%u slots)", s->slot, b->g.nslots);
		return -EINVAL;
	}
	o = &b->obs[s->slot];
	if (b->seen[s->slot] && (o->state != OCC_DAMAGED || o->got == spr)) {
		snprintf(err, errlen, "slot %u reported twice", s->slot);
		return -EINVAL;
	}
	if (!b->seen[s->slot]) {
		b->seen[s->slot] = 1;
		o->state = OCC_DAMAGED;
		o->got = 0;
		b->dmg_seen += spr;
		/* the damage the engine holds per board has a ceiling: past it
		 * the scan is only counted (scan_overflow() judges what it can) */
		if ((uint64_t)b->sect_base + b->sect_obs + spr > dmg_ceiling)
			b->dmg_over = 1;
		if (!b->dmg_over) {
			o->sect = calloc(spr, sizeof(*o->sect));
			if (!o->sect) {
				snprintf(err, errlen, "out of memory for slot %u", s->slot);
				return -EINVAL;
			}
			b->sect_obs += spr;
		}
	}
	for (uint32_t k = 0; k < s->nsect; k++) {
		const struct pc_sect_report *r = &s->sect[k];
		uint32_t i = o->got;
		struct sect *d;

		if (i >= spr || r->idx != i) {
			snprintf(err, errlen, "slot %u: sector %u where sector %u was expected (%u per record)",
				 s->slot, r->idx, i, spr);
			return -EINVAL;
		}
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
		case PC_SK_RAW: {
			struct raw *nr;

			if (b->nraws >= PC_PROTO_MAX_RAW) {
				snprintf(err, errlen, "slot %u: more than %d raw sectors in one scan", s->slot,
					 PC_PROTO_MAX_RAW);
				return -EINVAL;
			}
			nr = realloc(b->raws, (b->nraws + 1) * sizeof(*nr));
			if (!nr) {
				snprintf(err, errlen, "out of memory for a raw sector");
				return -EINVAL;
			}
			b->raws = nr;
			nr[b->nraws].slot = s->slot;
			nr[b->nraws].idx = (uint16_t)i;
			memcpy(nr[b->nraws].bytes, r->raw, PC_SECTOR);
			b->nraws++;
			d->value = pc_crc32c(0, r->raw, PC_SECTOR);
			/* the same bytes seen again compare equal however they travelled */
			d->kind = PC_SK_HASH;
			break;
		}
		default:
			d->value = r->value;
		}
	}
	if (o->got == spr)
		b->nseen++;
	return 0;
}

/* Damaged slots the agent found exactly as the expected state holds them
 * (it had their digests from KNOWN): the expected damage is what was seen. */
static int take_same(struct board *b, const struct pc_msg *m, uint32_t dmg_ceiling, char *err, size_t errlen)
{
	uint32_t spr = pc_geom_spr(&b->g);

	if (!b->obs)
		return 0;	/* the scan already failed (scan_err says why) */
	for (uint32_t k = 0; k < m->u.same.n; k++) {
		uint32_t slot = m->u.same.slots[k];
		const struct occ *x;
		struct occ *o;

		if (slot >= b->g.nslots || b->seen[slot]) {
			snprintf(err, errlen, "same: slot %u %s", slot, slot >= b->g.nslots ? "past the region" :
				 "reported twice");
			return -EINVAL;
		}
		x = b->exp ? &b->exp[slot] : NULL;
		if (!x || x->state != OCC_DAMAGED || !x->sect) {
			snprintf(err, errlen, "same: slot %u is not damage the engine holds", slot);
			return -EINVAL;
		}
		o = &b->obs[slot];
		b->seen[slot] = 1;
		b->nseen++;
		o->state = OCC_DAMAGED;
		o->got = (uint16_t)spr;
		b->dmg_seen += spr;
		if ((uint64_t)b->sect_base + b->sect_obs + spr > dmg_ceiling)
			b->dmg_over = 1;
		if (b->dmg_over)
			continue;	/* counted, not held (scan_overflow()) */
		o->sect = malloc(spr * sizeof(*o->sect));
		if (!o->sect) {
			snprintf(err, errlen, "out of memory for slot %u", slot);
			return -EINVAL;
		}
		memcpy(o->sect, x->sect, spr * sizeof(*o->sect));
		b->sect_obs += spr;
	}
	return 0;
}

/* A scan starts: what it may hold is sized by the adopted geometry only. */
static int scan_begin(struct board *b, const struct pc_msg *m, char *err, size_t errlen)
{
	uint32_t spr = pc_geom_spr(&b->g);

	if (!b->have_geom) {
		snprintf(err, errlen, "scan before hello");
		return -EINVAL;
	}
	scan_reset(b);
	b->scanning = 1;
	b->scan_pattern = pc_pattern_from_name(jstr(m->obj, "pattern", "sequential"));
	/* damaged slots the expected state keeps outside this scan count
	 * against the same ceiling as the ones it reports */
	b->sect_base = 0;
	b->dmg_prev = 0;
	for (uint32_t s = 0; b->exp && s < b->g.nslots; s++) {
		if (b->exp[s].state != OCC_DAMAGED)
			continue;
		if (wanted(b, s))
			b->dmg_prev += spr;
		else
			b->sect_base += spr;
	}
	b->obs = calloc(b->g.nslots, sizeof(*b->obs));
	b->seen = calloc(b->g.nslots, 1);
	if (!b->obs || !b->seen) {
		occ_free_all(b->obs, 0);
		b->obs = NULL;
		free(b->seen);
		b->seen = NULL;
		snprintf(b->scan_err, sizeof(b->scan_err), "out of memory for a scan of %u slots; ", b->g.nslots);
		snprintf(err, errlen, "out of memory for a scan of %u slots", b->g.nslots);
		return -ENOMEM;
	}
	return 0;
}

/* An agent error that says the device refused a write of the cycle. */
static int take_write_error(struct board *b, const struct pc_msg *m, unsigned cycle, char *err, size_t errlen)
{
	struct wcycle *w = b->w;
	json_object *we;
	uint64_t eno, lba, seq;
	const char *mode;
	char why[256] = "";
	int md;

	if (!json_object_object_get_ex(m->obj, "write_error", &we))
		return 0;	/* an error of another kind: the campaign's business */
	if (!w || w->cycle != cycle) {
		snprintf(err, errlen, "error with write_error outside the writes of cycle %u: not a finding", cycle);
		return -EINVAL;
	}
	if (w->cut)
		return 0;	/* after the cut: the power going away, not the device refusing */
	if (pc_json_u64(we, "errno", 4095, &eno, why, sizeof(why)) || eno < 1 ||
	    pc_json_u64(we, "lba", UINT64_MAX, &lba, why, sizeof(why)) ||
	    pc_json_u64(we, "seq", UINT64_MAX, &seq, why, sizeof(why)) || seq < 1 ||
	    pc_json_str(we, "mode", &mode, why, sizeof(why)) || (md = pc_mode_from_name(mode)) < 0) {
		/* the device refused something, and the host cannot say what:
		 * the cycle cannot pass */
		snprintf(err, errlen, "write_error: %s", why[0] ? why : "errno 1..4095, seq >= 1, a mode name");
		if (!w->infra[0])
			snprintf(w->infra, sizeof(w->infra), "the agent reported a refused write the host cannot "
				 "read (%s)", err);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < w->nwerr && i < ENGINE_MAX_WRITE_ERRORS; i++)
		if (w->werr[i].seq == seq && w->werr[i].lba == lba && w->werr[i].err == eno)
			return 0;	/* said twice */
	if (w->nwerr < ENGINE_MAX_WRITE_ERRORS) {
		struct werr *x = &w->werr[w->nwerr];

		x->err = (uint32_t)eno;
		x->lba = lba;
		x->seq = seq;
		x->mode = md;
		pc_strlcpy(x->msg, jstr(m->obj, "msg", ""), sizeof(x->msg));
	}
	if (w->nwerr < UINT32_MAX)
		w->nwerr++;
	return 0;
}

static int on_rx(struct engine *e, struct board *b, json_object *msg, unsigned cycle, int64_t t,
		 char *err, size_t errlen)
{
	struct pc_msg m;
	int ret;

	ret = pc_msg_parse_obj(msg, &m, err, errlen);
	if (ret) {
		/* the campaign records only messages that parsed: this file was
		 * edited, and the writing cycle's evidence with it */
		if (b->w && b->w->cycle == cycle && !b->w->infra[0])
			snprintf(b->w->infra, sizeof(b->w->infra), "an agent message of this cycle in "
				 "events.jsonl cannot be read (%.400s)", err);
		return ret;
	}
	if (b->refused && m.type != PC_MSG_HELLO) {
		/* the rest of a refused boot: nothing in it is judged */
		pc_msg_clear(&m);
		return 0;
	}
	switch (m.type) {
	case PC_MSG_HELLO:
		b->refused = 0;
		ret = set_geom(e, b, &m, cycle, err, errlen);
		break;
	case PC_MSG_SCAN_BEGIN:
		ret = scan_begin(b, &m, err, errlen);
		break;
	case PC_MSG_ERROR:
		ret = take_write_error(b, &m, cycle, err, errlen);
		break;
	case PC_MSG_RUNS:
	case PC_MSG_SLOT:
	case PC_MSG_SAME:
		if (!b->scanning)
			break;	/* a stray scan line after an aborted scan */
		ret = m.type == PC_MSG_RUNS ? take_runs(b, &m, err, errlen) :
		      m.type == PC_MSG_SLOT ? take_slot(b, &m, e->dmg_ceiling, err, errlen) :
					      take_same(b, &m, e->dmg_ceiling, err, errlen);
		if (ret == -EINVAL) {
			/* the agent sent nonsense: the scan cannot be trusted (the
			 * first reason is kept: later ones tend to follow from it) */
			if (!b->scan_err[0])
				snprintf(b->scan_err, sizeof(b->scan_err), "%s; ", err);
			ret = 0;
		}
		break;
	case PC_MSG_SCAN_END:
		if (b->scanning)
			ret = scan_done(e, b);
		break;
	case PC_MSG_SUBMIT:
	case PC_MSG_ACK:
		if (b->w) {
			struct wcycle *w = b->w;
			uint8_t *map = m.type == PC_MSG_ACK ? w->ack : w->sub;
			uint32_t *cnt = m.type == PC_MSG_ACK ? &w->nack : &w->nsub;
			/* only the part inside the work's range is looked at (the
			 * parser keeps first + n below 2^64) */
			uint64_t lo = m.u.range.first > w->first ? m.u.range.first : w->first;
			uint64_t hi = m.u.range.first + m.u.range.n < w->first + w->n ?
				m.u.range.first + m.u.range.n : w->first + w->n;
			for (uint64_t s = lo; s < hi; s++) {
				if (map[s - w->first])
					continue;
				map[s - w->first] = 1;
				(*cnt)++;
			}
			if (m.type == PC_MSG_ACK || w->mode_run == PC_MODE_NONE || w->mode_run == PC_MODE_RELWR_OFF)
				w->t_last = t;
		}
		break;
	default:
		break;
	}
	pc_msg_clear(&m);
	return ret;
}

static int on_work(struct engine *e, struct board *b, json_object *work, json_object *policy, unsigned cycle,
		   int64_t t, char *err, size_t errlen)
{
	struct pc_msg m;
	struct wcycle *w;
	json_object *io;

	if (pc_msg_parse_obj(work, &m, err, errlen))
		return -EINVAL;
	if (m.type != PC_MSG_WORK || !b->have_geom || !b->baseline) {
		snprintf(err, errlen, "work event without a work message, or before the baseline scan");
		pc_msg_clear(&m);
		return -EINVAL;
	}
	/* the host's own message, but read back from a file that may have been edited */
	if (m.u.work.cycle != cycle || m.u.work.record_size != b->g.record_size ||
	    m.u.work.n > b->g.nslots || m.u.work.n > b->lim_records || m.u.work.first > MAX_SEQ - m.u.work.n) {
		snprintf(err, errlen, "work of cycle %" PRIu32 " (event: cycle %u), %" PRIu32 " records of %" PRIu32
			 " bytes from seq %" PRIu64 ": the region has %u slots of %u bytes, the board writes at most "
			 "%u records a cycle, seqs end at 2^63", m.u.work.cycle, cycle, m.u.work.n,
			 m.u.work.record_size, m.u.work.first, b->g.nslots, b->g.record_size, b->lim_records);
		pc_msg_clear(&m);
		return -EINVAL;
	}
	if (b->w) {
		/* its judgment never came: the next scan can no longer tell the two apart */
		verdict_unjudged(e, b, PC_OUT_INFRA_ERROR, "writes were never verified", NULL);
		wcycle_free(b->w);
		b->w = NULL;
	}
	w = calloc(1, sizeof(*w));
	if (w) {
		w->sub = calloc(m.u.work.n, 1);
		w->ack = calloc(m.u.work.n, 1);
	}
	if (!w || !w->sub || !w->ack) {
		wcycle_free(w);
		pc_msg_clear(&m);
		b->w = NULL;
		return -ENOMEM;
	}
	w->cycle = cycle;
	w->first = m.u.work.first;
	w->n = m.u.work.n;
	w->mode = m.u.work.mode;
	w->pattern = m.u.work.pattern;
	w->mode_run = w->mode;
	/* fua without the async path really runs as fua+flush (see writer.c) */
	if (w->mode == PC_MODE_FUA && json_object_object_get_ex(b->hello, "io", &io)) {
		json_object *a;
		if (json_object_object_get_ex(io, "async", &a) && !json_object_get_boolean(a))
			w->mode_run = PC_MODE_FUA_FLUSH;
	}
	pc_policy_default(&w->pol, w->mode);
	if (policy) {
		json_object *pv;
		if (json_object_object_get_ex(policy, "torn_unacked", &pv))
			w->pol.torn = !strcmp(json_object_get_string(pv), "violation");
		if (json_object_object_get_ex(policy, "torn_sector_unacked", &pv))
			w->pol.torn_sector = !strcmp(json_object_get_string(pv), "violation");
		if (json_object_object_get_ex(policy, "unclassified", &pv)) {
			w->pol_has_unclassified = 1;
			w->pol.unclassified = !strcmp(json_object_get_string(pv), "violation");
		}
	}
	w->t_work = t;
	w->t_last = t;
	b->w = w;
	b->last_work_cycle = cycle;
	b->next_seq = w->first + w->n;
	pc_msg_clear(&m);
	return 0;
}

/* What the host asked the agent to scan. */
static int on_verify(struct board *b, json_object *ev, char *err, size_t errlen)
{
	json_object *msg;
	struct pc_msg m;
	int ret;

	free(b->want);
	b->want = NULL;
	b->nwant = 0;
	if (!json_object_object_get_ex(ev, "msg", &msg))
		return 0;	/* a full scan */
	ret = pc_msg_parse_obj(msg, &m, err, errlen);
	if (ret)
		return ret;
	if (m.type != PC_MSG_VERIFY) {
		snprintf(err, errlen, "verify event holds a %s message", pc_msg_type_name(m.type));
		pc_msg_clear(&m);
		return -EINVAL;
	}
	if (!m.u.verify.full && b->have_geom) {
		b->want = calloc(b->g.nslots, 1);
		if (!b->want) {
			pc_msg_clear(&m);
			return -ENOMEM;
		}
		for (uint32_t i = 0; i < m.u.verify.nranges; i++) {
			const struct pc_posrange *r = &m.u.verify.ranges[i];
			if ((uint64_t)r->pos + r->n > b->g.nslots) {
				snprintf(err, errlen, "verify: positions %u+%u past the region's %u slots", r->pos, r->n,
					 b->g.nslots);
				free(b->want);
				b->want = NULL;
				b->nwant = 0;
				pc_msg_clear(&m);
				return -EINVAL;
			}
			for (uint64_t p = r->pos; p < (uint64_t)r->pos + r->n; p++) {
				uint32_t slot = pc_slot_of_pos(&b->g, m.u.verify.pattern, (uint32_t)p);
				b->nwant += !b->want[slot];
				b->want[slot] = 1;
			}
		}
	}
	pc_msg_clear(&m);
	return 0;
}

int engine_feed(struct engine *e, json_object *ev, char *err, size_t errlen)
{
	json_object *v;
	const char *kind, *board;
	uint64_t cycle, t = 0;
	struct board *b;
	int ret;

	if (!json_object_is_type(ev, json_type_object) || pc_json_str(ev, "ev", &kind, err, errlen))
		return -EINVAL;
	/* what the authenticated link refused (a connection or line that could
	 * not prove it came from the board's agent) is on record but never part
	 * of a verdict; such an event may name no board */
	if (!strcmp(kind, "link_reject"))
		return 0;
	/* checked reads: a cycle or time that json-c would saturate or wrap is
	 * refused, not used */
	if (pc_json_str(ev, "board", &board, err, errlen) ||
	    pc_json_u64(ev, "cycle", ENGINE_MAX_CYCLE, &cycle, err, errlen))
		return -EINVAL;
	if (json_object_object_get_ex(ev, "t", NULL) && pc_json_u64(ev, "t", ENGINE_MAX_T, &t, err, errlen))
		return -EINVAL;
	b = board_get(e, board, &ret, err, errlen);
	if (!b)
		return ret;
	if (cycle > b->last_cycle)
		b->last_cycle = (unsigned)cycle;
	if (!strcmp(kind, "power_on")) {
		if (b->refused) {
			/* the refused boot's cycle ended without the campaign saying so */
			b->refused = 0;
			if (b->refused_cycle != cycle &&
			    (ret = verdict_simple(e, b, b->refused_cycle, PC_OUT_INFRA_ERROR, b->refused_why)))
				return ret;
		}
		b->cur_cycle = (unsigned)cycle;
		scan_reset(b);
		return 0;
	}
	if (!strcmp(kind, "rx")) {
		if (!json_object_object_get_ex(ev, "msg", &v)) {
			snprintf(err, errlen, "rx event without msg");
			return -EINVAL;
		}
		return on_rx(e, b, v, (unsigned)cycle, (int64_t)t, err, errlen);
	}
	if (!strcmp(kind, "work")) {
		json_object *pol = NULL;

		if (!json_object_object_get_ex(ev, "work", &v)) {
			snprintf(err, errlen, "work event without work");
			return -EINVAL;
		}
		if (b->refused) {
			snprintf(err, errlen, "work after a refused hello: ignored (%s)", b->refused_why);
			return -EINVAL;
		}
		json_object_object_get_ex(ev, "policy", &pol);
		return on_work(e, b, v, pol, (unsigned)cycle, (int64_t)t, err, errlen);
	}
	if (!strcmp(kind, "verify"))
		return b->refused ? 0 : on_verify(b, ev, err, errlen);
	if (!strcmp(kind, "cut")) {
		if (b->w && b->w->cycle == cycle) {
			json_object *c = json_object_new_object();
			json_object_object_foreach(ev, k, val)
				if (strcmp(k, "t") && strcmp(k, "ev") && strcmp(k, "board") && strcmp(k, "cycle"))
					json_object_object_add(c, k, json_object_get(val));
			json_object_put(b->w->cut);
			b->w->cut = c;
		}
		return 0;
	}
	if (!strcmp(kind, "boot_fail"))
		return verdict_simple(e, b, (unsigned)cycle, PC_OUT_BOOT_FAIL, jstr(ev, "reason", "no agent"));
	if (!strcmp(kind, "final_infra") || !strcmp(kind, "final_boot_fail")) {
		/* the final verification has no cycle of its own: a refused boot
		 * in it is no cycle's verdict either */
		b->refused = 0;
		if (!b->w)
			return 0;
		if (!strcmp(kind, "final_infra"))
			return verdict_unjudged(e, b, PC_OUT_INFRA_ERROR, jstr(ev, "reason", "final verification failed"),
						NULL);
		return verdict_unjudged(e, b, PC_OUT_BOOT_FAIL, jstr(ev, "reason", "no agent"), NULL);
	}
	if (!strcmp(kind, "infra")) {
		const char *why = jstr(ev, "reason", "infrastructure error");
		if (b->refused && b->refused_cycle == cycle)
			b->refused = 0;	/* the campaign's verdict for the refused boot */
		if (b->w && b->w->cycle == cycle) {
			if (!b->w->infra[0])
				pc_strlcpy(b->w->infra, why, sizeof(b->w->infra));
			return 0;
		}
		scan_reset(b);
		return verdict_simple(e, b, (unsigned)cycle, PC_OUT_INFRA_ERROR, why);
	}
	return 0;	/* informational events */
}

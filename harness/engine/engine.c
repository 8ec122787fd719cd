/*
 * engine.c - from recorded events to verdicts (docs/design.md sections 3, 6): the
 * engine's public face and its event intake, the top of its pipeline. Each
 * event is checked and dispatched here; the work it names, the refused
 * writes and the scan it starts go down to the other parts:
 *   engine_scan.c     a scan assembled from its runs, slot and same lines,
 *                     judged when complete, then the expected state
 *   engine_region.c   HELLO: the region adopted, its continuity judged
 *   engine_judge.c    each sector classified, each record and cold slot judged
 *   engine_verdict.c  findings and verdicts encoded to JSON, and emitted
 *   engine_state.c    the per-slot state, compact
 * Each part calls only those below it; each object they share has its own
 * header (engine_board.h: the board and the pipeline, which part calls which).
 *
 * Per board it keeps the expected occupant of every slot. A cycle's work
 * names the seqs it will write; the scan at the next boot says what every
 * slot holds. Each written record is then intact, not_written, lost_acked,
 * torn, torn_sector, corrupt, misdirected, stale, unreadable or unclassified;
 * every other slot must hold what it held before, or the change is a finding too.
 */
#include "harness/engine/engine.h"
#include "harness/engine/engine_board.h"
#include "harness/engine/engine_carry.h"
#include "harness/engine/engine_ledger.h"
#include "harness/engine/engine_region.h"
#include "harness/engine/engine_scan.h"
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
#include "common/json.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"

struct engine *engine_new(const char *campaign, engine_verdict_fn vfn, engine_note_fn nfn, void *arg)
{
	struct engine *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	pc_strlcpy(e->campaign, campaign, sizeof(e->campaign));
	e->dmg_ceiling = ENGINE_MAX_DAMAGED_SECTORS;
	e->format = 1;
	e->vfn = vfn;
	e->nfn = nfn;
	e->arg = arg;
	return e;
}

void engine_set_format(struct engine *e, int major)
{
	e->format = major >= 2 ? 2 : 1;
}

void engine_free(struct engine *e)
{
	if (!e)
		return;
	while (e->boards) {
		struct board *b = e->boards;
		e->boards = b->next;
		eng_scan_reset(b);
		eng_scan_want_clear(&b->scan);
		free(b->exp.raws);
		eng_carry_free(b->carry);
		eng_slots_free(b->exp.slots);
		eng_wcycle_free(b->w);
		json_object_put(b->hello);
		json_object_put(b->last_device);
		json_object_put(b->dev_cache);
		json_object_put(b->queue_cache);
		eng_ledger_free(b->ledger);
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
	b->exp.next_seq = 1;
	b->planned_mode = -1;
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

	if (!json_object_is_type(bo, json_type_object))
		return pc_fail(err, errlen, -EINVAL, "config.boards[%zu]: expected an object", i);
	if (pc_json_str(bo, "name", name, why, sizeof(why)) || strlen(*name) < 1 || strlen(*name) > 63)
		return pc_fail(err, errlen, -EINVAL, "config.boards[%zu]: %s", i, why[0] ? why : "name: 1 to 63 characters");
	why[0] = 0;
	if (!json_object_object_get_ex(bo, "device", &dev) ||
	    pc_json_u64(dev, "record_size", PC_MAX_RECORD_SIZE, &v, why, sizeof(why)) || v < PC_SECTOR ||
	    v % PC_SECTOR) {
		return pc_fail(err, errlen, -EINVAL, "config.boards[%zu].device: %s", i,
			 why[0] ? why : "record_size: a multiple of 512, 512..1048576");
	}
	*rs = (uint32_t)v;
	*maxb = CFG_DEFAULT_MAX_REGION;
	if (json_object_object_get_ex(dev, "max_region_bytes", NULL) &&
	    (pc_json_u64(dev, "max_region_bytes", CFG_MAX_REGION_LIMIT, maxb, why, sizeof(why)) ||
	     *maxb < CFG_MIN_REGION_LIMIT)) {
		return pc_fail(err, errlen, -EINVAL, "config.boards[%zu].device: %s", i,
			 why[0] ? why : "max_region_bytes: too small");
	}
	*maxrec = MAX_WORK_RECORDS;
	if (json_object_object_get_ex(bo, "records_per_cycle", NULL)) {
		if (pc_json_u64(bo, "records_per_cycle", MAX_WORK_RECORDS, &v, why, sizeof(why)) || v < 1)
			return pc_fail(err, errlen, -EINVAL, "config.boards[%zu]: %s", i, why[0] ? why : "records_per_cycle: at least 1");
		*maxrec = (uint32_t)v;
	}
	return 0;
}

int engine_configure(struct engine *e, json_object *config, char *err, size_t errlen)
{
	json_object *arr;
	size_t n;

	if (e->configured || e->boards)
		return pc_fail(err, errlen, -EINVAL, "the engine is configured once, before any event");
	if (!config)
		return 0;
	if (!json_object_is_type(config, json_type_object) || !json_object_object_get_ex(config, "boards", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		return pc_fail(err, errlen, -EINVAL, "config: expected an object with a \"boards\" array");
	}
	n = json_object_array_length(arr);
	if (n < 1 || n > CFG_MAX_BOARDS)
		return pc_fail(err, errlen, -EINVAL, "config.boards: expected 1 to %u boards, got %zu", CFG_MAX_BOARDS, n);
	for (size_t i = 0; i < n; i++) {
		const char *name;
		uint32_t rs = 0, maxrec = 0;	/* set when board_limits returns 0 */
		uint64_t maxb = 0;
		struct board *b;

		if (board_limits(json_object_array_get_idx(arr, i), i, &name, &rs, &maxb, &maxrec, err, errlen))
			goto fail;
		if (board_find(e, name)) {
			pc_fail(err, errlen, -EINVAL, "config.boards[%zu]: board \"%s\" twice", i, name);
			goto fail;
		}
		b = board_add(e, name);
		if (!b) {
			pc_fail(err, errlen, -EINVAL, "out of memory");	/* fail: returns -EINVAL */
			goto fail;
		}
		b->lim_record_size = rs;
		b->lim_region_bytes = maxb;
		b->lim_records = maxrec;
		{
			json_object *a;

			b->audit_require = json_object_object_get_ex(json_object_array_get_idx(arr, i), "audit", &a) &&
					   json_object_is_type(a, json_type_string) &&
					   !strcmp(json_object_get_string(a), "require");
		}
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
		st->last_verdict_cycle = eng_ledger_last(b->ledger);
		st->pending = b->w != NULL;
		st->next_seq = b->exp.next_seq;
		st->verdicts = eng_ledger_count(b->ledger);
		st->baseline = b->exp.baseline;
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

uint32_t engine_board_known(struct engine *e, const char *name, struct pc_known *out, uint32_t max)
{
	struct board *b = board_find(e, name);
	uint32_t n = 0, spr;

	if (!b || !b->have_geom || !b->exp.slots)
		return 0;
	spr = pc_geom_spr(&b->g);
	for (uint32_t s = 0; s < b->g.nslots && n < max; s++) {
		struct occ x;
		const struct occ *o = &x;

		if (eng_slots_state(b->exp.slots, s) != OCC_DAMAGED)
			continue;
		eng_slots_get(b->exp.slots, s, &x);
		if (!o->sect)
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

	if (!b || !b->have_geom || !b->exp.slots)
		return 0;
	spr = pc_geom_spr(&b->g);
	for (uint32_t s = 0; s < b->g.nslots && n < max; s++) {
		struct occ o;

		if (eng_slots_state(b->exp.slots, s) != OCC_DAMAGED)
			continue;
		eng_slots_get(b->exp.slots, s, &o);
		if (o.sect)
			out[n++] = (struct pc_known_slot){ s, occ_digest(&o, spr) };
	}
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
	if (!w || w->cycle != cycle)
		return pc_fail(err, errlen, -EINVAL, "error with write_error outside the writes of cycle %u: not a finding", cycle);
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
		pc_strlcpy(x->msg, pc_jstr(m->obj, "msg", ""), sizeof(x->msg));
	}
	if (w->nwerr < UINT32_MAX)
		w->nwerr++;
	return 0;
}

/* A SUBMIT or ACK range: each record of the work's range counted once. */
static void take_range(const struct engine *e, struct wcycle *w, const struct pc_msg *mp, int64_t t)
{
	const struct pc_msg m = *mp;
	uint8_t *map = m.type == PC_MSG_ACK ? w->ack : w->sub;
	uint32_t *cnt = m.type == PC_MSG_ACK ? &w->nack : &w->nsub;
	/* only the part inside the work's range is looked at (the
	 * parser keeps first + n below 2^64) */
	uint64_t lo = m.u.range.first > w->first ? m.u.range.first : w->first;
	uint64_t hi = m.u.range.first + m.u.range.n < w->first + w->n ?
		m.u.range.first + m.u.range.n : w->first + w->n;

	if (m.type == PC_MSG_ACK && m.u.range.us && e->format >= 2 && !w->lat)
		w->lat = calloc(w->n, sizeof(*w->lat));
	for (uint64_t s = lo; s < hi; s++) {
		if (map[s - w->first])
			continue;
		map[s - w->first] = 1;
		(*cnt)++;
		/* each record's latency once, as its first ACK said */
		if (m.type == PC_MSG_ACK && m.u.range.us && w->lat && w->nlat < w->n)
			w->lat[w->nlat++] = m.u.range.us[s - m.u.range.first];
	}
	if (m.type == PC_MSG_ACK || w->mode_run == PC_MODE_NONE || w->mode_run == PC_MODE_RELWR_OFF)
		w->t_last = t;
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
				 PC_FILE_EVENTS " cannot be read (%.400s)", err);
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
		ret = eng_set_geom(e, b, &m, cycle, err, errlen);
		if (ret > 0 || b->refused)
			eng_scan_reset(b);	/* the region is another one, or refused */
		if (ret > 0)
			ret = 0;
		break;
	case PC_MSG_SCAN_BEGIN:
		ret = eng_scan_begin(b, &m, err, errlen);
		break;
	case PC_MSG_ERROR:
		ret = take_write_error(b, &m, cycle, err, errlen);
		break;
	case PC_MSG_RUNS:
	case PC_MSG_SLOT:
	case PC_MSG_SAME:
		if (!b->scan.scanning)
			break;	/* a stray scan line after an aborted scan */
		ret = m.type == PC_MSG_RUNS ? eng_take_runs(b, &m, err, errlen) :
		      m.type == PC_MSG_SLOT ? eng_take_slot(b, &m, e->dmg_ceiling, err, errlen) :
					      eng_take_same(b, &m, e->dmg_ceiling, err, errlen);
		if (ret == -EINVAL) {
			/* the agent sent nonsense: the scan cannot be trusted (the
			 * first reason is kept: later ones tend to follow from it) */
			if (!b->scan.err[0])
				snprintf(b->scan.err, sizeof(b->scan.err), "%s; ", err);
			ret = 0;
		}
		break;
	case PC_MSG_SCAN_END:
		if (b->scan.scanning)
			ret = eng_scan_end(e, b);
		break;
	case PC_MSG_AUDIT:
	case PC_MSG_DONE: {
		/* the block requests the work issued so far, as the agent saw them
		 * (validated by the parser); the latest stands */
		json_object *a;

		if (b->w && e->format >= 2 && json_object_object_get_ex(m.obj, "audit", &a)) {
			json_object_put(b->w->audit);
			b->w->audit = json_object_get(a);
		}
		if (b->w && m.type == PC_MSG_DONE)
			b->w->done = 1;
		break;
	}
	case PC_MSG_SUBMIT:
	case PC_MSG_ACK:
		if (b->w)
			take_range(e, b->w, &m, t);
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
	if (m.type != PC_MSG_WORK || !b->have_geom || !b->exp.baseline) {
		pc_msg_clear(&m);
		return pc_fail(err, errlen, -EINVAL, "work event without a work message, or before the baseline scan");
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
		eng_verdict_unjudged(e, b, PC_OUT_INFRA_ERROR, "writes were never verified", NULL);
		eng_wcycle_free(b->w);
		b->w = NULL;
	}
	w = calloc(1, sizeof(*w));
	if (w) {
		w->sub = calloc(m.u.work.n, 1);
		w->ack = calloc(m.u.work.n, 1);
	}
	if (!w || !w->sub || !w->ack) {
		eng_wcycle_free(w);
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
		if (json_object_object_get_ex(policy, pc_class_names[PC_CLS_UNCLASSIFIED], &pv)) {
			w->pol_has_unclassified = 1;
			w->pol.unclassified = !strcmp(json_object_get_string(pv), "violation");
		}
	}
	w->t_work = t;
	w->t_last = t;
	b->w = w;
	b->last_work_cycle = cycle;
	b->exp.next_seq = w->first + w->n;
	pc_msg_clear(&m);
	return 0;
}

/* What the host asked the agent to scan. */
static int on_verify(struct board *b, json_object *ev, char *err, size_t errlen)
{
	json_object *msg;
	struct pc_msg m;
	int ret;

	eng_scan_want_clear(&b->scan);
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
	if (!m.u.verify.full && b->have_geom)
		ret = eng_scan_want(&b->scan, &b->g, &m, err, errlen);
	pc_msg_clear(&m);
	return ret;
}

/* The latest wall clock a run_start may give: 9999-12-31, in ms. */
#define MAX_WALL_MS 253402300799999ull

/* A run started: its wall clock at its "t", and the host's id. */
static int on_run_start(struct engine *e, const struct engine_event *x, char *err, size_t errlen)
{
	json_object *host, *id;
	uint64_t wall;
	const char *s;

	if (pc_json_u64(x->obj, "wall_ms", MAX_WALL_MS, &wall, err, errlen))
		return -EINVAL;
	if (!json_object_object_get_ex(x->obj, "host", &host) || !json_object_object_get_ex(host, "id", &id) ||
	    !json_object_is_type(id, json_type_string)) {
		return pc_fail(err, errlen, -EINVAL, "run_start: missing host.id");
	}
	s = json_object_get_string(id);
	if (!s[0] || strlen(s) >= sizeof(e->host) || strspn(s, "0123456789abcdefghijklmnopqrstuvwxyz"
			"ABCDEFGHIJKLMNOPQRSTUVWXYZ-_.:") != strlen(s)) {
		return pc_fail(err, errlen, -EINVAL, "run_start: host.id: expected 1 to %zu letters, digits or -_.:",
			 sizeof(e->host) - 1);
	}
	pc_strlcpy(e->host, s, sizeof(e->host));
	e->wall_ms = (int64_t)wall;
	e->wall_t = x->t;
	e->have_wall = 1;
	return 0;
}

int engine_event_parse(json_object *obj, struct engine_event *ev, char *err, size_t errlen)
{
	const char *kind;
	uint64_t cycle, t = 0;

	memset(ev, 0, sizeof(*ev));
	ev->obj = obj;
	if (!json_object_is_type(obj, json_type_object) || pc_json_str(obj, "ev", &kind, err, errlen))
		return -EINVAL;
	ev->kind = pc_ev_from_name(kind);
	/* what the authenticated link refused (a connection or line that could
	 * not prove it came from the board's agent) is on record but never part
	 * of a verdict; such an event may name no board */
	if (ev->kind == PC_EV_LINK_REJECT || ev->kind == PC_EV_LINK_REJECT_SUMMARY || ev->kind == PC_EV_CONFIG_CHANGE)
		return 0;
	if (ev->kind == PC_EV_RUN_START) {
		/* a run's start names no board */
		if (json_object_object_get_ex(obj, "t", NULL) &&
		    pc_json_u64(obj, "t", ENGINE_MAX_T, &t, err, errlen))
			return -EINVAL;
		ev->t = (int64_t)t;
		return 0;
	}
	/* checked reads: a cycle or time that json-c would saturate or wrap is
	 * refused, not used */
	if (pc_json_str(obj, "board", &ev->board, err, errlen) ||
	    pc_json_u64(obj, "cycle", ENGINE_MAX_CYCLE, &cycle, err, errlen))
		return -EINVAL;
	if (json_object_object_get_ex(obj, "t", NULL) && pc_json_u64(obj, "t", ENGINE_MAX_T, &t, err, errlen))
		return -EINVAL;
	ev->cycle = (unsigned)cycle;
	ev->t = (int64_t)t;
	return 0;
}

int engine_feed(struct engine *e, json_object *obj, char *err, size_t errlen)
{
	struct engine_event ev;
	int ret = engine_event_parse(obj, &ev, err, errlen);

	return ret ? ret : engine_feed_event(e, &ev, err, errlen);
}

/* A boot attempt starts. */
static int on_power_on(struct engine *e, struct board *b, json_object *ev, unsigned cycle, char *err, size_t errlen)
{
	json_object *v;
	int ret;

	if (b->refused) {
		/* the refused boot's cycle ended without the campaign saying so */
		b->refused = 0;
		if (b->refused_cycle != cycle &&
		    (ret = eng_verdict_simple(e, b, b->refused_cycle, PC_OUT_INFRA_ERROR, b->refused_why)))
			return ret;
	}
	b->cur_cycle = cycle;
	b->planned_mode = -1;
	if (json_object_object_get_ex(ev, "mode", &v)) {
		b->planned_mode = json_object_is_type(v, json_type_string) ?
			pc_mode_from_name(json_object_get_string(v)) : -1;
		if (b->planned_mode < 0)
			return pc_fail(err, errlen, -EINVAL, "power_on: \"mode\": not a write mode");
	}
	eng_scan_reset(b);
	return 0;
}

/* The cut, on record: what the campaign did, kept for the verdict of the cycle it cut. */
static void on_cut(struct board *b, json_object *ev, unsigned cycle)
{
	json_object *c;

	if (!b->w || b->w->cycle != cycle)
		return;
	c = json_object_new_object();
	json_object_object_foreach(ev, k, val)
		if (strcmp(k, "t") && strcmp(k, "ev") && strcmp(k, "board") && strcmp(k, "cycle"))
			json_object_object_add(c, k, json_object_get(val));
	json_object_put(b->w->cut);
	b->w->cut = c;
}

static int on_boot_fail(struct engine *e, struct board *b, json_object *ev, unsigned cycle, char *err,
			size_t errlen)
{
	uint64_t dead = 0;
	int rc;

	/* the campaign's decision, on record: N BOOT_FAILs in a row, the
	 * device is dead (an older harness never says: 0) */
	if (json_object_object_get_ex(ev, PC_DEAD_DEVICE, NULL) &&
	    pc_json_u64(ev, PC_DEAD_DEVICE, ENGINE_MAX_CYCLE, &dead, err, errlen))
		return -EINVAL;
	e->dead_device = (uint32_t)dead;
	rc = eng_verdict_simple(e, b, cycle, PC_OUT_BOOT_FAIL, pc_jstr(ev, "reason", "no agent"));
	e->dead_device = 0;
	return rc;
}

/* The final verification failed (kind PC_EV_FINAL_INFRA or PC_EV_FINAL_BOOT_FAIL). */
static int on_final_failed(struct engine *e, struct board *b, json_object *ev, int kind)
{
	/* the final verification has no cycle of its own: a refused boot
	 * in it is no cycle's verdict either */
	b->refused = 0;
	if (!b->w)
		return 0;
	if (kind == PC_EV_FINAL_INFRA)
		return eng_verdict_unjudged(e, b, PC_OUT_INFRA_ERROR, pc_jstr(ev, "reason", "final verification failed"),
					NULL);
	return eng_verdict_unjudged(e, b, PC_OUT_BOOT_FAIL, pc_jstr(ev, "reason", "no agent"), NULL);
}

static int on_infra(struct engine *e, struct board *b, json_object *ev, unsigned cycle)
{
	const char *why = pc_jstr(ev, "reason", "infrastructure error");

	if (b->refused && b->refused_cycle == cycle)
		b->refused = 0;	/* the campaign's verdict for the refused boot */
	if (b->w && b->w->cycle == cycle) {
		if (!b->w->infra[0])
			pc_strlcpy(b->w->infra, why, sizeof(b->w->infra));
		return 0;
	}
	eng_scan_reset(b);
	return eng_verdict_simple(e, b, cycle, PC_OUT_INFRA_ERROR, why);
}

int engine_feed_event(struct engine *e, const struct engine_event *x, char *err, size_t errlen)
{
	json_object *v, *ev = x->obj;
	unsigned cycle = x->cycle;
	struct board *b;
	int ret;

	if (x->kind == PC_EV_LINK_REJECT || x->kind == PC_EV_LINK_REJECT_SUMMARY || x->kind == PC_EV_CONFIG_CHANGE)
		return 0;
	e->t_now = x->t;
	if (x->kind == PC_EV_RUN_START)
		return on_run_start(e, x, err, errlen);
	b = board_get(e, x->board, &ret, err, errlen);
	if (!b)
		return ret;
	if (cycle > b->last_cycle)
		b->last_cycle = cycle;
	switch (x->kind) {
	case PC_EV_POWER_ON:
		return on_power_on(e, b, ev, cycle, err, errlen);
	case PC_EV_RX:
		if (!json_object_object_get_ex(ev, "msg", &v))
			return pc_fail(err, errlen, -EINVAL, "rx event without msg");
		return on_rx(e, b, v, cycle, x->t, err, errlen);
	case PC_EV_WORK: {
		json_object *pol = NULL;

		if (!json_object_object_get_ex(ev, "work", &v))
			return pc_fail(err, errlen, -EINVAL, "work event without work");
		if (b->refused)
			return pc_fail(err, errlen, -EINVAL, "work after a refused hello: ignored (%s)", b->refused_why);
		json_object_object_get_ex(ev, "policy", &pol);
		return on_work(e, b, v, pol, cycle, x->t, err, errlen);
	}
	case PC_EV_VERIFY:
		return b->refused ? 0 : on_verify(b, ev, err, errlen);
	case PC_EV_CUT:
		on_cut(b, ev, cycle);
		return 0;
	case PC_EV_BOOT_FAIL:
		return on_boot_fail(e, b, ev, cycle, err, errlen);
	case PC_EV_FINAL_INFRA:
	case PC_EV_FINAL_BOOT_FAIL:
		return on_final_failed(e, b, ev, x->kind);
	case PC_EV_INFRA:
		return on_infra(e, b, ev, cycle);
	default:
		return 0;	/* informational events, and kinds of a newer harness */
	}
}

/*
 * report_add.c - a checked verdict counted into the report model: its device
 * (by identity), board and mode, the de-duplication of cycles given twice,
 * and the sums every writer shows.
 */
#include "harness/report/report_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include "common/record.h"
#include "common/util.h"
#include "harness/results/jsonl.h"
#include "harness/results/results.h"

/* The de-duplication set: keys by FNV-1a hash, open addressing. */
struct rep_seen {
	char **k;
	uint64_t *h;
	size_t cap, n;
};

/* ---- accumulating ---- */

struct rep_dev *rep_dev_get(struct rep *r, const char *id, const char *board)
{
	char key[256];
	struct rep_dev *d;

	/* a device never identified is known only by its board */
	snprintf(key, sizeof(key), "%s%s", id ? "" : "?board:", id ? id : board);
	for (unsigned i = 0; i < r->ndevs; i++)
		if (strcmp(r->devs[i].key, key) == 0)
			return &r->devs[i];
	d = realloc(r->devs, (r->ndevs + 1) * sizeof(*d));
	if (!d)
		return NULL;
	r->devs = d;
	d = &r->devs[r->ndevs];
	memset(d, 0, sizeof(*d));
	d->key = strdup(key);
	d->id = id ? strdup(id) : NULL;
	d->limit = -1.0;
	d->first_ms = d->last_ms = -1;
	r->ndevs++;
	if (!d->key || (id && !d->id))
		return NULL;
	return d;
}

static struct rep_mode *rep_mode_get(struct rep_dev *d, const char *name)
{
	struct rep_mode *m;

	for (unsigned i = 0; i < d->nmodes; i++)
		if (strcmp(d->modes[i].name, name) == 0)
			return &d->modes[i];
	m = realloc(d->modes, (d->nmodes + 1) * sizeof(*m));
	if (!m)
		return NULL;
	d->modes = m;
	m = &d->modes[d->nmodes++];
	memset(m, 0, sizeof(*m));
	pc_strlcpy(m->name, name, sizeof(m->name));
	return m;
}

static void field_set(struct rep_field *f, json_object *v)
{
	if (!v || json_object_is_type(v, json_type_null))
		return;
	if (f->v && !json_object_equal(f->v, v))
		f->varies = 1;
	json_object_put(f->v);
	f->v = json_object_get(v);	/* keep the newest: a kernel upgrade shows as the latest */
}

struct rep_board *rep_board_get(struct rep *r, unsigned dir, const char *name)
{
	const char *key = r->dirs[dir].camp_key;
	struct rep_board *b;

	/* a board of one campaign, whichever copy of its folder said so */
	for (unsigned i = 0; i < r->nboards; i++)
		if (strcmp(r->boards[i].name, name) == 0 && strcmp(r->dirs[r->boards[i].dir].camp_key, key) == 0)
			return &r->boards[i];
	b = realloc(r->boards, (r->nboards + 1) * sizeof(*b));
	if (!b)
		return NULL;
	r->boards = b;
	b = &r->boards[r->nboards];
	memset(b, 0, sizeof(*b));
	b->dir = dir;
	b->dev = -1;
	if (!(b->name = strdup(name)))
		return NULL;
	r->nboards++;
	return b;
}

/* ---- de-duplication ---- */

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* 1 when key was there, 0 when added, -ENOMEM. */
static int seen_add(struct rep *r, const char *key)
{
	struct rep_seen *st = r->seen;
	uint64_t h = fnv1a(key);
	size_t i;

	if (!st) {
		if (!(st = calloc(1, sizeof(*st))))
			return -ENOMEM;
		r->seen = st;
	}
	if ((st->n + 1) * 2 > st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 1024;
		char **k = calloc(cap, sizeof(*k));
		uint64_t *hh = calloc(cap, sizeof(*hh));

		if (!k || !hh) {
			free(k);
			free(hh);
			return -ENOMEM;
		}
		for (size_t j = 0; j < st->cap; j++)
			if (st->k[j]) {
				for (i = st->h[j] & (cap - 1); k[i]; i = (i + 1) & (cap - 1))
					;
				k[i] = st->k[j];
				hh[i] = st->h[j];
			}
		free(st->k);
		free(st->h);
		st->k = k;
		st->h = hh;
		st->cap = cap;
	}
	for (i = h & (st->cap - 1); st->k[i]; i = (i + 1) & (st->cap - 1))
		if (st->h[i] == h && !strcmp(st->k[i], key))
			return 1;
	if (!(st->k[i] = strdup(key)))
		return -ENOMEM;
	st->h[i] = h;
	st->n++;
	return 0;
}

void rep_seen_free(struct rep *r)
{
	struct rep_seen *st = r->seen;

	if (!st)
		return;
	for (size_t i = 0; i < st->cap; i++)
		free(st->k[i]);
	free(st->k);
	free(st->h);
	free(st);
	r->seen = NULL;
}

/* ---- accumulating ---- */

static void lat_add(struct rep_lat *l, const struct verdict *vd)
{
	for (unsigned k = 0; k < PC_LAT_BUCKETS; k++)
		l->hist[k] += vd->lat_hist[k];
	l->n += vd->lat_n;
	if (vd->lat_max > l->max)
		l->max = (uint32_t)vd->lat_max;
}

/* "lost_acked=3 torn=1" of one verdict */
static void verdict_viol_text(const struct verdict *vd, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int c = 0; c < NCLASS && n < len; c++) {
		uint64_t k = pc_class_always_violation((enum pc_class)c) && vd->counts[c] > vd->fviol[c] ?
			vd->counts[c] : vd->fviol[c];

		if (c == PC_CLS_COLLATERAL)
			k = k > vd->refused ? k - vd->refused : 0;
		if (k)
			n += (size_t)snprintf(buf + n, len - n, "%s%s=%llu", n ? " " : "", pc_class_names[c],
					      (unsigned long long)k);
	}
	if (vd->refused && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%s%s=%llu", n ? " " : "", REFUSED_NAME,
				      (unsigned long long)vd->refused);
	if (!n)
		snprintf(buf, len, "%llu violation%s", (unsigned long long)vd->violations,
			 vd->violations == 1 ? "" : "s");
}

/* The board's configuration (campaign.json) as test conditions of its device. */
static void cond_set(struct rep_dev *d, const struct rep_board *bd, const struct verdict *vd)
{
	json_object *c = bd->cfg, *dev = pc_jget(c, "device");

	field_set(&d->cond[COND_EXT_CSD], pc_jget(vd->device, "ext_csd"));
	if (!c)
		return;
	field_set(&d->cond[COND_RECORD_SIZE], pc_jget(dev, "record_size"));
	field_set(&d->cond[COND_REGION], pc_jget(dev, "size"));
	field_set(&d->cond[COND_RECORDS], pc_jget(c, "records_per_cycle"));
	field_set(&d->cond[COND_MODES], pc_jget(c, "modes"));
	field_set(&d->cond[COND_PATTERN], pc_jget(c, "pattern"));
	field_set(&d->cond[COND_FLUSH_EVERY], pc_jget(c, "flush_every"));
	field_set(&d->cond[COND_QD], pc_jget(c, "queue_depth"));
	field_set(&d->cond[COND_CUT], pc_jget(c, "cut"));
	field_set(&d->cond[COND_OFF_MS], pc_jget(c, "off_ms"));
	{
		/* the policy of the modes the board ran, not of every mode */
		json_object *pol = pc_jget(c, "policy"), *modes = pc_jget(c, "modes"), *mine;

		if (!pol || !json_object_is_type(pol, json_type_object) || !modes ||
		    !json_object_is_type(modes, json_type_array)) {
			field_set(&d->cond[COND_POLICY], pol);
			return;
		}
		mine = json_object_new_object();
		for (size_t i = 0; mine && i < json_object_array_length(modes); i++) {
			json_object *mn = json_object_array_get_idx(modes, i), *pm;

			if (json_object_is_type(mn, json_type_string) &&
			    (pm = pc_jget(pol, json_object_get_string(mn))))
				json_object_object_add(mine, json_object_get_string(mn), json_object_get(pm));
		}
		field_set(&d->cond[COND_POLICY], mine);
		json_object_put(mine);
	}
}

/* EXT_CSD's wear as this verdict's HELLO said it: the first, every change
 * (the first REP_WEAR_PTS points kept), and the latest. */
static void wear_add(struct rep_dev *d, const struct verdict *vd, unsigned board)
{
	struct rep_wear w = { .board = board, .cycle = (unsigned long)vd->cycle, .time_ms = vd->time_ms,
			      .a = vd->life_a, .b = vd->life_b, .eol = vd->pre_eol };
	const struct rep_wear *last = d->has_wear ? &d->wear_last : NULL;

	if (!last || last->a != w.a || last->b != w.b || last->eol != w.eol) {
		if (last)
			d->wear_changes++;
		if (d->nwear < REP_WEAR_PTS)
			d->wear[d->nwear++] = w;
	}
	d->wear_last = w;
	d->has_wear = 1;
}

static int cycle_row(struct rep *r, const struct verdict *vd, unsigned board, unsigned dev)
{
	struct rep_cycle *c;

	if (r->ncycles == r->cap_cycles) {
		size_t cap = r->cap_cycles ? r->cap_cycles * 2 : 256;

		c = realloc(r->cycles, cap * sizeof(*c));
		if (!c)
			return -ENOMEM;
		r->cycles = c;
		r->cap_cycles = cap;
	}
	c = &r->cycles[r->ncycles++];
	memset(c, 0, sizeof(*c));
	c->board = board;
	c->dev = dev;
	c->cycle = (unsigned long)vd->cycle;
	c->time_ms = vd->time_ms;
	c->out = (signed char)vd->out;
	c->mode = (signed char)(vd->mode ? pc_mode_from_name(vd->mode) : -1);
	for (int k = 0; k < NCLASS; k++)
		c->counts[k] = vd->counts[k] > UINT32_MAX ? UINT32_MAX : (uint32_t)vd->counts[k];
	c->violations = vd->violations > UINT32_MAX ? UINT32_MAX : (uint32_t)vd->violations;
	c->planned = vd->planned > UINT32_MAX ? UINT32_MAX : (uint32_t)vd->planned;
	c->acked = vd->acked > UINT32_MAX ? UINT32_MAX : (uint32_t)vd->acked;
	c->rate = vd->has_rate ? vd->rate : -1.0;
	c->mib = vd->mib;
	c->lat_n = (uint32_t)vd->lat_n;
	c->lat_p50 = (uint32_t)vd->lat_p50;
	c->lat_p99 = (uint32_t)vd->lat_p99;
	c->lat_max = (uint32_t)vd->lat_max;
	c->phase = (signed char)vd->phase;
	return 0;
}

/* A cycle not judged or whose boot failed, under its reason's group. */
static int reason_add(struct rep_dev *d, const struct verdict *vd)
{
	const char *text = vd->reason && vd->reason[0] ? vd->reason : "no reason recorded";
	char key[512], shown[1024];
	size_t k = 0;
	unsigned i;

	for (const char *p = text; *p && k + 1 < sizeof(key); p++) {
		if (*p >= '0' && *p <= '9') {
			if (!k || key[k - 1] != '#')
				key[k++] = '#';
			continue;
		}
		key[k++] = *p;
	}
	key[k] = 0;
	for (i = 0; i < d->nreasons; i++)
		if (d->reasons[i].out == vd->out && !strcmp(d->reasons[i].key, key))
			break;
	if (i == d->nreasons) {
		if (d->nreasons == REP_REASONS) {
			d->reasons_more++;
			return 0;
		}
		/* for a terminal: a reason may quote what an agent said */
		k = 0;
		for (const char *p = text; *p && k + 1 < sizeof(shown); p++)
			shown[k++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
		shown[k] = 0;
		d->reasons[i].text = strdup(shown);
		d->reasons[i].key = strdup(key);
		if (!d->reasons[i].text || !d->reasons[i].key) {
			free(d->reasons[i].text);
			free(d->reasons[i].key);
			return -ENOMEM;
		}
		d->reasons[i].out = vd->out;
		d->reasons[i].first = d->reasons[i].last = (unsigned long)vd->cycle;
		d->nreasons++;
	}
	d->reasons[i].n++;
	if ((unsigned long)vd->cycle < d->reasons[i].first)
		d->reasons[i].first = (unsigned long)vd->cycle;
	if ((unsigned long)vd->cycle > d->reasons[i].last)
		d->reasons[i].last = (unsigned long)vd->cycle;
	return 0;
}

/* the device's identity as its newest verdict gives it (varies: marked) */
static void ident_set(struct rep_dev *d, const struct verdict *vd)
{
	static const struct {
		int id, queue;	/* the key in "queue", not in "device" */
		const char *key;
	} keys[] = {
		{ ID_NAME, 0, "name" }, { ID_MANFID, 0, "manfid" }, { ID_CID, 0, "cid" },
		{ ID_FUA, 1, "fua" }, { ID_WCACHE, 1, "write_cache" }, { ID_FWREV, 0, "fwrev" },
		{ ID_SERIAL, 0, "serial" }, { ID_TYPE, 0, "type" },
	};

	for (size_t i = 0; i < PC_ARRAY_SIZE(keys); i++)
		field_set(&d->ident[keys[i].id], pc_jget(keys[i].queue ? vd->queue : vd->device, keys[i].key));
	field_set(&d->ident[ID_KERNEL], vd->kernel);
	field_set(&d->ident[ID_AGENT], vd->agent);
	for (int k = 0; k < HW_N; k++)
		field_set(&d->hw[k], pc_jget(vd->device, rep_hw_keys[k]));
}

/* what a verdict tells of its device: identity, conditions, when, where, with what */
static int dev_add(struct rep_dev *d, const struct rep_dir *dd, const struct rep_board *bd, const struct verdict *vd)
{
	d->ncycles++;
	ident_set(d, vd);
	cond_set(d, bd, vd);
	if (vd->time_ms >= 0) {
		if (d->first_ms < 0 || vd->time_ms < d->first_ms)
			d->first_ms = vd->time_ms;
		if (vd->time_ms > d->last_ms)
			d->last_ms = vd->time_ms;
	}
	if ((vd->host && rep_strlist_add(&d->hosts, vd->host)) ||
	    (dd->host && rep_strlist_add(&d->hosts, dd->host)) ||
	    (dd->version && rep_strlist_add(&d->versions, dd->version)))
		return -ENOMEM;
	return 0;
}

/* outcome, findings per class, and what the cut landed on */
static void mode_count(struct rep_mode *m, const struct verdict *vd)
{
	m->out[vd->out]++;
	m->violations += vd->violations;
	if (vd->planned)
		m->worked++;
	/* the cut landed mid-write: something submitted never (fully) landed */
	if (vd->counts[PC_CLS_NOT_WRITTEN] + vd->counts[PC_CLS_TORN] + vd->counts[PC_CLS_TORN_SECTOR] > 0)
		m->inflight++;
	if (vd->counts[PC_CLS_TORN] + vd->counts[PC_CLS_TORN_SECTOR] > 0)
		m->torn_cycles++;
	for (int c = 0; c < NCLASS; c++) {
		/* counts.collateral includes the refused writes: they are shown apart */
		uint64_t cnt = c == PC_CLS_COLLATERAL ? (vd->counts[c] > vd->refused ? vd->counts[c] - vd->refused : 0)
						 : vd->counts[c];
		uint64_t n = pc_class_always_violation((enum pc_class)c) && cnt > vd->fviol[c] ? cnt : vd->fviol[c];

		m->viol[c] += n;
		m->found[c] += cnt;
	}
	m->refused += vd->refused;
	for (unsigned k = 0; k < REP_TEAR_SECTORS; k++)
		m->tears[k] += vd->tears[k];
	m->tears_n += vd->ntears;
	if (vd->phase >= 0 && vd->phase < PH_N)
		m->phase[vd->phase]++;
}

/* speed, latency and what the I/O audit saw reach the device */
static void mode_io(struct rep_mode *m, const struct rep_board *bd, const struct verdict *vd)
{
	if (vd->has_rate && (vd->out == PC_OUT_PASS || vd->out == PC_OUT_FAIL)) {
		m->rate_sum += vd->rate;
		m->rate_n++;
	}
	if (vd->mib >= 0 && (vd->out == PC_OUT_PASS || vd->out == PC_OUT_FAIL)) {
		m->mib_sum += vd->mib;
		m->mib_n++;
	}
	lat_add(&m->lat, vd);
	if (bd->record_sectors > m->record_sectors)
		m->record_sectors = bd->record_sectors;
	if (vd->audit > 0) {
		for (int k = 0; k < PC_NRQ; k++)
			m->rq[k] += vd->rq[k];
		m->audited++;
	} else if (vd->audit < 0) {
		m->audit_unavailable++;
		pc_strlcpy(m->audit_why, vd->audit_why ? vd->audit_why : "", sizeof(m->audit_why));
	}
	m->io_notes += (unsigned long)vd->io_note;
}

/* a cycle that ran another mode than its plan's (relwr on a card without it) */
static void mode_ran_add(struct rep_mode *m, const struct verdict *vd)
{
	unsigned i;

	if (!vd->mode || !vd->mode_run || strcmp(vd->mode, vd->mode_run) == 0)
		return;
	for (i = 0; i < m->nran; i++)
		if (strcmp(m->ran[i].name, vd->mode_run) == 0)
			break;
	if (i == m->nran && m->nran < PC_ARRAY_SIZE(m->ran))
		pc_strlcpy(m->ran[m->nran++].name, vd->mode_run, sizeof(m->ran[0].name));
	if (i < m->nran)
		m->ran[i].n++;
}

int rep_add(struct rep *r, const struct verdict *vd, const char *id)
{
	struct rep_dir *dd = &r->dirs[r->cur];
	struct rep_dev *d;
	struct rep_board *bd;
	struct rep_mode *m;
	char key[512];
	int rc;

	/* a cycle counted once, however many copies of its folder were given */
	snprintf(key, sizeof(key), "%s\x1f%s\x1f%s\x1f%llu", vd->host ? vd->host : "", dd->camp_key, vd->board,
		 (unsigned long long)vd->cycle);
	if ((rc = seen_add(r, key)) < 0)
		return rc;
	if (rc) {
		r->duplicates++;
		return 0;
	}
	d = rep_dev_get(r, id, vd->board);
	if (!d || !(bd = rep_board_get(r, r->cur, vd->board)))
		return -ENOMEM;
	bd->dev = (int)(d - r->devs);
	bd->verdicts++;
	if (vd->cycle > dd->max_cycle)
		dd->max_cycle = vd->cycle;
	if (rep_strlist_add(&d->boards, vd->board) ||
	    (vd->campaign && rep_strlist_add(&d->campaigns, vd->campaign)) ||
	    !(m = rep_mode_get(d, vd->mode ? vd->mode : "")))
		return -ENOMEM;
	if (cycle_row(r, vd, (unsigned)(bd - r->boards), (unsigned)(d - r->devs)))
		return -ENOMEM;
	if (dev_add(d, dd, bd, vd))
		return -ENOMEM;
	mode_count(m, vd);
	mode_io(m, bd, vd);
	if (vd->has_wear)
		wear_add(d, vd, (unsigned)(bd - r->boards));
	if ((vd->out == PC_OUT_INFRA_ERROR || vd->out == PC_OUT_BOOT_FAIL) && reason_add(d, vd))
		return -ENOMEM;
	if (vd->out == PC_OUT_FAIL && m->nfirst_fail < REP_FIRST_FAILS) {
		struct rep_fail_ref *f = &m->first_fail[m->nfirst_fail++];

		f->board = (unsigned)(bd - r->boards);
		f->cycle = (unsigned long)vd->cycle;
		verdict_viol_text(vd, f->what, sizeof(f->what));
	}
	mode_ran_add(m, vd);
	return 0;
}


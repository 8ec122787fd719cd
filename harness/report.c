/*
 * report.c - the per-device report: verdicts.jsonl in, a table (or JSON) out.
 *
 * Cycles are grouped by device identity (verdict.device.id), not by board:
 * the report is about parts, and the same part may sit in different boards
 * or labs, whose results directories merge here. Every file is read and
 * checked before anything is printed, so a damaged file never yields half a
 * report that looks whole.
 *
 * A device is INCOMPLETE, never PASS, when the campaign judged too little:
 * a board of it was given up (give_up events), a board has fewer verdicts
 * than its run planned (run_end events, else campaign.json's cycles), a run
 * is still going or was killed (the folder's lock), or more of its cycles
 * were INFRA_ERROR than campaign.json's incomplete_infra_share allows. FAIL
 * and BOOT_FAIL still win: a proven violation stays one.
 */
#include "report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "../common/record.h"
#include "../common/util.h"
#include "config.h"
#include "verdict.h"
#include "results.h"

#define REP_WIDTH 100

/* Cycle outcomes and record classes: DESIGN section 6 (a contract), named in
 * verdict.h; these are the report's JSON keys for the outcomes. */
static const char *const outcome_keys[PC_NOUTCOMES] = { "pass", "fail", "boot_fail", "infra_error" };
#define NCLASS PC_NCLASSES

/* A device-level finding the engine counts as collateral but the report
 * names on its own: writes the device refused (docs/verdicts.md). */
#define REFUSED_NAME "write_refused"

struct strlist {
	char **v;
	unsigned n;
};

struct rep_ran {
	char name[32];
	unsigned long n;
};

struct rep_mode {
	char name[32];			/* "" when the cycle wrote nothing (boot fail, infra) */
	unsigned long out[PC_NOUTCOMES];
	unsigned long viol[NCLASS];	/* violations per class */
	unsigned long found[NCLASS];	/* findings per class, violation or not */
	unsigned long violations;	/* sum of verdict.violations */
	unsigned long refused;		/* writes the device refused (counted apart from collateral) */
	unsigned long inflight;		/* cycles whose cut caught unacknowledged writes in flight */
	double rate_sum;
	unsigned long rate_n;
	struct rep_ran ran[8];		/* cycles whose mode_run differed from mode */
	unsigned nran;
};

enum { ID_NAME, ID_MANFID, ID_CID, ID_FUA, ID_WCACHE, ID_KERNEL, ID_N };
static const char *const id_keys[ID_N] = { "name", "manfid", "cid", "fua", "write_cache", "kernel" };

struct rep_field {
	json_object *v;		/* latest value seen (a reference), NULL if never */
	int varies;
};

/* One reason why a device is INCOMPLETE. */
struct rep_why {
	char *text;		/* in full, for the device's section */
	char *brief;		/* short, for the summary line */
	json_object *j;		/* for --json */
};

struct rep_dev {
	char *id;		/* verdict.device.id, or NULL: unknown (only boot fails seen) */
	char *key;		/* grouping key */
	struct strlist boards, campaigns;
	struct rep_field ident[ID_N];
	struct rep_mode *modes;
	unsigned nmodes;
	struct rep_why *why;	/* empty: complete */
	unsigned nwhy;
	double limit;		/* incomplete_infra_share (the strictest of its folders) */
};

/* One results folder, and what its companions say. */
struct rep_dir {
	const char *arg;		/* as given */
	char *base;			/* the folder; NULL for a verdicts file not named verdicts.jsonl */
	int has_campaign;		/* campaign.json was there */
	unsigned long cfg_cycles;	/* its config.cycles (0: not recorded) */
	double limit;			/* its config.incomplete_infra_share, or the default */
	unsigned long max_cycle;	/* the highest cycle with a verdict, any board */
};

/* One board of one folder: is its part of the campaign complete? */
struct rep_board {
	unsigned dir;
	char *name;
	int dev;			/* index of the device it held last; -1: no verdict */
	unsigned long verdicts;
	int given_up;			/* a give_up event that no later run_end superseded */
	unsigned long gu_cycle;
	char *gu_reason;
	int has_plan;			/* a run_end event said how many cycles its run planned */
	unsigned long plan;
};

struct rep {
	struct rep_dev *devs;
	unsigned ndevs;
	struct rep_dir *dirs;
	unsigned ndirs;
	struct rep_board *boards;
	unsigned nboards;
	unsigned cur;			/* the folder being read */
	int own_run;			/* the caller is the run holding the folder */
	unsigned long torn_lines;
	char *err;
	size_t errlen;
};

/* Lines of one file still waiting for their device (no device.id on them). */
struct rep_pending {
	json_object *v;
	unsigned long line;
};

/* board -> the device id it last reported, within one file */
struct rep_boardmap {
	struct { char *board, *id; } *v;
	unsigned n;
};

static int strlist_find(const struct strlist *l, const char *s)
{
	for (unsigned i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return (int)i;
	return -1;
}

static int strlist_add(struct strlist *l, const char *s)
{
	char **v;

	if (strlist_find(l, s) >= 0)
		return 0;
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	if (!(l->v[l->n] = strdup(s)))
		return -ENOMEM;
	l->n++;
	return 0;
}

static void strlist_free(struct strlist *l)
{
	for (unsigned i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static json_object *jget(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!o || !json_object_is_type(o, json_type_object))
		return NULL;
	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

__attribute__((format(printf, 4, 5)))
static int rep_fail(struct rep *r, const char *file, unsigned long line, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = line ? snprintf(r->err, r->errlen, "%s:%lu: ", file, line)
		 : snprintf(r->err, r->errlen, "%s: ", file);
	if (n < 0 || (size_t)n >= r->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* ---- one verdict ---- */

/* A verdict line, checked for everything the report uses. */
struct verdict {
	int out;
	const char *board, *campaign, *mode, *mode_run, *id;
	json_object *device, *queue, *kernel;
	uint64_t counts[NCLASS];
	uint64_t fviol[NCLASS];		/* findings marked violation, per class */
	uint64_t refused;		/* refused writes (write_refused findings, with their n) */
	uint64_t violations;
	uint64_t cycle;			/* 0 when the line has none */
	int has_rate;
	double rate;
};

static int opt_string(struct rep *r, const char *file, unsigned long line, json_object *o,
		      const char *key, const char *what, const char **out)
{
	json_object *v = jget(o, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return rep_fail(r, file, line, "%s: expected a string, got %s", what,
				json_type_to_name(json_object_get_type(v)));
	*out = json_object_get_string(v);
	return 0;
}

static int opt_count(struct rep *r, const char *file, unsigned long line, json_object *v,
		     const char *what, uint64_t *out)
{
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return rep_fail(r, file, line, "%s: expected a count (an integer >= 0), got %s", what,
				json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	*out = json_object_get_uint64(v);
	return 0;
}

/* Identity fields are shown as they came: strings or numbers. */
static int check_scalar(struct rep *r, const char *file, unsigned long line, json_object *v, const char *what)
{
	if (!v || json_object_is_type(v, json_type_null) || json_object_is_type(v, json_type_string) ||
	    json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double) ||
	    json_object_is_type(v, json_type_boolean))
		return 0;
	return rep_fail(r, file, line, "%s: expected a string or a number, got %s", what,
			json_type_to_name(json_object_get_type(v)));
}

static int verdict_findings(struct rep *r, const char *file, unsigned long line, json_object *f,
			    struct verdict *vd)
{
	size_t n;

	if (!f || json_object_is_type(f, json_type_null))
		return 0;
	if (!json_object_is_type(f, json_type_array))
		return rep_fail(r, file, line, "findings: expected an array");
	n = json_object_array_length(f);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(f, i), *cls = jget(e, "class"), *vio;

		if (!json_object_is_type(e, json_type_object) || !cls ||
		    !json_object_is_type(cls, json_type_string))
			return rep_fail(r, file, line, "findings[%zu]: expected an object with a \"class\" string", i);
		vio = jget(e, "violation");
		if (vio && !json_object_is_type(vio, json_type_boolean))
			return rep_fail(r, file, line, "findings[%zu].violation: expected true or false", i);
		if (!vio || !json_object_get_boolean(vio))
			continue;
		if (!strcmp(json_object_get_string(cls), "collateral") && jget(e, "what") &&
		    json_object_is_type(jget(e, "what"), json_type_string) &&
		    !strcmp(json_object_get_string(jget(e, "what")), REFUSED_NAME)) {
			/* one finding may stand for n refused writes */
			uint64_t nref = 1;
			char what[64];
			int rc;

			snprintf(what, sizeof(what), "findings[%zu].n", i);
			if ((rc = opt_count(r, file, line, jget(e, "n"), what, &nref)))
				return rc;
			vd->refused += nref;
			continue;
		}
		/* a class from a newer engine is still a violation, just not itemised */
		for (int c = 0; c < NCLASS; c++)
			if (strcmp(json_object_get_string(cls), pc_class_names[c]) == 0)
				vd->fviol[c]++;
	}
	return 0;
}

static int verdict_parse(struct rep *r, const char *file, unsigned long line, json_object *v,
			 struct verdict *vd)
{
	json_object *o, *counts;
	const char *s;
	char what[64];
	int rc;

	memset(vd, 0, sizeof(*vd));
	if (!json_object_is_type(v, json_type_object))
		return rep_fail(r, file, line, "expected a JSON object (one verdict per line)");
	if ((rc = opt_string(r, file, line, v, "verdict", "verdict", &s)))
		return rc;
	if (!s)
		return rep_fail(r, file, line, "missing \"verdict\"");
	for (vd->out = 0; vd->out < PC_NOUTCOMES; vd->out++)
		if (strcmp(s, pc_outcome_names[vd->out]) == 0)
			break;
	if (vd->out == PC_NOUTCOMES)
		return rep_fail(r, file, line, "unknown verdict '%s' (known: PASS FAIL BOOT_FAIL INFRA_ERROR)", s);
	if ((rc = opt_string(r, file, line, v, "board", "board", &vd->board)))
		return rc;
	if (!vd->board)
		return rep_fail(r, file, line, "missing \"board\"");
	if ((rc = opt_string(r, file, line, v, "campaign", "campaign", &vd->campaign)) ||
	    (rc = opt_count(r, file, line, jget(v, "cycle"), "cycle", &vd->cycle)))
		return rc;
	o = jget(v, "mode");
	if (o && !json_object_is_type(o, json_type_null) &&
	    (rc = opt_string(r, file, line, v, "mode", "mode", &vd->mode)))
		return rc;
	o = jget(v, "mode_run");
	if (o && !json_object_is_type(o, json_type_null) &&
	    (rc = opt_string(r, file, line, v, "mode_run", "mode_run", &vd->mode_run)))
		return rc;
	vd->device = jget(v, "device");
	if (vd->device && json_object_is_type(vd->device, json_type_null))
		vd->device = NULL;
	if (vd->device && !json_object_is_type(vd->device, json_type_object))
		return rep_fail(r, file, line, "device: expected an object");
	if ((rc = opt_string(r, file, line, vd->device, "id", "device.id", &vd->id)))
		return rc;
	if (vd->id && !vd->id[0])
		vd->id = NULL;
	if ((rc = check_scalar(r, file, line, jget(vd->device, "name"), "device.name")) ||
	    (rc = check_scalar(r, file, line, jget(vd->device, "manfid"), "device.manfid")) ||
	    (rc = check_scalar(r, file, line, jget(vd->device, "cid"), "device.cid")))
		return rc;
	vd->queue = jget(v, "queue");
	if (vd->queue && json_object_is_type(vd->queue, json_type_null))
		vd->queue = NULL;
	if (vd->queue && !json_object_is_type(vd->queue, json_type_object))
		return rep_fail(r, file, line, "queue: expected an object");
	if ((rc = check_scalar(r, file, line, jget(vd->queue, "fua"), "queue.fua")) ||
	    (rc = check_scalar(r, file, line, jget(vd->queue, "write_cache"), "queue.write_cache")))
		return rc;
	vd->kernel = jget(v, "kernel");
	if ((rc = check_scalar(r, file, line, vd->kernel, "kernel")))
		return rc;
	counts = jget(v, "counts");
	if (counts && !json_object_is_type(counts, json_type_null)) {
		if (!json_object_is_type(counts, json_type_object))
			return rep_fail(r, file, line, "counts: expected an object");
		for (int c = 0; c < NCLASS; c++) {
			snprintf(what, sizeof(what), "counts.%s", pc_class_names[c]);
			if ((rc = opt_count(r, file, line, jget(counts, pc_class_names[c]), what, &vd->counts[c])))
				return rc;
		}
	}
	if ((rc = opt_count(r, file, line, jget(v, "violations"), "violations", &vd->violations)) ||
	    (rc = verdict_findings(r, file, line, jget(v, "findings"), vd)))
		return rc;
	o = jget(jget(v, "rate"), "records_per_s");
	if (o && !json_object_is_type(o, json_type_null)) {
		if (!json_object_is_type(o, json_type_double) && !json_object_is_type(o, json_type_int))
			return rep_fail(r, file, line, "rate.records_per_s: expected a number");
		vd->rate = json_object_get_double(o);
		vd->has_rate = 1;
	}
	return 0;
}

/* ---- accumulating ---- */

static struct rep_dev *rep_dev_get(struct rep *r, const char *id, const char *board)
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
	if (f->v && strcmp(json_object_get_string(f->v), json_object_get_string(v)) != 0)
		f->varies = 1;
	json_object_put(f->v);
	f->v = json_object_get(v);	/* keep the newest: a kernel upgrade shows as the latest */
}

static struct rep_board *rep_board_get(struct rep *r, unsigned dir, const char *name)
{
	struct rep_board *b;

	for (unsigned i = 0; i < r->nboards; i++)
		if (r->boards[i].dir == dir && strcmp(r->boards[i].name, name) == 0)
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

static int rep_add(struct rep *r, const struct verdict *vd, const char *id)
{
	struct rep_dev *d = rep_dev_get(r, id, vd->board);
	struct rep_board *bd;
	struct rep_mode *m;

	if (!d || !(bd = rep_board_get(r, r->cur, vd->board)))
		return -ENOMEM;
	bd->dev = (int)(d - r->devs);
	bd->verdicts++;
	if (vd->cycle > r->dirs[r->cur].max_cycle)
		r->dirs[r->cur].max_cycle = vd->cycle;
	if (strlist_add(&d->boards, vd->board) ||
	    (vd->campaign && strlist_add(&d->campaigns, vd->campaign)) ||
	    !(m = rep_mode_get(d, vd->mode ? vd->mode : "")))
		return -ENOMEM;
	field_set(&d->ident[ID_NAME], jget(vd->device, "name"));
	field_set(&d->ident[ID_MANFID], jget(vd->device, "manfid"));
	field_set(&d->ident[ID_CID], jget(vd->device, "cid"));
	field_set(&d->ident[ID_FUA], jget(vd->queue, "fua"));
	field_set(&d->ident[ID_WCACHE], jget(vd->queue, "write_cache"));
	field_set(&d->ident[ID_KERNEL], vd->kernel);
	m->out[vd->out]++;
	m->violations += vd->violations;
	/* the cut landed mid-write: something submitted never (fully) landed */
	if (vd->counts[PC_CLS_NOT_WRITTEN] + vd->counts[PC_CLS_TORN] + vd->counts[PC_CLS_TORN_SECTOR] > 0)
		m->inflight++;
	for (int c = 0; c < NCLASS; c++) {
		/* counts.collateral includes the refused writes: they are shown apart */
		uint64_t cnt = c == PC_CLS_COLLATERAL ? (vd->counts[c] > vd->refused ? vd->counts[c] - vd->refused : 0)
						 : vd->counts[c];
		uint64_t n = pc_class_always_violation((enum pc_class)c) && cnt > vd->fviol[c] ? cnt : vd->fviol[c];

		m->viol[c] += n;
		m->found[c] += cnt;
	}
	m->refused += vd->refused;
	if (vd->has_rate && (vd->out == PC_OUT_PASS || vd->out == PC_OUT_FAIL)) {
		m->rate_sum += vd->rate;
		m->rate_n++;
	}
	if (vd->mode && vd->mode_run && strcmp(vd->mode, vd->mode_run) != 0) {
		unsigned i;

		for (i = 0; i < m->nran; i++)
			if (strcmp(m->ran[i].name, vd->mode_run) == 0)
				break;
		if (i == m->nran && m->nran < PC_ARRAY_SIZE(m->ran))
			pc_strlcpy(m->ran[m->nran++].name, vd->mode_run, sizeof(m->ran[0].name));
		if (i < m->nran)
			m->ran[i].n++;
	}
	return 0;
}

/* ---- reading one file ---- */

static json_object *parse_line(const char *line, size_t len, const char **why)
{
	struct json_tokener *tok = json_tokener_new();
	json_object *v;
	size_t end;

	*why = "out of memory";
	if (!tok)
		return NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
	v = json_tokener_parse_ex(tok, line, (int)len);
	*why = json_tokener_error_desc(json_tokener_get_error(tok));
	if (!v && json_tokener_get_error(tok) == json_tokener_continue)
		*why = "incomplete JSON object";
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (v && line[end + strspn(line + end, " \t\r")]) {
		json_object_put(v);
		*why = "data after the JSON object";
		return NULL;
	}
	return v;
}

static int blank(const char *s)
{
	return s[strspn(s, " \t\r\n")] == 0;
}

static const char *boardmap_get(const struct rep_boardmap *bm, const char *board)
{
	for (unsigned i = 0; i < bm->n; i++)
		if (strcmp(bm->v[i].board, board) == 0)
			return bm->v[i].id;
	return NULL;
}

static int boardmap_set(struct rep_boardmap *bm, const char *board, const char *id)
{
	char *nid;
	void *nv;
	unsigned i;

	for (i = 0; i < bm->n; i++)
		if (strcmp(bm->v[i].board, board) == 0)
			break;
	if (i < bm->n && strcmp(bm->v[i].id, id) == 0)
		return 0;
	if (!(nid = strdup(id)))
		return -ENOMEM;
	if (i == bm->n) {
		nv = realloc(bm->v, (bm->n + 1) * sizeof(*bm->v));
		if (nv)
			bm->v = nv;
		if (!nv || !(bm->v[i].board = strdup(board))) {
			free(nid);
			return -ENOMEM;
		}
		bm->v[i].id = NULL;
		bm->n++;
	}
	free(bm->v[i].id);
	bm->v[i].id = nid;
	return 0;
}

static void boardmap_free(struct rep_boardmap *bm)
{
	for (unsigned i = 0; i < bm->n; i++) {
		free(bm->v[i].board);
		free(bm->v[i].id);
	}
	free(bm->v);
}

static int rep_line(struct rep *r, const char *file, unsigned long lineno, json_object *v,
		    struct rep_boardmap *bm, struct rep_pending **pend, size_t *npend)
{
	struct rep_pending *p;
	struct verdict vd;
	int rc = verdict_parse(r, file, lineno, v, &vd);

	if (rc)
		return rc;
	if (vd.id) {
		if (boardmap_set(bm, vd.board, vd.id))
			return -ENOMEM;
		return rep_add(r, &vd, vd.id);
	}
	/* A boot failure never met the device: attribute it once the file has
	 * said which device this board holds (a BOOT_FAIL may come first). */
	p = realloc(*pend, (*npend + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*pend = p;
	p[*npend].v = json_object_get(v);
	p[*npend].line = lineno;
	(*npend)++;
	return 0;
}

static int rep_flush_pending(struct rep *r, const char *file, struct rep_boardmap *bm,
			     struct rep_pending *pend, size_t npend)
{
	for (size_t k = 0; k < npend; k++) {
		struct verdict vd;
		int rc = verdict_parse(r, file, pend[k].line, pend[k].v, &vd);

		if (rc || (rc = rep_add(r, &vd, boardmap_get(bm, vd.board))))
			return rc;
	}
	return 0;
}

static int rep_read(struct rep *r, const char *dir)
{
	struct rep_boardmap bm = { NULL, 0 };
	struct rep_pending *pend = NULL;
	size_t npend = 0, cap = 0;
	char *path = NULL, *line = NULL;
	unsigned long lineno = 0;
	struct stat st;
	ssize_t n;
	FILE *f;
	int rc = 0;

	if (stat(dir, &st) == 0 && S_ISREG(st.st_mode))
		path = strdup(dir);
	else if (asprintf(&path, "%s/verdicts.jsonl", dir) < 0)
		path = NULL;
	if (!path)
		return rep_fail(r, dir, 0, "out of memory");
	f = fopen(path, "re");
	if (!f) {
		rc = -errno;
		rep_fail(r, path, 0, "cannot read: %s", strerror(errno));
		goto out;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		json_object *v;
		const char *why;

		lineno++;
		if (line[n - 1] != '\n') {
			/* the harness fsyncs whole lines: no newline means it was cut mid-line */
			if (!blank(line)) {
				pc_warn("%s:%lu: ignoring a torn last line (no newline: the harness stopped "
					"while writing it)", path, lineno);
				r->torn_lines++;
			}
			break;
		}
		line[--n] = 0;
		if (blank(line))
			continue;
		v = parse_line(line, (size_t)n, &why);
		if (!v) {
			rc = rep_fail(r, path, lineno, "not a JSON verdict line: %s", why);
			goto out;
		}
		rc = rep_line(r, path, lineno, v, &bm, &pend, &npend);
		json_object_put(v);
		if (rc)
			goto fail_rc;
	}
	if (ferror(f)) {
		rc = -errno;
		rep_fail(r, path, 0, "cannot read: %s", strerror(errno));
		goto out;
	}
	rc = rep_flush_pending(r, path, &bm, pend, npend);
fail_rc:
	if (rc == -ENOMEM)
		rep_fail(r, path, lineno, "out of memory");
out:
	for (size_t k = 0; k < npend; k++)
		json_object_put(pend[k].v);
	free(pend);
	boardmap_free(&bm);
	free(line);
	if (f)
		fclose(f);
	free(path);
	return rc;
}

/* ---- what a folder's companions say: campaign.json, events.jsonl ---- */

/* campaign.json: the cycles planned, the boards, the INFRA_ERROR limit. */
static int rep_campaign(struct rep *r, struct rep_dir *dd)
{
	json_object *doc, *cfg, *v, *boards;
	char *path = NULL;
	struct stat st;
	uint64_t n;
	int rc = 0;

	if (asprintf(&path, "%s/campaign.json", dd->base) < 0)
		return rep_fail(r, dd->base, 0, "out of memory");
	if (stat(path, &st) != 0) {
		if (errno != ENOENT)
			rc = rep_fail(r, path, 0, "cannot read: %s", strerror(errno));
		free(path);	/* none: a verdicts file from elsewhere, or a folder from long ago */
		return rc;
	}
	doc = json_object_from_file(path);
	if (!doc) {
		rc = rep_fail(r, path, 0, "cannot read it as JSON: %s", json_util_get_last_err());
		free(path);
		return rc;
	}
	cfg = jget(doc, "config");
	if (!cfg || !json_object_is_type(cfg, json_type_object)) {
		rc = rep_fail(r, path, 0, "config: expected an object (the campaign's resolved configuration)");
		goto out;
	}
	dd->has_campaign = 1;
	if ((v = jget(cfg, "cycles"))) {
		if ((rc = opt_count(r, path, 0, v, "config.cycles", &n)))
			goto out;
		dd->cfg_cycles = (unsigned long)n;
	}
	if ((v = jget(cfg, "incomplete_infra_share"))) {
		if ((!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) ||
		    !(json_object_get_double(v) >= 0.0 && json_object_get_double(v) <= 1.0)) {
			rc = rep_fail(r, path, 0, "config.incomplete_infra_share: expected a number from 0 to 1, got %s",
				      json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
			goto out;
		}
		dd->limit = json_object_get_double(v);
	}
	boards = jget(cfg, "boards");
	if (boards && json_object_is_type(boards, json_type_array))
		for (size_t i = 0; i < json_object_array_length(boards); i++) {
			json_object *name = jget(json_object_array_get_idx(boards, i), "name");

			if (name && json_object_is_type(name, json_type_string) &&
			    !rep_board_get(r, (unsigned)(dd - r->dirs), json_object_get_string(name))) {
				rc = rep_fail(r, path, 0, "out of memory");
				goto out;
			}
		}
out:
	json_object_put(doc);
	free(path);
	return rc;
}

/* One give_up or run_end event, in file order: a run_end that does not say
 * the board was given up means a later run took the board on again. */
static int rep_event(struct rep *r, unsigned di, const char *path, unsigned long lineno, json_object *v)
{
	const char *ev = NULL, *board = NULL, *s = NULL;
	struct rep_board *b;
	uint64_t n = 0;
	int rc;

	if (!json_object_is_type(v, json_type_object))
		return rep_fail(r, path, lineno, "expected a JSON object (one event per line)");
	if ((rc = opt_string(r, path, lineno, v, "ev", "ev", &ev)))
		return rc;
	if (!ev || (strcmp(ev, pc_ev_names[PC_EV_GIVE_UP]) && strcmp(ev, pc_ev_names[PC_EV_RUN_END])))
		return 0;	/* another event that merely mentions one */
	if ((rc = opt_string(r, path, lineno, v, "board", "board", &board)))
		return rc;
	if (!board)
		return rep_fail(r, path, lineno, "%s: missing \"board\"", ev);
	if (!(b = rep_board_get(r, di, board)))
		return rep_fail(r, path, lineno, "out of memory");
	if (!strcmp(ev, pc_ev_names[PC_EV_GIVE_UP])) {
		char *why;

		if ((rc = opt_count(r, path, lineno, jget(v, "cycle"), "cycle", &n)) ||
		    (rc = opt_string(r, path, lineno, v, "reason", "reason", &s)))
			return rc;
		if (!(why = strdup(s ? s : "no reason recorded")))
			return rep_fail(r, path, lineno, "out of memory");
		/* for a terminal: the reason may quote what an agent said */
		for (char *p = why; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		free(b->gu_reason);
		b->gu_reason = why;
		b->gu_cycle = (unsigned long)n;
		b->given_up = 1;
		return 0;
	}
	if (!jget(v, "cycles"))
		return rep_fail(r, path, lineno, "run_end: missing \"cycles\"");
	if ((rc = opt_count(r, path, lineno, jget(v, "cycles"), "cycles", &n)) ||
	    (rc = opt_string(r, path, lineno, v, "end", "end", &s)))
		return rc;
	b->has_plan = 1;
	b->plan = (unsigned long)n;
	if (!s || strcmp(s, "given_up"))
		b->given_up = 0;
	return 0;
}

/* events.jsonl: only the give_up and run_end lines, picked out by a plain
 * substring search before any parsing, so a night's worth of events stays
 * quick to read. No file: no such events (an older folder). */
static int rep_events(struct rep *r, unsigned di)
{
	char *path = NULL, *line = NULL;
	unsigned long lineno = 0;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int rc = 0;

	if (asprintf(&path, "%s/events.jsonl", r->dirs[di].base) < 0)
		return rep_fail(r, r->dirs[di].base, 0, "out of memory");
	f = fopen(path, "re");
	if (!f) {
		if (errno != ENOENT)
			rc = rep_fail(r, path, 0, "cannot read: %s", strerror(errno));
		free(path);
		return rc;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		json_object *v;
		const char *why;

		lineno++;
		if (line[n - 1] != '\n')
			break;	/* a torn last line: the harness trims it when it starts again */
		if (!strstr(line, "\"give_up\"") && !strstr(line, "\"run_end\""))
			continue;
		line[--n] = 0;
		v = parse_line(line, (size_t)n, &why);
		if (!v) {
			rc = rep_fail(r, path, lineno, "not a JSON event line: %s", why);
			break;
		}
		rc = rep_event(r, di, path, lineno, v);
		json_object_put(v);
		if (rc)
			break;
	}
	if (!rc && ferror(f))
		rc = rep_fail(r, path, 0, "cannot read: %s", strerror(errno));
	free(line);
	fclose(f);
	free(path);
	return rc;
}

/* One argument: a folder, or a verdicts file (whose folder holds the
 * companions only when the file is the folder's verdicts.jsonl). */
static int rep_folder(struct rep *r, const char *arg)
{
	struct rep_dir *dd;
	struct stat st;
	int rc;

	dd = realloc(r->dirs, (r->ndirs + 1) * sizeof(*dd));
	if (!dd)
		return rep_fail(r, arg, 0, "out of memory");
	r->dirs = dd;
	dd = &r->dirs[r->ndirs];
	memset(dd, 0, sizeof(*dd));
	dd->arg = arg;
	dd->limit = CFG_DEFAULT_INCOMPLETE_INFRA_SHARE;
	r->cur = r->ndirs++;
	if (stat(arg, &st) == 0 && S_ISREG(st.st_mode)) {
		const char *slash = strrchr(arg, '/'), *name = slash ? slash + 1 : arg;

		if (!strcmp(name, "verdicts.jsonl"))
			dd->base = slash ? strndup(arg, slash == arg ? 1 : (size_t)(slash - arg)) : strdup(".");
		if (!strcmp(name, "verdicts.jsonl") && !dd->base)
			return rep_fail(r, arg, 0, "out of memory");
	} else if (!(dd->base = strdup(arg))) {
		return rep_fail(r, arg, 0, "out of memory");
	}
	if ((rc = rep_read(r, arg)))
		return rc;
	if (dd->base && ((rc = rep_campaign(r, dd)) || (rc = rep_events(r, r->cur))))
		return rc;
	return 0;
}

/* ---- totals and results ---- */

static void mode_sum(const struct rep_dev *d, struct rep_mode *t)
{
	memset(t, 0, sizeof(*t));
	pc_strlcpy(t->name, "total", sizeof(t->name));
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];

		for (int o = 0; o < PC_NOUTCOMES; o++)
			t->out[o] += m->out[o];
		for (int c = 0; c < NCLASS; c++) {
			t->viol[c] += m->viol[c];
			t->found[c] += m->found[c];
		}
		t->violations += m->violations;
		t->refused += m->refused;
		t->inflight += m->inflight;
		t->rate_sum += m->rate_sum;
		t->rate_n += m->rate_n;
	}
}

static unsigned long mode_cycles(const struct rep_mode *m)
{
	return m->out[PC_OUT_PASS] + m->out[PC_OUT_FAIL] + m->out[PC_OUT_BOOT_FAIL] + m->out[PC_OUT_INFRA_ERROR];
}

/*
 * FAIL beats BOOT_FAIL beats INCOMPLETE beats PASS: a proven violation or a
 * dead part stays what it is however little else was judged, and a campaign
 * that judged too little (rep_finish) never reads PASS. INFRA_ERROR is the
 * lab's fault, never the device's, but too much of it leaves nothing to hand
 * anyone.
 */
static const char *dev_result(const struct rep_dev *d, const struct rep_mode *t)
{
	if (t->out[PC_OUT_FAIL])
		return "FAIL";
	if (t->out[PC_OUT_BOOT_FAIL])
		return "BOOT_FAIL";
	if (d->nwhy)
		return "INCOMPLETE";
	return "PASS";
}

static int result_code(const char *res)
{
	if (!strcmp(res, "PASS"))
		return REPORT_PASS;
	if (!strcmp(res, "INCOMPLETE"))
		return REPORT_INCOMPLETE;
	return REPORT_FAIL;
}

/* "23.1%", "10%" */
static const char *pct(double share, char *buf, size_t len)
{
	snprintf(buf, len, "%.3g%%", share * 100.0);
	return buf;
}

__attribute__((format(printf, 4, 5)))
static int why_add(struct rep_dev *d, json_object *j, const char *brief, const char *fmt, ...)
{
	struct rep_why *w = realloc(d->why, (d->nwhy + 1) * sizeof(*w));
	va_list ap;
	int n;

	if (!w) {
		json_object_put(j);
		return -ENOMEM;
	}
	d->why = w;
	w = &d->why[d->nwhy];
	memset(w, 0, sizeof(*w));
	va_start(ap, fmt);
	n = vasprintf(&w->text, fmt, ap);
	va_end(ap);
	w->brief = strdup(brief);
	w->j = j;
	if (n < 0 || !w->brief || !j) {
		if (n >= 0)
			free(w->text);
		free(w->brief);
		json_object_put(j);
		return -ENOMEM;
	}
	json_object_object_add(j, "text", json_object_new_string(w->text));
	d->nwhy++;
	return 0;
}

static json_object *why_json(const char *why, const struct rep *r, const struct rep_board *b)
{
	json_object *j = json_object_new_object();

	if (!j)
		return NULL;
	json_object_object_add(j, "why", json_object_new_string(why));
	if (b) {
		json_object_object_add(j, "board", json_object_new_string(b->name));
		json_object_object_add(j, "results", json_object_new_string(r->dirs[b->dir].arg));
	}
	return j;
}

/* Each board: given up, or fewer verdicts than its run planned. */
static int finish_board(struct rep *r, struct rep_board *b)
{
	const struct rep_dir *dd = &r->dirs[b->dir];
	struct rep_dev *d;
	unsigned long plan = 0;
	char where[PATH_MAX + 16] = "", brief[256];
	json_object *j;

	if (b->dev < 0) {
		/* named by campaign.json or an event, never by a verdict */
		if (!(d = rep_dev_get(r, NULL, b->name)) || strlist_add(&d->boards, b->name))
			return -ENOMEM;
		b->dev = (int)(d - r->devs);
	}
	d = &r->devs[b->dev];
	if (d->limit < 0 || dd->limit < d->limit)
		d->limit = dd->limit;
	if (r->ndirs > 1)
		snprintf(where, sizeof(where), " (in %s)", dd->arg);
	/* the plan of the last run that said (run_end); else the configuration,
	 * grown by --cycles as far as any board of the folder got */
	if (b->has_plan)
		plan = b->plan;
	else if (dd->has_campaign)
		plan = dd->cfg_cycles > dd->max_cycle ? dd->cfg_cycles : dd->max_cycle;
	if (b->given_up) {
		snprintf(brief, sizeof(brief), "board %s given up at cycle %lu", b->name, b->gu_cycle);
		if ((j = why_json("given_up", r, b))) {
			json_object_object_add(j, "cycle", json_object_new_int64((int64_t)b->gu_cycle));
			json_object_object_add(j, "reason", json_object_new_string(b->gu_reason));
		}
		return why_add(d, j, brief, "board %s%s given up at cycle %lu: %s", b->name, where, b->gu_cycle,
			       b->gu_reason);
	}
	if (plan && b->verdicts < plan) {
		snprintf(brief, sizeof(brief), "board %s: %lu of %lu cycles", b->name, b->verdicts, plan);
		if ((j = why_json("cycles_missing", r, b))) {
			json_object_object_add(j, "verdicts", json_object_new_int64((int64_t)b->verdicts));
			json_object_object_add(j, "planned", json_object_new_int64((int64_t)plan));
		}
		return why_add(d, j, brief, "board %s%s has verdicts for %lu of the %lu cycles planned", b->name,
			       where, b->verdicts, plan);
	}
	return 0;
}

/* A folder a run still holds, or whose last run was killed: its campaign is
 * not over, whatever its verdicts say so far. */
static int finish_lock(struct rep *r, unsigned di)
{
	struct results_lock_info li;
	char desc[768];
	const char *why, *brief;

	if (!r->dirs[di].base)
		return 0;
	results_lock_probe(r->dirs[di].base, &li);
	if (li.state == RESULTS_LOCK_HELD) {
		why = "running";
		brief = "still running";
	} else if (li.state == RESULTS_LOCK_FREE && li.known && !li.ended) {
		why = "killed";
		brief = "last run killed";
	} else {
		return 0;
	}
	results_lock_describe(&li, desc, sizeof(desc));
	for (unsigned i = 0; i < r->ndevs; i++) {
		unsigned k;
		json_object *j;

		for (k = 0; k < r->nboards; k++)
			if (r->boards[k].dir == di && r->boards[k].dev == (int)i)
				break;
		if (k == r->nboards)
			continue;
		if ((j = why_json(why, r, NULL))) {
			json_object_object_add(j, "results", json_object_new_string(r->dirs[di].arg));
			json_object_object_add(j, "lock", json_object_new_string(desc));
		}
		if (why_add(&r->devs[i], j, brief, "%s (%s: %s)",
			    li.state == RESULTS_LOCK_HELD ? "the campaign is still running" :
			    "the last run was killed before it finished", r->dirs[di].arg, desc))
			return -ENOMEM;
	}
	return 0;
}

/* Too large a share of INFRA_ERROR, or nothing judged at all. */
static int finish_share(struct rep_dev *d)
{
	struct rep_mode t;
	unsigned long cycles, infra;
	char b1[32], b2[32], brief[128];
	json_object *j;

	mode_sum(d, &t);
	cycles = mode_cycles(&t);
	infra = t.out[PC_OUT_INFRA_ERROR];
	if (d->limit < 0)
		d->limit = CFG_DEFAULT_INCOMPLETE_INFRA_SHARE;
	if (cycles && (double)infra / (double)cycles > d->limit) {
		double share = (double)infra / (double)cycles;

		snprintf(brief, sizeof(brief), "%s INFRA_ERROR (limit %s)", pct(share, b1, sizeof(b1)),
			 pct(d->limit, b2, sizeof(b2)));
		if ((j = json_object_new_object())) {
			json_object_object_add(j, "why", json_object_new_string("infra_share"));
			json_object_object_add(j, "infra_error", json_object_new_int64((int64_t)infra));
			json_object_object_add(j, "cycles", json_object_new_int64((int64_t)cycles));
			json_object_object_add(j, "share", json_object_new_double(share));
			json_object_object_add(j, "limit", json_object_new_double(d->limit));
		}
		if (why_add(d, j, brief, "%s of cycles INFRA_ERROR (%lu of %lu; limit %s, incomplete_infra_share)",
			    b1, infra, cycles, b2))
			return -ENOMEM;
	}
	if (!d->nwhy && !t.out[PC_OUT_PASS] && !t.out[PC_OUT_FAIL] && !t.out[PC_OUT_BOOT_FAIL]) {
		/* only when nothing above says so already (a limit of 1 allows all) */
		j = json_object_new_object();
		if (j)
			json_object_object_add(j, "why", json_object_new_string("nothing_judged"));
		if (why_add(d, j, "nothing judged", "no cycle was judged%s",
			    cycles ? " (every verdict INFRA_ERROR)" : ""))
			return -ENOMEM;
	}
	return 0;
}

static int rep_finish(struct rep *r)
{
	int rc;

	for (unsigned i = 0; i < r->nboards; i++)
		if ((rc = finish_board(r, &r->boards[i])))
			return rc;
	if (!r->own_run)
		for (unsigned i = 0; i < r->ndirs; i++)
			if ((rc = finish_lock(r, i)))
				return rc;
	for (unsigned i = 0; i < r->ndevs; i++)
		if ((rc = finish_share(&r->devs[i])))
			return rc;
	return 0;
}

/* The worst device's: what `powercut report` and `run` exit with. Nothing
 * at all to report is nothing judged. */
static int rep_result(struct rep *r)
{
	int res = r->ndevs ? REPORT_PASS : REPORT_INCOMPLETE;

	for (unsigned i = 0; i < r->ndevs; i++) {
		struct rep_mode t;
		int c;

		mode_sum(&r->devs[i], &t);
		c = result_code(dev_result(&r->devs[i], &t));
		if (c == REPORT_FAIL || (c == REPORT_INCOMPLETE && res == REPORT_PASS))
			res = c;
	}
	return res;
}

/* Modes in the order of DESIGN section 5, unknown names after, "no mode" last. */
static int mode_rank(const char *name)
{
	int m;

	if (!name[0])
		return 1000;
	m = pc_mode_from_name(name);
	return m >= 0 ? m : 100;
}

static int mode_cmp(const void *a, const void *b)
{
	const struct rep_mode *x = a, *y = b;
	int d = mode_rank(x->name) - mode_rank(y->name);

	return d ? d : strcmp(x->name, y->name);
}

/* "lost_acked=3 torn=1", or "-" */
static void viol_text(const struct rep_mode *m, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int c = 0; c < NCLASS; c++)
		if (m->viol[c] && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s=%lu", n ? " " : "", pc_class_names[c], m->viol[c]);
	if (m->refused && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%s%s=%lu", n ? " " : "", REFUSED_NAME, m->refused);
	if (!n) {
		if (m->violations)	/* classes this report does not know */
			snprintf(buf, len, "%lu", m->violations);
		else
			snprintf(buf, len, "-");
	}
}

/* ---- table ---- */

static const char *field_text(const struct rep_field *f, char *buf, size_t len)
{
	if (!f->v)
		return "-";
	snprintf(buf, len, "%s%s", json_object_get_string(f->v), f->varies ? " (varies)" : "");
	return buf;
}

static void print_list(FILE *out, const struct strlist *l)
{
	for (unsigned i = 0; i < l->n; i++)
		fprintf(out, "%s%s", i ? ", " : "", l->v[i]);
}

/* The violations column starts at column 63; wrap at word boundaries so the
 * table stays within REP_WIDTH columns. */
static void print_wrapped(FILE *out, const char *text, int col)
{
	const char *p = text;
	int at = col;

	while (*p) {
		size_t w = strcspn(p, " ");

		if (at > col && at + 1 + (int)w > REP_WIDTH) {
			fprintf(out, "\n%*s", col, "");
			at = col;
		} else if (at > col) {
			fputc(' ', out);
			at++;
		}
		fprintf(out, "%.*s", (int)w, p);
		at += (int)w;
		p += w;
		p += strspn(p, " ");
	}
	fputc('\n', out);
}

static void print_row(FILE *out, const struct rep_mode *m, const char *label)
{
	char rate[32], viol[512];

	if (m->rate_n)
		snprintf(rate, sizeof(rate), "%.1f", m->rate_sum / (double)m->rate_n);
	else
		snprintf(rate, sizeof(rate), "-");
	viol_text(m, viol, sizeof(viol));
	fprintf(out, "  %-10s%8lu%6lu%6lu%11lu%7lu%10lu%11s  ", label, mode_cycles(m), m->out[PC_OUT_PASS],
		m->out[PC_OUT_FAIL], m->out[PC_OUT_BOOT_FAIL], m->out[PC_OUT_INFRA_ERROR], m->inflight, rate);
	print_wrapped(out, viol, 73);
}

/* "5 cycles, 1 BOOT_FAIL; violations lost_acked=3" */
static void print_detail(FILE *out, const struct rep_mode *t)
{
	char viol[512];

	fprintf(out, "%lu cycle%s", mode_cycles(t), mode_cycles(t) == 1 ? "" : "s");
	for (int o = PC_OUT_FAIL; o < PC_NOUTCOMES; o++)
		if (t->out[o])
			fprintf(out, ", %lu %s", t->out[o], pc_outcome_names[o]);
	viol_text(t, viol, sizeof(viol));
	if (strcmp(viol, "-") != 0)
		fprintf(out, "; violations %s", viol);
	/* damage whose bytes never reached the host: shown, never guessed */
	if (t->found[PC_CLS_UNCLASSIFIED] > t->viol[PC_CLS_UNCLASSIFIED])
		fprintf(out, "; %lu unclassified (bytes not received)",
			t->found[PC_CLS_UNCLASSIFIED] - t->viol[PC_CLS_UNCLASSIFIED]);
}

static void print_device(FILE *out, struct rep_dev *d)
{
	char b[4][160];
	struct rep_mode t;

	fprintf(out, "device %s (%s ", d->id ? d->id : "unknown", d->boards.n > 1 ? "boards" : "board");
	print_list(out, &d->boards);
	fprintf(out, "; %s%s manfid %s; queue fua=%s write_cache=%s)\n",
		d->ident[ID_NAME].v ? "" : "name ", field_text(&d->ident[ID_NAME], b[0], sizeof(b[0])),
		field_text(&d->ident[ID_MANFID], b[1], sizeof(b[1])),
		field_text(&d->ident[ID_FUA], b[2], sizeof(b[2])),
		field_text(&d->ident[ID_WCACHE], b[3], sizeof(b[3])));
	fprintf(out, "  cid %s; kernel %s\n", field_text(&d->ident[ID_CID], b[0], sizeof(b[0])),
		field_text(&d->ident[ID_KERNEL], b[1], sizeof(b[1])));
	if (!d->id)
		fprintf(out, "  (no agent ever reported this device's identity: only boot failures were seen)\n");
	fprintf(out, "  mode        cycles  PASS  FAIL  BOOT_FAIL  INFRA  in-flight  records/s  violations\n");
	if (d->nmodes)	/* none: a board without verdicts */
		qsort(d->modes, d->nmodes, sizeof(*d->modes), mode_cmp);
	for (unsigned i = 0; i < d->nmodes; i++)
		print_row(out, &d->modes[i], d->modes[i].name[0] ? d->modes[i].name : "-");
	mode_sum(d, &t);
	if (d->nmodes > 1)
		print_row(out, &t, "total");
	for (unsigned i = 0; i < d->nmodes; i++)
		for (unsigned k = 0; k < d->modes[i].nran; k++)
			fprintf(out, "  note: %s ran as %s in %lu cycle%s (see queue fua / write_cache)\n",
				d->modes[i].name, d->modes[i].ran[k].name, d->modes[i].ran[k].n,
				d->modes[i].ran[k].n == 1 ? "" : "s");
	fprintf(out, "  result: %s (", dev_result(d, &t));
	print_detail(out, &t);
	fprintf(out, ")\n");
	/* also under a FAIL: the evidence was incomplete, whatever it proved */
	for (unsigned k = 0; k < d->nwhy; k++) {
		fprintf(out, "  incomplete: ");
		print_wrapped(out, d->why[k].text, 14);
	}
	fprintf(out, "\n");
}

static void print_table(const struct rep *r, FILE *out, const char *const *dirs, int ndirs)
{
	struct rep_mode t;

	fprintf(out, "powercut report: %u device%s from ", r->ndevs, r->ndevs == 1 ? "" : "s");
	for (int i = 0; i < ndirs; i++)
		fprintf(out, "%s%s", i ? ", " : "", dirs[i]);
	fprintf(out, "\n");
	if (r->torn_lines)
		fprintf(out, "(%lu torn last line%s ignored)\n", r->torn_lines, r->torn_lines == 1 ? "" : "s");
	fprintf(out, "\n");
	for (unsigned i = 0; i < r->ndevs; i++)
		print_device(out, &r->devs[i]);
	fprintf(out, "summary\n");
	if (!r->ndevs)
		fprintf(out, "  no verdicts yet\n");
	for (unsigned i = 0; i < r->ndevs; i++) {
		const struct rep_dev *d = &r->devs[i];

		mode_sum(d, &t);
		fprintf(out, "  %-9s %s (", dev_result(d, &t), d->id ? d->id : "unknown device");
		print_list(out, &d->boards);
		fprintf(out, "): ");
		print_detail(out, &t);
		/* why, when that is the result (under a FAIL, the device's section says) */
		for (unsigned k = 0; !strcmp(dev_result(d, &t), "INCOMPLETE") && k < d->nwhy; k++)
			fprintf(out, "%s%s", k ? "; " : "; incomplete: ", d->why[k].brief);
		fprintf(out, "\n");
	}
}

/* ---- JSON ---- */

static json_object *class_obj(const unsigned long *v, unsigned long refused)
{
	json_object *o = json_object_new_object();

	for (int c = 0; c < NCLASS; c++)
		if (v[c])
			json_object_object_add(o, pc_class_names[c], json_object_new_int64((int64_t)v[c]));
	if (refused)
		json_object_object_add(o, REFUSED_NAME, json_object_new_int64((int64_t)refused));
	return o;
}

static void mode_json(json_object *o, const struct rep_mode *m)
{
	json_object_object_add(o, "cycles", json_object_new_int64((int64_t)mode_cycles(m)));
	for (int k = 0; k < PC_NOUTCOMES; k++)
		json_object_object_add(o, outcome_keys[k], json_object_new_int64((int64_t)m->out[k]));
	json_object_object_add(o, "violations", class_obj(m->viol, m->refused));
	json_object_object_add(o, "violation_total", json_object_new_int64((int64_t)m->violations));
	json_object_object_add(o, "cuts_in_flight", json_object_new_int64((int64_t)m->inflight));
	json_object_object_add(o, "findings", class_obj(m->found, m->refused));
	json_object_object_add(o, "records_per_s",
			       m->rate_n ? json_object_new_double(m->rate_sum / (double)m->rate_n) : NULL);
}

static json_object *strlist_json(const struct strlist *l)
{
	json_object *a = json_object_new_array();

	for (unsigned i = 0; i < l->n; i++)
		json_object_array_add(a, json_object_new_string(l->v[i]));
	return a;
}

static json_object *device_json(struct rep_dev *d)
{
	json_object *o = json_object_new_object(), *id = json_object_new_object(), *modes, *why;
	struct rep_mode t;

	json_object_object_add(o, "id", d->id ? json_object_new_string(d->id) : NULL);
	json_object_object_add(o, "boards", strlist_json(&d->boards));
	json_object_object_add(o, "campaigns", strlist_json(&d->campaigns));
	for (int k = 0; k < ID_N; k++)
		json_object_object_add(id, id_keys[k], json_object_get(d->ident[k].v));
	json_object_object_add(o, "identity", id);
	mode_sum(d, &t);
	json_object_object_add(o, "result", json_object_new_string(dev_result(d, &t)));
	why = json_object_new_array();
	for (unsigned k = 0; k < d->nwhy; k++)
		json_object_array_add(why, json_object_get(d->why[k].j));
	json_object_object_add(o, "incomplete", why);
	json_object_object_add(o, "infra_share", mode_cycles(&t) ? json_object_new_double(
		(double)t.out[PC_OUT_INFRA_ERROR] / (double)mode_cycles(&t)) : NULL);
	json_object_object_add(o, "infra_share_limit", json_object_new_double(d->limit));
	mode_json(o, &t);
	modes = json_object_new_array();
	json_object_object_add(o, "modes", modes);
	if (d->nmodes)	/* none: a board without verdicts */
		qsort(d->modes, d->nmodes, sizeof(*d->modes), mode_cmp);
	for (unsigned i = 0; i < d->nmodes; i++) {
		json_object *mo = json_object_new_object(), *ran = json_object_new_object();
		const struct rep_mode *m = &d->modes[i];

		json_object_object_add(mo, "mode", m->name[0] ? json_object_new_string(m->name) : NULL);
		mode_json(mo, m);
		for (unsigned k = 0; k < m->nran; k++)
			json_object_object_add(ran, m->ran[k].name, json_object_new_int64((int64_t)m->ran[k].n));
		json_object_object_add(mo, "ran_as", ran);
		json_object_array_add(modes, mo);
	}
	return o;
}

static int print_json(struct rep *r, FILE *out, const char *const *dirs, int ndirs)
{
	json_object *doc = json_object_new_object(), *a = json_object_new_array(), *devs;

	if (!doc || !a) {
		json_object_put(doc);
		json_object_put(a);
		return -ENOMEM;
	}
	for (int i = 0; i < ndirs; i++)
		json_object_array_add(a, json_object_new_string(dirs[i]));
	json_object_object_add(doc, "results", a);
	json_object_object_add(doc, "result", json_object_new_string(
		rep_result(r) == REPORT_PASS ? "PASS" : rep_result(r) == REPORT_FAIL ? "FAIL" : "INCOMPLETE"));
	json_object_object_add(doc, "torn_lines_ignored", json_object_new_int64((int64_t)r->torn_lines));
	devs = json_object_new_array();
	json_object_object_add(doc, "devices", devs);
	for (unsigned i = 0; i < r->ndevs; i++)
		json_object_array_add(devs, device_json(&r->devs[i]));
	fprintf(out, "%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
							    JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
	return 0;
}

static void rep_free(struct rep *r)
{
	for (unsigned i = 0; i < r->ndevs; i++) {
		struct rep_dev *d = &r->devs[i];

		free(d->id);
		free(d->key);
		strlist_free(&d->boards);
		strlist_free(&d->campaigns);
		for (int k = 0; k < ID_N; k++)
			json_object_put(d->ident[k].v);
		free(d->modes);
		for (unsigned k = 0; k < d->nwhy; k++) {
			free(d->why[k].text);
			free(d->why[k].brief);
			json_object_put(d->why[k].j);
		}
		free(d->why);
	}
	free(r->devs);
	for (unsigned i = 0; i < r->ndirs; i++)
		free(r->dirs[i].base);
	free(r->dirs);
	for (unsigned i = 0; i < r->nboards; i++) {
		free(r->boards[i].name);
		free(r->boards[i].gu_reason);
	}
	free(r->boards);
}

int report_run(const char *const *dirs, int ndirs, FILE *out, const struct report_opts *o, int *result,
	       char *err, size_t errlen)
{
	struct rep r = { .err = err, .errlen = errlen, .own_run = o && o->own_run };
	int rc = 0;

	if (errlen)
		err[0] = 0;
	if (result)
		*result = REPORT_INCOMPLETE;
	if (ndirs < 1) {
		snprintf(err, errlen, "report: no results directory given");
		return -EINVAL;
	}
	for (int i = 0; i < ndirs && !rc; i++)
		rc = rep_folder(&r, dirs[i]);
	if (!rc && (rc = rep_finish(&r)))
		snprintf(err, errlen, "report: out of memory");
	if (!rc && out) {
		if (o && o->json)
			rc = print_json(&r, out, dirs, ndirs);
		else
			print_table(&r, out, dirs, ndirs);
		if (rc)
			snprintf(err, errlen, "report: out of memory");
		else if (fflush(out) != 0 || ferror(out)) {
			rc = -EIO;
			snprintf(err, errlen, "report: cannot write the report: %s", strerror(errno));
		}
	}
	if (!rc && result)
		*result = rep_result(&r);
	rep_free(&r);
	return rc;
}

int report_print(const char *const *dirs, int ndirs, FILE *out, int json, char *err, size_t errlen)
{
	struct report_opts o = { .json = json };

	return report_run(dirs, ndirs, out, &o, NULL, err, errlen);
}

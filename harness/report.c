/*
 * report.c - the per-device report: verdicts.jsonl in, a table (or JSON) out.
 *
 * Cycles are grouped by device identity (verdict.device.id), not by board:
 * the report is about parts, and the same part may sit in different boards
 * or labs, whose results directories merge here. Every file is read and
 * checked before anything is printed, so a damaged file never yields half a
 * report that looks whole.
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

#define REP_WIDTH 100

/* Cycle outcomes and record classes: DESIGN section 6 (a contract). */
enum { OUT_PASS, OUT_FAIL, OUT_BOOT_FAIL, OUT_INFRA, OUT_N };
static const char *const outcome_names[OUT_N] = { "PASS", "FAIL", "BOOT_FAIL", "INFRA_ERROR" };
static const char *const outcome_keys[OUT_N] = { "pass", "fail", "boot_fail", "infra_error" };

#define NCLASS 10
static const char *const class_names[NCLASS] = {
	"intact", "not_written", "lost_acked", "torn", "torn_sector",
	"corrupt", "misdirected", "stale", "collateral", "unreadable",
};
/* Classes that are a violation whenever found; the others only sometimes
 * (acked, or the mode promised atomicity), which only each finding says. */
enum { C_INTACT, C_NOT_WRITTEN, C_LOST_ACKED, C_TORN, C_TORN_SECTOR, C_COLLATERAL = 8 };
static const int class_always[NCLASS] = { 0, 0, 1, 0, 0, 1, 1, 1, 1, 1 };
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
	unsigned long out[OUT_N];
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

struct rep_dev {
	char *id;		/* verdict.device.id, or NULL: unknown (only boot fails seen) */
	char *key;		/* grouping key */
	struct strlist boards, campaigns;
	struct rep_field ident[ID_N];
	struct rep_mode *modes;
	unsigned nmodes;
};

struct rep {
	struct rep_dev *devs;
	unsigned ndevs;
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
			if (strcmp(json_object_get_string(cls), class_names[c]) == 0)
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
	for (vd->out = 0; vd->out < OUT_N; vd->out++)
		if (strcmp(s, outcome_names[vd->out]) == 0)
			break;
	if (vd->out == OUT_N)
		return rep_fail(r, file, line, "unknown verdict '%s' (known: PASS FAIL BOOT_FAIL INFRA_ERROR)", s);
	if ((rc = opt_string(r, file, line, v, "board", "board", &vd->board)))
		return rc;
	if (!vd->board)
		return rep_fail(r, file, line, "missing \"board\"");
	if ((rc = opt_string(r, file, line, v, "campaign", "campaign", &vd->campaign)))
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
			snprintf(what, sizeof(what), "counts.%s", class_names[c]);
			if ((rc = opt_count(r, file, line, jget(counts, class_names[c]), what, &vd->counts[c])))
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

static int rep_add(struct rep *r, const struct verdict *vd, const char *id)
{
	struct rep_dev *d = rep_dev_get(r, id, vd->board);
	struct rep_mode *m;

	if (!d || strlist_add(&d->boards, vd->board) ||
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
	if (vd->counts[C_NOT_WRITTEN] + vd->counts[C_TORN] + vd->counts[C_TORN_SECTOR] > 0)
		m->inflight++;
	for (int c = 0; c < NCLASS; c++) {
		/* counts.collateral includes the refused writes: they are shown apart */
		uint64_t cnt = c == C_COLLATERAL ? (vd->counts[c] > vd->refused ? vd->counts[c] - vd->refused : 0)
						 : vd->counts[c];
		uint64_t n = class_always[c] && cnt > vd->fviol[c] ? cnt : vd->fviol[c];

		m->viol[c] += n;
		m->found[c] += cnt;
	}
	m->refused += vd->refused;
	if (vd->has_rate && (vd->out == OUT_PASS || vd->out == OUT_FAIL)) {
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

/* ---- totals and results ---- */

static void mode_sum(const struct rep_dev *d, struct rep_mode *t)
{
	memset(t, 0, sizeof(*t));
	pc_strlcpy(t->name, "total", sizeof(t->name));
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];

		for (int o = 0; o < OUT_N; o++)
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
	return m->out[OUT_PASS] + m->out[OUT_FAIL] + m->out[OUT_BOOT_FAIL] + m->out[OUT_INFRA];
}

/*
 * FAIL beats BOOT_FAIL beats PASS; INFRA_ERROR is the lab's fault, never the
 * device's. A device with no judged cycle at all has no result to hand anyone.
 */
static const char *dev_result(const struct rep_mode *t)
{
	if (t->out[OUT_FAIL])
		return "FAIL";
	if (t->out[OUT_BOOT_FAIL])
		return "BOOT_FAIL";
	if (t->out[OUT_PASS])
		return "PASS";
	return "NO_DATA";
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
			n += (size_t)snprintf(buf + n, len - n, "%s%s=%lu", n ? " " : "", class_names[c], m->viol[c]);
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
	fprintf(out, "  %-10s%8lu%6lu%6lu%11lu%7lu%10lu%11s  ", label, mode_cycles(m), m->out[OUT_PASS],
		m->out[OUT_FAIL], m->out[OUT_BOOT_FAIL], m->out[OUT_INFRA], m->inflight, rate);
	print_wrapped(out, viol, 73);
}

/* "5 cycles, 1 BOOT_FAIL; violations lost_acked=3" */
static void print_detail(FILE *out, const struct rep_mode *t)
{
	char viol[512];

	fprintf(out, "%lu cycle%s", mode_cycles(t), mode_cycles(t) == 1 ? "" : "s");
	for (int o = OUT_FAIL; o < OUT_N; o++)
		if (t->out[o])
			fprintf(out, ", %lu %s", t->out[o], outcome_names[o]);
	viol_text(t, viol, sizeof(viol));
	if (strcmp(viol, "-") != 0)
		fprintf(out, "; violations %s", viol);
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
	fprintf(out, "  result: %s (", dev_result(&t));
	print_detail(out, &t);
	fprintf(out, ")\n\n");
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
		fprintf(out, "  %-9s %s (", dev_result(&t), d->id ? d->id : "unknown device");
		print_list(out, &d->boards);
		fprintf(out, "): ");
		print_detail(out, &t);
		fprintf(out, "\n");
	}
}

/* ---- JSON ---- */

static json_object *class_obj(const unsigned long *v, unsigned long refused)
{
	json_object *o = json_object_new_object();

	for (int c = 0; c < NCLASS; c++)
		if (v[c])
			json_object_object_add(o, class_names[c], json_object_new_int64((int64_t)v[c]));
	if (refused)
		json_object_object_add(o, REFUSED_NAME, json_object_new_int64((int64_t)refused));
	return o;
}

static void mode_json(json_object *o, const struct rep_mode *m)
{
	json_object_object_add(o, "cycles", json_object_new_int64((int64_t)mode_cycles(m)));
	for (int k = 0; k < OUT_N; k++)
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
	json_object *o = json_object_new_object(), *id = json_object_new_object(), *modes;
	struct rep_mode t;

	json_object_object_add(o, "id", d->id ? json_object_new_string(d->id) : NULL);
	json_object_object_add(o, "boards", strlist_json(&d->boards));
	json_object_object_add(o, "campaigns", strlist_json(&d->campaigns));
	for (int k = 0; k < ID_N; k++)
		json_object_object_add(id, id_keys[k], json_object_get(d->ident[k].v));
	json_object_object_add(o, "identity", id);
	mode_sum(d, &t);
	json_object_object_add(o, "result", json_object_new_string(dev_result(&t)));
	mode_json(o, &t);
	modes = json_object_new_array();
	json_object_object_add(o, "modes", modes);
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
	}
	free(r->devs);
}

int report_print(const char *const *dirs, int ndirs, FILE *out, int json, char *err, size_t errlen)
{
	struct rep r = { .err = err, .errlen = errlen };
	int rc = 0;

	if (errlen)
		err[0] = 0;
	if (ndirs < 1) {
		snprintf(err, errlen, "report: no results directory given");
		return -EINVAL;
	}
	for (int i = 0; i < ndirs && !rc; i++)
		rc = rep_read(&r, dirs[i]);
	if (!rc) {
		if (json)
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
	rep_free(&r);
	return rc;
}

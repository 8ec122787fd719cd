/*
 * report.c - the per-device report: verdicts.jsonl in, struct rep out
 * (report_model.h), then one of the writers (report_text.c: text and
 * Markdown, report_json.c, report_csv.c: CSV and JUnit, report_html.c).
 * The reading side is four files: report_read.c reads a folder (its
 * verdicts.jsonl, campaign.json and events.jsonl), report_verdict.c checks
 * one verdict line, report_add.c counts it into the model, and this file
 * sums, judges (INCOMPLETE), orders and runs it all (report_int.h).
 *
 * Cycles are grouped by device identity (verdict.device.id), not by board:
 * the report is about parts, and the same part may sit in different boards
 * or labs, whose results directories merge here. A cycle is counted once
 * however often it is given: verdicts are de-duplicated on (host id,
 * campaign and its start, board, cycle), and the same folder given twice is
 * read once. Every file is read and checked before anything is printed, so a
 * damaged file never yields half a report that looks whole.
 *
 * A device is INCOMPLETE, never PASS, when the campaign judged too little:
 * a board of it was given up (give_up events), a board has fewer verdicts
 * than its run planned (run_end events, else campaign.json's cycles), a run
 * is still going or was killed (the folder's lock), or more of its cycles
 * were INFRA_ERROR than campaign.json's incomplete_infra_share allows. FAIL
 * and BOOT_FAIL still win: a proven violation stays one.
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
#include "harness/report/qualify.h"
#include "harness/results/limits.h"
#include "harness/results/jsonl.h"
#include "harness/results/results.h"

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

static json_object *why_json(enum pc_incomplete why, const struct rep *r, const struct rep_board *b)
{
	json_object *j = json_object_new_object();

	if (!j)
		return NULL;
	json_object_object_add(j, "why", json_object_new_string(pc_incomplete_names[why]));
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
		if (!(d = rep_dev_get(r, NULL, b->name)) || rep_strlist_add(&d->boards, b->name))
			return -ENOMEM;
		b->dev = (int)(d - r->devs);
	}
	d = &r->devs[b->dev];
	if (d->limit < 0 || dd->limit < d->limit)
		d->limit = dd->limit;
	if (r->ndirs > 1)
		snprintf(where, sizeof(where), " (in %s)", dd->arg);
	if (b->stop_reason) {
		/* why it ran fewer cycles than configured: said, never incomplete */
		char *s = NULL;

		if (asprintf(&s, "%s%s%s", d->stopped ? d->stopped : "", d->stopped ? "; " : "", b->stop_reason) < 0)
			return -ENOMEM;
		free(d->stopped);
		d->stopped = s;
	}
	/* the plan of the last run that said (run_end); else the configuration,
	 * grown by --cycles as far as any board of the folder got */
	if (b->has_plan)
		plan = b->plan;
	else if (dd->has_campaign)
		plan = dd->cfg_cycles > dd->max_cycle ? dd->cfg_cycles : dd->max_cycle;
	if (b->given_up) {
		snprintf(brief, sizeof(brief), "board %s given up at cycle %lu", b->name, b->gu_cycle);
		if ((j = why_json(PC_INC_GIVEN_UP, r, b))) {
			json_object_object_add(j, "cycle", json_object_new_int64((int64_t)b->gu_cycle));
			json_object_object_add(j, "reason", json_object_new_string(b->gu_reason));
		}
		return why_add(d, j, brief, "board %s%s given up at cycle %lu: %s", b->name, where, b->gu_cycle,
			       b->gu_reason);
	}
	if (plan && b->verdicts < plan) {
		snprintf(brief, sizeof(brief), "board %s: %lu of %lu cycles", b->name, b->verdicts, plan);
		if ((j = why_json(PC_INC_CYCLES_MISSING, r, b))) {
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
	enum pc_incomplete why;
	const char *brief;

	if (!r->dirs[di].base)
		return 0;
	results_lock_probe(r->dirs[di].base, &li);
	if (li.state == RESULTS_LOCK_HELD) {
		why = PC_INC_RUNNING;
		brief = "still running";
	} else if (li.state == RESULTS_LOCK_FREE && li.known && !li.ended) {
		why = PC_INC_KILLED;
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

	rep_mode_sum(d, &t);
	cycles = rep_mode_cycles(&t);
	infra = t.out[PC_OUT_INFRA_ERROR];
	if (d->limit < 0)
		d->limit = CFG_DEFAULT_INCOMPLETE_INFRA_SHARE;
	if (cycles && (double)infra / (double)cycles > d->limit) {
		double share = (double)infra / (double)cycles;

		snprintf(brief, sizeof(brief), "%s INFRA_ERROR (limit %s)", pct(share, b1, sizeof(b1)),
			 pct(d->limit, b2, sizeof(b2)));
		if ((j = json_object_new_object())) {
			json_object_object_add(j, "why", json_object_new_string(pc_incomplete_names[PC_INC_INFRA_SHARE]));
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
			json_object_object_add(j, "why", json_object_new_string(pc_incomplete_names[PC_INC_NOTHING_JUDGED]));
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

/* Modes in the order of docs/design.md section 5, unknown names after, "no mode" last. */
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

static const struct rep *sort_r;

static int cycle_cmp(const void *a, const void *b)
{
	const struct rep_cycle *x = a, *y = b;
	int c;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->board != y->board && (c = strcmp(sort_r->boards[x->board].name, sort_r->boards[y->board].name)))
		return c;
	if (x->board != y->board)
		return x->board < y->board ? -1 : 1;
	return x->cycle < y->cycle ? -1 : x->cycle > y->cycle;
}

void rep_sort_cycles(struct rep *r)
{
	sort_r = r;
	if (r->ncycles)
		qsort(r->cycles, r->ncycles, sizeof(*r->cycles), cycle_cmp);
	sort_r = NULL;
}

/* A part: manufacturer, product name, firmware revision. */
static int dev_part(struct rep_dev *d)
{
	char b[3][128];

	free(d->part);
	return asprintf(&d->part, "%s %s %s", rep_field_text(&d->ident[ID_MANFID], b[0], sizeof(b[0])),
			rep_field_text(&d->ident[ID_NAME], b[1], sizeof(b[1])),
			rep_field_text(&d->ident[ID_FWREV], b[2], sizeof(b[2]))) < 0 ? -ENOMEM : 0;
}

static int dev_cmp(const void *a, const void *b)
{
	const struct rep_dev *x = a, *y = b;
	int c = strcmp(x->part, y->part);

	if (c)
		return c;
	/* units known by id first, in id order; then the boards never identified */
	if (!x->id || !y->id)
		return x->id ? -1 : y->id ? 1 : strcmp(x->key, y->key);
	return strcmp(x->id, y->id);
}

/* Modes in the order of docs/design.md section 5, devices grouped by part (the indices of boards and
 * cycle rows follow them), cycles by device, board and cycle. */
static int rep_order(struct rep *r)
{
	unsigned *map;

	for (unsigned i = 0; i < r->ndevs; i++) {
		struct rep_dev *d = &r->devs[i];

		if (d->nmodes)
			qsort(d->modes, d->nmodes, sizeof(*d->modes), mode_cmp);
		if (dev_part(d))
			return -ENOMEM;
		d->ncycles = i;		/* its old index, for the map below; recounted after */
	}
	if (!r->ndevs)
		return 0;
	qsort(r->devs, r->ndevs, sizeof(*r->devs), dev_cmp);
	map = calloc(r->ndevs, sizeof(*map));
	if (!map)
		return -ENOMEM;
	for (unsigned i = 0; i < r->ndevs; i++) {
		map[r->devs[i].ncycles] = i;
		r->devs[i].ncycles = 0;
	}
	for (unsigned i = 0; i < r->nboards; i++)
		if (r->boards[i].dev >= 0)
			r->boards[i].dev = (int)map[r->boards[i].dev];
	for (size_t i = 0; i < r->ncycles; i++) {
		r->cycles[i].dev = map[r->cycles[i].dev];
		r->devs[r->cycles[i].dev].ncycles++;
	}
	free(map);
	rep_sort_cycles(r);
	return 0;
}

void rep_release(struct rep *r)
{
	for (unsigned i = 0; i < r->ndevs; i++) {
		struct rep_dev *d = &r->devs[i];

		free(d->id);
		free(d->key);
		free(d->part);
		rep_strlist_free(&d->boards);
		rep_strlist_free(&d->campaigns);
		rep_strlist_free(&d->hosts);
		rep_strlist_free(&d->versions);
		for (int k = 0; k < ID_N; k++)
			json_object_put(d->ident[k].v);
		for (int k = 0; k < COND_N; k++)
			json_object_put(d->cond[k].v);
		for (int k = 0; k < HW_N; k++)
			json_object_put(d->hw[k].v);
		free(d->modes);
		for (unsigned k = 0; k < d->nwhy; k++) {
			free(d->why[k].text);
			free(d->why[k].brief);
			json_object_put(d->why[k].j);
		}
		free(d->why);
		free(d->stopped);
		for (unsigned k = 0; k < d->nreasons; k++) {
			free(d->reasons[k].text);
			free(d->reasons[k].key);
		}
	}
	free(r->devs);
	for (unsigned i = 0; i < r->nboards; i++) {
		free(r->boards[i].name);
		free(r->boards[i].gu_reason);
		free(r->boards[i].stop_reason);
	}
	free(r->boards);
	for (unsigned i = 0; i < r->ndirs; i++) {
		free(r->dirs[i].base);
		free(r->dirs[i].real);
		free(r->dirs[i].camp_key);
		free(r->dirs[i].host);
		free(r->dirs[i].version);
		json_object_put(r->dirs[i].campaign);
	}
	free(r->dirs);
	free(r->cycles);
	rep_seen_free(r);
}

int report_run(const char *const *dirs, int ndirs, FILE *out, const struct report_opts *o, int *result,
	       char *err, size_t errlen)
{
	struct rep r = { .err = err, .errlen = errlen, .own_run = o && o->own_run, .confidence = 0.95 };
	enum report_format fmt = !o ? REPORT_FMT_TEXT : o->json ? REPORT_FMT_JSON : o->format;
	int rc = 0;

	if (errlen)
		err[0] = 0;
	if (o && o->confidence) {
		if (!(o->confidence >= QUAL_CONF_MIN && o->confidence <= QUAL_CONF_MAX))
			return pc_fail(err, errlen, -EINVAL, "report: confidence %g: expected %g to %g", o->confidence, QUAL_CONF_MIN,
				 QUAL_CONF_MAX);
		r.confidence = o->confidence;
		r.conf_given = 1;
	}
	if (result)
		*result = REPORT_INCOMPLETE;
	if (ndirs < 1)
		return pc_fail(err, errlen, -EINVAL, "report: no results directory given");
	for (int i = 0; i < ndirs && !rc; i++)
		rc = rep_folder(&r, dirs[i]);
	if (!rc && ((rc = rep_finish(&r)) || (rc = rep_order(&r))))
		snprintf(err, errlen, "report: out of memory");
	if (!rc && out) {
		switch (fmt) {
		case REPORT_FMT_JSON: rc = report_json(&r, out, dirs, ndirs); break;
		case REPORT_FMT_MD: rc = report_md(&r, out, dirs, ndirs); break;
		case REPORT_FMT_HTML: rc = report_html(&r, out, dirs, ndirs); break;
		case REPORT_FMT_CSV: rc = report_csv(&r, out); break;
		case REPORT_FMT_JUNIT: rc = report_junit(&r, out); break;
		default: rc = report_text(&r, out, dirs, ndirs); break;
		}
		if (rc == -ENOMEM)
			snprintf(err, errlen, "report: out of memory");
		else if (rc || fflush(out) != 0 || ferror(out)) {
			rc = -EIO;
			snprintf(err, errlen, "report: cannot write the report: %s", strerror(errno));
		}
	}
	if (!rc && result)
		*result = rep_result(&r);
	rep_release(&r);
	return rc;
}

int rep_load(struct rep *r, const char *const *dirs, int ndirs, const struct report_opts *o)
{
	int rc = 0;

	r->own_run = o && o->own_run;
	r->confidence = 0.95;
	if (o && o->confidence) {
		if (!(o->confidence >= QUAL_CONF_MIN && o->confidence <= QUAL_CONF_MAX))
			return rep_fail(r, "report", 0, "confidence %g: expected %g to %g", o->confidence,
					QUAL_CONF_MIN, QUAL_CONF_MAX);
		r->confidence = o->confidence;
		r->conf_given = 1;
	}
	for (int i = 0; i < ndirs && !rc; i++)
		rc = rep_folder(r, dirs[i]);
	if (!rc && ((rc = rep_finish(r)) || (rc = rep_order(r))))
		snprintf(r->err, r->errlen, "report: out of memory");
	return rc;
}

int report_print(const char *const *dirs, int ndirs, FILE *out, int json, char *err, size_t errlen)
{
	struct report_opts o = { .json = json };

	return report_run(dirs, ndirs, out, &o, NULL, err, errlen);
}

int report_format_from_name(const char *s)
{
	static const char *const names[] = { "text", "md", "html", "json", "junit", "csv" };

	for (int i = 0; i < (int)PC_ARRAY_SIZE(names); i++)
		if (!strcmp(s, names[i]))
			return i;
	if (!strcmp(s, "markdown"))
		return REPORT_FMT_MD;
	return -1;
}


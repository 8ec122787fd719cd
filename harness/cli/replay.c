/*
 * replay.c - `powercut replay`: the verdicts must follow from the events.
 */
#include "harness/cli/replay.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"
#include "harness/engine/engine.h"
#include "harness/report/report.h"
#include "harness/report/xml.h"
#include "harness/results/jsonl.h"
#include "harness/results/results.h"
#include "harness/results/verdict.h"

#define DIFF_FIELDS 24		/* fields shown of a board's first differing verdict */
#define DIFF_VALUE 240		/* bytes shown of one value */
#define DIFF_NAMES 4		/* field names in the one-line summary */

struct rp {
	struct engine *eng;
	json_object *recomputed;	/* "board/cycle" -> verdict */
	json_object *recorded;
	struct replay_result *r;
	FILE *out;
	char *err;
	size_t errlen;
	const char *dir;
	/* the recomputed verdicts as results_verdict() writes them, in order:
	 * a recording whose verdicts.jsonl holds exactly these lines agrees
	 * without parsing a line of it */
	char **text;
	size_t ntext, captext;
	int dup;		/* the engine produced two verdicts for one cycle */
	json_object *bmap;	/* board name -> index in boards */
	struct replay_board *boards;
	unsigned nboards, capboards;
};

static const char *board_of(json_object *v)
{
	json_object *b = NULL;

	if (json_object_is_type(v, json_type_object) && json_object_object_get_ex(v, "board", &b) &&
	    json_object_is_type(b, json_type_string))
		return json_object_get_string(b);
	return "?";
}

/* A verdict's cycle, when it is one (0..2^32-1). */
static int cycle_of(json_object *v, uint32_t *cycle)
{
	json_object *c = NULL;

	if (!json_object_is_type(v, json_type_object) || !json_object_object_get_ex(v, "cycle", &c) ||
	    !json_object_is_type(c, json_type_int) || json_object_get_int64(c) < 0 ||
	    json_object_get_uint64(c) > UINT32_MAX)
		return 0;
	*cycle = (uint32_t)json_object_get_uint64(c);
	return 1;
}

/* "7", or the cycle as written when it is not one */
static void cycle_label(json_object *v, char *buf, size_t len)
{
	json_object *c = NULL;
	uint32_t n;

	if (cycle_of(v, &n))
		snprintf(buf, len, "%" PRIu32, n);
	else if (json_object_is_type(v, json_type_object) && json_object_object_get_ex(v, "cycle", &c))
		snprintf(buf, len, "%.40s", json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN));
	else
		snprintf(buf, len, "(none)");
}

/* The board of a verdict, added at its first verdict; its cycle range grows. */
static struct replay_board *board_get(struct rp *p, json_object *v)
{
	const char *name = board_of(v);
	json_object *idx;
	struct replay_board *b;
	uint32_t c;

	if (json_object_object_get_ex(p->bmap, name, &idx)) {
		b = &p->boards[json_object_get_int64(idx)];
	} else {
		if (p->nboards == p->capboards) {
			unsigned cap = p->capboards ? p->capboards * 2 : 8;
			struct replay_board *nb = realloc(p->boards, cap * sizeof(*nb));

			if (!nb)
				return NULL;
			p->boards = nb;
			p->capboards = cap;
		}
		b = &p->boards[p->nboards];
		memset(b, 0, sizeof(*b));
		if (!(b->name = strdup(name)))
			return NULL;
		json_object_object_add(p->bmap, name, json_object_new_int64(p->nboards));
		p->nboards++;
	}
	if (cycle_of(v, &c)) {
		if (!b->has_cycles || c < b->cycle_min)
			b->cycle_min = c;
		if (!b->has_cycles || c > b->cycle_max)
			b->cycle_max = c;
		b->has_cycles = 1;
	}
	return b;
}

static void boards_free(struct replay_board *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		free(b[i].name);
		free(b[i].first);
		free(b[i].first_brief);
	}
	free(b);
}

void replay_result_free(struct replay_result *r)
{
	boards_free(r->boards, r->nboards);
	r->boards = NULL;
	r->nboards = 0;
}

/* "board/cycle". A verdict line is hostile input too: a cycle json-c would
 * saturate (2^63 and 2^64 - 1 would be one key) is kept as written. */
static void key_of(json_object *v, char *key, size_t len)
{
	json_object *b = NULL, *c = NULL;
	const char *board = "?";

	if (json_object_object_get_ex(v, "board", &b) && json_object_is_type(b, json_type_string))
		board = json_object_get_string(b);
	json_object_object_get_ex(v, "cycle", &c);
	if (c && json_object_is_type(c, json_type_int) && json_object_get_int64(c) >= 0 &&
	    json_object_get_uint64(c) <= UINT32_MAX)
		snprintf(key, len, "%.63s/%" PRIu64, board, json_object_get_uint64(c));
	else
		snprintf(key, len, "%.63s/(cycle %.40s)", board,
			 c ? json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN) : "missing");
}

static int on_verdict(json_object *v, void *arg)
{
	struct rp *p = arg;
	struct replay_board *b;
	char key[128];

	key_of(v, key, sizeof(key));
	if (json_object_object_get_ex(p->recomputed, key, NULL)) {
		fprintf(p->out, "engine produced two verdicts for %s\n", key);
		p->dup = 1;
	}
	/* the key names the verdict's text; the object itself is not kept (a
	 * long recording's verdicts would all stay in memory) */
	json_object_object_add(p->recomputed, key, json_object_new_int64((int64_t)p->ntext));
	p->r->recomputed++;
	if (!(b = board_get(p, v)))
		return -ENOMEM;
	b->recomputed++;
	if (p->ntext == p->captext) {
		size_t cap = p->captext ? p->captext * 2 : 1024;
		char **t = realloc(p->text, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		p->text = t;
		p->captext = cap;
	}
	p->text[p->ntext] = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
								       JSON_C_TO_STRING_NOSLASHESCAPE));
	if (!p->text[p->ntext])
		return -ENOMEM;
	p->ntext++;
	return 0;
}

static void refused(struct rp *p, uint64_t lineno)
{
	if (p->r->refused < REPLAY_REFUSED_LINES)
		p->r->refused_line[p->r->refused] = lineno > UINT_MAX ? UINT_MAX : (unsigned)lineno;
	if (p->r->refused < UINT_MAX)
		p->r->refused++;
}

/*
 * events.jsonl through the engine. A line that is not UTF-8 text, not a
 * JSON object or not an event (engine_event_parse: a kind, board, cycle or
 * time missing or out of range) is skipped, said and counted (r->refused):
 * the verdicts the rest make are still compared. A line the reader cannot go past (longer than JSONL_LINE_MAX) or
 * a read error stops it: -errno with err.
 */
static int read_events(struct rp *p, const char *path, int *torn)
{
	struct jsonl j;
	struct jsonl_line l;
	struct engine_event x;
	json_object *ev;
	char why[512];
	int ret;

	*torn = 0;
	if ((ret = jsonl_open(&j, path))) {
		snprintf(p->err, p->errlen, "%s", j.err);
		return ret;
	}
	for (;;) {
		ret = jsonl_next(&j, &l);
		if (ret == 0)
			break;
		/* a bad line the reader has gone past (its number is the last
		 * handed out): skip it; anything else ends the file */
		if (ret < 0 && !(ret == -EINVAL && j.err_line && j.err_line == j.lineno && !j.from)) {
			snprintf(p->err, p->errlen, "%s", j.err);
			goto out;
		}
		if (ret < 0) {
			fprintf(p->out, "%s (line skipped)\n", j.err);
			refused(p, j.err_line);
			continue;
		}
		if (jsonl_blank(l.s, l.len))
			continue;
		ev = jsonl_parse(&j, &l);
		if (ev && !json_object_is_type(ev, json_type_object)) {
			fprintf(p->out, "%s:%" PRIu64 ": a JSON %s, not an object (line skipped)\n", path, l.lineno,
				json_type_to_name(json_object_get_type(ev)));
			json_object_put(ev);
			refused(p, l.lineno);
			continue;
		}
		if (!ev) {
			fprintf(p->out, "%s (line skipped)\n", j.err);
			refused(p, l.lineno);
			continue;
		}
		why[0] = '\0';
		if (engine_event_parse(ev, &x, why, sizeof(why))) {
			fprintf(p->out, "%s:%" PRIu64 ": %s (line skipped)\n", path, l.lineno, why);
			refused(p, l.lineno);
		} else if (engine_feed_event(p->eng, &x, why, sizeof(why))) {
			/* a well-formed event the engine refuses (a HELLO beyond the
			 * board's configuration) was refused live too: the recording's
			 * own, said, not damage */
			fprintf(p->out, "%s:%" PRIu64 ": %s\n", path, l.lineno, why);
		}
		json_object_put(ev);
	}
	*torn = j.torn;
out:
	jsonl_close(&j);
	return ret;
}

static int on_recorded(json_object *v, unsigned lineno, void *arg)
{
	struct rp *p = arg;
	struct replay_board *b;
	char key[128];

	key_of(v, key, sizeof(key));
	if (json_object_object_get_ex(p->recorded, key, NULL)) {
		fprintf(p->out, PC_FILE_VERDICTS ":%u: a second verdict for %s\n", lineno, key);
		p->r->extra++;
	}
	json_object_object_add(p->recorded, key, json_object_get(v));
	p->r->recorded++;
	if (!(b = board_get(p, v)))
		return -ENOMEM;
	b->recorded++;
	return 0;
}

static char *fmt_new(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *fmt_new(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

/* ---- a difference, readable: field by field, "- recorded", "+ recomputed" ---- */

struct dctx {
	FILE *f;
	unsigned n;		/* fields that differ */
	char names[256];	/* the first DIFF_NAMES of them, for the one-line summary */
};

static void put_value(FILE *f, json_object *v)
{
	const char *s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen(s);

	if (n <= DIFF_VALUE)
		fputs(s, f);
	else
		fprintf(f, "%.*s... (%zu bytes)", DIFF_VALUE, s, n);
}

/* one field: its path, then "- recorded" and "+ recomputed" ("(absent)" on
 * the side that lacks it) */
static void diff_field(struct dctx *d, const char *path, json_object *rec, int has_rec, json_object *re, int has_re)
{
	size_t l = strlen(d->names);

	if (!path[0])
		path = "(the whole verdict)";
	d->n++;
	if (d->n <= DIFF_NAMES)
		snprintf(d->names + l, sizeof(d->names) - l, "%s%s", l ? ", " : "", path);
	if (d->n > DIFF_FIELDS)
		return;
	fprintf(d->f, "  %s\n    - ", path);
	if (has_rec)
		put_value(d->f, rec);
	else
		fputs("(absent)", d->f);
	fputs("\n    + ", d->f);
	if (has_re)
		put_value(d->f, re);
	else
		fputs("(absent)", d->f);
	fputc('\n', d->f);
}

static size_t path_add(char *path, size_t len, size_t cap, const char *key, size_t idx, int is_idx)
{
	int n;

	if (len >= cap - 1)
		return len;
	if (is_idx)
		n = snprintf(path + len, cap - len, "[%zu]", idx);
	else
		n = snprintf(path + len, cap - len, "%s%s", len ? "." : "", key);
	return n < 0 ? len : len + (size_t)n >= cap ? cap - 1 : len + (size_t)n;
}

#define PATH_CAP 256

/* The fields of rec (recorded) and re (recomputed) that differ, objects and
 * arrays compared member by member. */
static void diff_rec(struct dctx *d, char *path, size_t len, json_object *rec, json_object *re)
{
	if (json_object_is_type(rec, json_type_object) && json_object_is_type(re, json_type_object)) {
		json_object_object_foreach(rec, k, va) {
			json_object *vb;
			size_t l = path_add(path, len, PATH_CAP, k, 0, 0);

			if (json_object_object_get_ex(re, k, &vb))
				diff_rec(d, path, l, va, vb);
			else
				diff_field(d, path, va, 1, NULL, 0);
			path[len] = '\0';
		}
		json_object_object_foreach(re, k2, vb2) {
			if (json_object_object_get_ex(rec, k2, NULL))
				continue;
			path_add(path, len, PATH_CAP, k2, 0, 0);
			diff_field(d, path, NULL, 0, vb2, 1);
			path[len] = '\0';
		}
		return;
	}
	if (json_object_is_type(rec, json_type_array) && json_object_is_type(re, json_type_array)) {
		size_t na = json_object_array_length(rec), nb = json_object_array_length(re);

		for (size_t i = 0; i < na || i < nb; i++) {
			size_t l = path_add(path, len, PATH_CAP, NULL, i, 1);

			if (i < na && i < nb)
				diff_rec(d, path, l, json_object_array_get_idx(rec, i), json_object_array_get_idx(re, i));
			else if (i < na)
				diff_field(d, path, json_object_array_get_idx(rec, i), 1, NULL, 0);
			else
				diff_field(d, path, NULL, 0, json_object_array_get_idx(re, i), 1);
			path[len] = '\0';
		}
		return;
	}
	if (!json_object_equal(rec, re))
		diff_field(d, path, rec, 1, re, 1);
}

/*
 * A verdict that differs (rec and re), is missing (re only: what says so) or
 * extra (rec only). A board's first is described in full, on out and in
 * b->first; the others only counted, their cycles named in b->more.
 */
static int problem(struct rp *p, struct replay_board *b, json_object *rec, json_object *re, const char *what)
{
	char cyc[48], *buf = NULL;
	size_t len = 0;
	FILE *m;
	struct dctx d = { 0 };

	cycle_label(re ? re : rec, cyc, sizeof(cyc));
	if (b->first) {
		size_t l = strlen(b->more);

		if (b->nmore < REPLAY_MORE_CYCLES)
			snprintf(b->more + l, sizeof(b->more) - l, "%s%s", l ? ", " : "", cyc);
		b->nmore++;
		return 0;
	}
	if (!(m = open_memstream(&buf, &len)))
		return -ENOMEM;
	if (what) {
		fprintf(m, "board %s, cycle %s: %s\n", b->name, cyc, what);
	} else {
		char path[PATH_CAP] = "";

		fprintf(m, "board %s, cycle %s: the verdict differs (- recorded, + recomputed):\n", b->name, cyc);
		d.f = m;
		diff_rec(&d, path, 0, rec, re);
		if (d.n > DIFF_FIELDS)
			fprintf(m, "  ... and %u more fields differ\n", d.n - DIFF_FIELDS);
		if (!d.n)	/* equal as values after all: json_object_equal() said no */
			fprintf(m, "  (no field differs as printed)\n");
	}
	if (fclose(m) || !buf) {
		free(buf);
		return -ENOMEM;
	}
	b->first = buf;
	if (what)
		b->first_brief = fmt_new("cycle %s: %s", cyc, what);
	else if (d.n > DIFF_NAMES)
		b->first_brief = fmt_new("cycle %s: %s and %u more fields", cyc, d.names, d.n - DIFF_NAMES);
	else
		b->first_brief = fmt_new("cycle %s: %s", cyc, d.names);
	if (!b->first_brief)
		return -ENOMEM;
	fprintf(p->out, "replay %s: %s", p->dir, buf);
	return 0;
}

/*
 * Does verdicts.jsonl hold exactly the recomputed verdicts, line for line, as
 * the campaign wrote them? Then they all match and nothing needs parsing (a
 * verdict line is as large as a scan's worth of events). Anything else -- a
 * line edited, reordered, missing, extra, torn, or written by another
 * serialiser -- is left to the comparison by board and cycle.
 */
static int same_text(struct rp *p, const char *path)
{
	struct jsonl j;
	struct jsonl_line l;
	size_t i = 0;
	int same = !p->dup, ret = 0;

	if (jsonl_open(&j, path))
		return 0;
	while (same && (ret = jsonl_next(&j, &l)) == 1) {
		if (i >= p->ntext || l.len != strlen(p->text[i]) || memcmp(l.s, p->text[i], l.len))
			same = 0;
		i++;
	}
	if (same && (ret || j.torn || i != p->ntext))
		same = 0;
	jsonl_close(&j);
	return same;
}

int replay_dir_opts(const char *dir, FILE *out, const struct replay_opts *o, struct replay_result *r, char *err,
		    size_t errlen)
{
	struct rp p = { .r = r, .out = out, .err = err, .errlen = errlen, .dir = dir };
	char path[PATH_MAX + 32];
	json_object *campaign, *name = NULL;
	int torn, ret;

	memset(r, 0, sizeof(*r));
	/* json-c makes and drops millions of small objects here: without
	 * fastbins glibc does not stop to consolidate them at every larger
	 * request (measured: 6% of replay's time) */
	mallopt(M_MXFAST, 0);
	snprintf(path, sizeof(path), "%s/" PC_FILE_CAMPAIGN, dir);
	campaign = json_object_from_file(path);
	if (!campaign) {
		snprintf(err, errlen, "%s: cannot read (is %s a results folder?)", path, dir);
		return -ENOENT;
	}
	json_object_object_get_ex(campaign, "campaign", &name);
	p.eng = engine_new(name && json_object_is_type(name, json_type_string) ? json_object_get_string(name) : "?",
			   on_verdict, NULL, &p);
	if (!p.eng) {
		json_object_put(campaign);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* the boards and their limits, as the live campaign's engine had them;
	 * a folder without a configuration gets the engine's defaults */
	{
		json_object *cfg = NULL;
		json_object *fv = NULL;
		char why[384];
		int major, minor;

		json_object_object_get_ex(campaign, "config", &cfg);
		json_object_object_get_ex(campaign, "format", &fv);
		/* the verdicts are recomputed in the folder's own format; a
		 * newer major one is refused, saying so */
		if (pc_format_read(fv, path, &major, &minor, err, errlen)) {
			json_object_put(campaign);
			engine_free(p.eng);
			return -EINVAL;
		}
		engine_set_format(p.eng, major);
		if (engine_configure(p.eng, cfg, why, sizeof(why))) {
			snprintf(err, errlen, "%s: %s", path, why);
			json_object_put(campaign);
			engine_free(p.eng);
			return -EINVAL;
		}
	}
	json_object_put(campaign);
	p.recomputed = json_object_new_object();
	p.recorded = json_object_new_object();
	p.bmap = json_object_new_object();
	snprintf(path, sizeof(path), "%s/" PC_FILE_EVENTS, dir);
	ret = read_events(&p, path, &torn);
	if (!ret && torn)
		fprintf(out, "%s: ignoring a torn last line\n", path);
	if (!ret && o && o->recomputed) {
		for (size_t i = 0; i < p.ntext; i++)
			fprintf(o->recomputed, "%s\n", p.text[i]);
		if (fflush(o->recomputed) || ferror(o->recomputed)) {
			snprintf(err, errlen, "writing the recomputed verdicts: %s", strerror(errno));
			ret = -EIO;
		}
	}
	snprintf(path, sizeof(path), "%s/" PC_FILE_VERDICTS, dir);
	if (!ret && same_text(&p, path)) {
		r->recorded = r->matched = (unsigned)p.ntext;
		for (unsigned i = 0; i < p.nboards; i++)
			p.boards[i].recorded = p.boards[i].matched = p.boards[i].recomputed;
		goto out;
	}
	if (!ret)
		ret = results_each_line(path, on_recorded, &p, &torn, err, errlen);
	if (!ret) {
		/* the verdicts by board and cycle, from their texts */
		json_object_object_foreach(p.recomputed, k0, idx) {
			int64_t i = json_object_get_int64(idx);
			json_object *v0 = i >= 0 && (size_t)i < p.ntext ? json_tokener_parse(p.text[i]) : NULL;

			if (!v0) {
				snprintf(err, errlen, "%s: a recomputed verdict does not read back", k0);
				ret = -EINVAL;
				break;
			}
			json_object_object_add(p.recomputed, k0, v0);
		}
	}
	/* in the order the engine gave them, then the recorded ones it did
	 * not give; a board's first difference in full, the others by cycle */
	if (!ret) {
		json_object_object_foreach(p.recomputed, k, v) {
			json_object *rec;
			struct replay_board *b = board_get(&p, v);

			if (!b) {
				ret = -ENOMEM;
				break;
			}
			if (!json_object_object_get_ex(p.recorded, k, &rec)) {
				r->missing++;
				b->missing++;
				ret = problem(&p, b, NULL, v, "recomputed but not in " PC_FILE_VERDICTS);
			} else if (!json_object_equal(v, rec)) {
				r->differ++;
				b->differ++;
				ret = problem(&p, b, rec, v, NULL);
			} else {
				r->matched++;
				b->matched++;
			}
			if (ret)
				break;
		}
	}
	if (!ret) {
		json_object_object_foreach(p.recorded, k2, v2) {
			struct replay_board *b;

			if (json_object_object_get_ex(p.recomputed, k2, NULL))
				continue;
			if (!(b = board_get(&p, v2))) {
				ret = -ENOMEM;
				break;
			}
			r->extra++;
			b->extra++;
			if ((ret = problem(&p, b, v2, NULL, "in " PC_FILE_VERDICTS " but not recomputed from the events")))
				break;
		}
	}
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	for (unsigned i = 0; !ret && i < p.nboards; i++)
		if (p.boards[i].nmore)
			fprintf(out, "replay %s: board %s: %u more verdict%s differ%s (cycles %s%s)\n", dir, p.boards[i].name,
				p.boards[i].nmore, p.boards[i].nmore == 1 ? "" : "s", p.boards[i].nmore == 1 ? "s" : "",
				p.boards[i].more, p.boards[i].nmore > REPLAY_MORE_CYCLES ? ", ..." : "");
out:
	for (size_t i = 0; i < p.ntext; i++)
		free(p.text[i]);
	free(p.text);
	json_object_put(p.recomputed);
	json_object_put(p.recorded);
	json_object_put(p.bmap);
	engine_free(p.eng);
	if (o && o->boards && !ret) {
		r->boards = p.boards;
		r->nboards = p.nboards;
	} else {
		boards_free(p.boards, p.nboards);
	}
	return ret;
}

int replay_dir(const char *dir, FILE *out, struct replay_result *r, char *err, size_t errlen)
{
	return replay_dir_opts(dir, out, NULL, r, err, errlen);
}

/* ---- `powercut replay DIR...`: several folders, JUnit XML, the report ---- */

struct folder {
	const char *dir;
	int ret;		/* replay_dir_opts()'s */
	int report_failed;
	int damaged;		/* lines of events.jsonl refused or skipped: err says which */
	char err[1024];
	struct replay_result r;
	double secs;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The last component of a folder's path: "sim-honest" for
 * "tests/recordings/sim-honest/". */
static void base_of(const char *dir, char *buf, size_t len)
{
	size_t n = strlen(dir);
	const char *s;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	s = dir + n;
	while (s > dir && s[-1] != '/')
		s--;
	snprintf(buf, len, "%.*s", (int)(dir + n - s), s);
	if (!buf[0] || !strcmp(buf, ".") || !strcmp(buf, "..") || !strcmp(buf, "/"))
		snprintf(buf, len, "recording");
}

/*
 * The report of a folder's recomputed verdicts: a temporary folder holding
 * them as verdicts.jsonl, with links to the recording's campaign.json and
 * events.jsonl (what report_run() reads beside the verdicts), reported as any
 * results folder is. rd is the temporary folder, made by the caller.
 */
static int report_of(struct folder *fo, const char *rd, FILE *out)
{
	static const char *const companions[] = { PC_FILE_CAMPAIGN, PC_FILE_EVENTS };
	struct report_opts ro = { 0 };
	const char *dirs[1] = { rd };
	char src[PATH_MAX + 32], real[PATH_MAX], dst[PATH_MAX + 32];
	int result;

	for (size_t i = 0; i < PC_ARRAY_SIZE(companions); i++) {
		snprintf(src, sizeof(src), "%s/%s", fo->dir, companions[i]);
		snprintf(dst, sizeof(dst), "%s/%s", rd, companions[i]);
		if (!realpath(src, real) || symlink(real, dst)) {
			snprintf(fo->err, sizeof(fo->err), "%s: %s (for the report)", src, strerror(errno));
			return -1;
		}
	}
	fprintf(out, "replay %s: the report of its verdicts as this powercut recomputes them:\n", fo->dir);
	fflush(out);
	if (report_run(dirs, 1, out, &ro, &result, fo->err, sizeof(fo->err)))
		return -1;
	return 0;
}

static void report_cleanup(const char *tmp, const char *rd)
{
	static const char *const files[] = { PC_FILE_VERDICTS, PC_FILE_CAMPAIGN, PC_FILE_EVENTS };
	char path[PATH_MAX + 32];

	if (rd[0]) {
		for (size_t i = 0; i < PC_ARRAY_SIZE(files); i++) {
			snprintf(path, sizeof(path), "%s/%s", rd, files[i]);
			unlink(path);
		}
		rmdir(rd);
	}
	if (tmp[0])
		rmdir(tmp);
}

static void one_folder(struct folder *fo, FILE *out, const struct replay_cli *o)
{
	struct replay_opts ro = { .boards = 1 };
	char tmp[PATH_MAX] = "", rd[PATH_MAX + 80] = "", base[256], path[PATH_MAX + 128];
	const char *td = getenv("TMPDIR");
	FILE *vf = NULL;
	double t0;

	if (o->report) {
		snprintf(tmp, sizeof(tmp), "%s/powercut-replay.XXXXXX", td && td[0] ? td : "/tmp");
		if (!mkdtemp(tmp)) {
			snprintf(fo->err, sizeof(fo->err), "%s: %s (a temporary folder for the report)", tmp, strerror(errno));
			tmp[0] = '\0';
			fo->ret = -EIO;
			return;
		}
		base_of(fo->dir, base, sizeof(base));
		snprintf(rd, sizeof(rd), "%s/%s", tmp, base);
		snprintf(path, sizeof(path), "%s/" PC_FILE_VERDICTS, rd);
		if (mkdir(rd, 0700) || !(vf = fopen(path, "we"))) {
			snprintf(fo->err, sizeof(fo->err), "%s: %s", path, strerror(errno));
			fo->ret = -EIO;
			goto out;
		}
		ro.recomputed = vf;
	}
	t0 = now_s();
	fo->ret = replay_dir_opts(fo->dir, out, &ro, &fo->r, fo->err, sizeof(fo->err));
	fo->secs = now_s() - t0;
	if (vf && fclose(vf) && !fo->ret) {
		snprintf(fo->err, sizeof(fo->err), "%s: %s", path, strerror(errno));
		fo->ret = -EIO;
	}
	vf = NULL;
	if (fo->ret)
		goto out;
	if (!o->quiet || fo->r.differ || fo->r.missing || fo->r.extra)
		fprintf(out, "replay %s: %u verdicts recomputed, %u match, %u differ, %u missing, %u extra\n", fo->dir,
			fo->r.recomputed, fo->r.matched, fo->r.differ, fo->r.missing, fo->r.extra);
	if (fo->r.refused) {
		unsigned nl = fo->r.refused < REPLAY_REFUSED_LINES ? fo->r.refused : REPLAY_REFUSED_LINES;
		int n = snprintf(fo->err, sizeof(fo->err), "%s/" PC_FILE_EVENTS ": %u line%s refused or skipped (line%s ",
				 fo->dir, fo->r.refused, fo->r.refused == 1 ? "" : "s", fo->r.refused == 1 ? "" : "s");

		for (unsigned i = 0; i < nl && n > 0 && (size_t)n < sizeof(fo->err); i++)
			n += snprintf(fo->err + n, sizeof(fo->err) - (size_t)n, "%s%u", i ? ", " : "",
				      fo->r.refused_line[i]);
		if (n > 0 && (size_t)n < sizeof(fo->err))
			snprintf(fo->err + n, sizeof(fo->err) - (size_t)n,
				 "%s): a damaged or crafted recording; the verdicts above are from the other lines",
				 fo->r.refused > nl ? ", ..." : "");
		fo->damaged = 1;
	}
	if (o->report && report_of(fo, rd, out))
		fo->report_failed = 1;
out:
	if (vf)
		fclose(vf);
	fflush(out);
	report_cleanup(tmp, rd);
}

static void junit_count(struct junit *j, const char *name, unsigned v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%u", v);
	junit_property(j, name, buf);
}

/* A board's first difference, and how many more (NULL: out of memory; free it). */
static char *difference_text(const struct replay_board *b, unsigned nv, int brief)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);

	if (!f)
		return NULL;
	if (brief) {
		if (b->differ)
			fprintf(f, "%u of %u verdicts differ", b->differ, nv);
		if (b->missing)
			fprintf(f, "%s%u recomputed but not recorded", b->differ ? ", " : "", b->missing);
		if (b->extra)
			fprintf(f, "%s%u recorded but not recomputed", b->differ || b->missing ? ", " : "", b->extra);
		fprintf(f, "; first: %s", b->first_brief ? b->first_brief : "");
	} else {
		fputs(b->first, f);
		if (b->nmore)
			fprintf(f, "%u more (cycles %s%s)\n", b->nmore, b->more, b->nmore > REPLAY_MORE_CYCLES ? ", ..." : "");
	}
	if (ferror(f) | fclose(f)) {
		free(s);
		return NULL;
	}
	return s;
}

/* One board of a folder: a testcase, failed at its first difference. */
static int junit_board(struct junit *j, const struct replay_board *b, const char *cls)
{
	unsigned nv = b->recomputed > b->recorded ? b->recomputed : b->recorded;
	char out[256];

	junit_case_begin(j, cls, b->name);
	if (b->first) {
		char *msg = difference_text(b, nv, 1), *text = difference_text(b, nv, 0);

		if (!msg || !text) {
			free(msg);
			free(text);
			return -ENOMEM;
		}
		junit_problem_begin(j, "failure", "replay.difference", msg);
		junit_text(j, text);
		junit_problem_end(j, "failure");
		free(msg);
		free(text);
	}
	if (b->has_cycles)
		snprintf(out, sizeof(out), "%u verdicts, cycles %" PRIu32 "-%" PRIu32 ", %u match", nv, b->cycle_min,
			 b->cycle_max, b->matched);
	else
		snprintf(out, sizeof(out), "%u verdicts, %u match", nv, b->matched);
	junit_system_out(j, out);
	junit_case_end(j);
	return 0;
}

/*
 * JUnit XML: one testsuite per folder, one testcase per board (its first
 * difference in a failure element); a folder that could not be replayed is
 * one testcase with an error element.
 */
static int write_junit(const char *file, const struct folder *fs, int n, char *err, size_t errlen)
{
	FILE *f = fopen(file, "we");
	unsigned tests = 0, failures = 0, errors = 0;
	double secs = 0;
	struct junit j;
	int ret = 0;

	if (!f) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (fs[i].ret || fs[i].report_failed || fs[i].damaged) {
			tests++;
			errors++;
		}
		if (!fs[i].ret) {
			tests += fs[i].r.nboards;
			for (unsigned k = 0; k < fs[i].r.nboards; k++)
				failures += fs[i].r.boards[k].first != NULL;
		}
		secs += fs[i].secs;
	}
	junit_begin(&j, f, "powercut replay", tests, failures, errors, secs);
	for (int i = 0; !ret && i < n; i++) {
		const struct folder *fo = &fs[i];
		const struct replay_result *r = &fo->r;
		unsigned nt = fo->ret ? 0 : r->nboards, nf = 0, ne = fo->ret || fo->report_failed || fo->damaged;
		char cls[256];

		base_of(fo->dir, cls, sizeof(cls));
		for (unsigned k = 0; k < nt; k++)
			nf += r->boards[k].first != NULL;
		junit_suite_begin(&j, fo->dir, nt + ne, nf, ne, fo->secs, NULL);
		if (!fo->ret) {
			junit_count(&j, "verdicts.recomputed", r->recomputed);
			junit_count(&j, "verdicts.recorded", r->recorded);
			junit_count(&j, "verdicts.matched", r->matched);
			junit_count(&j, "verdicts.differ", r->differ);
			junit_count(&j, "verdicts.missing", r->missing);
			junit_count(&j, "verdicts.extra", r->extra);
		}
		for (unsigned k = 0; !ret && k < nt; k++)
			ret = junit_board(&j, &r->boards[k], cls);
		if (ne) {
			junit_case_begin(&j, cls, "replay");
			junit_problem_begin(&j, "error", "replay.error", fo->err);
			junit_problem_end(&j, "error");
			junit_case_end(&j);
		}
		junit_suite_end(&j);
	}
	if (!ret)
		ret = junit_end(&j);
	if (ret | fclose(f)) {
		snprintf(err, errlen, "%s: %s", file, ret == -ENOMEM ? "out of memory" : strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

int replay_main(const char *const *dirs, int ndirs, FILE *out, const struct replay_cli *o)
{
	struct folder *fs = calloc((size_t)ndirs, sizeof(*fs));
	unsigned long tot[6] = { 0 };
	unsigned bad = 0, differ = 0;
	int rc;

	if (!fs) {
		pc_err("out of memory");
		return 2;
	}
	for (int i = 0; i < ndirs; i++) {
		struct folder *fo = &fs[i];

		fo->dir = dirs[i];
		one_folder(fo, out, o);
		if (fo->ret || fo->report_failed || fo->damaged) {
			pc_err("%s", fo->err);
			bad++;
		}
		if (fo->ret)
			continue;
		tot[0] += fo->r.recomputed;
		tot[1] += fo->r.matched;
		tot[2] += fo->r.differ;
		tot[3] += fo->r.missing;
		tot[4] += fo->r.extra;
		tot[5] += fo->r.recorded;
		differ += fo->r.differ || fo->r.missing || fo->r.extra;
	}
	rc = bad ? 2 : differ ? 1 : 0;
	if (ndirs > 1 && (!o->quiet || rc))
		fprintf(out,
			"replay: %d folders, %lu verdicts recomputed, %lu match, %lu differ, %lu missing, %lu extra; "
			"%u folder%s differ%s, %u could not be replayed\n",
			ndirs, tot[0], tot[1], tot[2], tot[3], tot[4], differ, differ == 1 ? "" : "s",
			differ == 1 ? "s" : "", bad);
	fflush(out);
	if (o->junit) {
		char err[1024];

		if (write_junit(o->junit, fs, ndirs, err, sizeof(err))) {
			pc_err("%s", err);
			rc = 2;
		}
	}
	for (int i = 0; i < ndirs; i++)
		replay_result_free(&fs[i].r);
	free(fs);
	return rc;
}

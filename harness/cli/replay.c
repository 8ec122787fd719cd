/*
 * replay.c - `powercut replay`: the verdicts must follow from the events.
 * One folder's verdicts recomputed and compared with the recorded ones;
 * the command over several folders, the report and JUnit is replay_cli.c.
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

/* The key and the text are the verdict's line, as those of the file it is
 * compared with are (key_of, board_get). */
static int on_verdict(const struct pc_verdict *vd, void *arg)
{
	struct rp *p = arg;
	json_object *v = vd->json;
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

/* The folder's campaign.json: the engine made and configured as the live
 * campaign's was. 0, or -errno with p->err (path: campaign.json's). */
static int rp_engine(struct rp *p, const char *path)
{
	json_object *campaign, *name = NULL, *cfg = NULL, *fv = NULL;
	char why[384];
	int major, minor;

	campaign = json_object_from_file(path);
	if (!campaign) {
		snprintf(p->err, p->errlen, "%s: cannot read (is %s a results folder?)", path, p->dir);
		return -ENOENT;
	}
	json_object_object_get_ex(campaign, "campaign", &name);
	p->eng = engine_new(name && json_object_is_type(name, json_type_string) ? json_object_get_string(name) : "?",
			    on_verdict, NULL, p);
	if (!p->eng) {
		json_object_put(campaign);
		snprintf(p->err, p->errlen, "out of memory");
		return -ENOMEM;
	}
	/* the boards and their limits, as the live campaign's engine had them;
	 * a folder without a configuration gets the engine's defaults */
	json_object_object_get_ex(campaign, "config", &cfg);
	json_object_object_get_ex(campaign, "format", &fv);
	/* the verdicts are recomputed in the folder's own format; a
	 * newer major one is refused, saying so */
	if (pc_format_read(fv, path, &major, &minor, p->err, p->errlen)) {
		json_object_put(campaign);
		engine_free(p->eng);
		p->eng = NULL;
		return -EINVAL;
	}
	engine_set_format(p->eng, major);
	if (engine_configure(p->eng, cfg, why, sizeof(why))) {
		snprintf(p->err, p->errlen, "%s: %s", path, why);
		json_object_put(campaign);
		engine_free(p->eng);
		p->eng = NULL;
		return -EINVAL;
	}
	json_object_put(campaign);
	return 0;
}

/* The recomputed verdicts by board and cycle, from their texts. */
static int rp_parse_recomputed(struct rp *p)
{
	json_object_object_foreach(p->recomputed, k0, idx) {
		int64_t i = json_object_get_int64(idx);
		json_object *v0 = i >= 0 && (size_t)i < p->ntext ? json_tokener_parse(p->text[i]) : NULL;

		if (!v0) {
			snprintf(p->err, p->errlen, "%s: a recomputed verdict does not read back", k0);
			return -EINVAL;
		}
		json_object_object_add(p->recomputed, k0, v0);
	}
	return 0;
}

/* In the order the engine gave them, then the recorded ones it did not
 * give; a board's first difference in full, the others by cycle. */
static int rp_compare(struct rp *p)
{
	struct replay_result *r = p->r;
	int ret = 0;

	json_object_object_foreach(p->recomputed, k, v) {
		json_object *rec;
		struct replay_board *b = board_get(p, v);

		if (!b)
			return -ENOMEM;
		if (!json_object_object_get_ex(p->recorded, k, &rec)) {
			r->missing++;
			b->missing++;
			ret = problem(p, b, NULL, v, "recomputed but not in " PC_FILE_VERDICTS);
		} else if (!json_object_equal(v, rec)) {
			r->differ++;
			b->differ++;
			ret = problem(p, b, rec, v, NULL);
		} else {
			r->matched++;
			b->matched++;
		}
		if (ret)
			return ret;
	}
	json_object_object_foreach(p->recorded, k2, v2) {
		struct replay_board *b;

		if (json_object_object_get_ex(p->recomputed, k2, NULL))
			continue;
		if (!(b = board_get(p, v2)))
			return -ENOMEM;
		r->extra++;
		b->extra++;
		if ((ret = problem(p, b, v2, NULL, "in " PC_FILE_VERDICTS " but not recomputed from the events")))
			return ret;
	}
	return 0;
}

/* Write the recomputed verdicts to o->recomputed, one a line. */
static int rp_write_recomputed(struct rp *p, FILE *f)
{
	for (size_t i = 0; i < p->ntext; i++)
		fprintf(f, "%s\n", p->text[i]);
	if (fflush(f) || ferror(f)) {
		snprintf(p->err, p->errlen, "writing the recomputed verdicts: %s", strerror(errno));
		return -EIO;
	}
	return 0;
}

int replay_dir_opts(const char *dir, FILE *out, const struct replay_opts *o, struct replay_result *r, char *err,
		    size_t errlen)
{
	struct rp p = { .r = r, .out = out, .err = err, .errlen = errlen, .dir = dir };
	char path[PATH_MAX + 32];
	int torn, ret;

	memset(r, 0, sizeof(*r));
	/* json-c makes and drops millions of small objects here: without
	 * fastbins glibc does not stop to consolidate them at every larger
	 * request (measured: 6% of replay's time) */
	mallopt(M_MXFAST, 0);
	snprintf(path, sizeof(path), "%s/" PC_FILE_CAMPAIGN, dir);
	ret = rp_engine(&p, path);
	if (ret)
		return ret;
	p.recomputed = json_object_new_object();
	p.recorded = json_object_new_object();
	p.bmap = json_object_new_object();
	snprintf(path, sizeof(path), "%s/" PC_FILE_EVENTS, dir);
	ret = read_events(&p, path, &torn);
	if (!ret && torn)
		fprintf(out, "%s: ignoring a torn last line\n", path);
	if (!ret && o && o->recomputed)
		ret = rp_write_recomputed(&p, o->recomputed);
	snprintf(path, sizeof(path), "%s/" PC_FILE_VERDICTS, dir);
	if (!ret && same_text(&p, path)) {
		r->recorded = r->matched = (unsigned)p.ntext;
		for (unsigned i = 0; i < p.nboards; i++)
			p.boards[i].recorded = p.boards[i].matched = p.boards[i].recomputed;
		goto out;
	}
	if (!ret)
		ret = results_each_line(path, on_recorded, &p, &torn, err, errlen);
	if (!ret)
		ret = rp_parse_recomputed(&p);
	if (!ret)
		ret = rp_compare(&p);
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

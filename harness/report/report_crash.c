/*
 * report_crash.c - what `powercut crash-states` checked, in every report
 * format: per board and write mode, how many crash states the block layer
 * allows were judged and whether the cycles' verdicts held for all of them
 * (docs/crash-states.md). It reads crash-states.jsonl of each results folder
 * through the results reader (one line per cycle; a rerun replaced a
 * cycle's line, and a line given twice counts once, the last). A folder
 * without the file adds nothing to the report. Each writer calls one
 * function here.
 */
#include "harness/report/report_crash.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/record.h"
#include "harness/report/xml.h"
#include "harness/results/results.h"

#define CRASH_FILE	"crash-states.jsonl"
#define CR_MAX_LINES	65536u	/* lines read, all folders together */

enum { F_STATES, F_INJECTED, F_CAUGHT, F_MISMATCHES, F_AND, F_N };
static const char *const f_keys[F_N] = { "states", "injected", "caught", "mismatches", "acked_not_durable" };

#define CR_LEAVES	8u	/* what the designs leave out, distinct phrases kept per row */

/* The image after the cut, judged on its own (observed.state). */
enum { OBS_NONE, OBS_LEGAL, OBS_ILLEGAL, OBS_UNKNOWN, OBS_N };
static const char *const obs_names[OBS_N] = { "", "legal", "illegal", "unknown" };

/* A line's bound (docs/crash-states.md "The bound"): states judged at the cut, of how many. */
struct cbound {
	int have;			/* the line has one (lines of older runs do not) */
	unsigned long judged;
	uint64_t legal;			/* exactly; 0 past 2^64 - 1 */
	double log2;
	unsigned leaves;		/* bits: indexes into the row's leave phrases */
};

struct cline {
	char board[64], mode[16];
	unsigned dir;
	unsigned long cycle, order;
	unsigned long f[F_N];
	int ok;
	struct cbound b;
	int obs;			/* the image after the cut: OBS_* (OBS_NONE: none kept) */
	int obs_disagrees;		/* its verdict judged again is not the recorded one */
	char legal[96];			/* as the line says it: "2^72", "2^70 x 3^1" */
	char leave[CR_LEAVES][112];
	unsigned nleave;
};

/* A board and mode: its cycles' sums. */
struct crow {
	char board[64], mode[16];
	unsigned long cycles, not_ok, f[F_N];
	unsigned long judged, unbounded;	/* states judged at the cut; cycles without a bound */
	uint64_t legal;				/* their legal states, summed exactly (0: past 2^64 - 1) */
	double log2max, log2sum;		/* for a sum past 2^64: log2 of it */
	char legal_s[96];			/* one bounded cycle: its own exact count */
	unsigned long obs[OBS_N], obs_disagree;	/* the images after the cut, by state */
	char leave[CR_LEAVES][112];
	unsigned nleave;
};

struct cread {
	struct cline *v;
	size_t n;
	unsigned dir;
	unsigned long skipped;	/* lines not understood, or past CR_MAX_LINES */
};

static int printable(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n >= max)
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

/* The line's "bound", when it has a whole one: judged, legal_exact (or legal_log2), leaves_out. */
static void line_bound(json_object *o, struct cline *l)
{
	json_object *b, *v, *lo;

	if (!json_object_object_get_ex(o, "bound", &b) || !json_object_object_get_ex(b, "judged", &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
	    json_object_get_int64(v) > UINT32_MAX || !json_object_object_get_ex(b, "legal_log2", &lo))
		return;
	l->b.judged = (unsigned long)json_object_get_int64(v);
	l->b.log2 = json_object_get_double(lo);
	if (!(l->b.log2 >= 0 && l->b.log2 < 1e9))
		return;
	l->b.legal = json_object_object_get_ex(b, "legal_exact", &v) && json_object_is_type(v, json_type_int) &&
		     json_object_get_int64(v) > 0 ? (uint64_t)json_object_get_int64(v) : 0;
	if (json_object_object_get_ex(b, "legal", &v) && json_object_is_type(v, json_type_string) &&
	    printable(json_object_get_string(v), sizeof(l->legal)))
		snprintf(l->legal, sizeof(l->legal), "%s", json_object_get_string(v));
	if (json_object_object_get_ex(b, "leaves_out", &v) && json_object_is_type(v, json_type_array))
		for (size_t i = 0; i < json_object_array_length(v) && l->nleave < CR_LEAVES; i++) {
			const char *t = json_object_get_string(json_object_array_get_idx(v, i));

			if (t && printable(t, sizeof(l->leave[0])))
				snprintf(l->leave[l->nleave++], sizeof(l->leave[0]), "%s", t);
		}
	l->b.have = 1;
}

/* The line's observed image: its state (legal, illegal, unknown), and whether it disagrees. */
static void line_observed(json_object *o, struct cline *l)
{
	json_object *ob, *v;

	if (!json_object_object_get_ex(o, "observed", &ob) || !json_object_object_get_ex(ob, "state", &v))
		return;
	for (int k = OBS_LEGAL; k < OBS_N; k++)
		if (!strcmp(json_object_get_string(v), obs_names[k]))
			l->obs = k;
	l->obs_disagrees = json_object_object_get_ex(ob, "agrees", &v) && !json_object_get_boolean(v);
}

/* A line's bound into its row: sums, and the phrases of what is left out, each once. */
static void row_add_bound(struct crow *w, const struct cline *l)
{
	double x = l->b.log2;

	if (!l->b.have) {
		w->unbounded++;
		w->judged += l->f[F_STATES];
		return;
	}
	int first = w->cycles == 1 + w->unbounded;	/* the row's first line with a bound */
	uint64_t sum = first ? 0 : w->legal;

	w->judged += l->b.judged;
	w->legal = !l->b.legal || (!first && !w->legal) || sum > UINT64_MAX - l->b.legal ? 0 : sum + l->b.legal;
	/* log2 of the sum, kept as max + log2(sum of 2^(x - max)) */
	snprintf(w->legal_s, sizeof(w->legal_s), "%s", first ? l->legal : "");
	if (first) {
		w->log2max = x;
		w->log2sum = 1;
	} else if (x > w->log2max) {
		w->log2sum = w->log2sum * exp2(w->log2max - x) + 1;
		w->log2max = x;
	} else {
		w->log2sum += exp2(x - w->log2max);
	}
	for (unsigned i = 0; i < l->nleave; i++) {
		unsigned k;

		for (k = 0; k < w->nleave && strcmp(w->leave[k], l->leave[i]); k++)
			;
		if (k == w->nleave && k < CR_LEAVES)
			snprintf(w->leave[w->nleave++], sizeof(w->leave[0]), "%s", l->leave[i]);
	}
}

static int on_line(json_object *o, unsigned lineno, void *arg)
{
	struct cread *c = arg;
	struct cline l = { .dir = c->dir, .order = c->n };
	json_object *v;
	const char *b, *m;

	(void)lineno;
	b = json_object_object_get_ex(o, "board", &v) ? json_object_get_string(v) : NULL;
	m = json_object_object_get_ex(o, "mode", &v) ? json_object_get_string(v) : "";
	if (!b || !printable(b, sizeof(l.board)) || (m[0] && pc_mode_from_name(m) < 0) ||
	    !json_object_object_get_ex(o, "cycle", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 1 || json_object_get_int64(v) > UINT32_MAX || c->n >= CR_MAX_LINES) {
		c->skipped++;
		return 0;
	}
	l.cycle = (unsigned long)json_object_get_int64(v);
	for (int i = 0; i < F_N; i++) {
		if (!json_object_object_get_ex(o, f_keys[i], &v) || !json_object_is_type(v, json_type_int) ||
		    json_object_get_int64(v) < 0 || json_object_get_int64(v) > UINT32_MAX) {
			c->skipped++;
			return 0;
		}
		l.f[i] = (unsigned long)json_object_get_int64(v);
	}
	l.ok = json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v);
	line_bound(o, &l);
	line_observed(o, &l);
	snprintf(l.board, sizeof(l.board), "%s", b);
	snprintf(l.mode, sizeof(l.mode), "%s", m[0] ? m : "-");
	c->v[c->n++] = l;
	return 0;
}

/* by folder, board, cycle; the last line of a cycle last */
static int line_cmp(const void *a, const void *b)
{
	const struct cline *x = a, *y = b;
	int c = x->dir != y->dir ? (x->dir < y->dir ? -1 : 1) : strcmp(x->board, y->board);

	if (c)
		return c;
	if (x->cycle != y->cycle)
		return x->cycle < y->cycle ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* by board, then mode */
static int row_cmp(const void *a, const void *b)
{
	const struct crow *x = a, *y = b;
	int c = strcmp(x->board, y->board);

	return c ? c : pc_mode_from_name(x->mode) - pc_mode_from_name(y->mode);
}

/* The rows of every folder's crash-states.jsonl (*rows NULL, *n 0: none). 0 or -ENOMEM. */
static int crash_rows(const struct rep *r, struct crow **rows, size_t *n, unsigned long *skipped)
{
	struct cread c = { NULL, 0, 0, 0 };
	struct crow *w = NULL;
	size_t nw = 0;

	*rows = NULL;
	*n = 0;
	for (unsigned d = 0; d < r->ndirs; d++) {
		char path[PATH_MAX + 32], err[256] = "";

		if (!r->dirs[d].base || r->dirs[d].dup_of >= 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", r->dirs[d].base, CRASH_FILE);
		if (access(path, F_OK))
			continue;
		if (!c.v && !(c.v = calloc(CR_MAX_LINES, sizeof(*c.v))))
			return -ENOMEM;
		c.dir = d;
		if (results_each_line(path, on_line, &c, NULL, err, sizeof(err)))
			c.skipped++;	/* a malformed line ends that file: what came before counts */
	}
	if (c.n)
		qsort(c.v, c.n, sizeof(*c.v), line_cmp);
	for (size_t i = 0; i < c.n; i++) {
		const struct cline *l = &c.v[i];
		size_t k;

		if (i + 1 < c.n && l->dir == c.v[i + 1].dir && !strcmp(l->board, c.v[i + 1].board) &&
		    l->cycle == c.v[i + 1].cycle)
			continue;	/* a later line of the same cycle replaces it */
		for (k = 0; k < nw && (strcmp(w[k].board, l->board) || strcmp(w[k].mode, l->mode)); k++)
			;
		if (k == nw) {
			struct crow *t = realloc(w, (nw + 1) * sizeof(*w));

			if (!t) {
				free(w);
				free(c.v);
				return -ENOMEM;
			}
			w = t;
			memset(&w[nw], 0, sizeof(*w));
			snprintf(w[nw].board, sizeof(w[nw].board), "%s", l->board);
			snprintf(w[nw].mode, sizeof(w[nw].mode), "%s", l->mode);
			nw++;
		}
		w[k].cycles++;
		w[k].not_ok += !l->ok;
		for (int f = 0; f < F_N; f++)
			w[k].f[f] += l->f[f];
		row_add_bound(&w[k], l);
		w[k].obs[l->obs]++;
		w[k].obs_disagree += l->obs_disagrees;
	}
	free(c.v);
	if (nw)
		qsort(w, nw, sizeof(*w), row_cmp);
	*rows = w;
	*n = nw;
	*skipped = c.skipped;
	return 0;
}

/* The legal states at the cut, summed over the row's cycles: exactly ("2^16", "131072"), or "about
 * 2^x" past 2^64. */
static void row_legal(const struct crow *w, char *buf, size_t len)
{
	if (w->legal_s[0])
		snprintf(buf, len, "%s", w->legal_s);
	else if (w->legal && !(w->legal & (w->legal - 1)) && w->legal >= 1024)
		snprintf(buf, len, "2^%d", __builtin_ctzll(w->legal));
	else if (w->legal)
		snprintf(buf, len, "%" PRIu64, w->legal);
	else
		snprintf(buf, len, "about 2^%.1f", w->log2max + log2(w->log2sum));
}

/* "this cycle's verdict holds for the 512 crash states judged of 2^16 the block layer allows at the
 * cut (not judged: ...); 24 illegal states injected, 24 caught", or what went wrong. */
static void row_sentence(const struct crow *w, char *buf, size_t len)
{
	char legal[48], left[CR_LEAVES * 114] = "";
	int all = w->legal && w->judged >= w->legal && !w->unbounded;
	size_t n;

	row_legal(w, legal, sizeof(legal));
	for (unsigned i = 0; i < w->nleave; i++) {
		n = strlen(left);
		snprintf(left + n, sizeof(left) - n, "%s%s", i ? "; " : "", w->leave[i]);
	}
	if (w->unbounded)
		n = (size_t)snprintf(buf, len, "%s the %lu crash states judged (%lu cycle%s without a recorded bound)",
				     w->not_ok ? "NOT all as the verdicts say:" : w->cycles == 1 ?
				     "this cycle's verdict holds for" : "these cycles' verdicts hold for", w->judged,
				     w->unbounded, w->unbounded == 1 ? "" : "s");
	else if (!w->not_ok && all)
		n = (size_t)snprintf(buf, len, "%s for all %lu crash state%s the block layer allows at the cut%s%s%s",
				     w->cycles == 1 ? "this cycle's verdict holds" : "these cycles' verdicts hold",
				     w->judged, w->judged == 1 ? "" : "s", left[0] ? " (not judged: " : "", left,
				     left[0] ? ")" : "");
	else if (!w->not_ok)
		n = (size_t)snprintf(buf, len, "%s for the %lu crash state%s judged of %s the block layer allows at the "
				     "cut%s%s%s", w->cycles == 1 ? "this cycle's verdict holds" :
				     "these cycles' verdicts hold", w->judged, w->judged == 1 ? "" : "s", legal,
				     left[0] ? " (not judged: " : "", left, left[0] ? ")" : "");
	else
		n = (size_t)snprintf(buf, len, "%lu crash states judged of %s at the cut, NOT all as the verdict%s",
				     w->judged, legal, w->cycles == 1 ? " says" : "s say");
	if (n < len && w->f[F_STATES] > w->judged)
		n += (size_t)snprintf(buf + n, len - n, "; and %lu state%s at earlier persistence points (the log's "
				      "prefix)", w->f[F_STATES] - w->judged, w->f[F_STATES] - w->judged == 1 ? "" : "s");
	if (n >= len)
		return;
	if (!w->not_ok)
		snprintf(buf + n, len - n, "; %lu illegal state%s injected, %lu caught", w->f[F_INJECTED],
			 w->f[F_INJECTED] == 1 ? "" : "s", w->f[F_CAUGHT]);
	else
		snprintf(buf + n, len - n, ": %lu mismatch%s, %lu acknowledged record%s not durable, %lu of %lu illegal "
			 "states caught", w->f[F_MISMATCHES], w->f[F_MISMATCHES] == 1 ? "" : "es", w->f[F_AND],
			 w->f[F_AND] == 1 ? "" : "s", w->f[F_CAUGHT], w->f[F_INJECTED]);
}

/* Markdown and HTML cells hold board names: no markup passes. */
static void md_text(FILE *out, const char *s)
{
	for (; *s; s++)
		fprintf(out, strchr("|\\`*_[]<>#", *s) ? "\\%c" : "%c", *s);
}

static void print_rows(FILE *out, enum report_format fmt, const struct crow *w, size_t n, unsigned long skipped)
{
	char s[1200];

	if (fmt == REPORT_FMT_HTML)
		fputs("<section class=\"crash-states\">\n<h2>Crash states checked</h2>\n<p class=\"muted\">powercut "
		      "crash-states: every crash state the block layer allows for each cycle whose inputs were kept, "
		      "scanned and judged (docs/crash-states.md).</p>\n<table>\n<tr><th>board</th><th>mode</th>"
		      "<th>cycles</th><th>crash states</th><th>illegal injected</th><th>caught</th>"
		      "<th>mismatches</th><th>acked not durable</th><th>verdict</th></tr>\n", out);
	else if (fmt == REPORT_FMT_MD)
		fputs("\n## Crash states checked\n\npowercut crash-states (docs/crash-states.md).\n\n| board | mode | "
		      "cycles | crash states | illegal injected | caught | mismatches | acked not durable | verdict |\n"
		      "|---|---|---|---|---|---|---|---|---|\n", out);
	else
		fputs("== crash states checked (powercut crash-states; docs/crash-states.md) ==\n\n", out);
	for (size_t i = 0; i < n; i++) {
		row_sentence(&w[i], s, sizeof(s));
		if (fmt == REPORT_FMT_HTML) {
			fputs("<tr><td>", out);
			xml_escape(out, w[i].board);
			fprintf(out, "</td><td>%s</td><td>%lu</td><td>%lu</td><td>%lu</td><td>%lu</td><td>%lu</td>"
				"<td>%lu</td><td>", w[i].mode, w[i].cycles, w[i].f[F_STATES], w[i].f[F_INJECTED],
				w[i].f[F_CAUGHT], w[i].f[F_MISMATCHES], w[i].f[F_AND]);
			xml_escape(out, s);
			fputs("</td></tr>\n", out);
		} else if (fmt == REPORT_FMT_MD) {
			fputs("| ", out);
			md_text(out, w[i].board);
			fprintf(out, " | %s | %lu | %lu | %lu | %lu | %lu | %lu | %s |\n", w[i].mode, w[i].cycles,
				w[i].f[F_STATES], w[i].f[F_INJECTED], w[i].f[F_CAUGHT], w[i].f[F_MISMATCHES],
				w[i].f[F_AND], s);
		} else {
			fprintf(out, "  board %s, mode %s, %lu cycle%s: %s\n", w[i].board, w[i].mode, w[i].cycles,
				w[i].cycles == 1 ? "" : "s", s);
			if (w[i].cycles > w[i].obs[OBS_NONE])
				fprintf(out, "    observed after the cut: %lu legal, %lu illegal, %lu unknown; %lu not "
					"judged as verdicts.jsonl says\n", w[i].obs[OBS_LEGAL], w[i].obs[OBS_ILLEGAL],
					w[i].obs[OBS_UNKNOWN], w[i].obs_disagree);
		}
	}
	if (fmt == REPORT_FMT_HTML)
		fputs("</table>\n", out);
	if (skipped)
		fprintf(out, fmt == REPORT_FMT_HTML ? "<p class=\"muted\">(%lu line%s of " CRASH_FILE " not read)</p>\n" :
			"\n(%lu line%s of " CRASH_FILE " not read)\n", skipped, skipped == 1 ? "" : "s");
	fputs(fmt == REPORT_FMT_HTML ? "</section>\n" : "\n", out);
}

int rep_crash_print(const struct rep *r, FILE *out, enum report_format fmt)
{
	struct crow *w;
	size_t n;
	unsigned long skipped = 0;
	int rc = crash_rows(r, &w, &n, &skipped);

	if (rc)
		return rc;
	if (n || skipped)
		print_rows(out, fmt, w, n, skipped);
	free(w);
	return ferror(out) ? -EIO : 0;
}

int rep_crash_json(const struct rep *r, json_object *doc)
{
	struct crow *w;
	size_t n;
	unsigned long skipped = 0;
	int rc = crash_rows(r, &w, &n, &skipped);
	json_object *a;

	if (rc || (!n && !skipped))
		return rc;
	a = json_object_new_array();
	for (size_t i = 0; a && i < n; i++) {
		json_object *o = json_object_new_object();
		char s[1200];

		json_object_object_add(o, "board", json_object_new_string(w[i].board));
		json_object_object_add(o, "mode", json_object_new_string(w[i].mode));
		json_object_object_add(o, "cycles", json_object_new_int64((int64_t)w[i].cycles));
		for (int f = 0; f < F_N; f++)
			json_object_object_add(o, f_keys[f], json_object_new_int64((int64_t)w[i].f[f]));
		json_object_object_add(o, "holds", json_object_new_boolean(!w[i].not_ok));
		json_object_object_add(o, "judged", json_object_new_int64((int64_t)w[i].judged));
		if (w[i].cycles > w[i].obs[OBS_NONE]) {
			json_object *x = json_object_new_object();

			for (int k = OBS_LEGAL; k < OBS_N; k++)
				json_object_object_add(x, obs_names[k], json_object_new_int64((int64_t)w[i].obs[k]));
			json_object_object_add(x, "disagree", json_object_new_int64((int64_t)w[i].obs_disagree));
			json_object_object_add(o, "observed", x);
		}
		if (!w[i].unbounded) {
			char legal[48];

			row_legal(&w[i], legal, sizeof(legal));
			json_object_object_add(o, "legal", json_object_new_string(legal));
		}
		row_sentence(&w[i], s, sizeof(s));
		json_object_object_add(o, "says", json_object_new_string(s));
		json_object_array_add(a, o);
	}
	free(w);
	if (!a)
		return -ENOMEM;
	json_object_object_add(doc, "crash_states", a);
	if (skipped)
		json_object_object_add(doc, "crash_states_lines_not_read", json_object_new_int64((int64_t)skipped));
	return 0;
}

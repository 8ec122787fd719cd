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

struct cline {
	char board[64], mode[16];
	unsigned dir;
	unsigned long cycle, order;
	unsigned long f[F_N];
	int ok;
};

/* A board and mode: its cycles' sums. */
struct crow {
	char board[64], mode[16];
	unsigned long cycles, not_ok, f[F_N];
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
	}
	free(c.v);
	if (nw)
		qsort(w, nw, sizeof(*w), row_cmp);
	*rows = w;
	*n = nw;
	*skipped = c.skipped;
	return 0;
}

/* "this cycle's verdict holds for all 68 crash states the block layer allows (24 illegal states
 * injected, 24 caught)", or what went wrong. */
static void row_sentence(const struct crow *w, char *buf, size_t len)
{
	if (!w->not_ok)
		snprintf(buf, len, "%s verdict%s for all %lu crash states the block layer allows (%lu illegal "
			 "state%s injected, %lu caught)", w->cycles == 1 ? "this cycle's" : "these cycles'",
			 w->cycles == 1 ? " holds" : "s hold", w->f[F_STATES], w->f[F_INJECTED],
			 w->f[F_INJECTED] == 1 ? "" : "s", w->f[F_CAUGHT]);
	else
		snprintf(buf, len, "%lu crash states checked, NOT all as the verdict%s: %lu mismatch%s, %lu "
			 "acknowledged record%s not durable, %lu of %lu illegal states caught", w->f[F_STATES],
			 w->cycles == 1 ? " says" : "s say", w->f[F_MISMATCHES], w->f[F_MISMATCHES] == 1 ? "" : "es",
			 w->f[F_AND], w->f[F_AND] == 1 ? "" : "s", w->f[F_CAUGHT], w->f[F_INJECTED]);
}

/* Markdown and HTML cells hold board names: no markup passes. */
static void md_text(FILE *out, const char *s)
{
	for (; *s; s++)
		fprintf(out, strchr("|\\`*_[]<>#", *s) ? "\\%c" : "%c", *s);
}

static void print_rows(FILE *out, enum report_format fmt, const struct crow *w, size_t n, unsigned long skipped)
{
	char s[320];

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
		char s[320];

		json_object_object_add(o, "board", json_object_new_string(w[i].board));
		json_object_object_add(o, "mode", json_object_new_string(w[i].mode));
		json_object_object_add(o, "cycles", json_object_new_int64((int64_t)w[i].cycles));
		for (int f = 0; f < F_N; f++)
			json_object_object_add(o, f_keys[f], json_object_new_int64((int64_t)w[i].f[f]));
		json_object_object_add(o, "holds", json_object_new_boolean(!w[i].not_ok));
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

/*
 * report_compare.c - `powercut report --compare A B`: two parts side by side
 * (report.h). Each side is a results folder, or a device of the folders
 * given; per write mode it shows each side's verdict, the cuts judged and
 * violated with the bound on the per-cut violation rate, records/s and
 * latency, and B's speed against A's. Text, or one HTML page.
 */
#include "harness/report/report_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "harness/report/qualify.h"
#include "harness/report/report.h"
#include "harness/report/xml.h"

#define CMP_MODES 16

struct side {
	const char *label;		/* as given */
	struct rep own;			/* a folder side: its own report */
	const struct rep *r;		/* the report its devices are in */
	unsigned devs[64];		/* its devices (indexes into r->devs) */
	unsigned ndevs;
	struct rep_mode modes[CMP_MODES];	/* merged over its devices, by mode name */
	unsigned nmodes;
	int result;			/* the worst device result (enum pc_result) */
};

/* FAIL beats BOOT_FAIL beats INCOMPLETE beats INCONCLUSIVE beats PASS (verdict.h). */
static int worse(int a, int b)
{
	static const int rank[PC_NRESULTS] = { [PC_RES_PASS] = 0, [PC_RES_INCONCLUSIVE] = 1, [PC_RES_INCOMPLETE] = 2,
					       [PC_RES_BOOT_FAIL] = 3, [PC_RES_FAIL] = 4 };
	return rank[b] > rank[a] ? b : a;
}

static void side_take(struct side *s)
{
	s->result = PC_RES_PASS;
	for (unsigned i = 0; i < s->ndevs; i++) {
		const struct rep_dev *d = &s->r->devs[s->devs[i]];
		struct rep_mode t;

		rep_mode_sum(d, &t);
		s->result = worse(s->result, (int)rep_dev_result(d, &t));
		for (unsigned k = 0; k < d->nmodes; k++) {
			const struct rep_mode *m = &d->modes[k];
			unsigned j;

			if (!m->name[0])
				continue;
			for (j = 0; j < s->nmodes; j++)
				if (!strcmp(s->modes[j].name, m->name))
					break;
			if (j == s->nmodes) {
				if (s->nmodes == CMP_MODES)
					continue;
				memset(&s->modes[j], 0, sizeof(s->modes[j]));
				pc_strlcpy(s->modes[j].name, m->name, sizeof(s->modes[j].name));
				s->nmodes++;
			}
			rep_mode_add(&s->modes[j], m);
		}
	}
	if (!s->ndevs)
		s->result = PC_RES_INCOMPLETE;
}

/* The devices of r that label names: its id or part contains it, or one of
 * its boards is it. */
static int side_pick(struct side *s, const struct rep *r, char *err, size_t errlen)
{
	s->r = r;
	for (unsigned i = 0; i < r->ndevs && s->ndevs < PC_ARRAY_SIZE(s->devs); i++) {
		const struct rep_dev *d = &r->devs[i];
		int hit = (d->id && strstr(d->id, s->label)) || (d->part && !strcmp(d->part, s->label));

		for (unsigned b = 0; b < d->boards.n && !hit; b++)
			hit = !strcmp(d->boards.v[b], s->label);
		if (hit)
			s->devs[s->ndevs++] = i;
	}
	if (!s->ndevs) {
		size_t n = (size_t)snprintf(err, errlen, "report --compare: '%s' names no device of the folders given "
					    "(a device id, a part of one, or a board's name; there are:", s->label);

		for (unsigned i = 0; i < r->ndevs && n < errlen; i++)
			n += (size_t)snprintf(err + n, errlen - n, " %s (board %s)", r->devs[i].id ? r->devs[i].id : "?",
					      r->devs[i].boards.n ? r->devs[i].boards.v[0] : "?");
		if (n < errlen)
			snprintf(err + n, errlen - n, ")");
		return -EINVAL;
	}
	return 0;
}

static const struct rep_mode *side_mode(const struct side *s, const char *name)
{
	for (unsigned i = 0; i < s->nmodes; i++)
		if (!strcmp(s->modes[i].name, name))
			return &s->modes[i];
	return NULL;
}

/* A mode's verdict on one side: FAIL, BOOT_FAIL, PASS, or "-" (not run). */
static const char *mode_verdict(const struct rep_mode *m)
{
	if (!m || !rep_mode_cycles(m))
		return "-";
	if (m->out[PC_OUT_FAIL])
		return pc_outcome_names[PC_OUT_FAIL];
	if (m->out[PC_OUT_BOOT_FAIL])
		return pc_outcome_names[PC_OUT_BOOT_FAIL];
	return m->out[PC_OUT_PASS] ? pc_outcome_names[PC_OUT_PASS] : "-";
}

/* "850 us", "7.17 ms" */
static void us_text(uint32_t us, char *buf, size_t len)
{
	if (us < 1000)
		snprintf(buf, len, "%u us", us);
	else
		snprintf(buf, len, "%.2f ms", us / 1000.0);
}

struct cells {
	int bad;	/* a FAIL or BOOT_FAIL in the mode */
	char verdict[16], cuts[24], viol[24], bound[160], rate[32], p50[32], p99[32];
};

static void cells(const struct rep *r, const struct rep_mode *m, struct cells *c)
{
	unsigned long k = 0, n = 0;

	snprintf(c->verdict, sizeof(c->verdict), "%s", mode_verdict(m));
	c->bad = m && rep_mode_cycles(m) && (m->out[PC_OUT_FAIL] || m->out[PC_OUT_BOOT_FAIL]);
	snprintf(c->cuts, sizeof(c->cuts), "-");
	snprintf(c->viol, sizeof(c->viol), "-");
	snprintf(c->bound, sizeof(c->bound), "-");
	snprintf(c->rate, sizeof(c->rate), "-");
	snprintf(c->p50, sizeof(c->p50), "-");
	snprintf(c->p99, sizeof(c->p99), "-");
	if (!m)
		return;
	if (rep_bound(r, m, &k, &n) >= 0) {
		snprintf(c->cuts, sizeof(c->cuts), "%lu", n);
		snprintf(c->viol, sizeof(c->viol), "%lu", k);
	}
	rep_bound_text(r, m, c->bound, sizeof(c->bound));
	if (m->rate_n)
		snprintf(c->rate, sizeof(c->rate), "%.1f", rep_rate(m));
	if (m->lat.n) {
		us_text(rep_lat_q(m, 0.5), c->p50, sizeof(c->p50));
		us_text(rep_lat_q(m, 0.99), c->p99, sizeof(c->p99));
	}
}

/* B's records/s over A's: "1.25x" (B faster), "-" when either is unknown. */
static const char *speed_ratio(const struct rep_mode *a, const struct rep_mode *b, char *buf, size_t len)
{
	if (!a || !b || !a->rate_n || !b->rate_n || rep_rate(a) <= 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.2fx", rep_rate(b) / rep_rate(a));
	return buf;
}

/* The modes of both sides, A's first. */
static unsigned mode_names(const struct side *a, const struct side *b, const char *names[2 * CMP_MODES])
{
	unsigned n = 0;

	for (unsigned i = 0; i < a->nmodes; i++)
		names[n++] = a->modes[i].name;
	for (unsigned i = 0; i < b->nmodes; i++)
		if (!side_mode(a, b->modes[i].name))
			names[n++] = b->modes[i].name;
	return n;
}

static void text_side(FILE *out, const char *tag, const struct side *s)
{
	fprintf(out, "%s: %s: %s (", tag, s->label, pc_result_names[s->result]);
	for (unsigned i = 0; i < s->ndevs; i++)
		fprintf(out, "%s%s", i ? ", " : "", s->r->devs[s->devs[i]].id ? s->r->devs[s->devs[i]].id : "unknown");
	fprintf(out, ")\n");
}

/* Mode name's cells on each side and B's speed over A's. */
static void mode_pair(const struct side *a, const struct side *b, const char *name, struct cells *ca,
		      struct cells *cb, char *ratio, size_t ratiolen)
{
	const struct rep_mode *ma = side_mode(a, name), *mb = side_mode(b, name);

	cells(a->r, ma, ca);
	cells(b->r, mb, cb);
	speed_ratio(ma, mb, ratio, ratiolen);
}

static int compare_text(FILE *out, const struct side *a, const struct side *b)
{
	const char *names[2 * CMP_MODES];
	unsigned n = mode_names(a, b, names);

	fprintf(out, "powercut report --compare\n");
	text_side(out, "A", a);
	text_side(out, "B", b);
	fprintf(out, "violation rate per cut: %s, %.4g%% confidence; speed: B's records/s over A's\n\n", QUAL_METHOD,
		a->r->confidence * 100.0);
	fprintf(out, "mode        side  verdict     cuts  violated  records/s   lat p50   lat p99  rate\n");
	for (unsigned i = 0; i < n; i++) {
		struct cells ca, cb;
		char ratio[32];

		mode_pair(a, b, names[i], &ca, &cb, ratio, sizeof(ratio));
		fprintf(out, "%-10s  A     %-9s %6s %9s %10s %9s %9s  %s\n", names[i], ca.verdict, ca.cuts, ca.viol, ca.rate,
			ca.p50, ca.p99, ca.bound);
		fprintf(out, "%-10s  B     %-9s %6s %9s %10s %9s %9s  %s\n", "", cb.verdict, cb.cuts, cb.viol, cb.rate,
			cb.p50, cb.p99, cb.bound);
		fprintf(out, "%-10s  speed B/A %s\n", "", ratio);
	}
	return ferror(out) ? -EIO : 0;
}

static void html_esc(FILE *out, const char *s)
{
	xml_escape(out, s);
}

static void html_side(FILE *out, const char *tag, const struct side *s)
{
	fprintf(out, "<tr><th>%s</th><td>", tag);
	html_esc(out, s->label);
	fprintf(out, "</td><td><span class=\"badge %s\">%s</span></td><td class=\"mono\">", pc_result_names[s->result],
		pc_result_names[s->result]);
	for (unsigned i = 0; i < s->ndevs; i++) {
		if (i)
			fputs("<br>", out);
		html_esc(out, s->r->devs[s->devs[i]].id ? s->r->devs[s->devs[i]].id : "unknown");
	}
	fputs("</td></tr>\n", out);
}

static void html_row(FILE *out, const char *mode, const char *tag, const struct cells *c, const char *ratio, int rows)
{
	int bad = c->bad;

	fputs("<tr>", out);
	if (mode) {
		fprintf(out, "<td rowspan=\"%d\">", rows);
		html_esc(out, mode);
		fputs("</td>", out);
	}
	fprintf(out, "<td>%s</td><td class=\"%s\">%s</td><td class=\"n\">%s</td><td class=\"n%s\">%s</td>"
		"<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td%s>", tag, bad ? "bad" : "",
		c->verdict, c->cuts, bad ? " bad" : "", c->viol, c->rate, c->p50, c->p99, bad ? " class=\"bad\"" : "");
	html_esc(out, c->bound);
	fputs("</td>", out);
	if (ratio) {
		fprintf(out, "<td class=\"n\" rowspan=\"%d\">", rows);
		html_esc(out, ratio);
		fputs("</td>", out);
	}
	fputs("</tr>\n", out);
}

static int compare_html(FILE *out, const struct side *a, const struct side *b)
{
	const char *names[2 * CMP_MODES];
	unsigned n = mode_names(a, b, names);

	fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		"<title>powercut report --compare</title>\n<style>\n%s</style>\n</head>\n<body>\n"
		"<h1>Two parts side by side</h1>\n<table class=\"summary\">\n<tr><th></th><th>given</th><th>result</th>"
		"<th>devices</th></tr>\n", rep_html_css);
	html_side(out, "A", a);
	html_side(out, "B", b);
	fprintf(out, "</table>\n<h4>Per write mode</h4>\n<table class=\"modes phases\">\n<tr><th>mode</th><th>side</th>"
		"<th>verdict</th><th class=\"n\">cuts judged</th><th class=\"n\">cycles violated</th>"
		"<th class=\"n\">records/s</th><th class=\"n\">latency p50</th><th class=\"n\">p99</th>"
		"<th>per-cut violation rate (%.4g%%)</th><th class=\"n\">speed B/A</th></tr>\n",
		a->r->confidence * 100.0);
	for (unsigned i = 0; i < n; i++) {
		struct cells ca, cb;
		char ratio[32];

		mode_pair(a, b, names[i], &ca, &cb, ratio, sizeof(ratio));
		html_row(out, names[i], "A", &ca, ratio, 2);
		html_row(out, NULL, "B", &cb, NULL, 2);
	}
	fputs("</table>\n<p class=\"muted\">The rate: the upper bound of the per-cut violation probability, " QUAL_METHOD
	      ", over the judged cuts (PASS and FAIL cycles); speed B/A: B's records/s over A's (above 1: B is "
	      "faster); latency: SUBMIT to ACK as the agent measured it.</p>\n</body>\n</html>\n", out);
	return ferror(out) ? -EIO : 0;
}

int report_compare(const char *a, const char *b, const char *const *dirs, int ndirs, FILE *out,
		   const struct report_opts *o, char *err, size_t errlen)
{
	struct side *s = calloc(2, sizeof(*s));
	struct rep shared = { .err = err, .errlen = errlen };
	int rc = 0;

	if (errlen)
		err[0] = 0;
	if (!s)
		return pc_fail(err, errlen, -ENOMEM, "report --compare: out of memory");
	s[0].label = a;
	s[1].label = b;
	if (ndirs > 0) {
		/* two devices of the folders given */
		rc = rep_load(&shared, dirs, ndirs, o);
		for (int i = 0; i < 2 && !rc; i++)
			rc = side_pick(&s[i], &shared, err, errlen);
	} else {
		/* two folders, each its own report */
		for (int i = 0; i < 2 && !rc; i++) {
			s[i].own.err = err;
			s[i].own.errlen = errlen;
			rc = rep_load(&s[i].own, &s[i].label, 1, o);
			s[i].r = &s[i].own;
			for (unsigned k = 0; !rc && k < s[i].own.ndevs && s[i].ndevs < PC_ARRAY_SIZE(s[i].devs); k++)
				s[i].devs[s[i].ndevs++] = k;
		}
	}
	if (!rc) {
		side_take(&s[0]);
		side_take(&s[1]);
		rc = o && o->format == REPORT_FMT_HTML ? compare_html(out, &s[0], &s[1]) : compare_text(out, &s[0], &s[1]);
		if (rc || fflush(out) != 0 || ferror(out)) {
			rc = -EIO;
			snprintf(err, errlen, "report: cannot write the report: %s", strerror(errno));
		}
	}
	rep_release(&shared);
	rep_release(&s[0].own);
	rep_release(&s[1].own);
	free(s);
	return rc;
}

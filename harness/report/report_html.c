/*
 * report_html.c - the report as one self-contained HTML5 page
 * (`powercut report --format html -o FILE`): what a qualification engineer
 * hands to a supplier. At the top the one-line result of every device;
 * then per part (manufacturer, product, firmware) and unit (serial, CID)
 * the test conditions, a table per write mode, the first FAIL cycles and
 * the charts (verdicts over cycles per board, write latency, records/s,
 * where tears fall).
 *
 * One file that opens anywhere, offline, and is safe to open: inline
 * <style> and <svg> only, no script, no external font, stylesheet or link
 * (the only hrefs are "#" anchors within the page). Every string that came
 * from the results -- board, mode and campaign names, identities, reasons,
 * folder names -- is hostile input and goes through xml_escape().
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "harness/report/qualify.h"
#include "harness/report/report_html_facts.h"
#include "harness/report/report_crash.h"
#include "harness/report/report_model.h"
#include "harness/report/svg.h"

#define FIELD_LEN 4096

const char rep_html_css[] =
	":root{color-scheme:light}\n"
	"body{font:14px/1.45 sans-serif;color:#222;background:#fff;margin:0 auto;max-width:1000px;padding:16px 24px}\n"
	"h1{font-size:24px;margin:0 0 4px}\n"
	"h2{font-size:20px;border-bottom:2px solid #333;margin:36px 0 8px;padding-bottom:2px}\n"
	"h3{font-size:17px;margin:24px 0 6px}\n"
	"h4{font-size:13px;margin:18px 0 6px;text-transform:uppercase;letter-spacing:.05em;color:#555}\n"
	"table{border-collapse:collapse;margin:4px 0 10px}\n"
	"th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top;overflow-wrap:anywhere}\n"
	"th{background:#f2f2f2;font-weight:600;white-space:nowrap}\n"
	"td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
	"td.bad{color:#d62728;font-weight:bold}\n"
	"tr.total td{font-weight:bold;background:#f7f7f7}\n"
	"table.kv th{width:13em}\n"
	"table.inner{margin:0 0 4px}table.inner th,table.inner td{padding:1px 6px}table.kv.inner th{width:auto}\n"
	"table.gloss td:first-child{white-space:nowrap}\n"
	".badge{display:inline-block;min-width:6.5em;text-align:center;padding:1px 8px;border-radius:3px;"
	"color:#fff;font-weight:bold;font-size:13px}\n"
	".PASS{background:#2ca02c}.FAIL{background:#d62728}.BOOT_FAIL{background:#7b1fa2}"
	".INCOMPLETE{background:#f0a500;color:#222}.INCONCLUSIVE{background:#9e9e9e;color:#222}\n"
	".why{color:#7a4f00}\n"
	"p.flag{color:#7a4f00;font-weight:600;margin:2px 0}\n"
	"table.phases th{white-space:normal;overflow-wrap:normal;max-width:9em}\n"
	".muted{color:#666}\n"
	".mono{font-family:monospace;word-break:break-all}\n"
	"svg.chart{display:block;max-width:100%;height:auto;margin:6px 0 14px;border:1px solid #ddd}\n"
	"a{color:inherit}\n"
	"@page{size:A4;margin:14mm}\n"
	"@media print{body{max-width:none;padding:0;font-size:10pt}"
	".badge,svg,th,tr.total td{-webkit-print-color-adjust:exact;print-color-adjust:exact}"
	"section.part+section.part{break-before:page}"
	"table,svg.chart,h3,h4{break-inside:avoid}h3,h4{break-after:avoid}a{text-decoration:none}}\n";

/* ---- small writers ---- */

static void esc(FILE *out, const char *s)
{
	xml_escape(out, s);
}

__attribute__((format(printf, 2, 3)))
static void escf(FILE *out, const char *fmt, ...)
{
	char buf[FIELD_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	esc(out, buf);
}

static const char *mode_label(const struct rep_mode *m)
{
	return m->name[0] ? m->name : "(no mode)";
}

static void list(FILE *out, const struct strlist *l)
{
	if (!l->n)
		fputs("-", out);
	for (unsigned i = 0; i < l->n; i++) {
		if (i)
			fputs(", ", out);
		esc(out, l->v[i]);
	}
}

static void num_cell(FILE *out, unsigned long v, int bad)
{
	fprintf(out, "<td class=\"n%s\">%lu</td>", bad && v ? " bad" : "", v);
}

/* "850 µs", "1.20 ms", "-" */
static void us_cell(FILE *out, uint32_t us, int have)
{
	if (!have)
		fputs("<td class=\"n\">-</td>", out);
	else if (us < 1000)
		fprintf(out, "<td class=\"n\">%u \xc2\xb5s</td>", us);
	else if (us < 1000000)
		fprintf(out, "<td class=\"n\">%.2f ms</td>", us / 1e3);
	else
		fprintf(out, "<td class=\"n\">%.2f s</td>", us / 1e6);
}

/* v with prec decimals and a suffix, "-" when v < 0 (unknown) */
static void dbl_cell(FILE *out, double v, int prec, const char *suffix)
{
	if (v < 0)
		fputs("<td class=\"n\">-</td>", out);
	else
		fprintf(out, "<td class=\"n\">%.*f%s</td>", prec, v, suffix);
}

/* "3 days 2 h", "2 h 13 min", "4 min 10 s" */
static void duration_text(int64_t ms, char *buf, size_t len)
{
	int64_t s = ms / 1000;

	if (s >= 86400)
		snprintf(buf, len, "%lld days %lld h", (long long)(s / 86400), (long long)(s % 86400 / 3600));
	else if (s >= 3600)
		snprintf(buf, len, "%lld h %lld min", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else if (s >= 60)
		snprintf(buf, len, "%lld min %lld s", (long long)(s / 60), (long long)(s % 60));
	else
		snprintf(buf, len, "%lld s", (long long)s);
}

/* A field as the text report prints it; sizes also in KiB/MiB. */
static void field(FILE *out, const struct rep_field *f, int bytes)
{
	char buf[FIELD_LEN];

	esc(out, rep_field_text(f, buf, sizeof(buf)));
	if (bytes && f->v && json_object_is_type(f->v, json_type_int)) {
		int64_t v = json_object_get_int64(f->v);

		if (v >= 1 << 20 && v % (1 << 20) == 0)
			fprintf(out, " <span class=\"muted\">(%lld MiB)</span>", (long long)(v >> 20));
		else if (v >= 1024 && v % 1024 == 0)
			fprintf(out, " <span class=\"muted\">(%lld KiB)</span>", (long long)(v >> 10));
	}
}

static void kv_open(FILE *out, const char *key)
{
	fputs("<tr><th>", out);
	esc(out, key);
	fputs("</th><td>", out);
}

static void kv_close(FILE *out)
{
	fputs("</td></tr>\n", out);
}

static void kv_field(FILE *out, const char *key, const struct rep_field *f, int bytes)
{
	kv_open(out, key);
	field(out, f, bytes);
	kv_close(out);
}

/* "120 cycles, 3 FAIL; violations lost_acked=3; 2 unclassified (...)" */
static void detail(FILE *out, const struct rep_mode *t)
{
	char viol[512];
	unsigned long n = rep_mode_cycles(t);

	fprintf(out, "%lu cycle%s", n, n == 1 ? "" : "s");
	for (int o = PC_OUT_FAIL; o < PC_NOUTCOMES; o++)
		if (t->out[o])
			fprintf(out, ", %lu %s", t->out[o], pc_outcome_names[o]);
	rep_viol_text(t, viol, sizeof(viol));
	if (strcmp(viol, "-") != 0) {
		fputs("; violations ", out);
		esc(out, viol);
	}
	if (t->found[PC_CLS_UNCLASSIFIED] > t->viol[PC_CLS_UNCLASSIFIED])
		fprintf(out, "; %lu unclassified (bytes not received)",
			t->found[PC_CLS_UNCLASSIFIED] - t->viol[PC_CLS_UNCLASSIFIED]);
}

static void badge(FILE *out, const char *res)
{
	/* res is one of the four names (rep_dev_result), never results text */
	fprintf(out, "<span class=\"badge %s\">%s</span>", res, res);
}

static const char *dev_name(const struct rep_dev *d)
{
	return d->id ? d->id : "unknown device";
}

static const char *part_name(const struct rep_dev *d)
{
	return d->part ? d->part : "unknown part";
}

static int same_part(const struct rep_dev *a, const struct rep_dev *b)
{
	return !strcmp(part_name(a), part_name(b));
}

/* ---- the top: one line per device ---- */

/* Why a device is INCONCLUSIVE (rep_mode_inconclusive): a list item per
 * mode (in its section), or a line (in the summary). */
static void inconclusive_list(FILE *out, const struct rep_dev *d, int items)
{
	char b[512];
	int n = 0;

	for (unsigned i = 0; i < d->nmodes; i++) {
		if (!rep_mode_inconclusive(&d->modes[i], b, sizeof(b)))
			continue;
		fputs(items ? "<li>inconclusive: " : n ? "; " : "<br><span class=\"why\">inconclusive: ", out);
		esc(out, b);
		fputs(items ? "</li>\n" : "", out);
		n++;
	}
	if (n && !items)
		fputs("</span>", out);
}

static void summary(const struct rep *r, FILE *out, const char *const *dirs, int ndirs)
{
	struct rep_mode t;

	fputs("<header>\n<h1>powercut qualification report</h1>\n<p class=\"muted\">", out);
	fprintf(out, "%u device%s from ", r->ndevs, r->ndevs == 1 ? "" : "s");
	for (int i = 0; i < ndirs; i++) {
		fputs(i ? ", " : "", out);
		fputs("<span class=\"mono\">", out);
		esc(out, dirs[i]);
		fputs("</span>", out);
	}
	if (r->torn_lines)
		fprintf(out, " (%lu torn last line%s ignored)", r->torn_lines, r->torn_lines == 1 ? "" : "s");
	if (r->duplicates)
		fprintf(out, " (%lu verdict line%s counted once)", r->duplicates, r->duplicates == 1 ? "" : "s");
	fputs("</p>\n<p>Overall: ", out);
	badge(out, rep_result_name(r));
	fputs("</p>\n", out);
	if (!r->ndevs) {
		fputs("<p>No verdicts yet.</p>\n</header>\n", out);
		return;
	}
	fputs("<table class=\"summary\">\n<tr><th>result</th><th>device</th><th>part</th><th>boards</th>"
	      "<th>cycles and findings</th></tr>\n", out);
	for (unsigned i = 0; i < r->ndevs; i++) {
		const struct rep_dev *d = &r->devs[i];
		enum pc_result res_d;
		char pn[FIELD_LEN];

		rep_mode_sum(d, &t);
		res_d = rep_dev_result(d, &t);
		fputs("<tr><td>", out);
		badge(out, pc_result_names[res_d]);
		fprintf(out, "</td><td class=\"mono\"><a href=\"#dev-%u\">", i);
		esc(out, dev_name(d));
		fputs("</a></td><td>", out);
		esc(out, d->ident[ID_NAME].v || d->ident[ID_MANFID].v ? part_name(d) : rep_html_part_name(d, pn, sizeof(pn)));
		fputs("</td><td>", out);
		list(out, &d->boards);
		fputs("</td><td>", out);
		detail(out, &t);
		/* why, when that is the result (under a FAIL, the unit's section says) */
		for (unsigned k = 0; res_d == PC_RES_INCOMPLETE && k < d->nwhy; k++) {
			fputs(k ? "; " : "<br><span class=\"why\">incomplete: ", out);
			esc(out, d->why[k].brief);
			if (k + 1 == d->nwhy)
				fputs("</span>", out);
		}
		if (res_d == PC_RES_INCONCLUSIVE)
			inconclusive_list(out, d, 0);
		fputs("</td></tr>\n", out);
	}
	fputs("</table>\n</header>\n", out);
}

/* ---- a unit ---- */

static void conditions(const struct rep *r, FILE *out, const struct rep_dev *d)
{
	static const char *const cond_label[COND_N] = {
		[COND_RECORD_SIZE] = "record size", [COND_REGION] = "region size",
		[COND_RECORDS] = "records per cycle", [COND_MODES] = "modes", [COND_PATTERN] = "pattern",
		[COND_FLUSH_EVERY] = "flush every (records)", [COND_QD] = "queue depth",
		[COND_CUT] = "cut plan and window", [COND_OFF_MS] = "power off (ms)", [COND_POLICY] = "policy",
		[COND_EXT_CSD] = "EXT_CSD",
	};
	char a[FIELD_LEN], b[64];

	(void)r;
	fputs("<h4>Test conditions</h4>\n<table class=\"kv\">\n", out);
	kv_open(out, "device id");
	fputs("<span class=\"mono\">", out);
	esc(out, dev_name(d));
	fputs("</span>", out);
	kv_close(out);
	kv_open(out, "part name");
	esc(out, rep_html_part_name(d, a, sizeof(a)));
	kv_close(out);
	if (d->hw[HW_PATH].v) {
		kv_open(out, "device path");
		fputs("<span class=\"mono\">", out);
		field(out, &d->hw[HW_PATH], 0);
		fputs("</span>", out);
		kv_close(out);
	}
	kv_open(out, "dates");
	esc(out, rep_time_text(d->first_ms, a, sizeof(a)));
	fputs(" to ", out);
	esc(out, rep_time_text(d->last_ms, b, sizeof(b)));
	if (d->first_ms >= 0 && d->last_ms >= d->first_ms) {
		duration_text(d->last_ms - d->first_ms, a, sizeof(a));
		fputs(" (", out);
		esc(out, a);
		fputs(")", out);
	}
	kv_close(out);
	kv_open(out, "boards");
	list(out, &d->boards);
	kv_close(out);
	kv_open(out, "campaigns");
	list(out, &d->campaigns);
	kv_close(out);
	kv_open(out, "hosts");
	list(out, &d->hosts);
	kv_close(out);
	kv_open(out, "powercut versions");
	list(out, &d->versions);
	kv_close(out);
	kv_field(out, "agent version", &d->ident[ID_AGENT], 0);
	kv_field(out, "device type", &d->ident[ID_TYPE], 0);
	kv_field(out, "kernel", &d->ident[ID_KERNEL], 0);
	kv_open(out, "queue");
	fputs("fua ", out);
	field(out, &d->ident[ID_FUA], 0);
	fputs(", write_cache ", out);
	field(out, &d->ident[ID_WCACHE], 0);
	kv_close(out);
	for (int k = 0; k < COND_N; k++) {
		kv_open(out, cond_label[k] ? cond_label[k] : rep_cond_keys[k]);
		if (!rep_html_cond(out, d, k))
			field(out, &d->cond[k], k == COND_RECORD_SIZE || k == COND_REGION);
		kv_close(out);
	}
	fputs("</table>\n", out);
}

/* the columns of violations: one per class any mode violated */
struct viol_cols {
	int cls[NCLASS];
	int n;
	int refused;
};

static void viol_cols(const struct rep_dev *d, struct viol_cols *vc)
{
	memset(vc, 0, sizeof(*vc));
	for (int c = 0; c < NCLASS; c++)
		for (unsigned i = 0; i < d->nmodes; i++)
			if (d->modes[i].viol[c]) {
				vc->cls[vc->n++] = c;
				break;
			}
	for (unsigned i = 0; i < d->nmodes; i++)
		if (d->modes[i].refused)
			vc->refused = 1;
}

/* integrity: outcomes, violations per class, cuts in flight, torn cycles */
static void integrity_row(FILE *out, const struct rep_mode *m, const struct viol_cols *vc, int total)
{
	fputs(total ? "<tr class=\"total\"><td>" : "<tr><td>", out);
	esc(out, total ? "total" : mode_label(m));
	fputs("</td>", out);
	num_cell(out, rep_mode_cycles(m), 0);
	num_cell(out, m->out[PC_OUT_PASS], 0);
	num_cell(out, m->out[PC_OUT_FAIL], 1);
	num_cell(out, m->out[PC_OUT_BOOT_FAIL], 1);
	num_cell(out, m->out[PC_OUT_INFRA_ERROR], 0);
	if (!vc->n && !vc->refused) {
		char viol[512];

		rep_viol_text(m, viol, sizeof(viol));
		fputs(strcmp(viol, "-") ? "<td class=\"n bad\">" : "<td class=\"n\">", out);
		esc(out, viol);
		fputs("</td>", out);
	}
	for (int k = 0; k < vc->n; k++)
		num_cell(out, m->viol[vc->cls[k]], 1);
	if (vc->refused)
		num_cell(out, m->refused, 1);
	num_cell(out, m->inflight, 0);
	num_cell(out, m->torn_cycles, 0);
	fputs("</tr>\n", out);
}

/* speed: records/s, MiB/s, latency, cost against mode none */
static void speed_row(FILE *out, const struct rep_dev *d, const struct rep_mode *m, int total)
{
	fputs(total ? "<tr class=\"total\"><td>" : "<tr><td>", out);
	esc(out, total ? "total" : mode_label(m));
	fputs("</td>", out);
	dbl_cell(out, rep_rate(m), 1, "");
	dbl_cell(out, rep_mib(m), 2, "");
	us_cell(out, rep_lat_q(m, 0.5), m->lat.n > 0);
	us_cell(out, rep_lat_q(m, 0.99), m->lat.n > 0);
	us_cell(out, m->lat.max, m->lat.n > 0);
	if (!total && pc_mode_from_name(m->name) == PC_MODE_NONE && rep_rate(m) > 0)
		fputs("<td class=\"n\">baseline</td>", out);
	else
		dbl_cell(out, total ? -1 : rep_cost_vs_none(d, m), 2, "\xc3\x97");
	fputs("</tr>\n", out);
}

static void mode_tables(FILE *out, const struct rep_dev *d, const struct rep_mode *t)
{
	struct viol_cols vc;

	viol_cols(d, &vc);
	fputs("<h4>Integrity per write mode</h4>\n<table class=\"modes\">\n<tr><th>mode</th>"
	      "<th class=\"n\">cycles</th><th class=\"n\">PASS</th><th class=\"n\">FAIL</th>"
	      "<th class=\"n\">BOOT_FAIL</th><th class=\"n\">INFRA_ERROR</th>", out);
	if (!vc.n && !vc.refused)
		fputs("<th class=\"n\">violations</th>", out);
	for (int k = 0; k < vc.n; k++)
		fprintf(out, "<th class=\"n\">%s</th>", pc_class_names[vc.cls[k]]);
	if (vc.refused)
		fputs("<th class=\"n\">" REFUSED_NAME "</th>", out);
	fputs("<th class=\"n\">cuts in flight</th><th class=\"n\">torn cycles</th></tr>\n", out);
	for (unsigned i = 0; i < d->nmodes; i++)
		integrity_row(out, &d->modes[i], &vc, 0);
	if (d->nmodes > 1)
		integrity_row(out, t, &vc, 1);
	fputs("</table>\n<p class=\"muted\">Violations by class; cuts in flight: cycles whose cut caught writes "
	      "in flight; torn cycles: cycles with a torn record or sector, violation or not.</p>\n", out);
	for (unsigned i = 0; i < d->nmodes; i++)
		for (unsigned k = 0; k < d->modes[i].nran && k < 8; k++) {
			fputs("<p class=\"muted\">note: ", out);
			esc(out, mode_label(&d->modes[i]));
			fputs(" ran as ", out);
			esc(out, d->modes[i].ran[k].name);
			fprintf(out, " in %lu cycle%s (see queue fua / write_cache)</p>\n", d->modes[i].ran[k].n,
				d->modes[i].ran[k].n == 1 ? "" : "s");
		}
	fputs("<h4>Speed per write mode</h4>\n<table class=\"modes\">\n<tr><th>mode</th>"
	      "<th class=\"n\">records/s</th><th class=\"n\">MiB/s</th><th class=\"n\">latency p50</th>"
	      "<th class=\"n\">p99</th><th class=\"n\">max</th><th class=\"n\">cost vs none</th></tr>\n", out);
	for (unsigned i = 0; i < d->nmodes; i++)
		speed_row(out, d, &d->modes[i], 0);
	if (d->nmodes > 1)
		speed_row(out, d, t, 1);
	fputs("</table>\n<p class=\"muted\">Means over the cycles that wrote; latency: SUBMIT to ACK as the agent "
	      "measured it; cost vs none: how many times slower than mode none in records/s on this unit.</p>\n",
	      out);
}

/* What a qualification signs: each mode's bound, where its cuts landed (a
 * phase the mode is about that no cut reached is flagged), and the wear. */
static void qualify_tables(const struct rep *r, FILE *out, const struct rep_dev *d)
{
	char b[512];
	int any = 0;

	for (unsigned i = 0; i < d->nmodes; i++)
		any |= d->modes[i].name[0] && rep_bound(r, &d->modes[i], NULL, NULL) >= 0;
	if (any) {
		fprintf(out, "<h4>Violation rate per cut, %.4g%% confidence</h4>\n", r->confidence * 100.0);
		fputs("<table class=\"modes\">\n<tr><th>mode</th><th class=\"n\">cuts judged</th>"
		      "<th class=\"n\">cuts in flight</th><th class=\"n\">cycles violated</th>"
		      "<th>per-cut violation rate</th></tr>\n", out);
		for (unsigned i = 0; i < d->nmodes; i++) {
			const struct rep_mode *m = &d->modes[i];
			unsigned long k, n;

			if (!m->name[0] || rep_bound(r, m, &k, &n) < 0)
				continue;
			fputs("<tr><td>", out);
			esc(out, m->name);
			fputs("</td>", out);
			num_cell(out, n, 0);
			num_cell(out, m->inflight, 0);
			num_cell(out, k, k > 0);
			fprintf(out, "<td%s>", k ? " class=\"bad\"" : "");
			esc(out, rep_bound_text(r, m, b, sizeof(b)));
			fputs("</td></tr>\n", out);
		}
		fputs("</table>\n<p class=\"muted\">The upper bound of the per-cut violation probability: "
		      QUAL_METHOD ", over the judged cuts (PASS and FAIL cycles). No violation reads "
		      "&ldquo;below&rdquo; the bound, never 0%.</p>\n", out);
		fputs("<h4>Where the cuts landed</h4>\n<table class=\"modes phases\">\n<tr><th>mode</th>", out);
		for (int p = 0; p < PH_N; p++)
			fprintf(out, "<th class=\"n\">%s</th>", rep_phase_labels[p]);
		fputs("</tr>\n", out);
		for (unsigned i = 0; i < d->nmodes; i++) {
			const struct rep_mode *m = &d->modes[i];

			if (!m->name[0])
				continue;
			fputs("<tr><td>", out);
			esc(out, m->name);
			fputs("</td>", out);
			for (int p = 0; p < PH_N; p++)
				num_cell(out, m->phase[p], 0);
			fputs("</tr>\n", out);
		}
		fputs("</table>\n", out);
		for (unsigned i = 0; i < d->nmodes; i++)
			if (rep_phase_flags(&d->modes[i], b, sizeof(b))) {
				fputs("<p class=\"flag\">&#9873; ", out);
				esc(out, b);
				fputs("</p>\n", out);
			}
		fputs("<p class=\"muted\">From each judged cycle's records and cut: a flush or a FUA write only when "
		      "the cut plan fired at one (plan <code>flush</code>, <code>fua</code> or <code>mix</code>); a random instant "
		      "that fell in one cannot be told from the host.</p>\n", out);
	}
	if (d->has_wear) {
		fprintf(out, "<h4>Wear (EXT_CSD), %lu change%s</h4>\n", d->wear_changes, d->wear_changes == 1 ? "" : "s");
		fputs("<table class=\"modes\">\n<tr><th></th><th>board</th><th class=\"n\">cycle</th><th>time</th>"
		      "<th class=\"n\">life time A</th><th class=\"n\">life time B</th><th class=\"n\">pre-EOL</th>"
		      "</tr>\n", out);
		for (unsigned i = 0; i <= d->nwear; i++) {
			const struct rep_wear *w = i < d->nwear ? &d->wear[i] : &d->wear_last;
			char t[40];

			fprintf(out, "<tr><td>%s</td><td>", !i ? "first" : i < d->nwear ? "change" : "last");
			esc(out, r->boards[w->board].name);
			fprintf(out, "</td><td class=\"n\">%lu</td><td>", w->cycle);
			esc(out, rep_time_text(w->time_ms, t, sizeof(t)));
			fprintf(out, "</td><td class=\"n\">%d</td><td class=\"n\">%d</td><td class=\"n%s\">%d</td></tr>\n",
				w->a, w->b, w->eol >= 2 ? " bad" : "", w->eol);
		}
		fputs("</table>\n<p class=\"muted\">DEVICE_LIFE_TIME_EST_TYP_A/B: 1 is 0-10% of the rated life used, "
		      "10 is 90-100%, 11 past it; PRE_EOL_INFO: 1 normal, 2 warning (80% of the reserved blocks "
		      "used), 3 urgent; -1: not reported.</p>\n", out);
	}
}

static void first_fails(const struct rep *r, FILE *out, const struct rep_dev *d)
{
	unsigned n = 0;

	for (unsigned i = 0; i < d->nmodes; i++)
		n += d->modes[i].nfirst_fail;
	if (!n)
		return;
	fputs("<h4>First FAIL cycles</h4>\n<table class=\"fails\">\n<tr><th>mode</th><th>board</th>"
	      "<th class=\"n\">cycle</th><th>violations</th></tr>\n", out);
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];

		for (unsigned k = 0; k < m->nfirst_fail && k < REP_FIRST_FAILS; k++) {
			const struct rep_fail_ref *f = &m->first_fail[k];

			fputs("<tr><td>", out);
			esc(out, mode_label(m));
			fputs("</td><td>", out);
			esc(out, f->board < r->nboards ? r->boards[f->board].name : "?");
			fprintf(out, "</td><td class=\"n\">%lu</td><td class=\"bad\">", f->cycle);
			/* what[] is a fixed array: never read past it */
			{
				char what[sizeof(f->what) + 1];

				memcpy(what, f->what, sizeof(f->what));
				what[sizeof(f->what)] = 0;
				esc(out, what);
			}
			fputs("</td></tr>\n", out);
		}
	}
	fputs("</table>\n", out);
}

/* Why cycles were not judged or did not boot, grouped by reason. */
static void unjudged(FILE *out, const struct rep_dev *d)
{
	if (!d->nreasons)
		return;
	fputs("<h4>Cycles not judged, and boots that failed</h4>\n<table class=\"fails\">\n<tr><th>verdict</th>"
	      "<th class=\"n\">cycles</th><th class=\"n\">first</th><th class=\"n\">last</th><th>reason (of the "
	      "first)</th></tr>\n", out);
	for (unsigned k = 0; k < d->nreasons; k++) {
		const struct rep_reason *x = &d->reasons[k];

		fprintf(out, "<tr><td>%s</td><td class=\"n\">%lu</td><td class=\"n\">%lu</td><td class=\"n\">%lu</td>"
			"<td>", pc_outcome_names[x->out], x->n, x->first, x->last);
		esc(out, x->text);
		fputs("</td></tr>\n", out);
	}
	fputs("</table>\n", out);
	if (d->reasons_more)
		fprintf(out, "<p class=\"muted\">%lu more such cycles, for other reasons (" PC_FILE_VERDICTS ").</p>\n",
			d->reasons_more);
}

/* ---- a unit's charts ---- */

/* Verdicts over cycles, one row per board the unit was in. */
static int chart_strip(const struct rep *r, FILE *out, unsigned dev)
{
	size_t *cnt = NULL, *at = NULL, n = 0, nrows = 0;
	unsigned long *cyc = NULL;
	signed char *oc = NULL;
	struct svg_strip_row *rows = NULL;
	char **names = NULL;
	int rc = -ENOMEM;

	if (!r->nboards)
		return svg_strip(out, "Verdicts over cycles, per board", NULL, 0);
	if (!(cnt = calloc(r->nboards, sizeof(*cnt))) || !(at = calloc(r->nboards, sizeof(*at))))
		goto out;
	for (size_t i = 0; i < r->ncycles; i++)
		if (r->cycles[i].dev == dev && r->cycles[i].board < r->nboards) {
			cnt[r->cycles[i].board]++;
			n++;
		}
	if (!(cyc = malloc((n ? n : 1) * sizeof(*cyc))) || !(oc = malloc(n ? n : 1)) ||
	    !(rows = calloc(r->nboards, sizeof(*rows))) || !(names = calloc(r->nboards, sizeof(*names))))
		goto out;
	for (size_t b = 0, off = 0; b < r->nboards; off += cnt[b], b++)
		at[b] = off;
	for (unsigned b = 0; b < r->nboards; b++) {
		struct svg_strip_row *row = &rows[nrows];
		int dup = 0;

		if (!cnt[b])
			continue;
		/* a board name twice (two campaigns): say which folder */
		for (unsigned o = 0; o < r->nboards; o++)
			if (o != b && cnt[o] && !strcmp(r->boards[o].name, r->boards[b].name))
				dup = 1;
		if (dup && r->boards[b].dir < r->ndirs) {
			if (asprintf(&names[nrows], "%s (%s)", r->boards[b].name, r->dirs[r->boards[b].dir].arg) < 0) {
				names[nrows] = NULL;
				goto out;
			}
			row->name = names[nrows];
		} else {
			row->name = r->boards[b].name;
		}
		row->cycle = cyc + at[b];
		row->out = oc + at[b];
		row->n = 0;
		nrows++;
	}
	/* fill: rows are in board order, boards without cycles left out */
	{
		size_t *fill = cnt;	/* reused: how many each board has so far */

		memset(fill, 0, r->nboards * sizeof(*fill));
		for (size_t i = 0; i < r->ncycles; i++) {
			const struct rep_cycle *c = &r->cycles[i];

			if (c->dev != dev || c->board >= r->nboards)
				continue;
			cyc[at[c->board] + fill[c->board]] = c->cycle;
			oc[at[c->board] + fill[c->board]] = c->out;
			fill[c->board]++;
		}
		for (unsigned b = 0, k = 0; b < r->nboards; b++)
			if (fill[b])
				rows[k++].n = fill[b];
	}
	rc = svg_strip(out, "Verdicts over cycles, per board", rows, nrows);
out:
	if (names)
		for (size_t k = 0; k < r->nboards; k++)
			free(names[k]);
	free(names);
	free(rows);
	free(oc);
	free(cyc);
	free(at);
	free(cnt);
	return rc;
}

static int chart_latency(FILE *out, const struct rep_dev *d)
{
	struct svg_lat_series *s;
	size_t n = 0;
	int rc;

	for (unsigned i = 0; i < d->nmodes; i++)
		n += d->modes[i].lat.n > 0;
	if (!n) {
		fputs("<p class=\"muted\">No write latencies recorded (results before format 2.0, or nothing "
		      "acknowledged).</p>\n", out);
		return 0;
	}
	if (!(s = calloc(n, sizeof(*s))))
		return -ENOMEM;
	n = 0;
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];

		if (!m->lat.n)
			continue;
		s[n].name = mode_label(m);
		s[n].colour = i;
		s[n].hist = m->lat.hist;
		s[n].n = m->lat.n;
		s[n].p50 = rep_lat_q(m, 0.5);
		s[n].p99 = rep_lat_q(m, 0.99);
		s[n].max = m->lat.max;
		n++;
	}
	rc = svg_latency(out, "Write latency per mode (SUBMIT to ACK)", s, n);
	free(s);
	return rc;
}

static int chart_rate(FILE *out, const struct rep_dev *d)
{
	const char **label = NULL, **note = NULL;
	char (*notes)[64] = NULL;
	double *v = NULL;
	unsigned *col = NULL, n = 0;
	int rc = -ENOMEM;

	for (unsigned i = 0; i < d->nmodes; i++)
		n += rep_rate(&d->modes[i]) >= 0;
	if (!n) {
		fputs("<p class=\"muted\">No write rates recorded.</p>\n", out);
		return 0;
	}
	if (!(label = calloc(n, sizeof(*label))) || !(note = calloc(n, sizeof(*note))) ||
	    !(notes = calloc(n, sizeof(*notes))) || !(v = calloc(n, sizeof(*v))) || !(col = calloc(n, sizeof(*col))))
		goto out;
	n = 0;
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];
		double cost = rep_cost_vs_none(d, m), mib = rep_mib(m);
		size_t k = 0;

		if (rep_rate(m) < 0)
			continue;
		label[n] = mode_label(m);
		v[n] = rep_rate(m);
		col[n] = i;
		if (mib >= 0)
			k += (size_t)snprintf(notes[n] + k, sizeof(notes[n]) - k, "%.2f MiB/s", mib);
		if (cost > 0 && k < sizeof(notes[n]))
			snprintf(notes[n] + k, sizeof(notes[n]) - k, "%s%.2f\xc3\x97 slower than none", k ? ", " : "",
				 cost);
		note[n] = notes[n][0] ? notes[n] : NULL;
		n++;
	}
	rc = svg_hbars(out, "Records per second, per mode", "records/s", label, v, note, col, n);
out:
	free(col);
	free(v);
	free(notes);
	free(note);
	free(label);
	return rc;
}

static int chart_tears(FILE *out, const struct rep_dev *d)
{
	struct svg_series *s = NULL;
	double *v = NULL;
	char (*lab)[16] = NULL;
	const char **catlabel = NULL;
	unsigned ns = 0, ncat = 0;
	int rc = -ENOMEM;

	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];

		if (!m->tears_n)
			continue;
		ns++;
		if (m->record_sectors > ncat)
			ncat = m->record_sectors;
		for (unsigned k = 0; k < REP_TEAR_SECTORS; k++)
			if (m->tears[k] && k + 1 > ncat)
				ncat = k + 1;
	}
	if (!ns) {
		fputs("<p class=\"muted\">No torn records: no tear to place.</p>\n", out);
		return 0;
	}
	if (ncat > REP_TEAR_SECTORS)
		ncat = REP_TEAR_SECTORS;
	if (!(s = calloc(ns, sizeof(*s))) || !(v = calloc((size_t)ns * ncat, sizeof(*v))) ||
	    !(lab = calloc(ncat, sizeof(*lab))) || !(catlabel = calloc(ncat, sizeof(*catlabel))))
		goto out;
	for (unsigned k = 0; k < ncat; k++) {
		snprintf(lab[k], sizeof(lab[k]), k + 1 == REP_TEAR_SECTORS ? "%u+" : "%u", k);
		catlabel[k] = lab[k];
	}
	ns = 0;
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];
		double *row = v + (size_t)ns * ncat;

		if (!m->tears_n)
			continue;
		for (unsigned k = 0; k < REP_TEAR_SECTORS; k++)
			row[k < ncat ? k : ncat - 1] += (double)m->tears[k];
		s[ns].name = mode_label(m);
		s[ns].colour = i;
		s[ns].v = row;
		ns++;
	}
	rc = svg_columns(out, "Where records tear", "boundary sector: where the new data ends in a torn record",
			 "torn records", catlabel, ncat, s, ns);
out:
	free(catlabel);
	free(lab);
	free(v);
	free(s);
	return rc;
}

static int unit(const struct rep *r, FILE *out, unsigned i)
{
	const struct rep_dev *d = &r->devs[i];
	struct rep_mode t;
	const char *res;
	char b[FIELD_LEN];
	int rc;

	rep_mode_sum(d, &t);
	res = pc_result_names[rep_dev_result(d, &t)];
	fprintf(out, "<section class=\"unit\" id=\"dev-%u\">\n<h3>", i);
	badge(out, res);
	fputs(" unit serial ", out);
	esc(out, rep_field_text(&d->ident[ID_SERIAL], b, sizeof(b)));
	fputs(" <span class=\"muted\">CID</span> <span class=\"mono\">", out);
	esc(out, rep_field_text(&d->ident[ID_CID], b, sizeof(b)));
	fputs("</span></h3>\n<p>", out);
	detail(out, &t);
	fputs("</p>\n", out);
	if (!d->id)
		fputs("<p class=\"muted\">No agent ever reported this device's identity: only boot failures were "
		      "seen.</p>\n", out);
	/* also under a FAIL: the evidence was incomplete, whatever it proved */
	if (d->nwhy || d->stopped || rep_dev_inconclusive(d)) {
		fputs("<ul class=\"why\">\n", out);
		inconclusive_list(out, d, 1);
		if (d->stopped) {
			fputs("<li>stopped: ", out);
			esc(out, d->stopped);
			fputs("</li>\n", out);
		}
		for (unsigned k = 0; k < d->nwhy; k++) {
			fputs("<li>incomplete: ", out);
			esc(out, d->why[k].text);
			fputs("</li>\n", out);
		}
		fputs("</ul>\n", out);
	}
	conditions(r, out, d);
	mode_tables(out, d, &t);
	rep_html_io(out, d);
	qualify_tables(r, out, d);
	first_fails(r, out, d);
	unjudged(out, d);
	fputs("<h4>Charts</h4>\n", out);
	if ((rc = chart_strip(r, out, i)) || (rc = chart_latency(out, d)) || (rc = chart_rate(out, d)) ||
	    (rc = chart_tears(out, d)))
		return rc;
	fputs("</section>\n", out);
	return 0;
}

int report_html(const struct rep *r, FILE *out, const char *const *dirs, int ndirs)
{
	int rc;

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>", out);
	escf(out, "powercut report: %u device%s", r->ndevs, r->ndevs == 1 ? "" : "s");
	fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", rep_html_css);
	summary(r, out, dirs, ndirs);
	fputs("<p class=\"muted\">The words of this report (kept, lost, torn, damaged; PASS, FAIL, INFRA_ERROR...): "
	      "<a href=\"#glossary\">glossary</a>.</p>\n", out);
	for (unsigned i = 0; i < r->ndevs; i++) {
		int seen = 0;

		/* parts in order of their first unit; report.c sorts them together already */
		for (unsigned j = 0; j < i && !seen; j++)
			seen = same_part(&r->devs[j], &r->devs[i]);
		if (seen)
			continue;
		fputs("<section class=\"part\">\n<h2>Part ", out);
		rep_html_part_heading(out, r, i);
		fputs("</h2>\n", out);
		for (unsigned j = i; j < r->ndevs; j++)
			if (same_part(&r->devs[j], &r->devs[i]) && (rc = unit(r, out, j)))
				return rc;
		fputs("</section>\n", out);
	}
	if ((rc = rep_crash_print(r, out, REPORT_FMT_HTML)))
		return rc;
	rep_html_glossary(out);
	fputs("<footer class=\"muted\"><p>powercut report. Outcomes: PASS, FAIL (any violation), BOOT_FAIL (no agent "
	      "after the boot timeout and its retries), INFRA_ERROR (relay, link or host trouble: never counted "
	      "against the device); a device is INCOMPLETE when the campaign judged too little of it, "
	      "INCONCLUSIVE when too few of a mode's cuts landed during its writes.</p></footer>\n"
	      "</body>\n</html>\n", out);
	return ferror(out) ? -EIO : 0;
}

/*
 * report_csv.c - the report for machines: CSV, one row per judged cycle
 * (pandas, spreadsheets), and JUnit XML, one testsuite per device and one
 * testcase per mode (GitLab, Jenkins). Columns and elements are documented
 * in docs/results.md.
 */
#include "harness/report/report_model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "common/util.h"

/* ---- CSV (RFC 4180) ---- */

static void csv(FILE *out, const char *s)
{
	if (!s[strcspn(s, ",\"\r\n")]) {
		/* a cell a spreadsheet would run as a formula is quoted and prefixed */
		if (strchr("=+-@", s[0]) && s[0] && !(s[0] == '-' && s[1] >= '0' && s[1] <= '9'))
			fprintf(out, "'%s", s);
		else
			fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s == '\r' || *s == '\n' ? ' ' : *s, out);
	}
	fputc('"', out);
}

int report_csv(const struct rep *r, FILE *out)
{
	char t[40];

	fputs("board,cycle,time,mode,verdict,device,results", out);
	for (int c = 0; c < NCLASS; c++)
		fprintf(out, ",%s", pc_class_names[c]);
	fputs(",violations,records_planned,records_acked,records_per_s,mib_per_s,latency_p50_us,latency_p99_us,"
	      "latency_max_us\n", out);
	for (size_t i = 0; i < r->ncycles; i++) {
		const struct rep_cycle *c = &r->cycles[i];
		const struct rep_board *b = &r->boards[c->board];
		const struct rep_dev *d = &r->devs[c->dev];

		csv(out, b->name);
		fprintf(out, ",%lu,%s,%s,%s,", c->cycle, c->time_ms >= 0 ? rep_time_text(c->time_ms, t, sizeof(t)) : "",
			c->mode >= 0 ? pc_mode_name(c->mode) : "", pc_outcome_names[c->out]);
		csv(out, d->id ? d->id : "");
		fputc(',', out);
		csv(out, r->dirs[b->dir].arg);
		for (int k = 0; k < NCLASS; k++)
			fprintf(out, ",%u", c->counts[k]);
		fprintf(out, ",%u,%u,%u,", c->violations, c->planned, c->acked);
		if (c->rate >= 0)
			fprintf(out, "%.1f", c->rate);
		fputc(',', out);
		if (c->mib >= 0)
			fprintf(out, "%.3f", c->mib);
		if (c->lat_n)
			fprintf(out, ",%u,%u,%u\n", c->lat_p50, c->lat_p99, c->lat_max);
		else
			fputs(",,,\n", out);
	}
	return ferror(out) ? -EIO : 0;
}

/* ---- JUnit XML ---- */

/* The length of a valid UTF-8 sequence at s, or 0. */
static int utf8_len(const unsigned char *s)
{
	int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;

	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* Text or an attribute value: escaped, and only what XML 1.0 allows. */
void rep_xml(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		int n;

		switch (*p) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		case '\n': case '\t': fputc(*p, out); break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				fputc('?', out);
			} else if (*p < 0x80) {
				fputc(*p, out);
			} else if ((n = utf8_len(p))) {
				fwrite(p, 1, (size_t)n, out);
				p += n;
				continue;
			} else {
				fputc('?', out);
			}
		}
		p++;
	}
}

static void attr(FILE *out, const char *name, const char *v)
{
	fprintf(out, " %s=\"", name);
	rep_xml(out, v);
	fputc('"', out);
}

/* One mode of one device: a testcase that fails on FAIL or BOOT_FAIL, and
 * errs when the campaign judged too little of it (INCOMPLETE). */
static void junit_case(FILE *out, const struct rep *r, const struct rep_dev *d, const struct rep_mode *m,
		       const char *dres)
{
	char name[96], msg[1024], viol[512];
	unsigned long judged = m->out[PC_OUT_PASS] + m->out[PC_OUT_FAIL] + m->out[PC_OUT_BOOT_FAIL];

	snprintf(name, sizeof(name), "%s", m->name[0] ? m->name : "no mode (boot or infrastructure only)");
	fprintf(out, "    <testcase");
	attr(out, "classname", d->id ? d->id : "unknown device");
	attr(out, "name", name);
	fprintf(out, " time=\"0\">\n");
	rep_viol_text(m, viol, sizeof(viol));
	if (m->out[PC_OUT_FAIL] || m->out[PC_OUT_BOOT_FAIL]) {
		snprintf(msg, sizeof(msg), "%lu FAIL, %lu BOOT_FAIL of %lu cycles; violations %s", m->out[PC_OUT_FAIL],
			 m->out[PC_OUT_BOOT_FAIL], rep_mode_cycles(m), viol);
		fprintf(out, "      <failure");
		attr(out, "message", msg);
		attr(out, "type", m->out[PC_OUT_FAIL] ? "FAIL" : "BOOT_FAIL");
		fprintf(out, ">");
		for (unsigned k = 0; k < m->nfirst_fail; k++) {
			snprintf(msg, sizeof(msg), "board %s cycle %lu: %s\n", r->boards[m->first_fail[k].board].name,
				 m->first_fail[k].cycle, m->first_fail[k].what);
			rep_xml(out, msg);
		}
		if (m->out[PC_OUT_FAIL] > m->nfirst_fail)
			fprintf(out, "(%lu more FAIL cycles)\n", m->out[PC_OUT_FAIL] - m->nfirst_fail);
		fprintf(out, "</failure>\n");
	} else if (!strcmp(dres, "INCOMPLETE") || !judged) {
		snprintf(msg, sizeof(msg), "INCOMPLETE: %lu of %lu cycles judged (%lu INFRA_ERROR)%s%s", judged,
			 rep_mode_cycles(m), m->out[PC_OUT_INFRA_ERROR], d->nwhy ? "; " : "",
			 d->nwhy ? d->why[0].brief : "");
		fprintf(out, "      <error");
		attr(out, "message", msg);
		attr(out, "type", "INCOMPLETE");
		fprintf(out, ">");
		for (unsigned k = 0; k < d->nwhy; k++) {
			rep_xml(out, d->why[k].text);
			fputc('\n', out);
		}
		/* why its cycles were not judged: a lab mistake reads here */
		for (unsigned k = 0; k < d->nreasons; k++) {
			snprintf(msg, sizeof(msg), "%s %lu cycle%s (%lu to %lu): ", pc_outcome_names[d->reasons[k].out],
				 d->reasons[k].n, d->reasons[k].n == 1 ? "" : "s", d->reasons[k].first, d->reasons[k].last);
			rep_xml(out, msg);
			rep_xml(out, d->reasons[k].text);
			fputc('\n', out);
		}
		fprintf(out, "</error>\n");
	}
	snprintf(msg, sizeof(msg), "cycles %lu: PASS %lu, FAIL %lu, BOOT_FAIL %lu, INFRA_ERROR %lu; cuts in flight %lu",
		 rep_mode_cycles(m), m->out[PC_OUT_PASS], m->out[PC_OUT_FAIL], m->out[PC_OUT_BOOT_FAIL],
		 m->out[PC_OUT_INFRA_ERROR], m->inflight);
	fprintf(out, "      <system-out>");
	rep_xml(out, msg);
	fprintf(out, "</system-out>\n    </testcase>\n");
}

int report_junit(const struct rep *r, FILE *out)
{
	unsigned long tests = 0, failures = 0, errors = 0;
	struct rep_mode t;

	/* the totals first, as the root element says them */
	for (unsigned i = 0; i < r->ndevs; i++) {
		const struct rep_dev *d = &r->devs[i];

		rep_mode_sum(d, &t);
		for (unsigned k = 0; k < d->nmodes; k++) {
			const struct rep_mode *m = &d->modes[k];
			unsigned long judged = m->out[PC_OUT_PASS] + m->out[PC_OUT_FAIL] + m->out[PC_OUT_BOOT_FAIL];

			tests++;
			if (m->out[PC_OUT_FAIL] || m->out[PC_OUT_BOOT_FAIL])
				failures++;
			else if (!strcmp(rep_dev_result(d, &t), "INCOMPLETE") || !judged)
				errors++;
		}
	}
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<testsuites name=\"powercut\" tests=\"%lu\" failures=\"%lu\" errors=\"%lu\" skipped=\"0\">\n",
		tests, failures, errors);
	for (unsigned i = 0; i < r->ndevs; i++) {
		const struct rep_dev *d = &r->devs[i];
		const char *dres;
		unsigned long f = 0, e = 0;
		char b[512];

		rep_mode_sum(d, &t);
		dres = rep_dev_result(d, &t);
		for (unsigned k = 0; k < d->nmodes; k++) {
			const struct rep_mode *m = &d->modes[k];

			if (m->out[PC_OUT_FAIL] || m->out[PC_OUT_BOOT_FAIL])
				f++;
			else if (!strcmp(dres, "INCOMPLETE") ||
				 !(m->out[PC_OUT_PASS] + m->out[PC_OUT_FAIL] + m->out[PC_OUT_BOOT_FAIL]))
				e++;
		}
		fprintf(out, "  <testsuite");
		attr(out, "name", d->id ? d->id : "unknown device");
		fprintf(out, " tests=\"%u\" failures=\"%lu\" errors=\"%lu\" skipped=\"0\"", d->nmodes, f, e);
		if (d->first_ms >= 0)
			attr(out, "timestamp", rep_time_text(d->first_ms, b, sizeof(b)));
		fprintf(out, ">\n    <properties>\n");
		fprintf(out, "      <property name=\"result\"");
		attr(out, "value", dres);
		fprintf(out, "/>\n      <property name=\"part\"");
		attr(out, "value", d->part ? d->part : "");
		fprintf(out, "/>\n      <property name=\"boards\" value=\"");
		for (unsigned k = 0; k < d->boards.n; k++) {
			if (k)
				fputs(", ", out);
			rep_xml(out, d->boards.v[k]);
		}
		fprintf(out, "\"/>\n");
		for (int k = 0; k < ID_N; k++)
			if (d->ident[k].v) {
				fprintf(out, "      <property");
				attr(out, "name", rep_id_keys[k]);
				attr(out, "value", rep_field_text(&d->ident[k], b, sizeof(b)));
				fprintf(out, "/>\n");
			}
		fprintf(out, "    </properties>\n");
		for (unsigned k = 0; k < d->nmodes; k++)
			junit_case(out, r, d, &d->modes[k], dres);
		fprintf(out, "  </testsuite>\n");
	}
	fprintf(out, "</testsuites>\n");
	return ferror(out) ? -EIO : 0;
}

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
#include "harness/report/qualify.h"
#include "harness/report/xml.h"

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

static enum pc_result dev_result(const struct rep_dev *d)
{
	struct rep_mode t;

	rep_mode_sum(d, &t);
	return rep_dev_result(d, &t);
}

int report_csv(const struct rep *r, FILE *out)
{
	char t[40];

	fputs("board,cycle,time,mode,verdict,device,results", out);
	for (int c = 0; c < NCLASS; c++)
		fprintf(out, ",%s", pc_class_names[c]);
	fputs(",violations,records_planned,records_acked,records_per_s,mib_per_s,latency_p50_us,latency_p99_us,"
	      "latency_max_us,cut_phase,mode_cuts,mode_violated,mode_rate_upper,confidence,device_result\n", out);
	for (size_t i = 0; i < r->ncycles; i++) {
		const struct rep_cycle *c = &r->cycles[i];
		const struct rep_board *b = &r->boards[c->board];
		const struct rep_dev *d = &r->devs[c->dev];
		const struct rep_mode *m;
		unsigned long nv, nc;
		double up;

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
			fprintf(out, ",%u,%u,%u", c->lat_p50, c->lat_p99, c->lat_max);
		else
			fputs(",,,", out);
		/* where its cut landed, and the bound of its device and mode */
		fprintf(out, ",%s,", c->phase >= 0 && c->phase < PH_N ? rep_phase_keys[(int)c->phase] : "");
		m = c->mode >= 0 ? rep_find_mode(d, pc_mode_name(c->mode)) : NULL;
		if (m && (up = rep_bound(r, m, &nv, &nc)) >= 0)
			fprintf(out, "%lu,%lu,%.10f,%g", nc, nv, up, r->confidence);
		else
			fputs(",,,", out);
		/* the device's result: PASS only with the evidence (INCONCLUSIVE, INCOMPLETE) */
		fprintf(out, ",%s\n", pc_result_names[dev_result(d)]);
	}
	return ferror(out) ? -EIO : 0;
}

/* ---- JUnit XML ---- */

/* A mode's testcase errs (it neither passes nor fails): the campaign judged
 * too little of its device (INCOMPLETE) or of it, or too few of its cuts
 * landed during writes (INCONCLUSIVE). */
static int junit_errs(const struct rep_mode *m, enum pc_result dres)
{
	char why[8];

	if (m->out[PC_OUT_FAIL] || m->out[PC_OUT_BOOT_FAIL])
		return 0;
	return dres == PC_RES_INCOMPLETE || !(m->out[PC_OUT_PASS] + m->out[PC_OUT_FAIL] + m->out[PC_OUT_BOOT_FAIL]) ||
	       rep_mode_inconclusive(m, why, sizeof(why));
}

/* One mode of one device: a testcase that fails on FAIL or BOOT_FAIL, and
 * errs when the campaign judged too little of it (INCOMPLETE) or its cuts
 * missed the writes (INCONCLUSIVE). */
static void junit_mode(struct junit *j, const struct rep *r, const struct rep_dev *d, const struct rep_mode *m,
		       enum pc_result dres)
{
	char name[96], msg[1024], viol[512];
	unsigned long judged = m->out[PC_OUT_PASS] + m->out[PC_OUT_FAIL] + m->out[PC_OUT_BOOT_FAIL];

	snprintf(name, sizeof(name), "%s", m->name[0] ? m->name : "no mode (boot or infrastructure only)");
	junit_case_begin(j, d->id ? d->id : "unknown device", name);
	rep_viol_text(m, viol, sizeof(viol));
	if (m->out[PC_OUT_FAIL] || m->out[PC_OUT_BOOT_FAIL]) {
		snprintf(msg, sizeof(msg), "%lu FAIL, %lu BOOT_FAIL of %lu cycles; violations %s", m->out[PC_OUT_FAIL],
			 m->out[PC_OUT_BOOT_FAIL], rep_mode_cycles(m), viol);
		junit_problem_begin(j, "failure", pc_outcome_names[m->out[PC_OUT_FAIL] ? PC_OUT_FAIL : PC_OUT_BOOT_FAIL],
				    msg);
		for (unsigned k = 0; k < m->nfirst_fail; k++) {
			snprintf(msg, sizeof(msg), "board %s cycle %lu: %s\n", r->boards[m->first_fail[k].board].name,
				 m->first_fail[k].cycle, m->first_fail[k].what);
			junit_text(j, msg);
		}
		if (m->out[PC_OUT_FAIL] > m->nfirst_fail) {
			snprintf(msg, sizeof(msg), "(%lu more FAIL cycles)\n", m->out[PC_OUT_FAIL] - m->nfirst_fail);
			junit_text(j, msg);
		}
		junit_problem_end(j, "failure");
	} else if (dres != PC_RES_INCOMPLETE && judged && rep_mode_inconclusive(m, viol, sizeof(viol))) {
		snprintf(msg, sizeof(msg), "INCONCLUSIVE: %s", viol);
		junit_problem_begin(j, "error", pc_result_names[PC_RES_INCONCLUSIVE], msg);
		junit_text(j, viol);
		junit_problem_end(j, "error");
	} else if (dres == PC_RES_INCOMPLETE || !judged) {
		snprintf(msg, sizeof(msg), "INCOMPLETE: %lu of %lu cycles judged (%lu INFRA_ERROR)%s%s", judged,
			 rep_mode_cycles(m), m->out[PC_OUT_INFRA_ERROR], d->nwhy ? "; " : "",
			 d->nwhy ? d->why[0].brief : "");
		junit_problem_begin(j, "error", pc_result_names[PC_RES_INCOMPLETE], msg);
		for (unsigned k = 0; k < d->nwhy; k++) {
			junit_text(j, d->why[k].text);
			junit_text(j, "\n");
		}
		/* why its cycles were not judged: a lab mistake reads here */
		for (unsigned k = 0; k < d->nreasons; k++) {
			snprintf(msg, sizeof(msg), "%s %lu cycle%s (%lu to %lu): ", pc_outcome_names[d->reasons[k].out],
				 d->reasons[k].n, d->reasons[k].n == 1 ? "" : "s", d->reasons[k].first, d->reasons[k].last);
			junit_text(j, msg);
			junit_text(j, d->reasons[k].text);
			junit_text(j, "\n");
		}
		junit_problem_end(j, "error");
	}
	{
		char bound[160], flags[256];
		size_t at;

		at = (size_t)snprintf(msg, sizeof(msg), "cycles %lu: PASS %lu, FAIL %lu, BOOT_FAIL %lu, INFRA_ERROR %lu; "
				      "cuts in flight %lu\nviolation rate per cut (%s): %s\ncuts landed:",
				      rep_mode_cycles(m), m->out[PC_OUT_PASS], m->out[PC_OUT_FAIL],
				      m->out[PC_OUT_BOOT_FAIL], m->out[PC_OUT_INFRA_ERROR], m->inflight, QUAL_METHOD,
				      rep_bound_text(r, m, bound, sizeof(bound)));
		for (int p = 0; p < PH_N && at < sizeof(msg); p++)
			at += (size_t)snprintf(msg + at, sizeof(msg) - at, " %s=%lu", rep_phase_keys[p], m->phase[p]);
		if (at < sizeof(msg) && rep_phase_flags(m, flags, sizeof(flags)))
			snprintf(msg + at, sizeof(msg) - at, "\nflag: %s", flags);
	}
	junit_system_out(j, msg);
	junit_case_end(j);
}

/* The boards of a device, "a, b, c" (NULL: out of memory; free it). */
static char *boards_text(const struct strlist *l)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);

	if (!f)
		return NULL;
	for (unsigned k = 0; k < l->n; k++)
		fprintf(f, "%s%s", k ? ", " : "", l->v[k]);
	if (ferror(f) | fclose(f)) {
		free(s);
		return NULL;
	}
	return s;
}

int report_junit(const struct rep *r, FILE *out)
{
	unsigned long tests = 0, failures = 0, errors = 0;
	struct rep_mode t;
	struct junit j;

	/* the totals first, as the root element says them */
	for (unsigned i = 0; i < r->ndevs; i++) {
		const struct rep_dev *d = &r->devs[i];

		rep_mode_sum(d, &t);
		for (unsigned k = 0; k < d->nmodes; k++) {
			const struct rep_mode *m = &d->modes[k];

			tests++;
			if (m->out[PC_OUT_FAIL] || m->out[PC_OUT_BOOT_FAIL])
				failures++;
			else if (junit_errs(m, rep_dev_result(d, &t)))
				errors++;
		}
	}
	junit_begin(&j, out, "powercut", tests, failures, errors, -1);
	for (unsigned i = 0; i < r->ndevs; i++) {
		const struct rep_dev *d = &r->devs[i];
		enum pc_result dres;
		unsigned long f = 0, e = 0;
		char b[512], *boards;

		rep_mode_sum(d, &t);
		dres = rep_dev_result(d, &t);
		for (unsigned k = 0; k < d->nmodes; k++) {
			const struct rep_mode *m = &d->modes[k];

			if (m->out[PC_OUT_FAIL] || m->out[PC_OUT_BOOT_FAIL])
				f++;
			else if (junit_errs(m, dres))
				e++;
		}
		junit_suite_begin(&j, d->id ? d->id : "unknown device", d->nmodes, f, e, -1,
				  d->first_ms >= 0 ? rep_time_text(d->first_ms, b, sizeof(b)) : NULL);
		junit_property(&j, "result", pc_result_names[dres]);
		junit_property(&j, "part", d->part ? d->part : "");
		if (!(boards = boards_text(&d->boards)))
			return -ENOMEM;
		junit_property(&j, "boards", boards);
		free(boards);
		for (int k = 0; k < ID_N; k++)
			if (d->ident[k].v)
				junit_property(&j, rep_id_keys[k], rep_field_text(&d->ident[k], b, sizeof(b)));
		/* the figures a CI dashboard keeps: each mode's bound, the wear */
		for (unsigned k = 0; k < d->nmodes; k++) {
			char name[64], v[160];

			if (!d->modes[k].name[0] || rep_bound(r, &d->modes[k], NULL, NULL) < 0)
				continue;
			snprintf(name, sizeof(name), "violation_rate.%s", d->modes[k].name);
			junit_property(&j, name, rep_bound_text(r, &d->modes[k], v, sizeof(v)));
		}
		if (d->has_wear) {
			char v[160];

			rep_wear_text(&d->wear[0], v, sizeof(v));
			junit_property(&j, "wear.first", v);
			rep_wear_text(&d->wear_last, v, sizeof(v));
			junit_property(&j, "wear.last", v);
		}
		for (unsigned k = 0; k < d->nmodes; k++)
			junit_mode(&j, r, d, &d->modes[k], dres);
		junit_suite_end(&j);
	}
	return junit_end(&j);
}

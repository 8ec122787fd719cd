/*
 * report_text.c - the report as a table for a terminal (at most REP_WIDTH
 * columns) and as Markdown for a ticket: the one-line result of each device
 * first, then per part and unit the test conditions, the outcomes and
 * violations per mode, speed and latency per mode with the cost of each
 * durability mode against none, and where tears fall.
 */
#include "harness/report/report_crash.h"
#include "harness/report/report_model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "common/util.h"
#include "harness/report/qualify.h"

#define REP_WIDTH 100

static void print_list(FILE *out, const struct strlist *l)
{
	for (unsigned i = 0; i < l->n; i++)
		fprintf(out, "%s%s", i ? ", " : "", l->v[i]);
}

/* Wrap at word boundaries from column col so that lines stay within REP_WIDTH. */
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
		snprintf(rate, sizeof(rate), "%.1f", rep_rate(m));
	else
		snprintf(rate, sizeof(rate), "-");
	rep_viol_text(m, viol, sizeof(viol));
	fprintf(out, "  %-10s%8lu%6lu%6lu%11lu%7lu%10lu%11s  ", label, rep_mode_cycles(m), m->out[PC_OUT_PASS],
		m->out[PC_OUT_FAIL], m->out[PC_OUT_BOOT_FAIL], m->out[PC_OUT_INFRA_ERROR], m->inflight, rate);
	print_wrapped(out, viol, 73);
}

/* "5 cycles, 1 BOOT_FAIL; violations lost_acked=3" */
static void print_detail(FILE *out, const struct rep_mode *t)
{
	char viol[512];

	fprintf(out, "%lu cycle%s", rep_mode_cycles(t), rep_mode_cycles(t) == 1 ? "" : "s");
	for (int o = PC_OUT_FAIL; o < PC_NOUTCOMES; o++)
		if (t->out[o])
			fprintf(out, ", %lu %s", t->out[o], pc_outcome_names[o]);
	rep_viol_text(t, viol, sizeof(viol));
	if (strcmp(viol, "-") != 0)
		fprintf(out, "; violations %s", viol);
	/* damage whose bytes never reached the host: shown, never guessed */
	if (t->found[PC_CLS_UNCLASSIFIED] > t->viol[PC_CLS_UNCLASSIFIED])
		fprintf(out, "; %lu unclassified (bytes not received)",
			t->found[PC_CLS_UNCLASSIFIED] - t->viol[PC_CLS_UNCLASSIFIED]);
}

/* "1.2 ms" / "850 us" */
static const char *us_text(uint32_t us, char *buf, size_t len)
{
	if (us >= 10000)
		snprintf(buf, len, "%.1f ms", us / 1000.0);
	else
		snprintf(buf, len, "%u us", us);
	return buf;
}

/* "3 h 12 min", "41 s" */
static const char *duration_text(int64_t ms, char *buf, size_t len)
{
	int64_t s = ms / 1000;

	if (s >= 3600)
		snprintf(buf, len, "%lld h %02lld min", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else if (s >= 60)
		snprintf(buf, len, "%lld min %02lld s", (long long)(s / 60), (long long)(s % 60));
	else
		snprintf(buf, len, "%lld s", (long long)s);
	return buf;
}

/* The test conditions, "key value" pairs wrapped to the width. */
static void print_conditions(FILE *out, const struct rep_dev *d)
{
	char line[4096], b[1024], t0[40], t1[40], dur[40];
	size_t n = 0;

	if (d->first_ms >= 0) {
		fprintf(out, "  tested %s to %s (%s)", rep_time_text(d->first_ms, t0, sizeof(t0)),
			rep_time_text(d->last_ms, t1, sizeof(t1)),
			duration_text(d->last_ms - d->first_ms, dur, sizeof(dur)));
		fprintf(out, "\n");
	}
	if (d->hosts.n || d->versions.n) {
		fprintf(out, "  host%s ", d->hosts.n > 1 ? "s" : "");
		print_list(out, &d->hosts);
		fprintf(out, "; powercut ");
		print_list(out, &d->versions);
		fprintf(out, "; agent %s\n", rep_field_text(&d->ident[ID_AGENT], b, sizeof(b)));
	}
	line[0] = 0;
	for (int k = 0; k < COND_N; k++) {
		if (!d->cond[k].v || k == COND_EXT_CSD || k == COND_POLICY)
			continue;
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s=%s", n ? " " : "", rep_cond_keys[k],
				      rep_field_text(&d->cond[k], b, sizeof(b)));
		if (n >= sizeof(line))
			break;
	}
	if (line[0]) {
		fprintf(out, "  conditions: ");
		print_wrapped(out, line, 14);
	}
	if (d->cond[COND_POLICY].v && json_object_is_type(d->cond[COND_POLICY].v, json_type_object)) {
		/* "fua(torn=allowed torn_sector=violation) flush(...)": wraps between words */
		n = 0;
		json_object_object_foreach(d->cond[COND_POLICY].v, mode, pol) {
			size_t k = 0;

			n += (size_t)snprintf(line + n, n < sizeof(line) ? sizeof(line) - n : 0, "%s%s(", n ? " " : "", mode);
			if (json_object_is_type(pol, json_type_object)) {
				json_object_object_foreach(pol, cls, what)
					n += (size_t)snprintf(line + n, n < sizeof(line) ? sizeof(line) - n : 0, "%s%s=%s",
							      k++ ? " " : "", cls, json_object_get_string(what));
			}
			n += (size_t)snprintf(line + n, n < sizeof(line) ? sizeof(line) - n : 0, ")");
			if (n >= sizeof(line))
				break;
		}
		fprintf(out, "  policy%s: ", d->cond[COND_POLICY].varies ? " (varies; the latest)" : "");
		print_wrapped(out, line, 10);
	}
	if (d->cond[COND_EXT_CSD].v) {
		fprintf(out, "  ext_csd: ");
		print_wrapped(out, rep_field_text(&d->cond[COND_EXT_CSD], b, sizeof(b)), 11);
	}
}

/* Speed and latency per mode, and what each costs against none. */
static void print_speed(FILE *out, const struct rep_dev *d)
{
	int any = 0;

	for (unsigned i = 0; i < d->nmodes; i++)
		any |= d->modes[i].rate_n || d->modes[i].lat.n || d->modes[i].tears_n || d->modes[i].audited ||
		       d->modes[i].audit_unavailable;
	if (!any)
		return;
	fprintf(out, "  mode        records/s     MiB/s   lat p50   lat p99   lat max  vs none  torn cycles\n");
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];
		char r[32] = "-", mb[32] = "-", p50[32] = "-", p99[32] = "-", mx[32] = "-", cost[32] = "-";
		double c = rep_cost_vs_none(d, m);

		if (!m->name[0])
			continue;
		if (m->rate_n)
			snprintf(r, sizeof(r), "%.1f", rep_rate(m));
		if (m->mib_n)
			snprintf(mb, sizeof(mb), "%.2f", rep_mib(m));
		if (m->lat.n) {
			us_text(rep_lat_q(m, 0.5), p50, sizeof(p50));
			us_text(rep_lat_q(m, 0.99), p99, sizeof(p99));
			us_text(m->lat.max, mx, sizeof(mx));
		}
		if (pc_mode_from_name(m->name) == PC_MODE_NONE)
			snprintf(cost, sizeof(cost), "1.00x");
		else if (c > 0)
			snprintf(cost, sizeof(cost), "%.2fx", c);
		fprintf(out, "  %-10s%11s%10s%10s%10s%10s%9s%13lu\n", m->name, r, mb, p50, p99, mx, cost, m->torn_cycles);
	}
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];
		char line[1024];
		size_t n = 0;

		if (!m->tears_n)
			continue;
		for (unsigned k = 0; k < REP_TEAR_SECTORS && n < sizeof(line); k++)
			if (m->tears[k])
				n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%u:%lu", n ? " " : "", k, m->tears[k]);
		fprintf(out, "  tears in %s (new data ends at sector:count, of %u-sector records): ",
			m->name, m->record_sectors);
		print_wrapped(out, line, 4);
	}
	fprintf(out, "  (latency: SUBMIT to ACK as the agent measured it; vs none: how many times slower than\n"
		"  mode none on this device)\n");
	/* what each mode became on the way to the device */
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];
		char became[160], line[512];

		if (!m->name[0] || (!m->audited && !m->audit_unavailable))
			continue;
		if (m->audited) {
			char notes[64] = "";

			if (m->io_notes)
				snprintf(notes, sizeof(notes), ", %lu not what the mode promises", m->io_notes);
			snprintf(line, sizeof(line), "%s -> %s (%llu writes, %llu FUA writes, %llu flushes; %lu cycles "
				 "audited%s)", m->name, rep_io_became(d, m, became, sizeof(became)),
				 (unsigned long long)m->rq[PC_RQ_WRITE], (unsigned long long)m->rq[PC_RQ_FUA],
				 (unsigned long long)m->rq[PC_RQ_FLUSH], m->audited, notes);
		}
		else
			snprintf(line, sizeof(line), "%s -> not seen: %s", m->name, m->audit_why);
		fprintf(out, "  io: ");
		print_wrapped(out, line, 6);
	}
}

/* The bound on each mode's violation rate, where its cuts landed, and what
 * its cut plan never reached. */
static void print_qualify(FILE *out, const struct rep *r, const struct rep_dev *d)
{
	char b[160], flags[512];
	int any = 0;

	for (unsigned i = 0; i < d->nmodes; i++)
		any |= d->modes[i].name[0] && rep_bound(r, &d->modes[i], NULL, NULL) >= 0;
	if (!any)
		return;
	fprintf(out, "  violation rate per cut (%s, %.4g%% confidence):\n", QUAL_METHOD, r->confidence * 100.0);
	fprintf(out, "  mode          cuts  in-flight  violated  rate\n");
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];
		unsigned long k, n;

		if (!m->name[0] || rep_bound(r, m, &k, &n) < 0)
			continue;
		fprintf(out, "  %-10s%8lu%11lu%10lu  %s\n", m->name, n, m->inflight, k, rep_bound_text(r, m, b, sizeof(b)));
	}
	fprintf(out, "  where the cuts landed: before  none-acked  acked+more  flush  FUA  after-ACK\n");
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];
		unsigned long cuts = 0;

		for (int k = 0; k < PH_N; k++)
			cuts += m->phase[k];
		if (!m->name[0] || !cuts)
			continue;
		fprintf(out, "  %-20s%8lu%12lu%12lu%7lu%5lu%11lu\n", m->name, m->phase[PH_BEFORE], m->phase[PH_NONE_ACKED],
			m->phase[PH_ACKED_PENDING], m->phase[PH_FLUSH], m->phase[PH_FUA], m->phase[PH_AFTER]);
	}
	for (unsigned i = 0; i < d->nmodes; i++)
		if (rep_phase_flags(&d->modes[i], flags, sizeof(flags))) {
			fprintf(out, "  flag: ");
			print_wrapped(out, flags, 8);
		}
}

/* EXT_CSD's wear at the first verdict, every change, and the last. */
static void print_wear(FILE *out, const struct rep *r, const struct rep_dev *d)
{
	char w[160], t[40];

	if (!d->has_wear)
		return;
	fprintf(out, "  wear (EXT_CSD), %lu change%s:\n", d->wear_changes, d->wear_changes == 1 ? "" : "s");
	for (unsigned i = 0; i < d->nwear; i++) {
		rep_wear_text(&d->wear[i], w, sizeof(w));
		fprintf(out, "    %s board %s cycle %lu (%s): %s\n", i ? "then " : "first", r->boards[d->wear[i].board].name,
			d->wear[i].cycle, rep_time_text(d->wear[i].time_ms, t, sizeof(t)), w);
	}
	if (d->wear_changes + 1 > d->nwear)
		fprintf(out, "    (%lu more changes not listed)\n", d->wear_changes + 1 - d->nwear);
	rep_wear_text(&d->wear_last, w, sizeof(w));
	fprintf(out, "    last  board %s cycle %lu (%s): %s\n", r->boards[d->wear_last.board].name, d->wear_last.cycle,
		rep_time_text(d->wear_last.time_ms, t, sizeof(t)), w);
}

/* No PASS without evidence: why per mode, also under a FAIL or INCOMPLETE. */
static void print_inconclusive(FILE *out, const struct rep_dev *d)
{
	for (unsigned k = 0; k < d->nmodes; k++) {
		char why[512];

		if (!rep_mode_inconclusive(&d->modes[k], why, sizeof(why)))
			continue;
		fprintf(out, "  inconclusive: ");
		print_wrapped(out, why, 16);
	}
}

static void print_device(FILE *out, const struct rep *r, const struct rep_dev *d)
{
	char b[4][160];
	struct rep_mode t;

	fprintf(out, "device %s (%s ", d->id ? d->id : "unknown", d->boards.n > 1 ? "boards" : "board");
	print_list(out, &d->boards);
	fprintf(out, "; %s%s manfid %s; queue fua=%s write_cache=%s)\n",
		d->ident[ID_NAME].v ? "" : "name ", rep_field_text(&d->ident[ID_NAME], b[0], sizeof(b[0])),
		rep_field_text(&d->ident[ID_MANFID], b[1], sizeof(b[1])),
		rep_field_text(&d->ident[ID_FUA], b[2], sizeof(b[2])),
		rep_field_text(&d->ident[ID_WCACHE], b[3], sizeof(b[3])));
	fprintf(out, "  cid %s; kernel %s\n", rep_field_text(&d->ident[ID_CID], b[0], sizeof(b[0])),
		rep_field_text(&d->ident[ID_KERNEL], b[1], sizeof(b[1])));
	if (d->ident[ID_SERIAL].v || d->ident[ID_FWREV].v)
		fprintf(out, "  serial %s; firmware %s\n", rep_field_text(&d->ident[ID_SERIAL], b[0], sizeof(b[0])),
			rep_field_text(&d->ident[ID_FWREV], b[1], sizeof(b[1])));
	if (!d->id)
		fprintf(out, "  (no agent ever reported this device's identity: only boot failures were seen)\n");
	print_conditions(out, d);
	fprintf(out, "  mode        cycles  PASS  FAIL  BOOT_FAIL  INFRA  in-flight  records/s  violations\n");
	for (unsigned i = 0; i < d->nmodes; i++)
		print_row(out, &d->modes[i], d->modes[i].name[0] ? d->modes[i].name : "-");
	rep_mode_sum(d, &t);
	if (d->nmodes > 1)
		print_row(out, &t, "total");
	for (unsigned i = 0; i < d->nmodes; i++)
		for (unsigned k = 0; k < d->modes[i].nran; k++)
			fprintf(out, "  note: %s ran as %s in %lu cycle%s (see queue fua / write_cache)\n",
				d->modes[i].name, d->modes[i].ran[k].name, d->modes[i].ran[k].n,
				d->modes[i].ran[k].n == 1 ? "" : "s");
	print_qualify(out, r, d);
	print_speed(out, d);
	print_wear(out, r, d);
	for (unsigned i = 0; i < d->nmodes; i++)
		for (unsigned k = 0; k < d->modes[i].nfirst_fail; k++) {
			const struct rep_fail_ref *f = &d->modes[i].first_fail[k];

			fprintf(out, "  %s FAIL: board %s cycle %lu: %s\n", k ? "     " : "first",
				r->boards[f->board].name, f->cycle, f->what);
		}
	/* why cycles were not judged, or did not boot: a lab mistake reads here */
	for (unsigned k = 0; k < d->nreasons; k++) {
		const struct rep_reason *x = &d->reasons[k];
		char text[1400];

		if (x->n == 1)
			snprintf(text, sizeof(text), "%s cycle %lu: %s", pc_outcome_names[x->out], x->first, x->text);
		else
			snprintf(text, sizeof(text), "%s %lu cycles (%lu to %lu), as cycle %lu: %s",
				 pc_outcome_names[x->out], x->n, x->first, x->last, x->first, x->text);
		fprintf(out, "  %-12s", x->out == PC_OUT_BOOT_FAIL ? "boot fail:" : "not judged:");
		print_wrapped(out, text, 14);
	}
	if (d->reasons_more)
		fprintf(out, "  (%lu more INFRA_ERROR or BOOT_FAIL cycles, for other reasons: " PC_FILE_VERDICTS ")\n",
			d->reasons_more);
	fprintf(out, "  result: %s (", pc_result_names[rep_dev_result(d, &t)]);
	print_detail(out, &t);
	fprintf(out, ")\n");
	if (d->stopped) {
		fprintf(out, "  %-12s", "stopped:");
		print_wrapped(out, d->stopped, 14);
	}
	/* also under a FAIL: the evidence was incomplete, whatever it proved */
	for (unsigned k = 0; k < d->nwhy; k++) {
		fprintf(out, "  incomplete: ");
		print_wrapped(out, d->why[k].text, 14);
	}
	print_inconclusive(out, d);
	fprintf(out, "\n");
}

static void print_summary(const struct rep *r, FILE *out)
{
	struct rep_mode t;

	fprintf(out, "summary\n");
	if (!r->ndevs)
		fprintf(out, "  no verdicts yet\n");
	for (unsigned i = 0; i < r->ndevs; i++) {
		const struct rep_dev *d = &r->devs[i];

		rep_mode_sum(d, &t);
		fprintf(out, "  %-9s %s (", pc_result_names[rep_dev_result(d, &t)], d->id ? d->id : "unknown device");
		print_list(out, &d->boards);
		fprintf(out, "): ");
		print_detail(out, &t);
		/* why, when that is the result (under a FAIL, the device's section says) */
		for (unsigned k = 0; rep_dev_result(d, &t) == PC_RES_INCOMPLETE && k < d->nwhy; k++)
			fprintf(out, "%s%s", k ? "; " : "; incomplete: ", d->why[k].brief);
		for (unsigned k = 0, n = 0; rep_dev_result(d, &t) == PC_RES_INCONCLUSIVE && k < d->nmodes; k++) {
			const struct rep_mode *m = &d->modes[k];
			unsigned long judged, in = rep_cuts_in_writes(m, &judged);
			char why[8];

			if (rep_mode_inconclusive(m, why, sizeof(why)))
				fprintf(out, "%smode %s %lu of %lu cuts during writes", n++ ? "; " : "; inconclusive: ",
					m->name, in, judged);
		}
		fprintf(out, "\n");
	}
}

int report_text(const struct rep *r, FILE *out, const char *const *dirs, int ndirs)
{
	const char *part = NULL;

	fprintf(out, "powercut report: %u device%s from ", r->ndevs, r->ndevs == 1 ? "" : "s");
	for (int i = 0; i < ndirs; i++)
		fprintf(out, "%s%s", i ? ", " : "", dirs[i]);
	fprintf(out, "\n");
	if (r->torn_lines)
		fprintf(out, "(%lu torn last line%s ignored)\n", r->torn_lines, r->torn_lines == 1 ? "" : "s");
	for (unsigned i = 0; i < r->ndirs; i++)
		if (r->dirs[i].dup_of >= 0)
			fprintf(out, "(%s given again: read once)\n", r->dirs[i].arg);
	if (r->duplicates)
		fprintf(out, "(%lu verdict%s given more than once counted once)\n", r->duplicates,
			r->duplicates == 1 ? "" : "s");
	fprintf(out, "\n");
	/* the one line per device a reader wants first */
	print_summary(r, out);
	fprintf(out, "\n");
	for (unsigned i = 0; i < r->ndevs; i++) {
		if (!part || strcmp(part, r->devs[i].part)) {
			part = r->devs[i].part;
			fprintf(out, "== part %s (manfid, name, firmware) ==\n\n", part);
		}
		print_device(out, r, &r->devs[i]);
	}
	return rep_crash_print(r, out, REPORT_FMT_TEXT);
}

/* ---- Markdown ---- */

/* Text in a Markdown table cell: no pipes, no newlines, no markup. */
static void md(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (strchr("|\\`*_[]<>#", *s))
			fputc('\\', out);
		fputc((unsigned char)*s < 0x20 ? ' ' : *s, out);
	}
}

static void md_list(FILE *out, const struct strlist *l)
{
	for (unsigned i = 0; i < l->n; i++) {
		if (i)
			fputs(", ", out);
		md(out, l->v[i]);
	}
}

/* The bounds, the cut phases and their flags, and the wear, as Markdown. */
static void md_qualify(FILE *out, const struct rep *r, const struct rep_dev *d)
{
	char b[512];

	fprintf(out, "\nViolation rate per cut (%s, %.4g%% confidence):\n\n"
		"| mode | cuts | cuts in flight | violated | rate |\n|---|---:|---:|---:|---|\n", QUAL_METHOD,
		r->confidence * 100.0);
	for (unsigned k = 0; k < d->nmodes; k++) {
		const struct rep_mode *m = &d->modes[k];
		unsigned long v, n;

		if (!m->name[0] || rep_bound(r, m, &v, &n) < 0)
			continue;
		fputs("| ", out);
		md(out, m->name);
		fprintf(out, " | %lu | %lu | %lu | ", n, m->inflight, v);
		md(out, rep_bound_text(r, m, b, sizeof(b)));
		fputs(" |\n", out);
	}
	fprintf(out, "\nWhere the cuts landed:\n\n| mode |");
	for (int p = 0; p < PH_N; p++)
		fprintf(out, " %s |", rep_phase_labels[p]);
	fprintf(out, "\n|---|");
	for (int p = 0; p < PH_N; p++)
		fprintf(out, "---:|");
	fputc('\n', out);
	for (unsigned k = 0; k < d->nmodes; k++) {
		const struct rep_mode *m = &d->modes[k];

		if (!m->name[0])
			continue;
		fputs("| ", out);
		md(out, m->name);
		fputs(" |", out);
		for (int p = 0; p < PH_N; p++)
			fprintf(out, " %lu |", m->phase[p]);
		fputc('\n', out);
	}
	for (unsigned k = 0, said = 0; k < d->nmodes; k++)
		if (rep_phase_flags(&d->modes[k], b, sizeof(b))) {
			fprintf(out, "%s- **flag**: ", said++ ? "" : "\n");
			md(out, b);
			fputc('\n', out);
		}
	if (d->has_wear) {
		fprintf(out, "\nWear (EXT_CSD), %lu change%s:\n\n", d->wear_changes, d->wear_changes == 1 ? "" : "s");
		for (unsigned k = 0; k <= d->nwear; k++) {
			const struct rep_wear *w = k < d->nwear ? &d->wear[k] : &d->wear_last;

			fprintf(out, "- %s: board ", !k ? "first" : k < d->nwear ? "then" : "last");
			md(out, r->boards[w->board].name);
			fprintf(out, " cycle %lu: ", w->cycle);
			rep_wear_text(w, b, sizeof(b));
			md(out, b);
			fputc('\n', out);
		}
	}
}

/* the table of devices, a row each, under the title and the folders read */
static void md_summary(const struct rep *r, FILE *out, const char *const *dirs, int ndirs)
{
	char viol[512];
	struct rep_mode t;

	fprintf(out, "# powercut report\n\n");
	fprintf(out, "%u device%s from ", r->ndevs, r->ndevs == 1 ? "" : "s");
	for (int i = 0; i < ndirs; i++) {
		fputs(i ? ", `" : "`", out);
		for (const char *p = dirs[i]; *p; p++)
			fputc(*p == '`' ? '\'' : *p, out);
		fputs("`", out);
	}
	fprintf(out, "\n\n| result | device | boards | cycles | PASS | FAIL | BOOT_FAIL | INFRA_ERROR | violations |\n"
		"|---|---|---|---:|---:|---:|---:|---:|---|\n");
	for (unsigned i = 0; i < r->ndevs; i++) {
		const struct rep_dev *d = &r->devs[i];

		rep_mode_sum(d, &t);
		rep_viol_text(&t, viol, sizeof(viol));
		fprintf(out, "| **%s** | ", pc_result_names[rep_dev_result(d, &t)]);
		md(out, d->id ? d->id : "unknown device");
		fputs(" | ", out);
		md_list(out, &d->boards);
		fprintf(out, " | %lu | %lu | %lu | %lu | %lu | ", rep_mode_cycles(&t), t.out[PC_OUT_PASS],
			t.out[PC_OUT_FAIL], t.out[PC_OUT_BOOT_FAIL], t.out[PC_OUT_INFRA_ERROR]);
		md(out, viol);
		fputs(" |\n", out);
	}
}

/* "- key: value" items, "- key: " then the value escaped */
static void md_item(FILE *out, const char *key, const char *value)
{
	fprintf(out, "- %s: ", key);
	md(out, value);
	fputc('\n', out);
}

static void md_item_list(FILE *out, const char *key, const struct strlist *l)
{
	fprintf(out, "- %s: ", key);
	md_list(out, l);
	fputc('\n', out);
}

/* a device's heading and what is known of it: identity, when, where, conditions */
static void md_device_facts(FILE *out, const struct rep_dev *d)
{
	char b[1024], t0[40], t1[40];
	struct rep_mode t;

	rep_mode_sum(d, &t);
	fprintf(out, "\n## ");
	md(out, d->id ? d->id : "unknown device");
	fprintf(out, ": %s\n\n", pc_result_names[rep_dev_result(d, &t)]);
	fprintf(out, "- part: ");
	md(out, d->part);
	fprintf(out, " (manfid, name, firmware)\n");
	md_item_list(out, "boards", &d->boards);
	for (int k = 0; k < ID_N; k++)
		if (d->ident[k].v)
			md_item(out, rep_id_keys[k], rep_field_text(&d->ident[k], b, sizeof(b)));
	if (d->first_ms >= 0)
		fprintf(out, "- tested: %s to %s\n", rep_time_text(d->first_ms, t0, sizeof(t0)),
			rep_time_text(d->last_ms, t1, sizeof(t1)));
	if (d->hosts.n)
		md_item_list(out, "hosts", &d->hosts);
	if (d->versions.n)
		md_item_list(out, "powercut", &d->versions);
	for (int k = 0; k < COND_N; k++)
		if (d->cond[k].v)
			md_item(out, rep_cond_keys[k], rep_field_text(&d->cond[k], b, sizeof(b)));
	if (d->stopped)
		md_item(out, "stopped", d->stopped);
	for (unsigned k = 0; k < d->nwhy; k++)
		md_item(out, "incomplete", d->why[k].text);
	for (unsigned k = 0; k < d->nmodes; k++)
		if (rep_mode_inconclusive(&d->modes[k], b, sizeof(b)))
			md_item(out, "inconclusive", b);
}

/* one row of a device's table of modes */
static void md_mode_row(FILE *out, const struct rep_dev *d, const struct rep_mode *m)
{
	char viol[512], became[160];
	double c = rep_cost_vs_none(d, m);

	rep_viol_text(m, viol, sizeof(viol));
	fputs("| ", out);
	md(out, m->name[0] ? m->name : "-");
	fprintf(out, " | %lu | %lu | %lu | %lu | %lu | %lu | ", rep_mode_cycles(m), m->out[PC_OUT_PASS],
		m->out[PC_OUT_FAIL], m->out[PC_OUT_BOOT_FAIL], m->out[PC_OUT_INFRA_ERROR], m->inflight);
	if (m->rate_n)
		fprintf(out, "%.1f | ", rep_rate(m));
	else
		fputs("- | ", out);
	if (m->mib_n)
		fprintf(out, "%.2f | ", rep_mib(m));
	else
		fputs("- | ", out);
	if (m->lat.n)
		fprintf(out, "%u / %u / %u | ", rep_lat_q(m, 0.5), rep_lat_q(m, 0.99), m->lat.max);
	else
		fputs("- | ", out);
	if (c > 0)
		fprintf(out, "%.2fx | ", c);
	else
		fputs("- | ", out);
	md(out, rep_io_became(d, m, became, sizeof(became)) ? became :
	   m->audit_unavailable ? "not seen (audit unavailable)" : "-");
	fputs(" | ", out);
	md(out, viol);
	fputs(" |\n", out);
}

static void md_modes(FILE *out, const struct rep_dev *d)
{
	fprintf(out, "\n| mode | cycles | PASS | FAIL | BOOT_FAIL | INFRA_ERROR | cuts in flight | records/s | "
		"MiB/s | latency p50 / p99 / max (us) | vs none | reached the device | violations |\n"
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|\n");
	for (unsigned k = 0; k < d->nmodes; k++)
		md_mode_row(out, d, &d->modes[k]);
}

/* the first FAIL cycles of each mode, where to look first */
static void md_first_fails(FILE *out, const struct rep *r, const struct rep_dev *d)
{
	for (unsigned k = 0, said = 0; k < d->nmodes; k++)
		for (unsigned f = 0; f < d->modes[k].nfirst_fail; f++, said = 1) {
			const struct rep_fail_ref *x = &d->modes[k].first_fail[f];

			fprintf(out, "%s- FAIL in ", said ? "" : "\nFirst FAIL cycles:\n\n");
			md(out, d->modes[k].name);
			fprintf(out, ": board ");
			md(out, r->boards[x->board].name);
			fprintf(out, " cycle %lu: ", x->cycle);
			md(out, x->what);
			fputc('\n', out);
		}
}

int report_md(const struct rep *r, FILE *out, const char *const *dirs, int ndirs)
{
	md_summary(r, out, dirs, ndirs);
	for (unsigned i = 0; i < r->ndevs; i++) {
		const struct rep_dev *d = &r->devs[i];

		md_device_facts(out, d);
		md_modes(out, d);
		md_qualify(out, r, d);
		md_first_fails(out, r, d);
	}
	return rep_crash_print(r, out, REPORT_FMT_MD);
}

/*
 * report_model.c - reading the report's model (report_model.h): the sums,
 * rates, texts and results every writer asks of a device and a mode. The
 * bottom of the report room: report.c, the reading files and every writer
 * call it; it calls none of them.
 */
#include "harness/report/report_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "common/record.h"
#include "common/util.h"
#include "harness/report/qualify.h"

/* Cycle outcomes and record classes: docs/design.md section 6 (a contract), named in
 * verdict.h. */
const char *const rep_id_keys[ID_N] = { "name", "manfid", "cid", "fua", "write_cache", "kernel", "fwrev",
					"serial", "type", "agent" };
const char *const rep_hw_keys[HW_N] = { "model", "vendor", "firmware", "size", "path" };
const char *const rep_cond_keys[COND_N] = { "record_size", "region_bytes", "records_per_cycle", "modes",
					    "pattern", "flush_every", "queue_depth", "cut", "off_ms", "policy",
					    "ext_csd" };

const char *const rep_phase_keys[PH_N] = { "before_first_write", "none_acked", "acked_more_in_flight",
					   "flush", "fua", "after_last_ack" };
const char *const rep_phase_labels[PH_N] = { "before the first write", "writes, none acknowledged",
					     "acknowledged, more in flight", "during a flush",
					     "during a FUA write", "after the last ACK" };

static int strlist_find(const struct strlist *l, const char *s)
{
	for (unsigned i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return (int)i;
	return -1;
}

int rep_strlist_add(struct strlist *l, const char *s)
{
	char **v;

	if (strlist_find(l, s) >= 0)
		return 0;
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	if (!(l->v[l->n] = strdup(s)))
		return -ENOMEM;
	l->n++;
	return 0;
}

void rep_strlist_free(struct strlist *l)
{
	for (unsigned i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

int rep_fail(struct rep *r, const char *file, unsigned long line, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = line ? snprintf(r->err, r->errlen, "%s:%lu: ", file, line)
		 : snprintf(r->err, r->errlen, "%s: ", file);
	if (n < 0 || (size_t)n >= r->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* ---- totals and results ---- */

void rep_mode_add(struct rep_mode *t, const struct rep_mode *m)
{
	for (int o = 0; o < PC_NOUTCOMES; o++)
		t->out[o] += m->out[o];
	for (int c = 0; c < NCLASS; c++) {
		t->viol[c] += m->viol[c];
		t->found[c] += m->found[c];
	}
	t->violations += m->violations;
	t->refused += m->refused;
	t->inflight += m->inflight;
	t->worked += m->worked;
	t->torn_cycles += m->torn_cycles;
	t->rate_sum += m->rate_sum;
	t->rate_n += m->rate_n;
	t->mib_sum += m->mib_sum;
	t->mib_n += m->mib_n;
	for (unsigned k = 0; k < PC_LAT_BUCKETS; k++)
		t->lat.hist[k] += m->lat.hist[k];
	t->lat.n += m->lat.n;
	if (m->lat.max > t->lat.max)
		t->lat.max = m->lat.max;
	for (unsigned k = 0; k < REP_TEAR_SECTORS; k++)
		t->tears[k] += m->tears[k];
	t->tears_n += m->tears_n;
	if (m->record_sectors > t->record_sectors)
		t->record_sectors = m->record_sectors;
	for (unsigned k = 0; k < m->nfirst_fail && t->nfirst_fail < REP_FIRST_FAILS; k++)
		t->first_fail[t->nfirst_fail++] = m->first_fail[k];
	for (int k = 0; k < PC_NRQ; k++)
		t->rq[k] += m->rq[k];
	t->audited += m->audited;
	t->audit_unavailable += m->audit_unavailable;
	t->io_notes += m->io_notes;
	for (int k = 0; k < PH_N; k++)
		t->phase[k] += m->phase[k];
}

void rep_mode_sum(const struct rep_dev *d, struct rep_mode *t)
{
	memset(t, 0, sizeof(*t));
	pc_strlcpy(t->name, "total", sizeof(t->name));
	for (unsigned i = 0; i < d->nmodes; i++)
		rep_mode_add(t, &d->modes[i]);
}

unsigned long rep_mode_cycles(const struct rep_mode *m)
{
	return m->out[PC_OUT_PASS] + m->out[PC_OUT_FAIL] + m->out[PC_OUT_BOOT_FAIL] + m->out[PC_OUT_INFRA_ERROR];
}

/*
 * FAIL beats BOOT_FAIL beats INCOMPLETE beats INCONCLUSIVE beats PASS: a
 * proven violation or a dead part stays what it is however little else was
 * judged, and a campaign that judged too little (rep_finish), or whose cuts
 * did not meet the writes (rep_mode_inconclusive), never reads PASS.
 * INFRA_ERROR is the lab's fault, never the device's, but too much of it
 * leaves nothing to hand anyone.
 */
enum pc_result rep_dev_result(const struct rep_dev *d, const struct rep_mode *t)
{
	if (t->out[PC_OUT_FAIL])
		return PC_RES_FAIL;
	if (t->out[PC_OUT_BOOT_FAIL])
		return PC_RES_BOOT_FAIL;
	if (d->nwhy)
		return PC_RES_INCOMPLETE;
	if (rep_dev_inconclusive(d))
		return PC_RES_INCONCLUSIVE;
	return PC_RES_PASS;
}

/* The worst device's result (BOOT_FAIL reads FAIL). Nothing at all to
 * report is nothing judged: INCOMPLETE. */
static enum pc_result worst_result(const struct rep *r)
{
	static const int rank[PC_NRESULTS] = { [PC_RES_PASS] = 0, [PC_RES_INCONCLUSIVE] = 1, [PC_RES_INCOMPLETE] = 2,
					       [PC_RES_BOOT_FAIL] = 3, [PC_RES_FAIL] = 3 };
	enum pc_result res = r->ndevs ? PC_RES_PASS : PC_RES_INCOMPLETE;

	for (unsigned i = 0; i < r->ndevs; i++) {
		struct rep_mode t;
		enum pc_result c;

		rep_mode_sum(&r->devs[i], &t);
		c = rep_dev_result(&r->devs[i], &t);
		if (c == PC_RES_BOOT_FAIL)
			c = PC_RES_FAIL;
		if (rank[c] > rank[res])
			res = c;
	}
	return res;
}

const char *rep_result_name(const struct rep *r)
{
	return pc_result_names[worst_result(r)];
}

/* What `powercut report` and `run` exit with: INCONCLUSIVE shares
 * INCOMPLETE's 3 (not a PASS, not a FAIL: the report says which and why). */
int rep_result(const struct rep *r)
{
	enum pc_result res = worst_result(r);

	return res == PC_RES_PASS ? REPORT_PASS : res == PC_RES_FAIL ? REPORT_FAIL : REPORT_INCOMPLETE;
}

/* "lost_acked=3 torn=1", or "-" */
void rep_viol_text(const struct rep_mode *m, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int c = 0; c < NCLASS; c++)
		if (m->viol[c] && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s=%lu", n ? " " : "", pc_class_names[c], m->viol[c]);
	if (m->refused && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%s%s=%lu", n ? " " : "", REFUSED_NAME, m->refused);
	if (!n) {
		if (m->violations)	/* classes this report does not know */
			snprintf(buf, len, "%lu", m->violations);
		else
			snprintf(buf, len, "-");
	}
}

const char *rep_field_text(const struct rep_field *f, char *buf, size_t len)
{
	if (!f->v)
		return "-";
	snprintf(buf, len, "%s%s", json_object_is_type(f->v, json_type_object) || json_object_is_type(f->v, json_type_array) ?
		 json_object_to_json_string_ext(f->v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) :
		 json_object_get_string(f->v), f->varies ? " (varies)" : "");
	return buf;
}

const char *rep_io_became(const struct rep_dev *d, const struct rep_mode *m, char *buf, size_t len)
{
	int mode = pc_mode_from_name(m->name);
	struct pc_queue q;

	if (!m->audited)
		return NULL;
	/* the queue as the device's verdicts said it, unless it varied */
	pc_queue_read(d && !d->ident[ID_FUA].varies ? d->ident[ID_FUA].v : NULL,
		      d && !d->ident[ID_WCACHE].varies ? d->ident[ID_WCACHE].v : NULL, &q);
	/* on an eMMC, fua is reliable writes: what EXT_CSD says of them */
	if (d && !d->cond[COND_EXT_CSD].varies && !d->cond[COND_RECORD_SIZE].varies && d->cond[COND_RECORD_SIZE].v &&
	    json_object_is_type(d->cond[COND_RECORD_SIZE].v, json_type_int) &&
	    json_object_get_int64(d->cond[COND_RECORD_SIZE].v) > 0)
		pc_queue_read_emmc(d->cond[COND_EXT_CSD].v, (uint64_t)json_object_get_int64(d->cond[COND_RECORD_SIZE].v),
				   &q);
	return pc_io_became(mode, m->rq, 1, &q, buf, len);
}

double rep_rate(const struct rep_mode *m)
{
	return m->rate_n ? m->rate_sum / (double)m->rate_n : -1.0;
}

double rep_mib(const struct rep_mode *m)
{
	return m->mib_n ? m->mib_sum / (double)m->mib_n : -1.0;
}

uint32_t rep_lat_q(const struct rep_mode *m, double q)
{
	return pc_lat_quantile(m->lat.hist, m->lat.n, q, m->lat.max);
}

const struct rep_mode *rep_find_mode(const struct rep_dev *d, const char *name)
{
	for (unsigned i = 0; i < d->nmodes; i++)
		if (!strcmp(d->modes[i].name, name))
			return &d->modes[i];
	return NULL;
}

double rep_cost_vs_none(const struct rep_dev *d, const struct rep_mode *m)
{
	const struct rep_mode *none = rep_find_mode(d, "none");
	double a, b;

	if (!none || none == m)
		return -1.0;
	a = rep_rate(none);
	b = rep_rate(m);
	return a > 0 && b > 0 ? a / b : -1.0;
}

const char *rep_time_text(int64_t ms, char *buf, size_t len)
{
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;

	if (ms < 0 || !gmtime_r(&sec, &tm)) {
		snprintf(buf, len, "-");
		return buf;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec);
	return buf;
}


/* ---- what a qualification signs ---- */

double rep_bound(const struct rep *r, const struct rep_mode *m, unsigned long *k, unsigned long *n)
{
	unsigned long kk = m->out[PC_OUT_FAIL], nn = m->out[PC_OUT_PASS] + m->out[PC_OUT_FAIL];

	if (k)
		*k = kk;
	if (n)
		*n = nn;
	if (!nn)
		return -1.0;
	return qual_upper(kk, nn, r->confidence);
}

const char *rep_pct_text(double p, char *buf, size_t len)
{
	double pct = p * 100.0;

	if (pct >= 99.95)
		snprintf(buf, len, "100%%");
	else if (pct >= 10)
		snprintf(buf, len, "%.1f%%", pct);
	else if (pct >= 1)
		snprintf(buf, len, "%.2f%%", pct);
	else {
		/* three significant digits, however small */
		int dec = 3;

		for (double x = pct; x > 0 && x < 1 && dec < 12; x *= 10)
			dec++;
		snprintf(buf, len, "%.*f%%", dec - 1, pct);
	}
	return buf;
}

/* "95%", "99.9%" */
static const char *conf_text(double c, char *buf, size_t len)
{
	snprintf(buf, len, "%.4g%%", c * 100.0);
	return buf;
}

const char *rep_bound_text(const struct rep *r, const struct rep_mode *m, char *buf, size_t len)
{
	unsigned long k, n;
	double up = rep_bound(r, m, &k, &n);
	char u[32], c[32], seen[32];

	if (up < 0) {
		snprintf(buf, len, "no cut judged");
		return buf;
	}
	rep_pct_text(up, u, sizeof(u));
	conf_text(r->confidence, c, sizeof(c));
	if (!k)
		snprintf(buf, len, "below %s at %s", u, c);
	else
		snprintf(buf, len, "%lu of %lu cuts (%s): below %s at %s", k, n,
			 rep_pct_text((double)k / (double)n, seen, sizeof(seen)), u, c);
	return buf;
}

int rep_phase_flags(const struct rep_mode *m, char *buf, size_t len)
{
	unsigned long cuts = 0;
	int mode = m->name[0] ? pc_mode_from_name(m->name) : -1, nf = 0;
	size_t at = 0;

	buf[0] = 0;
	for (int k = 0; k < PH_N; k++)
		cuts += m->phase[k];
	if (!cuts || mode < 0)
		return 0;
	/* the phases a mode is about: its flushes, its FUA writes (cuts during
	 * writes at all are rep_mode_inconclusive's) */
	int flushes = mode == PC_MODE_FLUSH || mode == PC_MODE_JOURNAL;
	int fuas = mode == PC_MODE_FUA || mode == PC_MODE_FUA_FLUSH || mode == PC_MODE_JOURNAL;
	const char *flag[2] = {
		flushes && !m->phase[PH_FLUSH] ? "during a flush" : NULL,
		fuas && !m->phase[PH_FUA] ? "during a FUA write" : NULL,
	};
	for (int i = 0; i < 2; i++) {
		int w;

		if (!flag[i])
			continue;
		w = snprintf(buf + at, len - at, "%s%s", nf ? " or " : "no cut landed ", flag[i]);
		if (w > 0 && at + (size_t)w < len)
			at += (size_t)w;
		nf++;
	}
	if (nf)
		snprintf(buf + at, len - at, " in mode %s", m->name);
	return nf;
}

unsigned long rep_cuts_in_writes(const struct rep_mode *m, unsigned long *judged)
{
	unsigned long n = 0;

	for (int k = 0; k < PH_N; k++)
		n += m->phase[k];
	if (judged)
		*judged = n;
	return m->phase[PH_NONE_ACKED] + m->phase[PH_ACKED_PENDING] + m->phase[PH_FLUSH] + m->phase[PH_FUA];
}

int rep_mode_inconclusive(const struct rep_mode *m, char *buf, size_t len)
{
	unsigned long judged, in = rep_cuts_in_writes(m, &judged), need;

	buf[0] = 0;
	/* a mode that FAILed proved its violation, whatever its cuts met */
	if (!m->name[0] || pc_mode_from_name(m->name) < 0 || !judged || m->out[PC_OUT_FAIL])
		return 0;
	/* at least one, and at least REP_IN_WRITES_PCT percent, rounded up */
	need = (judged * REP_IN_WRITES_PCT + 99) / 100;
	if (need < 1)
		need = 1;
	if (in >= need)
		return 0;
	snprintf(buf, len, "mode %s: %lu of %lu cuts landed during writes, fewer than %lu (at least one, and %d%%): "
		 "%lu before the first write, %lu after the last ACK; cut earlier (a window_ms that ends before the "
		 "writes do), write longer (records_per_cycle), or cut at flushes and FUA writes (cut plan mix)",
		 m->name, in, judged, need, REP_IN_WRITES_PCT, m->phase[PH_BEFORE], m->phase[PH_AFTER]);
	return 1;
}

unsigned rep_dev_inconclusive(const struct rep_dev *d)
{
	unsigned n = 0;
	char b[8];

	for (unsigned i = 0; i < d->nmodes; i++)
		n += (unsigned)rep_mode_inconclusive(&d->modes[i], b, sizeof(b));
	return n;
}

/* DEVICE_LIFE_TIME_EST_TYP_A/B: 1 is 0-10% of the life used ... 10 is 90-100%, 11 past it. */
static void life_text(int v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "?");
	else if (v == 0)
		snprintf(buf, len, "0 (not defined)");
	else if (v <= 10)
		snprintf(buf, len, "%d (%d-%d%% used)", v, (v - 1) * 10, v * 10);
	else if (v == 11)
		snprintf(buf, len, "11 (exceeded)");
	else
		snprintf(buf, len, "%d (reserved)", v);
}

int rep_wear_text(const struct rep_wear *w, char *buf, size_t len)
{
	char a[32], b[32];
	static const char *const eol[] = { "not defined", "normal", "warning", "urgent" };

	life_text(w->a, a, sizeof(a));
	life_text(w->b, b, sizeof(b));
	if (w->eol < 0)
		return snprintf(buf, len, "life time A %s, B %s, pre-EOL ?", a, b);
	return snprintf(buf, len, "life time A %s, B %s, pre-EOL %d (%s)", a, b, w->eol,
			w->eol <= 3 ? eol[w->eol] : "reserved");
}

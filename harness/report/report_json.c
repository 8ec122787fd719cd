/*
 * report_json.c - the report as one JSON document (`report --format json`),
 * with the names verdicts.jsonl uses: "verdicts" counts outcomes by their
 * names (PASS, FAIL, BOOT_FAIL, INFRA_ERROR), "counts" findings by class,
 * "violations" is a number (by class in "violations_by_class"), "device",
 * "queue", "kernel", "rate" and "latency_us" as in a verdict. Documented
 * field by field in docs/results.md.
 */
#include "harness/report/report_crash.h"
#include "harness/report/report_model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "common/util.h"
#include "harness/report/qualify.h"

static json_object *jint(uint64_t v)
{
	return json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

/* one decimal (or digits), written as such */
static json_object *jdouble(double v, int decimals)
{
	char txt[64];

	snprintf(txt, sizeof(txt), "%.*f", decimals, v);
	return json_object_new_double_s(strtod(txt, NULL), txt);
}

static json_object *class_obj(const unsigned long *v, unsigned long refused, int zeros)
{
	json_object *o = json_object_new_object();

	for (int c = 0; c < NCLASS; c++)
		if (v[c] || zeros)
			json_object_object_add(o, pc_class_names[c], jint(v[c]));
	if (refused || zeros)
		json_object_object_add(o, REFUSED_NAME, jint(refused));
	return o;
}

static json_object *latency_json(const struct rep_mode *m)
{
	json_object *l;

	if (!m->lat.n)
		return NULL;
	l = json_object_new_object();
	json_object_object_add(l, "n", jint(m->lat.n));
	json_object_object_add(l, "p50", jint(rep_lat_q(m, 0.5)));
	json_object_object_add(l, "p99", jint(rep_lat_q(m, 0.99)));
	json_object_object_add(l, "max", jint(m->lat.max));
	return l;
}

/* torn records by the sector their new data ends at */
static json_object *tears_json(const struct rep_mode *m)
{
	json_object *t = json_object_new_object(), *at = json_object_new_object();
	char k[16];

	json_object_object_add(t, "record_sectors", jint(m->record_sectors));
	for (unsigned s = 0; s < REP_TEAR_SECTORS; s++)
		if (m->tears[s]) {
			snprintf(k, sizeof(k), "%u", s);
			json_object_object_add(at, k, jint(m->tears[s]));
		}
	json_object_object_add(t, "at_sector", at);
	return t;
}

/* what reached the device (verdicts' io_audit) */
static json_object *io_json(const struct rep_dev *d, const struct rep_mode *m)
{
	static const char *const rq_names[PC_NRQ] = { "write", "fua", "flush", "other" };
	json_object *io = json_object_new_object(), *rq = json_object_new_object();
	char became[160];

	json_object_object_add(io, "cycles", jint(m->audited));
	json_object_object_add(io, "unavailable", jint(m->audit_unavailable));
	for (int k = 0; k < PC_NRQ; k++)
		json_object_object_add(rq, rq_names[k], jint(m->rq[k]));
	json_object_object_add(io, "rq", rq);
	json_object_object_add(io, "became", rep_io_became(d, m, became, sizeof(became)) ?
			       json_object_new_string(became) : NULL);
	json_object_object_add(io, "not_the_mode_cycles", jint(m->io_notes));
	return io;
}

static json_object *first_fail_json(const struct rep *r, const struct rep_mode *m)
{
	json_object *ff = json_object_new_array();

	for (unsigned k = 0; k < m->nfirst_fail; k++) {
		json_object *f = json_object_new_object();

		json_object_object_add(f, "board", json_object_new_string(r->boards[m->first_fail[k].board].name));
		json_object_object_add(f, "cycle", jint(m->first_fail[k].cycle));
		json_object_object_add(f, "violations", json_object_new_string(m->first_fail[k].what));
		json_object_array_add(ff, f);
	}
	return ff;
}

/* what a qualification signs: the bound, where the cuts landed
 * (violation_rate, cut_phases, flags) */
static void bound_json(json_object *o, const struct rep_mode *m, const struct rep *r)
{
	json_object *b = json_object_new_object(), *ph = json_object_new_object(), *fl = json_object_new_array();
	unsigned long k, n;
	double up = rep_bound(r, m, &k, &n);
	char txt[160];

	json_object_object_add(b, "method", json_object_new_string(QUAL_METHOD));
	json_object_object_add(b, "confidence", jdouble(r->confidence, 4));
	json_object_object_add(b, "cuts", jint(n));
	json_object_object_add(b, "cuts_in_flight", jint(m->inflight));
	json_object_object_add(b, "violated", jint(k));
	json_object_object_add(b, "upper", up >= 0 ? jdouble(up, 10) : NULL);
	json_object_object_add(b, "text", json_object_new_string(rep_bound_text(r, m, txt, sizeof(txt))));
	json_object_object_add(o, "violation_rate", b);
	for (int p = 0; p < PH_N; p++)
		json_object_object_add(ph, rep_phase_keys[p], jint(m->phase[p]));
	json_object_object_add(o, "cut_phases", ph);
	if (rep_phase_flags(m, txt, sizeof(txt)))
		json_object_array_add(fl, json_object_new_string(txt));
	json_object_object_add(o, "flags", fl);
}

static void mode_json(json_object *o, const struct rep_dev *d, const struct rep_mode *m, const struct rep *r)
{
	json_object *out = json_object_new_object(), *rate = json_object_new_object();
	double c;

	json_object_object_add(o, "cycles", jint(rep_mode_cycles(m)));
	for (int k = 0; k < PC_NOUTCOMES; k++)
		json_object_object_add(out, pc_outcome_names[k], jint(m->out[k]));
	json_object_object_add(o, "verdicts", out);
	json_object_object_add(o, "violations", jint(m->violations));
	json_object_object_add(o, "violations_by_class", class_obj(m->viol, m->refused, 0));
	json_object_object_add(o, "counts", class_obj(m->found, m->refused, 1));
	json_object_object_add(o, "cycles_writing", jint(m->worked));
	json_object_object_add(o, "cuts_in_flight", jint(m->inflight));
	json_object_object_add(o, "torn_cycles", jint(m->torn_cycles));
	json_object_object_add(rate, "records_per_s", m->rate_n ? jdouble(rep_rate(m), 1) : NULL);
	json_object_object_add(rate, "mib_per_s", m->mib_n ? jdouble(rep_mib(m), 3) : NULL);
	json_object_object_add(o, "rate", rate);
	json_object_object_add(o, "latency_us", latency_json(m));
	c = rep_cost_vs_none(d, m);
	json_object_object_add(o, "vs_none", c > 0 ? jdouble(c, 3) : NULL);
	if (m->tears_n)
		json_object_object_add(o, "tears", tears_json(m));
	json_object_object_add(o, "io_audit", io_json(d, m));
	json_object_object_add(o, "first_fail", first_fail_json(r, m));
	bound_json(o, m, r);
}

static json_object *strlist_json(const struct strlist *l)
{
	json_object *a = json_object_new_array();

	for (unsigned i = 0; i < l->n; i++)
		json_object_array_add(a, json_object_new_string(l->v[i]));
	return a;
}

static json_object *time_json(int64_t ms)
{
	char b[40];

	return ms < 0 ? NULL : json_object_new_string(rep_time_text(ms, b, sizeof(b)));
}

/* device, queue, kernel, agent as the verdicts say them, and which of them
 * (or of the conditions) varied */
static void ident_json(json_object *o, const struct rep_dev *d)
{
	static const int devkeys[] = { ID_TYPE, ID_NAME, ID_MANFID, ID_CID, ID_SERIAL, ID_FWREV };
	json_object *dev = json_object_new_object(), *q = json_object_new_object(), *varies;

	for (size_t k = 0; k < PC_ARRAY_SIZE(devkeys); k++)
		json_object_object_add(dev, rep_id_keys[devkeys[k]], json_object_get(d->ident[devkeys[k]].v));
	json_object_object_add(o, "device", dev);
	json_object_object_add(q, "fua", json_object_get(d->ident[ID_FUA].v));
	json_object_object_add(q, "write_cache", json_object_get(d->ident[ID_WCACHE].v));
	json_object_object_add(o, "queue", q);
	json_object_object_add(o, "kernel", json_object_get(d->ident[ID_KERNEL].v));
	json_object_object_add(o, "agent", json_object_get(d->ident[ID_AGENT].v));
	varies = json_object_new_array();
	for (int k = 0; k < ID_N; k++)
		if (d->ident[k].varies)
			json_object_array_add(varies, json_object_new_string(rep_id_keys[k]));
	for (int k = 0; k < COND_N; k++)
		if (d->cond[k].varies)
			json_object_array_add(varies, json_object_new_string(rep_cond_keys[k]));
	json_object_object_add(o, "varies", varies);
}

/* why cycles were not judged (INFRA_ERROR) or did not boot (BOOT_FAIL) */
static json_object *unjudged_json(const struct rep_dev *d)
{
	json_object *rs = json_object_new_array();

	for (unsigned k = 0; k < d->nreasons; k++) {
		json_object *x = json_object_new_object();

		json_object_object_add(x, "verdict", json_object_new_string(pc_outcome_names[d->reasons[k].out]));
		json_object_object_add(x, "cycles", jint(d->reasons[k].n));
		json_object_object_add(x, "first", jint(d->reasons[k].first));
		json_object_object_add(x, "last", jint(d->reasons[k].last));
		json_object_object_add(x, "reason", json_object_new_string(d->reasons[k].text));
		json_object_array_add(rs, x);
	}
	return rs;
}

static json_object *modes_json(const struct rep *r, const struct rep_dev *d)
{
	json_object *modes = json_object_new_array();

	for (unsigned i = 0; i < d->nmodes; i++) {
		json_object *mo = json_object_new_object(), *ran = json_object_new_object();
		const struct rep_mode *m = &d->modes[i];

		json_object_object_add(mo, "mode", m->name[0] ? json_object_new_string(m->name) : NULL);
		mode_json(mo, d, m, r);
		for (unsigned k = 0; k < m->nran; k++)
			json_object_object_add(ran, m->ran[k].name, jint(m->ran[k].n));
		json_object_object_add(mo, "ran_as", ran);
		json_object_array_add(modes, mo);
	}
	return modes;
}

/* EXT_CSD's wear: the first verdict's, every change, the last */
static json_object *wear_json(const struct rep *r, const struct rep_dev *d)
{
	json_object *w = json_object_new_object(), *pts = json_object_new_array();

	for (unsigned i = 0; i <= d->nwear; i++) {
		const struct rep_wear *x = i < d->nwear ? &d->wear[i] : &d->wear_last;
		json_object *p = json_object_new_object();

		json_object_object_add(p, "board", json_object_new_string(r->boards[x->board].name));
		json_object_object_add(p, "cycle", jint(x->cycle));
		json_object_object_add(p, "time", time_json(x->time_ms));
		json_object_object_add(p, "life_time_a", x->a >= 0 ? json_object_new_int(x->a) : NULL);
		json_object_object_add(p, "life_time_b", x->b >= 0 ? json_object_new_int(x->b) : NULL);
		json_object_object_add(p, "pre_eol_info", x->eol >= 0 ? json_object_new_int(x->eol) : NULL);
		if (i < d->nwear)
			json_object_array_add(pts, p);
		else
			json_object_object_add(w, "last", p);
	}
	json_object_object_add(w, "changes", jint(d->wear_changes));
	json_object_object_add(w, "points", pts);
	return w;
}

/* No PASS without evidence: each mode whose cuts missed its writes
 * (rep_mode_inconclusive), {mode, cuts, cuts_in_writes, needed, why}. */
static json_object *inconclusive_json(const struct rep_dev *d)
{
	json_object *a = json_object_new_array();
	char why[512];

	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];
		unsigned long judged, in = rep_cuts_in_writes(m, &judged);
		json_object *o;

		if (!rep_mode_inconclusive(m, why, sizeof(why)))
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "mode", json_object_new_string(m->name));
		json_object_object_add(o, "cuts", jint(judged));
		json_object_object_add(o, "cuts_in_writes", jint(in));
		json_object_object_add(o, "share_needed", jdouble(REP_IN_WRITES_PCT / 100.0, 2));
		json_object_object_add(o, "why", json_object_new_string(why));
		json_object_array_add(a, o);
	}
	return a;
}

static json_object *device_json(const struct rep *r, const struct rep_dev *d)
{
	json_object *o = json_object_new_object(), *why, *cond = json_object_new_object();
	struct rep_mode t;

	rep_mode_sum(d, &t);
	json_object_object_add(o, "id", d->id ? json_object_new_string(d->id) : NULL);
	json_object_object_add(o, "result", json_object_new_string(pc_result_names[rep_dev_result(d, &t)]));
	json_object_object_add(o, "part", json_object_new_string(d->part ? d->part : ""));
	json_object_object_add(o, "boards", strlist_json(&d->boards));
	json_object_object_add(o, "campaigns", strlist_json(&d->campaigns));
	json_object_object_add(o, "hosts", strlist_json(&d->hosts));
	json_object_object_add(o, "powercut", strlist_json(&d->versions));
	ident_json(o, d);
	for (int k = 0; k < COND_N; k++)
		json_object_object_add(cond, rep_cond_keys[k], json_object_get(d->cond[k].v));
	json_object_object_add(o, "conditions", cond);
	json_object_object_add(o, "first_time", time_json(d->first_ms));
	json_object_object_add(o, "last_time", time_json(d->last_ms));
	why = json_object_new_array();
	for (unsigned k = 0; k < d->nwhy; k++)
		json_object_array_add(why, json_object_get(d->why[k].j));
	json_object_object_add(o, "incomplete", why);
	json_object_object_add(o, "inconclusive", inconclusive_json(d));
	json_object_object_add(o, "stopped", d->stopped ? json_object_new_string(d->stopped) : NULL);
	json_object_object_add(o, "unjudged", unjudged_json(d));
	json_object_object_add(o, "unjudged_more", jint(d->reasons_more));
	json_object_object_add(o, "infra_share", rep_mode_cycles(&t) ? json_object_new_double(
		(double)t.out[PC_OUT_INFRA_ERROR] / (double)rep_mode_cycles(&t)) : NULL);
	json_object_object_add(o, "infra_share_limit", json_object_new_double(d->limit));
	mode_json(o, d, &t, r);
	json_object_object_add(o, "modes", modes_json(r, d));
	if (d->has_wear)
		json_object_object_add(o, "wear", wear_json(r, d));
	return o;
}

int report_json(const struct rep *r, FILE *out, const char *const *dirs, int ndirs)
{
	json_object *doc = json_object_new_object(), *a = json_object_new_array(), *devs;
	if (!doc || !a) {
		json_object_put(doc);
		json_object_put(a);
		return -ENOMEM;
	}
	json_object_object_add(doc, "format", json_object_new_string(PC_FORMAT));
	for (int i = 0; i < ndirs; i++)
		json_object_array_add(a, json_object_new_string(dirs[i]));
	json_object_object_add(doc, "results", a);
	json_object_object_add(doc, "result", json_object_new_string(rep_result_name(r)));
	json_object_object_add(doc, "torn_lines_ignored", jint(r->torn_lines));
	json_object_object_add(doc, "duplicates_ignored", jint(r->duplicates));
	devs = json_object_new_array();
	json_object_object_add(doc, "devices", devs);
	for (unsigned i = 0; i < r->ndevs; i++)
		json_object_array_add(devs, device_json(r, &r->devs[i]));
	rep_crash_json(r, doc);	/* ENOMEM: the document without it */
	fprintf(out, "%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
							    JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
	return ferror(out) ? -EIO : 0;
}

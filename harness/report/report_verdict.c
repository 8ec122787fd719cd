/*
 * report_verdict.c - one verdict line of verdicts.jsonl, checked for everything
 * the report uses (report_int.h: struct verdict).
 */
#include "harness/report/report_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include "common/record.h"
#include "common/util.h"
#include "harness/results/jsonl.h"
#include "harness/results/results.h"

/* ---- one verdict ---- */

int rep_opt_string(struct rep *r, const char *file, unsigned long line, json_object *o,
		      const char *key, const char *what, const char **out)
{
	json_object *v = pc_jget(o, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return rep_fail(r, file, line, "%s: expected a string, got %s", what,
				json_type_to_name(json_object_get_type(v)));
	*out = json_object_get_string(v);
	return 0;
}

int rep_opt_count(struct rep *r, const char *file, unsigned long line, json_object *v,
		     const char *what, uint64_t *out)
{
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return rep_fail(r, file, line, "%s: expected a count (an integer >= 0), got %s", what,
				json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	*out = json_object_get_uint64(v);
	return 0;
}

/* Identity fields are shown as they came: strings or numbers. */
static int check_scalar(struct rep *r, const char *file, unsigned long line, json_object *v, const char *what)
{
	if (!v || json_object_is_type(v, json_type_null) || json_object_is_type(v, json_type_string) ||
	    json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double) ||
	    json_object_is_type(v, json_type_boolean))
		return 0;
	return rep_fail(r, file, line, "%s: expected a string or a number, got %s", what,
			json_type_to_name(json_object_get_type(v)));
}

static int verdict_findings(struct rep *r, const char *file, unsigned long line, json_object *f,
			    struct verdict *vd)
{
	size_t n;

	if (!f || json_object_is_type(f, json_type_null))
		return 0;
	if (!json_object_is_type(f, json_type_array))
		return rep_fail(r, file, line, "findings: expected an array");
	n = json_object_array_length(f);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(f, i), *cls = pc_jget(e, "class"), *vio;

		if (!json_object_is_type(e, json_type_object) || !cls ||
		    !json_object_is_type(cls, json_type_string))
			return rep_fail(r, file, line, "findings[%zu]: expected an object with a \"class\" string", i);
		vio = pc_jget(e, "violation");
		if (vio && !json_object_is_type(vio, json_type_boolean))
			return rep_fail(r, file, line, "findings[%zu].violation: expected true or false", i);
		if ((pc_class_from_name(json_object_get_string(cls)) == PC_CLS_TORN ||
		     pc_class_from_name(json_object_get_string(cls)) == PC_CLS_TORN_SECTOR) &&
		    pc_jget(e, "boundary")) {
			uint64_t at = 0;
			char what[64];
			int rc;

			snprintf(what, sizeof(what), "findings[%zu].boundary", i);
			if ((rc = rep_opt_count(r, file, line, pc_jget(e, "boundary"), what, &at)))
				return rc;
			vd->tears[at < REP_TEAR_SECTORS ? at : REP_TEAR_SECTORS - 1]++;
			vd->ntears++;
		}
		if (!vio || !json_object_get_boolean(vio))
			continue;
		if (pc_class_from_name(json_object_get_string(cls)) == PC_CLS_COLLATERAL && pc_jget(e, "what") &&
		    json_object_is_type(pc_jget(e, "what"), json_type_string) &&
		    !strcmp(json_object_get_string(pc_jget(e, "what")), REFUSED_NAME)) {
			/* one finding may stand for n refused writes */
			uint64_t nref = 1;
			char what[64];
			int rc;

			snprintf(what, sizeof(what), "findings[%zu].n", i);
			if ((rc = rep_opt_count(r, file, line, pc_jget(e, "n"), what, &nref)))
				return rc;
			vd->refused += nref;
			continue;
		}
		/* a class from a newer engine is still a violation, just not itemised */
		for (int c = 0; c < NCLASS; c++)
			if (strcmp(json_object_get_string(cls), pc_class_names[c]) == 0)
				vd->fviol[c]++;
	}
	return 0;
}

/* A verdict in a newer major format than this report reads is refused. */
static int verdict_format(struct rep *r, const char *file, unsigned long line, json_object *v)
{
	char why[256];
	int ma, mi;

	if (pc_format_read(pc_jget(v, "format"), "verdict", &ma, &mi, why, sizeof(why)))
		return rep_fail(r, file, line, "%s", why);
	return 0;
}

/* "time": RFC 3339 UTC, "2026-11-30T16:40:17.773Z" (milliseconds optional). */
static int verdict_time(struct rep *r, const char *file, unsigned long line, json_object *v, struct verdict *vd)
{
	const char *s;
	struct tm tm;
	int ms = 0, n = 0, rc;
	time_t t;

	vd->time_ms = -1;
	if ((rc = rep_opt_string(r, file, line, v, "time", "time", &s)) || !s)
		return rc;
	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
		   &tm.tm_sec, &n) != 6 || n != 19)
		goto bad;
	if (s[n] == '.') {
		int k = 0;

		while (s[n + 1 + k] >= '0' && s[n + 1 + k] <= '9' && k < 9) {
			if (k < 3)
				ms = ms * 10 + (s[n + 1 + k] - '0');
			k++;
		}
		if (!k)
			goto bad;
		for (int z = k; z < 3; z++)
			ms *= 10;
		n += 1 + k;
	}
	if (strcmp(s + n, "Z") || tm.tm_year < 1970 || tm.tm_year > 9999 || tm.tm_mon < 1 || tm.tm_mon > 12 ||
	    tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		goto bad;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	t = timegm(&tm);
	if (t < 0)
		goto bad;
	vd->time_ms = (int64_t)t * 1000 + ms;
	return 0;
bad:
	return rep_fail(r, file, line, "time: expected an RFC 3339 UTC time such as 2026-11-30T16:40:17.773Z, got "
			"\"%.40s\"", s);
}

/* "latency_us": {n, p50, p99, max, hist: [[lower bound, count], ...]}; the
 * histogram's counts add up to n, each bound is a bucket's (verdict.h). */
static int verdict_latency(struct rep *r, const char *file, unsigned long line, json_object *o,
			   struct verdict *vd)
{
	json_object *h;
	uint64_t sum = 0;
	size_t n;
	int rc;

	if (!o || json_object_is_type(o, json_type_null))
		return 0;
	if (!json_object_is_type(o, json_type_object))
		return rep_fail(r, file, line, "latency_us: expected an object");
	if ((rc = rep_opt_count(r, file, line, pc_jget(o, "n"), "latency_us.n", &vd->lat_n)) ||
	    (rc = rep_opt_count(r, file, line, pc_jget(o, "p50"), "latency_us.p50", &vd->lat_p50)) ||
	    (rc = rep_opt_count(r, file, line, pc_jget(o, "p99"), "latency_us.p99", &vd->lat_p99)) ||
	    (rc = rep_opt_count(r, file, line, pc_jget(o, "max"), "latency_us.max", &vd->lat_max)))
		return rc;
	if (vd->lat_n > UINT32_MAX || vd->lat_max > PC_LAT_MAX_US || vd->lat_p50 > vd->lat_max ||
	    vd->lat_p99 > vd->lat_max)
		return rep_fail(r, file, line, "latency_us: n at most 2^32, p50 <= max, p99 <= max <= %u", PC_LAT_MAX_US);
	h = pc_jget(o, "hist");
	if (!h || !json_object_is_type(h, json_type_array) || (n = json_object_array_length(h)) > PC_LAT_BUCKETS)
		return rep_fail(r, file, line, "latency_us.hist: expected an array of at most %u [bound, count] pairs",
				PC_LAT_BUCKETS);
	for (size_t i = 0; i < n; i++) {
		json_object *pair = json_object_array_get_idx(h, i);
		uint64_t lo = 0, c = 0;
		char what[64];

		snprintf(what, sizeof(what), "latency_us.hist[%zu]", i);
		if (!json_object_is_type(pair, json_type_array) || json_object_array_length(pair) != 2)
			return rep_fail(r, file, line, "%s: expected a [bound, count] pair", what);
		if ((rc = rep_opt_count(r, file, line, json_object_array_get_idx(pair, 0), what, &lo)) ||
		    (rc = rep_opt_count(r, file, line, json_object_array_get_idx(pair, 1), what, &c)))
			return rc;
		if (lo > PC_LAT_MAX_US || pc_lat_lo(pc_lat_bucket((uint32_t)lo)) != lo || c > UINT32_MAX)
			return rep_fail(r, file, line, "%s: %llu is not a bucket's lower bound", what,
					(unsigned long long)lo);
		vd->lat_hist[pc_lat_bucket((uint32_t)lo)] += c;
		sum += c;
	}
	if (sum != vd->lat_n)
		return rep_fail(r, file, line, "latency_us: the histogram counts %llu, n says %llu",
				(unsigned long long)sum, (unsigned long long)vd->lat_n);
	return 0;
}

/* "io_audit": {"unavailable": why} or {"src": ..., "rq": {kind: count, ...}}. */
static int verdict_audit(struct rep *r, const char *file, unsigned long line, json_object *o, struct verdict *vd)
{
	json_object *rq;
	int rc;

	if (!o || json_object_is_type(o, json_type_null))
		return 0;
	if (!json_object_is_type(o, json_type_object))
		return rep_fail(r, file, line, "io_audit: expected an object");
	if (pc_jget(o, "unavailable")) {
		if ((rc = rep_opt_string(r, file, line, o, "unavailable", "io_audit.unavailable", &vd->audit_why)))
			return rc;
		vd->audit = -1;
		return 0;
	}
	rq = pc_jget(o, "rq");
	if (!rq || !json_object_is_type(rq, json_type_object) || json_object_object_length(rq) > 32)
		return rep_fail(r, file, line, "io_audit.rq: expected an object of at most 32 request kinds");
	json_object_object_foreach(rq, k, n) {
		uint64_t c = 0;

		if (strlen(k) > 9 || (strcmp(k, "other") && strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(k)) || !k[0])
			return rep_fail(r, file, line, "io_audit.rq: \"%.20s\" is not a request kind", k);
		if ((rc = rep_opt_count(r, file, line, n, "io_audit.rq", &c)))
			return rc;
		if (c > (1ull << 40))
			return rep_fail(r, file, line, "io_audit.rq.%s: more than 2^40 requests", k);
		pc_rq_add(k, c, vd->rq);
	}
	vd->audit = 1;
	return 0;
}

/* An EXT_CSD byte the device's ext_csd gives (0..255), or -1. */
static int wear_byte(struct rep *r, const char *file, unsigned long line, json_object *x, const char *key, int *out)
{
	json_object *v = pc_jget(x, key);
	int64_t n;

	*out = -1;
	if (!v || json_object_is_type(v, json_type_null))
		return 0;
	n = json_object_get_int64(v);
	if (!json_object_is_type(v, json_type_int) || n < 0 || n > 255)
		return rep_fail(r, file, line, "device.ext_csd.%s: expected a byte (0 to 255)", key);
	*out = (int)n;
	return 0;
}

/*
 * Where the cut landed (enum rep_phase) of a judged cycle with writes, from
 * its records and cut: an announced flush or FUA write when the plan fired
 * there (or the sim cut itself at it), else by what was submitted and
 * acknowledged. -1 when the cycle wrote nothing judged.
 */
static int verdict_phase(struct rep *r, const char *file, unsigned long line, json_object *v, struct verdict *vd,
			 int *phase)
{
	json_object *cut = pc_jget(v, "cut");
	const char *trig = NULL, *plan = NULL;
	int rc;

	*phase = -1;
	if ((rc = rep_opt_string(r, file, line, cut, "trigger", "cut.trigger", &trig)) ||
	    (rc = rep_opt_string(r, file, line, cut, "plan", "cut.plan", &plan)))
		return rc;
	if (!vd->planned || (vd->out != PC_OUT_PASS && vd->out != PC_OUT_FAIL))
		return 0;
	/* a relay's cut at an announced flush or FUA write with every record
	 * acknowledged by the time the power went came after them (a slow
	 * relay): placed by its records below; the sim's own cut is exact */
	int pending = vd->submitted > vd->acked;
	if (trig && ((!strcmp(trig, pc_trigger_names[PC_CUT_FLUSH]) && pending) ||
		     (!strcmp(trig, pc_trigger_names[PC_CUT_SIM_EXACT]) && plan && !strcmp(plan, "flush"))))
		*phase = PH_FLUSH;
	else if (trig && ((!strcmp(trig, pc_trigger_names[PC_CUT_FUA]) && pending) ||
			  (!strcmp(trig, pc_trigger_names[PC_CUT_SIM_EXACT]) && plan && !strcmp(plan, "fua"))))
		*phase = PH_FUA;
	else if (!vd->submitted)
		*phase = PH_BEFORE;
	/* after the writes only when the cycle's work was done: a cut between
	 * two records (the last submitted one acknowledged, the next not yet
	 * submitted) met the writes as much as one with a record in flight */
	else if ((trig && !strcmp(trig, pc_trigger_names[PC_CUT_WORK_DONE])) || vd->acked >= vd->planned)
		*phase = PH_AFTER;
	else
		*phase = vd->acked ? PH_ACKED_PENDING : PH_NONE_ACKED;
	return 0;
}

/* verdict, board, campaign, cycle, and the strings that may be null */
static int verdict_names(struct rep *r, const char *file, unsigned long line, json_object *v, struct verdict *vd)
{
	static const char *const nullable[] = { "mode", "mode_run", "reason" };
	const char **dst[] = { &vd->mode, &vd->mode_run, &vd->reason };
	json_object *o;
	const char *s;
	int rc;

	if ((rc = rep_opt_string(r, file, line, v, "verdict", "verdict", &s)))
		return rc;
	if (!s)
		return rep_fail(r, file, line, "missing \"verdict\"");
	for (vd->out = 0; vd->out < PC_NOUTCOMES; vd->out++)
		if (strcmp(s, pc_outcome_names[vd->out]) == 0)
			break;
	if (vd->out == PC_NOUTCOMES)
		return rep_fail(r, file, line, "unknown verdict '%s' (known: PASS FAIL BOOT_FAIL INFRA_ERROR)", s);
	if ((rc = rep_opt_string(r, file, line, v, "board", "board", &vd->board)))
		return rc;
	if (!vd->board)
		return rep_fail(r, file, line, "missing \"board\"");
	if ((rc = rep_opt_string(r, file, line, v, "campaign", "campaign", &vd->campaign)) ||
	    (rc = rep_opt_count(r, file, line, pc_jget(v, "cycle"), "cycle", &vd->cycle)))
		return rc;
	for (size_t i = 0; i < PC_ARRAY_SIZE(nullable); i++) {
		o = pc_jget(v, nullable[i]);
		if (o && !json_object_is_type(o, json_type_null) &&
		    (rc = rep_opt_string(r, file, line, v, nullable[i], nullable[i], dst[i])))
			return rc;
	}
	return 0;
}

/* member key of v: an object, or NULL when absent or null */
static int opt_object(struct rep *r, const char *file, unsigned long line, json_object *v, const char *key,
		      json_object **out)
{
	*out = pc_jget(v, key);
	if (*out && json_object_is_type(*out, json_type_null))
		*out = NULL;
	if (*out && !json_object_is_type(*out, json_type_object))
		return rep_fail(r, file, line, "%s: expected an object", key);
	return 0;
}

/* members keys of o ("in" names o in a message): strings or numbers, as check_scalar */
static int check_scalars(struct rep *r, const char *file, unsigned long line, json_object *o, const char *in,
			 const char *const *keys, size_t n)
{
	char what[64];
	int rc;

	for (size_t i = 0; i < n; i++) {
		snprintf(what, sizeof(what), "%s.%s", in, keys[i]);
		if ((rc = check_scalar(r, file, line, pc_jget(o, keys[i]), what)))
			return rc;
	}
	return 0;
}

/* device, queue and kernel: what identifies the device under test */
static int verdict_device(struct rep *r, const char *file, unsigned long line, json_object *v, struct verdict *vd)
{
	static const char *const dkeys[] = { "name", "manfid", "cid" };
	static const char *const qkeys[] = { "fua", "write_cache" };
	int rc;

	if ((rc = opt_object(r, file, line, v, "device", &vd->device)) ||
	    (rc = rep_opt_string(r, file, line, vd->device, "id", "device.id", &vd->id)))
		return rc;
	if (vd->id && !vd->id[0])
		vd->id = NULL;
	if ((rc = check_scalars(r, file, line, vd->device, "device", dkeys, PC_ARRAY_SIZE(dkeys))) ||
	    (rc = opt_object(r, file, line, v, "queue", &vd->queue)) ||
	    (rc = check_scalars(r, file, line, vd->queue, "queue", qkeys, PC_ARRAY_SIZE(qkeys))))
		return rc;
	vd->kernel = pc_jget(v, "kernel");
	return check_scalar(r, file, line, vd->kernel, "kernel");
}

/* counts: a count per class, any absent */
static int verdict_counts(struct rep *r, const char *file, unsigned long line, json_object *v, struct verdict *vd)
{
	json_object *counts = pc_jget(v, "counts");
	char what[64];
	int rc;

	if (!counts || json_object_is_type(counts, json_type_null))
		return 0;
	if (!json_object_is_type(counts, json_type_object))
		return rep_fail(r, file, line, "counts: expected an object");
	for (int c = 0; c < NCLASS; c++) {
		snprintf(what, sizeof(what), "counts.%s", pc_class_names[c]);
		if ((rc = rep_opt_count(r, file, line, pc_jget(counts, pc_class_names[c]), what, &vd->counts[c])))
			return rc;
	}
	return 0;
}

/* rate.records_per_s and rate.mib_per_s, 0 to 10^12 (vd->mib -1: none) */
static int verdict_rate(struct rep *r, const char *file, unsigned long line, json_object *v, struct verdict *vd)
{
	json_object *o = pc_jget(pc_jget(v, "rate"), "records_per_s");

	if (o && !json_object_is_type(o, json_type_null)) {
		if (!json_object_is_type(o, json_type_double) && !json_object_is_type(o, json_type_int))
			return rep_fail(r, file, line, "rate.records_per_s: expected a number");
		vd->rate = json_object_get_double(o);
		if (!(vd->rate >= 0 && vd->rate < 1e12))
			return rep_fail(r, file, line, "rate.records_per_s: expected a number from 0 to 10^12");
		vd->has_rate = 1;
	}
	vd->mib = -1.0;
	o = pc_jget(pc_jget(v, "rate"), "mib_per_s");
	if (o && !json_object_is_type(o, json_type_null)) {
		if ((!json_object_is_type(o, json_type_double) && !json_object_is_type(o, json_type_int)) ||
		    !(json_object_get_double(o) >= 0 && json_object_get_double(o) < 1e12))
			return rep_fail(r, file, line, "rate.mib_per_s: expected a number from 0 to 10^12");
		vd->mib = json_object_get_double(o);
	}
	return 0;
}

int rep_verdict_parse(struct rep *r, const char *file, unsigned long line, json_object *v,
			 struct verdict *vd)
{
	json_object *o, *rec;
	int rc;

	memset(vd, 0, sizeof(*vd));
	if (!json_object_is_type(v, json_type_object))
		return rep_fail(r, file, line, "expected a JSON object (one verdict per line)");
	rec = pc_jget(v, "records");
	if ((rc = verdict_names(r, file, line, v, vd)) ||
	    (rc = verdict_device(r, file, line, v, vd)) ||
	    (rc = verdict_counts(r, file, line, v, vd)) ||
	    (rc = rep_opt_count(r, file, line, pc_jget(v, "violations"), "violations", &vd->violations)) ||
	    (rc = verdict_findings(r, file, line, pc_jget(v, "findings"), vd)) ||
	    (rc = verdict_rate(r, file, line, v, vd)) ||
	    (rc = rep_opt_count(r, file, line, pc_jget(rec, "planned"), "records.planned", &vd->planned)) ||
	    (rc = rep_opt_count(r, file, line, pc_jget(rec, "acked"), "records.acked", &vd->acked)))
		return rc;
	vd->agent = pc_jget(v, "agent");
	if ((rc = check_scalar(r, file, line, vd->agent, "agent")) ||
	    (rc = verdict_format(r, file, line, v)) ||
	    (rc = verdict_time(r, file, line, v, vd)) ||
	    (rc = rep_opt_string(r, file, line, v, "host", "host", &vd->host)) ||
	    (rc = verdict_latency(r, file, line, pc_jget(v, "latency_us"), vd)) ||
	    (rc = verdict_audit(r, file, line, pc_jget(v, "io_audit"), vd)))
		return rc;
	vd->io_note = pc_jget(v, "io_note") != NULL;
	if ((rc = rep_opt_count(r, file, line, pc_jget(rec, "submitted"), "records.submitted", &vd->submitted)) ||
	    (rc = verdict_phase(r, file, line, v, vd, &vd->phase)))
		return rc;
	o = pc_jget(vd->device, "ext_csd");
	if ((rc = wear_byte(r, file, line, o, "life_time_a", &vd->life_a)) ||
	    (rc = wear_byte(r, file, line, o, "life_time_b", &vd->life_b)) ||
	    (rc = wear_byte(r, file, line, o, "pre_eol_info", &vd->pre_eol)))
		return rc;
	vd->has_wear = vd->life_a >= 0 || vd->life_b >= 0 || vd->pre_eol >= 0;
	return 0;
}


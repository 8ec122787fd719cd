/*
 * report.c - the per-device report: verdicts.jsonl in, struct rep out
 * (report_model.h), then one of the writers (report_text.c: text and
 * Markdown, report_json.c, report_csv.c: CSV and JUnit, report_html.c).
 *
 * Cycles are grouped by device identity (verdict.device.id), not by board:
 * the report is about parts, and the same part may sit in different boards
 * or labs, whose results directories merge here. A cycle is counted once
 * however often it is given: verdicts are de-duplicated on (host id,
 * campaign and its start, board, cycle), and the same folder given twice is
 * read once. Every file is read and checked before anything is printed, so a
 * damaged file never yields half a report that looks whole.
 *
 * A device is INCOMPLETE, never PASS, when the campaign judged too little:
 * a board of it was given up (give_up events), a board has fewer verdicts
 * than its run planned (run_end events, else campaign.json's cycles), a run
 * is still going or was killed (the folder's lock), or more of its cycles
 * were INFRA_ERROR than campaign.json's incomplete_infra_share allows. FAIL
 * and BOOT_FAIL still win: a proven violation stays one.
 */
#include "harness/report/report_model.h"

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
#include "harness/campaign/config.h"
#include "harness/results/jsonl.h"
#include "harness/results/results.h"

/* Cycle outcomes and record classes: DESIGN section 6 (a contract), named in
 * verdict.h. */
const char *const rep_id_keys[ID_N] = { "name", "manfid", "cid", "fua", "write_cache", "kernel", "fwrev",
					"serial", "type", "agent" };
const char *const rep_cond_keys[COND_N] = { "record_size", "region_bytes", "records_per_cycle", "modes",
					    "pattern", "flush_every", "queue_depth", "cut", "off_ms", "policy",
					    "ext_csd" };

/* Lines of one file still waiting for their device (no device.id on them). */
struct rep_pending {
	json_object *v;
	unsigned long line;
};

/* board -> the device id it last reported, within one file */
struct rep_boardmap {
	struct { char *board, *id; } *v;
	unsigned n;
};

/* The de-duplication set: keys by FNV-1a hash, open addressing. */
struct rep_seen {
	char **k;
	uint64_t *h;
	size_t cap, n;
};

static int strlist_find(const struct strlist *l, const char *s)
{
	for (unsigned i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return (int)i;
	return -1;
}

static int strlist_add(struct strlist *l, const char *s)
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

static void strlist_free(struct strlist *l)
{
	for (unsigned i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static json_object *jget(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!o || !json_object_is_type(o, json_type_object))
		return NULL;
	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

__attribute__((format(printf, 4, 5)))
static int rep_fail(struct rep *r, const char *file, unsigned long line, const char *fmt, ...)
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

/* ---- one verdict ---- */

/* A verdict line, checked for everything the report uses. */
struct verdict {
	int out;
	const char *board, *campaign, *mode, *mode_run, *id;
	json_object *device, *queue, *kernel;
	uint64_t counts[NCLASS];
	uint64_t fviol[NCLASS];		/* findings marked violation, per class */
	uint64_t refused;		/* refused writes (write_refused findings, with their n) */
	uint64_t violations;
	uint64_t cycle;			/* 0 when the line has none */
	int has_rate;
	double rate;
	double mib;			/* < 0: none */
	int64_t time_ms;		/* -1: none */
	const char *host;		/* NULL: none */
	uint64_t planned, acked;
	json_object *agent;
	/* latency_us: the cycle's figures and histogram (buckets of verdict.h) */
	uint64_t lat_n, lat_p50, lat_p99, lat_max;
	uint64_t lat_hist[PC_LAT_BUCKETS];
	/* torn findings by the sector their new data ends at */
	unsigned long tears[REP_TEAR_SECTORS];
	unsigned long ntears;
	/* io_audit: 1 audited (rq summed), -1 unavailable (why), 0 none */
	int audit;
	uint64_t rq[PC_NRQ];
	const char *audit_why;
	int io_note;
	const char *reason;		/* NULL: none */
};

static int opt_string(struct rep *r, const char *file, unsigned long line, json_object *o,
		      const char *key, const char *what, const char **out)
{
	json_object *v = jget(o, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return rep_fail(r, file, line, "%s: expected a string, got %s", what,
				json_type_to_name(json_object_get_type(v)));
	*out = json_object_get_string(v);
	return 0;
}

static int opt_count(struct rep *r, const char *file, unsigned long line, json_object *v,
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
		json_object *e = json_object_array_get_idx(f, i), *cls = jget(e, "class"), *vio;

		if (!json_object_is_type(e, json_type_object) || !cls ||
		    !json_object_is_type(cls, json_type_string))
			return rep_fail(r, file, line, "findings[%zu]: expected an object with a \"class\" string", i);
		vio = jget(e, "violation");
		if (vio && !json_object_is_type(vio, json_type_boolean))
			return rep_fail(r, file, line, "findings[%zu].violation: expected true or false", i);
		if ((pc_class_from_name(json_object_get_string(cls)) == PC_CLS_TORN ||
		     pc_class_from_name(json_object_get_string(cls)) == PC_CLS_TORN_SECTOR) &&
		    jget(e, "boundary")) {
			uint64_t at = 0;
			char what[64];
			int rc;

			snprintf(what, sizeof(what), "findings[%zu].boundary", i);
			if ((rc = opt_count(r, file, line, jget(e, "boundary"), what, &at)))
				return rc;
			vd->tears[at < REP_TEAR_SECTORS ? at : REP_TEAR_SECTORS - 1]++;
			vd->ntears++;
		}
		if (!vio || !json_object_get_boolean(vio))
			continue;
		if (pc_class_from_name(json_object_get_string(cls)) == PC_CLS_COLLATERAL && jget(e, "what") &&
		    json_object_is_type(jget(e, "what"), json_type_string) &&
		    !strcmp(json_object_get_string(jget(e, "what")), REFUSED_NAME)) {
			/* one finding may stand for n refused writes */
			uint64_t nref = 1;
			char what[64];
			int rc;

			snprintf(what, sizeof(what), "findings[%zu].n", i);
			if ((rc = opt_count(r, file, line, jget(e, "n"), what, &nref)))
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

	if (pc_format_read(jget(v, "format"), "verdict", &ma, &mi, why, sizeof(why)))
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
	if ((rc = opt_string(r, file, line, v, "time", "time", &s)) || !s)
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
	if ((rc = opt_count(r, file, line, jget(o, "n"), "latency_us.n", &vd->lat_n)) ||
	    (rc = opt_count(r, file, line, jget(o, "p50"), "latency_us.p50", &vd->lat_p50)) ||
	    (rc = opt_count(r, file, line, jget(o, "p99"), "latency_us.p99", &vd->lat_p99)) ||
	    (rc = opt_count(r, file, line, jget(o, "max"), "latency_us.max", &vd->lat_max)))
		return rc;
	if (vd->lat_n > UINT32_MAX || vd->lat_max > PC_LAT_MAX_US || vd->lat_p50 > vd->lat_max ||
	    vd->lat_p99 > vd->lat_max)
		return rep_fail(r, file, line, "latency_us: n at most 2^32, p50 <= max, p99 <= max <= %u", PC_LAT_MAX_US);
	h = jget(o, "hist");
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
		if ((rc = opt_count(r, file, line, json_object_array_get_idx(pair, 0), what, &lo)) ||
		    (rc = opt_count(r, file, line, json_object_array_get_idx(pair, 1), what, &c)))
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
	if (jget(o, "unavailable")) {
		if ((rc = opt_string(r, file, line, o, "unavailable", "io_audit.unavailable", &vd->audit_why)))
			return rc;
		vd->audit = -1;
		return 0;
	}
	rq = jget(o, "rq");
	if (!rq || !json_object_is_type(rq, json_type_object) || json_object_object_length(rq) > 32)
		return rep_fail(r, file, line, "io_audit.rq: expected an object of at most 32 request kinds");
	json_object_object_foreach(rq, k, n) {
		uint64_t c = 0;

		if (strlen(k) > 9 || (strcmp(k, "other") && strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(k)) || !k[0])
			return rep_fail(r, file, line, "io_audit.rq: \"%.20s\" is not a request kind", k);
		if ((rc = opt_count(r, file, line, n, "io_audit.rq", &c)))
			return rc;
		if (c > (1ull << 40))
			return rep_fail(r, file, line, "io_audit.rq.%s: more than 2^40 requests", k);
		pc_rq_add(k, c, vd->rq);
	}
	vd->audit = 1;
	return 0;
}

static int verdict_parse(struct rep *r, const char *file, unsigned long line, json_object *v,
			 struct verdict *vd)
{
	json_object *o, *counts;
	const char *s;
	char what[64];
	int rc;

	memset(vd, 0, sizeof(*vd));
	if (!json_object_is_type(v, json_type_object))
		return rep_fail(r, file, line, "expected a JSON object (one verdict per line)");
	if ((rc = opt_string(r, file, line, v, "verdict", "verdict", &s)))
		return rc;
	if (!s)
		return rep_fail(r, file, line, "missing \"verdict\"");
	for (vd->out = 0; vd->out < PC_NOUTCOMES; vd->out++)
		if (strcmp(s, pc_outcome_names[vd->out]) == 0)
			break;
	if (vd->out == PC_NOUTCOMES)
		return rep_fail(r, file, line, "unknown verdict '%s' (known: PASS FAIL BOOT_FAIL INFRA_ERROR)", s);
	if ((rc = opt_string(r, file, line, v, "board", "board", &vd->board)))
		return rc;
	if (!vd->board)
		return rep_fail(r, file, line, "missing \"board\"");
	if ((rc = opt_string(r, file, line, v, "campaign", "campaign", &vd->campaign)) ||
	    (rc = opt_count(r, file, line, jget(v, "cycle"), "cycle", &vd->cycle)))
		return rc;
	o = jget(v, "mode");
	if (o && !json_object_is_type(o, json_type_null) &&
	    (rc = opt_string(r, file, line, v, "mode", "mode", &vd->mode)))
		return rc;
	o = jget(v, "mode_run");
	if (o && !json_object_is_type(o, json_type_null) &&
	    (rc = opt_string(r, file, line, v, "mode_run", "mode_run", &vd->mode_run)))
		return rc;
	o = jget(v, "reason");
	if (o && !json_object_is_type(o, json_type_null) &&
	    (rc = opt_string(r, file, line, v, "reason", "reason", &vd->reason)))
		return rc;
	vd->device = jget(v, "device");
	if (vd->device && json_object_is_type(vd->device, json_type_null))
		vd->device = NULL;
	if (vd->device && !json_object_is_type(vd->device, json_type_object))
		return rep_fail(r, file, line, "device: expected an object");
	if ((rc = opt_string(r, file, line, vd->device, "id", "device.id", &vd->id)))
		return rc;
	if (vd->id && !vd->id[0])
		vd->id = NULL;
	if ((rc = check_scalar(r, file, line, jget(vd->device, "name"), "device.name")) ||
	    (rc = check_scalar(r, file, line, jget(vd->device, "manfid"), "device.manfid")) ||
	    (rc = check_scalar(r, file, line, jget(vd->device, "cid"), "device.cid")))
		return rc;
	vd->queue = jget(v, "queue");
	if (vd->queue && json_object_is_type(vd->queue, json_type_null))
		vd->queue = NULL;
	if (vd->queue && !json_object_is_type(vd->queue, json_type_object))
		return rep_fail(r, file, line, "queue: expected an object");
	if ((rc = check_scalar(r, file, line, jget(vd->queue, "fua"), "queue.fua")) ||
	    (rc = check_scalar(r, file, line, jget(vd->queue, "write_cache"), "queue.write_cache")))
		return rc;
	vd->kernel = jget(v, "kernel");
	if ((rc = check_scalar(r, file, line, vd->kernel, "kernel")))
		return rc;
	counts = jget(v, "counts");
	if (counts && !json_object_is_type(counts, json_type_null)) {
		if (!json_object_is_type(counts, json_type_object))
			return rep_fail(r, file, line, "counts: expected an object");
		for (int c = 0; c < NCLASS; c++) {
			snprintf(what, sizeof(what), "counts.%s", pc_class_names[c]);
			if ((rc = opt_count(r, file, line, jget(counts, pc_class_names[c]), what, &vd->counts[c])))
				return rc;
		}
	}
	if ((rc = opt_count(r, file, line, jget(v, "violations"), "violations", &vd->violations)) ||
	    (rc = verdict_findings(r, file, line, jget(v, "findings"), vd)))
		return rc;
	o = jget(jget(v, "rate"), "records_per_s");
	if (o && !json_object_is_type(o, json_type_null)) {
		if (!json_object_is_type(o, json_type_double) && !json_object_is_type(o, json_type_int))
			return rep_fail(r, file, line, "rate.records_per_s: expected a number");
		vd->rate = json_object_get_double(o);
		if (!(vd->rate >= 0 && vd->rate < 1e12))
			return rep_fail(r, file, line, "rate.records_per_s: expected a number from 0 to 10^12");
		vd->has_rate = 1;
	}
	vd->mib = -1.0;
	o = jget(jget(v, "rate"), "mib_per_s");
	if (o && !json_object_is_type(o, json_type_null)) {
		if ((!json_object_is_type(o, json_type_double) && !json_object_is_type(o, json_type_int)) ||
		    !(json_object_get_double(o) >= 0 && json_object_get_double(o) < 1e12))
			return rep_fail(r, file, line, "rate.mib_per_s: expected a number from 0 to 10^12");
		vd->mib = json_object_get_double(o);
	}
	if ((rc = opt_count(r, file, line, jget(jget(v, "records"), "planned"), "records.planned", &vd->planned)) ||
	    (rc = opt_count(r, file, line, jget(jget(v, "records"), "acked"), "records.acked", &vd->acked)))
		return rc;
	vd->agent = jget(v, "agent");
	if ((rc = check_scalar(r, file, line, vd->agent, "agent")) ||
	    (rc = verdict_format(r, file, line, v)) ||
	    (rc = verdict_time(r, file, line, v, vd)) ||
	    (rc = opt_string(r, file, line, v, "host", "host", &vd->host)) ||
	    (rc = verdict_latency(r, file, line, jget(v, "latency_us"), vd)) ||
	    (rc = verdict_audit(r, file, line, jget(v, "io_audit"), vd)))
		return rc;
	vd->io_note = jget(v, "io_note") != NULL;
	return 0;
}

/* ---- accumulating ---- */

static struct rep_dev *rep_dev_get(struct rep *r, const char *id, const char *board)
{
	char key[256];
	struct rep_dev *d;

	/* a device never identified is known only by its board */
	snprintf(key, sizeof(key), "%s%s", id ? "" : "?board:", id ? id : board);
	for (unsigned i = 0; i < r->ndevs; i++)
		if (strcmp(r->devs[i].key, key) == 0)
			return &r->devs[i];
	d = realloc(r->devs, (r->ndevs + 1) * sizeof(*d));
	if (!d)
		return NULL;
	r->devs = d;
	d = &r->devs[r->ndevs];
	memset(d, 0, sizeof(*d));
	d->key = strdup(key);
	d->id = id ? strdup(id) : NULL;
	d->limit = -1.0;
	d->first_ms = d->last_ms = -1;
	r->ndevs++;
	if (!d->key || (id && !d->id))
		return NULL;
	return d;
}

static struct rep_mode *rep_mode_get(struct rep_dev *d, const char *name)
{
	struct rep_mode *m;

	for (unsigned i = 0; i < d->nmodes; i++)
		if (strcmp(d->modes[i].name, name) == 0)
			return &d->modes[i];
	m = realloc(d->modes, (d->nmodes + 1) * sizeof(*m));
	if (!m)
		return NULL;
	d->modes = m;
	m = &d->modes[d->nmodes++];
	memset(m, 0, sizeof(*m));
	pc_strlcpy(m->name, name, sizeof(m->name));
	return m;
}

static void field_set(struct rep_field *f, json_object *v)
{
	if (!v || json_object_is_type(v, json_type_null))
		return;
	if (f->v && !json_object_equal(f->v, v))
		f->varies = 1;
	json_object_put(f->v);
	f->v = json_object_get(v);	/* keep the newest: a kernel upgrade shows as the latest */
}

static struct rep_board *rep_board_get(struct rep *r, unsigned dir, const char *name)
{
	const char *key = r->dirs[dir].camp_key;
	struct rep_board *b;

	/* a board of one campaign, whichever copy of its folder said so */
	for (unsigned i = 0; i < r->nboards; i++)
		if (strcmp(r->boards[i].name, name) == 0 && strcmp(r->dirs[r->boards[i].dir].camp_key, key) == 0)
			return &r->boards[i];
	b = realloc(r->boards, (r->nboards + 1) * sizeof(*b));
	if (!b)
		return NULL;
	r->boards = b;
	b = &r->boards[r->nboards];
	memset(b, 0, sizeof(*b));
	b->dir = dir;
	b->dev = -1;
	if (!(b->name = strdup(name)))
		return NULL;
	r->nboards++;
	return b;
}

/* ---- de-duplication ---- */

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* 1 when key was there, 0 when added, -ENOMEM. */
static int seen_add(struct rep *r, const char *key)
{
	struct rep_seen *st = r->seen;
	uint64_t h = fnv1a(key);
	size_t i;

	if (!st) {
		if (!(st = calloc(1, sizeof(*st))))
			return -ENOMEM;
		r->seen = st;
	}
	if ((st->n + 1) * 2 > st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 1024;
		char **k = calloc(cap, sizeof(*k));
		uint64_t *hh = calloc(cap, sizeof(*hh));

		if (!k || !hh) {
			free(k);
			free(hh);
			return -ENOMEM;
		}
		for (size_t j = 0; j < st->cap; j++)
			if (st->k[j]) {
				for (i = st->h[j] & (cap - 1); k[i]; i = (i + 1) & (cap - 1))
					;
				k[i] = st->k[j];
				hh[i] = st->h[j];
			}
		free(st->k);
		free(st->h);
		st->k = k;
		st->h = hh;
		st->cap = cap;
	}
	for (i = h & (st->cap - 1); st->k[i]; i = (i + 1) & (st->cap - 1))
		if (st->h[i] == h && !strcmp(st->k[i], key))
			return 1;
	if (!(st->k[i] = strdup(key)))
		return -ENOMEM;
	st->h[i] = h;
	st->n++;
	return 0;
}

static void seen_free(struct rep *r)
{
	struct rep_seen *st = r->seen;

	if (!st)
		return;
	for (size_t i = 0; i < st->cap; i++)
		free(st->k[i]);
	free(st->k);
	free(st->h);
	free(st);
	r->seen = NULL;
}

/* ---- accumulating ---- */

static void lat_add(struct rep_lat *l, const struct verdict *vd)
{
	for (unsigned k = 0; k < PC_LAT_BUCKETS; k++)
		l->hist[k] += vd->lat_hist[k];
	l->n += vd->lat_n;
	if (vd->lat_max > l->max)
		l->max = (uint32_t)vd->lat_max;
}

/* "lost_acked=3 torn=1" of one verdict */
static void verdict_viol_text(const struct verdict *vd, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int c = 0; c < NCLASS && n < len; c++) {
		uint64_t k = pc_class_always_violation((enum pc_class)c) && vd->counts[c] > vd->fviol[c] ?
			vd->counts[c] : vd->fviol[c];

		if (c == PC_CLS_COLLATERAL)
			k = k > vd->refused ? k - vd->refused : 0;
		if (k)
			n += (size_t)snprintf(buf + n, len - n, "%s%s=%llu", n ? " " : "", pc_class_names[c],
					      (unsigned long long)k);
	}
	if (vd->refused && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%s%s=%llu", n ? " " : "", REFUSED_NAME,
				      (unsigned long long)vd->refused);
	if (!n)
		snprintf(buf, len, "%llu violation%s", (unsigned long long)vd->violations,
			 vd->violations == 1 ? "" : "s");
}

/* The board's configuration (campaign.json) as test conditions of its device. */
static void cond_set(struct rep_dev *d, const struct rep_board *bd, const struct verdict *vd)
{
	json_object *c = bd->cfg, *dev = jget(c, "device");

	field_set(&d->cond[COND_EXT_CSD], jget(vd->device, "ext_csd"));
	if (!c)
		return;
	field_set(&d->cond[COND_RECORD_SIZE], jget(dev, "record_size"));
	field_set(&d->cond[COND_REGION], jget(dev, "size"));
	field_set(&d->cond[COND_RECORDS], jget(c, "records_per_cycle"));
	field_set(&d->cond[COND_MODES], jget(c, "modes"));
	field_set(&d->cond[COND_PATTERN], jget(c, "pattern"));
	field_set(&d->cond[COND_FLUSH_EVERY], jget(c, "flush_every"));
	field_set(&d->cond[COND_QD], jget(c, "queue_depth"));
	field_set(&d->cond[COND_CUT], jget(c, "cut"));
	field_set(&d->cond[COND_OFF_MS], jget(c, "off_ms"));
	{
		/* the policy of the modes the board ran, not of every mode */
		json_object *pol = jget(c, "policy"), *modes = jget(c, "modes"), *mine;

		if (!pol || !json_object_is_type(pol, json_type_object) || !modes ||
		    !json_object_is_type(modes, json_type_array)) {
			field_set(&d->cond[COND_POLICY], pol);
			return;
		}
		mine = json_object_new_object();
		for (size_t i = 0; mine && i < json_object_array_length(modes); i++) {
			json_object *mn = json_object_array_get_idx(modes, i), *pm;

			if (json_object_is_type(mn, json_type_string) &&
			    (pm = jget(pol, json_object_get_string(mn))))
				json_object_object_add(mine, json_object_get_string(mn), json_object_get(pm));
		}
		field_set(&d->cond[COND_POLICY], mine);
		json_object_put(mine);
	}
}

static int cycle_row(struct rep *r, const struct verdict *vd, unsigned board, unsigned dev)
{
	struct rep_cycle *c;

	if (r->ncycles == r->cap_cycles) {
		size_t cap = r->cap_cycles ? r->cap_cycles * 2 : 256;

		c = realloc(r->cycles, cap * sizeof(*c));
		if (!c)
			return -ENOMEM;
		r->cycles = c;
		r->cap_cycles = cap;
	}
	c = &r->cycles[r->ncycles++];
	memset(c, 0, sizeof(*c));
	c->board = board;
	c->dev = dev;
	c->cycle = (unsigned long)vd->cycle;
	c->time_ms = vd->time_ms;
	c->out = (signed char)vd->out;
	c->mode = (signed char)(vd->mode ? pc_mode_from_name(vd->mode) : -1);
	for (int k = 0; k < NCLASS; k++)
		c->counts[k] = vd->counts[k] > UINT32_MAX ? UINT32_MAX : (uint32_t)vd->counts[k];
	c->violations = vd->violations > UINT32_MAX ? UINT32_MAX : (uint32_t)vd->violations;
	c->planned = vd->planned > UINT32_MAX ? UINT32_MAX : (uint32_t)vd->planned;
	c->acked = vd->acked > UINT32_MAX ? UINT32_MAX : (uint32_t)vd->acked;
	c->rate = vd->has_rate ? vd->rate : -1.0;
	c->mib = vd->mib;
	c->lat_n = (uint32_t)vd->lat_n;
	c->lat_p50 = (uint32_t)vd->lat_p50;
	c->lat_p99 = (uint32_t)vd->lat_p99;
	c->lat_max = (uint32_t)vd->lat_max;
	return 0;
}

/* A cycle not judged or whose boot failed, under its reason's group. */
static int reason_add(struct rep_dev *d, const struct verdict *vd)
{
	const char *text = vd->reason && vd->reason[0] ? vd->reason : "no reason recorded";
	char key[512], shown[1024];
	size_t k = 0;
	unsigned i;

	for (const char *p = text; *p && k + 1 < sizeof(key); p++) {
		if (*p >= '0' && *p <= '9') {
			if (!k || key[k - 1] != '#')
				key[k++] = '#';
			continue;
		}
		key[k++] = *p;
	}
	key[k] = 0;
	for (i = 0; i < d->nreasons; i++)
		if (d->reasons[i].out == vd->out && !strcmp(d->reasons[i].key, key))
			break;
	if (i == d->nreasons) {
		if (d->nreasons == REP_REASONS) {
			d->reasons_more++;
			return 0;
		}
		/* for a terminal: a reason may quote what an agent said */
		k = 0;
		for (const char *p = text; *p && k + 1 < sizeof(shown); p++)
			shown[k++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
		shown[k] = 0;
		d->reasons[i].text = strdup(shown);
		d->reasons[i].key = strdup(key);
		if (!d->reasons[i].text || !d->reasons[i].key) {
			free(d->reasons[i].text);
			free(d->reasons[i].key);
			return -ENOMEM;
		}
		d->reasons[i].out = vd->out;
		d->reasons[i].first = d->reasons[i].last = (unsigned long)vd->cycle;
		d->nreasons++;
	}
	d->reasons[i].n++;
	if ((unsigned long)vd->cycle < d->reasons[i].first)
		d->reasons[i].first = (unsigned long)vd->cycle;
	if ((unsigned long)vd->cycle > d->reasons[i].last)
		d->reasons[i].last = (unsigned long)vd->cycle;
	return 0;
}

static int rep_add(struct rep *r, const struct verdict *vd, const char *id)
{
	struct rep_dir *dd = &r->dirs[r->cur];
	struct rep_dev *d;
	struct rep_board *bd;
	struct rep_mode *m;
	char key[512];
	int rc;

	/* a cycle counted once, however many copies of its folder were given */
	snprintf(key, sizeof(key), "%s\x1f%s\x1f%s\x1f%llu", vd->host ? vd->host : "", dd->camp_key, vd->board,
		 (unsigned long long)vd->cycle);
	if ((rc = seen_add(r, key)) < 0)
		return rc;
	if (rc) {
		r->duplicates++;
		return 0;
	}
	d = rep_dev_get(r, id, vd->board);
	if (!d || !(bd = rep_board_get(r, r->cur, vd->board)))
		return -ENOMEM;
	bd->dev = (int)(d - r->devs);
	bd->verdicts++;
	if (vd->cycle > dd->max_cycle)
		dd->max_cycle = vd->cycle;
	if (strlist_add(&d->boards, vd->board) ||
	    (vd->campaign && strlist_add(&d->campaigns, vd->campaign)) ||
	    !(m = rep_mode_get(d, vd->mode ? vd->mode : "")))
		return -ENOMEM;
	if (cycle_row(r, vd, (unsigned)(bd - r->boards), (unsigned)(d - r->devs)))
		return -ENOMEM;
	d->ncycles++;
	field_set(&d->ident[ID_NAME], jget(vd->device, "name"));
	field_set(&d->ident[ID_MANFID], jget(vd->device, "manfid"));
	field_set(&d->ident[ID_CID], jget(vd->device, "cid"));
	field_set(&d->ident[ID_FUA], jget(vd->queue, "fua"));
	field_set(&d->ident[ID_WCACHE], jget(vd->queue, "write_cache"));
	field_set(&d->ident[ID_KERNEL], vd->kernel);
	field_set(&d->ident[ID_FWREV], jget(vd->device, "fwrev"));
	field_set(&d->ident[ID_SERIAL], jget(vd->device, "serial"));
	field_set(&d->ident[ID_TYPE], jget(vd->device, "type"));
	field_set(&d->ident[ID_AGENT], vd->agent);
	cond_set(d, bd, vd);
	if (vd->time_ms >= 0) {
		if (d->first_ms < 0 || vd->time_ms < d->first_ms)
			d->first_ms = vd->time_ms;
		if (vd->time_ms > d->last_ms)
			d->last_ms = vd->time_ms;
	}
	if ((vd->host && strlist_add(&d->hosts, vd->host)) ||
	    (dd->host && strlist_add(&d->hosts, dd->host)) ||
	    (dd->version && strlist_add(&d->versions, dd->version)))
		return -ENOMEM;
	m->out[vd->out]++;
	m->violations += vd->violations;
	if (vd->planned)
		m->worked++;
	/* the cut landed mid-write: something submitted never (fully) landed */
	if (vd->counts[PC_CLS_NOT_WRITTEN] + vd->counts[PC_CLS_TORN] + vd->counts[PC_CLS_TORN_SECTOR] > 0)
		m->inflight++;
	if (vd->counts[PC_CLS_TORN] + vd->counts[PC_CLS_TORN_SECTOR] > 0)
		m->torn_cycles++;
	for (int c = 0; c < NCLASS; c++) {
		/* counts.collateral includes the refused writes: they are shown apart */
		uint64_t cnt = c == PC_CLS_COLLATERAL ? (vd->counts[c] > vd->refused ? vd->counts[c] - vd->refused : 0)
						 : vd->counts[c];
		uint64_t n = pc_class_always_violation((enum pc_class)c) && cnt > vd->fviol[c] ? cnt : vd->fviol[c];

		m->viol[c] += n;
		m->found[c] += cnt;
	}
	m->refused += vd->refused;
	if (vd->has_rate && (vd->out == PC_OUT_PASS || vd->out == PC_OUT_FAIL)) {
		m->rate_sum += vd->rate;
		m->rate_n++;
	}
	if (vd->mib >= 0 && (vd->out == PC_OUT_PASS || vd->out == PC_OUT_FAIL)) {
		m->mib_sum += vd->mib;
		m->mib_n++;
	}
	lat_add(&m->lat, vd);
	for (unsigned k = 0; k < REP_TEAR_SECTORS; k++)
		m->tears[k] += vd->tears[k];
	m->tears_n += vd->ntears;
	if (bd->record_sectors > m->record_sectors)
		m->record_sectors = bd->record_sectors;
	if (vd->audit > 0) {
		for (int k = 0; k < PC_NRQ; k++)
			m->rq[k] += vd->rq[k];
		m->audited++;
	} else if (vd->audit < 0) {
		m->audit_unavailable++;
		pc_strlcpy(m->audit_why, vd->audit_why ? vd->audit_why : "", sizeof(m->audit_why));
	}
	m->io_notes += (unsigned long)vd->io_note;
	if ((vd->out == PC_OUT_INFRA_ERROR || vd->out == PC_OUT_BOOT_FAIL) && reason_add(d, vd))
		return -ENOMEM;
	if (vd->out == PC_OUT_FAIL && m->nfirst_fail < REP_FIRST_FAILS) {
		struct rep_fail_ref *f = &m->first_fail[m->nfirst_fail++];

		f->board = (unsigned)(bd - r->boards);
		f->cycle = (unsigned long)vd->cycle;
		verdict_viol_text(vd, f->what, sizeof(f->what));
	}
	if (vd->mode && vd->mode_run && strcmp(vd->mode, vd->mode_run) != 0) {
		unsigned i;

		for (i = 0; i < m->nran; i++)
			if (strcmp(m->ran[i].name, vd->mode_run) == 0)
				break;
		if (i == m->nran && m->nran < PC_ARRAY_SIZE(m->ran))
			pc_strlcpy(m->ran[m->nran++].name, vd->mode_run, sizeof(m->ran[0].name));
		if (i < m->nran)
			m->ran[i].n++;
	}
	return 0;
}

/* ---- reading one file ---- */

static const char *boardmap_get(const struct rep_boardmap *bm, const char *board)
{
	for (unsigned i = 0; i < bm->n; i++)
		if (strcmp(bm->v[i].board, board) == 0)
			return bm->v[i].id;
	return NULL;
}

static int boardmap_set(struct rep_boardmap *bm, const char *board, const char *id)
{
	char *nid;
	void *nv;
	unsigned i;

	for (i = 0; i < bm->n; i++)
		if (strcmp(bm->v[i].board, board) == 0)
			break;
	if (i < bm->n && strcmp(bm->v[i].id, id) == 0)
		return 0;
	if (!(nid = strdup(id)))
		return -ENOMEM;
	if (i == bm->n) {
		nv = realloc(bm->v, (bm->n + 1) * sizeof(*bm->v));
		if (nv)
			bm->v = nv;
		if (!nv || !(bm->v[i].board = strdup(board))) {
			free(nid);
			return -ENOMEM;
		}
		bm->v[i].id = NULL;
		bm->n++;
	}
	free(bm->v[i].id);
	bm->v[i].id = nid;
	return 0;
}

static void boardmap_free(struct rep_boardmap *bm)
{
	for (unsigned i = 0; i < bm->n; i++) {
		free(bm->v[i].board);
		free(bm->v[i].id);
	}
	free(bm->v);
}

static int rep_line(struct rep *r, const char *file, unsigned long lineno, json_object *v,
		    struct rep_boardmap *bm, struct rep_pending **pend, size_t *npend)
{
	struct rep_pending *p;
	struct verdict vd;
	int rc = verdict_parse(r, file, lineno, v, &vd);

	if (rc)
		return rc;
	if (vd.id) {
		if (boardmap_set(bm, vd.board, vd.id))
			return -ENOMEM;
		return rep_add(r, &vd, vd.id);
	}
	/* A boot failure never met the device: attribute it once the file has
	 * said which device this board holds (a BOOT_FAIL may come first). */
	p = realloc(*pend, (*npend + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*pend = p;
	p[*npend].v = json_object_get(v);
	p[*npend].line = lineno;
	(*npend)++;
	return 0;
}

static int rep_flush_pending(struct rep *r, const char *file, struct rep_boardmap *bm,
			     struct rep_pending *pend, size_t npend)
{
	for (size_t k = 0; k < npend; k++) {
		struct verdict vd;
		int rc = verdict_parse(r, file, pend[k].line, pend[k].v, &vd);

		if (rc || (rc = rep_add(r, &vd, boardmap_get(bm, vd.board))))
			return rc;
	}
	return 0;
}

static int rep_read(struct rep *r, const char *dir)
{
	struct rep_boardmap bm = { NULL, 0 };
	struct rep_pending *pend = NULL;
	size_t npend = 0;
	char *path = NULL;
	struct jsonl j = { .fd = -1 };
	struct jsonl_line l = { .lineno = 0 };
	struct stat st;
	int rc = 0;

	if (stat(dir, &st) == 0 && S_ISREG(st.st_mode))
		path = strdup(dir);
	else if (asprintf(&path, "%s/" PC_FILE_VERDICTS, dir) < 0)
		path = NULL;
	if (!path)
		return rep_fail(r, dir, 0, "out of memory");
	if ((rc = jsonl_open(&j, path))) {
		rep_fail(r, path, 0, "%s", j.why);
		goto out;
	}
	while ((rc = jsonl_next(&j, &l)) == 1) {
		json_object *v;

		if (jsonl_blank(l.s, l.len))
			continue;
		v = jsonl_parse(&j, &l);
		if (!v) {
			rc = rep_fail(r, path, l.lineno, "not a JSON verdict line: %s", j.why);
			goto out;
		}
		rc = rep_line(r, path, l.lineno, v, &bm, &pend, &npend);
		json_object_put(v);
		if (rc)
			goto fail_rc;
	}
	if (rc < 0) {
		rep_fail(r, path, (unsigned long)j.err_line, "%s", j.why);
		goto out;
	}
	if (j.torn_text) {
		/* the harness fsyncs whole lines: no newline means it was cut mid-line */
		pc_warn("%s:%" PRIu64 ": ignoring a torn last line (no newline: the harness stopped "
			"while writing it)", path, j.lineno + 1);
		r->torn_lines++;
	}
	rc = rep_flush_pending(r, path, &bm, pend, npend);
fail_rc:
	if (rc == -ENOMEM)
		rep_fail(r, path, l.lineno, "out of memory");
out:
	for (size_t k = 0; k < npend; k++)
		json_object_put(pend[k].v);
	free(pend);
	boardmap_free(&bm);
	jsonl_close(&j);
	free(path);
	return rc;
}

/* ---- what a folder's companions say: campaign.json, events.jsonl ---- */

/* A string of campaign.json, checked: printable, at most 255 bytes. */
static int camp_str(struct rep *r, const char *path, json_object *v, const char *what, char **out)
{
	const char *s;

	if (!v || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_string) || strlen(s = json_object_get_string(v)) > 255)
		return rep_fail(r, path, 0, "%s: expected a string of at most 255 bytes", what);
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return rep_fail(r, path, 0, "%s: a control character", what);
	if (!(*out = strdup(s)))
		return rep_fail(r, path, 0, "out of memory");
	return 0;
}

/* campaign.json: its format, the campaign's identity (host, name, start),
 * the cycles planned, the boards and their configuration, the INFRA_ERROR
 * limit. Read before the verdicts: it says how to read them. */
static int rep_campaign(struct rep *r, struct rep_dir *dd)
{
	json_object *doc, *cfg, *v, *boards;
	char *path = NULL, *name = NULL, why[512];
	struct stat st;
	uint64_t n;
	int rc = 0;

	if (asprintf(&path, "%s/" PC_FILE_CAMPAIGN, dd->base) < 0)
		return rep_fail(r, dd->base, 0, "out of memory");
	if (stat(path, &st) != 0) {
		if (errno != ENOENT)
			rc = rep_fail(r, path, 0, "cannot read: %s", strerror(errno));
		free(path);	/* none: a verdicts file from elsewhere, or a folder from long ago */
		return rc;
	}
	if (st.st_size > 64 << 20) {
		rc = rep_fail(r, path, 0, "%lld bytes: larger than a campaign.json can be (64 MiB)",
			      (long long)st.st_size);
		free(path);
		return rc;
	}
	doc = json_object_from_file(path);
	if (!doc) {
		rc = rep_fail(r, path, 0, "cannot read it as JSON: %s", json_util_get_last_err());
		free(path);
		return rc;
	}
	if (!json_object_is_type(doc, json_type_object)) {
		rc = rep_fail(r, path, 0, "expected a JSON object");
		goto out;
	}
	if (pc_format_read(jget(doc, "format"), path, &dd->format_major, &dd->format_minor, why, sizeof(why))) {
		rc = rep_fail(r, path, 0, "%s", why + strlen(path) + 2);
		goto out;
	}
	cfg = jget(doc, "config");
	if (!cfg || !json_object_is_type(cfg, json_type_object)) {
		rc = rep_fail(r, path, 0, "config: expected an object (the campaign's resolved configuration)");
		goto out;
	}
	dd->has_campaign = 1;
	dd->campaign = json_object_get(doc);
	if ((v = jget(doc, "started")) && (rc = opt_count(r, path, 0, v, "started", &n)) == 0)
		dd->started = n > INT64_MAX ? INT64_MAX : (int64_t)n;
	if (rc ||
	    (rc = camp_str(r, path, jget(jget(doc, "host"), "id"), "host.id", &dd->host)) ||
	    (!dd->host && (rc = camp_str(r, path, jget(jget(doc, "host"), "hostname"), "host.hostname", &dd->host))) ||
	    (rc = camp_str(r, path, jget(jget(doc, "host"), "powercut"), "host.powercut", &dd->version)) ||
	    (rc = camp_str(r, path, jget(doc, "campaign"), "campaign", &name)))
		goto out;
	/* the campaign: copies of its folder (from a sync, a backup) merge */
	free(dd->camp_key);
	if (asprintf(&dd->camp_key, "%s|%s|%lld", dd->host ? dd->host : "", name ? name : "",
		     (long long)dd->started) < 0) {
		dd->camp_key = NULL;
		rc = rep_fail(r, path, 0, "out of memory");
		goto out;
	}
	if ((v = jget(cfg, "cycles"))) {
		if ((rc = opt_count(r, path, 0, v, "config.cycles", &n)))
			goto out;
		dd->cfg_cycles = n > CFG_MAX_CYCLES ? CFG_MAX_CYCLES : (unsigned long)n;
	}
	if ((v = jget(cfg, "incomplete_infra_share"))) {
		if ((!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) ||
		    !(json_object_get_double(v) >= 0.0 && json_object_get_double(v) <= 1.0)) {
			rc = rep_fail(r, path, 0, "config.incomplete_infra_share: expected a number from 0 to 1, got %s",
				      json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
			goto out;
		}
		dd->limit = json_object_get_double(v);
	}
	boards = jget(cfg, "boards");
	if (boards && json_object_is_type(boards, json_type_array))
		for (size_t i = 0; i < json_object_array_length(boards) && i < CFG_MAX_BOARDS; i++) {
			json_object *bo = json_object_array_get_idx(boards, i), *bn = jget(bo, "name");
			struct rep_board *b;
			uint64_t rs = 0;

			if (!bn || !json_object_is_type(bn, json_type_string))
				continue;
			if (!(b = rep_board_get(r, (unsigned)(dd - r->dirs), json_object_get_string(bn)))) {
				rc = rep_fail(r, path, 0, "out of memory");
				goto out;
			}
			b->cfg = bo;
			if (!opt_count(r, path, 0, jget(jget(bo, "device"), "record_size"), "record_size", &rs) &&
			    rs <= PC_MAX_RECORD_SIZE)
				b->record_sectors = (unsigned)(rs / PC_SECTOR);
			r->err[0] = 0;
		}
out:
	free(name);
	json_object_put(doc);
	free(path);
	return rc;
}

/* One give_up or run_end event, in file order: a run_end that does not say
 * the board was given up means a later run took the board on again. */
static int rep_event(struct rep *r, unsigned di, const char *path, unsigned long lineno, json_object *v)
{
	const char *ev = NULL, *board = NULL, *s = NULL;
	struct rep_board *b;
	uint64_t n = 0;
	int rc;

	if (!json_object_is_type(v, json_type_object))
		return rep_fail(r, path, lineno, "expected a JSON object (one event per line)");
	if ((rc = opt_string(r, path, lineno, v, "ev", "ev", &ev)))
		return rc;
	if (!ev || (strcmp(ev, pc_ev_names[PC_EV_GIVE_UP]) && strcmp(ev, pc_ev_names[PC_EV_RUN_END])))
		return 0;	/* another event that merely mentions one */
	if ((rc = opt_string(r, path, lineno, v, "board", "board", &board)))
		return rc;
	if (!board)
		return rep_fail(r, path, lineno, "%s: missing \"board\"", ev);
	if (!(b = rep_board_get(r, di, board)))
		return rep_fail(r, path, lineno, "out of memory");
	if (!strcmp(ev, pc_ev_names[PC_EV_GIVE_UP])) {
		char *why;

		if ((rc = opt_count(r, path, lineno, jget(v, "cycle"), "cycle", &n)) ||
		    (rc = opt_string(r, path, lineno, v, "reason", "reason", &s)))
			return rc;
		if (!(why = strdup(s ? s : "no reason recorded")))
			return rep_fail(r, path, lineno, "out of memory");
		/* for a terminal: the reason may quote what an agent said */
		for (char *p = why; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		free(b->gu_reason);
		b->gu_reason = why;
		b->gu_cycle = (unsigned long)n;
		b->given_up = 1;
		return 0;
	}
	if (!jget(v, "cycles"))
		return rep_fail(r, path, lineno, "run_end: missing \"cycles\"");
	if ((rc = opt_count(r, path, lineno, jget(v, "cycles"), "cycles", &n)) ||
	    (rc = opt_string(r, path, lineno, v, "end", "end", &s)))
		return rc;
	b->has_plan = 1;
	b->plan = (unsigned long)n;
	if (pc_run_end_from_name(s) != PC_END_GIVEN_UP)
		b->given_up = 0;
	return 0;
}

/* events.jsonl: only the give_up and run_end lines, picked out by a plain
 * substring search before any parsing, so a night's worth of events stays
 * quick to read. No file: no such events (an older folder). */
static int rep_events(struct rep *r, unsigned di)
{
	char give_up[32], run_end[32];
	char *path = NULL;
	struct jsonl j;
	struct jsonl_line l;
	int rc = 0;

	snprintf(give_up, sizeof(give_up), "\"%s\"", pc_ev_names[PC_EV_GIVE_UP]);
	snprintf(run_end, sizeof(run_end), "\"%s\"", pc_ev_names[PC_EV_RUN_END]);
	if (asprintf(&path, "%s/" PC_FILE_EVENTS, r->dirs[di].base) < 0)
		return rep_fail(r, r->dirs[di].base, 0, "out of memory");
	if ((rc = jsonl_open(&j, path))) {
		rc = rc == -ENOENT ? 0 : rep_fail(r, path, 0, "%s", j.why);
		free(path);
		return rc;
	}
	/* a torn last line is never read: the harness trims it when it starts again */
	while ((rc = jsonl_next(&j, &l)) == 1) {
		json_object *v;

		if (!strstr(l.s, give_up) && !strstr(l.s, run_end))
			continue;
		v = jsonl_parse(&j, &l);
		if (!v) {
			rc = rep_fail(r, path, l.lineno, "not a JSON event line: %s", j.why);
			goto out;
		}
		rc = rep_event(r, di, path, l.lineno, v);
		json_object_put(v);
		if (rc)
			goto out;
	}
	if (rc < 0)	/* the reader's: a read error, a line too long or not UTF-8 */
		rc = rep_fail(r, path, (unsigned long)j.err_line, "%s", j.why);
out:
	jsonl_close(&j);
	free(path);
	return rc;
}

/* One argument: a folder, or a verdicts file (whose folder holds the
 * companions only when the file is the folder's verdicts.jsonl). */
static int rep_folder(struct rep *r, const char *arg)
{
	char real[PATH_MAX];
	struct rep_dir *dd;
	struct stat st;
	int rc;

	dd = realloc(r->dirs, (r->ndirs + 1) * sizeof(*dd));
	if (!dd)
		return rep_fail(r, arg, 0, "out of memory");
	r->dirs = dd;
	dd = &r->dirs[r->ndirs];
	memset(dd, 0, sizeof(*dd));
	dd->arg = arg;
	dd->dup_of = -1;
	dd->format_major = 1;
	dd->limit = CFG_DEFAULT_INCOMPLETE_INFRA_SHARE;
	r->cur = r->ndirs++;
	/* the same folder (or file) given twice is read once */
	if (!realpath(arg, real))
		snprintf(real, sizeof(real), "%s", arg);
	for (unsigned i = 0; i + 1 < r->ndirs; i++)
		if (r->dirs[i].real && !strcmp(r->dirs[i].real, real)) {
			dd->dup_of = (int)i;
			return 0;
		}
	if (!(dd->real = strdup(real)) || asprintf(&dd->camp_key, "path:%s", real) < 0) {
		dd->camp_key = NULL;
		return rep_fail(r, arg, 0, "out of memory");
	}
	if (stat(arg, &st) == 0 && S_ISREG(st.st_mode)) {
		const char *slash = strrchr(arg, '/'), *name = slash ? slash + 1 : arg;

		if (!strcmp(name, PC_FILE_VERDICTS))
			dd->base = slash ? strndup(arg, slash == arg ? 1 : (size_t)(slash - arg)) : strdup(".");
		if (!strcmp(name, PC_FILE_VERDICTS) && !dd->base)
			return rep_fail(r, arg, 0, "out of memory");
	} else if (!(dd->base = strdup(arg))) {
		return rep_fail(r, arg, 0, "out of memory");
	}
	/* campaign.json first: the format and the campaign's identity (a copy
	 * of a folder given before is the same campaign; its key replaces the
	 * path one, and the path stays for spotting the same folder again) */
	if (dd->base) {
		char *pathkey = dd->camp_key;

		dd->camp_key = NULL;
		rc = rep_campaign(r, dd);
		if (!dd->camp_key)
			dd->camp_key = pathkey;
		else
			free(pathkey);
		if (rc)
			return rc;
	}
	if ((rc = rep_read(r, arg)))
		return rc;
	if (dd->base && (rc = rep_events(r, r->cur)))
		return rc;
	return 0;
}

/* ---- totals and results ---- */

void rep_mode_sum(const struct rep_dev *d, struct rep_mode *t)
{
	memset(t, 0, sizeof(*t));
	pc_strlcpy(t->name, "total", sizeof(t->name));
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];

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
	}
}

unsigned long rep_mode_cycles(const struct rep_mode *m)
{
	return m->out[PC_OUT_PASS] + m->out[PC_OUT_FAIL] + m->out[PC_OUT_BOOT_FAIL] + m->out[PC_OUT_INFRA_ERROR];
}

/*
 * FAIL beats BOOT_FAIL beats INCOMPLETE beats PASS: a proven violation or a
 * dead part stays what it is however little else was judged, and a campaign
 * that judged too little (rep_finish) never reads PASS. INFRA_ERROR is the
 * lab's fault, never the device's, but too much of it leaves nothing to hand
 * anyone.
 */
enum pc_result rep_dev_result(const struct rep_dev *d, const struct rep_mode *t)
{
	if (t->out[PC_OUT_FAIL])
		return PC_RES_FAIL;
	if (t->out[PC_OUT_BOOT_FAIL])
		return PC_RES_BOOT_FAIL;
	if (d->nwhy)
		return PC_RES_INCOMPLETE;
	return PC_RES_PASS;
}

static int result_code(enum pc_result res)
{
	if (res == PC_RES_PASS)
		return REPORT_PASS;
	if (res == PC_RES_INCOMPLETE)
		return REPORT_INCOMPLETE;
	return REPORT_FAIL;
}

const char *rep_result_name(int res)
{
	return pc_result_names[res == REPORT_PASS ? PC_RES_PASS : res == REPORT_FAIL ? PC_RES_FAIL : PC_RES_INCOMPLETE];
}

/* "23.1%", "10%" */
static const char *pct(double share, char *buf, size_t len)
{
	snprintf(buf, len, "%.3g%%", share * 100.0);
	return buf;
}

__attribute__((format(printf, 4, 5)))
static int why_add(struct rep_dev *d, json_object *j, const char *brief, const char *fmt, ...)
{
	struct rep_why *w = realloc(d->why, (d->nwhy + 1) * sizeof(*w));
	va_list ap;
	int n;

	if (!w) {
		json_object_put(j);
		return -ENOMEM;
	}
	d->why = w;
	w = &d->why[d->nwhy];
	memset(w, 0, sizeof(*w));
	va_start(ap, fmt);
	n = vasprintf(&w->text, fmt, ap);
	va_end(ap);
	w->brief = strdup(brief);
	w->j = j;
	if (n < 0 || !w->brief || !j) {
		if (n >= 0)
			free(w->text);
		free(w->brief);
		json_object_put(j);
		return -ENOMEM;
	}
	json_object_object_add(j, "text", json_object_new_string(w->text));
	d->nwhy++;
	return 0;
}

static json_object *why_json(enum pc_incomplete why, const struct rep *r, const struct rep_board *b)
{
	json_object *j = json_object_new_object();

	if (!j)
		return NULL;
	json_object_object_add(j, "why", json_object_new_string(pc_incomplete_names[why]));
	if (b) {
		json_object_object_add(j, "board", json_object_new_string(b->name));
		json_object_object_add(j, "results", json_object_new_string(r->dirs[b->dir].arg));
	}
	return j;
}

/* Each board: given up, or fewer verdicts than its run planned. */
static int finish_board(struct rep *r, struct rep_board *b)
{
	const struct rep_dir *dd = &r->dirs[b->dir];
	struct rep_dev *d;
	unsigned long plan = 0;
	char where[PATH_MAX + 16] = "", brief[256];
	json_object *j;

	if (b->dev < 0) {
		/* named by campaign.json or an event, never by a verdict */
		if (!(d = rep_dev_get(r, NULL, b->name)) || strlist_add(&d->boards, b->name))
			return -ENOMEM;
		b->dev = (int)(d - r->devs);
	}
	d = &r->devs[b->dev];
	if (d->limit < 0 || dd->limit < d->limit)
		d->limit = dd->limit;
	if (r->ndirs > 1)
		snprintf(where, sizeof(where), " (in %s)", dd->arg);
	/* the plan of the last run that said (run_end); else the configuration,
	 * grown by --cycles as far as any board of the folder got */
	if (b->has_plan)
		plan = b->plan;
	else if (dd->has_campaign)
		plan = dd->cfg_cycles > dd->max_cycle ? dd->cfg_cycles : dd->max_cycle;
	if (b->given_up) {
		snprintf(brief, sizeof(brief), "board %s given up at cycle %lu", b->name, b->gu_cycle);
		if ((j = why_json(PC_INC_GIVEN_UP, r, b))) {
			json_object_object_add(j, "cycle", json_object_new_int64((int64_t)b->gu_cycle));
			json_object_object_add(j, "reason", json_object_new_string(b->gu_reason));
		}
		return why_add(d, j, brief, "board %s%s given up at cycle %lu: %s", b->name, where, b->gu_cycle,
			       b->gu_reason);
	}
	if (plan && b->verdicts < plan) {
		snprintf(brief, sizeof(brief), "board %s: %lu of %lu cycles", b->name, b->verdicts, plan);
		if ((j = why_json(PC_INC_CYCLES_MISSING, r, b))) {
			json_object_object_add(j, "verdicts", json_object_new_int64((int64_t)b->verdicts));
			json_object_object_add(j, "planned", json_object_new_int64((int64_t)plan));
		}
		return why_add(d, j, brief, "board %s%s has verdicts for %lu of the %lu cycles planned", b->name,
			       where, b->verdicts, plan);
	}
	return 0;
}

/* A folder a run still holds, or whose last run was killed: its campaign is
 * not over, whatever its verdicts say so far. */
static int finish_lock(struct rep *r, unsigned di)
{
	struct results_lock_info li;
	char desc[768];
	enum pc_incomplete why;
	const char *brief;

	if (!r->dirs[di].base)
		return 0;
	results_lock_probe(r->dirs[di].base, &li);
	if (li.state == RESULTS_LOCK_HELD) {
		why = PC_INC_RUNNING;
		brief = "still running";
	} else if (li.state == RESULTS_LOCK_FREE && li.known && !li.ended) {
		why = PC_INC_KILLED;
		brief = "last run killed";
	} else {
		return 0;
	}
	results_lock_describe(&li, desc, sizeof(desc));
	for (unsigned i = 0; i < r->ndevs; i++) {
		unsigned k;
		json_object *j;

		for (k = 0; k < r->nboards; k++)
			if (r->boards[k].dir == di && r->boards[k].dev == (int)i)
				break;
		if (k == r->nboards)
			continue;
		if ((j = why_json(why, r, NULL))) {
			json_object_object_add(j, "results", json_object_new_string(r->dirs[di].arg));
			json_object_object_add(j, "lock", json_object_new_string(desc));
		}
		if (why_add(&r->devs[i], j, brief, "%s (%s: %s)",
			    li.state == RESULTS_LOCK_HELD ? "the campaign is still running" :
			    "the last run was killed before it finished", r->dirs[di].arg, desc))
			return -ENOMEM;
	}
	return 0;
}

/* Too large a share of INFRA_ERROR, or nothing judged at all. */
static int finish_share(struct rep_dev *d)
{
	struct rep_mode t;
	unsigned long cycles, infra;
	char b1[32], b2[32], brief[128];
	json_object *j;

	rep_mode_sum(d, &t);
	cycles = rep_mode_cycles(&t);
	infra = t.out[PC_OUT_INFRA_ERROR];
	if (d->limit < 0)
		d->limit = CFG_DEFAULT_INCOMPLETE_INFRA_SHARE;
	if (cycles && (double)infra / (double)cycles > d->limit) {
		double share = (double)infra / (double)cycles;

		snprintf(brief, sizeof(brief), "%s INFRA_ERROR (limit %s)", pct(share, b1, sizeof(b1)),
			 pct(d->limit, b2, sizeof(b2)));
		if ((j = json_object_new_object())) {
			json_object_object_add(j, "why", json_object_new_string(pc_incomplete_names[PC_INC_INFRA_SHARE]));
			json_object_object_add(j, "infra_error", json_object_new_int64((int64_t)infra));
			json_object_object_add(j, "cycles", json_object_new_int64((int64_t)cycles));
			json_object_object_add(j, "share", json_object_new_double(share));
			json_object_object_add(j, "limit", json_object_new_double(d->limit));
		}
		if (why_add(d, j, brief, "%s of cycles INFRA_ERROR (%lu of %lu; limit %s, incomplete_infra_share)",
			    b1, infra, cycles, b2))
			return -ENOMEM;
	}
	if (!d->nwhy && !t.out[PC_OUT_PASS] && !t.out[PC_OUT_FAIL] && !t.out[PC_OUT_BOOT_FAIL]) {
		/* only when nothing above says so already (a limit of 1 allows all) */
		j = json_object_new_object();
		if (j)
			json_object_object_add(j, "why", json_object_new_string(pc_incomplete_names[PC_INC_NOTHING_JUDGED]));
		if (why_add(d, j, "nothing judged", "no cycle was judged%s",
			    cycles ? " (every verdict INFRA_ERROR)" : ""))
			return -ENOMEM;
	}
	return 0;
}

static int rep_finish(struct rep *r)
{
	int rc;

	for (unsigned i = 0; i < r->nboards; i++)
		if ((rc = finish_board(r, &r->boards[i])))
			return rc;
	if (!r->own_run)
		for (unsigned i = 0; i < r->ndirs; i++)
			if ((rc = finish_lock(r, i)))
				return rc;
	for (unsigned i = 0; i < r->ndevs; i++)
		if ((rc = finish_share(&r->devs[i])))
			return rc;
	return 0;
}

/* The worst device's: what `powercut report` and `run` exit with. Nothing
 * at all to report is nothing judged. */
int rep_result(const struct rep *r)
{
	int res = r->ndevs ? REPORT_PASS : REPORT_INCOMPLETE;

	for (unsigned i = 0; i < r->ndevs; i++) {
		struct rep_mode t;
		int c;

		rep_mode_sum(&r->devs[i], &t);
		c = result_code(rep_dev_result(&r->devs[i], &t));
		if (c == REPORT_FAIL || (c == REPORT_INCOMPLETE && res == REPORT_PASS))
			res = c;
	}
	return res;
}

/* Modes in the order of DESIGN section 5, unknown names after, "no mode" last. */
static int mode_rank(const char *name)
{
	int m;

	if (!name[0])
		return 1000;
	m = pc_mode_from_name(name);
	return m >= 0 ? m : 100;
}

static int mode_cmp(const void *a, const void *b)
{
	const struct rep_mode *x = a, *y = b;
	int d = mode_rank(x->name) - mode_rank(y->name);

	return d ? d : strcmp(x->name, y->name);
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

static const struct rep *sort_r;

static int cycle_cmp(const void *a, const void *b)
{
	const struct rep_cycle *x = a, *y = b;
	int c;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->board != y->board && (c = strcmp(sort_r->boards[x->board].name, sort_r->boards[y->board].name)))
		return c;
	if (x->board != y->board)
		return x->board < y->board ? -1 : 1;
	return x->cycle < y->cycle ? -1 : x->cycle > y->cycle;
}

void rep_sort_cycles(struct rep *r)
{
	sort_r = r;
	if (r->ncycles)
		qsort(r->cycles, r->ncycles, sizeof(*r->cycles), cycle_cmp);
	sort_r = NULL;
}

/* A part: manufacturer, product name, firmware revision. */
static int dev_part(struct rep_dev *d)
{
	char b[3][128];

	free(d->part);
	return asprintf(&d->part, "%s %s %s", rep_field_text(&d->ident[ID_MANFID], b[0], sizeof(b[0])),
			rep_field_text(&d->ident[ID_NAME], b[1], sizeof(b[1])),
			rep_field_text(&d->ident[ID_FWREV], b[2], sizeof(b[2]))) < 0 ? -ENOMEM : 0;
}

static int dev_cmp(const void *a, const void *b)
{
	const struct rep_dev *x = a, *y = b;
	int c = strcmp(x->part, y->part);

	if (c)
		return c;
	/* units known by id first, in id order; then the boards never identified */
	if (!x->id || !y->id)
		return x->id ? -1 : y->id ? 1 : strcmp(x->key, y->key);
	return strcmp(x->id, y->id);
}

/* Modes in DESIGN order, devices grouped by part (the indices of boards and
 * cycle rows follow them), cycles by device, board and cycle. */
static int rep_order(struct rep *r)
{
	unsigned *map;

	for (unsigned i = 0; i < r->ndevs; i++) {
		struct rep_dev *d = &r->devs[i];

		if (d->nmodes)
			qsort(d->modes, d->nmodes, sizeof(*d->modes), mode_cmp);
		if (dev_part(d))
			return -ENOMEM;
		d->ncycles = i;		/* its old index, for the map below; recounted after */
	}
	if (!r->ndevs)
		return 0;
	qsort(r->devs, r->ndevs, sizeof(*r->devs), dev_cmp);
	map = calloc(r->ndevs, sizeof(*map));
	if (!map)
		return -ENOMEM;
	for (unsigned i = 0; i < r->ndevs; i++) {
		map[r->devs[i].ncycles] = i;
		r->devs[i].ncycles = 0;
	}
	for (unsigned i = 0; i < r->nboards; i++)
		if (r->boards[i].dev >= 0)
			r->boards[i].dev = (int)map[r->boards[i].dev];
	for (size_t i = 0; i < r->ncycles; i++) {
		r->cycles[i].dev = map[r->cycles[i].dev];
		r->devs[r->cycles[i].dev].ncycles++;
	}
	free(map);
	rep_sort_cycles(r);
	return 0;
}

static void rep_free(struct rep *r)
{
	for (unsigned i = 0; i < r->ndevs; i++) {
		struct rep_dev *d = &r->devs[i];

		free(d->id);
		free(d->key);
		free(d->part);
		strlist_free(&d->boards);
		strlist_free(&d->campaigns);
		strlist_free(&d->hosts);
		strlist_free(&d->versions);
		for (int k = 0; k < ID_N; k++)
			json_object_put(d->ident[k].v);
		for (int k = 0; k < COND_N; k++)
			json_object_put(d->cond[k].v);
		free(d->modes);
		for (unsigned k = 0; k < d->nwhy; k++) {
			free(d->why[k].text);
			free(d->why[k].brief);
			json_object_put(d->why[k].j);
		}
		free(d->why);
		for (unsigned k = 0; k < d->nreasons; k++) {
			free(d->reasons[k].text);
			free(d->reasons[k].key);
		}
	}
	free(r->devs);
	for (unsigned i = 0; i < r->nboards; i++) {
		free(r->boards[i].name);
		free(r->boards[i].gu_reason);
	}
	free(r->boards);
	for (unsigned i = 0; i < r->ndirs; i++) {
		free(r->dirs[i].base);
		free(r->dirs[i].real);
		free(r->dirs[i].camp_key);
		free(r->dirs[i].host);
		free(r->dirs[i].version);
		json_object_put(r->dirs[i].campaign);
	}
	free(r->dirs);
	free(r->cycles);
	seen_free(r);
}

int report_run(const char *const *dirs, int ndirs, FILE *out, const struct report_opts *o, int *result,
	       char *err, size_t errlen)
{
	struct rep r = { .err = err, .errlen = errlen, .own_run = o && o->own_run };
	enum report_format fmt = !o ? REPORT_FMT_TEXT : o->json ? REPORT_FMT_JSON : o->format;
	int rc = 0;

	if (errlen)
		err[0] = 0;
	if (result)
		*result = REPORT_INCOMPLETE;
	if (ndirs < 1) {
		snprintf(err, errlen, "report: no results directory given");
		return -EINVAL;
	}
	for (int i = 0; i < ndirs && !rc; i++)
		rc = rep_folder(&r, dirs[i]);
	if (!rc && ((rc = rep_finish(&r)) || (rc = rep_order(&r))))
		snprintf(err, errlen, "report: out of memory");
	if (!rc && out) {
		switch (fmt) {
		case REPORT_FMT_JSON: rc = report_json(&r, out, dirs, ndirs); break;
		case REPORT_FMT_MD: rc = report_md(&r, out, dirs, ndirs); break;
		case REPORT_FMT_HTML: rc = report_html(&r, out, dirs, ndirs); break;
		case REPORT_FMT_CSV: rc = report_csv(&r, out); break;
		case REPORT_FMT_JUNIT: rc = report_junit(&r, out); break;
		default: rc = report_text(&r, out, dirs, ndirs); break;
		}
		if (rc == -ENOMEM)
			snprintf(err, errlen, "report: out of memory");
		else if (rc || fflush(out) != 0 || ferror(out)) {
			rc = -EIO;
			snprintf(err, errlen, "report: cannot write the report: %s", strerror(errno));
		}
	}
	if (!rc && result)
		*result = rep_result(&r);
	rep_free(&r);
	return rc;
}

int report_print(const char *const *dirs, int ndirs, FILE *out, int json, char *err, size_t errlen)
{
	struct report_opts o = { .json = json };

	return report_run(dirs, ndirs, out, &o, NULL, err, errlen);
}

int report_format_from_name(const char *s)
{
	static const char *const names[] = { "text", "md", "html", "json", "junit", "csv" };

	for (int i = 0; i < (int)PC_ARRAY_SIZE(names); i++)
		if (!strcmp(s, names[i]))
			return i;
	if (!strcmp(s, "markdown"))
		return REPORT_FMT_MD;
	return -1;
}

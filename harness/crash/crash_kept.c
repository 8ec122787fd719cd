/*
 * crash_kept.c - one kept session's cycle.json read, every field bounded
 * (crash.h, docs/crash-states.md "Inputs"). The file is untrusted: a field
 * of the wrong type, out of its range or naming what cannot be is damaged
 * input, an error naming the file and the field, never a number that sizes
 * anything. What can only be checked against the log and the base image
 * (the counts, media_bytes, the region, the write in flight) crash_inputs.c
 * checks there.
 */
#include "harness/crash/crash.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/record.h"
#include "common/util.h"
#include "common/wlog.h"

#define KEPT_MAX_KEEP		1000u		/* device.keep_inputs */
#define KEPT_MAX_PROGRAM_US	1000000u	/* the sim's program-us */
#define KEPT_MAX_CACHE		1048576u	/* the sim's cache-sectors */

struct kread {
	const char *path;
	char *err;
	size_t errlen;
};

static int bad(const struct kread *k, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(const struct kread *k, const char *field, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(k->err, k->errlen, "%s: field %s: %s (damaged, or not a file the sim kept)", k->path, field, what);
	return -EPROTO;
}

/* An integer in [lo, hi]: 0 or -EPROTO. */
static int kval(const struct kread *k, json_object *v, const char *field, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return bad(k, field, "%s is not a whole number from %" PRIu64 " to %" PRIu64,
			   json_object_to_json_string(v), lo, hi);
	*out = json_object_get_uint64(v);
	if (*out < lo || *out > hi)
		return bad(k, field, "%" PRIu64 " is not from %" PRIu64 " to %" PRIu64, *out, lo, hi);
	return 0;
}

/* An integer member in [lo, hi]: 0, 1 when absent and not needed, -EPROTO. */
static int kint(const struct kread *k, json_object *o, const char *key, const char *field, int need, uint64_t lo,
		uint64_t hi, uint64_t *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v)
		return need ? bad(k, field, "missing") : 1;
	return kval(k, v, field, lo, hi, out);
}

/* A member of one type (NULL when absent and not needed); -EPROTO. */
static int ktyped(const struct kread *k, json_object *o, const char *key, const char *field, int need,
		  json_type t, json_object **out)
{
	*out = NULL;
	if (!json_object_object_get_ex(o, key, out) || !*out) {
		*out = NULL;
		return need && t != json_type_null ? bad(k, field, "missing") : 0;
	}
	if (!json_object_is_type(*out, t))
		return bad(k, field, "%.64s is not a %s", json_object_to_json_string(*out), json_type_to_name(t));
	if (t == json_type_string && json_object_get_string_len(*out) > 255)
		return bad(k, field, "a string of %d bytes", json_object_get_string_len(*out));
	return 0;
}

static int kept_sim(const struct kread *k, json_object *cj)
{
	json_object *v;
	uint64_t x;
	int rc;

	if ((rc = ktyped(k, cj, "media", "media", 0, json_type_string, &v)) ||
	    (rc = ktyped(k, cj, "profile", "profile", 0, json_type_string, &v)))
		return rc;
	if ((rc = kint(k, cj, "program_us", "program_us", 0, 0, KEPT_MAX_PROGRAM_US, &x)) < 0 ||
	    (rc = kint(k, cj, "cache_sectors", "cache_sectors", 0, 0, KEPT_MAX_CACHE, &x)) < 0 ||
	    (rc = kint(k, cj, "seed", "seed", 0, 0, UINT64_MAX, &x)) < 0 ||
	    (rc = kint(k, cj, "keep_inputs", "keep_inputs", 0, 1, KEPT_MAX_KEEP, &x)) < 0)
		return rc;
	if (json_object_object_get_ex(cj, "rate", &v) && v) {
		double r = json_object_get_double(v);

		if ((!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) ||
		    isnan(r) || r < 0 || r > 1)
			return bad(k, "rate", "%.64s is not a number from 0 to 1", json_object_to_json_string(v));
	}
	return 0;
}

static int kept_region(const struct kread *k, json_object *cj, struct crash_kept *o)
{
	json_object *rg, *u;
	uint64_t x;
	int rc;

	if ((rc = ktyped(k, cj, "region", "region", 0, json_type_object, &rg)) || !rg)
		return rc;
	if ((rc = ktyped(k, rg, "uuid", "region.uuid", 1, json_type_string, &u)))
		return rc;
	if (json_object_get_string_len(u) != 36)
		return bad(k, "region.uuid", "'%.64s' is not a UUID", json_object_get_string(u));
	snprintf(o->region_uuid, sizeof(o->region_uuid), "%s", json_object_get_string(u));
	if ((rc = kint(k, rg, "seed", "region.seed", 1, 0, UINT64_MAX, &o->region_seed)) ||
	    (rc = kint(k, rg, "record_size", "region.record_size", 1, 512, PC_MAX_RECORD_SIZE, &x)))
		return rc;
	o->record_size = (uint32_t)x;
	if ((rc = kint(k, rg, "nslots", "region.nslots", 1, 1, UINT32_MAX, &x)))
		return rc;
	o->nslots = (uint32_t)x;
	if ((rc = kint(k, rg, "region_bytes", "region.region_bytes", 0, 512, CRASH_MAX_MEDIA, &o->region_bytes)) < 0)
		return rc;
	o->have_region = 1;
	return 0;
}

static const char *const qemu_counts[] = { "trace_commands", "in_flight_writes", "unlogged_writes",
					    "unmatched_writes", "completed_unlogged_writes", "outside_writes" };

/* The log's counts, written when the session finished. */
static int kept_counts(const struct kread *k, json_object *cj, struct crash_kept *o)
{
	json_object *v;
	int rc;

	if ((rc = kint(k, cj, "writes", "writes", 1, 0, WLOG_MAX_ENTRIES, &o->writes)) ||
	    (rc = kint(k, cj, "fua_writes", "fua_writes", 1, 0, o->writes, &o->fua_writes)) ||
	    (rc = kint(k, cj, "flushes", "flushes", 1, 0, WLOG_MAX_ENTRIES, &o->flushes)) ||
	    (rc = kint(k, cj, "log_entries", "log_entries", 1, 0, WLOG_MAX_ENTRIES, &o->log_entries)) ||
	    (rc = kint(k, cj, "log_bytes", "log_bytes", 1, 512, CRASH_MAX_MEDIA, &o->log_bytes)) ||
	    (rc = kint(k, cj, "marks", "marks", 0, 0, WLOG_MAX_ENTRIES, &o->marks)) < 0)
		return rc;
	if (o->log_entries != o->writes + o->flushes + o->marks)
		return bad(k, "log_entries", "%" PRIu64 " is not writes %" PRIu64 " + flushes %" PRIu64 " + marks %"
			   PRIu64, o->log_entries, o->writes, o->flushes, o->marks);
	if ((rc = ktyped(k, cj, "log_error", "log_error", 0, json_type_string, &v)))
		return rc;
	if (v)
		return bad(k, "log_error", "the sim stopped keeping the log (%.64s): it is incomplete",
			   json_object_get_string(v));
	if ((rc = ktyped(k, cj, "cycles_more", "cycles_more", 0, json_type_boolean, &v)))
		return rc;
	/* the qemu relay's counts of its trace (vboard/vckeep.c): bounded, not used here */
	for (size_t i = 0; i < sizeof(qemu_counts) / sizeof(qemu_counts[0]); i++) {
		uint64_t x;

		if ((rc = kint(k, cj, qemu_counts[i], qemu_counts[i], 0, 0, UINT32_MAX, &x)) < 0)
			return rc;
	}
	o->cycles_more = v && json_object_get_boolean(v);
	o->have_counts = 1;
	return 0;
}

static int kept_cycles(const struct kread *k, json_object *cj, struct crash_kept *o)
{
	json_object *cy;
	uint64_t x;
	int rc;

	if ((rc = ktyped(k, cj, "cycles", "cycles", 1, json_type_array, &cy)))
		return rc;
	if (json_object_array_length(cy) > CRASH_KEPT_MAX_CYCLES)
		return bad(k, "cycles", "%zu cycles, more than %u", json_object_array_length(cy),
			   CRASH_KEPT_MAX_CYCLES);
	o->ncycles = (unsigned)json_object_array_length(cy);
	for (size_t i = 0; i < o->ncycles; i++) {
		/* a record header's cycle: a campaign cycle, 1 .. 2^32 - 2 (the next one is judged), or 0
		 * (a fill record, as prepare writes: no cycle's, not checked) */
		if ((rc = kval(k, json_object_array_get_idx(cy, i), "cycles", 0, UINT32_MAX - 1, &x)))
			return rc;
		if (i == 0)
			o->cycle = (uint32_t)x;
	}
	return 0;
}

/* The write in flight is on the media. */
static int kval_lba(const struct kread *k, const struct crash_in_flight *f, uint64_t media_bytes)
{
	if (f->lba > media_bytes / 512 || f->n > media_bytes / 512 - f->lba)
		return bad(k, "in_flight.lba", "sectors %" PRIu64 "+%" PRIu64 " are past the media's %" PRIu64, f->lba,
			   f->n, media_bytes / 512);
	return 0;
}

static int kept_in_flight(const struct kread *k, json_object *cj, struct crash_kept *o)
{
	struct crash_in_flight *f = &o->in_flight;
	json_object *inf, *op, *b;
	uint64_t x;
	int rc, raw;

	if (!json_object_object_get_ex(cj, "in_flight", &inf))
		return bad(k, "in_flight", "missing");
	if (!inf)
		return 0;
	if (!json_object_is_type(inf, json_type_object))
		return bad(k, "in_flight", "neither null nor an object");
	if ((rc = ktyped(k, inf, "op", "in_flight.op", 1, json_type_string, &op)))
		return rc;
	if (!strcmp(json_object_get_string(op), "flush")) {
		o->in_flight_op = 2;
		return 0;
	}
	if (strcmp(json_object_get_string(op), "write"))
		return bad(k, "in_flight.op", "'%.32s' is neither write nor flush", json_object_get_string(op));
	o->in_flight_op = 1;
	if ((rc = kint(k, inf, "lba", "in_flight.lba", 1, 0, CRASH_MAX_MEDIA / 512, &f->lba)) ||
	    (rc = kint(k, inf, "n", "in_flight.n", 1, 1, CRASH_MAX_BYTES / 512, &f->n)) ||
	    (rc = kval_lba(k, f, o->media_bytes)) ||
	    (rc = ktyped(k, inf, "fua", "in_flight.fua", 1, json_type_boolean, &b)) ||
	    (rc = ktyped(k, inf, "raw", "in_flight.raw", 1, json_type_boolean, &b)))
		return rc;
	raw = json_object_get_boolean(b);
	if (raw)
		return 0;	/* not a record: its bytes are not known, it is not judged */
	if ((rc = kint(k, inf, "seq", "in_flight.seq", 1, 1, UINT64_MAX / 2, &f->seq)) ||
	    (rc = kint(k, inf, "cycle", "in_flight.cycle", 1, 1, UINT32_MAX - 1, &x)))
		return rc;
	f->cycle = (uint32_t)x;
	if ((rc = kint(k, inf, "flags", "in_flight.flags", 1, 1, UINT16_MAX, &x)))
		return rc;
	if ((x & ~(uint64_t)(PC_FL_MODE_MASK | PC_FL_COMMIT | PC_FL_RANDOM)) || !(x & PC_FL_MODE_MASK) ||
	    (x & PC_FL_MODE_MASK) >= PC_MODE_MAX)
		return bad(k, "in_flight.flags", "%" PRIu64 " is not a record's flags", x);
	f->flags = (uint16_t)x;
	f->valid = 1;
	return 0;
}

int crash_kept_read(const char *path, uint32_t session, struct crash_kept *o, char *err, size_t errlen)
{
	struct kread k = { path, err, errlen };
	json_object *cj = json_object_from_file(path), *v;
	uint64_t x;
	int rc;

	memset(o, 0, sizeof(*o));
	snprintf(o->path, sizeof(o->path), "%s", path);
	if (!cj || !json_object_is_type(cj, json_type_object)) {
		json_object_put(cj);
		return pc_fail(err, errlen, -EPROTO, "%s: not a JSON object (damaged, or not a file the sim kept)", path);
	}
	if ((rc = kint(&k, cj, "format", "format", 1, 1, 1, &x)) ||
	    (rc = kint(&k, cj, "session", "session", 1, session, session, &x)) ||
	    (rc = ktyped(&k, cj, "finished", "finished", 1, json_type_boolean, &v)))
		goto out;
	o->session = session;
	o->finished = json_object_get_boolean(v);
	if ((rc = ktyped(&k, cj, "end", "end", 1, json_type_string, &v)))
		goto out;
	if (strcmp(json_object_get_string(v), "cut") && strcmp(json_object_get_string(v), "close") &&
	    strcmp(json_object_get_string(v), "unknown")) {
		rc = bad(&k, "end", "'%.32s' is none of cut, close, unknown", json_object_get_string(v));
		goto out;
	}
	/* the sim's: its whole media; a qemu board keeps the region alone, without it */
	o->media_bytes = CRASH_MAX_MEDIA;
	if ((rc = kint(&k, cj, "media_bytes", "media_bytes", 0, 512, CRASH_MAX_MEDIA, &o->media_bytes)) < 0)
		goto out;
	o->have_media = !rc;
	if (o->media_bytes % 512) {
		rc = bad(&k, "media_bytes", "%" PRIu64 " is not whole 512-byte sectors", o->media_bytes);
		goto out;
	}
	if ((rc = kept_sim(&k, cj)) || (rc = kept_region(&k, cj, o)) || (rc = kept_in_flight(&k, cj, o)))
		goto out;
	if (o->finished && ((rc = kept_counts(&k, cj, o)) || (rc = kept_cycles(&k, cj, o))))
		goto out;
	/* the cycle of its records; none completed: the one in flight */
	if (!o->ncycles && o->in_flight.valid)
		o->cycle = o->in_flight.cycle;
out:
	json_object_put(cj);
	return rc;
}

/*
 * proto.c - the host <-> agent protocol: validate, build and frame messages.
 *
 * Every line comes from the other end of a serial console or a socket and is
 * treated as hostile: the length is bounded before json-c sees it, the JSON
 * must be exactly one object, and each message type has a schema that checks
 * presence, JSON type and range of every field it uses before anything is
 * copied out. Unknown extra fields are ignored so that a newer peer can add
 * information without breaking an older one (a change of meaning bumps "v").
 */
#include "common/proto.h"
#include "common/auth.h"
#include "common/record.h"
#include "common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#define MARKER_LEN	(sizeof(PC_PROTO_MARKER) - 1)
/*
 * Builders keep the JSON text short enough that the line still fits the
 * limit with the serial marker in front and a CR behind it: the limit is on
 * the line as received, so the reader needs to know nothing about framing.
 */
/* room for the serial marker, a \r and the authentication tag (auth.h) */
#define MAX_JSON	(PC_PROTO_MAX_LINE - MARKER_LEN - 1 - PC_AUTH_TAG_OVERHEAD)
/* Our own fields nest three deep; leave room for free-form device facts. */
#define MAX_DEPTH	16
#define MAX_SPR		(PC_MAX_RECORD_SIZE / PC_SECTOR)
#define MAX_RANGE_N	1048576u
#define RAW_B64_LEN	684u	/* base64 of 512 bytes */

/* ---- validation helpers ---- */

struct vctx {
	const char *type;	/* prefix for errors: the message type, or NULL */
	char *err;
	size_t errlen;
};

static int verr(struct vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int verr(struct vctx *c, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->err && c->errlen) {
		if (c->type)
			snprintf(c->err, c->errlen, "%s: %s", c->type, msg);
		else
			snprintf(c->err, c->errlen, "%s", msg);
	}
	return -EINVAL;
}

/* Untrusted text echoed in an error: printable ASCII only, bounded. */
static const char *quote(const char *s, char *buf, size_t n)
{
	size_t i = 0;

	for (; *s && i + 4 < n; s++)
		buf[i++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
	if (*s)
		for (int k = 0; k < 3; k++)
			buf[i++] = '.';
	buf[i] = 0;
	return buf;
}

static const char *jtype(json_object *v)
{
	return v ? json_type_to_name(json_object_get_type(v)) : "null";
}

static void range_desc(char *buf, size_t n, int64_t min, uint64_t max)
{
	if (max == UINT64_MAX)
		snprintf(buf, n, ">= %" PRId64, min);
	else
		snprintf(buf, n, "%" PRId64 "..%" PRIu64, min, max);
}

/*
 * The integer value v (present: whether the key existed; a JSON null is
 * present with v == NULL) must lie in [min, max]. Negative results (only when
 * min < 0) come back as two's complement in *out.
 */
static int int_err(struct vctx *c, int present, json_object *v, const char *pfx, const char *key,
		   int64_t min, uint64_t max)
{
	char want[64];

	range_desc(want, sizeof(want), min, max);
	if (!present)
		return verr(c, "field \"%s%s\" is missing (expected an integer %s)", pfx, key, want);
	if (!v || !json_object_is_type(v, json_type_int))
		return verr(c, "field \"%s%s\": expected an integer %s, got %s", pfx, key, want, jtype(v));
	if (json_object_get_int64(v) < 0)
		return verr(c, "field \"%s%s\": expected an integer %s, got %" PRId64, pfx, key, want,
			    json_object_get_int64(v));
	return verr(c, "field \"%s%s\": expected an integer %s, got %" PRIu64, pfx, key, want,
		    json_object_get_uint64(v));
}

/*
 * The integer value v (present: whether the key existed; a JSON null is
 * present with v == NULL) must lie in [min, max]. Negative results (only when
 * min < 0) come back as two's complement in *out. The message is built only
 * when the value is refused: this runs for every number of every message.
 */
static int want_int(struct vctx *c, int present, json_object *v, const char *pfx, const char *key,
		    int64_t min, uint64_t max, uint64_t *out)
{
	int64_t s;
	uint64_t u;

	if (!present || !v || !json_object_is_type(v, json_type_int))
		return int_err(c, present, v, pfx, key, min, max);
	s = json_object_get_int64(v);
	if (s < 0) {
		if (s < min)
			return int_err(c, present, v, pfx, key, min, max);
		*out = (uint64_t)s;
		return 0;
	}
	/* json-c keeps values above INT64_MAX as uint64 */
	u = json_object_get_uint64(v);
	if ((min > 0 && u < (uint64_t)min) || u > max)
		return int_err(c, present, v, pfx, key, min, max);
	*out = u;
	return 0;
}

static int get_int(struct vctx *c, json_object *o, const char *pfx, const char *key,
		   int64_t min, uint64_t max, uint64_t *out)
{
	json_object *v;
	int present = json_object_object_get_ex(o, key, &v);

	return want_int(c, present, v, pfx, key, min, max, out);
}

static int get_u32(struct vctx *c, json_object *o, const char *pfx, const char *key,
		   uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (get_int(c, o, pfx, key, min, max, &v))
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int get_str(struct vctx *c, json_object *o, const char *pfx, const char *key, const char **out)
{
	json_object *v;
	const char *s;

	if (!json_object_object_get_ex(o, key, &v))
		return verr(c, "field \"%s%s\" is missing (expected a string)", pfx, key);
	if (!v || !json_object_is_type(v, json_type_string))
		return verr(c, "field \"%s%s\": expected a string, got %s", pfx, key, jtype(v));
	s = json_object_get_string(v);
	/* "\u0000" is legal JSON but would silently cut the C string */
	if (strlen(s) != (size_t)json_object_get_string_len(v))
		return verr(c, "field \"%s%s\": the string contains a NUL character", pfx, key);
	*out = s;
	return 0;
}

/* A string of exactly 2n hex digits (n bytes). */
static int get_hex(struct vctx *c, json_object *o, const char *key, size_t n, const char **out)
{
	if (get_str(c, o, "", key, out))
		return -EINVAL;
	if (strlen(*out) != 2 * n || strspn(*out, "0123456789abcdefABCDEF") != 2 * n)
		return verr(c, "field \"%s\": expected %zu hex digits", key, 2 * n);
	return 0;
}

static int get_bool(struct vctx *c, json_object *o, const char *key, int *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return verr(c, "field \"%s\" is missing (expected true or false)", key);
	if (!v || !json_object_is_type(v, json_type_boolean))
		return verr(c, "field \"%s\": expected true or false, got %s", key, jtype(v));
	*out = json_object_get_boolean(v) ? 1 : 0;
	return 0;
}

static int get_obj(struct vctx *c, json_object *o, const char *key, json_object **out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return verr(c, "field \"%s\" is missing (expected an object)", key);
	if (!v || !json_object_is_type(v, json_type_object))
		return verr(c, "field \"%s\": expected an object, got %s", key, jtype(v));
	*out = v;
	return 0;
}

static int get_array(struct vctx *c, json_object *o, const char *key, size_t min, size_t max,
		     json_object **out, size_t *n)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return verr(c, "field \"%s\" is missing (expected an array of %zu..%zu elements)",
			    key, min, max);
	if (!v || !json_object_is_type(v, json_type_array))
		return verr(c, "field \"%s\": expected an array of %zu..%zu elements, got %s",
			    key, min, max, jtype(v));
	*n = json_object_array_length(v);
	if (*n < min || *n > max)
		return verr(c, "field \"%s\": expected an array of %zu..%zu elements, got %zu",
			    key, min, max, *n);
	*out = v;
	return 0;
}

static int get_mode(struct vctx *c, json_object *o, const char *key, int *out)
{
	char q[36];	/* 32 characters, "...", NUL */
	const char *s;

	if (get_str(c, o, "", key, &s))
		return -EINVAL;
	*out = pc_mode_from_name(s);
	if (*out < 0)
		return verr(c, "field \"%s\": unknown mode \"%s\" (expected fua, fua+flush, flush, "
			    "journal, none, relwr or relwr-off)", key, quote(s, q, sizeof(q)));
	return 0;
}

static int get_pattern(struct vctx *c, json_object *o, const char *key, int *out)
{
	char q[36];	/* 32 characters, "...", NUL */
	const char *s;

	if (get_str(c, o, "", key, &s))
		return -EINVAL;
	*out = pc_pattern_from_name(s);
	if (*out < 0)
		return verr(c, "field \"%s\": unknown pattern \"%s\" (expected sequential or random)",
			    key, quote(s, q, sizeof(q)));
	return 0;
}

static int get_record_size(struct vctx *c, json_object *o, const char *pfx, uint32_t *out)
{
	if (get_u32(c, o, pfx, "record_size", PC_SECTOR, PC_MAX_RECORD_SIZE, out))
		return -EINVAL;
	if (*out % PC_SECTOR)
		return verr(c, "field \"%srecord_size\": expected a multiple of 512, got %" PRIu32,
			    pfx, *out);
	return 0;
}

/* [first, first + n) must not wrap the 64-bit sequence space. */
static int check_seq_range(struct vctx *c, const char *what, uint64_t first, uint64_t n)
{
	if (n && first > UINT64_MAX - (n - 1))
		return verr(c, "%s: seqs %" PRIu64 " + %" PRIu64 " pass 2^64", what, first, n);
	return 0;
}

/* ---- per-type schemas ---- */

static int board_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 63)
		return 0;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

static int uuid_text_ok(const char *s)
{
	uint8_t u[16];

	if (strlen(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-')
		return 0;
	return pc_uuid_parse(s, u) == 0;
}

static int parse_region(struct vctx *c, json_object *reg)
{
	struct pc_geom g;
	const char *s;
	uint64_t bytes, seed;
	uint32_t rs, slots;
	char why[160];

	if (get_str(c, reg, "region.", "uuid", &s))
		return -EINVAL;
	if (!uuid_text_ok(s))
		return verr(c, "field \"region.uuid\": expected a UUID (36 characters, 8-4-4-4-12 hex digits)");
	if (get_int(c, reg, "region.", "bytes", 1, UINT64_MAX, &bytes) ||
	    get_record_size(c, reg, "region.", &rs) ||
	    get_u32(c, reg, "region.", "slots", 1, UINT32_MAX, &slots) ||
	    get_int(c, reg, "region.", "seed", 0, UINT64_MAX, &seed))
		return -EINVAL;
	/* the geometry is a pure function of size and record size: a peer that
	 * disagrees with it is not talking about a region we can verify */
	if (pc_geom_init(&g, bytes, rs, seed, why, sizeof(why)))
		return verr(c, "field \"region\": %s", why);
	if (g.nslots != slots)
		return verr(c, "field \"region\": %" PRIu64 " bytes of %" PRIu32 "-byte records hold %"
			    PRIu32 " slots, not %" PRIu32, bytes, rs, g.nslots, slots);
	return 0;
}

static int parse_hello(struct vctx *c, json_object *o, struct pc_msg *m)
{
	static const char *const strs[] = { "agent", "boot_id", "kernel", "backend" };
	json_object *reg, *dev, *q, *io;
	const char *s;
	uint64_t fua;

	if (get_str(c, o, "", "board", &s))
		return -EINVAL;
	if (!board_name_ok(s))
		return verr(c, "field \"board\": expected 1..63 characters of [A-Za-z0-9_.-]");
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (get_str(c, o, "", strs[i], &s))
			return -EINVAL;
	/* an agent whose region lost both superblocks says why instead; the
	 * host, which knows the geometry, sends it back with VERIFY */
	if (json_object_object_get_ex(o, "region_error", NULL)) {
		if (get_str(c, o, "", "region_error", &s))
			return -EINVAL;
		if (json_object_object_get_ex(o, "region", NULL))
			return verr(c, "fields \"region\" and \"region_error\" exclude each other");
	} else if (get_obj(c, o, "region", &reg) || parse_region(c, reg)) {
		return -EINVAL;
	}
	if (get_obj(c, o, "device", &dev) ||
	    get_obj(c, o, "queue", &q) ||
	    get_int(c, q, "queue.", "fua", -1, 1, &fua) ||
	    get_str(c, q, "queue.", "write_cache", &s))
		return -EINVAL;
	if (json_object_object_get_ex(o, "io", &io) && get_obj(c, o, "io", &io))
		return -EINVAL;
	/* optional here (recorded runs before the authenticated link have
	 * none); the host's link requires it */
	if (json_object_object_get_ex(o, "nonce", NULL) && get_hex(c, o, "nonce", PC_AUTH_NONCE_BYTES, &s))
		return -EINVAL;
	return 0;
}

static int parse_scan_begin(struct vctx *c, json_object *o, struct pc_msg *m)
{
	uint32_t slots;
	int pattern, full;

	if (get_u32(c, o, "", "slots", 0, UINT32_MAX, &slots) ||
	    get_pattern(c, o, "pattern", &pattern) ||
	    get_bool(c, o, "full", &full))
		return -EINVAL;
	return 0;
}

static int parse_run(struct vctx *c, json_object *e, size_t i, struct pc_run *r)
{
	static const uint64_t max[5] = { UINT32_MAX, UINT32_MAX, UINT64_MAX, UINT32_MAX, UINT16_MAX };
	static const int64_t min[5] = { 0, 1, 0, 0, 0 };
	uint64_t v[5];
	char name[48];

	if (!e || !json_object_is_type(e, json_type_array) || json_object_array_length(e) != 5) {
		snprintf(name, sizeof(name), "%s", jtype(e));
		if (e && json_object_is_type(e, json_type_array))
			snprintf(name, sizeof(name), "an array of %zu", json_object_array_length(e));
		return verr(c, "field \"r[%zu]\": expected an array of 5 integers "
			    "[pos, n, seq, cycle, flags], got %s", i, name);
	}
	for (size_t k = 0; k < 5; k++) {
		json_object *x = json_object_array_get_idx(e, k);
		char key[32];

		if (x && json_object_is_type(x, json_type_int) && json_object_get_int64(x) >= 0 &&
		    json_object_get_uint64(x) <= max[k] && json_object_get_uint64(x) >= (uint64_t)min[k]) {
			v[k] = json_object_get_uint64(x);
			continue;
		}
		snprintf(key, sizeof(key), "[%zu][%zu]", i, k);
		return want_int(c, 1, x, "r", key, min[k], max[k], &v[k]);
	}
	if (v[0] + v[1] > (uint64_t)UINT32_MAX + 1)
		return verr(c, "field \"r[%zu]\": positions %" PRIu64 " + %" PRIu64 " pass 2^32",
			    i, v[0], v[1]);
	snprintf(name, sizeof(name), "field \"r[%zu]\"", i);
	if (v[2] && check_seq_range(c, name, v[2], v[1]))
		return -EINVAL;
	*r = (struct pc_run){ .pos = (uint32_t)v[0], .n = (uint32_t)v[1], .seq = v[2],
			      .cycle = (uint32_t)v[3], .flags = (uint16_t)v[4] };
	return 0;
}

static int parse_runs(struct vctx *c, json_object *o, struct pc_msg *m)
{
	json_object *r;
	size_t n;

	if (get_array(c, o, "r", 1, PC_PROTO_RUNS_PER_LINE, &r, &n))
		return -EINVAL;
	m->u.runs.runs = calloc(n, sizeof(*m->u.runs.runs));
	if (!m->u.runs.runs) {
		verr(c, "out of memory");
		return -ENOMEM;
	}
	m->u.runs.nruns = (uint32_t)n;
	for (size_t i = 0; i < n; i++)
		if (parse_run(c, json_object_array_get_idx(r, i), i, &m->u.runs.runs[i]))
			return -EINVAL;
	return 0;
}

static const char *const valid_keys[] = { "seq", "cyc", "fl", "lba", "hi" };

/* Which sector forms an entry carries: exactly one is allowed. */
static int sect_forms(json_object *e, const char **names)
{
	static const char *const single[] = { "raw", "fill", "h", "err" };
	int n = 0;

	for (size_t k = 0; k < PC_ARRAY_SIZE(valid_keys); k++)
		if (json_object_object_get_ex(e, valid_keys[k], NULL)) {
			names[n++] = "seq/cyc/fl/lba/hi";
			break;
		}
	for (size_t k = 0; k < PC_ARRAY_SIZE(single); k++)
		if (json_object_object_get_ex(e, single[k], NULL))
			names[n++] = single[k];
	return n;
}

static int parse_sect_valid(struct vctx *c, json_object *e, const char *pfx, struct pc_sect_report *r)
{
	uint64_t v[5];
	static const uint64_t max[5] = { UINT64_MAX, UINT32_MAX, UINT16_MAX, UINT64_MAX, MAX_SPR - 1 };

	for (size_t k = 0; k < 5; k++)
		if (get_int(c, e, pfx, valid_keys[k], 0, max[k], &v[k]))
			return -EINVAL;
	r->kind = PC_SK_VALID;
	r->seq = v[0];
	r->cycle = (uint32_t)v[1];
	r->flags = (uint16_t)v[2];
	r->lba = v[3];
	r->hidx = (uint16_t)v[4];
	return 0;
}

static int parse_sect_raw(struct vctx *c, json_object *e, const char *pfx, struct pc_sect_report *r)
{
	const char *s;
	size_t n;

	if (get_str(c, e, pfx, "raw", &s))
		return -EINVAL;
	if (strlen(s) != RAW_B64_LEN || pc_b64_decode(s, r->raw, sizeof(r->raw), &n) || n != PC_SECTOR)
		return verr(c, "field \"%sraw\": expected base64 of exactly 512 bytes (%u characters)",
			    pfx, RAW_B64_LEN);
	r->kind = PC_SK_RAW;
	return 0;
}

static int parse_sect(struct vctx *c, json_object *e, size_t i, int prev, struct pc_sect_report *r)
{
	const char *forms[5];
	char pfx[32];
	uint64_t idx;
	int nf;

	if (!e || !json_object_is_type(e, json_type_object))
		return verr(c, "field \"s[%zu]\": expected an object, got %s", i, jtype(e));
	snprintf(pfx, sizeof(pfx), "s[%zu].", i);
	if (get_int(c, e, pfx, "i", 0, MAX_SPR - 1, &idx))
		return -EINVAL;
	if ((int)idx <= prev)
		return verr(c, "field \"%si\": sector index %" PRIu64 " after %d (indices must "
			    "strictly increase)", pfx, idx, prev);
	r->idx = (uint16_t)idx;
	nf = sect_forms(e, forms);
	if (nf == 0)
		return verr(c, "field \"s[%zu]\": no sector form (expected seq/cyc/fl/lba/hi, raw, "
			    "fill, h or err)", i);
	if (nf > 1)
		return verr(c, "field \"s[%zu]\": more than one sector form (%s and %s)",
			    i, forms[0], forms[1]);
	if (forms[0][0] == 's')
		return parse_sect_valid(c, e, pfx, r);
	if (strcmp(forms[0], "raw") == 0)
		return parse_sect_raw(c, e, pfx, r);
	if (strcmp(forms[0], "fill") == 0) {
		r->kind = PC_SK_FILL;
		return get_u32(c, e, pfx, "fill", 0, 255, &r->value);
	}
	if (strcmp(forms[0], "h") == 0) {
		r->kind = PC_SK_HASH;
		return get_u32(c, e, pfx, "h", 0, UINT32_MAX, &r->value);
	}
	r->kind = PC_SK_ERR;
	return get_u32(c, e, pfx, "err", 1, INT32_MAX, &r->value);
}

static int parse_slot(struct vctx *c, json_object *o, struct pc_msg *m)
{
	struct pc_slot_report *s = &m->u.slot;
	json_object *arr;
	size_t n;
	int prev = -1;

	if (get_u32(c, o, "", "slot", 0, UINT32_MAX - 1, &s->slot) ||
	    get_array(c, o, "s", 1, MAX_SPR, &arr, &n))
		return -EINVAL;
	s->sect = calloc(n, sizeof(*s->sect));
	if (!s->sect) {
		verr(c, "out of memory");
		return -ENOMEM;
	}
	s->nsect = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		if (parse_sect(c, json_object_array_get_idx(arr, i), i, prev, &s->sect[i]))
			return -EINVAL;
		prev = s->sect[i].idx;
	}
	return 0;
}

static int parse_scan_end(struct vctx *c, json_object *o, struct pc_msg *m)
{
	uint64_t ms;

	if (get_u32(c, o, "", "slots", 0, UINT32_MAX, &m->u.scan_end.slots) ||
	    get_u32(c, o, "", "anomalies", 0, UINT32_MAX, &m->u.scan_end.anomalies) ||
	    get_u32(c, o, "", "raw_dropped", 0, UINT32_MAX, &m->u.scan_end.raw_dropped))
		return -EINVAL;
	if (json_object_object_get_ex(o, "ms", NULL) && get_int(c, o, "", "ms", 0, UINT64_MAX, &ms))
		return -EINVAL;
	return 0;
}

static int parse_range(struct vctx *c, json_object *o, struct pc_msg *m)
{
	json_object *arr;
	size_t n;

	if (get_int(c, o, "", "first", 1, UINT64_MAX, &m->u.range.first) ||
	    get_u32(c, o, "", "n", 1, MAX_RANGE_N, &m->u.range.n) ||
	    check_seq_range(c, "field \"first\"", m->u.range.first, m->u.range.n))
		return -EINVAL;
	if (m->type != PC_MSG_ACK || !json_object_object_get_ex(o, "us", NULL))
		return 0;
	/* each record's latency: one per record of the range, or none */
	if (get_array(c, o, "us", 1, PC_PROTO_MAX_LAT_N, &arr, &n))
		return -EINVAL;
	if (n != m->u.range.n)
		return verr(c, "field \"us\": %zu latencies for a range of %" PRIu32 " records", n, m->u.range.n);
	m->u.range.us = calloc(n, sizeof(*m->u.range.us));
	if (!m->u.range.us)
		return verr(c, "out of memory");
	for (size_t i = 0; i < n; i++) {
		char key[32];
		uint64_t v;

		snprintf(key, sizeof(key), "[%zu]", i);
		if (want_int(c, 1, json_object_array_get_idx(arr, i), "us", key, 0, PC_PROTO_MAX_LAT_US, &v))
			return -EINVAL;
		m->u.range.us[i] = (uint32_t)v;
	}
	return 0;
}

/* rq or sectors of an audit: request kinds (or "other", in rq) and counts. */
static int check_rq_kinds(struct vctx *c, const char *key, const char *what, json_object *o, int other)
{
	char pre[32];

	if (json_object_object_length(o) > PC_PROTO_AUDIT_KINDS)
		return verr(c, "field \"%s.%s\": more than %d kinds of request", key, what, PC_PROTO_AUDIT_KINDS);
	snprintf(pre, sizeof(pre), "audit.%s.", what);
	json_object_object_foreach(o, k, n) {
		uint64_t x;

		if ((!other || strcmp(k, "other")) &&
		    (!k[0] || strlen(k) > 9 || strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(k)))
			return verr(c, "field \"%s.%s\": \"%.20s\" is not a request kind (1 to 9 capital letters)",
				    key, what, k);
		if (want_int(c, 1, n, pre, k, 0, PC_PROTO_AUDIT_MAX, &x))
			return -EINVAL;
	}
	return 0;
}

/* An audit object (proto.h), under key of o. */
static int check_audit(struct vctx *c, json_object *o, const char *key)
{
	json_object *a, *rq, *v;
	const char *s;
	int has_sec;

	if (get_obj(c, o, key, &a))
		return -EINVAL;
	if (json_object_object_get_ex(a, "unavailable", &v)) {
		if (get_str(c, a, "audit.", "unavailable", &s))
			return -EINVAL;
		if (strlen(s) > 400 || json_object_object_length(a) != 1)
			return verr(c, "field \"%s\": \"unavailable\" alone, a reason of at most 400 bytes", key);
		return 0;
	}
	if (get_str(c, a, "audit.", "src", &s))
		return -EINVAL;
	if (!s[0] || strlen(s) > 15 || strspn(s, "abcdefghijklmnopqrstuvwxyz") != strlen(s))
		return verr(c, "field \"%s.src\": expected 1 to 15 small letters", key);
	if (get_obj(c, a, "rq", &rq) || check_rq_kinds(c, key, "rq", rq, 1))
		return -EINVAL;
	/* sectors by kind: optional; only kinds that were counted */
	has_sec = json_object_object_get_ex(a, "sectors", NULL);
	if (has_sec) {
		if (get_obj(c, a, "sectors", &v) || check_rq_kinds(c, key, "sectors", v, 0))
			return -EINVAL;
		json_object_object_foreach(v, k, n) {
			(void)n;
			if (!json_object_object_get_ex(rq, k, NULL))
				return verr(c, "field \"%s.sectors\": \"%.20s\" was not counted in rq", key, k);
		}
	}
	/* nothing else rides along into the verdict */
	if (json_object_object_length(a) != 2 + has_sec)
		return verr(c, "field \"%s\": only \"src\", \"rq\" and \"sectors\"", key);
	return 0;
}

static int parse_audit(struct vctx *c, json_object *o, struct pc_msg *m)
{
	return check_audit(c, o, "audit");
}

static int parse_done(struct vctx *c, json_object *o, struct pc_msg *m)
{
	uint64_t ms;
	const char *io;
	int mode;

	if (get_int(c, o, "", "records", 0, UINT64_MAX, &m->u.done.records) ||
	    get_int(c, o, "", "ms", 0, UINT64_MAX, &ms) ||
	    get_str(c, o, "", "io", &io) ||
	    get_mode(c, o, "mode", &mode))
		return -EINVAL;
	if (json_object_object_get_ex(o, "audit", NULL) && check_audit(c, o, "audit"))
		return -EINVAL;
	return 0;
}

static int parse_crash(struct vctx *c, json_object *o, struct pc_msg *m)
{
	return 0;	/* no fields: the request is the whole message */
}

static int parse_error(struct vctx *c, json_object *o, struct pc_msg *m)
{
	json_object *we;
	const char *s;
	uint64_t v;
	int mode;

	if (get_str(c, o, "", "msg", &s))
		return -EINVAL;
	/* a write the device refused: a finding about the device */
	if (!json_object_object_get_ex(o, "write_error", NULL))
		return 0;
	if (get_obj(c, o, "write_error", &we) ||
	    get_int(c, we, "write_error.", "errno", 1, 4095, &v) ||
	    get_int(c, we, "write_error.", "lba", 0, UINT64_MAX, &v) ||
	    get_int(c, we, "write_error.", "seq", 1, UINT64_MAX, &v))
		return -EINVAL;
	if (get_mode(c, we, "mode", &mode))
		return -EINVAL;
	return 0;
}

/* [a-z0-9_], 1..32: a cause the host can match without quoting it */
static int cause_ok(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= 32 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

static int parse_setup_error(struct vctx *c, json_object *o, struct pc_msg *m)
{
	const char *s;

	if (json_object_object_get_ex(o, "board", NULL)) {
		if (get_str(c, o, "", "board", &s))
			return -EINVAL;
		if (!board_name_ok(s))
			return verr(c, "field \"board\": expected 1..63 characters of [A-Za-z0-9_.-]");
	}
	if (get_str(c, o, "", "cause", &s))
		return -EINVAL;
	if (!cause_ok(s))
		return verr(c, "field \"cause\": expected 1..32 characters of [a-z0-9_]");
	if (get_str(c, o, "", "reason", &s))
		return -EINVAL;
	if (!s[0] || strlen(s) > PC_PROTO_MAX_REASON)
		return verr(c, "field \"reason\": expected 1..%d bytes", PC_PROTO_MAX_REASON);
	return 0;
}

static int parse_challenge(struct vctx *c, json_object *o, struct pc_msg *m)
{
	const char *s;

	if (get_hex(c, o, "nonce", PC_AUTH_NONCE_BYTES, &s) || get_hex(c, o, "echo", PC_AUTH_NONCE_BYTES, &s))
		return -EINVAL;
	return 0;
}

static int parse_auth(struct vctx *c, json_object *o, struct pc_msg *m)
{
	const char *s;

	return get_hex(c, o, "mac", PC_AUTH_PROOF_BYTES, &s);
}

/* A JSON integer >= 0, exactly (json-c keeps values above INT64_MAX as uint64). */
static int nonneg_int(json_object *v, uint64_t *out)
{
	if (json_object_get_int64(v) < 0)
		return -EINVAL;
	*out = json_object_get_uint64(v);
	return 0;
}

static int parse_verify(struct vctx *c, json_object *o, struct pc_msg *m)
{
	json_object *arr;
	size_t n;

	if (get_pattern(c, o, "pattern", &m->u.verify.pattern) ||
	    get_bool(c, o, "full", &m->u.verify.full))
		return -EINVAL;
	if (json_object_object_get_ex(o, "region", &arr) && (get_obj(c, o, "region", &arr) || parse_region(c, arr)))
		return -EINVAL;
	if (!json_object_object_get_ex(o, "ranges", &arr)) {
		if (!m->u.verify.full)
			return verr(c, "field \"ranges\": required when \"full\" is false");
		return 0;
	}
	if (m->u.verify.full)
		return verr(c, "field \"ranges\": not allowed when \"full\" is true");
	if (!json_object_is_type(arr, json_type_array))
		return verr(c, "field \"ranges\": expected an array of [pos, n], got %s", jtype(arr));
	n = json_object_array_length(arr);
	if (n < 1 || n > PC_PROTO_MAX_RANGES)
		return verr(c, "field \"ranges\": expected 1 to %d ranges, got %zu", PC_PROTO_MAX_RANGES, n);
	m->u.verify.ranges = calloc(n, sizeof(*m->u.verify.ranges));
	if (!m->u.verify.ranges)
		return verr(c, "out of memory");
	m->u.verify.nranges = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(arr, i), *a, *b;
		uint64_t pos, cnt;

		if (!json_object_is_type(r, json_type_array) || json_object_array_length(r) != 2 ||
		    !json_object_is_type(a = json_object_array_get_idx(r, 0), json_type_int) ||
		    !json_object_is_type(b = json_object_array_get_idx(r, 1), json_type_int))
			return verr(c, "field \"ranges[%zu]\": expected [pos, n] of two integers", i);
		/* unsigned and checked: pos + n must not wrap on the way to the limit */
		if (nonneg_int(a, &pos) || nonneg_int(b, &cnt) || cnt < 1 || pos > UINT32_MAX ||
		    cnt > UINT32_MAX - pos)
			return verr(c, "field \"ranges[%zu]\": [%s, %s] is not a range of positions", i,
				    json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN),
				    json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN));
		m->u.verify.ranges[i].pos = (uint32_t)pos;
		m->u.verify.ranges[i].n = (uint32_t)cnt;
	}
	return 0;
}

/* KNOWN: "sectors" is base64 of 10-byte entries: slot (4), idx (2), crc (4), little-endian
 * as everything on the medium. */
#define KNOWN_ENTRY 10

#define KNOWN_SLOT_ENTRY 12

/* base64 of 1..max entries of `entry` bytes into buf; the number, or -EINVAL. */
static int b64_entries(struct vctx *c, json_object *o, const char *key, size_t entry, size_t max, uint8_t *buf)
{
	const char *s;
	size_t len, n;

	if (get_str(c, o, "", key, &s))
		return -EINVAL;
	len = strlen(s);
	if (len == 0 || len % 4 || len / 4 * 3 > max * entry + 2 || pc_b64_decode(s, buf, max * entry, &n) ||
	    n % entry || n == 0)
		return verr(c, "field \"%s\": expected base64 of 1 to %zu entries of %zu bytes", key, max, entry);
	return (int)(n / entry);
}

static int parse_known(struct vctx *c, json_object *o, struct pc_msg *m)
{
	uint8_t buf[PC_PROTO_KNOWN_PER_LINE * KNOWN_ENTRY > PC_PROTO_KNOWN_SLOTS_PER_LINE * KNOWN_SLOT_ENTRY ?
		    PC_PROTO_KNOWN_PER_LINE * KNOWN_ENTRY : PC_PROTO_KNOWN_SLOTS_PER_LINE * KNOWN_SLOT_ENTRY];
	int has_sect = json_object_object_get_ex(o, "sectors", NULL), has_slots = json_object_object_get_ex(o, "slots", NULL);
	int n;

	if (!has_sect && !has_slots)
		return verr(c, "field \"sectors\" or \"slots\" is required");
	if (has_sect) {
		if ((n = b64_entries(c, o, "sectors", KNOWN_ENTRY, PC_PROTO_KNOWN_PER_LINE, buf)) < 0)
			return -EINVAL;
		m->u.known.n = (uint32_t)n;
		m->u.known.k = calloc((size_t)n, sizeof(*m->u.known.k));
		if (!m->u.known.k)
			return verr(c, "out of memory");
		for (int i = 0; i < n; i++) {
			const uint8_t *e = buf + (size_t)i * KNOWN_ENTRY;
			m->u.known.k[i].slot = pc_get32(e);
			m->u.known.k[i].idx = pc_get16(e + 4);
			m->u.known.k[i].crc = pc_get32(e + 6);
		}
	}
	if (has_slots) {
		if ((n = b64_entries(c, o, "slots", KNOWN_SLOT_ENTRY, PC_PROTO_KNOWN_SLOTS_PER_LINE, buf)) < 0)
			return -EINVAL;
		m->u.known.nslots = (uint32_t)n;
		m->u.known.slots = calloc((size_t)n, sizeof(*m->u.known.slots));
		if (!m->u.known.slots)
			return verr(c, "out of memory");
		for (int i = 0; i < n; i++) {
			const uint8_t *e = buf + (size_t)i * KNOWN_SLOT_ENTRY;
			m->u.known.slots[i].slot = pc_get32(e);
			m->u.known.slots[i].digest = pc_get64(e + 4);
		}
	}
	return 0;
}

static int parse_same(struct vctx *c, json_object *o, struct pc_msg *m)
{
	json_object *arr;
	size_t n;

	if (get_array(c, o, "slots", 1, PC_PROTO_SAME_PER_LINE, &arr, &n))
		return -EINVAL;
	m->u.same.slots = calloc(n, sizeof(*m->u.same.slots));
	if (!m->u.same.slots)
		return verr(c, "out of memory");
	m->u.same.n = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		json_object *x = json_object_array_get_idx(arr, i);
		uint64_t v;
		char key[32];

		snprintf(key, sizeof(key), "[%zu]", i);
		if (want_int(c, 1, x, "slots", key, 0, UINT32_MAX - 1, &v))
			return -EINVAL;
		m->u.same.slots[i] = (uint32_t)v;
	}
	return 0;
}

const char *pc_io_op_name(unsigned op)
{
	return op == PC_IO_FLUSH ? "flush" : op == PC_IO_FUA ? "fua" : "?";
}

unsigned pc_io_op_from_name(const char *s)
{
	return !s ? 0 : !strcmp(s, "flush") ? PC_IO_FLUSH : !strcmp(s, "fua") ? PC_IO_FUA : 0;
}

static int get_io_op(struct vctx *c, json_object *v, const char *key, unsigned *op)
{
	char q[36];	/* 32 characters, "...", NUL */
	const char *s;

	if (!v || !json_object_is_type(v, json_type_string))
		return verr(c, "field \"%s\": expected \"flush\" or \"fua\", got %s", key, jtype(v));
	s = json_object_get_string(v);
	*op = strlen(s) == (size_t)json_object_get_string_len(v) ? pc_io_op_from_name(s) : 0;
	if (!*op)
		return verr(c, "field \"%s\": unknown I/O \"%s\" (expected flush or fua)", key, quote(s, q, sizeof(q)));
	return 0;
}

/* IO: the agent is about to issue a cache flush or a FUA write. */
static int parse_io(struct vctx *c, json_object *o, struct pc_msg *m)
{
	json_object *v;

	if (!json_object_object_get_ex(o, "op", &v))
		return verr(c, "field \"op\" is missing (expected \"flush\" or \"fua\")");
	if (get_io_op(c, v, "op", &m->u.io.op) ||
	    get_int(c, o, "", "seq", 1, UINT64_MAX, &m->u.io.seq))
		return -EINVAL;
	return 0;
}

/* WORK's optional "announce": ["flush"], ["fua"] or both, each once. */
static int parse_announce(struct vctx *c, json_object *o, unsigned *bits)
{
	json_object *arr;
	size_t n;

	*bits = 0;
	if (!json_object_object_get_ex(o, "announce", NULL))
		return 0;
	if (get_array(c, o, "announce", 1, 2, &arr, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char key[32];
		unsigned op;

		snprintf(key, sizeof(key), "announce[%zu]", i);
		if (get_io_op(c, json_object_array_get_idx(arr, i), key, &op))
			return -EINVAL;
		if (*bits & op)
			return verr(c, "field \"%s\": \"%s\" given twice", key, pc_io_op_name(op));
		*bits |= op;
	}
	return 0;
}

static int parse_work(struct vctx *c, json_object *o, struct pc_msg *m)
{
	struct pc_work *w = &m->u.work;

	if (get_u32(c, o, "", "cycle", 1, UINT32_MAX, &w->cycle) ||
	    get_int(c, o, "", "first", 1, UINT64_MAX, &w->first) ||
	    get_u32(c, o, "", "n", 1, MAX_RANGE_N, &w->n) ||
	    check_seq_range(c, "field \"first\"", w->first, w->n) ||
	    get_mode(c, o, "mode", &w->mode) ||
	    get_pattern(c, o, "pattern", &w->pattern) ||
	    get_record_size(c, o, "", &w->record_size) ||
	    get_u32(c, o, "", "flush_every", 1, UINT32_MAX, &w->flush_every) ||
	    get_u32(c, o, "", "qd", 1, 32, &w->qd) ||
	    get_int(c, o, "", "seed", 0, UINT64_MAX, &w->seed) ||
	    parse_announce(c, o, &w->announce))
		return -EINVAL;
	return 0;
}

static const struct {
	const char *name;
	int (*parse)(struct vctx *c, json_object *o, struct pc_msg *m);
} msg_types[PC_MSG_TYPE_MAX] = {
	[PC_MSG_HELLO]		= { "hello", parse_hello },
	[PC_MSG_SCAN_BEGIN]	= { "scan_begin", parse_scan_begin },
	[PC_MSG_RUNS]		= { "runs", parse_runs },
	[PC_MSG_SLOT]		= { "slot", parse_slot },
	[PC_MSG_SCAN_END]	= { "scan_end", parse_scan_end },
	[PC_MSG_SUBMIT]		= { "submit", parse_range },
	[PC_MSG_ACK]		= { "ack", parse_range },
	[PC_MSG_DONE]		= { "done", parse_done },
	[PC_MSG_ERROR]		= { "error", parse_error },
	[PC_MSG_VERIFY]		= { "verify", parse_verify },
	[PC_MSG_WORK]		= { "work", parse_work },
	[PC_MSG_CRASH]		= { "crash", parse_crash },
	[PC_MSG_CHALLENGE]	= { "challenge", parse_challenge },
	[PC_MSG_AUTH]		= { "auth", parse_auth },
	[PC_MSG_KNOWN]		= { "known", parse_known },
	[PC_MSG_SAME]		= { "same", parse_same },
	[PC_MSG_IO]		= { "io", parse_io },
	[PC_MSG_AUDIT]		= { "audit", parse_audit },
	[PC_MSG_SETUP_ERROR]	= { "setup_error", parse_setup_error },
};

const char *pc_msg_type_name(enum pc_msg_type t)
{
	return (unsigned)t < PC_MSG_TYPE_MAX ? msg_types[t].name : "?";
}

/* ---- parsing a line ---- */

/* Strip the framing and parse exactly one JSON object; NULL with err set. */
static json_object *parse_json(struct vctx *c, const char *line, size_t len)
{
	json_tokener *tok;
	json_object *o;
	size_t p = 0, end;
	const char *nul;

	if (len > PC_PROTO_MAX_LINE) {
		verr(c, "line of %zu bytes exceeds the %d-byte limit", len, PC_PROTO_MAX_LINE);
		return NULL;
	}
	nul = memchr(line, 0, len);
	if (nul) {
		verr(c, "NUL byte at byte %zu of the line", (size_t)(nul - line));
		return NULL;
	}
	if (len >= MARKER_LEN && memcmp(line, PC_PROTO_MARKER, MARKER_LEN) == 0)
		p = MARKER_LEN;
	if (len > p && line[len - 1] == '\r')
		len--;
	while (p < len && (line[p] == ' ' || line[p] == '\t'))
		p++;
	if (p == len) {
		verr(c, "empty line (expected one JSON object)");
		return NULL;
	}
	if (line[p] != '{') {
		unsigned char ch = (unsigned char)line[p];

		if (ch >= 0x20 && ch < 0x7f)
			verr(c, "expected one JSON object, got '%c' at byte %zu", ch, p);
		else
			verr(c, "expected one JSON object, got byte 0x%02x at byte %zu", ch, p);
		return NULL;
	}
	tok = json_tokener_new_ex(MAX_DEPTH);
	if (!tok) {
		verr(c, "out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, line + p, (int)(len - p));
	end = p + json_tokener_get_parse_end(tok);
	if (!o) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		if (e == json_tokener_continue)
			verr(c, "truncated JSON: the line ends at byte %zu inside the object", len);
		else
			verr(c, "invalid JSON at byte %zu: %s", end, json_tokener_error_desc(e));
	} else if (end != len) {
		/* strict mode already refuses trailing data; never rely on one flag */
		verr(c, "trailing data after the JSON object at byte %zu", end);
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* "type" and "v": which schema applies. */
static int parse_header(struct vctx *c, json_object *o, enum pc_msg_type *t)
{
	json_object *v;
	char q[36];	/* 32 characters, "...", NUL */
	const char *name;
	size_t namelen;
	int64_t ver;

	if (!json_object_object_get_ex(o, "type", &v))
		return verr(c, "field \"type\" is missing (expected the message type)");
	if (!v || !json_object_is_type(v, json_type_string))
		return verr(c, "field \"type\": expected a string, got %s", jtype(v));
	name = json_object_get_string(v);
	namelen = (size_t)json_object_get_string_len(v);
	if (!json_object_object_get_ex(o, "v", &v))
		return verr(c, "field \"v\" is missing (this build speaks protocol version %d)",
			    PC_PROTO_VERSION);
	if (!v || !json_object_is_type(v, json_type_int))
		return verr(c, "field \"v\": expected an integer protocol version, got %s", jtype(v));
	ver = json_object_get_int64(v);
	if (ver != PC_PROTO_VERSION)
		return verr(c, "protocol version %" PRId64 " not supported (this build speaks %d)",
			    ver, PC_PROTO_VERSION);
	for (int i = 0; i < PC_MSG_TYPE_MAX; i++) {
		if (strlen(name) == namelen && strcmp(name, msg_types[i].name) == 0) {
			*t = (enum pc_msg_type)i;
			return 0;
		}
	}
	return verr(c, "unknown message type \"%s\"", quote(name, q, sizeof(q)));
}

int pc_msg_parse(const char *line, size_t len, struct pc_msg *m, char *err, size_t errlen)
{
	struct vctx c = { NULL, err, errlen };
	json_object *o;
	int ret;

	memset(m, 0, sizeof(*m));
	if (err && errlen)
		err[0] = 0;
	if (!line)
		return verr(&c, "no line");
	o = parse_json(&c, line, len);
	if (!o)
		return -EINVAL;
	ret = pc_msg_parse_obj(o, m, err, errlen);
	json_object_put(o);
	return ret;
}

int pc_msg_parse_obj(json_object *o, struct pc_msg *m, char *err, size_t errlen)
{
	struct vctx c = { NULL, err, errlen };
	enum pc_msg_type t = PC_MSG_HELLO;
	int ret;

	memset(m, 0, sizeof(*m));
	if (err && errlen)
		err[0] = 0;
	if (!json_object_is_type(o, json_type_object))
		return verr(&c, "expected one JSON object");
	if (parse_header(&c, o, &t))
		return -EINVAL;
	m->type = t;
	m->obj = json_object_get(o);
	c.type = msg_types[t].name;
	ret = msg_types[t].parse(&c, o, m);
	if (ret)
		pc_msg_clear(m);
	return ret;
}

void pc_msg_clear(struct pc_msg *m)
{
	if (!m)
		return;
	if (m->type == PC_MSG_RUNS)
		free(m->u.runs.runs);
	else if (m->type == PC_MSG_ACK)
		free(m->u.range.us);
	else if (m->type == PC_MSG_VERIFY)
		free(m->u.verify.ranges);
	else if (m->type == PC_MSG_SLOT)
		free(m->u.slot.sect);
	else if (m->type == PC_MSG_KNOWN) {
		free(m->u.known.k);
		free(m->u.known.slots);
	} else if (m->type == PC_MSG_SAME)
		free(m->u.same.slots);
	json_object_put(m->obj);
	memset(m, 0, sizeof(*m));
}

json_object *pc_json_double(double v)
{
	char buf[40];

	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	if (!strpbrk(buf, ".eEn"))
		strncat(buf, ".0", sizeof(buf) - strlen(buf) - 1);
	return json_object_new_double_s(v, buf);
}

int pc_json_u64(json_object *o, const char *key, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	struct vctx c = { NULL, err, errlen };

	if (!o || !json_object_is_type(o, json_type_object))
		return verr(&c, "field \"%s\": not inside a JSON object", key);
	return get_int(&c, o, "", key, 0, max, out);
}

int pc_json_str(json_object *o, const char *key, const char **out, char *err, size_t errlen)
{
	struct vctx c = { NULL, err, errlen };

	if (!o || !json_object_is_type(o, json_type_object))
		return verr(&c, "field \"%s\": not inside a JSON object", key);
	return get_str(&c, o, "", key, out);
}

/* ---- builders ---- */

/* json-c holds integers above INT64_MAX only as uint64. */
static json_object *jint(uint64_t v)
{
	return v > INT64_MAX ? json_object_new_uint64(v) : json_object_new_int64((int64_t)v);
}

static void add(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

json_object *pc_msg_new(enum pc_msg_type t)
{
	json_object *o;

	if ((unsigned)t >= PC_MSG_TYPE_MAX)
		return NULL;
	o = json_object_new_object();
	if (!o)
		return NULL;
	add(o, "type", json_object_new_string(msg_types[t].name));
	add(o, "v", json_object_new_int(PC_PROTO_VERSION));
	return o;
}

json_object *pc_msg_range(enum pc_msg_type t, uint64_t first, uint32_t n)
{
	json_object *o = pc_msg_new(t);

	if (o) {
		add(o, "first", jint(first));
		add(o, "n", jint(n));
	}
	return o;
}

json_object *pc_msg_ack(uint64_t first, uint32_t n, const uint32_t *us)
{
	json_object *o = pc_msg_range(PC_MSG_ACK, first, n), *a;

	if (!o || !us || n > PC_PROTO_MAX_LAT_N)
		return o;
	a = json_object_new_array_ext((int)n);
	for (uint32_t i = 0; a && i < n; i++)
		json_object_array_add(a, jint(us[i] > PC_PROTO_MAX_LAT_US ? PC_PROTO_MAX_LAT_US : us[i]));
	add(o, "us", a);
	return o;
}

json_object *pc_msg_work(const struct pc_work *w)
{
	json_object *o = pc_msg_new(PC_MSG_WORK);

	if (!o)
		return NULL;
	add(o, "cycle", jint(w->cycle));
	add(o, "first", jint(w->first));
	add(o, "n", jint(w->n));
	add(o, "mode", json_object_new_string(pc_mode_name(w->mode)));
	add(o, "pattern", json_object_new_string(pc_pattern_name(w->pattern)));
	add(o, "record_size", jint(w->record_size));
	add(o, "flush_every", jint(w->flush_every));
	add(o, "qd", jint(w->qd));
	add(o, "seed", jint(w->seed));
	if (w->announce & PC_IO_ALL) {
		json_object *a = json_object_new_array();

		for (unsigned op = PC_IO_FLUSH; a && op <= PC_IO_FUA; op <<= 1)
			if (w->announce & op)
				json_object_array_add(a, json_object_new_string(pc_io_op_name(op)));
		add(o, "announce", a);
	}
	return o;
}

json_object *pc_msg_io(unsigned op, uint64_t seq)
{
	json_object *o;

	if ((op != PC_IO_FLUSH && op != PC_IO_FUA) || !seq)
		return NULL;
	o = pc_msg_new(PC_MSG_IO);
	if (o) {
		add(o, "op", json_object_new_string(pc_io_op_name(op)));
		add(o, "seq", jint(seq));
	}
	return o;
}

json_object *pc_msg_verify(int pattern, int full)
{
	json_object *o = pc_msg_new(PC_MSG_VERIFY);

	if (o) {
		add(o, "pattern", json_object_new_string(pc_pattern_name(pattern)));
		add(o, "full", json_object_new_boolean(full != 0));
	}
	return o;
}

json_object *pc_msg_verify_ranges(int pattern, const struct pc_posrange *ranges, uint32_t n)
{
	json_object *o = pc_msg_verify(pattern, 0), *arr = json_object_new_array();

	if (!o || !arr) {
		json_object_put(o);
		json_object_put(arr);
		return NULL;
	}
	json_object_object_add(o, "full", json_object_new_boolean(0));
	for (uint32_t i = 0; i < n; i++) {
		json_object *r = json_object_new_array();
		json_object_array_add(r, json_object_new_int64(ranges[i].pos));
		json_object_array_add(r, json_object_new_int64(ranges[i].n));
		json_object_array_add(arr, r);
	}
	add(o, "ranges", arr);
	return o;
}

json_object *pc_msg_known(const struct pc_known *k, uint32_t n)
{
	uint8_t buf[PC_PROTO_KNOWN_PER_LINE * KNOWN_ENTRY];
	char b64[(sizeof(buf) + 2) / 3 * 4 + 1];
	json_object *o;

	if (n < 1 || n > PC_PROTO_KNOWN_PER_LINE)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *e = buf + (size_t)i * KNOWN_ENTRY;
		pc_put32(e, k[i].slot);
		e[4] = (uint8_t)k[i].idx;
		e[5] = (uint8_t)(k[i].idx >> 8);
		pc_put32(e + 6, k[i].crc);
	}
	pc_b64_encode(buf, (size_t)n * KNOWN_ENTRY, b64);
	o = pc_msg_new(PC_MSG_KNOWN);
	if (o)
		add(o, "sectors", json_object_new_string(b64));
	return o;
}

json_object *pc_msg_known_slots(const struct pc_known_slot *k, uint32_t n)
{
	uint8_t buf[PC_PROTO_KNOWN_SLOTS_PER_LINE * KNOWN_SLOT_ENTRY];
	char b64[(sizeof(buf) + 2) / 3 * 4 + 1];
	json_object *o;

	if (n < 1 || n > PC_PROTO_KNOWN_SLOTS_PER_LINE)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		pc_put32(buf + (size_t)i * KNOWN_SLOT_ENTRY, k[i].slot);
		pc_put64(buf + (size_t)i * KNOWN_SLOT_ENTRY + 4, k[i].digest);
	}
	pc_b64_encode(buf, (size_t)n * KNOWN_SLOT_ENTRY, b64);
	o = pc_msg_new(PC_MSG_KNOWN);
	if (o)
		add(o, "slots", json_object_new_string(b64));
	return o;
}

json_object *pc_msg_same(const uint32_t *slots, uint32_t n)
{
	json_object *o, *arr;

	if (n < 1 || n > PC_PROTO_SAME_PER_LINE)
		return NULL;
	o = pc_msg_new(PC_MSG_SAME);
	arr = json_object_new_array_ext((int)n);
	if (!o || !arr) {
		json_object_put(o);
		json_object_put(arr);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++)
		json_object_array_add(arr, json_object_new_int64(slots[i]));
	add(o, "slots", arr);
	return o;
}

uint64_t pc_slot_digest_add(uint64_t h, const struct pc_sect_report *r)
{
	h = pc_mix64(h ^ r->idx);
	switch (r->kind) {
	case PC_SK_VALID:
		h = pc_mix64(h ^ 1);
		h = pc_mix64(h ^ r->seq);
		h = pc_mix64(h ^ ((uint64_t)r->cycle << 16 | r->flags));
		h = pc_mix64(h ^ r->lba);
		return pc_mix64(h ^ r->hidx);
	case PC_SK_FILL:
		h = pc_mix64(h ^ 2);
		break;
	case PC_SK_RAW:	/* value: the crc32c of its bytes, as for a hash */
	case PC_SK_HASH:
		h = pc_mix64(h ^ 3);
		break;
	default:
		h = pc_mix64(h ^ 4);
	}
	return pc_mix64(h ^ r->value);
}

uint64_t pc_slot_digest(const struct pc_sect_report *sect, uint32_t n)
{
	uint64_t h = PC_SLOT_DIGEST_INIT;

	for (uint32_t i = 0; i < n; i++)
		h = pc_slot_digest_add(h, &sect[i]);
	return h;
}

json_object *pc_msg_runs(const struct pc_run *runs, uint32_t n)
{
	json_object *o = pc_msg_new(PC_MSG_RUNS), *arr;

	if (!o)
		return NULL;
	arr = json_object_new_array_ext((int)n);
	for (uint32_t i = 0; arr && i < n; i++) {
		json_object *r = json_object_new_array_ext(5);

		json_object_array_add(r, jint(runs[i].pos));
		json_object_array_add(r, jint(runs[i].n));
		json_object_array_add(r, jint(runs[i].seq));
		json_object_array_add(r, jint(runs[i].cycle));
		json_object_array_add(r, jint(runs[i].flags));
		json_object_array_add(arr, r);
	}
	add(o, "r", arr);
	return o;
}

static json_object *sect_json(const struct pc_sect_report *e)
{
	json_object *s = json_object_new_object();
	char b64[RAW_B64_LEN + 1];

	if (!s)
		return NULL;
	add(s, "i", jint(e->idx));
	switch (e->kind) {
	case PC_SK_VALID:
		add(s, "seq", jint(e->seq));
		add(s, "cyc", jint(e->cycle));
		add(s, "fl", jint(e->flags));
		add(s, "lba", jint(e->lba));
		add(s, "hi", jint(e->hidx));
		break;
	case PC_SK_RAW:
		pc_b64_encode(e->raw, sizeof(e->raw), b64);
		add(s, "raw", json_object_new_string(b64));
		break;
	case PC_SK_FILL:
		add(s, "fill", jint(e->value));
		break;
	case PC_SK_HASH:
		add(s, "h", jint(e->value));
		break;
	case PC_SK_ERR:
		add(s, "err", jint(e->value));
		break;
	}
	return s;
}

json_object *pc_msg_slot(const struct pc_slot_report *s)
{
	json_object *o = pc_msg_new(PC_MSG_SLOT), *arr;

	if (!o)
		return NULL;
	add(o, "slot", jint(s->slot));
	arr = json_object_new_array_ext((int)s->nsect);
	for (uint32_t i = 0; arr && i < s->nsect; i++)
		json_object_array_add(arr, sect_json(&s->sect[i]));
	add(o, "s", arr);
	return o;
}

json_object *pc_msg_error(const char *fmt, ...)
{
	json_object *o = pc_msg_new(PC_MSG_ERROR);
	char msg[1024];
	va_list ap;

	if (!o)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	add(o, "msg", json_object_new_string(msg));
	return o;
}

json_object *pc_msg_setup_error(const char *board, const char *cause, const char *fmt, ...)
{
	json_object *o = pc_msg_new(PC_MSG_SETUP_ERROR);
	char msg[PC_PROTO_MAX_REASON + 1];
	va_list ap;

	if (!o)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* printable ASCII: a cut in a multi-byte character must not make the
	 * line invalid UTF-8, which the host's parser refuses */
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	if (board && board_name_ok(board))
		add(o, "board", json_object_new_string(board));
	add(o, "cause", json_object_new_string(cause_ok(cause) ? cause : "other"));
	add(o, "reason", json_object_new_string(msg[0] ? msg : "?"));
	return o;
}

/* ---- the writer's lines, without json-c ---- */

/* Append "<s>" (no escaping: our own constant names only) or a decimal. */
static size_t put_s(char *b, size_t at, const char *s)
{
	size_t n = strlen(s);

	memcpy(b + at, s, n);
	return at + n;
}

static size_t put_u(char *b, size_t at, uint64_t v)
{
	char t[20];
	size_t n = 0;

	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		b[at++] = t[--n];
	return at;
}

/* "{"type":"<t>","v":1": the head json-c writes for pc_msg_new(t) */
static size_t put_head(char *b, enum pc_msg_type t)
{
	size_t at = put_s(b, 0, "{\"type\":\"");

	at = put_s(b, at, msg_types[t].name);
	at = put_s(b, at, "\",\"v\":");
	return put_u(b, at, PC_PROTO_VERSION);
}

/* "}\n" and the NUL; the length with the newline */
static int put_end(char *b, size_t at)
{
	b[at++] = '}';
	b[at++] = '\n';
	b[at] = 0;
	return (int)at;
}

/* a head, two 20-digit numbers and the tail fit in this */
#define LINE_FIXED 96

int pc_line_range(char *buf, size_t buflen, enum pc_msg_type t, uint64_t first, uint32_t n)
{
	size_t at;

	if ((unsigned)t >= PC_MSG_TYPE_MAX || buflen < LINE_FIXED)
		return -E2BIG;
	at = put_head(buf, t);
	at = put_s(buf, at, ",\"first\":");
	at = put_u(buf, at, first);
	at = put_s(buf, at, ",\"n\":");
	at = put_u(buf, at, n);
	return put_end(buf, at);
}

int pc_line_ack(char *buf, size_t buflen, uint64_t first, uint32_t n, const uint32_t *us)
{
	int r = pc_line_range(buf, buflen, PC_MSG_ACK, first, n);
	size_t at;

	if (r < 0 || !us || n > PC_PROTO_MAX_LAT_N)
		return r;
	/* each latency at most 10 digits and a comma */
	if (buflen < LINE_FIXED + (size_t)n * 11 + 8)
		return -E2BIG;
	at = (size_t)r - 2;	/* back over "}\n" */
	at = put_s(buf, at, ",\"us\":[");
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			buf[at++] = ',';
		at = put_u(buf, at, us[i] > PC_PROTO_MAX_LAT_US ? PC_PROTO_MAX_LAT_US : us[i]);
	}
	at = put_s(buf, at, "]}\n");
	buf[at] = 0;
	return (int)at;
}

int pc_line_io(char *buf, size_t buflen, unsigned op, uint64_t seq)
{
	size_t at;

	if ((op != PC_IO_FLUSH && op != PC_IO_FUA) || !seq)
		return -EINVAL;
	if (buflen < LINE_FIXED)
		return -E2BIG;
	at = put_head(buf, PC_MSG_IO);
	at = put_s(buf, at, ",\"op\":\"");
	at = put_s(buf, at, pc_io_op_name(op));
	at = put_s(buf, at, "\",\"seq\":");
	at = put_u(buf, at, seq);
	return put_end(buf, at);
}

int pc_msg_line(json_object *msg, char *buf, size_t buflen)
{
	const char *s;
	size_t len;

	if (!msg)
		return -EINVAL;
	/* PLAIN: no whitespace; NOSLASHESCAPE keeps device paths readable */
	s = json_object_to_json_string_length(msg, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (!s)
		return -ENOMEM;
	if (len > MAX_JSON || len + 2 > buflen)
		return -E2BIG;
	memcpy(buf, s, len);
	buf[len] = '\n';
	buf[len + 1] = 0;
	return (int)(len + 1);
}

/* ---- line reader ---- */

size_t pc_linebuf_feed(struct pc_linebuf *lb, const char *data, size_t n)
{
	size_t used = 0, room;

	/* the rest of an over-long line is dropped as it arrives */
	if (lb->overflow) {
		const char *nl = memchr(data, '\n', n);

		if (!nl)
			return n;
		used = (size_t)(nl - data) + 1;
		lb->overflow = 0;
	}
	room = sizeof(lb->buf) - lb->len;
	if (room > n - used)
		room = n - used;
	memcpy(lb->buf + lb->len, data + used, room);
	lb->len += room;
	return used + room;
}

static void linebuf_drop(struct pc_linebuf *lb, size_t n)
{
	memmove(lb->buf, lb->buf + n, lb->len - n);
	lb->len -= n;
}

enum pc_line_result pc_linebuf_take(struct pc_linebuf *lb, char *out, size_t outlen, size_t *linelen)
{
	char *nl = memchr(lb->buf, '\n', lb->len);
	size_t n;

	if (!nl) {
		if (lb->len <= PC_PROTO_MAX_LINE)
			return PC_LINE_NONE;
		/* no newline within the limit: report it now, skip the rest later */
		*linelen = lb->len;
		lb->len = 0;
		lb->overflow = 1;
		return PC_LINE_TOO_LONG;
	}
	n = (size_t)(nl - lb->buf);
	*linelen = n;
	if (n > PC_PROTO_MAX_LINE || n >= outlen) {
		linebuf_drop(lb, n + 1);
		return PC_LINE_TOO_LONG;
	}
	memcpy(out, lb->buf, n);
	out[n] = 0;
	linebuf_drop(lb, n + 1);
	return PC_LINE_OK;
}

/* ---- base64 (RFC 4648, with padding): libsodium's ---- */

/*
 * The original alphabet with padding, decoded strictly: no whitespace, no
 * other alphabet, padding exactly where the length needs it and nowhere else,
 * and the unused bits of the last character zero (one text per byte string).
 * libsodium checks the padding and the unused bits when it is given no
 * characters to ignore and no b64_end (the whole text must be consumed). Two
 * checks stay here: libsodium 1.0.18 takes some bytes above 0x7f for letters
 * of the alphabet (its constant-time compare sees a signed char), and its
 * "too long for the buffer" (ERANGE) is overwritten by EINVAL.
 */
static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";

size_t pc_b64_encode(const uint8_t *in, size_t n, char *out)
{
	sodium_bin2base64(out, sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL), in, n,
			  sodium_base64_VARIANT_ORIGINAL);
	return strlen(out);
}

int pc_b64_decode(const char *in, uint8_t *out, size_t outmax, size_t *outlen)
{
	size_t len = strlen(in), o = 0, need;

	if (outlen)
		*outlen = 0;
	if (len % 4 || strspn(in, b64_chars) != len)
		return -EINVAL;
	need = len / 4 * 3 - (len && in[len - 1] == '=') - (len > 1 && in[len - 2] == '=');
	if (need > outmax)
		return -E2BIG;
	if (sodium_base642bin(out, outmax, in, len, NULL, &o, NULL, sodium_base64_VARIANT_ORIGINAL) != 0)
		return -EINVAL;
	if (outlen)
		*outlen = o;
	return 0;
}

/*
 * A seed: the whole unsigned 64-bit range, 0 to 18446744073709551615, in
 * decimal (or hex with 0x). No sign, no spaces, nothing after the digits, and
 * no octal ("010" is ten). A seed the host configured must reach the
 * superblock and HELLO unchanged, never clamped.
 */
int pc_parse_seed(const char *s, uint64_t *out)
{
	int base = 10;
	unsigned long long v;
	char *end;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!((*s >= '0' && *s <= '9') || (base == 16 && ((*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int64_t pc_json_int_in(json_object *o, const char *key, int64_t min, int64_t max)
{
	json_object *v;
	int64_t x;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	x = json_object_get_int64(v);
	return x >= min && x <= max ? x : -1;
}

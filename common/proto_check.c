/*
 * proto_check.c - the validation helpers every schema uses (presence, JSON
 * type and range of a field, errors that quote untrusted text safely), and
 * the json helpers the rest of the code uses on validated objects.
 */
#include "common/proto.h"
#include "common/proto_int.h"
#include "common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- validation helpers ---- */

int pv_verr(struct vctx *c, const char *fmt, ...)
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
const char *pv_quote(const char *s, char *buf, size_t n)
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

const char *pv_jtype(json_object *v)
{
	return v ? json_type_to_name(json_object_get_type(v)) : "null";
}

void pv_range_desc(char *buf, size_t n, int64_t min, uint64_t max)
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
int pv_int_err(struct vctx *c, int present, json_object *v, const char *pfx, const char *key,
	       int64_t min, uint64_t max)
{
	char want[64];

	pv_range_desc(want, sizeof(want), min, max);
	if (!present)
		return pv_verr(c, "field \"%s%s\" is missing (expected an integer %s)", pfx, key, want);
	if (!v || !json_object_is_type(v, json_type_int))
		return pv_verr(c, "field \"%s%s\": expected an integer %s, got %s", pfx, key, want, pv_jtype(v));
	if (json_object_get_int64(v) < 0)
		return pv_verr(c, "field \"%s%s\": expected an integer %s, got %" PRId64, pfx, key, want,
			    json_object_get_int64(v));
	return pv_verr(c, "field \"%s%s\": expected an integer %s, got %" PRIu64, pfx, key, want,
		    json_object_get_uint64(v));
}

/*
 * The integer value v (present: whether the key existed; a JSON null is
 * present with v == NULL) must lie in [min, max]. Negative results (only when
 * min < 0) come back as two's complement in *out. The message is built only
 * when the value is refused: this runs for every number of every message.
 */
int pv_want_int(struct vctx *c, int present, json_object *v, const char *pfx, const char *key,
		int64_t min, uint64_t max, uint64_t *out)
{
	int64_t s;
	uint64_t u;

	if (!present || !v || !json_object_is_type(v, json_type_int))
		return pv_int_err(c, present, v, pfx, key, min, max);
	s = json_object_get_int64(v);
	if (s < 0) {
		if (s < min)
			return pv_int_err(c, present, v, pfx, key, min, max);
		*out = (uint64_t)s;
		return 0;
	}
	/* json-c keeps values above INT64_MAX as uint64 */
	u = json_object_get_uint64(v);
	if ((min > 0 && u < (uint64_t)min) || u > max)
		return pv_int_err(c, present, v, pfx, key, min, max);
	*out = u;
	return 0;
}

int pv_get_int(struct vctx *c, json_object *o, const char *pfx, const char *key,
	       int64_t min, uint64_t max, uint64_t *out)
{
	json_object *v;
	int present = json_object_object_get_ex(o, key, &v);

	return pv_want_int(c, present, v, pfx, key, min, max, out);
}

int pv_get_u32(struct vctx *c, json_object *o, const char *pfx, const char *key,
	       uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (pv_get_int(c, o, pfx, key, min, max, &v))
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

int pv_get_str(struct vctx *c, json_object *o, const char *pfx, const char *key, const char **out)
{
	json_object *v;
	const char *s;

	if (!json_object_object_get_ex(o, key, &v))
		return pv_verr(c, "field \"%s%s\" is missing (expected a string)", pfx, key);
	if (!v || !json_object_is_type(v, json_type_string))
		return pv_verr(c, "field \"%s%s\": expected a string, got %s", pfx, key, pv_jtype(v));
	s = json_object_get_string(v);
	/* "\u0000" is legal JSON but would silently cut the C string */
	if (strlen(s) != (size_t)json_object_get_string_len(v))
		return pv_verr(c, "field \"%s%s\": the string contains a NUL character", pfx, key);
	*out = s;
	return 0;
}

/* A string of exactly 2n hex digits (n bytes). */
int pv_get_hex(struct vctx *c, json_object *o, const char *key, size_t n, const char **out)
{
	if (pv_get_str(c, o, "", key, out))
		return -EINVAL;
	if (strlen(*out) != 2 * n || strspn(*out, "0123456789abcdefABCDEF") != 2 * n)
		return pv_verr(c, "field \"%s\": expected %zu hex digits", key, 2 * n);
	return 0;
}

int pv_get_bool(struct vctx *c, json_object *o, const char *key, int *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return pv_verr(c, "field \"%s\" is missing (expected true or false)", key);
	if (!v || !json_object_is_type(v, json_type_boolean))
		return pv_verr(c, "field \"%s\": expected true or false, got %s", key, pv_jtype(v));
	*out = json_object_get_boolean(v) ? 1 : 0;
	return 0;
}

int pv_get_obj(struct vctx *c, json_object *o, const char *key, json_object **out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return pv_verr(c, "field \"%s\" is missing (expected an object)", key);
	if (!v || !json_object_is_type(v, json_type_object))
		return pv_verr(c, "field \"%s\": expected an object, got %s", key, pv_jtype(v));
	*out = v;
	return 0;
}

int pv_get_array(struct vctx *c, json_object *o, const char *key, size_t min, size_t max,
		 json_object **out, size_t *n)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return pv_verr(c, "field \"%s\" is missing (expected an array of %zu..%zu elements)",
			    key, min, max);
	if (!v || !json_object_is_type(v, json_type_array))
		return pv_verr(c, "field \"%s\": expected an array of %zu..%zu elements, got %s",
			    key, min, max, pv_jtype(v));
	*n = json_object_array_length(v);
	if (*n < min || *n > max)
		return pv_verr(c, "field \"%s\": expected an array of %zu..%zu elements, got %zu",
			    key, min, max, *n);
	*out = v;
	return 0;
}

int pv_get_mode(struct vctx *c, json_object *o, const char *key, int *out)
{
	char q[36];	/* 32 characters, "...", NUL */
	const char *s;

	if (pv_get_str(c, o, "", key, &s))
		return -EINVAL;
	*out = pc_mode_from_name(s);
	if (*out < 0)
		return pv_verr(c, "field \"%s\": unknown mode \"%s\" (expected fua, fua+flush, flush, "
			    "journal, none, relwr or relwr-off)", key, pv_quote(s, q, sizeof(q)));
	return 0;
}

int pv_get_pattern(struct vctx *c, json_object *o, const char *key, int *out)
{
	char q[36];	/* 32 characters, "...", NUL */
	const char *s;

	if (pv_get_str(c, o, "", key, &s))
		return -EINVAL;
	*out = pc_pattern_from_name(s);
	if (*out < 0)
		return pv_verr(c, "field \"%s\": unknown pattern \"%s\" (expected sequential or random)",
			    key, pv_quote(s, q, sizeof(q)));
	return 0;
}

int pv_get_record_size(struct vctx *c, json_object *o, const char *pfx, uint32_t *out)
{
	if (pv_get_u32(c, o, pfx, "record_size", PC_SECTOR, PC_MAX_RECORD_SIZE, out))
		return -EINVAL;
	if (*out % PC_SECTOR)
		return pv_verr(c, "field \"%srecord_size\": expected a multiple of 512, got %" PRIu32,
			    pfx, *out);
	return 0;
}

/* [first, first + n) must not wrap the 64-bit sequence space. */
int pv_check_seq_range(struct vctx *c, const char *what, uint64_t first, uint64_t n)
{
	if (n && first > UINT64_MAX - (n - 1))
		return pv_verr(c, "%s: seqs %" PRIu64 " + %" PRIu64 " pass 2^64", what, first, n);
	return 0;
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
		return pv_verr(&c, "field \"%s\": not inside a JSON object", key);
	return pv_get_int(&c, o, "", key, 0, max, out);
}

int pc_json_str(json_object *o, const char *key, const char **out, char *err, size_t errlen)
{
	struct vctx c = { NULL, err, errlen };

	if (!o || !json_object_is_type(o, json_type_object))
		return pv_verr(&c, "field \"%s\": not inside a JSON object", key);
	return pv_get_str(&c, o, "", key, out);
}

/* ---- builders ---- */

/* json-c holds integers above INT64_MAX only as uint64. */
json_object *pv_jint(uint64_t v)
{
	return v > INT64_MAX ? json_object_new_uint64(v) : json_object_new_int64((int64_t)v);
}

void pv_add(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
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


json_object *pc_json_first_line(int fd, char *buf, size_t len)
{
	json_object *o;
	ssize_t n;
	char *nl;

	if (len < 2)
		return NULL;
	do
		n = pread(fd, buf, len - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	nl = strchr(buf, '\n');
	if (nl)
		*nl = 0;
	o = json_tokener_parse(buf);
	if (o && !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

/* ---- names and checks the schemas and the builders share ---- */

static const char *const msg_type_names[PC_MSG_TYPE_MAX] = {
	[PC_MSG_HELLO] = "hello",
	[PC_MSG_SCAN_BEGIN] = "scan_begin",
	[PC_MSG_RUNS] = "runs",
	[PC_MSG_SLOT] = "slot",
	[PC_MSG_SCAN_END] = "scan_end",
	[PC_MSG_SUBMIT] = "submit",
	[PC_MSG_ACK] = "ack",
	[PC_MSG_DONE] = "done",
	[PC_MSG_ERROR] = "error",
	[PC_MSG_VERIFY] = "verify",
	[PC_MSG_WORK] = "work",
	[PC_MSG_CRASH] = "crash",
	[PC_MSG_CHALLENGE] = "challenge",
	[PC_MSG_AUTH] = "auth",
	[PC_MSG_KNOWN] = "known",
	[PC_MSG_SAME] = "same",
	[PC_MSG_IO] = "io",
	[PC_MSG_AUDIT] = "audit",
	[PC_MSG_SETUP_ERROR] = "setup_error",
};

const char *pc_msg_type_name(enum pc_msg_type t)
{
	return (unsigned)t < PC_MSG_TYPE_MAX ? msg_type_names[t] : "?";
}

const char *pc_io_op_name(unsigned op)
{
	return op == PC_IO_FLUSH ? "flush" : op == PC_IO_FUA ? "fua" : "?";
}

unsigned pc_io_op_from_name(const char *s)
{
	return !s ? 0 : !strcmp(s, "flush") ? PC_IO_FLUSH : !strcmp(s, "fua") ? PC_IO_FUA : 0;
}

/* [a-z0-9_], 1..32: a cause the host can match without quoting it */
int pv_cause_ok(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= 32 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

int pv_board_name_ok(const char *s)
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

int pv_parse_region(struct vctx *c, json_object *reg)
{
	struct pc_geom g;
	const char *s;
	uint64_t bytes, seed;
	uint32_t rs, slots;
	char why[160];

	if (pv_get_str(c, reg, "region.", "uuid", &s))
		return -EINVAL;
	if (!uuid_text_ok(s))
		return pv_verr(c, "field \"region.uuid\": expected a UUID (36 characters, 8-4-4-4-12 hex digits)");
	if (pv_get_int(c, reg, "region.", "bytes", 1, UINT64_MAX, &bytes) ||
	    pv_get_record_size(c, reg, "region.", &rs) ||
	    pv_get_u32(c, reg, "region.", "slots", 1, UINT32_MAX, &slots) ||
	    pv_get_int(c, reg, "region.", "seed", 0, UINT64_MAX, &seed))
		return -EINVAL;
	/* the geometry is a pure function of size and record size: a peer that
	 * disagrees with it is not talking about a region we can verify */
	if (pc_geom_init(&g, bytes, rs, seed, why, sizeof(why)))
		return pv_verr(c, "field \"region\": %s", why);
	if (g.nslots != slots)
		return pv_verr(c, "field \"region\": %" PRIu64 " bytes of %" PRIu32 "-byte records hold %"
			    PRIu32 " slots, not %" PRIu32, bytes, rs, g.nslots, slots);
	return 0;
}

/*
 * proto.c - the host <-> agent protocol: the message types, the session's
 * schemas and parsing a line (proto_int.h says where the rest lives).
 *
 * Every line comes from the other end of a serial console or a socket and is
 * treated as hostile: the length is bounded before json-c sees it, the JSON
 * must be exactly one object, and each message type has a schema that checks
 * presence, JSON type and range of every field it uses before anything is
 * copied out. Unknown extra fields are ignored so that a newer peer can add
 * information without breaking an older one (a change of meaning bumps "v").
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

/* ---- per-type schemas ---- */

static int parse_hello(struct vctx *c, json_object *o, struct pc_msg *m)
{
	static const char *const strs[] = { "agent", "boot_id", "kernel", "backend" };
	json_object *reg, *dev, *q, *io;
	const char *s;
	uint64_t fua;

	if (pv_get_str(c, o, "", "board", &s))
		return -EINVAL;
	if (!pv_board_name_ok(s))
		return pv_verr(c, "field \"board\": expected 1..63 characters of [A-Za-z0-9_.-]");
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (pv_get_str(c, o, "", strs[i], &s))
			return -EINVAL;
	/* an agent whose region lost both superblocks says why instead; the
	 * host, which knows the geometry, sends it back with VERIFY */
	if (json_object_object_get_ex(o, "region_error", NULL)) {
		if (pv_get_str(c, o, "", "region_error", &s))
			return -EINVAL;
		if (json_object_object_get_ex(o, "region", NULL))
			return pv_verr(c, "fields \"region\" and \"region_error\" exclude each other");
	} else if (pv_get_obj(c, o, "region", &reg) || pv_parse_region(c, reg)) {
		return -EINVAL;
	}
	if (pv_get_obj(c, o, "device", &dev) ||
	    pv_get_obj(c, o, "queue", &q) ||
	    pv_get_int(c, q, "queue.", "fua", -1, 1, &fua) ||
	    pv_get_str(c, q, "queue.", "write_cache", &s))
		return -EINVAL;
	if (json_object_object_get_ex(o, "io", &io) && pv_get_obj(c, o, "io", &io))
		return -EINVAL;
	/* optional here (recorded runs before the authenticated link have
	 * none); the host's link requires it */
	if (json_object_object_get_ex(o, "nonce", NULL) && pv_get_hex(c, o, "nonce", PC_AUTH_NONCE_BYTES, &s))
		return -EINVAL;
	return 0;
}

static int parse_range(struct vctx *c, json_object *o, struct pc_msg *m)
{
	json_object *arr;
	size_t n;

	if (pv_get_int(c, o, "", "first", 1, UINT64_MAX, &m->u.range.first) ||
	    pv_get_u32(c, o, "", "n", 1, MAX_RANGE_N, &m->u.range.n) ||
	    pv_check_seq_range(c, "field \"first\"", m->u.range.first, m->u.range.n))
		return -EINVAL;
	if (m->type != PC_MSG_ACK || !json_object_object_get_ex(o, "us", NULL))
		return 0;
	/* each record's latency: one per record of the range, or none */
	if (pv_get_array(c, o, "us", 1, PC_PROTO_MAX_LAT_N, &arr, &n))
		return -EINVAL;
	if (n != m->u.range.n)
		return pv_verr(c, "field \"us\": %zu latencies for a range of %" PRIu32 " records", n, m->u.range.n);
	m->u.range.us = calloc(n, sizeof(*m->u.range.us));
	if (!m->u.range.us)
		return pv_verr(c, "out of memory");
	for (size_t i = 0; i < n; i++) {
		char key[32];
		uint64_t v;

		snprintf(key, sizeof(key), "[%zu]", i);
		if (pv_want_int(c, 1, json_object_array_get_idx(arr, i), "us", key, 0, PC_PROTO_MAX_LAT_US, &v))
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
		return pv_verr(c, "field \"%s.%s\": more than %d kinds of request", key, what, PC_PROTO_AUDIT_KINDS);
	snprintf(pre, sizeof(pre), "audit.%s.", what);
	json_object_object_foreach(o, k, n) {
		uint64_t x;

		if ((!other || strcmp(k, "other")) &&
		    (!k[0] || strlen(k) > 9 || strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(k)))
			return pv_verr(c, "field \"%s.%s\": \"%.20s\" is not a request kind (1 to 9 capital letters)",
				    key, what, k);
		if (pv_want_int(c, 1, n, pre, k, 0, PC_PROTO_AUDIT_MAX, &x))
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

	if (pv_get_obj(c, o, key, &a))
		return -EINVAL;
	if (json_object_object_get_ex(a, "unavailable", &v)) {
		if (pv_get_str(c, a, "audit.", "unavailable", &s))
			return -EINVAL;
		if (strlen(s) > 400 || json_object_object_length(a) != 1)
			return pv_verr(c, "field \"%s\": \"unavailable\" alone, a reason of at most 400 bytes", key);
		return 0;
	}
	if (pv_get_str(c, a, "audit.", "src", &s))
		return -EINVAL;
	if (!s[0] || strlen(s) > 15 || strspn(s, "abcdefghijklmnopqrstuvwxyz") != strlen(s))
		return pv_verr(c, "field \"%s.src\": expected 1 to 15 small letters", key);
	if (pv_get_obj(c, a, "rq", &rq) || check_rq_kinds(c, key, "rq", rq, 1))
		return -EINVAL;
	/* sectors by kind: optional; only kinds that were counted */
	has_sec = json_object_object_get_ex(a, "sectors", NULL);
	if (has_sec) {
		if (pv_get_obj(c, a, "sectors", &v) || check_rq_kinds(c, key, "sectors", v, 0))
			return -EINVAL;
		json_object_object_foreach(v, k, n) {
			(void)n;
			if (!json_object_object_get_ex(rq, k, NULL))
				return pv_verr(c, "field \"%s.sectors\": \"%.20s\" was not counted in rq", key, k);
		}
	}
	/* nothing else rides along into the verdict */
	if (json_object_object_length(a) != 2 + has_sec)
		return pv_verr(c, "field \"%s\": only \"src\", \"rq\" and \"sectors\"", key);
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

	if (pv_get_int(c, o, "", "records", 0, UINT64_MAX, &m->u.done.records) ||
	    pv_get_int(c, o, "", "ms", 0, UINT64_MAX, &ms) ||
	    pv_get_str(c, o, "", "io", &io) ||
	    pv_get_mode(c, o, "mode", &mode))
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

	if (pv_get_str(c, o, "", "msg", &s))
		return -EINVAL;
	/* a write the device refused: a finding about the device */
	if (!json_object_object_get_ex(o, "write_error", NULL))
		return 0;
	if (pv_get_obj(c, o, "write_error", &we) ||
	    pv_get_int(c, we, "write_error.", "errno", 1, 4095, &v) ||
	    pv_get_int(c, we, "write_error.", "lba", 0, UINT64_MAX, &v) ||
	    pv_get_int(c, we, "write_error.", "seq", 1, UINT64_MAX, &v))
		return -EINVAL;
	if (pv_get_mode(c, we, "mode", &mode))
		return -EINVAL;
	return 0;
}

static int parse_setup_error(struct vctx *c, json_object *o, struct pc_msg *m)
{
	const char *s;

	if (json_object_object_get_ex(o, "board", NULL)) {
		if (pv_get_str(c, o, "", "board", &s))
			return -EINVAL;
		if (!pv_board_name_ok(s))
			return pv_verr(c, "field \"board\": expected 1..63 characters of [A-Za-z0-9_.-]");
	}
	if (pv_get_str(c, o, "", "cause", &s))
		return -EINVAL;
	if (!pv_cause_ok(s))
		return pv_verr(c, "field \"cause\": expected 1..32 characters of [a-z0-9_]");
	if (pv_get_str(c, o, "", "reason", &s))
		return -EINVAL;
	if (!s[0] || strlen(s) > PC_PROTO_MAX_REASON)
		return pv_verr(c, "field \"reason\": expected 1..%d bytes", PC_PROTO_MAX_REASON);
	return 0;
}

static int parse_challenge(struct vctx *c, json_object *o, struct pc_msg *m)
{
	const char *s;

	if (pv_get_hex(c, o, "nonce", PC_AUTH_NONCE_BYTES, &s) || pv_get_hex(c, o, "echo", PC_AUTH_NONCE_BYTES, &s))
		return -EINVAL;
	return 0;
}

static int parse_auth(struct vctx *c, json_object *o, struct pc_msg *m)
{
	const char *s;

	return pv_get_hex(c, o, "mac", PC_AUTH_PROOF_BYTES, &s);
}

/* "flush" or "fua", as IO and WORK's announce name an operation */
static int get_io_op(struct vctx *c, json_object *v, const char *key, unsigned *op)
{
	char q[36];	/* 32 characters, "...", NUL */
	const char *s;

	if (!v || !json_object_is_type(v, json_type_string))
		return pv_verr(c, "field \"%s\": expected \"flush\" or \"fua\", got %s", key, pv_jtype(v));
	s = json_object_get_string(v);
	*op = strlen(s) == (size_t)json_object_get_string_len(v) ? pc_io_op_from_name(s) : 0;
	if (!*op)
		return pv_verr(c, "field \"%s\": unknown I/O \"%s\" (expected flush or fua)", key, pv_quote(s, q, sizeof(q)));
	return 0;
}

/* IO: the agent is about to issue a cache flush or a FUA write. */
static int parse_io(struct vctx *c, json_object *o, struct pc_msg *m)
{
	json_object *v;

	if (!json_object_object_get_ex(o, "op", &v))
		return pv_verr(c, "field \"op\" is missing (expected \"flush\" or \"fua\")");
	if (get_io_op(c, v, "op", &m->u.io.op) ||
	    pv_get_int(c, o, "", "seq", 1, UINT64_MAX, &m->u.io.seq))
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
	if (pv_get_array(c, o, "announce", 1, 2, &arr, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char key[32];
		unsigned op;

		snprintf(key, sizeof(key), "announce[%zu]", i);
		if (get_io_op(c, json_object_array_get_idx(arr, i), key, &op))
			return -EINVAL;
		if (*bits & op)
			return pv_verr(c, "field \"%s\": \"%s\" given twice", key, pc_io_op_name(op));
		*bits |= op;
	}
	return 0;
}

static int parse_work(struct vctx *c, json_object *o, struct pc_msg *m)
{
	struct pc_work *w = &m->u.work;

	if (pv_get_u32(c, o, "", "cycle", 1, UINT32_MAX, &w->cycle) ||
	    pv_get_int(c, o, "", "first", 1, UINT64_MAX, &w->first) ||
	    pv_get_u32(c, o, "", "n", 1, MAX_RANGE_N, &w->n) ||
	    pv_check_seq_range(c, "field \"first\"", w->first, w->n) ||
	    pv_get_mode(c, o, "mode", &w->mode) ||
	    pv_get_pattern(c, o, "pattern", &w->pattern) ||
	    pv_get_record_size(c, o, "", &w->record_size) ||
	    pv_get_u32(c, o, "", "flush_every", 1, UINT32_MAX, &w->flush_every) ||
	    pv_get_u32(c, o, "", "qd", 1, 32, &w->qd) ||
	    pv_get_int(c, o, "", "seed", 0, UINT64_MAX, &w->seed) ||
	    parse_announce(c, o, &w->announce))
		return -EINVAL;
	return 0;
}

/* the schema of each message type (its name: pc_msg_type_name, proto_check.c) */
static int (*const msg_parse[PC_MSG_TYPE_MAX])(struct vctx *c, json_object *o, struct pc_msg *m) = {
	[PC_MSG_HELLO] = parse_hello,
	[PC_MSG_SCAN_BEGIN] = pv_parse_scan_begin,
	[PC_MSG_RUNS] = pv_parse_runs,
	[PC_MSG_SLOT] = pv_parse_slot,
	[PC_MSG_SCAN_END] = pv_parse_scan_end,
	[PC_MSG_SUBMIT] = parse_range,
	[PC_MSG_ACK] = parse_range,
	[PC_MSG_DONE] = parse_done,
	[PC_MSG_ERROR] = parse_error,
	[PC_MSG_VERIFY] = pv_parse_verify,
	[PC_MSG_WORK] = parse_work,
	[PC_MSG_CRASH] = parse_crash,
	[PC_MSG_CHALLENGE] = parse_challenge,
	[PC_MSG_AUTH] = parse_auth,
	[PC_MSG_KNOWN] = pv_parse_known,
	[PC_MSG_SAME] = pv_parse_same,
	[PC_MSG_IO] = parse_io,
	[PC_MSG_AUDIT] = parse_audit,
	[PC_MSG_SETUP_ERROR] = parse_setup_error,
};

/* ---- parsing a line ---- */

/* Strip the framing and parse exactly one JSON object; NULL with err set. */
static json_object *parse_json(struct vctx *c, const char *line, size_t len)
{
	json_tokener *tok;
	json_object *o;
	size_t p = 0, end;
	const char *nul;

	if (len > PC_PROTO_MAX_LINE) {
		pv_verr(c, "line of %zu bytes exceeds the %d-byte limit", len, PC_PROTO_MAX_LINE);
		return NULL;
	}
	nul = memchr(line, 0, len);
	if (nul) {
		pv_verr(c, "NUL byte at byte %zu of the line", (size_t)(nul - line));
		return NULL;
	}
	if (len >= MARKER_LEN && memcmp(line, PC_PROTO_MARKER, MARKER_LEN) == 0)
		p = MARKER_LEN;
	if (len > p && line[len - 1] == '\r')
		len--;
	while (p < len && (line[p] == ' ' || line[p] == '\t'))
		p++;
	if (p == len) {
		pv_verr(c, "empty line (expected one JSON object)");
		return NULL;
	}
	if (line[p] != '{') {
		unsigned char ch = (unsigned char)line[p];

		if (ch >= 0x20 && ch < 0x7f)
			pv_verr(c, "expected one JSON object, got '%c' at byte %zu", ch, p);
		else
			pv_verr(c, "expected one JSON object, got byte 0x%02x at byte %zu", ch, p);
		return NULL;
	}
	tok = json_tokener_new_ex(MAX_DEPTH);
	if (!tok) {
		pv_verr(c, "out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, line + p, (int)(len - p));
	end = p + json_tokener_get_parse_end(tok);
	if (!o) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		if (e == json_tokener_continue)
			pv_verr(c, "truncated JSON: the line ends at byte %zu inside the object", len);
		else
			pv_verr(c, "invalid JSON at byte %zu: %s", end, json_tokener_error_desc(e));
	} else if (end != len) {
		/* strict mode already refuses trailing data; never rely on one flag */
		pv_verr(c, "trailing data after the JSON object at byte %zu", end);
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
		return pv_verr(c, "field \"type\" is missing (expected the message type)");
	if (!v || !json_object_is_type(v, json_type_string))
		return pv_verr(c, "field \"type\": expected a string, got %s", pv_jtype(v));
	name = json_object_get_string(v);
	namelen = (size_t)json_object_get_string_len(v);
	if (!json_object_object_get_ex(o, "v", &v))
		return pv_verr(c, "field \"v\" is missing (this build speaks protocol version %d)",
			    PC_PROTO_VERSION);
	if (!v || !json_object_is_type(v, json_type_int))
		return pv_verr(c, "field \"v\": expected an integer protocol version, got %s", pv_jtype(v));
	ver = json_object_get_int64(v);
	if (ver != PC_PROTO_VERSION)
		return pv_verr(c, "protocol version %" PRId64 " not supported (this build speaks %d)",
			    ver, PC_PROTO_VERSION);
	for (int i = 0; i < PC_MSG_TYPE_MAX; i++) {
		if (strlen(name) == namelen && strcmp(name, pc_msg_type_name((enum pc_msg_type)i)) == 0) {
			*t = (enum pc_msg_type)i;
			return 0;
		}
	}
	return pv_verr(c, "unknown message type \"%s\"", pv_quote(name, q, sizeof(q)));
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
		return pv_verr(&c, "no line");
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
		return pv_verr(&c, "expected one JSON object");
	if (parse_header(&c, o, &t))
		return -EINVAL;
	m->type = t;
	m->obj = json_object_get(o);
	c.type = pc_msg_type_name(t);
	ret = msg_parse[t](&c, o, m);
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


/*
 * proto_scan.c - the scan report on the wire: the schemas of scan_begin,
 * runs, slot, scan_end, verify, known and same, and their builders.
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

int pv_parse_scan_begin(struct vctx *c, json_object *o, struct pc_msg *m)
{
	uint32_t slots;
	int pattern, full;

	if (pv_get_u32(c, o, "", "slots", 0, UINT32_MAX, &slots) ||
	    pv_get_pattern(c, o, "pattern", &pattern) ||
	    pv_get_bool(c, o, "full", &full))
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
		snprintf(name, sizeof(name), "%s", pv_jtype(e));
		if (e && json_object_is_type(e, json_type_array))
			snprintf(name, sizeof(name), "an array of %zu", json_object_array_length(e));
		return pv_verr(c, "field \"r[%zu]\": expected an array of 5 integers "
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
		return pv_want_int(c, 1, x, "r", key, min[k], max[k], &v[k]);
	}
	if (v[0] + v[1] > (uint64_t)UINT32_MAX + 1)
		return pv_verr(c, "field \"r[%zu]\": positions %" PRIu64 " + %" PRIu64 " pass 2^32",
			    i, v[0], v[1]);
	snprintf(name, sizeof(name), "field \"r[%zu]\"", i);
	if (v[2] && pv_check_seq_range(c, name, v[2], v[1]))
		return -EINVAL;
	*r = (struct pc_run){ .pos = (uint32_t)v[0], .n = (uint32_t)v[1], .seq = v[2],
			      .cycle = (uint32_t)v[3], .flags = (uint16_t)v[4] };
	return 0;
}

int pv_parse_runs(struct vctx *c, json_object *o, struct pc_msg *m)
{
	json_object *r;
	size_t n;

	if (pv_get_array(c, o, "r", 1, PC_PROTO_RUNS_PER_LINE, &r, &n))
		return -EINVAL;
	m->u.runs.runs = calloc(n, sizeof(*m->u.runs.runs));
	if (!m->u.runs.runs) {
		pv_verr(c, "out of memory");
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
		if (pv_get_int(c, e, pfx, valid_keys[k], 0, max[k], &v[k]))
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

	if (pv_get_str(c, e, pfx, "raw", &s))
		return -EINVAL;
	if (strlen(s) != RAW_B64_LEN || pc_b64_decode(s, r->raw, sizeof(r->raw), &n) || n != PC_SECTOR)
		return pv_verr(c, "field \"%sraw\": expected base64 of exactly 512 bytes (%u characters)",
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
		return pv_verr(c, "field \"s[%zu]\": expected an object, got %s", i, pv_jtype(e));
	snprintf(pfx, sizeof(pfx), "s[%zu].", i);
	if (pv_get_int(c, e, pfx, "i", 0, MAX_SPR - 1, &idx))
		return -EINVAL;
	if ((int)idx <= prev)
		return pv_verr(c, "field \"%si\": sector index %" PRIu64 " after %d (indices must "
			    "strictly increase)", pfx, idx, prev);
	r->idx = (uint16_t)idx;
	nf = sect_forms(e, forms);
	if (nf == 0)
		return pv_verr(c, "field \"s[%zu]\": no sector form (expected seq/cyc/fl/lba/hi, raw, "
			    "fill, h or err)", i);
	if (nf > 1)
		return pv_verr(c, "field \"s[%zu]\": more than one sector form (%s and %s)",
			    i, forms[0], forms[1]);
	if (forms[0][0] == 's')
		return parse_sect_valid(c, e, pfx, r);
	if (strcmp(forms[0], "raw") == 0)
		return parse_sect_raw(c, e, pfx, r);
	if (strcmp(forms[0], "fill") == 0) {
		r->kind = PC_SK_FILL;
		return pv_get_u32(c, e, pfx, "fill", 0, 255, &r->value);
	}
	if (strcmp(forms[0], "h") == 0) {
		r->kind = PC_SK_HASH;
		return pv_get_u32(c, e, pfx, "h", 0, UINT32_MAX, &r->value);
	}
	r->kind = PC_SK_ERR;
	return pv_get_u32(c, e, pfx, "err", 1, INT32_MAX, &r->value);
}

int pv_parse_slot(struct vctx *c, json_object *o, struct pc_msg *m)
{
	struct pc_slot_report *s = &m->u.slot;
	json_object *arr;
	size_t n;
	int prev = -1;

	if (pv_get_u32(c, o, "", "slot", 0, UINT32_MAX - 1, &s->slot) ||
	    pv_get_array(c, o, "s", 1, MAX_SPR, &arr, &n))
		return -EINVAL;
	s->sect = calloc(n, sizeof(*s->sect));
	if (!s->sect) {
		pv_verr(c, "out of memory");
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

int pv_parse_scan_end(struct vctx *c, json_object *o, struct pc_msg *m)
{
	uint64_t ms;

	if (pv_get_u32(c, o, "", "slots", 0, UINT32_MAX, &m->u.scan_end.slots) ||
	    pv_get_u32(c, o, "", "anomalies", 0, UINT32_MAX, &m->u.scan_end.anomalies) ||
	    pv_get_u32(c, o, "", "raw_dropped", 0, UINT32_MAX, &m->u.scan_end.raw_dropped))
		return -EINVAL;
	if (json_object_object_get_ex(o, "ms", NULL) && pv_get_int(c, o, "", "ms", 0, UINT64_MAX, &ms))
		return -EINVAL;
	return 0;
}

static int nonneg_int(json_object *v, uint64_t *out)
{
	if (json_object_get_int64(v) < 0)
		return -EINVAL;
	*out = json_object_get_uint64(v);
	return 0;
}

int pv_parse_verify(struct vctx *c, json_object *o, struct pc_msg *m)
{
	json_object *arr;
	size_t n;

	if (pv_get_pattern(c, o, "pattern", &m->u.verify.pattern) ||
	    pv_get_bool(c, o, "full", &m->u.verify.full))
		return -EINVAL;
	if (json_object_object_get_ex(o, "region", &arr) && (pv_get_obj(c, o, "region", &arr) || pv_parse_region(c, arr)))
		return -EINVAL;
	if (!json_object_object_get_ex(o, "ranges", &arr)) {
		if (!m->u.verify.full)
			return pv_verr(c, "field \"ranges\": required when \"full\" is false");
		return 0;
	}
	if (m->u.verify.full)
		return pv_verr(c, "field \"ranges\": not allowed when \"full\" is true");
	if (!json_object_is_type(arr, json_type_array))
		return pv_verr(c, "field \"ranges\": expected an array of [pos, n], got %s", pv_jtype(arr));
	n = json_object_array_length(arr);
	if (n < 1 || n > PC_PROTO_MAX_RANGES)
		return pv_verr(c, "field \"ranges\": expected 1 to %d ranges, got %zu", PC_PROTO_MAX_RANGES, n);
	m->u.verify.ranges = calloc(n, sizeof(*m->u.verify.ranges));
	if (!m->u.verify.ranges)
		return pv_verr(c, "out of memory");
	m->u.verify.nranges = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(arr, i), *a, *b;
		uint64_t pos, cnt;

		if (!json_object_is_type(r, json_type_array) || json_object_array_length(r) != 2 ||
		    !json_object_is_type(a = json_object_array_get_idx(r, 0), json_type_int) ||
		    !json_object_is_type(b = json_object_array_get_idx(r, 1), json_type_int))
			return pv_verr(c, "field \"ranges[%zu]\": expected [pos, n] of two integers", i);
		/* unsigned and checked: pos + n must not wrap on the way to the limit */
		if (nonneg_int(a, &pos) || nonneg_int(b, &cnt) || cnt < 1 || pos > UINT32_MAX ||
		    cnt > UINT32_MAX - pos)
			return pv_verr(c, "field \"ranges[%zu]\": [%s, %s] is not a range of positions", i,
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

	if (pv_get_str(c, o, "", key, &s))
		return -EINVAL;
	len = strlen(s);
	if (len == 0 || len % 4 || len / 4 * 3 > max * entry + 2 || pc_b64_decode(s, buf, max * entry, &n) ||
	    n % entry || n == 0)
		return pv_verr(c, "field \"%s\": expected base64 of 1 to %zu entries of %zu bytes", key, max, entry);
	return (int)(n / entry);
}

int pv_parse_known(struct vctx *c, json_object *o, struct pc_msg *m)
{
	uint8_t buf[PC_PROTO_KNOWN_PER_LINE * KNOWN_ENTRY > PC_PROTO_KNOWN_SLOTS_PER_LINE * KNOWN_SLOT_ENTRY ?
		    PC_PROTO_KNOWN_PER_LINE * KNOWN_ENTRY : PC_PROTO_KNOWN_SLOTS_PER_LINE * KNOWN_SLOT_ENTRY];
	int has_sect = json_object_object_get_ex(o, "sectors", NULL), has_slots = json_object_object_get_ex(o, "slots", NULL);
	int n;

	if (!has_sect && !has_slots)
		return pv_verr(c, "field \"sectors\" or \"slots\" is required");
	if (has_sect) {
		if ((n = b64_entries(c, o, "sectors", KNOWN_ENTRY, PC_PROTO_KNOWN_PER_LINE, buf)) < 0)
			return -EINVAL;
		m->u.known.n = (uint32_t)n;
		m->u.known.k = calloc((size_t)n, sizeof(*m->u.known.k));
		if (!m->u.known.k)
			return pv_verr(c, "out of memory");
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
			return pv_verr(c, "out of memory");
		for (int i = 0; i < n; i++) {
			const uint8_t *e = buf + (size_t)i * KNOWN_SLOT_ENTRY;
			m->u.known.slots[i].slot = pc_get32(e);
			m->u.known.slots[i].digest = pc_get64(e + 4);
		}
	}
	return 0;
}

int pv_parse_same(struct vctx *c, json_object *o, struct pc_msg *m)
{
	json_object *arr;
	size_t n;

	if (pv_get_array(c, o, "slots", 1, PC_PROTO_SAME_PER_LINE, &arr, &n))
		return -EINVAL;
	m->u.same.slots = calloc(n, sizeof(*m->u.same.slots));
	if (!m->u.same.slots)
		return pv_verr(c, "out of memory");
	m->u.same.n = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		json_object *x = json_object_array_get_idx(arr, i);
		uint64_t v;
		char key[32];

		snprintf(key, sizeof(key), "[%zu]", i);
		if (pv_want_int(c, 1, x, "slots", key, 0, UINT32_MAX - 1, &v))
			return -EINVAL;
		m->u.same.slots[i] = (uint32_t)v;
	}
	return 0;
}

json_object *pc_msg_verify(int pattern, int full)
{
	json_object *o = pc_msg_new(PC_MSG_VERIFY);

	if (o) {
		pv_add(o, "pattern", json_object_new_string(pc_pattern_name(pattern)));
		pv_add(o, "full", json_object_new_boolean(full != 0));
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
	pv_add(o, "ranges", arr);
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
		pv_add(o, "sectors", json_object_new_string(b64));
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
		pv_add(o, "slots", json_object_new_string(b64));
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
	pv_add(o, "slots", arr);
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

		json_object_array_add(r, pv_jint(runs[i].pos));
		json_object_array_add(r, pv_jint(runs[i].n));
		json_object_array_add(r, pv_jint(runs[i].seq));
		json_object_array_add(r, pv_jint(runs[i].cycle));
		json_object_array_add(r, pv_jint(runs[i].flags));
		json_object_array_add(arr, r);
	}
	pv_add(o, "r", arr);
	return o;
}

static json_object *sect_json(const struct pc_sect_report *e)
{
	json_object *s = json_object_new_object();
	char b64[RAW_B64_LEN + 1];

	if (!s)
		return NULL;
	pv_add(s, "i", pv_jint(e->idx));
	switch (e->kind) {
	case PC_SK_VALID:
		pv_add(s, "seq", pv_jint(e->seq));
		pv_add(s, "cyc", pv_jint(e->cycle));
		pv_add(s, "fl", pv_jint(e->flags));
		pv_add(s, "lba", pv_jint(e->lba));
		pv_add(s, "hi", pv_jint(e->hidx));
		break;
	case PC_SK_RAW:
		pc_b64_encode(e->raw, sizeof(e->raw), b64);
		pv_add(s, "raw", json_object_new_string(b64));
		break;
	case PC_SK_FILL:
		pv_add(s, "fill", pv_jint(e->value));
		break;
	case PC_SK_HASH:
		pv_add(s, "h", pv_jint(e->value));
		break;
	case PC_SK_ERR:
		pv_add(s, "err", pv_jint(e->value));
		break;
	}
	return s;
}

json_object *pc_msg_slot(const struct pc_slot_report *s)
{
	json_object *o = pc_msg_new(PC_MSG_SLOT), *arr;

	if (!o)
		return NULL;
	pv_add(o, "slot", pv_jint(s->slot));
	arr = json_object_new_array_ext((int)s->nsect);
	for (uint32_t i = 0; arr && i < s->nsect; i++)
		json_object_array_add(arr, sect_json(&s->sect[i]));
	pv_add(o, "s", arr);
	return o;
}


/*
 * status_scan.c - the scanner status reads its lines with (status_scan.h): the
 * top-level members of a JSON object found without building it, and a
 * board's state from its events.
 */
#include "harness/cli/status_scan.h"

#include <errno.h>
#include <string.h>


#include "common/util.h"
#include "harness/results/verdict.h"

/* ---- the scanner ---- */

static const char *skip_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* Past the string that opens at p ('"'); NULL with *st 1 (the input ended
 * first) or -1 (a raw control character). */
static const char *skip_string(const char *p, const char *e, int *st)
{
	for (p++; p < e; p++) {
		if (*p == '\\') {
			if (++p >= e)
				break;
		} else if (*p == '"') {
			return p + 1;
		} else if ((unsigned char)*p < 0x20) {
			*st = -1;
			return NULL;
		}
	}
	*st = 1;
	return NULL;
}

static int is_numch(char c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Past the value at p, its type in *type; NULL with *st as skip_string().
 * Containers are skipped by counting brackets outside strings: no recursion,
 * whatever the depth. */
static const char *skip_value(const char *p, const char *e, enum status_vtype *type, int *st)
{
	static const struct { const char *lit; enum status_vtype type; } lits[] = {
		{ "true", ST_V_TRUE }, { "false", ST_V_FALSE }, { "null", ST_V_NULL },
	};
	const char *q;
	int minus, digit;

	if (p >= e) {
		*st = 1;
		return NULL;
	}
	if (*p == '"') {
		*type = ST_V_STRING;
		return skip_string(p, e, st);
	}
	if (*p == '{' || *p == '[') {
		size_t depth = 0;

		*type = *p == '{' ? ST_V_OBJECT : ST_V_ARRAY;
		for (q = p; q < e; q++) {
			if (*q == '"') {
				q = skip_string(q, e, st);
				if (!q)
					return NULL;
				q--;
			} else if (*q == '{' || *q == '[') {
				depth++;
			} else if (*q == '}' || *q == ']') {
				if (--depth > 0)
					continue;
				/* the outermost pair must match (the spans say so);
				 * brackets inside are counted, not matched */
				if (*q != (*p == '{' ? '}' : ']')) {
					*st = -1;
					return NULL;
				}
				return q + 1;
			}
		}
		*st = 1;
		return NULL;
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(lits); i++) {
		size_t l = strlen(lits[i].lit), have = (size_t)(e - p);

		if (*p != lits[i].lit[0])
			continue;
		if (memcmp(p, lits[i].lit, have < l ? have : l)) {
			*st = -1;
			return NULL;
		}
		if (have < l) {
			*st = 1;
			return NULL;
		}
		*type = lits[i].type;
		return p + l;
	}
	for (q = p; q < e && is_numch(*q); q++)
		;
	/* a number: an optional minus, then a digit (the rest is not checked:
	 * status_span_u64() reads the values used) */
	minus = *p == '-';
	digit = q - p > minus && p[minus] >= '0' && p[minus] <= '9';
	if (q == e && (digit || q - p == minus)) {
		*st = 1;	/* the number may go on (a line cut after its minus, too) */
		return NULL;
	}
	if (!digit) {
		*st = -1;
		return NULL;
	}
	*type = ST_V_NUMBER;
	return q;
}

static void set_span(struct status_span *s, enum status_vtype type, const char *v, const char *ve)
{
	s->type = type;
	if (type == ST_V_STRING) {
		s->p = v + 1;
		s->n = (size_t)(ve - v) - 2;
	} else {
		s->p = v;
		s->n = (size_t)(ve - v);
	}
}

int status_scan(const char *s, size_t n, int partial, const char *const *keys, unsigned nkeys,
		struct status_span *out)
{
	const char *p, *e = s + n;
	int st = 0;

	for (unsigned i = 0; i < nkeys; i++)
		out[i] = (struct status_span){ ST_V_ABSENT, NULL, 0 };
	p = skip_ws(s, e);
	if (p >= e)
		return partial ? 1 : -EPROTO;	/* (cut in the whitespace before it) */
	if (*p != '{')
		return -EPROTO;
	p = skip_ws(p + 1, e);
	if (p < e && *p == '}') {
		p++;
		goto end;
	}
	for (;;) {
		const char *k, *ke, *v, *ve;
		enum status_vtype type = ST_V_ABSENT;
		size_t klen;

		if (p >= e)
			goto ran_out;
		if (*p != '"')
			return -EPROTO;
		k = p + 1;
		ke = skip_string(p, e, &st);
		if (!ke)
			goto failed;
		klen = (size_t)(ke - k) - 1;
		p = skip_ws(ke, e);
		if (p >= e)
			goto ran_out;
		if (*p != ':')
			return -EPROTO;
		v = skip_ws(p + 1, e);
		ve = skip_value(v, e, &type, &st);
		if (!ve)
			goto failed;
		for (unsigned i = 0; i < nkeys; i++)
			if (strlen(keys[i]) == klen && !memcmp(keys[i], k, klen))
				set_span(&out[i], type, v, ve);
		p = skip_ws(ve, e);
		if (p >= e)
			goto ran_out;
		if (*p == '}') {
			p++;
			break;
		}
		if (*p != ',')
			return -EPROTO;
		p = skip_ws(p + 1, e);
	}
end:
	return skip_ws(p, e) == e ? 0 : -EPROTO;
failed:
	if (st < 0)
		return -EPROTO;
ran_out:
	return partial ? 1 : -EPROTO;
}

int status_array_next(const struct status_span *a, size_t *pos, struct status_span *el)
{
	const char *s = a->p, *e, *p, *ve;
	enum status_vtype type = ST_V_ABSENT;
	int st = 0;

	if (a->type != ST_V_ARRAY || a->n < 2 || s[0] != '[' || s[a->n - 1] != ']')
		return -EPROTO;
	e = s + a->n - 1;	/* the closing bracket */
	if (*pos >= a->n)
		return -EPROTO;
	p = skip_ws(s + (*pos ? *pos : 1), e);
	if (p == e)
		return 0;
	if (*pos) {
		if (*p != ',')
			return -EPROTO;
		p = skip_ws(p + 1, e);
	}
	ve = skip_value(p, e, &type, &st);
	if (!ve)
		return -EPROTO;
	set_span(el, type, p, ve);
	*pos = (size_t)(ve - s);
	return 1;
}

int status_span_u64(const struct status_span *v, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;

	if (v->type != ST_V_NUMBER || !v->n)
		return -EPROTO;
	if (v->n > 20)
		return -ERANGE;
	for (size_t i = 0; i < v->n; i++) {
		unsigned d = (unsigned)(v->p[i] - '0');

		/* (d > max first: max - d must not wrap) */
		if (d > 9)
			return -EPROTO;
		if (d > max || x > (max - d) / 10)
			return -ERANGE;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

int status_span_str(const struct status_span *v, char *buf, size_t len)
{
	if (v->type != ST_V_STRING)
		return -EPROTO;
	if (v->n >= len)
		return -ERANGE;
	for (size_t i = 0; i < v->n; i++)
		if (v->p[i] < 0x20 || v->p[i] > 0x7e || v->p[i] == '\\')
			return -EPROTO;
	memcpy(buf, v->p, v->n);
	buf[v->n] = 0;
	return 0;
}

/* ---- states, times ---- */

const char *const status_bstate_names[ST_NSTATES] = {
	"unknown", "off", "booting", "verifying", "writing", "given up", "done",
};
const char *const status_bstate_keys[ST_NSTATES] = {
	"unknown", "off", "booting", "verifying", "writing", "given_up", "done",
};

enum status_bstate status_next_state(enum status_bstate prev, int ev, const char *rxtype, const char *end)
{
	static const char *const verifying[] = { "hello", "auth", "scan_begin", "runs", "slot", "same", "scan_end" };
	static const char *const writing[] = { "submit", "ack", "done" };

	switch (ev) {
	case PC_EV_POWER_ON:
	case PC_EV_BOOT_STAGE:
		return ST_BOOTING;
	case PC_EV_VERIFY:
		return ST_VERIFYING;
	case PC_EV_WORK:
		return ST_WRITING;
	case PC_EV_CUT:
	case PC_EV_BOOT_FAIL:
	case PC_EV_INFRA:
		return ST_OFF;
	case PC_EV_FINAL_BOOT_FAIL:
	case PC_EV_FINAL_INFRA:
		return ST_DONE;	/* the final verification is over, judged or not */
	case PC_EV_GIVE_UP:
		return ST_GIVEN_UP;
	case PC_EV_RUN_END:
		switch (pc_run_end_from_name(end)) {
		case PC_END_FINISHED:
			return ST_DONE;
		case PC_END_GIVEN_UP:
			return ST_GIVEN_UP;
		case PC_END_INTERRUPTED:
		case PC_END_DISK_FLOOR:
			return ST_OFF;
		case PC_END_DEAD_DEVICE:
		case PC_END_FIRST_FAIL:
		case PC_END_TARGET_MET:
			return ST_DONE;	/* stopped by its rule: nothing left to run */
		default:
			return prev;
		}
	case PC_EV_RX:
		if (!rxtype)
			return prev;
		for (size_t i = 0; i < PC_ARRAY_SIZE(verifying); i++)
			if (!strcmp(rxtype, verifying[i]))
				return ST_VERIFYING;
		for (size_t i = 0; i < PC_ARRAY_SIZE(writing); i++)
			if (!strcmp(rxtype, writing[i]))
				return ST_WRITING;
		return prev;
	default:
		return prev;
	}
}


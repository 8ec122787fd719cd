/*
 * config_read.c - reading one value of a campaign file: its JSON type and
 * bounds, an unknown key with the nearest valid one suggested, and the key
 * path every error names.
 */
#include "harness/campaign/config_limits.h"
#include "harness/campaign/config_read.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"

/* "FILE: path: message" (or "FILE: message" when path is NULL). */
int cfg_fail(struct cfg_ctx *x, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(x->err, x->errlen, "%s: %s%s", x->file, path ? path : "", path ? ": " : "");
	if (n < 0 || (size_t)n >= x->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

const char *cfg_jtype(json_object *v)
{
	return json_type_to_name(json_object_get_type(v));
}

/* Levenshtein distance, for "did you mean"; keys are short. */
unsigned cfg_edit_distance(const char *a, const char *b)
{
	unsigned row[64], la = (unsigned)strnlen(a, 63), lb = (unsigned)strnlen(b, 63);

	for (unsigned j = 0; j <= lb; j++)
		row[j] = j;
	for (unsigned i = 1; i <= la; i++) {
		unsigned diag = row[0];

		row[0] = i;
		for (unsigned j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* The candidate closest to word when it is close enough to be a typo, else NULL. */
const char *cfg_closest(const char *word, const char *const *cands)
{
	const char *best = NULL;
	unsigned bestd = ~0u;

	for (; *cands; cands++) {
		unsigned d = cfg_edit_distance(word, *cands);

		if (d < bestd && d <= 1 + strlen(*cands) / 5) {
			bestd = d;
			best = *cands;
		}
	}
	return best;
}

int cfg_unknown_key(struct cfg_ctx *x, const char *path, const char *key,
		    const char *const *valid, const char *hint)
{
	const char *near = cfg_closest(key, valid);

	if (near)
		return cfg_fail(x, path, "unknown key '%s' (did you mean '%s'?)", key, near);
	return cfg_fail(x, path, "unknown key '%s'%s", key, hint ? hint : "");
}

int cfg_in_list(const char *key, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(key, *list) == 0)
			return 1;
	return 0;
}

int cfg_check_keys(struct cfg_ctx *x, json_object *o, const char *path, const char *const *valid)
{
	json_object_object_foreach(o, key, val) {
		(void)val;
		if (!cfg_in_list(key, valid))
			return cfg_unknown_key(x, path, key, valid, NULL);
	}
	return 0;
}

/*
 * Did this value of the merged board come from "defaults"? The merge shares
 * json objects by reference, so identity tells: users must be told to fix
 * the defaults section, not a board that never mentions the key.
 */
int cfg_from_defaults(struct cfg_ctx *x, const char *key, const char *sub)
{
	json_object *m, *d;

	if (!key)
		return 0;
	m = pc_jget(x->merged, key);
	d = pc_jget(x->defaults, key);
	if (!m || !d)
		return 0;
	if (m == d)
		return 1;
	if (!sub)
		return 0;
	m = pc_jget(m, sub);
	d = pc_jget(d, sub);
	return m && m == d;
}

/* "boards[N].key.sub (from defaults)" */
const char *cfg_bpath(struct cfg_ctx *x, char *buf, size_t len, const char *key, const char *sub)
{
	snprintf(buf, len, "boards[%u]%s%s%s%s%s", x->bi, key ? "." : "", key ? key : "",
		 sub ? "." : "", sub ? sub : "", cfg_from_defaults(x, key, sub) ? " (from defaults)" : "");
	return buf;
}

/* "boards[N].section", marked when the offending key came from defaults. */
const char *cfg_bsec(struct cfg_ctx *x, char *buf, size_t len, const char *section, const char *key)
{
	snprintf(buf, len, "boards[%u].%s%s", x->bi, section,
		 cfg_from_defaults(x, section, key) ? " (from defaults)" : "");
	return buf;
}

int config_valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 63)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '.' || *s == '-'))
			return 0;
	return 1;
}

int cfg_u64(struct cfg_ctx *x, json_object *v, const char *path, uint64_t min, uint64_t max,
	    uint64_t *out)
{
	uint64_t u;

	if (!json_object_is_type(v, json_type_int))
		return cfg_fail(x, path, "expected an integer (%" PRIu64 "..%" PRIu64 "), got %s",
				min, max, cfg_jtype(v));
	if (json_object_get_int64(v) < 0)
		return cfg_fail(x, path, "%" PRId64 " is out of range %" PRIu64 "..%" PRIu64,
				json_object_get_int64(v), min, max);
	u = json_object_get_uint64(v);
	if (u < min || u > max)
		return cfg_fail(x, path, "%" PRIu64 " is out of range %" PRIu64 "..%" PRIu64, u, min, max);
	*out = u;
	return 0;
}

int cfg_u32(struct cfg_ctx *x, json_object *v, const char *path, uint32_t min, uint32_t max,
	    uint32_t *out)
{
	uint64_t u;
	int rc = cfg_u64(x, v, path, min, max, &u);

	if (rc == 0)
		*out = (uint32_t)u;
	return rc;
}

int cfg_str(struct cfg_ctx *x, json_object *v, const char *path, const char **out)
{
	if (!json_object_is_type(v, json_type_string))
		return cfg_fail(x, path, "expected a string, got %s", cfg_jtype(v));
	*out = json_object_get_string(v);
	return 0;
}

int cfg_name(struct cfg_ctx *x, json_object *v, const char *path, char *out, size_t len)
{
	const char *s;
	int rc = cfg_str(x, v, path, &s);

	if (rc)
		return rc;
	if (!config_valid_name(s))
		return cfg_fail(x, path, "'%s' is not a valid name: use 1 to 63 of A-Z a-z 0-9 _ . -", s);
	pc_strlcpy(out, s, len);
	return 0;
}

/* A board value: from the merged board or the built-in default. */
json_object *cfg_bval(struct cfg_ctx *x, const char *key)
{
	return pc_jget(x->merged, key);
}

void cfg_put(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

json_object *cfg_copy(json_object *v)
{
	json_object *d = NULL;

	if (json_object_deep_copy(v, &d, NULL) != 0)
		return NULL;
	return d;
}

/* 4194304 -> "4M", for messages. */
const char *cfg_size_text(uint64_t v, char *buf, size_t len)
{
	static const char sfx[] = "KMGT";
	int i = -1;

	while (v && v % 1024 == 0 && i < 3) {
		v /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%" PRIu64 "-byte", v);
	else
		snprintf(buf, len, "%" PRIu64 "%c", v, sfx[i]);
	return buf;
}


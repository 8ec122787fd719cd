/*
 * config.c - campaign configuration: JSON in, a validated campaign_cfg out.
 *
 * Nothing is half-accepted: the whole document is checked before the harness
 * touches a relay, and every error names the file and the key path, so a typo
 * in an overnight campaign is caught at `powercut check-config`, not at 3 am.
 *
 * "defaults" is merged into each board first (see cfg_merge), then each
 * merged board is validated and written out again with every default filled
 * in. That resolved document (c->root) is itself a valid configuration:
 * campaign.json records exactly what ran.
 */
#include "harness/campaign/config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "relay/relay.h"
#include "sim/emmc.h"
#include "harness/campaign/netserial.h"

#define CFG_MAX_FILE		(16u << 20)
#define CFG_MAX_SIM_SIZE	(64ull << 30)	/* a typo like "4T" must not fill the disk */
#define CFG_MAX_MS		86400000u	/* one day: any timeout longer is a typo */
#define CFG_MAX_ACKS		10000000u
#define CFG_MAX_DELAY_US	1000000u	/* cut.delay_us: a second after the flush or FUA write starts */

struct cfg_ctx {
	const char *file;
	char *err;
	size_t errlen;
	json_object *defaults;	/* the "defaults" section, or NULL */
	json_object *merged;	/* the board being checked, defaults merged in */
	unsigned bi;		/* its index */
};

/* "FILE: path: message" (or "FILE: message" when path is NULL). */
__attribute__((format(printf, 3, 4)))
static int cfg_fail(struct cfg_ctx *x, const char *path, const char *fmt, ...)
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

static const char *jtype(json_object *v)
{
	return json_type_to_name(json_object_get_type(v));
}

static json_object *jget(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!o || !json_object_is_type(o, json_type_object))
		return NULL;
	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* Levenshtein distance, for "did you mean"; keys are short. */
static unsigned edit_distance(const char *a, const char *b)
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
static const char *closest(const char *word, const char *const *cands)
{
	const char *best = NULL;
	unsigned bestd = ~0u;

	for (; *cands; cands++) {
		unsigned d = edit_distance(word, *cands);

		if (d < bestd && d <= 1 + strlen(*cands) / 5) {
			bestd = d;
			best = *cands;
		}
	}
	return best;
}

static int cfg_unknown_key(struct cfg_ctx *x, const char *path, const char *key,
			   const char *const *valid, const char *hint)
{
	const char *near = closest(key, valid);

	if (near)
		return cfg_fail(x, path, "unknown key '%s' (did you mean '%s'?)", key, near);
	return cfg_fail(x, path, "unknown key '%s'%s", key, hint ? hint : "");
}

static int in_list(const char *key, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(key, *list) == 0)
			return 1;
	return 0;
}

static int cfg_check_keys(struct cfg_ctx *x, json_object *o, const char *path, const char *const *valid)
{
	json_object_object_foreach(o, key, val) {
		(void)val;
		if (!in_list(key, valid))
			return cfg_unknown_key(x, path, key, valid, NULL);
	}
	return 0;
}

/*
 * Did this value of the merged board come from "defaults"? The merge shares
 * json objects by reference, so identity tells: users must be told to fix
 * the defaults section, not a board that never mentions the key.
 */
static int from_defaults(struct cfg_ctx *x, const char *key, const char *sub)
{
	json_object *m, *d;

	if (!key)
		return 0;
	m = jget(x->merged, key);
	d = jget(x->defaults, key);
	if (!m || !d)
		return 0;
	if (m == d)
		return 1;
	if (!sub)
		return 0;
	m = jget(m, sub);
	d = jget(d, sub);
	return m && m == d;
}

/* "boards[N].key.sub (from defaults)" */
static const char *bpath(struct cfg_ctx *x, char *buf, size_t len, const char *key, const char *sub)
{
	snprintf(buf, len, "boards[%u]%s%s%s%s%s", x->bi, key ? "." : "", key ? key : "",
		 sub ? "." : "", sub ? sub : "", from_defaults(x, key, sub) ? " (from defaults)" : "");
	return buf;
}

/* "boards[N].section", marked when the offending key came from defaults. */
static const char *bsec(struct cfg_ctx *x, char *buf, size_t len, const char *section, const char *key)
{
	snprintf(buf, len, "boards[%u].%s%s", x->bi, section,
		 from_defaults(x, section, key) ? " (from defaults)" : "");
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

static int cfg_u64(struct cfg_ctx *x, json_object *v, const char *path, uint64_t min, uint64_t max,
		   uint64_t *out)
{
	uint64_t u;

	if (!json_object_is_type(v, json_type_int))
		return cfg_fail(x, path, "expected an integer (%" PRIu64 "..%" PRIu64 "), got %s",
				min, max, jtype(v));
	if (json_object_get_int64(v) < 0)
		return cfg_fail(x, path, "%" PRId64 " is out of range %" PRIu64 "..%" PRIu64,
				json_object_get_int64(v), min, max);
	u = json_object_get_uint64(v);
	if (u < min || u > max)
		return cfg_fail(x, path, "%" PRIu64 " is out of range %" PRIu64 "..%" PRIu64, u, min, max);
	*out = u;
	return 0;
}

static int cfg_u32(struct cfg_ctx *x, json_object *v, const char *path, uint32_t min, uint32_t max,
		   uint32_t *out)
{
	uint64_t u;
	int rc = cfg_u64(x, v, path, min, max, &u);

	if (rc == 0)
		*out = (uint32_t)u;
	return rc;
}

static int cfg_str(struct cfg_ctx *x, json_object *v, const char *path, const char **out)
{
	if (!json_object_is_type(v, json_type_string))
		return cfg_fail(x, path, "expected a string, got %s", jtype(v));
	*out = json_object_get_string(v);
	return 0;
}

static int cfg_name(struct cfg_ctx *x, json_object *v, const char *path, char *out, size_t len)
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
static json_object *bval(struct cfg_ctx *x, const char *key)
{
	return jget(x->merged, key);
}

static void put(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

static json_object *copy(json_object *v)
{
	json_object *d = NULL;

	if (json_object_deep_copy(v, &d, NULL) != 0)
		return NULL;
	return d;
}

/* 4194304 -> "4M", for messages. */
static const char *size_text(uint64_t v, char *buf, size_t len)
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

/* ---- merging "defaults" into a board ---- */

/* The key that picks what the rest of a section means. */
static const char *selector_of(const char *section, const char **dflt)
{
	*dflt = NULL;
	if (strcmp(section, "relay") == 0)
		return "driver";
	if (strcmp(section, "device") == 0) {
		*dflt = "sim";
		return "backend";
	}
	if (strcmp(section, "cut") == 0) {
		*dflt = "random";
		return "at";
	}
	return NULL;
}

/*
 * Sections merge key by key, unless the board picks a different driver,
 * backend or cut kind than the defaults: then the defaults' keys would mean
 * nothing (or something else), so the board's section replaces them.
 */
static int same_kind(const char *section, json_object *d, json_object *b)
{
	const char *dflt, *sel = selector_of(section, &dflt);
	json_object *bs, *ds;
	const char *dv;

	if (!sel)
		return 1;
	bs = jget(b, sel);
	if (!bs || !json_object_is_type(bs, json_type_string))
		return 1;	/* inherits it (or is wrong, which validation reports) */
	ds = jget(d, sel);
	dv = ds && json_object_is_type(ds, json_type_string) ? json_object_get_string(ds) : dflt;
	return dv && strcmp(dv, json_object_get_string(bs)) == 0;
}

static json_object *cfg_merge(json_object *defaults, json_object *board)
{
	json_object *m = json_object_new_object();

	if (!m)
		return NULL;
	if (defaults) {
		json_object_object_foreach(defaults, key, dv) {
			json_object *bv = jget(board, key);

			if (bv && json_object_is_type(dv, json_type_object) &&
			    json_object_is_type(bv, json_type_object) && same_kind(key, dv, bv)) {
				json_object *sec = json_object_new_object();

				if (!sec)
					goto fail;
				json_object_object_foreach(dv, k1, v1)
					put(sec, k1, json_object_get(v1));
				json_object_object_foreach(bv, k2, v2)
					put(sec, k2, json_object_get(v2));
				put(m, key, sec);
			} else {
				put(m, key, json_object_get(bv ? bv : dv));
			}
		}
	}
	json_object_object_foreach(board, key, bv) {
		if (!jget(m, key))
			put(m, key, json_object_get(bv));
	}
	return m;
fail:
	json_object_put(m);
	return NULL;
}

/* ---- board sections ---- */

static const char *const board_keys[] = {
	"name", "relay", "device", "pattern", "modes", "records_per_cycle", "flush_every",
	"queue_depth", "cut", "boot_timeout_ms", "boot_retries", "verify_timeout_ms",
	"work_timeout_ms", "off_ms", "verify", "policy", "link", "audit", NULL,
};

static int cfg_relay(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	json_object *r = bval(x, "relay"), *drv, *rc_copy;
	const struct relay_ops *ops;
	char path[160], msg[512];
	const char *name;
	int rc;

	if (!r)
		return cfg_fail(x, bpath(x, path, sizeof(path), NULL, NULL),
				"missing required key 'relay' (an object with \"driver\": one of %s)",
				relay_names());
	bpath(x, path, sizeof(path), "relay", NULL);
	if (!json_object_is_type(r, json_type_object))
		return cfg_fail(x, path, "expected an object with \"driver\", got %s", jtype(r));
	drv = jget(r, "driver");
	if (!drv)
		return cfg_fail(x, path, "missing required key 'driver' (one of %s)", relay_names());
	bpath(x, path, sizeof(path), "relay", "driver");
	if ((rc = cfg_str(x, drv, path, &name)))
		return rc;
	ops = relay_find(name);
	if (!ops || strlen(name) >= sizeof(b->relay_driver))
		return cfg_fail(x, path, "unknown driver '%s' (known: %s)", name, relay_names());
	pc_strlcpy(b->relay_driver, name, sizeof(b->relay_driver));
	msg[0] = 0;
	if (ops->check && ops->check(r, msg, sizeof(msg)) != 0)
		return cfg_fail(x, bpath(x, path, sizeof(path), "relay", NULL), "%s",
				msg[0] ? msg : "rejected by the driver");
	rc_copy = copy(r);
	if (!rc_copy)
		return cfg_fail(x, NULL, "out of memory");
	put(out, "relay", rc_copy);
	b->relay = rc_copy;
	return 0;
}

static const char *const sim_keys[] = {
	"backend", "record_size", "max_region_bytes", "size", "profile", "program_us", "cache_sectors", "seed",
	"rate", "cut_after_sectors", NULL,
};
/* What the board's agent must say in its HELLO, when the device section
 * names it (config_device_check): any backend. "path" is posix only. */
static const char *const ident_keys[] = {
	"cid", "serial", "model", "manfid", "name", "vendor", "fwrev", NULL,
};

/* A byte count under device.KEY: an integer, or a string with a K/M/G suffix
 * (example shows one in the error). path receives the key's path. */
static int cfg_bytes(struct cfg_ctx *x, json_object *v, const char *key, const char *example, char *path,
		     size_t pathlen, uint64_t *out)
{
	bpath(x, path, pathlen, "device", key);
	if (json_object_is_type(v, json_type_string)) {
		if (pc_parse_u64(json_object_get_string(v), 1, out) != 0)
			return cfg_fail(x, path, "expected bytes, as an integer or a string like \"%s\", got '%s'",
					example, json_object_get_string(v));
		return 0;
	}
	if (json_object_is_type(v, json_type_int))
		return cfg_u64(x, v, path, 0, UINT64_MAX, out);
	return cfg_fail(x, path, "expected bytes, as an integer or a string like \"%s\", got %s", example,
			jtype(v));
}

/* device.max_region_bytes: an integer or "4G". */
static int cfg_region_limit(struct cfg_ctx *x, json_object *v, uint64_t *out)
{
	char path[160], st[32], sm[32];
	uint64_t s;
	int rc = cfg_bytes(x, v, "max_region_bytes", "4G", path, sizeof(path), &s);

	if (rc)
		return rc;
	if (s < CFG_MIN_REGION_LIMIT || s > CFG_MAX_REGION_LIMIT)
		return cfg_fail(x, path, "%" PRIu64 " bytes is out of range %s..%s", s,
				size_text(CFG_MIN_REGION_LIMIT, st, sizeof(st)), size_text(CFG_MAX_REGION_LIMIT, sm, sizeof(sm)));
	*out = s;
	return 0;
}

/* Sim keys: the device's size in bytes, from an integer or "4M". */
static int cfg_sim_size(struct cfg_ctx *x, json_object *v, uint64_t *size)
{
	char path[160];
	uint64_t s;
	int rc = cfg_bytes(x, v, "size", "4M", path, sizeof(path), &s);

	if (rc)
		return rc;
	if (s > CFG_MAX_SIM_SIZE)
		return cfg_fail(x, path, "%" PRIu64 " bytes is more than the 64G a sim device may have", s);
	if (s % 4096)
		return cfg_fail(x, path, "%" PRIu64 " bytes is not a multiple of 4096 (the region's superblocks "
				"take 4 KiB at each end)", s);
	*size = s;
	return 0;
}

static int cfg_sim(struct cfg_ctx *x, json_object *d, struct board_cfg *b, json_object *out,
		   uint32_t *nslots, uint64_t *size)
{
	json_object *v;
	struct pc_geom g;
	char path[160], why[256];
	const char *prof = "honest";
	unsigned bits;
	uint32_t program_us = 20, cache_sectors = 256;
	uint64_t seed = 1;
	double rate = 0.01;
	int rc;

	json_object_object_foreach(d, key, val) {
		if (in_list(key, ident_keys)) {
			if (!json_object_is_type(val, json_type_string) || !json_object_get_string(val)[0])
				return cfg_fail(x, bpath(x, path, sizeof(path), "device", key),
						"expected the string the board's HELLO must say, got %s", jtype(val));
			put(out, key, json_object_get(val));
			continue;
		}
		if (!in_list(key, sim_keys))
			return cfg_unknown_key(x, bsec(x, path, sizeof(path), "device", key), key, sim_keys,
					       strcmp(key, "path") == 0 ? " (\"path\" is for backend \"posix\")" : NULL);
	}
	*size = 4u << 20;
	if ((v = jget(d, "size")) && (rc = cfg_sim_size(x, v, size)))
		return rc;
	if (*size > b->max_region_bytes) {
		char st[32], sm[32];
		return cfg_fail(x, bpath(x, path, sizeof(path), "device", "size"),
				"%s is more than device.max_region_bytes (%s), the largest region the harness "
				"tracks for this board; raise max_region_bytes (up to 64G)",
				size_text(*size, st, sizeof(st)), size_text(b->max_region_bytes, sm, sizeof(sm)));
	}
	if (pc_geom_init(&g, *size, b->record_size, 0, why, sizeof(why)) != 0)
		return cfg_fail(x, bpath(x, path, sizeof(path), "device", "size"), "%s", why);
	*nslots = g.nslots;
	if ((v = jget(d, "profile"))) {
		if ((rc = cfg_str(x, v, bpath(x, path, sizeof(path), "device", "profile"), &prof)))
			return rc;
	}
	why[0] = 0;
	if (sim_profile_parse(prof, &bits, why, sizeof(why)) != 0)
		return cfg_fail(x, bpath(x, path, sizeof(path), "device", "profile"), "%s",
				why[0] ? why : "unknown profile");
	if ((v = jget(d, "program_us")) &&
	    (rc = cfg_u32(x, v, bpath(x, path, sizeof(path), "device", "program_us"), 1, 1000000, &program_us)))
		return rc;
	if ((v = jget(d, "cache_sectors")) &&
	    (rc = cfg_u32(x, v, bpath(x, path, sizeof(path), "device", "cache_sectors"), 1, 1048576,
			  &cache_sectors)))
		return rc;
	if ((v = jget(d, "seed")) &&
	    (rc = cfg_u64(x, v, bpath(x, path, sizeof(path), "device", "seed"), 0, UINT64_MAX, &seed)))
		return rc;
	if ((v = jget(d, "rate"))) {
		bpath(x, path, sizeof(path), "device", "rate");
		if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
			return cfg_fail(x, path, "expected a number (0..1), got %s", jtype(v));
		rate = json_object_get_double(v);
		if (!(rate >= 0.0 && rate <= 1.0))
			return cfg_fail(x, path, "%g is out of range 0..1", rate);
	}
	put(out, "size", json_object_new_int64((int64_t)*size));
	put(out, "profile", json_object_new_string(prof));
	put(out, "program_us", json_object_new_int64(program_us));
	put(out, "cache_sectors", json_object_new_int64(cache_sectors));
	put(out, "seed", json_object_new_uint64(seed));
	/* keep the text the user wrote ("0.01", not 0.010000000000000000208) */
	put(out, "rate", v ? copy(v) : json_object_new_double(rate));
	if ((v = jget(d, "cut_after_sectors"))) {
		uint64_t cut;
		if ((rc = cfg_u64(x, v, bpath(x, path, sizeof(path), "device", "cut_after_sectors"), 1, UINT32_MAX, &cut)))
			return rc;
		put(out, "cut_after_sectors", json_object_new_uint64(cut));
	}
	return 0;
}

/* Posix: the agent is told its device on its own command line; these keys only describe it. */
static int cfg_posix(struct cfg_ctx *x, json_object *d, json_object *out)
{
	char path[160];

	json_object_object_foreach(d, key, val) {
		if (strcmp(key, "backend") == 0 || strcmp(key, "record_size") == 0 ||
		    strcmp(key, "max_region_bytes") == 0)
			continue;
		bpath(x, path, sizeof(path), "device", key);
		if (in_list(key, sim_keys))
			return cfg_fail(x, path, "only for backend \"sim\" (this device is \"posix\")");
		if (!json_object_is_type(val, json_type_string))
			return cfg_fail(x, path, "expected a string (posix device keys are informative), got %s",
					jtype(val));
		put(out, key, json_object_get(val));
	}
	return 0;
}

static int cfg_device(struct cfg_ctx *x, struct board_cfg *b, json_object *out, uint32_t *nslots,
		      uint64_t *size)
{
	json_object *d = bval(x, "device"), *v, *od;
	const char *backend = "sim";
	char path[160];
	int rc;

	*nslots = 0;
	if (d && !json_object_is_type(d, json_type_object))
		return cfg_fail(x, bpath(x, path, sizeof(path), "device", NULL), "expected an object, got %s",
				jtype(d));
	if ((v = jget(d, "backend"))) {
		bpath(x, path, sizeof(path), "device", "backend");
		if ((rc = cfg_str(x, v, path, &backend)))
			return rc;
		if (strcmp(backend, "sim") != 0 && strcmp(backend, "posix") != 0)
			return cfg_fail(x, path, "unknown backend '%s' (known: sim posix)", backend);
	}
	pc_strlcpy(b->backend, backend, sizeof(b->backend));
	b->record_size = 4096;
	if ((v = jget(d, "record_size"))) {
		bpath(x, path, sizeof(path), "device", "record_size");
		if ((rc = cfg_u32(x, v, path, PC_SECTOR, PC_MAX_RECORD_SIZE, &b->record_size)))
			return rc;
		if (b->record_size % PC_SECTOR)
			return cfg_fail(x, path, "%" PRIu32 " is not a multiple of 512", b->record_size);
	}
	b->max_region_bytes = CFG_DEFAULT_MAX_REGION;
	if ((v = jget(d, "max_region_bytes")) && (rc = cfg_region_limit(x, v, &b->max_region_bytes)))
		return rc;
	od = json_object_new_object();
	if (!od)
		return cfg_fail(x, NULL, "out of memory");
	put(out, "device", od);
	put(od, "backend", json_object_new_string(backend));
	put(od, "record_size", json_object_new_int64(b->record_size));
	/* only when given: a campaign.json written before the key existed still
	 * resumes (the engine applies the same default to a missing key) */
	if (jget(d, "max_region_bytes"))
		put(od, "max_region_bytes", json_object_new_int64((int64_t)b->max_region_bytes));
	b->device = od;
	if (!d)
		d = od;		/* all defaults: nothing more to read */
	if (strcmp(backend, "sim") == 0)
		return cfg_sim(x, d, b, od, nslots, size);
	return cfg_posix(x, d, od);
}

static const char *mode_names_list(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int m = PC_MODE_FUA; m < PC_MODE_MAX; m++)
		n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? " " : "",
				      pc_mode_name((enum pc_mode)m));
	return buf;
}

static int cfg_modes(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	json_object *v = bval(x, "modes"), *arr;
	const char *names[PC_MODE_MAX + 1] = { 0 };
	char path[180], list[96];
	size_t n;

	for (int m = PC_MODE_FUA; m < PC_MODE_MAX; m++)
		names[m - PC_MODE_FUA] = pc_mode_name((enum pc_mode)m);
	if (!v) {
		b->modes[0] = PC_MODE_FUA;
		b->modes[1] = PC_MODE_FLUSH;
		b->nmodes = 2;
	} else {
		bpath(x, path, sizeof(path), "modes", NULL);
		if (!json_object_is_type(v, json_type_array))
			return cfg_fail(x, path, "expected an array of mode names (%s), got %s",
					mode_names_list(list, sizeof(list)), jtype(v));
		n = json_object_array_length(v);
		if (n < 1 || n > CFG_MAX_MODES)
			return cfg_fail(x, path, "expected 1 to %d modes, got %zu", CFG_MAX_MODES, n);
		for (size_t i = 0; i < n; i++) {
			json_object *e = json_object_array_get_idx(v, i);
			const char *s, *near;
			int m;

			snprintf(path, sizeof(path), "boards[%u].modes[%zu]%s", x->bi, i,
				 from_defaults(x, "modes", NULL) ? " (from defaults)" : "");
			if (!json_object_is_type(e, json_type_string))
				return cfg_fail(x, path, "expected a mode name, got %s", jtype(e));
			s = json_object_get_string(e);
			m = pc_mode_from_name(s);
			if (m < 0) {
				near = closest(s, names);
				return cfg_fail(x, path, "unknown mode '%s'%s%s%s (known: %s)", s,
						near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "",
						mode_names_list(list, sizeof(list)));
			}
			b->modes[i] = m;
		}
		b->nmodes = (unsigned)n;
	}
	arr = json_object_new_array();
	put(out, "modes", arr);
	for (unsigned i = 0; i < b->nmodes; i++)
		json_object_array_add(arr, json_object_new_string(pc_mode_name((enum pc_mode)b->modes[i])));
	return 0;
}

/* [min, max] with lo <= min <= max <= hi. */
static int cfg_pair(struct cfg_ctx *x, json_object *v, const char *sub, uint32_t lo, uint32_t hi,
		    uint32_t *min, uint32_t *max)
{
	char path[160], epath[180];
	int rc;

	bpath(x, path, sizeof(path), "cut", sub);
	if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) != 2)
		return cfg_fail(x, path, "expected [min, max], got %s", json_object_is_type(v, json_type_array) ?
				"an array of another length" : jtype(v));
	snprintf(epath, sizeof(epath), "%s[0]", path);
	if ((rc = cfg_u32(x, json_object_array_get_idx(v, 0), epath, lo, hi, min)))
		return rc;
	snprintf(epath, sizeof(epath), "%s[1]", path);
	if ((rc = cfg_u32(x, json_object_array_get_idx(v, 1), epath, lo, hi, max)))
		return rc;
	if (*min > *max)
		return cfg_fail(x, path, "min %" PRIu32 " is above max %" PRIu32, *min, *max);
	return 0;
}

/* The cut plans' names, by enum cut_plan. */
static const char *const cut_names[] = { "random", "acks", "flush", "fua", NULL };

const char *config_cut_name(enum cut_plan p)
{
	return (unsigned)p < PC_ARRAY_SIZE(cut_names) ? cut_names[p] : "?";
}

/*
 * How many of plan's I/Os a cycle of mode issues (and so announces): cache
 * flushes (flush: one per flush_every records; journal: one per group of
 * flush_every data records and their commit) or FUA writes (fua, fua+flush:
 * every record; journal: each group's commit record). 0: none.
 */
uint32_t config_cut_ops(enum cut_plan p, int mode, uint32_t records, uint32_t flush_every)
{
	uint64_t g = (uint64_t)flush_every + (mode == PC_MODE_JOURNAL);

	if (p == CUT_FLUSH && (mode == PC_MODE_FLUSH || mode == PC_MODE_JOURNAL))
		return (uint32_t)((records + g - 1) / g);
	if (p == CUT_FUA && (mode == PC_MODE_FUA || mode == PC_MODE_FUA_FLUSH))
		return records;
	if (p == CUT_FUA && mode == PC_MODE_JOURNAL)	/* a group of one record has no commit */
		return (uint32_t)(records / g + (records % g > 1));
	return 0;
}

/*
 * "cut": {"at": "random", "window_ms": [min, max]}, {"at": "acks", "acks":
 * [min, max]}, or {"at": "flush" | "fua", "nth": [min, max], "delay_us": D}.
 */
static int cfg_cut(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	static const char *const random_keys[] = { "at", "window_ms", NULL };
	static const char *const acks_keys[] = { "at", "acks", NULL };
	static const char *const io_keys[] = { "at", "nth", "delay_us", NULL };
	static const char *const *const keys_of[] = { random_keys, acks_keys, io_keys, io_keys };
	static const char *const hint_of[] = { " (only with \"at\": \"random\")", " (only with \"at\": \"acks\")",
					       " (only with \"at\": \"flush\" or \"fua\")" };
	json_object *c = bval(x, "cut"), *v, *oc, *pair;
	const char *at = "random";
	char path[160];
	uint32_t ops = UINT32_MAX;
	int rc, worst = -1;

	b->cut = CUT_RANDOM;
	b->cut_min = 5;
	b->cut_max = 60;
	b->cut_delay_us = 0;
	if (c) {
		if (!json_object_is_type(c, json_type_object))
			return cfg_fail(x, bpath(x, path, sizeof(path), "cut", NULL),
					"expected {\"at\": \"random\", \"window_ms\": [min, max]}, "
					"{\"at\": \"acks\", \"acks\": [min, max]} or "
					"{\"at\": \"flush\" or \"fua\", \"nth\": [min, max], \"delay_us\": D}, got %s",
					jtype(c));
		if ((v = jget(c, "at")) && (rc = cfg_str(x, v, bpath(x, path, sizeof(path), "cut", "at"), &at)))
			return rc;
		for (b->cut = CUT_RANDOM; b->cut <= CUT_FUA && strcmp(at, cut_names[b->cut]); b->cut++)
			;
		if (b->cut > CUT_FUA) {
			const char *near = closest(at, cut_names);

			return cfg_fail(x, bpath(x, path, sizeof(path), "cut", "at"),
					"unknown cut plan '%s'%s%s%s (known: random acks flush fua)", at,
					near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
		}
		json_object_object_foreach(c, key, val) {
			const char *hint = NULL;

			(void)val;
			if (in_list(key, keys_of[b->cut]))
				continue;
			for (int k = 0; k < 3 && !hint; k++)
				if (in_list(key, keys_of[k]))
					hint = hint_of[k];
			return cfg_unknown_key(x, bsec(x, path, sizeof(path), "cut", key), key, keys_of[b->cut], hint);
		}
	}
	if (b->cut == CUT_ACKS) {
		b->cut_min = 1;
		b->cut_max = b->records_per_cycle;
		if ((v = jget(c, "acks")) && (rc = cfg_pair(x, v, "acks", 1, CFG_MAX_ACKS, &b->cut_min, &b->cut_max)))
			return rc;
	} else if (b->cut == CUT_RANDOM) {
		if (c && (v = jget(c, "window_ms")) &&
		    (rc = cfg_pair(x, v, "window_ms", 0, CFG_MAX_MS, &b->cut_min, &b->cut_max)))
			return rc;
		/* The work timeout would fire first: the planned cut could never happen. */
		if (b->cut_max > b->work_timeout_ms)
			return cfg_fail(x, bpath(x, path, sizeof(path), "cut", "window_ms"),
					"the window ends at %" PRIu32 " ms, after work_timeout_ms (%" PRIu32
					"): narrow the window or raise work_timeout_ms", b->cut_max, b->work_timeout_ms);
	} else {
		/* every mode of the board must issue the I/O, and as often as nth may ask */
		const char *what = b->cut == CUT_FLUSH ? "cache flushes" : "FUA writes";

		for (unsigned i = 0; i < b->nmodes; i++) {
			uint32_t n = config_cut_ops(b->cut, b->modes[i], b->records_per_cycle, b->flush_every);

			if (!n)
				return cfg_fail(x, bpath(x, path, sizeof(path), "cut", "at"),
						"mode %s issues no %s: the plan \"%s\" needs modes that do (%s)",
						pc_mode_name((enum pc_mode)b->modes[i]), what, at,
						b->cut == CUT_FLUSH ? "flush, journal" : "fua, fua+flush, journal");
			if (n < ops) {
				ops = n;
				worst = b->modes[i];
			}
		}
		b->cut_min = 1;
		b->cut_max = ops;
		if ((v = jget(c, "nth")) && (rc = cfg_pair(x, v, "nth", 1, CFG_MAX_ACKS, &b->cut_min, &b->cut_max)))
			return rc;
		if (b->cut_max > ops)
			return cfg_fail(x, bpath(x, path, sizeof(path), "cut", "nth"),
					"%" PRIu32 " is more than the %" PRIu32 " %s a cycle of mode %s issues "
					"(records_per_cycle %" PRIu32 ", flush_every %" PRIu32 "): lower nth", b->cut_max,
					ops, what, pc_mode_name((enum pc_mode)worst), b->records_per_cycle, b->flush_every);
		if ((v = jget(c, "delay_us")) &&
		    (rc = cfg_u32(x, v, bpath(x, path, sizeof(path), "cut", "delay_us"), 0, CFG_MAX_DELAY_US,
				  &b->cut_delay_us)))
			return rc;
		if (b->cut_delay_us / 1000 >= b->work_timeout_ms)
			return cfg_fail(x, bpath(x, path, sizeof(path), "cut", "delay_us"),
					"%" PRIu32 " us is not within work_timeout_ms (%" PRIu32 ")", b->cut_delay_us,
					b->work_timeout_ms);
	}
	oc = json_object_new_object();
	pair = json_object_new_array();
	put(out, "cut", oc);
	put(oc, "at", json_object_new_string(cut_names[b->cut]));
	put(oc, b->cut == CUT_RANDOM ? "window_ms" : b->cut == CUT_ACKS ? "acks" : "nth", pair);
	json_object_array_add(pair, json_object_new_int64(b->cut_min));
	json_object_array_add(pair, json_object_new_int64(b->cut_max));
	if (b->cut == CUT_FLUSH || b->cut == CUT_FUA)
		put(oc, "delay_us", json_object_new_int64(b->cut_delay_us));
	return 0;
}

static const uint32_t bauds[] = { 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600, 1500000, 3000000 };

/*
 * "link": {"type": "tcp"} (the default: the agent connects to "listen"), or
 * {"type": "serial", "device": "/dev/ttyUSB0", "baud": 115200,
 *  "boot_patterns": ["U-Boot", "Starting kernel", "Linux version"]}; the
 * device may be a console exported over the network: "tcp://HOST:PORT",
 * "telnet://HOST:PORT", "rfc2217://HOST:PORT" (netserial.h). A tcp link may
 * name the board's console too ("console", with "baud" and "boot_patterns"):
 * it is captured into the cycle's console log and times the boot, and never
 * carries the protocol.
 */
static int cfg_link(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	static const char *const tcp_keys[] = { "type", "console", "baud", "boot_patterns", NULL };
	static const char *const serial_keys[] = { "type", "device", "baud", "boot_patterns", NULL };
	json_object *l = bval(x, "link"), *v, *ol, *arr;
	const char *type = "tcp", *dev;
	char path[160];
	int rc;

	b->link_serial = 0;
	b->console_capture = 0;
	b->serial_baud = 115200;
	b->nboot_patterns = 0;
	if (l) {
		if (!json_object_is_type(l, json_type_object))
			return cfg_fail(x, bpath(x, path, sizeof(path), "link", NULL),
					"expected {\"type\": \"tcp\"} or {\"type\": \"serial\", \"device\": ...}, got %s",
					jtype(l));
		if ((v = jget(l, "type")) && (rc = cfg_str(x, v, bpath(x, path, sizeof(path), "link", "type"), &type)))
			return rc;
		if (strcmp(type, "tcp") && strcmp(type, "serial"))
			return cfg_fail(x, bpath(x, path, sizeof(path), "link", "type"),
					"unknown link type '%s' (known: tcp serial)", type);
		b->link_serial = !strcmp(type, "serial");
		json_object_object_foreach(l, key, val) {
			(void)val;
			if (!in_list(key, b->link_serial ? serial_keys : tcp_keys))
				return cfg_unknown_key(x, bsec(x, path, sizeof(path), "link", key), key,
						       b->link_serial ? serial_keys : tcp_keys, NULL);
		}
	}
	if (!b->link_serial && l && !jget(l, "console") && (jget(l, "baud") || jget(l, "boot_patterns")))
		return cfg_fail(x, bpath(x, path, sizeof(path), "link", NULL),
				"'baud' and 'boot_patterns' on a tcp link are for its 'console': name it (the board's "
				"serial console to capture, e.g. /dev/ttyUSB0 or tcp://HOST:PORT)");
	b->console_capture = !b->link_serial && l && jget(l, "console");
	if (b->link_serial || b->console_capture) {
		const char *dkey = b->link_serial ? "device" : "console";

		v = jget(l, dkey);
		if (!v)
			return cfg_fail(x, bpath(x, path, sizeof(path), "link", NULL),
					"missing 'device' (the board's serial console, e.g. /dev/ttyUSB0)");
		if ((rc = cfg_str(x, v, bpath(x, path, sizeof(path), "link", dkey), &dev)))
			return rc;
		if (!dev[0])
			return cfg_fail(x, path, "empty: name the board's serial console, e.g. /dev/ttyUSB0 or "
					"tcp://HOST:PORT");
		if (strlen(dev) >= sizeof(b->serial_device))
			return cfg_fail(x, path, "path too long");
		if (netserial_is_url(dev)) {
			char host[256], serv[8], why[160];
			enum ns_proto proto;

			if (netserial_parse(dev, &proto, host, sizeof(host), serv, sizeof(serv), why, sizeof(why)))
				return cfg_fail(x, path, "'%s': %s", dev, why);
		} else if (strstr(dev, "://")) {
			return cfg_fail(x, path, "'%s': expected a tty path, or tcp://HOST:PORT, telnet://HOST:PORT or "
					"rfc2217://HOST:PORT", dev);
		}
		pc_strlcpy(b->serial_device, dev, sizeof(b->serial_device));
		if ((v = jget(l, "baud"))) {
			size_t i;
			if ((rc = cfg_u32(x, v, bpath(x, path, sizeof(path), "link", "baud"), 1, 4000000, &b->serial_baud)))
				return rc;
			for (i = 0; i < PC_ARRAY_SIZE(bauds) && bauds[i] != b->serial_baud; i++)
				;
			if (i == PC_ARRAY_SIZE(bauds))
				return cfg_fail(x, path, "%u is not a supported rate (9600 19200 38400 57600 115200 "
						"230400 460800 921600 1500000 3000000)", b->serial_baud);
		}
		if ((v = jget(l, "boot_patterns"))) {
			bpath(x, path, sizeof(path), "link", "boot_patterns");
			if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) > 8)
				return cfg_fail(x, path, "expected an array of at most 8 strings");
			for (size_t i = 0; i < json_object_array_length(v); i++) {
				json_object *e = json_object_array_get_idx(v, i);
				if (!json_object_is_type(e, json_type_string) || !json_object_get_string_len(e) ||
				    (size_t)json_object_get_string_len(e) >= sizeof(b->boot_patterns[0]))
					return cfg_fail(x, path, "entry %zu: expected a non-empty string of at most 63 "
							"characters", i);
				pc_strlcpy(b->boot_patterns[b->nboot_patterns++], json_object_get_string(e),
					   sizeof(b->boot_patterns[0]));
			}
		}
	}
	ol = json_object_new_object();
	put(ol, "type", json_object_new_string(b->link_serial ? "serial" : "tcp"));
	if (b->link_serial || b->console_capture) {
		put(ol, b->link_serial ? "device" : "console", json_object_new_string(b->serial_device));
		put(ol, "baud", json_object_new_int64(b->serial_baud));
		arr = json_object_new_array();
		for (unsigned i = 0; i < b->nboot_patterns; i++)
			json_object_array_add(arr, json_object_new_string(b->boot_patterns[i]));
		put(ol, "boot_patterns", arr);
	}
	put(out, "link", ol);
	return 0;
}

/* "verify": {"full_every": K, "cold_sample": N} */
static int cfg_verify(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	static const char *const keys[] = { "full_every", "cold_sample", NULL };
	json_object *v = bval(x, "verify"), *f, *ov;
	char path[160];
	int rc;

	b->full_every = 1;
	b->cold_sample = 64;
	if (v) {
		if (!json_object_is_type(v, json_type_object))
			return cfg_fail(x, bpath(x, path, sizeof(path), "verify", NULL),
					"expected {\"full_every\": K, \"cold_sample\": N}, got %s", jtype(v));
		json_object_object_foreach(v, key, val) {
			(void)val;
			if (!in_list(key, keys))
				return cfg_unknown_key(x, bsec(x, path, sizeof(path), "verify", key), key, keys, NULL);
		}
		if ((f = jget(v, "full_every")) &&
		    (rc = cfg_u32(x, f, bpath(x, path, sizeof(path), "verify", "full_every"), 1, 1000000, &b->full_every)))
			return rc;
		if ((f = jget(v, "cold_sample")) &&
		    (rc = cfg_u32(x, f, bpath(x, path, sizeof(path), "verify", "cold_sample"), 0,
				  PC_PROTO_MAX_RANGES - 2, &b->cold_sample)))
			return rc;
	}
	ov = json_object_new_object();
	put(ov, "full_every", json_object_new_int64(b->full_every));
	put(ov, "cold_sample", json_object_new_int64(b->cold_sample));
	put(out, "verify", ov);
	return 0;
}

/*
 * "policy": {"MODE": {"torn": "allowed"|"violation", "torn_sector": ...}}:
 * whether an unacknowledged torn record or torn sector is a violation in that
 * mode. Acknowledged ones always are. Defaults follow DESIGN section 6: a
 * reliable write (fua, fua+flush, relwr) promises sector atomicity; whole-record
 * atomicity is opt-in ("torn": "violation"), for parts whose REL_WR_SEC_C covers
 * a record.
 */
static int cfg_policy(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	static const char *const classes[] = { "torn", "torn_sector", "unclassified", NULL };
	json_object *p = bval(x, "policy"), *op;
	char path[160];

	for (int m = 0; m < PC_MODE_MAX; m++) {
		/* reliable write keeps old data until the new is written, per sector
		 * (REL_WR_SEC_C is 1 on most parts): a record of several sectors may
		 * tear between them unless the policy says the part promises more */
		b->torn_violation[m] = 0;
		b->torn_sector_violation[m] = m == PC_MODE_FUA || m == PC_MODE_FUA_FLUSH || m == PC_MODE_RELWR;
		/* damage whose bytes never came is shown, not held against the part */
		b->unclassified_violation[m] = 0;
	}
	if (p) {
		if (!json_object_is_type(p, json_type_object))
			return cfg_fail(x, bpath(x, path, sizeof(path), "policy", NULL),
					"expected {\"MODE\": {\"torn\": \"allowed\"|\"violation\", ...}}, got %s", jtype(p));
		json_object_object_foreach(p, mode, sec) {
			int m = pc_mode_from_name(mode);

			bpath(x, path, sizeof(path), "policy", mode);
			if (m < 0)
				return cfg_fail(x, path, "unknown mode '%s' (known: fua fua+flush flush journal none relwr relwr-off)", mode);
			if (!json_object_is_type(sec, json_type_object))
				return cfg_fail(x, path, "expected {\"torn\": ..., \"torn_sector\": ...}, got %s", jtype(sec));
			json_object_object_foreach(sec, cls, val) {
				char cpath[200];
				const char *s;

				snprintf(cpath, sizeof(cpath), "%s.%s", path, cls);
				if (!in_list(cls, classes))
					return cfg_unknown_key(x, path, cls, classes, NULL);
				if (!json_object_is_type(val, json_type_string))
					return cfg_fail(x, cpath, "expected \"allowed\" or \"violation\", got %s", jtype(val));
				s = json_object_get_string(val);
				if (strcmp(s, "allowed") && strcmp(s, "violation"))
					return cfg_fail(x, cpath, "expected \"allowed\" or \"violation\", got '%s'", s);
				(strcmp(cls, "torn") == 0 ? b->torn_violation :
				 strcmp(cls, "torn_sector") == 0 ? b->torn_sector_violation :
				 b->unclassified_violation)[m] = strcmp(s, "violation") == 0;
			}
		}
	}
	op = json_object_new_object();
	for (int m = PC_MODE_FUA; m < PC_MODE_MAX; m++) {
		json_object *e = json_object_new_object();
		put(e, "torn", json_object_new_string(b->torn_violation[m] ? "violation" : "allowed"));
		put(e, "torn_sector", json_object_new_string(b->torn_sector_violation[m] ? "violation" : "allowed"));
		put(e, "unclassified", json_object_new_string(b->unclassified_violation[m] ? "violation" : "allowed"));
		put(op, pc_mode_name((enum pc_mode)m), e);
	}
	put(out, "policy", op);
	return 0;
}

static const struct {
	const char *key;
	uint32_t def, min, max;
	size_t off;
} board_u32[] = {
	{ "records_per_cycle", 200, 1, 1048576, offsetof(struct board_cfg, records_per_cycle) },
	{ "flush_every", 8, 1, 1048576, offsetof(struct board_cfg, flush_every) },
	{ "queue_depth", 4, 1, 32, offsetof(struct board_cfg, queue_depth) },
	{ "boot_timeout_ms", 10000, 1, CFG_MAX_MS, offsetof(struct board_cfg, boot_timeout_ms) },
	{ "boot_retries", 2, 0, 100, offsetof(struct board_cfg, boot_retries) },
	{ "verify_timeout_ms", 60000, 1, CFG_MAX_MS, offsetof(struct board_cfg, verify_timeout_ms) },
	{ "work_timeout_ms", 60000, 1, CFG_MAX_MS, offsetof(struct board_cfg, work_timeout_ms) },
	{ "off_ms", 20, 0, 600000, offsetof(struct board_cfg, off_ms) },
};

static int cfg_board(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	json_object *v;
	char path[160];
	const char *pat = "sequential";
	uint32_t nslots;
	uint64_t size = 0;
	int rc;

	json_object_object_foreach(x->merged, key, val) {
		(void)val;
		if (!in_list(key, board_keys))
			return cfg_unknown_key(x, bpath(x, path, sizeof(path), NULL, NULL), key, board_keys, NULL);
	}
	v = bval(x, "name");
	if (!v)
		return cfg_fail(x, bpath(x, path, sizeof(path), NULL, NULL), "missing required key 'name'");
	if ((rc = cfg_name(x, v, bpath(x, path, sizeof(path), "name", NULL), b->name, sizeof(b->name))))
		return rc;
	put(out, "name", json_object_new_string(b->name));
	if ((rc = cfg_relay(x, b, out)) || (rc = cfg_device(x, b, out, &nslots, &size)))
		return rc;
	if ((v = bval(x, "pattern"))) {
		bpath(x, path, sizeof(path), "pattern", NULL);
		if ((rc = cfg_str(x, v, path, &pat)))
			return rc;
		if (pc_pattern_from_name(pat) < 0)
			return cfg_fail(x, path, "unknown pattern '%s' (known: sequential random)", pat);
	}
	b->pattern = pc_pattern_from_name(pat);
	put(out, "pattern", json_object_new_string(pat));
	/* the io audit: "auto" (use it where the board can see its requests) or
	 * "require" (a cycle whose requests could not be seen, or were not what
	 * its mode promises, is an INFRA_ERROR). Kept in the resolved
	 * configuration only when given: older campaigns resume unchanged. */
	if ((v = bval(x, "audit"))) {
		const char *a;

		bpath(x, path, sizeof(path), "audit", NULL);
		if ((rc = cfg_str(x, v, path, &a)))
			return rc;
		if (strcmp(a, "auto") && strcmp(a, "require"))
			return cfg_fail(x, path, "'%s': expected \"auto\" or \"require\"", a);
		b->audit_require = !strcmp(a, "require");
		put(out, "audit", json_object_new_string(a));
	}
	if ((rc = cfg_modes(x, b, out)))
		return rc;
	for (size_t i = 0; i < PC_ARRAY_SIZE(board_u32); i++) {
		uint32_t *field = (uint32_t *)((char *)b + board_u32[i].off);

		*field = board_u32[i].def;
		if (board_u32[i].off == offsetof(struct board_cfg, boot_timeout_ms))
			b->boot_timeout_given = bval(x, board_u32[i].key) != NULL;
		if ((v = bval(x, board_u32[i].key)) &&
		    (rc = cfg_u32(x, v, bpath(x, path, sizeof(path), board_u32[i].key, NULL),
				  board_u32[i].min, board_u32[i].max, field)))
			return rc;
		put(out, board_u32[i].key, json_object_new_int64(*field));
	}
	/* A cycle must not write any slot twice, or the verdict cannot tell its records apart. */
	if (nslots && b->records_per_cycle > nslots) {
		char st[32];

		return cfg_fail(x, bpath(x, path, sizeof(path), "records_per_cycle", NULL),
				"%" PRIu32 " exceeds the %" PRIu32 " slots of a %s sim device with %" PRIu32
				"-byte records (a cycle must not write any slot twice)",
				b->records_per_cycle, nslots, size_text(size, st, sizeof(st)), b->record_size);
	}
	if ((rc = cfg_verify(x, b, out)) || (rc = cfg_policy(x, b, out)) || (rc = cfg_link(x, b, out)))
		return rc;
	return cfg_cut(x, b, out);
}

/* ---- the document ---- */

static const char *const top_keys[] = { "campaign", "cycles", "seed", "listen", "key_file", "incomplete_infra_share",
					  "defaults", "boards", NULL };

static int cfg_defaults(struct cfg_ctx *x, json_object *d)
{
	if (!json_object_is_type(d, json_type_object))
		return cfg_fail(x, "defaults", "expected an object of board keys, got %s", jtype(d));
	if (jget(d, "name"))
		return cfg_fail(x, "defaults", "'name' cannot have a default: every board needs its own");
	return cfg_check_keys(x, d, "defaults", board_keys);
}

static int cfg_boards(struct cfg_ctx *x, json_object *arr, struct campaign_cfg *c, json_object *outarr)
{
	char path[160];
	size_t n;
	int rc;

	if (!json_object_is_type(arr, json_type_array))
		return cfg_fail(x, "boards", "expected an array of board objects, got %s", jtype(arr));
	n = json_object_array_length(arr);
	if (n < 1 || n > CFG_MAX_BOARDS)
		return cfg_fail(x, "boards", "expected 1 to %u boards, got %zu", CFG_MAX_BOARDS, n);
	c->boards = calloc(n, sizeof(*c->boards));
	if (!c->boards)
		return cfg_fail(x, NULL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_object *b = json_object_array_get_idx(arr, i), *out;

		x->bi = (unsigned)i;
		x->merged = NULL;
		if (!json_object_is_type(b, json_type_object))
			return cfg_fail(x, bpath(x, path, sizeof(path), NULL, NULL), "expected an object, got %s",
					jtype(b));
		out = json_object_new_object();
		x->merged = cfg_merge(x->defaults, b);
		if (!out || !x->merged) {
			json_object_put(out);
			return cfg_fail(x, NULL, "out of memory");
		}
		json_object_array_add(outarr, out);
		c->nboards = (unsigned)i + 1;
		rc = cfg_board(x, &c->boards[i], out);
		json_object_put(x->merged);
		x->merged = NULL;
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(c->boards[j].name, c->boards[i].name) == 0)
				return cfg_fail(x, bpath(x, path, sizeof(path), "name", NULL),
						"'%s' is already the name of boards[%zu]: names must be unique",
						c->boards[i].name, j);
	}
	return 0;
}

static int cfg_top(struct cfg_ctx *x, json_object *doc, struct campaign_cfg *c)
{
	json_object *v, *root, *boards, *share = NULL;
	const char *listen = "127.0.0.1:0";
	char host[128];
	uint16_t port;
	int rc;

	if (!json_object_is_type(doc, json_type_object))
		return cfg_fail(x, NULL, "expected a JSON object at the top, got %s", jtype(doc));
	if ((rc = cfg_check_keys(x, doc, NULL, top_keys)))
		return rc;
	if (!(v = jget(doc, "campaign")))
		return cfg_fail(x, NULL, "missing required key 'campaign' (the campaign's name)");
	if ((rc = cfg_name(x, v, "campaign", c->name, sizeof(c->name))))
		return rc;
	if (!(v = jget(doc, "cycles")))
		return cfg_fail(x, NULL, "missing required key 'cycles' (power cycles to run, 1..%u)",
				CFG_MAX_CYCLES);
	if ((rc = cfg_u32(x, v, "cycles", 1, CFG_MAX_CYCLES, &c->cycles)))
		return rc;
	c->seed = 1;
	if ((v = jget(doc, "seed")) && (rc = cfg_u64(x, v, "seed", 0, UINT64_MAX, &c->seed)))
		return rc;
	if ((v = jget(doc, "listen"))) {
		if ((rc = cfg_str(x, v, "listen", &listen)))
			return rc;
		if (strlen(listen) >= sizeof(c->listen) ||
		    pc_parse_hostport(listen, host, sizeof(host), &port) != 0)
			return cfg_fail(x, "listen", "expected \"host:port\" (port 0 picks a free one), got '%s'",
					listen);
	}
	pc_strlcpy(c->listen, listen, sizeof(c->listen));
	if ((v = jget(doc, "key_file"))) {
		const char *kf;
		if ((rc = cfg_str(x, v, "key_file", &kf)))
			return rc;
		if (!kf[0] || strlen(kf) >= sizeof(c->key_file))
			return cfg_fail(x, "key_file", "expected the path of the campaign's key file");
		pc_strlcpy(c->key_file, kf, sizeof(c->key_file));
	}
	c->incomplete_infra_share = CFG_DEFAULT_INCOMPLETE_INFRA_SHARE;
	if ((share = jget(doc, "incomplete_infra_share"))) {
		/* a share, not a percentage: 10 for 10% is the typo to catch */
		if (!json_object_is_type(share, json_type_double) && !json_object_is_type(share, json_type_int))
			return cfg_fail(x, "incomplete_infra_share", "expected a number from 0 to 1 (the share of "
					"a device's cycles that may be INFRA_ERROR: 0.1 is 10%%), got %s", jtype(share));
		c->incomplete_infra_share = json_object_get_double(share);
		if (!(c->incomplete_infra_share >= 0.0 && c->incomplete_infra_share <= 1.0))
			return cfg_fail(x, "incomplete_infra_share", "%g is out of range 0..1 (a share of the cycles: "
					"0.1 is 10%%)", c->incomplete_infra_share);
	}
	if ((x->defaults = jget(doc, "defaults")) && (rc = cfg_defaults(x, x->defaults)))
		return rc;
	if (!(v = jget(doc, "boards")))
		return cfg_fail(x, NULL, "missing required key 'boards' (an array of 1 to %u boards)",
				CFG_MAX_BOARDS);
	root = json_object_new_object();
	boards = json_object_new_array();
	if (!root || !boards) {
		json_object_put(root);
		json_object_put(boards);
		return cfg_fail(x, NULL, "out of memory");
	}
	c->root = root;
	put(root, "campaign", json_object_new_string(c->name));
	put(root, "cycles", json_object_new_int64(c->cycles));
	put(root, "seed", json_object_new_uint64(c->seed));
	put(root, "listen", json_object_new_string(c->listen));
	/* only when given, as the user wrote it ("0.05"): a campaign.json from
	 * before the key still resumes, and the report applies the same default */
	if (share)
		put(root, "incomplete_infra_share", copy(share));
	put(root, "boards", boards);
	return cfg_boards(x, v, c, boards);
}

static void offset_to_linecol(const char *text, size_t off, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && text[i]; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

__attribute__((format(printf, 4, 5)))
static int cfg_syntax(struct cfg_ctx *x, const char *text, size_t off, const char *fmt, ...)
{
	unsigned line, col;
	va_list ap;
	int n;

	offset_to_linecol(text, off, &line, &col);
	n = snprintf(x->err, x->errlen, "%s:%u:%u: JSON syntax error: ", x->file, line, col);
	if (n >= 0 && (size_t)n < x->errlen) {
		va_start(ap, fmt);
		vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* The offset of an integer literal above 2^64 - 1 in a JSON text that
 * parsed, or (size_t)-1: json-c saturates one silently. */
static size_t big_int(const char *text)
{
	static const char max[] = "18446744073709551615";
	int in_str = 0;

	for (size_t i = 0; text[i]; i++) {
		size_t j, n;

		if (in_str) {
			if (text[i] == '\\' && text[i + 1])
				i++;
			else if (text[i] == '"')
				in_str = 0;
			continue;
		}
		if (text[i] == '"') {
			in_str = 1;
			continue;
		}
		if (text[i] < '0' || text[i] > '9')
			continue;
		for (j = i; text[j] >= '0' && text[j] <= '9'; j++)
			;
		n = j - i;
		/* an integer: no fraction or exponent follows, none came before */
		if (text[j] != '.' && text[j] != 'e' && text[j] != 'E' &&
		    (n > sizeof(max) - 1 || (n == sizeof(max) - 1 && memcmp(text + i, max, n) > 0)))
			return i > 0 && text[i - 1] == '-' ? i - 1 : i;
		i = j;
		while (text[i] && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.' || text[i] == 'e' ||
				   text[i] == 'E' || text[i] == '+' || text[i] == '-'))
			i++;
		i--;
	}
	return (size_t)-1;
}

static int cfg_json(struct cfg_ctx *x, const char *text, json_object **out)
{
	size_t len = strlen(text), end;
	struct json_tokener *tok;
	enum json_tokener_error jerr;
	json_object *doc;

	*out = NULL;
	if (text[strspn(text, " \t\r\n")] == 0)
		return cfg_fail(x, NULL, "empty file: expected a JSON object with \"campaign\", \"cycles\" "
				"and \"boards\"");
	if (len > CFG_MAX_FILE)
		return cfg_fail(x, NULL, "%zu bytes is too large for a configuration", len);
	tok = json_tokener_new();
	if (!tok)
		return cfg_fail(x, NULL, "out of memory");
	/* trailing data is checked below, to say so rather than "unexpected character" */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
	doc = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!doc) {
		if (jerr == json_tokener_continue || jerr == json_tokener_success)
			return cfg_syntax(x, text, len, "unexpected end of file (unclosed object, array or string?)");
		return cfg_syntax(x, text, end, "%s", json_tokener_error_desc(jerr));
	}
	end += strspn(text + end, " \t\r\n");
	if (text[end]) {
		json_object_put(doc);
		return cfg_syntax(x, text, end, "trailing data after the JSON document");
	}
	if ((end = big_int(text)) != (size_t)-1) {
		json_object_put(doc);
		return cfg_syntax(x, text, end, "%.*s is past the largest integer, 18446744073709551615",
				  (int)(strspn(text + end + 1, "0123456789") + 1), text + end);
	}
	*out = doc;
	return 0;
}

int config_parse(const char *text, const char *name, struct campaign_cfg *c, char *err, size_t errlen)
{
	struct cfg_ctx x = { .file = name, .err = err, .errlen = errlen };
	json_object *doc = NULL;
	int rc;

	memset(c, 0, sizeof(*c));
	if (errlen)
		err[0] = 0;
	pc_strlcpy(c->path, name, sizeof(c->path));
	rc = cfg_json(&x, text, &doc);
	if (rc == 0)
		rc = cfg_top(&x, doc, c);
	json_object_put(doc);
	if (rc)
		config_free(c);
	return rc;
}

int config_load(const char *path, struct campaign_cfg *c, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd, rc;

	memset(c, 0, sizeof(*c));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0)
		goto fail_errno;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		goto fail_errno;
	}
	if (st.st_size > CFG_MAX_FILE) {
		snprintf(err, errlen, "%s: %lld bytes is too large for a configuration", path,
			 (long long)st.st_size);
		rc = -EFBIG;
		goto out;
	}
	buf = malloc(CFG_MAX_FILE + 1);
	if (!buf)
		goto fail_errno;
	/* read to EOF rather than trusting st_size: it may be a pipe */
	while ((n = read(fd, buf + len, CFG_MAX_FILE + 1 - len)) > 0 && len + (size_t)n <= CFG_MAX_FILE)
		len += (size_t)n;
	if (n < 0)
		goto fail_errno;
	if (n > 0) {
		snprintf(err, errlen, "%s: too large for a configuration", path);
		rc = -EFBIG;
		goto out;
	}
	buf[len] = 0;
	if (strlen(buf) != len) {
		snprintf(err, errlen, "%s: contains a NUL byte: not a text file", path);
		rc = -EINVAL;
		goto out;
	}
	rc = config_parse(buf, path, c, err, errlen);
	goto out;
fail_errno:
	rc = -errno;
	snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}

void config_free(struct campaign_cfg *c)
{
	if (!c)
		return;
	json_object_put(c->root);
	free(c->boards);
	memset(c, 0, sizeof(*c));
}

/* "/dev/disk/by-partlabel/x" and "PARTLABEL=x" name the same device: the
 * spec form of both (by-partuuid, by-label, by-uuid alike), else s itself. */
static const char *spec_form(const char *s, char *buf, size_t len)
{
	static const char *const by[][2] = {
		{ "/dev/disk/by-partlabel/", "PARTLABEL=" }, { "/dev/disk/by-partuuid/", "PARTUUID=" },
		{ "/dev/disk/by-label/", "LABEL=" }, { "/dev/disk/by-uuid/", "UUID=" },
	};

	for (size_t i = 0; i < PC_ARRAY_SIZE(by); i++)
		if (!strncmp(s, by[i][0], strlen(by[i][0]))) {
			snprintf(buf, len, "%s%s", by[i][1], s + strlen(by[i][0]));
			return buf;
		}
	return s;
}

static const char *hello_str(json_object *o, const char *key)
{
	json_object *v = jget(o, key);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

int config_device_check(const struct board_cfg *b, json_object *hello, char *why, size_t len)
{
	json_object *dev = jget(hello, "device"), *v;
	const char *backend = hello_str(hello, "backend"), *want;
	char w[PATH_MAX + 32], h[PATH_MAX + 32];

	/* the backend is not compared: a board whose relay starts an agent on
	 * an emulated card (the tests' stand-in for real hardware) is a posix
	 * board to the configuration and a sim device to its agent */
	(void)backend;
	for (size_t i = 0; ident_keys[i]; i++) {
		const char *got;

		if (!(v = jget(b->device, ident_keys[i])) || !json_object_is_type(v, json_type_string))
			continue;
		want = json_object_get_string(v);
		got = hello_str(dev, ident_keys[i]);
		if (!got) {
			snprintf(why, len, "the configuration says device.%s \"%.100s\" but the agent's HELLO names no %s "
				 "(the device it opened: %.200s)", ident_keys[i], want, ident_keys[i],
				 hello_str(dev, "path") ? hello_str(dev, "path") : "?");
			return 1;
		}
		if (strcasecmp(want, got)) {
			snprintf(why, len, "the agent opened a device whose %s is \"%.100s\" but the configuration says "
				 "device.%s \"%.100s\" (the device it opened: %.200s): the wrong card, or the wrong "
				 "board's configuration", ident_keys[i], got, ident_keys[i], want,
				 hello_str(dev, "path") ? hello_str(dev, "path") : "?");
			return 1;
		}
	}
	if (!strcmp(b->backend, "posix") && (v = jget(b->device, "path")) && json_object_is_type(v, json_type_string)) {
		/* what the agent was told (--device), the node it opened, the region's path */
		const char *seen[3] = { hello_str(dev, "spec"), hello_str(dev, "path"),
					hello_str(jget(hello, "region"), "path") };

		want = spec_form(json_object_get_string(v), w, sizeof(w));
		for (size_t i = 0; i < PC_ARRAY_SIZE(seen); i++)
			if (seen[i] && !strcmp(spec_form(seen[i], h, sizeof(h)), want))
				return 0;
		snprintf(why, len, "the configuration says device.path \"%.200s\" but the agent opened %.200s (told "
			 "--device %.200s): start the agent with --device %.200s, or fix the configuration",
			 json_object_get_string(v), seen[1] ? seen[1] : seen[2] ? seen[2] : "?",
			 seen[0] ? seen[0] : "?", json_object_get_string(v));
		return 1;
	}
	return 0;
}

/* ---- real-board warnings (config_warnings) ---- */

/* A board whose relay or device is real hardware, not the sim or a VM. */
static int cfg_real_board(const struct board_cfg *b)
{
	static const char *const real_relays[] = { "gpiod", "hidrelay", "lcus", "pdudaemon", NULL };

	/* a posix device behind a qemu relay is a virtual machine's disk */
	return in_list(b->relay_driver, real_relays) ||
	       (!strcmp(b->backend, "posix") && strcmp(b->relay_driver, "qemu") && strcmp(b->relay_driver, "sim"));
}

__attribute__((format(printf, 4, 5)))
static void cfg_warn(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, len - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used += (size_t)n < len - *used ? (size_t)n : len - *used;
	if (*used < len - 1) {
		buf[(*used)++] = '\n';
		buf[*used] = 0;
	}
}

unsigned config_warnings(const struct campaign_cfg *c, char *buf, size_t len)
{
	char host[128], tcp[256] = "";
	size_t used = 0, tl = 0;
	unsigned n = 0;
	uint16_t port = 0;

	if (!len)
		return 0;
	buf[0] = 0;
	for (unsigned i = 0; i < c->nboards; i++) {
		const struct board_cfg *b = &c->boards[i];

		if (!cfg_real_board(b))
			continue;
		if (!b->link_serial && tl < sizeof(tcp))
			tl += (size_t)snprintf(tcp + tl, sizeof(tcp) - tl, "%s%s", tl ? ", " : "", b->name);
		if (b->off_ms < CFG_REAL_OFF_MS) {
			cfg_warn(buf, len, &used, "%s: boards[%u].off_ms: %" PRIu32 " ms suits only the sim: board %s "
				 "is real, and it must stay off until its capacitors have drained, or a cut is only a "
				 "brown-out; measure the board's hold-up time (how long its supply rail stays up after "
				 "the relay opens) and give that plus a margin (typically %u ms or more)", c->path, i,
				 b->off_ms, b->name, CFG_REAL_OFF_MS);
			n++;
		}
		if (!b->boot_timeout_given) {
			cfg_warn(buf, len, &used, "%s: boards[%u].boot_timeout_ms: the default %" PRIu32 " ms is a "
				 "guess for the sim: board %s is real; measure its boot time (power on to the agent's "
				 "HELLO, several times) and give the longest plus a margin, or a slow boot becomes a "
				 "BOOT_FAIL of the device", c->path, i, b->boot_timeout_ms, b->name);
			n++;
		}
	}
	if (tcp[0] && pc_parse_hostport(c->listen, host, sizeof(host), &port) == 0) {
		if (!strncmp(host, "127.", 4) || !strcmp(host, "::1") || !strcmp(host, "localhost")) {
			cfg_warn(buf, len, &used, "%s: listen: %s suits only the sim: the agent of a real board (%s) "
				 "connects over the network and cannot reach this host's loopback; give an address "
				 "the board can reach (this host's address on the lab network, or \"0.0.0.0:PORT\")",
				 c->path, c->listen, tcp);
			n++;
		}
		if (!port) {
			cfg_warn(buf, len, &used, "%s: listen: port 0 picks a new port each run, which the agent of a "
				 "real board (%s) cannot know; give a fixed port, the one its --connect names (for "
				 "example 7878)", c->path, tcp);
			n++;
		}
	}
	return n;
}

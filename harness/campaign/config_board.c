/*
 * config_board.c - one board's sections, each checked and written out again
 * with every default filled in: relay, device (sim or posix), modes, cut,
 * link, verify, policy.
 */
#include "harness/campaign/config_board.h"
#include "harness/campaign/config_board_cfg.h"
#include "harness/campaign/config_limits.h"
#include "harness/campaign/config_read.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "relay/relay.h"
#include "sim/emmc.h"
#include "harness/link/netserial.h"
#include "harness/results/limits.h"
#include "harness/results/verdict.h"

#define CFG_MAX_SIM_SIZE	(64ull << 30)	/* a typo like "4T" must not fill the disk */
#define CFG_MAX_MS		86400000u	/* one day: any timeout longer is a typo */
#define CFG_MAX_ACKS		10000000u
#define CFG_MAX_DELAY_US	1000000u	/* cut.delay_us: a second after the flush or FUA write starts */

/* ---- board sections ---- */

const char *const cfg_board_keys[] = {
	"name", "relay", "device", "pattern", "modes", "records_per_cycle", "flush_every",
	"queue_depth", "cut", "boot_timeout_ms", "boot_retries", "verify_timeout_ms",
	"work_timeout_ms", "off_ms", "verify", "policy", "link", "audit", "stop", NULL,
};

static int cfg_relay(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	json_object *r = cfg_bval(x, "relay"), *drv, *rc_copy;
	const struct relay_ops *ops;
	char path[160], msg[512];
	const char *name;
	int rc;

	if (!r)
		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), NULL, NULL),
				"missing required key 'relay' (an object with \"driver\": one of %s)",
				relay_names());
	cfg_bpath(x, path, sizeof(path), "relay", NULL);
	if (!json_object_is_type(r, json_type_object))
		return cfg_fail(x, path, "expected an object with \"driver\", got %s", cfg_jtype(r));
	drv = pc_jget(r, "driver");
	if (!drv)
		return cfg_fail(x, path, "missing required key 'driver' (one of %s)", relay_names());
	cfg_bpath(x, path, sizeof(path), "relay", "driver");
	if ((rc = cfg_str(x, drv, path, &name)))
		return rc;
	ops = relay_find(name);
	if (!ops || strlen(name) >= sizeof(b->relay_driver))
		return cfg_fail(x, path, "unknown driver '%s' (known: %s)", name, relay_names());
	pc_strlcpy(b->relay_driver, name, sizeof(b->relay_driver));
	msg[0] = 0;
	if (ops->check && ops->check(r, msg, sizeof(msg)) != 0)
		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "relay", NULL), "%s",
				msg[0] ? msg : "rejected by the driver");
	rc_copy = cfg_copy(r);
	if (!rc_copy)
		return cfg_fail(x, NULL, "out of memory");
	cfg_put(out, "relay", rc_copy);
	b->relay = rc_copy;
	return 0;
}

static const char *const sim_keys[] = {
	"backend", "record_size", "max_region_bytes", "size", "profile", "program_us", "cache_sectors", "seed",
	"rate", "cut_after_sectors", "keep_inputs", NULL,
};
/* What the board's agent must say in its HELLO, when the device section
 * names it (config_device_check): any backend. "path" is posix only. */
const char *const cfg_ident_keys[] = {
	"cid", "serial", "model", "manfid", "name", "vendor", "fwrev", NULL,
};

/* A byte count under device.KEY: an integer, or a string with a K/M/G suffix
 * (example shows one in the error). path receives the key's path. */
static int cfg_bytes(struct cfg_ctx *x, json_object *v, const char *key, const char *example, char *path,
		     size_t pathlen, uint64_t *out)
{
	cfg_bpath(x, path, pathlen, "device", key);
	if (json_object_is_type(v, json_type_string)) {
		if (pc_parse_u64(json_object_get_string(v), 1, out) != 0)
			return cfg_fail(x, path, "expected bytes, as an integer or a string like \"%s\", got '%s'",
					example, json_object_get_string(v));
		return 0;
	}
	if (json_object_is_type(v, json_type_int))
		return cfg_u64(x, v, path, 0, UINT64_MAX, out);
	return cfg_fail(x, path, "expected bytes, as an integer or a string like \"%s\", got %s", example,
			cfg_jtype(v));
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
				cfg_size_text(CFG_MIN_REGION_LIMIT, st, sizeof(st)), cfg_size_text(CFG_MAX_REGION_LIMIT, sm, sizeof(sm)));
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

/* The sim device's keys known, and the identity its HELLO must say copied to out. */
static int cfg_sim_keys(struct cfg_ctx *x, json_object *d, json_object *out)
{
	char path[160];

	json_object_object_foreach(d, key, val) {
		if (cfg_in_list(key, cfg_ident_keys)) {
			if (!json_object_is_type(val, json_type_string) || !json_object_get_string(val)[0])
				return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "device", key),
						"expected the string the board's HELLO must say, got %s", cfg_jtype(val));
			cfg_put(out, key, json_object_get(val));
			continue;
		}
		if (!cfg_in_list(key, sim_keys))
			return cfg_unknown_key(x, cfg_bsec(x, path, sizeof(path), "device", key), key, sim_keys,
					       strcmp(key, "path") == 0 ? " (\"path\" is for backend \"posix\")" : NULL);
	}
	return 0;
}

/* device.size (4 MiB unless given) within max_region_bytes, and the slots it holds. */
static int cfg_sim_region(struct cfg_ctx *x, json_object *d, const struct board_cfg *b, uint32_t *nslots,
			  uint64_t *size)
{
	json_object *v;
	struct pc_geom g;
	char path[160], why[256];
	int rc;

	*size = 4u << 20;
	if ((v = pc_jget(d, "size")) && (rc = cfg_sim_size(x, v, size)))
		return rc;
	if (*size > b->max_region_bytes) {
		char st[32], sm[32];
		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "device", "size"),
				"%s is more than device.max_region_bytes (%s), the largest region the harness "
				"tracks for this board; raise max_region_bytes (up to 64G)",
				cfg_size_text(*size, st, sizeof(st)), cfg_size_text(b->max_region_bytes, sm, sizeof(sm)));
	}
	if (pc_geom_init(&g, *size, b->record_size, 0, why, sizeof(why)) != 0)
		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "device", "size"), "%s", why);
	*nslots = g.nslots;
	return 0;
}

/* What the sim keeps of its inputs (keep_inputs) and a cut it makes itself (cut_after_sectors). */
static int cfg_sim_inputs(struct cfg_ctx *x, json_object *d, const struct board_cfg *b, json_object *out)
{
	json_object *v;
	char path[160];
	int rc;

	if ((v = pc_jget(d, "keep_inputs"))) {
		const struct relay_ops *ops = relay_find(b->relay_driver);
		uint32_t keep;

		if ((rc = cfg_u32(x, v, cfg_bpath(x, path, sizeof(path), "device", "keep_inputs"), 0, 1000, &keep)))
			return rc;
		/* the relay's ability, not its name: only one that starts the agent on a sim device passes it */
		if (keep && !(ops && (ops->caps & RELAY_CAP_SIM_AGENT)))
			return cfg_fail(x, path, "only the sim relay starts the agent with --sim-keep-inputs; with "
					"relay \"%s\" give the agent --sim-keep-inputs %" PRIu32 " yourself and drop "
					"this key", b->relay_driver, keep);
		cfg_put(out, "keep_inputs", json_object_new_int64(keep));
	}
	if ((v = pc_jget(d, "cut_after_sectors"))) {
		uint64_t cut;
		if ((rc = cfg_u64(x, v, cfg_bpath(x, path, sizeof(path), "device", "cut_after_sectors"), 1, UINT32_MAX, &cut)))
			return rc;
		cfg_put(out, "cut_after_sectors", json_object_new_uint64(cut));
	}
	return 0;
}

static int cfg_sim(struct cfg_ctx *x, json_object *d, struct board_cfg *b, json_object *out,
		   uint32_t *nslots, uint64_t *size)
{
	json_object *v;
	char path[160], why[256];
	const char *prof = "honest";
	unsigned bits;
	uint32_t program_us = 20, cache_sectors = 256;
	uint64_t seed = 1;
	double rate = 0.01;
	int rc;

	if ((rc = cfg_sim_keys(x, d, out)) || (rc = cfg_sim_region(x, d, b, nslots, size)))
		return rc;
	if ((v = pc_jget(d, "profile"))) {
		if ((rc = cfg_str(x, v, cfg_bpath(x, path, sizeof(path), "device", "profile"), &prof)))
			return rc;
	}
	why[0] = 0;
	if (sim_profile_parse(prof, &bits, why, sizeof(why)) != 0)
		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "device", "profile"), "%s",
				why[0] ? why : "unknown profile");
	if ((v = pc_jget(d, "program_us")) &&
	    (rc = cfg_u32(x, v, cfg_bpath(x, path, sizeof(path), "device", "program_us"), 1, 1000000, &program_us)))
		return rc;
	if ((v = pc_jget(d, "cache_sectors")) &&
	    (rc = cfg_u32(x, v, cfg_bpath(x, path, sizeof(path), "device", "cache_sectors"), 1, 1048576,
			  &cache_sectors)))
		return rc;
	if ((v = pc_jget(d, "seed")) &&
	    (rc = cfg_u64(x, v, cfg_bpath(x, path, sizeof(path), "device", "seed"), 0, UINT64_MAX, &seed)))
		return rc;
	if ((v = pc_jget(d, "rate"))) {
		cfg_bpath(x, path, sizeof(path), "device", "rate");
		if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
			return cfg_fail(x, path, "expected a number (0..1), got %s", cfg_jtype(v));
		rate = json_object_get_double(v);
		if (!(rate >= 0.0 && rate <= 1.0))
			return cfg_fail(x, path, "%g is out of range 0..1", rate);
	}
	cfg_put(out, "size", json_object_new_int64((int64_t)*size));
	cfg_put(out, "profile", json_object_new_string(prof));
	cfg_put(out, "program_us", json_object_new_int64(program_us));
	cfg_put(out, "cache_sectors", json_object_new_int64(cache_sectors));
	cfg_put(out, "seed", json_object_new_uint64(seed));
	/* keep the text the user wrote ("0.01", not 0.010000000000000000208) */
	cfg_put(out, "rate", v ? cfg_copy(v) : json_object_new_double(rate));
	return cfg_sim_inputs(x, d, b, out);
}

/* Posix: the agent is told its device on its own command line; these keys only describe it. */
static int cfg_posix(struct cfg_ctx *x, json_object *d, json_object *out)
{
	char path[160];

	json_object_object_foreach(d, key, val) {
		if (strcmp(key, "backend") == 0 || strcmp(key, "record_size") == 0 ||
		    strcmp(key, "max_region_bytes") == 0)
			continue;
		cfg_bpath(x, path, sizeof(path), "device", key);
		if (cfg_in_list(key, sim_keys))
			return cfg_fail(x, path, "only for backend \"sim\" (this device is \"posix\")");
		if (!json_object_is_type(val, json_type_string))
			return cfg_fail(x, path, "expected a string (posix device keys are informative), got %s",
					cfg_jtype(val));
		cfg_put(out, key, json_object_get(val));
	}
	return 0;
}

static int cfg_device(struct cfg_ctx *x, struct board_cfg *b, json_object *out, uint32_t *nslots,
		      uint64_t *size)
{
	json_object *d = cfg_bval(x, "device"), *v, *od;
	const char *backend = "sim";
	char path[160];
	int rc;

	*nslots = 0;
	if (d && !json_object_is_type(d, json_type_object))
		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "device", NULL), "expected an object, got %s",
				cfg_jtype(d));
	if ((v = pc_jget(d, "backend"))) {
		cfg_bpath(x, path, sizeof(path), "device", "backend");
		if ((rc = cfg_str(x, v, path, &backend)))
			return rc;
		if (strcmp(backend, "sim") != 0 && strcmp(backend, "posix") != 0)
			return cfg_fail(x, path, "unknown backend '%s' (known: sim posix)", backend);
	}
	pc_strlcpy(b->backend, backend, sizeof(b->backend));
	b->record_size = 4096;
	if ((v = pc_jget(d, "record_size"))) {
		cfg_bpath(x, path, sizeof(path), "device", "record_size");
		if ((rc = cfg_u32(x, v, path, PC_SECTOR, PC_MAX_RECORD_SIZE, &b->record_size)))
			return rc;
		if (b->record_size % PC_SECTOR)
			return cfg_fail(x, path, "%" PRIu32 " is not a multiple of 512", b->record_size);
	}
	b->max_region_bytes = CFG_DEFAULT_MAX_REGION;
	if ((v = pc_jget(d, "max_region_bytes")) && (rc = cfg_region_limit(x, v, &b->max_region_bytes)))
		return rc;
	od = json_object_new_object();
	if (!od)
		return cfg_fail(x, NULL, "out of memory");
	cfg_put(out, "device", od);
	cfg_put(od, "backend", json_object_new_string(backend));
	cfg_put(od, "record_size", json_object_new_int64(b->record_size));
	/* only when given: a campaign.json written before the key existed still
	 * resumes (the engine applies the same default to a missing key) */
	if (pc_jget(d, "max_region_bytes"))
		cfg_put(od, "max_region_bytes", json_object_new_int64((int64_t)b->max_region_bytes));
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
	json_object *v = cfg_bval(x, "modes"), *arr;
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
		cfg_bpath(x, path, sizeof(path), "modes", NULL);
		if (!json_object_is_type(v, json_type_array))
			return cfg_fail(x, path, "expected an array of mode names (%s), got %s",
					mode_names_list(list, sizeof(list)), cfg_jtype(v));
		n = json_object_array_length(v);
		if (n < 1 || n > CFG_MAX_MODES)
			return cfg_fail(x, path, "expected 1 to %d modes, got %zu", CFG_MAX_MODES, n);
		for (size_t i = 0; i < n; i++) {
			json_object *e = json_object_array_get_idx(v, i);
			const char *s, *near;
			int m;

			snprintf(path, sizeof(path), "boards[%u].modes[%zu]%s", x->bi, i,
				 cfg_from_defaults(x, "modes", NULL) ? " (from defaults)" : "");
			if (!json_object_is_type(e, json_type_string))
				return cfg_fail(x, path, "expected a mode name, got %s", cfg_jtype(e));
			s = json_object_get_string(e);
			m = pc_mode_from_name(s);
			if (m < 0) {
				near = cfg_closest(s, names);
				return cfg_fail(x, path, "unknown mode '%s'%s%s%s (known: %s)", s,
						near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "",
						mode_names_list(list, sizeof(list)));
			}
			b->modes[i] = m;
		}
		b->nmodes = (unsigned)n;
	}
	arr = json_object_new_array();
	cfg_put(out, "modes", arr);
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

	cfg_bpath(x, path, sizeof(path), "cut", sub);
	if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) != 2)
		return cfg_fail(x, path, "expected [min, max], got %s", json_object_is_type(v, json_type_array) ?
				"an array of another length" : cfg_jtype(v));
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
static const char *const cut_names[] = { "random", "acks", "flush", "fua", "mix", NULL };

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

enum cut_plan config_cycle_cut(const struct board_cfg *b, uint32_t cycle, uint32_t *lo, uint32_t *hi)
{
	int mode = b->modes[(cycle ? cycle - 1 : 0) % b->nmodes];
	enum cut_plan turn[3];
	unsigned n = 0;

	*lo = b->cut_min;
	*hi = b->cut_max;
	if (b->cut != CUT_MIX)
		return b->cut;
	/* the I/O the mode issues first, so that a short campaign reaches it */
	if (config_cut_ops(CUT_FLUSH, mode, b->records_per_cycle, b->flush_every))
		turn[n++] = CUT_FLUSH;
	if (config_cut_ops(CUT_FUA, mode, b->records_per_cycle, b->flush_every))
		turn[n++] = CUT_FUA;
	turn[n++] = CUT_RANDOM;
	enum cut_plan p = turn[((cycle ? cycle - 1 : 0) / b->nmodes) % n];
	if (p != CUT_RANDOM) {
		*lo = 1;
		*hi = config_cut_ops(p, mode, b->records_per_cycle, b->flush_every);
	}
	return p;
}

/*
 * "cut": {"at": "random", "window_ms": [min, max]}, {"at": "acks", "acks":
 * [min, max]}, {"at": "flush" | "fua", "nth": [min, max], "delay_us": D},
 * or {"at": "mix", "window_ms": [min, max], "delay_us": D} (the default).
 */
/* delay_us (plans flush, fua and mix): within the work timeout. */
static int cfg_cut_delay(struct cfg_ctx *x, struct board_cfg *b, json_object *c)
{
	json_object *v;
	char path[160];
	int rc;

	if (c && (v = pc_jget(c, "delay_us")) &&
	    (rc = cfg_u32(x, v, cfg_bpath(x, path, sizeof(path), "cut", "delay_us"), 0, CFG_MAX_DELAY_US,
			  &b->cut_delay_us)))
		return rc;
	if (b->cut_delay_us / 1000 >= b->work_timeout_ms)
		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "cut", "delay_us"),
				"%" PRIu32 " us is not within work_timeout_ms (%" PRIu32 ")", b->cut_delay_us,
				b->work_timeout_ms);
	return 0;
}

/* A cut at the nth cache flush or FUA write (plan "flush" or "fua"): nth
 * within what every mode of the board issues in a cycle, delay_us within the
 * work timeout. */
static int cfg_cut_io(struct cfg_ctx *x, struct board_cfg *b, json_object *c, const char *at)
{
	/* every mode of the board must issue the I/O, and as often as nth may ask */
	const char *what = b->cut == CUT_FLUSH ? "cache flushes" : "FUA writes";
	json_object *v;
	char path[160];
	uint32_t ops = UINT32_MAX;
	int rc, worst = -1;

	for (unsigned i = 0; i < b->nmodes; i++) {
		uint32_t n = config_cut_ops(b->cut, b->modes[i], b->records_per_cycle, b->flush_every);

		if (!n)
			return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "cut", "at"),
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
	if ((v = pc_jget(c, "nth")) && (rc = cfg_pair(x, v, "nth", 1, CFG_MAX_ACKS, &b->cut_min, &b->cut_max)))
		return rc;
	if (b->cut_max > ops)
		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "cut", "nth"),
				"%" PRIu32 " is more than the %" PRIu32 " %s a cycle of mode %s issues "
				"(records_per_cycle %" PRIu32 ", flush_every %" PRIu32 "): lower nth", b->cut_max,
				ops, what, pc_mode_name((enum pc_mode)worst), b->records_per_cycle, b->flush_every);
	return cfg_cut_delay(x, b, c);
}

/* The plan as resolved, into the board's "cut" of campaign.json. */
static void cfg_cut_out(const struct board_cfg *b, json_object *out)
{
	json_object *oc = json_object_new_object(), *pair = json_object_new_array();

	cfg_put(out, "cut", oc);
	cfg_put(oc, "at", json_object_new_string(cut_names[b->cut]));
	cfg_put(oc, b->cut == CUT_RANDOM || b->cut == CUT_MIX ? "window_ms" : b->cut == CUT_ACKS ? "acks" : "nth", pair);
	json_object_array_add(pair, json_object_new_int64(b->cut_min));
	json_object_array_add(pair, json_object_new_int64(b->cut_max));
	if (b->cut == CUT_FLUSH || b->cut == CUT_FUA || b->cut == CUT_MIX)
		cfg_put(oc, "delay_us", json_object_new_int64(b->cut_delay_us));
}

/* No "cut" at all: the mix, which reaches every phase of every mode; a
 * "cut" without "at" is a random instant, as it always was. */
static int cfg_cut(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	static const char *const random_keys[] = { "at", "window_ms", NULL };
	static const char *const acks_keys[] = { "at", "acks", NULL };
	static const char *const io_keys[] = { "at", "nth", "delay_us", NULL };
	static const char *const mix_keys[] = { "at", "window_ms", "delay_us", NULL };
	static const char *const *const keys_of[] = { random_keys, acks_keys, io_keys, io_keys, mix_keys };
	static const char *const hint_of[] = { " (only with \"at\": \"random\" or \"mix\")",
					       " (only with \"at\": \"acks\")",
					       " (only with \"at\": \"flush\" or \"fua\")" };
	json_object *c = cfg_bval(x, "cut"), *v;
	const char *at = "random";
	char path[160];
	int rc;

	b->cut = c ? CUT_RANDOM : CUT_MIX;
	b->cut_min = 5;
	b->cut_max = 60;
	b->cut_delay_us = 0;
	if (c) {
		if (!json_object_is_type(c, json_type_object))
			return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "cut", NULL),
					"expected {\"at\": \"random\", \"window_ms\": [min, max]}, "
					"{\"at\": \"acks\", \"acks\": [min, max]} or "
					"{\"at\": \"flush\" or \"fua\", \"nth\": [min, max], \"delay_us\": D} or "
					"{\"at\": \"mix\", \"window_ms\": [min, max], \"delay_us\": D}, got %s",
					cfg_jtype(c));
		if ((v = pc_jget(c, "at")) && (rc = cfg_str(x, v, cfg_bpath(x, path, sizeof(path), "cut", "at"), &at)))
			return rc;
		for (b->cut = CUT_RANDOM; b->cut <= CUT_MIX && strcmp(at, cut_names[b->cut]); b->cut++)
			;
		if (b->cut > CUT_MIX) {
			const char *near = cfg_closest(at, cut_names);

			return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "cut", "at"),
					"unknown cut plan '%s'%s%s%s (known: random acks flush fua mix)", at,
					near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
		}
		json_object_object_foreach(c, key, val) {
			const char *hint = NULL;

			(void)val;
			if (cfg_in_list(key, keys_of[b->cut]))
				continue;
			for (int k = 0; k < 3 && !hint; k++)
				if (cfg_in_list(key, keys_of[k]))
					hint = hint_of[k];
			return cfg_unknown_key(x, cfg_bsec(x, path, sizeof(path), "cut", key), key, keys_of[b->cut], hint);
		}
	}
	if (b->cut == CUT_ACKS) {
		b->cut_min = 1;
		b->cut_max = b->records_per_cycle;
		if ((v = pc_jget(c, "acks")) && (rc = cfg_pair(x, v, "acks", 1, CFG_MAX_ACKS, &b->cut_min, &b->cut_max)))
			return rc;
	} else if (b->cut == CUT_RANDOM || b->cut == CUT_MIX) {
		if (b->cut == CUT_MIX && (rc = cfg_cut_delay(x, b, c)))
			return rc;
		if (c && (v = pc_jget(c, "window_ms")) &&
		    (rc = cfg_pair(x, v, "window_ms", 0, CFG_MAX_MS, &b->cut_min, &b->cut_max)))
			return rc;
		/* The work timeout would fire first: the planned cut could never happen. */
		if (b->cut_max > b->work_timeout_ms)
			return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "cut", "window_ms"),
					"the window ends at %" PRIu32 " ms, after work_timeout_ms (%" PRIu32
					"): narrow the window or raise work_timeout_ms", b->cut_max, b->work_timeout_ms);
	} else if ((rc = cfg_cut_io(x, b, c, at))) {
		return rc;
	}
	cfg_cut_out(b, out);
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
/* The serial console: the link itself (serial) or the one captured beside a
 * tcp link (console): a tty or a network console, its rate, boot patterns. */
static int cfg_link_console(struct cfg_ctx *x, struct board_cfg *b, json_object *l)
{
	const char *dkey = b->link_serial ? "device" : "console", *dev;
	json_object *v;
	char path[160];
	int rc;

	v = pc_jget(l, dkey);
	if (!v)
		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "link", NULL),
				"missing 'device' (the board's serial console, e.g. /dev/ttyUSB0)");
	if ((rc = cfg_str(x, v, cfg_bpath(x, path, sizeof(path), "link", dkey), &dev)))
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
	if ((v = pc_jget(l, "baud"))) {
		size_t i;
		if ((rc = cfg_u32(x, v, cfg_bpath(x, path, sizeof(path), "link", "baud"), 1, 4000000, &b->serial_baud)))
			return rc;
		for (i = 0; i < PC_ARRAY_SIZE(bauds) && bauds[i] != b->serial_baud; i++)
			;
		if (i == PC_ARRAY_SIZE(bauds))
			return cfg_fail(x, path, "%u is not a supported rate (9600 19200 38400 57600 115200 "
					"230400 460800 921600 1500000 3000000)", b->serial_baud);
	}
	if ((v = pc_jget(l, "boot_patterns"))) {
		cfg_bpath(x, path, sizeof(path), "link", "boot_patterns");
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
	return 0;
}

static int cfg_link(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	static const char *const tcp_keys[] = { "type", "console", "baud", "boot_patterns", NULL };
	static const char *const serial_keys[] = { "type", "device", "baud", "boot_patterns", NULL };
	json_object *l = cfg_bval(x, "link"), *v, *ol, *arr;
	const char *type = "tcp";
	char path[160];
	int rc;

	b->link_serial = 0;
	b->console_capture = 0;
	b->serial_baud = 115200;
	b->nboot_patterns = 0;
	if (l) {
		if (!json_object_is_type(l, json_type_object))
			return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "link", NULL),
					"expected {\"type\": \"tcp\"} or {\"type\": \"serial\", \"device\": ...}, got %s",
					cfg_jtype(l));
		if ((v = pc_jget(l, "type")) && (rc = cfg_str(x, v, cfg_bpath(x, path, sizeof(path), "link", "type"), &type)))
			return rc;
		if (strcmp(type, "tcp") && strcmp(type, "serial"))
			return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "link", "type"),
					"unknown link type '%s' (known: tcp serial)", type);
		b->link_serial = !strcmp(type, "serial");
		json_object_object_foreach(l, key, val) {
			(void)val;
			if (!cfg_in_list(key, b->link_serial ? serial_keys : tcp_keys))
				return cfg_unknown_key(x, cfg_bsec(x, path, sizeof(path), "link", key), key,
						       b->link_serial ? serial_keys : tcp_keys, NULL);
		}
	}
	if (!b->link_serial && l && !pc_jget(l, "console") && (pc_jget(l, "baud") || pc_jget(l, "boot_patterns")))
		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "link", NULL),
				"'baud' and 'boot_patterns' on a tcp link are for its 'console': name it (the board's "
				"serial console to capture, e.g. /dev/ttyUSB0 or tcp://HOST:PORT)");
	b->console_capture = !b->link_serial && l && pc_jget(l, "console");
	if ((b->link_serial || b->console_capture) && (rc = cfg_link_console(x, b, l)))
		return rc;
	ol = json_object_new_object();
	cfg_put(ol, "type", json_object_new_string(b->link_serial ? "serial" : "tcp"));
	if (b->link_serial || b->console_capture) {
		cfg_put(ol, b->link_serial ? "device" : "console", json_object_new_string(b->serial_device));
		cfg_put(ol, "baud", json_object_new_int64(b->serial_baud));
		arr = json_object_new_array();
		for (unsigned i = 0; i < b->nboot_patterns; i++)
			json_object_array_add(arr, json_object_new_string(b->boot_patterns[i]));
		cfg_put(ol, "boot_patterns", arr);
	}
	cfg_put(out, "link", ol);
	return 0;
}

/* "verify": {"full_every": K, "cold_sample": N} */
static int cfg_verify(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	static const char *const keys[] = { "full_every", "cold_sample", NULL };
	json_object *v = cfg_bval(x, "verify"), *f, *ov;
	char path[160];
	int rc;

	b->full_every = 1;
	b->cold_sample = 64;
	if (v) {
		if (!json_object_is_type(v, json_type_object))
			return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "verify", NULL),
					"expected {\"full_every\": K, \"cold_sample\": N}, got %s", cfg_jtype(v));
		json_object_object_foreach(v, key, val) {
			(void)val;
			if (!cfg_in_list(key, keys))
				return cfg_unknown_key(x, cfg_bsec(x, path, sizeof(path), "verify", key), key, keys, NULL);
		}
		if ((f = pc_jget(v, "full_every")) &&
		    (rc = cfg_u32(x, f, cfg_bpath(x, path, sizeof(path), "verify", "full_every"), 1, 1000000, &b->full_every)))
			return rc;
		if ((f = pc_jget(v, "cold_sample")) &&
		    (rc = cfg_u32(x, f, cfg_bpath(x, path, sizeof(path), "verify", "cold_sample"), 0,
				  PC_PROTO_MAX_RANGES - 2, &b->cold_sample)))
			return rc;
	}
	ov = json_object_new_object();
	cfg_put(ov, "full_every", json_object_new_int64(b->full_every));
	cfg_put(ov, "cold_sample", json_object_new_int64(b->cold_sample));
	cfg_put(out, "verify", ov);
	return 0;
}

/*
 * "policy": {"MODE": {"torn": "allowed"|"violation", "torn_sector": ...}}:
 * whether an unacknowledged torn record or torn sector is a violation in that
 * mode. Acknowledged ones always are. Defaults follow docs/design.md section 6: a
 * reliable write (fua, fua+flush, relwr) promises sector atomicity; whole-record
 * atomicity is opt-in ("torn": "violation"), for parts whose REL_WR_SEC_C covers
 * a record.
 */
static int cfg_policy(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	const char *const classes[] = { pc_class_names[PC_CLS_TORN], pc_class_names[PC_CLS_TORN_SECTOR],
					pc_class_names[PC_CLS_UNCLASSIFIED], NULL };
	json_object *p = cfg_bval(x, "policy"), *op;
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
			return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "policy", NULL),
					"expected {\"MODE\": {\"torn\": \"allowed\"|\"violation\", ...}}, got %s", cfg_jtype(p));
		json_object_object_foreach(p, mode, sec) {
			int m = pc_mode_from_name(mode);

			cfg_bpath(x, path, sizeof(path), "policy", mode);
			if (m < 0)
				return cfg_fail(x, path, "unknown mode '%s' (known: fua fua+flush flush journal none relwr relwr-off)", mode);
			if (!json_object_is_type(sec, json_type_object))
				return cfg_fail(x, path, "expected {\"torn\": ..., \"torn_sector\": ...}, got %s", cfg_jtype(sec));
			json_object_object_foreach(sec, cls, val) {
				char cpath[200];
				const char *s;

				snprintf(cpath, sizeof(cpath), "%s.%s", path, cls);
				if (!cfg_in_list(cls, classes))
					return cfg_unknown_key(x, path, cls, classes, NULL);
				if (!json_object_is_type(val, json_type_string))
					return cfg_fail(x, cpath, "expected \"allowed\" or \"violation\", got %s", cfg_jtype(val));
				s = json_object_get_string(val);
				if (strcmp(s, "allowed") && strcmp(s, "violation"))
					return cfg_fail(x, cpath, "expected \"allowed\" or \"violation\", got '%s'", s);
				(pc_class_from_name(cls) == PC_CLS_TORN ? b->torn_violation :
				 pc_class_from_name(cls) == PC_CLS_TORN_SECTOR ? b->torn_sector_violation :
				 b->unclassified_violation)[m] = strcmp(s, "violation") == 0;
			}
		}
	}
	op = json_object_new_object();
	for (int m = PC_MODE_FUA; m < PC_MODE_MAX; m++) {
		json_object *e = json_object_new_object();
		cfg_put(e, classes[0], json_object_new_string(b->torn_violation[m] ? "violation" : "allowed"));
		cfg_put(e, classes[1], json_object_new_string(b->torn_sector_violation[m] ? "violation" : "allowed"));
		cfg_put(e, classes[2], json_object_new_string(b->unclassified_violation[m] ? "violation" : "allowed"));
		cfg_put(op, pc_mode_name((enum pc_mode)m), e);
	}
	cfg_put(out, "policy", op);
	return 0;
}

/*
 * "stop": {"boot_fails": N, "on_fail": "continue" | "stop"}: when a board
 * stops before its cycles are run. N BOOT_FAILs in a row name the device
 * dead, a finding of the device (0: never); "stop" ends a screening run at
 * the board's first FAIL, "continue" (the default) keeps going for a rate.
 * Written out only when given: a campaign.json from before the key still
 * resumes.
 */
static int cfg_stop(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	static const char *const keys[] = { "boot_fails", "on_fail", NULL };
	json_object *v = cfg_bval(x, "stop"), *f, *os;
	char path[160];
	const char *of;
	int rc;

	b->stop_boot_fails = CFG_DEFAULT_STOP_BOOT_FAILS;
	b->stop_on_fail = 0;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_object))
		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "stop", NULL),
				"expected {\"boot_fails\": N, \"on_fail\": \"continue\"|\"stop\"}, got %s", cfg_jtype(v));
	json_object_object_foreach(v, key, val) {
		(void)val;
		if (!cfg_in_list(key, keys))
			return cfg_unknown_key(x, cfg_bsec(x, path, sizeof(path), "stop", key), key, keys, NULL);
	}
	if ((f = pc_jget(v, "boot_fails")) &&
	    (rc = cfg_u32(x, f, cfg_bpath(x, path, sizeof(path), "stop", "boot_fails"), 0, CFG_MAX_STOP_BOOT_FAILS,
			  &b->stop_boot_fails)))
		return rc;
	if ((f = pc_jget(v, "on_fail"))) {
		if ((rc = cfg_str(x, f, cfg_bpath(x, path, sizeof(path), "stop", "on_fail"), &of)))
			return rc;
		if (strcmp(of, "continue") && strcmp(of, "stop"))
			return cfg_fail(x, path, "'%s': expected \"continue\" (keep going, for a rate) or \"stop\" "
					"(a screening run: the board stops at its first FAIL)", of);
		b->stop_on_fail = !strcmp(of, "stop");
	}
	os = json_object_new_object();
	cfg_put(os, "boot_fails", json_object_new_int64(b->stop_boot_fails));
	cfg_put(os, "on_fail", json_object_new_string(b->stop_on_fail ? "stop" : "continue"));
	cfg_put(out, "stop", os);
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

int cfg_board(struct cfg_ctx *x, struct board_cfg *b, json_object *out)
{
	json_object *v;
	char path[160];
	const char *pat = "sequential";
	uint32_t nslots;
	uint64_t size = 0;
	int rc;

	json_object_object_foreach(x->merged, key, val) {
		(void)val;
		if (!cfg_in_list(key, cfg_board_keys))
			return cfg_unknown_key(x, cfg_bpath(x, path, sizeof(path), NULL, NULL), key, cfg_board_keys, NULL);
	}
	v = cfg_bval(x, "name");
	if (!v)
		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), NULL, NULL), "missing required key 'name'");
	if ((rc = cfg_name(x, v, cfg_bpath(x, path, sizeof(path), "name", NULL), b->name, sizeof(b->name))))
		return rc;
	cfg_put(out, "name", json_object_new_string(b->name));
	if ((rc = cfg_relay(x, b, out)) || (rc = cfg_device(x, b, out, &nslots, &size)))
		return rc;
	if ((v = cfg_bval(x, "pattern"))) {
		cfg_bpath(x, path, sizeof(path), "pattern", NULL);
		if ((rc = cfg_str(x, v, path, &pat)))
			return rc;
		if (pc_pattern_from_name(pat) < 0)
			return cfg_fail(x, path, "unknown pattern '%s' (known: sequential random)", pat);
	}
	b->pattern = pc_pattern_from_name(pat);
	cfg_put(out, "pattern", json_object_new_string(pat));
	/* the io audit: "auto" (use it where the board can see its requests) or
	 * "require" (a cycle whose requests could not be seen, or were not what
	 * its mode promises, is an INFRA_ERROR). Kept in the resolved
	 * configuration only when given: older campaigns resume unchanged. */
	if ((v = cfg_bval(x, "audit"))) {
		const char *a;

		cfg_bpath(x, path, sizeof(path), "audit", NULL);
		if ((rc = cfg_str(x, v, path, &a)))
			return rc;
		if (strcmp(a, "auto") && strcmp(a, "require"))
			return cfg_fail(x, path, "'%s': expected \"auto\" or \"require\"", a);
		b->audit_require = !strcmp(a, "require");
		cfg_put(out, "audit", json_object_new_string(a));
	}
	if ((rc = cfg_modes(x, b, out)))
		return rc;
	for (size_t i = 0; i < PC_ARRAY_SIZE(board_u32); i++) {
		uint32_t *field = (uint32_t *)((char *)b + board_u32[i].off);

		*field = board_u32[i].def;
		if (board_u32[i].off == offsetof(struct board_cfg, boot_timeout_ms))
			b->boot_timeout_given = cfg_bval(x, board_u32[i].key) != NULL;
		if ((v = cfg_bval(x, board_u32[i].key)) &&
		    (rc = cfg_u32(x, v, cfg_bpath(x, path, sizeof(path), board_u32[i].key, NULL),
				  board_u32[i].min, board_u32[i].max, field)))
			return rc;
		cfg_put(out, board_u32[i].key, json_object_new_int64(*field));
	}
	/* A cycle must not write any slot twice, or the verdict cannot tell its records apart. */
	if (nslots && b->records_per_cycle > nslots) {
		char st[32];

		return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "records_per_cycle", NULL),
				"%" PRIu32 " exceeds the %" PRIu32 " slots of a %s sim device with %" PRIu32
				"-byte records (a cycle must not write any slot twice)",
				b->records_per_cycle, nslots, cfg_size_text(size, st, sizeof(st)), b->record_size);
	}
	if ((rc = cfg_verify(x, b, out)) || (rc = cfg_policy(x, b, out)) || (rc = cfg_link(x, b, out)) ||
	    (rc = cfg_stop(x, b, out)))
		return rc;
	return cfg_cut(x, b, out);
}


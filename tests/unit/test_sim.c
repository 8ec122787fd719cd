/*
 * test_sim.c - the emulated eMMC and the agent's sim backend, against real
 * media files: what a test says is on the NAND it reads back with pread(), and
 * the power-cut test SIGKILLs a real writer.
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "agent/audit.h"
#include "agent/dev.h"
#include "common/record.h"
#include "common/util.h"
#include "sim/emmc.h"
#include "common/wlog.h"
#include "vboard/vcache.h"

#define MEDIA_BYTES	(1u << 20)	/* 2048 sectors */
#define REC_SIZE	4096u		/* 8 sectors */
#define SPR		(REC_SIZE / PC_SECTOR)

static char media[PATH_MAX];
static char err[512];
static struct pc_geom geom;

/* Fresh media (and no truth log) in a scratch directory of its own. */
static void media_new(const char *name)
{
	char e[256];

	snprintf(media, sizeof(media), "%s/media.img", pc_test_tmpdir(name));
	CU_ASSERT_EQUAL_FATAL(sim_emmc_create(media, MEDIA_BYTES, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(pc_geom_init(&geom, MEDIA_BYTES, REC_SIZE, 0x5eed, e, sizeof(e)), 0);
	memset(geom.uuid, 0xab, sizeof(geom.uuid));
}

/* which exact cut a test child plans (its cut-at option) */
#define CUT_FLUSH	1u
#define CUT_FUA		2u

/*
 * Options as the agent's --sim-* options set them (sim_opts_set): a profile
 * by its bits, cut_at ("flush:N[:US]", "fua:N[:US]") or NULL. NULL on a
 * refused option, err saying why.
 */
static struct sim_opts *opts(unsigned profile, uint32_t program_us, uint32_t cache_sectors, uint64_t seed,
			     double rate, const char *cut_at)
{
	struct sim_opts *o = sim_opts_new();
	char pname[256], v[4][40];

	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	snprintf(v[0], sizeof(v[0]), "%" PRIu32, program_us);
	snprintf(v[1], sizeof(v[1]), "%" PRIu32, cache_sectors);
	snprintf(v[2], sizeof(v[2]), "%" PRIu64, seed);
	snprintf(v[3], sizeof(v[3]), "%.17g", rate);
	if (sim_opts_set(o, "profile", sim_profile_name(profile, pname, sizeof(pname)), err, sizeof(err)) ||
	    sim_opts_set(o, "program-us", v[0], err, sizeof(err)) ||
	    sim_opts_set(o, "cache-sectors", v[1], err, sizeof(err)) ||
	    sim_opts_set(o, "seed", v[2], err, sizeof(err)) || sim_opts_set(o, "rate", v[3], err, sizeof(err)) ||
	    (cut_at && sim_opts_set(o, "cut-at", cut_at, err, sizeof(err)))) {
		sim_opts_free(o);
		return NULL;
	}
	return o;
}

/* Power on media with these options (freed here). */
static int open_with(struct sim_opts *o, struct sim_emmc **e)
{
	int ret = o ? sim_emmc_open(media, o, e, err, sizeof(err)) : -EINVAL;

	sim_opts_free(o);
	return ret;
}

static struct sim_emmc *sim_on_f(unsigned profile, uint32_t program_us, uint64_t seed, double rate)
{
	struct sim_emmc *e = NULL;
	int ret = open_with(opts(profile, program_us, 0, seed, rate, NULL), &e);

	if (ret)
		fprintf(stderr, "sim_emmc_open: %s\n", err);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	return e;
}

static struct sim_emmc *sim_on(unsigned profile, uint32_t program_us, uint32_t cache_sectors)
{
	struct sim_emmc *e = NULL;
	int ret = open_with(opts(profile, program_us, cache_sectors, 0, 0, NULL), &e);

	if (ret)
		fprintf(stderr, "sim_emmc_open: %s\n", err);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	return e;
}

/* A prepared region, as powercut-agent prepare leaves it: both superblocks, gen-0 everywhere. */
static void media_prepare(void)
{
	uint8_t sb[PC_SECTOR], rec[REC_SIZE];
	int fd = open(media, O_WRONLY);

	CU_ASSERT_FATAL(fd >= 0);
	for (int copy = 0; copy < 2; copy++) {
		pc_sb_encode(&geom, (uint32_t)copy, sb);
		CU_ASSERT_EQUAL(pc_pwrite_all(fd, sb, PC_SECTOR, (off_t)(pc_sb_lba(&geom, copy) * PC_SECTOR)), 0);
	}
	for (uint32_t slot = 0; slot < geom.nslots; slot++) {
		pc_record_build(rec, &geom, slot, 0, 0, 0);
		CU_ASSERT_EQUAL(pc_pwrite_all(fd, rec, REC_SIZE, (off_t)(pc_slot_lba(&geom, slot) * PC_SECTOR)), 0);
	}
	close(fd);
}

/* The gen-0 content of the sector at lba (in the slot area). */
static void gen0_sector(uint64_t lba, uint8_t out[PC_SECTOR])
{
	uint8_t rec[REC_SIZE];
	uint32_t slot = (uint32_t)((lba - PC_SB_RESERVE_SECT) / SPR);

	pc_record_build(rec, &geom, slot, 0, 0, 0);
	memcpy(out, rec + (lba - pc_slot_lba(&geom, slot)) * PC_SECTOR, PC_SECTOR);
}

static unsigned bits_differ(const uint8_t *a, const uint8_t *b, size_t len)
{
	unsigned n = 0;

	for (size_t i = 0; i < len; i++)
		n += (unsigned)__builtin_popcount((unsigned)(a[i] ^ b[i]));
	return n;
}

/* What the NAND holds, bypassing the sim. */
static void media_pread(uint64_t lba, void *buf, uint32_t nsect)
{
	int fd = open(media, O_RDONLY);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pc_pread_all(fd, buf, (size_t)nsect * PC_SECTOR, (off_t)(lba * PC_SECTOR)), 0);
	close(fd);
}

static int media_equals(uint64_t lba, const void *want, uint32_t nsect)
{
	uint8_t *got = malloc((size_t)nsect * PC_SECTOR);
	int eq;

	media_pread(lba, got, nsect);
	eq = memcmp(got, want, (size_t)nsect * PC_SECTOR) == 0;
	free(got);
	return eq;
}

static int media_is_zero(uint64_t lba, uint32_t nsect)
{
	uint8_t *z = calloc(nsect, PC_SECTOR);
	int eq = media_equals(lba, z, nsect);

	free(z);
	return eq;
}

static void fill(uint8_t *buf, uint32_t nsect, uint8_t v)
{
	memset(buf, v, (size_t)nsect * PC_SECTOR);
}

static void record(uint8_t *buf, uint32_t slot, uint64_t seq)
{
	pc_record_build(buf, &geom, slot, seq, 1, PC_MODE_FLUSH);
}

/* The truth log's complete lines, parsed. Torn or bad lines count in *bad. */
static json_object *truth_lines(int *bad)
{
	char path[PATH_MAX + 16], line[65536];
	json_object *arr = json_object_new_array();
	FILE *f;

	*bad = 0;
	snprintf(path, sizeof(path), "%s.truth.jsonl", media);
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof(line), f)) {
		json_object *o = json_tokener_parse(line);

		if (o && strchr(line, '\n'))
			json_object_array_add(arr, o);
		else {
			json_object_put(o);
			(*bad)++;
		}
	}
	fclose(f);
	return arr;
}

static const char *ev_of(json_object *o)
{
	json_object *v;

	return json_object_object_get_ex(o, "ev", &v) ? json_object_get_string(v) : "";
}

static uint64_t u64_of(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_uint64(v) : UINT64_MAX;
}

static const char *str_of(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

/* The index-th line with event ev (-1: the last), or NULL. */
static json_object *truth_find(json_object *arr, const char *ev, int index, int *count)
{
	json_object *hit = NULL;
	int n = 0;

	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *o = json_object_array_get_idx(arr, i);

		if (strcmp(ev_of(o), ev) != 0)
			continue;
		if (index < 0 || n == index)
			hit = o;
		n++;
	}
	if (count)
		*count = n;
	return hit;
}

static void test_profile_parse(void)
{
	static const struct { const char *s; unsigned bits; const char *canon; } ok[] = {
		{ "honest", SIM_P_HONEST, "honest" },
		{ "lying-flush", SIM_P_LYING_FLUSH, "lying-flush" },
		{ "no-cache", SIM_P_NO_CACHE, "no-cache" },
		{ "paired-page+lying-flush", SIM_P_PAIRED_PAGE | SIM_P_LYING_FLUSH, "lying-flush+paired-page" },
		{ "fua-ignored+lying-flush+brick", SIM_P_FUA_IGNORED | SIM_P_LYING_FLUSH | SIM_P_BRICK,
		  "lying-flush+fua-ignored+brick" },
		{ "stale+bitrot+misdirect+subsector-tear+tearing-relwr",
		  SIM_P_STALE | SIM_P_BITROT | SIM_P_MISDIRECT | SIM_P_SUBSECTOR_TEAR | SIM_P_TEARING_RELWR,
		  "tearing-relwr+subsector-tear+misdirect+bitrot+stale" },
		{ "no-fua+lying-flush", SIM_P_NO_FUA | SIM_P_LYING_FLUSH, "lying-flush+no-fua" },
	};
	static const struct { const char *s; const char *want; } bad[] = {
		{ "bogus", "unknown sim profile 'bogus'" },
		{ "lying-flush+Honest", "unknown sim profile 'Honest'" },
		{ "lying-flush++no-cache", "unknown sim profile ''" },
		{ "", "empty sim profile" },
		{ "honest+no-cache", "'honest' cannot be combined" },
		{ "no-cache+honest", "'honest' cannot be combined" },
	};
	char name[256];

	for (size_t i = 0; i < PC_ARRAY_SIZE(ok); i++) {
		unsigned bits = 0xdead;

		CU_ASSERT_EQUAL(sim_profile_parse(ok[i].s, &bits, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(bits, ok[i].bits);
		CU_ASSERT_STRING_EQUAL(sim_profile_name(bits, name, sizeof(name)), ok[i].canon);
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++) {
		unsigned bits = 0xdead;

		err[0] = 0;
		CU_ASSERT_EQUAL(sim_profile_parse(bad[i].s, &bits, err, sizeof(err)), -EINVAL);
		CU_ASSERT_EQUAL(bits, 0xdead);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].want));
	}
	/* the unknown-name message lists every valid name */
	sim_profile_parse("nope", &(unsigned){ 0 }, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "valid: honest, lying-flush, no-cache, fua-ignored, "
				      "tearing-relwr, subsector-tear, paired-page, misdirect, bitrot, stale, brick, no-fua"));
}

static void test_create(void)
{
	media_new("sim-create");
	CU_ASSERT_TRUE(media_is_zero(0, MEDIA_BYTES / PC_SECTOR));
	CU_ASSERT_EQUAL(sim_emmc_create(media, MEDIA_BYTES, err, sizeof(err)), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, media));
	CU_ASSERT_EQUAL(sim_emmc_create("build/test-tmp/never.img", 1000, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(access("build/test-tmp/never.img", F_OK), -1);
}

static void test_bad_opts(void)
{
	static const struct { const char *name, *val, *want; } bad[] = {
		{ "profile", "lying-flush+bogus", "unknown sim profile 'bogus'" },
		{ "rate", "1.5", "expected a number from 0 to 1" },
		{ "rate", "-0.1", "expected a number from 0 to 1" },
		{ "program-us", "1000001", "expected 0..1000000" },
		{ "cache-sectors", "1048577", "expected 0..1048576" },
		{ "seed", "-1", "expected an integer from 0 to 18446744073709551615" },
		{ "cut-at", "flush:0", "expected flush:N[:US] or fua:N[:US]" },
		{ "cut-at", "trim:3", "expected flush:N[:US] or fua:N[:US]" },
		{ "cut-after", "x", "expected a sector count" },
		{ "untimed", "2", "expected 0 or 1" },
		{ "no-such", "1", "no sim option 'no-such'" },
	};
	struct sim_opts *o = sim_opts_new();
	struct sim_emmc *e = NULL;

	media_new("sim-badopts");
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++) {
		err[0] = 0;
		CU_ASSERT_NOT_EQUAL(sim_opts_set(o, bad[i].name, bad[i].val, err, sizeof(err)), 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].want));
	}
	/* nothing refused changed the options: still the defaults */
	CU_ASSERT_EQUAL(sim_opts_profile(o), SIM_P_HONEST);
	CU_ASSERT_EQUAL(sim_opts_program_us(o), 20);
	CU_ASSERT_EQUAL(sim_opts_cache_sectors(o), 256);
	CU_ASSERT_EQUAL(sim_opts_seed(o), 1);
	CU_ASSERT_DOUBLE_EQUAL(sim_opts_rate(o), 0.01, 1e-12);
	/* NaN is not below 0 nor above 1: refused at power-on */
	CU_ASSERT_EQUAL(sim_opts_set(o, "rate", "nan", err, sizeof(err)), 0);
	err[0] = 0;
	CU_ASSERT_EQUAL(sim_emmc_open(media, o, &e, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NULL(e);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "is outside 0..1"));
	sim_opts_free(o);
	/* refused before power-on: no session was started */
	e = sim_on(SIM_P_HONEST, 0, 0);
	CU_ASSERT_EQUAL(sim_emmc_session(e), 1);
	sim_emmc_close(e);
}

static void test_cache_readback(void)
{
	uint8_t a[4 * PC_SECTOR], b[2 * PC_SECTOR], got[6 * PC_SECTOR], want[6 * PC_SECTOR];
	struct sim_emmc *e;

	media_new("sim-readback");
	e = sim_on(SIM_P_HONEST, 0, 0);
	CU_ASSERT_EQUAL(sim_emmc_sectors(e), MEDIA_BYTES / PC_SECTOR);
	fill(a, 4, 0xa1);
	fill(b, 2, 0xb2);
	CU_ASSERT_EQUAL(sim_emmc_write(e, 100, a, 4, 0), 0);
	/* overlaps the tail of a and one sector beyond */
	CU_ASSERT_EQUAL(sim_emmc_write(e, 103, b, 2, 0), 0);
	CU_ASSERT_EQUAL(sim_emmc_read(e, 99, got, 6), 0);
	memset(want, 0, sizeof(want));
	memset(want + PC_SECTOR, 0xa1, 3 * PC_SECTOR);
	memset(want + 4 * PC_SECTOR, 0xb2, 2 * PC_SECTOR);
	CU_ASSERT_EQUAL(memcmp(got, want, sizeof(got)), 0);
	/* all of it is still volatile */
	CU_ASSERT_TRUE(media_is_zero(99, 6));
	CU_ASSERT_EQUAL(sim_emmc_write(e, 2047, a, 2, 0), -EINVAL);
	CU_ASSERT_EQUAL(sim_emmc_read(e, 2048, got, 1), -EINVAL);
	sim_emmc_close(e);
}

static void test_flush_destages(void)
{
	uint8_t a[4 * PC_SECTOR], b[2 * PC_SECTOR], want[4 * PC_SECTOR];
	struct sim_emmc *e;

	media_new("sim-flush");
	e = sim_on(SIM_P_HONEST, 0, 0);
	fill(a, 4, 0xa1);
	fill(b, 2, 0xb2);
	CU_ASSERT_EQUAL(sim_emmc_write(e, 10, a, 4, 0), 0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, 11, b, 2, 0), 0);	/* newer, in the middle */
	CU_ASSERT_TRUE(media_is_zero(10, 4));
	CU_ASSERT_EQUAL(sim_emmc_flush(e), 0);
	memcpy(want, a, sizeof(want));
	memset(want + PC_SECTOR, 0xb2, 2 * PC_SECTOR);
	CU_ASSERT_TRUE(media_equals(10, want, 4));
	sim_emmc_close(e);
	/* a power cut after the flush keeps it all */
	CU_ASSERT_TRUE(media_equals(10, want, 4));
}

static void test_fua_supersedes(void)
{
	uint8_t oldd[2 * PC_SECTOR], newd[PC_SECTOR], got[2 * PC_SECTOR];
	struct sim_emmc *e;

	media_new("sim-fua");
	e = sim_on(SIM_P_HONEST, 0, 0);
	fill(oldd, 2, 0x01);
	fill(newd, 1, 0x02);
	CU_ASSERT_EQUAL(sim_emmc_write(e, 50, oldd, 2, 0), 0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, 51, newd, 1, SIM_W_FUA), 0);
	/* FUA reached the NAND at once; the cached old copy of 50 did not */
	CU_ASSERT_TRUE(media_is_zero(50, 1));
	CU_ASSERT_TRUE(media_equals(51, newd, 1));
	CU_ASSERT_EQUAL(sim_emmc_read(e, 50, got, 2), 0);
	CU_ASSERT_EQUAL(memcmp(got, oldd, PC_SECTOR), 0);
	CU_ASSERT_EQUAL(memcmp(got + PC_SECTOR, newd, PC_SECTOR), 0);
	/* the flush must not put the older cached copy over the FUA data */
	CU_ASSERT_EQUAL(sim_emmc_flush(e), 0);
	CU_ASSERT_TRUE(media_equals(50, oldd, 1));
	CU_ASSERT_TRUE(media_equals(51, newd, 1));
	sim_emmc_close(e);
}

/* Untimed (prepare) or timed, the cache behaves the same; only the time goes. */
static void capacity_pressure(int untimed)
{
	uint8_t a[8 * PC_SECTOR], b[8 * PC_SECTOR], c[8 * PC_SECTOR], d[4 * PC_SECTOR], got[8 * PC_SECTOR];
	struct sim_emmc *e = NULL;

	media_new(untimed ? "sim-pressure-untimed" : "sim-pressure");
	if (untimed) {
		/* a second a sector if the time were kept: the test would take a minute */
		struct sim_opts *o = opts(SIM_P_HONEST, 1000000, 16, 0, 0, NULL);

		CU_ASSERT_EQUAL_FATAL(sim_opts_set(o, "untimed", "1", err, sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(open_with(o, &e), 0);
	} else {
		e = sim_on(SIM_P_HONEST, 0, 16);
	}
	fill(a, 8, 0xaa);
	fill(b, 8, 0xbb);
	fill(c, 8, 0xcc);
	fill(d, 4, 0xdd);
	CU_ASSERT_EQUAL(sim_emmc_write(e, 100, a, 8, 0), 0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, 200, b, 8, 0), 0);
	CU_ASSERT_TRUE(media_is_zero(100, 8));
	/* c does not fit: the oldest entry (a), and only it, is destaged */
	CU_ASSERT_EQUAL(sim_emmc_write(e, 300, c, 8, 0), 0);
	CU_ASSERT_TRUE(media_equals(100, a, 8));
	CU_ASSERT_TRUE(media_is_zero(200, 8));
	CU_ASSERT_TRUE(media_is_zero(300, 8));
	/* superseding half of b frees room: d fits without destaging anything */
	CU_ASSERT_EQUAL(sim_emmc_write(e, 204, d, 4, 0), 0);
	CU_ASSERT_TRUE(media_is_zero(200, 8));
	CU_ASSERT_EQUAL(sim_emmc_read(e, 200, got, 8), 0);
	CU_ASSERT_EQUAL(memcmp(got, b, 4 * PC_SECTOR), 0);
	CU_ASSERT_EQUAL(memcmp(got + 4 * PC_SECTOR, d, 4 * PC_SECTOR), 0);
	/* now b's live half goes first; d (newer) then lands, not old b, in 204.. */
	CU_ASSERT_EQUAL(sim_emmc_write(e, 400, a, 8, 0), 0);
	CU_ASSERT_TRUE(media_equals(200, b, 4));
	CU_ASSERT_TRUE(media_is_zero(204, 4));
	CU_ASSERT_EQUAL(sim_emmc_flush(e), 0);
	CU_ASSERT_TRUE(media_equals(204, d, 4));
	CU_ASSERT_TRUE(media_equals(300, c, 8));
	CU_ASSERT_TRUE(media_equals(400, a, 8));
	/* larger than the whole cache: streams through */
	uint8_t *big = malloc(20 * PC_SECTOR);
	fill(big, 20, 0xee);
	CU_ASSERT_EQUAL(sim_emmc_write(e, 500, c, 8, 0), 0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, 504, big, 20, 0), 0);
	CU_ASSERT_TRUE(media_equals(504, big, 20));
	CU_ASSERT_TRUE(media_equals(500, c, 4));
	free(big);
	sim_emmc_close(e);
}

static void test_capacity_pressure(void)
{
	capacity_pressure(0);
}

static void test_untimed(void)
{
	capacity_pressure(1);
}

/* A dropped line of session 1 for seq, with k of n sectors. */
static int has_dropped(json_object *lines, uint64_t seq, uint64_t lba, uint64_t k, uint64_t n)
{
	int count;

	truth_find(lines, "dropped", -1, &count);
	for (int i = 0; i < count; i++) {
		json_object *o = truth_find(lines, "dropped", i, NULL);

		if (u64_of(o, "seq") == seq && u64_of(o, "lba") == lba && u64_of(o, "sectors") == k &&
		    u64_of(o, "of") == n && u64_of(o, "session") == 1)
			return 1;
	}
	return 0;
}

static void test_lying_flush(void)
{
	uint8_t r1[REC_SIZE], r2[REC_SIZE], r3[REC_SIZE];
	json_object *lines, *o, *ents;
	struct sim_emmc *e;
	int bad, n;

	media_new("sim-lying");
	record(r1, 0, 1);
	record(r2, 1, 2);
	record(r3, 2, 3);
	e = sim_on(SIM_P_LYING_FLUSH, 0, 2 * SPR);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 0), r1, SPR, 0), 0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 1), r2, SPR, 0), 0);
	CU_ASSERT_EQUAL(sim_emmc_flush(e), 0);
	/* success, yet nothing reached the NAND */
	CU_ASSERT_TRUE(media_is_zero(pc_slot_lba(&geom, 0), 2 * SPR));
	/* capacity pressure still destages: seq 1 lands after all */
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 2), r3, SPR, 0), 0);
	CU_ASSERT_TRUE(media_equals(pc_slot_lba(&geom, 0), r1, SPR));
	CU_ASSERT_EQUAL(sim_emmc_flush(e), 0);

	lines = truth_lines(&bad);
	CU_ASSERT_EQUAL(bad, 0);
	o = truth_find(lines, "power_on", 0, &n);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			       "{\"ev\":\"power_on\",\"session\":1,\"profile\":\"lying-flush\","
			       "\"cache_sectors\":16,\"program_us\":20}");
	o = truth_find(lines, "flush_lie", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			       "{\"ev\":\"flush_lie\",\"session\":1,\"entries\":"
			       "[{\"lba\":8,\"n\":8,\"seq\":1},{\"lba\":16,\"n\":8,\"seq\":2}]}");
	o = truth_find(lines, "flush_lie", 1, NULL);
	CU_ASSERT_TRUE(json_object_object_get_ex(o, "entries", &ents));
	CU_ASSERT_EQUAL(json_object_array_length(ents), 2);
	CU_ASSERT_EQUAL(u64_of(json_object_array_get_idx(ents, 0), "seq"), 2);
	CU_ASSERT_EQUAL(u64_of(json_object_array_get_idx(ents, 1), "seq"), 3);
	json_object_put(lines);

	/* the cut: no flush, the cache dies */
	sim_emmc_close(e);
	e = sim_on(SIM_P_HONEST, 0, 0);
	CU_ASSERT_EQUAL(sim_emmc_session(e), 2);
	lines = truth_lines(&bad);
	truth_find(lines, "dropped", -1, &n);
	CU_ASSERT_EQUAL(n, 2);
	/* seq 2 was listed twice and is settled once; seq 1 got destaged in time */
	CU_ASSERT_TRUE(has_dropped(lines, 2, pc_slot_lba(&geom, 1), SPR, SPR));
	CU_ASSERT_TRUE(has_dropped(lines, 3, pc_slot_lba(&geom, 2), SPR, SPR));
	o = truth_find(lines, "settled", 0, &n);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 1);
	CU_ASSERT_EQUAL(u64_of(o, "dropped_records"), 2);
	/* settled before the new session starts */
	o = json_object_array_get_idx(lines, json_object_array_length(lines) - 1);
	CU_ASSERT_STRING_EQUAL(ev_of(o), "power_on");
	CU_ASSERT_EQUAL(u64_of(o, "session"), 2);
	json_object_put(lines);
	sim_emmc_close(e);
	/* the next power-on settles session 2 (nothing to drop) and leaves 1 alone */
	e = sim_on(SIM_P_HONEST, 0, 0);
	CU_ASSERT_EQUAL(sim_emmc_session(e), 3);
	sim_emmc_close(e);
	lines = truth_lines(&bad);
	truth_find(lines, "dropped", -1, &n);
	CU_ASSERT_EQUAL(n, 2);
	o = truth_find(lines, "settled", 1, &n);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 2);
	CU_ASSERT_EQUAL(u64_of(o, "dropped_records"), 0);
	json_object_put(lines);
}

static void test_honest_reopen(void)
{
	uint8_t r1[REC_SIZE], r2[REC_SIZE];
	json_object *lines, *o;
	struct sim_emmc *e;
	int bad, n;

	media_new("sim-honest");
	record(r1, 0, 1);
	record(r2, 1, 2);
	e = sim_on(SIM_P_HONEST, 0, 0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 0), r1, SPR, 0), 0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 1), r2, SPR, 0), 0);
	CU_ASSERT_EQUAL(sim_emmc_flush(e), 0);
	sim_emmc_close(e);
	e = sim_on(SIM_P_HONEST, 0, 0);
	CU_ASSERT_EQUAL(sim_emmc_session(e), 2);
	sim_emmc_close(e);
	CU_ASSERT_TRUE(media_equals(pc_slot_lba(&geom, 0), r1, SPR));
	CU_ASSERT_TRUE(media_equals(pc_slot_lba(&geom, 1), r2, SPR));
	lines = truth_lines(&bad);
	CU_ASSERT_EQUAL(bad, 0);
	truth_find(lines, "dropped", -1, &n);
	CU_ASSERT_EQUAL(n, 0);
	truth_find(lines, "flush_lie", -1, &n);
	CU_ASSERT_EQUAL(n, 0);
	o = truth_find(lines, "settled", 0, &n);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "dropped_records"), 0);
	json_object_put(lines);
}

static void test_fua_ignored(void)
{
	uint8_t r1[REC_SIZE], r2[REC_SIZE];
	json_object *lines, *o;
	struct sim_emmc *e;
	int bad, n;

	media_new("sim-fuaign");
	record(r1, 0, 7);
	record(r2, 1, 8);
	e = sim_on(SIM_P_FUA_IGNORED, 0, 0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 0), r1, SPR, SIM_W_FUA), 0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 1), r2, SPR, SIM_W_FUA), 0);
	CU_ASSERT_TRUE(media_is_zero(pc_slot_lba(&geom, 0), 2 * SPR));
	/* an honest flush still destages the first half */
	CU_ASSERT_EQUAL(sim_emmc_flush(e), 0);
	CU_ASSERT_TRUE(media_equals(pc_slot_lba(&geom, 0), r1, SPR));
	record(r1, 0, 9);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 0), r1, SPR, SIM_W_FUA), 0);
	lines = truth_lines(&bad);
	o = truth_find(lines, "fua_ignored", 0, &n);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			       "{\"ev\":\"fua_ignored\",\"session\":1,\"lba\":8,\"n\":8,\"seq\":7}");
	json_object_put(lines);
	sim_emmc_close(e);
	e = sim_on(SIM_P_HONEST, 0, 0);
	sim_emmc_close(e);
	lines = truth_lines(&bad);
	truth_find(lines, "dropped", -1, &n);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_TRUE(has_dropped(lines, 9, pc_slot_lba(&geom, 0), SPR, SPR));
	o = truth_find(lines, "settled", 0, NULL);
	CU_ASSERT_EQUAL(u64_of(o, "dropped_records"), 1);
	json_object_put(lines);
}

static void test_no_cache(void)
{
	uint8_t a[3 * PC_SECTOR];
	json_object *lines;
	struct sim_emmc *e;
	int bad, n;

	media_new("sim-nocache");
	e = sim_on(SIM_P_NO_CACHE | SIM_P_LYING_FLUSH, 0, 0);
	fill(a, 3, 0x5a);
	CU_ASSERT_EQUAL(sim_emmc_write(e, 30, a, 3, 0), 0);
	CU_ASSERT_TRUE(media_equals(30, a, 3));
	CU_ASSERT_EQUAL(sim_emmc_flush(e), 0);
	sim_emmc_close(e);
	lines = truth_lines(&bad);
	truth_find(lines, "flush_lie", -1, &n);
	CU_ASSERT_EQUAL(n, 0);	/* nothing cached, nothing lied about */
	json_object_put(lines);
}

static void test_torn_log(void)
{
	char path[PATH_MAX + 16];
	json_object *lines, *o;
	struct sim_emmc *e;
	int fd, bad, n;

	media_new("sim-torn");
	sim_emmc_close(sim_on(SIM_P_HONEST, 0, 0));
	snprintf(path, sizeof(path), "%s.truth.jsonl", media);
	fd = open(path, O_WRONLY | O_APPEND);
	CU_ASSERT_FATAL(fd >= 0);
	/* a host cut mid-line, even one that looks like a power_on */
	CU_ASSERT_EQUAL(pc_write_all(fd, "{\"ev\":\"power_on\",\"sess", 23), 0);
	close(fd);
	e = sim_on(SIM_P_LYING_FLUSH, 0, 0);
	CU_ASSERT_EQUAL(sim_emmc_session(e), 2);
	sim_emmc_close(e);
	lines = truth_lines(&bad);
	CU_ASSERT_EQUAL(bad, 1);
	o = truth_find(lines, "power_on", -1, &n);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 2);
	/* the first line after the torn one starts a line of its own */
	o = truth_find(lines, "settled", -1, &n);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 1);
	json_object_put(lines);
	e = sim_on(SIM_P_HONEST, 0, 0);
	CU_ASSERT_EQUAL(sim_emmc_session(e), 3);
	sim_emmc_close(e);
}

/* The board: FUA records into a ring of slots until the power goes. */
static void __attribute__((noreturn)) kill_child(int ready)
{
	uint8_t rec[REC_SIZE];
	struct sim_emmc *e = NULL;

	if (open_with(opts(SIM_P_HONEST, 1500, 0, 0, 0, NULL), &e) != 0)
		_exit(3);
	if (write(ready, "r", 1) != 1)
		_exit(4);
	for (uint64_t seq = 1;; seq++) {
		uint32_t slot = (uint32_t)((seq - 1) % 16);

		record(rec, slot, seq);
		if (sim_emmc_write(e, pc_slot_lba(&geom, slot), rec, SPR, SIM_W_FUA) != 0)
			_exit(5);
	}
}

static void test_kill(void)
{
	uint8_t gen0[REC_SIZE], got[REC_SIZE];
	unsigned newsect = 0, mixed = 0;
	struct pc_sector_hdr h;

	media_new("sim-kill");
	/* generation 0 in the 16 slots the child writes */
	for (uint32_t slot = 0; slot < 16; slot++) {
		int fd = open(media, O_WRONLY);

		pc_record_build(gen0, &geom, slot, 0, 0, 0);
		CU_ASSERT_EQUAL(pc_pwrite_all(fd, gen0, REC_SIZE, (off_t)(pc_slot_lba(&geom, slot) * PC_SECTOR)), 0);
		close(fd);
	}
	for (int round = 0; round < 6; round++) {
		int pfd[2], status;
		char c;
		pid_t pid;

		CU_ASSERT_FATAL(pipe(pfd) == 0);
		pid = fork();
		CU_ASSERT_FATAL(pid >= 0);
		if (pid == 0) {
			close(pfd[0]);
			kill_child(pfd[1]);
		}
		close(pfd[1]);
		CU_ASSERT_EQUAL_FATAL(read(pfd[0], &c, 1), 1);
		close(pfd[0]);
		/* never a multiple of the 1.5 ms program time */
		pc_sleep_us(7000 + (uint64_t)round * 9300);
		kill(pid, SIGKILL);
		CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
		CU_ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

		for (uint32_t slot = 0; slot < 16; slot++) {
			unsigned fresh = 0;

			media_pread(pc_slot_lba(&geom, slot), got, SPR);
			pc_record_build(gen0, &geom, slot, 0, 0, 0);
			for (uint32_t i = 0; i < SPR; i++) {
				const uint8_t *s = got + i * PC_SECTOR;
				int old = memcmp(s, gen0 + i * PC_SECTOR, PC_SECTOR) == 0;

				/* whole old sector, or a whole sector of some record */
				if (old)
					continue;
				CU_ASSERT_EQUAL(pc_sector_check(s, &geom, &h), PC_SECT_VALID);
				CU_ASSERT_EQUAL(h.lba, pc_slot_lba(&geom, slot) + i);
				CU_ASSERT_TRUE(h.seq >= 1);
				fresh++;
			}
			newsect += fresh;
			if (fresh && fresh < SPR)
				mixed++;
		}
	}
	/* the cuts really landed in the middle of writing */
	CU_ASSERT_TRUE(newsect > 0);
	CU_ASSERT_TRUE(mixed > 0);
}

/* The board: one FUA record (seq, at slot) under profile, program_us a sector. */
static void __attribute__((noreturn)) cut_child(int ready, unsigned profile, uint32_t program_us,
						uint32_t slot, uint64_t seq)
{
	uint8_t rec[REC_SIZE];
	struct sim_emmc *e = NULL;

	if (open_with(opts(profile, program_us, 0, 1, 1.0, NULL), &e) != 0)
		_exit(3);
	if (write(ready, "r", 1) != 1)
		_exit(4);
	record(rec, slot, seq);
	sim_emmc_write(e, pc_slot_lba(&geom, slot), rec, SPR, SIM_W_FUA);
	_exit(0);
}

/*
 * A power cut mid-program: start the board, wait until the first want bytes
 * of sector lba hold the new record, then SIGKILL it. 0 if the kill found it
 * still writing.
 */
static int cut_after(unsigned profile, uint32_t program_us, uint32_t slot, uint64_t seq, uint64_t lba,
		     size_t want)
{
	uint8_t rec[REC_SIZE], got[PC_SECTOR];
	const uint8_t *w = rec + (lba - pc_slot_lba(&geom, slot)) * PC_SECTOR;
	uint64_t t0;
	int pfd[2], status, fd;
	char c;
	pid_t pid;

	record(rec, slot, seq);
	CU_ASSERT_FATAL(pipe(pfd) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		cut_child(pfd[1], profile, program_us, slot, seq);
	}
	close(pfd[1]);
	CU_ASSERT_EQUAL(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	fd = open(media, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	/* generous: a loaded machine may take its time to start the board */
	for (t0 = pc_now_ms(); pc_now_ms() - t0 < 60000; pc_sleep_us(200)) {
		if (pc_pread_all(fd, got, PC_SECTOR, (off_t)(lba * PC_SECTOR)) == 0 && memcmp(got, w, want) == 0)
			break;
	}
	close(fd);
	kill(pid, SIGKILL);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : -1;
}

/*
 * A board whose card has an exact cut planned (cut_op, nth, delay_us), in a
 * process group of its own (the cut kills the group): records seq 1..8 into
 * slots 0..7, FUA writes (fua) or plain ones with a flush after every two.
 */
static void __attribute__((noreturn)) exact_child(unsigned op, uint32_t nth, uint32_t delay_us, int fua)
{
	uint8_t rec[REC_SIZE];
	struct sim_emmc *e = NULL;
	char cut[64];

	snprintf(cut, sizeof(cut), "%s:%" PRIu32 ":%" PRIu32, op == CUT_FLUSH ? "flush" : "fua", nth, delay_us);
	if (setpgid(0, 0) || open_with(opts(SIM_P_HONEST, 100, 0, 7, 0, cut), &e) != 0)
		_exit(3);
	for (uint32_t seq = 1; seq <= 8; seq++) {
		record(rec, seq - 1, seq);
		if (sim_emmc_write(e, pc_slot_lba(&geom, seq - 1), rec, SPR, fua ? SIM_W_FUA : 0))
			_exit(4);
		if (!fua && seq % 2 == 0 && sim_emmc_flush(e))
			_exit(5);
	}
	sim_emmc_close(e);
	_exit(0);
}

/* 0 if the board was killed (the cut), 1 if it finished, -1 otherwise. */
static int run_exact(unsigned op, uint32_t nth, uint32_t delay_us, int fua)
{
	int status;
	pid_t pid = fork();

	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0)
		exact_child(op, nth, delay_us, fua);
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 1 : -1;
}

/* Slot slot holds its first k sectors of record seq, the rest gen-0. */
static int slot_holds(uint32_t slot, uint64_t seq, uint32_t k)
{
	uint8_t rec[REC_SIZE], old[PC_SECTOR];
	uint64_t lba = pc_slot_lba(&geom, slot);

	record(rec, slot, seq);
	if (k && !media_equals(lba, rec, k))
		return 0;
	for (uint32_t i = k; i < SPR; i++) {
		gen0_sector(lba + i, old);
		if (!media_equals(lba + i, old, 1))
			return 0;
	}
	return 1;
}

static void test_exact_cut_flush(void)
{
	json_object *lines, *o, *ents;
	int bad, n;

	/* the 2nd flush: records 3 and 4 are cached, none of them programmed */
	media_new("sim-cutflush");
	media_prepare();
	CU_ASSERT_EQUAL_FATAL(run_exact(CUT_FLUSH, 2, 0, 0), 0);
	CU_ASSERT_TRUE(slot_holds(0, 1, SPR));
	CU_ASSERT_TRUE(slot_holds(1, 2, SPR));
	CU_ASSERT_TRUE(slot_holds(2, 3, 0));
	CU_ASSERT_TRUE(slot_holds(3, 4, 0));
	lines = truth_lines(&bad);
	CU_ASSERT_EQUAL(bad, 0);
	o = truth_find(lines, "cut_flush", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 1);
	CU_ASSERT_EQUAL(u64_of(o, "nth"), 2);
	CU_ASSERT_EQUAL(u64_of(o, "delay_us"), 0);
	CU_ASSERT_EQUAL(u64_of(o, "programmed"), 0);
	CU_ASSERT_STRING_EQUAL(str_of(o, "expect"), "none");
	CU_ASSERT_FATAL(json_object_object_get_ex(o, "entries", &ents));
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(ents), 2);
	CU_ASSERT_EQUAL(u64_of(json_object_array_get_idx(ents, 0), "seq"), 3);
	CU_ASSERT_EQUAL(u64_of(json_object_array_get_idx(ents, 0), "lba"), pc_slot_lba(&geom, 2));
	CU_ASSERT_EQUAL(u64_of(json_object_array_get_idx(ents, 1), "seq"), 4);
	CU_ASSERT_EQUAL(u64_of(json_object_array_get_idx(ents, 1), "n"), SPR);
	json_object_put(lines);

	/* 1 ms into the 3rd flush at 100 us a sector: record 5 whole, 2 sectors of 6 */
	media_new("sim-cutflush-delay");
	media_prepare();
	CU_ASSERT_EQUAL_FATAL(run_exact(CUT_FLUSH, 3, 1000, 0), 0);
	CU_ASSERT_TRUE(slot_holds(3, 4, SPR));
	CU_ASSERT_TRUE(slot_holds(4, 5, SPR));
	CU_ASSERT_TRUE(slot_holds(5, 6, 2));
	lines = truth_lines(&bad);
	o = truth_find(lines, "cut_flush", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "nth"), 3);
	CU_ASSERT_EQUAL(u64_of(o, "delay_us"), 1000);
	CU_ASSERT_EQUAL(u64_of(o, "programmed"), 10);
	json_object_put(lines);

	/* a delay longer than the flush: it completes, and the power goes before it says so */
	media_new("sim-cutflush-long");
	media_prepare();
	CU_ASSERT_EQUAL_FATAL(run_exact(CUT_FLUSH, 1, 100000, 0), 0);
	CU_ASSERT_TRUE(slot_holds(1, 2, SPR));
	CU_ASSERT_TRUE(slot_holds(2, 3, 0));
	lines = truth_lines(&bad);
	o = truth_find(lines, "cut_flush", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "programmed"), 2 * SPR);
	json_object_put(lines);

	/* a flush that never comes: no cut */
	media_new("sim-cutflush-none");
	media_prepare();
	CU_ASSERT_EQUAL(run_exact(CUT_FLUSH, 5, 0, 0), 1);
	lines = truth_lines(&bad);
	truth_find(lines, "cut_flush", 0, &n);
	CU_ASSERT_EQUAL(n, 0);
	json_object_put(lines);
}

static void test_exact_cut_fua(void)
{
	uint32_t k = sim_cut_fua_sectors(7, 1, 3, SPR);
	json_object *lines, *o;
	int bad, n;

	/* seeded, inside the write: 1..n-1 sectors, and the same every time */
	CU_ASSERT_TRUE(k >= 1 && k < SPR);
	CU_ASSERT_EQUAL(sim_cut_fua_sectors(7, 1, 3, SPR), k);
	CU_ASSERT_EQUAL(sim_cut_fua_sectors(7, 1, 3, 1), 0);
	for (uint32_t i = 1; i < 200; i++) {
		uint32_t x = sim_cut_fua_sectors(i, i % 5, i, 2);

		CU_ASSERT_EQUAL(x, 1);
		x = sim_cut_fua_sectors(i, i % 5, i, 64);
		CU_ASSERT_TRUE(x >= 1 && x <= 63);
	}
	media_new("sim-cutfua");
	media_prepare();
	CU_ASSERT_EQUAL_FATAL(run_exact(CUT_FUA, 3, 0, 1), 0);
	CU_ASSERT_TRUE(slot_holds(0, 1, SPR));
	CU_ASSERT_TRUE(slot_holds(1, 2, SPR));
	CU_ASSERT_TRUE(slot_holds(2, 3, k));
	CU_ASSERT_TRUE(slot_holds(3, 4, 0));
	lines = truth_lines(&bad);
	CU_ASSERT_EQUAL(bad, 0);
	o = truth_find(lines, "cut_fua", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 1);
	CU_ASSERT_EQUAL(u64_of(o, "nth"), 3);
	CU_ASSERT_EQUAL(u64_of(o, "lba"), pc_slot_lba(&geom, 2));
	CU_ASSERT_EQUAL(u64_of(o, "n"), SPR);
	CU_ASSERT_EQUAL(u64_of(o, "seq"), 3);
	CU_ASSERT_EQUAL(u64_of(o, "programmed"), k);
	CU_ASSERT_STRING_EQUAL(str_of(o, "expect"), "torn");
	json_object_put(lines);

	/* 300 us into the 5th at 100 us a sector: 3 sectors */
	media_new("sim-cutfua-delay");
	media_prepare();
	CU_ASSERT_EQUAL_FATAL(run_exact(CUT_FUA, 5, 300, 1), 0);
	CU_ASSERT_TRUE(slot_holds(3, 4, SPR));
	CU_ASSERT_TRUE(slot_holds(4, 5, 3));
	lines = truth_lines(&bad);
	o = truth_find(lines, "cut_fua", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "programmed"), 3);
	CU_ASSERT_EQUAL(u64_of(o, "delay_us"), 300);
	json_object_put(lines);

	/* a delay past the whole write: programmed, never completed */
	media_new("sim-cutfua-long");
	media_prepare();
	CU_ASSERT_EQUAL_FATAL(run_exact(CUT_FUA, 1, 5000, 1), 0);
	CU_ASSERT_TRUE(slot_holds(0, 1, SPR));
	lines = truth_lines(&bad);
	o = truth_find(lines, "cut_fua", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "programmed"), SPR);
	CU_ASSERT_STRING_EQUAL(str_of(o, "expect"), "intact");
	json_object_put(lines);

	/* flushes are not FUA writes, and a plain write is not either */
	media_new("sim-cutfua-none");
	media_prepare();
	CU_ASSERT_EQUAL(run_exact(CUT_FUA, 1, 0, 0), 1);
}

static void test_subsector_tear(void)
{
	uint8_t rec[REC_SIZE], old[PC_SECTOR], got[PC_SECTOR];
	uint64_t lba = 0, off, m;
	json_object *lines, *o;
	struct sim_emmc *e;
	int bad, n, fd;

	media_new("sim-subtear");
	media_prepare();
	lba = pc_slot_lba(&geom, 3);
	/* 40 ms a chunk: the kill lands after the first sector's first chunk */
	CU_ASSERT_EQUAL_FATAL(cut_after(SIM_P_SUBSECTOR_TEAR, 8 * 40000, 3, 5, lba, 64), 0);
	/*
	 * A kill during a chunk's pwrite() lets the chunk land but not the status
	 * store after it. Play that: put the next chunk down by hand; the
	 * power-on must go by the media, not by the status page.
	 */
	record(rec, 3, 5);
	media_pread(lba, got, 1);
	for (m = 0; m < 8 && memcmp(got + m * 64, rec + m * 64, 64) == 0; m++)
		;
	CU_ASSERT_FATAL(m >= 1 && m <= 6);
	fd = open(media, O_WRONLY);
	CU_ASSERT_EQUAL(pc_pwrite_all(fd, rec + m * 64, 64, (off_t)(lba * PC_SECTOR + m * 64)), 0);
	close(fd);
	e = sim_on(SIM_P_HONEST, 0, 0);
	CU_ASSERT_EQUAL(sim_emmc_session(e), 2);
	sim_emmc_close(e);
	lines = truth_lines(&bad);
	CU_ASSERT_EQUAL(bad, 0);
	o = truth_find(lines, "subsector_tear", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 1);
	CU_ASSERT_EQUAL(u64_of(o, "lba"), lba);
	CU_ASSERT_EQUAL(u64_of(o, "sector_lba"), lba);
	CU_ASSERT_EQUAL(u64_of(o, "seq"), 5);
	CU_ASSERT_STRING_EQUAL(str_of(o, "expect"), "torn_sector");
	off = u64_of(o, "offset");
	CU_ASSERT_EQUAL_FATAL(off, (m + 1) * 64);
	/* the bytes say what the line says: new before the offset, old from it on */
	record(rec, 3, 5);
	gen0_sector(lba, old);
	media_pread(lba, got, 1);
	CU_ASSERT_EQUAL(memcmp(got, rec, off), 0);
	CU_ASSERT_EQUAL(memcmp(got + off, old + off, PC_SECTOR - off), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(rec + off, old + off, PC_SECTOR - off), 0);
	for (uint32_t i = 1; i < SPR; i++) {
		gen0_sector(lba + i, old);
		CU_ASSERT_TRUE(media_equals(lba + i, old, 1));
	}
	truth_find(lines, "paired_page", -1, &n);
	CU_ASSERT_EQUAL(n, 0);
	json_object_put(lines);
	/* the status page was consumed: the next power-on logs no second tear */
	sim_emmc_close(sim_on(SIM_P_SUBSECTOR_TEAR | SIM_P_PAIRED_PAGE, 0, 0));
	lines = truth_lines(&bad);
	truth_find(lines, "subsector_tear", -1, &n);
	CU_ASSERT_EQUAL(n, 1);
	truth_find(lines, "paired_page", -1, &n);
	CU_ASSERT_EQUAL(n, 0);
	json_object_put(lines);
}

static void test_paired_page(void)
{
	uint8_t rec[REC_SIZE], old[PC_SECTOR], got[PC_SECTOR];
	uint64_t lba, cut, pl, b, k;
	json_object *lines, *o;
	int bad, n;

	/*
	 * 250 ms a sector: the kill comes once the first sector is on the media,
	 * in the program time of one of the other seven. Which one depends on
	 * how soon this process runs again (the second on an idle machine, a
	 * later one under load), so it is read from the media: the sectors
	 * before the interrupted one are new, it and those after are old (the
	 * program time comes before a sector's one pwrite). A kill that lands
	 * after a sector's pwrite but before its program is marked done (the
	 * board preempted there) interrupted no program: no pair page damaged,
	 * no line; then once more, on fresh media (5 tries: one must land in a
	 * program).
	 */
	for (unsigned t = 0; t < 5; t++) {
		char name[32];

		snprintf(name, sizeof(name), "sim-paired-%u", t);
		media_new(name);
		media_prepare();
		lba = pc_slot_lba(&geom, 8);
		CU_ASSERT_EQUAL_FATAL(cut_after(SIM_P_PAIRED_PAGE, 250000, 8, 6, lba, PC_SECTOR), 0);
		record(rec, 8, 6);
		for (k = 1; k < SPR; k++) {
			media_pread(lba + k, got, 1);
			if (memcmp(got, rec + k * PC_SECTOR, PC_SECTOR) != 0)
				break;
		}
		/* the whole record made it only if this process slept for 1.75 s */
		CU_ASSERT_FATAL(k < SPR);
		sim_emmc_close(sim_on_f(SIM_P_PAIRED_PAGE, 0, 42, 1.0));
		lines = truth_lines(&bad);
		o = truth_find(lines, "paired_page", 0, &n);
		if (n == 1)
			break;
		CU_ASSERT_EQUAL(n, 0);
		json_object_put(lines);
	}
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 1);
	cut = u64_of(o, "cut_lba");
	pl = u64_of(o, "sector_lba");
	b = u64_of(o, "bits");
	CU_ASSERT_EQUAL(cut, lba + k);
	CU_ASSERT_EQUAL_FATAL(pl, cut - 64);
	CU_ASSERT_EQUAL(u64_of(o, "lba"), pc_slot_lba(&geom, (uint32_t)((pl - PC_SB_RESERVE_SECT) / SPR)));
	CU_ASSERT_EQUAL(u64_of(o, "seq"), 0);
	CU_ASSERT_STRING_EQUAL(str_of(o, "expect"), "corrupt-or-collateral");
	CU_ASSERT_TRUE(b >= 1 && b <= 8);
	/* exactly b bits of the pair page flipped */
	gen0_sector(pl, old);
	media_pread(pl, got, 1);
	CU_ASSERT_EQUAL(bits_differ(got, old, PC_SECTOR), b);
	/* the interrupted sector itself is whole and old: no subsector-tear here */
	gen0_sector(cut, old);
	CU_ASSERT_TRUE(media_equals(cut, old, 1));
	truth_find(lines, "subsector_tear", -1, &n);
	CU_ASSERT_EQUAL(n, 0);
	json_object_put(lines);
	/* once per cut */
	sim_emmc_close(sim_on_f(SIM_P_PAIRED_PAGE, 0, 42, 1.0));
	lines = truth_lines(&bad);
	truth_find(lines, "paired_page", -1, &n);
	CU_ASSERT_EQUAL(n, 1);
	json_object_put(lines);
	media_pread(pl, old, 1);
	CU_ASSERT_EQUAL(memcmp(got, old, PC_SECTOR), 0);
}

static void test_tearing_relwr(void)
{
	uint8_t rec[REC_SIZE], rec2[REC_SIZE], got[REC_SIZE], old[PC_SECTOR];
	uint64_t lba, k;
	json_object *lines, *o;
	struct sim_emmc *e;
	int bad, n;

	media_new("sim-tearrel");
	media_prepare();
	lba = pc_slot_lba(&geom, 2);
	record(rec, 2, 9);
	e = sim_on_f(SIM_P_TEARING_RELWR, 0, 7, 1.0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, lba, rec, SPR, SIM_W_FUA), 0);
	lines = truth_lines(&bad);
	o = truth_find(lines, "relwr_early_ack", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 1);
	CU_ASSERT_EQUAL(u64_of(o, "lba"), lba);
	CU_ASSERT_EQUAL(u64_of(o, "n"), SPR);
	CU_ASSERT_EQUAL(u64_of(o, "seq"), 9);
	k = u64_of(o, "programmed");
	CU_ASSERT_FATAL(k >= 1 && k < SPR);
	json_object_put(lines);
	/* it completed, yet only k sectors are on the NAND; reads see all of it */
	CU_ASSERT_TRUE(media_equals(lba, rec, (uint32_t)k));
	for (uint64_t i = k; i < SPR; i++) {
		gen0_sector(lba + i, old);
		CU_ASSERT_TRUE(media_equals(lba + i, old, 1));
	}
	CU_ASSERT_EQUAL(sim_emmc_read(e, lba, got, SPR), 0);
	CU_ASSERT_EQUAL(memcmp(got, rec, REC_SIZE), 0);
	/* a normal write is no reliable write: cached, no early ack */
	record(rec2, 4, 10);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 4), rec2, SPR, 0), 0);
	sim_emmc_close(e);	/* the cut */

	e = sim_on(SIM_P_HONEST, 0, 0);
	sim_emmc_close(e);
	lines = truth_lines(&bad);
	o = truth_find(lines, "torn_acked", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 1);
	CU_ASSERT_EQUAL(u64_of(o, "lba"), lba);
	CU_ASSERT_EQUAL(u64_of(o, "n"), SPR);
	CU_ASSERT_EQUAL(u64_of(o, "seq"), 9);
	CU_ASSERT_EQUAL(u64_of(o, "new_sectors"), k);
	CU_ASSERT_STRING_EQUAL(str_of(o, "expect"), "torn");
	truth_find(lines, "relwr_early_ack", -1, &n);
	CU_ASSERT_EQUAL(n, 1);
	json_object_put(lines);

	/* a flush after the early ack puts the tail down: nothing is torn */
	record(rec, 5, 11);
	e = sim_on_f(SIM_P_TEARING_RELWR, 0, 7, 1.0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 5), rec, SPR, SIM_W_FUA), 0);
	CU_ASSERT_EQUAL(sim_emmc_flush(e), 0);
	sim_emmc_close(e);
	CU_ASSERT_TRUE(media_equals(pc_slot_lba(&geom, 5), rec, SPR));
	sim_emmc_close(sim_on(SIM_P_HONEST, 0, 0));
	lines = truth_lines(&bad);
	truth_find(lines, "relwr_early_ack", -1, &n);
	CU_ASSERT_EQUAL(n, 2);
	truth_find(lines, "torn_acked", -1, &n);
	CU_ASSERT_EQUAL(n, 1);
	json_object_put(lines);
}

/* One misdirected FUA write and one cached one on fresh media; returns the first landing. */
static uint64_t misdirect_run(const char *name)
{
	uint8_t rec[REC_SIZE], rec2[REC_SIZE], g0[REC_SIZE], got[REC_SIZE];
	uint64_t lba = 0, land = 0, land2, end;
	json_object *lines, *o;
	struct sim_emmc *e;
	int bad, n;

	media_new(name);
	media_prepare();
	end = pc_slot_lba(&geom, geom.nslots);
	lba = pc_slot_lba(&geom, 5);
	record(rec, 5, 11);
	pc_record_build(g0, &geom, 5, 0, 0, 0);
	e = sim_on_f(SIM_P_MISDIRECT, 0, 3, 1.0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, lba, rec, SPR, SIM_W_FUA), 0);
	lines = truth_lines(&bad);
	o = truth_find(lines, "misdirect", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 1);
	CU_ASSERT_EQUAL(u64_of(o, "lba"), lba);
	CU_ASSERT_EQUAL(u64_of(o, "n"), SPR);
	CU_ASSERT_EQUAL(u64_of(o, "seq"), 11);
	CU_ASSERT_STRING_EQUAL(str_of(o, "expect"), "misdirected");
	land = u64_of(o, "landed");
	json_object_put(lines);
	CU_ASSERT_FATAL(land >= PC_SB_RESERVE_SECT && land + SPR <= end && land != lba);
	CU_ASSERT_EQUAL((land - PC_SB_RESERVE_SECT) % SPR, 0);
	/* the data is at the landing place; the intended sectors keep the old record */
	CU_ASSERT_TRUE(media_equals(land, rec, SPR));
	CU_ASSERT_TRUE(media_equals(lba, g0, SPR));
	CU_ASSERT_EQUAL(sim_emmc_read(e, lba, got, SPR), 0);
	CU_ASSERT_EQUAL(memcmp(got, g0, REC_SIZE), 0);
	/* a cached write goes astray at once, too */
	record(rec2, 6, 12);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 6), rec2, SPR, 0), 0);
	lines = truth_lines(&bad);
	o = truth_find(lines, "misdirect", 1, &n);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(u64_of(o, "seq"), 12);
	land2 = u64_of(o, "landed");
	json_object_put(lines);
	CU_ASSERT_FATAL(land2 >= PC_SB_RESERVE_SECT && land2 + SPR <= end);
	CU_ASSERT_NOT_EQUAL(land2, pc_slot_lba(&geom, 6));
	CU_ASSERT_TRUE(media_equals(land2, rec2, SPR));
	pc_record_build(g0, &geom, 6, 0, 0, 0);
	CU_ASSERT_TRUE(media_equals(pc_slot_lba(&geom, 6), g0, SPR));
	sim_emmc_close(e);

	/* something covers where the second one landed: that misdirect left no trace */
	if (land2 != land) {
		int fd = open(media, O_WRONLY);

		pc_record_build(g0, &geom, (uint32_t)((land2 - PC_SB_RESERVE_SECT) / SPR), 0, 0, 0);
		CU_ASSERT_EQUAL(pc_pwrite_all(fd, g0, REC_SIZE, (off_t)(land2 * PC_SECTOR)), 0);
		close(fd);
	}
	sim_emmc_close(sim_on(SIM_P_HONEST, 0, 0));
	lines = truth_lines(&bad);
	o = truth_find(lines, "misdirect_void", 0, &n);
	CU_ASSERT_EQUAL(n, land2 != land);
	if (o) {
		CU_ASSERT_EQUAL(u64_of(o, "session"), 1);
		CU_ASSERT_EQUAL(u64_of(o, "seq"), 12);
		CU_ASSERT_EQUAL(u64_of(o, "landed"), land2);
		CU_ASSERT_STRING_EQUAL(str_of(o, "expect"), "none");
	}
	json_object_put(lines);
	return land;
}

static void test_misdirect(void)
{
	uint64_t a = misdirect_run("sim-misdir-a");
	uint64_t b = misdirect_run("sim-misdir-b");

	/* the same seed on the same session lands at the same place */
	CU_ASSERT_EQUAL(a, b);
}

static void test_bitrot(void)
{
	uint8_t old[PC_SECTOR], got[PC_SECTOR];
	json_object *lines, *o;
	uint64_t s, b;
	int bad, n;

	media_new("sim-bitrot");
	media_prepare();
	/* never in the first two sessions (prepare, the verifier's baseline) */
	sim_emmc_close(sim_on_f(SIM_P_BITROT, 0, 5, 1.0));
	sim_emmc_close(sim_on_f(SIM_P_BITROT, 0, 5, 1.0));
	sim_emmc_close(sim_on_f(SIM_P_BITROT, 0, 5, 0.0));
	lines = truth_lines(&bad);
	truth_find(lines, "bitrot", -1, &n);
	CU_ASSERT_EQUAL(n, 0);	/* and at rate 0, never */
	json_object_put(lines);
	sim_emmc_close(sim_on_f(SIM_P_BITROT, 0, 5, 1.0));
	lines = truth_lines(&bad);
	o = truth_find(lines, "power_on", 3, NULL);
	CU_ASSERT_EQUAL(u64_of(o, "seed"), 5);
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(json_object_object_get(o, "rate"), 0), "1.0");
	o = truth_find(lines, "bitrot", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 4);
	s = u64_of(o, "sector_lba");
	b = u64_of(o, "bits");
	CU_ASSERT_FATAL(s >= PC_SB_RESERVE_SECT && s < pc_slot_lba(&geom, geom.nslots));
	CU_ASSERT_EQUAL(u64_of(o, "lba"), pc_slot_lba(&geom, (uint32_t)((s - PC_SB_RESERVE_SECT) / SPR)));
	CU_ASSERT_EQUAL(u64_of(o, "seq"), 0);
	CU_ASSERT_STRING_EQUAL(str_of(o, "expect"), "corrupt-or-collateral");
	CU_ASSERT_TRUE(b >= 1 && b <= 3);
	json_object_put(lines);
	gen0_sector(s, old);
	media_pread(s, got, 1);
	CU_ASSERT_EQUAL(bits_differ(got, old, PC_SECTOR), b);
}

static void test_stale(void)
{
	uint8_t r1[REC_SIZE], r2[REC_SIZE], g0[REC_SIZE], g1[REC_SIZE];
	uint64_t l0, l1;
	json_object *lines, *o;
	struct sim_emmc *e;
	int bad, n;

	media_new("sim-stale");
	media_prepare();
	l0 = pc_slot_lba(&geom, 0);
	l1 = pc_slot_lba(&geom, 1);
	record(r1, 0, 1);
	record(r2, 1, 2);
	pc_record_build(g0, &geom, 0, 0, 0, 0);
	pc_record_build(g1, &geom, 1, 0, 0, 0);
	/* session 1 replaces slot 0 (FUA), session 2 slot 1 (through the cache) */
	e = sim_on_f(SIM_P_STALE, 0, 9, 1.0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, l0, r1, SPR, SIM_W_FUA), 0);
	sim_emmc_close(e);
	e = sim_on_f(SIM_P_STALE, 0, 9, 1.0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, l1, r2, SPR, 0), 0);
	CU_ASSERT_EQUAL(sim_emmc_flush(e), 0);
	sim_emmc_close(e);
	lines = truth_lines(&bad);
	truth_find(lines, "stale", -1, &n);
	CU_ASSERT_EQUAL(n, 0);	/* nothing the verifier has seen replaced yet */
	json_object_put(lines);
	CU_ASSERT_TRUE(media_equals(l0, r1, SPR));
	CU_ASSERT_TRUE(media_equals(l1, r2, SPR));

	/* session 3: slot 0's old record comes back; slot 1's is still too young */
	sim_emmc_close(sim_on_f(SIM_P_STALE, 0, 9, 1.0));
	lines = truth_lines(&bad);
	o = truth_find(lines, "stale", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 3);
	CU_ASSERT_EQUAL(u64_of(o, "lba"), l0);
	CU_ASSERT_EQUAL(u64_of(o, "n"), SPR);
	CU_ASSERT_EQUAL(u64_of(o, "seq_restored"), 0);
	CU_ASSERT_EQUAL(u64_of(o, "seq_lost"), 1);
	CU_ASSERT_STRING_EQUAL(str_of(o, "expect"), "stale");
	json_object_put(lines);
	CU_ASSERT_TRUE(media_equals(l0, g0, SPR));
	CU_ASSERT_TRUE(media_equals(l1, r2, SPR));

	/* session 4: slot 1's turn; session 5: nothing left */
	sim_emmc_close(sim_on_f(SIM_P_STALE, 0, 9, 1.0));
	CU_ASSERT_TRUE(media_equals(l1, g1, SPR));
	sim_emmc_close(sim_on_f(SIM_P_STALE, 0, 9, 1.0));
	lines = truth_lines(&bad);
	o = truth_find(lines, "stale", 1, &n);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(u64_of(o, "session"), 4);
	CU_ASSERT_EQUAL(u64_of(o, "lba"), l1);
	CU_ASSERT_EQUAL(u64_of(o, "seq_lost"), 2);
	json_object_put(lines);
}

static void test_brick(void)
{
	char want[PATH_MAX + 64], marker[PATH_MAX + 16];
	struct sim_emmc *e = NULL;
	json_object *lines, *b;
	size_t nlines;
	int bad, n;

	media_new("sim-brick");
	/* never in the first two sessions (prepare, the baseline boot) */
	for (int s = 1; s <= 2; s++)
		sim_emmc_close(sim_on_f(SIM_P_BRICK, 0, 1, 1.0));
	snprintf(want, sizeof(want), "sim eMMC %s does not respond (bricked in session 3)", media);
	CU_ASSERT_EQUAL(open_with(opts(SIM_P_BRICK, 0, 0, 1, 1.0, NULL), &e), -ENODEV);
	CU_ASSERT_PTR_NULL(e);
	CU_ASSERT_STRING_EQUAL(err, want);
	lines = truth_lines(&bad);
	b = truth_find(lines, "brick", 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(u64_of(b, "session"), 3);
	CU_ASSERT_STRING_EQUAL(str_of(b, "expect"), "BOOT_FAIL");
	nlines = json_object_array_length(lines);
	json_object_put(lines);
	snprintf(marker, sizeof(marker), "%s.bricked", media);
	CU_ASSERT_EQUAL(access(marker, F_OK), 0);

	/* dead for good, whatever it is asked to be, and silent */
	err[0] = 0;
	CU_ASSERT_EQUAL(open_with(opts(SIM_P_HONEST, 0, 0, 1, 1.0, NULL), &e), -ENODEV);
	CU_ASSERT_STRING_EQUAL(err, want);
	/* the marker lost, the log still says it */
	CU_ASSERT_EQUAL(unlink(marker), 0);
	err[0] = 0;
	CU_ASSERT_EQUAL(open_with(opts(SIM_P_HONEST, 0, 0, 1, 1.0, NULL), &e), -ENODEV);
	CU_ASSERT_STRING_EQUAL(err, want);
	lines = truth_lines(&bad);
	CU_ASSERT_EQUAL(json_object_array_length(lines), nlines);
	json_object_put(lines);

	/* rate 0: never */
	media_new("sim-nobrick");
	for (int s = 1; s <= 5; s++)
		sim_emmc_close(sim_on_f(SIM_P_BRICK, 0, 1, 0.0));
}

/* ---- the inputs kept per power-on (keep-inputs) ---- */

/* One entry of a dm-log-writes log, as the test reads it. */
struct lent {
	uint64_t sector, n, flags, len;
	long data;	/* offset of its data in the log */
};

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void inputs_path(char *buf, size_t len, uint32_t session, const char *file)
{
	snprintf(buf, len, "%s.inputs/session-%u/%s", media, session, file);
}

/*
 * The log of a session, strictly: superblock, then whole entries to the
 * end of the file (no slack). -1 if anything is off; else the entry count,
 * *nr the superblock's nr_entries.
 */
static int log_read(uint32_t session, struct lent *out, int max, uint64_t *nr)
{
	char path[PATH_MAX + 64];
	uint8_t h[PC_SECTOR];
	struct stat st;
	long off = PC_SECTOR;
	int fd, n = 0;

	inputs_path(path, sizeof(path), session, "writes.log");
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0 || pc_pread_all(fd, h, PC_SECTOR, 0) ||
	    le64_at(h) != WLOG_MAGIC || le64_at(h + 8) != 1 || (le64_at(h + 24) & 0xffffffffu) != 512) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*nr = le64_at(h + 16);
	while (off < st.st_size) {
		if (n == max || pc_pread_all(fd, h, PC_SECTOR, off)) {
			n = -1;
			break;
		}
		out[n] = (struct lent){ le64_at(h), le64_at(h + 8), le64_at(h + 16), le64_at(h + 24), off + PC_SECTOR };
		if (out[n].len != out[n].n * PC_SECTOR || (out[n].flags & ~3ull) ||
		    (long)(off + PC_SECTOR + out[n].len) > st.st_size) {
			n = -1;
			break;
		}
		off += PC_SECTOR + (long)out[n].len;
		n++;
	}
	close(fd);
	return n;
}

/* The entry's data equals want. */
static int log_data_is(uint32_t session, const struct lent *x, const void *want)
{
	char path[PATH_MAX + 64];
	uint8_t *got = malloc(x->len);
	int fd, eq;

	inputs_path(path, sizeof(path), session, "writes.log");
	fd = open(path, O_RDONLY);
	eq = fd >= 0 && got && pc_pread_all(fd, got, x->len, x->data) == 0 && memcmp(got, want, x->len) == 0;
	if (fd >= 0)
		close(fd);
	free(got);
	return eq;
}

static json_object *cycle_json(uint32_t session)
{
	char path[PATH_MAX + 64];

	inputs_path(path, sizeof(path), session, "cycle.json");
	return json_object_from_file(path);
}

/* The sector at lba of a kept image equals want. */
static int image_is(uint32_t session, const char *file, uint64_t lba, const void *want, uint32_t nsect)
{
	char path[PATH_MAX + 64];
	uint8_t *got = malloc((size_t)nsect * PC_SECTOR);
	int fd, eq;

	inputs_path(path, sizeof(path), session, file);
	fd = open(path, O_RDONLY);
	eq = fd >= 0 && got && pc_pread_all(fd, got, (size_t)nsect * PC_SECTOR, (off_t)(lba * PC_SECTOR)) == 0 &&
	     memcmp(got, want, (size_t)nsect * PC_SECTOR) == 0;
	if (fd >= 0)
		close(fd);
	free(got);
	return eq;
}

static struct sim_emmc *sim_keep(uint32_t keep, const char *cut_at)
{
	struct sim_opts *o = opts(SIM_P_HONEST, 0, 0, 0, 0, cut_at);
	struct sim_emmc *e = NULL;
	char v[16];

	snprintf(v, sizeof(v), "%u", keep);
	CU_ASSERT_EQUAL_FATAL(sim_opts_set(o, "keep-inputs", v, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(open_with(o, &e), 0);
	return e;
}

static void test_inputs(void)
{
	uint8_t a[REC_SIZE], b[REC_SIZE], c[REC_SIZE], d[REC_SIZE], f[REC_SIZE], gen0[REC_SIZE];
	char path[PATH_MAX + 64], tmp[PATH_MAX + 64], verr[256];
	struct lent l[16];
	struct sim_emmc *e;
	struct vc_stats vs;
	struct vc_params vp = { 0 };
	json_object *cj, *v;
	uint64_t nr;
	int n, status;
	pid_t pid;

	media_new("sim-inputs");
	media_prepare();
	record(a, 0, 1);
	record(b, 1, 2);
	record(c, 2, 3);
	record(d, 3, 4);
	record(f, 4, 5);
	/* session 1: A cached, B FUA, a flush, C cached, a read, an orderly close */
	e = sim_keep(2, NULL);
	CU_ASSERT_EQUAL(sim_emmc_session(e), 1);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 0), a, SPR, 0), 0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 1), b, SPR, SIM_W_FUA), 0);
	CU_ASSERT_EQUAL(sim_emmc_flush(e), 0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 2), c, SPR, 0), 0);
	CU_ASSERT_EQUAL(sim_emmc_read(e, pc_slot_lba(&geom, 2), gen0, SPR), 0);
	/* a refused request is no request: not logged */
	CU_ASSERT_EQUAL(sim_emmc_write(e, MEDIA_BYTES / PC_SECTOR, a, SPR, 0), -EINVAL);
	sim_emmc_close(e);
	/* the folder is not finished before the next power-on */
	cj = cycle_json(1);
	CU_ASSERT_TRUE(json_object_object_get_ex(cj, "finished", &v) && !json_object_get_boolean(v));
	json_object_put(cj);
	inputs_path(path, sizeof(path), 1, "after.img");
	CU_ASSERT_EQUAL(access(path, F_OK), -1);

	/* session 2 finishes session 1: the log in completion order, with flags */
	e = sim_keep(2, NULL);
	n = log_read(1, l, 16, &nr);
	CU_ASSERT_EQUAL_FATAL(n, 4);
	CU_ASSERT_EQUAL(nr, 4);
	CU_ASSERT_TRUE(l[0].sector == pc_slot_lba(&geom, 0) && l[0].n == SPR && l[0].flags == 0);
	CU_ASSERT_TRUE(log_data_is(1, &l[0], a));
	CU_ASSERT_TRUE(l[1].sector == pc_slot_lba(&geom, 1) && l[1].n == SPR && l[1].flags == 2);
	CU_ASSERT_TRUE(log_data_is(1, &l[1], b));
	CU_ASSERT_TRUE(l[2].n == 0 && l[2].flags == 1 && l[2].len == 0);
	CU_ASSERT_TRUE(l[3].sector == pc_slot_lba(&geom, 2) && l[3].flags == 0);
	CU_ASSERT_TRUE(log_data_is(1, &l[3], c));
	/* base: as prepared; after: A and B programmed, C lost with the cache */
	pc_record_build(gen0, &geom, 2, 0, 0, 0);
	CU_ASSERT_TRUE(image_is(1, "base.img", pc_slot_lba(&geom, 2), gen0, SPR));
	CU_ASSERT_TRUE(image_is(1, "after.img", pc_slot_lba(&geom, 0), a, SPR));
	CU_ASSERT_TRUE(image_is(1, "after.img", pc_slot_lba(&geom, 1), b, SPR));
	CU_ASSERT_TRUE(image_is(1, "after.img", pc_slot_lba(&geom, 2), gen0, SPR));
	CU_ASSERT_FALSE(image_is(1, "base.img", pc_slot_lba(&geom, 0), a, SPR));
	cj = cycle_json(1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cj);
	CU_ASSERT_TRUE(json_object_object_get_ex(cj, "finished", &v) && json_object_get_boolean(v));
	CU_ASSERT_STRING_EQUAL(str_of(cj, "end"), "close");
	CU_ASSERT_EQUAL(u64_of(cj, "writes"), 3);
	CU_ASSERT_EQUAL(u64_of(cj, "fua_writes"), 1);
	CU_ASSERT_EQUAL(u64_of(cj, "flushes"), 1);
	CU_ASSERT_TRUE(json_object_object_get_ex(cj, "in_flight", &v) && v == NULL);
	CU_ASSERT_TRUE(json_object_object_get_ex(cj, "cycles", &v) && json_object_array_length(v) == 1 &&
		       json_object_get_int(json_object_array_get_idx(v, 0)) == 1);
	CU_ASSERT_TRUE(json_object_object_get_ex(cj, "region", &v) && u64_of(v, "seed") == 0x5eed);
	json_object_put(cj);
	inputs_path(path, sizeof(path), 1, "live");
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	/* honest: no power-on fault changed the media, so session 2's base.img
	 * is session 1's after.img under one more name */
	{
		struct stat s1, s2;

		inputs_path(path, sizeof(path), 1, "after.img");
		inputs_path(tmp, sizeof(tmp), 2, "base.img");
		CU_ASSERT_TRUE(stat(path, &s1) == 0 && stat(tmp, &s2) == 0 && s1.st_ino == s2.st_ino);
	}

	/* vboard/vcache.c's reader takes the log whole: 4 entries, A (flushed) and B (FUA) durable */
	inputs_path(path, sizeof(path), 1, "writes.log");
	inputs_path(tmp, sizeof(tmp), 1, "vcache.img");
	{
		uint8_t *img = malloc(MEDIA_BYTES);
		char bpath[PATH_MAX + 64];
		int in, out;

		inputs_path(bpath, sizeof(bpath), 1, "base.img");
		in = open(bpath, O_RDONLY);
		out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CU_ASSERT_FATAL(img && in >= 0 && out >= 0);
		CU_ASSERT_EQUAL(pc_pread_all(in, img, MEDIA_BYTES, 0), 0);
		CU_ASSERT_EQUAL(pc_pwrite_all(out, img, MEDIA_BYTES, 0), 0);
		close(in);
		close(out);
		free(img);
	}
	vp.log = path;
	vp.media = tmp;
	vp.profile = VC_HONEST;
	vp.power_on = 1;
	CU_ASSERT_EQUAL(vc_rebuild(&vp, &vs, verr, sizeof(verr)), 0);
	CU_ASSERT_EQUAL(vs.entries, 4);
	CU_ASSERT_EQUAL(vs.writes, 3);
	CU_ASSERT_EQUAL(vs.flushes, 1);
	CU_ASSERT_EQUAL(vs.fua_writes, 1);
	CU_ASSERT_EQUAL(vs.durable, 2);
	unlink(tmp);
	sim_emmc_close(e);

	/* session 3 is cut inside its FUA write F, after D: F is in flight, not logged */
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		/* its own group: the sim's cut kills the group */
		if (setpgid(0, 0))
			_exit(2);
		e = sim_keep(2, "fua:1");
		if (sim_emmc_write(e, pc_slot_lba(&geom, 3), d, SPR, 0))
			_exit(3);
		sim_emmc_write(e, pc_slot_lba(&geom, 4), f, SPR, SIM_W_FUA);
		_exit(4);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	e = sim_keep(2, NULL);
	CU_ASSERT_EQUAL(sim_emmc_session(e), 4);
	n = log_read(3, l, 16, &nr);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(nr, 1);
	CU_ASSERT_TRUE(l[0].sector == pc_slot_lba(&geom, 3) && l[0].flags == 0 && log_data_is(3, &l[0], d));
	cj = cycle_json(3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cj);
	CU_ASSERT_STRING_EQUAL(str_of(cj, "end"), "cut");
	CU_ASSERT_TRUE(json_object_object_get_ex(cj, "in_flight", &v) && v);
	CU_ASSERT_STRING_EQUAL(str_of(v, "op"), "write");
	CU_ASSERT_EQUAL(u64_of(v, "lba"), pc_slot_lba(&geom, 4));
	CU_ASSERT_EQUAL(u64_of(v, "n"), SPR);
	CU_ASSERT_EQUAL(u64_of(v, "seq"), 5);
	CU_ASSERT_TRUE(json_object_object_get_ex(v, "fua", &v) && json_object_get_boolean(v));
	json_object_put(cj);
	/* keep 2 at session 4: sessions 2, 3 and 4 stay, 1 is gone */
	inputs_path(path, sizeof(path), 1, "cycle.json");
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	inputs_path(path, sizeof(path), 2, "cycle.json");
	CU_ASSERT_EQUAL(access(path, F_OK), 0);
	sim_emmc_close(e);

	/* an entry written but never committed (a kill between the log's write
	 * and the commit store) is cut off at the next power-on, whole as it looks */
	media_new("sim-inputs-uncommitted");
	media_prepare();
	e = sim_keep(2, NULL);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 0), a, SPR, SIM_W_FUA), 0);
	inputs_path(path, sizeof(path), 1, "writes.log");
	{
		uint8_t h[PC_SECTOR] = { 0 };
		int fd = open(path, O_WRONLY | O_APPEND);

		h[0] = (uint8_t)pc_slot_lba(&geom, 1);	/* sector, 8 sectors, FUA, 4096 bytes */
		h[8] = SPR;
		h[16] = 2;
		h[25] = REC_SIZE >> 8;
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_EQUAL(pc_write_all(fd, h, sizeof(h)), 0);
		CU_ASSERT_EQUAL(pc_write_all(fd, b, REC_SIZE), 0);
		close(fd);
	}
	sim_emmc_close(e);
	e = sim_keep(2, NULL);
	CU_ASSERT_EQUAL(log_read(1, l, 16, &nr), 1);
	CU_ASSERT_EQUAL(nr, 1);
	sim_emmc_close(e);

	/* a power-on fault changes the media: base.img is its own copy, with the flip */
	media_new("sim-inputs-bitrot");
	media_prepare();
	for (uint32_t s = 1; s <= 3; s++) {
		struct sim_opts *o = opts(SIM_P_BITROT, 0, 0, 7, 1.0, NULL);

		CU_ASSERT_EQUAL_FATAL(sim_opts_set(o, "keep-inputs", "3", err, sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(open_with(o, &e), 0);
		sim_emmc_close(e);
	}
	{
		struct stat s1, s2;

		inputs_path(path, sizeof(path), 2, "after.img");
		inputs_path(tmp, sizeof(tmp), 3, "base.img");
		CU_ASSERT_TRUE(stat(path, &s1) == 0 && stat(tmp, &s2) == 0 && s1.st_ino != s2.st_ino);
		inputs_path(path, sizeof(path), 1, "after.img");
		inputs_path(tmp, sizeof(tmp), 2, "base.img");
		CU_ASSERT_TRUE(stat(path, &s1) == 0 && stat(tmp, &s2) == 0 && s1.st_ino == s2.st_ino);
	}
	{
		int bad, nb;
		json_object *lines = truth_lines(&bad), *o = truth_find(lines, "bitrot", 0, &nb);
		uint8_t want[PC_SECTOR];

		CU_ASSERT_EQUAL_FATAL(nb, 1);
		/* the flipped sector: base.img of session 3 holds it as the media does */
		media_pread(u64_of(o, "sector_lba"), want, 1);
		CU_ASSERT_TRUE(image_is(3, "base.img", u64_of(o, "sector_lba"), want, 1));
		CU_ASSERT_FALSE(image_is(2, "after.img", u64_of(o, "sector_lba"), want, 1));
		json_object_put(lines);
	}

	/* keep-inputs 0 (the default): nothing kept */
	media_new("sim-inputs-off");
	media_prepare();
	e = sim_on(SIM_P_HONEST, 0, 0);
	CU_ASSERT_EQUAL(sim_emmc_write(e, pc_slot_lba(&geom, 0), a, SPR, SIM_W_FUA), 0);
	sim_emmc_close(e);
	snprintf(path, sizeof(path), "%s.inputs", media);
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
}

static void test_dev_sim(void)
{
	uint8_t *buf = aligned_alloc(4096, 4 * REC_SIZE), *got = aligned_alloc(4096, REC_SIZE);
	struct dev d = { .ops = &dev_sim_ops }, d2 = { .ops = &dev_sim_ops };
	struct dev_io ios[4], *done[8];
	struct sim_opts *so, *so2;
	json_object *id, *id2, *q, *v;
	char cid[64];

	media_new("sim-dev");
	d.o.path = media;
	d.o.sim = so = opts(SIM_P_HONEST, 0, 0, 77, 0.25, NULL);
	CU_ASSERT_EQUAL_FATAL(d.ops->open(&d, 1), 0);
	CU_ASSERT_EQUAL(d.size, MEDIA_BYTES);
	CU_ASSERT_STRING_EQUAL(d.ops->name, "sim");

	/* synchronous path */
	record(buf, 0, 1);
	CU_ASSERT_EQUAL(d.ops->write(&d, pc_slot_lba(&geom, 0) * PC_SECTOR, buf, REC_SIZE, 0), 0);
	CU_ASSERT_EQUAL(d.ops->read(&d, pc_slot_lba(&geom, 0) * PC_SECTOR, got, REC_SIZE), 0);
	CU_ASSERT_EQUAL(memcmp(got, buf, REC_SIZE), 0);
	CU_ASSERT_TRUE(media_is_zero(pc_slot_lba(&geom, 0), SPR));
	CU_ASSERT_EQUAL(d.ops->flush(&d), 0);
	CU_ASSERT_TRUE(media_equals(pc_slot_lba(&geom, 0), buf, SPR));
	record(buf, 1, 2);
	CU_ASSERT_EQUAL(d.ops->write(&d, pc_slot_lba(&geom, 1) * PC_SECTOR, buf, REC_SIZE, DEV_W_DSYNC), 0);
	CU_ASSERT_TRUE(media_equals(pc_slot_lba(&geom, 1), buf, SPR));
	CU_ASSERT_EQUAL(d.ops->write(&d, 100, buf, REC_SIZE, 0), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(d.err, media));
	CU_ASSERT_EQUAL(d.ops->read(&d, MEDIA_BYTES, got, PC_SECTOR), -EINVAL);

	/* asynchronous path: completions in submission order */
	CU_ASSERT_EQUAL(d.ops->aio_setup(&d, 0), -EINVAL);
	CU_ASSERT_EQUAL(d.ops->aio_setup(&d, 33), -EINVAL);
	CU_ASSERT_EQUAL(d.ops->aio_setup(&d, 3), 0);
	for (int i = 0; i < 4; i++) {
		record(buf + i * REC_SIZE, (uint32_t)(2 + i), (uint64_t)(3 + i));
		ios[i] = (struct dev_io){ .off = pc_slot_lba(&geom, (uint32_t)(2 + i)) * PC_SECTOR,
					  .buf = buf + i * REC_SIZE, .len = REC_SIZE,
					  .wflags = DEV_W_DSYNC, .tag = (uint64_t)(3 + i), .result = 1 };
	}
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(d.ops->aio_submit(&d, &ios[i]), 0);
	CU_ASSERT_EQUAL(d.ops->aio_submit(&d, &ios[3]), -EBUSY);
	CU_ASSERT_EQUAL(d.ops->aio_reap(&d, done, 2, 1), 2);
	CU_ASSERT_PTR_EQUAL(done[0], &ios[0]);
	CU_ASSERT_PTR_EQUAL(done[1], &ios[1]);
	CU_ASSERT_EQUAL(d.ops->aio_submit(&d, &ios[3]), 0);
	CU_ASSERT_EQUAL(d.ops->aio_reap(&d, done, 8, 2), 2);
	CU_ASSERT_PTR_EQUAL(done[0], &ios[2]);
	CU_ASSERT_PTR_EQUAL(done[1], &ios[3]);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(ios[i].result, 0);
		CU_ASSERT_TRUE(media_equals(pc_slot_lba(&geom, (uint32_t)(2 + i)), buf + i * REC_SIZE, SPR));
	}
	CU_ASSERT_EQUAL(d.ops->aio_reap(&d, done, 8, 0), 0);

	/* identity: stable across power-ons of the same media */
	id = json_object_new_object();
	d.ops->identity(&d, id);
	CU_ASSERT_TRUE(json_object_object_get_ex(id, "type", &v));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "sim-emmc");
	CU_ASSERT_TRUE(json_object_object_get_ex(id, "manfid", &v));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "0x0000fe");
	CU_ASSERT_TRUE(json_object_object_get_ex(id, "profile", &v));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "honest");
	CU_ASSERT_TRUE(json_object_object_get_ex(id, "program_us", &v));
	CU_ASSERT_EQUAL(json_object_get_int(v), 20);
	CU_ASSERT_TRUE(json_object_object_get_ex(id, "cache_sectors", &v));
	CU_ASSERT_EQUAL(json_object_get_int(v), 256);
	CU_ASSERT_TRUE(json_object_object_get_ex(id, "session", &v));
	CU_ASSERT_EQUAL(json_object_get_int(v), 1);
	CU_ASSERT_TRUE(json_object_object_get_ex(id, "faults", &q));
	CU_ASSERT_TRUE(json_object_object_get_ex(q, "seed", &v));
	CU_ASSERT_EQUAL(json_object_get_uint64(v), 77);
	CU_ASSERT_TRUE(json_object_object_get_ex(q, "rate", &v));
	CU_ASSERT_DOUBLE_EQUAL(json_object_get_double(v), 0.25, 1e-12);
	CU_ASSERT_TRUE(json_object_object_get_ex(id, "queue", &q));
	CU_ASSERT_TRUE(json_object_object_get_ex(q, "write_cache", &v));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "write back");
	CU_ASSERT_TRUE(json_object_object_get_ex(id, "cid", &v));
	pc_strlcpy(cid, json_object_get_string(v), sizeof(cid));
	CU_ASSERT_EQUAL(strlen(cid), 32);
	CU_ASSERT_EQUAL(strspn(cid, "0123456789abcdef"), 32);
	CU_ASSERT_EQUAL(strncmp(cid, "fe5043", 6), 0);
	d.ops->close(&d);
	CU_ASSERT_PTR_NULL(d.priv);

	d2.o.path = media;
	d2.o.sim = so2 = opts(SIM_P_NO_CACHE, 0, 0, 1, 0.01, NULL);
	CU_ASSERT_EQUAL_FATAL(d2.ops->open(&d2, 1), 0);
	id2 = json_object_new_object();
	d2.ops->identity(&d2, id2);
	CU_ASSERT_TRUE(json_object_object_get_ex(id2, "cid", &v));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(v), cid);
	CU_ASSERT_TRUE(json_object_object_get_ex(id2, "session", &v));
	CU_ASSERT_EQUAL(json_object_get_int(v), 2);
	CU_ASSERT_TRUE(json_object_object_get_ex(id2, "queue", &q));
	CU_ASSERT_TRUE(json_object_object_get_ex(q, "write_cache", &v));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "write through");
	d2.ops->close(&d2);
	d2.ops->close(&d2);	/* closing twice is harmless */

	/* errors name the media */
	d2.o.path = "build/test-tmp/no-such-media.img";
	CU_ASSERT_EQUAL(d2.ops->open(&d2, 1), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(d2.err, "build/test-tmp/no-such-media.img"));
	json_object_put(id);
	json_object_put(id2);
	sim_opts_free(so);
	sim_opts_free(so2);
	free(buf);
	free(got);
}

/* How many requests of kind rwbs the sim device counted. */
static uint64_t aud_n(const struct audit_counts *c, const char *rwbs)
{
	for (unsigned i = 0; i < c->n; i++)
		if (!strcmp(c->k[i].rwbs, rwbs))
			return c->k[i].count;
	return 0;
}

/* no-fua: a queue without FUA, as the block layer treats it: a FUA write
 * reaches the card as a plain write and a cache flush (counted WS + FF),
 * and HELLO says queue fua 0 */
static void test_dev_sim_no_fua(void)
{
	uint8_t *buf = aligned_alloc(4096, 2 * REC_SIZE);
	struct dev d = { .ops = &dev_sim_ops };
	struct dev_io io, *done[2];
	struct sim_opts *so;
	const struct audit_counts *c;
	json_object *id, *q, *v;

	media_new("sim-dev-nofua");
	d.o.path = media;
	d.o.sim = so = opts(SIM_P_NO_FUA, 0, 0, 1, 0.01, NULL);
	CU_ASSERT_EQUAL_FATAL(d.ops->open(&d, 1), 0);
	c = d.ops->audit(&d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	/* synchronous: the emulated FUA write (WS + FF), then the kernel's
	 * flush after a DSYNC write (FF) */
	record(buf, 0, 1);
	CU_ASSERT_EQUAL(d.ops->write(&d, pc_slot_lba(&geom, 0) * PC_SECTOR, buf, REC_SIZE, DEV_W_DSYNC), 0);
	CU_ASSERT_TRUE(media_equals(pc_slot_lba(&geom, 0), buf, SPR));
	CU_ASSERT_EQUAL(aud_n(c, "WS"), 1);
	CU_ASSERT_EQUAL(aud_n(c, "FF"), 2);
	CU_ASSERT_EQUAL(aud_n(c, "WFS"), 0);
	/* asynchronous: WS + FF, complete once the flush is, on the media */
	CU_ASSERT_EQUAL(d.ops->aio_setup(&d, 2), 0);
	record(buf + REC_SIZE, 1, 2);
	io = (struct dev_io){ .off = pc_slot_lba(&geom, 1) * PC_SECTOR, .buf = buf + REC_SIZE, .len = REC_SIZE,
			      .wflags = DEV_W_DSYNC, .tag = 2, .result = 1 };
	CU_ASSERT_EQUAL(d.ops->aio_submit(&d, &io), 0);
	CU_ASSERT_EQUAL(d.ops->aio_reap(&d, done, 2, 1), 1);
	CU_ASSERT_EQUAL(io.result, 0);
	CU_ASSERT_TRUE(media_equals(pc_slot_lba(&geom, 1), buf + REC_SIZE, SPR));
	CU_ASSERT_EQUAL(aud_n(c, "WS"), 2);
	CU_ASSERT_EQUAL(aud_n(c, "FF"), 3);
	CU_ASSERT_EQUAL(aud_n(c, "WFS"), 0);
	/* a plain write stays one, in the cache */
	CU_ASSERT_EQUAL(d.ops->write(&d, pc_slot_lba(&geom, 2) * PC_SECTOR, buf, REC_SIZE, 0), 0);
	CU_ASSERT_TRUE(media_is_zero(pc_slot_lba(&geom, 2), SPR));
	CU_ASSERT_EQUAL(aud_n(c, "WS"), 3);
	CU_ASSERT_EQUAL(aud_n(c, "FF"), 3);
	id = json_object_new_object();
	d.ops->identity(&d, id);
	CU_ASSERT_TRUE(json_object_object_get_ex(id, "profile", &v));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "no-fua");
	CU_ASSERT_TRUE(json_object_object_get_ex(id, "queue", &q));
	CU_ASSERT_TRUE(json_object_object_get_ex(q, "fua", &v));
	CU_ASSERT_EQUAL(json_object_get_int(v), 0);
	CU_ASSERT_TRUE(json_object_object_get_ex(q, "write_cache", &v));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "write back");
	json_object_put(id);
	d.ops->close(&d);
	sim_opts_free(so);
	free(buf);
}

int suite_sim(void)
{
	static const struct { const char *name; void (*fn)(void); } tests[] = {
		{ "profile parse", test_profile_parse },
		{ "create media", test_create },
		{ "bad profile bits and rates refuse", test_bad_opts },
		{ "write and read back through the cache", test_cache_readback },
		{ "flush destages to the media", test_flush_destages },
		{ "FUA programs directly and supersedes the cache", test_fua_supersedes },
		{ "capacity pressure destages oldest first", test_capacity_pressure },
		{ "untimed (prepare): the same cache at file speed", test_untimed },
		{ "lying-flush logs and settles drops", test_lying_flush },
		{ "honest re-open drops nothing", test_honest_reopen },
		{ "fua-ignored logs and settles drops", test_fua_ignored },
		{ "no-cache programs at once", test_no_cache },
		{ "torn truth log line", test_torn_log },
		{ "SIGKILL never tears a sector", test_kill },
		{ "exact cut at the start of the nth flush", test_exact_cut_flush },
		{ "exact cut inside the nth FUA write", test_exact_cut_fua },
		{ "subsector-tear: a cut leaves part of a sector new", test_subsector_tear },
		{ "paired-page: a cut damages the pair page", test_paired_page },
		{ "tearing-relwr: early ack, cut, torn_acked", test_tearing_relwr },
		{ "misdirect: data lands in another slot", test_misdirect },
		{ "bitrot: bits flip at rest", test_bitrot },
		{ "stale: an old record comes back", test_stale },
		{ "brick: the device dies for good", test_brick },
		{ "keep-inputs: base, exact write log, image at the cut", test_inputs },
		{ "dev sim backend", test_dev_sim },
		{ "dev sim backend: no-fua emulates FUA with a flush", test_dev_sim_no_fua },
	};
	CU_pSuite s = CU_add_suite("sim", NULL, NULL);

	if (!s)
		return -1;
	for (size_t i = 0; i < PC_ARRAY_SIZE(tests); i++)
		if (!CU_add_test(s, tests[i].name, tests[i].fn))
			return -1;
	return 0;
}

/*
 * test_sim.c - the emulated eMMC and the agent's sim backend, against real
 * media files: what a test says is on the NAND it reads back with pread(), and
 * the power-cut test SIGKILLs a real writer.
 */
#include "suites.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "../../agent/dev.h"
#include "../../common/record.h"
#include "../../common/util.h"
#include "../../sim/emmc.h"

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

static struct sim_emmc *sim_on(unsigned profile, uint32_t program_us, uint32_t cache_sectors)
{
	struct sim_opts o = { .media = media, .profile = profile, .program_us = program_us,
			      .cache_sectors = cache_sectors };
	struct sim_emmc *e = NULL;
	int ret = sim_emmc_open(&o, &e, err, sizeof(err));

	if (ret)
		fprintf(stderr, "sim_emmc_open: %s\n", err);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	return e;
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
				      "tearing-relwr, subsector-tear, paired-page, misdirect, bitrot, stale, brick"));
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

static void test_unimplemented(void)
{
	static const unsigned later[] = { SIM_P_TEARING_RELWR, SIM_P_SUBSECTOR_TEAR, SIM_P_PAIRED_PAGE,
					  SIM_P_MISDIRECT, SIM_P_BITROT, SIM_P_STALE, SIM_P_BRICK };
	struct sim_emmc *e = NULL;
	char name[64], want[128];

	media_new("sim-unimpl");
	for (size_t i = 0; i < PC_ARRAY_SIZE(later); i++) {
		struct sim_opts o = { .media = media, .profile = later[i] | SIM_P_LYING_FLUSH };

		CU_ASSERT_EQUAL(sim_emmc_open(&o, &e, err, sizeof(err)), -ENOTSUP);
		CU_ASSERT_PTR_NULL(e);
		snprintf(want, sizeof(want), "sim profile '%s' is not implemented in this build",
			 sim_profile_name(later[i], name, sizeof(name)));
		CU_ASSERT_STRING_EQUAL(err, want);
	}
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

static void test_capacity_pressure(void)
{
	uint8_t a[8 * PC_SECTOR], b[8 * PC_SECTOR], c[8 * PC_SECTOR], d[4 * PC_SECTOR], got[8 * PC_SECTOR];
	struct sim_emmc *e;

	media_new("sim-pressure");
	e = sim_on(SIM_P_HONEST, 0, 16);
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
	struct sim_opts o = { .media = media, .program_us = 1500 };

	if (sim_emmc_open(&o, &e, err, sizeof(err)) != 0)
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

static void test_dev_sim(void)
{
	uint8_t *buf = aligned_alloc(4096, 4 * REC_SIZE), *got = aligned_alloc(4096, REC_SIZE);
	struct dev d = { .ops = &dev_sim_ops }, d2 = { .ops = &dev_sim_ops };
	struct dev_io ios[4], *done[8];
	json_object *id, *id2, *q, *v;
	char cid[64];

	media_new("sim-dev");
	d.o.path = media;
	d.o.sim.profile = SIM_P_HONEST;
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
	d2.o.sim.profile = SIM_P_NO_CACHE;
	CU_ASSERT_EQUAL_FATAL(d2.ops->open(&d2, 1), 0);
	id2 = json_object_new_object();
	d2.ops->identity(&d2, id2);
	CU_ASSERT_TRUE(json_object_object_get_ex(id2, "cid", &v));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(v), cid);
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
	free(buf);
	free(got);
}

int suite_sim(void)
{
	static const struct { const char *name; void (*fn)(void); } tests[] = {
		{ "profile parse", test_profile_parse },
		{ "create media", test_create },
		{ "unimplemented profiles refuse", test_unimplemented },
		{ "write and read back through the cache", test_cache_readback },
		{ "flush destages to the media", test_flush_destages },
		{ "FUA programs directly and supersedes the cache", test_fua_supersedes },
		{ "capacity pressure destages oldest first", test_capacity_pressure },
		{ "lying-flush logs and settles drops", test_lying_flush },
		{ "honest re-open drops nothing", test_honest_reopen },
		{ "fua-ignored logs and settles drops", test_fua_ignored },
		{ "no-cache programs at once", test_no_cache },
		{ "torn truth log line", test_torn_log },
		{ "SIGKILL never tears a sector", test_kill },
		{ "dev sim backend", test_dev_sim },
	};
	CU_pSuite s = CU_add_suite("sim", NULL, NULL);

	if (!s)
		return -1;
	for (size_t i = 0; i < PC_ARRAY_SIZE(tests); i++)
		if (!CU_add_test(s, tests[i].name, tests[i].fn))
			return -1;
	return 0;
}

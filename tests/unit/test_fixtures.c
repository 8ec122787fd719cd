/*
 * test_fixtures.c - the crafted region images of tests/fixtures/, one per
 * verdict class, scanned by the agent's real scan code (region_scan over the
 * posix backend) and judged by the engine; the verdict must hold what each
 * case.json expects. The images come from tests/tools/mkfixtures.c.
 */
#include "tests/unit/suites.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/region.h"
#include "common/proto.h"
#include "harness/engine/engine.h"

#define FIXTURES "tests/fixtures"

static json_object *got;	/* verdicts of the case being run */

static int collect(const struct pc_verdict *v, void *arg)
{
	json_object_array_add(got, json_object_get(v->json));
	return 0;
}

struct feeder {
	struct engine *e;
	unsigned cycle;
	int failed;
};

static void feed(struct feeder *f, const char *kind, const char *key, json_object *payload)
{
	json_object *ev = json_object_new_object();
	char err[256] = "";

	json_object_object_add(ev, "t", json_object_new_int64(0));
	json_object_object_add(ev, "board", json_object_new_string("fx"));
	json_object_object_add(ev, "cycle", json_object_new_int64(f->cycle));
	json_object_object_add(ev, "ev", json_object_new_string(kind));
	if (key)
		json_object_object_add(ev, key, payload);
	if (engine_feed(f->e, ev, err, sizeof(err))) {
		fprintf(stderr, "engine: %s\n", err);
		f->failed = 1;
	}
	json_object_put(ev);
}

static int emit_rx(json_object *msg, void *arg)
{
	feed(arg, "rx", "msg", msg);
	return 0;
}

static json_object *hello(struct region *r)
{
	json_object *m = pc_msg_new(PC_MSG_HELLO), *q = json_object_new_object(), *d = json_object_new_object();

	json_object_object_add(m, "board", json_object_new_string("fx"));
	json_object_object_add(m, "agent", json_object_new_string("test"));
	json_object_object_add(m, "boot_id", json_object_new_string("b"));
	json_object_object_add(m, "kernel", json_object_new_string("k"));
	json_object_object_add(m, "backend", json_object_new_string("posix"));
	json_object_object_add(m, "region", region_describe(r));
	json_object_object_add(m, "device", d);
	json_object_object_add(q, "fua", json_object_new_int(-1));
	json_object_object_add(q, "write_cache", json_object_new_string("unknown"));
	json_object_object_add(m, "queue", q);
	return m;
}

static int64_t jint(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : -1;
}

static const char *jstr(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : "";
}

static void acks(struct feeder *f, json_object *ranges)
{
	for (size_t i = 0; ranges && i < json_object_array_length(ranges); i++) {
		json_object *r = json_object_array_get_idx(ranges, i);
		feed(f, "rx", "msg", pc_msg_range(PC_MSG_ACK, (uint64_t)json_object_get_int64(json_object_array_get_idx(r, 0)),
						   (uint32_t)json_object_get_int(json_object_array_get_idx(r, 1))));
	}
}

static void work(struct feeder *f, json_object *c, uint32_t rs)
{
	struct pc_work w = {
		.cycle = (uint32_t)jint(c, "cycle"), .first = (uint64_t)jint(c, "first"), .n = (uint32_t)jint(c, "n"),
		.mode = pc_mode_from_name(jstr(c, "mode")), .pattern = PC_PAT_SEQUENTIAL, .record_size = rs,
		.flush_every = 8, .qd = 1, .seed = 1,
	};
	json_object *a;

	f->cycle = w.cycle;
	feed(f, "work", "work", pc_msg_work(&w));
	feed(f, "rx", "msg", pc_msg_range(PC_MSG_SUBMIT, w.first, w.n));
	json_object_object_get_ex(c, "acked", &a);
	acks(f, a);
	feed(f, "cut", NULL, NULL);
}

/* The state before the judged cycle: gen-0 everywhere, then the history landed. */
static void baseline(struct feeder *f, struct region *r, json_object *history)
{
	json_object *m;
	struct pc_run run;

	feed(f, "power_on", NULL, NULL);
	feed(f, "rx", "msg", hello(r));
	feed(f, "verify", NULL, NULL);
	m = pc_msg_new(PC_MSG_SCAN_BEGIN);
	json_object_object_add(m, "slots", json_object_new_int64(r->g.nslots));
	json_object_object_add(m, "pattern", json_object_new_string("sequential"));
	json_object_object_add(m, "full", json_object_new_boolean(1));
	feed(f, "rx", "msg", m);
	run = (struct pc_run){ .pos = 0, .n = r->g.nslots };	/* all gen-0 */
	feed(f, "rx", "msg", pc_msg_runs(&run, 1));
	m = pc_msg_new(PC_MSG_SCAN_END);
	json_object_object_add(m, "slots", json_object_new_int64(r->g.nslots));
	json_object_object_add(m, "anomalies", json_object_new_int64(0));
	json_object_object_add(m, "raw_dropped", json_object_new_int64(0));
	feed(f, "rx", "msg", m);
	/* the history's cycles write, and all they wrote lands (that is the image) */
	for (size_t i = 0; i < json_object_array_length(history); i++) {
		json_object *h = json_object_array_get_idx(history, i), *a;
		struct pc_work w = {
			.cycle = (uint32_t)jint(h, "cycle"), .first = (uint64_t)jint(h, "first"),
			.n = (uint32_t)jint(h, "n"), .mode = pc_mode_from_name(jstr(h, "mode")),
			.pattern = PC_PAT_SEQUENTIAL, .record_size = r->g.record_size, .flush_every = 8, .qd = 1,
		};
		struct scan_stats st;
		(void)st;
		f->cycle = w.cycle;
		feed(f, "work", "work", pc_msg_work(&w));
		json_object_object_get_ex(h, "acked", &a);
		acks(f, a);
		/* its verification: a synthesised scan of what landed */
		f->cycle++;
		feed(f, "power_on", NULL, NULL);
		feed(f, "rx", "msg", hello(r));
		feed(f, "verify", NULL, NULL);
		m = pc_msg_new(PC_MSG_SCAN_BEGIN);
		json_object_object_add(m, "slots", json_object_new_int64(r->g.nslots));
		json_object_object_add(m, "pattern", json_object_new_string("sequential"));
		json_object_object_add(m, "full", json_object_new_boolean(1));
		feed(f, "rx", "msg", m);
		for (uint32_t s = 0; s < r->g.nslots; s++) {
			run = (struct pc_run){ .pos = s, .n = 1 };
			for (size_t k = 0; k <= i; k++) {
				json_object *hk = json_object_array_get_idx(history, k);
				uint64_t first = (uint64_t)jint(hk, "first"), n = (uint64_t)jint(hk, "n");
				if (s + 1 >= first && s + 1 < first + n) {
					run.seq = s + 1;
					run.cycle = (uint32_t)jint(hk, "cycle");
					run.flags = (uint16_t)pc_mode_from_name(jstr(hk, "mode"));
				}
			}
			feed(f, "rx", "msg", pc_msg_runs(&run, 1));
		}
		m = pc_msg_new(PC_MSG_SCAN_END);
		json_object_object_add(m, "slots", json_object_new_int64(r->g.nslots));
		json_object_object_add(m, "anomalies", json_object_new_int64(0));
		json_object_object_add(m, "raw_dropped", json_object_new_int64(0));
		feed(f, "rx", "msg", m);
	}
}

/* Every key of want must be in have with an equal value. */
static int subset(json_object *want, json_object *have)
{
	json_object_object_foreach(want, k, v) {
		json_object *h;
		if (!json_object_object_get_ex(have, k, &h) || !json_object_equal(v, h))
			return 0;
	}
	return 1;
}

static void run_case(const char *name)
{
	char path[PATH_MAX], err[512] = "";
	json_object *c, *hist, *judge, *expect, *v, *vf, *ef, *counts, *ecounts;
	struct region r;
	struct region_opts ro = { 0 };
	struct scan_stats st;
	struct feeder f = { 0 };
	int ok = 1;

	snprintf(path, sizeof(path), FIXTURES "/%s/case.json", name);
	c = json_object_from_file(path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	json_object_object_get_ex(c, "history", &hist);
	json_object_object_get_ex(c, "judge", &judge);
	json_object_object_get_ex(c, "expect", &expect);
	snprintf(path, sizeof(path), FIXTURES "/%s/region.img", name);
	ro.spec = path;
	if (region_open(&r, &ro, 0, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", name, err);
		CU_FAIL_FATAL("fixture region does not open");
	}
	got = json_object_new_array();
	f.e = engine_new("fixtures", collect, NULL, NULL);
	f.cycle = 1;
	baseline(&f, &r, hist);
	work(&f, judge, r.g.record_size);
	f.cycle++;
	feed(&f, "power_on", NULL, NULL);
	feed(&f, "rx", "msg", hello(&r));
	feed(&f, "verify", NULL, NULL);
	CU_ASSERT_EQUAL(region_scan(&r, PC_PAT_SEQUENTIAL, NULL, 0, emit_rx, &f, &st), 0);
	CU_ASSERT_FALSE(f.failed);
	/* history verdicts first, then the judged cycle's */
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(got), json_object_array_length(hist) + 1);
	v = json_object_array_get_idx(got, json_object_array_length(got) - 1);
	if (strcmp(jstr(v, "verdict"), jstr(expect, "verdict"))) {
		fprintf(stderr, "\n%s: verdict %s, expected %s\n", name, jstr(v, "verdict"), jstr(expect, "verdict"));
		ok = 0;
	}
	json_object_object_get_ex(v, "counts", &counts);
	json_object_object_get_ex(expect, "counts", &ecounts);
	if (!subset(ecounts, counts)) {
		fprintf(stderr, "\n%s: counts %s, expected %s\n", name, json_object_to_json_string(counts),
			json_object_to_json_string(ecounts));
		ok = 0;
	}
	json_object_object_get_ex(v, "findings", &vf);
	json_object_object_get_ex(expect, "findings", &ef);
	for (size_t i = 0; i < json_object_array_length(ef); i++) {
		json_object *want = json_object_array_get_idx(ef, i);
		int found = 0;
		for (size_t k = 0; k < json_object_array_length(vf) && !found; k++)
			found = subset(want, json_object_array_get_idx(vf, k));
		if (!found) {
			fprintf(stderr, "\n%s: no finding like %s in %s\n", name, json_object_to_json_string(want),
				json_object_to_json_string(vf));
			ok = 0;
		}
	}
	/* no violation the case does not expect */
	for (size_t k = 0; k < json_object_array_length(vf); k++) {
		json_object *have = json_object_array_get_idx(vf, k), *viol;
		int expected = 0;
		if (!json_object_object_get_ex(have, "violation", &viol) || !json_object_get_boolean(viol))
			continue;
		for (size_t i = 0; i < json_object_array_length(ef) && !expected; i++) {
			json_object *want = json_object_array_get_idx(ef, i), *wc, *hc;
			json_object_object_get_ex(want, "class", &wc);
			json_object_object_get_ex(have, "class", &hc);
			expected = json_object_equal(wc, hc);
		}
		if (!expected) {
			fprintf(stderr, "\n%s: unexpected violation %s\n", name, json_object_to_json_string(have));
			ok = 0;
		}
	}
	CU_ASSERT_TRUE(ok);
	engine_free(f.e);
	json_object_put(got);
	json_object_put(c);
	region_close(&r);
}

#define CASE(n) static void test_##n(void) { run_case(#n); }
CASE(intact)
CASE(not_written)
CASE(lost_acked)
CASE(torn)
CASE(torn_sector)
CASE(corrupt)
CASE(misdirected)
CASE(stale)
CASE(collateral)

/* Every fixture directory has a test here (a new one must be added). */
static void test_all_listed(void)
{
	static const char *const listed[] = { "intact", "not_written", "lost_acked", "torn", "torn_sector",
					      "corrupt", "misdirected", "stale", "collateral" };
	DIR *d = opendir(FIXTURES);
	struct dirent *de;
	unsigned n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((de = readdir(d))) {
		int known = 0;
		if (de->d_name[0] == '.')
			continue;
		for (size_t i = 0; i < sizeof(listed) / sizeof(listed[0]); i++)
			known |= !strcmp(listed[i], de->d_name);
		CU_ASSERT_TRUE(known);
		n++;
	}
	closedir(d);
	CU_ASSERT_EQUAL(n, sizeof(listed) / sizeof(listed[0]));
}

int suite_fixtures(void)
{
	CU_pSuite s = CU_add_suite("fixtures", NULL, NULL);

	if (!s)
		return -1;
	if (!CU_add_test(s, "intact", test_intact) || !CU_add_test(s, "not_written", test_not_written) ||
	    !CU_add_test(s, "lost_acked", test_lost_acked) || !CU_add_test(s, "torn", test_torn) ||
	    !CU_add_test(s, "torn_sector located to the byte", test_torn_sector) ||
	    !CU_add_test(s, "corrupt: bits flipped", test_corrupt) ||
	    !CU_add_test(s, "misdirected", test_misdirected) || !CU_add_test(s, "stale", test_stale) ||
	    !CU_add_test(s, "collateral", test_collateral) ||
	    !CU_add_test(s, "every fixture has a test", test_all_listed))
		return -1;
	return 0;
}

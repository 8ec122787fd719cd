/*
 * test_engine.c - the verdict engine against crafted scans whose truth we know.
 *
 * Each test builds the events a campaign would record -- HELLO, a baseline
 * scan, WORK, SUBMIT/ACK, the cut, the next scan -- with real record bytes
 * from common/record.c, and checks the class and details of every finding.
 */
#include "suites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/proto.h"
#include "../../common/record.h"
#include "../../harness/engine.h"

#define REGION_BYTES (1u << 20)
#define RS 4096u
#define SPR (RS / PC_SECTOR)

static struct pc_geom G;
static json_object *verdicts;	/* array of verdicts emitted */
static int64_t tclock;

static int collect(json_object *v, void *arg)
{
	json_object_array_add(verdicts, json_object_get(v));
	return 0;
}

static void geom_setup(void)
{
	char err[128];

	pc_geom_init(&G, REGION_BYTES, RS, 42, err, sizeof(err));
	pc_uuid_parse("11111111-2222-4333-8444-555555555555", G.uuid);
}

static void feed(struct engine *e, unsigned cycle, const char *kind, const char *key, json_object *payload)
{
	json_object *ev = json_object_new_object();
	char err[256] = "";

	json_object_object_add(ev, "t", json_object_new_int64(tclock += 10));
	json_object_object_add(ev, "board", json_object_new_string("b1"));
	json_object_object_add(ev, "cycle", json_object_new_int64(cycle));
	json_object_object_add(ev, "ev", json_object_new_string(kind));
	if (key)
		json_object_object_add(ev, key, payload);
	CU_ASSERT_EQUAL_FATAL(engine_feed(e, ev, err, sizeof(err)), 0);
	if (err[0])
		fprintf(stderr, "engine: %s\n", err);
	json_object_put(ev);
}

static void rx(struct engine *e, unsigned cycle, json_object *msg)
{
	feed(e, cycle, "rx", "msg", msg);
}

static json_object *hello(void)
{
	json_object *m = pc_msg_new(PC_MSG_HELLO), *r = json_object_new_object(), *q = json_object_new_object();
	json_object *d = json_object_new_object();
	char u[37];

	pc_uuid_format(G.uuid, u);
	json_object_object_add(m, "board", json_object_new_string("b1"));
	json_object_object_add(m, "agent", json_object_new_string("test"));
	json_object_object_add(m, "boot_id", json_object_new_string("boot"));
	json_object_object_add(m, "kernel", json_object_new_string("6.1.0-test"));
	json_object_object_add(m, "backend", json_object_new_string("sim"));
	json_object_object_add(r, "uuid", json_object_new_string(u));
	json_object_object_add(r, "bytes", json_object_new_int64(REGION_BYTES));
	json_object_object_add(r, "record_size", json_object_new_int64(RS));
	json_object_object_add(r, "slots", json_object_new_int64(G.nslots));
	json_object_object_add(r, "seed", json_object_new_int64((int64_t)G.seed));
	json_object_object_add(m, "region", r);
	json_object_object_add(d, "name", json_object_new_string("TEST"));
	json_object_object_add(d, "cid", json_object_new_string("00112233445566778899aabbccddeeff"));
	json_object_object_add(m, "device", d);
	json_object_object_add(q, "fua", json_object_new_int(1));
	json_object_object_add(q, "write_cache", json_object_new_string("write back"));
	json_object_object_add(m, "queue", q);
	return m;
}

/* What each slot holds in a crafted scan. */
struct slotview {
	int damaged;			/* 0: whole record (seq, cycle, flags) */
	uint64_t seq;
	uint32_t cycle;
	uint16_t flags;
	uint8_t img[SPR][PC_SECTOR];	/* damaged: the sector bytes */
	int err[SPR];			/* damaged: the read of this sector fails */
};

static struct slotview *view;

static void view_whole(uint32_t slot, uint64_t seq, uint32_t cycle, uint16_t flags)
{
	view[slot].damaged = 0;
	view[slot].seq = seq;
	view[slot].cycle = cycle;
	view[slot].flags = flags;
}

/* Start a damaged slot from a whole record's bytes. */
static void view_bytes(uint32_t slot, uint64_t seq, uint32_t cycle, uint16_t flags)
{
	view[slot].damaged = 1;
	pc_record_build(&view[slot].img[0][0], &G, slot, seq, cycle, flags);
}

/* Emit the scan the agent would send for view[] (the agent's own logic:
 * classify sectors, send whole records as runs, the rest as slot reports). */
static void scan(struct engine *e, unsigned cycle)
{
	json_object *m = pc_msg_new(PC_MSG_SCAN_BEGIN);
	struct pc_run runs[PC_PROTO_RUNS_PER_LINE];
	unsigned nr = 0;

	feed(e, cycle, "verify", NULL, NULL);
	json_object_object_add(m, "slots", json_object_new_int64(G.nslots));
	json_object_object_add(m, "pattern", json_object_new_string("sequential"));
	json_object_object_add(m, "full", json_object_new_boolean(1));
	rx(e, cycle, m);
	for (uint32_t s = 0; s < G.nslots; s++) {
		if (view[s].damaged) {
			struct pc_sect_report sect[SPR];
			struct pc_slot_report rep = { .slot = s, .nsect = SPR, .sect = sect };
			memset(sect, 0, sizeof(sect));
			for (unsigned i = 0; i < SPR; i++) {
				struct pc_sector_hdr h;
				sect[i].idx = (uint16_t)i;
				if (view[s].err[i]) {
					sect[i].kind = PC_SK_ERR;
					sect[i].value = (uint32_t)view[s].err[i];
				} else if (pc_sector_check(view[s].img[i], &G, &h) == PC_SECT_VALID) {
					sect[i].kind = PC_SK_VALID;
					sect[i].seq = h.seq;
					sect[i].cycle = h.cycle;
					sect[i].flags = h.flags;
					sect[i].lba = h.lba;
					sect[i].hidx = h.idx;
				} else {
					sect[i].kind = PC_SK_RAW;
					memcpy(sect[i].raw, view[s].img[i], PC_SECTOR);
				}
			}
			/* in two messages, as the agent splits a large record's report */
			rep.nsect = SPR / 2;
			rx(e, cycle, pc_msg_slot(&rep));
			rep.sect = sect + SPR / 2;
			rep.nsect = SPR - SPR / 2;
			rx(e, cycle, pc_msg_slot(&rep));
			continue;
		}
		if (nr == PC_PROTO_RUNS_PER_LINE) {
			rx(e, cycle, pc_msg_runs(runs, nr));
			nr = 0;
		}
		runs[nr++] = (struct pc_run){ .pos = s, .n = 1, .seq = view[s].seq, .cycle = view[s].cycle,
					      .flags = view[s].flags };
	}
	if (nr)
		rx(e, cycle, pc_msg_runs(runs, nr));
	m = pc_msg_new(PC_MSG_SCAN_END);
	json_object_object_add(m, "slots", json_object_new_int64(G.nslots));
	json_object_object_add(m, "anomalies", json_object_new_int64(0));
	json_object_object_add(m, "raw_dropped", json_object_new_int64(0));
	rx(e, cycle, m);
}

static struct engine *start(void)
{
	struct engine *e;

	geom_setup();
	json_object_put(verdicts);
	verdicts = json_object_new_array();
	free(view);
	view = calloc(G.nslots, sizeof(*view));
	e = engine_new("test", collect, NULL, NULL);
	feed(e, 1, "power_on", NULL, NULL);
	rx(e, 1, hello());
	scan(e, 1);	/* baseline: every slot gen-0 */
	return e;
}

static void work(struct engine *e, unsigned cycle, uint64_t first, uint32_t n, int mode)
{
	struct pc_work w = { .cycle = cycle, .first = first, .n = n, .mode = mode, .pattern = PC_PAT_SEQUENTIAL,
			     .record_size = RS, .flush_every = 8, .qd = 4, .seed = 1 };

	feed(e, cycle, "work", "work", pc_msg_work(&w));
	rx(e, cycle, pc_msg_range(PC_MSG_SUBMIT, first, n));
}

static json_object *finding_for(json_object *v, const char *cls, uint64_t seq)
{
	json_object *fs, *f, *c, *s;

	if (!json_object_object_get_ex(v, "findings", &fs))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(fs); i++) {
		f = json_object_array_get_idx(fs, i);
		json_object_object_get_ex(f, "class", &c);
		json_object_object_get_ex(f, "seq", &s);
		if (!strcmp(json_object_get_string(c), cls) && (uint64_t)json_object_get_int64(s) == seq)
			return f;
	}
	return NULL;
}

static int64_t iget(json_object *o, const char *path1, const char *path2)
{
	json_object *a, *b;

	if (!o || !json_object_object_get_ex(o, path1, &a))
		return -1;
	if (!path2)
		return json_object_get_int64(a);
	return json_object_object_get_ex(a, path2, &b) ? json_object_get_int64(b) : -1;
}

static const char *sget(json_object *o, const char *k)
{
	json_object *a;

	return o && json_object_object_get_ex(o, k, &a) ? json_object_get_string(a) : "";
}

static void test_honest_pass(void)
{
	struct engine *e = start();
	uint16_t fl = PC_MODE_FUA;
	json_object *v;

	work(e, 1, 1, 20, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 12));
	feed(e, 1, "cut", NULL, NULL);
	for (uint32_t s = 0; s < 12; s++)
		view_whole(s, s + 1, 1, fl);
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	scan(e, 2);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "PASS");
	CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 1);
	CU_ASSERT_EQUAL(iget(v, "counts", "intact"), 12);
	CU_ASSERT_EQUAL(iget(v, "counts", "not_written"), 8);
	CU_ASSERT_EQUAL(iget(v, "records", "acked"), 12);
	CU_ASSERT_EQUAL(iget(v, "violations", NULL), 0);
	/* the unwritten tail is one compact range finding */
	CU_ASSERT_EQUAL(iget(finding_for(v, "not_written", 13), "n", NULL), 8);
	engine_free(e);
}

/* Every class the engine knows in issue 2's scope, in one cycle. */
static void test_every_class(void)
{
	struct engine *e = start();
	uint16_t fl = PC_MODE_FLUSH;
	json_object *v, *f;

	work(e, 1, 1, 10, PC_MODE_FLUSH);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 8));	/* seqs 1..8 acked, 9..10 not */
	feed(e, 1, "cut", NULL, NULL);
	view_whole(0, 1, 1, fl);
	view_whole(1, 2, 1, fl);
	view_whole(2, 3, 1, fl);
	/* seq 4 (slot 3): acked, but the gen-0 occupant is still there */
	view_whole(3, 0, 0, 0);
	/* seq 5 (slot 4): acked, sectors 0..3 new, 4..7 old */
	view_bytes(4, 5, 1, fl);
	{
		uint8_t oldrec[RS];
		pc_record_build(oldrec, &G, 4, 0, 0, 0);
		memcpy(view[4].img[4], oldrec + 4 * PC_SECTOR, 4 * PC_SECTOR);
	}
	/* seq 6 (slot 5): sector 2 torn inside: new bytes [0,100), old after */
	view_bytes(5, 6, 1, fl);
	{
		uint8_t oldrec[RS];
		pc_record_build(oldrec, &G, 5, 0, 0, 0);
		memcpy(view[5].img[2] + 100, oldrec + 2 * PC_SECTOR + 100, PC_SECTOR - 100);
	}
	/* seq 7 (slot 6): three bits flipped in sector 1 */
	view_bytes(6, 7, 1, fl);
	view[6].img[1][200] ^= 0x01;
	view[6].img[1][300] ^= 0x80;
	view[6].img[1][301] ^= 0x10;
	view_whole(7, 8, 1, fl);
	/* seq 9 (slot 8): not acked, never landed */
	view_whole(8, 0, 0, 0);
	/* seq 10 (slot 9): not acked, torn: sector 0 new only */
	view_bytes(9, 0, 0, 0);
	{
		uint8_t newrec[RS];
		pc_record_build(newrec, &G, 9, 10, 1, fl);
		memcpy(view[9].img[0], newrec, PC_SECTOR);
	}
	/* cold slot 100: a bit flipped in gen-0 data nobody wrote */
	view_bytes(100, 0, 0, 0);
	view[100].img[5][77] ^= 0x04;
	/* cold slot 101: sector 3 holds a valid sector written for slot 102 */
	view_bytes(101, 0, 0, 0);
	{
		uint8_t rec102[RS];
		pc_record_build(rec102, &G, 102, 0, 0, 0);
		memcpy(view[101].img[3], rec102 + 3 * PC_SECTOR, PC_SECTOR);
	}
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	scan(e, 2);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");
	CU_ASSERT_EQUAL(iget(v, "counts", "intact"), 4);
	CU_ASSERT_EQUAL(iget(v, "counts", "lost_acked"), 1);
	CU_ASSERT_EQUAL(iget(v, "counts", "not_written"), 1);
	CU_ASSERT_EQUAL(iget(v, "counts", "torn"), 2);
	CU_ASSERT_EQUAL(iget(v, "counts", "torn_sector"), 1);
	CU_ASSERT_EQUAL(iget(v, "counts", "corrupt"), 1);
	CU_ASSERT_EQUAL(iget(v, "counts", "collateral"), 1);
	CU_ASSERT_EQUAL(iget(v, "counts", "misdirected"), 1);
	CU_ASSERT_EQUAL(iget(v, "violations", NULL), 6);

	f = finding_for(v, "lost_acked", 4);
	CU_ASSERT_PTR_NOT_NULL(f);
	CU_ASSERT_EQUAL(iget(f, "previous_seq", NULL), 0);
	f = finding_for(v, "torn", 5);
	CU_ASSERT_EQUAL(iget(f, "boundary", NULL), 4);
	CU_ASSERT_STRING_EQUAL(sget(f, "violation"), "true");
	f = finding_for(v, "torn", 10);
	CU_ASSERT_STRING_EQUAL(sget(f, "violation"), "false");	/* never acked: allowed */
	CU_ASSERT_EQUAL(iget(f, "boundary", NULL), 1);
	f = finding_for(v, "torn_sector", 6);
	CU_ASSERT_EQUAL(iget(f, "sector", NULL), 2);
	/* the tear is at byte 100; where new and old bytes agree by chance
	 * the range widens, but it always contains the truth */
	CU_ASSERT(iget(f, "offset", NULL) <= 100);
	CU_ASSERT(iget(f, "offset_max", NULL) < 0 ? iget(f, "offset", NULL) == 100 : iget(f, "offset_max", NULL) >= 100);
	CU_ASSERT_STRING_EQUAL(sget(f, "order"), "new-old");
	f = finding_for(v, "corrupt", 7);
	CU_ASSERT_EQUAL(iget(f, "bits", NULL), 3);
	CU_ASSERT_STRING_EQUAL(sget(f, "nearest"), "new");
	f = finding_for(v, "collateral", 0);
	CU_ASSERT_EQUAL(iget(f, "slot", NULL), 100);
	f = finding_for(v, "misdirected", 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(iget(f, "slot", NULL), 101);
	CU_ASSERT_EQUAL(iget(f, "belongs_lba", NULL), (int64_t)pc_slot_lba(&G, 102) + 3);
	CU_ASSERT_EQUAL(iget(f, "found_lba", NULL), (int64_t)pc_slot_lba(&G, 101) + 3);

	/* the next cycle writes elsewhere: old damage is not reported again */
	work(e, 2, 11, 5, PC_MODE_FLUSH);
	rx(e, 2, pc_msg_range(PC_MSG_ACK, 11, 5));
	for (uint32_t s = 10; s < 15; s++)
		view_whole(s, s + 1, 2, fl);
	feed(e, 3, "power_on", NULL, NULL);
	rx(e, 3, hello());
	scan(e, 3);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 2);
	v = json_object_array_get_idx(verdicts, 1);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "PASS");
	CU_ASSERT_EQUAL(iget(v, "counts", "intact"), 5);
	CU_ASSERT_EQUAL(iget(v, "violations", NULL), 0);
	engine_free(e);
}

static void test_stale_and_boot_fail(void)
{
	struct engine *e = start();
	uint16_t fl = PC_MODE_FUA;
	json_object *v;

	work(e, 1, 1, 4, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 4));
	for (uint32_t s = 0; s < 4; s++)
		view_whole(s, s + 1, 1, fl);
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	scan(e, 2);
	/* boot 3 never comes: BOOT_FAIL for cycle 3; cycle 2's writes wait */
	work(e, 2, 5, 4, PC_MODE_FUA);
	rx(e, 2, pc_msg_range(PC_MSG_ACK, 5, 4));
	feed(e, 3, "power_on", NULL, NULL);
	{
		json_object *r = json_object_new_string("no HELLO");
		feed(e, 3, "boot_fail", "reason", r);
	}
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 2);
	CU_ASSERT_STRING_EQUAL(sget(json_object_array_get_idx(verdicts, 1), "verdict"), "BOOT_FAIL");
	CU_ASSERT_EQUAL(iget(json_object_array_get_idx(verdicts, 1), "cycle", NULL), 3);
	/* boot 4 works; cycle 2's writes landed, but slot 1 came back with gen-0 */
	for (uint32_t s = 4; s < 8; s++)
		view_whole(s, s + 1, 2, fl);
	view_whole(1, 0, 0, 0);
	feed(e, 4, "power_on", NULL, NULL);
	rx(e, 4, hello());
	scan(e, 4);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 3);
	v = json_object_array_get_idx(verdicts, 2);
	CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 2);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");
	CU_ASSERT_EQUAL(iget(v, "counts", "stale"), 1);
	CU_ASSERT_EQUAL(iget(v, "counts", "intact"), 4);
	engine_free(e);
}

static void test_infra_and_determinism(void)
{
	struct engine *e = start();
	json_object *first;

	feed(e, 1, "infra", "reason", json_object_new_string("relay on failed"));
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	CU_ASSERT_STRING_EQUAL(sget(json_object_array_get_idx(verdicts, 0), "verdict"), "INFRA_ERROR");
	/* a second infra event for the same cycle adds no second verdict */
	feed(e, 1, "infra", "reason", json_object_new_string("again"));
	CU_ASSERT_EQUAL(json_object_array_length(verdicts), 1);
	engine_free(e);

	/* the same events give byte-identical verdicts */
	test_every_class();	/* leaves its verdicts in `verdicts` */
	first = verdicts;	/* take it over */
	verdicts = NULL;
	test_every_class();
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(first), json_object_array_length(verdicts));
	for (size_t i = 0; i < json_object_array_length(first); i++)
		CU_ASSERT_STRING_EQUAL(json_object_to_json_string(json_object_array_get_idx(first, i)),
				       json_object_to_json_string(json_object_array_get_idx(verdicts, i)));
	json_object_put(first);
}

/* A tear over a sector that was already torn: located against its old bytes. */
static void test_tear_over_damage(void)
{
	struct engine *e = start();
	uint16_t fl = PC_MODE_FLUSH;
	uint8_t rec[SPR * PC_SECTOR], old[PC_SECTOR];
	json_object *v, *f;

	/* cycle 1: seq 1 in slot 0, its sector 2 torn at byte 100 (new, then gen-0) */
	work(e, 1, 1, 1, PC_MODE_FLUSH);
	view_bytes(0, 1, 1, fl);
	pc_record_build(rec, &G, 0, 0, 0, 0);
	memcpy(view[0].img[2] + 100, rec + 2 * PC_SECTOR + 100, PC_SECTOR - 100);
	memcpy(old, view[0].img[2], PC_SECTOR);
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	scan(e, 2);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	CU_ASSERT_EQUAL(iget(json_object_array_get_idx(verdicts, 0), "counts", "torn_sector"), 1);
	/* cycle 2: a lap later seq 255 lands in slot 0; its sector 2 tears at byte 300 over the old tear */
	work(e, 2, 255, 1, PC_MODE_FLUSH);
	view_bytes(0, 255, 2, fl);
	memcpy(view[0].img[2] + 300, old + 300, PC_SECTOR - 300);
	feed(e, 3, "power_on", NULL, NULL);
	rx(e, 3, hello());
	scan(e, 3);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 2);
	v = json_object_array_get_idx(verdicts, 1);
	CU_ASSERT_EQUAL(iget(v, "counts", "corrupt"), 0);
	f = finding_for(v, "torn_sector", 255);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(iget(f, "sector", NULL), 2);
	CU_ASSERT(iget(f, "offset", NULL) <= 300);
	CU_ASSERT(iget(f, "offset_max", NULL) < 0 ? iget(f, "offset", NULL) == 300 : iget(f, "offset_max", NULL) >= 300);
	engine_free(e);
}

/* A read error in an acknowledged record, and in cold data. */
static void test_unreadable(void)
{
	struct engine *e = start();
	uint16_t fl = PC_MODE_FUA;
	json_object *v, *f;

	work(e, 1, 1, 4, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 4));
	for (uint32_t s = 0; s < 4; s++)
		view_whole(s, s + 1, 1, fl);
	view_bytes(2, 3, 1, fl);
	view[2].err[2] = 5;	/* EIO */
	view_bytes(50, 0, 0, 0);
	view[50].err[7] = 5;
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	scan(e, 2);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");
	CU_ASSERT_EQUAL(iget(v, "counts", "unreadable"), 2);
	f = finding_for(v, "unreadable", 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(iget(f, "sector", NULL), 2);
	CU_ASSERT_EQUAL(iget(f, "errno", NULL), 5);
	f = finding_for(v, "unreadable", 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(iget(f, "slot", NULL), 50);
	engine_free(e);
}

static int cleanup(void)
{
	json_object_put(verdicts);
	verdicts = NULL;
	free(view);
	view = NULL;
	return 0;
}

int suite_engine(void)
{
	CU_pSuite s = CU_add_suite("engine", NULL, cleanup);

	if (!s)
		return -1;
	if (!CU_add_test(s, "honest cycle: intact and not_written", test_honest_pass) ||
	    !CU_add_test(s, "every class in one cycle, with details", test_every_class) ||
	    !CU_add_test(s, "stale data and BOOT_FAIL", test_stale_and_boot_fail) ||
	    !CU_add_test(s, "unreadable sectors", test_unreadable) ||
	    !CU_add_test(s, "a tear over an earlier tear", test_tear_over_damage) ||
	    !CU_add_test(s, "INFRA_ERROR once, and determinism", test_infra_and_determinism))
		return -1;
	return 0;
}

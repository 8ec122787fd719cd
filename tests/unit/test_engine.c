/*
 * test_engine.c - the verdict engine against crafted scans whose truth we know.
 *
 * Each test builds the events a campaign would record -- HELLO, a baseline
 * scan, WORK, SUBMIT/ACK, the cut, the next scan -- with real record bytes
 * from common/record.c, and checks the class and details of every finding.
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/json.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "harness/engine/engine.h"
#include "harness/engine/engine_carry.h"
#include "harness/engine/engine_judge.h"
#include "harness/engine/engine_ledger.h"
#include "harness/cli/replay.h"

#define REGION_BYTES (1u << 20)
#define RS 4096u
#define SPR (RS / PC_SECTOR)

static uint64_t region_bytes = REGION_BYTES;	/* the region start() prepares */
static struct pc_geom G;
static json_object *verdicts;	/* array of verdicts emitted */
static int64_t tclock;

/* Every verdict: what the engine hands on typed says what its line says
 * (the campaign tallies the one and appends the other). */
static int collect(const struct pc_verdict *v, void *arg)
{
	struct pc_verdict line;

	CU_ASSERT_FATAL(pc_verdict_read(v->json, &line) == 0);
	CU_ASSERT_STRING_EQUAL(v->board, line.board);
	CU_ASSERT_EQUAL(v->cycle, line.cycle);
	CU_ASSERT_EQUAL(v->outcome, line.outcome);
	CU_ASSERT(v->outcome >= 0 && v->outcome < PC_NOUTCOMES);
	CU_ASSERT_EQUAL(v->mode, line.mode);
	CU_ASSERT_EQUAL(memcmp(v->counts, line.counts, sizeof(v->counts)), 0);
	CU_ASSERT_EQUAL(v->violations, line.violations);
	json_object_array_add(verdicts, json_object_get(v->json));
	return 0;
}

static void geom_setup(void)
{
	char err[128];

	pc_geom_init(&G, region_bytes, RS, 42, err, sizeof(err));
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
	json_object_object_add(r, "bytes", json_object_new_int64((int64_t)region_bytes));
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
static int slot_whole;	/* scan(): a damaged slot in one message, not two */
/* scan() as the agent spends its raw budget: at most PC_PROTO_MAX_RAW bad
 * sectors go raw, the rest by hash; with agent_known, a sector the engine
 * says it holds (engine_board_known) goes by hash without spending it */
static int agent_budget, agent_known;

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
	json_object *m;
	struct pc_run runs[PC_PROTO_RUNS_PER_LINE];
	unsigned nr = 0, nraw = 0;
	static struct pc_known known[PC_PROTO_MAX_KNOWN];
	static struct pc_known_slot kslots[PC_PROTO_MAX_KNOWN_SLOTS];
	static uint32_t same[PC_PROTO_SAME_PER_LINE];
	uint32_t nknown = agent_known ? engine_board_known(e, "b1", known, PC_PROTO_MAX_KNOWN) : 0;
	uint32_t nks = agent_known ? engine_board_known_slots(e, "b1", kslots, PC_PROTO_MAX_KNOWN_SLOTS) : 0, nsame = 0;

	feed(e, cycle, "verify", NULL, NULL);
	m = pc_msg_new(PC_MSG_SCAN_BEGIN);
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
				} else if (memcmp(view[s].img[i], view[s].img[i] + 1, PC_SECTOR - 1) == 0) {
					sect[i].kind = PC_SK_FILL;	/* one byte value, as the agent says it */
					sect[i].value = view[s].img[i][0];
				} else {
					uint32_t crc = pc_crc32c(0, view[s].img[i], PC_SECTOR);
					int is_known = 0;

					for (uint32_t k = 0; k < nknown && !is_known; k++)
						is_known = known[k].slot == s && known[k].idx == i && known[k].crc == crc;
					if (agent_budget && (is_known || nraw >= PC_PROTO_MAX_RAW)) {
						sect[i].kind = PC_SK_HASH;
						sect[i].value = crc;
					} else {
						sect[i].kind = PC_SK_RAW;
						sect[i].value = crc;
						memcpy(sect[i].raw, view[s].img[i], PC_SECTOR);
						nraw++;
					}
				}
			}
			if (nks) {
				/* the agent's SAME: a damaged slot exactly as the engine holds it */
				uint64_t dg = pc_slot_digest(sect, SPR);
				int hit = 0;

				for (uint32_t k = 0; k < nks && !hit; k++)
					hit = kslots[k].slot == s && kslots[k].digest == dg;
				if (hit && nsame < PC_PROTO_SAME_PER_LINE) {
					for (unsigned i = 0; i < SPR; i++)
						if (sect[i].kind == PC_SK_RAW)
							nraw--;	/* never sent: the budget was not spent */
					same[nsame++] = s;
					continue;
				}
			}
			if (slot_whole) {
				rx(e, cycle, pc_msg_slot(&rep));
				continue;
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
	if (nsame)
		rx(e, cycle, pc_msg_same(same, nsame));
	m = pc_msg_new(PC_MSG_SCAN_END);
	json_object_object_add(m, "slots", json_object_new_int64(G.nslots));
	json_object_object_add(m, "anomalies", json_object_new_int64(0));
	json_object_object_add(m, "raw_dropped", json_object_new_int64(0));
	rx(e, cycle, m);
}

/* An engine that knows board b1 from a resolved configuration (config:
 * JSON text, or NULL for an unconfigured engine), after the baseline scan. */
static struct engine *start_cfg(const char *config)
{
	struct engine *e;

	geom_setup();
	json_object_put(verdicts);
	verdicts = json_object_new_array();
	free(view);
	view = calloc(G.nslots, sizeof(*view));
	CU_ASSERT_PTR_NOT_NULL_FATAL(view);
	e = engine_new("test", collect, NULL, NULL);
	if (config) {
		json_object *c = json_tokener_parse(config);
		char err[256] = "";

		CU_ASSERT_PTR_NOT_NULL_FATAL(c);
		if (engine_configure(e, c, err, sizeof(err)))
			fprintf(stderr, "engine_configure: %s\n", err);
		CU_ASSERT_EQUAL_FATAL(engine_configure(e, NULL, err, sizeof(err)), -EINVAL);	/* once */
		json_object_put(c);
	}
	feed(e, 1, "power_on", NULL, NULL);
	rx(e, 1, hello());
	scan(e, 1);	/* baseline: every slot gen-0 */
	return e;
}

static struct engine *start(void)
{
	return start_cfg(NULL);
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

/*
 * Old, already judged damage must not take the raw budget from new damage:
 * 60 unacknowledged sub-sector tears in cycle 1, ten more in cycle 2 after
 * them in scan order. With KNOWN (the engine names what it holds) the ten
 * come raw and are torn_sector; without it, the four that fit the budget are
 * torn_sector and the other six arrive as hashes: unclassified, with the
 * reason, and no violation -- never a guessed "corrupt".
 */
static void test_known_and_unclassified(void)
{
	for (int k = 0; k < 2; k++) {
		struct engine *e;
		uint8_t rec[SPR * PC_SECTOR];
		uint16_t fl = PC_MODE_FLUSH;
		json_object *v, *f;

		agent_budget = 1;
		agent_known = k;
		e = start();
		pc_record_build(rec, &G, 0, 0, 0, 0);
		for (int c = 1; c <= 2; c++) {
			uint64_t first = c == 1 ? 1 : 61;
			uint32_t n = c == 1 ? 60 : 10;

			work(e, (unsigned)c, first, n, PC_MODE_FLUSH);
			for (uint64_t q = first; q < first + n; q++) {
				uint32_t slot = (uint32_t)(q - 1);
				view_bytes(slot, q, (uint32_t)c, fl);
				pc_record_build(rec, &G, slot, 0, 0, 0);
				memcpy(view[slot].img[2] + 100, rec + 2 * PC_SECTOR + 100, PC_SECTOR - 100);
			}
			feed(e, (unsigned)c + 1, "power_on", NULL, NULL);
			rx(e, (unsigned)c + 1, hello());
			scan(e, (unsigned)c + 1);
		}
		CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 2);
		v = json_object_array_get_idx(verdicts, 0);
		CU_ASSERT_EQUAL(iget(v, "counts", "torn_sector"), 60);
		v = json_object_array_get_idx(verdicts, 1);
		CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "PASS");
		CU_ASSERT_EQUAL(iget(v, "violations", NULL), 0);
		CU_ASSERT_EQUAL(iget(v, "counts", "corrupt"), 0);
		CU_ASSERT_EQUAL(iget(v, "counts", "collateral"), 0);
		if (k) {
			CU_ASSERT_EQUAL(iget(v, "counts", "torn_sector"), 10);
			CU_ASSERT_EQUAL(iget(v, "counts", "unclassified"), -1);	/* absent when 0 */
		} else {
			CU_ASSERT_EQUAL(iget(v, "counts", "torn_sector"), 4);
			CU_ASSERT_EQUAL(iget(v, "counts", "unclassified"), 6);
			f = finding_for(v, "unclassified", 70);
			CU_ASSERT_PTR_NOT_NULL_FATAL(f);
			CU_ASSERT_EQUAL(iget(f, "sector", NULL), 2);
			CU_ASSERT_PTR_NOT_NULL(strstr(sget(f, "reason"), "bytes not received"));
			CU_ASSERT_FALSE(json_object_get_boolean(json_object_object_get(f, "violation")));
		}
		agent_budget = agent_known = 0;
		engine_free(e);
	}
}

static json_object *finding_what(json_object *v, const char *what, size_t nth);

/*
 * A HELLO that shows both superblock copies (as the agent does), each as
 * the region with created 1000; then copy `copy` (0 A, 1 B, -1 none) gets
 * field = value (a string for uuid). An I/O field that differs makes the
 * agent refuse the region (region_error); a created time does not.
 */
static json_object *hello_copies(int copy, const char *field, uint64_t value, const char *str)
{
	json_object *m = hello(), *r, *sb = json_object_new_object(), *copies = json_object_new_object();

	json_object_object_get_ex(m, "region", &r);
	json_object_object_add(r, "created", json_object_new_uint64(1000));
	for (int k = 0; k < 2; k++) {
		json_object *c = NULL;
		json_object_deep_copy(r, &c, NULL);
		if (k == copy)
			json_object_object_add(c, field, str ? json_object_new_string(str) : json_object_new_uint64(value));
		json_object_object_add(copies, k ? "b" : "a", c);
	}
	json_object_object_add(sb, "a", json_object_new_string("ok"));
	json_object_object_add(sb, "b", json_object_new_string("ok"));
	json_object_object_add(sb, "copies", copies);
	json_object_object_add(m, "superblock", sb);
	if (copy >= 0 && strcmp(field, "created")) {
		json_object_object_del(m, "region");
		json_object_object_add(m, "region_error", json_object_new_string("the two superblock copies disagree"));
	}
	return m;
}

/* Findings with this "what" in every verdict so far. */
static int count_what(const char *what)
{
	int n = 0;

	for (size_t i = 0; i < json_object_array_length(verdicts); i++)
		for (size_t k = 0; finding_what(json_object_array_get_idx(verdicts, i), what, k); k++)
			n++;
	return n;
}

/*
 * Each superblock field changed in one copy: a device-level finding in
 * exactly one verdict (FAIL), however many boots show it again; the cycle
 * whose writes can no longer be checked is that verdict.
 */
static void test_superblock_mismatch(void)
{
	static const char *const fields[] = { "uuid", "bytes", "record_size", "slots", "seed", "created" };

	for (size_t fi = 0; fi < PC_ARRAY_SIZE(fields); fi++) {
		const char *fld = fields[fi];
		int io = strcmp(fld, "created") != 0;
		struct engine *e;
		json_object *v, *f, *ch;

		geom_setup();
		json_object_put(verdicts);
		verdicts = json_object_new_array();
		free(view);
		view = calloc(G.nslots, sizeof(*view));
		e = engine_new("test", collect, NULL, NULL);
		feed(e, 1, "power_on", NULL, NULL);
		rx(e, 1, hello_copies(-1, NULL, 0, NULL));
		scan(e, 1);
		work(e, 1, 1, 4, PC_MODE_FUA);
		rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 4));
		for (uint32_t sl = 0; sl < 4; sl++)
			view_whole(sl, sl + 1, 1, PC_MODE_FUA);
		/* three boots that show the same changed copy B */
		for (unsigned c = 2; c <= 4; c++) {
			feed(e, c, "power_on", NULL, NULL);
			rx(e, c, hello_copies(1, fld, !strcmp(fld, "bytes") ? REGION_BYTES * 2 :
					  !strcmp(fld, "record_size") ? RS * 2 : !strcmp(fld, "slots") ? 7 :
					  !strcmp(fld, "seed") ? 43 : 999,
					  !strcmp(fld, "uuid") ? "99999999-2222-4333-8444-555555555555" : NULL));
			if (!io) {
				scan(e, c);
				work(e, c, 5 + (c - 2) * 4, 4, PC_MODE_FUA);
				for (uint32_t sl = 4 + (c - 2) * 4; sl < 8 + (c - 2) * 4; sl++)
					view_whole(sl, sl + 1, c, PC_MODE_FUA);
				rx(e, c, pc_msg_range(PC_MSG_ACK, 5 + (c - 2) * 4, 4));
			} else {
				feed(e, c, "infra", "reason", json_object_new_string("no usable region"));
			}
		}
		CU_ASSERT_EQUAL(count_what("superblock_mismatch"), 1);
		v = json_object_array_get_idx(verdicts, 0);
		CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 1);
		CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");
		f = finding_what(v, "superblock_mismatch", 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		CU_ASSERT_STRING_EQUAL(sget(f, "copy"), "B");
		CU_ASSERT_STRING_EQUAL(sget(f, "subject"), "device");
		CU_ASSERT(json_object_object_get_ex(f, "changes", &ch) && json_object_object_get_ex(ch, fld, NULL));
		if (!io) {
			/* the writes were still checked, the finding beside them */
			CU_ASSERT_EQUAL(iget(v, "counts", "intact"), 4);
		} else {
			CU_ASSERT_PTR_NOT_NULL(strstr(sget(v, "reason"), "no usable region"));
		}
		for (size_t i = 1; i < json_object_array_length(verdicts); i++)
			CU_ASSERT_STRING_EQUAL(sget(json_object_array_get_idx(verdicts, i), "verdict"),
					       io ? "INFRA_ERROR" : "PASS");
		engine_free(e);
	}
}

/*
 * The region replaced mid-campaign (prepared again: a new UUID in both
 * copies), and the medium lost (no superblock at all): a device finding in
 * exactly one verdict, never a silent new baseline that passes.
 */
static void test_region_replaced(void)
{
	struct engine *e = start();
	json_object *v, *f, *m, *sb;

	work(e, 1, 1, 4, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 4));
	feed(e, 2, "power_on", NULL, NULL);
	pc_uuid_parse("aaaaaaaa-2222-4333-8444-555555555555", G.uuid);
	memset(view, 0, G.nslots * sizeof(*view));
	rx(e, 2, hello());
	scan(e, 2);	/* the new baseline */
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");
	CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 1);
	f = finding_what(v, "region_replaced", 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_STRING_EQUAL(sget(f, "subject"), "device");
	CU_ASSERT(json_object_get_boolean(json_object_object_get(f, "violation")));
	/* the campaign goes on against the new region: its cycles judged, no second finding */
	work(e, 2, 1000, 4, PC_MODE_FUA);
	rx(e, 2, pc_msg_range(PC_MSG_ACK, 1000, 4));
	for (uint32_t sl = 0; sl < 4; sl++)
		view_whole(pc_slot_of_seq(&G, PC_PAT_SEQUENTIAL, 1000 + sl), 1000 + sl, 2, PC_MODE_FUA);
	feed(e, 3, "power_on", NULL, NULL);
	m = hello();
	sb = json_object_new_object();	/* as an agent with a region says it */
	json_object_object_add(sb, "a", json_object_new_string("ok"));
	json_object_object_add(sb, "b", json_object_new_string("ok"));
	json_object_object_add(m, "superblock", sb);
	rx(e, 3, m);
	scan(e, 3);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 2);
	v = json_object_array_get_idx(verdicts, 1);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "PASS");
	CU_ASSERT_EQUAL(count_what("region_replaced"), 1);
	/* then the medium is lost: both copies gone, the agent refuses */
	work(e, 3, 1004, 4, PC_MODE_FUA);
	rx(e, 3, pc_msg_range(PC_MSG_ACK, 1004, 4));
	feed(e, 4, "power_on", NULL, NULL);
	m = hello();
	json_object_object_del(m, "region");
	json_object_object_add(m, "region_error", json_object_new_string("not a prepared powercut region"));
	sb = json_object_new_object();
	json_object_object_add(sb, "a", json_object_new_string("not found"));
	json_object_object_add(sb, "b", json_object_new_string("not found"));
	json_object_object_add(sb, "copies", json_object_new_object());
	json_object_object_add(m, "superblock", sb);
	rx(e, 4, m);
	feed(e, 4, "infra", "reason", json_object_new_string("no usable region"));
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 4);
	v = json_object_array_get_idx(verdicts, 2);
	CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 3);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");
	CU_ASSERT_PTR_NOT_NULL(finding_what(v, "superblock", 1));	/* both copies */
	CU_ASSERT_STRING_EQUAL(sget(json_object_array_get_idx(verdicts, 3), "verdict"), "INFRA_ERROR");
	engine_free(e);
	geom_setup();
}

/* A SAME line for a slot the engine does not hold as damaged (alone, or named
 * twice in one line): the scan cannot be used (INFRA_ERROR), nothing is
 * judged from it. */
static void test_same_refused(void)
{
	for (int twice = 0; twice < 2; twice++) {
		struct engine *e = start();
		uint32_t sl[2] = { 7, 7 };
		json_object *m, *v;

		work(e, 1, 1, 4, PC_MODE_FUA);
		feed(e, 2, "power_on", NULL, NULL);
		rx(e, 2, hello());
		feed(e, 2, "verify", NULL, NULL);
		m = pc_msg_new(PC_MSG_SCAN_BEGIN);
		json_object_object_add(m, "slots", json_object_new_int64(G.nslots));
		json_object_object_add(m, "pattern", json_object_new_string("sequential"));
		json_object_object_add(m, "full", json_object_new_boolean(1));
		rx(e, 2, m);
		rx(e, 2, pc_msg_same(sl, twice ? 2 : 1));
		m = pc_msg_new(PC_MSG_SCAN_END);
		json_object_object_add(m, "slots", json_object_new_int64(G.nslots));
		json_object_object_add(m, "anomalies", json_object_new_int64(0));
		json_object_object_add(m, "raw_dropped", json_object_new_int64(0));
		rx(e, 2, m);
		CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
		v = json_object_array_get_idx(verdicts, 0);
		CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "INFRA_ERROR");
		CU_ASSERT_PTR_NOT_NULL(strstr(sget(v, "reason"), "is not damage the engine holds"));
		engine_free(e);
	}
}

/* KNOWN lines: what the host builds, the parser takes back; bad ones refused. */
static void test_known_message(void)
{
	struct pc_known k[PC_PROTO_KNOWN_PER_LINE];
	char line[PC_PROTO_MAX_LINE + 2], err[256];
	struct pc_msg m;
	json_object *o;
	int len;

	for (uint32_t i = 0; i < PC_PROTO_KNOWN_PER_LINE; i++)
		k[i] = (struct pc_known){ UINT32_MAX - i, (uint16_t)(i * 131), 0x80000000u + i };
	o = pc_msg_known(k, PC_PROTO_KNOWN_PER_LINE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	len = pc_msg_line(o, line, sizeof(line));
	CU_ASSERT_FATAL(len > 0);
	CU_ASSERT_EQUAL_FATAL(pc_msg_parse(line, (size_t)len - 1, &m, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(m.type, PC_MSG_KNOWN);
	CU_ASSERT_EQUAL_FATAL(m.u.known.n, PC_PROTO_KNOWN_PER_LINE);
	for (uint32_t i = 0; i < PC_PROTO_KNOWN_PER_LINE; i++)
		CU_ASSERT(m.u.known.k[i].slot == k[i].slot && m.u.known.k[i].idx == k[i].idx &&
			  m.u.known.k[i].crc == k[i].crc);
	pc_msg_clear(&m);
	json_object_put(o);
	{
		struct pc_known_slot ks[PC_PROTO_KNOWN_SLOTS_PER_LINE];

		for (uint32_t i = 0; i < PC_PROTO_KNOWN_SLOTS_PER_LINE; i++)
			ks[i] = (struct pc_known_slot){ i * 7919u, UINT64_MAX - i };
		o = pc_msg_known_slots(ks, PC_PROTO_KNOWN_SLOTS_PER_LINE);
		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		len = pc_msg_line(o, line, sizeof(line));
		CU_ASSERT_FATAL(len > 0);
		CU_ASSERT_EQUAL_FATAL(pc_msg_parse(line, (size_t)len - 1, &m, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(m.u.known.nslots, PC_PROTO_KNOWN_SLOTS_PER_LINE);
		CU_ASSERT_EQUAL(m.u.known.n, 0);
		for (uint32_t i = 0; i < PC_PROTO_KNOWN_SLOTS_PER_LINE; i++)
			CU_ASSERT(m.u.known.slots[i].slot == ks[i].slot && m.u.known.slots[i].digest == ks[i].digest);
		pc_msg_clear(&m);
		json_object_put(o);
		CU_ASSERT_PTR_NULL(pc_msg_known_slots(ks, PC_PROTO_KNOWN_SLOTS_PER_LINE + 1));
	}
	{
		static uint32_t sl[PC_PROTO_SAME_PER_LINE];

		for (uint32_t i = 0; i < PC_PROTO_SAME_PER_LINE; i++)
			sl[i] = UINT32_MAX - 1 - i;	/* the longest numbers: the line still fits */
		o = pc_msg_same(sl, PC_PROTO_SAME_PER_LINE);
		CU_ASSERT_FATAL(pc_msg_line(o, line, sizeof(line)) > 0);
		json_object_put(o);
		CU_ASSERT_PTR_NULL(pc_msg_same(sl, PC_PROTO_SAME_PER_LINE + 1));
	}
	CU_ASSERT_PTR_NULL(pc_msg_known(k, 0));
	CU_ASSERT_PTR_NULL(pc_msg_known(k, PC_PROTO_KNOWN_PER_LINE + 1));
	static const char *const bad[] = {
		"{\"type\":\"known\",\"v\":1}",
		"{\"type\":\"known\",\"v\":1,\"sectors\":\"\"}",
		"{\"type\":\"known\",\"v\":1,\"sectors\":\"AAAA\"}",		/* 3 bytes: not whole entries */
		"{\"type\":\"known\",\"v\":1,\"sectors\":\"!!!!!!!!!!!!!!!!\"}",
		"{\"type\":\"known\",\"v\":1,\"sectors\":7}",
	};
	for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++) {
		CU_ASSERT_EQUAL(pc_msg_parse(bad[i], strlen(bad[i]), &m, err, sizeof(err)), -EINVAL);
	}
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

/* ---- hostile numbers: every one bounded before it sizes anything ---- */

/* The n-th device-level finding of a kind ("what"). */
static json_object *finding_what(json_object *v, const char *what, size_t nth)
{
	json_object *fs, *w;

	if (!json_object_object_get_ex(v, "findings", &fs))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(fs); i++) {
		json_object *f = json_object_array_get_idx(fs, i);
		if (json_object_object_get_ex(f, "what", &w) && !strcmp(json_object_get_string(w), what) && !nth--)
			return f;
	}
	return NULL;
}


/* The resolved configuration of board b1 as campaign.json holds it. */
#define CONFIG_B1(maxb) "{\"campaign\":\"test\",\"cycles\":10,\"boards\":[{\"name\":\"b1\"," \
	"\"device\":{\"backend\":\"posix\",\"record_size\":4096,\"max_region_bytes\":" maxb "}," \
	"\"records_per_cycle\":200}]}"

/* Feed one event given as JSON text; returns engine_feed's result. */
static int feed_json(struct engine *e, const char *text, char *err, size_t errlen)
{
	json_object *ev = json_tokener_parse(text);
	int ret;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
	err[0] = 0;
	ret = engine_feed(e, ev, err, errlen);
	json_object_put(ev);
	return ret;
}

/* Feed an event that must be refused, with an error naming why. */
static void feed_refused(struct engine *e, unsigned cycle, const char *kind, const char *key, json_object *payload,
			 const char *want)
{
	json_object *ev = json_object_new_object();
	char err[512] = "";
	int ret;

	json_object_object_add(ev, "t", json_object_new_int64(tclock += 10));
	json_object_object_add(ev, "board", json_object_new_string("b1"));
	json_object_object_add(ev, "cycle", json_object_new_int64(cycle));
	json_object_object_add(ev, "ev", json_object_new_string(kind));
	if (key)
		json_object_object_add(ev, key, payload);
	ret = engine_feed(e, ev, err, sizeof(err));
	if (ret != -EINVAL || !strstr(err, want))
		fprintf(stderr, "\n    want -EINVAL \"%s\", got %d \"%s\"\n", want, ret, err);
	CU_ASSERT_EQUAL(ret, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
	json_object_put(ev);
}

/* A HELLO claiming any geometry (consistent, as the parser demands). */
static json_object *hello_claiming(uint64_t slots, uint32_t rs)
{
	json_object *m = hello(), *r;

	json_object_object_get_ex(m, "region", &r);
	json_object_object_add(r, "bytes", json_object_new_uint64((slots * (rs / PC_SECTOR) + 16) * PC_SECTOR));
	json_object_object_add(r, "record_size", json_object_new_int64(rs));
	json_object_object_add(r, "slots", json_object_new_int64((int64_t)slots));
	return m;
}

/* The scan a lying agent sends for its claimed region: runs over every slot. */
static void scan_claimed(struct engine *e, unsigned cycle, uint64_t slots)
{
	json_object *m = pc_msg_new(PC_MSG_SCAN_BEGIN);
	struct pc_run r = { .pos = 0, .n = (uint32_t)slots, .seq = 0 };

	feed(e, cycle, "verify", NULL, NULL);
	json_object_object_add(m, "slots", json_object_new_int64((int64_t)slots));
	json_object_object_add(m, "pattern", json_object_new_string("sequential"));
	json_object_object_add(m, "full", json_object_new_boolean(1));
	rx(e, cycle, m);
	rx(e, cycle, pc_msg_runs(&r, 1));
	m = pc_msg_new(PC_MSG_SCAN_END);
	json_object_object_add(m, "slots", json_object_new_int64((int64_t)slots));
	json_object_object_add(m, "anomalies", json_object_new_int64(0));
	json_object_object_add(m, "raw_dropped", json_object_new_int64(0));
	rx(e, cycle, m);
}

/*
 * A HELLO claiming 2^25 slots (the engine once allocated ~1 GB for it, and
 * past that dereferenced a failed allocation): refused against the board's
 * max_region_bytes before anything is allocated; the rest of that boot is
 * ignored, the boot's cycle is INFRA_ERROR, and the writes still pending are
 * judged at the next good boot.
 */
static void test_huge_hello_refused(void)
{
	struct engine *e = start_cfg(CONFIG_B1("1048576"));
	struct engine_board_state st;
	json_object *v;
	struct pc_work w = { .cycle = 2, .first = 21, .n = 5, .mode = PC_MODE_FUA, .pattern = PC_PAT_SEQUENTIAL,
			     .record_size = RS, .flush_every = 8, .qd = 4, .seed = 1 };

	work(e, 1, 1, 20, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 20));
	for (uint32_t s = 0; s < 20; s++)
		view_whole(s, s + 1, 1, PC_MODE_FUA);
	feed(e, 2, "power_on", NULL, NULL);
	feed_refused(e, 2, "rx", "msg", hello_claiming(1u << 25, RS), "more than device.max_region_bytes 1048576");
	CU_ASSERT_PTR_NOT_NULL(engine_board_refused(e, "b1"));
	/* what the agent sends next for its claimed region is not looked at */
	scan_claimed(e, 2, 1u << 25);
	feed_refused(e, 2, "work", "work", pc_msg_work(&w), "work after a refused hello");
	CU_ASSERT_EQUAL(json_object_array_length(verdicts), 0);
	engine_board_state(e, "b1", &st);
	CU_ASSERT_EQUAL(st.nslots, G.nslots);	/* the geometry it had */
	CU_ASSERT_EQUAL(st.pending, 1);		/* cycle 1 still waits for its scan */
	/* the campaign ends the boot as an infrastructure error */
	feed(e, 2, "infra", "reason", json_object_new_string("hello refused (campaign)"));
	CU_ASSERT_PTR_NULL(engine_board_refused(e, "b1"));
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 2);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "INFRA_ERROR");
	/* the next boot is good: cycle 1's writes are judged as usual */
	feed(e, 3, "power_on", NULL, NULL);
	rx(e, 3, hello());
	scan(e, 3);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 2);
	v = json_object_array_get_idx(verdicts, 1);
	CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 1);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "PASS");
	CU_ASSERT_EQUAL(iget(v, "counts", "intact"), 20);

	/* without the campaign's infra event (an events.jsonl cut short, or
	 * crafted), the refused boot's cycle still gets its INFRA_ERROR, at the
	 * next power-on */
	feed(e, 4, "power_on", NULL, NULL);
	feed_refused(e, 4, "rx", "msg", hello_claiming(UINT32_MAX - 1, RS), "max_region_bytes");
	feed(e, 5, "power_on", NULL, NULL);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 3);
	v = json_object_array_get_idx(verdicts, 2);
	CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 4);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "INFRA_ERROR");
	CU_ASSERT_PTR_NOT_NULL(strstr(sget(v, "reason"), "max_region_bytes"));
	/* a retried boot of the same cycle is not that cycle's end */
	feed_refused(e, 5, "rx", "msg", hello_claiming(1u << 25, RS), "max_region_bytes");
	feed(e, 5, "power_on", NULL, NULL);
	rx(e, 5, hello());
	CU_ASSERT_EQUAL(json_object_array_length(verdicts), 3);
	engine_free(e);
}

/* Record size and board name come from the configuration too. */
static void test_hello_against_config(void)
{
	struct engine *e = start_cfg(CONFIG_B1("1048576"));
	char err[512];

	feed(e, 2, "power_on", NULL, NULL);
	feed_refused(e, 2, "rx", "msg", hello_claiming(G.nslots / 2, 2 * RS),
		     "8192-byte records but the configuration says device.record_size 4096");
	/* a board the campaign does not have: nothing of it is taken */
	CU_ASSERT_EQUAL(feed_json(e, "{\"t\":1,\"board\":\"b2\",\"cycle\":1,\"ev\":\"boot_fail\"}", err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "not in the campaign's configuration"));
	CU_ASSERT_EQUAL(json_object_array_length(verdicts), 0);
	engine_free(e);

	/* unconfigured (a folder without a configuration): the default ceiling */
	e = start();
	feed(e, 2, "power_on", NULL, NULL);
	feed_refused(e, 2, "rx", "msg", hello_claiming(UINT32_MAX - 1, PC_SECTOR),
		     "more than device.max_region_bytes 4294967296");
	scan_claimed(e, 2, UINT32_MAX - 1);
	engine_free(e);

	/* configurations the engine will not take */
	{
		static const char *const bad[] = {
			"{}", "{\"boards\":[]}", "{\"boards\":[1]}",
			"{\"boards\":[{\"name\":\"b1\"}]}",
			"{\"boards\":[{\"name\":\"b1\",\"device\":{\"record_size\":1000}}]}",
			"{\"boards\":[{\"name\":\"b1\",\"device\":{\"record_size\":4096,\"max_region_bytes\":"
				"1099511627776}}]}",
			"{\"boards\":[{\"name\":\"b1\",\"device\":{\"record_size\":4096,\"max_region_bytes\":-1}}]}",
			"{\"boards\":[{\"name\":\"b1\",\"device\":{\"record_size\":4096},\"records_per_cycle\":0}]}",
			"{\"boards\":[{\"name\":\"b1\",\"device\":{\"record_size\":4096}},"
				"{\"name\":\"b1\",\"device\":{\"record_size\":4096}}]}",
		};
		for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++) {
			json_object *c = json_tokener_parse(bad[i]);
			struct engine *x = engine_new("t", NULL, NULL, NULL);

			err[0] = 0;
			CU_ASSERT_EQUAL(engine_configure(x, c, err, sizeof(err)), -EINVAL);
			CU_ASSERT(err[0] != 0);
			engine_free(x);
			json_object_put(c);
		}
	}
}

/* Feed a HELLO claiming slots of rs bytes for a board; returns engine_feed's result. */
static int hello_for(struct engine *e, const char *board, uint64_t slots, uint32_t rs, char *err, size_t errlen)
{
	json_object *ev = json_object_new_object();
	int ret;

	json_object_object_add(ev, "t", json_object_new_int64(1));
	json_object_object_add(ev, "board", json_object_new_string(board));
	json_object_object_add(ev, "cycle", json_object_new_int64(1));
	json_object_object_add(ev, "ev", json_object_new_string("rx"));
	json_object_object_add(ev, "msg", hello_claiming(slots, rs));
	err[0] = 0;
	ret = engine_feed(e, ev, err, errlen);
	json_object_put(ev);
	return ret;
}

/* An engine without a configuration (a folder whose campaign.json has none)
 * holds one budget of slots for all boards together: eight boards of 4 GiB of
 * 512-byte records once made replay hold 2.1 GB (fuzz-events). */
static void test_unconfigured_budget(void)
{
	const uint64_t most = (CFG_DEFAULT_MAX_REGION / PC_SECTOR) - 16;	/* 4 GiB of 512-byte records */
	struct engine *e = engine_new("t", NULL, NULL, NULL);
	char err[512];

	CU_ASSERT_EQUAL(hello_for(e, "a", most, PC_SECTOR, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(hello_for(e, "b", 32, PC_SECTOR, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "for all boards together"));
	CU_ASSERT_PTR_NOT_NULL(engine_board_refused(e, "b"));
	/* the same board's HELLO again does not count twice */
	CU_ASSERT_EQUAL(hello_for(e, "a", most, PC_SECTOR, err, sizeof(err)), 0);
	/* a smaller region in its place frees the rest for the others */
	CU_ASSERT_EQUAL(hello_for(e, "a", 1000, RS, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(hello_for(e, "b", most - 2000, PC_SECTOR, err, sizeof(err)), 0);
	engine_free(e);

	/* configured boards are held to their own limits only */
	e = engine_new("t", NULL, NULL, NULL);
	{
		json_object *c = json_tokener_parse("{\"boards\":["
			"{\"name\":\"a\",\"device\":{\"record_size\":512}},"
			"{\"name\":\"b\",\"device\":{\"record_size\":512}}]}");
		CU_ASSERT_EQUAL(engine_configure(e, c, err, sizeof(err)), 0);
		json_object_put(c);
	}
	CU_ASSERT_EQUAL(hello_for(e, "a", most, PC_SECTOR, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(hello_for(e, "b", most, PC_SECTOR, err, sizeof(err)), 0);
	engine_free(e);
}

/* Cycles and times from events.jsonl: a cycle near 2^31 once overflowed a
 * 32-bit size (heap overflow in replay); now every one out of range is an
 * error, never a size. */
static void test_event_numbers(void)
{
	static const char *const bad[] = {
		"{\"t\":1,\"board\":\"b1\",\"cycle\":2147483648,\"ev\":\"boot_fail\"}",
		"{\"t\":1,\"board\":\"b1\",\"cycle\":2147483647,\"ev\":\"boot_fail\"}",
		"{\"t\":1,\"board\":\"b1\",\"cycle\":4294967295,\"ev\":\"boot_fail\"}",
		"{\"t\":1,\"board\":\"b1\",\"cycle\":4294967296,\"ev\":\"boot_fail\"}",
		"{\"t\":1,\"board\":\"b1\",\"cycle\":9223372036854775808,\"ev\":\"boot_fail\"}",
		"{\"t\":1,\"board\":\"b1\",\"cycle\":18446744073709551615,\"ev\":\"boot_fail\"}",
		"{\"t\":1,\"board\":\"b1\",\"cycle\":-1,\"ev\":\"boot_fail\"}",
		"{\"t\":1,\"board\":\"b1\",\"cycle\":-9223372036854775808,\"ev\":\"infra\"}",
		"{\"t\":1,\"board\":\"b1\",\"cycle\":10000002,\"ev\":\"infra\"}",
		"{\"t\":1,\"board\":\"b1\",\"cycle\":1.5,\"ev\":\"infra\"}",
		"{\"t\":1,\"board\":\"b1\",\"cycle\":\"7\",\"ev\":\"infra\"}",
		"{\"t\":-5,\"board\":\"b1\",\"cycle\":3,\"ev\":\"infra\"}",
		"{\"t\":9223372036854775807,\"board\":\"b1\",\"cycle\":3,\"ev\":\"infra\"}",
		"{\"t\":18446744073709551615,\"board\":\"b1\",\"cycle\":3,\"ev\":\"infra\"}",
		"{\"t\":1,\"board\":\"\",\"cycle\":3,\"ev\":\"infra\"}",
		"{\"t\":1,\"board\":\"b1234567890123456789012345678901234567890123456789012345678901234\","
			"\"cycle\":3,\"ev\":\"infra\"}",
	};
	struct engine *e = start();
	struct engine_board_state st;
	char err[512], line[160];

	for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++) {
		int ret = feed_json(e, bad[i], err, sizeof(err));

		if (ret != -EINVAL)
			fprintf(stderr, "\n    accepted: %s\n", bad[i]);
		CU_ASSERT_EQUAL(ret, -EINVAL);
		CU_ASSERT(err[0] != 0);
	}
	CU_ASSERT_EQUAL(json_object_array_length(verdicts), 0);
	engine_board_state(e, "b1", &st);
	CU_ASSERT_EQUAL(st.last_cycle, 1);
	/* the largest cycle a campaign can have is fine, and so is a verdict for it */
	snprintf(line, sizeof(line), "{\"t\":1,\"board\":\"b1\",\"cycle\":%u,\"ev\":\"boot_fail\"}", ENGINE_MAX_CYCLE);
	CU_ASSERT_EQUAL(feed_json(e, line, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(feed_json(e, "{\"t\":2,\"board\":\"b1\",\"cycle\":0,\"ev\":\"boot_fail\"}", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(feed_json(e, "{\"t\":2,\"board\":\"b1\",\"cycle\":0,\"ev\":\"boot_fail\"}", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 2);
	CU_ASSERT_EQUAL(iget(json_object_array_get_idx(verdicts, 0), "cycle", NULL), ENGINE_MAX_CYCLE);
	engine_board_state(e, "b1", &st);
	CU_ASSERT_EQUAL(st.last_cycle, ENGINE_MAX_CYCLE);
	CU_ASSERT_EQUAL(st.last_verdict_cycle, ENGINE_MAX_CYCLE);
	engine_free(e);

	/* more board names than a campaign can have */
	e = engine_new("t", NULL, NULL, NULL);
	for (unsigned i = 0; i <= CFG_MAX_BOARDS; i++) {
		snprintf(line, sizeof(line), "{\"t\":1,\"board\":\"x%u\",\"cycle\":1,\"ev\":\"power_on\"}", i);
		CU_ASSERT_EQUAL(feed_json(e, line, err, sizeof(err)), i < CFG_MAX_BOARDS ? 0 : -EINVAL);
	}
	engine_free(e);
}

/* What the host sent, read back from a file: work and verify beyond the board. */
static void test_work_verify_bounds(void)
{
	struct engine *e = start_cfg(CONFIG_B1("1048576"));
	struct pc_work w = { .cycle = 1, .first = 1, .n = 201, .mode = PC_MODE_FUA, .pattern = PC_PAT_SEQUENTIAL,
			     .record_size = RS, .flush_every = 8, .qd = 4, .seed = 1 };
	struct pc_posrange r = { .pos = G.nslots - 1, .n = 2 };
	struct engine_board_state st;
	json_object *v;

	feed_refused(e, 1, "work", "work", pc_msg_work(&w), "at most 200 records");
	w.n = 20;
	w.record_size = 2 * RS;
	feed_refused(e, 1, "work", "work", pc_msg_work(&w), "slots of 4096 bytes");
	w.record_size = RS;
	w.cycle = 7;
	feed_refused(e, 1, "work", "work", pc_msg_work(&w), "work of cycle 7 (event: cycle 1)");
	w.cycle = 1;
	w.first = (uint64_t)INT64_MAX - 10;
	feed_refused(e, 1, "work", "work", pc_msg_work(&w), "seqs end at 2^63");
	w.first = 1;
	engine_board_state(e, "b1", &st);
	CU_ASSERT_EQUAL(st.pending, 0);
	/* a good work; SUBMIT and ACK ranges far larger than it count only inside it */
	work(e, 1, 1, 20, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 1048576));
	rx(e, 1, pc_msg_range(PC_MSG_SUBMIT, UINT64_MAX - 1048575, 1048576));
	for (uint32_t s = 0; s < 20; s++)
		view_whole(s, s + 1, 1, PC_MODE_FUA);
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	/* positions past the region: refused, and the scan is then expected whole */
	feed_refused(e, 2, "verify", "msg", pc_msg_verify_ranges(PC_PAT_SEQUENTIAL, &r, 1), "past the region's");
	scan(e, 2);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "PASS");
	CU_ASSERT_EQUAL(iget(v, "records", "acked"), 20);
	CU_ASSERT_EQUAL(iget(v, "records", "submitted"), 20);
	engine_free(e);
}

/* A baseline holding a seq near 2^64 (a forged region): the next seq does
 * not wrap to reuse small ones; it stops where works are refused. */
static void test_seq_wrap(void)
{
	struct engine *e;
	struct engine_board_state st;

	geom_setup();
	free(view);
	view = calloc(G.nslots, sizeof(*view));
	CU_ASSERT_PTR_NOT_NULL_FATAL(view);
	view_whole(7, UINT64_MAX - 5, 1, PC_MODE_FUA);
	e = engine_new("test", NULL, NULL, NULL);
	feed(e, 1, "power_on", NULL, NULL);
	rx(e, 1, hello());
	scan(e, 1);
	engine_board_state(e, "b1", &st);
	CU_ASSERT_EQUAL(st.baseline, 1);
	CU_ASSERT_EQUAL(st.next_seq, (uint64_t)INT64_MAX);
	engine_free(e);
}

/* Damage is counted whole but listed up to ENGINE_MAX_FINDINGS per verdict. */
static void test_findings_cap(void)
{
	struct engine *e;
	json_object *v, *f;

	region_bytes = 8u << 20;	/* 2044 slots */
	e = start();
	work(e, 1, 1, 1, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 1));
	view_whole(0, 1, 1, PC_MODE_FUA);
	for (uint32_t s = 1; s < G.nslots; s++)
		view_whole(s, 0, 0, PC_MODE_FLUSH);	/* cold gen-0 records, their flags changed */
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	scan(e, 2);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");
	CU_ASSERT_EQUAL(iget(v, "counts", "collateral"), G.nslots - 1);
	CU_ASSERT_EQUAL(iget(v, "violations", NULL), G.nslots - 1);
	CU_ASSERT_EQUAL(iget(v, "counts", "intact"), 1);
	json_object_object_get_ex(v, "findings", &f);
	CU_ASSERT_EQUAL(json_object_array_length(f), ENGINE_MAX_FINDINGS);
	CU_ASSERT_EQUAL(iget(v, "findings_unlisted", NULL), G.nslots - 1 - ENGINE_MAX_FINDINGS);
	engine_free(e);
	region_bytes = REGION_BYTES;
}

/* Raw sector images: the agent sends at most PC_PROTO_MAX_RAW per scan; one
 * that sends more is not believed. */
static void test_raw_cap(void)
{
	for (int over = 0; over < 2; over++) {
		struct engine *e = start();
		unsigned nslots = PC_PROTO_MAX_RAW / SPR + (unsigned)over;
		json_object *v;

		work(e, 1, 1, 4, PC_MODE_FUA);
		rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 4));
		for (uint32_t s = 0; s < 4; s++)
			view_whole(s, s + 1, 1, PC_MODE_FUA);
		for (uint32_t s = 100; s < 100 + nslots; s++) {
			view_bytes(s, 0, 0, 0);
			for (unsigned i = 0; i < SPR; i++)
				view[s].img[i][77] ^= 0x04;	/* every sector bad: sent raw */
		}
		feed(e, 2, "power_on", NULL, NULL);
		rx(e, 2, hello());
		scan(e, 2);
		CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
		v = json_object_array_get_idx(verdicts, 0);
		if (!over) {
			CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");
			CU_ASSERT_EQUAL(iget(v, "counts", "collateral"), nslots);
		} else {
			CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "INFRA_ERROR");
			CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 2);
			CU_ASSERT_PTR_NOT_NULL(strstr(sget(v, "reason"), "more than 64 raw sectors"));
		}
		engine_free(e);
	}
}

/* The scan of positions [pos, pos + n) only, as a partial VERIFY asks. */
static void scan_part(struct engine *e, unsigned cycle, uint32_t pos, uint32_t n)
{
	struct pc_posrange r = { .pos = pos, .n = n };
	json_object *m = pc_msg_new(PC_MSG_SCAN_BEGIN);

	feed(e, cycle, "verify", "msg", pc_msg_verify_ranges(PC_PAT_SEQUENTIAL, &r, 1));
	json_object_object_add(m, "slots", json_object_new_int64(n));
	json_object_object_add(m, "pattern", json_object_new_string("sequential"));
	json_object_object_add(m, "full", json_object_new_boolean(0));
	rx(e, cycle, m);
	for (uint32_t s = pos; s < pos + n; s++) {
		if (view[s].damaged) {
			struct pc_sect_report sect[SPR];
			struct pc_slot_report rep = { .slot = s, .nsect = SPR, .sect = sect };
			for (unsigned i = 0; i < SPR; i++) {
				struct pc_sector_hdr h;
				memset(&sect[i], 0, sizeof(sect[i]));
				sect[i].idx = (uint16_t)i;
				if (pc_sector_check(view[s].img[i], &G, &h) == PC_SECT_VALID) {
					sect[i].kind = PC_SK_VALID;
					sect[i].seq = h.seq;
					sect[i].cycle = h.cycle;
					sect[i].flags = h.flags;
					sect[i].lba = h.lba;
					sect[i].hidx = h.idx;
				} else {
					sect[i].kind = PC_SK_FILL;
				}
			}
			rx(e, cycle, pc_msg_slot(&rep));
		} else {
			struct pc_run run = { .pos = s, .n = 1, .seq = view[s].seq, .cycle = view[s].cycle,
					      .flags = view[s].flags };
			rx(e, cycle, pc_msg_runs(&run, 1));
		}
	}
	m = pc_msg_new(PC_MSG_SCAN_END);
	json_object_object_add(m, "slots", json_object_new_int64(n));
	json_object_object_add(m, "anomalies", json_object_new_int64(0));
	json_object_object_add(m, "raw_dropped", json_object_new_int64(0));
	rx(e, cycle, m);
}

/* A cold slot whose every sector went bad (sent as fills). */
static void view_wiped(uint32_t slot)
{
	view_bytes(slot, 0, 0, 0);
	memset(view[slot].img, 0, sizeof(view[slot].img));
}

/*
 * The damage a board's expected state may hold has a ceiling
 * (ENGINE_MAX_DAMAGED_SECTORS, lowered here to 80 sectors = 10 slots). Past
 * it a baseline cannot be taken (INFRA_ERROR); new damage beyond all the
 * cycle wrote is still a FAIL (a device that wipes its region must not
 * escape as lab trouble); damage it cannot prove new is INFRA_ERROR.
 */
static void test_damage_ceiling(void)
{
	struct engine *e;
	struct engine_board_state st;
	json_object *v, *f;

	/* a baseline at the ceiling is taken; one past it is not */
	for (int over = 0; over < 2; over++) {
		geom_setup();
		json_object_put(verdicts);
		verdicts = json_object_new_array();
		memset(view, 0, G.nslots * sizeof(*view));
		for (uint32_t s = 0; s < 10u + (unsigned)over; s++)
			view_wiped(100 + s);
		e = engine_new("test", collect, NULL, NULL);
		engine_set_damage_ceiling(e, 80);
		feed(e, 1, "power_on", NULL, NULL);
		rx(e, 1, hello());
		scan(e, 1);
		engine_board_state(e, "b1", &st);
		CU_ASSERT_EQUAL(st.baseline, !over);
		CU_ASSERT_EQUAL(json_object_array_length(verdicts), (size_t)over);
		if (over)
			CU_ASSERT_PTR_NOT_NULL(strstr(sget(json_object_array_get_idx(verdicts, 0), "reason"),
						      "no baseline can be taken"));
		engine_free(e);
	}

	/* 11 cold slots wiped in a cycle that wrote 4 records: provably new damage */
	e = start();
	engine_set_damage_ceiling(e, 80);
	work(e, 1, 1, 4, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 4));
	for (uint32_t s = 0; s < 4; s++)
		view_whole(s, s + 1, 1, PC_MODE_FUA);
	for (uint32_t s = 0; s < 11; s++)
		view_wiped(100 + s);
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	scan(e, 2);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 1);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");
	f = finding_what(v, "damage_overflow", 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(iget(f, "damaged_sectors", NULL), 88);
	CU_ASSERT_EQUAL(iget(f, "previously_damaged", NULL), 0);
	CU_ASSERT_STRING_EQUAL(sget(f, "violation"), "true");
	engine_board_state(e, "b1", &st);
	CU_ASSERT_EQUAL(st.baseline, 0);	/* the next scan is a new baseline */
	CU_ASSERT_EQUAL(st.scan_ok, 0);		/* and nothing is written before it */
	CU_ASSERT_EQUAL(st.pending, 0);
	engine_free(e);

	/* partial scans: the damage kept for slots not scanned counts too */
	e = start();
	for (uint32_t s = 0; s < 6; s++)
		view_wiped(100 + s);
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	scan(e, 2);	/* 48 damaged sectors, carried as cold findings */
	for (int over = 0; over < 2; over++) {
		unsigned c = 2 + (unsigned)over;
		uint64_t first = 1 + 4 * (uint64_t)over;

		engine_set_damage_ceiling(e, over ? 79 : 80);
		work(e, c, first, 4, PC_MODE_FLUSH);
		for (uint32_t s = 0; s < 4; s++)	/* every record written is torn to fills */
			view_wiped(4 * (uint32_t)over + s);
		feed(e, c + 1, "power_on", NULL, NULL);
		rx(e, c + 1, hello());
		scan_part(e, c + 1, 4 * (uint32_t)over, 4);
	}
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 2);
	v = json_object_array_get_idx(verdicts, 0);	/* 48 kept + 32 scanned = 80: judged */
	CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 2);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");	/* the carried cold damage */
	CU_ASSERT_EQUAL(iget(v, "counts", "corrupt"), 4);
	v = json_object_array_get_idx(verdicts, 1);	/* 48 + 32 > 79, but no more than 4 records */
	CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 3);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "INFRA_ERROR");
	CU_ASSERT_PTR_NOT_NULL(strstr(sget(v, "reason"), "more than the 79 the engine holds"));
	engine_free(e);
}

/* An events.jsonl with a huge HELLO and huge cycles, through `powercut
 * replay`: no crash, and the verdicts the live engine gave come out again. */
static void test_replay_hostile(void)
{
	const char *dir = pc_test_tmpdir("engine-replay");
	char path[4096], err[512];
	struct engine *e;
	struct replay_result rr;
	FILE *f, *out = fopen("/dev/null", "w");
	json_object *evs = json_object_new_array(), *ev, *hel;

	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	snprintf(path, sizeof(path), "%s/campaign.json", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fprintf(f, "{\"campaign\":\"test\",\"config\":%s}\n", CONFIG_B1("1048576"));
	fclose(f);
	/* the events, as a campaign would have logged them before the fix */
	hel = hello_claiming(1u << 25, RS);
	ev = json_tokener_parse("{\"t\":1,\"board\":\"b1\",\"cycle\":1,\"ev\":\"power_on\"}");
	json_object_array_add(evs, ev);
	ev = json_tokener_parse("{\"t\":2,\"board\":\"b1\",\"cycle\":1,\"ev\":\"rx\"}");
	json_object_object_add(ev, "msg", hel);
	json_object_array_add(evs, ev);
	json_object_array_add(evs, json_tokener_parse("{\"t\":3,\"board\":\"b1\",\"cycle\":1,\"ev\":\"verify\"}"));
	json_object_array_add(evs, json_tokener_parse("{\"t\":4,\"board\":\"b1\",\"cycle\":1,\"ev\":\"rx\",\"msg\":"
		"{\"type\":\"scan_begin\",\"v\":1,\"slots\":33554432,\"pattern\":\"sequential\",\"full\":true}}"));
	json_object_array_add(evs, json_tokener_parse("{\"t\":5,\"board\":\"b1\",\"cycle\":1,\"ev\":\"rx\",\"msg\":"
		"{\"type\":\"runs\",\"v\":1,\"r\":[[0,33554432,0,0,0]]}}"));
	json_object_array_add(evs, json_tokener_parse("{\"t\":6,\"board\":\"b1\",\"cycle\":2147483648,"
		"\"ev\":\"boot_fail\",\"reason\":\"x\"}"));
	json_object_array_add(evs, json_tokener_parse("{\"t\":7,\"board\":\"b1\",\"cycle\":2,\"ev\":\"power_on\"}"));
	/* what the live engine made of them */
	json_object_put(verdicts);
	verdicts = json_object_new_array();
	e = engine_new("test", collect, NULL, NULL);
	{
		json_object *c = json_tokener_parse(CONFIG_B1("1048576"));
		CU_ASSERT_EQUAL(engine_configure(e, c, err, sizeof(err)), 0);
		json_object_put(c);
	}
	snprintf(path, sizeof(path), "%s/events.jsonl", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		ev = json_object_array_get_idx(evs, i);
		engine_feed(e, ev, err, sizeof(err));
		fprintf(f, "%s\n", json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN));
	}
	fclose(f);
	engine_free(e);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	CU_ASSERT_STRING_EQUAL(sget(json_object_array_get_idx(verdicts, 0), "verdict"), "INFRA_ERROR");
	CU_ASSERT_EQUAL(iget(json_object_array_get_idx(verdicts, 0), "cycle", NULL), 1);
	snprintf(path, sizeof(path), "%s/verdicts.jsonl", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fprintf(f, "%s\n", json_object_to_json_string_ext(json_object_array_get_idx(verdicts, 0),
							  JSON_C_TO_STRING_PLAIN));
	/* and a recorded verdict whose cycle json-c would saturate */
	fprintf(f, "{\"board\":\"b1\",\"cycle\":18446744073709551615,\"verdict\":\"PASS\"}\n");
	fclose(f);
	CU_ASSERT_EQUAL(replay_dir(dir, out, &rr, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(rr.recomputed, 1);
	CU_ASSERT_EQUAL(rr.matched, 1);
	CU_ASSERT_EQUAL(rr.differ, 0);
	CU_ASSERT_EQUAL(rr.missing, 0);
	CU_ASSERT_EQUAL(rr.extra, 1);	/* the saturating one: not recomputed, and said so */
	json_object_put(evs);
	fclose(out);
}

/* A message is judged as the agent sent it: a slot report of raw sectors
 * whose base64 is mostly '/' fits the line limit as sent (json-c's default
 * output would escape every '/' and push it past 8192 bytes, and the scan
 * would be lost as incomplete). */
static void test_rx_as_sent(void)
{
	struct engine *e = start();
	json_object *v;
	char line[PC_PROTO_MAX_LINE + 2];

	work(e, 1, 1, 2, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 2));
	view_whole(0, 1, 1, PC_MODE_FUA);
	view_whole(1, 2, 1, PC_MODE_FUA);
	view_bytes(100, 0, 0, 0);
	for (unsigned i = 0; i < SPR; i++) {
		memset(view[100].img[i], 0xff, PC_SECTOR);	/* base64 "////..." */
		view[100].img[i][PC_SECTOR - 1] = (uint8_t)i;	/* not a fill */
	}
	{
		struct pc_sect_report sect[SPR];
		struct pc_slot_report rep = { .slot = 100, .nsect = SPR, .sect = sect };
		json_object *m;

		memset(sect, 0, sizeof(sect));
		for (unsigned i = 0; i < SPR; i++) {
			sect[i].idx = (uint16_t)i;
			sect[i].kind = PC_SK_RAW;
			memcpy(sect[i].raw, view[100].img[i], PC_SECTOR);
		}
		m = pc_msg_slot(&rep);
		/* what the agent sends fits; json-c's default escaping would not */
		CU_ASSERT(pc_msg_line(m, line, sizeof(line)) > 0);
		CU_ASSERT(strlen(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN)) > PC_PROTO_MAX_LINE);
		json_object_put(m);
	}
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	slot_whole = 1;
	scan(e, 2);
	slot_whole = 0;
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");	/* judged, not INFRA_ERROR */
	CU_ASSERT_EQUAL(iget(v, "counts", "collateral"), 1);
	CU_ASSERT_EQUAL(iget(v, "counts", "intact"), 2);
	engine_free(e);
}

/* ---- the device refused a write ---- */

static json_object *write_error(int eno, uint64_t lba, uint64_t seq, const char *mode)
{
	json_object *m = pc_msg_error("write of seq %llu at LBA %llu failed: %s", (unsigned long long)seq,
				      (unsigned long long)lba, strerror(eno)), *we = json_object_new_object();

	json_object_object_add(we, "errno", json_object_new_int(eno));
	json_object_object_add(we, "lba", json_object_new_uint64(lba));
	json_object_object_add(we, "seq", json_object_new_uint64(seq));
	json_object_object_add(we, "mode", json_object_new_string(mode));
	json_object_object_add(m, "write_error", we);
	return m;
}

/* docs/design.md section 6: a write the device refused is a device-level finding of
 * the cycle that saw it; the records are judged by the next scan as usual. */
static void test_write_refused(void)
{
	struct engine *e = start();
	json_object *v, *f;

	work(e, 1, 1, 20, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 11));
	rx(e, 1, write_error(5, 123456, 12, "fua"));
	rx(e, 1, write_error(5, 123456, 12, "fua"));	/* said twice: one finding */
	{
		json_object *c = json_object_new_string("write refused");
		feed(e, 1, "cut", "trigger", c);
	}
	for (uint32_t s = 0; s < 11; s++)
		view_whole(s, s + 1, 1, PC_MODE_FUA);
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	scan(e, 2);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 1);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");
	CU_ASSERT_EQUAL(iget(v, "counts", "intact"), 11);
	CU_ASSERT_EQUAL(iget(v, "counts", "not_written"), 9);	/* seq 12 was never acked */
	CU_ASSERT_EQUAL(iget(v, "counts", "lost_acked"), 0);
	CU_ASSERT_EQUAL(iget(v, "counts", "collateral"), 1);
	CU_ASSERT_EQUAL(iget(v, "violations", NULL), 1);
	f = finding_what(v, "write_refused", 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_STRING_EQUAL(sget(f, "class"), "collateral");
	CU_ASSERT_EQUAL(iget(f, "errno", NULL), 5);
	CU_ASSERT_EQUAL(iget(f, "lba", NULL), 123456);
	CU_ASSERT_EQUAL(iget(f, "seq", NULL), 12);
	CU_ASSERT_STRING_EQUAL(sget(f, "mode"), "fua");
	CU_ASSERT_STRING_EQUAL(sget(f, "violation"), "true");
	CU_ASSERT_PTR_NOT_NULL(strstr(sget(f, "detail"), "Input/output error"));
	CU_ASSERT_PTR_NULL(finding_what(v, "write_refused", 1));
	engine_free(e);
}

/* Many refused writes: the first ENGINE_MAX_WRITE_ERRORS listed, the rest in
 * one finding with n; all counted. */
static void test_write_refused_many(void)
{
	struct engine *e = start();
	json_object *v, *f;

	work(e, 1, 1, 64, PC_MODE_FLUSH);
	for (unsigned i = 0; i < ENGINE_MAX_WRITE_ERRORS + 8; i++)
		rx(e, 1, write_error(28, 1000 + i, 1 + i, "flush"));
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	scan(e, 2);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");
	CU_ASSERT_EQUAL(iget(v, "counts", "collateral"), ENGINE_MAX_WRITE_ERRORS + 8);
	CU_ASSERT_EQUAL(iget(v, "violations", NULL), ENGINE_MAX_WRITE_ERRORS + 8);
	CU_ASSERT_PTR_NOT_NULL(finding_what(v, "write_refused", ENGINE_MAX_WRITE_ERRORS - 1));
	f = finding_what(v, "write_refused", ENGINE_MAX_WRITE_ERRORS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(iget(f, "n", NULL), 8);
	CU_ASSERT_PTR_NULL(finding_what(v, "write_refused", ENGINE_MAX_WRITE_ERRORS + 1));
	engine_free(e);
}

/* A refused write whose records are never judged still fails the cycle;
 * one the host cannot read keeps the cycle from passing; one outside any
 * cycle's writes is nobody's finding. */
static void test_write_refused_unjudged(void)
{
	struct engine *e = start();
	json_object *v, *bad;
	char err[512];

	work(e, 1, 1, 20, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 3));
	rx(e, 1, write_error(5, 99, 4, "fua"));
	feed(e, 2, "power_on", NULL, NULL);
	feed(e, 2, "final_boot_fail", "reason", json_object_new_string("no agent after 3 power cycles"));
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_EQUAL(iget(v, "cycle", NULL), 1);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "FAIL");
	CU_ASSERT_EQUAL(iget(v, "violations", NULL), 1);
	CU_ASSERT_PTR_NOT_NULL(finding_what(v, "write_refused", 0));
	CU_ASSERT_PTR_NOT_NULL(strstr(sget(v, "reason"), "the records were not judged: no agent"));
	engine_free(e);

	/* unreadable: errno 0 is no errno; the cycle is not a PASS */
	e = start();
	work(e, 1, 1, 4, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 4));
	bad = write_error(5, 99, 2, "fua");
	{
		json_object *we;
		json_object_object_get_ex(bad, "write_error", &we);
		json_object_object_add(we, "errno", json_object_new_int(0));
	}
	feed_refused(e, 1, "rx", "msg", bad, "errno");
	for (uint32_t s = 0; s < 4; s++)
		view_whole(s, s + 1, 1, PC_MODE_FUA);
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	scan(e, 2);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "INFRA_ERROR");
	CU_ASSERT_PTR_NOT_NULL(strstr(sget(v, "reason"), "cannot be read"));
	engine_free(e);

	/* after the cut: what a dying board said is the power loss, not a refusal */
	e = start();
	work(e, 1, 1, 4, PC_MODE_FUA);
	rx(e, 1, pc_msg_range(PC_MSG_ACK, 1, 2));
	feed(e, 1, "cut", "trigger", json_object_new_string("random instant"));
	rx(e, 1, write_error(5, 99, 3, "fua"));
	view_whole(0, 1, 1, PC_MODE_FUA);
	view_whole(1, 2, 1, PC_MODE_FUA);
	feed(e, 2, "power_on", NULL, NULL);
	rx(e, 2, hello());
	scan(e, 2);
	CU_ASSERT_EQUAL_FATAL(json_object_array_length(verdicts), 1);
	v = json_object_array_get_idx(verdicts, 0);
	CU_ASSERT_STRING_EQUAL(sget(v, "verdict"), "PASS");
	CU_ASSERT_PTR_NULL(finding_what(v, "write_refused", 0));
	/* outside the writes (no work pending now) */
	feed(e, 3, "power_on", NULL, NULL);
	feed_refused(e, 3, "rx", "msg", write_error(5, 99, 2, "fua"), "outside the writes of cycle 3");
	CU_ASSERT_EQUAL(feed_json(e, "{\"t\":1,\"board\":\"b1\",\"cycle\":3,\"ev\":\"rx\",\"msg\":{\"type\":\"error\","
				  "\"v\":1,\"msg\":\"cannot open\"}}", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(json_object_array_length(verdicts), 1);
	engine_free(e);
}

/*
 * What the engine holds per slot (docs/architecture.md, engine bounds): the
 * peak heap of the same campaign -- a baseline, then two cycles of 64
 * records judged -- on a 4 MiB region and on a 1 GiB one (262,142 slots of
 * 4 KiB), as the ASan allocator counts it. The difference per slot is at most
 * 16 bytes (it was about 66 with a 32-byte struct per slot in the expected
 * state, the scan and a spare). A memory bound, not a time: the same on any
 * machine.
 */
#if defined(__SANITIZE_ADDRESS__)
/* libasan's (sanitizer/allocator_interface.h, not installed everywhere) */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
					      void (*free_hook)(const volatile void *));
size_t __sanitizer_get_allocated_size(const volatile void *p);

static int64_t heap_live, heap_peak;
static int heap_on;

static void heap_malloc_hook(const volatile void *p, size_t size)
{
	if (!heap_on)
		return;
	heap_live += (int64_t)size;
	if (heap_live > heap_peak)
		heap_peak = heap_live;
}

static void heap_free_hook(const volatile void *p)
{
	if (heap_on)
		heap_live -= (int64_t)__sanitizer_get_allocated_size((const void *)p);
}

/* The scan of a region whose slots hold generation 0, but for the 64
 * records from first[k] that each cycle k + 1 < cycle wrote from slot 64 * k. */
static void scan_runs(struct engine *e, unsigned cycle, const uint64_t *first)
{
	json_object *m = pc_msg_new(PC_MSG_SCAN_BEGIN);
	struct pc_run r[4];
	unsigned nr = 0;

	feed(e, cycle, "verify", NULL, NULL);
	json_object_object_add(m, "slots", json_object_new_int64(G.nslots));
	json_object_object_add(m, "pattern", json_object_new_string("sequential"));
	json_object_object_add(m, "full", json_object_new_boolean(1));
	rx(e, cycle, m);
	for (unsigned k = 0; k + 1 < cycle; k++)
		r[nr++] = (struct pc_run){ .pos = 64 * k, .n = 64, .seq = first[k], .cycle = k + 1, .flags = PC_MODE_FUA };
	r[nr] = (struct pc_run){ .pos = 64 * (cycle - 1), .n = G.nslots - 64 * (cycle - 1) };
	rx(e, cycle, pc_msg_runs(r, nr + 1));
	m = pc_msg_new(PC_MSG_SCAN_END);
	json_object_object_add(m, "slots", json_object_new_int64(G.nslots));
	json_object_object_add(m, "anomalies", json_object_new_int64(0));
	json_object_object_add(m, "raw_dropped", json_object_new_int64(0));
	rx(e, cycle, m);
}

/* The peak heap of a short campaign on a region of bytes. */
static int64_t campaign_peak(uint64_t bytes)
{
	struct engine_board_state st;
	struct engine *e;
	uint64_t first[3];

	region_bytes = bytes;
	geom_setup();
	json_object_put(verdicts);
	verdicts = json_object_new_array();
	heap_live = heap_peak = 0;
	heap_on = 1;
	e = engine_new("test", collect, NULL, NULL);
	for (unsigned c = 1; c <= 3; c++) {
		feed(e, c, "power_on", NULL, NULL);
		rx(e, c, hello());
		scan_runs(e, c, first);
		if (c == 3)
			break;
		CU_ASSERT_EQUAL(engine_board_state(e, "b1", &st), 0);
		/* sequential: seq s goes to slot (s - 1) % slots */
		first[c - 1] = st.next_seq;
		work(e, c, first[c - 1], 64, PC_MODE_FUA);
		rx(e, c, pc_msg_range(PC_MSG_ACK, first[c - 1], 64));
	}
	engine_free(e);
	heap_on = 0;
	region_bytes = REGION_BYTES;
	return heap_peak;
}

static void test_memory_per_slot(void)
{
	static int hooked;
	int64_t small, big;
	uint32_t nsmall, nbig;
	double per_slot;

	if (!hooked) {
		__sanitizer_install_malloc_and_free_hooks(heap_malloc_hook, heap_free_hook);
		hooked = 1;
	}
	small = campaign_peak(4u << 20);
	nsmall = G.nslots;
	/* two judged cycles, both PASS with 64 intact records */
	CU_ASSERT_EQUAL(json_object_array_length(verdicts), 2);
	CU_ASSERT_STRING_EQUAL(sget(json_object_array_get_idx(verdicts, 1), "verdict"), "PASS");
	CU_ASSERT_EQUAL(iget(json_object_array_get_idx(verdicts, 1), "counts", "intact"), 64);
	big = campaign_peak(1u << 30);
	nbig = G.nslots;
	CU_ASSERT_EQUAL(nbig, 262142);
	CU_ASSERT_EQUAL(json_object_array_length(verdicts), 2);
	CU_ASSERT_STRING_EQUAL(sget(json_object_array_get_idx(verdicts, 1), "verdict"), "PASS");
	CU_ASSERT_EQUAL(iget(json_object_array_get_idx(verdicts, 1), "counts", "intact"), 64);
	per_slot = (double)(big - small) / (double)(nbig - nsmall);
	printf("\n    engine peak heap: %" PRId64 " bytes (%u slots), %" PRId64 " bytes (%u slots): %.2f bytes per slot ",
	       small, nsmall, big, nbig, per_slot);
	CU_ASSERT(per_slot <= 16.0);
	geom_setup();
}
#else
static void test_memory_per_slot(void)
{
	pc_test_skip("the engine's peak heap is counted with the ASan allocator's hooks: run build/san/test-unit");
}
#endif

/* The ledger of verdicts issued: NULL is empty, one bit per cycle up to
 * ENGINE_MAX_CYCLE, a copy its own. */
static void test_ledger(void)
{
	struct eng_ledger *l = NULL, *c;
	int oom = 0;

	CU_ASSERT_EQUAL(eng_ledger_judged(NULL, 0), 0);
	CU_ASSERT_EQUAL(eng_ledger_count(NULL), 0);
	CU_ASSERT_PTR_NULL(eng_ledger_dup(NULL, &oom));
	CU_ASSERT_EQUAL(eng_ledger_mark(&l, ENGINE_MAX_CYCLE + 1), -EINVAL);
	CU_ASSERT_PTR_NULL(l);
	CU_ASSERT_EQUAL(eng_ledger_mark(&l, 5), 0);
	CU_ASSERT_EQUAL(eng_ledger_mark(&l, ENGINE_MAX_CYCLE), 0);
	CU_ASSERT_EQUAL(eng_ledger_mark(&l, 2), 0);
	CU_ASSERT(eng_ledger_judged(l, 5) && eng_ledger_judged(l, 2) && eng_ledger_judged(l, ENGINE_MAX_CYCLE));
	CU_ASSERT(!eng_ledger_judged(l, 4) && !eng_ledger_judged(l, 6) && !eng_ledger_judged(l, ENGINE_MAX_CYCLE + 1));
	CU_ASSERT_EQUAL(eng_ledger_count(l), 3);
	CU_ASSERT_EQUAL(eng_ledger_last(l), ENGINE_MAX_CYCLE);
	c = eng_ledger_dup(l, &oom);
	CU_ASSERT_FATAL(c != NULL && !oom);
	CU_ASSERT_EQUAL(eng_ledger_mark(&c, 4), 0);
	CU_ASSERT(eng_ledger_judged(c, 4) && !eng_ledger_judged(l, 4));
	CU_ASSERT_EQUAL(eng_ledger_count(c), 4);
	CU_ASSERT_EQUAL(eng_ledger_count(l), 3);
	eng_ledger_free(c);
	eng_ledger_free(l);
	eng_ledger_free(NULL);
}

/* The carried findings: device findings listed up to ENGINE_MAX_FINDINGS
 * and counted beyond, all taken by the next verdict; a quiet boot that
 * found nothing still leaves a carry (the next verdict carries); a copy
 * its own. */
static void test_carry(void)
{
	struct eng_carry *c = NULL, *d;
	struct judge j = { 0 };
	int oom = 0;

	CU_ASSERT(!eng_carry_any(NULL));
	for (unsigned i = 0; i < ENGINE_MAX_FINDINGS + 2; i++)
		CU_ASSERT_EQUAL(eng_carry_add(&c, json_object_new_object(), 7), 0);
	CU_ASSERT(eng_carry_any(c));
	d = eng_carry_dup(c, &oom);
	CU_ASSERT_FATAL(d != NULL && !oom);
	j.findings = json_object_new_array();
	eng_carry_take(&c, &j);
	CU_ASSERT_PTR_NULL(c);
	CU_ASSERT_EQUAL(j.nlisted, ENGINE_MAX_FINDINGS);
	CU_ASSERT_EQUAL(json_object_array_length(j.findings), ENGINE_MAX_FINDINGS);
	CU_ASSERT_EQUAL(j.unlisted, 2);
	CU_ASSERT_EQUAL(j.counts[PC_CLS_COLLATERAL], ENGINE_MAX_FINDINGS + 2);
	CU_ASSERT_EQUAL(j.violations, ENGINE_MAX_FINDINGS + 2);
	CU_ASSERT_EQUAL(pc_jint_or(json_object_array_get_idx(j.findings, 0), "found_at_boot", -1), 7);
	json_object_put(j.findings);
	/* the copy kept everything */
	memset(&j, 0, sizeof(j));
	j.findings = json_object_new_array();
	eng_carry_take(&d, &j);
	CU_ASSERT_EQUAL(j.unlisted, 2);
	CU_ASSERT_EQUAL(j.violations, ENGINE_MAX_FINDINGS + 2);
	json_object_put(j.findings);
	/* a quiet boot with nothing found: a carry all the same */
	memset(&j, 0, sizeof(j));
	eng_carry_open(c, &j);
	CU_ASSERT_EQUAL(j.nlisted, 0);
	CU_ASSERT_EQUAL(eng_carry_close(&c, &j), 0);
	CU_ASSERT(eng_carry_any(c));
	CU_ASSERT_PTR_NULL(j.findings);
	eng_carry_free(c);
	eng_carry_free(NULL);
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
	    !CU_add_test(s, "the ledger of verdicts issued: one per cycle, a copy its own", test_ledger) ||
	    !CU_add_test(s, "the carried findings: listed, counted, taken once, a copy its own", test_carry) ||
	    !CU_add_test(s, "every class in one cycle, with details", test_every_class) ||
	    !CU_add_test(s, "stale data and BOOT_FAIL", test_stale_and_boot_fail) ||
	    !CU_add_test(s, "unreadable sectors", test_unreadable) ||
	    !CU_add_test(s, "a tear over an earlier tear", test_tear_over_damage) ||
	    !CU_add_test(s, "INFRA_ERROR once, and determinism", test_infra_and_determinism) ||
	    !CU_add_test(s, "a huge HELLO is refused, its boot INFRA_ERROR", test_huge_hello_refused) ||
	    !CU_add_test(s, "HELLO and boards against the configuration", test_hello_against_config) ||
	    !CU_add_test(s, "cycles, times, board names from events are bounded", test_event_numbers) ||
	    !CU_add_test(s, "an unconfigured engine's boards share one budget", test_unconfigured_budget) ||
	    !CU_add_test(s, "work, verify, submit/ack beyond the board", test_work_verify_bounds) ||
	    !CU_add_test(s, "a baseline seq near 2^64 does not wrap", test_seq_wrap) ||
	    !CU_add_test(s, "findings listed up to a ceiling, all counted", test_findings_cap) ||
	    !CU_add_test(s, "raw sectors per scan are bounded", test_raw_cap) ||
	    !CU_add_test(s, "old damage known: the raw budget goes to new damage", test_known_and_unclassified) ||
	    !CU_add_test(s, "KNOWN lines: round trip and refusals", test_known_message) ||
	    !CU_add_test(s, "SAME for damage the engine does not hold is refused", test_same_refused) ||
	    !CU_add_test(s, "a superblock copy changed: one device finding", test_superblock_mismatch) ||
	    !CU_add_test(s, "region replaced, medium lost: device findings", test_region_replaced) ||
	    !CU_add_test(s, "damaged sectors held per board are bounded", test_damage_ceiling) ||
	    !CU_add_test(s, "replay of hostile events.jsonl", test_replay_hostile) ||
	    !CU_add_test(s, "messages judged as sent (no '/' escaping)", test_rx_as_sent) ||
	    !CU_add_test(s, "write_refused: a device finding of its cycle", test_write_refused) ||
	    !CU_add_test(s, "write_refused: many, counted and listed", test_write_refused_many) ||
	    !CU_add_test(s, "write_refused: unjudged, unreadable, stray", test_write_refused_unjudged) ||
	    !CU_add_test(s, "at most 16 bytes per slot (a 1 GiB region)", test_memory_per_slot))
		return -1;
	return 0;
}

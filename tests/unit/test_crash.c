/*
 * test_crash.c - every crash state of a hand-made cycle (harness/crash,
 * docs/crash-states.md), its counts derived by hand below; and the two
 * negative controls: an ACK the log does not make durable, and a judge
 * that calls a torn record intact.
 *
 * The cycle: mode flush, 12 records of 4096 bytes (8 sectors), flush every
 * 4, queue depth 4, on a 1 MiB region prepared by the agent's own code at
 * offset 0 of an image file. The device completed, in this order (the log):
 *
 *   W2 W1 W4 W3 F1  W5 W7 W6 W8 F2  W10 W9  (cut; W11, W12 never completed)
 *
 * and the agent said SUBMIT 1+4, ACK 1+4, SUBMIT 5+4, ACK 5+4, SUBMIT 9+4.
 *
 * By hand:
 *   durable   W1..W8: each is followed in the log by a flush (F1 or F2)  = 8
 *   volatile  W9, W10: no flush after them, no FUA                      = 2
 *   acked     1..8; every one durable: acked_not_durable                 = 0
 *   subsets   2 volatile <= 10: every subset, 2^2                        = 4
 *   tears     a record of 8 sectors: every mask that keeps some sectors
 *             and drops others, 2^8 - 2 = 254 (the covering design's 5
 *             rows and the 7 in-order prefixes among them);
 *             2 volatile writes x 254                                    = 508
 *             and the two torn together by each pair of the 5 rows       = 25
 *   cuts      one per persistence point: F1 and F2 (no FUA writes): at
 *             F1, W1..W4 kept and the one ACK durable there (1+4); at F2,
 *             W1..W8 kept, W9 W10 dropped, both ACKs: the subset that drops
 *             both volatile writes, with the same ACKs -- a repeat, counted
 *             once (repeats 1)                                           = 1
 *   states    distinct: 4 + 533 + 1                                      = 538
 *   injected  8 durable acknowledged writes, each dropped, torn, and
 *             torn within a sector (an illegal sub-sector tear)          = 24
 *   caught    all of them                                                = 24
 *   lost_acked_states: the 24 injected ones only                         = 24
 * With the locality check each tear is judged again with the other
 * volatile write dropped: tears 1041, states 1046, locality_checked 508.
 * Beyond the exhaustive bound (0) with 3 random subsets, the 2 volatile
 * writes have only 4 subsets: all kept, all dropped, 2 drops, 2 keeps, 1
 * prefix and 3 random draws are 10 subsets enumerated, 4 distinct; with the
 * cut at F2, 7 repeats.
 */
#include "tests/unit/suites.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/region.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "common/wlog.h"
#include "harness/crash/crash.h"
#include "harness/crash/crash_states.h"

#define RS 4096u

static char base_path[4200], log_path[4200];
static struct pc_geom G;
static json_object *region_obj;

static void put_hdr(int fd, off_t off, uint64_t sector, uint64_t nsect, uint64_t flags)
{
	uint8_t h[512] = { 0 };

	wlog_hdr_put(h, &(struct wlog_hdr){ .sector = sector, .nsect = nsect, .flags = flags });
	CU_ASSERT_EQUAL_FATAL(pc_pwrite_all(fd, h, sizeof(h), off), 0);
}

#define MARK1	-2	/* the agent's ACK mark "pc-ack 1 4" */
#define MARK2	-3	/* "pc-ack 5 4" */

/* A mark entry: its text inline after the entry's header, one sector. */
static void put_mark(int fd, off_t off, const char *text)
{
	uint8_t h[512] = { 0 };

	wlog_hdr_put(h, &(struct wlog_hdr){ .flags = WLOG_MARK, .data_len = strlen(text) });
	memcpy(h + WLOG_HDR_BYTES, text, strlen(text));
	CU_ASSERT_EQUAL_FATAL(pc_pwrite_all(fd, h, sizeof(h), off), 0);
}

static const int order_plain[] = { 2, 1, 4, 3, -1, 5, 7, 6, 8, -1, 10, 9 };

/* The base image and a log: order[] names record writes (seq), flushes (-1) and marks. */
static void make_log(const int *order, size_t norder)
{
	const char *dir = pc_test_tmpdir("crash");
	struct region_opts ro = { 0 };
	struct region r;
	char err[512] = "";
	uint8_t sb[512] = { 0 }, *rec = malloc(RS);
	off_t off = 512;
	int fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
	snprintf(base_path, sizeof(base_path), "%s/base.img", dir);
	snprintf(log_path, sizeof(log_path), "%s/log", dir);
	unlink(base_path);
	fd = open(base_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(ftruncate(fd, 1 << 20), 0);
	close(fd);
	ro.spec = base_path;
	ro.allow_whole_disk = 1;
	if (region_prepare(&ro, RS, 7, 0, 0, err, sizeof(err)))
		fprintf(stderr, "region_prepare: %s\n", err);
	CU_ASSERT_EQUAL_FATAL(region_open(&r, &ro, 0, err, sizeof(err)), 0);
	G = r.g;
	json_object_put(region_obj);
	region_obj = region_describe(&r);
	region_close(&r);

	fd = open(log_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	wlog_super_put(sb, norder, 512);
	CU_ASSERT_EQUAL_FATAL(pc_pwrite_all(fd, sb, sizeof(sb), 0), 0);
	for (size_t i = 0; i < norder; i++) {
		if (order[i] == MARK1 || order[i] == MARK2) {
			put_mark(fd, off, order[i] == MARK1 ? "pc-ack 1 4" : "pc-ack 5 4");
			off += 512;
			continue;
		}
		if (order[i] < 0) {
			put_hdr(fd, off, 0, 0, WLOG_FLUSH);
			off += 512;
			continue;
		}
		uint32_t slot = pc_slot_of_seq(&G, PC_PAT_SEQUENTIAL, (uint64_t)order[i]);

		pc_record_build(rec, &G, slot, (uint64_t)order[i], 1, PC_MODE_FLUSH);
		put_hdr(fd, off, pc_slot_lba(&G, slot), RS / 512, 0);
		CU_ASSERT_EQUAL_FATAL(pc_pwrite_all(fd, rec, RS, off + 512), 0);
		off += 512 + RS;
	}
	close(fd);
	free(rec);
}

static void make_inputs(void)
{
	make_log(order_plain, PC_ARRAY_SIZE(order_plain));
}

static json_object *ev(unsigned cycle, const char *kind)
{
	static int64_t t;
	json_object *o = json_object_new_object();

	json_object_object_add(o, "t", json_object_new_int64(++t));
	json_object_object_add(o, "board", json_object_new_string("b1"));
	json_object_object_add(o, "cycle", json_object_new_int64(cycle));
	json_object_object_add(o, "ev", json_object_new_string(kind));
	return o;
}

static json_object *rx(unsigned cycle, json_object *msg)
{
	json_object *o = ev(cycle, "rx");

	json_object_object_add(o, "msg", msg);
	return o;
}

static json_object *hello(const char *boot)
{
	json_object *m = pc_msg_new(PC_MSG_HELLO), *q = json_object_new_object(), *d = json_object_new_object();

	json_object_object_add(m, "board", json_object_new_string("b1"));
	json_object_object_add(m, "agent", json_object_new_string("test"));
	json_object_object_add(m, "boot_id", json_object_new_string(boot));
	json_object_object_add(m, "kernel", json_object_new_string("6.1.0-test"));
	json_object_object_add(m, "backend", json_object_new_string("posix"));
	json_object_object_add(m, "region", json_object_get(region_obj));
	json_object_object_add(d, "name", json_object_new_string("TEST"));
	json_object_object_add(d, "cid", json_object_new_string("00112233445566778899aabbccddeeff"));
	json_object_object_add(m, "device", d);
	json_object_object_add(q, "fua", json_object_new_int(1));
	json_object_object_add(q, "write_cache", json_object_new_string("write back"));
	json_object_object_add(m, "queue", q);
	return m;
}

/* The cycle's events; ack9: the agent also acknowledged seq 9 (a lie the log shows). */
static json_object *events(int ack9)
{
	struct pc_work w = { .cycle = 1, .first = 1, .n = 12, .mode = PC_MODE_FLUSH, .pattern = PC_PAT_SEQUENTIAL,
			     .record_size = RS, .flush_every = 4, .qd = 4, .seed = 1 };
	json_object *a = json_object_new_array(), *e, *pol = json_object_new_object();

	e = ev(1, "power_on");
	json_object_object_add(e, "mode", json_object_new_string("flush"));
	json_object_array_add(a, e);
	json_object_array_add(a, rx(1, hello("boot1")));
	e = ev(1, "work");
	json_object_object_add(e, "work", pc_msg_work(&w));
	json_object_object_add(pol, "torn_unacked", json_object_new_string("allowed"));
	json_object_object_add(pol, "torn_sector_unacked", json_object_new_string("allowed"));
	json_object_object_add(pol, "unclassified", json_object_new_string("allowed"));
	json_object_object_add(e, "policy", pol);
	json_object_array_add(a, e);
	json_object_array_add(a, rx(1, pc_msg_range(PC_MSG_SUBMIT, 1, 4)));
	json_object_array_add(a, rx(1, pc_msg_range(PC_MSG_ACK, 1, 4)));
	json_object_array_add(a, rx(1, pc_msg_range(PC_MSG_SUBMIT, 5, 4)));
	json_object_array_add(a, rx(1, pc_msg_range(PC_MSG_ACK, 5, 4)));
	json_object_array_add(a, rx(1, pc_msg_range(PC_MSG_SUBMIT, 9, 4)));
	if (ack9)
		json_object_array_add(a, rx(1, pc_msg_range(PC_MSG_ACK, 9, 1)));
	e = ev(1, "cut");
	json_object_object_add(e, "plan", json_object_new_string("random"));
	json_object_object_add(e, "at_ms", json_object_new_int(10));
	json_object_object_add(e, "acks_before_cut", json_object_new_int(ack9 ? 9 : 8));
	json_object_array_add(a, e);
	json_object_array_add(a, ev(2, "power_on"));
	json_object_array_add(a, rx(2, hello("boot2")));
	return a;
}

static int check(json_object *evs, const struct crash_opts *o, struct crash_result *r)
{
	struct crash_input in = { .board = "b1", .cycle = 1, .events = evs, .base = base_path, .log = log_path };
	char err[512] = "";
	int rc = crash_check(&in, o, r, err, sizeof(err));

	if (rc)
		fprintf(stderr, "crash_check: %s\n", err);
	return rc;
}

static void dump(const struct crash_result *r)
{
	struct crash_input in = { .board = "b1", .cycle = 1 };
	json_object *j = crash_result_json(&in, r);

	if (!crash_result_ok(r) || getenv("PC_TEST_VERBOSE"))
		fprintf(stderr, "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
	json_object_put(j);
}

static void test_hand_counts(void)
{
	struct crash_opts o;
	struct crash_result r;
	json_object *evs;

	make_inputs();
	evs = events(0);
	crash_opts_default(&o);
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	dump(&r);
	CU_ASSERT_EQUAL(r.writes, 10);
	CU_ASSERT_EQUAL(r.durable, 8);
	CU_ASSERT_EQUAL(r.volatile_, 2);
	CU_ASSERT_EQUAL(r.acked, 8);
	CU_ASSERT_EQUAL(r.acked_not_durable, 0);
	CU_ASSERT_EQUAL(r.by_mode[CRASH_M_SUBSETS], 4);
	CU_ASSERT_EQUAL(r.by_mode[CRASH_M_TEARS], 2 * 254 + 25);
	CU_ASSERT_EQUAL(r.by_mode[CRASH_M_CUTS], 1);
	CU_ASSERT_EQUAL(r.repeats, 1);
	CU_ASSERT_EQUAL(r.states, 4 + 533 + 1);
	CU_ASSERT_EQUAL(r.mismatches, 0);
	CU_ASSERT_EQUAL(r.injected, 24);
	CU_ASSERT_EQUAL(r.caught, 24);
	CU_ASSERT_EQUAL(r.lost_acked_states, 24);
	/* the bound: W9 and W10 volatile, 16 sectors, each old or new: 2^16 legal at the cut; judged
	 * 4 + 533 there (the cut at F1 is an earlier point); left out: a tear with the other write
	 * dropped, both torn by masks outside the pairwise design, and the subsets and tears at F1 */
	CU_ASSERT_STRING_EQUAL(r.legal, "2^16");
	CU_ASSERT_EQUAL(r.legal_exact, 65536);
	CU_ASSERT_EQUAL(r.judged_at_cut, 537);
	CU_ASSERT_FALSE(crash_bound_exhaustive(&r));
	CU_ASSERT_EQUAL(r.leaves, (1u << CRASH_LEAVE_TEAR_DROP) | (1u << CRASH_LEAVE_TWO) | (1u << CRASH_LEAVE_EARLIER));
	CU_ASSERT(strstr(r.design, "pairs of the first 8 volatile writes") != NULL);
	CU_ASSERT(crash_result_ok(&r));
	crash_result_clear(&r);

	/* judging is local to a slot: a tear's findings do not depend on the other write */
	o.locality = 1;
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	dump(&r);
	CU_ASSERT_EQUAL(r.by_mode[CRASH_M_TEARS], 2 * 508 + 25);
	CU_ASSERT_EQUAL(r.states, 4 + 1041 + 1);
	CU_ASSERT_EQUAL(r.locality_checked, 508);
	CU_ASSERT_EQUAL(r.locality_breaks, 0);
	CU_ASSERT_EQUAL(r.mismatches, 0);
	crash_result_clear(&r);

	/* beyond the exhaustive bound (0 here): all kept, all dropped, 2 drops, 2 keeps, 1 prefix, 3 random:
	 * 10 subsets enumerated, of 2 volatile writes: 4 distinct, each judged and counted once */
	o.locality = 0;
	o.exhaustive = 0;
	o.random = 3;
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	CU_ASSERT_EQUAL(r.by_mode[CRASH_M_SUBSETS], 4);
	CU_ASSERT_EQUAL(r.repeats, 10 - 4 + 1);
	CU_ASSERT_EQUAL(r.states, 4 + 533 + 1);
	CU_ASSERT_EQUAL(r.mismatches, 0);
	crash_result_clear(&r);
	json_object_put(evs);
}

/* The bound, exhaustive: W9 the one volatile write (W10 never completed). At the cut 2^8 legal
 * states: W9 kept, dropped, and its 254 tears, all judged; the cut at F2 keeps W1..W8 with both
 * ACKs, the subset dropping W9: a repeat. */
static void test_bound_exhaustive(void)
{
	static const int order[] = { 2, 1, 4, 3, -1, 5, 7, 6, 8, -1, 9 };
	struct crash_opts o;
	struct crash_result r;
	json_object *evs;

	make_log(order, PC_ARRAY_SIZE(order));
	evs = events(0);
	crash_opts_default(&o);
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	dump(&r);
	CU_ASSERT_EQUAL(r.volatile_, 1);
	CU_ASSERT_STRING_EQUAL(r.legal, "2^8");
	CU_ASSERT_EQUAL(r.judged_at_cut, 2 + 254);
	CU_ASSERT_EQUAL(r.states, 2 + 254 + 1);
	CU_ASSERT_EQUAL(r.repeats, 1);
	CU_ASSERT(crash_bound_exhaustive(&r));
	CU_ASSERT_EQUAL(r.leaves, 1u << CRASH_LEAVE_EARLIER);
	CU_ASSERT(crash_result_ok(&r));
	crash_result_clear(&r);

	/* --every-state: the whole space, 2^8, counted by sector digits; every one a repeat here */
	o.every_state = 1;
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	CU_ASSERT_EQUAL(r.space_legal, 256);
	CU_ASSERT(r.space_done);
	CU_ASSERT_EQUAL(r.by_mode[CRASH_M_SPACE], 0);
	CU_ASSERT_EQUAL(r.repeats, 1 + 256);
	CU_ASSERT_EQUAL(r.states, 2 + 254 + 1);
	CU_ASSERT(crash_bound_exhaustive(&r));
	CU_ASSERT(crash_result_ok(&r));
	crash_result_clear(&r);
	json_object_put(evs);
}

/* --every-state over the limit: the hand cycle's 2^16 refused, its estimate said, nothing enumerated */
static void test_every_state_refused(void)
{
	struct crash_input in = { .board = "b1", .cycle = 1, .base = base_path, .log = log_path };
	struct crash_opts o;
	struct crash_result r;
	char err[512] = "";

	make_inputs();
	in.events = events(0);
	crash_opts_default(&o);
	o.every_state = 1;
	o.max_states = 65535;
	CU_ASSERT_EQUAL(crash_check(&in, &o, &r, err, sizeof(err)), -E2BIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "every state at the cut is 65536 states, about "));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "states/s of this cycle's first states: over the limit of 65535"));
	if (!strstr(err, "65536 states"))
		fprintf(stderr, "%s\n", err);
	json_object_put(in.events);
}

/* Negative control 1: seq 9 acknowledged, though no flush followed W9 in the log. */
static void test_ack_open_group(void)
{
	struct crash_opts o;
	struct crash_result r;
	json_object *evs;

	make_inputs();
	evs = events(1);
	crash_opts_default(&o);
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	CU_ASSERT_EQUAL(r.acked, 9);
	CU_ASSERT_EQUAL(r.acked_not_durable, 1);
	/* the judge still says what each state holds: the states dropping or tearing W9 FAIL */
	CU_ASSERT_EQUAL(r.mismatches, 0);
	CU_ASSERT(r.lost_acked_states > 16);
	CU_ASSERT_FALSE(crash_result_ok(&r));
	crash_result_clear(&r);
	json_object_put(evs);
}

/*
 * The agent's ACK marks in the log (issue 38). Honest: each mark after the
 * flush that makes its group durable,
 *   W2 W1 W4 W3 F1 M(1+4) W5 W7 W6 W8 F2 M(5+4) W10 W9
 * by hand: 2 marks, every record they name durable at its mark: 0; the host's
 * two ACKs are the two marks: 0 unmarked; the states as without marks (30),
 * the virtual cuts at F1 and F2 now with the ACKs marked before them (0, 1).
 * Early (an agent that ACKs before its flush): each mark before its flush,
 *   W2 W1 W4 W3 M(1+4) F1 W5 W7 W6 W8 M(5+4) F2 W10 W9
 * by hand: at M(1+4) no flush yet: seqs 1..4 not durable; at M(5+4) F1 made
 * 1..4 durable, 5..8 not: 8 acknowledged before durable, each counted once,
 * though the real cut finds all 8 durable (what the host alone could see).
 */
static void test_ack_marks(void)
{
	static const int honest[] = { 2, 1, 4, 3, -1, MARK1, 5, 7, 6, 8, -1, MARK2, 10, 9 };
	static const int early[] = { 2, 1, 4, 3, MARK1, -1, 5, 7, 6, 8, MARK2, -1, 10, 9 };
	struct crash_opts o;
	struct crash_result r;
	json_object *evs, *evs9;

	crash_opts_default(&o);
	make_log(honest, PC_ARRAY_SIZE(honest));
	evs = events(0);	/* after the image: its HELLO names the region just prepared */
	evs9 = events(1);
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	dump(&r);
	CU_ASSERT_EQUAL(r.ack_marks, 2);
	CU_ASSERT_EQUAL(r.acked, 8);
	CU_ASSERT_EQUAL(r.acked_not_durable, 0);
	CU_ASSERT_EQUAL(r.acks_unmarked, 0);
	CU_ASSERT_EQUAL(r.states, 4 + 533 + 2);
	CU_ASSERT_EQUAL(r.mismatches, 0);
	CU_ASSERT(crash_result_ok(&r));
	crash_result_clear(&r);

	/* the host got an ACK of seq 9 the agent never marked: unmarked, and not durable */
	CU_ASSERT_EQUAL_FATAL(check(evs9, &o, &r), 0);
	CU_ASSERT_EQUAL(r.acks_unmarked, 1);
	CU_ASSERT_EQUAL(r.acked_not_durable, 1);
	CU_ASSERT_FALSE(crash_result_ok(&r));
	crash_result_clear(&r);

	make_log(early, PC_ARRAY_SIZE(early));
	json_object_put(evs);
	evs = events(0);
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	dump(&r);
	CU_ASSERT_EQUAL(r.ack_marks, 2);
	CU_ASSERT_EQUAL(r.durable, 8);
	CU_ASSERT_EQUAL(r.acked_not_durable, 8);
	CU_ASSERT_EQUAL(r.acks_unmarked, 0);
	CU_ASSERT_EQUAL(r.mismatches, 0);
	CU_ASSERT_FALSE(crash_result_ok(&r));
	crash_result_clear(&r);
	json_object_put(evs);
	json_object_put(evs9);
}

/* Incremental judging: every state judged both ways (the cycle fed once to a held engine, and a fresh
 * engine fed the whole cycle per state) gets the same verdict, byte for byte: the legal subsets, every
 * tear mask, two torn at once, each tear with the other write dropped (locality), the virtual cuts at
 * their own ACK limits, and the illegal states (a durable acknowledged write dropped: lost_acked; torn;
 * torn within a sector: torn_sector). --full-judge gives the same counts with no state incremental. */
static void test_incremental(void)
{
	static const int early[] = { 2, 1, 4, 3, MARK1, -1, 5, 7, 6, 8, MARK2, -1, 10, 9 };
	struct crash_opts o;
	struct crash_result r, f;
	json_object *evs;

	make_inputs();
	evs = events(0);
	crash_opts_default(&o);
	o.locality = 1;
	o.check_incremental = 1;
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	dump(&r);
	CU_ASSERT_EQUAL(r.states, 4 + 1041 + 1);
	CU_ASSERT_EQUAL(r.injected, 24);
	CU_ASSERT_EQUAL(r.caught, 24);
	/* each legal state, each locality twin and each injected one judged both ways */
	CU_ASSERT(r.incremental >= r.states - 1 + r.injected);
	CU_ASSERT_EQUAL(r.incremental_checked, r.incremental);
	CU_ASSERT_EQUAL(r.incremental_diffs, 0);
	CU_ASSERT(crash_result_ok(&r));
	crash_result_clear(&r);

	/* the same counts from the full judge alone */
	o.locality = 0;
	o.check_incremental = 0;
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	o.full_judge = 1;
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &f), 0);
	CU_ASSERT(r.incremental > 500);
	CU_ASSERT_EQUAL(f.incremental, 0);
	CU_ASSERT_EQUAL(f.states, r.states);
	CU_ASSERT_EQUAL(f.repeats, r.repeats);
	CU_ASSERT_EQUAL(f.mismatches, r.mismatches);
	CU_ASSERT_EQUAL(f.lost_acked_states, r.lost_acked_states);
	CU_ASSERT_EQUAL(f.caught, r.caught);
	crash_result_clear(&r);
	crash_result_clear(&f);

	/* an agent that ACKs before its flush: the cuts judged with the ACKs marked before each */
	make_log(early, PC_ARRAY_SIZE(early));
	json_object_put(evs);
	evs = events(0);
	o.full_judge = 0;
	o.check_incremental = 1;
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	dump(&r);
	CU_ASSERT_EQUAL(r.acked_not_durable, 8);
	CU_ASSERT(r.by_mode[CRASH_M_CUTS] >= 1);
	CU_ASSERT(r.incremental_checked > 500);
	CU_ASSERT_EQUAL(r.incremental_diffs, 0);
	crash_result_clear(&r);
	json_object_put(evs);
	json_object_put(region_obj);
	region_obj = NULL;
}

/* A faulty judge: every torn record called intact. */
static void torn_is_intact(json_object *v, void *arg)
{
	json_object *cnt, *torn, *intact, *fnd, *keep = json_object_new_array();
	int *n = arg;

	if (!json_object_object_get_ex(v, "counts", &cnt) || !json_object_object_get_ex(cnt, "torn", &torn) ||
	    !json_object_object_get_ex(cnt, "intact", &intact) || json_object_get_int64(torn) == 0) {
		json_object_put(keep);
		return;
	}
	(*n)++;
	json_object_object_add(cnt, "intact", json_object_new_int64(json_object_get_int64(intact) +
								    json_object_get_int64(torn)));
	json_object_object_add(cnt, "torn", json_object_new_int64(0));
	json_object_object_get_ex(v, "findings", &fnd);
	for (size_t i = 0; fnd && i < json_object_array_length(fnd); i++) {
		json_object *f = json_object_array_get_idx(fnd, i), *c;

		if (!json_object_object_get_ex(f, "class", &c) || strcmp(json_object_get_string(c), "torn"))
			json_object_array_add(keep, json_object_get(f));
	}
	json_object_object_add(v, "findings", keep);
}

static void test_judge_torn_intact(void)
{
	struct crash_opts o;
	struct crash_result r;
	json_object *evs;
	int rewritten = 0;

	make_inputs();
	evs = events(0);
	crash_opts_default(&o);
	o.hook = torn_is_intact;
	o.hook_arg = &rewritten;
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	/* the 533 tears of volatile writes, and the 8 injected tears (acknowledged: torn, a violation);
	 * the 8 dropped and the 8 torn within a sector (torn_sector, not torn) are still caught */
	CU_ASSERT_EQUAL(rewritten, 533 + 8);
	CU_ASSERT_EQUAL(r.mismatches, 533);
	CU_ASSERT_EQUAL(r.injected, 24);
	CU_ASSERT_EQUAL(r.caught, 16);
	CU_ASSERT_FALSE(crash_result_ok(&r));
	crash_result_clear(&r);
	json_object_put(evs);
}

/* A faulty judge: a record torn by one sector mask, sectors {0, 2, 5, 6} new (a mask no row of
 * the covering design holds), called intact. */
static void mask_is_intact(json_object *v, void *arg)
{
	json_object *cnt, *fnd, *keep, *x;
	int *n = arg, hit = 0;

	if (!json_object_object_get_ex(v, "counts", &cnt) || !json_object_object_get_ex(v, "findings", &fnd))
		return;
	keep = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(fnd); i++) {
		json_object *f = json_object_array_get_idx(fnd, i), *ns;

		if (json_object_object_get_ex(f, "new_sectors", &ns) &&
		    !strcmp(json_object_to_json_string_ext(ns, JSON_C_TO_STRING_PLAIN), "[0,2,5,6]")) {
			hit++;
			continue;
		}
		json_object_array_add(keep, json_object_get(f));
	}
	json_object_object_add(v, "findings", keep);
	if (!hit)
		return;
	(*n)++;
	json_object_object_get_ex(cnt, "torn", &x);
	json_object_object_add(cnt, "torn", json_object_new_int64(json_object_get_int64(x) - hit));
	json_object_object_get_ex(cnt, "intact", &x);
	json_object_object_add(cnt, "intact", json_object_new_int64(json_object_get_int64(x) + hit));
}

/* A faulty judge: a sub-sector tear (torn_sector) never a violation. */
static void torn_sector_allowed(json_object *v, void *arg)
{
	json_object *fnd, *c, *vi;
	int *n = arg, left = 0;

	if (!json_object_object_get_ex(v, "findings", &fnd))
		return;
	for (size_t i = 0; i < json_object_array_length(fnd); i++) {
		json_object *f = json_object_array_get_idx(fnd, i);

		if (json_object_object_get_ex(f, "class", &c) && !strcmp(json_object_get_string(c), "torn_sector") &&
		    json_object_object_get_ex(f, "violation", &vi) && json_object_get_boolean(vi)) {
			json_object_object_add(f, "violation", json_object_new_boolean(0));
			(*n)++;
		}
		left += json_object_object_get_ex(f, "violation", &vi) && json_object_get_boolean(vi);
	}
	if (!left)
		json_object_object_add(v, "verdict", json_object_new_string("PASS"));
}

/* The covering design reaches each sector position kept and dropped, and each pair in the three
 * states a row can give it, for every record size up to 1 MiB (2048 sectors: positions only past
 * 512); a design with two sectors given the same column is refused, naming them. */
static void test_design_check(void)
{
	static const uint32_t sizes[] = { 2, 3, 4, 5, 7, 8, 9, 16, 31, 64, 128, 512, 2048 };
	char err[256] = "";
	struct design d;

	for (size_t k = 0; k < PC_ARRAY_SIZE(sizes); k++) {
		CU_ASSERT_EQUAL_FATAL(crash_design_make(&d, sizes[k]), 0);
		CU_ASSERT_EQUAL(crash_design_check(&d, sizes[k], err, sizeof(err)), 0);
		if (sizes[k] == 8) {
			CU_ASSERT_EQUAL(d.m, 5);
			d.col[6] = d.col[5];	/* a broken design: sectors 5 and 6 alike */
			CU_ASSERT_EQUAL(crash_design_check(&d, 8, err, sizeof(err)), -EPROTO);
			CU_ASSERT(strstr(err, "sectors 5 and 6") != NULL);
		}
		free(d.col);
	}
}

/* A faulty judge: of two torn records, the second called intact (a path only states with two
 * torn writes reach). */
static void second_tear_intact(json_object *v, void *arg)
{
	json_object *cnt, *fnd, *keep, *x, *c;
	int *n = arg, torn = 0;

	if (!json_object_object_get_ex(v, "counts", &cnt) || !json_object_object_get_ex(cnt, "torn", &x) ||
	    json_object_get_int64(x) < 2 || !json_object_object_get_ex(v, "findings", &fnd))
		return;
	(*n)++;
	json_object_object_add(cnt, "torn", json_object_new_int64(json_object_get_int64(x) - 1));
	json_object_object_get_ex(cnt, "intact", &x);
	json_object_object_add(cnt, "intact", json_object_new_int64(json_object_get_int64(x) + 1));
	keep = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(fnd); i++) {
		json_object *f = json_object_array_get_idx(fnd, i);

		if (json_object_object_get_ex(f, "class", &c) && !strcmp(json_object_get_string(c), "torn") &&
		    ++torn == 2)
			continue;
		json_object_array_add(keep, json_object_get(f));
	}
	json_object_object_add(v, "findings", keep);
}

/* The two judge mutations of issue 38: each must leave the cycle not ok (crash-states exits 1). A
 * mask no design row holds is judged because every mask of a 4 KiB record is (2 x 254 tears): the
 * two states tearing W9 or W10 by it mismatch. A sub-sector tear is an illegal state injected for
 * each durable acknowledged write (one sector's second half old): the judge must FAIL it naming
 * the seq; the mutated one PASSes the 8 of them. */
static void test_judge_mutations(void)
{
	struct crash_opts o;
	struct crash_result r;
	json_object *evs;
	int n = 0;

	make_inputs();
	evs = events(0);
	crash_opts_default(&o);
	o.hook = mask_is_intact;
	o.hook_arg = &n;
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(r.mismatches, 2);
	CU_ASSERT_EQUAL(r.caught, r.injected);
	CU_ASSERT_FALSE(crash_result_ok(&r));
	crash_result_clear(&r);

	n = 0;
	o.hook = torn_sector_allowed;
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	CU_ASSERT_EQUAL(n, 8);
	CU_ASSERT_EQUAL(r.mismatches, 0);
	CU_ASSERT_EQUAL(r.injected, 24);
	CU_ASSERT_EQUAL(r.caught, 16);
	CU_ASSERT_FALSE(crash_result_ok(&r));
	crash_result_clear(&r);

	/* the second of two torn records called intact: only the 25 states tearing W9 and W10 together
	 * reach it (the pairwise design) */
	n = 0;
	o.hook = second_tear_intact;
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	CU_ASSERT_EQUAL(n, 25);
	CU_ASSERT_EQUAL(r.mismatches, 25);
	CU_ASSERT_FALSE(crash_result_ok(&r));
	crash_result_clear(&r);

	/* the second of two torn records called intact: only the 25 states tearing W9 and W10 together
	 * reach it (the pairwise design) */
	n = 0;
	o.hook = second_tear_intact;
	CU_ASSERT_EQUAL_FATAL(check(evs, &o, &r), 0);
	CU_ASSERT_EQUAL(n, 25);
	CU_ASSERT_EQUAL(r.mismatches, 25);
	CU_ASSERT_FALSE(crash_result_ok(&r));
	crash_result_clear(&r);
	json_object_put(evs);
}

/* An image after the cut: base, W1..W8, and of the volatile ones W10 whole and
 * the first 3 sectors of W9 (a prefix tear, garble 0); or W9 with one sector of
 * neither (1); or W9 torn by a sector mask the design does not hold (2); or
 * W1, durable, lost (3). */
static void make_post(const char *path, int garble)
{
	uint8_t *rec = malloc(RS), *img = malloc(1 << 20);
	int fd = open(base_path, O_RDONLY);

	CU_ASSERT_FATAL(rec && img && fd >= 0);
	CU_ASSERT_EQUAL_FATAL(pc_pread_all(fd, img, 1 << 20, 0), 0);
	close(fd);
	for (uint64_t seq = 1; seq <= 10; seq++) {
		uint32_t slot = pc_slot_of_seq(&G, PC_PAT_SEQUENTIAL, seq);

		pc_record_build(rec, &G, slot, seq, 1, PC_MODE_FLUSH);
		if (seq == 9 && garble == 1)
			rec[512 * 5 + 100] ^= 0x40;
		if (seq == 1 && garble == 3)
			continue;	/* W1 lost, though the log made it durable: a lying device */
		if (seq == 9 && garble == 2) {
			/* sectors 0, 2, 5 and 6 of W9 kept: a mask no row of the design has */
			for (unsigned k = 0; k < RS / 512; k++)
				if (k == 0 || k == 2 || k == 5 || k == 6)
					memcpy(img + (pc_slot_lba(&G, slot) + k) * 512, rec + k * 512, 512);
			continue;
		}
		memcpy(img + pc_slot_lba(&G, slot) * 512, rec, seq == 9 && !garble ? 3 * 512 : RS);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(pc_pwrite_all(fd, img, 1 << 20, 0), 0);
	close(fd);
	free(rec);
	free(img);
}

static void test_observed(void)
{
	char post[4300];
	struct crash_opts o;
	struct crash_result r;
	json_object *evs;
	struct crash_input in = { .board = "b1", .cycle = 1, .base = base_path, .log = log_path, .post = post,
				  .recorded = "PASS" };
	char err[512] = "";

	make_inputs();
	evs = events(0);
	in.events = evs;
	snprintf(post, sizeof(post), "%s.after", base_path);
	crash_opts_default(&o);
	make_post(post, 0);
	CU_ASSERT_EQUAL_FATAL(crash_check(&in, &o, &r, err, sizeof(err)), 0);
	dump(&r);
	CU_ASSERT_EQUAL(r.observed, 2);		/* W9 torn by the 3-sector prefix, W10 kept: a tear judged */
	CU_ASSERT_EQUAL(r.observed_known, 1);
	CU_ASSERT_EQUAL(r.observed_legal, 1);
	CU_ASSERT_STRING_EQUAL(r.observed_verdict, "PASS");
	CU_ASSERT_EQUAL(r.observed_agrees, 1);
	CU_ASSERT_EQUAL(r.states, 538);		/* one of the 538: not counted again */
	CU_ASSERT_EQUAL(r.mismatches, 0);
	CU_ASSERT(crash_result_ok(&r));
	crash_result_clear(&r);
	/* the same image, verdicts.jsonl saying FAIL: a disagreement fails the cycle, named */
	in.recorded = "FAIL";
	CU_ASSERT_EQUAL_FATAL(crash_check(&in, &o, &r, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(r.observed_agrees, 0);
	CU_ASSERT_FALSE(crash_result_ok(&r));
	CU_ASSERT(r.notes && strstr(json_object_to_json_string(r.notes), "(legal, its content known) is judged PASS again; verdicts.jsonl holds FAIL"));
	crash_result_clear(&r);
	in.recorded = "PASS";

	/* W9 torn by a mask no row of the covering design has (the virtual board's cache tears at
	 * random): every mask of a 4 KiB record is judged, so it is one of the states */
	make_post(post, 2);
	CU_ASSERT_EQUAL_FATAL(crash_check(&in, &o, &r, err, sizeof(err)), 0);
	dump(&r);
	CU_ASSERT_EQUAL(r.observed, 2);
	CU_ASSERT_EQUAL(r.observed_known, 1);
	CU_ASSERT_EQUAL(r.observed_legal, 1);
	CU_ASSERT_STRING_EQUAL(r.observed_verdict, "PASS");
	CU_ASSERT_EQUAL(r.observed_agrees, 1);
	CU_ASSERT_EQUAL(r.states, 538);
	CU_ASSERT_EQUAL(r.mismatches, 0);
	crash_result_clear(&r);

	json_object_put(evs);
}

/* Images after the cut the enumeration does not hold: illegal (a durable write lost), unknown (a
 * byte neither old nor new). Judged on their own, never counted; a verdict not the recorded one
 * fails the cycle. */
static void test_observed_illegal(void)
{
	char post[4300];
	struct crash_opts o;
	struct crash_result r;
	json_object *evs;
	struct crash_input in = { .board = "b1", .cycle = 1, .base = base_path, .log = log_path, .post = post,
				  .recorded = "PASS" };
	char err[512] = "";

	make_inputs();
	evs = events(0);
	in.events = evs;
	snprintf(post, sizeof(post), "%s.after", base_path);
	crash_opts_default(&o);
	/* W1 lost though durable (a lying device): observed illegal, judged on its own (a FAIL naming
	 * seq 1, as it holds), never counted among the states the block layer allows */
	make_post(post, 3);
	CU_ASSERT_EQUAL_FATAL(crash_check(&in, &o, &r, err, sizeof(err)), 0);
	dump(&r);
	CU_ASSERT_EQUAL(r.observed, 0);
	CU_ASSERT_EQUAL(r.observed_legal, 0);
	CU_ASSERT_EQUAL(r.observed_known, 1);
	CU_ASSERT_STRING_EQUAL(r.observed_verdict, "FAIL");
	CU_ASSERT_EQUAL(r.states, 538);
	CU_ASSERT_EQUAL(r.mismatches, 0);
	{
		json_object *j = crash_result_json(&in, &r), *ob = NULL, *v = NULL;

		CU_ASSERT(json_object_object_get_ex(j, "observed", &ob) && json_object_object_get_ex(ob, "state", &v));
		CU_ASSERT_STRING_EQUAL(v ? json_object_get_string(v) : "", "illegal");
		CU_ASSERT(json_object_object_get_ex(ob, "counted", &v) && !json_object_get_boolean(v));
		json_object_put(j);
	}
	crash_result_clear(&r);

	/* a flipped bit in W9: no state enumerated holds it; the engine calls it corrupt, a FAIL */
	make_post(post, 1);
	CU_ASSERT_EQUAL_FATAL(crash_check(&in, &o, &r, err, sizeof(err)), 0);
	dump(&r);
	CU_ASSERT_EQUAL(r.observed, 0);
	CU_ASSERT_EQUAL(r.observed_known, 0);
	CU_ASSERT_STRING_EQUAL(r.observed_verdict, "FAIL");
	CU_ASSERT_EQUAL(r.observed_agrees, 0);
	CU_ASSERT_EQUAL(r.states, 538);		/* unknown: not counted */
	/* its content unknown, its verdict (FAIL) not the recorded PASS: the cycle fails all the same */
	CU_ASSERT_EQUAL(r.mismatches, 0);
	CU_ASSERT_FALSE(crash_result_ok(&r));
	crash_result_clear(&r);
	json_object_put(evs);
	json_object_put(region_obj);
	region_obj = NULL;
}

static int put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), rc;

	if (fd < 0)
		return -1;
	rc = pc_write_all(fd, text, strlen(text));
	close(fd);
	return rc;
}

/* A kept session's cycle.json: every field bounded, a bad one named (crash_kept_read). */
static void test_kept_bounds(void)
{
	static const char good[] = "{\"format\":1,\"session\":7,\"finished\":true,\"end\":\"cut\",\"media\":\"m\","
		"\"media_bytes\":1048576,\"profile\":\"honest\",\"program_us\":20,\"cache_sectors\":256,\"seed\":1,"
		"\"rate\":0.01,\"keep_inputs\":20,\"cycles\":[6],\"writes\":40,\"fua_writes\":0,\"flushes\":5,"
		"\"log_entries\":45,\"log_bytes\":90000,\"in_flight\":{\"op\":\"write\",\"lba\":808,\"n\":8,"
		"\"fua\":false,\"raw\":false,\"seq\":203,\"cycle\":6,\"flags\":3}}";
	static const struct { const char *from, *to, *field; } bad[] = {
		{ "\"cycles\":[6]", "\"cycles\":[4294967296]", "field cycles" },
		{ "\"seed\":1,", "\"seed\":-1,", "field seed" },
		{ "\"lba\":808", "\"lba\":100000000000", "field in_flight.lba" },
		{ "\"n\":8", "\"n\":4000000000", "field in_flight.n" },
		{ "\"writes\":40", "\"writes\":41", "field log_entries" },
		{ "\"session\":7", "\"session\":8", "field session" },
		{ "\"flags\":3", "\"flags\":4096", "field in_flight.flags" },
		{ "\"media_bytes\":1048576", "\"media_bytes\":1048577", "field media_bytes" },
	};
	/* as the qemu relay keeps them (relay.keep_inputs): the region alone, no media_bytes */
	static const char qemu[] = "{\"format\":1,\"session\":7,\"finished\":true,\"end\":\"cut\",\"backend\":\"qemu\","
		"\"keep_inputs\":20,\"drive\":\"/r/d.img\",\"drive_region\":{\"partition\":\"p2\",\"offset\":1048576,"
		"\"bytes\":4194304},\"cycles\":[6],\"profile\":\"honest\",\"writes\":40,\"fua_writes\":0,"
		"\"flushes\":5,\"log_entries\":45,\"log_bytes\":90000,\"trace_commands\":50,\"in_flight_writes\":0,"
		"\"unlogged_writes\":0,\"unmatched_writes\":0,\"completed_unlogged_writes\":0,\"outside_writes\":0,"
		"\"in_flight\":null}";
	char path[4200], text[1024], err[512];
	struct crash_kept k;

	snprintf(path, sizeof(path), "%s/cycle.json", pc_test_tmpdir("crash"));
	CU_ASSERT_EQUAL_FATAL(put_file(path, good), 0);
	CU_ASSERT_EQUAL(crash_kept_read(path, 7, &k, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(k.cycle, 6);
	CU_ASSERT(k.in_flight.valid && k.in_flight.seq == 203 && k.in_flight.n == 8);
	CU_ASSERT_EQUAL_FATAL(put_file(path, qemu), 0);
	CU_ASSERT_EQUAL(crash_kept_read(path, 7, &k, err, sizeof(err)), 0);
	CU_ASSERT(k.cycle == 6 && !k.have_media && !k.in_flight.valid);
	for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++) {
		const char *at = strstr(good, bad[i].from);

		CU_ASSERT_PTR_NOT_NULL_FATAL(at);
		snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - good), good, bad[i].to, at + strlen(bad[i].from));
		CU_ASSERT_EQUAL_FATAL(put_file(path, text), 0);
		err[0] = 0;
		CU_ASSERT_EQUAL(crash_kept_read(path, 7, &k, err, sizeof(err)), -EPROTO);
		if (!strstr(err, bad[i].field))
			fprintf(stderr, "%s: wanted '%s', got '%s'\n", bad[i].to, bad[i].field, err);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].field));
	}
}

int suite_crash(void)
{
	static const struct pc_test tests[] = {
		{ "a hand-made cycle: the state counts derived by hand", test_hand_counts },
		{ "the bound: every legal state at the cut judged, 2^8", test_bound_exhaustive },
		{ "every state at the cut: over the limit, refused with its estimate", test_every_state_refused },
		{ "an ACK from the open group: acked_not_durable 1", test_ack_open_group },
		{ "ACK marks in the log: an ACK before its flush is caught at its mark", test_ack_marks },
		{ "incremental judging: every state's verdict the full judge's", test_incremental },
		{ "a judge calling a torn record intact: mismatches", test_judge_torn_intact },
		{ "judge mutations: one tear mask intact, a sub-sector tear never a violation, a second tear intact",
		  test_judge_mutations },
		{ "the covering design reaches every sector and pair", test_design_check },
		{ "the image after the cut: among the states, its verdict", test_observed },
		{ "an image after the cut illegal or unknown: never counted, a disagreement fails", test_observed_illegal },
		{ "a kept cycle.json: every field bounded, a bad one named", test_kept_bounds },
	};

	return pc_test_suite("crash", tests, PC_ARRAY_SIZE(tests));
}

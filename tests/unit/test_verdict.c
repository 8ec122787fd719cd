/*
 * test_verdict.c - the results format version and the latency buckets
 * (harness/results/verdict.h), and the ACK latencies of the protocol.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <json-c/json.h>

#include "common/proto.h"
#include "agent/audit.h"
#include "common/record.h"
#include "harness/results/verdict.h"
#include "tests/unit/suites.h"

static int fmt(const char *json, int *ma, int *mi, char *err, size_t len)
{
	json_object *v = json ? json_tokener_parse(json) : NULL;
	int rc = pc_format_read(v, "campaign.json", ma, mi, err, len);

	json_object_put(v);
	return rc;
}

static void test_format(void)
{
	char err[256];
	int ma, mi;

	CU_ASSERT_EQUAL(fmt(NULL, &ma, &mi, err, sizeof(err)), 0);	/* absent: the first format */
	CU_ASSERT_EQUAL(ma, 1);
	CU_ASSERT_EQUAL(mi, 0);
	CU_ASSERT_EQUAL(fmt("\"2.0\"", &ma, &mi, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ma, 2);
	CU_ASSERT_EQUAL(fmt("\"2.7\"", &ma, &mi, err, sizeof(err)), 0);	/* a newer minor: read */
	CU_ASSERT_EQUAL(mi, 7);
	CU_ASSERT_EQUAL(fmt("\"3.0\"", &ma, &mi, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "campaign.json: results format 3.0 is newer than this powercut reads (2.x"));
	CU_ASSERT_EQUAL(fmt("\"99999999999999999999.0\"", &ma, &mi, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "expected a version string"));
	CU_ASSERT_EQUAL(fmt("2", &ma, &mi, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(fmt("\"2\"", &ma, &mi, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(fmt("\"2.\"", &ma, &mi, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(fmt("\"-2.0\"", &ma, &mi, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(fmt("\"0.9\"", &ma, &mi, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(fmt("\" 2.0\"", &ma, &mi, err, sizeof(err)), -EINVAL);
}

static void test_lat_buckets(void)
{
	/* contiguous, increasing, each value in its own bucket's range */
	CU_ASSERT_EQUAL(pc_lat_lo(0), 0);
	for (unsigned b = 1; b < PC_LAT_BUCKETS; b++)
		CU_ASSERT_EQUAL(pc_lat_lo(b), pc_lat_hi(b - 1) + 1);
	for (uint64_t v = 0; v <= PC_LAT_MAX_US; v = v < 100 ? v + 1 : v + v / 7) {
		unsigned b = pc_lat_bucket((uint32_t)v);

		CU_ASSERT_FATAL(b < PC_LAT_BUCKETS);
		CU_ASSERT(pc_lat_lo(b) <= v && v <= pc_lat_hi(b));
		/* at most 12.5% wide */
		CU_ASSERT((uint64_t)(pc_lat_hi(b) - pc_lat_lo(b)) * 8 <= (uint64_t)pc_lat_lo(b) + 8);
	}
	CU_ASSERT(pc_lat_bucket(PC_LAT_MAX_US) < PC_LAT_BUCKETS);
	CU_ASSERT(pc_lat_bucket(UINT32_MAX) == pc_lat_bucket(PC_LAT_MAX_US));
}

static void test_lat_quantile(void)
{
	uint64_t h[PC_LAT_BUCKETS] = { 0 };

	CU_ASSERT_EQUAL(pc_lat_quantile(h, 0, 0.5, 100), 0);
	/* 99 at 10 us, 1 at 5000 us: p50 10, p99 10, p100 the max */
	h[pc_lat_bucket(10)] = 99;
	h[pc_lat_bucket(5000)] = 1;
	CU_ASSERT_EQUAL(pc_lat_quantile(h, 100, 0.5, 5000), 10);
	CU_ASSERT_EQUAL(pc_lat_quantile(h, 100, 0.99, 5000), 10);
	CU_ASSERT_EQUAL(pc_lat_quantile(h, 100, 1.0, 5000), 5000);	/* capped at the true max */
	h[pc_lat_bucket(10)] = 98;
	h[pc_lat_bucket(5000)] = 2;
	CU_ASSERT_EQUAL(pc_lat_quantile(h, 100, 0.99, 6000), pc_lat_hi(pc_lat_bucket(5000)));
}

static int parse(const char *line, struct pc_msg *m, char *err, size_t len)
{
	return pc_msg_parse(line, strlen(line), m, err, len);
}

static void test_ack_latency(void)
{
	static const uint32_t us[3] = { 17, 250, 3600000000u };
	struct pc_msg m;
	char err[256], line[512];
	json_object *o = pc_msg_ack(5, 3, us);

	snprintf(line, sizeof(line), "%s", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	CU_ASSERT_EQUAL_FATAL(parse(line, &m, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(m.type, PC_MSG_ACK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m.u.range.us);
	CU_ASSERT_EQUAL(m.u.range.us[0], 17);
	CU_ASSERT_EQUAL(m.u.range.us[2], 3600000000u);
	pc_msg_clear(&m);
	/* a plain ACK has none */
	CU_ASSERT_EQUAL_FATAL(parse("{\"type\":\"ack\",\"v\":1,\"first\":1,\"n\":2}", &m, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(m.u.range.us);
	pc_msg_clear(&m);
	/* hostile: the wrong count, a value past an hour, a negative, not an array */
	CU_ASSERT_EQUAL(parse("{\"type\":\"ack\",\"v\":1,\"first\":1,\"n\":2,\"us\":[1]}", &m, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "1 latencies for a range of 2 records"));
	CU_ASSERT_EQUAL(parse("{\"type\":\"ack\",\"v\":1,\"first\":1,\"n\":1,\"us\":[3600000001]}", &m, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(parse("{\"type\":\"ack\",\"v\":1,\"first\":1,\"n\":1,\"us\":[-1]}", &m, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(parse("{\"type\":\"ack\",\"v\":1,\"first\":1,\"n\":1,\"us\":7}", &m, err, sizeof(err)), -EINVAL);
	/* more records than an ACK may carry latencies for */
	CU_ASSERT_PTR_NULL(json_object_object_get_ex(o = pc_msg_ack(1, PC_PROTO_MAX_LAT_N + 1, us), "us", NULL) ? o : NULL);
	json_object_put(o);
}

static void test_io_audit(void)
{
	uint64_t sums[PC_NRQ] = { 0 };
	char b[160], rwbs[16], err[256];
	unsigned kdev, nsect;
	uint64_t sec;
	struct pc_msg m;
	static const char *const bad[] = {
		"{\"type\":\"audit\",\"v\":1,\"audit\":{\"src\":\"sim\",\"rq\":{\"ws\":1}}}",
		"{\"type\":\"audit\",\"v\":1,\"audit\":{\"src\":\"sim\",\"rq\":{\"WS\":-1}}}",
		"{\"type\":\"audit\",\"v\":1,\"audit\":{\"src\":\"sim\",\"rq\":{\"WS\":1099511627777}}}",
		"{\"type\":\"audit\",\"v\":1,\"audit\":{\"src\":\"SIM\",\"rq\":{}}}",
		"{\"type\":\"audit\",\"v\":1,\"audit\":{\"unavailable\":\"x\",\"src\":\"sim\"}}",
		"{\"type\":\"audit\",\"v\":1}",
		/* sectors only of kinds counted, of no flush's "other"; nothing else rides along */
		"{\"type\":\"audit\",\"v\":1,\"audit\":{\"src\":\"sim\",\"rq\":{\"WS\":1},\"sectors\":{\"WFS\":8}}}",
		"{\"type\":\"audit\",\"v\":1,\"audit\":{\"src\":\"sim\",\"rq\":{\"other\":1},\"sectors\":{\"other\":8}}}",
		"{\"type\":\"audit\",\"v\":1,\"audit\":{\"src\":\"sim\",\"rq\":{\"WS\":1},\"sectors\":{\"WS\":-8}}}",
		"{\"type\":\"audit\",\"v\":1,\"audit\":{\"src\":\"sim\",\"rq\":{\"WS\":1},\"sectors\":[8]}}",
		"{\"type\":\"audit\",\"v\":1,\"audit\":{\"src\":\"sim\",\"rq\":{\"WS\":1},\"note\":\"x\"}}",
	};

	/* the kernel's names: preflush, operation, FUA */
	pc_rq_add("WS", 10, sums);
	pc_rq_add("WFS", 3, sums);
	pc_rq_add("FF", 2, sums);
	pc_rq_add("FWS", 1, sums);
	pc_rq_add("FWFS", 1, sums);
	pc_rq_add("N", 4, sums);
	CU_ASSERT_EQUAL(sums[PC_RQ_WRITE], 11);
	CU_ASSERT_EQUAL(sums[PC_RQ_FUA], 4);
	CU_ASSERT_EQUAL(sums[PC_RQ_FLUSH], 4);
	CU_ASSERT_EQUAL(sums[PC_RQ_OTHER], 4);
	/* what a mode became */
	memset(sums, 0, sizeof(sums));
	pc_rq_add("WS", 64, sums);
	pc_rq_add("FF", 9, sums);
	CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, NULL, b, sizeof(b)),
			       "writes + flushes: FUA emulated (the queue has no FUA)");
	CU_ASSERT_EQUAL(pc_io_mismatch(PC_MODE_FUA, sums, 0, NULL), 1);
	CU_ASSERT_EQUAL(pc_io_mismatch(PC_MODE_FLUSH, sums, 1, NULL), 0);
	/* fua cut between an emulated FUA's write and its flush (the audit the
	 * agent last sent): writes, no flush yet; not a mismatch, not a claim
	 * that neither reached the device. Finished, the same is one. */
	memset(sums, 0, sizeof(sums));
	pc_rq_add("WS", 3, sums);
	CU_ASSERT_EQUAL(pc_io_mismatch(PC_MODE_FUA, sums, 0, NULL), 0);
	CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 0, NULL, b, sizeof(b)),
			       "writes; cut before any FUA write or flush was seen");
	CU_ASSERT_EQUAL(pc_io_mismatch(PC_MODE_FUA, sums, 1, NULL), 1);
	memset(sums, 0, sizeof(sums));
	pc_rq_add("WS", 5, sums);
	CU_ASSERT_EQUAL(pc_io_mismatch(PC_MODE_FLUSH, sums, 0, NULL), 0);	/* cut before its first flush */
	CU_ASSERT_EQUAL(pc_io_mismatch(PC_MODE_FLUSH, sums, 1, NULL), 1);	/* a finished work that never flushed */
	CU_ASSERT_PTR_NOT_NULL(strstr(pc_io_became(PC_MODE_FLUSH, sums, 1, NULL, b, sizeof(b)), "no flush reached"));
	memset(sums, 0, sizeof(sums));
	pc_rq_add("WFS", 64, sums);
	CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, NULL, b, sizeof(b)), "FUA writes (native)");
	CU_ASSERT_EQUAL(pc_io_mismatch(PC_MODE_FUA, sums, 1, NULL), 0);
	/* on an eMMC: reliable writes, rel_wr_sec_c sectors a command (legacy
	 * mode), or one a record with EN_REL_WR; no EXT_CSD: as before */
	{
		struct pc_queue eq;
		json_object *x = json_tokener_parse("{\"available\": true, \"rev\": 3, \"wr_rel_param\": 0, "
						    "\"rel_wr_sec_c\": 1}");

		pc_queue_read(NULL, NULL, &eq);
		pc_queue_read_emmc(x, 4096, &eq);
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, &eq, b, sizeof(b)),
				       "reliable writes, 8 per 4 KiB record: rel_wr_sec_c 1");
		pc_queue_read_emmc(x, 512, &eq);
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, &eq, b, sizeof(b)),
				       "reliable writes, 1 per 512-byte record: rel_wr_sec_c 1");
		json_object_object_add(x, "rel_wr_sec_c", json_object_new_int(16));
		pc_queue_read_emmc(x, 65536, &eq);
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, &eq, b, sizeof(b)),
				       "reliable writes, 8 per 64 KiB record: rel_wr_sec_c 16");
		json_object_object_add(x, "wr_rel_param", json_object_new_int(0x05));
		pc_queue_read_emmc(x, 4096, &eq);
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, &eq, b, sizeof(b)),
				       "reliable writes, one per 4 KiB record: wr_rel_param 0x05 (EN_REL_WR)");
		json_object_object_add(x, "available", json_object_new_boolean(0));
		pc_queue_read_emmc(x, 4096, &eq);
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, &eq, b, sizeof(b)), "FUA writes (native)");
		json_object_put(x);
	}

	/* the queue as HELLO said it */
	{
		json_object *one = json_object_new_int(1), *zero = json_object_new_int(0), *str = json_object_new_string("1");
		json_object *wt = json_object_new_string("write through"), *wb = json_object_new_string("write back");
		json_object *unk = json_object_new_string("unknown");
		struct pc_queue q, sd = { 0, 1, -1, -1, 0 }, nofua = { 0, 0, -1, -1, 0 }, fuaq = { 1, 0, -1, -1, 0 };

		pc_queue_read(zero, wt, &q);
		CU_ASSERT(q.fua == 0 && q.write_through == 1);
		pc_queue_read(one, wb, &q);
		CU_ASSERT(q.fua == 1 && q.write_through == 0);
		pc_queue_read(str, unk, &q);	/* not a number, not a known cache: unknown */
		CU_ASSERT(q.fua == -1 && q.write_through == -1);
		pc_queue_read(NULL, NULL, &q);
		CU_ASSERT(q.fua == -1 && q.write_through == -1);
		json_object_put(one);
		json_object_put(zero);
		json_object_put(str);
		json_object_put(wt);
		json_object_put(wb);
		json_object_put(unk);

		/* a write-through queue (QEMU's SD card: fua 0, "write through"):
		 * the kernel drops FUA and flushes by design, and says so */
		memset(sums, 0, sizeof(sums));
		pc_rq_add("WS", 64, sums);
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, &sd, b, sizeof(b)),
				       "plain writes: FUA and flushes dropped (write-through queue: no cache to flush)");
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 0, &sd, b, sizeof(b)),
				       "plain writes: FUA and flushes dropped (write-through queue: no cache to flush)");
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FLUSH, sums, 1, &sd, b, sizeof(b)),
				       "plain writes: flushes dropped (write-through queue: no cache to flush)");
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA_FLUSH, sums, 1, &sd, b, sizeof(b)),
				       "plain writes: FUA and flushes dropped (write-through queue: no cache to flush)");
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FLUSH, sums, 0, &sd, b, sizeof(b)),
				       "writes; cut before the first flush");
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_NONE, sums, 1, &sd, b, sizeof(b)), "plain writes");
		/* still not what the mode promises: the FUA test did not run,
		 * finished or cut (a write-through queue never sends them) */
		CU_ASSERT_EQUAL(pc_io_mismatch(PC_MODE_FUA, sums, 1, &sd), 1);
		CU_ASSERT_EQUAL(pc_io_mismatch(PC_MODE_FUA, sums, 0, &sd), 1);
		/* the same requests on a queue that has a cache: a fault, said */
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, &nofua, b, sizeof(b)),
				       "plain writes: neither FUA nor a flush reached the device (the queue has a "
				       "write-back cache)");
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FLUSH, sums, 1, &nofua, b, sizeof(b)),
				       "no flush reached the device (the queue has a write-back cache)");
		/* unknown queue: the wording of before */
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, NULL, b, sizeof(b)),
				       "plain writes: neither FUA nor a flush reached the device");
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FLUSH, sums, 1, NULL, b, sizeof(b)),
				       "no flush reached the device (a write-through queue drops them)");
		/* FUA emulated: as the queue says, or against what it says */
		pc_rq_add("FF", 64, sums);
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, &nofua, b, sizeof(b)),
				       "writes + flushes: FUA emulated (the queue has no FUA)");
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, &fuaq, b, sizeof(b)),
				       "writes + flushes: FUA emulated (although the queue says it has FUA)");
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FLUSH, sums, 1, &sd, b, sizeof(b)), "writes and flushes");
		memset(sums, 0, sizeof(sums));
		pc_rq_add("WFS", 64, sums);
		CU_ASSERT_STRING_EQUAL(pc_io_became(PC_MODE_FUA, sums, 1, &fuaq, b, sizeof(b)), "FUA writes (native)");
	}

	/* trace_pipe lines */
	CU_ASSERT_EQUAL(audit_parse_line("  powercut-agent-1234 [001] ..... 12.5: block_rq_issue: 7,0 WFS 4096 () 2056 + 8 "
					 "none,0,0 [powercut-agent]", &kdev, rwbs, sizeof(rwbs), &sec, &nsect), 0);
	CU_ASSERT_EQUAL(kdev, 7u << 20);
	CU_ASSERT_STRING_EQUAL(rwbs, "WFS");
	CU_ASSERT_EQUAL(sec, 2056);
	CU_ASSERT_EQUAL(nsect, 8);
	CU_ASSERT_EQUAL(audit_parse_line("kworker/0:1H-99 [000] ..... 1.0: block_rq_issue: 179,8 FF 0 () 0 + 0 none,0,0 "
					 "[kworker/0:1H]", &kdev, rwbs, sizeof(rwbs), &sec, &nsect), 0);
	CU_ASSERT_EQUAL(kdev, 179u << 20 | 8);
	CU_ASSERT_STRING_EQUAL(rwbs, "FF");
	CU_ASSERT_EQUAL(audit_parse_line("x: block_rq_complete: 7,0 WS () 8 + 8 [0]", &kdev, rwbs, sizeof(rwbs), &sec, &nsect), -EINVAL);
	CU_ASSERT_EQUAL(audit_parse_line("x: block_rq_issue: 7,0 ws 4096 () 8 + 8", &kdev, rwbs, sizeof(rwbs), &sec, &nsect), -EINVAL);
	CU_ASSERT_EQUAL(audit_parse_line("x: block_rq_issue: 99999,0 WS 4096 () 8 + 8", &kdev, rwbs, sizeof(rwbs), &sec, &nsect), -EINVAL);
	CU_ASSERT_EQUAL(audit_parse_line("x: block_rq_issue: 7,0 WS 4096 (", &kdev, rwbs, sizeof(rwbs), &sec, &nsect), -EINVAL);

	/* a reliable write re-issued for its remainder (eMMC, rel_wr_sec_c 1):
	 * 8 sectors at 2056, then 2057+7, ... 2063+1: one request, 8 sectors */
	{
		static struct audit_last l;
		unsigned again = 0;
		uint64_t more, total = 0;

		for (unsigned k = 0; k < 8; k++) {
			again += (unsigned)audit_remainder(&l, "WFS", 2056 + k, 8 - k, &more);
			total += more;
		}
		CU_ASSERT_EQUAL(again, 7);
		CU_ASSERT_EQUAL(total, 0);
		/* at a queue depth of 4, four records' remainders interleave */
		again = 0;
		for (unsigned k = 0; k < 8; k++)
			for (unsigned q = 0; q < 4; q++)
				again += (unsigned)audit_remainder(&l, "WFS", 3000 + 8 * q + k, 8 - k, &more);
		CU_ASSERT_EQUAL(again, 28);
		/* the next record: a request of its own */
		CU_ASSERT_EQUAL(audit_remainder(&l, "WFS", 2064, 8, &more), 0);
		/* another kind with the same end, or the same start again: new */
		CU_ASSERT_EQUAL(audit_remainder(&l, "WS", 2065, 7, &more), 0);
		CU_ASSERT_EQUAL(audit_remainder(&l, "WS", 2065, 7, &more), 0);
		/* an earlier start with the same end: the request itself, read
		 * after its remainder; its 5 first sectors not counted yet */
		CU_ASSERT_EQUAL(audit_remainder(&l, "WS", 2060, 12, &more), 1);
		CU_ASSERT_EQUAL(more, 5);
	}
	/* what is counted, whichever order two CPUs' trace buffers are read in:
	 * in order, reversed, and the remainders of four records interleaved
	 * and shuffled (each record's original somewhere among its remainders) */
	{
		static const unsigned shuffle[8] = { 3, 0, 6, 1, 7, 2, 5, 4 };

		for (int order = 0; order < 3; order++) {
			struct audit_counts c;
			static struct audit_last l;

			memset(&c, 0, sizeof(c));
			memset(&l, 0, sizeof(l));
			for (unsigned i = 0; i < 8; i++)
				for (unsigned q = 0; q < 4; q++) {
					unsigned k = order == 0 ? i : order == 1 ? 7 - i : shuffle[(i + q) % 8];

					audit_count_write(&c, &l, "WFS", 4000 + 8 * q + k, 8 - k);
				}
			audit_count(&c, "FF", 0);
			CU_ASSERT_EQUAL_FATAL(c.n, 2);
			CU_ASSERT_STRING_EQUAL(c.k[0].rwbs, "WFS");
			CU_ASSERT_EQUAL(c.k[0].count, 4);
			CU_ASSERT_EQUAL(c.k[0].sectors, 32);
			CU_ASSERT_EQUAL(c.k[1].count, 1);
		}
	}

	/* the AUDIT message: counted kinds, or why not; anything else refused */
	CU_ASSERT_EQUAL_FATAL(parse("{\"type\":\"audit\",\"v\":1,\"audit\":{\"src\":\"tracefs\",\"rq\":{\"WS\":3,"
				    "\"FF\":1,\"other\":2}}}", &m, err, sizeof(err)), 0);
	pc_msg_clear(&m);
	CU_ASSERT_EQUAL_FATAL(parse("{\"type\":\"audit\",\"v\":1,\"audit\":{\"src\":\"tracefs\",\"rq\":{\"WS\":3,"
				    "\"FF\":1},\"sectors\":{\"WS\":24}}}", &m, err, sizeof(err)), 0);
	pc_msg_clear(&m);
	CU_ASSERT_EQUAL_FATAL(parse("{\"type\":\"audit\",\"v\":1,\"audit\":{\"unavailable\":\"no tracefs\"}}", &m, err,
				    sizeof(err)), 0);
	pc_msg_clear(&m);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL(parse(bad[i], &m, err, sizeof(err)), -EINVAL);
		if (strstr(bad[i], "-1") == NULL)
			CU_ASSERT(err[0] != 0);
	}
}

/* ---- the audit's binary trace pages (trace_pipe_raw) ---- */

/* This kernel's texts (6.18, x86-64), as tracefs gives them. */
static const char raw_header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
static const char raw_format[] =
	"name: block_rq_issue\nID: 2104\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;\n"
	"\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n"
	"\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:0;\n"
	"\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;\n\n"
	"print fmt: \"%d,%d %s %u (%s) %llu + %u\", ...\n";

/* Append one event (type_len form when small, array[0] form when big) of
 * id with these fields; returns the new end. */
static size_t raw_event(uint8_t *data, size_t at, unsigned id, unsigned dev, uint64_t sector, unsigned nsect,
			const char *rwbs, int big)
{
	uint8_t ev[64] = { 0 };
	uint16_t t = (uint16_t)id;
	uint32_t h;

	memcpy(ev, &t, 2);
	memcpy(ev + 8, &dev, 4);
	memcpy(ev + 16, &sector, 8);
	memcpy(ev + 24, &nsect, 4);
	memcpy(ev + 34, rwbs, strlen(rwbs));
	if (big) {
		uint32_t len = 64 + 4;

		h = 0 | 5u << 5;
		memcpy(data + at, &h, 4);
		memcpy(data + at + 4, &len, 4);
		memcpy(data + at + 8, ev, 64);
		return at + 8 + 64;
	}
	h = 16 | 7u << 5;	/* 16 words */
	memcpy(data + at, &h, 4);
	memcpy(data + at + 4, ev, 64);
	return at + 4 + 64;
}

static void test_audit_raw(void)
{
	static uint8_t page[4096];
	struct audit a;
	unsigned off, size, kdev = 7u << 20 | 3;
	uint8_t *data = page + 16;
	size_t at = 0;
	uint64_t commit;
	uint32_t h, len;
	json_object *j, *rq, *v;

	CU_ASSERT_EQUAL(audit_format_field(raw_format, "rwbs", &off, &size), 0);
	CU_ASSERT_EQUAL(off, 34);
	CU_ASSERT_EQUAL(size, 10);
	CU_ASSERT_EQUAL(audit_format_field(raw_format, "sector", &off, &size), 0);
	CU_ASSERT_EQUAL(off, 16);	/* not nr_sector's */
	CU_ASSERT_EQUAL(audit_format_field(raw_format, "nr_sector", &off, &size), 0);
	CU_ASSERT_EQUAL(off, 24);
	CU_ASSERT_EQUAL(audit_format_field(raw_format, "secto", &off, &size), -EINVAL);
	CU_ASSERT_EQUAL(audit_format_field(raw_header_page, "commit", &off, &size), 0);
	CU_ASSERT_EQUAL(off, 8);
	CU_ASSERT_EQUAL(size, 8);
	CU_ASSERT_EQUAL(audit_format_field("field:int x;\toffset:99999999;\tsize:4;", "x", &off, &size), -EINVAL);

	memset(&a, 0, sizeof(a));
	CU_ASSERT_EQUAL_FATAL(audit_raw_layout(&a.raw, raw_header_page, raw_format, 2104), 0);
	CU_ASSERT_EQUAL(a.raw.data_off, 16);
	CU_ASSERT_EQUAL(a.raw.dev_off, 8);
	CU_ASSERT_EQUAL(audit_raw_layout(&a.raw, raw_header_page, "field:int dev;\toffset:8;\tsize:4;", 2104), -EINVAL);
	CU_ASSERT_EQUAL(audit_raw_layout(&a.raw, raw_header_page, raw_format, 0), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(audit_raw_layout(&a.raw, raw_header_page, raw_format, 2104), 0);
	a.kdev = kdev;
	a.lo = 2048;
	a.hi = 4096;

	/* a time extend, two writes of ours (one per event form), a flush,
	 * a write outside the region, another disk's write, another event, a
	 * discarded event (padding with a length), then the page's end */
	h = 30;
	memcpy(data + at, &h, 4);
	at += 8;
	at = raw_event(data, at, 2104, kdev, 2056, 8, "WFS", 0);
	at = raw_event(data, at, 2104, kdev, 2064, 8, "WFS", 1);
	at = raw_event(data, at, 2104, kdev, 0, 0, "FF", 0);
	at = raw_event(data, at, 2104, kdev, 100, 8, "WS", 0);
	at = raw_event(data, at, 2104, 8u << 20, 2056, 8, "WS", 0);
	at = raw_event(data, at, 2105, kdev, 2056, 8, "WS", 0);
	h = 29 | 1u << 5;
	len = 12;
	memcpy(data + at, &h, 4);
	memcpy(data + at + 4, &len, 4);
	at += 16;
	at = raw_event(data, at, 2104, kdev, 2072, 8, "WS", 0);
	h = 29;		/* the rest of the page */
	memcpy(data + at, &h, 4);
	commit = at + 4;
	memcpy(page + 8, &commit, 8);
	CU_ASSERT_EQUAL(audit_take_page(&a, page, sizeof(page)), 6);
	CU_ASSERT_EQUAL(a.lost, 0);
	CU_ASSERT_EQUAL(a.ignored, 2);
	j = audit_json(&(struct audit){ .on = 1, .src = "tracefs", .c = a.c });
	CU_ASSERT_FATAL(json_object_object_get_ex(j, "rq", &rq));
	CU_ASSERT(json_object_object_get_ex(rq, "WFS", &v) && json_object_get_int(v) == 2);
	CU_ASSERT(json_object_object_get_ex(rq, "FF", &v) && json_object_get_int(v) == 1);
	CU_ASSERT(json_object_object_get_ex(rq, "WS", &v) && json_object_get_int(v) == 1);
	json_object_put(j);

	/* the kernel says it dropped events: the audit is then unavailable */
	commit |= 1ull << 31;
	memcpy(page + 8, &commit, 8);
	CU_ASSERT_EQUAL(audit_take_page(&a, page, sizeof(page)), 6);
	CU_ASSERT_EQUAL(a.lost, 1);
	a.on = 1;
	j = audit_json(&a);
	CU_ASSERT(json_object_object_get_ex(j, "unavailable", NULL));
	CU_ASSERT(!json_object_object_get_ex(j, "rq", NULL));
	json_object_put(j);

	/* malformed: a length past what was read, a truncated event */
	commit = 5000;
	memcpy(page + 8, &commit, 8);
	CU_ASSERT_EQUAL(audit_take_page(&a, page, sizeof(page)), -EINVAL);
	CU_ASSERT_EQUAL(audit_take_page(&a, page, 10), -EINVAL);
	commit = 4 + 4 + 30;	/* the time extend, then half an event */
	memcpy(page + 8, &commit, 8);
	CU_ASSERT_EQUAL(audit_take_page(&a, page, sizeof(page)), -EINVAL);

	/* crafted pages: never read outside the page (ASan), never more
	 * events than fit */
	{
		uint64_t x = 0x9e3779b97f4a7c15ull;

		for (int i = 0; i < 20000; i++) {
			size_t n = 16 + (size_t)(x % 4080);
			int r;

			for (size_t k = 0; k < n; k++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				page[k] = (uint8_t)(i & 1 ? x & 0x3f : x);
			}
			commit = x % (n - 16 + 8);
			memcpy(page + 8, &commit, 8);
			r = audit_take_page(&a, page, n);
			CU_ASSERT(r == -EINVAL || (r >= 0 && r <= (int)(n / 8)));
		}
	}
}

/* A verdicts.jsonl line read back (a resumed run) as the typed verdict the
 * engine hands on live: what it leaves out or gets wrong is none, or 0. */
static void test_verdict_read(void)
{
	json_object *o = json_tokener_parse("{\"board\":\"b1\",\"cycle\":7,\"verdict\":\"FAIL\",\"mode\":\"fua\","
					    "\"counts\":{\"intact\":3,\"torn\":2,\"stale\":-4,\"corrupt\":\"x\"},"
					    "\"violations\":2}");
	struct pc_verdict v;

	CU_ASSERT_FATAL(o != NULL);
	CU_ASSERT_EQUAL(pc_verdict_read(o, &v), 0);
	CU_ASSERT_STRING_EQUAL(v.board, "b1");
	CU_ASSERT_EQUAL(v.cycle, 7);
	CU_ASSERT_EQUAL(v.outcome, PC_OUT_FAIL);
	CU_ASSERT_EQUAL(v.mode, PC_MODE_FUA);
	CU_ASSERT_EQUAL(v.counts[PC_CLS_INTACT], 3);
	CU_ASSERT_EQUAL(v.counts[PC_CLS_TORN], 2);
	CU_ASSERT_EQUAL(v.counts[PC_CLS_STALE], 0);	/* negative */
	CU_ASSERT_EQUAL(v.counts[PC_CLS_CORRUPT], 0);	/* not an integer */
	CU_ASSERT_EQUAL(v.counts[PC_CLS_NOT_WRITTEN], 0);	/* left out */
	CU_ASSERT_EQUAL(v.violations, 2);
	CU_ASSERT_PTR_EQUAL(v.json, o);
	json_object_put(o);
	/* a final verification's: no mode, no counts; an outcome it does not name */
	o = json_tokener_parse("{\"board\":\"b1\",\"cycle\":8,\"verdict\":\"MAYBE\",\"mode\":null}");
	CU_ASSERT_EQUAL(pc_verdict_read(o, &v), 0);
	CU_ASSERT_EQUAL(v.outcome, -1);
	CU_ASSERT_EQUAL(v.mode, -1);
	CU_ASSERT_EQUAL(v.counts[PC_CLS_INTACT], 0);
	CU_ASSERT_EQUAL(v.violations, 0);
	json_object_put(o);
	/* no board or no cycle: not a verdict, v untouched */
	v.cycle = 99;
	o = json_tokener_parse("{\"cycle\":8,\"verdict\":\"PASS\"}");
	CU_ASSERT_EQUAL(pc_verdict_read(o, &v), -EINVAL);
	json_object_put(o);
	o = json_tokener_parse("{\"board\":\"b1\",\"verdict\":\"PASS\"}");
	CU_ASSERT_EQUAL(pc_verdict_read(o, &v), -EINVAL);
	CU_ASSERT_EQUAL(v.cycle, 99);
	json_object_put(o);
	/* hostile: a cycle as text, negative, not whole; a board not a name */
	static const char *const bad[] = {
		"{\"board\":\"b1\",\"cycle\":\"9223372036854775807999\",\"verdict\":\"PASS\"}",
		"{\"board\":\"b1\",\"cycle\":-5,\"verdict\":\"PASS\"}",
		"{\"board\":\"b1\",\"cycle\":1.5,\"verdict\":\"PASS\"}",
		"{\"board\":[\"x\"],\"cycle\":3,\"verdict\":\"PASS\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o = json_tokener_parse(bad[i]);
		CU_ASSERT_FATAL(o != NULL);
		CU_ASSERT_EQUAL(pc_verdict_read(o, &v), -EINVAL);
		CU_ASSERT_EQUAL(v.cycle, 99);
		json_object_put(o);
	}
}

/* What counts as a cut towards a target, and the run ends' names. */
static void test_stop_names(void)
{
	CU_ASSERT_EQUAL(pc_cut_counts(PC_OUT_PASS, 0, 0, 0), 0);	/* idle: proves nothing */
	CU_ASSERT_EQUAL(pc_cut_counts(PC_OUT_PASS, 3, 0, 0), 1);
	CU_ASSERT_EQUAL(pc_cut_counts(PC_OUT_PASS, 0, 1, 0), 1);
	CU_ASSERT_EQUAL(pc_cut_counts(PC_OUT_PASS, 0, 0, 1), 1);
	CU_ASSERT_EQUAL(pc_cut_counts(PC_OUT_FAIL, 0, 0, 0), 1);	/* a violation caught something */
	CU_ASSERT_EQUAL(pc_cut_counts(PC_OUT_BOOT_FAIL, 5, 0, 0), 0);
	CU_ASSERT_EQUAL(pc_cut_counts(PC_OUT_INFRA_ERROR, 5, 0, 0), 0);
	CU_ASSERT_EQUAL(pc_run_end_from_name("dead_device"), PC_END_DEAD_DEVICE);
	CU_ASSERT_EQUAL(pc_run_end_from_name("first_fail"), PC_END_FIRST_FAIL);
	CU_ASSERT_EQUAL(pc_run_end_from_name("target_met"), PC_END_TARGET_MET);
	CU_ASSERT_EQUAL(pc_run_end_from_name("disk_floor"), PC_END_DISK_FLOOR);
	CU_ASSERT_EQUAL(pc_run_end_from_name("given_up"), PC_END_GIVEN_UP);
	CU_ASSERT_EQUAL(pc_run_end_from_name("stopped"), -1);
	CU_ASSERT_STRING_EQUAL(PC_DEAD_DEVICE, pc_run_end_names[PC_END_DEAD_DEVICE]);
}

int suite_verdict(void)
{
	CU_pSuite s = CU_add_suite("verdict", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "results format version", test_format) ||
	    !CU_add_test(s, "stop rules: cuts towards a target, run ends", test_stop_names) ||
	    !CU_add_test(s, "a verdict line read back as the typed verdict", test_verdict_read) ||
	    !CU_add_test(s, "latency buckets", test_lat_buckets) ||
	    !CU_add_test(s, "latency quantiles", test_lat_quantile) ||
	    !CU_add_test(s, "ACK latencies", test_ack_latency) ||
	    !CU_add_test(s, "io audit: request kinds, what a mode became, trace lines, AUDIT", test_io_audit) ||
	    !CU_add_test(s, "io audit: binary trace pages (trace_pipe_raw), crafted ones too", test_audit_raw))
		return -1;
	return 0;
}

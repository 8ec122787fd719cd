/*
 * test_proto.c - the host <-> agent protocol: every message type valid and
 * broken field by field, framing, hostile bytes, builders, line reader, base64.
 */
#include "tests/unit/suites.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/auth.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"

#define ERRLEN 512

/* Parse a line; when want is NULL it must be accepted, else rejected with
 * -EINVAL and an error containing want. Says which case failed. */
static void expect_line(const char *line, size_t len, const char *want, const char *what)
{
	struct pc_msg m;
	char err[ERRLEN];
	int ret = pc_msg_parse(line, len, &m, err, sizeof(err));

	if (!want) {
		if (ret)
			fprintf(stderr, "\n    %s: unexpected error: %s\n", what, err);
		CU_ASSERT_EQUAL(ret, 0);
		CU_ASSERT_PTR_NOT_NULL(m.obj);
	} else {
		if (ret != -EINVAL || !strstr(err, want))
			fprintf(stderr, "\n    %s: want \"%s\", got %d \"%s\"\n", what, want, ret, err);
		CU_ASSERT_EQUAL(ret, -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
		CU_ASSERT_PTR_NULL(m.obj);
	}
	pc_msg_clear(&m);
}

static void expect_str(const char *line, const char *want)
{
	expect_line(line, strlen(line), want, line);
}

/* ---- one valid line per message type ---- */

#define UUID_A "01234567-89ab-cdef-0123-456789abcdef"

static const char *const base_fixed[PC_MSG_TYPE_MAX] = {
	[PC_MSG_HELLO] = "{\"type\":\"hello\",\"v\":1,\"board\":\"b-1.x_2\",\"agent\":\"0.1.0\","
		"\"boot_id\":\"4f1c\",\"kernel\":\"6.1.0\",\"backend\":\"sim\","
		"\"region\":{\"uuid\":\"" UUID_A "\",\"bytes\":1048576,\"record_size\":4096,"
		"\"slots\":254,\"seed\":7,\"offset\":0},"
		"\"device\":{\"cid\":\"1501004d\"},\"queue\":{\"fua\":1,\"write_cache\":\"write back\"},"
		"\"io\":{\"uring\":true}}",
	[PC_MSG_SCAN_BEGIN] = "{\"type\":\"scan_begin\",\"v\":1,\"slots\":254,\"pattern\":\"random\",\"full\":true}",
	[PC_MSG_RUNS] = "{\"type\":\"runs\",\"v\":1,\"r\":[[0,10,1,1,33],[10,244,0,0,0]]}",
	[PC_MSG_SCAN_END] = "{\"type\":\"scan_end\",\"v\":1,\"slots\":254,\"anomalies\":2,\"raw_dropped\":0,\"ms\":1234}",
	[PC_MSG_SUBMIT] = "{\"type\":\"submit\",\"v\":1,\"first\":1,\"n\":16}",
	[PC_MSG_ACK] = "{\"type\":\"ack\",\"v\":1,\"first\":17,\"n\":1048576}",
	[PC_MSG_DONE] = "{\"type\":\"done\",\"v\":1,\"records\":100,\"ms\":5000,\"io\":\"io_uring\",\"mode\":\"fua+flush\"}",
	[PC_MSG_ERROR] = "{\"type\":\"error\",\"v\":1,\"msg\":\"cannot open /dev/mmcblk0p3: Permission denied\"}",
	[PC_MSG_VERIFY] = "{\"type\":\"verify\",\"v\":1,\"pattern\":\"sequential\",\"full\":false,\"ranges\":[[5,10],[100,1]]}",
	[PC_MSG_CRASH] = "{\"type\":\"crash\",\"v\":1}",
	[PC_MSG_CHALLENGE] = "{\"type\":\"challenge\",\"v\":1,\"nonce\":\"00112233445566778899aabbccddeeff\","
		"\"echo\":\"ffeeddccbbaa99887766554433221100\"}",
	[PC_MSG_AUTH] = "{\"type\":\"auth\",\"v\":1,\"mac\":"
		"\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}",
	[PC_MSG_KNOWN] = "{\"type\":\"known\",\"v\":1,\"sectors\":\"BwAAAAMAeFY0EgkAAAAAAAEAAAA=\"}",
	[PC_MSG_SAME] = "{\"type\":\"same\",\"v\":1,\"slots\":[0,7,4294967294]}",
	[PC_MSG_IO] = "{\"type\":\"io\",\"v\":1,\"op\":\"fua\",\"seq\":18446744073709551615}",
	[PC_MSG_AUDIT] = "{\"type\":\"audit\",\"v\":1,\"audit\":{\"src\":\"tracefs\",\"rq\":{\"WS\":60,\"FF\":8,"
		"\"WFS\":1099511627776,\"other\":0}}}",
	[PC_MSG_SETUP_ERROR] = "{\"type\":\"setup_error\",\"v\":1,\"board\":\"b-1\",\"cause\":\"key_missing\","
		"\"reason\":\"key file /etc/powercut/agent.key: No such file or directory\"}",
	[PC_MSG_WORK] = "{\"type\":\"work\",\"v\":1,\"cycle\":4294967295,\"first\":1000,\"n\":64,"
		"\"mode\":\"journal\",\"pattern\":\"random\",\"record_size\":1048576,\"flush_every\":8,"
		"\"qd\":32,\"seed\":18446744073709551615}",
};

/* 512 bytes 0, 1, ..., 255, 0, 1, ... */
static void raw_pattern(uint8_t *p)
{
	for (int i = 0; i < 512; i++)
		p[i] = (uint8_t)i;
}

static const char *base_line(enum pc_msg_type t)
{
	static char slot[2048];
	uint8_t raw[512];
	char b64[700];

	if (t != PC_MSG_SLOT)
		return base_fixed[t];
	raw_pattern(raw);
	pc_b64_encode(raw, sizeof(raw), b64);
	snprintf(slot, sizeof(slot), "{\"type\":\"slot\",\"v\":1,\"slot\":5,\"s\":["
		 "{\"i\":0,\"seq\":12,\"cyc\":3,\"fl\":1,\"lba\":48,\"hi\":0},"
		 "{\"i\":1,\"fill\":255},{\"i\":2,\"h\":305419896},{\"i\":5,\"err\":5},"
		 "{\"i\":7,\"raw\":\"%s\"}]}", b64);
	return slot;
}

static void test_valid_every_type(void)
{
	for (int t = 0; t < PC_MSG_TYPE_MAX; t++) {
		const char *line = base_line((enum pc_msg_type)t);
		struct pc_msg m;
		char err[ERRLEN];

		CU_ASSERT_EQUAL_FATAL(pc_msg_parse(line, strlen(line), &m, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL((int)m.type, t);
		CU_ASSERT_PTR_NOT_NULL(m.obj);
		pc_msg_clear(&m);
	}
}

static struct pc_msg parse_ok(enum pc_msg_type t)
{
	const char *line = base_line(t);
	struct pc_msg m;
	char err[ERRLEN];
	int ret = pc_msg_parse(line, strlen(line), &m, err, sizeof(err));

	if (ret)
		fprintf(stderr, "\n    %s: %s\n", pc_msg_type_name(t), err);
	CU_ASSERT_EQUAL(ret, 0);
	return m;
}

static void test_valid_decoded(void)
{
	struct pc_msg m;
	uint8_t raw[512];
	const char *s;
	char err[ERRLEN];

	m = parse_ok(PC_MSG_ACK);
	CU_ASSERT_EQUAL(m.u.range.first, 17);
	CU_ASSERT_EQUAL(m.u.range.n, 1048576);
	pc_msg_clear(&m);

	m = parse_ok(PC_MSG_WORK);
	CU_ASSERT_EQUAL(m.u.work.cycle, UINT32_MAX);
	CU_ASSERT_EQUAL(m.u.work.first, 1000);
	CU_ASSERT_EQUAL(m.u.work.n, 64);
	CU_ASSERT_EQUAL(m.u.work.mode, PC_MODE_JOURNAL);
	CU_ASSERT_EQUAL(m.u.work.pattern, PC_PAT_RANDOM);
	CU_ASSERT_EQUAL(m.u.work.record_size, 1048576);
	CU_ASSERT_EQUAL(m.u.work.flush_every, 8);
	CU_ASSERT_EQUAL(m.u.work.qd, 32);
	CU_ASSERT_EQUAL(m.u.work.seed, UINT64_MAX);
	pc_msg_clear(&m);

	CU_ASSERT_EQUAL(m.u.work.announce, 0);
	pc_msg_clear(&m);

	m = parse_ok(PC_MSG_IO);
	CU_ASSERT_EQUAL(m.u.io.op, PC_IO_FUA);
	CU_ASSERT_EQUAL(m.u.io.seq, UINT64_MAX);
	pc_msg_clear(&m);

	m = parse_ok(PC_MSG_VERIFY);
	CU_ASSERT_EQUAL(m.u.verify.pattern, PC_PAT_SEQUENTIAL);
	CU_ASSERT_EQUAL(m.u.verify.full, 0);
	CU_ASSERT_EQUAL_FATAL(m.u.verify.nranges, 2);
	CU_ASSERT_EQUAL(m.u.verify.ranges[0].pos, 5);
	CU_ASSERT_EQUAL(m.u.verify.ranges[0].n, 10);
	CU_ASSERT_EQUAL(m.u.verify.ranges[1].pos, 100);
	pc_msg_clear(&m);

	m = parse_ok(PC_MSG_RUNS);
	CU_ASSERT_EQUAL_FATAL(m.u.runs.nruns, 2);
	CU_ASSERT_EQUAL(m.u.runs.runs[0].pos, 0);
	CU_ASSERT_EQUAL(m.u.runs.runs[0].n, 10);
	CU_ASSERT_EQUAL(m.u.runs.runs[0].seq, 1);
	CU_ASSERT_EQUAL(m.u.runs.runs[0].cycle, 1);
	CU_ASSERT_EQUAL(m.u.runs.runs[0].flags, 33);
	CU_ASSERT_EQUAL(m.u.runs.runs[1].pos, 10);
	CU_ASSERT_EQUAL(m.u.runs.runs[1].n, 244);
	CU_ASSERT_EQUAL(m.u.runs.runs[1].seq, 0);
	pc_msg_clear(&m);

	m = parse_ok(PC_MSG_SLOT);
	raw_pattern(raw);
	CU_ASSERT_EQUAL(m.u.slot.slot, 5);
	CU_ASSERT_EQUAL_FATAL(m.u.slot.nsect, 5);
	CU_ASSERT_EQUAL(m.u.slot.sect[0].kind, PC_SK_VALID);
	CU_ASSERT_EQUAL(m.u.slot.sect[0].seq, 12);
	CU_ASSERT_EQUAL(m.u.slot.sect[0].cycle, 3);
	CU_ASSERT_EQUAL(m.u.slot.sect[0].flags, 1);
	CU_ASSERT_EQUAL(m.u.slot.sect[0].lba, 48);
	CU_ASSERT_EQUAL(m.u.slot.sect[0].hidx, 0);
	CU_ASSERT_EQUAL(m.u.slot.sect[1].kind, PC_SK_FILL);
	CU_ASSERT_EQUAL(m.u.slot.sect[1].value, 255);
	CU_ASSERT_EQUAL(m.u.slot.sect[2].kind, PC_SK_HASH);
	CU_ASSERT_EQUAL(m.u.slot.sect[2].value, 305419896);
	CU_ASSERT_EQUAL(m.u.slot.sect[3].kind, PC_SK_ERR);
	CU_ASSERT_EQUAL(m.u.slot.sect[3].idx, 5);
	CU_ASSERT_EQUAL(m.u.slot.sect[3].value, 5);
	CU_ASSERT_EQUAL(m.u.slot.sect[4].kind, PC_SK_RAW);
	CU_ASSERT_EQUAL(m.u.slot.sect[4].idx, 7);
	CU_ASSERT_EQUAL(memcmp(m.u.slot.sect[4].raw, raw, 512), 0);
	pc_msg_clear(&m);

	m = parse_ok(PC_MSG_SCAN_END);
	CU_ASSERT_EQUAL(m.u.scan_end.slots, 254);
	CU_ASSERT_EQUAL(m.u.scan_end.anomalies, 2);
	CU_ASSERT_EQUAL(m.u.scan_end.raw_dropped, 0);
	pc_msg_clear(&m);

	m = parse_ok(PC_MSG_DONE);
	CU_ASSERT_EQUAL(m.u.done.records, 100);
	CU_ASSERT_EQUAL(pc_json_str(m.obj, "io", &s, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(s, "io_uring");
	pc_msg_clear(&m);

	m = parse_ok(PC_MSG_HELLO);
	CU_ASSERT_EQUAL(pc_json_str(m.obj, "board", &s, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(s, "b-1.x_2");
	pc_msg_clear(&m);
}

/* ---- invalid: one field of a valid line changed ---- */

#define DEL NULL

struct mcase {
	enum pc_msg_type base;
	const char *path;	/* "key", "obj.key", "arr.2.1": where to change */
	const char *value;	/* JSON to put there, DEL to remove the key */
	const char *err;	/* expected error substring, NULL: still valid */
};

static const struct mcase mcases[] = {
	/* every message: type and version */
	{ PC_MSG_ACK, "type", DEL, "field \"type\" is missing" },
	{ PC_MSG_ACK, "type", "5", "field \"type\": expected a string, got int" },
	{ PC_MSG_ACK, "type", "null", "field \"type\": expected a string, got null" },
	{ PC_MSG_ACK, "type", "\"foo\"", "unknown message type \"foo\"" },
	{ PC_MSG_ACK, "type", "\"ACK\"", "unknown message type \"ACK\"" },
	{ PC_MSG_ACK, "type", "\"ack\\u0000x\"", "unknown message type \"ack\"" },
	{ PC_MSG_ACK, "type", "\"a\\u001b[2Jb\"", "unknown message type \"a?[2Jb\"" },
	{ PC_MSG_ACK, "type", "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"",
	  "unknown message type \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\"" },
	{ PC_MSG_ACK, "v", DEL, "field \"v\" is missing (this build speaks protocol version 1)" },
	{ PC_MSG_ACK, "v", "2", "protocol version 2 not supported (this build speaks 1)" },
	{ PC_MSG_ACK, "v", "0", "protocol version 0 not supported (this build speaks 1)" },
	{ PC_MSG_ACK, "v", "-1", "protocol version -1 not supported (this build speaks 1)" },
	{ PC_MSG_ACK, "v", "\"1\"", "field \"v\": expected an integer protocol version, got string" },
	{ PC_MSG_ACK, "v", "1.0", "field \"v\": expected an integer protocol version, got double" },
	{ PC_MSG_WORK, "v", "2", "protocol version 2 not supported" },
	/* forward compatibility: unknown fields are ignored */
	{ PC_MSG_ACK, "future", "{\"x\":[1,2,3]}", NULL },
	{ PC_MSG_HELLO, "region.future", "\"x\"", NULL },
	{ PC_MSG_SLOT, "s.0.future", "1", NULL },

	/* hello */
	{ PC_MSG_HELLO, "board", DEL, "hello: field \"board\" is missing (expected a string)" },
	{ PC_MSG_HELLO, "board", "\"\"", "hello: field \"board\": expected 1..63 characters of [A-Za-z0-9_.-]" },
	{ PC_MSG_HELLO, "board", "\"a b\"", "hello: field \"board\": expected 1..63 characters" },
	{ PC_MSG_HELLO, "board", "\"a/b\"", "hello: field \"board\": expected 1..63 characters" },
	{ PC_MSG_HELLO, "board", "\"b\\u00e9\"", "hello: field \"board\": expected 1..63 characters" },
	{ PC_MSG_HELLO, "board", "\"a\\u0000b\"", "hello: field \"board\": the string contains a NUL character" },
	{ PC_MSG_HELLO, "board",
	  "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"", NULL },
	{ PC_MSG_HELLO, "board",
	  "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"",
	  "hello: field \"board\": expected 1..63 characters" },
	{ PC_MSG_HELLO, "board", "7", "hello: field \"board\": expected a string, got int" },
	{ PC_MSG_HELLO, "agent", "1", "hello: field \"agent\": expected a string, got int" },
	{ PC_MSG_HELLO, "boot_id", "null", "hello: field \"boot_id\": expected a string, got null" },
	{ PC_MSG_HELLO, "kernel", DEL, "hello: field \"kernel\" is missing (expected a string)" },
	{ PC_MSG_HELLO, "backend", "[]", "hello: field \"backend\": expected a string, got array" },
	{ PC_MSG_HELLO, "region", DEL, "hello: field \"region\" is missing (expected an object)" },
	{ PC_MSG_HELLO, "region", "\"x\"", "hello: field \"region\": expected an object, got string" },
	{ PC_MSG_HELLO, "region.uuid", DEL, "hello: field \"region.uuid\" is missing (expected a string)" },
	{ PC_MSG_HELLO, "region.uuid", "\"nope\"", "hello: field \"region.uuid\": expected a UUID" },
	{ PC_MSG_HELLO, "region.uuid", "\"0123456789abcdef0123456789abcdef----\"",
	  "hello: field \"region.uuid\": expected a UUID" },
	{ PC_MSG_HELLO, "region.uuid", "\"01234567-89ab-cdef-0123-456789abcdeg\"",
	  "hello: field \"region.uuid\": expected a UUID" },
	{ PC_MSG_HELLO, "region.uuid", "\"01234567-89AB-CDEF-0123-456789ABCDEF\"", NULL },
	{ PC_MSG_HELLO, "region.bytes", "0", "hello: field \"region.bytes\": expected an integer >= 1, got 0" },
	{ PC_MSG_HELLO, "region.bytes", "-512", "hello: field \"region.bytes\": expected an integer >= 1, got -512" },
	{ PC_MSG_HELLO, "region.bytes", "1048577",
	  "hello: field \"region\": region size 1048577 is not a multiple of 512" },
	{ PC_MSG_HELLO, "region.bytes", "8192", "hello: field \"region\": region of 8192 bytes is too small" },
	{ PC_MSG_HELLO, "region.record_size", "1000",
	  "hello: field \"region.record_size\": expected a multiple of 512, got 1000" },
	{ PC_MSG_HELLO, "region.record_size", "256",
	  "hello: field \"region.record_size\": expected an integer 512..1048576, got 256" },
	{ PC_MSG_HELLO, "region.record_size", "2097152",
	  "hello: field \"region.record_size\": expected an integer 512..1048576, got 2097152" },
	{ PC_MSG_HELLO, "region.slots", "0", "hello: field \"region.slots\": expected an integer 1..4294967295, got 0" },
	{ PC_MSG_HELLO, "region.slots", "253",
	  "hello: field \"region\": 1048576 bytes of 4096-byte records hold 254 slots, not 253" },
	{ PC_MSG_HELLO, "region.seed", "-1", "hello: field \"region.seed\": expected an integer >= 0, got -1" },
	{ PC_MSG_HELLO, "region.seed", "1.5", "hello: field \"region.seed\": expected an integer >= 0, got double" },
	{ PC_MSG_HELLO, "region.seed", "18446744073709551615", NULL },
	{ PC_MSG_HELLO, "device", DEL, "hello: field \"device\" is missing (expected an object)" },
	{ PC_MSG_HELLO, "device", "[]", "hello: field \"device\": expected an object, got array" },
	{ PC_MSG_HELLO, "queue", "true", "hello: field \"queue\": expected an object, got boolean" },
	{ PC_MSG_HELLO, "queue.fua", "2", "hello: field \"queue.fua\": expected an integer -1..1, got 2" },
	{ PC_MSG_HELLO, "queue.fua", "-2", "hello: field \"queue.fua\": expected an integer -1..1, got -2" },
	{ PC_MSG_HELLO, "queue.fua", "-1", NULL },
	{ PC_MSG_HELLO, "queue.fua", "\"1\"", "hello: field \"queue.fua\": expected an integer -1..1, got string" },
	{ PC_MSG_HELLO, "queue.write_cache", DEL, "hello: field \"queue.write_cache\" is missing" },
	{ PC_MSG_HELLO, "io", DEL, NULL },
	{ PC_MSG_HELLO, "io", "\"x\"", "hello: field \"io\": expected an object, got string" },
	{ PC_MSG_HELLO, "io", "null", "hello: field \"io\": expected an object, got null" },

	/* scan_begin */
	{ PC_MSG_SCAN_BEGIN, "slots", "-1", "scan_begin: field \"slots\": expected an integer 0..4294967295, got -1" },
	{ PC_MSG_SCAN_BEGIN, "slots", "4294967296",
	  "scan_begin: field \"slots\": expected an integer 0..4294967295, got 4294967296" },
	{ PC_MSG_SCAN_BEGIN, "slots", "0", NULL },
	{ PC_MSG_SCAN_BEGIN, "pattern", "\"zigzag\"",
	  "scan_begin: field \"pattern\": unknown pattern \"zigzag\" (expected sequential or random)" },
	{ PC_MSG_SCAN_BEGIN, "pattern", DEL, "scan_begin: field \"pattern\" is missing (expected a string)" },
	{ PC_MSG_SCAN_BEGIN, "full", "1", "scan_begin: field \"full\": expected true or false, got int" },
	{ PC_MSG_SCAN_BEGIN, "full", DEL, "scan_begin: field \"full\" is missing (expected true or false)" },

	/* runs */
	{ PC_MSG_RUNS, "r", DEL, "runs: field \"r\" is missing (expected an array of 1..64 elements)" },
	{ PC_MSG_RUNS, "r", "[]", "runs: field \"r\": expected an array of 1..64 elements, got 0" },
	{ PC_MSG_RUNS, "r", "{}", "runs: field \"r\": expected an array of 1..64 elements, got object" },
	{ PC_MSG_RUNS, "r.0", "[1,2,3,4]",
	  "runs: field \"r[0]\": expected an array of 5 integers [pos, n, seq, cycle, flags], got an array of 4" },
	{ PC_MSG_RUNS, "r.1", "[1,2,3,4,5,6]", "runs: field \"r[1]\": expected an array of 5 integers" },
	{ PC_MSG_RUNS, "r.1", "{}", "runs: field \"r[1]\": expected an array of 5 integers [pos, n, seq, cycle, flags], got object" },
	{ PC_MSG_RUNS, "r.1", "null", "runs: field \"r[1]\": expected an array of 5 integers [pos, n, seq, cycle, flags], got null" },
	{ PC_MSG_RUNS, "r.0.0", "4294967296", "runs: field \"r[0][0]\": expected an integer 0..4294967295, got 4294967296" },
	{ PC_MSG_RUNS, "r.0.1", "0", "runs: field \"r[0][1]\": expected an integer 1..4294967295, got 0" },
	{ PC_MSG_RUNS, "r.0.2", "\"1\"", "runs: field \"r[0][2]\": expected an integer >= 0, got string" },
	{ PC_MSG_RUNS, "r.0.2", "1.0", "runs: field \"r[0][2]\": expected an integer >= 0, got double" },
	{ PC_MSG_RUNS, "r.0.2", "-1", "runs: field \"r[0][2]\": expected an integer >= 0, got -1" },
	{ PC_MSG_RUNS, "r.0.3", "-1", "runs: field \"r[0][3]\": expected an integer 0..4294967295, got -1" },
	{ PC_MSG_RUNS, "r.0.4", "65536", "runs: field \"r[0][4]\": expected an integer 0..65535, got 65536" },
	{ PC_MSG_RUNS, "r.0.4", "null", "runs: field \"r[0][4]\": expected an integer 0..65535, got null" },
	{ PC_MSG_RUNS, "r.0", "[4294967295,2,0,0,0]", "runs: field \"r[0]\": positions 4294967295 + 2 pass 2^32" },
	{ PC_MSG_RUNS, "r.0", "[4294967295,1,0,0,0]", NULL },
	{ PC_MSG_RUNS, "r.0", "[0,2,18446744073709551615,0,0]", "runs: field \"r[0]\": seqs 18446744073709551615 + 2 pass 2^64" },

	/* slot */
	{ PC_MSG_SLOT, "slot", "4294967295", "slot: field \"slot\": expected an integer 0..4294967294, got 4294967295" },
	{ PC_MSG_SLOT, "slot", "4294967294", NULL },
	{ PC_MSG_SLOT, "slot", DEL, "slot: field \"slot\" is missing (expected an integer 0..4294967294)" },
	{ PC_MSG_SLOT, "s", "[]", "slot: field \"s\": expected an array of 1..2048 elements, got 0" },
	{ PC_MSG_SLOT, "s", "\"x\"", "slot: field \"s\": expected an array of 1..2048 elements, got string" },
	{ PC_MSG_SLOT, "s.0", "5", "slot: field \"s[0]\": expected an object, got int" },
	{ PC_MSG_SLOT, "s.0.i", DEL, "slot: field \"s[0].i\" is missing (expected an integer 0..2047)" },
	{ PC_MSG_SLOT, "s.0.i", "2048", "slot: field \"s[0].i\": expected an integer 0..2047, got 2048" },
	{ PC_MSG_SLOT, "s.1.i", "0", "slot: field \"s[1].i\": sector index 0 after 0 (indices must strictly increase)" },
	{ PC_MSG_SLOT, "s.4.i", "2", "slot: field \"s[4].i\": sector index 2 after 5" },
	{ PC_MSG_SLOT, "s.0", "{\"i\":0}", "slot: field \"s[0]\": no sector form (expected seq/cyc/fl/lba/hi, raw, fill, h or err)" },
	{ PC_MSG_SLOT, "s.1.h", "2", "slot: field \"s[1]\": more than one sector form (fill and h)" },
	{ PC_MSG_SLOT, "s.0.err", "5", "slot: field \"s[0]\": more than one sector form (seq/cyc/fl/lba/hi and err)" },
	{ PC_MSG_SLOT, "s.0.hi", DEL, "slot: field \"s[0].hi\" is missing (expected an integer 0..2047)" },
	{ PC_MSG_SLOT, "s.1", "{\"i\":1,\"lba\":3}", "slot: field \"s[1].seq\" is missing (expected an integer >= 0)" },
	{ PC_MSG_SLOT, "s.0.hi", "2048", "slot: field \"s[0].hi\": expected an integer 0..2047, got 2048" },
	{ PC_MSG_SLOT, "s.0.fl", "65536", "slot: field \"s[0].fl\": expected an integer 0..65535, got 65536" },
	{ PC_MSG_SLOT, "s.0.cyc", "-1", "slot: field \"s[0].cyc\": expected an integer 0..4294967295, got -1" },
	{ PC_MSG_SLOT, "s.0.seq", "1e2", "slot: field \"s[0].seq\": expected an integer >= 0, got double" },
	{ PC_MSG_SLOT, "s.0.lba", "18446744073709551615", NULL },
	{ PC_MSG_SLOT, "s.1.fill", "256", "slot: field \"s[1].fill\": expected an integer 0..255, got 256" },
	{ PC_MSG_SLOT, "s.1.fill", "-1", "slot: field \"s[1].fill\": expected an integer 0..255, got -1" },
	{ PC_MSG_SLOT, "s.2.h", "4294967296", "slot: field \"s[2].h\": expected an integer 0..4294967295, got 4294967296" },
	{ PC_MSG_SLOT, "s.3.err", "0", "slot: field \"s[3].err\": expected an integer 1..2147483647, got 0" },
	{ PC_MSG_SLOT, "s.4.raw", "\"AAAA\"", "slot: field \"s[4].raw\": expected base64 of exactly 512 bytes (684 characters)" },
	{ PC_MSG_SLOT, "s.4.raw", "5", "slot: field \"s[4].raw\": expected a string, got int" },

	/* scan_end */
	{ PC_MSG_SCAN_END, "anomalies", DEL, "scan_end: field \"anomalies\" is missing (expected an integer 0..4294967295)" },
	{ PC_MSG_SCAN_END, "raw_dropped", "-1", "scan_end: field \"raw_dropped\": expected an integer 0..4294967295, got -1" },
	{ PC_MSG_SCAN_END, "slots", "true", "scan_end: field \"slots\": expected an integer 0..4294967295, got boolean" },
	{ PC_MSG_SCAN_END, "ms", "-5", "scan_end: field \"ms\": expected an integer >= 0, got -5" },
	{ PC_MSG_SCAN_END, "ms", DEL, NULL },

	/* submit, ack */
	{ PC_MSG_ACK, "first", "\"1\"", "ack: field \"first\": expected an integer >= 1, got string" },
	{ PC_MSG_ACK, "first", "0", "ack: field \"first\": expected an integer >= 1, got 0" },
	{ PC_MSG_ACK, "first", "-3", "ack: field \"first\": expected an integer >= 1, got -3" },
	{ PC_MSG_ACK, "first", DEL, "ack: field \"first\" is missing (expected an integer >= 1)" },
	{ PC_MSG_ACK, "n", "0", "ack: field \"n\": expected an integer 1..1048576, got 0" },
	{ PC_MSG_ACK, "n", "1048577", "ack: field \"n\": expected an integer 1..1048576, got 1048577" },
	{ PC_MSG_ACK, "first", "18446744073709551615", "ack: field \"first\": seqs 18446744073709551615 + 1048576 pass 2^64" },
	{ PC_MSG_SUBMIT, "n", DEL, "submit: field \"n\" is missing (expected an integer 1..1048576)" },
	{ PC_MSG_SUBMIT, "first", "2.5", "submit: field \"first\": expected an integer >= 1, got double" },
	{ PC_MSG_SUBMIT, "first", "18446744073709551600", NULL },

	/* done */
	{ PC_MSG_DONE, "records", "-1", "done: field \"records\": expected an integer >= 0, got -1" },
	{ PC_MSG_DONE, "ms", DEL, "done: field \"ms\" is missing (expected an integer >= 0)" },
	{ PC_MSG_DONE, "io", DEL, "done: field \"io\" is missing (expected a string)" },
	{ PC_MSG_DONE, "mode", "\"gen0\"", "done: field \"mode\": unknown mode \"gen0\" (expected fua, fua+flush, flush, journal, none, relwr or relwr-off)" },
	{ PC_MSG_DONE, "mode", "3", "done: field \"mode\": expected a string, got int" },

	/* error */
	{ PC_MSG_ERROR, "msg", DEL, "error: field \"msg\" is missing (expected a string)" },
	{ PC_MSG_ERROR, "msg", "3", "error: field \"msg\": expected a string, got int" },

	/* verify */
	{ PC_MSG_VERIFY, "pattern", DEL, "verify: field \"pattern\" is missing (expected a string)" },
	{ PC_MSG_VERIFY, "pattern", "\"Random\"", "verify: field \"pattern\": unknown pattern \"Random\"" },
	{ PC_MSG_VERIFY, "full", "\"yes\"", "verify: field \"full\": expected true or false, got string" },
	{ PC_MSG_VERIFY, "ranges", DEL, "verify: field \"ranges\": required when \"full\" is false" },
	{ PC_MSG_VERIFY, "ranges", "[]", "verify: field \"ranges\": expected 1 to 256 ranges, got 0" },
	{ PC_MSG_VERIFY, "ranges", "[[1]]", "verify: field \"ranges[0]\": expected [pos, n] of two integers" },
	{ PC_MSG_VERIFY, "ranges", "[[1,0]]", "verify: field \"ranges[0]\": [1, 0] is not a range of positions" },
	{ PC_MSG_VERIFY, "ranges", "[[-1,2]]", "verify: field \"ranges[0]\": [-1, 2] is not a range of positions" },

	/* work */
	{ PC_MSG_WORK, "cycle", "0", "work: field \"cycle\": expected an integer 1..4294967295, got 0" },
	{ PC_MSG_WORK, "cycle", "4294967296", "work: field \"cycle\": expected an integer 1..4294967295, got 4294967296" },
	{ PC_MSG_WORK, "first", "0", "work: field \"first\": expected an integer >= 1, got 0" },
	{ PC_MSG_WORK, "n", "1048577", "work: field \"n\": expected an integer 1..1048576, got 1048577" },
	{ PC_MSG_WORK, "n", DEL, "work: field \"n\" is missing (expected an integer 1..1048576)" },
	{ PC_MSG_WORK, "mode", "\"FUA\"", "work: field \"mode\": unknown mode \"FUA\"" },
	{ PC_MSG_WORK, "mode", "\"gen0\"", "work: field \"mode\": unknown mode \"gen0\"" },
	{ PC_MSG_WORK, "pattern", "1", "work: field \"pattern\": expected a string, got int" },
	{ PC_MSG_WORK, "record_size", "513", "work: field \"record_size\": expected a multiple of 512, got 513" },
	{ PC_MSG_WORK, "record_size", "0", "work: field \"record_size\": expected an integer 512..1048576, got 0" },
	{ PC_MSG_WORK, "record_size", "1049088", "work: field \"record_size\": expected an integer 512..1048576, got 1049088" },
	{ PC_MSG_WORK, "flush_every", "0", "work: field \"flush_every\": expected an integer 1..4294967295, got 0" },
	{ PC_MSG_WORK, "qd", "33", "work: field \"qd\": expected an integer 1..32, got 33" },
	{ PC_MSG_WORK, "qd", "0", "work: field \"qd\": expected an integer 1..32, got 0" },
	{ PC_MSG_WORK, "qd", "[]", "work: field \"qd\": expected an integer 1..32, got array" },
	{ PC_MSG_WORK, "seed", "-1", "work: field \"seed\": expected an integer >= 0, got -1" },
	{ PC_MSG_WORK, "seed", "1e3", "work: field \"seed\": expected an integer >= 0, got double" },
	{ PC_MSG_WORK, "seed", "0", NULL },
	{ PC_MSG_WORK, "announce", "[\"fua\",\"flush\"]", NULL },
	{ PC_MSG_WORK, "announce", "[\"flush\"]", NULL },
	{ PC_MSG_WORK, "announce", "[]", "work: field \"announce\": expected an array of 1..2 elements, got 0" },
	{ PC_MSG_WORK, "announce", "[\"fua\",\"flush\",\"fua\"]",
	  "work: field \"announce\": expected an array of 1..2 elements, got 3" },
	{ PC_MSG_WORK, "announce", "\"flush\"", "work: field \"announce\": expected an array of 1..2 elements, got string" },
	{ PC_MSG_WORK, "announce", "[\"flush\",\"flush\"]", "work: field \"announce[1]\": \"flush\" given twice" },
	{ PC_MSG_WORK, "announce", "[\"sync\"]", "work: field \"announce[0]\": unknown I/O \"sync\" (expected flush or fua)" },
	{ PC_MSG_WORK, "announce", "[1]", "work: field \"announce[0]\": expected \"flush\" or \"fua\", got int" },

	/* io */
	{ PC_MSG_IO, "op", DEL, "io: field \"op\" is missing (expected \"flush\" or \"fua\")" },
	{ PC_MSG_IO, "op", "\"FUA\"", "io: field \"op\": unknown I/O \"FUA\" (expected flush or fua)" },
	{ PC_MSG_IO, "op", "null", "io: field \"op\": expected \"flush\" or \"fua\", got null" },
	{ PC_MSG_IO, "op", "\"flush\"", NULL },
	{ PC_MSG_IO, "seq", "0", "io: field \"seq\": expected an integer >= 1, got 0" },
	{ PC_MSG_IO, "seq", "-5", "io: field \"seq\": expected an integer >= 1, got -5" },
	{ PC_MSG_IO, "seq", "1.5", "io: field \"seq\": expected an integer >= 1, got double" },
	{ PC_MSG_IO, "seq", DEL, "io: field \"seq\" is missing (expected an integer >= 1)" },
	{ PC_MSG_IO, "seq", "1", NULL },
};

/* Apply one change to a parsed copy of a valid line; returns the new line. */
static char *mutate(const char *base, const char *path, const char *value)
{
	json_object *root = json_tokener_parse(base), *cur = root;
	char buf[128], *save = NULL, *tok, *next;
	char *out;

	CU_ASSERT_PTR_NOT_NULL_FATAL(root);
	pc_strlcpy(buf, path, sizeof(buf));
	for (tok = strtok_r(buf, ".", &save); tok; tok = next) {
		int arr = json_object_is_type(cur, json_type_array);

		next = strtok_r(NULL, ".", &save);
		if (next) {
			cur = arr ? json_object_array_get_idx(cur, (size_t)atoi(tok))
				  : json_object_object_get(cur, tok);
			CU_ASSERT_PTR_NOT_NULL_FATAL(cur);
			continue;
		}
		if (!value && arr)
			json_object_array_del_idx(cur, (size_t)atoi(tok), 1);
		else if (!value)
			json_object_object_del(cur, tok);
		else if (arr)
			json_object_array_put_idx(cur, (size_t)atoi(tok), json_tokener_parse(value));
		else
			json_object_object_add(cur, tok, json_tokener_parse(value));
	}
	out = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
	json_object_put(root);
	return out;
}

static void test_invalid_fields(void)
{
	for (size_t i = 0; i < PC_ARRAY_SIZE(mcases); i++) {
		const struct mcase *c = &mcases[i];
		char *line = mutate(base_line(c->base), c->path, c->value);
		char what[160];

		snprintf(what, sizeof(what), "case %zu: %s %s = %s", i, pc_msg_type_name(c->base),
			 c->path, c->value ? c->value : "(deleted)");
		expect_line(line, strlen(line), c->err, what);
		free(line);
	}
}

/* ---- framing ---- */

#define ACK "{\"type\":\"ack\",\"v\":1,\"first\":1,\"n\":1}"

static const struct {
	const char *line;
	const char *err;
} framing[] = {
	{ ACK, NULL },
	{ "@@PC " ACK, NULL },
	{ ACK "\r", NULL },
	{ "@@PC " ACK "\r", NULL },
	{ "  " ACK "  ", NULL },
	{ "", "empty line (expected one JSON object)" },
	{ "   ", "empty line (expected one JSON object)" },
	{ "\r", "empty line (expected one JSON object)" },
	{ "@@PC ", "empty line (expected one JSON object)" },
	{ "@@PC" ACK, "expected one JSON object, got '@' at byte 0" },
	{ "@@PC @@PC " ACK, "expected one JSON object, got '@' at byte 5" },
	{ "[1,2]", "expected one JSON object, got '[' at byte 0" },
	{ "42", "expected one JSON object, got '4' at byte 0" },
	{ "\"str\"", "expected one JSON object, got '\"' at byte 0" },
	{ "hello world", "expected one JSON object, got 'h' at byte 0" },
	{ "\x01{}", "expected one JSON object, got byte 0x01 at byte 0" },
	{ "\xff{}", "expected one JSON object, got byte 0xff at byte 0" },
	{ "{\"type\":\"ack\",\"v\":1", "truncated JSON: the line ends at byte 19 inside the object" },
	{ "{\"type\":\"ack\",\"v\":1,\"first\":\"1", "truncated JSON" },
	{ "{", "truncated JSON" },
	{ ACK ACK, "invalid JSON at byte 36: unexpected character" },
	{ ACK " junk", "invalid JSON at byte 37: unexpected character" },
	{ ACK "\n" ACK, "invalid JSON at byte 37: unexpected character" },
	{ "{\"type\":\"ack\",}", "invalid JSON at byte 14: unexpected character" },
	{ "{\"type\":\"ack\",\"v\":1,\"first\":01,\"n\":1}", "invalid JSON at byte 30: number expected" },
	{ "{\"type\":\"ack\",\"v\":1,\"first\":1,\"n\":1,\"x\":tru}", "invalid JSON" },
	{ "{\"type\":\"ack\",\"v\":1,\"msg\":\"\xc3\x28\"}", "invalid JSON at byte 28: invalid utf-8 string" },
	{ "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
	  "nesting too deep" },
	{ "{}", "field \"type\" is missing" },
	{ "{\"v\":1}", "field \"type\" is missing" },
	{ "{\"type\":\"ack\"}", "field \"v\" is missing" },
};

static void test_framing(void)
{
	for (size_t i = 0; i < PC_ARRAY_SIZE(framing); i++)
		expect_str(framing[i].line, framing[i].err);
}

/* A valid error line of exactly len bytes. */
static char *error_line(size_t len)
{
	static const char head[] = "{\"type\":\"error\",\"v\":1,\"msg\":\"";
	char *p = malloc(len + 1);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memset(p, 'x', len);
	memcpy(p, head, sizeof(head) - 1);
	memcpy(p + len - 2, "\"}", 2);
	p[len] = 0;
	return p;
}

static void test_line_limit(void)
{
	char *ok = error_line(PC_PROTO_MAX_LINE), *big = error_line(PC_PROTO_MAX_LINE + 1);
	char *huge = error_line(100000);

	expect_line(ok, strlen(ok), NULL, "8192-byte line");
	expect_line(big, strlen(big), "line of 8193 bytes exceeds the 8192-byte limit", "8193-byte line");
	expect_line(huge, strlen(huge), "line of 100000 bytes exceeds the 8192-byte limit", "huge line");
	free(ok);
	free(big);
	free(huge);
}

static void test_nul_byte(void)
{
	char line[] = ACK;
	size_t len = strlen(line);

	line[10] = 0;
	expect_line(line, len, "NUL byte at byte 10 of the line", "NUL inside");
	expect_line("\0", 1, "NUL byte at byte 0 of the line", "lone NUL");
	/* a NUL after the end given by len is not part of the line */
	expect_line(ACK "\0junk", strlen(ACK), NULL, "NUL past len");
}

/* ---- hostile input: random bytes and token soup ---- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void parse_any(const char *line, size_t len, unsigned *accepted)
{
	struct pc_msg m;
	char err[ERRLEN];
	int ret = pc_msg_parse(line, len, &m, err, sizeof(err));

	CU_ASSERT(ret == 0 || ret == -EINVAL);
	if (ret) {
		CU_ASSERT(err[0] != 0);
		CU_ASSERT_PTR_NULL(m.obj);
	} else {
		CU_ASSERT_PTR_NOT_NULL(m.obj);
		(*accepted)++;
	}
	pc_msg_clear(&m);
}

static void test_random_garbage(void)
{
	static const char *const toks[] = {
		"{", "}", "[", "]", ",", ":", "\"type\"", "\"v\"", "1", "0", "-1", "1.5", "true",
		"null", "\"ack\"", "\"slot\"", "\"s\"", "\"i\"", "\"raw\"", "\"r\"", "\"first\"", "\"n\"",
		"18446744073709551616", "\"\\u0000\"", " ", "\"", "\\", "@@PC ", "\r", "\xff",
	};
	char line[PC_PROTO_MAX_LINE + 64];
	unsigned accepted = 0;

	rng_state = 0x9e3779b97f4a7c15ull;
	/* raw bytes */
	for (int n = 0; n < 3000; n++) {
		size_t len = rng() % 300;

		for (size_t i = 0; i < len; i++)
			line[i] = (char)rng();
		if (len && rng() % 2)
			line[0] = '{';
		parse_any(line, len, &accepted);
	}
	/* token soup: reaches the schema checks far more often than bytes */
	for (int n = 0; n < 3000; n++) {
		size_t len = 0;
		int ntok = (int)(rng() % 40);

		for (int k = 0; k < ntok; k++) {
			const char *t = toks[rng() % PC_ARRAY_SIZE(toks)];
			size_t tl = strlen(t);

			memcpy(line + len, t, tl);
			len += tl;
		}
		parse_any(line, len, &accepted);
	}
	/* valid lines with a few bytes changed, dropped or cut short */
	for (int n = 0; n < 4000; n++) {
		const char *base = base_line((enum pc_msg_type)(rng() % PC_MSG_TYPE_MAX));
		size_t len = strlen(base);

		memcpy(line, base, len);
		for (int k = (int)(rng() % 4); k >= 0; k--) {
			size_t at = rng() % len;

			switch (rng() % 3) {
			case 0: line[at] = (char)rng(); break;
			case 1: line[at] = "{}[],:\"0-9e."[rng() % 12]; break;
			case 2: len = at; break;
			}
			if (!len)
				break;
		}
		parse_any(line, len, &accepted);
	}
	/* some mutated valid lines must still pass: the loop reached real schemas */
	CU_ASSERT(accepted > 0);
}

/* ---- builders round trip ---- */

static int roundtrip(json_object *o, struct pc_msg *m)
{
	char line[PC_PROTO_MAX_LINE + 2], err[ERRLEN];
	int n, ret;

	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	n = pc_msg_line(o, line, sizeof(line));
	json_object_put(o);
	CU_ASSERT(n > 0);
	if (n <= 0)
		return -1;
	CU_ASSERT_EQUAL(line[n - 1], '\n');
	CU_ASSERT_EQUAL((size_t)n, strlen(line));
	CU_ASSERT_PTR_NULL(memchr(line, '\n', (size_t)n - 1));
	ret = pc_msg_parse(line, (size_t)n - 1, m, err, sizeof(err));
	if (ret)
		fprintf(stderr, "\n    round trip of %s: %s\n", line, err);
	CU_ASSERT_EQUAL(ret, 0);
	return ret;
}

static void test_build_range(void)
{
	static const struct { enum pc_msg_type t; uint64_t first; uint32_t n; } c[] = {
		{ PC_MSG_SUBMIT, 1, 1 },
		{ PC_MSG_ACK, 17, 1048576 },
		{ PC_MSG_ACK, (uint64_t)INT64_MAX + 5, 3 },
		{ PC_MSG_SUBMIT, UINT64_MAX, 1 },
	};
	struct pc_msg m;

	for (size_t i = 0; i < PC_ARRAY_SIZE(c); i++) {
		if (roundtrip(pc_msg_range(c[i].t, c[i].first, c[i].n), &m))
			continue;
		CU_ASSERT_EQUAL(m.type, c[i].t);
		CU_ASSERT_EQUAL(m.u.range.first, c[i].first);
		CU_ASSERT_EQUAL(m.u.range.n, c[i].n);
		pc_msg_clear(&m);
	}
}

static void test_build_io(void)
{
	static const struct { unsigned op; uint64_t seq; } c[] = {
		{ PC_IO_FLUSH, 1 }, { PC_IO_FUA, 17 }, { PC_IO_FUA, (uint64_t)INT64_MAX + 5 }, { PC_IO_FLUSH, UINT64_MAX },
	};
	struct pc_work w = { .cycle = 3, .first = 9, .n = 4, .mode = PC_MODE_JOURNAL, .pattern = PC_PAT_SEQUENTIAL,
			     .record_size = 4096, .flush_every = 2, .qd = 1, .seed = 5 };
	struct pc_msg m;

	for (size_t i = 0; i < PC_ARRAY_SIZE(c); i++) {
		if (roundtrip(pc_msg_io(c[i].op, c[i].seq), &m))
			continue;
		CU_ASSERT_EQUAL(m.type, PC_MSG_IO);
		CU_ASSERT_EQUAL(m.u.io.op, c[i].op);
		CU_ASSERT_EQUAL(m.u.io.seq, c[i].seq);
		pc_msg_clear(&m);
	}
	/* nothing else is an announcement */
	CU_ASSERT_PTR_NULL(pc_msg_io(0, 1));
	CU_ASSERT_PTR_NULL(pc_msg_io(PC_IO_ALL, 1));
	CU_ASSERT_PTR_NULL(pc_msg_io(PC_IO_FUA, 0));
	CU_ASSERT_STRING_EQUAL(pc_io_op_name(PC_IO_FLUSH), "flush");
	CU_ASSERT_STRING_EQUAL(pc_io_op_name(PC_IO_FUA), "fua");
	CU_ASSERT_STRING_EQUAL(pc_io_op_name(PC_IO_ALL), "?");
	CU_ASSERT_EQUAL(pc_io_op_from_name("fua"), PC_IO_FUA);
	CU_ASSERT_EQUAL(pc_io_op_from_name("Flush"), 0);
	CU_ASSERT_EQUAL(pc_io_op_from_name(NULL), 0);
	/* a work asks for them, or not (no field at all: what an older host sends) */
	for (unsigned a = 0; a <= PC_IO_ALL; a++) {
		json_object *o;

		w.announce = a;
		o = pc_msg_work(&w);
		CU_ASSERT_EQUAL(json_object_object_get_ex(o, "announce", NULL), a != 0);
		if (roundtrip(o, &m))
			continue;
		CU_ASSERT_EQUAL(m.u.work.announce, a);
		pc_msg_clear(&m);
	}
}

static void test_build_work_verify(void)
{
	struct pc_work w[] = {
		{ .cycle = 1, .first = 1, .n = 1, .mode = PC_MODE_FUA, .pattern = PC_PAT_SEQUENTIAL,
		  .record_size = 512, .flush_every = 1, .qd = 1, .seed = 0 },
		{ .cycle = UINT32_MAX, .first = 1ull << 40, .n = 1048576, .mode = PC_MODE_RELWR,
		  .pattern = PC_PAT_RANDOM, .record_size = 1048576, .flush_every = UINT32_MAX, .qd = 32,
		  .seed = UINT64_MAX },
	};
	struct pc_msg m;

	for (int mode = PC_MODE_FUA; mode < PC_MODE_MAX; mode++) {
		w[0].mode = mode;
		for (size_t i = 0; i < PC_ARRAY_SIZE(w); i++) {
			if (roundtrip(pc_msg_work(&w[i]), &m))
				continue;
			CU_ASSERT_EQUAL(m.type, PC_MSG_WORK);
			CU_ASSERT_EQUAL(m.u.work.cycle, w[i].cycle);
			CU_ASSERT_EQUAL(m.u.work.first, w[i].first);
			CU_ASSERT_EQUAL(m.u.work.n, w[i].n);
			CU_ASSERT_EQUAL(m.u.work.mode, w[i].mode);
			CU_ASSERT_EQUAL(m.u.work.pattern, w[i].pattern);
			CU_ASSERT_EQUAL(m.u.work.record_size, w[i].record_size);
			CU_ASSERT_EQUAL(m.u.work.flush_every, w[i].flush_every);
			CU_ASSERT_EQUAL(m.u.work.qd, w[i].qd);
			CU_ASSERT_EQUAL(m.u.work.seed, w[i].seed);
			pc_msg_clear(&m);
		}
	}
	for (int p = 0; p < 2; p++)
		for (int full = 1; full < 3; full++) {
			if (roundtrip(pc_msg_verify(p, full), &m))
				continue;
			CU_ASSERT_EQUAL(m.type, PC_MSG_VERIFY);
			CU_ASSERT_EQUAL(m.u.verify.pattern, p);
			CU_ASSERT_EQUAL(m.u.verify.full, full != 0);
			pc_msg_clear(&m);
		}
	{
		struct pc_posrange r[3] = { { 0, 4 }, { 900, 1 }, { 7, 2 } };
		if (!roundtrip(pc_msg_verify_ranges(PC_PAT_RANDOM, r, 3), &m)) {
			CU_ASSERT_EQUAL(m.u.verify.full, 0);
			CU_ASSERT_EQUAL_FATAL(m.u.verify.nranges, 3);
			CU_ASSERT_EQUAL(m.u.verify.ranges[1].pos, 900);
			CU_ASSERT_EQUAL(m.u.verify.ranges[2].n, 2);
			pc_msg_clear(&m);
		}
	}
}

static void test_build_runs(void)
{
	struct pc_run runs[PC_PROTO_RUNS_PER_LINE];
	struct pc_msg m;

	rng_state = 42;
	for (uint32_t i = 0; i < PC_PROTO_RUNS_PER_LINE; i++)
		runs[i] = (struct pc_run){ .pos = (uint32_t)rng() >> 1, .n = 1 + ((uint32_t)rng() >> 2),
					   .seq = rng() >> 1, .cycle = (uint32_t)rng(), .flags = (uint16_t)rng() };
	runs[0] = (struct pc_run){ .pos = UINT32_MAX, .n = 1, .seq = UINT64_MAX, .cycle = UINT32_MAX,
				   .flags = UINT16_MAX };
	runs[1] = (struct pc_run){ .pos = 0, .n = 1u << 31, .seq = 0, .cycle = 0, .flags = 0 };
	if (roundtrip(pc_msg_runs(runs, PC_PROTO_RUNS_PER_LINE), &m))
		return;
	CU_ASSERT_EQUAL(m.type, PC_MSG_RUNS);
	CU_ASSERT_EQUAL_FATAL(m.u.runs.nruns, PC_PROTO_RUNS_PER_LINE);
	for (uint32_t i = 0; i < PC_PROTO_RUNS_PER_LINE; i++) {
		CU_ASSERT_EQUAL(m.u.runs.runs[i].pos, runs[i].pos);
		CU_ASSERT_EQUAL(m.u.runs.runs[i].n, runs[i].n);
		CU_ASSERT_EQUAL(m.u.runs.runs[i].seq, runs[i].seq);
		CU_ASSERT_EQUAL(m.u.runs.runs[i].cycle, runs[i].cycle);
		CU_ASSERT_EQUAL(m.u.runs.runs[i].flags, runs[i].flags);
	}
	pc_msg_clear(&m);
}

static void test_build_slot(void)
{
	struct pc_sect_report sect[7];
	struct pc_slot_report s = { .slot = UINT32_MAX - 1, .nsect = 7, .sect = sect };
	struct pc_msg m;

	memset(sect, 0, sizeof(sect));
	rng_state = 7;
	sect[0] = (struct pc_sect_report){ .idx = 0, .kind = PC_SK_VALID, .seq = UINT64_MAX,
					   .cycle = UINT32_MAX, .flags = 0xffff, .lba = 1ull << 50, .hidx = 2047 };
	sect[1] = (struct pc_sect_report){ .idx = 1, .kind = PC_SK_VALID, .seq = 0, .lba = 9, .hidx = 1 };
	sect[2].idx = 3;
	sect[2].kind = PC_SK_RAW;
	for (int i = 0; i < 512; i++)
		sect[2].raw[i] = (uint8_t)rng();
	sect[3] = (struct pc_sect_report){ .idx = 4, .kind = PC_SK_FILL, .value = 0 };
	sect[4] = (struct pc_sect_report){ .idx = 5, .kind = PC_SK_HASH, .value = 0xdeadbeef };
	sect[5] = (struct pc_sect_report){ .idx = 6, .kind = PC_SK_ERR, .value = 5 };
	sect[6] = (struct pc_sect_report){ .idx = 2047, .kind = PC_SK_FILL, .value = 0xff };
	if (roundtrip(pc_msg_slot(&s), &m))
		return;
	CU_ASSERT_EQUAL(m.type, PC_MSG_SLOT);
	CU_ASSERT_EQUAL(m.u.slot.slot, s.slot);
	CU_ASSERT_EQUAL_FATAL(m.u.slot.nsect, s.nsect);
	for (int i = 0; i < 7; i++) {
		const struct pc_sect_report *a = &m.u.slot.sect[i], *b = &sect[i];

		CU_ASSERT_EQUAL(a->idx, b->idx);
		CU_ASSERT_EQUAL(a->kind, b->kind);
		CU_ASSERT_EQUAL(a->value, b->value);
		CU_ASSERT_EQUAL(a->seq, b->seq);
		CU_ASSERT_EQUAL(a->cycle, b->cycle);
		CU_ASSERT_EQUAL(a->flags, b->flags);
		CU_ASSERT_EQUAL(a->lba, b->lba);
		CU_ASSERT_EQUAL(a->hidx, b->hidx);
		if (b->kind == PC_SK_RAW)
			CU_ASSERT_EQUAL(memcmp(a->raw, b->raw, 512), 0);
	}
	pc_msg_clear(&m);
}

static void test_build_error_hello(void)
{
	struct pc_msg m;
	json_object *o, *reg, *q;
	const char *s;
	char err[ERRLEN];

	if (!roundtrip(pc_msg_error("cannot open %s: %s", "/dev/mmcblk0p3", "Permission denied"), &m)) {
		CU_ASSERT_EQUAL(m.type, PC_MSG_ERROR);
		CU_ASSERT_EQUAL(pc_json_str(m.obj, "msg", &s, err, sizeof(err)), 0);
		CU_ASSERT_STRING_EQUAL(s, "cannot open /dev/mmcblk0p3: Permission denied");
		pc_msg_clear(&m);
	}
	/* control characters and quotes are escaped: still one line */
	if (!roundtrip(pc_msg_error("a\nb\"c\r\\"), &m)) {
		CU_ASSERT_EQUAL(pc_json_str(m.obj, "msg", &s, err, sizeof(err)), 0);
		CU_ASSERT_STRING_EQUAL(s, "a\nb\"c\r\\");
		pc_msg_clear(&m);
	}

	o = pc_msg_new(PC_MSG_HELLO);
	reg = json_object_new_object();
	q = json_object_new_object();
	json_object_object_add(o, "board", json_object_new_string("sim0"));
	json_object_object_add(o, "agent", json_object_new_string(PC_VERSION));
	json_object_object_add(o, "boot_id", json_object_new_string("x"));
	json_object_object_add(o, "kernel", json_object_new_string("6.1"));
	json_object_object_add(o, "backend", json_object_new_string("sim"));
	json_object_object_add(reg, "uuid", json_object_new_string(UUID_A));
	json_object_object_add(reg, "bytes", json_object_new_int64(1 << 20));
	json_object_object_add(reg, "record_size", json_object_new_int64(4096));
	json_object_object_add(reg, "slots", json_object_new_int64(254));
	json_object_object_add(reg, "seed", json_object_new_uint64(UINT64_MAX));
	json_object_object_add(o, "region", reg);
	json_object_object_add(o, "device", json_object_new_object());
	json_object_object_add(q, "fua", json_object_new_int(0));
	json_object_object_add(q, "write_cache", json_object_new_string("write through"));
	json_object_object_add(o, "queue", q);
	if (!roundtrip(o, &m)) {
		CU_ASSERT_EQUAL(m.type, PC_MSG_HELLO);
		pc_msg_clear(&m);
	}

	/* every type the builders name is one the parser knows */
	for (int t = 0; t < PC_MSG_TYPE_MAX; t++) {
		o = pc_msg_new((enum pc_msg_type)t);
		CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(o, "type")),
				       pc_msg_type_name((enum pc_msg_type)t));
		json_object_put(o);
	}
	CU_ASSERT_PTR_NULL(pc_msg_new(PC_MSG_TYPE_MAX));
	CU_ASSERT_STRING_EQUAL(pc_msg_type_name(PC_MSG_TYPE_MAX), "?");
	CU_ASSERT_STRING_EQUAL(pc_msg_type_name(PC_MSG_SCAN_BEGIN), "scan_begin");
}

static void test_msg_line_limit(void)
{
	/* builders stop short of the limit: room for "@@PC ", the tag and "\r" */
	size_t max_json = PC_PROTO_MAX_LINE - 6 - PC_AUTH_TAG_OVERHEAD, fixed;
	struct pc_auth_key k;
	struct pc_auth_session sess;
	char sealed[PC_PROTO_MAX_LINE + 2];
	int sn;
	json_object *o = pc_msg_new(PC_MSG_ERROR);
	char *msg = malloc(PC_PROTO_MAX_LINE * 2), line[PC_PROTO_MAX_LINE + 2], framed[PC_PROTO_MAX_LINE + 8];
	struct pc_msg m;
	char err[ERRLEN];
	int n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(msg);
	json_object_object_add(o, "msg", json_object_new_string(""));
	fixed = strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	memset(msg, 'm', max_json - fixed);
	msg[max_json - fixed] = 0;
	json_object_object_add(o, "msg", json_object_new_string(msg));
	n = pc_msg_line(o, line, sizeof(line));
	CU_ASSERT_EQUAL(n, (int)max_json + 1);
	/* the longest message, tagged and framed for a serial console, is still accepted */
	memset(k.k, 1, sizeof(k.k));
	pc_auth_session_init(&sess, &k, "00112233445566778899aabbccddeeff", "ffeeddccbbaa99887766554433221100", 0);
	memcpy(sealed, line, (size_t)n - 1);
	sn = pc_auth_seal(&sess, sealed, (size_t)n - 1, sizeof(sealed));
	CU_ASSERT_EQUAL(sn, n - 1 + PC_AUTH_TAG_OVERHEAD);
	snprintf(framed, sizeof(framed), "%s%.*s\r", PC_PROTO_MARKER, sn, sealed);
	CU_ASSERT_EQUAL(strlen(framed), PC_PROTO_MAX_LINE);
	CU_ASSERT_EQUAL(pc_msg_parse(framed, strlen(framed), &m, err, sizeof(err)), 0);
	pc_msg_clear(&m);
	/* a buffer too small for line + newline + NUL */
	CU_ASSERT_EQUAL(pc_msg_line(o, line, (size_t)n), -E2BIG);
	CU_ASSERT_EQUAL(pc_msg_line(o, line, (size_t)n + 1), n);
	/* one byte more */
	msg[max_json - fixed] = 'm';
	msg[max_json - fixed + 1] = 0;
	json_object_object_add(o, "msg", json_object_new_string(msg));
	CU_ASSERT_EQUAL(pc_msg_line(o, line, sizeof(line)), -E2BIG);
	CU_ASSERT_EQUAL(pc_msg_line(NULL, line, sizeof(line)), -EINVAL);
	json_object_put(o);
	free(msg);
}

/* A whole slot of valid sectors does not fit one line: the agent must split it. */
static void test_msg_line_slot_too_big(void)
{
	struct pc_sect_report *sect = calloc(2048, sizeof(*sect));
	struct pc_slot_report s = { .slot = 1, .nsect = 2048, .sect = sect };
	char line[PC_PROTO_MAX_LINE + 2];
	json_object *o;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sect);
	for (int i = 0; i < 2048; i++)
		sect[i] = (struct pc_sect_report){ .idx = (uint16_t)i, .kind = PC_SK_VALID, .seq = 1000 + i,
						   .lba = 8 + i, .hidx = (uint16_t)i };
	o = pc_msg_slot(&s);
	CU_ASSERT_EQUAL(pc_msg_line(o, line, sizeof(line)), -E2BIG);
	json_object_put(o);
	free(sect);
}

static void test_runs_slot_limits(void)
{
	struct pc_run runs[PC_PROTO_RUNS_PER_LINE + 1];
	char *line;
	json_object *o;
	char b64[700], bad[700];
	uint8_t raw[512];

	for (int i = 0; i <= PC_PROTO_RUNS_PER_LINE; i++)
		runs[i] = (struct pc_run){ .pos = (uint32_t)i, .n = 1, .seq = 1 };
	o = pc_msg_runs(runs, PC_PROTO_RUNS_PER_LINE + 1);
	line = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	expect_str(line, "runs: field \"r\": expected an array of 1..64 elements, got 65");
	json_object_put(o);
	free(line);

	/* raw of the right length but with a character outside the alphabet */
	raw_pattern(raw);
	pc_b64_encode(raw, sizeof(raw), b64);
	memcpy(bad, b64, sizeof(bad));
	bad[100] = '*';
	{
		char val[720];

		snprintf(val, sizeof(val), "\"%s\"", bad);
		line = mutate(base_line(PC_MSG_SLOT), "s.4.raw", val);
		expect_str(line, "slot: field \"s[4].raw\": expected base64 of exactly 512 bytes");
		free(line);
		/* 683 characters + '=': wrong length */
		b64[683] = 0;
		snprintf(val, sizeof(val), "\"%s\"", b64);
		line = mutate(base_line(PC_MSG_SLOT), "s.4.raw", val);
		expect_str(line, "slot: field \"s[4].raw\": expected base64 of exactly 512 bytes");
		free(line);
	}
}

static void test_clear_and_helpers(void)
{
	struct pc_msg m;
	json_object *o = json_tokener_parse("{\"a\":5,\"b\":-1,\"c\":\"x\",\"d\":2.5,\"e\":null,"
					    "\"f\":18446744073709551615}");
	uint64_t v = 0;
	const char *s = NULL;
	char err[ERRLEN];

	memset(&m, 0, sizeof(m));
	pc_msg_clear(&m);
	pc_msg_clear(&m);
	pc_msg_clear(NULL);

	CU_ASSERT_EQUAL(pc_json_u64(o, "a", 10, &v, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(v, 5);
	CU_ASSERT_EQUAL(pc_json_u64(o, "a", 4, &v, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "field \"a\": expected an integer 0..4, got 5");
	CU_ASSERT_EQUAL(pc_json_u64(o, "b", UINT64_MAX, &v, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "field \"b\": expected an integer >= 0, got -1");
	CU_ASSERT_EQUAL(pc_json_u64(o, "d", 10, &v, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "field \"d\": expected an integer 0..10, got double");
	CU_ASSERT_EQUAL(pc_json_u64(o, "e", 10, &v, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "field \"e\": expected an integer 0..10, got null");
	CU_ASSERT_EQUAL(pc_json_u64(o, "zz", 10, &v, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "field \"zz\" is missing (expected an integer 0..10)");
	CU_ASSERT_EQUAL(pc_json_u64(o, "f", UINT64_MAX, &v, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(v, UINT64_MAX);
	CU_ASSERT_EQUAL(pc_json_u64(NULL, "a", 10, &v, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(pc_json_str(o, "c", &s, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(s, "x");
	CU_ASSERT_EQUAL(pc_json_str(o, "a", &s, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "field \"a\": expected a string, got int");
	CU_ASSERT_EQUAL(pc_json_str(o, "zz", &s, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "field \"zz\" is missing (expected a string)");
	/* a tiny or absent error buffer is fine */
	CU_ASSERT_EQUAL(pc_json_str(o, "zz", &s, err, 4), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "fie");
	CU_ASSERT_EQUAL(pc_json_str(o, "zz", &s, NULL, 0), -EINVAL);
	json_object_put(o);
	CU_ASSERT_EQUAL(pc_msg_parse("{}", 2, &m, NULL, 0), -EINVAL);
}

/* ---- line reader ---- */

static enum pc_line_result take(struct pc_linebuf *lb, char *out, size_t *len)
{
	return pc_linebuf_take(lb, out, PC_PROTO_MAX_LINE + 1, len);
}

static void test_linebuf_split(void)
{
	static struct pc_linebuf lb;
	static const char text[] = "first\nsecond line\r\n\nthird";
	char out[PC_PROTO_MAX_LINE + 1];
	size_t len = 0;

	/* in pieces of every size: the same lines come out */
	for (size_t step = 1; step <= sizeof(text); step++) {
		const char *want[] = { "first", "second line\r", "" };
		int got = 0;

		memset(&lb, 0, sizeof(lb));
		for (size_t off = 0; off < sizeof(text) - 1;) {
			size_t n = sizeof(text) - 1 - off < step ? sizeof(text) - 1 - off : step;

			CU_ASSERT_EQUAL(pc_linebuf_feed(&lb, text + off, n), n);
			off += n;
			while (take(&lb, out, &len) == PC_LINE_OK) {
				CU_ASSERT_FATAL(got < 3);
				CU_ASSERT_STRING_EQUAL(out, want[got]);
				CU_ASSERT_EQUAL(len, strlen(want[got]));
				got++;
			}
		}
		CU_ASSERT_EQUAL(got, 3);
		/* "third" waits for its newline */
		CU_ASSERT_EQUAL(take(&lb, out, &len), PC_LINE_NONE);
		CU_ASSERT_EQUAL(pc_linebuf_feed(&lb, "\n", 1), 1);
		CU_ASSERT_EQUAL(take(&lb, out, &len), PC_LINE_OK);
		CU_ASSERT_STRING_EQUAL(out, "third");
		CU_ASSERT_EQUAL(take(&lb, out, &len), PC_LINE_NONE);
	}

	/* a NUL stays in the line; the length tells */
	memset(&lb, 0, sizeof(lb));
	CU_ASSERT_EQUAL(pc_linebuf_feed(&lb, "a\0b\n", 4), 4);
	CU_ASSERT_EQUAL(take(&lb, out, &len), PC_LINE_OK);
	CU_ASSERT_EQUAL(len, 3);
	CU_ASSERT_EQUAL(memcmp(out, "a\0b", 4), 0);
	expect_line(out, len, "NUL byte at byte 1", "linebuf NUL");

	/* an out buffer too small for the line: not truncated, refused */
	CU_ASSERT_EQUAL(pc_linebuf_feed(&lb, "abcdef\nok\n", 10), 10);
	CU_ASSERT_EQUAL(pc_linebuf_take(&lb, out, 4, &len), PC_LINE_TOO_LONG);
	CU_ASSERT_EQUAL(len, 6);
	CU_ASSERT_EQUAL(pc_linebuf_take(&lb, out, 4, &len), PC_LINE_OK);
	CU_ASSERT_STRING_EQUAL(out, "ok");
}

/* Feed all of data as a stream in chunks, collecting results. */
static void stream(struct pc_linebuf *lb, const char *data, size_t n, size_t chunk,
		   int *ok, int *toolong, size_t *last_ok_len, size_t *last_long_len)
{
	char out[PC_PROTO_MAX_LINE + 1];
	size_t len;

	while (n) {
		size_t k = pc_linebuf_feed(lb, data, n < chunk ? n : chunk);
		enum pc_line_result r;

		data += k;
		n -= k;
		while ((r = take(lb, out, &len)) != PC_LINE_NONE) {
			if (r == PC_LINE_OK) {
				(*ok)++;
				*last_ok_len = len;
			} else {
				(*toolong)++;
				*last_long_len = len;
			}
		}
	}
}

static void test_linebuf_overflow(void)
{
	static struct pc_linebuf lb;
	size_t big = 3 * PC_PROTO_MAX_LINE;
	char *data = malloc(big + 64);
	static const size_t chunks[] = { 1, 7, 512, 4096, 8194, 100000 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(data);
	for (size_t c = 0; c < PC_ARRAY_SIZE(chunks); c++) {
		int ok = 0, toolong = 0;
		size_t okl = 0, longl = 0, n;

		/* a 24 KiB line, then a short one: one TOO_LONG, then the short line */
		memset(&lb, 0, sizeof(lb));
		memset(data, 'x', big);
		memcpy(data + big, "\nok\n", 4);
		stream(&lb, data, big + 4, chunks[c], &ok, &toolong, &okl, &longl);
		CU_ASSERT_EQUAL(toolong, 1);
		CU_ASSERT_EQUAL(ok, 1);
		CU_ASSERT_EQUAL(okl, 2);
		CU_ASSERT(longl > PC_PROTO_MAX_LINE);

		/* exactly the limit is fine, one more is not */
		ok = toolong = 0;
		memset(&lb, 0, sizeof(lb));
		n = 0;
		memset(data, 'y', PC_PROTO_MAX_LINE);
		n += PC_PROTO_MAX_LINE;
		data[n++] = '\n';
		memset(data + n, 'z', PC_PROTO_MAX_LINE + 1);
		n += PC_PROTO_MAX_LINE + 1;
		data[n++] = '\n';
		memcpy(data + n, "end\n", 4);
		n += 4;
		stream(&lb, data, n, chunks[c], &ok, &toolong, &okl, &longl);
		CU_ASSERT_EQUAL(ok, 2);
		CU_ASSERT_EQUAL(toolong, 1);
		CU_ASSERT_EQUAL(longl, PC_PROTO_MAX_LINE + 1);
		CU_ASSERT_EQUAL(okl, 3);
	}
	/* feed takes less than offered when full; take then reports the line */
	memset(&lb, 0, sizeof(lb));
	memset(data, 'q', big);
	{
		char out[PC_PROTO_MAX_LINE + 1];
		size_t len, k = pc_linebuf_feed(&lb, data, big);

		CU_ASSERT_EQUAL(k, sizeof(lb.buf));
		CU_ASSERT_EQUAL(take(&lb, out, &len), PC_LINE_TOO_LONG);
		CU_ASSERT_EQUAL(take(&lb, out, &len), PC_LINE_NONE);
		/* the rest of the line is swallowed, whatever it is */
		CU_ASSERT_EQUAL(pc_linebuf_feed(&lb, data, big - k), big - k);
		CU_ASSERT_EQUAL(take(&lb, out, &len), PC_LINE_NONE);
		CU_ASSERT_EQUAL(pc_linebuf_feed(&lb, "qq\nnext\n", 8), 8);
		CU_ASSERT_EQUAL(take(&lb, out, &len), PC_LINE_OK);
		CU_ASSERT_STRING_EQUAL(out, "next");
		CU_ASSERT_EQUAL(take(&lb, out, &len), PC_LINE_NONE);
	}
	free(data);
}

/* ---- base64 ---- */

static void test_base64(void)
{
	/* RFC 4648 section 10 */
	static const struct { const char *plain, *enc; } v[] = {
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
	};
	static const char *const bad[] = {
		"Zg=", "Z", "Zg", "Zg=a", "Z===", "====", "=Zg=", "Zg==Zg==", "Zm9v!A==", "Zm9v YmFy",
		"Zm9vYmF\xff", "Zh==", "Zm9=", "Zm-v", "Zm_v",
		/* no whitespace anywhere, no padding inside a quartet, none past the end */
		"Zm9v\nYmE", "Zg==    ", "    Zg==", "Zm\t=", "Zm=v", "Zm9vY===", "Zg===", "Zm9vYg=A",
	};
	char enc[64];
	uint8_t dec[64], all[256], back[256];
	char allenc[400];
	size_t n;

	for (size_t i = 0; i < PC_ARRAY_SIZE(v); i++) {
		CU_ASSERT_EQUAL(pc_b64_encode((const uint8_t *)v[i].plain, strlen(v[i].plain), enc),
				strlen(v[i].enc));
		CU_ASSERT_STRING_EQUAL(enc, v[i].enc);
		CU_ASSERT_EQUAL(pc_b64_decode(v[i].enc, dec, sizeof(dec), &n), 0);
		CU_ASSERT_EQUAL(n, strlen(v[i].plain));
		CU_ASSERT_EQUAL(memcmp(dec, v[i].plain, n), 0);
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++) {
		int ret = pc_b64_decode(bad[i], dec, sizeof(dec), &n);

		if (ret != -EINVAL)
			fprintf(stderr, "\n    base64 \"%s\" accepted\n", bad[i]);
		CU_ASSERT_EQUAL(ret, -EINVAL);
	}
	/* "+" and "/" are the last two letters; decoding stops at outmax */
	CU_ASSERT_EQUAL(pc_b64_decode("+/+/", dec, sizeof(dec), &n), 0);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_EQUAL(dec[0], 0xfb);
	CU_ASSERT_EQUAL(dec[1], 0xff);
	CU_ASSERT_EQUAL(dec[2], 0xbf);
	CU_ASSERT_EQUAL(pc_b64_decode("Zm9vYmFy", dec, 5, &n), -E2BIG);
	CU_ASSERT_EQUAL(pc_b64_decode("Zm9vYmFy", dec, 6, &n), 0);
	/* every byte value and length survives a round trip */
	for (int i = 0; i < 256; i++)
		all[i] = (uint8_t)(255 - i);
	for (size_t len = 0; len <= 256; len++) {
		size_t el = pc_b64_encode(all, len, allenc);

		CU_ASSERT_EQUAL(el, 4 * ((len + 2) / 3));
		CU_ASSERT_EQUAL(strlen(allenc), el);
		CU_ASSERT_EQUAL(pc_b64_decode(allenc, back, sizeof(back), &n), 0);
		CU_ASSERT_EQUAL(n, len);
		CU_ASSERT_EQUAL(memcmp(back, all, len), 0);
	}
}

/* VERIFY ranges at the limits of pos + n: positions are 32-bit, and the sum
 * must be checked without overflowing (a huge n once wrapped a signed add). */
static void test_verify_range_limits(void)
{
	static const struct {
		const char *range;
		int ok;
		uint32_t pos, n;
	} cases[] = {
		{ "[0,4294967295]", 1, 0, 4294967295u },
		{ "[4294967294,1]", 1, 4294967294u, 1 },
		{ "[1,4294967295]", 0, 0, 0 },
		{ "[4294967295,1]", 0, 0, 0 },
		{ "[4294967295,0]", 0, 0, 0 },
		{ "[1,9223372036854775807]", 0, 0, 0 },
		{ "[9223372036854775807,9223372036854775807]", 0, 0, 0 },
		{ "[1,18446744073709551615]", 0, 0, 0 },
		{ "[18446744073709551615,1]", 0, 0, 0 },
		{ "[4294967296,1]", 0, 0, 0 },
		{ "[0,-9223372036854775808]", 0, 0, 0 },
		{ "[-9223372036854775808,9223372036854775807]", 0, 0, 0 },
	};

	for (size_t i = 0; i < PC_ARRAY_SIZE(cases); i++) {
		char line[256], err[ERRLEN], want[128];
		struct pc_msg m;
		int ret;

		snprintf(line, sizeof(line), "{\"type\":\"verify\",\"v\":1,\"pattern\":\"sequential\","
			 "\"full\":false,\"ranges\":[[3,4],%s]}", cases[i].range);
		ret = pc_msg_parse(line, strlen(line), &m, err, sizeof(err));
		if (cases[i].ok) {
			if (ret)
				fprintf(stderr, "\n    %s: unexpected error: %s\n", cases[i].range, err);
			CU_ASSERT_EQUAL_FATAL(ret, 0);
			CU_ASSERT_EQUAL(m.u.verify.nranges, 2);
			CU_ASSERT_EQUAL(m.u.verify.ranges[1].pos, cases[i].pos);
			CU_ASSERT_EQUAL(m.u.verify.ranges[1].n, cases[i].n);
			/* what the parser hands on never wraps 32 bits */
			CU_ASSERT((uint64_t)m.u.verify.ranges[1].pos + m.u.verify.ranges[1].n <= UINT32_MAX);
		} else {
			snprintf(want, sizeof(want), "field \"ranges[1]\": ");
			if (ret != -EINVAL || !strstr(err, want) || !strstr(err, "is not a range of positions"))
				fprintf(stderr, "\n    %s: accepted or wrong error: %d \"%s\"\n", cases[i].range, ret, err);
			CU_ASSERT_EQUAL(ret, -EINVAL);
			CU_ASSERT_PTR_NOT_NULL(strstr(err, "is not a range of positions"));
		}
		pc_msg_clear(&m);
	}
}

/* The writer's lines without json-c are, byte for byte, what json-c writes. */
static int same_line(json_object *msg, const char *b, int n)
{
	char ref[PC_PROTO_MAX_LINE + 2];
	int r = pc_msg_line(msg, ref, sizeof(ref));

	json_object_put(msg);
	return r > 0 && r == n && !strcmp(ref, b);
}

static void test_writer_lines(void)
{
	static const uint64_t firsts[] = { 0, 1, 9, 10, 99, 100, 123456789, 4294967295ull, 4294967296ull,
					   INT64_MAX, (uint64_t)INT64_MAX + 1, UINT64_MAX };
	static const uint32_t ns[] = { 0, 1, 10, 32, 65535, 1048576, UINT32_MAX };
	static uint32_t us[PC_PROTO_MAX_LAT_N];
	char b[PC_PROTO_MAX_LINE + 2];
	unsigned differ = 0, tried = 0;
	uint64_t x = 88172645463325252ull;

	for (size_t i = 0; i < PC_ARRAY_SIZE(firsts); i++)
		for (size_t j = 0; j < PC_ARRAY_SIZE(ns); j++) {
			differ += !same_line(pc_msg_range(PC_MSG_SUBMIT, firsts[i], ns[j]), b,
					     pc_line_range(b, sizeof(b), PC_MSG_SUBMIT, firsts[i], ns[j]));
			differ += !same_line(pc_msg_range(PC_MSG_ACK, firsts[i], ns[j]), b,
					     pc_line_range(b, sizeof(b), PC_MSG_ACK, firsts[i], ns[j]));
			differ += !same_line(pc_msg_ack(firsts[i], ns[j], NULL), b,
					     pc_line_ack(b, sizeof(b), firsts[i], ns[j], NULL));
			if (firsts[i])
				for (unsigned op = PC_IO_FLUSH; op <= PC_IO_FUA; op <<= 1)
					differ += !same_line(pc_msg_io(op, firsts[i]), b,
							     pc_line_io(b, sizeof(b), op, firsts[i]));
			tried++;
		}
	/* latencies: every count up to the limit, values up to and past the clamp */
	for (uint32_t n = 1; n <= PC_PROTO_MAX_LAT_N; n++) {
		for (uint32_t k = 0; k < n; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			us[k] = k % 7 == 3 ? UINT32_MAX : k % 5 == 1 ? PC_PROTO_MAX_LAT_US : (uint32_t)(x % (k < 50 ? 1000 : 4000000000u));
		}
		differ += !same_line(pc_msg_ack(x % 100000000, n, us), b, pc_line_ack(b, sizeof(b), x % 100000000, n, us));
		tried++;
	}
	/* more than the limit: a plain ACK, as pc_msg_ack */
	differ += !same_line(pc_msg_ack(5, PC_PROTO_MAX_LAT_N + 1, us), b,
			     pc_line_ack(b, sizeof(b), 5, PC_PROTO_MAX_LAT_N + 1, us));
	CU_ASSERT_EQUAL(differ, 0);
	CU_ASSERT(tried > 300);
	/* what parses back */
	{
		struct pc_msg m;
		char err[256];
		int n = pc_line_ack(b, sizeof(b), 77, 3, (const uint32_t[]){ 5, 6, 7 });

		CU_ASSERT_FATAL(n > 0);
		b[n - 1] = 0;
		CU_ASSERT_EQUAL_FATAL(pc_msg_parse(b, (size_t)n - 1, &m, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(m.type, PC_MSG_ACK);
		pc_msg_clear(&m);
	}
	/* too small a buffer, a bad IO */
	CU_ASSERT_EQUAL(pc_line_range(b, 40, PC_MSG_SUBMIT, 1, 1), -E2BIG);
	CU_ASSERT_EQUAL(pc_line_ack(b, 200, 1, 256, us), -E2BIG);
	CU_ASSERT_EQUAL(pc_line_range(b, sizeof(b), PC_MSG_TYPE_MAX, 1, 1), -E2BIG);
	CU_ASSERT_EQUAL(pc_line_io(b, sizeof(b), 3, 1), -EINVAL);
	CU_ASSERT_EQUAL(pc_line_io(b, sizeof(b), PC_IO_FUA, 0), -EINVAL);
}

int suite_proto(void)
{
	static const struct pc_test tests[] = {
		{ "valid line of every type", test_valid_every_type },
		{ "valid lines decode", test_valid_decoded },
		{ "invalid fields of every type", test_invalid_fields },
		{ "framing, marker, CRLF, broken JSON", test_framing },
		{ "line length limit", test_line_limit },
		{ "NUL bytes", test_nul_byte },
		{ "random garbage never crashes", test_random_garbage },
		{ "build submit/ack", test_build_range },
		{ "build work/verify", test_build_work_verify },
		{ "build io, work announce", test_build_io },
		{ "build runs", test_build_runs },
		{ "build slot", test_build_slot },
		{ "build error/hello, type names", test_build_error_hello },
		{ "pc_msg_line limit", test_msg_line_limit },
		{ "whole slot too big for a line", test_msg_line_slot_too_big },
		{ "runs and raw limits", test_runs_slot_limits },
		{ "clear and json helpers", test_clear_and_helpers },
		{ "linebuf split lines", test_linebuf_split },
		{ "linebuf over-long lines", test_linebuf_overflow },
		{ "base64", test_base64 },
		{ "verify ranges: pos + n at the limits", test_verify_range_limits },
		{ "the writer's lines without json-c are json-c's", test_writer_lines },
	};

	return pc_test_suite("proto", tests, PC_ARRAY_SIZE(tests));
}

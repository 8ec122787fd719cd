/*
 * fuzz_proto.c - the protocol line reader and parser (common/proto.c).
 *
 * The input is a byte stream as it comes off a socket or a serial console.
 * pc_linebuf cuts it into lines twice, once fed as fast as it takes bytes
 * and once in small chunks whose sizes the input picks: both must give the
 * same lines. pc_msg_parse validates each line. A message that parses must
 * survive a round trip through its builder (pc_msg_range, _work, _verify*,
 * _runs, _slot): written as a line and parsed again, it says the same. The
 * whole input is also parsed as one line (length and NUL checks), and
 * decoded as base64, whose accepted texts must be canonical. And it is read
 * as a board's console log, as the host does at a boot timeout.
 */
#include <errno.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/proto.h"
#include "common/util.h"
#include "harness/campaign/campaign_setup.h"
#include "tests/fuzz/fuzz.h"

/* A stream this long holds many lines; longer ones teach the fuzzer nothing new. */
#define FUZZ_MAX_INPUT (64u << 10)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pc_log_init("fuzz-proto", PC_LOG_ERR);
	return 0;
}

static void same_sect(const struct pc_sect_report *a, const struct pc_sect_report *b)
{
	FUZZ_CHECK(a->idx == b->idx && a->kind == b->kind, "sector %u: kind %d became %u/%d",
		   a->idx, a->kind, b->idx, b->kind);
	switch (a->kind) {
	case PC_SK_VALID:
		FUZZ_CHECK(a->seq == b->seq && a->cycle == b->cycle && a->flags == b->flags &&
			   a->lba == b->lba && a->hidx == b->hidx, "sector %u: header fields changed", a->idx);
		break;
	case PC_SK_RAW:
		FUZZ_CHECK(memcmp(a->raw, b->raw, sizeof(a->raw)) == 0, "sector %u: raw bytes changed", a->idx);
		break;
	default:
		FUZZ_CHECK(a->value == b->value, "sector %u: value %u became %u", a->idx, a->value, b->value);
		break;
	}
}

/* Rebuild m with its builder, serialise, parse again, compare. */
static void round_trip(const struct pc_msg *m)
{
	static char line[PC_PROTO_MAX_LINE + 2];
	json_object *o = NULL;
	struct pc_msg m2;
	char err[256];
	int len, ret;

	switch (m->type) {
	case PC_MSG_SUBMIT:
	case PC_MSG_ACK:
		o = pc_msg_range(m->type, m->u.range.first, m->u.range.n);
		break;
	case PC_MSG_WORK:
		o = pc_msg_work(&m->u.work);
		break;
	case PC_MSG_VERIFY:
		o = m->u.verify.full ? pc_msg_verify(m->u.verify.pattern, 1)
				     : pc_msg_verify_ranges(m->u.verify.pattern, m->u.verify.ranges,
							    m->u.verify.nranges);
		break;
	case PC_MSG_RUNS:
		o = pc_msg_runs(m->u.runs.runs, m->u.runs.nruns);
		break;
	case PC_MSG_SLOT:
		o = pc_msg_slot(&m->u.slot);
		break;
	default:
		return;	/* no builder takes the parsed form */
	}
	FUZZ_CHECK(o != NULL, "the builder of a %s message failed", pc_msg_type_name(m->type));
	len = pc_msg_line(o, line, sizeof(line));
	json_object_put(o);
	if (len == -E2BIG)
		return;	/* the builder's text may be longer than a compact input: not an error */
	FUZZ_CHECK(len > 0 && line[len - 1] == '\n', "pc_msg_line returned %d", len);
	ret = pc_msg_parse(line, (size_t)len - 1, &m2, err, sizeof(err));
	FUZZ_CHECK(ret == 0, "a rebuilt %s message does not parse: %s: %.*s", pc_msg_type_name(m->type), err,
		   len - 1, line);
	FUZZ_CHECK(m2.type == m->type, "type %d became %d", m->type, m2.type);
	switch (m->type) {
	case PC_MSG_SUBMIT:
	case PC_MSG_ACK:
		FUZZ_CHECK(m2.u.range.first == m->u.range.first && m2.u.range.n == m->u.range.n, "range changed");
		break;
	case PC_MSG_WORK:
		FUZZ_CHECK(memcmp(&m2.u.work, &m->u.work, sizeof(m->u.work)) == 0, "work changed");
		break;
	case PC_MSG_VERIFY:
		FUZZ_CHECK(m2.u.verify.pattern == m->u.verify.pattern && m2.u.verify.full == m->u.verify.full &&
			   m2.u.verify.nranges == m->u.verify.nranges, "verify changed");
		for (uint32_t i = 0; i < m->u.verify.nranges; i++)
			FUZZ_CHECK(m2.u.verify.ranges[i].pos == m->u.verify.ranges[i].pos &&
				   m2.u.verify.ranges[i].n == m->u.verify.ranges[i].n, "verify range %u changed", i);
		break;
	case PC_MSG_RUNS:
		FUZZ_CHECK(m2.u.runs.nruns == m->u.runs.nruns, "%u runs became %u", m->u.runs.nruns,
			   m2.u.runs.nruns);
		for (uint32_t i = 0; i < m->u.runs.nruns; i++) {
			const struct pc_run *a = &m->u.runs.runs[i], *b = &m2.u.runs.runs[i];
			FUZZ_CHECK(a->pos == b->pos && a->n == b->n && a->seq == b->seq && a->cycle == b->cycle &&
				   a->flags == b->flags, "run %u changed", i);
		}
		break;
	case PC_MSG_SLOT:
		FUZZ_CHECK(m2.u.slot.slot == m->u.slot.slot && m2.u.slot.nsect == m->u.slot.nsect,
			   "slot %u with %u sectors became slot %u with %u", m->u.slot.slot, m->u.slot.nsect,
			   m2.u.slot.slot, m2.u.slot.nsect);
		for (uint32_t i = 0; i < m->u.slot.nsect; i++)
			same_sect(&m->u.slot.sect[i], &m2.u.slot.sect[i]);
		break;
	default:
		break;
	}
	pc_msg_clear(&m2);
}

static void parse_line(const char *line, size_t len)
{
	struct pc_msg m;
	char err[512];
	int ret = pc_msg_parse(line, len, &m, err, sizeof(err));

	if (ret == 0) {
		FUZZ_CHECK(m.type < PC_MSG_TYPE_MAX && m.obj, "a parsed message without type or object");
		round_trip(&m);
		pc_msg_clear(&m);
	} else {
		FUZZ_CHECK(ret == -EINVAL || ret == -ENOMEM, "pc_msg_parse returned %d", ret);
		FUZZ_CHECK(err[0] != 0, "refused without a reason");
		FUZZ_CHECK(m.obj == NULL, "a refused message kept its object");
	}
}

/*
 * Read the stream through a pc_linebuf, chunk sizes from chunk() (0: as much
 * as it takes). Returns a digest of the lines and results it took, so two
 * chunkings can be compared; parses each line when parse is set.
 */
static uint32_t read_stream(const uint8_t *data, size_t size, const uint8_t *chunks, size_t nchunks, int parse)
{
	static struct pc_linebuf lb;
	static char line[PC_PROTO_MAX_LINE + 2];
	uint32_t digest = 0;
	size_t off = 0, ci = 0, stuck = 0;

	memset(&lb, 0, sizeof(lb));
	for (;;) {
		enum pc_line_result r;
		size_t len = 0, want, took;

		while ((r = pc_linebuf_take(&lb, line, sizeof(line), &len)) != PC_LINE_NONE) {
			uint8_t kind = (uint8_t)r;

			/* (the length a too-long line is reported with depends on the reads) */
			digest = pc_crc32c(digest, &kind, 1);
			if (r == PC_LINE_OK) {
				digest = pc_crc32c(digest, &len, sizeof(len));
				FUZZ_CHECK(len <= PC_PROTO_MAX_LINE && strlen(line) <= len, "line of %zu bytes", len);
				digest = pc_crc32c(digest, line, len);
				if (parse)
					parse_line(line, len);
			}
			stuck = 0;
		}
		if (off == size)
			break;
		want = size - off;
		if (nchunks) {
			size_t c = (size_t)chunks[ci++ % nchunks] % 97 + 1;
			if (want > c)
				want = c;
		}
		took = pc_linebuf_feed(&lb, (const char *)data + off, want);
		FUZZ_CHECK(took <= want, "fed %zu bytes, it took %zu", want, took);
		off += took;
		stuck = took ? 0 : stuck + 1;
		FUZZ_CHECK(stuck < 3, "the line reader takes no bytes and yields no line (%zu held)", lb.len);
	}
	/* what is left is a line without its newline: the caller would wait for more */
	FUZZ_CHECK(lb.len <= sizeof(lb.buf), "held %zu bytes", lb.len);
	return digest;
}

static void b64(const uint8_t *data, size_t size)
{
	static char text[2048 + 1], again[2048 + 1];
	static uint8_t bytes[1536];
	size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1, got = 0;

	memcpy(text, data, n);
	text[n] = 0;
	if (pc_b64_decode(text, bytes, sizeof(bytes), &got) == 0) {
		FUZZ_CHECK(got <= sizeof(bytes), "decoded %zu bytes", got);
		pc_b64_encode(bytes, got, again);
		FUZZ_CHECK(strcmp(text, again) == 0, "accepted base64 that is not canonical: %s (canonical %s)", text,
			   again);
	}
}

static int printable_str(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return 0;
	return 1;
}

/* The stream as a board's console log the host reads at a boot timeout
 * (harness/campaign/campaign_setup.c): what it takes from it is printable and bounded,
 * and an agent's reason comes only from a marked line. */
static void console_log(const uint8_t *data, size_t size)
{
	struct camp_console_facts f;

	camp_console_inspect((const char *)data, size, "b1", &f);
	FUZZ_CHECK(printable_str(f.cause, sizeof(f.cause)) && printable_str(f.reason, sizeof(f.reason)) &&
		   printable_str(f.kernel, sizeof(f.kernel)), "a console finding that is not printable text");
	FUZZ_CHECK(!f.cause[0] || memmem(data, size, PC_PROTO_MARKER, strlen(PC_PROTO_MARKER)),
		   "an agent's reason from a console without a marked line");
	FUZZ_CHECK(!f.cause[0] == !f.reason[0], "a cause without a reason, or the reverse");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t d1, d2;

	if (size > FUZZ_MAX_INPUT)
		return -1;
	d1 = read_stream(data, size, NULL, 0, 1);
	/* chunk sizes from the input's own bytes: a stream cut anywhere reads the same */
	d2 = read_stream(data, size, size ? data : (const uint8_t *)"\1", size ? size : 1, 0);
	FUZZ_CHECK(d1 == d2, "the lines depend on how the stream was cut into reads");
	/* the whole input as one line, as a datagram-sized read would give it */
	parse_line((const char *)data, size);
	b64(data, size);
	console_log(data, size);
	return 0;
}

/*
 * test_link.c - the host's side of a board link (harness/link/board.c): a
 * board whose link reads slowly still gets every line, in order, tagged. The
 * link is made as its owner makes it, with no campaign: its name, the key,
 * and ops that are not called here.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "harness/link/board.h"
#include "harness/link/outq.h"
#include "harness/link/reject.h"
#include "tests/unit/suites.h"

static const char hn[] = "00112233445566778899aabbccddeeff";
static const char an[] = "ffeeddccbbaa99887766554433221100";

/* The largest burst a VERIFY can follow: every KNOWN line the protocol allows. */
#define SLOT_LINES (PC_PROTO_MAX_KNOWN_SLOTS / PC_PROTO_KNOWN_SLOTS_PER_LINE)
#define SECTOR_LINES (PC_PROTO_MAX_KNOWN / PC_PROTO_KNOWN_PER_LINE)

struct fixture {
	int sv[2];		/* [0] the host's end (non-blocking), [1] the agent's */
	struct pc_auth_key key;
	struct link_board *l;
	struct pc_auth_session agent;
};

/* The owner's ops: nothing arrives from the agent in these tests. */
static void no_msg(void *o, struct pc_msg *m, json_object *raw)
{
	CU_FAIL("a line from the agent");
}

static void no_closed(void *o)
{
	CU_FAIL("the link closed");
}

static void no_said(void *o, json_object *msg, const char *via)
{
	CU_FAIL("a setup_error");
}

static void no_infra(void *o, const char *why)
{
	CU_FAIL("an infrastructure error");
}

static json_object *no_ev_new(void *o, enum link_event kind)
{
	CU_FAIL("an event");
	return json_object_new_object();
}

static void no_ev_log(void *o, json_object *ev)
{
	json_object_put(ev);
}

static void no_reject(void *o, int attempt, const char *peer, const char *line, size_t len, const char *why)
{
	CU_FAIL("a refusal");
}

static const struct link_board_ops no_ops = {
	.hello = no_msg,
	.msg = no_msg,
	.closed = no_closed,
	.agent_said = no_said,
	.infra = no_infra,
	.ev_new = no_ev_new,
	.ev_log = no_ev_log,
	.reject = no_reject,
};

static int fixture_open(struct fixture *f)
{
	int small = 4096;

	memset(f, 0, sizeof(*f));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->sv) < 0)
		return -1;
	/* small buffers, as a serial console or a slow board has */
	setsockopt(f->sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(f->sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	fcntl(f->sv[0], F_SETFL, fcntl(f->sv[0], F_GETFL) | O_NONBLOCK);
	memset(f->key.k, 7, sizeof(f->key.k));
	f->l = link_board_new(&(struct link_board_cfg){ .name = "slow", .serial_device = "", .key = &f->key }, &no_ops,
			      f);
	if (!f->l)
		return -1;
	link_board_set_phase(f->l, LINK_PHASE_HELLO);
	link_board_attach(f->l, f->sv[0], hn, an);
	pc_auth_session_init(&f->agent, &f->key, hn, an, 0);
	return 0;
}

static void fixture_close(struct fixture *f)
{
	link_board_close(f->l);	/* closes sv[0], frees the queue */
	link_board_free(f->l);
	close(f->sv[1]);
}

/* Send the whole KNOWN burst, then VERIFY, while the agent reads nothing. */
static int send_burst(struct fixture *f)
{
	struct pc_known_slot ks[PC_PROTO_KNOWN_SLOTS_PER_LINE];
	struct pc_known k[PC_PROTO_KNOWN_PER_LINE];
	int sent = 0;

	for (uint32_t i = 0; i < PC_PROTO_KNOWN_SLOTS_PER_LINE; i++)
		ks[i] = (struct pc_known_slot){ .slot = i * 7, .digest = pc_mix64(i) };
	for (uint32_t i = 0; i < PC_PROTO_KNOWN_PER_LINE; i++)
		k[i] = (struct pc_known){ .slot = i * 3, .idx = (uint16_t)(i % 8), .crc = (uint32_t)pc_mix64(i + 99) };
	for (int i = 0; i < SLOT_LINES + SECTOR_LINES + 1; i++) {
		json_object *m = i < SLOT_LINES ? pc_msg_known_slots(ks, PC_PROTO_KNOWN_SLOTS_PER_LINE) :
				 i < SLOT_LINES + SECTOR_LINES ? pc_msg_known(k, PC_PROTO_KNOWN_PER_LINE) :
				 pc_msg_verify(PC_PAT_SEQUENTIAL, 1);
		int ret = link_board_send(f->l, m);

		json_object_put(m);
		CU_ASSERT_EQUAL(ret, 0);
		if (ret) {
			fprintf(stderr, "\n  line %d of %d: link_board_send: %s\n", i + 1, SLOT_LINES + SECTOR_LINES + 1,
				strerror(-ret));
			return sent;
		}
		sent++;
	}
	return sent;
}

/*
 * The agent reads slowly (1 KiB at a time); the host flushes its queue when
 * its end is writable, as the campaign's poll loop does. Every line must
 * verify in order; the last must be the VERIFY. Returns the lines read.
 */
static int drain(struct fixture *f, int *verify_last)
{
	static struct pc_linebuf lb;
	char data[1024], line[PC_PROTO_MAX_LINE + 2], why[256];
	int lines = 0, idle = 0;

	memset(&lb, 0, sizeof(lb));
	*verify_last = 0;
	while (idle < 50) {
		struct pollfd p[2] = { { .fd = link_board_wants_out(f->l), .events = POLLOUT },
				       { .fd = f->sv[1], .events = POLLIN } };
		ssize_t n;
		size_t len;

		if (poll(p, 2, 100) <= 0) {
			idle++;
			continue;
		}
		if (p[0].revents & POLLOUT)
			link_board_flush(f->l);
		n = (p[1].revents & POLLIN) ? read(f->sv[1], data, sizeof(data)) : 0;
		if (n <= 0) {
			idle++;
			continue;
		}
		idle = 0;
		for (size_t off = 0; off < (size_t)n;) {
			enum pc_line_result r;

			off += pc_linebuf_feed(&lb, data + off, (size_t)n - off);
			while ((r = pc_linebuf_take(&lb, line, sizeof(line), &len)) != PC_LINE_NONE) {
				struct pc_msg m;

				CU_ASSERT_EQUAL(r, PC_LINE_OK);
				if (pc_auth_open(&f->agent, line, len, why, sizeof(why))) {
					CU_FAIL("a line does not verify");
					fprintf(stderr, "\n  line %d: %s\n", lines + 1, why);
					return lines;
				}
				lines++;
				*verify_last = 0;
				if (!pc_msg_parse(line, len, &m, why, sizeof(why))) {
					*verify_last = m.type == PC_MSG_VERIFY;
					pc_msg_clear(&m);
				}
			}
		}
	}
	return lines;
}

static void test_slow_reader(void)
{
	struct fixture f;
	int sent, got, verify_last;

	CU_ASSERT_FATAL(fixture_open(&f) == 0);
	sent = send_burst(&f);
	got = drain(&f, &verify_last);
	CU_ASSERT_EQUAL(sent, SLOT_LINES + SECTOR_LINES + 1);
	CU_ASSERT_EQUAL(got, SLOT_LINES + SECTOR_LINES + 1);
	CU_ASSERT(verify_last);
	fixture_close(&f);
}

/* An agent that never reads: the queue stops at its ceiling, and the
 * refusal names the board and the ceiling. */
static void test_ceiling(void)
{
	struct pc_known_slot ks[PC_PROTO_KNOWN_SLOTS_PER_LINE];
	struct fixture f;
	json_object *m;
	int ret = 0, lines = 0;
	const char *why;

	CU_ASSERT_FATAL(fixture_open(&f) == 0);
	for (uint32_t i = 0; i < PC_PROTO_KNOWN_SLOTS_PER_LINE; i++)
		ks[i] = (struct pc_known_slot){ .slot = i, .digest = pc_mix64(i) };
	m = pc_msg_known_slots(ks, PC_PROTO_KNOWN_SLOTS_PER_LINE);
	while (!ret && lines < 2000) {
		ret = link_board_send(f.l, m);
		lines++;
	}
	json_object_put(m);
	CU_ASSERT_EQUAL(ret, -ENOBUFS);
	CU_ASSERT(lines > 200);	/* the largest real burst fits */
	CU_ASSERT(link_board_queued(f.l) <= LINK_OUTQ_MAX);
	why = link_board_strerror(f.l, ENOBUFS);
	CU_ASSERT(strstr(why, "board slow") && strstr(why, "ceiling"));
	/* a link closed drops what waited: nothing of it reaches the next */
	link_board_close(f.l);
	CU_ASSERT_EQUAL(link_board_wants_out(f.l), -1);
	link_board_free(f.l);
	close(f.sv[1]);
}

/* What link_rej_record and link_rej_tick hand their owner to write. */
struct rej_out {
	int whole, summaries;
	long refused;
	char last[512];
};

static void rej_out(json_object *ev, void *arg)
{
	struct rej_out *o = arg;
	json_object *v;

	snprintf(o->last, sizeof(o->last), "%s", json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN));
	if (json_object_object_get_ex(ev, "refused", &v)) {
		o->summaries++;
		o->refused += json_object_get_int64(v);
	} else {
		o->whole++;
	}
}

/* A flood from one address: the first few refusals whole (the event as the
 * record has it), the rest counted and summarised when the interval ends. */
static void test_refusals(void)
{
	static struct link_rejects rej;
	struct rej_out o = { 0 };
	int stop = 0;

	memset(&rej, 0, sizeof(rej));
	for (int i = 0; i < LINK_REJ_WHOLE + 7; i++)
		link_rej_record(&rej,
				&(struct link_rej_what){ .t = 100 + i, .board = "b1", .cycle = 3, .peer = "10.0.0.9:4242",
							 .line = "{\"type\":\"hello\"}\x1b", .len = 17,
							 .why = "a proof that answers none of the challenges sent" },
				&stop, rej_out, &o);
	CU_ASSERT_EQUAL(o.whole, LINK_REJ_WHOLE);
	CU_ASSERT_EQUAL(o.summaries, 0);
	CU_ASSERT_STRING_EQUAL(o.last, "{\"t\":104,\"board\":\"b1\",\"cycle\":3,\"ev\":\"link_reject\",\"peer\":"
				       "\"10.0.0.9:4242\",\"reason\":\"a proof that answers none of the challenges "
				       "sent\",\"line\":\"{\\\"type\\\":\\\"hello\\\"}?\"}");
	link_rej_tick(&rej, 200, 0, &stop, rej_out, &o);	/* the interval goes on */
	CU_ASSERT_EQUAL(o.summaries, 0);
	link_rej_tick(&rej, 200, 1, &stop, rej_out, &o);	/* the run ends */
	CU_ASSERT_EQUAL(o.summaries, 1);
	CU_ASSERT_EQUAL(o.refused, 7);
	CU_ASSERT(strstr(o.last, "\"peer\":\"10.0.0.9\"") != NULL);
}

int suite_link(void)
{
	static const struct pc_test tests[] = {
		{ "slow reader: a VERIFY after the largest KNOWN burst arrives whole, in order", test_slow_reader },
		{ "an agent that never reads: the output queue stops at its ceiling, naming the board", test_ceiling },
		{ "refusals from one address: the first few whole, the rest in one summary", test_refusals },
	};

	return pc_test_suite("link", tests, PC_ARRAY_SIZE(tests));
}

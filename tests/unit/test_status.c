/*
 * test_status.c - the pure parts of `powercut status` and of the run's
 * progress: the line scanner (top-level members without building JSON, on
 * whole, cut and hostile lines), integer and string values, the board
 * states from events, h:mm, a board's progress line; status_run() on small
 * folders read with small limits (the tail that grows, a long line) and a
 * live run's ETA.
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <json-c/json.h>

#include "harness/campaign/progress.h"
#include "harness/cli/status.h"
#include "harness/cli/status_scan.h"
#include "harness/results/verdict.h"

static const char *const ev_keys[] = { "t", "board", "cycle", "ev", "msg" };

static int span_is(const struct status_span *s, enum status_vtype type, const char *text)
{
	return s->type == type && s->n == strlen(text) && !memcmp(s->p, text, s->n);
}

static void test_scan_members(void)
{
	const char *l = "{\"t\":2105,\"board\":\"honest-1\",\"cycle\":1,\"ev\":\"rx\",\"msg\":{\"type\":\"hello\","
			"\"x\":[1,{\"t\":9}],\"s\":\"}]\\\"{\"},\"extra\":null}";
	struct status_span v[5], m[1];
	static const char *const mk[] = { "type" };
	uint64_t u;

	CU_ASSERT_EQUAL(status_scan(l, strlen(l), 0, ev_keys, 5, v), 0);
	CU_ASSERT(span_is(&v[0], ST_V_NUMBER, "2105"));
	CU_ASSERT(span_is(&v[1], ST_V_STRING, "honest-1"));
	CU_ASSERT(span_is(&v[3], ST_V_STRING, "rx"));
	CU_ASSERT_EQUAL(v[4].type, ST_V_OBJECT);
	/* the nested "t" is not the top-level one */
	CU_ASSERT(!status_span_u64(&v[0], UINT64_MAX, &u) && u == 2105);
	CU_ASSERT_EQUAL(status_scan(v[4].p, v[4].n, 0, mk, 1, m), 0);
	CU_ASSERT(span_is(&m[0], ST_V_STRING, "hello"));
	/* absent keys, whitespace, an empty object */
	CU_ASSERT_EQUAL(status_scan(" { \"a\" : true , \"b\":false }\r", 27, 0, ev_keys, 5, v), 0);
	CU_ASSERT_EQUAL(v[0].type, ST_V_ABSENT);
	CU_ASSERT_EQUAL(status_scan("{}", 2, 0, ev_keys, 5, v), 0);
	/* a key twice: the last one, as json-c takes it */
	CU_ASSERT_EQUAL(status_scan("{\"t\":1,\"t\":2}", 13, 0, ev_keys, 1, v), 0);
	CU_ASSERT(span_is(&v[0], ST_V_NUMBER, "2"));
}

static void test_scan_bad(void)
{
	static const char *const bad[] = {
		"", "garbage line", "[1,2]", "\"s\"", "{\"t\":1", "{\"t\":1,}", "{\"t\" 1}", "{t:1}", "{\"t\":1}x",
		"{\"t\":tru}", "{\"t\":-}", "{\"t\":\"a\nb\"}", "{\"t\":1}}", "{\"a\":{\"b\":1}", "{\"t\":nul}",
	};
	struct status_span v[5];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(status_scan(bad[i], strlen(bad[i]), 0, ev_keys, 5, v), -EPROTO);
	/* a container closed by the other bracket is not one (a span goes from
	 * '[' to ']'); brackets inside are counted, not matched */
	CU_ASSERT_EQUAL(status_scan("{\"t\":[1}}", 9, 0, ev_keys, 5, v), -EPROTO);
	CU_ASSERT_EQUAL(status_scan("{\"t\":{\"a\":1]}", 13, 0, ev_keys, 5, v), -EPROTO);
	CU_ASSERT_EQUAL(status_scan("{\"t\":[{]]}", 10, 0, ev_keys, 5, v), 0);
	CU_ASSERT_EQUAL(v[0].type, ST_V_ARRAY);
	/* an embedded NUL is not a number character */
	CU_ASSERT_EQUAL(status_scan("{\"t\":1\0}", 8, 0, ev_keys, 5, v), -EPROTO);
}

static void test_scan_partial(void)
{
	const char *l = "{\"t\":7,\"board\":\"b1\",\"cycle\":3,\"ev\":\"rx\",\"msg\":{\"type\":\"runs\",\"runs\":[[1,2],[3";
	struct status_span v[5];

	/* a line cut at 1 MB: what came before the cut is there */
	CU_ASSERT_EQUAL(status_scan(l, strlen(l), 1, ev_keys, 5, v), 1);
	CU_ASSERT(span_is(&v[1], ST_V_STRING, "b1"));
	CU_ASSERT(span_is(&v[2], ST_V_NUMBER, "3"));
	CU_ASSERT_EQUAL(v[4].type, ST_V_ABSENT);
	CU_ASSERT_EQUAL(status_scan(l, strlen(l), 0, ev_keys, 5, v), -EPROTO);
	/* cut inside a number, a literal, a string, after a key */
	CU_ASSERT_EQUAL(status_scan("{\"t\":12", 7, 1, ev_keys, 5, v), 1);
	CU_ASSERT_EQUAL(v[0].type, ST_V_ABSENT);
	CU_ASSERT_EQUAL(status_scan("{\"t\":tr", 7, 1, ev_keys, 5, v), 1);
	CU_ASSERT_EQUAL(status_scan("{\"board\":\"b\\", 12, 1, ev_keys, 5, v), 1);
	CU_ASSERT_EQUAL(status_scan("{\"t\"", 4, 1, ev_keys, 5, v), 1);
	/* cut in the whitespace before the object */
	CU_ASSERT_EQUAL(status_scan("   ", 3, 1, ev_keys, 5, v), 1);
	CU_ASSERT_EQUAL(v[0].type, ST_V_ABSENT);
	CU_ASSERT_EQUAL(status_scan("   ", 3, 0, ev_keys, 5, v), -EPROTO);
	/* cut right after a minus: the number may go on */
	CU_ASSERT_EQUAL(status_scan("{\"t\":-", 6, 1, ev_keys, 5, v), 1);
	CU_ASSERT_EQUAL(status_scan("{\"t\":-", 6, 0, ev_keys, 5, v), -EPROTO);
	CU_ASSERT_EQUAL(status_scan("{\"t\":-x", 7, 1, ev_keys, 5, v), -EPROTO);
	/* malformed before the cut is still malformed */
	CU_ASSERT_EQUAL(status_scan("{\"t\":x", 6, 1, ev_keys, 5, v), -EPROTO);
}

static void test_scan_deep(void)
{
	size_t depth = 1000000, n = depth * 2 + 16;
	char *l = malloc(n);
	struct status_span v[5];
	size_t k = 0;

	CU_ASSERT_FATAL(l != NULL);
	k += (size_t)sprintf(l, "{\"msg\":");
	memset(l + k, '[', depth);
	k += depth;
	memset(l + k, ']', depth);
	k += depth;
	k += (size_t)sprintf(l + k, ",\"t\":5}");
	/* a million levels: skipped by counting, no recursion */
	CU_ASSERT_EQUAL(status_scan(l, k, 0, ev_keys, 5, v), 0);
	CU_ASSERT(span_is(&v[0], ST_V_NUMBER, "5"));
	CU_ASSERT_EQUAL(v[4].type, ST_V_ARRAY);
	free(l);
}

static void test_array(void)
{
	const char *l = "{\"findings\":[ {\"class\":\"lost_acked\",\"violation\":true} , 7 ,\"x\",[] ]}";
	static const char *const k[] = { "findings" };
	struct status_span v[1], el, bad = { ST_V_ARRAY, "[1,,2]", 6 }, empty = { ST_V_ARRAY, "[ ]", 3 };
	size_t pos = 0;
	int n = 0;

	CU_ASSERT_EQUAL(status_scan(l, strlen(l), 0, k, 1, v), 0);
	CU_ASSERT_EQUAL(v[0].type, ST_V_ARRAY);
	while (status_array_next(&v[0], &pos, &el) == 1)
		n++;
	CU_ASSERT_EQUAL(n, 4);
	pos = 0;
	CU_ASSERT_EQUAL(status_array_next(&v[0], &pos, &el), 1);
	CU_ASSERT_EQUAL(el.type, ST_V_OBJECT);
	pos = 0;
	CU_ASSERT_EQUAL(status_array_next(&empty, &pos, &el), 0);
	pos = 0;
	CU_ASSERT_EQUAL(status_array_next(&bad, &pos, &el), 1);
	CU_ASSERT_EQUAL(status_array_next(&bad, &pos, &el), -EPROTO);
}

static void test_values(void)
{
	struct status_span s = { ST_V_NUMBER, "18446744073709551615", 20 };
	uint64_t u;
	char buf[16];

	CU_ASSERT(!status_span_u64(&s, UINT64_MAX, &u) && u == UINT64_MAX);
	s = (struct status_span){ ST_V_NUMBER, "18446744073709551616", 20 };
	CU_ASSERT_EQUAL(status_span_u64(&s, UINT64_MAX, &u), -ERANGE);
	s = (struct status_span){ ST_V_NUMBER, "99999999999999999999999", 23 };
	CU_ASSERT_EQUAL(status_span_u64(&s, UINT64_MAX, &u), -ERANGE);
	s = (struct status_span){ ST_V_NUMBER, "101", 3 };
	CU_ASSERT_EQUAL(status_span_u64(&s, 100, &u), -ERANGE);
	CU_ASSERT(!status_span_u64(&s, 101, &u) && u == 101);
	/* a max below a digit (max - digit must not wrap) */
	s = (struct status_span){ ST_V_NUMBER, "7", 1 };
	CU_ASSERT_EQUAL(status_span_u64(&s, 5, &u), -ERANGE);
	CU_ASSERT_EQUAL(status_span_u64(&s, 0, &u), -ERANGE);
	CU_ASSERT(!status_span_u64(&s, 7, &u) && u == 7);
	s = (struct status_span){ ST_V_NUMBER, "15256", 5 };
	CU_ASSERT_EQUAL(status_span_u64(&s, 0, &u), -ERANGE);
	CU_ASSERT_EQUAL(status_span_u64(&s, 9, &u), -ERANGE);
	s = (struct status_span){ ST_V_NUMBER, "0", 1 };
	CU_ASSERT(!status_span_u64(&s, 0, &u) && u == 0);
	s = (struct status_span){ ST_V_NUMBER, "-1", 2 };
	CU_ASSERT_EQUAL(status_span_u64(&s, 100, &u), -EPROTO);
	s = (struct status_span){ ST_V_NUMBER, "1e3", 3 };
	CU_ASSERT_EQUAL(status_span_u64(&s, 100000, &u), -EPROTO);
	s = (struct status_span){ ST_V_STRING, "12", 2 };
	CU_ASSERT_EQUAL(status_span_u64(&s, 100, &u), -EPROTO);
	CU_ASSERT(!status_span_str(&s, buf, sizeof(buf)) && !strcmp(buf, "12"));
	s = (struct status_span){ ST_V_STRING, "a\\u001b", 7 };
	CU_ASSERT_EQUAL(status_span_str(&s, buf, sizeof(buf)), -EPROTO);
	s = (struct status_span){ ST_V_STRING, "\x1b[2J", 4 };
	CU_ASSERT_EQUAL(status_span_str(&s, buf, sizeof(buf)), -EPROTO);
	s = (struct status_span){ ST_V_STRING, "0123456789abcdef", 16 };
	CU_ASSERT_EQUAL(status_span_str(&s, buf, sizeof(buf)), -ERANGE);
}

static void test_states(void)
{
	CU_ASSERT_EQUAL(status_next_state(ST_UNKNOWN, PC_EV_POWER_ON, NULL, NULL), ST_BOOTING);
	CU_ASSERT_EQUAL(status_next_state(ST_BOOTING, PC_EV_RX, "hello", NULL), ST_VERIFYING);
	CU_ASSERT_EQUAL(status_next_state(ST_BOOTING, PC_EV_VERIFY, NULL, NULL), ST_VERIFYING);
	CU_ASSERT_EQUAL(status_next_state(ST_VERIFYING, PC_EV_RX, "scan_end", NULL), ST_VERIFYING);
	CU_ASSERT_EQUAL(status_next_state(ST_VERIFYING, PC_EV_WORK, NULL, NULL), ST_WRITING);
	CU_ASSERT_EQUAL(status_next_state(ST_WRITING, PC_EV_RX, "ack", NULL), ST_WRITING);
	CU_ASSERT_EQUAL(status_next_state(ST_VERIFYING, PC_EV_RX, "submit", NULL), ST_WRITING);
	CU_ASSERT_EQUAL(status_next_state(ST_WRITING, PC_EV_CUT, NULL, NULL), ST_OFF);
	CU_ASSERT_EQUAL(status_next_state(ST_BOOTING, PC_EV_BOOT_FAIL, NULL, NULL), ST_OFF);
	CU_ASSERT_EQUAL(status_next_state(ST_BOOTING, PC_EV_INFRA, NULL, NULL), ST_OFF);
	CU_ASSERT_EQUAL(status_next_state(ST_OFF, PC_EV_GIVE_UP, NULL, NULL), ST_GIVEN_UP);
	CU_ASSERT_EQUAL(status_next_state(ST_VERIFYING, PC_EV_FINAL_INFRA, NULL, NULL), ST_DONE);
	CU_ASSERT_EQUAL(status_next_state(ST_VERIFYING, PC_EV_RUN_END, NULL, "finished"), ST_DONE);
	CU_ASSERT_EQUAL(status_next_state(ST_GIVEN_UP, PC_EV_RUN_END, NULL, "given_up"), ST_GIVEN_UP);
	CU_ASSERT_EQUAL(status_next_state(ST_WRITING, PC_EV_RUN_END, NULL, "interrupted"), ST_OFF);
	/* the stop rules: the board is done, except at the disk floor (resumable) */
	CU_ASSERT_EQUAL(status_next_state(ST_OFF, PC_EV_RUN_END, NULL, "dead_device"), ST_DONE);
	CU_ASSERT_EQUAL(status_next_state(ST_VERIFYING, PC_EV_RUN_END, NULL, "first_fail"), ST_DONE);
	CU_ASSERT_EQUAL(status_next_state(ST_VERIFYING, PC_EV_RUN_END, NULL, "target_met"), ST_DONE);
	CU_ASSERT_EQUAL(status_next_state(ST_WRITING, PC_EV_RUN_END, NULL, "disk_floor"), ST_OFF);
	/* what says nothing of the state leaves it */
	CU_ASSERT_EQUAL(status_next_state(ST_WRITING, PC_EV_RX, "error", NULL), ST_WRITING);
	CU_ASSERT_EQUAL(status_next_state(ST_WRITING, PC_EV_RX, NULL, NULL), ST_WRITING);
	CU_ASSERT_EQUAL(status_next_state(ST_WRITING, PC_EV_RX_STRAY, NULL, NULL), ST_WRITING);
	CU_ASSERT_EQUAL(status_next_state(ST_BOOTING, PC_EV_LINK_REJECT, NULL, NULL), ST_BOOTING);
	CU_ASSERT_EQUAL(status_next_state(ST_OFF, -1, NULL, NULL), ST_OFF);
	CU_ASSERT_EQUAL(status_next_state(ST_OFF, PC_EV_RUN_END, NULL, "what"), ST_OFF);
	CU_ASSERT_STRING_EQUAL(status_bstate_names[ST_GIVEN_UP], "given up");
	CU_ASSERT_STRING_EQUAL(status_bstate_keys[ST_GIVEN_UP], "given_up");
}

static void test_hmm(void)
{
	char b[32];

	progress_hmm(-1, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "-");
	progress_hmm(0, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "0:00");
	progress_hmm(1, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "0:01");
	progress_hmm(60, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "0:01");
	progress_hmm(61, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "0:02");
	progress_hmm(3600 * 10 + 59 * 60, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "10:59");
	progress_hmm(1e300, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "1000000:00");
	progress_hmm(0.0 / 0.0, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "-");
}

static void test_progress_line(void)
{
	struct progress_board pb = { .name = "lying-1", .done = 26, .cycles = 120, .pass = 13, .fail = 12, .eta_s = 130 };
	char b[128];

	progress_board_line(&pb, 0, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "lying-1 26/120 PASS 13 FAIL 12 ETA 0:03");
	pb.boot = 1;
	pb.infra = 2;
	pb.eta_s = -1;
	progress_board_line(&pb, 9, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "lying-1   26/120 PASS 13 FAIL 12 BOOT_FAIL 1 INFRA_ERROR 2 ETA -");
	pb.given_up = 1;
	progress_board_line(&pb, 0, b, sizeof(b));
	CU_ASSERT(strstr(b, "given up") != NULL);
	pb.given_up = 0;
	pb.done = 120;
	progress_board_line(&pb, 0, b, sizeof(b));
	CU_ASSERT(strstr(b, " done") != NULL);
	/* a short buffer: cut, terminated, its length */
	CU_ASSERT_EQUAL(progress_board_line(&pb, 0, b, 8), 7u);
	CU_ASSERT_STRING_EQUAL(b, "lying-1");
}

/* ---- status_run() on a folder ---- */

static void put(const char *dir, const char *name, const char *text)
{
	char p[PATH_MAX + 32];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	fclose(f);
}

/* status_run(json) into a JSON document (to put), or NULL with *rc 1 */
static json_object *status_doc(const char *dir, const struct status_limits *lim, int *rc)
{
	char *out = NULL, err[1024];
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	json_object *doc;

	CU_ASSERT_FATAL(f != NULL);
	*rc = status_run(dir, 1, lim, f, err, sizeof(err));
	fclose(f);
	doc = *rc ? NULL : json_tokener_parse(out);
	free(out);
	return doc;
}

/* boards[i].key as a string ("" if absent) */
static const char *board_str(json_object *doc, size_t i, const char *key)
{
	json_object *bs, *v;

	if (!doc || !json_object_object_get_ex(doc, "boards", &bs) || !json_object_object_get_ex(
		    json_object_array_get_idx(bs, i), key, &v))
		return "";
	return json_object_get_string(v);
}

static const char campaign_b1_b2[] =
	"{\"config\":{\"campaign\":\"c\",\"cycles\":4,\"boards\":[{\"name\":\"b1\"},{\"name\":\"b2\"}]}}";

static void test_run_limits(void)
{
	const char *dir = pc_test_tmpdir("status-limits");
	struct status_limits lim = { .line_max = 64, .chunk = 7, .tail_first = 256, .tail_max = 256,
				     .campaign_max = 4096 };
	char ev[8192], *p = ev;
	json_object *doc, *v;
	int rc;

	/* b1 powered on once, long ago; then 60 lines of b2 (past any tail of 256 bytes) */
	p += sprintf(p, "{\"t\":1,\"board\":\"b1\",\"cycle\":1,\"ev\":\"power_on\"}\n");
	for (int i = 0; i < 60; i++)
		p += sprintf(p, "{\"t\":%d,\"board\":\"b2\",\"cycle\":1,\"ev\":\"verify\"}\n", 10 + i);
	put(dir, "events.jsonl", ev);
	put(dir, "campaign.json", campaign_b1_b2);
	/* a verdict line past line_max: seen as its first 64 bytes */
	put(dir, "verdicts.jsonl", "{\"board\":\"b2\",\"cycle\":1,\"verdict\":\"FAIL\",\"pad\":\""
				   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n");
	/* a tail that may not grow: b1's state is unknown */
	doc = status_doc(dir, &lim, &rc);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_STRING_EQUAL(board_str(doc, 0, "state"), "unknown");
	CU_ASSERT_STRING_EQUAL(board_str(doc, 1, "state"), "verifying");
	CU_ASSERT(doc && json_object_object_get_ex(doc, "events_exact", &v) && !json_object_get_boolean(v));
	CU_ASSERT(doc && json_object_object_get_ex(doc, "verdicts", &v) && json_object_get_int64(v) == 1);
	json_object_put(doc);
	/* one that grows (4x, to at most 4 KiB) finds b1's last event */
	lim.tail_max = 4096;
	doc = status_doc(dir, &lim, &rc);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_STRING_EQUAL(board_str(doc, 0, "state"), "booting");
	CU_ASSERT_STRING_EQUAL(board_str(doc, 0, "cycle"), "1");
	json_object_put(doc);
	/* a campaign.json past its limit is refused, naming it */
	lim.campaign_max = 16;
	CU_ASSERT_EQUAL(status_doc(dir, &lim, &rc), NULL);
	CU_ASSERT_EQUAL(rc, 1);
}

/* status_run(text) on dir: its return, and its error in err */
static int status_err(const char *dir, char *err, size_t len)
{
	FILE *f = fopen("/dev/null", "w");
	int rc;

	CU_ASSERT_FATAL(f != NULL);
	rc = status_run(dir, 0, NULL, f, err, len);
	fclose(f);
	return rc;
}

static void test_run_campaign(void)
{
	const char *dir = pc_test_tmpdir("status-campaign");
	char *c = malloc(65536), err[1024], *p;
	json_object *doc;
	int rc;

	CU_ASSERT_FATAL(c != NULL);
	put(dir, "events.jsonl", "");
	put(dir, "verdicts.jsonl", "");
	/* 256 boards, and what status does not read skipped unparsed */
	p = c + sprintf(c, "{\"x\":[[[{}]],\"}\"],\"config\":{\"campaign\":\"c\",\"cycles\":9,\"boards\":[");
	for (int i = 0; i < 256; i++)
		p += sprintf(p, "%s{\"relay\":{\"a\":[1,2]},\"name\":\"b%d\"}", i ? "," : "", i);
	strcpy(p, "]}}\n");
	put(dir, "campaign.json", c);
	doc = status_doc(dir, NULL, &rc);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_STRING_EQUAL(board_str(doc, 255, "board"), "b255");
	CU_ASSERT_STRING_EQUAL(board_str(doc, 0, "cycles"), "9");
	json_object_put(doc);
	/* 257: refused */
	strcpy(p, ",{\"name\":\"b256\"}]}}\n");
	put(dir, "campaign.json", c);
	CU_ASSERT_EQUAL(status_err(dir, err, sizeof(err)), 1);
	CU_ASSERT(strstr(err, "campaign.json: config.boards is not an array of 1 to 256 boards") != NULL);
	/* a name with an escape, no cycles, a cycles of 0, no boards, not an object */
	put(dir, "campaign.json", "{\"config\":{\"campaign\":\"c\",\"cycles\":1,\"boards\":[{\"name\":\"\\u001b\"}]}}");
	CU_ASSERT_EQUAL(status_err(dir, err, sizeof(err)), 1);
	CU_ASSERT(strstr(err, "config.boards[0].name is not a board name") != NULL);
	put(dir, "campaign.json", "{\"config\":{\"campaign\":\"c\",\"boards\":[{\"name\":\"b\"}]}}");
	CU_ASSERT_EQUAL(status_err(dir, err, sizeof(err)), 1);
	CU_ASSERT(strstr(err, "config.cycles is not an integer 1..") != NULL);
	put(dir, "campaign.json", "{\"config\":{\"campaign\":\"c\",\"cycles\":0,\"boards\":[{\"name\":\"b\"}]}}");
	CU_ASSERT_EQUAL(status_err(dir, err, sizeof(err)), 1);
	CU_ASSERT(strstr(err, "config.cycles is not an integer 1..") != NULL);
	put(dir, "campaign.json", "{\"config\":{\"campaign\":\"c\",\"cycles\":1,\"boards\":[]}}");
	CU_ASSERT_EQUAL(status_err(dir, err, sizeof(err)), 1);
	CU_ASSERT(strstr(err, "config.boards is not an array") != NULL);
	put(dir, "campaign.json", "[{\"config\":{}}]");
	CU_ASSERT_EQUAL(status_err(dir, err, sizeof(err)), 1);
	CU_ASSERT(strstr(err, "campaign.json: not a JSON object") != NULL);
	free(c);
}

static void test_run_eta(void)
{
	const char *dir = pc_test_tmpdir("status-eta");
	char lock[512], host[256] = "", p[PATH_MAX + 32];
	json_object *doc;
	int fd, rc;

	/* a live run (this process holds the lock, naming itself) whose
	 * board's cycles take 2^62 ms, with 10^7 cycles to go */
	put(dir, "events.jsonl",
	    "{\"t\":0,\"board\":\"b1\",\"cycle\":1,\"ev\":\"power_on\",\"cycles\":10000000}\n"
	    "{\"t\":4611686018427387903,\"board\":\"b1\",\"cycle\":2,\"ev\":\"power_on\",\"cycles\":10000000}\n");
	put(dir, "campaign.json", campaign_b1_b2);
	put(dir, "verdicts.jsonl", "");
	gethostname(host, sizeof(host) - 1);
	snprintf(lock, sizeof(lock), "{\"pid\":%ld,\"host\":\"%s\",\"started\":1}\n", (long)getpid(), host);
	put(dir, "lock", lock);
	snprintf(p, sizeof(p), "%s/lock", dir);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0 && flock(fd, LOCK_EX) == 0);
	doc = status_doc(dir, NULL, &rc);
	close(fd);
	CU_ASSERT_EQUAL(rc, 0);
	/* a million hours at most (it was INT64_MIN: a double past INT64_MAX converted) */
	CU_ASSERT_STRING_EQUAL(board_str(doc, 0, "eta_s"), "3600000000");
	CU_ASSERT_STRING_EQUAL(board_str(doc, 0, "eta"), "1000000:00");
	json_object_put(doc);
}

int suite_status(void)
{
	CU_pSuite s = CU_add_suite("status", NULL, NULL);

	if (!s || !CU_add_test(s, "scanner: top-level members", test_scan_members) ||
	    !CU_add_test(s, "scanner: malformed lines", test_scan_bad) ||
	    !CU_add_test(s, "scanner: lines cut short", test_scan_partial) ||
	    !CU_add_test(s, "scanner: deep nesting", test_scan_deep) ||
	    !CU_add_test(s, "arrays", test_array) ||
	    !CU_add_test(s, "integers and strings", test_values) ||
	    !CU_add_test(s, "board states from events", test_states) ||
	    !CU_add_test(s, "h:mm", test_hmm) ||
	    !CU_add_test(s, "a board's progress line", test_progress_line) ||
	    !CU_add_test(s, "status_run: small limits, a tail that grows, a long line", test_run_limits) ||
	    !CU_add_test(s, "status_run: campaign.json through the scanner", test_run_campaign) ||
	    !CU_add_test(s, "status_run: a live run's ETA is bounded", test_run_eta))
		return -1;
	return 0;
}

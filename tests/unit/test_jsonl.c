/*
 * test_jsonl.c - the one .jsonl reader (harness/results/jsonl.c): whole
 * lines only (a torn last line is never handed out), bounded lines (an error,
 * or status's truncation), UTF-8 checked with the file and line named,
 * strict JSON objects, ranges that start in the middle of a line, and the
 * same answers whatever the read chunk. And the writer's side: the first
 * failed write or sync of results.c is kept, and nothing is written after it.
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/results/jsonl.h"
#include "harness/results/results.h"

static char path[PATH_MAX];

static void put(const char *text, size_t len)
{
	FILE *f;

	snprintf(path, sizeof(path), "%s/t.jsonl", pc_test_tmpdir("jsonl"));
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fwrite(text, 1, len, f);
	fclose(f);
}

#define PUT(s) put(s, sizeof(s) - 1)

/* Read every object of the file: how many, and the reader's last answer
 * (1 never: 0 at the end, < 0 an error with j->err). */
static int objects(struct jsonl *j, unsigned *n)
{
	struct jsonl_line l;
	json_object *o;
	int ret;

	*n = 0;
	CU_ASSERT_EQUAL_FATAL(jsonl_open(j, path), 0);
	while ((ret = jsonl_next_object(j, &o, &l)) == 1) {
		json_object_put(o);
		(*n)++;
	}
	return ret;
}

static void test_lines(void)
{
	struct jsonl j;
	unsigned n;

	/* blank lines skipped, a torn last line never handed out */
	PUT("{\"a\":1}\n\n  \r\n{\"b\":[1,2]} \t\r\n{\"c\":");
	CU_ASSERT_EQUAL(objects(&j, &n), 0);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(j.torn, 1);
	CU_ASSERT_EQUAL(j.torn_text, 1);
	CU_ASSERT_EQUAL(j.lineno, 4);
	jsonl_close(&j);
	/* no torn line */
	PUT("{\"a\":1}\n");
	CU_ASSERT_EQUAL(objects(&j, &n), 0);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(j.torn, 0);
	jsonl_close(&j);
	/* a missing file */
	CU_ASSERT_EQUAL(jsonl_open(&j, "/nonexistent/x.jsonl"), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.err, "/nonexistent/x.jsonl: cannot read: No such file"));
	jsonl_close(&j);
}

static void test_grammar(void)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "{\"a\":1}\n{\"a\":tru}\n", "t.jsonl:2: not a JSON object" },
		{ "{\"a\":1} x\n", "t.jsonl:1: not a JSON object: data after the JSON object" },
		{ "[1,2]\n", "t.jsonl:1: not a JSON object: a JSON array, not an object" },
		{ "{\"a\":\"\x01\"}\n", "t.jsonl:1: a control character (0x01) at byte 7" },
		{ "{\"a\":1,}\n", "t.jsonl:1: not a JSON object" },
		{ "{\"a\":\n", "t.jsonl:1: not a JSON object: incomplete JSON object" },
		{ "{\"a\":1}/* c */\n", "t.jsonl:1: not a JSON object: data after the JSON object" },
	};
	struct jsonl j;
	unsigned n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(bad[i].text, strlen(bad[i].text));
		CU_ASSERT_EQUAL(objects(&j, &n), -EINVAL);
		if (!strstr(j.err, bad[i].why))
			fprintf(stderr, "\n  case %zu: %s\n", i, j.err);
		CU_ASSERT_PTR_NOT_NULL(strstr(j.err, bad[i].why));
		jsonl_close(&j);
	}
}

static void test_utf8(void)
{
	struct jsonl j;
	unsigned n;

	/* text is fine, escapes are fine */
	PUT("{\"a\":\"\xc2\xb5s \xe2\x82\xac \xf0\x9f\x98\x80 \\u0001\"}\n");
	CU_ASSERT_EQUAL(objects(&j, &n), 0);
	CU_ASSERT_EQUAL(n, 1);
	jsonl_close(&j);
	/* a byte that is no UTF-8, on line 2, at its byte 8 */
	PUT("{\"a\":1}\n{\"a\":\"x\xff\"}\n");
	CU_ASSERT_EQUAL(objects(&j, &n), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.err, "t.jsonl:2: an invalid byte at byte 8: not UTF-8 text"));
	jsonl_close(&j);
	/* a surrogate, an overlong '<', past U+10FFFF, cut short: all refused */
	PUT("{\"a\":\"\xed\xa0\x80\"}\n");
	CU_ASSERT_EQUAL(objects(&j, &n), -EINVAL);
	jsonl_close(&j);
	PUT("{\"a\":\"\xc0\xbc\"}\n");
	CU_ASSERT_EQUAL(objects(&j, &n), -EINVAL);
	jsonl_close(&j);
	PUT("{\"a\":\"\xf4\x90\x80\x80\"}\n");
	CU_ASSERT_EQUAL(objects(&j, &n), -EINVAL);
	jsonl_close(&j);
	PUT("{\"a\":\"\xe2\x82\"}\n");
	CU_ASSERT_EQUAL(objects(&j, &n), -EINVAL);
	jsonl_close(&j);
	/* a NUL byte (json-c would stop at it and see a whole object) */
	put("{\"a\":1}\0garbage\n", 16);
	CU_ASSERT_EQUAL(objects(&j, &n), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.err, "t.jsonl:1: a NUL byte at byte 8"));
	jsonl_close(&j);
	CU_ASSERT_EQUAL(jsonl_utf8_valid("ab\xe2\x82", 4, 1), 4);	/* cut by a truncation: fine */
	CU_ASSERT_EQUAL(jsonl_utf8_valid("ab\xe2\x82", 4, 0), 2);
}

/* The range [from, to) of the file, read with line_max and chunk: the
 * lines as "off:len:trunc|", joined. */
static const char *range(off_t from, off_t to, size_t line_max, size_t chunk, int *ret)
{
	static char out[1024];
	struct jsonl j;
	struct jsonl_line l;
	struct stat st;
	size_t n = 0;
	int fd = open(path, O_RDONLY);

	CU_ASSERT_FATAL(fd >= 0 && fstat(fd, &st) == 0);
	out[0] = 0;
	CU_ASSERT_EQUAL_FATAL(jsonl_open_fd(&j, fd, "t", from, to, st.st_size, line_max, chunk, 1), 0);
	while ((*ret = jsonl_next(&j, &l)) == 1 && n < sizeof(out) - 64)
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%lld:%zu:%d|", (long long)l.off, l.len, l.trunc);
	jsonl_close(&j);
	close(fd);
	return out;
}

static void test_ranges(void)
{
	int ret;

	/* lines at 0 (8 bytes), 9 (3), 13 (20), 34 (1), then a torn one */
	PUT("{\"a\":12}\n{ }\n{\"b\":\"0123456789ab\"}\n \n{\"c");
	for (size_t chunk = 1; chunk <= 64; chunk = chunk * 2 + 1) {
		CU_ASSERT_STRING_EQUAL(range(0, 40, 64, chunk, &ret), "0:8:0|9:3:0|13:20:0|34:1:0|");
		CU_ASSERT_EQUAL(ret, 0);
		/* from the middle of a line: that line is skipped; a line that starts at from is read */
		CU_ASSERT_STRING_EQUAL(range(5, 40, 64, chunk, &ret), "9:3:0|13:20:0|34:1:0|");
		CU_ASSERT_STRING_EQUAL(range(9, 40, 64, chunk, &ret), "9:3:0|13:20:0|34:1:0|");
		CU_ASSERT_STRING_EQUAL(range(10, 13, 64, chunk, &ret), "");
		CU_ASSERT_STRING_EQUAL(range(0, 10, 64, chunk, &ret), "0:8:0|9:3:0|");
		/* a line longer than line_max: its first line_max bytes, marked */
		CU_ASSERT_STRING_EQUAL(range(0, 40, 10, chunk, &ret), "0:8:0|9:3:0|13:10:1|34:1:0|");
	}
}

static void test_long_line(void)
{
	struct jsonl j;
	struct jsonl_line l;
	struct stat st;
	int fd;

	PUT("{\"a\":1}\n{\"b\":\"0123456789abcdef\"}\n");
	fd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0 && fstat(fd, &st) == 0);
	CU_ASSERT_EQUAL_FATAL(jsonl_open_fd(&j, fd, "t", 0, st.st_size, st.st_size, 16, 4, 0), 0);
	CU_ASSERT_EQUAL(jsonl_next(&j, &l), 1);
	CU_ASSERT_EQUAL(jsonl_next(&j, &l), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.err, "t:2: a line longer than 16 bytes"));
	jsonl_close(&j);
	close(fd);
}

/* results_each_line goes through the reader: the same grammar */
static int count_line(json_object *obj, unsigned lineno, void *arg)
{
	(void)obj;
	(*(unsigned *)arg)++;
	return lineno == 3 ? -EINVAL : 0;
}

static void test_each_line(void)
{
	char err[512] = "";
	unsigned n = 0;
	int torn = -1;

	PUT("{\"a\":1}\n\n{\"b\":2}\n{\"c\"");
	CU_ASSERT_EQUAL(results_each_line(path, count_line, &n, &torn, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "t.jsonl:3: rejected"));
	PUT("{\"a\":1}\n{\"b\":\"\xfe\"}\n");
	err[0] = 0;
	n = 0;
	CU_ASSERT_EQUAL(results_each_line(path, count_line, &n, &torn, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "t.jsonl:2: an invalid byte at byte 7"));
	PUT("{\"a\":1}\n{\"b\"");
	n = 0;
	CU_ASSERT_EQUAL(results_each_line(path, count_line, &n, &torn, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(torn, 1);
	CU_ASSERT_EQUAL(n, 1);
}

static json_object *one_line(const char *k)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, k, json_object_new_int(1));
	return o;
}

/* The writer (harness/results/writer.c): syncs on its thread, in order,
 * and a failed fdatasync is sticky (fsyncgate): every later call returns it
 * and writes nothing. fdatasync of a pipe fails (EINVAL): the events go
 * there. */
static void test_sync_sticky(void)
{
	char dir[PATH_MAX], note[256], err[512] = "", buf[256], vpath[PATH_MAX + 32];
	json_object *ev = one_line("e"), *v = one_line("v");
	struct results r;
	struct stat st;
	uint64_t seq;
	int p[2];
	ssize_t n;

	snprintf(dir, sizeof(dir), "%s", pc_test_tmpdir("results-sticky"));
	CU_ASSERT_EQUAL_FATAL(results_open(&r, dir, note, sizeof(note), err, sizeof(err)), 0);
	CU_ASSERT(results_fd(&r) >= 0);
	CU_ASSERT_EQUAL(results_event(&r, ev), 0);
	CU_ASSERT_EQUAL(results_verdict(&r, v), 0);
	seq = results_requested(&r);
	CU_ASSERT_EQUAL(seq, 1);
	CU_ASSERT_EQUAL(results_flush(&r), 0);
	CU_ASSERT(results_durable(&r, seq));
	CU_ASSERT_EQUAL(results_poll(&r), 0);
	CU_ASSERT_EQUAL(results_sync(&r), 0);	/* nothing written since: no request */
	CU_ASSERT_EQUAL(results_requested(&r), seq);
	CU_ASSERT_EQUAL_FATAL(pipe2(p, O_NONBLOCK), 0);
	close(r.ev_fd);
	r.ev_fd = p[1];
	CU_ASSERT_EQUAL(results_event(&r, ev), 0);
	CU_ASSERT_EQUAL(results_sync(&r), 0);	/* asked: the writer fails it */
	CU_ASSERT_EQUAL(results_flush(&r), -EINVAL);
	CU_ASSERT_EQUAL(results_poll(&r), -EINVAL);
	CU_ASSERT_EQUAL(r.failed, -EINVAL);
	CU_ASSERT(!results_durable(&r, seq));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.failure, "/events.jsonl: fdatasync failed: Invalid argument"));
	n = read(p[0], buf, sizeof(buf));
	CU_ASSERT_EQUAL(n, 8);	/* {"e":1} before the failure, as it was */
	/* after it: nothing written, nothing synced, the first failure kept */
	CU_ASSERT_EQUAL(results_event(&r, ev), -EINVAL);
	CU_ASSERT_EQUAL(results_verdict(&r, v), -EINVAL);
	CU_ASSERT_EQUAL(results_sync(&r), -EINVAL);
	CU_ASSERT_EQUAL(results_flush(&r), -EINVAL);
	CU_ASSERT_EQUAL(read(p[0], buf, sizeof(buf)), -1);
	snprintf(vpath, sizeof(vpath), "%s/verdicts.jsonl", dir);
	CU_ASSERT_EQUAL(stat(vpath, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 8);	/* the one verdict written before */
	results_close(&r);
	close(p[0]);
	/* a failed write of a verdict (here EBADF) is named too */
	CU_ASSERT_EQUAL_FATAL(results_open(&r, dir, note, sizeof(note), err, sizeof(err)), 0);
	close(r.v_fd);
	r.v_fd = open(vpath, O_RDONLY | O_CLOEXEC);
	CU_ASSERT_EQUAL(results_verdict(&r, v), 0);
	CU_ASSERT_EQUAL(results_flush(&r), -EBADF);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.failure, "/verdicts.jsonl: write failed: Bad file descriptor"));
	CU_ASSERT_EQUAL(results_event(&r, ev), -EBADF);
	results_close(&r);
	json_object_put(ev);
	json_object_put(v);
}

int suite_jsonl(void)
{
	CU_pSuite s = CU_add_suite("jsonl", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "whole lines, blank lines, a torn last line", test_lines) ||
	    !CU_add_test(s, "strict JSON objects, one a line", test_grammar) ||
	    !CU_add_test(s, "UTF-8 checked, file and line named", test_utf8) ||
	    !CU_add_test(s, "ranges and truncation, any chunk", test_ranges) ||
	    !CU_add_test(s, "a line too long is an error", test_long_line) ||
	    !CU_add_test(s, "results_each_line reads through it", test_each_line) ||
	    !CU_add_test(s, "the writer: syncs in order, a failure sticky and named", test_sync_sticky))
		return -1;
	return 0;
}

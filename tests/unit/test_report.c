/*
 * test_report.c - the per-device report from real verdicts.jsonl files:
 * counts per device and mode, results, merging of results directories, and
 * damaged files; INCOMPLETE devices (given up, too much INFRA_ERROR, cycles
 * left, a run still going or killed) and the result codes.
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"
#include "harness/report/qualify.h"
#include "harness/report/report.h"
#include "harness/results/results.h"

#define DEV_A "\"device\":{\"id\":\"mmc:PCSIM:aaaa\",\"name\":\"PCSIM\",\"manfid\":\"0x0000fe\",\"cid\":\"fe01aa\"}," \
	"\"queue\":{\"fua\":1,\"write_cache\":\"write back\"},\"kernel\":\"6.1.0-test\""
#define DEV_B "\"device\":{\"id\":\"mmc:PCSIM:bbbb\",\"name\":\"PCSIM\",\"manfid\":\"0x0000fe\"}," \
	"\"queue\":{\"fua\":0,\"write_cache\":\"write back\"}"
#define ZERO_COUNTS "\"counts\":{\"intact\":200,\"not_written\":0,\"lost_acked\":0,\"torn\":0,\"torn_sector\":0," \
	"\"corrupt\":0,\"misdirected\":0,\"stale\":0,\"collateral\":0,\"unreadable\":0},\"violations\":0,\"findings\":[]"

/* Host 1: honest-1 (device A) and lying-1 (device B). */
static const char host1[] =
	/* a boot failure before the device ever said who it is: it is still A's */
	"{\"campaign\":\"sim-quick\",\"board\":\"honest-1\",\"cycle\":1,\"verdict\":\"BOOT_FAIL\",\"mode\":null,"
	"\"reason\":\"no HELLO after 3 boots\"}\n"
	"{\"campaign\":\"sim-quick\",\"board\":\"honest-1\",\"cycle\":2,\"verdict\":\"PASS\",\"mode\":\"fua\","
	"\"mode_run\":\"fua\",\"pattern\":\"sequential\"," DEV_A ",\"records\":{\"first\":1,\"planned\":200,"
	"\"submitted\":200,\"acked\":200}," ZERO_COUNTS ",\"rate\":{\"records\":200,\"ms\":200,\"records_per_s\":1000.0},"
	"\"future_field\":{\"x\":[1,2]}}\n"
	"{\"campaign\":\"sim-quick\",\"board\":\"lying-1\",\"cycle\":2,\"verdict\":\"FAIL\",\"mode\":\"flush\","
	"\"mode_run\":\"flush\"," DEV_B ",\"counts\":{\"intact\":150,\"not_written\":44,\"lost_acked\":5,\"torn\":1},"
	"\"violations\":5,\"findings\":[{\"class\":\"lost_acked\",\"seq\":10,\"acked\":true,\"violation\":true},"
	"{\"class\":\"torn\",\"seq\":11,\"acked\":false,\"violation\":false}],"
	"\"rate\":{\"records_per_s\":5000}}\n"
	"\n"
	"{\"campaign\":\"sim-quick\",\"board\":\"honest-1\",\"cycle\":3,\"verdict\":\"PASS\",\"mode\":\"flush\","
	"\"mode_run\":\"flush\"," DEV_A "," ZERO_COUNTS ",\"rate\":{\"records_per_s\":3000.5}}\n"
	"{\"campaign\":\"sim-quick\",\"board\":\"lying-1\",\"cycle\":3,\"verdict\":\"PASS\",\"mode\":\"fua\","
	"\"mode_run\":\"fua+flush\"," DEV_B "," ZERO_COUNTS ",\"rate\":{\"records_per_s\":1500}}\n"
	"{\"campaign\":\"sim-quick\",\"board\":\"honest-1\",\"cycle\":4,\"verdict\":\"PASS\",\"mode\":\"fua\","
	"\"mode_run\":\"fua\"," DEV_A "," ZERO_COUNTS ",\"rate\":{\"records_per_s\":2000.0}}\n"
	"{\"campaign\":\"sim-quick\",\"board\":\"lying-1\",\"cycle\":4,\"verdict\":\"FAIL\",\"mode\":\"flush\","
	"\"mode_run\":\"flush\"," DEV_B ",\"counts\":{\"lost_acked\":2,\"torn\":1},\"violations\":3,"
	"\"findings\":[{\"class\":\"torn\",\"seq\":20,\"acked\":true,\"violation\":true}],"
	"\"rate\":{\"records_per_s\":7000}}\n"
	"{\"campaign\":\"sim-quick\",\"board\":\"honest-1\",\"cycle\":5,\"verdict\":\"INFRA_ERROR\","
	"\"reason\":\"relay timed out\"}\n"
	/* the harness was cut while writing this one */
	"{\"campaign\":\"sim-quick\",\"board\":\"lying-1\",\"cycle\":5,\"verd";

/* Host 2: the same part B in another lab's board, a part that only saw
 * infrastructure trouble, and a board whose part never booted at all. */
static const char host2[] =
	"{\"campaign\":\"lab2\",\"board\":\"lying-2\",\"cycle\":1,\"verdict\":\"PASS\",\"mode\":\"flush\","
	"\"mode_run\":\"flush\"," DEV_B "," ZERO_COUNTS "}\n"
	"{\"campaign\":\"lab2\",\"board\":\"z\",\"cycle\":1,\"verdict\":\"INFRA_ERROR\",\"mode\":null,"
	"\"device\":{\"id\":\"mmc:ZZ:1\"},\"reason\":\"link lost\"}\n"
	"{\"campaign\":\"lab2\",\"board\":\"ghost\",\"cycle\":1,\"verdict\":\"BOOT_FAIL\",\"reason\":\"dead\"}\n";

static char dir1[PATH_MAX], dir2[PATH_MAX];

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

static void make_dirs(void)
{
	if (dir1[0])
		return;
	snprintf(dir1, sizeof(dir1), "%s", pc_test_tmpdir("report"));
	CU_ASSERT_FATAL(strlen(dir1) + 8 < sizeof(dir2));
	memcpy(dir2, dir1, strlen(dir1));
	strcpy(dir2 + strlen(dir1), "/host2");
	CU_ASSERT_EQUAL_FATAL(pc_mkdir_p(dir2, 0755), 0);
	write_file(dir1, "verdicts.jsonl", host1);
	write_file(dir2, "verdicts.jsonl", host2);
}

static void unlink_file(const char *dir, const char *name)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

/* Run the report into a string. */
static int run(const char *const *dirs, int n, int json, char **text, char *err, size_t errlen)
{
	size_t len = 0;
	FILE *f = open_memstream(text, &len);
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	rc = report_print(dirs, n, f, json, err, errlen);
	fclose(f);
	return rc;
}

static json_object *device(json_object *doc, const char *id)
{
	json_object *devs, *v;

	if (!json_object_object_get_ex(doc, "devices", &devs))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(devs); i++) {
		json_object *d = json_object_array_get_idx(devs, i);

		json_object_object_get_ex(d, "id", &v);
		if ((!id && !v) || (id && v && strcmp(json_object_get_string(v), id) == 0))
			return d;
	}
	return NULL;
}

static json_object *mode(json_object *dev, const char *name)
{
	json_object *modes, *v;

	if (!dev || !json_object_object_get_ex(dev, "modes", &modes))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(modes); i++) {
		json_object *m = json_object_array_get_idx(modes, i);

		json_object_object_get_ex(m, "mode", &v);
		if ((!name && !v) || (name && v && strcmp(json_object_get_string(v), name) == 0))
			return m;
	}
	return NULL;
}

/* An integer at a dotted path ("violations_by_class.lost_acked"); -1 if absent. */
static long long num(json_object *o, const char *path)
{
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
		if (!o || !json_object_object_get_ex(o, k, &o))
			return -1;
	return o ? json_object_get_int64(o) : -1;
}

static const char *str(json_object *o, const char *key)
{
	json_object *v;

	return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : NULL;
}

static double rate(json_object *m)
{
	json_object *v;

	return m && json_object_object_get_ex(m, "rate", &m) && json_object_object_get_ex(m, "records_per_s", &v) && v ?
		json_object_get_double(v) : -1.0;
}

static void test_one_dir_json(void)
{
	const char *dirs[1];
	char err[512] = "", *text = NULL;
	json_object *doc, *a, *b, *m;

	make_dirs();
	dirs[0] = dir1;
	CU_ASSERT_EQUAL_FATAL(run(dirs, 1, 1, &text, err, sizeof(err)), 0);
	doc = json_tokener_parse(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	CU_ASSERT_EQUAL(num(doc, "torn_lines_ignored"), 1);
	CU_ASSERT_EQUAL(json_object_array_length(json_object_object_get(doc, "devices")), 2);

	a = device(doc, "mmc:PCSIM:aaaa");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_STRING_EQUAL(str(a, "result"), "BOOT_FAIL");
	CU_ASSERT_EQUAL(num(a, "cycles"), 5);
	CU_ASSERT_EQUAL(num(a, "verdicts.PASS"), 3);
	CU_ASSERT_EQUAL(num(a, "verdicts.FAIL"), 0);
	CU_ASSERT_EQUAL(num(a, "verdicts.BOOT_FAIL"), 1);
	CU_ASSERT_EQUAL(num(a, "verdicts.INFRA_ERROR"), 1);
	CU_ASSERT_STRING_EQUAL(str(json_object_object_get(a, "device"), "manfid"), "0x0000fe");
	CU_ASSERT_STRING_EQUAL(str(json_object_object_get(a, "queue"), "write_cache"), "write back");
	CU_ASSERT_STRING_EQUAL(str(json_object_object_get(a, "device"), "cid"), "fe01aa");
	m = mode(a, "fua");
	CU_ASSERT_EQUAL(num(m, "cycles"), 2);
	CU_ASSERT_EQUAL(num(m, "verdicts.PASS"), 2);
	CU_ASSERT_DOUBLE_EQUAL(rate(m), 1500.0, 1e-9);
	m = mode(a, "flush");
	CU_ASSERT_EQUAL(num(m, "verdicts.PASS"), 1);
	CU_ASSERT_DOUBLE_EQUAL(rate(m), 3000.5, 1e-9);
	/* boot and infra cycles wrote nothing: no mode */
	m = mode(a, NULL);
	CU_ASSERT_EQUAL(num(m, "verdicts.BOOT_FAIL"), 1);
	CU_ASSERT_EQUAL(num(m, "verdicts.INFRA_ERROR"), 1);
	CU_ASSERT_EQUAL(rate(m), -1.0);

	/* 1 INFRA_ERROR in 5 cycles is over the default 10%, but BOOT_FAIL stays */
	CU_ASSERT_EQUAL(json_object_array_length(json_object_object_get(a, "incomplete")), 1);
	CU_ASSERT_DOUBLE_EQUAL(json_object_get_double(json_object_object_get(a, "infra_share")), 0.2, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(json_object_get_double(json_object_object_get(a, "infra_share_limit")), 0.1, 1e-12);
	CU_ASSERT_STRING_EQUAL(str(doc, "result"), "FAIL");

	b = device(doc, "mmc:PCSIM:bbbb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_STRING_EQUAL(str(b, "result"), "FAIL");
	CU_ASSERT_EQUAL(json_object_array_length(json_object_object_get(b, "incomplete")), 0);
	CU_ASSERT_EQUAL(num(b, "cycles"), 3);
	CU_ASSERT_EQUAL(num(b, "verdicts.FAIL"), 2);
	m = mode(b, "flush");
	CU_ASSERT_EQUAL(num(m, "verdicts.FAIL"), 2);
	CU_ASSERT_EQUAL(num(m, "violations_by_class.lost_acked"), 7);
	/* only the acked tear was a violation; the other one is a finding */
	CU_ASSERT_EQUAL(num(m, "violations_by_class.torn"), 1);
	CU_ASSERT_EQUAL(num(m, "counts.torn"), 2);
	CU_ASSERT_EQUAL(num(m, "violations_by_class.intact"), -1);
	CU_ASSERT_EQUAL(num(m, "violations"), 8);
	CU_ASSERT_DOUBLE_EQUAL(rate(m), 6000.0, 1e-9);
	m = mode(b, "fua");
	CU_ASSERT_EQUAL(num(m, "verdicts.PASS"), 1);
	CU_ASSERT_EQUAL(num(m, "ran_as.fua+flush"), 1);
	json_object_put(doc);
	free(text);
}

static void test_table(void)
{
	const char *dirs[1];
	char err[512] = "", *text = NULL, *line, *save = NULL;

	make_dirs();
	dirs[0] = dir1;
	CU_ASSERT_EQUAL_FATAL(run(dirs, 1, 0, &text, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "device mmc:PCSIM:aaaa (board honest-1; PCSIM manfid 0x0000fe; "
					 "queue fua=1 write_cache=write back)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  mode        cycles  PASS  FAIL  BOOT_FAIL  INFRA  in-flight  records/s  violations\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  fua              2     2     0          0      0         0     1500.0  -\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  flush            2     0     2          0      0         2     6000.0  lost_acked=7 torn=1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  -                2     0     0          1      1         0          -  -\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  result: BOOT_FAIL (5 cycles, 1 BOOT_FAIL, 1 INFRA_ERROR)\n"
					 "  incomplete: 20% of cycles INFRA_ERROR (1 of 5; limit 10%, "
					 "incomplete_infra_share)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  result: FAIL (3 cycles, 2 FAIL; violations lost_acked=7 torn=1)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "note: fua ran as fua+flush in 1 cycle "));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "cid fe01aa; kernel 6.1.0-test"));
	/* device B never reported a cid */
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "cid -; kernel -"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "summary\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  BOOT_FAIL mmc:PCSIM:aaaa (honest-1): 5 cycles, 1 BOOT_FAIL, 1 INFRA_ERROR\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  FAIL      mmc:PCSIM:bbbb (lying-1): 3 cycles, 2 FAIL; violations lost_acked=7 torn=1\n"));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strlen(line) > 100)
			fprintf(stderr, "\n  too wide: %s\n", line);
		CU_ASSERT_TRUE(strlen(line) <= 100);
	}
	free(text);
}

static void test_merge(void)
{
	const char *dirs[2];
	char err[512] = "", *text = NULL, path[PATH_MAX + 32];
	json_object *doc, *b, *z, *g;

	make_dirs();
	dirs[0] = dir1;
	/* a verdicts.jsonl file itself is accepted too */
	snprintf(path, sizeof(path), "%s/verdicts.jsonl", dir2);
	dirs[1] = path;
	CU_ASSERT_EQUAL_FATAL(run(dirs, 2, 1, &text, err, sizeof(err)), 0);
	doc = json_tokener_parse(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	CU_ASSERT_EQUAL(json_object_array_length(json_object_object_get(doc, "devices")), 4);
	b = device(doc, "mmc:PCSIM:bbbb");
	CU_ASSERT_EQUAL(num(b, "cycles"), 4);
	CU_ASSERT_EQUAL(num(b, "verdicts.PASS"), 2);
	CU_ASSERT_EQUAL(num(b, "verdicts.FAIL"), 2);
	CU_ASSERT_EQUAL(num(mode(b, "flush"), "verdicts.PASS"), 1);
	CU_ASSERT_EQUAL(num(mode(b, "flush"), "cycles"), 3);
	CU_ASSERT_EQUAL(json_object_array_length(json_object_object_get(b, "boards")), 2);
	CU_ASSERT_EQUAL(json_object_array_length(json_object_object_get(b, "campaigns")), 2);
	/* the device A counts are unchanged by the merge */
	CU_ASSERT_EQUAL(num(device(doc, "mmc:PCSIM:aaaa"), "cycles"), 5);
	/* infrastructure trouble never counts against a device, nor for it */
	z = device(doc, "mmc:ZZ:1");
	CU_ASSERT_STRING_EQUAL(str(z, "result"), "INCOMPLETE");
	CU_ASSERT_EQUAL(num(z, "verdicts.INFRA_ERROR"), 1);
	CU_ASSERT_STRING_EQUAL(str(json_object_array_get_idx(json_object_object_get(z, "incomplete"), 0), "why"),
			       "infra_share");
	/* a board whose device never said who it is */
	g = device(doc, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	CU_ASSERT_STRING_EQUAL(str(g, "result"), "BOOT_FAIL");
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_array_get_idx(
		json_object_object_get(g, "boards"), 0)), "ghost");
	json_object_put(doc);
	free(text);

	/* the same in the table: merged boards are listed */
	dirs[1] = dir2;
	CU_ASSERT_EQUAL_FATAL(run(dirs, 2, 0, &text, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "device mmc:PCSIM:bbbb (boards lying-1, lying-2;"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "device unknown (board ghost;"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  result: FAIL (4 cycles, 2 FAIL;"));
	free(text);
}

struct bad_file {
	const char *what;
	const char *text;
	const char *msg;
};

static const struct bad_file bad_files[] = {
	{ "malformed middle line", "{\"board\":\"a\",\"verdict\":\"PASS\"}\n{\"board\":\n{\"board\":\"a\",\"verdict\":\"PASS\"}\n",
	  "verdicts.jsonl:2: not a JSON verdict line" },
	{ "garbage after the object", "{\"board\":\"a\",\"verdict\":\"PASS\"} x\n", "verdicts.jsonl:1: not a JSON verdict line" },
	{ "unknown verdict", "{\"board\":\"a\",\"verdict\":\"MAYBE\"}\n", "verdicts.jsonl:1: unknown verdict 'MAYBE'" },
	{ "no verdict", "{\"board\":\"a\"}\n", "verdicts.jsonl:1: missing \"verdict\"" },
	{ "no board", "{\"verdict\":\"PASS\"}\n", "verdicts.jsonl:1: missing \"board\"" },
	{ "not an object", "[1]\n", "verdicts.jsonl:1: expected a JSON object" },
	{ "bad count", "{\"board\":\"a\",\"verdict\":\"FAIL\",\"counts\":{\"torn\":-1}}\n",
	  "verdicts.jsonl:1: counts.torn: expected a count" },
	{ "bad rate", "{\"board\":\"a\",\"verdict\":\"PASS\",\"rate\":{\"records_per_s\":\"fast\"}}\n",
	  "verdicts.jsonl:1: rate.records_per_s: expected a number" },
};

static void test_bad_files(void)
{
	const char *dir = pc_test_tmpdir("report-bad");
	char err[512], missing[PATH_MAX + 16], *text = NULL;
	const char *dirs[1] = { dir };

	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		int rc;

		write_file(dir, "verdicts.jsonl", bad_files[i].text);
		err[0] = 0;
		text = NULL;
		rc = run(dirs, 1, 0, &text, err, sizeof(err));
		if (rc != -EINVAL || !strstr(err, bad_files[i].msg))
			fprintf(stderr, "\n  case '%s': rc %d, got \"%s\"\n", bad_files[i].what, rc, err);
		CU_ASSERT_EQUAL(rc, -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, bad_files[i].msg));
		/* nothing printed from a damaged file */
		CU_ASSERT_TRUE(!text || !text[0]);
		free(text);
	}
	snprintf(missing, sizeof(missing), "%s/nope", dir);
	dirs[0] = missing;
	text = NULL;
	CU_ASSERT_EQUAL(run(dirs, 1, 1, &text, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "nope/verdicts.jsonl: cannot read: No such file or directory"));
	free(text);

	/* an empty file is an empty report, not an error */
	write_file(dir, "verdicts.jsonl", "");
	dirs[0] = dir;
	text = NULL;
	CU_ASSERT_EQUAL(run(dirs, 1, 0, &text, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(text && strstr(text, "no verdicts yet"));
	free(text);
}

/* Refused writes (the engine's write_refused device findings, counted in
 * counts.collateral) are named on their own, one finding standing for n. */
static void test_write_refused(void)
{
	static const char text[] =
		"{\"campaign\":\"c\",\"board\":\"w1\",\"cycle\":1,\"verdict\":\"FAIL\",\"mode\":\"fua\","
		"\"mode_run\":\"fua\"," DEV_A ",\"counts\":{\"intact\":10,\"not_written\":9,\"collateral\":4},"
		"\"violations\":4,\"findings\":["
		"{\"class\":\"collateral\",\"what\":\"write_refused\",\"seq\":11,\"lba\":2056,\"errno\":5,"
		"\"mode\":\"fua\",\"detail\":\"EIO\",\"acked\":false,\"violation\":true},"
		"{\"class\":\"collateral\",\"what\":\"write_refused\",\"n\":2,\"detail\":\"2 more\","
		"\"acked\":false,\"violation\":true},"
		"{\"class\":\"collateral\",\"seq\":0,\"slot\":5,\"cold\":true,\"acked\":false,\"violation\":true}]}\n"
		"{\"campaign\":\"c\",\"board\":\"w1\",\"cycle\":2,\"verdict\":\"PASS\",\"mode\":\"fua\","
		"\"mode_run\":\"fua\"," DEV_A "," ZERO_COUNTS "}\n";
	const char *dirs[1];
	char dir[PATH_MAX], err[512] = "", *out = NULL;
	json_object *doc, *m;

	snprintf(dir, sizeof(dir), "%s", pc_test_tmpdir("report-refused"));
	write_file(dir, "verdicts.jsonl", text);
	dirs[0] = dir;
	CU_ASSERT_EQUAL_FATAL(run(dirs, 1, 1, &out, err, sizeof(err)), 0);
	doc = json_tokener_parse(out);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	m = mode(device(doc, "mmc:PCSIM:aaaa"), "fua");
	CU_ASSERT_EQUAL(num(m, "verdicts.FAIL"), 1);
	CU_ASSERT_EQUAL(num(m, "violations_by_class.write_refused"), 3);
	CU_ASSERT_EQUAL(num(m, "violations_by_class.collateral"), 1);
	CU_ASSERT_EQUAL(num(m, "counts.write_refused"), 3);
	CU_ASSERT_EQUAL(num(m, "counts.collateral"), 1);
	CU_ASSERT_EQUAL(num(m, "violations"), 4);
	json_object_put(doc);
	free(out);
	out = NULL;
	CU_ASSERT_EQUAL_FATAL(run(dirs, 1, 0, &out, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "  result: FAIL (2 cycles, 1 FAIL; violations collateral=1 write_refused=3)"));
	free(out);
	out = NULL;
	/* n is a count like any other */
	write_file(dir, "verdicts.jsonl", "{\"board\":\"w1\",\"cycle\":1,\"verdict\":\"FAIL\",\"findings\":["
		   "{\"class\":\"collateral\",\"what\":\"write_refused\",\"n\":-2,\"violation\":true}]}\n");
	CU_ASSERT_EQUAL(run(dirs, 1, 0, &out, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "findings[0].n: expected a count"));
	free(out);
}

/* ---- INCOMPLETE ---- */

/* One verdict line; a FAIL with one lost_acked record. */
static void add_verdict(FILE *f, const char *board, int cycle, const char *verdict, const char *id)
{
	fprintf(f, "{\"campaign\":\"c\",\"board\":\"%s\",\"cycle\":%d,\"verdict\":\"%s\",\"mode\":%s,"
		"\"device\":{\"id\":\"%s\"}%s}\n", board, cycle, verdict,
		strcmp(verdict, "INFRA_ERROR") ? "\"fua\"" : "null", id,
		strcmp(verdict, "FAIL") ? "" : ",\"counts\":{\"lost_acked\":1},\"violations\":1");
}

/* verdicts.jsonl: board b1 (device mmc:X:1) cycles 1..n, the first infra
 * of them INFRA_ERROR, and board b2 (mmc:Y:2) cycles 1..n2, all `v2`. */
static void write_verdicts(const char *dir, int n, int infra, int n2, const char *v2)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	for (int c = 1; c <= n; c++)
		add_verdict(f, "b1", c, c <= infra ? "INFRA_ERROR" : "PASS", "mmc:X:1");
	for (int c = 1; c <= n2; c++)
		add_verdict(f, "b2", c, v2, "mmc:Y:2");
	fclose(f);
	write_file(dir, "verdicts.jsonl", text);
	free(text);
}

/* campaign.json as a run writes it: config.cycles, the boards, and the
 * limit when one was given (share NULL: none, as in older folders) */
static void write_campaign(const char *dir, int cycles, const char *share)
{
	char text[512];

	snprintf(text, sizeof(text), "{\"campaign\":\"c\",\"started\":1,\"config\":{\"campaign\":\"c\",\"cycles\":%d,"
		 "%s%s%s\"boards\":[{\"name\":\"b1\"},{\"name\":\"b2\"}]}}\n", cycles,
		 share ? "\"incomplete_infra_share\":" : "", share ? share : "", share ? "," : "");
	write_file(dir, "campaign.json", text);
}

/* The report of one folder: its result code, and the JSON or the table. */
static int result_of(const char *dir, int json, char **text, int own_run)
{
	const char *dirs[1] = { dir };
	struct report_opts o = { .json = json, .own_run = own_run };
	char err[512] = "";
	size_t len = 0;
	FILE *f = open_memstream(text, &len);
	int rc, result = -1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	rc = report_run(dirs, 1, f, &o, &result, err, sizeof(err));
	fclose(f);
	if (rc)
		fprintf(stderr, "\n  report_run: %d %s\n", rc, err);
	CU_ASSERT_EQUAL(rc, 0);
	return result;
}

/* The "why" values of a device's incomplete list, joined with commas. */
static const char *whys(json_object *dev, char *buf, size_t len)
{
	json_object *a = dev ? json_object_object_get(dev, "incomplete") : NULL;
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; a && i < json_object_array_length(a) && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "",
				      str(json_object_array_get_idx(a, i), "why"));
	return buf;
}

static void test_incomplete_share(void)
{
	char dir[PATH_MAX], *text = NULL, w[256];
	json_object *doc, *d;

	snprintf(dir, sizeof(dir), "%s", pc_test_tmpdir("report-share"));
	/* 3 of 20 (15%) over the default 10%: INCOMPLETE */
	write_campaign(dir, 20, NULL);
	write_verdicts(dir, 20, 3, 20, "PASS");
	CU_ASSERT_EQUAL(result_of(dir, 1, &text, 0), REPORT_INCOMPLETE);
	doc = json_tokener_parse(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	CU_ASSERT_STRING_EQUAL(str(doc, "result"), "INCOMPLETE");
	d = device(doc, "mmc:X:1");
	CU_ASSERT_STRING_EQUAL(str(d, "result"), "INCOMPLETE");
	CU_ASSERT_STRING_EQUAL(whys(d, w, sizeof(w)), "infra_share");
	CU_ASSERT_EQUAL(num(json_object_array_get_idx(json_object_object_get(d, "incomplete"), 0), "infra_error"), 3);
	CU_ASSERT_STRING_EQUAL(str(device(doc, "mmc:Y:2"), "result"), "PASS");
	json_object_put(doc);
	free(text);
	text = NULL;
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_INCOMPLETE);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  result: INCOMPLETE (20 cycles, 3 INFRA_ERROR)\n"
					 "  incomplete: 15% of cycles INFRA_ERROR (3 of 20; limit 10%, "
					 "incomplete_infra_share)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  INCOMPLETE mmc:X:1 (b1): 20 cycles, 3 INFRA_ERROR; incomplete: "
					 "15% INFRA_ERROR (limit 10%)\n"));
	free(text);
	text = NULL;
	/* exactly 10% is within the limit; 5% too */
	write_verdicts(dir, 20, 2, 20, "PASS");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_PASS);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  result: PASS (20 cycles, 2 INFRA_ERROR)\n\n"));
	free(text);
	text = NULL;
	write_verdicts(dir, 20, 1, 20, "PASS");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_PASS);
	free(text);
	text = NULL;
	/* the limit campaign.json records */
	write_campaign(dir, 20, "0");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_INCOMPLETE);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "incomplete: 5% of cycles INFRA_ERROR (1 of 20; limit 0%,"));
	free(text);
	text = NULL;
	write_verdicts(dir, 20, 3, 20, "PASS");
	write_campaign(dir, 20, "0.2");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_PASS);
	free(text);
	text = NULL;
	/* a limit of 1 allows any share, but nothing judged is never PASS */
	write_verdicts(dir, 20, 20, 20, "PASS");
	write_campaign(dir, 20, "1");
	CU_ASSERT_EQUAL(result_of(dir, 1, &text, 0), REPORT_INCOMPLETE);
	doc = json_tokener_parse(text);
	CU_ASSERT_STRING_EQUAL(whys(device(doc, "mmc:X:1"), w, sizeof(w)), "nothing_judged");
	json_object_put(doc);
	free(text);
}

static void test_incomplete_given_up(void)
{
	char dir[PATH_MAX], *text = NULL, w[256];
	json_object *doc, *d, *g;

	snprintf(dir, sizeof(dir), "%s", pc_test_tmpdir("report-given-up"));
	write_campaign(dir, 4, NULL);
	write_verdicts(dir, 4, 0, 2, "PASS");
	write_file(dir, "events.jsonl",
		   "{\"t\":1,\"board\":\"b2\",\"cycle\":1,\"ev\":\"power_on\",\"attempt\":1}\n"
		   /* an agent's line that mentions one is no give_up */
		   "{\"t\":2,\"board\":\"b2\",\"cycle\":1,\"ev\":\"rx_bad\",\"line\":\"\\\"give_up\\\" run_end\"}\n"
		   "{\"t\":3,\"board\":\"b2\",\"cycle\":3,\"ev\":\"give_up\",\"reason\":\"relay \\u001b[31m dead\"}\n"
		   "{\"t\":4,\"board\":\"b1\",\"cycle\":4,\"ev\":\"run_end\",\"cycles\":4,\"end\":\"finished\"}\n"
		   "{\"t\":4,\"board\":\"b2\",\"cycle\":2,\"ev\":\"run_end\",\"cycles\":4,\"end\":\"given_up\"}\n"
		   "{\"t\":5,\"board\":\"b2\",\"cycle\":5,\"ev\":\"rx\",\"msg\":{\"type\"");	/* torn */
	CU_ASSERT_EQUAL(result_of(dir, 1, &text, 0), REPORT_INCOMPLETE);
	doc = json_tokener_parse(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	CU_ASSERT_STRING_EQUAL(str(device(doc, "mmc:X:1"), "result"), "PASS");
	d = device(doc, "mmc:Y:2");
	CU_ASSERT_STRING_EQUAL(str(d, "result"), "INCOMPLETE");
	/* given up says it all: not also "2 of 4 cycles" */
	CU_ASSERT_STRING_EQUAL(whys(d, w, sizeof(w)), "given_up");
	g = json_object_array_get_idx(json_object_object_get(d, "incomplete"), 0);
	CU_ASSERT_STRING_EQUAL(str(g, "board"), "b2");
	CU_ASSERT_EQUAL(num(g, "cycle"), 3);
	CU_ASSERT_STRING_EQUAL(str(g, "reason"), "relay ?[31m dead");
	json_object_put(doc);
	free(text);
	text = NULL;
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_INCOMPLETE);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  result: INCOMPLETE (2 cycles)\n"
					 "  incomplete: board b2 given up at cycle 3: relay ?[31m dead\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  INCOMPLETE mmc:Y:2 (b2): 2 cycles; incomplete: board b2 given up at "
					 "cycle 3\n"));
	free(text);
	text = NULL;

	/* a FAIL stays a FAIL, given up or not; the reason is still shown */
	write_verdicts(dir, 4, 0, 2, "FAIL");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_FAIL);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  result: FAIL (2 cycles, 2 FAIL; violations lost_acked=2)\n"
					 "  incomplete: board b2 given up at cycle 3: relay ?[31m dead\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  FAIL      mmc:Y:2 (b2): 2 cycles, 2 FAIL; violations lost_acked=2\n"));
	free(text);
	text = NULL;

	/* a later run took the board on again and finished: no longer given up */
	write_verdicts(dir, 4, 0, 4, "PASS");
	write_file(dir, "events.jsonl",
		   "{\"t\":3,\"board\":\"b2\",\"cycle\":3,\"ev\":\"give_up\",\"reason\":\"relay dead\"}\n"
		   "{\"t\":4,\"board\":\"b2\",\"cycle\":2,\"ev\":\"run_end\",\"cycles\":4,\"end\":\"given_up\"}\n"
		   "{\"t\":9,\"board\":\"b2\",\"cycle\":4,\"ev\":\"run_end\",\"cycles\":4,\"end\":\"finished\"}\n");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_PASS);
	free(text);
	text = NULL;
	/* ...but a give_up that no run_end followed (the run was killed) stands */
	write_file(dir, "events.jsonl",
		   "{\"t\":3,\"board\":\"b2\",\"cycle\":3,\"ev\":\"give_up\",\"reason\":\"relay dead\"}\n");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_INCOMPLETE);
	free(text);
}

static void test_incomplete_cycles(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], *text = NULL, w[256];
	json_object *doc, *d;

	snprintf(dir, sizeof(dir), "%s", pc_test_tmpdir("report-cycles"));
	/* an older folder: campaign.json without the limit, no events at all */
	write_campaign(dir, 6, NULL);
	write_verdicts(dir, 6, 0, 6, "PASS");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_PASS);
	free(text);
	text = NULL;
	/* 4 of the 6 configured cycles */
	write_verdicts(dir, 6, 0, 4, "PASS");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_INCOMPLETE);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  result: INCOMPLETE (4 cycles)\n"
					 "  incomplete: board b2 has verdicts for 4 of the 6 cycles planned\n"));
	free(text);
	text = NULL;
	/* ...unless the run planned 4 (--cycles 4) */
	write_file(dir, "events.jsonl",
		   "{\"t\":4,\"board\":\"b1\",\"cycle\":4,\"ev\":\"run_end\",\"cycles\":4,\"end\":\"finished\"}\n"
		   "{\"t\":4,\"board\":\"b2\",\"cycle\":4,\"ev\":\"run_end\",\"cycles\":4,\"end\":\"finished\"}\n");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_PASS);
	free(text);
	text = NULL;
	/* an interrupted run said 8 */
	write_file(dir, "events.jsonl",
		   "{\"t\":4,\"board\":\"b2\",\"cycle\":4,\"ev\":\"run_end\",\"cycles\":8,\"end\":\"interrupted\"}\n");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_INCOMPLETE);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "board b2 has verdicts for 4 of the 8 cycles planned"));
	free(text);
	text = NULL;
	/* an older folder grown by --cycles: as far as any board got */
	write_file(dir, "events.jsonl", "");
	write_campaign(dir, 2, NULL);
	write_verdicts(dir, 6, 0, 5, "PASS");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_INCOMPLETE);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "board b2 has verdicts for 5 of the 6 cycles planned"));
	free(text);
	text = NULL;
	/* a configured board without any verdict is not left out */
	write_verdicts(dir, 6, 0, 0, "PASS");
	CU_ASSERT_EQUAL(result_of(dir, 1, &text, 0), REPORT_INCOMPLETE);
	doc = json_tokener_parse(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	d = device(doc, NULL);
	CU_ASSERT_STRING_EQUAL(str(d, "result"), "INCOMPLETE");
	CU_ASSERT_EQUAL(num(d, "cycles"), 0);
	CU_ASSERT_STRING_EQUAL(whys(d, w, sizeof(w)), "cycles_missing");
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_array_get_idx(json_object_object_get(d, "boards"), 0)),
			       "b2");
	json_object_put(doc);
	free(text);
	text = NULL;
	/* nothing at all is nothing judged */
	snprintf(path, sizeof(path), "%s/campaign.json", dir);
	unlink(path);
	write_file(dir, "verdicts.jsonl", "");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_INCOMPLETE);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "no verdicts yet"));
	free(text);
}

/* The folder's lock: a run still going, or killed, has not finished. */
static void test_incomplete_lock(void)
{
	char dir[PATH_MAX], note[256], err[512] = "", *text = NULL, path[PATH_MAX + 16];
	struct results res;

	snprintf(dir, sizeof(dir), "%s", pc_test_tmpdir("report-lock"));
	write_campaign(dir, 4, NULL);
	write_verdicts(dir, 4, 0, 4, "PASS");
	CU_ASSERT_EQUAL_FATAL(results_open(&res, dir, note, sizeof(note), err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_INCOMPLETE);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  incomplete: the campaign is still running ("));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "; incomplete: still running\n"));
	free(text);
	text = NULL;
	/* the run itself, done with its cycles, reports before it lets go */
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 1), REPORT_PASS);
	free(text);
	text = NULL;
	results_close(&res);
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_PASS);
	free(text);
	text = NULL;
	/* a lock file naming a run that never closed the folder */
	snprintf(path, sizeof(path), "%s/lock", dir);
	write_file(dir, "lock", "{\"pid\":4242,\"host\":\"lab1\",\"started\":1700000000}\n");
	CU_ASSERT_EQUAL(result_of(dir, 0, &text, 0), REPORT_INCOMPLETE);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "  incomplete: the last run was killed before it finished ("));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "last run pid 4242 on lab1"));
	free(text);
	unlink(path);
}

/* Damaged companions are errors, named by file and line. */
static void test_incomplete_bad(void)
{
	static const struct bad_file bad[] = {
		{ "torn middle event", "{\"ev\":\"give_up\",\"board\":\n{}\n", "events.jsonl:1: not a JSON event line" },
		{ "give_up without board", "{\"ev\":\"give_up\",\"cycle\":3}\n", "events.jsonl:1: give_up: missing \"board\"" },
		{ "give_up bad cycle", "{\"ev\":\"give_up\",\"board\":\"b1\",\"cycle\":-3}\n",
		  "events.jsonl:1: cycle: expected a count" },
		{ "run_end without cycles", "{\"ev\":\"run_end\",\"board\":\"b1\",\"cycle\":3}\n",
		  "events.jsonl:1: run_end: missing \"cycles\"" },
	};
	char dir[PATH_MAX], err[512];
	const char *dirs[1];
	int result;

	snprintf(dir, sizeof(dir), "%s", pc_test_tmpdir("report-bad-events"));
	dirs[0] = dir;
	write_verdicts(dir, 4, 0, 4, "PASS");
	for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++) {
		write_file(dir, "events.jsonl", bad[i].text);
		err[0] = 0;
		CU_ASSERT_EQUAL(report_run(dirs, 1, NULL, NULL, &result, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].msg))
			fprintf(stderr, "\n  case '%s': got \"%s\"\n", bad[i].what, err);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].msg));
	}
	write_file(dir, "events.jsonl", "");
	write_file(dir, "campaign.json", "{\"config\":{\"cycles\":4,\"incomplete_infra_share\":\"10%\"}}");
	CU_ASSERT_EQUAL(report_run(dirs, 1, NULL, NULL, &result, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "campaign.json: config.incomplete_infra_share: expected a number from 0 to 1, "
				      "got \"10%\""));
	write_file(dir, "campaign.json", "{\"config\":");
	CU_ASSERT_EQUAL(report_run(dirs, 1, NULL, NULL, &result, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "campaign.json: cannot read it as JSON"));
	write_file(dir, "campaign.json", "{\"config\":{\"cycles\":4}}");
	/* out NULL: the result only */
	CU_ASSERT_EQUAL(report_run(dirs, 1, NULL, NULL, &result, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(result, REPORT_PASS);
}

/* A judged cycle of board q: its records, cut and the device's EXT_CSD wear. */
#define QV(cyc, verdict, mode, sub, ack, cut, wear)                                                        \
	"{\"campaign\":\"q\",\"board\":\"q1\",\"cycle\":" #cyc ",\"verdict\":\"" verdict "\",\"mode\":\"" mode  \
	"\",\"device\":{\"id\":\"mmc:Q:1\",\"ext_csd\":{" wear "}},\"records\":{\"first\":1,\"planned\":16,"     \
	"\"submitted\":" #sub ",\"acked\":" #ack "},\"violations\":0,\"cut\":" cut "}\n"
#define RND "{\"plan\":\"random\",\"trigger\":\"random instant\"}"
#define W1 "\"life_time_a\":1,\"life_time_b\":1,\"pre_eol_info\":1"
#define W2 "\"life_time_a\":1,\"life_time_b\":2,\"pre_eol_info\":1"
#define W3 "\"life_time_a\":2,\"life_time_b\":3,\"pre_eol_info\":2"

/* The bound on each mode's rate, where the cuts landed, the flags, the wear. */
static void test_qualify_figures(void)
{
	/* journal: one cut in each phase (a cut between two records, the last
	 * submitted one acknowledged, met the writes); flush: random cuts
	 * only, one FAIL */
	static const char v[] =
		QV(1, "PASS", "journal", 0, 0, RND, W1)
		QV(2, "PASS", "journal", 4, 0, RND, W1)
		QV(3, "PASS", "journal", 8, 8, RND, W2)	/* between two records: during the writes */
		QV(4, "PASS", "journal", 8, 4, "{\"plan\":\"flush\",\"trigger\":\"flush\"}", W2)
		QV(5, "PASS", "journal", 8, 4, "{\"plan\":\"fua\",\"trigger\":\"sim exact\"}", W2)
		QV(6, "PASS", "journal", 16, 8, "{\"plan\":\"random\",\"trigger\":\"work done\"}", W3)
		QV(7, "PASS", "flush", 16, 16, RND, W3)	/* all 16 planned acknowledged: after */
		QV(8, "FAIL", "flush", 8, 4, RND, W3);
	const char *dir = pc_test_tmpdir("report-qualify"), *dirs[1] = { dir };
	char err[512] = "", *text = NULL;
	size_t len = 0;
	struct report_opts o = { .format = REPORT_FMT_JSON };
	json_object *doc, *d, *m, *w;
	FILE *f;
	int result;

	write_file(dir, "verdicts.jsonl", v);
	f = open_memstream(&text, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(report_run(dirs, 1, f, &o, &result, err, sizeof(err)), 0);
	fclose(f);
	doc = json_tokener_parse(text);
	free(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	d = device(doc, "mmc:Q:1");
	m = mode(d, "journal");
	CU_ASSERT_EQUAL(num(m, "cut_phases.before_first_write"), 1);
	CU_ASSERT_EQUAL(num(m, "cut_phases.none_acked"), 1);
	CU_ASSERT_EQUAL(num(m, "cut_phases.acked_more_in_flight"), 1);
	CU_ASSERT_EQUAL(num(m, "cut_phases.flush"), 1);
	CU_ASSERT_EQUAL(num(m, "cut_phases.fua"), 1);
	CU_ASSERT_EQUAL(num(m, "cut_phases.after_last_ack"), 1);
	CU_ASSERT_EQUAL(json_object_array_length(json_object_object_get(m, "flags")), 0);
	/* 0 of 6 at 95%: 1 - 0.05^(1/6), read "below", never "0%" */
	CU_ASSERT_EQUAL(num(m, "violation_rate.cuts"), 6);
	CU_ASSERT_EQUAL(num(m, "violation_rate.violated"), 0);
	CU_ASSERT_DOUBLE_EQUAL(json_object_get_double(json_object_object_get(json_object_object_get(m, "violation_rate"),
									      "upper")), 1 - pow(0.05, 1.0 / 6), 1e-9);
	CU_ASSERT_STRING_EQUAL(str(json_object_object_get(m, "violation_rate"), "text"), "below 39.3% at 95%");
	CU_ASSERT_STRING_EQUAL(str(json_object_object_get(m, "violation_rate"), "method"), QUAL_METHOD);
	m = mode(d, "flush");
	CU_ASSERT_EQUAL(num(m, "cut_phases.after_last_ack"), 1);
	CU_ASSERT_EQUAL(num(m, "cut_phases.acked_more_in_flight"), 1);
	/* 1 of 2 at 95%: sqrt(0.95), I_p(2, 1) = p^2 */
	CU_ASSERT_DOUBLE_EQUAL(json_object_get_double(json_object_object_get(json_object_object_get(m, "violation_rate"),
									      "upper")), sqrt(0.95), 1e-9);
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_array_get_idx(json_object_object_get(m, "flags"), 0)),
			       "no cut landed during a flush in mode flush");
	/* wear: the first, two changes, the last */
	w = json_object_object_get(d, "wear");
	CU_ASSERT_EQUAL(num(w, "changes"), 2);
	CU_ASSERT_EQUAL(json_object_array_length(json_object_object_get(w, "points")), 3);
	CU_ASSERT_EQUAL(num(w, "last.cycle"), 8);
	CU_ASSERT_EQUAL(num(w, "last.life_time_b"), 3);
	CU_ASSERT_EQUAL(num(w, "last.pre_eol_info"), 2);
	CU_ASSERT_EQUAL(num(json_object_array_get_idx(json_object_object_get(w, "points"), 1), "cycle"), 3);
	json_object_put(doc);

	/* another confidence, and one out of range */
	o.confidence = 0.99;
	f = open_memstream(&text, &len);
	CU_ASSERT_EQUAL(report_run(dirs, 1, f, &o, &result, err, sizeof(err)), 0);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"text\": \"below 53.6% at 99%\""));	/* 1 - 0.01^(1/6) */
	free(text);
	o.confidence = 0.2;
	CU_ASSERT_EQUAL(report_run(dirs, 1, NULL, &o, &result, err, sizeof(err)), -EINVAL);
	/* the campaign's target confidence, unless the report is given one */
	write_file(dir, "campaign.json", "{\"config\":{\"target\":{\"rate\":0.001,\"confidence\":0.9}}}");
	o.confidence = 0;
	f = open_memstream(&text, &len);
	CU_ASSERT_EQUAL(report_run(dirs, 1, f, &o, &result, err, sizeof(err)), 0);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"text\": \"below 31.9% at 90%\""));	/* 1 - 0.1^(1/6) */
	free(text);
	o.confidence = 0.95;
	f = open_memstream(&text, &len);
	CU_ASSERT_EQUAL(report_run(dirs, 1, f, &o, &result, err, sizeof(err)), 0);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"text\": \"below 39.3% at 95%\""));
	free(text);
	write_file(dir, "campaign.json", "{\"config\":{\"target\":{\"confidence\":95}}}");
	o.confidence = 0;
	CU_ASSERT_EQUAL(report_run(dirs, 1, NULL, &o, &result, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "campaign.json: config.target.confidence: expected a number from 0.5 to 0.9999, got 95"));
	unlink_file(dir, "campaign.json");
	/* a wear byte out of range is refused, naming the line */
	write_file(dir, "verdicts.jsonl", QV(1, "PASS", "fua", 1, 1, RND, "\"life_time_a\":300"));
	o.confidence = 0;
	CU_ASSERT_EQUAL(report_run(dirs, 1, NULL, &o, &result, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "verdicts.jsonl:1: device.ext_csd.life_time_a: expected a byte"));
}

/* No PASS without evidence: at least one and 10% (rounded up) of a mode's
 * judged cuts during its writes, else its device is INCONCLUSIVE, exit 3. */
static void test_inconclusive(void)
{
#define AFTER "{\"plan\":\"random\",\"trigger\":\"work done\"}"
	/* fua: 11 judged cuts, 1 during writes (2 needed); flush FAILed after its writes */
#define ELEVEN \
		QV(1, "PASS", "fua", 8, 4, RND, W1) QV(2, "PASS", "fua", 16, 16, AFTER, W1) \
		QV(3, "PASS", "fua", 16, 16, AFTER, W1) QV(4, "PASS", "fua", 16, 16, AFTER, W1) \
		QV(5, "PASS", "fua", 16, 16, AFTER, W1) QV(6, "PASS", "fua", 16, 16, AFTER, W1) \
		QV(7, "PASS", "fua", 16, 16, AFTER, W1) QV(8, "PASS", "fua", 16, 16, AFTER, W1) \
		QV(9, "PASS", "fua", 16, 16, AFTER, W1) QV(10, "PASS", "fua", 16, 16, AFTER, W1) \
		QV(11, "PASS", "fua", 0, 0, RND, W1)
	static const char v[] = ELEVEN, v2[] = ELEVEN QV(12, "PASS", "fua", 4, 0, RND, W1);
	const char *dir = pc_test_tmpdir("report-inconclusive");
	char *text = NULL;

	write_file(dir, "verdicts.jsonl", v);
	CU_ASSERT_EQUAL(result_of(dir, 1, &text, 0), REPORT_INCOMPLETE);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"result\": \"INCONCLUSIVE\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"cuts_in_writes\": 1,"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "mode fua: 1 of 11 cuts landed during writes, fewer than 2 (at least one, "
				       "and 10%): 1 before the first write, 9 after the last ACK; cut earlier"));
	free(text);
	/* a second cut during writes: 2 of 12, PASS */
	write_file(dir, "verdicts.jsonl", v2);
	CU_ASSERT_EQUAL(result_of(dir, 1, &text, 0), REPORT_PASS);
	CU_ASSERT_PTR_NULL(strstr(text, "cuts_in_writes"));
	free(text);
	/* a mode that FAILed is not inconclusive, whatever its cuts met */
	write_file(dir, "verdicts.jsonl", QV(1, "FAIL", "flush", 16, 16, AFTER, W1));
	CU_ASSERT_EQUAL(result_of(dir, 1, &text, 0), REPORT_FAIL);
	CU_ASSERT_PTR_NULL(strstr(text, "cuts_in_writes"));
	free(text);
#undef ELEVEN
#undef AFTER
}

int suite_report(void)
{
	CU_pSuite s = CU_add_suite("report", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "one results dir, JSON counts", test_one_dir_json) ||
	    !CU_add_test(s, "table layout", test_table) ||
	    !CU_add_test(s, "two results dirs merge", test_merge) ||
	    !CU_add_test(s, "damaged files are refused", test_bad_files) ||
	    !CU_add_test(s, "refused writes counted apart", test_write_refused) ||
	    !CU_add_test(s, "INCOMPLETE: the share of INFRA_ERROR", test_incomplete_share) ||
	    !CU_add_test(s, "INCOMPLETE: a board given up", test_incomplete_given_up) ||
	    !CU_add_test(s, "INCOMPLETE: cycles left", test_incomplete_cycles) ||
	    !CU_add_test(s, "INCOMPLETE: still running, killed", test_incomplete_lock) ||
	    !CU_add_test(s, "INCOMPLETE: damaged events and campaign.json", test_incomplete_bad) ||
	    !CU_add_test(s, "bounds, cut phases, flags and wear", test_qualify_figures) ||
	    !CU_add_test(s, "INCONCLUSIVE: cuts that missed the writes", test_inconclusive))
		return -1;
	return 0;
}

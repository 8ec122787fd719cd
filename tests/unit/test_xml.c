/*
 * test_xml.c - the one XML escaper and JUnit writer (harness/report/xml.c):
 * whatever bytes a damaged verdicts.jsonl puts in a name, a message or a
 * text, the JUnit document stays well-formed XML (checked by Python's XML
 * parser, and here: UTF-8 throughout, no character XML 1.0 forbids); and the
 * report's JUnit of verdicts whose strings hold escaped characters XML
 * forbids (\u0001, \uffff) is well-formed too, while a line of raw invalid
 * UTF-8 is refused by the reader, naming the file and line.
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/report/report.h"
#include "harness/report/xml.h"
#include "harness/results/jsonl.h"

/* The damage a verdict line can carry, raw. */
static const char *const hostile[] = {
	"a\xff" "b",			/* no UTF-8 at all */
	"sur\xed\xa0\x80rogate",	/* U+D800 */
	"big\xf4\x90\x80\x80",		/* past U+10FFFF */
	"over\xc0\xbclong",		/* an overlong '<' */
	"cut\xe2\x82",			/* cut short */
	"ctl\x01\x1b[31m\x7f",		/* controls XML forbids */
	"non\xef\xbf\xbf\xef\xbf\xbe",	/* U+FFFF, U+FFFE */
	"c1\xc2\x85",			/* U+0085 */
	"]]><![CDATA[ & <x> \"q\" 'a'",
};
#define NHOSTILE (sizeof(hostile) / sizeof(hostile[0]))

/* Is s[0..n) UTF-8 of characters XML 1.0 allows (tab, newline, return,
 * U+0020-U+D7FF, U+E000-U+FFFD, U+10000-U+10FFFF)? */
static int xml_chars_ok(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	if (jsonl_utf8_valid(s, n, 0) != n)
		return 0;
	for (size_t i = 0; i < n;) {
		uint32_t c = p[i];
		size_t len = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;

		if (len > 1) {
			c &= 0xffu >> (len + 1);
			for (size_t k = 1; k < len; k++)
				c = c << 6 | (p[i + k] & 0x3fu);
		}
		if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0xfffe || c == 0xffff)
			return 0;
		i += len;
	}
	return 1;
}

/* Parse the file with Python's XML parser: 1 well-formed, 0 not, -1 no Python. */
static int python_parses(const char *file)
{
	char cmd[PATH_MAX + 128];
	int rc;

	if (system("command -v python3 >/dev/null 2>&1") != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' '%s'",
		 file);
	rc = system(cmd);
	return rc == 0;
}

static char *slurp(const char *file, size_t *len)
{
	FILE *f = fopen(file, "r");
	char *buf;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	buf = malloc(1 << 20);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	*len = fread(buf, 1, (1 << 20) - 1, f);
	buf[*len] = 0;
	fclose(f);
	return buf;
}

static void well_formed(const char *file)
{
	size_t len;
	char *doc = slurp(file, &len);
	int py;

	CU_ASSERT(xml_chars_ok(doc, len));
	free(doc);
	py = python_parses(file);
	if (py < 0) {
		pc_test_skip("python3 is not installed: the XML parser's check was not run");
		return;
	}
	CU_ASSERT_EQUAL(py, 1);
}

/* Every element of the writer, each string hostile. */
static void test_junit_hostile(void)
{
	char file[PATH_MAX];
	struct junit j;
	FILE *f;

	snprintf(file, sizeof(file), "%s/hostile.xml", pc_test_tmpdir("xml"));
	f = fopen(file, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	junit_begin(&j, f, hostile[0], 2, 1, 1, 0.5);
	for (size_t i = 0; i < NHOSTILE; i++) {
		junit_suite_begin(&j, hostile[i], 2, 1, 1, -1, hostile[(i + 1) % NHOSTILE]);
		junit_property(&j, hostile[(i + 2) % NHOSTILE], hostile[(i + 3) % NHOSTILE]);
		junit_case_begin(&j, hostile[(i + 4) % NHOSTILE], hostile[(i + 5) % NHOSTILE]);
		junit_problem_begin(&j, "failure", hostile[(i + 6) % NHOSTILE], hostile[(i + 7) % NHOSTILE]);
		junit_text(&j, hostile[(i + 8) % NHOSTILE]);
		junit_text(&j, hostile[i]);
		junit_problem_end(&j, "failure");
		junit_system_out(&j, hostile[(i + 1) % NHOSTILE]);
		junit_case_end(&j);
		junit_case_begin(&j, "c", "e");
		junit_problem_begin(&j, "error", "INCOMPLETE", hostile[i]);
		junit_problem_end(&j, "error");
		junit_case_end(&j);
		junit_suite_end(&j);
	}
	CU_ASSERT_EQUAL(junit_end(&j), 0);
	fclose(f);
	well_formed(file);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char p[PATH_MAX + 32];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

/* The report's JUnit of one folder into file: report_run's return. */
static int report_junit_of(const char *dir, const char *file, char *err, size_t errlen)
{
	const char *dirs[1] = { dir };
	struct report_opts o = { .format = REPORT_FMT_JUNIT };
	FILE *f = fopen(file, "w");
	int rc, result;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	rc = report_run(dirs, 1, f, &o, &result, err, errlen);
	fclose(f);
	return rc;
}

/* A damaged verdicts.jsonl: characters XML forbids, escaped in the JSON (so
 * the line is valid UTF-8 and strict JSON), in the board, the device, the
 * mode and the reasons. */
static void test_report_junit_damaged(void)
{
	static const char verdicts[] =
		"{\"board\":\"b\\u0001\\uffff\",\"cycle\":1,\"verdict\":\"INFRA_ERROR\",\"mode\":null,"
		"\"device\":{\"id\":\"mmc:\\u001b[2J\\ufffe:1\"},\"reason\":\"relay \\u0007 \\u0085 \\udc00 < & ]]>\"}\n"
		"{\"board\":\"b\\u0001\\uffff\",\"cycle\":2,\"verdict\":\"FAIL\",\"mode\":\"fua\\u0002\",\"mode_run\":\"fua\","
		"\"device\":{\"id\":\"mmc:\\u001b[2J\\ufffe:1\"},\"counts\":{\"lost_acked\":1},\"violations\":1,"
		"\"findings\":[{\"class\":\"lost_acked\",\"seq\":3,\"acked\":true,\"violation\":true}]}\n";
	char dir[PATH_MAX], file[PATH_MAX + 16], err[512] = "";
	size_t len;
	char *doc;

	snprintf(dir, sizeof(dir), "%s", pc_test_tmpdir("xml-report"));
	snprintf(file, sizeof(file), "%s/r.xml", dir);
	write_text(dir, "verdicts.jsonl", verdicts);
	CU_ASSERT_EQUAL_FATAL(report_junit_of(dir, file, err, sizeof(err)), 0);
	doc = slurp(file, &len);
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "<failure"));
	/* the board's \u0001 as U+FFFD, and \uffff as one U+FFFD a byte */
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "<property name=\"boards\" value=\"b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
					   "\xef\xbf\xbd\"/>"));
	CU_ASSERT_PTR_NULL(strstr(doc, "\xef\xbf\xbf"));
	free(doc);
	well_formed(file);
	/* raw invalid UTF-8 in a verdict: the reader refuses the line, naming it */
	write_text(dir, "verdicts.jsonl", "{\"board\":\"b\",\"cycle\":1,\"verdict\":\"PASS\"}\n"
		   "{\"board\":\"b\xed\xa0\x80\",\"cycle\":2,\"verdict\":\"PASS\"}\n");
	CU_ASSERT_EQUAL(report_junit_of(dir, file, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "verdicts.jsonl:2: an invalid byte at byte 12: not UTF-8 text"));
}

int suite_xml(void)
{
	CU_pSuite s = CU_add_suite("xml", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "JUnit of hostile strings is well-formed XML", test_junit_hostile) ||
	    !CU_add_test(s, "report JUnit of a damaged verdicts.jsonl", test_report_junit_damaged))
		return -1;
	return 0;
}

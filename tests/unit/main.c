/*
 * main.c - the one CUnit runner: registers every suite listed in suites.h,
 * runs them and ends with "unit: N passed, N failed, N skipped", each skip
 * and each failure listed with its reason above that line.
 *
 * Honest counts: a suite listed in suites.h that no file defines, or one that
 * registers no tests, fails the run; a test that called pc_test_skip() (and
 * failed nothing) is skipped, never passed; with PC_CI=1 in the environment
 * (.ci/run) a skip fails too, because CI is expected to run every test.
 * With PC_TOTALS=FILE the closing line is also written to FILE.
 *
 * usage: test-unit [SUITE...]   (default: every suite of suites.h)
 */
#include "tests/unit/suites.h"

#include <CUnit/Basic.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

int pc_test_suite(const char *name, const struct pc_test *tests, size_t n)
{
	CU_pSuite s = CU_add_suite(name, NULL, NULL);

	if (!s)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!CU_add_test(s, tests[i].name, tests[i].fn))
			return -1;
	return 0;
}

const char *pc_test_tmpdir(const char *name)
{
	static char path[PATH_MAX];
	const char *base = getenv("PC_TEST_TMP");
	char cmd[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/%s.%d", base ? base : "build/test-tmp", name, (int)getpid());
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0 || pc_mkdir_p(path, 0755) != 0) {
		fprintf(stderr, "cannot make scratch directory %s\n", path);
		exit(2);
	}
	return path;
}

struct suite_ent {
	const char *name;
	int (*reg)(void);
};

#define PC_SUITE_ENT(n) { #n, suite_##n },
static const struct suite_ent suites[] = { PC_SUITES(PC_SUITE_ENT) };

/* ---- outcomes ---- */

/* One line of the closing list: "skipped: WHAT: WHY" or "failed: WHAT: WHY". */
struct note {
	char *what, *why;
};

struct notes {
	struct note *v;
	size_t n, cap;
};

static struct notes skips, failures;
static unsigned n_passed, n_failed, n_skipped;
static int ci_mode;

/* the running test's skip reasons, joined with "; " (NULL: it did not skip) */
static char *cur_skip;

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "test-unit: out of memory\n");
		exit(2);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	return strcpy(xrealloc(NULL, strlen(s) + 1), s);
}

static void note_add(struct notes *l, const char *suite, const char *test, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void note_add(struct notes *l, const char *suite, const char *test, const char *fmt, ...)
{
	char what[512], why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	snprintf(what, sizeof(what), "%s%s%s", suite, test ? "/" : "", test ? test : "");
	l->v[l->n].what = xstrdup(what);
	l->v[l->n].why = xstrdup(why);
	l->n++;
}

static void notes_free(struct notes *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].what);
		free(l->v[i].why);
	}
	free(l->v);
}

void pc_test_skip(const char *fmt, ...)
{
	char why[512];
	size_t old = cur_skip ? strlen(cur_skip) : 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	printf("\n    SKIPPED: %s", why);
	cur_skip = xrealloc(cur_skip, old + strlen(why) + 3);
	snprintf(cur_skip + old, strlen(why) + 3, "%s%s", old ? "; " : "", why);
}

/* ---- CUnit handlers: Basic's verbose output, plus SKIPPED ---- */

static CU_pSuite last_suite;

static void on_test_start(const CU_pTest test, const CU_pSuite suite)
{
	if (suite != last_suite) {
		printf("\nSuite: %s", suite->pName);
		last_suite = suite;
	}
	printf("\n  Test: %s ...", test->pName);
	fflush(stdout);
	free(cur_skip);
	cur_skip = NULL;
}

static void on_test_complete(const CU_pTest test, const CU_pSuite suite, const CU_pFailureRecord failure)
{
	CU_pFailureRecord f;
	unsigned i = 0;

	if (failure) {
		printf("FAILED");
		for (f = failure; f && f->pTest == test; f = f->pNext)
			printf("\n    %u. %s:%u  - %s", ++i, f->strFileName ? f->strFileName : "",
			       f->uiLineNumber, f->strCondition ? f->strCondition : "");
		n_failed++;
		note_add(&failures, suite->pName, test->pName, "%u assertion(s) failed (above)", i);
	} else if (cur_skip && ci_mode) {
		printf("\n    FAILED: skipped, and CI (PC_CI=1) is expected to run it");
		n_failed++;
		note_add(&failures, suite->pName, test->pName, "skipped where CI is expected to run it: %s", cur_skip);
	} else if (cur_skip) {
		printf("\n    ...SKIPPED");
		n_skipped++;
		note_add(&skips, suite->pName, test->pName, "%s", cur_skip);
	} else {
		printf("passed");
		n_passed++;
	}
	fflush(stdout);
	free(cur_skip);
	cur_skip = NULL;
}

static void on_suite_init_failure(const CU_pSuite suite)
{
	unsigned n = 0;

	for (CU_pTest t = suite->pTest; t; t = t->pNext)
		n++;
	printf("\nWARNING - Suite initialization failed for '%s'.", suite->pName);
	n_failed += n ? n : 1;
	note_add(&failures, suite->pName, NULL, "its initialisation failed: none of its %u tests ran (each counted failed)", n);
}

static void on_suite_cleanup_failure(const CU_pSuite suite)
{
	printf("\nWARNING - Suite cleanup failed for '%s'.", suite->pName);
	n_failed++;
	note_add(&failures, suite->pName, NULL, "its cleanup failed");
}

static void on_all_complete(const CU_pFailureRecord failure)
{
	(void)failure;
	printf("\n\n");
	CU_print_run_results(stdout);
	printf("\n");
}

static unsigned registered_suites(void)
{
	unsigned n = 0;

	for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext)
		n++;
	return n;
}

/* the tests of the CUnit suites registered after the first `from` ones */
static unsigned tests_from(unsigned from)
{
	unsigned i = 0, n = 0;

	for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext, i++)
		if (i >= from)
			n += s->uiNumberOfTests;
	return n;
}

/* PC_TOTALS=FILE (make check): the closing line goes there too, for the totals
 * make check prints at its end. Taken out of the environment at the start, so
 * a runner a test starts (relay_hw re-runs this one) does not write it. */
static char *totals_path;

static void write_totals(void)
{
	const char *path = totals_path;
	FILE *f;

	if (!path || !*path)
		return;
	f = fopen(path, "w");
	if (!f || fprintf(f, "unit: %u passed, %u failed, %u skipped\n", n_passed, n_failed, n_skipped) < 0 ||
	    fclose(f) != 0) {
		fprintf(stderr, "test-unit: cannot write the totals to %s\n", path);
		n_failed++;
	}
}

static int wanted(int argc, char **argv, const char *name)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *ci = getenv("PC_CI");

	ci_mode = ci && *ci && strcmp(ci, "0") != 0;
	if (getenv("PC_TOTALS")) {
		totals_path = xstrdup(getenv("PC_TOTALS"));
		unsetenv("PC_TOTALS");
	}
	for (int i = 1; i < argc; i++) {
		size_t k;

		for (k = 0; k < PC_ARRAY_SIZE(suites) && strcmp(argv[i], suites[k].name) != 0; k++)
			;
		if (k == PC_ARRAY_SIZE(suites)) {
			fprintf(stderr, "no suite named '%s' (see tests/unit/suites.h)\n", argv[i]);
			return 2;
		}
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	for (size_t i = 0; i < PC_ARRAY_SIZE(suites); i++) {
		unsigned before;

		if (!wanted(argc, argv, suites[i].name))
			continue;
		if (!suites[i].reg) {
			/* listed but defined by no file: it would run nothing and pass */
			fprintf(stderr, "suite %s is listed in suites.h but no tests/unit/test_*.c defines it\n",
				suites[i].name);
			n_failed++;
			note_add(&failures, suites[i].name, NULL,
				 "listed in tests/unit/suites.h but no tests/unit/test_*.c defines it");
			continue;
		}
		before = registered_suites();
		if (suites[i].reg() != 0) {
			fprintf(stderr, "suite %s failed to register: %s\n", suites[i].name, CU_get_error_msg());
			CU_cleanup_registry();
			return 2;
		}
		if (tests_from(before) == 0) {
			/* an empty suite tests nothing: that is a failure, not a pass */
			fprintf(stderr, "suite %s registers no tests\n", suites[i].name);
			n_failed++;
			note_add(&failures, suites[i].name, NULL, "registers no tests");
		}
	}
	CU_set_test_start_handler(on_test_start);
	CU_set_test_complete_handler(on_test_complete);
	CU_set_all_test_complete_handler(on_all_complete);
	CU_set_suite_init_failure_handler(on_suite_init_failure);
	CU_set_suite_cleanup_failure_handler(on_suite_cleanup_failure);
	printf("\n     CUnit - A unit testing framework for C - Version %s\n     http://cunit.sourceforge.net/\n\n",
	       CU_VERSION);
	if (CU_get_registry()->uiNumberOfTests > 0 && CU_run_all_tests() != CUE_SUCCESS) {
		n_failed++;
		note_add(&failures, "test-unit", NULL, "CUnit: %s", CU_get_error_msg());
	}
	for (size_t i = 0; i < skips.n; i++)
		printf("skipped: %s: %s\n", skips.v[i].what, skips.v[i].why);
	for (size_t i = 0; i < failures.n; i++)
		printf("failed: %s: %s\n", failures.v[i].what, failures.v[i].why);
	/* a run of named suites (test_relay_hw's re-run under the shims) says
	 * so: its line is not the suite's total */
	printf("unit%s%s%s: %u passed, %u failed, %u skipped\n", argc > 1 ? " (" : "", argc > 1 ? argv[1] : "",
	       argc > 2 ? ", ...)" : argc > 1 ? " only)" : "", n_passed, n_failed, n_skipped);
	fflush(stdout);
	write_totals();
	CU_cleanup_registry();
	notes_free(&skips);
	notes_free(&failures);
	free(cur_skip);
	free(totals_path);
	return n_failed || n_passed + n_skipped == 0 ? 1 : 0;
}

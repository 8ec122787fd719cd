/*
 * suites.h - one registration function per CUnit suite. Each is defined in its
 * own tests/unit/test_*.c; main.c lists them in one table. They are weak so a
 * runner built from a subset of the files still links; a listed suite that no
 * file defines, or that registers no tests, fails the run.
 */
#ifndef PC_TEST_SUITES_H
#define PC_TEST_SUITES_H

#include <stddef.h>

#include <CUnit/CUnit.h>

#define PC_SUITES(X) \
	X(crc32c) X(record) X(proto) X(auth) X(sim) X(posix) X(relay) X(relay_hw) X(config) X(engine) X(relwr) X(fixtures) X(report) X(verdict) X(status) X(html) X(vcache) X(scan) X(setup) X(qualify) X(lava) X(jsonl) X(xml) X(link) X(tty) X(crash) X(spawn) X(json)

#define PC_SUITE_DECL(n) int suite_##n(void) __attribute__((weak));
PC_SUITES(PC_SUITE_DECL)
#undef PC_SUITE_DECL

/*
 * Skip (part of) the running test, saying why: the runner counts a test that
 * skipped and failed nothing as skipped, never as passed, and lists the reason
 * before its closing "unit: N passed, N failed, N skipped" line. With PC_CI=1
 * (.ci/run) a skip is a failure. Call it, then return from the test (or go on
 * with the parts that can run).
 */
void pc_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A suite's tests, in order, and their registration: 0, or -1 when CUnit
 * cannot take them. */
struct pc_test {
	const char *name;
	CU_TestFunc fn;
};
int pc_test_suite(const char *name, const struct pc_test *tests, size_t n);

/* Make a scratch directory for a test (under $TMPDIR or build/), returns a static path. */
const char *pc_test_tmpdir(const char *name);

#endif

/*
 * main.c - the one CUnit runner: registers every suite listed in suites.h.
 */
#include "suites.h"

#include <CUnit/Basic.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/util.h"

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

int main(int argc, char **argv)
{
	unsigned fails, ran, matched = 0;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	for (size_t i = 0; i < PC_ARRAY_SIZE(suites); i++) {
		if (argc > 1 && strcmp(argv[1], suites[i].name) != 0)
			continue;
		matched++;
		if (!suites[i].reg) {
			/* a suite that is listed but that no file defines would run
			 * nothing and pass: that is a failure of the test suite */
			fprintf(stderr, "suite %s is listed in suites.h but no tests/unit/test_*.c defines it\n",
				suites[i].name);
			CU_cleanup_registry();
			return 1;
		}
		if (suites[i].reg() != 0) {
			fprintf(stderr, "suite %s failed to register: %s\n", suites[i].name, CU_get_error_msg());
			CU_cleanup_registry();
			return 2;
		}
	}
	if (argc > 1 && !matched) {
		fprintf(stderr, "no suite named '%s' (see tests/unit/suites.h)\n", argv[1]);
		CU_cleanup_registry();
		return 2;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	fails += CU_get_number_of_suites_failed();
	ran = CU_get_number_of_tests_run();
	printf("unit: %u passed, %u failed\n", ran - CU_get_number_of_tests_failed(), CU_get_number_of_tests_failed());
	CU_cleanup_registry();
	return fails || !ran ? 1 : 0;
}

/*
 * test_json.c - the one set of JSON field getters (common/json.h): a member,
 * a string, an integer, each with what it gives for an absent member, a
 * member of another type, a JSON null and no object at all.
 */
#include "tests/unit/suites.h"

#include <errno.h>

#include "common/json.h"
#include "common/util.h"

static void test_getters(void)
{
	json_object *o = json_tokener_parse("{\"s\":\"x\",\"i\":-7,\"n\":null,\"o\":{\"k\":3},\"b\":true}");
	json_object *arr = json_tokener_parse("[1,2]");
	int64_t v = 42;

	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_PTR_NOT_NULL(pc_jget(o, "o"));
	CU_ASSERT_PTR_NULL(pc_jget(o, "absent"));
	CU_ASSERT_PTR_NULL(pc_jget(o, "n"));
	CU_ASSERT_PTR_NULL(pc_jget(NULL, "s"));
	CU_ASSERT_PTR_NULL(pc_jget(arr, "s"));
	CU_ASSERT_STRING_EQUAL(pc_jstr(o, "s", NULL), "x");
	CU_ASSERT_STRING_EQUAL(pc_jstr(o, "i", "def"), "def");
	CU_ASSERT_PTR_NULL(pc_jstr(o, "absent", NULL));
	CU_ASSERT_STRING_EQUAL(pc_jstr(NULL, "s", ""), "");
	CU_ASSERT_EQUAL(pc_jint(o, "i", &v), 0);
	CU_ASSERT_EQUAL(v, -7);
	CU_ASSERT_EQUAL(pc_jint(o, "s", &v), -EINVAL);
	CU_ASSERT_EQUAL(pc_jint(o, "absent", &v), -ENOENT);
	CU_ASSERT_EQUAL(pc_jint(o, "n", &v), -ENOENT);
	CU_ASSERT_EQUAL(v, -7);		/* untouched */
	CU_ASSERT_EQUAL(pc_jint_or(pc_jget(o, "o"), "k", -1), 3);
	CU_ASSERT_EQUAL(pc_jint_or(o, "b", -1), -1);
	CU_ASSERT_EQUAL(pc_jint_or(NULL, "i", 9), 9);
	json_object_put(o);
	json_object_put(arr);
}

int suite_json(void)
{
	static const struct pc_test tests[] = {
		{ "a member, a string, an integer: absent, other type, null, no object", test_getters },
	};

	return pc_test_suite("json", tests, PC_ARRAY_SIZE(tests));
}

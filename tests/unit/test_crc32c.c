/*
 * test_crc32c.c - CRC32C: standard check values, incremental use, and the
 * hardware path against the table on every length and alignment.
 */
#include "tests/unit/suites.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/util.h"

typedef uint32_t (*crc_fn)(uint32_t crc, const void *buf, size_t len);

static const struct {
	const char *name;
	crc_fn fn;
} impls[] = {
	{ "pc_crc32c", pc_crc32c },
	{ "pc_crc32c_sw", pc_crc32c_sw },
	{ "pc_crc32c_hw", pc_crc32c_hw },
};

static void test_vectors(void)
{
	uint8_t zeros[32], ones[32], inc[32];

	memset(zeros, 0, sizeof(zeros));
	memset(ones, 0xff, sizeof(ones));
	for (int i = 0; i < 32; i++)
		inc[i] = (uint8_t)i;
	for (size_t i = 0; i < PC_ARRAY_SIZE(impls); i++) {
		crc_fn f = impls[i].fn;

		/* RFC 3720 appendix B.4 and the usual check value */
		CU_ASSERT_EQUAL(f(0, "123456789", 9), 0xe3069283u);
		CU_ASSERT_EQUAL(f(0, zeros, 32), 0x8a9136aau);
		CU_ASSERT_EQUAL(f(0, ones, 32), 0x62a8ab43u);
		CU_ASSERT_EQUAL(f(0, inc, 32), 0x46dd794eu);
		CU_ASSERT_EQUAL(f(0, "", 0), 0);
		CU_ASSERT_EQUAL(f(0x12345678u, "", 0), 0x12345678u);
		CU_ASSERT_EQUAL(f(0, "a", 1), 0xc1d04330u);
	}
}

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint8_t rng8(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint8_t)(rng_state >> 24);
}

static void test_incremental(void)
{
	uint8_t buf[300];
	uint32_t whole;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = rng8();
	for (size_t k = 0; k < PC_ARRAY_SIZE(impls); k++) {
		crc_fn f = impls[k].fn;

		whole = f(0, buf, sizeof(buf));
		for (size_t cut = 0; cut <= sizeof(buf); cut++)
			CU_ASSERT_EQUAL(f(f(0, buf, cut), buf + cut, sizeof(buf) - cut), whole);
		/* three pieces, and byte by byte */
		CU_ASSERT_EQUAL(f(f(f(0, buf, 7), buf + 7, 100), buf + 107, sizeof(buf) - 107), whole);
		{
			uint32_t c = 0;

			for (size_t i = 0; i < sizeof(buf); i++)
				c = f(c, buf + i, 1);
			CU_ASSERT_EQUAL(c, whole);
		}
	}
	/* all three agree */
	CU_ASSERT_EQUAL(pc_crc32c_sw(0, buf, sizeof(buf)), pc_crc32c_hw(0, buf, sizeof(buf)));
	CU_ASSERT_EQUAL(pc_crc32c(0, buf, sizeof(buf)), pc_crc32c_sw(0, buf, sizeof(buf)));
}

static void test_hw_matches_sw(void)
{
	uint8_t buf[300 + 8 + 8];
	unsigned mismatches = 0;

	if (!pc_crc32c_have_hw())
		printf("\n    no hardware CRC32C on this CPU: only the table implementation was exercised\n");
	else
		printf("\n    comparing %s against the table\n", pc_crc32c_impl_name());
	for (int round = 0; round < 4; round++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = rng8();
		for (size_t align = 0; align < 8; align++)
			for (size_t len = 0; len <= 300; len++) {
				uint32_t seed = round ? (uint32_t)rng8() << 24 | rng8() : 0;

				if (pc_crc32c_hw(seed, buf + align, len) != pc_crc32c_sw(seed, buf + align, len))
					mismatches++;
			}
	}
	CU_ASSERT_EQUAL(mismatches, 0);
}

/* Four at once: each result that of the table, any lengths and alignments. */
static void test_x4(void)
{
	uint8_t buf[4][600];
	unsigned mismatches = 0;

	for (int k = 0; k < 4; k++)
		for (size_t i = 0; i < sizeof(buf[k]); i++)
			buf[k][i] = rng8();
	for (size_t len = 0; len <= 520; len += (len < 20 ? 1 : 7)) {
		const uint8_t *b[4] = { buf[0], buf[1] + 1, buf[2] + 3, buf[3] + 8 };
		uint32_t out[4];

		pc_crc32c_x4(b, len, out);
		for (int k = 0; k < 4; k++)
			mismatches += out[k] != pc_crc32c_sw(0, b[k], len);
	}
	CU_ASSERT_EQUAL(mismatches, 0);
}

static void test_impl_name(void)
{
	const char *n = pc_crc32c_impl_name();

	CU_ASSERT(strcmp(n, "sse4.2") == 0 || strcmp(n, "armv8-crc") == 0 || strcmp(n, "table") == 0);
	CU_ASSERT_EQUAL(strcmp(n, "table") != 0, pc_crc32c_have_hw());
}

int suite_crc32c(void)
{
	static const struct pc_test tests[] = {
		{ "standard vectors", test_vectors },
		{ "incremental equals one-shot", test_incremental },
		{ "hardware equals table, every length and alignment", test_hw_matches_sw },
		{ "implementation name", test_impl_name },
		{ "four buffers at once match the table", test_x4 },
	};

	return pc_test_suite("crc32c", tests, PC_ARRAY_SIZE(tests));
}

/*
 * test_qualify.c - the exact binomial bound and the cuts a target needs
 * (harness/report/qualify.h), against reference values.
 *
 * The references were computed independently of this code: by bisection on
 * the binomial distribution function summed term by term with Python's exact
 * integer binomial coefficients (math.comb), which is the definition of the
 * one-sided Clopper-Pearson bound; they agree with R's
 * binom.test(k, n, alternative = "less") (0.006282 for 2 of 1,000).
 */
#include "tests/unit/suites.h"

#include <math.h>

#include "harness/report/qualify.h"

static void near(double got, double want)
{
	CU_ASSERT_DOUBLE_EQUAL(got, want, want * 1e-6);
}

static void test_upper_references(void)
{
	near(qual_upper(0, 3000, 0.95), 0.00099808);
	near(qual_upper(2, 1000, 0.95), 0.00628228);
	near(qual_upper(10, 200, 0.95), 0.08333515);
	near(qual_upper(0, 120, 0.95), 0.02465540);
	near(qual_upper(1, 50, 0.95), 0.09139813);
	near(qual_upper(0, 1, 0.95), 0.95);
	/* at other confidences (the report's --confidence), by the same bisection */
	near(qual_upper(0, 300, 0.99), 0.01523335);
	near(qual_upper(3, 500, 0.99), 0.01994917);
	near(qual_upper(1, 10, 0.90), 0.33684772);
	near(qual_upper(7, 15, 0.95), 0.70001353);	/* sim-lying-flush, mode flush */
}

static void test_upper_edges(void)
{
	CU_ASSERT_EQUAL(qual_upper(0, 0, 0.95), 1.0);	/* no cut bounds nothing */
	CU_ASSERT_EQUAL(qual_upper(7, 7, 0.95), 1.0);
	CU_ASSERT(qual_upper(8, 7, 0.95) < 0);		/* more failures than cuts */
	CU_ASSERT(qual_upper(0, 10, 0.2) < 0);		/* confidence out of range */
	CU_ASSERT(qual_upper(0, 10, 1.0) < 0);
	CU_ASSERT(qual_upper(0, QUAL_N_MAX + 1, 0.95) < 0);
	/* more cuts, lower bound; more failures, higher bound */
	CU_ASSERT(qual_upper(1, 2000, 0.95) < qual_upper(1, 1000, 0.95));
	CU_ASSERT(qual_upper(2, 1000, 0.95) > qual_upper(1, 1000, 0.95));
	CU_ASSERT(qual_upper(2, 1000, 0.99) > qual_upper(2, 1000, 0.95));
	double big = qual_upper(5, QUAL_N_MAX, 0.95);
	CU_ASSERT(big > 1.05e-8 && big < 1.052e-8);	/* 10.513 / n, the Poisson limit */
	CU_ASSERT(qual_upper(QUAL_K_MAX + 1, QUAL_N_MAX, 0.95) < 0);
	double wide = qual_upper(QUAL_K_MAX, 10 * QUAL_K_MAX, 0.95);
	CU_ASSERT(wide > 0.10015 && wide < 0.10018);	/* near p + 1.645 sd = 0.100156 */
}

static void test_cuts_needed(void)
{
	CU_ASSERT_EQUAL(qual_cuts_needed(0, 0.001, 0.95), 2995);
	CU_ASSERT_EQUAL(qual_cuts_needed(2, 0.01, 0.95), 628);
	CU_ASSERT_EQUAL(qual_cuts_needed(1, 0.001, 0.95), 4742);
	CU_ASSERT_EQUAL(qual_cuts_needed(0, 0.0, 0.95), 0);	/* out of range */
	CU_ASSERT_EQUAL(qual_cuts_needed(0, 1.0, 0.95), 0);
	CU_ASSERT_EQUAL(qual_cuts_needed(0, 0.01, 0.3), 0);
	CU_ASSERT_EQUAL(qual_cuts_needed(0, QUAL_RATE_MIN, QUAL_CONF_MAX), 92103400);
	CU_ASSERT_EQUAL(qual_cuts_needed(QUAL_K_MAX, 1e-3, 0.95), 0);	/* beyond QUAL_N_MAX */
	CU_ASSERT_EQUAL(qual_cuts_needed(QUAL_K_MAX + 1, 0.5, 0.95), 0);
	/* the answer is the least n: one fewer does not reach the rate */
	uint64_t n = qual_cuts_needed(3, 0.005, 0.9);
	CU_ASSERT(n > 0 && qual_upper(3, n, 0.9) <= 0.005 && qual_upper(3, n - 1, 0.9) > 0.005);
}

int suite_qualify(void)
{
	CU_pSuite s = CU_add_suite("qualify", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "Clopper-Pearson bound against references", test_upper_references) ||
	    !CU_add_test(s, "bound edges and monotony", test_upper_edges) ||
	    !CU_add_test(s, "cuts needed for a target", test_cuts_needed))
		return -1;
	return 0;
}

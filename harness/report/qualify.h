/*
 * qualify.h - the figures a qualification signs: an exact upper confidence
 * bound on a per-cut violation probability, and how many cuts it takes to
 * show a rate below a target.
 *
 * The bound is the one-sided Clopper-Pearson bound (Clopper and Pearson,
 * Biometrika 26, 1934): the largest p for which seeing k or fewer violations
 * in n cuts still has probability at least 1 - confidence. It is exact (no
 * normal approximation), so 0 violations in n cuts reads "below
 * 1 - (1 - confidence)^(1/n)", never "0%". docs/results.md#confidence-bounds.
 */
#ifndef PC_QUALIFY_H
#define PC_QUALIFY_H

#include <stdint.h>

/* The bounds on what the functions take: confidence in [QUAL_CONF_MIN,
 * QUAL_CONF_MAX], counts up to QUAL_N_MAX (a night is thousands of cuts). */
#define QUAL_CONF_MIN	0.5
#define QUAL_CONF_MAX	0.9999
#define QUAL_N_MAX	1000000000ull
#define QUAL_RATE_MIN	1e-7
#define QUAL_K_MAX	1000000ull	/* violations: past this a rate needs no bound */

#define QUAL_METHOD	"Clopper-Pearson exact binomial, one-sided"

/*
 * The upper confidence bound of the per-cut violation probability after k
 * violations in n cuts. Returns it in [0, 1], or a negative value when the
 * inputs are out of range (k > n, k > QUAL_K_MAX, n > QUAL_N_MAX,
 * confidence out of range). n == 0 bounds nothing: 1.
 */
double qual_upper(uint64_t k, uint64_t n, double confidence);

/*
 * The least number of cuts n such that k violations among them still show
 * the rate below `rate` at `confidence` (qual_upper(k, n, confidence) <=
 * rate). 0 when the inputs are out of range (k > QUAL_K_MAX too) or n would exceed QUAL_N_MAX.
 * With k = 0: ceil(ln(1 - c) / ln(1 - rate)); 2,995 for 0.1% at 95%.
 */
uint64_t qual_cuts_needed(uint64_t k, double rate, double confidence);

#endif

/*
 * qualify.c - exact binomial confidence bounds (qualify.h).
 */
#include "harness/report/qualify.h"

#include <math.h>

/* One step of the modified Lentz method: the factor the term num adds. */
static double lentz_step(double num, double *c, double *d)
{
	const double tiny = 1e-300;

	*d = 1.0 + num * *d;
	*c = 1.0 + num / *c;
	if (fabs(*d) < tiny)
		*d = tiny;
	if (fabs(*c) < tiny)
		*c = tiny;
	*d = 1.0 / *d;
	return *d * *c;
}

/*
 * The continued fraction of the regularized incomplete beta function
 * (the modified Lentz method; Press et al., Numerical Recipes, 6.4).
 */
static double beta_cf(double a, double b, double x)
{
	double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0), h;

	if (fabs(d) < 1e-300)
		d = 1e-300;
	d = 1.0 / d;
	h = d;
	for (int m = 1; m <= 10000; m++) {
		double m2 = 2.0 * m, del;

		h *= lentz_step(m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)), &c, &d);
		del = lentz_step(-(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)), &c, &d);
		h *= del;
		if (fabs(del - 1.0) < 1e-15)
			break;
	}
	return h;
}

/* I_x(a, b), the regularized incomplete beta function, for a, b > 0. */
static double beta_reg(double a, double b, double x)
{
	if (x <= 0.0)
		return 0.0;
	if (x >= 1.0)
		return 1.0;
	double ln_front = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	double front = exp(ln_front);

	if (x < (a + 1.0) / (a + b + 2.0))
		return front * beta_cf(a, b, x) / a;
	return 1.0 - front * beta_cf(b, a, 1.0 - x) / b;
}

static int conf_ok(double confidence)
{
	return confidence >= QUAL_CONF_MIN && confidence <= QUAL_CONF_MAX;
}

double qual_upper(uint64_t k, uint64_t n, double confidence)
{
	if (!conf_ok(confidence) || n > QUAL_N_MAX || k > n || k > QUAL_K_MAX)
		return -1.0;
	if (n == 0 || k == n)
		return 1.0;
	if (k == 0)	/* closed form: (1 - p)^n = 1 - confidence */
		return -expm1(log1p(-confidence) / (double)n);
	/*
	 * P(X <= k | n, p) = 1 - I_p(k + 1, n - k), decreasing in p: the bound
	 * is the p where it falls to 1 - confidence, i.e. I_p(k+1, n-k) =
	 * confidence. Bisection: 200 halvings reach the double's precision.
	 */
	double a = (double)k + 1.0, b = (double)(n - k), lo = 0.0, hi = 1.0;
	for (int i = 0; i < 200 && hi - lo > 1e-16 * hi; i++) {
		double mid = 0.5 * (lo + hi);

		if (beta_reg(a, b, mid) < confidence)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

uint64_t qual_cuts_needed(uint64_t k, double rate, double confidence)
{
	if (!conf_ok(confidence) || !(rate >= QUAL_RATE_MIN && rate < 1.0) || k > QUAL_K_MAX)
		return 0;
	if (k == 0) {
		double n = ceil(log1p(-confidence) / log1p(-rate) - 1e-9);

		return n <= (double)QUAL_N_MAX ? (uint64_t)n : 0;
	}
	/* qual_upper falls as n grows with k fixed: double, then halve. */
	uint64_t lo = k, hi = k + 1;
	while (qual_upper(k, hi, confidence) > rate) {
		lo = hi;
		if (hi > QUAL_N_MAX / 2)
			return 0;
		hi *= 2;
	}
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (qual_upper(k, mid, confidence) > rate)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/*
 * plan.c - `powercut plan --rate P [--confidence C] [--failures K --cuts N]
 * [--cycle-s S]`: the cuts needed to show a per-cut violation rate below P at
 * confidence C, and, for a campaign under way, what it shows now and how many
 * more cuts (and how long) reach the target.
 */
#include "harness/cli/plan.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "harness/report/qualify.h"

static const char plan_usage[] =
	"usage: powercut plan --rate P [--confidence C] [--failures K --cuts N] [--cycle-s S]\n"
	"\n"
	"How many power cuts show a per-cut violation rate below P at confidence C\n"
	"(" QUAL_METHOD ").\n"
	"  --rate P          the target rate: 0.001 or 0.1% (from 1e-7 to below 1)\n"
	"  --confidence C    0.95 or 95% (default 95%; from 50% to 99.99%)\n"
	"  --failures K      violations seen so far (cycles with a FAIL), with --cuts\n"
	"  --cuts N          cuts judged so far\n"
	"  --cycle-s S       seconds per cycle, to say how long the cuts take\n"
	"Exit 0, or 2 on a bad option. docs/results.md#confidence-bounds.\n";

/* A fraction from "0.001" or "0.1%", in [lo, hi]; -1 if it is not one. */
static double parse_fraction(const char *s, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v))
		return -1;
	if (*end == '%') {
		v /= 100.0;
		end++;
	}
	if (*end || v < lo || v > hi)
		return -1;
	return v;
}

/* A count 0..max in decimal: 0, -EINVAL (not one), or -ERANGE (above max). */
static int parse_count(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* "1,234,567" */
static const char *thousands(uint64_t v, char *buf, size_t len)
{
	char raw[32];
	int n = snprintf(raw, sizeof(raw), "%" PRIu64, v), o = 0;

	for (int i = 0; i < n && (size_t)o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = 0;
	return buf;
}

static void say_duration(double s)
{
	if (s < 3600)
		printf("%.0f min", ceil(s / 60));
	else if (s < 2 * 86400)
		printf("%.1f h", s / 3600);
	else
		printf("%.1f days", s / 86400);
}

static void say_pct(double v)
{
	printf("%.3g%%", v * 100);
}

struct plan_args {
	double rate, conf, cycle_s;
	uint64_t k, n;
	int have_k, have_n;
};

/* The options, checked; 0, or 2 (the exit status) after saying what is wrong. */
static int plan_parse(int argc, char **argv, struct plan_args *a)
{
	static const struct option lo[] = {
		{ "rate", required_argument, NULL, 'r' },
		{ "confidence", required_argument, NULL, 'c' },
		{ "failures", required_argument, NULL, 'k' },
		{ "cuts", required_argument, NULL, 'n' },
		{ "cycle-s", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int o;

	*a = (struct plan_args){ .rate = -1, .conf = 0.95 };
	optind = 1;
	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case 'r':
			a->rate = parse_fraction(optarg, QUAL_RATE_MIN, 0.999999);
			if (a->rate < 0) {
				pc_err("plan: --rate '%s': give a fraction from 1e-7 to below 1, as 0.001 or 0.1%%", optarg);
				return 2;
			}
			break;
		case 'c':
			a->conf = parse_fraction(optarg, QUAL_CONF_MIN, QUAL_CONF_MAX);
			if (a->conf < 0) {
				pc_err("plan: --confidence '%s': give 0.5 to 0.9999, as 0.95 or 95%%", optarg);
				return 2;
			}
			break;
		case 'k':
			if (parse_count(optarg, QUAL_K_MAX, &a->k)) {
				pc_err("plan: --failures '%s': a count from 0 to %llu", optarg, (unsigned long long)QUAL_K_MAX);
				return 2;
			}
			a->have_k = 1;
			break;
		case 'n':
			if (parse_count(optarg, QUAL_N_MAX, &a->n)) {
				pc_err("plan: --cuts '%s': a count from 0 to %llu", optarg, (unsigned long long)QUAL_N_MAX);
				return 2;
			}
			a->have_n = 1;
			break;
		case 's':
			a->cycle_s = parse_fraction(optarg, 0.001, 86400);
			if (a->cycle_s < 0) {
				pc_err("plan: --cycle-s '%s': seconds per cycle, from 0.001 to 86400", optarg);
				return 2;
			}
			break;
		case 'h':
			fputs(plan_usage, stdout);
			exit(0);
		default:
			fputs(plan_usage, stderr);
			return 2;
		}
	}
	if (optind < argc || a->rate < 0 || a->have_k != a->have_n) {
		pc_err("plan: %s (see powercut plan --help)",
		       optind < argc ? "unexpected argument" : a->rate < 0 ? "--rate is required" :
		       "--failures and --cuts go together");
		return 2;
	}
	if (a->have_n && a->k > a->n) {
		pc_err("plan: --failures %" PRIu64 " is more than --cuts %" PRIu64, a->k, a->n);
		return 2;
	}
	return 0;
}

/* The cuts the target needs with 0, 1 and 2 violations. */
static void plan_table(const struct plan_args *a)
{
	char b1[32];

	printf("target: a per-cut violation rate below ");
	say_pct(a->rate);
	printf(" at %g%% confidence (%s)\n", a->conf * 100, QUAL_METHOD);
	for (uint64_t f = 0; f < 3; f++) {
		uint64_t need = qual_cuts_needed(f, a->rate, a->conf);

		if (need)
			printf("  with %" PRIu64 " violation%s: %s cuts", f, f == 1 ? "" : "s", thousands(need, b1, sizeof(b1)));
		else
			printf("  with %" PRIu64 " violation%s: more than %s cuts", f, f == 1 ? "" : "s",
			       thousands(QUAL_N_MAX, b1, sizeof(b1)));
		if (need && a->cycle_s > 0) {
			printf(" (");
			say_duration((double)need * a->cycle_s);
			printf(" at %g s a cycle)", a->cycle_s);
		}
		printf("\n");
	}
}

/* What a campaign under way shows, and what it still needs. */
static void plan_progress(const struct plan_args *a)
{
	double up = qual_upper(a->k, a->n, a->conf);
	uint64_t need = qual_cuts_needed(a->k, a->rate, a->conf);
	char b1[32], b2[32];

	printf("so far: %" PRIu64 " violation%s in %s cuts: ", a->k, a->k == 1 ? "" : "s",
	       thousands(a->n, b1, sizeof(b1)));
	if (a->n == 0) {
		printf("no bound yet\n");
	} else {
		printf("the rate is below ");
		say_pct(up);
		printf(" at %g%% confidence\n", a->conf * 100);
	}
	if (need && need <= a->n) {
		printf("the target is met\n");
	} else if (need) {
		printf("to reach the target: %s more cuts, if none of them fails",
		       thousands(need - a->n, b2, sizeof(b2)));
		if (a->cycle_s > 0) {
			printf(" (");
			say_duration((double)(need - a->n) * a->cycle_s);
			printf(")");
		}
		printf("\n");
	} else {
		printf("the target cannot be shown with %" PRIu64 " violations in at most %s cuts\n", a->k,
		       thousands(QUAL_N_MAX, b2, sizeof(b2)));
	}
}

int cmd_plan(int argc, char **argv)
{
	struct plan_args a;
	int rc = plan_parse(argc, argv, &a);

	if (rc)
		return rc;
	plan_table(&a);
	if (a.have_n)
		plan_progress(&a);
	return 0;
}

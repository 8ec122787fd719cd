/*
 * crash_space.c - every legal state at the cut, where that is affordable
 * (--every-state, docs/crash-states.md "The whole space"). At the real cut
 * each sector a volatile write covers holds its old bytes or the bytes of
 * one of the volatile writes to it: a mixed-radix count over those sectors,
 * one digit each (0 old, i the i-th volatile write to it in log order),
 * gives every one of the M states of the bound once. Before it starts, M
 * and the time it would take at the rate of the cycle's states judged so
 * far are said; over the limit (--max-states) the cycle is refused with
 * that estimate, nothing enumerated. Runs after the subsets and tears,
 * before the virtual cuts: a state they judged is a repeat here.
 */
#include "harness/crash/crash_states.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "common/util.h"

struct vsect {
	uint64_t lba;
	size_t s;		/* its index in keep[] */
};

static int vsect_cmp(const void *a, const void *b)
{
	const struct vsect *x = a, *y = b;

	if (x->lba != y->lba)
		return x->lba < y->lba ? -1 : 1;
	return x->s < y->s ? -1 : x->s > y->s;	/* log order: sect0 grows along the log */
}

/* The states judged so far, per second of the process's CPU (0: none judged yet). */
static double rate_so_far(const struct crash_states *c)
{
	double n = 0, ms = 0;

	for (unsigned m = 0; m < CRASH_M_MAX; m++) {
		n += c->r->by_mode[m];
		ms += c->r->cpu_ms_by_mode[m];
	}
	return n > 0 && ms > 0 ? n * 1000.0 / ms : 0;
}

/* "M states, about T at R states/s" into buf. */
static void estimate(const struct crash_states *c, double m_log2, uint64_t m, char *buf, size_t len)
{
	double rate = rate_so_far(c), secs = rate > 0 ? pow(2.0, m_log2) / rate : 0;
	char ms[48];

	if (m)
		snprintf(ms, sizeof(ms), "%" PRIu64, m);
	else
		snprintf(ms, sizeof(ms), "about 2^%.1f", m_log2);
	if (rate <= 0)
		snprintf(buf, len, "%s states (no rate measured yet)", ms);
	else if (secs < 1e9)
		snprintf(buf, len, "%s states, about %.0f s of CPU at the %.0f states/s of this cycle's first states", ms,
			 secs < 1 ? 1 : secs, rate);
	else
		snprintf(buf, len, "%s states, about 10^%.0f s of CPU at the %.0f states/s of this cycle's first states", ms,
			 log10(secs), rate);
}

/* The volatile writes' sectors by LBA, in log order at each (*vp), and the first of each LBA's
 * entries in them (*grpp: nu of them, then their count). The LBAs' count, or -ENOMEM. */
static ssize_t vsects(const struct crash_states *c, struct vsect **vp, size_t **grpp)
{
	struct vsect *v;
	size_t nv = 0, nu = 0, *grp = NULL;	/* grp[u]: the first of LBA u's entries in v */

	for (unsigned i = 0; i < c->inp->nvol; i++)
		nv += (size_t)c->inp->w[c->inp->vol[i]].n;	/* at most the log's sectors (bounded when read) */
	v = malloc((nv ? nv : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	nv = 0;
	for (unsigned i = 0; i < c->inp->nvol; i++) {
		const struct cwrite *w = &c->inp->w[c->inp->vol[i]];

		for (uint64_t k = 0; k < w->n; k++)
			v[nv++] = (struct vsect){ w->lba + k, w->sect0 + k };
	}
	qsort(v, nv, sizeof(*v), vsect_cmp);
	grp = malloc((nv + 1) * sizeof(*grp));
	if (!grp) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nv; i++) {
		if (i && v[i].lba == v[i - 1].lba)
			continue;
		grp[nu++] = i;
	}
	grp[nu] = nv;
	*vp = v;
	*grpp = grp;
	return (ssize_t)nu;
}

int crash_space(struct crash_states *c, char *err, size_t errlen)
{
	struct vsect *v = NULL;
	size_t nu, *grp = NULL;	/* grp[u]: the first of LBA u's entries in v */
	ssize_t lbas;
	unsigned *dig = NULL;
	uint64_t m = 1;
	double m_log2 = 0;
	char est[192], label[64];
	int rc = 0;

	if (!c->o->every_state)
		return 0;
	if ((lbas = vsects(c, &v, &grp)) < 0)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	nu = (size_t)lbas;
	for (size_t u = 0; u < nu; u++) {
		uint64_t radix = 1 + (grp[u + 1] - grp[u]);

		m_log2 += log2((double)radix);
		m = m && m <= UINT64_MAX / radix ? m * radix : 0;
	}
	estimate(c, m_log2, m, est, sizeof(est));
	c->r->space_legal = m;
	if (!m || m > c->o->max_states) {
		rc = pc_fail(err, errlen, -E2BIG, "board %s cycle %u: every state at the cut is %s: over the limit of %"
			     PRIu64 " (--max-states); not enumerated", c->inp->in->board, c->inp->in->cycle, est,
			     c->o->max_states);
		goto out;
	}
	if (c->o->say) {
		char line[320];

		snprintf(line, sizeof(line), "board %s cycle %u: every state at the cut: %s", c->inp->in->board,
			 c->inp->in->cycle, est);
		c->o->say(line, c->o->say_arg);
	}
	dig = calloc(nu ? nu : 1, sizeof(*dig));
	if (!dig) {
		rc = pc_fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	c->st.ack_limit = SIZE_MAX;
	for (uint64_t n = 0; n < m && !rc; n++) {
		/* durable writes whole, each volatile sector as its digit says */
		for (size_t i = 0; i < c->inp->nw; i++)
			memset(c->st.keep + c->inp->w[i].sect0, c->inp->w[i].durable, (size_t)c->inp->w[i].n);
		for (size_t u = 0; u < nu; u++)
			if (dig[u])
				c->st.keep[v[grp[u] + dig[u] - 1].s] = 1;
		snprintf(label, sizeof(label), "every state %" PRIu64, n);
		rc = crash_legal(c->j, CRASH_M_SPACE, label, err, errlen);
		for (size_t u = 0; u < nu; u++) {
			if (++dig[u] <= grp[u + 1] - grp[u])
				break;
			dig[u] = 0;
		}
	}
	c->r->space_done = !rc;
out:
	free(dig);
	free(grp);
	free(v);
	return rc;
}

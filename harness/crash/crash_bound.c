/*
 * crash_bound.c - what the enumeration judged against what the block layer
 * allows (issue 38, docs/crash-states.md "The bound"). At the real cut the
 * durable writes are whole and each sector of a volatile write holds its old
 * bytes or the bytes of one of the volatile writes to it: M = the product
 * over those sectors of (1 + the volatile writes covering it), 2^S when no
 * two volatile writes overlap (S their sectors). The states judged at the
 * cut are the distinct subsets, tears and a counted observed image; the
 * virtual cuts are states at earlier points, said apart. The design used and
 * what it leaves out are named.
 */
#include "harness/crash/crash_states.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* M as an exact product: "2^S", or "2^a x 3^b ..." when volatile writes overlap; its log2. */
static int legal_count(struct crash_states *c, char *err, size_t errlen)
{
	size_t n = 0, hist_n = 0;
	uint64_t *lba, hist[64][2];	/* (1 + writes covering a sector, sectors) */
	char *p = c->r->legal;
	size_t left = sizeof(c->r->legal);

	for (unsigned v = 0; v < c->inp->nvol; v++)
		n += (size_t)c->inp->w[c->inp->vol[v]].n;
	lba = malloc((n ? n : 1) * sizeof(*lba));
	if (!lba)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	n = 0;
	for (unsigned v = 0; v < c->inp->nvol; v++)
		for (uint64_t k = 0; k < c->inp->w[c->inp->vol[v]].n; k++)
			lba[n++] = c->inp->w[c->inp->vol[v]].lba + k;
	qsort(lba, n, sizeof(*lba), u64_cmp);
	c->r->legal_log2 = 0;
	for (size_t i = 0, j; i < n; i = j) {
		size_t h;

		for (j = i; j < n && lba[j] == lba[i]; j++)
			;
		for (h = 0; h < hist_n && hist[h][0] != 1 + (j - i); h++)
			;
		if (h == hist_n && hist_n < 64)
			hist[hist_n++][0] = 1 + (j - i), hist[h][1] = 0;
		if (h < 64)
			hist[h][1]++;
		c->r->legal_log2 += log2((double)(1 + (j - i)));
	}
	free(lba);
	snprintf(p, left, "1");
	for (size_t h = 0; h < hist_n; h++) {
		int w = snprintf(p, left, "%s%" PRIu64 "^%" PRIu64, h ? " x " : "", hist[h][0], hist[h][1]);

		if (w < 0 || (size_t)w >= left)
			break;
		p += w;
		left -= (size_t)w;
	}
	/* exactly, while it fits */
	c->r->legal_exact = 1;
	for (size_t h = 0; h < hist_n && c->r->legal_exact; h++)
		for (uint64_t k = 0; k < hist[h][1] && c->r->legal_exact; k++)
			c->r->legal_exact = c->r->legal_exact > UINT64_MAX / hist[h][0] ? 0 :
					    c->r->legal_exact * hist[h][0];
	return 0;
}

/* After the states: the bound, the design, what it leaves out. 0 or -errno. */
int crash_bound(struct crash_states *c, char *err, size_t errlen)
{
	struct crash_result *r = c->r;
	int rc = legal_count(c, err, errlen), all_masks = 1;
	unsigned multi = 0;

	if (rc)
		return rc;
	r->judged_at_cut = r->states - r->by_mode[CRASH_M_CUTS];
	for (unsigned v = 0; v < c->inp->nvol; v++) {
		all_masks &= crash_tear_all(c, v) || c->inp->w[c->inp->vol[v]].n < 2;
		multi += c->inp->w[c->inp->vol[v]].n >= 2;
	}
	r->leaves = 0;
	if (c->inp->nvol > c->o->exhaustive)
		r->leaves |= 1u << CRASH_LEAVE_SUBSETS;
	if (!all_masks)
		r->leaves |= 1u << CRASH_LEAVE_MASKS;
	if (c->inp->nvol >= 2 && multi && !c->o->locality)
		r->leaves |= 1u << CRASH_LEAVE_TEAR_DROP;
	if (multi >= 2)
		r->leaves |= 1u << CRASH_LEAVE_TWO;
	if (multi >= 3)
		r->leaves |= 1u << CRASH_LEAVE_THREE;
	if (r->space_done)
		r->leaves = 0;	/* every state at the cut was enumerated */
	if (r->by_mode[CRASH_M_CUTS])
		r->leaves |= 1u << CRASH_LEAVE_EARLIER;
	if (r->space_done) {
		snprintf(r->design, sizeof(r->design), "every state at the cut: each sector of a volatile write "
			 "old or the bytes of one of the volatile writes to it");
		return 0;
	}
	snprintf(r->design, sizeof(r->design), "%s; tears: %s%s", c->inp->nvol <= c->o->exhaustive ?
		 "every subset of the volatile writes" : "subsets: all, none, each single drop and keep, each "
		 "in-order prefix, seeded random draws",
		 c->inp->spr > CRASH_ALL_MASKS_SPR ? "a covering design's rows and the in-order prefixes, each "
		 "volatile write alone" : all_masks ? "every sector mask of each volatile write alone" :
		 "every sector mask of the first volatile write, the covering design's rows and the in-order "
		 "prefixes of the others, each alone",
		 multi >= 2 ? "; pairs of the first 8 volatile writes torn together by each pair of the "
		 "design's rows" : "");
	return 0;
}

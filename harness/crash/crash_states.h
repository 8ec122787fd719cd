/*
 * crash_states.h - the states: the crash-state space of one cycle, which
 * states are judged (--exhaustive subsets, --random draws, tears by a
 * covering design, virtual cuts, illegal states, the observed image:
 * crash_states.c; --every-state: crash_space.c) and the bound, what was
 * judged against what the block layer allows (crash_bound.c). struct
 * crash_states is made by crash_check.c, which drives the cycle through the
 * kinds of states in turn, and seen by these three files besides.
 */
#ifndef PC_HARNESS_CRASH_STATES_H
#define PC_HARNESS_CRASH_STATES_H

#include <stddef.h>
#include <stdint.h>

#include "harness/crash/crash.h"
#include "harness/crash/crash_inputs.h"
#include "harness/crash/crash_judge.h"

/*
 * The covering design over a record's spr sectors: sector i gets column
 * col(i), the i-th m-bit word of weight w (w > m/2), m the least with
 * C(m, w) >= spr. Row r keeps the sectors whose column has bit r. Any two
 * sectors i != j are (kept, dropped) in one row and (dropped, kept) in
 * another (distinct words of equal weight), and kept together in one (two
 * w-subsets of m bits with 2w > m meet); dropped together is the state
 * that drops the write. Rows that keep all or none are not tears: left out.
 * After the m rows come the spr - 1 in-order prefixes (the first 1, 2, ...
 * sectors kept), the tear of a device that programs a write in order, cut
 * in the middle: rows m .. m + spr - 2.
 */
struct design {
	unsigned m;
	unsigned rows;		/* m + spr - 1 (0 for one-sector records: no tear) */
	uint64_t *col;
};

struct crash_states {
	const struct crash_inputs *inp;
	const struct crash_opts *o;
	struct crash_result *r;
	struct crash_judge *j;
	struct crash_state st;	/* the state being made, which j judges */
};

/* crash_states.c: the kinds of states, each 0 or -errno. */
#define CRASH_ALL_MASKS_SPR	8u	/* records of at most 8 sectors: every tear mask (254 for 4 KiB) */
#define CRASH_ALL_MASKS_WRITES	8u	/* ... of every volatile write while at most 8; beyond, the first's */
#define CRASH_PAIR_WRITES	8u	/* two torn writes: the pairs of the first 8 volatile writes */
int crash_tear_all(const struct crash_states *c, unsigned v);
int crash_subsets(struct crash_states *c, char *err, size_t errlen);
int crash_tears(struct crash_states *c, const struct design *d, char *err, size_t errlen);
int crash_cuts(struct crash_states *c, char *err, size_t errlen);
int crash_illegal(struct crash_states *c, const struct design *d, char *err, size_t errlen);
/* The image after the real cut (in->post), placed among the states and judged. */
int crash_observed(struct crash_states *c, const struct design *d, char *err, size_t errlen);
int crash_design_make(struct design *d, uint32_t spr);
/* Each sector kept by one row and dropped by another, and every pair of sectors in each of the
 * three states a row can give it: 0, or -EPROTO naming what is missed. */
int crash_design_check(const struct design *d, uint32_t spr, char *err, size_t errlen);
/* crash_bound.c: after the states, the bound (r->judged_at_cut, legal, leaves, design). 0 or -errno. */
int crash_bound(struct crash_states *c, char *err, size_t errlen);
/* crash_space.c: every legal state at the cut (opts.every_state), or -E2BIG over the limit. */
int crash_space(struct crash_states *c, char *err, size_t errlen);

#endif

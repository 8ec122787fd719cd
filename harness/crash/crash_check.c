/*
 * crash_check.c - one cycle's crash states checked: its inputs read
 * (crash_inputs.c), its ACKs against the log (crash_acks.c), its states
 * made (crash_states.c, crash_space.c) and judged (crash_judge.c), the
 * bound (crash_bound.c); the result's line: crash.c. See crash.h and
 * docs/crash-states.md.
 */
#include "harness/crash/crash.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "harness/crash/crash_inputs.h"
#include "harness/crash/crash_judge.h"
#include "harness/crash/crash_states.h"

/* Every state of the cycle the options ask for, judged by a judge made here; the bound. 0 or -errno. */
static int states_run(const struct crash_inputs *in, const struct crash_opts *o, struct crash_result *r,
		      char *err, size_t errlen)
{
	struct crash_states c = { .inp = in, .o = o, .r = r };
	struct design d = { 0, 0, NULL };
	int rc;

	c.st.keep = calloc(in->nsect ? in->nsect : 1, 1);
	rc = c.st.keep ? crash_judge_new(&c.j, in, o, r, &c.st, err, errlen) :
			 pc_fail(err, errlen, -ENOMEM, "out of memory");
	if (rc)
		goto out;
	if (crash_design_make(&d, in->spr)) {
		rc = pc_fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = crash_design_check(&d, in->spr, err, errlen)))
		goto out;
	if ((rc = crash_subsets(&c, err, errlen)) || (rc = crash_tears(&c, &d, err, errlen)) ||
	    (rc = crash_space(&c, err, errlen)) ||
	    (rc = crash_cuts(&c, err, errlen)) || (rc = crash_illegal(&c, &d, err, errlen)))
		goto out;
	if (!in->in->post || !(rc = crash_observed(&c, &d, err, errlen)))
		rc = crash_bound(&c, err, errlen);
out:
	free(d.col);
	crash_judge_free(c.j);
	free(c.st.keep);
	return rc;
}

int crash_check(const struct crash_input *in, const struct crash_opts *o, struct crash_result *r, char *err,
		size_t errlen)
{
	struct crash_inputs c;
	double t0 = crash_clock_ms(CLOCK_MONOTONIC), c0 = crash_clock_ms(CLOCK_PROCESS_CPUTIME_ID);
	int rc;

	memset(r, 0, sizeof(*r));
	memset(&c, 0, sizeof(c));
	r->observed = -1;
	r->observed_agrees = -1;
	if (!(r->notes = json_object_new_array()))
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	if (o->exhaustive > CRASH_MAX_EXHAUSTIVE || o->random > CRASH_MAX_RANDOM || o->max_states > CRASH_MAX_STATES) {
		rc = pc_fail(err, errlen, -EINVAL, "at most %u writes enumerated exhaustively, %u random subsets and "
			  "%llu states of the whole space", CRASH_MAX_EXHAUSTIVE, CRASH_MAX_RANDOM, CRASH_MAX_STATES);
		goto out;
	}
	if ((rc = crash_inputs_load(&c, in, r, err, errlen)))
		goto out;
	r->writes = (unsigned)c.nw;
	r->volatile_ = c.nvol;
	r->durable = (unsigned)(c.nw - c.nvol);
	/* acknowledged but not durable: at each ACK mark, and at the real cut */
	if ((rc = crash_acks_check(&c, r, err, errlen)) || (rc = states_run(&c, o, r, err, errlen)))
		goto out;
	r->ms = crash_clock_ms(CLOCK_MONOTONIC) - t0;
	r->cpu_ms = crash_clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
out:
	crash_inputs_free(&c);
	if (rc)
		crash_result_clear(r);
	return rc;
}

/*
 * crash_check.c - one cycle's crash states checked: its inputs read
 * (crash_inputs.c), its ACKs against the log (crash_acks.c), its states
 * made (crash_states.c, crash_space.c) and judged (crash_judge.c), the
 * bound (crash_bound.c), the result. See crash.h and
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

void crash_opts_default(struct crash_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->exhaustive = CRASH_DEFAULT_EXHAUSTIVE;
	o->random = CRASH_DEFAULT_RANDOM;
	o->seed = 1;
	o->max_states = CRASH_DEFAULT_MAX_STATES;
}

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
	if ((in->in->post && (rc = crash_observed(&c, &d, err, errlen))) || (rc = crash_bound(&c, err, errlen)))
		goto out;
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

void crash_result_clear(struct crash_result *r)
{
	json_object_put(r->notes);
	r->notes = NULL;
}

int crash_result_ok(const struct crash_result *r)
{
	return r->acked_not_durable == 0 && r->acks_unmarked == 0 && r->mismatches == 0 && r->observed_agrees != 0 &&
	       r->caught == r->injected && r->locality_breaks == 0 && r->incremental_diffs == 0;
}

json_object *crash_result_json(const struct crash_input *in, const struct crash_result *r)
{
	json_object *o = json_object_new_object(), *bm = json_object_new_object();

	json_object_object_add(o, "board", json_object_new_string(in->board));
	json_object_object_add(o, "cycle", json_object_new_int64(in->cycle));
	if (r->mode[0])
		json_object_object_add(o, "mode", json_object_new_string(r->mode));
	json_object_object_add(o, "states", json_object_new_int64(r->states));
	json_object_object_add(o, "repeats", json_object_new_int64(r->repeats));
	json_object_object_add(o, "bound", crash_bound_json(r));
	json_object_object_add(o, "writes", json_object_new_int64(r->writes));
	json_object_object_add(o, "durable", json_object_new_int64(r->durable));
	json_object_object_add(o, "volatile", json_object_new_int64(r->volatile_));
	json_object_object_add(o, "acked", json_object_new_int64(r->acked));
	json_object_object_add(o, "acked_not_durable", json_object_new_int64(r->acked_not_durable));
	json_object_object_add(o, "ack_marks", json_object_new_int64(r->ack_marks));
	if (r->ack_marks)
		json_object_object_add(o, "acks_unmarked", json_object_new_int64(r->acks_unmarked));
	json_object_object_add(o, "lost_acked_states", json_object_new_int64(r->lost_acked_states));
	json_object_object_add(o, "mismatches", json_object_new_int64(r->mismatches));
	json_object_object_add(o, "injected", json_object_new_int64(r->injected));
	json_object_object_add(o, "caught", json_object_new_int64(r->caught));
	if (r->locality_checked) {
		json_object_object_add(o, "locality_checked", json_object_new_int64(r->locality_checked));
		json_object_object_add(o, "locality_breaks", json_object_new_int64(r->locality_breaks));
	}
	json_object_object_add(o, "incremental", json_object_new_int64(r->incremental));
	if (r->incremental_checked) {
		json_object_object_add(o, "incremental_checked", json_object_new_int64(r->incremental_checked));
		json_object_object_add(o, "incremental_diffs", json_object_new_int64(r->incremental_diffs));
	}
	for (unsigned m = 0; m < CRASH_M_MAX; m++) {
		json_object *x = json_object_new_object();
		json_object_object_add(x, "states", json_object_new_int64(r->by_mode[m]));
		char ms[32];

		snprintf(ms, sizeof(ms), "%.1f", r->ms_by_mode[m]);
		json_object_object_add(x, "ms", json_object_new_double_s(r->ms_by_mode[m], ms));
		snprintf(ms, sizeof(ms), "%.1f", r->cpu_ms_by_mode[m]);
		json_object_object_add(x, "cpu_ms", json_object_new_double_s(r->cpu_ms_by_mode[m], ms));
		json_object_object_add(bm, crash_mode_name((enum crash_mode)m), x);
	}
	json_object_object_add(o, "by_mode", bm);
	if (r->observed >= 0) {
		json_object *x = json_object_new_object();

		json_object_object_add(x, "state", json_object_new_string(!r->observed_legal ? "illegal" :
									   r->observed_known ? "legal" : "unknown"));
		json_object_object_add(x, "counted", json_object_new_boolean(r->observed == 1 || r->observed == 3));
		json_object_object_add(x, "enumerated", json_object_new_string(r->observed == 2 ? "exact" :
										r->observed == 1 ? "by_slot" :
										r->observed == 3 ? "added" : "no"));
		json_object_object_add(x, "legal", json_object_new_boolean(r->observed_legal));
		json_object_object_add(x, "known", json_object_new_boolean(r->observed_known));
		json_object_object_add(x, "verdict", json_object_new_string(r->observed_verdict));
		if (in->recorded) {
			json_object_object_add(x, "recorded", json_object_new_string(in->recorded));
			json_object_object_add(x, "agrees", json_object_new_boolean(r->observed_agrees == 1));
		}
		json_object_object_add(o, "observed", x);
	}
	json_object_object_add(o, "ms", json_object_new_int64((int64_t)(r->ms + 0.5)));
	json_object_object_add(o, "cpu_ms", json_object_new_int64((int64_t)(r->cpu_ms + 0.5)));
	json_object_object_add(o, "ok", json_object_new_boolean(crash_result_ok(r)));
	if (r->notes && json_object_array_length(r->notes))
		json_object_object_add(o, "notes", json_object_get(r->notes));
	return o;
}

/*
 * crash.c - what crash.h's face holds besides the check itself: the
 * options' defaults, the result (whether it is ok, its JSON line, the
 * bound's part of it) and the names of the kinds of states and of what the
 * design leaves out. It calls nothing else of harness/crash: every part
 * uses it. The check, one cycle driven through its states: crash_check.c.
 * See crash.h and docs/crash-states.md.
 */
#include "harness/crash/crash.h"

#include <stdio.h>
#include <string.h>

void crash_opts_default(struct crash_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->exhaustive = CRASH_DEFAULT_EXHAUSTIVE;
	o->random = CRASH_DEFAULT_RANDOM;
	o->seed = 1;
	o->max_states = CRASH_DEFAULT_MAX_STATES;
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

static const char *const mode_names[CRASH_M_MAX] = { "subsets", "tears", "cuts", "illegal", "observed", "space" };

const char *crash_mode_name(enum crash_mode m)
{
	return (unsigned)m < CRASH_M_MAX ? mode_names[m] : "?";
}

static const char *const leave_names[CRASH_LEAVE_N] = {
	"subsets of the volatile writes not drawn",
	"tears by sector masks outside the covering design",
	"a torn write with another volatile write dropped",
	"two torn writes by masks outside the pairwise design, or past the first 8 volatile writes",
	"three or more torn writes",
	"subsets and tears at earlier persistence points",
};

const char *crash_leave_name(unsigned k)
{
	return k < CRASH_LEAVE_N ? leave_names[k] : "?";
}

/* The JSON line's "bound". */
json_object *crash_bound_json(const struct crash_result *r)
{
	json_object *b = json_object_new_object(), *l = json_object_new_array();
	char s[96];

	json_object_object_add(b, "judged", json_object_new_int64(r->judged_at_cut));
	json_object_object_add(b, "legal", json_object_new_string(r->legal));
	snprintf(s, sizeof(s), "%.3f", r->legal_log2);
	json_object_object_add(b, "legal_log2", json_object_new_double_s(r->legal_log2, s));
	if (r->legal_exact && r->legal_exact <= INT64_MAX)
		json_object_object_add(b, "legal_exact", json_object_new_int64((int64_t)r->legal_exact));
	json_object_object_add(b, "exhaustive", json_object_new_boolean(crash_bound_exhaustive(r)));
	json_object_object_add(b, "earlier", json_object_new_int64(r->by_mode[CRASH_M_CUTS]));
	json_object_object_add(b, "design", json_object_new_string(r->design));
	for (unsigned k = 0; k < CRASH_LEAVE_N; k++)
		if (r->leaves & (1u << k))
			json_object_array_add(l, json_object_new_string(crash_leave_name(k)));
	json_object_object_add(b, "leaves_out", l);
	return b;
}

/* Every legal state at the cut judged. */
int crash_bound_exhaustive(const struct crash_result *r)
{
	return r->legal_exact && r->judged_at_cut >= r->legal_exact;
}

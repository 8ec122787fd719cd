/*
 * crash_judge.h - the judge: one crash state built in the map, scanned by
 * the agent's region_scan and judged by the engine against what it holds
 * (crash_judge.c; incrementally: the cycle fed once to a held engine, each
 * state's scan judged on it), the distinct states judged so far; and the
 * cycle's ACKs judged against the log (crash_acks.c). struct crash_judge is
 * crash_judge.c's alone. What it judges is the crash_state the states fill
 * (crash_states.h), read through the pointer given to crash_judge_new.
 */
#ifndef PC_HARNESS_CRASH_JUDGE_H
#define PC_HARNESS_CRASH_JUDGE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "harness/crash/crash.h"
#include "harness/crash/crash_inputs.h"

/* The state to judge: the states set it before each crash_state_judge or crash_legal. */
struct crash_state {
	uint8_t *keep;		/* per write sector: kept */
	size_t ack_limit;	/* the ACK events fed */
	size_t half;		/* 1 + a write sector kept only in its first half (a sub-sector tear,
				 * an illegal state), 0 none */
	int no_truth;		/* the state's truth is not known: no notes of its differences */
	uint64_t cap_lo, cap_hi;	/* findings of these seqs are kept (crash_judge_captured) */
};

struct crash_judge;

/* A judge of in's states, which st describes; the base image scanned (a verify event and the scan's rx
 * events, fed to every engine). 0 with *jp, or -errno, err set. */
int crash_judge_new(struct crash_judge **jp, const struct crash_inputs *in, const struct crash_opts *o,
		    struct crash_result *r, const struct crash_state *st, char *err, size_t errlen);
void crash_judge_free(struct crash_judge *j);
/* The verify event the next states' scan answers (owned by the caller); NULL: the inputs' partial one. */
void crash_judge_verify(struct crash_judge *j, json_object *verify);
/* The findings of the seqs [st->cap_lo, st->cap_hi] of the last state judged, as text: the caller's to
 * free (NULL when none). */
char *crash_judge_captured(struct crash_judge *j);
/*
 * Judge the state in st->keep[] (or, img_ready, the image already in the
 * map) with the ACKs up to st->ack_limit: 1 when its verdict says what it
 * holds, 0 when not, 2 (dedup) a state judged before, not judged again; -errno. *failed: the
 * verdict is FAIL.
 */
int crash_state_judge(struct crash_judge *j, enum crash_mode mode, const char *label, int img_ready, int *failed,
		      char *err, size_t errlen);
/* A legal state: judged, counted, a mismatch when its verdict is wrong; one judged before (the same
 * image and acks) is counted in repeats, not judged again. 0 or -errno. */
int crash_legal(struct crash_judge *j, enum crash_mode mode, const char *label, char *err, size_t errlen);
/* Is the state now in the map (with the ACKs up to st->ack_limit) one judged before? 1 yes; 0 no, and
 * it is remembered; -ENOMEM. */
int crash_state_seen(struct crash_judge *j);

/* Helpers the checker's files share. */
uint64_t crash_mix(uint64_t x);
/* A clock's time in ms (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID). */
double crash_clock_ms(clockid_t id);
/* One of the result's first CRASH_MAX_LISTED notes. */
void crash_note(struct crash_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void crash_vnote(struct crash_result *r, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* crash_acks.c: r->acked, acked_not_durable (at each mark, and at the real cut), ack_marks,
 * acks_unmarked. 0 or -errno. */
int crash_acks_check(const struct crash_inputs *in, struct crash_result *r, char *err, size_t errlen);
/* With marks: how many of the host's ACKs can have come by log entry at (the marks before it). */
size_t crash_marks_before(const struct crash_inputs *in, size_t at);

#endif

/*
 * crash.h - every crash state of one cycle, judged (issue 23, docs/crash-states.md).
 *
 * A cut shows one outcome. From a cycle's kept inputs -- the image at its
 * power-on (base), the dm-log-writes log of what the device completed, in
 * completion order with the FUA flag, and the cycle's events -- this builds
 * the crash states the block layer's durability rules allow, scans each one
 * with the agent's own scan code (agent/region.c) and judges it with the
 * verdict engine (harness/engine), in-process, and compares each verdict
 * with what the state holds.
 *
 * Durable, from the log alone (never from the ACKs): a write the log marks
 * FUA, and every write logged before a flush. The rest is volatile.
 *
 * The states, per cycle (CRASH_M_*):
 *   subsets  every subset of the volatile writes kept (the others dropped)
 *            while there are at most opts.exhaustive of them; beyond: all
 *            kept, all dropped, each single drop, each single keep, each
 *            in-order prefix, and opts.random seeded random subsets;
 *   tears    each volatile write torn by every sector mask of its record
 *            (records of at most 8 sectors; beyond 8 volatile writes, the
 *            first's), else by each row of a covering design (the other
 *            volatile writes kept); pairs of the first 8 torn together by
 *            each pair of the design's rows;
 *   cuts     a virtual cut at each persistence point (a flush or a FUA write
 *            in the log): the log up to it, with the ACKs marked (or
 *            received) by then;
 *   illegal  each durable acknowledged write dropped, torn, and torn within
 *            a sector: the judge must FAIL each, naming exactly its seqs
 *            (injected, caught);
 *   observed the image after the real cut (when kept), judged on its own;
 *   space    with opts.every_state, every legal state at the cut (each volatile
 *            sector old or one of its writes), when affordable.
 * Each distinct state (image and ACKs) is judged and counted once; the
 * agent's ACK marks in the log are checked where they stand (crash_acks.c);
 * the bound, judged of legal at the cut, is said (crash_bound.c).
 */
#ifndef PC_HARNESS_CRASH_H
#define PC_HARNESS_CRASH_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

enum crash_mode { CRASH_M_SUBSETS, CRASH_M_TEARS, CRASH_M_CUTS, CRASH_M_ILLEGAL, CRASH_M_OBSERVED, CRASH_M_SPACE,
		  CRASH_M_MAX };

#define CRASH_DEFAULT_EXHAUSTIVE	10u	/* every subset up to 2^10 states */
#define CRASH_MAX_EXHAUSTIVE		16u
#define CRASH_DEFAULT_RANDOM		64u
#define CRASH_MAX_RANDOM		100000u
#define CRASH_DEFAULT_MAX_STATES	1000000ull	/* --every-state: the whole space refused beyond */
#define CRASH_MAX_STATES		1000000000ull
/* bounds on one cycle's inputs (they are untrusted) */
#define CRASH_MAX_WRITES		65536u		/* writes in one log */
#define CRASH_MAX_BYTES			(256u << 20)	/* bytes the log's writes cover, together */
#define CRASH_MAX_MEDIA			(1ULL << 50)	/* bytes of a board's media */
#define CRASH_MAX_LISTED		16u		/* mismatching states described one by one */

#define CRASH_KEPT_MAX_CYCLES		64u	/* distinct record cycles a cycle.json lists */

struct crash_in_flight {
	int valid;		/* a record write the device had started and not completed at the cut */
	uint64_t lba, n, seq;	/* a record's: its bytes are made from (seed, seq, lba) */
	uint32_t cycle;
	uint16_t flags;
};

/* One kept session's cycle.json (crash_kept_read), every field bounded. */
struct crash_kept {
	char path[4096];		/* the cycle.json, for errors */
	uint32_t session;
	int finished;
	uint64_t media_bytes;		/* the base image's bytes (have_media), else CRASH_MAX_MEDIA */
	int have_media;
	int have_region;		/* region: the base image's superblock must say the same */
	char region_uuid[37];
	uint64_t region_seed, region_bytes;	/* region_bytes 0: not given */
	uint32_t record_size, nslots;
	int have_counts;		/* finished: the log's counts (the log must hold these) */
	uint64_t writes, fua_writes, flushes, log_entries, log_bytes;
	uint64_t marks;			/* mark entries (the agent's ACKs; 0 when absent) */
	unsigned ncycles;		/* distinct record cycles the log holds */
	int cycles_more;		/* more than CRASH_KEPT_MAX_CYCLES */
	uint32_t cycle;			/* its records' first cycle; none: the write in flight's; 0: none */
	int in_flight_op;		/* 0 none, 1 write, 2 flush */
	struct crash_in_flight in_flight;
};

/*
 * Read a session's cycle.json (path, the session of its folder's name):
 * 0, or -EPROTO with err naming the file and the first field that is
 * missing, of the wrong type or out of its bounds (damaged input).
 */
int crash_kept_read(const char *path, uint32_t session, struct crash_kept *k, char *err, size_t errlen);

struct crash_input {
	const char *board;
	unsigned cycle;		/* the write cycle judged: its events, and the power-on after it */
	json_object *config;	/* campaign.json's "config" (engine_configure), or NULL */
	json_object *events;	/* array: this board's events of cycle and cycle + 1, in order */
	const char *base;	/* the device image at the cycle's power-on */
	const char *log;	/* the dm-log-writes log of that power-on */
	const char *post;	/* the image the boot after the cut scanned, or NULL */
	struct crash_in_flight in_flight;
	const char *recorded;	/* the verdict verdicts.jsonl holds for the cycle ("PASS"...), or NULL */
	const struct crash_kept *kept;	/* the session's cycle.json, checked against the log and the
					 * base image; NULL: none */
};

/* A test's stand-in for a faulty judge: it may rewrite each verdict before it is compared. */
typedef void (*crash_verdict_hook)(json_object *verdict, void *arg);

struct crash_opts {
	unsigned exhaustive;	/* every subset while the volatile writes are at most this many */
	unsigned random;	/* seeded random subsets beyond */
	uint64_t seed;
	int locality;		/* judge each tear twice, the other volatile writes kept then dropped:
				 * the torn record's findings must not change (locality_breaks) */
	int full_judge;		/* every state judged by a fresh engine fed the whole cycle (no incremental
				 * judging: the slow reference path) */
	int check_incremental;	/* every state judged both ways: the verdicts must be the same
				 * (incremental_diffs) */
	int every_state;	/* every legal state at the cut (the whole space, crash_space.c), when it
				 * holds at most max_states; else the cycle is refused with an estimate */
	uint64_t max_states;
	void (*say)(const char *line, void *arg);	/* the estimate, before the whole space starts */
	void *say_arg;
	crash_verdict_hook hook;
	void *hook_arg;
};

struct crash_result {
	char mode[16];			/* the cycle's write mode, as its work names it */
	unsigned states;		/* distinct legal states judged (subsets, tears, cuts, and the observed
					 * one when it is legal, known and none of those) */
	unsigned repeats;		/* legal states enumerated again (the same image and acks): not
					 * judged, not counted */
	unsigned by_mode[CRASH_M_MAX];
	double ms_by_mode[CRASH_M_MAX];
	double cpu_ms_by_mode[CRASH_M_MAX];	/* the process's CPU time in each kind's states */
	unsigned writes, durable, volatile_, acked, acked_not_durable;
	unsigned ack_marks;		/* the agent's ACK marks in the log (pc-ack): each checked where it stands */
	unsigned acks_unmarked;		/* with marks: host ACKs with no mark in order (the record is not whole) */
	unsigned lost_acked_states;	/* states (legal or injected) that lose an acknowledged record */
	unsigned mismatches;		/* legal states whose verdict differs from what the state holds */
	unsigned injected, caught;
	unsigned locality_checked, locality_breaks;
	unsigned incremental;		/* states judged incrementally (the rest by the full judge) */
	unsigned incremental_checked;	/* with check_incremental: of those, judged by the full judge too */
	unsigned incremental_diffs;	/* ... whose two verdicts differ (must be 0) */
	uint64_t space_legal;		/* --every-state: the states at the cut it counted (0: past 2^64) */
	int space_done;			/* ... and enumerated them all */
	int observed;			/* -1 no post image; 0 not legal, or bytes no state has (not
					 * counted in states); 2 one of the enumerated states (counted
					 * there); 1 covered slot by slot (each torn write torn as one
					 * was); 3 legal and known but not in the design: 1 and 3 are one
					 * more distinct state (counted) */
	int observed_legal;		/* it keeps every write the log made durable */
	int observed_known;		/* every sector it holds is old or new: its truth is known */
	int observed_agrees;		/* the observed state's verdict is the one recorded (-1: unknown) */
	char observed_verdict[16];
	/* the bound (crash_bound.c): of the legal states at the cut, how many were judged */
	unsigned judged_at_cut;		/* states minus the virtual cuts' */
	char legal[96];			/* how many the block layer allows there, exactly: "2^S", or
					 * "2^a x 3^b ..." where volatile writes overlap */
	double legal_log2;
	uint64_t legal_exact;		/* the same, 0 past 2^64 - 1 */
	unsigned leaves;		/* what the design leaves out: bits of CRASH_LEAVE_* */
	char design[384];
	double ms, cpu_ms;		/* the cycle's wall and CPU time (this process's), all its states */
	json_object *notes;		/* array of strings: the first mismatches, seqs not durable */
};

void crash_opts_default(struct crash_opts *o);

/* What the bounded design leaves out (crash_result.leaves). */
enum { CRASH_LEAVE_SUBSETS, CRASH_LEAVE_MASKS, CRASH_LEAVE_TEAR_DROP, CRASH_LEAVE_TWO, CRASH_LEAVE_THREE,
       CRASH_LEAVE_EARLIER, CRASH_LEAVE_N };
const char *crash_leave_name(unsigned k);
/* Every legal state at the cut judged (judged_at_cut = legal_exact). */
int crash_bound_exhaustive(const struct crash_result *r);
/* The JSON line's "bound": judged, legal, legal_log2, exhaustive, earlier, design, leaves_out. */
json_object *crash_bound_json(const struct crash_result *r);

/*
 * Check one cycle. 0 with r filled (free r->notes with crash_result_clear),
 * or -errno with err naming the file and what to do (an input missing,
 * malformed or past the bounds).
 */
int crash_check(const struct crash_input *in, const struct crash_opts *o, struct crash_result *r, char *err,
		size_t errlen);
void crash_result_clear(struct crash_result *r);
/* The JSON line of a cycle (a new object). */
json_object *crash_result_json(const struct crash_input *in, const struct crash_result *r);
/* 1 when the cycle passes: acked_not_durable 0, acks_unmarked 0, mismatches 0, caught = injected, no
 * locality break, and the image after the cut judged as verdicts.jsonl says (known content or not). */
int crash_result_ok(const struct crash_result *r);
const char *crash_mode_name(enum crash_mode m);

#endif

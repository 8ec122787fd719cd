/*
 * engine_int.h - the verdict engine's state, shared by its parts. Nothing
 * outside the engine includes it: engine.h is the engine's interface.
 *
 * The engine is a pipeline in one direction; each part calls only the parts
 * below it:
 *   engine.c          intake: each event checked and dispatched
 *   engine_hold.c     beside the intake: a board held before a partial scan
 *                     and put back after it (crash-states' incremental judging)
 *   engine_scan.c     scan assembly: runs, slot and same lines; a complete
 *                     scan judged below, then adopted as the expected state
 *   engine_region.c   judge (HELLO): the region adopted, its continuity judged
 *   engine_judge.c    judge: sectors classified, records and cold slots judged
 *   engine_verdict.c  verdict: findings and verdicts encoded and emitted
 *   engine_state.c    the state itself: compact slot tables, a cycle's writes
 *   engine_ledger.c   beside the state: the verdicts a board was given, one
 *                     per cycle (its own object and header, engine_ledger.h)
 *   engine_carry.c    beside the state: the findings carried into the next
 *                     verdict (its own object and header, engine_carry.h)
 */
#ifndef PC_HARNESS_ENGINE_INT_H
#define PC_HARNESS_ENGINE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/json.h"
#include "common/proto.h"
#include "common/record.h"
#include "harness/engine/engine.h"
#include "harness/engine/engine_scan.h"
#include "harness/engine/engine_state.h"
#include "harness/results/verdict.h"

/* The most records one work may name: the protocol's limit (proto.c
 * MAX_RANGE_N) and records_per_cycle's (config.c). */
#define MAX_WORK_RECORDS	1048576u

/* Seqs a work may name: every one is then a JSON integer as it is. */
#define MAX_SEQ			((uint64_t)INT64_MAX)

/* The verdicts a board was given (engine_ledger.h). */
struct eng_ledger;
/* What the next verdict is to carry (engine_carry.h). */
struct eng_carry;

/* A write the device refused (an agent error with write_error). */
struct werr {
	uint32_t err;
	int mode;
	uint64_t lba, seq;
	char msg[256];
};

/* A region or one superblock copy, as HELLO describes it. */
struct sbrec {
	char uuid[37];
	uint64_t bytes, record_size, slots, seed, created;
	int has_created;	/* agents before it existed do not say */
};

struct wcycle {
	unsigned cycle;
	uint64_t first;
	uint32_t n;
	int mode, mode_run, pattern;
	uint8_t *sub, *ack;	/* one byte per record */
	uint32_t nsub, nack;
	int64_t t_work, t_last;
	json_object *cut;
	char infra[512];
	struct pc_policy pol;		/* what the work event's policy says (verdict.h) */
	int pol_has_unclassified;	/* it named "unclassified" (older ones do not) */
	struct werr werr[ENGINE_MAX_WRITE_ERRORS];
	uint32_t nwerr;		/* refused writes reported (the first ENGINE_MAX_WRITE_ERRORS kept) */
	/* each acknowledged record's latency (us), as ACKs said (format 2):
	 * at most n, allocated with the first */
	uint32_t *lat;
	uint32_t nlat;
	/* what reached the device so far (the latest AUDIT or DONE audit, a
	 * reference; format 2), or NULL */
	json_object *audit;
	int done;		/* the agent said DONE: the work ran to its end */
};

struct board {
	char name[64];
	/* the configured limits (engine_configure) */
	uint32_t lim_record_size;	/* 0: any */
	uint64_t lim_region_bytes;
	uint32_t lim_records;		/* work records per cycle, at most */
	/* a HELLO refused in this boot: the rest of the boot is ignored */
	int refused;
	unsigned refused_cycle;
	char refused_why[320];
	struct pc_geom g;
	int have_geom;
	/* the region as the engine knows it (every superblock field), and per
	 * superblock copy the difference from it last reported ("" none) */
	struct sbrec rec;
	int have_rec;
	char copy_sig[2][512];
	json_object *hello;
	json_object *last_device;	/* the last non-empty HELLO device (a reference) */
	/* what every verdict says of the device and its queue, built once per
	 * HELLO and shared by reference (verdicts are never changed after) */
	json_object *dev_cache, *queue_cache;
	struct eng_expect exp;	/* the expected state (engine_state.h) */
	struct wcycle *w;
	struct eng_scan scan;	/* the observed scan, and what the last VERIFY asked for (engine_scan.h) */
	/* bookkeeping */
	/* damage found by a scan that had no writes to judge: it goes into the
	 * next verdict, so nothing found is ever dropped */
	struct eng_carry *carry;	/* engine_carry.h; NULL: nothing carried */
	unsigned cur_cycle, last_cycle, last_work_cycle;
	int planned_mode;	/* the mode the boot in progress is to write (power_on), or -1 */
	int audit_require;	/* the board's "audit": "require" (engine_configure) */
	int scan_ok;		/* the last scan was complete and judged */
	struct eng_ledger *ledger;	/* the verdicts issued (engine_ledger.h), NULL: none */
	struct board *next;
};

struct engine {
	char campaign[64];
	engine_verdict_fn vfn;
	engine_note_fn nfn;
	void *arg;
	struct board *boards;
	unsigned nboards;
	int configured;		/* only the configured boards exist */
	/* the results format the verdicts are written in (engine_set_format),
	 * and what format 2 adds: the time of the event being fed, the wall
	 * clock and host of the run (run_start) */
	int format;
	int64_t t_now;
	int have_wall;
	int64_t wall_ms, wall_t;
	char host[72];
	uint64_t slots;		/* slots of every board's adopted geometry, together */
	uint32_t dmg_ceiling;	/* damaged sectors held per board */
	/* the boot_fail being fed names the device dead (its "dead_device": N
	 * BOOT_FAILs in a row, the campaign's stop.boot_fails): its verdict says so */
	uint32_t dead_device;
};

/* ---- judging ---- */

struct judge {
	struct engine *e;
	struct board *b;
	struct wcycle *w;
	uint32_t counts[PC_NCLASSES];
	uint32_t violations;
	json_object *findings;
	uint32_t nlisted;	/* findings in the array */
	uint32_t unlisted;	/* findings counted beyond ENGINE_MAX_FINDINGS */
	json_object *scratch;	/* the last unlisted finding (its details go nowhere) */
	uint64_t *hot;		/* a bitmap of the slots written by the judged cycle */
	/* pending not_written range, to list unacked ones compactly */
	uint64_t nw_first;
	uint32_t nw_n, nw_slot;
};

/* engine_region.c: 1 when the region changed (the scan in progress is the
 * caller's to drop), 0, or -EINVAL (refused: b->refused says so) */
int eng_set_geom(struct engine *e, struct board *b, const struct pc_msg *m, unsigned cycle,
		    char *err, size_t errlen);

/* engine_judge.c */
int eng_scan_overflow(struct engine *e, struct board *b);
int eng_judge_scan(struct engine *e, struct board *b);

/* engine_verdict.c */
void eng_note(struct engine *e, struct board *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void eng_wall_time(const struct engine *e, char *buf, size_t len);
int eng_verdict_simple(struct engine *e, struct board *b, unsigned cycle, enum pc_outcome outcome,
			  const char *reason);
int eng_verdict_write(struct judge *j, unsigned cycle, enum pc_outcome outcome, const struct wcycle *w,
		      json_object *judged, json_object *speed, const char *reason);
void eng_take_carry(struct judge *j);
void eng_flush_nw(struct judge *j);
json_object *eng_finding(struct judge *j, enum pc_class c, uint64_t seq, uint32_t slot, int acked, int mode);
void eng_add_int(json_object *o, const char *k, int64_t v);
void eng_describe_prev(json_object *f, const struct occ *prev);
void eng_audit_require(const struct engine *e, const struct board *b, struct wcycle *w);
void eng_add_refused(struct judge *j, const struct wcycle *w);
int eng_verdict_unjudged(struct engine *e, struct board *b, enum pc_outcome outcome, const char *reason,
			    json_object *extra);
void eng_carry_device(struct board *b, json_object *f);

/* engine_state.c (the slot tables and the expected state: engine_state.h) */
void eng_wcycle_free(struct wcycle *w);

#endif

/*
 * engine_board.h - the engine (struct engine: its boards, its callbacks,
 * what every board shares) and one board (struct board: its identity, the
 * configured limits, the region and geometry it adopted, and bookkeeping),
 * which holds its parts as objects of their own, one header each (issue
 * 41): the observed scan (b->scan, engine_scan.h), the expected state
 * (b->exp, engine_state.h), the cycle's writes (b->w, engine_wcycle.h),
 * the carried findings (engine_carry.h) and the ledger of verdicts
 * (engine_ledger.h); judgement is struct judge (engine_judge.h), the
 * verdict's encoding engine_verdict.h, the region's engine_region.h.
 * engine.c creates and frees boards. Nothing outside the engine includes
 * this: engine.h is the engine's interface.
 *
 * The engine is a pipeline in one direction; each part calls only the parts
 * below it (tests/integration/t-engine-layers.sh checks it):
 *   engine.c          intake: each event checked and dispatched
 *   engine_hold.c     beside the intake: a board held before a partial scan
 *                     and put back after it (crash-states' incremental judging)
 *   engine_scan.c     scan assembly: runs, slot and same lines; a complete
 *                     scan judged below, then adopted as the expected state
 *                     (engine_scan.h)
 *   engine_region.c   judge (HELLO): the region adopted, its continuity judged
 *                     (engine_region.h)
 *   engine_judge.c    judge: sectors classified, records and cold slots judged
 *                     (engine_judge.h)
 *   engine_verdict.c  verdict: findings and verdicts encoded and emitted
 *                     (engine_verdict.h)
 *   engine_state.c    the state itself: compact slot tables, the expected
 *                     state, a cycle's writes (engine_state.h, engine_wcycle.h)
 *   engine_ledger.c   beside the state: the verdicts a board was given, one
 *                     per cycle (its own object and header, engine_ledger.h)
 *   engine_carry.c    beside the state: the findings carried into the next
 *                     verdict (its own object and header, engine_carry.h)
 * A part below reads an object above it directly, never by calling up:
 * the judge reads the scan through b->scan (engine_scan.h says who does).
 */
#ifndef PC_HARNESS_ENGINE_BOARD_H
#define PC_HARNESS_ENGINE_BOARD_H

#include <stdint.h>

#include <json-c/json.h>

#include "common/proto.h"
#include "harness/engine/engine_types.h"
#include "harness/engine/engine_observed.h"
#include "harness/engine/engine_state.h"

struct wcycle;
/* The verdicts a board was given (engine_ledger.h). */
struct eng_ledger;
/* What the next verdict is to carry (engine_carry.h). */
struct eng_carry;

/* A region or one superblock copy, as HELLO describes it (engine_region.c's). */
struct sbrec {
	char uuid[37];
	uint64_t bytes, record_size, slots, seed, created;
	int has_created;	/* agents before it existed do not say */
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
	struct wcycle *w;	/* the cycle's writes to judge (engine_wcycle.h), or NULL */
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

#endif

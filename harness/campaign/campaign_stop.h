/*
 * campaign_stop.h - when a board, or the whole campaign, stops before its
 * cycles are run (docs/config.md "When a campaign stops"): a dead device
 * (stop.boot_fails BOOT_FAILs in a row), a screening run's first FAIL
 * (stop.on_fail), a rate target met (target, --target), and the results
 * filesystem at its floor (results_min_free). Private to harness/campaign.
 */
#ifndef PC_HARNESS_CAMPAIGN_STOP_H
#define PC_HARNESS_CAMPAIGN_STOP_H

#include <stdint.h>

#include <json-c/json.h>

#include "common/record.h"

struct bctx;
struct camp;
struct pc_verdict;

/* A board's part (struct bctx's "stop"), zeroed with it. */
struct camp_stop {
	int end;		/* the rule that stopped the board: enum pc_run_end + 1, 0 none */
	int replayed;		/* the end of its last run_end of an earlier run: the same */
	int run_ended;		/* its run_end is written: the run's finish writes none */
	unsigned boot_streak;	/* BOOT_FAIL verdicts in a row (resumed runs included) */
	/* towards the target, per mode: the cuts that count (pc_cut_counts)
	 * and the FAILs among them */
	uint64_t cuts[PC_MODE_MAX], fails[PC_MODE_MAX];
};

/* The campaign's part (struct camp's "disk"): the results filesystem. */
struct camp_disk {
	uint64_t next_ms;	/* when to look again (monotonic ms) */
	uint64_t free;		/* free bytes at the last look */
	int below;		/* the floor was reached: the loop ends, the run exits 2 */
};

/* A verdict of the board was recorded (or read back on resume). */
void camp_stop_count(struct bctx *b, const struct pc_verdict *v);
/* The boot that just failed makes the board's BOOT_FAILs in a row reach
 * stop.boot_fails: that count (the boot_fail event's "dead_device"), else 0. */
unsigned camp_stop_dead(const struct bctx *b);
/* The dead device's boot_fail is on record: its last worked cycle gets the
 * verdict of a final verification that never came, the board stops. */
void camp_stop_dead_board(struct bctx *b, unsigned n);
/* A boot's scan is judged, before the board writes again: does a rule (the
 * first FAIL, the target) stop it? It is stopped then (run_end written,
 * power off, B_DONE): 1, and the caller closes its link. */
int camp_stop_due(struct bctx *b);
/* Before the run powers a board on: a rule that already holds (a dead
 * device or a first FAIL an earlier run stopped at, a target met) keeps it
 * stopped: 1 (its state is B_DONE). */
int camp_stop_at_start(struct bctx *b);
/* Resume: an event of an earlier run (its run_ends). */
void camp_stop_replayed(struct bctx *b, json_object *ev);
/* The run_end "end" of board b as the run finishes (finished, interrupted,
 * given_up, disk_floor; a board stopped by a rule has written its own). */
const char *camp_stop_end_name(const struct bctx *b);
/* The results filesystem below results_min_free? One statvfs(3) of the local
 * folder, at most once a second unless force (it never blocks the loop for
 * long): 1 when below (said once, on stderr), else 0. */
int camp_disk_low(struct camp *c, int force);

#endif

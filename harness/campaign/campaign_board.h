/*
 * campaign_board.h - one board of the running campaign (struct bctx): its
 * relay, its state machine's state, its cycle, what it said, its tallies.
 * Its link and its cut plan are objects of their own, opaque here
 * (harness/link/board.c's, made by campaign_link.c; campaign_plan.c's);
 * its stop rules campaign_stop.c's. campaign_core.c sets its state
 * (campaign_core.h), and tells its link the phase.
 */
#ifndef PC_HARNESS_CAMPAIGN_BOARD_H
#define PC_HARNESS_CAMPAIGN_BOARD_H

#include <limits.h>
#include <stdint.h>

#include "common/proto.h"
#include "relay/relay.h"
#include "relay/relay_worker.h"
#include "harness/campaign/campaign_stop.h"

#define DRAIN_MS 300		/* after a cut: how long lines already sent may still arrive */

#define MAX_CONSECUTIVE_INFRA 3

/* B_CUTTING: the cut is asked of the relay's worker, its answer (the
 * instant the power went) not yet in */
enum bstate { B_OFF_WAIT, B_WAIT_HELLO, B_VERIFY, B_WRITING, B_DRAIN, B_DONE, B_CUTTING };

struct camp;
struct link_board;
struct camp_plan;
struct board_cfg;

/* Each board's verdicts, the whole campaign's (resumed runs included):
 * counted by campaign_resume.c only, as they are recorded. */
struct camp_tally {
	unsigned pass, fail, boot, infra;
};

struct bctx {
	struct camp *c;
	struct board_cfg *cfg;
	unsigned idx;
	unsigned relay_caps;	/* its driver's abilities (RELAY_CAP_*) */
	char console[PATH_MAX];	/* this power-on's console log, for a driver that captures it */
	int relay_open;
	struct relay_worker rw;	/* the relay's process (relay_worker.h) */
	struct relay_ctx rctx;	/* what a new worker opens the relay with */
	char rstate[PATH_MAX];	/* rctx.state_dir */
	uint32_t on_seq;	/* this power-on's ON request (0: answered) */
	enum bstate st;
	unsigned cycle;
	unsigned attempt;
	uint64_t deadline;
	uint64_t t_state;
	struct link_board *link;	/* its link (harness/link/board.h, opaque), its own */
	char boot_id[64];	/* of the last authenticated hello: a new power-on must change it */
	char boot_shown[96];	/* the boot line its console showed before a hello in this run ("" none yet) */
	unsigned rejects;	/* link_reject events for this cycle */
	uint64_t t_power;
	struct camp_plan *plan;	/* campaign_plan.c's (opaque) */
	unsigned consecutive_infra;
	char given_up[512];
	/* whether the board's agent was ever heard in this campaign (resumed
	 * runs included: from events.jsonl): spoke, an authenticated hello;
	 * heard, a hello the host accepted and asked to scan. A board never
	 * heard cannot have been harmed by a cut yet: its silent boot is a
	 * setup matter, not the device's BOOT_FAIL (campaign_setup.c) */
	int spoke, heard;
	/* the boot timeout passed on the last attempt: the power stays on a
	 * while (late_until), so that a slow boot is told from a dead one */
	int late;
	uint64_t t_late;
	/* what the agent said stops it in this cycle (a setup_error line),
	 * cause and reason as it said them (printable), and where it came */
	char said_cause[33];
	char said[PC_PROTO_MAX_REASON + 1];
	char said_via[PATH_MAX + 64];
	struct camp_tally tally;	/* campaign_resume.c's */
	struct camp_stop stop;		/* campaign_stop.c's */
	unsigned cycles_run;	/* in this run: each board's pace, for progress */
	/* the results writer's request that holds its last cycle's events and
	 * verdict: durable before its next power-on (results_durable) */
	uint64_t sync_seq;
};

#endif

/*
 * campaign_daemon.h - the running campaign (struct camp): its boards, its
 * results writer, its engine, its listener and the connections not proven
 * yet, its key, its clock. campaign_run.c makes it and ends it; campaign.h
 * is the daemon's interface to the rest of the harness.
 *
 * The campaign's files, in layers: each calls only those above it in this
 * list (and the links hand what they read up through struct camp_link_ops,
 * which campaign.c registers).
 *   campaign_core.c     clock, events, a board's state, power off, next cycle
 *   campaign_resume.c   verdicts recorded and tallied, campaign.json, resume
 *   campaign_reject.c   refusals on record (the tally and the events: harness/link/reject.c)
 *   campaign_link.c     the links' ops: a board's link made (harness/link/board.c,
 *                       below the campaign), what it hands up turned into calls
 *   campaign_infra.c    INFRA_ERROR, giving a board up
 *   campaign_plan.c, campaign_setup.c  the cycle's work and cut; a boot without a hello
 *   campaign.c          the poll loop and each board's state machine
 *   campaign_run.c      campaign_run: setup, resume, the loop, the finish
 */
#ifndef PC_HARNESS_CAMPAIGN_DAEMON_H
#define PC_HARNESS_CAMPAIGN_DAEMON_H

#include <limits.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/auth.h"
#include "harness/campaign/campaign_board.h"
#include "harness/campaign/campaign_stop.h"
#include "harness/link/pending.h"
#include "harness/link/reject.h"
#include "harness/engine/engine.h"
#include "harness/results/results.h"

struct campaign_cfg;
struct campaign_opts;
struct camp_link_ops;

struct camp {
	struct campaign_cfg *cfg;
	const struct campaign_opts *o;
	struct results res;
	struct engine *eng;
	struct bctx *b;
	unsigned nb;
	unsigned cycles;
	int lfd;
	char connect[160];
	struct link_pending pend;	/* connections not proven yet (harness/link/pending.h) */
	struct link_rejects rej;	/* campaign_reject.c's: refusals counted (harness/link/reject.h) */
	const struct camp_link_ops *lops;	/* the state machine's, for the links (camp_loop sets it) */
	uint64_t t0;		/* ms: campaign clock origin (monotonic) */
	int64_t t_base;		/* ms: where the clock stood when this run resumed */
	uint64_t last_progress;
	int resuming;
	int format;		/* the folder's results format (major): campaign.json's */
	int fatal;
	int res_told;		/* the results' failure (res.failure) was said */
	char agent[PATH_MAX];
	char key_path[PATH_MAX];
	struct pc_auth_key key;
	/* resume: verdicts already in the file */
	json_object *seen_verdicts;	/* "board/cycle" -> true */
	json_object *reconf;		/* resume: the config_change events to log, or NULL */
	struct camp_disk disk;		/* campaign_stop.c's: the results filesystem's floor */
};

#endif

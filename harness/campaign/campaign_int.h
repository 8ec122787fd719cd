/*
 * campaign_int.h - the campaign daemon's state, shared by its parts
 * (harness/campaign/campaign*.c). Only they include it: campaign.h is the
 * daemon's interface.
 */
#ifndef PC_HARNESS_CAMPAIGN_INT_H
#define PC_HARNESS_CAMPAIGN_INT_H

#include <limits.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/auth.h"
#include "common/proto.h"
#include "relay/relay.h"
#include "relay/relay_worker.h"
#include "harness/campaign/campaign.h"
#include "harness/campaign/campaign_link.h"
#include "harness/campaign/campaign_plan.h"
#include "harness/campaign/campaign_stop.h"
#include "harness/link/reject.h"
#include "harness/engine/engine.h"
#include "harness/results/results.h"
#include "harness/results/verdict.h"

#define DRAIN_MS 300		/* after a cut: how long lines already sent may still arrive */

#define MAX_CONSECUTIVE_INFRA 3

/* B_CUTTING: the cut is asked of the relay's worker, its answer (the
 * instant the power went) not yet in */
enum bstate { B_OFF_WAIT, B_WAIT_HELLO, B_VERIFY, B_WRITING, B_DRAIN, B_DONE, B_CUTTING };

struct camp;

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
	struct camp_link link;	/* campaign_link.c's */
	char boot_id[64];	/* of the last authenticated hello: a new power-on must change it */
	char boot_shown[96];	/* the boot line its console showed before a hello in this run ("" none yet) */
	unsigned rejects;	/* link_reject events for this cycle */
	uint64_t t_power;
	struct camp_plan plan;	/* campaign_plan.c's */
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

/* The campaign's files, in layers: each calls only those above it in this
 * list (and the links hand what they read up through struct camp_link_ops,
 * which campaign.c registers).
 *   campaign_core.c     clock, events, a board's state, power off, next cycle
 *   campaign_resume.c   verdicts recorded and tallied, campaign.json, resume
 *   campaign_reject.c   refusals on record (the tally: harness/link/reject.c)
 *   campaign_link.c     a board's link: handshake, lines, consoles, output
 *                       (its parts: harness/link/, below the campaign)
 *   campaign_infra.c    INFRA_ERROR, giving a board up
 *   campaign_plan.c, campaign_setup.c  the cycle's work and cut; a boot without a hello
 *   campaign.c          the poll loop and each board's state machine
 *   campaign_run.c      campaign_run: setup, resume, the loop, the finish */

/* campaign_core.c */
extern const char *const camp_bstate_names[];
int64_t camp_t(struct camp *c);
json_object *camp_ev_new(struct bctx *b, enum pc_ev_kind kind);
int camp_ev_log(struct bctx *b, json_object *ev);
void camp_set_state(struct bctx *b, enum bstate st, uint64_t timeout_ms);
int camp_no_off(const struct bctx *b);
void camp_power_off(struct bctx *b);
void camp_next_cycle(struct bctx *b);
/* ret of a results_*() call: a failure stops the campaign (fatal), said
 * once, naming the file and errno. Returns ret. */
int camp_results_check(struct camp *c, int ret);

/* campaign_infra.c */
void camp_infra(struct bctx *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a cause ("setup", ...) and fields for the event (owned, may be NULL). */
void camp_infra_ex(struct bctx *b, const char *cause, json_object *extra, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void camp_give_up(struct bctx *b, const char *why);

/* campaign.c */
void camp_catch_signals(void);
int camp_stopped(void);		/* the signal that asked the loop to end, or 0 */
void camp_loop(struct camp *c);
void camp_progress(struct camp *c, int force);

/* campaign_link.c, campaign_plan.c: their headers */

/* campaign_setup.c */
/* What a board's console log holds, for a boot without a hello. */
struct camp_console_facts {
	int exists;		/* the log is there */
	uint64_t bytes;		/* its size */
	char kernel[96];	/* the first sign of a booted kernel, or "" */
	char boot[96];		/* the first line holding one of the board's boot_patterns, or "" */
	char device[128];	/* the first line showing the device failing (MMC, block errors), or "" */
	char tail[240];		/* its last lines (up to 3, not the agent's marked ones), " / " between */
	char cause[33];		/* the last setup_error line for the board: its cause ("" none) */
	char reason[PC_PROTO_MAX_REASON + 1];
};
/* Look through console output (pure): signs of a booted kernel, of the
 * device failing, its last lines, and the last setup_error line (marked)
 * for board. f is reset first. */
void camp_console_inspect(const char *text, size_t len, const char *board, struct camp_console_facts *f);
/* The cycle's console log of board b, read from its last MiB; path set. */
void camp_console_look(struct bctx *b, struct camp_console_facts *f, char *path, size_t pathlen);
/* Take what the agent said (a setup_error message, validated) as this
 * cycle's reason; via: where it came. */
void camp_agent_said(struct bctx *b, json_object *msg, const char *via);
/* The last attempt's boot timeout passed with no authenticated hello: the
 * cycle ends, as a setup matter (INFRA_ERROR) or the device's BOOT_FAIL. */
void camp_boot_judge(struct bctx *b);
/* Grace after the last boot timeout: how long the power stays on. */
uint32_t camp_late_ms(const struct bctx *b);
/* An authenticated hello with a new boot id, on a serial link whose console
 * is whole since power-on (camp_console_whole): on a board that showed a
 * boot before an earlier hello of this run, a hello whose boot id the agent
 * made itself (--fresh-boot-id) with no boot on the console since power-on
 * is no power cut: the cycle ends INFRA_ERROR (cause no_cut), 1. Else 0 (a
 * boot line seen is remembered). */
int camp_hello_unbooted(struct bctx *b, json_object *hello);

/* campaign_resume.c */
struct bctx *camp_board_by_name(struct camp *c, const char *name);
int camp_on_verdict(const struct pc_verdict *v, void *arg);
void camp_on_note(const char *board, const char *text, void *arg);
/* Resume: read the folder's verdicts and events back (the engine is fed
 * them, the tallies counted). -1 (said). */
int camp_resume(struct camp *c, const char *dir);
int camp_campaign_json(struct camp *c, int *existing, char *err, size_t errlen);
/* The settings this resume changed, each a config_change event (after run_start). */
void camp_reconf_log(struct camp *c);

#endif

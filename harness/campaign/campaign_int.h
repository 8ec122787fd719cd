/*
 * campaign_int.h - the campaign daemon's state, shared by its parts
 * (campaign.c, campaign_link.c, campaign_plan.c, campaign_resume.c). Only
 * they include it: campaign.h is the daemon's interface.
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
#include "harness/engine/engine.h"
#include "harness/results/results.h"
#include "harness/results/verdict.h"

#define DRAIN_MS 300		/* after a cut: how long lines already sent may still arrive */

#define HELLO_WAIT_MS 2000	/* an accepted connection must say HELLO within this, and
				   answer the challenge within as long again */

#define MAX_CONSECUTIVE_INFRA 3

#define MAX_PENDING 64		/* connections that have not authenticated yet */

#define MIN_PENDING_PER_SOURCE 8	/* ... from one address (or two per board, if more):
					   past it, that address's oldest goes */

#define MAX_SERIAL_HELLOS 4	/* hellos awaiting their proof on one console */

/* The most a board's link may have waiting to be sent: the largest burst
 * the host sends at once is a VERIFY after every KNOWN line the protocol
 * allows (PC_PROTO_MAX_KNOWN_SLOTS / 400 + PC_PROTO_MAX_KNOWN / 500 lines of
 * at most PC_PROTO_MAX_LINE bytes, ~1.7 MB), twice over. */
#define LINK_OUTQ_MAX (4u << 20)

/* What a board's link could not take yet, sent as it becomes writable (the
 * poll loop asks for POLLOUT while anything waits): a slow reader delays
 * the lines, never breaks one. */
struct outq {
	char *buf;
	size_t off, len, cap;	/* waiting: buf[off..len) */
	int fd;			/* the descriptor they are for */
	char why[256];		/* why the last write was refused (the ceiling) */
};

/* A hello answered with a challenge, awaiting the agent's proof (auth.h). */
struct handshake {
	char an[2 * PC_AUTH_NONCE_BYTES + 1];	/* the agent's nonce */
	char hn[2 * PC_AUTH_NONCE_BYTES + 1];	/* ours */
	char *hello;				/* the hello's exact JSON text */
	size_t hello_len;
	uint64_t since;
};

/* B_CUTTING: the cut is asked of the relay's worker, its answer (the
 * instant the power went) not yet in */
enum bstate { B_OFF_WAIT, B_WAIT_HELLO, B_VERIFY, B_WRITING, B_DRAIN, B_DONE, B_CUTTING };

struct camp;

struct bctx {
	struct camp *c;
	struct board_cfg *cfg;
	unsigned idx;
	struct relay relay;	/* opened once to check it; the worker has its own */
	int relay_open;
	struct relay_worker rw;	/* the relay's process (relay_worker.h) */
	struct relay_ctx rctx;	/* what a new worker opens the relay with */
	char rstate[PATH_MAX];	/* rctx.state_dir */
	uint32_t on_seq;	/* this power-on's ON request (0: answered) */
	uint32_t cut_seq;	/* the cut's request, in B_CUTTING */
	const char *cut_why;	/* ... what called for it */
	uint64_t cut_now_ms;	/* ... when it was decided */
	uint64_t cut_req_us;
	enum bstate st;
	unsigned cycle;
	unsigned attempt;
	uint64_t deadline;
	uint64_t t_state;
	int fd;			/* the link to the agent: a TCP connection, or sfd */
	struct pc_linebuf lb;
	/* serial console link (cfg->link_serial): open for the whole campaign */
	int sfd;
	int cfd;		/* this power-on's console log */
	struct pc_linebuf slb;
	struct outq q;		/* the link's output queue */
	struct handshake shs[MAX_SERIAL_HELLOS];	/* serial: hellos awaiting proof */
	/* the authenticated session of this power-on's agent */
	struct pc_auth_session s;
	char boot_id[64];	/* of the last authenticated hello: a new power-on must change it */
	unsigned rejects;	/* link_reject events for this cycle */
	uint64_t t_power;
	/* the cycle's work and cut plan */
	int working;
	uint64_t t_work;
	uint64_t cut_at;	/* CUT_RANDOM: absolute ms */
	uint32_t cut_acks;	/* CUT_ACKS: cut once this many are acked */
	uint32_t acks;
	/* CUT_FLUSH, CUT_FUA: the cut comes at the agent's cut_nth announcement
	 * (IO message) of the plan's I/O, cut_delay_us after it arrived; on a
	 * board that cuts itself there (exact: the sim), the harness waits */
	uint32_t cut_nth;	/* 0: not an I/O plan */
	uint32_t io_seen;	/* announcements of the plan's I/O so far in this work */
	int io_fired;		/* the cut_nth arrived: */
	uint64_t io_seq;	/* ... the seq it named */
	uint64_t t_io_us;	/* ... when (monotonic us) */
	uint64_t cut_due_us;	/* a delayed cut's instant (monotonic us; 0: none) */
	int exact;
	int done_seen;
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
	/* tallies for progress */
	unsigned n_pass, n_fail, n_boot, n_infra;
	uint64_t t_cycle0;
	unsigned cycles_run;
};

struct pending {
	int fd;
	uint64_t since;
	struct pc_linebuf lb;
	char peer[64];		/* address:port, for the record */
	char src[48];		/* address: the per-source limit */
	struct bctx *b;		/* the board its hello named (challenged), or NULL */
	struct handshake hs;
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
	struct pending pend[MAX_PENDING];
	uint64_t t0;		/* ms: campaign clock origin (monotonic) */
	int64_t t_base;		/* ms: where the clock stood when this run resumed */
	uint64_t last_progress;
	int resuming;
	int format;		/* the folder's results format (major): campaign.json's */
	int fatal;
	char agent[PATH_MAX];
	char key_path[PATH_MAX];
	struct pc_auth_key key;
	/* resume: verdicts already in the file */
	json_object *seen_verdicts;	/* "board/cycle" -> true */
};

/* campaign.c */
extern const char *const camp_bstate_names[];
int64_t camp_t(struct camp *c);
json_object *camp_ev_new(struct bctx *b, enum pc_ev_kind kind);
int camp_ev_log(struct bctx *b, json_object *ev);
void camp_set_state(struct bctx *b, enum bstate st, uint64_t timeout_ms);
int camp_is_sysrq(const struct bctx *b);
void camp_power_off(struct bctx *b);
void camp_next_cycle(struct bctx *b);
void camp_infra(struct bctx *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a cause ("setup", ...) and fields for the event (owned, may be NULL). */
void camp_infra_ex(struct bctx *b, const char *cause, json_object *extra, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void camp_on_msg(struct bctx *b, struct pc_msg *m, json_object *raw);
void camp_on_hello(struct bctx *b, struct pc_msg *m, json_object *raw);

/* campaign_link.c */
void camp_link_reject(struct camp *c, struct bctx *b, int attempt, const char *peer, const char *line, size_t len,
			const char *fmt, ...) __attribute__((format(printf, 7, 8)));
int camp_listen_on(struct camp *c, char *err, size_t errlen);
/* Send a line to the board's agent: at once, or queued behind what waits
 * (flushed by camp_link_flush). 0, or -errno with errno set: -ENOBUFS when
 * the queue would pass LINK_OUTQ_MAX (camp_link_strerror says so). */
int camp_send_msg(struct bctx *b, json_object *msg);
/* What an error from camp_send_msg means, for the record: names the board
 * and the ceiling when the queue was full. */
const char *camp_link_strerror(const struct bctx *b, int err);
/* The descriptor whose queued output waits for POLLOUT, or -1. */
int camp_link_wants_out(const struct bctx *b);
/* Its descriptor is writable: send what waits, never blocking. */
void camp_link_flush(struct bctx *b);
void camp_close_link(struct bctx *b);
int camp_serial_open(struct bctx *b, char *err, size_t errlen);
void camp_authenticated(struct bctx *b, int fd, const struct handshake *h);
void camp_board_read(struct bctx *b);
void camp_serial_read(struct bctx *b);
void camp_pending_close(struct pending *p);
void camp_pending_read(struct camp *c, struct pending *p);
void camp_accept_all(struct camp *c);

/* campaign_plan.c */
void camp_plan_power_on(struct bctx *b);
void camp_start_work(struct bctx *b);
void camp_on_io(struct bctx *b, const struct pc_msg *m);
void camp_cut_due(struct bctx *b);
void camp_cut(struct bctx *b, const char *why);
void camp_cut_switched(struct bctx *b, const struct relay_rep *rep);
json_object *camp_verify_request(struct bctx *b);
int camp_send_known(struct bctx *b);

/* campaign_setup.c */
/* What a board's console log holds, for a boot without a hello. */
struct camp_console_facts {
	int exists;		/* the log is there */
	uint64_t bytes;		/* its size */
	char kernel[96];	/* the first sign of a booted kernel, or "" */
	char cause[33];		/* the last setup_error line for the board: its cause ("" none) */
	char reason[PC_PROTO_MAX_REASON + 1];
};
/* Look through console output (pure): signs of a booted kernel, and the
 * last setup_error line (marked) for board. f is reset first. */
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

/* campaign_resume.c */
struct bctx *camp_board_by_name(struct camp *c, const char *name);
int camp_on_verdict(json_object *v, void *arg);
void camp_on_note(const char *board, const char *text, void *arg);
int camp_seen_verdict(json_object *v, unsigned lineno, void *arg);
int camp_replay_event(json_object *ev, unsigned lineno, void *arg);
int camp_campaign_json(struct camp *c, int *existing, char *err, size_t errlen);

#endif

/*
 * campaign_link.h - a board's link to its agent, owned by campaign_link.c:
 * its descriptors, line buffers, the handshakes, the authenticated session,
 * the output queue and a network console (their code the link room's,
 * harness/link/); and the connections that have not proven themselves
 * yet. The state machine (campaign.c) polls the descriptors and calls in;
 * only campaign_link.c (and its camp_pending_ops, handing a proven
 * connection over) changes what is here. What arrives goes up through
 * struct camp_link_ops.
 */
#ifndef PC_HARNESS_CAMPAIGN_LINK_H
#define PC_HARNESS_CAMPAIGN_LINK_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/auth.h"
#include "common/proto.h"
#include "harness/link/handshake.h"
#include "harness/link/outq.h"
#include "harness/link/pending.h"

#define MAX_SERIAL_HELLOS 4	/* hellos awaiting their proof on one console */

struct bctx;
struct camp;
struct netserial;
struct pc_msg;

/*
 * What the link hands up to the state machine (campaign.c registers them in
 * struct camp before its loop runs): the link sits below it and never calls
 * it by name.
 */
struct camp_link_ops {
	/* an agent proved itself: its hello, parsed */
	void (*hello)(struct bctx *b, struct pc_msg *m, json_object *raw);
	/* a line on the authenticated link, parsed (not a hello or proof) */
	void (*msg)(struct bctx *b, struct pc_msg *m, json_object *raw);
	/* the agent's link closed */
	void (*closed)(struct bctx *b);
	/* the agent said why it cannot get to a hello (a setup_error message) */
	void (*agent_said)(struct bctx *b, json_object *msg, const char *via);
	/* the cycle cannot go on: an INFRA_ERROR, why (printable) */
	void (*infra)(struct bctx *b, const char *why);
};

struct camp_link {
	int fd;			/* the link to the agent: a TCP connection, or sfd */
	struct pc_linebuf lb;
	/* serial console link (cfg->link_serial): open for the whole campaign */
	int sfd;
	struct netserial *ns;	/* a console over the network: its client (sfd is its descriptor), or NULL */
	int cfd;		/* this power-on's console log */
	struct pc_linebuf slb;
	struct outq q;		/* the link's output queue (harness/link/outq.h) */
	struct handshake shs[MAX_SERIAL_HELLOS];	/* serial: hellos awaiting proof */
	/* the authenticated session of this power-on's agent */
	struct pc_auth_session s;
};

/* No descriptor open (before camp_serial_open). */
void camp_link_init(struct camp_link *l);
/* Close everything the link holds, the console and its log included. */
void camp_link_free(struct camp_link *l);
/* A power-on: a line the last cut broke off is noise, and the cycle's
 * console log (path) is opened for the harness's own capture. */
void camp_link_power_on(struct bctx *b, const char *console_log);

/* campaign_reject.c: refusals on record */
void camp_link_reject(struct camp *c, struct bctx *b, int attempt, const char *peer, const char *line, size_t len,
			const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* The link_reject_summary events of the interval, when it is over (end: the
 * run is ending: now). Called each turn of the loop and at the run's end. */
void camp_link_reject_tick(struct camp *c, int end);

/* campaign_link.c */
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
/* Is an agent's authenticated session up on this board's link? */
int camp_link_up(const struct bctx *b);
void camp_close_link(struct bctx *b);
int camp_serial_open(struct bctx *b, char *err, size_t errlen);
void camp_authenticated(struct bctx *b, int fd, const struct handshake *h);
void camp_board_read(struct bctx *b);
void camp_serial_read(struct bctx *b);
/* A serial link's console, whole since the power-on: it is open and (a
 * network console) has been up since, so the cycle's log holds everything
 * the board printed before what the link carries now, in order. A tcp
 * link's captured console is another stream, which a hello can overtake:
 * 0 for it, as for none. */
int camp_console_whole(const struct bctx *b);
/* One line on an authenticated link: it must carry the session's next tag. */
void camp_board_line(struct bctx *b, const char *line, size_t len);
/* Answer a hello (its exact text, and parsed) with a challenge; 0 or -errno. */
int camp_hs_start(struct bctx *b, struct handshake *h, const char *text, size_t len, json_object *hello, int fd,
		  int marker);

/* The campaign's side of the connections not proven yet (harness/link/pending.h):
 * its boards, named, asked and handed a proven connection. */
extern const struct link_pending_ops camp_pending_ops;

#endif

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
#include <poll.h>

#include "common/auth.h"
#include "common/proto.h"
#include "harness/link/pending.h"

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

/* A board's link: opaque, owned by campaign_link.c (camp_link_new). */
struct camp_link;

/* A link with no descriptor open (before camp_serial_open), or NULL (no memory). */
struct camp_link *camp_link_new(void);
/* Close everything the link holds, the console and its log included, and free it (NULL: nothing). */
void camp_link_free(struct camp_link *l);
/* The descriptors the poll loop is to watch for the board's link (its
 * serial console, its tcp link; POLLOUT where output waits): how many of
 * the two entries of pfd were filled. */
int camp_link_pollfds(const struct bctx *b, struct pollfd pfd[2]);
/* One of them is ready (its revents): the link reads or sends. */
void camp_link_ready(struct bctx *b, const struct pollfd *p);
/* Is the agent's link (tcp, or the serial console) open at all? */
int camp_link_connected(const struct bctx *b);
/* The link is up on fd with the authenticated session of the nonces hn, an
 * (the host's and the agent's): what a proven handshake leads to. */
void camp_link_attach(struct bctx *b, int fd, const char *hn, const char *an);
/* Bytes of output that wait in the link's queue. */
size_t camp_link_queued(const struct bctx *b);
/* A power-on: a line the last cut broke off is noise, and the cycle's
 * console log (path) is opened for the harness's own capture. */
void camp_link_power_on(struct bctx *b, const char *console_log);

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
/* A serial link's console, whole since the power-on: it is open and (a
 * network console) has been up since, so the cycle's log holds everything
 * the board printed before what the link carries now, in order. A tcp
 * link's captured console is another stream, which a hello can overtake:
 * 0 for it, as for none. */
int camp_console_whole(const struct bctx *b);

/* The campaign's side of the connections not proven yet (harness/link/pending.h):
 * its boards, named, asked and handed a proven connection. */
extern const struct link_pending_ops camp_pending_ops;

#endif

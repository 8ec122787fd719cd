/*
 * board.h - one board's link to its agent (board.c), below the campaign: its
 * descriptors, line buffers, the handshakes on its serial console, the
 * authenticated session, the output queue and a network console (each over
 * this room's part for it: handshake.c, outq.c, netserial.c). One object
 * per board, made by its owner (link_board_new) and owned by it; no list of
 * boards here. What it knows of the board it was told when it was made (its
 * name, its console, the key) or since (its phase, its power-on); what
 * arrives goes up through the owner's struct link_board_ops, never to a
 * function of the owner's by name.
 */
#ifndef PC_HARNESS_LINK_BOARD_H
#define PC_HARNESS_LINK_BOARD_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>
#include <poll.h>

#include "common/auth.h"
#include "common/proto.h"
#include "harness/link/handshake.h"

struct pc_msg;

/* Where the board is, as far as its link cares (the owner says, link_board_set_phase). */
enum link_phase {
	LINK_PHASE_OFF,		/* off, to be powered on: the close of its link is a power-on's */
	LINK_PHASE_HELLO,	/* powered on: its agent's hello awaited, and only that */
	LINK_PHASE_WORK,	/* its agent at work (verifying, writing): a broken console breaks the cycle */
	LINK_PHASE_CUTTING,	/* the cut asked, not yet made */
	LINK_PHASE_DRAIN,	/* after a cut: lines already sent may still arrive, a bad one is no error */
	LINK_PHASE_DONE,	/* no more cycles */
};

/* The board's events the link sees (the owner names them in its record). */
enum link_event {
	LINK_EV_RX_BAD,		/* a line on the link that is no message, or none there */
	LINK_EV_RX_STRAY,	/* a message when none was expected */
	LINK_EV_BOOT_STAGE,	/* a console line that times the boot */
};

/* What the link knows of its board, when it is made: the strings are the
 * owner's, pointed at, and live as long as the link. */
struct link_board_cfg {
	const char *name;		/* the board's, for every message */
	const char *serial_device;	/* its console: a device, or a network console's URL */
	uint32_t serial_baud;
	int link_serial;		/* the link is the serial console (else a tcp link, the console captured) */
	const char (*boot_patterns)[64];	/* console lines that time the boot */
	unsigned nboot_patterns;
	uint32_t boot_timeout_ms;	/* power on -> hello */
	const struct pc_auth_key *key;	/* what a proof must answer to */
};

/* What the link hands up to its owner (owner: link_board_new's). */
struct link_board_ops {
	/* an agent proved itself: its hello, parsed */
	void (*hello)(void *owner, struct pc_msg *m, json_object *raw);
	/* a line on the authenticated link, parsed (not a hello or proof) */
	void (*msg)(void *owner, struct pc_msg *m, json_object *raw);
	/* the agent's link closed */
	void (*closed)(void *owner);
	/* the agent said why it cannot get to a hello (a setup_error message) */
	void (*agent_said)(void *owner, json_object *msg, const char *via);
	/* the cycle cannot go on: an INFRA_ERROR, why (printable) */
	void (*infra)(void *owner, const char *why);
	/* an event of the board's, kind, to be filled, then logged (ev_log takes it) */
	json_object *(*ev_new)(void *owner, enum link_event kind);
	void (*ev_log)(void *owner, json_object *ev);
	/* a line refused (attempt: a try at the board's link), for the record */
	void (*reject)(void *owner, int attempt, const char *peer, const char *line, size_t len, const char *why);
};

/* A board's link: opaque, board.c's. */
struct link_board;

/* A link with no descriptor open (before link_board_serial_open), in
 * LINK_PHASE_OFF, or NULL (no memory). cfg is copied (its strings pointed
 * at); ops and owner are kept. */
struct link_board *link_board_new(const struct link_board_cfg *cfg, const struct link_board_ops *ops, void *owner);
/* Close everything the link holds, the console and its log included, and free it (NULL: nothing). */
void link_board_free(struct link_board *l);
/* The board's phase changed. */
void link_board_set_phase(struct link_board *l, enum link_phase ph);
/* The instant (ms, pc_now_ms's clock) the board's power went on: what
 * times its boot. */
void link_board_set_t_power(struct link_board *l, uint64_t t_power);
/* The descriptors the poll loop is to watch for the board's link (its
 * serial console, its tcp link; POLLOUT where output waits): how many of
 * the two entries of pfd were filled. */
int link_board_pollfds(const struct link_board *l, struct pollfd pfd[2]);
/* One of them is ready (its revents): the link reads or sends. */
void link_board_ready(struct link_board *l, const struct pollfd *p);
/* Is the agent's link (tcp, or the serial console) open at all? */
int link_board_connected(const struct link_board *l);
/* The link is up on fd with the authenticated session of the nonces hn, an
 * (the host's and the agent's): what a proven handshake leads to. */
void link_board_attach(struct link_board *l, int fd, const char *hn, const char *an);
/* A connection proven by its handshake h (harness/link/pending.c) is the
 * board's link, with the lines that came after the proof (lb). */
void link_board_proven(struct link_board *l, int fd, const struct handshake *h, struct pc_linebuf *lb);
/* Bytes of output that wait in the link's queue. */
size_t link_board_queued(const struct link_board *l);
/* A power-on at t_power: a line the last cut broke off is noise, and the
 * cycle's console log (path) is opened for the harness's own capture. */
void link_board_power_on(struct link_board *l, const char *console_log, uint64_t t_power);
/* Send a line to the board's agent: at once, or queued behind what waits
 * (flushed by link_board_flush). 0, or -errno with errno set: -ENOBUFS when
 * the queue would pass LINK_OUTQ_MAX (link_board_strerror says so). */
int link_board_send(struct link_board *l, json_object *msg);
/* What an error from link_board_send means, for the record: names the board
 * and the ceiling when the queue was full. */
const char *link_board_strerror(const struct link_board *l, int err);
/* The descriptor whose queued output waits for POLLOUT, or -1. */
int link_board_wants_out(const struct link_board *l);
/* Its descriptor is writable: send what waits, never blocking. */
void link_board_flush(struct link_board *l);
/* Is an agent's authenticated session up on this board's link? */
int link_board_up(const struct link_board *l);
/* The agent's link ends (the console stays open). */
void link_board_close(struct link_board *l);
/* Open the board's console (a serial device, or one over the network). */
int link_board_serial_open(struct link_board *l, char *err, size_t errlen);
/* A serial link's console, whole since the power-on: it is open and (a
 * network console) has been up since, so the cycle's log holds everything
 * the board printed before what the link carries now, in order. A tcp
 * link's captured console is another stream, which a hello can overtake:
 * 0 for it, as for none. */
int link_board_console_whole(const struct link_board *l);

#endif

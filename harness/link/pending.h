/*
 * pending.h - the TCP connections that have not proven themselves yet: a
 * bounded table, the campaign's own (struct camp.pend), each connection's
 * first line a hello for a board that may take an agent (answered with a
 * challenge), its second the proof; then the connection is that board's
 * link. The boards are the owner's, opaque here: named, asked and told
 * through the ops it registers (link_pending_init).
 */
#ifndef PC_HARNESS_LINK_PENDING_H
#define PC_HARNESS_LINK_PENDING_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/auth.h"
#include "common/proto.h"
#include "harness/link/handshake.h"

#define HELLO_WAIT_MS 2000	/* an accepted connection must say HELLO within this, and
				   answer the challenge within as long again */

#define MAX_PENDING 64		/* connections that have not authenticated yet */

#define MIN_PENDING_PER_SOURCE 8	/* ... from one address (or two per board, if more):
					   past it, that address's oldest goes */

struct pending {
	int fd;
	uint64_t since;
	struct pc_linebuf lb;
	char peer[64];		/* address:port, for the record */
	char src[48];		/* address: the per-source limit */
	void *b;		/* the board its hello named (challenged), or NULL */
	struct handshake hs;
};

/* What the table asks of its owner and tells it; b is always a board the
 * owner's board_by_name() returned. */
struct link_pending_ops {
	/* the board named, or NULL */
	void *(*board_by_name)(void *arg, const char *name);
	/* may board b take an agent now? 1; else 0 with what it is doing
	 * ("verifying", "booting and has its agent") in what */
	int (*ready)(void *arg, void *b, char *what, size_t len);
	/* a connection or line refused (attempt: a try at board b's link), for the record */
	void (*reject)(void *arg, void *b, int attempt, const char *peer, const char *line, size_t len,
		       const char *why);
	/* an agent says why it cannot get to a hello (a setup_error message,
	 * unproven), via: where it came */
	void (*said)(void *arg, void *b, json_object *msg, const char *via);
	/* a proven connection: board b's link from now on, with its handshake
	 * and the lines that came after the proof (lb) */
	void (*proven)(void *arg, void *b, int fd, const struct handshake *h, struct pc_linebuf *lb);
};

struct link_pending {
	struct pending p[MAX_PENDING];
	const struct link_pending_ops *ops;
	void *arg;
	const struct pc_auth_key *key;	/* what a proof must answer to */
};

/* An empty table (no descriptor open) for ops and arg, proofs checked with key. */
void link_pending_init(struct link_pending *lp, const struct link_pending_ops *ops, void *arg,
		       const struct pc_auth_key *key);
/* Close every connection waiting. */
void link_pending_free(struct link_pending *lp);
void link_pending_close(struct pending *p);
/* p's descriptor is readable. */
void link_pending_read(struct link_pending *lp, struct pending *p);
/* The listening socket lfd is readable: every new connection into the
 * table, a source's share bounded (two per board of nboards, at least
 * MIN_PENDING_PER_SOURCE). */
void link_pending_accept(struct link_pending *lp, int lfd, unsigned nboards);
/* A connection past HELLO_WAIT_MS without its hello or proof goes, refused. */
void link_pending_expire(struct link_pending *lp, uint64_t now);

#endif

/*
 * link.h - the agent's end of the host link: one JSON line at a time over a
 * TCP connection (or any stream fd, e.g. a serial console).
 */
#ifndef PC_AGENT_LINK_H
#define PC_AGENT_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "common/auth.h"
#include "common/proto.h"

struct link {
	int fd;
	int marker;		/* prefix lines with PC_PROTO_MARKER (serial consoles) */
	struct pc_linebuf lb;
	char peer[160];
	/* the authenticated session (auth.h): every line after the handshake
	 * is tagged, and a host line whose tag fails is dropped */
	struct pc_auth_session s;
	int confirmed;		/* a host line verified: the host holds the key too */
	unsigned dropped;	/* host lines dropped for a bad or missing tag */
	/* corked (link_cork): lines are gathered here and written at once by
	 * link_flush (the writer's lines of one reap: one write, not one each) */
	int cork;
	char *out;
	size_t olen;
};

/* Connect to host:port, retrying until timeout_ms passes (the host may still
 * be starting; 0: one try). 0 or -errno with err naming the address and what
 * to check (nothing listens there, the network, the name). */
int link_connect(struct link *l, const char *hostport, uint32_t timeout_ms, char *err, size_t errlen);
/* Use a serial console (raw 8N1 at baud): lines are marked with
 * PC_PROTO_MARKER both ways, and unmarked input is ignored. */
int link_open_serial(struct link *l, const char *dev, uint32_t baud, char *err, size_t errlen);
/*
 * The challenge-response (auth.h): send hello (given a fresh "nonce"; takes
 * ownership), wait up to timeout_ms for the host's challenge that echoes it,
 * answer with the proof and start the session. 0; -ETIMEDOUT when no
 * challenge came; -EPIPE when the host closed the link first (it refused the
 * hello); other -errno with err.
 */
int link_handshake(struct link *l, const struct pc_auth_key *k, json_object *hello, uint32_t timeout_ms,
		   char *err, size_t errlen);
/* Send one message (tagged once the session is up); takes ownership of msg. 0 or -errno. */
int link_send(struct link *l, json_object *msg);
/* Send one line of JSON text the caller built (pc_line_*; a trailing
 * newline is dropped), as link_send would send its message. */
int link_send_text(struct link *l, const char *line, size_t len);
/* From link_cork on, lines are gathered (in memory allocated once) rather
 * than written one by one; link_flush writes what was gathered in one
 * write (0 or -errno), link_uncork flushes and stops gathering. A line
 * sent while corked is on the link only once link_flush returned. */
void link_cork(struct link *l);
int link_flush(struct link *l);
int link_uncork(struct link *l);
/* Wait for the next valid message whose tag verifies: 0; -EPIPE when the host
 * closed the link; -EINVAL for an invalid line (err says why; the caller
 * decides). Lines with a bad or missing tag are dropped with a warning. */
int link_recv(struct link *l, struct pc_msg *m, char *err, size_t errlen);
void link_close(struct link *l);

#endif

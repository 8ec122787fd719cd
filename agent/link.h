/*
 * link.h - the agent's end of the host link: one JSON line at a time over a
 * TCP connection (or any stream fd, e.g. a serial console).
 */
#ifndef PC_AGENT_LINK_H
#define PC_AGENT_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "../common/auth.h"
#include "../common/proto.h"

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
};

/* Connect to host:port, retrying until timeout_ms passes (the host may still
 * be starting). 0 or -errno with err naming the address. */
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
/* Wait for the next valid message whose tag verifies: 0; -EPIPE when the host
 * closed the link; -EINVAL for an invalid line (err says why; the caller
 * decides). Lines with a bad or missing tag are dropped with a warning. */
int link_recv(struct link *l, struct pc_msg *m, char *err, size_t errlen);
void link_close(struct link *l);

#endif

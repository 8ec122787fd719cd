/*
 * link.h - the agent's end of the host link: one JSON line at a time over a
 * TCP connection (or any stream fd, e.g. a serial console).
 */
#ifndef PC_AGENT_LINK_H
#define PC_AGENT_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "../common/proto.h"

struct link {
	int fd;
	int marker;		/* prefix lines with PC_PROTO_MARKER (serial consoles) */
	struct pc_linebuf lb;
	char peer[160];
};

/* Connect to host:port, retrying until timeout_ms passes (the host may still
 * be starting). 0 or -errno with err naming the address. */
int link_connect(struct link *l, const char *hostport, uint32_t timeout_ms, char *err, size_t errlen);
/* Use a serial console (raw 8N1 at baud): lines are marked with
 * PC_PROTO_MARKER both ways, and unmarked input is ignored. */
int link_open_serial(struct link *l, const char *dev, uint32_t baud, char *err, size_t errlen);
/* Send one message; takes ownership of msg. 0 or -errno. */
int link_send(struct link *l, json_object *msg);
/* Wait for the next valid message: 0; -EPIPE when the host closed the link;
 * -EINVAL for an invalid line (err says why; the caller decides). */
int link_recv(struct link *l, struct pc_msg *m, char *err, size_t errlen);
void link_close(struct link *l);

#endif

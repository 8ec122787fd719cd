#ifndef PC_PORT_HOLDER_H
#define PC_PORT_HOLDER_H

#include <stddef.h>
#include <stdint.h>

/*
 * The process listening on TCP PORT on this host, as "pid N: its command
 * line" in BUF: 1 when its command line names powercut, 0 for another
 * program, -1 when none is found (none listens, or /proc does not tell:
 * another user's process without the right to read it).
 */
int pc_port_holder(uint16_t port, char *buf, size_t len);

#endif

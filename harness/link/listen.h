/*
 * listen.h - the campaign's listening socket, which the boards' agents
 * connect to over TCP (docs/protocol.md#the-two-links).
 */
#ifndef PC_HARNESS_LINK_LISTEN_H
#define PC_HARNESS_LINK_LISTEN_H

#include <stddef.h>

/*
 * Listen on listen_on ("HOST:PORT"; port 0 picks a free port), non-blocking
 * and close-on-exec: 0 with *lfd set and connect the address an agent on
 * this host reaches it by ("127.0.0.1:PORT" for a wildcard address,
 * "[v6]:PORT"), or -errno with err saying why (a port in use names its
 * holder, and what to do).
 */
int link_listen(const char *listen_on, int *lfd, char *connect, size_t connlen, char *err, size_t errlen);

#endif

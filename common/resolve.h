/*
 * resolve.h - name resolution with a deadline, for the host's network
 * clients: the pdudaemon relay (relay/relay_pdudaemon.c) and consoles over
 * the network (harness/link/netserial.c). Below both, so neither leans on
 * the other's room for it.
 */
#ifndef PC_COMMON_RESOLVE_H
#define PC_COMMON_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Resolve host and service (a TCP stream) within deadline (pc_now_ms()
 * time): a numeric address directly, a name in a thread of its own (fork-safe,
 * unlike getaddrinfo_a), so a dead DNS server cannot stall the
 * caller past it. 0 with *res (freeaddrinfo() it), or -ENOMEM, -EIO (the
 * lookup could not start), -ETIMEDOUT ("resolving HOST timed out after
 * TIMEOUT_MS ms") or -EHOSTUNREACH ("cannot resolve HOST: why") with err.
 */
struct addrinfo;
int pc_resolve(const char *host, const char *service, uint64_t deadline, uint32_t timeout_ms,
	       struct addrinfo **res, char *err, size_t errlen);

#endif

/*
 * resolve.c - name resolution with a deadline, for the host's network
 * clients (the pdudaemon relay, consoles over the network): relay.h.
 */
#include "relay/relay.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"

/* A lookup and everything it points at, in one block: if glibc's resolver
 * thread cannot be cancelled it keeps reading it, and it is leaked rather
 * than freed under the thread (a resolver gives up within seconds anyway). */
struct resolve_lookup {
	struct gaicb cb;
	struct addrinfo hints;
	char host[256], service[32];
};

int relay_resolve(const char *host, const char *service, uint64_t deadline, uint32_t timeout_ms,
	       struct addrinfo **res, char *err, size_t errlen)
{
	struct resolve_lookup *l = calloc(1, sizeof(*l));
	struct gaicb *list[1];
	int rc;

	if (!l) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pc_strlcpy(l->host, host, sizeof(l->host));
	pc_strlcpy(l->service, service, sizeof(l->service));
	l->hints.ai_family = AF_UNSPEC;
	l->hints.ai_socktype = SOCK_STREAM;
	l->cb.ar_name = l->host;
	l->cb.ar_service = l->service;
	l->cb.ar_request = &l->hints;
	list[0] = &l->cb;
	rc = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
	if (rc) {
		snprintf(err, errlen, "resolving %s: %s", host, gai_strerror(rc));
		free(l);
		return -EIO;
	}
	for (;;) {
		uint64_t now = pc_now_ms();
		uint64_t left = deadline > now ? deadline - now : 0;
		struct timespec ts = { .tv_sec = (time_t)(left / 1000), .tv_nsec = (long)(left % 1000) * 1000000 };

		rc = gai_suspend((const struct gaicb *const *)list, 1, &ts);
		if (rc == EAI_INTR && left > 0)
			continue;
		break;
	}
	rc = gai_error(&l->cb);
	if (rc == EAI_INPROGRESS) {
		if (gai_cancel(&l->cb) == EAI_CANCELED)
			free(l);
		snprintf(err, errlen, "resolving %s timed out after %u ms", host, timeout_ms);
		return -ETIMEDOUT;
	}
	if (rc) {
		snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
		free(l);
		return -EHOSTUNREACH;
	}
	*res = l->cb.ar_result;
	free(l);
	return 0;
}

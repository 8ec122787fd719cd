/*
 * resolve.c - name resolution with a deadline, for the host's network
 * clients (the pdudaemon relay, consoles over the network): resolve.h.
 */
#include "common/resolve.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"

/*
 * Not getaddrinfo_a(): its helper threads are a process-wide pool that a
 * fork() copies the bookkeeping of but not the threads, so a lookup made
 * before the harness forks a board's process (a network console is resolved
 * when the campaign opens it) leaves the child's next lookup queued for an
 * idle thread that does not exist: it timed out every time (a board with its
 * console on ser2net and its power on pdudaemon never powered on). A numeric
 * address needs no lookup at all; a name gets a thread of its own, created
 * here, whose result is waited for until the deadline, and then its exit.
 */

/* A lookup and everything it points at, in one block: a thread still
 * resolving at the deadline is abandoned, and frees the block itself when
 * its resolver gives up (within seconds). */
struct resolve_lookup {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done, abandoned, rc;
	struct addrinfo hints, *res;
	char host[256], service[32];
};

static void lookup_free(struct resolve_lookup *l)
{
	if (l->res)
		freeaddrinfo(l->res);
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

static void *lookup_thread(void *arg)
{
	struct resolve_lookup *l = arg;
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(l->host, l->service, &l->hints, &res), abandoned;

	pthread_mutex_lock(&l->mu);
	l->rc = rc;
	l->res = rc ? NULL : res;
	l->done = 1;
	abandoned = l->abandoned;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
	if (abandoned)
		lookup_free(l);
	return NULL;
}

int pc_resolve(const char *host, const char *service, uint64_t deadline, uint32_t timeout_ms,
	       struct addrinfo **res, char *err, size_t errlen)
{
	struct addrinfo numeric = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				    .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct resolve_lookup *l;
	pthread_condattr_t ca;
	pthread_t th;
	sigset_t all, old;
	int rc;

	if (getaddrinfo(host, service, &numeric, res) == 0)
		return 0;
	l = calloc(1, sizeof(*l));
	if (!l)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	pc_strlcpy(l->host, host, sizeof(l->host));
	pc_strlcpy(l->service, service, sizeof(l->service));
	l->hints.ai_family = AF_UNSPEC;
	l->hints.ai_socktype = SOCK_STREAM;
	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* the harness's signals stay with its own thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&th, NULL, lookup_thread, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		lookup_free(l);
		return pc_fail(err, errlen, -EIO, "resolving %s: cannot start a thread: %s", host, strerror(rc));
	}
	pthread_mutex_lock(&l->mu);
	while (!l->done) {
		struct timespec ts = { .tv_sec = (time_t)(deadline / 1000), .tv_nsec = (long)(deadline % 1000) * 1000000 };

		/* deadline is CLOCK_MONOTONIC milliseconds (pc_now_ms), as the condition's clock */
		if (pthread_cond_timedwait(&l->cv, &l->mu, &ts) == ETIMEDOUT && !l->done)
			break;
	}
	if (!l->done) {
		l->abandoned = 1;
		pthread_mutex_unlock(&l->mu);
		pthread_detach(th);
		return pc_fail(err, errlen, -ETIMEDOUT, "resolving %s timed out after %u ms", host, timeout_ms);
	}
	pthread_mutex_unlock(&l->mu);
	/* Its exit too, not only its result: a thread still exiting when the
	 * caller forks can hold a lock the child's next lookup then waits on
	 * until its deadline (ASan's allocator's, under load: seen, 3 forks
	 * in 100). Only an abandoned lookup outlives the call. */
	pthread_join(th, NULL);
	if (l->rc) {
		snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(l->rc));
		lookup_free(l);
		return -EHOSTUNREACH;
	}
	*res = l->res;
	l->res = NULL;
	lookup_free(l);
	return 0;
}

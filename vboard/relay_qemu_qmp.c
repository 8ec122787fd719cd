/*
 * relay_qemu_qmp.c - QEMU's monitor (QMP) read and written, and the wait for
 * a machine that runs (whether KVM works here: relay_qemu_kvm.c).
 */
#include "relay/relay_priv.h"
#include "vboard/relay_qemu.h"
#include "relay/relay_group.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

/* ---- QEMU's monitor (QMP), one JSON object a line ---- */

struct qmp_reader {
	int fd;
	char buf[QEMU_QMP_LINE];
	size_t len;
	char why[256];		/* the monitor's error answer, after -EPROTO */
};

/*
 * The next object QEMU's monitor sent, by deadline (pc_now_ms()): 0 with *o
 * (the caller puts it), -ETIMEDOUT, -EPIPE when QEMU closed it (exited), or
 * -errno. A line that is not JSON, or longer than any answer we wait for, is
 * skipped.
 */
static int qmp_next(struct qmp_reader *rd, uint64_t deadline, json_object **o)
{
	for (;;) {
		char *nl = memchr(rd->buf, '\n', rd->len);
		struct pollfd pfd = { .fd = rd->fd, .events = POLLIN };
		ssize_t n;
		int ms;

		if (nl) {
			*nl = 0;
			*o = json_tokener_parse(rd->buf);
			rd->len -= (size_t)(nl + 1 - rd->buf);
			memmove(rd->buf, nl + 1, rd->len);
			if (*o)
				return 0;
			continue;
		}
		if (rd->len == sizeof(rd->buf) - 1)
			rd->len = 0;
		ms = relay_ms_left(deadline);
		if (ms == 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, ms) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!pfd.revents)
			continue;
		n = read(rd->fd, rd->buf + rd->len, sizeof(rd->buf) - 1 - rd->len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -EPIPE;
		rd->len += (size_t)n;
	}
}

/* All of cmd to QEMU's monitor: 0 or -errno. MSG_NOSIGNAL: a QEMU that
 * exited at start (a bad -device, after its greeting) is -EPIPE here, said
 * as such, never a SIGPIPE killing a harness that does not ignore it
 * (`powercut relay ... on`). */
static int qmp_send(int fd, const char *cmd)
{
	size_t len = strlen(cmd);

	while (len) {
		ssize_t n = send(fd, cmd, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		cmd += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Send cmd (NULL: nothing), then read the monitor until an object with the
 * key want ("QMP" the greeting, "return" an answer; NULL: none, read until
 * the deadline), skipping events: 0 with the object in *got (NULL: dropped;
 * else the caller puts it), -EPROTO with the monitor's error in rd->why, or
 * what qmp_next returns.
 */
static int qmp_exchange(struct qmp_reader *rd, uint64_t deadline, const char *cmd, const char *want,
			json_object **got)
{
	int rc = cmd ? qmp_send(rd->fd, cmd) : 0;

	while (rc == 0) {
		json_object *o = NULL;

		rc = qmp_next(rd, deadline, &o);
		if (rc < 0)
			break;
		if (json_object_object_get_ex(o, "error", NULL)) {
			snprintf(rd->why, sizeof(rd->why), "%.200s", relay_json_text(o));
			rc = -EPROTO;
		} else if (want && json_object_object_get_ex(o, want, NULL)) {
			if (got) {
				*got = o;
				return 0;
			}
			json_object_put(o);
			return 0;
		}
		json_object_put(o);
	}
	return rc;
}

/* QEMU's greeting, then capabilities negotiated: the monitor takes commands. 0 or as qmp_exchange. */
static int qmp_handshake(struct qmp_reader *rd, uint64_t deadline)
{
	int rc = qmp_exchange(rd, deadline, NULL, "QMP", NULL);

	if (rc == 0)
		rc = qmp_exchange(rd, deadline, "{\"execute\": \"qmp_capabilities\"}\n", "return", NULL);
	return rc;
}

#define QMP_QUERY_STATUS "{\"execute\": \"query-status\"}\n"

/*
 * Wait for QEMU to run the machine: the greeting (sent early, from the
 * monitor's own thread), then the answer to query-status (sent from the
 * main loop, so only once the machine is set up). 0 when it runs; -EPIPE if
 * QEMU went away; -ETIMEDOUT; -EPROTO with what it said instead.
 */
int qemu_qmp_wait(struct relay *r, struct qemu_priv *p, int fd, uint64_t deadline)
{
	struct qmp_reader *rd = calloc(1, sizeof(*rd));
	int rc;

	if (!rd)
		return -ENOMEM;
	rd->fd = fd;
	rc = qmp_handshake(rd, deadline);
	if (rc == 0)
		rc = qmp_exchange(rd, deadline, QMP_QUERY_STATUS, "return", NULL);
	if (rc == -EPROTO)
		relay_errf(r, "QEMU's monitor answered %s; see %s", rd->why, p->log[0] ? p->log : "(no log)");
	free(rd);
	return rc;
}

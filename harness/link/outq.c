/*
 * outq.c - a board's link's output queue (outq.h): written to at once when
 * the descriptor takes it, the rest kept in order and flushed as the
 * descriptor becomes writable.
 */
#include "harness/link/outq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/util.h"

void outq_clear(struct outq *q)
{
	free(q->buf);
	memset(q, 0, sizeof(*q));
	q->fd = -1;
}

/* Write what the descriptor takes now; the bytes written, or -errno. */
static ssize_t write_some(int fd, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -errno;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int outq_write(struct outq *q, int fd, const char *buf, size_t len, const char *board)
{
	size_t waiting, need;
	ssize_t n = 0;

	if (q->len > q->off && q->fd != fd)
		outq_clear(q);	/* left for a descriptor that is gone */
	if (q->len == q->off) {
		n = write_some(fd, buf, len);
		if (n < 0) {
			errno = (int)-n;
			return (int)n;
		}
		if ((size_t)n == len)
			return 0;
	}
	waiting = q->len - q->off;
	if (waiting + (len - (size_t)n) > LINK_OUTQ_MAX) {
		snprintf(q->why, sizeof(q->why), "board %s: its link takes lines too slowly: %zu bytes would wait to be "
			 "sent, over the ceiling of %u (is the agent reading?)", board, waiting + len - (size_t)n,
			 LINK_OUTQ_MAX);
		errno = ENOBUFS;
		return -ENOBUFS;
	}
	if (q->off) {
		memmove(q->buf, q->buf + q->off, waiting);
		q->off = 0;
		q->len = waiting;
	}
	need = q->len + len - (size_t)n;
	if (need > q->cap) {
		size_t cap = q->cap ? q->cap : 16384;
		char *p;

		while (cap < need)
			cap *= 2;
		p = realloc(q->buf, cap);
		if (!p) {
			errno = ENOMEM;
			return -ENOMEM;
		}
		q->buf = p;
		q->cap = cap;
	}
	memcpy(q->buf + q->len, buf + n, len - (size_t)n);
	q->len += len - (size_t)n;
	q->fd = fd;
	return 0;
}

int outq_wants_out(const struct outq *q)
{
	return q->len > q->off ? q->fd : -1;
}

void outq_flush(struct outq *q, const char *board)
{
	ssize_t n;

	if (q->len == q->off)
		return;
	n = write_some(q->fd, q->buf + q->off, q->len - q->off);
	if (n < 0) {
		/* the link broke: its reader finds out, and the state machine
		 * decides; what waited is of no use to anyone now */
		pc_warn("board %s: writing to its link: %s (%zu bytes not sent)", board, strerror((int)-n),
			q->len - q->off);
		outq_clear(q);
		return;
	}
	q->off += (size_t)n;
	if (q->off == q->len)
		q->off = q->len = 0;
}

const char *outq_strerror(const struct outq *q, int err)
{
	if (err < 0)
		err = -err;
	return err == ENOBUFS && q->why[0] ? q->why : strerror(err);
}

/*
 * outq.h - what a board's link could not take yet, sent as it becomes
 * writable (the poll loop asks for POLLOUT while anything waits): a slow
 * reader delays the lines, never breaks one. Owned by the board's link
 * (board.c), one per board.
 */
#ifndef PC_HARNESS_LINK_OUTQ_H
#define PC_HARNESS_LINK_OUTQ_H

#include <stddef.h>

/* The most a board's link may have waiting to be sent: the largest burst
 * the host sends at once is a VERIFY after every KNOWN line the protocol
 * allows (PC_PROTO_MAX_KNOWN_SLOTS / 400 + PC_PROTO_MAX_KNOWN / 500 lines of
 * at most PC_PROTO_MAX_LINE bytes, ~1.7 MB), twice over. */
#define LINK_OUTQ_MAX (4u << 20)

struct outq {
	char *buf;
	size_t off, len, cap;	/* waiting: buf[off..len) */
	int fd;			/* the descriptor they are for */
	char why[256];		/* why the last write was refused (the ceiling) */
};

/* Empty, for no descriptor; what it held is freed (a zeroed queue too). */
void outq_clear(struct outq *q);
/* To fd, in order behind what already waits: what the descriptor does not
 * take now is queued, up to LINK_OUTQ_MAX. 0, or -errno with errno set:
 * -ENOBUFS past the ceiling (q->why names board, outq_strerror says it). */
int outq_write(struct outq *q, int fd, const char *buf, size_t len, const char *board);
/* The descriptor whose queued output waits for POLLOUT, or -1. */
int outq_wants_out(const struct outq *q);
/* Its descriptor is writable: send what waits, never blocking. A broken
 * link is warned of (naming board) and what waited is dropped. */
void outq_flush(struct outq *q, const char *board);
/* What an error from outq_write means: the ceiling's message, or strerror. */
const char *outq_strerror(const struct outq *q, int err);

#endif

/*
 * relay_worker.h - a board's relay in a process of its own.
 *
 * Relay drivers block: a command or pdudaemon request may take its whole
 * timeout, a cut is read back until the power is seen off. The campaign's
 * poll() loop must never wait on one, or one slow relay delays every other
 * board's cut. So each board's opened relay is handed to a worker process
 * (forked from the harness, which keeps a pristine copy of the opened relay
 * to fork a new worker from if one dies) that runs one request at a time,
 * in order, and answers each with the instant the driver reported the
 * switch. Requests and replies are fixed-size structures over a socketpair,
 * checked for size, magic and sequence number (in the style of OpenBSD's
 * imsg): the loop reads a reply when poll() says it is there.
 *
 * A worker that dies, or does not answer within its deadline, is that
 * board's trouble only: the caller makes it the board's INFRA_ERROR and
 * starts a new worker.
 */
#ifndef PC_RELAY_WORKER_H
#define PC_RELAY_WORKER_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "relay/relay.h"

enum relay_op {
	RELAY_OP_ON = 1,	/* switch on (not before the last off + min_off_ms) */
	RELAY_OP_OFF,		/* switch off */
	RELAY_OP_CUT,		/* switch off, then read back until off (a cut) */
	RELAY_OP_GET,		/* read back: 1 on, 0 off */
	RELAY_OP_CLOSE,		/* close the relay and exit */
};

#define RELAY_WORKER_MAGIC	0x70637277u	/* "pcrw" */

struct relay_req {
	uint32_t magic;
	uint32_t size;		/* sizeof(struct relay_req) */
	uint32_t seq;
	uint32_t op;
	uint32_t min_off_ms;	/* ON: the board stays off this long after the last off */
	uint32_t pad;
	char console[PATH_MAX];	/* ON: relay.console for this power-on */
	char cut[48];		/* ON: relay.cut for this power-on */
};

struct relay_rep {
	uint32_t magic;
	uint32_t size;		/* sizeof(struct relay_rep) */
	uint32_t seq;		/* the request's */
	uint32_t op;
	int32_t ret;		/* the driver's: 0 (GET: 1 on, 0 off) or -errno */
	uint32_t pad;
	uint64_t t_start_us;	/* when the worker began the request (monotonic) */
	uint64_t t_switch_us;	/* when the driver reported the switch (ON, OFF, CUT) */
	uint64_t t_end_us;	/* when the request was done (CUT: after the read-back) */
	char err[512];		/* r->err when ret < 0 */
};

struct relay_worker {
	pid_t pid;		/* 0: none */
	int fd;			/* the harness's end, non-blocking; -1: none */
	uint32_t seq;		/* of the last request sent */
	unsigned outstanding;	/* requests sent, not answered */
	uint64_t deadline_ms;	/* the oldest outstanding request must be answered by then */
	uint32_t hang_ms;	/* how long one request may take before the worker counts as hung */
	unsigned restarts;
};

/* Fork the worker of board's relay: it opens the relay of driver with
 * cfg and ctx itself (the harness has opened and closed it once, so the
 * configuration is known good), and its first reply (seq 0, op 0) says
 * whether that worked. hang_ms bounds one request. 0 or -errno. */
int relay_worker_start(struct relay_worker *w, const char *driver, json_object *cfg, const struct relay_ctx *ctx,
		       uint32_t hang_ms);
/* Send a request; 0 or -errno (-EAGAIN: the worker has not read what it was
 * sent: hung). Never blocks. *seq gets its sequence number. */
int relay_worker_send(struct relay_worker *w, uint32_t op, uint32_t min_off_ms, const char *console,
		      const char *cut, uint32_t *seq);
/* Read one reply when the fd is readable: 1 with *rep, 0 nothing yet,
 * -EPIPE the worker is gone (its end closed), -EPROTO a malformed reply. */
int relay_worker_read(struct relay_worker *w, struct relay_rep *rep);
/* A request outstanding past its deadline (pc_now_ms() clock). */
int relay_worker_hung(const struct relay_worker *w, uint64_t now_ms);
/* Kill the worker (SIGKILL) and reap it. */
void relay_worker_kill(struct relay_worker *w);
/* Ask the worker to close its relay and exit, waiting at most wait_ms, then
 * kill it. */
void relay_worker_stop(struct relay_worker *w, uint32_t wait_ms);
/* Outside the poll loop (start-up, shut-down): wait at most wait_ms for
 * the next reply: 1 with *rep, or -ETIMEDOUT, -EPIPE, -EPROTO. */
int relay_worker_wait(struct relay_worker *w, uint32_t wait_ms, struct relay_rep *rep);

#endif

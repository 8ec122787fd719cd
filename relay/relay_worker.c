/*
 * relay_worker.c - a board's relay in a process of its own (relay_worker.h).
 *
 * The harness opens the relay once itself (so the configuration is checked
 * and every error is said at start-up, and probes such as the qemu relay's
 * KVM check run once per harness), closes it, and forks the worker, which
 * closes every descriptor it inherited but its socket and stdio (another
 * board's link must close when the harness closes it, not live on in a
 * worker) and opens the relay again for itself. Its first reply says
 * whether that worked. Then it serves requests, one at a time, in order.
 */
#include "relay/relay_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/spawn.h"
#include "common/util.h"

#define CUT_READBACK_TRIES	10
#define CUT_READBACK_US		20000

/* what the child opens */
struct open_args {
	const char *driver;
	json_object *cfg;
	const struct relay_ctx *ctx;
};

/* All of len: 0, -errno, or -EPIPE at the end of the file (a read of 0
 * bytes, a write of none). wr writes, else reads. */
static int io_all(int fd, void *buf, size_t len, int wr)
{
	char *p = buf;

	while (len) {
		ssize_t n = wr ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void reply(int fd, const struct relay_req *q, int ret, uint64_t t0, uint64_t tsw, const char *err)
{
	struct relay_rep p;

	memset(&p, 0, sizeof(p));
	p.magic = RELAY_WORKER_MAGIC;
	p.size = sizeof(p);
	p.seq = q->seq;
	p.op = q->op;
	p.ret = ret;
	p.t_start_us = t0;
	p.t_switch_us = tsw;
	p.t_end_us = pc_now_us();
	if (ret < 0 && err)
		pc_strlcpy(p.err, err, sizeof(p.err));
	if (io_all(fd, &p, sizeof(p), 1))
		_exit(0);	/* the harness is gone */
}

static void __attribute__((noreturn)) serve(int fd, struct relay *r, const struct open_args *oa)
{
	struct relay_req q;
	char err[512] = "";
	uint64_t last_off_us = 0;
	int ret;

	/* the first "request" is the open's own answer (seq 0) */
	memset(&q, 0, sizeof(q));
	ret = relay_open(r, oa->driver, oa->cfg, oa->ctx, err, sizeof(err));
	reply(fd, &q, ret, pc_now_us(), 0, err);
	if (ret)
		_exit(1);
	for (;;) {
		uint64_t t0, tsw = 0;

		if (io_all(fd, &q, sizeof(q), 0) || q.magic != RELAY_WORKER_MAGIC || q.size != sizeof(q))
			break;	/* closed, or not the harness speaking */
		q.console[sizeof(q.console) - 1] = 0;
		q.cut[sizeof(q.cut) - 1] = 0;
		t0 = pc_now_us();
		r->err[0] = 0;
		switch (q.op) {
		case RELAY_OP_ON: {
			uint64_t ready = last_off_us + (uint64_t)q.min_off_ms * 1000;

			/* the board stays off for off_ms, however long the off took */
			while (last_off_us && pc_now_us() < ready)
				pc_sleep_us((uint32_t)(ready - pc_now_us() > 1000000 ? 1000000 : ready - pc_now_us()));
			pc_strlcpy(r->console, q.console, sizeof(r->console));
			pc_strlcpy(r->cut, q.cut, sizeof(r->cut));
			ret = relay_on(r);
			tsw = pc_now_us();
			break;
		}
		case RELAY_OP_OFF:
			ret = relay_off(r);
			tsw = last_off_us = pc_now_us();
			break;
		case RELAY_OP_CUT:
			ret = relay_off(r);
			tsw = last_off_us = pc_now_us();
			/* a relay that can say so must confirm the power is off: a
			 * cut that did not happen would make every verdict after it
			 * a lie (a kill is delivered, not done, when kill() returns) */
			for (int i = 0; !ret && relay_get(r) == 1; i++) {
				if (i == CUT_READBACK_TRIES) {
					snprintf(r->err, sizeof(r->err), "board %s: the relay still reports power on "
						 "%d ms after the cut", r->board, CUT_READBACK_TRIES * CUT_READBACK_US / 1000);
					ret = -EIO;
					break;
				}
				pc_sleep_us(CUT_READBACK_US);
			}
			break;
		case RELAY_OP_GET:
			ret = relay_get(r);
			break;
		case RELAY_OP_CLOSE:
			relay_close(r);
			reply(fd, &q, 0, t0, 0, NULL);
			_exit(0);
		default:
			snprintf(r->err, sizeof(r->err), "relay worker: unknown request %u", q.op);
			ret = -EINVAL;
		}
		reply(fd, &q, ret, t0, tsw, r->err);
	}
	relay_close(r);
	_exit(0);
}

static void __attribute__((noreturn)) child(int sock, const struct open_args *oa)
{
	struct relay r;
	struct sigaction sa = { .sa_handler = SIG_IGN };

	/* dies with the harness; Ctrl-C and a stop are the harness's to
	 * handle (it switches the boards off through us, then closes us) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
	/* the socket at 3, everything else the harness had open closed */
	if (sock != 3) {
		if (dup2(sock, 3) < 0)
			_exit(1);
		close(sock);
	}
	if (syscall(SYS_close_range, 4u, ~0u, 0u) != 0)
		for (int fd = 4; fd < 65536; fd++)
			close(fd);
	serve(3, &r, oa);
}

/* The worker's arguments, through pc_spawn_fn. */
struct worker_job {
	pid_t parent;
	int mine, sock;
	const struct open_args *oa;
};

static void worker_child(void *arg)
{
	struct worker_job *j = arg;

	close(j->mine);
	if (getppid() != j->parent)
		_exit(0);	/* the harness died before PDEATHSIG was set */
	child(j->sock, j->oa);
}

int relay_worker_start(struct relay_worker *w, const char *driver, json_object *cfg, const struct relay_ctx *ctx,
		       uint32_t hang_ms)
{
	struct open_args oa = { .driver = driver, .cfg = cfg, .ctx = ctx };
	struct worker_job job;
	struct pc_spawn s;
	int sv[2], rc;
	pid_t pid;

	w->pid = 0;
	w->fd = -1;
	w->seq = 0;
	w->hang_ms = hang_ms;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pc_spawn_init(&s);
	s.flags = PC_SPAWN_FLUSH;
	job = (struct worker_job){ .parent = getpid(), .mine = sv[0], .sock = sv[1], .oa = &oa };
	rc = pc_spawn_fn(&pid, &s, worker_child, &job);
	if (rc < 0) {
		close(sv[0]);
		close(sv[1]);
		return rc;
	}
	close(sv[1]);
	if (fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) < 0) {
		int e = errno;
		close(sv[0]);
		pc_kill_reap(pid, 0, NULL, PC_REAP_FOREVER);
		return -e;
	}
	w->pid = pid;
	w->fd = sv[0];
	/* the open's answer is outstanding */
	w->outstanding = 1;
	w->deadline_ms = pc_now_ms() + hang_ms;
	return 0;
}

int relay_worker_send(struct relay_worker *w, uint32_t op, uint32_t min_off_ms, const char *console,
		      const char *cut, uint32_t *seq)
{
	struct relay_req q;
	ssize_t n;

	if (w->fd < 0)
		return -EPIPE;
	memset(&q, 0, sizeof(q));
	q.magic = RELAY_WORKER_MAGIC;
	q.size = sizeof(q);
	q.seq = ++w->seq;
	q.op = op;
	q.min_off_ms = min_off_ms;
	if (console)
		pc_strlcpy(q.console, console, sizeof(q.console));
	if (cut)
		pc_strlcpy(q.cut, cut, sizeof(q.cut));
	/* one datagram, whole or not at all; a full socket is a worker that
	 * stopped reading */
	n = send(w->fd, &q, sizeof(q), MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n != (ssize_t)sizeof(q))
		return n < 0 ? (errno == EWOULDBLOCK ? -EAGAIN : -errno) : -EIO;
	if (!w->outstanding++)
		w->deadline_ms = pc_now_ms() + w->hang_ms;
	if (seq)
		*seq = q.seq;
	return 0;
}

int relay_worker_read(struct relay_worker *w, struct relay_rep *rep)
{
	ssize_t n;

	if (w->fd < 0)
		return -EPIPE;
	n = recv(w->fd, rep, sizeof(*rep), MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -EPIPE;
	if (n == 0)
		return -EPIPE;
	if (n != (ssize_t)sizeof(*rep) || rep->magic != RELAY_WORKER_MAGIC || rep->size != sizeof(*rep) ||
	    rep->seq > w->seq || !w->outstanding)
		return -EPROTO;
	rep->err[sizeof(rep->err) - 1] = 0;
	/* the next outstanding request's clock starts now */
	if (--w->outstanding)
		w->deadline_ms = pc_now_ms() + w->hang_ms;
	return 1;
}

int relay_worker_hung(const struct relay_worker *w, uint64_t now_ms)
{
	return w->fd >= 0 && w->outstanding && now_ms >= w->deadline_ms;
}

void relay_worker_kill(struct relay_worker *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	if (w->pid > 0)
		pc_kill_reap(w->pid, 0, NULL, PC_REAP_FOREVER);
	w->pid = 0;
	w->outstanding = 0;
}

int relay_worker_wait(struct relay_worker *w, uint32_t wait_ms, struct relay_rep *rep)
{
	uint64_t end = pc_now_ms() + wait_ms;

	for (;;) {
		struct pollfd p = { .fd = w->fd, .events = POLLIN };
		uint64_t now = pc_now_ms();
		int ret;

		if (w->fd < 0)
			return -EPIPE;
		ret = relay_worker_read(w, rep);
		if (ret)
			return ret;
		if (now >= end)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)(end - now)) < 0 && errno != EINTR)
			return -errno;
	}
}

void relay_worker_stop(struct relay_worker *w, uint32_t wait_ms)
{
	struct relay_rep rep;
	uint64_t end = pc_now_ms() + wait_ms;

	if (w->fd >= 0 && !relay_worker_send(w, RELAY_OP_CLOSE, 0, NULL, NULL, NULL)) {
		/* what is still outstanding comes first, then the close's answer */
		while (w->outstanding) {
			uint64_t now = pc_now_ms();
			if (now >= end || relay_worker_wait(w, (uint32_t)(end - now), &rep) < 0)
				break;
		}
	}
	if (w->pid > 0 && !w->outstanding) {
		/* it exits after answering: give it a moment (100 ms) before the kill */
		int r = pc_reap(w->pid, NULL, 100);

		if (r == 0 || r == -ECHILD)
			w->pid = 0;	/* reaped: never kill a pid that may be reused */
	}
	relay_worker_kill(w);
}

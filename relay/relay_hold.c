/*
 * relay_hold.c - the relay holder daemon and its client (relay_hold.h).
 *
 * One poll() loop, signal handlers that only set a flag, one request per
 * connection with a receive timeout: a client that connects and says
 * nothing costs the holder RELAY_HOLD_ASK_MS, never the line.
 */
#include "relay/relay_hold.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/spawn.h"
#include "common/util.h"

#define HOLD_REQ_MAX	16
#define HOLD_REP_MAX	600

static volatile sig_atomic_t hold_stop;

/* The abstract address of name (a leading NUL, no file); its length. */
static socklen_t hold_addr(struct sockaddr_un *sa, const char *name)
{
	size_t n = strlen(name);

	if (n > sizeof(sa->sun_path) - 1)
		n = sizeof(sa->sun_path) - 1;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path + 1, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static void hold_on_signal(int sig)
{
	hold_stop = sig;
}

/* A reply datagram; a client that went away is no concern of the holder's. */
static void hold_reply(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hold_reply(int fd, const char *fmt, ...)
{
	char buf[HOLD_REP_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	if (send(fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* nothing to do: the next client asks again */
	}
}

/* Serve one connection; 1 when it asked for the release. */
static int hold_serve(int cfd, struct relay *r, struct relay_lock *l)
{
	struct timeval tv = { .tv_sec = RELAY_HOLD_ASK_MS / 1000 };
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	char req[HOLD_REQ_MAX];
	ssize_t n;
	int rc;

	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 ||
	    (cr.uid != 0 && cr.uid != getuid())) {
		hold_reply(cfd, "err the holder (pid %ld) takes requests only from uid %ld or root", (long)getpid(),
			   (long)getuid());
		return 0;
	}
	setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = recv(cfd, req, sizeof(req) - 1, 0);
	if (n <= 0)
		return 0;
	req[n] = 0;
	if (!strcmp(req, "get")) {
		rc = relay_get(r);
		if (rc < 0)
			hold_reply(cfd, "err %s", r->err);
		else
			hold_reply(cfd, "ok %s", rc ? "on" : "off");
		return 0;
	}
	if (!strcmp(req, "on") || !strcmp(req, "off")) {
		int on = !strcmp(req, "on");

		rc = on ? relay_on(r) : relay_off(r);
		if (rc < 0) {
			hold_reply(cfd, "err %s", r->err);
			return 0;
		}
		pc_strlcpy(l->me.state, req, sizeof(l->me.state));
		relay_lock_update(l);
		hold_reply(cfd, "ok %s", req);
		return 0;
	}
	if (!strcmp(req, "release")) {
		hold_reply(cfd, "ok released");
		return 1;
	}
	hold_reply(cfd, "err unknown request (expected on, off, get or release)");
	return 0;
}

/* The holder's life after its relay is open: listen, serve, release. */
static void __attribute__((noreturn)) hold_run(int ready, struct relay *r, struct relay_lock *l, int lfd)
{
	static const char ok[] = "ok";
	struct sigaction sa = { .sa_handler = hold_on_signal };

	if (pc_write_all(ready, ok, sizeof(ok)) < 0) {
		/* the command that started us is gone: hold all the same */
	}
	close(ready);
	if (chdir("/") < 0) {
		/* a cwd is all it would keep busy */
	}
	while (!hold_stop) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		int cfd;

		if (poll(&p, 1, 1000) <= 0)
			continue;
		cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0)
			continue;
		if (hold_serve(cfd, r, l)) {
			close(cfd);
			break;
		}
		close(cfd);
	}
	sa.sa_handler = SIG_IGN;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* no new client finds us, then the line goes, then the lock */
	close(lfd);
	relay_close(r);
	relay_lock_release(l);
	_exit(0);
}

/* Tell the waiting command why the holder could not start, and exit. */
static void __attribute__((noreturn)) hold_fail(int ready, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void __attribute__((noreturn)) hold_fail(int ready, const char *fmt, ...)
{
	char buf[HOLD_REP_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (pc_write_all(ready, buf, strlen(buf) + 1) < 0) {
		/* nobody to tell */
	}
	_exit(1);
}

static void __attribute__((noreturn)) hold_child(int ready, struct relay_lock *l, const char *driver,
						 json_object *cfg, const struct relay_ctx *ctx)
{
	struct sigaction sa = { .sa_handler = hold_on_signal };
	struct sockaddr_un sa_un;
	char err[512] = "";
	struct relay r;
	int devnull, lfd;

	setsid();
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	/* the lock at 3, the ready pipe at 4, nothing else of the command's
	 * (by way of high numbers: either may sit at 3 or 4 now) */
	{
		int lk = fcntl(l->fd, F_DUPFD, 10), rd = fcntl(ready, F_DUPFD, 10);

		if (lk < 0 || rd < 0 || dup2(lk, 3) < 0 || dup2(rd, 4) < 0)
			hold_fail(ready, "dup2: %s", strerror(errno));
		l->fd = 3;
		ready = 4;
	}
	if (syscall(SYS_close_range, 5u, ~0u, 0u) != 0)
		for (int fd = 5; fd < 65536; fd++)
			close(fd);
	devnull = open("/dev/null", O_RDWR);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		if (devnull > 4)
			close(devnull);
	}
	if (relay_open(&r, driver, cfg, ctx, err, sizeof(err)))
		hold_fail(ready, "%s", err);
	pc_strlcpy(l->me.role, "holder", sizeof(l->me.role));
	pc_strlcpy(l->me.state, ctx->open_state == RELAY_OPEN_ON ? "on" : "off", sizeof(l->me.state));
	l->me.pid = getpid();
	if (relay_lock_update(l) < 0)
		hold_fail(ready, "%s: cannot write: %s", l->path, strerror(errno));
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa_un, hold_addr(&sa_un, l->sock)) < 0 || listen(lfd, 8) < 0) {
		int e = errno;

		relay_close(&r);
		hold_fail(ready, "cannot listen on @%s: %s", l->sock, strerror(e));
	}
	hold_run(ready, &r, l, lfd);
}

/* The holder's arguments, through pc_spawn_fn. */
struct hold_job {
	int rd, wr;
	struct relay_lock *l;
	const char *driver;
	json_object *cfg;
	const struct relay_ctx *ctx;
};

static void hold_job_run(void *arg)
{
	struct hold_job *j = arg;

	close(j->rd);
	hold_child(j->wr, j->l, j->driver, j->cfg, j->ctx);
}

int relay_hold_start(struct relay_lock *l, const char *driver, json_object *cfg, const struct relay_ctx *ctx,
		     pid_t *pid, char *err, size_t errlen)
{
	char buf[HOLD_REP_MAX];
	size_t got = 0;
	struct hold_job job;
	struct pc_spawn s;
	int pfd[2], rc;
	pid_t child;

	if (!l->sock[0])
		return pc_fail(err, errlen, -ENAMETOOLONG, "%s: no socket path for its holder", l->path);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return pc_fail(err, errlen, -errno, "pipe: %s", strerror(errno));
	pc_spawn_init(&s);
	s.flags = PC_SPAWN_FLUSH;
	job = (struct hold_job){ .rd = pfd[0], .wr = pfd[1], .l = l, .driver = driver, .cfg = cfg, .ctx = ctx };
	rc = pc_spawn_fn(&child, &s, hold_job_run, &job);
	if (rc < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return pc_fail(err, errlen, rc, "cannot start the relay holder: fork: %s", strerror(-rc));
	}
	close(pfd[1]);
	/* its first words: "ok" once it holds the relay, else why not (EOF: it died) */
	for (;;) {
		ssize_t n = read(pfd[0], buf + got, sizeof(buf) - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(buf, 0, got) || got == sizeof(buf) - 1)
			break;
	}
	close(pfd[0]);
	buf[got] = 0;
	if (!strcmp(buf, "ok")) {
		*pid = child;
		return 0;
	}
	/* it exits after saying why: reap it */
	pc_reap(child, NULL, PC_REAP_FOREVER);
	return pc_fail(err, errlen, -EIO, "%s", buf[0] ? buf : "the relay holder died before it held the relay");
}

int relay_hold_ask(const char *sock, const char *req, char *reply, size_t len, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	char buf[HOLD_REP_MAX + 1];
	struct pollfd p;
	ssize_t n;
	int fd, rc;

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return pc_fail(err, errlen, -errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, hold_addr(&sa, sock)) < 0) {
		rc = -errno;
		close(fd);
		return pc_fail(err, errlen, rc, "cannot reach the relay holder at @%s: %s", sock, strerror(-rc));
	}
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0) {
		rc = -errno;
		close(fd);
		return pc_fail(err, errlen, rc, "cannot ask the relay holder at @%s: %s", sock, strerror(-rc));
	}
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	rc = poll(&p, 1, RELAY_HOLD_ASK_MS);
	n = rc > 0 ? recv(fd, buf, sizeof(buf) - 1, 0) : -1;
	close(fd);
	if (n <= 0)
		return pc_fail(err, errlen, -ETIMEDOUT, "the relay holder at @%s did not answer '%s' within %d ms", sock, req,
			 RELAY_HOLD_ASK_MS);
	buf[n] = 0;
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < ' ' || buf[i] == 0x7f)
			buf[i] = '?';
	if (!strncmp(buf, "ok ", 3)) {
		pc_strlcpy(reply, buf + 3, len);
		return 0;
	}
	return pc_fail(err, errlen, -EIO, "%s", !strncmp(buf, "err ", 4) ? buf + 4 : buf);
}

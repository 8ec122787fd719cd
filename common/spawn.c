/*
 * spawn.c - fork, exec and reap: the one place a child process is started
 * (spawn.h says what each setting does).
 */
#include "common/spawn.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

void pc_spawn_init(struct pc_spawn *s)
{
	memset(s, 0, sizeof(*s));
	s->fd_in = s->fd_out = s->fd_err = s->fd_keep = -1;
}

/* In the child: the fds, group and signals the settings ask for; _exit(127) if a move fails. */
static void child_prepare(const struct pc_spawn *s)
{
	if (s->child_setup)
		s->child_setup(s->arg);
	if (s->flags & PC_SPAWN_GROUP)
		setpgid(0, 0);
	if ((s->fd_in >= 0 && dup2(s->fd_in, STDIN_FILENO) < 0) ||
	    (s->fd_out >= 0 && dup2(s->fd_out, STDOUT_FILENO) < 0) ||
	    (s->fd_err >= 0 && dup2(s->fd_err, STDERR_FILENO) < 0))
		_exit(127);
	if (s->flags & PC_SPAWN_SIGDFL) {
		sigset_t none;

		signal(SIGPIPE, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
	if (s->flags & PC_SPAWN_CLOEXEC)
		close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
	if (s->fd_keep >= 0 && fcntl(s->fd_keep, F_SETFD, 0) < 0)
		_exit(127);
	if (s->flags & PC_SPAWN_NICE)
		(void)setpriority(PRIO_PROCESS, 0, s->nice);
}

/* In the child: close fds from 3 up but keep (the exec-error pipe's write end). */
static void close_from_3(int keep)
{
	if (keep < 0) {
		close_range(3, ~0U, 0);
		return;
	}
	if (keep > 3)
		close_range(3, (unsigned)keep - 1, 0);
	close_range((unsigned)keep + 1, ~0U, 0);
}

static __attribute__((noreturn)) void child_exec(const struct pc_spawn *s, char *const argv[], int ep)
{
	const char *path = s->path ? s->path : argv[0];
	int e;

	child_prepare(s);
	if (s->flags & PC_SPAWN_CLOSE_FDS)
		close_from_3(ep);
	if (s->envp)
		execve(path, argv, s->envp);
	else if (s->flags & PC_SPAWN_PATH)
		execvp(path, argv);
	else
		execv(path, argv);
	e = errno;
	if (ep >= 0 && write(ep, &e, sizeof(e)) < 0)
		_exit(127);
	if (ep < 0 && s->exec_fail_msg && write(STDERR_FILENO, s->exec_fail_msg, strlen(s->exec_fail_msg)) < 0)
		_exit(127);
	_exit(127);
}

int pc_spawn(struct pc_child *c, const struct pc_spawn *s, char *const argv[])
{
	int ep[2] = { -1, -1 }, rc;

	c->pid = 0;
	c->exec_fd = -1;
	c->failed = NULL;
	if ((s->flags & PC_SPAWN_EXEC_ERR) && pipe2(ep, O_CLOEXEC) < 0) {
		c->failed = "pipe2";
		return -errno;
	}
	if (s->flags & PC_SPAWN_FLUSH)
		fflush(NULL);
	c->pid = fork();
	if (c->pid < 0) {
		rc = -errno;
		c->pid = 0;
		c->failed = "fork";
		if (ep[0] >= 0) {
			close(ep[0]);
			close(ep[1]);
		}
		return rc;
	}
	if (c->pid == 0)
		child_exec(s, argv, ep[1]);
	/* both sides call setpgid: kill(-pid) works whichever runs first */
	if (s->flags & PC_SPAWN_GROUP)
		setpgid(c->pid, c->pid);
	if (ep[1] >= 0)
		close(ep[1]);
	c->exec_fd = ep[0];
	return 0;
}

int pc_spawn_exec_result(struct pc_child *c)
{
	int child_errno = 0;
	ssize_t n;

	if (c->exec_fd < 0)
		return 0;
	do
		n = read(c->exec_fd, &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	pc_spawn_close(c);
	if (n != (ssize_t)sizeof(child_errno))
		return 0;	/* EOF: the exec closed the pipe */
	pc_reap(c->pid, NULL, PC_REAP_FOREVER);	/* it _exit()s right after the write */
	c->pid = 0;
	return -child_errno;
}

void pc_spawn_close(struct pc_child *c)
{
	if (c->exec_fd >= 0)
		close(c->exec_fd);
	c->exec_fd = -1;
}

int pc_spawn_fn(pid_t *pid, const struct pc_spawn *s, void (*fn)(void *), void *arg)
{
	pid_t p;

	if (s->flags & PC_SPAWN_FLUSH)
		fflush(NULL);
	p = fork();
	if (p < 0)
		return -errno;
	if (p == 0) {
		child_prepare(s);
		fn(arg);
		_exit(127);
	}
	if (s->flags & PC_SPAWN_GROUP)
		setpgid(p, p);
	*pid = p;
	return 0;
}

/* Milliseconds left until deadline, 0 once it passed; INT_MAX-bounded. */
static int ms_left(uint64_t deadline)
{
	uint64_t now = pc_now_ms();

	if (now >= deadline)
		return 0;
	return deadline - now > 0x7fffffff ? 0x7fffffff : (int)(deadline - now);
}

/* Blocking: the child's end, however long. */
static int reap_forever(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int pc_reap(pid_t pid, int *status, uint64_t ms)
{
	uint64_t deadline, sleep_us = 500;

	if (ms == PC_REAP_FOREVER)
		return reap_forever(pid, status);
	deadline = pc_now_ms() + ms;
#ifdef SYS_pidfd_open
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);

	while (pfd >= 0) {
		struct pollfd p = { .fd = pfd, .events = POLLIN };
		pid_t w = waitpid(pid, status, WNOHANG);
		int left;

		if (w == pid || (w < 0 && errno != EINTR)) {
			int e = w == pid ? 0 : -errno;
			close(pfd);
			return e;
		}
		left = ms_left(deadline);
		if (!left) {
			close(pfd);
			return -ETIMEDOUT;
		}
		if (poll(&p, 1, left) < 0 && errno != EINTR) {
			close(pfd);
			break;	/* then as without pidfds */
		}
	}
#endif
	for (;;) {
		pid_t w = waitpid(pid, status, WNOHANG);

		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -errno;
		if (pc_now_ms() >= deadline)
			return -ETIMEDOUT;
		pc_sleep_us(sleep_us);
		if (sleep_us < 20000)
			sleep_us *= 2;
	}
}

int pc_kill_reap(pid_t pid, int group, int *status, uint64_t ms)
{
	if (kill(group ? -pid : pid, SIGKILL) < 0 && errno != ESRCH)
		return -errno;
	return pc_reap(pid, status, ms);
}

int pc_exit_code(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

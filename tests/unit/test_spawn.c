/*
 * test_spawn.c - the one spawn helper (common/spawn.h): exec with the
 * child's fds moved, a failed exec as -errno, its own process group, a
 * function in the child, and the reap within a deadline or after a kill.
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/spawn.h"
#include "common/util.h"

/* What the child wrote on the pipe, up to len - 1 bytes, NUL-ended. */
static void read_all(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = 0;
}

/* argv started with a pipe as its stderr (both: its stdout too), what it
 * wrote read into buf, then reaped: its exit code. */
static int run_read(struct pc_spawn *s, char *const argv[], int both, char *buf, size_t len)
{
	struct pc_child c;
	int p[2], st = 0;

	CU_ASSERT_EQUAL_FATAL(pipe2(p, O_CLOEXEC), 0);
	s->fd_err = p[1];
	if (both)
		s->fd_out = p[1];
	CU_ASSERT_EQUAL_FATAL(pc_spawn(&c, s, argv), 0);
	close(p[1]);
	CU_ASSERT(c.pid > 0);
	CU_ASSERT_EQUAL(pc_spawn_exec_result(&c), 0);
	CU_ASSERT_EQUAL(c.exec_fd, -1);
	read_all(p[0], buf, len);
	close(p[0]);
	CU_ASSERT_EQUAL(pc_reap(c.pid, &st, 5000), 0);
	return pc_exit_code(st);
}

static void test_exec_fds(void)
{
	char *const argv[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
	struct pc_spawn s;
	char buf[64];

	pc_spawn_init(&s);
	s.flags = PC_SPAWN_PATH | PC_SPAWN_EXEC_ERR | PC_SPAWN_SIGDFL | PC_SPAWN_CLOSE_FDS;
	CU_ASSERT_EQUAL(run_read(&s, argv, 1, buf, sizeof(buf)), 3);
	CU_ASSERT_STRING_EQUAL(buf, "out\nerr\n");
}

/* A binary that is not there: the exec's errno comes back, the child reaped. */
static void test_exec_missing(void)
{
	char *const argv[] = { "/nonexistent/powercut-no-such-binary", NULL };
	struct pc_spawn s;
	struct pc_child c;

	pc_spawn_init(&s);
	s.flags = PC_SPAWN_EXEC_ERR;
	CU_ASSERT_EQUAL_FATAL(pc_spawn(&c, &s, argv), 0);
	CU_ASSERT_EQUAL(pc_spawn_exec_result(&c), -ENOENT);
	CU_ASSERT_EQUAL(c.pid, 0);
	CU_ASSERT_EQUAL(c.exec_fd, -1);
	CU_ASSERT_STRING_EQUAL(strerror(ENOENT), "No such file or directory");
}

/* Without the error pipe: the site's own words on the child's stderr, exit 127. */
static void test_exec_fail_msg(void)
{
	char *const argv[] = { "sh", NULL };
	struct pc_spawn s;
	char buf[128];

	pc_spawn_init(&s);
	s.flags = PC_SPAWN_CLOSE_FDS;
	s.path = "/nonexistent/sh";
	s.exec_fail_msg = "test: cannot exec /nonexistent/sh\n";
	CU_ASSERT_EQUAL(run_read(&s, argv, 0, buf, sizeof(buf)), 127);
	CU_ASSERT_STRING_EQUAL(buf, "test: cannot exec /nonexistent/sh\n");
}

/* Its own group, reaped within a deadline or not, then killed with its group. */
static void test_group_deadline(void)
{
	char *const argv[] = { "sleep", "30", NULL };
	struct pc_spawn s;
	struct pc_child c;
	uint64_t t0;
	int st = 0;

	pc_spawn_init(&s);
	s.flags = PC_SPAWN_PATH | PC_SPAWN_GROUP | PC_SPAWN_EXEC_ERR;
	CU_ASSERT_EQUAL_FATAL(pc_spawn(&c, &s, argv), 0);
	CU_ASSERT_EQUAL(pc_spawn_exec_result(&c), 0);
	CU_ASSERT_EQUAL(getpgid(c.pid), c.pid);
	t0 = pc_now_ms();
	CU_ASSERT_EQUAL(pc_reap(c.pid, &st, 50), -ETIMEDOUT);
	CU_ASSERT(pc_now_ms() - t0 >= 50);
	CU_ASSERT_EQUAL(pc_kill_reap(c.pid, 1, &st, 5000), 0);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	CU_ASSERT_EQUAL(pc_exit_code(st), 128 + SIGKILL);
	/* gone: a second reap says so */
	CU_ASSERT_EQUAL(pc_reap(c.pid, NULL, 10), -ECHILD);
}

/* Under PC_SPAWN_CLOEXEC every fd from 3 up goes with the exec but fd_keep
 * (the qemu relay's QMP socket, the KVM probe's console): the child writes
 * on the one it kept and finds the other closed. */
static void test_fd_keep(void)
{
	int keep[2], gone[2], st = 0;
	char cmd[160], buf[32];
	struct pc_spawn s;
	struct pc_child c;

	CU_ASSERT_EQUAL_FATAL(pipe(keep), 0);
	CU_ASSERT_EQUAL_FATAL(pipe(gone), 0);
	snprintf(cmd, sizeof(cmd), "echo kept >&%d; if { true >&%d; } 2>/dev/null; then echo leaked >&%d; fi",
		 keep[1], gone[1], keep[1]);
	char *const argv[] = { "sh", "-c", cmd, NULL };

	pc_spawn_init(&s);
	s.flags = PC_SPAWN_PATH | PC_SPAWN_EXEC_ERR | PC_SPAWN_CLOEXEC;
	s.fd_keep = keep[1];
	CU_ASSERT_EQUAL_FATAL(pc_spawn(&c, &s, argv), 0);
	CU_ASSERT_EQUAL(pc_spawn_exec_result(&c), 0);
	close(keep[1]);
	close(gone[1]);
	CU_ASSERT_EQUAL(pc_reap(c.pid, &st, 5000), 0);
	read_all(keep[0], buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "kept\n");
	CU_ASSERT_EQUAL(pc_exit_code(st), 0);
	close(keep[0]);
	close(gone[0]);
}

static void exit_with(void *arg)
{
	_exit(*(int *)arg);
}

static void test_fn(void)
{
	struct pc_spawn s;
	int code = 7, st = 0;
	pid_t pid = 0;

	pc_spawn_init(&s);
	s.flags = PC_SPAWN_FLUSH;
	CU_ASSERT_EQUAL_FATAL(pc_spawn_fn(&pid, &s, exit_with, &code), 0);
	CU_ASSERT(pid > 0);
	CU_ASSERT_EQUAL(pc_reap(pid, &st, PC_REAP_FOREVER), 0);
	CU_ASSERT_EQUAL(pc_exit_code(st), 7);
}

int suite_spawn(void)
{
	static const struct pc_test tests[] = {
		{ "exec with stdout and stderr moved, its exit code", test_exec_fds },
		{ "a missing binary: the exec's -ENOENT, the child reaped", test_exec_missing },
		{ "a failed exec without the pipe: the site's message, exit 127", test_exec_fail_msg },
		{ "its own group; a reap's deadline; killed with its group", test_group_deadline },
		{ "a function in the child, its exit code", test_fn },
		{ "every fd close-on-exec but the one kept (fd_keep)", test_fd_keep },
	};

	return pc_test_suite("spawn", tests, PC_ARRAY_SIZE(tests));
}

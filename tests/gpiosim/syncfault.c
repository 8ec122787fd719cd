/*
 * syncfault.c - an LD_PRELOAD shim that makes fsync() and fdatasync() of
 * chosen files fail, or take long: a results disk that loses data, or a slow
 * one, for the harness's tests (tests/integration/t-sync-fault.sh) and the
 * bench (bench/slow-results).
 *
 * Only calls on a file whose path (from /proc/self/fd) starts with
 * SYNCFAULT_PATH are touched; without it the shim passes everything through.
 *
 *   SYNCFAULT_PATH      a path prefix ("/tmp/r/": the files of folder r)
 *   SYNCFAULT_NAMES     comma-separated prefixes of the file's name
 *                       ("events.jsonl,verdicts.jsonl,campaign.json"); all if unset
 *   SYNCFAULT_AFTER     the first N matching calls succeed (default 0)
 *   SYNCFAULT_FAILS     how many fail after them (default 1, the "fsyncgate"
 *                       disk: one sync fails, the next succeed; -1: all)
 *   SYNCFAULT_ERRNO     the errno they fail with (default EIO)
 *   SYNCFAULT_DELAY_MS  each matching call sleeps this long first (default 0)
 *   SYNCFAULT_LOG       a file: one line per matching call, "pid call path R",
 *                       R "ok" (let through) or the errno it failed with
 *
 * The data written before a failed sync stays in the page cache and reaches
 * the disk as usual: what the shim removes is the promise, which is what a
 * harness must not go on without.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int fsync(int fd);
int fdatasync(int fd);

static long env_long(const char *name, long def)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	v = strtol(s, &end, 10);
	return *end ? def : v;
}

/* Does the file on fd match SYNCFAULT_PATH and SYNCFAULT_NAMES? path: its name. */
static int matches(int fd, char *path, size_t len)
{
	const char *prefix = getenv("SYNCFAULT_PATH"), *names = getenv("SYNCFAULT_NAMES"), *base;
	char link[64];
	ssize_t n;

	if (!prefix || !*prefix)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, len - 1);
	if (n <= 0)
		return 0;
	path[n] = 0;
	if (strncmp(path, prefix, strlen(prefix)))
		return 0;
	if (!names || !*names)
		return 1;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (const char *p = names; *p;) {
		size_t l = strcspn(p, ",");

		if (l && !strncmp(base, p, l))
			return 1;
		p += l + (p[l] == ',');
	}
	return 0;
}

static void log_call(const char *call, const char *path, int err)
{
	const char *log = getenv("SYNCFAULT_LOG");
	char line[PATH_MAX + 96], r[16] = "ok";
	int fd, l;

	if (!log || !*log)
		return;
	if (err)
		snprintf(r, sizeof(r), "%d", err);
	l = snprintf(line, sizeof(line), "%ld %s %s %s\n", (long)getpid(), call, path, r);
	fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)l) < 0)
		l = 0;
	close(fd);
}

/* 0: let the call through; else the errno to fail it with. */
static int decide(int fd, const char *call)
{
	static long calls;
	char path[PATH_MAX];
	long after = env_long("SYNCFAULT_AFTER", 0), fails = env_long("SYNCFAULT_FAILS", 1), delay, n;
	int err = (int)env_long("SYNCFAULT_ERRNO", EIO), saved = errno;

	if (!matches(fd, path, sizeof(path))) {
		errno = saved;
		return 0;
	}
	delay = env_long("SYNCFAULT_DELAY_MS", 0);
	if (delay > 0) {
		struct timespec ts = { delay / 1000, (delay % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	n = __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST);
	if (n <= after || (fails >= 0 && n > after + fails))
		err = 0;
	log_call(call, path, err);
	errno = saved;
	return err;
}

int fsync(int fd)
{
	static int (*real)(int);
	int err = decide(fd, "fsync");

	if (err) {
		errno = err;
		return -1;
	}
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	return real(fd);
}

int fdatasync(int fd)
{
	static int (*real)(int);
	int err = decide(fd, "fdatasync");

	if (err) {
		errno = err;
		return -1;
	}
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	return real(fd);
}

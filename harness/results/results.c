/*
 * results.c - append-only result files, and the lock that keeps them one run's.
 */
#include "harness/results/results.h"
#include "harness/results/jsonl.h"
#include "harness/results/verdict.h"
#include "harness/results/writer.h"

#include "common/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

/* Cut a file back to its last newline; returns bytes removed or -errno. */
static long trim_torn(int fd)
{
	struct stat st;
	char buf[4096];
	off_t end, pos;

	if (fstat(fd, &st) < 0)
		return -errno;
	end = st.st_size;
	pos = end;
	while (pos > 0) {
		size_t n = pos > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)pos;
		if (pc_pread_all(fd, buf, n, pos - (off_t)n))
			return -EIO;
		for (size_t i = n; i-- > 0;) {
			if (buf[i] == '\n') {
				off_t keep = pos - (off_t)n + (off_t)i + 1;
				if (keep == end)
					return 0;
				if (ftruncate(fd, keep) < 0 || fsync(fd) < 0)
					return -errno;
				return (long)(end - keep);
			}
		}
		pos -= (off_t)n;
	}
	if (end && (ftruncate(fd, 0) < 0 || fsync(fd) < 0))
		return -errno;
	return (long)end;
}

static int open_append(struct results *r, const char *name, int *fdp, char *note, size_t notelen,
		       char *err, size_t errlen)
{
	char path[PATH_MAX + 32];
	long cut;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", r->dir, name);
	fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return pc_fail(err, errlen, -errno, "%s: cannot open: %s", path, strerror(errno));
	cut = trim_torn(fd);
	if (cut < 0) {
		close(fd);
		return pc_fail(err, errlen, (int)cut, "%s: cannot repair: %s", path, strerror((int)-cut));
	}
	if (cut > 0 && note) {
		size_t l = strlen(note);
		snprintf(note + l, notelen - l, "%s: removed a torn last line of %ld bytes (the harness "
			 "was killed while writing it); ", path, cut);
	}
	*fdp = fd;
	return 0;
}

#define LOCK_NAME	PC_FILE_LOCK
#define LOCK_MAX	4096		/* the file is one short line: read no more than this */
#define LOCK_WAIT_MS	1500		/* see lock_take() */
#define LOCK_PID_MAX	4194304L	/* PID_MAX_LIMIT */
#define LOCK_TIME_MAX	(INT64_C(1) << 40)	/* epoch seconds: anything larger is not a time */

static void lock_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S %z", &tm))
		snprintf(buf, len, "%" PRId64 " (epoch seconds)", t);
}

/* What the lock file on fd says. Anyone can write to it: every field is
 * checked, and the host name is printed only as printable characters. */
static void lock_read(int fd, struct results_lock_info *li)
{
	char buf[LOCK_MAX];
	json_object *o, *v;

	li->known = 0;
	li->pid = 0;
	li->host[0] = 0;
	li->started = li->ended = 0;
	/* the first line only: a run rewriting the file writes the new line
	 * over the old one before it truncates what is left */
	o = pc_json_first_line(fd, buf, sizeof(buf));
	if (!o)
		return;
	li->pid = (long)pc_json_int_in(o, "pid", 1, LOCK_PID_MAX);
	li->started = pc_json_int_in(o, "started", 0, LOCK_TIME_MAX);
	li->ended = pc_json_int_in(o, "ended", 0, LOCK_TIME_MAX);
	if (li->ended < 0)
		li->ended = 0;
	if (json_object_object_get_ex(o, "host", &v) && json_object_is_type(v, json_type_string)) {
		const char *h = json_object_get_string(v);
		size_t i;

		for (i = 0; h[i] && i < sizeof(li->host) - 1; i++)
			li->host[i] = h[i] > ' ' && h[i] < 0x7f ? h[i] : '?';
		li->host[i] = 0;
	}
	if (!li->host[0])
		pc_strlcpy(li->host, "an unknown host", sizeof(li->host));
	li->known = li->pid > 0 && li->started >= 0;
	if (!li->known) {
		li->pid = 0;
		li->started = 0;
	}
	json_object_put(o);
}

/* Say who holds the folder: one line, written over the old one and then cut
 * to length, so a reader always finds a whole first line. */
static int lock_write(int fd, int64_t started, int64_t ended)
{
	json_object *o = json_object_new_object();
	char host[256] = "";
	const char *s;
	int ret;

	if (!o)
		return -ENOMEM;
	gethostname(host, sizeof(host) - 1);
	json_object_object_add(o, "pid", json_object_new_int64(getpid()));
	json_object_object_add(o, "host", json_object_new_string(host));
	json_object_object_add(o, "started", json_object_new_int64(started));
	if (ended)
		json_object_object_add(o, "ended", json_object_new_int64(ended));
	json_object_object_add(o, "powercut", json_object_new_string(PC_VERSION));
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	{
		size_t n = strlen(s);
		char line[LOCK_MAX];

		if (n + 1 >= sizeof(line)) {
			json_object_put(o);
			return -ENAMETOOLONG;
		}
		memcpy(line, s, n);
		line[n] = '\n';
		ret = pc_pwrite_all(fd, line, n + 1, 0);
		if (!ret && ftruncate(fd, (off_t)(n + 1)) < 0)
			ret = -errno;
	}
	json_object_put(o);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	return ret;
}

void results_lock_describe(const struct results_lock_info *li, char *buf, size_t len)
{
	char t0[64], t1[64];

	lock_time(li->started, t0, sizeof(t0));
	lock_time(li->ended, t1, sizeof(t1));
	switch (li->state) {
	case RESULTS_LOCK_NONE:
		snprintf(buf, len, "not running (no lock file: no run has locked this folder)");
		break;
	case RESULTS_LOCK_HELD:
		if (li->known)
			snprintf(buf, len, "running, pid %ld on %s since %s", li->pid, li->host, t0);
		else
			snprintf(buf, len, "running (a process holds the lock; its lock file names no pid)");
		break;
	case RESULTS_LOCK_FREE:
		if (!li->known)
			snprintf(buf, len, "not running (the lock file names no earlier run)");
		else if (li->ended)
			snprintf(buf, len, "not running; last run pid %ld on %s ended %s (started %s)", li->pid,
				 li->host, t1, t0);
		else
			snprintf(buf, len, "not running; last run pid %ld on %s (started %s) was killed: it never "
				 "closed the folder", li->pid, li->host, t0);
		break;
	default:
		snprintf(buf, len, "unknown: %s", li->err);
		break;
	}
}

void results_lock_probe(const char *dir, struct results_lock_info *li)
{
	char path[PATH_MAX + 32];
	int fd;

	memset(li, 0, sizeof(*li));
	snprintf(path, sizeof(path), "%s/" LOCK_NAME, dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT) {
			li->state = RESULTS_LOCK_NONE;
		} else {
			li->state = RESULTS_LOCK_UNKNOWN;
			snprintf(li->err, sizeof(li->err), "cannot open %s: %s", path, strerror(errno));
		}
		return;
	}
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		li->state = RESULTS_LOCK_FREE;
		flock(fd, LOCK_UN);
	} else if (errno == EWOULDBLOCK) {
		li->state = RESULTS_LOCK_HELD;
	} else {
		li->state = RESULTS_LOCK_UNKNOWN;
		snprintf(li->err, sizeof(li->err), "cannot probe the lock on %s: %s", path, strerror(errno));
	}
	lock_read(fd, li);
	close(fd);
}

/*
 * Take <dir>/lock for this run. A lock nobody holds is taken over whatever
 * the file says: the kernel dropped it when its run died. A held lock is
 * retried for LOCK_WAIT_MS before it is called taken: `status` holds it
 * shared for an instant, and a killed run's children may still hold it
 * between their fork() and their exec() (CLOEXEC) or their death.
 */
static int lock_take(struct results *r, char *note, size_t notelen, char *err, size_t errlen)
{
	char path[PATH_MAX + 32], desc[512];
	struct results_lock_info li;
	uint64_t deadline = pc_now_ms() + LOCK_WAIT_MS;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/" LOCK_NAME, r->dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return pc_fail(err, errlen, -errno, "%s: cannot open: %s", path, strerror(errno));
	memset(&li, 0, sizeof(li));
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK) {
			ret = -errno;
			close(fd);
			return pc_fail(err, errlen, ret, "%s: cannot lock: %s; the results folder must be on a filesystem "
				 "with flock() (two runs on one folder would mix their records)", path, strerror(-ret));
		}
		if (pc_now_ms() >= deadline) {
			li.state = RESULTS_LOCK_HELD;
			lock_read(fd, &li);
			lock_time(li.started, desc, sizeof(desc));
			if (li.known)
				snprintf(err, errlen, "%s is in use by another powercut run: pid %ld on %s, running since "
					 "%s (%s). Two runs on one results folder would interleave their records: wait "
					 "for it to end, stop it (kill -INT %ld on %s), or give another --results folder",
					 r->dir, li.pid, li.host, desc, path, li.pid, li.host);
			else
				snprintf(err, errlen, "%s is in use by another powercut run (%s holds a lock; the "
					 "file names no pid). Two runs on one results folder would interleave their "
					 "records: wait for it to end or give another --results folder", r->dir, path);
			close(fd);
			return -EBUSY;
		}
		pc_sleep_us(20000);
	}
	li.state = RESULTS_LOCK_FREE;
	lock_read(fd, &li);
	if (li.known && !li.ended && note) {
		size_t l = strlen(note);

		results_lock_describe(&li, desc, sizeof(desc));
		snprintf(note + l, notelen - l, "%s: taken over: %s; ", path, desc);
	}
	r->started = (int64_t)time(NULL);
	ret = lock_write(fd, r->started, 0);
	if (ret) {
		close(fd);
		return pc_fail(err, errlen, ret, "%s: cannot write: %s", path, strerror(-ret));
	}
	r->lock_fd = fd;
	return 0;
}

int results_open(struct results *r, const char *dir, char *note, size_t notelen, char *err, size_t errlen)
{
	char path[PATH_MAX + 32];
	int ret;

	memset(r, 0, sizeof(*r));
	r->ev_fd = r->v_fd = r->lock_fd = -1;
	if (note && notelen)
		note[0] = 0;
	pc_strlcpy(r->dir, dir, sizeof(r->dir));
	ret = pc_mkdir_p(dir, 0755);
	if (ret)
		return pc_fail(err, errlen, ret, "%s: cannot create: %s", dir, strerror(-ret));
	/* before anything is read or repaired: a live run's files are its own */
	ret = lock_take(r, note, notelen, err, errlen);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/console", dir);
	pc_mkdir_p(path, 0755);
	ret = open_append(r, PC_FILE_EVENTS, &r->ev_fd, note, notelen, err, errlen);
	if (!ret)
		ret = open_append(r, PC_FILE_VERDICTS, &r->v_fd, note, notelen, err, errlen);
	if (!ret)
		ret = results_writer_start(r, err, errlen);
	if (ret)
		results_close(r);
	return ret;
}

void results_close(struct results *r)
{
	/* what was written is synced, unless a sync failed: then nothing is */
	results_writer_stop(r);
	if (r->ev_fd >= 0)
		close(r->ev_fd);
	if (r->v_fd >= 0)
		close(r->v_fd);
	if (r->lock_fd >= 0) {
		/* "ended" tells status this run closed the folder rather than died */
		lock_write(r->lock_fd, r->started, (int64_t)time(NULL));
		close(r->lock_fd);
	}
	r->ev_fd = r->v_fd = r->lock_fd = -1;
}

int results_each_line(const char *path, results_line_fn fn, void *arg, int *torn, char *err, size_t errlen)
{
	struct jsonl j;
	struct jsonl_line l;
	json_object *obj;
	int ret;

	if (torn)
		*torn = 0;
	if ((ret = jsonl_open(&j, path)))
		return pc_fail(err, errlen, ret, "%s", j.err);
	while ((ret = jsonl_next_object(&j, &obj, &l)) == 1) {
		ret = fn(obj, l.lineno > UINT_MAX ? UINT_MAX : (unsigned)l.lineno, arg);
		json_object_put(obj);
		if (ret) {
			if (!err[0])
				snprintf(err, errlen, "%s:%" PRIu64 ": rejected", path, l.lineno);
			goto out;
		}
	}
	if (ret < 0)
		snprintf(err, errlen, "%s", j.err);
out:
	if (torn)
		*torn = j.torn;
	jsonl_close(&j);
	return ret;
}

/* pc_write_file's steps (temporary, write, fsync, rename, fsync of the
 * folder), each named when it fails: campaign.json is never half there. */
int results_write_json(const char *dir, const char *name, json_object *obj, char *err, size_t errlen)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 72];
	const char *s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	const char *op = "write", *what = path;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = pc_tmp_open(path, tmp, sizeof(tmp));
	if (fd < 0)
		return pc_fail(err, errlen, fd, "%s: cannot create: %s", tmp, strerror(-fd));
	ret = pc_write_all(fd, s, strlen(s));
	if (!ret)
		ret = pc_write_all(fd, "\n", 1);
	if (!ret && fsync(fd) < 0) {
		op = "fsync";
		ret = -errno;
	}
	if (close(fd) < 0 && !ret) {
		op = "close";
		ret = -errno;
	}
	if (!ret && rename(tmp, path) < 0) {
		op = "rename";
		ret = -errno;
	}
	if (ret) {
		unlink(tmp);
	} else if ((ret = pc_fsync_dir_of(path)) != 0) {
		op = "fsync";
		what = dir;
	}
	if (ret)
		return pc_fail(err, errlen, ret, "%s: %s failed: %s", what, op, strerror(-ret));
	return 0;
}

void results_host_id(char *buf, size_t len)
{
	char id[128] = "";
	FILE *f = fopen("/etc/machine-id", "re");
	size_t n = 0;

	if (f) {
		if (!fgets(id, sizeof(id), f))
			id[0] = 0;
		fclose(f);
	}
	id[strcspn(id, " \t\r\n")] = 0;
	if (strlen(id) < 8 || strspn(id, "0123456789abcdef") != strlen(id)) {
		if (gethostname(id, sizeof(id) - 1))
			snprintf(id, sizeof(id), "unknown-host");
		id[sizeof(id) - 1] = 0;
	}
	for (char *p = id; *p && n + 1 < len && n < 64; p++)
		if (strchr("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_.:", *p) && *p)
			buf[n++] = *p;
	if (!n && len > 1)
		buf[n++] = '?';
	if (len)
		buf[n] = 0;
}

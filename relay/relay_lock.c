/*
 * relay_lock.c - the per-relay lock in a fixed directory (relay_lock.h).
 */
#include "relay/relay_lock.h"

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

#include "common/crc32c.h"
#include "common/json.h"
#include "common/util.h"
#include "relay/relay.h"

#define LOCK_MAX	8192			/* the file is one line: read no more */
#define LOCK_PID_MAX	4194304L		/* PID_MAX_LIMIT */
#define LOCK_TIME_MAX	(INT64_C(1) << 40)	/* epoch seconds: larger is not a time */
#define LOCK_NAME_MAX	48			/* readable part of a file name; a holder's
						 * socket path must fit sun_path */

int relay_lock_key(const char *driver, json_object *cfg, const char *campaign, const char *board, char *key,
		   size_t len)
{
	const struct relay_ops *ops = relay_find(driver);

	int rc;

	key[0] = 0;
	if (!ops)
		return -EINVAL;
	rc = ops->ident ? ops->ident(cfg, key, len) : 1;
	if (rc == -ENOENT)
		return -ENOENT;
	if (rc == 0 && key[0])
		return 0;
	snprintf(key, len, "board:%s/%s", campaign, board);
	return 0;
}

/* The lock directory, created if missing; 0 or -errno with err. */
static int lock_dir(char *dir, size_t len, char *err, size_t errlen)
{
	const char *env = getenv(RELAY_LOCK_ENV);
	struct stat st;
	int rc;

	if (env && *env) {
		pc_strlcpy(dir, env, len);
		rc = pc_mkdir_p(dir, 0755);
		if (rc)
			return pc_fail(err, errlen, rc, "%s (from $%s): cannot create: %s", dir, RELAY_LOCK_ENV,
				       strerror(-rc));
		return 0;
	}
	/* a host without /run/lock (a minimal container): /tmp, the same for
	 * every powercut on it all the same */
	pc_strlcpy(dir, stat("/run/lock", &st) == 0 ? RELAY_LOCK_DEFAULT_DIR : RELAY_LOCK_FALLBACK_DIR, len);
	/* shared by every user of the host, like /run/lock: sticky and open to
	 * all, so whoever comes first does not lock the others out */
	if (mkdir(dir, 01777) == 0)
		chmod(dir, 01777);
	else if (errno != EEXIST) {
		return pc_fail(err, errlen, -errno, "%s: cannot create: %s; the per-relay locks live there (or set $%s to "
			 "another directory every powercut on this host uses)", dir, strerror(errno), RELAY_LOCK_ENV);
	}
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return pc_fail(err, errlen, -ENOTDIR, "%s: not a directory; the per-relay locks live there", dir);
	return 0;
}

/* "<dir>/<readable>-<crc>" without the suffix: the key made safe for a file name. */
static int lock_base(const char *key, char *base, size_t len, char *err, size_t errlen)
{
	char dir[PATH_MAX], name[LOCK_NAME_MAX + 1];
	size_t i;
	int rc;

	rc = lock_dir(dir, sizeof(dir), err, errlen);
	if (rc)
		return rc;
	for (i = 0; key[i] && i < LOCK_NAME_MAX; i++) {
		char ch = key[i];

		name[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			  ch == '-' || ch == '.' ? ch : '_';
	}
	name[i] = 0;
	/* the whole key, so "/dev/ttyUSB0" and "_dev_ttyUSB0" stay two locks */
	if (snprintf(base, len, "%s/%s-%08" PRIx32, dir, name, pc_crc32c(0, key, strlen(key))) >= (int)len)
		return pc_fail(err, errlen, -ENAMETOOLONG, "%s: the lock directory's path is too long", dir);
	return 0;
}

int relay_lock_sock_path(const char *key, char *path, size_t len, char *err, size_t errlen)
{
	char base[PATH_MAX];
	int rc = lock_base(key, base, sizeof(base), err, errlen);
	const char *name = strrchr(base, '/');

	if (rc)
		return rc;
	/* an abstract socket (no file: nothing stale after a kill, no path
	 * length limit from the lock directory), named by the lock file */
	snprintf(path, len, "powercut-relay/%s/%08" PRIx32, name ? name + 1 : base, pc_crc32c(0, base, strlen(base)));
	return 0;
}

static void lock_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S %z", &tm))
		snprintf(buf, len, "%" PRId64 " (epoch seconds)", t);
}

/* A string member, printable characters only ('?' for the rest). */
static void lock_str(json_object *o, const char *key, char *out, size_t len)
{
	const char *s = pc_jstr(o, key, NULL);
	size_t i;

	out[0] = 0;
	if (!s)
		return;
	for (i = 0; s[i] && i < len - 1; i++)
		out[i] = s[i] >= ' ' && s[i] < 0x7f ? s[i] : '?';
	out[i] = 0;
}

static void lock_read(int fd, struct relay_lock_who *w)
{
	char buf[LOCK_MAX];
	json_object *o;

	memset(w, 0, sizeof(*w));
	o = pc_json_first_line(fd, buf, sizeof(buf));
	if (!o)
		return;
	w->pid = (long)pc_json_int_in(o, "pid", 1, LOCK_PID_MAX);
	w->started = pc_json_int_in(o, "started", 0, LOCK_TIME_MAX);
	lock_str(o, "host", w->host, sizeof(w->host));
	lock_str(o, "role", w->role, sizeof(w->role));
	lock_str(o, "campaign", w->campaign, sizeof(w->campaign));
	lock_str(o, "board", w->board, sizeof(w->board));
	lock_str(o, "config", w->config, sizeof(w->config));
	lock_str(o, "results", w->results, sizeof(w->results));
	lock_str(o, "state", w->state, sizeof(w->state));
	lock_str(o, "key", w->key, sizeof(w->key));
	if (strcmp(w->role, "run") && strcmp(w->role, "relay") && strcmp(w->role, "holder"))
		w->role[0] = 0;
	if (strcmp(w->state, "on") && strcmp(w->state, "off"))
		w->state[0] = 0;
	w->known = w->pid > 0;
	if (w->started < 0)
		w->started = 0;
	if (!w->host[0])
		pc_strlcpy(w->host, "an unknown host", sizeof(w->host));
	json_object_put(o);
}

/* One line written over the old one, then cut to length: a reader always
 * finds a whole first line. */
static int lock_write(int fd, const struct relay_lock_who *w)
{
	json_object *o = json_object_new_object();
	char line[LOCK_MAX];
	const char *s;
	size_t n;
	int rc;

	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "pid", json_object_new_int64(w->pid));
	json_object_object_add(o, "host", json_object_new_string(w->host));
	json_object_object_add(o, "started", json_object_new_int64(w->started));
	json_object_object_add(o, "role", json_object_new_string(w->role));
	json_object_object_add(o, "key", json_object_new_string(w->key));
	json_object_object_add(o, "campaign", json_object_new_string(w->campaign));
	json_object_object_add(o, "board", json_object_new_string(w->board));
	if (w->config[0])
		json_object_object_add(o, "config", json_object_new_string(w->config));
	if (w->results[0])
		json_object_object_add(o, "results", json_object_new_string(w->results));
	if (w->state[0])
		json_object_object_add(o, "state", json_object_new_string(w->state));
	json_object_object_add(o, "powercut", json_object_new_string(PC_VERSION));
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	n = strlen(s);
	if (n + 1 >= sizeof(line)) {
		json_object_put(o);
		return -ENAMETOOLONG;
	}
	memcpy(line, s, n);
	line[n] = '\n';
	json_object_put(o);
	rc = pc_pwrite_all(fd, line, n + 1, 0);
	if (!rc && ftruncate(fd, (off_t)(n + 1)) < 0)
		rc = -errno;
	return rc;
}

void relay_lock_describe(const struct relay_lock_who *w, char *buf, size_t len)
{
	char t[64], at[96] = "";

	if (!w->known) {
		snprintf(buf, len, "a process whose lock file names no one");
		return;
	}
	lock_time(w->started, t, sizeof(t));
	if (w->config[0])
		snprintf(at, sizeof(at), ", config %.80s", w->config);
	if (!strcmp(w->role, "run"))
		snprintf(buf, len, "campaign %s (powercut run pid %ld on %s since %s, results %s%s)", w->campaign,
			 w->pid, w->host, t, w->results[0] ? w->results : "?", at);
	else if (!strcmp(w->role, "holder"))
		snprintf(buf, len, "a relay holder keeping board %s %s (pid %ld on %s since %s, started by "
			 "`powercut relay`%s)", w->board, w->state[0] ? w->state : "?", w->pid, w->host, t, at);
	else
		snprintf(buf, len, "`powercut relay` on board %s (pid %ld on %s since %s%s)", w->board, w->pid,
			 w->host, t, at);
}

/* Open (creating) the lock file; -errno on failure. */
static int lock_open(const char *path)
{
	for (int i = 0; i < 10; i++) {
		int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);

		if (fd >= 0 || errno != ENOENT)
			return fd >= 0 ? fd : -errno;
		/* created apart from the open: in a sticky directory (fs.protected_regular)
		 * an O_CREAT open of another user's file fails even when it exists */
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
		if (fd >= 0) {
			fchmod(fd, 0666);	/* the next taker may be another user */
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EAGAIN;
}

int relay_lock_take(struct relay_lock *l, const char *key, const struct relay_lock_who *me, uint32_t wait_ms,
		    struct relay_lock_who *holder, char *note, size_t notelen, char *err, size_t errlen)
{
	char base[PATH_MAX], desc[1024];
	struct relay_lock_who old;
	uint64_t deadline = pc_now_ms() + wait_ms;
	int fd, rc;

	memset(l, 0, sizeof(*l));
	l->fd = -1;
	if (note && notelen)
		note[0] = 0;
	rc = lock_base(key, base, sizeof(base), err, errlen);
	if (rc)
		return rc;
	snprintf(l->path, sizeof(l->path), "%s.lock", base);
	relay_lock_sock_path(key, l->sock, sizeof(l->sock), desc, sizeof(desc));
	fd = lock_open(l->path);
	if (fd < 0)
		return pc_fail(err, errlen, fd, "%s: cannot open: %s (the lock of relay %s)", l->path, strerror(-fd), key);
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK) {
			rc = -errno;
			close(fd);
			return pc_fail(err, errlen, rc, "%s: cannot lock: %s", l->path, strerror(-rc));
		}
		if (pc_now_ms() >= deadline) {
			lock_read(fd, &old);
			relay_lock_describe(&old, desc, sizeof(desc));
			snprintf(err, errlen, "relay %s is in use by %s (lock %s)", key, desc, l->path);
			if (holder)
				*holder = old;
			close(fd);
			return -EBUSY;
		}
		pc_sleep_us(20000);
	}
	lock_read(fd, &old);
	if (old.known && note) {
		relay_lock_describe(&old, desc, sizeof(desc));
		snprintf(note, notelen, "%s: stale lock taken over: it named %s, which is gone", l->path, desc);
	}
	l->me = *me;
	l->me.pid = getpid();
	gethostname(l->me.host, sizeof(l->me.host) - 1);
	l->me.started = (int64_t)time(NULL);
	pc_strlcpy(l->me.key, key, sizeof(l->me.key));
	l->me.known = 1;
	l->fd = fd;
	rc = relay_lock_update(l);
	if (rc) {
		snprintf(err, errlen, "%s: cannot write: %s", l->path, strerror(-rc));
		relay_lock_release(l);
		return rc;
	}
	return 0;
}

int relay_lock_update(struct relay_lock *l)
{
	return l->fd < 0 ? -EBADF : lock_write(l->fd, &l->me);
}

void relay_lock_release(struct relay_lock *l)
{
	if (l->fd < 0)
		return;
	/* an empty file: nobody to say was taken over */
	if (ftruncate(l->fd, 0) < 0) {
		/* the next taker says this one was taken over: harmless */
	}
	close(l->fd);
	l->fd = -1;
}

void relay_lock_forget(struct relay_lock *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

/*
 * relay_group.c - process groups on record, and the orphans of a dead harness.
 *
 * See relay_group.h. The record is one line of JSON:
 *   {"pgid":N,"start":T,"boot_id":"...","what":"agent","harness_pid":H,"harness_start":T2}
 * where start times are /proc/<pid>/stat field 22 (clock ticks since boot):
 * together with the boot id they name one process for the life of the host.
 * Anyone may write to the results folder, so a record is untrusted input:
 * bounded, every field checked, and a record that does not name a live
 * process of ours exactly kills nothing.
 */
#include "relay/relay_group.h"
#include "relay/relay_priv.h"

#include <ctype.h>
#include <dirent.h>
#include "common/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"

#define GROUP_REC_MAX	1024		/* the record is one short line */
#define GROUP_PID_MAX	4194304L	/* PID_MAX_LIMIT */
#define GROUP_STAT_MAX	1024		/* /proc/<pid>/stat: comm is at most 16 bytes */
#define GROUP_CMDLINE_MAX	65536	/* an agent's or QEMU's command line is a few KiB */

void relay_gate_init(struct relay_gate *g)
{
	g->rd = g->wr = -1;
	g->parent = 0;
}

int relay_gate_open(struct relay_gate *g)
{
	int p[2];

	relay_gate_init(g);
	/* a socket, not a pipe: send(MSG_NOSIGNAL) to a child that died is an
	 * error here, not a SIGPIPE in a harness that may not ignore it */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0)
		return -errno;
	g->rd = p[0];
	g->wr = p[1];
	g->parent = getpid();
	return 0;
}

void relay_gate_child(struct relay_gate *g)
{
	char c;
	ssize_t n;

	setpgid(0, 0);
	/* the board dies with the harness that powers it */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != g->parent)
		_exit(127);
	close(g->wr);
	do
		n = read(g->rd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(127);	/* the parent could not record us, or died */
	close(g->rd);
}

void relay_gate_close(struct relay_gate *g)
{
	if (g->rd >= 0)
		close(g->rd);
	if (g->wr >= 0)
		close(g->wr);
	g->rd = g->wr = -1;
}

/* State, process group and start time of pid from /proc. 0, -ENOENT (no
 * such process) or -EINVAL (unreadable). */
static int proc_stat(pid_t pid, char *state, pid_t *pgrp, uint64_t *start)
{
	char path[64], buf[GROUP_STAT_MAX];
	unsigned long long st;
	const char *rp;
	ssize_t n;
	int fd, pg, ppid;
	char s;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ENOENT : -EINVAL;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return n == 0 || errno == ESRCH ? -ENOENT : -EINVAL;
	buf[n] = 0;
	/* comm may hold anything, ')' included: the fields start after the last one */
	rp = strrchr(buf, ')');
	/* state ppid pgrp, 16 fields we skip, then starttime (field 22) */
	if (!rp || sscanf(rp + 1, " %c %d %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
			  &s, &ppid, &pg, &st) != 4)
		return -EINVAL;
	if (state)
		*state = s;
	if (pgrp)
		*pgrp = (pid_t)pg;
	if (start)
		*start = (uint64_t)st;
	return 0;
}

static void boot_id(char *buf, size_t len)
{
	if (pc_read_text("/proc/sys/kernel/random/boot_id", buf, len) < 0)
		buf[0] = 0;
}

/* Write the record: temporary file, fsync, rename, fsync of the folder. */
static int record_write(const char *path, const char *line, char *err, size_t errlen)
{
	int ret = pc_write_file(path, line, strlen(line), PC_FILE_SYNC);

	if (ret)
		return pc_fail(err, errlen, ret, "%s: %s", path, strerror(-ret));
	return 0;
}

int relay_gate_release(struct relay_gate *g, pid_t pid, const char *path, const char *what, char *err,
		       size_t errlen)
{
	uint64_t start = 0, hstart = 0;
	char boot[64], line[512];
	int ret;

	/* both sides call setpgid: kill(-pid) works whichever runs first */
	setpgid(pid, pid);
	ret = proc_stat(pid, NULL, NULL, &start);
	if (!ret)
		ret = proc_stat(getpid(), NULL, NULL, &hstart);
	if (ret) {
		pc_fail(err, errlen, ret, "cannot read the start time of %s pid %d from /proc: %s", what, (int)pid,
			strerror(-ret));
		goto fail;
	}
	boot_id(boot, sizeof(boot));
	{
		json_object *o = json_object_new_object();

		if (!o) {
			ret = pc_fail(err, errlen, -ENOMEM, "out of memory");
			goto fail;
		}
		json_object_object_add(o, "pgid", json_object_new_int64(pid));
		json_object_object_add(o, "start", json_object_new_int64((int64_t)start));
		json_object_object_add(o, "boot_id", json_object_new_string(boot));
		json_object_object_add(o, "what", json_object_new_string(what));
		json_object_object_add(o, "harness_pid", json_object_new_int64(getpid()));
		json_object_object_add(o, "harness_start", json_object_new_int64((int64_t)hstart));
		snprintf(line, sizeof(line), "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	}
	ret = path ? record_write(path, line, err, errlen) : 0;
	if (ret)
		goto fail;
	if (send(g->wr, "g", 1, MSG_NOSIGNAL) != 1) {
		ret = pc_fail(err, errlen, -EPIPE, "%s pid %d died before it was released", what, (int)pid);
		goto fail;
	}
	relay_gate_close(g);
	return 0;
fail:
	/* not released: closing the gate makes the child _exit */
	relay_gate_close(g);
	return ret;
}

void relay_group_forget(const char *path)
{
	unlink(path);
}

/* In the child, first: a group leader, held until its group is on record. */
static void spawn_child_gate(void *gate)
{
	relay_gate_child(gate);
}

int relay_spawn_gated(struct relay *r, const struct relay_spawn_names *n, struct pc_spawn *s, char *const argv[],
		      pid_t *pid)
{
	int devnull, rc = 0;
	struct relay_gate gate;
	struct pc_child c = { .exec_fd = -1 };
	char gerr[PATH_MAX + 128];

	relay_gate_init(&gate);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || (rc = relay_gate_open(&gate)) < 0) {
		rc = rc < 0 ? rc : -errno;
		relay_errf(r, "cannot set up to run %s%s: %s", argv[0], n->setup_note, strerror(-rc));
		goto out;
	}
	s->fd_in = devnull;
	s->child_setup = spawn_child_gate;
	s->arg = &gate;
	rc = pc_spawn(&c, s, argv);
	if (rc < 0) {
		if (!strcmp(c.failed, "fork"))
			relay_errf(r, "fork for %s: %s", argv[0], strerror(-rc));
		else
			relay_errf(r, "cannot set up to run %s%s: %s", argv[0], n->setup_note, strerror(-rc));
		goto out;
	}
	rc = relay_gate_release(&gate, c.pid, n->pgid, n->what, gerr, sizeof(gerr));
	if (rc < 0) {
		/* never released: it _exit()s by itself */
		relay_reap(c.pid, NULL, RELAY_REAP_MS);
		if (n->pgid)
			relay_group_forget(n->pgid);
		relay_errf(r, "cannot record %s process group, so a restarted harness could not find it: %s; "
			   "not powering on", n->whose, gerr);
		goto out;
	}
	rc = pc_spawn_exec_result(&c);
	if (rc < 0) {
		if (n->pgid)
			relay_group_forget(n->pgid);
		relay_errf(r, "cannot run %s%s: %s%s", n->run_what, argv[0], strerror(-rc), n->run_hint);
		goto out;
	}
	*pid = c.pid;
out:
	pc_spawn_close(&c);
	if (devnull >= 0)
		close(devnull);
	relay_gate_close(&gate);
	return rc;
}

int relay_child_running(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0;
}

/* Does any process of group pgid still run? Zombies do not: they are dead,
 * waiting only for whoever inherited them to reap them. */
static int group_alive(pid_t pgid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int alive = 0;

	if (!d)
		return kill(-pgid, 0) == 0;
	while (!alive && (e = readdir(d)) != NULL) {
		char *end, st;
		long pid;
		pid_t pg;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid > GROUP_PID_MAX)
			continue;
		if (proc_stat((pid_t)pid, &st, &pg, NULL) == 0 && pg == pgid && st != 'Z' && st != 'X')
			alive = 1;
	}
	closedir(d);
	return alive;
}

/* Does an argument of pid's command line contain match? 1, 0, or -errno. */
static int proc_has_arg(pid_t pid, const char *match)
{
	char path[64], *buf;
	size_t len = 0;
	ssize_t n;
	int fd, found = 0;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(GROUP_CMDLINE_MAX + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (len < GROUP_CMDLINE_MAX) {
		n = read(fd, buf + len, GROUP_CMDLINE_MAX - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = 0;
	for (size_t i = 0; i < len && !found; i += strlen(buf + i) + 1)
		found = strstr(buf + i, match) != NULL;
	free(buf);
	return found;
}

/* What a group file records: the group, its leader's start, the harness
 * that made it. */
struct group_rec {
	int64_t pgid, start, hpid, hstart;
	char what[32];
};

/* Read the group file at path: 1 with r filled, 0 when there is nothing to
 * kill (no file; unreadable or of another boot: forgotten, note may say
 * so), or -errno with err. */
static int group_rec_read(const char *path, struct group_rec *r, char *note, size_t notelen, char *err,
			  size_t errlen)
{
	char buf[GROUP_REC_MAX], boot[64];
	json_object *o, *v;
	ssize_t n;
	int fd;

	snprintf(r->what, sizeof(r->what), "process");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return pc_fail(err, errlen, -errno, "cannot read %s: %s", path, strerror(errno));
	}
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	o = json_tokener_parse(buf);
	r->pgid = o ? pc_json_int_in(o, "pgid", 2, GROUP_PID_MAX) : -1;
	r->start = o ? pc_json_int_in(o, "start", 0, INT64_MAX) : -1;
	r->hpid = o ? pc_json_int_in(o, "harness_pid", 1, GROUP_PID_MAX) : -1;
	r->hstart = o ? pc_json_int_in(o, "harness_start", 0, INT64_MAX) : -1;
	boot_id(boot, sizeof(boot));
	if (o && json_object_object_get_ex(o, "what", &v) && json_object_is_type(v, json_type_string)) {
		size_t i;
		const char *s = json_object_get_string(v);

		for (i = 0; s[i] && i < sizeof(r->what) - 1; i++)
			r->what[i] = isalnum((unsigned char)s[i]) ? s[i] : '?';
		r->what[i] = 0;
	}
	if (r->pgid < 0 || r->start < 0 || r->hpid < 0 || r->hstart < 0 || !json_object_object_get_ex(o, "boot_id", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		json_object_put(o);
		snprintf(note, notelen, "%s names no process group (unreadable); nothing killed", path);
		relay_group_forget(path);
		return 0;
	}
	if (!boot[0]) {
		json_object_put(o);
		return pc_fail(err, errlen, -EIO, "cannot read /proc/sys/kernel/random/boot_id, so cannot tell whether the "
			 "process group recorded in %s still runs", path);
	}
	if (strcmp(json_object_get_string(v), boot) != 0) {
		/* another boot of this host: that process is long gone */
		json_object_put(o);
		relay_group_forget(path);
		return 0;
	}
	json_object_put(o);
	return 1;
}

/* SIGKILL the recorded group, and wait (RELAY_ORPHAN_MS) for it to go. */
static int group_kill(const char *path, const struct group_rec *r, char *note, size_t notelen, char *err,
		      size_t errlen)
{
	uint64_t deadline;

	if (kill(-(pid_t)r->pgid, SIGKILL) < 0 && errno != ESRCH)
		return pc_fail(err, errlen, -errno, "kill %s process group %d left by an earlier powercut (pid %d): %s", r->what,
			 (int)r->pgid, (int)r->hpid, strerror(errno));
	deadline = pc_now_ms() + RELAY_ORPHAN_MS;
	while (group_alive((pid_t)r->pgid)) {
		if (pc_now_ms() >= deadline)
			return pc_fail(err, errlen, -ETIMEDOUT, "%s process group %d left by an earlier powercut (pid %d) still runs %d ms "
				 "after SIGKILL: stuck in the kernel? Check `ps -g %d` and dmesg", r->what, (int)r->pgid,
				 (int)r->hpid, RELAY_ORPHAN_MS, (int)r->pgid);
		pc_sleep_us(10000);
	}
	relay_group_forget(path);
	snprintf(note, notelen, "killed %s process group %d, left running by an earlier powercut (pid %d, gone)",
		 r->what, (int)r->pgid, (int)r->hpid);
	return 0;
}

int relay_group_kill_orphans(const char *path, const char *match, char *note, size_t notelen, char *err,
			     size_t errlen)
{
	struct group_rec r;
	uint64_t now_start = 0;
	char st = 0;
	int ret;

	note[0] = 0;
	ret = group_rec_read(path, &r, note, notelen, err, errlen);
	if (ret <= 0)
		return ret;
	/* the leader: still the process recorded (a zombie whose group may live
	 * on), or gone, or another process that got the number since */
	ret = proc_stat((pid_t)r.pgid, &st, NULL, &now_start);
	if (ret == -ENOENT || (!ret && now_start != (uint64_t)r.start) ||
	    (!ret && (st == 'Z' || st == 'X') && !group_alive((pid_t)r.pgid))) {
		relay_group_forget(path);
		return 0;
	}
	if (ret)
		return pc_fail(err, errlen, ret, "cannot read /proc/%d/stat to tell whether %s process group %d recorded in %s "
			 "is still running", (int)r.pgid, r.what, (int)r.pgid, path);
	/* never ourselves, whatever a record says */
	if ((pid_t)r.pgid == getpid() || (pid_t)r.pgid == getpgrp()) {
		snprintf(note, notelen, "%s names this very powercut's process group %d; nothing killed", path,
			 (int)r.pgid);
		relay_group_forget(path);
		return 0;
	}
	/* the process recorded, and a board of ours: anyone may write a record,
	 * but only a process on this board's media (or drive) is killed */
	ret = proc_has_arg((pid_t)r.pgid, match);
	if (ret <= 0 && !(st == 'Z' || st == 'X')) {
		if (ret < 0)
			snprintf(err, errlen, "cannot read /proc/%d/cmdline to tell whether %s process group %d recorded "
				 "in %s runs on this board: %s", (int)r.pgid, r.what, (int)r.pgid, path, strerror(-ret));
		else
			snprintf(note, notelen, "process group %d recorded in %s still runs, but its command line does not "
				 "name %s: not this board's %s, left alone", (int)r.pgid, path, match, r.what);
		if (ret == 0)
			relay_group_forget(path);
		return ret;
	}
	/* the harness that started it: if it still runs, the group is not an orphan */
	if ((pid_t)r.hpid != getpid() && proc_stat((pid_t)r.hpid, NULL, NULL, &now_start) == 0 &&
	    now_start == (uint64_t)r.hstart) {
		return pc_fail(err, errlen, -EBUSY, "%s process group %d (recorded in %s) belongs to powercut pid %d, which still "
			 "runs; stop that one first", r.what, (int)r.pgid, path, (int)r.hpid);
	}
	return group_kill(path, &r, note, notelen, err, errlen);
}

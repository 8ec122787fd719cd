/*
 * audit.c - what reached the device (audit.h).
 *
 * tracefs: the agent makes its own trace instance
 * (<tracefs>/instances/powercut-agent-<pid>), enables block:block_rq_issue
 * there with a filter on the disk's dev_t, and reads its trace_pipe without
 * blocking while it writes. A write counts when it starts inside the
 * region's sectors on the whole disk (other writers of the disk, such as a
 * root filesystem on the same eMMC, are not the work's); a cache flush has
 * no sector and counts whoever asked for it (docs/io-audit.md says so).
 * Reads (the scan) are never counted.
 */
#include "audit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../common/util.h"
#include "blockdev.h"
#include "dev.h"
#include "region.h"

void audit_count(struct audit_counts *c, const char *rwbs, uint64_t sectors)
{
	unsigned i;

	for (i = 0; i < c->n; i++)
		if (!strcmp(c->k[i].rwbs, rwbs)) {
			c->k[i].count++;
			c->k[i].sectors += sectors;
			return;
		}
	if (c->n == AUDIT_KINDS || strlen(rwbs) >= sizeof(c->k[0].rwbs)) {
		c->other++;
		return;
	}
	pc_strlcpy(c->k[c->n].rwbs, rwbs, sizeof(c->k[0].rwbs));
	c->k[c->n].sectors = sectors;
	c->k[c->n++].count = 1;
}

int audit_parse_line(const char *line, unsigned *kdev, char *rwbs, size_t rwbs_len, uint64_t *sector,
		     unsigned *nsect_out)
{
	const char *p = strstr(line, "block_rq_issue: ");
	unsigned ma, mi, bytes, nsect;
	unsigned long long sec;
	char flags[16];
	int n = 0;

	if (!p)
		return -1;
	p += strlen("block_rq_issue: ");
	/* "7,0 WS 4096 () 2048 + 8 none,0,0 [comm]"; the command between the
	 * parentheses is empty for filesystem requests */
	if (sscanf(p, "%u,%u %15s %u (%n", &ma, &mi, flags, &bytes, &n) != 4 || !n)
		return -1;
	p += n;
	p = strchr(p, ')');
	if (!p || sscanf(p + 1, " %llu + %u", &sec, &nsect) != 2)
		return -1;
	if (ma >= 1u << 12 || mi >= 1u << 20 || nsect > 1u << 24 || !flags[0] || strspn(flags, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(flags))
		return -1;
	*kdev = ma << 20 | mi;
	pc_strlcpy(rwbs, flags, rwbs_len);
	*sector = sec;
	*nsect_out = nsect;
	return 0;
}

static int put(const char *dir, const char *name, const char *val, char *why, size_t len)
{
	char p[PATH_MAX + 64];
	int fd, ret = 0;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0 || write(fd, val, strlen(val)) != (ssize_t)strlen(val)) {
		snprintf(why, len, "%s: %s", p, strerror(errno));
		ret = -1;
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

/* Where tracefs is: mounted already (/proc/self/mounts), else mounted at
 * /sys/kernel/tracing here (root only). */
static int tracefs_dir(char *dir, size_t len, char *why, size_t wlen)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char line[1024], src[256], mnt[512], type[64];
	struct stat st;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%255s %511s %63s", src, mnt, type) == 3 && !strcmp(type, "tracefs")) {
			fclose(f);
			snprintf(dir, len, "%s", mnt);
			return 0;
		}
	if (f)
		fclose(f);
	if (stat("/sys/kernel/tracing", &st) != 0) {
		snprintf(why, wlen, "no tracefs: /sys/kernel/tracing: %s (a kernel without CONFIG_TRACING?)",
			 strerror(errno));
		return -1;
	}
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) != 0) {
		snprintf(why, wlen, "tracefs is not mounted and mounting it at /sys/kernel/tracing failed: %s",
			 strerror(errno));
		return -1;
	}
	snprintf(dir, len, "/sys/kernel/tracing");
	return 0;
}

/*
 * An agent killed at a cut never removes its instance: it stays, enabled,
 * with a 1 MiB buffer per CPU, for as long as the kernel runs (on a real
 * board, until the power goes; on the sim and loop devices, for ever: 2,000
 * leaked instances held 5 GB here). Remove those of agents that are gone.
 * The kernel refuses (EBUSY) to remove an instance whose trace_pipe is open,
 * so a live agent's instance stays even if its pid is not ours to see.
 */
/* A dead agent: no such process, or a zombie its parent has not reaped yet
 * (its files are closed: a killed agent is one until the reaper runs). */
static int pid_gone(long pid)
{
	char p[64], buf[512], *rp;
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "/proc/%ld/stat", pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || (kill((pid_t)pid, 0) != 0 && errno == ESRCH);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = 0;
	rp = strrchr(buf, ')');
	return rp && (rp[1] == ' ') && (rp[2] == 'Z' || rp[2] == 'X');
}

static void sweep_stale(const char *base)
{
	char dir[PATH_MAX], p[PATH_MAX + 300];
	struct dirent *e;
	unsigned seen = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/instances", base);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d)) && seen++ < 100000) {
		const char *t;
		char *end;
		long pid;

		if (strncmp(e->d_name, "powercut-agent-", 15))
			continue;
		t = e->d_name + 15;
		errno = 0;
		pid = strtol(t, &end, 10);
		if (errno || end == t || *end || pid <= 0 || pid > 1L << 30)
			continue;
		if (pid != (long)getpid() && !pid_gone(pid))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (rmdir(p) != 0 && errno != EBUSY && errno != ENOENT)
			pc_info("io audit: cannot remove a stale trace instance %s: %s", p, strerror(errno));
	}
	closedir(d);
}

static void tracefs_open(struct audit *a, struct region *r)
{
	char base[PATH_MAX], disk[PATH_MAX], part[PATH_MAX], text[64];
	struct stat st;
	dev_t whole = 0;
	uint64_t start = 0;
	FILE *f;

	if (fstat(r->dev.fd, &st) != 0 || !S_ISBLK(st.st_mode)) {
		snprintf(a->why, sizeof(a->why), "%s is not a block device: no block requests to see", r->path);
		return;
	}
	if (blockdev_whole_disk(st.st_rdev, disk, sizeof(disk), &whole) != 0 ||
	    blockdev_sysfs_dir(st.st_rdev, part, sizeof(part)) != 0) {
		snprintf(a->why, sizeof(a->why), "%s: no sysfs entry for its disk", r->path);
		return;
	}
	if (strcmp(part, disk)) {
		/* a partition: where it starts on the disk, in sectors */
		snprintf(base, sizeof(base), "%s/start", part);
		f = fopen(base, "re");
		if (!f || fscanf(f, "%" SCNu64, &start) != 1) {
			snprintf(a->why, sizeof(a->why), "%s: cannot read %s", r->path, base);
			if (f)
				fclose(f);
			return;
		}
		fclose(f);
	}
	a->kdev = major(whole) << 20 | minor(whole);
	a->lo = start + r->off / 512;
	a->hi = a->lo + r->g.region_bytes / 512;
	if (tracefs_dir(base, sizeof(base), a->why, sizeof(a->why)))
		return;
	sweep_stale(base);
	snprintf(a->inst, sizeof(a->inst), "%s/instances/powercut-agent-%ld", base, (long)getpid());
	/* never an old one (a dead agent's of the same pid): its buffer would
	 * hold another run's requests */
	if (mkdir(a->inst, 0700) != 0) {
		snprintf(a->why, sizeof(a->why), "cannot make a trace instance %s: %s", a->inst, strerror(errno));
		a->inst[0] = 0;
		return;
	}
	snprintf(text, sizeof(text), "dev == %u", a->kdev);
	if (put(a->inst, "buffer_size_kb", "1024", a->why, sizeof(a->why)) ||
	    put(a->inst, "events/block/block_rq_issue/filter", text, a->why, sizeof(a->why)) ||
	    put(a->inst, "events/block/block_rq_issue/enable", "1", a->why, sizeof(a->why)))
		return;
	snprintf(base, sizeof(base), "%s/trace_pipe", a->inst);
	a->fd = open(base, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (a->fd < 0) {
		snprintf(a->why, sizeof(a->why), "%s: %s", base, strerror(errno));
		return;
	}
	pc_strlcpy(a->src, "tracefs", sizeof(a->src));
	a->on = 1;
}

void audit_open(struct audit *a, struct region *r)
{
	memset(a, 0, sizeof(*a));
	a->fd = -1;
	if (r->dev.ops->audit) {
		a->sim = r->dev.ops->audit(&r->dev);
		if (a->sim) {
			pc_strlcpy(a->src, r->dev.ops->name, sizeof(a->src));
			a->on = 1;
			return;
		}
	}
	tracefs_open(a, r);
	if (!a->on)
		pc_info("io audit unavailable: %s", a->why);
}

static void take_line(struct audit *a, const char *line)
{
	char rwbs[16];
	unsigned kdev, nsect;
	uint64_t sector;

	a->lines++;
	if (audit_parse_line(line, &kdev, rwbs, sizeof(rwbs), &sector, &nsect) || kdev != a->kdev || strchr(rwbs, 'R')) {
		a->ignored++;
		return;
	}
	/* a flush (no data) counts; a write only inside the region */
	if (strstr(rwbs, "W") && (sector < a->lo || sector >= a->hi)) {
		a->ignored++;
		return;
	}
	audit_count(&a->c, rwbs, nsect);
}

void audit_poll(struct audit *a)
{
	char buf[8192];
	ssize_t n;

	if (!a->on || a->sim || a->fd < 0)
		return;
	/* bounded: a few reads, the rest at the next poll */
	for (int k = 0; k < 64 && (n = read(a->fd, buf, sizeof(buf))) > 0; k++) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (a->plen < sizeof(a->part) - 1)
					a->part[a->plen++] = buf[i];
				continue;
			}
			a->part[a->plen] = 0;
			take_line(a, a->part);
			a->plen = 0;
		}
	}
}

void audit_reset(struct audit *a)
{
	char why[64];

	/* the work starts: what came before (the scan, others' requests still
	 * unread) is emptied from the buffer rather than read through */
	if (a->inst[0] && a->fd >= 0)
		put(a->inst, "trace", "", why, sizeof(why));
	audit_poll(a);
	a->plen = 0;
	memset(&a->c, 0, sizeof(a->c));
	if (a->sim)
		memset(a->sim, 0, sizeof(*a->sim));
}

json_object *audit_json(const struct audit *a)
{
	json_object *o = json_object_new_object(), *rq, *sec = NULL;
	const struct audit_counts *c = a->sim ? a->sim : &a->c;

	if (!a->on) {
		json_object_object_add(o, "unavailable", json_object_new_string(a->why));
		return o;
	}
	rq = json_object_new_object();
	for (unsigned i = 0; i < c->n; i++) {
		json_object_object_add(rq, c->k[i].rwbs, json_object_new_int64((int64_t)c->k[i].count));
		if (!c->k[i].sectors)
			continue;
		if (!sec)
			sec = json_object_new_object();
		json_object_object_add(sec, c->k[i].rwbs, json_object_new_int64((int64_t)c->k[i].sectors));
	}
	if (c->other)
		json_object_object_add(rq, "other", json_object_new_int64((int64_t)c->other));
	json_object_object_add(o, "src", json_object_new_string(a->src));
	json_object_object_add(o, "rq", rq);
	if (sec)
		json_object_object_add(o, "sectors", sec);
	return o;
}

void audit_close(struct audit *a)
{
	char why[64];

	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
	if (a->inst[0]) {
		put(a->inst, "events/block/block_rq_issue/enable", "0", why, sizeof(why));
		rmdir(a->inst);
		a->inst[0] = 0;
	}
	a->on = 0;
}

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
#include "agent/audit.h"

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

#include "common/util.h"
#include "agent/blockdev.h"
#include "agent/dev.h"
#include "agent/region.h"

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
		return -EINVAL;
	p += strlen("block_rq_issue: ");
	/* "7,0 WS 4096 () 2048 + 8 none,0,0 [comm]"; the command between the
	 * parentheses is empty for filesystem requests */
	if (sscanf(p, "%u,%u %15s %u (%n", &ma, &mi, flags, &bytes, &n) != 4 || !n)
		return -EINVAL;
	p += n;
	p = strchr(p, ')');
	if (!p || sscanf(p + 1, " %llu + %u", &sec, &nsect) != 2)
		return -EINVAL;
	if (ma >= 1u << 12 || mi >= 1u << 20 || nsect > 1u << 24 || !flags[0] || strspn(flags, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(flags))
		return -EINVAL;
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

struct tracefs_find {
	char *dir;
	size_t len;
};

static int tracefs_one(const struct blockdev_mount *m, void *arg)
{
	struct tracefs_find *t = arg;

	if (!m->fstype || strcmp(m->fstype, "tracefs"))
		return 0;
	snprintf(t->dir, t->len, "%s", m->mnt);
	return 1;
}

int audit_tracefs_mounted(const char *mountinfo, char *dir, size_t len)
{
	return blockdev_mounts(mountinfo, tracefs_one, &(struct tracefs_find){ dir, len }) == 1 ? 0 : -ENOENT;
}

/* Where tracefs is: mounted already (/proc/self/mountinfo), else mounted at
 * /sys/kernel/tracing here (root only). */
static int tracefs_dir(char *dir, size_t len, char *why, size_t wlen)
{
	struct stat st;
	int e;

	if (audit_tracefs_mounted("/proc/self/mountinfo", dir, len) == 0)
		return 0;
	if (stat("/sys/kernel/tracing", &st) != 0) {
		e = errno;
		snprintf(why, wlen, "no tracefs: /sys/kernel/tracing: %s (a kernel without CONFIG_TRACING?)",
			 strerror(e));
		return -e;
	}
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) != 0) {
		e = errno;
		snprintf(why, wlen, "tracefs is not mounted and mounting it at /sys/kernel/tracing failed: %s",
			 strerror(e));
		return -e;
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

static int raw_open(struct audit *a, const char *base, char *why, size_t wlen);

static void tracefs_open(struct audit *a, struct region *r)
{
	char base[PATH_MAX], disk[PATH_MAX], part[PATH_MAX], text[320];
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
	/* PC_AUDIT_TEXT=1: the text reader, as on kernels whose raw layout the
	 * agent does not read (t-audit runs it so) */
	if (getenv("PC_AUDIT_TEXT") && !strcmp(getenv("PC_AUDIT_TEXT"), "1"))
		snprintf(text, sizeof(text), "PC_AUDIT_TEXT=1");
	else if (raw_open(a, base, text, sizeof(text)) == 0) {
		a->raw_on = 1;
		pc_strlcpy(a->src, "tracefs", sizeof(a->src));
		a->on = 1;
		return;
	}
	pc_debug("io audit: reading the text trace_pipe: %s", text);
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

/* One request the kernel issued: counted when it is the work's. */
static void take(struct audit *a, unsigned kdev, const char *rwbs, uint64_t sector, unsigned nsect)
{
	a->lines++;
	if (kdev != a->kdev || strchr(rwbs, 'R')) {
		a->ignored++;
		return;
	}
	/* a flush (no data) counts; a write only inside the region */
	if (strstr(rwbs, "W") && (sector < a->lo || sector >= a->hi)) {
		a->ignored++;
		return;
	}
	audit_count_write(&a->c, &a->last, rwbs, sector, nsect);
}

void audit_count_write(struct audit_counts *c, struct audit_last *l, const char *rwbs, uint64_t sector,
		       unsigned nsect)
{
	uint64_t more = 0;

	/* the rest of a request issued again reached the device once: no new
	 * request, and only the sectors not counted yet (the original's first
	 * ones, when it is read after its remainder) */
	if (!nsect || !audit_remainder(l, rwbs, sector, nsect, &more)) {
		audit_count(c, rwbs, nsect);
		return;
	}
	for (unsigned i = 0; more && i < c->n; i++)
		if (!strcmp(c->k[i].rwbs, rwbs))
			c->k[i].sectors += more;
}

int audit_remainder(struct audit_last *l, const char *rwbs, uint64_t sector, unsigned nsect, uint64_t *more)
{
	uint64_t end = sector + nsect;
	unsigned i = l->next % AUDIT_RECENT;

	*more = 0;
	for (unsigned k = 0; k < AUDIT_RECENT; k++) {
		if (!l->r[k].end || end != l->r[k].end || sector == l->r[k].start || strcmp(rwbs, l->r[k].rwbs))
			continue;
		/* a later start: a remainder, its sectors counted already; an
		 * earlier one: the original, read after a remainder of it (the
		 * CPUs' trace buffers are read one after the other) */
		if (sector < l->r[k].start) {
			*more = l->r[k].start - sector;
			l->r[k].start = sector;
		}
		return 1;
	}
	pc_strlcpy(l->r[i].rwbs, rwbs, sizeof(l->r[i].rwbs));
	l->r[i].start = sector;
	l->r[i].end = end;
	l->next = (i + 1) % AUDIT_RECENT;
	return 0;
}

static void take_line(struct audit *a, const char *line)
{
	char rwbs[16];
	unsigned kdev, nsect;
	uint64_t sector;

	/* "CPU:1 [LOST 120 EVENTS]": the buffer overflowed */
	if (strstr(line, "[LOST ")) {
		a->lost++;
		return;
	}
	if (audit_parse_line(line, &kdev, rwbs, sizeof(rwbs), &sector, &nsect)) {
		a->lines++;
		a->ignored++;
		return;
	}
	take(a, kdev, rwbs, sector, nsect);
}

/* ---- binary pages (per_cpu/cpuN/trace_pipe_raw) ---- */

int audit_format_field(const char *text, const char *name, unsigned *off, unsigned *size)
{
	size_t nl = strlen(name);
	const char *p = text;

	/* "\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;" or
	 * "\tfield:char rwbs[10];..." or "\tfield: local_t commit;..." */
	while (p && (p = strstr(p, "field:"))) {
		const char *semi = strchr(p, ';'), *e = semi;
		unsigned o, z;

		p += 6;
		if (!semi)
			return -EINVAL;
		if (e > p && e[-1] == ']')	/* an array: the name ends before '[' */
			while (e > p && *e != '[')
				e--;
		if ((size_t)(e - p) > nl && !memcmp(e - nl, name, nl) && (e[-(long)nl - 1] == ' ' ||
		    e[-(long)nl - 1] == '\t' || e[-(long)nl - 1] == '*') &&
		    sscanf(semi + 1, " offset:%u; size:%u;", &o, &z) == 2) {
			if (o > 1u << 16 || z > 1u << 16)
				return -EINVAL;
			*off = o;
			*size = z;
			return 0;
		}
		p = semi + 1;
	}
	return -EINVAL;
}

int audit_raw_layout(struct audit_raw *r, const char *header_page, const char *event_format, unsigned id)
{
	unsigned z, dz, sz, nz, tz;

	if (audit_format_field(header_page, "commit", &r->commit_off, &r->commit_size) ||
	    audit_format_field(header_page, "data", &r->data_off, &z) ||
	    (r->commit_size != 4 && r->commit_size != 8) || r->data_off < r->commit_off + r->commit_size ||
	    audit_format_field(event_format, "common_type", &r->type_off, &tz) ||
	    audit_format_field(event_format, "dev", &r->dev_off, &dz) ||
	    audit_format_field(event_format, "sector", &r->sector_off, &sz) ||
	    audit_format_field(event_format, "nr_sector", &r->nsect_off, &nz) ||
	    audit_format_field(event_format, "rwbs", &r->rwbs_off, &r->rwbs_size))
		return -EINVAL;
	r->type_size = tz;
	if ((tz != 2 && tz != 4) || dz != 4 || sz != 8 || nz != 4 || r->rwbs_size < 2 || r->rwbs_size > 16 ||
	    id == 0 || id > 0xffff)
		return -EINVAL;
	r->id = id;
	return 0;
}

static uint64_t rd(const uint8_t *p, unsigned size)
{
	uint64_t v64;
	uint32_t v32;
	uint16_t v16;

	switch (size) {
	case 2:
		memcpy(&v16, p, 2);
		return v16;
	case 4:
		memcpy(&v32, p, 4);
		return v32;
	default:
		memcpy(&v64, p, 8);
		return v64;
	}
}

/* One event's data (len bytes): a block_rq_issue is taken, others skipped. */
static int take_event(struct audit *a, const uint8_t *d, size_t len)
{
	const struct audit_raw *r = &a->raw;
	char rwbs[17];

	if (len < (size_t)r->type_off + r->type_size || rd(d + r->type_off, r->type_size) != r->id)
		return 0;
	if (len < (size_t)r->dev_off + 4 || len < (size_t)r->sector_off + 8 || len < (size_t)r->nsect_off + 4 ||
	    len < (size_t)r->rwbs_off + r->rwbs_size)
		return -EINVAL;
	memcpy(rwbs, d + r->rwbs_off, r->rwbs_size);
	rwbs[r->rwbs_size] = 0;
	if (!rwbs[0] || strspn(rwbs, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(rwbs)) {
		a->lines++;
		a->ignored++;
		return 0;
	}
	take(a, (unsigned)rd(d + r->dev_off, 4), rwbs, rd(d + r->sector_off, 8), (unsigned)rd(d + r->nsect_off, 4));
	return 1;
}

/* The ring buffer's event types (kernel/trace/ring_buffer.c) */
#define RB_PADDING 29
#define RB_TIME_EXTEND 30
#define RB_TIME_STAMP 31
#define RB_MISSED_EVENTS (1ull << 31)
#define RB_COMMIT_MASK ((1ull << 27) - 1)

int audit_take_page(struct audit *a, const uint8_t *page, size_t n)
{
	const struct audit_raw *r = &a->raw;
	uint64_t commit;
	size_t p, end;
	int taken = 0, k;

	if (n < r->data_off)
		return -EINVAL;
	commit = rd(page + r->commit_off, r->commit_size);
	if (commit & RB_MISSED_EVENTS)
		a->lost++;
	end = (size_t)(commit & RB_COMMIT_MASK);
	if (end > n - r->data_off)
		return -EINVAL;
	page += r->data_off;
	for (p = 0; p + 4 <= end;) {
		uint32_t h = (uint32_t)rd(page + p, 4), type = h & 31, len;

		if (type == RB_PADDING) {
			if (!(h >> 5))		/* the rest of the page */
				break;
			if (p + 8 > end)
				return -EINVAL;
			len = (uint32_t)rd(page + p + 4, 4);
			if (len > end - p - 4)
				return -EINVAL;
			p += 4 + (size_t)len;
		} else if (type == RB_TIME_EXTEND || type == RB_TIME_STAMP) {
			p += 8;
		} else if (type == 0) {
			if (p + 8 > end)
				return -EINVAL;
			len = (uint32_t)rd(page + p + 4, 4);
			if (len < 4 || len - 4 > end - p - 8)
				return -EINVAL;
			if ((k = take_event(a, page + p + 8, len - 4)) < 0)
				return -EINVAL;
			taken += k;
			p += 8 + (((size_t)len - 4 + 3) & ~(size_t)3);
		} else {
			len = type * 4;
			if (len > end - p - 4)
				return -EINVAL;
			if ((k = take_event(a, page + p + 4, len)) < 0)
				return -EINVAL;
			taken += k;
			p += 4 + (size_t)len;
		}
	}
	return taken;
}

/* A small tracefs file, whole, NUL-terminated (0), or -errno (-ENODATA: empty). */
static int slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = 0;
	return got ? 0 : -ENODATA;
}

static void raw_close(struct audit_raw *r)
{
	for (unsigned i = 0; i < r->ncpu; i++)
		if (r->fd[i] >= 0)
			close(r->fd[i]);
	r->ncpu = 0;
	free(r->buf);
	r->buf = NULL;
}

/* Open the instance's per-CPU binary buffers; 0, or -errno with why (the
 * text trace_pipe is read instead). */
static int raw_open(struct audit *a, const char *base, char *why, size_t wlen)
{
	struct audit_raw *r = &a->raw;
	char hp[4096], fmt[8192], p[PATH_MAX + 64], idtext[32];
	long pg = sysconf(_SC_PAGESIZE);
	unsigned id;
	int rc, err;
	DIR *d;
	struct dirent *e;

	snprintf(p, sizeof(p), "%s/events/header_page", base);
	if ((rc = slurp(p, hp, sizeof(hp)))) {
		snprintf(why, wlen, "cannot read %s", p);
		return rc;
	}
	snprintf(p, sizeof(p), "%s/events/block/block_rq_issue/format", a->inst);
	if ((rc = slurp(p, fmt, sizeof(fmt)))) {
		snprintf(why, wlen, "cannot read %s", p);
		return rc;
	}
	snprintf(p, sizeof(p), "%s/events/block/block_rq_issue/id", a->inst);
	if (slurp(p, idtext, sizeof(idtext)) || sscanf(idtext, "%u", &id) != 1 ||
	    audit_raw_layout(r, hp, fmt, id)) {
		snprintf(why, wlen, "this kernel's raw trace layout is not one the agent reads");
		return -EINVAL;
	}
	if (pg < 4096 || pg > 1 << 20 || !(r->buf = malloc((size_t)pg))) {
		snprintf(why, wlen, "no page buffer");
		return -ENOMEM;
	}
	r->page = (size_t)pg;
	snprintf(p, sizeof(p), "%s/per_cpu", a->inst);
	d = opendir(p);
	if (!d) {
		err = errno;
		snprintf(why, wlen, "%s: %s", p, strerror(err));
		raw_close(r);
		return -err;
	}
	while ((e = readdir(d))) {
		char q[PATH_MAX + 128];
		unsigned cpu;
		char tail;

		if (sscanf(e->d_name, "cpu%u%c", &cpu, &tail) != 1)
			continue;
		if (r->ncpu == AUDIT_MAX_CPUS) {
			snprintf(why, wlen, "more than %d CPUs", AUDIT_MAX_CPUS);
			closedir(d);
			raw_close(r);
			return -E2BIG;
		}
		snprintf(q, sizeof(q), "%s/%s/trace_pipe_raw", p, e->d_name);
		r->fd[r->ncpu] = open(q, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (r->fd[r->ncpu] < 0) {
			err = errno;
			snprintf(why, wlen, "%s: %s", q, strerror(err));
			closedir(d);
			raw_close(r);
			return -err;
		}
		r->ncpu++;
	}
	closedir(d);
	if (!r->ncpu) {
		snprintf(why, wlen, "%s lists no CPU", p);
		raw_close(r);
		return -ENODEV;
	}
	return 0;
}

static void raw_poll(struct audit *a)
{
	struct audit_raw *r = &a->raw;

	/* bounded: a few pages per CPU, the rest at the next poll */
	for (unsigned c = 0; c < r->ncpu; c++)
		for (int k = 0; k < 16; k++) {
			ssize_t n = read(r->fd[c], r->buf, r->page);

			if (n <= 0)
				break;
			if (audit_take_page(a, r->buf, (size_t)n) < 0)
				a->lost++;	/* a page not understood: its requests are not counted */
			if ((size_t)n < r->page)
				break;	/* a partial page: this CPU's buffer is empty now */
		}
}

void audit_poll(struct audit *a)
{
	char buf[8192];
	ssize_t n;

	if (!a->on || a->sim)
		return;
	if (a->raw_on) {
		raw_poll(a);
		return;
	}
	if (a->fd < 0)
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
	if (a->inst[0] && (a->fd >= 0 || a->raw_on))
		put(a->inst, "trace", "", why, sizeof(why));
	audit_poll(a);
	a->plen = 0;
	a->lost = 0;
	memset(&a->c, 0, sizeof(a->c));
	memset(&a->last, 0, sizeof(a->last));
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
	if (a->lost) {
		/* counts short of what reached the device would be a wrong audit */
		json_object_object_add(o, "unavailable", json_object_new_string(
			"the kernel's trace buffer lost block requests (it overflowed before the agent read it): "
			"the counts would be short"));
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
	if (a->raw_on)
		raw_close(&a->raw);
	a->raw_on = 0;
	if (a->inst[0]) {
		put(a->inst, "events/block/block_rq_issue/enable", "0", why, sizeof(why));
		rmdir(a->inst);
		a->inst[0] = 0;
	}
	a->on = 0;
}

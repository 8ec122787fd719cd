/*
 * inputs.c - the inputs of a crash-state check, kept per power-on (inputs.h,
 * docs/sim.md "Inputs kept per power-on").
 *
 * A request is logged when it completes, before the agent sees it complete,
 * so the log is in completion order. What a cut must not blur is kept in the
 * session's live page with plain stores: the request in flight (stored before
 * it starts), and the log's committed length and entry count. The entry count
 * is the commit: one aligned 64-bit store after the entry's bytes are in the
 * log. At the next power-on a request whose entry was never committed is the
 * one in flight, and the log is cut back to where it was before it.
 */
#include "sim/inputs.h"
#include "sim/emmc_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "common/wlog.h"

#define LIVE_MAGIC	0x4c434350u	/* "PCCL" */
#define LIVE_VERSION	1u
#define INPUTS_FORMAT	1
#define MAX_CYCLES	64u	/* distinct record cycles listed in cycle.json */

enum { OP_NONE, OP_WRITE, OP_FLUSH };

/* session-S/live: one page, MAP_SHARED. */
struct sim_live {
	uint32_t magic, version;
	uint64_t dev, ino;		/* the media */
	uint32_t session;
	uint32_t op;			/* in flight: OP_* */
	uint64_t lba;
	uint32_t n, fua;
	uint64_t seq;			/* a record's header, if raw is 0 */
	uint32_t cycle;
	uint16_t flags, raw;
	uint64_t begin_bytes;		/* log length when it started */
	uint64_t op_entries;		/* entries when it started */
	uint64_t log_bytes;		/* committed log length */
	uint64_t entries;		/* committed entries: the commit */
	int32_t error;			/* errno that stopped the log, 0 */
	uint32_t closed;		/* an orderly close */
};

_Static_assert(sizeof(struct sim_live) <= SIM_PAGE, "the live page is one page");

struct sim_inputs {
	int fd;				/* writes.log */
	struct sim_live *live;
	const void *buf;		/* the write in flight's data */
};

static int path_of(char *buf, size_t len, const struct sim_emmc *e, uint32_t session, const char *file)
{
	int n;

	if (session)
		n = snprintf(buf, len, "%s" SIM_INPUTS_SUFFIX "/session-%" PRIu32 "%s%s", e->media, session,
			     file ? "/" : "", file ? file : "");
	else
		n = snprintf(buf, len, "%s" SIM_INPUTS_SUFFIX, e->media);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int fail(char *err, size_t errlen, int ret, const char *what, const char *path)
{
	return pc_fail(err, errlen, ret, "sim inputs: cannot %s %s: %s", what, path, strerror(-ret));
}

/* The whole media, as it is now, into path (a temporary name, then a rename). */
static int copy_media(const struct sim_emmc *e, const char *path)
{
	char tmp[PATH_MAX + 8];
	uint64_t len = e->sectors * PC_SECTOR;
	loff_t off = 0;
	int fd = pc_tmp_open(path, tmp, sizeof(tmp)), ret = 0;

	if (fd < 0)
		return fd;
	/* in the kernel (a reflink where the filesystem can), else from the map */
	while ((uint64_t)off < len) {
		ssize_t n = copy_file_range(e->fd, &off, fd, NULL, len - (uint64_t)off, 0);

		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		ret = pc_pwrite_all(fd, e->map + off, len - (uint64_t)off, (off_t)off);
		break;
	}
	return pc_tmp_commit(fd, tmp, path, ret, 0);
}

static json_object *region_json(const struct sim_emmc *e)
{
	json_object *r = json_object_new_object();
	char u[37];

	pc_uuid_format(e->g.uuid, u);
	json_object_object_add(r, "uuid", json_object_new_string(u));
	json_object_object_add(r, "seed", json_object_new_uint64(e->g.seed));
	json_object_object_add(r, "record_size", json_object_new_int64(e->g.record_size));
	json_object_object_add(r, "nslots", json_object_new_int64(e->g.nslots));
	json_object_object_add(r, "region_bytes", json_object_new_uint64(e->g.region_bytes));
	return r;
}

static int write_json(const char *path, json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	char *line;
	size_t len = strlen(s);
	int ret;

	line = malloc(len + 2);
	if (!line)
		return -ENOMEM;
	memcpy(line, s, len);
	line[len] = '\n';
	ret = pc_write_file(path, line, len + 1, 0);
	free(line);
	return ret;
}

/* The log's superblock: magic, version, entries, sector size. */
static int log_super(int fd, uint64_t entries)
{
	uint8_t sb[WLOG_SECT] = { 0 };

	wlog_super_put(sb, entries, WLOG_SECT);
	return pc_pwrite_all(fd, sb, sizeof(sb), 0);
}

struct log_counts {
	uint64_t entries, writes, fua_writes, flushes, marks;
	uint32_t cycles[MAX_CYCLES];
	uint32_t ncycles, cycles_more;
};

/* Walk the committed log (len bytes): what it holds, and the cycles of its
 * records. Returns where its last whole entry ends. */
static uint64_t log_count(int fd, uint64_t len, struct log_counts *c)
{
	uint8_t h[WLOG_SECT];
	uint64_t off = WLOG_SECT;

	memset(c, 0, sizeof(*c));
	while (off + WLOG_SECT <= len && pc_pread_all(fd, h, sizeof(h), (off_t)off) == 0) {
		struct wlog_hdr eh;
		uint64_t n, flags, bytes;

		wlog_hdr_get(h, &eh);
		n = eh.nsect;
		flags = eh.flags;
		bytes = eh.data_len;

		if (flags == WLOG_MARK && !n && bytes <= WLOG_MARK_MAX) {
			/* a mark: its text inline, one sector */
			c->entries++;
			c->marks++;
			off += WLOG_SECT;
			continue;
		}
		if ((flags & ~(uint64_t)(WLOG_FLUSH | WLOG_FUA)) || bytes != n * WLOG_SECT ||
		    bytes > len - off - WLOG_SECT || (!n && !(flags & WLOG_FLUSH)))
			break;
		c->entries++;
		if (flags & WLOG_FLUSH) {
			c->flushes++;
		} else {
			c->writes++;
			c->fua_writes += (flags & WLOG_FUA) != 0;
			if (pc_pread_all(fd, h, sizeof(h), (off_t)(off + WLOG_SECT)) == 0 &&
			    pc_get32(h + PC_OFF_MAGIC) == PC_REC_MAGIC) {
				uint32_t cy = pc_get32(h + PC_OFF_CYCLE), i;

				for (i = 0; i < c->ncycles && c->cycles[i] != cy; i++)
					;
				if (i == c->ncycles) {
					if (c->ncycles < MAX_CYCLES)
						c->cycles[c->ncycles++] = cy;
					else
						c->cycles_more = 1;
				}
			}
		}
		off += WLOG_SECT + bytes;
	}
	return off;
}

/* The live page of a folder, if it is this media's, for session. NULL if not. */
static struct sim_live *live_map(const struct sim_emmc *e, uint32_t session, int create)
{
	char path[PATH_MAX];
	struct sim_live *l;
	struct stat st;
	void *m;
	int fd;

	if (path_of(path, sizeof(path), e, session, "live"))
		return NULL;
	fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0644);
	if (fd < 0)
		return NULL;
	if ((create && ftruncate(fd, SIM_PAGE) < 0) || fstat(fd, &st) < 0 || st.st_size != SIM_PAGE) {
		close(fd);
		return NULL;
	}
	m = mmap(NULL, SIM_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	l = m;
	if (create) {
		l->magic = LIVE_MAGIC;
		l->version = LIVE_VERSION;
		l->dev = e->dev;
		l->ino = e->ino;
		l->session = session;
		l->log_bytes = WLOG_SECT;
	} else if (l->magic != LIVE_MAGIC || l->version != LIVE_VERSION || l->dev != e->dev ||
		   l->ino != e->ino || l->session != session || l->log_bytes < WLOG_SECT) {
		munmap(m, SIM_PAGE);
		return NULL;
	}
	return l;
}

/* The log of session prev cut back to its last committed whole entry, its superblock rewritten:
 * its counts into *c, its length into *len. 0 or -errno (err set). */
static int log_finish(const struct sim_emmc *e, uint32_t prev, const struct sim_live *l, int in_flight,
		      struct log_counts *c, uint64_t *len, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, ret;

	/* the request in flight never committed its entry: the log ends before it */
	*len = in_flight ? l->begin_bytes : l->log_bytes;
	if (path_of(path, sizeof(path), e, prev, "writes.log"))
		return fail(err, errlen, -ENAMETOOLONG, "name the log of", e->media);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fail(err, errlen, -errno, "open", path);
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return fail(err, errlen, ret, "stat", path);
	}
	if ((uint64_t)st.st_size < *len)
		*len = (uint64_t)st.st_size;
	/* whole entries only: a log cut short by anything ends at the last one */
	*len = log_count(fd, *len, c);
	ret = ftruncate(fd, (off_t)*len) < 0 ? -errno : 0;
	if (!ret)
		ret = log_super(fd, c->entries);
	close(fd);
	return ret ? fail(err, errlen, ret, "finish", path) : 0;
}

/* cycle.json's in_flight: the request the session had started and not completed, or NULL. */
static json_object *in_flight_json(const struct sim_live *l, int in_flight)
{
	json_object *f;

	if (!in_flight)
		return NULL;
	f = json_object_new_object();
	if (l->op == OP_FLUSH) {
		json_object_object_add(f, "op", json_object_new_string("flush"));
		return f;
	}
	json_object_object_add(f, "op", json_object_new_string("write"));
	json_object_object_add(f, "lba", json_object_new_uint64(l->lba));
	json_object_object_add(f, "n", json_object_new_int64(l->n));
	json_object_object_add(f, "fua", json_object_new_boolean(l->fua != 0));
	json_object_object_add(f, "raw", json_object_new_boolean(l->raw != 0));
	if (!l->raw) {
		json_object_object_add(f, "seq", json_object_new_uint64(l->seq));
		json_object_object_add(f, "cycle", json_object_new_int64(l->cycle));
		json_object_object_add(f, "flags", json_object_new_int64(l->flags));
	}
	return f;
}

/* Session prev's cycle.json rewritten finished: how it ended, the log's counts, the request in flight. */
static int cycle_json_finish(const struct sim_emmc *e, uint32_t prev, const struct sim_live *l, int in_flight,
			     const struct log_counts *c, uint64_t len, char *err, size_t errlen)
{
	char path[PATH_MAX];
	json_object *cj, *a;
	int ret;

	if (path_of(path, sizeof(path), e, prev, "cycle.json"))
		return fail(err, errlen, -ENAMETOOLONG, "name the cycle.json of", e->media);
	cj = json_object_from_file(path);
	if (!cj || !json_object_is_type(cj, json_type_object)) {
		json_object_put(cj);
		cj = json_object_new_object();
	}
	json_object_object_add(cj, "finished", json_object_new_boolean(1));
	json_object_object_add(cj, "end", json_object_new_string(l->closed ? "close" : "cut"));
	a = json_object_new_array();
	for (uint32_t i = 0; i < c->ncycles; i++)
		json_object_array_add(a, json_object_new_int64(c->cycles[i]));
	json_object_object_add(cj, "cycles", a);
	if (c->cycles_more)
		json_object_object_add(cj, "cycles_more", json_object_new_boolean(1));
	json_object_object_add(cj, "writes", json_object_new_uint64(c->writes));
	json_object_object_add(cj, "fua_writes", json_object_new_uint64(c->fua_writes));
	json_object_object_add(cj, "flushes", json_object_new_uint64(c->flushes));
	json_object_object_add(cj, "marks", json_object_new_uint64(c->marks));
	json_object_object_add(cj, "log_entries", json_object_new_uint64(c->entries));
	json_object_object_add(cj, "log_bytes", json_object_new_uint64(len));
	if (l->error)
		json_object_object_add(cj, "log_error", json_object_new_string(strerror(l->error)));
	json_object_object_add(cj, "in_flight", in_flight_json(l, in_flight));
	ret = write_json(path, cj);
	json_object_put(cj);
	return ret ? fail(err, errlen, ret, "write", path) : 0;
}

int sim_inputs_finish_prev(struct sim_emmc *e, char *err, size_t errlen)
{
	uint32_t prev = e->session - 1;
	char dir[PATH_MAX], path[PATH_MAX];
	struct sim_live *l;
	struct log_counts c;
	struct stat st;
	uint64_t len;
	int in_flight, ret;

	if (prev < 1 || path_of(dir, sizeof(dir), e, prev, NULL) || stat(dir, &st) < 0)
		return 0;
	l = live_map(e, prev, 0);
	if (!l) {
		/* finished already (no live page), else not this media's or never
		 * started whole: a folder nobody can finish */
		if (path_of(path, sizeof(path), e, prev, "after.img") || access(path, F_OK) != 0)
			pc_remove_flat_dir(dir);
		return 0;
	}
	in_flight = l->op != OP_NONE && l->entries == l->op_entries;
	ret = log_finish(e, prev, l, in_flight, &c, &len, err, errlen);
	/* the media as the session left it, before this power-on's faults */
	if (!ret && path_of(path, sizeof(path), e, prev, "after.img"))
		ret = fail(err, errlen, -ENAMETOOLONG, "name", dir);
	if (!ret && (ret = copy_media(e, path)))
		ret = fail(err, errlen, ret, "write", path);
	if (!ret) {
		e->after_fresh = 1;
		ret = cycle_json_finish(e, prev, l, in_flight, &c, len, err, errlen);
	}
	munmap(l, SIM_PAGE);
	if (!ret && !path_of(path, sizeof(path), e, prev, "live"))
		unlink(path);
	return ret;
}

/* Remove the folders of sessions outside [session - keep, session]. */
static void prune(const struct sim_emmc *e, uint32_t keep)
{
	char base[PATH_MAX], dir[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (path_of(base, sizeof(base), e, 0, NULL) || !(d = opendir(base)))
		return;
	while ((de = readdir(d))) {
		uint64_t n;

		if (strncmp(de->d_name, "session-", 8) || pc_parse_u64(de->d_name + 8, 0, &n))
			continue;
		if (n > e->session || n + keep < e->session) {
			if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", base, de->d_name) < sizeof(dir))
				pc_remove_flat_dir(dir);
		}
	}
	closedir(d);
}

void sim_inputs_forget(struct sim_emmc *e)
{
	char dir[PATH_MAX];

	prune(e, 0);
	if (!path_of(dir, sizeof(dir), e, e->session, NULL))
		pc_remove_flat_dir(dir);
}

int sim_inputs_start(struct sim_emmc *e, uint32_t keep, struct sim_inputs **out, char *err, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX], prev[PATH_MAX], pname[256];
	struct sim_inputs *in;
	json_object *cj;
	int ret;

	*out = NULL;
	if (!keep || e->untimed)
		return 0;
	if (keep > SIM_KEEP_INPUTS_MAX)
		keep = SIM_KEEP_INPUTS_MAX;
	/* the longest name in the folder fits, so every one does */
	if (path_of(dir, sizeof(dir), e, e->session, NULL) || path_of(path, sizeof(path), e, e->session, "base.img.tmp"))
		return fail(err, errlen, -ENAMETOOLONG, "name the inputs of", e->media);
	prune(e, keep);
	pc_remove_flat_dir(dir);	/* an earlier media's */
	ret = pc_mkdir_p(dir, 0755);
	if (ret)
		return fail(err, errlen, ret, "create", dir);
	path_of(path, sizeof(path), e, e->session, "base.img");
	/* no power-on fault changed the media since the last session's after.img
	 * was taken: the same bytes, one more name (neither file is ever
	 * rewritten: both are made under another name, then renamed) */
	ret = -1;
	if (e->after_fresh && !e->power_on_writes && !path_of(prev, sizeof(prev), e, e->session - 1, "after.img"))
		ret = link(prev, path) < 0 ? -1 : 0;
	if (ret)
		ret = copy_media(e, path);
	if (ret)
		return fail(err, errlen, ret, "write", path);
	cj = json_object_new_object();
	json_object_object_add(cj, "format", json_object_new_int(INPUTS_FORMAT));
	json_object_object_add(cj, "session", json_object_new_int64(e->session));
	json_object_object_add(cj, "finished", json_object_new_boolean(0));
	json_object_object_add(cj, "end", json_object_new_string("unknown"));
	json_object_object_add(cj, "media", json_object_new_string(e->media));
	json_object_object_add(cj, "media_bytes", json_object_new_uint64(e->sectors * PC_SECTOR));
	json_object_object_add(cj, "profile", json_object_new_string(sim_profile_name(e->profile, pname, sizeof(pname))));
	json_object_object_add(cj, "program_us", json_object_new_int64(e->program_us));
	json_object_object_add(cj, "cache_sectors", json_object_new_int64(e->cache_sectors));
	json_object_object_add(cj, "seed", json_object_new_uint64(e->seed));
	json_object_object_add(cj, "rate", pc_json_double(e->rate));
	json_object_object_add(cj, "keep_inputs", json_object_new_int64(keep));
	if (e->have_geom)
		json_object_object_add(cj, "region", region_json(e));
	json_object_object_add(cj, "in_flight", NULL);
	path_of(path, sizeof(path), e, e->session, "cycle.json");
	ret = write_json(path, cj);
	json_object_put(cj);
	if (ret)
		return fail(err, errlen, ret, "write", path);
	in = calloc(1, sizeof(*in));
	if (!in)
		return fail(err, errlen, -ENOMEM, "keep", dir);
	path_of(path, sizeof(path), e, e->session, "writes.log");
	in->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ret = in->fd < 0 ? -errno : log_super(in->fd, 0);
	if (ret) {
		if (in->fd >= 0)
			close(in->fd);
		free(in);
		return fail(err, errlen, ret, "write", path);
	}
	/* last: a folder with a live page is a whole one */
	in->live = live_map(e, e->session, 1);
	if (!in->live) {
		close(in->fd);
		free(in);
		return fail(err, errlen, -EIO, "map the live page of", dir);
	}
	*out = in;
	return 0;
}

void sim_inputs_begin(struct sim_inputs *in, unsigned op, uint64_t lba, const void *buf, uint32_t nsect,
		      int fua)
{
	struct sim_live *l;
	const uint8_t *p = buf;

	if (!in)
		return;
	l = in->live;
	in->buf = buf;
	l->lba = lba;
	l->n = op == OP_WRITE ? nsect : 0;
	l->fua = fua != 0;
	l->raw = !p || pc_get32(p + PC_OFF_MAGIC) != PC_REC_MAGIC;
	l->seq = l->raw ? 0 : pc_get64(p + PC_OFF_SEQ);
	l->cycle = l->raw ? 0 : pc_get32(p + PC_OFF_CYCLE);
	l->flags = l->raw ? 0 : pc_get16(p + PC_OFF_FLAGS);
	l->begin_bytes = l->log_bytes;
	l->op_entries = l->entries;
	sim_barrier();
	l->op = op;
	sim_barrier();
}

void sim_inputs_end(struct sim_inputs *in, int ok)
{
	struct sim_live *l;
	uint8_t h[WLOG_SECT] = { 0 };
	struct iovec iov[2];
	size_t len;
	ssize_t n;

	if (!in)
		return;
	l = in->live;
	if (ok && !l->error && l->op != OP_NONE) {
		len = (size_t)l->n * PC_SECTOR;
		wlog_hdr_put(h, &(struct wlog_hdr){ .sector = l->op == OP_WRITE ? l->lba : 0, .nsect = l->n,
						    .flags = l->op == OP_FLUSH ? WLOG_FLUSH : l->fua ? WLOG_FUA : 0,
						    .data_len = len });
		iov[0] = (struct iovec){ h, sizeof(h) };
		iov[1] = (struct iovec){ (void *)in->buf, len };
		do
			n = pwritev(in->fd, iov, len ? 2 : 1, (off_t)l->log_bytes);
		while (n < 0 && errno == EINTR);
		if (n == (ssize_t)(sizeof(h) + len)) {
			l->log_bytes += sizeof(h) + len;
			sim_barrier();
			l->entries++;	/* the commit */
		} else {
			l->error = n < 0 ? errno : ENOSPC;
		}
	}
	sim_barrier();
	l->op = OP_NONE;
	in->buf = NULL;
}

void sim_inputs_mark(struct sim_inputs *in, const char *text)
{
	struct sim_live *l;
	uint8_t h[WLOG_SECT] = { 0 };
	size_t len = strlen(text);
	ssize_t n;

	if (!in || in->live->error || in->live->op != OP_NONE)
		return;
	l = in->live;
	if (len > WLOG_MARK_MAX)
		len = WLOG_MARK_MAX;
	wlog_hdr_put(h, &(struct wlog_hdr){ .flags = WLOG_MARK, .data_len = len });
	memcpy(h + WLOG_HDR_BYTES, text, len);
	do
		n = pwrite(in->fd, h, sizeof(h), (off_t)l->log_bytes);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(h)) {
		l->error = n < 0 ? errno : ENOSPC;
		return;
	}
	l->log_bytes += sizeof(h);
	sim_barrier();
	l->entries++;	/* the commit */
}

void sim_inputs_close(struct sim_inputs *in)
{
	if (!in)
		return;
	in->live->closed = 1;
	munmap(in->live, SIM_PAGE);
	close(in->fd);
	free(in);
}

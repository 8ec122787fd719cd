/*
 * vckeep.c - the virtual board's crash-state inputs per power-on: the region
 * before, the SCSI disk's writes and flushes in completion order, the region
 * after the cut. See vckeep.h.
 */
#include "vboard/vckeep.h"
#include "vboard/vcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/record.h"
#include "common/util.h"
#include "common/wlog.h"

#define VK_MAX_CMDS	(1u << 20)	/* WRITEs and SYNCHRONIZE CACHEs traced in one power-on */
#define VK_MAX_CYCLES	64u		/* distinct record cycles listed in cycle.json */
#define VK_LINE		512
#define VK_SECT		512u

static int vk_path(char *buf, size_t len, const struct vk_session *s, uint64_t session, const char *file)
{
	int n = file ? snprintf(buf, len, "%s/session-%" PRIu64 "/%s", s->root, session, file) :
		       snprintf(buf, len, "%s/session-%" PRIu64, s->root, session);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- the region: the GPT partition "pc-region" ---- */

int vk_region_find(const char *drive, uint64_t *off, uint64_t *len, char *err, size_t errlen)
{
	unsigned char h[VK_SECT], e[1024];
	int fd = open(drive, O_RDONLY | O_CLOEXEC), rc = -ENOENT;
	uint64_t elba, size;
	uint32_t n, esz;
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return pc_fail(err, errlen, -errno, "keep_inputs: drive %s: %s", drive, strerror(errno));
	size = (uint64_t)st.st_size;
	if (pc_pread_all(fd, h, sizeof(h), VK_SECT) || memcmp(h, "EFI PART", 8)) {
		close(fd);
		return pc_fail(err, errlen, -EINVAL, "keep_inputs: drive %s has no GPT (a copy of build/vm/sd.img "
			       "has one): the kept region is its partition \"%s\"", drive, VK_PARTITION);
	}
	elba = pc_get64(h + 72);
	n = pc_get32(h + 80);
	esz = pc_get32(h + 84);
	if (n > 1024 || esz < 128 || esz > sizeof(e) || esz % 8 || elba >= size / VK_SECT) {
		close(fd);
		return pc_fail(err, errlen, -EINVAL, "keep_inputs: drive %s: a GPT header of %" PRIu32 " entries of %"
			       PRIu32 " bytes at sector %" PRIu64 ": not one to read", drive, n, esz, elba);
	}
	for (uint32_t i = 0; i < n && rc == -ENOENT; i++) {
		uint64_t first, last;
		size_t k;

		if (pc_pread_all(fd, e, esz, (off_t)(elba * VK_SECT + (uint64_t)i * esz)))
			break;
		/* the name: UTF-16LE at byte 56, 36 code units */
		for (k = 0; k < sizeof(VK_PARTITION) - 1 && e[56 + 2 * k] == (unsigned char)VK_PARTITION[k] &&
			    !e[57 + 2 * k]; k++)
			;
		if (k < sizeof(VK_PARTITION) - 1 || e[56 + 2 * k] || e[57 + 2 * k])
			continue;
		first = pc_get64(e + 32);
		last = pc_get64(e + 40);
		if (last < first || last >= size / VK_SECT || (last - first + 1) * VK_SECT > VK_MAX_REGION) {
			rc = pc_fail(err, errlen, -EINVAL, "keep_inputs: drive %s: partition \"%s\" is sectors %" PRIu64
				     "..%" PRIu64 ": past the drive, or over %llu bytes (the region is copied twice "
				     "per power-on)", drive, VK_PARTITION, first, last, (unsigned long long)VK_MAX_REGION);
			break;
		}
		*off = first * VK_SECT;
		*len = (last - first + 1) * VK_SECT;
		rc = 0;
	}
	close(fd);
	if (rc == -ENOENT)
		pc_fail(err, errlen, rc, "keep_inputs: drive %s has no GPT partition named \"%s\" (the region the "
			"board's init gives the agent)", drive, VK_PARTITION);
	return rc;
}

/* ---- files ---- */

/* The region of the drive into path (a temporary file renamed over it). */
static int vk_copy_region(const struct vk_session *s, const char *path, char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	int in = open(s->drive, O_RDONLY | O_CLOEXEC), out, rc = 0;
	loff_t ioff = (loff_t)s->region_off;

	if (in < 0)
		return pc_fail(err, errlen, -errno, "keep_inputs: drive %s: %s", s->drive, strerror(errno));
	out = pc_tmp_open(path, tmp, sizeof(tmp));
	if (out < 0) {
		close(in);
		return pc_fail(err, errlen, out, "keep_inputs: %s: %s", path, strerror(-out));
	}
	for (uint64_t left = s->region_len; left && !rc;) {
		ssize_t n = copy_file_range(in, &ioff, out, NULL, (size_t)left, 0);

		rc = n > 0 ? 0 : n < 0 ? -errno : -EIO;
		left -= n > 0 ? (uint64_t)n : 0;
	}
	close(in);
	rc = pc_tmp_commit(out, tmp, path, rc, 0);
	return rc ? pc_fail(err, errlen, rc, "keep_inputs: copying the region of %s to %s: %s", s->drive, path,
			    strerror(-rc)) : 0;
}

/* 1 when the file at path holds exactly the drive's region now. */
static int vk_same_region(const struct vk_session *s, const char *path)
{
	enum { CHUNK = 1 << 20 };
	unsigned char *a = malloc(CHUNK), *b = malloc(CHUNK);
	int fa = open(path, O_RDONLY | O_CLOEXEC), fb = open(s->drive, O_RDONLY | O_CLOEXEC), same = 0;
	struct stat st;

	if (a && b && fa >= 0 && fb >= 0 && fstat(fa, &st) == 0 && (uint64_t)st.st_size == s->region_len) {
		uint64_t o = 0;

		for (; o < s->region_len; o += CHUNK) {
			size_t n = s->region_len - o < CHUNK ? (size_t)(s->region_len - o) : CHUNK;

			if (pc_pread_all(fa, a, n, (off_t)o) || pc_pread_all(fb, b, n, (off_t)(s->region_off + o)) ||
			    memcmp(a, b, n))
				break;
		}
		same = o >= s->region_len;
	}
	free(a);
	free(b);
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return same;
}

static int vk_write_json(const char *path, json_object *o)
{
	const char *js = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	char *line = NULL;
	int rc = asprintf(&line, "%s\n", js) < 0 ? -ENOMEM : pc_write_file(path, line, strlen(line), 0);

	free(line);
	return rc;
}

/* Every session-N outside [S - keep, S] removed; a session-S left from before, too. */
static void vk_prune(const struct vk_session *s)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(s->root);

	if (!d)
		return;
	while ((de = readdir(d))) {
		uint64_t n;

		if (strncmp(de->d_name, "session-", 8) || pc_parse_u64(de->d_name + 8, 0, &n))
			continue;
		if ((n >= s->session || n + s->keep < s->session) &&
		    (size_t)snprintf(dir, sizeof(dir), "%s/%s", s->root, de->d_name) < sizeof(dir))
			pc_remove_flat_dir(dir);
	}
	closedir(d);
}

static json_object *vk_cycle_json(const struct vk_session *s, int finished)
{
	json_object *o = json_object_new_object(), *r = json_object_new_object();

	json_object_object_add(o, "format", json_object_new_int(1));
	json_object_object_add(o, "session", json_object_new_uint64(s->session));
	json_object_object_add(o, "finished", json_object_new_boolean(finished));
	json_object_object_add(o, "end", json_object_new_string(finished ? "cut" : "unknown"));
	json_object_object_add(o, "backend", json_object_new_string("qemu"));
	json_object_object_add(o, "keep_inputs", json_object_new_int64(s->keep));
	json_object_object_add(o, "drive", json_object_new_string(s->drive));
	json_object_object_add(r, "partition", json_object_new_string(VK_PARTITION));
	json_object_object_add(r, "offset", json_object_new_uint64(s->region_off));
	json_object_object_add(r, "bytes", json_object_new_uint64(s->region_len));
	json_object_object_add(o, "drive_region", r);
	return o;
}

int vk_begin(const struct vk_session *s, char *err, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX], prev[PATH_MAX];
	json_object *o;
	int rc;

	if ((rc = pc_mkdir_p(s->root, 0755)) < 0)
		return pc_fail(err, errlen, rc, "keep_inputs: cannot create %s: %s", s->root, strerror(-rc));
	vk_prune(s);
	if (vk_path(dir, sizeof(dir), s, s->session, NULL) || vk_path(path, sizeof(path), s, s->session, "base.img"))
		return pc_fail(err, errlen, -ENAMETOOLONG, "keep_inputs: %s: path too long", s->root);
	if (mkdir(dir, 0755) < 0)
		return pc_fail(err, errlen, -errno, "keep_inputs: cannot create %s: %s", dir, strerror(errno));
	/* the last session's after.img when the drive still holds it (images are never written in
	 * place: a hard link saves a copy), else a copy */
	if (s->session < 2 || vk_path(prev, sizeof(prev), s, s->session - 1, "after.img") ||
	    !vk_same_region(s, prev) || link(prev, path) < 0)
		if ((rc = vk_copy_region(s, path, err, errlen)))
			return rc;
	vk_path(path, sizeof(path), s, s->session, "cycle.json");
	o = vk_cycle_json(s, 0);
	rc = o ? vk_write_json(path, o) : -ENOMEM;
	json_object_put(o);
	return rc ? pc_fail(err, errlen, rc, "keep_inputs: %s: %s", path, strerror(-rc)) : 0;
}

/* ---- the trace: each WRITE and SYNCHRONIZE CACHE, when issued and when completed ---- */

struct vk_cmd {
	uint64_t lba, n;	/* a WRITE's, in 512-byte blocks (scsi-hd's default logical block) */
	uint64_t issued, done;	/* trace line numbers (from 1); done 0: never completed */
	uint32_t tag;
	int sync, fua, used;	/* used: a log entry is its data */
};

struct vk_trace {
	struct vk_cmd *c;
	size_t n, cap;
	size_t *open;		/* commands issued and not completed (indexes into c) */
	size_t nopen;
};

/* "... scsi_req_dequeue target 0 lun 0 tag 12" */
static int vk_dequeue_tag(const char *line, uint32_t *tag)
{
	const char *s = strstr(line, "scsi_req_dequeue");
	char *end;
	unsigned long v;

	if (!s || !(s = strstr(s, " tag ")))
		return 0;
	errno = 0;
	v = strtoul(s + 5, &end, 10);
	if (errno || end == s + 5 || v > UINT32_MAX)
		return 0;
	*tag = (uint32_t)v;
	return 1;
}

static int vk_trace_line(struct vk_trace *t, const char *line, uint64_t lineno)
{
	unsigned char b[16];
	struct vk_cmd c = { .issued = lineno };
	int nb = vc_scsi_cdb(line, &c.tag, b);

	if (!nb) {
		uint32_t tag;

		if (!vk_dequeue_tag(line, &tag))
			return 0;
		for (size_t i = 0; i < t->nopen; i++)
			if (t->c[t->open[i]].tag == tag) {
				t->c[t->open[i]].done = lineno;
				t->open[i] = t->open[--t->nopen];
				break;
			}
		return 0;
	}
	c.sync = b[0] == 0x35 || b[0] == 0x91;	/* SYNCHRONIZE CACHE(10), (16) */
	if (!c.sync && !vc_scsi_write(b, nb, &c.lba, &c.n, &c.fua))
		return 0;
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 1024;
		struct vk_cmd *nc;
		size_t *no;

		if (ncap > VK_MAX_CMDS || !(nc = realloc(t->c, ncap * sizeof(*nc))))
			return -E2BIG;
		t->c = nc;
		if (!(no = realloc(t->open, ncap * sizeof(*no))))
			return -E2BIG;
		t->open = no;
		t->cap = ncap;
	}
	/* a tag is the command's until it completes: one still open under it never will */
	for (size_t i = 0; i < t->nopen; i++)
		if (t->c[t->open[i]].tag == c.tag) {
			t->open[i] = t->open[--t->nopen];
			break;
		}
	t->open[t->nopen++] = t->n;
	t->c[t->n++] = c;
	return 0;
}

static int vk_trace_read(const char *trace, off_t off, struct vk_trace *t, char *err, size_t errlen)
{
	char line[VK_LINE];
	uint64_t lineno = 0;
	int skipping = 0, rc = 0;
	FILE *f = fopen(trace, "re");

	if (!f)
		return pc_fail(err, errlen, -errno, "keep_inputs: trace %s: %s", trace, strerror(errno));
	if (fseeko(f, off, SEEK_SET) < 0) {
		rc = pc_fail(err, errlen, -errno, "keep_inputs: trace %s: seek: %s", trace, strerror(errno));
		fclose(f);
		return rc;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		int whole = len && line[len - 1] == '\n';

		lineno++;
		/* a line longer than any trace line is not one: skip all of it */
		if (skipping || !whole) {
			skipping = !whole;
			continue;
		}
		rc = vk_trace_line(t, line, lineno);
	}
	fclose(f);
	return rc ? pc_fail(err, errlen, rc, "keep_inputs: trace %s: more than %u SCSI writes and flushes in one "
			    "power-on", trace, VK_MAX_CMDS) : 0;
}

/* ---- the conversion ---- */

struct vk_item {
	uint64_t key;		/* the trace line it stands at */
	size_t entry;		/* the log entry (a write), or SIZE_MAX (a flush) */
	unsigned flags;
};

static int vk_item_cmp(const void *a, const void *b)
{
	const struct vk_item *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static int vk_idx_cmp(const void *a, const void *b, void *arg)
{
	const struct vk_cmd *cmds = arg, *x = &cmds[*(const size_t *)a], *y = &cmds[*(const size_t *)b];

	if (x->lba != y->lba)
		return x->lba < y->lba ? -1 : 1;
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return x->issued < y->issued ? -1 : x->issued > y->issued;
}

/* The command whose data a log write is: the first issued not yet matched with the same blocks. */
static struct vk_cmd *vk_match(struct vk_trace *t, const size_t *by, size_t nby, uint64_t lba, uint64_t n)
{
	size_t lo = 0, hi = nby;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct vk_cmd *c = &t->c[by[mid]];

		if (c->lba < lba || (c->lba == lba && c->n < n))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < nby && t->c[by[lo]].lba == lba && t->c[by[lo]].n == n; lo++)
		if (!t->c[by[lo]].used) {
			t->c[by[lo]].used = 1;
			return &t->c[by[lo]];
		}
	return NULL;
}

struct vk_counts {
	uint64_t entries, writes, fua_writes, flushes, bytes;
	uint64_t in_flight, unmatched, outside, unlogged, lost;
	uint32_t cycles[VK_MAX_CYCLES], ncycles;
	int cycles_more;
};

static void vk_note_cycle(struct vk_counts *k, const unsigned char *sect)
{
	uint32_t cy, i;

	if (pc_get32(sect + PC_OFF_MAGIC) != PC_REC_MAGIC)
		return;
	cy = pc_get32(sect + PC_OFF_CYCLE);
	for (i = 0; i < k->ncycles && k->cycles[i] != cy; i++)
		;
	if (i < k->ncycles)
		return;
	if (k->ncycles < VK_MAX_CYCLES)
		k->cycles[k->ncycles++] = cy;
	else
		k->cycles_more = 1;
}

/* The items in order into out (a dm-log-writes log), region-relative. */
static int vk_write_log(int lfd, const struct wlog_entry *e, const struct vk_item *it, size_t nit,
			const struct vk_session *s, int out, struct vk_counts *k)
{
	unsigned char h[VK_SECT], *buf = NULL;
	size_t buflen = 0;
	uint64_t off = VK_SECT;
	int rc = 0;

	for (size_t i = 0; i < nit && !rc; i++) {
		const struct wlog_entry *w = it[i].entry == SIZE_MAX ? NULL : &e[it[i].entry];
		size_t bytes = w ? (size_t)w->nsect * VK_SECT : 0;

		memset(h, 0, sizeof(h));
		wlog_hdr_put(h, &(struct wlog_hdr){ .sector = w ? w->sector - s->region_off / VK_SECT : 0,
						    .nsect = w ? w->nsect : 0, .flags = it[i].flags, .data_len = bytes });
		if (bytes > buflen) {
			unsigned char *nb = realloc(buf, bytes);

			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			buf = nb;
			buflen = bytes;
		}
		if (w && pc_pread_all(lfd, buf, bytes, w->data))
			rc = -EIO;
		if (!rc && (pc_pwrite_all(out, h, sizeof(h), (off_t)off) ||
			    (bytes && pc_pwrite_all(out, buf, bytes, (off_t)(off + VK_SECT)))))
			rc = -EIO;
		off += VK_SECT + bytes;
		k->entries++;
		if (!w) {
			k->flushes++;
			continue;
		}
		k->writes++;
		k->fua_writes += (it[i].flags & WLOG_FUA) != 0;
		vk_note_cycle(k, buf);
	}
	free(buf);
	k->bytes = off;
	memset(h, 0, sizeof(h));
	wlog_super_put(h, k->entries, VK_SECT);
	return rc ? rc : pc_pwrite_all(out, h, sizeof(h), 0) ? -EIO : 0;
}

static int vk_in_region(const struct wlog_entry *w, uint64_t r0, uint64_t r1)
{
	return w->sector >= r0 && w->sector <= r1 && w->nsect <= r1 - w->sector;
}

/* The log's writes and the traced commands, in completion order (vckeep.h). */
static int vk_order(struct vk_trace *t, const struct wlog_entry *e, size_t ne, const struct vk_session *s,
		    struct vk_item **out, size_t *nout, struct vk_counts *k)
{
	size_t *by = malloc((t->n ? t->n : 1) * sizeof(*by)), nby = 0, nit = 0;
	struct vk_item *it = malloc((ne + t->n + 1) * sizeof(*it));
	char *placed = calloc(ne + 1, 1);
	uint64_t r0 = s->region_off / VK_SECT, r1 = r0 + s->region_len / VK_SECT;
	const unsigned skip = WLOG_FLUSH | WLOG_DISCARD | WLOG_MARK;

	if (!by || !it || !placed) {
		free(by);
		free(it);
		free(placed);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n; i++)
		if (!t->c[i].sync)
			by[nby++] = i;
		else if (t->c[i].done)	/* a flush stands where it was issued */
			it[nit++] = (struct vk_item){ t->c[i].issued, SIZE_MAX, WLOG_FLUSH };
	qsort_r(by, nby, sizeof(*by), vk_idx_cmp, t->c);
	for (size_t i = 0; i < ne; i++) {
		struct vk_cmd *c;

		if (e[i].flags & skip)
			continue;
		c = vk_match(t, by, nby, e[i].sector, e[i].nsect);
		if (!vk_in_region(&e[i], r0, r1)) {
			k->outside++;	/* not the region's: the agent never writes there */
			placed[i] = 1;
		} else if (c && c->done) {	/* a write stands where its command completed */
			it[nit++] = (struct vk_item){ c->done, i, c->fua ? WLOG_FUA : 0 };
			placed[i] = 1;
		} else if (c) {
			k->in_flight++;
		} else {
			k->unmatched++;
		}
	}
	qsort(it, nit, sizeof(*it), vk_item_cmp);
	/* then the writes that reached the image and never completed: volatile, in log order */
	for (size_t i = 0; i < ne; i++)
		if (!(e[i].flags & skip) && !placed[i])
			it[nit++] = (struct vk_item){ UINT64_MAX, i, 0 };
	/* the WRITEs the disk completed with no data in the log (an error), and those issued
	 * and neither completed nor logged: their bytes are nowhere, so not in the log */
	for (size_t i = 0; i < t->n; i++) {
		if (t->c[i].sync || t->c[i].used)
			continue;
		if (t->c[i].done)
			k->lost++;
		else
			k->unlogged++;
	}
	free(by);
	free(placed);
	*out = it;
	*nout = nit;
	return 0;
}

static json_object *vk_u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

int vk_finish(const struct vk_session *s, const char *log, const char *trace, off_t trace_off, const char *profile,
	      char *err, size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	struct vk_trace t = { 0 };
	struct wlog_entry *e = NULL;
	struct vk_item *it = NULL;
	struct vk_counts k;
	size_t ne = 0, nit = 0;
	uint32_t ss = VK_SECT;
	json_object *o = NULL, *a;
	int lfd = -1, out = -1, rc;
	struct stat st;

	memset(&k, 0, sizeof(k));
	if (vk_path(path, sizeof(path), s, s->session, "base.img") || stat(path, &st) < 0)
		return 0;	/* never begun (keep_inputs off at that power-on) */
	lfd = open(log, O_RDONLY | O_CLOEXEC);
	if (lfd < 0)
		return pc_fail(err, errlen, -errno, "keep_inputs: log %s: %s", log, strerror(errno));
	rc = wlog_read(lfd, log, &ss, &e, &ne, err, errlen);
	if (!rc && ss != VK_SECT)
		rc = pc_fail(err, errlen, -EPROTO, "keep_inputs: log %s: sector size %" PRIu32 ", not 512", log, ss);
	if (!rc)
		rc = vk_trace_read(trace, trace_off, &t, err, errlen);
	if (!rc && (rc = vk_order(&t, e, ne, s, &it, &nit, &k)))
		pc_fail(err, errlen, rc, "out of memory");
	if (rc)
		goto out;
	vk_path(path, sizeof(path), s, s->session, "writes.log");
	out = pc_tmp_open(path, tmp, sizeof(tmp));
	if (out < 0) {
		rc = pc_fail(err, errlen, out, "keep_inputs: %s: %s", path, strerror(-out));
		goto out;
	}
	rc = vk_write_log(lfd, e, it, nit, s, out, &k);
	rc = pc_tmp_commit(out, tmp, path, rc, 0);
	if (rc) {
		pc_fail(err, errlen, rc, "keep_inputs: writing %s: %s", path, strerror(-rc));
		goto out;
	}
	vk_path(path, sizeof(path), s, s->session, "after.img");
	if ((rc = vk_copy_region(s, path, err, errlen)))
		goto out;
	o = vk_cycle_json(s, 1);
	a = json_object_new_array();
	for (uint32_t i = 0; i < k.ncycles; i++)
		json_object_array_add(a, json_object_new_int64(k.cycles[i]));
	json_object_object_add(o, "cycles", a);
	if (k.cycles_more)
		json_object_object_add(o, "cycles_more", json_object_new_boolean(1));
	json_object_object_add(o, "profile", json_object_new_string(profile));
	json_object_object_add(o, "writes", vk_u64(k.writes));
	json_object_object_add(o, "fua_writes", vk_u64(k.fua_writes));
	json_object_object_add(o, "flushes", vk_u64(k.flushes));
	json_object_object_add(o, "log_entries", vk_u64(k.entries));
	json_object_object_add(o, "log_bytes", vk_u64(k.bytes));
	json_object_object_add(o, "trace_commands", vk_u64(t.n));
	/* logged, not completed: in the log as plain writes after everything else */
	json_object_object_add(o, "in_flight_writes", vk_u64(k.in_flight));
	/* issued, neither logged nor completed: their bytes never reached the image */
	json_object_object_add(o, "unlogged_writes", vk_u64(k.unlogged));
	json_object_object_add(o, "unmatched_writes", vk_u64(k.unmatched));
	json_object_object_add(o, "completed_unlogged_writes", vk_u64(k.lost));
	json_object_object_add(o, "outside_writes", vk_u64(k.outside));
	json_object_object_add(o, "in_flight", NULL);
	vk_path(path, sizeof(path), s, s->session, "cycle.json");
	if ((rc = vk_write_json(path, o)))
		pc_fail(err, errlen, rc, "keep_inputs: %s: %s", path, strerror(-rc));
out:
	json_object_put(o);
	free(t.c);
	free(t.open);
	free(e);
	free(it);
	close(lfd);
	return rc;
}

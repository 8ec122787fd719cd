/*
 * vcache.c - rebuild the virtual board's disk at the cut from QEMU's
 * blklogwrites log, as a device with a volatile write cache would leave it.
 * See vcache.h.
 */
#include "vboard/vcache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"

#define VC_TRACE_LINE		512

static const char *const vc_profiles[] = VC_PROFILES;

const char *vc_profile_name(enum vc_profile p)
{
	return (size_t)p < PC_ARRAY_SIZE(vc_profiles) ? vc_profiles[p] : "?";
}

int vc_profile_parse(const char *name)
{
	for (size_t i = 0; name && i < PC_ARRAY_SIZE(vc_profiles); i++)
		if (strcmp(name, vc_profiles[i]) == 0)
			return (int)i;
	return -1;
}

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* ---- the trace: which SCSI WRITEs carried FUA ---- */

struct vc_cmd {
	uint64_t lba, n;	/* in 512-byte blocks (scsi-hd's default logical block) */
	uint64_t idx;		/* issue order */
	int fua;
};

static int vc_cmd_cmp(const void *a, const void *b)
{
	const struct vc_cmd *x = a, *y = b;

	if (x->lba != y->lba)
		return x->lba < y->lba ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* "... scsi_disk_new_request Command: lun=0 tag=0x1 data= 0x2a 0x08 0x00 ..." */
int vc_scsi_cdb(const char *line, uint32_t *tag, unsigned char cdb[16])
{
	const char *s = strstr(line, "scsi_disk_new_request");
	const char *t = s ? strstr(s, "tag=0x") : NULL;
	int nb = 0;

	if (!s || !(s = strstr(s, "data=")))
		return 0;
	*tag = t && t < s ? (uint32_t)strtoul(t + 6, NULL, 16) : 0;
	s += 5;
	while (nb < 16) {
		char *end;
		unsigned long v;

		while (*s == ' ')
			s++;
		if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
			break;
		errno = 0;
		v = strtoul(s, &end, 16);
		if (errno || end == s + 2 || v > 0xff)
			break;
		cdb[nb++] = (unsigned char)v;
		s = end;
	}
	return nb;
}

int vc_scsi_write(const unsigned char *b, int nb, uint64_t *lba, uint64_t *n, int *fua)
{
	if (nb >= 10 && b[0] == 0x2a) {		/* WRITE(10) */
		*lba = (uint64_t)b[2] << 24 | b[3] << 16 | b[4] << 8 | b[5];
		*n = (uint64_t)b[7] << 8 | b[8];
	} else if (nb >= 16 && b[0] == 0x8a) {	/* WRITE(16) */
		*lba = 0;
		for (int i = 2; i < 10; i++)
			*lba = *lba << 8 | b[i];
		*n = (uint64_t)b[10] << 24 | (uint64_t)b[11] << 16 | (uint64_t)b[12] << 8 | b[13];
	} else {
		return 0;
	}
	*fua = (b[1] & 0x08) != 0;
	return 1;
}

static int vc_trace_line(const char *line, struct vc_cmd *c)
{
	unsigned char b[16];
	uint32_t tag;

	return vc_scsi_write(b, vc_scsi_cdb(line, &tag, b), &c->lba, &c->n, &c->fua);
}

/*
 * QEMU's SD/MMC card model (the eMMC board), one line per event:
 *   "... sdcard_normal_command eMMC SET_BLOCK_COUNT/ CMD23 arg 0x80000001 (state transfer)"
 *   "... sdcard_write_block addr 0x100000 size 0x200"
 * CMD23's bit 31 makes the next CMD25 a reliable write (its block count in
 * bits 0-15); each block the card writes is traced with its byte address in
 * the image, so no card addressing mode (byte or sector) is guessed. The
 * state carries the command in progress from line to line.
 */
struct vc_mmc_state {
	int rel_next;		/* a CMD23 with the reliable-write bit came last */
	int rel;		/* the write in progress is a reliable write */
};

static int vc_mmc_trace_line(const char *line, struct vc_mmc_state *ms, struct vc_cmd *c)
{
	const char *s;
	unsigned long long v;
	char *end;

	if ((s = strstr(line, "sdcard_normal_command"))) {
		unsigned cmd;
		unsigned long arg;

		if (!(s = strstr(s, "/ CMD")))
			return 0;
		s += 5;
		errno = 0;
		cmd = (unsigned)strtoul(s, &end, 10);
		if (errno || end == s || strncmp(end, " arg 0x", 7) != 0)
			return 0;
		s = end + 7;
		arg = strtoul(s, &end, 16);
		if (errno || end == s || arg > 0xffffffffUL)
			return 0;
		if (cmd == 23) {
			ms->rel_next = (arg & 0x80000000UL) != 0;
		} else if (cmd == 24 || cmd == 25) {
			/* CMD23 precedes only a multiple-block command */
			ms->rel = cmd == 25 && ms->rel_next;
			ms->rel_next = 0;
		} else if (cmd != 13) {	/* a status poll leaves both as they are */
			ms->rel_next = 0;
		}
		return 0;
	}
	if (!(s = strstr(line, "sdcard_write_block addr 0x")))
		return 0;
	s += strlen("sdcard_write_block addr 0x");
	errno = 0;
	v = strtoull(s, &end, 16);
	if (errno || end == s || strncmp(end, " size 0x", 8) != 0 || v % 512 || v / 512 >= (1ULL << 40))
		return 0;
	c->lba = v / 512;
	s = end + 8;
	v = strtoull(s, &end, 16);
	if (errno || end == s || v == 0 || v % 512 || v > (1u << 20))
		return 0;
	c->n = v / 512;
	c->fua = ms->rel;
	return 1;
}

static int vc_trace_read(const struct vc_params *vp, struct vc_cmd **out, size_t *nout, char *err, size_t errlen)
{
	char line[VC_TRACE_LINE];
	struct vc_mmc_state ms = { 0, 0 };
	struct vc_cmd *cmds = NULL;
	size_t n = 0, cap = 0;
	int skipping = 0;
	FILE *f;

	*out = NULL;
	*nout = 0;
	if (!vp->trace)
		return 0;
	f = fopen(vp->trace, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		return pc_fail(err, errlen, -errno, "trace %s: %s", vp->trace, strerror(errno));
	}
	if (fseeko(f, vp->trace_off, SEEK_SET) < 0) {
		int e = errno;

		fclose(f);
		return pc_fail(err, errlen, -e, "trace %s: seek to %lld: %s", vp->trace, (long long)vp->trace_off,
			       strerror(e));
	}
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		int whole = len && line[len - 1] == '\n';
		struct vc_cmd c;

		/* a line longer than any trace line is not one: skip all of it */
		if (skipping || !whole) {
			skipping = !whole;
			if (!whole && !feof(f))
				continue;
		}
		if (vp->trace_mmc ? !vc_mmc_trace_line(line, &ms, &c) : !vc_trace_line(line, &c))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 1024;
			struct vc_cmd *t;

			if (ncap > VC_MAX_ENTRIES || !(t = realloc(cmds, ncap * sizeof(*t)))) {
				free(cmds);
				fclose(f);
				return pc_fail(err, errlen, -E2BIG, "trace %s: more than %u %s in one "
					       "power-on", vp->trace, VC_MAX_ENTRIES,
					       vp->trace_mmc ? "MMC block writes" : "SCSI writes");
			}
			cmds = t;
			cap = ncap;
		}
		c.idx = n;
		cmds[n++] = c;
	}
	fclose(f);
	if (n)
		qsort(cmds, n, sizeof(*cmds), vc_cmd_cmp);
	*out = cmds;
	*nout = n;
	return 0;
}

/* The FUA bit of the last SCSI WRITE that started at or before lba and covers [lba, lba+n). */
static int vc_is_fua(const struct vc_cmd *cmds, size_t ncmds, uint64_t lba, uint64_t n)
{
	size_t lo = 0, hi = ncmds;

	while (lo < hi) {	/* the first command with cmds.lba > lba */
		size_t mid = lo + (hi - lo) / 2;

		if (cmds[mid].lba <= lba)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	/* cmds[lo-1] is the latest issued with the greatest start <= lba */
	return cmds[lo - 1].lba + cmds[lo - 1].n >= lba + n && cmds[lo - 1].fua;
}

/* ---- the log ---- */

/* ---- the rebuild ---- */

enum vc_fate { VC_KEEP, VC_DROP, VC_TEAR };

static int vc_apply(int lfd, int mfd, const struct wlog_entry *w, uint32_t ss, off_t media_size, uint64_t tear_bits,
		    unsigned char **buf, size_t *buflen, enum vc_fate fate, char *err, size_t errlen)
{
	size_t bytes = (size_t)w->nsect * ss;

	if (w->sector > (uint64_t)media_size / ss || w->nsect > (uint64_t)media_size / ss - w->sector)
		return pc_fail(err, errlen, -ERANGE, "the log writes sectors %" PRIu64 "+%" PRIu64
			       " past the end of the image (%lld bytes)", w->sector, w->nsect,
			       (long long)media_size);
	if (bytes > *buflen) {
		unsigned char *t = realloc(*buf, bytes);

		if (!t)
			return pc_fail(err, errlen, -ENOMEM, "out of memory");
		*buf = t;
		*buflen = bytes;
	}
	if (pread(lfd, *buf, bytes, w->data) != (ssize_t)bytes)
		return pc_fail(err, errlen, -EIO, "cannot read a write's data from the log");
	for (uint64_t i = 0; i < w->nsect;) {
		uint64_t j = i;

		/* a run of sectors kept: whole for VC_KEEP, by bit for VC_TEAR */
		if (fate == VC_TEAR && !((tear_bits >> (i % 64)) & 1)) {
			i++;
			continue;
		}
		while (j < w->nsect && (fate == VC_KEEP || ((tear_bits >> (j % 64)) & 1)))
			j++;
		if (pc_pwrite_all(mfd, *buf + i * ss, (size_t)(j - i) * ss, (off_t)((w->sector + i) * ss)))
			return pc_fail(err, errlen, -EIO, "cannot write the image: %s", strerror(errno));
		i = j;
	}
	return 0;
}

static int vc_record(const struct vc_params *vp, const struct vc_stats *st, json_object *dropped,
		     json_object *torn, char *err, size_t errlen)
{
	json_object *o = json_object_new_object();
	const char *s;
	int fd, rc = 0;

	if (!o)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	json_object_object_add(o, "power_on", json_object_new_uint64(vp->power_on));
	json_object_object_add(o, "profile", json_object_new_string(vc_profile_name(vp->profile)));
	json_object_object_add(o, "entries", json_object_new_uint64(st->entries));
	json_object_object_add(o, "writes", json_object_new_uint64(st->writes));
	json_object_object_add(o, "flushes", json_object_new_uint64(st->flushes));
	json_object_object_add(o, "fua_writes", json_object_new_uint64(st->fua_writes));
	json_object_object_add(o, "trace_writes", json_object_new_uint64(st->trace_writes));
	json_object_object_add(o, "durable", json_object_new_uint64(st->durable));
	json_object_object_add(o, "kept", json_object_new_uint64(st->kept));
	json_object_object_add(o, "dropped", json_object_new_uint64(st->dropped));
	json_object_object_add(o, "torn", json_object_new_uint64(st->torn));
	/* each write not kept whole: [sector, sectors] and, torn, which sectors were */
	json_object_object_add(o, "lost", json_object_get(dropped));
	json_object_object_add(o, "tears", json_object_get(torn));
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	fd = open(vp->record, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0 || pc_write_all(fd, s, strlen(s)) || pc_write_all(fd, "\n", 1) || fsync(fd))
		rc = pc_fail(err, errlen, -EIO, "cannot append to %s: %s", vp->record, strerror(errno));
	if (fd >= 0)
		close(fd);
	json_object_put(o);
	return rc;
}

/* Which writes carried FUA (flag or trace), the counts; returns the entries the last flush covers. */
static size_t vc_classify(struct wlog_entry *e, size_t ne, const struct vc_cmd *cmds, size_t ncmds, uint32_t ss,
			  struct vc_stats *st)
{
	size_t last_flush = 0;

	for (size_t i = 0; i < ne; i++) {
		if (e[i].flags & WLOG_FLUSH) {
			st->flushes++;
			last_flush = i + 1;
		} else if (e[i].flags & WLOG_DISCARD) {
			st->discards++;
		} else if (!(e[i].flags & WLOG_MARK)) {
			st->writes++;
			e[i].fua = (e[i].flags & WLOG_FUA) ||
				   vc_is_fua(cmds, ncmds, e[i].sector * (ss / 512), e[i].nsect * (ss / 512));
			st->fua_writes += (uint64_t)e[i].fua;
		}
	}
	return last_flush;
}

/* What the cache does with write i: kept (durable, or 40%), lost (30%) or torn (30%: *bits, 1 kept). */
static enum vc_fate vc_fate_of(const struct vc_params *vp, const struct wlog_entry *w, size_t i, int durable,
			       uint64_t *bits)
{
	uint64_t r = splitmix64(vp->seed ^ splitmix64(vp->power_on) ^ splitmix64(i + 0x51ed270b27b6f9c1ULL));
	uint64_t all = w->nsect >= 64 ? ~0ULL : (1ULL << w->nsect) - 1;

	*bits = 0;
	if (durable || r % 10 < 4)
		return VC_KEEP;
	if (r % 10 < 7)
		return VC_DROP;
	*bits = splitmix64(r);
	/* a tear keeps some sectors and loses others */
	if (w->nsect == 1)
		return *bits & 1 ? VC_KEEP : VC_DROP;
	if (w->nsect <= 64 && (*bits & all) == 0)
		*bits |= 1;
	else if (w->nsect <= 64 && (~*bits & all) == 0)
		*bits &= ~1ULL;
	return VC_TEAR;
}

/* A write not kept whole, into the record: [sector, sectors] and, torn, the sectors kept ('1') and
 * lost ('0') in order (64 at most: the pattern repeats past that). */
static void vc_note_lost(json_object *dropped, json_object *torn, const struct wlog_entry *w, uint32_t ss,
			 enum vc_fate fate, uint64_t bits)
{
	json_object *a;
	char mask[65];
	uint64_t m = w->nsect < 64 ? w->nsect : 64;

	if (fate == VC_KEEP || json_object_array_length(dropped) + json_object_array_length(torn) >= VC_RECORD_MAX ||
	    !(a = json_object_new_array()))
		return;
	json_object_array_add(a, json_object_new_uint64(w->sector * (ss / 512)));
	json_object_array_add(a, json_object_new_uint64(w->nsect * (ss / 512)));
	if (fate == VC_DROP) {
		json_object_array_add(dropped, a);
		return;
	}
	for (uint64_t k = 0; k < m; k++)
		mask[k] = (bits >> k & 1) ? '1' : '0';
	mask[m] = 0;
	json_object_array_add(a, json_object_new_string(mask));
	json_object_array_add(torn, a);
}

int vc_rebuild(const struct vc_params *vp, struct vc_stats *st, char *err, size_t errlen)
{
	struct wlog_entry *e = NULL;
	struct vc_cmd *cmds = NULL;
	size_t ne = 0, ncmds = 0, last_flush, buflen = 0;
	json_object *dropped = json_object_new_array(), *torn = json_object_new_array();
	unsigned char *buf = NULL;
	int lfd, mfd = -1, rc;
	struct stat ms;
	uint32_t ss = 512;

	memset(st, 0, sizeof(*st));
	lfd = open(vp->log, O_RDONLY | O_CLOEXEC);
	if (lfd < 0) {
		rc = pc_fail(err, errlen, -errno, "log %s: %s", vp->log, strerror(errno));
		goto out;
	}
	rc = wlog_read(lfd, vp->log, &ss, &e, &ne, err, errlen);
	if (!rc)
		rc = vc_trace_read(vp, &cmds, &ncmds, err, errlen);
	if (!rc && (!dropped || !torn))
		rc = pc_fail(err, errlen, -ENOMEM, "out of memory");
	if (rc)
		goto out;
	mfd = open(vp->media, O_WRONLY | O_CLOEXEC);
	if (mfd < 0 || fstat(mfd, &ms) < 0) {
		rc = pc_fail(err, errlen, -errno, "image %s: %s", vp->media, strerror(errno));
		goto out;
	}
	st->entries = ne;
	st->trace_writes = ncmds;
	/* a completed flush makes every write logged before it durable */
	last_flush = vc_classify(e, ne, cmds, ncmds, ss, st);
	for (size_t i = 0; i < ne && !rc; i++) {
		const struct wlog_entry *w = &e[i];
		int durable = vp->profile == VC_HONEST ? (i < last_flush || w->fua) :
			      vp->profile == VC_LYING_FLUSH ? w->fua : 0;
		enum vc_fate fate;
		uint64_t bits;

		if (w->flags & (WLOG_FLUSH | WLOG_DISCARD | WLOG_MARK))
			continue;
		fate = vc_fate_of(vp, w, i, durable, &bits);
		st->durable += (uint64_t)durable;
		st->kept += fate == VC_KEEP;
		st->dropped += fate == VC_DROP;
		st->torn += fate == VC_TEAR;
		vc_note_lost(dropped, torn, w, ss, fate, bits);
		if (fate != VC_DROP)
			rc = vc_apply(lfd, mfd, w, ss, ms.st_size, bits, &buf, &buflen, fate, err, errlen);
	}
	if (!rc && fsync(mfd) < 0)
		rc = pc_fail(err, errlen, -errno, "fsync %s: %s", vp->media, strerror(errno));
	if (!rc && vp->record)
		rc = vc_record(vp, st, dropped, torn, err, errlen);
out:
	json_object_put(dropped);
	json_object_put(torn);
	free(buf);
	free(e);
	free(cmds);
	if (lfd >= 0)
		close(lfd);
	if (mfd >= 0)
		close(mfd);
	return rc;
}

/*
 * inputcheck.c - hold the inputs a sim board kept (keep-inputs, docs/sim.md
 * "Inputs kept per power-on") against what an honest card must have left.
 *
 *   inputcheck INPUTS_DIR      (<media>.inputs: every finished session-S in it)
 *
 * For each finished session folder:
 *   1. writes.log parses strictly (superblock, whole entries to the end, flags
 *      FLUSH/FUA only or a mark of one sector, the agent's ACK, nr_entries
 *      exact) and its counts are cycle.json's;
 *   2. vboard/vcache.c's reader (vc_rebuild, profile honest, on a copy of
 *      base.img) takes the same entries, writes, flushes and FUA writes, and
 *      rebuilds every sector settled by a durable write as the replay does;
 *   3. the invariant: replay every write onto base.img in log order. A
 *      sector whose last write is durable (FUA, or a later FLUSH entry), or
 *      that no write touched, and that the request in flight did not touch,
 *      reads in after.img as in the replay ("settled"); every other sector
 *      holds its base bytes, the bytes of one of the writes to it, or of the
 *      write in flight, regenerated from the region's seed ("volatile").
 * One JSON line per session: {"session","entries","writes","fua_writes",
 * "flushes","settled","volatile","in_flight","vc_durable","settled_bad",
 * "volatile_bad","vc_bad"}. Exit 0 when every session holds, 1 when one does
 * not (a lying card), 2 on an error (a missing or malformed file, no
 * finished session).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/bytes.h"
#include "common/json.h"
#include "common/record.h"
#include "common/util.h"
#include "common/wlog.h"
#include "vboard/vcache.h"

#define SECT		512u
#define MAX_IMAGE	(1ull << 30)	/* what this test tool holds in memory */
#define MAX_ENTRIES	(1u << 20)

struct ent {
	uint64_t sector, n, flags;
	off_t data;
	int durable;
};

static int die(const char *what, const char *path)
{
	fprintf(stderr, "inputcheck: %s: %s\n", path, what);
	return 2;
}

/* A count from cycle.json or the inputs' note (UINT64_MAX when absent), on common/json.h's. */
static uint64_t ju64(json_object *o, const char *k)
{
	return (uint64_t)pc_jint_or(o, k, -1);
}

static uint8_t *load(const char *path, uint64_t *len)
{
	struct stat st;
	uint8_t *b;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= 0 || (uint64_t)st.st_size > MAX_IMAGE ||
	    st.st_size % SECT) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	b = malloc((size_t)st.st_size);
	if (b && pc_pread_all(fd, b, (size_t)st.st_size, 0)) {
		free(b);
		b = NULL;
	}
	close(fd);
	*len = (uint64_t)st.st_size;
	return b;
}

/* The log, strictly. -1 on anything malformed. */
static long log_parse(const uint8_t *log, uint64_t len, struct ent *e, uint64_t *nr)
{
	struct wlog_super sb;
	uint64_t off = SECT;
	long n = 0;

	if (len < SECT)
		return -1;
	wlog_super_get(log, &sb);
	if (sb.magic != WLOG_MAGIC || sb.version != WLOG_VERSION || sb.sectsize != SECT)
		return -1;
	*nr = sb.entries;
	while (off < len) {
		struct wlog_hdr h;
		uint64_t bytes;

		if (n == MAX_ENTRIES || len - off < SECT)
			return -1;
		wlog_hdr_get(log + off, &h);
		e[n].sector = h.sector;
		e[n].n = h.nsect;
		e[n].flags = h.flags;
		bytes = h.data_len;
		if (e[n].flags == WLOG_MARK && e[n].n == 0 && bytes <= SECT - WLOG_HDR_BYTES) {
			/* a mark (the agent's ACK): its text inline, one sector */
			e[n].data = (off_t)(off + SECT);
			off += SECT;
			n++;
			continue;
		}
		if ((e[n].flags & ~(uint64_t)(WLOG_FLUSH | WLOG_FUA)) || bytes != e[n].n * SECT ||
		    bytes > len - off - SECT || ((e[n].flags & WLOG_FLUSH) ? e[n].n != 0 : e[n].n == 0))
			return -1;
		e[n].data = (off_t)(off + SECT);
		off += SECT + bytes;
		n++;
	}
	return n;
}

/* The log's writes, FUA writes, flushes and marks counted, each write's durability set (FUA, or a
 * flush after it); -1 when a write is past the image's sectors. */
static int log_counts(struct ent *e, long n, uint64_t sectors, uint64_t *writes, uint64_t *fua, uint64_t *flushes,
		      uint64_t *marks)
{
	long last_flush = -1;

	for (long i = 0; i < n; i++) {
		if (e[i].flags & WLOG_MARK) {
			(*marks)++;
			continue;
		}
		if (e[i].flags & WLOG_FLUSH) {
			(*flushes)++;
			last_flush = i;
			continue;
		}
		(*writes)++;
		*fua += (e[i].flags & WLOG_FUA) != 0;
		if (e[i].sector > sectors || e[i].n > sectors - e[i].sector)
			return -1;
	}
	for (long i = 0; i < n; i++)
		e[i].durable = !(e[i].flags & (WLOG_FLUSH | WLOG_MARK)) && ((e[i].flags & WLOG_FUA) || i < last_flush);
	return 0;
}

static int check_session(const char *dir, int *bad)
{
	char p[PATH_MAX + 32], vimg[PATH_MAX + 32], verr[512];
	uint8_t *base = NULL, *after = NULL, *log = NULL, *rep = NULL, *vc = NULL, *ifd = NULL;
	uint8_t *settled = NULL, *touched = NULL;
	uint64_t blen, alen, llen, vlen, nr, sectors, if_lba = 0, if_n = 0;
	uint64_t nsettled = 0, nvol = 0, sbad = 0, vbad = 0, vcbad = 0, writes = 0, fua = 0, flushes = 0, marks = 0;
	struct ent *e = NULL;
	json_object *cj = NULL, *inf = NULL, *v;
	struct vc_params vp = { 0 };
	struct vc_stats vs;
	long n;
	int rc = 2;

	snprintf(p, sizeof(p), "%s/cycle.json", dir);
	cj = json_object_from_file(p);
	if (!cj || !json_object_object_get_ex(cj, "finished", &v) || !json_object_get_boolean(v)) {
		json_object_put(cj);
		return -1;	/* not finished: skipped */
	}
	snprintf(p, sizeof(p), "%s/base.img", dir);
	if (!(base = load(p, &blen))) {
		rc = die("cannot read the image (or larger than 1 GiB)", p);
		goto out;
	}
	snprintf(p, sizeof(p), "%s/after.img", dir);
	if (!(after = load(p, &alen)) || alen != blen) {
		rc = die("cannot read the image, or not the size of base.img", p);
		goto out;
	}
	snprintf(p, sizeof(p), "%s/writes.log", dir);
	if (!(log = load(p, &llen)) || !(e = calloc(MAX_ENTRIES, sizeof(*e)))) {
		rc = die("cannot read the log", p);
		goto out;
	}
	n = log_parse(log, llen, e, &nr);
	if (n < 0 || (uint64_t)n != nr) {
		rc = die("not a whole dm-log-writes log with an exact nr_entries", p);
		goto out;
	}
	sectors = blen / SECT;
	if (log_counts(e, n, sectors, &writes, &fua, &flushes, &marks)) {
		rc = die("a write past the end of the image", p);
		goto out;
	}
	if (ju64(cj, "writes") != writes || ju64(cj, "fua_writes") != fua || ju64(cj, "flushes") != flushes ||
	    ju64(cj, "marks") != marks || ju64(cj, "log_entries") != (uint64_t)n) {
		rc = die("cycle.json's counts are not the log's", dir);
		goto out;
	}
	/* 2. the virtual board's reader, on a copy of base.img */
	snprintf(vimg, sizeof(vimg), "%s/.inputcheck-vc.img", dir);
	{
		int fd = open(vimg, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || pc_pwrite_all(fd, base, blen, 0)) {
			if (fd >= 0)
				close(fd);
			rc = die("cannot write a scratch image", vimg);
			goto out;
		}
		close(fd);
	}
	vp.log = p;
	vp.media = vimg;
	vp.profile = VC_HONEST;
	vp.seed = 1;
	vp.power_on = ju64(cj, "session");
	if (vc_rebuild(&vp, &vs, verr, sizeof(verr))) {
		unlink(vimg);
		rc = die(verr, p);
		goto out;
	}
	vc = load(vimg, &vlen);
	unlink(vimg);
	if (!vc || vs.entries != (uint64_t)n || vs.writes != writes || vs.flushes != flushes ||
	    vs.fua_writes != fua) {
		fprintf(stderr, "inputcheck: %s: vcache read %" PRIu64 " entries, %" PRIu64 " writes, %" PRIu64
			" flushes, %" PRIu64 " FUA; the log has %ld, %" PRIu64 ", %" PRIu64 ", %" PRIu64 "\n", p,
			vs.entries, vs.writes, vs.flushes, vs.fua_writes, n, writes, flushes, fua);
		rc = 2;
		goto out;
	}
	/* 3. the replay; settled: last write durable (or none); in flight: any */
	rep = malloc(blen);
	settled = malloc(sectors);
	touched = calloc(sectors, 1);
	if (!rep || !settled || !touched) {
		rc = die("out of memory", dir);
		goto out;
	}
	memcpy(rep, base, blen);
	memset(settled, 1, sectors);
	for (long i = 0; i < n; i++) {
		if (e[i].flags & (WLOG_FLUSH | WLOG_MARK))
			continue;
		memcpy(rep + e[i].sector * SECT, log + e[i].data, e[i].n * SECT);
		memset(settled + e[i].sector, e[i].durable, e[i].n);
		memset(touched + e[i].sector, 1, e[i].n);
	}
	if (json_object_object_get_ex(cj, "in_flight", &inf) && inf &&
	    json_object_object_get_ex(inf, "op", &v) && !strcmp(json_object_get_string(v), "write")) {
		struct pc_geom g;
		char why[128];

		if_lba = ju64(inf, "lba");
		if_n = ju64(inf, "n");
		if (if_lba > sectors || if_n > sectors - if_lba) {
			rc = die("in_flight is past the end of the image", dir);
			goto out;
		}
		memset(settled + if_lba, 0, if_n);
		/* a record's bytes, from the region's seed (the superblock in base.img) */
		if (!(json_object_object_get_ex(inf, "raw", &v) && json_object_get_boolean(v)) &&
		    !pc_sb_decode(base, &g, why, sizeof(why)) && if_lba >= PC_SB_RESERVE_SECT &&
		    (if_lba - PC_SB_RESERVE_SECT) % pc_geom_spr(&g) == 0 && if_n % pc_geom_spr(&g) == 0 &&
		    (ifd = malloc(if_n * SECT))) {
			for (uint64_t k = 0; k < if_n; k += pc_geom_spr(&g))
				pc_record_build(ifd + k * SECT, &g,
						(uint32_t)((if_lba + k - PC_SB_RESERVE_SECT) / pc_geom_spr(&g)),
						ju64(inf, "seq"), (uint32_t)ju64(inf, "cycle"),
						(uint16_t)ju64(inf, "flags"));
		}
	}
	for (uint64_t x = 0; x < sectors; x++) {
		const uint8_t *a = after + x * SECT;
		int ok;

		if (settled[x]) {
			nsettled++;
			if (memcmp(a, rep + x * SECT, SECT)) {
				if (sbad++ < 5)
					fprintf(stderr, "inputcheck: %s: sector %" PRIu64 " is settled but after.img "
						"does not hold the replay's bytes\n", dir, x);
			}
			/* vcache keeps every durable write: its image agrees where the last write was durable */
			if (touched[x] && memcmp(vc + x * SECT, rep + x * SECT, SECT))
				vcbad++;
			continue;
		}
		nvol++;
		ok = !memcmp(a, base + x * SECT, SECT);
		for (long i = n - 1; i >= 0 && !ok; i--)
			if (!(e[i].flags & (WLOG_FLUSH | WLOG_MARK)) && x >= e[i].sector && x < e[i].sector + e[i].n)
				ok = !memcmp(a, log + e[i].data + (x - e[i].sector) * SECT, SECT);
		if (!ok && x >= if_lba && x < if_lba + if_n)
			ok = !ifd || !memcmp(a, ifd + (x - if_lba) * SECT, SECT);
		if (!ok && vbad++ < 5)
			fprintf(stderr, "inputcheck: %s: sector %" PRIu64 " holds bytes no write gave it\n", dir, x);
	}
	printf("{\"session\":%" PRIu64 ",\"entries\":%ld,\"writes\":%" PRIu64 ",\"fua_writes\":%" PRIu64
	       ",\"flushes\":%" PRIu64 ",\"settled\":%" PRIu64 ",\"volatile\":%" PRIu64 ",\"in_flight\":%s"
	       ",\"vc_durable\":%" PRIu64 ",\"settled_bad\":%" PRIu64 ",\"volatile_bad\":%" PRIu64
	       ",\"vc_bad\":%" PRIu64 "}\n", ju64(cj, "session"), n, writes, fua, flushes, nsettled, nvol,
	       inf ? "true" : "false", vs.durable, sbad, vbad, vcbad);
	*bad += sbad || vbad || vcbad;
	rc = 0;
out:
	free(base);
	free(after);
	free(log);
	free(rep);
	free(vc);
	free(ifd);
	free(settled);
	free(touched);
	free(e);
	json_object_put(cj);
	return rc;
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX + 300];
	struct dirent *de;
	int bad = 0, done = 0, rc = 0;
	DIR *d;

	if (argc != 2) {
		fprintf(stderr, "usage: inputcheck INPUTS_DIR (a sim media's .inputs folder)\n");
		return 2;
	}
	d = opendir(argv[1]);
	if (!d)
		return die(strerror(errno), argv[1]);
	while ((de = readdir(d)) && !rc) {
		int r;

		if (strncmp(de->d_name, "session-", 8))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", argv[1], de->d_name);
		r = check_session(dir, &bad);
		if (r > 0)
			rc = r;
		else if (r == 0)
			done++;
	}
	closedir(d);
	if (rc)
		return rc;
	if (!done)
		return die("no finished session folder", argv[1]);
	return bad ? 1 : 0;
}

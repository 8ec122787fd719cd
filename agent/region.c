/*
 * region.c - claim, open and scan a powercut region.
 */
#include "agent/region.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/proto.h"
#include "common/util.h"
#include "agent/blockdev.h"

#define ALIGN 4096
#define SCAN_CHUNK (1u << 20)

/*
 * Zeroed, page-aligned memory with every page mapped in at once (one system
 * call, MAP_POPULATE) rather than one page fault per page as the scan first
 * touches it: in a virtual machine each fault is a trip to the hypervisor,
 * and the scan's 2 MiB would be some 500 of them. Free with mem_unmap().
 */
static void *mem_map(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void mem_unmap(void *p, size_t len)
{
	if (p)
		munmap(p, len ? len : 1);
}

static void *abuf(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, ALIGN, len ? len : ALIGN))
		return NULL;
	return p;
}

static int dev_setup(struct region *r, const struct region_opts *o, int for_write,
		     char *err, size_t errlen)
{
	const char *path;
	const struct dev_ops *ops = dev_ops_for(o->spec, &path);
	int ret;

	memset(r, 0, sizeof(*r));
	r->dev.fd = -1;
	pc_strlcpy(r->spec, o->spec ? o->spec : "", sizeof(r->spec));
	if (ops->caps & DEV_CAP_RESOLVE) {
		ret = blockdev_resolve(path, r->path, sizeof(r->path), err, errlen);
		if (ret)
			return ret;
	} else {
		pc_strlcpy(r->path, path, sizeof(r->path));
	}
	if ((ops->caps & DEV_CAP_REGION_AT_0) && o->offset) {
		snprintf(err, errlen, "%s: a %s device's region starts at offset 0; drop --offset", r->path, ops->name);
		return -EINVAL;
	}
	r->dev.ops = ops;
	r->dev.o.path = r->path;
	r->dev.o.allow_whole_disk = o->allow_whole_disk;
	r->dev.o.sim = o->sim;
	ret = ops->open(&r->dev, for_write);
	if (ret) {
		snprintf(err, errlen, "%s", r->dev.err[0] ? r->dev.err : strerror(-ret));
		r->dev.ops = NULL;
		return ret;
	}
	if (o->offset % PC_SECTOR || o->length % PC_SECTOR) {
		snprintf(err, errlen, "%s: region offset and length must be multiples of 512", r->path);
		goto fail;
	}
	if (o->offset >= r->dev.size || (o->length && o->length > r->dev.size - o->offset)) {
		char hint[300] = "";
		struct pc_geom g;
		uint8_t *b = o->offset < r->dev.size ? abuf(ALIGN) : NULL;

		/* what was prepared there, if anything: the length to give */
		if (b && r->dev.ops->read(&r->dev, o->offset, b, ALIGN) == 0 &&
		    pc_sb_decode(b, &g, hint, sizeof(hint)) == 0 && g.region_bytes <= r->dev.size - o->offset)
			snprintf(hint, sizeof(hint), "; the region prepared at offset %" PRIu64 " is %" PRIu64 " bytes: "
				 "run with --length %" PRIu64 " or without --length (prepare would destroy it)",
				 o->offset, g.region_bytes, g.region_bytes);
		else
			snprintf(hint, sizeof(hint), "; give the --offset and --length the region was prepared with");
		free(b);
		snprintf(err, errlen, "%s: region [%" PRIu64 ", +%" PRIu64 ") lies past the device's end (%" PRIu64
			 " bytes)%s", r->path, o->offset, o->length, r->dev.size, hint);
		goto fail;
	}
	r->off = o->offset;
	/* the outer bound of every write: the range the user gave, or the device */
	if (dev_write_window(&r->dev, r->off, o->length ? r->off + o->length : r->dev.size)) {
		snprintf(err, errlen, "%s", r->dev.err);
		goto fail;
	}
	return 0;
fail:
	r->dev.ops->close(&r->dev);
	r->dev.ops = NULL;
	return -EINVAL;
}

/* The offset 12 of a superblock: which copy it is (A 0, B 1). */
#define SB_OFF_COPY 12

/*
 * Read and check superblock copy c at byte `at` of the region: valid, the
 * copy it claims to be, a region that fits in `bound` bytes (the user's
 * --length, or to the device's end), and for copy B sitting where its own
 * geometry puts it. 0 and *g, or -errno with why set.
 */
static int sb_check(struct region *r, int c, uint64_t at, uint64_t bound, struct pc_geom *g,
		    char *why, size_t whylen)
{
	uint8_t *b;
	int ret;

	if (at > bound || bound - at < ALIGN) {
		snprintf(why, whylen, "not found (the region's %" PRIu64 " bytes leave no room for it)", bound);
		return -ENOENT;
	}
	b = abuf(ALIGN);
	if (!b) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	ret = r->dev.ops->read(&r->dev, r->off + at, b, ALIGN);
	if (ret) {
		snprintf(why, whylen, "read at %" PRIu64 " failed: %s", r->off + at, strerror(-ret));
		goto out;
	}
	ret = pc_sb_decode(b, g, why, whylen);
	if (ret) {
		/* nothing of powercut's there at all: the one case where
		 * prepare destroys nothing the campaign holds */
		if (memcmp(b, PC_SB_MAGIC, 8))
			ret = -ENOENT;
		goto out;
	}
	ret = -EINVAL;
	if (pc_get32(b + SB_OFF_COPY) != (uint32_t)c) {
		snprintf(why, whylen, "copy %c found where copy %c belongs", pc_get32(b + SB_OFF_COPY) ? 'B' : 'A',
			 c ? 'B' : 'A');
	} else if (g->region_bytes > bound) {
		snprintf(why, whylen, "claims a %" PRIu64 "-byte region, past the %" PRIu64 " bytes it may span "
			 "(--length, or the device's end)", g->region_bytes, bound);
		ret = -EFBIG;
	}
	else if (c == 1 && pc_sb_lba(g, 1) * PC_SECTOR != at)
		snprintf(why, whylen, "belongs at %" PRIu64 " by its own geometry, found at %" PRIu64,
			 pc_sb_lba(g, 1) * PC_SECTOR, at);
	else
		ret = 0;
out:
	free(b);
	return ret;
}

/* The fields every I/O depends on. Copies that differ only in their creation
 * time still describe one layout: the agent uses copy A, and HELLO shows both
 * (region_sb_state) for the host to judge the difference. */
static int geom_same(const struct pc_geom *a, const struct pc_geom *b)
{
	return !memcmp(a->uuid, b->uuid, 16) && a->region_bytes == b->region_bytes &&
	       a->record_size == b->record_size && a->nslots == b->nslots && a->seed == b->seed;
}

/* The first field in which two copies differ, for a message. */
static const char *sb_diff(const struct pc_geom *a, const struct pc_geom *b)
{
	return memcmp(a->uuid, b->uuid, 16) ? "uuid" : a->region_bytes != b->region_bytes ? "bytes" :
	       a->record_size != b->record_size ? "record_size" : a->nslots != b->nslots ? "slots" :
	       a->seed != b->seed ? "seed" : "created";
}

/* One superblock copy's fields, as HELLO's region names them. */
static json_object *geom_json(const struct pc_geom *g)
{
	json_object *o = json_object_new_object();
	char u[37];

	pc_uuid_format(g->uuid, u);
	json_object_object_add(o, "uuid", json_object_new_string(u));
	json_object_object_add(o, "bytes", json_object_new_uint64(g->region_bytes));
	json_object_object_add(o, "record_size", json_object_new_int64(g->record_size));
	json_object_object_add(o, "slots", json_object_new_int64(g->nslots));
	json_object_object_add(o, "seed", json_object_new_uint64(g->seed));
	json_object_object_add(o, "created", json_object_new_uint64(g->created));
	return o;
}

/*
 * Neither superblock copy is one this run may use (ra, rb: what sb_check
 * said of A and B): -ENOENT with err saying why and what to do; else 0.
 */
static int sb_none_usable(const struct region *r, const struct region_opts *o, int ra, int rb,
			  const struct pc_geom *ga, uint64_t bound, char *err, size_t errlen)
{
	if (ra == -EFBIG && !r->sb_ok[1]) {
		/* a region prepared larger than this run may use: --length (or
		 * --offset, or the device) differs from what prepare was given */
		if (o->length)
			snprintf(err, errlen, "%s: the region prepared at offset %" PRIu64 " is %" PRIu64 " bytes (its "
				 "superblock A), but --length %" PRIu64 " asks for less: run with --length %" PRIu64
				 " or without --length to use it (prepare would destroy its records)", r->path, r->off,
				 ga->region_bytes, o->length, ga->region_bytes);
		else
			snprintf(err, errlen, "%s: the region prepared at offset %" PRIu64 " is %" PRIu64 " bytes (its "
				 "superblock A), past the %" PRIu64 " bytes the device has from there: is --device the "
				 "device it was prepared on, at this --offset?", r->path, r->off, ga->region_bytes, bound);
		return -ENOENT;	/* no superblock this run may use, as below */
	}
	if (r->sb_ok[0] || r->sb_ok[1])
		return 0;
	if (ra == -ENOENT && rb == -ENOENT)
		snprintf(err, errlen, "%s: not a prepared powercut region at offset %" PRIu64
			 " (superblock A: %s; superblock B: %s); if --device, --offset and --length are what "
			 "prepare was given, run 'powercut-agent prepare' first", r->path, r->off, r->sb_why[0],
			 r->sb_why[1]);
	else
		/* something of a region is there: prepare would destroy what the
		 * host may still judge (its HELLO carries both copies) */
		snprintf(err, errlen, "%s: no usable superblock at offset %" PRIu64 " (superblock A: %s; "
			 "superblock B: %s); check that --offset and --length are what prepare was given "
			 "before preparing again, which destroys the region", r->path, r->off, r->sb_why[0],
			 r->sb_why[1]);
	return -ENOENT;
}

int region_open(struct region *r, const struct region_opts *o, int for_write, char *err, size_t errlen)
{
	struct pc_geom ga, gb;
	uint64_t bound, at_b;
	int ret, ra, rb;

	ret = dev_setup(r, o, for_write, err, errlen);
	if (ret)
		return ret;
	bound = o->length ? o->length : r->dev.size - r->off;
	/* Both copies are checked on their own. B is looked for where a valid A
	 * says the region ends, else where the region's bound ends (prepare
	 * rounds that down to 4096). */
	ra = sb_check(r, 0, 0, bound, &ga, r->sb_why[0], sizeof(r->sb_why[0]));
	r->sb_ok[0] = ra == 0;
	at_b = (r->sb_ok[0] ? ga.region_bytes : bound - bound % ALIGN);
	at_b = at_b >= ALIGN ? at_b - ALIGN : 0;
	rb = sb_check(r, 1, at_b, bound, &gb, r->sb_why[1], sizeof(r->sb_why[1]));
	r->sb_ok[1] = rb == 0;
	r->sb_g[0] = ga;
	r->sb_g[1] = gb;
	r->sb_read = 1;
	for (int c = 0; c < 2; c++)
		if (r->sb_ok[c])
			r->sb_why[c][0] = '\0';
	if ((ret = sb_none_usable(r, o, ra, rb, &ga, bound, err, errlen)))
		goto fail;
	if (r->sb_ok[0] && r->sb_ok[1] && !geom_same(&ga, &gb)) {
		/* which copy is the region's cannot be told here: no I/O on it. Both
		 * copies go to the host in HELLO (region_sb_state), which holds the
		 * region's record and judges the change as a device finding */
		snprintf(err, errlen, "%s: the two superblock copies disagree (%s); the agent uses neither: "
			 "re-prepare the region", r->path, sb_diff(&ga, &gb));
		ret = -EINVAL;
		goto fail;
	}
	r->g = r->sb_ok[0] ? ga : gb;
	if (o->length && o->length - o->length % ALIGN != r->g.region_bytes) {
		snprintf(err, errlen, "%s: --length %" PRIu64 " given, but the region prepared at offset %" PRIu64
			 " is %" PRIu64 " bytes (its superblock): run with --length %" PRIu64 " or without --length",
			 r->path, o->length, r->off, r->g.region_bytes, r->g.region_bytes);
		ret = -EINVAL;
		goto fail;
	}
	/* from here on nothing may be written outside the region itself */
	ret = dev_write_window(&r->dev, r->off, r->off + r->g.region_bytes);
	if (ret) {
		snprintf(err, errlen, "%s", r->dev.err);
		goto fail;
	}
	return 0;
fail:
	region_close(r);
	return ret;
}

json_object *region_sb_state(const struct region *r)
{
	json_object *o = json_object_new_object();

	json_object *copies = json_object_new_object();

	for (int c = 0; c < 2; c++) {
		json_object_object_add(o, c ? "b" : "a", json_object_new_string(r->sb_ok[c] ? "ok" : r->sb_why[c]));
		if (r->sb_ok[c])
			json_object_object_add(copies, c ? "b" : "a", geom_json(&r->sb_g[c]));
	}
	json_object_object_add(o, "copies", copies);
	return o;
}

void region_close(struct region *r)
{
	if (r->dev.ops)
		r->dev.ops->close(&r->dev);
	r->dev.ops = NULL;
}

int region_slot_offset(const struct region *r, uint32_t slot, uint64_t *off)
{
	uint64_t lba;

	if (slot >= r->g.nslots)
		return -ERANGE;
	lba = pc_slot_lba(&r->g, slot);
	if (lba < PC_SB_RESERVE_SECT ||
	    (lba + pc_geom_spr(&r->g)) * PC_SECTOR > r->g.region_bytes - PC_SB_RESERVE_SECT * PC_SECTOR)
		return -ERANGE;
	*off = r->off + lba * PC_SECTOR;
	return 0;
}

int region_write(struct region *r, uint32_t slot, const void *buf, unsigned wflags)
{
	uint64_t off;
	int ret = region_slot_offset(r, slot, &off);

	if (ret)
		return ret;
	return r->dev.ops->write(&r->dev, off, buf, r->g.record_size, wflags);
}

/*
 * May prepare destroy what [r->off, r->off + bound) holds? See region_prepare
 * in region.h. 0 when it may, -errno with err saying why not.
 */
static int prepare_may_claim(struct region *r, const struct region_opts *o, uint64_t bound, char *err,
			     size_t errlen)
{
	struct pc_geom g;
	char why[160], what[256] = "", perr[512] = "", where[64] = "";
	uint64_t at_b = bound - bound % ALIGN;
	int found;

	if (o->confirm_device && strcmp(o->confirm_device, r->path) != 0) {
		snprintf(err, errlen, "%s: --confirm-device %s does not name the device being prepared; nothing "
			 "was written (to overwrite it, type --confirm-device %s)", r->path, o->confirm_device, r->path);
		return -EINVAL;
	}
	/* ours: libblkid does not know our magic, so look for it first */
	if (sb_check(r, 0, 0, bound, &g, why, sizeof(why)) == 0 ||
	    (at_b >= ALIGN && sb_check(r, 1, at_b - ALIGN, bound, &g, why, sizeof(why)) == 0))
		return 0;
	found = blockdev_probe_foreign(r->path, 0, 0, what, sizeof(what), perr, sizeof(perr));
	if (found == 0 && (r->off || bound < r->dev.size)) {
		found = blockdev_probe_foreign(r->path, r->off, bound, what, sizeof(what), perr, sizeof(perr));
		snprintf(where, sizeof(where), " at offset %" PRIu64, r->off);
	}
	if (found == 0)
		return 0;
	if (o->force && o->confirm_device) {
		pc_warn("%s: overwriting %s, as --force --confirm-device %s says", r->path,
			found > 0 ? what : "what libblkid could not judge", o->confirm_device);
		return 0;
	}
	if (found > 0) {
		snprintf(err, errlen, "%s holds %s%s: prepare would destroy it; nothing was written (if it is "
			 "really to be overwritten: --force --confirm-device %s)", r->path, what, where, r->path);
		return -EEXIST;
	}
	snprintf(err, errlen, "%s: cannot tell whether it holds a filesystem or a partition table (%s); nothing "
		 "was written (to prepare it anyway: --force --confirm-device %s)", r->path, perr, r->path);
	return found;
}

/*
 * Every slot written with its generation-0 record, per slots a write; when
 * verbose, progress each second from last (the prepare's start).
 */
static int prepare_slots(struct region *r, uint32_t record_size, uint8_t *buf, uint32_t per, int verbose,
			 uint64_t last)
{
	int ret = 0;

	for (uint32_t slot = 0; slot < r->g.nslots && !ret; slot += per) {
		uint32_t n = r->g.nslots - slot < per ? r->g.nslots - slot : per;
		uint64_t off;

		for (uint32_t i = 0; i < n; i++)
			pc_record_build(buf + (size_t)i * record_size, &r->g, slot + i, 0, 0, 0);
		ret = region_slot_offset(r, slot, &off);
		if (!ret)
			ret = r->dev.ops->write(&r->dev, off, buf, (size_t)n * record_size, 0);
		if (verbose && pc_now_ms() - last > 1000) {
			last = pc_now_ms();
			fprintf(stderr, "prepare: %u/%u slots (%.0f%%)\n", slot + n, r->g.nslots,
				100.0 * (slot + n) / r->g.nslots);
		}
	}
	return ret;
}

int region_prepare(const struct region_opts *o, uint32_t record_size, uint64_t seed,
		   uint64_t sim_size, int verbose, char *err, size_t errlen)
{
	struct region r;
	const struct dev_ops *ops;
	const char *path;
	uint8_t *sb = NULL, *buf = NULL;
	uint64_t len, t0 = pc_now_ms();
	uint32_t per;
	int ret;

	ops = dev_ops_for(o->spec, &path);
	if (ops->create && access(path, F_OK) != 0) {
		ret = ops->create(path, sim_size, err, errlen);
		if (ret)
			return ret;
	}
	ret = dev_setup(&r, o, 1, err, errlen);
	if (ret)
		return ret;
	len = o->length ? o->length : r.dev.size - r.off;
	len -= len % ALIGN;
	ret = pc_geom_init(&r.g, len, record_size, seed, err, errlen);
	if (ret)
		goto out;
	ret = dev_write_window(&r.dev, r.off, r.off + len);
	if (ret) {
		snprintf(err, errlen, "%s", r.dev.err);
		goto out;
	}
	ret = prepare_may_claim(&r, o, o->length ? o->length : r.dev.size - r.off, err, errlen);
	if (ret)
		goto out;
	pc_uuid_generate(r.g.uuid);
	r.g.created = (uint64_t)time(NULL);
	per = SCAN_CHUNK / record_size ? SCAN_CHUNK / record_size : 1;
	sb = abuf(ALIGN);
	buf = abuf((size_t)per * record_size);
	if (!sb || !buf) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	/* Invalidate both superblocks first: a prepare cut short must not leave
	 * a region that looks claimed but holds half-written gen-0 data. */
	memset(sb, 0, ALIGN);
	for (int c = 0; c < 2 && !ret; c++)
		ret = r.dev.ops->write(&r.dev, r.off + pc_sb_lba(&r.g, c) * PC_SECTOR, sb, ALIGN, 0);
	if (!ret)
		ret = prepare_slots(&r, record_size, buf, per, verbose, t0);
	if (!ret)
		ret = r.dev.ops->flush(&r.dev);
	for (int c = 0; c < 2 && !ret; c++) {
		memset(sb, 0, ALIGN);
		pc_sb_encode(&r.g, (uint32_t)c, sb);
		ret = r.dev.ops->write(&r.dev, r.off + pc_sb_lba(&r.g, c) * PC_SECTOR, sb, ALIGN, 0);
	}
	if (!ret)
		ret = r.dev.ops->flush(&r.dev);
	if (ret)
		snprintf(err, errlen, "%s: prepare failed: %s", r.path, r.dev.err[0] ? r.dev.err : strerror(-ret));
	else if (verbose) {
		char u[37];
		pc_uuid_format(r.g.uuid, u);
		fprintf(stderr, "prepared %s: region %s, %" PRIu64 " bytes at offset %" PRIu64
			", %u slots of %u bytes, %" PRIu64 " ms\n", r.path, u, r.g.region_bytes, r.off,
			r.g.nslots, record_size, pc_now_ms() - t0);
	}
out:
	free(sb);
	free(buf);
	region_close(&r);
	return ret;
}

json_object *region_describe(const struct region *r)
{
	json_object *o = json_object_new_object();
	char u[37];

	pc_uuid_format(r->g.uuid, u);
	json_object_object_add(o, "uuid", json_object_new_string(u));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)r->g.region_bytes));
	json_object_object_add(o, "record_size", json_object_new_int64(r->g.record_size));
	json_object_object_add(o, "slots", json_object_new_int64(r->g.nslots));
	json_object_object_add(o, "seed", json_object_new_uint64(r->g.seed));
	json_object_object_add(o, "created", json_object_new_uint64(r->g.created));
	json_object_object_add(o, "offset", json_object_new_int64((int64_t)r->off));
	json_object_object_add(o, "path", json_object_new_string(r->path));
	return o;
}

/* ---- scan ---- */

struct occupant {
	uint64_t seq;
	uint32_t cycle;
	uint16_t flags;
	uint8_t whole;	/* 1: one whole record at its own LBAs */
};

struct scan {
	struct region *r;
	struct occupant *occ;
	uint8_t *want;		/* NULL: every slot */
	region_emit_fn emit;
	void *arg;
	struct scan_stats *st;
	const struct pc_known *known;	/* sorted by slot, idx */
	uint32_t nknown;
	const struct pc_known_slot *kslots;	/* sorted by slot */
	uint32_t nkslots;
	uint32_t *same;			/* damaged slots found as known, for SAME lines */
	uint32_t nsame;
	int ret;
};

static int kslot_cmp(const void *a, const void *b)
{
	const struct pc_known_slot *x = a, *y = b;

	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return x->digest < y->digest ? -1 : x->digest > y->digest;
}

static int known_cmp(const void *a, const void *b)
{
	const struct pc_known *x = a, *y = b;

	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	return x->crc < y->crc ? -1 : x->crc > y->crc;
}

/* The host holds these very bytes of sector idx of slot already. */
static int is_known(const struct scan *s, uint32_t slot, uint32_t idx, uint32_t crc)
{
	struct pc_known k = { slot, (uint16_t)idx, crc };

	return idx <= UINT16_MAX && s->nknown &&
	       bsearch(&k, s->known, s->nknown, sizeof(k), known_cmp) != NULL;
}

static int emit(struct scan *s, json_object *msg)
{
	if (!msg) {
		s->ret = -ENOMEM;
		return s->ret;
	}
	if (!s->ret)
		s->ret = s->emit(msg, s->arg);
	else
		json_object_put(msg);
	return s->ret;
}

static int all_same(const uint8_t *p, size_t n, uint8_t *v)
{
	for (size_t i = 1; i < n; i++)
		if (p[i] != p[0])
			return 0;
	*v = p[0];
	return 1;
}

/* Classify one slot's sectors: whole record, or a slot report. rerr[i] != 0
 * marks sectors whose read failed. */
/* Each sector of a record that is not whole, as the slot message says it:
 * a read error, a valid header, a fill byte, or bad (its CRC32C; raw or
 * hash decided later). NULL: out of memory. */
static struct pc_sect_report *sect_look(const struct pc_geom *g, const uint8_t *rec, const int *rerr)
{
	uint32_t spr = pc_geom_spr(g);
	struct pc_sect_report *sect = calloc(spr, sizeof(*sect));
	struct pc_sector_hdr h;

	if (!sect)
		return NULL;
	for (uint32_t i = 0; i < spr; i++) {
		const uint8_t *p = rec + (size_t)i * PC_SECTOR;
		struct pc_sect_report *e = &sect[i];
		uint8_t v;

		e->idx = (uint16_t)i;
		if (rerr[i]) {
			e->kind = PC_SK_ERR;
			e->value = (uint32_t)-rerr[i];
		} else if (pc_sector_check(p, g, &h) == PC_SECT_VALID) {
			e->kind = PC_SK_VALID;
			e->seq = h.seq;
			e->cycle = h.cycle;
			e->flags = h.flags;
			e->lba = h.lba;
			e->hidx = h.idx;
		} else if (all_same(p, PC_SECTOR, &v)) {
			e->kind = PC_SK_FILL;
			e->value = v;
		} else {
			e->kind = PC_SK_HASH;	/* bad: raw or hash decided below */
			e->value = pc_crc32c(0, p, PC_SECTOR);
		}
	}
	return sect;
}

/* Is this exactly the damage the host holds (KNOWN)? Then its number is
 * enough: 1, the slot counted as the same. */
static int slot_same(struct scan *s, uint32_t slot, const struct pc_sect_report *sect, uint32_t spr)
{
	struct pc_known_slot key = { slot, pc_slot_digest(sect, spr) };
	uint32_t *n;

	if (!s->nkslots || !bsearch(&key, s->kslots, s->nkslots, sizeof(key), kslot_cmp))
		return 0;
	n = s->nsame % 1024 ? s->same : realloc(s->same, (s->nsame + 1024) * sizeof(*n));
	if (!n) {
		s->ret = -ENOMEM;
		return 1;
	}
	s->same = n;
	s->same[s->nsame++] = slot;
	s->st->same++;
	return 1;
}

/* A damaged slot's report: bad sectors the host does not hold go raw (up
 * to PC_PROTO_MAX_RAW a scan), then the slot messages. */
static void slot_report(struct scan *s, uint32_t slot, struct pc_sect_report *sect, uint32_t spr, const uint8_t *rec)
{
	struct pc_slot_report rep;

	for (uint32_t i = 0; i < spr; i++) {
		struct pc_sect_report *e = &sect[i];

		if (e->kind != PC_SK_HASH)
			continue;
		if (is_known(s, slot, i, e->value)) {
			/* old damage, unchanged: the host has its bytes */
			s->st->known++;
		} else if (s->st->raw_sent < PC_PROTO_MAX_RAW) {
			e->kind = PC_SK_RAW;
			memcpy(e->raw, rec + (size_t)i * PC_SECTOR, PC_SECTOR);
			s->st->raw_sent++;
		} else {
			s->st->raw_dropped++;
		}
	}
	/* One slot message must fit a protocol line: a large record goes out as
	 * several messages for the same slot, in sector order (docs/protocol.md). */
	for (uint32_t i = 0; i < spr && !s->ret;) {
		size_t budget = PC_PROTO_MAX_LINE - 256, used = 0;
		uint32_t j = i;

		while (j < spr) {
			size_t cost = sect[j].kind == PC_SK_RAW ? 720 : sect[j].kind == PC_SK_VALID ? 110 : 40;
			if (used + cost > budget && j > i)
				break;
			used += cost;
			j++;
		}
		rep.slot = slot;
		rep.nsect = j - i;
		rep.sect = sect + i;
		emit(s, pc_msg_slot(&rep));
		i = j;
	}
}

static void scan_slot(struct scan *s, uint32_t slot, const uint8_t *rec, const int *rerr)
{
	const struct pc_geom *g = &s->r->g;
	uint32_t spr = pc_geom_spr(g);
	uint64_t lba0 = pc_slot_lba(g, slot);
	struct pc_sect_report *sect;
	struct pc_sector_hdr h, first = { 0 };
	int whole = 1, readable = 1;

	for (uint32_t i = 0; i < spr && readable; i++)
		readable = !rerr[i];
	if (readable && pc_record_whole(rec, g, lba0, &first)) {
		s->occ[slot] = (struct occupant){ first.seq, first.cycle, first.flags, 1 };
		return;
	}
	/* not whole: the sector-by-sector look says what it is instead */
	for (uint32_t i = 0; i < spr && whole; i++) {
		if (rerr[i] || pc_sector_check(rec + (size_t)i * PC_SECTOR, g, &h) != PC_SECT_VALID ||
		    h.lba != lba0 + i || h.idx != i) {
			whole = 0;
			break;
		}
		if (i == 0)
			first = h;
		else if (h.seq != first.seq || h.cycle != first.cycle || h.flags != first.flags)
			whole = 0;
	}
	if (whole) {
		s->occ[slot] = (struct occupant){ first.seq, first.cycle, first.flags, 1 };
		return;
	}
	s->occ[slot].whole = 0;
	s->st->anomalies++;
	sect = sect_look(g, rec, rerr);
	if (!sect) {
		s->ret = -ENOMEM;
		return;
	}
	if (!slot_same(s, slot, sect, spr))
		slot_report(s, slot, sect, spr, rec);
	free(sect);
}

static int wanted(const struct scan *s, uint32_t slot)
{
	return !s->want || s->want[slot];
}

/*
 * The scan's reads: up to SCAN_BUFS chunks of consecutive wanted slots, each
 * at most SCAN_CHUNK bytes (one record when records are larger), kept in
 * flight through the backend's aio_read while earlier chunks are checked.
 * Where there is no aio_read (the sim), or it fails to start (no io_uring:
 * ENOSYS, qemu-user), each chunk is read synchronously when its turn comes:
 * the same bytes, the same order of checks and messages, only no overlap.
 * SCAN_BUFS x SCAN_CHUNK is the scan's whole buffer memory (1 MiB).
 */
#define SCAN_BUFS 4
#define SCAN_CHUNK_IO (SCAN_CHUNK / SCAN_BUFS)

struct scan_chunk {
	uint32_t slot, n;	/* n == 0: unused */
	uint64_t off;
	uint8_t *buf;
	int submitted;		/* its read went out through aio_read */
	int done;		/* and completed */
	struct dev_io io;
};

struct scan_io {
	struct scan *s;
	struct scan_chunk c[SCAN_BUFS];
	uint32_t per;		/* slots per chunk */
	uint32_t next;		/* the next slot to consider */
	unsigned head, queued;	/* oldest chunk, chunks taken */
	unsigned inflight;	/* async reads not reaped yet */
	int async;
	int broken;		/* a wait failed: the kernel may still write the buffers */
};

/* The next run of consecutive wanted slots into chunk c; 0 when none is left. */
static int scan_next_chunk(struct scan_io *x, struct scan_chunk *c)
{
	struct scan *s = x->s;
	struct region *r = s->r;

	while (x->next < r->g.nslots && !wanted(s, x->next))
		x->next++;
	if (x->next >= r->g.nslots)
		return 0;
	c->slot = x->next;
	c->n = 0;
	while (c->n < x->per && x->next < r->g.nslots && wanted(s, x->next)) {
		c->n++;
		x->next++;
	}
	region_slot_offset(r, c->slot, &c->off);
	c->submitted = c->done = 0;
	return 1;
}

static void scan_reap(struct scan_io *x, unsigned min)
{
	struct dev *d = &x->s->r->dev;
	struct dev_io *done[SCAN_BUFS];
	int n = d->ops->aio_reap(d, done, SCAN_BUFS, min);

	if (n < 0 || (n == 0 && min)) {
		x->broken = 1;
		x->inflight = 0;
		if (!x->s->ret)
			x->s->ret = n < 0 ? n : -EIO;
		return;
	}
	for (int i = 0; i < n; i++) {
		struct scan_chunk *c = &x->c[done[i]->tag];

		c->done = 1;
		x->inflight--;
	}
}

/* Take chunks and start their reads until SCAN_BUFS are taken. */
static void scan_fill(struct scan_io *x)
{
	struct dev *d = &x->s->r->dev;

	while (x->queued < SCAN_BUFS && !x->s->ret) {
		struct scan_chunk *c = &x->c[(x->head + x->queued) % SCAN_BUFS];

		if (!scan_next_chunk(x, c))
			return;
		x->queued++;
		if (!x->async)
			continue;
		c->io = (struct dev_io){ .off = c->off, .dst = c->buf, .len = (size_t)c->n * x->s->r->g.record_size,
					 .tag = (uint64_t)(c - x->c) };
		if (d->ops->aio_read(d, &c->io) == 0) {
			c->submitted = 1;
			x->inflight++;
			continue;
		}
		/* no async reads here after all: this chunk and the rest are read
		 * synchronously (what went out already completes as usual) */
		pc_debug("scan: reading synchronously: %s", d->err);
		x->async = 0;
	}
}

/* Read the wanted slots and check each, in slot order. */
static void scan_read(struct scan *s)
{
	struct region *r = s->r;
	uint32_t spr = pc_geom_spr(&r->g);
	struct scan_io x = { .s = s, .async = r->dev.ops->aio_read != NULL };
	size_t chunk;
	uint8_t *bufs;
	int *rerr;

	x.per = SCAN_CHUNK_IO / r->g.record_size ? SCAN_CHUNK_IO / r->g.record_size : 1;
	chunk = (size_t)x.per * r->g.record_size;
	bufs = mem_map(SCAN_BUFS * chunk);
	rerr = calloc((size_t)x.per * spr, sizeof(*rerr));
	if (!bufs || !rerr) {
		s->ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < SCAN_BUFS; i++)
		x.c[i].buf = bufs + i * chunk;
	for (scan_fill(&x); x.queued && !s->ret; scan_fill(&x)) {
		struct scan_chunk *c = &x.c[x.head];
		size_t len = (size_t)c->n * r->g.record_size;
		int ret = 0;

		if (c->submitted) {
			while (!c->done && !s->ret)
				scan_reap(&x, 1);
			if (s->ret)
				break;
			ret = c->io.result;
		} else {
			ret = r->dev.ops->read(&r->dev, c->off, c->buf, len);
		}
		memset(rerr, 0, (size_t)x.per * spr * sizeof(*rerr));
		if (ret) {
			/* find which sectors are unreadable, one 4 KiB block at a time */
			for (uint32_t b = 0; b < c->n * spr; b += ALIGN / PC_SECTOR) {
				uint32_t cnt = c->n * spr - b < ALIGN / PC_SECTOR ? c->n * spr - b : ALIGN / PC_SECTOR;
				int e = r->dev.ops->read(&r->dev, c->off + (uint64_t)b * PC_SECTOR,
							 c->buf + (size_t)b * PC_SECTOR, (size_t)cnt * PC_SECTOR);

				/* ...then one sector at a time, where the device reads 512 bytes
				 * (a 4Kn device refuses: the whole block is named) */
				for (uint32_t k = 0; e && k < cnt; k++) {
					int e1 = r->dev.ops->read(&r->dev, c->off + (uint64_t)(b + k) * PC_SECTOR,
								  c->buf + (size_t)(b + k) * PC_SECTOR, PC_SECTOR);

					if (e1 == -EINVAL) {
						for (uint32_t j = 0; j < cnt; j++)
							rerr[b + j] = e;
						break;
					}
					rerr[b + k] = e1;
				}
			}
		}
		for (uint32_t i = 0; i < c->n && !s->ret; i++)
			scan_slot(s, c->slot + i, c->buf + (size_t)i * r->g.record_size, rerr + (size_t)i * spr);
		c->n = 0;
		x.head = (x.head + 1) % SCAN_BUFS;
		x.queued--;
	}
	/* never free buffers the kernel may still be reading into */
	while (x.inflight && !x.broken)
		scan_reap(&x, x.inflight);
out:
	if (!x.broken)
		mem_unmap(bufs, SCAN_BUFS * chunk);
	free(rerr);
}

static void scan_runs(struct scan *s, int pattern)
{
	const struct pc_geom *g = &s->r->g;
	struct pc_run runs[PC_PROTO_RUNS_PER_LINE];
	uint32_t nr = 0;
	struct pc_run *cur = NULL;

	for (uint32_t pos = 0; pos < g->nslots && !s->ret; pos++) {
		uint32_t slot = pc_slot_of_pos(g, pattern, pos);
		const struct occupant *o = &s->occ[slot];

		if (!wanted(s, slot) || !o->whole) {
			cur = NULL;
			continue;
		}
		if (cur && cur->cycle == o->cycle && cur->flags == o->flags &&
		    ((cur->seq == 0 && o->seq == 0) || (cur->seq && o->seq == cur->seq + cur->n))) {
			cur->n++;
			continue;
		}
		if (nr == PC_PROTO_RUNS_PER_LINE) {
			emit(s, pc_msg_runs(runs, nr));
			nr = 0;
		}
		cur = &runs[nr++];
		*cur = (struct pc_run){ .pos = pos, .n = 1, .seq = o->seq, .cycle = o->cycle, .flags = o->flags };
	}
	if (nr)
		emit(s, pc_msg_runs(runs, nr));
}

int region_scan(struct region *r, int pattern, const struct pc_posrange *ranges, uint32_t nranges,
		region_emit_fn fn, void *arg, struct scan_stats *st)
{
	return region_scan_known(r, pattern, ranges, nranges, NULL, fn, arg, st);
}

int region_scan_known(struct region *r, int pattern, const struct pc_posrange *ranges, uint32_t nranges,
		      struct scan_known *kn, region_emit_fn fn, void *arg, struct scan_stats *st)
{
	struct scan s = { .r = r, .emit = fn, .arg = arg, .st = st };
	uint64_t t0 = pc_now_ms();
	json_object *m;

	memset(st, 0, sizeof(*st));
	if (kn && kn->k && kn->n) {
		qsort(kn->k, kn->n, sizeof(*kn->k), known_cmp);
		s.known = kn->k;
		s.nknown = kn->n;
	}
	if (kn && kn->slots && kn->nslots) {
		qsort(kn->slots, kn->nslots, sizeof(*kn->slots), kslot_cmp);
		s.kslots = kn->slots;
		s.nkslots = kn->nslots;
	}
	st->slots = r->g.nslots;
	if (ranges) {
		s.want = calloc(r->g.nslots, 1);
		if (!s.want)
			return -ENOMEM;
		st->slots = 0;
		for (uint32_t i = 0; i < nranges; i++) {
			if ((uint64_t)ranges[i].pos + ranges[i].n > r->g.nslots) {
				free(s.want);
				return -ERANGE;
			}
			for (uint32_t p = ranges[i].pos; p < ranges[i].pos + ranges[i].n; p++) {
				uint32_t slot = pc_slot_of_pos(&r->g, pattern, p);
				st->slots += !s.want[slot];
				s.want[slot] = 1;
			}
		}
	}
	s.occ = mem_map((size_t)r->g.nslots * sizeof(*s.occ));
	if (!s.occ) {
		free(s.want);
		return -ENOMEM;
	}
	m = pc_msg_new(PC_MSG_SCAN_BEGIN);
	json_object_object_add(m, "slots", json_object_new_int64(st->slots));
	json_object_object_add(m, "pattern", json_object_new_string(pc_pattern_name(pattern)));
	json_object_object_add(m, "full", json_object_new_boolean(ranges == NULL));
	emit(&s, m);
	/* Slot reports go out while reading; runs need the whole picture. */
	scan_read(&s);
	scan_runs(&s, pattern);
	for (uint32_t i = 0; i < s.nsame && !s.ret; i += PC_PROTO_SAME_PER_LINE)
		emit(&s, pc_msg_same(s.same + i, s.nsame - i < PC_PROTO_SAME_PER_LINE ? s.nsame - i :
								   PC_PROTO_SAME_PER_LINE));
	free(s.same);
	st->ms = pc_now_ms() - t0;
	m = pc_msg_new(PC_MSG_SCAN_END);
	json_object_object_add(m, "slots", json_object_new_int64(st->slots));
	json_object_object_add(m, "anomalies", json_object_new_int64(st->anomalies));
	json_object_object_add(m, "raw_dropped", json_object_new_int64(st->raw_dropped));
	json_object_object_add(m, "known", json_object_new_int64(st->known));
	json_object_object_add(m, "same", json_object_new_int64(st->same));
	json_object_object_add(m, "ms", json_object_new_int64((int64_t)st->ms));
	emit(&s, m);
	mem_unmap(s.occ, (size_t)r->g.nslots * sizeof(*s.occ));
	free(s.want);
	return s.ret;
}

/*
 * region.c - claim, open and prepare a powercut region (its scan:
 * region_scan.c).
 */
#include "agent/region.h"
#include "agent/region_int.h"

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


/*
 * Zeroed, page-aligned memory with every page mapped in at once (one system
 * call, MAP_POPULATE) rather than one page fault per page as the scan first
 * touches it: in a virtual machine each fault is a trip to the hypervisor,
 * and the scan's 2 MiB would be some 500 of them. Free with region_mem_unmap().
 */
void *region_mem_map(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void region_mem_unmap(void *p, size_t len)
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
	if ((ops->caps & DEV_CAP_REGION_AT_0) && o->offset)
		return pc_fail(err, errlen, -EINVAL, "%s: a %s device's region starts at offset 0; drop --offset", r->path, ops->name);
	r->dev.ops = ops;
	r->dev.o.path = r->path;
	r->dev.o.allow_whole_disk = o->allow_whole_disk;
	r->dev.o.sim = o->sim;
	ret = ops->open(&r->dev, for_write);
	if (ret) {
		r->dev.ops = NULL;
		return pc_fail(err, errlen, ret, "%s", r->dev.err[0] ? r->dev.err : strerror(-ret));
	}
	if (o->offset % PC_SECTOR || o->length % PC_SECTOR) {
		ret = pc_fail(err, errlen, -EINVAL, "%s: region offset and length must be multiples of 512", r->path);
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
		ret = pc_fail(err, errlen, -EINVAL, "%s: region [%" PRIu64 ", +%" PRIu64 ") lies past the device's end (%"
			      PRIu64 " bytes)%s", r->path, o->offset, o->length, r->dev.size, hint);
		goto fail;
	}
	r->off = o->offset;
	/* the outer bound of every write: the range the user gave, or the device */
	if (dev_write_window(&r->dev, r->off, o->length ? r->off + o->length : r->dev.size)) {
		ret = pc_fail(err, errlen, -EINVAL, "%s", r->dev.err);
		goto fail;
	}
	return 0;
fail:
	r->dev.ops->close(&r->dev);
	r->dev.ops = NULL;
	return ret;
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
		 * --offset, or the device) differs from what prepare was given;
		 * no superblock this run may use, as below: -ENOENT */
		if (o->length)
			return pc_fail(err, errlen, -ENOENT, "%s: the region prepared at offset %" PRIu64 " is %" PRIu64 " bytes (its "
				 "superblock A), but --length %" PRIu64 " asks for less: run with --length %" PRIu64
				 " or without --length to use it (prepare would destroy its records)", r->path, r->off,
				 ga->region_bytes, o->length, ga->region_bytes);
		return pc_fail(err, errlen, -ENOENT, "%s: the region prepared at offset %" PRIu64 " is %" PRIu64 " bytes (its "
			       "superblock A), past the %" PRIu64 " bytes the device has from there: is --device the "
			       "device it was prepared on, at this --offset?", r->path, r->off, ga->region_bytes, bound);
	}
	if (r->sb_ok[0] || r->sb_ok[1])
		return 0;
	if (ra == -ENOENT && rb == -ENOENT)
		return pc_fail(err, errlen, -ENOENT, "%s: not a prepared powercut region at offset %" PRIu64
			 " (superblock A: %s; superblock B: %s); if --device, --offset and --length are what "
			 "prepare was given, run 'powercut-agent prepare' first", r->path, r->off, r->sb_why[0],
			 r->sb_why[1]);
	/* something of a region is there: prepare would destroy what the host
	 * may still judge (its HELLO carries both copies) */
	return pc_fail(err, errlen, -ENOENT, "%s: no usable superblock at offset %" PRIu64 " (superblock A: %s; "
		       "superblock B: %s); check that --offset and --length are what prepare was given "
		       "before preparing again, which destroys the region", r->path, r->off, r->sb_why[0],
		       r->sb_why[1]);
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
		ret = pc_fail(err, errlen, -EINVAL, "%s: the two superblock copies disagree (%s); the agent uses neither: "
			 "re-prepare the region", r->path, sb_diff(&ga, &gb));
		goto fail;
	}
	r->g = r->sb_ok[0] ? ga : gb;
	if (o->length && o->length - o->length % ALIGN != r->g.region_bytes) {
		ret = pc_fail(err, errlen, -EINVAL, "%s: --length %" PRIu64 " given, but the region prepared at offset %" PRIu64
			 " is %" PRIu64 " bytes (its superblock): run with --length %" PRIu64 " or without --length",
			 r->path, o->length, r->off, r->g.region_bytes, r->g.region_bytes);
		goto fail;
	}
	/* from here on nothing may be written outside the region itself */
	ret = dev_write_window(&r->dev, r->off, r->off + r->g.region_bytes);
	if (ret) {
		pc_fail(err, errlen, ret, "%s", r->dev.err);
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

	if (o->confirm_device && strcmp(o->confirm_device, r->path) != 0)
		return pc_fail(err, errlen, -EINVAL, "%s: --confirm-device %s does not name the device being prepared; nothing "
			 "was written (to overwrite it, type --confirm-device %s)", r->path, o->confirm_device, r->path);
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
	if (found > 0)
		return pc_fail(err, errlen, -EEXIST, "%s holds %s%s: prepare would destroy it; nothing was written (if it is "
			 "really to be overwritten: --force --confirm-device %s)", r->path, what, where, r->path);
	return pc_fail(err, errlen, found, "%s: cannot tell whether it holds a filesystem or a partition table (%s); nothing "
		 "was written (to prepare it anyway: --force --confirm-device %s)", r->path, perr, r->path);
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
		pc_fail(err, errlen, ret, "%s", r.dev.err);
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
		ret = pc_fail(err, errlen, -ENOMEM, "out of memory");
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

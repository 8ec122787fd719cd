/*
 * test_posix.c - the posix device backend against real files (and, as root,
 * a real loop device with a GPT partition), the mount/swap refusals against
 * crafted /proc files, EXT_CSD parsing, backend choice and tag resolution;
 * the write window every write hook of both backends checks, and the
 * region's superblock validation and bounds on files.
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/util.h"
#include "agent/audit.h"
#include "agent/blockdev.h"
#include "agent/dev.h"
#include "agent/region.h"

#define HAS(hay, needle) (strstr((hay), (needle)) != NULL)
#define BLK 4096u

static void strf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void strf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	fclose(f);
}

static void *aligned(size_t len)
{
	void *p = NULL;

	CU_ASSERT_FATAL(posix_memalign(&p, BLK, len) == 0);
	return p;
}

/* Every byte derives from (seed, offset) so a misplaced block shows. */
static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((seed * 2654435761u + i * 31u) >> 3);
}

static void dev_init(struct dev *d, const char *path)
{
	memset(d, 0, sizeof(*d));
	d->ops = &dev_posix_ops;
	d->o.path = path;
	d->fd = -1;
}

/* A 1 MiB file in a scratch dir; 0 when O_DIRECT works there. */
static int make_file(char *path, size_t len, const char *name)
{
	const char *dir = pc_test_tmpdir(name);
	int fd;

	strf(path, len, "%s/dev.img", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, 1 << 20) == 0);
	close(fd);
	fd = open(path, O_RDWR | O_DIRECT);
	if (fd < 0) {
		printf("\n  note: %s refuses O_DIRECT (%s): skipping file tests\n", dir, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* ---- backend choice ---- */

static void test_ops_for(void)
{
	static const struct {
		const char *spec;
		int sim;
		const char *path;
	} cases[] = {
		{ "sim:/var/tmp/board0.media", 1, "/var/tmp/board0.media" },
		{ "sim:media", 1, "media" },
		{ "/dev/mmcblk0p3", 0, "/dev/mmcblk0p3" },
		{ "PARTLABEL=pc-test", 0, "PARTLABEL=pc-test" },
		{ "simulated.img", 0, "simulated.img" },
	};

	for (size_t i = 0; i < PC_ARRAY_SIZE(cases); i++) {
		const char *path = NULL;
		const struct dev_ops *ops = dev_ops_for(cases[i].spec, &path);

		CU_ASSERT_PTR_EQUAL(ops, cases[i].sim ? &dev_sim_ops : &dev_posix_ops);
		CU_ASSERT_STRING_EQUAL(path, cases[i].path);
	}
	CU_ASSERT_STRING_EQUAL(dev_posix_ops.name, "posix");
}

/* ---- synchronous I/O on a regular file ---- */

static void test_file_rw(void)
{
	char path[PATH_MAX];
	uint8_t *w = aligned(8 * BLK), *r = aligned(8 * BLK);
	struct dev d;
	json_object *id;

	if (make_file(path, sizeof(path), "posix-rw") != 0)
		goto out;
	dev_init(&d, path);
	CU_ASSERT_FATAL(d.ops->open(&d, 1) == 0);
	CU_ASSERT_EQUAL(d.size, 1u << 20);
	CU_ASSERT_EQUAL(d.is_blockdev, 0);
	CU_ASSERT(d.fd >= 0);

	fill(w, 8 * BLK, 1);
	CU_ASSERT_EQUAL(d.ops->write(&d, BLK, w, 8 * BLK, 0), 0);
	memset(r, 0, 8 * BLK);
	CU_ASSERT_EQUAL(d.ops->read(&d, BLK, r, 8 * BLK), 0);
	CU_ASSERT_EQUAL(memcmp(w, r, 8 * BLK), 0);

	/* FUA+flush path: pwritev2(RWF_DSYNC), 512-byte granularity */
	fill(w, BLK, 2);
	CU_ASSERT_EQUAL(d.ops->write(&d, 64 * BLK + 512, w, BLK, DEV_W_DSYNC), 0);
	CU_ASSERT_EQUAL(d.ops->read(&d, 64 * BLK + 512, r, BLK), 0);
	CU_ASSERT_EQUAL(memcmp(w, r, BLK), 0);
	CU_ASSERT_EQUAL(d.ops->flush(&d), 0);

	/* O_DIRECT refuses a misaligned offset; the message says where */
	CU_ASSERT_EQUAL(d.ops->write(&d, 100, w, BLK, 0), -EINVAL);
	CU_ASSERT(HAS(d.err, path) && HAS(d.err, "offset 100") && HAS(d.err, "O_DIRECT"));
	CU_ASSERT_EQUAL(d.ops->write(&d, 0, w, BLK, 0x80), -EINVAL);
	/* reading past the end is an error, never a short success */
	CU_ASSERT_EQUAL(d.ops->read(&d, (1u << 20) - BLK, r, 2 * BLK), -ENODATA);
	CU_ASSERT(HAS(d.err, "past the end"));

	id = json_object_new_object();
	d.ops->identity(&d, id);
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(id, "type")), "file");
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(id, "path")), path);
	CU_ASSERT_EQUAL(json_object_get_int64(json_object_object_get(id, "size")), 1 << 20);
	CU_ASSERT(json_object_get_int64(json_object_object_get(id, "st_blksize")) >= 512);
	json_object_put(id);

	d.ops->close(&d);
	CU_ASSERT_EQUAL(d.fd, -1);
	d.ops->close(&d);	/* twice is harmless */

	/* read-only open: writes fail */
	CU_ASSERT_FATAL(d.ops->open(&d, 0) == 0);
	CU_ASSERT_EQUAL(d.ops->write(&d, 0, w, BLK, 0), -EBADF);
	d.ops->close(&d);
out:
	free(w);
	free(r);
}

static void test_open_errors(void)
{
	const char *dir = pc_test_tmpdir("posix-open");
	char path[PATH_MAX];
	struct dev d;

	strf(path, sizeof(path), "%s/missing.img", dir);
	dev_init(&d, path);
	CU_ASSERT_EQUAL(d.ops->open(&d, 1), -ENOENT);
	CU_ASSERT(HAS(d.err, path));
	CU_ASSERT_EQUAL(d.fd, -1);

	dev_init(&d, dir);
	CU_ASSERT_EQUAL(d.ops->open(&d, 0), -ENODEV);
	CU_ASSERT(HAS(d.err, "neither a block device nor a regular file"));

	dev_init(&d, "");
	CU_ASSERT_EQUAL(d.ops->open(&d, 0), -EINVAL);
}

/* ---- io_uring ---- */

#define AIO_BLOCKS 32u

static void aio_run(unsigned qd)
{
	char path[PATH_MAX], name[32];
	uint8_t *w = aligned(AIO_BLOCKS * BLK), *r = aligned(BLK);
	struct dev_io ios[AIO_BLOCKS], *done[AIO_BLOCKS];
	unsigned seen[AIO_BLOCKS] = { 0 }, submitted = 0, reaped = 0;
	struct dev d;
	int ret;

	strf(name, sizeof(name), "posix-aio%u", qd);
	if (make_file(path, sizeof(path), name) != 0)
		goto out;
	dev_init(&d, path);
	CU_ASSERT_FATAL(d.ops->open(&d, 1) == 0);
	ret = d.ops->aio_setup(&d, qd);
	if (ret == -ENOSYS) {
		printf("\n  note: %s: skipping aio\n", d.err);
		CU_ASSERT(HAS(d.err, "io_uring unavailable"));
		goto close;
	}
	CU_ASSERT_FATAL(ret == 0);

	fill(w, AIO_BLOCKS * BLK, 7 + qd);
	while (reaped < AIO_BLOCKS) {
		while (submitted < AIO_BLOCKS && submitted - reaped < qd) {
			struct dev_io *io = &ios[submitted];

			*io = (struct dev_io){ .off = (uint64_t)submitted * BLK, .buf = w + submitted * BLK,
					       .len = BLK, .wflags = submitted % 2 ? DEV_W_DSYNC : 0,
					       .tag = 1000 + submitted, .result = 12345 };
			CU_ASSERT_FATAL(d.ops->aio_submit(&d, io) == 0);
			submitted++;
		}
		if (submitted - reaped == qd && submitted < AIO_BLOCKS) {
			/* the queue is full: one more must be refused, not queued */
			struct dev_io extra = { .off = 0, .buf = w, .len = BLK };

			CU_ASSERT_EQUAL(d.ops->aio_submit(&d, &extra), -EBUSY);
		}
		ret = d.ops->aio_reap(&d, done, AIO_BLOCKS, 1);
		CU_ASSERT_FATAL(ret >= 1 && (unsigned)ret <= submitted - reaped);
		for (int i = 0; i < ret; i++) {
			uint64_t k = done[i]->tag - 1000;

			CU_ASSERT_FATAL(k < AIO_BLOCKS);
			CU_ASSERT_PTR_EQUAL(done[i], &ios[k]);
			CU_ASSERT_EQUAL(done[i]->result, 0);
			seen[k]++;
		}
		reaped += (unsigned)ret;
	}
	for (unsigned i = 0; i < AIO_BLOCKS; i++)
		CU_ASSERT_EQUAL(seen[i], 1);
	/* nothing in flight: reap returns at once with nothing */
	CU_ASSERT_EQUAL(d.ops->aio_reap(&d, done, AIO_BLOCKS, 4), 0);

	for (unsigned i = 0; i < AIO_BLOCKS; i++) {
		CU_ASSERT_EQUAL(d.ops->read(&d, (uint64_t)i * BLK, r, BLK), 0);
		CU_ASSERT_EQUAL(memcmp(r, w + i * BLK, BLK), 0);
	}

	/* a misaligned async write completes with -EINVAL, reported per io */
	ios[0] = (struct dev_io){ .off = 100, .buf = w, .len = BLK, .tag = 1 };
	CU_ASSERT_EQUAL(d.ops->aio_submit(&d, &ios[0]), 0);
	CU_ASSERT_EQUAL(d.ops->aio_reap(&d, done, 1, 1), 1);
	CU_ASSERT_EQUAL(ios[0].result, -EINVAL);
	CU_ASSERT(HAS(d.err, "offset 100"));

	/* close with writes in flight must wait for them, not free under them */
	for (unsigned i = 0; i < qd; i++) {
		ios[i] = (struct dev_io){ .off = (uint64_t)i * BLK, .buf = w + i * BLK, .len = BLK };
		CU_ASSERT(d.ops->aio_submit(&d, &ios[i]) == 0);
	}
close:
	d.ops->close(&d);
out:
	free(w);
	free(r);
}

static void test_aio_qd1(void)
{
	aio_run(1);
}

static void test_aio_qd8(void)
{
	aio_run(8);
}

static void test_aio_misuse(void)
{
	char path[PATH_MAX];
	struct dev_io io = { 0 }, *done[1];
	struct dev d;

	if (make_file(path, sizeof(path), "posix-aiomis") != 0)
		return;
	dev_init(&d, path);
	CU_ASSERT_FATAL(d.ops->open(&d, 1) == 0);
#ifdef PC_HAVE_URING
	CU_ASSERT_EQUAL(d.ops->aio_submit(&d, &io), -EINVAL);
	CU_ASSERT(HAS(d.err, "before aio_setup"));
	CU_ASSERT_EQUAL(d.ops->aio_reap(&d, done, 1, 1), -EINVAL);
	CU_ASSERT_EQUAL(d.ops->aio_setup(&d, 0), -EINVAL);
#else
	CU_ASSERT_EQUAL(d.ops->aio_setup(&d, 4), -ENOSYS);
	CU_ASSERT(HAS(d.err, "io_uring unavailable (ENOSYS)"));
	(void)io;
	(void)done;
#endif
	d.ops->close(&d);
}

/* ---- the write window: every write hook refuses what lies outside ---- */

#define WIN_LO (64u * 1024)
#define WIN_HI (128u * 1024)

/* Each write hook, at each place outside [WIN_LO, WIN_HI): -ERANGE, never issued. */
static void window_refusals(struct dev *d, uint8_t *w, int have_aio)
{
	static const struct {
		uint64_t off;
		size_t len;
	} out[] = {
		{ 0, BLK },			/* before */
		{ WIN_LO - BLK, 2 * BLK },	/* straddles the start */
		{ WIN_HI - BLK, 2 * BLK },	/* straddles the end */
		{ WIN_HI, BLK },		/* just after */
		{ (1u << 20) - BLK, BLK },	/* the device's last block */
		{ UINT64_MAX - 511, BLK },	/* off + len wraps */
	};

	for (size_t i = 0; i < PC_ARRAY_SIZE(out); i++) {
		struct dev_io io = { .off = out[i].off, .buf = w, .len = out[i].len, .tag = i };

		d->err[0] = '\0';
		CU_ASSERT_EQUAL(d->ops->write(d, out[i].off, w, out[i].len, 0), -ERANGE);
		CU_ASSERT(HAS(d->err, "outside the region") && HAS(d->err, d->o.path));
		CU_ASSERT_EQUAL(d->ops->write(d, out[i].off, w, out[i].len, DEV_W_DSYNC), -ERANGE);
		/* checked before the backend even looks for an MMC card */
		CU_ASSERT_EQUAL(d->ops->relwr(d, out[i].off, w, out[i].len, 1), -ERANGE);
		CU_ASSERT_EQUAL(d->ops->relwr(d, out[i].off, w, out[i].len, 0), -ERANGE);
		if (have_aio) {
			struct dev_io *done[1];

			CU_ASSERT_EQUAL(d->ops->aio_submit(d, &io), -ERANGE);
			io.wflags = DEV_W_DSYNC;
			CU_ASSERT_EQUAL(d->ops->aio_submit(d, &io), -ERANGE);
			/* refused, not queued: nothing to reap */
			CU_ASSERT_EQUAL(d->ops->aio_reap(d, done, 1, 0), 0);
		}
	}
	/* the window only shrinks */
	CU_ASSERT_EQUAL(dev_write_window(d, 0, 1u << 20), -ERANGE);
	CU_ASSERT_EQUAL(dev_write_window(d, WIN_LO, WIN_HI + BLK), -ERANGE);
	CU_ASSERT_EQUAL(dev_write_window(d, WIN_LO, WIN_LO), -ERANGE);
	CU_ASSERT(d->wlo == WIN_LO && d->whi == WIN_HI);
}

/* Inside the window every hook still writes (relwr only where there is a card). */
static void window_inside(struct dev *d, uint8_t *w, uint8_t *want, int have_aio)
{
	struct dev_io io = { .off = WIN_LO + BLK, .buf = w, .len = BLK }, *done[1];

	fill(w, 2 * BLK, 5);
	CU_ASSERT_EQUAL(d->ops->write(d, WIN_LO, w, BLK, 0), 0);
	memcpy(want + WIN_LO, w, BLK);
	CU_ASSERT_EQUAL(d->ops->write(d, WIN_HI - BLK, w + BLK, BLK, DEV_W_DSYNC), 0);
	memcpy(want + WIN_HI - BLK, w + BLK, BLK);
	if (have_aio) {
		CU_ASSERT_EQUAL(d->ops->aio_submit(d, &io), 0);
		CU_ASSERT_EQUAL(d->ops->aio_reap(d, done, 1, 1), 1);
		CU_ASSERT_EQUAL(io.result, 0);
		memcpy(want + WIN_LO + BLK, w, BLK);
	}
}

static void test_window_posix(void)
{
	char path[PATH_MAX];
	uint8_t *w = aligned(2 * BLK), *want = aligned(1u << 20), *got = aligned(1u << 20);
	struct dev d;
	int aio, fd;

	if (make_file(path, sizeof(path), "posix-window") != 0)
		goto out;
	fill(want, 1u << 20, 77);
	fd = open(path, O_WRONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(pc_pwrite_all(fd, want, 1u << 20, 0) == 0);
	close(fd);
	dev_init(&d, path);
	CU_ASSERT_FATAL(d.ops->open(&d, 1) == 0);
	CU_ASSERT(d.wlo == 0 && d.whi == 1u << 20);	/* open: the whole device */
	CU_ASSERT_EQUAL(dev_write_window(&d, WIN_LO, WIN_HI), 0);
	aio = d.ops->aio_setup(&d, 4) == 0;
	fill(w, 2 * BLK, 3);
	window_refusals(&d, w, aio);
	window_inside(&d, w, want, aio);
	/* not one byte outside the window changed; inside, just what was written */
	CU_ASSERT_EQUAL(d.ops->read(&d, 0, got, 1u << 20), 0);
	CU_ASSERT_EQUAL(memcmp(got, want, 1u << 20), 0);
	d.ops->close(&d);
out:
	free(w);
	free(want);
	free(got);
}

static void test_window_sim(void)
{
	const char *dir = pc_test_tmpdir("sim-window");
	char path[PATH_MAX], err[512];
	uint8_t *w = aligned(2 * BLK), *want = aligned(1u << 20), *got = aligned(1u << 20);
	struct sim_opts *so = NULL;
	struct dev d;

	strf(path, sizeof(path), "%s/media", dir);
	unlink(path);
	CU_ASSERT_FATAL(dev_sim_ops.create(path, 1u << 20, err, sizeof(err)) == 0);
	CU_ASSERT_FATAL(dev_sim_opt(&so, "program-us", "1", err, sizeof(err)) == 0);
	memset(&d, 0, sizeof(d));
	d.ops = &dev_sim_ops;
	d.o.path = path;
	d.o.sim = so;
	CU_ASSERT_FATAL(d.ops->open(&d, 1) == 0);
	CU_ASSERT(d.wlo == 0 && d.whi == 1u << 20);
	CU_ASSERT_EQUAL(d.ops->read(&d, 0, want, 1u << 20), 0);
	CU_ASSERT_EQUAL(dev_write_window(&d, WIN_LO, WIN_HI), 0);
	CU_ASSERT_FATAL(d.ops->aio_setup(&d, 4) == 0);
	fill(w, 2 * BLK, 4);
	window_refusals(&d, w, 1);
	window_inside(&d, w, want, 1);
	CU_ASSERT_EQUAL(d.ops->flush(&d), 0);
	CU_ASSERT_EQUAL(d.ops->read(&d, 0, got, 1u << 20), 0);
	CU_ASSERT_EQUAL(memcmp(got, want, 1u << 20), 0);
	d.ops->close(&d);
	dev_sim_opts_free(so);
	free(w);
	free(want);
	free(got);
}

/* ---- the region on a file: bounds and both superblock copies ---- */

#define REG_FILE (2u << 20)
#define REG_OFF (512u * 1024)
#define REG_LEN (1u << 20)

static void file_put(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(pc_pwrite_all(fd, buf, len, (off_t)off) == 0);
	close(fd);
}

static void file_get(const char *path, uint64_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(pc_pread_all(fd, buf, len, (off_t)off) == 0);
	close(fd);
}

static int reg_open(struct region *r, const char *path, uint64_t length, char *err, size_t errlen)
{
	struct region_opts o = { .spec = path, .offset = REG_OFF, .length = length };

	err[0] = '\0';
	return region_open(r, &o, 1, err, errlen);
}

static void test_region_bounds(void)
{
	char path[PATH_MAX], err[1024];
	uint8_t *before, *after, sa[PC_SECTOR], sb[PC_SECTOR], forged[PC_SECTOR];
	struct region_opts o;
	struct region r;
	struct pc_geom g;
	uint64_t b_at = REG_OFF + REG_LEN - BLK;

	if (make_file(path, sizeof(path), "region-bounds") != 0)
		return;
	before = malloc(REG_FILE);
	after = malloc(REG_FILE);
	CU_ASSERT_FATAL(before && after);
	CU_ASSERT_FATAL(truncate(path, REG_FILE) == 0);
	fill(before, REG_FILE, 11);
	file_put(path, 0, before, REG_FILE);

	/* prepare writes the region and nothing else */
	o = (struct region_opts){ .spec = path, .offset = REG_OFF, .length = REG_LEN };
	CU_ASSERT_FATAL(region_prepare(&o, 4096, 9, 0, 0, err, sizeof(err)) == 0);
	file_get(path, 0, after, REG_FILE);
	CU_ASSERT_EQUAL(memcmp(before, after, REG_OFF), 0);
	CU_ASSERT_EQUAL(memcmp(before + REG_OFF + REG_LEN, after + REG_OFF + REG_LEN, REG_FILE - REG_OFF - REG_LEN), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(before + REG_OFF, after + REG_OFF, REG_LEN), 0);

	/* opened, the window is the region; a write past it is refused */
	CU_ASSERT_FATAL(reg_open(&r, path, REG_LEN, err, sizeof(err)) == 0);
	CU_ASSERT(r.sb_ok[0] && r.sb_ok[1] && !r.sb_why[0][0] && !r.sb_why[1][0]);
	CU_ASSERT(r.dev.wlo == REG_OFF && r.dev.whi == REG_OFF + REG_LEN);
	CU_ASSERT_EQUAL(r.dev.ops->write(&r.dev, REG_OFF + REG_LEN, after, BLK, 0), -ERANGE);
	CU_ASSERT_EQUAL(r.dev.ops->write(&r.dev, REG_OFF - BLK, after, BLK, DEV_W_DSYNC), -ERANGE);
	CU_ASSERT_EQUAL(region_write(&r, r.g.nslots, after, 0), -ERANGE);
	region_close(&r);
	file_get(path, 0, after, REG_FILE);
	CU_ASSERT_EQUAL(memcmp(before, after, REG_OFF), 0);
	CU_ASSERT_EQUAL(memcmp(before + REG_OFF + REG_LEN, after + REG_OFF + REG_LEN, REG_FILE - REG_OFF - REG_LEN), 0);

	/* a region of 512 KiB where the superblock says 1 MiB: A claims too much,
	 * and there is no B at the shorter end */
	CU_ASSERT_EQUAL(reg_open(&r, path, REG_LEN / 2, err, sizeof(err)), -ENOENT);
	CU_ASSERT(HAS(err, path) && HAS(err, "the region prepared at offset 524288 is 1048576 bytes (its superblock A), "
					"but --length 524288 asks for less: run with --length 1048576"));
	CU_ASSERT(!HAS(err, "prepare' first"));

	/* copy A damaged: B is found where the given length ends */
	file_get(path, REG_OFF, sa, PC_SECTOR);
	file_get(path, b_at, sb, PC_SECTOR);
	memset(forged, 0xa5, sizeof(forged));
	file_put(path, REG_OFF, forged, PC_SECTOR);
	CU_ASSERT_FATAL(reg_open(&r, path, REG_LEN, err, sizeof(err)) == 0);
	CU_ASSERT(!r.sb_ok[0] && r.sb_ok[1] && HAS(r.sb_why[0], "magic missing"));
	CU_ASSERT(r.dev.wlo == REG_OFF && r.dev.whi == REG_OFF + REG_LEN);
	region_close(&r);
	/* ...but only there: without --length B is looked for at the device's end */
	CU_ASSERT_EQUAL(reg_open(&r, path, 0, err, sizeof(err)), -ENOENT);
	CU_ASSERT(HAS(err, "superblock A: no powercut superblock") && HAS(err, "superblock B: no powercut superblock"));

	/* copy B where copy A belongs is not copy A */
	file_put(path, REG_OFF, sb, PC_SECTOR);
	CU_ASSERT_FATAL(reg_open(&r, path, REG_LEN, err, sizeof(err)) == 0);
	CU_ASSERT(!r.sb_ok[0] && r.sb_ok[1] && HAS(r.sb_why[0], "copy B found where copy A belongs"));
	region_close(&r);
	file_put(path, REG_OFF, sa, PC_SECTOR);

	/* copy B damaged: A alone is used, B's reason kept */
	file_put(path, b_at, forged, PC_SECTOR);
	CU_ASSERT_FATAL(reg_open(&r, path, 0, err, sizeof(err)) == 0);
	CU_ASSERT(r.sb_ok[0] && !r.sb_ok[1] && HAS(r.sb_why[1], "magic missing"));
	CU_ASSERT(r.g.region_bytes == REG_LEN && r.dev.whi == REG_OFF + REG_LEN);
	region_close(&r);

	/* a valid copy B of a different, smaller region sitting at A's B place */
	CU_ASSERT_FATAL(pc_geom_init(&g, REG_LEN / 2, 4096, 9, err, sizeof(err)) == 0);
	pc_sb_encode(&g, 1, forged);
	file_put(path, b_at, forged, PC_SECTOR);
	CU_ASSERT_FATAL(reg_open(&r, path, 0, err, sizeof(err)) == 0);
	CU_ASSERT(r.sb_ok[0] && !r.sb_ok[1] && HAS(r.sb_why[1], "belongs at"));
	region_close(&r);

	/* two valid copies that disagree */
	memcpy(forged, sb, PC_SECTOR);
	CU_ASSERT_FATAL(pc_sb_decode(sb, &g, err, sizeof(err)) == 0);
	g.seed++;
	pc_sb_encode(&g, 1, forged);
	file_put(path, b_at, forged, PC_SECTOR);
	CU_ASSERT_EQUAL(reg_open(&r, path, REG_LEN, err, sizeof(err)), -EINVAL);
	CU_ASSERT(HAS(err, "disagree"));

	/* restored, and the bytes outside never changed through all of it */
	file_put(path, b_at, sb, PC_SECTOR);
	CU_ASSERT_FATAL(reg_open(&r, path, REG_LEN, err, sizeof(err)) == 0);
	region_close(&r);
	file_get(path, 0, after, REG_FILE);
	CU_ASSERT_EQUAL(memcmp(before, after, REG_OFF), 0);
	CU_ASSERT_EQUAL(memcmp(before + REG_OFF + REG_LEN, after + REG_OFF + REG_LEN, REG_FILE - REG_OFF - REG_LEN), 0);
	free(before);
	free(after);
}

/* ---- mount and swap refusals against crafted files ---- */

static const char mountinfo_text[] =
	"21 26 0:20 / /proc rw,relatime - proc proc rw\n"
	"30 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
	"40 30 259:1 / /mnt/my\\040data rw,relatime shared:5 - vfat /dev/loop3p1 rw\n"
	"41 30 179:2 / /boot rw,relatime master:1 unbindable - ext4 /dev/mmcblk0p2 rw\n"
	"43 21 0:12 / /sys/kernel/my\\040tracing\\011x rw,nosuid - tracefs trace\\040fs rw\n"
	"this line is garbage\n"
	"42 30 nonsense / /x rw - ext4 /dev/x rw\n";

static void test_mountinfo(void)
{
	const char *dir = pc_test_tmpdir("posix-mount");
	char mi[PATH_MAX], err[512];
	const struct {
		const char *name;
		dev_t devs[4];
		size_t n;
		int ret;
		const char *msg;
	} cases[] = {
		/* the device itself */
		{ "/dev/loop3p1", { makedev(259, 1) }, 1, -EBUSY,
		  "/dev/loop3p1 is mounted on /mnt/my data (mountinfo); unmount it first" },
		/* a whole disk whose second partition is mounted */
		{ "/dev/loop3", { makedev(7, 3), makedev(259, 0), makedev(259, 1) }, 3, -EBUSY,
		  "/dev/loop3 is a whole disk whose partition /dev/loop3p1 (259:1) is mounted on /mnt/my data "
		  "(mountinfo); unmount it first" },
		{ "/dev/mmcblk0p2", { makedev(179, 2) }, 1, -EBUSY, "/dev/mmcblk0p2 is mounted on /boot" },
		/* siblings of a mounted partition are fine */
		{ "/dev/mmcblk0p3", { makedev(179, 3) }, 1, 0, NULL },
		{ "/dev/loop4", { makedev(7, 4), makedev(259, 7) }, 2, 0, NULL },
	};

	strf(mi, sizeof(mi), "%s/mountinfo", dir);
	write_file(mi, mountinfo_text);
	for (size_t i = 0; i < PC_ARRAY_SIZE(cases); i++) {
		int ret;

		err[0] = '\0';
		ret = blockdev_check_mounted(mi, cases[i].name, cases[i].devs, cases[i].n, err, sizeof(err));
		CU_ASSERT_EQUAL(ret, cases[i].ret);
		if (cases[i].msg && !HAS(err, cases[i].msg))
			printf("\n  case %zu: got \"%s\"\n", i, err);
		if (cases[i].msg)
			CU_ASSERT(HAS(err, cases[i].msg));
	}
	/* the io audit finds tracefs through the same reader: escapes undone */
	{
		char tdir[PATH_MAX] = "";

		CU_ASSERT_EQUAL(audit_tracefs_mounted(mi, tdir, sizeof(tdir)), 0);
		CU_ASSERT_STRING_EQUAL(tdir, "/sys/kernel/my tracing\tx");
	}
	/* the real file parses, and a missing one is an error, not "not mounted" */
	CU_ASSERT(blockdev_check_mounted("/proc/self/mountinfo", "x", cases[3].devs, 1, err, sizeof(err)) == 0);
	strf(mi, sizeof(mi), "%s/nope", dir);
	CU_ASSERT_EQUAL(blockdev_check_mounted(mi, "/dev/x", cases[3].devs, 1, err, sizeof(err)), -ENOENT);
	CU_ASSERT(HAS(err, "/dev/x") && HAS(err, mi));
	{
		char tdir[PATH_MAX] = "";

		CU_ASSERT_EQUAL(audit_tracefs_mounted(mi, tdir, sizeof(tdir)), -ENOENT);
	}
}

/* Any block device node will do for a crafted /proc/swaps. */
static int find_blockdev(char *path, size_t len, dev_t *rdev)
{
	DIR *dh = opendir("/dev");
	struct dirent *de;
	struct stat st;
	int found = 0;

	if (!dh)
		return 0;
	while (!found && (de = readdir(dh)) != NULL) {
		strf(path, len, "/dev/%s", de->d_name);
		if (!strchr(de->d_name, ' ') && stat(path, &st) == 0 && S_ISBLK(st.st_mode)) {
			*rdev = st.st_rdev;
			found = 1;
		}
	}
	closedir(dh);
	return found;
}

static void test_swaps(void)
{
	const char *dir = pc_test_tmpdir("posix-swap");
	char sw[PATH_MAX], node[PATH_MAX], text[PATH_MAX + 128], err[512];
	dev_t devs[2];

	if (!find_blockdev(node, sizeof(node), &devs[1])) {
		printf("\n  note: no block device node in /dev: skipping swap test\n");
		return;
	}
	devs[0] = makedev(4095, 4095);
	strf(sw, sizeof(sw), "%s/swaps", dir);
	strf(text, sizeof(text), "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
	     "%s                               partition\t1048572\t\t0\t\t-2\n", node);
	write_file(sw, text);
	CU_ASSERT_EQUAL(blockdev_check_swap(sw, node, &devs[1], 1, err, sizeof(err)), -EBUSY);
	CU_ASSERT(HAS(err, node) && HAS(err, "swapoff"));
	CU_ASSERT_EQUAL(blockdev_check_swap(sw, "/dev/disk", devs, 2, err, sizeof(err)), -EBUSY);
	CU_ASSERT(HAS(err, "whole disk whose partition"));
	CU_ASSERT_EQUAL(blockdev_check_swap(sw, "/dev/other", devs, 1, err, sizeof(err)), 0);
	/* a kernel without swap has no /proc/swaps: nothing to refuse */
	strf(sw, sizeof(sw), "%s/none", dir);
	CU_ASSERT_EQUAL(blockdev_check_swap(sw, "/dev/other", devs, 1, err, sizeof(err)), 0);
}

/* ---- EXT_CSD ---- */

static void test_ext_csd(void)
{
	uint8_t raw[BLOCKDEV_EXT_CSD_LEN], back[BLOCKDEV_EXT_CSD_LEN];
	char hex[2 * BLOCKDEV_EXT_CSD_LEN + 2];
	struct blockdev_ext_csd x;
	json_object *o;

	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(i * 7 + 3);	/* noise around the fields */
	raw[33] = 0x01;
	raw[166] = 0x15;
	raw[167] = 0x1f;
	raw[192] = 8;
	raw[222] = 0x01;
	raw[249] = 0x78;
	raw[250] = 0x56;
	raw[251] = 0x34;
	raw[252] = 0x12;
	memcpy(raw + 254, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	raw[267] = 2;
	raw[268] = 3;
	raw[269] = 11;

	CU_ASSERT_EQUAL(blockdev_ext_csd_parse(raw, sizeof(raw) - 1, &x), -EINVAL);
	CU_ASSERT_FATAL(blockdev_ext_csd_parse(raw, sizeof(raw), &x) == 0);
	CU_ASSERT_EQUAL(x.cache_ctrl, 0x01);
	CU_ASSERT_EQUAL(x.wr_rel_param, 0x15);
	CU_ASSERT_EQUAL(x.wr_rel_set, 0x1f);
	CU_ASSERT_EQUAL(x.rev, 8);
	CU_ASSERT_EQUAL(x.rel_wr_sec_c, 0x01);
	CU_ASSERT_EQUAL(x.cache_size, 0x12345678u);

	o = blockdev_ext_csd_json(&x, "debugfs");
	CU_ASSERT_FATAL(o != NULL);
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(o, "source")), "debugfs");
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(o, "wr_rel_param")), 0x15);
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(o, "wr_rel_set")), 0x1f);
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(o, "rel_wr_sec_c")), 1);
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(o, "cache_ctrl")), 1);
	CU_ASSERT_EQUAL(json_object_get_int64(json_object_object_get(o, "cache_size")), 0x12345678);
	CU_ASSERT_EQUAL(json_object_get_boolean(json_object_object_get(o, "en_rel_wr")), 1);
	CU_ASSERT_EQUAL(json_object_get_boolean(json_object_object_get(o, "available")), 1);
	/* firmware and wear (life time estimates, pre-EOL) */
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(o, "fw_version")), "0102030405060708");
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(o, "pre_eol_info")), 2);
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(o, "life_time_a")), 3);
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(o, "life_time_b")), 11);
	json_object_put(o);

	/* debugfs text: 1024 hex digits and a newline */
	for (size_t i = 0; i < sizeof(raw); i++)
		strf(hex + 2 * i, 3, "%02x", raw[i]);
	strcat(hex, "\n");
	CU_ASSERT_EQUAL(blockdev_ext_csd_from_hex(hex, back, sizeof(back)), 0);
	CU_ASSERT_EQUAL(memcmp(raw, back, sizeof(raw)), 0);
	hex[100] = 'g';
	CU_ASSERT_EQUAL(blockdev_ext_csd_from_hex(hex, back, sizeof(back)), -EINVAL);
	hex[100] = '0';
	hex[1000] = '\0';
	CU_ASSERT_EQUAL(blockdev_ext_csd_from_hex(hex, back, sizeof(back)), -EINVAL);	/* short */
	CU_ASSERT_EQUAL(blockdev_ext_csd_from_hex("00 11", back, 1), -EINVAL);		/* trailing */
	CU_ASSERT_EQUAL(blockdev_ext_csd_from_hex(" ab\n", back, 1), 0);
	CU_ASSERT_EQUAL(back[0], 0xab);
}

/* ---- tag resolution ---- */

static void test_resolve(void)
{
	static const char *const paths[] = { "/dev/mmcblk0p3", "build/media=odd.img", "LABELS=x", "relative" };
	char path[PATH_MAX], err[512], spec[64];
	int ret;

	for (size_t i = 0; i < PC_ARRAY_SIZE(paths); i++) {
		CU_ASSERT_EQUAL(blockdev_resolve(paths[i], path, sizeof(path), err, sizeof(err)), 0);
		CU_ASSERT_STRING_EQUAL(path, paths[i]);
	}
	CU_ASSERT_EQUAL(blockdev_resolve("/dev/sda1", path, 6, err, sizeof(err)), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(blockdev_resolve("PARTLABEL=", path, sizeof(path), err, sizeof(err)), -EINVAL);
	CU_ASSERT(HAS(err, "empty PARTLABEL"));
	CU_ASSERT_EQUAL(blockdev_resolve("", path, sizeof(path), err, sizeof(err)), -EINVAL);

	strf(spec, sizeof(spec), "PARTLABEL=pc-no-such-%d", (int)getpid());
	ret = blockdev_resolve(spec, path, sizeof(path), err, sizeof(err));
#ifdef PC_HAVE_BLKID
	CU_ASSERT_EQUAL(ret, -ENOENT);
	CU_ASSERT(HAS(err, spec) && HAS(err, "blkid") && HAS(err, "lsblk -o NAME,PARTLABEL"));
#else
	CU_ASSERT_EQUAL(ret, -ENOTSUP);
	CU_ASSERT(HAS(err, spec) && HAS(err, "without libblkid"));
#endif
}

/* ---- a real partition on a loop device (root only) ---- */

static int have_tool(const char *name)
{
	char cmd[128];

	strf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
	return system(cmd) == 0;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[PATH_MAX * 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* losetup -f --show -P: the loop device's name ("/dev/loop3") into out. */
static int loop_attach(const char *img, char *out, size_t len)
{
	char cmd[PATH_MAX + 64];
	FILE *p;
	int ok;

	strf(cmd, sizeof(cmd), "losetup -f --show -P '%s'", img);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	ok = fgets(out, (int)len, p) != NULL;
	if (pclose(p) != 0 || !ok)
		return -1;
	out[strcspn(out, "\n")] = '\0';
	/* a partition that partx added outlives losetup -d: drop any that a
	 * detached image left on this loop device, or its stale p1 (at the old
	 * image's offset) would stand for this image's */
	sh("partx -d '%s' >/dev/null 2>&1", out);
	return strncmp(out, "/dev/loop", 9) == 0 ? 0 : -1;
}

/* partx -d, then losetup -d: partitions partx added outlive the detach */
static int loop_detach(const char *loop)
{
	sh("partx -d '%s' >/dev/null 2>&1", loop);
	return sh("losetup -d '%s'", loop);
}

/*
 * Partition nodes appear asynchronously; and a kernel without the GPT parser
 * (CONFIG_EFI_PARTITION off, as on some VMs) never scans one, so partx adds
 * it through BLKPG.
 */
static int loop_wait_part(const char *loop)
{
	char sys[PATH_MAX], node[PATH_MAX];
	const char *name = strrchr(loop, '/') + 1;

	strf(sys, sizeof(sys), "/sys/class/block/%sp1", name);
	strf(node, sizeof(node), "%sp1", loop);
	for (int i = 0; i < 60; i++) {
		if (i == 10)
			sh("partx -a '%s' >/dev/null 2>&1", loop);
		if (have_tool("udevadm"))
			sh("udevadm settle -t 2 >/dev/null 2>&1");
		if (access(sys, F_OK) == 0 && access(node, F_OK) == 0)
			return 0;
		pc_sleep_us(50000);
	}
	return -1;
}

static int resolve_retry(const char *spec, char *path, size_t len, char *err, size_t errlen)
{
	int ret = -ENOENT;

	for (int i = 0; i < 5 && ret == -ENOENT; i++) {
		if (i)
			pc_sleep_us(200000);
		ret = blockdev_resolve(spec, path, len, err, errlen);
	}
	return ret;
}

/* A filesystem mounted on the partition: every open is refused, whole disk too. */
static void loop_mounted_checks(const char *loop, const char *part)
{
	char mnt[PATH_MAX], real[PATH_MAX];
	struct dev d;

	if (!have_tool("mkfs.ext4") || !have_tool("mount")) {
		printf("\n  note: no mkfs.ext4/mount: skipping the mounted-partition check\n");
		return;
	}
	strf(mnt, sizeof(mnt), "%s", pc_test_tmpdir("posix-mnt"));
	if (!realpath(mnt, real) || sh("mkfs.ext4 -q -F '%s' >/dev/null 2>&1", part) != 0 ||
	    sh("mount -t ext4 '%s' '%s' 2>/dev/null", part, real) != 0) {
		printf("\n  note: cannot mount %s here: skipping the mounted-partition check\n", part);
		return;
	}
	dev_init(&d, part);
	CU_ASSERT_EQUAL(d.ops->open(&d, 1), -EBUSY);
	CU_ASSERT(HAS(d.err, part) && HAS(d.err, "is mounted on") && HAS(d.err, real) && HAS(d.err, "unmount"));
	dev_init(&d, part);
	CU_ASSERT_EQUAL(d.ops->open(&d, 0), -EBUSY);
	dev_init(&d, loop);
	d.o.allow_whole_disk = 1;
	CU_ASSERT_EQUAL(d.ops->open(&d, 1), -EBUSY);
	CU_ASSERT(HAS(d.err, "whole disk whose partition") && HAS(d.err, part) && HAS(d.err, real));
	if (d.fd >= 0)
		d.ops->close(&d);
	CU_ASSERT(sh("umount '%s'", real) == 0);
}

static char label_spec[64];

/* No CU_ASSERT_FATAL in here: its longjmp would skip the detach. */
static void loop_partition_checks(const char *loop, const char *img, uint8_t *w, uint8_t *r)
{
	char part[PATH_MAX], path[PATH_MAX], err[512], loop2[64] = "";
	struct dev d;
	json_object *id, *q;
	int ret;

	strf(part, sizeof(part), "%sp1", loop);
	ret = resolve_retry(label_spec, path, sizeof(path), err, sizeof(err));
#ifdef PC_HAVE_BLKID
	if (ret)
		printf("\n  resolve: %s\n", err);
	CU_ASSERT_EQUAL(ret, 0);
	CU_ASSERT_STRING_EQUAL(path, part);
#else
	CU_ASSERT_EQUAL(ret, -ENOTSUP);
#endif

	/* a partition may be opened for write */
	dev_init(&d, part);
	ret = d.ops->open(&d, 1);
	CU_ASSERT_EQUAL(ret, 0);
	if (ret) {
		printf("\n  open %s: %s\n", part, d.err);
		return;
	}
	CU_ASSERT_EQUAL(d.is_blockdev, 1);
	CU_ASSERT_EQUAL(d.size, 8u << 20);
	fill(w, BLK, 99);
	CU_ASSERT_EQUAL(d.ops->write(&d, BLK, w, BLK, DEV_W_DSYNC), 0);
	CU_ASSERT_EQUAL(d.ops->flush(&d), 0);
	CU_ASSERT_EQUAL(d.ops->read(&d, BLK, r, BLK), 0);
	CU_ASSERT_EQUAL(memcmp(w, r, BLK), 0);

	id = json_object_new_object();
	d.ops->identity(&d, id);
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(id, "type")), "loop");
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(id, "disk")), strrchr(loop, '/') + 1);
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(id, "partition")), strrchr(part, '/') + 1);
	CU_ASSERT_EQUAL(json_object_get_int64(json_object_object_get(id, "size")), 8 << 20);
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(id, "logical_block_size")), 512);
	CU_ASSERT(json_object_object_get_ex(id, "queue", &q));
	CU_ASSERT(json_object_object_get_ex(q, "fua", NULL) && json_object_object_get_ex(q, "write_cache", NULL));
	json_object_put(id);
	d.ops->close(&d);

	/* the whole disk is refused unless asked for */
	dev_init(&d, loop);
	CU_ASSERT_EQUAL(d.ops->open(&d, 1), -EISDIR);
	CU_ASSERT(HAS(d.err, loop) && HAS(d.err, "whole disk") && HAS(d.err, "--allow-whole-disk"));
	CU_ASSERT_EQUAL(d.fd, -1);
	dev_init(&d, loop);
	d.o.allow_whole_disk = 1;
	CU_ASSERT_EQUAL(d.ops->open(&d, 0), 0);
	CU_ASSERT_EQUAL(d.size, 16u << 20);
	d.ops->close(&d);

	loop_mounted_checks(loop, part);

#ifdef PC_HAVE_BLKID
	/* two devices with one label (a cloned image): refuse to guess */
	if (loop_attach(img, loop2, sizeof(loop2)) == 0) {
		if (loop_wait_part(loop2) == 0) {
			ret = blockdev_resolve(label_spec, path, sizeof(path), err, sizeof(err));
			CU_ASSERT_EQUAL(ret, -EEXIST);
			CU_ASSERT(HAS(err, "matches 2 devices") && HAS(err, "PARTUUID="));
		}
		loop_detach(loop2);
	}
#else
	(void)img;
	(void)loop2;
#endif
}

static void test_loop_partition(void)
{
	char img[PATH_MAX], loop[64];
	uint8_t *w, *r;
	const char *dir;

	if (geteuid() != 0 || !have_tool("losetup") || !have_tool("sfdisk") || !have_tool("partx")) {
		printf("\n  note: needs root, losetup, sfdisk and partx: skipping the loop-device test\n");
		return;
	}
	dir = pc_test_tmpdir("posix-loop");
	strf(img, sizeof(img), "%s/gpt.img", dir);
	CU_ASSERT_FATAL(sh("truncate -s 16M '%s'", img) == 0);
	/* the pid in the name keeps a concurrent run, or a loop device left
	 * behind by a killed one, from making the label ambiguous */
	strf(label_spec, sizeof(label_spec), "PARTLABEL=pc-test-%d", (int)getpid());
	CU_ASSERT_FATAL(sh("printf 'label: gpt\\nsize=8M, name=\"%s\"\\n' | sfdisk -q '%s' >/dev/null",
			   label_spec + strlen("PARTLABEL="), img) == 0);
	w = aligned(BLK);
	r = aligned(BLK);
	if (loop_attach(img, loop, sizeof(loop)) != 0) {
		printf("\n  note: losetup could not attach %s (no free loop device?): skipping\n", img);
		goto out;
	}
	if (loop_wait_part(loop) == 0)
		loop_partition_checks(loop, img, w, r);
	else
		CU_FAIL("the loop device's partition node never appeared");
	/* always detach, also after a failed check */
	CU_ASSERT(loop_detach(loop) == 0);
out:
	free(w);
	free(r);
}

/* ---- prepare: what libblkid finds, files in use ---- */

static int file_same(const char *path, const uint8_t *want, size_t len)
{
	uint8_t *got = malloc(len);
	int fd = open(path, O_RDONLY), same;

	CU_ASSERT_FATAL(got && fd >= 0);
	same = pc_pread_all(fd, got, len, 0) == 0 && memcmp(got, want, len) == 0;
	close(fd);
	free(got);
	return same;
}

static void test_prepare_foreign(void)
{
	const char *dir = pc_test_tmpdir("prepare-foreign");
	char path[PATH_MAX], err[1024], what[256];
	struct region_opts o = { 0 };
	uint8_t *img;
	int fd, ret;

	strf(path, sizeof(path), "%s/fs.img", dir);
	unlink(path);
	CU_ASSERT_FATAL(sh("truncate -s 16M '%s'", path) == 0);
	/* nothing there: nothing found */
	ret = blockdev_probe_foreign(path, 0, 0, what, sizeof(what), err, sizeof(err));
#ifndef PC_HAVE_BLKID
	CU_ASSERT_EQUAL(ret, -ENOTSUP);
	CU_ASSERT(HAS(err, "without libblkid"));
	return;
#endif
	CU_ASSERT_EQUAL(ret, 0);
	if (!have_tool("mkfs.ext4") || sh("mkfs.ext4 -q -F -b 1024 -L pcfs '%s' >/dev/null 2>&1", path) != 0) {
		printf("\n  note: no mkfs.ext4: skipping the foreign-filesystem checks\n");
		return;
	}
	ret = blockdev_probe_foreign(path, 0, 0, what, sizeof(what), err, sizeof(err));
	CU_ASSERT_EQUAL(ret, 1);
	CU_ASSERT(HAS(what, "an ext4 filesystem (LABEL=pcfs)"));
	/* a range holding only the middle of the filesystem (between the 1 KiB-block
	 * groups' backup superblocks at 0 and 8 MiB) shows no signature itself */
	CU_ASSERT_EQUAL(blockdev_probe_foreign(path, 10u << 20, 4u << 20, what, sizeof(what), err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(blockdev_probe_foreign(path, 8u << 20, 4u << 20, what, sizeof(what), err, sizeof(err)), 1);

	img = malloc(16u << 20);
	CU_ASSERT_FATAL(img != NULL);
	fd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0 && pc_pread_all(fd, img, 16u << 20, 0) == 0);
	close(fd);
	o.spec = path;
	/* refused, naming the device, what it holds and what to type; nothing written */
	ret = region_prepare(&o, 4096, 1, 0, 0, err, sizeof(err));
	CU_ASSERT_EQUAL(ret, -EEXIST);
	CU_ASSERT(HAS(err, path) && HAS(err, "holds an ext4 filesystem") && HAS(err, "nothing was written") &&
		  HAS(err, "--force --confirm-device"));
	/* a region later in the file: the device still holds the filesystem */
	o.offset = 8u << 20;
	o.length = 4u << 20;
	CU_ASSERT_EQUAL(region_prepare(&o, 4096, 1, 0, 0, err, sizeof(err)), -EEXIST);
	/* --force alone, or with another device's name, is not enough */
	o.force = 1;
	CU_ASSERT_EQUAL(region_prepare(&o, 4096, 1, 0, 0, err, sizeof(err)), -EEXIST);
	o.confirm_device = "/dev/sdz9";
	CU_ASSERT_EQUAL(region_prepare(&o, 4096, 1, 0, 0, err, sizeof(err)), -EINVAL);
	CU_ASSERT(HAS(err, "does not name the device"));
	CU_ASSERT(file_same(path, img, 16u << 20));
	/* --force with the device typed again: prepared, only inside the range */
	o.confirm_device = path;
	CU_ASSERT_EQUAL(region_prepare(&o, 4096, 1, 0, 0, err, sizeof(err)), 0);
	/* ours now: re-preparing needs no --force (libblkid still sees the ext4) */
	o.force = 0;
	o.confirm_device = NULL;
	CU_ASSERT_EQUAL(region_prepare(&o, 4096, 2, 0, 0, err, sizeof(err)), 0);
	fd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	{
		uint8_t *got = malloc(16u << 20);

		CU_ASSERT_FATAL(got != NULL);
		CU_ASSERT(pc_pread_all(fd, got, 16u << 20, 0) == 0);
		CU_ASSERT_EQUAL(memcmp(got, img, 8u << 20), 0);
		CU_ASSERT_EQUAL(memcmp(got + (12u << 20), img + (12u << 20), 4u << 20), 0);
		free(got);
	}
	close(fd);
	free(img);
}

/* A file that backs a loop device is refused for writing (root only). */
static void test_file_in_use(void)
{
	const char *dir = pc_test_tmpdir("file-in-use");
	char path[PATH_MAX], loop[64], err[512];
	struct stat st;
	struct dev d;

	strf(path, sizeof(path), "%s/backing.img", dir);
	unlink(path);
	CU_ASSERT_FATAL(sh("truncate -s 4M '%s'", path) == 0);
	CU_ASSERT_FATAL(stat(path, &st) == 0);
	CU_ASSERT_EQUAL(blockdev_check_file_unused(path, &st, err, sizeof(err)), 0);
	if (geteuid() != 0 || !have_tool("losetup")) {
		printf("\n  note: needs root and losetup: skipping the loop backing-file check\n");
		return;
	}
	if (loop_attach(path, loop, sizeof(loop)) != 0) {
		printf("\n  note: losetup could not attach %s: skipping\n", path);
		return;
	}
	CU_ASSERT_EQUAL(blockdev_check_file_unused(path, &st, err, sizeof(err)), -EBUSY);
	CU_ASSERT(HAS(err, path) && HAS(err, "backing file of the loop device") && HAS(err, loop) &&
		  HAS(err, "losetup -d"));
	/* the posix backend refuses it for writing, not for reading */
	dev_init(&d, path);
	CU_ASSERT_EQUAL(d.ops->open(&d, 1), -EBUSY);
	CU_ASSERT(HAS(d.err, "backing file"));
	dev_init(&d, path);
	if (d.ops->open(&d, 0) == 0)
		d.ops->close(&d);
	else
		CU_FAIL("a loop device's backing file cannot be opened for reading");
	CU_ASSERT(loop_detach(loop) == 0);
	CU_ASSERT_EQUAL(blockdev_check_file_unused(path, &st, err, sizeof(err)), 0);
}

int suite_posix(void)
{
	CU_pSuite s = CU_add_suite("posix", NULL, NULL);

	if (!s)
		return -1;
	if (!CU_add_test(s, "dev_ops_for", test_ops_for) ||
	    !CU_add_test(s, "file read/write/dsync/flush", test_file_rw) ||
	    !CU_add_test(s, "open errors", test_open_errors) ||
	    !CU_add_test(s, "io_uring qd 1", test_aio_qd1) ||
	    !CU_add_test(s, "io_uring qd 8", test_aio_qd8) ||
	    !CU_add_test(s, "io_uring misuse", test_aio_misuse) ||
	    !CU_add_test(s, "write window (posix)", test_window_posix) ||
	    !CU_add_test(s, "write window (sim)", test_window_sim) ||
	    !CU_add_test(s, "region bounds and superblock copies", test_region_bounds) ||
	    !CU_add_test(s, "mountinfo refusals", test_mountinfo) ||
	    !CU_add_test(s, "swap refusals", test_swaps) ||
	    !CU_add_test(s, "EXT_CSD parsing", test_ext_csd) ||
	    !CU_add_test(s, "blockdev_resolve", test_resolve) ||
	    !CU_add_test(s, "loop device partition (root)", test_loop_partition) ||
	    !CU_add_test(s, "prepare refuses what libblkid finds", test_prepare_foreign) ||
	    !CU_add_test(s, "a loop device's backing file (root)", test_file_in_use))
		return -1;
	return 0;
}

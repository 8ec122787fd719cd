/*
 * test_scan.c - the scan's read pipeline says exactly what the synchronous
 * scan says: the same lines, in the same order, whatever the asynchronous
 * reads do (complete in order or backwards, refuse to start, fail at the
 * third submission, fail a chunk whose 4 KiB blocks are then read one by one).
 *
 * The device is a region image in memory behind a dev_ops table of this
 * file's own; region_scan() runs on a struct region set up by hand.
 */
#include "tests/unit/suites.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/region.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"

#define IMG_BYTES (2u * 1024 * 1024)

/* How the fake device's asynchronous reads behave. */
enum aio_kind {
	AIO_NONE,	/* no aio_read hook: synchronous reads only */
	AIO_FIFO,	/* completions in submission order */
	AIO_LIFO,	/* the newest completes first */
	AIO_ENOSYS,	/* the first submission says ENOSYS (no io_uring) */
	AIO_FAIL3,	/* the third submission is refused */
};

static struct {
	uint8_t *img;
	uint64_t unreadable;	/* this 4 KiB block fails every read that covers it */
	enum aio_kind kind;
	struct dev_io *q[64];
	unsigned nq, submits;
} fake;

static int fake_read(struct dev *d, uint64_t off, void *buf, size_t len)
{
	if (off > IMG_BYTES || len > IMG_BYTES - off)
		return -EIO;
	if (fake.unreadable / 4096 >= off / 4096 && fake.unreadable / 4096 <= (off + len - 1) / 4096)
		return -EIO;
	memcpy(buf, fake.img + off, len);
	return 0;
}

static int fake_aio_read(struct dev *d, struct dev_io *io)
{
	fake.submits++;
	if ((fake.kind == AIO_ENOSYS && fake.submits == 1) || (fake.kind == AIO_FAIL3 && fake.submits == 3)) {
		snprintf(d->err, sizeof(d->err), "fake: no");
		return fake.kind == AIO_ENOSYS ? -ENOSYS : -EBUSY;
	}
	CU_ASSERT_FATAL(fake.nq < PC_ARRAY_SIZE(fake.q));
	/* the bytes land now; the completion waits for a reap */
	io->result = fake_read(d, io->off, io->dst, io->len);
	fake.q[fake.nq++] = io;
	return 0;
}

static int fake_aio_reap(struct dev *d, struct dev_io **done, unsigned max, unsigned min)
{
	unsigned n = 0;

	while (n < max && fake.nq) {
		if (fake.kind == AIO_LIFO) {
			done[n++] = fake.q[--fake.nq];
		} else {
			done[n++] = fake.q[0];
			memmove(fake.q, fake.q + 1, --fake.nq * sizeof(fake.q[0]));
		}
	}
	return (int)n;
}

static const struct dev_ops ops_sync = { .name = "fake", .read = fake_read };
static const struct dev_ops ops_async = {
	.name = "fake", .read = fake_read, .aio_read = fake_aio_read, .aio_reap = fake_aio_reap,
};

struct lines {
	char *buf;
	size_t len;
};

static int collect(json_object *msg, void *arg)
{
	struct lines *l = arg;
	char line[PC_PROTO_MAX_LINE + 2];
	int n = pc_msg_line(msg, line, sizeof(line));

	json_object_put(msg);
	if (n < 0)
		return n;
	/* scan_end's "ms" is the one field that may differ between runs */
	if (strstr(line, "\"scan_end\""))
		n = (int)(strstr(line, "\"ms\"") - line);
	l->buf = realloc(l->buf, l->len + (size_t)n + 1);
	CU_ASSERT_FATAL(l->buf != NULL);
	memcpy(l->buf + l->len, line, (size_t)n);
	l->len += (size_t)n;
	l->buf[l->len] = 0;
	return 0;
}

/* Scan the image (all slots, or ranges) with the given backend; the lines. */
static struct lines scan_with(const struct pc_geom *g, enum aio_kind kind, const struct pc_posrange *ranges,
			      uint32_t nranges)
{
	struct region r;
	struct scan_stats st;
	struct lines l = { NULL, 0 };

	memset(&r, 0, sizeof(r));
	r.dev.ops = kind == AIO_NONE ? &ops_sync : &ops_async;
	r.dev.size = IMG_BYTES;
	r.dev.whi = IMG_BYTES;
	r.g = *g;
	fake.kind = kind;
	fake.nq = fake.submits = 0;
	CU_ASSERT_EQUAL(region_scan(&r, PC_PAT_SEQUENTIAL, ranges, nranges, collect, &l, &st), 0);
	CU_ASSERT_EQUAL(fake.nq, 0);	/* every read reaped before the scan returned */
	return l;
}

static void test_pipeline_same_lines(void)
{
	static const uint32_t sizes[] = { 4096, 65536, 512 };
	static const enum aio_kind kinds[] = { AIO_FIFO, AIO_LIFO, AIO_ENOSYS, AIO_FAIL3 };

	for (size_t z = 0; z < PC_ARRAY_SIZE(sizes); z++) {
		struct pc_geom g;
		char err[256];
		uint32_t spr;

		CU_ASSERT_EQUAL_FATAL(pc_geom_init(&g, IMG_BYTES, sizes[z], 9, err, sizeof(err)), 0);
		memset(g.uuid, 0x5a, 16);
		spr = pc_geom_spr(&g);
		fake.img = calloc(1, IMG_BYTES);
		CU_ASSERT_FATAL(fake.img != NULL);
		for (uint32_t s = 0; s < g.nslots; s++)
			pc_record_build(fake.img + pc_slot_lba(&g, s) * PC_SECTOR, &g, s, s < g.nslots / 2 ? s + 1 : 0,
					s < g.nslots / 2 ? 3 : 0, s < g.nslots / 2 ? PC_MODE_FUA : 0);
		/* damage: a torn record, flipped bits, an erased sector, and a
		 * 4 KiB block no read gets through */
		if (spr > 1)
			pc_record_build(fake.img + pc_slot_lba(&g, 10) * PC_SECTOR, &g, 10, 9999, 4, PC_MODE_NONE);
		fake.img[pc_slot_lba(&g, 10) * PC_SECTOR + 3] ^= 0x10;
		fake.img[pc_slot_lba(&g, g.nslots * 3 / 5) * PC_SECTOR + 300] ^= 0x01;
		memset(fake.img + (pc_slot_lba(&g, g.nslots - 3) + spr - 1) * PC_SECTOR, 0xff, PC_SECTOR);
		fake.unreadable = pc_slot_lba(&g, g.nslots / 3) * PC_SECTOR;

		const struct pc_posrange ranges[] = { { 1, g.nslots / 4 }, { g.nslots / 2, 2 }, { g.nslots - 1, 1 } };

		for (int partial = 0; partial < 2; partial++) {
			const struct pc_posrange *rg = partial ? ranges : NULL;
			uint32_t nrg = partial ? (uint32_t)PC_ARRAY_SIZE(ranges) : 0;
			struct lines ref = scan_with(&g, AIO_NONE, rg, nrg);

			CU_ASSERT(ref.len > 0);
			CU_ASSERT(partial || strstr(ref.buf, "\"err\"") != NULL);	/* the unreadable block is seen */
			for (size_t k = 0; k < PC_ARRAY_SIZE(kinds); k++) {
				struct lines l = scan_with(&g, kinds[k], rg, nrg);

				CU_ASSERT_EQUAL(l.len, ref.len);
				CU_ASSERT(l.buf && ref.buf && strcmp(l.buf, ref.buf) == 0);
				free(l.buf);
			}
			free(ref.buf);
		}
		{
			/* a few slots of many (the partial scan's own lists, its tables mapped lazily): ranges
			 * out of order, split and overlapping give the lines of the same slots merged in order */
			const struct pc_posrange merged[] = { { 3, 2 }, { 10, 1 }, { g.nslots / 2, 2 }, { g.nslots - 1, 1 } };
			const struct pc_posrange messy[] = { { g.nslots - 1, 1 }, { g.nslots / 2 + 1, 1 }, { 3, 2 },
							     { g.nslots / 2, 2 }, { 4, 1 }, { 10, 1 } };
			struct lines a = scan_with(&g, AIO_NONE, merged, (uint32_t)PC_ARRAY_SIZE(merged));
			struct lines b = scan_with(&g, AIO_NONE, messy, (uint32_t)PC_ARRAY_SIZE(messy));
			char want[96];

			CU_ASSERT(a.len > 0 && a.buf && strstr(a.buf, "\"slots\":6") != NULL);
			CU_ASSERT(a.buf && b.buf && strcmp(a.buf, b.buf) == 0);
			/* a gap between wanted slots ends a run, even of records alike (here the fill's) */
			snprintf(want, sizeof(want), "[%u,2,0,0,0],[%u,1,0,0,0]", g.nslots / 2, g.nslots - 1);
			CU_ASSERT(a.buf && strstr(a.buf, want) != NULL);
			if (a.buf && !strstr(a.buf, want))
				fprintf(stderr, "wanted %s in %s\n", want, a.buf);
			free(a.buf);
			free(b.buf);
		}
		free(fake.img);
	}
}

int suite_scan(void)
{
	static const struct pc_test tests[] = {
		{ "pipelined reads give the synchronous scan's lines", test_pipeline_same_lines },
	};

	return pc_test_suite("scan", tests, PC_ARRAY_SIZE(tests));
}

/*
 * test_relwr.c - the raw eMMC write: command encoding, refusal on anything
 * that is not an MMC device, and the relwr modes through the writer on the sim.
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/mmc_relwr.h"
#include "agent/region.h"
#include "agent/writer.h"

static void test_encode(void)
{
	struct mmc_relwr_cmd c[2];
	static uint8_t buf[4096];

	CU_ASSERT_EQUAL_FATAL(mmc_relwr_encode(c, 123456, 8, buf, 1, 0), 0);
	CU_ASSERT_EQUAL(c[0].opcode, 23);
	CU_ASSERT_EQUAL(c[0].arg, 8u | (1u << 31));	/* block count, reliable write */
	CU_ASSERT_EQUAL(c[0].blocks, 0);
	CU_ASSERT_EQUAL(c[0].flags, (1u << 7) | (1u << 0) | (1u << 2) | (1u << 4));	/* SPI_R1 | R1, AC */
	CU_ASSERT_EQUAL(c[1].opcode, 25);
	CU_ASSERT_EQUAL(c[1].arg, 123456u);			/* block address */
	CU_ASSERT_EQUAL(c[1].flags, (1u << 7) | (1u << 0) | (1u << 2) | (1u << 4) | (1u << 5));	/* ADTC */
	CU_ASSERT_EQUAL(c[1].write_flag, 1);
	CU_ASSERT_EQUAL(c[1].blksz, 512);
	CU_ASSERT_EQUAL(c[1].blocks, 8);
	CU_ASSERT_PTR_EQUAL(c[1].data, buf);
	/* the control variant: the same, without bit 31 */
	CU_ASSERT_EQUAL_FATAL(mmc_relwr_encode(c, 7, 1, buf, 0, 0), 0);
	CU_ASSERT_EQUAL(c[0].arg, 1u);
	CU_ASSERT_EQUAL(c[1].arg, 7u);
	/* a standard-capacity card takes byte addresses */
	CU_ASSERT_EQUAL_FATAL(mmc_relwr_encode(c, 7, 2, buf, 1, 1), 0);
	CU_ASSERT_EQUAL(c[1].arg, 7u * 512);
	CU_ASSERT_EQUAL(c[0].arg, 2u | (1u << 31));
	/* what CMD23 and the address cannot carry */
	CU_ASSERT_EQUAL(mmc_relwr_encode(c, 0, 0, buf, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(mmc_relwr_encode(c, 0, 65536, buf, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(mmc_relwr_encode(c, 0, 65535, buf, 1, 0), 0);
	CU_ASSERT_EQUAL(mmc_relwr_encode(c, 1ull << 32, 1, buf, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(mmc_relwr_encode(c, 1ull << 23, 1, buf, 1, 1), -EINVAL);
}

/* The card's answers: a card without reliable writes is named, a failed write is the device's. */
static void test_status(void)
{
	char err[256] = "";

	/* tran state, ready for data: no error */
	CU_ASSERT_EQUAL(mmc_relwr_status(0x00000900, 0x00000900, 1, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(mmc_relwr_status(0x00400900, 0x00000900, 1, err, sizeof(err)), -EOPNOTSUPP);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "relwr refused by the card: CMD23 with the reliable-write bit answered "
					   "ILLEGAL_COMMAND (R1 0x00400900)"));
	CU_ASSERT_EQUAL(mmc_relwr_status(0x00000900, 0x04000900, 1, err, sizeof(err)), -EIO);	/* WP_VIOLATION */
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "0x04000900 after CMD25"));
	CU_ASSERT_EQUAL(mmc_relwr_status(0x80000900, 0x00000900, 0, err, sizeof(err)), -EIO);	/* OUT_OF_RANGE */
	CU_ASSERT_EQUAL(mmc_relwr_status(0x00000900, 0x00400900, 1, err, sizeof(err)), -EIO);
}

static void test_not_mmc(void)
{
	const char *dir = pc_test_tmpdir("relwr");
	char path[512], err[512] = "";
	struct mmc_relwr *m = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/plain.img", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fclose(f);
	CU_ASSERT_EQUAL(mmc_relwr_open(path, &m, err, sizeof(err)), -ENOTTY);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "is not an MMC device"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
	mmc_relwr_close(NULL);
	if (access("/dev/loop-control", F_OK) == 0 && access("/sys/dev/block", F_OK) == 0) {
		/* a block device that is not MMC: any loop device node will do */
		if (access("/dev/loop0", F_OK) == 0) {
			err[0] = 0;
			int ret = mmc_relwr_open("/dev/loop0", &m, err, sizeof(err));
			CU_ASSERT_EQUAL(ret, -ENOTTY);
			CU_ASSERT_PTR_NOT_NULL(strstr(err, "not an MMC device"));
		}
	}
}

/* The writer's lines parse as messages; ACKs counted (-1: a line that does not parse). */
static int count_line(const char *text, size_t len, void *arg)
{
	unsigned *acks = arg;
	struct pc_msg m;
	char err[256];

	if (!len || text[len - 1] != '\n' || pc_msg_parse(text, len - 1, &m, err, sizeof(err))) {
		*acks = 1u << 30;
		return 0;
	}
	if (m.type == PC_MSG_ACK)
		*acks += m.u.range.n;
	pc_msg_clear(&m);
	return 0;
}

static int count_slots(json_object *msg, void *arg)
{
	unsigned *bad = arg;
	json_object *t;

	if (json_object_object_get_ex(msg, "type", &t) && !strcmp(json_object_get_string(t), "slot"))
		(*bad)++;
	json_object_put(msg);
	return 0;
}

/* A 1 MiB sim region of 4 KiB records in a fresh directory, open for
 * writing, and the writer's I/O for it (0, or -1 after a failed assertion). */
static int sim_region(const char *name, struct region *r, struct writer_io *io)
{
	static char spec[600];
	/* the options outlive every device opened with them (dev.h) */
	static struct sim_opts *so;
	char err[512] = "";
	struct region_opts o = { 0 };

	snprintf(spec, sizeof(spec), "sim:%s/m.img", pc_test_tmpdir(name));
	if (!so && (dev_sim_opt(&so, "program-us", "1", err, sizeof(err)) ||
		    dev_sim_opt(&so, "cache-sectors", "64", err, sizeof(err)))) {
		CU_FAIL("sim options");
		return -1;
	}
	o.spec = spec;
	o.sim = so;
	CU_ASSERT_EQUAL(region_prepare(&o, 4096, 1, 1 << 20, 0, err, sizeof(err)), 0);
	if (region_open(r, &o, 1, err, sizeof(err))) {
		CU_FAIL("region_open of the sim region");
		return -1;
	}
	writer_probe(r, io);
	return 0;
}

/* A sink that counts lines and flushes: lines of one reap are gathered. */
struct gather {
	unsigned lines, flushes, held, max_held, acks, bad;
};

static int gather_line(const char *text, size_t len, void *arg)
{
	struct gather *g = arg;
	struct pc_msg m;
	char err[256];

	g->lines++;
	if (++g->held > g->max_held)
		g->max_held = g->held;
	if (!len || text[len - 1] != '\n' || pc_msg_parse(text, len - 1, &m, err, sizeof(err))) {
		g->bad++;
		return 0;
	}
	if (m.type == PC_MSG_ACK)
		g->acks += m.u.range.n;
	pc_msg_clear(&m);
	return 0;
}

static int gather_flush(void *arg)
{
	struct gather *g = arg;

	if (!g->held)
		g->bad++;	/* a flush with nothing to send is never asked for */
	g->held = 0;
	g->flushes++;
	return 0;
}

/* fua at QD 8 on the sim: every record ACKed, the lines of a reap (ACKs and
 * the next SUBMIT) flushed together, nothing left unflushed at the end */
static void test_sink_gathers(void)
{
	char err[512] = "";
	struct region r;
	struct writer_io io;
	struct writer_result res;
	struct gather g = { 0 };

	if (sim_region("sink-sim", &r, &io))
		return;
	struct pc_work w = { .cycle = 1, .first = 1, .n = 200, .mode = PC_MODE_FUA, .pattern = PC_PAT_SEQUENTIAL,
			     .record_size = 4096, .flush_every = 8, .qd = 8, .seed = 1 };
	CU_ASSERT_EQUAL(writer_run(&r, &io, &w, &(struct writer_sink){ gather_line, gather_flush, &g }, &res, err,
				   sizeof(err)), 0);
	CU_ASSERT_EQUAL(g.acks, 200);
	CU_ASSERT_EQUAL(res.acked, 200);
	CU_ASSERT_EQUAL(g.bad, 0);
	CU_ASSERT_EQUAL(g.held, 0);
	CU_ASSERT(g.flushes > 0 && g.flushes < g.lines);
	CU_ASSERT(g.max_held >= 2);
	region_close(&r);
	writer_release(&io);
}

/* relwr through the writer on the sim: acknowledged, whole; relwr-off: never acknowledged */
static void test_sim_modes(void)
{
	char err[512] = "";
	struct region r;
	struct writer_io io;
	struct writer_result res;
	struct scan_stats st;
	unsigned acks = 0, bad = 0;

	if (sim_region("relwr-sim", &r, &io))
		return;
	struct pc_work w = { .cycle = 1, .first = 1, .n = 20, .mode = PC_MODE_RELWR, .pattern = PC_PAT_SEQUENTIAL,
			     .record_size = 4096, .flush_every = 8, .qd = 1, .seed = 1 };
	CU_ASSERT_EQUAL(writer_run(&r, &io, &w, &(struct writer_sink){ count_line, NULL, &acks }, &res, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(acks, 20);
	CU_ASSERT_EQUAL(res.acked, 20);
	CU_ASSERT_EQUAL(res.mode_run, PC_MODE_RELWR);
	w.first = 21;
	w.mode = PC_MODE_RELWR_OFF;
	acks = 0;
	CU_ASSERT_EQUAL(writer_run(&r, &io, &w, &(struct writer_sink){ count_line, NULL, &acks }, &res, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(acks, 0);
	CU_ASSERT_EQUAL(region_scan(&r, PC_PAT_SEQUENTIAL, NULL, 0, count_slots, &bad, &st), 0);
	CU_ASSERT_EQUAL(bad, 0);
	region_close(&r);
	writer_release(&io);
}

int suite_relwr(void)
{
	CU_pSuite s = CU_add_suite("relwr", NULL, NULL);

	if (!s)
		return -1;
	if (!CU_add_test(s, "CMD23 + CMD25 encoding", test_encode) ||
	    !CU_add_test(s, "the card's R1 answers: a refused reliable write is named", test_status) ||
	    !CU_add_test(s, "refused on anything but an MMC device", test_not_mmc) ||
	    !CU_add_test(s, "relwr and relwr-off through the writer (sim)", test_sim_modes) ||
	    !CU_add_test(s, "the writer's lines of a reap go out together (sim, fua, QD 8)", test_sink_gathers))
		return -1;
	return 0;
}

/*
 * test_vcache.c - the volatile cache's rebuild (vboard/vcache.c) on logs made
 * here in QEMU's blklogwrites format: what each profile keeps, tears drawn
 * sector by sector and recorded as they were applied, the same result twice,
 * and hostile logs (cut short, garbage, writes past the image) refused or
 * ended cleanly.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/record.h"
#include "common/util.h"
#include "common/wlog.h"
#include "vboard/vcache.h"
#include "vboard/vckeep.h"
#include "tests/unit/suites.h"

#define SS		512
#define MEDIA_SECT	256

static char dir[PATH_MAX], logp[PATH_MAX], tracep[PATH_MAX], mediap[PATH_MAX], recp[PATH_MAX];

struct ent {
	uint64_t sector, n, flags;
	unsigned char fill;
};

/* An entry's place reserved and never written (a kill between two parallel writes): zeros. */
#define HOLE		(1ULL << 62)

/* A log: superblock (nr_entries as given), then the entries; data sector k of a write is fill + k;
 * a HOLE entry is 1 + n sectors of zeros. */
static void write_log(const struct ent *e, size_t n, uint64_t sb_entries, size_t cut_bytes)
{
	unsigned char sec[SS];
	int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	off_t off = SS;

	CU_ASSERT_FATAL(fd >= 0);
	memset(sec, 0, sizeof(sec));
	wlog_super_put(sec, sb_entries, SS);
	CU_ASSERT(pwrite(fd, sec, SS, 0) == SS);
	for (size_t i = 0; i < n; i++) {
		memset(sec, 0, sizeof(sec));
		if (e[i].flags & HOLE) {
			for (uint64_t k = 0; k <= e[i].n; k++, off += SS)
				CU_ASSERT(pwrite(fd, sec, SS, off) == SS);
			continue;
		}
		wlog_hdr_put(sec, &(struct wlog_hdr){ .sector = e[i].sector, .nsect = e[i].n, .flags = e[i].flags });
		CU_ASSERT(pwrite(fd, sec, SS, off) == SS);
		off += SS;
		/* a flush has no data; nor has a crafted header claiming too much */
		if ((e[i].flags & WLOG_FLUSH) || e[i].n > 64)
			continue;
		for (uint64_t k = 0; k < e[i].n; k++) {
			memset(sec, e[i].fill + (int)k, sizeof(sec));
			CU_ASSERT(pwrite(fd, sec, SS, off) == SS);
			off += SS;
		}
	}
	if (cut_bytes)
		CU_ASSERT(ftruncate(fd, off - (off_t)cut_bytes) == 0);
	close(fd);
}

static void write_media(void)
{
	unsigned char z[SS * MEDIA_SECT];
	int fd = open(mediap, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	memset(z, 0xee, sizeof(z));
	CU_ASSERT(fd >= 0 && write(fd, z, sizeof(z)) == (ssize_t)sizeof(z));
	close(fd);
}

/* The first byte of each media sector. */
static void read_media(unsigned char *first)
{
	unsigned char sec[SS];
	int fd = open(mediap, O_RDONLY);

	for (int i = 0; i < MEDIA_SECT; i++)
		first[i] = pread(fd, sec, SS, (off_t)i * SS) == SS ? sec[0] : 0;
	close(fd);
}

static struct vc_params params(enum vc_profile p, uint64_t seed)
{
	struct vc_params vp = { .log = logp, .trace = tracep, .media = mediap, .record = recp, .profile = p,
				.seed = seed, .power_on = 3 };
	return vp;
}

/* the log of one power-on: A before a flush, B a FUA write (by the trace), C..F after, G cut short */
static const struct ent base_log[] = {
	{ 8, 2, 0, 0x10 },	/* A */
	{ 0, 0, 1, 0 },		/* flush */
	{ 16, 1, 0, 0x20 },	/* B, FUA */
	{ 24, 8, 0, 0x30 },	/* C */
	{ 40, 8, 0, 0x40 },	/* D */
	{ 56, 8, 0, 0x50 },	/* E */
	{ 72, 8, 0, 0x60 },	/* F */
};

static void setup(void)
{
	FILE *f;

	pc_strlcpy(dir, pc_test_tmpdir("vcache"), sizeof(dir));
	snprintf(logp, sizeof(logp), "%s/log", dir);
	snprintf(tracep, sizeof(tracep), "%s/qemu.log", dir);
	snprintf(mediap, sizeof(mediap), "%s/media", dir);
	snprintf(recp, sizeof(recp), "%s/vcache.jsonl", dir);
	write_log(base_log, PC_ARRAY_SIZE(base_log), 1, 0);
	write_media();
	unlink(recp);
	f = fopen(tracep, "w");
	CU_ASSERT_FATAL(f != NULL);
	/* before the power-on: another power-on's FUA write of C's sectors, not this one's */
	fprintf(f, "scsi_disk_new_request Command: lun=0 tag=0x1 data= 0x2a 0x08 0x00 0x00 0x00 0x18 0x00 0x00 0x08 0x00\n");
	fprintf(f, "--- power on\n");
	fprintf(f, "12@1.0:scsi_disk_new_request Command: lun=0 tag=0x2 data= 0x2a 0x00 0x00 0x00 0x00 0x08 0x00 0x00 0x02 0x00\n");
	fprintf(f, "12@1.0:scsi_disk_new_request Command: lun=0 tag=0x3 data= 0x35 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00\n");
	fprintf(f, "12@1.1:scsi_disk_new_request Command: lun=0 tag=0x4 data= 0x2a 0x08 0x00 0x00 0x00 0x10 0x00 0x00 0x01 0x00\n");
	fprintf(f, "12@1.1:scsi_disk_new_request Command: lun=0 tag=0x5 data= 0x8a 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x18 0x00 0x00 0x00 0x08 0x00 0x00\n");
	fprintf(f, "garbage data= 0x2a 0x08\n");
	fclose(f);
}

static off_t power_on_offset(void)
{
	FILE *f = fopen(tracep, "r");
	char line[512];
	off_t off = 0;

	while (f && fgets(line, sizeof(line), f)) {
		off += (off_t)strlen(line);
		if (strncmp(line, "--- power on", 12) == 0)
			break;
	}
	if (f)
		fclose(f);
	return off;
}

/* Each sector of a write is either all its new byte (kept) or the old 0xee (lost). */
static void check_fates(const unsigned char *m, json_object *rec)
{
	json_object *lost, *tears;
	int lost_sect[MEDIA_SECT] = { 0 };

	CU_ASSERT_FATAL(json_object_object_get_ex(rec, "lost", &lost));
	CU_ASSERT_FATAL(json_object_object_get_ex(rec, "tears", &tears));
	for (size_t i = 0; i < json_object_array_length(lost); i++) {
		json_object *w = json_object_array_get_idx(lost, i);
		int64_t s = json_object_get_int64(json_object_array_get_idx(w, 0));

		for (int64_t k = 0; k < json_object_get_int64(json_object_array_get_idx(w, 1)); k++)
			lost_sect[s + k] = 1;
	}
	for (size_t i = 0; i < json_object_array_length(tears); i++) {
		json_object *w = json_object_array_get_idx(tears, i);
		int64_t s = json_object_get_int64(json_object_array_get_idx(w, 0));
		const char *mask = json_object_get_string(json_object_array_get_idx(w, 2));

		CU_ASSERT(strchr(mask, '0') && strchr(mask, '1'));	/* a tear keeps some, loses some */
		for (int64_t k = 0; k < json_object_get_int64(json_object_array_get_idx(w, 1)); k++)
			lost_sect[s + k] = mask[k] == '0';
	}
	for (size_t e = 0; e < PC_ARRAY_SIZE(base_log); e++) {
		if (base_log[e].flags)
			continue;
		for (uint64_t k = 0; k < base_log[e].n; k++) {
			uint64_t s = base_log[e].sector + k;

			CU_ASSERT_EQUAL(m[s], lost_sect[s] ? 0xee : (unsigned char)(base_log[e].fill + k));
		}
	}
}

static json_object *last_record(void)
{
	char line[65536], last[65536] = "";
	FILE *f = fopen(recp, "r");

	while (f && fgets(line, sizeof(line), f))
		memcpy(last, line, sizeof(last));
	if (f)
		fclose(f);
	return json_tokener_parse(last);
}

static void test_profiles(void)
{
	const enum vc_profile profiles[] = { VC_HONEST, VC_LYING_FLUSH, VC_FUA_IGNORED };
	unsigned lost_any = 0, torn_any = 0;

	for (size_t p = 0; p < PC_ARRAY_SIZE(profiles); p++)
		for (uint64_t seed = 1; seed <= 12; seed++) {
			unsigned char m[MEDIA_SECT], m2[MEDIA_SECT];
			struct vc_params vp;
			struct vc_stats st;
			char err[256] = "";
			json_object *rec;

			setup();
			vp = params(profiles[p], seed);
			vp.trace_off = power_on_offset();
			CU_ASSERT_EQUAL_FATAL(vc_rebuild(&vp, &st, err, sizeof(err)), 0);
			CU_ASSERT_EQUAL(st.entries, 7);
			CU_ASSERT_EQUAL(st.writes, 6);
			CU_ASSERT_EQUAL(st.flushes, 1);
			CU_ASSERT_EQUAL(st.trace_writes, 3);	/* this power-on's: A, B, C */
			CU_ASSERT_EQUAL(st.fua_writes, 1);	/* B: C's FUA WRITE was another power-on's */
			CU_ASSERT_EQUAL(st.kept + st.dropped + st.torn, 6);
			read_media(m);
			if (profiles[p] == VC_HONEST) {
				CU_ASSERT_EQUAL(st.durable, 2);
				CU_ASSERT(m[8] == 0x10 && m[9] == 0x11);	/* A: flushed */
				CU_ASSERT(m[16] == 0x20);			/* B: FUA */
			} else if (profiles[p] == VC_LYING_FLUSH) {
				CU_ASSERT_EQUAL(st.durable, 1);
				CU_ASSERT(m[16] == 0x20);
			} else {
				CU_ASSERT_EQUAL(st.durable, 0);
			}
			CU_ASSERT(m[0] == 0xee && m[100] == 0xee);	/* nothing written outside the writes */
			rec = last_record();
			CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
			CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(rec, "profile")),
					       vc_profile_name(profiles[p]));
			CU_ASSERT_EQUAL(json_object_get_int64(json_object_object_get(rec, "power_on")), 3);
			check_fates(m, rec);
			lost_any += st.dropped > 0;
			torn_any += st.torn > 0;
			json_object_put(rec);
			/* the same log, seed and power-on: the same image (a replay after a crash) */
			write_media();
			CU_ASSERT_EQUAL(vc_rebuild(&vp, &st, err, sizeof(err)), 0);
			read_media(m2);
			CU_ASSERT_EQUAL(memcmp(m, m2, sizeof(m)), 0);
		}
	CU_ASSERT(lost_any > 0);
	CU_ASSERT(torn_any > 0);
}

static void test_hostile(void)
{
	struct vc_params vp;
	struct vc_stats st;
	char err[256] = "";
	unsigned char m[MEDIA_SECT];
	struct ent past[] = { { 8, 2, 0, 0x10 }, { MEDIA_SECT - 1, 2, 0, 0x70 } };
	struct ent bad_flags[] = { { 8, 2, 0, 0x10 }, { 16, 1, 0x100, 0x20 }, { 24, 1, 0, 0x30 } };
	struct ent huge[] = { { 8, 1ULL << 40, 0, 0x10 } };

	/* the last entry cut short: the log ends before it */
	setup();
	write_log(base_log, PC_ARRAY_SIZE(base_log), 0, 100);
	vp = params(VC_HONEST, 1);
	CU_ASSERT_EQUAL(vc_rebuild(&vp, &st, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(st.writes, 5);
	/* no superblock at all (no flush yet): 512-byte sectors */
	setup();
	write_log(base_log, PC_ARRAY_SIZE(base_log), 0, 0);
	{
		int fd = open(logp, O_WRONLY);
		unsigned char z[SS] = { 0 };

		CU_ASSERT(pwrite(fd, z, SS, 0) == SS);
		close(fd);
	}
	CU_ASSERT_EQUAL(vc_rebuild(&vp, &st, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(st.entries, 7);
	/* a write past the image: refused, naming it */
	setup();
	write_log(past, PC_ARRAY_SIZE(past), 0, 0);
	vp.profile = VC_HONEST;
	{
		/* make the second durable: a flush after it */
		struct ent withflush[] = { past[0], past[1], { 0, 0, 1, 0 } };

		write_log(withflush, PC_ARRAY_SIZE(withflush), 0, 0);
	}
	CU_ASSERT_EQUAL(vc_rebuild(&vp, &st, err, sizeof(err)), -ERANGE);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "past the end of the image"));
	/* unknown flags end the log; so does a size no write has */
	setup();
	write_log(bad_flags, PC_ARRAY_SIZE(bad_flags), 0, 0);
	CU_ASSERT_EQUAL(vc_rebuild(&vp, &st, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(st.entries, 1);
	setup();
	write_log(huge, PC_ARRAY_SIZE(huge), 0, 0);
	CU_ASSERT_EQUAL(vc_rebuild(&vp, &st, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(st.entries, 0);
	read_media(m);
	CU_ASSERT(m[8] == 0xee);
	/* a wrong version is an error, not a guess */
	setup();
	{
		int fd = open(logp, O_WRONLY);
		unsigned char v = 2;

		CU_ASSERT(pwrite(fd, &v, 1, 8) == 1);
		close(fd);
	}
	CU_ASSERT_EQUAL(vc_rebuild(&vp, &st, err, sizeof(err)), -EPROTO);
	/* an empty trace (a power-on with no SCSI command traced yet) */
	setup();
	{
		FILE *f = fopen(tracep, "w");

		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fclose(f);
	}
	vp.trace_off = 0;
	CU_ASSERT_EQUAL(vc_rebuild(&vp, &st, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(st.trace_writes, 0);
	/* no trace: nothing is known to be FUA */
	setup();
	vp.trace = NULL;
	CU_ASSERT_EQUAL(vc_rebuild(&vp, &st, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(st.fua_writes, 0);
	CU_ASSERT_EQUAL(vc_profile_parse("lying-flush"), VC_LYING_FLUSH);
	CU_ASSERT_EQUAL(vc_profile_parse("lying"), -1);
	CU_ASSERT_EQUAL(vc_profile_parse(NULL), -1);
}

/*
 * The eMMC board: QEMU's MMC card traces its commands and each block it
 * writes (byte address); a block is "FUA" when a CMD23 with bit 31 (a
 * reliable write) preceded its CMD25. The log holds one entry per block.
 */
static void test_mmc_trace(void)
{
	/* reliable: 8, 9 (one CMD23 each); plain: 24, 25 (CMD23 without bit 31),
	 * 40 (CMD24 after a reliable CMD23 and a status poll: CMD23 is for CMD25
	 * only), 48 (a reliable CMD23, then a read, then CMD25: the read ends it) */
	static const struct ent mlog[] = {
		{ 8, 1, 0, 0x10 }, { 9, 1, 0, 0x11 }, { 24, 1, 0, 0x20 }, { 25, 1, 0, 0x21 },
		{ 40, 1, 0, 0x30 }, { 48, 1, 0, 0x40 },
	};
	static const char *const tr[] = {
		"7@1.0:sdcard_normal_command eMMC      SET_BLOCK_COUNT/ CMD23 arg 0x80000001 (state transfer)\n",
		"7@1.0:sdcard_normal_command eMMC WRITE_MULTIPLE_BLOCK/ CMD25 arg 0x00001000 (state transfer)\n",
		"7@1.0:sdcard_write_block addr 0x1000 size 0x200\n",
		"7@1.0:sdcard_normal_command eMMC       SEND_STATUS/ CMD13 arg 0x00010000 (state transfer)\n",
		"7@1.0:sdcard_normal_command eMMC      SET_BLOCK_COUNT/ CMD23 arg 0x80000001 (state transfer)\n",
		"7@1.0:sdcard_normal_command eMMC WRITE_MULTIPLE_BLOCK/ CMD25 arg 0x00001200 (state transfer)\n",
		"7@1.0:sdcard_write_block addr 0x1200 size 0x200\n",
		"7@1.0:sdcard_normal_command eMMC      SET_BLOCK_COUNT/ CMD23 arg 0x00000002 (state transfer)\n",
		"7@1.0:sdcard_normal_command eMMC WRITE_MULTIPLE_BLOCK/ CMD25 arg 0x00003000 (state transfer)\n",
		"7@1.0:sdcard_write_block addr 0x3000 size 0x200\n",
		"7@1.0:sdcard_write_block addr 0x3200 size 0x200\n",
		"7@1.0:sdcard_normal_command eMMC      SET_BLOCK_COUNT/ CMD23 arg 0x80000001 (state transfer)\n",
		"7@1.0:sdcard_normal_command eMMC       SEND_STATUS/ CMD13 arg 0x00010000 (state transfer)\n",
		"7@1.0:sdcard_normal_command eMMC  WRITE_SINGLE_BLOCK/ CMD24 arg 0x00005000 (state transfer)\n",
		"7@1.0:sdcard_write_block addr 0x5000 size 0x200\n",
		"7@1.0:sdcard_normal_command eMMC      SET_BLOCK_COUNT/ CMD23 arg 0x80000001 (state transfer)\n",
		"7@1.0:sdcard_normal_command eMMC  READ_SINGLE_BLOCK/ CMD17 arg 0x00000000 (state transfer)\n",
		"7@1.0:sdcard_normal_command eMMC WRITE_MULTIPLE_BLOCK/ CMD25 arg 0x00006000 (state transfer)\n",
		"7@1.0:sdcard_write_block addr 0x6000 size 0x200\n",
		"7@1.0:sdcard_write_block addr 0x6001 size 0x200\n",		/* not sector-aligned: not a block */
		"7@1.0:sdcard_write_block addr 0xzz size 0x200\n",
	};
	struct vc_params vp;
	struct vc_stats st;
	char err[256] = "";
	unsigned char m[MEDIA_SECT];
	int lost_rel = 0, lost_plain = 0;

	for (uint64_t seed = 1; seed <= 16; seed++) {
		FILE *f;

		setup();
		write_log(mlog, PC_ARRAY_SIZE(mlog), 0, 0);
		f = fopen(tracep, "w");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		for (size_t i = 0; i < PC_ARRAY_SIZE(tr); i++)
			fputs(tr[i], f);
		fclose(f);
		vp = params(VC_LYING_FLUSH, seed);
		vp.trace_off = 0;
		vp.trace_mmc = 1;
		CU_ASSERT_EQUAL_FATAL(vc_rebuild(&vp, &st, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(st.writes, 6);
		CU_ASSERT_EQUAL(st.trace_writes, 6);
		CU_ASSERT_EQUAL(st.fua_writes, 2);
		read_media(m);
		/* reliable writes survive a cache that ignores only flushes */
		CU_ASSERT_EQUAL(m[8], 0x10);
		CU_ASSERT_EQUAL(m[9], 0x11);
		lost_plain += m[24] == 0xee || m[25] == 0xee || m[40] == 0xee || m[48] == 0xee;
		/* ...and not one that ignores reliable write */
		setup();
		write_log(mlog, PC_ARRAY_SIZE(mlog), 0, 0);
		f = fopen(tracep, "w");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		for (size_t i = 0; i < PC_ARRAY_SIZE(tr); i++)
			fputs(tr[i], f);
		fclose(f);
		vp.profile = VC_FUA_IGNORED;
		CU_ASSERT_EQUAL_FATAL(vc_rebuild(&vp, &st, err, sizeof(err)), 0);
		read_media(m);
		lost_rel += m[8] == 0xee || m[9] == 0xee;
	}
	CU_ASSERT(lost_plain > 0);
	CU_ASSERT(lost_rel > 0);
}

/*
 * Kept inputs (vboard/vckeep.c): a drive whose GPT partition "pc-region" is
 * sectors 8..71 (the region), media sector k holding 0xee; the trace and the
 * blklogwrites log of one power-on:
 *   W1 (16+8) and W2 (24+8) issued; W1 completes; a SYNCHRONIZE CACHE F is
 *   issued; W2 completes; F completes; W3 (32+8, FUA, W1's tag again) issued
 *   and completed; W4 (40+8) issued and logged, never completed; W5 (48+8)
 *   issued, neither logged nor completed.
 *   blklogwrites: W1 W2 flush W3 flush W4 -- W2 logged before the flush,
 *   though it completed after F was issued: F does not make it durable.
 * The kept log: W1, F, W2, W3 (FUA), W4, region-relative: 8, -, 16, 24, 32.
 */
static void test_keep(void)
{
	static const struct ent klog[] = {
		{ 16, 8, 0, 0x10 }, { 24, 8, 0, 0x20 }, { 0, 0, 1, 0 }, { 32, 8, 0, 0x30 }, { 0, 0, 1, 0 },
		{ 40, 8, 0, 0x40 },
	};
	static const char *const tr[] = {
		"scsi_disk_new_request Command: lun=0 tag=0x1 data= 0x2a 0x00 0x00 0x00 0x00 0x10 0x00 0x00 0x08 0x00\n",
		"scsi_disk_new_request Command: lun=0 tag=0x2 data= 0x2a 0x00 0x00 0x00 0x00 0x18 0x00 0x00 0x08 0x00\n",
		"scsi_req_dequeue target 0 lun 0 tag 1\n",
		"scsi_disk_new_request Command: lun=0 tag=0x3 data= 0x35 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00\n",
		"scsi_req_dequeue target 0 lun 0 tag 2\n",
		"scsi_req_dequeue target 0 lun 0 tag 3\n",
		"scsi_disk_new_request Command: lun=0 tag=0x1 data= 0x2a 0x08 0x00 0x00 0x00 0x20 0x00 0x00 0x08 0x00\n",
		"scsi_req_dequeue target 0 lun 0 tag 1\n",
		"scsi_disk_new_request Command: lun=0 tag=0x2 data= 0x2a 0x00 0x00 0x00 0x00 0x28 0x00 0x00 0x08 0x00\n",
		"scsi_disk_new_request Command: lun=0 tag=0x4 data= 0x2a 0x00 0x00 0x00 0x00 0x30 0x00 0x00 0x08 0x00\n",
	};
	static const uint64_t want_sector[] = { 8, 0, 16, 24, 32 }, want_flags[] = { 0, 1, 0, 2, 0 };
	unsigned char sec[SS];
	char root[PATH_MAX], path[PATH_MAX + 64], err[512];
	uint64_t off = 0, len = 0;
	struct wlog_entry *e = NULL;
	size_t ne = 0;
	uint32_t ss = 0;
	json_object *cj;
	FILE *f;
	int fd;

	setup();
	write_log(klog, PC_ARRAY_SIZE(klog), 0, 0);
	f = fopen(tracep, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("scsi_req_dequeue target 0 lun 0 tag 9\n", f);	/* before the power-on's offset */
	for (size_t i = 0; i < PC_ARRAY_SIZE(tr); i++)
		fputs(tr[i], f);
	fclose(f);
	/* no GPT yet */
	CU_ASSERT_EQUAL(vk_region_find(mediap, &off, &len, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "has no GPT"));
	fd = open(mediap, O_WRONLY);
	memset(sec, 0, sizeof(sec));
	memcpy(sec, "EFI PART", 8);
	pc_put64(sec + 72, 2);	/* entries at sector 2: 4 of 128 bytes */
	sec[80] = 4;
	sec[84] = 128;
	CU_ASSERT(pwrite(fd, sec, SS, SS) == SS);
	memset(sec, 0, sizeof(sec));
	pc_put64(sec + 128 + 32, 8);	/* the second entry */
	pc_put64(sec + 128 + 40, 71);
	for (size_t k = 0; k < strlen("pc-region"); k++)
		sec[128 + 56 + 2 * k] = (unsigned char)"pc-region"[k];
	CU_ASSERT(pwrite(fd, sec, SS, 2 * SS) == SS);
	close(fd);
	CU_ASSERT_EQUAL_FATAL(vk_region_find(mediap, &off, &len, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(off, 8 * SS);
	CU_ASSERT_EQUAL(len, 64 * SS);
	snprintf(root, sizeof(root), "%s/vc-inputs", dir);
	for (uint64_t s = 1; s <= 3; s++) {
		struct vk_session ks = { root, s, 1, mediap, off, len };

		CU_ASSERT_EQUAL(vk_begin(&ks, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(vk_finish(&ks, logp, tracep, (off_t)strlen("scsi_req_dequeue target 0 lun 0 tag 9\n"),
					  "honest", err, sizeof(err)), 0);
	}
	/* keep 1: sessions 2 and 3 */
	snprintf(path, sizeof(path), "%s/session-1", root);
	CU_ASSERT(access(path, F_OK) != 0);
	{
		/* the drive unchanged since the cut: session 3's base is session 2's after, linked */
		struct stat a, b;

		snprintf(path, sizeof(path), "%s/session-2/after.img", root);
		CU_ASSERT_EQUAL(stat(path, &a), 0);
		snprintf(path, sizeof(path), "%s/session-3/base.img", root);
		CU_ASSERT_EQUAL(stat(path, &b), 0);
		CU_ASSERT_EQUAL(a.st_ino, b.st_ino);
	}
	snprintf(path, sizeof(path), "%s/session-3/writes.log", root);
	fd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(wlog_read(fd, path, &ss, &e, &ne, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ss, SS);
	CU_ASSERT_EQUAL_FATAL(ne, PC_ARRAY_SIZE(want_sector));
	for (size_t i = 0; i < ne; i++) {
		CU_ASSERT_EQUAL(e[i].sector, want_sector[i]);
		CU_ASSERT_EQUAL(e[i].flags, want_flags[i]);
	}
	/* the data came along: W2's first sector */
	CU_ASSERT(pread(fd, sec, SS, e[2].data) == SS && sec[0] == 0x20);
	CU_ASSERT(pread(fd, sec, 8, 16) == 8 && sec[0] == 5);	/* nr_entries in the superblock */
	close(fd);
	free(e);
	snprintf(path, sizeof(path), "%s/session-3/cycle.json", root);
	cj = json_object_from_file(path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cj);
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string(json_object_object_get(cj, "finished")), "true");
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(cj, "writes")), 4);
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(cj, "fua_writes")), 1);
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(cj, "in_flight_writes")), 1);
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(cj, "unlogged_writes")), 1);
	CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(cj, "unmatched_writes")), 0);
	json_object_put(cj);
	snprintf(path, sizeof(path), "%s/session-3/after.img", root);
	fd = open(path, O_RDONLY);
	CU_ASSERT(fd >= 0 && lseek(fd, 0, SEEK_END) == 64 * SS);
	close(fd);
}

/* A hole in the log (a later entry landed before an earlier one, then the kill): the entries after
 * it are read, the zeros skipped; a sector that is neither zeros nor an entry still ends the log. */
static void test_hole(void)
{
	struct ent holed[] = { { 8, 2, 0, 0x10 }, { 0, 2, HOLE, 0 }, { 16, 1, 0, 0x30 }, { 0, 0, 1, 0 },
			       { 24, 1, 0, 0x40 } };
	struct ent junk[] = { { 8, 1, 0, 0x10 }, { 0, 0, 0x100, 0 }, { 16, 1, 0, 0x30 } };
	struct wlog_entry *e = NULL;
	size_t ne = 0;
	uint32_t ss = 0;
	char err[256] = "";
	unsigned char sec[SS];
	int fd;

	setup();
	write_log(holed, PC_ARRAY_SIZE(holed), 0, 0);
	fd = open(logp, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(wlog_read(fd, logp, &ss, &e, &ne, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(ne, 4);
	CU_ASSERT_EQUAL(e[0].sector, 8);
	CU_ASSERT_EQUAL(e[1].sector, 16);
	CU_ASSERT_EQUAL(e[2].flags, 1);
	CU_ASSERT_EQUAL(e[3].sector, 24);
	/* the data after the hole is the entry's own */
	CU_ASSERT(pread(fd, sec, SS, e[1].data) == SS && sec[0] == 0x30);
	close(fd);
	free(e);
	e = NULL;
	/* unknown flags: the end, as before */
	write_log(junk, PC_ARRAY_SIZE(junk), 0, 0);
	fd = open(logp, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(wlog_read(fd, logp, &ss, &e, &ne, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ne, 1);
	close(fd);
	free(e);
	e = NULL;
	/* zeros past any writes in flight (300 MiB, sparse) before an entry: the log ends there */
	write_log(junk, 1, 0, 0);
	fd = open(logp, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	memset(sec, 0, sizeof(sec));
	wlog_hdr_put(sec, &(struct wlog_hdr){ .sector = 16, .nsect = 1 });
	CU_ASSERT(pwrite(fd, sec, SS, (off_t)300 << 20) == SS);
	memset(sec, 0x50, sizeof(sec));
	CU_ASSERT(pwrite(fd, sec, SS, ((off_t)300 << 20) + SS) == SS);
	CU_ASSERT_EQUAL(wlog_read(fd, logp, &ss, &e, &ne, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ne, 1);
	close(fd);
	free(e);
}

int suite_vcache(void)
{
	CU_pSuite s = CU_add_suite("vcache", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "profiles, tears, the same image twice", test_profiles) ||
	    !CU_add_test(s, "hostile logs", test_hostile) ||
	    !CU_add_test(s, "eMMC: reliable writes from the MMC trace", test_mmc_trace) ||
	    !CU_add_test(s, "kept inputs: the SCSI disk's completion order", test_keep) ||
	    !CU_add_test(s, "a hole in the log: the entries after it read", test_hole))
		return -1;
	return 0;
}

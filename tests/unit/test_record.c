/*
 * test_record.c - record format: geometry, superblock, sector build/check,
 * payload determinism, slot mapping, names, UUIDs.
 */
#include "tests/unit/suites.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/record.h"
#include "common/util.h"

#define MIB (1024u * 1024u)

static const uint8_t uuid_a[16] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
				    0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe };

static void geom(struct pc_geom *g, uint64_t bytes, uint32_t rs, uint64_t seed)
{
	char err[256];

	CU_ASSERT_EQUAL_FATAL(pc_geom_init(g, bytes, rs, seed, err, sizeof(err)), 0);
	memcpy(g->uuid, uuid_a, 16);
	g->created = 1700000000;
}

/* ---- geometry ---- */

static void test_geom_errors(void)
{
	static const struct {
		uint64_t bytes;
		uint32_t rs;
		const char *err;
	} c[] = {
		{ MIB, 0, "record size 0 is not a multiple of 512 between 512 and 1048576" },
		{ MIB, 100, "record size 100 is not a multiple of 512" },
		{ MIB, 513, "record size 513 is not a multiple of 512" },
		{ 64 * MIB, 2 * MIB, "record size 2097152 is not a multiple of 512" },
		{ MIB + 1, 4096, "region size 1048577 is not a multiple of 512" },
		{ 0, 4096, "region of 0 bytes is too small" },
		{ 2 * 4096 + 4096, 4096, "region of 12288 bytes is too small for two 4096-byte records" },
		{ 2 * 4096 + 2 * 4096 - 512, 4096, "region of 15872 bytes is too small" },
		{ (16 + (1ull << 32)) * 512, 512, "region has too many slots (4294967296); use larger records" },
	};
	struct pc_geom g;
	char err[256];

	for (size_t i = 0; i < PC_ARRAY_SIZE(c); i++) {
		err[0] = 0;
		CU_ASSERT_EQUAL(pc_geom_init(&g, c[i].bytes, c[i].rs, 1, err, sizeof(err)), -EINVAL);
		if (!strstr(err, c[i].err))
			fprintf(stderr, "\n    case %zu: want \"%s\", got \"%s\"\n", i, c[i].err, err);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, c[i].err));
	}
}

static void test_geom_slots(void)
{
	static const struct {
		uint64_t bytes;
		uint32_t rs;
		uint32_t slots;
	} c[] = {
		{ MIB, 4096, 254 },			/* (2048 - 16) / 8 */
		{ MIB, 512, 2032 },
		{ 2 * 4096 + 2 * 4096, 4096, 2 },	/* the smallest region */
		{ 2 * 4096 + 2 * 4096 + 7 * 512, 4096, 2 },	/* 7 spare sectors */
		{ 64 * MIB, MIB, 63 },			/* 64 MiB less 8 KiB of superblocks */
		{ 64 * MIB + 8192, MIB, 64 },
		{ (16 + (1ull << 32) - 2) * 512, 512, UINT32_MAX - 1 },
	};
	struct pc_geom g;
	char err[256];

	for (size_t i = 0; i < PC_ARRAY_SIZE(c); i++) {
		CU_ASSERT_EQUAL_FATAL(pc_geom_init(&g, c[i].bytes, c[i].rs, 99, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(g.nslots, c[i].slots);
		CU_ASSERT_EQUAL(g.region_bytes, c[i].bytes);
		CU_ASSERT_EQUAL(g.record_size, c[i].rs);
		CU_ASSERT_EQUAL(g.seed, 99);
		CU_ASSERT_EQUAL(pc_geom_spr(&g), c[i].rs / 512);
		/* slots sit between the superblock reserves, never overlapping copy B */
		CU_ASSERT_EQUAL(pc_slot_lba(&g, 0), PC_SB_RESERVE_SECT);
		CU_ASSERT(pc_slot_lba(&g, g.nslots) <= pc_sb_lba(&g, 1));
		CU_ASSERT_EQUAL(pc_sb_lba(&g, 0), 0);
		CU_ASSERT_EQUAL(pc_sb_lba(&g, 1), c[i].bytes / 512 - PC_SB_RESERVE_SECT);
	}
}

/* ---- superblock ---- */

static void test_sb_roundtrip(void)
{
	struct pc_geom g, d;
	uint8_t sb[PC_SECTOR];
	char err[256];

	geom(&g, 64 * MIB, 8192, 0xfeedfacecafebeefull);
	for (uint32_t copy = 0; copy < 2; copy++) {
		pc_sb_encode(&g, copy, sb);
		CU_ASSERT_EQUAL_FATAL(pc_sb_decode(sb, &d, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(memcmp(d.uuid, g.uuid, 16), 0);
		CU_ASSERT_EQUAL(d.region_bytes, g.region_bytes);
		CU_ASSERT_EQUAL(d.record_size, g.record_size);
		CU_ASSERT_EQUAL(d.nslots, g.nslots);
		CU_ASSERT_EQUAL(d.seed, g.seed);
		CU_ASSERT_EQUAL(d.created, g.created);
		CU_ASSERT_EQUAL(memcmp(sb, PC_SB_MAGIC, 8), 0);
	}
}

static void test_sb_reject(void)
{
	struct pc_geom g, d;
	uint8_t sb[PC_SECTOR], bad[PC_SECTOR];
	char err[256];

	geom(&g, 16 * MIB, 4096, 3);
	pc_sb_encode(&g, 0, sb);
	/* every single-bit flip anywhere in the sector is caught */
	for (unsigned bit = 0; bit < PC_SECTOR * 8; bit++) {
		memcpy(bad, sb, sizeof(bad));
		bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		CU_ASSERT_EQUAL(pc_sb_decode(bad, &d, err, sizeof(err)), -EINVAL);
	}
	memcpy(bad, sb, sizeof(bad));
	bad[3] ^= 0x10;
	CU_ASSERT_EQUAL(pc_sb_decode(bad, &d, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "no powercut superblock (magic missing)");
	memcpy(bad, sb, sizeof(bad));
	bad[100] ^= 1;
	CU_ASSERT_EQUAL(pc_sb_decode(bad, &d, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "superblock checksum mismatch");

	/* a well-formed superblock of another format version */
	memcpy(bad, sb, sizeof(bad));
	pc_put32(bad + 8, PC_FORMAT_VERSION + 1);
	pc_put32(bad + PC_OFF_CRC, pc_crc32c(0, bad, PC_OFF_CRC));
	CU_ASSERT_EQUAL(pc_sb_decode(bad, &d, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "superblock format version 2, this build reads 1"));

	/* checksummed but inconsistent geometry */
	memcpy(bad, sb, sizeof(bad));
	pc_put32(bad + 44, g.nslots + 1);
	pc_put32(bad + PC_OFF_CRC, pc_crc32c(0, bad, PC_OFF_CRC));
	CU_ASSERT_EQUAL(pc_sb_decode(bad, &d, err, sizeof(err)), -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "superblock geometry is inconsistent");
	memcpy(bad, sb, sizeof(bad));
	pc_put32(bad + 40, 1000);
	pc_put32(bad + PC_OFF_CRC, pc_crc32c(0, bad, PC_OFF_CRC));
	CU_ASSERT_EQUAL(pc_sb_decode(bad, &d, err, sizeof(err)), -EINVAL);

	/* an all-zero or record sector is not a superblock */
	memset(bad, 0, sizeof(bad));
	CU_ASSERT_EQUAL(pc_sb_decode(bad, &d, err, sizeof(err)), -EINVAL);
}

/* ---- sectors and records ---- */

static void test_record_valid(void)
{
	struct pc_geom g;
	struct pc_sector_hdr h;
	uint8_t *rec;
	uint32_t spr;

	geom(&g, 4 * MIB, 16384, 77);
	spr = pc_geom_spr(&g);
	rec = malloc(g.record_size);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
	for (uint32_t slot = 0; slot < g.nslots; slot += 37) {
		uint64_t seq = slot * 1000ull + 1;

		pc_record_build(rec, &g, slot, seq, 12, PC_MODE_JOURNAL | PC_FL_COMMIT);
		for (uint32_t i = 0; i < spr; i++) {
			CU_ASSERT_EQUAL(pc_sector_check(rec + i * PC_SECTOR, &g, &h), PC_SECT_VALID);
			CU_ASSERT_EQUAL(h.magic, PC_REC_MAGIC);
			CU_ASSERT_EQUAL(h.version, PC_FORMAT_VERSION);
			CU_ASSERT_EQUAL(h.seq, seq);
			CU_ASSERT_EQUAL(h.cycle, 12);
			CU_ASSERT_EQUAL(h.flags, PC_MODE_JOURNAL | PC_FL_COMMIT);
			CU_ASSERT_EQUAL(h.idx, i);
			CU_ASSERT_EQUAL(h.cnt, spr);
			CU_ASSERT_EQUAL(h.lba, pc_slot_lba(&g, slot) + i);
			CU_ASSERT_EQUAL(memcmp(h.region, g.uuid, 16), 0);
		}
	}
	/* gen-0 */
	pc_record_build(rec, &g, 0, 0, 0, 0);
	CU_ASSERT_EQUAL(pc_sector_check(rec, &g, &h), PC_SECT_VALID);
	CU_ASSERT_EQUAL(h.seq, 0);
	CU_ASSERT_EQUAL(h.flags, PC_MODE_GEN0);
	free(rec);
}

static void test_sector_bitflips(void)
{
	struct pc_geom g;
	struct pc_sector_hdr h;
	uint8_t rec[4096], s[PC_SECTOR];
	unsigned bad = 0;

	geom(&g, MIB, 4096, 5);
	pc_record_build(rec, &g, 3, 42, 7, PC_MODE_FUA);
	for (int sect = 0; sect < 8; sect += 7) {
		for (unsigned bit = 0; bit < PC_SECTOR * 8; bit++) {
			memcpy(s, rec + sect * PC_SECTOR, PC_SECTOR);
			s[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			bad += pc_sector_check(s, &g, &h) == PC_SECT_BAD;
		}
	}
	CU_ASSERT_EQUAL(bad, 2 * PC_SECTOR * 8);
	/* zeroes and a torn sector (new head, old tail) are BAD too */
	memset(s, 0, sizeof(s));
	CU_ASSERT_EQUAL(pc_sector_check(s, &g, &h), PC_SECT_BAD);
	{
		uint8_t old[4096];

		pc_record_build(old, &g, 3, 0, 0, 0);
		memcpy(s, rec, 256);
		memcpy(s + 256, old + 256, 256);
		CU_ASSERT_EQUAL(pc_sector_check(s, &g, &h), PC_SECT_BAD);
	}
}

static void test_sector_foreign(void)
{
	struct pc_geom g, other, seeded, big;
	struct pc_sector_hdr h;
	uint8_t rec[4096], rec2[8192];

	geom(&g, MIB, 4096, 5);
	other = g;
	other.uuid[15] ^= 1;
	/* another region's record: whole, checksummed, but not ours */
	pc_record_build(rec, &other, 3, 42, 7, PC_MODE_FUA);
	CU_ASSERT_EQUAL(pc_sector_check(rec, &other, &h), PC_SECT_VALID);
	CU_ASSERT_EQUAL(pc_sector_check(rec, &g, &h), PC_SECT_BAD);
	/* same region id but another seed: the payload gives it away */
	seeded = g;
	seeded.seed = 6;
	pc_record_build(rec, &seeded, 3, 42, 7, PC_MODE_FUA);
	CU_ASSERT_EQUAL(pc_sector_check(rec, &g, &h), PC_SECT_BAD);
	/* another record size: the sector count no longer matches */
	geom(&big, MIB, 8192, 5);
	pc_record_build(rec2, &big, 3, 42, 7, PC_MODE_FUA);
	CU_ASSERT_EQUAL(pc_sector_check(rec2, &big, &h), PC_SECT_VALID);
	CU_ASSERT_EQUAL(pc_sector_check(rec2, &g, &h), PC_SECT_BAD);
}

/* A sector written for slot 3 and found in slot 5 checks out on its own; only
 * its header LBA tells it is misplaced. */
static void test_sector_misdirected(void)
{
	struct pc_geom g;
	struct pc_sector_hdr h;
	uint8_t rec[4096];
	uint64_t found_at;

	geom(&g, MIB, 4096, 5);
	pc_record_build(rec, &g, 3, 42, 7, PC_MODE_FUA);
	found_at = pc_slot_lba(&g, 5) + 2;
	CU_ASSERT_EQUAL(pc_sector_check(rec + 2 * PC_SECTOR, &g, &h), PC_SECT_VALID);
	CU_ASSERT_EQUAL(h.lba, pc_slot_lba(&g, 3) + 2);
	CU_ASSERT_NOT_EQUAL(h.lba, found_at);
	CU_ASSERT_EQUAL(h.idx, 2);
	/* rewriting the header LBA without the payload is caught */
	pc_put64(rec + PC_OFF_LBA, found_at);
	pc_put32(rec + PC_OFF_CRC, pc_crc32c(0, rec, PC_OFF_CRC));
	CU_ASSERT_EQUAL(pc_sector_check(rec, &g, &h), PC_SECT_BAD);
}

static void test_payload_determinism(void)
{
	struct pc_geom g;
	uint8_t a[4096], b[4096];
	struct pc_sector_hdr h = { .seq = 9, .cycle = 1, .idx = 0, .cnt = 8, .lba = 100 };
	uint8_t s1[PC_SECTOR], s2[PC_SECTOR];

	geom(&g, MIB, 4096, 5);
	pc_record_build(a, &g, 10, 77, 3, PC_MODE_FLUSH);
	pc_record_build(b, &g, 10, 77, 3, PC_MODE_FLUSH);
	CU_ASSERT_EQUAL(memcmp(a, b, sizeof(a)), 0);
	/* another seq: every sector's payload differs, not just the header */
	pc_record_build(b, &g, 10, 78, 3, PC_MODE_FLUSH);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_NOT_EQUAL(memcmp(a + i * PC_SECTOR + PC_OFF_PAYLOAD, b + i * PC_SECTOR + PC_OFF_PAYLOAD,
					   PC_OFF_CRC - PC_OFF_PAYLOAD), 0);
	/* sectors within one record differ from each other (payload depends on lba) */
	CU_ASSERT_NOT_EQUAL(memcmp(a + PC_OFF_PAYLOAD, a + PC_SECTOR + PC_OFF_PAYLOAD,
				   PC_OFF_CRC - PC_OFF_PAYLOAD), 0);
	/* the cycle and flags are header-only: the payload is (seed, seq, lba) */
	pc_record_build(b, &g, 10, 77, 4, PC_MODE_FUA);
	CU_ASSERT_EQUAL(memcmp(a + PC_OFF_PAYLOAD, b + PC_OFF_PAYLOAD, PC_OFF_CRC - PC_OFF_PAYLOAD), 0);
	/* pc_sector_build agrees with itself and depends on the seed */
	memcpy(h.region, g.uuid, 16);
	pc_sector_build(s1, &h, 1);
	pc_sector_build(s2, &h, 1);
	CU_ASSERT_EQUAL(memcmp(s1, s2, PC_SECTOR), 0);
	pc_sector_build(s2, &h, 2);
	CU_ASSERT_NOT_EQUAL(memcmp(s1 + PC_OFF_PAYLOAD, s2 + PC_OFF_PAYLOAD, PC_OFF_CRC - PC_OFF_PAYLOAD), 0);
	/* header bytes sit where record.h says, little-endian */
	CU_ASSERT_EQUAL(pc_get32(a + PC_OFF_MAGIC), PC_REC_MAGIC);
	CU_ASSERT_EQUAL(a[PC_OFF_SEQ], 77);
	CU_ASSERT_EQUAL(pc_get64(a + PC_OFF_LBA), pc_slot_lba(&g, 10));
	CU_ASSERT_EQUAL(pc_get32(a + PC_OFF_CRC), pc_crc32c(0, a, PC_OFF_CRC));
}

/* pc_record_build (four sectors at a time) writes what pc_sector_build
 * writes for each sector, for sizes leaving 0 to 3 sectors after the fours. */
/*
 * A record built four sectors at a time (and on x86-64 with SSE4.2, with
 * the CRC fused into the generation and streaming stores, for an 8-byte
 * aligned buffer) holds, byte for byte, what pc_sector_build writes for each
 * sector. The buffer at offset 0 takes the fast path, at offset 1 (not
 * aligned) the portable one; both must agree with the reference.
 */
static void test_record_build_x4(void)
{
	static const uint32_t sizes[] = { 512, 1024, 1536, 2048, 4096, 8704, 65536 };
	static const uint64_t seqs[] = { 0, 1, 123456789012ull, UINT64_MAX };
	static uint8_t buf[65536 + 64] __attribute__((aligned(64))), one[PC_SECTOR];
	unsigned differ = 0, built = 0;

	for (size_t z = 0; z < PC_ARRAY_SIZE(sizes); z++)
		for (size_t q = 0; q < PC_ARRAY_SIZE(seqs); q++)
			for (int off = 0; off < 2; off++)
				for (uint32_t slot = 0; slot < 9; slot += 4) {
					struct pc_geom g;
					uint32_t spr = sizes[z] / PC_SECTOR;
					uint8_t *rec = buf + off;
					struct pc_sector_hdr h = { .flags = (uint16_t)(PC_MODE_FUA | (q & 1 ? PC_FL_RANDOM : 0)),
								   .seq = seqs[q], .cycle = 77 + (uint32_t)q,
								   .cnt = (uint16_t)spr };

					geom(&g, 8 * MIB, sizes[z], 0xfeedfacecafebeefull + q);
					memcpy(h.region, g.uuid, 16);
					memset(buf, 0xa5, sizeof(buf));
					pc_record_build(rec, &g, slot, h.seq, h.cycle, h.flags);
					for (uint32_t i = 0; i < spr; i++) {
						h.idx = (uint16_t)i;
						h.lba = pc_slot_lba(&g, slot) + i;
						pc_sector_build(one, &h, g.seed);
						differ += memcmp(one, rec + (size_t)i * PC_SECTOR, PC_SECTOR) != 0;
					}
					/* nothing written past the record */
					differ += rec[sizes[z]] != 0xa5 || (off && buf[0] != 0xa5);
					built++;
				}
	CU_ASSERT_EQUAL(built, PC_ARRAY_SIZE(sizes) * PC_ARRAY_SIZE(seqs) * 2 * 3);
	CU_ASSERT_EQUAL(differ, 0);
}

/* The scan's definition of one whole record, sector by sector. */
static int whole_ref(const uint8_t *rec, const struct pc_geom *g, uint64_t lba0, struct pc_sector_hdr *first)
{
	struct pc_sector_hdr h;

	for (uint32_t i = 0; i < pc_geom_spr(g); i++) {
		if (pc_sector_check(rec + (size_t)i * PC_SECTOR, g, &h) != PC_SECT_VALID || h.lba != lba0 + i ||
		    h.idx != i)
			return 0;
		if (i == 0)
			*first = h;
		else if (h.seq != first->seq || h.cycle != first->cycle || h.flags != first->flags)
			return 0;
	}
	return 1;
}

static void whole_agree(const uint8_t *rec, const struct pc_geom *g, uint64_t lba0, int want)
{
	struct pc_sector_hdr a = { 0 }, b = { 0 };
	int fast = pc_record_whole(rec, g, lba0, &a), ref = whole_ref(rec, g, lba0, &b);

	CU_ASSERT_EQUAL(fast, ref);
	CU_ASSERT_EQUAL(fast, want);
	if (fast && ref)
		CU_ASSERT(a.seq == b.seq && a.cycle == b.cycle && a.flags == b.flags);
}

/* pc_record_whole (four sectors at a time) says what the sector checks say,
 * for record sizes that leave 0 to 3 sectors after the groups of four. */
static void test_record_whole(void)
{
	static const uint32_t sizes[] = { 512, 1536, 2048, 4096, 8704 };
	static uint8_t rec[8704], other[8704];

	for (size_t z = 0; z < PC_ARRAY_SIZE(sizes); z++) {
		struct pc_geom g;
		uint32_t rs = sizes[z], spr = rs / PC_SECTOR;
		uint64_t lba0;

		geom(&g, MIB, rs, 11);
		lba0 = pc_slot_lba(&g, 5);
		pc_record_build(rec, &g, 5, 42, 7, PC_MODE_FUA);
		whole_agree(rec, &g, lba0, 1);
		whole_agree(rec, &g, lba0 + 1, 0);	/* read at another slot */
		/* every bit of the first and the last sector, and bytes of the others */
		for (uint32_t i = 0; i < spr; i++) {
			for (uint32_t byte = 0; byte < PC_SECTOR; byte += (i == 0 || i == spr - 1) ? 1 : 37) {
				for (int bit = 0; bit < 8; bit += (i == 0 || i == spr - 1) ? 1 : 3) {
					rec[i * PC_SECTOR + byte] ^= (uint8_t)(1u << bit);
					whole_agree(rec, &g, lba0, 0);
					rec[i * PC_SECTOR + byte] ^= (uint8_t)(1u << bit);
				}
			}
		}
		whole_agree(rec, &g, lba0, 1);
		/* one sector from the next seq, another cycle, other flags: each valid alone */
		for (int k = 0; k < 3; k++) {
			pc_record_build(other, &g, 5, k == 0 ? 43 : 42, k == 1 ? 8 : 7,
					k == 2 ? PC_MODE_FLUSH : PC_MODE_FUA);
			for (uint32_t i = 0; i < spr; i++) {
				uint8_t save[PC_SECTOR];

				memcpy(save, rec + i * PC_SECTOR, PC_SECTOR);
				memcpy(rec + i * PC_SECTOR, other + i * PC_SECTOR, PC_SECTOR);
				whole_agree(rec, &g, lba0, spr == 1);
				memcpy(rec + i * PC_SECTOR, save, PC_SECTOR);
			}
		}
		/* two sectors swapped */
		if (spr > 1) {
			memcpy(other, rec, rs);
			memcpy(other, rec + (spr - 1) * PC_SECTOR, PC_SECTOR);
			memcpy(other + (spr - 1) * PC_SECTOR, rec, PC_SECTOR);
			whole_agree(other, &g, lba0, 0);
		}
		/* another region's or seed's record of the same slot */
		{
			struct pc_geom g2 = g;

			g2.uuid[3] ^= 1;
			whole_agree(rec, &g2, lba0, 0);
			g2 = g;
			g2.seed++;
			whole_agree(rec, &g2, lba0, 0);
		}
		/* gen 0 */
		pc_record_build(rec, &g, 5, 0, 0, 0);
		whole_agree(rec, &g, lba0, 1);
	}
}

/* ---- slot mapping ---- */

static void check_perm(uint32_t n, uint64_t seed)
{
	struct pc_geom g = { .nslots = n, .seed = seed, .record_size = 4096 };
	uint8_t *seen = calloc(n, 1);
	uint32_t moved = 0, bad = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
	for (uint32_t pos = 0; pos < n; pos++) {
		uint32_t slot = pc_slot_of_pos(&g, PC_PAT_RANDOM, pos);

		if (slot >= n || seen[slot] || pc_pos_of_slot(&g, PC_PAT_RANDOM, slot) != pos)
			bad++;
		else
			seen[slot] = 1;
		moved += slot != pos;
		if (pc_slot_of_pos(&g, PC_PAT_SEQUENTIAL, pos) != pos ||
		    pc_pos_of_slot(&g, PC_PAT_SEQUENTIAL, pos) != pos)
			bad++;
	}
	if (bad)
		fprintf(stderr, "\n    permutation n=%u seed=%llu: %u bad\n", n, (unsigned long long)seed, bad);
	CU_ASSERT_EQUAL(bad, 0);
	/* a "random" permutation that leaves most slots alone is no good */
	if (n >= 64)
		CU_ASSERT(moved > n / 2);
	free(seen);
}

static void test_slot_mapping(void)
{
	static const uint64_t seeds[] = { 0, 1, 42, 0xdeadbeef, UINT64_MAX };

	for (size_t s = 0; s < PC_ARRAY_SIZE(seeds); s++) {
		for (uint32_t n = 1; n <= 70; n++)
			check_perm(n, seeds[s]);
		check_perm(1000, seeds[s]);
		check_perm(4099, seeds[s]);
	}
}

static void test_slot_seeds_differ(void)
{
	struct pc_geom a = { .nslots = 1000, .seed = 1 }, b = { .nslots = 1000, .seed = 2 };
	uint32_t same = 0;

	for (uint32_t pos = 0; pos < 1000; pos++)
		same += pc_slot_of_pos(&a, PC_PAT_RANDOM, pos) == pc_slot_of_pos(&b, PC_PAT_RANDOM, pos);
	CU_ASSERT(same < 100);
}

static void test_slot_of_seq(void)
{
	static const uint32_t ns[] = { 1, 2, 7, 254, 4099 };

	for (size_t k = 0; k < PC_ARRAY_SIZE(ns); k++) {
		struct pc_geom g = { .nslots = ns[k], .seed = 1234 };

		for (int p = PC_PAT_SEQUENTIAL; p <= PC_PAT_RANDOM; p++) {
			for (uint64_t seq = 1; seq <= 3ull * ns[k] + 5; seq++) {
				uint32_t slot = pc_slot_of_seq(&g, p, seq);

				CU_ASSERT_EQUAL(slot, pc_slot_of_pos(&g, p, (uint32_t)((seq - 1) % ns[k])));
				CU_ASSERT_EQUAL(slot, pc_slot_of_seq(&g, p, seq + ns[k]));
				if (p == PC_PAT_SEQUENTIAL)
					CU_ASSERT_EQUAL(slot, (seq - 1) % ns[k]);
			}
			/* seqs far apart still wrap exactly */
			CU_ASSERT_EQUAL(pc_slot_of_seq(&g, p, 1), pc_slot_of_seq(&g, p, 1 + 1000003ull * ns[k]));
		}
	}
}

/* ---- names and UUIDs ---- */

static void test_names(void)
{
	static const char *const modes[] = { "fua", "fua+flush", "flush", "journal", "none", "relwr", "relwr-off" };

	for (int m = PC_MODE_FUA; m < PC_MODE_MAX; m++) {
		CU_ASSERT_STRING_EQUAL(pc_mode_name(m), modes[m - 1]);
		CU_ASSERT_EQUAL(pc_mode_from_name(modes[m - 1]), m);
	}
	CU_ASSERT_STRING_EQUAL(pc_mode_name(PC_MODE_GEN0), "gen0");
	CU_ASSERT_EQUAL(pc_mode_from_name("gen0"), -1);
	CU_ASSERT_EQUAL(pc_mode_from_name("FUA"), -1);
	CU_ASSERT_EQUAL(pc_mode_from_name(""), -1);
	CU_ASSERT_EQUAL(pc_mode_from_name(NULL), -1);
	CU_ASSERT_STRING_EQUAL(pc_mode_name(PC_MODE_MAX), "?");
	CU_ASSERT_STRING_EQUAL(pc_mode_name((enum pc_mode)-1), "?");
	CU_ASSERT(PC_MODE_MAX - 1 <= (int)PC_FL_MODE_MASK);

	CU_ASSERT_STRING_EQUAL(pc_pattern_name(PC_PAT_SEQUENTIAL), "sequential");
	CU_ASSERT_STRING_EQUAL(pc_pattern_name(PC_PAT_RANDOM), "random");
	CU_ASSERT_EQUAL(pc_pattern_from_name("sequential"), PC_PAT_SEQUENTIAL);
	CU_ASSERT_EQUAL(pc_pattern_from_name("random"), PC_PAT_RANDOM);
	CU_ASSERT_EQUAL(pc_pattern_from_name("Random"), -1);
	CU_ASSERT_EQUAL(pc_pattern_from_name(NULL), -1);
}

static void test_uuid(void)
{
	static const char *const bad[] = {
		"", "0123456789abcdef0123456789abcdef", "01234567-89ab-cdef-0123-456789abcde",
		"01234567-89ab-cdef-0123-456789abcdef0", "01234567-89ab-cdef-0123-456789abcdeg",
		"01234567-89ab-cdef-0123-456789abcdef-", "{1234567-89ab-cdef-0123-456789abcdef",
	};
	uint8_t u[16], v[16], w[16];
	char s[37];

	pc_uuid_format(uuid_a, s);
	CU_ASSERT_STRING_EQUAL(s, "01234567-89ab-cdef-1032-547698badcfe");
	CU_ASSERT_EQUAL(pc_uuid_parse(s, u), 0);
	CU_ASSERT_EQUAL(memcmp(u, uuid_a, 16), 0);
	CU_ASSERT_EQUAL(pc_uuid_parse("01234567-89AB-CDEF-1032-547698BADCFE", v), 0);
	CU_ASSERT_EQUAL(memcmp(v, uuid_a, 16), 0);
	for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++)
		CU_ASSERT_EQUAL(pc_uuid_parse(bad[i], u), -EINVAL);

	/* generated UUIDs: version 4, RFC 4122 variant, round trip, distinct */
	for (int i = 0; i < 100; i++) {
		pc_uuid_generate(u);
		CU_ASSERT_EQUAL(u[6] >> 4, 4);
		CU_ASSERT_EQUAL(u[8] >> 6, 2);
		pc_uuid_format(u, s);
		CU_ASSERT_EQUAL(strlen(s), 36);
		CU_ASSERT_EQUAL(s[14], '4');
		CU_ASSERT_EQUAL(pc_uuid_parse(s, w), 0);
		CU_ASSERT_EQUAL(memcmp(u, w, 16), 0);
		CU_ASSERT_NOT_EQUAL(memcmp(u, v, 16), 0);
		memcpy(v, u, 16);
	}
}

static void test_le_helpers(void)
{
	uint8_t b[8];

	pc_put64(b, 0x0102030405060708ull);
	CU_ASSERT_EQUAL(b[0], 0x08);
	CU_ASSERT_EQUAL(b[7], 0x01);
	CU_ASSERT_EQUAL(pc_get64(b), 0x0102030405060708ull);
	CU_ASSERT_EQUAL(pc_get32(b), 0x05060708u);
	CU_ASSERT_EQUAL(pc_get16(b), 0x0708u);
	pc_put16(b, 0xbeef);
	CU_ASSERT_EQUAL(pc_get16(b), 0xbeef);
	pc_put32(b, 0xffffffffu);
	CU_ASSERT_EQUAL(pc_get32(b), 0xffffffffu);
}

int suite_record(void)
{
	static const struct pc_test tests[] = {
		{ "geometry errors", test_geom_errors },
		{ "geometry slot counts", test_geom_slots },
		{ "superblock round trip", test_sb_roundtrip },
		{ "superblock rejects damage", test_sb_reject },
		{ "records build and check valid", test_record_valid },
		{ "every bit flip is BAD", test_sector_bitflips },
		{ "foreign region, seed, size are BAD", test_sector_foreign },
		{ "misdirected sector keeps its LBA", test_sector_misdirected },
		{ "payload determinism", test_payload_determinism },
		{ "whole-record fast path agrees with the sector checks", test_record_whole },
		{ "a record built four sectors at a time is built sector by sector", test_record_build_x4 },
		{ "slot permutation is a bijection", test_slot_mapping },
		{ "seeds give different permutations", test_slot_seeds_differ },
		{ "seq to slot wraps", test_slot_of_seq },
		{ "mode and pattern names", test_names },
		{ "uuid format, parse, generate", test_uuid },
		{ "little-endian helpers", test_le_helpers },
	};

	return pc_test_suite("record", tests, PC_ARRAY_SIZE(tests));
}

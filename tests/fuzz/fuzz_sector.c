/*
 * fuzz_sector.c - the on-device format's decoders (common/record.c, crc32c.c).
 *
 * The input's first 512 bytes are one sector read back from a device (a
 * shorter input is padded with zeros); the bytes after it, when present,
 * are parameters:
 *
 *   p[0]        bit 0: reseal (a valid CRC32C at 508, so made-up headers and
 *               superblocks get past the checksum); bit 1: rebuild the
 *               record payload from the header (so pc_sector_check gets to
 *               its last checks)
 *   p[1..8]     region bytes, p[9..12] record size, p[13..20] seed (LE):
 *               the geometry the sector is checked against (default: the
 *               superblock's, when it is one, else 64 KiB of 4 KiB records,
 *               seed 1), always with the sector's own region UUID
 *
 * Checked: pc_sb_decode() accepts only geometries pc_geom_init() builds, and
 * what it accepts encodes back to the same fields; a geometry that
 * pc_geom_init() accepts has its slots between the two superblocks; a sector
 * pc_sector_check() calls valid is exactly what pc_sector_build() makes of
 * its header; the random pattern's slot permutation is inverted by
 * pc_pos_of_slot(); UUID, mode and pattern names survive their round trips;
 * the hardware and table CRC32C agree on every length and alignment.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "common/crc32c.h"
#include "common/record.h"
#include "common/util.h"
#include "tests/fuzz/fuzz.h"

#define FUZZ_MAX_INPUT 4096

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pc_log_init("fuzz-sector", PC_LOG_ERR);
	return 0;
}

static void superblock(const uint8_t *in)
{
	struct pc_geom g, chk, again;
	uint8_t out[PC_SECTOR];
	char err[256] = "";

	if (pc_sb_decode(in, &g, err, sizeof(err)) != 0) {
		FUZZ_CHECK(err[0], "a superblock refused without a reason");
		return;
	}
	FUZZ_CHECK(pc_geom_init(&chk, g.region_bytes, g.record_size, g.seed, err, sizeof(err)) == 0 &&
		   chk.nslots == g.nslots, "pc_sb_decode accepted a geometry pc_geom_init refuses");
	pc_sb_encode(&g, pc_get32(in + 12), out);
	FUZZ_CHECK(memcmp(out, in, 68) == 0, "a superblock does not encode back to its fields");
	FUZZ_CHECK(pc_sb_decode(out, &again, err, sizeof(err)) == 0 && memcmp(&g, &again, sizeof(g)) == 0,
		   "an encoded superblock does not decode to its geometry");
}

static void geometry(const struct pc_geom *g)
{
	uint32_t spr = pc_geom_spr(g);

	FUZZ_CHECK(g->nslots >= 2 && spr >= 1, "%u slots of %u sectors", g->nslots, spr);
	FUZZ_CHECK(pc_slot_lba(g, 0) == PC_SB_RESERVE_SECT, "slot 0 at %llu",
		   (unsigned long long)pc_slot_lba(g, 0));
	FUZZ_CHECK(pc_slot_lba(g, g->nslots - 1) + spr <= pc_sb_lba(g, 1), "the last slot runs into superblock B");
	FUZZ_CHECK((pc_sb_lba(g, 1) + PC_SB_RESERVE_SECT) * PC_SECTOR == g->region_bytes,
		   "superblock B is not the region's last 4 KiB");
}

static void slot_maps(const struct pc_geom *g, uint64_t seq)
{
	uint32_t pos = (uint32_t)(seq % g->nslots);
	uint32_t slot = pc_slot_of_pos(g, PC_PAT_RANDOM, pos);

	FUZZ_CHECK(slot < g->nslots, "position %u maps to slot %u of %u", pos, slot, g->nslots);
	FUZZ_CHECK(pc_pos_of_slot(g, PC_PAT_RANDOM, slot) == pos, "slot %u does not map back to position %u",
		   slot, pos);
	FUZZ_CHECK(pc_slot_of_pos(g, PC_PAT_SEQUENTIAL, pos) == pos, "the sequential pattern is not the identity");
	if (seq) {
		slot = pc_slot_of_seq(g, PC_PAT_RANDOM, seq);
		FUZZ_CHECK(slot < g->nslots && pc_pos_of_slot(g, PC_PAT_RANDOM, slot) == (seq - 1) % g->nslots,
			   "seq %llu maps to slot %u of %u", (unsigned long long)seq, slot, g->nslots);
	}
}

static void names(const uint8_t *in)
{
	char s[48], u2[37];
	uint8_t u[16];
	int m;

	/* a UUID's text, as a HELLO or a results file carries it */
	memcpy(s, in + PC_OFF_PAYLOAD, 36);
	s[36] = 0;
	if (pc_uuid_parse(s, u) == 0) {
		pc_uuid_format(u, u2);
		for (int i = 0; i < 36; i++)
			FUZZ_CHECK(s[i] == '-' ? u2[i] == '-' : tolower((unsigned char)s[i]) == u2[i],
				   "UUID %s formats as %s", s, u2);
	}
	memcpy(s, in + PC_OFF_PAYLOAD + 36, 16);
	s[16] = 0;
	m = pc_mode_from_name(s);
	if (m >= 0)
		FUZZ_CHECK(m > PC_MODE_GEN0 && m < PC_MODE_MAX && strcmp(pc_mode_name(m), s) == 0, "mode %s", s);
	m = pc_pattern_from_name(s);
	if (m >= 0)
		FUZZ_CHECK(strcmp(pc_pattern_name(m), s) == 0, "pattern %s", s);
}

static void crcs(const uint8_t *data, size_t size)
{
	/* every alignment and length the input offers, hardware against table */
	for (size_t skip = 0; skip < 8 && skip <= size; skip++)
		FUZZ_CHECK(pc_crc32c_hw(0x1234, data + skip, size - skip) == pc_crc32c_sw(0x1234, data + skip,
											     size - skip),
			   "crc32c: %s and table differ over %zu bytes at +%zu", pc_crc32c_impl_name(), size - skip,
			   skip);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t in[PC_SECTOR] = { 0 }, built[PC_SECTOR];
	const uint8_t *p = size > PC_SECTOR ? data + PC_SECTOR : NULL;
	size_t plen = size > PC_SECTOR ? size - PC_SECTOR : 0;
	struct pc_geom g;
	struct pc_sector_hdr h;
	char err[256];
	int have = 0;

	if (size > FUZZ_MAX_INPUT)
		return -1;
	memcpy(in, data, size < PC_SECTOR ? size : PC_SECTOR);
	crcs(data, size);
	if (plen && (p[0] & 2)) {
		pc_sector_hdr_decode(in, &h);
		pc_sector_build(in, &h, plen >= 21 ? pc_get64(p + 13) : 1);
	}
	if (plen && (p[0] & 1))
		pc_put32(in + PC_OFF_CRC, pc_crc32c(0, in, PC_OFF_CRC));
	superblock(in);
	if (plen >= 21)
		have = pc_geom_init(&g, pc_get64(p + 1), pc_get32(p + 9), pc_get64(p + 13), err, sizeof(err)) == 0;
	if (!have)
		have = pc_sb_decode(in, &g, err, sizeof(err)) == 0;
	if (!have)
		FUZZ_CHECK(pc_geom_init(&g, 64 << 10, 4096, 1, err, sizeof(err)) == 0, "the default geometry: %s", err);
	geometry(&g);
	memcpy(g.uuid, in + PC_OFF_REGION, 16);
	if (pc_sector_check(in, &g, &h) == PC_SECT_VALID) {
		FUZZ_CHECK(h.idx < h.cnt && h.cnt == pc_geom_spr(&g), "a valid sector %u of %u in %u-sector records",
			   h.idx, h.cnt, pc_geom_spr(&g));
		pc_sector_build(built, &h, g.seed);
		FUZZ_CHECK(memcmp(built, in, PC_SECTOR) == 0, "a valid sector is not what its header builds");
	}
	pc_sector_hdr_decode(in, &h);
	slot_maps(&g, h.seq);
	names(in);
	return 0;
}

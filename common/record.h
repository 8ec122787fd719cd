/*
 * record.h - the on-device record format shared by agent and host.
 *
 * A region is laid out in 512-byte sectors (LBAs below are region-relative):
 *
 *   [0, 8)                         superblock copy A (sector 0; 4 KiB reserved)
 *   [8, 8 + nslots * spr)          nslots slots of spr = record_size / 512 sectors
 *   [total - 8, total)             superblock copy B (first sector of the last 4 KiB)
 *
 * Every sector of every record is self-describing (see PC_OFF_* below) and
 * carries its own CRC32C, so a scan can say of each sector on its own which
 * record it belongs to and whether it is whole. The payload is a pure function
 * of (seed, seq, lba), so anybody who knows the header fields can regenerate
 * the exact bytes a sector should hold and locate a tear to the byte.
 *
 * All multi-byte fields are little-endian on the medium.
 */
#ifndef PC_RECORD_H
#define PC_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "common/bytes.h"

#define PC_SECTOR		512u
#define PC_SB_RESERVE_SECT	8u	/* 4 KiB at each end */
#define PC_FORMAT_VERSION	1u
#define PC_REC_MAGIC		0x52435750u	/* "PWCR" */
#define PC_SB_MAGIC		"PWRCUTSB"
#define PC_MAX_RECORD_SIZE	(1u << 20)	/* 1 MiB: 2048 sectors */

/* Sector header field offsets. */
#define PC_OFF_MAGIC	0
#define PC_OFF_VERSION	4
#define PC_OFF_FLAGS	6
#define PC_OFF_REGION	8	/* 16-byte region UUID */
#define PC_OFF_SEQ	24
#define PC_OFF_CYCLE	32
#define PC_OFF_IDX	36	/* sector index within its record */
#define PC_OFF_CNT	38	/* sectors in the record */
#define PC_OFF_LBA	40	/* region-relative LBA it was written for */
#define PC_OFF_PAYLOAD	48
#define PC_OFF_CRC	508	/* CRC32C of bytes [0, 508) */

/* Write modes (docs/design.md section 5). Values are stored in sector flags. */
enum pc_mode {
	PC_MODE_GEN0 = 0,	/* the fill written by prepare */
	PC_MODE_FUA = 1,
	PC_MODE_FUA_FLUSH = 2,
	PC_MODE_FLUSH = 3,
	PC_MODE_JOURNAL = 4,
	PC_MODE_NONE = 5,
	PC_MODE_RELWR = 6,
	PC_MODE_RELWR_OFF = 7,	/* the control: CMD23 without the reliable-write bit */
	PC_MODE_MAX = 8,
};

enum pc_pattern {
	PC_PAT_SEQUENTIAL = 0,
	PC_PAT_RANDOM = 1,
};

#define PC_FL_MODE_MASK		0x000fu
#define PC_FL_COMMIT		0x0010u	/* journal commit record */
#define PC_FL_RANDOM		0x0020u	/* written under the random pattern */

const char *pc_mode_name(enum pc_mode m);
/* Returns the mode for a name, or -1. "gen0" is not accepted. */
int pc_mode_from_name(const char *name);
const char *pc_pattern_name(enum pc_pattern p);
int pc_pattern_from_name(const char *name);

/* Decoded sector header. */
struct pc_sector_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t flags;
	uint8_t region[16];
	uint64_t seq;
	uint32_t cycle;
	uint16_t idx;
	uint16_t cnt;
	uint64_t lba;
};

/* Region geometry, as stored in the superblock. */
struct pc_geom {
	uint8_t uuid[16];
	uint64_t region_bytes;	/* whole region, superblocks included */
	uint32_t record_size;	/* bytes, multiple of 512 */
	uint32_t nslots;
	uint64_t seed;
	uint64_t created;	/* unix seconds */
};

/* Sectors per record. */
static inline uint32_t pc_geom_spr(const struct pc_geom *g)
{
	return g->record_size / PC_SECTOR;
}

/* First LBA of a slot. */
static inline uint64_t pc_slot_lba(const struct pc_geom *g, uint32_t slot)
{
	return PC_SB_RESERVE_SECT + (uint64_t)slot * pc_geom_spr(g);
}

/*
 * Compute a geometry for a region of region_bytes with record_size records.
 * Returns 0 or -EINVAL with a reason in err.
 */
int pc_geom_init(struct pc_geom *g, uint64_t region_bytes, uint32_t record_size,
		 uint64_t seed, char *err, size_t errlen);

/* Superblock: encode into one 512-byte sector; decode returns 0 or -EINVAL. */
void pc_sb_encode(const struct pc_geom *g, uint32_t copy, uint8_t out[PC_SECTOR]);
int pc_sb_decode(const uint8_t in[PC_SECTOR], struct pc_geom *g, char *err, size_t errlen);
/* LBA of superblock copy 0 or 1. */
uint64_t pc_sb_lba(const struct pc_geom *g, int copy);

/* Fill one sector of record seq (all header fields given) with its content. */
void pc_sector_build(uint8_t out[PC_SECTOR], const struct pc_sector_hdr *h, uint64_t seed);

/*
 * Build a whole record (spr sectors) for seq written in cycle with flags at
 * slot. Gen-0 records have seq 0, cycle 0, flags 0.
 */
void pc_record_build(uint8_t *out, const struct pc_geom *g, uint32_t slot,
		     uint64_t seq, uint32_t cycle, uint16_t flags);

/* Decode a sector header without checking anything. */
void pc_sector_hdr_decode(const uint8_t in[PC_SECTOR], struct pc_sector_hdr *h);

enum pc_sector_state {
	PC_SECT_VALID = 0,	/* magic, version, region, crc and payload all check */
	PC_SECT_BAD = 1,	/* anything else */
};

/*
 * Check a sector read back from the region: magic, version, region UUID,
 * CRC32C, and that the payload matches (seed, seq, lba). On PC_SECT_VALID the
 * decoded header is in *h.
 */
enum pc_sector_state pc_sector_check(const uint8_t in[PC_SECTOR], const struct pc_geom *g,
				     struct pc_sector_hdr *h);

/*
 * Is rec (one record's spr sectors, read from the slot whose first LBA is
 * lba0) one whole record? 1 exactly when every sector i is PC_SECT_VALID
 * with lba lba0 + i and idx i, and the same seq, cycle and flags as sector
 * 0, whose header is then in *first; else 0. The scan's fast path: four
 * sectors' CRCs and payloads computed together.
 */
int pc_record_whole(const uint8_t *rec, const struct pc_geom *g, uint64_t lba0, struct pc_sector_hdr *first);

/*
 * Slot mapping. Sequence numbers start at 1; seq 0 is the gen-0 occupant.
 * position(seq) = (seq - 1) % nslots; slot = position for the sequential ring,
 * or a seeded permutation of the position for the random pattern.
 */
uint32_t pc_slot_of_seq(const struct pc_geom *g, enum pc_pattern p, uint64_t seq);
uint32_t pc_slot_of_pos(const struct pc_geom *g, enum pc_pattern p, uint32_t pos);
uint32_t pc_pos_of_slot(const struct pc_geom *g, enum pc_pattern p, uint32_t slot);

/* Little-endian helpers: pc_put16/32/64, pc_get16/32/64 (common/bytes.h). */

/* UUID text form (36 chars + NUL). */
void pc_uuid_format(const uint8_t uuid[16], char out[37]);
int pc_uuid_parse(const char *s, uint8_t uuid[16]);
/* Random UUID v4 from getrandom(), falling back to the clock. */
void pc_uuid_generate(uint8_t uuid[16]);

/* splitmix64: the one mixing function used for payloads and permutations. */
static inline uint64_t pc_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

#endif

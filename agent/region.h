/*
 * region.h - a prepared powercut region on a device: claim, open, read, write, scan.
 *
 * The region is the only part of the device the agent ever writes: opening
 * it narrows the device's write window (dev.h) to [offset, offset + length),
 * the range the user gave, then to the region its superblock describes, and
 * every backend checks each write against that window right before issuing
 * it. region_write() also refuses anything outside the slots; the
 * superblocks are written only by region_prepare().
 */
#ifndef PC_AGENT_REGION_H
#define PC_AGENT_REGION_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/proto.h"
#include "common/record.h"
#include "agent/dev.h"

struct region_opts {
	const char *spec;	/* device: path, "sim:PATH", or PARTLABEL=/PARTUUID=/LABEL=/UUID= */
	uint64_t offset;	/* byte offset of the region on the device */
	uint64_t length;	/* bytes; 0 = to the end of the device */
	int allow_whole_disk;
	const struct sim_opts *sim;	/* for sim: devices (dev_sim_opt), NULL: the defaults */
	/* prepare only: overwrite what libblkid recognises (or cannot judge)
	 * when force is set and confirm_device is the resolved device path */
	int force;
	const char *confirm_device;
};

struct region {
	struct dev dev;
	char path[4096];	/* resolved device path */
	char spec[512];		/* what the agent was told (--device), for the HELLO */
	uint64_t off;		/* region start on the device, bytes */
	struct pc_geom g;
	int sb_ok[2];		/* which superblock copies are valid (A, B) */
	char sb_why[2][160];	/* why a copy is not ("" when it is) */
	struct pc_geom sb_g[2];	/* what each valid copy says */
	int sb_read;		/* both copies were looked at (also when region_open failed after) */
};

/*
 * Open the device and the region on it and check both superblock copies:
 * each must be valid, say which copy it is, fit the range the user gave
 * (--offset/--length, or to the device's end) and, for B, sit where its own
 * geometry puts it. A valid copy is used (both valid: they must agree); why
 * each copy is not valid stays in sb_why. The geometry comes only from the
 * device, never from the host. 0 or -errno with err naming the device:
 * -ENOENT no valid superblock, -EROFS a read-only device opened for write,
 * -EBUSY mounted or in use, -ENODEV no such device (sim: bricked).
 * Close with region_close().
 */
int region_open(struct region *r, const struct region_opts *o, int for_write, char *err, size_t errlen);
void region_close(struct region *r);

/* The state of both superblock copies, for HELLO: {"a": "ok" | why, "b": ...}. */
json_object *region_sb_state(const struct region *r);

/*
 * Claim a region: write both superblocks and a generation-0 record into every
 * slot, then flush. Destroys what the range held: the caller must have an
 * explicit confirmation (--yes). Before anything is written the target must
 * pass: the open's refusals (mounted, swap, in use, a loop device's backing
 * file, read-only), then either a valid superblock of our own in the range
 * (re-preparing is what --yes confirms), or nothing libblkid recognises on
 * the device nor in the range; a filesystem, RAID/LVM member, swap area,
 * partition table, or a probe that cannot tell, is overwritten only with
 * o->force and o->confirm_device equal to the resolved device path (-EEXIST
 * otherwise, err naming the device, what it holds and what to type). A
 * backend that can make a missing device (the sim's media file: dev_ops
 * create) makes one of sim_size bytes first. Progress
 * goes to stderr when verbose.
 */
int region_prepare(const struct region_opts *o, uint32_t record_size, uint64_t seed,
		   uint64_t sim_size, int verbose, char *err, size_t errlen);

/* Write one record at its slot (synchronous). 0 or -errno. */
int region_write(struct region *r, uint32_t slot, const void *buf, unsigned wflags);
/* Byte offset of a slot on the device; checks bounds (-ERANGE outside). */
int region_slot_offset(const struct region *r, uint32_t slot, uint64_t *off);

/* Emit one protocol message (scan output); the callee takes ownership of msg. */
typedef int (*region_emit_fn)(json_object *msg, void *arg);

struct scan_stats {
	uint32_t slots;
	uint32_t anomalies;
	uint32_t raw_sent;
	uint32_t raw_dropped;
	uint32_t known;		/* damaged sectors reported by hash because the host holds them */
	uint32_t same;		/* damaged slots reported by number: exactly as the host holds them */
	uint64_t ms;
};

/*
 * Scan every slot (ranges NULL) or the slots at the given positions of the
 * pattern (a partial scan: -ERANGE when a range lies past the region), then emit scan_begin, runs (position order of pattern),
 * one slot message per slot that is not one whole record, and scan_end.
 * 0 or -errno (a failed emit stops the scan).
 */
int region_scan(struct region *r, int pattern, const struct pc_posrange *ranges, uint32_t nranges,
		region_emit_fn emit, void *arg, struct scan_stats *st);
/* What the host already holds, from the KNOWN messages before a VERIFY. */
struct scan_known {
	struct pc_known *k;		/* damaged sectors */
	uint32_t n;
	struct pc_known_slot *slots;	/* damaged slots, by digest */
	uint32_t nslots;
};

/*
 * The same, told what the host already holds (sorted here in place). A
 * damaged slot whose digest (pc_slot_digest) matches a known slot's is
 * reported in a SAME line by its number alone. In the others, a bad sector
 * whose slot, index and crc32c match a known sector is reported by hash and
 * does not spend the PC_PROTO_MAX_RAW budget, which so goes to damage the
 * host has not seen.
 */
int region_scan_known(struct region *r, int pattern, const struct pc_posrange *ranges, uint32_t nranges,
		      struct scan_known *known, region_emit_fn emit, void *arg, struct scan_stats *st);

/* Region facts for HELLO / info: uuid, bytes, record_size, slots, seed, offset. */
json_object *region_describe(const struct region *r);

#endif

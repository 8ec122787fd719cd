/*
 * wlog.h - the write log, in the Linux kernel's dm-log-writes format: its one
 * codec. The sim keeps one per power-on (sim/inputs.c), QEMU's blklogwrites
 * writes one for the virtual board (read by vboard/vcache.c), the virtual
 * board keeps its own (vboard/vckeep.c), and crash-states reads them
 * (harness/crash/crash_inputs.c, docs/crash-states.md).
 *
 * All numbers little-endian (record.h's pc_put64/pc_get64), in sectors of
 * the log's sector size (512 where the sim and the virtual board write it):
 *
 *   sector 0   the superblock: u64 magic (WLOG_MAGIC), u64 version (1),
 *              u64 nr_entries, u32 sector size, u32 0
 *   then, per entry, in the order the writes completed:
 *              a header sector: u64 sector, u64 nr_sectors, u64 flags
 *              (WLOG_*), u64 data_len; a mark's text inline after it
 *              (WLOG_HDR_BYTES on); then a write's data, nr_sectors
 *              sectors (a flush, discard or mark has none)
 */
#ifndef PC_WLOG_H
#define PC_WLOG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WLOG_MAGIC		0x6a736677736872ULL	/* the superblock's first 8 bytes */
#define WLOG_VERSION		1ULL
#define WLOG_SECT		512u	/* the sector size the sim and the virtual board write */
#define WLOG_HDR_BYTES		32u	/* an entry's header fields, before a mark's text */

/* an entry's flags */
#define WLOG_FLUSH		(1u << 0)
#define WLOG_FUA		(1u << 1)
#define WLOG_DISCARD		(1u << 2)
#define WLOG_MARK		(1u << 3)	/* a mark: no sectors, its text inline in its header sector */
#define WLOG_FLAG_MASK		0xfu
#define WLOG_MARK_MAX		(WLOG_SECT - WLOG_HDR_BYTES - 1u)	/* a mark's text, at most */

#define WLOG_MAX_ENTRIES	(1u << 22)	/* writes and flushes wlog_read() takes from one log */

struct wlog_super {
	uint64_t magic, version, entries;
	uint32_t sectsize;
};

/* An entry's header, as it stands in the log. */
struct wlog_hdr {
	uint64_t sector, nsect, flags, data_len;
};

/* The superblock into p (WLOG_HDR_BYTES; the rest of its sector the caller's, zeros). */
void wlog_super_put(uint8_t *p, uint64_t entries, uint32_t sectsize);
void wlog_super_get(const uint8_t *p, struct wlog_super *sb);
/* An entry's header into p (WLOG_HDR_BYTES), and back. */
void wlog_hdr_put(uint8_t *p, const struct wlog_hdr *h);
void wlog_hdr_get(const uint8_t *p, struct wlog_hdr *h);

/* One entry of a log, as wlog_read() found it. */
struct wlog_entry {
	uint64_t sector, nsect;	/* in the log's sector size */
	off_t data;		/* where its data is in the log (its header sector ends there) */
	unsigned flags;		/* WLOG_* */
	int fua;		/* vboard/vcache.c's: the write carried FUA (flag or QEMU's trace) */
};

/*
 * Read the entries of the log open on fd (path for errors): the log's sector
 * size into *ssize (the superblock's, else 512: blklogwrites rewrites it only
 * at a flush, so it may be missing or behind), the entries (malloc'd, the
 * caller frees) in log order, up to the first sector that is not a whole
 * entry; a run of zero sectors (an entry whose place was reserved, never
 * written) is read past. 0, or -errno with err set.
 */
int wlog_read(int fd, const char *path, uint32_t *ssize, struct wlog_entry **out, size_t *nout, char *err,
	      size_t errlen);

#endif

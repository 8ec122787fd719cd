/*
 * vcache.h - a volatile write cache that really loses data at the cut, for
 * the virtual board (relay_qemu.c).
 *
 * QEMU's blklogwrites filter logs every write the guest's disk issues, in
 * the order they completed, and every cache flush, in the dm-log-writes
 * format (a superblock, then per entry a 512-byte header sector followed by
 * the write's data; common/wlog.h, whose wlog_read() reads it here). The
 * board's QEMU writes to a scratch copy of the disk image; at the cut,
 * vc_rebuild() replays the log onto the image the next power-on boots (the
 * "media"), as a device with a volatile cache would leave it:
 *
 *   - a write the device made durable is kept: one a later completed flush
 *     covers, or one written with FUA (profile permitting);
 *   - of the others, a seeded random choice: the whole write kept, the
 *     whole write dropped, or each of its sectors kept or dropped on its own
 *     (a tear), independently of the order they were issued in.
 *
 * Which writes carried FUA the log does not say: QEMU's SCSI disk turns a
 * FUA WRITE into a write and a flush before the block layer sees it. So
 * the FUA bit is read from QEMU's own trace of the SCSI commands the guest
 * sent (scsi_disk_new_request), in QEMU's log from the power-on on.
 *
 * On the eMMC board the trace is the MMC card model's (vc_params.trace_mmc):
 * a block is "FUA" when the card wrote it for a reliable write (CMD23 with
 * bit 31 before the CMD25). Linux sends an eMMC without a cache
 * (EXT_CSD cache_size 0) no flush at all, so there a cache that keeps only
 * reliable writes is lying-flush, and fua-ignored is a card that ignores
 * reliable write.
 *
 * Profiles, as in the sim board:
 *   honest       flushes and FUA honoured;
 *   lying-flush  flushes ignored: only FUA writes are safe;
 *   fua-ignored  FUA ignored too: nothing is safe.
 *
 * Every rebuild appends one JSON line to a record (what it kept, what it
 * dropped, sector by sector), so a test can check the verdicts against what
 * the "device" really lost. The log and the trace are untrusted input: every
 * count and range is bounded before it sizes anything.
 */
#ifndef PC_VCACHE_H
#define PC_VCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/wlog.h"

enum vc_profile { VC_HONEST, VC_LYING_FLUSH, VC_FUA_IGNORED };

#define VC_PROFILES	{ "honest", "lying-flush", "fua-ignored" }
#define VC_MAX_ENTRIES	WLOG_MAX_ENTRIES	/* commands in one power-on's trace, as many as its log's */
#define VC_RECORD_MAX	4096		/* writes listed one by one in a record line */

struct vc_params {
	const char *log;		/* blklogwrites' log */
	const char *trace;		/* QEMU's log holding the scsi_disk_new_request trace; NULL: no FUA known */
	off_t trace_off;		/* where this power-on's part of it starts */
	int trace_mmc;			/* the trace is QEMU's SD/MMC card's (sdcard_normal_command,
					 * sdcard_write_block): "FUA" is a reliable write, CMD23's bit 31 */
	const char *media;		/* the image the next power-on boots */
	const char *record;		/* the JSON lines record; NULL: none */
	enum vc_profile profile;
	uint64_t seed;
	uint64_t power_on;		/* which power-on the log is of (1, 2, ...) */
};

struct vc_stats {
	uint64_t entries, writes, flushes, fua_writes, durable, kept, dropped, torn, discards;
	uint64_t trace_writes;		/* SCSI WRITE commands (MMC: blocks written) in the trace */
};

/*
 * One line of QEMU's scsi_disk_new_request trace: the command's tag into
 * *tag and its CDB bytes into cdb; returns how many (0: not such a line).
 * vc_scsi_write: 1 when the CDB is a WRITE(10) or WRITE(16), with its first
 * block, blocks and FUA bit. Also vboard/vckeep.c reads the trace with them.
 */
int vc_scsi_cdb(const char *line, uint32_t *tag, unsigned char cdb[16]);
int vc_scsi_write(const unsigned char *cdb, int ncdb, uint64_t *lba, uint64_t *n, int *fua);

const char *vc_profile_name(enum vc_profile p);
/* -1 when the name is none of VC_PROFILES. */
int vc_profile_parse(const char *name);

/*
 * Replay the log onto the media as the profile says (see above), fsync it,
 * append the record line. 0, or -errno with err set (the media may then be
 * partly written: the same call again gives the same result, the choices
 * depending only on seed, power_on and the log).
 */
int vc_rebuild(const struct vc_params *vp, struct vc_stats *st, char *err, size_t errlen);

#endif

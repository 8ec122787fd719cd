/*
 * vckeep.h - the virtual board's crash-state inputs, kept per power-on
 * (relay.keep_inputs with a volatile cache on the SCSI disk), in the layout
 * `powercut crash-states` reads (docs/crash-states.md, docs/vm.md):
 *
 *   <state>/vc-inputs/session-S/   S = the power-on
 *     base.img    the region (the drive's GPT partition "pc-region") at
 *                 power-on S, before QEMU ran
 *     writes.log  dm-log-writes: every WRITE and SYNCHRONIZE CACHE the SCSI
 *                 disk completed in power-on S, region-relative sectors, a
 *                 write's FUA flag from its command, in completion order
 *                 (below); then the writes whose data reached the image but
 *                 whose command never completed, as plain writes
 *     after.img   the region after the cut (the volatile cache's rebuild)
 *     cycle.json  what the session holds ("finished": true once after.img is
 *                 written)
 *
 * Completion order is QEMU's: its trace of the SCSI disk (scsi_disk_new_request,
 * the command and its tag; scsi_req_dequeue, the tag, when the command
 * completes), read from the power-on's part of QEMU's log. A write's entry
 * stands where its command completed; a flush's where it was issued, so a
 * flush entry follows exactly the writes that completed before the flush was
 * issued, the ones it makes durable. blklogwrites' own log gives the data
 * (matched to its command by first sector and length) and nothing else: its
 * flushes are the device's, not the guest's.
 */
#ifndef PC_VCKEEP_H
#define PC_VCKEEP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VK_MAX_KEEP		1000u		/* relay.keep_inputs */
#define VK_MAX_REGION		(1ULL << 30)	/* bytes of region copied twice per power-on */
#define VK_PARTITION		"pc-region"	/* the GPT name of the region's partition */

struct vk_session {
	const char *root;		/* <state>/vc-inputs */
	uint64_t session;		/* the power-on */
	unsigned keep;			/* sessions kept before this one */
	const char *drive;
	uint64_t region_off, region_len;	/* the region: bytes of the drive */
};

/* The region: the drive's GPT partition named VK_PARTITION. 0, or -errno with err set. */
int vk_region_find(const char *drive, uint64_t *off, uint64_t *len, char *err, size_t errlen);

/* At power-on S: the sessions outside [S - keep, S] removed, session-S made
 * with base.img and an unfinished cycle.json. 0, or -errno with err set. */
int vk_begin(const struct vk_session *s, char *err, size_t errlen);

/* At the cut, after the rebuild: writes.log from the blklogwrites log and the
 * trace (QEMU's log from trace_off), after.img, cycle.json finished. A session
 * that was never begun is left alone (0). 0, or -errno with err set. */
int vk_finish(const struct vk_session *s, const char *log, const char *trace, off_t trace_off, const char *profile,
	      char *err, size_t errlen);

#endif

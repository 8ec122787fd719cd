/*
 * dev.h - the agent's device backends behind one small ops table.
 *
 * A backend gives byte-addressed access to the whole device (file, block
 * device or emulated eMMC); region.c adds the region's offset and refuses
 * anything outside it. Offsets and lengths are multiples of 512 and buffers
 * are aligned to 4096 (O_DIRECT). Functions return 0 or -errno; on error
 * dev->err holds a message naming the device and what to do.
 */
#ifndef PC_AGENT_DEV_H
#define PC_AGENT_DEV_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#define DEV_W_DSYNC	1u	/* FUA: RWF_DSYNC */

/* What a backend is, in dev_ops.caps: the callers ask these, never a name. */
#define DEV_CAP_RESOLVE		(1u << 0)	/* its spec is a file or block device: resolved first
						 * (PARTLABEL=, UUID=, symlinks; blockdev_resolve) */
#define DEV_CAP_REGION_AT_0	(1u << 1)	/* a region must start at offset 0 (the sim's truth
						 * log counts LBAs from the start of the media) */
#define DEV_CAP_AIO_INLINE	(1u << 2)	/* its asynchronous queue is one in name only: each
						 * write completes when submitted, in order */

struct dev;

/* One asynchronous write (->aio_submit) or read (->aio_read), returned by ->reap. */
struct dev_io {
	uint64_t off;
	const void *buf;	/* what a write sends */
	void *dst;		/* where a read puts what it got */
	size_t len;
	unsigned wflags;
	uint64_t tag;		/* caller's (the seq) */
	int result;		/* 0 or -errno, set on reap */
};

struct audit_counts;

struct dev_ops {
	const char *name;	/* "posix", "sim": reported (HELLO "backend"), never compared */
	/* the spec prefix that picks this backend ("sim:"), NULL for the default */
	const char *prefix;
	unsigned caps;		/* DEV_CAP_* */
	/* the asynchronous path as HELLO and DONE name it ("io_uring", "sim") */
	const char *aio_name;
	/* Make a missing device of size bytes (prepare; optional: only the sim's
	 * media file can be made). 0 or -errno with err. */
	int (*create)(const char *path, uint64_t size, char *err, size_t errlen);
	int (*open)(struct dev *d, int for_write);
	void (*close)(struct dev *d);
	int (*read)(struct dev *d, uint64_t off, void *buf, size_t len);
	/* Synchronous write; DEV_W_DSYNC makes it pwritev2(RWF_DSYNC). */
	int (*write)(struct dev *d, uint64_t off, const void *buf, size_t len, unsigned wflags);
	/* fdatasync: a cache flush. */
	int (*flush)(struct dev *d);
	/* Asynchronous writes with up to qd in flight (io_uring on posix). setup
	 * returns -ENOSYS when the kernel has no io_uring: the caller must then
	 * say which mode it really runs. */
	int (*aio_setup)(struct dev *d, unsigned qd);
	int (*aio_submit)(struct dev *d, struct dev_io *io);
	/* Asynchronous read of io->len bytes at io->off into io->dst, reaped
	 * like a write (optional: NULL where reads are synchronous only). Sets
	 * up the queue when nothing did yet; -ENOSYS without io_uring. A short
	 * read completes with -EIO: the caller reads that range again itself. */
	int (*aio_read)(struct dev *d, struct dev_io *io);
	/* Wait for at least min completions; returns how many were stored in done[]. */
	int (*aio_reap)(struct dev *d, struct dev_io **done, unsigned max, unsigned min);
	/* Add identity facts (sysfs, EXT_CSD, queue/fua, ...) to obj. */
	void (*identity)(struct dev *d, json_object *obj);
	/* Raw eMMC write, bypassing the block layer: CMD23 with (reliable) or
	 * without the reliable-write bit, then CMD25. -ENOTTY on a non-MMC device. */
	int (*relwr)(struct dev *d, uint64_t off, const void *buf, size_t len, int reliable);
	/* The host is about to reboot without syncing while the device keeps
	 * power (optional: a real device needs nothing done). */
	int (*host_reset)(struct dev *d);
	/* The requests the device received, counted by the backend itself
	 * (audit.h; the sim), or NULL: the kernel's tracefs is asked instead. */
	struct audit_counts *(*audit)(struct dev *d);
	/* The agent is about to acknowledge records [first, first + n) (optional:
	 * the sim puts a mark "PC_ACK_MARK first n" in the write log it keeps,
	 * between requests, so that crash-states sees each ACK where the agent
	 * sent it; docs/crash-states.md, "ACK marks"). */
	void (*ack_mark)(struct dev *d, uint64_t first, uint64_t n);
};

/* The text of an ACK mark in a kept write log: PC_ACK_MARK " FIRST N". */
#define PC_ACK_MARK	"pc-ack"


/* The sim backend's options (sim/emmc.h): opaque to everything but dev_sim.c. */
struct sim_opts;

struct dev_opts {
	const char *path;		/* file or block device; for sim the media file */
	int allow_whole_disk;
	/* sim only: its options, NULL for the defaults; the caller's: they must
	 * outlive the open device, which reads them and never frees them */
	const struct sim_opts *sim;
};

struct dev {
	const struct dev_ops *ops;
	struct dev_opts o;
	uint64_t size;		/* bytes */
	int fd;
	int is_blockdev;
	char err[512];
	/* how a synchronous DEV_W_DSYNC write is really done here (for HELLO) */
	char dsync_how[160];
	/* how relwr is done here, or why it cannot be */
	char relwr_how[256];
	/* The only bytes any write may touch, [wlo, whi) on the device: open
	 * sets the whole device, region.c narrows it to the region. Every write
	 * hook checks it with dev_write_check() right before the write goes out. */
	uint64_t wlo, whi;
	void *priv;		/* backend state */
	/* a test of crash-states only (the sim's ack-early profile): the writer
	 * acknowledges each record before the device makes it durable */
	int ack_early;
};

extern const struct dev_ops dev_posix_ops;
/* The emulated eMMC (dev_sim.c); in an agent built with `make SIM=0`
 * (dev_nosim.c) it opens nothing and says the agent was built without it. */
extern const struct dev_ops dev_sim_ops;

/* Pick the backend for a device spec by its prefix: "sim:PATH" gives sim,
 * anything else posix. */
const struct dev_ops *dev_ops_for(const char *spec, const char **path);

/*
 * Set one of the sim backend's options (--sim-NAME VALUE; sim_opts_set in
 * sim/emmc.h names them): *so is made on first use, the caller frees it with
 * dev_sim_opts_free (NULL is fine). 0, or -EINVAL/-ENOENT with err saying
 * what was expected; -ENOTSUP in an agent built without the sim board.
 */
int dev_sim_opt(struct sim_opts **so, const char *name, const char *val, char *err, size_t errlen);
void dev_sim_opts_free(struct sim_opts *so);

/*
 * The one bounds check of every write (pwrite, pwritev2, io_uring, raw MMC,
 * sim): 0 when [off, off + len) lies inside [d->wlo, d->whi), else -ERANGE
 * with d->err naming the device, the write (what) and the bound. A write it
 * refuses is never issued.
 */
int dev_write_check(struct dev *d, const char *what, uint64_t off, size_t len);
/* Narrow the write window to [lo, hi); -ERANGE if that is not inside the
 * current window (it can only shrink). */
int dev_write_window(struct dev *d, uint64_t lo, uint64_t hi);

#endif

/*
 * dev_posix.c - the real device path: a block device (or a regular file)
 * through O_DIRECT, pwritev2(RWF_DSYNC), fdatasync and io_uring.
 *
 * O_DIRECT is not optional: through the page cache a "completed" write says
 * nothing about the device, and every verdict would measure the kernel.
 *
 * The modes of the design map onto these hooks:
 *   fua        aio_submit with DEV_W_DSYNC: io_uring write with RWF_DSYNC,
 *              the block layer sends REQ_FUA (eMMC reliable write)
 *   fua+flush  write with DEV_W_DSYNC: pwritev2(RWF_DSYNC); the synchronous
 *              path also runs the file's sync, a cache flush after the write
 *   flush      write, then flush (fdatasync) every N records
 *   none       write only
 */
#include "agent/dev.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>

#ifdef PC_HAVE_URING
#include <liburing.h>
#endif

#include "common/util.h"
#include "agent/blockdev.h"
#include "agent/mmc_relwr.h"

struct posix_priv {
	unsigned qd;
	unsigned inflight;
	int dsync_fd;		/* O_DSYNC descriptor, where pwritev2(RWF_DSYNC) is missing */
	struct mmc_relwr *mmc;	/* raw writes to the card, opened on first use */
#ifdef PC_HAVE_URING
	int ring_up;
	struct io_uring ring;
#endif
};

static int posix_fail(struct dev *d, int ret, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int posix_fail(struct dev *d, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ret = pc_vfail(d->err, sizeof(d->err), ret, fmt, ap);
	va_end(ap);
	return ret;
}

static int posix_io_fail(struct dev *d, const char *what, uint64_t off, size_t len, int ret)
{
	const char *hint = "";

	if (ret == -EINVAL)
		hint = " (O_DIRECT needs 512-byte multiples and 4096-aligned buffers)";
	else if (ret == -ENODATA)
		hint = " (past the end of the device)";
	return posix_fail(d, ret, "%s: %s of %zu bytes at offset %" PRIu64 " failed: %s%s", d->o.path, what, len,
			  off, strerror(-ret), hint);
}

static int posix_open_fail(struct dev *d, int for_write, int e)
{
	switch (e) {
	case EINVAL:
		return posix_fail(d, -EINVAL, "%s: the filesystem refuses O_DIRECT (EINVAL); powercut requires "
				  "O_DIRECT (tmpfs, for example, cannot do it): use a block device or a file on a "
				  "disk filesystem", d->o.path);
	case EBUSY:
		return posix_fail(d, -EBUSY, "%s: the kernel refused an exclusive open (EBUSY) for 2 s: something "
				  "holds it (a mount, swap, dm/LVM/RAID, another program); release it first", d->o.path);
	case EROFS:
		return posix_fail(d, -EROFS, "%s is read-only (EROFS): a read-only loop device (losetup -r), a "
				  "write-protected card or `blockdev --setro`; the agent cannot write to it: make it "
				  "writable (blockdev --setrw %s) or choose another device", d->o.path, d->o.path);
	case EACCES:
	case EPERM:
		return posix_fail(d, -e, "cannot open %s for %s: %s; run the agent as root or fix the permissions",
				  d->o.path, for_write ? "writing" : "reading", strerror(e));
	default:
		return posix_fail(d, -e, "cannot open %s: %s", d->o.path, strerror(e));
	}
}

/* Block devices pass the safety checks before anything opens them; a file
 * that backs a loop device or is a swap file is refused for writing. */
static int posix_open_checks(struct dev *d, const struct stat *st, int for_write)
{
	if (S_ISBLK(st->st_mode))
		return blockdev_check_safe(d->o.path, st->st_rdev, d->o.allow_whole_disk, d->err, sizeof(d->err));
	if (S_ISREG(st->st_mode))
		return for_write ? blockdev_check_file_unused(d->o.path, st, d->err, sizeof(d->err)) : 0;
	return posix_fail(d, -ENODEV, "%s is neither a block device nor a regular file", d->o.path);
}

/* Open the checked path (st: what the checks saw) with flags: the busy
 * moment after a killed agent waited out. 0, or as posix_open_fail(). */
static int posix_open_fd(struct dev *d, const struct stat *st, int for_write)
{
	int flags = O_DIRECT | O_CLOEXEC | (for_write ? O_RDWR : O_RDONLY);

	/* A second line of defence after the checks: the kernel refuses an
	 * exclusive open of a block device that is mounted or claimed. */
	if (for_write && S_ISBLK(st->st_mode))
		flags |= O_EXCL;
	d->fd = open(d->o.path, flags);
	/* The checks found no holder, yet the kernel says busy: most often an
	 * agent killed a moment ago (a cut simulated by SIGKILL) whose io_uring
	 * is still being torn down, holding the device until its writes in
	 * flight complete. Wait for that, a bounded while (2 s). */
	for (int i = 0; d->fd < 0 && errno == EBUSY && (flags & O_EXCL) && i < 100; i++) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		d->fd = open(d->o.path, flags);
	}
	if (d->fd < 0)
		return posix_open_fail(d, for_write, errno);
	return 0;
}

/* What was opened is what was checked (st); its size, and a block device
 * that is read-only refused for writing. 0 or -errno (said). */
static int posix_open_size(struct dev *d, const struct stat *st, int for_write)
{
	struct stat fst;

	if (fstat(d->fd, &fst) != 0)
		return posix_fail(d, -errno, "%s: fstat: %s", d->o.path, strerror(errno));
	if ((fst.st_mode & S_IFMT) != (st->st_mode & S_IFMT) || fst.st_rdev != st->st_rdev)
		return posix_fail(d, -EAGAIN, "%s changed while it was being opened; try again", d->o.path);
	d->is_blockdev = S_ISBLK(fst.st_mode);
	if (!d->is_blockdev) {
		d->size = (uint64_t)fst.st_size;
	} else if (ioctl(d->fd, BLKGETSIZE64, &d->size) != 0) {
		return posix_fail(d, -errno, "%s: BLKGETSIZE64: %s", d->o.path, strerror(errno));
	}
	/* Recent kernels open a read-only block device O_RDWR and fail each
	 * write with EPERM: say so now, not at the first record. */
	if (for_write && d->is_blockdev) {
		int ro = 0;

		if (ioctl(d->fd, BLKROGET, &ro) != 0)
			return posix_fail(d, -errno, "%s: BLKROGET: %s", d->o.path, strerror(errno));
		if (ro)
			return posix_open_fail(d, for_write, EROFS);
	}
	return 0;
}

/* How a write with FUA + flush is made: pwritev2 RWF_DSYNC, or, where the
 * kernel has no pwritev2 flags, an O_DSYNC descriptor. 0 or -errno (said). */
static int posix_open_dsync(struct dev *d)
{
	struct iovec iov = { 0 };

	/* pwritev2 flags need Linux 4.7; qemu-user has no pwritev2 at all.
	 * An O_DSYNC descriptor makes the kernel do exactly the same. (The
	 * probe writes zero bytes: it touches nothing, window or not.) */
	if (pwritev2(d->fd, &iov, 1, 0, RWF_DSYNC) < 0 && (errno == ENOSYS || errno == EOPNOTSUPP)) {
		int e = errno;
		struct posix_priv *p = d->priv;

		p->dsync_fd = open(d->o.path, O_WRONLY | O_DIRECT | O_DSYNC | O_CLOEXEC);
		if (p->dsync_fd < 0)
			return posix_fail(d, -errno, "%s: pwritev2(RWF_DSYNC) is unavailable (%s) and an O_DSYNC "
					  "descriptor cannot be opened: %s", d->o.path, strerror(e), strerror(errno));
		snprintf(d->dsync_how, sizeof(d->dsync_how),
			 "pwrite on an O_DSYNC descriptor (FUA + flush; pwritev2 RWF_DSYNC unavailable: %s)",
			 strerror(e));
	}
	return 0;
}

static int posix_open(struct dev *d, int for_write)
{
	struct stat st;
	int ret;

	d->fd = -1;
	d->size = 0;
	d->is_blockdev = 0;
	d->priv = NULL;
	d->err[0] = '\0';
	if (!d->o.path || !d->o.path[0])
		return posix_fail(d, -EINVAL, "no device path given");
	if (stat(d->o.path, &st) != 0)
		return posix_open_fail(d, for_write, errno);
	ret = posix_open_checks(d, &st, for_write);
	if (ret)
		return ret;
	ret = posix_open_fd(d, &st, for_write);
	if (ret)
		return ret;
	ret = posix_open_size(d, &st, for_write);
	if (ret)
		goto err_close;
	d->wlo = 0;
	d->whi = d->size;
	d->priv = calloc(1, sizeof(struct posix_priv));
	if (!d->priv) {
		ret = posix_fail(d, -ENOMEM, "%s: out of memory", d->o.path);
		goto err_close;
	}
	((struct posix_priv *)d->priv)->dsync_fd = -1;
	snprintf(d->dsync_how, sizeof(d->dsync_how), "pwritev2 RWF_DSYNC (FUA + flush)");
	if (!d->is_blockdev)
		snprintf(d->relwr_how, sizeof(d->relwr_how), "unavailable: %s is a file, not an MMC device", d->o.path);
	if (for_write && (ret = posix_open_dsync(d))) {
		free(d->priv);
		d->priv = NULL;
		goto err_close;
	}
	return 0;

err_close:
	close(d->fd);
	d->fd = -1;
	return ret;
}

#ifdef PC_HAVE_URING
/* Completions still owed by the kernel must arrive before the buffers go. */
static void posix_ring_drain(struct posix_priv *p)
{
	struct io_uring_cqe *cqe;

	while (p->inflight) {
		int ret = io_uring_wait_cqe(&p->ring, &cqe);

		if (ret == -EINTR)
			continue;
		if (ret < 0)
			break;
		io_uring_cqe_seen(&p->ring, cqe);
		p->inflight--;
	}
	io_uring_queue_exit(&p->ring);
	p->ring_up = 0;
}
#endif

static void posix_close(struct dev *d)
{
	struct posix_priv *p = d->priv;

#ifdef PC_HAVE_URING
	if (p && p->ring_up)
		posix_ring_drain(p);
#endif
	if (p && p->dsync_fd >= 0)
		close(p->dsync_fd);
	if (p)
		mmc_relwr_close(p->mmc);
	free(p);
	d->priv = NULL;
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

static int posix_read(struct dev *d, uint64_t off, void *buf, size_t len)
{
	int ret = pc_pread_all(d->fd, buf, len, (off_t)off);

	return ret ? posix_io_fail(d, "read", off, len, ret) : 0;
}

static int posix_write(struct dev *d, uint64_t off, const void *buf, size_t len, unsigned wflags)
{
	int ret;

	if (wflags & ~DEV_W_DSYNC)
		return posix_fail(d, -EINVAL, "%s: unknown write flags 0x%x", d->o.path, wflags);
	ret = dev_write_check(d, wflags ? "dsync write" : "write", off, len);
	if (ret)
		return ret;
	if ((wflags & DEV_W_DSYNC) && ((struct posix_priv *)d->priv)->dsync_fd >= 0)
		ret = pc_pwrite_all(((struct posix_priv *)d->priv)->dsync_fd, buf, len, (off_t)off);
	else if (wflags & DEV_W_DSYNC)
		ret = pc_pwritev2_all(d->fd, buf, len, (off_t)off, RWF_DSYNC);
	else
		ret = pc_pwrite_all(d->fd, buf, len, (off_t)off);
	return ret ? posix_io_fail(d, wflags ? "dsync write" : "write", off, len, ret) : 0;
}

static int posix_relwr(struct dev *d, uint64_t off, const void *buf, size_t len, int reliable)
{
	struct posix_priv *p = d->priv;
	int ret = dev_write_check(d, reliable ? "raw reliable write" : "raw write", off, len);

	if (ret)
		return ret;
	if (!p->mmc) {
		ret = mmc_relwr_open(d->o.path, &p->mmc, d->err, sizeof(d->err));
		if (ret)
			return ret;
	}
	return mmc_relwr_write(p->mmc, off, buf, len, reliable, d->err, sizeof(d->err));
}

static int posix_flush(struct dev *d)
{
	if (fdatasync(d->fd) != 0)
		return posix_fail(d, -errno, "%s: fdatasync (cache flush) failed: %s", d->o.path, strerror(errno));
	return 0;
}

#ifdef PC_HAVE_URING
/* the kernel's values, for liburing headers older than the flags */
#ifndef IORING_SETUP_COOP_TASKRUN
#define IORING_SETUP_COOP_TASKRUN (1U << 8)
#endif
#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif

/*
 * The ring as fio sets its own up: completions are run when the agent asks
 * for them (DEFER_TASKRUN: at io_uring_enter with GETEVENTS), never by
 * interrupting it (COOP_TASKRUN: no IPI per completion while it builds the
 * next record), from its one thread (SINGLE_ISSUER: the agent has no other).
 * At 4 KiB and QD 32 on a loop device over memory this took the writer from
 * 0.68x fio to 1.04x (docs/performance.md). Kernels before 6.1 refuse the
 * flags they lack with EINVAL: then fewer, then none.
 */
static int ring_init(struct posix_priv *p, unsigned qd)
{
	static const unsigned tries[] = {
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	int ret = -EINVAL;

	for (unsigned i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		struct io_uring_params prm = { .flags = tries[i] };

		ret = io_uring_queue_init_params(qd, &p->ring, &prm);
		if (ret != -EINVAL)
			break;
	}
	return ret;
}

static int posix_aio_setup(struct dev *d, unsigned qd)
{
	struct posix_priv *p = d->priv;
	int ret;

	if (!p)
		return posix_fail(d, -EBADF, "%s: aio_setup on a closed device", d->o.path);
	if (qd == 0 || qd > 4096)
		return posix_fail(d, -EINVAL, "%s: queue depth %u out of range 1..4096", d->o.path, qd);
	if (p->ring_up)
		posix_ring_drain(p);
	ret = ring_init(p, qd);
	if (ret == -ENOSYS || ret == -EPERM)
		return posix_fail(d, -ENOSYS, "io_uring unavailable (%s): the kernel lacks io_uring or refuses it "
				  "(kernel.io_uring_disabled, seccomp); async fua cannot run on %s",
				  ret == -ENOSYS ? "ENOSYS" : "EPERM", d->o.path);
	if (ret < 0)
		return posix_fail(d, ret, "%s: io_uring_queue_init(%u): %s%s", d->o.path, qd, strerror(-ret),
				  ret == -ENOMEM ? " (kernels before 5.12 charge the ring to RLIMIT_MEMLOCK: "
				  "raise `ulimit -l`)" : "");
	p->ring_up = 1;
	p->qd = qd;
	p->inflight = 0;
	return 0;
}

/* Hand the prepared sqe for io to the kernel; it is then in flight. */
static int posix_ring_submit(struct dev *d, struct posix_priv *p, struct io_uring_sqe *sqe, struct dev_io *io,
			     const char *what)
{
	int ret;

	io_uring_sqe_set_data(sqe, io);
	io->result = 0;
	do
		ret = io_uring_submit(&p->ring);
	while (ret == -EINTR);
	if (ret < 0)
		return posix_io_fail(d, what, io->off, io->len, ret);
	if (ret == 0)
		return posix_io_fail(d, what, io->off, io->len, -EIO);
	p->inflight++;
	return 0;
}

static int posix_aio_submit(struct dev *d, struct dev_io *io)
{
	struct posix_priv *p = d->priv;
	struct io_uring_sqe *sqe;
	int ret;

	if (!p || !p->ring_up)
		return posix_fail(d, -EINVAL, "%s: aio_submit before aio_setup", d->o.path);
	if (io->wflags & ~DEV_W_DSYNC || io->len > UINT_MAX)
		return posix_fail(d, -EINVAL, "%s: bad async write (flags 0x%x, %zu bytes)", d->o.path, io->wflags,
				  io->len);
	if (p->inflight >= p->qd)
		return posix_fail(d, -EBUSY, "%s: %u writes in flight, queue depth %u: reap first", d->o.path,
				  p->inflight, p->qd);
	ret = dev_write_check(d, io->wflags ? "async dsync write" : "async write", io->off, io->len);
	if (ret)
		return ret;
	sqe = io_uring_get_sqe(&p->ring);
	if (!sqe)
		return posix_fail(d, -EBUSY, "%s: io_uring submission queue full", d->o.path);
	io_uring_prep_write(sqe, d->fd, io->buf, (unsigned)io->len, io->off);
	io->dst = NULL;
	if (io->wflags & DEV_W_DSYNC)
		sqe->rw_flags = RWF_DSYNC;
	return posix_ring_submit(d, p, sqe, io, "io_uring submit");
}

/* The queue depth a scan's reads set up when no writer did (writer.c's). */
#define POSIX_READ_QD 32

static int posix_aio_read(struct dev *d, struct dev_io *io)
{
	struct posix_priv *p = d->priv;
	struct io_uring_sqe *sqe;
	int ret;

	if (!p)
		return posix_fail(d, -EBADF, "%s: aio_read on a closed device", d->o.path);
	if (!p->ring_up && (ret = posix_aio_setup(d, POSIX_READ_QD)))
		return ret;
	if (io->len > UINT_MAX || !io->dst)
		return posix_fail(d, -EINVAL, "%s: bad async read (%zu bytes)", d->o.path, io->len);
	if (p->inflight >= p->qd)
		return posix_fail(d, -EBUSY, "%s: %u requests in flight, queue depth %u: reap first", d->o.path,
				  p->inflight, p->qd);
	sqe = io_uring_get_sqe(&p->ring);
	if (!sqe)
		return posix_fail(d, -EBUSY, "%s: io_uring submission queue full", d->o.path);
	io_uring_prep_read(sqe, d->fd, io->dst, (unsigned)io->len, io->off);
	io->buf = NULL;
	io->wflags = 0;
	return posix_ring_submit(d, p, sqe, io, "io_uring read submit");
}

static int posix_aio_result(struct dev *d, struct dev_io *io, int res)
{
	if (res >= 0 && (size_t)res != io->len)
		res = -EIO;	/* a short O_DIRECT write: the rest never reached the device */
	if (res < 0)
		posix_io_fail(d, io->dst ? "async read" : io->wflags ? "async dsync write" : "async write",
			      io->off, io->len, res);
	return res < 0 ? res : 0;
}

static int posix_aio_reap(struct dev *d, struct dev_io **done, unsigned max, unsigned min)
{
	struct posix_priv *p = d->priv;
	unsigned got = 0;

	if (!p || !p->ring_up)
		return posix_fail(d, -EINVAL, "%s: aio_reap before aio_setup", d->o.path);
	/* waiting for more than is in flight would never return */
	if (min > p->inflight)
		min = p->inflight;
	if (min > max)
		min = max;
	while (got < max && p->inflight) {
		struct io_uring_cqe *cqe;
		struct dev_io *io;
		int ret;

		if (got < min)
			ret = io_uring_wait_cqe(&p->ring, &cqe);
		else
			ret = io_uring_peek_cqe(&p->ring, &cqe);
		if (ret == -EAGAIN && got >= min)
			break;
		if (ret == -EINTR)
			continue;
		if (ret < 0) {
			posix_fail(d, ret, "%s: waiting for io_uring completions: %s", d->o.path, strerror(-ret));
			return got ? (int)got : ret;
		}
		io = io_uring_cqe_get_data(cqe);
		io->result = posix_aio_result(d, io, cqe->res);
		io_uring_cqe_seen(&p->ring, cqe);
		p->inflight--;
		done[got++] = io;
	}
	return (int)got;
}
#else
static int posix_aio_setup(struct dev *d, unsigned qd)
{
	return posix_fail(d, -ENOSYS, "io_uring unavailable (ENOSYS): this agent was built without liburing; "
			  "async fua cannot run on %s", d->o.path);
}

static int posix_aio_submit(struct dev *d, struct dev_io *io)
{
	return posix_fail(d, -ENOSYS, "%s: built without liburing", d->o.path);
}

static int posix_aio_read(struct dev *d, struct dev_io *io)
{
	return posix_fail(d, -ENOSYS, "%s: built without liburing", d->o.path);
}

static int posix_aio_reap(struct dev *d, struct dev_io **done, unsigned max, unsigned min)
{
	return posix_fail(d, -ENOSYS, "%s: built without liburing", d->o.path);
}
#endif

static void posix_identity(struct dev *d, json_object *obj)
{
	struct stat st;

	if (fstat(d->fd, &st) != 0) {
		json_object_object_add(obj, "path", json_object_new_string(d->o.path));
		json_object_object_add(obj, "error", json_object_new_string(strerror(errno)));
		return;
	}
	if (S_ISBLK(st.st_mode)) {
		blockdev_identity(d->o.path, st.st_rdev, obj);
		return;
	}
	json_object_object_add(obj, "type", json_object_new_string("file"));
	json_object_object_add(obj, "path", json_object_new_string(d->o.path));
	json_object_object_add(obj, "size", json_object_new_int64((int64_t)st.st_size));
	json_object_object_add(obj, "st_blksize", json_object_new_int64((int64_t)st.st_blksize));
}

const struct dev_ops dev_posix_ops = {
	.name = "posix",
	.caps = DEV_CAP_RESOLVE,
	.aio_name = "io_uring",
	.open = posix_open,
	.close = posix_close,
	.read = posix_read,
	.write = posix_write,
	.flush = posix_flush,
	.relwr = posix_relwr,
	.aio_setup = posix_aio_setup,
	.aio_submit = posix_aio_submit,
	.aio_read = posix_aio_read,
	.aio_reap = posix_aio_reap,
	.identity = posix_identity,
};

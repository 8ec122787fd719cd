/*
 * dev_sim.c - the "sim" device backend: the agent's view of the emulated eMMC.
 *
 * Byte offsets become LBAs of the emulated device. The asynchronous path is a
 * queue in name only: aio_submit performs the write synchronously and queues
 * its completion, so completions always come back in submission order. That
 * is a legal device (nothing promises reordering), but the sim never shows
 * the host what a reordering device would.
 */
#include "agent/dev.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "agent/audit.h"
#include "agent/blockdev.h"
#include "sim/emmc.h"

#define SIM_QD_MAX	32u

struct dev_sim {
	struct sim_emmc *e;
	struct sim_opts *dflt;		/* the defaults, when the caller gave no options */
	const struct sim_opts *o;	/* what this device was opened with */
	unsigned qd;			/* 0 until aio_setup */
	struct dev_io *done[SIM_QD_MAX];	/* completed, not yet reaped: a ring */
	unsigned first, ndone;
	/* what the device received, named as the kernel's block_rq_issue
	 * names requests: WS a write (direct I/O is sync), WFS a FUA write, FF a
	 * cache flush, N a raw MMC command (relwr) */
	struct audit_counts aud;
};

static int sim_open(struct dev *d, int for_write)
{
	struct dev_sim *s;
	struct stat st;
	int ret;

	d->fd = -1;
	d->is_blockdev = 0;
	d->err[0] = 0;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(d->err, sizeof(d->err), "sim media %s: out of memory", d->o.path);
		return -ENOMEM;
	}
	/* the media is a file: one that backs a loop device or is swap is not ours */
	if (for_write && stat(d->o.path, &st) == 0 && S_ISREG(st.st_mode)) {
		ret = blockdev_check_file_unused(d->o.path, &st, d->err, sizeof(d->err));
		if (ret) {
			free(s);
			return ret;
		}
	}
	s->o = d->o.sim;
	if (!s->o && !(s->o = s->dflt = sim_opts_new())) {
		free(s);
		snprintf(d->err, sizeof(d->err), "sim media %s: out of memory", d->o.path);
		return -ENOMEM;
	}
	ret = sim_emmc_open(d->o.path, s->o, &s->e, d->err, sizeof(d->err));
	if (ret) {
		sim_opts_free(s->dflt);
		free(s);
		return ret;
	}
	d->priv = s;
	d->size = sim_emmc_sectors(s->e) * PC_SECTOR;
	d->wlo = 0;
	d->whi = d->size;
	snprintf(d->dsync_how, sizeof(d->dsync_how), "reliable write, then FLUSH_CACHE (as the kernel does for pwritev2 RWF_DSYNC)");
	snprintf(d->relwr_how, sizeof(d->relwr_how), "sim reliable write (relwr-off: a plain cached write)");
	/* the ack-early profile is the board's agent's fault, not the card's (sim/emmc.h) */
	d->ack_early = (sim_opts_profile(s->o) & SIM_P_ACK_EARLY) != 0;
	return 0;
}

static void sim_close(struct dev *d)
{
	struct dev_sim *s = d->priv;

	if (!s)
		return;
	sim_emmc_close(s->e);
	sim_opts_free(s->dflt);
	free(s);
	d->priv = NULL;
}

/* Byte range to sectors; fills d->err on a range the caller should never pass. */
static int sim_range(struct dev *d, const char *what, uint64_t off, size_t len, uint32_t *nsect)
{
	if (off % PC_SECTOR || len % PC_SECTOR || len == 0 || len / PC_SECTOR > UINT32_MAX ||
	    off > d->size || len > d->size - off) {
		snprintf(d->err, sizeof(d->err), "sim media %s: %s of %zu bytes at %" PRIu64
			 " is unaligned or beyond the %" PRIu64 "-byte device", d->o.path, what, len, off,
			 d->size);
		return -EINVAL;
	}
	*nsect = (uint32_t)(len / PC_SECTOR);
	return 0;
}

/* Every write of the sim goes through here: the range, then the write window. */
static int sim_write_range(struct dev *d, const char *what, uint64_t off, size_t len, uint32_t *nsect)
{
	int ret = dev_write_check(d, what, off, len);

	return ret ? ret : sim_range(d, what, off, len, nsect);
}

static int sim_fail(struct dev *d, const char *what, uint64_t off, int ret)
{
	snprintf(d->err, sizeof(d->err), "sim media %s: %s at %" PRIu64 " failed: %s", d->o.path, what,
		 off, strerror(-ret));
	return ret;
}

static int sim_read(struct dev *d, uint64_t off, void *buf, size_t len)
{
	struct dev_sim *s = d->priv;
	uint32_t n;
	int ret = sim_range(d, "read", off, len, &n);

	if (ret)
		return ret;
	ret = sim_emmc_read(s->e, off / PC_SECTOR, buf, n);
	return ret ? sim_fail(d, "read", off, ret) : 0;
}

/*
 * A write as the block layer sends it: a FUA write (DEV_W_DSYNC) goes to the
 * card as one, unless the queue has no FUA (profile no-fua): then blk-flush
 * emulates it, a plain write followed by a cache flush, and the write
 * completes when the flush has.
 */
static int sim_block_write(struct dev *d, struct dev_sim *s, uint64_t off, const void *buf, uint32_t n,
			   unsigned wflags)
{
	int ret;

	if (!(wflags & DEV_W_DSYNC) || !(sim_opts_profile(s->o) & SIM_P_NO_FUA)) {
		audit_count(&s->aud, (wflags & DEV_W_DSYNC) ? "WFS" : "WS", n);
		return sim_emmc_write(s->e, off / PC_SECTOR, buf, n, (wflags & DEV_W_DSYNC) ? SIM_W_FUA : 0);
	}
	audit_count(&s->aud, "WS", n);
	ret = sim_emmc_write(s->e, off / PC_SECTOR, buf, n, 0);
	if (ret)
		return ret;
	audit_count(&s->aud, "FF", 0);
	return sim_emmc_flush(s->e);
}

static int sim_write(struct dev *d, uint64_t off, const void *buf, size_t len, unsigned wflags)
{
	struct dev_sim *s = d->priv;
	uint32_t n;
	int ret = sim_write_range(d, "write", off, len, &n);

	if (ret)
		return ret;
	ret = sim_block_write(d, s, off, buf, n, wflags);
	if (ret)
		return sim_fail(d, "write", off, ret);
	/* A synchronous RWF_DSYNC write on a block device is a FUA write that the
	 * kernel follows with a cache flush (generic_write_sync): so is this one. */
	if (wflags & DEV_W_DSYNC) {
		audit_count(&s->aud, "FF", 0);
		ret = sim_emmc_flush(s->e);
		if (ret)
			return sim_fail(d, "flush after write", off, ret);
	}
	return 0;
}

/* The sim models eMMC: a reliable write is its SIM_W_FUA path (atomic per
 * sector, torn between sectors by tearing-relwr); the control a plain write. */
static int sim_relwr(struct dev *d, uint64_t off, const void *buf, size_t len, int reliable)
{
	struct dev_sim *s = d->priv;
	uint32_t n;
	int ret = sim_write_range(d, "relwr", off, len, &n);

	if (ret)
		return ret;
	audit_count(&s->aud, "N", n);
	ret = sim_emmc_write(s->e, off / PC_SECTOR, buf, n, reliable ? SIM_W_FUA : 0);
	return ret ? sim_fail(d, "relwr", off, ret) : 0;
}

static int sim_host_reset(struct dev *d)
{
	struct dev_sim *s = d->priv;

	return sim_emmc_host_reset(s->e);
}

/* The agent's ACK of [first, first + n), in the kept write log before the ACK is sent. */
static void sim_ack_mark(struct dev *d, uint64_t first, uint64_t n)
{
	struct dev_sim *s = d->priv;
	char text[64];

	snprintf(text, sizeof(text), PC_ACK_MARK " %" PRIu64 " %" PRIu64, first, n);
	sim_emmc_mark(s->e, text);
}

static int sim_flush(struct dev *d)
{
	struct dev_sim *s = d->priv;
	int ret;

	audit_count(&s->aud, "FF", 0);
	ret = sim_emmc_flush(s->e);
	if (ret)
		snprintf(d->err, sizeof(d->err), "sim media %s: flush failed: %s", d->o.path, strerror(-ret));
	return ret;
}

static int sim_aio_setup(struct dev *d, unsigned qd)
{
	struct dev_sim *s = d->priv;

	if (qd < 1 || qd > SIM_QD_MAX) {
		snprintf(d->err, sizeof(d->err), "sim media %s: queue depth %u is outside 1..%u", d->o.path,
			 qd, SIM_QD_MAX);
		return -EINVAL;
	}
	s->qd = qd;
	s->first = s->ndone = 0;
	return 0;
}

static int sim_aio_submit(struct dev *d, struct dev_io *io)
{
	struct dev_sim *s = d->priv;
	uint32_t n;
	int ret;

	if (!s->qd) {
		snprintf(d->err, sizeof(d->err), "sim media %s: aio_submit before aio_setup", d->o.path);
		return -EINVAL;
	}
	if (s->ndone >= s->qd) {
		snprintf(d->err, sizeof(d->err), "sim media %s: %u writes in flight already (queue depth %u); "
			 "reap first", d->o.path, s->ndone, s->qd);
		return -EBUSY;
	}
	ret = sim_write_range(d, "async write", io->off, io->len, &n);
	if (ret)
		return ret;
	/* like io_uring, a failed write is reported by its completion */
	io->result = sim_block_write(d, s, io->off, io->buf, n, io->wflags);
	if (io->result)
		sim_fail(d, "write", io->off, io->result);
	s->done[(s->first + s->ndone) % SIM_QD_MAX] = io;
	s->ndone++;
	return 0;
}

static struct audit_counts *sim_audit(struct dev *d)
{
	struct dev_sim *s = d->priv;

	return s ? &s->aud : NULL;
}

/* Every submitted write has completed already: min can always be met or is moot. */
static int sim_aio_reap(struct dev *d, struct dev_io **done, unsigned max, unsigned min)
{
	struct dev_sim *s = d->priv;
	unsigned n = 0;

	while (n < max && s->ndone) {
		done[n++] = s->done[s->first];
		s->first = (s->first + 1) % SIM_QD_MAX;
		s->ndone--;
	}
	return (int)n;
}

/* CRC7 of an eMMC CID (polynomial x^7 + x^3 + 1), as the card computes it. */
static uint8_t sim_crc7(const uint8_t *p, size_t len)
{
	uint8_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		for (int b = 7; b >= 0; b--) {
			uint8_t in = (uint8_t)(((p[i] >> b) & 1) ^ ((crc >> 6) & 1));

			crc = (uint8_t)((crc << 1) & 0x7f);
			if (in)
				crc ^= 0x09;
		}
	}
	return crc;
}

/*
 * The PSN a media file first got from its device and inode, kept beside it
 * (<media>.id, "psn 0x%08x"): a device's serial is burned in when it is made,
 * so a media file copied with its folder (cp -a of a results folder, then a
 * resume) is still the same device. Without the file (a media made before it
 * existed, or a new one) the PSN comes from the device and inode as it always
 * did, and is kept. A file that does not hold one PSN exactly, or is no
 * regular file (a FIFO would hold the boot at its open), is not taken:
 * the stat's PSN is used, and the file written anew. Written to a temporary
 * file and renamed, so a SIGKILL (the sim's power cut) never leaves half of it.
 */
static uint32_t sim_psn(const char *media, const struct stat *st)
{
	uint64_t h = pc_mix64((uint64_t)st->st_dev ^ pc_mix64((uint64_t)st->st_ino));
	uint32_t psn = (uint32_t)(h ^ (h >> 32)), got;
	char path[4096], tmp[4096 + 8], buf[32], end;
	FILE *f;
	int fd, n;

	if ((size_t)snprintf(path, sizeof(path), "%s.id", media) >= sizeof(path))
		return psn;
	/* a regular file alone: a FIFO or a device put there must not hold the boot */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)) >= 0) {
		struct stat ist;

		n = fstat(fd, &ist) == 0 && S_ISREG(ist.st_mode) ? (int)read(fd, buf, sizeof(buf) - 1) : -1;
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		if (n == 15 && strspn(buf + 6, "0123456789abcdef") == 8 &&
		    sscanf(buf, "psn 0x%8" SCNx32 "%c", &got, &end) == 2 && end == '\n')
			return got;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((f = fopen(tmp, "we"))) {
		int ok = fprintf(f, "psn 0x%08" PRIx32 "\n", psn) == 15;

		if (fclose(f) != 0 || !ok || rename(tmp, path) != 0)
			unlink(tmp);
	}
	return psn;
}

/*
 * A 128-bit CID: MID 0xfe, the 16-bit OID "PC" sysfs shows as oemid, PNM
 * "PCSIM ", PRV 1.0, a PSN of the media's own (sim_psn: stable across
 * power-ons and copies of the same media, different for two sim boards), MDT
 * and the CRC7 a card would compute, so CID parsers accept it.
 */
static void sim_cid(uint32_t psn, char hex[33])
{
	uint8_t cid[16] = { 0xfe, 0x50, 0x43, 'P', 'C', 'S', 'I', 'M', ' ', 0x10 };

	cid[10] = (uint8_t)(psn >> 24);
	cid[11] = (uint8_t)(psn >> 16);
	cid[12] = (uint8_t)(psn >> 8);
	cid[13] = (uint8_t)psn;
	cid[14] = 0x1a;	/* MDT: month 1, year offset 10 */
	cid[15] = (uint8_t)(sim_crc7(cid, 15) << 1 | 1);
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", cid[i]);
}

static void sim_identity(struct dev *d, json_object *obj)
{
	const struct dev_sim *s = d->priv;
	char pname[256], hex[33], serial[16];
	json_object *q = json_object_new_object(), *f = json_object_new_object();
	struct sim_opts *dflt = NULL;
	const struct sim_opts *o = s ? s->o : d->o.sim;
	struct stat st;
	uint32_t psn;
	unsigned prof;

	if (!o && !(o = dflt = sim_opts_new())) {
		json_object_put(q);
		json_object_put(f);
		return;
	}
	prof = sim_opts_profile(o);
	json_object_object_add(obj, "type", json_object_new_string("sim-emmc"));
	json_object_object_add(obj, "name", json_object_new_string("PCSIM"));
	json_object_object_add(obj, "manfid", json_object_new_string("0x0000fe"));
	json_object_object_add(obj, "oemid", json_object_new_string("0x5043"));
	if (stat(d->o.path, &st) == 0) {
		psn = sim_psn(d->o.path, &st);
		sim_cid(psn, hex);
		snprintf(serial, sizeof(serial), "0x%08" PRIx32, psn);
		json_object_object_add(obj, "cid", json_object_new_string(hex));
		json_object_object_add(obj, "serial", json_object_new_string(serial));
	}
	json_object_object_add(obj, "profile", json_object_new_string(sim_profile_name(prof, pname, sizeof(pname))));
	json_object_object_add(obj, "program_us", json_object_new_int64(sim_opts_program_us(o)));
	json_object_object_add(obj, "cache_sectors", json_object_new_int64(sim_opts_cache_sectors(o)));
	/* the truth log counts power sessions: this lets the host map them to cycles */
	if (s)
		json_object_object_add(obj, "session", json_object_new_int64(sim_emmc_session(s->e)));
	if (s && (prof & SIM_P_WEAR)) {
		/* the wear fields of EXT_CSD, as blockdev_ext_csd_json names them */
		json_object *x = json_object_new_object();
		int a, b, eol;

		sim_emmc_wear(s->e, &a, &b, &eol);
		json_object_object_add(x, "available", json_object_new_boolean(1));
		json_object_object_add(x, "source", json_object_new_string("sim"));
		json_object_object_add(x, "pre_eol_info", json_object_new_int(eol));
		json_object_object_add(x, "life_time_a", json_object_new_int(a));
		json_object_object_add(x, "life_time_b", json_object_new_int(b));
		json_object_object_add(obj, "ext_csd", x);
	}
	json_object_object_add(f, "rate", pc_json_double(sim_opts_rate(o)));
	json_object_object_add(f, "seed", json_object_new_uint64(sim_opts_seed(o)));
	json_object_object_add(obj, "faults", f);
	json_object_object_add(q, "fua", json_object_new_int((prof & SIM_P_NO_FUA) ? 0 : 1));
	json_object_object_add(q, "write_cache", json_object_new_string(
		(prof & SIM_P_NO_CACHE) ? "write through" : "write back"));
	json_object_object_add(obj, "queue", q);
	sim_opts_free(dflt);
}

int dev_sim_opt(struct sim_opts **so, const char *name, const char *val, char *err, size_t errlen)
{
	if (!*so && !(*so = sim_opts_new()))
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	return sim_opts_set(*so, name, val, err, errlen);
}

void dev_sim_opts_free(struct sim_opts *so)
{
	sim_opts_free(so);
}

const struct dev_ops dev_sim_ops = {
	.name = "sim",
	.prefix = "sim:",
	.caps = DEV_CAP_REGION_AT_0 | DEV_CAP_AIO_INLINE,
	.aio_name = "sim",
	.create = sim_emmc_create,
	.open = sim_open,
	.close = sim_close,
	.read = sim_read,
	.write = sim_write,
	.flush = sim_flush,
	.audit = sim_audit,
	.relwr = sim_relwr,
	.host_reset = sim_host_reset,
	.ack_mark = sim_ack_mark,
	.aio_setup = sim_aio_setup,
	.aio_submit = sim_aio_submit,
	.aio_reap = sim_aio_reap,
	.identity = sim_identity,
};

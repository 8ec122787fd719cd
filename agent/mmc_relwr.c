/*
 * mmc_relwr.c - raw eMMC reliable writes (see mmc_relwr.h).
 */
#include "agent/mmc_relwr.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#if __has_include(<linux/mmc/ioctl.h>)
#include <linux/mmc/ioctl.h>
#define PC_HAVE_MMC_IOCTL 1
#endif

#include "common/util.h"
#include "agent/blockdev.h"

/* Response and command types as the kernel spells them (include/linux/mmc/core.h,
 * not exported to user space). */
#define RSP_PRESENT	(1 << 0)
#define RSP_136		(1 << 1)
#define RSP_CRC		(1 << 2)
#define RSP_BUSY	(1 << 3)
#define RSP_OPCODE	(1 << 4)
#define CMD_AC		(0 << 5)
#define CMD_ADTC	(1 << 5)
#define RSP_SPI_S1	(1 << 7)
#define RSP_SPI_R1	(RSP_SPI_S1)
#define RSP_R1		(RSP_PRESENT | RSP_CRC | RSP_OPCODE)

int mmc_relwr_encode(struct mmc_relwr_cmd cmds[2], uint64_t block, uint32_t nblocks, const void *buf,
		     int reliable, int byte_addressed)
{
	uint64_t addr = byte_addressed ? block * 512 : block;

	if (nblocks < 1 || nblocks > 0xffff || addr > UINT32_MAX)
		return -EINVAL;
	memset(cmds, 0, 2 * sizeof(*cmds));
	cmds[0].opcode = MMC_RELWR_SET_BLOCK_COUNT;
	cmds[0].arg = nblocks | (reliable ? MMC_RELWR_RELIABLE : 0);
	cmds[0].flags = RSP_SPI_R1 | RSP_R1 | CMD_AC;
	cmds[0].write_flag = 1;
	cmds[1].opcode = MMC_RELWR_WRITE_MULTIPLE;
	cmds[1].arg = (uint32_t)addr;
	cmds[1].flags = RSP_SPI_R1 | RSP_R1 | CMD_ADTC;
	cmds[1].write_flag = 1;
	cmds[1].blksz = 512;
	cmds[1].blocks = nblocks;
	cmds[1].data = buf;
	return 0;
}

/* R1 card status bits (JEDEC eMMC 5.1, 6.13), as the kernel's mmc.h names them */
#define R1_OUT_OF_RANGE		(1u << 31)
#define R1_ADDRESS_ERROR	(1u << 30)
#define R1_BLOCK_LEN_ERROR	(1u << 29)
#define R1_WP_VIOLATION		(1u << 26)
#define R1_ILLEGAL_COMMAND	(1u << 22)
#define R1_CARD_ECC_FAILED	(1u << 21)
#define R1_CC_ERROR		(1u << 20)
#define R1_ERROR		(1u << 19)
#define R1_WRITE_ERRORS	(R1_OUT_OF_RANGE | R1_ADDRESS_ERROR | R1_BLOCK_LEN_ERROR | R1_WP_VIOLATION | \
			 R1_CARD_ECC_FAILED | R1_CC_ERROR | R1_ERROR)

int mmc_relwr_status(uint32_t r1_cmd23, uint32_t r1_cmd25, int reliable, char *err, size_t errlen)
{
	if (r1_cmd23 & R1_ILLEGAL_COMMAND)
		return pc_fail(err, errlen, -EOPNOTSUPP, "relwr refused by the card: CMD23%s answered ILLEGAL_COMMAND (R1 0x%08x): the "
			 "card takes no %s", reliable ? " with the reliable-write bit" : "", r1_cmd23,
			 reliable ? "reliable write" : "block count");
	if ((r1_cmd23 | r1_cmd25) & (R1_WRITE_ERRORS | R1_ILLEGAL_COMMAND))
		return pc_fail(err, errlen, -EIO, "the card reported the write failed: R1 0x%08x after CMD23, 0x%08x after CMD25",
			 r1_cmd23, r1_cmd25);
	return 0;
}

struct mmc_relwr {
	int fd;			/* the whole card */
	uint64_t start;		/* the partition's first block on the card */
	uint64_t nblocks;	/* the partition's (or card's) size: no raw write crosses it */
	int byte_addressed;
	char card[64];
};

int mmc_relwr_open(const char *path, struct mmc_relwr **out, char *err, size_t errlen)
{
	struct mmc_relwr *m;
	struct stat st;
	char dir[512], file[600], text[64], type[32] = "";
	uint64_t sectors = 0;
	dev_t disk;
	int part;

	*out = NULL;
	if (stat(path, &st) < 0)
		return pc_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISBLK(st.st_mode) || blockdev_whole_disk(st.st_rdev, dir, sizeof(dir), &disk))
		return pc_fail(err, errlen, -ENOTTY, "%s is not an MMC device: relwr writes through MMC_IOC_MULTI_CMD to an "
			 "eMMC (/dev/mmcblkN or a partition of one)", path);
	snprintf(file, sizeof(file), "%s/device/type", dir);
	pc_read_text(file, type, sizeof(type));
	if (strcmp(type, "MMC") && strcmp(type, "SD"))
		return pc_fail(err, errlen, -ENOTTY, "%s is not an MMC device (sysfs device/type '%s'): relwr needs an eMMC "
			 "behind the mmc_block driver", path, type[0] ? type : "none");
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->fd = -1;
	part = blockdev_is_partition(st.st_rdev);
	if (part == 1) {
		char pdir[512];
		blockdev_sysfs_dir(st.st_rdev, pdir, sizeof(pdir));
		snprintf(file, sizeof(file), "%s/start", pdir);
		if (pc_read_text(file, text, sizeof(text)) || pc_parse_u64(text, 0, &m->start)) {
			free(m);
			return pc_fail(err, errlen, -EIO, "%s: cannot read the partition's start from %s", path, file);
		}
		snprintf(file, sizeof(file), "%s/size", pdir);
	} else {
		snprintf(file, sizeof(file), "%s/size", dir);
	}
	/* a raw write addresses the whole card: the partition's end is its bound */
	if (pc_read_text(file, text, sizeof(text)) || pc_parse_u64(text, 0, &m->nblocks) || !m->nblocks) {
		free(m);
		return pc_fail(err, errlen, -EIO, "%s: cannot read the device's size from %s", path, file);
	}
	snprintf(file, sizeof(file), "%s/size", dir);
	if (!pc_read_text(file, text, sizeof(text)))
		pc_parse_u64(text, 0, &sectors);
	/* standard-capacity cards (2 GB and less) take byte addresses */
	m->byte_addressed = sectors && sectors <= (2ull << 30) / 512;
	snprintf(m->card, sizeof(m->card), "/dev/%s", strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir);
	m->fd = open(m->card, O_RDWR | O_CLOEXEC);
	if (m->fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: cannot open the whole card %s for raw writes: %s", path, m->card,
			 strerror(e));
		free(m);
		return -e;
	}
	(void)disk;
	*out = m;
	return 0;
}

void mmc_relwr_close(struct mmc_relwr *m)
{
	if (!m)
		return;
	if (m->fd >= 0)
		close(m->fd);
	free(m);
}

int mmc_relwr_write(struct mmc_relwr *m, uint64_t off, const void *buf, size_t len, int reliable,
		    char *err, size_t errlen)
{
#ifdef PC_HAVE_MMC_IOCTL
	struct mmc_relwr_cmd c[2];
	struct {
		struct mmc_ioc_multi_cmd h;
		struct mmc_ioc_cmd cmds[2];
	} mc;
	int ret;

	if (off % 512 || len % 512 || off / 512 > m->nblocks || len / 512 > m->nblocks - off / 512)
		return pc_fail(err, errlen, -ERANGE, "%s: refused a raw write of %zu bytes at offset %" PRIu64 ": past the end "
			 "of the %" PRIu64 "-block device it was opened for", m->card, len, off, m->nblocks);
	if (mmc_relwr_encode(c, m->start + off / 512, (uint32_t)(len / 512), buf, reliable, m->byte_addressed))
		return pc_fail(err, errlen, -EINVAL, "%s: cannot encode a raw write of %zu bytes at %" PRIu64, m->card, len, off);
	memset(&mc, 0, sizeof(mc));
	mc.h.num_of_cmds = 2;
	for (int i = 0; i < 2; i++) {
		mc.cmds[i].write_flag = c[i].write_flag;
		mc.cmds[i].opcode = c[i].opcode;
		mc.cmds[i].arg = c[i].arg;
		mc.cmds[i].flags = c[i].flags;
		mc.cmds[i].blksz = c[i].blksz;
		mc.cmds[i].blocks = c[i].blocks;
		mmc_ioc_cmd_set_data(mc.cmds[i], c[i].data);
	}
	if (ioctl(m->fd, MMC_IOC_MULTI_CMD, &mc) < 0) {
		ret = -errno;
		return pc_fail(err, errlen, ret, "%s: MMC_IOC_MULTI_CMD (CMD23%s + CMD25 at block %" PRIu64 "): %s%s", m->card,
			 reliable ? " reliable" : "", m->start + off / 512, strerror(-ret),
			 ret == -EPERM || ret == -EACCES ? " (needs CAP_SYS_RAWIO)" : "");
	}
	ret = mmc_relwr_status(mc.cmds[0].response[0], mc.cmds[1].response[0], reliable, err, errlen);
	if (ret) {
		char why[256];

		pc_strlcpy(why, err, sizeof(why));
		return pc_fail(err, errlen, ret, "%s: block %" PRIu64 ": %s", m->card, m->start + off / 512, why);
	}
	return 0;
#else
	return pc_fail(err, errlen, -ENOTSUP, "built without linux/mmc/ioctl.h: no raw MMC writes");
#endif
}

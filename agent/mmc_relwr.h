/*
 * mmc_relwr.h - eMMC reliable write through MMC_IOC_MULTI_CMD, bypassing the
 * block layer: CMD23 (SET_BLOCK_COUNT) with bit 31 set (reliable write), then
 * CMD25 (WRITE_MULTIPLE_BLOCK). The control variant sends CMD23 without bit
 * 31: a plain multi-block write the card may cache.
 */
#ifndef PC_AGENT_MMC_RELWR_H
#define PC_AGENT_MMC_RELWR_H

#include <stddef.h>
#include <stdint.h>

#define MMC_RELWR_SET_BLOCK_COUNT	23
#define MMC_RELWR_WRITE_MULTIPLE	25
#define MMC_RELWR_RELIABLE		(1u << 31)

/* One encoded command, as struct mmc_ioc_cmd wants it (kept separate so the
 * encoding is testable without linux/mmc/ioctl.h). */
struct mmc_relwr_cmd {
	int write_flag;
	uint32_t opcode;
	uint32_t arg;
	unsigned int flags;
	unsigned int blksz;
	unsigned int blocks;
	const void *data;
};

/*
 * Encode the two commands for writing nblocks 512-byte blocks of buf at card
 * block `block` (the whole card's, not a partition's). byte_addressed cards
 * (standard capacity, 2 GB and less) take a byte address in CMD25.
 * Returns 0, or -EINVAL for a count CMD23 cannot carry (1..65535).
 */
int mmc_relwr_encode(struct mmc_relwr_cmd cmds[2], uint64_t block, uint32_t nblocks, const void *buf,
		     int reliable, int byte_addressed);

struct mmc_relwr;

/*
 * Open the whole card behind `path` (a partition or the card itself) for
 * raw writes: -ENOTTY (err: "not an MMC device ...") for anything that is not
 * an mmcblk device. *out is freed with mmc_relwr_close() (accepts NULL).
 */
int mmc_relwr_open(const char *path, struct mmc_relwr **out, char *err, size_t errlen);
void mmc_relwr_close(struct mmc_relwr *m);

/*
 * The cards' answers to a write's two commands (R1 card status; the kernel
 * returns them to user space but does not look at them): 0; -EOPNOTSUPP
 * when the card refused the reliable write itself (ILLEGAL_COMMAND in
 * CMD23's answer: a card without reliable writes; the agent cannot run relwr
 * there, the device lost nothing); -EIO when the card reported the write
 * failed (an error bit in either answer: address, write protection, ECC,
 * card or generic error). err says which bits.
 */
int mmc_relwr_status(uint32_t r1_cmd23, uint32_t r1_cmd25, int reliable, char *err, size_t errlen);

/* Write len bytes at byte offset off of the device named at open (partition
 * offsets are translated to the card). 0 or -errno with err set; the card's
 * answers as mmc_relwr_status() reads them. */
int mmc_relwr_write(struct mmc_relwr *m, uint64_t off, const void *buf, size_t len, int reliable,
		    char *err, size_t errlen);

#endif

/*
 * blockdev.h - block devices: region discovery, safety checks, identity.
 *
 * Discovery turns "PARTLABEL=x" (and PARTUUID=, LABEL=, UUID=) into a device
 * path through libblkid. The safety checks are what stands between a typo in
 * a campaign file and a wiped root filesystem: the posix backend refuses a
 * mounted device, an active swap device and a whole disk before it opens
 * anything, and a file that backs a loop device or is a swap file before it
 * opens it for writing; prepare also refuses a target on which libblkid
 * finds a filesystem, RAID member, swap area or partition table. Identity reads sysfs (and EXT_CSD for eMMC) so every verdict says
 * which part, firmware and queue settings produced it.
 *
 * Functions return 0 or -errno; where they take err/errlen, err names the
 * device and what to do. Nothing here keeps state between calls.
 */
#ifndef PC_AGENT_BLOCKDEV_H
#define PC_AGENT_BLOCKDEV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <json-c/json.h>

/*
 * Resolve a device spec: "PARTLABEL=x", "PARTUUID=x", "LABEL=x", "UUID=x"
 * through libblkid (udev links when present, else probing every device the
 * kernel lists); anything else is a path and is copied unchanged. -ENOENT
 * when no device carries the tag, -ENOTSUP when built without libblkid.
 */
int blockdev_resolve(const char *spec, char *path, size_t pathlen, char *err, size_t errlen);

/* Canonical sysfs directory of a block device (realpath of /sys/dev/block/M:m). */
int blockdev_sysfs_dir(dev_t dev, char *dir, size_t len);

/* 1 for a partition, 0 for a whole disk, -errno when sysfs does not know dev. */
int blockdev_is_partition(dev_t dev);

/*
 * The whole disk holding dev (dev itself for a whole disk): its sysfs
 * directory into dir and its device number into *disk (either may be NULL).
 */
int blockdev_whole_disk(dev_t dev, char *dir, size_t len, dev_t *disk);

/*
 * dev followed, for a whole disk, by each of its partitions: the set of
 * devices whose use makes writing to dev unsafe. Stores up to max numbers
 * into devs and returns how many, or -errno.
 */
int blockdev_family(dev_t dev, dev_t *devs, size_t max);

/* One mount of a mountinfo file (proc(5)), its fields unescaped (\040 is a
 * blank): pointers into the reader's line, valid during the callback only;
 * fstype and src NULL when the line has none. */
struct blockdev_mount {
	dev_t dev;
	const char *mnt;
	const char *fstype;
	const char *src;
};

/*
 * The one reader of /proc/self/mountinfo (and of crafted files in that
 * format): fn is called for each mount until it returns nonzero, which is
 * then returned. 0 at the end, -errno when the file cannot be read.
 */
int blockdev_mounts(const char *mountinfo, int (*fn)(const struct blockdev_mount *m, void *arg), void *arg);

/*
 * Refuse when any of devs[0..n) is mounted according to mountinfo, a file in
 * /proc/self/mountinfo format (tests pass a crafted one). name is the device
 * as the user gave it. 0 when none is mounted, -EBUSY with err saying where
 * it is mounted, -errno when the file cannot be read.
 */
int blockdev_check_mounted(const char *mountinfo, const char *name, const dev_t *devs, size_t n,
			   char *err, size_t errlen);

/* Same for active swap areas listed in swaps (/proc/swaps format). */
int blockdev_check_swap(const char *swaps, const char *name, const dev_t *devs, size_t n,
			char *err, size_t errlen);

/*
 * Every refusal for block device dev opened as path: mounted (itself or, for
 * a whole disk, a partition), active swap, whole disk unless
 * allow_whole_disk. 0 when it is safe to use, -EBUSY / -EISDIR with err set.
 */
int blockdev_check_safe(const char *path, dev_t dev, int allow_whole_disk, char *err, size_t errlen);

/*
 * Refuse a regular file that something else uses: the backing file of an
 * attached loop device (named with where it, or a partition of it, is
 * mounted; an attached loop that is not mounted is in use all the same:
 * writes under it change what it shows), or an active swap file. st is the
 * file's stat. 0, or -EBUSY with err naming the file, the loop device, the
 * mount and what to do.
 */
int blockdev_check_file_unused(const char *path, const struct stat *st, char *err, size_t errlen);

/*
 * What libblkid finds in [off, off + len) of path: a filesystem, a RAID or
 * LVM member, a swap area, an encrypted volume, a partition table (our own
 * superblock is not among what it knows). 0 when nothing, 1 with what
 * describing it ("an ext4 filesystem (LABEL=data)"), -errno with err when it
 * cannot tell (a probe error; -ENOTSUP when built without libblkid).
 */
int blockdev_probe_foreign(const char *path, uint64_t off, uint64_t len, char *what, size_t whatlen,
			   char *err, size_t errlen);

/* EXT_CSD reliability and cache fields (JEDEC JESD84 byte offsets). */
#define BLOCKDEV_EXT_CSD_LEN	512

struct blockdev_ext_csd {
	uint8_t cache_ctrl;	/* [33]  bit 0: the cache is on */
	uint8_t wr_rel_param;	/* [166] bit 0 HS_CTRL_REL, bit 2 EN_REL_WR */
	uint8_t wr_rel_set;	/* [167] per-partition reliable write setting */
	uint8_t rev;		/* [192] EXT_CSD_REV */
	uint8_t rel_wr_sec_c;	/* [222] reliable write sector count */
	uint32_t cache_size;	/* [249..252] little-endian, raw JEDEC units */
	uint8_t fw_version[8];	/* [254..261] FIRMWARE_VERSION, as the card stores it */
	uint8_t pre_eol;	/* [267] PRE_EOL_INFO: 1 normal, 2 warning (80% of reserved blocks), 3 urgent */
	uint8_t life_a, life_b;	/* [268], [269] DEVICE_LIFE_TIME_EST_TYP_A/B: 1 = 0-10% used ... 11 = exceeded */
};

/* Pure: pick the fields out of a raw EXT_CSD. -EINVAL when len < 512. */
int blockdev_ext_csd_parse(const uint8_t *raw, size_t len, struct blockdev_ext_csd *out);

/* Pure: debugfs ext_csd text (1024 hex digits) to 512 bytes. -EINVAL if malformed. */
int blockdev_ext_csd_from_hex(const char *text, uint8_t *raw, size_t len);

/* The parsed fields as a new JSON object with "source"; the caller owns it. */
json_object *blockdev_ext_csd_json(const struct blockdev_ext_csd *x, const char *source);

/*
 * Read EXT_CSD with CMD8 through MMC_IOC_CMD on the whole mmcblk device
 * (needs CAP_SYS_RAWIO). raw must hold 512 bytes.
 */
int blockdev_ext_csd_ioctl(const char *mmcblk, uint8_t *raw, char *err, size_t errlen);

/*
 * Identity facts of block device dev (opened as path) added to obj: type,
 * disk, partition, size, block sizes, model/vendor/serial, queue fua and
 * write_cache, and for eMMC/SD the card registers and EXT_CSD.
 */
void blockdev_identity(const char *path, dev_t dev, json_object *obj);

#endif

/*
 * blockdev_int.h - what blockdev.c (discovery, refusals) and blockdev_id.c
 * (identity, EXT_CSD) share; private to them.
 */
#ifndef PC_AGENT_BLOCKDEV_INT_H
#define PC_AGENT_BLOCKDEV_INT_H

#include <stddef.h>

#ifdef PC_HAVE_BLKID
#include <blkid/blkid.h>
#endif

#if __has_include(<linux/mmc/ioctl.h>)
#include <linux/mmc/ioctl.h>
#define PC_HAVE_MMC_IOCTL 1
#endif

#define SYSFS_DEV_BLOCK	"/sys/dev/block"
#define SYSFS_BLOCK	"/sys/block"
#define SYSFS_BLOCK_MAX	65536	/* entries of /sys/block we look at */
#define MOUNTINFO	"/proc/self/mountinfo"
#define SWAPS		"/proc/swaps"
#define DEBUGFS		"/sys/kernel/debug"
#define FAMILY_MAX	256	/* partitions of one disk we check; GPT allows 128 */

/* A message for the caller's buffer; a long path may cut it short. */
__attribute__((format(printf, 3, 4)))
void bd_errf(char *err, size_t errlen, const char *fmt, ...);
/* dir/name into out: 0, or -ENAMETOOLONG. */
int bd_path_join(char *out, size_t len, const char *dir, const char *name);
/* A sysfs attribute dir/name into buf, trailing blanks dropped: 0 or -errno. */
int bd_sysfs_read(const char *dir, const char *name, char *buf, size_t len);

#endif

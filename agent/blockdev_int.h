/*
 * blockdev_int.h - what blockdev.c (discovery, refusals) and blockdev_id.c
 * (identity, EXT_CSD) share; private to them.
 */
#ifndef PC_AGENT_BLOCKDEV_INT_H
#define PC_AGENT_BLOCKDEV_INT_H

#include <stddef.h>

/* A message for the caller's buffer; a long path may cut it short. */
__attribute__((format(printf, 3, 4)))
void bd_errf(char *err, size_t errlen, const char *fmt, ...);
/* dir/name into out: 0, or -ENAMETOOLONG. */
int bd_path_join(char *out, size_t len, const char *dir, const char *name);
/* A sysfs attribute dir/name into buf, trailing blanks dropped: 0 or -errno. */
int bd_sysfs_read(const char *dir, const char *name, char *buf, size_t len);

#endif

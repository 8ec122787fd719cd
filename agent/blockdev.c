/*
 * blockdev.c - block devices: region discovery through libblkid and the
 * mount/swap/whole-disk refusals; identity from sysfs and EXT_CSD is
 * blockdev_id.c.
 *
 * sysfs is the source of truth for device relations: /sys/dev/block/M:m is
 * a link to the device's directory, a partition's directory holds a
 * "partition" file and sits inside its disk's directory.
 */
#include "agent/blockdev.h"
#include "agent/blockdev_int.h"

#include <ctype.h>
#include <dirent.h>
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
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/loop.h>

#include "common/util.h"

/* A message for the caller's buffer; a long path may cut it short. */
void bd_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pc_vfail(err, errlen, 0, fmt, ap);
	va_end(ap);
}

int bd_path_join(char *out, size_t len, const char *dir, const char *name)
{
	int n = snprintf(out, len, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- discovery ---- */

static const char *const resolve_tags[] = { "PARTLABEL", "PARTUUID", "LABEL", "UUID" };

static const char *resolve_tag_of(const char *spec, size_t *taglen)
{
	const char *eq = strchr(spec, '=');

	if (!eq)
		return NULL;
	for (size_t i = 0; i < PC_ARRAY_SIZE(resolve_tags); i++) {
		if (strlen(resolve_tags[i]) == (size_t)(eq - spec) &&
		    strncmp(spec, resolve_tags[i], (size_t)(eq - spec)) == 0) {
			*taglen = (size_t)(eq - spec);
			return resolve_tags[i];
		}
	}
	return NULL;
}

#ifdef PC_HAVE_BLKID
/*
 * Probe every device the kernel lists, with a private empty cache: the
 * shared cache file may predate a partition that appeared since (libblkid
 * reprobes only every couple of minutes), and without udev there are no
 * /dev/disk/by-* links for blkid_evaluate_tag to follow. Returns how many
 * devices carry the tag; the first one's name goes into first.
 */
static int resolve_scan(const char *tag, const char *value, char *first, size_t firstlen,
			char *second, size_t secondlen)
{
	blkid_cache cache;
	blkid_dev_iterate it;
	blkid_dev dev;
	int n = 0;

	if (blkid_get_cache(&cache, "/dev/null") != 0)
		return -ENOMEM;
	blkid_probe_all(cache);
	it = blkid_dev_iterate_begin(cache);
	/* blkid_probe_all() just read every device, so no blkid_verify() */
	if (it && blkid_dev_set_search(it, (char *)tag, (char *)value) == 0) {
		while (blkid_dev_next(it, &dev) == 0) {
			if (!blkid_dev_has_tag(dev, tag, value))
				continue;
			if (n == 0)
				pc_strlcpy(first, blkid_dev_devname(dev), firstlen);
			else if (n == 1)
				pc_strlcpy(second, blkid_dev_devname(dev), secondlen);
			n++;
		}
	}
	blkid_dev_iterate_end(it);
	blkid_put_cache(cache);
	return n;
}

static int resolve_blkid(const char *spec, const char *tag, const char *value, char *path, size_t pathlen,
			 char *err, size_t errlen)
{
	char first[PATH_MAX] = "", second[PATH_MAX] = "";
	char *dev;
	int n;

	n = resolve_scan(tag, value, first, sizeof(first), second, sizeof(second));
	if (n < 0) {
		bd_errf(err, errlen, "%s: libblkid cannot make a probe cache: %s", spec, strerror(-n));
		return n;
	}
	/* Writing to the wrong one of two look-alikes (a cloned card image) is
	 * exactly the accident this tool must not cause. */
	if (n > 1) {
		bd_errf(err, errlen, "%s matches %d devices (%s, %s%s); use %s", spec, n, first, second,
			n > 2 ? ", ..." : "", strcmp(tag, "PARTUUID") ? "PARTUUID= or a device path" : "a device path");
		return -EEXIST;
	}
	/* The fresh probe is the authority; blkid_evaluate_tag() (udev links,
	 * blkid.conf) only gets to find what the probe skipped. */
	dev = n == 1 ? strdup(first) : blkid_evaluate_tag(tag, value, NULL);
	if (!dev && n == 1)
		return -ENOMEM;
	if (!dev) {
		bd_errf(err, errlen, "%s: no device carries this tag; list the candidates with `blkid` or "
			 "`lsblk -o NAME,PARTLABEL,PARTUUID,LABEL,UUID`", spec);
		return -ENOENT;
	}
	if (strlen(dev) >= pathlen) {
		bd_errf(err, errlen, "%s: device path %s is too long", spec, dev);
		free(dev);
		return -ENAMETOOLONG;
	}
	pc_strlcpy(path, dev, pathlen);
	free(dev);
	return 0;
}
#endif

int blockdev_resolve(const char *spec, char *path, size_t pathlen, char *err, size_t errlen)
{
	const char *tag;
	size_t taglen = 0;

	if (!spec || !*spec) {
		bd_errf(err, errlen, "empty device spec; give a path or PARTLABEL=/PARTUUID=/LABEL=/UUID=");
		return -EINVAL;
	}
	tag = resolve_tag_of(spec, &taglen);
	if (!tag) {
		if (strlen(spec) >= pathlen) {
			bd_errf(err, errlen, "device path %.64s... is too long", spec);
			return -ENAMETOOLONG;
		}
		pc_strlcpy(path, spec, pathlen);
		return 0;
	}
	if (!spec[taglen + 1]) {
		bd_errf(err, errlen, "%s: empty %s value", spec, tag);
		return -EINVAL;
	}
#ifdef PC_HAVE_BLKID
	return resolve_blkid(spec, tag, spec + taglen + 1, path, pathlen, err, errlen);
#else
	bd_errf(err, errlen, "%s: this agent was built without libblkid and cannot resolve %s=; "
		 "give the device path (find it with `lsblk -o NAME,PARTLABEL`)", spec, tag);
	return -ENOTSUP;
#endif
}

/* ---- sysfs relations ---- */

static int parse_devno(const char *s, dev_t *out)
{
	unsigned maj, min;
	char extra;

	if (sscanf(s, "%u:%u%c", &maj, &min, &extra) != 2)
		return -EINVAL;
	*out = makedev(maj, min);
	return 0;
}

int blockdev_sysfs_dir(dev_t dev, char *dir, size_t len)
{
	char link[64];
	char real[PATH_MAX];

	snprintf(link, sizeof(link), SYSFS_DEV_BLOCK "/%u:%u", major(dev), minor(dev));
	if (!realpath(link, real))
		return -errno;
	if (strlen(real) >= len)
		return -ENAMETOOLONG;
	pc_strlcpy(dir, real, len);
	return 0;
}

static int sysfs_has(const char *dir, const char *name)
{
	char p[PATH_MAX];

	return bd_path_join(p, sizeof(p), dir, name) == 0 && access(p, F_OK) == 0;
}

int bd_sysfs_read(const char *dir, const char *name, char *buf, size_t len)
{
	char p[PATH_MAX];
	size_t n;
	int ret;

	ret = bd_path_join(p, sizeof(p), dir, name);
	if (ret == 0)
		ret = pc_read_text(p, buf, len);
	if (ret)
		return ret;
	/* SCSI pads vendor and model with blanks */
	n = strlen(buf);
	while (n && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}

int blockdev_is_partition(dev_t dev)
{
	char dir[PATH_MAX];
	int ret = blockdev_sysfs_dir(dev, dir, sizeof(dir));

	if (ret)
		return ret;
	return sysfs_has(dir, "partition");
}

int blockdev_whole_disk(dev_t dev, char *dir, size_t len, dev_t *disk)
{
	char d[PATH_MAX], text[32];
	char *slash;
	dev_t devno = dev;
	int ret;

	ret = blockdev_sysfs_dir(dev, d, sizeof(d));
	if (ret)
		return ret;
	if (sysfs_has(d, "partition")) {
		slash = strrchr(d, '/');
		if (!slash || slash == d)
			return -ENOENT;
		*slash = '\0';
		ret = bd_sysfs_read(d, "dev", text, sizeof(text));
		if (ret == 0)
			ret = parse_devno(text, &devno);
		if (ret)
			return ret;
	}
	if (dir) {
		if (strlen(d) >= len)
			return -ENAMETOOLONG;
		pc_strlcpy(dir, d, len);
	}
	if (disk)
		*disk = devno;
	return 0;
}

int blockdev_family(dev_t dev, dev_t *devs, size_t max)
{
	char dir[PATH_MAX], sub[PATH_MAX + 256], text[32];
	struct dirent *de;
	DIR *dh;
	size_t n = 0;
	int ret;

	if (max == 0)
		return -ENOSPC;
	ret = blockdev_sysfs_dir(dev, dir, sizeof(dir));
	if (ret)
		return ret;
	devs[n++] = dev;
	if (sysfs_has(dir, "partition"))
		return (int)n;
	dh = opendir(dir);
	if (!dh)
		return -errno;
	while ((de = readdir(dh)) != NULL) {
		dev_t p;

		if (de->d_name[0] == '.')
			continue;
		if (bd_path_join(sub, sizeof(sub), dir, de->d_name) != 0 || !sysfs_has(sub, "partition") || bd_sysfs_read(sub, "dev", text, sizeof(text)) != 0 ||
		    parse_devno(text, &p) != 0)
			continue;
		if (n == max) {
			closedir(dh);
			return -ENOSPC;
		}
		devs[n++] = p;
	}
	closedir(dh);
	return (int)n;
}

/* ---- mount, swap and holder refusals ---- */

/* Undo the octal escapes (\040 for a blank) of mountinfo and /proc/swaps. */
static void unescape_octal(char *s)
{
	char *w = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*w++ = *s++;
		}
	}
	*w = '\0';
}

static int devs_index(const dev_t *devs, size_t n, dev_t d)
{
	for (size_t i = 0; i < n; i++)
		if (devs[i] == d)
			return (int)i;
	return -1;
}

/* Split one mountinfo line: device number, mount point, type and source
 * (escaped still; type and source NULL when missing). */
static int mountinfo_split(char *line, dev_t *dev, char **mnt, char **fstype, char **src)
{
	char *save = NULL, *tok;
	int field = 0, ret = -EINVAL;

	*mnt = *fstype = *src = NULL;
	for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save), field++) {
		if (field == 2)
			ret = parse_devno(tok, dev);
		else if (field == 4)
			*mnt = tok;
		else if (field >= 6 && strcmp(tok, "-") == 0) {
			/* after the separator: fstype, then the source */
			if ((*fstype = strtok_r(NULL, " \n", &save)))
				*src = strtok_r(NULL, " \n", &save);
			break;
		}
	}
	if (ret == 0 && field < 5)
		ret = -EINVAL;
	return ret;
}

int blockdev_mounts(const char *mountinfo, int (*fn)(const struct blockdev_mount *m, void *arg), void *arg)
{
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int ret = 0;

	f = fopen(mountinfo, "re");
	if (!f)
		return -errno;
	while (!ret && getline(&line, &cap, f) > 0) {
		char *mnt, *fstype, *src;
		dev_t d;

		if (mountinfo_split(line, &d, &mnt, &fstype, &src) != 0)
			continue;
		unescape_octal(mnt);
		if (fstype)
			unescape_octal(fstype);
		if (src)
			unescape_octal(src);
		ret = fn(&(struct blockdev_mount){ .dev = d, .mnt = mnt, .fstype = fstype, .src = src }, arg);
	}
	free(line);
	fclose(f);
	return ret;
}

struct mounted_ctx {
	const char *name;
	const dev_t *devs;
	size_t n;
	char *err;
	size_t errlen;
	int found;
};

static int mounted_one(const struct blockdev_mount *m, void *arg)
{
	struct mounted_ctx *c = arg;
	int i = devs_index(c->devs, c->n, m->dev);

	if (i < 0)
		return 0;
	if (i == 0)
		bd_errf(c->err, c->errlen, "%s is mounted on %s (mountinfo); unmount it first", c->name, m->mnt);
	else
		bd_errf(c->err, c->errlen, "%s is a whole disk whose partition %s (%u:%u) is mounted on %s "
			 "(mountinfo); unmount it first", c->name, m->src ? m->src : "?", major(m->dev),
			 minor(m->dev), m->mnt);
	c->found = 1;
	return -EBUSY;
}

int blockdev_check_mounted(const char *mountinfo, const char *name, const dev_t *devs, size_t n,
			   char *err, size_t errlen)
{
	struct mounted_ctx c = { name, devs, n, err, errlen, 0 };
	int ret = blockdev_mounts(mountinfo, mounted_one, &c);

	if (ret && !c.found)
		bd_errf(err, errlen, "%s: cannot read %s to check it is not mounted: %s", name, mountinfo,
			 strerror(-ret));
	return ret;
}

int blockdev_check_swap(const char *swaps, const char *name, const dev_t *devs, size_t n,
			char *err, size_t errlen)
{
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int ret = 0;

	f = fopen(swaps, "re");
	if (!f) {
		/* no swap support in the kernel means no swap device */
		if (errno == ENOENT)
			return 0;
		ret = -errno;
		bd_errf(err, errlen, "%s: cannot read %s to check it is not swap: %s", name, swaps, strerror(-ret));
		return ret;
	}
	while (getline(&line, &cap, f) > 0) {
		char *sp = strpbrk(line, " \t\n");
		struct stat st;
		int i;

		if (line[0] != '/' || !sp)
			continue;	/* the header line */
		*sp = '\0';
		unescape_octal(line);
		if (stat(line, &st) != 0 || !S_ISBLK(st.st_mode))
			continue;
		i = devs_index(devs, n, st.st_rdev);
		if (i < 0)
			continue;
		if (i == 0)
			bd_errf(err, errlen, "%s is an active swap device (%s); swapoff it first", name, swaps);
		else
			bd_errf(err, errlen, "%s is a whole disk whose partition %s is an active swap device (%s); "
				 "swapoff it first", name, line, swaps);
		ret = -EBUSY;
		break;
	}
	free(line);
	fclose(f);
	return ret;
}

/* LVM, md and dm claim their members without mounting them. */
static int check_holders(const char *name, dev_t d, char *err, size_t errlen)
{
	char dir[PATH_MAX], holders[PATH_MAX + 16];
	struct dirent *de;
	DIR *dh;
	int ret = 0;

	if (blockdev_sysfs_dir(d, dir, sizeof(dir)) != 0)
		return 0;
	if (bd_path_join(holders, sizeof(holders), dir, "holders") != 0)
		return 0;
	dh = opendir(holders);
	if (!dh)
		return 0;
	while ((de = readdir(dh)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		bd_errf(err, errlen, "%s (%u:%u) is in use by %s (device mapper, LVM or RAID); stop that first",
			 name, major(d), minor(d), de->d_name);
		ret = -EBUSY;
		break;
	}
	closedir(dh);
	return ret;
}

int blockdev_check_safe(const char *path, dev_t dev, int allow_whole_disk, char *err, size_t errlen)
{
	dev_t devs[FAMILY_MAX];
	int n, ret;

	n = blockdev_family(dev, devs, PC_ARRAY_SIZE(devs));
	if (n < 0) {
		/* without sysfs we still know the device itself */
		devs[0] = dev;
		n = 1;
	}
	ret = blockdev_check_mounted(MOUNTINFO, path, devs, (size_t)n, err, errlen);
	if (ret)
		return ret;
	ret = blockdev_check_swap(SWAPS, path, devs, (size_t)n, err, errlen);
	if (ret)
		return ret;
	for (int i = 0; i < n; i++) {
		ret = check_holders(path, devs[i], err, errlen);
		if (ret)
			return ret;
	}
	if (allow_whole_disk)
		return 0;
	ret = blockdev_is_partition(dev);
	if (ret < 0) {
		bd_errf(err, errlen, "%s: cannot tell whether it is a partition (" SYSFS_DEV_BLOCK "/%u:%u: %s); "
			 "mount sysfs, or pass --allow-whole-disk if the whole device is meant", path, major(dev),
			 minor(dev), strerror(-ret));
		return ret;
	}
	if (ret == 0) {
		bd_errf(err, errlen, "%s is a whole disk, not a partition; give a partition (PARTLABEL=...) "
			 "or pass --allow-whole-disk if the whole device is meant to be overwritten", path);
		return -EISDIR;
	}
	return 0;
}

/* ---- files in use: loop backing files, swap files ---- */

/* The backing file of an attached loop device (sysfs name), as device and inode. */
static int loop_backing(const char *name, dev_t *dev, ino_t *ino)
{
	char dir[PATH_MAX], text[PATH_MAX], node[PATH_MAX];
	struct loop_info64 li;
	struct stat st;
	size_t n;
	int fd, ret;

	if (bd_path_join(dir, sizeof(dir), SYSFS_BLOCK, name) != 0)
		return -ENAMETOOLONG;
	/* absent when the loop device is not attached */
	if (bd_sysfs_read(dir, "loop/backing_file", text, sizeof(text)) != 0)
		return -ENOENT;
	n = strlen(text);
	if (n > 10 && strcmp(text + n - 10, " (deleted)") == 0)
		return -ENOENT;	/* a deleted file is not the one we were given */
	if (stat(text, &st) == 0) {
		*dev = st.st_dev;
		*ino = st.st_ino;
		return 0;
	}
	/* renamed, or a path from another mount namespace: ask the loop device */
	if (bd_path_join(node, sizeof(node), "/dev", name) != 0)
		return -ENAMETOOLONG;
	fd = open(node, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = ioctl(fd, LOOP_GET_STATUS64, &li) == 0 ? 0 : -errno;
	close(fd);
	if (ret)
		return ret;
	*dev = (dev_t)li.lo_device;
	*ino = (ino_t)li.lo_inode;
	return 0;
}

static int check_loop_backing(const char *path, const struct stat *st, char *err, size_t errlen)
{
	char dir[PATH_MAX], text[32], node[300], why[512];
	struct dirent *de;
	unsigned seen = 0;
	DIR *dh;
	int ret = 0;

	dh = opendir(SYSFS_BLOCK);
	if (!dh) {
		/* no sysfs: then no loop devices we could ask about either */
		if (errno == ENOENT)
			return 0;
		ret = -errno;
		bd_errf(err, errlen, "%s: cannot read " SYSFS_BLOCK " to check it backs no loop device: %s", path,
			strerror(-ret));
		return ret;
	}
	while (!ret && (de = readdir(dh)) != NULL && seen++ < SYSFS_BLOCK_MAX) {
		dev_t bdev = 0, loopdev, devs[FAMILY_MAX];
		ino_t bino = 0;
		int n;

		if (strncmp(de->d_name, "loop", 4) != 0 || loop_backing(de->d_name, &bdev, &bino) != 0 ||
		    bdev != st->st_dev || bino != st->st_ino)
			continue;
		snprintf(node, sizeof(node), "/dev/%s", de->d_name);
		ret = -EBUSY;
		if (bd_path_join(dir, sizeof(dir), SYSFS_BLOCK, de->d_name) != 0 ||
		    bd_sysfs_read(dir, "dev", text, sizeof(text)) != 0 || parse_devno(text, &loopdev) != 0) {
			bd_errf(err, errlen, "%s is the backing file of the loop device %s; detach it first "
				"(losetup -d %s)", path, node, node);
			break;
		}
		n = blockdev_family(loopdev, devs, PC_ARRAY_SIZE(devs));
		if (n < 0) {
			devs[0] = loopdev;
			n = 1;
		}
		if (blockdev_check_mounted(MOUNTINFO, node, devs, (size_t)n, why, sizeof(why)) != 0)
			bd_errf(err, errlen, "%s is the backing file of a mounted filesystem: %s; then detach "
				"it (losetup -d %s)", path, why, node);
		else
			bd_errf(err, errlen, "%s is the backing file of the loop device %s, which is in use "
				"(attached: a write under it changes what it shows); detach it first "
				"(losetup -d %s)", path, node, node);
	}
	closedir(dh);
	return ret;
}

static int check_swap_file(const char *path, const struct stat *st, char *err, size_t errlen)
{
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int ret = 0;

	f = fopen(SWAPS, "re");
	if (!f) {
		/* no swap support in the kernel means no swap file */
		if (errno == ENOENT)
			return 0;
		ret = -errno;
		bd_errf(err, errlen, "%s: cannot read " SWAPS " to check it is not a swap file: %s", path,
			strerror(-ret));
		return ret;
	}
	while (getline(&line, &cap, f) > 0) {
		char *sp = strpbrk(line, " \t\n");
		struct stat sw;

		if (line[0] != '/' || !sp)
			continue;
		*sp = '\0';
		unescape_octal(line);
		if (stat(line, &sw) != 0 || !S_ISREG(sw.st_mode) || sw.st_dev != st->st_dev || sw.st_ino != st->st_ino)
			continue;
		bd_errf(err, errlen, "%s is an active swap file (" SWAPS "); swapoff it first", path);
		ret = -EBUSY;
		break;
	}
	free(line);
	fclose(f);
	return ret;
}

int blockdev_check_file_unused(const char *path, const struct stat *st, char *err, size_t errlen)
{
	int ret = check_loop_backing(path, st, err, errlen);

	return ret ? ret : check_swap_file(path, st, err, errlen);
}

/* ---- foreign signatures (prepare) ---- */

#ifdef PC_HAVE_BLKID
static void describe_probe(blkid_probe pr, char *what, size_t whatlen)
{
	const char *type = NULL, *usage = NULL, *label = NULL, *pttype = NULL;
	const char *kind;

	blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
	blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
	blkid_probe_lookup_value(pr, "LABEL", &label, NULL);
	blkid_probe_lookup_value(pr, "PTTYPE", &pttype, NULL);
	if (!type && pttype) {
		bd_errf(what, whatlen, "a %s partition table", pttype);
		return;
	}
	if (!type) {
		bd_errf(what, whatlen, "a signature libblkid knows");
		return;
	}
	kind = !usage ? "signature" : !strcmp(usage, "filesystem") ? "filesystem" : !strcmp(usage, "raid") ?
	       "RAID/LVM member" : !strcmp(usage, "crypto") ? "encrypted volume" : !strcmp(type, "swap") ?
	       "area" : "signature";
	bd_errf(what, whatlen, "%s %s %s%s%s%s%s", strchr("aeiouAEIOU", type[0]) ? "an" : "a", type, kind,
		label ? " (LABEL=" : "", label ? label : "", label ? ")" : "",
		pttype ? ", inside a partition table" : "");
}

static int probe_range(const char *path, int fd, uint64_t off, uint64_t len, char *what, size_t whatlen,
		       char *err, size_t errlen)
{
	blkid_probe pr = blkid_new_probe();
	int rc;

	if (!pr) {
		bd_errf(err, errlen, "%s: libblkid cannot make a probe (out of memory)", path);
		return -ENOMEM;
	}
	if (blkid_probe_set_device(pr, fd, (blkid_loff_t)off, (blkid_loff_t)len) != 0) {
		bd_errf(err, errlen, "%s: libblkid cannot probe [%" PRIu64 ", +%" PRIu64 ")", path, off, len);
		blkid_free_probe(pr);
		return -EIO;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE | BLKID_SUBLKS_LABEL);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	rc = blkid_do_safeprobe(pr);
	if (rc == 0)
		describe_probe(pr, what, whatlen);
	else if (rc == -2)
		bd_errf(what, whatlen, "several conflicting signatures (libblkid: ambivalent result)");
	else if (rc != 1)
		bd_errf(err, errlen, "%s: libblkid could not probe it for filesystems and partition tables "
			"(blkid_do_safeprobe failed)", path);
	blkid_free_probe(pr);
	return rc == 1 ? 0 : rc == 0 || rc == -2 ? 1 : -EIO;
}
#endif

int blockdev_probe_foreign(const char *path, uint64_t off, uint64_t len, char *what, size_t whatlen,
			   char *err, size_t errlen)
{
#ifdef PC_HAVE_BLKID
	int fd, ret;

	what[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		bd_errf(err, errlen, "%s: cannot open it to probe for filesystems: %s", path, strerror(-ret));
		return ret;
	}
	ret = probe_range(path, fd, off, len, what, whatlen, err, errlen);
	close(fd);
	return ret;
#else
	what[0] = '\0';
	bd_errf(err, errlen, "%s: this agent was built without libblkid and cannot tell whether it holds a "
		"filesystem or a partition table", path);
	return -ENOTSUP;
#endif
}


/*
 * blockdev_id.c - a block device's identity for HELLO: sysfs facts (model,
 * serial, queue), and the eMMC's EXT_CSD (ioctl, else debugfs) parsed into
 * its reliability and cache fields.
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

#include "common/bytes.h"
#include "common/util.h"

/* ---- EXT_CSD ---- */

#define EXT_CSD_CACHE_CTRL	33
#define EXT_CSD_WR_REL_PARAM	166
#define EXT_CSD_WR_REL_SET	167
#define EXT_CSD_REV		192
#define EXT_CSD_REL_WR_SEC_C	222
#define EXT_CSD_CACHE_SIZE	249	/* 4 bytes, least significant first */
#define EXT_CSD_FW_VERSION	254	/* 8 bytes */
#define EXT_CSD_PRE_EOL_INFO	267
#define EXT_CSD_LIFE_TIME_A	268
#define EXT_CSD_LIFE_TIME_B	269

int blockdev_ext_csd_parse(const uint8_t *raw, size_t len, struct blockdev_ext_csd *out)
{
	if (!raw || len < BLOCKDEV_EXT_CSD_LEN)
		return -EINVAL;
	out->cache_ctrl = raw[EXT_CSD_CACHE_CTRL];
	out->wr_rel_param = raw[EXT_CSD_WR_REL_PARAM];
	out->wr_rel_set = raw[EXT_CSD_WR_REL_SET];
	out->rev = raw[EXT_CSD_REV];
	out->rel_wr_sec_c = raw[EXT_CSD_REL_WR_SEC_C];
	out->cache_size = pc_get32(raw + EXT_CSD_CACHE_SIZE);
	memcpy(out->fw_version, raw + EXT_CSD_FW_VERSION, sizeof(out->fw_version));
	out->pre_eol = raw[EXT_CSD_PRE_EOL_INFO];
	out->life_a = raw[EXT_CSD_LIFE_TIME_A];
	out->life_b = raw[EXT_CSD_LIFE_TIME_B];
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int blockdev_ext_csd_from_hex(const char *text, uint8_t *raw, size_t len)
{
	size_t i = 0;

	while (i < len) {
		int hi, lo;

		while (isspace((unsigned char)*text))
			text++;
		hi = hexval((unsigned char)text[0]);
		lo = hi < 0 ? -1 : hexval((unsigned char)text[1]);
		if (lo < 0)
			return -EINVAL;
		raw[i++] = (uint8_t)(hi << 4 | lo);
		text += 2;
	}
	while (isspace((unsigned char)*text))
		text++;
	return *text ? -EINVAL : 0;
}

json_object *blockdev_ext_csd_json(const struct blockdev_ext_csd *x, const char *source)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "available", json_object_new_boolean(1));
	json_object_object_add(o, "source", json_object_new_string(source));
	json_object_object_add(o, "rev", json_object_new_int(x->rev));
	json_object_object_add(o, "wr_rel_param", json_object_new_int(x->wr_rel_param));
	json_object_object_add(o, "wr_rel_set", json_object_new_int(x->wr_rel_set));
	json_object_object_add(o, "rel_wr_sec_c", json_object_new_int(x->rel_wr_sec_c));
	json_object_object_add(o, "cache_ctrl", json_object_new_int(x->cache_ctrl));
	json_object_object_add(o, "cache_size", json_object_new_int64(x->cache_size));
	{
		/* firmware as hex in the card's byte order (as the kernel's sysfs
		 * fwrev shows it: vendors store text or a number), and wear: what a
		 * supplier is asked about first */
		char fw[2 * sizeof(x->fw_version) + 1];

		for (size_t i = 0; i < sizeof(x->fw_version); i++)
			snprintf(fw + 2 * i, 3, "%02x", x->fw_version[i]);
		json_object_object_add(o, "fw_version", json_object_new_string(fw));
	}
	json_object_object_add(o, "pre_eol_info", json_object_new_int(x->pre_eol));
	json_object_object_add(o, "life_time_a", json_object_new_int(x->life_a));
	json_object_object_add(o, "life_time_b", json_object_new_int(x->life_b));
	/* the two bits the FUA debate is about, spelled out */
	json_object_object_add(o, "en_rel_wr", json_object_new_boolean(!!(x->wr_rel_param & 0x04)));
	json_object_object_add(o, "cache_on", json_object_new_boolean(!!(x->cache_ctrl & 0x01)));
	return o;
}

#ifdef PC_HAVE_MMC_IOCTL
/* Response flags as the kernel spells them (include/linux/mmc/core.h), which
 * does not export them to user space. */
#ifndef MMC_RSP_PRESENT
#define MMC_RSP_PRESENT	(1 << 0)
#define MMC_RSP_CRC	(1 << 2)
#define MMC_RSP_OPCODE	(1 << 4)
#define MMC_CMD_ADTC	(1 << 5)
#define MMC_RSP_SPI_S1	(1 << 7)
#define MMC_RSP_SPI_R1	(MMC_RSP_SPI_S1)
#define MMC_RSP_R1	(MMC_RSP_PRESENT | MMC_RSP_CRC | MMC_RSP_OPCODE)
#endif
#define MMC_SEND_EXT_CSD 8

int blockdev_ext_csd_ioctl(const char *mmcblk, uint8_t *raw, char *err, size_t errlen)
{
	struct mmc_ioc_cmd cmd;
	int fd, ret = 0;

	fd = open(mmcblk, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		bd_errf(err, errlen, "open %s: %s", mmcblk, strerror(-ret));
		return ret;
	}
	memset(&cmd, 0, sizeof(cmd));
	cmd.opcode = MMC_SEND_EXT_CSD;
	cmd.arg = 0;
	cmd.flags = MMC_RSP_SPI_R1 | MMC_RSP_R1 | MMC_CMD_ADTC;
	cmd.blksz = BLOCKDEV_EXT_CSD_LEN;
	cmd.blocks = 1;
	mmc_ioc_cmd_set_data(cmd, raw);
	if (ioctl(fd, MMC_IOC_CMD, &cmd) < 0) {
		ret = -errno;
		bd_errf(err, errlen, "MMC_IOC_CMD CMD8 on %s: %s%s", mmcblk, strerror(-ret),
			 ret == -EPERM || ret == -EACCES ? " (needs CAP_SYS_RAWIO)" : "");
	}
	close(fd);
	return ret;
}
#else
int blockdev_ext_csd_ioctl(const char *mmcblk, uint8_t *raw, char *err, size_t errlen)
{
	bd_errf(err, errlen, "built without linux/mmc/ioctl.h");
	return -ENOTSUP;
}
#endif

/* debugfs names the card by its host and address: mmc0/mmc0:0001/ext_csd. */
static int ext_csd_debugfs(const char *diskdir, uint8_t *raw, char *err, size_t errlen)
{
	char card[PATH_MAX], p[PATH_MAX + 64], link[PATH_MAX + 16];
	char text[2 * BLOCKDEV_EXT_CSD_LEN + 64];
	char *base, *colon;
	int ret;

	if (bd_path_join(link, sizeof(link), diskdir, "device") != 0 || !realpath(link, card)) {
		ret = -errno;
		bd_errf(err, errlen, "%s: %s", link, strerror(-ret));
		return ret;
	}
	base = strrchr(card, '/');
	base = base ? base + 1 : card;
	colon = strchr(base, ':');
	if (!colon) {
		bd_errf(err, errlen, "card name %s is not host:address", base);
		return -EINVAL;
	}
	ret = snprintf(p, sizeof(p), DEBUGFS "/%.*s/%s/ext_csd", (int)(colon - base), base, base);
	ret = ret < 0 || (size_t)ret >= sizeof(p) ? -ENAMETOOLONG : pc_read_text(p, text, sizeof(text));
	if (ret) {
		bd_errf(err, errlen, "%s: %s%s", p, strerror(-ret), ret == -ENOENT ? " (debugfs not mounted?)" : "");
		return ret;
	}
	ret = blockdev_ext_csd_from_hex(text, raw, BLOCKDEV_EXT_CSD_LEN);
	if (ret)
		bd_errf(err, errlen, "%s: not 512 bytes of hex", p);
	return ret;
}

static json_object *ext_csd_unavailable(const char *reason)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "available", json_object_new_boolean(0));
	json_object_object_add(o, "reason", json_object_new_string(reason));
	return o;
}

static json_object *ext_csd_identity(const char *diskname, const char *diskdir)
{
	uint8_t raw[BLOCKDEV_EXT_CSD_LEN];
	char node[PATH_MAX], e1[256], e2[256], reason[600];
	struct blockdev_ext_csd x;
	const char *source = "ioctl";

	bd_path_join(node, sizeof(node), "/dev", diskname);
	if (blockdev_ext_csd_ioctl(node, raw, e1, sizeof(e1)) != 0) {
		source = "debugfs";
		if (ext_csd_debugfs(diskdir, raw, e2, sizeof(e2)) != 0) {
			snprintf(reason, sizeof(reason), "ioctl: %s; debugfs: %s", e1, e2);
			return ext_csd_unavailable(reason);
		}
	}
	blockdev_ext_csd_parse(raw, sizeof(raw), &x);
	return blockdev_ext_csd_json(&x, source);
}

/* ---- identity ---- */

static void add_sysfs_str(json_object *obj, const char *key, const char *dir, const char *name)
{
	char buf[512];

	if (json_object_object_get_ex(obj, key, NULL))
		return;	/* the first source wins */
	if (bd_sysfs_read(dir, name, buf, sizeof(buf)) == 0 && buf[0])
		json_object_object_add(obj, key, json_object_new_string(buf));
}

static void add_sysfs_u64(json_object *obj, const char *key, const char *dir, const char *name, uint64_t mul)
{
	char buf[64];
	uint64_t v;

	if (bd_sysfs_read(dir, name, buf, sizeof(buf)) == 0 && pc_parse_u64(buf, 0, &v) == 0)
		json_object_object_add(obj, key, json_object_new_int64((int64_t)(v * mul)));
}

static const char *disk_type(const char *name, const char *diskdir, const char *mmctype)
{
	static const struct { const char *prefix, *type; } by_name[] = {
		{ "nvme", "nvme" }, { "loop", "loop" }, { "vd", "virtio" }, { "xvd", "xen" },
		{ "zram", "zram" }, { "dm-", "dm" }, { "md", "md" }, { "nbd", "nbd" },
		{ "ram", "ram" }, { "mtdblock", "mtd" }, { "ubiblock", "ubi" },
	};

	if (strncmp(name, "mmcblk", 6) == 0)
		return strcmp(mmctype, "SD") == 0 ? "sd" : "mmc";
	if (strncmp(name, "sd", 2) == 0) {
		/* USB sticks, card readers and UFS all show up as SCSI disks */
		if (strstr(diskdir, "/usb"))
			return "usb";
		if (strstr(diskdir, "ufs"))
			return "ufs";
		return "scsi";
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(by_name); i++)
		if (strncmp(name, by_name[i].prefix, strlen(by_name[i].prefix)) == 0)
			return by_name[i].type;
	return "block";
}

static void queue_identity(const char *diskdir, json_object *obj)
{
	json_object *q = json_object_new_object();
	char qdir[PATH_MAX + 8], buf[64];
	uint64_t v;

	bd_path_join(qdir, sizeof(qdir), diskdir, "queue");
	if (bd_sysfs_read(qdir, "fua", buf, sizeof(buf)) == 0 && pc_parse_u64(buf, 0, &v) == 0)
		json_object_object_add(q, "fua", json_object_new_int((int)v));
	else
		json_object_object_add(q, "fua", json_object_new_int(-1));
	if (bd_sysfs_read(qdir, "write_cache", buf, sizeof(buf)) == 0)
		json_object_object_add(q, "write_cache", json_object_new_string(buf));
	else
		json_object_object_add(q, "write_cache", NULL);
	json_object_object_add(obj, "queue", q);
}

static const char *const mmc_fields[] = {
	"cid", "csd", "name", "manfid", "oemid", "fwrev", "hwrev", "serial", "date", "prv",
	"rel_sectors", "life_time", "pre_eol_info",
};

static void mmc_identity(const char *diskname, const char *diskdir, const char *mmctype, json_object *obj)
{
	char devdir[PATH_MAX + 8];

	bd_path_join(devdir, sizeof(devdir), diskdir, "device");
	for (size_t i = 0; i < PC_ARRAY_SIZE(mmc_fields); i++)
		add_sysfs_str(obj, mmc_fields[i], devdir, mmc_fields[i]);
	add_sysfs_str(obj, "model", devdir, "name");
	/* CMD8 is SEND_IF_COND on SD cards: never send it there */
	if (strcmp(mmctype, "MMC") == 0)
		json_object_object_add(obj, "ext_csd", ext_csd_identity(diskname, diskdir));
	else
		json_object_object_add(obj, "ext_csd", ext_csd_unavailable("SD cards have no EXT_CSD"));
}

void blockdev_identity(const char *path, dev_t dev, json_object *obj)
{
	char dir[PATH_MAX], diskdir[PATH_MAX], devdir[PATH_MAX + 8], qdir[PATH_MAX + 8];
	char text[32], mmctype[16] = "";
	const char *diskname;
	int part;

	snprintf(text, sizeof(text), "%u:%u", major(dev), minor(dev));
	json_object_object_add(obj, "path", json_object_new_string(path));
	json_object_object_add(obj, "dev", json_object_new_string(text));
	if (blockdev_sysfs_dir(dev, dir, sizeof(dir)) != 0 ||
	    blockdev_whole_disk(dev, diskdir, sizeof(diskdir), NULL) != 0) {
		json_object_object_add(obj, "type", json_object_new_string("block"));
		json_object_object_add(obj, "sysfs", json_object_new_string("unavailable"));
		return;
	}
	part = strcmp(dir, diskdir) != 0;
	diskname = strrchr(diskdir, '/') + 1;
	bd_path_join(devdir, sizeof(devdir), diskdir, "device");
	bd_path_join(qdir, sizeof(qdir), diskdir, "queue");
	if (strncmp(diskname, "mmcblk", 6) == 0)
		bd_sysfs_read(devdir, "type", mmctype, sizeof(mmctype));

	json_object_object_add(obj, "type", json_object_new_string(disk_type(diskname, diskdir, mmctype)));
	json_object_object_add(obj, "disk", json_object_new_string(diskname));
	json_object_object_add(obj, "partition", part ? json_object_new_string(strrchr(dir, '/') + 1) : NULL);
	add_sysfs_u64(obj, "size", dir, "size", 512);	/* sysfs counts 512-byte units */
	add_sysfs_u64(obj, "logical_block_size", qdir, "logical_block_size", 1);
	add_sysfs_u64(obj, "physical_block_size", qdir, "physical_block_size", 1);
	if (mmctype[0])
		mmc_identity(diskname, diskdir, mmctype, obj);
	add_sysfs_str(obj, "model", devdir, "model");
	add_sysfs_str(obj, "vendor", devdir, "vendor");
	add_sysfs_str(obj, "serial", devdir, "serial");
	add_sysfs_str(obj, "serial", diskdir, "serial");	/* virtio-blk keeps it on the disk */
	add_sysfs_str(obj, "firmware", devdir, "firmware_rev");
	add_sysfs_str(obj, "firmware", devdir, "rev");
	add_sysfs_str(obj, "backing_file", diskdir, "loop/backing_file");
	queue_identity(diskdir, obj);
}

/*
 * relay_qemu_config.c - the qemu relay's configuration checked: every key of
 * relay.* (the check-config mode and open both call qemu_check), with the
 * error a user reads naming the key, what was given and what is expected.
 */
#include "relay/relay_priv.h"
#include "vboard/relay_qemu.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

static const char *const qemu_keys[] = {
	"driver", "kernel", "initrd", "drive", "console", "append", "memory_mb", "extra_args",
	"qemu", "accel", "cache", "timeout_ms", "disk", "serial", "fua", "volatile_cache", "errors",
	"machine", "dtb", "keep_inputs",
};

static const char *const qemu_accels[] = { "auto", "kvm", "tcg" };
/* in enum qemu_disk order */
const char *const qemu_disks[4] = { "sd", "scsi", "nvme", "emmc" };
/* in enum qemu_machine order */
static const char *const qemu_machines[] = { "pc", "ast2600-evb" };
/* Modes where a write the guest saw complete is in the file (or the host's
 * page cache, which outlives QEMU): never one that buffers in QEMU. */
static const char *const qemu_caches[] = { "none", "directsync", "writethrough", "writeback" };

int qemu_cfg_ast2600(json_object *cfg)
{
	return strcmp(relay_cfg_str(cfg, "machine", "pc"), "ast2600-evb") == 0;
}

/* relay.disk, or the machine's own: the PC's SD card, the AST2600's eMMC */
const char *qemu_cfg_disk(json_object *cfg)
{
	return relay_cfg_str(cfg, "disk", qemu_cfg_ast2600(cfg) ? "emmc" : "sd");
}

static int qemu_check_enum(json_object *cfg, const char *key, const char *const *vals, size_t n, char *err,
			   size_t errlen)
{
	json_object *v;
	char valid[128];
	size_t len = 0;

	if (!cfg || !json_object_object_get_ex(cfg, key, &v))
		return 0;
	for (size_t i = 0; json_object_is_type(v, json_type_string) && i < n; i++)
		if (strcmp(json_object_get_string(v), vals[i]) == 0)
			return 0;
	valid[0] = 0;
	for (size_t i = 0; i < n && len < sizeof(valid); i++)
		len += (size_t)snprintf(valid + len, sizeof(valid) - len, "%s\"%s\"", i ? ", " : "", vals[i]);
	return pc_fail(err, errlen, -EINVAL, "%s: expected one of %s, got %s", key, valid, relay_json_text(v));
}

static int qemu_check_extra(json_object *cfg, char *err, size_t errlen)
{
	json_object *v;
	size_t n;

	if (!cfg || !json_object_object_get_ex(cfg, "extra_args", &v))
		return 0;
	if (!json_object_is_type(v, json_type_array) || (n = json_object_array_length(v)) > QEMU_MAX_EXTRA)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i);

		if (!json_object_is_type(e, json_type_string) || json_object_get_string_len(e) == 0)
			goto bad;
	}
	return 0;
bad:
	return pc_fail(err, errlen, -EINVAL, "extra_args: expected an array of at most %d non-empty strings (QEMU arguments, "
		 "one per element: [\"-smp\", \"2\"]), got %s", QEMU_MAX_EXTRA, relay_json_text(v));
}

/* The disk's serial: 1 to 20 printable ASCII characters, not for the SD card. */
static int qemu_check_serial(json_object *cfg, char *err, size_t errlen)
{
	json_object *v;
	const char *s;
	size_t n;

	if (!cfg || !json_object_object_get_ex(cfg, "serial", &v))
		return 0;
	s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	n = strlen(s);
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~')
			n = 0;
	if (n == 0 || n > QEMU_SERIAL_MAX)
		return pc_fail(err, errlen, -EINVAL, "serial: expected 1 to %d printable ASCII characters without blanks (the "
			 "disk's serial number), got %s", QEMU_SERIAL_MAX, relay_json_text(v));
	if (strcmp(qemu_cfg_disk(cfg), "sd") == 0 || strcmp(qemu_cfg_disk(cfg), "emmc") == 0)
		return pc_fail(err, errlen, -EINVAL, "serial: QEMU's SD card and eMMC have a fixed CID (serial 0xdeadbeef) that no "
			 "option changes; a serial is for \"disk\": \"scsi\" or \"nvme\"");
	return 0;
}

static const char *const qemu_vc_keys[] = { "profile", "seed" };
static const char *const qemu_err_keys[] = { "op", "sector", "from_power_on", "to_power_on", "once" };
static const char *const qemu_err_ops[] = { "read", "write" };

/* "volatile_cache": {"profile": "honest" | "lying-flush" | "fua-ignored", "seed": N} */
static int qemu_check_vc(json_object *cfg, char *err, size_t errlen)
{
	json_object *v, *prof = NULL;
	int rc;

	if (!cfg || !json_object_object_get_ex(cfg, "volatile_cache", &v))
		return 0;
	if (!json_object_is_type(v, json_type_object))
		return pc_fail(err, errlen, -EINVAL, "volatile_cache: expected an object such as {\"profile\": \"honest\", "
			 "\"seed\": 1}, got %s", relay_json_text(v));
	{
		char sub[256];

		rc = relay_check_keys(v, "qemu volatile_cache", qemu_vc_keys, PC_ARRAY_SIZE(qemu_vc_keys), sub,
				      sizeof(sub));
		if (!rc)
			rc = relay_check_int(v, "seed", 0, INT64_MAX, sub, sizeof(sub));
		if (rc)
			return pc_fail(err, errlen, rc, "volatile_cache: %s", sub);
	}
	if (!json_object_object_get_ex(v, "profile", &prof) || !json_object_is_type(prof, json_type_string) ||
	    vc_profile_parse(json_object_get_string(prof)) < 0) {
		return pc_fail(err, errlen, -EINVAL, "volatile_cache.profile: expected \"honest\" (flushes and FUA honoured), "
			 "\"lying-flush\" (flushes ignored) or \"fua-ignored\" (flushes and FUA ignored), got %s",
			 prof ? relay_json_text(prof) : "nothing");
	}
	/* the FUA bit comes from QEMU's trace of its SCSI disk's commands, a
	 * reliable write from its eMMC's (CMD23); the SD card's queue has no
	 * FUA to keep, and QEMU's NVMe namespace's FUA is not traced */
	if (strcmp(qemu_cfg_disk(cfg), "scsi") != 0 && strcmp(qemu_cfg_disk(cfg), "emmc") != 0)
		return pc_fail(err, errlen, -EINVAL, "volatile_cache: only the SCSI disk (\"disk\": \"scsi\") and the eMMC board's "
			 "eMMC have one: the SD card has no write cache, and which NVMe writes carried FUA cannot "
			 "be traced");
	return 0;
}

/* "errors": [{"op": "read" | "write", "sector": S, "from_power_on": N, "to_power_on": M, "once": B}] */
static int qemu_check_errors(json_object *cfg, char *err, size_t errlen)
{
	json_object *v;
	size_t n;
	int rc;

	if (!cfg || !json_object_object_get_ex(cfg, "errors", &v))
		return 0;
	if (!json_object_is_type(v, json_type_array) || (n = json_object_array_length(v)) == 0 ||
	    n > QEMU_MAX_ERRORS) {
		return pc_fail(err, errlen, -EINVAL, "errors: expected an array of 1 to %d rules such as {\"op\": \"read\", "
			 "\"sector\": 2056, \"from_power_on\": 3}, got %s", QEMU_MAX_ERRORS, relay_json_text(v));
	}
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i), *op, *f, *t;
		char sub[sizeof(((struct relay *)0)->err)];

		if (!json_object_is_type(e, json_type_object))
			return pc_fail(err, errlen, -EINVAL, "errors[%zu]: expected an object, got %s", i, relay_json_text(e));
		rc = relay_check_keys(e, "qemu errors[]", qemu_err_keys, PC_ARRAY_SIZE(qemu_err_keys), sub,
				      sizeof(sub));
		if (!rc)
			rc = qemu_check_enum(e, "op", qemu_err_ops, PC_ARRAY_SIZE(qemu_err_ops), sub, sizeof(sub));
		if (!rc && !json_object_object_get_ex(e, "op", &op)) {
			snprintf(sub, sizeof(sub), "op: missing (\"read\" or \"write\")");
			rc = -EINVAL;
		}
		if (!rc && !json_object_object_get_ex(e, "sector", NULL)) {
			snprintf(sub, sizeof(sub), "sector: missing (the 512-byte sector of the disk that fails)");
			rc = -EINVAL;
		}
		if (!rc)
			rc = relay_check_int(e, "sector", 0, (int64_t)QEMU_SECTOR_MAX, sub, sizeof(sub));
		if (!rc)
			rc = relay_check_int(e, "from_power_on", 1, INT32_MAX, sub, sizeof(sub));
		if (!rc)
			rc = relay_check_int(e, "to_power_on", 1, INT32_MAX, sub, sizeof(sub));
		if (!rc)
			rc = relay_check_bool(e, "once", sub, sizeof(sub));
		if (!rc && json_object_object_get_ex(e, "to_power_on", &t) &&
		    json_object_get_int64(t) < (json_object_object_get_ex(e, "from_power_on", &f) ?
						json_object_get_int64(f) : 1)) {
			snprintf(sub, sizeof(sub), "to_power_on: before from_power_on");
			rc = -EINVAL;
		}
		if (rc)
			return pc_fail(err, errlen, rc, "errors[%zu].%s", i, sub);
	}
	return 0;
}

/* "keep_inputs": K, the crash-state inputs of the last K power-ons (vckeep.h) */
static int qemu_check_keep(json_object *cfg, char *err, size_t errlen)
{
	json_object *v;
	int rc;

	if (!cfg || !json_object_object_get_ex(cfg, "keep_inputs", &v))
		return 0;
	rc = relay_check_int(cfg, "keep_inputs", 0, VK_MAX_KEEP, err, errlen);
	if (rc || json_object_get_int64(v) == 0)
		return rc;
	/* the inputs are the volatile cache's log, ordered by QEMU's trace of its
	 * SCSI disk: the eMMC's trace says when no command completes */
	if (!json_object_object_get_ex(cfg, "volatile_cache", NULL) || strcmp(qemu_cfg_disk(cfg), "scsi") != 0)
		return pc_fail(err, errlen, -EINVAL, "keep_inputs: only a SCSI disk with a volatile cache (\"disk\": \"scsi\", "
			 "\"volatile_cache\": {...}) keeps them: its write log and QEMU's trace of the disk's commands "
			 "are the inputs");
	return 0;
}

/* The eMMC board (machine ast2600-evb) has its own disk, device tree and accelerator. */
static int qemu_check_machine(json_object *cfg, char *err, size_t errlen)
{
	int rc, ast = qemu_cfg_ast2600(cfg);
	const char *disk = qemu_cfg_disk(cfg);

	if (!ast) {
		if (cfg && json_object_object_get_ex(cfg, "dtb", NULL))
			return pc_fail(err, errlen, -EINVAL, "dtb: only the eMMC board (\"machine\": \"ast2600-evb\") boots a device "
				 "tree; the PC has none");
		if (strcmp(disk, "emmc") == 0)
			return pc_fail(err, errlen, -EINVAL, "disk: \"emmc\" is the eMMC board's (\"machine\": \"ast2600-evb\"); the "
				 "PC has \"sd\", \"scsi\" or \"nvme\"");
		return 0;
	}
	rc = relay_check_string(cfg, "dtb", 1, "the board's device tree, build/vm/emmc/aspeed-ast2600-evb.dtb "
				"from `make vm-image`", err, errlen);
	if (rc)
		return rc;
	if (strcmp(disk, "emmc") != 0)
		return pc_fail(err, errlen, -EINVAL, "disk: the eMMC board (\"machine\": \"ast2600-evb\") has an eMMC, \"emmc\"; "
			 "got \"%s\"", disk);
	/* an armhf guest on this host is software emulation, always */
	if (strcmp(relay_cfg_str(cfg, "accel", "auto"), "kvm") == 0)
		return pc_fail(err, errlen, -EINVAL, "accel: \"kvm\" cannot run the eMMC board (an armhf guest) on this host; give "
			 "\"auto\" or \"tcg\"");
	return 0;
}

int qemu_check(json_object *cfg, char *err, size_t errlen)
{
	int rc;

	rc = relay_check_keys(cfg, "qemu", qemu_keys, PC_ARRAY_SIZE(qemu_keys), err, errlen);
	if (!rc)
		rc = relay_check_string(cfg, "kernel", 1, "the board's kernel image, e.g. build/vm/vmlinuz from "
					"`make vm-image`", err, errlen);
	if (!rc)
		rc = relay_check_string(cfg, "initrd", 1, "the board's initramfs, e.g. build/vm/initrd.img", err,
					errlen);
	if (!rc)
		rc = relay_check_string(cfg, "drive", 1, "the disk image (the SD card, or the SCSI or NVMe disk), "
					"e.g. a copy of build/vm/sd.img", err, errlen);
	if (!rc)
		rc = relay_check_string(cfg, "console", 1, "the board end of the serial cable: a tty such as the "
					"second pty of build/tools/ptypair", err, errlen);
	if (!rc)
		rc = relay_check_string(cfg, "append", 0, "more kernel command line", err, errlen);
	if (!rc)
		rc = relay_check_string(cfg, "qemu", 0, "the QEMU binary", err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "memory_mb", 64, 1048576, err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "timeout_ms", 1, RELAY_MS_MAX, err, errlen);
	if (!rc)
		rc = qemu_check_enum(cfg, "accel", qemu_accels, PC_ARRAY_SIZE(qemu_accels), err, errlen);
	if (!rc)
		rc = qemu_check_enum(cfg, "cache", qemu_caches, PC_ARRAY_SIZE(qemu_caches), err, errlen);
	if (!rc)
		rc = qemu_check_extra(cfg, err, errlen);
	if (!rc)
		rc = qemu_check_enum(cfg, "disk", qemu_disks, PC_ARRAY_SIZE(qemu_disks), err, errlen);
	if (!rc)
		rc = qemu_check_serial(cfg, err, errlen);
	if (!rc)
		rc = relay_check_bool(cfg, "fua", err, errlen);
	/* only scsi-hd has a switch (dpofua); Linux's NVMe driver always takes FUA
	 * and the SD card never does */
	if (!rc && cfg && json_object_object_get_ex(cfg, "fua", NULL) &&
	    strcmp(qemu_cfg_disk(cfg), "scsi") != 0) {
		rc = pc_fail(err, errlen, -EINVAL, "fua: only the SCSI disk (\"disk\": \"scsi\") can be told not to take "
			     "FUA (scsi-hd's dpofua); the SD card never does, an NVMe namespace always does");
	}
	if (!rc)
		rc = qemu_check_enum(cfg, "machine", qemu_machines, PC_ARRAY_SIZE(qemu_machines), err, errlen);
	if (!rc)
		rc = qemu_check_machine(cfg, err, errlen);
	if (!rc)
		rc = qemu_check_vc(cfg, err, errlen);
	if (!rc)
		rc = qemu_check_errors(cfg, err, errlen);
	if (!rc)
		rc = qemu_check_keep(cfg, err, errlen);
	return rc;
}

/*
 * relay_qemu.c - the virtual board: power is a QEMU process.
 *
 * Power ON starts qemu-system-x86_64 with a Debian kernel, an initramfs that
 * runs powercut-agent (tools/mkboard), an SD card on an SDHCI controller
 * backed by a raw image, and the board's UART on a tty: the board end of the
 * serial cable whose other end the harness reads. Power OFF is SIGKILL of
 * QEMU's process group: the guest kernel, its MMC driver and whatever
 * transfer the emulated card is in the middle of stop at an instant nobody
 * chose, as with a relay. The image is opened with cache=none by default, so
 * every block the card wrote is in the file the moment the guest saw it
 * complete, and survives the kill; nothing is buffered inside QEMU.
 *
 * ON returns once QEMU runs the machine: it answers a QMP query-status on a
 * socketpair, which it does only from its main loop, after every device,
 * the drive and the tty were set up. A QEMU that cannot start (bad image
 * size, missing file, no KVM) exits before that, and ON fails quoting its
 * stderr (<state_dir>/qemu.log) instead of the harness waiting for a boot
 * timeout and blaming the device with a BOOT_FAIL.
 *
 * The disk is the SD card (sdhci-pci + sd-card: the MMC stack, no volatile
 * cache, no FUA), or, for the FUA board, a SCSI disk (virtio-scsi + scsi-hd,
 * write-cache=on, dpofua=on: the sd driver, which UFS parts go through too)
 * or an NVMe namespace: both advertise a volatile write cache and FUA, so a
 * "fua" write leaves the guest as a real FUA command. Those two carry a
 * serial of the board's own (relay.serial, else the board name); QEMU's SD
 * card has a fixed CID that no option changes.
 *
 * accel auto asks QEMU, once per process, whether KVM works (a /dev/kvm that
 * opens proves nothing: KVM can still abort QEMU at its first vCPU) and
 * falls back to TCG, saying so once.
 *
 * Like the sim relay: QEMU leads its own process group, we reap only our own
 * pid, install no signal handlers and bound every wait. And like the sim
 * relay, QEMU must not outlive the harness (relay_group.h): it dies with it
 * (PR_SET_PDEATHSIG), and its group is on record in <state_dir>/pgid before
 * it runs, so open kills a QEMU an earlier harness left writing to the card.
 */
#include "relay/relay_priv.h"
#include "relay/relay_group.h"
#include "relay/vcache.h"

#include "common/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

#define QEMU_DEFAULT	"qemu-system-x86_64"
#define QEMU_MAX_EXTRA	64
#define QEMU_QMP_LINE	4096
#define QEMU_SERIAL_MAX	20	/* NVMe's serial number field; scsi-hd takes 36 */
#define QEMU_PROBE_MS	10000	/* the KVM probe: QEMU up and answering */
#define QEMU_PROBE_RUN_MS 200	/* ...and its vCPU still running this long after */
#define QEMU_MAX_ERRORS	8	/* blkdebug rules a board may have */
#define QEMU_SECTOR_MAX	(1ULL << 40)	/* 512 TiB of 512-byte sectors: past any image */

#define QEMU_ARM_DEFAULT "qemu-system-arm"

enum qemu_disk { QEMU_DISK_SD, QEMU_DISK_SCSI, QEMU_DISK_NVME, QEMU_DISK_EMMC };
/* the x86 PC (SD card, SCSI, NVMe) or the Aspeed AST2600 evaluation board
 * (armhf, QEMU 10's eMMC behind the SoC's SDHCI): in qemu_machines order */
enum qemu_machine { QEMU_MACHINE_PC, QEMU_MACHINE_AST2600 };

struct qemu_priv {
	char qemu[PATH_MAX];		/* resolved binary */
	char kernel[PATH_MAX], initrd[PATH_MAX], drive[PATH_MAX], console[PATH_MAX];
	char dtb[PATH_MAX];		/* the eMMC board's device tree; "" on the PC */
	enum qemu_machine machine;
	char log[PATH_MAX];		/* QEMU's stdout/stderr; "" = /dev/null */
	char pgid[PATH_MAX];		/* the record of QEMU's group; "" = no state folder */
	char append[1024];
	char keyhex[72];	/* the campaign's key (auth.h), for the guest's agent */
	char accel[8];			/* "kvm" or "tcg", resolved at open */
	char accel_why[512];		/* how auto chose it, for qemu.log */
	char cache[16];
	char serial[QEMU_SERIAL_MAX + 1];	/* the SCSI or NVMe disk's; "" for the SD card */
	enum qemu_disk disk;
	int fua;			/* the SCSI disk says DPOFUA (relay.fua, default true) */
	char **extra;
	size_t nextra;
	int memory_mb, timeout_ms;
	pid_t pid;			/* QEMU, leader of its process group; 0 when off */
	/* -blockdev instead of -drive: a volatile cache (vcache.h) or injected
	 * errors (QEMU's blkdebug), both kept in the state folder */
	int blockdev;
	int vc;				/* 1 with a volatile cache */
	enum vc_profile vc_profile;
	uint64_t vc_seed;
	uint64_t power_on;		/* power-ons so far, kept in <state>/power-ons */
	char run_img[PATH_MAX];		/* QEMU's scratch copy of the drive */
	char vc_log[PATH_MAX];		/* blklogwrites' log of this power-on */
	char vc_pending[PATH_MAX];	/* "POWER_ON TRACE_OFFSET": a log not yet replayed onto the drive */
	char vc_record[PATH_MAX];	/* what each rebuild kept and lost (vcache.jsonl) */
	char power_ons[PATH_MAX];
	char dbg_conf[PATH_MAX];	/* blkdebug's rules for this power-on */
	struct qemu_err {
		int write;		/* else read */
		uint64_t sector, from, to;	/* power-ons from..to (to 0: on and on) */
		int once;
	} errs[QEMU_MAX_ERRORS];
	size_t nerrs;
};

static int qemu_key_initrd(struct relay *r, struct qemu_priv *p, const char *state_dir);

static const char *const qemu_keys[] = {
	"driver", "kernel", "initrd", "drive", "console", "append", "memory_mb", "extra_args",
	"qemu", "accel", "cache", "timeout_ms", "disk", "serial", "fua", "volatile_cache", "errors",
	"machine", "dtb",
};

static const char *const qemu_accels[] = { "auto", "kvm", "tcg" };
/* in enum qemu_disk order */
static const char *const qemu_disks[] = { "sd", "scsi", "nvme", "emmc" };
/* in enum qemu_machine order */
static const char *const qemu_machines[] = { "pc", "ast2600-evb" };
/* Modes where a write the guest saw complete is in the file (or the host's
 * page cache, which outlives QEMU): never one that buffers in QEMU. */
static const char *const qemu_caches[] = { "none", "directsync", "writethrough", "writeback" };

static int qemu_cfg_ast2600(json_object *cfg)
{
	return strcmp(relay_cfg_str(cfg, "machine", "pc"), "ast2600-evb") == 0;
}

/* relay.disk, or the machine's own: the PC's SD card, the AST2600's eMMC */
static const char *qemu_cfg_disk(json_object *cfg)
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
	snprintf(err, errlen, "%s: expected one of %s, got %s", key, valid, relay_json_text(v));
	return -EINVAL;
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
	snprintf(err, errlen, "extra_args: expected an array of at most %d non-empty strings (QEMU arguments, "
		 "one per element: [\"-smp\", \"2\"]), got %s", QEMU_MAX_EXTRA, relay_json_text(v));
	return -EINVAL;
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
	if (n == 0 || n > QEMU_SERIAL_MAX) {
		snprintf(err, errlen, "serial: expected 1 to %d printable ASCII characters without blanks (the "
			 "disk's serial number), got %s", QEMU_SERIAL_MAX, relay_json_text(v));
		return -EINVAL;
	}
	if (strcmp(qemu_cfg_disk(cfg), "sd") == 0 || strcmp(qemu_cfg_disk(cfg), "emmc") == 0) {
		snprintf(err, errlen, "serial: QEMU's SD card and eMMC have a fixed CID (serial 0xdeadbeef) that no "
			 "option changes; a serial is for \"disk\": \"scsi\" or \"nvme\"");
		return -EINVAL;
	}
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
	if (!json_object_is_type(v, json_type_object)) {
		snprintf(err, errlen, "volatile_cache: expected an object such as {\"profile\": \"honest\", "
			 "\"seed\": 1}, got %s", relay_json_text(v));
		return -EINVAL;
	}
	{
		char sub[256];

		rc = relay_check_keys(v, "qemu volatile_cache", qemu_vc_keys, PC_ARRAY_SIZE(qemu_vc_keys), sub,
				      sizeof(sub));
		if (!rc)
			rc = relay_check_int(v, "seed", 0, INT64_MAX, sub, sizeof(sub));
		if (rc) {
			snprintf(err, errlen, "volatile_cache: %s", sub);
			return rc;
		}
	}
	if (!json_object_object_get_ex(v, "profile", &prof) || !json_object_is_type(prof, json_type_string) ||
	    vc_profile_parse(json_object_get_string(prof)) < 0) {
		snprintf(err, errlen, "volatile_cache.profile: expected \"honest\" (flushes and FUA honoured), "
			 "\"lying-flush\" (flushes ignored) or \"fua-ignored\" (flushes and FUA ignored), got %s",
			 prof ? relay_json_text(prof) : "nothing");
		return -EINVAL;
	}
	/* the FUA bit comes from QEMU's trace of its SCSI disk's commands, a
	 * reliable write from its eMMC's (CMD23); the SD card's queue has no
	 * FUA to keep, and QEMU's NVMe namespace's FUA is not traced */
	if (strcmp(qemu_cfg_disk(cfg), "scsi") != 0 && strcmp(qemu_cfg_disk(cfg), "emmc") != 0) {
		snprintf(err, errlen, "volatile_cache: only the SCSI disk (\"disk\": \"scsi\") and the eMMC board's "
			 "eMMC have one: the SD card has no write cache, and which NVMe writes carried FUA cannot "
			 "be traced");
		return -EINVAL;
	}
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
		snprintf(err, errlen, "errors: expected an array of 1 to %d rules such as {\"op\": \"read\", "
			 "\"sector\": 2056, \"from_power_on\": 3}, got %s", QEMU_MAX_ERRORS, relay_json_text(v));
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i), *op, *f, *t;
		char sub[sizeof(((struct relay *)0)->err)];

		if (!json_object_is_type(e, json_type_object)) {
			snprintf(err, errlen, "errors[%zu]: expected an object, got %s", i, relay_json_text(e));
			return -EINVAL;
		}
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
		if (rc) {
			snprintf(err, errlen, "errors[%zu].%s", i, sub);
			return rc;
		}
	}
	return 0;
}

/* The eMMC board (machine ast2600-evb) has its own disk, device tree and accelerator. */
static int qemu_check_machine(json_object *cfg, char *err, size_t errlen)
{
	int rc, ast = qemu_cfg_ast2600(cfg);
	const char *disk = qemu_cfg_disk(cfg);

	if (!ast) {
		if (cfg && json_object_object_get_ex(cfg, "dtb", NULL)) {
			snprintf(err, errlen, "dtb: only the eMMC board (\"machine\": \"ast2600-evb\") boots a device "
				 "tree; the PC has none");
			return -EINVAL;
		}
		if (strcmp(disk, "emmc") == 0) {
			snprintf(err, errlen, "disk: \"emmc\" is the eMMC board's (\"machine\": \"ast2600-evb\"); the "
				 "PC has \"sd\", \"scsi\" or \"nvme\"");
			return -EINVAL;
		}
		return 0;
	}
	rc = relay_check_string(cfg, "dtb", 1, "the board's device tree, build/vm/emmc/aspeed-ast2600-evb.dtb "
				"from `make vm-image`", err, errlen);
	if (rc)
		return rc;
	if (strcmp(disk, "emmc") != 0) {
		snprintf(err, errlen, "disk: the eMMC board (\"machine\": \"ast2600-evb\") has an eMMC, \"emmc\"; "
			 "got \"%s\"", disk);
		return -EINVAL;
	}
	/* an armhf guest on this host is software emulation, always */
	if (strcmp(relay_cfg_str(cfg, "accel", "auto"), "kvm") == 0) {
		snprintf(err, errlen, "accel: \"kvm\" cannot run the eMMC board (an armhf guest) on this host; give "
			 "\"auto\" or \"tcg\"");
		return -EINVAL;
	}
	return 0;
}

static int qemu_check(json_object *cfg, char *err, size_t errlen)
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
		snprintf(err, errlen, "fua: only the SCSI disk (\"disk\": \"scsi\") can be told not to take FUA "
			 "(scsi-hd's dpofua); the SD card never does, an NVMe namespace always does");
		rc = -EINVAL;
	}
	if (!rc)
		rc = qemu_check_enum(cfg, "machine", qemu_machines, PC_ARRAY_SIZE(qemu_machines), err, errlen);
	if (!rc)
		rc = qemu_check_machine(cfg, err, errlen);
	if (!rc)
		rc = qemu_check_vc(cfg, err, errlen);
	if (!rc)
		rc = qemu_check_errors(cfg, err, errlen);
	return rc;
}

static void qemu_free(struct qemu_priv *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nextra; i++)
		free(p->extra[i]);
	free(p->extra);
	free(p);
}

/* A bare name is looked up in PATH now, so "not installed" is said at open. */
static int qemu_find_binary(struct relay *r, struct qemu_priv *p, const char *name)
{
	const char *path = getenv("PATH");
	char cand[PATH_MAX];

	if (strchr(name, '/')) {
		if (access(name, X_OK) == 0) {
			pc_strlcpy(p->qemu, name, sizeof(p->qemu));
			return 0;
		}
		relay_errf(r, "qemu: %s: %s", name, strerror(errno));
		return -ENOENT;
	}
	for (const char *s = path ? path : "/usr/bin:/bin"; *s;) {
		const char *e = strchr(s, ':');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len && (size_t)snprintf(cand, sizeof(cand), "%.*s/%s", (int)len, s, name) < sizeof(cand) &&
		    access(cand, X_OK) == 0) {
			pc_strlcpy(p->qemu, cand, sizeof(p->qemu));
			return 0;
		}
		s += len + (e ? 1 : 0);
	}
	relay_errf(r, "%s is not in PATH; install Debian's qemu-system-x86 (`make vm-deps`), or give relay.qemu",
		   name);
	return -ENOENT;
}

/* Each file the board needs, checked so a typo is an error now, not a BOOT_FAIL later. */
static int qemu_check_files(struct relay *r, struct qemu_priv *p)
{
	struct stat st;

	const char *const files[][2] = { { "kernel", p->kernel }, { "initrd", p->initrd }, { "dtb", p->dtb } };

	for (size_t i = 0; i < PC_ARRAY_SIZE(files); i++) {
		if (!files[i][1][0])	/* the PC has no dtb */
			continue;
		int bad = stat(files[i][1], &st) < 0 ? errno : S_ISREG(st.st_mode) ? 0 : EINVAL;

		if (bad) {
			relay_errf(r, "%s %s: %s; build the board with `make vm-image`", files[i][0], files[i][1],
				   bad == EINVAL ? "not a regular file" : strerror(bad));
			return -ENOENT;
		}
	}
	if (stat(p->drive, &st) < 0) {
		relay_errf(r, "drive %s: %s; copy build/vm/sd.img (made by `make vm-image`) there", p->drive,
			   strerror(errno));
		return -ENOENT;
	}
	/* QEMU's sd-card and emmc refuse other sizes, but only after a few hundred ms */
	if ((p->disk == QEMU_DISK_SD || p->disk == QEMU_DISK_EMMC) && S_ISREG(st.st_mode) &&
	    (st.st_size <= 0 || (st.st_size & (st.st_size - 1)))) {
		relay_errf(r, "drive %s: %" PRId64 " bytes; QEMU's %s must be a power of two in size "
			   "(tools/mkboard --sd-size)", p->drive, (int64_t)st.st_size,
			   p->disk == QEMU_DISK_SD ? "SD card" : "eMMC");
		return -EINVAL;
	}
	if (stat(p->console, &st) < 0) {
		relay_errf(r, "console %s: %s; start the serial cable first (build/tools/ptypair FILE gives "
			   "the host end and the board end)", p->console, strerror(errno));
		return -ENOENT;
	}
	if (!S_ISCHR(st.st_mode)) {
		relay_errf(r, "console %s is not a tty; give the board end of the serial cable", p->console);
		return -EINVAL;
	}
	return 0;
}

static int qemu_copy(struct relay *r, char *dst, size_t len, json_object *cfg, const char *key,
		     const char *def)
{
	const char *s = relay_cfg_str(cfg, key, def);

	if (strlen(s) >= len) {
		relay_errf(r, "%s: too long (%zu bytes, at most %zu)", key, strlen(s), len - 1);
		return -ENAMETOOLONG;
	}
	pc_strlcpy(dst, s, len);
	return 0;
}

static char *qemu_opt_escape(const char *s);

/* ---- QEMU's monitor (QMP), one JSON object a line ---- */

struct qmp_reader {
	char buf[QEMU_QMP_LINE];
	size_t len;
};

/*
 * The next object QEMU's monitor sent, by deadline (pc_now_ms()): 0 with *o
 * (the caller puts it), -ETIMEDOUT, -EPIPE when QEMU closed it (exited), or
 * -errno. A line that is not JSON, or longer than any answer we wait for, is
 * skipped.
 */
static int qmp_next(int fd, struct qmp_reader *rd, uint64_t deadline, json_object **o)
{
	for (;;) {
		char *nl = memchr(rd->buf, '\n', rd->len);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int ms;

		if (nl) {
			*nl = 0;
			*o = json_tokener_parse(rd->buf);
			rd->len -= (size_t)(nl + 1 - rd->buf);
			memmove(rd->buf, nl + 1, rd->len);
			if (*o)
				return 0;
			continue;
		}
		if (rd->len == sizeof(rd->buf) - 1)
			rd->len = 0;
		ms = relay_ms_left(deadline);
		if (ms == 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, ms) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!pfd.revents)
			continue;
		n = read(fd, rd->buf + rd->len, sizeof(rd->buf) - 1 - rd->len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -EPIPE;
		rd->len += (size_t)n;
	}
}

static int qmp_send(int fd, const char *cmd)
{
	return pc_write_all(fd, cmd, strlen(cmd));
}

/* ---- does KVM work here? ---- */

/*
 * Once per process (and QEMU binary): a machine with -accel kvm -cpu host
 * and no disk or kernel must come up, answer its monitor, and still be
 * running its firmware QEMU_PROBE_RUN_MS later. Whether /dev/kvm opens says
 * nothing about that: on some hosts it opens and QEMU then aborts creating
 * the first vCPU ("kvm_buf_set_msrs: Assertion ... failed"), and the board
 * would die at every power-on. So /dev/kvm is never looked at: QEMU is.
 */
struct qemu_kvm_probe {
	char qemu[PATH_MAX];	/* the binary it was run with; "" = not yet */
	int works;
	int said;		/* the fallback was said (once per process) */
	char why[400];		/* what QEMU did, for the messages */
	uint64_t ms;		/* how long the probe took */
};

static struct qemu_kvm_probe qemu_kvm;

/* The last non-empty line of what QEMU wrote, from the pipe it wrote to. */
static void qemu_probe_output(int fd, char *line, size_t len)
{
	char tail[2048];
	size_t have = 0;
	ssize_t n;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	for (;;) {
		if (have == sizeof(tail) - 1) {
			memmove(tail, tail + sizeof(tail) / 2, have - sizeof(tail) / 2);
			have -= sizeof(tail) / 2;
		}
		n = read(fd, tail + have, sizeof(tail) - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	tail[have] = 0;
	relay_last_line(tail, line, len);
}

static void qemu_probe_kvm(const char *qemu, struct qemu_kvm_probe *kp)
{
	char fdarg[64], out_line[240], gerr[256], *status = NULL;
	int qmp[2] = { -1, -1 }, out[2] = { -1, -1 }, devnull = -1, rc, wstatus = 0, stage = 0;
	uint64_t start = pc_now_ms(), deadline = start + QEMU_PROBE_MS, run_until = deadline;
	struct qmp_reader *rd = NULL;
	struct relay_gate gate;
	pid_t pid = -1;

	memset(kp, 0, sizeof(*kp));
	pc_strlcpy(kp->qemu, qemu, sizeof(kp->qemu));
	relay_gate_init(&gate);
	rd = calloc(1, sizeof(*rd));
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (!rd || devnull < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qmp) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0 || relay_gate_open(&gate) < 0) {
		snprintf(kp->why, sizeof(kp->why), "could not set up the probe: %s", strerror(errno));
		goto out;
	}
	snprintf(fdarg, sizeof(fdarg), "socket,id=pcprobe,fd=%d", qmp[1]);
	{
		/* the board's machine (pc), its CPU model, no disk, no kernel:
		 * the firmware runs, in a vCPU KVM has to create and run */
		char *const argv[] = { (char *)qemu, "-accel", "kvm", "-cpu", "host", "-nodefaults",
				       "-display", "none", "-no-reboot", "-m", "64", "-chardev", fdarg,
				       "-mon", "chardev=pcprobe,mode=control", NULL };
		sigset_t none;

		pid = fork();
		if (pid < 0) {
			snprintf(kp->why, sizeof(kp->why), "fork: %s", strerror(errno));
			goto out;
		}
		if (pid == 0) {
			relay_gate_child(&gate);
			if (dup2(devnull, STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0 ||
			    dup2(out[1], STDERR_FILENO) < 0)
				_exit(127);
			signal(SIGPIPE, SIG_DFL);
			sigemptyset(&none);
			sigprocmask(SIG_SETMASK, &none, NULL);
			close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
			if (fcntl(qmp[1], F_SETFD, 0) < 0)
				_exit(127);
			execv(argv[0], argv);
			if (write(STDERR_FILENO, "exec failed\n", 12) < 0)
				_exit(127);
			_exit(127);
		}
	}
	close(out[1]);
	out[1] = -1;
	close(qmp[1]);
	qmp[1] = -1;
	/* no record in a results folder: it lives a fraction of a second, and
	 * dies with us (PR_SET_PDEATHSIG) */
	if (relay_gate_release(&gate, pid, NULL, "QEMU", gerr, sizeof(gerr)) < 0) {
		relay_reap(pid, NULL, RELAY_REAP_MS);
		pid = -1;
		snprintf(kp->why, sizeof(kp->why), "could not start the probe: %s", gerr);
		goto out;
	}
	/* greeting, capabilities, a while running, then query-status */
	for (rc = 0; rc == 0 && !status;) {
		json_object *o = NULL, *ret, *st;

		rc = qmp_next(qmp[0], rd, stage == 2 && run_until < deadline ? run_until : deadline, &o);
		if (rc == -ETIMEDOUT && stage == 2 && pc_now_ms() < deadline) {
			stage = 3;
			rc = qmp_send(qmp[0], "{\"execute\": \"query-status\"}\n");
			continue;
		}
		if (rc < 0)
			break;
		if (stage == 0 && json_object_object_get_ex(o, "QMP", NULL)) {
			stage = 1;
			rc = qmp_send(qmp[0], "{\"execute\": \"qmp_capabilities\"}\n");
		} else if (json_object_object_get_ex(o, "error", NULL)) {
			snprintf(kp->why, sizeof(kp->why), "its monitor answered %.200s", relay_json_text(o));
			rc = -EPROTO;
		} else if (stage == 1 && json_object_object_get_ex(o, "return", NULL)) {
			stage = 2;
			run_until = pc_now_ms() + QEMU_PROBE_RUN_MS;
		} else if (stage == 3 && json_object_object_get_ex(o, "return", &ret) &&
			   json_object_object_get_ex(ret, "status", &st)) {
			status = strdup(json_object_get_string(st));
			if (!status)
				rc = -ENOMEM;
		}
		json_object_put(o);
	}
	kp->works = status && strcmp(status, "running") == 0;
	/* the answer is in: the machine goes, whatever it was doing */
	kill(-pid, SIGKILL);
	if (relay_reap(pid, &wstatus, RELAY_REAP_MS) < 0)
		wstatus = -1;
	pid = -1;
	qemu_probe_output(out[0], out_line, sizeof(out_line));
	if (kp->works)
		snprintf(kp->why, sizeof(kp->why), "a machine with -accel kvm -cpu host ran");
	else if (status)
		snprintf(kp->why, sizeof(kp->why), "a machine with -accel kvm -cpu host stopped (status %s)%s%s",
			 status, out_line[0] ? ": " : "", out_line);
	else if (rc == -EPIPE && wstatus != -1 && (WIFEXITED(wstatus) || WIFSIGNALED(wstatus)))
		snprintf(kp->why, sizeof(kp->why), "QEMU with -accel kvm -cpu host exited at start (%s %d%s): %s",
			 WIFEXITED(wstatus) ? "status" : "signal",
			 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus),
			 WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGABRT ? ", aborted" : "",
			 out_line[0] ? out_line : "(no output)");
	else if (rc == -ETIMEDOUT)
		snprintf(kp->why, sizeof(kp->why), "QEMU with -accel kvm -cpu host did not answer within %d ms%s%s",
			 QEMU_PROBE_MS, out_line[0] ? ": " : "", out_line);
	else if (!kp->why[0])
		snprintf(kp->why, sizeof(kp->why), "talking to QEMU with -accel kvm: %s%s%s", strerror(-rc),
			 out_line[0] ? ": " : "", out_line);
out:
	if (pid > 0) {
		kill(-pid, SIGKILL);
		relay_reap(pid, NULL, RELAY_REAP_MS);
	}
	kp->ms = pc_now_ms() - start;
	free(status);
	free(rd);
	for (int i = 0; i < 2; i++) {
		if (qmp[i] >= 0)
			close(qmp[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	if (devnull >= 0)
		close(devnull);
	relay_gate_close(&gate);
}

/*
 * accel auto or kvm: "kvm" or "tcg" into p->accel, how it was decided into
 * p->accel_why. auto falls back to TCG and says so once per process; kvm
 * that does not work is an error now, not a QEMU dying at every power-on.
 */
static int qemu_resolve_accel(struct relay *r, struct qemu_priv *p, const char *accel)
{
	struct qemu_kvm_probe *kp = &qemu_kvm;

	if (strcmp(accel, "tcg") == 0) {
		pc_strlcpy(p->accel, "tcg", sizeof(p->accel));
		snprintf(p->accel_why, sizeof(p->accel_why), "tcg (relay.accel \"tcg\")");
		return 0;
	}
	if (strcmp(accel, "arm") == 0) {
		pc_strlcpy(p->accel, "tcg", sizeof(p->accel));
		snprintf(p->accel_why, sizeof(p->accel_why), "tcg (the eMMC board is an armhf guest: software "
			 "emulation on this host, no KVM probe)");
		return 0;
	}
	if (strcmp(kp->qemu, p->qemu) != 0)
		qemu_probe_kvm(p->qemu, kp);
	if (kp->works) {
		pc_strlcpy(p->accel, "kvm", sizeof(p->accel));
		snprintf(p->accel_why, sizeof(p->accel_why), "kvm (relay.accel \"%s\"; KVM probe: %s, %" PRIu64
			 " ms)", accel, kp->why, kp->ms);
		return 0;
	}
	if (strcmp(accel, "kvm") == 0) {
		relay_errf(r, "accel \"kvm\": KVM does not work here: %s; give \"accel\": \"auto\" (falls back to "
			   "TCG) or \"tcg\"", kp->why);
		return -ENODEV;
	}
	pc_strlcpy(p->accel, "tcg", sizeof(p->accel));
	snprintf(p->accel_why, sizeof(p->accel_why), "tcg (relay.accel \"auto\": KVM does not work here; KVM probe: "
		 "%s, %" PRIu64 " ms)", kp->why, kp->ms);
	if (!kp->said) {
		kp->said = 1;
		pc_warn("relay qemu: KVM does not work here (%s); the virtual boards run under software emulation "
			"(TCG)", kp->why);
	}
	return 0;
}

/* The SCSI or NVMe disk's serial: relay.serial, else the board name (20
 * characters at most, NVMe's field: a longer name keeps its first 11 and a
 * hash of the whole). */
static void qemu_serial(struct qemu_priv *p, json_object *cfg, const char *board)
{
	size_t n = strlen(board);
	uint32_t h = 2166136261u;

	if (p->disk == QEMU_DISK_SD || p->disk == QEMU_DISK_EMMC) {
		p->serial[0] = 0;
		return;
	}
	if (cfg && json_object_object_get_ex(cfg, "serial", NULL)) {
		pc_strlcpy(p->serial, relay_cfg_str(cfg, "serial", ""), sizeof(p->serial));
		return;
	}
	if (n <= QEMU_SERIAL_MAX) {
		pc_strlcpy(p->serial, board, sizeof(p->serial));
		return;
	}
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)board[i]) * 16777619u;
	snprintf(p->serial, sizeof(p->serial), "%.11s-%08" PRIx32, board, h);
}

/*
 * QEMU's SD card has one CID for every card (sd_set_cid(): serial 0xdeadbeef;
 * no property sets it, and the guest's CMD0 resets it), so the verdicts of
 * two SD boards name the same device; so does QEMU's eMMC (its own fixed
 * CID). Said once per process and kind.
 */
static void qemu_note_sd(const char *board, int emmc)
{
	static char first[2][64];
	static int said[2];

	if (!first[emmc][0]) {
		pc_strlcpy(first[emmc], board, sizeof(first[emmc]));
		return;
	}
	if (said[emmc] || strcmp(first[emmc], board) == 0)
		return;
	said[emmc] = 1;
	pc_warn("relay qemu: boards %s and %s both have QEMU's %s, whose CID is the same for every one: "
		"their verdicts name one device, and the report merges them; give the others \"disk\": \"scsi\" "
		"or \"nvme\" (a serial of their own)", first[emmc], board, emmc ? "eMMC" : "SD card");
}

/* A line in qemu.log outside any power-on: what open decided. */
static void qemu_log_note(const struct qemu_priv *p, const char *board)
{
	char line[sizeof(p->accel_why) + sizeof(p->serial) + 160];
	int fd, n;

	if (!p->log[0] || (fd = open(p->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
		return;
	n = snprintf(line, sizeof(line), "--- board %s opened at %" PRIu64 " ms (CLOCK_MONOTONIC): accel %s; disk %s%s%s\n",
		     board, pc_now_ms(), p->accel_why, qemu_disks[p->disk], p->serial[0] ? ", serial " : "",
		     p->serial);
	if (n > 0 && pc_write_all(fd, line, strlen(line))) {
		/* a log line lost is no reason to stop */
	}
	close(fd);
}

static int qemu_wants_blockdev(json_object *cfg)
{
	return cfg && (json_object_object_get_ex(cfg, "volatile_cache", NULL) ||
		       json_object_object_get_ex(cfg, "errors", NULL));
}

static int qemu_blockdev_open(struct relay *r, struct qemu_priv *p, json_object *cfg, const char *state_dir);
static char *qemu_drive_match(const struct qemu_priv *p);

static int qemu_open(struct relay *r, json_object *cfg, const struct relay_ctx *ctx)
{
	struct qemu_priv *p = calloc(1, sizeof(*p));
	json_object *v;
	int rc;

	if (!p) {
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(qemu_disks); i++)
		if (strcmp(qemu_cfg_disk(cfg), qemu_disks[i]) == 0)
			p->disk = (enum qemu_disk)i;
	p->machine = qemu_cfg_ast2600(cfg) ? QEMU_MACHINE_AST2600 : QEMU_MACHINE_PC;
	qemu_serial(p, cfg, r->board);
	p->fua = relay_cfg_bool(cfg, "fua", 1);
	p->memory_mb = (int)relay_cfg_int(cfg, "memory_mb", 256);
	p->timeout_ms = (int)relay_cfg_int(cfg, "timeout_ms", 10000);
	if ((rc = qemu_copy(r, p->kernel, sizeof(p->kernel), cfg, "kernel", "")) ||
	    (rc = qemu_copy(r, p->initrd, sizeof(p->initrd), cfg, "initrd", "")) ||
	    (rc = qemu_copy(r, p->drive, sizeof(p->drive), cfg, "drive", "")) ||
	    (rc = qemu_copy(r, p->console, sizeof(p->console), cfg, "console", "")) ||
	    (rc = qemu_copy(r, p->dtb, sizeof(p->dtb), cfg, "dtb", "")) ||
	    (rc = qemu_copy(r, p->append, sizeof(p->append), cfg, "append", "")) ||
	    (rc = qemu_copy(r, p->cache, sizeof(p->cache), cfg, "cache", "none")))
		goto fail;
	if (ctx && ctx->key_path && ctx->key_path[0]) {
		/* the guest's agent gets the key on its kernel command line (only
		 * the guest can read it); the board image's init hands it over */
		uint8_t k[32];
		int kfd = open(ctx->key_path, O_RDONLY | O_CLOEXEC);
		ssize_t kn = kfd >= 0 ? read(kfd, p->keyhex, 64) : -1;
		if (kfd >= 0)
			close(kfd);
		p->keyhex[kn == 64 ? 64 : 0] = 0;
		if (kn != 64 || pc_auth_unhex(p->keyhex, k, sizeof(k))) {
			relay_errf(r, "cannot read the campaign's key from %s", ctx->key_path);
			rc = -EINVAL;
			goto fail;
		}
		explicit_bzero(k, sizeof(k));
	}
	if (cfg && json_object_object_get_ex(cfg, "extra_args", &v)) {
		p->extra = calloc(json_object_array_length(v) + 1, sizeof(*p->extra));
		for (size_t i = 0; p->extra && i < json_object_array_length(v); i++) {
			p->extra[i] = strdup(json_object_get_string(json_object_array_get_idx(v, i)));
			if (!p->extra[i])
				break;
			p->nextra++;
		}
		if (!p->extra || p->nextra != json_object_array_length(v)) {
			relay_errf(r, "out of memory");
			rc = -ENOMEM;
			goto fail;
		}
	}
	rc = qemu_find_binary(r, p, relay_cfg_str(cfg, "qemu", p->machine == QEMU_MACHINE_AST2600 ? QEMU_ARM_DEFAULT :
								    QEMU_DEFAULT));
	if (rc < 0)
		goto fail;
	rc = qemu_check_files(r, p);
	if (rc < 0)
		goto fail;
	/* KVM when it works here, else TCG (what CI machines have) */
	rc = qemu_resolve_accel(r, p, p->machine == QEMU_MACHINE_AST2600 ? "arm" : relay_cfg_str(cfg, "accel", "auto"));
	if (rc < 0)
		goto fail;
	if (ctx && ctx->state_dir) {
		rc = pc_mkdir_p(ctx->state_dir, 0755);
		if (rc < 0) {
			relay_errf(r, "cannot create %s: %s", ctx->state_dir, strerror(-rc));
			goto fail;
		}
		if (p->keyhex[0] && (rc = qemu_key_initrd(r, p, ctx->state_dir)) < 0)
			goto fail;
		if ((size_t)snprintf(p->log, sizeof(p->log), "%s/qemu.log", ctx->state_dir) >= sizeof(p->log) ||
		    (size_t)snprintf(p->pgid, sizeof(p->pgid), "%s/" RELAY_GROUP_FILE, ctx->state_dir) >=
			    sizeof(p->pgid)) {
			relay_errf(r, "state folder %s: path too long", ctx->state_dir);
			rc = -ENAMETOOLONG;
			goto fail;
		}
		rc = qemu_wants_blockdev(cfg) ? qemu_blockdev_open(r, p, cfg, ctx->state_dir) : 0;
		if (rc < 0)
			goto fail;
		/* an earlier harness's QEMU would still be writing to the card */
		{
			char note[PATH_MAX * 3 + 256], gerr[sizeof(r->err)], *match = qemu_drive_match(p);

			if (!match) {
				relay_errf(r, "out of memory");
				rc = -ENOMEM;
				goto fail;
			}
			rc = relay_group_kill_orphans(p->pgid, match, note, sizeof(note), gerr, sizeof(gerr));
			free(match);
			if (rc < 0) {
				relay_errf(r, "%s", gerr);
				goto fail;
			}
			if (note[0])
				pc_warn("board %s: relay qemu: %s", r->board, note);
		}
		qemu_log_note(p, r->board);
	} else if (cfg && (json_object_object_get_ex(cfg, "volatile_cache", NULL) ||
			   json_object_object_get_ex(cfg, "errors", NULL))) {
		relay_errf(r, "volatile_cache and errors need the board's state folder (a campaign's results)");
		rc = -EINVAL;
		goto fail;
	}
	if (p->disk == QEMU_DISK_SD || p->disk == QEMU_DISK_EMMC)
		qemu_note_sd(r->board, p->disk == QEMU_DISK_EMMC);
	r->priv = p;
	return 0;
fail:
	qemu_free(p);
	return rc;
}

/* QEMU's option parser splits on ',': a literal comma is written twice. */
static char *qemu_opt_escape(const char *s)
{
	size_t n = strlen(s), extra = 0;
	char *out, *w;

	for (size_t i = 0; i < n; i++)
		extra += s[i] == ',';
	out = malloc(n + extra + 1);
	if (!out)
		return NULL;
	w = out;
	for (size_t i = 0; i < n; i++) {
		*w++ = s[i];
		if (s[i] == ',')
			*w++ = ',';
	}
	*w = 0;
	return out;
}

/* The whole command line; the strings it allocates are in strs[], freed by qemu_argv_free(). */
struct qemu_argv {
	char *argv[48 + QEMU_MAX_EXTRA];
	char *strs[12];
	size_t nstrs;
};

static void qemu_argv_free(struct qemu_argv *a)
{
	for (size_t i = 0; i < a->nstrs; i++)
		free(a->strs[i]);
	a->nstrs = 0;
}

static char *qemu_argv_fmt(struct qemu_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *qemu_argv_fmt(struct qemu_argv *a, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	if (a->nstrs == PC_ARRAY_SIZE(a->strs))
		return NULL;
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	a->strs[a->nstrs++] = s;
	return s;
}

/* One newc (SVR4, no CRC) cpio entry; the data is padded to 4 bytes. */
static int cpio_entry(int fd, const char *name, unsigned mode, const void *data, size_t len)
{
	static const char zeros[4];
	char hdr[112];
	size_t nl = strlen(name) + 1, hl;

	hl = (size_t)snprintf(hdr, sizeof(hdr), "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X",
			      1u, mode, 0u, 0u, 1u, 0u, len, 0u, 0u, 0u, 0u, nl, 0u);
	if (pc_write_all(fd, hdr, hl) || pc_write_all(fd, name, nl) ||
	    pc_write_all(fd, zeros, (4 - (hl + nl) % 4) % 4) ||
	    (len && pc_write_all(fd, data, len)) || pc_write_all(fd, zeros, (4 - len % 4) % 4))
		return -EIO;
	return 0;
}

/*
 * The board's initrd with the campaign's key in front of it: an uncompressed
 * cpio holding /pc.key (mode 0600) followed by the board's own initrd, the
 * layout the kernel unpacks as one root file system (as for early microcode).
 * The key never appears on the kernel command line, which the guest would
 * print on the console (and so into the results' console logs). The file is
 * <state_dir>/initrd-with-key, mode 0600.
 */
static int qemu_key_initrd(struct relay *r, struct qemu_priv *p, const char *state_dir)
{
	char path[PATH_MAX], buf[65536], line[80];
	int in, out, rc = 0;
	ssize_t n;

	if ((size_t)snprintf(path, sizeof(path), "%s/initrd-with-key", state_dir) >= sizeof(path)) {
		relay_errf(r, "state folder %s: path too long", state_dir);
		return -ENAMETOOLONG;
	}
	in = open(p->initrd, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		rc = -errno;
		relay_errf(r, "initrd %s: %s", p->initrd, strerror(-rc));
		return rc;
	}
	unlink(path);
	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		relay_errf(r, "%s: %s", path, strerror(-rc));
		close(in);
		return rc;
	}
	snprintf(line, sizeof(line), "%s\n", p->keyhex);
	if (cpio_entry(out, "pc.key", 0100600, line, strlen(line)) || cpio_entry(out, "TRAILER!!!", 0, NULL, 0))
		rc = -EIO;
	explicit_bzero(line, sizeof(line));
	while (!rc && (n = read(in, buf, sizeof(buf))) > 0)
		if (pc_write_all(out, buf, (size_t)n))
			rc = -EIO;
	if (!rc && n < 0)
		rc = -errno;
	close(in);
	if (close(out) && !rc)
		rc = -EIO;
	if (rc) {
		relay_errf(r, "cannot write %s: %s", path, strerror(-rc));
		unlink(path);
		return rc;
	}
	pc_strlcpy(p->initrd, path, sizeof(p->initrd));
	return 0;
}

/* ---- the disk below the guest: a volatile cache (vcache.h), injected errors ---- */

static int qemu_state_path(struct relay *r, char *dst, size_t len, const char *dir, const char *name)
{
	if ((size_t)snprintf(dst, len, "%s/%s", dir, name) < len)
		return 0;
	relay_errf(r, "state folder %s: path too long", dir);
	return -ENAMETOOLONG;
}

static int qemu_blockdev_open(struct relay *r, struct qemu_priv *p, json_object *cfg, const char *state_dir)
{
	json_object *v;
	char buf[32];
	int rc, fd;

	p->blockdev = 1;
	if ((rc = qemu_state_path(r, p->run_img, sizeof(p->run_img), state_dir, "vc-disk.img")) ||
	    (rc = qemu_state_path(r, p->vc_log, sizeof(p->vc_log), state_dir, "vc-log")) ||
	    (rc = qemu_state_path(r, p->vc_pending, sizeof(p->vc_pending), state_dir, "vc-pending")) ||
	    (rc = qemu_state_path(r, p->vc_record, sizeof(p->vc_record), state_dir, "vcache.jsonl")) ||
	    (rc = qemu_state_path(r, p->power_ons, sizeof(p->power_ons), state_dir, "power-ons")) ||
	    (rc = qemu_state_path(r, p->dbg_conf, sizeof(p->dbg_conf), state_dir, "blkdebug.conf")))
		return rc;
	if (json_object_object_get_ex(cfg, "volatile_cache", &v)) {
		p->vc = 1;
		p->vc_profile = (enum vc_profile)vc_profile_parse(relay_cfg_str(v, "profile", "honest"));
		p->vc_seed = (uint64_t)relay_cfg_int(v, "seed", 1);
	}
	if (json_object_object_get_ex(cfg, "errors", &v))
		for (size_t i = 0; i < json_object_array_length(v) && i < QEMU_MAX_ERRORS; i++) {
			json_object *e = json_object_array_get_idx(v, i);
			struct qemu_err *q = &p->errs[p->nerrs++];

			q->write = strcmp(relay_cfg_str(e, "op", "read"), "write") == 0;
			q->sector = (uint64_t)relay_cfg_int(e, "sector", 0);
			q->from = (uint64_t)relay_cfg_int(e, "from_power_on", 1);
			q->to = (uint64_t)relay_cfg_int(e, "to_power_on", 0);
			q->once = relay_cfg_bool(e, "once", 0);
		}
	/* the power-ons of the runs before this one (a resumed campaign) */
	fd = open(p->power_ons, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);

		close(fd);
		buf[n > 0 ? n : 0] = 0;
		buf[strcspn(buf, "\n")] = 0;
		if (n > 0 && pc_parse_u64(buf, 0, &p->power_on) < 0) {
			relay_errf(r, "%s: not a count of power-ons (\"%.20s\"); delete it to count from 0",
				   p->power_ons, buf);
			return -EINVAL;
		}
	}
	return 0;
}

/* What names this board's image on QEMU's command line, for relay_group_kill_orphans(). */
static char *qemu_drive_match(const struct qemu_priv *p)
{
	char *m = NULL;

	if (p->blockdev && p->machine == QEMU_MACHINE_AST2600) {
		/* -drive's dotted keys: file.file.filename=<path> (or file.image.) */
		char *path = qemu_opt_escape(p->vc ? p->run_img : p->drive);

		if (path && asprintf(&m, "filename=%s", path) < 0)
			m = NULL;
		free(path);
	} else if (p->blockdev) {
		/* -blockdev's JSON: "filename":"<path>" */
		json_object *o = json_object_new_string(p->vc ? p->run_img : p->drive);
		const char *js = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_NOSLASHESCAPE) : NULL;

		if (js && asprintf(&m, "\"filename\":%s", js) < 0)
			m = NULL;
		json_object_put(o);
	} else {
		char *drive = qemu_opt_escape(p->drive);

		/* the -drive option names the image as qemu_build_argv() wrote it */
		if (drive && asprintf(&m, "file=%s", drive) < 0)
			m = NULL;
		free(drive);
	}
	return m;
}

/* The image below the raw format: [blkdebug over] [blklogwrites over] the file. */
static json_object *qemu_image_node(const struct qemu_priv *p)
{
	int direct = strcmp(p->cache, "none") == 0 || strcmp(p->cache, "directsync") == 0;
	json_object *img;

#define QEMU_FILE_NODE(path) ({ \
	json_object *f_ = json_object_new_object(), *c_ = json_object_new_object(); \
	json_object_object_add(f_, "driver", json_object_new_string("file")); \
	json_object_object_add(f_, "filename", json_object_new_string(path)); \
	json_object_object_add(c_, "direct", json_object_new_boolean(direct)); \
	json_object_object_add(f_, "cache", c_); \
	f_; })
	if (p->vc) {
		img = json_object_new_object();
		json_object_object_add(img, "driver", json_object_new_string("blklogwrites"));
		json_object_object_add(img, "file", QEMU_FILE_NODE(p->run_img));
		json_object_object_add(img, "log", QEMU_FILE_NODE(p->vc_log));
		json_object_object_add(img, "log-sector-size", json_object_new_int(512));
	} else {
		img = QEMU_FILE_NODE(p->drive);
	}
#undef QEMU_FILE_NODE
	if (p->nerrs) {
		json_object *d = json_object_new_object();

		json_object_object_add(d, "driver", json_object_new_string("blkdebug"));
		json_object_object_add(d, "config", json_object_new_string(p->dbg_conf));
		json_object_object_add(d, "image", img);
		img = d;
	}
	return img;
}

/* One node's options as -drive's dotted keys (file.driver=...,file.file.filename=...),
 * values' commas doubled; "cache" left out: -drive's own cache= covers the
 * whole stack. 0, or -ENOMEM / -E2BIG. */
static int qemu_dotted(json_object *o, const char *prefix, char *out, size_t len, size_t *used)
{
	json_object_object_foreach(o, k, v) {
		char key[256];

		if (strcmp(k, "cache") == 0)
			continue;
		if ((size_t)snprintf(key, sizeof(key), "%s.%s", prefix, k) >= sizeof(key))
			return -E2BIG;
		if (json_object_is_type(v, json_type_object)) {
			int rc = qemu_dotted(v, key, out, len, used);

			if (rc)
				return rc;
		} else {
			char *val = qemu_opt_escape(json_object_get_string(v));
			int n;

			if (!val)
				return -ENOMEM;
			n = snprintf(out + *used, len - *used, ",%s=%s", key, val);
			free(val);
			if (n < 0 || (size_t)n >= len - *used)
				return -E2BIG;
			*used += (size_t)n;
		}
	}
	return 0;
}

/* The filter stack below the eMMC board's raw format, for its -drive (no -blockdev there). */
static char *qemu_image_dotted(const struct qemu_priv *p)
{
	json_object *img = qemu_image_node(p);
	size_t len = 4 * PATH_MAX + 512, used = 0;
	char *out = malloc(len);

	if (out) {
		out[0] = 0;
		if (!img || qemu_dotted(img, "file", out, len, &used)) {
			free(out);
			out = NULL;
		}
	}
	json_object_put(img);
	return out;
}

/* The disk as -blockdev JSON: raw over [blkdebug over] [blklogwrites over] the image. */
static char *qemu_blockdev_json(const struct qemu_priv *p, const char *node)
{
	json_object *top = json_object_new_object(), *img = qemu_image_node(p);
	char *out = NULL;

	/* raw on top: it raises blkdebug's read_aio and write_aio events */
	json_object_object_add(top, "driver", json_object_new_string("raw"));
	json_object_object_add(top, "node-name", json_object_new_string(node));
	json_object_object_add(top, "file", img);
	out = strdup(json_object_to_json_string_ext(top, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(top);
	return out;
}

/* Copy the drive to QEMU's scratch image (the cache is empty at power-on). */
static int qemu_copy_image(struct relay *r, const char *src, const char *dst)
{
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
	struct stat st;
	off_t left;

	if (in < 0 || fstat(in, &st) < 0) {
		rc = -errno;
		relay_errf(r, "drive %s: %s", src, strerror(-rc));
		goto out;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		rc = -errno;
		relay_errf(r, "%s: %s", dst, strerror(-rc));
		goto out;
	}
	for (left = st.st_size; left > 0;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);

		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			relay_errf(r, "copying %s to %s: %s", src, dst, n < 0 ? strerror(-rc) : "short copy");
			goto out;
		}
		left -= n;
	}
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

/* blkdebug's rules for this power-on (QEMU 7.2's config file syntax). */
static int qemu_write_dbg_conf(struct relay *r, const struct qemu_priv *p)
{
	FILE *f = fopen(p->dbg_conf, "we");
	size_t active = 0;

	if (!f) {
		relay_errf(r, "%s: %s", p->dbg_conf, strerror(errno));
		return -errno;
	}
	fprintf(f, "# powercut: the injected errors of power-on %" PRIu64 "\n", p->power_on);
	for (size_t i = 0; i < p->nerrs; i++) {
		const struct qemu_err *q = &p->errs[i];

		if (p->power_on < q->from || (q->to && p->power_on > q->to))
			continue;
		active++;
		fprintf(f, "[inject-error]\nevent = \"%s\"\nerrno = \"%d\"\nsector = \"%" PRIu64 "\"\nonce = \"%s\"\n",
			q->write ? "write_aio" : "read_aio", EIO, q->sector, q->once ? "on" : "off");
	}
	if (active == 0)	/* blkdebug wants a rule: one on an event raw never raises */
		fprintf(f, "[inject-error]\nevent = \"l1_update\"\nerrno = \"%d\"\n", EIO);
	if (fclose(f)) {
		relay_errf(r, "%s: %s", p->dbg_conf, strerror(errno));
		return -EIO;
	}
	return 0;
}

/* Replay the pending log onto the drive (vcache.h), then forget it. */
static int qemu_vc_replay(struct relay *r, struct qemu_priv *p)
{
	struct vc_params vp = { .log = p->vc_log, .trace = p->log[0] ? p->log : NULL, .media = p->drive,
				.record = p->vc_record, .profile = p->vc_profile, .seed = p->vc_seed,
				.trace_mmc = p->disk == QEMU_DISK_EMMC };
	char buf[64], err[sizeof(r->err) - 64];
	struct vc_stats st;
	uint64_t off = 0;
	ssize_t n;
	int fd, rc;

	fd = open(p->vc_pending, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	if (n <= 0 || sscanf(buf, "%" SCNu64 " %" SCNu64, &vp.power_on, &off) != 2) {
		relay_errf(r, "%s: not \"POWER_ON TRACE_OFFSET\" (\"%.20s\"): the last power-on's writes cannot "
			   "be replayed; delete it and the image %s is as the power-on before left it", p->vc_pending,
			   buf, p->drive);
		return -EINVAL;
	}
	vp.trace_off = (off_t)off;
	rc = vc_rebuild(&vp, &st, err, sizeof(err));
	if (rc) {
		relay_errf(r, "volatile cache: %s", err);
		return rc;
	}
	unlink(p->vc_pending);
	return 0;
}

/* At power-on: the last power-on's log replayed, a fresh scratch image and log, the errors of this one. */
static int qemu_disk_prepare(struct relay *r, struct qemu_priv *p)
{
	char buf[64];
	struct stat st;
	int fd, rc;

	if (!p->blockdev)
		return 0;
	/* a harness that died between a cut and its replay left the log */
	if (p->vc && (rc = qemu_vc_replay(r, p)) < 0)
		return rc;
	p->power_on++;
	snprintf(buf, sizeof(buf), "%" PRIu64 "\n", p->power_on);
	fd = open(p->power_ons, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || pc_write_all(fd, buf, strlen(buf))) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		relay_errf(r, "%s: %s", p->power_ons, strerror(-rc));
		return rc;
	}
	close(fd);
	if (p->nerrs && (rc = qemu_write_dbg_conf(r, p)) < 0)
		return rc;
	if (!p->vc)
		return 0;
	if ((rc = qemu_copy_image(r, p->drive, p->run_img)) < 0)
		return rc;
	fd = open(p->vc_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		relay_errf(r, "%s: %s", p->vc_log, strerror(-rc));
		return rc;
	}
	close(fd);
	/* QEMU's trace of this power-on starts past what its log holds now */
	snprintf(buf, sizeof(buf), "%" PRIu64 " %" PRIu64 "\n", p->power_on,
		 (uint64_t)(p->log[0] && stat(p->log, &st) == 0 ? st.st_size : 0));
	fd = open(p->vc_pending, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || pc_write_all(fd, buf, strlen(buf)) || fsync(fd)) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		relay_errf(r, "%s: %s", p->vc_pending, strerror(-rc));
		return rc;
	}
	close(fd);
	return 0;
}

static int qemu_build_argv(struct relay *r, struct qemu_priv *p, int qmp_fd, struct qemu_argv *a)
{
	char *drive = qemu_opt_escape(p->drive), *tty = qemu_opt_escape(p->console);
	char *serial = qemu_opt_escape(p->serial);
	char *mem, *append, *sdopt, *ttyopt, *qmpopt, *devopt = NULL;
	const char *id = p->disk == QEMU_DISK_SD ? "sd" : p->disk == QEMU_DISK_EMMC ? "emmc" : "disk";
	int ast = p->machine == QEMU_MACHINE_AST2600;
	size_t n = 0;

	memset(a, 0, sizeof(*a));
	if (drive)
		a->strs[a->nstrs++] = drive;
	if (tty)
		a->strs[a->nstrs++] = tty;
	if (serial)
		a->strs[a->nstrs++] = serial;
	mem = qemu_argv_fmt(a, "%d", p->memory_mb);
	/* panic=-1 with -no-reboot: a guest that panics powers itself off, which
	 * get() then reports, rather than rebooting behind the harness's back.
	 * pc.disk tells the board's init which driver to load and which
	 * partition to wait for; pc.accel puts the accelerator in the console
	 * log of every power-on (the kernel prints its command line). */
	/* the AST2600's console is UART5, ttyS4 to Linux */
	append = qemu_argv_fmt(a, "console=%s,115200 panic=-1 pc.board=%s pc.disk=%s pc.accel=%s%s%s%s",
			       ast ? "ttyS4" : "ttyS0", r->board, qemu_disks[p->disk], p->accel,
			       ast ? " pc.console=ttyS4" : "", p->append[0] ? " " : "", p->append);
	if (ast) {
		/* the SoC's eMMC controller takes the SD drive after its two SD
		 * slots' (index 2); a filter stack below it is -drive's dotted
		 * file.* options */
		char *dotted = p->blockdev ? qemu_image_dotted(p) : NULL;

		if (p->blockdev)
			sdopt = dotted ? qemu_argv_fmt(a, "id=%s,if=sd,index=2,format=raw,cache=%s%s", id, p->cache,
						       dotted) : NULL;
		else
			sdopt = drive ? qemu_argv_fmt(a, "id=%s,if=sd,index=2,format=raw,cache=%s,file=%s", id,
						      p->cache, drive) : NULL;
		free(dotted);
	} else if (p->blockdev) {
		sdopt = qemu_blockdev_json(p, id);
		if (sdopt && a->nstrs < PC_ARRAY_SIZE(a->strs))
			a->strs[a->nstrs++] = sdopt;
		else {
			free(sdopt);
			sdopt = NULL;
		}
	} else {
		sdopt = drive ? qemu_argv_fmt(a, "id=%s,if=none,format=raw,cache=%s,file=%s", id, p->cache, drive) :
			NULL;
	}
	ttyopt = tty ? qemu_argv_fmt(a, "serial,id=pcser,path=%s", tty) : NULL;
	qmpopt = qemu_argv_fmt(a, "socket,id=pcqmp,fd=%d", qmp_fd);
	/* the FUA board's disks: a volatile write cache the guest is told
	 * about, and FUA (scsi-hd says DPOFUA only when asked to; with relay.fua
	 * false it does not, and the guest's block layer emulates FUA with
	 * flushes) */
	if (p->disk == QEMU_DISK_SCSI && serial)
		devopt = qemu_argv_fmt(a, "scsi-hd,bus=pcscsi.0,drive=disk,serial=%s,write-cache=on,dpofua=%s", serial,
				       p->fua ? "on" : "off");
	else if (p->disk == QEMU_DISK_NVME && serial)
		devopt = qemu_argv_fmt(a, "nvme,drive=disk,serial=%s,write-cache=on", serial);
	else if (p->disk == QEMU_DISK_SD)
		devopt = qemu_argv_fmt(a, "sd-card,drive=sd");
	else if (p->disk == QEMU_DISK_EMMC)
		devopt = "";	/* the machine makes it, from the drive */
	if (!drive || !tty || !serial || !mem || !append || !sdopt || !ttyopt || !qmpopt || !devopt) {
		qemu_argv_free(a);
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	a->argv[n++] = p->qemu;
	if (ast) {
		/* The evaluation board; not -nodefaults: QEMU 10's Aspeed machines
		 * attach their SD and eMMC drives only with the defaults on (and
		 * their three sd-bus are one name to -device). Its defaults are
		 * a UART (ours, below), a monitor (QMP, below), NICs without a peer. */
		a->argv[n++] = "-M";
		a->argv[n++] = "ast2600-evb";
		a->argv[n++] = "-net";
		a->argv[n++] = "none";
		/* no sound card to probe host audio drivers for (nor modules to
		 * load from the host's own QEMU's folder) */
		a->argv[n++] = "-audio";
		a->argv[n++] = "none";
	} else {
		/* no default NIC, VGA, floppy or CD: a board with a disk and a UART */
		a->argv[n++] = "-nodefaults";
	}
	a->argv[n++] = "-nographic";
	a->argv[n++] = "-no-reboot";
	a->argv[n++] = "-accel";
	a->argv[n++] = p->accel;
	if (!ast) {
		/* TCG's default qemu64 CPU lacks SSE4.2: the agent would fall back to
		 * table CRC32C, several times slower over every scan */
		a->argv[n++] = "-cpu";
		a->argv[n++] = strcmp(p->accel, "kvm") == 0 ? "host" : "max";
	}
	a->argv[n++] = "-m";
	a->argv[n++] = mem;
	a->argv[n++] = "-kernel";
	a->argv[n++] = p->kernel;
	if (ast) {
		a->argv[n++] = "-dtb";
		a->argv[n++] = p->dtb;
	}
	a->argv[n++] = "-initrd";
	a->argv[n++] = p->initrd;
	a->argv[n++] = "-append";
	a->argv[n++] = append;
	a->argv[n++] = "-chardev";
	a->argv[n++] = ttyopt;
	a->argv[n++] = "-serial";
	a->argv[n++] = "chardev:pcser";
	a->argv[n++] = "-chardev";
	a->argv[n++] = qmpopt;
	a->argv[n++] = "-mon";
	a->argv[n++] = "chardev=pcqmp,mode=control";
	if (p->disk == QEMU_DISK_SD || p->disk == QEMU_DISK_SCSI) {
		/* the card's or the disk's host controller */
		a->argv[n++] = "-device";
		a->argv[n++] = p->disk == QEMU_DISK_SD ? "sdhci-pci" : "virtio-scsi-pci,id=pcscsi";
	}
	if (devopt[0]) {
		a->argv[n++] = "-device";
		a->argv[n++] = devopt;
	}
	a->argv[n++] = p->blockdev && !ast ? "-blockdev" : "-drive";
	a->argv[n++] = sdopt;
	if (p->vc && p->disk == QEMU_DISK_EMMC) {
		/* which writes were reliable writes: the MMC commands (CMD23's
		 * bit 31) and the blocks the card wrote, on QEMU's stderr (its log) */
		a->argv[n++] = "-trace";
		a->argv[n++] = "sdcard_normal_command";
		a->argv[n++] = "-trace";
		a->argv[n++] = "sdcard_write_block";
	} else if (p->vc) {
		/* which WRITEs carried FUA: the SCSI commands, on QEMU's stderr (its log) */
		a->argv[n++] = "-trace";
		a->argv[n++] = "scsi_disk_new_request";
	}
	for (size_t i = 0; i < p->nextra; i++)
		a->argv[n++] = p->extra[i];
	a->argv[n] = NULL;
	return 0;
}

/* The last non-empty line of QEMU's log, for error messages. */
static const char *qemu_log_tail(const struct qemu_priv *p, char *buf, size_t len)
{
	char tail[1024];
	ssize_t n = -1;
	off_t size;
	int fd;

	buf[0] = 0;
	if (!p->log[0] || (fd = open(p->log, O_RDONLY | O_CLOEXEC)) < 0)
		return buf;
	size = lseek(fd, 0, SEEK_END);
	if (size >= 0)
		n = pread(fd, tail, sizeof(tail) - 1,
			  size > (off_t)sizeof(tail) - 1 ? size - (off_t)sizeof(tail) + 1 : 0);
	close(fd);
	if (n <= 0)
		return buf;
	tail[n] = 0;
	return relay_last_line(tail, buf, len);
}

/* A header per power-on in QEMU's log, so its messages can be matched to a cycle. */
static int qemu_open_log(struct relay *r, struct qemu_priv *p, char *const argv[])
{
	FILE *f;
	int fd;

	if (!p->log[0])
		return open("/dev/null", O_WRONLY | O_CLOEXEC);
	fd = open(p->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	f = fdopen(dup(fd), "a");
	if (f) {
		fprintf(f, "--- power on at %" PRIu64 " ms (CLOCK_MONOTONIC):", pc_now_ms());
		for (size_t i = 0; argv[i]; i++)
			fprintf(f, " %s", argv[i]);
		fputc('\n', f);
		fclose(f);
	}
	return fd;
}

/* In the child, between fork and exec: only async-signal-safe calls. */
static void qemu_child(char *const argv[], struct relay_gate *gate, int devnull, int logfd, int qmp_fd, int errfd)
{
	sigset_t none;
	int e;

	relay_gate_child(gate);
	if (dup2(devnull, STDIN_FILENO) < 0 || dup2(logfd, STDOUT_FILENO) < 0 || dup2(logfd, STDERR_FILENO) < 0)
		_exit(127);
	/* The harness may ignore SIGPIPE or block signals; QEMU expects defaults. */
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* None of the harness's descriptors but QEMU's end of the QMP socket. */
	close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
	if (fcntl(qmp_fd, F_SETFD, 0) < 0)
		_exit(127);
	execv(argv[0], argv);
	e = errno;
	if (write(errfd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* Kill the group, reap; the board is off (or stuck in the kernel: -ETIMEDOUT). */
static int qemu_cut(struct relay *r, struct qemu_priv *p)
{
	char hint[PATH_MAX + 16];

	int rc;

	snprintf(hint, sizeof(hint), " (I/O on %s?)", p->drive);
	rc = relay_kill_group(r, &p->pid, "QEMU", hint);
	if (rc == 0 && p->pgid[0])
		relay_group_forget(p->pgid);
	/* the power is off: what the cache held and had not written is lost now */
	if (rc == 0 && p->vc)
		rc = qemu_vc_replay(r, p);
	return rc;
}

/*
 * Wait for QEMU to run the machine: the greeting (sent early, from the
 * monitor's own thread), then the answer to query-status (sent from the
 * main loop, so only once the machine is set up). 0 when it runs; -EPIPE if
 * QEMU went away; -ETIMEDOUT; -EPROTO with what it said instead.
 */
static int qemu_qmp_wait(struct relay *r, struct qemu_priv *p, int fd, uint64_t deadline)
{
	struct qmp_reader *rd = calloc(1, sizeof(*rd));
	int stage = 0;	/* 0 greeting, 1 capabilities answer, 2 status answer */
	int rc = 0;

	if (!rd)
		return -ENOMEM;
	while (rc == 0) {
		json_object *o = NULL;

		rc = qmp_next(fd, rd, deadline, &o);
		if (rc < 0)
			break;
		if (stage == 0 && json_object_object_get_ex(o, "QMP", NULL)) {
			stage = 1;
			rc = qmp_send(fd, "{\"execute\": \"qmp_capabilities\"}\n");
		} else if (json_object_object_get_ex(o, "error", NULL)) {
			relay_errf(r, "QEMU's monitor answered %.200s; see %s", relay_json_text(o),
				   p->log[0] ? p->log : "(no log)");
			rc = -EPROTO;
		} else if (stage == 1 && json_object_object_get_ex(o, "return", NULL)) {
			stage = 2;
			rc = qmp_send(fd, "{\"execute\": \"query-status\"}\n");
		} else if (stage == 2 && json_object_object_get_ex(o, "return", NULL)) {
			json_object_put(o);
			break;
		}
		/* anything else is an event: keep reading */
		json_object_put(o);
	}
	free(rd);
	return rc;
}

/* fork+exec QEMU in its own group; 0 with p->pid set, or -errno with r->err. */
static int qemu_spawn(struct relay *r, struct qemu_priv *p, int qmp[2], struct qemu_argv *a)
{
	int ep[2] = { -1, -1 }, devnull = -1, logfd = -1, rc = 0, child_errno = 0;
	struct relay_gate gate;
	char gerr[PATH_MAX + 128];
	ssize_t n;
	pid_t pid;

	relay_gate_init(&gate);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	logfd = qemu_open_log(r, p, a->argv);
	if (devnull < 0 || logfd < 0 || pipe2(ep, O_CLOEXEC) < 0 || (rc = relay_gate_open(&gate)) < 0) {
		rc = rc < 0 ? rc : -errno;
		relay_errf(r, "cannot set up to run %s (log %s): %s", p->qemu, p->log[0] ? p->log : "/dev/null",
			   strerror(-rc));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		relay_errf(r, "fork for %s: %s", p->qemu, strerror(-rc));
		goto out;
	}
	if (pid == 0)
		qemu_child(a->argv, &gate, devnull, logfd, qmp[1], ep[1]);
	close(ep[1]);
	ep[1] = -1;
	rc = relay_gate_release(&gate, pid, p->pgid[0] ? p->pgid : NULL, "QEMU", gerr, sizeof(gerr));
	if (rc < 0) {
		/* never released: it _exit()s by itself */
		relay_reap(pid, NULL, RELAY_REAP_MS);
		if (p->pgid[0])
			relay_group_forget(p->pgid);
		relay_errf(r, "cannot record QEMU's process group, so a restarted harness could not find it: %s; "
			   "not powering on", gerr);
		goto out;
	}
	do
		n = read(ep[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(child_errno)) {
		waitpid(pid, NULL, 0);	/* it _exit()s right after the write */
		if (p->pgid[0])
			relay_group_forget(p->pgid);
		rc = -child_errno;
		relay_errf(r, "cannot run %s: %s", p->qemu, strerror(child_errno));
		goto out;
	}
	p->pid = pid;
out:
	if (ep[0] >= 0)
		close(ep[0]);
	if (ep[1] >= 0)
		close(ep[1]);
	if (devnull >= 0)
		close(devnull);
	if (logfd >= 0)
		close(logfd);
	relay_gate_close(&gate);
	return rc;
}

static int qemu_get(struct relay *r)
{
	struct qemu_priv *p = r->priv;
	siginfo_t si;

	if (!p->pid)
		return 0;
	memset(&si, 0, sizeof(si));
	/* Look without reaping: the group id stays ours until the cut below. */
	if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0)
		return 1;
	/* QEMU exited on its own (a guest panic with -no-reboot): it is off. */
	return qemu_cut(r, p) < 0 ? -ETIMEDOUT : 0;
}

static int qemu_on(struct relay *r)
{
	struct qemu_priv *p = r->priv;
	struct qemu_argv a;
	int qmp[2] = { -1, -1 }, rc, status = 0;
	char last[240];

	rc = qemu_get(r);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		relay_errf(r, "already on (QEMU pid %d); switch it off first", (int)p->pid);
		return -EBUSY;
	}
	/* the files may have gone since open (a cleaned build folder, a cable unplugged) */
	rc = qemu_check_files(r, p);
	if (rc < 0)
		return rc;
	rc = qemu_disk_prepare(r, p);
	if (rc < 0)
		return rc;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qmp) < 0) {
		rc = -errno;
		relay_errf(r, "socketpair for QEMU's monitor: %s", strerror(-rc));
		return rc;
	}
	rc = qemu_build_argv(r, p, qmp[1], &a);
	if (rc < 0)
		goto out;
	rc = qemu_spawn(r, p, qmp, &a);
	qemu_argv_free(&a);
	if (rc < 0)
		goto out;
	close(qmp[1]);
	qmp[1] = -1;
	rc = qemu_qmp_wait(r, p, qmp[0], pc_now_ms() + (uint64_t)p->timeout_ms);
	if (rc == 0)
		goto out;
	if (rc == -EPIPE && relay_reap(p->pid, &status, RELAY_REAP_MS) == 0) {
		p->pid = 0;
		if (p->pgid[0])
			relay_group_forget(p->pgid);
		qemu_log_tail(p, last, sizeof(last));
		relay_errf(r, "QEMU exited at start (%s %d): %s; see %s",
			   WIFEXITED(status) ? "status" : "signal",
			   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			   last[0] ? last : "(no output)", p->log[0] ? p->log : "(no log: no state folder)");
		rc = -EIO;
		goto out;
	}
	if (rc == -ETIMEDOUT)
		relay_errf(r, "QEMU did not start the machine within %d ms (killed); see %s, or raise "
			   "relay.timeout_ms", p->timeout_ms, p->log[0] ? p->log : "its output");
	else if (rc != -EPROTO)
		relay_errf(r, "talking to QEMU's monitor: %s (QEMU killed); see %s", strerror(-rc),
			   p->log[0] ? p->log : "its output");
	qemu_cut(r, p);
out:
	if (qmp[0] >= 0)
		close(qmp[0]);
	if (qmp[1] >= 0)
		close(qmp[1]);
	return rc;
}

static int qemu_off(struct relay *r)
{
	struct qemu_priv *p = r->priv;

	if (!p->pid)
		return 0;
	return qemu_cut(r, p);
}

static void qemu_close(struct relay *r)
{
	struct qemu_priv *p = r->priv;

	if (!p)
		return;
	if (p->pid)
		qemu_cut(r, p);
	qemu_free(p);
	r->priv = NULL;
}

/* No lock of its own: the board is our process, in its results folder,
 * and that folder's lock covers it (relay_lock.h). */
static int qemu_ident(json_object *cfg, char *buf, size_t len)
{
	return -ENOENT;
}

const struct relay_ops relay_qemu_ops = {
	.ident = qemu_ident,
	.name = "qemu",
	.check = qemu_check,
	.open = qemu_open,
	.on = qemu_on,
	.off = qemu_off,
	.get = qemu_get,
	.close = qemu_close,
};

/*
 * relay_qemu.h - the virtual board's parts, shared by its files (private to
 * the qemu relay; the relay's interface is relay_qemu_ops in vboard.h):
 *
 *   relay_qemu.c         power: open, on (spawn), off (cut), get, close
 *   relay_qemu_config.c  relay.* checked (check-config and open)
 *   relay_qemu_qmp.c     QEMU's monitor
 *   relay_qemu_kvm.c     whether KVM runs the board's guest: the probe, the fallback
 *   relay_qemu_argv.c    QEMU's command line (machine, disk, filter stack, traces)
 *   relay_qemu_disk.c    the files below the guest: the key's initrd, the
 *                        volatile cache's scratch image and replay, blkdebug
 */
#ifndef PC_RELAY_QEMU_H
#define PC_RELAY_QEMU_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "relay/relay.h"
#include "vboard/vcache.h"
#include "vboard/vckeep.h"

#define QEMU_DEFAULT	"qemu-system-x86_64"
#define QEMU_MAX_EXTRA	64
#define QEMU_QMP_LINE	4096
#define QEMU_SERIAL_MAX	20	/* NVMe's serial number field; scsi-hd takes 36 */
#define QEMU_PROBE_BOOT_MS 10000	/* the KVM probe: the board's kernel's first console line */
#define QEMU_FAULT_TAIL	(256 * 1024)	/* how much of qemu.log's end host_fault reads */
#define QEMU_PROBE_RUN_MS 200	/* ...and no word of a KVM failure this long after */
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
	int kvm_auto;			/* kvm chosen by "auto": a power-on KVM fails falls back to TCG */
	int kvm_note;			/* the fallback, to say in the next power-on's console log */
	char kvm_said[240];		/* QEMU's words of the KVM failure */
	char kvm_file[PATH_MAX];	/* <state>/kvm-failed: the fallback, kept; "" = no state folder */
	off_t log_mark;			/* where this power-on's part of qemu.log starts; -1 none */
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
	/* relay.keep_inputs: the crash-state inputs of the last keep power-ons (vckeep.h) */
	unsigned keep;
	char vk_root[PATH_MAX];		/* <state>/vc-inputs */
	uint64_t region_off, region_len;	/* the drive's partition "pc-region", bytes */
	char dbg_conf[PATH_MAX];	/* blkdebug's rules for this power-on */
	struct qemu_err {
		int write;		/* else read */
		uint64_t sector, from, to;	/* power-ons from..to (to 0: on and on) */
		int once;
	} errs[QEMU_MAX_ERRORS];
	size_t nerrs;
};

/* The whole command line; the strings it allocates are in strs[], freed by qemu_argv_free(). */
struct qemu_argv {
	char *argv[48 + QEMU_MAX_EXTRA];
	char *strs[12];
	size_t nstrs;
};

/* relay_qemu_config.c */
extern const char *const qemu_disks[4];	/* in enum qemu_disk order */
int qemu_cfg_ast2600(json_object *cfg);
const char *qemu_cfg_disk(json_object *cfg);
int qemu_check(json_object *cfg, char *err, size_t errlen);

/* relay_qemu_qmp.c */
int qemu_qmp_wait(struct relay *r, struct qemu_priv *p, int fd, uint64_t deadline);

/* relay_qemu_kvm.c */
int qemu_resolve_accel(struct relay *r, struct qemu_priv *p, const char *accel);
/* QEMU's words that KVM failed a guest ("KVM internal error", "emulation
 * failure", ...) in text: 1 with its line(s) in line, else 0. */
int qemu_kvm_failure(const char *text, size_t len, char *line, size_t linelen);
void qemu_kvm_remembered(struct qemu_priv *p, const char *state_dir);
void qemu_kvm_after(struct relay *r, struct qemu_priv *p);
void qemu_kvm_console_note(struct relay *r, struct qemu_priv *p);
int qemu_host_fault(const struct relay_ctx *ctx, char *why, size_t len);

/* relay_qemu_argv.c */
char *qemu_opt_escape(const char *s);
int qemu_build_argv(struct relay *r, struct qemu_priv *p, int qmp_fd, struct qemu_argv *a);
void qemu_argv_free(struct qemu_argv *a);

/* relay_qemu_disk.c */
int qemu_key_initrd(struct relay *r, struct qemu_priv *p, const char *state_dir);
int qemu_blockdev_open(struct relay *r, struct qemu_priv *p, json_object *cfg, const char *state_dir);
char *qemu_drive_match(const struct qemu_priv *p);
int qemu_vc_replay(struct relay *r, struct qemu_priv *p);
int qemu_disk_prepare(struct relay *r, struct qemu_priv *p);

#endif

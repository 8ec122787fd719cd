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
 * accel auto asks QEMU, once per process, whether KVM runs the board's own
 * kernel (a /dev/kvm that opens proves nothing: KVM can abort QEMU at its
 * first vCPU, or fail the guest kernel) and falls back to TCG, saying so
 * once; a power-on whose guest KVM fails all the same falls back too
 * (relay_qemu_kvm.c).
 *
 * Like the sim relay: QEMU leads its own process group, we reap only our own
 * pid, install no signal handlers and bound every wait. And like the sim
 * relay, QEMU must not outlive the harness (relay_group.h): it dies with it
 * (PR_SET_PDEATHSIG), and its group is on record in <state_dir>/pgid before
 * it runs, so open kills a QEMU an earlier harness left writing to the card.
 *
 * The relay's other files (relay_qemu.h lists them): its configuration, the
 * monitor and KVM probe, the command line, the files below the guest.
 */
#include "relay/relay_priv.h"
#include "vboard/relay_qemu.h"
#include "vboard/vboard.h"
#include "relay/relay_group.h"

#include "common/auth.h"
#include "common/json.h"
#include "common/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
	if (pc_jget(cfg, "serial")) {
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


/* The campaign's key (auth.h) as hex, for the guest's agent: it gets it on
 * its kernel command line (only the guest can read it); the board image's
 * init hands it over. */
static int qemu_read_key(struct relay *r, struct qemu_priv *p, const char *key_path)
{
	uint8_t k[32];
	int kfd = open(key_path, O_RDONLY | O_CLOEXEC);
	ssize_t kn = kfd >= 0 ? read(kfd, p->keyhex, 64) : -1;

	if (kfd >= 0)
		close(kfd);
	p->keyhex[kn == 64 ? 64 : 0] = 0;
	if (kn != 64 || pc_auth_unhex(p->keyhex, k, sizeof(k))) {
		relay_errf(r, "cannot read the campaign's key from %s", key_path);
		return -EINVAL;
	}
	explicit_bzero(k, sizeof(k));
	return 0;
}

/* relay.extra_args, copied (qemu_free frees them). */
static int qemu_copy_extra(struct relay *r, struct qemu_priv *p, json_object *cfg)
{
	json_object *v;

	if (!cfg || !json_object_object_get_ex(cfg, "extra_args", &v))
		return 0;
	p->extra = calloc(json_object_array_length(v) + 1, sizeof(*p->extra));
	for (size_t i = 0; p->extra && i < json_object_array_length(v); i++) {
		p->extra[i] = strdup(json_object_get_string(json_object_array_get_idx(v, i)));
		if (!p->extra[i])
			break;
		p->nextra++;
	}
	if (!p->extra || p->nextra != json_object_array_length(v)) {
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* The board's state folder: the key's initrd, QEMU's log and group record,
 * the disk's files; and a QEMU an earlier harness left there, killed. */
static int qemu_open_state(struct relay *r, struct qemu_priv *p, json_object *cfg, const char *state_dir)
{
	char note[PATH_MAX * 3 + 256], gerr[sizeof(r->err)], *match;
	int rc;

	rc = pc_mkdir_p(state_dir, 0755);
	if (rc < 0) {
		relay_errf(r, "cannot create %s: %s", state_dir, strerror(-rc));
		return rc;
	}
	if (p->keyhex[0] && (rc = qemu_key_initrd(r, p, state_dir)) < 0)
		return rc;
	if ((size_t)snprintf(p->log, sizeof(p->log), "%s/qemu.log", state_dir) >= sizeof(p->log) ||
	    (size_t)snprintf(p->pgid, sizeof(p->pgid), "%s/" RELAY_GROUP_FILE, state_dir) >= sizeof(p->pgid)) {
		relay_errf(r, "state folder %s: path too long", state_dir);
		return -ENAMETOOLONG;
	}
	rc = qemu_wants_blockdev(cfg) ? qemu_blockdev_open(r, p, cfg, state_dir) : 0;
	if (rc < 0)
		return rc;
	/* an earlier harness's QEMU would still be writing to the card */
	match = qemu_drive_match(p);
	if (!match) {
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	rc = relay_group_kill_orphans(p->pgid, match, note, sizeof(note), gerr, sizeof(gerr));
	free(match);
	if (rc < 0) {
		relay_errf(r, "%s", gerr);
		return rc;
	}
	if (note[0])
		pc_warn("board %s: relay qemu: %s", r->board, note);
	qemu_kvm_remembered(p, state_dir);
	qemu_log_note(p, r->board);
	return 0;
}

static int qemu_open(struct relay *r, json_object *cfg, const struct relay_ctx *ctx)
{
	struct qemu_priv *p = calloc(1, sizeof(*p));
	int rc, ast = qemu_cfg_ast2600(cfg);

	if (!p) {
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(qemu_disks); i++)
		if (strcmp(qemu_cfg_disk(cfg), qemu_disks[i]) == 0)
			p->disk = (enum qemu_disk)i;
	p->machine = ast ? QEMU_MACHINE_AST2600 : QEMU_MACHINE_PC;
	p->log_mark = -1;
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
	if (ctx && ctx->key_path && ctx->key_path[0] && (rc = qemu_read_key(r, p, ctx->key_path)) < 0)
		goto fail;
	if ((rc = qemu_copy_extra(r, p, cfg)) < 0)
		goto fail;
	rc = qemu_find_binary(r, p, relay_cfg_str(cfg, "qemu", ast ? QEMU_ARM_DEFAULT : QEMU_DEFAULT));
	if (rc < 0)
		goto fail;
	rc = qemu_check_files(r, p);
	if (rc < 0)
		goto fail;
	/* KVM when it works here, else TCG (what CI machines have) */
	rc = qemu_resolve_accel(r, p, ast ? "arm" : relay_cfg_str(cfg, "accel", "auto"));
	if (rc < 0)
		goto fail;
	if (ctx && ctx->state_dir) {
		if ((rc = qemu_open_state(r, p, cfg, ctx->state_dir)) < 0)
			goto fail;
	} else if (qemu_wants_blockdev(cfg)) {
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

/* A header per power-on in QEMU's log, so its messages can be matched to a
 * cycle. The log's descriptor, or -errno. */
static int qemu_open_log(struct relay *r, struct qemu_priv *p, char *const argv[])
{
	FILE *f;
	int fd;

	if (!p->log[0]) {
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	fd = open(p->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	/* this power-on's part of the log, read when it ends (qemu_kvm_after) */
	p->log_mark = lseek(fd, 0, SEEK_END);
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

/* Kill the group, reap; the board is off (or stuck in the kernel: -ETIMEDOUT). */
static int qemu_cut(struct relay *r, struct qemu_priv *p)
{
	char hint[PATH_MAX + 16];

	int rc;

	snprintf(hint, sizeof(hint), " (I/O on %s?)", p->drive);
	rc = relay_kill_group(r, &p->pid, "QEMU", hint);
	if (rc == 0 && p->pgid[0])
		relay_group_forget(p->pgid);
	/* did KVM fail the guest? then the board falls back to TCG */
	if (rc == 0)
		qemu_kvm_after(r, p);
	/* the power is off: what the cache held and had not written is lost now */
	if (rc == 0 && p->vc)
		rc = qemu_vc_replay(r, p);
	return rc;
}


/*
 * fork+exec QEMU in its own group (relay_spawn_gated), as sim_spawn starts an
 * agent: stdin from /dev/null, its output to the log, signals at their
 * defaults, none of the harness's descriptors but QEMU's end of the QMP
 * socket; 0 with p->pid set, or -errno with r->err.
 */
static int qemu_spawn(struct relay *r, struct qemu_priv *p, int qmp[2], struct qemu_argv *a)
{
	char note[PATH_MAX + 16];
	const struct relay_spawn_names names = {
		.what = "QEMU", .whose = "QEMU's", .pgid = p->pgid[0] ? p->pgid : NULL, .setup_note = note,
		.run_what = "", .run_hint = "",
	};
	struct pc_spawn s;
	int logfd, rc;

	snprintf(note, sizeof(note), " (log %s)", p->log[0] ? p->log : "/dev/null");
	logfd = qemu_open_log(r, p, a->argv);
	if (logfd < 0) {
		relay_errf(r, "cannot set up to run %s%s: %s", p->qemu, note, strerror(-logfd));
		return logfd;
	}
	pc_spawn_init(&s);
	s.flags = PC_SPAWN_SIGDFL | PC_SPAWN_CLOEXEC | PC_SPAWN_EXEC_ERR;
	s.fd_out = s.fd_err = logfd;
	s.fd_keep = qmp[1];
	rc = relay_spawn_gated(r, &names, &s, a->argv, &p->pid);
	close(logfd);
	return rc;
}

static int qemu_get(struct relay *r)
{
	struct qemu_priv *p = r->priv;

	if (!p->pid)
		return 0;
	if (relay_child_running(p->pid))
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
	qemu_kvm_console_note(r, p);
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
		qemu_kvm_after(r, p);
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

/* "qemu:DRIVE": the virtual board is its disk image, wherever its results
 * go (two campaigns booting one image would write one medium); the real
 * path, so two names of one file are one board. */
static int qemu_ident(json_object *cfg, char *buf, size_t len)
{
	const char *drive = relay_cfg_str(cfg, "drive", "?");
	char *real = realpath(drive, NULL);

	snprintf(buf, len, "qemu:%s", real ? real : drive);
	free(real);
	return 0;
}

const struct relay_ops relay_qemu_ops = {
	.ident = qemu_ident,
	.host_fault = qemu_host_fault,
	.name = "qemu",
	.check = qemu_check,
	.open = qemu_open,
	.on = qemu_on,
	.off = qemu_off,
	.get = qemu_get,
	.close = qemu_close,
	.caps = RELAY_CAP_VIRTUAL,
};

int vboard_register(void)
{
	return relay_register(&relay_qemu_ops);
}

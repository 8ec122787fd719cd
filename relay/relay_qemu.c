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
 * Like the sim relay: QEMU leads its own process group, we reap only our own
 * pid, install no signal handlers and bound every wait. And like the sim
 * relay, QEMU must not outlive the harness (relay_group.h): it dies with it
 * (PR_SET_PDEATHSIG), and its group is on record in <state_dir>/pgid before
 * it runs, so open kills a QEMU an earlier harness left writing to the card.
 */
#include "relay_priv.h"
#include "relay_group.h"

#include "../common/auth.h"

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

#include "../common/util.h"

#define QEMU_DEFAULT	"qemu-system-x86_64"
#define QEMU_MAX_EXTRA	64
#define QEMU_QMP_LINE	4096

struct qemu_priv {
	char qemu[PATH_MAX];		/* resolved binary */
	char kernel[PATH_MAX], initrd[PATH_MAX], drive[PATH_MAX], console[PATH_MAX];
	char log[PATH_MAX];		/* QEMU's stdout/stderr; "" = /dev/null */
	char pgid[PATH_MAX];		/* the record of QEMU's group; "" = no state folder */
	char append[1024];
	char keyhex[72];	/* the campaign's key (auth.h), for the guest's agent */
	char accel[8];			/* "kvm" or "tcg", resolved at open */
	char cache[16];
	char **extra;
	size_t nextra;
	int memory_mb, timeout_ms;
	pid_t pid;			/* QEMU, leader of its process group; 0 when off */
};

static int qemu_key_initrd(struct relay *r, struct qemu_priv *p, const char *state_dir);

static const char *const qemu_keys[] = {
	"driver", "kernel", "initrd", "drive", "console", "append", "memory_mb", "extra_args",
	"qemu", "accel", "cache", "timeout_ms",
};

static const char *const qemu_accels[] = { "auto", "kvm", "tcg" };
/* Modes where a write the guest saw complete is in the file (or the host's
 * page cache, which outlives QEMU): never one that buffers in QEMU. */
static const char *const qemu_caches[] = { "none", "directsync", "writethrough", "writeback" };

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
		rc = relay_check_string(cfg, "drive", 1, "the SD card image, e.g. a copy of build/vm/sd.img", err,
					errlen);
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

	const char *const files[][2] = { { "kernel", p->kernel }, { "initrd", p->initrd } };

	for (size_t i = 0; i < PC_ARRAY_SIZE(files); i++) {
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
	/* QEMU's sd-card refuses other sizes, but only after a few hundred ms */
	if (S_ISREG(st.st_mode) && (st.st_size <= 0 || (st.st_size & (st.st_size - 1)))) {
		relay_errf(r, "drive %s: %" PRId64 " bytes; QEMU's SD card must be a power of two in size "
			   "(tools/mkboard --sd-size)", p->drive, (int64_t)st.st_size);
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

static int qemu_open(struct relay *r, json_object *cfg, const struct relay_ctx *ctx)
{
	struct qemu_priv *p = calloc(1, sizeof(*p));
	const char *accel;
	json_object *v;
	int rc, fd;

	if (!p) {
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	p->memory_mb = (int)relay_cfg_int(cfg, "memory_mb", 256);
	p->timeout_ms = (int)relay_cfg_int(cfg, "timeout_ms", 10000);
	if ((rc = qemu_copy(r, p->kernel, sizeof(p->kernel), cfg, "kernel", "")) ||
	    (rc = qemu_copy(r, p->initrd, sizeof(p->initrd), cfg, "initrd", "")) ||
	    (rc = qemu_copy(r, p->drive, sizeof(p->drive), cfg, "drive", "")) ||
	    (rc = qemu_copy(r, p->console, sizeof(p->console), cfg, "console", "")) ||
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
	rc = qemu_find_binary(r, p, relay_cfg_str(cfg, "qemu", QEMU_DEFAULT));
	if (rc < 0)
		goto fail;
	/* KVM when this host can, else TCG: CI machines rarely have /dev/kvm */
	accel = relay_cfg_str(cfg, "accel", "auto");
	if (strcmp(accel, "auto") == 0) {
		fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
		accel = fd >= 0 ? "kvm" : "tcg";
		if (fd >= 0)
			close(fd);
	}
	pc_strlcpy(p->accel, accel, sizeof(p->accel));
	rc = qemu_check_files(r, p);
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
		/* an earlier harness's QEMU would still be writing to the card */
		{
			char note[PATH_MAX * 3 + 256], gerr[sizeof(r->err)], *match;
			char *drive = qemu_opt_escape(p->drive);

			/* the -drive option names the image as qemu_build_argv() wrote it */
			size_t mlen = drive ? strlen(drive) + 8 : 0;

			match = drive ? malloc(mlen) : NULL;
			if (!match) {
				free(drive);
				relay_errf(r, "out of memory");
				rc = -ENOMEM;
				goto fail;
			}
			snprintf(match, mlen, "file=%s", drive);
			free(drive);
			rc = relay_group_kill_orphans(p->pgid, match, note, sizeof(note), gerr, sizeof(gerr));
			free(match);
			if (rc < 0) {
				relay_errf(r, "%s", gerr);
				goto fail;
			}
			if (note[0])
				pc_warn("board %s: relay qemu: %s", r->board, note);
		}
	}
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
	char *strs[8];
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

static int qemu_build_argv(struct relay *r, struct qemu_priv *p, int qmp_fd, struct qemu_argv *a)
{
	char *drive = qemu_opt_escape(p->drive), *tty = qemu_opt_escape(p->console);
	char *mem, *append, *sdopt, *ttyopt, *qmpopt;
	size_t n = 0;

	memset(a, 0, sizeof(*a));
	if (drive)
		a->strs[a->nstrs++] = drive;
	if (tty)
		a->strs[a->nstrs++] = tty;
	mem = qemu_argv_fmt(a, "%d", p->memory_mb);
	/* panic=-1 with -no-reboot: a guest that panics powers itself off, which
	 * get() then reports, rather than rebooting behind the harness's back */
	append = qemu_argv_fmt(a, "console=ttyS0,115200 panic=-1 pc.board=%s%s%s", r->board,
			       p->append[0] ? " " : "", p->append);
	sdopt = drive ? qemu_argv_fmt(a, "id=sd,if=none,format=raw,cache=%s,file=%s", p->cache, drive) : NULL;
	ttyopt = tty ? qemu_argv_fmt(a, "serial,id=pcser,path=%s", tty) : NULL;
	qmpopt = qemu_argv_fmt(a, "socket,id=pcqmp,fd=%d", qmp_fd);
	if (!drive || !tty || !mem || !append || !sdopt || !ttyopt || !qmpopt) {
		qemu_argv_free(a);
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	a->argv[n++] = p->qemu;
	/* no default NIC, VGA, floppy or CD: a board with an SD card and a UART */
	a->argv[n++] = "-nodefaults";
	a->argv[n++] = "-nographic";
	a->argv[n++] = "-no-reboot";
	a->argv[n++] = "-accel";
	a->argv[n++] = p->accel;
	/* TCG's default qemu64 CPU lacks SSE4.2: the agent would fall back to
	 * table CRC32C, several times slower over every scan */
	a->argv[n++] = "-cpu";
	a->argv[n++] = strcmp(p->accel, "kvm") == 0 ? "host" : "max";
	a->argv[n++] = "-m";
	a->argv[n++] = mem;
	a->argv[n++] = "-kernel";
	a->argv[n++] = p->kernel;
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
	a->argv[n++] = "-device";
	a->argv[n++] = "sdhci-pci";
	a->argv[n++] = "-device";
	a->argv[n++] = "sd-card,drive=sd";
	a->argv[n++] = "-drive";
	a->argv[n++] = sdopt;
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
	return rc;
}

/* Send one QMP command; the socket is fresh and the lines short. */
static int qemu_qmp_send(int fd, const char *cmd)
{
	return pc_write_all(fd, cmd, strlen(cmd));
}

/*
 * Wait for QEMU to run the machine: the greeting (sent early, from the
 * monitor's own thread), then the answer to query-status (sent from the
 * main loop, so only once the machine is set up). 0 when it runs; -EPIPE if
 * QEMU went away; -ETIMEDOUT; -EPROTO with what it said instead.
 */
static int qemu_qmp_wait(struct relay *r, struct qemu_priv *p, int fd, uint64_t deadline)
{
	char buf[QEMU_QMP_LINE];
	size_t len = 0;
	int stage = 0;	/* 0 greeting, 1 capabilities answer, 2 status answer */

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char *nl;
		ssize_t n;
		int ms = relay_ms_left(deadline);

		if (ms == 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, ms) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!pfd.revents)
			continue;
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -EPIPE;
		len += (size_t)n;
		buf[len] = 0;
		while ((nl = strchr(buf, '\n')) != NULL) {
			json_object *o, *ret;
			int rc = 0;

			*nl = 0;
			o = json_tokener_parse(buf);
			if (o && stage == 0 && json_object_object_get_ex(o, "QMP", NULL)) {
				stage = 1;
				rc = qemu_qmp_send(fd, "{\"execute\": \"qmp_capabilities\"}\n");
			} else if (o && json_object_object_get_ex(o, "error", NULL)) {
				relay_errf(r, "QEMU's monitor answered %.200s; see %s", buf,
					   p->log[0] ? p->log : "(no log)");
				rc = -EPROTO;
			} else if (o && json_object_object_get_ex(o, "return", &ret) && stage == 1) {
				stage = 2;
				rc = qemu_qmp_send(fd, "{\"execute\": \"query-status\"}\n");
			} else if (o && json_object_object_get_ex(o, "return", &ret) && stage == 2) {
				json_object_put(o);
				return 0;
			}
			/* anything else is an event: keep reading */
			json_object_put(o);
			if (rc < 0)
				return rc;
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
		if (len == sizeof(buf) - 1)
			len = 0;	/* a line longer than any answer we wait for: drop it */
	}
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

const struct relay_ops relay_qemu_ops = {
	.name = "qemu",
	.check = qemu_check,
	.open = qemu_open,
	.on = qemu_on,
	.off = qemu_off,
	.get = qemu_get,
	.close = qemu_close,
};

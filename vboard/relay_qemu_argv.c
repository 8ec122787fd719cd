/*
 * relay_qemu_argv.c - QEMU's command line for a power-on: the machine (the
 * PC or the AST2600 evaluation board), the kernel and its command line, the
 * serial cable, the monitor, the disk with the filter stack below it
 * (blkdebug, blklogwrites: as -blockdev JSON on the PC, -drive's dotted keys
 * on the eMMC board) and the traces the volatile cache reads back.
 */
#include "relay/relay_priv.h"
#include "vboard/relay_qemu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* QEMU's option parser splits on ',': a literal comma is written twice. */
char *qemu_opt_escape(const char *s)
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

void qemu_argv_free(struct qemu_argv *a)
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


/* Append the strings up to NULL to the command line at *n. */
static void qemu_argv_add(struct qemu_argv *a, size_t *n, ...)
{
	va_list ap;
	char *s;

	va_start(ap, n);
	while ((s = va_arg(ap, char *)) != NULL && *n < PC_ARRAY_SIZE(a->argv) - 1)
		a->argv[(*n)++] = s;
	va_end(ap);
}

/* The disk's -drive or -blockdev value, kept in a->strs; NULL when out of memory. */
static char *qemu_argv_disk(struct qemu_argv *a, const struct qemu_priv *p, const char *id, const char *drive)
{
	char *sdopt = NULL;

	if (p->machine == QEMU_MACHINE_AST2600) {
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
	return sdopt;
}

/* The disk's -device: "" for the eMMC (the machine makes it); NULL when out of memory. */
static char *qemu_argv_device(struct qemu_argv *a, const struct qemu_priv *p, const char *serial)
{
	/* the FUA board's disks: a volatile write cache the guest is told
	 * about, and FUA (scsi-hd says DPOFUA only when asked to; with relay.fua
	 * false it does not, and the guest's block layer emulates FUA with
	 * flushes) */
	if (p->disk == QEMU_DISK_SCSI && serial)
		return qemu_argv_fmt(a, "scsi-hd,bus=pcscsi.0,drive=disk,serial=%s,write-cache=on,dpofua=%s", serial,
				     p->fua ? "on" : "off");
	if (p->disk == QEMU_DISK_NVME && serial)
		return qemu_argv_fmt(a, "nvme,drive=disk,serial=%s,write-cache=on", serial);
	if (p->disk == QEMU_DISK_SD)
		return qemu_argv_fmt(a, "sd-card,drive=sd");
	if (p->disk == QEMU_DISK_EMMC)
		return "";	/* the machine makes it, from the drive */
	return NULL;
}

/* The machine: the AST2600 evaluation board, or a PC with nothing but what we add. */
static void qemu_argv_machine(struct qemu_argv *a, size_t *n, const struct qemu_priv *p)
{
	if (p->machine == QEMU_MACHINE_AST2600)
		/* The evaluation board; not -nodefaults: QEMU 10's Aspeed machines
		 * attach their SD and eMMC drives only with the defaults on (and
		 * their three sd-bus are one name to -device). Its defaults are
		 * a UART (ours, below), a monitor (QMP, below), NICs without a peer;
		 * no sound card to probe host audio drivers for (nor modules to
		 * load from the host's own QEMU's folder). */
		qemu_argv_add(a, n, "-M", "ast2600-evb", "-net", "none", "-audio", "none", NULL);
	else
		/* no default NIC, VGA, floppy or CD: a board with a disk and a UART */
		qemu_argv_add(a, n, "-nodefaults", NULL);
	qemu_argv_add(a, n, "-nographic", "-no-reboot", "-accel", p->accel, NULL);
	if (p->machine != QEMU_MACHINE_AST2600)
		/* TCG's default qemu64 CPU lacks SSE4.2: the agent would fall back to
		 * table CRC32C, several times slower over every scan */
		qemu_argv_add(a, n, "-cpu", strcmp(p->accel, "kvm") == 0 ? "host" : "max", NULL);
}

/* What the volatile cache reads back from QEMU's stderr (its log). */
static void qemu_argv_trace(struct qemu_argv *a, size_t *n, const struct qemu_priv *p)
{
	if (p->vc && p->disk == QEMU_DISK_EMMC)
		/* which writes were reliable writes: the MMC commands (CMD23's
		 * bit 31) and the blocks the card wrote */
		qemu_argv_add(a, n, "-trace", "sdcard_normal_command", "-trace", "sdcard_write_block", NULL);
	else if (p->vc)
		/* which WRITEs carried FUA: the SCSI commands */
		qemu_argv_add(a, n, "-trace", "scsi_disk_new_request", NULL);
	if (p->keep)
		/* when each command completed, by tag: the kept log's order (vckeep.h) */
		qemu_argv_add(a, n, "-trace", "scsi_req_dequeue", NULL);
}

int qemu_build_argv(struct relay *r, struct qemu_priv *p, int qmp_fd, struct qemu_argv *a)
{
	char *drive = qemu_opt_escape(p->drive), *tty = qemu_opt_escape(p->console);
	char *serial = qemu_opt_escape(p->serial);
	char *mem, *append, *sdopt, *ttyopt, *qmpopt, *devopt;
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
	sdopt = qemu_argv_disk(a, p, id, drive);
	ttyopt = tty ? qemu_argv_fmt(a, "serial,id=pcser,path=%s", tty) : NULL;
	qmpopt = qemu_argv_fmt(a, "socket,id=pcqmp,fd=%d", qmp_fd);
	devopt = qemu_argv_device(a, p, serial);
	if (!drive || !tty || !serial || !mem || !append || !sdopt || !ttyopt || !qmpopt || !devopt) {
		qemu_argv_free(a);
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	a->argv[n++] = p->qemu;
	qemu_argv_machine(a, &n, p);
	qemu_argv_add(a, &n, "-m", mem, "-kernel", p->kernel, NULL);
	if (ast)
		qemu_argv_add(a, &n, "-dtb", p->dtb, NULL);
	qemu_argv_add(a, &n, "-initrd", p->initrd, "-append", append, "-chardev", ttyopt, "-serial", "chardev:pcser",
		      "-chardev", qmpopt, "-mon", "chardev=pcqmp,mode=control", NULL);
	if (p->disk == QEMU_DISK_SD || p->disk == QEMU_DISK_SCSI)
		/* the card's or the disk's host controller */
		qemu_argv_add(a, &n, "-device", p->disk == QEMU_DISK_SD ? "sdhci-pci" : "virtio-scsi-pci,id=pcscsi",
			      NULL);
	if (devopt[0])
		qemu_argv_add(a, &n, "-device", devopt, NULL);
	qemu_argv_add(a, &n, p->blockdev && !ast ? "-blockdev" : "-drive", sdopt, NULL);
	qemu_argv_trace(a, &n, p);
	for (size_t i = 0; i < p->nextra; i++)
		a->argv[n++] = p->extra[i];
	a->argv[n] = NULL;
	return 0;
}

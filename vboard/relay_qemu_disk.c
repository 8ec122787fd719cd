/*
 * relay_qemu_disk.c - the files below the guest, in the board's state
 * folder: the initrd that carries the campaign's key, the count of
 * power-ons, the volatile cache's scratch image and log (replayed onto the
 * drive at each cut, vcache.h) and blkdebug's rules for each power-on.
 */
#include "relay/relay_priv.h"
#include "vboard/relay_qemu.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

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
int qemu_key_initrd(struct relay *r, struct qemu_priv *p, const char *state_dir)
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

int qemu_blockdev_open(struct relay *r, struct qemu_priv *p, json_object *cfg, const char *state_dir)
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
	p->keep = (unsigned)relay_cfg_int(cfg, "keep_inputs", 0);
	if (p->keep) {
		char err[sizeof(r->err) - 16];

		if ((rc = qemu_state_path(r, p->vk_root, sizeof(p->vk_root), state_dir, "vc-inputs")))
			return rc;
		if ((rc = vk_region_find(p->drive, &p->region_off, &p->region_len, err, sizeof(err)))) {
			relay_errf(r, "%s", err);
			return rc;
		}
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
char *qemu_drive_match(const struct qemu_priv *p)
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
int qemu_vc_replay(struct relay *r, struct qemu_priv *p)
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
	if (p->keep) {
		struct vk_session ks = { p->vk_root, vp.power_on, p->keep, p->drive, p->region_off, p->region_len };

		/* the rebuilt drive is the session's after.img; the log and trace its writes.log */
		rc = vk_finish(&ks, p->vc_log, p->log, vp.trace_off, vc_profile_name(p->vc_profile), err, sizeof(err));
		if (rc) {
			relay_errf(r, "%s", err);
			return rc;
		}
	}
	unlink(p->vc_pending);
	return 0;
}

/* At power-on: the last power-on's log replayed, a fresh scratch image and log, the errors of this one. */
int qemu_disk_prepare(struct relay *r, struct qemu_priv *p)
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
	if (p->keep) {
		struct vk_session ks = { p->vk_root, p->power_on, p->keep, p->drive, p->region_off, p->region_len };
		char err[sizeof(r->err) - 16];

		/* the region as this power-on finds it: the session's base.img */
		if ((rc = vk_begin(&ks, err, sizeof(err)))) {
			relay_errf(r, "%s", err);
			return rc;
		}
	}
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

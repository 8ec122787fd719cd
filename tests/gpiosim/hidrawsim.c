/*
 * hidrawsim.c - an LD_PRELOAD simulation of a dcttech USB HID relay board
 * behind /dev/hidrawN, for testing relay_hidrelay.c without the board.
 *
 * It plays both the kernel's hidraw ioctls and the board's V-USB firmware:
 *   HIDIOCGRAWINFO       bus USB, the board's vendor/product
 *   HIDIOCGRAWNAME(len)  "www.dcttech.com USBRelay2", truncated to len like the kernel
 *   HIDIOCSFEATURE(len)  a set report: [0, 0xFF|0xFD, ch, ...] switches channel
 *                        ch on|off, [0, 0xFE|0xFC, ...] all on|off; returns len
 *   HIDIOCGFEATURE(len)  with buf[0] the report number; the board answers 8
 *                        bytes (serial[5], 0, 0, state) into buf[0..7], like
 *                        the kernel does for a non-zero report number; returns 8
 * Every ioctl is appended to $HIDRAWSIM_LOG as one line of hex ("SFEATURE 9:
 * 00 ff 01 00 00 00 00 00 00"), so a test checks the exact bytes sent.
 *
 * The boards live in the text file $HIDRAWSIM_STATE, rewritten under flock():
 *   hidraw0 vid=16c0 pid=05df serial=PCSIM state=00 hang_ms=0 fail=0 ignore=0 name=www.dcttech.com USBRelay2
 * state is the relay bitmask (hex); hang_ms makes set reports take that long
 * (a board that hangs on a command); fail=N fails ioctls with errno N (EPIPE: a stalled board);
 * ignore=1 accepts set reports without switching (a dead relay). name runs to
 * the end of the line.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/hidraw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define HS_DEVS	8
#define HS_FDS	32

struct hs_dev {
	char node[32], serial[8], name[128];
	unsigned int vid, pid, state, hang_ms, fail, ignore;
};

struct hs_fd {
	int fd;
	char node[32];
};

static struct hs_fd hs_fds[HS_FDS];

static int (*real_open)(const char *, int, ...);
static int (*real_close)(int);
static int (*real_ioctl)(int, unsigned long, ...);

int hidrawsim_loaded(void);
int hidrawsim_loaded(void)
{
	return 1;
}

static void *hs_next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f) {
		fprintf(stderr, "hidrawsim: cannot find the real %s\n", name);
		abort();
	}
	return f;
}

static void hs_init(void)
{
	if (!real_open) {
		real_open = hs_next("open");
		real_close = hs_next("close");
		real_ioctl = hs_next("ioctl");
	}
}

static void hs_parse(struct hs_dev *d, char *line)
{
	char *name = strstr(line, " name=");
	char *save = NULL, *tok;

	memset(d, 0, sizeof(*d));
	if (name) {
		*name = 0;
		snprintf(d->name, sizeof(d->name), "%s", name + 6);
		d->name[strcspn(d->name, "\n")] = 0;
	}
	tok = strtok_r(line, " \t\n", &save);
	if (!tok)
		return;
	snprintf(d->node, sizeof(d->node), "%s", tok);
	while ((tok = strtok_r(NULL, " \t\n", &save))) {
		sscanf(tok, "vid=%x", &d->vid);
		sscanf(tok, "pid=%x", &d->pid);
		sscanf(tok, "state=%x", &d->state);
		sscanf(tok, "hang_ms=%u", &d->hang_ms);
		sscanf(tok, "fail=%u", &d->fail);
		sscanf(tok, "ignore=%u", &d->ignore);
		if (strncmp(tok, "serial=", 7) == 0)
			snprintf(d->serial, sizeof(d->serial), "%.5s", tok + 7);
	}
}

/* Load the boards under flock; the fd (or -1) and the count. */
static int hs_lock(struct hs_dev *devs, int *n)
{
	const char *path = getenv("HIDRAWSIM_STATE");
	char buf[4096], *line, *save = NULL;
	ssize_t len;
	int fd;

	hs_init();
	*n = 0;
	if (!path || !*path)
		return -1;
	fd = real_open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	flock(fd, LOCK_EX);
	len = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[len > 0 ? len : 0] = 0;
	for (line = strtok_r(buf, "\n", &save); line && *n < HS_DEVS; line = strtok_r(NULL, "\n", &save))
		if (line[0] != '#')
			hs_parse(&devs[(*n)++], line);
	return fd;
}

static void hs_unlock(int fd, const struct hs_dev *devs, int n, int save)
{
	if (save) {
		char buf[4096];
		size_t len = 0;

		for (int i = 0; i < n && len < sizeof(buf); i++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len,
						"%s vid=%04x pid=%04x serial=%s state=%02x hang_ms=%u fail=%u ignore=%u name=%s\n",
						devs[i].node, devs[i].vid, devs[i].pid, devs[i].serial, devs[i].state,
						devs[i].hang_ms, devs[i].fail, devs[i].ignore, devs[i].name);
		if (len > sizeof(buf))
			len = sizeof(buf);
		if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, len, 0) != (ssize_t)len)
			fprintf(stderr, "hidrawsim: cannot rewrite the state file\n");
	}
	flock(fd, LOCK_UN);
	real_close(fd);
}

static void hs_log(const char *what, const unsigned char *b, size_t len)
{
	const char *path = getenv("HIDRAWSIM_LOG");
	char line[512];
	size_t n;
	int fd;

	if (!path || !*path)
		return;
	n = (size_t)snprintf(line, sizeof(line), "%s %zu:", what, len);
	for (size_t i = 0; i < len && n + 4 < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %02x", b[i]);
	line[n++] = '\n';
	fd = real_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, n) != (ssize_t)n)
		fprintf(stderr, "hidrawsim: short write to %s\n", path);
	real_close(fd);
}

static int hs_fail(int e)
{
	errno = e;
	return -1;
}

/* The board's firmware and the kernel's hidraw ioctls. */
static int hs_ioctl(struct hs_dev *d, unsigned long req, void *arg, int *dirty)
{
	unsigned int nr = _IOC_NR(req), size = _IOC_SIZE(req);
	unsigned char *b = arg;

	if (d->fail)
		return hs_fail((int)d->fail);
	if (req == HIDIOCGRAWINFO) {
		struct hidraw_devinfo *info = arg;

		hs_log("GRAWINFO", NULL, 0);
		info->bustype = 3;	/* BUS_USB */
		info->vendor = (__s16)d->vid;
		info->product = (__s16)d->pid;
		return 0;
	}
	if (_IOC_TYPE(req) != 'H')
		return hs_fail(ENOTTY);
	if (nr == _IOC_NR(HIDIOCGRAWNAME(0))) {
		size_t len = strlen(d->name) + 1;

		hs_log("GRAWNAME", NULL, 0);
		if (len > size)
			len = size;
		memcpy(arg, d->name, len);
		return (int)len;
	}
	if (nr == _IOC_NR(HIDIOCSFEATURE(0))) {
		hs_log("SFEATURE", b, size);
		if (size < 3)
			return hs_fail(EINVAL);
		if (d->ignore)
			return (int)size;
		if (b[1] == 0xFF && b[2] >= 1 && b[2] <= 8)
			d->state |= 1u << (b[2] - 1);
		else if (b[1] == 0xFD && b[2] >= 1 && b[2] <= 8)
			d->state &= ~(1u << (b[2] - 1));
		else if (b[1] == 0xFE)
			d->state = 0xff;
		else if (b[1] == 0xFC)
			d->state = 0;
		*dirty = 1;
		return (int)size;
	}
	if (nr == _IOC_NR(HIDIOCGFEATURE(0))) {
		unsigned char rep[8] = { 0 };

		hs_log("GFEATURE", b, size);
		if (size < 1)
			return hs_fail(EINVAL);
		memcpy(rep, d->serial, strlen(d->serial));
		rep[7] = (unsigned char)d->state;
		memcpy(b, rep, size < 8 ? size : 8);
		return size < 8 ? (int)size : 8;
	}
	return hs_fail(EINVAL);
}

static const char *hs_node(const char *path)
{
	return path && strncmp(path, "/dev/hidraw", 11) == 0 ? path + 5 : NULL;
}

int open(const char *path, int flags, ...)
{
	struct hs_dev devs[HS_DEVS];
	const char *node = hs_node(path);
	va_list ap;
	mode_t mode = 0;
	int n, fd, found = -1;

	va_start(ap, flags);
	if (flags & O_CREAT)
		mode = (mode_t)va_arg(ap, int);
	va_end(ap);
	hs_init();
	if (!node)
		return real_open(path, flags, mode);
	fd = hs_lock(devs, &n);
	if (fd < 0)
		return real_open(path, flags, mode);
	for (int i = 0; i < n; i++)
		if (strcmp(devs[i].node, node) == 0)
			found = i;
	hs_unlock(fd, devs, n, 0);
	if (found < 0)
		return hs_fail(ENOENT);
	fd = real_open("/dev/null", O_RDWR | (flags & O_CLOEXEC));
	for (int i = 0; fd >= 0 && i < HS_FDS; i++)
		if (hs_fds[i].node[0] == 0) {
			hs_fds[i].fd = fd;
			snprintf(hs_fds[i].node, sizeof(hs_fds[i].node), "%s", node);
			return fd;
		}
	if (fd >= 0)
		real_close(fd);
	return hs_fail(EMFILE);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int close(int fd)
{
	hs_init();
	for (int i = 0; i < HS_FDS; i++)
		if (hs_fds[i].node[0] && hs_fds[i].fd == fd)
			hs_fds[i].node[0] = 0;
	return real_close(fd);
}

int ioctl(int fd, unsigned long req, ...)
{
	struct hs_dev devs[HS_DEVS];
	const char *node = NULL;
	int n, lfd, rc, dirty = 0, e;
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	hs_init();
	for (int i = 0; i < HS_FDS; i++)
		if (hs_fds[i].node[0] && hs_fds[i].fd == fd)
			node = hs_fds[i].node;
	if (!node)
		return real_ioctl(fd, req, arg);
	req = (unsigned int)req;	/* the kernel's cmd is 32 bits; an int arrives sign-extended */
	lfd = hs_lock(devs, &n);
	if (lfd < 0)
		return hs_fail(ENODEV);
	rc = hs_fail(ENODEV);	/* unplugged since it was opened */
	for (int i = 0; i < n; i++)
		if (strcmp(devs[i].node, node) == 0) {
			/* Hold no lock while "hanging": others may look meanwhile. */
			if (devs[i].hang_ms && _IOC_NR(req) == _IOC_NR(HIDIOCSFEATURE(0))) {
				unsigned int ms = devs[i].hang_ms;

				hs_unlock(lfd, devs, n, 0);
				usleep(ms * 1000);
				lfd = hs_lock(devs, &n);
				if (lfd < 0)
					return hs_fail(ENODEV);
				if (i >= n || strcmp(devs[i].node, node)) {
					hs_unlock(lfd, devs, n, 0);
					return hs_fail(ENODEV);
				}
			}
			rc = hs_ioctl(&devs[i], req, arg, &dirty);
			break;
		}
	e = errno;
	hs_unlock(lfd, devs, n, dirty);
	errno = e;
	return rc;
}

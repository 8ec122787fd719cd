/*
 * gpiosim.c - an LD_PRELOAD simulation of the Linux GPIO character device.
 *
 * No GPIO hardware and no gpio-sim kernel module here, so this shim plays the
 * kernel for the real libgpiod (1.6 and 2.x): it makes /dev/gpiochipN exist
 * and answers the calls libgpiod makes, exactly where libgpiod makes them:
 *
 *   lstat/stat /dev/gpiochipN       a character device, rdev 254:N
 *   access/open /sys/bus/gpio/devices/gpiochipN/dev   "254:N" (libgpiod 1.x check)
 *   realpath /sys/dev/char/254:N/subsystem            "/sys/bus/gpio" (2.x check)
 *   scandir /dev                    lists the fake chips (chip lookup by label)
 *   open /dev/gpiochipN             a real fd (of /dev/null) we track as the chip
 *   ioctl chip fd                   GPIO_GET_CHIPINFO, GPIO_GET_LINEINFO (v1 uAPI),
 *                                   GPIO_GET_LINEHANDLE (v1), GPIO_V2_GET_LINEINFO,
 *                                   GPIO_V2_GET_LINE (v2)
 *   ioctl request fd                GPIOHANDLE_{GET,SET}_LINE_VALUES (v1),
 *                                   GPIO_V2_LINE_{GET,SET}_VALUES (v2)
 *   close request fd                releases the lines
 *
 * with the kernel's rules: a requested line is busy (EBUSY) for everyone
 * else, values cross the uAPI as logical values (active-low applied by the
 * "kernel"), setting an input is EPERM, bad offsets and non-zero padding are
 * EINVAL, and a released line stops being driven: like gpio-sim, it falls
 * back to its pull level.
 *
 * The "hardware" is a text file named by $GPIOSIM_STATE, shared by every
 * process and rewritten under flock() on each change, so a test reads the
 * physical levels and who holds each line:
 *
 *   chip gpiochip0 lines=8 label=powercut-sim
 *   line gpiochip0 3 value=0 pull=0 dir=in active_low=0 owner=0 name=relay-b1 consumer=
 *
 * value is the physical level, owner the pid holding the request (0: free;
 * a dead owner's lines are freed on the next access, as the kernel does when
 * a process exits). GPIOSIM_DEBUG=1 traces every ioctl to stderr.
 * Two more fields play what the real kernel showed on the relay-host VM
 * (docs/relays.md#the-gpio-relay-on-a-real-kernel, t-vm-gpiohost.sh):
 *   keep=1  a released line (closed, or its process killed) stays an output,
 *           still driven at its level: gpio-aspeed, unlike gpio-sim
 *   late=1  an output request on a line that was an input leaves it at its
 *           old level until the next set: QEMU's AST2600 GPIO model drops
 *           the data latch gpio-aspeed writes before the direction
 *
 * Built without the project's _FILE_OFFSET_BITS so it can define both open
 * and open64, stat and stat64, scandir and scandir64.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/gpio.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define SIM_MAJOR	254
#define SIM_CHIPS	8
#define SIM_LINES	64
#define SIM_FDS		64

struct sim_line {
	int value, pull, out, active_low;
	int keep;		/* a released line stays driven (gpio-aspeed) */
	int late;		/* an output request on an input drives the old level (QEMU's AST2600) */
	long owner;
	char name[32], consumer[32];
};

struct sim_chip {
	char name[32], label[32];
	unsigned int nlines;
	struct sim_line line[SIM_LINES];
};

struct sim_state {
	int nchips;
	struct sim_chip chip[SIM_CHIPS];
};

/* This process's fds onto the fake devices. */
enum { FD_NONE, FD_CHIP, FD_HANDLE_V1, FD_LINE_V2 };

struct sim_fd {
	int fd, kind;
	char chip[32];
	unsigned int n, offsets[SIM_LINES];
};

static struct sim_fd sim_fds[SIM_FDS];

static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_close)(int);
static int (*real_ioctl)(int, unsigned long, ...);
static int (*real_stat)(const char *, struct stat *);
static int (*real_lstat)(const char *, struct stat *);
static int (*real_access)(const char *, int);
static char *(*real_realpath)(const char *, char *);
static int (*real_scandir)(const char *, struct dirent ***, int (*)(const struct dirent *),
			   int (*)(const struct dirent **, const struct dirent **));

/* Exported so a test can tell the shim is loaded. */
int gpiosim_loaded(void);
int gpiosim_loaded(void)
{
	return 1;
}

static void *sim_next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f) {
		fprintf(stderr, "gpiosim: cannot find the real %s\n", name);
		abort();
	}
	return f;
}

#define SIM_REAL(fn) do { if (!real_##fn) real_##fn = sim_next(#fn); } while (0)

/* --- the state file ------------------------------------------------------ */

static const char *sim_path(void)
{
	const char *p = getenv("GPIOSIM_STATE");

	return p && *p ? p : NULL;
}

static void sim_field(const char *tok, const char *key, char *out, size_t len)
{
	size_t k = strlen(key);

	if (strncmp(tok, key, k) == 0 && tok[k] == '=')
		snprintf(out, len, "%s", tok + k + 1);
}

static void sim_parse_line(struct sim_state *s, char *text)
{
	char *save = NULL, *tok = strtok_r(text, " \t\n", &save);

	if (!tok)
		return;
	if (strcmp(tok, "chip") == 0 && s->nchips < SIM_CHIPS) {
		struct sim_chip *c = &s->chip[s->nchips];
		char lines[16] = "0";

		memset(c, 0, sizeof(*c));
		tok = strtok_r(NULL, " \t\n", &save);
		if (!tok)
			return;
		snprintf(c->name, sizeof(c->name), "%s", tok);
		while ((tok = strtok_r(NULL, " \t\n", &save))) {
			sim_field(tok, "lines", lines, sizeof(lines));
			sim_field(tok, "label", c->label, sizeof(c->label));
		}
		c->nlines = (unsigned int)atoi(lines);
		if (c->nlines > SIM_LINES)
			c->nlines = SIM_LINES;
		s->nchips++;
	} else if (strcmp(tok, "line") == 0) {
		char *chip = strtok_r(NULL, " \t\n", &save), *off = strtok_r(NULL, " \t\n", &save);
		char v[32];
		struct sim_line *l = NULL;

		for (int i = 0; chip && off && i < s->nchips; i++)
			if (strcmp(s->chip[i].name, chip) == 0 && (unsigned)atoi(off) < s->chip[i].nlines)
				l = &s->chip[i].line[atoi(off)];
		if (!l)
			return;
		while ((tok = strtok_r(NULL, " \t\n", &save))) {
			v[0] = 0;
			sim_field(tok, "value", v, sizeof(v));
			if (v[0])
				l->value = atoi(v);
			v[0] = 0;
			sim_field(tok, "pull", v, sizeof(v));
			if (v[0])
				l->pull = atoi(v);
			v[0] = 0;
			sim_field(tok, "dir", v, sizeof(v));
			if (v[0])
				l->out = strcmp(v, "out") == 0;
			v[0] = 0;
			sim_field(tok, "active_low", v, sizeof(v));
			if (v[0])
				l->active_low = atoi(v);
			v[0] = 0;
			sim_field(tok, "keep", v, sizeof(v));
			if (v[0])
				l->keep = atoi(v);
			v[0] = 0;
			sim_field(tok, "late", v, sizeof(v));
			if (v[0])
				l->late = atoi(v);
			v[0] = 0;
			sim_field(tok, "owner", v, sizeof(v));
			if (v[0])
				l->owner = atol(v);
			sim_field(tok, "name", l->name, sizeof(l->name));
			sim_field(tok, "consumer", l->consumer, sizeof(l->consumer));
		}
	}
}

static void sim_release_line(struct sim_line *l)
{
	l->owner = 0;
	l->active_low = 0;
	l->consumer[0] = 0;
	if (l->keep)
		return;		/* the AST2600's driver leaves it an output, still driven */
	l->out = 0;
	l->value = l->pull;	/* nobody drives it now */
}

/* The kernel closes a process's fds when it exits, before anyone reaps it:
 * a zombie (whose parent may never reap it) holds no line. */
static int sim_dead(pid_t pid)
{
	char path[64], buf[256], *rp;
	int fd;
	ssize_t n;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	SIM_REAL(open);
	fd = real_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	rp = strrchr(buf, ')');	/* "pid (comm) S ..." */
	return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/* Open and lock the state file; -1 when there is none (the shim is idle). */
static int sim_lock(struct sim_state *s)
{
	const char *path = sim_path();
	char *buf, *line, *save = NULL;
	struct stat st;
	int fd;

	SIM_REAL(open);
	if (!path)
		return -1;
	fd = real_open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	flock(fd, LOCK_EX);
	memset(s, 0, sizeof(*s));
	if (fstat(fd, &st) < 0 || !(buf = calloc(1, (size_t)st.st_size + 1))) {
		close(fd);
		return -1;
	}
	if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		close(fd);
		return -1;
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		sim_parse_line(s, line);
	free(buf);
	/* The kernel frees a dead process's lines. */
	for (int i = 0; i < s->nchips; i++)
		for (unsigned int j = 0; j < s->chip[i].nlines; j++) {
			struct sim_line *l = &s->chip[i].line[j];

			if (l->owner && sim_dead((pid_t)l->owner))
				sim_release_line(l);
		}
	return fd;
}

static void sim_unlock(int fd, const struct sim_state *s, int save)
{
	if (save) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (f) {
			fprintf(f, "# gpiosim state: value is the physical level, owner the pid holding the line\n");
			for (int i = 0; i < s->nchips; i++) {
				const struct sim_chip *c = &s->chip[i];

				fprintf(f, "chip %s lines=%u label=%s\n", c->name, c->nlines, c->label);
				for (unsigned int j = 0; j < c->nlines; j++) {
					const struct sim_line *l = &c->line[j];

					fprintf(f, "line %s %u value=%d pull=%d dir=%s active_low=%d keep=%d late=%d owner=%ld name=%s consumer=%s\n",
						c->name, j, l->value, l->pull, l->out ? "out" : "in", l->active_low, l->keep, l->late,
						l->owner, l->name, l->consumer);
				}
			}
			fclose(f);
			if (ftruncate(fd, 0) == 0 && pwrite(fd, buf, len, 0) != (ssize_t)len)
				fprintf(stderr, "gpiosim: short write of %s\n", sim_path());
			free(buf);
		}
	}
	flock(fd, LOCK_UN);
	close(fd);
}

static struct sim_chip *sim_find_chip(struct sim_state *s, const char *name)
{
	for (int i = 0; i < s->nchips; i++)
		if (strcmp(s->chip[i].name, name) == 0)
			return &s->chip[i];
	return NULL;
}

/* "gpiochipN" of a path we fake, or NULL. */
static const char *sim_dev_chip(const char *path, char *name, size_t len)
{
	struct sim_state s;
	int fd, found;

	if (!path || strncmp(path, "/dev/gpiochip", 13) != 0)
		return NULL;
	fd = sim_lock(&s);
	if (fd < 0)
		return NULL;
	found = sim_find_chip(&s, path + 5) != NULL;
	sim_unlock(fd, &s, 0);
	if (!found)
		return NULL;
	snprintf(name, len, "%s", path + 5);
	return name;
}

static unsigned int sim_minor(const char *chip)
{
	return (unsigned int)atoi(chip + 8);	/* "gpiochipN" */
}

/* The sysfs files libgpiod reads: "/sys/bus/gpio/devices/gpiochipN/dev". */
static const char *sim_sysfs_chip(const char *path, char *name, size_t len)
{
	char dev[64];
	const char *p = "/sys/bus/gpio/devices/", *end;

	if (!path || strncmp(path, p, strlen(p)) != 0)
		return NULL;
	end = strchr(path + strlen(p), '/');
	if (!end || strcmp(end, "/dev") != 0 || (size_t)(end - path) >= sizeof(dev))
		return NULL;
	snprintf(dev, sizeof(dev), "/dev/%.*s", (int)(end - path - strlen(p)), path + strlen(p));
	return sim_dev_chip(dev, name, len);
}

/* --- fds ------------------------------------------------------------------- */

static struct sim_fd *sim_fd_get(int fd)
{
	for (int i = 0; i < SIM_FDS; i++)
		if (sim_fds[i].kind != FD_NONE && sim_fds[i].fd == fd)
			return &sim_fds[i];
	return NULL;
}

static struct sim_fd *sim_fd_new(int fd, int kind, const char *chip)
{
	for (int i = 0; i < SIM_FDS; i++)
		if (sim_fds[i].kind == FD_NONE) {
			memset(&sim_fds[i], 0, sizeof(sim_fds[i]));
			sim_fds[i].fd = fd;
			sim_fds[i].kind = kind;
			snprintf(sim_fds[i].chip, sizeof(sim_fds[i].chip), "%s", chip);
			return &sim_fds[i];
		}
	return NULL;
}

/* A real fd to stand for a fake device node. */
static int sim_fake_fd(int flags)
{
	SIM_REAL(open);
	return real_open("/dev/null", O_RDWR | (flags & (O_CLOEXEC | O_NONBLOCK)));
}

static int sim_open_path(const char *path, int flags)
{
	char chip[32], text[32];
	int fd;

	if (sim_dev_chip(path, chip, sizeof(chip))) {
		fd = sim_fake_fd(flags);
		if (fd >= 0 && !sim_fd_new(fd, FD_CHIP, chip)) {
			real_close(fd);
			errno = EMFILE;
			return -1;
		}
		return fd;
	}
	if (sim_sysfs_chip(path, chip, sizeof(chip))) {
		int len = snprintf(text, sizeof(text), "%u:%u\n", SIM_MAJOR, sim_minor(chip));

		fd = memfd_create("gpiosim-sysfs", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
		if (fd < 0)
			return -1;
		if (write(fd, text, (size_t)len) != len || lseek(fd, 0, SEEK_SET) < 0) {
			SIM_REAL(close);
			real_close(fd);
			errno = EIO;
			return -1;
		}
		return fd;
	}
	return -2;	/* not ours */
}

/* --- ioctls ------------------------------------------------------------- */

static int sim_fail(int e)
{
	errno = e;
	return -1;
}

static int sim_is_zero(const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return 0;
	return 1;
}

static int sim_chipinfo(struct sim_chip *c, struct gpiochip_info *info)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s", c->name);
	snprintf(info->label, sizeof(info->label), "%s", c->label);
	info->lines = c->nlines;
	return 0;
}

static int sim_lineinfo_v1(struct sim_chip *c, struct gpioline_info *info)
{
	struct sim_line *l;

	if (info->line_offset >= c->nlines)
		return sim_fail(EINVAL);
	l = &c->line[info->line_offset];
	info->flags = 0;
	if (l->owner)
		info->flags |= GPIOLINE_FLAG_KERNEL;
	if (l->out)
		info->flags |= GPIOLINE_FLAG_IS_OUT;
	if (l->active_low)
		info->flags |= GPIOLINE_FLAG_ACTIVE_LOW;
	memset(info->name, 0, sizeof(info->name));
	memset(info->consumer, 0, sizeof(info->consumer));
	snprintf(info->name, sizeof(info->name), "%s", l->name);
	snprintf(info->consumer, sizeof(info->consumer), "%s", l->consumer);
	return 0;
}

static int sim_lineinfo_v2(struct sim_chip *c, struct gpio_v2_line_info *info)
{
	struct sim_line *l;
	unsigned int off = info->offset;

	/* The kernel insists the caller zeroed everything but the offset. */
	if (!sim_is_zero(info->padding, sizeof(info->padding)))
		return sim_fail(EINVAL);
	if (off >= c->nlines)
		return sim_fail(EINVAL);
	l = &c->line[off];
	memset(info, 0, sizeof(*info));
	info->offset = off;
	snprintf(info->name, sizeof(info->name), "%s", l->name);
	snprintf(info->consumer, sizeof(info->consumer), "%s", l->consumer);
	info->flags = l->out ? GPIO_V2_LINE_FLAG_OUTPUT : GPIO_V2_LINE_FLAG_INPUT;
	if (l->owner)
		info->flags |= GPIO_V2_LINE_FLAG_USED;
	if (l->active_low)
		info->flags |= GPIO_V2_LINE_FLAG_ACTIVE_LOW;
	return 0;
}

/* Take lines for this process: the common part of both request ioctls.
 * out[i]: 1 output, 0 input, -1 as is. */
static int sim_take(struct sim_chip *c, const unsigned int *offsets, unsigned int n, const char *consumer,
		    const int *out, const int *active_low, const int *logical, int kind, int flags_cloexec)
{
	struct sim_fd *f;
	int fd;

	if (n == 0 || n > SIM_LINES)
		return sim_fail(EINVAL);
	for (unsigned int i = 0; i < n; i++) {
		if (offsets[i] >= c->nlines)
			return sim_fail(EINVAL);
		for (unsigned int j = 0; j < i; j++)
			if (offsets[j] == offsets[i])
				return sim_fail(EBUSY);
		if (c->line[offsets[i]].owner)
			return sim_fail(EBUSY);
	}
	fd = sim_fake_fd(flags_cloexec);
	if (fd < 0)
		return -1;
	f = sim_fd_new(fd, kind, c->name);
	if (!f) {
		real_close(fd);
		return sim_fail(EMFILE);
	}
	f->n = n;
	for (unsigned int i = 0; i < n; i++) {
		struct sim_line *l = &c->line[offsets[i]];
		int was_out = l->out;

		f->offsets[i] = offsets[i];
		l->owner = (long)getpid();
		l->active_low = active_low[i];
		/* a request naming no direction (libgpiod's AS_IS) leaves the line
		 * as it is: the kernel changes direction only when asked */
		if (out[i] >= 0)
			l->out = out[i];
		snprintf(l->consumer, sizeof(l->consumer), "%s", consumer[0] ? consumer : "?");
		for (char *p = l->consumer; *p; p++)
			if (*p == ' ' || *p == '\t')
				*p = '_';	/* keeps the state file one token per field */
		if (out[i] > 0 && !(l->late && !was_out))
			l->value = logical[i] ^ active_low[i];
	}
	return fd;
}

static int sim_handle_v1(struct sim_chip *c, struct gpiohandle_request *req)
{
	int out[SIM_LINES], al[SIM_LINES], val[SIM_LINES], fd;
	__u32 known = GPIOHANDLE_REQUEST_INPUT | GPIOHANDLE_REQUEST_OUTPUT | GPIOHANDLE_REQUEST_ACTIVE_LOW |
		      GPIOHANDLE_REQUEST_OPEN_DRAIN | GPIOHANDLE_REQUEST_OPEN_SOURCE |
		      GPIOHANDLE_REQUEST_BIAS_PULL_UP | GPIOHANDLE_REQUEST_BIAS_PULL_DOWN |
		      GPIOHANDLE_REQUEST_BIAS_DISABLE;
	char consumer[GPIO_MAX_NAME_SIZE + 1];

	if ((req->flags & ~known) ||
	    ((req->flags & GPIOHANDLE_REQUEST_INPUT) && (req->flags & GPIOHANDLE_REQUEST_OUTPUT)) ||
	    req->lines == 0 || req->lines > GPIOHANDLES_MAX)
		return sim_fail(EINVAL);
	for (unsigned int i = 0; i < req->lines; i++) {
		out[i] = (req->flags & GPIOHANDLE_REQUEST_OUTPUT) ? 1 : (req->flags & GPIOHANDLE_REQUEST_INPUT) ? 0 : -1;
		al[i] = !!(req->flags & GPIOHANDLE_REQUEST_ACTIVE_LOW);
		val[i] = !!req->default_values[i];
	}
	snprintf(consumer, sizeof(consumer), "%.*s", GPIO_MAX_NAME_SIZE, req->consumer_label);
	fd = sim_take(c, req->lineoffsets, req->lines, consumer, out, al, val, FD_HANDLE_V1, O_CLOEXEC);
	if (fd < 0)
		return -1;
	req->fd = fd;
	return 0;
}

static int sim_line_v2(struct sim_chip *c, struct gpio_v2_line_request *req)
{
	int out[SIM_LINES], al[SIM_LINES], val[SIM_LINES], fd;
	__u64 known = GPIO_V2_LINE_FLAG_ACTIVE_LOW | GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_OUTPUT |
		      GPIO_V2_LINE_FLAG_EDGE_RISING | GPIO_V2_LINE_FLAG_EDGE_FALLING |
		      GPIO_V2_LINE_FLAG_OPEN_DRAIN | GPIO_V2_LINE_FLAG_OPEN_SOURCE |
		      GPIO_V2_LINE_FLAG_BIAS_PULL_UP | GPIO_V2_LINE_FLAG_BIAS_PULL_DOWN |
		      GPIO_V2_LINE_FLAG_BIAS_DISABLED | GPIO_V2_LINE_FLAG_EVENT_CLOCK_REALTIME;
	char consumer[GPIO_MAX_NAME_SIZE + 1];

	if (!sim_is_zero(req->padding, sizeof(req->padding)) ||
	    !sim_is_zero(req->config.padding, sizeof(req->config.padding)) ||
	    req->num_lines == 0 || req->num_lines > GPIO_V2_LINES_MAX ||
	    req->config.num_attrs > GPIO_V2_LINE_NUM_ATTRS_MAX)
		return sim_fail(EINVAL);
	for (unsigned int i = 0; i < req->num_lines; i++) {
		__u64 flags = req->config.flags;

		val[i] = 0;
		/* Per-line attributes override the request-wide flags, as in gpiolib-cdev. */
		for (unsigned int a = 0; a < req->config.num_attrs; a++) {
			const struct gpio_v2_line_config_attribute *ca = &req->config.attrs[a];

			if (!(ca->mask & (1ULL << i)))
				continue;
			if (ca->attr.id == GPIO_V2_LINE_ATTR_ID_FLAGS)
				flags = ca->attr.flags;
			else if (ca->attr.id == GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES)
				val[i] = !!(ca->attr.values & (1ULL << i));
		}
		if ((flags & ~known) ||
		    ((flags & GPIO_V2_LINE_FLAG_INPUT) && (flags & GPIO_V2_LINE_FLAG_OUTPUT)))
			return sim_fail(EINVAL);
		out[i] = (flags & GPIO_V2_LINE_FLAG_OUTPUT) ? 1 : (flags & GPIO_V2_LINE_FLAG_INPUT) ? 0 : -1;
		al[i] = !!(flags & GPIO_V2_LINE_FLAG_ACTIVE_LOW);
	}
	snprintf(consumer, sizeof(consumer), "%.*s", GPIO_MAX_NAME_SIZE, req->consumer);
	fd = sim_take(c, req->offsets, req->num_lines, consumer, out, al, val, FD_LINE_V2, O_CLOEXEC);
	if (fd < 0)
		return -1;
	req->fd = fd;
	return 0;
}

/* Our lines of a request fd, still ours? (The kernel would not let them go.) */
static struct sim_line *sim_req_line(struct sim_chip *c, struct sim_fd *f, unsigned int i)
{
	struct sim_line *l = &c->line[f->offsets[i]];

	return l->owner == (long)getpid() ? l : NULL;
}

static int sim_values(struct sim_chip *c, struct sim_fd *f, unsigned long req, void *arg, int *dirty)
{
	if (f->kind == FD_HANDLE_V1 && (req == GPIOHANDLE_GET_LINE_VALUES_IOCTL ||
					req == GPIOHANDLE_SET_LINE_VALUES_IOCTL)) {
		struct gpiohandle_data *d = arg;

		for (unsigned int i = 0; i < f->n; i++) {
			struct sim_line *l = sim_req_line(c, f, i);

			if (!l)
				return sim_fail(EIO);
			if (req == GPIOHANDLE_GET_LINE_VALUES_IOCTL) {
				d->values[i] = (__u8)(l->value ^ l->active_low);
			} else {
				if (!l->out)
					return sim_fail(EPERM);
				l->value = !!d->values[i] ^ l->active_low;
				*dirty = 1;
			}
		}
		return 0;
	}
	if (f->kind == FD_LINE_V2 && (req == GPIO_V2_LINE_GET_VALUES_IOCTL ||
				      req == GPIO_V2_LINE_SET_VALUES_IOCTL)) {
		struct gpio_v2_line_values *v = arg;
		__u64 bits = 0;

		if (!v->mask)
			return sim_fail(EINVAL);
		for (unsigned int i = 0; i < f->n; i++) {
			struct sim_line *l;

			if (!(v->mask & (1ULL << i)))
				continue;
			l = sim_req_line(c, f, i);
			if (!l)
				return sim_fail(EIO);
			if (req == GPIO_V2_LINE_GET_VALUES_IOCTL) {
				if (l->value ^ l->active_low)
					bits |= 1ULL << i;
			} else {
				if (!l->out)
					return sim_fail(EPERM);
				l->value = !!(v->bits & (1ULL << i)) ^ l->active_low;
				*dirty = 1;
			}
		}
		if (req == GPIO_V2_LINE_GET_VALUES_IOCTL)
			v->bits = bits;
		return 0;
	}
	return sim_fail(EINVAL);
}

static int sim_ioctl(struct sim_fd *f, unsigned long req, void *arg)
{
	struct sim_state *s = malloc(sizeof(*s));
	struct sim_chip *c;
	int fd, rc, dirty = 0;

	SIM_REAL(close);
	if (!s)
		return sim_fail(ENOMEM);
	fd = sim_lock(s);
	if (fd < 0) {
		free(s);
		return sim_fail(ENODEV);
	}
	c = sim_find_chip(s, f->chip);
	if (!c) {
		rc = sim_fail(ENODEV);	/* the chip went away */
	} else if (f->kind != FD_CHIP) {
		rc = sim_values(c, f, req, arg, &dirty);
	} else if (req == GPIO_GET_CHIPINFO_IOCTL) {
		rc = sim_chipinfo(c, arg);
	} else if (req == GPIO_GET_LINEINFO_IOCTL) {
		rc = sim_lineinfo_v1(c, arg);
	} else if (req == GPIO_V2_GET_LINEINFO_IOCTL) {
		rc = sim_lineinfo_v2(c, arg);
	} else if (req == GPIO_GET_LINEHANDLE_IOCTL) {
		rc = sim_handle_v1(c, arg);
		dirty = rc == 0;
	} else if (req == GPIO_V2_GET_LINE_IOCTL) {
		rc = sim_line_v2(c, arg);
		dirty = rc == 0;
	} else {
		rc = sim_fail(EINVAL);	/* watch, events, set-config: not simulated */
	}
	{
		int e = errno;

		if (getenv("GPIOSIM_DEBUG"))
			fprintf(stderr, "gpiosim: ioctl %s fd %d nr 0x%02x -> %d%s%s\n", f->chip, f->fd,
				(unsigned int)_IOC_NR(req), rc, rc < 0 ? " " : "", rc < 0 ? strerror(e) : "");
		sim_unlock(fd, s, dirty);
		errno = e;
	}
	free(s);
	return rc;
}

static void sim_release_fd(struct sim_fd *f)
{
	struct sim_state *s;
	struct sim_chip *c;
	int fd;

	if (f->kind == FD_CHIP || !(s = malloc(sizeof(*s))))
		return;
	fd = sim_lock(s);
	if (fd >= 0) {
		c = sim_find_chip(s, f->chip);
		for (unsigned int i = 0; c && i < f->n; i++) {
			struct sim_line *l = sim_req_line(c, f, i);

			if (l)
				sim_release_line(l);
		}
		sim_unlock(fd, s, 1);
	}
	free(s);
}

/* --- the interposed calls ------------------------------------------------- */

static int sim_open_common(const char *path, int flags, mode_t mode, int dirfd, int at)
{
	int fd;

	SIM_REAL(open);
	SIM_REAL(openat);
	SIM_REAL(close);
	if (path && (path[0] == '/') && sim_path()) {
		fd = sim_open_path(path, flags);
		if (fd != -2)
			return fd;
	}
	return at ? real_openat(dirfd, path, flags, mode) : real_open(path, flags, mode);
}

static mode_t sim_mode(int flags, va_list ap)
{
	return (flags & (O_CREAT | __O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = sim_mode(flags, ap);
	va_end(ap);
	return sim_open_common(path, flags, mode, AT_FDCWD, 0);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = sim_mode(flags, ap);
	va_end(ap);
	return sim_open_common(path, flags, mode, AT_FDCWD, 0);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = sim_mode(flags, ap);
	va_end(ap);
	return sim_open_common(path, flags, mode, dirfd, 1);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = sim_mode(flags, ap);
	va_end(ap);
	return sim_open_common(path, flags, mode, dirfd, 1);
}

int close(int fd)
{
	struct sim_fd *f = sim_fd_get(fd);

	SIM_REAL(close);
	if (f) {
		sim_release_fd(f);
		f->kind = FD_NONE;
	}
	return real_close(fd);
}

int ioctl(int fd, unsigned long req, ...)
{
	struct sim_fd *f = sim_fd_get(fd);
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	SIM_REAL(ioctl);
	/* The kernel takes the command as 32 bits; libgpiod 2.x passes an int,
	 * which arrives sign-extended. */
	if (f)
		return sim_ioctl(f, (unsigned int)req, arg);
	return real_ioctl(fd, req, arg);
}

static int sim_stat_common(const char *path, struct stat *st, int l)
{
	char chip[32];

	SIM_REAL(stat);
	SIM_REAL(lstat);
	if (sim_dev_chip(path, chip, sizeof(chip))) {
		memset(st, 0, sizeof(*st));
		st->st_mode = S_IFCHR | 0600;
		st->st_rdev = makedev(SIM_MAJOR, sim_minor(chip));
		st->st_nlink = 1;
		st->st_blksize = 4096;
		return 0;
	}
	return l ? real_lstat(path, st) : real_stat(path, st);
}

int stat(const char *path, struct stat *st)
{
	return sim_stat_common(path, st, 0);
}

int lstat(const char *path, struct stat *st)
{
	return sim_stat_common(path, st, 1);
}

/* On x86_64 struct stat64 is struct stat. */
int stat64(const char *path, struct stat64 *st)
{
	return sim_stat_common(path, (struct stat *)st, 0);
}

int lstat64(const char *path, struct stat64 *st)
{
	return sim_stat_common(path, (struct stat *)st, 1);
}

int access(const char *path, int mode)
{
	char chip[32];

	SIM_REAL(access);
	if (sim_sysfs_chip(path, chip, sizeof(chip)) || sim_dev_chip(path, chip, sizeof(chip)))
		return 0;
	return real_access(path, mode);
}

/* libgpiod 2.x: is /sys/dev/char/M:m/subsystem the gpio bus? */
char *realpath(const char *path, char *resolved)
{
	unsigned int maj, min;
	char chip[32], dev[48], tail[16];

	SIM_REAL(realpath);
	if (path && sscanf(path, "/sys/dev/char/%u:%u/%15s", &maj, &min, tail) == 3 && maj == SIM_MAJOR &&
	    strcmp(tail, "subsystem") == 0) {
		snprintf(dev, sizeof(dev), "/dev/gpiochip%u", min);
		if (sim_dev_chip(dev, chip, sizeof(chip))) {
			if (!resolved)
				return strdup("/sys/bus/gpio");
			snprintf(resolved, PATH_MAX, "/sys/bus/gpio");
			return resolved;
		}
	}
	return real_realpath(path, resolved);
}

static int sim_cmp_wrap(const void *a, const void *b, void *cmp)
{
	int (*c)(const struct dirent **, const struct dirent **) = cmp;

	return c((const struct dirent **)a, (const struct dirent **)b);
}

/* /dev listings include the fake chips (libgpiod's and our own chip lookup). */
static int sim_scandir(const char *dir, struct dirent ***list, int (*filter)(const struct dirent *),
		       int (*cmp)(const struct dirent **, const struct dirent **))
{
	struct sim_state *s;
	int n, fd;

	SIM_REAL(scandir);
	n = real_scandir(dir, list, filter, cmp);
	if (n < 0 || !dir || (strcmp(dir, "/dev") && strcmp(dir, "/dev/")) || !(s = malloc(sizeof(*s))))
		return n;
	fd = sim_lock(s);
	if (fd < 0) {
		free(s);
		return n;
	}
	for (int i = 0; i < s->nchips; i++) {
		struct dirent *d = calloc(1, sizeof(*d));
		struct dirent **grown;
		int dup = 0;

		for (int j = 0; j < n; j++)
			dup |= strcmp((*list)[j]->d_name, s->chip[i].name) == 0;
		if (!d || dup) {
			free(d);
			continue;
		}
		d->d_ino = 100000 + (ino_t)i;
		d->d_reclen = sizeof(*d);
		d->d_type = DT_CHR;
		snprintf(d->d_name, sizeof(d->d_name), "%s", s->chip[i].name);
		if ((filter && !filter(d)) || !(grown = realloc(*list, sizeof(*grown) * (size_t)(n + 1)))) {
			free(d);
			continue;
		}
		*list = grown;
		(*list)[n++] = d;
	}
	sim_unlock(fd, s, 0);
	free(s);
	if (cmp)
		qsort_r(*list, (size_t)n, sizeof(**list), sim_cmp_wrap, (void *)cmp);
	return n;
}

int scandir(const char *dir, struct dirent ***list, int (*filter)(const struct dirent *),
	    int (*cmp)(const struct dirent **, const struct dirent **))
{
	return sim_scandir(dir, list, filter, cmp);
}

/* On x86_64 struct dirent64 is struct dirent. */
int scandir64(const char *dir, struct dirent64 ***list, int (*filter)(const struct dirent64 *),
	      int (*cmp)(const struct dirent64 **, const struct dirent64 **))
{
	return sim_scandir(dir, (struct dirent ***)list, (int (*)(const struct dirent *))filter,
			   (int (*)(const struct dirent **, const struct dirent **))cmp);
}

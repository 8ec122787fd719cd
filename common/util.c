/*
 * util.c - logging, clocks and I/O helpers.
 */
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static const char *log_prog = "powercut";
static enum pc_log_level log_level = PC_LOG_INFO;

void pc_log_init(const char *prog, enum pc_log_level level)
{
	log_prog = prog;
	log_level = level;
}

void pc_log(enum pc_log_level level, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int n;

	if (level > log_level)
		return;
	n = snprintf(line, sizeof(line), "%s: %s", log_prog,
		     level == PC_LOG_ERR ? "error: " : level == PC_LOG_WARN ? "warning: " : "");
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	n = (int)strlen(line);
	if ((size_t)n < sizeof(line) - 1)
		line[n++] = '\n';
	/* one write() so lines from several processes do not interleave */
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere left to report it */
	}
}

uint64_t pc_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t pc_now_ms(void)
{
	return pc_now_us() / 1000u;
}

double pc_wall_time(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void pc_sleep_us(uint64_t us)
{
	struct timespec ts = { .tv_sec = (time_t)(us / 1000000u), .tv_nsec = (long)(us % 1000000u) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int pc_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int pc_pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	return pc_pwritev2_all(fd, buf, len, off, 0);
}

int pc_pwritev2_all(int fd, const void *buf, size_t len, off_t off, int flags)
{
	const char *p = buf;

	while (len) {
		struct iovec iov = { .iov_base = (void *)p, .iov_len = len };
		/* plain pwrite without flags: pwritev2 is missing on old kernels and qemu-user */
		ssize_t n = flags ? pwritev2(fd, &iov, 1, off, flags) : pwrite(fd, p, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		off += n;
		len -= (size_t)n;
	}
	return 0;
}

int pc_pread_all(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENODATA;	/* short device or file */
		p += n;
		off += n;
		len -= (size_t)n;
	}
	return 0;
}

int pc_parse_u64(const char *s, int suffixes, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	/* a digit first: strtoull would skip spaces and take a sign (" -1" is
	 * 2^64 - 1); decimal, or hex after 0x, never octal ("010" is ten) */
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		if (!((s[2] >= '0' && s[2] <= '9') || (s[2] >= 'a' && s[2] <= 'f') || (s[2] >= 'A' && s[2] <= 'F')))
			return -EINVAL;
		v = strtoull(s, &end, 16);
	} else {
		v = strtoull(s, &end, 10);
	}
	if (errno || end == s)
		return -EINVAL;
	if (*end && suffixes) {
		switch (*end) {
		case 'k': case 'K': mul = 1ull << 10; break;
		case 'm': case 'M': mul = 1ull << 20; break;
		case 'g': case 'G': mul = 1ull << 30; break;
		case 't': case 'T': mul = 1ull << 40; break;
		default: return -EINVAL;
		}
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
	}
	if (*end)
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

int pc_parse_hostport(const char *s, char *host, size_t hostlen, uint16_t *port)
{
	const char *colon = strrchr(s, ':');
	uint64_t p;
	size_t hl;

	if (!colon)
		return -EINVAL;
	hl = (size_t)(colon - s);
	if (hl >= hostlen)
		return -EINVAL;
	if (pc_parse_u64(colon + 1, 0, &p) || p > 65535)
		return -EINVAL;
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		/* "[::1]:7878": an IPv6 address */
		s++;
		hl -= 2;
	}
	if (hl == 0)
		pc_strlcpy(host, "127.0.0.1", hostlen);
	else {
		memcpy(host, s, hl);
		host[hl] = 0;
	}
	*port = (uint16_t)p;
	return 0;
}

char *pc_strlcpy(char *dst, const char *src, size_t n)
{
	if (n) {
		size_t l = strnlen(src, n - 1);
		memcpy(dst, src, l);
		dst[l] = 0;
	}
	return dst;
}

int pc_read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = 0;
	return 0;
}

int pc_vfail(char *err, size_t errlen, int rc, const char *fmt, va_list ap)
{
	vsnprintf(err, errlen, fmt, ap);
	return rc;
}

int pc_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = pc_vfail(err, errlen, rc, fmt, ap);
	va_end(ap);
	return rc;
}

int pc_mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];

	if (strlen(path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	pc_strlcpy(tmp, path, sizeof(tmp));
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int pc_tmp_open(const char *path, char *tmp, size_t tmplen)
{
	int fd;

	if ((size_t)snprintf(tmp, tmplen, "%s.tmp", path) >= tmplen)
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	return fd < 0 ? -errno : fd;
}

int pc_fsync_dir_of(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int dfd, ret = 0;

	if (strlen(path) >= sizeof(dir))
		return -ENAMETOOLONG;
	pc_strlcpy(dir, path, sizeof(dir));
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	else
		pc_strlcpy(dir, ".", sizeof(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0)
		ret = -errno;
	if (dfd >= 0)
		close(dfd);
	return ret;
}

int pc_tmp_commit(int fd, const char *tmp, const char *path, int ret, int flags)
{
	if (!ret && (flags & PC_FILE_SYNC) && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return ret;
	}
	return (flags & PC_FILE_SYNC) ? pc_fsync_dir_of(path) : 0;
}

int pc_write_file(const char *path, const void *buf, size_t len, int flags)
{
	char tmp[PATH_MAX + 8];
	int fd = pc_tmp_open(path, tmp, sizeof(tmp));

	if (fd < 0)
		return fd;
	return pc_tmp_commit(fd, tmp, path, pc_write_all(fd, buf, len), flags);
}

void pc_remove_flat_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	rmdir(dir);
}

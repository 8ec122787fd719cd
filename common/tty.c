/*
 * tty.c - a serial device opened raw (tty.h).
 */
#include "common/tty.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

static const struct {
	uint32_t baud;
	speed_t sp;
} rates[] = {
	{ 1200, B1200 }, { 2400, B2400 }, { 4800, B4800 }, { 9600, B9600 }, { 19200, B19200 },
	{ 38400, B38400 }, { 57600, B57600 }, { 115200, B115200 }, { 230400, B230400 }, { 460800, B460800 },
	{ 921600, B921600 }, { 1500000, B1500000 }, { 3000000, B3000000 },
};

int pc_tty_speed(uint32_t baud, speed_t *out)
{
	for (size_t i = 0; i < PC_ARRAY_SIZE(rates); i++)
		if (rates[i].baud == baud) {
			*out = rates[i].sp;
			return 0;
		}
	return -EINVAL;
}

static void raw_8n1(struct termios *t, speed_t sp)
{
	cfmakeraw(t);
	t->c_cflag &= ~(tcflag_t)(CSTOPB | PARENB | CSIZE | CRTSCTS);
	t->c_cflag |= CS8 | CLOCAL | CREAD;
	t->c_iflag &= ~(tcflag_t)(IXON | IXOFF | IXANY);
	cfsetispeed(t, sp);
	cfsetospeed(t, sp);
}

/* Did the device take it? tcsetattr succeeds when any part of a change held. */
static int held(const struct termios *t, speed_t sp)
{
	return cfgetospeed(t) == sp && cfgetispeed(t) == sp && !(t->c_cflag & CRTSCTS) &&
	       (t->c_cflag & CSIZE) == CS8 && !(t->c_cflag & (PARENB | CSTOPB)) &&
	       !(t->c_iflag & (IXON | IXOFF | IXANY)) && !(t->c_lflag & (ECHO | ICANON));
}

int pc_tty_open(const char *path, uint32_t baud, int flags, char *err, size_t errlen)
{
	struct termios t;
	speed_t sp;
	int fd, rc;

	if (pc_tty_speed(baud, &sp))
		return pc_fail(err, errlen, -EINVAL, "%s: %u baud is not a supported rate (1200 to 3000000: 9600, 115200, ...)", path,
			 baud);
	fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC | ((flags & PC_TTY_NONBLOCK) ? O_NONBLOCK : 0));
	if (fd < 0)
		return pc_fail(err, errlen, -errno, "cannot open %s: %s", path, strerror(errno));
	if (tcgetattr(fd, &t) < 0) {
		rc = -errno;
		if (rc == -ENOTTY && (flags & PC_TTY_NOT_TTY_OK))
			return fd;
		pc_fail(err, errlen, rc, "%s is not a serial port (%s)", path, strerror(-rc));
		goto fail;
	}
	raw_8n1(&t, sp);
	if (tcsetattr(fd, TCSANOW, &t) < 0) {
		rc = pc_fail(err, errlen, -errno, "cannot set %s to %u 8N1 raw: %s", path, baud, strerror(errno));
		goto fail;
	}
	if (tcgetattr(fd, &t) < 0 || !held(&t, sp)) {
		rc = pc_fail(err, errlen, -EIO, "%s did not take %u 8N1 raw without flow control (its driver kept other "
			 "settings)", path, baud);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return rc;
}

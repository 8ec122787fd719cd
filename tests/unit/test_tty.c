/*
 * test_tty.c - a serial device opened raw (common/tty.h), against a pty: the
 * settings a console needs hold, and a device that is no tty, a rate that
 * does not exist or a path that is not there are said plainly.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "common/tty.h"
#include "common/util.h"
#include "tests/unit/suites.h"

/* A pty whose line discipline starts cooked, echoing, with hardware flow
 * control and another rate: everything pc_tty_open must undo. */
static int pty_open(char *name, size_t len, int *slave)
{
	struct termios t;
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (m < 0 || grantpt(m) || unlockpt(m) || ptsname_r(m, name, len)) {
		if (m >= 0)
			close(m);
		return -1;
	}
	*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0 || tcgetattr(*slave, &t)) {
		close(m);
		return -1;
	}
	t.c_cflag |= CRTSCTS | PARENB;
	t.c_iflag |= IXON | IXOFF;
	t.c_lflag |= ECHO | ICANON;
	cfsetispeed(&t, B9600);
	cfsetospeed(&t, B9600);
	tcsetattr(*slave, TCSANOW, &t);
	return m;
}

static void test_raw(void)
{
	char name[128], err[512] = "";
	struct termios t;
	int m, s, fd;

	m = pty_open(name, sizeof(name), &s);
	if (m < 0) {
		pc_test_skip("no pty here: %s", strerror(errno));
		return;
	}
	CU_ASSERT_FATAL(tcgetattr(s, &t) == 0);
	if (!(t.c_cflag & CRTSCTS))
		pc_test_skip("this kernel's pty does not keep CRTSCTS: its clearing is not shown");
	fd = pc_tty_open(name, 115200, PC_TTY_NONBLOCK, err, sizeof(err));
	CU_ASSERT(fd >= 0);
	if (fd < 0) {
		fprintf(stderr, "\n  %s\n", err);
		goto out;
	}
	CU_ASSERT(fcntl(fd, F_GETFL) & O_NONBLOCK);
	CU_ASSERT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	CU_ASSERT_FATAL(tcgetattr(fd, &t) == 0);
	CU_ASSERT_EQUAL(cfgetospeed(&t), B115200);
	CU_ASSERT_EQUAL(cfgetispeed(&t), B115200);
	CU_ASSERT_EQUAL(t.c_cflag & CRTSCTS, 0);
	CU_ASSERT_EQUAL(t.c_cflag & (PARENB | CSTOPB), 0);
	CU_ASSERT_EQUAL(t.c_cflag & CSIZE, CS8);
	CU_ASSERT(t.c_cflag & CLOCAL);
	CU_ASSERT(t.c_cflag & CREAD);
	CU_ASSERT_EQUAL(t.c_iflag & (IXON | IXOFF | IXANY), 0);
	CU_ASSERT_EQUAL(t.c_lflag & (ECHO | ICANON), 0);
	/* raw: a byte the board sends arrives as it is, at once */
	CU_ASSERT(write(m, "a\r", 2) == 2);
	{
		char got[4] = "";

		usleep(20000);
		CU_ASSERT(read(fd, got, sizeof(got)) == 2);
		CU_ASSERT(memcmp(got, "a\r", 2) == 0);
	}
	close(fd);
	/* blocking unless asked */
	fd = pc_tty_open(name, 9600, 0, err, sizeof(err));
	CU_ASSERT(fd >= 0 && !(fcntl(fd, F_GETFL) & O_NONBLOCK));
	if (fd >= 0)
		close(fd);
out:
	close(s);
	close(m);
}

static void test_errors(void)
{
	char err[512] = "";
	int fd;

	CU_ASSERT_EQUAL(pc_tty_open("/dev/ttyNOPE9", 115200, 0, err, sizeof(err)), -ENOENT);
	CU_ASSERT(strstr(err, "cannot open /dev/ttyNOPE9") != NULL);
	CU_ASSERT_EQUAL(pc_tty_open("/dev/null", 115200, 0, err, sizeof(err)), -ENOTTY);
	CU_ASSERT(strstr(err, "/dev/null is not a serial port") != NULL);
	/* ... unless the caller takes what is not a tty as it is */
	fd = pc_tty_open("/dev/null", 115200, PC_TTY_NOT_TTY_OK, err, sizeof(err));
	CU_ASSERT(fd >= 0);
	if (fd >= 0)
		close(fd);
	CU_ASSERT_EQUAL(pc_tty_open("/dev/null", 100000, PC_TTY_NOT_TTY_OK, err, sizeof(err)), -EINVAL);
	CU_ASSERT(strstr(err, "100000 baud is not a supported rate") != NULL);
	{
		speed_t sp;

		CU_ASSERT(pc_tty_speed(1200, &sp) == 0 && sp == B1200);
		CU_ASSERT(pc_tty_speed(3000000, &sp) == 0 && sp == B3000000);
		CU_ASSERT_EQUAL(pc_tty_speed(0, &sp), -EINVAL);
	}
}

int suite_tty(void)
{
	static const struct pc_test tests[] = {
		{ "a pty made raw 8N1: rate, no flow control, no echo, read back", test_raw },
		{ "no such device, not a tty, no such rate: said, naming the path", test_errors },
	};

	return pc_test_suite("tty", tests, PC_ARRAY_SIZE(tests));
}

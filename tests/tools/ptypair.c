/*
 * ptypair.c - a null-modem cable between two pseudo-terminals, for tests.
 *
 *   ptypair PATHFILE
 *
 * Makes two ptys, writes their slave paths to PATHFILE (two lines: the host's
 * end, then the board's end) and copies bytes between them until killed, like
 * a serial cable between the harness's USB-serial adapter and the board's
 * console UART. Both slaves are held open in raw mode, so nothing echoes and
 * nothing is lost while neither side has its end open.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static int make_pty(char *name, size_t len, int *slave)
{
	struct termios t;
	int m = posix_openpt(O_RDWR | O_NOCTTY);

	if (m < 0 || grantpt(m) || unlockpt(m) || ptsname_r(m, name, len))
		return -1;
	*slave = open(name, O_RDWR | O_NOCTTY);
	if (*slave < 0 || tcgetattr(*slave, &t))
		return -1;
	cfmakeraw(&t);
	tcsetattr(*slave, TCSANOW, &t);
	return m;
}

/* Copy what one master has to the other; 0 at EOF or error of the peer's side is not fatal. */
static void pump(int from, int to)
{
	char buf[4096];
	ssize_t n = read(from, buf, sizeof(buf));

	for (ssize_t off = 0; n > 0 && off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));
		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return;
		}
		off += w;
	}
}

int main(int argc, char **argv)
{
	char a[128], b[128];
	int sa, sb, ma, mb;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: ptypair PATHFILE\n");
		return 2;
	}
	ma = make_pty(a, sizeof(a), &sa);
	mb = make_pty(b, sizeof(b), &sb);
	if (ma < 0 || mb < 0) {
		perror("ptypair: pty");
		return 1;
	}
	f = fopen(argv[1], "w");
	if (!f || fprintf(f, "%s\n%s\n", a, b) < 0 || fclose(f)) {
		perror(argv[1]);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		struct pollfd p[2] = { { .fd = ma, .events = POLLIN }, { .fd = mb, .events = POLLIN } };

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return 1;
		if (p[0].revents & POLLIN)
			pump(ma, mb);
		if (p[1].revents & POLLIN)
			pump(mb, ma);
		if ((p[0].revents | p[1].revents) & (POLLERR | POLLNVAL))
			return 1;
	}
}

/*
 * link.c - TCP link to the host.
 */
#include "link.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <termios.h>
#include <fcntl.h>
#include <unistd.h>

#include "../common/util.h"

static int try_connect(const char *host, uint16_t port, int *fdp, char *why, size_t whylen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	char ports[8];
	int ret, fd = -1, one = 1;

	snprintf(ports, sizeof(ports), "%u", port);
	ret = getaddrinfo(host, ports, &hints, &res);
	if (ret) {
		snprintf(why, whylen, "%s", gai_strerror(ret));
		return -EHOSTUNREACH;
	}
	ret = -ECONNREFUSED;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		ret = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(why, whylen, "%s", strerror(-ret));
		return ret;
	}
	/* SUBMIT and ACK must leave at once: the cut can come any moment. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fdp = fd;
	return 0;
}

int link_connect(struct link *l, const char *hostport, uint32_t timeout_ms, char *err, size_t errlen)
{
	char host[128], why[160] = "";
	uint16_t port;
	uint64_t deadline = pc_now_ms() + timeout_ms;
	int ret;

	memset(l, 0, sizeof(*l));
	l->fd = -1;
	if (pc_parse_hostport(hostport, host, sizeof(host), &port)) {
		snprintf(err, errlen, "bad host address '%s' (expected HOST:PORT)", hostport);
		return -EINVAL;
	}
	snprintf(l->peer, sizeof(l->peer), "%s:%u", host, port);
	for (;;) {
		ret = try_connect(host, port, &l->fd, why, sizeof(why));
		if (ret == 0)
			return 0;
		if (pc_now_ms() >= deadline)
			break;
		pc_sleep_us(100000);
	}
	snprintf(err, errlen, "cannot reach the host at %s: %s (gave up after %u ms)", l->peer, why, timeout_ms);
	return ret;
}

int link_open_serial(struct link *l, const char *dev, uint32_t baud, char *err, size_t errlen)
{
	static const struct { uint32_t baud; speed_t sp; } rates[] = {
		{ 9600, B9600 }, { 19200, B19200 }, { 38400, B38400 }, { 57600, B57600 }, { 115200, B115200 },
		{ 230400, B230400 }, { 460800, B460800 }, { 921600, B921600 }, { 1500000, B1500000 },
		{ 3000000, B3000000 },
	};
	struct termios t;
	speed_t sp = 0;

	memset(l, 0, sizeof(*l));
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].baud == baud)
			sp = rates[i].sp;
	if (!sp) {
		snprintf(err, errlen, "--baud %u is not a supported rate", baud);
		return -EINVAL;
	}
	l->fd = open(dev, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (l->fd < 0) {
		snprintf(err, errlen, "cannot open the console %s: %s", dev, strerror(errno));
		return -errno;
	}
	if (tcgetattr(l->fd, &t) == 0) {
		cfmakeraw(&t);
		t.c_cflag |= CLOCAL | CREAD;
		cfsetispeed(&t, sp);
		cfsetospeed(&t, sp);
		tcsetattr(l->fd, TCSANOW, &t);
	}
	l->marker = 1;
	snprintf(l->peer, sizeof(l->peer), "%s", dev);
	return 0;
}

int link_send(struct link *l, json_object *msg)
{
	char buf[PC_PROTO_MAX_LINE + 16];
	size_t off = 0;
	int n, ret;

	if (!msg)
		return -ENOMEM;
	if (l->marker) {
		memcpy(buf, PC_PROTO_MARKER, strlen(PC_PROTO_MARKER));
		off = strlen(PC_PROTO_MARKER);
	}
	n = pc_msg_line(msg, buf + off, sizeof(buf) - off);
	json_object_put(msg);
	if (n < 0)
		return n;
	ret = pc_write_all(l->fd, buf, off + (size_t)n);
	return ret;
}

int link_recv(struct link *l, struct pc_msg *m, char *err, size_t errlen)
{
	char line[PC_PROTO_MAX_LINE + 2];
	char data[4096];
	size_t len;

	for (;;) {
		enum pc_line_result r = pc_linebuf_take(&l->lb, line, sizeof(line), &len);
		size_t room = sizeof(l->lb.buf) - l->lb.len;
		ssize_t n;

		if (r == PC_LINE_OK) {
			const char *mk = line;

			if (len == 0)
				continue;
			if (l->marker) {
				/* a console carries other things too: only marked lines are ours */
				line[len] = 0;
				mk = strstr(line, PC_PROTO_MARKER);
				if (!mk)
					continue;
				len -= (size_t)(mk - line);
			}
			return pc_msg_parse(mk, len, m, err, errlen);
		}
		if (r == PC_LINE_TOO_LONG) {
			snprintf(err, errlen, "line from the host exceeds %d bytes", PC_PROTO_MAX_LINE);
			return -EINVAL;
		}
		/* read no more than the line buffer can take, so nothing is dropped */
		if (room > sizeof(data))
			room = sizeof(data);
		if (room == 0)
			room = 1;
		n = read(l->fd, data, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "reading from %s: %s", l->peer, strerror(errno));
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		pc_linebuf_feed(&l->lb, data, (size_t)n);
	}
}

void link_close(struct link *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

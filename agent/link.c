/*
 * link.c - the agent's end of the link to the host: TCP or a serial console,
 * authenticated (auth.h).
 */
#include "agent/link.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <termios.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/tty.h"
#include "common/util.h"

/* What a failed connect means, for a person at the board: what to check. */
static void connect_why(int e, char *why, size_t whylen)
{
	switch (e) {
	case ECONNREFUSED:
		snprintf(why, whylen, "connection refused: nothing listens there (is powercut running, and does "
			 "--connect name the campaign's listen address and port?)");
		break;
	case ENETUNREACH:
	case EHOSTUNREACH:
	case ETIMEDOUT:
	case EHOSTDOWN:
		snprintf(why, whylen, "%s (the board's network, or the host address in --connect)", strerror(e));
		break;
	default:
		snprintf(why, whylen, "%s", strerror(e));
	}
}

static int try_connect(const char *host, uint16_t port, int *fdp, char *why, size_t whylen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	char ports[8];
	int ret, fd = -1, one = 1;

	snprintf(ports, sizeof(ports), "%u", port);
	ret = getaddrinfo(host, ports, &hints, &res);
	if (ret) {
		snprintf(why, whylen, "cannot resolve '%s': %s", host, gai_strerror(ret));
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
		connect_why(-ret, why, whylen);
		return ret;
	}
	/* SUBMIT and ACK must leave at once: the cut can come any moment. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fdp = fd;
	return 0;
}

int link_connect(struct link *l, const char *hostport, uint32_t timeout_ms, char *err, size_t errlen)
{
	char host[128], why[300] = "";
	uint16_t port;
	uint64_t deadline = pc_now_ms() + timeout_ms;
	int ret;

	memset(l, 0, sizeof(*l));
	l->fd = -1;
	if (pc_parse_hostport(hostport, host, sizeof(host), &port))
		return pc_fail(err, errlen, -EINVAL, "bad host address '%s' (expected HOST:PORT)", hostport);
	snprintf(l->peer, sizeof(l->peer), "%s:%u", host, port);
	for (;;) {
		ret = try_connect(host, port, &l->fd, why, sizeof(why));
		if (ret == 0)
			return 0;
		if (pc_now_ms() >= deadline)
			break;
		pc_sleep_us(100000);
	}
	if (timeout_ms)
		return pc_fail(err, errlen, ret, "cannot reach the host at %s: %s (gave up after %u ms)", l->peer, why,
			       timeout_ms);
	return pc_fail(err, errlen, ret, "cannot reach the host at %s: %s", l->peer, why);
}

int link_open_serial(struct link *l, const char *dev, uint32_t baud, char *err, size_t errlen)
{
	char why[PATH_MAX + 128];
	speed_t sp;

	memset(l, 0, sizeof(*l));
	if (pc_tty_speed(baud, &sp))
		return pc_fail(err, errlen, -EINVAL, "--baud %u is not a supported rate", baud);
	/* a console that is no tty (a FIFO in a test) is used as it is */
	l->fd = pc_tty_open(dev, baud, PC_TTY_NOT_TTY_OK, why, sizeof(why));
	if (l->fd < 0) {
		int ret = l->fd;

		l->fd = -1;
		return pc_fail(err, errlen, ret, "the console: %s", why);
	}
	l->marker = 1;
	snprintf(l->peer, sizeof(l->peer), "%s", dev);
	return 0;
}

/* The gathered lines at most (a reap's ACKs and the next SUBMIT fit many times). */
#define LINK_OUT ((size_t)64 << 10)
#define LINE_ROOM (PC_PROTO_MAX_LINE + 16)

/* Tag (once the session is up), mark and write one line of JSON text (n
 * bytes, no newline), or add it to the gathered lines when corked. */
static int send_text(struct link *l, const char *json, size_t n)
{
	char tmp[LINE_ROOM], *buf = tmp;
	size_t off = 0, cap = sizeof(tmp);
	int ret;

	if (l->cork && !l->out && !(l->out = malloc(LINK_OUT)))
		l->cork = 0;	/* no memory for it: each line is written as it comes */
	if (l->cork) {
		if (LINK_OUT - l->olen < LINE_ROOM && (ret = link_flush(l)))
			return ret;
		buf = l->out + l->olen;
		cap = LINK_OUT - l->olen;
	}
	if (l->marker) {
		memcpy(buf, PC_PROTO_MARKER, strlen(PC_PROTO_MARKER));
		off = strlen(PC_PROTO_MARKER);
	}
	if (n + off + 1 > cap)
		return -E2BIG;
	memmove(buf + off, json, n);
	if (l->s.up) {
		ret = pc_auth_seal(&l->s, buf + off, n, cap - off - 1);
		if (ret < 0)
			return ret;
		n = (size_t)ret;
	}
	buf[off + n] = '\n';
	if (l->cork) {
		l->olen += off + n + 1;
		return 0;
	}
	return pc_write_all(l->fd, buf, off + n + 1);
}

/* Serialise, tag (once the session is up), mark and write one message. */
static int send_line(struct link *l, json_object *msg, char *text, size_t textcap, size_t *textlen)
{
	char buf[LINE_ROOM];
	int n;

	if (!msg)
		return -ENOMEM;
	n = pc_msg_line(msg, buf, sizeof(buf));
	json_object_put(msg);
	if (n < 0)
		return n;
	n--;	/* the newline goes back after the tag */
	if (text) {
		/* the exact JSON text, for the proof that binds the hello */
		if ((size_t)n >= textcap)
			return -E2BIG;
		memcpy(text, buf, (size_t)n);
		text[n] = 0;
		*textlen = (size_t)n;
	}
	return send_text(l, buf, (size_t)n);
}

int link_send(struct link *l, json_object *msg)
{
	return send_line(l, msg, NULL, 0, NULL);
}

int link_send_text(struct link *l, const char *line, size_t len)
{
	if (len && line[len - 1] == '\n')
		len--;
	return send_text(l, line, len);
}

void link_cork(struct link *l)
{
	l->cork = 1;
}

int link_flush(struct link *l)
{
	int ret;

	if (!l->olen)
		return 0;
	ret = pc_write_all(l->fd, l->out, l->olen);
	l->olen = 0;
	return ret;
}

int link_uncork(struct link *l)
{
	int ret = link_flush(l);

	l->cork = 0;
	return ret;
}

/*
 * The next line of ours (for a serial console: the marked part of a marked
 * line), without marker or newline, NUL-terminated. timeout_ms < 0 waits for
 * ever. 0, -ETIMEDOUT, -EPIPE (end of file), -EINVAL (over-long line).
 */
static int next_line(struct link *l, char *line, size_t cap, size_t *len, const char **start, int timeout_ms,
		     char *err, size_t errlen)
{
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : pc_now_ms() + (uint64_t)timeout_ms;
	char data[4096];

	for (;;) {
		enum pc_line_result r = pc_linebuf_take(&l->lb, line, cap, len);
		size_t room = sizeof(l->lb.buf) - l->lb.len;
		ssize_t n;

		if (r == PC_LINE_OK) {
			const char *mk = line;

			if (*len == 0)
				continue;
			line[*len] = 0;
			if (l->marker) {
				/* a console carries other things too: only marked lines are ours */
				mk = strstr(line, PC_PROTO_MARKER);
				if (!mk)
					continue;
				/* the marker frames the line; the tag covers the JSON */
				mk += strlen(PC_PROTO_MARKER);
				*len -= (size_t)(mk - line);
			}
			*start = mk;
			return 0;
		}
		if (r == PC_LINE_TOO_LONG)
			return pc_fail(err, errlen, -EINVAL, "line from the host exceeds %d bytes", PC_PROTO_MAX_LINE);
		if (deadline != UINT64_MAX) {
			uint64_t now = pc_now_ms();
			struct pollfd p = { .fd = l->fd, .events = POLLIN };

			if (now >= deadline)
				return -ETIMEDOUT;
			if (poll(&p, 1, (int)(deadline - now)) == 0)
				return -ETIMEDOUT;
		}
		/* read no more than the line buffer can take, so nothing is dropped */
		if (room > sizeof(data))
			room = sizeof(data);
		if (room == 0)
			room = 1;
		n = read(l->fd, data, room);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return pc_fail(err, errlen, -errno, "reading from %s: %s", l->peer, strerror(errno));
		if (n == 0)
			return -EPIPE;
		pc_linebuf_feed(&l->lb, data, (size_t)n);
	}
}

int link_handshake(struct link *l, const struct pc_auth_key *k, json_object *hello, uint32_t timeout_ms,
		   char *err, size_t errlen)
{
	char an[2 * PC_AUTH_NONCE_BYTES + 1], text[PC_PROTO_MAX_LINE + 2], line[PC_PROTO_MAX_LINE + 2];
	char proof[2 * PC_AUTH_PROOF_BYTES + 1];
	uint64_t deadline = pc_now_ms() + timeout_ms;
	size_t tlen = 0, len;
	int ret;

	memset(&l->s, 0, sizeof(l->s));
	l->confirmed = 0;
	pc_auth_nonce(an);
	json_object_object_add(hello, "nonce", json_object_new_string(an));
	ret = send_line(l, hello, text, sizeof(text), &tlen);
	if (ret)
		return pc_fail(err, errlen, ret, "sending hello to %s: %s", l->peer, strerror(-ret));
	for (;;) {
		uint64_t now = pc_now_ms();
		const char *mk;
		struct pc_msg m;
		json_object *v;
		char perr[256];

		if (now >= deadline)
			return pc_fail(err, errlen, -ETIMEDOUT, "no challenge from the host at %s within %u ms", l->peer, timeout_ms);
		ret = next_line(l, line, sizeof(line), &len, &mk, (int)(deadline - now), err, errlen);
		if (ret == -ETIMEDOUT)
			continue;
		if (ret == -EPIPE)
			return pc_fail(err, errlen, ret, "the host at %s closed the link before its challenge", l->peer);
		if (ret == -EINVAL)
			continue;	/* an over-long line: not the challenge */
		if (ret)
			return ret;
		if (pc_msg_parse(mk, len, &m, perr, sizeof(perr))) {
			pc_debug("before the challenge, ignored a line: %s", perr);
			continue;
		}
		if (m.type != PC_MSG_CHALLENGE || !json_object_object_get_ex(m.obj, "echo", &v) ||
		    strcasecmp(json_object_get_string(v), an)) {
			/* on a shared console: another boot's, or someone else's */
			pc_debug("before the challenge, ignored a '%s' line", pc_msg_type_name(m.type));
			pc_msg_clear(&m);
			continue;
		}
		json_object_object_get_ex(m.obj, "nonce", &v);
		if (pc_auth_proof(k, json_object_get_string(v), an, text, tlen, proof) ||
		    pc_auth_session_init(&l->s, k, json_object_get_string(v), an, 0)) {
			pc_msg_clear(&m);
			return pc_fail(err, errlen, -EINVAL, "the host's challenge has bad nonces");
		}
		pc_msg_clear(&m);
		break;
	}
	{
		json_object *a = pc_msg_new(PC_MSG_AUTH);
		int up = l->s.up;

		json_object_object_add(a, "mac", json_object_new_string(proof));
		l->s.up = 0;	/* the proof itself is not tagged */
		ret = send_line(l, a, NULL, 0, NULL);
		l->s.up = up;
	}
	if (ret)
		return pc_fail(err, errlen, ret, "sending the proof to %s: %s", l->peer, strerror(-ret));
	return 0;
}

int link_recv(struct link *l, struct pc_msg *m, char *err, size_t errlen)
{
	char line[PC_PROTO_MAX_LINE + 2];
	size_t len;

	for (;;) {
		const char *mk;
		char why[256];
		int ret = next_line(l, line, sizeof(line), &len, &mk, -1, err, errlen);

		if (ret)
			return ret;
		if (pc_auth_open(&l->s, mk, len, why, sizeof(why))) {
			/* not the host's: a second writer on the console, a replay */
			l->dropped++;
			pc_warn("dropped a line from %s: %s: %.80s", l->peer, why, mk);
			continue;
		}
		l->confirmed = 1;
		return pc_msg_parse(mk, len, m, err, errlen);
	}
}

void link_close(struct link *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	free(l->out);
	l->out = NULL;
	l->olen = 0;
	l->cork = 0;
}

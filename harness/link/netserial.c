/*
 * netserial.c - a board's serial console over the network (netserial.h).
 *
 * The harness polls one descriptor per console for the whole campaign. For
 * a network console that descriptor is an epoll instance holding the socket
 * (while there is one) and a timerfd: it is readable when the socket has
 * something, when a connection attempt completes, and when a deadline
 * passes (a connection attempt that hangs, a telnet probe unanswered,
 * output the peer does not take, the next reconnection). So the campaign's
 * loop keeps polling the same number while the link behind it connects,
 * breaks and reconnects, and nothing here ever waits (except in
 * netserial_open, before the loop starts).
 *
 * Telnet (RFC 854) with the options a serial export needs: BINARY (RFC 856)
 * both ways, SUPPRESS-GO-AHEAD both ways, and for rfc2217:// COM-PORT-OPTION
 * (RFC 2217) to set the line to <baud> 8N1 without flow control. Everything
 * else the peer offers or asks for is refused (ECHO among them: an echo of
 * the host's lines would come back as console lines). Negotiation follows
 * RFC 1143's rule: a request for the state an option is already in is not
 * answered, so two sides cannot loop. A TIMING-MARK (RFC 860) probes the
 * peer at connect and at every power-on: ser2net answers it at once; one
 * that does not within the timeout has stalled, and the link is closed and
 * reconnected. It is also probed whenever it has sent nothing for half the
 * timeout, so that a peer that stalls while the board boots is known for
 * what it is before the board is blamed for a silent boot.
 */
#include "harness/link/netserial.h"
#include "common/resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/util.h"

/* telnet */
#define T_SE	240
#define T_SB	250
#define T_WILL	251
#define T_WONT	252
#define T_DO	253
#define T_DONT	254
#define T_IAC	255

#define O_BINARY	0
#define O_ECHO		1
#define O_SGA		3
#define O_TM		6
#define O_COM_PORT	44

/* RFC 2217 client commands (the server answers with +100) */
#define CP_SET_BAUDRATE	1
#define CP_SET_DATASIZE	2
#define CP_SET_PARITY	3
#define CP_SET_STOPSIZE	4
#define CP_SET_CONTROL	5

enum { S_DATA, S_IAC, S_OPT, S_SB, S_SB_IAC };
enum { Q_NO, Q_YES, Q_WANTYES };

#define NS_SB_MAX	4096		/* a longer subnegotiation: not a telnet server */
#define NS_OUT_MAX	(64 * 1024)	/* output the peer has not taken: past it, it has stalled */
#define NS_ADDRS	4
#define NS_BACKOFF_MIN	50
#define NS_BACKOFF_MAX	5000

/* ---- the telnet decoder ---- */

static int accept_him(const struct ns_telnet *t, uint8_t opt)
{
	(void)t;
	return opt == O_BINARY || opt == O_SGA;
}

static int accept_us(const struct ns_telnet *t, uint8_t opt)
{
	return opt == O_BINARY || opt == O_SGA || (opt == O_COM_PORT && t->want_com_port);
}

static void put3(uint8_t *reply, size_t *rl, uint8_t cmd, uint8_t opt)
{
	reply[(*rl)++] = T_IAC;
	reply[(*rl)++] = cmd;
	reply[(*rl)++] = opt;
}

/* WILL/WONT/DO/DONT opt from the peer (RFC 1143, without WANTNO: we never
 * ask to turn an option off). */
static void negotiate(struct ns_telnet *t, uint8_t cmd, uint8_t opt, uint8_t *reply, size_t *rl)
{
	if (opt == O_TM) {
		/* the answer to our probe, either way; a DO TM of the peer's is
		 * answered WONT (we keep no marks) */
		if (cmd == T_WILL || cmd == T_WONT)
			t->tm_answered = 1;
		else if (cmd == T_DO)
			put3(reply, rl, T_WONT, O_TM);
		return;
	}
	switch (cmd) {
	case T_WILL:
		if (t->him[opt] == Q_NO) {
			if (accept_him(t, opt)) {
				t->him[opt] = Q_YES;
				put3(reply, rl, T_DO, opt);
			} else {
				put3(reply, rl, T_DONT, opt);
			}
		} else if (t->him[opt] == Q_WANTYES) {
			t->him[opt] = Q_YES;	/* the answer to our DO */
		}
		break;
	case T_WONT:
		if (t->him[opt] == Q_YES)
			put3(reply, rl, T_DONT, opt);
		t->him[opt] = Q_NO;
		break;
	case T_DO:
		if (t->us[opt] == Q_NO) {
			if (accept_us(t, opt)) {
				t->us[opt] = Q_YES;
				put3(reply, rl, T_WILL, opt);
			} else {
				put3(reply, rl, T_WONT, opt);
			}
		} else if (t->us[opt] == Q_WANTYES) {
			t->us[opt] = Q_YES;
		}
		break;
	case T_DONT:
		if (t->us[opt] == Q_YES)
			put3(reply, rl, T_WONT, opt);
		t->us[opt] = Q_NO;
		break;
	}
	t->binary_in = t->him[O_BINARY] == Q_YES;
	t->com_port = t->us[O_COM_PORT] == Q_YES;
}

/* A complete subnegotiation (what was kept of it). */
static void subneg(struct ns_telnet *t)
{
	/* RFC 2217: the server's answer to SET-BAUDRATE says the rate it set */
	if (t->sbtotal == 6 && t->sblen == 6 && t->sb[0] == O_COM_PORT && t->sb[1] == 100 + CP_SET_BAUDRATE)
		t->com_baud = (uint32_t)t->sb[2] << 24 | (uint32_t)t->sb[3] << 16 | (uint32_t)t->sb[4] << 8 | t->sb[5];
}

static void sb_byte(struct ns_telnet *t, uint8_t c)
{
	if (t->sblen < sizeof(t->sb))
		t->sb[t->sblen++] = c;
	if (++t->sbtotal > NS_SB_MAX)
		t->error = 1;
}

size_t ns_telnet_decode(struct ns_telnet *t, const uint8_t *in, size_t n, uint8_t *out, uint8_t *reply,
			size_t *replylen)
{
	size_t o = 0, rl = 0;

	for (size_t i = 0; i < n; i++) {
		uint8_t c = in[i];

		switch (t->state) {
		case S_DATA:
			if (c == T_IAC) {
				t->state = S_IAC;
			} else if (c == 0 && t->cr && !t->binary_in) {
				t->cr = 0;	/* NVT: CR NUL is a bare CR */
			} else {
				out[o++] = c;
				t->cr = c == '\r';
			}
			break;
		case S_IAC:
		iac:
			t->state = S_DATA;
			if (c == T_IAC) {
				out[o++] = c;
				t->cr = 0;
			} else if (c >= T_WILL) {
				t->cmd = c;
				t->state = S_OPT;
			} else if (c == T_SB) {
				t->sblen = t->sbtotal = 0;
				t->state = S_SB;
			}
			/* NOP, DM, BRK, IP, AO, AYT, EC, EL, GA, a stray SE, or a
			 * byte that is no command: nothing to do */
			break;
		case S_OPT:
			negotiate(t, t->cmd, c, reply, &rl);
			t->state = S_DATA;
			break;
		case S_SB:
			if (c == T_IAC)
				t->state = S_SB_IAC;
			else
				sb_byte(t, c);
			break;
		case S_SB_IAC:
			if (c == T_IAC) {
				sb_byte(t, c);
				t->state = S_SB;
			} else if (c == T_SE) {
				subneg(t);
				t->state = S_DATA;
			} else {
				/* IAC <cmd> inside a subnegotiation: it ended
				 * without its SE; the command stands */
				subneg(t);
				goto iac;
			}
			break;
		}
	}
	*replylen = rl;
	return o;
}

/* ---- addresses ---- */

int netserial_is_url(const char *dev)
{
	size_t n = strspn(dev, "abcdefghijklmnopqrstuvwxyz0123456789+-.");

	return n > 0 && !strncmp(dev + n, "://", 3);
}

int netserial_parse(const char *url, enum ns_proto *proto, char *host, size_t hostlen, char *service,
		    size_t servlen, char *why, size_t whylen)
{
	static const struct { const char *scheme; enum ns_proto p; } schemes[] = {
		{ "tcp://", NS_RAW }, { "telnet://", NS_TELNET }, { "rfc2217://", NS_RFC2217 },
	};
	const char *h = NULL, *end, *colon;
	size_t hl;
	char *e;
	long port;

	for (size_t i = 0; i < PC_ARRAY_SIZE(schemes); i++)
		if (!strncmp(url, schemes[i].scheme, strlen(schemes[i].scheme))) {
			h = url + strlen(schemes[i].scheme);
			*proto = schemes[i].p;
		}
	if (!h) {
		snprintf(why, whylen, "unknown scheme '%.*s' (known: tcp:// telnet:// rfc2217://)",
			 (int)(strstr(url, "://") ? strstr(url, "://") - url : 0), url);
		return -EINVAL;
	}
	end = h + strlen(h);
	if (end > h && end[-1] == '/')
		end--;
	if (memchr(h, '/', (size_t)(end - h)) || memchr(h, '?', (size_t)(end - h)) || memchr(h, '@', (size_t)(end - h))) {
		snprintf(why, whylen, "expected SCHEME://HOST:PORT, with no path, query or user");
		return -EINVAL;
	}
	if (*h == '[') {
		const char *rb = memchr(h, ']', (size_t)(end - h));

		if (!rb || rb + 1 >= end || rb[1] != ':') {
			snprintf(why, whylen, "expected [IPv6]:PORT");
			return -EINVAL;
		}
		hl = (size_t)(rb - h - 1);
		h++;
		colon = rb + 1;
	} else {
		colon = memchr(h, ':', (size_t)(end - h));
		if (!colon) {
			snprintf(why, whylen, "missing :PORT (ser2net's and labgrid's exports have no default port)");
			return -EINVAL;
		}
		if (memchr(colon + 1, ':', (size_t)(end - colon - 1))) {
			snprintf(why, whylen, "an IPv6 address goes in brackets: [::1]:PORT");
			return -EINVAL;
		}
		hl = (size_t)(colon - h);
	}
	if (hl == 0 || hl >= hostlen) {
		snprintf(why, whylen, "missing or bad host");
		return -EINVAL;
	}
	for (size_t i = 0; i < hl; i++)
		if ((unsigned char)h[i] <= ' ' || (unsigned char)h[i] >= 0x7f) {
			snprintf(why, whylen, "bad character in the host");
			return -EINVAL;
		}
	memcpy(host, h, hl);
	host[hl] = 0;
	errno = 0;
	port = strtol(colon + 1, &e, 10);
	if (e != end || colon + 1 == end || port < 1 || port > 65535 || colon[1] == '+' || colon[1] == '-') {
		snprintf(why, whylen, "bad port (expected 1-65535)");
		return -EINVAL;
	}
	snprintf(service, servlen, "%ld", port);
	return 0;
}

/* ---- the link ---- */

enum ns_state { ST_IDLE, ST_CONNECTING, ST_UP };

struct netserial {
	char url[320];
	char host[256], service[8];
	enum ns_proto proto;
	uint32_t baud, timeout_ms;
	struct sockaddr_storage addr[NS_ADDRS];
	socklen_t addrlen[NS_ADDRS];
	unsigned naddr, ai;
	int ep, tfd, sock;
	enum ns_state st;
	int ep_out;			/* the socket is in ep for EPOLLOUT too */
	uint64_t deadline;		/* connecting: give up at */
	uint64_t reconnect_at;		/* idle: connect again at */
	uint64_t probe_deadline;	/* up: the TIMING-MARK must be answered by */
	uint64_t out_since;		/* up: output waiting since (last progress) */
	uint64_t up_since;
	uint64_t last_rx;		/* up: when the peer last sent something */
	uint32_t backoff;
	int probing, sent_com_port, came_up, marked_up;
	char fail[200];			/* why the last address failed (connecting) */
	char down[400];			/* a break not reported yet */
	struct ns_telnet tn;
	size_t outlen;
	uint8_t out[NS_OUT_MAX];
};

static int telnet(const struct netserial *ns)
{
	return ns->proto != NS_RAW;
}

static int ep_set(struct netserial *ns, int op, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = ns->sock };

	return epoll_ctl(ns->ep, op, ns->sock, &ev);
}

/* The timer fires at the earliest deadline of the state (or now, with a
 * break to report). */
static void arm(struct netserial *ns)
{
	uint64_t now = pc_now_ms(), at = UINT64_MAX;
	struct itimerspec its = { 0 };

	if (ns->down[0] || ns->came_up)
		at = now;
	if (ns->st == ST_CONNECTING && ns->deadline < at)
		at = ns->deadline;
	if (ns->st == ST_IDLE && ns->reconnect_at < at)
		at = ns->reconnect_at;
	if (ns->st == ST_UP && ns->probing && ns->probe_deadline < at)
		at = ns->probe_deadline;
	if (ns->st == ST_UP && telnet(ns) && !ns->probing && ns->last_rx + ns->timeout_ms / 2 < at)
		at = ns->last_rx + ns->timeout_ms / 2;
	if (ns->st == ST_UP && ns->outlen && ns->out_since + ns->timeout_ms < at)
		at = ns->out_since + ns->timeout_ms;
	if (at != UINT64_MAX) {
		uint64_t ms = at > now ? at - now : 0;

		its.it_value.tv_sec = (time_t)(ms / 1000);
		its.it_value.tv_nsec = (long)(ms % 1000) * 1000000 + (ms ? 0 : 1);
	}
	timerfd_settime(ns->tfd, 0, &its, NULL);
}

static void close_sock(struct netserial *ns)
{
	if (ns->sock >= 0) {
		epoll_ctl(ns->ep, EPOLL_CTL_DEL, ns->sock, NULL);
		close(ns->sock);
	}
	ns->sock = -1;
	ns->ep_out = 0;
	ns->outlen = 0;
	ns->probing = 0;
}

/* The link broke: say so once (the first reason: the rest follows from
 * it), and reconnect after a pause that grows while it keeps failing. */
static void go_down(struct netserial *ns, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void go_down(struct netserial *ns, const char *fmt, ...)
{
	uint64_t now = pc_now_ms();
	char why[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (ns->st == ST_UP && now - ns->up_since > 10000)
		ns->backoff = 0;	/* it held a while: start over */
	close_sock(ns);
	ns->st = ST_IDLE;
	ns->marked_up = 0;
	ns->came_up = 0;
	if (!ns->down[0])
		snprintf(ns->down, sizeof(ns->down), "console %s: %s", ns->url, why);
	/* at once the first time, then after 50 ms, 100 ms, ... 5 s */
	ns->reconnect_at = now + ns->backoff;
	ns->backoff = !ns->backoff ? NS_BACKOFF_MIN : ns->backoff * 2 > NS_BACKOFF_MAX ? NS_BACKOFF_MAX : ns->backoff * 2;
	arm(ns);
}

/* Send what the socket takes now; 0 or -errno (the link is then down). */
static int flush(struct netserial *ns)
{
	size_t off = 0;
	int rc = 0;

	while (off < ns->outlen) {
		ssize_t n = send(ns->sock, ns->out + off, ns->outlen - off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			off += (size_t)n;
			ns->out_since = pc_now_ms();
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		rc = n < 0 ? -errno : -EPIPE;
		break;
	}
	if (rc) {
		go_down(ns, "sending: %s", strerror(-rc));
		return rc;
	}
	memmove(ns->out, ns->out + off, ns->outlen - off);
	ns->outlen -= off;
	if (!!ns->outlen != ns->ep_out) {
		ns->ep_out = !!ns->outlen;
		ep_set(ns, EPOLL_CTL_MOD, EPOLLIN | (ns->ep_out ? EPOLLOUT : 0));
	}
	return 0;
}

/* Queue raw protocol bytes (already escaped); 0 or -ENOBUFS (down). */
static int queue_raw(struct netserial *ns, const uint8_t *p, size_t n)
{
	if (ns->outlen + n > sizeof(ns->out)) {
		go_down(ns, "stalled: it has not taken %zu KiB of output", sizeof(ns->out) / 1024);
		return -ENOBUFS;
	}
	if (!ns->outlen)
		ns->out_since = pc_now_ms();
	memcpy(ns->out + ns->outlen, p, n);
	ns->outlen += n;
	return 0;
}

static void probe(struct netserial *ns)
{
	static const uint8_t tm[] = { T_IAC, T_DO, O_TM };

	if (queue_raw(ns, tm, sizeof(tm)))
		return;
	ns->tn.tm_answered = 0;
	ns->probing = 1;
	ns->probe_deadline = pc_now_ms() + ns->timeout_ms;
}

/* RFC 2217: <baud> 8N1, no flow control, once the peer agreed. */
static void com_port_setup(struct netserial *ns)
{
	uint8_t b[64];
	size_t n = 0;
	const uint8_t rate[4] = { (uint8_t)(ns->baud >> 24), (uint8_t)(ns->baud >> 16), (uint8_t)(ns->baud >> 8),
				  (uint8_t)ns->baud };

	b[n++] = T_IAC, b[n++] = T_SB, b[n++] = O_COM_PORT, b[n++] = CP_SET_BAUDRATE;
	for (int i = 0; i < 4; i++) {
		b[n++] = rate[i];
		if (rate[i] == T_IAC)
			b[n++] = T_IAC;
	}
	b[n++] = T_IAC, b[n++] = T_SE;
	b[n++] = T_IAC, b[n++] = T_SB, b[n++] = O_COM_PORT, b[n++] = CP_SET_DATASIZE, b[n++] = 8, b[n++] = T_IAC,
	b[n++] = T_SE;
	b[n++] = T_IAC, b[n++] = T_SB, b[n++] = O_COM_PORT, b[n++] = CP_SET_PARITY, b[n++] = 1, b[n++] = T_IAC,
	b[n++] = T_SE;
	b[n++] = T_IAC, b[n++] = T_SB, b[n++] = O_COM_PORT, b[n++] = CP_SET_STOPSIZE, b[n++] = 1, b[n++] = T_IAC,
	b[n++] = T_SE;
	b[n++] = T_IAC, b[n++] = T_SB, b[n++] = O_COM_PORT, b[n++] = CP_SET_CONTROL, b[n++] = 1, b[n++] = T_IAC,
	b[n++] = T_SE;
	ns->sent_com_port = 1;
	queue_raw(ns, b, n);
}

static void connected(struct netserial *ns)
{
	static const uint8_t hello[] = {
		T_IAC, T_WILL, O_BINARY, T_IAC, T_DO, O_BINARY, T_IAC, T_WILL, O_SGA, T_IAC, T_DO, O_SGA,
	};
	static const uint8_t com[] = { T_IAC, T_WILL, O_COM_PORT };

	ns->st = ST_UP;
	ns->up_since = ns->last_rx = pc_now_ms();
	ns->came_up = 1;
	ns->sent_com_port = 0;
	ns->outlen = 0;
	memset(&ns->tn, 0, sizeof(ns->tn));
	ns->tn.want_com_port = ns->proto == NS_RFC2217;
	ep_set(ns, EPOLL_CTL_MOD, EPOLLIN);
	ns->ep_out = 0;
	if (telnet(ns)) {
		ns->tn.us[O_BINARY] = ns->tn.him[O_BINARY] = Q_WANTYES;
		ns->tn.us[O_SGA] = ns->tn.him[O_SGA] = Q_WANTYES;
		queue_raw(ns, hello, sizeof(hello));
		if (ns->tn.want_com_port) {
			ns->tn.us[O_COM_PORT] = Q_WANTYES;
			queue_raw(ns, com, sizeof(com));
		}
		/* a peer that accepted (its kernel did) but does not run */
		probe(ns);
		flush(ns);
	}
}

/* Start connecting to the next address; the outcome comes through ep. */
static void connect_start(struct netserial *ns)
{
	uint64_t now = pc_now_ms();

	while (ns->ai < ns->naddr) {
		struct sockaddr *sa = (struct sockaddr *)&ns->addr[ns->ai];
		int one = 1, idle = 5, intvl = 2, cnt = 3;
		unsigned ut = ns->timeout_ms;

		ns->sock = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (ns->sock < 0) {
			snprintf(ns->fail, sizeof(ns->fail), "socket: %s", strerror(errno));
			ns->ai++;
			continue;
		}
		/* short lines both ways, and a peer host that vanished is noticed:
		 * keepalive probes, and unacknowledged output times out */
		setsockopt(ns->sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(ns->sock, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(ns->sock, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
		setsockopt(ns->sock, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
		setsockopt(ns->sock, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
		setsockopt(ns->sock, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
		if (connect(ns->sock, sa, ns->addrlen[ns->ai]) == 0 || errno == EINPROGRESS) {
			ns->st = ST_CONNECTING;
			ns->deadline = now + ns->timeout_ms;
			ep_set(ns, EPOLL_CTL_ADD, EPOLLOUT);
			arm(ns);
			return;
		}
		snprintf(ns->fail, sizeof(ns->fail), "%s", strerror(errno));
		close(ns->sock);
		ns->sock = -1;
		ns->ai++;
	}
	ns->ai = 0;
	go_down(ns, "cannot connect: %s", ns->fail);
}

/* A connection attempt in progress: done? (0 still waiting) */
static int connect_check(struct netserial *ns)
{
	struct pollfd p = { .fd = ns->sock, .events = POLLOUT };
	int soerr = 0;
	socklen_t len = sizeof(soerr);

	if (poll(&p, 1, 0) <= 0) {
		if (pc_now_ms() < ns->deadline)
			return 0;
		snprintf(ns->fail, sizeof(ns->fail), "no answer within %u ms", ns->timeout_ms);
	} else {
		if (getsockopt(ns->sock, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		if (!soerr) {
			ns->ai = 0;
			connected(ns);
			return 1;
		}
		snprintf(ns->fail, sizeof(ns->fail), "%s", strerror(soerr));
	}
	close_sock(ns);
	ns->st = ST_IDLE;
	ns->ai++;
	connect_start(ns);	/* the next address, or down */
	return 1;
}

/* Read once from the socket, decode; bytes of console data put in buf. */
static size_t receive(struct netserial *ns, char *buf, size_t cap)
{
	uint8_t raw[4096], reply[3 * sizeof(raw)];
	size_t want = cap < sizeof(raw) ? cap : sizeof(raw), n, rl = 0;
	ssize_t r;

	if (!want)
		return 0;
	r = recv(ns->sock, raw, want, MSG_DONTWAIT);
	if (r < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			go_down(ns, "%s", errno == ETIMEDOUT ? "the peer stopped answering (TCP timeout)" : strerror(errno));
		return 0;
	}
	if (r == 0) {
		go_down(ns, "the peer closed the connection");
		return 0;
	}
	ns->last_rx = pc_now_ms();
	if (!telnet(ns)) {
		memcpy(buf, raw, (size_t)r);
		return (size_t)r;
	}
	n = ns_telnet_decode(&ns->tn, raw, (size_t)r, (uint8_t *)buf, reply, &rl);
	if (ns->tn.error) {
		go_down(ns, "not a telnet server: a subnegotiation longer than %d bytes", NS_SB_MAX);
		return 0;
	}
	if (ns->probing && ns->tn.tm_answered)
		ns->probing = 0;
	if (rl && queue_raw(ns, reply, rl))
		return 0;
	if (ns->tn.com_port && !ns->sent_com_port)
		com_port_setup(ns);
	if (ns->st == ST_UP && ns->outlen)
		flush(ns);
	return n;
}

int netserial_poll(struct netserial *ns, char *buf, size_t cap, size_t *got, char *why, size_t whylen)
{
	uint64_t ticks, now;
	int flags = 0;

	*got = 0;
	if (why && whylen)
		why[0] = 0;
	while (read(ns->tfd, &ticks, sizeof(ticks)) > 0)
		;
	if (ns->st == ST_CONNECTING)
		connect_check(ns);
	if (ns->st == ST_UP)
		*got = receive(ns, buf, cap);
	if (ns->st == ST_UP && ns->outlen)
		flush(ns);
	now = pc_now_ms();
	if (ns->st == ST_UP && ns->probing && now >= ns->probe_deadline)
		go_down(ns, "stalled: no answer to a telnet TIMING-MARK within %u ms", ns->timeout_ms);
	if (ns->st == ST_UP && ns->outlen && now >= ns->out_since + ns->timeout_ms)
		go_down(ns, "stalled: it has not taken the host's output for %u ms", ns->timeout_ms);
	if (ns->st == ST_UP && telnet(ns) && !ns->probing && now >= ns->last_rx + ns->timeout_ms / 2) {
		probe(ns);	/* quiet a while: still there? */
		if (ns->st == ST_UP)
			flush(ns);
	}
	if (ns->st == ST_IDLE && now >= ns->reconnect_at)
		connect_start(ns);
	if (*got)
		flags |= NS_DATA;
	if (ns->came_up && ns->st == ST_UP)
		flags |= NS_UP;
	ns->came_up = 0;
	if (ns->down[0]) {
		flags |= NS_DOWN;
		if (why)
			pc_strlcpy(why, ns->down, whylen);
		ns->down[0] = 0;
	}
	arm(ns);
	return flags;
}

int netserial_write(struct netserial *ns, const void *buf, size_t len, char *why, size_t whylen)
{
	const uint8_t *p = buf;
	int binary_out = ns->tn.us[O_BINARY] == Q_YES, rc;
	size_t need = 0;

	if (ns->st != ST_UP) {
		snprintf(why, whylen, "console %s: not connected (%s)", ns->url,
			 ns->st == ST_CONNECTING ? "connecting" : "reconnecting");
		return -ENOTCONN;
	}
	if (!telnet(ns)) {
		rc = queue_raw(ns, p, len);
	} else {
		for (size_t i = 0; i < len; i++)
			need += p[i] == T_IAC || (p[i] == '\r' && !binary_out) ? 2 : 1;
		if (ns->outlen + need > sizeof(ns->out)) {
			go_down(ns, "stalled: it has not taken %zu KiB of output", sizeof(ns->out) / 1024);
			rc = -ENOBUFS;
		} else {
			if (!ns->outlen)
				ns->out_since = pc_now_ms();
			for (size_t i = 0; i < len; i++) {
				ns->out[ns->outlen++] = p[i];
				if (p[i] == T_IAC)
					ns->out[ns->outlen++] = T_IAC;
				else if (p[i] == '\r' && !binary_out)
					ns->out[ns->outlen++] = 0;
			}
			rc = 0;
		}
	}
	if (!rc)
		rc = flush(ns);
	if (rc)
		snprintf(why, whylen, "%s", ns->down[0] ? ns->down : "console: write failed");
	arm(ns);
	return rc;
}

void netserial_mark(struct netserial *ns)
{
	if (ns->st == ST_IDLE) {
		connect_start(ns);
	} else if (ns->st == ST_UP && telnet(ns) && !ns->probing) {
		probe(ns);
		if (ns->st == ST_UP)
			flush(ns);
	}
	ns->marked_up = ns->st == ST_UP;
	arm(ns);
}

int netserial_up_since_mark(const struct netserial *ns)
{
	return ns->marked_up && ns->st == ST_UP;
}

int netserial_is_up(const struct netserial *ns)
{
	return ns->st == ST_UP;
}

const char *netserial_url(const struct netserial *ns)
{
	return ns->url;
}

int netserial_fd(const struct netserial *ns)
{
	return ns->ep;
}

/* Within the deadline: a dead DNS server must not stall the start. */
static int resolve(struct netserial *ns, uint64_t deadline, char *err, size_t errlen)
{
	struct addrinfo *res, *ai;
	int rc = pc_resolve(ns->host, ns->service, deadline, ns->timeout_ms, &res, err, errlen);

	if (rc)
		return rc;
	for (ai = res; ai && ns->naddr < NS_ADDRS; ai = ai->ai_next) {
		if (ai->ai_addrlen > sizeof(ns->addr[0]))
			continue;
		memcpy(&ns->addr[ns->naddr], ai->ai_addr, ai->ai_addrlen);
		ns->addrlen[ns->naddr++] = ai->ai_addrlen;
	}
	freeaddrinfo(res);
	if (!ns->naddr) {
		return pc_fail(err, errlen, -EHOSTUNREACH, "%s has no usable address", ns->host);
	}
	return 0;
}

struct netserial *netserial_open(const char *url, uint32_t baud, uint32_t timeout_ms, char *err, size_t errlen)
{
	struct netserial *ns = calloc(1, sizeof(*ns));
	char why[200];
	uint64_t deadline;
	struct epoll_event ev = { .events = EPOLLIN };

	if (!ns) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ns->ep = ns->tfd = ns->sock = -1;
	pc_strlcpy(ns->url, url, sizeof(ns->url));
	if (netserial_parse(url, &ns->proto, ns->host, sizeof(ns->host), ns->service, sizeof(ns->service), why,
			    sizeof(why))) {
		snprintf(err, errlen, "%s: %s", url, why);
		goto fail;
	}
	ns->baud = baud;
	ns->timeout_ms = timeout_ms ? timeout_ms : 5000;
	ns->backoff = 0;
	deadline = pc_now_ms() + ns->timeout_ms;
	ns->ep = epoll_create1(EPOLL_CLOEXEC);
	ns->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	ev.data.fd = ns->tfd;
	if (ns->ep < 0 || ns->tfd < 0 || epoll_ctl(ns->ep, EPOLL_CTL_ADD, ns->tfd, &ev) < 0) {
		snprintf(err, errlen, "%s: %s", url, strerror(errno));
		goto fail;
	}
	if (resolve(ns, deadline, why, sizeof(why))) {
		snprintf(err, errlen, "console %s: %s", url, why);
		goto fail;
	}
	/* the first connection is waited for (the loop has not started) */
	connect_start(ns);
	while (ns->st == ST_CONNECTING) {
		struct pollfd p = { .fd = ns->sock, .events = POLLOUT };
		uint64_t now = pc_now_ms();

		poll(&p, 1, now < ns->deadline ? (int)(ns->deadline - now) : 0);
		connect_check(ns);
	}
	if (ns->st != ST_UP) {
		snprintf(err, errlen, "cannot connect to its console %s: %s; is the exporter (ser2net, labgrid) running "
			 "there, and is the port right?", url, ns->fail);
		goto fail;
	}
	ns->came_up = 0;	/* the first connection is not news */
	arm(ns);
	return ns;
fail:
	netserial_close(ns, 1);
	return NULL;
}

void netserial_close(struct netserial *ns, int own_fd)
{
	if (!ns)
		return;
	if (ns->sock >= 0)
		close(ns->sock);
	if (ns->tfd >= 0)
		close(ns->tfd);
	if (own_fd && ns->ep >= 0)
		close(ns->ep);
	free(ns);
}

/*
 * board.c - a board's link to its agent (board.h): its output queue, the
 * challenge-response handshake on its serial console, serial and network
 * consoles, and every line that arrives on the link (docs/protocol.md), each
 * over this room's part for it (outq.c, handshake.c, netserial.c). One
 * object per board, its owner's; no list of boards here. What it knows of
 * the board it was told (struct link_board_cfg, link_board_set_phase,
 * link_board_power_on); what a line means is the owner's: the link hands it
 * on through the ops the owner gave it (struct link_board_ops), and so the
 * events it sees and the lines it refuses. Connections not yet proven are
 * pending.c's; a proven one comes here (link_board_proven).
 */
#include "harness/link/board.h"
#include "harness/link/handshake.h"
#include "harness/link/netserial.h"
#include "harness/link/outq.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/auth.h"
#include "common/proto.h"
#include "common/tty.h"
#include "common/util.h"

#define MAX_SERIAL_HELLOS 4	/* hellos awaiting their proof on one console */

/* A board's link (board.h): only this file sees inside it. */
struct link_board {
	int fd;			/* the link to the agent: a TCP connection, or sfd */
	struct pc_linebuf lb;
	/* serial console link (cfg->link_serial): open as long as the link */
	int sfd;
	struct netserial *ns;	/* a console over the network: its client (sfd is its descriptor), or NULL */
	int cfd;		/* this power-on's console log */
	struct pc_linebuf slb;
	struct outq q;		/* the link's output queue (harness/link/outq.h) */
	struct handshake shs[MAX_SERIAL_HELLOS];	/* serial: hellos awaiting proof */
	/* the authenticated session of this power-on's agent */
	struct pc_auth_session s;
	/* what the link knows of its board: told when it was made, and since */
	struct link_board_cfg cfg;
	enum link_phase phase;
	uint64_t t_power;	/* this power-on's instant (pc_now_ms) */
	const struct link_board_ops *ops;
	void *owner;
};

static void board_read(struct link_board *l);
static void serial_read(struct link_board *l);

/* A line refused, for the owner's record (its reason formatted as the record has it). */
static void link_reject(struct link_board *l, int attempt, const char *peer, const char *line, size_t len,
			const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void link_reject(struct link_board *l, int attempt, const char *peer, const char *line, size_t len,
			const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	l->ops->reject(l->owner, attempt, peer, line, len, why);
}

/* The cycle ends in an INFRA_ERROR: told to the owner (its ops). */
static void link_infra(struct link_board *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void link_infra(struct link_board *l, const char *fmt, ...)
{
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	l->ops->infra(l->owner, why);
}

/*
 * A console exported over the network (link.device "tcp://", "telnet://",
 * "rfc2217://"; netserial.h) is the board's link's own (l->ns), opened with
 * it and freed with it: the owner knows only the descriptor it
 * polls (sfd).
 */
static struct netserial *net_of(const struct link_board *l)
{
	if (!l || !l->ns || l->sfd < 0 || netserial_fd(l->ns) != l->sfd)
		return NULL;
	return l->ns;
}

int link_board_wants_out(const struct link_board *l)
{
	return outq_wants_out(&l->q);
}

void link_board_flush(struct link_board *l)
{
	outq_flush(&l->q, l->cfg.name);
}

const char *link_board_strerror(const struct link_board *l, int err)
{
	return outq_strerror(&l->q, err);
}

/* Write to a board's link or a pending connection: the console's own way
 * when it is a network console, through the board's output queue
 * otherwise. A pending connection's one line (the challenge) goes to a
 * fresh socket whole. 0 or -errno (errno set too). */
static int link_write(struct link_board *l, int fd, const char *buf, size_t len)
{
	struct netserial *ns = l && fd == l->sfd ? net_of(l) : NULL;
	char why[512];
	int rc;

	if (!l)
		return pc_write_all(fd, buf, len);
	if (!ns)
		return outq_write(&l->q, fd, buf, len, l->cfg.name);
	rc = netserial_write(ns, buf, len, why, sizeof(why));
	if (rc) {
		pc_warn("board %s: %s", l->cfg.name, why);
		errno = -rc;
	}
	return rc;
}

/* Answer a hello (its exact text, and parsed) with a challenge; 0 or -errno. */
static int hs_start(struct link_board *l, struct handshake *h, const char *text, size_t len, json_object *hello, int fd,
		    int marker)
{
	char buf[256];
	int n = link_hs_challenge(h, text, len, hello, marker, buf, sizeof(buf));

	if (n < 0)
		return n;
	return link_write(l, fd, buf, (size_t)n);
}

/* ---- the link ---- */

int link_board_send(struct link_board *l, json_object *msg)
{
	char buf[PC_PROTO_MAX_LINE + 16];
	size_t off = 0;
	int n;

	if (l->cfg.link_serial) {
		/* marked, so the agent picks it out of whatever else is on the line */
		off = strlen(PC_PROTO_MARKER);
		memcpy(buf, PC_PROTO_MARKER, off);
	}
	n = pc_msg_line(msg, buf + off, sizeof(buf) - off);
	if (n < 0)
		return n;
	/* every host line of a session carries its tag (auth.h) */
	n = pc_auth_seal(&l->s, buf + off, (size_t)n - 1, sizeof(buf) - off - 1);
	if (n < 0)
		return n;
	buf[off + (size_t)n] = '\n';
	/* a KNOWN burst can outrun a slow link: the rest waits in the queue */
	return link_write(l, l->fd, buf, off + (size_t)n + 1);
}

struct link_board *link_board_new(const struct link_board_cfg *cfg, const struct link_board_ops *ops, void *owner)
{
	struct link_board *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->cfg = *cfg;
	l->ops = ops;
	l->owner = owner;
	l->phase = LINK_PHASE_OFF;
	l->fd = l->sfd = l->cfd = -1;
	l->q.fd = -1;
	return l;
}

void link_board_set_phase(struct link_board *l, enum link_phase ph)
{
	l->phase = ph;
}

void link_board_set_t_power(struct link_board *l, uint64_t t_power)
{
	l->t_power = t_power;
}

void link_board_free(struct link_board *l)
{
	if (!l)
		return;
	if (l->fd >= 0 && l->fd != l->sfd)
		close(l->fd);
	if (l->sfd >= 0)
		close(l->sfd);
	netserial_close(l->ns, 0);	/* its descriptor was sfd */
	l->ns = NULL;
	if (l->cfd >= 0)
		close(l->cfd);
	outq_clear(&l->q);
	for (unsigned i = 0; i < MAX_SERIAL_HELLOS; i++)
		link_hs_clear(&l->shs[i]);
	free(l);
}

void link_board_power_on(struct link_board *l, const char *console_log, uint64_t t_power)
{
	l->t_power = t_power;
	/* a line the last cut broke off is noise: the new boot starts afresh,
	 * and so does the authentication */
	memset(&l->slb, 0, sizeof(l->slb));
	if (l->cfg.link_serial)
		link_board_close(l);
	if (l->cfd >= 0)
		close(l->cfd);
	l->cfd = open(console_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (l->cfd < 0)
		pc_warn("board %s: %s: %s", l->cfg.name, console_log, strerror(errno));
}

int link_board_up(const struct link_board *l)
{
	return l->fd >= 0 && l->s.up;
}

int link_board_connected(const struct link_board *l)
{
	return l->fd >= 0;
}

size_t link_board_queued(const struct link_board *l)
{
	return l->q.len - l->q.off;
}

int link_board_pollfds(const struct link_board *l, struct pollfd pfd[2])
{
	int out = link_board_wants_out(l), n = 0;

	/* the serial console (the link, or a tcp link's captured console),
	 * and a tcp link; POLLOUT while its output waits */
	if (l->sfd >= 0)
		pfd[n++] = (struct pollfd){ .fd = l->sfd, .events = POLLIN | (out == l->sfd ? POLLOUT : 0) };
	if (l->fd >= 0 && l->fd != l->sfd)
		pfd[n++] = (struct pollfd){ .fd = l->fd, .events = POLLIN | (out == l->fd ? POLLOUT : 0) };
	return n;
}

void link_board_ready(struct link_board *l, const struct pollfd *p)
{
	if ((p->revents & POLLOUT) && link_board_wants_out(l) == p->fd)
		link_board_flush(l);
	if (!(p->revents & ~POLLOUT))
		return;
	if (l->sfd >= 0 && l->sfd == p->fd)
		serial_read(l);
	else if (l->fd == p->fd)
		board_read(l);
}

void link_board_close(struct link_board *l)
{
	if (l->fd >= 0 && l->fd != l->sfd)
		close(l->fd);
	l->fd = -1;
	memset(&l->lb, 0, sizeof(l->lb));
	memset(&l->s, 0, sizeof(l->s));
	/* lines of the session that ended are not for the next one */
	outq_clear(&l->q);
	for (unsigned i = 0; i < MAX_SERIAL_HELLOS; i++)
		link_hs_clear(&l->shs[i]);
	/* a power-on (the only call while the board is off): a network
	 * console that broke reconnects now, one that is up is probed, and
	 * whether it stays up from here on decides whether this boot was seen */
	if (l->phase == LINK_PHASE_OFF && net_of(l))
		netserial_mark(net_of(l));
}

/* A network console: a quarter of the boot timeout (at most 5 s) for a
 * connection or an answer, so that a broken link is known before the
 * board is blamed for a silent boot. */
static int net_open(struct link_board *l, char *err, size_t errlen)
{
	uint32_t t = l->cfg.boot_timeout_ms / 4;
	struct netserial *ns;
	char why[512];

	ns = netserial_open(l->cfg.serial_device, l->cfg.serial_baud, t > 5000 ? 5000 : t < 100 ? 100 : t, why,
			    sizeof(why));
	if (!ns) {
		return pc_fail(err, errlen, -EIO, "board %s: %s", l->cfg.name, why);
	}
	l->ns = ns;
	l->sfd = netserial_fd(ns);
	return 0;
}

/* Raw 8N1 at the configured rate, no flow control, no echo (common/tty.h);
 * a console that is no tty (a FIFO, a socket file) is used as it is. */
int link_board_serial_open(struct link_board *l, char *err, size_t errlen)
{
	char why[PATH_MAX + 128];
	int fd;

	if (netserial_is_url(l->cfg.serial_device))
		return net_open(l, err, errlen);
	fd = pc_tty_open(l->cfg.serial_device, l->cfg.serial_baud, PC_TTY_NONBLOCK | PC_TTY_NOT_TTY_OK, why,
			 sizeof(why));
	if (fd < 0) {
		return pc_fail(err, errlen, fd, "board %s: its serial console: %s", l->cfg.name, why);
	}
	l->sfd = fd;
	return 0;
}

/* The agent proved it holds the key: the link is the board's. */
void link_board_attach(struct link_board *l, int fd, const char *hn, const char *an)
{
	l->fd = fd;
	pc_auth_session_init(&l->s, l->cfg.key, hn, an, 1);
}

static void authenticated(struct link_board *l, int fd, const struct handshake *h)
{
	struct pc_msg m;
	char err[512];

	link_board_attach(l, fd, h->hn, h->an);
	/* the hello was valid when it came: parse it again for its fields */
	if (pc_msg_parse(h->hello, h->hello_len, &m, err, sizeof(err))) {
		link_infra(l, "the authenticated hello no longer parses: %s", err);
		return;
	}
	l->ops->hello(l->owner, &m, m.obj);
	pc_msg_clear(&m);
}

static void bad_line(struct link_board *l, const char *line, size_t len, const char *why)
{
	json_object *ev = l->ops->ev_new(l->owner, LINK_EV_RX_BAD);
	char shown[256];

	snprintf(shown, sizeof(shown), "%.*s", (int)(len < 200 ? len : 200), line);
	json_object_object_add(ev, "line", json_object_new_string(shown));
	json_object_object_add(ev, "error", json_object_new_string(why));
	l->ops->ev_log(l->owner, ev);
	if (l->phase != LINK_PHASE_DRAIN)
		link_infra(l, "protocol error from the agent: %s", why);
}

/* One line on an authenticated link: it must carry the session's next tag. */
static void board_line(struct link_board *l, const char *line, size_t len)
{
	struct pc_msg m;
	char err[512];

	if (pc_auth_open(&l->s, line, len, err, sizeof(err))) {
		/* a second writer on the console, a replayed or forged line:
		 * dropped, and the genuine agent's next line still verifies */
		link_reject(l, 0, l->fd == l->sfd ? l->cfg.serial_device : "tcp", line, len, "%s", err);
		return;
	}
	if (pc_msg_parse(line, len, &m, err, sizeof(err))) {
		bad_line(l, line, len, err);
		return;
	}
	if (m.type == PC_MSG_HELLO || m.type == PC_MSG_AUTH)
		bad_line(l, line, len, "a second hello or proof on one link");
	else
		l->ops->msg(l->owner, &m, m.obj);
	pc_msg_clear(&m);
}

/* Read what the board's link has; handle every complete line. */
static void board_read(struct link_board *l)
{
	char data[8192], line[PC_PROTO_MAX_LINE + 2];
	ssize_t n = read(l->fd, data, sizeof(data));
	size_t off = 0, len;

	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		/* the link closed: the owner says what that means */
		link_board_close(l);
		l->ops->closed(l->owner);
		return;
	}
	while (off < (size_t)n && l->fd >= 0) {
		enum pc_line_result r;

		off += pc_linebuf_feed(&l->lb, data + off, (size_t)n - off);
		while (l->fd >= 0 && (r = pc_linebuf_take(&l->lb, line, sizeof(line), &len)) != PC_LINE_NONE) {
			if (r == PC_LINE_TOO_LONG) {
				bad_line(l, "", 0, "line exceeds the protocol's maximum length");
				continue;
			}
			if (len)
				board_line(l, line, len);
		}
	}
}

/* A console line that is not ours: kernel and boot noise, which may time the boot. */
static void serial_noise(struct link_board *l, const char *line)
{
	for (unsigned i = 0; i < l->cfg.nboot_patterns; i++) {
		json_object *ev;

		if (!strstr(line, l->cfg.boot_patterns[i]))
			continue;
		ev = l->ops->ev_new(l->owner, LINK_EV_BOOT_STAGE);
		json_object_object_add(ev, "pattern", json_object_new_string(l->cfg.boot_patterns[i]));
		json_object_object_add(ev, "ms", json_object_new_int64((int64_t)(pc_now_ms() - l->t_power)));
		l->ops->ev_log(l->owner, ev);
	}
}

/*
 * The serial console carries everything the board prints; the agent's lines
 * are the ones with the marker (anywhere in the line: the kernel may have
 * written first). Everything goes to the cycle's console log. Before the
 * agent has proved itself, only a hello (answered with a challenge) and a
 * proof are of use; after, only lines with the session's tags.
 */
/* A marked hello on the console while the board boots: answered with a
 * challenge, or refused on record. */
static void serial_hello(struct link_board *l, const struct pc_msg *m, const char *mk, size_t len)
{
	const char *dev = l->cfg.serial_device;
	json_object *v;
	unsigned slot = 0;

	json_object_object_get_ex(m->obj, "board", &v);
	if (strcmp(json_object_get_string(v), l->cfg.name)) {
		link_reject(l, 1, dev, mk, len, "a hello for board '%s' on board %s's console",
			    json_object_get_string(v), l->cfg.name);
	} else if (!json_object_object_get_ex(m->obj, "nonce", NULL)) {
		link_reject(l, 1, dev, mk, len, "a hello without a nonce: an agent without the "
			    "authenticated link (update it)");
	} else {
		/* answer it; keep the latest few (a rogue's hello must not
		 * push the genuine agent's out before it answers) */
		for (unsigned i = 0; i < MAX_SERIAL_HELLOS; i++) {
			if (!l->shs[i].hello) {
				slot = i;
				break;
			}
			if (l->shs[i].since < l->shs[slot].since)
				slot = i;
		}
		if (hs_start(l, &l->shs[slot], mk, len, m->obj, l->sfd, 1))
			pc_warn("board %s: %s: cannot send the challenge: %s", l->cfg.name, dev, strerror(errno));
	}
}

/* A marked proof on the console: the console becomes the board's
 * authenticated link if it answers one of the challenges sent. */
static void serial_proof(struct link_board *l, const struct pc_msg *m, const char *mk, size_t len)
{
	unsigned i;

	for (i = 0; i < MAX_SERIAL_HELLOS && !link_hs_proven(l->cfg.key, &l->shs[i], m->obj); i++)
		;
	if (i == MAX_SERIAL_HELLOS) {
		link_reject(l, 1, l->cfg.serial_device, mk, len, "a proof that answers none of the "
				 "challenges sent: not the campaign's key, or a copied hello");
	} else {
		struct handshake h = l->shs[i];

		l->shs[i].hello = NULL;	/* moved to h */
		for (unsigned k = 0; k < MAX_SERIAL_HELLOS; k++)
			link_hs_clear(&l->shs[k]);
		authenticated(l, l->sfd, &h);
		link_hs_clear(&h);
	}
}

static void serial_line(struct link_board *l, const char *mk, size_t len)
{
	const char *dev = l->cfg.serial_device;
	struct pc_msg m;
	char err[512];

	if (l->fd == l->sfd) {
		board_line(l, mk, len);
		return;
	}
	if (pc_msg_parse(mk, len, &m, err, sizeof(err))) {
		if (l->phase == LINK_PHASE_HELLO)
			link_reject(l, 1, dev, mk, len, "invalid line before the agent proved itself: %s", err);
		return;
	}
	if (l->phase != LINK_PHASE_HELLO) {
		/* nobody is expected now: a late line from an earlier boot */
		json_object *ev = l->ops->ev_new(l->owner, LINK_EV_RX_STRAY);
		json_object_object_add(ev, "msg", json_object_get(m.obj));
		l->ops->ev_log(l->owner, ev);
	} else if (m.type == PC_MSG_HELLO) {
		serial_hello(l, &m, mk, len);
	} else if (m.type == PC_MSG_AUTH) {
		serial_proof(l, &m, mk, len);
	} else if (m.type == PC_MSG_SETUP_ERROR) {
		/* the agent on this console cannot get to a hello and says why */
		json_object *v, *c1, *r1;

		json_object_object_get_ex(m.obj, "cause", &c1);
		json_object_object_get_ex(m.obj, "reason", &r1);
		if (!json_object_object_get_ex(m.obj, "board", &v) || !strcmp(json_object_get_string(v), l->cfg.name)) {
			char via[PATH_MAX + 32];

			snprintf(via, sizeof(via), "its console %s", dev);
			l->ops->agent_said(l->owner, m.obj, via);
		}
		link_reject(l, 0, dev, mk, len, "the agent says it cannot get to a hello (%s): %s",
				 json_object_get_string(c1), json_object_get_string(r1));
	} else {
		link_reject(l, 0, dev, mk, len, "'%s' before the agent proved itself", pc_msg_type_name(m.type));
	}
	pc_msg_clear(&m);
}

/* A network console broke: the cycle it broke in cannot be trusted. */
static void net_down(struct link_board *l, const char *why)
{
	/* a tcp link's captured console: the cycle lost part of its log, not its link */
	if (l->cfg.link_serial && (l->phase == LINK_PHASE_HELLO || l->phase == LINK_PHASE_WORK))
		l->ops->infra(l->owner, why);
	else if (l->phase != LINK_PHASE_DONE)
		pc_warn("board %s: %s; reconnecting", l->cfg.name, why);
}

/* It is back: a boot it did not see from its power-on is not judged (its
 * output, and the agent's hello, may have gone by). */
static void net_up(struct link_board *l, struct netserial *ns)
{
	pc_info("board %s: console %s connected again", l->cfg.name, netserial_url(ns));
	if (l->cfg.link_serial && l->phase == LINK_PHASE_HELLO && !netserial_up_since_mark(ns))
		link_infra(l, "console %s: the link was down when the board was powered on (it came back %" PRIu64
			   " ms later); what the board printed before, its agent's hello among it, may be lost",
			   netserial_url(ns), pc_now_ms() - l->t_power);
}

static void serial_read(struct link_board *l)
{
	char data[4096], line[PC_PROTO_MAX_LINE + 2], why[512];
	struct netserial *ns = net_of(l);
	ssize_t n;
	size_t off = 0, len;
	int fl = 0;

	if (ns) {
		size_t got;

		fl = netserial_poll(ns, data, sizeof(data), &got, why, sizeof(why));
		if (fl & NS_UP)
			net_up(l, ns);
		n = (ssize_t)got;
	} else {
		n = read(l->sfd, data, sizeof(data));
	}
	if (n <= 0) {
		if (fl & NS_DOWN)
			net_down(l, why);
		return;
	}
	if (l->cfd >= 0 && pc_write_all(l->cfd, data, (size_t)n))
		pc_warn("board %s: console log: %s", l->cfg.name, strerror(errno));
	while (off < (size_t)n) {
		enum pc_line_result r;

		off += pc_linebuf_feed(&l->slb, data + off, (size_t)n - off);
		while ((r = pc_linebuf_take(&l->slb, line, sizeof(line), &len)) != PC_LINE_NONE) {
			const char *mk;

			if (r == PC_LINE_TOO_LONG)
				continue;	/* noise: a long kernel line, or garbage */
			line[len] = 0;
			/* a tcp link's captured console carries no protocol: all of it
			 * is the board's output (what times the boot) */
			mk = l->cfg.link_serial && memchr(line, '@', len) ? strstr(line, PC_PROTO_MARKER) : NULL;
			if (!mk) {
				serial_noise(l, line);
				continue;
			}
			/* the marker frames the line; what was proved and tagged is the JSON */
			len -= (size_t)(mk - line) + strlen(PC_PROTO_MARKER);
			serial_line(l, mk + strlen(PC_PROTO_MARKER), len);
		}
	}
	if (fl & NS_DOWN)
		net_down(l, why);	/* after what came before the break */
}

int link_board_console_whole(const struct link_board *l)
{
	struct netserial *ns = net_of(l);

	if (!l->cfg.link_serial || l->sfd < 0)
		return 0;
	return !ns || netserial_up_since_mark(ns);
}

/* A connection proven by pending.c becomes the board's link, with the
 * lines that came with the proof. */
void link_board_proven(struct link_board *l, int fd, const struct handshake *h, struct pc_linebuf *lb)
{
	l->lb = *lb;	/* what came after the proof */
	authenticated(l, fd, h);
	/* lines that came with the proof */
	while (l->fd >= 0) {
		char more[PC_PROTO_MAX_LINE + 2];
		size_t n;
		enum pc_line_result r = pc_linebuf_take(&l->lb, more, sizeof(more), &n);

		if (r == PC_LINE_NONE)
			break;
		if (r == PC_LINE_OK && n)
			board_line(l, more, n);
	}
}

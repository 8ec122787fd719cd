/*
 * campaign_link.c - a board's link to its agent: the TCP listener, the
 * output queue, the challenge-response handshake, serial and network
 * consoles, and every line that arrives on a board's link (docs/protocol.md),
 * each over the link room's part for it (harness/link/: listen.c, outq.c,
 * handshake.c, netserial.c), which knows no board.
 * Connections not yet proven are harness/link/pending.c's (the boards they
 * name, asked and handed over, at the end of this file), refusals on record
 * campaign_reject.c's. What a line means is the state machine's: the link
 * hands it on through the ops it registered (struct camp_link_ops), never
 * calling campaign.c by name.
 */
#include "harness/campaign/config.h"
#include "harness/campaign/campaign_daemon.h"
#include "harness/campaign/campaign_reject.h"
#include "harness/campaign/campaign_core.h"
#include "harness/campaign/campaign_resume.h"
#include "harness/campaign/campaign_link.h"
#include "harness/link/handshake.h"
#include "harness/link/listen.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "common/auth.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/tty.h"
#include "common/util.h"
#include "relay/relay.h"
#include "harness/engine/engine.h"
#include "harness/link/netserial.h"
#include "harness/link/outq.h"
#include "harness/report/report.h"
#include "harness/results/results.h"

#define MAX_SERIAL_HELLOS 4	/* hellos awaiting their proof on one console */

/* A board's link (campaign_link.h): only this file sees inside it. */
struct camp_link {
	int fd;			/* the link to the agent: a TCP connection, or sfd */
	struct pc_linebuf lb;
	/* serial console link (cfg->link_serial): open for the whole campaign */
	int sfd;
	struct netserial *ns;	/* a console over the network: its client (sfd is its descriptor), or NULL */
	int cfd;		/* this power-on's console log */
	struct pc_linebuf slb;
	struct outq q;		/* the link's output queue (harness/link/outq.h) */
	struct handshake shs[MAX_SERIAL_HELLOS];	/* serial: hellos awaiting proof */
	/* the authenticated session of this power-on's agent */
	struct pc_auth_session s;
};

static void camp_board_read(struct bctx *b);
static void camp_serial_read(struct bctx *b);

/* The cycle ends in an INFRA_ERROR: told to the state machine (its ops). */
static void link_infra(struct bctx *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void link_infra(struct bctx *b, const char *fmt, ...)
{
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	b->c->lops->infra(b, why);
}

/*
 * A console exported over the network (link.device "tcp://", "telnet://",
 * "rfc2217://"; netserial.h) is the board's link's own (l->ns), opened with
 * it and freed with it: the state machine knows only the descriptor it
 * polls (sfd).
 */
static struct netserial *net_of(const struct bctx *b)
{
	if (!b || !b->link->ns || b->link->sfd < 0 || netserial_fd(b->link->ns) != b->link->sfd)
		return NULL;
	return b->link->ns;
}

int camp_link_wants_out(const struct bctx *b)
{
	return outq_wants_out(&b->link->q);
}

void camp_link_flush(struct bctx *b)
{
	outq_flush(&b->link->q, b->cfg->name);
}

const char *camp_link_strerror(const struct bctx *b, int err)
{
	return outq_strerror(&b->link->q, err);
}

/* Write to a board's link or a pending connection: the console's own way
 * when it is a network console, through the board's output queue
 * otherwise. A pending connection's one line (the challenge) goes to a
 * fresh socket whole. 0 or -errno (errno set too). */
static int link_write(struct bctx *b, int fd, const char *buf, size_t len)
{
	struct netserial *ns = b && fd == b->link->sfd ? net_of(b) : NULL;
	char why[512];
	int rc;

	if (!b)
		return pc_write_all(fd, buf, len);
	if (!ns)
		return outq_write(&b->link->q, fd, buf, len, b->cfg->name);
	rc = netserial_write(ns, buf, len, why, sizeof(why));
	if (rc) {
		pc_warn("board %s: %s", b->cfg->name, why);
		errno = -rc;
	}
	return rc;
}

/* Answer a hello (its exact text, and parsed) with a challenge; 0 or -errno. */
static int camp_hs_start(struct bctx *b, struct handshake *h, const char *text, size_t len, json_object *hello, int fd,
		    int marker)
{
	char buf[256];
	int n = link_hs_challenge(h, text, len, hello, marker, buf, sizeof(buf));

	if (n < 0)
		return n;
	return link_write(b, fd, buf, (size_t)n);
}

/* ---- the link ---- */

int camp_listen_on(struct camp *c, char *err, size_t errlen)
{
	return link_listen(c->cfg->listen, &c->lfd, c->connect, sizeof(c->connect), err, errlen);
}

int camp_send_msg(struct bctx *b, json_object *msg)
{
	char buf[PC_PROTO_MAX_LINE + 16];
	size_t off = 0;
	int n;

	if (b->cfg->link_serial) {
		/* marked, so the agent picks it out of whatever else is on the line */
		off = strlen(PC_PROTO_MARKER);
		memcpy(buf, PC_PROTO_MARKER, off);
	}
	n = pc_msg_line(msg, buf + off, sizeof(buf) - off);
	if (n < 0)
		return n;
	/* every host line of a session carries its tag (auth.h) */
	n = pc_auth_seal(&b->link->s, buf + off, (size_t)n - 1, sizeof(buf) - off - 1);
	if (n < 0)
		return n;
	buf[off + (size_t)n] = '\n';
	/* a KNOWN burst can outrun a slow link: the rest waits in the queue */
	return link_write(b, b->link->fd, buf, off + (size_t)n + 1);
}

struct camp_link *camp_link_new(void)
{
	struct camp_link *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->fd = l->sfd = l->cfd = -1;
	l->q.fd = -1;
	return l;
}

void camp_link_free(struct camp_link *l)
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

void camp_link_power_on(struct bctx *b, const char *console_log)
{
	/* a line the last cut broke off is noise: the new boot starts afresh,
	 * and so does the authentication */
	memset(&b->link->slb, 0, sizeof(b->link->slb));
	if (b->cfg->link_serial)
		camp_close_link(b);
	if (b->link->cfd >= 0)
		close(b->link->cfd);
	b->link->cfd = open(console_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (b->link->cfd < 0)
		pc_warn("board %s: %s: %s", b->cfg->name, console_log, strerror(errno));
}

int camp_link_up(const struct bctx *b)
{
	return b->link->fd >= 0 && b->link->s.up;
}

int camp_link_connected(const struct bctx *b)
{
	return b->link->fd >= 0;
}

size_t camp_link_queued(const struct bctx *b)
{
	return b->link->q.len - b->link->q.off;
}

int camp_link_pollfds(const struct bctx *b, struct pollfd pfd[2])
{
	const struct camp_link *l = b->link;
	int out = camp_link_wants_out(b), n = 0;

	/* the serial console (the link, or a tcp link's captured console),
	 * and a tcp link; POLLOUT while its output waits */
	if (l->sfd >= 0)
		pfd[n++] = (struct pollfd){ .fd = l->sfd, .events = POLLIN | (out == l->sfd ? POLLOUT : 0) };
	if (l->fd >= 0 && l->fd != l->sfd)
		pfd[n++] = (struct pollfd){ .fd = l->fd, .events = POLLIN | (out == l->fd ? POLLOUT : 0) };
	return n;
}

void camp_link_ready(struct bctx *b, const struct pollfd *p)
{
	if ((p->revents & POLLOUT) && camp_link_wants_out(b) == p->fd)
		camp_link_flush(b);
	if (!(p->revents & ~POLLOUT))
		return;
	if (b->link->sfd >= 0 && b->link->sfd == p->fd)
		camp_serial_read(b);
	else if (b->link->fd == p->fd)
		camp_board_read(b);
}

void camp_close_link(struct bctx *b)
{
	if (b->link->fd >= 0 && b->link->fd != b->link->sfd)
		close(b->link->fd);
	b->link->fd = -1;
	memset(&b->link->lb, 0, sizeof(b->link->lb));
	memset(&b->link->s, 0, sizeof(b->link->s));
	/* lines of the session that ended are not for the next one */
	outq_clear(&b->link->q);
	for (unsigned i = 0; i < MAX_SERIAL_HELLOS; i++)
		link_hs_clear(&b->link->shs[i]);
	/* a power-on (the only call while the board is off): a network
	 * console that broke reconnects now, one that is up is probed, and
	 * whether it stays up from here on decides whether this boot was seen */
	if (b->st == B_OFF_WAIT && net_of(b))
		netserial_mark(net_of(b));
}

/* A network console: a quarter of the boot timeout (at most 5 s) for a
 * connection or an answer, so that a broken link is known before the
 * board is blamed for a silent boot. */
static int net_open(struct bctx *b, char *err, size_t errlen)
{
	uint32_t t = b->cfg->boot_timeout_ms / 4;
	struct netserial *ns;
	char why[512];

	ns = netserial_open(b->cfg->serial_device, b->cfg->serial_baud, t > 5000 ? 5000 : t < 100 ? 100 : t, why,
			    sizeof(why));
	if (!ns) {
		snprintf(err, errlen, "board %s: %s", b->cfg->name, why);
		return -EIO;
	}
	b->link->ns = ns;
	b->link->sfd = netserial_fd(ns);
	return 0;
}

/* Raw 8N1 at the configured rate, no flow control, no echo (common/tty.h);
 * a console that is no tty (a FIFO, a socket file) is used as it is. */
int camp_serial_open(struct bctx *b, char *err, size_t errlen)
{
	char why[PATH_MAX + 128];
	int fd;

	if (netserial_is_url(b->cfg->serial_device))
		return net_open(b, err, errlen);
	fd = pc_tty_open(b->cfg->serial_device, b->cfg->serial_baud, PC_TTY_NONBLOCK | PC_TTY_NOT_TTY_OK, why,
			 sizeof(why));
	if (fd < 0) {
		snprintf(err, errlen, "board %s: its serial console: %s", b->cfg->name, why);
		return fd;
	}
	b->link->sfd = fd;
	return 0;
}

/* The agent proved it holds the key: the link is the board's. */
void camp_link_attach(struct bctx *b, int fd, const char *hn, const char *an)
{
	b->link->fd = fd;
	pc_auth_session_init(&b->link->s, &b->c->key, hn, an, 1);
}

static void camp_authenticated(struct bctx *b, int fd, const struct handshake *h)
{
	struct pc_msg m;
	char err[512];

	camp_link_attach(b, fd, h->hn, h->an);
	/* the hello was valid when it came: parse it again for its fields */
	if (pc_msg_parse(h->hello, h->hello_len, &m, err, sizeof(err))) {
		link_infra(b, "the authenticated hello no longer parses: %s", err);
		return;
	}
	b->c->lops->hello(b, &m, m.obj);
	pc_msg_clear(&m);
}

static void bad_line(struct bctx *b, const char *line, size_t len, const char *why)
{
	json_object *ev = camp_ev_new(b, PC_EV_RX_BAD);
	char shown[256];

	snprintf(shown, sizeof(shown), "%.*s", (int)(len < 200 ? len : 200), line);
	json_object_object_add(ev, "line", json_object_new_string(shown));
	json_object_object_add(ev, "error", json_object_new_string(why));
	camp_ev_log(b, ev);
	if (b->st != B_DRAIN)
		link_infra(b, "protocol error from the agent: %s", why);
}

/* One line on an authenticated link: it must carry the session's next tag. */
static void camp_board_line(struct bctx *b, const char *line, size_t len)
{
	struct pc_msg m;
	char err[512];

	if (pc_auth_open(&b->link->s, line, len, err, sizeof(err))) {
		/* a second writer on the console, a replayed or forged line:
		 * dropped, and the genuine agent's next line still verifies */
		camp_link_reject(b->c, b, 0, b->link->fd == b->link->sfd ? b->cfg->serial_device : "tcp", line, len, "%s", err);
		return;
	}
	if (pc_msg_parse(line, len, &m, err, sizeof(err))) {
		bad_line(b, line, len, err);
		return;
	}
	if (m.type == PC_MSG_HELLO || m.type == PC_MSG_AUTH)
		bad_line(b, line, len, "a second hello or proof on one link");
	else
		b->c->lops->msg(b, &m, m.obj);
	pc_msg_clear(&m);
}

/* Read what the board's link has; handle every complete line. */
static void camp_board_read(struct bctx *b)
{
	char data[8192], line[PC_PROTO_MAX_LINE + 2];
	ssize_t n = read(b->link->fd, data, sizeof(data));
	size_t off = 0, len;

	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		/* the link closed: the state machine says what that means */
		camp_close_link(b);
		b->c->lops->closed(b);
		return;
	}
	while (off < (size_t)n && b->link->fd >= 0) {
		enum pc_line_result r;

		off += pc_linebuf_feed(&b->link->lb, data + off, (size_t)n - off);
		while (b->link->fd >= 0 && (r = pc_linebuf_take(&b->link->lb, line, sizeof(line), &len)) != PC_LINE_NONE) {
			if (r == PC_LINE_TOO_LONG) {
				bad_line(b, "", 0, "line exceeds the protocol's maximum length");
				continue;
			}
			if (len)
				camp_board_line(b, line, len);
		}
	}
}

/* A console line that is not ours: kernel and boot noise, which may time the boot. */
static void serial_noise(struct bctx *b, const char *line)
{
	for (unsigned i = 0; i < b->cfg->nboot_patterns; i++) {
		json_object *ev;

		if (!strstr(line, b->cfg->boot_patterns[i]))
			continue;
		ev = camp_ev_new(b, PC_EV_BOOT_STAGE);
		json_object_object_add(ev, "pattern", json_object_new_string(b->cfg->boot_patterns[i]));
		json_object_object_add(ev, "ms", json_object_new_int64((int64_t)(pc_now_ms() - b->t_power)));
		camp_ev_log(b, ev);
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
static void serial_hello(struct bctx *b, const struct pc_msg *m, const char *mk, size_t len)
{
	const char *dev = b->cfg->serial_device;
	json_object *v;
	unsigned slot = 0;

	json_object_object_get_ex(m->obj, "board", &v);
	if (strcmp(json_object_get_string(v), b->cfg->name)) {
		camp_link_reject(b->c, b, 1, dev, mk, len, "a hello for board '%s' on board %s's console",
			    json_object_get_string(v), b->cfg->name);
	} else if (!json_object_object_get_ex(m->obj, "nonce", NULL)) {
		camp_link_reject(b->c, b, 1, dev, mk, len, "a hello without a nonce: an agent without the "
			    "authenticated link (update it)");
	} else {
		/* answer it; keep the latest few (a rogue's hello must not
		 * push the genuine agent's out before it answers) */
		for (unsigned i = 0; i < MAX_SERIAL_HELLOS; i++) {
			if (!b->link->shs[i].hello) {
				slot = i;
				break;
			}
			if (b->link->shs[i].since < b->link->shs[slot].since)
				slot = i;
		}
		if (camp_hs_start(b, &b->link->shs[slot], mk, len, m->obj, b->link->sfd, 1))
			pc_warn("board %s: %s: cannot send the challenge: %s", b->cfg->name, dev, strerror(errno));
	}
}

/* A marked proof on the console: the console becomes the board's
 * authenticated link if it answers one of the challenges sent. */
static void serial_proof(struct bctx *b, const struct pc_msg *m, const char *mk, size_t len)
{
	unsigned i;

	for (i = 0; i < MAX_SERIAL_HELLOS && !link_hs_proven(&b->c->key, &b->link->shs[i], m->obj); i++)
		;
	if (i == MAX_SERIAL_HELLOS) {
		camp_link_reject(b->c, b, 1, b->cfg->serial_device, mk, len, "a proof that answers none of the "
				 "challenges sent: not the campaign's key, or a copied hello");
	} else {
		struct handshake h = b->link->shs[i];

		b->link->shs[i].hello = NULL;	/* moved to h */
		for (unsigned k = 0; k < MAX_SERIAL_HELLOS; k++)
			link_hs_clear(&b->link->shs[k]);
		camp_authenticated(b, b->link->sfd, &h);
		link_hs_clear(&h);
	}
}

static void serial_line(struct bctx *b, const char *mk, size_t len)
{
	struct camp *c = b->c;
	const char *dev = b->cfg->serial_device;
	struct pc_msg m;
	char err[512];

	if (b->link->fd == b->link->sfd) {
		camp_board_line(b, mk, len);
		return;
	}
	if (pc_msg_parse(mk, len, &m, err, sizeof(err))) {
		if (b->st == B_WAIT_HELLO)
			camp_link_reject(c, b, 1, dev, mk, len, "invalid line before the agent proved itself: %s", err);
		return;
	}
	if (b->st != B_WAIT_HELLO) {
		/* nobody is expected now: a late line from an earlier boot */
		json_object *ev = camp_ev_new(b, PC_EV_RX_STRAY);
		json_object_object_add(ev, "msg", json_object_get(m.obj));
		camp_ev_log(b, ev);
	} else if (m.type == PC_MSG_HELLO) {
		serial_hello(b, &m, mk, len);
	} else if (m.type == PC_MSG_AUTH) {
		serial_proof(b, &m, mk, len);
	} else if (m.type == PC_MSG_SETUP_ERROR) {
		/* the agent on this console cannot get to a hello and says why */
		json_object *v, *c1, *r1;

		json_object_object_get_ex(m.obj, "cause", &c1);
		json_object_object_get_ex(m.obj, "reason", &r1);
		if (!json_object_object_get_ex(m.obj, "board", &v) || !strcmp(json_object_get_string(v), b->cfg->name)) {
			char via[PATH_MAX + 32];

			snprintf(via, sizeof(via), "its console %s", dev);
			b->c->lops->agent_said(b, m.obj, via);
		}
		camp_link_reject(c, b, 0, dev, mk, len, "the agent says it cannot get to a hello (%s): %s",
				 json_object_get_string(c1), json_object_get_string(r1));
	} else {
		camp_link_reject(c, b, 0, dev, mk, len, "'%s' before the agent proved itself", pc_msg_type_name(m.type));
	}
	pc_msg_clear(&m);
}

/* A network console broke: the cycle it broke in cannot be trusted. */
static void net_down(struct bctx *b, const char *why)
{
	/* a tcp link's captured console: the cycle lost part of its log, not its link */
	if (b->cfg->link_serial && (b->st == B_WAIT_HELLO || b->st == B_VERIFY || b->st == B_WRITING))
		b->c->lops->infra(b, why);
	else if (b->st != B_DONE)
		pc_warn("board %s: %s; reconnecting", b->cfg->name, why);
}

/* It is back: a boot it did not see from its power-on is not judged (its
 * output, and the agent's hello, may have gone by). */
static void net_up(struct bctx *b, struct netserial *ns)
{
	pc_info("board %s: console %s connected again", b->cfg->name, netserial_url(ns));
	if (b->cfg->link_serial && b->st == B_WAIT_HELLO && !netserial_up_since_mark(ns))
		link_infra(b, "console %s: the link was down when the board was powered on (it came back %" PRIu64
			   " ms later); what the board printed before, its agent's hello among it, may be lost",
			   netserial_url(ns), pc_now_ms() - b->t_power);
}

static void camp_serial_read(struct bctx *b)
{
	char data[4096], line[PC_PROTO_MAX_LINE + 2], why[512];
	struct netserial *ns = net_of(b);
	ssize_t n;
	size_t off = 0, len;
	int fl = 0;

	if (ns) {
		size_t got;

		fl = netserial_poll(ns, data, sizeof(data), &got, why, sizeof(why));
		if (fl & NS_UP)
			net_up(b, ns);
		n = (ssize_t)got;
	} else {
		n = read(b->link->sfd, data, sizeof(data));
	}
	if (n <= 0) {
		if (fl & NS_DOWN)
			net_down(b, why);
		return;
	}
	if (b->link->cfd >= 0 && pc_write_all(b->link->cfd, data, (size_t)n))
		pc_warn("board %s: console log: %s", b->cfg->name, strerror(errno));
	while (off < (size_t)n) {
		enum pc_line_result r;

		off += pc_linebuf_feed(&b->link->slb, data + off, (size_t)n - off);
		while ((r = pc_linebuf_take(&b->link->slb, line, sizeof(line), &len)) != PC_LINE_NONE) {
			const char *mk;

			if (r == PC_LINE_TOO_LONG)
				continue;	/* noise: a long kernel line, or garbage */
			line[len] = 0;
			/* a tcp link's captured console carries no protocol: all of it
			 * is the board's output (what times the boot) */
			mk = b->cfg->link_serial && memchr(line, '@', len) ? strstr(line, PC_PROTO_MARKER) : NULL;
			if (!mk) {
				serial_noise(b, line);
				continue;
			}
			/* the marker frames the line; what was proved and tagged is the JSON */
			len -= (size_t)(mk - line) + strlen(PC_PROTO_MARKER);
			serial_line(b, mk + strlen(PC_PROTO_MARKER), len);
		}
	}
	if (fl & NS_DOWN)
		net_down(b, why);	/* after what came before the break */
}

int camp_console_whole(const struct bctx *b)
{
	struct netserial *ns = net_of(b);

	if (!b->cfg->link_serial || b->link->sfd < 0)
		return 0;
	return !ns || netserial_up_since_mark(ns);
}

/* ---- the connections not proven yet (harness/link/pending.c): the boards they name ---- */

static void *pend_board(void *arg, const char *name)
{
	return camp_board_by_name(arg, name);
}

static int pend_ready(void *arg, void *bp, char *what, size_t len)
{
	struct bctx *b = bp;

	if (b->st == B_WAIT_HELLO && b->link->fd < 0)
		return 1;
	snprintf(what, len, "%s%s", camp_bstate_names[b->st], b->link->fd >= 0 ? " and has its agent" : "");
	return 0;
}

static void pend_reject(void *arg, void *b, int attempt, const char *peer, const char *line, size_t len,
			const char *why)
{
	camp_link_reject(arg, b, attempt, peer, line, len, "%s", why);
}

static void pend_said(void *arg, void *bp, json_object *msg, const char *via)
{
	struct bctx *b = bp;

	if (b->st == B_WAIT_HELLO)
		b->c->lops->agent_said(b, msg, via);
}

/* A proven connection becomes board b's link, with the lines that came
 * with the proof. */
static void pend_proven(void *arg, void *bp, int fd, const struct handshake *h, struct pc_linebuf *lb)
{
	struct bctx *b = bp;

	b->link->lb = *lb;	/* what came after the proof */
	camp_authenticated(b, fd, h);
	/* lines that came with the proof */
	while (b->link->fd >= 0) {
		char more[PC_PROTO_MAX_LINE + 2];
		size_t n;
		enum pc_line_result r = pc_linebuf_take(&b->link->lb, more, sizeof(more), &n);

		if (r == PC_LINE_NONE)
			break;
		if (r == PC_LINE_OK && n)
			camp_board_line(b, more, n);
	}
}

const struct link_pending_ops camp_pending_ops = {
	.board_by_name = pend_board,
	.ready = pend_ready,
	.reject = pend_reject,
	.said = pend_said,
	.proven = pend_proven,
};

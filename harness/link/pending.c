/*
 * pending.c - the TCP connections that have not proven themselves yet
 * (pending.h): accepted into a bounded table (evicted oldest first, each
 * source's share bounded), a hello answered with a challenge, the proof
 * checked, and the connection handed to its board's link. Boards are the
 * owner's: named, asked and told through struct link_pending_ops.
 */
#include "harness/link/pending.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/proto.h"
#include "common/util.h"

/* A refusal, worded here, on record by the owner. */
static void pend_refuse(struct link_pending *lp, void *b, int attempt, const char *peer, const char *line, size_t len,
		   const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void pend_refuse(struct link_pending *lp, void *b, int attempt, const char *peer, const char *line, size_t len,
		   const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	lp->ops->reject(lp->arg, b, attempt, peer, line, len, why);
}

void link_pending_close(struct pending *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->b = NULL;
	link_hs_clear(&p->hs);
}

/* An agent that cannot authenticate (no key) says why, unproven: on
 * record, and this cycle's reason if it ends without a hello. The
 * connection goes. */
static void pending_said(struct link_pending *lp, struct pending *p, const struct pc_msg *m, const char *line,
			 size_t len)
{
	json_object *v, *c1, *r1;
	void *b;

	b = json_object_object_get_ex(m->obj, "board", &v) ? lp->ops->board_by_name(lp->arg, json_object_get_string(v))
							   : NULL;
	json_object_object_get_ex(m->obj, "cause", &c1);
	json_object_object_get_ex(m->obj, "reason", &r1);
	if (b) {
		char via[128];

		snprintf(via, sizeof(via), "the link (%s, unauthenticated)", p->peer);
		lp->ops->said(lp->arg, b, m->obj, via);
	}
	pend_refuse(lp, b, 0, p->peer, line, len, "the agent says it cannot get to a hello (%s): %s",
			 json_object_get_string(c1), json_object_get_string(r1));
}

/* May board b take an agent now? 1; else 0, refused on record: what (a
 * hello, a proven agent) while the board is doing what it does, and why. */
static int board_ready(struct link_pending *lp, struct pending *p, void *b, const char *line, size_t len,
		       const char *what, const char *why)
{
	char doing[96];

	if (lp->ops->ready(lp->arg, b, doing, sizeof(doing)))
		return 1;
	pend_refuse(lp, b, 1, p->peer, line, len, "%s while the board is %s%s", what, doing, why);
	return 0;
}

/* The first line: a hello for a board that is booting is answered with a
 * challenge (1); anything else is refused on record (0: the connection goes). */
static int pending_hello(struct link_pending *lp, struct pending *p, const struct pc_msg *m, const char *line,
			 size_t len)
{
	char buf[256];
	json_object *v;
	void *b;
	int n;

	if (m->type != PC_MSG_HELLO) {
		pend_refuse(lp, NULL, 1, p->peer, line, len, "the first line is '%s', not hello",
			    pc_msg_type_name(m->type));
		return 0;
	}
	json_object_object_get_ex(m->obj, "board", &v);
	b = lp->ops->board_by_name(lp->arg, json_object_get_string(v));
	if (!b) {
		pend_refuse(lp, NULL, 1, p->peer, line, len, "a hello from unknown board '%s'",
			    json_object_get_string(v));
		return 0;
	}
	/* what the peer is comes first: an agent without the authenticated
	 * link is named so whatever the board is doing */
	if (!json_object_object_get_ex(m->obj, "nonce", NULL)) {
		pend_refuse(lp, b, 1, p->peer, line, len, "a hello without a nonce: an agent without the "
			    "authenticated link (update it)");
		return 0;
	}
	if (!board_ready(lp, p, b, line, len, "a hello", " (a stale or second agent?)"))
		return 0;
	n = link_hs_challenge(&p->hs, line, len, m->obj, 0, buf, sizeof(buf));
	if (n < 0 || pc_write_all(p->fd, buf, (size_t)n)) {
		pend_refuse(lp, b, 1, p->peer, line, len, "cannot send the challenge: %s", strerror(errno));
		return 0;
	}
	p->b = b;
	p->since = pc_now_ms();	/* the proof has as long again */
	return 1;
}

/* The second line: the proof (1), or refused on record (0). */
static int pending_proof(struct link_pending *lp, struct pending *p, const struct pc_msg *m, const char *line,
			 size_t len)
{
	void *b = p->b;

	if (m->type != PC_MSG_AUTH) {
		pend_refuse(lp, b, 1, p->peer, line, len, "'%s' where the proof was due", pc_msg_type_name(m->type));
		return 0;
	}
	if (!link_hs_proven(lp->key, &p->hs, m->obj)) {
		pend_refuse(lp, b, 1, p->peer, line, len, "the proof does not verify: not the campaign's key, or a "
			    "copied hello");
		return 0;
	}
	if (!board_ready(lp, p, b, line, len, "a proven agent", ""))
		return 0;
	return 1;
}

/* A proven connection becomes board b's link, with the lines that came
 * with the proof (its line buffer, which closing it leaves). */
static void pending_handover(struct link_pending *lp, struct pending *p, void *b)
{
	struct handshake h = p->hs;
	int fd = p->fd;

	p->hs.hello = NULL;
	p->fd = -1;
	link_pending_close(p);
	lp->ops->proven(lp->arg, b, fd, &h, &p->lb);
	link_hs_clear(&h);
}

/*
 * A connection that has not proved itself yet: its first line must be a hello
 * for a board that is booting (answered with a challenge), its second the
 * proof. Anything else closes it, on record.
 */
static void pending_line(struct link_pending *lp, struct pending *p, const char *line, size_t len)
{
	void *proving = p->b;
	struct pc_msg m;
	char err[512];
	int ok;

	if (pc_msg_parse(line, len, &m, err, sizeof(err))) {
		pend_refuse(lp, p->b, 1, p->peer, line, len, "%s", err);
		link_pending_close(p);
		return;
	}
	if (!proving && m.type == PC_MSG_SETUP_ERROR) {
		pending_said(lp, p, &m, line, len);
		ok = 0;
	} else if (!proving) {
		ok = pending_hello(lp, p, &m, line, len);
	} else {
		ok = pending_proof(lp, p, &m, line, len);
	}
	pc_msg_clear(&m);
	if (!ok)
		link_pending_close(p);
	else if (proving)
		pending_handover(lp, p, proving);
}

void link_pending_read(struct link_pending *lp, struct pending *p)
{
	char data[4096], line[PC_PROTO_MAX_LINE + 2];
	ssize_t n = read(p->fd, data, sizeof(data));
	size_t off = 0, len;

	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		pend_refuse(lp, p->b, p->b != NULL, p->peer, NULL, 0, "the connection closed %s",
		       p->b ? "before its proof" : "without a hello");
		link_pending_close(p);
		return;
	}
	while (off < (size_t)n && p->fd >= 0) {
		enum pc_line_result r;

		off += pc_linebuf_feed(&p->lb, data + off, (size_t)n - off);
		while (p->fd >= 0 && (r = pc_linebuf_take(&p->lb, line, sizeof(line), &len)) != PC_LINE_NONE) {
			if (r == PC_LINE_TOO_LONG) {
				pend_refuse(lp, p->b, 1, p->peer, NULL, 0, "a line longer than %d bytes", PC_PROTO_MAX_LINE);
				link_pending_close(p);
				return;
			}
			if (len)
				pending_line(lp, p, line, len);
		}
	}
}

/*
 * Which waiting connection goes to make room (src: only that address's; NULL:
 * anyone's): the oldest that has not said hello -- a squatter, most likely; a
 * genuine agent says hello as soon as it connects -- else the oldest.
 */
static unsigned pending_victim(const struct link_pending *lp, const char *src)
{
	unsigned quiet = MAX_PENDING, any = MAX_PENDING;

	for (unsigned i = 0; i < MAX_PENDING; i++) {
		const struct pending *p = &lp->p[i];

		if (p->fd < 0 || (src && strcmp(p->src, src)))
			continue;
		if (any == MAX_PENDING || p->since < lp->p[any].since)
			any = i;
		if (!p->b && (quiet == MAX_PENDING || p->since < lp->p[quiet].since))
			quiet = i;
	}
	return quiet != MAX_PENDING ? quiet : any;
}

/*
 * New connections wait here until they prove themselves. The table is bounded,
 * and so is each source's share (two per board, at least 8: many boards may
 * share one address): a source at its limit (or anyone, when the table is
 * full) loses a waiting connection, the oldest that has not said hello first,
 * so connections that squat without speaking cannot lock a genuine agent out.
 */
void link_pending_accept(struct link_pending *lp, int lfd, unsigned nboards)
{
	unsigned per_source = 2 * nboards > MIN_PENDING_PER_SOURCE ? 2 * nboards : MIN_PENDING_PER_SOURCE;

	if (per_source > MAX_PENDING)
		per_source = MAX_PENDING;
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";
		unsigned i, free_i = MAX_PENDING, from_src = 0;

		if (fd < 0)
			return;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv, sizeof(serv),
			    NI_NUMERICHOST | NI_NUMERICSERV);
		for (i = 0; i < MAX_PENDING; i++) {
			struct pending *p = &lp->p[i];

			if (p->fd < 0) {
				if (free_i == MAX_PENDING)
					free_i = i;
				continue;
			}
			if (!strcmp(p->src, host))
				from_src++;
		}
		if (from_src >= per_source || free_i == MAX_PENDING) {
			i = pending_victim(lp, from_src >= per_source ? host : NULL);
			pend_refuse(lp, lp->p[i].b, lp->p[i].b != NULL, lp->p[i].peer, NULL, 0, "closed to make room: %s",
			       from_src >= per_source ? "its address has too many connections waiting" :
							"too many connections waiting");
			link_pending_close(&lp->p[i]);
			free_i = i;
		}
		memset(&lp->p[free_i], 0, sizeof(lp->p[free_i]));
		lp->p[free_i].fd = fd;
		lp->p[free_i].since = pc_now_ms();
		pc_strlcpy(lp->p[free_i].src, host, sizeof(lp->p[free_i].src));
		snprintf(lp->p[free_i].peer, sizeof(lp->p[free_i].peer), strchr(host, ':') ? "[%s]:%s" : "%s:%s",
			 host, serv);
	}
}

void link_pending_init(struct link_pending *lp, const struct link_pending_ops *ops, void *arg,
		       const struct pc_auth_key *key)
{
	memset(lp, 0, sizeof(*lp));
	for (unsigned i = 0; i < MAX_PENDING; i++)
		lp->p[i].fd = -1;
	lp->ops = ops;
	lp->arg = arg;
	lp->key = key;
}

void link_pending_expire(struct link_pending *lp, uint64_t now)
{
	for (unsigned i = 0; i < MAX_PENDING; i++)
		if (lp->p[i].fd >= 0 && now - lp->p[i].since > HELLO_WAIT_MS) {
			pend_refuse(lp, lp->p[i].b, lp->p[i].b != NULL, lp->p[i].peer, NULL, 0, "no %s within %u ms",
			       lp->p[i].b ? "proof" : "hello", HELLO_WAIT_MS);
			link_pending_close(&lp->p[i]);
		}
}

void link_pending_free(struct link_pending *lp)
{
	for (unsigned i = 0; i < MAX_PENDING; i++)
		link_pending_close(&lp->p[i]);
}

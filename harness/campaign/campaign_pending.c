/*
 * campaign_pending.c - the TCP connections that have not proven themselves
 * yet: accepted into a bounded table (evicted oldest first, each source's
 * share bounded), a hello answered with a challenge, the proof checked,
 * and the connection handed to its board's link (campaign_link.c).
 */
#include "harness/campaign/campaign_int.h"

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
#include "harness/report/report.h"
#include "harness/results/results.h"

void camp_pending_close(struct pending *p)
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
static void pending_said(struct camp *c, struct pending *p, const struct pc_msg *m, const char *line, size_t len)
{
	json_object *v, *c1, *r1;
	struct bctx *b;

	b = json_object_object_get_ex(m->obj, "board", &v) ? camp_board_by_name(c, json_object_get_string(v)) : NULL;
	json_object_object_get_ex(m->obj, "cause", &c1);
	json_object_object_get_ex(m->obj, "reason", &r1);
	if (b && b->st == B_WAIT_HELLO) {
		char via[128];

		snprintf(via, sizeof(via), "the link (%s, unauthenticated)", p->peer);
		c->lops->agent_said(b, m->obj, via);
	}
	camp_link_reject(c, b, 0, p->peer, line, len, "the agent says it cannot get to a hello (%s): %s",
			 json_object_get_string(c1), json_object_get_string(r1));
}

/* The first line: a hello for a board that is booting is answered with a
 * challenge (1); anything else is refused on record (0: the connection goes). */
static int pending_hello(struct camp *c, struct pending *p, const struct pc_msg *m, const char *line, size_t len)
{
	json_object *v;
	struct bctx *b;

	if (m->type != PC_MSG_HELLO) {
		camp_link_reject(c, NULL, 1, p->peer, line, len, "the first line is '%s', not hello",
			    pc_msg_type_name(m->type));
		return 0;
	}
	json_object_object_get_ex(m->obj, "board", &v);
	b = camp_board_by_name(c, json_object_get_string(v));
	if (!b) {
		camp_link_reject(c, NULL, 1, p->peer, line, len, "a hello from unknown board '%s'",
			    json_object_get_string(v));
		return 0;
	}
	/* what the peer is comes first: an agent without the authenticated
	 * link is named so whatever the board is doing */
	if (!json_object_object_get_ex(m->obj, "nonce", NULL)) {
		camp_link_reject(c, b, 1, p->peer, line, len, "a hello without a nonce: an agent without the "
			    "authenticated link (update it)");
		return 0;
	}
	if (b->st != B_WAIT_HELLO || b->link.fd >= 0) {
		camp_link_reject(c, b, 1, p->peer, line, len, "a hello while the board is %s%s (a stale or second agent?)",
			    camp_bstate_names[b->st], b->link.fd >= 0 ? " and has its agent" : "");
		return 0;
	}
	if (camp_hs_start(NULL, &p->hs, line, len, m->obj, p->fd, 0)) {
		camp_link_reject(c, b, 1, p->peer, line, len, "cannot send the challenge: %s", strerror(errno));
		return 0;
	}
	p->b = b;
	p->since = pc_now_ms();	/* the proof has as long again */
	return 1;
}

/* The second line: the proof (1), or refused on record (0). */
static int pending_proof(struct camp *c, struct pending *p, const struct pc_msg *m, const char *line, size_t len)
{
	struct bctx *b = p->b;

	if (m->type != PC_MSG_AUTH) {
		camp_link_reject(c, b, 1, p->peer, line, len, "'%s' where the proof was due", pc_msg_type_name(m->type));
		return 0;
	}
	if (!link_hs_proven(&c->key, &p->hs, m->obj)) {
		camp_link_reject(c, b, 1, p->peer, line, len, "the proof does not verify: not the campaign's key, or a "
			    "copied hello");
		return 0;
	}
	if (b->st != B_WAIT_HELLO || b->link.fd >= 0) {
		camp_link_reject(c, b, 1, p->peer, line, len, "a proven agent while the board is %s%s", camp_bstate_names[b->st],
			    b->link.fd >= 0 ? " and has its agent" : "");
		return 0;
	}
	return 1;
}

/* A proven connection becomes board b's link, with the lines that came
 * with the proof. */
static void pending_handover(struct pending *p, struct bctx *b)
{
	struct handshake h = p->hs;
	int fd = p->fd;

	b->link.lb = p->lb;	/* what came after the proof */
	p->hs.hello = NULL;
	p->fd = -1;
	camp_pending_close(p);
	camp_authenticated(b, fd, &h);
	link_hs_clear(&h);
	/* lines that came with the proof */
	while (b->link.fd >= 0) {
		char more[PC_PROTO_MAX_LINE + 2];
		size_t n;
		enum pc_line_result r = pc_linebuf_take(&b->link.lb, more, sizeof(more), &n);

		if (r == PC_LINE_NONE)
			break;
		if (r == PC_LINE_OK && n)
			camp_board_line(b, more, n);
	}
}

/*
 * A connection that has not proved itself yet: its first line must be a hello
 * for a board that is booting (answered with a challenge), its second the
 * proof. Anything else closes it, on record.
 */
static void pending_line(struct camp *c, struct pending *p, const char *line, size_t len)
{
	struct bctx *proving = p->b;
	struct pc_msg m;
	char err[512];
	int ok;

	if (pc_msg_parse(line, len, &m, err, sizeof(err))) {
		camp_link_reject(c, p->b, 1, p->peer, line, len, "%s", err);
		camp_pending_close(p);
		return;
	}
	if (!proving && m.type == PC_MSG_SETUP_ERROR) {
		pending_said(c, p, &m, line, len);
		ok = 0;
	} else if (!proving) {
		ok = pending_hello(c, p, &m, line, len);
	} else {
		ok = pending_proof(c, p, &m, line, len);
	}
	pc_msg_clear(&m);
	if (!ok)
		camp_pending_close(p);
	else if (proving)
		pending_handover(p, proving);
}

void camp_pending_read(struct camp *c, struct pending *p)
{
	char data[4096], line[PC_PROTO_MAX_LINE + 2];
	ssize_t n = read(p->fd, data, sizeof(data));
	size_t off = 0, len;

	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		camp_link_reject(c, p->b, p->b != NULL, p->peer, NULL, 0, "the connection closed %s",
			    p->b ? "before its proof" : "without a hello");
		camp_pending_close(p);
		return;
	}
	while (off < (size_t)n && p->fd >= 0) {
		enum pc_line_result r;

		off += pc_linebuf_feed(&p->lb, data + off, (size_t)n - off);
		while (p->fd >= 0 && (r = pc_linebuf_take(&p->lb, line, sizeof(line), &len)) != PC_LINE_NONE) {
			if (r == PC_LINE_TOO_LONG) {
				camp_link_reject(c, p->b, 1, p->peer, NULL, 0, "a line longer than %d bytes",
					    PC_PROTO_MAX_LINE);
				camp_pending_close(p);
				return;
			}
			if (len)
				pending_line(c, p, line, len);
		}
	}
}

/*
 * Which waiting connection goes to make room (src: only that address's; NULL:
 * anyone's): the oldest that has not said hello -- a squatter, most likely; a
 * genuine agent says hello as soon as it connects -- else the oldest.
 */
static unsigned pending_victim(const struct camp *c, const char *src)
{
	unsigned quiet = MAX_PENDING, any = MAX_PENDING;

	for (unsigned i = 0; i < MAX_PENDING; i++) {
		const struct pending *p = &c->pend[i];

		if (p->fd < 0 || (src && strcmp(p->src, src)))
			continue;
		if (any == MAX_PENDING || p->since < c->pend[any].since)
			any = i;
		if (!p->b && (quiet == MAX_PENDING || p->since < c->pend[quiet].since))
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
void camp_accept_all(struct camp *c)
{
	unsigned per_source = 2 * c->nb > MIN_PENDING_PER_SOURCE ? 2 * c->nb : MIN_PENDING_PER_SOURCE;

	if (per_source > MAX_PENDING)
		per_source = MAX_PENDING;
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(c->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";
		unsigned i, free_i = MAX_PENDING, from_src = 0;

		if (fd < 0)
			return;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv, sizeof(serv),
			    NI_NUMERICHOST | NI_NUMERICSERV);
		for (i = 0; i < MAX_PENDING; i++) {
			struct pending *p = &c->pend[i];

			if (p->fd < 0) {
				if (free_i == MAX_PENDING)
					free_i = i;
				continue;
			}
			if (!strcmp(p->src, host))
				from_src++;
		}
		if (from_src >= per_source || free_i == MAX_PENDING) {
			i = pending_victim(c, from_src >= per_source ? host : NULL);
			camp_link_reject(c, c->pend[i].b, c->pend[i].b != NULL, c->pend[i].peer, NULL, 0,
				    "closed to make room: %s", from_src >= per_source ?
				    "its address has too many connections waiting" : "too many connections waiting");
			camp_pending_close(&c->pend[i]);
			free_i = i;
		}
		memset(&c->pend[free_i], 0, sizeof(c->pend[free_i]));
		c->pend[free_i].fd = fd;
		c->pend[free_i].since = pc_now_ms();
		pc_strlcpy(c->pend[free_i].src, host, sizeof(c->pend[free_i].src));
		snprintf(c->pend[free_i].peer, sizeof(c->pend[free_i].peer), strchr(host, ':') ? "[%s]:%s" : "%s:%s",
			 host, serv);
	}
}

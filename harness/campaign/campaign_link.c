/*
 * campaign_link.c - the campaign's side of its boards' links: a board's link
 * is harness/link/board.c's (struct link_board, one per board, the board's
 * own), made here with what it knows of the board and the ops through which
 * it hands up what arrives: the agent's lines to the state machine (the ops
 * campaign.c registered, struct camp_link_ops, never calling it by name),
 * the events it sees to the board's record, the lines it refuses to the
 * refusals on record (campaign_reject.c). The TCP listener is
 * harness/link/listen.c's; connections not yet proven are
 * harness/link/pending.c's (the boards they name, asked and handed over,
 * at the end of this file).
 */
#include "harness/campaign/config.h"
#include "harness/campaign/campaign_daemon.h"
#include "harness/campaign/campaign_reject.h"
#include "harness/campaign/campaign_core.h"
#include "harness/campaign/campaign_resume.h"
#include "harness/campaign/campaign_link.h"
#include "harness/link/board.h"
#include "harness/link/listen.h"

#include <stdio.h>
#include "common/proto.h"
#include "harness/results/results.h"

/* ---- what a board's link hands up (struct link_board_ops) ---- */

static void op_hello(void *o, struct pc_msg *m, json_object *raw)
{
	struct bctx *b = o;

	b->c->lops->hello(b, m, raw);
}

static void op_msg(void *o, struct pc_msg *m, json_object *raw)
{
	struct bctx *b = o;

	b->c->lops->msg(b, m, raw);
}

static void op_closed(void *o)
{
	struct bctx *b = o;

	b->c->lops->closed(b);
}

static void op_agent_said(void *o, json_object *msg, const char *via)
{
	struct bctx *b = o;

	b->c->lops->agent_said(b, msg, via);
}

static void op_infra(void *o, const char *why)
{
	struct bctx *b = o;

	b->c->lops->infra(b, why);
}

static json_object *op_ev_new(void *o, enum link_event kind)
{
	static const enum pc_ev_kind ev[] = {
		[LINK_EV_RX_BAD] = PC_EV_RX_BAD,
		[LINK_EV_RX_STRAY] = PC_EV_RX_STRAY,
		[LINK_EV_BOOT_STAGE] = PC_EV_BOOT_STAGE,
	};

	return camp_ev_new(o, ev[kind]);
}

static void op_ev_log(void *o, json_object *ev)
{
	camp_ev_log(o, ev);
}

static void op_reject(void *o, int attempt, const char *peer, const char *line, size_t len, const char *why)
{
	struct bctx *b = o;

	camp_link_reject(b->c, b, attempt, peer, line, len, why);
}

static const struct link_board_ops board_ops = {
	.hello = op_hello,
	.msg = op_msg,
	.closed = op_closed,
	.agent_said = op_agent_said,
	.infra = op_infra,
	.ev_new = op_ev_new,
	.ev_log = op_ev_log,
	.reject = op_reject,
};

struct link_board *camp_link_new(struct bctx *b)
{
	const struct link_board_cfg cfg = {
		.name = b->cfg->name,
		.serial_device = b->cfg->serial_device,
		.serial_baud = b->cfg->serial_baud,
		.link_serial = b->cfg->link_serial,
		.boot_patterns = (const char(*)[64])b->cfg->boot_patterns,
		.nboot_patterns = b->cfg->nboot_patterns,
		.boot_timeout_ms = b->cfg->boot_timeout_ms,
		.key = &b->c->key,
	};
	struct link_board *l = link_board_new(&cfg, &board_ops, b);

	if (l)
		link_board_set_phase(l, camp_link_phase(b->st));
	return l;
}

int camp_listen_on(struct camp *c, char *err, size_t errlen)
{
	return link_listen(c->cfg->listen, &c->lfd, c->connect, sizeof(c->connect), err, errlen);
}

/* ---- the connections not proven yet (harness/link/pending.c): the boards they name ---- */

static void *pend_board(void *arg, const char *name)
{
	return camp_board_by_name(arg, name);
}

static int pend_ready(void *arg, void *bp, char *what, size_t len)
{
	struct bctx *b = bp;

	if (b->st == B_WAIT_HELLO && !link_board_connected(b->link))
		return 1;
	snprintf(what, len, "%s%s", camp_bstate_names[b->st],
		 link_board_connected(b->link) ? " and has its agent" : "");
	return 0;
}

static void pend_reject(void *arg, void *b, int attempt, const char *peer, const char *line, size_t len,
			const char *why)
{
	camp_link_reject(arg, b, attempt, peer, line, len, why);
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

	link_board_proven(b->link, fd, h, lb);
}

const struct link_pending_ops camp_pending_ops = {
	.board_by_name = pend_board,
	.ready = pend_ready,
	.reject = pend_reject,
	.said = pend_said,
	.proven = pend_proven,
};

/*
 * campaign_link.h - the campaign's side of its boards' links (campaign_link.c):
 * each board's link is harness/link/board.h's object (struct link_board, in
 * struct bctx, made here for the board: camp_link_new); this file turns what
 * the link hands up into the state machine's calls (struct camp_link_ops,
 * which campaign.c registers) and the board's events and refusals; and the
 * boards that connections not yet proven name (camp_pending_ops). The
 * state machine polls and calls the link itself (link_board_*).
 */
#ifndef PC_HARNESS_CAMPAIGN_LINK_H
#define PC_HARNESS_CAMPAIGN_LINK_H

#include <stddef.h>

#include <json-c/json.h>

#include "harness/link/board.h"
#include "harness/link/pending.h"

struct bctx;
struct camp;
struct pc_msg;

/*
 * What the link hands up to the state machine (campaign.c registers them in
 * struct camp before its loop runs): the link sits below it and never calls
 * it by name.
 */
struct camp_link_ops {
	/* an agent proved itself: its hello, parsed */
	void (*hello)(struct bctx *b, struct pc_msg *m, json_object *raw);
	/* a line on the authenticated link, parsed (not a hello or proof) */
	void (*msg)(struct bctx *b, struct pc_msg *m, json_object *raw);
	/* the agent's link closed */
	void (*closed)(struct bctx *b);
	/* the agent said why it cannot get to a hello (a setup_error message) */
	void (*agent_said)(struct bctx *b, json_object *msg, const char *via);
	/* the cycle cannot go on: an INFRA_ERROR, why (printable) */
	void (*infra)(struct bctx *b, const char *why);
};

/* Board b's link (b->cfg, b->c->key known: the strings pointed at), with no
 * descriptor open, in b's phase; or NULL (no memory). link_board_free frees it. */
struct link_board *camp_link_new(struct bctx *b);
int camp_listen_on(struct camp *c, char *err, size_t errlen);

/* The campaign's side of the connections not proven yet (harness/link/pending.h):
 * its boards, named, asked and handed a proven connection. */
extern const struct link_pending_ops camp_pending_ops;

#endif

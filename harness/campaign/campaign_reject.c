/*
 * campaign_reject.c - lines and connections refused, on record: each a
 * link_reject event while an address's share of the interval lasts, then
 * counted and summarised (link_reject_summary) once a minute, so a flood
 * cannot fill the disk (docs/protocol.md). The tally and the events are the
 * link room's (harness/link/reject.c), the tally the campaign's own
 * (c->rej); the campaign's part is the board's count, its clock, and the
 * writing. Called by the links' ops (campaign_link.c: the board links',
 * and for harness/link/pending.c its camp_pending_ops); calls only the
 * primitives.
 */
#include "harness/campaign/campaign_daemon.h"
#include "harness/campaign/campaign_reject.h"
#include "harness/campaign/campaign_core.h"
#include "harness/campaign/config.h"

#include <stdio.h>
#include "harness/link/reject.h"
#include "harness/results/results.h"

static void rej_write(json_object *ev, void *arg)
{
	struct camp *c = arg;

	camp_results_check(c, results_event(&c->res, ev));
}

void camp_link_reject_tick(struct camp *c, int end)
{
	link_rej_tick(&c->rej, camp_t(c), end, &c->fatal, rej_write, c);
}

void camp_link_reject(struct camp *c, struct bctx *b, int attempt, const char *peer, const char *line, size_t len,
		      const char *why)
{
	if (b && attempt)
		b->rejects++;
	link_rej_record(&c->rej,
			&(struct link_rej_what){ .t = camp_t(c), .board = b ? b->cfg->name : NULL,
						 .cycle = b ? b->cycle : 0, .peer = peer, .line = line, .len = len,
						 .why = why },
			&c->fatal, rej_write, c);
}

/*
 * campaign_reject.h - refusals on record (campaign_reject.c): a line or a
 * connection the link refused, as an event naming the board and its cycle,
 * and the interval's summaries, written; the counting that bounds them and
 * the events are harness/link/reject.c's. Called by the links' ops
 * (campaign_link.c).
 */
#ifndef PC_HARNESS_CAMPAIGN_REJECT_H
#define PC_HARNESS_CAMPAIGN_REJECT_H

#include <stddef.h>

struct bctx;
struct camp;

/* A line or connection refused (why: its reason, worded by the link), on
 * record: counted for the board's cycle, and its event or summary written. */
void camp_link_reject(struct camp *c, struct bctx *b, int attempt, const char *peer, const char *line, size_t len,
		      const char *why);
/* The link_reject_summary events of the interval, when it is over (end: the
 * run is ending: now). Called each turn of the loop and at the run's end. */
void camp_link_reject_tick(struct camp *c, int end);

#endif

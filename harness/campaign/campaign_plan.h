/*
 * campaign_plan.h - what a cycle asks of the board, owned by
 * campaign_plan.c: the scan, the work, and the cut at its planned instant.
 * Only campaign_plan.c changes a board's struct camp_plan.
 */
#ifndef PC_HARNESS_CAMPAIGN_PLAN_H
#define PC_HARNESS_CAMPAIGN_PLAN_H

#include <stdint.h>

#include <json-c/json.h>

#include "common/proto.h"

struct bctx;
struct relay_rep;

/* The cycle's work and cut plan. */
struct camp_plan {
	int kind;		/* the cycle's plan (enum cut_plan, never CUT_MIX): config_cycle_cut */
	uint32_t lo, hi;	/* ... its range: the window (ms), the acks or the nth */
	uint32_t cut_seq;	/* the cut's request, in B_CUTTING */
	const char *cut_why;	/* ... what called for it */
	uint64_t cut_now_ms;	/* ... when it was decided */
	uint64_t cut_req_us;
	uint64_t t_work;
	uint64_t cut_at;	/* CUT_RANDOM: absolute ms */
	uint32_t cut_acks;	/* CUT_ACKS: cut once this many are acked */
	uint32_t acks;
	/* CUT_FLUSH, CUT_FUA: the cut comes at the agent's cut_nth announcement
	 * (IO message) of the plan's I/O, cut_delay_us after it arrived; on a
	 * board that cuts itself there (exact: the sim), the harness waits */
	uint32_t cut_nth;	/* 0: not an I/O plan */
	uint32_t io_seen;	/* announcements of the plan's I/O so far in this work */
	int io_fired;		/* the cut_nth arrived: */
	uint64_t io_seq;	/* ... the seq it named */
	uint64_t t_io_us;	/* ... when (monotonic us) */
	uint64_t cut_due_us;	/* a delayed cut's instant (monotonic us; 0: none) */
	int exact;
	int done_seen;
	/* the exact cut told to the relay at power-on (RELAY_CAP_EXACT_CUT):
	 * relay.h's "flush:N:US" or "fua:N:US"; empty: none */
	char cut[48];
};

void camp_plan_power_on(struct bctx *b);
void camp_start_work(struct bctx *b);
/* While writing: an ACK range of n records, an IO announcement, DONE. */
void camp_on_ack(struct bctx *b, uint32_t n);
void camp_on_io(struct bctx *b, const struct pc_msg *m);
void camp_on_done(struct bctx *b);
/* The instant the poll loop must wake for the cut (UINT64_MAX: none);
 * camp_cut_due when it has come. */
uint64_t camp_cut_wake(const struct bctx *b);
void camp_cut_due(struct bctx *b);
void camp_cut(struct bctx *b, const char *why);
/* The relay's answer to a RELAY_OP_CUT: taken if it is the cut's. */
void camp_cut_switched(struct bctx *b, const struct relay_rep *rep);
json_object *camp_verify_request(struct bctx *b);
int camp_send_known(struct bctx *b);

#endif

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

/* The cycle's work and cut plan: opaque, owned by campaign_plan.c. */
struct camp_plan;

/* A plan with nothing planned, or NULL (no memory); freed with free(). */
struct camp_plan *camp_plan_new(void);
/* The exact cut told to the relay at this power-on (RELAY_CAP_EXACT_CUT):
 * relay.h's "flush:N:US" or "fua:N:US"; "": none. */
const char *camp_plan_exact_cut(const struct bctx *b);

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

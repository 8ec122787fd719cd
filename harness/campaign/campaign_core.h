/*
 * campaign_core.h - the campaign's ground floor (campaign_core.c): its
 * clock, its events, a board's state, power off and the next cycle, and
 * the check of every results write.
 */
#ifndef PC_HARNESS_CAMPAIGN_CORE_H
#define PC_HARNESS_CAMPAIGN_CORE_H

#include <stdint.h>

#include <json-c/json.h>

#include "harness/campaign/campaign_board.h"
#include "harness/link/board.h"
#include "harness/results/results.h"

extern const char *const camp_bstate_names[];
int64_t camp_t(struct camp *c);
json_object *camp_ev_new(struct bctx *b, enum pc_ev_kind kind);
int camp_ev_log(struct bctx *b, json_object *ev);
/* The board's state, and its link told its phase (camp_link_phase). */
void camp_set_state(struct bctx *b, enum bstate st, uint64_t timeout_ms);
enum link_phase camp_link_phase(enum bstate st);
int camp_no_off(const struct bctx *b);
void camp_power_off(struct bctx *b);
void camp_next_cycle(struct bctx *b);
/* ret of a results_*() call: a failure stops the campaign (fatal), said
 * once, naming the file and errno. Returns ret. */
int camp_results_check(struct camp *c, int ret);

#endif

/*
 * campaign_infra.h - a cycle ended as an INFRA_ERROR, and a board given
 * up (campaign_infra.c).
 */
#ifndef PC_HARNESS_CAMPAIGN_INFRA_H
#define PC_HARNESS_CAMPAIGN_INFRA_H

#include <json-c/json.h>

#include "harness/campaign/campaign_board.h"

void camp_infra(struct bctx *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a cause ("setup", ...) and fields for the event (owned, may be NULL). */
void camp_infra_ex(struct bctx *b, const char *cause, json_object *extra, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void camp_give_up(struct bctx *b, const char *why);

#endif

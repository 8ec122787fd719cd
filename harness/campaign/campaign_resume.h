/*
 * campaign_resume.h - the verdicts on record (campaign_resume.c): each
 * recorded and tallied, campaign.json, and a resume reading a folder's
 * verdicts and events back.
 */
#ifndef PC_HARNESS_CAMPAIGN_RESUME_H
#define PC_HARNESS_CAMPAIGN_RESUME_H

#include <stddef.h>

#include <json-c/json.h>

#include "harness/results/verdict.h"

struct bctx;
struct camp;

struct bctx *camp_board_by_name(struct camp *c, const char *name);
int camp_on_verdict(const struct pc_verdict *v, void *arg);
void camp_on_note(const char *board, const char *text, void *arg);
/* Resume: read the folder's verdicts and events back (the engine is fed
 * them, the tallies counted). 0, or -errno (said). */
int camp_resume(struct camp *c, const char *dir);
int camp_campaign_json(struct camp *c, int *existing, char *err, size_t errlen);
/* The settings this resume changed, each a config_change event (after run_start). */
void camp_reconf_log(struct camp *c);

#endif

/*
 * campaign.h - the host controller's campaign loop: one poll() loop driving
 * every board through power on, HELLO, verify, work, cut (docs/design.md section 3).
 */
#ifndef PC_HARNESS_CAMPAIGN_H
#define PC_HARNESS_CAMPAIGN_H

#include "harness/campaign/campaign_opts.h"
#include "harness/campaign/config.h"

/* Exit statuses of `powercut run`: the report's result on the whole
 * campaign (enum report_result), or an error. */
enum {
	CAMPAIGN_PASS = 0,	/* every device PASS */
	CAMPAIGN_FAIL = 1,	/* some cycle FAIL or BOOT_FAIL (even if interrupted) */
	CAMPAIGN_ERROR = 2,	/* could not run: configuration, results folder, ... */
	CAMPAIGN_INCOMPLETE = 3,	/* nothing failed, but a board was given up, too many cycles were
				 * INFRA_ERROR, or cycles are left (interrupted by SIGINT/SIGTERM:
				 * resume with the same command) */
};

int campaign_run(struct campaign_cfg *cfg, const struct campaign_opts *o);

#endif

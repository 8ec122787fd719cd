/*
 * campaign.h - the host controller's campaign loop: one poll() loop driving
 * every board through power on, HELLO, verify, work, cut (DESIGN section 3).
 */
#ifndef PC_HARNESS_CAMPAIGN_H
#define PC_HARNESS_CAMPAIGN_H

#include "config.h"

struct campaign_opts {
	const char *results;	/* results folder (default results/<campaign>) */
	const char *agent;	/* powercut-agent for sim boards */
	long cycles;		/* > 0 overrides the config's cycles */
	int quiet;		/* no progress lines */
	int no_report;		/* do not print the report at the end */
};

/* Exit statuses of `powercut run`. */
enum {
	CAMPAIGN_PASS = 0,	/* every cycle PASS (INFRA_ERROR aside) */
	CAMPAIGN_FAIL = 1,	/* finished; some cycle FAIL or BOOT_FAIL */
	CAMPAIGN_ERROR = 2,	/* could not run: configuration, results folder, ... */
	CAMPAIGN_STOPPED = 3,	/* interrupted (SIGINT/SIGTERM); resume with the same command */
};

int campaign_run(struct campaign_cfg *cfg, const struct campaign_opts *o);

#endif

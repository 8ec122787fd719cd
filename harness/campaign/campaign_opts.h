/*
 * campaign_opts.h - what `powercut run` is asked on its command line, beside
 * the configuration: read by the campaign's files, set by the CLI.
 */
#ifndef PC_HARNESS_CAMPAIGN_OPTS_H
#define PC_HARNESS_CAMPAIGN_OPTS_H

struct campaign_opts {
	const char *results;	/* results folder (default results/<campaign>) */
	const char *agent;	/* powercut-agent for sim boards */
	long cycles;		/* > 0 overrides the config's cycles */
	int quiet;		/* no progress lines */
	int no_report;		/* do not print the report at the end */
};

#endif

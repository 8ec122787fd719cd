/*
 * status_read.h - status_read.c's functions: what status reads of a results
 * folder into its struct st_ctx (status_model.h), file by file. status.c
 * calls them. Private to harness/cli/status*.c (split out of status_int.h,
 * issue 41).
 */
#ifndef PC_HARNESS_CLI_STATUS_READ_H
#define PC_HARNESS_CLI_STATUS_READ_H

struct st_ctx;

/* Each fills x from its file: 0, or -errno with x->err naming the file (and
 * line) and what is wrong. campaign.json first: it names the boards. */
int status_read_campaign(struct st_ctx *x);
int status_read_verdicts(struct st_ctx *x);
int status_read_events(struct st_ctx *x);

#endif

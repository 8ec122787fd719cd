/*
 * status_limits.h - how much `powercut status` reads (struct status_limits):
 * status.c holds the default sizes (status_limits_default, status.h) and
 * hands them to the reader, status_read.c, through its struct st_ctx
 * (status_model.h); the unit tests and the fuzz target pass smaller ones to
 * status_run(). Split out of status.h (issue 41), so that the reader sees
 * the limits without an arrow up to status.c.
 */
#ifndef PC_HARNESS_CLI_STATUS_LIMITS_H
#define PC_HARNESS_CLI_STATUS_LIMITS_H

#include <stddef.h>
#include <stdint.h>

/* How much status reads; status_limits_default (status.h) holds the sizes. The
 * unit tests and the fuzz target shrink them, so that small files reach the
 * long-line and the growing-tail paths. */
struct status_limits {
	size_t line_max;	/* a longer line is seen as its first line_max bytes */
	size_t chunk;		/* the bytes of one read */
	uint64_t tail_first;	/* events.jsonl: the tail read first, */
	uint64_t tail_max;	/* growing 4x to at most this */
	uint64_t campaign_max;	/* campaign.json: larger is refused */
};

#endif

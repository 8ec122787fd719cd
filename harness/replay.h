/*
 * replay.h - recompute every verdict of a results folder from its events.
 */
#ifndef PC_HARNESS_REPLAY_H
#define PC_HARNESS_REPLAY_H

#include <stdio.h>

struct replay_result {
	unsigned recomputed;	/* verdicts the engine produced from events.jsonl */
	unsigned recorded;	/* lines in verdicts.jsonl */
	unsigned matched;
	unsigned differ;	/* same board and cycle, different content */
	unsigned missing;	/* recomputed but not recorded */
	unsigned extra;		/* recorded but not recomputed */
};

/* Differences are described on out. 0 (whatever the differences), or -errno
 * with err when the folder cannot be read. */
int replay_dir(const char *dir, FILE *out, struct replay_result *r, char *err, size_t errlen);

#endif

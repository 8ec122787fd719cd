/*
 * replay.h - recompute every verdict of a results folder from its events.
 */
#ifndef PC_HARNESS_REPLAY_H
#define PC_HARNESS_REPLAY_H

#include <stdint.h>
#include <stdio.h>

#define REPLAY_MORE_CYCLES 8
#define REPLAY_REFUSED_LINES 5	/* refused lines named by number */

/* One board of a replayed folder: its verdicts and the first difference. */
struct replay_board {
	char *name;		/* as the verdicts name it ("?" when they do not) */
	unsigned recomputed, recorded, matched;
	unsigned differ, missing, extra;
	int has_cycles;		/* cycle_min..cycle_max of its verdicts are known */
	uint32_t cycle_min, cycle_max;
	char *first;		/* the first difference, readable (as printed): NULL when none */
	char *first_brief;	/* the same in one line: "cycle 7: verdict, counts.lost_acked" */
	unsigned nmore;		/* differences after the first */
	char more[128];		/* the cycles of the first REPLAY_MORE_CYCLES of them: "9, 11, 20" */
};

struct replay_result {
	unsigned recomputed;	/* verdicts the engine produced from events.jsonl */
	unsigned recorded;	/* lines in verdicts.jsonl */
	unsigned matched;
	unsigned differ;	/* same board and cycle, different content */
	unsigned missing;	/* recomputed but not recorded */
	unsigned extra;		/* recorded but not recomputed */
	/* lines of events.jsonl not fed to the engine (not UTF-8, not a JSON
	 * object, not an event: skipped): damage or crafting, never a
	 * recording's normal state (a torn last line is neither) */
	unsigned refused;
	unsigned refused_line[REPLAY_REFUSED_LINES];	/* the first ones' line numbers */
	/* by board, in the order their first verdict came (only when asked:
	 * replay_opts.boards; replay_result_free() frees them) */
	struct replay_board *boards;
	unsigned nboards;
};

struct replay_opts {
	int boards;		/* keep r->boards */
	FILE *recomputed;	/* not NULL: the recomputed verdicts are written here, one a
				 * line, as the campaign writes verdicts.jsonl */
};

/* Differences are described on out: the first differing verdict of each
 * board field by field ("- recorded", "+ recomputed"), the others by cycle.
 * 0 (whatever the differences), or -errno with err when the folder cannot be
 * read. o may be NULL. */
int replay_dir(const char *dir, FILE *out, struct replay_result *r, char *err, size_t errlen);
int replay_dir_opts(const char *dir, FILE *out, const struct replay_opts *o, struct replay_result *r, char *err,
		    size_t errlen);
void replay_result_free(struct replay_result *r);

/* `powercut replay [--junit FILE] [--report] [--quiet] DIR...` */
struct replay_cli {
	const char *junit;	/* JUnit XML of the comparison written here (NULL: none) */
	int report;		/* each folder's per-device report, as today's engine judges it */
	int quiet;		/* nothing printed for a folder whose every verdict matches */
};

/* Every folder replayed in turn, on out. Returns the exit status of
 * `powercut replay`: 0 every verdict of every folder matches, 1 a verdict
 * differs, is missing or extra (and no error), 2 an error: a folder that
 * cannot be replayed, a folder with a line of events.jsonl refused or
 * skipped (its verdicts still compared and printed), a report that cannot be
 * made, a JUnit file that cannot be written (the other folders are still
 * replayed). */
int replay_main(const char *const *dirs, int ndirs, FILE *out, const struct replay_cli *o);

#endif

/*
 * progress.h - what `powercut run` shows on stderr while it runs: each
 * board's cycle, counts and ETA, and its FAIL verdicts without a flood.
 *
 * On a terminal the boards' lines are one block redrawn in place: the cursor
 * is left on the block's first line (the elapsed time, shorter than any
 * "powercut: " message), so a message printed between two redraws writes
 * over that line and the next redraw starts below it; nothing printed is
 * ever drawn over. Elsewhere (a log, a pipe, journald) a plain line every
 * PROGRESS_PLAIN_MS and a last one at the end.
 *
 * A board's first FAIL is printed in full; the next ones are counted and
 * summarised at most every PROGRESS_FAIL_EVERY_MS and at the end:
 *   board lying-1: 17 more FAIL cycles since cycle 4 (last: cycle 40 lost_acked=2)
 * One campaign per process: the state is the module's own.
 */
#ifndef PC_HARNESS_PROGRESS_H
#define PC_HARNESS_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#define PROGRESS_TTY_MS		2000u
#define PROGRESS_PLAIN_MS	10000u
#define PROGRESS_FAIL_EVERY_MS	30000u
/* The longest ETA shown (s), a million hours: past it, it is that. */
#define PROGRESS_ETA_MAX	(3600.0 * 1e6)

struct progress_board {
	const char *name;
	unsigned done, cycles;		/* cycles finished, of the plan */
	unsigned pass, fail, boot, infra;
	int given_up;
	double eta_s;			/* < 0: unknown */
};

/* How often progress_show() is wanted on this stderr, in ms. */
unsigned progress_interval_ms(void);

/* Show the boards; final: the last time (left in place, always printed). */
void progress_show(const struct progress_board *b, unsigned nb, double elapsed_s, int final);

/* One board's line, without a newline, its name padded to namew:
 * "lying-1 26/120 PASS 13 FAIL 12 ETA 0:02"; returns its length. */
size_t progress_board_line(const struct progress_board *b, int namew, char *buf, size_t len);

/* "h:mm" of a duration in seconds, rounded up to the next minute, at most
 * PROGRESS_ETA_MAX; "-" when negative (unknown). `powercut status` shows
 * its ETAs the same way. */
void progress_hmm(double seconds, char *buf, size_t len);

/* A FAIL verdict of board at cycle, its classes in what (" lost_acked=3"). */
void progress_fail(const char *board, uint64_t cycle, const char *what);

/* Print the FAIL summaries that are due, or every pending one (final). */
void progress_fail_flush(int final);

#endif

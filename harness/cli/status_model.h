/*
 * status_model.h - one run of `powercut status` (struct st_ctx): the folder
 * it reads, its limits and output, what each file said and per board
 * (struct st_board) its verdicts, its events in the window read (struct
 * st_evs) and what status derives from them. status.c owns it: it makes it
 * (status_run), derives each board's plan, state and ETA and prints it;
 * status_read.c fills it from the folder (status_read.h). Private to
 * harness/cli/status*.c (split out of status_int.h, issue 41).
 */
#ifndef PC_HARNESS_CLI_STATUS_MODEL_H
#define PC_HARNESS_CLI_STATUS_MODEL_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/record.h"
#include "harness/cli/status_scan.h"
#include "harness/results/verdict.h"

struct status_limits;

/* What the events of one board in one window of events.jsonl say. */
struct st_evs {
	int seen;
	unsigned cycle;		/* the highest cycle of its events */
	unsigned work;		/* the highest cycle with a work event */
	unsigned plan;		/* the cycles its last run_end planned (0: none) */
	unsigned run_plan;	/* the cycles the run of its last power_on plans (0: not said) */
	enum status_bstate state;
	unsigned starts;	/* power-ons of a new cycle, with their time */
	unsigned c0, c1;	/* the first and the last of them */
	int64_t t0, t1;
	int end;		/* its last run_end's end (enum pc_run_end) + 1; 0: none or unknown */
};

struct st_board {
	char name[64];
	/* verdicts.jsonl */
	uint64_t n[PC_NOUTCOMES];	/* (a count of lines: never past INT64_MAX) */
	unsigned last_verdict;
	unsigned fail_cycle;	/* the last FAIL's cycle, 0: none */
	off_t fail_off;		/* its line: where, how long (as read: at most line_max), cut */
	size_t fail_len;
	int fail_trunc;
	struct st_evs ev;
	/* derived */
	unsigned plan, cycle;
	enum status_bstate state;
	double cycle_ms, eta_s;	/* < 0: unknown */
	uint64_t fail_cnt[PC_NCLASSES];	/* the last FAIL's violations by class */
	char fail_what[256];		/* the same as text: "lost_acked=3 torn=1" */
	char fail_time[48];
	/* towards the target: per mode (enum pc_mode), the cuts that count
	 * (pc_cut_counts) and the FAILs among them; the modes configured */
	uint64_t cuts[PC_MODE_MAX], fails[PC_MODE_MAX];
	uint8_t mode_on[PC_MODE_MAX];
};

struct st_ctx {
	const char *dir;
	const struct status_limits *lim;
	FILE *out;
	char path[PATH_MAX + 32];
	char campaign[64];
	unsigned cycles;
	struct st_board *b;
	unsigned nb;
	char *line;		/* a FAIL line read again (at most lim->line_max) */
	size_t line_cap;
	/* events.jsonl */
	int ev_fd;
	off_t ev_size, ev_from;
	int64_t ev_mtime;
	uint64_t ev_lines;	/* complete lines in [ev_from, ev_size) */
	struct st_evs *win;	/* the window being read */
	/* verdicts.jsonl */
	uint64_t v_lines;
	/* campaign.json: the target (rate 0: none) and the free-space floor */
	double target_rate, target_conf;
	uint64_t min_free;
	/* events.jsonl's growth over its tail: the first line with a "t" in it
	 * (where, when) and the last one's t (campaign clock, ms) */
	int rate_window, rate_t_set;
	off_t rate_off;
	int64_t rate_t0, rate_t1;
	char err[1024];
};

#endif

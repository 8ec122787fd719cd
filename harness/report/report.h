/*
 * report.h - the per-device pass/fail report (`powercut report`).
 *
 * Reads verdicts.jsonl from one or more results directories (from one host or
 * many: they merge), groups the cycles by device identity and, per write
 * mode, counts outcomes, violations per class and the write rate. The table
 * is what a user hands to a supplier; json=1 gives the same as one JSON
 * document for scripts. Verdict classes and outcomes: docs/design.md section 6;
 * per-device results add INCOMPLETE (a campaign that judged too little).
 */
#ifndef PC_HARNESS_REPORT_H
#define PC_HARNESS_REPORT_H

#include <stddef.h>
#include <stdio.h>

/*
 * The overall result: the worst device's, and the exit status of `powercut
 * report` and `powercut run` (2 is theirs for errors). A device is FAIL or
 * BOOT_FAIL on any such cycle; else INCOMPLETE when the campaign judged too
 * little of it (a board given up, fewer verdicts than planned, a run still
 * going or killed, more INFRA_ERROR than incomplete_infra_share allows,
 * nothing judged); else INCONCLUSIVE when too few of a mode's cuts landed
 * during its writes (no PASS without evidence, docs/verdicts.md); else
 * PASS. No device at all is INCOMPLETE too.
 */
enum report_result {
	REPORT_PASS = 0,	/* every device PASS */
	REPORT_FAIL = 1,	/* some device FAIL or BOOT_FAIL */
	REPORT_INCOMPLETE = 3,	/* some device INCOMPLETE or INCONCLUSIVE, none FAIL or BOOT_FAIL */
};

/* What the report is written as (powercut report --format). */
enum report_format {
	REPORT_FMT_TEXT,	/* the table, for a terminal */
	REPORT_FMT_MD,		/* Markdown, for a ticket */
	REPORT_FMT_HTML,	/* one self-contained page with charts, for a supplier */
	REPORT_FMT_JSON,	/* one document, the names of verdicts.jsonl */
	REPORT_FMT_JUNIT,	/* JUnit XML: a testsuite per device, a testcase per mode */
	REPORT_FMT_CSV,		/* a row per cycle */
};
/* The format named s ("text", "md", ...), or -1. */
int report_format_from_name(const char *s);

struct report_opts {
	int json;		/* one JSON document instead of the table (format json) */
	enum report_format format;
	double confidence;	/* of the violation-rate bounds, 0: the campaign's target.confidence,
				 * else 0.95 (QUAL_CONF_MIN..QUAL_CONF_MAX) */
	int own_run;		/* the caller is the run that holds the folder's lock (it is
				 * done with its cycles): its lock is not "still running" */
};

/*
 * dirs: results directories (or verdicts.jsonl files themselves; a file
 * named verdicts.jsonl brings its folder's campaign.json and events.jsonl
 * along). Prints nothing until every file has been read; out NULL prints
 * nothing at all (the result only). Returns 0 with *result set (when result
 * is not NULL), or -errno/-EINVAL with err naming the file (and line) and
 * what is wrong. A torn last line (no newline: the harness stopped while
 * writing it) is skipped with a warning on stderr.
 */
int report_run(const char *const *dirs, int ndirs, FILE *out, const struct report_opts *o, int *result,
	       char *err, size_t errlen);
/*
 * `powercut report --compare A B`: two parts side by side, per mode the
 * rates with their bounds, the speed ratio, the latency and each side's
 * result (text, or html with o->format REPORT_FMT_HTML). A and B are each a
 * results folder (or verdicts file), or, when dirs are given, a device of
 * them: its id, a part of it, or a board's name. 0, or -errno/-EINVAL with
 * err saying what is wrong (a side that names no device, or more than one
 * part, is refused naming what it found).
 */
int report_compare(const char *a, const char *b, const char *const *dirs, int ndirs, FILE *out,
		   const struct report_opts *o, char *err, size_t errlen);
/* The same, printing, without the result. */
int report_print(const char *const *dirs, int ndirs, FILE *out, int json, char *err, size_t errlen);

#endif

/*
 * status.h - `powercut status DIR [--json]`: how far a campaign got, and
 * whether a run is at it, read from its results folder while it runs.
 *
 * Every file of the folder is untrusted: status never parses events.jsonl as
 * a whole (it can be gigabytes after a night). It reads the tail of
 * events.jsonl (8 MB, growing to at most 256 MB while a configured board has
 * no event in it), all of verdicts.jsonl line by line, and campaign.json; a
 * line is walked by a small scanner that finds the top-level members it
 * needs without building JSON objects. Lines longer than 1 MB are seen as
 * their first MB. The pure parts, for the unit tests too: the scanner and
 * the board states, status_scan.h; the sizes, status_limits.h.
 */
#ifndef PC_HARNESS_STATUS_H
#define PC_HARNESS_STATUS_H

#include <stddef.h>
#include <stdio.h>

#include "harness/cli/status_limits.h"

/* The subcommand: argv[0] is "status". Exit 0, 1 when a file cannot be
 * read or holds a malformed line, 2 on a usage error. */
int status_main(int argc, char **argv);

/* The sizes above (status_limits.h says what each bounds). */
extern const struct status_limits status_limits_default;

/* What status_main() runs after its options: probe the lock of the results
 * folder dir, read it within lim (NULL: status_limits_default) and print the
 * status to out, as text or (json) as one JSON document. 0, or 1 with err
 * naming the file (and line) and what is wrong; the text form has printed its
 * first line (the lock's) before. */
int status_run(const char *dir, int json, const struct status_limits *lim, FILE *out, char *err, size_t errlen);

#endif

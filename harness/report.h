/*
 * report.h - the per-device pass/fail report (`powercut report`).
 *
 * Reads verdicts.jsonl from one or more results directories (from one host or
 * many: they merge), groups the cycles by device identity and, per write
 * mode, counts outcomes, violations per class and the write rate. The table
 * is what a user hands to a supplier; json=1 gives the same as one JSON
 * document for scripts. Verdict classes and outcomes: DESIGN section 6.
 */
#ifndef PC_HARNESS_REPORT_H
#define PC_HARNESS_REPORT_H

#include <stddef.h>
#include <stdio.h>

/*
 * dirs: results directories (or verdicts.jsonl files themselves). Prints
 * nothing until every file has been read. Returns 0, or -errno/-EINVAL with
 * err naming the file (and line) and what is wrong. A torn last line (no
 * newline: the harness stopped while writing it) is skipped with a warning
 * on stderr.
 */
int report_print(const char *const *dirs, int ndirs, FILE *out, int json, char *err, size_t errlen);

#endif

/*
 * results.h - the campaign's own records: append-only, fsync'd, resumable.
 *
 * results/<campaign>/ holds campaign.json, events.jsonl (everything needed to
 * recompute every verdict), verdicts.jsonl (one line per cycle) and
 * console/<board>/cycle-N.log. A crash can leave at most a torn last line in
 * either .jsonl file; results_open() cuts it off before appending, so every
 * line in the files is whole.
 */
#ifndef PC_HARNESS_RESULTS_H
#define PC_HARNESS_RESULTS_H

#include <limits.h>
#include <stddef.h>

#include <json-c/json.h>

struct results {
	char dir[PATH_MAX];
	int ev_fd;
	int v_fd;
	unsigned long events;
	int dirty;		/* events written since the last fsync */
};

/* Create/open the folder and both files; trims torn tails (reported in note).
 * 0 or -errno with err naming the file. */
int results_open(struct results *r, const char *dir, char *note, size_t notelen, char *err, size_t errlen);
void results_close(struct results *r);

/* Append one event line (no fsync). 0 or -errno. */
int results_event(struct results *r, json_object *ev);
/* fsync events.jsonl if anything was written since the last sync. */
int results_sync(struct results *r);
/* fsync the events (the evidence first), then append the verdict and fsync it. */
int results_verdict(struct results *r, json_object *v);

/* Call fn for each line of a .jsonl file. A torn last line (no newline) is
 * skipped and counted in *torn. Malformed lines: -EINVAL, err = FILE:LINE: why. */
typedef int (*results_line_fn)(json_object *obj, unsigned lineno, void *arg);
int results_each_line(const char *path, results_line_fn fn, void *arg, int *torn, char *err, size_t errlen);

/* Write a small JSON file atomically (tmp + fsync + rename + fsync dir). */
int results_write_json(const char *dir, const char *name, json_object *obj, char *err, size_t errlen);

#endif

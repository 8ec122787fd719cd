/*
 * results.h - the campaign's own records: append-only, fsync'd, resumable.
 *
 * results/<campaign>/ holds campaign.json, events.jsonl (everything needed to
 * recompute every verdict), verdicts.jsonl (one line per cycle) and
 * console/<board>/cycle-N.log. A crash can leave at most a torn last line in
 * either .jsonl file; results_open() cuts it off before appending, so every
 * line in the files is whole.
 *
 * One run at a time: results_open() takes an exclusive flock() on <dir>/lock
 * and holds it until results_close() (or the process dies: the kernel drops
 * it, so a killed run never leaves a lock nobody can take). The file says
 * who holds or held it: {"pid", "host", "started"[, "ended"]}. Readers
 * (replay, report, status) never take it.
 */
#ifndef PC_HARNESS_RESULTS_H
#define PC_HARNESS_RESULTS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

struct results_writer;	/* writer.c's: the thread that syncs */

struct results {
	char dir[PATH_MAX];
	int ev_fd;
	int v_fd;
	unsigned long events;
	int dirty;		/* events written since the last fsync */
	int lock_fd;		/* <dir>/lock, flock'd LOCK_EX for the whole run; -1 if not held */
	int64_t started;	/* when this run took the lock (epoch seconds) */
	/* The first failed write or sync of events.jsonl or verdicts.jsonl
	 * (-errno), and what it was ("DIR/events.jsonl: fdatasync failed: ...").
	 * Sticky: after a failed fdatasync the kernel may have dropped the
	 * pages it could not write, so a later sync that succeeds proves
	 * nothing (PostgreSQL's "fsyncgate"). Every later results_event(),
	 * results_sync() and results_verdict() returns it, writing nothing. */
	int failed;		/* read with __atomic_load_n: the writer's thread sets it */
	char failure[PATH_MAX + 160];
	struct results_writer *w;
};

/* What <dir>/lock says about the run that holds or last held the folder. */
enum results_lock_state {
	RESULTS_LOCK_NONE,	/* no lock file: never run (by a powercut that locks) */
	RESULTS_LOCK_HELD,	/* a live run holds it */
	RESULTS_LOCK_FREE,	/* nobody holds it */
	RESULTS_LOCK_UNKNOWN,	/* it could not be probed (err says why) */
};

struct results_lock_info {
	enum results_lock_state state;
	int known;		/* the contents below were readable */
	long pid;
	char host[256];		/* printable characters only */
	int64_t started, ended;	/* epoch seconds; ended 0: the run never closed the folder */
	char err[256];
};

/* Create/open the folder, lock it, open both files; trims torn tails and
 * notes a stale lock taken over (reported in note). 0 or -errno with err
 * naming the file; -EBUSY when another run holds the folder, err naming its
 * pid, host and start time. */
int results_open(struct results *r, const char *dir, char *note, size_t notelen, char *err, size_t errlen);
void results_close(struct results *r);

/*
 * Writing, from one thread (the campaign's loop). Events are appended at
 * once (one write() each); the syncs run on the writer's own thread
 * (writer.c), so that a slow results disk never holds up the loop that
 * decides every board's cut. Each request has a number, in order; the
 * writer syncs in batches: events.jsonl first (the evidence), then the
 * verdicts queued, one write() each, then verdicts.jsonl.
 *
 * Every call returns 0, or -errno: the first failure (a short or failed
 * write, a failed fdatasync), kept in r->failed and r->failure and sticky.
 * After a failed fdatasync the kernel may have dropped the pages it could
 * not write, so a later sync that succeeds proves nothing (PostgreSQL's
 * "fsyncgate"): from then on nothing is written or synced, every call
 * returns it, and results_durable() is never true again: the caller stops.
 */
/* Append one event line (no sync). */
int results_event(struct results *r, json_object *ev);
/* Ask for events.jsonl to be synced (if anything was written since the last
 * request); returns at once. */
int results_sync(struct results *r);
/* Queue a verdict: the events synced first, then it is appended and
 * verdicts.jsonl synced; returns at once. */
int results_verdict(struct results *r, json_object *v);
/* The number of the last request, and whether every request up to seq is
 * done (durable). */
uint64_t results_requested(const struct results *r);
int results_durable(struct results *r, uint64_t seq);
/* Readable (poll) when the writer finished a batch or failed; then
 * results_poll() empties it and returns 0 or the failure. */
int results_fd(const struct results *r);
int results_poll(struct results *r);
/* Sync what was written and wait for every request: 0 or the failure. */
int results_flush(struct results *r);

/* Call fn for each line of a .jsonl file, read by the one reader
 * (harness/results/jsonl.h: bounded lines, UTF-8, strict JSON objects). A
 * torn last line (no newline) is skipped and counted in *torn. Malformed
 * lines: -EINVAL, err = FILE:LINE: why. */
typedef int (*results_line_fn)(json_object *obj, unsigned lineno, void *arg);
int results_each_line(const char *path, results_line_fn fn, void *arg, int *torn, char *err, size_t errlen);

/* Probe <dir>/lock without disturbing a run (a shared lock held for an
 * instant; results_open() waits that instant out). Always fills li. */
void results_lock_probe(const char *dir, struct results_lock_info *li);
/* One line for humans: "running, pid 12 on lab1 since 2024-05-01 10:00:00 +0200". */
void results_lock_describe(const struct results_lock_info *li, char *buf, size_t len);

/* Write a small JSON file atomically (tmp + fsync + rename + fsync dir). */
/* This host's id for results (verdict "host", campaign.json host.id):
 * /etc/machine-id, else the hostname; letters, digits and -_.: only. */
void results_host_id(char *buf, size_t len);
int results_write_json(const char *dir, const char *name, json_object *obj, char *err, size_t errlen);

#endif

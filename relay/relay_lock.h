/*
 * relay_lock.h - one user at a time per physical relay, wherever the results live.
 *
 * A campaign's results folder has its own lock (harness/results/results.h), but the
 * folder is wherever --results says, so it cannot tell `powercut relay` that
 * a board is being driven. This lock is keyed by the relay itself and kept in
 * one fixed directory per host:
 *
 *   $POWERCUT_LOCK_DIR, else /run/lock/powercut (created mode 1777, as
 *   /run/lock itself, so a campaign run as root and an engineer's
 *   `powercut relay` meet in the same place; /tmp/powercut-lock on a host
 *   without /run/lock)
 *
 * The key is the identity of the physical board's power where it has one
 * (relay_ops.ident: a GPIO chip and line, a USB relay's device and channel,
 * a serial relay's device, a PDU and outlet: "gpiod:gpiochip1:3"; a command
 * relay's declared board_id: "board:rpi4-lab2"; a virtual board's disk
 * image: "qemu:/abs/disk.img"), so two configurations naming the same board
 * conflict too, whatever their results folders and ports; else the board's
 * within its campaign ("board:CAMPAIGN/BOARD", a sysrq relay or a command
 * relay without board_id). The sim boards take none: each is a process of
 * the harness's own on a medium in its results folder, whose lock covers it.
 *
 * The lock is an flock() on <dir>/<key>.lock held for as long as its user
 * drives the relay: `powercut run` for each of its boards for its whole
 * run, `powercut relay` for one command, and a relay holder (relay_hold.h)
 * for as long as it holds a line. The kernel drops it when its process
 * dies; the file still names that process, so the next taker says it took a
 * stale lock over. The file is one JSON line naming the user: pid, host,
 * start time, role ("run", "relay", "holder"), campaign, board, config,
 * results folder, holder state. Anyone may write to the directory: every
 * field read back is checked and printed only as printable characters.
 */
#ifndef PC_RELAY_LOCK_H
#define PC_RELAY_LOCK_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#define RELAY_LOCK_ENV		"POWERCUT_LOCK_DIR"
#define RELAY_LOCK_DEFAULT_DIR	"/run/lock/powercut"
#define RELAY_LOCK_FALLBACK_DIR	"/tmp/powercut-lock"	/* where there is no /run/lock */

/* Who holds (or last held) a relay's lock. */
struct relay_lock_who {
	int known;			/* the file named a live-looking user (pid > 0) */
	long pid;
	char host[64];
	int64_t started;		/* epoch seconds */
	char role[16];			/* "run", "relay" or "holder" */
	char campaign[64], board[64];
	char config[PATH_MAX];
	char results[PATH_MAX];		/* run: its results folder */
	char state[8];			/* holder: "on" or "off" */
	char key[160];
};

struct relay_lock {
	int fd;				/* flock'd LOCK_EX; -1: not held */
	char path[PATH_MAX];		/* <dir>/<name>.lock */
	char sock[108];			/* the abstract unix socket a holder listens on
					 * (relay_lock_sock_path()) */
	struct relay_lock_who me;	/* what the file says while we hold it */
};

/*
 * The lock key of a board's relay into key: the driver's identity of the
 * relay when it has one, else "board:CAMPAIGN/BOARD". The relay section
 * must have passed the driver's check(). 0; -ENOENT: no lock, the board is
 * a process of ours whose medium lives in its results folder (sim), whose
 * own lock covers it, and two folders are two boards; -EINVAL: unknown
 * driver.
 */
int relay_lock_key(const char *driver, json_object *cfg, const char *campaign, const char *board, char *key,
		   size_t len);

/*
 * Take the lock of key for me (pid, host and start time are filled in).
 * A held lock is retried for wait_ms first. 0; -EBUSY with *holder (when
 * not NULL) filled and err naming the holder; or -errno with err naming the
 * file. A stale lock taken over is said in note ("" otherwise). l->fd is
 * O_CLOEXEC. The caller releases with relay_lock_release().
 */
int relay_lock_take(struct relay_lock *l, const char *key, const struct relay_lock_who *me, uint32_t wait_ms,
		    struct relay_lock_who *holder, char *note, size_t notelen, char *err, size_t errlen);
/* Rewrite the file from l->me (a holder taking over a lock, or changing state). 0 or -errno. */
int relay_lock_update(struct relay_lock *l);
/* Empty the file and drop the lock. Accepts a lock never taken (fd -1). */
void relay_lock_release(struct relay_lock *l);
/* Close our descriptor but leave the lock and the file to another process
 * sharing it (a holder forked with it). */
void relay_lock_forget(struct relay_lock *l);
/* The name of the abstract unix socket ("@" in ss -x) a holder of key
 * listens on: "powercut-relay/<lock file name>/<crc of its path>". 0 or
 * -errno with err (the lock directory). */
int relay_lock_sock_path(const char *key, char *path, size_t len, char *err, size_t errlen);

/* One line for humans: "campaign lab (powercut run pid 12 on lab1 since
 * 2026-05-01 10:00:00 +0200, results /var/lib/powercut/results/lab)". */
void relay_lock_describe(const struct relay_lock_who *w, char *buf, size_t len);

#endif

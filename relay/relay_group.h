/*
 * relay_group.h - the process groups a relay spawns, on record in the results
 * folder, so that a harness started after a crash finds and kills what the
 * crashed one left running before any board powers on.
 *
 * Drivers that run the board as a child of the harness (sim: the agent;
 * qemu: QEMU) start it through a gate. In the child, right after fork(),
 * relay_gate_child() makes it a group leader, asks the kernel to SIGKILL it
 * when the harness dies (PR_SET_PDEATHSIG) and waits. The parent's
 * relay_gate_release() writes <state_dir>/pgid naming the group (the
 * leader's pid, its start time and the boot id, and the harness's own pid
 * and start time), fsyncs it, and only then lets the child run: no group can
 * run without its record on disk.
 *
 * At open, relay_group_kill_orphans() reads the record and SIGKILLs the
 * group if, and only if, its leader is still the very process recorded (same
 * pid, same start time, same boot), runs on this board (its command line
 * names the board's media or drive), and the harness that started it is
 * gone. A pid number reused by an unrelated process has another start time
 * and is left alone.
 *
 * PR_SET_PDEATHSIG alone is not enough: it covers only the child itself, not
 * what it starts in its group, and not a child the harness died under before
 * the request took effect (checked, but the record also covers it). Neither
 * reaches a real board: only the sim and the virtual board are our children.
 */
#ifndef PC_RELAY_GROUP_H
#define PC_RELAY_GROUP_H

#include <stddef.h>
#include <sys/types.h>

#define RELAY_GROUP_FILE	"pgid"
#define RELAY_ORPHAN_MS		5000	/* a SIGKILLed group is gone at once; bound the wait anyway */

struct relay_gate {
	int rd, wr;		/* the child waits on rd until the parent writes to wr */
	pid_t parent;		/* the harness, as the child must see it */
};

/* A closed gate ({-1, -1}); relay_gate_close() accepts it. */
void relay_gate_init(struct relay_gate *g);
/* Before fork(): a CLOEXEC pipe. 0 or -errno. */
int relay_gate_open(struct relay_gate *g);
/* In the child, right after fork(); async-signal-safe. Returns once released;
 * _exit(127)s if the harness died or gave up first. */
void relay_gate_child(struct relay_gate *g);
/*
 * In the parent: make pid the leader of its group, record the group in path
 * (fsync'd; what names it: "agent", "QEMU"; path NULL: a relay with no state
 * folder, only PR_SET_PDEATHSIG then), then release the child. 0, or
 * -errno with err set: the child was not released and exits by itself
 * (reap it).
 */
int relay_gate_release(struct relay_gate *g, pid_t pid, const char *path, const char *what, char *err,
		       size_t errlen);
void relay_gate_close(struct relay_gate *g);

/* The group recorded in path was killed and reaped: drop the record. */
void relay_group_forget(const char *path);

struct relay;
struct pc_spawn;

/* What relay_spawn_gated() records and says about the board's process. */
struct relay_spawn_names {
	const char *what;	/* in its group's record, and errors: "agent", "QEMU" */
	const char *whose;	/* "cannot record <whose> process group": "the agent's", "QEMU's" */
	const char *pgid;	/* <state_dir>/pgid; NULL: no state folder (PR_SET_PDEATHSIG only) */
	const char *setup_note;	/* after the program when set-up fails: " (log F)", or "" */
	const char *run_what;	/* before the program when exec fails: "agent ", or "" */
	const char *run_hint;	/* after the reason when exec fails: "; give ... (--agent)", or "" */
};

/*
 * fork+exec argv[0] in its own process group through a gate (common/spawn.c),
 * stdin from /dev/null, its group on record in n->pgid before it runs. s is
 * the caller's pc_spawn_init()ed settings (flags, fds out and err, nice,
 * fd_keep); fd_in, child_setup and arg are set here. PC_SPAWN_EXEC_ERR in
 * s->flags makes a failed exec an error here rather than a silent dead
 * board. 0 with *pid set, or -errno with r->err; a child that failed is
 * reaped and its record dropped.
 */
int relay_spawn_gated(struct relay *r, const struct relay_spawn_names *n, struct pc_spawn *s, char *const argv[],
		      pid_t *pid);

/*
 * Does our child pid still run? 1, or 0 when it exited (or is no child of
 * ours): then cut its group, which may live on. Looks without reaping, so
 * the group id stays ours until that cut.
 */
int relay_child_running(pid_t pid);

/*
 * Kill the group path records if an earlier harness left it running, and
 * wait (RELAY_ORPHAN_MS at most) until none of it runs. match is text an
 * argument of the leader's command line must contain for it to be this
 * board's (the sim: "sim:<media>"; QEMU: "file=<drive>"): a record is just a
 * file, and the process it names is killed only if it is ours on every
 * count. 0 with note saying what was done or left alone ("" when nothing
 * was), or -errno with err: -EBUSY when the group belongs to a harness that
 * still runs, -ETIMEDOUT when it would not die.
 */
int relay_group_kill_orphans(const char *path, const char *match, char *note, size_t notelen, char *err,
			     size_t errlen);

#endif

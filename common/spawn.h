/*
 * spawn.h - the one way to start and reap a child process: fork, the child's
 * fds, process group and signals set up, then exec (or a function of ours);
 * reaped within a deadline, killed (alone or with its group) when it must go.
 *
 * Every fork in powercut goes through here (tools/lint-code refuses one
 * elsewhere). A site says what its child needs in a struct pc_spawn and keeps
 * its own error texts: the helpers return -errno and, for pc_spawn(), which
 * step failed (c->failed: "pipe2" or "fork"), so a caller can tell "cannot
 * set up" from "fork" as it did before.
 */
#ifndef PC_SPAWN_H
#define PC_SPAWN_H

#include <stdint.h>
#include <sys/types.h>

#define PC_SPAWN_GROUP      0x01u	/* its own process group (setpgid on both sides: kill(-pid) works at once) */
#define PC_SPAWN_SIGDFL     0x02u	/* SIGPIPE to its default, no signal blocked (the harness ignores, blocks some) */
#define PC_SPAWN_CLOSE_FDS  0x04u	/* close every fd from 3 up before exec */
#define PC_SPAWN_CLOEXEC    0x08u	/* mark every fd from 3 up close-on-exec (closed by the exec, kept before it) */
#define PC_SPAWN_PATH       0x10u	/* look argv[0] up in PATH (execvp) */
#define PC_SPAWN_EXEC_ERR   0x20u	/* a failed exec comes back as -errno from pc_spawn_exec_result() */
#define PC_SPAWN_NICE       0x40u	/* setpriority(nice) in the child; not fatal if refused */
#define PC_SPAWN_FLUSH      0x80u	/* fflush(NULL) before the fork: nothing buffered is written twice */

/* pc_reap()'s "no deadline": wait for as long as it takes. */
#define PC_REAP_FOREVER UINT64_MAX

struct pc_spawn {
	unsigned flags;			/* PC_SPAWN_* */
	int fd_in, fd_out, fd_err;	/* dup2'd onto the child's 0, 1, 2; -1 leaves that one as it is */
	int fd_keep;			/* kept open across the exec under PC_SPAWN_CLOEXEC (its flag cleared); -1: none */
	int nice;			/* with PC_SPAWN_NICE */
	const char *path;		/* the file to exec; NULL: argv[0] */
	char *const *envp;		/* execve's environment; NULL: ours */
	const char *exec_fail_msg;	/* written to the child's stderr when exec fails (without PC_SPAWN_EXEC_ERR) */
	/* in the child, right after the fork, before anything else (a gate, a
	 * close); may _exit */
	void (*child_setup)(void *arg);
	void *arg;
};

/* A started child: its pid; the read end of the exec-error pipe (-1 once read). */
struct pc_child {
	pid_t pid;
	int exec_fd;
	const char *failed;	/* the step that failed: "pipe2", "fork" */
};

/* The settings a site starts from: no fd moved, no flag. */
void pc_spawn_init(struct pc_spawn *s);

/*
 * Fork and exec argv (argv[0] a path, or a name looked up in PATH with
 * PC_SPAWN_PATH). 0 with c->pid set, or -errno (c->failed names the step)
 * with no child. With PC_SPAWN_EXEC_ERR the caller then calls
 * pc_spawn_exec_result() (after anything the child waits for, e.g. a gate).
 */
int pc_spawn(struct pc_child *c, const struct pc_spawn *s, char *const argv[]);

/* 0 once the child has exec'd, or the failed exec's -errno (the child is
 * reaped then, and c->pid is 0). Closes the pipe; 0 without PC_SPAWN_EXEC_ERR. */
int pc_spawn_exec_result(struct pc_child *c);

/* Close what pc_spawn() left open (the exec-error pipe); the child is not touched. */
void pc_spawn_close(struct pc_child *c);

/*
 * Fork and run fn(arg) in the child, which then _exit()s with 127 if fn
 * returns (fn normally _exit()s itself). s->child_setup runs first, then the
 * fd moves and flags as for pc_spawn (PC_SPAWN_PATH, _EXEC_ERR and _CLOSE_FDS
 * mean nothing here). 0 with *pid set, or -errno (the fork's).
 */
int pc_spawn_fn(pid_t *pid, const struct pc_spawn *s, void (*fn)(void *), void *arg);

/*
 * waitpid() on our own child for at most ms (PC_REAP_FOREVER: no limit);
 * 0 once reaped, -ETIMEDOUT, or -errno (-ECHILD: someone else reaped it).
 * Woken the moment it exits where the kernel has pidfds (5.3), else
 * polling, 0.5 ms at first.
 */
int pc_reap(pid_t pid, int *status, uint64_t ms);

/* SIGKILL the child (group: its whole process group), then pc_reap() it
 * within ms. 0, -ETIMEDOUT (the kill is pending), or -errno of the kill. */
int pc_kill_reap(pid_t pid, int group, int *status, uint64_t ms);

/* A reaped child's status as a shell gives it: the exit code, or 128 + the signal. */
int pc_exit_code(int status);

#endif

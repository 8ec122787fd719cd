/*
 * relay_qemu_qmp.c - QEMU's monitor (QMP) read and written, the wait for a
 * machine that runs, and the probe that says whether KVM works here.
 */
#include "relay/relay_priv.h"
#include "relay/relay_qemu.h"
#include "relay/relay_group.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

/* ---- QEMU's monitor (QMP), one JSON object a line ---- */

struct qmp_reader {
	int fd;
	char buf[QEMU_QMP_LINE];
	size_t len;
	char why[256];		/* the monitor's error answer, after -EPROTO */
};

/*
 * The next object QEMU's monitor sent, by deadline (pc_now_ms()): 0 with *o
 * (the caller puts it), -ETIMEDOUT, -EPIPE when QEMU closed it (exited), or
 * -errno. A line that is not JSON, or longer than any answer we wait for, is
 * skipped.
 */
static int qmp_next(struct qmp_reader *rd, uint64_t deadline, json_object **o)
{
	for (;;) {
		char *nl = memchr(rd->buf, '\n', rd->len);
		struct pollfd pfd = { .fd = rd->fd, .events = POLLIN };
		ssize_t n;
		int ms;

		if (nl) {
			*nl = 0;
			*o = json_tokener_parse(rd->buf);
			rd->len -= (size_t)(nl + 1 - rd->buf);
			memmove(rd->buf, nl + 1, rd->len);
			if (*o)
				return 0;
			continue;
		}
		if (rd->len == sizeof(rd->buf) - 1)
			rd->len = 0;
		ms = relay_ms_left(deadline);
		if (ms == 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, ms) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!pfd.revents)
			continue;
		n = read(rd->fd, rd->buf + rd->len, sizeof(rd->buf) - 1 - rd->len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -EPIPE;
		rd->len += (size_t)n;
	}
}

/*
 * Send cmd (NULL: nothing), then read the monitor until an object with the
 * key want ("QMP" the greeting, "return" an answer; NULL: none, read until
 * the deadline), skipping events: 0 with the object in *got (NULL: dropped;
 * else the caller puts it), -EPROTO with the monitor's error in rd->why, or
 * what qmp_next returns.
 */
static int qmp_exchange(struct qmp_reader *rd, uint64_t deadline, const char *cmd, const char *want,
			json_object **got)
{
	int rc = cmd ? pc_write_all(rd->fd, cmd, strlen(cmd)) : 0;

	while (rc == 0) {
		json_object *o = NULL;

		rc = qmp_next(rd, deadline, &o);
		if (rc < 0)
			break;
		if (json_object_object_get_ex(o, "error", NULL)) {
			snprintf(rd->why, sizeof(rd->why), "%.200s", relay_json_text(o));
			rc = -EPROTO;
		} else if (want && json_object_object_get_ex(o, want, NULL)) {
			if (got) {
				*got = o;
				return 0;
			}
			json_object_put(o);
			return 0;
		}
		json_object_put(o);
	}
	return rc;
}

/* QEMU's greeting, then capabilities negotiated: the monitor takes commands. 0 or as qmp_exchange. */
static int qmp_handshake(struct qmp_reader *rd, uint64_t deadline)
{
	int rc = qmp_exchange(rd, deadline, NULL, "QMP", NULL);

	if (rc == 0)
		rc = qmp_exchange(rd, deadline, "{\"execute\": \"qmp_capabilities\"}\n", "return", NULL);
	return rc;
}

#define QMP_QUERY_STATUS "{\"execute\": \"query-status\"}\n"

/* ---- does KVM work here? ---- */

/*
 * Once per process (and QEMU binary): a machine with -accel kvm -cpu host
 * and no disk or kernel must come up, answer its monitor, and still be
 * running its firmware QEMU_PROBE_RUN_MS later. Whether /dev/kvm opens says
 * nothing about that: on some hosts it opens and QEMU then aborts creating
 * the first vCPU ("kvm_buf_set_msrs: Assertion ... failed"), and the board
 * would die at every power-on. So /dev/kvm is never looked at: QEMU is.
 */
struct qemu_kvm_probe {
	char qemu[PATH_MAX];	/* the binary it was run with; "" = not yet */
	int works;
	int said;		/* the fallback was said (once per process) */
	char why[400];		/* what QEMU did, for the messages */
	uint64_t ms;		/* how long the probe took */
};

static struct qemu_kvm_probe qemu_kvm;

/* The last non-empty line of what QEMU wrote, from the pipe it wrote to. */
static void qemu_probe_output(int fd, char *line, size_t len)
{
	char tail[2048];
	size_t have = 0;
	ssize_t n;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	for (;;) {
		if (have == sizeof(tail) - 1) {
			memmove(tail, tail + sizeof(tail) / 2, have - sizeof(tail) / 2);
			have -= sizeof(tail) / 2;
		}
		n = read(fd, tail + have, sizeof(tail) - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	tail[have] = 0;
	relay_last_line(tail, line, len);
}

/* Fork the probe's QEMU, its output on out[1], its monitor on qmp[1]: its pid, or -1 with kp->why. */
static pid_t qemu_probe_start(const char *qemu, struct qemu_kvm_probe *kp, struct relay_gate *gate, int devnull,
			      int qmp[2], int out[2])
{
	char fdarg[64];
	/* the board's machine (pc), its CPU model, no disk, no kernel:
	 * the firmware runs, in a vCPU KVM has to create and run */
	char *const argv[] = { (char *)qemu, "-accel", "kvm", "-cpu", "host", "-nodefaults",
			       "-display", "none", "-no-reboot", "-m", "64", "-chardev", fdarg,
			       "-mon", "chardev=pcprobe,mode=control", NULL };
	sigset_t none;
	pid_t pid;

	snprintf(fdarg, sizeof(fdarg), "socket,id=pcprobe,fd=%d", qmp[1]);
	pid = fork();
	if (pid < 0) {
		snprintf(kp->why, sizeof(kp->why), "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		relay_gate_child(gate);
		if (dup2(devnull, STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0 ||
		    dup2(out[1], STDERR_FILENO) < 0)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
		if (fcntl(qmp[1], F_SETFD, 0) < 0)
			_exit(127);
		execv(argv[0], argv);
		if (write(STDERR_FILENO, "exec failed\n", 12) < 0)
			_exit(127);
		_exit(127);
	}
	return pid;
}

/* Greeting, capabilities, a while running, then query-status: 0 with *status, or -errno. */
static int qemu_probe_talk(int fd, struct qemu_kvm_probe *kp, uint64_t deadline, char **status)
{
	struct qmp_reader *rd = calloc(1, sizeof(*rd));
	uint64_t run_until;
	json_object *o = NULL, *ret, *st;
	int rc;

	if (!rd)
		return -ENOMEM;
	rd->fd = fd;
	rc = qmp_handshake(rd, deadline);
	if (rc == 0) {
		/* only events come now: the firmware runs, or the vCPU dies */
		run_until = pc_now_ms() + QEMU_PROBE_RUN_MS;
		rc = qmp_exchange(rd, run_until < deadline ? run_until : deadline, NULL, NULL, NULL);
		if (rc == -ETIMEDOUT && pc_now_ms() < deadline)
			rc = qmp_exchange(rd, deadline, QMP_QUERY_STATUS, "return", &o);
	}
	if (rc == 0) {
		if (json_object_object_get_ex(o, "return", &ret) && json_object_object_get_ex(ret, "status", &st)) {
			*status = strdup(json_object_get_string(st));
			if (!*status)
				rc = -ENOMEM;
		} else {
			snprintf(rd->why, sizeof(rd->why), "%.200s", relay_json_text(o));
			rc = -EPROTO;
		}
		json_object_put(o);
	}
	if (rc == -EPROTO)
		snprintf(kp->why, sizeof(kp->why), "its monitor answered %s", rd->why);
	free(rd);
	return rc;
}

/* kp->why from what the probe saw: its status, how talking ended (rc), how QEMU ended, its last words. */
static void qemu_probe_explain(struct qemu_kvm_probe *kp, const char *status, int rc, int wstatus,
			       const char *out_line)
{
	const char *sep = out_line[0] ? ": " : "";

	if (kp->works)
		snprintf(kp->why, sizeof(kp->why), "a machine with -accel kvm -cpu host ran");
	else if (status)
		snprintf(kp->why, sizeof(kp->why), "a machine with -accel kvm -cpu host stopped (status %s)%s%s",
			 status, sep, out_line);
	else if (rc == -EPIPE && wstatus != -1 && (WIFEXITED(wstatus) || WIFSIGNALED(wstatus)))
		snprintf(kp->why, sizeof(kp->why), "QEMU with -accel kvm -cpu host exited at start (%s %d%s): %s",
			 WIFEXITED(wstatus) ? "status" : "signal",
			 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus),
			 WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGABRT ? ", aborted" : "",
			 out_line[0] ? out_line : "(no output)");
	else if (rc == -ETIMEDOUT)
		snprintf(kp->why, sizeof(kp->why), "QEMU with -accel kvm -cpu host did not answer within %d ms%s%s",
			 QEMU_PROBE_MS, sep, out_line);
	else if (!kp->why[0])
		snprintf(kp->why, sizeof(kp->why), "talking to QEMU with -accel kvm: %s%s%s", strerror(-rc), sep,
			 out_line);
}

static void qemu_probe_kvm(const char *qemu, struct qemu_kvm_probe *kp)
{
	char out_line[240], gerr[256], *status = NULL;
	int qmp[2] = { -1, -1 }, out[2] = { -1, -1 }, devnull = -1, rc, wstatus = 0;
	uint64_t start = pc_now_ms();
	struct relay_gate gate;
	pid_t pid = -1;

	memset(kp, 0, sizeof(*kp));
	pc_strlcpy(kp->qemu, qemu, sizeof(kp->qemu));
	relay_gate_init(&gate);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qmp) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0 || relay_gate_open(&gate) < 0) {
		snprintf(kp->why, sizeof(kp->why), "could not set up the probe: %s", strerror(errno));
		goto out;
	}
	pid = qemu_probe_start(qemu, kp, &gate, devnull, qmp, out);
	if (pid < 0)
		goto out;
	close(out[1]);
	out[1] = -1;
	close(qmp[1]);
	qmp[1] = -1;
	/* no record in a results folder: it lives a fraction of a second, and
	 * dies with us (PR_SET_PDEATHSIG) */
	if (relay_gate_release(&gate, pid, NULL, "QEMU", gerr, sizeof(gerr)) < 0) {
		relay_reap(pid, NULL, RELAY_REAP_MS);
		pid = -1;
		snprintf(kp->why, sizeof(kp->why), "could not start the probe: %s", gerr);
		goto out;
	}
	rc = qemu_probe_talk(qmp[0], kp, start + QEMU_PROBE_MS, &status);
	kp->works = status && strcmp(status, "running") == 0;
	/* the answer is in: the machine goes, whatever it was doing */
	kill(-pid, SIGKILL);
	if (relay_reap(pid, &wstatus, RELAY_REAP_MS) < 0)
		wstatus = -1;
	pid = -1;
	qemu_probe_output(out[0], out_line, sizeof(out_line));
	qemu_probe_explain(kp, status, rc, wstatus, out_line);
out:
	if (pid > 0) {
		kill(-pid, SIGKILL);
		relay_reap(pid, NULL, RELAY_REAP_MS);
	}
	kp->ms = pc_now_ms() - start;
	free(status);
	for (int i = 0; i < 2; i++) {
		if (qmp[i] >= 0)
			close(qmp[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	if (devnull >= 0)
		close(devnull);
	relay_gate_close(&gate);
}

/*
 * accel auto or kvm: "kvm" or "tcg" into p->accel, how it was decided into
 * p->accel_why. auto falls back to TCG and says so once per process; kvm
 * that does not work is an error now, not a QEMU dying at every power-on.
 */
int qemu_resolve_accel(struct relay *r, struct qemu_priv *p, const char *accel)
{
	struct qemu_kvm_probe *kp = &qemu_kvm;

	if (strcmp(accel, "tcg") == 0) {
		pc_strlcpy(p->accel, "tcg", sizeof(p->accel));
		snprintf(p->accel_why, sizeof(p->accel_why), "tcg (relay.accel \"tcg\")");
		return 0;
	}
	if (strcmp(accel, "arm") == 0) {
		pc_strlcpy(p->accel, "tcg", sizeof(p->accel));
		snprintf(p->accel_why, sizeof(p->accel_why), "tcg (the eMMC board is an armhf guest: software "
			 "emulation on this host, no KVM probe)");
		return 0;
	}
	if (strcmp(kp->qemu, p->qemu) != 0)
		qemu_probe_kvm(p->qemu, kp);
	if (kp->works) {
		pc_strlcpy(p->accel, "kvm", sizeof(p->accel));
		snprintf(p->accel_why, sizeof(p->accel_why), "kvm (relay.accel \"%s\"; KVM probe: %s, %" PRIu64
			 " ms)", accel, kp->why, kp->ms);
		return 0;
	}
	if (strcmp(accel, "kvm") == 0) {
		relay_errf(r, "accel \"kvm\": KVM does not work here: %s; give \"accel\": \"auto\" (falls back to "
			   "TCG) or \"tcg\"", kp->why);
		return -ENODEV;
	}
	pc_strlcpy(p->accel, "tcg", sizeof(p->accel));
	snprintf(p->accel_why, sizeof(p->accel_why), "tcg (relay.accel \"auto\": KVM does not work here; KVM probe: "
		 "%s, %" PRIu64 " ms)", kp->why, kp->ms);
	if (!kp->said) {
		kp->said = 1;
		pc_warn("relay qemu: KVM does not work here (%s); the virtual boards run under software emulation "
			"(TCG)", kp->why);
	}
	return 0;
}

/*
 * Wait for QEMU to run the machine: the greeting (sent early, from the
 * monitor's own thread), then the answer to query-status (sent from the
 * main loop, so only once the machine is set up). 0 when it runs; -EPIPE if
 * QEMU went away; -ETIMEDOUT; -EPROTO with what it said instead.
 */
int qemu_qmp_wait(struct relay *r, struct qemu_priv *p, int fd, uint64_t deadline)
{
	struct qmp_reader *rd = calloc(1, sizeof(*rd));
	int rc;

	if (!rd)
		return -ENOMEM;
	rd->fd = fd;
	rc = qmp_handshake(rd, deadline);
	if (rc == 0)
		rc = qmp_exchange(rd, deadline, QMP_QUERY_STATUS, "return", NULL);
	if (rc == -EPROTO)
		relay_errf(r, "QEMU's monitor answered %s; see %s", rd->why, p->log[0] ? p->log : "(no log)");
	free(rd);
	return rc;
}

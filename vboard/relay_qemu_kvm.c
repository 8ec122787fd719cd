/*
 * relay_qemu_kvm.c - does KVM run this board's guest? The probe that
 * accel "auto" runs at open, and the fallback to TCG when KVM fails a
 * power-on's guest all the same.
 *
 * A /dev/kvm that opens, or a machine that starts under -accel kvm, proves
 * little: on nested virtualisation KVM can start QEMU, then fail the guest
 * kernel ("KVM internal error. Suberror: 1", "emulation failure" on an
 * instruction it cannot emulate, the registers dumped on QEMU's stderr), or
 * leave it spinning without a word on its console. So the probe boots the
 * board's own kernel under -accel kvm -cpu host, once per process (and QEMU
 * binary and kernel), and KVM works when that kernel prints its first
 * console line within QEMU_PROBE_BOOT_MS and QEMU says nothing of a failure.
 *
 * What the probe cannot see, a power-on can: its part of qemu.log is read
 * when it ends, and QEMU's words of a KVM failure there switch the board to
 * TCG (accel "auto"; "kvm" is only told), once, said in qemu.log, on the
 * harness's stderr, in the console log of the next power-on and in
 * <state>/kvm-failed (so a restarted worker or a resumed campaign stays on
 * TCG). That power-on is the host's failure, not the device's: the harness's
 * next attempt boots under TCG.
 */
#include "relay/relay_priv.h"
#include "vboard/relay_qemu.h"
#include "relay/relay_group.h"
#include "common/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

#define KVM_FAILED_FILE "kvm-failed"

/* QEMU's own words when KVM fails a guest (accel/kvm/kvm-all.c, target/i386/kvm/kvm.c) */
static const char *const kvm_failures[] = {
	"KVM internal error",	/* "KVM internal error. Suberror: %d", then "emulation failure" */
	"emulation failure",
	"kvm run failed",	/* "error: kvm run failed %s" */
	"KVM: entry failed",	/* "KVM: entry failed, hardware error 0x%lx" */
};

/* The line around text[at], trimmed, appended to out ("; " between lines). */
static void kvm_quote_line(const char *text, size_t len, size_t at, char *out, size_t outlen)
{
	size_t s = at, e = at, have = strlen(out);

	while (s && text[s - 1] != '\n')
		s--;
	while (e < len && text[e] != '\n' && text[e] != '\r')
		e++;
	if (have + 3 >= outlen)
		return;
	snprintf(out + have, outlen - have, "%s%.*s", have ? "; " : "", (int)(e - s), text + s);
	for (size_t i = have; out[i]; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			out[i] = ' ';
}

/* Where pat first is in text on a line of QEMU's (not one of the relay's
 * own "--- " headers and notes, which quote it); len when nowhere. */
static size_t kvm_find(const char *text, size_t len, const char *pat)
{
	size_t at = 0, plen = strlen(pat);
	const char *m;

	while (at < len && (m = memmem(text + at, len - at, pat, plen))) {
		size_t s = (size_t)(m - text);

		while (s && text[s - 1] != '\n')
			s--;
		if (len - s < 4 || memcmp(text + s, "--- ", 4) != 0)
			return (size_t)(m - text);
		at = (size_t)(m - text) + plen;
	}
	return len;
}

int qemu_kvm_failure(const char *text, size_t len, char *line, size_t linelen)
{
	size_t first = len, second = len;

	line[0] = 0;
	for (size_t i = 0; i < PC_ARRAY_SIZE(kvm_failures); i++) {
		size_t at = kvm_find(text, len, kvm_failures[i]);

		if (at < first) {
			second = first;
			first = at;
		} else if (at < second) {
			second = at;
		}
	}
	if (first == len)
		return 0;
	kvm_quote_line(text, len, first, line, linelen);
	/* "KVM internal error. Suberror: 1" says little without its next line */
	if (second < len && memchr(text + first, '\n', second - first))
		kvm_quote_line(text, len, second, line, linelen);
	return 1;
}

/* ---- the probe ---- */

struct qemu_kvm_probe {
	char qemu[PATH_MAX];	/* the binary it was run with; "" = not yet */
	char kernel[PATH_MAX];	/* ...and the kernel it booted */
	int works;
	int said;		/* the fallback was said (once per process) */
	char why[600];		/* what QEMU and the guest did, for the messages */
	uint64_t ms;		/* how long the probe took */
};

static struct qemu_kvm_probe qemu_kvm;

/* What the probe saw of the board's kernel and of QEMU. */
struct probe_seen {
	char ser[256];		/* the console, up to its first line */
	size_t nser;
	char out[4096];		/* QEMU's stdout and stderr, its last 4 KiB */
	size_t nout;
	int line;		/* the kernel printed a whole line */
	int failed;		/* QEMU said KVM failed the guest: its words in said */
	int exited;		/* QEMU's output closed: it is gone */
	char said[240];
};

/* In the probe's child, first: a group leader, held until its group is on record. */
static void probe_child_gate(void *gate)
{
	relay_gate_child(gate);
}

/* Fork the probe's QEMU (common/spawn.c): the board's kernel and initrd, its
 * console on ser, its output on out. Its pid, or pc_spawn's -errno with
 * kp->why. */
static pid_t probe_start(const struct qemu_priv *p, struct qemu_kvm_probe *kp, struct relay_gate *gate, int devnull,
			 int ser, int out)
{
	char mem[16], serarg[64];
	/* the board's machine (pc) and CPU model, no disk: the kernel prints
	 * its first console line early, before it looks for one */
	char *const argv[] = { (char *)p->qemu, "-name", "pc-kvm-probe", "-accel", "kvm", "-cpu", "host",
			       "-nodefaults", "-display", "none", "-no-reboot", "-m", mem,
			       "-kernel", (char *)p->kernel, "-initrd", (char *)p->initrd,
			       "-append", "console=ttyS0,115200 panic=-1 pc.kvm_probe=1",
			       "-chardev", serarg, "-serial", "chardev:pcprobe", NULL };
	struct pc_spawn s;
	struct pc_child c = { .exec_fd = -1 };
	int rc;

	snprintf(mem, sizeof(mem), "%d", p->memory_mb);
	snprintf(serarg, sizeof(serarg), "socket,id=pcprobe,fd=%d", ser);
	pc_spawn_init(&s);
	s.flags = PC_SPAWN_SIGDFL | PC_SPAWN_CLOEXEC;
	s.fd_in = devnull;
	s.fd_out = s.fd_err = out;
	s.fd_keep = ser;
	s.exec_fail_msg = "exec failed\n";
	s.child_setup = probe_child_gate;
	s.arg = gate;
	rc = pc_spawn(&c, &s, argv);
	if (rc < 0) {
		snprintf(kp->why, sizeof(kp->why), "fork: %s", strerror(-rc));
		return rc;
	}
	return c.pid;
}

/* One read of QEMU's output into s->out (its last bytes kept): 1 read,
 * 0 EOF (or a broken pipe), -1 nothing now. */
static int probe_read_out(int fd, struct probe_seen *s)
{
	ssize_t n;

	if (s->nout > sizeof(s->out) - 512) {
		memmove(s->out, s->out + sizeof(s->out) / 2, s->nout - sizeof(s->out) / 2);
		s->nout -= sizeof(s->out) / 2;
	}
	n = read(fd, s->out + s->nout, sizeof(s->out) - 1 - s->nout);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? -1 : 0;
	if (n == 0)
		return 0;
	s->nout += (size_t)n;
	s->out[s->nout] = 0;
	if (!s->failed)
		s->failed = qemu_kvm_failure(s->out, s->nout, s->said, sizeof(s->said));
	return 1;
}

/* One read of the console: a whole line (a kernel's first) sets s->line. */
static void probe_read_ser(int fd, struct probe_seen *s)
{
	ssize_t n = read(fd, s->ser + s->nser, sizeof(s->ser) - 1 - s->nser);

	if (n <= 0)
		return;
	s->nser += (size_t)n;
	s->ser[s->nser] = 0;
	if (memchr(s->ser, '\n', s->nser) || s->nser == sizeof(s->ser) - 1)
		s->line = 1;
}

/* Watch until the kernel's first line (and QEMU_PROBE_RUN_MS after it),
 * QEMU's word of a failure, its exit, or the deadline. */
static void probe_watch(int ser, int out, uint64_t deadline, struct probe_seen *s)
{
	int ser_open = 1;

	while (!s->failed && !s->exited) {
		struct pollfd pfd[2] = { { .fd = out, .events = POLLIN }, { .fd = ser_open ? ser : -1, .events = POLLIN } };
		int ms = relay_ms_left(deadline);

		if (ms == 0)
			break;
		if (poll(pfd, 2, ms) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents && probe_read_out(out, s) == 0)
			s->exited = 1;
		if (pfd[1].revents & POLLIN) {
			int had = s->line;

			probe_read_ser(ser, s);
			if (!had && s->line) {
				/* the guest got this far: a failure right after still counts */
				uint64_t more = pc_now_ms() + QEMU_PROBE_RUN_MS;

				deadline = more < deadline ? more : deadline;
				ser_open = 0;
			}
		} else if (pfd[1].revents) {
			ser_open = 0;
		}
	}
}

/* kp->why from what the probe saw and how QEMU ended (wstatus; -1 not reaped). */
static void probe_explain(struct qemu_kvm_probe *kp, const struct probe_seen *s, int wstatus, uint64_t ms)
{
	char last[240], first[80];
	const char *sep;

	relay_last_line(s->out, last, sizeof(last));
	sep = last[0] ? ": " : "";
	kp->works = s->line && !s->failed && !s->exited;
	if (kp->works) {
		relay_last_line(s->ser, first, sizeof(first));
		for (size_t i = 0; first[i]; i++)
			if ((unsigned char)first[i] < 0x20 || first[i] == '"')
				first[i] = ' ';
		snprintf(kp->why, sizeof(kp->why), "the board's kernel under -accel kvm -cpu host printed its first "
			 "console line after %" PRIu64 " ms (\"%s\")", ms, first);
	} else if (s->failed) {
		snprintf(kp->why, sizeof(kp->why), "the board's kernel under -accel kvm -cpu host: QEMU said \"%s\"%s",
			 s->said, s->line ? " after the kernel's first console line" : "");
	} else if (s->exited && wstatus != -1 && (WIFEXITED(wstatus) || WIFSIGNALED(wstatus))) {
		snprintf(kp->why, sizeof(kp->why), "QEMU with -accel kvm -cpu host exited at start (%s %d%s): %s",
			 WIFEXITED(wstatus) ? "status" : "signal",
			 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus),
			 WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGABRT ? ", aborted" : "",
			 last[0] ? last : "(no output)");
	} else if (s->exited) {
		snprintf(kp->why, sizeof(kp->why), "QEMU with -accel kvm -cpu host exited at start%s%s", sep, last);
	} else {
		snprintf(kp->why, sizeof(kp->why), "the board's kernel under -accel kvm -cpu host printed nothing on its "
			 "console within %d ms (QEMU ran; the guest hung)%s%s", QEMU_PROBE_BOOT_MS, sep, last);
	}
}

static void qemu_probe_kvm(const struct qemu_priv *p, struct qemu_kvm_probe *kp)
{
	char gerr[256];
	int ser[2] = { -1, -1 }, out[2] = { -1, -1 }, devnull = -1, wstatus = -1;
	uint64_t start = pc_now_ms();
	struct probe_seen *s = calloc(1, sizeof(*s));
	struct relay_gate gate;
	pid_t pid = -1;

	memset(kp, 0, sizeof(*kp));
	pc_strlcpy(kp->qemu, p->qemu, sizeof(kp->qemu));
	pc_strlcpy(kp->kernel, p->kernel, sizeof(kp->kernel));
	relay_gate_init(&gate);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (!s || devnull < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ser) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0 || relay_gate_open(&gate) < 0) {
		snprintf(kp->why, sizeof(kp->why), "could not set up the probe: %s", s ? strerror(errno) : "no memory");
		goto out;
	}
	pid = probe_start(p, kp, &gate, devnull, ser[1], out[1]);
	if (pid < 0)
		goto out;
	close(out[1]);
	out[1] = -1;
	close(ser[1]);
	ser[1] = -1;
	/* no record in a results folder: it lives a second or so, and dies
	 * with us (PR_SET_PDEATHSIG) */
	if (relay_gate_release(&gate, pid, NULL, "QEMU", gerr, sizeof(gerr)) < 0) {
		relay_reap(pid, NULL, RELAY_REAP_MS);
		pid = -1;
		snprintf(kp->why, sizeof(kp->why), "could not start the probe: %s", gerr);
		goto out;
	}
	probe_watch(ser[0], out[0], start + QEMU_PROBE_BOOT_MS, s);
	/* the answer is in: the machine goes, whatever it was doing */
	kill(-pid, SIGKILL);
	if (relay_reap(pid, &wstatus, RELAY_REAP_MS) < 0)
		wstatus = -1;
	pid = -1;
	/* its last words (a child of a wrapper may still hold the pipe: no wait) */
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	for (int i = 0; i < 16 && !s->failed && probe_read_out(out[0], s) == 1; i++)
		;
	probe_explain(kp, s, wstatus, pc_now_ms() - start);
out:
	if (pid > 0) {
		kill(-pid, SIGKILL);
		relay_reap(pid, NULL, RELAY_REAP_MS);
	}
	kp->ms = pc_now_ms() - start;
	free(s);
	for (int i = 0; i < 2; i++) {
		if (ser[i] >= 0)
			close(ser[i]);
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

	p->kvm_auto = 0;
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
	if (strcmp(kp->qemu, p->qemu) != 0 || strcmp(kp->kernel, p->kernel) != 0)
		qemu_probe_kvm(p, kp);
	if (kp->works) {
		pc_strlcpy(p->accel, "kvm", sizeof(p->accel));
		p->kvm_auto = strcmp(accel, "auto") == 0;
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

/* ---- a power-on whose guest KVM failed ---- */

/* A line appended to path (a log, or the board's end of its serial cable). */
static void kvm_append(const char *path, int flags, const char *line)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | flags, 0644);

	if (fd < 0)
		return;
	if (pc_write_all(fd, line, strlen(line))) {
		/* a note lost is no reason to stop */
	}
	close(fd);
}

/* At open, in the state folder: a board whose guest KVM failed before stays on TCG. */
void qemu_kvm_remembered(struct qemu_priv *p, const char *state_dir)
{
	char buf[sizeof(p->kvm_said)];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(p->kvm_file, sizeof(p->kvm_file), "%s/" KVM_FAILED_FILE, state_dir) >=
	    sizeof(p->kvm_file))
		p->kvm_file[0] = 0;
	if (!p->kvm_auto || !p->kvm_file[0] || (fd = open(p->kvm_file, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	p->kvm_auto = 0;
	pc_strlcpy(p->accel, "tcg", sizeof(p->accel));
	snprintf(p->accel_why, sizeof(p->accel_why), "tcg (relay.accel \"auto\": KVM failed this board's guest at an "
		 "earlier power-on, QEMU said \"%.240s\" (%.200s; remove it to try KVM again))", buf, p->kvm_file);
}

/* QEMU's word of a KVM failure in qemu.log from offset from on: 1 with it in said. */
static int kvm_scan_log(const char *log, off_t from, char *said, size_t saidlen)
{
	enum { CHUNK = 65536, KEEP = 512 };
	char *buf = malloc(CHUNK + KEEP + 1);
	size_t have = 0;
	int fd, found = 0;
	ssize_t n;

	if (!buf || (fd = open(log, O_RDONLY | O_CLOEXEC)) < 0) {
		free(buf);
		return 0;
	}
	while (!found && (n = pread(fd, buf + have, CHUNK, from)) > 0) {
		from += n;
		have += (size_t)n;
		buf[have] = 0;
		found = qemu_kvm_failure(buf, have, said, saidlen);
		if (have > KEEP) {
			/* a message cut by the chunk's end is found in the next */
			memmove(buf, buf + have - KEEP, KEEP);
			have = KEEP;
		}
	}
	close(fd);
	free(buf);
	return found;
}

/*
 * The end of a power-on (QEMU gone, its log complete): its part of qemu.log
 * read for QEMU's word that KVM failed the guest. Under "auto" the board
 * falls back to TCG, said in qemu.log, on stderr and in <state>/kvm-failed;
 * the next power-on's console log says it too (qemu_kvm_console_note).
 */
void qemu_kvm_after(struct relay *r, struct qemu_priv *p)
{
	char note[sizeof(p->kvm_said) + 400];
	off_t from = p->log_mark;

	p->log_mark = -1;
	if (strcmp(p->accel, "kvm") != 0 || from < 0 || !p->log[0] ||
	    !kvm_scan_log(p->log, from, p->kvm_said, sizeof(p->kvm_said)))
		return;
	if (!p->kvm_auto) {
		snprintf(note, sizeof(note), "--- KVM failed this power-on's guest (QEMU said \"%s\"): the host's "
			 "failure, not the device's; relay.accel is \"kvm\", so no fallback (\"auto\" falls back to "
			 "TCG)\n", p->kvm_said);
		kvm_append(p->log, O_CREAT, note);
		pc_warn("board %s: relay qemu: KVM failed the guest (QEMU said \"%s\"); relay.accel \"kvm\": no "
			"fallback, see %s", r->board, p->kvm_said, p->log);
		return;
	}
	p->kvm_auto = 0;
	p->kvm_note = 1;
	pc_strlcpy(p->accel, "tcg", sizeof(p->accel));
	snprintf(p->accel_why, sizeof(p->accel_why), "tcg (relay.accel \"auto\": KVM failed the guest of a power-on, "
		 "QEMU said \"%.300s\")", p->kvm_said);
	snprintf(note, sizeof(note), "--- KVM failed this power-on's guest (QEMU said \"%s\"): the host's failure, "
		 "not the device's; falling back to TCG, once: the board's later power-ons run -accel tcg "
		 "(relay.accel \"auto\")\n", p->kvm_said);
	kvm_append(p->log, O_CREAT, note);
	if (p->kvm_file[0]) {
		snprintf(note, sizeof(note), "%s\n", p->kvm_said);
		kvm_append(p->kvm_file, O_CREAT | O_TRUNC, note);
	}
	pc_warn("board %s: relay qemu: KVM failed the guest of a power-on (QEMU said \"%s\"): the host's failure, "
		"not the device's; the board runs under TCG from its next power-on (%s)", r->board, p->kvm_said,
		p->log[0] ? p->log : "no log");
}

/* The power-on after the fallback: its console log says it (the harness
 * reads the other end of the serial cable, or the relay's console file). */
void qemu_kvm_console_note(struct relay *r, struct qemu_priv *p)
{
	char line[sizeof(p->kvm_said) + 200];

	if (!p->kvm_note)
		return;
	p->kvm_note = 0;
	snprintf(line, sizeof(line), "powercut relay qemu: KVM failed the last power-on's guest (QEMU said \"%s\"; "
		 "see qemu.log): this power-on and the later ones run under TCG\r\n", p->kvm_said);
	if (r->console[0])
		kvm_append(r->console, O_CREAT, line);
	else
		kvm_append(p->console, O_NOCTTY | O_NONBLOCK, line);
}

/*
 * In the harness, before it judges a boot that never said HELLO: did KVM
 * fail the guest of the board's last power-on? Its part of qemu.log (from
 * the last "--- power on" line in the log's last QEMU_FAULT_TAIL bytes: a
 * guest KVM failed stops, and QEMU's words and registers end the log) holds
 * QEMU's words. 1 with why, else 0.
 */
int qemu_host_fault(const struct relay_ctx *ctx, char *why, size_t len)
{
	char path[PATH_MAX], said[240], *buf = malloc(QEMU_FAULT_TAIL + 1);
	const char *from;
	off_t size;
	ssize_t n = -1;
	int fd = -1, found = 0;

	if (buf && (size_t)snprintf(path, sizeof(path), "%s/qemu.log", ctx->state_dir) < sizeof(path))
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && (size = lseek(fd, 0, SEEK_END)) >= 0)
		n = pread(fd, buf, QEMU_FAULT_TAIL, size > QEMU_FAULT_TAIL ? size - QEMU_FAULT_TAIL : 0);
	if (n > 0) {
		buf[n] = 0;
		from = buf;
		for (const char *h = buf; (h = memmem(h, (size_t)(buf + n - h), "--- power on", 12)); h += 12)
			from = h;
		found = qemu_kvm_failure(from, (size_t)(buf + n - from), said, sizeof(said));
	}
	if (found)
		snprintf(why, len, "KVM failed the guest of this power-on (QEMU said \"%s\", %s): the host's "
			 "accelerator, not the device", said, path);
	if (fd >= 0)
		close(fd);
	free(buf);
	return found;
}

/*
 * campaign_setup.c - a boot that never reached an authenticated hello, and
 * whom to blame for it. A lab mistake is never the device's fault
 * (docs/verdicts.md):
 *   - the agent said why it could not get there (a setup_error line: on the
 *     link before any proof, or marked on a console the host captures):
 *     INFRA_ERROR with its reason;
 *   - attempts to speak for the board were refused (another key): INFRA_ERROR;
 *   - the board's agent was never heard in this campaign (no hello of its
 *     ever accepted): nothing powercut did can have harmed the device yet,
 *     so INFRA_ERROR, saying what the console shows and what to check;
 *   - a hello that comes in the grace after the last boot timeout is a slow
 *     boot (campaign.c, camp_on_hello): INFRA_ERROR, naming it;
 *   - otherwise the board worked before and powered on into silence. That
 *     is the device's BOOT_FAIL only on positive evidence against it: the
 *     board known to have lost power and booted (its relay's off ends the
 *     board itself, or the console showed a boot) and the device shown to
 *     be what failed (the agent said it does not respond, or the console
 *     showed MMC or block errors). Otherwise INFRA_ERROR, its cause named
 *     with the console's lines: "no power cut happened" (no boot seen),
 *     "the agent did not start" (a boot seen, nothing against the device).
 * The decision is the campaign's, on record as the event it writes (infra
 * or boot_fail, with "cause"): replay recomputes the verdicts from those.
 */
#include "harness/campaign/config.h"
#include "harness/campaign/campaign_daemon.h"
#include "harness/campaign/campaign_core.h"
#include "harness/campaign/campaign_infra.h"
#include "harness/campaign/campaign_setup.h"
#include "harness/link/board.h"
#include "harness/campaign/campaign_stop.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/proto.h"
#include "common/util.h"

/* The console log is read from its last MiB: a boot's end is what matters. */
#define CONSOLE_LOOK_BYTES (1u << 20)

/* How long the power stays on after the last attempt's boot timeout. */
#define LATE_MAX_MS 60000u

/* What a console prints once a Linux kernel runs (the first found is quoted). */
static const char *const kernel_signs[] = {
	"Linux version ", "Booting Linux", "Run /sbin/init", "Run /init", "systemd[1]:", "Freeing unused kernel",
	"Welcome to ", " login: ", "init: ", "Starting kernel",
};

/* Printable ASCII, at most len - 1 bytes: what an agent or a console says
 * goes into records and onto terminals. */
static void printable(char *out, size_t len, const char *in, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n && in[i] && k + 1 < len; i++)
		out[k++] = in[i] >= 0x20 && in[i] < 0x7f ? in[i] : '?';
	out[k] = 0;
}

/* What a console prints when the device under test fails: a line naming
 * the MMC or block layer and a failure (docs/verdicts.md "What counts as
 * evidence"). powercut's own lines (the agent's, its init script's) are not
 * the kernel's word about the device, and an SDIO card is no storage:
 * neither counts. */
static const char *const dev_subjects[] = { "mmc", "I/O error", "blk_update_request", "nvme", "never left busy" };
static const char *const dev_failures[] = {
	"error", "Error", "timeout", "Timeout", "timed out", "failed", "Failed", "never left busy",
};

static int has(const char *line, size_t n, const char *w)
{
	return memmem(line, n, w, strlen(w)) != NULL;
}

static int device_sign(const char *line, size_t n)
{
	int subj = 0, fail = 0;

	if (has(line, n, "powercut") || has(line, n, "SDIO") || has(line, n, "sdio"))
		return 0;
	for (size_t i = 0; i < PC_ARRAY_SIZE(dev_subjects); i++)
		subj |= has(line, n, dev_subjects[i]);
	for (size_t i = 0; i < PC_ARRAY_SIZE(dev_failures); i++)
		fail |= has(line, n, dev_failures[i]);
	return subj && fail;
}

/* [*line, *line + *n) without its leading and trailing blanks and CRs */
static void trim(const char **line, size_t *n)
{
	while (*n && ((*line)[0] == ' ' || (*line)[0] == '\t' || (*line)[0] == '\r')) {
		(*line)++;
		(*n)--;
	}
	while (*n && ((*line)[*n - 1] == '\r' || (*line)[*n - 1] == ' ' || (*line)[*n - 1] == '\t'))
		(*n)--;
}

/* A marked line of an agent: only a setup_error for this board counts (one
 * that names no board was told none: its console is this board's all the
 * same). */
static void inspect_marked(const char *p, size_t n, const char *board, struct camp_console_facts *f)
{
	struct pc_msg m;
	char err[256];
	json_object *v;

	if (pc_msg_parse(p, n, &m, err, sizeof(err)))
		return;
	if (m.type == PC_MSG_SETUP_ERROR &&
	    (!json_object_object_get_ex(m.obj, "board", &v) || !strcmp(json_object_get_string(v), board))) {
		json_object_object_get_ex(m.obj, "cause", &v);
		printable(f->cause, sizeof(f->cause), json_object_get_string(v), SIZE_MAX);
		json_object_object_get_ex(m.obj, "reason", &v);
		printable(f->reason, sizeof(f->reason), json_object_get_string(v), SIZE_MAX);
	}
	pc_msg_clear(&m);
}

/* A line powercut printed (the agent's "powercut-agent: error: ...", the
 * relay's note): never a sign of a boot, though it may quote one (the host's
 * reason that "an earlier power-on printed \"Linux version ...\"", which an
 * agent killed late echoes into the next cycle's console). */
static int ours(const char *line, size_t n)
{
	const char *p = line;

	while (p < line + n && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	return (size_t)(line + n - p) >= 8 && !memcmp(p, "powercut", 8);
}

/* A line that is not ours: a sign of a booted kernel, of the device failing. */
static void inspect_noise(const char *line, size_t n, struct camp_console_facts *f)
{
	for (size_t i = 0; !ours(line, n) && !f->kernel[0] && i < PC_ARRAY_SIZE(kernel_signs); i++) {
		const char *k = memmem(line, n, kernel_signs[i], strlen(kernel_signs[i]));

		if (k)	/* the line from the sign on */
			printable(f->kernel, sizeof(f->kernel), k, n - (size_t)(k - line));
	}
	if (!f->device[0] && device_sign(line, n))
		printable(f->device, sizeof(f->device), line, n);
}

void camp_console_inspect(const char *text, size_t len, const char *board, struct camp_console_facts *f)
{
	const char *last[3] = { 0 };
	size_t lastn[3] = { 0 }, at = 0, k = 0;

	memset(f, 0, sizeof(*f));
	while (at < len) {
		const char *nl = memchr(text + at, '\n', len - at), *line = text + at, *mk;
		size_t n = nl ? (size_t)(nl - line) : len - at;

		at += n + 1;
		if (n > PC_PROTO_MAX_LINE + 256)
			continue;	/* noise: no line of ours is that long */
		mk = memmem(line, n, PC_PROTO_MARKER, strlen(PC_PROTO_MARKER));
		if (mk) {
			size_t off = (size_t)(mk - line) + strlen(PC_PROTO_MARKER);

			inspect_marked(line + off, n - off, board, f);
			continue;
		}
		trim(&line, &n);
		if (!n)
			continue;
		inspect_noise(line, n, f);
		memmove(last, last + 1, sizeof(last) - sizeof(last[0]));
		memmove(lastn, lastn + 1, sizeof(lastn) - sizeof(lastn[0]));
		last[2] = line;
		lastn[2] = n;
	}
	for (size_t i = 0; i < 3; i++) {
		char one[sizeof(f->tail)];

		if (!last[i])
			continue;
		printable(one, sizeof(one), last[i], lastn[i]);
		k += (size_t)snprintf(f->tail + k, sizeof(f->tail) - k, "%s%s", k ? " / " : "", one);
		if (k >= sizeof(f->tail))
			break;
	}
}

/* The first line of the console holding one of the board's boot_patterns,
 * powercut's own lines left out (they may quote one). */
static void boot_pattern_line(const struct bctx *b, const char *text, size_t len, struct camp_console_facts *f)
{
	for (unsigned i = 0; !f->boot[0] && i < b->cfg->nboot_patterns; i++) {
		const char *pat = b->cfg->boot_patterns[i], *at = text, *p;
		size_t pl = strlen(pat);

		while (!f->boot[0] && pl && (p = memmem(at, len - (size_t)(at - text), pat, pl))) {
			const char *from = p, *to = memchr(p, '\n', len - (size_t)(p - text));

			while (from > text && from[-1] != '\n')
				from--;
			if (!ours(from, (size_t)((to ? to : text + len) - from)))
				printable(f->boot, sizeof(f->boot), from, (size_t)((to ? to : text + len) - from));
			at = p + pl;
		}
	}
}

/* The cycle's console log of board b, read from its last MiB (pure but for
 * the read): f and path set. */
static void console_read(struct bctx *b, struct camp_console_facts *f, char *path, size_t pathlen)
{
	struct stat st;
	char *buf;
	off_t from = 0;
	ssize_t n;
	int fd;

	memset(f, 0, sizeof(*f));
	snprintf(path, pathlen, "%s/console/%s/cycle-%u.log", b->c->res.dir, b->cfg->name, b->cycle);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	if (st.st_size > CONSOLE_LOOK_BYTES)
		from = st.st_size - CONSOLE_LOOK_BYTES;
	buf = malloc(CONSOLE_LOOK_BYTES);
	n = buf ? pread(fd, buf, CONSOLE_LOOK_BYTES, from) : -1;
	close(fd);
	if (n >= 0) {
		camp_console_inspect(buf, (size_t)n, b->cfg->name, f);
		boot_pattern_line(b, buf, (size_t)n, f);
	}
	free(buf);
	f->exists = 1;
	f->bytes = (uint64_t)st.st_size;
}

void camp_console_look(struct bctx *b, struct camp_console_facts *f, char *path, size_t pathlen)
{
	console_read(b, f, path, pathlen);
	if (f->cause[0]) {
		char via[PATH_MAX + 64];
		json_object *m = pc_msg_new(PC_MSG_SETUP_ERROR);

		json_object_object_add(m, "cause", json_object_new_string(f->cause));
		json_object_object_add(m, "reason", json_object_new_string(f->reason));
		snprintf(via, sizeof(via), "its console, %s", path);
		camp_agent_said(b, m, via);
		json_object_put(m);
	}
}

void camp_agent_said(struct bctx *b, json_object *msg, const char *via)
{
	json_object *v;

	if (!json_object_object_get_ex(msg, "cause", &v))
		return;
	printable(b->said_cause, sizeof(b->said_cause), json_object_get_string(v), SIZE_MAX);
	if (!json_object_object_get_ex(msg, "reason", &v))
		return;
	printable(b->said, sizeof(b->said), json_object_get_string(v), SIZE_MAX);
	pc_strlcpy(b->said_via, via, sizeof(b->said_via));
}

uint32_t camp_late_ms(const struct bctx *b)
{
	return b->cfg->boot_timeout_ms < LATE_MAX_MS ? b->cfg->boot_timeout_ms : LATE_MAX_MS;
}

/* What the console shows, in a sentence. */
static void console_text(const struct bctx *b, const struct camp_console_facts *f, const char *path, char *out,
			 size_t len)
{
	if (!f->exists)
		snprintf(out, len, "no console log (%s): this board's console is not captured%s", path,
			 b->cfg->link_serial || b->cfg->console_capture ? "" : " (link.console names one)");
	else if (!f->bytes)
		snprintf(out, len, "its console log %s is empty: the board printed nothing (is the console wired, at "
			 "the right baud?)", path);
	else if (f->kernel[0])
		snprintf(out, len, "its console shows a booted kernel (\"%s\"; %s)", f->kernel, path);
	else
		snprintf(out, len, "its console printed %" PRIu64 " bytes, none of them a sign of a booted kernel (%s)",
			 f->bytes, path);
}

/* The agent's word, for an event: {"cause", "reason", "via"}. */
static json_object *said_json(const struct bctx *b)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "cause", json_object_new_string(b->said_cause));
	json_object_object_add(o, "reason", json_object_new_string(b->said));
	json_object_object_add(o, "via", json_object_new_string(b->said_via));
	return o;
}

/*
 * A silent boot that is not the device's: the agent said why (setup),
 * someone tried to speak for the board and was refused, or the relay says
 * the host failed the power-on (a virtual board's KVM failing its guest).
 * 1 when it went on record as an INFRA_ERROR.
 */
static int boot_not_device(struct bctx *b, unsigned attempts)
{
	char hf[700];
	json_object *x;

	if (b->said[0] && strcmp(b->said_cause, "device")) {
		x = json_object_new_object();
		json_object_object_add(x, "agent_said", said_json(b));
		camp_infra_ex(b, "agent_said", x, "setup: the agent says it cannot get to a hello: %s (its cause: %s; "
			      "from %s); the device is not blamed", b->said, b->said_cause, b->said_via);
		return 1;
	}
	if (b->rejects) {
		/* someone tried and could not prove to be the agent: whether the
		 * board booted is not known, so the device is not blamed */
		camp_infra_ex(b, "link_reject", NULL, "no authenticated agent within %u ms after %u attempts; %u "
			      "attempt(s) to speak for the board were refused (link_reject events)",
			      b->cfg->boot_timeout_ms, attempts, b->rejects);
		return 1;
	}
	if (relay_host_fault(b->cfg->relay_driver, &b->rctx, hf, sizeof(hf))) {
		camp_infra_ex(b, "host_fault", NULL, "no HELLO within %u ms, %u attempt%s, and the relay says the "
			      "host failed the power-on: %s; the device is not blamed", b->cfg->boot_timeout_ms,
			      attempts, attempts == 1 ? "" : "s", hf);
		return 1;
	}
	return 0;
}

/* The console's class, for an event: none, empty, kernel, output. */
static const char *console_class(const struct camp_console_facts *f)
{
	return !f->exists ? "none" : !f->bytes ? "empty" : f->kernel[0] ? "kernel" : "output";
}

/*
 * What the host knows against the device after a boot without a hello
 * (docs/verdicts.md "What counts as evidence"): power, how the board is
 * known to have lost power and booted since the last hello (its relay's
 * off ends the board itself: the sim's, a virtual board's; or the console
 * showed a boot); device, what shows the device is what failed (the agent
 * said its device does not respond, or the console showed MMC or block
 * errors). "" each: not known.
 */
struct boot_evidence {
	char power[200];
	char device[PC_PROTO_MAX_REASON + PATH_MAX + 100];
};

static void boot_evidence(const struct bctx *b, const struct camp_console_facts *f, struct boot_evidence *e)
{
	memset(e, 0, sizeof(*e));
	if (b->relay_caps & RELAY_CAP_VIRTUAL)
		snprintf(e->power, sizeof(e->power), "the %s relay's off ends the board itself", b->cfg->relay_driver);
	else if (f->kernel[0] || f->boot[0])
		snprintf(e->power, sizeof(e->power), "the console showed a boot after power-on: \"%s\"",
			 f->kernel[0] ? f->kernel : f->boot);
	if (b->said[0] && !strcmp(b->said_cause, "device"))
		snprintf(e->device, sizeof(e->device), "the agent said: %s (from %s)", b->said, b->said_via);
	else if (f->device[0])
		snprintf(e->device, sizeof(e->device), "the console showed the device failing: \"%s\"", f->device);
}

static json_object *evidence_json(const struct boot_evidence *e)
{
	json_object *o = json_object_new_object();

	if (e->power[0])
		json_object_object_add(o, "power", json_object_new_string(e->power));
	if (e->device[0])
		json_object_object_add(o, "device", json_object_new_string(e->device));
	return o;
}

/* What the console showed, quoted: "its console log P is empty", "the
 * console: \"...\" (P)". */
static void console_quote(const struct camp_console_facts *f, const char *path, char *out, size_t len)
{
	if (!f->exists)
		snprintf(out, len, "no console log: the board's console is not captured (link.console names one)");
	else if (!f->bytes)
		snprintf(out, len, "its console log %s is empty", path);
	else if (!f->tail[0])
		snprintf(out, len, "its console log %s holds blank lines or the agent's marked ones only", path);
	else
		snprintf(out, len, "console: \"%s\", %s", f->tail, path);
}

/* A board heard before powers on into silence, and nothing shows the
 * device failed after a power cut: an infrastructure outcome, its cause
 * named with the console's evidence. */
static void silent_infra(struct bctx *b, const struct camp_console_facts *f, const struct boot_evidence *e,
			 const char *path)
{
	char q[PATH_MAX + 400], said[PC_PROTO_MAX_REASON + 32] = "";
	json_object *x = json_object_new_object();

	console_quote(f, path, q, sizeof(q));
	if (b->said[0])
		snprintf(said, sizeof(said), "; the agent said: %s", b->said);
	json_object_object_add(x, "console", json_object_new_string(console_class(f)));
	if (f->tail[0])
		json_object_object_add(x, "console_lines", json_object_new_string(f->tail));
	json_object_object_add(x, "evidence", evidence_json(e));
	if (b->said[0])
		json_object_object_add(x, "agent_said", said_json(b));
	if (!e->power[0] && !f->exists)
		camp_infra_ex(b, "no_cut", x, "no power cut is known to have happened, and no agent came (%s): relay %s "
			      "cannot tell whether board %s lost power%s; the device is not blamed", q,
			      b->cfg->relay_driver, b->cfg->name, said);
	else if (!e->power[0])
		camp_infra_ex(b, "no_cut", x, "no power cut happened: the console showed no boot since power-on (%s) "
			      "and no agent came: relay %s did not cut board %s's power (is it wired to another board?), "
			      "or the console is not this board's%s; the device is not blamed", q, b->cfg->relay_driver,
			      b->cfg->name, said);
	else
		camp_infra_ex(b, "agent_not_started", x, "the agent did not start (%s): board %s lost power and booted "
			      "(%s), and nothing shows its device failed%s; likely: the agent's binary, unit or init "
			      "script gone from the board (a rootfs update, a full disk), or the agent exiting at start; "
			      "the device is not blamed", q, b->cfg->name, e->power, said);
}

/* It worked before, lost power, booted, and its device is what failed:
 * the device's BOOT_FAIL (dead after stop.boot_fails in a row). */
static void device_boot_fail(struct bctx *b, const struct camp_console_facts *f, const struct boot_evidence *e,
			     unsigned attempts)
{
	struct camp *c = b->c;
	char why[sizeof(e->device) + 200];
	unsigned dead = 0;
	json_object *ev;

	camp_power_off(b);
	link_board_close(b->link);
	ev = camp_ev_new(b, b->cycle > c->cycles ? PC_EV_FINAL_BOOT_FAIL : PC_EV_BOOT_FAIL);
	if (b->cycle > c->cycles)
		snprintf(why, sizeof(why), "no HELLO within %u ms after %u attempts at the final verification; %s",
			 b->cfg->boot_timeout_ms, attempts, e->device);
	else
		snprintf(why, sizeof(why), "no HELLO within %u ms, %u attempts; %s", b->cfg->boot_timeout_ms, attempts,
			 e->device);
	json_object_object_add(ev, "reason", json_object_new_string(why));
	json_object_object_add(ev, "console", json_object_new_string(console_class(f)));
	json_object_object_add(ev, "evidence", evidence_json(e));
	if (b->said[0])
		json_object_object_add(ev, "agent_said", said_json(b));
	/* stop.boot_fails in a row: the device is dead, its finding (the
	 * engine puts it in the verdict) */
	if (b->cycle <= c->cycles && (dead = camp_stop_dead(b)))
		json_object_object_add(ev, PC_DEAD_DEVICE, json_object_new_int64(dead));
	camp_ev_log(b, ev);
	if (b->cycle > c->cycles) {
		camp_set_state(b, B_DONE, UINT64_MAX);
		return;
	}
	if (dead) {
		camp_stop_dead_board(b, dead);
		return;
	}
	b->consecutive_infra = 0;
	camp_next_cycle(b);
}

void camp_boot_judge(struct bctx *b)
{
	struct camp *c = b->c;
	struct camp_console_facts f;
	struct boot_evidence e;
	char path[PATH_MAX + 64], cons[PATH_MAX + 300];
	unsigned attempts = b->attempt + 1;
	json_object *x;

	/* the agent may have said more since the timeout (the grace) */
	camp_console_look(b, &f, path, sizeof(path));
	console_text(b, &f, path, cons, sizeof(cons));
	/* camp_infra_ex retries the final verification while attempts are left:
	 * this one was the last */
	b->attempt = b->cfg->boot_retries;
	if (boot_not_device(b, attempts))
		return;
	if (!b->heard) {
		x = json_object_new_object();
		if (b->said[0])
			json_object_object_add(x, "agent_said", said_json(b));
		json_object_object_add(x, "console", json_object_new_string(console_class(&f)));
		camp_infra_ex(b, "never_heard", x, "setup: the agent was never heard from on this board%s (no hello "
			      "within %u ms, %u attempt%s, nor %u ms after); %s%s%s; likely: the agent not started "
			      "(its unit, init script or env file), --connect not this campaign's address (agents "
			      "connect to %s), or boot_timeout_ms %u shorter than the boot",
			      b->spoke ? " with a usable hello" : "", b->cfg->boot_timeout_ms, attempts,
			      attempts == 1 ? "" : "s", camp_late_ms(b), cons, b->said[0] ? "; the agent said: " : "",
			      b->said, c->connect, b->cfg->boot_timeout_ms);
		return;
	}
	/* it worked before and now powers on into silence: the device's only
	 * on evidence against it */
	boot_evidence(b, &f, &e);
	if (e.power[0] && e.device[0])
		device_boot_fail(b, &f, &e, attempts);
	else
		silent_infra(b, &f, &e, path);
}

int camp_hello_unbooted(struct bctx *b, json_object *hello)
{
	struct camp_console_facts f;
	char path[PATH_MAX + 64], q[PATH_MAX + 400];
	const char *sign;
	json_object *v, *x;

	if ((b->relay_caps & (RELAY_CAP_VIRTUAL | RELAY_CAP_NO_OFF)) || !link_board_console_whole(b->link))
		return 0;
	console_read(b, &f, path, sizeof(path));
	sign = f.kernel[0] ? f.kernel : f.boot;
	if (sign[0]) {
		/* this board prints a boot: from now on its console must show one */
		pc_strlcpy(b->boot_shown, sign, sizeof(b->boot_shown));
		return 0;
	}
	/* a boot id of the kernel's changes only with a boot (hello_refused
	 * checks it); one the agent made changes with every agent process */
	if (!b->boot_shown[0] || !json_object_object_get_ex(hello, "boot_id_source", &v) ||
	    !json_object_is_type(v, json_type_string) || !strcmp(json_object_get_string(v), "kernel"))
		return 0;
	console_quote(&f, path, q, sizeof(q));
	x = json_object_new_object();
	json_object_object_add(x, "console", json_object_new_string(console_class(&f)));
	if (f.tail[0])
		json_object_object_add(x, "console_lines", json_object_new_string(f.tail));
	camp_infra_ex(b, "no_cut", x, "the relay did not cut power: the console showed no boot since power-on (%s), "
		      "though an earlier power-on printed \"%s\" before its agent's hello; the agent's boot id is its "
		      "own (--fresh-boot-id), new with every agent process, not with a boot (board %s, relay %s): the "
		      "relay switches another board or nothing (check its wiring); the device is not blamed", q,
		      b->boot_shown, b->cfg->name, b->cfg->relay_driver);
	return 1;
}

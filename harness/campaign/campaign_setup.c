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
 *   - otherwise the board worked before and powered on into silence:
 *     BOOT_FAIL, the device's.
 * The decision is the campaign's, on record as the event it writes (infra
 * or boot_fail, with "cause"): replay recomputes the verdicts from those.
 */
#include "harness/campaign/campaign_int.h"

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

void camp_console_inspect(const char *text, size_t len, const char *board, struct camp_console_facts *f)
{
	size_t at = 0;

	memset(f, 0, sizeof(*f));
	while (at < len) {
		const char *nl = memchr(text + at, '\n', len - at), *line = text + at;
		size_t n = nl ? (size_t)(nl - line) : len - at;
		const char *mk;

		at += n + 1;
		if (n > PC_PROTO_MAX_LINE + 256)
			continue;	/* noise: no line of ours is that long */
		mk = memmem(line, n, PC_PROTO_MARKER, strlen(PC_PROTO_MARKER));
		if (mk) {
			size_t off = (size_t)(mk - line) + strlen(PC_PROTO_MARKER);
			struct pc_msg m;
			char err[256];
			json_object *v;

			/* an agent's line: only a setup_error for this board counts
			 * (one that names no board was told none: its console is this
			 * board's all the same) */
			if (pc_msg_parse(line + off, n - off, &m, err, sizeof(err)))
				continue;
			if (m.type == PC_MSG_SETUP_ERROR &&
			    (!json_object_object_get_ex(m.obj, "board", &v) || !strcmp(json_object_get_string(v), board))) {
				json_object_object_get_ex(m.obj, "cause", &v);
				printable(f->cause, sizeof(f->cause), json_object_get_string(v), SIZE_MAX);
				json_object_object_get_ex(m.obj, "reason", &v);
				printable(f->reason, sizeof(f->reason), json_object_get_string(v), SIZE_MAX);
			}
			pc_msg_clear(&m);
			continue;
		}
		for (size_t i = 0; !f->kernel[0] && i < PC_ARRAY_SIZE(kernel_signs); i++) {
			const char *k = memmem(line, n, kernel_signs[i], strlen(kernel_signs[i]));

			if (k) {
				/* the line from the sign on, trimmed */
				size_t from = (size_t)(k - line), m = n - from;

				while (m && (line[from + m - 1] == '\r' || line[from + m - 1] == ' '))
					m--;
				printable(f->kernel, sizeof(f->kernel), line + from, m);
			}
		}
	}
}

void camp_console_look(struct bctx *b, struct camp_console_facts *f, char *path, size_t pathlen)
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
	if (n >= 0)
		camp_console_inspect(buf, (size_t)n, b->cfg->name, f);
	free(buf);
	f->exists = 1;
	f->bytes = (uint64_t)st.st_size;
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

void camp_boot_judge(struct bctx *b)
{
	struct camp *c = b->c;
	struct camp_console_facts f;
	char path[PATH_MAX + 64], cons[PATH_MAX + 300];
	unsigned attempts = b->attempt + 1, dead = 0;
	json_object *x, *ev;

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
		json_object_object_add(x, "console", json_object_new_string(!f.exists ? "none" : !f.bytes ? "empty" :
			f.kernel[0] ? "kernel" : "output"));
		camp_infra_ex(b, "never_heard", x, "setup: the agent was never heard from on this board%s (no hello "
			      "within %u ms, %u attempt%s, nor %u ms after); %s%s%s; likely: the agent not started "
			      "(its unit, init script or env file), --connect not this campaign's address (agents "
			      "connect to %s), or boot_timeout_ms %u shorter than the boot",
			      b->spoke ? " with a usable hello" : "", b->cfg->boot_timeout_ms, attempts,
			      attempts == 1 ? "" : "s", camp_late_ms(b), cons, b->said[0] ? "; the agent said: " : "",
			      b->said, c->connect, b->cfg->boot_timeout_ms);
		return;
	}
	/* it worked before and now powers on into silence: the device's */
	camp_power_off(b);
	camp_close_link(b);
	ev = camp_ev_new(b, b->cycle > c->cycles ? PC_EV_FINAL_BOOT_FAIL : PC_EV_BOOT_FAIL);
	{
		char why[PC_PROTO_MAX_REASON + 300];

		if (b->cycle > c->cycles)
			snprintf(why, sizeof(why), "no HELLO within %u ms after %u attempts at the final verification%s%s",
				 b->cfg->boot_timeout_ms, attempts, b->said[0] ? "; the agent said: " : "", b->said);
		else
			snprintf(why, sizeof(why), "no HELLO within %u ms, %u attempts%s%s", b->cfg->boot_timeout_ms,
				 attempts, b->said[0] ? "; the agent said: " : "", b->said);
		json_object_object_add(ev, "reason", json_object_new_string(why));
	}
	json_object_object_add(ev, "console", json_object_new_string(!f.exists ? "none" : !f.bytes ? "empty" :
		f.kernel[0] ? "kernel" : "output"));
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

/*
 * campaign.c - the campaign daemon: the poll() loop and each board's state
 * machine.
 *
 * One poll() loop, every board concurrently; each board's relay switches in a
 * worker process of its own (relay/relay_worker.h), never in the loop. Each
 * board goes round: power on -> wait for HELLO (boot timeout, retries) ->
 * VERIFY (the engine judges the last cycle's writes from the scan) -> WORK ->
 * cut at the planned instant -> drain what was already on the wire -> off
 * time -> next.
 * Every event is appended to events.jsonl and fed to the engine; verdicts are
 * appended to verdicts.jsonl with fsync. A killed harness resumes where its
 * records end, with no verdict lost or written twice. The other parts:
 *   campaign_link.c    the links: listening, connections that have not
 *                      proven themselves, the handshake, serial consoles, lines
 *   campaign_plan.c    what a cycle asks: the scan, the work, the cut
 *   campaign_resume.c  verdicts recorded and tallied, campaign.json, resume
 * campaign_int.h holds the state they share.
 */
#include "harness/campaign/campaign.h"
#include "harness/campaign/campaign_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "common/auth.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "relay/relay.h"
#include "relay/relay_lock.h"
#include "harness/engine/engine.h"
#include "harness/campaign/progress.h"
#include "harness/report/report.h"
#include "harness/results/results.h"

const char *const camp_bstate_names[] = { "off", "booting", "verifying", "writing", "cut", "done", "cutting" };

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = sig;
}

int64_t camp_t(struct camp *c)
{
	return c->t_base + (int64_t)(pc_now_ms() - c->t0);
}

/* ---- events ---- */

json_object *camp_ev_new(struct bctx *b, enum pc_ev_kind kind)
{
	json_object *ev = json_object_new_object();

	json_object_object_add(ev, "t", json_object_new_int64(camp_t(b->c)));
	json_object_object_add(ev, "board", json_object_new_string(b->cfg->name));
	json_object_object_add(ev, "cycle", json_object_new_int64(b->cycle));
	json_object_object_add(ev, "ev", json_object_new_string(pc_ev_names[kind]));
	return ev;
}

/* Append an event and feed it to the engine (which may emit verdicts). */
int camp_ev_log(struct bctx *b, json_object *ev)
{
	struct camp *c = b->c;
	char err[512] = "";
	int ret;

	ret = results_event(&c->res, ev);
	if (ret) {
		pc_err("%s/events.jsonl: write failed: %s", c->res.dir, strerror(-ret));
		c->fatal = 1;
	} else if (engine_feed(c->eng, ev, err, sizeof(err))) {
		pc_warn("board %s: engine: %s", b->cfg->name, err);
	}
	json_object_put(ev);
	return ret;
}

static void ev_reason(struct bctx *b, enum pc_ev_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void ev_reason(struct bctx *b, enum pc_ev_kind kind, const char *fmt, ...)
{
	json_object *ev = camp_ev_new(b, kind);
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_object_object_add(ev, "reason", json_object_new_string(buf));
	camp_ev_log(b, ev);
}

/* ---- board state machine ---- */

void camp_set_state(struct bctx *b, enum bstate st, uint64_t timeout_ms)
{
	b->st = st;
	b->t_state = pc_now_ms();
	b->deadline = timeout_ms == UINT64_MAX ? UINT64_MAX : b->t_state + timeout_ms;
}

/* A sysrq board is never switched off: its agent reboots it on request. */
int camp_is_sysrq(const struct bctx *b)
{
	return b->relay.ops && !strcmp(b->relay.ops->name, "sysrq");
}

/* Asked of the relay's worker, never waited for: it switches in order, so a
 * power-on asked after this comes after it (and off_ms after it). */
void camp_power_off(struct bctx *b)
{
	int ret;

	if (camp_is_sysrq(b))
		return;
	ret = relay_worker_send(&b->rw, RELAY_OP_OFF, 0, NULL, NULL, NULL);
	if (ret)
		pc_warn("board %s: cannot ask its relay worker to switch off: %s (the worker is restarted)",
			b->cfg->name, strerror(-ret));
}

/* A host that ends an authenticated session says why first: the agent on
 * the board prints it, rather than guess at a link closed without a word. */
static void tell_agent(struct bctx *b, const char *why)
{
	json_object *m;

	if (b->fd < 0 || !b->s.up || (b->st != B_WAIT_HELLO && b->st != B_VERIFY))
		return;
	m = pc_msg_error("%s", why);
	if (m && camp_send_msg(b, m))
		pc_debug("board %s: could not tell the agent why: %s", b->cfg->name, strerror(errno));
	json_object_put(m);
}

static void give_up(struct bctx *b, const char *why)
{
	json_object *ev = camp_ev_new(b, PC_EV_GIVE_UP);

	snprintf(b->given_up, sizeof(b->given_up), "%s", why);
	pc_err("board %s: giving up: %s", b->cfg->name, why);
	tell_agent(b, why);
	/* on record: the report calls the board's device INCOMPLETE, saying why
	 * (the engine takes it as informational) */
	json_object_object_add(ev, "reason", json_object_new_string(why));
	camp_ev_log(b, ev);
	camp_power_off(b);
	camp_close_link(b);
	camp_set_state(b, B_DONE, UINT64_MAX);
}

/* The cycle ends (cut done, or it could not run): move on after the off time. */
void camp_next_cycle(struct bctx *b)
{
	results_sync(&b->c->res);
	b->cycle++;
	b->attempt = 0;
	b->rejects = 0;
	b->working = 0;
	b->late = 0;
	b->said[0] = b->said_cause[0] = b->said_via[0] = 0;
	b->cycles_run++;
	if (b->cycle > b->c->cycles + 1) {
		camp_set_state(b, B_DONE, UINT64_MAX);
		return;
	}
	camp_set_state(b, B_OFF_WAIT, b->cfg->off_ms);
}

/* Merge extra's fields into ev (extra is put). */
static void ev_merge(json_object *ev, json_object *extra)
{
	if (!extra)
		return;
	json_object_object_foreach(extra, k, v)
		json_object_object_add(ev, k, json_object_get(v));
	json_object_put(extra);
}

static void infra_v(struct bctx *b, const char *cause, json_object *extra, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
static void infra_v(struct bctx *b, const char *cause, json_object *extra, const char *fmt, va_list ap)
{
	char buf[1024];
	json_object *ev;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	pc_warn("board %s cycle %u: %s", b->cfg->name, b->cycle, buf);
	tell_agent(b, buf);
	if (b->cycle > b->c->cycles) {
		/* the final verification: there is no cycle of its own to blame,
		 * so retry it, then give the last cycle's writes the verdict */
		camp_power_off(b);
		camp_close_link(b);
		if (++b->attempt <= b->cfg->boot_retries) {
			json_object_put(extra);
			camp_set_state(b, B_OFF_WAIT, b->cfg->off_ms);
			return;
		}
		ev = camp_ev_new(b, PC_EV_FINAL_INFRA);
		{
			char r[1100];

			snprintf(r, sizeof(r), "the final verification failed: %s", buf);
			json_object_object_add(ev, "reason", json_object_new_string(r));
		}
		if (cause)
			json_object_object_add(ev, "cause", json_object_new_string(cause));
		ev_merge(ev, extra);
		camp_ev_log(b, ev);
		camp_set_state(b, B_DONE, UINT64_MAX);
		return;
	}
	ev = camp_ev_new(b, PC_EV_INFRA);
	json_object_object_add(ev, "reason", json_object_new_string(buf));
	if (cause)
		json_object_object_add(ev, "cause", json_object_new_string(cause));
	ev_merge(ev, extra);
	camp_ev_log(b, ev);
	camp_power_off(b);
	camp_close_link(b);
	if (++b->consecutive_infra >= MAX_CONSECUTIVE_INFRA) {
		char why[1200];
		snprintf(why, sizeof(why), "%u infrastructure errors in a row, the last: %s", b->consecutive_infra, buf);
		camp_next_cycle(b);
		give_up(b, why);
		return;
	}
	camp_next_cycle(b);
}

void camp_infra(struct bctx *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	infra_v(b, NULL, NULL, fmt, ap);
	va_end(ap);
}

void camp_infra_ex(struct bctx *b, const char *cause, json_object *extra, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	infra_v(b, cause, extra, fmt, ap);
	va_end(ap);
}

/* On record where each run starts: the wall clock at its "t" and the host,
 * which every verdict's "time" and "host" come from (also in replay). */
static int run_start(struct camp *c)
{
	json_object *ev = json_object_new_object(), *host = json_object_new_object();
	char id[80], hn[256] = "", err[512] = "";
	struct timespec ts;
	int ret;

	clock_gettime(CLOCK_REALTIME, &ts);
	results_host_id(id, sizeof(id));
	gethostname(hn, sizeof(hn) - 1);
	json_object_object_add(ev, "t", json_object_new_int64(camp_t(c)));
	json_object_object_add(ev, "ev", json_object_new_string(pc_ev_names[PC_EV_RUN_START]));
	json_object_object_add(ev, "wall_ms", json_object_new_int64((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000));
	json_object_object_add(host, "id", json_object_new_string(id));
	json_object_object_add(host, "hostname", json_object_new_string(hn));
	json_object_object_add(ev, "host", host);
	json_object_object_add(ev, "powercut", json_object_new_string(PC_VERSION));
	json_object_object_add(ev, "pid", json_object_new_int64((int64_t)getpid()));
	ret = results_event(&c->res, ev);
	if (!ret && engine_feed(c->eng, ev, err, sizeof(err)))
		pc_warn("engine: %s", err);
	json_object_put(ev);
	return ret;
}

static void power_on(struct bctx *b)
{
	struct camp *c = b->c;
	json_object *ev;

	snprintf(b->relay.console, sizeof(b->relay.console), "%s/console/%s/cycle-%u.log", c->res.dir,
		 b->cfg->name, b->cycle);
	b->t_power = pc_now_ms();
	b->late = 0;
	if (b->cfg->link_serial || b->cfg->console_capture) {
		/* a line the last cut broke off is noise: the new boot starts afresh,
		 * and so does the authentication */
		memset(&b->slb, 0, sizeof(b->slb));
		if (b->cfg->link_serial)
			camp_close_link(b);
		/* the harness captures the console itself, from the serial line */
		if (b->cfd >= 0)
			close(b->cfd);
		b->cfd = open(b->relay.console, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (b->cfd < 0)
			pc_warn("board %s: %s: %s", b->cfg->name, b->relay.console, strerror(errno));
		b->relay.console[0] = 0;
	}
	ev = camp_ev_new(b, PC_EV_POWER_ON);
	json_object_object_add(ev, "attempt", json_object_new_int(b->attempt + 1));
	/* this run's plan (--cycles may change it from run to run): status reads it */
	json_object_object_add(ev, "cycles", json_object_new_int64(c->cycles));
	/* the mode this boot's cycle is to write: a verdict of a cycle that
	 * never wrote still says which mode it was (none at the final verification) */
	if (b->cycle <= c->cycles)
		json_object_object_add(ev, "mode", json_object_new_string(
			pc_mode_name(b->cfg->modes[(b->cycle - 1) % b->cfg->nmodes])));
	camp_ev_log(b, ev);
	camp_plan_power_on(b);
	{
		/* the worker switches on when the board has been off off_ms */
		int ret = relay_worker_send(&b->rw, RELAY_OP_ON, b->cfg->off_ms, b->relay.console, b->relay.cut,
					    &b->on_seq);
		if (ret) {
			camp_infra(b, "relay on could not be asked of the relay's worker: %s", strerror(-ret));
			return;
		}
	}
	/* the boot's clock starts when the relay says the power is on
	 * (relay_answer); until then a slow relay has its own deadline */
	camp_set_state(b, B_WAIT_HELLO, (uint64_t)b->cfg->boot_timeout_ms + b->rw.hang_ms);
}

/* The relay worker died, answered nonsense or hung: the board's trouble
 * alone. A new worker takes over; the cycle it was in is an INFRA_ERROR. */
static void relay_failed(struct bctx *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void relay_failed(struct bctx *b, const char *fmt, ...)
{
	char why[600];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	relay_worker_kill(&b->rw);
	if (b->st == B_DONE) {
		/* a board given up (or finished) needs no relay any more: a
		 * worker hung in its last off is not started again and again */
		pc_warn("board %s: the relay worker %s; the board is done, no new one is started", b->cfg->name, why);
		return;
	}
	b->rw.restarts++;
	ret = relay_worker_start(&b->rw, b->cfg->relay_driver, b->cfg->relay, &b->rctx, b->rw.hang_ms);
	if (ret) {
		char gu[800];
		snprintf(gu, sizeof(gu), "the relay worker %s, and a new one could not start: %s", why, strerror(-ret));
		give_up(b, gu);
		return;
	}
	b->on_seq = 0;
	/* whatever the old one left undone: the board is switched off first */
	relay_worker_send(&b->rw, RELAY_OP_OFF, 0, NULL, NULL, NULL);
	if (b->st == B_OFF_WAIT || b->st == B_DRAIN) {
		pc_warn("board %s: the relay worker %s; a new one is started", b->cfg->name, why);
		return;
	}
	camp_infra(b, "the relay worker %s (a new one is started)", why);
}

/* An answer from the relay's worker. */
static void relay_answer(struct bctx *b, const struct relay_rep *rep)
{
	switch (rep->op) {
	case 0:
		/* a new worker opened the relay (or could not) */
		if (rep->ret < 0)
			relay_failed(b, "could not open the relay again: %s", rep->err);
		break;
	case RELAY_OP_ON:
		if (rep->seq != b->on_seq)
			break;	/* a power-on given up already */
		b->on_seq = 0;
		if (rep->ret < 0) {
			if (b->st == B_WAIT_HELLO)
				camp_infra(b, "relay on failed: %s", rep->err);
			else
				pc_warn("board %s: relay on failed: %s", b->cfg->name, rep->err);
			break;
		}
		b->t_power = rep->t_switch_us / 1000;
		if (b->st == B_WAIT_HELLO)
			b->deadline = b->t_power + b->cfg->boot_timeout_ms;
		break;
	case RELAY_OP_CUT:
		if (b->st == B_CUTTING && rep->seq == b->cut_seq)
			camp_cut_switched(b, rep);
		break;
	case RELAY_OP_OFF:
		if (rep->ret < 0)
			pc_warn("board %s: %s", b->cfg->name, rep->err);
		break;
	default:
		break;
	}
}

static void relay_readable(struct bctx *b)
{
	struct relay_rep rep;
	int ret;

	while ((ret = relay_worker_read(&b->rw, &rep)) == 1)
		relay_answer(b, &rep);
	if (ret == -EPIPE)
		relay_failed(b, "died");
	else if (ret == -EPROTO)
		relay_failed(b, "answered with a malformed reply");
}

/* The boot timeout passed with no authenticated hello. */
static void boot_timeout(struct bctx *b)
{
	struct camp_console_facts f;
	char path[PATH_MAX + 64];
	int setup;

	if (b->late) {
		/* the grace after the last attempt ended too */
		camp_boot_judge(b);
		return;
	}
	/* what the agent printed on a console that is captured: its reason */
	camp_console_look(b, &f, path, sizeof(path));
	setup = b->said[0] && strcmp(b->said_cause, "device");
	if (!setup && b->attempt + 1 <= b->cfg->boot_retries) {
		camp_power_off(b);
		camp_close_link(b);
		b->attempt++;
		pc_warn("board %s cycle %u: no HELLO within %u ms; power-cycling (retry %u of %u)", b->cfg->name,
			b->cycle, b->cfg->boot_timeout_ms, b->attempt, b->cfg->boot_retries);
		camp_set_state(b, B_OFF_WAIT, b->cfg->off_ms);
		return;
	}
	if (!setup && !b->rejects && camp_late_ms(b)) {
		/* the last attempt: the power stays on a while longer, so that a
		 * hello that comes late names a slow boot, not a dead device */
		b->late = 1;
		b->t_late = pc_now_ms();
		b->deadline = b->t_late + camp_late_ms(b);
		pc_warn("board %s cycle %u: no HELLO within %u ms; the power stays on %u ms more to tell a slow boot "
			"from a dead one", b->cfg->name, b->cycle, b->cfg->boot_timeout_ms, camp_late_ms(b));
		return;
	}
	camp_boot_judge(b);
}

static void final_verified(struct bctx *b)
{
	camp_power_off(b);
	camp_close_link(b);
	results_sync(&b->c->res);
	camp_set_state(b, B_DONE, UINT64_MAX);
}

/* A validated message from a board's agent. */
void camp_on_msg(struct bctx *b, struct pc_msg *m, json_object *raw)
{
	struct camp *c = b->c;
	json_object *ev = camp_ev_new(b, PC_EV_RX);

	json_object_object_add(ev, "msg", json_object_get(raw));
	camp_ev_log(b, ev);
	if (m->type == PC_MSG_ERROR) {
		json_object *t;
		json_object_object_get_ex(raw, "msg", &t);
		if ((b->st == B_DRAIN || b->st == B_CUTTING) && !camp_is_sysrq(b))
			return;	/* what a dying agent said after the cut */
		if (b->st == B_WRITING && json_object_object_get_ex(raw, "write_error", NULL)) {
			/* the device refused a write: a finding about the device (the
			 * engine puts it in this cycle's verdict), not lab trouble */
			camp_cut(b, "write refused");
			return;
		}
		camp_infra(b, "agent error: %s", json_object_get_string(t));
		return;
	}
	switch (b->st) {
	case B_VERIFY:
		if (m->type == PC_MSG_SCAN_END) {
			struct engine_board_state es;

			engine_board_state(c->eng, b->cfg->name, &es);
			if (!es.scan_ok) {
				/* the engine could not use the scan: writing now would
				 * pile new records on unjudged ones */
				camp_infra(b, "the agent's scan was incomplete or inconsistent (see events.jsonl)");
				break;
			}
			b->consecutive_infra = 0;
			if (b->cycle > c->cycles)
				final_verified(b);
			else
				camp_start_work(b);
		}
		break;
	case B_WRITING:
		if (m->type == PC_MSG_ACK) {
			b->acks += m->u.range.n;
			if (b->acks >= b->cut_acks)
				camp_cut(b, "acks");
		} else if (m->type == PC_MSG_IO) {
			camp_on_io(b, m);
		} else if (m->type == PC_MSG_DONE) {
			b->done_seen = 1;
			/* nothing more will happen: cut now rather than wait for the instant */
			camp_cut(b, "work done");
		}
		break;
	default:
		break;
	}
}

/* An authenticated agent's hello: check what it says, then ask for the scan. */
void camp_on_hello(struct bctx *b, struct pc_msg *m, json_object *raw)
{
	json_object *ev = camp_ev_new(b, PC_EV_RX), *region, *v, *msg;
	uint64_t rs = 0;
	const char *boot_id = "";
	int known;

	json_object_object_add(ev, "msg", json_object_get(raw));
	camp_ev_log(b, ev);
	if (json_object_object_get_ex(raw, "boot_id", &v))
		boot_id = json_object_get_string(v);
	if (b->boot_id[0] && !strcmp(b->boot_id, boot_id)) {
		/* the same boot as the last power-on: the board never lost power
		 * (or the agent survived the cut), so this cycle proves nothing */
		camp_infra(b, "the agent's boot id %s did not change since the last power-on: the board did not "
		      "really lose power (check the relay wiring), or an agent survived the cut", boot_id);
		return;
	}
	pc_strlcpy(b->boot_id, boot_id, sizeof(b->boot_id));
	b->spoke = 1;
	if (b->late) {
		/* it came in the grace after the boot timeout: the board boots,
		 * only slower than the configuration allows */
		uint64_t ms = pc_now_ms() - b->t_power, sug = (ms * 3 / 2 + 999) / 1000 * 1000;
		json_object *x = json_object_new_object();

		json_object_object_add(x, "hello_ms", json_object_new_int64((int64_t)ms));
		camp_infra_ex(b, "slow_boot", x, "slow boot: the agent's HELLO came %" PRIu64 " ms after power-on, %" PRIu64
			      " ms after the boot timeout of %u ms: raise boot_timeout_ms (to %" PRIu64 ", say); the "
			      "device is not blamed", ms, pc_now_ms() - b->t_late, b->cfg->boot_timeout_ms, sug);
		return;
	}
	if (json_object_object_get_ex(raw, "region_error", &v)) {
		/* no superblock of its own: the agent scans and writes nothing, and
		 * the geometry the host remembers is never imposed on it */
		camp_infra(b, "the agent has no usable powercut region: %s", json_object_get_string(v));
		return;
	}
	if (json_object_object_get_ex(raw, "region", &region) && json_object_object_get_ex(region, "record_size", &v))
		rs = (uint64_t)json_object_get_int64(v);
	if (rs != b->cfg->record_size) {
		char why[256];
		snprintf(why, sizeof(why), "the board's region holds %" PRIu64 "-byte records but the configuration "
			 "says device.record_size %u; re-prepare the region or fix the configuration", rs,
			 b->cfg->record_size);
		ev_reason(b, PC_EV_INFRA, "%s", why);
		give_up(b, why);
		return;
	}
	{
		/* the device the agent opened is the one the configuration names,
		 * before anything is written to it */
		char why[1024];

		if (config_device_check(b->cfg, raw, why, sizeof(why))) {
			ev_reason(b, PC_EV_INFRA, "%s", why);
			give_up(b, why);
			return;
		}
	}
	if (engine_board_refused(b->c->eng, b->cfg->name)) {
		/* a region beyond the board's configuration: nothing of this boot is judged */
		camp_infra(b, "%s", engine_board_refused(b->c->eng, b->cfg->name));
		return;
	}
	known = camp_send_known(b);
	if (known < 0) {
		camp_infra(b, "sending KNOWN failed: %s", camp_link_strerror(b, errno));
		return;
	}
	msg = camp_verify_request(b);
	ev = camp_ev_new(b, PC_EV_VERIFY);
	json_object_object_add(ev, "msg", json_object_get(msg));
	if (known)
		json_object_object_add(ev, "known", json_object_new_int(known));
	camp_ev_log(b, ev);
	b->heard = 1;	/* on record: the verify event (resume reads it) */
	if (camp_send_msg(b, msg)) {
		json_object_put(msg);
		camp_infra(b, "sending VERIFY failed: %s", camp_link_strerror(b, errno));
		return;
	}
	json_object_put(msg);
	camp_set_state(b, B_VERIFY, b->cfg->verify_timeout_ms);
}

static void board_timer(struct bctx *b)
{
	uint64_t now = pc_now_ms();

	if (b->st == B_WRITING && now >= b->cut_at) {
		camp_cut_due(b);
		return;
	}
	if (now < b->deadline)
		return;
	switch (b->st) {
	case B_OFF_WAIT:
		power_on(b);
		break;
	case B_WAIT_HELLO:
		boot_timeout(b);
		break;
	case B_VERIFY:
		camp_infra(b, "no complete scan within verify_timeout_ms (%u ms)", b->cfg->verify_timeout_ms);
		break;
	case B_WRITING:
		camp_cut(b, "work timeout");
		break;
	case B_DRAIN:
		camp_close_link(b);
		camp_next_cycle(b);
		break;
	default:
		break;
	}
}

/* ---- progress ---- */

static void progress(struct camp *c, int force)
{
	static struct progress_board pb[CFG_MAX_BOARDS];
	uint64_t now = pc_now_ms();
	double elapsed = (double)(now - c->t0) / 1000.0;
	unsigned n = c->nb < CFG_MAX_BOARDS ? c->nb : CFG_MAX_BOARDS;

	if (c->o->quiet)
		return;
	progress_fail_flush(force);
	if (!force && now - c->last_progress < progress_interval_ms())
		return;
	c->last_progress = now;
	for (unsigned i = 0; i < n; i++) {
		struct bctx *b = &c->b[i];
		unsigned d = b->cycle > c->cycles ? c->cycles : b->cycle - 1;

		/* each board's ETA from its own pace in this run: boards run side by side */
		pb[i] = (struct progress_board){
			.name = b->cfg->name, .done = d, .cycles = c->cycles, .pass = b->n_pass, .fail = b->n_fail,
			.boot = b->n_boot, .infra = b->n_infra, .given_up = b->given_up[0] != 0,
			.eta_s = b->cycles_run ? elapsed / b->cycles_run * (c->cycles - d) : -1,
		};
	}
	progress_show(pb, n, elapsed, force);
}

static void find_agent(struct camp *c)
{
	char self[PATH_MAX];
	ssize_t n;

	if (c->o->agent) {
		pc_strlcpy(c->agent, c->o->agent, sizeof(c->agent));
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		char *slash;
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			slash[1] = 0;
			snprintf(c->agent, sizeof(c->agent), "%spowercut-agent", self);
			if (access(c->agent, X_OK) == 0)
				return;
		}
	}
	pc_strlcpy(c->agent, "powercut-agent", sizeof(c->agent));
}

/*
 * How long one relay request may take before its worker counts as hung:
 * twice the driver's own timeout (relay.timeout_ms where it has one, else
 * 10 s) plus the off time a power-on may wait out, plus 2 s.
 */
static uint32_t relay_hang_ms(const struct board_cfg *cfg)
{
	json_object *v;
	uint64_t t = 10000;

	if (cfg->relay && json_object_object_get_ex(cfg->relay, "timeout_ms", &v) &&
	    json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0)
		t = (uint64_t)json_object_get_int64(v);
	t = 2 * t + cfg->off_ms + 2000;
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

static int open_boards(struct camp *c, char *err, size_t errlen)
{
	for (unsigned i = 0; i < c->nb; i++) {
		struct bctx *b = &c->b[i];
		char state[PATH_MAX + 64], cons[PATH_MAX + 64];
		const struct relay_ops *ops;
		struct engine_board_state es;
		struct relay_rep rep;
		int ret;

		b->c = c;
		b->cfg = &c->cfg->boards[i];
		b->idx = i;
		b->fd = -1;
		b->sfd = -1;
		b->cfd = -1;
		if ((b->cfg->link_serial || b->cfg->console_capture) && camp_serial_open(b, err, errlen))
			return -EIO;
		snprintf(state, sizeof(state), "%s/boards/%s", c->res.dir, b->cfg->name);
		snprintf(cons, sizeof(cons), "%s/console/%s", c->res.dir, b->cfg->name);
		pc_mkdir_p(state, 0755);
		pc_mkdir_p(cons, 0755);
		pc_strlcpy(b->rstate, state, sizeof(b->rstate));
		b->rctx = (struct relay_ctx){
			.board = b->cfg->name, .connect = c->connect, .agent_path = c->agent,
			.state_dir = b->rstate, .device = b->cfg->device, .key_path = c->key_path,
		};
		/* opened here once, so a mistake is said now and probes run once,
		 * then closed: the board's worker opens it for itself */
		if (relay_open(&b->relay, b->cfg->relay_driver, b->cfg->relay, &b->rctx, err, errlen))
			return -EIO;
		ops = b->relay.ops;
		relay_close(&b->relay);
		b->relay.ops = ops;	/* its name and abilities; never switched through */
		ret = relay_worker_start(&b->rw, b->cfg->relay_driver, b->cfg->relay, &b->rctx, relay_hang_ms(b->cfg));
		if (ret) {
			snprintf(err, errlen, "board %s: cannot start its relay worker: %s", b->cfg->name, strerror(-ret));
			return -EIO;
		}
		b->relay_open = 1;
		ret = relay_worker_wait(&b->rw, b->rw.hang_ms, &rep);
		if (ret < 0 || rep.ret < 0) {
			snprintf(err, errlen, "board %s: its relay worker could not open the relay: %s", b->cfg->name,
				 ret < 0 ? strerror(-ret) : rep.err);
			return -EIO;
		}
		/* start with the power off: the first power-on is a clean boot */
		camp_power_off(b);
		engine_board_state(c->eng, b->cfg->name, &es);
		b->cycle = (es.last_work_cycle > es.last_verdict_cycle ? es.last_work_cycle : es.last_verdict_cycle) + 1;
		if (es.last_cycle > c->cycles && !es.pending)
			b->cycle = c->cycles + 2;	/* finished earlier */
		if (b->cycle > c->cycles + 1) {
			camp_set_state(b, B_DONE, UINT64_MAX);
			continue;
		}
		if (c->resuming)
			pc_info("board %s: resuming at cycle %u%s", b->cfg->name, b->cycle,
				es.pending ? " (the last cycle's writes are checked first)" : "");
		camp_set_state(b, B_OFF_WAIT, i * 3u);	/* stagger power-ons a little */
	}
	return 0;
}

static int all_done(const struct camp *c)
{
	for (unsigned i = 0; i < c->nb; i++)
		if (c->b[i].st != B_DONE)
			return 0;
	return 1;
}

static void loop(struct camp *c)
{
	/* the listener, pending connections, and per board its relay worker,
	 * its console and its tcp link */
	struct pollfd pfd[1 + MAX_PENDING + 3 * CFG_MAX_BOARDS];
	void *who[1 + MAX_PENDING + 3 * CFG_MAX_BOARDS];
	int is_relay[1 + MAX_PENDING + 3 * CFG_MAX_BOARDS];

	while (!all_done(c) && !stop_flag && !c->fatal) {
		uint64_t now = pc_now_ms(), next = now + 1000;
		int n = 0, timeout, ret;

		for (unsigned i = 0; i < c->nb; i++) {
			if (relay_worker_hung(&c->b[i].rw, now))
				relay_failed(&c->b[i], "did not answer within %u ms (the driver hangs)", c->b[i].rw.hang_ms);
			board_timer(&c->b[i]);
			if (c->b[i].rw.outstanding && c->b[i].rw.deadline_ms < next)
				next = c->b[i].rw.deadline_ms;
			if (c->b[i].st == B_WRITING && c->b[i].cut_at < next)
				next = c->b[i].cut_at;
			if (c->b[i].deadline < next)
				next = c->b[i].deadline;
		}
		for (unsigned i = 0; i < MAX_PENDING; i++)
			if (c->pend[i].fd >= 0 && now - c->pend[i].since > HELLO_WAIT_MS) {
				camp_link_reject(c, c->pend[i].b, c->pend[i].b != NULL, c->pend[i].peer, NULL, 0,
					    "no %s within %u ms", c->pend[i].b ? "proof" : "hello", HELLO_WAIT_MS);
				camp_pending_close(&c->pend[i]);
			}
		memset(is_relay, 0, sizeof(is_relay));
		pfd[n] = (struct pollfd){ .fd = c->lfd, .events = POLLIN };
		who[n++] = NULL;
		for (unsigned i = 0; i < c->nb; i++)
			if (c->b[i].rw.fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = c->b[i].rw.fd, .events = POLLIN };
				is_relay[n] = 1;
				who[n++] = &c->b[i];
			}
		for (unsigned i = 0; i < MAX_PENDING; i++)
			if (c->pend[i].fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = c->pend[i].fd, .events = POLLIN };
				who[n++] = &c->pend[i];
			}
		for (unsigned i = 0; i < c->nb; i++) {
			/* the serial console (the link, or a tcp link's captured
			 * console), and a tcp link; POLLOUT while its output waits */
			int out = camp_link_wants_out(&c->b[i]);

			if (c->b[i].sfd >= 0) {
				pfd[n] = (struct pollfd){ .fd = c->b[i].sfd,
							  .events = POLLIN | (out == c->b[i].sfd ? POLLOUT : 0) };
				who[n++] = &c->b[i];
			}
			if (c->b[i].fd >= 0 && c->b[i].fd != c->b[i].sfd) {
				pfd[n] = (struct pollfd){ .fd = c->b[i].fd,
							  .events = POLLIN | (out == c->b[i].fd ? POLLOUT : 0) };
				who[n++] = &c->b[i];
			}
		}
		now = pc_now_ms();
		timeout = next > now ? (int)(next - now) : 0;
		ret = poll(pfd, (nfds_t)n, timeout);
		if (ret < 0 && errno != EINTR) {
			pc_err("poll: %s", strerror(errno));
			c->fatal = 1;
			break;
		}
		for (int i = 0; ret > 0 && i < n; i++) {
			if (!pfd[i].revents)
				continue;
			if (i == 0)
				camp_accept_all(c);
			else if (is_relay[i]) {
				struct bctx *b = who[i];
				if (b->rw.fd == pfd[i].fd)
					relay_readable(b);
			}
			else if ((char *)who[i] >= (char *)c->pend && (char *)who[i] < (char *)(c->pend + MAX_PENDING)) {
				if (((struct pending *)who[i])->fd >= 0)
					camp_pending_read(c, who[i]);
			} else {
				struct bctx *b = who[i];

				if ((pfd[i].revents & POLLOUT) && camp_link_wants_out(b) == pfd[i].fd)
					camp_link_flush(b);
				if (!(pfd[i].revents & ~POLLOUT))
					continue;
				if (b->sfd >= 0 && b->sfd == pfd[i].fd)
					camp_serial_read(b);
				else if (b->fd == pfd[i].fd)
					camp_board_read(b);
			}
		}
		progress(c, 0);
	}
}

/*
 * Each board's relay lock (relay/relay_lock.h), for the whole run: it is
 * keyed by the relay, not by this results folder, so `powercut relay` and a
 * campaign elsewhere naming the same relay keep off it. -1 (said) if one
 * is in use, or two boards name one relay.
 */
static int camp_lock_relays(const struct campaign_cfg *cfg, const char *dir, struct relay_lock *locks)
{
	char key[160], note[1024], err[1024], *res = realpath(dir, NULL), *conf = realpath(cfg->path, NULL);
	struct relay_lock_who me = { 0 }, holder;
	int rc = 0;

	pc_strlcpy(me.role, "run", sizeof(me.role));
	pc_strlcpy(me.campaign, cfg->name, sizeof(me.campaign));
	pc_strlcpy(me.results, res ? res : dir, sizeof(me.results));
	pc_strlcpy(me.config, conf ? conf : cfg->path, sizeof(me.config));
	for (unsigned i = 0; i < cfg->nboards && !rc; i++) {
		const struct board_cfg *b = &cfg->boards[i];

		if (relay_lock_key(b->relay_driver, b->relay, cfg->name, b->name, key, sizeof(key)))
			continue;	/* a sim or VM board: this folder's lock covers it */
		pc_strlcpy(me.board, b->name, sizeof(me.board));
		for (unsigned j = 0; j < i && !rc; j++)
			if (locks[j].fd >= 0 && !strcmp(locks[j].me.key, key)) {
				pc_err("boards %s and %s name the same relay (%s): each board needs a relay of its own",
				       cfg->boards[j].name, b->name, key);
				rc = -1;
			}
		if (rc)
			break;
		memset(&holder, 0, sizeof(holder));
		if (relay_lock_take(&locks[i], key, &me, 1500, &holder, note, sizeof(note), err, sizeof(err))) {
			if (!strcmp(holder.role, "holder"))
				pc_err("board %s: %s; let it go first: powercut relay %s %s release", b->name, err,
				       holder.config[0] ? holder.config : "CONFIG", holder.board);
			else
				pc_err("board %s: %s", b->name, err);
			rc = -1;
		} else if (note[0]) {
			pc_warn("board %s: %s", b->name, note);
		}
	}
	free(res);
	free(conf);
	return rc;
}

int campaign_run(struct campaign_cfg *cfg, const struct campaign_opts *o)
{
	struct camp c = { .cfg = cfg, .o = o, .lfd = -1 };
	char dir[PATH_MAX], err[1024] = "", note[1024] = "", evpath[PATH_MAX + 32], vpath[PATH_MAX + 32];
	struct sigaction sa = { .sa_handler = on_signal };
	int existing = 0, torn, rc = CAMPAIGN_ERROR;
	unsigned fails = 0;
	struct relay_lock *locks;

	for (unsigned i = 0; i < MAX_PENDING; i++)
		c.pend[i].fd = -1;
	c.cycles = o->cycles > 0 ? (unsigned)o->cycles : cfg->cycles;
	c.nb = cfg->nboards;
	c.b = calloc(c.nb, sizeof(*c.b));
	locks = calloc(c.nb, sizeof(*locks));
	if (!c.b || !locks) {
		free(c.b);
		free(locks);
		return CAMPAIGN_ERROR;
	}
	for (unsigned i = 0; i < c.nb; i++)
		locks[i].fd = -1;
	for (unsigned i = 0; i < c.nb; i++) {
		c.b[i].c = &c;
		c.b[i].cfg = &cfg->boards[i];
		c.b[i].idx = i;
		c.b[i].fd = -1;
		c.b[i].sfd = -1;
		c.b[i].cfd = -1;
	}
	if (o->results)
		pc_strlcpy(dir, o->results, sizeof(dir));
	else
		snprintf(dir, sizeof(dir), "results/%s", cfg->name);
	find_agent(&c);
	if (results_open(&c.res, dir, note, sizeof(note), err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	if (note[0])
		pc_warn("%s", note);
	if (camp_lock_relays(cfg, dir, locks))
		goto out;
	if (camp_campaign_json(&c, &existing, err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	/* the agents' key: made once, kept with the campaign (or where the
	 * configuration says), given to every agent (docs/protocol.md) */
	if (cfg->key_file[0])
		pc_strlcpy(c.key_path, cfg->key_file, sizeof(c.key_path));
	else
		snprintf(c.key_path, sizeof(c.key_path), "%s/agent.key", dir);
	{
		int kr = pc_auth_key_create(c.key_path, err, sizeof(err));
		if (kr == 0)
			pc_info("created the agents' key %s (mode 0600): agents started by a relay get it; give it "
				"to a real board's agent with --key", c.key_path);
		else if (kr != -EEXIST) {
			pc_err("%s", err);
			goto out;
		}
	}
	if (pc_auth_key_load(c.key_path, &c.key, err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	c.eng = engine_new(cfg->name, camp_on_verdict, camp_on_note, &c);
	c.seen_verdicts = json_object_new_object();
	if (!c.eng || !c.seen_verdicts)
		goto out;
	/* the engine checks every HELLO against the configured boards */
	if (engine_configure(c.eng, cfg->root, err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	engine_set_format(c.eng, c.format);
	snprintf(evpath, sizeof(evpath), "%s/events.jsonl", dir);
	snprintf(vpath, sizeof(vpath), "%s/verdicts.jsonl", dir);
	if (existing) {
		/* resume: what the files say happened, happened */
		c.resuming = 1;
		if (results_each_line(vpath, camp_seen_verdict, &c, &torn, err, sizeof(err)) ||
		    results_each_line(evpath, camp_replay_event, &c, &torn, err, sizeof(err))) {
			pc_err("cannot resume from %s: %s", dir, err);
			goto out;
		}
		c.resuming = 0;
		c.t_base += 1;
		pc_info("resuming campaign %s in %s (%lu verdicts on record)", cfg->name, dir,
			(unsigned long)json_object_object_length(c.seen_verdicts));
	}
	json_object_put(c.seen_verdicts);
	c.seen_verdicts = NULL;
	c.t0 = pc_now_ms();
	if (c.format >= 2 && run_start(&c)) {
		pc_err("%s/events.jsonl: write failed", dir);
		goto out;
	}
	if (camp_listen_on(&c, err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	if (open_boards(&c, err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!o->quiet)
		pc_info("campaign %s: %u boards, %u cycles each, results in %s, agents connect to %s", cfg->name,
			c.nb, c.cycles, dir, c.connect);
	loop(&c);
	progress(&c, 1);
	for (unsigned i = 0; i < c.nb; i++) {
		fails += c.b[i].n_fail + c.b[i].n_boot;
		if (c.b[i].st != B_DONE || stop_flag)
			camp_power_off(&c.b[i]);
	}
	/* every switch asked for is done before the run is said to end */
	for (unsigned i = 0; i < c.nb; i++)
		if (c.b[i].relay_open) {
			relay_worker_stop(&c.b[i].rw, c.b[i].rw.hang_ms);
			c.b[i].relay_open = 0;
		}
	/* Each board's plan and how this run left it, so that the report can
	 * tell a campaign that ran its cycles from one that stopped short
	 * (--cycles may change the plan from run to run). The cycle is the last
	 * one the board reached, never beyond what the engine has seen. */
	for (unsigned i = 0; i < c.nb && !c.fatal; i++) {
		struct bctx *b = &c.b[i];
		json_object *ev = camp_ev_new(b, PC_EV_RUN_END);
		unsigned last = b->cycle - 1 < c.cycles ? b->cycle - 1 : c.cycles;

		json_object_object_add(ev, "cycle", json_object_new_int64(last));
		json_object_object_add(ev, "cycles", json_object_new_int64(c.cycles));
		json_object_object_add(ev, "end", json_object_new_string(
			b->given_up[0] ? "given_up" : b->st == B_DONE ? "finished" : "interrupted"));
		camp_ev_log(b, ev);
	}
	results_sync(&c.res);
	if (stop_flag)
		pc_warn("interrupted (signal %d); every verdict so far is on disk; run the same command to resume",
			(int)stop_flag);
	if (c.fatal) {
		rc = CAMPAIGN_ERROR;
	} else {
		/* the report's rule on the whole campaign (resumed runs included):
		 * FAIL or BOOT_FAIL 1, INCOMPLETE 3 (a board given up, too many
		 * INFRA_ERROR cycles, cycles left: interrupted), else 0 */
		const char *dirs[1] = { dir };
		const struct report_opts ro = { .own_run = 1 };
		char rerr[512] = "";
		unsigned judged = 0;
		int result;

		for (unsigned i = 0; i < c.nb; i++)
			judged += c.b[i].n_pass + c.b[i].n_fail + c.b[i].n_boot;
		if (!judged && !stop_flag)
			pc_err("no cycle could be judged (every cycle was INFRA_ERROR): see %s/verdicts.jsonl", dir);
		if (report_run(dirs, 1, o->no_report ? NULL : stdout, &ro, &result, rerr, sizeof(rerr))) {
			pc_err("report: %s", rerr);
			result = fails ? CAMPAIGN_FAIL : CAMPAIGN_ERROR;
		}
		rc = result;
	}
out:
	for (unsigned i = 0; i < c.nb; i++) {
		camp_close_link(&c.b[i]);
		if (c.b[i].sfd >= 0)
			close(c.b[i].sfd);
		if (c.b[i].cfd >= 0)
			close(c.b[i].cfd);
		if (c.b[i].relay_open)
			relay_worker_stop(&c.b[i].rw, 5000);
	}
	for (unsigned i = 0; i < c.nb; i++)
		relay_lock_release(&locks[i]);
	free(locks);
	for (unsigned i = 0; i < MAX_PENDING; i++)
		camp_pending_close(&c.pend[i]);
	explicit_bzero(&c.key, sizeof(c.key));
	if (c.lfd >= 0)
		close(c.lfd);
	json_object_put(c.seen_verdicts);
	engine_free(c.eng);
	results_close(&c.res);
	free(c.b);
	return rc;
}

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
 *   campaign_core.c    the primitives: clock, events, state, power off
 *   campaign_infra.c   INFRA_ERROR and giving a board up
 *   campaign_link.c    the links' ops: each board's link made, its lines
 *                      handed up (through camp_link_ops), the pending ops
 *   campaign_reject.c  refusals on record
 * over harness/link, the link itself (each board's link, listener,
 * connections not proven yet, handshake, output queue, refusals, network
 * console), which knows nothing of these.
 *   campaign_plan.c    what a cycle asks: the scan, the work, the cut
 *   campaign_setup.c   a boot without a hello
 *   campaign_resume.c  verdicts recorded and tallied, campaign.json, resume
 * One header per object: a board (campaign_board.h, struct bctx), the
 * running campaign (campaign_daemon.h, struct camp, and the files' layers),
 * its cut plan (campaign_plan.h: opaque, its file's alone; a board's link is
 * harness/link/board.h's), and each file's functions in its own header.
 */
#include "harness/campaign/campaign.h"
#include "harness/campaign/campaign_daemon.h"
#include "harness/campaign/campaign_reject.h"
#include "harness/campaign/campaign_core.h"
#include "harness/campaign/campaign_infra.h"
#include "harness/campaign/campaign_loop.h"
#include "harness/campaign/campaign_setup.h"
#include "harness/campaign/campaign_link.h"
#include "harness/campaign/campaign_plan.h"
#include "harness/campaign/campaign_stop.h"

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

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = sig;
}

/* SIGINT and SIGTERM end the loop (every verdict so far is on disk). */
void camp_catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int camp_stopped(void)
{
	return (int)stop_flag;
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


static void power_on(struct bctx *b)
{
	struct camp *c = b->c;
	json_object *ev;

	snprintf(b->console, sizeof(b->console), "%s/console/%s/cycle-%u.log", c->res.dir,
		 b->cfg->name, b->cycle);
	b->t_power = pc_now_ms();
	b->late = 0;
	if (b->cfg->link_serial || b->cfg->console_capture) {
		/* the harness captures the console itself, from the serial line */
		link_board_power_on(b->link, b->console, b->t_power);
		b->console[0] = 0;
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
	if (camp_ev_log(b, ev) || c->fatal)
		return;	/* the results failed: no power-on that is not on record */
	camp_plan_power_on(b);
	{
		/* the worker switches on when the board has been off off_ms */
		int ret = relay_worker_send(&b->rw, RELAY_OP_ON, b->cfg->off_ms, b->console, camp_plan_exact_cut(b),
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
		camp_give_up(b, gu);
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
		link_board_set_t_power(b->link, b->t_power);
		if (b->st == B_WAIT_HELLO)
			b->deadline = b->t_power + b->cfg->boot_timeout_ms;
		break;
	case RELAY_OP_CUT:
		if (b->st == B_CUTTING)
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
		link_board_close(b->link);
		b->attempt++;
		pc_warn("board %s cycle %u: no HELLO within %u ms; power-cycling (retry %u of %u)", b->cfg->name,
			b->cycle, b->cfg->boot_timeout_ms, b->attempt, b->cfg->boot_retries);
		camp_set_state(b, B_OFF_WAIT, b->cfg->off_ms);
		return;
	}
	if (!setup && !b->rejects && !b->said[0] && camp_late_ms(b) &&
	    !relay_host_fault(b->cfg->relay_driver, &b->rctx, NULL, 0)) {
		/* the last attempt: the power stays on a while longer, so that a
		 * hello that comes late names a slow boot, not a dead device (a
		 * power-on the host failed is judged at once: it will not boot) */
		b->late = 1;
		b->t_late = pc_now_ms();
		b->deadline = b->t_late + camp_late_ms(b);
		pc_warn("board %s cycle %u: no HELLO within %u ms; the power stays on %u ms more to tell a slow boot "
			"from a dead one", b->cfg->name, b->cycle, b->cfg->boot_timeout_ms, camp_late_ms(b));
		return;
	}
	camp_boot_judge(b);
}

/* The agent's link closed (harness/link/board.c found it so, and let it go). */
static void camp_link_closed(struct bctx *b)
{
	if (b->st == B_DRAIN) {
		camp_next_cycle(b);
	} else if (b->st == B_WRITING) {
		/* the agent died on its own: treat it as the cut (it is one) */
		camp_cut(b, pc_trigger_names[PC_CUT_LINK_LOST]);
		if (b->st == B_DRAIN)
			camp_next_cycle(b);
	} else if (b->st == B_VERIFY || b->st == B_WAIT_HELLO) {
		camp_infra(b, "the agent closed the link during %s", camp_bstate_names[b->st]);
	}
}

static void final_verified(struct bctx *b)
{
	camp_power_off(b);
	link_board_close(b->link);
	camp_results_check(b->c, results_sync(&b->c->res));
	camp_set_state(b, B_DONE, UINT64_MAX);
}

/* A validated message from a board's agent. */
static void camp_on_msg(struct bctx *b, struct pc_msg *m, json_object *raw)
{
	struct camp *c = b->c;
	json_object *ev = camp_ev_new(b, PC_EV_RX);

	json_object_object_add(ev, "msg", json_object_get(raw));
	camp_ev_log(b, ev);
	if (m->type == PC_MSG_ERROR) {
		json_object *t;
		json_object_object_get_ex(raw, "msg", &t);
		if ((b->st == B_DRAIN || b->st == B_CUTTING) && !camp_no_off(b))
			return;	/* what a dying agent said after the cut */
		if (b->st == B_WRITING && json_object_object_get_ex(raw, "write_error", NULL)) {
			/* the device refused a write: a finding about the device (the
			 * engine puts it in this cycle's verdict), not lab trouble */
			camp_cut(b, pc_trigger_names[PC_CUT_WRITE_REFUSED]);
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
			else if (camp_stop_due(b))	/* a rule stops it before it writes */
				final_verified(b);
			else
				camp_start_work(b);
		}
		break;
	case B_WRITING:
		if (m->type == PC_MSG_ACK)
			camp_on_ack(b, m->u.range.n);
		else if (m->type == PC_MSG_IO)
			camp_on_io(b, m);
		else if (m->type == PC_MSG_DONE)
			camp_on_done(b);
		break;
	default:
		break;
	}
}

/* An authenticated agent's hello: check what it says, then ask for the scan. */
/* An authenticated hello that cannot begin the cycle: the same boot as the
 * last power-on, a slow boot, no usable region, another record size or
 * device than the configuration's, a region the engine refused. 1 when it
 * ended the cycle (said, on record), 0 when the board may be verified. */
static int hello_refused(struct bctx *b, json_object *raw)
{
	json_object *region, *v;
	uint64_t rs = 0;
	const char *boot_id = "";

	if (json_object_object_get_ex(raw, "boot_id", &v))
		boot_id = json_object_get_string(v);
	if (b->boot_id[0] && !strcmp(b->boot_id, boot_id)) {
		/* the same boot as the last power-on: the board never lost power
		 * (or the agent survived the cut), so this cycle proves nothing */
		camp_infra_ex(b, "no_cut", NULL, "the relay did not cut power: the agent's boot id %s did not change "
			      "since the last power-on (board %s, relay %s): the relay switches another board or "
			      "nothing (check its wiring), or an agent survived the cut; the device is not blamed",
			      boot_id, b->cfg->name, b->cfg->relay_driver);
		return 1;
	}
	pc_strlcpy(b->boot_id, boot_id, sizeof(b->boot_id));
	b->spoke = 1;
	if (camp_hello_unbooted(b, raw))
		return 1;	/* a new agent, but no boot on the console: no cut */
	if (b->late) {
		/* it came in the grace after the boot timeout: the board boots,
		 * only slower than the configuration allows */
		uint64_t ms = pc_now_ms() - b->t_power, sug = (ms * 3 / 2 + 999) / 1000 * 1000;
		json_object *x = json_object_new_object();

		json_object_object_add(x, "hello_ms", json_object_new_int64((int64_t)ms));
		camp_infra_ex(b, "slow_boot", x, "slow boot: the agent's HELLO came %" PRIu64 " ms after power-on, %" PRIu64
			      " ms after the boot timeout of %u ms: raise boot_timeout_ms (to %" PRIu64 ", say); the "
			      "device is not blamed", ms, pc_now_ms() - b->t_late, b->cfg->boot_timeout_ms, sug);
		return 1;
	}
	if (json_object_object_get_ex(raw, "region_error", &v)) {
		/* no superblock of its own: the agent scans and writes nothing, and
		 * the geometry the host remembers is never imposed on it */
		camp_infra(b, "the agent has no usable powercut region: %s", json_object_get_string(v));
		return 1;
	}
	if (json_object_object_get_ex(raw, "region", &region) && json_object_object_get_ex(region, "record_size", &v))
		rs = (uint64_t)json_object_get_int64(v);
	if (rs != b->cfg->record_size) {
		char why[256];
		snprintf(why, sizeof(why), "the board's region holds %" PRIu64 "-byte records but the configuration "
			 "says device.record_size %u; re-prepare the region or fix the configuration", rs,
			 b->cfg->record_size);
		ev_reason(b, PC_EV_INFRA, "%s", why);
		camp_give_up(b, why);
		return 1;
	}
	{
		/* the device the agent opened is the one the configuration names,
		 * before anything is written to it */
		char why[1024];

		if (config_device_check(b->cfg, raw, why, sizeof(why))) {
			ev_reason(b, PC_EV_INFRA, "%s", why);
			camp_give_up(b, why);
			return 1;
		}
	}
	if (engine_board_refused(b->c->eng, b->cfg->name)) {
		/* a region beyond the board's configuration: nothing of this boot is judged */
		camp_infra(b, "%s", engine_board_refused(b->c->eng, b->cfg->name));
		return 1;
	}
	return 0;
}

static void camp_on_hello(struct bctx *b, struct pc_msg *m, json_object *raw)
{
	json_object *ev = camp_ev_new(b, PC_EV_RX), *msg;
	int known;

	json_object_object_add(ev, "msg", json_object_get(raw));
	camp_ev_log(b, ev);
	if (hello_refused(b, raw))
		return;
	known = camp_send_known(b);
	if (known < 0) {
		camp_infra(b, "sending KNOWN failed: %s", link_board_strerror(b->link, errno));
		return;
	}
	msg = camp_verify_request(b);
	ev = camp_ev_new(b, PC_EV_VERIFY);
	json_object_object_add(ev, "msg", json_object_get(msg));
	if (known)
		json_object_object_add(ev, "known", json_object_new_int(known));
	camp_ev_log(b, ev);
	b->heard = 1;	/* on record: the verify event (resume reads it) */
	if (link_board_send(b->link, msg)) {
		json_object_put(msg);
		camp_infra(b, "sending VERIFY failed: %s", link_board_strerror(b->link, errno));
		return;
	}
	json_object_put(msg);
	camp_set_state(b, B_VERIFY, b->cfg->verify_timeout_ms);
}

/* Its last cycle's events and verdict are not durable yet: no power-on. */
static int camp_sync_waits(struct bctx *b)
{
	return b->st == B_OFF_WAIT && !results_durable(&b->c->res, b->sync_seq);
}

static void board_timer(struct bctx *b)
{
	uint64_t now = pc_now_ms();

	if (b->st == B_WRITING && now >= camp_cut_wake(b)) {
		camp_cut_due(b);
		return;
	}
	if (now < b->deadline)
		return;
	switch (b->st) {
	case B_OFF_WAIT:
		if (camp_sync_waits(b))
			break;	/* the results writer's event wakes the loop */
		power_on(b);
		break;
	case B_WAIT_HELLO:
		boot_timeout(b);
		break;
	case B_VERIFY:
		camp_infra(b, "no complete scan within verify_timeout_ms (%u ms)", b->cfg->verify_timeout_ms);
		break;
	case B_WRITING:
		camp_cut(b, pc_trigger_names[PC_CUT_WORK_TIMEOUT]);
		break;
	case B_DRAIN:
		link_board_close(b->link);
		camp_next_cycle(b);
		break;
	default:
		break;
	}
}

/* ---- progress ---- */

void camp_progress(struct camp *c, int force)
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
			.name = b->cfg->name, .done = d, .cycles = c->cycles, .pass = b->tally.pass, .fail = b->tally.fail,
			.boot = b->tally.boot, .infra = b->tally.infra, .given_up = b->given_up[0] != 0,
			.eta_s = b->cycles_run ? elapsed / b->cycles_run * (c->cycles - d) : -1,
		};
	}
	progress_show(pb, n, elapsed, force);
}

static int all_done(const struct camp *c)
{
	for (unsigned i = 0; i < c->nb; i++)
		if (c->b[i].st != B_DONE)
			return 0;
	return 1;
}

/* What one turn of the loop polls: the listener, pending connections, and
 * per board its relay worker, its console and its tcp link. */
#define LOOP_FDS (2 + MAX_PENDING + 3 * CFG_MAX_BOARDS)
struct loop_fds {
	struct pollfd pfd[LOOP_FDS];
	void *who[LOOP_FDS];
	int is_relay[LOOP_FDS];
	int n;
};

/* Every board's timers, and the waiting connections' deadlines: the
 * instant the loop must wake next. */
static uint64_t loop_timers(struct camp *c)
{
	uint64_t now = pc_now_ms(), next = now + 1000;

	camp_link_reject_tick(c, 0);
	for (unsigned i = 0; i < c->nb && !c->fatal; i++) {
		if (relay_worker_hung(&c->b[i].rw, now))
			relay_failed(&c->b[i], "did not answer within %u ms (the driver hangs)", c->b[i].rw.hang_ms);
		board_timer(&c->b[i]);
		if (c->b[i].rw.outstanding && c->b[i].rw.deadline_ms < next)
			next = c->b[i].rw.deadline_ms;
		if (c->b[i].st == B_WRITING && camp_cut_wake(&c->b[i]) < next)
			next = camp_cut_wake(&c->b[i]);
		if (c->b[i].deadline < next && !camp_sync_waits(&c->b[i]))
			next = c->b[i].deadline;
	}
	link_pending_expire(&c->pend, now);
	return next;
}

static void loop_fill(struct camp *c, struct loop_fds *f)
{
	int n = 0;

	memset(f->is_relay, 0, sizeof(f->is_relay));
	f->pfd[n] = (struct pollfd){ .fd = c->lfd, .events = POLLIN };
	f->who[n++] = NULL;
	/* the results writer: a batch synced (a board may power on), or failed */
	f->pfd[n] = (struct pollfd){ .fd = results_fd(&c->res), .events = POLLIN };
	f->who[n++] = &c->res;
	for (unsigned i = 0; i < c->nb; i++)
		if (c->b[i].rw.fd >= 0) {
			f->pfd[n] = (struct pollfd){ .fd = c->b[i].rw.fd, .events = POLLIN };
			f->is_relay[n] = 1;
			f->who[n++] = &c->b[i];
		}
	for (unsigned i = 0; i < MAX_PENDING; i++)
		if (c->pend.p[i].fd >= 0) {
			f->pfd[n] = (struct pollfd){ .fd = c->pend.p[i].fd, .events = POLLIN };
			f->who[n++] = &c->pend.p[i];
		}
	for (unsigned i = 0; i < c->nb; i++) {
		int k = link_board_pollfds(c->b[i].link, &f->pfd[n]);

		for (int j = 0; j < k; j++)
			f->who[n++] = &c->b[i];
	}
	f->n = n;
}

static void loop_dispatch(struct camp *c, struct loop_fds *f)
{
	for (int i = 0; i < f->n; i++) {
		if (!f->pfd[i].revents)
			continue;
		if (i == 0)
			link_pending_accept(&c->pend, c->lfd, c->nb);
		else if (f->who[i] == &c->res)
			camp_results_check(c, results_poll(&c->res));
		else if (f->is_relay[i]) {
			struct bctx *b = f->who[i];
			if (b->rw.fd == f->pfd[i].fd)
				relay_readable(b);
		}
		else if ((char *)f->who[i] >= (char *)c->pend.p && (char *)f->who[i] < (char *)(c->pend.p + MAX_PENDING)) {
			if (((struct pending *)f->who[i])->fd >= 0)
				link_pending_read(&c->pend, f->who[i]);
		} else {
			link_board_ready(((struct bctx *)f->who[i])->link, &f->pfd[i]);
		}
	}
}

static void ops_infra(struct bctx *b, const char *why)
{
	camp_infra(b, "%s", why);
}

/* What the links (campaign_link.c, and through it harness/link/pending.c) hand up. */
static const struct camp_link_ops machine_ops = {
	.hello = camp_on_hello,
	.msg = camp_on_msg,
	.closed = camp_link_closed,
	.agent_said = camp_agent_said,
	.infra = ops_infra,
};

void camp_loop(struct camp *c)
{
	struct loop_fds f;

	c->lops = &machine_ops;
	while (!all_done(c) && !stop_flag && !c->fatal && !camp_disk_low(c, 0)) {
		uint64_t next = loop_timers(c), now;
		int timeout, ret;

		loop_fill(c, &f);
		now = pc_now_ms();
		timeout = next > now ? (int)(next - now) : 0;
		ret = poll(f.pfd, (nfds_t)f.n, timeout);
		if (ret < 0 && errno != EINTR) {
			pc_err("poll: %s", strerror(errno));
			c->fatal = 1;
			break;
		}
		if (ret > 0)
			loop_dispatch(c, &f);
		camp_progress(c, 0);
	}
}

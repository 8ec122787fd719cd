/*
 * campaign_core.c - the campaign's primitives, at the bottom of its files:
 * the clock, events (appended and fed to the engine), a board's state and
 * its power off, and the step to the next cycle. They call nothing else of
 * the campaign's: every other campaign file may call them.
 */
#include "harness/campaign/config.h"
#include "harness/campaign/campaign_daemon.h"
#include "harness/campaign/campaign_core.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/proto.h"
#include "common/util.h"
#include "relay/relay.h"
#include "harness/engine/engine.h"
#include "harness/results/results.h"

const char *const camp_bstate_names[] = { "off", "booting", "verifying", "writing", "cut", "done", "cutting" };

int64_t camp_t(struct camp *c)
{
	return c->t_base + (int64_t)(pc_now_ms() - c->t0);
}

/* ---- events ---- */

int camp_results_check(struct camp *c, int ret)
{
	if (!ret)
		return 0;
	c->fatal = 1;	/* the loop ends at its next turn; camp_finish switches every board off */
	if (!c->res_told) {
		c->res_told = 1;
		if (c->res.failed)
			pc_err("%s: the campaign stops, every board switched off. The kernel may have dropped what "
			       "it could not write, so nothing is retried and nothing more is written; what was "
			       "synced before is intact. Mend the disk, then run the same command to resume",
			       c->res.failure);
		else
			pc_err("%s: cannot write the results: %s", c->res.dir, strerror(-ret));
	}
	return ret;
}

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

	ret = camp_results_check(c, results_event(&c->res, ev));
	if (!ret && engine_feed(c->eng, ev, err, sizeof(err))) {
		pc_warn("board %s: engine: %s", b->cfg->name, err);
	}
	json_object_put(ev);
	return ret;
}
/* ---- board state ---- */

/* What a state is to the board's link (harness/link/board.h). */
enum link_phase camp_link_phase(enum bstate st)
{
	switch (st) {
	case B_OFF_WAIT:
		return LINK_PHASE_OFF;
	case B_WAIT_HELLO:
		return LINK_PHASE_HELLO;
	case B_VERIFY:
	case B_WRITING:
		return LINK_PHASE_WORK;
	case B_CUTTING:
		return LINK_PHASE_CUTTING;
	case B_DRAIN:
		return LINK_PHASE_DRAIN;
	case B_DONE:
		break;
	}
	return LINK_PHASE_DONE;
}

void camp_set_state(struct bctx *b, enum bstate st, uint64_t timeout_ms)
{
	b->st = st;
	if (b->link)
		link_board_set_phase(b->link, camp_link_phase(st));
	b->t_state = pc_now_ms();
	b->deadline = timeout_ms == UINT64_MAX ? UINT64_MAX : b->t_state + timeout_ms;
}

/* A board whose relay cannot switch it off (sysrq) never is: its agent
 * reboots it on request. */
int camp_no_off(const struct bctx *b)
{
	return (b->relay_caps & RELAY_CAP_NO_OFF) != 0;
}

/* Asked of the relay's worker, never waited for: it switches in order, so a
 * power-on asked after this comes after it (and off_ms after it). */
void camp_power_off(struct bctx *b)
{
	int ret;

	if (camp_no_off(b))
		return;
	ret = relay_worker_send(&b->rw, RELAY_OP_OFF, 0, NULL, NULL, NULL);
	if (ret)
		pc_warn("board %s: cannot ask its relay worker to switch off: %s (the worker is restarted)",
			b->cfg->name, strerror(-ret));
}

/* The cycle ends (cut done, or it could not run): move on after the off time. */
void camp_next_cycle(struct bctx *b)
{
	/* the writer syncs it; the board powers on again once it is durable */
	if (!camp_results_check(b->c, results_sync(&b->c->res)))
		b->sync_seq = results_requested(&b->c->res);
	b->cycle++;
	b->attempt = 0;
	b->rejects = 0;
	b->late = 0;
	b->said[0] = b->said_cause[0] = b->said_via[0] = 0;
	b->cycles_run++;
	if (b->cycle > b->c->cycles + 1) {
		camp_set_state(b, B_DONE, UINT64_MAX);
		return;
	}
	camp_set_state(b, B_OFF_WAIT, b->cfg->off_ms);
}

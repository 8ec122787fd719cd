/*
 * campaign_infra.c - how a cycle ends when the harness, not the device, is
 * at fault: an INFRA_ERROR on record (the final verification retried
 * instead), the agent told why, and a board given up after too many in a
 * row. Above the link (it closes it) and the primitives (campaign_core.c);
 * below the plan, the setup checks and the state machine, which call it.
 */
#include "harness/campaign/config.h"
#include "harness/campaign/campaign_daemon.h"
#include "harness/campaign/campaign_core.h"
#include "harness/campaign/campaign_infra.h"
#include "harness/link/board.h"

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

/* A host that ends an authenticated session says why first: the agent on
 * the board prints it, rather than guess at a link closed without a word. */
static void tell_agent(struct bctx *b, const char *why)
{
	json_object *m;

	if (!link_board_up(b->link) || (b->st != B_WAIT_HELLO && b->st != B_VERIFY))
		return;
	m = pc_msg_error("%s", why);
	if (m && link_board_send(b->link, m))
		pc_debug("board %s: could not tell the agent why: %s", b->cfg->name, strerror(errno));
	json_object_put(m);
}

/* The board is done with: on record, why, and its power and link off. */
void camp_give_up(struct bctx *b, const char *why)
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
	link_board_close(b->link);
	camp_set_state(b, B_DONE, UINT64_MAX);
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
		link_board_close(b->link);
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
	link_board_close(b->link);
	if (++b->consecutive_infra >= MAX_CONSECUTIVE_INFRA) {
		char why[1200];
		snprintf(why, sizeof(why), "%u infrastructure errors in a row, the last: %s", b->consecutive_infra, buf);
		camp_next_cycle(b);
		camp_give_up(b, why);
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

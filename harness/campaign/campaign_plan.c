/*
 * campaign_plan.c - what each cycle asks of the board: the scan (full, or the
 * written slots and a sample of cold ones, with the damage already held named
 * in KNOWN lines), the work, and the cut at its planned instant.
 */
#include "harness/campaign/config.h"
#include "harness/campaign/campaign_daemon.h"
#include "harness/campaign/campaign_core.h"
#include "harness/campaign/campaign_infra.h"
#include "harness/link/board.h"
#include "harness/campaign/campaign_plan.h"

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
#include "harness/engine/engine.h"
#include "harness/report/report.h"
#include "harness/results/results.h"

/* The cycle's work and cut plan (campaign_plan.h): only this file sees inside it. */
struct camp_plan {
	int kind;		/* the cycle's plan (enum cut_plan, never CUT_MIX): config_cycle_cut */
	uint32_t lo, hi;	/* ... its range: the window (ms), the acks or the nth */
	uint32_t cut_seq;	/* the cut's request, in B_CUTTING */
	const char *cut_why;	/* ... what called for it */
	uint64_t cut_now_ms;	/* ... when it was decided */
	uint64_t cut_req_us;
	uint64_t t_work;
	uint64_t cut_at;	/* CUT_RANDOM: absolute ms */
	uint32_t cut_acks;	/* CUT_ACKS: cut once this many are acked */
	uint32_t acks;
	/* CUT_FLUSH, CUT_FUA: the cut comes at the agent's cut_nth announcement
	 * (IO message) of the plan's I/O, cut_delay_us after it arrived; on a
	 * board that cuts itself there (exact: the sim), the harness waits */
	uint32_t cut_nth;	/* 0: not an I/O plan */
	uint32_t io_seen;	/* announcements of the plan's I/O so far in this work */
	int io_fired;		/* the cut_nth arrived: */
	uint64_t io_seq;	/* ... the seq it named */
	uint64_t t_io_us;	/* ... when (monotonic us) */
	uint64_t cut_due_us;	/* a delayed cut's instant (monotonic us; 0: none) */
	int exact;
	int done_seen;
	/* the exact cut told to the relay at power-on (RELAY_CAP_EXACT_CUT):
	 * relay.h's "flush:N:US" or "fua:N:US"; empty: none */
	char cut[48];
};

struct camp_plan *camp_plan_new(void)
{
	return calloc(1, sizeof(struct camp_plan));
}

const char *camp_plan_exact_cut(const struct bctx *b)
{
	return b->plan->cut;
}

static uint64_t plan_rand(struct bctx *b, uint64_t salt)
{
	return pc_mix64(b->c->cfg->seed ^ pc_mix64(((uint64_t)b->idx << 40) ^ ((uint64_t)b->cycle << 8) ^ salt));
}

/* The cycle's plan and range (under "mix", its turn): set at power-on and
 * again with the work, the same both times. */
static void plan_kind(struct bctx *b)
{
	b->plan->kind = (int)config_cycle_cut(b->cfg, b->cycle, &b->plan->lo, &b->plan->hi);
}

static int io_plan(const struct bctx *b)
{
	return b->plan->kind == CUT_FLUSH || b->plan->kind == CUT_FUA;
}

/* The cycle's draw in the plan's range: the instant, the acks or the nth I/O. */
static uint32_t plan_pick(struct bctx *b)
{
	uint32_t span = b->plan->hi - b->plan->lo + 1;

	return b->plan->lo + (uint32_t)(plan_rand(b, 1) % span);
}

/*
 * Before a power-on: a board whose relay can cut exactly (the sim) is told
 * the cycle's planned flush or FUA write, so it cuts itself right there,
 * the same every time the campaign runs. The final verification writes
 * nothing: no cut.
 */
void camp_plan_power_on(struct bctx *b)
{
	b->plan->cut[0] = 0;
	plan_kind(b);
	if (!io_plan(b) || !(b->relay_caps & RELAY_CAP_EXACT_CUT) || b->cycle > b->c->cycles ||
	    camp_no_off(b))
		return;
	snprintf(b->plan->cut, sizeof(b->plan->cut), "%s:%" PRIu32 ":%" PRIu32, config_cut_name(b->plan->kind),
		 plan_pick(b), b->cfg->cut_delay_us);
}

void camp_start_work(struct bctx *b)
{
	struct camp *c = b->c;
	struct engine_board_state es;
	struct pc_work w = { 0 };
	json_object *msg, *ev;

	engine_board_state(c->eng, b->cfg->name, &es);
	plan_kind(b);
	w.cycle = b->cycle;
	w.first = es.next_seq;
	w.n = b->cfg->records_per_cycle;
	w.mode = b->cfg->modes[(b->cycle - 1) % b->cfg->nmodes];
	w.pattern = b->cfg->pattern;
	w.record_size = b->cfg->record_size;
	w.flush_every = b->cfg->flush_every;
	w.qd = b->cfg->queue_depth;
	w.seed = plan_rand(b, 2) & INT64_MAX;
	/* the agent announces the plan's I/O only when asked: other runs are not slowed */
	w.announce = b->plan->kind == CUT_FLUSH ? PC_IO_FLUSH : b->plan->kind == CUT_FUA ? PC_IO_FUA : 0;
	msg = pc_msg_work(&w);
	ev = camp_ev_new(b, PC_EV_WORK);
	json_object_object_add(ev, "work", json_object_get(msg));
	{
		json_object *pol = json_object_new_object();
		json_object_object_add(pol, "torn_unacked", json_object_new_string(
			b->cfg->torn_violation[w.mode] ? "violation" : "allowed"));
		json_object_object_add(pol, "torn_sector_unacked", json_object_new_string(
			b->cfg->torn_sector_violation[w.mode] ? "violation" : "allowed"));
		json_object_object_add(pol, "unclassified", json_object_new_string(
			b->cfg->unclassified_violation[w.mode] ? "violation" : "allowed"));
		json_object_object_add(ev, "policy", pol);
	}
	if (camp_ev_log(b, ev)) {
		/* the results failed (the campaign stops): no writes that are not on record */
		json_object_put(msg);
		return;
	}
	b->plan->acks = 0;
	b->plan->done_seen = 0;
	b->plan->t_work = pc_now_ms();
	b->plan->cut_at = UINT64_MAX;
	b->plan->cut_acks = UINT32_MAX;
	b->plan->cut_nth = 0;
	b->plan->io_seen = 0;
	b->plan->io_fired = 0;
	b->plan->io_seq = 0;
	b->plan->t_io_us = 0;
	b->plan->cut_due_us = 0;
	/* the relay was told at power-on: the board cuts itself at the nth */
	b->plan->exact = io_plan(b) && b->plan->cut[0];
	if (b->plan->kind == CUT_RANDOM)
		b->plan->cut_at = b->plan->t_work + plan_pick(b);
	else if (b->plan->kind == CUT_ACKS)
		b->plan->cut_acks = plan_pick(b);
	else
		b->plan->cut_nth = plan_pick(b);
	if (link_board_send(b->link, msg)) {
		json_object_put(msg);
		camp_infra(b, "sending the work failed: %s", link_board_strerror(b->link, errno));
		return;
	}
	json_object_put(msg);
	camp_set_state(b, B_WRITING, b->cfg->work_timeout_ms);
}

/* An ACK range while writing: the acks plan cuts at its count. */
void camp_on_ack(struct bctx *b, uint32_t n)
{
	b->plan->acks += n;
	if (b->plan->acks >= b->plan->cut_acks)
		camp_cut(b, pc_trigger_names[PC_CUT_ACKS]);
}

/* The agent's DONE: nothing more will happen, so the cut comes now rather
 * than at its instant. */
void camp_on_done(struct bctx *b)
{
	b->plan->done_seen = 1;
	camp_cut(b, pc_trigger_names[PC_CUT_WORK_DONE]);
}

uint64_t camp_cut_wake(const struct bctx *b)
{
	return b->plan->cut_at;
}

/*
 * An announcement (IO) while writing: at the plan's nth flush or FUA write
 * the cut comes, at once or cut_delay_us later. A board that cuts itself
 * there (the sim) has already done so, or is about to: the harness only
 * notes it and waits for its link to drop.
 */
void camp_on_io(struct bctx *b, const struct pc_msg *m)
{
	unsigned want = b->plan->kind == CUT_FLUSH ? PC_IO_FLUSH : b->plan->kind == CUT_FUA ? PC_IO_FUA : 0;

	if (!b->plan->cut_nth || b->plan->io_fired || m->u.io.op != want || ++b->plan->io_seen < b->plan->cut_nth)
		return;
	b->plan->io_fired = 1;
	b->plan->io_seq = m->u.io.seq;
	b->plan->t_io_us = pc_now_us();
	if (b->plan->exact)
		return;
	if (!b->cfg->cut_delay_us) {
		camp_cut(b, config_cut_name(b->plan->kind));
		return;
	}
	/* the poll loop wakes at the millisecond; camp_cut_due waits out the rest */
	b->plan->cut_due_us = b->plan->t_io_us + b->cfg->cut_delay_us;
	b->plan->cut_at = b->plan->cut_due_us / 1000;
}

/* The cut's instant (cut_at) came: a random instant, or a delayed I/O plan. */
void camp_cut_due(struct bctx *b)
{
	uint64_t now;

	if (!b->plan->cut_due_us) {
		camp_cut(b, pc_trigger_names[PC_CUT_RANDOM]);
		return;
	}
	now = pc_now_us();
	if (now < b->plan->cut_due_us && b->plan->cut_due_us - now <= 1000)
		pc_sleep_us((uint32_t)(b->plan->cut_due_us - now));
	camp_cut(b, config_cut_name(b->plan->kind));
}

/* The power is off (or the board is crashing): record it and drain the link. */
static void cut_done(struct bctx *b, uint64_t now, uint64_t t_off, const char *why, const char *how)
{
	json_object *ev = camp_ev_new(b, PC_EV_CUT);
	int exact = 0;

	/* the sim cut itself at the planned I/O: its link dropped */
	if (b->plan->exact && b->plan->io_fired && !strcmp(why, pc_trigger_names[PC_CUT_LINK_LOST])) {
		why = pc_trigger_names[PC_CUT_SIM_EXACT];
		exact = 1;
	}
	json_object_object_add(ev, "plan", json_object_new_string(config_cut_name(b->plan->kind)));
	/* when the harness decided to cut, since the work was sent */
	json_object_object_add(ev, "at_ms", json_object_new_int64((int64_t)(now - b->plan->t_work)));
	if (!how && !exact) {
		/* how long the relay took, from that decision to the driver
		 * reporting the switch: the power went at at_ms + relay_us */
		json_object_object_add(ev, "relay_us", json_object_new_int64(
			t_off > b->plan->cut_req_us ? (int64_t)(t_off - b->plan->cut_req_us) : 0));
		/* the cut's instant: when the driver reported the switch */
		json_object_object_add(ev, "power_off_ms", json_object_new_int64((int64_t)(t_off / 1000 - b->plan->t_work)));
		/* a random instant: how late against it */
		if (!strcmp(why, pc_trigger_names[PC_CUT_RANDOM]) && b->plan->cut_at != UINT64_MAX && !b->plan->io_fired)
			json_object_object_add(ev, "late_us", json_object_new_int64(
				t_off > b->plan->cut_at * 1000 ? (int64_t)(t_off - b->plan->cut_at * 1000) : 0));
	}
	json_object_object_add(ev, "acks_before_cut", json_object_new_int64(b->plan->acks));
	json_object_object_add(ev, "trigger", json_object_new_string(why));
	if (b->plan->cut_nth) {
		json_object_object_add(ev, "nth", json_object_new_int64(b->plan->cut_nth));
		json_object_object_add(ev, "delay_us", json_object_new_int64(b->cfg->cut_delay_us));
	}
	if (b->plan->io_fired) {
		/* the announcement the plan fired on, and how late the power went
		 * against it: from its arrival (and the delay) to the relay's off
		 * returning (the read-back after it is not counted) */
		json_object *io = json_object_new_object();
		uint64_t due = b->plan->t_io_us + b->cfg->cut_delay_us;

		json_object_object_add(io, "op", json_object_new_string(config_cut_name(b->plan->kind)));
		json_object_object_add(io, "seq", json_object_new_uint64(b->plan->io_seq));
		json_object_object_add(ev, "io", io);
		if (exact)
			json_object_object_add(ev, "late_us", json_object_new_int64(0));
		else if (!strcmp(why, config_cut_name(b->plan->kind)))
			json_object_object_add(ev, "late_us", json_object_new_int64(t_off > due ? (int64_t)(t_off - due) : 0));
	}
	if (how)
		json_object_object_add(ev, "how", json_object_new_string(how));
	camp_ev_log(b, ev);
	camp_set_state(b, B_DRAIN, DRAIN_MS);
}

void camp_cut(struct bctx *b, const char *why)
{
	uint64_t now = pc_now_ms();
	int ret;

	if (camp_no_off(b)) {
		/* not a power cut: the agent reboots the board without syncing,
		 * and the device keeps its power */
		json_object *m = pc_msg_new(PC_MSG_CRASH);

		ret = link_board_send(b->link, m);
		json_object_put(m);
		if (ret) {
			camp_infra(b, "sending the crash request failed: %s", link_board_strerror(b->link, ret));
			return;
		}
		cut_done(b, now, pc_now_us(), why, "sysrq crash (device keeps power)");
		return;
	}
	/* the relay's worker switches off and reads back (up to 200 ms) that
	 * the power is off; the loop goes on (the other boards' cuts, this
	 * board's last lines) and takes its answer in camp_cut_switched */
	b->plan->cut_why = why;
	b->plan->cut_now_ms = now;
	b->plan->cut_req_us = pc_now_us();
	ret = relay_worker_send(&b->rw, RELAY_OP_CUT, 0, NULL, NULL, &b->plan->cut_seq);
	if (ret) {
		camp_infra(b, "the cut could not be asked of the relay's worker: %s", strerror(-ret));
		return;
	}
	camp_set_state(b, B_CUTTING, UINT64_MAX);
}

/* The relay's worker switched the power off for the cut (or could not). */
void camp_cut_switched(struct bctx *b, const struct relay_rep *rep)
{
	if (rep->seq != b->plan->cut_seq)
		return;	/* not this cut's answer */
	if (rep->ret < 0) {
		camp_infra(b, "relay off failed at the cut: %s", rep->err);
		return;
	}
	cut_done(b, b->plan->cut_now_ms, rep->t_switch_us, b->plan->cut_why, NULL);
	/* the agent's link dropped while the relay switched: nothing to drain */
	if (b->st == B_DRAIN && !link_board_connected(b->link) && !b->cfg->link_serial)
		camp_next_cycle(b);
}

/*
 * What to scan at this boot: the whole region for the baseline, every
 * full_every cycles and at the final verification; otherwise the slots the
 * pending cycle wrote plus a seeded sample of cold ones.
 */
json_object *camp_verify_request(struct bctx *b)
{
	struct engine_board_state es;
	struct pc_posrange r[PC_PROTO_MAX_RANGES];
	uint32_t nr = 0, n, hot0, hotn, want;
	uint8_t *taken;
	json_object *msg;
	uint64_t rnd;

	engine_board_state(b->c->eng, b->cfg->name, &es);
	n = es.nslots;
	if (!es.baseline || !es.pending || b->cycle > b->c->cycles || b->cfg->full_every <= 1 ||
	    b->cycle % b->cfg->full_every == 0 || !n || es.pending_pattern != b->cfg->pattern)
		return pc_msg_verify(b->cfg->pattern, 1);
	/* the pending cycle's seqs are consecutive positions, wrapping once at most */
	hot0 = (uint32_t)((es.pending_first - 1) % n);
	hotn = es.pending_n < n ? es.pending_n : n;
	r[nr++] = (struct pc_posrange){ hot0, hot0 + hotn <= n ? hotn : n - hot0 };
	if (hot0 + hotn > n)
		r[nr++] = (struct pc_posrange){ 0, hot0 + hotn - n };
	taken = calloc(n, 1);
	if (!taken)
		return pc_msg_verify(b->cfg->pattern, 1);
	for (uint32_t i = 0; i < nr; i++)
		memset(taken + r[i].pos, 1, r[i].n);
	want = b->cfg->cold_sample < n - hotn ? b->cfg->cold_sample : n - hotn;
	rnd = plan_rand(b, 3);
	for (uint32_t k = 0; k < want && nr < PC_PROTO_MAX_RANGES; k++) {
		uint32_t p;
		do {
			rnd = pc_mix64(rnd);
			p = (uint32_t)(rnd % n);
		} while (taken[p]);
		taken[p] = 1;
		r[nr++] = (struct pc_posrange){ p, 1 };
	}
	free(taken);
	msg = pc_msg_verify_ranges(b->cfg->pattern, r, nr);
	return msg ? msg : pc_msg_verify(b->cfg->pattern, 1);
}

/*
 * Tell the agent which damage the engine already holds (KNOWN lines before
 * VERIFY): each damaged slot by the digest of its sectors, so a slot found
 * exactly so is reported by number alone, and each damaged sector by its
 * crc32c, so the scan's raw budget goes to damage not seen before. The
 * number of entries sent, or -1 (errno) when sending failed.
 */
int camp_send_known(struct bctx *b)
{
	struct pc_known *k = malloc(PC_PROTO_MAX_KNOWN * sizeof(*k));
	struct pc_known_slot *ks = malloc(PC_PROTO_MAX_KNOWN_SLOTS * sizeof(*ks));
	uint32_t n = 0, ns = 0;
	int ret = 0;

	if (k)
		n = engine_board_known(b->c->eng, b->cfg->name, k, PC_PROTO_MAX_KNOWN);
	if (ks)
		ns = engine_board_known_slots(b->c->eng, b->cfg->name, ks, PC_PROTO_MAX_KNOWN_SLOTS);
	/* without them the agent sends old damage again, as before */
	for (uint32_t sent = 0; sent < ns && !ret;) {
		uint32_t take = ns - sent < PC_PROTO_KNOWN_SLOTS_PER_LINE ? ns - sent : PC_PROTO_KNOWN_SLOTS_PER_LINE;
		json_object *msg = pc_msg_known_slots(ks + sent, take);

		ret = !msg || link_board_send(b->link, msg) ? -1 : 0;
		json_object_put(msg);
		sent += take;
	}
	for (uint32_t sent = 0; sent < n && !ret;) {
		uint32_t take = n - sent < PC_PROTO_KNOWN_PER_LINE ? n - sent : PC_PROTO_KNOWN_PER_LINE;
		json_object *msg = pc_msg_known(k + sent, take);

		ret = !msg || link_board_send(b->link, msg) ? -1 : 0;
		json_object_put(msg);
		sent += take;
	}
	free(k);
	free(ks);
	if (ret && !errno)
		errno = ENOMEM;
	return ret ? -1 : (int)(n + ns);
}

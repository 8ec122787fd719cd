/*
 * campaign_stop.c - when a board, or the whole campaign, stops before its
 * cycles are run (campaign_stop.h; docs/config.md "When a campaign stops").
 *
 * A board stopped by a rule has its run_end written at once (end: the rule,
 * cycles: the cycle it stopped at, reason), so that status shows it while the
 * other boards run and the report counts no cycle as missing. Every decision
 * is on record where replay needs it: a dead device is the boot_fail event's
 * "dead_device" (the engine copies it into the verdict); the other rules
 * decide nothing about a verdict.
 *
 * Its layer: just above the primitives (campaign_core.c), whose events,
 * state and power off it uses; everything above calls it (the tallies in
 * campaign_resume.c, the boot judged in campaign_setup.c, the state machine
 * in campaign.c, the run in campaign_run.c).
 */
#include "harness/campaign/config.h"
#include "harness/campaign/campaign_daemon.h"
#include "harness/campaign/campaign_core.h"
#include "harness/campaign/campaign_stop.h"
#include "harness/campaign/campaign_stop.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "common/util.h"
#include "harness/report/qualify.h"

/* (end and replayed hold enum pc_run_end + 1: a zeroed board has none) */
#define STOP_NONE 0

/* "256M", "1.5G": for messages */
static const char *bytes_text(uint64_t v, char *buf, size_t len)
{
	static const char sfx[] = "KMGT";
	double d = (double)v;
	int i = -1;

	while (d >= 1024 && i < 3) {
		d /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%" PRIu64 " bytes", v);
	else
		snprintf(buf, len, "%.*f%c", d < 10 ? 1 : 0, d, sfx[i]);
	return buf;
}

void camp_stop_count(struct bctx *b, const struct pc_verdict *v)
{
	if (v->outcome == PC_OUT_BOOT_FAIL)
		b->stop.boot_streak++;
	else if (v->outcome == PC_OUT_PASS || v->outcome == PC_OUT_FAIL)
		b->stop.boot_streak = 0;	/* it booted: INFRA_ERROR says neither */
	if (v->mode > 0 && v->mode < PC_MODE_MAX &&
	    pc_cut_counts(v->outcome, v->counts[PC_CLS_NOT_WRITTEN], v->counts[PC_CLS_TORN],
			  v->counts[PC_CLS_TORN_SECTOR])) {
		b->stop.cuts[v->mode]++;
		b->stop.fails[v->mode] += v->outcome == PC_OUT_FAIL;
	}
}

unsigned camp_stop_dead(const struct bctx *b)
{
	unsigned n = b->cfg->stop_boot_fails;

	return n && b->stop.boot_streak + 1 >= n ? b->stop.boot_streak + 1 : 0;
}

/* Stop the board by rule end at cycle, its run_end written now. */
static void stop_board(struct bctx *b, enum pc_run_end end, unsigned cycle, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void stop_board(struct bctx *b, enum pc_run_end end, unsigned cycle, const char *fmt, ...)
{
	json_object *ev = camp_ev_new(b, PC_EV_RUN_END);
	char why[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (cycle > b->c->cycles)
		cycle = b->c->cycles;
	json_object_object_add(ev, "cycle", json_object_new_int64(cycle));
	json_object_object_add(ev, "cycles", json_object_new_int64(cycle));
	json_object_object_add(ev, "end", json_object_new_string(pc_run_end_names[end]));
	json_object_object_add(ev, "reason", json_object_new_string(why));
	camp_ev_log(b, ev);
	camp_results_check(b->c, results_sync(&b->c->res));
	pc_warn("board %s: stopped at cycle %u: %s", b->cfg->name, cycle, why);
	b->stop.end = (int)end + 1;
	b->stop.run_ended = 1;
	/* a link still open (camp_stop_due's caller) is closed by the caller:
	 * this file calls only the primitives (campaign_core.c) */
	camp_power_off(b);
	camp_set_state(b, B_DONE, UINT64_MAX);
}

void camp_stop_dead_board(struct bctx *b, unsigned n)
{
	json_object *ev = camp_ev_new(b, PC_EV_FINAL_BOOT_FAIL);
	char why[256];

	/* the writes of its last cycle that booted are never verified: the
	 * verdict a final verification that never came gives them */
	snprintf(why, sizeof(why), "the device is dead (%u BOOT_FAILs in a row): the writes of its last cycle that "
		 "booted are never verified", n);
	json_object_object_add(ev, "reason", json_object_new_string(why));
	camp_ev_log(b, ev);
	stop_board(b, PC_END_DEAD_DEVICE, b->cycle, "the device is dead: %u BOOT_FAILs in a row (stop.boot_fails %u); "
		   "no more boot timeouts are spent on it", n, b->cfg->stop_boot_fails);
}

/* Does every mode of the board show its rate below the target? text: how
 * each stands ("fua 0.18 after 12 cuts, 0 FAIL; ..."). */
static int target_met(const struct bctx *b, char *text, size_t len)
{
	const struct campaign_cfg *cfg = b->c->cfg;
	uint8_t done[PC_MODE_MAX] = { 0 };
	size_t l = 0;
	int met = 1;

	text[0] = 0;
	if (cfg->target_rate <= 0)
		return 0;
	for (unsigned i = 0; i < b->cfg->nmodes; i++) {
		int m = b->cfg->modes[i];
		double u;

		if (m <= 0 || m >= PC_MODE_MAX || done[m])
			continue;
		done[m] = 1;
		u = qual_upper(b->stop.fails[m], b->stop.cuts[m], cfg->target_confidence);
		if (u < 0 || u > cfg->target_rate)
			met = 0;
		if (l < len)
			l += (size_t)snprintf(text + l, len - l, "%s%s %.3g after %" PRIu64 " cuts, %" PRIu64 " FAIL",
					      l ? "; " : "", pc_mode_name((enum pc_mode)m), u, b->stop.cuts[m],
					      b->stop.fails[m]);
	}
	return met;
}

/* Which rule holds for the board now, or -1; why in words. */
static int rule_holds(const struct bctx *b, int at_start, char *why, size_t len)
{
	char t[512];

	if (at_start && b->stop.replayed == PC_END_DEAD_DEVICE + 1 && b->cfg->stop_boot_fails) {
		snprintf(why, len, "the device is dead: an earlier run stopped it there (stop.boot_fails %u)",
			 b->cfg->stop_boot_fails);
		return PC_END_DEAD_DEVICE;
	}
	if (b->cfg->stop_on_fail && b->tally.fail) {
		snprintf(why, len, "a screening run (stop.on_fail \"stop\") ends at its first FAIL (%u FAIL verdict%s)",
			 b->tally.fail, b->tally.fail == 1 ? "" : "s");
		return PC_END_FIRST_FAIL;
	}
	if (target_met(b, t, sizeof(t))) {
		snprintf(why, len, "the target is met: every mode below %g at %g%% (%s)", b->c->cfg->target_rate,
			 b->c->cfg->target_confidence * 100, t);
		return PC_END_TARGET_MET;
	}
	return -1;
}

int camp_stop_due(struct bctx *b)
{
	char why[700];
	int end = rule_holds(b, 0, why, sizeof(why));

	if (end < 0)
		return 0;
	/* the boot's scan judged the last cycle: the board stops before it
	 * writes again, the last cycle with a verdict is where it stopped */
	stop_board(b, (enum pc_run_end)end, b->cycle - 1, "%s", why);
	return 1;
}

int camp_stop_at_start(struct bctx *b)
{
	char why[700];
	int end = rule_holds(b, 1, why, sizeof(why));

	if (end < 0)
		return 0;
	if (b->stop.replayed == end + 1) {
		/* as the last run left it: its run_end says so already */
		b->stop.end = end + 1;
		b->stop.run_ended = 1;
		camp_set_state(b, B_DONE, UINT64_MAX);
		pc_info("board %s: stays stopped: %s", b->cfg->name, why);
		return 1;
	}
	stop_board(b, (enum pc_run_end)end, b->cycle - 1, "%s", why);
	return 1;
}

void camp_stop_replayed(struct bctx *b, json_object *ev)
{
	json_object *k, *e;

	if (!json_object_object_get_ex(ev, "ev", &k) || strcmp(json_object_get_string(k), pc_ev_names[PC_EV_RUN_END]))
		return;
	b->stop.replayed = json_object_object_get_ex(ev, "end", &e) ?
		pc_run_end_from_name(json_object_get_string(e)) + 1 : STOP_NONE;
}

const char *camp_stop_end_name(const struct bctx *b)
{
	if (b->stop.end != STOP_NONE)
		return pc_run_end_names[b->stop.end - 1];
	if (b->given_up[0])
		return pc_run_end_names[PC_END_GIVEN_UP];
	if (b->st == B_DONE)
		return pc_run_end_names[PC_END_FINISHED];
	if (b->c->disk.below)
		return pc_run_end_names[PC_END_DISK_FLOOR];
	return pc_run_end_names[PC_END_INTERRUPTED];
}

int camp_disk_low(struct camp *c, int force)
{
	uint64_t now = pc_now_ms(), floor = c->cfg->min_free;
	struct statvfs sv;
	char f[32], fl[32];

	if (c->disk.below)
		return 1;
	if (!floor || (!force && now < c->disk.next_ms))
		return 0;
	c->disk.next_ms = now + 1000;
	/* the local results folder: one call a second; a filesystem that cannot
	 * say is left to the full-disk handling of every write */
	if (statvfs(c->res.dir, &sv) != 0)
		return 0;
	c->disk.free = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (c->disk.free >= floor)
		return 0;
	c->disk.below = 1;
	pc_err("%s: its filesystem has %s free, below results_min_free (%s): the campaign stops here, as on a full "
	       "disk but before one; every verdict so far is on disk. Free space (or lower results_min_free), then "
	       "run the same command to resume", c->res.dir, bytes_text(c->disk.free, f, sizeof(f)),
	       bytes_text(floor, fl, sizeof(fl)));
	return 1;
}

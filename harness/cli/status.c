/*
 * status.c - `powercut status DIR [--json]`: whether a run holds a results
 * folder, when it last appended an event, and per board the cycle, the
 * state, the verdict counts, the last FAIL and an ETA (status.h). This file
 * says what it all means and prints it; status_read.c reads the folder into
 * the run's struct st_ctx (status_model.h, status_read.h), status_scan.c
 * holds the scanner and the board states (status.h).
 *
 * What is read, and how much:
 *   lock            results_lock_probe() (a shared flock held for an instant)
 *   campaign.json   at most 16 MB, in a buffer of its size, through the
 *                   scanner: the campaign, cycles, board names (at most 256)
 *   verdicts.jsonl  every line, through the scanner (board, cycle, verdict);
 *                   each board's last FAIL line is read again for its classes.
 *                   The file is read whole, however long (its lines are
 *                   counted, never kept: time, not memory)
 *   events.jsonl    its tail only: 8 MB, then 32, 128, 256 MB at most while
 *                   a configured board has no event in what was read. Each
 *                   line through the scanner (t, board, cycle, ev, msg.type,
 *                   power_on's and run_end's cycles, run_end's end); the
 *                   whole file is never parsed
 * A torn last line (no newline yet: a run is writing it) is never read.
 * The sizes are status_limits_default's; the buffers grow to them as lines
 * need. Every number read is bounded before it counts or sizes anything
 * (cycles by ENGINE_MAX_CYCLE and CFG_MAX_CYCLES, times by ENGINE_MAX_T, an
 * ETA by a million hours, a file's mtime by ST_TIME_MAX).
 */
#include "harness/cli/status.h"
#include "harness/cli/status_model.h"
#include "harness/cli/status_read.h"
#include "harness/cli/status_scan.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/record.h"
#include "common/util.h"
#include "harness/campaign/progress.h"
#include "harness/report/qualify.h"
#include "harness/results/results.h"
#include "harness/results/verdict.h"

/* No ETA means anything past a million hours (and a double past INT64_MAX
 * must not be converted to an integer) */
#define ST_ETA_MAX	PROGRESS_ETA_MAX

const struct status_limits status_limits_default = {
	.line_max = 1u << 20,		/* a longer line is seen as its first MB */
	.chunk = 1u << 20,		/* one read */
	.tail_first = 8u << 20,		/* events.jsonl: the tail read first, */
	.tail_max = 256u << 20,		/* growing 4x to at most this */
	.campaign_max = 16u << 20,	/* campaign.json */
};

static void local_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S %z", &tm))
		snprintf(buf, len, "%" PRId64 " (epoch seconds)", t);
}

static void utc_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%" PRId64, t);
}

/* ---- what it all says ---- */

/* A board that stopped by a rule before its plan (its last run_end says which). */
static int stopped_by_rule(const struct st_evs *e)
{
	return e->end - 1 == PC_END_DEAD_DEVICE || e->end - 1 == PC_END_FIRST_FAIL || e->end - 1 == PC_END_TARGET_MET;
}

static const char *stop_text(int end)
{
	switch (end) {
	case PC_END_DEAD_DEVICE: return "stopped: the device is dead (stop.boot_fails BOOT_FAILs in a row)";
	case PC_END_FIRST_FAIL: return "stopped at its first FAIL (stop.on_fail)";
	case PC_END_TARGET_MET: return "stopped: the target is met";
	case PC_END_DISK_FLOOR: return "stopped: the results filesystem reached results_min_free";
	default: return NULL;
	}
}

/* The results filesystem: free bytes (statvfs on the folder: local, one
 * call), and how fast events.jsonl grew over its tail, per second of the
 * campaign's clock. */
struct st_disk {
	int have_free;
	uint64_t free, total;
	double rate;		/* bytes/s, < 0 unknown */
	double floor_s;		/* seconds to the floor at that rate, < 0 unknown */
};

static void disk_read(const struct st_ctx *x, struct st_disk *d)
{
	struct statvfs sv;

	d->have_free = statvfs(x->dir, &sv) == 0;
	d->free = d->have_free ? (uint64_t)sv.f_bavail * sv.f_frsize : 0;
	d->total = d->have_free ? (uint64_t)sv.f_blocks * sv.f_frsize : 0;
	d->rate = d->floor_s = -1;
	if (x->rate_t_set && x->rate_t1 - x->rate_t0 >= 1000 && x->ev_size > x->rate_off)
		d->rate = (double)(x->ev_size - x->rate_off) * 1000.0 / (double)(x->rate_t1 - x->rate_t0);
	if (d->have_free && d->rate > 0)
		d->floor_s = d->free > x->min_free ? (double)(d->free - x->min_free) / d->rate : 0;
	if (d->floor_s > ST_ETA_MAX)
		d->floor_s = ST_ETA_MAX;
}

/* "1.5G", "320K", "12 bytes" */
static const char *size_text(double v, char *buf, size_t len)
{
	static const char sfx[] = "KMGTP";
	int i = -1;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%.0f bytes", v);
	else
		snprintf(buf, len, "%.*f%c", v < 10 ? 1 : 0, v, sfx[i]);
	return buf;
}

/* Towards the target, per configured mode of a board: its bound now, the
 * cuts it needs in all (with the FAILs seen so far; 0: out of reach). */
struct st_goal {
	int mode;
	uint64_t cuts, fails, need;
	double bound;
	int met;
};

static unsigned board_goals(const struct st_ctx *x, const struct st_board *b, struct st_goal *g)
{
	unsigned n = 0;

	for (int m = 1; m < PC_MODE_MAX; m++) {
		if (!b->mode_on[m] && !b->cuts[m])
			continue;
		g[n].mode = m;
		g[n].cuts = b->cuts[m];
		g[n].fails = b->fails[m];
		g[n].bound = qual_upper(b->fails[m], b->cuts[m], x->target_conf);
		g[n].need = qual_cuts_needed(b->fails[m], x->target_rate, x->target_conf);
		g[n].met = g[n].bound >= 0 && g[n].bound <= x->target_rate;
		n++;
	}
	return n;
}

enum st_run { RUN_RUNNING, RUN_KILLED, RUN_STOPPED, RUN_FINISHED, RUN_NOT_RUNNING, RUN_UNKNOWN };
static const char *const run_keys[] = { "running", "killed", "stopped", "finished", "not_running", "unknown" };

static void derive(struct st_ctx *x, int running)
{
	for (unsigned i = 0; i < x->nb; i++) {
		struct st_board *b = &x->b[i];
		struct st_evs *e = &b->ev;
		unsigned plan = x->cycles, left;

		/* the plan: the one the last power-on's run said (--cycles), else
		 * the configuration's or the last run_end's (older runs said it only
		 * when they ended), grown by what was worked on or judged since */
		if (e->run_plan)
			plan = e->run_plan;
		else if (e->plan > plan)
			plan = e->plan;
		/* stopped by a rule: its run_end's cycles are where it stopped */
		if (stopped_by_rule(e) && e->plan)
			plan = e->plan;
		if (e->work > plan)
			plan = e->work;
		if (b->last_verdict > plan)
			plan = b->last_verdict;
		b->plan = plan;
		b->cycle = e->seen ? e->cycle : b->last_verdict + (b->last_verdict < plan);
		b->state = e->seen ? e->state : x->ev_from == 0 ? ST_OFF : ST_UNKNOWN;
		/* every cycle judged, and past the last one: its final verification is done */
		if (b->state != ST_GIVEN_UP && b->last_verdict >= plan && (b->cycle > plan || !e->seen))
			b->state = ST_DONE;
		if (b->state == ST_DONE)
			b->cycle = plan;
		else if (b->cycle > plan)
			b->cycle = plan;	/* the final verification of the last cycle */
		if (e->starts >= 2 && e->c1 > e->c0 && e->t1 >= e->t0)
			b->cycle_ms = (double)(e->t1 - e->t0) / (double)(e->c1 - e->c0);
		left = plan - (b->cycle ? b->cycle : 1) + 1;
		if (b->state == ST_DONE)
			b->eta_s = 0;
		else if (running && b->state != ST_GIVEN_UP && b->cycle_ms >= 0)
			b->eta_s = b->cycle_ms * left / 1000.0 > ST_ETA_MAX ? ST_ETA_MAX : b->cycle_ms * left / 1000.0;
	}
}

static int all_done(const struct st_ctx *x)
{
	for (unsigned i = 0; i < x->nb; i++)
		if (x->b[i].state != ST_DONE && x->b[i].state != ST_GIVEN_UP)
			return 0;
	return 1;
}

/* Is the run the lock names alive? 1, 0 (gone), -1 (cannot tell: another host). */
static int pid_alive(const struct results_lock_info *li)
{
	char host[256] = "";

	if (!li->known || gethostname(host, sizeof(host) - 1) || strcmp(host, li->host))
		return -1;
	return kill((pid_t)li->pid, 0) == 0 || errno == EPERM;
}

static enum st_run run_state(const struct st_ctx *x, const struct results_lock_info *li, int alive)
{
	switch (li->state) {
	case RESULTS_LOCK_HELD:
		return alive == 0 ? RUN_KILLED : RUN_RUNNING;
	case RESULTS_LOCK_FREE:
		if (li->known && !li->ended)
			return RUN_KILLED;
		if (all_done(x))
			return RUN_FINISHED;
		return li->known ? RUN_STOPPED : RUN_NOT_RUNNING;
	case RESULTS_LOCK_NONE:
		return all_done(x) ? RUN_FINISHED : RUN_NOT_RUNNING;
	default:
		return RUN_UNKNOWN;
	}
}

static void eta_text(const struct st_board *b, char *buf, size_t len)
{
	if (b->state == ST_DONE)
		snprintf(buf, len, "done");
	else
		progress_hmm(b->eta_s, buf, len);
}

/* the first line: whether a run holds the folder, and since when */
static void text_run(const struct st_ctx *x, const struct results_lock_info *li, enum st_run run, int alive)
{
	char t0[64], t1[64];

	local_time(li->started, t0, sizeof(t0));
	local_time(li->ended, t1, sizeof(t1));
	fprintf(x->out, "campaign %s: ", x->campaign);
	switch (run) {
	case RUN_RUNNING:
		if (li->known)
			fprintf(x->out, "running (pid %ld on %s since %s)\n", li->pid, li->host, t0);
		else
			fprintf(x->out, "running (a process holds the lock; its lock file names no pid)\n");
		break;
	case RUN_KILLED:
		if (alive == 0 && li->state == RESULTS_LOCK_HELD)
			fprintf(x->out, "not running: the last run was killed (pid %ld on %s, started %s, is gone; a process it "
			       "started still holds the lock)\n", li->pid, li->host, t0);
		else
			fprintf(x->out, "not running: the last run was killed (pid %ld on %s, started %s: it never closed the "
			       "folder); the same powercut run command resumes it\n", li->pid, li->host, t0);
		break;
	case RUN_STOPPED:
		fprintf(x->out, "not running: the last run (pid %ld on %s) stopped with cycles left (ended %s); the same "
		       "powercut run command resumes it\n", li->pid, li->host, t1);
		break;
	case RUN_FINISHED: {
		const char *rule = "";

		for (unsigned i = 0; i < x->nb; i++)
			if (stopped_by_rule(&x->b[i].ev))
				rule = " or stopped by its rule";
		if (li->known && li->ended)
			fprintf(x->out, "finished: every board ran its cycles%s (the last run ended %s)\n", rule, t1);
		else
			fprintf(x->out, "finished: every board ran its cycles%s\n", rule);
		break;
	}
	case RUN_NOT_RUNNING:
		fprintf(x->out, "not running\n");
		break;
	default:
		fprintf(x->out, "unknown whether a run holds the folder: %s\n", li->err);
		break;
	}
}

/* events.jsonl: how fresh and how many (about, when only its tail was read) */
static uint64_t events_total(const struct st_ctx *x)
{
	return x->ev_from ? (uint64_t)((double)x->ev_lines * (double)x->ev_size / (double)(x->ev_size - x->ev_from))
			  : x->ev_lines;
}

/* the last event, the counts, and the room left on the results filesystem */
static void text_events(const struct st_ctx *x)
{
	struct st_disk d;
	char t0[64], f[32], fl[32], r[32], fe[32];
	int64_t age = (int64_t)time(NULL) - x->ev_mtime;

	if (x->ev_size) {
		local_time(x->ev_mtime, t0, sizeof(t0));
		fprintf(x->out, "last event appended %s (%" PRId64 " s ago); %s%" PRIu64 " events, %" PRIu64 " verdicts\n", t0,
		       age > 0 ? age : 0, x->ev_from ? "about " : "", events_total(x), x->v_lines);
	} else {
		fprintf(x->out, "no event yet; 0 events, %" PRIu64 " verdicts\n", x->v_lines);
	}
	disk_read(x, &d);
	if (d.have_free) {
		fprintf(x->out, "results filesystem: %s free (floor %s, results_min_free)", size_text((double)d.free, f, sizeof(f)),
			size_text((double)x->min_free, fl, sizeof(fl)));
		if (d.rate >= 0) {
			progress_hmm(d.floor_s, fe, sizeof(fe));
			fprintf(x->out, "; events.jsonl grows %s/min while a run writes it, the floor in %s at that pace",
				size_text(d.rate * 60, r, sizeof(r)), d.rate > 0 ? fe : "never");
		}
		fprintf(x->out, "\n");
	}
}

/* a board's line under its own: each mode's bound against the target */
static void text_target(const struct st_ctx *x, const struct st_board *b, int w)
{
	struct st_goal g[PC_MODE_MAX];
	unsigned n = board_goals(x, b, g);

	fprintf(x->out, "  %*s  target: below %g at %g%%:", w, "", x->target_rate, x->target_conf * 100);
	for (unsigned k = 0; k < n; k++) {
		fprintf(x->out, "%s %s %s %.3g after %" PRIu64 " cuts (%" PRIu64 " FAIL)", k ? ";" : "",
			pc_mode_name((enum pc_mode)g[k].mode), g[k].met ? "met," : "bound", g[k].bound,
			g[k].cuts, g[k].fails);
		if (!g[k].met && g[k].need)
			fprintf(x->out, ", %" PRIu64 " more", g[k].need > g[k].cuts ? g[k].need - g[k].cuts : 0);
		else if (!g[k].met)
			fprintf(x->out, ", out of reach");
	}
	fprintf(x->out, "%s\n", n ? "" : " no mode");
}

/* a board: its cycle, state, outcomes and ETA; its last FAIL, why it stopped (w: the name column) */
static void text_board(const struct st_ctx *x, const struct st_board *b, enum st_run run, int w)
{
	char eta[32];

	eta_text(b, eta, sizeof(eta));
	fprintf(x->out, "  %s:%*s cycle %u of %u, %s%s; ", b->name, w - (int)strlen(b->name), "", b->cycle, b->plan,
	       status_bstate_names[b->state],
	       run != RUN_RUNNING && b->state >= ST_BOOTING && b->state <= ST_WRITING ? " when the run stopped" : "");
	for (unsigned k = 0; k < PC_NOUTCOMES; k++)
		fprintf(x->out, "%s%s %" PRIu64, k ? ", " : "", pc_outcome_names[k], b->n[k]);
	fprintf(x->out, "; ETA %s", eta);
	if (b->cycle_ms >= 0 && b->state != ST_DONE)
		fprintf(x->out, " (%.1f s a cycle)", b->cycle_ms / 1000.0);
	fprintf(x->out, "\n");
	if (b->fail_cycle)
		fprintf(x->out, "  %*s  last FAIL: cycle %u (%s)%s%s\n", w, "", b->fail_cycle,
		       b->fail_what[0] ? b->fail_what : "no violation class recorded",
		       b->fail_time[0] ? ", at " : "", b->fail_time);
	if (stop_text(b->ev.end - 1))
		fprintf(x->out, "  %*s  %s\n", w, "", stop_text(b->ev.end - 1));
	if (x->target_rate > 0)
		text_target(x, b, w);
}

static void print_text(struct st_ctx *x, const struct results_lock_info *li, enum st_run run, int alive)
{
	int w = 0;

	text_run(x, li, run, alive);
	text_events(x);
	for (unsigned i = 0; i < x->nb; i++) {
		int l = (int)strlen(x->b[i].name);
		w = l > w ? l : w;
	}
	for (unsigned i = 0; i < x->nb; i++)
		text_board(x, &x->b[i], run, w);
}

static json_object *jstr_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static json_object *json_lock(const struct results_lock_info *li, int alive)
{
	static const char *const lock_keys[] = { "none", "held", "free", "unknown" };
	json_object *lock = json_object_new_object();
	char desc[768];

	results_lock_describe(li, desc, sizeof(desc));
	json_object_object_add(lock, "state", json_object_new_string(lock_keys[li->state]));
	json_object_object_add(lock, "pid", li->known ? json_object_new_int64(li->pid) : NULL);
	json_object_object_add(lock, "host", jstr_or_null(li->known ? li->host : NULL));
	json_object_object_add(lock, "started", li->known ? json_object_new_int64(li->started) : NULL);
	json_object_object_add(lock, "ended", li->known && li->ended ? json_object_new_int64(li->ended) : NULL);
	json_object_object_add(lock, "pid_alive", alive < 0 ? NULL : json_object_new_boolean(alive));
	json_object_object_add(lock, "text", json_object_new_string(desc));
	return lock;
}

/* last_event, events, events_exact, events_bytes, verdicts */
static void json_events(const struct st_ctx *x, json_object *doc)
{
	char buf[64];

	if (x->ev_size) {
		json_object *le = json_object_new_object();
		int64_t age = (int64_t)time(NULL) - x->ev_mtime;

		utc_time(x->ev_mtime, buf, sizeof(buf));
		json_object_object_add(le, "time", json_object_new_string(buf));
		json_object_object_add(le, "epoch", json_object_new_int64(x->ev_mtime));
		json_object_object_add(le, "age_s", json_object_new_int64(age > 0 ? age : 0));
		json_object_object_add(doc, "last_event", le);
	} else {
		json_object_object_add(doc, "last_event", NULL);
	}
	json_object_object_add(doc, "events", json_object_new_int64((int64_t)events_total(x)));
	json_object_object_add(doc, "events_exact", json_object_new_boolean(x->ev_from == 0));
	json_object_object_add(doc, "events_bytes", json_object_new_int64(x->ev_size));
	json_object_object_add(doc, "verdicts", json_object_new_int64((int64_t)x->v_lines));
}

/* disk (the room left) and target */
static void json_disk(const struct st_ctx *x, json_object *doc)
{
	struct st_disk d;
	json_object *dj = json_object_new_object(), *t;

	disk_read(x, &d);
	json_object_object_add(dj, "free_bytes", d.have_free ? json_object_new_int64((int64_t)d.free) : NULL);
	json_object_object_add(dj, "total_bytes", d.have_free ? json_object_new_int64((int64_t)d.total) : NULL);
	json_object_object_add(dj, "min_free_bytes", json_object_new_int64((int64_t)x->min_free));
	json_object_object_add(dj, "events_bytes_per_s", d.rate >= 0 ? json_object_new_double(d.rate) : NULL);
	json_object_object_add(dj, "floor_eta_s", d.floor_s >= 0 ? json_object_new_int64((int64_t)d.floor_s) : NULL);
	json_object_object_add(doc, "disk", dj);
	if (x->target_rate > 0) {
		t = json_object_new_object();
		json_object_object_add(t, "rate", json_object_new_double(x->target_rate));
		json_object_object_add(t, "confidence", json_object_new_double(x->target_conf));
		json_object_object_add(doc, "target", t);
	} else {
		json_object_object_add(doc, "target", NULL);
	}
}

/* a board's last FAIL: its cycle, the classes found, when */
static json_object *json_last_fail(const struct st_board *b)
{
	json_object *lf, *cls;

	if (!b->fail_cycle)
		return NULL;
	lf = json_object_new_object();
	cls = json_object_new_object();
	json_object_object_add(lf, "cycle", json_object_new_int64(b->fail_cycle));
	for (unsigned k = 0; k < PC_NCLASSES; k++)
		if (b->fail_cnt[k])
			json_object_object_add(cls, pc_class_names[k], json_object_new_int64(
				b->fail_cnt[k] > INT64_MAX ? INT64_MAX : (int64_t)b->fail_cnt[k]));
	json_object_object_add(lf, "classes", cls);
	json_object_object_add(lf, "time", jstr_or_null(b->fail_time[0] ? b->fail_time : NULL));
	return lf;
}

/* a board's bound per mode against the target */
static json_object *json_goals(const struct st_ctx *x, const struct st_board *b)
{
	struct st_goal g[PC_MODE_MAX];
	unsigned n = board_goals(x, b, g);
	json_object *tg = json_object_new_array();

	for (unsigned k = 0; k < n; k++) {
		json_object *gj = json_object_new_object();

		json_object_object_add(gj, "mode", json_object_new_string(pc_mode_name((enum pc_mode)g[k].mode)));
		json_object_object_add(gj, "cuts", json_object_new_int64((int64_t)g[k].cuts));
		json_object_object_add(gj, "fails", json_object_new_int64((int64_t)g[k].fails));
		json_object_object_add(gj, "bound", json_object_new_double(g[k].bound));
		json_object_object_add(gj, "cuts_needed", g[k].need ? json_object_new_int64((int64_t)g[k].need) : NULL);
		json_object_object_add(gj, "met", json_object_new_boolean(g[k].met));
		json_object_array_add(tg, gj);
	}
	return tg;
}

static json_object *json_board(const struct st_ctx *x, const struct st_board *b)
{
	json_object *o = json_object_new_object(), *cnt = json_object_new_object();
	char buf[64];

	json_object_object_add(o, "board", json_object_new_string(b->name));
	json_object_object_add(o, "cycle", json_object_new_int64(b->cycle));
	json_object_object_add(o, "cycles", json_object_new_int64(b->plan));
	json_object_object_add(o, "state", json_object_new_string(status_bstate_keys[b->state]));
	for (unsigned k = 0; k < PC_NOUTCOMES; k++)
		json_object_object_add(cnt, pc_outcome_names[k], json_object_new_int64((int64_t)b->n[k]));
	json_object_object_add(o, "counts", cnt);
	json_object_object_add(o, "last_fail", json_last_fail(b));
	json_object_object_add(o, "cycle_ms", b->cycle_ms >= 0 ? json_object_new_int64((int64_t)(b->cycle_ms + 0.5)) : NULL);
	json_object_object_add(o, "eta_s", b->eta_s >= 0 ? json_object_new_int64((int64_t)(b->eta_s + 0.5)) : NULL);
	eta_text(b, buf, sizeof(buf));
	json_object_object_add(o, "eta", json_object_new_string(buf));
	json_object_object_add(o, "stopped", b->ev.end && b->ev.end - 1 > PC_END_GIVEN_UP ?
			       json_object_new_string(pc_run_end_names[b->ev.end - 1]) : NULL);
	if (x->target_rate > 0)
		json_object_object_add(o, "target", json_goals(x, b));
	return o;
}

static void print_json(struct st_ctx *x, const struct results_lock_info *li, enum st_run run, int alive)
{
	json_object *doc = json_object_new_object(), *boards = json_object_new_array();

	json_object_object_add(doc, "dir", json_object_new_string(x->dir));
	json_object_object_add(doc, "campaign", json_object_new_string(x->campaign));
	json_object_object_add(doc, "run", json_object_new_string(run_keys[run]));
	json_object_object_add(doc, "running", json_object_new_boolean(run == RUN_RUNNING));
	json_object_object_add(doc, "lock", json_lock(li, alive));
	json_events(x, doc);
	json_disk(x, doc);
	for (unsigned i = 0; i < x->nb; i++)
		json_object_array_add(boards, json_board(x, &x->b[i]));
	json_object_object_add(doc, "boards", boards);
	fprintf(x->out, "%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
}

static const char status_usage[] =
	"usage: powercut status [--json] RESULTS_DIR\n"
	"  whether a run holds the folder, when it last appended an event, and per board\n"
	"  the cycle, the state, the verdict counts, the last FAIL and an ETA; works while\n"
	"  the campaign runs. --json: the same as one JSON document (powercut(1))\n";

int status_run(const char *dir, int json, const struct status_limits *lim, FILE *out, char *err, size_t errlen)
{
	struct st_ctx x = { .dir = dir, .lim = lim ? lim : &status_limits_default, .out = out, .ev_fd = -1 };
	struct results_lock_info li;
	char desc[768];
	int ret = 1, alive;
	enum st_run run;

	assert(x.lim->line_max >= 1 && x.lim->chunk >= 1 && x.lim->tail_first >= 1 &&
	       x.lim->tail_max >= x.lim->tail_first && x.lim->campaign_max >= 1);
	err[0] = 0;
	/* first, so that a folder too damaged to read still says whether a run is at it */
	results_lock_probe(x.dir, &li);
	alive = li.state == RESULTS_LOCK_HELD ? pid_alive(&li) : -1;
	if (!json) {
		if (alive == 0)
			fprintf(out, "%s: not running: the lock is held, but the run it names (pid %ld on %s) is gone\n",
				x.dir, li.pid, li.host);
		else {
			results_lock_describe(&li, desc, sizeof(desc));
			fprintf(out, "%s: %s\n", x.dir, desc);
		}
		fflush(out);
	}
	if (status_read_campaign(&x) || status_read_verdicts(&x) || status_read_events(&x))
		goto out;
	run = run_state(&x, &li, alive);
	derive(&x, run == RUN_RUNNING);
	/* derive() knows the boards' states: a run that ended finished only if they are done */
	run = run_state(&x, &li, alive);
	if (json)
		print_json(&x, &li, run, alive);
	else
		print_text(&x, &li, run, alive);
	ret = 0;
out:
	if (ret)
		pc_strlcpy(err, x.err, errlen);
	if (x.ev_fd >= 0)
		close(x.ev_fd);
	free(x.win);
	free(x.b);
	free(x.line);
	return ret;
}

int status_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[1024];
	int c, json = 0, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jh", lo, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'h': fputs(status_usage, stdout); return 0;
		default: fputs(status_usage, stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		pc_err("status takes one results folder");
		fputs(status_usage, stderr);
		return 2;
	}
	ret = status_run(argv[optind], json, NULL, stdout, err, sizeof(err));
	fflush(stdout);
	if (ret)
		pc_err("%s", err);
	return ret;
}

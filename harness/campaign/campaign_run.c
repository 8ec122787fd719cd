/*
 * campaign_run.c - one run of a campaign from start to end: set-up (the
 * results folder, the relays' locks, campaign.json, the key, the engine,
 * each board's relay worker and link), the resume (campaign_resume.c), the
 * loop (campaign.c), and the finish (each board's run_end, the report's
 * rule on the whole campaign as the exit code).
 */
#include "harness/campaign/campaign.h"
#include "harness/campaign/campaign_daemon.h"
#include "harness/campaign/campaign_reject.h"
#include "harness/campaign/campaign_core.h"
#include "harness/campaign/campaign_loop.h"
#include "harness/campaign/campaign_plan.h"
#include "harness/campaign/campaign_resume.h"
#include "harness/campaign/campaign_link.h"
#include "harness/campaign/campaign_stop.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "common/auth.h"
#include "common/proto.h"
#include "common/util.h"
#include "relay/relay.h"
#include "relay/relay_lock.h"
#include "harness/engine/engine.h"
#include "harness/report/report.h"
#include "harness/results/results.h"

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
		struct relay *r;
		struct engine_board_state es;
		struct relay_rep rep;
		int ret;

		b->c = c;
		b->cfg = &c->cfg->boards[i];
		b->idx = i;
		if ((b->cfg->link_serial || b->cfg->console_capture) && link_board_serial_open(b->link, err, errlen))
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
		r = calloc(1, sizeof(*r));
		if (!r) {
			return pc_fail(err, errlen, -ENOMEM, "board %s: out of memory", b->cfg->name);
		}
		ret = relay_open(r, b->cfg->relay_driver, b->cfg->relay, &b->rctx, err, errlen);
		b->relay_caps = ret ? 0 : r->ops->caps;	/* all the campaign needs of it */
		relay_close(r);
		free(r);
		if (ret)
			return -EIO;
		ret = relay_worker_start(&b->rw, b->cfg->relay_driver, b->cfg->relay, &b->rctx, relay_hang_ms(b->cfg));
		if (ret) {
			return pc_fail(err, errlen, -EIO, "board %s: cannot start its relay worker: %s", b->cfg->name, strerror(-ret));
		}
		b->relay_open = 1;
		ret = relay_worker_wait(&b->rw, b->rw.hang_ms, &rep);
		if (ret < 0 || rep.ret < 0) {
			return pc_fail(err, errlen, -EIO, "board %s: its relay worker could not open the relay: %s", b->cfg->name,
				 ret < 0 ? strerror(-ret) : rep.err);
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
		if (camp_stop_at_start(b))
			continue;	/* a rule stopped it, in an earlier run or now */
		if (c->resuming)
			pc_info("board %s: resuming at cycle %u%s", b->cfg->name, b->cycle,
				es.pending ? " (the last cycle's writes are checked first)" : "");
		camp_set_state(b, B_OFF_WAIT, i * 3u);	/* stagger power-ons a little */
	}
	return 0;
}

/*
 * Each board's relay lock (relay/relay_lock.h), for the whole run: it is
 * keyed by the relay, not by this results folder, so `powercut relay` and a
 * campaign elsewhere naming the same relay keep off it. 0, or -errno (said)
 * if one is in use, or two boards name one relay.
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
				rc = -EINVAL;
			}
		if (rc)
			break;
		memset(&holder, 0, sizeof(holder));
		rc = relay_lock_take(&locks[i], key, &me, 1500, &holder, note, sizeof(note), err, sizeof(err));
		if (rc) {
			if (!strcmp(holder.role, "holder"))
				pc_err("board %s: %s; let it go first: powercut relay %s %s release", b->name, err,
				       holder.config[0] ? holder.config : "CONFIG", holder.board);
			else
				pc_err("board %s: %s", b->name, err);
		} else if (note[0]) {
			pc_warn("board %s: %s", b->name, note);
		}
	}
	free(res);
	free(conf);
	return rc;
}

/* The agents' key: made once, kept with the campaign (or where the
 * configuration says), given to every agent (docs/protocol.md). */
static int camp_key(struct camp *c, const char *dir)
{
	char err[1024] = "";
	int kr;

	if (c->cfg->key_file[0])
		pc_strlcpy(c->key_path, c->cfg->key_file, sizeof(c->key_path));
	else
		snprintf(c->key_path, sizeof(c->key_path), "%s/agent.key", dir);
	kr = pc_auth_key_create(c->key_path, err, sizeof(err));
	if (kr == 0)
		pc_info("created the agents' key %s (mode 0600): agents started by a relay get it; give it "
			"to a real board's agent with --key", c->key_path);
	else if (kr != -EEXIST) {
		pc_err("%s", err);
		return kr;
	}
	kr = pc_auth_key_load(c->key_path, &c->key, err, sizeof(err));
	if (kr)
		pc_err("%s", err);
	return kr;
}

/* The results folder, the relays' locks, campaign.json, the key and the
 * engine: everything a run needs before its records are read. 0, or -errno
 * (said). */
static int camp_setup(struct camp *c, const char *dir, struct relay_lock *locks, int *existing)
{
	char err[1024] = "", note[1024] = "";
	int ret;

	find_agent(c);
	ret = results_open(&c->res, dir, note, sizeof(note), err, sizeof(err));
	if (ret) {
		pc_err("%s", err);
		return ret;
	}
	if (note[0])
		pc_warn("%s", note);
	ret = camp_lock_relays(c->cfg, dir, locks);
	if (ret)
		return ret;
	ret = camp_campaign_json(c, existing, err, sizeof(err));
	if (ret) {
		pc_err("%s%s", err, strstr(err, " failed: ") ? "; nothing started: once the disk is mended, run the "
		       "same command to resume" : "");
		return ret;
	}
	ret = camp_key(c, dir);
	if (ret)
		return ret;
	c->eng = engine_new(c->cfg->name, camp_on_verdict, camp_on_note, c);
	c->seen_verdicts = json_object_new_object();
	if (!c->eng || !c->seen_verdicts)
		return -ENOMEM;
	/* the engine checks every HELLO against the configured boards */
	ret = engine_configure(c->eng, c->cfg->root, err, sizeof(err));
	if (ret) {
		pc_err("%s", err);
		return ret;
	}
	engine_set_format(c->eng, c->format);
	return 0;
}

/*
 * The loop ended: every switch asked for is done, each board's run_end is
 * on record, and the report's rule on the whole campaign (resumed runs
 * included) gives the exit code.
 */
static int camp_finish(struct camp *c, const char *dir)
{
	unsigned fails = 0;

	camp_progress(c, 1);
	camp_link_reject_tick(c, 1);	/* the refusals counted, before run_end */
	for (unsigned i = 0; i < c->nb; i++) {
		fails += c->b[i].tally.fail + c->b[i].tally.boot;
		if (c->b[i].st != B_DONE || camp_stopped())
			camp_power_off(&c->b[i]);
	}
	/* every switch asked for is done before the run is said to end */
	for (unsigned i = 0; i < c->nb; i++)
		if (c->b[i].relay_open) {
			relay_worker_stop(&c->b[i].rw, c->b[i].rw.hang_ms);
			c->b[i].relay_open = 0;
		}
	/* Each board's plan and how this run left it, so that the report can
	 * tell a campaign that ran its cycles from one that stopped short
	 * (--cycles may change the plan from run to run). The cycle is the last
	 * one the board reached, never beyond what the engine has seen. */
	for (unsigned i = 0; i < c->nb && !c->fatal; i++) {
		struct bctx *b = &c->b[i];
		json_object *ev;
		unsigned last = b->cycle - 1 < c->cycles ? b->cycle - 1 : c->cycles;

		if (b->stop.run_ended)
			continue;	/* stopped by a rule: its run_end is written */
		ev = camp_ev_new(b, PC_EV_RUN_END);
		json_object_object_add(ev, "cycle", json_object_new_int64(last));
		json_object_object_add(ev, "cycles", json_object_new_int64(c->cycles));
		json_object_object_add(ev, "end", json_object_new_string(camp_stop_end_name(b)));
		camp_ev_log(b, ev);
	}
	camp_results_check(c, results_flush(&c->res));	/* everything durable, or the failure */
	if (c->res.failed)
		pc_err("stopped: %s; once the disk is mended, run the same command to resume", c->res.failure);
	if (c->disk.below)
		return CAMPAIGN_ERROR;	/* said when it was found; every verdict is on disk */
	if (camp_stopped())
		pc_warn("interrupted (signal %d); every verdict so far is on disk; run the same command to resume",
			camp_stopped());
	if (c->fatal)
		return CAMPAIGN_ERROR;
	{
		/* the report's rule on the whole campaign (resumed runs included):
		 * FAIL or BOOT_FAIL 1, INCOMPLETE 3 (a board given up, too many
		 * INFRA_ERROR cycles, cycles left: interrupted), else 0 */
		const char *dirs[1] = { dir };
		const struct report_opts ro = { .own_run = 1 };
		char rerr[512] = "";
		unsigned judged = 0;
		int result;

		for (unsigned i = 0; i < c->nb; i++)
			judged += c->b[i].tally.pass + c->b[i].tally.fail + c->b[i].tally.boot;
		if (!judged && !camp_stopped())
			pc_err("no cycle could be judged (every cycle was INFRA_ERROR): see %s/verdicts.jsonl", dir);
		if (report_run(dirs, 1, c->o->no_report ? NULL : stdout, &ro, &result, rerr, sizeof(rerr))) {
			pc_err("report: %s", rerr);
			result = fails ? CAMPAIGN_FAIL : CAMPAIGN_ERROR;
		}
		return result;
	}
}

/* Whatever a run holds goes, in any state it stopped in. */
static void camp_teardown(struct camp *c, struct relay_lock *locks)
{
	for (unsigned i = 0; i < c->nb; i++) {
		link_board_close(c->b[i].link);
		link_board_free(c->b[i].link);
		free(c->b[i].plan);
		if (c->b[i].relay_open)
			relay_worker_stop(&c->b[i].rw, 5000);
	}
	for (unsigned i = 0; locks && i < c->nb; i++)
		relay_lock_release(&locks[i]);
	link_pending_free(&c->pend);
	explicit_bzero(&c->key, sizeof(c->key));
	if (c->lfd >= 0)
		close(c->lfd);
	json_object_put(c->seen_verdicts);
	json_object_put(c->reconf);
	engine_free(c->eng);
	results_close(&c->res);
}

int campaign_run(struct campaign_cfg *cfg, const struct campaign_opts *o)
{
	struct camp c = { .cfg = cfg, .o = o, .lfd = -1 };
	char dir[PATH_MAX], err[1024] = "";
	int existing = 0, rc = CAMPAIGN_ERROR;
	struct relay_lock *locks;

	link_pending_init(&c.pend, &camp_pending_ops, &c, &c.key);
	c.cycles = o->cycles > 0 ? (unsigned)o->cycles : cfg->cycles;
	c.nb = cfg->nboards;
	c.b = calloc(c.nb, sizeof(*c.b));
	locks = calloc(c.nb, sizeof(*locks));
	if (!c.b || !locks) {
		free(c.b);
		free(locks);
		return CAMPAIGN_ERROR;
	}
	for (unsigned i = 0; i < c.nb; i++) {
		locks[i].fd = -1;
		c.b[i].c = &c;
		c.b[i].cfg = &cfg->boards[i];
		c.b[i].idx = i;
		c.b[i].link = camp_link_new(&c.b[i]);
		c.b[i].plan = camp_plan_new();
		if (!c.b[i].link || !c.b[i].plan) {
			pc_err("campaign: out of memory for board %s", cfg->boards[i].name);
			for (unsigned k = 0; k <= i; k++) {
				link_board_free(c.b[k].link);
				free(c.b[k].plan);
			}
			free(c.b);
			free(locks);
			return CAMPAIGN_ERROR;
		}
	}
	if (o->results)
		pc_strlcpy(dir, o->results, sizeof(dir));
	else
		snprintf(dir, sizeof(dir), "results/%s", cfg->name);
	if (camp_setup(&c, dir, locks, &existing) || (existing && camp_resume(&c, dir)) ||
	    camp_results_check(&c, results_flush(&c.res)))	/* the verdicts recovered, durable */
		goto out;
	json_object_put(c.seen_verdicts);
	c.seen_verdicts = NULL;
	if (camp_disk_low(&c, 1))
		goto out;	/* below results_min_free already: said, nothing started */
	c.t0 = pc_now_ms();
	if (c.format >= 2 && camp_results_check(&c, run_start(&c)))
		goto out;
	camp_reconf_log(&c);
	if (c.fatal)
		goto out;
	if (camp_listen_on(&c, err, sizeof(err)) || open_boards(&c, err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	camp_catch_signals();
	if (!o->quiet)
		pc_info("campaign %s: %u boards, %u cycles each, results in %s, agents connect to %s", cfg->name,
			c.nb, c.cycles, dir, c.connect);
	camp_loop(&c);
	rc = camp_finish(&c, dir);
out:
	camp_teardown(&c, locks);
	free(locks);
	free(c.b);
	return rc;
}

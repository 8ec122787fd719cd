/*
 * campaign_resume.c - the campaign's own records: verdicts tallied and
 * written, campaign.json created or checked, and a resumed run's state
 * rebuilt from events.jsonl and verdicts.jsonl.
 */
#include "harness/campaign/campaign_opts.h"
#include "harness/campaign/config.h"
#include "harness/campaign/campaign_daemon.h"
#include "harness/campaign/campaign_core.h"
#include "harness/campaign/campaign_resume.h"
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
#include "harness/engine/engine.h"
#include "harness/campaign/progress.h"
#include "harness/report/report.h"
#include "harness/results/results.h"

struct bctx *camp_board_by_name(struct camp *c, const char *name)
{
	for (unsigned i = 0; i < c->nb; i++)
		if (strcmp(c->b[i].cfg->name, name) == 0)
			return &c->b[i];
	return NULL;
}

/* Count a verdict towards its board's totals (the whole campaign's, resumed runs included). */
static struct bctx *tally(struct camp *c, const struct pc_verdict *v)
{
	struct bctx *b = camp_board_by_name(c, v->board);

	if (!b)
		return NULL;
	switch (v->outcome) {
	case PC_OUT_PASS:
		b->tally.pass++;
		break;
	case PC_OUT_FAIL:
		b->tally.fail++;
		break;
	case PC_OUT_BOOT_FAIL:
		b->tally.boot++;
		break;
	default:
		b->tally.infra++;
	}
	camp_stop_count(b, v);
	return b;
}

/* A FAIL said on stderr: the classes found but intact and not_written,
 * the first of a board in full, the next ones summarised. */
static void say_fail(const struct pc_verdict *v)
{
	char what[256] = "";

	for (int i = 0; i < PC_NCLASSES; i++) {
		size_t l = strlen(what);

		if (v->counts[i] && i != PC_CLS_INTACT && i != PC_CLS_NOT_WRITTEN)
			snprintf(what + l, sizeof(what) - l, " %s=%" PRIu64, pc_class_names[i], v->counts[i]);
	}
	progress_fail(v->board, (uint64_t)v->cycle, what);
}

/* Engine callbacks. The verdict as the engine decided it: its board,
 * cycle, outcome and counts typed, its line (v->json) appended as it is. */
int camp_on_verdict(const struct pc_verdict *v, void *arg)
{
	struct camp *c = arg;
	struct bctx *b;
	char key[128];
	int ret;

	snprintf(key, sizeof(key), "%s/%" PRId64, v->board, v->cycle);
	if (c->seen_verdicts && json_object_object_get_ex(c->seen_verdicts, key, NULL))
		return 0;	/* resuming: this one is in verdicts.jsonl already */
	ret = camp_results_check(c, results_verdict(&c->res, v->json));
	if (ret)
		return ret;
	if (c->resuming)
		pc_info("recovered the verdict of %s cycle %" PRId64 " from " PC_FILE_EVENTS, v->board, v->cycle);
	b = tally(c, v);
	if (b && v->outcome == PC_OUT_FAIL && !c->o->quiet)
		say_fail(v);
	return 0;
}

void camp_on_note(const char *board, const char *text, void *arg)
{
	struct camp *c = arg;

	if (!c->resuming)	/* told already, when it happened */
		pc_warn("board %s: %s", board, text);
}

/* ---- set-up, resume ---- */

static int camp_seen_verdict(json_object *v, unsigned lineno, void *arg)
{
	struct camp *c = arg;
	struct pc_verdict vd;
	char key[128];

	/* a verdict on disk only: read from its line (the live ones come typed) */
	if (pc_verdict_read(v, &vd))
		return -EINVAL;
	snprintf(key, sizeof(key), "%s/%" PRId64, vd.board, vd.cycle);
	json_object_object_add(c->seen_verdicts, key, json_object_new_boolean(1));
	tally(c, &vd);
	return 0;
}

static int camp_replay_event(json_object *ev, unsigned lineno, void *arg)
{
	struct camp *c = arg;
	char err[512] = "";
	uint64_t t;

	/* a checked read: a t the engine refuses (past ENGINE_MAX_T, negative)
	 * must not move the clock (it once overflowed it) */
	if (!pc_json_u64(ev, "t", ENGINE_MAX_T, &t, NULL, 0) && (int64_t)t > c->t_base)
		c->t_base = (int64_t)t;
	{
		/* the boot id of each board's last authenticated hello: the next
		 * power-on must bring a new one; and whether its agent was ever
		 * heard (an authenticated hello; a hello accepted, whose scan the
		 * host asked for): a board never heard is not blamed for a silent
		 * boot (campaign_setup.c) */
		json_object *k, *m, *ty, *bd, *id;
		struct bctx *b;
		const char *kind;

		if (json_object_object_get_ex(ev, "ev", &k) && json_object_object_get_ex(ev, "board", &bd) &&
		    (b = camp_board_by_name(c, json_object_get_string(bd)))) {
			kind = json_object_get_string(k);
			if (!strcmp(kind, "verify"))
				b->heard = b->spoke = 1;
			if (!strcmp(kind, "rx") && json_object_object_get_ex(ev, "msg", &m) &&
			    json_object_object_get_ex(m, "type", &ty) && !strcmp(json_object_get_string(ty), "hello")) {
				b->spoke = 1;
				if (json_object_object_get_ex(m, "boot_id", &id))
					pc_strlcpy(b->boot_id, json_object_get_string(id), sizeof(b->boot_id));
			}
			camp_stop_replayed(b, ev);
		}
	}
	if (engine_feed(c->eng, ev, err, sizeof(err)))
		pc_warn("%s/" PC_FILE_EVENTS ":%u: %s", c->res.dir, lineno, err);
	return c->fatal ? -EIO : 0;
}

/* Resume: what the files say happened, happened. 0, or -errno (said). */
int camp_resume(struct camp *c, const char *dir)
{
	char err[1024] = "", evpath[PATH_MAX + 32], vpath[PATH_MAX + 32];
	int torn, ret;

	snprintf(evpath, sizeof(evpath), "%s/" PC_FILE_EVENTS, dir);
	snprintf(vpath, sizeof(vpath), "%s/" PC_FILE_VERDICTS, dir);
	c->resuming = 1;
	if ((ret = results_each_line(vpath, camp_seen_verdict, c, &torn, err, sizeof(err))) ||
	    (ret = results_each_line(evpath, camp_replay_event, c, &torn, err, sizeof(err)))) {
		pc_err("cannot resume from %s: %s", dir, err);
		return ret;
	}
	c->resuming = 0;
	c->t_base += 1;
	pc_info("resuming campaign %s in %s (%lu verdicts on record)", c->cfg->name, dir,
		(unsigned long)json_object_object_length(c->seen_verdicts));
	return 0;
}

/* A setting this resume changes (config_resume_diff): said now, and kept
 * for its config_change event, written once the run has started. */
static void camp_reconf_note(const char *path, const char *board, json_object *from, json_object *to, void *arg)
{
	struct camp *c = arg;
	json_object *ev = json_object_new_object();

	if (!c->reconf)
		c->reconf = json_object_new_array();
	json_object_object_add(ev, "t", json_object_new_int64(0));	/* set when logged */
	json_object_object_add(ev, "ev", json_object_new_string(pc_ev_names[PC_EV_CONFIG_CHANGE]));
	if (board)
		json_object_object_add(ev, "board", json_object_new_string(board));
	json_object_object_add(ev, "key", json_object_new_string(path));
	json_object_object_add(ev, "from", json_object_get(from));
	json_object_object_add(ev, "to", json_object_get(to));
	json_object_array_add(c->reconf, ev);
	pc_info("resuming with %s %s (was %s)", path,
		to ? json_object_to_json_string_ext(to, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) :
		"not set", from ? json_object_to_json_string_ext(from, JSON_C_TO_STRING_PLAIN |
								 JSON_C_TO_STRING_NOSLASHESCAPE) : "not set");
}

void camp_reconf_log(struct camp *c)
{
	size_t n = c->reconf ? json_object_array_length(c->reconf) : 0;

	for (size_t i = 0; i < n && !c->fatal; i++) {
		json_object *ev = json_object_get(json_object_array_get_idx(c->reconf, i));

		json_object_object_add(ev, "t", json_object_new_int64(camp_t(c)));
		/* a failed write stops the run, named, as every results write does */
		camp_results_check(c, results_event(&c->res, ev));
		json_object_put(ev);
	}
	json_object_put(c->reconf);
	c->reconf = NULL;
}

/*
 * A folder that holds a campaign (old, which this puts): its format kept,
 * its configuration the same but for what a resume may change
 * (config_resume_diff: each change said, and logged once the run starts),
 * and this run's configuration put on record with the first run's cycles.
 * 0, or -errno with err.
 */
static int campaign_json_resume(struct camp *c, json_object *old, const char *path, char *err, size_t errlen)
{
	json_object *oc = NULL, *fv = NULL, *nc = NULL, *cy = NULL;
	char why[2048];
	int ret, minor;

	/* the folder keeps the format it was started in: a resumed run
	 * writes verdicts like the ones already there */
	json_object_object_get_ex(old, "format", &fv);
	if (pc_format_read(fv, path, &c->format, &minor, err, errlen)) {
		json_object_put(old);
		return -EINVAL;
	}
	json_object_object_get_ex(old, "config", &oc);
	ret = config_resume_diff(oc, c->cfg->root, c->cfg->path, camp_reconf_note, c, why, sizeof(why));
	if (ret) {
		json_object_put(old);
		return pc_fail(err, errlen, ret, "%s holds campaign %s, which cannot resume with this configuration: %s",
			 c->res.dir, c->cfg->name, why);
	}
	if (!c->reconf) {
		json_object_put(old);
		return 0;
	}
	/* this run's configuration on record (status reads the target and
	 * the floor there); the first run's cycles stay */
	json_object_deep_copy(c->cfg->root, &nc, NULL);
	if (json_object_object_get_ex(oc, "cycles", &cy))
		json_object_object_add(nc, "cycles", json_object_get(cy));
	json_object_object_add(old, "config", nc);
	ret = results_write_json(c->res.dir, PC_FILE_CAMPAIGN, old, err, errlen);
	json_object_put(old);
	return ret;
}

/* A new campaign.json: this format, the campaign, the host it runs on, its configuration. */
static int campaign_json_new(struct camp *c, char *err, size_t errlen)
{
	json_object *doc, *host, *cfgcopy = NULL;
	struct utsname u;
	char hn[256] = "", id[80];
	int ret;

	uname(&u);
	gethostname(hn, sizeof(hn) - 1);
	doc = json_object_new_object();
	c->format = PC_FORMAT_MAJOR;
	json_object_object_add(doc, "format", json_object_new_string(PC_FORMAT));
	json_object_object_add(doc, "campaign", json_object_new_string(c->cfg->name));
	json_object_object_add(doc, "config_file", json_object_new_string(c->cfg->path));
	json_object_object_add(doc, "started", json_object_new_int64((int64_t)time(NULL)));
	host = json_object_new_object();
	results_host_id(id, sizeof(id));
	json_object_object_add(host, "id", json_object_new_string(id));
	json_object_object_add(host, "hostname", json_object_new_string(hn));
	json_object_object_add(host, "kernel", json_object_new_string(u.release));
	json_object_object_add(host, "machine", json_object_new_string(u.machine));
	json_object_object_add(host, "powercut", json_object_new_string(PC_VERSION));
	json_object_object_add(doc, "host", host);
	json_object_deep_copy(c->cfg->root, &cfgcopy, NULL);
	json_object_object_add(doc, "config", cfgcopy);
	ret = results_write_json(c->res.dir, PC_FILE_CAMPAIGN, doc, err, errlen);
	json_object_put(doc);
	return ret;
}

int camp_campaign_json(struct camp *c, int *existing, char *err, size_t errlen)
{
	char path[PATH_MAX + 32];
	json_object *old;

	snprintf(path, sizeof(path), "%s/" PC_FILE_CAMPAIGN, c->res.dir);
	old = json_object_from_file(path);
	*existing = old != NULL;
	if (old)
		return campaign_json_resume(c, old, path, err, errlen);
	return campaign_json_new(c, err, errlen);
}

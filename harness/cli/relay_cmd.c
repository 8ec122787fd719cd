/*
 * relay_cmd.c - `powercut relay CONFIG BOARD on|off|cycle|get|release`: one
 * board's relay switched by hand (bring-up), never under a campaign that
 * drives it (the results folder's lock, the relay's own lock), through a
 * relay holder for a relay that keeps its state only while held open.
 */
#include "harness/cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "harness/campaign/config.h"
#include "harness/results/results.h"
#include "relay/relay.h"
#include "relay/relay_hold.h"
#include "relay/relay_lock.h"

/* Where a relay's agent must connect and the key it proves itself with, as
 * the configuration says them: a campaign that listens on port 0 picks its
 * port when it starts, and its key is <results>/agent.key unless key_file
 * names one, so `relay` passes neither unless the configuration fixes it
 * (docs/relays.md). connect is "" then. */
static void relay_hand_env(const struct campaign_cfg *cfg, char *connect, size_t clen, char *key, size_t klen)
{
	char host[128];
	uint16_t port = 0;

	connect[0] = key[0] = 0;
	if (pc_parse_hostport(cfg->listen, host, sizeof(host), &port) == 0 && port) {
		/* every address (or none: loopback) is reached on loopback from here */
		if (!strcmp(host, "::"))
			snprintf(connect, clen, "[::1]:%u", port);
		else if (strchr(host, ':'))
			snprintf(connect, clen, "[%s]:%u", host, port);
		else
			snprintf(connect, clen, "%s:%u", host[0] && strcmp(host, "0.0.0.0") ? host : "127.0.0.1", port);
	}
	if (cfg->key_file[0])
		pc_strlcpy(key, cfg->key_file, klen);
}

/* A request to a relay holder, said as `relay` says things; 0 or 1 (exit status). */
static int relay_ask(const struct relay_lock_who *h, const char *sock, const char *board, const char *req,
		     char *reply, size_t len)
{
	char err[1024];

	if (relay_hold_ask(sock, req, reply, len, err, sizeof(err))) {
		pc_err("board %s: relay holder pid %ld: %s", board, h->pid, err);
		return 1;
	}
	return 0;
}

static const char relay_usage[] =
	"usage: powercut relay CONFIG BOARD on|off|cycle|get|release\n"
	"\n"
	"Switches one board's relay by hand (bring-up). get prints on or off and never\n"
	"switches anything. A relay that keeps its state only while held open (gpiod)\n"
	"is left to a relay holder that keeps it on or off; later commands ask it, and\n"
	"release makes it let go. Refused while a campaign drives the relay, wherever its\n"
	"results folder is. See powercut(1), RELAY LOCKS.\n";

/* One switching by hand: the configuration, the board, the relay's lock. */
struct hand {
	struct campaign_cfg cfg;
	struct board_cfg *b;
	const char *cfgarg, *act;
	struct relay_lock lock;
	struct relay_lock_who me, holder;
	char *cfgpath;
	char note[1024], err[1024];
};

/* A run of an older powercut takes no relay lock: its folder's lock, where
 * `relay` can know it, still says it runs. 0, or 1 (refused, said). */
static int hand_folder_free(struct hand *h)
{
	struct results_lock_info li;
	char dir[PATH_MAX], desc[768];

	snprintf(dir, sizeof(dir), "results/%s", h->cfg.name);
	results_lock_probe(dir, &li);
	if (li.state != RESULTS_LOCK_HELD)
		return 0;
	results_lock_describe(&li, desc, sizeof(desc));
	pc_err("%s is in use by a campaign (%s): switching board %s by hand would cut under it; "
	       "stop that run first", dir, desc, h->b->name);
	return 1;
}

/* The relay's own lock, wherever the campaign keeps its results: a run
 * driving this relay, or a holder keeping it on or off, holds it (a sim or
 * VM board has none: it lives in results/<campaign>/, checked before).
 * 0 (taken, or none to take), or -errno with h->holder said. */
static int hand_lock(struct hand *h)
{
	char key[160];
	int rc = relay_lock_key(h->b->relay_driver, h->b->relay, h->cfg.name, h->b->name, key, sizeof(key));

	h->cfgpath = realpath(h->cfgarg, NULL);
	pc_strlcpy(h->me.role, "relay", sizeof(h->me.role));
	pc_strlcpy(h->me.campaign, h->cfg.name, sizeof(h->me.campaign));
	pc_strlcpy(h->me.board, h->b->name, sizeof(h->me.board));
	pc_strlcpy(h->me.config, h->cfgpath ? h->cfgpath : h->cfgarg, sizeof(h->me.config));
	h->note[0] = 0;
	if (!rc)
		rc = relay_lock_take(&h->lock, key, &h->me, 1500, &h->holder, h->note, sizeof(h->note), h->err,
				     sizeof(h->err));
	else if (rc == -ENOENT)
		rc = 0;
	return rc;
}

/* A holder keeps this relay: it switches, we ask. The exit status. */
static int hand_ask_holder(struct hand *h)
{
	struct board_cfg *b = h->b;
	const char *act = h->act;
	char reply[16];
	int ret;

	if (!strcmp(act, "cycle")) {
		ret = relay_ask(&h->holder, h->lock.sock, b->name, "off", reply, sizeof(reply));
		if (!ret) {
			pc_sleep_us((uint64_t)b->off_ms * 1000);
			ret = relay_ask(&h->holder, h->lock.sock, b->name, "on", reply, sizeof(reply));
		}
	} else {
		ret = relay_ask(&h->holder, h->lock.sock, b->name, act, reply, sizeof(reply));
	}
	if (ret)
		return ret;
	if (!strcmp(act, "get"))
		printf("%s\n", reply);
	else if (!strcmp(act, "release"))
		printf("board %s: relay released: holder pid %ld let it go (undriven, a GPIO line does what "
		       "its chip does: gpio-sim lets it fall to its pull, gpio-aspeed keeps its level)\n",
		       b->name, h->holder.pid);
	else
		printf("board %s: relay %s done; holder pid %ld keeps it %s\n", b->name, act, h->holder.pid, reply);
	return 0;
}

/* A relay whose state lasts only while it is open: a holder is started to
 * keep it. The exit status. */
static int hand_start_holder(struct hand *h, struct relay_ctx *ctx)
{
	struct board_cfg *b = h->b;
	char reply[16];
	pid_t pid;
	int ret = 0;

	ctx->open_state = !strcmp(h->act, "on") ? RELAY_OPEN_ON : RELAY_OPEN_OFF;
	if (relay_hold_start(&h->lock, b->relay_driver, b->relay, ctx, &pid, h->err, sizeof(h->err))) {
		pc_err("%s", h->err);
		return 1;
	}
	relay_lock_forget(&h->lock);
	h->holder = (struct relay_lock_who){ .pid = pid };
	if (!strcmp(h->act, "cycle")) {
		pc_sleep_us((uint64_t)b->off_ms * 1000);
		ret = relay_ask(&h->holder, h->lock.sock, b->name, "on", reply, sizeof(reply));
	}
	if (!ret)
		printf("board %s: relay %s done; holder pid %ld keeps it %s until `powercut relay %s %s "
		       "release`\n", b->name, h->act, (long)pid, strcmp(h->act, "off") ? "on" : "off", h->cfgarg, b->name);
	return ret;
}

/* Open the relay, switch it (get never switches: a driver that can tell
 * reads without driving), close it. The exit status. */
static int hand_switch(struct hand *h, struct relay_ctx *ctx)
{
	struct board_cfg *b = h->b;
	const char *act = h->act;
	struct relay r;
	int ret;

	ctx->open_state = !strcmp(act, "get") ? RELAY_OPEN_OBSERVE : RELAY_OPEN_OFF;
	if (relay_open(&r, b->relay_driver, b->relay, ctx, h->err, sizeof(h->err))) {
		pc_err("%s", h->err);
		return 1;
	}
	if (!strcmp(act, "get")) {
		int s = relay_get(&r);
		if (s < 0)
			pc_err("%s", r.err);
		else
			printf("%s\n", s ? "on" : "off");
		ret = s < 0;
	} else {
		int on = !strcmp(act, "on");
		ret = !strcmp(act, "cycle") ? relay_off(&r) : on ? relay_on(&r) : relay_off(&r);
		if (!ret && !strcmp(act, "cycle")) {
			pc_sleep_us((uint64_t)b->off_ms * 1000);
			ret = relay_on(&r);
		}
		if (ret)
			pc_err("%s", r.err);
		else
			printf("board %s: relay %s done\n", b->name, act);
		ret = ret != 0;
	}
	relay_close(&r);
	return ret;
}

/* After the lock: ask a holder, start one, or switch. The exit status. */
static int hand_act(struct hand *h, int rc)
{
	const struct relay_ops *ops = relay_find(h->b->relay_driver);
	char state[PATH_MAX + 64], connect[160], keyfile[PATH_MAX];
	struct relay_ctx ctx;

	if (rc == -EBUSY && !strcmp(h->holder.role, "holder"))
		return hand_ask_holder(h);
	if (rc) {
		if (rc == -EBUSY && !strcmp(h->holder.role, "run"))
			pc_err("board %s: %s: switching it by hand would cut under that run; stop it first (kill -INT "
			       "%ld)", h->b->name, h->err, h->holder.pid);
		else
			pc_err("board %s: %s", h->b->name, h->err);
		return 1;
	}
	if (h->note[0])
		pc_warn("board %s: %s", h->b->name, h->note);
	if (!strcmp(h->act, "release")) {
		printf("board %s: no relay holder keeps it; nothing to release\n", h->b->name);
		return 0;
	}
	snprintf(state, sizeof(state), "results/%s/boards/%s", h->cfg.name, h->b->name);
	relay_hand_env(&h->cfg, connect, sizeof(connect), keyfile, sizeof(keyfile));
	ctx = (struct relay_ctx){ .board = h->b->name, .connect = connect[0] ? connect : NULL,
				  .agent_path = "powercut-agent", .state_dir = state, .device = h->b->device,
				  .key_path = keyfile[0] ? keyfile : NULL };
	/* the state lasts only while the relay is open: a holder keeps it */
	if (ops && (ops->caps & RELAY_CAP_HOLD) && strcmp(h->act, "get"))
		return hand_start_holder(h, &ctx);
	return hand_switch(h, &ctx);
}

int cmd_relay(int argc, char **argv)
{
	struct hand h = { .lock = { .fd = -1 } };
	int ret = 1;

	if (argc != 4) {
		if (argc == 2 && !strcmp(argv[1], "--help"))
			fputs(relay_usage, stdout);
		else
			fputs("usage: powercut relay CONFIG BOARD on|off|cycle|get|release\n", stderr);
		return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	h.cfgarg = argv[1];
	h.act = argv[3];
	if (strcmp(h.act, "on") && strcmp(h.act, "off") && strcmp(h.act, "cycle") && strcmp(h.act, "get") &&
	    strcmp(h.act, "release")) {
		pc_err("relay action '%s': expected on, off, cycle, get or release", h.act);
		return 2;
	}
	if (cli_load(argv[1], &h.cfg))
		return 2;
	for (unsigned i = 0; i < h.cfg.nboards; i++)
		if (!strcmp(h.cfg.boards[i].name, argv[2]))
			h.b = &h.cfg.boards[i];
	if (!h.b)
		pc_err("%s: no board named '%s'", argv[1], argv[2]);
	else if (!hand_folder_free(&h))
		ret = hand_act(&h, hand_lock(&h));
	relay_lock_release(&h.lock);
	free(h.cfgpath);
	config_free(&h.cfg);
	return ret;
}

/*
 * config_check.c - a board's configuration against what its agent says in
 * HELLO (the device it was given), and the warnings a real board's
 * configuration deserves (config_warnings).
 */
#include "harness/campaign/config.h"
#include "harness/campaign/config_board.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"
#include "relay/relay.h"

/* "/dev/disk/by-partlabel/x" and "PARTLABEL=x" name the same device: the
 * spec form of both (by-partuuid, by-label, by-uuid alike), else s itself. */
static const char *spec_form(const char *s, char *buf, size_t len)
{
	static const char *const by[][2] = {
		{ "/dev/disk/by-partlabel/", "PARTLABEL=" }, { "/dev/disk/by-partuuid/", "PARTUUID=" },
		{ "/dev/disk/by-label/", "LABEL=" }, { "/dev/disk/by-uuid/", "UUID=" },
	};

	for (size_t i = 0; i < PC_ARRAY_SIZE(by); i++)
		if (!strncmp(s, by[i][0], strlen(by[i][0]))) {
			snprintf(buf, len, "%s%s", by[i][1], s + strlen(by[i][0]));
			return buf;
		}
	return s;
}

int config_device_check(const struct board_cfg *b, json_object *hello, char *why, size_t len)
{
	json_object *dev = pc_jget(hello, "device"), *v;
	const char *backend = pc_jstr(hello, "backend", NULL), *want;
	char w[PATH_MAX + 32], h[PATH_MAX + 32];

	/* the backend is not compared: a board whose relay starts an agent on
	 * an emulated card (the tests' stand-in for real hardware) is a posix
	 * board to the configuration and a sim device to its agent */
	(void)backend;
	for (size_t i = 0; cfg_ident_keys[i]; i++) {
		const char *got;

		if (!(v = pc_jget(b->device, cfg_ident_keys[i])) || !json_object_is_type(v, json_type_string))
			continue;
		want = json_object_get_string(v);
		got = pc_jstr(dev, cfg_ident_keys[i], NULL);
		if (!got) {
			snprintf(why, len, "the configuration says device.%s \"%.100s\" but the agent's HELLO names no %s "
				 "(the device it opened: %.200s)", cfg_ident_keys[i], want, cfg_ident_keys[i],
				 pc_jstr(dev, "path", NULL) ? pc_jstr(dev, "path", NULL) : "?");
			return 1;
		}
		if (strcasecmp(want, got)) {
			snprintf(why, len, "the agent opened a device whose %s is \"%.100s\" but the configuration says "
				 "device.%s \"%.100s\" (the device it opened: %.200s): the wrong card, or the wrong "
				 "board's configuration", cfg_ident_keys[i], got, cfg_ident_keys[i], want,
				 pc_jstr(dev, "path", NULL) ? pc_jstr(dev, "path", NULL) : "?");
			return 1;
		}
	}
	if (!strcmp(b->backend, "posix") && (v = pc_jget(b->device, "path")) && json_object_is_type(v, json_type_string)) {
		/* what the agent was told (--device), the node it opened, the region's path */
		const char *seen[3] = { pc_jstr(dev, "spec", NULL), pc_jstr(dev, "path", NULL),
					pc_jstr(pc_jget(hello, "region"), "path", NULL) };

		want = spec_form(json_object_get_string(v), w, sizeof(w));
		for (size_t i = 0; i < PC_ARRAY_SIZE(seen); i++)
			if (seen[i] && !strcmp(spec_form(seen[i], h, sizeof(h)), want))
				return 0;
		snprintf(why, len, "the configuration says device.path \"%.200s\" but the agent opened %.200s (told "
			 "--device %.200s): start the agent with --device %.200s, or fix the configuration",
			 json_object_get_string(v), seen[1] ? seen[1] : seen[2] ? seen[2] : "?",
			 seen[0] ? seen[0] : "?", json_object_get_string(v));
		return 1;
	}
	return 0;
}

/* ---- real-board warnings (config_warnings) ---- */

/* A board whose relay or device is real hardware, not the sim or a VM. */
static int cfg_real_board(const struct board_cfg *b)
{
	const struct relay_ops *ops = relay_find(b->relay_driver);
	unsigned caps = ops ? ops->caps : 0;

	/* a posix device behind a virtual board's relay is a virtual disk */
	return (caps & RELAY_CAP_HARDWARE) ||
	       (!strcmp(b->backend, "posix") && !(caps & RELAY_CAP_VIRTUAL));
}

__attribute__((format(printf, 4, 5)))
static void cfg_warn(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, len - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used += (size_t)n < len - *used ? (size_t)n : len - *used;
	if (*used < len - 1) {
		buf[(*used)++] = '\n';
		buf[*used] = 0;
	}
}

unsigned config_warnings(const struct campaign_cfg *c, char *buf, size_t len)
{
	char host[128], tcp[256] = "";
	size_t used = 0, tl = 0;
	unsigned n = 0;
	uint16_t port = 0;

	if (!len)
		return 0;
	buf[0] = 0;
	for (unsigned i = 0; i < c->nboards; i++) {
		const struct board_cfg *b = &c->boards[i];

		if (!cfg_real_board(b))
			continue;
		if (!b->link_serial && tl < sizeof(tcp))
			tl += (size_t)snprintf(tcp + tl, sizeof(tcp) - tl, "%s%s", tl ? ", " : "", b->name);
		if (b->off_ms < CFG_REAL_OFF_MS) {
			cfg_warn(buf, len, &used, "%s: boards[%u].off_ms: %" PRIu32 " ms suits only the sim: board %s "
				 "is real, and it must stay off until its capacitors have drained, or a cut is only a "
				 "brown-out; measure the board's hold-up time (how long its supply rail stays up after "
				 "the relay opens) and give that plus a margin (typically %u ms or more)", c->path, i,
				 b->off_ms, b->name, CFG_REAL_OFF_MS);
			n++;
		}
		if (!strcmp(b->relay_driver, "command") &&
		    !(b->relay && json_object_object_get_ex(b->relay, "board_id", NULL))) {
			cfg_warn(buf, len, &used, "%s: boards[%u].relay: a command relay without board_id is locked "
				 "for this campaign only: another campaign whose commands switch the same board (board "
				 "%s) is not refused, and both would power-cycle it; give \"board_id\", the board's "
				 "name in the lab, and a second campaign on it is refused naming the first "
				 "(docs/relays.md)", c->path, i, b->name);
			n++;
		}
		if (!b->boot_timeout_given) {
			cfg_warn(buf, len, &used, "%s: boards[%u].boot_timeout_ms: the default %" PRIu32 " ms is a "
				 "guess for the sim: board %s is real; measure its boot time (power on to the agent's "
				 "HELLO, several times) and give the longest plus a margin, or a slow boot costs "
				 "INFRA_ERROR cycles", c->path, i, b->boot_timeout_ms, b->name);
			n++;
		}
	}
	if (tcp[0] && pc_parse_hostport(c->listen, host, sizeof(host), &port) == 0) {
		if (!strncmp(host, "127.", 4) || !strcmp(host, "::1") || !strcmp(host, "localhost")) {
			cfg_warn(buf, len, &used, "%s: listen: %s suits only the sim: the agent of a real board (%s) "
				 "connects over the network and cannot reach this host's loopback; give an address "
				 "the board can reach (this host's address on the lab network, or \"0.0.0.0:PORT\")",
				 c->path, c->listen, tcp);
			n++;
		}
		if (!port) {
			cfg_warn(buf, len, &used, "%s: listen: port 0 picks a new port each run, which the agent of a "
				 "real board (%s) cannot know; give a fixed port, the one its --connect names (for "
				 "example 7878)", c->path, tcp);
			n++;
		}
	}
	return n;
}


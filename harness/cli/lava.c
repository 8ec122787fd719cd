/*
 * lava.c - `powercut lava CAMPAIGN --results DIR [--board NAME]`: a campaign
 * as a LAVA job (lava.h, docs/lava.md).
 *
 *   1. the board's relay and console from LAVA's environment: a PDUDaemon
 *      request becomes the `pdudaemon` driver (no process per switch), any
 *      other power command the `command` driver; `telnet HOST PORT` becomes
 *      telnet://HOST:PORT;
 *   2. the campaign, with them, written beside the results folder
 *      (DIR.lava.json), then `powercut run` into DIR: a new folder starts, a
 *      folder left by a job that timed out resumes;
 *   3. `powercut report --format json` over DIR, turned into LAVA results:
 *      one case per board and mode (records/s as the measurement), one per
 *      board; a device FAIL is a failed case in a Complete job; a board
 *      given up for what is not the device's fault is lava-test-raise,
 *      naming the board and the cause, so the job is Incomplete and the
 *      device's health is untouched.
 */
#include "harness/cli/lava.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/json.h"
#include "common/spawn.h"
#include "common/util.h"
#include "harness/results/verdict.h"

static const char lava_usage[] =
	"usage: powercut lava CAMPAIGN --results DIR [--board NAME] [--cycles N] [--agent PATH] [--print]\n"
	"\n"
	"Run (or resume) a campaign inside a LAVA docker test shell and report it to LAVA.\n"
	"  CAMPAIGN       the lab's campaign configuration; the board's relay and console\n"
	"                 come from LAVA_POWER_ON_COMMAND, LAVA_POWER_OFF_COMMAND and\n"
	"                 LAVA_CONNECTION_COMMAND (a pdudaemon request uses the pdudaemon driver)\n"
	"  --results DIR  the results folder, on a bind mount so the next job can resume it;\n"
	"                 the campaign as run is written to DIR.lava.json\n"
	"  --board NAME   the campaign's board this LAVA device is (default: its only board)\n"
	"  --cycles N, --agent PATH   as for powercut run\n"
	"  --print        print the lava-test-case and lava-test-raise commands instead of\n"
	"                 running them (outside LAVA)\n"
	"Exit 0 when the results went to LAVA (a FAIL is a failed test case), 2 on errors\n"
	"(after lava-test-raise). docs/lava.md.\n";

/* ---- parsing LAVA's commands ------------------------------------------- */

int lava_split(const char *cmd, char *buf, size_t len, char **argv, int max)
{
	size_t o = 0;
	int n = 0;
	const char *p = cmd;

	if (strlen(cmd) >= len || strlen(cmd) > LAVA_CMD_MAX)
		return -EINVAL;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		if (n + 1 >= max)
			return -EINVAL;
		argv[n++] = buf + o;
		while (*p && *p != ' ' && *p != '\t') {
			if (strchr("$`|;&<>()*?[]{}~#\n\r", *p))
				return -EINVAL;		/* not a simple command */
			if (*p == '\'') {
				const char *e = strchr(p + 1, '\'');

				if (!e)
					return -EINVAL;
				memcpy(buf + o, p + 1, (size_t)(e - p - 1));
				o += (size_t)(e - p - 1);
				p = e + 1;
			} else if (*p == '"') {
				for (p++; *p && *p != '"'; p++) {
					if (*p == '$' || *p == '`')
						return -EINVAL;
					if (*p == '\\' && p[1] && strchr("\"\\", p[1]))
						p++;
					buf[o++] = *p;
				}
				if (*p != '"')
					return -EINVAL;
				p++;
			} else if (*p == '\\') {
				if (!p[1])
					return -EINVAL;
				buf[o++] = p[1];
				p += 2;
			} else {
				buf[o++] = *p++;
			}
		}
		buf[o++] = 0;
	}
	argv[n] = NULL;
	return n;
}

static int copy_field(char *dst, size_t len, const char *src, size_t n)
{
	if (!n || n >= len)
		return -EINVAL;
	memcpy(dst, src, n);
	dst[n] = 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)dst[i] < 0x21 || dst[i] == 0x7f || dst[i] == '"' || dst[i] == '\\')
			return -EINVAL;
	return 0;
}

static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* http://HOST[:PORT]/power/control/CMD?hostname=H&port=P (either order, more keys allowed) */
static int parse_pdu_url(const char *u, struct lava_pdu *out)
{
	const char *path, *q;

	if (strncmp(u, "http://", 7))
		return -EINVAL;
	path = strchr(u + 7, '/');
	if (!path || strncmp(path, "/power/control/", 15))
		return -EINVAL;
	if (copy_field(out->url, sizeof(out->url), u, (size_t)(path - u)))
		return -EINVAL;
	q = strchr(path + 15, '?');
	if (!q || copy_field(out->command, sizeof(out->command), path + 15, (size_t)(q - path - 15)))
		return -EINVAL;
	out->hostname[0] = out->port[0] = 0;
	for (const char *k = q + 1; *k;) {
		const char *amp = strchr(k, '&'), *end = amp ? amp : k + strlen(k);
		const char *eq = memchr(k, '=', (size_t)(end - k));

		if (eq && eq - k == 8 && !strncmp(k, "hostname", 8)) {
			if (copy_field(out->hostname, sizeof(out->hostname), eq + 1, (size_t)(end - eq - 1)))
				return -EINVAL;
		} else if (eq && eq - k == 4 && !strncmp(k, "port", 4)) {
			if (copy_field(out->port, sizeof(out->port), eq + 1, (size_t)(end - eq - 1)))
				return -EINVAL;
		}
		k = amp ? amp + 1 : end;
	}
	return out->hostname[0] && out->port[0] ? 0 : -EINVAL;
}

int lava_parse_pdu(const char *cmd, struct lava_pdu *out)
{
	char buf[LAVA_CMD_MAX + 1], *argv[LAVA_ARGS_MAX];
	int n = lava_split(cmd, buf, sizeof(buf), argv, LAVA_ARGS_MAX);

	memset(out, 0, sizeof(*out));
	if (n < 2)
		return -EINVAL;
	if (!strcmp(base(argv[0]), "pduclient")) {
		const char *daemon = NULL, *host = NULL, *port = NULL, *command = NULL;

		for (int i = 1; i < n; i++) {
			const char **slot = !strcmp(argv[i], "--daemon") ? &daemon :
					    !strcmp(argv[i], "--hostname") ? &host :
					    !strcmp(argv[i], "--port") ? &port :
					    !strcmp(argv[i], "--command") ? &command : NULL;

			if (!slot) {
				if (!strcmp(argv[i], "--delay") && i + 1 < n) {
					i++;	/* pdudaemon delays the request; powercut times its own cuts */
					continue;
				}
				return -EINVAL;
			}
			if (i + 1 >= n)
				return -EINVAL;
			*slot = argv[++i];
		}
		if (!daemon || !host || !port || !command)
			return -EINVAL;
		/* pduclient speaks to the daemon's TCP listener, port 16421 */
		int w = strchr(daemon, ':') ? snprintf(out->url, sizeof(out->url), "tcp://%s", daemon)
					   : snprintf(out->url, sizeof(out->url), "tcp://%s:16421", daemon);
		if (w < 0 || (size_t)w >= sizeof(out->url) ||
		    copy_field(out->hostname, sizeof(out->hostname), host, strlen(host)) ||
		    copy_field(out->port, sizeof(out->port), port, strlen(port)) ||
		    copy_field(out->command, sizeof(out->command), command, strlen(command)))
			return -EINVAL;
		return 0;
	}
	if (!strcmp(base(argv[0]), "curl") || !strcmp(base(argv[0]), "wget")) {
		const char *url = NULL;

		for (int i = 1; i < n; i++) {
			if (!strncmp(argv[i], "http://", 7)) {
				if (url)
					return -EINVAL;
				url = argv[i];
			} else if (argv[i][0] != '-') {
				return -EINVAL;	/* an option's argument, or a second operand: not ours to read */
			}
		}
		return url ? parse_pdu_url(url, out) : -EINVAL;
	}
	return -EINVAL;
}

int lava_parse_console(const char *cmd, char *url, size_t len, char *err, size_t errlen)
{
	char buf[LAVA_CMD_MAX + 1], *argv[LAVA_ARGS_MAX];
	int n = lava_split(cmd, buf, sizeof(buf), argv, LAVA_ARGS_MAX);
	const char *scheme;
	char *end;

	if (n < 0)
		return pc_fail(err, errlen, -EINVAL, "'%.200s' is not a simple command", cmd);
	if (n == 3 && !strcmp(base(argv[0]), "telnet"))
		scheme = "telnet";
	else if (n == 3 && (!strcmp(base(argv[0]), "nc") || !strcmp(base(argv[0]), "netcat")))
		scheme = "tcp";
	else {
		return pc_fail(err, errlen, -EINVAL, "'%.200s': powercut reads a console from `telnet HOST PORT` or `nc HOST PORT` "
			 "(ser2net), not this one", cmd);
	}
	errno = 0;
	long port = strtol(argv[2], &end, 10);
	if (errno || *end || port < 1 || port > 65535)
		return pc_fail(err, errlen, -EINVAL, "'%.200s': the port is not a number from 1 to 65535", cmd);
	for (const char *h = argv[1]; *h; h++)
		if ((unsigned char)*h < 0x21 || strchr("/\"\\@", *h))
			return pc_fail(err, errlen, -EINVAL, "'%.200s': the host is not a name or an address", cmd);
	int w = strchr(argv[1], ':') ? snprintf(url, len, "%s://[%s]:%ld", scheme, argv[1], port)
				     : snprintf(url, len, "%s://%s:%ld", scheme, argv[1], port);
	if (w < 0 || (size_t)w >= len)
		return pc_fail(err, errlen, -EINVAL, "'%.200s': the host name is too long", cmd);
	return 0;
}

void lava_case_id(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (; *in && o + 1 < len; in++)
		out[o++] = (strchr("_.-", *in) || (*in >= 'a' && *in <= 'z') || (*in >= 'A' && *in <= 'Z') ||
			    (*in >= '0' && *in <= '9')) ? *in : '_';
	out[o] = 0;
}

/* ---- telling LAVA ------------------------------------------------------- */

struct teller {
	int print;	/* --print: say the commands instead of running them */
	int raised;
};

/* argv run (looked up in PATH) to its end: its exit code (127: it could not run), or the -errno of its start or reap. */
static int run_argv(char *const argv[])
{
	struct pc_spawn s;
	struct pc_child c;
	int st, rc;

	pc_spawn_init(&s);
	s.flags = PC_SPAWN_PATH | PC_SPAWN_EXEC_ERR;
	if ((rc = pc_spawn(&c, &s, argv)) < 0)
		return rc;
	rc = pc_spawn_exec_result(&c);
	if (rc < 0) {
		fprintf(stderr, "powercut lava: cannot run %s: %s\n", argv[0], strerror(-rc));
		return 127;
	}
	if ((rc = pc_reap(c.pid, &st, PC_REAP_FOREVER)) < 0)
		return rc;
	return pc_exit_code(st);
}

static void say_argv(char *const argv[])
{
	for (int i = 0; argv[i]; i++) {
		int plain = argv[i][0] != 0;

		for (const char *c = argv[i]; *c; c++)
			if (!strchr("_.-+/:=%,", *c) && !((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
							 (*c >= '0' && *c <= '9')))
				plain = 0;
		if (plain) {
			printf("%s%s", i ? " " : "", argv[i]);
			continue;
		}
		printf("%s'", i ? " " : "");
		for (const char *c = argv[i]; *c; c++)
			if (*c == '\'')
				fputs("'\\''", stdout);
			else
				putchar(*c);
		putchar('\'');
	}
	putchar('\n');
	fflush(stdout);
}

static int tell(struct teller *t, char *const argv[])
{
	if (t->print) {
		say_argv(argv);
		return 0;
	}
	int rc = run_argv(argv);
	if (rc) {
		pc_err("lava: %s exited with status %d", argv[0], rc);
		return -EIO;
	}
	return 0;
}

static int test_case(struct teller *t, const char *name, const char *result, double measurement, const char *units)
{
	char id[160], meas[64];

	lava_case_id(name, id, sizeof(id));
	if (measurement >= 0 && units) {
		snprintf(meas, sizeof(meas), "%.1f", measurement);
		char *argv[] = { "lava-test-case", id, "--result", (char *)result, "--measurement", meas,
				 "--units", (char *)units, NULL };
		return tell(t, argv);
	}
	char *argv[] = { "lava-test-case", id, "--result", (char *)result, NULL };
	return tell(t, argv);
}

/* lava-test-raise ends the test shell: it is said once, last. */
static int test_raise(struct teller *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int test_raise(struct teller *t, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (char *c = msg; *c; c++)		/* one line, printable */
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	pc_err("lava: %s", msg);
	t->raised = 1;
	char *argv[] = { "lava-test-raise", msg, NULL };
	return tell(t, argv);
}

/* ---- the campaign as LAVA's device makes it ----------------------------- */

/* The relay from the power commands: pdudaemon when both are its requests for one outlet. */
static json_object *relay_from_env(const char *on, const char *off)
{
	struct lava_pdu pon, poff;
	json_object *r = json_object_new_object();

	if (!lava_parse_pdu(on, &pon) && !lava_parse_pdu(off, &poff) && !strcmp(pon.url, poff.url) &&
	    !strcmp(pon.hostname, poff.hostname) && !strcmp(pon.port, poff.port) &&
	    !strcmp(pon.command, "on") && !strcmp(poff.command, "off")) {
		char *end;
		long port = strtol(pon.port, &end, 10);

		json_object_object_add(r, "driver", json_object_new_string("pdudaemon"));
		json_object_object_add(r, "url", json_object_new_string(pon.url));
		json_object_object_add(r, "hostname", json_object_new_string(pon.hostname));
		json_object_object_add(r, "port", !*end && port >= 0 && port <= INT_MAX
				       ? json_object_new_int((int)port) : json_object_new_string(pon.port));
		return r;
	}
	json_object_object_add(r, "driver", json_object_new_string("command"));
	json_object_object_add(r, "on", json_object_new_string(on));
	json_object_object_add(r, "off", json_object_new_string(off));
	return r;
}

static json_object *load_json(const char *path, char *err, size_t errlen)
{
	struct stat st;
	json_object *o;

	if (stat(path, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > 16 << 20) {
		snprintf(err, errlen, "%s: not a regular file of at most 16 MiB", path);
		return NULL;
	}
	o = json_object_from_file(path);
	if (!o)
		snprintf(err, errlen, "%s: not JSON: %s", path, json_util_get_last_err());
	return o;
}

/*
 * The one board this LAVA device is (board, or the only one) left alone in
 * doc's "boards": it, or NULL with err.
 */
static json_object *lava_pick_board(json_object *doc, const char *path, const char *board, char *err,
				    size_t errlen)
{
	json_object *boards, *b = NULL, *nm;

	if (!json_object_object_get_ex(doc, "boards", &boards) || !json_object_is_type(boards, json_type_array) ||
	    json_object_array_length(boards) == 0) {
		snprintf(err, errlen, "%s: no \"boards\" array", path);
		return NULL;
	}
	for (size_t i = 0; i < json_object_array_length(boards); i++) {
		json_object *c = json_object_array_get_idx(boards, i);
		const char *s = json_object_object_get_ex(c, "name", &nm) ? json_object_get_string(nm) : NULL;

		if (board ? (s && !strcmp(s, board)) : json_object_array_length(boards) == 1)
			b = c;
	}
	if (!b) {
		if (board)
			snprintf(err, errlen, "%s: no board named '%s'", path, board);
		else
			snprintf(err, errlen, "%s: %zu boards: say which this LAVA device is (--board NAME)", path,
				 json_object_array_length(boards));
		return NULL;
	}
	if (!json_object_is_type(b, json_type_object) || !json_object_object_get_ex(b, "name", &nm) ||
	    !json_object_is_type(nm, json_type_string) || !json_object_get_string_len(nm)) {
		snprintf(err, errlen, "%s: the board is not an object with a \"name\" (see docs/config.md)", path);
		return NULL;
	}
	/* the campaign runs this board only: one LAVA device, one job */
	json_object_get(b);
	json_object_object_add(doc, "boards", json_object_new_array());
	json_object_object_get_ex(doc, "boards", &boards);
	json_object_array_add(boards, b);
	return b;
}

/* The board's relay: LAVA's power commands (LAVA_POWER_ON/OFF_COMMAND), which must be set. */
static int lava_power(json_object *b, const char *name, char *err, size_t errlen)
{
	const char *on = getenv("LAVA_POWER_ON_COMMAND"), *off = getenv("LAVA_POWER_OFF_COMMAND");

	if (!off || !*off)
		return pc_fail(err, errlen, -EINVAL, "board %s: LAVA_POWER_OFF_COMMAND is not set (the device dictionary has no "
			 "power_off command): powercut cannot cut the power", name);
	if (!on || !*on)
		return pc_fail(err, errlen, -EINVAL, "board %s: LAVA_POWER_ON_COMMAND is not set (the device dictionary has no "
			 "power_on command)", name);
	if (strlen(on) > LAVA_CMD_MAX || strlen(off) > LAVA_CMD_MAX)
		return pc_fail(err, errlen, -EINVAL, "board %s: a power command is longer than %d bytes", name, LAVA_CMD_MAX);
	json_object_object_add(b, "relay", relay_from_env(on, off));
	return 0;
}

/* The board's link (tcp unless given) on LAVA's console (LAVA_CONNECTION_COMMAND); a serial link needs it. */
static int lava_link(json_object *b, const char *path, const char *name, char *err, size_t errlen)
{
	const char *conn = getenv("LAVA_CONNECTION_COMMAND");
	json_object *link = NULL, *type;
	char url[300], why[400];
	int serial;

	if (json_object_object_get_ex(b, "link", &link) && !json_object_is_type(link, json_type_object))
		return pc_fail(err, errlen, -EINVAL, "%s: board %s: \"link\" is not an object (see docs/config.md)", path, name);
	if (!link) {
		link = json_object_new_object();
		json_object_object_add(link, "type", json_object_new_string("tcp"));
		json_object_object_add(b, "link", link);
	}
	serial = json_object_object_get_ex(link, "type", &type) && !strcmp(json_object_get_string(type), "serial");
	if (conn && *conn) {
		if (lava_parse_console(conn, url, sizeof(url), why, sizeof(why)))
			return pc_fail(err, errlen, -EINVAL, "board %s: LAVA_CONNECTION_COMMAND %s", name, why);
		json_object_object_add(link, serial ? "device" : "console", json_object_new_string(url));
	} else if (serial) {
		return pc_fail(err, errlen, -EINVAL, "board %s: its link is the serial console but LAVA_CONNECTION_COMMAND is not set "
			 "(the device dictionary has no connection command tagged primary)", name);
	}
	return 0;
}

/*
 * The lab's campaign with the board's relay and console filled in from
 * LAVA. NULL and err set when LAVA's device cannot run it.
 */
static json_object *campaign_for_lava(const char *path, const char *board, char *name, size_t namelen,
				      char *err, size_t errlen)
{
	json_object *doc = load_json(path, err, errlen), *b;

	if (!doc)
		return NULL;
	if (!(b = lava_pick_board(doc, path, board, err, errlen)))
		goto fail;
	snprintf(name, namelen, "%s", json_object_get_string(json_object_object_get(b, "name")));
	if (lava_power(b, name, err, errlen) || lava_link(b, path, name, err, errlen))
		goto fail;
	return doc;
fail:
	json_object_put(doc);
	return NULL;
}

/* ---- running powercut ---------------------------------------------------- */

static int self_run(char *const args[])
{
	char *argv[16];
	int n = 0;

	argv[n++] = "/proc/self/exe";
	for (; args[n - 1] && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;

	struct pc_spawn s;
	struct pc_child c;
	int st, rc;

	pc_spawn_init(&s);
	if ((rc = pc_spawn(&c, &s, argv)) < 0 || (rc = pc_reap(c.pid, &st, PC_REAP_FOREVER)) < 0)
		return rc;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;	/* killed: an error of the run */
}

/* The device's first "not judged" reason, for lava-test-raise. */
static const char *first_unjudged(json_object *dev)
{
	json_object *u, *g;

	if (!json_object_object_get_ex(dev, "unjudged", &u) || !json_object_is_type(u, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(u); i++) {
		g = json_object_array_get_idx(u, i);
		const char *v = pc_jstr(g, "verdict", NULL);
		if (v && pc_outcome_from_name(v) == PC_OUT_INFRA_ERROR)
			return pc_jstr(g, "reason", NULL);
	}
	return NULL;
}

/* Why a device is INCOMPLETE, the first `why`. */
static const char *incomplete_why(json_object *dev)
{
	json_object *a;

	if (!json_object_object_get_ex(dev, "incomplete", &a) || !json_object_is_type(a, json_type_array) ||
	    !json_object_array_length(a))
		return NULL;
	return pc_jstr(json_object_array_get_idx(a, 0), "why", NULL);
}

/* The device's inconclusive[] entry for MODE (report_json.c: a mode whose
 * cuts did not meet its writes), or NULL. */
static json_object *inconclusive_mode(json_object *dev, const char *mode)
{
	json_object *a;

	if (!json_object_object_get_ex(dev, "inconclusive", &a) || !json_object_is_type(a, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(a) && i < 64; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		const char *m = pc_jstr(e, "mode", NULL);

		if (m && !strcmp(m, mode))
			return e;
	}
	return NULL;
}

/* The report's devices as LAVA results. 0, or -EIO when one was raised. */
static int report_to_lava(struct teller *t, json_object *rep, const char *board)
{
	json_object *devs, *modes, *dev;
	char name[256];
	int rc = 0;

	if (!json_object_object_get_ex(rep, "devices", &devs) || !json_object_is_type(devs, json_type_array) ||
	    !json_object_array_length(devs))
		return test_raise(t, "powercut: board %s: the report names no device (no cycle was judged)", board), -EIO;
	for (size_t i = 0; i < json_object_array_length(devs); i++) {
		dev = json_object_array_get_idx(devs, i);
		const char *result = pc_jstr(dev, "result", NULL);

		if (!result)
			continue;
		if (json_object_object_get_ex(dev, "modes", &modes) && json_object_is_type(modes, json_type_array)) {
			for (size_t m = 0; m < json_object_array_length(modes); m++) {
				json_object *md = json_object_array_get_idx(modes, m), *vd, *rate, *rps;
				const char *mode = pc_jstr(md, "mode", NULL);
				int64_t pass = 0, fail = 0;

				if (!mode)
					continue;
				if (json_object_object_get_ex(md, "verdicts", &vd)) {
					pass = pc_jint_or(vd, pc_outcome_names[PC_OUT_PASS], 0);
					fail = pc_jint_or(vd, pc_outcome_names[PC_OUT_FAIL], 0) +
					       pc_jint_or(vd, pc_outcome_names[PC_OUT_BOOT_FAIL], 0);
				}
				double r = json_object_object_get_ex(md, "rate", &rate) &&
					   json_object_object_get_ex(rate, "records_per_s", &rps)
					   ? json_object_get_double(rps) : -1;
				snprintf(name, sizeof(name), "powercut-%s-%s", board, mode);
				/* a mode whose cuts missed its writes proved nothing:
				 * "unknown", never "pass" (docs/verdicts.md) */
				const char *res_m = fail ? "fail" : inconclusive_mode(dev, mode) ? "unknown" : pass ? "pass" : "skip";
				if (test_case(t, name, res_m, r > 0 ? r : -1,
					      r > 0 ? "records/s" : NULL))
					rc = -EIO;
			}
		}
		snprintf(name, sizeof(name), "powercut-%s", board);
		int res = pc_result_from_name(result);
		if (res == PC_RES_PASS || res == PC_RES_FAIL || res == PC_RES_BOOT_FAIL) {
			if (test_case(t, name, res == PC_RES_PASS ? "pass" : "fail", -1, NULL))
				rc = -EIO;
			continue;
		}
		if (res == PC_RES_INCONCLUSIVE) {
			json_object *a = NULL;
			const char *w = json_object_object_get_ex(dev, "inconclusive", &a) &&
						json_object_is_type(a, json_type_array) && json_object_array_length(a)
					? pc_jstr(json_object_array_get_idx(a, 0), "why", NULL) : NULL;

			if (test_case(t, name, "unknown", -1, NULL))
				rc = -EIO;
			printf("powercut lava: board %s is INCONCLUSIVE, neither PASS nor FAIL: %s\n", board,
			       w ? w : "too few cuts landed during the writes");
			continue;
		}
		/* INCOMPLETE: the lab's trouble (given up, too many INFRA_ERROR) ends the job Incomplete */
		const char *why = incomplete_why(dev), *reason = first_unjudged(dev);
		if (why && (!strcmp(why, pc_incomplete_names[PC_INC_GIVEN_UP]) ||
			    !strcmp(why, pc_incomplete_names[PC_INC_INFRA_SHARE]) ||
			    !strcmp(why, pc_incomplete_names[PC_INC_NOTHING_JUDGED]))) {
			test_raise(t, "powercut: board %s: not judged (%s): %s", board, why,
				   reason ? reason : "see the results folder");
			return -EIO;
		}
		if (test_case(t, name, "skip", -1, NULL))
			rc = -EIO;
		printf("powercut lava: board %s is INCOMPLETE (%s): the next job with the same results folder resumes it\n",
		       board, why ? why : "cycles left");
	}
	return rc;
}

/* The campaign as run (campaign_for_lava) written to cfg: 0, or -errno raised to LAVA. */
static int lava_write_campaign(struct teller *t, const char *campaign, const char *board, const char *cfg,
			       char *name, size_t namelen)
{
	char err[1024];
	json_object *doc = campaign_for_lava(campaign, board, name, namelen, err, sizeof(err));

	if (!doc) {
		test_raise(t, "powercut: %s", err);
		return -EINVAL;
	}
	if (json_object_to_file_ext(cfg, doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE)) {
		int e = errno;

		json_object_put(doc);
		test_raise(t, "powercut: board %s: cannot write %s: %s", name, cfg, strerror(e));
		return e ? -e : -EIO;
	}
	json_object_put(doc);
	printf("powercut lava: board %s: the campaign as run is %s\n", name, cfg);
	fflush(stdout);
	return 0;
}

/* powercut run on the campaign as run, no report: its exit status. */
static int lava_run(const char *cfg, const char *results, const char *cycles, const char *agent)
{
	char *run[12] = { "run", (char *)cfg, "--results", (char *)results, "--no-report" };
	int n = 5;

	if (cycles) {
		run[n++] = "--cycles";
		run[n++] = (char *)cycles;
	}
	if (agent) {
		run[n++] = "--agent";
		run[n++] = (char *)agent;
	}
	run[n] = NULL;
	return self_run(run);
}

/* powercut report as JSON into rep, then given to LAVA as test cases: 0, or -EIO raised. */
static int lava_give_report(struct teller *t, char *rep, const char *results, const char *name)
{
	char err[1024];
	char *report[] = { "report", "--format", "json", "-o", rep, (char *)results, NULL };
	int rrc = self_run(report), lrc;
	json_object *r = rrc >= 0 && rrc != 2 ? load_json(rep, err, sizeof(err)) : NULL;

	if (!r) {
		test_raise(t, "powercut: board %s: powercut report exited %d: no report to give LAVA", name, rrc);
		return -EIO;
	}
	lrc = report_to_lava(t, r, name);
	json_object_put(r);
	return t->raised || lrc ? -EIO : 0;
}

int cmd_lava(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "results", required_argument, NULL, 'r' },
		{ "board", required_argument, NULL, 'b' },
		{ "cycles", required_argument, NULL, 'c' },
		{ "agent", required_argument, NULL, 'a' },
		{ "print", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *results = NULL, *board = NULL, *cycles = NULL, *agent = NULL;
	struct teller t = { 0 };
	char name[128] = "?", cfg[PATH_MAX], rep[PATH_MAX];
	int o;

	optind = 1;
	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case 'r': results = optarg; break;
		case 'b': board = optarg; break;
		case 'c': cycles = optarg; break;
		case 'a': agent = optarg; break;
		case 'p': t.print = 1; break;
		case 'h': fputs(lava_usage, stdout); return 0;
		default: fputs(lava_usage, stderr); return 2;
		}
	}
	if (optind + 1 != argc || !results) {
		pc_err("lava: %s (see powercut lava --help)", !results ? "--results DIR is required" : "give one CAMPAIGN");
		return 2;
	}
	size_t rl = strlen(results);
	while (rl > 1 && results[rl - 1] == '/')
		rl--;
	if (rl + sizeof(".report.json") >= sizeof(cfg)) {
		pc_err("lava: --results: path too long");
		return 2;
	}
	snprintf(cfg, sizeof(cfg), "%.*s.lava.json", (int)rl, results);
	snprintf(rep, sizeof(rep), "%.*s.report.json", (int)rl, results);

	if (lava_write_campaign(&t, argv[optind], board, cfg, name, sizeof(name)))
		return 2;
	int rc = lava_run(cfg, results, cycles, agent);
	if (rc == 2 || rc < 0) {
		test_raise(&t, "powercut: board %s: powercut run exited %d (an error of the run, not a verdict): "
			   "its messages are in the job log", name, rc);
		return 2;
	}
	if (lava_give_report(&t, rep, results, name))
		return 2;
	printf("powercut lava: board %s: results given to LAVA (powercut run exited %d)\n", name, rc);
	return 0;
}

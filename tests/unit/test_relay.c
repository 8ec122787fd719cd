/*
 * test_relay.c - relay registry, config checks, and the command and sim
 * drivers run against real shell commands and a fake agent script.
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netdb.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "common/resolve.h"
#include "common/spawn.h"
#include "relay/relay.h"
#include "relay/relay_group.h"
#include "relay/relay_lock.h"
#include "relay/relay_worker.h"
#include "vboard/relay_qemu.h"
#include "vboard/vboard.h"

#define HAS(hay, needle) (strstr((hay), (needle)) != NULL)

/* Paths in tests are short; a vsnprintf wrapper keeps -Wformat-truncation quiet. */
static void strf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void strf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* Gone, or a zombie nobody reaped yet (PID 1 in a container may not). */
static int pid_gone(pid_t pid)
{
	/* generous: a SIGKILLed process on a loaded machine still has to be
	 * scheduled to die; a live one costs the whole wait, a dead one none */
	uint64_t deadline = pc_now_ms() + 30000;
	char path[64], stat[256];

	strf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (;;) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return 1;
		if (pc_read_text(path, stat, sizeof(stat)) == 0) {
			const char *rp = strrchr(stat, ')');

			if (rp && rp[1] == ' ' && rp[2] == 'Z')
				return 1;
		}
		/* SIGKILL is delivered asynchronously: give it a moment */
		if (pc_now_ms() >= deadline)
			return 0;
		pc_sleep_us(10000);
	}
}

/* Wait for a pid file written by a child; 0 if it never appears. */
static pid_t read_pid_file(const char *path)
{
	uint64_t deadline = pc_now_ms() + 5000;
	char buf[32];

	while (pc_now_ms() < deadline) {
		if (pc_read_text(path, buf, sizeof(buf)) == 0 && buf[0])
			return (pid_t)atoi(buf);
		pc_sleep_us(10000);
	}
	return 0;
}

/* A pid the shell wrote before it was killed: 0 if it had not got that far
 * (the group is dead and reaped, so the file is final; no waiting). */
static pid_t pid_written(const char *path)
{
	char buf[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* echo's one write ends with its newline: a pid cut short has none */
	return strchr(buf, '\n') ? (pid_t)atoi(buf) : 0;
}

static int write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	int rc;

	if (fd < 0)
		return -errno;
	rc = pc_write_all(fd, text, strlen(text));
	close(fd);
	return rc;
}

/* Whole file into a malloc'd string (NULL if missing). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = calloc(1, 65536);
	n = fread(buf, 1, 65535, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void test_registry(void)
{
	struct relay r;
	char err[512];
	int rc;

	CU_ASSERT_PTR_EQUAL(relay_find("sim"), &relay_sim_ops);
	CU_ASSERT_PTR_EQUAL(relay_find("command"), &relay_command_ops);
	CU_ASSERT_PTR_NULL(relay_find("nope"));
	CU_ASSERT_PTR_NULL(relay_find(""));
	CU_ASSERT_PTR_NULL(relay_find(NULL));
	CU_ASSERT_STRING_EQUAL(relay_names(), "sim command gpiod hidrelay lcus pdudaemon sysrq qemu");
	CU_ASSERT_STRING_EQUAL(relay_names(), "sim command gpiod hidrelay lcus pdudaemon sysrq qemu");	/* cached, still right */
	/* vboard/'s qemu, added from above (suite_relay, as main() does): once, its name taken */
	CU_ASSERT_PTR_EQUAL(relay_find("qemu"), &relay_qemu_ops);
	CU_ASSERT_EQUAL(vboard_register(), 0);
	CU_ASSERT_EQUAL(relay_register(&(struct relay_ops){ .name = "sim" }), -EEXIST);
	CU_ASSERT_STRING_EQUAL(relay_names(), "sim command gpiod hidrelay lcus pdudaemon sysrq qemu");

	rc = relay_open(&r, "nope", NULL, &(struct relay_ctx){ .board = "b1" }, err, sizeof(err));
	CU_ASSERT_EQUAL(rc, -EINVAL);
	CU_ASSERT_STRING_EQUAL(err, "board b1: unknown relay driver 'nope' (valid: sim command gpiod hidrelay lcus pdudaemon sysrq qemu)");
	CU_ASSERT_PTR_NULL(r.ops);
	relay_close(&r);

	/* never opened, and operations on it fail cleanly */
	memset(&r, 0, sizeof(r));
	CU_ASSERT_EQUAL(relay_on(&r), -EBADF);
	CU_ASSERT_EQUAL(relay_get(&r), -EBADF);
	relay_close(&r);
	relay_close(NULL);
}

struct check_case {
	const struct relay_ops *ops;
	const char *json;
	int rc;
	const char *err;	/* the message starts with this */
};

static void test_check(void)
{
	const struct check_case cases[] = {
		{ &relay_sim_ops, "{\"driver\":\"sim\"}", 0, NULL },
		{ &relay_sim_ops, "{}", 0, NULL },
		{ &relay_sim_ops, "{\"driver\":\"sim\",\"boot_delay_ms\":0,\"timeout_ms\":5000}", 0, NULL },
		{ &relay_sim_ops, "{\"driver\":\"sim\",\"bot_delay_ms\":5}", -EINVAL,
		  "unknown key 'bot_delay_ms' (valid: driver, boot_delay_ms, timeout_ms, switch_ms, prepare_timeout_ms)" },
		{ &relay_sim_ops, "{\"boot_delay_ms\":\"5\"}", -EINVAL,
		  "boot_delay_ms: expected an integer from 0 to 3600000, got \"5\"" },
		{ &relay_sim_ops, "{\"boot_delay_ms\":-1}", -EINVAL, "boot_delay_ms: expected an integer" },
		{ &relay_sim_ops, "{\"timeout_ms\":0}", -EINVAL, "timeout_ms: expected an integer from 1" },
		{ &relay_sim_ops, "{\"timeout_ms\":1.5}", -EINVAL, "timeout_ms: expected an integer" },
		{ &relay_sim_ops, "{\"timeout_ms\":true}", -EINVAL, "timeout_ms: expected an integer" },
		{ &relay_sim_ops, "{\"driver\":\"command\"}", -EINVAL, "driver: expected \"sim\"" },
		{ &relay_sim_ops, "[1]", -EINVAL, "expected an object" },
		{ &relay_command_ops, "{\"driver\":\"command\",\"on\":\"a\",\"off\":\"b\"}", 0, NULL },
		{ &relay_command_ops,
		  "{\"driver\":\"command\",\"on\":\"a\",\"off\":\"b\",\"get\":\"c\",\"timeout_ms\":200}", 0, NULL },
		{ &relay_command_ops, "{\"driver\":\"command\",\"off\":\"b\"}", -EINVAL, "on: missing" },
		{ &relay_command_ops, "{\"on\":\"a\"}", -EINVAL, "off: missing" },
		{ &relay_command_ops, "{\"on\":\"a\",\"off\":5}", -EINVAL,
		  "off: expected a non-empty string (a shell command), got 5" },
		{ &relay_command_ops, "{\"on\":\"a\",\"off\":\"\"}", -EINVAL, "off: expected a non-empty string" },
		{ &relay_command_ops, "{\"on\":\"a\",\"off\":\"b\",\"get\":[]}", -EINVAL,
		  "get: expected a non-empty string" },
		{ &relay_command_ops, "{\"on\":\"a\",\"of\":\"b\"}", -EINVAL,
		  "unknown key 'of' (valid: driver, on, off, get, timeout_ms, board_id)" },
		{ &relay_command_ops, "{\"on\":\"a\",\"off\":\"b\",\"board_id\":\"rpi4-lab2.slot_3\"}", 0, NULL },
		{ &relay_command_ops, "{\"on\":\"a\",\"off\":\"b\",\"board_id\":\"lab/2\"}", -EINVAL,
		  "board_id: expected the physical board's name in the lab, 1 to 63 of [A-Za-z0-9_.-]" },
		{ &relay_command_ops, "{\"on\":\"a\",\"off\":\"b\",\"board_id\":\"\"}", -EINVAL, "board_id: expected" },
		{ &relay_command_ops, "{\"on\":\"a\",\"off\":\"b\",\"board_id\":7}", -EINVAL, "board_id: expected" },
		{ &relay_command_ops, "{\"on\":\"a\",\"off\":\"b\",\"timeout_ms\":\"10s\"}", -EINVAL,
		  "timeout_ms: expected an integer from 1 to 3600000, got \"10s\"" },
		{ &relay_command_ops, "{\"on\":\"a\",\"off\":\"b\",\"timeout_ms\":-5}", -EINVAL,
		  "timeout_ms: expected an integer" },
		{ &relay_command_ops, "{\"driver\":\"sim\",\"on\":\"a\",\"off\":\"b\"}", -EINVAL,
		  "driver: expected \"command\"" },
	};

	for (size_t i = 0; i < PC_ARRAY_SIZE(cases); i++) {
		json_object *cfg = json_tokener_parse(cases[i].json);
		char err[512] = "";
		int rc;

		CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
		rc = cases[i].ops->check(cfg, err, sizeof(err));
		if (rc != cases[i].rc || (cases[i].err && strncmp(err, cases[i].err, strlen(cases[i].err))))
			fprintf(stderr, "\ncase %zu (%s %s): rc %d, err '%s'\n", i, cases[i].ops->name,
				cases[i].json, rc, err);
		CU_ASSERT_EQUAL(rc, cases[i].rc);
		if (cases[i].err)
			CU_ASSERT_EQUAL(strncmp(err, cases[i].err, strlen(cases[i].err)), 0);
		json_object_put(cfg);
	}
}

/* A command relay for board "cmd-1" with the given commands (get may be NULL). */
static int open_cmd(struct relay *r, const char *on, const char *off, const char *get, int timeout_ms,
		    char *err, size_t errlen)
{
	json_object *cfg = json_object_new_object();
	struct relay_ctx ctx = { .board = "cmd-1" };
	int rc;

	json_object_object_add(cfg, "driver", json_object_new_string("command"));
	json_object_object_add(cfg, "on", json_object_new_string(on));
	json_object_object_add(cfg, "off", json_object_new_string(off));
	if (get)
		json_object_object_add(cfg, "get", json_object_new_string(get));
	if (timeout_ms)
		json_object_object_add(cfg, "timeout_ms", json_object_new_int(timeout_ms));
	rc = relay_open(r, "command", cfg, &ctx, err, errlen);
	json_object_put(cfg);	/* the driver keeps copies */
	return rc;
}

static void test_command_switch(void)
{
	const char *dir = pc_test_tmpdir("relay-cmd");
	char on[PATH_MAX * 2], off[PATH_MAX * 2], get[PATH_MAX * 2], state[PATH_MAX], env[PATH_MAX];
	char err[512], *text;
	struct relay r;

	strf(state, sizeof(state), "%s/state", dir);
	strf(env, sizeof(env), "%s/env", dir);
	strf(on, sizeof(on), "echo on > '%s'; echo \"$PC_BOARD $PC_ACTION\" >> '%s'", state, env);
	strf(off, sizeof(off), "echo off > '%s'; echo \"$PC_BOARD $PC_ACTION\" >> '%s'", state, env);
	strf(get, sizeof(get), "cat '%s'", state);
	CU_ASSERT_EQUAL_FATAL(open_cmd(&r, on, off, get, 0, err, sizeof(err)), 0);

	CU_ASSERT_EQUAL(relay_on(&r), 0);
	CU_ASSERT_EQUAL(relay_get(&r), 1);
	CU_ASSERT_EQUAL(relay_off(&r), 0);
	CU_ASSERT_EQUAL(relay_get(&r), 0);
	CU_ASSERT_EQUAL(relay_on(&r), 0);
	CU_ASSERT_EQUAL(relay_get(&r), 1);
	text = slurp(env);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_STRING_EQUAL(text, "cmd-1 on\ncmd-1 off\ncmd-1 on\n");
	free(text);
	relay_close(&r);
	CU_ASSERT_PTR_NULL(r.ops);
	relay_close(&r);	/* twice is fine */

	/* no get command */
	CU_ASSERT_EQUAL_FATAL(open_cmd(&r, "true", "true", NULL, 0, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_on(&r), 0);
	CU_ASSERT_EQUAL(relay_get(&r), -ENOTSUP);
	CU_ASSERT(HAS(r.err, "board cmd-1: relay command: no 'get' command configured"));
	relay_close(&r);
}

/* A command relay in a worker: requests in order, the switch instant, the
 * off time kept before an on, malformed replies and a dead worker. */
static void test_worker(void)
{
	const char *dir = pc_test_tmpdir("relay-worker");
	char on[PATH_MAX * 2], off[PATH_MAX * 2], get[PATH_MAX * 2], state[PATH_MAX], *text;
	json_object *cfg = json_object_new_object();
	struct relay_ctx ctx = { .board = "w-1" };
	struct relay_worker w;
	struct relay_rep rep;
	uint32_t s1 = 0, s2 = 0, s3 = 0;
	uint64_t t_off;
	int sv[2];

	strf(state, sizeof(state), "%s/state", dir);
	strf(on, sizeof(on), "echo on >> '%s'", state);
	strf(off, sizeof(off), "echo off >> '%s'", state);
	strf(get, sizeof(get), "tail -n 1 '%s'", state);
	json_object_object_add(cfg, "driver", json_object_new_string("command"));
	json_object_object_add(cfg, "on", json_object_new_string(on));
	json_object_object_add(cfg, "off", json_object_new_string(off));
	json_object_object_add(cfg, "get", json_object_new_string(get));
	CU_ASSERT_EQUAL_FATAL(relay_worker_start(&w, "command", cfg, &ctx, 10000), 0);
	/* the open's answer */
	CU_ASSERT_EQUAL_FATAL(relay_worker_wait(&w, 10000, &rep), 1);
	CU_ASSERT_EQUAL(rep.op, 0);
	CU_ASSERT_EQUAL(rep.ret, 0);
	/* three requests at once: answered in order, the on 100 ms after the off */
	CU_ASSERT_EQUAL(relay_worker_send(&w, RELAY_OP_OFF, 0, NULL, NULL, &s1), 0);
	CU_ASSERT_EQUAL(relay_worker_send(&w, RELAY_OP_ON, 100, NULL, NULL, &s2), 0);
	CU_ASSERT_EQUAL(relay_worker_send(&w, RELAY_OP_CUT, 0, NULL, NULL, &s3), 0);
	CU_ASSERT_EQUAL(w.outstanding, 3);
	CU_ASSERT_EQUAL_FATAL(relay_worker_wait(&w, 10000, &rep), 1);
	CU_ASSERT(rep.op == RELAY_OP_OFF && rep.seq == s1 && rep.ret == 0);
	t_off = rep.t_switch_us;
	CU_ASSERT(rep.t_start_us <= rep.t_switch_us && rep.t_switch_us <= rep.t_end_us);
	CU_ASSERT_EQUAL_FATAL(relay_worker_wait(&w, 10000, &rep), 1);
	CU_ASSERT(rep.op == RELAY_OP_ON && rep.seq == s2 && rep.ret == 0);
	CU_ASSERT(rep.t_switch_us >= t_off + 100000);
	CU_ASSERT_EQUAL_FATAL(relay_worker_wait(&w, 10000, &rep), 1);
	/* the cut: off, and read back off */
	CU_ASSERT(rep.op == RELAY_OP_CUT && rep.seq == s3 && rep.ret == 0);
	CU_ASSERT_EQUAL(w.outstanding, 0);
	CU_ASSERT_FALSE(relay_worker_hung(&w, pc_now_ms() + 1000000));
	text = slurp(state);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_STRING_EQUAL(text, "off\non\noff\n");
	free(text);
	/* nothing to read: 0, not an error */
	CU_ASSERT_EQUAL(relay_worker_read(&w, &rep), 0);
	/* a request outstanding past its deadline is a hang */
	CU_ASSERT_EQUAL(relay_worker_send(&w, RELAY_OP_GET, 0, NULL, NULL, NULL), 0);
	CU_ASSERT(relay_worker_hung(&w, pc_now_ms() + 20000));
	CU_ASSERT_EQUAL_FATAL(relay_worker_wait(&w, 10000, &rep), 1);
	CU_ASSERT(rep.op == RELAY_OP_GET && rep.ret == 0);
	/* the worker dies: -EPIPE */
	kill(w.pid, SIGKILL);
	CU_ASSERT_EQUAL(relay_worker_wait(&w, 10000, &rep), -EPIPE);
	relay_worker_kill(&w);
	CU_ASSERT_EQUAL(w.pid, 0);
	CU_ASSERT_EQUAL(relay_worker_send(&w, RELAY_OP_ON, 0, NULL, NULL, NULL), -EPIPE);

	/* what is not a whole, well-formed reply to what was asked: -EPROTO */
	for (int k = 0; k < 4; k++) {
		struct relay_rep bad;

		CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
		memset(&w, 0, sizeof(w));
		w.fd = sv[0];
		w.seq = 1;
		w.outstanding = 1;
		memset(&bad, 0, sizeof(bad));
		bad.magic = RELAY_WORKER_MAGIC;
		bad.size = sizeof(bad);
		bad.seq = k == 2 ? 7 : 1;	/* a seq never sent */
		if (k == 1)
			bad.magic = 0;
		CU_ASSERT_EQUAL(send(sv[1], &bad, k == 0 ? sizeof(bad) - 1 : k == 3 ? sizeof(bad) : sizeof(bad), 0),
				(ssize_t)(k == 0 ? sizeof(bad) - 1 : sizeof(bad)));
		if (k == 3)
			w.outstanding = 0;	/* nothing was asked */
		CU_ASSERT_EQUAL(relay_worker_read(&w, &rep), -EPROTO);
		close(sv[0]);
		close(sv[1]);
	}
	json_object_put(cfg);
}

static void test_command_get_parse(void)
{
	static const struct {
		const char *get;
		int want;
	} cases[] = {
		{ "echo on", 1 }, { "echo ON", 1 }, { "printf ' True \\n\\n'", 1 }, { "echo 1", 1 },
		{ "echo off", 0 }, { "printf 'Off'", 0 }, { "echo 0", 0 }, { "echo FALSE", 0 },
		{ "echo maybe", -EPROTO }, { "true", -EPROTO }, { "echo on; echo off", -EPROTO },
		{ "echo 'relay 1 is on'", -EPROTO },
	};

	for (size_t i = 0; i < PC_ARRAY_SIZE(cases); i++) {
		struct relay r;
		char err[512];
		int rc;

		CU_ASSERT_EQUAL_FATAL(open_cmd(&r, "true", "true", cases[i].get, 0, err, sizeof(err)), 0);
		rc = relay_get(&r);
		if (rc != cases[i].want)
			fprintf(stderr, "\nget `%s`: %d (%s)\n", cases[i].get, rc, r.err);
		CU_ASSERT_EQUAL(rc, cases[i].want);
		if (cases[i].want == -EPROTO)
			CU_ASSERT(HAS(r.err, "board cmd-1: relay command: 'get' command"));
		relay_close(&r);
	}
	{
		struct relay r;
		char err[512];

		CU_ASSERT_EQUAL_FATAL(open_cmd(&r, "true", "true", "echo maybe", 0, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(relay_get(&r), -EPROTO);
		CU_ASSERT(HAS(r.err, "printed \"maybe\""));
		relay_close(&r);
	}
}

static void test_command_fail(void)
{
	struct relay r;
	char err[512];

	CU_ASSERT_EQUAL_FATAL(open_cmd(&r, "echo 'ignored' >&2; echo 'pdu: outlet 9 does not exist' >&2; exit 3",
				       "kill -9 $$", "exit 1", 0, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_on(&r), -EIO);
	CU_ASSERT(HAS(r.err, "board cmd-1: relay command: 'on' command `"));
	CU_ASSERT(HAS(r.err, "exited with status 3: pdu: outlet 9 does not exist"));
	CU_ASSERT_EQUAL(relay_off(&r), -EIO);
	CU_ASSERT(HAS(r.err, "'off' command `kill -9 $$` was killed by signal 9"));
	CU_ASSERT_EQUAL(relay_get(&r), -EIO);
	CU_ASSERT(HAS(r.err, "'get' command `exit 1` exited with status 1: (no stderr output)"));
	relay_close(&r);

	/* a command that is not there: the shell says so, we quote it */
	CU_ASSERT_EQUAL_FATAL(open_cmd(&r, "/nonexistent/pduclient --on", "true", NULL, 0, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_on(&r), -EIO);
	CU_ASSERT(HAS(r.err, "exited with status 127"));
	CU_ASSERT(HAS(r.err, "/nonexistent/pduclient"));
	relay_close(&r);
}

static void test_command_timeout(void)
{
	const char *dir = pc_test_tmpdir("relay-timeout");
	char on[PATH_MAX * 3], shpid[PATH_MAX], sleeppid[PATH_MAX], bgpid[PATH_MAX], off[PATH_MAX * 2];
	char err[512], want[128];
	struct relay r;
	pid_t sh = 0, sl = 0, bg;
	int rc, timeout_ms;

	strf(shpid, sizeof(shpid), "%s/sh.pid", dir);
	strf(sleeppid, sizeof(sleeppid), "%s/sleep.pid", dir);
	strf(bgpid, sizeof(bgpid), "%s/bg.pid", dir);
	/* the sleep outlives any timeout below: only the kill ends it */
	strf(on, sizeof(on), "echo $$ > '%s'; sleep 120 & echo $! > '%s'; wait", shpid, sleeppid);
	/* exits at once but leaves a background child holding stdout/stderr */
	strf(off, sizeof(off), "sleep 600 & echo $! > '%s'", bgpid);

	/*
	 * The timeout counts from the fork: on a loaded machine it can fire
	 * before the shell has written its pid files (the kill is right, but
	 * there is no sleep to look for). Then again with twice the timeout,
	 * up to 25.6 s; each try must time out, whatever the machine's speed.
	 */
	for (timeout_ms = 200; timeout_ms <= 25600; timeout_ms *= 2) {
		unlink(shpid);
		unlink(sleeppid);
		CU_ASSERT_EQUAL_FATAL(open_cmd(&r, on, off, NULL, timeout_ms, err, sizeof(err)), 0);
		rc = relay_on(&r);
		/* -ETIMEDOUT comes only from the deadline: had the kill not come,
		 * the shell would have exited 0 after its 120 s sleep */
		CU_ASSERT_EQUAL(rc, -ETIMEDOUT);
		strf(want, sizeof(want), "board cmd-1: relay command: 'on' command timed out after %d ms; check",
		     timeout_ms);
		CU_ASSERT(HAS(r.err, want));
		relay_close(&r);
		sh = pid_written(shpid);
		sl = pid_written(sleeppid);
		if (rc != -ETIMEDOUT || (sh > 0 && sl > 0))
			break;
	}
	if (!(sh > 0 && sl > 0))
		fprintf(stderr, "\ncommand timeout: the shell wrote no pid files within %d ms\n", timeout_ms / 2);
	CU_ASSERT_FATAL(sh > 0 && sl > 0);
	CU_ASSERT(pid_gone(sh));
	CU_ASSERT(pid_gone(sl));	/* the whole process group went: the sleep had 120 s to go */

	/* The shell's exit counts, not EOF on pipes a background child holds
	 * (for 600 s, ten times the generous timeout). */
	CU_ASSERT_EQUAL_FATAL(open_cmd(&r, "true", off, NULL, 60000, err, sizeof(err)), 0);
	rc = relay_off(&r);
	if (rc)
		fprintf(stderr, "\noff: %s\n", r.err);
	CU_ASSERT_EQUAL(rc, 0);
	bg = read_pid_file(bgpid);
	CU_ASSERT(bg > 0);
	if (bg > 0)
		kill(bg, SIGKILL);
	relay_close(&r);
}

static const char fake_agent[] =
	"#!/bin/sh\n"
	"# fake powercut-agent for test_relay.c\n"
	"dir=$(dirname \"$0\")\n"
	"cmd=$1\n"
	"printf '%s\\n' \"$@\" > \"$dir/$cmd.args\"\n"
	"case \"$cmd\" in\n"
	"prepare)\n"
	"\techo x >> \"$dir/prepare.count\"\n"
	"\twhile [ $# -gt 0 ]; do\n"
	"\t\tif [ \"$1\" = --device ]; then media=${2#sim:}; fi\n"
	"\t\tshift\n"
	"\tdone\n"
	"\t: > \"$media\"\n"
	"\t# a failure half-way leaves a half-prepared media behind\n"
	"\tif [ -n \"$FAKE_PREPARE_FAIL\" ]; then echo 'writing superblock'; echo 'fatal: no space' >&2; exit 2; fi\n"
	"\tif [ -n \"$FAKE_PREPARE_HANG\" ]; then sleep 120 & echo $! > \"$dir/prepare-sleep.pid\"; wait; fi\n"
	"\techo \"prepared $media\"\n"
	"\t;;\n"
	"run)\n"
	"\techo 'agent booting'\n"
	"\tsleep 100 &\n"
	"\techo $! > \"$dir/child.pid\"\n"
	"\techo $$ > \"$dir/agent.pid\"\n"
	"\twait\n"
	"\t;;\n"
	"esac\n";

struct sim_fixture {
	char dir[PATH_MAX];
	char agent[PATH_MAX + 16];
	char state[PATH_MAX + 16];
	char media[PATH_MAX + 32];
	json_object *device, *cfg;
	struct relay_ctx ctx;
};

static void sim_fixture_init(struct sim_fixture *f, const char *name)
{
	pc_strlcpy(f->dir, pc_test_tmpdir(name), sizeof(f->dir));
	strf(f->agent, sizeof(f->agent), "%s/fake-agent", f->dir);
	strf(f->state, sizeof(f->state), "%s/state/honest-1", f->dir);
	strf(f->media, sizeof(f->media), "%s/media.img", f->state);
	CU_ASSERT_EQUAL(write_file(f->agent, fake_agent, 0755), 0);
	f->device = json_tokener_parse("{\"backend\":\"sim\",\"size\":\"8M\",\"profile\":\"lying-flush\","
				       "\"seed\":7,\"rate\":0.1,\"program_us\":50}");
	f->cfg = json_tokener_parse("{\"driver\":\"sim\",\"boot_delay_ms\":150}");
	f->ctx = (struct relay_ctx){ .board = "honest-1", .connect = "127.0.0.1:7878",
				     .agent_path = f->agent, .state_dir = f->state, .device = f->device,
				     .key_path = "/etc/powercut/agent.key" };
}

static void sim_fixture_free(struct sim_fixture *f)
{
	json_object_put(f->device);
	json_object_put(f->cfg);
}

static char *fixture_file(struct sim_fixture *f, const char *name)
{
	char path[PATH_MAX * 2];

	strf(path, sizeof(path), "%s/%s", f->dir, name);
	return slurp(path);
}

static void test_sim_power(void)
{
	struct sim_fixture f;
	char err[512], want[PATH_MAX * 2], path[PATH_MAX * 2], *text;
	struct relay r;
	pid_t agent, child;
	struct stat st;

	sim_fixture_init(&f, "relay-sim");

	/* first open prepares the media, with the device's geometry */
	CU_ASSERT_EQUAL_FATAL(relay_open(&r, "sim", f.cfg, &f.ctx, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(stat(f.media, &st), 0);
	text = fixture_file(&f, "prepare.args");
	strf(want, sizeof(want), "prepare\n--device\nsim:%s\n--size\n8388608\n--record-size\n4096\n"
		 "--seed\n7\n--yes\n", f.media);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_STRING_EQUAL(text, want);
	free(text);
	strf(path, sizeof(path), "%s/prepare.log", f.state);
	text = slurp(path);
	CU_ASSERT(text && HAS(text, "prepared "));
	free(text);
	relay_close(&r);

	/* a second open keeps the media (a resumed campaign) */
	CU_ASSERT_EQUAL_FATAL(relay_open(&r, "sim", f.cfg, &f.ctx, err, sizeof(err)), 0);
	text = fixture_file(&f, "prepare.count");
	CU_ASSERT(text && strcmp(text, "x\n") == 0);
	free(text);

	strf(r.console, sizeof(r.console), "%s/console.log", f.dir);
	CU_ASSERT_EQUAL(relay_get(&r), 0);
	CU_ASSERT_EQUAL(relay_off(&r), 0);	/* off when off: fine */
	CU_ASSERT_EQUAL_FATAL(relay_on(&r), 0);
	CU_ASSERT_EQUAL(relay_get(&r), 1);
	CU_ASSERT_EQUAL(relay_on(&r), -EBUSY);
	CU_ASSERT(HAS(r.err, "board honest-1: relay sim: already on"));

	strf(path, sizeof(path), "%s/agent.pid", f.dir);
	agent = read_pid_file(path);
	strf(path, sizeof(path), "%s/child.pid", f.dir);
	child = read_pid_file(path);
	CU_ASSERT_FATAL(agent > 0 && child > 0);
	CU_ASSERT_EQUAL(getpgid(agent), agent);	/* its own process group */
	CU_ASSERT_EQUAL(getpgid(child), agent);
	text = fixture_file(&f, "run.args");
	strf(want, sizeof(want), "run\n--device\nsim:%s\n--sim-profile\nlying-flush\n--sim-program-us\n50\n"
		 "--sim-cache-sectors\n256\n--sim-seed\n7\n--sim-rate\n0.1\n--connect\n127.0.0.1:7878\n"
		 "--board\nhonest-1\n--boot-delay-ms\n150\n--key\n/etc/powercut/agent.key\n--fresh-boot-id\n", f.media);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_STRING_EQUAL(text, want);
	free(text);

	CU_ASSERT_EQUAL(relay_off(&r), 0);
	CU_ASSERT_EQUAL(relay_get(&r), 0);
	CU_ASSERT(pid_gone(agent));
	CU_ASSERT(pid_gone(child));	/* the cut took the whole group */
	CU_ASSERT_EQUAL(relay_off(&r), 0);

	/* second power cycle appends to the console; close while on cuts it */
	strf(path, sizeof(path), "%s/agent.pid", f.dir);
	unlink(path);
	CU_ASSERT_EQUAL_FATAL(relay_on(&r), 0);
	agent = read_pid_file(path);
	CU_ASSERT_FATAL(agent > 0);
	relay_close(&r);
	CU_ASSERT(pid_gone(agent));
	text = fixture_file(&f, "console.log");
	CU_ASSERT(text && strcmp(text, "agent booting\nagent booting\n") == 0);
	free(text);
	sim_fixture_free(&f);
}

/* The agent exits by itself: get reports off and reaps it. */
static void test_sim_agent_exit(void)
{
	struct sim_fixture f;
	char err[512];
	struct relay r;
	uint64_t deadline;
	int on = 1;

	sim_fixture_init(&f, "relay-sim-exit");
	CU_ASSERT_EQUAL_FATAL(relay_open(&r, "sim", f.cfg, &f.ctx, err, sizeof(err)), 0);
	/* a "run" with a device the fake cannot parse still exits: point the agent at /bin/true */
	pc_strlcpy(f.agent, "/bin/true", sizeof(f.agent));
	relay_close(&r);
	CU_ASSERT_EQUAL_FATAL(relay_open(&r, "sim", f.cfg, &f.ctx, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(relay_on(&r), 0);
	deadline = pc_now_ms() + 5000;
	while (on == 1 && pc_now_ms() < deadline) {
		on = relay_get(&r);
		pc_sleep_us(5000);
	}
	CU_ASSERT_EQUAL(on, 0);
	CU_ASSERT_EQUAL(relay_on(&r), 0);	/* not "already on" */
	CU_ASSERT_EQUAL(relay_off(&r), 0);
	relay_close(&r);
	sim_fixture_free(&f);
}

static void test_sim_errors(void)
{
	struct sim_fixture f;
	char err[512];
	struct relay r;
	struct stat st;
	char path[PATH_MAX * 2];
	json_object *bad;
	pid_t hung;
	int rc, ms;

	sim_fixture_init(&f, "relay-sim-err");

	/* prepare fails: the error quotes prepare.log's last line, no media is left */
	setenv("FAKE_PREPARE_FAIL", "1", 1);
	rc = relay_open(&r, "sim", f.cfg, &f.ctx, err, sizeof(err));
	unsetenv("FAKE_PREPARE_FAIL");
	CU_ASSERT_EQUAL(rc, -EIO);
	CU_ASSERT(HAS(err, "board honest-1: relay sim: preparing "));
	CU_ASSERT(HAS(err, "failed (exit status 2): fatal: no space; see "));
	CU_ASSERT_PTR_NULL(r.ops);
	CU_ASSERT(stat(f.media, &st) < 0 && errno == ENOENT);
	relay_close(&r);

	/* prepare hangs: killed with its children after prepare_timeout_ms, no
	 * media left (timeout_ms, the switches' bound, does not cut it short).
	 * On a loaded machine the kill can come before the fake agent wrote its
	 * sleep's pid: then again with twice the timeout, up to 25.6 s. */
	strf(path, sizeof(path), "%s/prepare-sleep.pid", f.dir);
	hung = 0;
	for (ms = 200; ms <= 25600 && !hung; ms *= 2) {
		char cfg[160], want[64];

		unlink(path);
		strf(cfg, sizeof(cfg), "{\"driver\":\"sim\",\"timeout_ms\":50,\"prepare_timeout_ms\":%d}", ms);
		setenv("FAKE_PREPARE_HANG", "1", 1);
		bad = json_tokener_parse(cfg);
		rc = relay_open(&r, "sim", bad, &f.ctx, err, sizeof(err));
		unsetenv("FAKE_PREPARE_HANG");
		json_object_put(bad);
		CU_ASSERT_EQUAL(rc, -ETIMEDOUT);
		CU_ASSERT(HAS(err, "board honest-1: relay sim: preparing "));
		strf(want, sizeof(want), "timed out after %d ms", ms);
		CU_ASSERT(HAS(err, want));
		CU_ASSERT(stat(f.media, &st) < 0 && errno == ENOENT);
		if (rc != -ETIMEDOUT)
			break;
		hung = pid_written(path);
	}
	if (!hung)
		fprintf(stderr, "\nsim errors: the fake agent wrote no pid file before its kill\n");
	/* its sleep had 120 s to go: only the kill of the group ended it */
	CU_ASSERT(hung > 0 && pid_gone(hung));

	/* no such agent */
	pc_strlcpy(f.agent, "/nonexistent/powercut-agent", sizeof(f.agent));
	rc = relay_open(&r, "sim", f.cfg, &f.ctx, err, sizeof(err));
	CU_ASSERT_EQUAL(rc, -ENOENT);
	CU_ASSERT(HAS(err, "board honest-1: relay sim: cannot run agent /nonexistent/powercut-agent"));

	/* the relay section is checked at open, too */
	bad = json_tokener_parse("{\"driver\":\"sim\",\"bot_delay_ms\":1}");
	rc = relay_open(&r, "sim", bad, &f.ctx, err, sizeof(err));
	CU_ASSERT_EQUAL(rc, -EINVAL);
	CU_ASSERT(HAS(err, "board honest-1: relay sim: relay section: unknown key 'bot_delay_ms'"));
	json_object_put(bad);
	sim_fixture_free(&f);
}

/* pc_resolve() in a forked process after a lookup in its parent, as the
 * harness resolves a network console before it forks a board's process, then
 * the board's pdudaemon: with getaddrinfo_a() the child's lookup waited for a
 * helper thread the fork had not copied, until its deadline. And a fork right
 * after a lookup returned: a lookup thread still exiting then held ASan's
 * allocator lock, which the child's lookup waited on until its deadline (a
 * few forks in a hundred, under load): pc_resolve joins its thread. The
 * deadline is generous: a lookup of localhost takes milliseconds. */
static int resolve_ok(const char *host)
{
	struct addrinfo *res = NULL;
	char err[256];
	int rc = pc_resolve(host, "16421", pc_now_ms() + 10000, 10000, &res, err, sizeof(err));

	if (res)
		freeaddrinfo(res);
	if (rc)
		fprintf(stderr, "\nresolve after fork: pid %d: %s\n", (int)getpid(), err);
	return rc == 0;
}

static void test_resolve_fork(void)
{
	int st = -1, bad = 0;
	pid_t pid;

	CU_ASSERT_FATAL(resolve_ok("127.0.0.1"));
	/* each fork follows a name's lookup at once: a chance for the race */
	for (int i = 0; i < 16; i++) {
		CU_ASSERT_FATAL(resolve_ok("localhost"));
		pid = fork();
		CU_ASSERT_FATAL(pid >= 0);
		if (pid == 0)
			_exit(resolve_ok("localhost") && resolve_ok("127.0.0.1") && resolve_ok("::1") ? 0 : 1);
		CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
		bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(resolve_ok("localhost"));
}

/* The lock keys of a board: a command relay's declared board_id is the board
 * (every campaign naming it shares the lock), without it the campaign's
 * board; a virtual board's lock is its disk image. */
static void test_board_lock_keys(void)
{
	static const struct {
		const char *driver, *cfg, *key;
	} cases[] = {
		{ "command", "{\"on\":\"x\",\"off\":\"y\",\"board_id\":\"rpi4-2\"}", "board:rpi4-2" },
		{ "command", "{\"on\":\"z\",\"off\":\"w\",\"board_id\":\"rpi4-2\"}", "board:rpi4-2" },
		{ "command", "{\"on\":\"x\",\"off\":\"y\"}", "board:camp/b7" },
		{ "qemu", "{\"drive\":\"/nonexistent/sd.img\"}", "qemu:/nonexistent/sd.img" },
		{ "qemu", "{\"drive\":\"/\"}", "qemu:/" },
	};
	char key[160];

	for (size_t i = 0; i < PC_ARRAY_SIZE(cases); i++) {
		json_object *cfg = json_tokener_parse(cases[i].cfg);

		CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
		CU_ASSERT_EQUAL(relay_lock_key(cases[i].driver, cfg, "camp", "b7", key, sizeof(key)), 0);
		CU_ASSERT_STRING_EQUAL(key, cases[i].key);
		json_object_put(cfg);
	}
}

#define KF(s) s, sizeof(s) - 1
/* QEMU's words of a KVM that failed the guest, found in its log (relay_qemu_kvm.c) */
static void test_qemu_kvm_failure(void)
{
	static const char dump[] = "--- power on at 5 ms (CLOCK_MONOTONIC): qemu -accel kvm -cpu host -m 256\n"
		"KVM internal error. Suberror: 1\nemulation failure\nRAX=0000000000000001 RBX=ffff9a0a41c3a000\n"
		"Code=48 8b 4e 08 f0 48 0f c7 0f <0f> 94 c0\n";
	char line[240];

	CU_ASSERT_EQUAL(qemu_kvm_failure(dump, strlen(dump), line, sizeof(line)), 1);
	CU_ASSERT_STRING_EQUAL(line, "KVM internal error. Suberror: 1; emulation failure");
	CU_ASSERT_EQUAL(qemu_kvm_failure(KF("x\nerror: kvm run failed Bad address\r\n"), line, sizeof(line)), 1);
	CU_ASSERT_STRING_EQUAL(line, "error: kvm run failed Bad address");
	CU_ASSERT_EQUAL(qemu_kvm_failure(KF("KVM: entry failed, hardware error 0x80000021"), line, sizeof(line)), 1);
	CU_ASSERT_STRING_EQUAL(line, "KVM: entry failed, hardware error 0x80000021");
	/* the header of a KVM power-on, a trace, a guest that ran: no failure */
	CU_ASSERT_EQUAL(qemu_kvm_failure(dump, 70, line, sizeof(line)), 0);
	CU_ASSERT_STRING_EQUAL(line, "");
	CU_ASSERT_EQUAL(qemu_kvm_failure(KF("scsi_disk_new_request lun 0 tag 1 data 0x2a\n"), line, sizeof(line)), 0);
	/* the relay's own notes quote QEMU: not a failure of their own */
	CU_ASSERT_EQUAL(qemu_kvm_failure(KF("--- KVM failed this power-on's guest (QEMU said \"KVM internal error. "
					   "Suberror: 1; emulation failure\")\n--- power on at 9 ms: qemu\n"),
					line, sizeof(line)), 0);
	/* a short buffer: the line cut, still said */
	CU_ASSERT_EQUAL(qemu_kvm_failure(dump, strlen(dump), line, 12), 1);
	CU_ASSERT_STRING_EQUAL(line, "KVM interna");
}

/* The harness asks the qemu relay, from its state folder, whether the host failed the last power-on. */
static void test_qemu_host_fault(void)
{
	const char *dir = pc_test_tmpdir("qemu-host-fault");
	struct relay_ctx ctx = { .board = "vm1", .state_dir = dir };
	char path[PATH_MAX], why[700];
	FILE *f;

	snprintf(path, sizeof(path), "%s/qemu.log", dir);
	CU_ASSERT_EQUAL(relay_host_fault("qemu", &ctx, why, sizeof(why)), 0);	/* no log yet */
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("--- power on at 1 ms (CLOCK_MONOTONIC): qemu -accel kvm\nKVM internal error. Suberror: 1\n"
	      "emulation failure\nRAX=0\n", f);
	fclose(f);
	CU_ASSERT_EQUAL(relay_host_fault("qemu", &ctx, why, sizeof(why)), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "KVM failed the guest of this power-on (QEMU said \"KVM internal error. "
					  "Suberror: 1; emulation failure\""));
	CU_ASSERT_EQUAL(relay_host_fault("sim", &ctx, why, sizeof(why)), 0);	/* no such hook */
	CU_ASSERT_STRING_EQUAL(why, "");
	/* the next power-on, its note and header after it: that one is not the host's */
	f = fopen(path, "a");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("--- KVM failed this power-on's guest (QEMU said \"KVM internal error. Suberror: 1\")\n"
	      "--- power on at 9 ms (CLOCK_MONOTONIC): qemu -accel tcg\n", f);
	fclose(f);
	CU_ASSERT_EQUAL(relay_host_fault("qemu", &ctx, why, sizeof(why)), 0);
}

/* Poll relay_child_running() until pid is seen exited; its last answer. */
static int child_running_until_exit(pid_t pid)
{
	uint64_t deadline = pc_now_ms() + 30000;
	int on;

	while ((on = relay_child_running(pid)) == 1 && pc_now_ms() < deadline)
		pc_sleep_us(5000);
	return on;
}

/* relay_spawn_gated(), the sim's and the virtual board's spawn: the child's
 * group on record before it runs, a failed exec or record said and nothing
 * left on record; relay_child_running() looks without reaping. */
static void test_spawn_gated(void)
{
	const char *dir = pc_test_tmpdir("relay-spawn-gated");
	char pgid[PATH_MAX], nodir[PATH_MAX], want[64], *text;
	char *const sleeper[] = { "/bin/sleep", "120", NULL };
	char *const quick[] = { "/bin/sh", "-c", "exit 3", NULL };
	char *const missing[] = { "/nonexistent/powercut-test", NULL };
	struct relay_spawn_names n = {
		.what = "test", .whose = "the test's", .pgid = pgid, .setup_note = " (log L)",
		.run_what = "test ", .run_hint = "; give another",
	};
	struct relay r;
	struct pc_spawn s;
	pid_t pid = 0;
	int st = -1;

	memset(&r, 0, sizeof(r));
	strf(pgid, sizeof(pgid), "%s/pgid", dir);
	strf(nodir, sizeof(nodir), "%s/no-such-folder/pgid", dir);

	/* it runs in a group of its own, on record */
	pc_spawn_init(&s);
	s.flags = PC_SPAWN_SIGDFL | PC_SPAWN_CLOEXEC | PC_SPAWN_EXEC_ERR;
	CU_ASSERT_EQUAL_FATAL(relay_spawn_gated(&r, &n, &s, sleeper, &pid), 0);
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL(getpgid(pid), pid);
	text = slurp(pgid);
	strf(want, sizeof(want), "{\"pgid\":%d,", (int)pid);
	CU_ASSERT(text && HAS(text, want) && HAS(text, "\"what\":\"test\""));
	free(text);
	CU_ASSERT_EQUAL(relay_child_running(pid), 1);
	/* killed: seen exited, but not reaped (the caller's cut reaps it) */
	kill(-pid, SIGKILL);
	CU_ASSERT_EQUAL(child_running_until_exit(pid), 0);
	CU_ASSERT_EQUAL(waitpid(pid, &st, WNOHANG), pid);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	CU_ASSERT_EQUAL(relay_child_running(pid), 0);	/* no child of ours any more */
	relay_group_forget(pgid);

	/* no state folder: it runs all the same, nothing on record */
	pid = 0;
	n.pgid = NULL;
	pc_spawn_init(&s);
	s.flags = PC_SPAWN_SIGDFL | PC_SPAWN_CLOEXEC | PC_SPAWN_EXEC_ERR;
	CU_ASSERT_EQUAL_FATAL(relay_spawn_gated(&r, &n, &s, quick, &pid), 0);
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT(access(pgid, F_OK) < 0 && errno == ENOENT);
	/* it exits on its own: seen exited */
	CU_ASSERT_EQUAL(child_running_until_exit(pid), 0);
	CU_ASSERT_EQUAL(waitpid(pid, &st, WNOHANG), pid);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 3);
	n.pgid = pgid;

	/* a binary that does not exist: said, no pid, its record dropped */
	pid = 0;
	r.err[0] = 0;
	pc_spawn_init(&s);
	s.flags = PC_SPAWN_SIGDFL | PC_SPAWN_CLOEXEC | PC_SPAWN_EXEC_ERR;
	CU_ASSERT_EQUAL(relay_spawn_gated(&r, &n, &s, missing, &pid), -ENOENT);
	CU_ASSERT_EQUAL(pid, 0);
	CU_ASSERT_STRING_EQUAL(r.err, "cannot run test /nonexistent/powercut-test: No such file or directory; give another");
	CU_ASSERT(access(pgid, F_OK) < 0 && errno == ENOENT);

	/* the record cannot be written: not released, reaped, said */
	pid = 0;
	r.err[0] = 0;
	n.pgid = nodir;
	pc_spawn_init(&s);
	s.flags = PC_SPAWN_SIGDFL | PC_SPAWN_CLOEXEC | PC_SPAWN_EXEC_ERR;
	CU_ASSERT(relay_spawn_gated(&r, &n, &s, sleeper, &pid) < 0);
	CU_ASSERT_EQUAL(pid, 0);
	CU_ASSERT(HAS(r.err, "cannot record the test's process group, so a restarted harness could not find it: "));
	CU_ASSERT(HAS(r.err, "; not powering on"));
	CU_ASSERT(waitpid(-1, &st, WNOHANG) <= 0);	/* reaped: no zombie left to reap */
}

int suite_relay(void)
{
	CU_pSuite s = CU_add_suite("relay", NULL, NULL);

	/* the qemu driver joins relay.c's list as powercut's main() adds it */
	if (!s || vboard_register() < 0)
		return -1;
	if (!CU_add_test(s, "registry", test_registry) ||
	    !CU_add_test(s, "check", test_check) ||
	    !CU_add_test(s, "command switch", test_command_switch) ||
	    !CU_add_test(s, "command get parse", test_command_get_parse) ||
	    !CU_add_test(s, "relay worker", test_worker) ||
	    !CU_add_test(s, "command failure", test_command_fail) ||
	    !CU_add_test(s, "command timeout", test_command_timeout) ||
	    !CU_add_test(s, "sim power", test_sim_power) ||
	    !CU_add_test(s, "sim agent exits", test_sim_agent_exit) ||
	    !CU_add_test(s, "sim errors", test_sim_errors) ||
	    !CU_add_test(s, "gated spawn, its record, the exit peek", test_spawn_gated) ||
	    !CU_add_test(s, "resolve after fork", test_resolve_fork) ||
	    !CU_add_test(s, "lock keys: a command relay's board_id, a virtual board's disk", test_board_lock_keys) ||
	    !CU_add_test(s, "qemu: KVM failure in QEMU's log", test_qemu_kvm_failure) ||
	    !CU_add_test(s, "qemu: the host failed the power-on", test_qemu_host_fault))
		return -1;
	return 0;
}

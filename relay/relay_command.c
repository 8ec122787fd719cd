/*
 * relay_command.c - switch power by running a shell command per operation.
 *
 * This is how pdudaemon's pduclient, uhubctl, ykushcmd or labgrid-client plug
 * in. Each command runs as `/bin/sh -c CMD` in its own process group with
 * PC_BOARD and PC_ACTION in its environment, stdin from /dev/null; stdout is
 * kept (first 4 KiB, parsed by get) and stderr's tail is quoted in errors. A
 * command that outlives timeout_ms has its whole process group SIGKILLed, so
 * a hung PDU cannot stall the harness's poll() loop for longer than that.
 *
 * No signal handlers: the child is reaped with waitpid() on its own pid.
 */
#include "relay/relay_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/json.h"
#include "common/util.h"

#define CMD_OUT_MAX	4096	/* stdout kept for get */
#define CMD_ERR_TAIL	1024	/* stderr kept to quote its last line */

extern char **environ;

struct cmd_priv {
	char *on, *off, *get;
	char connect[160];	/* where agents reach the harness: PC_CONNECT */
	char key[PATH_MAX];	/* the campaign's key file: PC_KEY_FILE */
	int timeout_ms;
};

struct cmd_result {
	char out[CMD_OUT_MAX + 1];
	size_t outlen;
	char err[CMD_ERR_TAIL + 1];
	size_t errlen;
	int status;
};

static const char *const cmd_keys[] = { "driver", "on", "off", "get", "timeout_ms", "board_id" };
#define CMD_BOARD_ID_MAX 63

static int cmd_check_string(json_object *cfg, const char *key, int required, char *err, size_t errlen)
{
	json_object *v;

	if (!cfg || !json_object_object_get_ex(cfg, key, &v)) {
		if (!required)
			return 0;
		return pc_fail(err, errlen, -EINVAL, "%s: missing; give the shell command that switches the power %s",
			 key, key);
	}
	if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
		return pc_fail(err, errlen, -EINVAL, "%s: expected a non-empty string (a shell command), got %s", key,
			 json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	return 0;
}

/* board_id: the physical board's name in the lab, [A-Za-z0-9_.-], 1 to 63. */
static int cmd_check_board_id(json_object *cfg, char *err, size_t errlen)
{
	json_object *v;
	const char *s;
	size_t n;

	if (!cfg || !json_object_object_get_ex(cfg, "board_id", &v))
		return 0;
	s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	n = strlen(s);
	if (n >= 1 && n <= CMD_BOARD_ID_MAX &&
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n)
		return 0;
	return pc_fail(err, errlen, -EINVAL, "board_id: expected the physical board's name in the lab, 1 to %d of "
		 "[A-Za-z0-9_.-] (every campaign naming it shares one lock), got %.80s", CMD_BOARD_ID_MAX,
		 json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

static int cmd_check(json_object *cfg, char *err, size_t errlen)
{
	int rc;

	rc = relay_check_keys(cfg, "command", cmd_keys, PC_ARRAY_SIZE(cmd_keys), err, errlen);
	if (!rc)
		rc = cmd_check_string(cfg, "on", 1, err, errlen);
	if (!rc)
		rc = cmd_check_string(cfg, "off", 1, err, errlen);
	if (!rc)
		rc = cmd_check_string(cfg, "get", 0, err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "timeout_ms", 1, RELAY_MS_MAX, err, errlen);
	if (!rc)
		rc = cmd_check_board_id(cfg, err, errlen);
	return rc;
}

static char *cmd_dup(json_object *cfg, const char *key)
{
	const char *s = pc_jstr(cfg, key, NULL);	/* check() made it a string */

	return s ? strdup(s) : NULL;
}

static void cmd_free(struct cmd_priv *p)
{
	if (!p)
		return;
	free(p->on);
	free(p->off);
	free(p->get);
	free(p);
}

static int cmd_open(struct relay *r, json_object *cfg, const struct relay_ctx *ctx)
{
	struct cmd_priv *p = calloc(1, sizeof(*p));
	json_object *v;

	if (!p)
		goto nomem;
	p->on = cmd_dup(cfg, "on");
	p->off = cmd_dup(cfg, "off");
	p->get = cmd_dup(cfg, "get");
	if (!p->on || !p->off)
		goto nomem;
	if (cfg && json_object_object_get_ex(cfg, "get", &v) && !p->get)
		goto nomem;
	snprintf(p->connect, sizeof(p->connect), "%s", ctx && ctx->connect ? ctx->connect : "");
	snprintf(p->key, sizeof(p->key), "%s", ctx && ctx->key_path ? ctx->key_path : "");
	p->timeout_ms = 10000;
	if (cfg && json_object_object_get_ex(cfg, "timeout_ms", &v))
		p->timeout_ms = (int)json_object_get_int64(v);
	r->priv = p;
	return 0;
nomem:
	cmd_free(p);
	relay_errf(r, "out of memory");
	return -ENOMEM;
}

static void cmd_envp_free(char **envp)
{
	size_t i = 0;

	if (!envp)
		return;
	/* ours start at PC_BOARD (the parent's own PC_BOARD was left out) */
	while (envp[i] && strncmp(envp[i], "PC_BOARD=", 9))
		i++;
	for (; envp[i]; i++)
		free(envp[i]);
	free(envp);
}

/* The environment of the parent minus any PC_BOARD/PC_ACTION/PC_CONNECT/
 * PC_KEY_FILE, plus ours: the board, the action, the host:port its agent must
 * connect to (the harness may have picked the port itself) and the key file
 * the agent authenticates with (powercut-agent run reads PC_KEY_FILE). The
 * last two only when known: `powercut relay` knows them only when the
 * configuration fixes them (a listen port, a key_file); unset, never a made-up
 * address or an empty path. */
static char **cmd_envp(const char *board, const char *action, const char *connect, const char *key)
{
	size_t n = 0, k = 0;
	char **envp;

	while (environ && environ[n])
		n++;
	envp = calloc(n + 5, sizeof(*envp));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "PC_BOARD=", 9) && strncmp(environ[i], "PC_ACTION=", 10) &&
		    strncmp(environ[i], "PC_CONNECT=", 11) && strncmp(environ[i], "PC_KEY_FILE=", 12))
			envp[k++] = environ[i];
	if (asprintf(&envp[k++], "PC_BOARD=%s", board) < 0 ||
	    asprintf(&envp[k++], "PC_ACTION=%s", action) < 0 ||
	    (connect[0] && asprintf(&envp[k++], "PC_CONNECT=%s", connect) < 0) ||
	    (key[0] && asprintf(&envp[k++], "PC_KEY_FILE=%s", key) < 0)) {
		envp[k - 1] = NULL;	/* asprintf left it undefined */
		cmd_envp_free(envp);
		return NULL;
	}
	return envp;
}

/* In the child, between fork and exec: only async-signal-safe calls. */
/*
 * sh -c cmd in a group of its own (both sides call setpgid, so kill(-pid)
 * works whichever runs first), stdin from /dev/null, stdout and stderr to
 * our pipes. The harness may ignore SIGPIPE or block signals; commands
 * expect defaults. The harness's sockets are closed, not leaked into a PDU
 * client that may linger. 0 with *pid, or the fork's -errno.
 */
static int cmd_spawn(const char *cmd, char **envp, int devnull, int outfd, int errfd, pid_t *pid)
{
	char *const argv[] = { "sh", "-c", (char *)cmd, NULL };
	struct pc_spawn s;
	struct pc_child c;
	int rc;

	pc_spawn_init(&s);
	s.flags = PC_SPAWN_GROUP | PC_SPAWN_SIGDFL | PC_SPAWN_CLOSE_FDS;
	s.fd_in = devnull;
	s.fd_out = outfd;
	s.fd_err = errfd;
	s.path = "/bin/sh";
	s.envp = envp;
	s.exec_fail_msg = "powercut: cannot exec /bin/sh\n";
	rc = pc_spawn(&c, &s, argv);
	*pid = c.pid;
	return rc;
}

/* Read what is there; returns 1 on EOF or error (stop polling this fd), else 0. */
static int cmd_drain(int fd, struct cmd_result *res, int is_err)
{
	char buf[1024];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 0 : 1;
		if (n == 0)
			return 1;
		if (!is_err) {
			size_t room = CMD_OUT_MAX - res->outlen;
			size_t take = (size_t)n < room ? (size_t)n : room;

			memcpy(res->out + res->outlen, buf, take);
			res->outlen += take;
			res->out[res->outlen] = 0;
		} else {
			/* keep the tail: errors quote stderr's last line */
			size_t take = (size_t)n > CMD_ERR_TAIL ? CMD_ERR_TAIL : (size_t)n;
			const char *src = buf + (size_t)n - take;

			if (res->errlen + take > CMD_ERR_TAIL) {
				size_t drop = res->errlen + take - CMD_ERR_TAIL;

				memmove(res->err, res->err + drop, res->errlen - drop);
				res->errlen -= drop;
			}
			memcpy(res->err + res->errlen, src, take);
			res->errlen += take;
			res->err[res->errlen] = 0;
		}
	}
}

/* Wait for the child and its pipes until the deadline; 0 or -ETIMEDOUT. */
static int cmd_wait(pid_t pid, int fds[2], struct cmd_result *res, uint64_t deadline)
{
	for (;;) {
		struct pollfd pfd[2];
		nfds_t n = 0;
		uint64_t now;
		int wait_ms;
		pid_t w = waitpid(pid, &res->status, WNOHANG);

		if (w == pid) {
			/* It exited: take what is buffered, but do not wait for EOF
			 * from a background process that inherited the pipes. */
			for (int i = 0; i < 2; i++)
				if (fds[i] >= 0)
					cmd_drain(fds[i], res, i);
			return 0;
		}
		now = pc_now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		/* The pipes wake us on output; the cap notices an exit whose
		 * pipes a background child still holds open. */
		wait_ms = deadline - now > 10 ? 10 : (int)(deadline - now);
		for (int i = 0; i < 2; i++) {
			if (fds[i] < 0)
				continue;
			pfd[n].fd = fds[i];
			pfd[n].events = POLLIN;
			n++;
		}
		if (poll(pfd, n, wait_ms) < 0 && errno != EINTR)
			return -errno;
		for (nfds_t j = 0; j < n; j++) {
			int i = pfd[j].fd == fds[0] ? 0 : 1;

			if (pfd[j].revents && cmd_drain(fds[i], res, i)) {
				close(fds[i]);
				fds[i] = -1;
			}
		}
	}
}

/*
 * Run one command to completion within timeout_ms. 0 if it exited with
 * status 0, else -errno with r->err saying what happened.
 */
static int cmd_run(struct relay *r, const char *action, const char *cmd, struct cmd_result *res)
{
	struct cmd_priv *p = r->priv;
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	int devnull = -1, fds[2], rc;
	char **envp = NULL;
	char last[200];
	pid_t pid;

	memset(res, 0, sizeof(*res));
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		rc = -errno;
		relay_errf(r, "'%s' command: cannot set up pipes: %s", action, strerror(-rc));
		goto out_fds;
	}
	envp = cmd_envp(r->board, action, p->connect, p->key);
	if (!envp) {
		rc = -ENOMEM;
		relay_errf(r, "'%s' command: out of memory", action);
		goto out_fds;
	}
	rc = cmd_spawn(cmd, envp, devnull, outp[1], errp[1], &pid);
	if (rc < 0) {
		relay_errf(r, "'%s' command: fork: %s", action, strerror(-rc));
		goto out_env;
	}
	close(outp[1]);
	close(errp[1]);
	outp[1] = errp[1] = -1;
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	fds[0] = outp[0];
	fds[1] = errp[0];
	rc = cmd_wait(pid, fds, res, pc_now_ms() + (uint64_t)p->timeout_ms);
	outp[0] = fds[0];
	errp[0] = fds[1];
	if (rc < 0) {
		/* The whole group: a shell's children would otherwise live on. */
		kill(-pid, SIGKILL);
		relay_reap(pid, &res->status, RELAY_REAP_MS);
		if (rc == -ETIMEDOUT)
			relay_errf(r,
				   "'%s' command timed out after %d ms; check that `%.120s` finishes "
				   "(it was killed), or raise relay.timeout_ms", action, p->timeout_ms, cmd);
		else
			relay_errf(r, "'%s' command `%.120s`: waiting for it: %s (it was killed)",
				   action, cmd, strerror(-rc));
		goto out_env;
	}
	relay_last_line(res->err, last, sizeof(last));
	if (WIFSIGNALED(res->status)) {
		relay_errf(r, "'%s' command `%.120s` was killed by signal %d%s%s",
			   action, cmd, WTERMSIG(res->status), last[0] ? ": " : "", last);
		rc = -EIO;
	} else if (WEXITSTATUS(res->status) != 0) {
		relay_errf(r, "'%s' command `%.120s` exited with status %d: %s", action, cmd,
			   WEXITSTATUS(res->status), last[0] ? last : "(no stderr output)");
		rc = -EIO;
	}
out_env:
	cmd_envp_free(envp);
out_fds:
	for (int i = 0; i < 2; i++) {
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	if (devnull >= 0)
		close(devnull);
	return rc;
}

static int cmd_on(struct relay *r)
{
	struct cmd_priv *p = r->priv;
	struct cmd_result res;

	return cmd_run(r, "on", p->on, &res);
}

static int cmd_off(struct relay *r)
{
	struct cmd_priv *p = r->priv;
	struct cmd_result res;

	return cmd_run(r, "off", p->off, &res);
}

static int cmd_get(struct relay *r)
{
	static const char *const on_words[] = { "on", "1", "true" };
	static const char *const off_words[] = { "off", "0", "false" };
	struct cmd_priv *p = r->priv;
	struct cmd_result res;
	char *s, *e;
	int rc;

	if (!p->get) {
		relay_errf(r, "no 'get' command configured; add relay.get to read the power state");
		return -ENOTSUP;
	}
	rc = cmd_run(r, "get", p->get, &res);
	if (rc < 0)
		return rc;
	s = res.out;
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		e--;
	*e = 0;
	for (size_t i = 0; i < PC_ARRAY_SIZE(on_words); i++) {
		if (strcasecmp(s, on_words[i]) == 0)
			return 1;
		if (strcasecmp(s, off_words[i]) == 0)
			return 0;
	}
	relay_errf(r,
		   "'get' command `%.120s` printed \"%.80s\"; expected on/off, 1/0 or true/false", p->get, s);
	return -EPROTO;
}

static void cmd_close(struct relay *r)
{
	cmd_free(r->priv);
	r->priv = NULL;
}

/* "board:ID" for a declared board_id (the board itself, whatever commands
 * switch it: every campaign naming it shares its lock); else none beyond
 * the campaign's board (relay_lock.h). */
static int cmd_ident(json_object *cfg, char *buf, size_t len)
{
	json_object *v;

	if (!cfg || !json_object_object_get_ex(cfg, "board_id", &v))
		return 1;
	snprintf(buf, len, "board:%s", json_object_get_string(v));
	return 0;
}

const struct relay_ops relay_command_ops = {
	.name = "command",
	.ident = cmd_ident,
	.check = cmd_check,
	.open = cmd_open,
	.on = cmd_on,
	.off = cmd_off,
	.get = cmd_get,
	.close = cmd_close,
};

/*
 * campaign.c - the campaign daemon.
 *
 * One process, one poll() loop, every board concurrently. Each board goes
 * round: power on -> wait for HELLO (boot timeout, retries) -> VERIFY (the
 * engine judges the last cycle's writes from the scan) -> WORK -> cut at the
 * planned instant -> drain what was already on the wire -> off time -> next.
 * Every event is appended to events.jsonl and fed to the engine; verdicts are
 * appended to verdicts.jsonl with fsync. A killed harness resumes where its
 * records end, with no verdict lost or written twice.
 */
#include "campaign.h"

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

#include "../common/auth.h"
#include "../common/proto.h"
#include "../common/record.h"
#include "../common/util.h"
#include "../relay/relay.h"
#include "engine.h"
#include "report.h"
#include "results.h"

#define DRAIN_MS 300		/* after a cut: how long lines already sent may still arrive */
#define HELLO_WAIT_MS 2000	/* an accepted connection must say HELLO within this, and
				   answer the challenge within as long again */
#define MAX_CONSECUTIVE_INFRA 3
#define MAX_PENDING 64		/* connections that have not authenticated yet */
#define MIN_PENDING_PER_SOURCE 8	/* ... from one address (or two per board, if more):
					   past it, that address's oldest goes */
#define MAX_SERIAL_HELLOS 4	/* hellos awaiting their proof on one console */

/* A hello answered with a challenge, awaiting the agent's proof (auth.h). */
struct handshake {
	char an[2 * PC_AUTH_NONCE_BYTES + 1];	/* the agent's nonce */
	char hn[2 * PC_AUTH_NONCE_BYTES + 1];	/* ours */
	char *hello;				/* the hello's exact JSON text */
	size_t hello_len;
	uint64_t since;
};

enum bstate { B_OFF_WAIT, B_WAIT_HELLO, B_VERIFY, B_WRITING, B_DRAIN, B_DONE };

static const char *const bstate_names[] = { "off", "booting", "verifying", "writing", "cut", "done" };

struct camp;

struct bctx {
	struct camp *c;
	struct board_cfg *cfg;
	unsigned idx;
	struct relay relay;
	int relay_open;
	enum bstate st;
	unsigned cycle;
	unsigned attempt;
	uint64_t deadline;
	uint64_t t_state;
	int fd;			/* the link to the agent: a TCP connection, or sfd */
	struct pc_linebuf lb;
	/* serial console link (cfg->link_serial): open for the whole campaign */
	int sfd;
	int cfd;		/* this power-on's console log */
	struct pc_linebuf slb;
	struct handshake shs[MAX_SERIAL_HELLOS];	/* serial: hellos awaiting proof */
	/* the authenticated session of this power-on's agent */
	struct pc_auth_session s;
	char boot_id[64];	/* of the last authenticated hello: a new power-on must change it */
	unsigned rejects;	/* link_reject events for this cycle */
	uint64_t t_power;
	/* the cycle's work and cut plan */
	int working;
	uint64_t t_work;
	uint64_t cut_at;	/* CUT_RANDOM: absolute ms */
	uint32_t cut_acks;	/* CUT_ACKS: cut once this many are acked */
	uint32_t acks;
	int done_seen;
	unsigned consecutive_infra;
	char given_up[512];
	/* tallies for progress */
	unsigned n_pass, n_fail, n_boot, n_infra;
	uint64_t t_cycle0;
	unsigned cycles_run;
};

struct pending {
	int fd;
	uint64_t since;
	struct pc_linebuf lb;
	char peer[64];		/* address:port, for the record */
	char src[48];		/* address: the per-source limit */
	struct bctx *b;		/* the board its hello named (challenged), or NULL */
	struct handshake hs;
};

struct camp {
	struct campaign_cfg *cfg;
	const struct campaign_opts *o;
	struct results res;
	struct engine *eng;
	struct bctx *b;
	unsigned nb;
	unsigned cycles;
	int lfd;
	char connect[160];
	struct pending pend[MAX_PENDING];
	uint64_t t0;		/* ms: campaign clock origin (monotonic) */
	int64_t t_base;		/* ms: where the clock stood when this run resumed */
	uint64_t last_progress;
	int resuming;
	int fatal;
	char agent[PATH_MAX];
	char key_path[PATH_MAX];
	struct pc_auth_key key;
	/* resume: verdicts already in the file */
	json_object *seen_verdicts;	/* "board/cycle" -> true */
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = sig;
}

static int64_t camp_t(struct camp *c)
{
	return c->t_base + (int64_t)(pc_now_ms() - c->t0);
}

/* ---- events ---- */

static json_object *ev_new(struct bctx *b, const char *kind)
{
	json_object *ev = json_object_new_object();

	json_object_object_add(ev, "t", json_object_new_int64(camp_t(b->c)));
	json_object_object_add(ev, "board", json_object_new_string(b->cfg->name));
	json_object_object_add(ev, "cycle", json_object_new_int64(b->cycle));
	json_object_object_add(ev, "ev", json_object_new_string(kind));
	return ev;
}

/* Append an event and feed it to the engine (which may emit verdicts). */
static int ev_log(struct bctx *b, json_object *ev)
{
	struct camp *c = b->c;
	char err[512] = "";
	int ret;

	ret = results_event(&c->res, ev);
	if (ret) {
		pc_err("%s/events.jsonl: write failed: %s", c->res.dir, strerror(-ret));
		c->fatal = 1;
	} else if (engine_feed(c->eng, ev, err, sizeof(err))) {
		pc_warn("board %s: engine: %s", b->cfg->name, err);
	}
	json_object_put(ev);
	return ret;
}

static void ev_reason(struct bctx *b, const char *kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void ev_reason(struct bctx *b, const char *kind, const char *fmt, ...)
{
	json_object *ev = ev_new(b, kind);
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_object_object_add(ev, "reason", json_object_new_string(buf));
	ev_log(b, ev);
}

/* Printable ASCII only: a hostile line must not put escapes or bad UTF-8 into a record. */
static void excerpt(char *out, size_t outlen, const char *line, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < outlen && i < 160; i++)
		out[n++] = line[i] >= 0x20 && line[i] < 0x7f ? line[i] : '?';
	out[n] = 0;
}

/*
 * Something the authenticated link refused: a connection or a line that could
 * not prove it came from a board's agent. It is on record (events.jsonl, where
 * replay sees it) and never part of a verdict. attempt: it tried to be a
 * board's agent (a hello or a proof), which makes a boot that ends without a
 * genuine agent an infrastructure error rather than BOOT_FAIL.
 */
static void link_reject(struct camp *c, struct bctx *b, int attempt, const char *peer, const char *line, size_t len,
			const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void link_reject(struct camp *c, struct bctx *b, int attempt, const char *peer, const char *line, size_t len,
			const char *fmt, ...)
{
	json_object *ev = json_object_new_object();
	char why[512], shown[168];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	json_object_object_add(ev, "t", json_object_new_int64(camp_t(c)));
	if (b) {
		json_object_object_add(ev, "board", json_object_new_string(b->cfg->name));
		json_object_object_add(ev, "cycle", json_object_new_int64(b->cycle));
		if (attempt)
			b->rejects++;
	}
	json_object_object_add(ev, "ev", json_object_new_string("link_reject"));
	json_object_object_add(ev, "peer", json_object_new_string(peer));
	json_object_object_add(ev, "reason", json_object_new_string(why));
	if (line && len) {
		excerpt(shown, sizeof(shown), line, len);
		json_object_object_add(ev, "line", json_object_new_string(shown));
	}
	pc_warn("%s%s: refused: %s", b ? "board " : "", b ? b->cfg->name : peer, why);
	ret = results_event(&c->res, ev);
	if (ret) {
		pc_err("%s/events.jsonl: write failed: %s", c->res.dir, strerror(-ret));
		c->fatal = 1;
	}
	json_object_put(ev);
}

static void hs_clear(struct handshake *h)
{
	free(h->hello);
	memset(h, 0, sizeof(*h));
}

/* Answer a hello (its exact text, and parsed) with a challenge; 0 or -errno. */
static int hs_start(struct handshake *h, const char *text, size_t len, json_object *hello, int fd, int marker)
{
	char buf[256];
	json_object *v, *m;
	size_t off = 0;
	int n;

	hs_clear(h);
	if (!json_object_object_get_ex(hello, "nonce", &v))
		return -EINVAL;
	if (len && text[len - 1] == '\r')
		len--;	/* a console's CR is not part of what the agent proved */
	h->hello = malloc(len + 1);
	if (!h->hello)
		return -ENOMEM;
	memcpy(h->hello, text, len);
	h->hello[len] = 0;
	h->hello_len = len;
	pc_strlcpy(h->an, json_object_get_string(v), sizeof(h->an));
	pc_auth_nonce(h->hn);
	h->since = pc_now_ms();
	m = pc_msg_new(PC_MSG_CHALLENGE);
	json_object_object_add(m, "nonce", json_object_new_string(h->hn));
	json_object_object_add(m, "echo", json_object_new_string(h->an));
	if (marker) {
		off = strlen(PC_PROTO_MARKER);
		memcpy(buf, PC_PROTO_MARKER, off);
	}
	n = pc_msg_line(m, buf + off, sizeof(buf) - off);
	json_object_put(m);
	if (n < 0)
		return n;
	return pc_write_all(fd, buf, off + (size_t)n);
}

/* Does the proof in an auth message answer this handshake? */
static int hs_proven(struct camp *c, const struct handshake *h, json_object *auth)
{
	json_object *v;

	if (!h->hello || !json_object_object_get_ex(auth, "mac", &v))
		return 0;
	return pc_auth_proof_check(&c->key, h->hn, h->an, h->hello, h->hello_len, json_object_get_string(v)) == 0;
}

static struct bctx *board_by_name(struct camp *c, const char *name)
{
	for (unsigned i = 0; i < c->nb; i++)
		if (strcmp(c->b[i].cfg->name, name) == 0)
			return &c->b[i];
	return NULL;
}

/* Count a verdict towards its board's totals (the whole campaign's, resumed runs included). */
static struct bctx *tally(struct camp *c, const char *board, json_object *v)
{
	struct bctx *b = board_by_name(c, board);
	json_object *o;
	const char *outcome = "";

	if (!b)
		return NULL;
	if (json_object_object_get_ex(v, "verdict", &o))
		outcome = json_object_get_string(o);
	if (!strcmp(outcome, "PASS"))
		b->n_pass++;
	else if (!strcmp(outcome, "FAIL"))
		b->n_fail++;
	else if (!strcmp(outcome, "BOOT_FAIL"))
		b->n_boot++;
	else
		b->n_infra++;
	return b;
}

/* Engine callbacks. */
static int on_verdict(json_object *v, void *arg)
{
	struct camp *c = arg;
	json_object *o;
	const char *board = "", *outcome = "";
	struct bctx *b;
	char key[128];
	int ret;

	if (json_object_object_get_ex(v, "board", &o))
		board = json_object_get_string(o);
	if (json_object_object_get_ex(v, "verdict", &o))
		outcome = json_object_get_string(o);
	json_object_object_get_ex(v, "cycle", &o);
	snprintf(key, sizeof(key), "%s/%" PRId64, board, json_object_get_int64(o));
	if (c->seen_verdicts && json_object_object_get_ex(c->seen_verdicts, key, NULL))
		return 0;	/* resuming: this one is in verdicts.jsonl already */
	ret = results_verdict(&c->res, v);
	if (ret) {
		pc_err("%s/verdicts.jsonl: write failed: %s", c->res.dir, strerror(-ret));
		c->fatal = 1;
		return ret;
	}
	if (c->resuming)
		pc_info("recovered the verdict of %s cycle %" PRId64 " from events.jsonl", board,
			json_object_get_int64(o));
	b = tally(c, board, v);
	if (b) {
		if (!strcmp(outcome, "FAIL") && !c->o->quiet) {
			json_object *cnt;
			char what[256] = "";
			if (json_object_object_get_ex(v, "counts", &cnt)) {
				json_object_object_foreach(cnt, k, val) {
					size_t l = strlen(what);
					if (json_object_get_int(val) && strcmp(k, "intact") && strcmp(k, "not_written"))
						snprintf(what + l, sizeof(what) - l, " %s=%d", k, json_object_get_int(val));
				}
			}
			pc_info("%s cycle %" PRId64 ": FAIL%s", board, json_object_get_int64(o), what);
		}
	}
	return 0;
}

static void on_note(const char *board, const char *text, void *arg)
{
	struct camp *c = arg;

	if (!c->resuming)	/* told already, when it happened */
		pc_warn("board %s: %s", board, text);
}

/* ---- the link ---- */

static int listen_on(struct camp *c, char *err, size_t errlen)
{
	char host[128];
	uint16_t port;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ports[8], hbuf[NI_MAXHOST];
	int fd, one = 1, ret;

	if (pc_parse_hostport(c->cfg->listen, host, sizeof(host), &port)) {
		snprintf(err, errlen, "listen address '%s' is not HOST:PORT", c->cfg->listen);
		return -EINVAL;
	}
	snprintf(ports, sizeof(ports), "%u", port);
	ret = getaddrinfo(host, ports, &hints, &ai);
	if (ret) {
		snprintf(err, errlen, "listen address '%s': %s", c->cfg->listen, gai_strerror(ret));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", c->cfg->listen, strerror(errno));
		freeaddrinfo(ai);
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	freeaddrinfo(ai);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	getnameinfo((struct sockaddr *)&ss, sl, hbuf, sizeof(hbuf), ports, sizeof(ports), NI_NUMERICHOST | NI_NUMERICSERV);
	if (strchr(hbuf, ':'))
		snprintf(c->connect, sizeof(c->connect), "[%s]:%s", hbuf, ports);
	else
		snprintf(c->connect, sizeof(c->connect), "%s:%s", strcmp(hbuf, "0.0.0.0") ? hbuf : "127.0.0.1", ports);
	c->lfd = fd;
	return 0;
}

static int send_msg(struct bctx *b, json_object *msg)
{
	char buf[PC_PROTO_MAX_LINE + 16];
	size_t off = 0;
	int n;

	if (b->cfg->link_serial) {
		/* marked, so the agent picks it out of whatever else is on the line */
		off = strlen(PC_PROTO_MARKER);
		memcpy(buf, PC_PROTO_MARKER, off);
	}
	n = pc_msg_line(msg, buf + off, sizeof(buf) - off);
	if (n < 0)
		return n;
	/* every host line of a session carries its tag (auth.h) */
	n = pc_auth_seal(&b->s, buf + off, (size_t)n - 1, sizeof(buf) - off - 1);
	if (n < 0)
		return n;
	buf[off + (size_t)n] = '\n';
	/* host lines are short: they fit a fresh socket's or tty's buffer */
	return pc_write_all(b->fd, buf, off + (size_t)n + 1);
}

static void close_link(struct bctx *b)
{
	if (b->fd >= 0 && b->fd != b->sfd)
		close(b->fd);
	b->fd = -1;
	memset(&b->lb, 0, sizeof(b->lb));
	memset(&b->s, 0, sizeof(b->s));
	for (unsigned i = 0; i < MAX_SERIAL_HELLOS; i++)
		hs_clear(&b->shs[i]);
}

/* Raw 8N1 at the configured rate, no flow control, no echo. */
static int serial_open(struct bctx *b, char *err, size_t errlen)
{
	static const struct { uint32_t baud; speed_t sp; } rates[] = {
		{ 9600, B9600 }, { 19200, B19200 }, { 38400, B38400 }, { 57600, B57600 }, { 115200, B115200 },
		{ 230400, B230400 }, { 460800, B460800 }, { 921600, B921600 }, { 1500000, B1500000 },
		{ 3000000, B3000000 },
	};
	struct termios t;
	speed_t sp = B115200;
	int fd = open(b->cfg->serial_device, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		snprintf(err, errlen, "board %s: cannot open its serial console %s: %s", b->cfg->name,
			 b->cfg->serial_device, strerror(errno));
		return -errno;
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(rates); i++)
		if (rates[i].baud == b->cfg->serial_baud)
			sp = rates[i].sp;
	if (tcgetattr(fd, &t) == 0) {
		cfmakeraw(&t);
		t.c_cflag |= CLOCAL | CREAD;
		t.c_cflag &= ~(tcflag_t)CRTSCTS;
		cfsetispeed(&t, sp);
		cfsetospeed(&t, sp);
		if (tcsetattr(fd, TCSANOW, &t) < 0) {
			snprintf(err, errlen, "board %s: %s: cannot set %u 8N1 raw: %s", b->cfg->name,
				 b->cfg->serial_device, b->cfg->serial_baud, strerror(errno));
			close(fd);
			return -EIO;
		}
	} else if (errno != ENOTTY) {
		snprintf(err, errlen, "board %s: %s: %s", b->cfg->name, b->cfg->serial_device, strerror(errno));
		close(fd);
		return -EIO;
	}
	b->sfd = fd;
	return 0;
}

/* ---- board state machine ---- */

static void set_state(struct bctx *b, enum bstate st, uint64_t timeout_ms)
{
	b->st = st;
	b->t_state = pc_now_ms();
	b->deadline = timeout_ms == UINT64_MAX ? UINT64_MAX : b->t_state + timeout_ms;
}

/* A sysrq board is never switched off: its agent reboots it on request. */
static int is_sysrq(const struct bctx *b)
{
	return b->relay.ops && !strcmp(b->relay.ops->name, "sysrq");
}

static void power_off(struct bctx *b)
{
	if (is_sysrq(b))
		return;
	if (relay_off(&b->relay))
		pc_warn("board %s: %s", b->cfg->name, b->relay.err);
}

static void give_up(struct bctx *b, const char *why)
{
	json_object *ev = ev_new(b, "give_up");

	snprintf(b->given_up, sizeof(b->given_up), "%s", why);
	pc_err("board %s: giving up: %s", b->cfg->name, why);
	/* on record: the report calls the board's device INCOMPLETE, saying why
	 * (the engine takes it as informational) */
	json_object_object_add(ev, "reason", json_object_new_string(why));
	ev_log(b, ev);
	power_off(b);
	close_link(b);
	set_state(b, B_DONE, UINT64_MAX);
}

/* The cycle ends (cut done, or it could not run): move on after the off time. */
static void next_cycle(struct bctx *b)
{
	results_sync(&b->c->res);
	b->cycle++;
	b->attempt = 0;
	b->rejects = 0;
	b->working = 0;
	b->cycles_run++;
	if (b->cycle > b->c->cycles + 1) {
		set_state(b, B_DONE, UINT64_MAX);
		return;
	}
	set_state(b, B_OFF_WAIT, b->cfg->off_ms);
}

static void infra(struct bctx *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void infra(struct bctx *b, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pc_warn("board %s cycle %u: %s", b->cfg->name, b->cycle, buf);
	if (b->cycle > b->c->cycles) {
		/* the final verification: there is no cycle of its own to blame,
		 * so retry it, then give the last cycle's writes the verdict */
		power_off(b);
		close_link(b);
		if (++b->attempt <= b->cfg->boot_retries) {
			set_state(b, B_OFF_WAIT, b->cfg->off_ms);
			return;
		}
		ev_reason(b, "final_infra", "the final verification failed: %s", buf);
		set_state(b, B_DONE, UINT64_MAX);
		return;
	}
	ev_reason(b, "infra", "%s", buf);
	power_off(b);
	close_link(b);
	if (++b->consecutive_infra >= MAX_CONSECUTIVE_INFRA) {
		char why[1200];
		snprintf(why, sizeof(why), "%u infrastructure errors in a row, the last: %s", b->consecutive_infra, buf);
		next_cycle(b);
		give_up(b, why);
		return;
	}
	next_cycle(b);
}

static void power_on(struct bctx *b)
{
	struct camp *c = b->c;
	json_object *ev;

	snprintf(b->relay.console, sizeof(b->relay.console), "%s/console/%s/cycle-%u.log", c->res.dir,
		 b->cfg->name, b->cycle);
	b->t_power = pc_now_ms();
	if (b->cfg->link_serial) {
		/* a line the last cut broke off is noise: the new boot starts afresh,
		 * and so does the authentication */
		memset(&b->slb, 0, sizeof(b->slb));
		close_link(b);
		/* the harness captures the console itself, from the serial line */
		if (b->cfd >= 0)
			close(b->cfd);
		b->cfd = open(b->relay.console, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (b->cfd < 0)
			pc_warn("board %s: %s: %s", b->cfg->name, b->relay.console, strerror(errno));
		b->relay.console[0] = 0;
	}
	ev = ev_new(b, "power_on");
	json_object_object_add(ev, "attempt", json_object_new_int(b->attempt + 1));
	ev_log(b, ev);
	if (relay_on(&b->relay)) {
		infra(b, "relay on failed: %s", b->relay.err);
		return;
	}
	set_state(b, B_WAIT_HELLO, b->cfg->boot_timeout_ms);
}

static void boot_timeout(struct bctx *b)
{
	struct camp *c = b->c;

	power_off(b);
	close_link(b);
	if (++b->attempt <= b->cfg->boot_retries) {
		pc_warn("board %s cycle %u: no HELLO within %u ms; power-cycling (retry %u of %u)", b->cfg->name,
			b->cycle, b->cfg->boot_timeout_ms, b->attempt, b->cfg->boot_retries);
		set_state(b, B_OFF_WAIT, b->cfg->off_ms);
		return;
	}
	if (b->rejects) {
		/* someone tried and could not prove to be the agent: whether the
		 * board booted is not known, so the device is not blamed */
		infra(b, "no authenticated agent within %u ms after %u attempts; %u attempt(s) to speak for the "
		      "board were refused (link_reject events)", b->cfg->boot_timeout_ms, b->attempt, b->rejects);
		return;
	}
	if (b->cycle > c->cycles) {
		ev_reason(b, "final_boot_fail", "no HELLO within %u ms after %u attempts at the final verification",
			  b->cfg->boot_timeout_ms, b->attempt);
		set_state(b, B_DONE, UINT64_MAX);
		return;
	}
	ev_reason(b, "boot_fail", "no HELLO within %u ms, %u attempts", b->cfg->boot_timeout_ms, b->attempt);
	b->consecutive_infra = 0;
	next_cycle(b);
}

static uint64_t plan_rand(struct bctx *b, uint64_t salt)
{
	return pc_mix64(b->c->cfg->seed ^ pc_mix64(((uint64_t)b->idx << 40) ^ ((uint64_t)b->cycle << 8) ^ salt));
}

static void start_work(struct bctx *b)
{
	struct camp *c = b->c;
	struct engine_board_state es;
	struct pc_work w = { 0 };
	json_object *msg, *ev;
	uint32_t span = b->cfg->cut_max - b->cfg->cut_min + 1;
	uint64_t r = plan_rand(b, 1);

	engine_board_state(c->eng, b->cfg->name, &es);
	w.cycle = b->cycle;
	w.first = es.next_seq;
	w.n = b->cfg->records_per_cycle;
	w.mode = b->cfg->modes[(b->cycle - 1) % b->cfg->nmodes];
	w.pattern = b->cfg->pattern;
	w.record_size = b->cfg->record_size;
	w.flush_every = b->cfg->flush_every;
	w.qd = b->cfg->queue_depth;
	w.seed = plan_rand(b, 2) & INT64_MAX;
	msg = pc_msg_work(&w);
	ev = ev_new(b, "work");
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
	ev_log(b, ev);
	b->working = 1;
	b->acks = 0;
	b->done_seen = 0;
	b->t_work = pc_now_ms();
	b->cut_at = UINT64_MAX;
	b->cut_acks = UINT32_MAX;
	if (b->cfg->cut == CUT_RANDOM)
		b->cut_at = b->t_work + b->cfg->cut_min + r % span;
	else
		b->cut_acks = b->cfg->cut_min + (uint32_t)(r % span);
	if (send_msg(b, msg)) {
		json_object_put(msg);
		infra(b, "sending the work failed: %s", strerror(errno));
		return;
	}
	json_object_put(msg);
	set_state(b, B_WRITING, b->cfg->work_timeout_ms);
}

/* The power is off (or the board is crashing): record it and drain the link. */
static void cut_done(struct bctx *b, uint64_t now, const char *why, const char *how)
{
	json_object *ev = ev_new(b, "cut");

	json_object_object_add(ev, "plan", json_object_new_string(b->cfg->cut == CUT_RANDOM ? "random" : "acks"));
	json_object_object_add(ev, "at_ms", json_object_new_int64((int64_t)(now - b->t_work)));
	json_object_object_add(ev, "acks_before_cut", json_object_new_int64(b->acks));
	json_object_object_add(ev, "trigger", json_object_new_string(why));
	if (how)
		json_object_object_add(ev, "how", json_object_new_string(how));
	ev_log(b, ev);
	set_state(b, B_DRAIN, DRAIN_MS);
}

static void cut(struct bctx *b, const char *why)
{
	uint64_t now = pc_now_ms();

	if (is_sysrq(b)) {
		/* not a power cut: the agent reboots the board without syncing,
		 * and the device keeps its power */
		json_object *m = pc_msg_new(PC_MSG_CRASH);
		int ret = send_msg(b, m);

		json_object_put(m);
		if (ret) {
			infra(b, "sending the crash request failed: %s", strerror(-ret));
			return;
		}
		cut_done(b, now, why, "sysrq crash (device keeps power)");
		return;
	}
	/* the relay first: the instant matters, the bookkeeping can wait */
	if (relay_off(&b->relay)) {
		infra(b, "relay off failed at the cut: %s", b->relay.err);
		return;
	}
	/* a relay that can say so must confirm the power is off: a cut that did
	 * not happen would make every verdict after it a lie */
	for (int i = 0; relay_get(&b->relay) == 1; i++) {
		/* a kill is delivered, not done, when kill() returns: allow a moment */
		if (i == 10) {
			infra(b, "the relay still reports power on 200 ms after the cut");
			return;
		}
		pc_sleep_us(20000);
	}
	cut_done(b, now, why, NULL);
}

static void final_verified(struct bctx *b)
{
	power_off(b);
	close_link(b);
	results_sync(&b->c->res);
	set_state(b, B_DONE, UINT64_MAX);
}

/* A validated message from a board's agent. */
static void on_msg(struct bctx *b, struct pc_msg *m, json_object *raw)
{
	struct camp *c = b->c;
	json_object *ev = ev_new(b, "rx");

	json_object_object_add(ev, "msg", json_object_get(raw));
	ev_log(b, ev);
	if (m->type == PC_MSG_ERROR) {
		json_object *t;
		json_object_object_get_ex(raw, "msg", &t);
		if (b->st == B_DRAIN && !is_sysrq(b))
			return;	/* what a dying agent said after the cut */
		if (b->st == B_WRITING && json_object_object_get_ex(raw, "write_error", NULL)) {
			/* the device refused a write: a finding about the device (the
			 * engine puts it in this cycle's verdict), not lab trouble */
			cut(b, "write refused");
			return;
		}
		infra(b, "agent error: %s", json_object_get_string(t));
		return;
	}
	switch (b->st) {
	case B_VERIFY:
		if (m->type == PC_MSG_SCAN_END) {
			struct engine_board_state es;

			engine_board_state(c->eng, b->cfg->name, &es);
			if (!es.scan_ok) {
				/* the engine could not use the scan: writing now would
				 * pile new records on unjudged ones */
				infra(b, "the agent's scan was incomplete or inconsistent (see events.jsonl)");
				break;
			}
			b->consecutive_infra = 0;
			if (b->cycle > c->cycles)
				final_verified(b);
			else
				start_work(b);
		}
		break;
	case B_WRITING:
		if (m->type == PC_MSG_ACK) {
			b->acks += m->u.range.n;
			if (b->acks >= b->cut_acks)
				cut(b, "acks");
		} else if (m->type == PC_MSG_DONE) {
			b->done_seen = 1;
			/* nothing more will happen: cut now rather than wait for the instant */
			cut(b, "work done");
		}
		break;
	default:
		break;
	}
}

/*
 * What to scan at this boot: the whole region for the baseline, every
 * full_every cycles and at the final verification; otherwise the slots the
 * pending cycle wrote plus a seeded sample of cold ones.
 */
static json_object *verify_request(struct bctx *b)
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
static int send_known(struct bctx *b)
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

		ret = !msg || send_msg(b, msg) ? -1 : 0;
		json_object_put(msg);
		sent += take;
	}
	for (uint32_t sent = 0; sent < n && !ret;) {
		uint32_t take = n - sent < PC_PROTO_KNOWN_PER_LINE ? n - sent : PC_PROTO_KNOWN_PER_LINE;
		json_object *msg = pc_msg_known(k + sent, take);

		ret = !msg || send_msg(b, msg) ? -1 : 0;
		json_object_put(msg);
		sent += take;
	}
	free(k);
	free(ks);
	if (ret && !errno)
		errno = ENOMEM;
	return ret ? -1 : (int)(n + ns);
}

/* An authenticated agent's hello: check what it says, then ask for the scan. */
static void on_hello(struct bctx *b, struct pc_msg *m, json_object *raw)
{
	json_object *ev = ev_new(b, "rx"), *region, *v, *msg;
	uint64_t rs = 0;
	const char *boot_id = "";
	int known;

	json_object_object_add(ev, "msg", json_object_get(raw));
	ev_log(b, ev);
	if (json_object_object_get_ex(raw, "boot_id", &v))
		boot_id = json_object_get_string(v);
	if (b->boot_id[0] && !strcmp(b->boot_id, boot_id)) {
		/* the same boot as the last power-on: the board never lost power
		 * (or the agent survived the cut), so this cycle proves nothing */
		infra(b, "the agent's boot id %s did not change since the last power-on: the board did not "
		      "really lose power (check the relay wiring), or an agent survived the cut", boot_id);
		return;
	}
	pc_strlcpy(b->boot_id, boot_id, sizeof(b->boot_id));
	if (json_object_object_get_ex(raw, "region_error", &v)) {
		/* no superblock of its own: the agent scans and writes nothing, and
		 * the geometry the host remembers is never imposed on it */
		infra(b, "the agent has no usable powercut region: %s", json_object_get_string(v));
		return;
	}
	if (json_object_object_get_ex(raw, "region", &region) && json_object_object_get_ex(region, "record_size", &v))
		rs = (uint64_t)json_object_get_int64(v);
	if (rs != b->cfg->record_size) {
		char why[256];
		snprintf(why, sizeof(why), "the board's region holds %" PRIu64 "-byte records but the configuration "
			 "says device.record_size %u; re-prepare the region or fix the configuration", rs,
			 b->cfg->record_size);
		ev_reason(b, "infra", "%s", why);
		give_up(b, why);
		return;
	}
	if (engine_board_refused(b->c->eng, b->cfg->name)) {
		/* a region beyond the board's configuration: nothing of this boot is judged */
		infra(b, "%s", engine_board_refused(b->c->eng, b->cfg->name));
		return;
	}
	known = send_known(b);
	if (known < 0) {
		infra(b, "sending KNOWN failed: %s", strerror(errno));
		return;
	}
	msg = verify_request(b);
	ev = ev_new(b, "verify");
	json_object_object_add(ev, "msg", json_object_get(msg));
	if (known)
		json_object_object_add(ev, "known", json_object_new_int(known));
	ev_log(b, ev);
	if (send_msg(b, msg)) {
		json_object_put(msg);
		infra(b, "sending VERIFY failed: %s", strerror(errno));
		return;
	}
	json_object_put(msg);
	set_state(b, B_VERIFY, b->cfg->verify_timeout_ms);
}

/* The agent proved it holds the key: the link is the board's. */
static void authenticated(struct bctx *b, int fd, const struct handshake *h)
{
	struct pc_msg m;
	char err[512];

	b->fd = fd;
	pc_auth_session_init(&b->s, &b->c->key, h->hn, h->an, 1);
	/* the hello was valid when it came: parse it again for its fields */
	if (pc_msg_parse(h->hello, h->hello_len, &m, err, sizeof(err))) {
		infra(b, "the authenticated hello no longer parses: %s", err);
		return;
	}
	on_hello(b, &m, m.obj);
	pc_msg_clear(&m);
}

static void bad_line(struct bctx *b, const char *line, size_t len, const char *why)
{
	json_object *ev = ev_new(b, "rx_bad");
	char shown[256];

	snprintf(shown, sizeof(shown), "%.*s", (int)(len < 200 ? len : 200), line);
	json_object_object_add(ev, "line", json_object_new_string(shown));
	json_object_object_add(ev, "error", json_object_new_string(why));
	ev_log(b, ev);
	if (b->st != B_DRAIN)
		infra(b, "protocol error from the agent: %s", why);
}

/* One line on an authenticated link: it must carry the session's next tag. */
static void board_line(struct bctx *b, const char *line, size_t len)
{
	struct pc_msg m;
	char err[512];

	if (pc_auth_open(&b->s, line, len, err, sizeof(err))) {
		/* a second writer on the console, a replayed or forged line:
		 * dropped, and the genuine agent's next line still verifies */
		link_reject(b->c, b, 0, b->fd == b->sfd ? b->cfg->serial_device : "tcp", line, len, "%s", err);
		return;
	}
	if (pc_msg_parse(line, len, &m, err, sizeof(err))) {
		bad_line(b, line, len, err);
		return;
	}
	if (m.type == PC_MSG_HELLO || m.type == PC_MSG_AUTH)
		bad_line(b, line, len, "a second hello or proof on one link");
	else
		on_msg(b, &m, m.obj);
	pc_msg_clear(&m);
}

/* Read what the board's link has; handle every complete line. */
static void board_read(struct bctx *b)
{
	char data[8192], line[PC_PROTO_MAX_LINE + 2];
	ssize_t n = read(b->fd, data, sizeof(data));
	size_t off = 0, len;

	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		/* the link closed */
		close_link(b);
		if (b->st == B_DRAIN) {
			next_cycle(b);
		} else if (b->st == B_WRITING) {
			/* the agent died on its own: treat it as the cut (it is one) */
			cut(b, "link lost");
			if (b->st == B_DRAIN)
				next_cycle(b);
		} else if (b->st == B_VERIFY || b->st == B_WAIT_HELLO) {
			infra(b, "the agent closed the link during %s", bstate_names[b->st]);
		}
		return;
	}
	while (off < (size_t)n && b->fd >= 0) {
		enum pc_line_result r;

		off += pc_linebuf_feed(&b->lb, data + off, (size_t)n - off);
		while (b->fd >= 0 && (r = pc_linebuf_take(&b->lb, line, sizeof(line), &len)) != PC_LINE_NONE) {
			if (r == PC_LINE_TOO_LONG) {
				bad_line(b, "", 0, "line exceeds the protocol's maximum length");
				continue;
			}
			if (len)
				board_line(b, line, len);
		}
	}
}

/* A console line that is not ours: kernel and boot noise, which may time the boot. */
static void serial_noise(struct bctx *b, const char *line)
{
	for (unsigned i = 0; i < b->cfg->nboot_patterns; i++) {
		json_object *ev;

		if (!strstr(line, b->cfg->boot_patterns[i]))
			continue;
		ev = ev_new(b, "boot_stage");
		json_object_object_add(ev, "pattern", json_object_new_string(b->cfg->boot_patterns[i]));
		json_object_object_add(ev, "ms", json_object_new_int64((int64_t)(pc_now_ms() - b->t_power)));
		ev_log(b, ev);
	}
}

/*
 * The serial console carries everything the board prints; the agent's lines
 * are the ones with the marker (anywhere in the line: the kernel may have
 * written first). Everything goes to the cycle's console log. Before the
 * agent has proved itself, only a hello (answered with a challenge) and a
 * proof are of use; after, only lines with the session's tags.
 */
static void serial_line(struct bctx *b, const char *mk, size_t len)
{
	struct camp *c = b->c;
	const char *dev = b->cfg->serial_device;
	struct pc_msg m;
	char err[512];

	if (b->fd == b->sfd) {
		board_line(b, mk, len);
		return;
	}
	if (pc_msg_parse(mk, len, &m, err, sizeof(err))) {
		if (b->st == B_WAIT_HELLO)
			link_reject(c, b, 1, dev, mk, len, "invalid line before the agent proved itself: %s", err);
		return;
	}
	if (b->st != B_WAIT_HELLO) {
		/* nobody is expected now: a late line from an earlier boot */
		json_object *ev = ev_new(b, "rx_stray");
		json_object_object_add(ev, "msg", json_object_get(m.obj));
		ev_log(b, ev);
	} else if (m.type == PC_MSG_HELLO) {
		json_object *v;
		unsigned slot = 0;

		json_object_object_get_ex(m.obj, "board", &v);
		if (strcmp(json_object_get_string(v), b->cfg->name)) {
			link_reject(c, b, 1, dev, mk, len, "a hello for board '%s' on board %s's console",
				    json_object_get_string(v), b->cfg->name);
		} else if (!json_object_object_get_ex(m.obj, "nonce", NULL)) {
			link_reject(c, b, 1, dev, mk, len, "a hello without a nonce: an agent without the "
				    "authenticated link (update it)");
		} else {
			/* answer it; keep the latest few (a rogue's hello must not
			 * push the genuine agent's out before it answers) */
			for (unsigned i = 0; i < MAX_SERIAL_HELLOS; i++) {
				if (!b->shs[i].hello) {
					slot = i;
					break;
				}
				if (b->shs[i].since < b->shs[slot].since)
					slot = i;
			}
			if (hs_start(&b->shs[slot], mk, len, m.obj, b->sfd, 1))
				pc_warn("board %s: %s: cannot send the challenge: %s", b->cfg->name, dev, strerror(errno));
		}
	} else if (m.type == PC_MSG_AUTH) {
		unsigned i;

		for (i = 0; i < MAX_SERIAL_HELLOS && !hs_proven(c, &b->shs[i], m.obj); i++)
			;
		if (i == MAX_SERIAL_HELLOS) {
			link_reject(c, b, 1, dev, mk, len, "a proof that answers none of the challenges sent: "
				    "not the campaign's key, or a copied hello");
		} else {
			struct handshake h = b->shs[i];

			b->shs[i].hello = NULL;	/* moved to h */
			for (unsigned k = 0; k < MAX_SERIAL_HELLOS; k++)
				hs_clear(&b->shs[k]);
			authenticated(b, b->sfd, &h);
			hs_clear(&h);
		}
	} else {
		link_reject(c, b, 0, dev, mk, len, "'%s' before the agent proved itself", pc_msg_type_name(m.type));
	}
	pc_msg_clear(&m);
}

static void serial_read(struct bctx *b)
{
	char data[4096], line[PC_PROTO_MAX_LINE + 2];
	ssize_t n = read(b->sfd, data, sizeof(data));
	size_t off = 0, len;

	if (n <= 0)
		return;
	if (b->cfd >= 0 && pc_write_all(b->cfd, data, (size_t)n))
		pc_warn("board %s: console log: %s", b->cfg->name, strerror(errno));
	while (off < (size_t)n) {
		enum pc_line_result r;

		off += pc_linebuf_feed(&b->slb, data + off, (size_t)n - off);
		while ((r = pc_linebuf_take(&b->slb, line, sizeof(line), &len)) != PC_LINE_NONE) {
			const char *mk;

			if (r == PC_LINE_TOO_LONG)
				continue;	/* noise: a long kernel line, or garbage */
			line[len] = 0;
			mk = memchr(line, '@', len) ? strstr(line, PC_PROTO_MARKER) : NULL;
			if (!mk) {
				serial_noise(b, line);
				continue;
			}
			/* the marker frames the line; what was proved and tagged is the JSON */
			len -= (size_t)(mk - line) + strlen(PC_PROTO_MARKER);
			serial_line(b, mk + strlen(PC_PROTO_MARKER), len);
		}
	}
}

static void pending_close(struct pending *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->b = NULL;
	hs_clear(&p->hs);
}

/*
 * A connection that has not proved itself yet: its first line must be a hello
 * for a board that is booting (answered with a challenge), its second the
 * proof. Anything else closes it, on record.
 */
static void pending_line(struct camp *c, struct pending *p, const char *line, size_t len)
{
	struct pc_msg m;
	char err[512];
	json_object *v;
	struct bctx *b;

	if (pc_msg_parse(line, len, &m, err, sizeof(err))) {
		link_reject(c, p->b, 1, p->peer, line, len, "%s", err);
		pending_close(p);
		return;
	}
	if (!p->b) {
		if (m.type != PC_MSG_HELLO) {
			link_reject(c, NULL, 1, p->peer, line, len, "the first line is '%s', not hello",
				    pc_msg_type_name(m.type));
			goto drop;
		}
		json_object_object_get_ex(m.obj, "board", &v);
		b = board_by_name(c, json_object_get_string(v));
		if (!b) {
			link_reject(c, NULL, 1, p->peer, line, len, "a hello from unknown board '%s'",
				    json_object_get_string(v));
			goto drop;
		}
		if (b->st != B_WAIT_HELLO || b->fd >= 0) {
			link_reject(c, b, 1, p->peer, line, len, "a hello while the board is %s%s (a stale or second agent?)",
				    bstate_names[b->st], b->fd >= 0 ? " and has its agent" : "");
			goto drop;
		}
		if (!json_object_object_get_ex(m.obj, "nonce", NULL)) {
			link_reject(c, b, 1, p->peer, line, len, "a hello without a nonce: an agent without the "
				    "authenticated link (update it)");
			goto drop;
		}
		if (hs_start(&p->hs, line, len, m.obj, p->fd, 0)) {
			link_reject(c, b, 1, p->peer, line, len, "cannot send the challenge: %s", strerror(errno));
			goto drop;
		}
		p->b = b;
		p->since = pc_now_ms();	/* the proof has as long again */
		pc_msg_clear(&m);
		return;
	}
	b = p->b;
	if (m.type != PC_MSG_AUTH) {
		link_reject(c, b, 1, p->peer, line, len, "'%s' where the proof was due", pc_msg_type_name(m.type));
		goto drop;
	}
	if (!hs_proven(c, &p->hs, m.obj)) {
		link_reject(c, b, 1, p->peer, line, len, "the proof does not verify: not the campaign's key, or a "
			    "copied hello");
		goto drop;
	}
	if (b->st != B_WAIT_HELLO || b->fd >= 0) {
		link_reject(c, b, 1, p->peer, line, len, "a proven agent while the board is %s%s", bstate_names[b->st],
			    b->fd >= 0 ? " and has its agent" : "");
		goto drop;
	}
	pc_msg_clear(&m);
	{
		struct handshake h = p->hs;
		int fd = p->fd;

		b->lb = p->lb;	/* what came after the proof */
		p->hs.hello = NULL;
		p->fd = -1;
		pending_close(p);
		authenticated(b, fd, &h);
		hs_clear(&h);
	}
	/* lines that came with the proof */
	while (b->fd >= 0) {
		char more[PC_PROTO_MAX_LINE + 2];
		size_t n;
		enum pc_line_result r = pc_linebuf_take(&b->lb, more, sizeof(more), &n);

		if (r == PC_LINE_NONE)
			break;
		if (r == PC_LINE_OK && n)
			board_line(b, more, n);
	}
	return;
drop:
	pc_msg_clear(&m);
	pending_close(p);
}

static void pending_read(struct camp *c, struct pending *p)
{
	char data[4096], line[PC_PROTO_MAX_LINE + 2];
	ssize_t n = read(p->fd, data, sizeof(data));
	size_t off = 0, len;

	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		link_reject(c, p->b, p->b != NULL, p->peer, NULL, 0, "the connection closed %s",
			    p->b ? "before its proof" : "without a hello");
		pending_close(p);
		return;
	}
	while (off < (size_t)n && p->fd >= 0) {
		enum pc_line_result r;

		off += pc_linebuf_feed(&p->lb, data + off, (size_t)n - off);
		while (p->fd >= 0 && (r = pc_linebuf_take(&p->lb, line, sizeof(line), &len)) != PC_LINE_NONE) {
			if (r == PC_LINE_TOO_LONG) {
				link_reject(c, p->b, 1, p->peer, NULL, 0, "a line longer than %d bytes",
					    PC_PROTO_MAX_LINE);
				pending_close(p);
				return;
			}
			if (len)
				pending_line(c, p, line, len);
		}
	}
}

/*
 * Which waiting connection goes to make room (src: only that address's; NULL:
 * anyone's): the oldest that has not said hello -- a squatter, most likely; a
 * genuine agent says hello as soon as it connects -- else the oldest.
 */
static unsigned pending_victim(const struct camp *c, const char *src)
{
	unsigned quiet = MAX_PENDING, any = MAX_PENDING;

	for (unsigned i = 0; i < MAX_PENDING; i++) {
		const struct pending *p = &c->pend[i];

		if (p->fd < 0 || (src && strcmp(p->src, src)))
			continue;
		if (any == MAX_PENDING || p->since < c->pend[any].since)
			any = i;
		if (!p->b && (quiet == MAX_PENDING || p->since < c->pend[quiet].since))
			quiet = i;
	}
	return quiet != MAX_PENDING ? quiet : any;
}

/*
 * New connections wait here until they prove themselves. The table is bounded,
 * and so is each source's share (two per board, at least 8: many boards may
 * share one address): a source at its limit (or anyone, when the table is
 * full) loses a waiting connection, the oldest that has not said hello first,
 * so connections that squat without speaking cannot lock a genuine agent out.
 */
static void accept_all(struct camp *c)
{
	unsigned per_source = 2 * c->nb > MIN_PENDING_PER_SOURCE ? 2 * c->nb : MIN_PENDING_PER_SOURCE;

	if (per_source > MAX_PENDING)
		per_source = MAX_PENDING;
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(c->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";
		unsigned i, free_i = MAX_PENDING, from_src = 0;

		if (fd < 0)
			return;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv, sizeof(serv),
			    NI_NUMERICHOST | NI_NUMERICSERV);
		for (i = 0; i < MAX_PENDING; i++) {
			struct pending *p = &c->pend[i];

			if (p->fd < 0) {
				if (free_i == MAX_PENDING)
					free_i = i;
				continue;
			}
			if (!strcmp(p->src, host))
				from_src++;
		}
		if (from_src >= per_source || free_i == MAX_PENDING) {
			i = pending_victim(c, from_src >= per_source ? host : NULL);
			link_reject(c, c->pend[i].b, c->pend[i].b != NULL, c->pend[i].peer, NULL, 0,
				    "closed to make room: %s", from_src >= per_source ?
				    "its address has too many connections waiting" : "too many connections waiting");
			pending_close(&c->pend[i]);
			free_i = i;
		}
		memset(&c->pend[free_i], 0, sizeof(c->pend[free_i]));
		c->pend[free_i].fd = fd;
		c->pend[free_i].since = pc_now_ms();
		pc_strlcpy(c->pend[free_i].src, host, sizeof(c->pend[free_i].src));
		snprintf(c->pend[free_i].peer, sizeof(c->pend[free_i].peer), strchr(host, ':') ? "[%s]:%s" : "%s:%s",
			 host, serv);
	}
}

static void board_timer(struct bctx *b)
{
	uint64_t now = pc_now_ms();

	if (b->st == B_WRITING && now >= b->cut_at) {
		cut(b, "random instant");
		return;
	}
	if (now < b->deadline)
		return;
	switch (b->st) {
	case B_OFF_WAIT:
		power_on(b);
		break;
	case B_WAIT_HELLO:
		boot_timeout(b);
		break;
	case B_VERIFY:
		infra(b, "no complete scan within verify_timeout_ms (%u ms)", b->cfg->verify_timeout_ms);
		break;
	case B_WRITING:
		cut(b, "work timeout");
		break;
	case B_DRAIN:
		close_link(b);
		next_cycle(b);
		break;
	default:
		break;
	}
}

/* ---- progress ---- */

static void progress(struct camp *c, int force)
{
	uint64_t now = pc_now_ms();
	char line[1024];
	size_t l = 0;
	unsigned done = 0, total = 0;
	double elapsed = (double)(now - c->t0) / 1000.0;
	unsigned run = 0;

	if (c->o->quiet || (!force && now - c->last_progress < 2000))
		return;
	c->last_progress = now;
	for (unsigned i = 0; i < c->nb; i++) {
		struct bctx *b = &c->b[i];
		unsigned d = b->cycle > c->cycles ? c->cycles : b->cycle - 1;
		done += d;
		total += c->cycles;
		run += b->cycles_run;
		l += (size_t)snprintf(line + l, sizeof(line) - l, "%s%s %u/%u PASS %u FAIL %u%s%s",
				      i ? " | " : "", b->cfg->name, d, c->cycles, b->n_pass, b->n_fail,
				      b->n_boot ? " BOOT_FAIL" : "", b->given_up[0] ? " (given up)" : "");
		if (l >= sizeof(line))
			break;
	}
	if (run && done < total) {
		double per = elapsed / run * c->nb;
		unsigned left = (unsigned)(per * (total - done) / c->nb);
		fprintf(stderr, "[%6.1fs] %s | ETA %u:%02u\n", elapsed, line, left / 60, left % 60);
	} else {
		fprintf(stderr, "[%6.1fs] %s\n", elapsed, line);
	}
}

/* ---- set-up, resume ---- */

static int seen_verdict(json_object *v, unsigned lineno, void *arg)
{
	struct camp *c = arg;
	json_object *b, *cy;
	char key[128];

	if (!json_object_object_get_ex(v, "board", &b) || !json_object_object_get_ex(v, "cycle", &cy))
		return -EINVAL;
	snprintf(key, sizeof(key), "%s/%" PRId64, json_object_get_string(b), json_object_get_int64(cy));
	json_object_object_add(c->seen_verdicts, key, json_object_new_boolean(1));
	tally(c, json_object_get_string(b), v);
	return 0;
}

static int replay_event(json_object *ev, unsigned lineno, void *arg)
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
		 * power-on must bring a new one */
		json_object *k, *m, *ty, *bd, *id;
		struct bctx *b;
		if (json_object_object_get_ex(ev, "ev", &k) && !strcmp(json_object_get_string(k), "rx") &&
		    json_object_object_get_ex(ev, "msg", &m) && json_object_object_get_ex(m, "type", &ty) &&
		    !strcmp(json_object_get_string(ty), "hello") && json_object_object_get_ex(ev, "board", &bd) &&
		    json_object_object_get_ex(m, "boot_id", &id) && (b = board_by_name(c, json_object_get_string(bd))))
			pc_strlcpy(b->boot_id, json_object_get_string(id), sizeof(b->boot_id));
	}
	if (engine_feed(c->eng, ev, err, sizeof(err)))
		pc_warn("%s/events.jsonl:%u: %s", c->res.dir, lineno, err);
	return c->fatal ? -EIO : 0;
}

static int campaign_json(struct camp *c, int *existing, char *err, size_t errlen)
{
	char path[PATH_MAX + 32];
	json_object *doc, *old, *cfgcopy = NULL, *host;
	struct utsname u;
	char hn[256] = "";

	snprintf(path, sizeof(path), "%s/campaign.json", c->res.dir);
	json_object_deep_copy(c->cfg->root, &cfgcopy, NULL);
	/* --cycles may grow a campaign: compare everything else */
	json_object_object_del(cfgcopy, "cycles");
	old = json_object_from_file(path);
	*existing = old != NULL;
	if (old) {
		json_object *oc = NULL, *ocopy = NULL;
		int same;
		json_object_object_get_ex(old, "config", &oc);
		json_object_deep_copy(oc, &ocopy, NULL);
		json_object_object_del(ocopy, "cycles");
		same = ocopy && json_object_equal(ocopy, cfgcopy);
		json_object_put(ocopy);
		json_object_put(old);
		json_object_put(cfgcopy);
		if (!same) {
			snprintf(err, errlen, "%s holds a campaign with a different configuration; resume it with "
				 "the configuration it was started with, or choose another --results folder", c->res.dir);
			return -EEXIST;
		}
		return 0;
	}
	json_object_put(cfgcopy);
	uname(&u);
	gethostname(hn, sizeof(hn) - 1);
	doc = json_object_new_object();
	json_object_object_add(doc, "campaign", json_object_new_string(c->cfg->name));
	json_object_object_add(doc, "config_file", json_object_new_string(c->cfg->path));
	json_object_object_add(doc, "started", json_object_new_int64((int64_t)time(NULL)));
	host = json_object_new_object();
	json_object_object_add(host, "hostname", json_object_new_string(hn));
	json_object_object_add(host, "kernel", json_object_new_string(u.release));
	json_object_object_add(host, "machine", json_object_new_string(u.machine));
	json_object_object_add(host, "powercut", json_object_new_string(PC_VERSION));
	json_object_object_add(doc, "host", host);
	cfgcopy = NULL;
	json_object_deep_copy(c->cfg->root, &cfgcopy, NULL);
	json_object_object_add(doc, "config", cfgcopy);
	{
		int ret = results_write_json(c->res.dir, "campaign.json", doc, err, errlen);
		json_object_put(doc);
		return ret;
	}
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

static int open_boards(struct camp *c, char *err, size_t errlen)
{
	for (unsigned i = 0; i < c->nb; i++) {
		struct bctx *b = &c->b[i];
		char state[PATH_MAX + 64], cons[PATH_MAX + 64];
		struct relay_ctx ctx;
		struct engine_board_state es;

		b->c = c;
		b->cfg = &c->cfg->boards[i];
		b->idx = i;
		b->fd = -1;
		b->sfd = -1;
		b->cfd = -1;
		if (b->cfg->link_serial && serial_open(b, err, errlen))
			return -EIO;
		snprintf(state, sizeof(state), "%s/boards/%s", c->res.dir, b->cfg->name);
		snprintf(cons, sizeof(cons), "%s/console/%s", c->res.dir, b->cfg->name);
		pc_mkdir_p(state, 0755);
		pc_mkdir_p(cons, 0755);
		ctx = (struct relay_ctx){
			.board = b->cfg->name, .connect = c->connect, .agent_path = c->agent,
			.state_dir = state, .device = b->cfg->device, .key_path = c->key_path,
		};
		if (relay_open(&b->relay, b->cfg->relay_driver, b->cfg->relay, &ctx, err, errlen))
			return -EIO;
		b->relay_open = 1;
		/* start with the power off: the first power-on is a clean boot */
		power_off(b);
		engine_board_state(c->eng, b->cfg->name, &es);
		b->cycle = (es.last_work_cycle > es.last_verdict_cycle ? es.last_work_cycle : es.last_verdict_cycle) + 1;
		if (es.last_cycle > c->cycles && !es.pending)
			b->cycle = c->cycles + 2;	/* finished earlier */
		if (b->cycle > c->cycles + 1) {
			set_state(b, B_DONE, UINT64_MAX);
			continue;
		}
		if (c->resuming)
			pc_info("board %s: resuming at cycle %u%s", b->cfg->name, b->cycle,
				es.pending ? " (the last cycle's writes are checked first)" : "");
		set_state(b, B_OFF_WAIT, i * 3u);	/* stagger power-ons a little */
	}
	return 0;
}

static int all_done(const struct camp *c)
{
	for (unsigned i = 0; i < c->nb; i++)
		if (c->b[i].st != B_DONE)
			return 0;
	return 1;
}

static void loop(struct camp *c)
{
	struct pollfd pfd[1 + MAX_PENDING + 256];
	void *who[1 + MAX_PENDING + 256];

	while (!all_done(c) && !stop_flag && !c->fatal) {
		uint64_t now = pc_now_ms(), next = now + 1000;
		int n = 0, timeout, ret;

		for (unsigned i = 0; i < c->nb; i++) {
			board_timer(&c->b[i]);
			if (c->b[i].st == B_WRITING && c->b[i].cut_at < next)
				next = c->b[i].cut_at;
			if (c->b[i].deadline < next)
				next = c->b[i].deadline;
		}
		for (unsigned i = 0; i < MAX_PENDING; i++)
			if (c->pend[i].fd >= 0 && now - c->pend[i].since > HELLO_WAIT_MS) {
				link_reject(c, c->pend[i].b, c->pend[i].b != NULL, c->pend[i].peer, NULL, 0,
					    "no %s within %u ms", c->pend[i].b ? "proof" : "hello", HELLO_WAIT_MS);
				pending_close(&c->pend[i]);
			}
		pfd[n] = (struct pollfd){ .fd = c->lfd, .events = POLLIN };
		who[n++] = NULL;
		for (unsigned i = 0; i < MAX_PENDING; i++)
			if (c->pend[i].fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = c->pend[i].fd, .events = POLLIN };
				who[n++] = &c->pend[i];
			}
		for (unsigned i = 0; i < c->nb && n < (int)PC_ARRAY_SIZE(pfd); i++)
			if (c->b[i].fd >= 0 || c->b[i].sfd >= 0) {
				pfd[n] = (struct pollfd){ .fd = c->b[i].sfd >= 0 ? c->b[i].sfd : c->b[i].fd,
							  .events = POLLIN };
				who[n++] = &c->b[i];
			}
		now = pc_now_ms();
		timeout = next > now ? (int)(next - now) : 0;
		ret = poll(pfd, (nfds_t)n, timeout);
		if (ret < 0 && errno != EINTR) {
			pc_err("poll: %s", strerror(errno));
			c->fatal = 1;
			break;
		}
		for (int i = 0; ret > 0 && i < n; i++) {
			if (!pfd[i].revents)
				continue;
			if (i == 0)
				accept_all(c);
			else if ((char *)who[i] >= (char *)c->pend && (char *)who[i] < (char *)(c->pend + MAX_PENDING)) {
				if (((struct pending *)who[i])->fd >= 0)
					pending_read(c, who[i]);
			} else {
				struct bctx *b = who[i];
				if (b->sfd >= 0 && b->sfd == pfd[i].fd)
					serial_read(b);
				else if (b->fd == pfd[i].fd)
					board_read(b);
			}
		}
		progress(c, 0);
	}
}

int campaign_run(struct campaign_cfg *cfg, const struct campaign_opts *o)
{
	struct camp c = { .cfg = cfg, .o = o, .lfd = -1 };
	char dir[PATH_MAX], err[1024] = "", note[1024] = "", evpath[PATH_MAX + 32], vpath[PATH_MAX + 32];
	struct sigaction sa = { .sa_handler = on_signal };
	int existing = 0, torn, rc = CAMPAIGN_ERROR;
	unsigned fails = 0;

	for (unsigned i = 0; i < MAX_PENDING; i++)
		c.pend[i].fd = -1;
	c.cycles = o->cycles > 0 ? (unsigned)o->cycles : cfg->cycles;
	c.nb = cfg->nboards;
	c.b = calloc(c.nb, sizeof(*c.b));
	if (!c.b)
		return CAMPAIGN_ERROR;
	for (unsigned i = 0; i < c.nb; i++) {
		c.b[i].c = &c;
		c.b[i].cfg = &cfg->boards[i];
		c.b[i].idx = i;
		c.b[i].fd = -1;
		c.b[i].sfd = -1;
		c.b[i].cfd = -1;
	}
	if (o->results)
		pc_strlcpy(dir, o->results, sizeof(dir));
	else
		snprintf(dir, sizeof(dir), "results/%s", cfg->name);
	find_agent(&c);
	if (results_open(&c.res, dir, note, sizeof(note), err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	if (note[0])
		pc_warn("%s", note);
	if (campaign_json(&c, &existing, err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	/* the agents' key: made once, kept with the campaign (or where the
	 * configuration says), given to every agent (docs/protocol.md) */
	if (cfg->key_file[0])
		pc_strlcpy(c.key_path, cfg->key_file, sizeof(c.key_path));
	else
		snprintf(c.key_path, sizeof(c.key_path), "%s/agent.key", dir);
	{
		int kr = pc_auth_key_create(c.key_path, err, sizeof(err));
		if (kr == 0)
			pc_info("created the agents' key %s (mode 0600): agents started by a relay get it; give it "
				"to a real board's agent with --key", c.key_path);
		else if (kr != -EEXIST) {
			pc_err("%s", err);
			goto out;
		}
	}
	if (pc_auth_key_load(c.key_path, &c.key, err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	c.eng = engine_new(cfg->name, on_verdict, on_note, &c);
	c.seen_verdicts = json_object_new_object();
	if (!c.eng || !c.seen_verdicts)
		goto out;
	/* the engine checks every HELLO against the configured boards */
	if (engine_configure(c.eng, cfg->root, err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	snprintf(evpath, sizeof(evpath), "%s/events.jsonl", dir);
	snprintf(vpath, sizeof(vpath), "%s/verdicts.jsonl", dir);
	if (existing) {
		/* resume: what the files say happened, happened */
		c.resuming = 1;
		if (results_each_line(vpath, seen_verdict, &c, &torn, err, sizeof(err)) ||
		    results_each_line(evpath, replay_event, &c, &torn, err, sizeof(err))) {
			pc_err("cannot resume from %s: %s", dir, err);
			goto out;
		}
		c.resuming = 0;
		c.t_base += 1;
		pc_info("resuming campaign %s in %s (%lu verdicts on record)", cfg->name, dir,
			(unsigned long)json_object_object_length(c.seen_verdicts));
	}
	json_object_put(c.seen_verdicts);
	c.seen_verdicts = NULL;
	c.t0 = pc_now_ms();
	if (listen_on(&c, err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	if (open_boards(&c, err, sizeof(err))) {
		pc_err("%s", err);
		goto out;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!o->quiet)
		pc_info("campaign %s: %u boards, %u cycles each, results in %s, agents connect to %s", cfg->name,
			c.nb, c.cycles, dir, c.connect);
	loop(&c);
	progress(&c, 1);
	for (unsigned i = 0; i < c.nb; i++) {
		fails += c.b[i].n_fail + c.b[i].n_boot;
		if (c.b[i].st != B_DONE || stop_flag)
			power_off(&c.b[i]);
	}
	/* Each board's plan and how this run left it, so that the report can
	 * tell a campaign that ran its cycles from one that stopped short
	 * (--cycles may change the plan from run to run). The cycle is the last
	 * one the board reached, never beyond what the engine has seen. */
	for (unsigned i = 0; i < c.nb && !c.fatal; i++) {
		struct bctx *b = &c.b[i];
		json_object *ev = ev_new(b, "run_end");
		unsigned last = b->cycle - 1 < c.cycles ? b->cycle - 1 : c.cycles;

		json_object_object_add(ev, "cycle", json_object_new_int64(last));
		json_object_object_add(ev, "cycles", json_object_new_int64(c.cycles));
		json_object_object_add(ev, "end", json_object_new_string(
			b->given_up[0] ? "given_up" : b->st == B_DONE ? "finished" : "interrupted"));
		ev_log(b, ev);
	}
	results_sync(&c.res);
	if (stop_flag)
		pc_warn("interrupted (signal %d); every verdict so far is on disk; run the same command to resume",
			(int)stop_flag);
	if (c.fatal) {
		rc = CAMPAIGN_ERROR;
	} else {
		/* the report's rule on the whole campaign (resumed runs included):
		 * FAIL or BOOT_FAIL 1, INCOMPLETE 3 (a board given up, too many
		 * INFRA_ERROR cycles, cycles left: interrupted), else 0 */
		const char *dirs[1] = { dir };
		const struct report_opts ro = { .own_run = 1 };
		char rerr[512] = "";
		unsigned judged = 0;
		int result;

		for (unsigned i = 0; i < c.nb; i++)
			judged += c.b[i].n_pass + c.b[i].n_fail + c.b[i].n_boot;
		if (!judged && !stop_flag)
			pc_err("no cycle could be judged (every cycle was INFRA_ERROR): see %s/verdicts.jsonl", dir);
		if (report_run(dirs, 1, o->no_report ? NULL : stdout, &ro, &result, rerr, sizeof(rerr))) {
			pc_err("report: %s", rerr);
			result = fails ? CAMPAIGN_FAIL : CAMPAIGN_ERROR;
		}
		rc = result;
	}
out:
	for (unsigned i = 0; i < c.nb; i++) {
		close_link(&c.b[i]);
		if (c.b[i].sfd >= 0)
			close(c.b[i].sfd);
		if (c.b[i].cfd >= 0)
			close(c.b[i].cfd);
		if (c.b[i].relay_open)
			relay_close(&c.b[i].relay);
	}
	for (unsigned i = 0; i < MAX_PENDING; i++)
		pending_close(&c.pend[i]);
	explicit_bzero(&c.key, sizeof(c.key));
	if (c.lfd >= 0)
		close(c.lfd);
	json_object_put(c.seen_verdicts);
	engine_free(c.eng);
	results_close(&c.res);
	free(c.b);
	return rc;
}

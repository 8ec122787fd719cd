/*
 * pcpeer - a scriptable peer of the harness's link, for the tests: a genuine
 * agent's side (with the key) or a rogue's (without it, or with a copied
 * line), over TCP or a console.
 *
 *   pcpeer [--connect HOST:PORT | --tty PATH] [--key FILE] [--marker] STEP...
 *   pcpeer --proxy LISTEN_PORT HOST:PORT LOG
 *
 * Steps, run in order:
 *   hello:FILE        send the JSON object in FILE as a hello, with a fresh nonce
 *   line:FILE         send the first line of FILE verbatim (a copied hello, say)
 *   auth              wait for the challenge that echoes our nonce and answer
 *                     with the proof (needs --key); the session starts
 *   auth-bogus        wait for a challenge and answer with a random proof
 *   tagged:TEXT       send TEXT (one JSON object) with the session's next tag
 *   raw:TEXT          send TEXT verbatim
 *   lines:FILE        send every line of FILE verbatim (a replayed session)
 *   expect:TYPE       wait up to 5 s for a message of TYPE (tags checked once
 *                     the session is up); exit 3 if none comes
 *   hold:MS           stay, reading and discarding, for MS milliseconds
 *   squat:N:MS        open N more connections that say nothing, hold them MS
 * Received lines are printed on stdout. Exit 0 when every step ran, 3 when an
 * expect failed, 1 on errors.
 *
 * --proxy forwards connections on 127.0.0.1:LISTEN_PORT to HOST:PORT and
 * appends every line the client sends to LOG (a session to replay later).
 * --proxy-drop does the same but closes every other connection (the 1st,
 * 3rd, ...) at once, after its first line: a host that drops an agent before
 * the challenge.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "common/auth.h"
#include "common/proto.h"
#include "common/spawn.h"
#include "common/util.h"

static int fd = -1, marker;
static struct pc_linebuf lb;
static struct pc_auth_session sess;
static struct pc_auth_key key;
static int have_key;
static char an[2 * PC_AUTH_NONCE_BYTES + 1];
static char hello_text[PC_PROTO_MAX_LINE + 2];
static size_t hello_len;

static int dial(const char *hostport)
{
	char host[128];
	uint16_t port;
	char ports[8];
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	int s;

	if (pc_parse_hostport(hostport, host, sizeof(host), &port))
		return -1;
	snprintf(ports, sizeof(ports), "%u", port);
	if (getaddrinfo(host, ports, &hints, &ai))
		return -1;
	s = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0 && connect(s, ai->ai_addr, ai->ai_addrlen)) {
		close(s);
		s = -1;
	}
	freeaddrinfo(ai);
	return s;
}

/* Up to twice the protocol's line limit: a rogue may send an over-long line. */
#define PEER_MAX_LINE (2 * PC_PROTO_MAX_LINE)

static int send_text(const char *text, size_t len)
{
	char buf[PEER_MAX_LINE + 64];
	size_t off = 0;

	if (len > PEER_MAX_LINE)
		return -1;
	if (marker) {
		memcpy(buf, PC_PROTO_MARKER, strlen(PC_PROTO_MARKER));
		off = strlen(PC_PROTO_MARKER);
	}
	memcpy(buf + off, text, len);
	buf[off + len] = '\n';
	return pc_write_all(fd, buf, off + len + 1);
}

static int send_tagged(const char *text)
{
	char buf[PC_PROTO_MAX_LINE + 64];
	size_t len = strlen(text);
	int n;

	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, text, len + 1);
	n = pc_auth_seal(&sess, buf, len, sizeof(buf));
	if (n < 0)
		return -1;
	return send_text(buf, (size_t)n);
}

/* Next line (JSON text, marker skipped) within ms; 0, or -1 on timeout/EOF. */
static int next_line(char *out, size_t cap, size_t *len, int ms)
{
	uint64_t deadline = pc_now_ms() + (uint64_t)ms;

	for (;;) {
		char data[4096];
		enum pc_line_result r = pc_linebuf_take(&lb, out, cap, len);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = pc_now_ms();
		ssize_t n;

		if (r == PC_LINE_OK) {
			char *mk;
			out[*len] = 0;
			mk = strstr(out, PC_PROTO_MARKER);
			if (mk) {
				mk += strlen(PC_PROTO_MARKER);
				*len -= (size_t)(mk - out);
				memmove(out, mk, *len + 1);
			} else if (marker) {
				continue;
			}
			printf("%s\n", out);
			fflush(stdout);
			return 0;
		}
		if (r == PC_LINE_TOO_LONG)
			continue;
		if (now >= deadline || poll(&p, 1, (int)(deadline - now)) <= 0)
			return -1;
		n = read(fd, data, sizeof(data));
		if (n <= 0)
			return -1;
		pc_linebuf_feed(&lb, data, (size_t)n);
	}
}

static int do_hello(const char *path)
{
	json_object *o = json_object_from_file(path), *m;
	const char *s;
	size_t len;

	if (!o) {
		fprintf(stderr, "pcpeer: %s: not a JSON object\n", path);
		return -1;
	}
	pc_auth_nonce(an);
	m = json_object_new_object();
	json_object_object_foreach(o, k, v)
		if (strcmp(k, "nonce") && strcmp(k, "mac"))
			json_object_object_add(m, k, json_object_get(v));
	json_object_object_add(m, "nonce", json_object_new_string(an));
	s = json_object_to_json_string_length(m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (len >= sizeof(hello_text)) {
		json_object_put(m);
		json_object_put(o);
		return -1;
	}
	memcpy(hello_text, s, len + 1);
	hello_len = len;
	json_object_put(m);
	json_object_put(o);
	return send_text(hello_text, hello_len);
}

static int do_auth(int bogus)
{
	char line[PC_PROTO_MAX_LINE + 2], proof[2 * PC_AUTH_PROOF_BYTES + 1];
	size_t len;
	uint64_t deadline = pc_now_ms() + 5000;

	while (pc_now_ms() < deadline) {
		struct pc_msg m;
		char err[256];
		json_object *echo, *nonce;

		if (next_line(line, sizeof(line), &len, 500))
			continue;
		if (pc_msg_parse(line, len, &m, err, sizeof(err)))
			continue;
		if (m.type != PC_MSG_CHALLENGE || !json_object_object_get_ex(m.obj, "echo", &echo) ||
		    (!bogus && strcasecmp(json_object_get_string(echo), an))) {
			pc_msg_clear(&m);
			continue;
		}
		json_object_object_get_ex(m.obj, "nonce", &nonce);
		if (bogus) {
			uint8_t r[PC_AUTH_PROOF_BYTES];
			randombytes_buf(r, sizeof(r));
			sodium_bin2hex(proof, sizeof(proof), r, sizeof(r));
		} else if (!have_key || pc_auth_proof(&key, json_object_get_string(nonce), an, hello_text, hello_len, proof) ||
			   pc_auth_session_init(&sess, &key, json_object_get_string(nonce), an, 0)) {
			pc_msg_clear(&m);
			fprintf(stderr, "pcpeer: auth needs --key and a hello: step first\n");
			return -1;
		}
		pc_msg_clear(&m);
		snprintf(line, sizeof(line), "{\"type\":\"auth\",\"v\":%d,\"mac\":\"%s\"}", PC_PROTO_VERSION, proof);
		return send_text(line, strlen(line));
	}
	fprintf(stderr, "pcpeer: no challenge within 5 s\n");
	return bogus ? 0 : -1;
}

static int do_expect(const char *type)
{
	char line[PC_PROTO_MAX_LINE + 2], why[256];
	size_t len;
	uint64_t deadline = pc_now_ms() + 5000;

	while (pc_now_ms() < deadline) {
		struct pc_msg m;
		char err[256];

		if (next_line(line, sizeof(line), &len, 500))
			continue;
		if (sess.up && pc_auth_open(&sess, line, len, why, sizeof(why))) {
			fprintf(stderr, "pcpeer: dropped a line: %s\n", why);
			continue;
		}
		if (pc_msg_parse(line, len, &m, err, sizeof(err)))
			continue;
		if (!strcmp(pc_msg_type_name(m.type), type)) {
			pc_msg_clear(&m);
			return 0;
		}
		pc_msg_clear(&m);
	}
	return 3;
}

static void hold(uint64_t ms)
{
	char line[PC_PROTO_MAX_LINE + 2];
	size_t len;
	uint64_t deadline = pc_now_ms() + ms;

	while (pc_now_ms() < deadline)
		if (next_line(line, sizeof(line), &len, (int)(deadline - pc_now_ms())) && pc_now_ms() < deadline)
			pc_sleep_us(20000);	/* EOF: keep the time anyway */
}

static int send_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	char *l = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		return -1;
	while ((n = getline(&l, &cap, f)) > 0) {
		while (n && (l[n - 1] == '\n' || l[n - 1] == '\r'))
			l[--n] = 0;
		if (n)
			send_text(l, (size_t)n);
		pc_sleep_us(2000);
	}
	free(l);
	fclose(f);
	return 0;
}

/* One proxied connection, in a child of its own: both ways until either side closes. */
struct proxy_job {
	int c;
	const char *target;
	FILE *lf;
};

static void proxy_conn(void *arg)
{
	struct proxy_job *j = arg;
	int c = j->c, u = dial(j->target);
	FILE *lf = j->lf;

	if (u < 0)
		_exit(1);
	for (;;) {
		struct pollfd p[2] = { { .fd = c, .events = POLLIN }, { .fd = u, .events = POLLIN } };
		char buf[8192];
		ssize_t n;

		if (poll(p, 2, -1) < 0)
			_exit(1);
		if (p[0].revents) {
			n = read(c, buf, sizeof(buf));
			if (n <= 0)
				_exit(0);
			fwrite(buf, 1, (size_t)n, lf);
			fflush(lf);
			if (pc_write_all(u, buf, (size_t)n))
				_exit(0);
		}
		if (p[1].revents) {
			n = read(u, buf, sizeof(buf));
			if (n <= 0 || pc_write_all(c, buf, (size_t)n))
				_exit(0);
		}
	}
}

/* --proxy: forward, and log the client's lines. */
static int proxy(const char *lport, const char *target, const char *log, int drop)
{
	unsigned accepted = 0;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	FILE *lf = fopen(log, "a");

	sa.sin_port = htons((uint16_t)atoi(lport));
	if (ls < 0 || !lf || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 16)) {
		perror("pcpeer --proxy");
		return 1;
	}
	signal(SIGCHLD, SIG_IGN);
	for (;;) {
		int c = accept(ls, NULL, NULL);
		struct proxy_job job;
		struct pc_spawn sp;
		pid_t pid;

		if (c < 0)
			continue;
		if (drop && accepted++ % 2 == 0) {
			char first[256];
			struct pollfd p = { .fd = c, .events = POLLIN };
			if (poll(&p, 1, 2000) > 0 && read(c, first, sizeof(first)) > 0)
				fprintf(lf, "# dropped a connection after its first bytes\n");
			fflush(lf);
			close(c);
			continue;
		}
		job = (struct proxy_job){ .c = c, .target = target, .lf = lf };
		pc_spawn_init(&sp);
		pc_spawn_fn(&pid, &sp, proxy_conn, &job);
		close(c);
	}
}

int main(int argc, char **argv)
{
	const char *connect_to = NULL, *tty = NULL, *keyfile = NULL;
	int i = 1;
	char err[512];

	signal(SIGPIPE, SIG_IGN);
	pc_log_init("pcpeer", PC_LOG_WARN);
	if (argc >= 5 && !strcmp(argv[1], "--proxy"))
		return proxy(argv[2], argv[3], argv[4], 0);
	if (argc >= 5 && !strcmp(argv[1], "--proxy-drop"))
		return proxy(argv[2], argv[3], argv[4], 1);
	for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--connect") && i + 1 < argc)
			connect_to = argv[++i];
		else if (!strcmp(argv[i], "--tty") && i + 1 < argc)
			tty = argv[++i];
		else if (!strcmp(argv[i], "--key") && i + 1 < argc)
			keyfile = argv[++i];
		else if (!strcmp(argv[i], "--marker"))
			marker = 1;
		else {
			fprintf(stderr, "pcpeer: unknown option %s\n", argv[i]);
			return 1;
		}
	}
	if (pc_auth_init())
		return 1;
	if (keyfile) {
		if (pc_auth_key_load(keyfile, &key, err, sizeof(err))) {
			fprintf(stderr, "pcpeer: %s\n", err);
			return 1;
		}
		have_key = 1;
	}
	if (connect_to)
		fd = dial(connect_to);
	else if (tty)
		fd = open(tty, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "pcpeer: cannot reach %s\n", connect_to ? connect_to : tty ? tty : "(nothing given)");
		return 1;
	}
	for (; i < argc; i++) {
		const char *a = argv[i];
		int rc = 0;

		if (!strncmp(a, "hello:", 6))
			rc = do_hello(a + 6);
		else if (!strncmp(a, "line:", 5)) {
			FILE *f = fopen(a + 5, "r");
			char l[PEER_MAX_LINE + 2];
			if (!f || !fgets(l, sizeof(l), f))
				rc = -1;
			else {
				l[strcspn(l, "\r\n")] = 0;
				rc = send_text(l, strlen(l));
			}
			if (f)
				fclose(f);
		} else if (!strcmp(a, "auth"))
			rc = do_auth(0);
		else if (!strcmp(a, "auth-bogus"))
			rc = do_auth(1);
		else if (!strncmp(a, "tagged:", 7))
			rc = send_tagged(a + 7);
		else if (!strncmp(a, "raw:", 4))
			rc = send_text(a + 4, strlen(a + 4));
		else if (!strncmp(a, "lines:", 6))
			rc = send_lines(a + 6);
		else if (!strncmp(a, "expect:", 7)) {
			if (do_expect(a + 7))
				return 3;
		} else if (!strncmp(a, "hold:", 5))
			hold(strtoull(a + 5, NULL, 10));
		else if (!strncmp(a, "squat:", 6)) {
			unsigned n = (unsigned)strtoul(a + 6, NULL, 10);
			const char *ms = strchr(a + 6, ':');
			int *s = calloc(n ? n : 1, sizeof(int));
			for (unsigned k = 0; s && k < n && n <= 1024; k++)
				s[k] = dial(connect_to);
			hold(ms ? strtoull(ms + 1, NULL, 10) : 1000);
			for (unsigned k = 0; s && k < n && n <= 1024; k++)
				if (s[k] >= 0)
					close(s[k]);
			free(s);
		} else {
			fprintf(stderr, "pcpeer: unknown step %s\n", a);
			return 1;
		}
		if (rc) {
			fprintf(stderr, "pcpeer: step %s failed\n", a);
			return 1;
		}
	}
	close(fd);
	return 0;
}

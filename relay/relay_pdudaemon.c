/*
 * relay_pdudaemon.c - switch an outlet through a PDUDaemon's listener.
 *
 * PDUDaemon (the daemon LAVA uses) fronts most lab PDUs. Its HTTP listener
 * ("listener": "http") answers
 *   GET /power/control/on?hostname=PDU&port=N     (and /off)
 * with 200 "OK - accepted request", or 500 "Invalid request" (an unknown
 * PDU, a missing argument; the reason is only in the daemon's log), or 500
 * "Server got itself in trouble" (an exception: Debian 12's 0.0.8 turns the
 * port into an integer, so a named outlet fails there). Its TCP listener
 * (the daemon's default when the configuration names none; url tcp://)
 * takes one line "PDU PORT on|off" per connection and answers "ack" or
 * "nack" (or the text of an exception), then closes.
 *
 * Either way the answer comes once the PDU's driver has run, not when the
 * request was queued: since pdudaemon 0.0.8 (asyncio, no more request
 * database) each request is awaited, on one worker thread per PDU, so
 * requests to one PDU run one after the other and a cut waits behind
 * whatever else that PDU is doing. A driver that fails is retried (5 times,
 * 5 s apart by default); Debian 12's version then answers 200 all the same
 * (later ones 500): with the default timeout_ms the harness gives up first.
 * It has no state query, so get is -ENOTSUP. Plain sockets, no libcurl:
 * one short request per operation.
 *
 * Every step - name resolution, connect, send, receive - shares one deadline
 * of timeout_ms: resolution goes through pc_resolve() so a dead DNS server
 * cannot stall the harness, and the socket is non-blocking under poll().
 *
 * docs/lab.md has what this does to the cut instant, measured against the
 * real daemon (tests/integration/t-pdudaemon.sh).
 */
#include "relay/relay_priv.h"
#include "common/resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PDU_DEFAULT_URL	"http://localhost:16421"
#define PDU_DEFAULT_PORT	16421	/* tcp:// without a port: pdudaemon's own default */
#define PDU_RESP_MAX	4096	/* the status line and a short body is all we need */

struct pdu_priv {
	char host[256];		/* from url: name or address (IPv6 without brackets) */
	char hostport[300];	/* for the Host: header and messages */
	char service[8];
	char prefix[256];	/* path before /power/control, without the trailing '/' */
	char url[512];
	char query[512];	/* "hostname=...&port=..." already %-encoded */
	int tcp;		/* tcp://: the TCP listener */
	char pdu[256];		/* tcp: the PDU's name */
	char outlet[32];	/* tcp: the outlet */
	int timeout_ms;
};

static const char *const pdu_keys[] = { "driver", "url", "hostname", "port", "timeout_ms" };

/* http://HOST[:PORT][/PATH] or tcp://HOST[:PORT]; HOST may be [v6]. 0 or
 * -EINVAL with why. */
static int pdu_parse_url(const char *url, struct pdu_priv *p, char *why, size_t whylen)
{
	const char *h, *end, *colon, *path;
	size_t hlen;
	long port = 80;

	if (strncmp(url, "tcp://", 6) == 0) {
		p->tcp = 1;
		port = PDU_DEFAULT_PORT;
		h = url + 6;
	} else if (strncmp(url, "http://", 7) == 0) {
		h = url + 7;
	} else {
		snprintf(why, whylen, "expected http://HOST[:PORT] (the HTTP listener) or tcp://HOST[:PORT] (the TCP "
			 "listener); https is not supported");
		return -EINVAL;
	}
	path = strchr(h, '/');
	end = path ? path : h + strlen(h);
	if (*h == '[') {
		const char *rb = memchr(h, ']', (size_t)(end - h));

		if (!rb) {
			snprintf(why, whylen, "unterminated [IPv6] address");
			return -EINVAL;
		}
		hlen = (size_t)(rb - h - 1);
		if (hlen == 0 || hlen >= sizeof(p->host))
			goto bad_host;
		memcpy(p->host, h + 1, hlen);
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
		if (rb + 1 < end && !colon)
			goto bad_host;
	} else {
		colon = memchr(h, ':', (size_t)(end - h));
		hlen = (size_t)((colon ? colon : end) - h);
		if (hlen == 0 || hlen >= sizeof(p->host))
			goto bad_host;
		memcpy(p->host, h, hlen);
	}
	p->host[hlen] = 0;
	if (colon) {
		char *e;

		port = strtol(colon + 1, &e, 10);
		if (e != end || colon + 1 == end || port < 1 || port > 65535) {
			snprintf(why, whylen, "bad port (expected 1-65535)");
			return -EINVAL;
		}
	}
	snprintf(p->service, sizeof(p->service), "%ld", port);
	snprintf(p->hostport, sizeof(p->hostport), "%.*s", (int)(end - h), h);
	if (path && p->tcp && strcmp(path, "/")) {
		snprintf(why, whylen, "tcp:// takes no path");
		return -EINVAL;
	}
	if (path && !p->tcp) {
		size_t n = strlen(path);

		while (n && path[n - 1] == '/')
			n--;
		if (n >= sizeof(p->prefix)) {
			snprintf(why, whylen, "path too long");
			return -EINVAL;
		}
		memcpy(p->prefix, path, n);
		p->prefix[n] = 0;
		if (strpbrk(p->prefix, "?# \t\r\n")) {
			snprintf(why, whylen, "the path may not hold a query, a fragment or spaces");
			return -EINVAL;
		}
	}
	return 0;
bad_host:
	snprintf(why, whylen, "missing or bad host");
	return -EINVAL;
}

static int pdu_check(json_object *cfg, char *err, size_t errlen)
{
	struct pdu_priv p;
	json_object *v;
	char why[128];
	int rc;

	rc = relay_check_keys(cfg, "pdudaemon", pdu_keys, PC_ARRAY_SIZE(pdu_keys), err, errlen);
	if (!rc)
		rc = relay_check_string(cfg, "url", 0, "the PDUDaemon listener, like \"http://localhost:16421\"", err,
					errlen);
	if (!rc)
		rc = relay_check_string(cfg, "hostname", 1, "the PDU's name in the pdudaemon configuration", err,
					errlen);
	if (!rc)
		rc = relay_check_int(cfg, "timeout_ms", 1, RELAY_MS_MAX, err, errlen);
	if (rc)
		return rc;
	memset(&p, 0, sizeof(p));
	if (pdu_parse_url(relay_cfg_str(cfg, "url", PDU_DEFAULT_URL), &p, why, sizeof(why)) < 0)
		return pc_fail(err, errlen, -EINVAL, "url: %s, got \"%s\"", why, relay_cfg_str(cfg, "url", ""));
	if (p.tcp && (strpbrk(relay_cfg_str(cfg, "hostname", ""), " \t\r\n") ||
		      strlen(relay_cfg_str(cfg, "hostname", "")) >= sizeof(p.pdu))) {
		return pc_fail(err, errlen, -EINVAL, "hostname: pdudaemon's TCP listener splits its request at spaces, got \"%s\"",
			 relay_cfg_str(cfg, "hostname", ""));
	}
	if (!json_object_object_get_ex(cfg, "port", &v))
		return pc_fail(err, errlen, -EINVAL, "port: missing; give the outlet number on the PDU");
	if (json_object_is_type(v, json_type_int))
		return relay_check_int(cfg, "port", 0, 65535, err, errlen);
	if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
		return pc_fail(err, errlen, -EINVAL, "port: expected the outlet number (or name, a string), got %s", relay_json_text(v));
	if (p.tcp) {
		/* the TCP listener splits its line at spaces and takes int(port) */
		return pc_fail(err, errlen, -EINVAL, "port: pdudaemon's TCP listener takes an outlet number, got %s (use an http:// url "
			 "for named outlets)", relay_json_text(v));
	}
	return 0;
}

/* %-encode s (RFC 3986 unreserved kept) onto out at *n. */
static void pdu_encode(char *out, size_t len, size_t *n, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s && *n + 4 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			out[(*n)++] = (char)c;
		} else {
			out[(*n)++] = '%';
			out[(*n)++] = hex[c >> 4];
			out[(*n)++] = hex[c & 15];
		}
	}
	out[*n] = 0;
}

static int pdu_open(struct relay *r, json_object *cfg, const struct relay_ctx *ctx)
{
	struct pdu_priv *p = calloc(1, sizeof(*p));
	char why[128], port[32];
	json_object *v;
	size_t n = 0;

	if (!p) {
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	pc_strlcpy(p->url, relay_cfg_str(cfg, "url", PDU_DEFAULT_URL), sizeof(p->url));
	if (pdu_parse_url(p->url, p, why, sizeof(why)) < 0) {
		relay_errf(r, "url \"%s\": %s", p->url, why);
		free(p);
		return -EINVAL;
	}
	p->timeout_ms = (int)relay_cfg_int(cfg, "timeout_ms", 10000);
	json_object_object_get_ex(cfg, "port", &v);
	if (json_object_is_type(v, json_type_int))
		snprintf(port, sizeof(port), "%" PRId64, json_object_get_int64(v));
	else
		pc_strlcpy(port, json_object_get_string(v), sizeof(port));
	memcpy(p->query, "hostname=", 10);
	n = 9;
	pdu_encode(p->query, sizeof(p->query), &n, relay_cfg_str(cfg, "hostname", ""));
	if (n + 6 < sizeof(p->query)) {
		memcpy(p->query + n, "&port=", 7);
		n += 6;
	}
	pdu_encode(p->query, sizeof(p->query), &n, port);
	pc_strlcpy(p->pdu, relay_cfg_str(cfg, "hostname", ""), sizeof(p->pdu));
	pc_strlcpy(p->outlet, port, sizeof(p->outlet));
	r->priv = p;
	return 0;
}

/* Resolve host within the deadline; the list is freed by the caller. */
static int pdu_resolve(struct relay *r, struct pdu_priv *p, uint64_t deadline, struct addrinfo **res)
{
	char err[400];
	int rc = pc_resolve(p->host, p->service, deadline, (uint32_t)p->timeout_ms, res, err, sizeof(err));

	if (rc)
		relay_errf(r, "%s%s", err, rc == -ETIMEDOUT ? "; check DNS, or give an address in relay.url" :
			   rc == -EHOSTUNREACH ? "; check relay.url" : "");
	return rc;
}

/* Non-blocking connect to the first address that answers, within the deadline. */
static int pdu_connect(struct relay *r, struct pdu_priv *p, struct addrinfo *ai, uint64_t deadline)
{
	int fd = -1, rc = -EHOSTUNREACH;

	for (; ai; ai = ai->ai_next) {
		struct pollfd pfd;
		socklen_t len = sizeof(rc);
		int soerr = 0;

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			return fd;
		if (errno != EINPROGRESS) {
			rc = -errno;
			goto next;
		}
		pfd.fd = fd;
		pfd.events = POLLOUT;
		do
			rc = poll(&pfd, 1, relay_ms_left(deadline));
		while (rc < 0 && errno == EINTR);
		if (rc == 0) {
			close(fd);
			relay_errf(r, "connecting to %s timed out after %d ms; is pdudaemon running there? "
				   "(check relay.url, or raise relay.timeout_ms)", p->hostport, p->timeout_ms);
			return -ETIMEDOUT;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		if (soerr == 0)
			return fd;
		rc = -soerr;
next:
		close(fd);
		fd = -1;
	}
	relay_errf(r, "cannot connect to pdudaemon at %s: %s; is it running, with its HTTP listener on? "
		   "(check relay.url)", p->hostport, strerror(-rc));
	return rc;
}

/* Send all of buf before the deadline. */
static int pdu_send(int fd, const char *buf, size_t len, uint64_t deadline)
{
	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (poll(&pfd, 1, relay_ms_left(deadline)) == 0)
			return -ETIMEDOUT;
	}
	return 0;
}

/* Read the response until the server closes, PDU_RESP_MAX, or the deadline. */
static int pdu_recv(int fd, char *buf, size_t len, uint64_t deadline)
{
	size_t have = 0;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int rc;

		rc = poll(&pfd, 1, relay_ms_left(deadline));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc == 0)
			return have && strstr(buf, "\r\n\r\n") ? (int)have : -ETIMEDOUT;
		n = recv(fd, buf + have, len - 1 - have, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return -errno;
		have += (size_t)n;
		buf[have] = 0;
		if (n == 0 || have == len - 1)
			return (int)have;
	}
}

/* The TCP listener's answer: "ack", "nack", or the text of an exception. */
static int pdu_tcp_answer(struct relay *r, struct pdu_priv *p, const char *action, const char *resp)
{
	char said[160];

	relay_last_line(resp, said, sizeof(said));
	for (char *c = said; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';	/* its text goes into our messages */
	if (!strcmp(said, "ack"))
		return 0;
	if (!said[0])
		relay_errf(r, "'%s' request to pdudaemon at %s: it closed without an answer; is relay.url pdudaemon's "
			   "TCP listener?", action, p->hostport);
	else if (!strcmp(said, "nack"))
		relay_errf(r, "pdudaemon at %s refused '%s' for PDU %s outlet %s (nack); check relay.hostname and "
			   "relay.port against the pdudaemon configuration (its log says why)", p->hostport, action,
			   p->pdu, p->outlet);
	else
		relay_errf(r, "pdudaemon at %s failed '%s' for PDU %s outlet %s: \"%s\"", p->hostport, action, p->pdu,
			   p->outlet, said);
	return -EIO;
}

/* One GET of /power/control/<action> (tcp: one request line); 0 on a 2xx
 * answer (tcp: "ack"). */
static int pdu_request(struct relay *r, const char *action)
{
	struct pdu_priv *p = r->priv;
	uint64_t deadline = pc_now_ms() + (uint64_t)p->timeout_ms;
	struct addrinfo *ai = NULL;
	char req[1200], resp[PDU_RESP_MAX], status[160], body[160];
	int fd, rc, code = 0, len;
	char *eol, *b;

	if (p->tcp)
		len = snprintf(req, sizeof(req), "%s %s %s", p->pdu, p->outlet, action);
	else
		len = snprintf(req, sizeof(req),
			       "GET %s/power/control/%s?%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: powercut/" PC_VERSION
			       "\r\nAccept: */*\r\nConnection: close\r\n\r\n", p->prefix, action, p->query,
			       p->hostport);
	rc = pdu_resolve(r, p, deadline, &ai);
	if (rc < 0)
		return rc;
	fd = pdu_connect(r, p, ai, deadline);
	freeaddrinfo(ai);
	if (fd < 0)
		return fd;
	rc = pdu_send(fd, req, (size_t)len, deadline);
	if (rc == 0)
		rc = pdu_recv(fd, resp, sizeof(resp), deadline);
	close(fd);
	if (rc == -ETIMEDOUT) {
		relay_errf(r, "'%s' request to pdudaemon at %s got no answer within %d ms; check the daemon "
			   "(its log), or raise relay.timeout_ms", action, p->hostport, p->timeout_ms);
		return rc;
	}
	if (rc < 0) {
		relay_errf(r, "'%s' request to pdudaemon at %s: %s", action, p->hostport, strerror(-rc));
		return rc;
	}
	if (p->tcp)
		return pdu_tcp_answer(r, p, action, resp);
	eol = strstr(resp, "\r\n");
	pc_strlcpy(status, resp, eol && (size_t)(eol - resp) < sizeof(status) ? (size_t)(eol - resp) + 1 : sizeof(status));
	if (sscanf(resp, "HTTP/%*d.%*d %d", &code) != 1) {
		relay_errf(r, "'%s' request to %s: not an HTTP answer: \"%.80s\"; is relay.url pdudaemon's "
			   "HTTP listener?", action, p->hostport, status);
		return -EPROTO;
	}
	if (code >= 200 && code < 300)
		return 0;
	/* pdudaemon says why in the body ("Invalid request: ..."): quote it. */
	body[0] = 0;
	b = strstr(resp, "\r\n\r\n");
	if (b)
		relay_last_line(b + 4, body, sizeof(body));
	relay_errf(r, "pdudaemon at %s refused '%s' for %s: \"%s\"%s%s; check relay.hostname and relay.port "
		   "against the pdudaemon configuration", p->hostport, action, p->query, status,
		   body[0] ? ": " : "", body);
	return -EIO;
}

static int pdu_on(struct relay *r)
{
	return pdu_request(r, "on");
}

static int pdu_off(struct relay *r)
{
	return pdu_request(r, "off");
}

static int pdu_get(struct relay *r)
{
	relay_errf(r, "pdudaemon has no state query; the power state cannot be read through it");
	return -ENOTSUP;
}

static void pdu_close(struct relay *r)
{
	free(r->priv);
	r->priv = NULL;
}

/* "pdudaemon:PDU:PORT": the PDU as pdudaemon names it and its outlet,
 * whichever daemon is asked to switch it. */
static int pdu_ident(json_object *cfg, char *buf, size_t len)
{
	json_object *port = NULL;

	json_object_object_get_ex(cfg, "port", &port);
	snprintf(buf, len, "pdudaemon:%s:%s", relay_cfg_str(cfg, "hostname", "?"),
		 port ? json_object_get_string(port) : "?");
	return 0;
}

const struct relay_ops relay_pdudaemon_ops = {
	.name = "pdudaemon",
	.check = pdu_check,
	.open = pdu_open,
	.on = pdu_on,
	.off = pdu_off,
	.get = pdu_get,
	.close = pdu_close,
	.ident = pdu_ident,
	.caps = RELAY_CAP_HARDWARE,
};

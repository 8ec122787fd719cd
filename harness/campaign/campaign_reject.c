/*
 * campaign_reject.c - lines and connections refused, on record: each a
 * link_reject event while an address's share of the interval lasts, then
 * counted and summarised (link_reject_summary) once a minute, so a flood
 * cannot fill the disk (docs/protocol.md). Called by the links
 * (campaign_link.c, campaign_pending.c); calls only the primitives.
 */
#include "harness/campaign/campaign_int.h"

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
#include "common/tty.h"
#include "common/util.h"
#include "relay/relay.h"
#include "harness/engine/engine.h"
#include "harness/link/netserial.h"
#include "harness/report/report.h"
#include "harness/results/results.h"

/* Printable ASCII only: a hostile line must not put escapes or bad UTF-8 into a record. */
static void excerpt(char *out, size_t outlen, const char *line, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < outlen && i < 160; i++)
		out[n++] = line[i] >= 0x20 && line[i] < 0x7f ? line[i] : '?';
	out[n] = 0;
}

/*
 * Refusals are bounded: a process without the key that connects again and
 * again must not fill the results disk (measured before: 305,447 link_reject
 * events, 41 MB of events.jsonl and 34 MB of stderr in 14.5 s). Per peer
 * address (the port dropped: each connection has its own) the first
 * REJ_WHOLE refusals of an interval are written whole; the others are
 * counted, by kind of reason, and written as one link_reject_summary per peer when
 * the interval ends (REJ_INTERVAL_MS, checked at each refusal and each turn
 * of the loop) or the run does. Whole events also stop once those of the
 * interval pass REJ_BYTES: with at most REJ_PEERS + 1 summaries of at most
 * about 2 KB each, the harness writes at most about 50 KB a minute for
 * refusals, however many come; stderr gets a line per whole event and per
 * summary, no more. Fixed tables: no allocation per refusal.
 */
#define REJ_PEERS 16		/* peers counted apart; the others share one entry ("*") */
#define REJ_WHOLE 5		/* whole link_reject events per peer and interval */
#define REJ_INTERVAL_MS 60000
#define REJ_REASONS 16		/* distinct reasons per summary; the rest "other_reasons" */
#define REJ_REASON_LEN 96	/* bytes of a reason kept in a summary */
#define REJ_BYTES 16384		/* bytes of whole link_reject events per interval */

struct rej_peer {
	char addr[64];		/* "" : unused */
	unsigned whole;		/* written whole this interval */
	unsigned long counted;	/* counted, not written, this interval */
	unsigned long other;	/* ... with a reason beyond the table */
	struct {
		char why[REJ_REASON_LEN + 1];
		unsigned long n;
	} reason[REJ_REASONS];
	unsigned nreason;
};

static struct {
	const struct camp *c;	/* the campaign the counts are of */
	int64_t since;		/* camp_t() the interval started */
	size_t bytes;		/* of whole events this interval */
	struct rej_peer peer[REJ_PEERS + 1];	/* the last: every peer beyond the table */
} rej;

/* "127.0.0.1:5043" -> "127.0.0.1", "[::1]:5043" -> "[::1]"; a device path as it is */
static void rej_addr(char *out, size_t len, const char *peer)
{
	const char *colon = strrchr(peer, ':');
	size_t n = strlen(peer);

	if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1) &&
	    (peer[0] == '[' || strchr(peer, ':') == colon))
		n = (size_t)(colon - peer);
	snprintf(out, len, "%.*s", (int)n, peer);
}

static struct rej_peer *rej_peer_of(const char *addr)
{
	for (unsigned i = 0; i < REJ_PEERS; i++) {
		struct rej_peer *p = &rej.peer[i];

		if (!p->addr[0])
			snprintf(p->addr, sizeof(p->addr), "%s", addr);
		if (!strcmp(p->addr, addr))
			return p;
	}
	snprintf(rej.peer[REJ_PEERS].addr, sizeof(rej.peer[REJ_PEERS].addr), "*");
	return &rej.peer[REJ_PEERS];
}

/* Counted by kind: the reason as worded with each number as "N" (ports,
 * sizes, times vary from one attempt to the next; the words do not). */
static void rej_count(struct rej_peer *p, const char *reason)
{
	char why[REJ_REASON_LEN + 1];
	size_t n = 0;
	unsigned i;

	for (const char *r = reason; *r && n < REJ_REASON_LEN; r++) {
		if (*r >= '0' && *r <= '9') {
			if (n && why[n - 1] == 'N' && r > reason && r[-1] >= '0' && r[-1] <= '9')
				continue;
			why[n++] = 'N';
		} else {
			why[n++] = *r;
		}
	}
	why[n] = '\0';
	p->counted++;
	for (i = 0; i < p->nreason; i++)
		if (!strncmp(p->reason[i].why, why, REJ_REASON_LEN))
			break;
	if (i == p->nreason && p->nreason < REJ_REASONS) {
		snprintf(p->reason[i].why, sizeof(p->reason[i].why), "%s", why);
		p->reason[i].n = 0;
		p->nreason++;
	}
	if (i < p->nreason)
		p->reason[i].n++;
	else
		p->other++;
}

static void rej_write(struct camp *c, json_object *ev)
{
	camp_results_check(c, results_event(&c->res, ev));
}

/* The summaries of the interval (every peer with refusals counted), and a
 * new interval. */
static void rej_flush(struct camp *c)
{
	int64_t t = camp_t(c);

	for (unsigned i = 0; i <= REJ_PEERS && !c->fatal; i++) {
		struct rej_peer *p = &rej.peer[i];
		json_object *ev, *reasons;
		char list[256] = "";
		size_t l = 0;

		if (!p->counted)
			continue;
		ev = json_object_new_object();
		reasons = json_object_new_object();
		json_object_object_add(ev, "t", json_object_new_int64(t));
		json_object_object_add(ev, "ev", json_object_new_string(pc_ev_names[PC_EV_LINK_REJECT_SUMMARY]));
		json_object_object_add(ev, "peer", json_object_new_string(p->addr));
		json_object_object_add(ev, "since", json_object_new_int64(rej.since));
		json_object_object_add(ev, "refused", json_object_new_int64((int64_t)p->counted));
		for (unsigned k = 0; k < p->nreason; k++) {
			json_object_object_add(reasons, p->reason[k].why, json_object_new_int64((int64_t)p->reason[k].n));
			if (k < 2 && l < sizeof(list))
				l += (size_t)snprintf(list + l, sizeof(list) - l, "%s%lu x %.60s", k ? "; " : "",
						      p->reason[k].n, p->reason[k].why);
		}
		json_object_object_add(ev, "reasons", reasons);
		if (p->other)
			json_object_object_add(ev, "other_reasons", json_object_new_int64((int64_t)p->other));
		pc_warn("%s: %lu more refused since t=%" PRId64 " ms, not logged one by one (%s%s)", p->addr,
			p->counted, rej.since, list, p->nreason > 2 || p->other ? "; ..." : "");
		rej_write(c, ev);
		json_object_put(ev);
	}
	memset(rej.peer, 0, sizeof(rej.peer));
	rej.since = t;
	rej.bytes = 0;
}

void camp_link_reject_tick(struct camp *c, int end)
{
	if (rej.c != c)
		return;
	if (end || camp_t(c) - rej.since >= REJ_INTERVAL_MS)
		rej_flush(c);
}

void camp_link_reject(struct camp *c, struct bctx *b, int attempt, const char *peer, const char *line, size_t len,
			const char *fmt, ...)
{
	json_object *ev;
	struct rej_peer *rp;
	char why[512], shown[168], addr[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (b && attempt)
		b->rejects++;
	if (rej.c != c) {
		memset(&rej, 0, sizeof(rej));
		rej.c = c;
		rej.since = camp_t(c);
	}
	camp_link_reject_tick(c, 0);
	rej_addr(addr, sizeof(addr), peer);
	rp = rej_peer_of(addr);
	if (rp->whole >= REJ_WHOLE || rej.bytes >= REJ_BYTES) {
		rej_count(rp, why);
		return;
	}
	rp->whole++;
	ev = json_object_new_object();
	json_object_object_add(ev, "t", json_object_new_int64(camp_t(c)));
	if (b) {
		json_object_object_add(ev, "board", json_object_new_string(b->cfg->name));
		json_object_object_add(ev, "cycle", json_object_new_int64(b->cycle));
	}
	json_object_object_add(ev, "ev", json_object_new_string(pc_ev_names[PC_EV_LINK_REJECT]));
	json_object_object_add(ev, "peer", json_object_new_string(peer));
	json_object_object_add(ev, "reason", json_object_new_string(why));
	if (line && len) {
		excerpt(shown, sizeof(shown), line, len);
		json_object_object_add(ev, "line", json_object_new_string(shown));
	}
	pc_warn("%s%s: refused: %s%s", b ? "board " : "", b ? b->cfg->name : peer, why,
		rp->whole == REJ_WHOLE ? " (further refusals from this address are counted, summarised each minute)"
				       : "");
	rej.bytes += strlen(json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN)) + 1;
	rej_write(c, ev);
	json_object_put(ev);
}

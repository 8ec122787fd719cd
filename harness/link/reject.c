/*
 * reject.c - refusals on a board's link, counted and bounded (reject.h).
 *
 * Refusals are bounded: a process without the key that connects again and
 * again must not fill the results disk (measured before: 305,447 link_reject
 * events, 41 MB of events.jsonl and 34 MB of stderr in 14.5 s). Per peer
 * address (the port dropped: each connection has its own) the first
 * LINK_REJ_WHOLE refusals of an interval are written whole; the others are
 * counted, by kind of reason, and written as one link_reject_summary per peer when
 * the interval ends (LINK_REJ_INTERVAL_MS, checked at each refusal and each turn
 * of the loop) or the run does. Whole events also stop once those of the
 * interval pass REJ_BYTES: with at most REJ_PEERS + 1 summaries of at most
 * about 2 KB each, the harness writes at most about 50 KB a minute for
 * refusals, however many come; stderr gets a line per whole event and per
 * summary, no more. Fixed tables: no allocation per refusal.
 */
#include "harness/link/reject.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "harness/results/verdict.h"

void link_rej_excerpt(char *out, size_t outlen, const char *line, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < outlen && i < 160; i++)
		out[n++] = line[i] >= 0x20 && line[i] < 0x7f ? line[i] : '?';
	out[n] = 0;
}

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

static struct rej_peer *rej_peer_of(struct link_rejects *rej, const char *addr)
{
	for (unsigned i = 0; i < REJ_PEERS; i++) {
		struct rej_peer *p = &rej->peer[i];

		if (!p->addr[0])
			snprintf(p->addr, sizeof(p->addr), "%s", addr);
		if (!strcmp(p->addr, addr))
			return p;
	}
	snprintf(rej->peer[REJ_PEERS].addr, sizeof(rej->peer[REJ_PEERS].addr), "*");
	return &rej->peer[REJ_PEERS];
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

void link_rej_start(struct link_rejects *rej, int64_t now)
{
	memset(rej, 0, sizeof(*rej));
	rej->on = 1;
	rej->since = now;
}

unsigned link_rej_take(struct link_rejects *rej, const char *peer, const char *why)
{
	struct rej_peer *rp;
	char addr[64];

	rej_addr(addr, sizeof(addr), peer);
	rp = rej_peer_of(rej, addr);
	if (rp->whole >= LINK_REJ_WHOLE || rej->bytes >= REJ_BYTES) {
		rej_count(rp, why);
		return 0;
	}
	return ++rp->whole;
}

void link_rej_wrote(struct link_rejects *rej, size_t bytes)
{
	rej->bytes += bytes;
}

void link_rej_flush(struct link_rejects *rej, int64_t t, const int *stop,
		    void (*summary_out)(json_object *ev, void *arg), void *arg)
{

	for (unsigned i = 0; i <= REJ_PEERS && !*stop; i++) {
		struct rej_peer *p = &rej->peer[i];
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
		json_object_object_add(ev, "since", json_object_new_int64(rej->since));
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
			p->counted, rej->since, list, p->nreason > 2 || p->other ? "; ..." : "");
		summary_out(ev, arg);
		json_object_put(ev);
	}
	memset(rej->peer, 0, sizeof(rej->peer));
	rej->since = t;
	rej->bytes = 0;
}

void link_rej_tick(struct link_rejects *rej, int64_t now, int end, const int *stop,
		   void (*out)(json_object *ev, void *arg), void *arg)
{
	if (!rej->on)
		return;
	if (end || now - rej->since >= LINK_REJ_INTERVAL_MS)
		link_rej_flush(rej, now, stop, out, arg);
}

void link_rej_record(struct link_rejects *rej, const struct link_rej_what *w, const int *stop,
		     void (*out)(json_object *ev, void *arg), void *arg)
{
	json_object *ev;
	char shown[168];
	unsigned whole;

	if (!rej->on)
		link_rej_start(rej, w->t);
	link_rej_tick(rej, w->t, 0, stop, out, arg);
	whole = link_rej_take(rej, w->peer, w->why);
	if (!whole)
		return;
	ev = json_object_new_object();
	json_object_object_add(ev, "t", json_object_new_int64(w->t));
	if (w->board) {
		json_object_object_add(ev, "board", json_object_new_string(w->board));
		json_object_object_add(ev, "cycle", json_object_new_int64(w->cycle));
	}
	json_object_object_add(ev, "ev", json_object_new_string(pc_ev_names[PC_EV_LINK_REJECT]));
	json_object_object_add(ev, "peer", json_object_new_string(w->peer));
	json_object_object_add(ev, "reason", json_object_new_string(w->why));
	if (w->line && w->len) {
		link_rej_excerpt(shown, sizeof(shown), w->line, w->len);
		json_object_object_add(ev, "line", json_object_new_string(shown));
	}
	pc_warn("%s%s: refused: %s%s", w->board ? "board " : "", w->board ? w->board : w->peer, w->why,
		whole == LINK_REJ_WHOLE ? " (further refusals from this address are counted, summarised each minute)"
					: "");
	link_rej_wrote(rej, strlen(json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN)) + 1);
	out(ev, arg);
	json_object_put(ev);
}

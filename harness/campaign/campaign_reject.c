/*
 * campaign_reject.c - lines and connections refused, on record: each a
 * link_reject event while an address's share of the interval lasts, then
 * counted and summarised (link_reject_summary) once a minute, so a flood
 * cannot fill the disk (docs/protocol.md): the tally is the link room's
 * (harness/link/reject.c), the campaign's own (c->rej); the record is
 * written here. Called by the links (campaign_link.c, and for
 * harness/link/pending.c its camp_pending_ops);
 * calls only the primitives.
 */
#include "harness/campaign/config.h"
#include "harness/campaign/campaign_daemon.h"
#include "harness/campaign/campaign_reject.h"
#include "harness/campaign/campaign_core.h"

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
#include "harness/link/reject.h"
#include "harness/report/report.h"
#include "harness/results/results.h"

static void rej_write(json_object *ev, void *arg)
{
	struct camp *c = arg;

	camp_results_check(c, results_event(&c->res, ev));
}

void camp_link_reject_tick(struct camp *c, int end)
{
	if (!c->rej.on)
		return;
	if (end || camp_t(c) - c->rej.since >= LINK_REJ_INTERVAL_MS)
		link_rej_flush(&c->rej, camp_t(c), &c->fatal, rej_write, c);
}

void camp_link_reject(struct camp *c, struct bctx *b, int attempt, const char *peer, const char *line, size_t len,
			const char *fmt, ...)
{
	json_object *ev;
	char why[512], shown[168];
	unsigned whole;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (b && attempt)
		b->rejects++;
	if (!c->rej.on)
		link_rej_start(&c->rej, camp_t(c));
	camp_link_reject_tick(c, 0);
	whole = link_rej_take(&c->rej, peer, why);
	if (!whole)
		return;
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
		link_rej_excerpt(shown, sizeof(shown), line, len);
		json_object_object_add(ev, "line", json_object_new_string(shown));
	}
	pc_warn("%s%s: refused: %s%s", b ? "board " : "", b ? b->cfg->name : peer, why,
		whole == LINK_REJ_WHOLE ? " (further refusals from this address are counted, summarised each minute)"
					: "");
	link_rej_wrote(&c->rej, strlen(json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN)) + 1);
	rej_write(ev, c);
	json_object_put(ev);
}

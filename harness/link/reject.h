/*
 * reject.h - refusals on a board's link, bounded (docs/protocol.md): per
 * peer address the first LINK_REJ_WHOLE of an interval are written whole
 * (a link_reject event each), the others counted by kind of reason and
 * summarised (link_reject_summary) when the interval ends. The tally is
 * its owner's (the campaign's, struct link_rejects in struct camp); the
 * events are made here, and handed to the owner's out() to be written
 * (harness/campaign/campaign_reject.c).
 */
#ifndef PC_HARNESS_LINK_REJECT_H
#define PC_HARNESS_LINK_REJECT_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#define REJ_PEERS 16		/* peers counted apart; the others share one entry ("*") */
#define LINK_REJ_WHOLE 5	/* whole link_reject events per peer and interval */
#define LINK_REJ_INTERVAL_MS 60000
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

struct link_rejects {
	int on;			/* counting: an interval began (link_rej_start) */
	int64_t since;		/* the campaign's time (ms) the interval started */
	size_t bytes;		/* of whole events this interval */
	struct rej_peer peer[REJ_PEERS + 1];	/* the last: every peer beyond the table */
};

/* Count from now on (ms), an interval starting: every table empty. */
void link_rej_start(struct link_rejects *rej, int64_t now);
/* A refusal from peer ("ADDR:PORT", or a device path) for why: how many of
 * the peer's this interval are written whole with it (1..LINK_REJ_WHOLE), or
 * 0 when it is only counted, by kind of reason. */
unsigned link_rej_take(struct link_rejects *rej, const char *peer, const char *why);
/* A whole event of bytes was written: the interval's ceiling (REJ_BYTES). */
void link_rej_wrote(struct link_rejects *rej, size_t bytes);
/* The summaries of the interval at t (every peer with refusals counted),
 * each handed to summary_out (and said on stderr) while *stop is 0; then a new
 * interval from t. */
void link_rej_flush(struct link_rejects *rej, int64_t t, const int *stop,
		    void (*summary_out)(json_object *ev, void *arg), void *arg);
/* The interval's summaries (link_rej_flush), at now, when it is over or
 * (end) the run is: called each turn of the loop and at the run's end. */
void link_rej_tick(struct link_rejects *rej, int64_t now, int end, const int *stop,
		   void (*out)(json_object *ev, void *arg), void *arg);

/* A refusal, what the record says of it. */
struct link_rej_what {
	int64_t t;		/* the owner's time (ms) */
	const char *board;	/* the board it was for, or NULL */
	int64_t cycle;		/* ... and its cycle */
	const char *peer;	/* "ADDR:PORT", or a device path */
	const char *line;	/* the line refused (len bytes), or NULL */
	size_t len;
	const char *why;	/* printable */
};

/* A refusal on record: counted (an interval begun if none was, the last
 * one summarised if it is over); while the peer's share lasts, a
 * link_reject event handed to out() and a line on stderr. */
void link_rej_record(struct link_rejects *rej, const struct link_rej_what *w, const int *stop,
		     void (*out)(json_object *ev, void *arg), void *arg);
/* A line's excerpt for the record: printable ASCII only (a hostile line
 * must not put escapes or bad UTF-8 into a record), its first 160 bytes. */
void link_rej_excerpt(char *out, size_t outlen, const char *line, size_t len);

#endif

/*
 * status.h - `powercut status DIR [--json]`: how far a campaign got, and
 * whether a run is at it, read from its results folder while it runs.
 *
 * Every file of the folder is untrusted: status never parses events.jsonl as
 * a whole (it can be gigabytes after a night). It reads the tail of
 * events.jsonl (8 MB, growing to at most 256 MB while a configured board has
 * no event in it), all of verdicts.jsonl line by line, and campaign.json; a
 * line is walked by a small scanner that finds the top-level members it
 * needs without building JSON objects. Lines longer than 1 MB are seen as
 * their first MB. The pure parts are declared here for the unit tests.
 */
#ifndef PC_HARNESS_STATUS_H
#define PC_HARNESS_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The subcommand: argv[0] is "status". Exit 0, 1 when a file cannot be
 * read or holds a malformed line, 2 on a usage error. */
int status_main(int argc, char **argv);

/* How much status reads; status_limits_default holds the sizes above. The
 * unit tests and the fuzz target shrink them, so that small files reach the
 * long-line and the growing-tail paths. */
struct status_limits {
	size_t line_max;	/* a longer line is seen as its first line_max bytes */
	size_t chunk;		/* the bytes of one read */
	uint64_t tail_first;	/* events.jsonl: the tail read first, */
	uint64_t tail_max;	/* growing 4x to at most this */
	uint64_t campaign_max;	/* campaign.json: larger is refused */
};
extern const struct status_limits status_limits_default;

/* What status_main() runs after its options: probe the lock of the results
 * folder dir, read it within lim (NULL: status_limits_default) and print the
 * status to out, as text or (json) as one JSON document. 0, or 1 with err
 * naming the file (and line) and what is wrong; the text form has printed its
 * first line (the lock's) before. */
int status_run(const char *dir, int json, const struct status_limits *lim, FILE *out, char *err, size_t errlen);

/* A top-level member's value within a line: p points into the line. */
enum status_vtype {
	ST_V_ABSENT,
	ST_V_STRING,	/* p, n: the bytes between the quotes, escapes not decoded */
	ST_V_NUMBER,
	ST_V_OBJECT,	/* p, n: from '{' to '}' inclusive */
	ST_V_ARRAY,	/* p, n: from '[' to ']' inclusive */
	ST_V_TRUE,
	ST_V_FALSE,
	ST_V_NULL,
};

struct status_span {
	enum status_vtype type;
	const char *p;
	size_t n;
};

/*
 * Walk the JSON object in s[0..n) and fill out[i] with the value of the
 * top-level member named keys[i] (the last one, if a key repeats), or
 * ST_V_ABSENT. Nested values are skipped without recursion, whatever their
 * depth. Returns 0 for a whole object (whitespace around it allowed), 1 when
 * partial is set and the input ends inside the object or in the whitespace
 * before it (the members before that point are filled in), -EPROTO when it
 * is not a JSON object.
 */
int status_scan(const char *s, size_t n, int partial, const char *const *keys, unsigned nkeys,
		struct status_span *out);

/* The next element of the array in span a (type ST_V_ARRAY): *pos starts at
 * 0. Returns 1 and the element in *el, 0 at the end, -EPROTO if malformed. */
int status_array_next(const struct status_span *a, size_t *pos, struct status_span *el);

/* An integer value within [0, max] (no sign, fraction or exponent): 0,
 * -EPROTO (not one), or -ERANGE (above max, or more than 20 digits). */
int status_span_u64(const struct status_span *v, uint64_t max, uint64_t *out);

/* A string value of plain printable characters (no escapes) that fits buf
 * (len > n): 0, -EPROTO (not one), or -ERANGE (it does not fit). */
int status_span_str(const struct status_span *v, char *buf, size_t len);

/* What a board is doing, from its last event. */
enum status_bstate {
	ST_UNKNOWN,	/* no event of the board in what was read */
	ST_OFF,
	ST_BOOTING,
	ST_VERIFYING,
	ST_WRITING,
	ST_GIVEN_UP,
	ST_DONE,
	ST_NSTATES
};
extern const char *const status_bstate_names[ST_NSTATES];	/* "given up" */
extern const char *const status_bstate_keys[ST_NSTATES];	/* "given_up" (--json) */

/* The state after an event of kind ev (enum pc_ev_kind, or -1 for a kind
 * this harness does not know); rxtype is the message type of an rx event,
 * end the "end" of a run_end (either may be NULL). An event that says
 * nothing about the state (rx_bad, rx_stray, link_reject, an agent's error,
 * an unknown kind) leaves prev. */
enum status_bstate status_next_state(enum status_bstate prev, int ev, const char *rxtype, const char *end);

#endif

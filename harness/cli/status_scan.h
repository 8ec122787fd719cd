/*
 * status_scan.h - status_scan.c's functions: the scanner status reads its
 * lines with (the top-level members of a JSON object found without building
 * it) and a board's state from its events, with the states' names. Pure:
 * status_read.c reads the folder through them, status.c prints the states,
 * the unit tests and the fuzz target call them directly. Split out of
 * status.h (issue 41), so that the scanner's users see it without an arrow
 * up to status.c.
 */
#ifndef PC_HARNESS_CLI_STATUS_SCAN_H
#define PC_HARNESS_CLI_STATUS_SCAN_H

#include <stddef.h>
#include <stdint.h>

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

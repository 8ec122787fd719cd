/*
 * engine.h - the verdict engine.
 *
 * It computes every verdict from recorded events only: the live campaign
 * feeds it each event as it appends it to events.jsonl, and `powercut replay`
 * feeds it the file. Same events, same verdicts, byte for byte.
 *
 * Event lines (one JSON object each) carry "t" (ms since the campaign
 * started), "board", "cycle" and "ev":
 *   power_on        a boot attempt starts
 *   rx   {msg}      a message from the agent, as received (hello, scan_begin,
 *                   runs, slot, scan_end, submit, ack, done, error)
 *   verify {msg}    the host asked for a scan (msg: the VERIFY it sent)
 *   work {work, policy}  the host sent the cycle's work; policy says whether
 *                   unacknowledged torn / torn_sector findings are violations
 *   cut  {plan, at_ms, acks}   the power was cut
 *   boot_fail {reason}         no agent after the boot timeout and retries
 *   infra {reason}             relay, link or host trouble
 *   final_boot_fail {reason}   the final verification never came
 *   final_infra {reason}       the final verification failed (relay, link, scan)
 * Other events are ignored by the engine.
 */
#ifndef PC_HARNESS_ENGINE_H
#define PC_HARNESS_ENGINE_H

#include <stddef.h>

#include <json-c/json.h>

struct engine;

/* Called with each verdict (the engine keeps ownership of v: take a ref to keep it). */
typedef int (*engine_verdict_fn)(json_object *v, void *arg);
/* Called with notes worth telling the user (baseline damage, region change). */
typedef void (*engine_note_fn)(const char *board, const char *text, void *arg);

/* Returns NULL on allocation failure. Free with engine_free (accepts NULL). */
struct engine *engine_new(const char *campaign, engine_verdict_fn vfn, engine_note_fn nfn, void *arg);
void engine_free(struct engine *e);

/* Feed one event. 0, or -EINVAL with err when the event is malformed
 * (a results file that was edited or damaged). */
int engine_feed(struct engine *e, json_object *ev, char *err, size_t errlen);

/* Per-board facts the campaign loop needs on resume. */
struct engine_board_state {
	unsigned last_cycle;		/* highest cycle seen in any event */
	unsigned last_work_cycle;	/* highest cycle with a work event */
	unsigned last_verdict_cycle;	/* highest cycle with a verdict */
	int pending;			/* writes waiting for judgment */
	unsigned long long next_seq;	/* first seq the next work should use */
	unsigned verdicts;		/* verdicts emitted so far */
	int baseline;			/* a baseline scan was adopted */
	int scan_ok;			/* the last scan was complete and judged */
	unsigned nslots;		/* region geometry, once a HELLO came */
	unsigned long long pending_first;	/* the pending write cycle's seqs */
	unsigned pending_n;
	int pending_pattern;
};
int engine_board_state(struct engine *e, const char *board, struct engine_board_state *st);
/* The board's region geometry as HELLO carries it (a new object), or NULL
 * when no HELLO with a region came yet. */
json_object *engine_board_region(struct engine *e, const char *board);

/* The verdict classes of DESIGN section 6, in report order. */
extern const char *const engine_classes[];
#define ENGINE_NCLASSES 10

#endif

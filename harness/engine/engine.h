/*
 * engine.h - the verdict engine.
 *
 * It computes every verdict from recorded events only: the live campaign
 * feeds it each event as it appends it to events.jsonl, and `powercut replay`
 * feeds it the file. Same events, same verdicts, byte for byte.
 *
 * Event lines (one JSON object each) carry "t" (ms since the campaign
 * started), "board", "cycle" and "ev" (enum pc_ev_kind in verdict.h; read
 * once into a struct engine_event by engine_event_parse()):
 *   power_on        a boot attempt starts
 *   rx   {msg}      a message from the agent, as received (hello, scan_begin,
 *                   runs, slot, scan_end, submit, ack, done, error; an error
 *                   with write_error is a write the device refused)
 *   verify {msg}    the host asked for a scan (msg: the VERIFY it sent)
 *   work {work, policy}  the host sent the cycle's work; policy says whether
 *                   unacknowledged torn / torn_sector findings are violations
 *   cut  {plan, at_ms, acks}   the power was cut
 *   boot_fail {reason}         no agent after the boot timeout and retries
 *   infra {reason}             relay, link or host trouble
 *   final_boot_fail {reason}   the final verification never came
 *   final_infra {reason}       the final verification failed (relay, link, scan)
 *   run_start {wall_ms, host{id}}  a run started (no board): the wall clock
 *                   at its "t" and the host's id, for the verdicts' "time"
 *                   and "host" (results format 2)
 * A power_on event may say the mode its cycle is to write ("mode"): format 2
 * verdicts of cycles that never wrote name it too.
 * Other events are ignored by the engine.
 *
 * Every number in an event is hostile input (events.jsonl may have been
 * edited, or an agent may lie): it is checked against the configured board
 * (engine_configure) before it sizes anything, and the engine's memory per
 * board has a ceiling (the ENGINE_MAX_* limits below, and 8 to 19 bytes per
 * slot of a region no larger than device.max_region_bytes: 8 for the
 * expected state, the rest while a scan differs from it in many slots; see
 * engine_state.c and docs/architecture.md). A HELLO beyond the configuration is refused: that
 * boot is an INFRA_ERROR, never a crash.
 */
#ifndef PC_HARNESS_ENGINE_H
#define PC_HARNESS_ENGINE_H

#include <stddef.h>

#include <json-c/json.h>

#include "harness/engine/engine_types.h"
#include "harness/results/limits.h"
#include "harness/results/verdict.h"
#include "common/proto.h"

/* Returns NULL on allocation failure. Free with engine_free (accepts NULL). */
struct engine *engine_new(const char *campaign, engine_verdict_fn vfn, engine_note_fn nfn, void *arg);
void engine_free(struct engine *e);

/*
 * The boards of the campaign and their limits, from the resolved
 * configuration (struct campaign_cfg.root, or campaign.json's "config"):
 * boards[].name, boards[].device.record_size, boards[].device.max_region_bytes
 * (default CFG_DEFAULT_MAX_REGION when absent, as in older campaign.json
 * files) and boards[].records_per_cycle. Call it once, before any event.
 * Afterwards events of other boards are refused, and a HELLO whose region
 * does not fit its board is refused. Without it every board name is
 * accepted (up to CFG_MAX_BOARDS), any record size, and regions up to
 * CFG_DEFAULT_MAX_REGION. 0, or -EINVAL with err naming the bad key.
 */
int engine_configure(struct engine *e, json_object *config, char *err, size_t errlen);

/* Feed one event. 0, or -EINVAL with err when the event is malformed
 * (a results file that was edited or damaged) or refused (a HELLO beyond the
 * board's configuration, an event of a board not in it), -ENOMEM. */
int engine_feed(struct engine *e, json_object *ev, char *err, size_t errlen);

/* One event, read once at the edge: its kind, board, cycle and time checked
 * and bounded; the rest (the message, the reason, the cut's facts) stays in
 * obj, which the event borrows. */
struct engine_event {
	int kind;		/* enum pc_ev_kind, or -1: an event the engine does not know */
	const char *board;	/* NULL only for link_reject and unknown kinds */
	unsigned cycle;		/* <= ENGINE_MAX_CYCLE */
	int64_t t;		/* ms, <= ENGINE_MAX_T; 0 when the event has none */
	json_object *obj;
};
/* Read an events.jsonl line's object into ev. 0 or -EINVAL with err. */
int engine_event_parse(json_object *obj, struct engine_event *ev, char *err, size_t errlen);
/* Feed one parsed event (engine_feed() is engine_event_parse() and this). */
int engine_feed_event(struct engine *e, const struct engine_event *ev, char *err, size_t errlen);

/* The results format of the verdicts (verdict.h PC_FORMAT_*): a major
 * version 1 or 2 (default 1: replay of an old folder reproduces it byte for
 * byte). Format 2 adds "format", "time", "host", latency and MiB/s, and the
 * same core fields (mode, counts, violations) on every outcome. */
void engine_set_format(struct engine *e, int major);

/* Lower the damaged-sector ceiling (tests reach it without 2^20 sectors of
 * scan messages); it never rises above ENGINE_MAX_DAMAGED_SECTORS. */
void engine_set_damage_ceiling(struct engine *e, uint32_t sectors);

/* Why the board's HELLO in the boot in progress was refused, or NULL. The
 * engine ignores the rest of that boot; the campaign ends it as an
 * infrastructure error (the verdict of a cycle whose boot was refused is
 * INFRA_ERROR, also in replay). The string lives until the next event. */
const char *engine_board_refused(struct engine *e, const char *board);

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

/* The damaged sectors the board's expected state holds by hash (crc32c of
 * their bytes), at most max, for the KNOWN lines before a VERIFY: the agent
 * then spends its raw budget on damage the engine has not seen. */
uint32_t engine_board_known(struct engine *e, const char *board, struct pc_known *out, uint32_t max);
/* The damaged slots the expected state holds, each with the digest of its
 * sectors (pc_slot_digest), at most max: the agent reports a slot it finds
 * exactly so by number alone (SAME), not sector by sector at every boot. */
uint32_t engine_board_known_slots(struct engine *e, const char *board, struct pc_known_slot *out, uint32_t max);

/*
 * Incremental judging (powercut crash-states, docs/crash-states.md): a
 * board's state held between a partial VERIFY and its scan, so that one
 * cycle is judged on many scans of the same slots without being fed again.
 * engine_hold: NULL when the board is not between a partial VERIFY and its
 * scan with an expected state (feed it whole instead), or out of memory.
 * engine_hold_restore: after a scan was fed and judged, the board as held
 * again; 0, -EAGAIN (the scan replaced what a hold cannot put back: feed
 * the cycle again) or -ENOMEM. Only the held board is put back.
 */
struct engine_hold;
struct engine_hold *engine_hold(struct engine *e, const char *board);
int engine_hold_restore(struct engine *e, struct engine_hold *h);
void engine_hold_free(struct engine_hold *h);

#endif

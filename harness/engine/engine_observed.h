/*
 * engine_observed.h - the observed scan (struct eng_scan): what the last VERIFY asked for, and
 * the scan in progress as the agent's lines report it (scan_begin, runs,
 * slot, same, scan_end). engine_scan.c owns it: it resets it, assembles
 * it, hands a complete one to the judge and adopts it as the expected
 * state. Besides its owner:
 *   - the intake (engine.c) has a VERIFY event's wanted slots set
 *     (eng_scan_want, eng_scan_want_clear), notes a malformed scan line in
 *     err and asks scanning;
 *   - the region (engine_region.c) clears the wanted slots with the old
 *     geometry (eng_scan_want_clear);
 *   - the judge (engine_judge.c) reads it directly (want, dmg_seen,
 *     dmg_prev, raws), as it reads the expected state: it sits below the
 *     scan in the pipeline and may not call up into engine_scan.c;
 *   - engine_state.c's eng_obs_* read and fill obs against seen;
 *   - engine_hold.c holds and puts back a board around a partial scan.
 * Split out of struct board (issue 41). Private to harness/engine. The
 * object alone is here, so that those below the scan see it without an
 * arrow to engine_scan.c; its assembly's functions are engine_scan.h's.
 */
#ifndef PC_HARNESS_ENGINE_OBSERVED_H
#define PC_HARNESS_ENGINE_OBSERVED_H

#include <stdint.h>
#include <stdlib.h>

#include "harness/engine/engine_state.h"

struct eng_scan {
	/* what the last VERIFY asked for */
	uint64_t *want;		/* a bitmap of the slots asked for; NULL: every slot */
	uint32_t nwant;
	/* the scan in progress */
	int scanning;
	int pattern;
	/* what the scan found: where it differs from the expected state
	 * (sparse), or every slot (dense: a baseline, or a scan that differs
	 * in many slots) */
	struct slots *obs;
	uint32_t nseen;
	uint64_t *seen;		/* a bitmap of the slots reported */
	uint32_t sect_base;	/* damaged sectors the expected state keeps besides this scan's */
	uint32_t sect_obs;	/* damaged sectors this scan reported and the engine holds */
	uint64_t dmg_seen;	/* damaged sectors this scan reported, held or not */
	uint64_t dmg_prev;	/* damaged sectors the expected state had in the scanned slots */
	int dmg_over;		/* the scan reported more than the engine holds */
	struct raw *raws;	/* the bytes of the damaged sectors this scan reported */
	unsigned nraws;
	char err[256];		/* what was wrong with the scan's lines ("": nothing) */
};

/* Was the slot asked for by the last VERIFY? */
static inline int eng_scan_wanted(const struct eng_scan *s, uint32_t slot)
{
	return !s->want || BIT_GET(s->want, slot);
}

/* The wanted slots forgotten: every slot wanted (inline, so that the
 * region, below the scan, clears them without calling up). */
static inline void eng_scan_want_clear(struct eng_scan *s)
{
	free(s->want);
	s->want = NULL;
	s->nwant = 0;
}

#endif

/*
 * engine_types.h - the engine's bounds and the callbacks it calls, beside
 * its interface (engine.h includes it): here alone, so that the engine's
 * own parts below its intake (the board, a cycle's writes, the ledger, the
 * carried findings) read them without an arrow up to engine.c.
 */
#ifndef PC_HARNESS_ENGINE_TYPES_H
#define PC_HARNESS_ENGINE_TYPES_H

#include <stdint.h>

#include "harness/results/limits.h"
#include "harness/results/verdict.h"

/* The highest cycle an event may carry: the last cycle --cycles may ask for,
 * plus its final verification boot. */
#define ENGINE_MAX_CYCLE		(CFG_MAX_CYCLES + 1u)
/* The largest event time ("t", ms): every difference and sum of two stays in range. */
#define ENGINE_MAX_T			((uint64_t)INT64_MAX / 2)
/* Sectors of damaged slots held per board (the scan in progress, and again
 * the expected state): 32 bytes each. A scan reporting more is counted, not
 * held: FAIL if that proves new damage, else INFRA_ERROR; a new baseline follows. */
#define ENGINE_MAX_DAMAGED_SECTORS	(1u << 20)
/* Bytes of damaged sectors kept with the expected state (to locate a later
 * tear over them), 520 bytes each; the oldest go first. */
#define ENGINE_MAX_KEPT_RAWS		4096u
/* Findings listed in one verdict; the rest are counted, not listed. */
#define ENGINE_MAX_FINDINGS		1024u
/* Slots held for all boards together by an engine without a configuration
 * (a results folder whose campaign.json has none): what one board of the
 * default max_region_bytes holds in 512-byte records, about 560 MB. A
 * configured engine's total is what its boards' max_region_bytes add up to. */
#define ENGINE_UNCONFIGURED_SLOTS	((uint32_t)(CFG_DEFAULT_MAX_REGION / 512u))
/* Refused writes listed in one verdict; the rest are counted in one finding. */
#define ENGINE_MAX_WRITE_ERRORS		32u

struct engine;

/* Called with each verdict: what the engine decided, typed, and the object
 * that is its verdicts.jsonl line (v->json), filled in one place
 * (engine_verdict.c). Both are lent for the call: take a ref on v->json to
 * keep it. */
typedef int (*engine_verdict_fn)(const struct pc_verdict *v, void *arg);
/* Called with notes worth telling the user (baseline damage, region change). */
typedef void (*engine_note_fn)(const char *board, const char *text, void *arg);

#endif

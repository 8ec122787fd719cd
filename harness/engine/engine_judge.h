/*
 * engine_judge.h - judgement: one complete scan judged against the
 * expected state and the cycle's writes (engine_judge.c), the findings
 * counted and listed in a struct judge (engine_judgement.h) that the
 * verdict (engine_verdict.c) encodes and the carried findings
 * (engine_carry.c) feed or take. The
 * judge reads the board's scan and expected state directly (engine_scan.h,
 * engine_state.h: it sits below the scan in the pipeline), and writes the
 * expected state's baseline and next seq when a baseline scan is adopted.
 * Its own header since the hub retired (issue 41). Private to harness/engine.
 */
#ifndef PC_HARNESS_ENGINE_JUDGE_H
#define PC_HARNESS_ENGINE_JUDGE_H

#include "harness/engine/engine_judgement.h"

struct engine;
struct board;

/* A scan that reported more damage than the engine holds: a device-level
 * finding and FAIL when it is new damage for certain, else INFRA_ERROR;
 * the expected state given up either way. */
int eng_scan_overflow(struct engine *e, struct board *b);
/* A complete scan: the baseline taken, the pending cycle judged, or every
 * slot judged cold (findings carried). */
int eng_judge_scan(struct engine *e, struct board *b);

#endif

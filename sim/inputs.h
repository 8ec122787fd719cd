/*
 * inputs.h - the inputs of a crash-state check, kept per power-on (private to
 * sim/; emmc.c is its user). Format and layout in docs/sim.md, "Inputs kept
 * per power-on".
 *
 * With keep-inputs K > 0, every power session S of the media gets a folder
 * <media>.inputs/session-S holding the media as it was at power-on
 * (base.img), every write and flush the device completed, in completion
 * order, in the dm-log-writes format (writes.log; its codec common/wlog.h),
 * and, written at the next power-on before its faults, the media as the
 * session left it (after.img), with cycle.json saying what the session was
 * and which request was in flight when it ended. The log's progress and the request in flight are
 * plain stores into a MAP_SHARED page (session-S/live), which a SIGKILL
 * cannot undo, so the next power-on finishes the folder exactly.
 *
 * Keeping inputs never fails a request: an error (a full disk) stops the
 * log for the rest of the session and cycle.json says so.
 */
#ifndef PC_SIM_INPUTS_H
#define PC_SIM_INPUTS_H

#include <stddef.h>
#include <stdint.h>

struct sim_emmc;
struct sim_inputs;

#define SIM_INPUTS_SUFFIX	".inputs"
#define SIM_KEEP_INPUTS_MAX	1000u

/*
 * Power-on, before its faults: finish the previous session's folder (if it
 * has one): the log cut to its last whole entry, after.img, cycle.json.
 * 0 or -errno with err.
 */
int sim_inputs_finish_prev(struct sim_emmc *e, char *err, size_t errlen);
/* Power-on of a new media (session 1): forget every folder an earlier media left. */
void sim_inputs_forget(struct sim_emmc *e);
/*
 * Power-on, after its faults: start this session's folder (base.img, the
 * log's superblock, cycle.json) and remove the folders of sessions outside
 * [session - keep, session]. *out is NULL-safe in the calls below.
 */
int sim_inputs_start(struct sim_emmc *e, uint32_t keep, struct sim_inputs **out, char *err, size_t errlen);
/* A request starts (op 1 write, 2 flush): what would be in flight at a cut. */
void sim_inputs_begin(struct sim_inputs *in, unsigned op, uint64_t lba, const void *buf, uint32_t nsect,
		      int fua);
/* The request begun last completed (ok) or failed (!ok: nothing logged). */
void sim_inputs_end(struct sim_inputs *in, int ok);
/*
 * A mark in the log, between requests (dm-log-writes' mark entry: its text
 * inline in the entry's sector): the agent's ACK of records, logged before
 * the ACK goes to the host, so that every ACK stands in the log where the
 * agent sent it (docs/crash-states.md, "ACK marks"). Nothing in flight may
 * be outstanding; a text longer than WLOG_MARK_MAX is cut.
 */
void sim_inputs_mark(struct sim_inputs *in, const char *text);
/* An orderly close (sim_emmc_close): the session ended without a cut. */
void sim_inputs_close(struct sim_inputs *in);

#endif

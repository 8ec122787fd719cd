/*
 * verdict.h - the verdict vocabulary of docs/design.md section 6 (a contract), in one
 * place: record classes, cycle outcomes, the kinds of events a verdict is
 * computed from, and the one rule that says which findings are violations.
 * The engine, the report and the campaign use these names and this rule;
 * nothing else spells them.
 */
#ifndef PC_HARNESS_VERDICT_H
#define PC_HARNESS_VERDICT_H

#include <stddef.h>
#include <stdint.h>

/* Record/sector classes, in report order. */
enum pc_class {
	PC_CLS_INTACT,
	PC_CLS_NOT_WRITTEN,
	PC_CLS_LOST_ACKED,
	PC_CLS_TORN,
	PC_CLS_TORN_SECTOR,
	PC_CLS_CORRUPT,
	PC_CLS_MISDIRECTED,
	PC_CLS_STALE,
	PC_CLS_COLLATERAL,	/* also every device-level finding ("what" says which) */
	PC_CLS_UNREADABLE,
	PC_CLS_UNCLASSIFIED,	/* bytes never received: no class is guessed */
	PC_NCLASSES
};
extern const char *const pc_class_names[PC_NCLASSES];
/* The class named s, or -1. */
int pc_class_from_name(const char *s);

/* Cycle outcomes. */
enum pc_outcome {
	PC_OUT_PASS,
	PC_OUT_FAIL,		/* any violation */
	PC_OUT_BOOT_FAIL,	/* no agent after the boot timeout and its retries */
	PC_OUT_INFRA_ERROR,	/* relay, link or host trouble: never counted against the device */
	PC_NOUTCOMES
};
extern const char *const pc_outcome_names[PC_NOUTCOMES];
/* The outcome named s, or -1. */
int pc_outcome_from_name(const char *s);

/* A device's result (and a campaign's, the worst device's): the cycle
 * outcomes that count against a device, INCOMPLETE (given up, or too
 * little judged) and INCONCLUSIVE (too few cuts landed during writes: no
 * PASS without evidence). Worst first: FAIL beats BOOT_FAIL beats
 * INCOMPLETE beats INCONCLUSIVE beats PASS (docs/results.md). */
enum pc_result {
	PC_RES_PASS,
	PC_RES_FAIL,
	PC_RES_BOOT_FAIL,
	PC_RES_INCOMPLETE,
	PC_RES_INCONCLUSIVE,
	PC_NRESULTS
};
extern const char *const pc_result_names[PC_NRESULTS];
/* The result named s, or -1. */
int pc_result_from_name(const char *s);

/* Why a device is INCOMPLETE (a report's incomplete[].why). */
enum pc_incomplete {
	PC_INC_GIVEN_UP,	/* the campaign gave the board up */
	PC_INC_CYCLES_MISSING,	/* fewer cycles judged than planned */
	PC_INC_RUNNING,		/* a run still holds the folder */
	PC_INC_KILLED,		/* the last run died without closing the folder */
	PC_INC_INFRA_SHARE,	/* too many INFRA_ERROR cycles */
	PC_INC_NOTHING_JUDGED,	/* no cycle judged at all */
	PC_NINCOMPLETE
};
extern const char *const pc_incomplete_names[PC_NINCOMPLETE];

/* How a run ended for a board (a run_end event's "end"). The stop rules'
 * ends (docs/config.md "stop", "target", "results_min_free") come after the
 * first three; a reader that knows only those takes them as unknown. */
enum pc_run_end {
	PC_END_FINISHED,
	PC_END_INTERRUPTED,
	PC_END_GIVEN_UP,
	PC_END_DEAD_DEVICE,	/* stop.boot_fails BOOT_FAILs in a row: the device is dead (its finding) */
	PC_END_FIRST_FAIL,	/* stop.on_fail "stop": a screening run ends at the board's first FAIL */
	PC_END_TARGET_MET,	/* target: every mode shows its rate below the target */
	PC_END_DISK_FLOOR,	/* the results filesystem reached results_min_free: resumable */
	PC_NRUN_ENDS
};
extern const char *const pc_run_end_names[PC_NRUN_ENDS];
/* The end named s, or -1. */
int pc_run_end_from_name(const char *s);

/* What fired a cut (a cut event's and a verdict's cut.trigger; the plans
 * flush and fua are named by their plan). */
enum pc_trigger {
	PC_CUT_RANDOM,		/* "random instant" */
	PC_CUT_ACKS,
	PC_CUT_FLUSH,
	PC_CUT_FUA,
	PC_CUT_SIM_EXACT,	/* the sim cut itself at the planned flush or FUA write */
	PC_CUT_WORK_DONE,
	PC_CUT_WORK_TIMEOUT,
	PC_CUT_LINK_LOST,
	PC_CUT_WRITE_REFUSED,
	PC_NTRIGGERS
};
extern const char *const pc_trigger_names[PC_NTRIGGERS];
/* The trigger named s, or -1. */
int pc_trigger_from_name(const char *s);

/* The "what" of a collateral finding for a write the device refused (a
 * report counts them apart). */
#define PC_WHAT_WRITE_REFUSED	"write_refused"

/* A device-level finding with no record behind it: the device stopped
 * booting for good (stop.boot_fails BOOT_FAILs in a row). The boot_fail event
 * that decides it carries "dead_device": N, and so does its verdict (the
 * engine copies it: replay reproduces it); the run_end says the same. */
#define PC_DEAD_DEVICE		"dead_device"

/* The files of a results folder (docs/results.md); macros, so that a
 * message can spell a path as "%s/" PC_FILE_EVENTS. */
#define PC_FILE_CAMPAIGN	"campaign.json"
#define PC_FILE_EVENTS		"events.jsonl"
#define PC_FILE_VERDICTS	"verdicts.jsonl"
#define PC_FILE_LOCK		"lock"

/* The kinds of event in events.jsonl ("ev"; docs/architecture.md). */
enum pc_ev_kind {
	PC_EV_POWER_ON,		/* a boot attempt starts */
	PC_EV_BOOT_STAGE,	/* a console line timed a boot stage (informational) */
	PC_EV_RX,		/* a message from the agent, as received */
	PC_EV_RX_BAD,		/* a line from the agent that did not parse (informational) */
	PC_EV_RX_STRAY,		/* a message outside its state (informational) */
	PC_EV_VERIFY,		/* the host asked for a scan */
	PC_EV_WORK,		/* the host sent the cycle's work, with its policy */
	PC_EV_CUT,		/* the power was cut */
	PC_EV_BOOT_FAIL,	/* no agent after the boot timeout and retries */
	PC_EV_INFRA,		/* relay, link or host trouble */
	PC_EV_FINAL_BOOT_FAIL,	/* the final verification never came */
	PC_EV_FINAL_INFRA,	/* the final verification failed */
	PC_EV_LINK_REJECT,	/* what the authenticated link refused: never judged */
	PC_EV_GIVE_UP,		/* the campaign gave the board up */
	PC_EV_RUN_END,		/* a run ended: the cycles it planned, how it ended */
	PC_EV_RUN_START,	/* a run started: wall clock and host (format 2) */
	PC_EV_LINK_REJECT_SUMMARY,	/* refusals counted, not logged one by one: never judged */
	PC_EV_CONFIG_CHANGE,	/* a resume changed a setting it may change: never judged */
	PC_NEV_KINDS
};
extern const char *const pc_ev_names[PC_NEV_KINDS];
/* The kind named s, or -1 (an event of a newer harness: informational). */
int pc_ev_from_name(const char *s);

/*
 * Does a judged cycle count as a cut towards a rate target (target,
 * docs/config.md)? A PASS whose cut caught writes in flight (a record
 * not_written, torn or torn_sector), and every FAIL (a violation is a cut
 * that caught something); not a cut that landed while the device was idle,
 * nor a BOOT_FAIL or INFRA_ERROR. outcome: enum pc_outcome.
 */
int pc_cut_counts(int outcome, uint64_t not_written, uint64_t torn, uint64_t torn_sector);

/*
 * One verdict as the engine decided it (docs/results.md, verdicts.jsonl):
 * what the campaign tallies and its stop rules count, typed, beside the
 * object that is its verdicts.jsonl line (json: what results_verdict()
 * writes). The engine fills both in the same place and hands them to its
 * verdict callback (harness/engine/engine.h), lent for the call: the live
 * campaign never reads its own JSON back to learn what the engine decided.
 * A verdict that is only on disk (a resumed run's verdicts.jsonl) is read
 * into the same shape by pc_verdict_read().
 */
struct pc_verdict {
	const char *board;
	int64_t cycle;
	int outcome;		/* enum pc_outcome; -1: a line on disk naming none */
	int mode;		/* enum pc_mode the line names (the cycle's, or its boot's), -1: none */
	uint64_t counts[PC_NCLASSES];	/* per class; 0 for a class the line leaves out */
	uint64_t violations;
	struct json_object *json;	/* the line's object (borrowed) */
};
/* A verdicts.jsonl line's object (borrowed, as v->json and v->board are) as
 * a struct pc_verdict, read as the campaign always read it: an outcome or a
 * mode it does not name -1, a count missing, negative or not an integer 0.
 * 0, or -EINVAL when its "board" is not a string or its "cycle" not an
 * integer >= 0, as the report requires (v then untouched). */
int pc_verdict_read(struct json_object *line, struct pc_verdict *v);

/* What the policy says of unacknowledged findings of the classes that are
 * violations only sometimes: 1 when they are. */
struct pc_policy {
	uint8_t torn;
	uint8_t torn_sector;
	uint8_t unclassified;
};
/* docs/design.md section 6's defaults for a write mode (enum pc_mode): a torn sector
 * is a violation where the mode promises sector atomicity (fua, fua+flush,
 * relwr); a torn record and an unclassified one are not. */
void pc_policy_default(struct pc_policy *p, int mode);

/* The one violation rule: is a finding of class c (acknowledged or not) a
 * violation under policy p? */
int pc_is_violation(enum pc_class c, int acked, const struct pc_policy *p);
/* A class that is a violation whatever the policy and acknowledgement say. */
int pc_class_always_violation(enum pc_class c);

/*
 * The results format (docs/results.md): "format": "MAJOR.MINOR" in
 * campaign.json and in every verdict. A minor version adds fields; a major
 * one changes what a field means. Readers read every older format and refuse
 * a newer major one, saying so. Folders from before the format was written
 * down are 1.0: their verdicts have no "format", "time", "host" or latency,
 * and a BOOT_FAIL or INFRA_ERROR may lack mode, counts and violations.
 */
#define PC_FORMAT_MAJOR	2
#define PC_FORMAT_MINOR	0
#define PC_FORMAT	"2.0"
/* Read a "format" value (v NULL: absent, 1.0). 0, or -EINVAL with err saying
 * what is wrong: not "M.N", or a major version newer than PC_FORMAT_MAJOR
 * (what: the file, for the message). */
struct json_object;
int pc_format_read(struct json_object *v, const char *what, int *major, int *minor, char *err, size_t errlen);

/*
 * Write latency (SUBMIT to ACK, microseconds) in log buckets: one per value
 * below 16, then 8 per power of two (at most 12.5% wide). Verdicts carry a
 * cycle's histogram as [[lower bound, count], ...] so that a report merges
 * cycles exactly and reads percentiles to a bucket.
 */
#define PC_LAT_BUCKETS	240u
#define PC_LAT_MAX_US	3600000000u	/* an hour: PC_PROTO_MAX_LAT_US */
unsigned pc_lat_bucket(uint32_t us);
/* The bucket's lowest and highest value. */
uint32_t pc_lat_lo(unsigned bucket);
uint32_t pc_lat_hi(unsigned bucket);
/* The value below which a share q (0..1) of the n counted fall, as the
 * highest value of its bucket (capped at max); 0 when n is 0. */
uint32_t pc_lat_quantile(const uint64_t *hist, uint64_t n, double q, uint32_t max);

/*
 * What reached the device (a verdict's io_audit, docs/io-audit.md): block
 * requests by what they did, from the kernel's rwbs names ("WS" a write,
 * "WFS" a FUA write, "FF" a cache flush, "FWS" a write with a flush before
 * it, "N" a driver command such as a raw MMC write).
 */
enum pc_rq {
	PC_RQ_WRITE,		/* writes without FUA */
	PC_RQ_FUA,		/* FUA writes */
	PC_RQ_FLUSH,		/* cache flushes (a flush request, or a write's preflush) */
	PC_RQ_OTHER,		/* driver commands (raw MMC), discards, anything else */
	PC_NRQ
};
/* Add n requests of kind rwbs to sums. */
void pc_rq_add(const char *rwbs, uint64_t n, uint64_t sums[PC_NRQ]);
/* What the agent's HELLO said of the device's queue ("queue": {"fua": 0|1,
 * "write_cache": "write back"|"write through"}): 1, 0, or -1 unknown. */
struct pc_queue {
	int fua;		/* the queue takes FUA writes */
	int write_through;	/* the queue claims no volatile cache: the kernel drops FUA and flushes */
	/* an eMMC's EXT_CSD (-1: unknown, or not an eMMC), where FUA becomes
	 * reliable writes; and the record's sectors (0: unknown) */
	int rel_wr_sec_c;	/* [222] sectors one reliable write covers (legacy mode) */
	int wr_rel_param;	/* [166] bit 2 EN_REL_WR: any size is one reliable write */
	unsigned record_sectors;
};
struct json_object;
/* The facts from a queue's fua and write_cache values (either NULL, null,
 * or anything else: unknown); the eMMC fields unknown. */
void pc_queue_read(struct json_object *fua, struct json_object *write_cache, struct pc_queue *q);
/* The eMMC fields from a verdict's device.ext_csd ({"available": true,
 * "rel_wr_sec_c": N, "wr_rel_param": N, ...}; anything else: unknown) and a
 * record size in bytes (0: unknown). */
void pc_queue_read_emmc(struct json_object *ext_csd, uint64_t record_size, struct pc_queue *q);
/* What mode (enum pc_mode) became on the way to the device, in words
 * ("FUA writes (native)", "writes + flushes: FUA emulated", on an eMMC
 * "reliable writes, 8 per 4 KiB record: rel_wr_sec_c 1", ...); done: the
 * work ran to its end (a flush mode cut before its first flush flushed
 * nothing yet, and that is no surprise); q: what the queue claims (NULL:
 * unknown), so that a write-through queue, which drops FUA and flushes by
 * design, is named as the cause. Returns buf. */
const char *pc_io_became(int mode, const uint64_t sums[PC_NRQ], int done, const struct pc_queue *q,
			 char *buf, size_t len);
/* 1 when what reached the device is not what mode promises: fua without a
 * single FUA write (once a flush was seen, the work finished, or the queue
 * is write-through: a cut between an emulated FUA's write and its flush
 * proves nothing), a flush mode whose finished work flushed nothing. q may
 * be NULL (unknown queue). */
int pc_io_mismatch(int mode, const uint64_t sums[PC_NRQ], int done, const struct pc_queue *q);

#endif

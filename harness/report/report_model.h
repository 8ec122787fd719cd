/*
 * report_model.h - what `powercut report` knows once it has read its
 * results folders: the devices (grouped by part), per device and write mode
 * the outcomes, violations, speed, latency and tears, the test conditions,
 * and one row per judged cycle. report.c reads and checks the files into it
 * (every number bounded, every string checked); the report_*.c writers only
 * print it. Nothing outside the report includes this header.
 */
#ifndef PC_HARNESS_REPORT_MODEL_H
#define PC_HARNESS_REPORT_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "harness/report/report.h"
#include "harness/results/verdict.h"

#define NCLASS PC_NCLASSES
/* A device-level finding the engine counts as collateral but the report
 * names on its own: writes the device refused (docs/verdicts.md). */
#define REFUSED_NAME PC_WHAT_WRITE_REFUSED
/* Where a tear falls: the record's sector at which the new data ends
 * ("boundary"), sector 0 to REP_TEAR_SECTORS - 1 (the last holds the rest). */
#define REP_TEAR_SECTORS 64
/* FAIL cycles named per mode (the first ones) for JUnit and the report. */
#define REP_FIRST_FAILS 5

struct strlist {
	char **v;
	unsigned n;
};

struct rep_ran {
	char name[32];
	unsigned long n;
};

/* Write latency, SUBMIT to ACK, merged from the verdicts' histograms. */
struct rep_lat {
	uint64_t hist[PC_LAT_BUCKETS];
	uint64_t n;
	uint32_t max;
};

struct rep_fail_ref {
	unsigned board;		/* index into rep.boards */
	unsigned long cycle;
	char what[96];		/* "lost_acked=3 torn=1" */
};

/* Where a cut landed in its cycle's writes (docs/results.md#where-the-cuts-landed),
 * from the verdict's records and cut: the flush and FUA phases only when the
 * cut plan fired at an announced flush or FUA write (a random instant that
 * fell in one cannot be told from the host). */
enum rep_phase {
	PH_BEFORE,		/* no record submitted before the cut */
	PH_NONE_ACKED,		/* records submitted, none acknowledged */
	PH_ACKED_PENDING,	/* some acknowledged, later ones submitted and not yet */
	PH_FLUSH,		/* at a cache flush (cut plan flush) */
	PH_FUA,			/* at a FUA write (cut plan fua) */
	PH_AFTER,		/* every planned record acknowledged, or the work done: nothing to come */
	PH_N
};
extern const char *const rep_phase_keys[PH_N];	/* "before_first_write", ... (JSON, CSV) */
extern const char *const rep_phase_labels[PH_N];	/* "before the first write", ... */

/* Wear: EXT_CSD's DEVICE_LIFE_TIME_EST_TYP_A/B and PRE_EOL_INFO as the
 * verdicts' device carried them, at the first verdict, every change, and the
 * last (REP_WEAR_PTS kept; the last always). */
#define REP_WEAR_PTS 32
struct rep_wear {
	unsigned board;		/* index into rep.boards */
	unsigned long cycle;
	int64_t time_ms;	/* -1 unknown */
	int a, b, eol;		/* -1 unknown */
};

struct rep_mode {
	char name[32];			/* "" when the cycle wrote nothing and no mode is known */
	unsigned long out[PC_NOUTCOMES];
	unsigned long viol[NCLASS];	/* violations per class */
	unsigned long found[NCLASS];	/* findings per class, violation or not */
	unsigned long violations;	/* sum of verdict.violations */
	unsigned long refused;		/* writes the device refused (counted apart from collateral) */
	unsigned long inflight;		/* cycles whose cut caught writes in flight */
	unsigned long worked;		/* cycles that wrote (records were submitted) */
	unsigned long torn_cycles;	/* cycles with a torn or torn_sector record */
	/* speed, over the cycles that said (PASS and FAIL): the mean of the
	 * cycles' rates, and records and MiB per second */
	double rate_sum;
	unsigned long rate_n;
	double mib_sum;
	unsigned long mib_n;
	struct rep_lat lat;
	unsigned long tears[REP_TEAR_SECTORS];	/* torn findings by boundary sector */
	unsigned long tears_n;
	unsigned record_sectors;	/* the largest record size seen, in sectors */
	struct rep_ran ran[8];		/* cycles whose mode_run differed from mode */
	unsigned nran;
	struct rep_fail_ref first_fail[REP_FIRST_FAILS];
	unsigned nfirst_fail;
	/* what reached the device (verdicts' io_audit): requests by what they
	 * did, the cycles audited, those that could not be, those whose
	 * requests were not what the mode promises (io_note) */
	uint64_t rq[PC_NRQ];
	unsigned long audited, audit_unavailable, io_notes;
	char audit_why[160];		/* why unavailable (the latest) */
	unsigned long phase[PH_N];	/* judged cycles with writes, by where the cut landed */
};

enum { ID_NAME, ID_MANFID, ID_CID, ID_FUA, ID_WCACHE, ID_KERNEL, ID_FWREV, ID_SERIAL, ID_TYPE, ID_AGENT, ID_N };
extern const char *const rep_id_keys[ID_N];

struct rep_field {
	json_object *v;		/* latest value seen (a reference), NULL if never */
	int varies;
};

/* More of the HELLO's device than the identity above: what a posix device
 * (a disk, a partition, a file) says of itself, for the HTML report's part
 * name and region size. */
enum { HW_MODEL, HW_VENDOR, HW_FIRMWARE, HW_SIZE, HW_PATH, HW_N };
extern const char *const rep_hw_keys[HW_N];

/* One reason why a device is INCOMPLETE. */
struct rep_why {
	char *text;		/* in full, for the device's section */
	char *brief;		/* short, for the summary line */
	json_object *j;		/* for --json */
};

/* Cycles not judged (INFRA_ERROR) or whose boot failed (BOOT_FAIL), grouped by
 * their reason (texts that differ only in numbers are one group: a console
 * log's cycle, a port): the first REP_REASONS groups of a device are kept. */
#define REP_REASONS 6
struct rep_reason {
	int out;		/* PC_OUT_INFRA_ERROR or PC_OUT_BOOT_FAIL */
	char *text;		/* the first cycle's reason, printable */
	char *key;		/* the grouping key: text with digit runs as '#' */
	unsigned long n, first, last;	/* cycles, the first and last cycle */
};

/* A test condition: a configuration value of the device's boards (or a
 * device fact), the same on all of them or "varies". */
enum {
	COND_RECORD_SIZE, COND_REGION, COND_RECORDS, COND_MODES, COND_PATTERN, COND_FLUSH_EVERY, COND_QD,
	COND_CUT, COND_OFF_MS, COND_POLICY, COND_EXT_CSD, COND_N
};
extern const char *const rep_cond_keys[COND_N];

struct rep_dev {
	char *id;		/* verdict.device.id, or NULL: unknown (only boot fails seen) */
	char *key;		/* grouping key */
	char *part;		/* "manfid name fwrev": the part this unit is one of */
	struct strlist boards, campaigns, hosts, versions;
	struct rep_field ident[ID_N];
	struct rep_field cond[COND_N];
	struct rep_field hw[HW_N];
	struct rep_mode *modes;	/* sorted in docs/design.md section 5 order once read */
	unsigned nmodes;
	struct rep_why *why;	/* empty: complete */
	unsigned nwhy;
	char *stopped;		/* boards of it a stop rule ended early: "board B at cycle N: why; ...", or NULL */
	struct rep_reason reasons[REP_REASONS];	/* why cycles were not judged or failed to boot */
	unsigned nreasons;
	unsigned long reasons_more;	/* such cycles in no kept group */
	double limit;		/* incomplete_infra_share (the strictest of its folders) */
	int64_t first_ms, last_ms;	/* wall clock of its first and last verdict (-1: unknown) */
	unsigned long ncycles;	/* its rows in rep.cycles */
	struct rep_wear wear[REP_WEAR_PTS];	/* the first, every change; wear_last the latest */
	unsigned nwear;
	unsigned long wear_changes;	/* changes seen (some may not be kept) */
	struct rep_wear wear_last;
	int has_wear;
};

/* One results folder, and what its companions say. */
struct rep_dir {
	const char *arg;		/* as given */
	char *real;			/* its real path (the same folder given twice is read once) */
	char *base;			/* the folder; NULL for a verdicts file not named verdicts.jsonl */
	char *camp_key;			/* host id, campaign, start: copies of one campaign merge */
	int dup_of;			/* the same folder given before (its index), or -1 */
	int has_campaign;		/* campaign.json was there */
	int format_major, format_minor;
	unsigned long cfg_cycles;	/* its config.cycles (0: not recorded) */
	double limit;			/* its config.incomplete_infra_share, or the default */
	unsigned long max_cycle;	/* the highest cycle with a verdict, any board */
	json_object *campaign;		/* campaign.json (a reference), or NULL */
	int64_t started;		/* campaign.json "started" (s), 0 unknown */
	char *host;			/* campaign.json host.id, else host.hostname, or NULL */
	char *version;			/* campaign.json host.powercut, or NULL */
};

/* One board of one campaign: is its part of the campaign complete? */
struct rep_board {
	unsigned dir;			/* the first folder that named it */
	char *name;
	int dev;			/* index of the device it held last; -1: no verdict */
	unsigned long verdicts;
	int given_up;			/* a give_up event that no later run_end superseded */
	unsigned long gu_cycle;
	char *gu_reason;
	int has_plan;			/* a run_end event said how many cycles its run planned */
	unsigned long plan;
	char *stop_reason;		/* its last run_end's, when a stop rule ended it early, else NULL */
	json_object *cfg;		/* its campaign.json configuration (borrowed), or NULL */
	unsigned record_sectors;	/* its record size in sectors, 0 unknown */
};

/* One judged cycle (a verdict line), for the CSV and the charts. */
struct rep_cycle {
	unsigned board;			/* index into rep.boards */
	unsigned dev;			/* index into rep.devs */
	unsigned long cycle;
	int64_t time_ms;		/* wall clock (format 2), -1 unknown */
	signed char out;		/* enum pc_outcome */
	signed char mode;		/* enum pc_mode, -1 none or unknown */
	uint32_t counts[NCLASS];
	uint32_t violations;
	uint32_t planned, acked;	/* records */
	double rate;			/* records/s, < 0 none */
	double mib;			/* MiB/s, < 0 none */
	uint32_t lat_p50, lat_p99, lat_max;	/* us; lat_n 0: none */
	uint32_t lat_n;
	signed char phase;		/* enum rep_phase, -1 none (no writes, not judged) */
};

struct rep {
	struct rep_dev *devs;
	unsigned ndevs;
	struct rep_dir *dirs;
	unsigned ndirs;
	struct rep_board *boards;
	unsigned nboards;
	struct rep_cycle *cycles;	/* in the order read; rep_sort_cycles() orders them */
	size_t ncycles, cap_cycles;
	unsigned long duplicates;	/* verdict lines already counted (the same cycle twice) */
	unsigned cur;			/* the folder being read */
	int own_run;			/* the caller is the run holding the folder */
	unsigned long torn_lines;
	void *seen;			/* the de-duplication set (report.c) */
	char *err;
	size_t errlen;
	double confidence;		/* of the bounds (report_opts, else campaign.json target, else 0.95) */
	int conf_given;			/* set by the caller: campaign.json does not override it */
};

/* report.c: totals and results, shared by every writer */
void rep_mode_sum(const struct rep_dev *d, struct rep_mode *t);
/* Add the counts of m to t (its name stays). */
void rep_mode_add(struct rep_mode *t, const struct rep_mode *m);
unsigned long rep_mode_cycles(const struct rep_mode *m);
/* The device's result, PASS, FAIL, BOOT_FAIL, INCOMPLETE or INCONCLUSIVE
 * (t: rep_mode_sum of d) */
enum pc_result rep_dev_result(const struct rep_dev *d, const struct rep_mode *t);
/* The campaign's result, the worst device's (BOOT_FAIL reads FAIL): PASS,
 * FAIL, INCOMPLETE or INCONCLUSIVE; its exit status is rep_result's. */
const char *rep_result_name(const struct rep *r);
int rep_result(const struct rep *r);
/* "lost_acked=3 torn=1", or "-" */
void rep_viol_text(const struct rep_mode *m, char *buf, size_t len);
/* A field as text: its value, "(varies)" after it, or "-". */
const char *rep_field_text(const struct rep_field *f, char *buf, size_t len);
/* Mean records/s and MiB/s of a mode, < 0 when none said. */
double rep_rate(const struct rep_mode *m);
double rep_mib(const struct rep_mode *m);
/* Latency percentiles of a mode (us), 0 when none. */
uint32_t rep_lat_q(const struct rep_mode *m, double q);
/* The mode named name of d, or NULL. */
const struct rep_mode *rep_find_mode(const struct rep_dev *d, const char *name);
/* What the mode became on the way to the device (pc_io_became), or NULL
 * when no cycle of it was audited. */
const char *rep_io_became(const struct rep_dev *d, const struct rep_mode *m, char *buf, size_t len);
/* The cost of a mode against "none" on the same device: none's records/s
 * over this mode's (2.5 means 2.5 times slower); < 0 when either is unknown. */
double rep_cost_vs_none(const struct rep_dev *d, const struct rep_mode *m);
/* RFC 3339 UTC of a wall clock in ms ("-" when < 0). */
const char *rep_time_text(int64_t ms, char *buf, size_t len);
/*
 * The bound on a mode's per-cut violation probability: n judged cuts (PASS
 * and FAIL cycles), k of them FAIL; the one-sided Clopper-Pearson upper
 * bound at r->confidence (qualify.h), < 0 when nothing was judged.
 */
double rep_bound(const struct rep *r, const struct rep_mode *m, unsigned long *k, unsigned long *n);
/* "below 9.50% at 95%", "3 of 30 cuts (10.0%): below 26.5% at 95%" or "no cut judged". */
const char *rep_bound_text(const struct rep *r, const struct rep_mode *m, char *buf, size_t len);
/* A percentage with 3 significant digits ("0.0998%", "9.50%", "100%"). */
const char *rep_pct_text(double p, char *buf, size_t len);
/* The flags of a mode's cut phases: the flushes or FUA writes it issues
 * that no cut reached, one sentence ("no cut landed during a flush or during
 * a FUA write in mode journal") into buf; "" when none. Returns the number
 * of flags. */
int rep_phase_flags(const struct rep_mode *m, char *buf, size_t len);
/*
 * No PASS without evidence (docs/verdicts.md#no-pass-without-evidence): a
 * mode's judged cuts (PASS and FAIL cycles that wrote) must have landed
 * during its writes (records submitted and not all acknowledged, a flush, a
 * FUA write) at least once and at least REP_IN_WRITES_PCT percent of the
 * time, or its PASS proves nothing about the part: the device reads
 * INCONCLUSIVE. The cuts during writes and the cuts judged of a mode.
 */
#define REP_IN_WRITES_PCT 10
unsigned long rep_cuts_in_writes(const struct rep_mode *m, unsigned long *judged);
/* 1 when mode m falls short of it, with why and what to change in buf
 * ("mode fua: 0 of 20 cuts landed during writes ..."); else 0 and "". */
int rep_mode_inconclusive(const struct rep_mode *m, char *buf, size_t len);
/* How many of the device's modes fall short. */
unsigned rep_dev_inconclusive(const struct rep_dev *d);
/* Does the device's wear (EXT_CSD life time, pre-EOL) show? */
int rep_wear_text(const struct rep_wear *w, char *buf, size_t len);
/* Order the cycle rows by device, board, cycle. */
void rep_sort_cycles(struct rep *r);

/* report_html.c: the page's style sheet, for every HTML page of the report room */
extern const char rep_html_css[];

/* the writers: 0, or -errno (out of memory, or writing failed) */
int report_text(const struct rep *r, FILE *out, const char *const *dirs, int ndirs);
int report_md(const struct rep *r, FILE *out, const char *const *dirs, int ndirs);
int report_json(const struct rep *r, FILE *out, const char *const *dirs, int ndirs);
int report_csv(const struct rep *r, FILE *out);
int report_junit(const struct rep *r, FILE *out);
int report_html(const struct rep *r, FILE *out, const char *const *dirs, int ndirs);

#endif

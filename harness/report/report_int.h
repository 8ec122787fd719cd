/*
 * report_int.h - what the files of the report's reading side share
 * (report.c, report_verdict.c, report_add.c, report_read.c): a checked
 * verdict line, and the helpers that read and count it. The writers use
 * report_model.h only; nothing outside harness/report includes either.
 */
#ifndef PC_HARNESS_REPORT_INT_H
#define PC_HARNESS_REPORT_INT_H

#include <stdint.h>

#include <json-c/json.h>

#include "harness/report/report_model.h"

#include "common/json.h"

/* A verdict line, checked for everything the report uses. */
struct verdict {
	int out;
	const char *board, *campaign, *mode, *mode_run, *id;
	json_object *device, *queue, *kernel;
	uint64_t counts[NCLASS];
	uint64_t fviol[NCLASS];		/* findings marked violation, per class */
	uint64_t refused;		/* refused writes (write_refused findings, with their n) */
	uint64_t violations;
	uint64_t cycle;			/* 0 when the line has none */
	int has_rate;
	double rate;
	double mib;			/* < 0: none */
	int64_t time_ms;		/* -1: none */
	const char *host;		/* NULL: none */
	uint64_t planned, acked;
	json_object *agent;
	/* latency_us: the cycle's figures and histogram (buckets of verdict.h) */
	uint64_t lat_n, lat_p50, lat_p99, lat_max;
	uint64_t lat_hist[PC_LAT_BUCKETS];
	/* torn findings by the sector their new data ends at */
	unsigned long tears[REP_TEAR_SECTORS];
	unsigned long ntears;
	/* io_audit: 1 audited (rq summed), -1 unavailable (why), 0 none */
	int audit;
	uint64_t rq[PC_NRQ];
	const char *audit_why;
	int io_note;
	const char *reason;		/* NULL: none */
	uint64_t submitted;
	int phase;			/* enum rep_phase, -1: no writes judged */
	int has_wear;			/* device.ext_csd said life time or pre-EOL */
	int life_a, life_b, pre_eol;	/* -1 unknown */
};

/* report.c */
/* Read the folders dirs into r (r zeroed but for err and errlen), with o's
 * confidence: 0, or -errno with r->err saying why. rep_release(r) either way. */
struct report_opts;
int rep_load(struct rep *r, const char *const *dirs, int ndirs, const struct report_opts *o);
void rep_release(struct rep *r);
/* Say what is wrong in r->err as "file:line: ..." (line 0: "file: ..."): -EINVAL. */
int rep_fail(struct rep *r, const char *file, unsigned long line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int rep_strlist_add(struct strlist *l, const char *s);
void rep_strlist_free(struct strlist *l);

/* report_verdict.c */
/* An optional string member key of o (*out NULL when absent or null); what names it in a message. */
int rep_opt_string(struct rep *r, const char *file, unsigned long line, json_object *o, const char *key,
		   const char *what, const char **out);
/* An optional count (*out left as it is when v is absent or null). */
int rep_opt_count(struct rep *r, const char *file, unsigned long line, json_object *v, const char *what,
		  uint64_t *out);
/* The verdict line v of file, checked, into vd (which points into v). */
int rep_verdict_parse(struct rep *r, const char *file, unsigned long line, json_object *v, struct verdict *vd);

/* report_add.c */
struct rep_dev *rep_dev_get(struct rep *r, const char *id, const char *board);
struct rep_board *rep_board_get(struct rep *r, unsigned dir, const char *name);
/* Count vd for the device id (NULL: unknown), once per cycle. 0 or -ENOMEM. */
int rep_add(struct rep *r, const struct verdict *vd, const char *id);
void rep_seen_free(struct rep *r);

/* report_read.c */
/* One argument: a folder, or a verdicts file. */
int rep_folder(struct rep *r, const char *arg);

#endif

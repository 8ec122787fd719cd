/*
 * audit.h - what reached the device: the block requests a cycle's work
 * really issued, counted by the kernel's own description of each request
 * (tracefs block:block_rq_issue, its "rwbs" flags: W write, F before it a
 * preflush, F after it FUA, S sync; "FF" a cache flush), or by the sim
 * device itself. A mode's name says what the agent asked for; this says
 * what the kernel sent (docs/io-audit.md).
 *
 * Where tracefs is missing or not permitted the audit says why and counts
 * nothing: it never guesses.
 */
#ifndef PC_AGENT_AUDIT_H
#define PC_AGENT_AUDIT_H

#include <limits.h>
#include <stdint.h>

#include <json-c/json.h>

/* Kinds of request kept apart (rwbs strings); more are counted as "other". */
#define AUDIT_KINDS 16

struct audit_counts {
	unsigned n;
	struct {
		char rwbs[10];
		uint64_t count;
		uint64_t sectors;	/* 512-byte sectors they carried */
	} k[AUDIT_KINDS];
	uint64_t other;
};

struct region;

struct audit {
	int on;			/* counting */
	char src[16];		/* "tracefs" or "sim" */
	char why[320];		/* why not, when !on */
	struct audit_counts c;
	/* tracefs: our own instance, its trace_pipe, the disk and the region's
	 * sectors on it (writes elsewhere on the disk are someone else's) */
	int fd;
	char inst[PATH_MAX];
	unsigned kdev;
	uint64_t lo, hi;
	char part[512];		/* a line split across reads */
	size_t plen;
	uint64_t lines, ignored;
	/* sim: the device counts what it receives */
	struct audit_counts *sim;
};

/* Count one request of kind rwbs (as the kernel prints it) carrying
 * sectors 512-byte sectors. Requests are counted as the device got them:
 * the block layer may merge adjacent plain writes into one, so a mode's
 * bytes are the sectors, not the count times the record size. */
void audit_count(struct audit_counts *c, const char *rwbs, uint64_t sectors);

/* Set up the audit of r's device: tracefs (mounted, or mounted here), or
 * the sim device's own counts. Never fails: a->on says whether it counts,
 * a->why why not. */
void audit_open(struct audit *a, struct region *r);
/* Forget what was counted (the work starts): what is pending is read and dropped. */
void audit_reset(struct audit *a);
/* Read what the kernel reported so far (non-blocking). */
void audit_poll(struct audit *a);
/* {"src": "tracefs", "rq": {"WS": 60, "FF": 8}, "sectors": {"WS": 512}}
 * (sectors only for kinds that carried data) or {"unavailable": "why"}. */
json_object *audit_json(const struct audit *a);
void audit_close(struct audit *a);

/* One line of trace_pipe: 0 and the request's dev (kernel encoding),
 * rwbs, first sector and sectors (-1 when the line is not a
 * block_rq_issue event). */
int audit_parse_line(const char *line, unsigned *kdev, char *rwbs, size_t rwbs_len, uint64_t *sector,
		     unsigned *nsect);

#endif

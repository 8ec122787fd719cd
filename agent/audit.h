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

/* The most CPUs whose binary trace buffers are read; beyond, trace_pipe. */
#define AUDIT_MAX_CPUS 64

/*
 * The kernel's binary trace pages (per_cpu/cpuN/trace_pipe_raw): where a
 * page keeps its length and data (events/header_page), and where
 * block_rq_issue keeps its fields (its format file). Read instead of the
 * text trace_pipe where it works: the kernel then formats nothing, and the
 * agent parses no text (at 4 KiB writes and QD 32, the text cost the writer
 * about a tenth of its rate; docs/io-audit.md).
 */
struct audit_raw {
	unsigned commit_off, commit_size, data_off;
	unsigned id, type_off, type_size;
	unsigned dev_off, sector_off, nsect_off, rwbs_off, rwbs_size;
	unsigned ncpu;
	int fd[AUDIT_MAX_CPUS];
	size_t page;		/* bytes a read returns at most: the page size */
	uint8_t *buf;
};

/* The last write requests counted, to know a re-issued remainder of one of
 * them (audit_remainder): several are in flight at a queue depth above 1. */
#define AUDIT_RECENT 64
struct audit_last {
	struct {
		char rwbs[8];
		uint64_t start, end;	/* sectors [start, end) */
	} r[AUDIT_RECENT];
	unsigned next;		/* the slot the next new request takes */
};

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
	struct audit_last last;	/* the last write counted */
	/* the kernel dropped requests (its buffer overflowed): pages or
	 * "LOST" lines seen; the counts are then short and not reported */
	uint64_t lost;
	int raw_on;		/* reading struct audit_raw's fds, not fd */
	struct audit_raw raw;
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
/*
 * 1 when a write request [sector, sector + nsect) of kind rwbs is part of one
 * of the last AUDIT_RECENT counted, issued again: same kind, same end, another
 * start.
 * The MMC driver completes a reliable write of more sectors than the card
 * writes reliably at once (EXT_CSD rel_wr_sec_c) only in part, and the
 * block layer issues the remainder of the same request again (8, 7, ... 1
 * sectors of a 4 KiB FUA write when rel_wr_sec_c is 1): those sectors
 * reached the device once, the request was made once. The trace is read a
 * CPU's buffer after another, so a remainder may be read before the request
 * it is the rest of: a later start is a remainder (*more 0), an earlier one
 * the request itself (*more: its sectors before the part counted). The same
 * start is a new request (the same record written again). Else 0, and the
 * request joins the recent ones (the oldest leaves).
 */
int audit_remainder(struct audit_last *l, const char *rwbs, uint64_t sector, unsigned nsect, uint64_t *more);
/* Count a request the kernel issued (audit_count), a remainder as above:
 * each request once, each sector once, whichever order they are read in. */
void audit_count_write(struct audit_counts *c, struct audit_last *l, const char *rwbs, uint64_t sector,
		       unsigned nsect);
void audit_open(struct audit *a, struct region *r);
/* Forget what was counted (the work starts): what is pending is read and dropped. */
void audit_reset(struct audit *a);
/* Read what the kernel reported so far (non-blocking). */
void audit_poll(struct audit *a);
/* {"src": "tracefs", "rq": {"WS": 60, "FF": 8}, "sectors": {"WS": 512}}
 * (sectors only for kinds that carried data) or {"unavailable": "why"}. */
json_object *audit_json(const struct audit *a);
void audit_close(struct audit *a);

/* Where tracefs is mounted according to mountinfo (/proc/self/mountinfo, or
 * a crafted file in its format): 0 with the mount point, unescaped, in dir;
 * -ENOENT when no tracefs is mounted or the file cannot be read. */
int audit_tracefs_mounted(const char *mountinfo, char *dir, size_t len);

/* One line of trace_pipe: 0 and the request's dev (kernel encoding),
 * rwbs, first sector and sectors (-EINVAL when the line is not a
 * block_rq_issue event). */
int audit_parse_line(const char *line, unsigned *kdev, char *rwbs, size_t rwbs_len, uint64_t *sector,
		     unsigned *nsect);

/* Where field name is in a tracefs format text (header_page or an event's
 * format): 0 with its offset and size, -EINVAL when absent or malformed. */
int audit_format_field(const char *text, const char *name, unsigned *off, unsigned *size);
/* The layout of raw pages and block_rq_issue events from those texts: 0 or -EINVAL
 * (a field missing or of a size this parser does not read). */
int audit_raw_layout(struct audit_raw *r, const char *header_page, const char *event_format, unsigned id);
/* Count the block_rq_issue events of one page of n bytes read from a
 * trace_pipe_raw (the layout in a->raw). Anything malformed ends the page:
 * the number of events taken, or -EINVAL when the page itself is malformed. */
int audit_take_page(struct audit *a, const uint8_t *page, size_t n);

#endif

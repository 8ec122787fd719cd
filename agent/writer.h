/*
 * writer.h - one cycle's writes in the requested mode (docs/design.md section 5),
 * streaming SUBMIT before each write is issued and ACK once the device has
 * promised durability.
 */
#ifndef PC_AGENT_WRITER_H
#define PC_AGENT_WRITER_H

#include <stdint.h>

#include "common/proto.h"
#include "agent/region.h"

struct writer_io {
	int aio;		/* 1 when the backend's async path (io_uring) works */
	char why[256];		/* when it does not: why */
	/* The write buffers (one more than the deepest queue), made once
	 * and their first 4 MiB touched, so that no cycle's writes wait for an
	 * allocation or a first-touch page fault. NULL when memory was short:
	 * writer_run then makes its own. */
	uint8_t *bufs;
	size_t buflen;
};

/*
 * Set up the async path once (queue depth 32) and the write buffers for r's
 * record size. Never fails: records why not. The buffers are io's: free them
 * with writer_release() after region_close() (no write may be in flight).
 */
void writer_probe(struct region *r, struct writer_io *io);
void writer_release(struct writer_io *io);

/* What each mode really does on this device, for HELLO ("io"). */
json_object *writer_describe(const struct region *r, const struct writer_io *io);

/* The mode that really runs when mode is asked for (fua without io_uring is
 * fua+flush: a synchronous RWF_DSYNC write, which the kernel follows with a flush). */
int writer_effective_mode(const struct writer_io *io, int mode);

struct writer_result {
	uint64_t records;	/* records written (all n unless an error stopped it) */
	uint64_t acked;		/* records ACKed */
	uint64_t ms;
	int mode_run;
	/* a write the device refused (write_errno != 0): of all that failed,
	 * the one with the lowest seq; reported to the host as a finding about
	 * the device. Errors of the agent's own (a refused slot, a lost link,
	 * relwr on a non-MMC device) leave these 0. */
	int write_errno;	/* positive errno */
	uint64_t write_lba;	/* first 512-byte LBA of that write, on the device */
	uint64_t write_seq;	/* the record's seq */
	const char *write_op;	/* what failed: "write", "FUA write", "RWF_DSYNC write", "cache flush"
				 * (then lba and seq are those of the last record it covered),
				 * "reliable write", "raw write"; NULL when none */
};

/*
 * Where the writer's messages go. line: one message as JSON text and a
 * newline (built without allocation, pc_line_*: SUBMIT, ACK, IO). flush:
 * called before each write, flush or completion wait, when lines were given
 * since the last one; by its return every line given must be on the link
 * (a SUBMIT before the writes it names, an IO before its operation, ACKs
 * before the writer waits on the device), so a sink may gather the lines of
 * one reap and write them at once. flush may be NULL (each line went out
 * at once).
 */
struct writer_sink {
	int (*line)(const char *text, size_t len, void *arg);
	int (*flush)(void *arg);
	void *arg;
};

/*
 * Run the work. 0, or -errno with err set (the caller reports it). When the
 * device refuses a write, the writer issues nothing more, waits for every
 * write still in flight (each completion is accounted for, none leaks), and
 * returns -write_errno with err naming the device, seq, LBA, errno and mode.
 */
int writer_run(struct region *r, struct writer_io *io, const struct pc_work *w,
	       const struct writer_sink *out, struct writer_result *res, char *err, size_t errlen);

#endif

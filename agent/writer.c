/*
 * writer.c - the write modes of docs/design.md section 5.
 *
 *   fua        async writes with RWF_DSYNC (io_uring): the block layer sends
 *              REQ_FUA only; ACK on each completion
 *   fua+flush  synchronous pwritev2(RWF_DSYNC): the kernel follows the FUA
 *              write with a cache flush; ACK after each
 *   flush      plain O_DIRECT writes, fdatasync every flush_every records;
 *              ACK the group when the flush completes
 *   journal    flush_every data writes, flush, then a FUA commit record (the
 *              jbd2 pattern); ACK data and commit when the commit completes
 *   none       plain writes, never acknowledged
 *
 * SUBMIT always goes out before the writes it names are issued. When the
 * work asks (its "announce"), an IO message goes out right before each cache
 * flush and each FUA write is issued, after the SUBMIT that names its
 * records: a cut plan "at a flush" or "at a FUA write" is carried out on it.
 */
#include "agent/writer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define MAXQD 32
/* one buffer more than can be in flight: the next record is built in it
 * while the device works on the others */
#define NBUF (MAXQD + 1)
/* how much of the buffers writer_probe touches: QD 32 of 64 KiB records */
#define PREFAULT ((size_t)4 << 20)

#define LATRING 1024u

struct ws {
	struct region *r;
	const struct writer_io *io;
	const struct pc_work *w;
	const struct writer_sink *out;
	unsigned held;		/* lines given to out since its last flush */
	uint64_t acked;
	int mode;		/* effective */
	unsigned qd;
	uint8_t *bufs;
	struct dev_io ios[NBUF];
	int free_[NBUF];
	unsigned nfree;
	unsigned inflight;
	uint64_t done_seq[MAXQD];
	unsigned ndone;
	/* a record built ahead (pre_bi >= 0): seq pre_seq with extra flags
	 * pre_extra, for slot pre_slot, in buffer pre_bi (not on the free list) */
	int pre_bi;
	uint64_t pre_seq;
	uint16_t pre_extra;
	uint32_t pre_slot;
	char *err;
	size_t errlen;
	/* the write the device refused (the lowest seq, when several fail) */
	int werr;		/* positive errno; 0: none */
	uint64_t wseq, wlba;
	const char *wop;
	/* completions can no longer be waited for: the buffers must not be reused */
	int broken;
	/* when each seq's SUBMIT went out (monotonic us), by seq modulo LATRING:
	 * an ACK says each record's latency from it (PC_PROTO_MAX_LAT_N at most) */
	uint64_t sub_us[LATRING], sub_seq[LATRING];
	uint32_t lat[PC_PROTO_MAX_LAT_N];
};

void writer_probe(struct region *r, struct writer_io *io)
{
	size_t len = (size_t)NBUF * r->g.record_size;
	int ret;

	memset(io, 0, sizeof(*io));
	if (len && posix_memalign((void **)&io->bufs, 4096, len) == 0) {
		/* faulted in now, not mid-cycle; past PREFAULT (large records at
		 * a deep queue) only what a run touches, once per process */
		memset(io->bufs, 0, len < PREFAULT ? len : PREFAULT);
		io->buflen = len;
	} else {
		io->bufs = NULL;
	}
	if (!r->dev.ops->aio_setup) {
		snprintf(io->why, sizeof(io->why), "backend %s has no asynchronous path", r->dev.ops->name);
		return;
	}
	ret = r->dev.ops->aio_setup(&r->dev, MAXQD);
	if (ret == 0) {
		io->aio = 1;
		return;
	}
	snprintf(io->why, sizeof(io->why), "%s", r->dev.err[0] ? r->dev.err : strerror(-ret));
}

void writer_release(struct writer_io *io)
{
	free(io->bufs);
	io->bufs = NULL;
	io->buflen = 0;
}

int writer_effective_mode(const struct writer_io *io, int mode)
{
	if (mode == PC_MODE_FUA && !io->aio)
		return PC_MODE_FUA_FLUSH;
	return mode;
}

json_object *writer_describe(const struct region *r, const struct writer_io *io)
{
	json_object *o = json_object_new_object();
	char async[64], buf[512];
	const char *dsync = r->dev.dsync_how[0] ? r->dev.dsync_how : "pwritev2 RWF_DSYNC (FUA + flush)";

	/* "io_uring"; "sim async queue", a queue in name only */
	if (io->aio)
		snprintf(async, sizeof(async), "%s%s", r->dev.ops->aio_name ? r->dev.ops->aio_name : r->dev.ops->name,
			 (r->dev.ops->caps & DEV_CAP_AIO_INLINE) ? " async queue" : "");
	else
		snprintf(async, sizeof(async), "pwrite");

	if (io->aio)
		snprintf(buf, sizeof(buf), "%s RWF_DSYNC (FUA only)", async);
	else
		snprintf(buf, sizeof(buf), "runs as fua+flush: %s (no async path: %s)", dsync, io->why);
	json_object_object_add(o, "fua", json_object_new_string(buf));
	json_object_object_add(o, "fua+flush", json_object_new_string(dsync));
	snprintf(buf, sizeof(buf), "%s + fdatasync", async);
	json_object_object_add(o, "flush", json_object_new_string(buf));
	if (io->aio)
		snprintf(buf, sizeof(buf), "%s + fdatasync + %s RWF_DSYNC commit (FUA only)", async, async);
	else
		snprintf(buf, sizeof(buf), "pwrite + fdatasync + commit by %s", dsync);
	json_object_object_add(o, "journal", json_object_new_string(buf));
	json_object_object_add(o, "none", json_object_new_string(async));
	if (r->dev.relwr_how[0])
		snprintf(buf, sizeof(buf), "%s", r->dev.relwr_how);
	else
		snprintf(buf, sizeof(buf), "MMC_IOC_MULTI_CMD: CMD23 (bit 31: reliable write) + CMD25, on the whole card");
	json_object_object_add(o, "relwr", json_object_new_string(buf));
	json_object_object_add(o, "async", json_object_new_boolean(io->aio));
	if (!io->aio)
		json_object_object_add(o, "async_unavailable", json_object_new_string(io->why));
	return o;
}

/* One line to the sink; sent by the next out_flush at the latest. */
static int out_line(struct ws *s, const char *buf, int n)
{
	if (n < 0)
		return n;
	s->held++;
	return s->out->line(buf, (size_t)n, s->out->arg);
}

/* Everything given is on the link: before a write, a flush or a wait. */
static int out_flush(struct ws *s)
{
	if (!s->held)
		return 0;
	s->held = 0;
	return s->out->flush ? s->out->flush(s->out->arg) : 0;
}

/*
 * SUBMIT and ACK. A SUBMIT stamps its records' time; an ACK of at most
 * PC_PROTO_MAX_LAT_N records says how long each took from its SUBMIT (what
 * the report's latency is: the time the device took to make it durable as
 * the mode promises, seen from the agent), when every stamp is still held.
 */
static int send_range(struct ws *s, enum pc_msg_type t, uint64_t first, uint64_t n)
{
	char line[PC_PROTO_MAX_LINE];
	uint64_t now;
	int all = 1;

	if (!n)
		return 0;
	now = pc_now_us();
	if (t == PC_MSG_SUBMIT) {
		for (uint64_t i = 0; i < n && i < LATRING; i++) {
			s->sub_us[(first + i) % LATRING] = now;
			s->sub_seq[(first + i) % LATRING] = first + i;
		}
		return out_line(s, line, pc_line_range(line, sizeof(line), t, first, (uint32_t)n));
	}
	if (t == PC_MSG_ACK) {
		s->acked += n;
		/* the ACK stands in the device's kept log where it is sent: before the line */
		if (s->r->dev.ops->ack_mark)
			s->r->dev.ops->ack_mark(&s->r->dev, first, n);
	}
	if (t != PC_MSG_ACK || n > PC_PROTO_MAX_LAT_N)
		return out_line(s, line, pc_line_range(line, sizeof(line), t, first, (uint32_t)n));
	for (uint64_t i = 0; i < n && all; i++) {
		uint64_t k = (first + i) % LATRING;

		if (s->sub_seq[k] != first + i || s->sub_us[k] > now) {
			all = 0;
			break;
		}
		s->lat[i] = now - s->sub_us[k] > PC_PROTO_MAX_LAT_US ? PC_PROTO_MAX_LAT_US :
			    (uint32_t)(now - s->sub_us[k]);
	}
	return out_line(s, line, pc_line_ack(line, sizeof(line), first, (uint32_t)n, all ? s->lat : NULL));
}

/* IO, right before the operation it announces: on the link at once. */
static int announce(struct ws *s, unsigned op, uint64_t seq)
{
	char line[128];
	int ret;

	if (!(s->w->announce & op))
		return 0;
	ret = out_line(s, line, pc_line_io(line, sizeof(line), op, seq));
	return ret ? ret : out_flush(s);
}

static uint16_t rec_flags(const struct ws *s, uint16_t extra)
{
	return (uint16_t)(s->mode | extra | (s->w->pattern == PC_PAT_RANDOM ? PC_FL_RANDOM : 0));
}

static uint8_t *build(struct ws *s, int bi, uint64_t seq, uint16_t extra, uint32_t *slot)
{
	uint8_t *buf = s->bufs + (size_t)bi * s->r->g.record_size;

	*slot = pc_slot_of_seq(&s->r->g, s->w->pattern, seq);
	pc_record_build(buf, &s->r->g, *slot, seq, s->w->cycle, rec_flags(s, extra));
	return buf;
}

/* An error of the agent's own (not a write the device refused). */
static int fail(struct ws *s, int ret, uint64_t seq, const char *what)
{
	snprintf(s->err, s->errlen, "%s of seq %" PRIu64 " on %s failed: %s", what, seq, s->r->path,
		 s->r->dev.err[0] ? s->r->dev.err : strerror(-ret));
	return ret;
}

/*
 * The device refused a write (or the flush or commit covering it): a finding
 * about the device. The lowest seq that failed is kept for the host
 * (writer_result); ret is returned.
 */
static void write_error_message(struct ws *s)
{
	const char *hint = "";

	if ((s->werr == EPERM || s->werr == EROFS) && s->r->dev.is_blockdev)
		hint = " (the block device became read-only: blockdev --setro, or the card's write protection)";
	snprintf(s->err, s->errlen, "%s: the device refused a %s: seq %" PRIu64 ", LBA %" PRIu64 " (a %u-byte record), "
		 "mode %s, queue depth %u: %s (errno %d)%s; nothing more is written", s->r->path, s->wop, s->wseq,
		 s->wlba, s->r->g.record_size, pc_mode_name(s->mode), s->qd, strerror(s->werr), s->werr, hint);
}

static int write_failed(struct ws *s, int ret, uint64_t seq, uint64_t off, const char *op)
{
	if (s->werr && seq >= s->wseq)
		return ret;
	s->werr = -ret;
	s->wseq = seq;
	s->wlba = off / PC_SECTOR;
	s->wop = op;
	write_error_message(s);
	return ret;
}

/* Byte offset of seq's record on the device (for error reports; 0 if out of range). */
static uint64_t seq_off(const struct ws *s, uint64_t seq)
{
	uint64_t off = 0;

	region_slot_offset(s->r, pc_slot_of_seq(&s->r->g, s->w->pattern, seq), &off);
	return off;
}

/*
 * Collect completions (at least min); their seqs land in done_seq. Every
 * completion in the batch is accounted for, failed or not. Returns the first
 * refused write's -errno once there is one (the caller stops issuing and
 * drains), or an error of the wait itself.
 */
static int reap(struct ws *s, unsigned min)
{
	struct dev_io *done[MAXQD];
	int n;

	if (!s->inflight)
		return s->werr ? -s->werr : 0;
	if (min && (n = out_flush(s)))
		return n;
	n = s->r->dev.ops->aio_reap(&s->r->dev, done, MAXQD, min);
	if (n < 0) {
		s->broken = 1;
		return fail(s, n, 0, "waiting for completions");
	}
	if (n == 0 && min) {
		/* the backend has nothing in flight that we still count: waiting
		 * again would spin forever */
		s->broken = 1;
		snprintf(s->err, s->errlen, "%s: %u writes counted in flight, but the device has none to "
			 "complete", s->r->path, s->inflight);
		return -EIO;
	}
	for (int i = 0; i < n; i++) {
		struct dev_io *io = done[i];
		int bi = (int)(io - s->ios);

		if (bi < 0 || bi >= NBUF) {
			s->broken = 1;
			snprintf(s->err, s->errlen, "%s: a completion for a write this writer never issued", s->r->path);
			return -EIO;
		}
		s->inflight--;
		s->free_[s->nfree++] = bi;
		if (io->result)
			write_failed(s, io->result, io->tag, io->off,
				     io->wflags & DEV_W_DSYNC ? "FUA write" : "write");
		else if (s->ndone < MAXQD)	/* group modes ACK by range and ignore these */
			s->done_seq[s->ndone++] = io->tag;
	}
	return s->werr ? -s->werr : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ACK what completed, as ranges of consecutive seqs. */
static int ack_done(struct ws *s)
{
	unsigned i = 0;
	int ret = 0;

	qsort(s->done_seq, s->ndone, sizeof(s->done_seq[0]), cmp_u64);
	while (i < s->ndone && !ret) {
		unsigned j = i + 1;
		while (j < s->ndone && s->done_seq[j] == s->done_seq[j - 1] + 1)
			j++;
		ret = send_range(s, PC_MSG_ACK, s->done_seq[i], j - i);
		i = j;
	}
	s->ndone = 0;
	return ret;
}

/* Issue one record write: async when possible, else synchronous. */
static int issue(struct ws *s, uint64_t seq, unsigned wflags, uint16_t extra)
{
	uint32_t slot;
	uint64_t off;
	int ret, bi;

	if ((wflags & DEV_W_DSYNC) && (ret = announce(s, PC_IO_FUA, seq)))
		return ret;
	if ((ret = out_flush(s)))
		return ret;
	if (!s->io->aio) {
		uint8_t *buf = build(s, 0, seq, extra, &slot);

		ret = region_slot_offset(s->r, slot, &off);
		if (ret)
			return fail(s, ret, seq, "slot bounds check");
		ret = s->r->dev.ops->write(&s->r->dev, off, buf, s->r->g.record_size, wflags);
		if (ret == -ERANGE)	/* the agent's own refusal (the write window) */
			return fail(s, ret, seq, "write");
		if (ret)
			return write_failed(s, ret, seq, off, wflags & DEV_W_DSYNC ? "FUA write" : "write");
		if (s->ndone < MAXQD)
			s->done_seq[s->ndone++] = seq;
		return 0;
	}
	while (s->inflight >= s->qd || !s->nfree) {
		ret = reap(s, 1);
		if (ret)
			return ret;
	}
	if (s->pre_bi >= 0 && s->pre_seq == seq && s->pre_extra == extra) {
		bi = s->pre_bi;
		slot = s->pre_slot;
		s->pre_bi = -1;
	} else {
		bi = s->free_[--s->nfree];
		s->ios[bi].buf = build(s, bi, seq, extra, &slot);
	}
	ret = region_slot_offset(s->r, slot, &off);
	if (ret)
		return fail(s, ret, seq, "slot bounds check");
	s->ios[bi].off = off;
	s->ios[bi].len = s->r->g.record_size;
	s->ios[bi].wflags = wflags;
	s->ios[bi].tag = seq;
	s->ios[bi].result = 0;
	ret = s->r->dev.ops->aio_submit(&s->r->dev, &s->ios[bi]);
	if (ret) {
		s->free_[s->nfree++] = bi;
		return fail(s, ret, seq, "submit");
	}
	s->inflight++;
	return 0;
}

/*
 * Build record seq (with extra flags) in a free buffer now, while writes are
 * in flight, so that issuing it does not wait for its sectors: nothing is
 * sent or written here, and issue() takes it only for that very seq and
 * flags. Only on the async path (the synchronous one has nothing to overlap).
 */
static void build_ahead(struct ws *s, uint64_t seq, uint16_t extra)
{
	int bi;

	if (!s->io->aio || s->pre_bi >= 0 || !s->nfree || seq >= s->w->first + s->w->n)
		return;
	bi = s->free_[--s->nfree];
	s->ios[bi].buf = build(s, bi, seq, extra, &s->pre_slot);
	s->pre_bi = bi;
	s->pre_seq = seq;
	s->pre_extra = extra;
}

/* Wait for everything in flight, failed or not; the first error stays. */
static int drain(struct ws *s)
{
	int ret = 0;

	while (s->inflight && !s->broken) {
		int r = reap(s, s->inflight);

		if (!ret)
			ret = r;
	}
	return ret ? ret : s->werr ? -s->werr : 0;
}

/* fua and none: a window of qd writes, SUBMIT per batch, ACK per completion (fua). */
static int run_stream(struct ws *s, unsigned wflags, int acks)
{
	uint64_t next = s->w->first, end = s->w->first + s->w->n;
	int ret = 0;

	while ((next < end || s->inflight) && !ret) {
		if (next < end && s->inflight < s->qd) {
			uint64_t k = s->qd - s->inflight;
			if (k > end - next)
				k = end - next;
			ret = send_range(s, PC_MSG_SUBMIT, next, k);
			if (!ret && acks && s->r->dev.ack_early)	/* a test's fault (dev.h) */
				ret = send_range(s, PC_MSG_ACK, next, k);
			for (uint64_t i = 0; i < k && !ret; i++)
				ret = issue(s, next + i, wflags, 0);
			next += k;
		}
		if (!ret && s->io->aio && (next == end || s->inflight >= s->qd)) {
			build_ahead(s, next, 0);
			ret = reap(s, 1);
		}
		if (!ret && acks && !s->r->dev.ack_early)
			ret = ack_done(s);
		s->ndone = 0;
	}
	return ret;
}

/* fua+flush: one synchronous RWF_DSYNC write at a time. */
static int run_sync_dsync(struct ws *s)
{
	int ret = 0;
	uint32_t slot;

	for (uint64_t seq = s->w->first; seq < s->w->first + s->w->n && !ret; seq++) {
		uint8_t *buf = build(s, 0, seq, 0, &slot);

		uint64_t off;

		ret = send_range(s, PC_MSG_SUBMIT, seq, 1);
		if (!ret)
			ret = region_slot_offset(s->r, slot, &off);
		if (!ret && s->r->dev.ack_early)	/* a test's fault (dev.h): before the write */
			ret = send_range(s, PC_MSG_ACK, seq, 1);
		if (!ret)
			ret = announce(s, PC_IO_FUA, seq);
		if (!ret)
			ret = out_flush(s);
		if (!ret) {
			ret = s->r->dev.ops->write(&s->r->dev, off, buf, s->r->g.record_size, DEV_W_DSYNC);
			if (ret == -ERANGE)
				return fail(s, ret, seq, "RWF_DSYNC write");
			if (ret)
				return write_failed(s, ret, seq, off, "RWF_DSYNC write");
		}
		if (!ret && !s->r->dev.ack_early)
			ret = send_range(s, PC_MSG_ACK, seq, 1);
	}
	return ret;
}

/* relwr (acknowledged on completion) and relwr-off (the control: observed only):
 * one raw CMD23 + CMD25 per record, past the block layer. */
static int run_relwr(struct ws *s, int reliable)
{
	int ret = 0;
	uint32_t slot;

	if (!s->r->dev.ops->relwr)
		return fail(s, -EOPNOTSUPP, s->w->first, "raw eMMC write");
	for (uint64_t seq = s->w->first; seq < s->w->first + s->w->n && !ret; seq++) {
		uint8_t *buf = build(s, 0, seq, 0, &slot);
		uint64_t off;

		ret = send_range(s, PC_MSG_SUBMIT, seq, 1);
		if (!ret && reliable && s->r->dev.ack_early)	/* a test's fault (dev.h) */
			ret = send_range(s, PC_MSG_ACK, seq, 1);
		if (!ret)
			ret = region_slot_offset(s->r, slot, &off);
		if (!ret)
			ret = out_flush(s);
		if (!ret) {
			ret = s->r->dev.ops->relwr(&s->r->dev, off, buf, s->r->g.record_size, reliable);
			/* not an MMC device, no CAP_SYS_RAWIO, a card without
			 * reliable writes (-EOPNOTSUPP), or our own window: the
			 * agent cannot do relwr here, the device refused nothing */
			if (ret == -ENOTTY || ret == -EPERM || ret == -EACCES || ret == -ENOTSUP || ret == -ERANGE ||
			    ret == -EINVAL)
				return fail(s, ret, seq, reliable ? "reliable write" : "raw write");
			if (ret)
				return write_failed(s, ret, seq, off, reliable ? "reliable write" : "raw write");
		}
		if (!ret && reliable && !s->r->dev.ack_early)
			ret = send_range(s, PC_MSG_ACK, seq, 1);
	}
	return ret;
}

/* flush and journal: groups of flush_every records. */
static int run_groups(struct ws *s, int journal)
{
	uint64_t seq = s->w->first, end = s->w->first + s->w->n;
	int ret = 0;

	while (seq < end && !ret) {
		uint64_t n = end - seq, data;
		if (n > s->w->flush_every + (uint64_t)journal)
			n = s->w->flush_every + (uint64_t)journal;
		/* journal: the last seq of the group is its commit record */
		data = journal && n > 1 ? n - 1 : n;
		ret = send_range(s, PC_MSG_SUBMIT, seq, n);
		for (uint64_t i = 0; i < data && !ret; i++)
			ret = issue(s, seq + i, 0, 0);
		/* the next group's first record, or this group's commit record */
		if (!ret)
			build_ahead(s, n > data ? seq + data : seq + n, n > data ? PC_FL_COMMIT : 0);
		if (!ret)
			ret = drain(s);
		s->ndone = 0;
		if (!ret && s->r->dev.ack_early)	/* a test's fault (dev.h): before the flush */
			ret = send_range(s, PC_MSG_ACK, seq, n);
		if (!ret)
			ret = announce(s, PC_IO_FLUSH, seq + data - 1);
		if (!ret)
			ret = out_flush(s);
		if (!ret) {
			ret = s->r->dev.ops->flush(&s->r->dev);
			if (ret)	/* reported against the last record it was to make durable */
				return write_failed(s, ret, seq + data - 1, seq_off(s, seq + data - 1), "cache flush");
		}
		if (!ret && journal && n > data) {
			/* the commit record: a FUA write, after the flush (jbd2) */
			ret = issue(s, seq + data, DEV_W_DSYNC, PC_FL_COMMIT);
			if (!ret)
				ret = drain(s);
			s->ndone = 0;
		}
		if (!ret && !s->r->dev.ack_early)
			ret = send_range(s, PC_MSG_ACK, seq, n);
		seq += n;
	}
	return ret;
}

/* The work against the region: its record size, and no slot written twice. */
static int work_fits(const struct region *r, const struct pc_work *w, char *err, size_t errlen)
{
	if (w->record_size != r->g.record_size)
		return pc_fail(err, errlen, -EINVAL, "work asks for %u-byte records; the region on %s holds %u-byte records",
			 w->record_size, r->path, r->g.record_size);
	if (w->n > r->g.nslots)
		return pc_fail(err, errlen, -EINVAL, "work of %u records would write some of the %u slots twice", w->n,
			 r->g.nslots);
	return 0;
}

/* The cycle's records written the way its write mode says. */
static int run_mode(struct ws *s)
{
	switch (s->mode) {
	case PC_MODE_FUA:
		return run_stream(s, DEV_W_DSYNC, 1);
	case PC_MODE_NONE:
		return run_stream(s, 0, 0);
	case PC_MODE_FUA_FLUSH:
		return run_sync_dsync(s);
	case PC_MODE_FLUSH:
		return run_groups(s, 0);
	case PC_MODE_JOURNAL:
		return run_groups(s, 1);
	case PC_MODE_RELWR:
	case PC_MODE_RELWR_OFF:
		return run_relwr(s, s->mode == PC_MODE_RELWR);
	default:
		snprintf(s->err, s->errlen, "unknown mode %d", s->w->mode);
		return -EINVAL;
	}
}

/*
 * Completions that can no longer be waited for may still read the record
 * buffers: leak them rather than let the next allocation change what the
 * device receives.
 */
static void release_bufs(struct ws *s, struct writer_io *io)
{
	if (s->bufs == io->bufs) {
		if (s->broken) {	/* never handed out again, never freed */
			io->bufs = NULL;
			io->buflen = 0;
		}
	} else if (!s->broken) {
		free(s->bufs);
	}
}

int writer_run(struct region *r, struct writer_io *io, const struct pc_work *w,
	       const struct writer_sink *out, struct writer_result *res, char *err, size_t errlen)
{
	struct ws s = {
		.r = r, .io = io, .w = w, .out = out,
		.mode = writer_effective_mode(io, w->mode),
		.qd = w->qd < 1 ? 1 : w->qd > MAXQD ? MAXQD : w->qd,
		.err = err, .errlen = errlen,
	};
	uint64_t t0 = pc_now_ms();
	int ret;

	memset(res, 0, sizeof(*res));
	res->mode_run = s.mode;
	if ((ret = work_fits(r, w, err, errlen)))
		return ret;
	if (io->bufs && io->buflen >= (size_t)NBUF * r->g.record_size) {
		s.bufs = io->bufs;
	} else if (posix_memalign((void **)&s.bufs, 4096, (size_t)NBUF * r->g.record_size)) {
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	}
	for (int i = 0; i < NBUF; i++)
		s.free_[s.nfree++] = NBUF - 1 - i;
	s.pre_bi = -1;
	ret = run_mode(&s);
	if (ret)
		drain(&s);	/* never free buffers the kernel may still be reading */
	/* the last ACKs (and whatever a failure left gathered) */
	{
		int f = out_flush(&s);

		if (!ret)
			ret = f;
	}
	res->acked = s.acked;
	if (s.werr) {
		/* whatever else went wrong while draining, the refused write is the news */
		ret = -s.werr;
		write_error_message(&s);
	}
	if (ret && !err[0])
		snprintf(err, errlen, "sending to the host failed: %s", strerror(-ret));
	res->records = ret ? 0 : w->n;
	res->ms = pc_now_ms() - t0;
	res->write_errno = s.werr;
	res->write_lba = s.werr ? s.wlba : 0;
	res->write_seq = s.werr ? s.wseq : 0;
	res->write_op = s.werr ? s.wop : NULL;
	release_bufs(&s, io);
	return ret;
}

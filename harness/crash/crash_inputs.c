/*
 * crash_inputs.c - the inputs of one cycle's crash states, read, checked
 * and bounded (they are untrusted): its events picked, the dm-log-writes
 * log loaded (its writes, flushes and the agent's ACK marks), the base
 * image mapped copy-on-write, the write in flight made, each write sector
 * mapped to its record; and the cycle's events read. The one owner of
 * struct crash_inputs (crash_inputs.h). See crash.h and
 * docs/crash-states.md.
 */
#include "harness/crash/crash_inputs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/region.h"
#include "common/json.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "common/wlog.h"

/* ---- the cycle's events ---- */

const char *crash_msg_type(json_object *ev)
{
	json_object *m, *t;

	if (!json_object_object_get_ex(ev, "msg", &m) || !json_object_object_get_ex(m, "type", &t))
		return "";
	return json_object_get_string(t);
}

int64_t crash_ev_int(json_object *o, const char *k1, const char *k2, int64_t dflt)
{
	json_object *v = k2 ? pc_jget(pc_jget(o, k1), k2) : pc_jget(o, k1);

	return v ? json_object_get_int64(v) : dflt;
}

unsigned crash_ev_cycle(json_object *ev)
{
	int64_t c = crash_ev_int(ev, "cycle", NULL, -1);

	return c < 0 || c > UINT32_MAX ? UINT32_MAX : (unsigned)c;
}

int crash_ack_range(const struct crash_inputs *c, json_object *ev, size_t *lo, size_t *hi)
{
	json_object *m;
	int64_t f, k;
	uint64_t a, b, end = c->first + c->nrec;

	*lo = *hi = 0;
	if (strcmp(crash_msg_type(ev), "ack") || !json_object_object_get_ex(ev, "msg", &m))
		return -1;
	/* numbers an edited events.jsonl may hold: clamped, never looped over */
	f = crash_ev_int(m, "first", NULL, 0);
	k = crash_ev_int(m, "n", NULL, 0);
	if (f < 1 || k < 1 || (uint64_t)k > UINT64_MAX - (uint64_t)f)
		return 1;
	a = (uint64_t)f;
	b = a + (uint64_t)k;
	if (b <= c->first || a >= end)
		return 1;
	*lo = (size_t)((a > c->first ? a : c->first) - c->first);
	*hi = (size_t)((b < end ? b : end) - c->first);
	return a < c->first || b > end;
}

json_object *crash_verify_event(const struct crash_inputs *c, unsigned cycle, json_object *msg)
{
	json_object *ev = json_object_new_object();

	json_object_object_add(ev, "t", json_object_new_int64(c->post_t));
	json_object_object_add(ev, "board", json_object_new_string(c->in->board));
	json_object_object_add(ev, "cycle", json_object_new_int64(cycle));
	json_object_object_add(ev, "ev", json_object_new_string("verify"));
	json_object_object_add(ev, "msg", msg);
	return ev;
}

/* ---- the log, the image, the records ---- */

static const char *ev_kind(json_object *ev)
{
	json_object *k;

	return json_object_object_get_ex(ev, "ev", &k) ? json_object_get_string(k) : "";
}

static int is_scan_msg(const char *t)
{
	return !strcmp(t, "scan_begin") || !strcmp(t, "runs") || !strcmp(t, "slot") || !strcmp(t, "scan_end") ||
	       !strcmp(t, "same");
}

/* A copy of ev with another cycle (and t). */
static json_object *ev_copy(json_object *ev, unsigned cycle)
{
	json_object *c = NULL;

	if (json_object_deep_copy(ev, &c, NULL) || !c)
		return NULL;
	json_object_object_add(c, "cycle", json_object_new_int64(cycle));
	return c;
}

/* The work's policy: whether an unacknowledged torn record, or torn sector, is a violation. */
static void policy_read(struct crash_inputs *c, json_object *pol)
{
	json_object *pv;

	if (json_object_object_get_ex(pol, "torn_unacked", &pv))
		c->torn_violation = !strcmp(json_object_get_string(pv), "violation");
	if (json_object_object_get_ex(pol, "torn_sector_unacked", &pv))
		c->torn_sector_violation = !strcmp(json_object_get_string(pv), "violation");
}

/* Pick this cycle's events: the last power-on of the cycle, its hello, the
 * work and what the agent said up to the cut; the next power-on and hello. */
static int events_pick(struct crash_inputs *c, struct crash_result *r, char *err, size_t errlen)
{
	json_object *evs = c->in->events, *hello = NULL, *work = NULL, *cut = NULL, *on2 = NULL, *hello2 = NULL;
	size_t n = json_object_is_type(evs, json_type_array) ? json_object_array_length(evs) : 0, start = n;
	unsigned cyc = c->in->cycle;

	for (size_t i = 0; i < n; i++) {
		json_object *ev = json_object_array_get_idx(evs, i);

		if (crash_ev_cycle(ev) == cyc && !strcmp(ev_kind(ev), "power_on"))
			start = i;
	}
	if (start == n)
		return pc_fail(err, errlen, -ENOENT, "board %s: no power_on event of cycle %u in the events", c->in->board,
			    cyc);
	c->pre = json_object_new_array();
	c->mid = json_object_new_array();
	c->post = json_object_new_array();
	if (!c->pre || !c->mid || !c->post)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	json_object_array_add(c->pre, json_object_get(json_object_array_get_idx(evs, start)));
	for (size_t i = start + 1; i < n; i++) {
		json_object *ev = json_object_array_get_idx(evs, i);
		const char *k = ev_kind(ev), *t = crash_msg_type(ev);

		if (crash_ev_cycle(ev) == cyc && !cut) {
			if (!strcmp(k, "rx") && !strcmp(t, "hello") && !hello) {
				hello = ev;
				json_object_array_add(c->pre, json_object_get(ev));
			} else if (!strcmp(k, "work")) {
				work = ev;
				json_object_array_add(c->mid, json_object_get(ev));
			} else if (work && !strcmp(k, "rx") && !is_scan_msg(t) && strcmp(t, "hello")) {
				json_object_array_add(c->mid, json_object_get(ev));
				c->nacks += !strcmp(t, "ack");
			} else if (work && !strcmp(k, "cut")) {
				cut = ev;
				json_object_array_add(c->mid, json_object_get(ev));
			}
		} else if (crash_ev_cycle(ev) == cyc + 1) {
			if (!on2 && !strcmp(k, "power_on"))
				on2 = ev;
			else if (on2 && !hello2 && !strcmp(k, "rx") && !strcmp(t, "hello"))
				hello2 = ev;
		}
	}
	if (!hello || !work || !cut)
		return pc_fail(err, errlen, -ENOENT, "board %s cycle %u: the events hold no %s (a cycle that wrote and "
			    "was cut is needed)", c->in->board, cyc, !hello ? "hello" : !work ? "work" : "cut");
	{
		json_object *w, *v, *pol;

		json_object_object_get_ex(work, "work", &w);
		c->first = (uint64_t)crash_ev_int(work, "work", "first", 0);
		c->nrec = (size_t)crash_ev_int(work, "work", "n", 0);
		if (c->first < 1 || c->nrec < 1 || c->nrec > (1u << 20))
			return pc_fail(err, errlen, -EINVAL, "board %s cycle %u: the work names no records", c->in->board,
				    cyc);
		if (w && json_object_object_get_ex(w, "mode", &v) && pc_mode_from_name(json_object_get_string(v)) >= 0)
			snprintf(r->mode, sizeof(r->mode), "%s", json_object_get_string(v));
		c->pattern = PC_PAT_SEQUENTIAL;
		if (w && json_object_object_get_ex(w, "pattern", &v) &&
		    pc_pattern_from_name(json_object_get_string(v)) >= 0)
			c->pattern = pc_pattern_from_name(json_object_get_string(v));
		if (json_object_object_get_ex(work, "policy", &pol))
			policy_read(c, pol);
	}
	/* the next boot: as recorded, or made from this one's */
	json_object_array_add(c->post, on2 ? json_object_get(on2) : ev_copy(json_object_array_get_idx(evs, start), cyc + 1));
	if (hello2) {
		json_object_array_add(c->post, json_object_get(hello2));
	} else {
		json_object *h = ev_copy(hello, cyc + 1), *m;

		if (h && json_object_object_get_ex(h, "msg", &m))
			json_object_object_add(m, "boot_id", json_object_new_string("crash-states-next-boot"));
		json_object_array_add(c->post, h);
	}
	c->post_t = crash_ev_int(hello2 ? hello2 : cut, "t", NULL, 0);
	return 0;
}

/* The sim commits its superblock (magic, entry count) after each whole
 * entry and trims an uncommitted tail (docs/sim.md): a kept log without
 * one, or holding another number of entries, is damaged input, never a
 * finding against the agent's ordering. */
static int log_super_check(struct crash_inputs *c, int fd, size_t ne, char *err, size_t errlen)
{
	unsigned char b[WLOG_HDR_BYTES];
	struct wlog_super sb = { 0 };

	if (pread(fd, b, sizeof(b), 0) == (ssize_t)sizeof(b))
		wlog_super_get(b, &sb);
	if (sb.magic == WLOG_MAGIC && sb.entries == ne)
		return 0;
	return pc_fail(err, errlen, -EPROTO, "log %s: %s (damaged, or not a log the sim kept)", c->in->log,
			  sb.magic != WLOG_MAGIC ? "no dm-log-writes superblock" :
			  "its superblock's entry count is not the entries it holds");
}

static int log_bad(struct crash_inputs *c, size_t i, const char *field, uint64_t v, const char *why, char *err,
		   size_t errlen)
{
	return pc_fail(err, errlen, -EPROTO, "log %s: entry %zu: %s %" PRIu64 " %s (damaged, or not a log the sim "
			  "kept)", c->in->log, i, field, v, why);
}

/* One entry's header, bounded: a write of 1.. sectors, not past 2^64 once in 512-byte sectors, its
 * data_len 0 (the kernel's and QEMU's logs) or its bytes (the sim's); a flush of none. */
static int log_entry_check(struct crash_inputs *c, int fd, const struct wlog_entry *e, size_t i, uint32_t ss, char *err,
			   size_t errlen)
{
	unsigned char h[WLOG_HDR_BYTES];
	struct wlog_hdr eh;
	uint64_t dlen;

	if (e->flags & (WLOG_DISCARD | WLOG_MARK))
		return 0;	/* skipped: they size nothing */
	if (pc_pread_all(fd, h, sizeof(h), e->data - (off_t)ss))
		return pc_fail(err, errlen, -EIO, "log %s: cannot read entry %zu", c->in->log, i);
	wlog_hdr_get(h, &eh);
	dlen = eh.data_len;
	if (e->flags & WLOG_FLUSH)
		return e->nsect ? log_bad(c, i, "nr_sectors", e->nsect, "in a flush", err, errlen) :
		       dlen ? log_bad(c, i, "data_len", dlen, "in a flush", err, errlen) : 0;
	if (!e->nsect)
		return log_bad(c, i, "nr_sectors", 0, "in a write", err, errlen);
	if (e->sector > CRASH_MAX_MEDIA / ss)
		return log_bad(c, i, "sector", e->sector, "is past any device", err, errlen);
	if (dlen && dlen != e->nsect * ss)
		return log_bad(c, i, "data_len", dlen, "is not its sectors' bytes", err, errlen);
	return 0;
}

/* The log's entries checked, bounded and counted (c->nw, c->npp, *bytes), against its cycle.json. */
static int log_count(struct crash_inputs *c, int fd, const struct wlog_entry *e, size_t ne, uint32_t ss, size_t *bytes,
		     char *err, size_t errlen)
{
	const struct crash_kept *k = c->in->kept;
	uint64_t fl = 0, fua = 0;
	struct stat st;
	int rc;

	for (size_t i = 0; i < ne; i++) {
		uint64_t n = e[i].nsect * (ss / 512);

		if ((rc = log_entry_check(c, fd, &e[i], i, ss, err, errlen)))
			return rc;
		if (e[i].flags & WLOG_FLUSH || (e[i].flags & WLOG_FUA && !(e[i].flags & (WLOG_DISCARD | WLOG_MARK))))
			c->npp++;
		fl += !!(e[i].flags & WLOG_FLUSH);
		c->capmk += !!(e[i].flags & WLOG_MARK);
		if (e[i].flags & (WLOG_FLUSH | WLOG_DISCARD | WLOG_MARK))
			continue;
		if (c->nw >= CRASH_MAX_WRITES || n > (CRASH_MAX_BYTES - *bytes) / 512)
			return pc_fail(err, errlen, -E2BIG, "log %s: more than %u writes or %u MiB of them in one cycle",
					  c->in->log, CRASH_MAX_WRITES, CRASH_MAX_BYTES >> 20);
		fua += !!(e[i].flags & WLOG_FUA);
		*bytes += n * 512;
		c->nw++;
	}
	if (!k || !k->have_counts)
		return 0;
	if (fstat(fd, &st) < 0)
		return pc_fail(err, errlen, -errno, "log %s: %s", c->in->log, strerror(errno));
	if (k->marks != c->capmk)
		return pc_fail(err, errlen, -EPROTO, "%s: field marks: %" PRIu64 ", the log %s holds %zu (damaged, or "
			       "not the sim's)", k->path, k->marks, c->in->log, c->capmk);
	if (k->log_entries != ne || k->writes != c->nw || k->flushes != fl || k->fua_writes != fua ||
	    k->log_bytes != (uint64_t)st.st_size)
		return pc_fail(err, errlen, -EPROTO, "%s: field %s: %" PRIu64 ", the log %s holds %" PRIu64
				  " (damaged, or not the sim's)", k->path,
				  k->log_entries != ne ? "log_entries" : k->writes != c->nw ? "writes" :
				  k->flushes != fl ? "flushes" : k->fua_writes != fua ? "fua_writes" : "log_bytes",
				  k->log_entries != ne ? k->log_entries : k->writes != c->nw ? k->writes :
				  k->flushes != fl ? k->flushes : k->fua_writes != fua ? k->fua_writes : k->log_bytes,
				  c->in->log,
				  k->log_entries != ne ? (uint64_t)ne : k->writes != c->nw ? (uint64_t)c->nw :
				  k->flushes != fl ? fl : k->fua_writes != fua ? fua : (uint64_t)st.st_size);
	return 0;
}

/* One mark entry of the log (its header sector at e->data - ss): a pc-ack mark into c->mk, any
 * other mark ignored; a pc-ack mark that is not "pc-ack FIRST N" is damaged input. */
static int mark_read(struct crash_inputs *c, int fd, const struct wlog_entry *e, size_t i, uint32_t ss, char *err,
		     size_t errlen)
{
	unsigned char h[WLOG_SECT];
	char text[WLOG_SECT];
	struct wlog_hdr eh;
	uint64_t dlen, first, n;
	int used = 0;

	if (pc_pread_all(fd, h, sizeof(h), e->data - (off_t)ss))
		return pc_fail(err, errlen, -EIO, "log %s: cannot read entry %zu", c->in->log, i);
	wlog_hdr_get(h, &eh);
	dlen = eh.data_len;
	if (dlen > sizeof(h) - WLOG_HDR_BYTES)
		return pc_fail(err, errlen, -EPROTO, "log %s: entry %zu: a mark of %" PRIu64 " bytes, past its sector "
			       "(damaged, or not a log the sim kept)", c->in->log, i, dlen);
	memcpy(text, h + WLOG_HDR_BYTES, (size_t)dlen);
	text[dlen] = 0;
	if (strncmp(text, PC_ACK_MARK " ", strlen(PC_ACK_MARK) + 1))
		return 0;
	if (sscanf(text + strlen(PC_ACK_MARK) + 1, "%" SCNu64 " %" SCNu64 "%n", &first, &n, &used) != 2 ||
	    (size_t)used != strlen(text + strlen(PC_ACK_MARK) + 1) || first < 1 || n < 1 || n > (1u << 20))
		return pc_fail(err, errlen, -EPROTO, "log %s: entry %zu: mark '%.64s' is not '" PC_ACK_MARK
			       " FIRST N' (damaged, or not a log the sim kept)", c->in->log, i, text);
	c->mk[c->nmk++] = (struct cmark){ .entry = i, .first = first, .n = n };
	return 0;
}

/* The log's writes and their bytes, and the write in flight's place after them. */
static int log_fill(struct crash_inputs *c, int fd, const struct wlog_entry *e, size_t ne, uint32_t ss, char *err,
		    size_t errlen)
{
	size_t bytes = 0, last_flush = 0;

	for (size_t i = 0; i < ne; i++)
		if (e[i].flags & WLOG_FLUSH)
			last_flush = i + 1;
	c->nw = c->npp = 0;
	for (size_t i = 0; i < ne; i++) {
		struct cwrite *w = &c->w[c->nw];
		int fua = (e[i].flags & WLOG_FUA) != 0;

		if (e[i].flags & WLOG_MARK && !(e[i].flags & WLOG_DISCARD)) {
			int rc = mark_read(c, fd, &e[i], i, ss, err, errlen);

			if (rc)
				return rc;
		}
		if (e[i].flags & (WLOG_DISCARD | WLOG_MARK))
			continue;
		if (e[i].flags & WLOG_FLUSH || fua)
			c->pp[c->npp++] = i;
		if (e[i].flags & WLOG_FLUSH)
			continue;
		w->lba = e[i].sector * (ss / 512);
		w->n = e[i].nsect * (ss / 512);
		w->entry = i;
		w->fua = fua;
		/* durable from the log alone: FUA, or a flush logged after it */
		w->durable = fua || i < last_flush;
		w->sect0 = bytes / 512;
		if (pc_pread_all(fd, c->data + bytes, (size_t)w->n * 512, e[i].data))
			return pc_fail(err, errlen, -EIO, "log %s: cannot read the data of entry %zu", c->in->log, i);
		bytes += (size_t)w->n * 512;
		c->nw++;
	}
	/* the write in flight at the cut: after every logged one, never completed, so volatile; its
	 * bytes are made once the geometry is known (in_flight_fill) */
	if (bytes < c->nsect * 512) {
		struct cwrite *w = &c->w[c->nw++];

		w->lba = c->in->in_flight.lba;
		w->n = c->in->in_flight.n;
		w->entry = ne;
		w->sect0 = bytes / 512;
		c->in_flight = 1;
	}
	return 0;
}

static int log_load(struct crash_inputs *c, char *err, size_t errlen)
{
	const struct crash_in_flight *f = &c->in->in_flight;
	struct wlog_entry *e = NULL;
	size_t ne = 0, bytes = 0;
	uint32_t ss = 512;
	int fd, rc;

	fd = open(c->in->log, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pc_fail(err, errlen, -errno, "log %s: %s", c->in->log, strerror(errno));
	if ((rc = wlog_read(fd, c->in->log, &ss, &e, &ne, err, errlen)) ||
	    (rc = log_super_check(c, fd, ne, err, errlen)) || (rc = log_count(c, fd, e, ne, ss, &bytes, err, errlen)))
		goto out;
	if (f->valid && (!f->n || f->n > (CRASH_MAX_BYTES - bytes) / 512)) {
		rc = pc_fail(err, errlen, -E2BIG, "%s: field in_flight.n: %" PRIu64 " sectors, past %u MiB with the "
				"log's writes (damaged input)", c->in->kept ? c->in->kept->path : "the write in flight",
				f->n, CRASH_MAX_BYTES >> 20);
		goto out;
	}
	if (f->valid)
		bytes += f->n * 512;
	c->w = calloc(c->nw + 1, sizeof(*c->w));
	c->pp = calloc(c->npp ? c->npp : 1, sizeof(*c->pp));
	c->mk = calloc(c->capmk ? c->capmk : 1, sizeof(*c->mk));
	c->nsect = bytes / 512;
	c->data = malloc(bytes ? bytes : 1);
	if (!c->w || !c->pp || !c->mk || !c->data)
		rc = pc_fail(err, errlen, -ENOMEM, "out of memory");
	else
		rc = log_fill(c, fd, e, ne, ss, err, errlen);
out:
	free(e);
	close(fd);
	return rc;
}

static int ext_cmp(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	return x->lba < y->lba ? -1 : x->lba > y->lba;
}

/* The union of the writes' ranges, merged; each write's place in it. */
static int extents_make(struct crash_inputs *c, int bfd, uint64_t img_sect, char *err, size_t errlen)
{
	struct extent *t = calloc(c->nw ? c->nw : 1, sizeof(*t));
	size_t n = 0;

	if (!t)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < c->nw; i++) {
		if (c->w[i].lba > img_sect || c->w[i].n > img_sect - c->w[i].lba) {
			free(t);
			return pc_fail(err, errlen, -ERANGE, "log %s: a write of sectors %" PRIu64 "+%" PRIu64
				    " past the end of the image %s (%" PRIu64 " sectors)", c->in->log, c->w[i].lba,
				    c->w[i].n, c->in->base, img_sect);
		}
		if (c->w[i].n)
			t[n++] = (struct extent){ .lba = c->w[i].lba, .n = c->w[i].n };
	}
	qsort(t, n, sizeof(*t), ext_cmp);
	c->next = 0;
	for (size_t i = 0; i < n; i++) {
		struct extent *x = c->next ? &t[c->next - 1] : NULL;

		if (x && t[i].lba <= x->lba + x->n) {
			if (t[i].lba + t[i].n > x->lba + x->n)
				x->n = t[i].lba + t[i].n - x->lba;
		} else {
			t[c->next++] = t[i];
		}
	}
	c->ext = t;
	for (size_t i = 0; i < c->next; i++) {
		t[i].base = malloc((size_t)t[i].n * 512);
		t[i].buf = malloc((size_t)t[i].n * 512);
		if (!t[i].base || !t[i].buf)
			return pc_fail(err, errlen, -ENOMEM, "out of memory");
		if (pc_pread_all(bfd, t[i].base, (size_t)t[i].n * 512, (off_t)(t[i].lba * 512)))
			return pc_fail(err, errlen, -EIO, "image %s: cannot read sectors %" PRIu64 "+%" PRIu64, c->in->base,
				    t[i].lba, t[i].n);
	}
	for (size_t i = 0; i < c->nw; i++) {
		size_t lo = 0, hi = c->next;

		while (hi - lo > 1) {
			size_t mid = (lo + hi) / 2;

			if (t[mid].lba <= c->w[i].lba)
				lo = mid;
			else
				hi = mid;
		}
		c->w[i].ext = lo;
		c->w[i].ext_off = (size_t)(c->w[i].lba - (c->next ? t[lo].lba : 0)) * 512;
	}
	return 0;
}

/*
 * The states' device: the base image mapped copy-on-write, read by the
 * agent's scan through a dev_ops table of one synchronous read. The image
 * file is never written; a state is made by copying bytes into the map.
 * (The scan's synchronous reads give the same lines as its pipelined ones:
 * tests/unit/test_scan.c.)
 */
static int mem_read(struct dev *d, uint64_t off, void *buf, size_t len)
{
	if (off > d->size || len > d->size - off)
		return -EIO;
	memcpy(buf, (const unsigned char *)d->priv + off, len);
	return 0;
}

static const struct dev_ops mem_ops = { .name = "crash-states image", .read = mem_read };

static int image_make(struct crash_inputs *c, char *err, size_t errlen)
{
	struct region_opts ro = { 0 };
	struct region real;
	json_object *hello = json_object_array_get_idx(c->pre, 1), *m = NULL, *rg = NULL, *v;
	uint64_t region_off = 0, region_len = 0;
	struct stat st;
	int bfd, rc = 0;

	bfd = open(c->in->base, O_RDONLY | O_CLOEXEC);
	if (bfd < 0 || fstat(bfd, &st) < 0) {
		rc = pc_fail(err, errlen, -errno, "image %s: %s", c->in->base, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 512 || st.st_size % 512) {
		rc = pc_fail(err, errlen, -EINVAL, "image %s: not a regular file of whole 512-byte sectors", c->in->base);
		goto out;
	}
	if (json_object_object_get_ex(hello, "msg", &m) && json_object_object_get_ex(m, "region", &rg)) {
		if (json_object_object_get_ex(rg, "offset", &v))
			region_off = (uint64_t)json_object_get_int64(v);
		if (json_object_object_get_ex(rg, "bytes", &v))
			region_len = (uint64_t)json_object_get_int64(v);
	}
	if (region_off % 512 || region_off >= (uint64_t)st.st_size) {
		rc = pc_fail(err, errlen, -EINVAL, "the hello's region offset %" PRIu64 " does not fit image %s",
			  region_off, c->in->base);
		goto out;
	}
	/* the agent's own open checks the superblocks and gives the geometry */
	ro.spec = c->in->base;
	ro.offset = region_off;
	ro.length = region_len;
	ro.allow_whole_disk = 1;
	rc = region_open(&real, &ro, 0, err, errlen);
	if (rc)
		goto out;
	c->reg.g = real.g;
	c->reg.off = real.off;
	snprintf(c->reg.path, sizeof(c->reg.path), "%s", c->in->base);
	region_close(&real);
	c->map_len = (size_t)st.st_size;
	c->map = mmap(NULL, c->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE, bfd, 0);
	if (c->map == MAP_FAILED) {
		c->map = NULL;
		rc = pc_fail(err, errlen, -errno, "image %s: cannot map %zu bytes: %s", c->in->base, c->map_len,
			  strerror(errno));
		goto out;
	}
	c->reg.dev.ops = &mem_ops;
	c->reg.dev.size = c->map_len;
	c->reg.dev.whi = c->map_len;
	c->reg.dev.fd = -1;
	c->reg.dev.priv = c->map;
	c->off_lba = c->reg.off / 512;
	c->spr = pc_geom_spr(&c->reg.g);
	rc = extents_make(c, bfd, (uint64_t)st.st_size / 512, err, errlen);
out:
	if (bfd >= 0)
		close(bfd);
	return rc;
}

static int kept_bad(struct crash_inputs *c, const char *field, uint64_t v, const char *what, uint64_t want, char *err,
		    size_t errlen)
{
	return pc_fail(err, errlen, -EPROTO, "%s: field %s: %" PRIu64 ", %s %" PRIu64 " (damaged, or not the "
			  "sim's)", c->in->kept->path, field, v, what, want);
}

/* The base image and its region are the ones cycle.json names; every write of the log is in the region. */
static int inputs_check(struct crash_inputs *c, char *err, size_t errlen)
{
	const struct crash_kept *k = c->in->kept;
	const struct pc_geom *g = &c->reg.g;
	uint64_t lo = c->reg.off / 512, hi = lo + g->region_bytes / 512;
	char u[37];

	for (size_t i = 0; i < c->nw - (size_t)c->in_flight; i++)
		if (c->w[i].lba < lo || c->w[i].lba > hi || c->w[i].n > hi - c->w[i].lba)
			return pc_fail(err, errlen, -ERANGE, "log %s: entry %zu: sectors %" PRIu64 "+%" PRIu64 " are not "
					  "in the region (sectors %" PRIu64 "+%" PRIu64 " of %s)", c->in->log,
					  c->w[i].entry, c->w[i].lba, c->w[i].n, lo, hi - lo, c->in->base);
	if (!k)
		return 0;
	if (k->have_media && k->media_bytes != c->map_len)
		return kept_bad(c, "media_bytes", k->media_bytes, "the base image's bytes are", c->map_len, err, errlen);
	if (!k->have_region)
		return 0;
	pc_uuid_format(g->uuid, u);
	if (strcmp(k->region_uuid, u))
		return pc_fail(err, errlen, -EPROTO, "%s: field region.uuid: %s, the base image's region is %s "
				  "(damaged, or not the sim's)", k->path, k->region_uuid, u);
	if (k->region_seed != g->seed)
		return kept_bad(c, "region.seed", k->region_seed, "the base image's region has", g->seed, err, errlen);
	if (k->record_size != g->record_size)
		return kept_bad(c, "region.record_size", k->record_size, "the base image's region has", g->record_size,
				err, errlen);
	if (k->nslots != g->nslots)
		return kept_bad(c, "region.nslots", k->nslots, "the base image's region has", g->nslots, err, errlen);
	if (k->region_bytes && k->region_bytes != g->region_bytes)
		return kept_bad(c, "region.region_bytes", k->region_bytes, "the base image's region has",
				g->region_bytes, err, errlen);
	return 0;
}

/* The bytes of the write in flight: the records it was writing, made from the region's seed. */
static int in_flight_fill(struct crash_inputs *c, const struct crash_result *r, char *err, size_t errlen)
{
	const struct crash_in_flight *f = &c->in->in_flight;
	struct cwrite *w = &c->w[c->nw - 1];
	uint64_t slot0 = c->off_lba + PC_SB_RESERVE_SECT;
	const char *ifp = c->in->kept ? c->in->kept->path : "the write in flight";

	if (!c->in_flight)
		return 0;
	if (w->lba < slot0 || (w->lba - slot0) % c->spr || w->n % c->spr ||
	    (w->lba - slot0) / c->spr + w->n / c->spr > c->reg.g.nslots)
		return pc_fail(err, errlen, -EINVAL, "%s: field in_flight.lba: the write in flight (sectors %" PRIu64
				  "+%" PRIu64 ") is not whole records of the region", ifp, w->lba, w->n);
	if (f->seq < c->first || f->seq - c->first >= c->nrec || w->n / c->spr > c->nrec - (f->seq - c->first))
		return pc_fail(err, errlen, -EINVAL, "%s: field in_flight.seq: %" PRIu64 "+%" PRIu64 " records, not "
				  "among the cycle's %" PRIu64 "+%zu", ifp, f->seq, w->n / c->spr, c->first, c->nrec);
	if (f->cycle != c->in->cycle)
		return pc_fail(err, errlen, -EINVAL, "%s: field in_flight.cycle: %" PRIu32 ", not the cycle judged (%u)",
				  ifp, f->cycle, c->in->cycle);
	if (r->mode[0] && (int)(f->flags & PC_FL_MODE_MASK) != pc_mode_from_name(r->mode))
		return pc_fail(err, errlen, -EINVAL, "%s: field in_flight.flags: %u, not the mode of the cycle's work "
				  "(%s)", ifp, f->flags, r->mode);
	for (uint64_t k = 0; k < w->n / c->spr; k++)
		pc_record_build(c->data + (w->sect0 + k * c->spr) * 512, &c->reg.g,
				(uint32_t)((w->lba - slot0) / c->spr + k), f->seq + k, f->cycle, f->flags);
	return 0;
}

/* Which record sector each write sector lands on, and whether it holds that record's new bytes. */
static int map_sectors(struct crash_inputs *c, char *err, size_t errlen)
{
	const struct pc_geom *g = &c->reg.g;
	uint64_t slot0 = c->off_lba + PC_SB_RESERVE_SECT;

	c->rec = calloc(c->nrec, sizeof(*c->rec));
	c->rec_of_slot = malloc((size_t)g->nslots * sizeof(*c->rec_of_slot));
	c->tgt = malloc((c->nsect ? c->nsect : 1) * sizeof(*c->tgt));
	c->isnew = calloc(c->nsect ? c->nsect : 1, 1);
	c->vol = calloc(c->nw ? c->nw : 1, sizeof(*c->vol));
	if (!c->rec || !c->rec_of_slot || !c->tgt || !c->isnew || !c->vol)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	if (c->nrec > g->nslots)
		return pc_fail(err, errlen, -EINVAL, "cycle %u: %zu records in a region of %u slots (a ring that wraps in "
			    "one cycle is not handled)", c->in->cycle, c->nrec, g->nslots);
	for (uint32_t s = 0; s < g->nslots; s++)
		c->rec_of_slot[s] = -1;
	for (size_t i = 0; i < c->nrec; i++) {
		c->rec[i].seq = c->first + i;
		c->rec[i].slot = pc_slot_of_seq(g, (enum pc_pattern)c->pattern, c->first + i);
		c->rec_of_slot[c->rec[i].slot] = (int32_t)i;
	}
	for (size_t i = 0; i < c->nw; i++) {
		const struct cwrite *w = &c->w[i];

		for (uint64_t k = 0; k < w->n; k++) {
			size_t s = w->sect0 + k;
			uint64_t lba = w->lba + k;
			struct pc_sector_hdr h;
			int32_t rec;
			uint32_t idx;

			c->tgt[s] = -1;
			if (lba < slot0 || (lba - slot0) / c->spr >= g->nslots)
				continue;
			rec = c->rec_of_slot[(lba - slot0) / c->spr];
			if (rec < 0)
				continue;
			idx = (uint32_t)((lba - slot0) % c->spr);
			c->tgt[s] = rec * (int32_t)c->spr + (int32_t)idx;
			pc_sector_hdr_decode(c->data + s * 512, &h);
			c->isnew[s] = h.seq == c->rec[rec].seq && h.idx == idx && h.cycle == c->in->cycle;
		}
		if (!w->durable)
			c->vol[c->nvol++] = i;
	}
	return 0;
}

/* The ACKs before the cut, per record. */
static void acks_read(struct crash_inputs *c)
{
	size_t n = json_object_array_length(c->mid), lo, hi;

	for (size_t i = 0; i < n; i++)
		if (crash_ack_range(c, json_object_array_get_idx(c->mid, i), &lo, &hi) >= 0)
			for (size_t r = lo; r < hi; r++)
				c->rec[r].acked = 1;
}

static int pos_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The states' partial scan: the records' slots and every slot a write touched. */
static int verify_make(struct crash_inputs *c, char *err, size_t errlen)
{
	const struct pc_geom *g = &c->reg.g;
	uint64_t slot0 = c->off_lba + PC_SB_RESERVE_SECT;
	size_t cap = c->nrec + c->nsect, n = 0, nr = 0;
	uint32_t *pos = malloc((cap ? cap : 1) * sizeof(*pos));
	struct pc_posrange *r = NULL;
	json_object *msg;

	if (!pos)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < c->nrec; i++)
		pos[n++] = pc_pos_of_slot(g, (enum pc_pattern)c->pattern, c->rec[i].slot);
	for (size_t i = 0; i < c->nw; i++)
		for (uint64_t k = 0; k < c->w[i].n; k++) {
			uint64_t lba = c->w[i].lba + k;

			if (lba >= slot0 && (lba - slot0) / c->spr < g->nslots)
				pos[n++] = pc_pos_of_slot(g, (enum pc_pattern)c->pattern,
							  (uint32_t)((lba - slot0) / c->spr));
		}
	qsort(pos, n, sizeof(*pos), pos_cmp);
	r = calloc(n ? n : 1, sizeof(*r));
	if (!r) {
		free(pos);
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		if (nr && r[nr - 1].pos + r[nr - 1].n == pos[i])
			r[nr - 1].n++;
		else if (!nr || r[nr - 1].pos + r[nr - 1].n <= pos[i])
			r[nr++] = (struct pc_posrange){ pos[i], 1 };
	}
	msg = nr && nr <= PC_PROTO_MAX_RANGES ? pc_msg_verify_ranges(c->pattern, r, (uint32_t)nr) :
						 pc_msg_verify(c->pattern, 1);
	c->verify = msg ? crash_verify_event(c, c->in->cycle + 1, msg) : NULL;
	/* the scan the next boot's engine is given: these positions */
	free(pos);
	free(r);
	return c->verify ? 0 : pc_fail(err, errlen, -ENOMEM, "out of memory");
}

void crash_inputs_free(struct crash_inputs *c)
{
	for (size_t i = 0; c->ext && i < c->next; i++) {
		free(c->ext[i].base);
		free(c->ext[i].buf);
	}
	free(c->ext);
	if (c->map)
		munmap(c->map, c->map_len);
	free(c->w);
	free(c->pp);
	free(c->mk);
	free(c->data);
	free(c->tgt);
	free(c->isnew);
	free(c->rec);
	free(c->rec_of_slot);
	free(c->vol);
	json_object_put(c->pre);
	json_object_put(c->mid);
	json_object_put(c->post);
	json_object_put(c->verify);
}

int crash_inputs_load(struct crash_inputs *c, const struct crash_input *in, struct crash_result *r, char *err,
		      size_t errlen)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->in = in;
	if ((rc = events_pick(c, r, err, errlen)) || (rc = log_load(c, err, errlen)) ||
	    (rc = image_make(c, err, errlen)) || (rc = inputs_check(c, err, errlen)) ||
	    (rc = in_flight_fill(c, r, err, errlen)) || (rc = map_sectors(c, err, errlen)) ||
	    (rc = verify_make(c, err, errlen)))
		return rc;
	acks_read(c);
	return 0;
}

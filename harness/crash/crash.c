/*
 * crash.c - every crash state of one cycle, built, scanned and judged. See crash.h
 * and docs/crash-states.md.
 */
#include "harness/crash/crash.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/region.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "harness/engine/engine.h"
#include "relay/vcache.h"

static const char *const mode_names[CRASH_M_MAX] = { "subsets", "tears", "cuts", "illegal", "observed" };

const char *crash_mode_name(enum crash_mode m)
{
	return (unsigned)m < CRASH_M_MAX ? mode_names[m] : "?";
}

void crash_opts_default(struct crash_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->exhaustive = CRASH_DEFAULT_EXHAUSTIVE;
	o->random = CRASH_DEFAULT_RANDOM;
	o->seed = 1;
}

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static double clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* One write of the log, in 512-byte sectors. */
struct cwrite {
	uint64_t lba, n;
	size_t entry;		/* its index among the log's entries */
	int fua, durable;
	size_t sect0;		/* its first sector in the per-sector tables */
	size_t ext;		/* the extent holding it, and its byte offset there */
	size_t ext_off;
};

/* One record the cycle's work names. */
struct crec {
	uint64_t seq;
	uint32_t slot;
	int acked;		/* an ACK before the cut named it */
};

struct extent {
	uint64_t lba, n;
	unsigned char *base;	/* the base image's bytes */
	unsigned char *buf;	/* the state's */
};

struct ctx {
	const struct crash_input *in;
	const struct crash_opts *o;
	struct crash_result *r;
	/* the log */
	struct cwrite *w;
	size_t nw;
	size_t *pp;		/* persistence points: entry indexes of flushes and FUA writes */
	size_t npp;
	unsigned char *data;	/* every write's bytes, sector by sector */
	int32_t *tgt;		/* per write sector: record sector rec * spr + idx, or -1 */
	uint8_t *isnew;		/* per write sector: it holds that record sector's new bytes */
	size_t nsect;
	struct extent *ext;
	size_t next;
	/* the region */
	struct region reg;	/* its device is the map */
	unsigned char *map;
	size_t map_len;
	uint64_t off_lba;
	uint32_t spr;
	int pattern, torn_violation;
	int in_flight;		/* the last write is the one in flight at the cut */
	/* the cycle */
	struct crec *rec;
	size_t nrec;
	int32_t *rec_of_slot;
	uint64_t first;
	json_object *pre;	/* events to feed before the base scan (power_on, hello) */
	json_object *mid;	/* work, rx and cut events */
	json_object *post;	/* power_on, hello of the next boot */
	json_object *base_scan;	/* verify and the base image's scan, as events */
	json_object *verify;	/* the states' verify event */
	size_t nacks;		/* ACK events in mid */
	int64_t post_t;
	/* the state being judged */
	uint8_t *keep;		/* per write sector */
	uint8_t *recnew;	/* per record sector: holds its new bytes */
	uint8_t *racked;	/* per record: acknowledged in this state */
	size_t ack_limit;
	json_object *verdict;
	int no_truth;		/* the state's truth is not known: no notes of its differences */
	uint64_t cap_lo, cap_hi;	/* findings of these seqs are kept in captured */
	char *captured;
	struct engine *eng;
	int feed_rc;
	char feed_err[256];
	/* subsets enumerated (for the observed state) */
	uint8_t *seen;
	size_t nseen, capseen;
	unsigned nvol;
	size_t *vol;		/* the volatile writes' indexes */
};

/* ---- inputs ---- */

static const char *msg_type(json_object *ev)
{
	json_object *m, *t;

	if (!json_object_object_get_ex(ev, "msg", &m) || !json_object_object_get_ex(m, "type", &t))
		return "";
	return json_object_get_string(t);
}

static const char *ev_kind(json_object *ev)
{
	json_object *k;

	return json_object_object_get_ex(ev, "ev", &k) ? json_object_get_string(k) : "";
}

static int64_t ev_int(json_object *o, const char *k1, const char *k2, int64_t dflt)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k1, &v))
		return dflt;
	if (k2 && !json_object_object_get_ex(v, k2, &v))
		return dflt;
	return json_object_get_int64(v);
}

static unsigned ev_cycle(json_object *ev)
{
	int64_t c = ev_int(ev, "cycle", NULL, -1);

	return c < 0 || c > UINT32_MAX ? UINT32_MAX : (unsigned)c;
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

/* Pick this cycle's events: the last power-on of the cycle, its hello, the
 * work and what the agent said up to the cut; the next power-on and hello. */
static int events_pick(struct ctx *c, char *err, size_t errlen)
{
	json_object *evs = c->in->events, *hello = NULL, *work = NULL, *cut = NULL, *on2 = NULL, *hello2 = NULL;
	size_t n = json_object_is_type(evs, json_type_array) ? json_object_array_length(evs) : 0, start = n;
	unsigned cyc = c->in->cycle;

	for (size_t i = 0; i < n; i++) {
		json_object *ev = json_object_array_get_idx(evs, i);

		if (ev_cycle(ev) == cyc && !strcmp(ev_kind(ev), "power_on"))
			start = i;
	}
	if (start == n)
		return fail(err, errlen, -ENOENT, "board %s: no power_on event of cycle %u in the events", c->in->board,
			    cyc);
	c->pre = json_object_new_array();
	c->mid = json_object_new_array();
	c->post = json_object_new_array();
	if (!c->pre || !c->mid || !c->post)
		return fail(err, errlen, -ENOMEM, "out of memory");
	json_object_array_add(c->pre, json_object_get(json_object_array_get_idx(evs, start)));
	for (size_t i = start + 1; i < n; i++) {
		json_object *ev = json_object_array_get_idx(evs, i);
		const char *k = ev_kind(ev), *t = msg_type(ev);

		if (ev_cycle(ev) == cyc && !cut) {
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
		} else if (ev_cycle(ev) == cyc + 1) {
			if (!on2 && !strcmp(k, "power_on"))
				on2 = ev;
			else if (on2 && !hello2 && !strcmp(k, "rx") && !strcmp(t, "hello"))
				hello2 = ev;
		}
	}
	if (!hello || !work || !cut)
		return fail(err, errlen, -ENOENT, "board %s cycle %u: the events hold no %s (a cycle that wrote and "
			    "was cut is needed)", c->in->board, cyc, !hello ? "hello" : !work ? "work" : "cut");
	{
		json_object *w, *v, *pol, *pv;

		json_object_object_get_ex(work, "work", &w);
		c->first = (uint64_t)ev_int(work, "work", "first", 0);
		c->nrec = (size_t)ev_int(work, "work", "n", 0);
		if (c->first < 1 || c->nrec < 1 || c->nrec > (1u << 20))
			return fail(err, errlen, -EINVAL, "board %s cycle %u: the work names no records", c->in->board,
				    cyc);
		if (w && json_object_object_get_ex(w, "mode", &v) && pc_mode_from_name(json_object_get_string(v)) >= 0)
			snprintf(c->r->mode, sizeof(c->r->mode), "%s", json_object_get_string(v));
		c->pattern = PC_PAT_SEQUENTIAL;
		if (w && json_object_object_get_ex(w, "pattern", &v) &&
		    pc_pattern_from_name(json_object_get_string(v)) >= 0)
			c->pattern = pc_pattern_from_name(json_object_get_string(v));
		if (json_object_object_get_ex(work, "policy", &pol) && json_object_object_get_ex(pol, "torn_unacked", &pv))
			c->torn_violation = !strcmp(json_object_get_string(pv), "violation");
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
	c->post_t = ev_int(hello2 ? hello2 : cut, "t", NULL, 0);
	return 0;
}

static int log_load(struct ctx *c, char *err, size_t errlen)
{
	struct vc_entry *e = NULL;
	size_t ne = 0, bytes = 0, last_flush = 0;
	uint32_t ss = 512;
	int fd, rc;

	fd = open(c->in->log, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(err, errlen, -errno, "log %s: %s", c->in->log, strerror(errno));
	rc = vc_log_read(fd, c->in->log, &ss, &e, &ne, err, errlen);
	if (rc)
		goto out;
	for (size_t i = 0; i < ne; i++)
		if (e[i].flags & LOG_FLUSH_FLAG)
			last_flush = i + 1;
	for (size_t i = 0; i < ne; i++) {
		uint64_t n = e[i].nsect * (ss / 512);

		if (e[i].flags & LOG_FLUSH_FLAG || (e[i].flags & LOG_FUA_FLAG && !(e[i].flags & (LOG_DISCARD_FLAG | LOG_MARK_FLAG))))
			c->npp++;
		if (e[i].flags & (LOG_FLUSH_FLAG | LOG_DISCARD_FLAG | LOG_MARK_FLAG))
			continue;
		if (c->nw >= CRASH_MAX_WRITES || n > (CRASH_MAX_BYTES - bytes) / 512) {
			rc = fail(err, errlen, -E2BIG, "log %s: more than %u writes or %u MiB of them in one cycle",
				  c->in->log, CRASH_MAX_WRITES, CRASH_MAX_BYTES >> 20);
			goto out;
		}
		bytes += n * 512;
		c->nw++;
	}
	if (c->in->in_flight.valid && c->in->in_flight.n && c->in->in_flight.n <= 2048 &&
	    c->in->in_flight.n <= (CRASH_MAX_BYTES - bytes) / 512)
		bytes += c->in->in_flight.n * 512;
	c->w = calloc(c->nw + 1, sizeof(*c->w));
	c->pp = calloc(c->npp ? c->npp : 1, sizeof(*c->pp));
	c->nsect = bytes / 512;
	c->data = malloc(bytes ? bytes : 1);
	if (!c->w || !c->pp || !c->data) {
		rc = fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	c->nw = c->npp = 0;
	bytes = 0;
	for (size_t i = 0; i < ne; i++) {
		struct cwrite *w = &c->w[c->nw];
		int fua = (e[i].flags & LOG_FUA_FLAG) != 0;

		if (e[i].flags & (LOG_DISCARD_FLAG | LOG_MARK_FLAG))
			continue;
		if (e[i].flags & LOG_FLUSH_FLAG || fua)
			c->pp[c->npp++] = i;
		if (e[i].flags & LOG_FLUSH_FLAG)
			continue;
		w->lba = e[i].sector * (ss / 512);
		w->n = e[i].nsect * (ss / 512);
		w->entry = i;
		w->fua = fua;
		/* durable from the log alone: FUA, or a flush logged after it */
		w->durable = fua || i < last_flush;
		w->sect0 = bytes / 512;
		if (w->n && pc_pread_all(fd, c->data + bytes, (size_t)w->n * 512, e[i].data)) {
			rc = fail(err, errlen, -EIO, "log %s: cannot read the data of entry %zu", c->in->log, i);
			goto out;
		}
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
static int extents_make(struct ctx *c, int bfd, uint64_t img_sect, char *err, size_t errlen)
{
	struct extent *t = calloc(c->nw ? c->nw : 1, sizeof(*t));
	size_t n = 0;

	if (!t)
		return fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < c->nw; i++) {
		if (c->w[i].lba > img_sect || c->w[i].n > img_sect - c->w[i].lba) {
			free(t);
			return fail(err, errlen, -ERANGE, "log %s: a write of sectors %" PRIu64 "+%" PRIu64
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
			return fail(err, errlen, -ENOMEM, "out of memory");
		if (pc_pread_all(bfd, t[i].base, (size_t)t[i].n * 512, (off_t)(t[i].lba * 512)))
			return fail(err, errlen, -EIO, "image %s: cannot read sectors %" PRIu64 "+%" PRIu64, c->in->base,
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

static int image_make(struct ctx *c, char *err, size_t errlen)
{
	struct region_opts ro = { 0 };
	struct region real;
	json_object *hello = json_object_array_get_idx(c->pre, 1), *m = NULL, *rg = NULL, *v;
	uint64_t region_off = 0, region_len = 0;
	struct stat st;
	int bfd, rc = 0;

	bfd = open(c->in->base, O_RDONLY | O_CLOEXEC);
	if (bfd < 0 || fstat(bfd, &st) < 0) {
		rc = fail(err, errlen, -errno, "image %s: %s", c->in->base, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 512 || st.st_size % 512) {
		rc = fail(err, errlen, -EINVAL, "image %s: not a regular file of whole 512-byte sectors", c->in->base);
		goto out;
	}
	if (json_object_object_get_ex(hello, "msg", &m) && json_object_object_get_ex(m, "region", &rg)) {
		if (json_object_object_get_ex(rg, "offset", &v))
			region_off = (uint64_t)json_object_get_int64(v);
		if (json_object_object_get_ex(rg, "bytes", &v))
			region_len = (uint64_t)json_object_get_int64(v);
	}
	if (region_off % 512 || region_off >= (uint64_t)st.st_size) {
		rc = fail(err, errlen, -EINVAL, "the hello's region offset %" PRIu64 " does not fit image %s",
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
		rc = fail(err, errlen, -errno, "image %s: cannot map %zu bytes: %s", c->in->base, c->map_len,
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

/* The bytes of the write in flight: the records it was writing, made from the region's seed. */
static int in_flight_fill(struct ctx *c, char *err, size_t errlen)
{
	const struct crash_in_flight *f = &c->in->in_flight;
	struct cwrite *w = &c->w[c->nw - 1];
	uint64_t slot0 = c->off_lba + PC_SB_RESERVE_SECT;

	if (!c->in_flight)
		return 0;
	if (w->lba < slot0 || (w->lba - slot0) % c->spr || w->n % c->spr ||
	    (w->lba - slot0) / c->spr + w->n / c->spr > c->reg.g.nslots)
		return fail(err, errlen, -EINVAL, "the write in flight (sectors %" PRIu64 "+%" PRIu64 ") is not whole "
			    "records of the region", w->lba, w->n);
	for (uint64_t k = 0; k < w->n / c->spr; k++)
		pc_record_build(c->data + (w->sect0 + k * c->spr) * 512, &c->reg.g,
				(uint32_t)((w->lba - slot0) / c->spr + k), f->seq + k, f->cycle, f->flags);
	return 0;
}

/* Which record sector each write sector lands on, and whether it holds that record's new bytes. */
static int map_sectors(struct ctx *c, char *err, size_t errlen)
{
	const struct pc_geom *g = &c->reg.g;
	uint64_t slot0 = c->off_lba + PC_SB_RESERVE_SECT;

	c->rec = calloc(c->nrec, sizeof(*c->rec));
	c->rec_of_slot = malloc((size_t)g->nslots * sizeof(*c->rec_of_slot));
	c->tgt = malloc((c->nsect ? c->nsect : 1) * sizeof(*c->tgt));
	c->isnew = calloc(c->nsect ? c->nsect : 1, 1);
	c->keep = calloc(c->nsect ? c->nsect : 1, 1);
	c->recnew = calloc(c->nrec * c->spr, 1);
	c->racked = calloc(c->nrec, 1);
	c->vol = calloc(c->nw ? c->nw : 1, sizeof(*c->vol));
	if (!c->rec || !c->rec_of_slot || !c->tgt || !c->isnew || !c->keep || !c->recnew || !c->racked || !c->vol)
		return fail(err, errlen, -ENOMEM, "out of memory");
	if (c->nrec > g->nslots)
		return fail(err, errlen, -EINVAL, "cycle %u: %zu records in a region of %u slots (a ring that wraps in "
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
static void acks_read(struct ctx *c)
{
	size_t n = json_object_array_length(c->mid);

	for (size_t i = 0; i < n; i++) {
		json_object *ev = json_object_array_get_idx(c->mid, i), *m;
		int64_t f, k;

		if (strcmp(msg_type(ev), "ack") || !json_object_object_get_ex(ev, "msg", &m))
			continue;
		f = ev_int(m, "first", NULL, 0);
		k = ev_int(m, "n", NULL, 0);
		for (int64_t s = f; k > 0 && s < f + k; s++)
			if (s >= (int64_t)c->first && (uint64_t)s < c->first + c->nrec)
				c->rec[s - (int64_t)c->first].acked = 1;
	}
}

/* ---- one state ---- */

static int collect(json_object *v, void *arg)
{
	struct ctx *c = arg;

	if (ev_cycle(v) == c->in->cycle && !c->verdict)
		c->verdict = json_object_get(v);
	return 0;
}

static int feed(struct ctx *c, json_object *ev)
{
	if (!c->feed_rc)
		c->feed_rc = engine_feed(c->eng, ev, c->feed_err, sizeof(c->feed_err));
	return c->feed_rc;
}

/* The scan's messages fed to the engine as the next boot's rx events (or kept, for the base). */
struct emit_arg {
	struct ctx *c;
	json_object *keep;	/* NULL: feed */
	unsigned cycle;
};

static int emit(json_object *msg, void *arg)
{
	struct emit_arg *a = arg;
	json_object *ev = json_object_new_object();

	if (!ev) {
		json_object_put(msg);
		return -ENOMEM;
	}
	json_object_object_add(ev, "t", json_object_new_int64(a->c->post_t));
	json_object_object_add(ev, "board", json_object_new_string(a->c->in->board));
	json_object_object_add(ev, "cycle", json_object_new_int64(a->cycle));
	json_object_object_add(ev, "ev", json_object_new_string("rx"));
	json_object_object_add(ev, "msg", msg);
	if (a->keep) {
		json_object_array_add(a->keep, ev);
		return 0;
	}
	feed(a->c, ev);
	json_object_put(ev);
	return a->c->feed_rc;
}

static json_object *verify_event(struct ctx *c, unsigned cycle, json_object *msg)
{
	json_object *ev = json_object_new_object();

	json_object_object_add(ev, "t", json_object_new_int64(c->post_t));
	json_object_object_add(ev, "board", json_object_new_string(c->in->board));
	json_object_object_add(ev, "cycle", json_object_new_int64(cycle));
	json_object_object_add(ev, "ev", json_object_new_string("verify"));
	json_object_object_add(ev, "msg", msg);
	return ev;
}

static int pos_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The states' partial scan: the records' slots and every slot a write touched. */
static int verify_make(struct ctx *c, char *err, size_t errlen)
{
	const struct pc_geom *g = &c->reg.g;
	uint64_t slot0 = c->off_lba + PC_SB_RESERVE_SECT;
	size_t cap = c->nrec + c->nsect, n = 0, nr = 0;
	uint32_t *pos = malloc((cap ? cap : 1) * sizeof(*pos));
	struct pc_posrange *r = NULL;
	json_object *msg;

	if (!pos)
		return fail(err, errlen, -ENOMEM, "out of memory");
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
		return fail(err, errlen, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		if (nr && r[nr - 1].pos + r[nr - 1].n == pos[i])
			r[nr - 1].n++;
		else if (!nr || r[nr - 1].pos + r[nr - 1].n <= pos[i])
			r[nr++] = (struct pc_posrange){ pos[i], 1 };
	}
	msg = nr && nr <= PC_PROTO_MAX_RANGES ? pc_msg_verify_ranges(c->pattern, r, (uint32_t)nr) :
						 pc_msg_verify(c->pattern, 1);
	c->verify = msg ? verify_event(c, c->in->cycle + 1, msg) : NULL;
	/* the scan the next boot's engine is given: these positions */
	free(pos);
	free(r);
	return c->verify ? 0 : fail(err, errlen, -ENOMEM, "out of memory");
}

static int base_scan(struct ctx *c, char *err, size_t errlen)
{
	struct emit_arg a = { c, NULL, c->in->cycle };
	struct scan_stats st;
	int rc;

	c->base_scan = json_object_new_array();
	a.keep = c->base_scan;
	json_object_array_add(c->base_scan, verify_event(c, c->in->cycle, pc_msg_verify(c->pattern, 1)));
	rc = region_scan(&c->reg, c->pattern, NULL, 0, emit, &a, &st);
	if (rc)
		return fail(err, errlen, rc, "scanning the base image %s: %s", c->in->base, strerror(-rc));
	return 0;
}

/* Compose the state's image from keep[] and write it; recnew[] follows. */
static int state_write(struct ctx *c, char *err, size_t errlen)
{
	for (size_t i = 0; i < c->next; i++)
		memcpy(c->ext[i].buf, c->ext[i].base, (size_t)c->ext[i].n * 512);
	memset(c->recnew, 0, c->nrec * c->spr);
	for (size_t i = 0; i < c->nw; i++) {
		const struct cwrite *w = &c->w[i];
		unsigned char *dst = c->ext[w->ext].buf + w->ext_off;

		for (uint64_t k = 0; k < w->n; k++) {
			size_t s = w->sect0 + k;

			if (!c->keep[s])
				continue;
			memcpy(dst + k * 512, c->data + s * 512, 512);
			if (c->tgt[s] >= 0)
				c->recnew[c->tgt[s]] = c->isnew[s];
		}
	}
	for (size_t i = 0; i < c->next; i++)
		memcpy(c->map + c->ext[i].lba * 512, c->ext[i].buf, (size_t)c->ext[i].n * 512);
	(void)err;
	(void)errlen;
	return 0;
}

enum { X_INTACT, X_NOT_WRITTEN, X_LOST_ACKED, X_TORN, X_N };
static const char *const x_names[X_N] = { "intact", "not_written", "lost_acked", "torn" };

struct expect {
	unsigned counts[X_N];
	int fail;
	unsigned lost;		/* acknowledged records not intact */
};

/* What the state holds, record by record: the ground truth. */
static void state_truth(struct ctx *c, struct expect *x, uint8_t *viol)
{
	memset(x, 0, sizeof(*x));
	for (size_t i = 0; i < c->nrec; i++) {
		unsigned nnew = 0, cls;

		for (uint32_t k = 0; k < c->spr; k++)
			nnew += c->recnew[i * c->spr + k];
		cls = nnew == c->spr ? X_INTACT : nnew == 0 ? (c->racked[i] ? X_LOST_ACKED : X_NOT_WRITTEN) : X_TORN;
		x->counts[cls]++;
		viol[i] = (c->racked[i] && cls != X_INTACT) || (cls == X_TORN && c->torn_violation);
		x->lost += c->racked[i] && cls != X_INTACT;
		x->fail |= viol[i];
	}
}

static void note(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct ctx *c, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (json_object_array_length(c->r->notes) >= CRASH_MAX_LISTED || c->no_truth)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_object_array_add(c->r->notes, json_object_new_string(buf));
}

/*
 * Judge the state in keep[] (or, img_ready, the image already written) with
 * acks up to ack_limit. 1 when the verdict says what the state holds, 0 when
 * it does not, -errno. *failed: the verdict is FAIL.
 */
static int state_judge(struct ctx *c, enum crash_mode mode, const char *label, int img_ready, int *failed,
		       char *err, size_t errlen)
{
	struct emit_arg a = { c, NULL, c->in->cycle + 1 };
	uint8_t *viol = c->racked + 0;	/* replaced below */
	struct expect x;
	struct scan_stats st;
	json_object *cnt, *v, *fnd;
	size_t acks = 0, nviol_found = 0;
	int rc, ok = 1;
	double t0 = now_ms();

	viol = calloc(c->nrec, 1);
	if (!viol)
		return fail(err, errlen, -ENOMEM, "out of memory");
	if (!img_ready && (rc = state_write(c, err, errlen))) {
		free(viol);
		return rc;
	}
	/* acknowledged in this state: the ACK events up to the limit */
	memset(c->racked, 0, c->nrec);
	for (size_t i = 0, n = json_object_array_length(c->mid); i < n; i++) {
		json_object *ev = json_object_array_get_idx(c->mid, i), *m;

		if (strcmp(msg_type(ev), "ack") || acks++ >= c->ack_limit || !json_object_object_get_ex(ev, "msg", &m))
			continue;
		for (int64_t s = ev_int(m, "first", NULL, 0), e = s + ev_int(m, "n", NULL, 0); s < e; s++)
			if (s >= (int64_t)c->first && (uint64_t)s < c->first + c->nrec)
				c->racked[s - (int64_t)c->first] = 1;
	}
	state_truth(c, &x, viol);
	c->eng = engine_new("crash-states", collect, NULL, c);
	c->feed_rc = 0;
	c->verdict = NULL;
	if (!c->eng) {
		free(viol);
		return fail(err, errlen, -ENOMEM, "out of memory");
	}
	if (c->in->config && engine_configure(c->eng, c->in->config, c->feed_err, sizeof(c->feed_err)))
		c->feed_rc = -EINVAL;
	for (size_t i = 0; i < json_object_array_length(c->pre); i++)
		feed(c, json_object_array_get_idx(c->pre, i));
	for (size_t i = 0; i < json_object_array_length(c->base_scan); i++)
		feed(c, json_object_array_get_idx(c->base_scan, i));
	acks = 0;
	for (size_t i = 0; i < json_object_array_length(c->mid); i++) {
		json_object *ev = json_object_array_get_idx(c->mid, i);

		if (!strcmp(msg_type(ev), "ack") && acks++ >= c->ack_limit)
			continue;
		feed(c, ev);
	}
	for (size_t i = 0; i < json_object_array_length(c->post); i++)
		feed(c, json_object_array_get_idx(c->post, i));
	feed(c, c->verify);
	if (!c->feed_rc) {
		json_object *vm;
		struct pc_msg m;
		struct pc_posrange *rg = NULL;
		uint32_t nrg = 0;

		/* the same positions the verify event asked for */
		if (json_object_object_get_ex(c->verify, "msg", &vm) && !pc_msg_parse_obj(vm, &m, err, errlen)) {
			if (!m.u.verify.full) {
				rg = m.u.verify.ranges;
				nrg = m.u.verify.nranges;
			}
			rc = region_scan(&c->reg, c->pattern, rg, nrg, emit, &a, &st);
			pc_msg_clear(&m);
			if (rc && !c->feed_rc)
				c->feed_rc = rc;
		}
	}
	engine_free(c->eng);
	c->eng = NULL;
	if (c->feed_rc) {
		json_object_put(c->verdict);
		free(viol);
		return fail(err, errlen, c->feed_rc < 0 ? c->feed_rc : -EIO, "board %s cycle %u, state %s: the engine "
			    "or the scan refused: %s", c->in->board, c->in->cycle, label, c->feed_err);
	}
	if (!c->verdict) {
		free(viol);
		return fail(err, errlen, -EPROTO, "board %s cycle %u, state %s: the engine gave no verdict",
			    c->in->board, c->in->cycle, label);
	}
	if (c->o->hook)
		c->o->hook(c->verdict, c->o->hook_arg);
	fnd = json_object_object_get(c->verdict, "findings");
	if (c->cap_hi) {
		json_object *arr = json_object_new_array();

		for (size_t i = 0; arr && fnd && i < json_object_array_length(fnd); i++) {
			json_object *f = json_object_array_get_idx(fnd, i);
			int64_t s = ev_int(f, "seq", NULL, -1);

			if (s >= (int64_t)c->cap_lo && s <= (int64_t)c->cap_hi)
				json_object_array_add(arr, json_object_get(f));
		}
		free(c->captured);
		c->captured = arr ? strdup(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN)) : NULL;
		json_object_put(arr);
	}
	/* compare: the outcome, the classes' counts, and which seqs are violations */
	*failed = !strcmp(json_object_get_string(json_object_object_get(c->verdict, "verdict")), "FAIL");
	if (*failed != x.fail)
		ok = 0;
	cnt = json_object_object_get(c->verdict, "counts");
	json_object_object_foreach(cnt, k, cv) {
		int64_t want = 0;

		for (unsigned i = 0; i < X_N; i++)
			if (!strcmp(k, x_names[i]))
				want = x.counts[i];
		if (json_object_get_int64(cv) != want) {
			ok = 0;
			note(c, "cycle %u %s %s: %s %" PRId64 ", the state holds %" PRId64, c->in->cycle,
			     crash_mode_name(mode), label, k, json_object_get_int64(cv), want);
		}
	}
	for (size_t i = 0; fnd && i < json_object_array_length(fnd); i++) {
		json_object *f = json_object_array_get_idx(fnd, i);
		int64_t s;

		if (!json_object_object_get_ex(f, "violation", &v) || !json_object_get_boolean(v))
			continue;
		s = ev_int(f, "seq", NULL, -1);
		nviol_found++;
		if (s < (int64_t)c->first || (uint64_t)s >= c->first + c->nrec || !viol[s - (int64_t)c->first]) {
			ok = 0;
			note(c, "cycle %u %s %s: the verdict names seq %" PRId64 " a violation; the state does not",
			     c->in->cycle, crash_mode_name(mode), label, s);
		}
	}
	{
		size_t want = 0;

		for (size_t i = 0; i < c->nrec; i++)
			want += viol[i];
		if (want != nviol_found) {
			ok = 0;
			note(c, "cycle %u %s %s: %zu violations named, the state holds %zu", c->in->cycle,
			     crash_mode_name(mode), label, nviol_found, want);
		}
	}
	if (!ok && x.fail != *failed)
		note(c, "cycle %u %s %s: verdict %s, the state calls for %s", c->in->cycle, crash_mode_name(mode),
		     label, *failed ? "FAIL" : "PASS", x.fail ? "FAIL" : "PASS");
	c->r->lost_acked_states += x.lost > 0;
	c->r->ms_by_mode[mode] += now_ms() - t0;
	c->r->by_mode[mode]++;
	json_object_put(c->verdict);
	c->verdict = NULL;
	free(viol);
	return ok;
}

/* A legal state: counted, and a mismatch when its verdict is wrong. */
static int legal(struct ctx *c, enum crash_mode mode, const char *label, char *err, size_t errlen)
{
	int failed, rc = state_judge(c, mode, label, 0, &failed, err, errlen);

	if (rc < 0)
		return rc;
	c->r->states++;
	c->r->mismatches += rc == 0;
	return 0;
}

/* keep[]: every durable write whole; each volatile write as bits say (1 kept). */
static void keep_set(struct ctx *c, const uint8_t *volkeep)
{
	for (size_t i = 0, v = 0; i < c->nw; i++) {
		int k = c->w[i].durable ? 1 : volkeep[v++];

		memset(c->keep + c->w[i].sect0, k, (size_t)c->w[i].n);
	}
}

static int remember(struct ctx *c, const uint8_t *volkeep)
{
	if (c->nseen == c->capseen) {
		size_t cap = c->capseen ? c->capseen * 2 : 64;
		uint8_t *t = realloc(c->seen, cap * (c->nvol ? c->nvol : 1));

		if (!t)
			return -ENOMEM;
		c->seen = t;
		c->capseen = cap;
	}
	if (c->nvol)
		memcpy(c->seen + c->nseen * c->nvol, volkeep, c->nvol);
	c->nseen++;
	return 0;
}

static int subset(struct ctx *c, const uint8_t *volkeep, const char *label, char *err, size_t errlen)
{
	keep_set(c, volkeep);
	c->ack_limit = SIZE_MAX;
	if (remember(c, volkeep))
		return fail(err, errlen, -ENOMEM, "out of memory");
	return legal(c, CRASH_M_SUBSETS, label, err, errlen);
}

static int do_subsets(struct ctx *c, char *err, size_t errlen)
{
	uint8_t *k = calloc(c->nvol ? c->nvol : 1, 1);
	char label[64];
	int rc = 0;

	if (!k)
		return fail(err, errlen, -ENOMEM, "out of memory");
	if (c->nvol <= c->o->exhaustive) {
		for (uint64_t m = 0; m < (1ull << c->nvol) && !rc; m++) {
			for (unsigned i = 0; i < c->nvol; i++)
				k[i] = (m >> i) & 1;
			snprintf(label, sizeof(label), "subset 0x%" PRIx64, m);
			rc = subset(c, k, label, err, errlen);
		}
		free(k);
		return rc;
	}
	memset(k, 1, c->nvol);
	rc = subset(c, k, "all kept", err, errlen);
	memset(k, 0, c->nvol);
	if (!rc)
		rc = subset(c, k, "all dropped", err, errlen);
	for (unsigned i = 0; i < c->nvol && !rc; i++) {
		memset(k, 1, c->nvol);
		k[i] = 0;
		snprintf(label, sizeof(label), "drop %u", i);
		rc = subset(c, k, label, err, errlen);
		if (rc)
			break;
		memset(k, 0, c->nvol);
		k[i] = 1;
		snprintf(label, sizeof(label), "keep %u", i);
		rc = subset(c, k, label, err, errlen);
	}
	/* in-order prefixes: the first i volatile writes in completion order (0 and all: above) */
	for (unsigned i = 1; i < c->nvol && !rc; i++) {
		for (unsigned j = 0; j < c->nvol; j++)
			k[j] = j < i;
		snprintf(label, sizeof(label), "prefix %u", i);
		rc = subset(c, k, label, err, errlen);
	}
	for (unsigned r = 0; r < c->o->random && !rc; r++) {
		uint64_t x = mix(c->o->seed ^ mix(c->in->cycle) ^ mix(r + 0x243f6a8885a308d3ULL));

		for (unsigned j = 0; j < c->nvol; j++) {
			if (j % 64 == 0 && j)
				x = mix(x);
			k[j] = (x >> (j % 64)) & 1;
		}
		snprintf(label, sizeof(label), "random %u", r);
		rc = subset(c, k, label, err, errlen);
	}
	free(k);
	return rc;
}

/*
 * The covering design over a record's spr sectors: sector i gets column
 * col(i), the i-th m-bit word of weight w (w > m/2), m the least with
 * C(m, w) >= spr. Row r keeps the sectors whose column has bit r. Any two
 * sectors i != j are (kept, dropped) in one row and (dropped, kept) in
 * another (distinct words of equal weight), and kept together in one (two
 * w-subsets of m bits with 2w > m meet); dropped together is the state
 * that drops the write. Rows that keep all or none are not tears: left out.
 * After the m rows come the spr - 1 in-order prefixes (the first 1, 2, ...
 * sectors kept), the tear of a device that programs a write in order, cut
 * in the middle: rows m .. m + spr - 2.
 */
struct design {
	unsigned m;
	unsigned rows;		/* m + spr - 1 (0 for one-sector records: no tear) */
	uint64_t *col;
};

static uint64_t binom(unsigned n, unsigned k)
{
	uint64_t r = 1;

	for (unsigned i = 1; i <= k; i++)
		r = r * (n - k + i) / i;
	return r;
}

static int design_make(struct design *d, uint32_t spr)
{
	unsigned w;
	uint64_t x;

	d->col = NULL;
	d->m = d->rows = 0;
	if (spr < 2)
		return 0;
	for (d->m = 2; d->m < 62 && binom(d->m, d->m / 2 + 1) < spr; d->m++)
		;
	w = d->m / 2 + 1;
	d->col = calloc(spr, sizeof(*d->col));
	if (!d->col)
		return -ENOMEM;
	x = (1ull << w) - 1;
	for (uint32_t i = 0; i < spr; i++) {
		uint64_t c0 = x & -x, r0 = x + c0;

		d->col[i] = x;
		x = (((r0 ^ x) >> 2) / c0) | r0;	/* the next word of the same weight (Gosper) */
	}
	d->rows = d->m + spr - 1;
	return 0;
}

static int design_row_kept(const struct design *d, unsigned row, uint32_t idx)
{
	if (row >= d->m)
		return idx < row - d->m + 1;	/* a prefix */
	return (d->col[idx] >> row) & 1;
}

/* Does the row keep some sectors and drop others? */
static int design_row_tears(const struct design *d, unsigned row, uint32_t spr)
{
	unsigned kept = 0;

	for (uint32_t i = 0; i < spr; i++)
		kept += design_row_kept(d, row, i);
	return kept && kept < spr;
}

/* keep[] of write wi torn by row: each sector by its index in its record. */
static void tear(struct ctx *c, const struct design *d, size_t wi, unsigned row)
{
	const struct cwrite *w = &c->w[wi];
	uint64_t slot0 = c->off_lba + PC_SB_RESERVE_SECT;

	for (uint64_t k = 0; k < w->n; k++) {
		uint64_t lba = w->lba + k;
		uint32_t idx = lba >= slot0 ? (uint32_t)((lba - slot0) % c->spr) : (uint32_t)(k % c->spr);

		c->keep[w->sect0 + k] = (uint8_t)design_row_kept(d, row, idx);
	}
}

/* The seqs whose new sectors write wi carries. */
static void write_seqs(struct ctx *c, size_t wi, uint64_t *lo, uint64_t *hi)
{
	const struct cwrite *w = &c->w[wi];

	*lo = UINT64_MAX;
	*hi = 0;
	for (uint64_t k = 0; k < w->n; k++) {
		int32_t t = c->tgt[w->sect0 + k];

		if (t >= 0 && c->isnew[w->sect0 + k]) {
			uint64_t s = c->rec[t / (int32_t)c->spr].seq;

			*lo = s < *lo ? s : *lo;
			*hi = s > *hi ? s : *hi;
		}
	}
}

static int do_tears(struct ctx *c, const struct design *d, char *err, size_t errlen)
{
	uint8_t *k = malloc(c->nvol ? c->nvol : 1);
	char label[64];
	int rc = 0;

	if (!k)
		return fail(err, errlen, -ENOMEM, "out of memory");
	memset(k, 1, c->nvol ? c->nvol : 1);
	c->ack_limit = SIZE_MAX;
	for (unsigned v = 0; v < c->nvol && !rc; v++)
		for (unsigned row = 0; row < d->rows && !rc; row++) {
			if (!design_row_tears(d, row, c->spr) || c->w[c->vol[v]].n < 2)
				continue;
			keep_set(c, k);
			tear(c, d, c->vol[v], row);
			snprintf(label, sizeof(label), "write %zu torn by row %u", c->vol[v], row);
			if (c->o->locality)
				write_seqs(c, c->vol[v], &c->cap_lo, &c->cap_hi);
			rc = legal(c, CRASH_M_TEARS, label, err, errlen);
			if (rc || !c->o->locality || !c->cap_hi)
				continue;
			/* judging is local to a slot: the same tear with every other volatile write
			 * dropped must give the torn records the same findings */
			{
				char *with = c->captured;

				c->captured = NULL;
				memset(k, 0, c->nvol);
				keep_set(c, k);
				memset(k, 1, c->nvol);
				tear(c, d, c->vol[v], row);
				snprintf(label, sizeof(label), "write %zu torn by row %u, the others dropped", c->vol[v],
					 row);
				rc = legal(c, CRASH_M_TEARS, label, err, errlen);
				c->r->locality_checked++;
				if (!rc && (!with || !c->captured || strcmp(with, c->captured))) {
					c->r->locality_breaks++;
					note(c, "cycle %u: %s: the torn record's findings changed with the other "
					     "writes: %s / %s", c->in->cycle, label, with ? with : "?",
					     c->captured ? c->captured : "?");
				}
				free(with);
			}
			c->cap_lo = c->cap_hi = 0;
		}
	free(k);
	return rc;
}

/* Is the record acknowledged by ack event ev wholly written by writes durable at point p? */
static int do_cuts(struct ctx *c, char *err, size_t errlen)
{
	uint8_t *dur = malloc(c->nw ? c->nw : 1), *rdur = malloc(c->nrec);
	char label[64];
	int rc = 0;

	if (!dur || !rdur) {
		free(dur);
		free(rdur);
		return fail(err, errlen, -ENOMEM, "out of memory");
	}
	for (size_t p = 0; p < c->npp && !rc; p++) {
		size_t at = c->pp[p], limit = 0;

		/* the log up to and with the persistence point; what it made durable */
		for (size_t i = 0; i < c->nw; i++) {
			int in = c->w[i].entry <= at;
			int flushed = 0;

			for (size_t q = 0; q <= p && !flushed; q++)
				flushed = c->pp[q] > c->w[i].entry && !(c->w[i].fua && c->pp[q] == c->w[i].entry);
			memset(c->keep + c->w[i].sect0, in, (size_t)c->w[i].n);
			/* a flush logged after it, up to the point, or its own FUA */
			dur[i] = in && (c->w[i].fua || flushed);
		}
		memset(rdur, 0, c->nrec);
		{
			/* a record is durable at p when its new sectors all come from durable writes */
			uint8_t *cover = calloc(c->nrec * c->spr, 1);

			if (!cover) {
				rc = fail(err, errlen, -ENOMEM, "out of memory");
				break;
			}
			for (size_t i = 0; i < c->nw; i++)
				for (uint64_t k = 0; dur[i] && k < c->w[i].n; k++) {
					size_t s = c->w[i].sect0 + k;

					if (c->tgt[s] >= 0 && c->isnew[s])
						cover[c->tgt[s]] = 1;
				}
			for (size_t r = 0; r < c->nrec; r++) {
				rdur[r] = 1;
				for (uint32_t k = 0; k < c->spr; k++)
					rdur[r] &= cover[r * c->spr + k];
			}
			free(cover);
		}
		/* the ACKs received by then: the ACK events, in order, while all they name is durable */
		for (size_t i = 0, n = json_object_array_length(c->mid); i < n; i++) {
			json_object *ev = json_object_array_get_idx(c->mid, i), *m;
			int all = 1;

			if (strcmp(msg_type(ev), "ack") || !json_object_object_get_ex(ev, "msg", &m))
				continue;
			for (int64_t s = ev_int(m, "first", NULL, 0), e = s + ev_int(m, "n", NULL, 0); s < e && all; s++)
				all = s >= (int64_t)c->first && (uint64_t)s < c->first + c->nrec &&
				      rdur[s - (int64_t)c->first];
			if (!all)
				break;
			limit++;
		}
		c->ack_limit = limit;
		snprintf(label, sizeof(label), "cut at log entry %zu (%zu acks)", at, limit);
		rc = legal(c, CRASH_M_CUTS, label, err, errlen);
	}
	free(dur);
	free(rdur);
	return rc;
}

/* Each durable write whose records were all acknowledged: dropped, then torn. */
static int do_illegal(struct ctx *c, const struct design *d, char *err, size_t errlen)
{
	uint8_t *k = malloc(c->nvol ? c->nvol : 1);
	char label[96];
	int rc = 0;

	if (!k)
		return fail(err, errlen, -ENOMEM, "out of memory");
	memset(k, 1, c->nvol ? c->nvol : 1);
	c->ack_limit = SIZE_MAX;
	for (size_t i = 0; i < c->nw && rc >= 0; i++) {
		const struct cwrite *w = &c->w[i];
		int acked = 0, all = 1;
		unsigned row = 0;

		if (!w->durable)
			continue;
		for (uint64_t s = 0; s < w->n; s++) {
			int32_t t = c->tgt[w->sect0 + s];

			if (t >= 0 && c->isnew[w->sect0 + s]) {
				acked = 1;
				all &= c->rec[t / (int32_t)c->spr].acked;
			}
		}
		if (!acked || !all)
			continue;
		for (int torn = 0; torn < 2 && rc >= 0; torn++) {
			int failed;

			keep_set(c, k);
			if (!torn) {
				memset(c->keep + w->sect0, 0, (size_t)w->n);
			} else {
				while (row < d->m && !design_row_tears(d, row, c->spr))
					row++;
				if (row >= d->m || w->n < 2)
					continue;
				tear(c, d, i, row);
			}
			snprintf(label, sizeof(label), "durable write %zu (lba %" PRIu64 ") %s", i, w->lba,
				 torn ? "torn" : "dropped");
			rc = state_judge(c, CRASH_M_ILLEGAL, label, 0, &failed, err, errlen);
			if (rc < 0)
				break;
			c->r->injected++;
			/* caught: FAIL naming exactly the write's seqs (the judge's full agreement) */
			if (rc == 1 && failed)
				c->r->caught++;
			else
				note(c, "cycle %u: injected %s not caught", c->in->cycle, label);
			rc = 0;
		}
	}
	free(k);
	return rc < 0 ? rc : 0;
}

/* Does write wi hold in keep[] exactly the tear of some row? */
static int tear_row_of(struct ctx *c, const struct design *d, size_t wi)
{
	const struct cwrite *w = &c->w[wi];
	uint64_t slot0 = c->off_lba + PC_SB_RESERVE_SECT;

	for (unsigned row = 0; row < d->rows; row++) {
		int same = 1;

		for (uint64_t k = 0; k < w->n && same; k++) {
			uint64_t lba = w->lba + k;
			uint32_t idx = lba >= slot0 ? (uint32_t)((lba - slot0) % c->spr) : (uint32_t)(k % c->spr);

			same = c->keep[w->sect0 + k] == design_row_kept(d, row, idx);
		}
		if (same)
			return 1;
	}
	return 0;
}

/*
 * The image the boot after the cut scanned: which of the enumerated states it
 * is, and its verdict, from a full scan (as the real one was). When every
 * sector the log wrote holds its old or its new bytes and nothing else in
 * the image changed, what it holds is known and its verdict is compared
 * with it like any state's; else only with the recorded verdict.
 */
static int do_observed(struct ctx *c, const struct design *d, char *err, size_t errlen)
{
	uint8_t *vk = calloc(c->nvol ? c->nvol : 1, 1);
	unsigned char *chunk = malloc(1 << 20);
	int pfd = -1, rc = 0, failed = 0, other = 0, outside = 0, durable_lost = 0, torn_ok = 1;
	unsigned torn_n = 0;
	json_object *partial = c->verify;
	struct stat st;

	c->r->observed = 0;
	if (!vk || !chunk) {
		rc = fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	pfd = open(c->in->post, O_RDONLY | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, &st) < 0) {
		rc = fail(err, errlen, -errno, "image %s: %s", c->in->post, strerror(errno));
		goto out;
	}
	if ((uint64_t)st.st_size != c->map_len) {
		rc = fail(err, errlen, -EINVAL, "image %s: %lld bytes, the base image %s %zu", c->in->post,
			  (long long)st.st_size, c->in->base, c->map_len);
		goto out;
	}
	/* the base again, then the image over it, noting changes outside the log's writes */
	for (size_t i = 0; i < c->next; i++)
		memcpy(c->map + c->ext[i].lba * 512, c->ext[i].base, (size_t)c->ext[i].n * 512);
	for (size_t o = 0, e = 0; o < c->map_len; o += 1 << 20) {
		size_t len = c->map_len - o < (1u << 20) ? c->map_len - o : 1u << 20;

		if (pc_pread_all(pfd, chunk, len, (off_t)o)) {
			rc = fail(err, errlen, -EIO, "image %s: cannot read %zu bytes at %zu", c->in->post, len, o);
			goto out;
		}
		for (size_t k = 0; k < len; k += 512) {
			uint64_t lba = (o + k) / 512;

			/* only the sectors that differ are copied: the map's other pages stay shared */
			if (!memcmp(chunk + k, c->map + o + k, 512))
				continue;
			while (e < c->next && c->ext[e].lba + c->ext[e].n <= lba)
				e++;
			if (e >= c->next || lba < c->ext[e].lba)
				outside = 1;
			memcpy(c->map + o + k, chunk + k, 512);
		}
	}
	/* per write sector: does the image hold the write's bytes? */
	for (size_t i = 0, v = 0; i < c->nw; i++) {
		const struct cwrite *w = &c->w[i];
		uint64_t kept = 0;

		for (uint64_t k = 0; k < w->n; k++) {
			size_t s = w->sect0 + k;
			const unsigned char *img = c->map + (w->lba + k) * 512;

			c->keep[s] = !memcmp(img, c->data + s * 512, 512);
			if (!c->keep[s] && memcmp(img, c->ext[w->ext].base + w->ext_off + k * 512, 512))
				other = 1;	/* neither the old bytes nor the new */
			kept += c->keep[s];
		}
		if (w->durable) {
			durable_lost |= kept != w->n;
			continue;
		}
		vk[v++] = kept == w->n;
		if (kept && kept < w->n) {
			torn_n++;
			torn_ok &= tear_row_of(c, d, i);
		}
	}
	/* what the records hold: the last write in log order whose bytes the image has */
	memset(c->recnew, 0, c->nrec * c->spr);
	for (size_t i = 0; i < c->nw; i++)
		for (uint64_t k = 0; k < c->w[i].n; k++) {
			size_t s = c->w[i].sect0 + k;

			if (c->tgt[s] >= 0 && c->keep[s])
				c->recnew[c->tgt[s]] = c->isnew[s];
		}
	/* exactly a state enumerated (2): a subset judged, or one tear by a row with the other volatile
	 * writes kept; or one by slots (1): each torn write torn by a row and the whole ones a subset
	 * of the exhaustive enumeration -- judging is local to a slot */
	if (!other && !outside && !durable_lost) {
		if (torn_n == 0) {
			for (size_t s = 0; s < c->nseen && c->r->observed < 2; s++)
				if (!c->nvol || !memcmp(c->seen + s * c->nvol, vk, c->nvol))
					c->r->observed = 2;
		} else if (torn_ok) {
			unsigned not_whole = 0;

			for (unsigned v = 0; v < c->nvol; v++)
				not_whole += !vk[v];
			/* the torn write is the one not whole: all the others kept */
			c->r->observed = torn_n == 1 && not_whole == 1 ? 2 : c->nvol <= c->o->exhaustive ? 1 : 0;
		}
	}
	if (durable_lost)
		note(c, "cycle %u: the image after the cut lost or tore a write the log made durable", c->in->cycle);
	if (other || outside)
		note(c, "cycle %u: the image after the cut holds bytes no enumerated state has (%s): its verdict is "
		     "compared with the recorded one only", c->in->cycle, other ? "a written sector neither old nor new" :
		     "a change outside the log's writes");
	c->ack_limit = SIZE_MAX;
	c->no_truth = other || outside;
	c->verify = verify_event(c, c->in->cycle + 1, pc_msg_verify(c->pattern, 1));
	rc = c->verify ? state_judge(c, CRASH_M_OBSERVED, "observed", 1, &failed, err, errlen) : -ENOMEM;
	json_object_put(c->verify);
	c->verify = partial;
	c->no_truth = 0;
	if (rc < 0)
		goto out;
	c->r->states++;
	c->r->observed_legal = !durable_lost;
	c->r->observed_known = !other && !outside;
	if (c->r->observed_known)
		c->r->mismatches += rc == 0;
	snprintf(c->r->observed_verdict, sizeof(c->r->observed_verdict), "%s", failed ? "FAIL" : "PASS");
	c->r->observed_agrees = c->in->recorded ? !strcmp(c->in->recorded, c->r->observed_verdict) : -1;
	rc = 0;
out:
	if (pfd >= 0)
		close(pfd);
	free(vk);
	free(chunk);
	return rc;
}

static void ctx_free(struct ctx *c)
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
	free(c->data);
	free(c->tgt);
	free(c->isnew);
	free(c->keep);
	free(c->recnew);
	free(c->racked);
	free(c->rec);
	free(c->rec_of_slot);
	free(c->seen);
	free(c->vol);
	free(c->captured);
	json_object_put(c->pre);
	json_object_put(c->mid);
	json_object_put(c->post);
	json_object_put(c->base_scan);
	json_object_put(c->verify);
}

int crash_check(const struct crash_input *in, const struct crash_opts *o, struct crash_result *r, char *err,
		size_t errlen)
{
	struct ctx c;
	struct design d = { 0, 0, NULL };
	double t0 = now_ms(), c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
	int rc;

	memset(r, 0, sizeof(*r));
	memset(&c, 0, sizeof(c));
	c.in = in;
	c.o = o;
	c.r = r;
	r->observed = -1;
	r->observed_agrees = -1;
	if (!(r->notes = json_object_new_array()))
		return fail(err, errlen, -ENOMEM, "out of memory");
	if (o->exhaustive > CRASH_MAX_EXHAUSTIVE || o->random > CRASH_MAX_RANDOM) {
		rc = fail(err, errlen, -EINVAL, "at most %u writes enumerated exhaustively and %u random subsets",
			  CRASH_MAX_EXHAUSTIVE, CRASH_MAX_RANDOM);
		goto out;
	}
	if ((rc = events_pick(&c, err, errlen)) || (rc = log_load(&c, err, errlen)) ||
	    (rc = image_make(&c, err, errlen)) || (rc = in_flight_fill(&c, err, errlen)) ||
	    (rc = map_sectors(&c, err, errlen)) ||
	    (rc = verify_make(&c, err, errlen)) || (rc = base_scan(&c, err, errlen)))
		goto out;
	if (design_make(&d, c.spr)) {
		rc = fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	acks_read(&c);
	r->writes = (unsigned)c.nw;
	r->volatile_ = c.nvol;
	r->durable = (unsigned)(c.nw - c.nvol);
	/* acknowledged but not durable: a record an ACK named that durable writes do not wholly hold */
	{
		uint8_t *cover = calloc(c.nrec * c.spr, 1);

		if (!cover) {
			rc = fail(err, errlen, -ENOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < c.nw; i++)
			for (uint64_t k = 0; c.w[i].durable && k < c.w[i].n; k++) {
				size_t s = c.w[i].sect0 + k;

				if (c.tgt[s] >= 0 && c.isnew[s])
					cover[c.tgt[s]] = 1;
			}
		for (size_t i = 0; i < c.nrec; i++) {
			int whole = 1;

			for (uint32_t k = 0; k < c.spr; k++)
				whole &= cover[i * c.spr + k];
			r->acked += c.rec[i].acked;
			if (c.rec[i].acked && !whole) {
				r->acked_not_durable++;
				note(&c, "cycle %u: seq %" PRIu64 " acknowledged, not durable by the log", in->cycle,
				     c.rec[i].seq);
			}
		}
		free(cover);
	}
	if ((rc = do_subsets(&c, err, errlen)) || (rc = do_tears(&c, &d, err, errlen)) ||
	    (rc = do_cuts(&c, err, errlen)) || (rc = do_illegal(&c, &d, err, errlen)))
		goto out;
	if (in->post && (rc = do_observed(&c, &d, err, errlen)))
		goto out;
	r->ms = now_ms() - t0;
	r->cpu_ms = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
out:
	free(d.col);
	ctx_free(&c);
	if (rc)
		crash_result_clear(r);
	return rc;
}

void crash_result_clear(struct crash_result *r)
{
	json_object_put(r->notes);
	r->notes = NULL;
}

int crash_result_ok(const struct crash_result *r)
{
	return r->acked_not_durable == 0 && r->mismatches == 0 && r->caught == r->injected && r->locality_breaks == 0;
}

json_object *crash_result_json(const struct crash_input *in, const struct crash_result *r)
{
	json_object *o = json_object_new_object(), *bm = json_object_new_object();

	json_object_object_add(o, "board", json_object_new_string(in->board));
	json_object_object_add(o, "cycle", json_object_new_int64(in->cycle));
	if (r->mode[0])
		json_object_object_add(o, "mode", json_object_new_string(r->mode));
	json_object_object_add(o, "states", json_object_new_int64(r->states));
	json_object_object_add(o, "writes", json_object_new_int64(r->writes));
	json_object_object_add(o, "durable", json_object_new_int64(r->durable));
	json_object_object_add(o, "volatile", json_object_new_int64(r->volatile_));
	json_object_object_add(o, "acked", json_object_new_int64(r->acked));
	json_object_object_add(o, "acked_not_durable", json_object_new_int64(r->acked_not_durable));
	json_object_object_add(o, "lost_acked_states", json_object_new_int64(r->lost_acked_states));
	json_object_object_add(o, "mismatches", json_object_new_int64(r->mismatches));
	json_object_object_add(o, "injected", json_object_new_int64(r->injected));
	json_object_object_add(o, "caught", json_object_new_int64(r->caught));
	if (r->locality_checked) {
		json_object_object_add(o, "locality_checked", json_object_new_int64(r->locality_checked));
		json_object_object_add(o, "locality_breaks", json_object_new_int64(r->locality_breaks));
	}
	for (unsigned m = 0; m < CRASH_M_MAX; m++) {
		json_object *x = json_object_new_object();
		json_object_object_add(x, "states", json_object_new_int64(r->by_mode[m]));
		char ms[32];

		snprintf(ms, sizeof(ms), "%.1f", r->ms_by_mode[m]);
		json_object_object_add(x, "ms", json_object_new_double_s(r->ms_by_mode[m], ms));
		json_object_object_add(bm, crash_mode_name((enum crash_mode)m), x);
	}
	json_object_object_add(o, "by_mode", bm);
	if (r->observed >= 0) {
		json_object *x = json_object_new_object();

		json_object_object_add(x, "enumerated", json_object_new_string(r->observed == 2 ? "exact" :
										r->observed == 1 ? "by_slot" : "no"));
		json_object_object_add(x, "legal", json_object_new_boolean(r->observed_legal));
		json_object_object_add(x, "known", json_object_new_boolean(r->observed_known));
		json_object_object_add(x, "verdict", json_object_new_string(r->observed_verdict));
		if (in->recorded)
			json_object_object_add(x, "recorded", json_object_new_string(in->recorded));
		json_object_object_add(o, "observed", x);
	}
	json_object_object_add(o, "ms", json_object_new_int64((int64_t)(r->ms + 0.5)));
	json_object_object_add(o, "cpu_ms", json_object_new_int64((int64_t)(r->cpu_ms + 0.5)));
	json_object_object_add(o, "ok", json_object_new_boolean(crash_result_ok(r)));
	if (r->notes && json_object_array_length(r->notes))
		json_object_object_add(o, "notes", json_object_get(r->notes));
	return o;
}

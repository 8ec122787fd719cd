/*
 * region_scan.c - scan a powercut region: every slot asked for read, checked
 * and reported (docs/protocol.md), in large chunks through io_uring where the
 * device has it.
 */
#include "agent/region.h"
#include "agent/region_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/proto.h"
#include "common/util.h"
#include "agent/blockdev.h"


/* ---- scan ---- */

struct occupant {
	uint64_t seq;
	uint32_t cycle;
	uint16_t flags;
	uint8_t whole;	/* 1: one whole record at its own LBAs */
};

struct scan {
	struct region *r;
	struct occupant *occ;
	uint8_t *want;		/* NULL: every slot */
	/* a partial scan's wanted slots, each once, in slot order and in position order: it
	 * costs the slots asked for, not the region */
	uint32_t *wslot, *wpos;
	uint32_t nw;
	int occ_lazy;		/* occ's pages come as the few wanted slots touch them */
	region_emit_fn emit;
	void *arg;
	struct scan_stats *st;
	const struct pc_known *known;	/* sorted by slot, idx */
	uint32_t nknown;
	const struct pc_known_slot *kslots;	/* sorted by slot */
	uint32_t nkslots;
	uint32_t *same;			/* damaged slots found as known, for SAME lines */
	uint32_t nsame;
	int ret;
};

static int kslot_cmp(const void *a, const void *b)
{
	const struct pc_known_slot *x = a, *y = b;

	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return x->digest < y->digest ? -1 : x->digest > y->digest;
}

static int known_cmp(const void *a, const void *b)
{
	const struct pc_known *x = a, *y = b;

	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	return x->crc < y->crc ? -1 : x->crc > y->crc;
}

/* The host holds these very bytes of sector idx of slot already. */
static int is_known(const struct scan *s, uint32_t slot, uint32_t idx, uint32_t crc)
{
	struct pc_known k = { slot, (uint16_t)idx, crc };

	return idx <= UINT16_MAX && s->nknown &&
	       bsearch(&k, s->known, s->nknown, sizeof(k), known_cmp) != NULL;
}

static int emit(struct scan *s, json_object *msg)
{
	if (!msg) {
		s->ret = -ENOMEM;
		return s->ret;
	}
	if (!s->ret)
		s->ret = s->emit(msg, s->arg);
	else
		json_object_put(msg);
	return s->ret;
}

static int all_same(const uint8_t *p, size_t n, uint8_t *v)
{
	for (size_t i = 1; i < n; i++)
		if (p[i] != p[0])
			return 0;
	*v = p[0];
	return 1;
}

/* Classify one slot's sectors: whole record, or a slot report. rerr[i] != 0
 * marks sectors whose read failed. */
/* Each sector of a record that is not whole, as the slot message says it:
 * a read error, a valid header, a fill byte, or bad (its CRC32C; raw or
 * hash decided later). NULL: out of memory. */
static struct pc_sect_report *sect_look(const struct pc_geom *g, const uint8_t *rec, const int *rerr)
{
	uint32_t spr = pc_geom_spr(g);
	struct pc_sect_report *sect = calloc(spr, sizeof(*sect));
	struct pc_sector_hdr h;

	if (!sect)
		return NULL;
	for (uint32_t i = 0; i < spr; i++) {
		const uint8_t *p = rec + (size_t)i * PC_SECTOR;
		struct pc_sect_report *e = &sect[i];
		uint8_t v;

		e->idx = (uint16_t)i;
		if (rerr[i]) {
			e->kind = PC_SK_ERR;
			e->value = (uint32_t)-rerr[i];
		} else if (pc_sector_check(p, g, &h) == PC_SECT_VALID) {
			e->kind = PC_SK_VALID;
			e->seq = h.seq;
			e->cycle = h.cycle;
			e->flags = h.flags;
			e->lba = h.lba;
			e->hidx = h.idx;
		} else if (all_same(p, PC_SECTOR, &v)) {
			e->kind = PC_SK_FILL;
			e->value = v;
		} else {
			e->kind = PC_SK_HASH;	/* bad: raw or hash decided below */
			e->value = pc_crc32c(0, p, PC_SECTOR);
		}
	}
	return sect;
}

/* Is this exactly the damage the host holds (KNOWN)? Then its number is
 * enough: 1, the slot counted as the same. */
static int slot_same(struct scan *s, uint32_t slot, const struct pc_sect_report *sect, uint32_t spr)
{
	struct pc_known_slot key = { slot, pc_slot_digest(sect, spr) };
	uint32_t *n;

	if (!s->nkslots || !bsearch(&key, s->kslots, s->nkslots, sizeof(key), kslot_cmp))
		return 0;
	n = s->nsame % 1024 ? s->same : realloc(s->same, (s->nsame + 1024) * sizeof(*n));
	if (!n) {
		s->ret = -ENOMEM;
		return 1;
	}
	s->same = n;
	s->same[s->nsame++] = slot;
	s->st->same++;
	return 1;
}

/* A damaged slot's report: bad sectors the host does not hold go raw (up
 * to PC_PROTO_MAX_RAW a scan), then the slot messages. */
static void slot_report(struct scan *s, uint32_t slot, struct pc_sect_report *sect, uint32_t spr, const uint8_t *rec)
{
	struct pc_slot_report rep;

	for (uint32_t i = 0; i < spr; i++) {
		struct pc_sect_report *e = &sect[i];

		if (e->kind != PC_SK_HASH)
			continue;
		if (is_known(s, slot, i, e->value)) {
			/* old damage, unchanged: the host has its bytes */
			s->st->known++;
		} else if (s->st->raw_sent < PC_PROTO_MAX_RAW) {
			e->kind = PC_SK_RAW;
			memcpy(e->raw, rec + (size_t)i * PC_SECTOR, PC_SECTOR);
			s->st->raw_sent++;
		} else {
			s->st->raw_dropped++;
		}
	}
	/* One slot message must fit a protocol line: a large record goes out as
	 * several messages for the same slot, in sector order (docs/protocol.md). */
	for (uint32_t i = 0; i < spr && !s->ret;) {
		size_t budget = PC_PROTO_MAX_LINE - 256, used = 0;
		uint32_t j = i;

		while (j < spr) {
			size_t cost = sect[j].kind == PC_SK_RAW ? 720 : sect[j].kind == PC_SK_VALID ? 110 : 40;
			if (used + cost > budget && j > i)
				break;
			used += cost;
			j++;
		}
		rep.slot = slot;
		rep.nsect = j - i;
		rep.sect = sect + i;
		emit(s, pc_msg_slot(&rep));
		i = j;
	}
}

static void scan_slot(struct scan *s, uint32_t slot, const uint8_t *rec, const int *rerr)
{
	const struct pc_geom *g = &s->r->g;
	uint32_t spr = pc_geom_spr(g);
	uint64_t lba0 = pc_slot_lba(g, slot);
	struct pc_sect_report *sect;
	struct pc_sector_hdr h, first = { 0 };
	int whole = 1, readable = 1;

	for (uint32_t i = 0; i < spr && readable; i++)
		readable = !rerr[i];
	if (readable && pc_record_whole(rec, g, lba0, &first)) {
		s->occ[slot] = (struct occupant){ first.seq, first.cycle, first.flags, 1 };
		return;
	}
	/* not whole: the sector-by-sector look says what it is instead */
	for (uint32_t i = 0; i < spr && whole; i++) {
		if (rerr[i] || pc_sector_check(rec + (size_t)i * PC_SECTOR, g, &h) != PC_SECT_VALID ||
		    h.lba != lba0 + i || h.idx != i) {
			whole = 0;
			break;
		}
		if (i == 0)
			first = h;
		else if (h.seq != first.seq || h.cycle != first.cycle || h.flags != first.flags)
			whole = 0;
	}
	if (whole) {
		s->occ[slot] = (struct occupant){ first.seq, first.cycle, first.flags, 1 };
		return;
	}
	s->occ[slot].whole = 0;
	s->st->anomalies++;
	sect = sect_look(g, rec, rerr);
	if (!sect) {
		s->ret = -ENOMEM;
		return;
	}
	if (!slot_same(s, slot, sect, spr))
		slot_report(s, slot, sect, spr, rec);
	free(sect);
}

static int wanted(const struct scan *s, uint32_t slot)
{
	return !s->want || s->want[slot];
}

/*
 * The scan's reads: up to SCAN_BUFS chunks of consecutive wanted slots, each
 * at most SCAN_CHUNK bytes (one record when records are larger), kept in
 * flight through the backend's aio_read while earlier chunks are checked.
 * Where there is no aio_read (the sim), or it fails to start (no io_uring:
 * ENOSYS, qemu-user), each chunk is read synchronously when its turn comes:
 * the same bytes, the same order of checks and messages, only no overlap.
 * SCAN_BUFS x SCAN_CHUNK is the scan's whole buffer memory (1 MiB).
 */
#define SCAN_BUFS 4
#define SCAN_CHUNK_IO (SCAN_CHUNK / SCAN_BUFS)

struct scan_chunk {
	uint32_t slot, n;	/* n == 0: unused */
	uint64_t off;
	uint8_t *buf;
	int submitted;		/* its read went out through aio_read */
	int done;		/* and completed */
	struct dev_io io;
};

struct scan_io {
	struct scan *s;
	struct scan_chunk c[SCAN_BUFS];
	uint32_t per;		/* slots per chunk */
	uint32_t next;		/* the next slot to consider */
	uint32_t wi;		/* a partial scan: the next of s->wslot */
	unsigned head, queued;	/* oldest chunk, chunks taken */
	unsigned inflight;	/* async reads not reaped yet */
	int async;
	int broken;		/* a wait failed: the kernel may still write the buffers */
};

/* The next run of consecutive wanted slots into chunk c; 0 when none is left. */
static int scan_next_chunk(struct scan_io *x, struct scan_chunk *c)
{
	struct scan *s = x->s;
	struct region *r = s->r;

	if (s->wslot) {
		/* the same chunks as the loop below, from the wanted slots alone */
		if (x->wi >= s->nw)
			return 0;
		c->slot = s->wslot[x->wi];
		c->n = 0;
		while (c->n < x->per && x->wi < s->nw && s->wslot[x->wi] == c->slot + c->n) {
			c->n++;
			x->wi++;
		}
		region_slot_offset(r, c->slot, &c->off);
		c->submitted = c->done = 0;
		return 1;
	}
	while (x->next < r->g.nslots && !wanted(s, x->next))
		x->next++;
	if (x->next >= r->g.nslots)
		return 0;
	c->slot = x->next;
	c->n = 0;
	while (c->n < x->per && x->next < r->g.nslots && wanted(s, x->next)) {
		c->n++;
		x->next++;
	}
	region_slot_offset(r, c->slot, &c->off);
	c->submitted = c->done = 0;
	return 1;
}

static void scan_reap(struct scan_io *x, unsigned min)
{
	struct dev *d = &x->s->r->dev;
	struct dev_io *done[SCAN_BUFS];
	int n = d->ops->aio_reap(d, done, SCAN_BUFS, min);

	if (n < 0 || (n == 0 && min)) {
		x->broken = 1;
		x->inflight = 0;
		if (!x->s->ret)
			x->s->ret = n < 0 ? n : -EIO;
		return;
	}
	for (int i = 0; i < n; i++) {
		struct scan_chunk *c = &x->c[done[i]->tag];

		c->done = 1;
		x->inflight--;
	}
}

/* Take chunks and start their reads until SCAN_BUFS are taken. */
static void scan_fill(struct scan_io *x)
{
	struct dev *d = &x->s->r->dev;

	while (x->queued < SCAN_BUFS && !x->s->ret) {
		struct scan_chunk *c = &x->c[(x->head + x->queued) % SCAN_BUFS];

		if (!scan_next_chunk(x, c))
			return;
		x->queued++;
		if (!x->async)
			continue;
		c->io = (struct dev_io){ .off = c->off, .dst = c->buf, .len = (size_t)c->n * x->s->r->g.record_size,
					 .tag = (uint64_t)(c - x->c) };
		if (d->ops->aio_read(d, &c->io) == 0) {
			c->submitted = 1;
			x->inflight++;
			continue;
		}
		/* no async reads here after all: this chunk and the rest are read
		 * synchronously (what went out already completes as usual) */
		pc_debug("scan: reading synchronously: %s", d->err);
		x->async = 0;
	}
}

/* Read the wanted slots and check each, in slot order. */
static void scan_read(struct scan *s)
{
	struct region *r = s->r;
	uint32_t spr = pc_geom_spr(&r->g);
	struct scan_io x = { .s = s, .async = r->dev.ops->aio_read != NULL };
	size_t chunk;
	uint8_t *bufs;
	int *rerr;

	x.per = SCAN_CHUNK_IO / r->g.record_size ? SCAN_CHUNK_IO / r->g.record_size : 1;
	chunk = (size_t)x.per * r->g.record_size;
	bufs = region_mem_map(SCAN_BUFS * chunk);
	rerr = calloc((size_t)x.per * spr, sizeof(*rerr));
	if (!bufs || !rerr) {
		s->ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < SCAN_BUFS; i++)
		x.c[i].buf = bufs + i * chunk;
	for (scan_fill(&x); x.queued && !s->ret; scan_fill(&x)) {
		struct scan_chunk *c = &x.c[x.head];
		size_t len = (size_t)c->n * r->g.record_size;
		int ret = 0;

		if (c->submitted) {
			while (!c->done && !s->ret)
				scan_reap(&x, 1);
			if (s->ret)
				break;
			ret = c->io.result;
		} else {
			ret = r->dev.ops->read(&r->dev, c->off, c->buf, len);
		}
		memset(rerr, 0, (size_t)x.per * spr * sizeof(*rerr));
		if (ret) {
			/* find which sectors are unreadable, one 4 KiB block at a time */
			for (uint32_t b = 0; b < c->n * spr; b += ALIGN / PC_SECTOR) {
				uint32_t cnt = c->n * spr - b < ALIGN / PC_SECTOR ? c->n * spr - b : ALIGN / PC_SECTOR;
				int e = r->dev.ops->read(&r->dev, c->off + (uint64_t)b * PC_SECTOR,
							 c->buf + (size_t)b * PC_SECTOR, (size_t)cnt * PC_SECTOR);

				/* ...then one sector at a time, where the device reads 512 bytes
				 * (a 4Kn device refuses: the whole block is named) */
				for (uint32_t k = 0; e && k < cnt; k++) {
					int e1 = r->dev.ops->read(&r->dev, c->off + (uint64_t)(b + k) * PC_SECTOR,
								  c->buf + (size_t)(b + k) * PC_SECTOR, PC_SECTOR);

					if (e1 == -EINVAL) {
						for (uint32_t j = 0; j < cnt; j++)
							rerr[b + j] = e;
						break;
					}
					rerr[b + k] = e1;
				}
			}
		}
		for (uint32_t i = 0; i < c->n && !s->ret; i++)
			scan_slot(s, c->slot + i, c->buf + (size_t)i * r->g.record_size, rerr + (size_t)i * spr);
		c->n = 0;
		x.head = (x.head + 1) % SCAN_BUFS;
		x.queued--;
	}
	/* never free buffers the kernel may still be reading into */
	while (x.inflight && !x.broken)
		scan_reap(&x, x.inflight);
out:
	if (!x.broken)
		region_mem_unmap(bufs, SCAN_BUFS * chunk);
	free(rerr);
}

static void scan_runs(struct scan *s, int pattern)
{
	const struct pc_geom *g = &s->r->g;
	struct pc_run runs[PC_PROTO_RUNS_PER_LINE];
	uint32_t nr = 0;
	struct pc_run *cur = NULL;

	/* every position in order, or a partial scan's wanted ones (a gap ends a run, as an unwanted
	 * slot does) */
	for (uint32_t i = 0, pos; (s->wpos ? i < s->nw : i < g->nslots) && !s->ret; i++) {
		uint32_t slot;
		const struct occupant *o;

		pos = s->wpos ? s->wpos[i] : i;
		if (s->wpos && i && pos != s->wpos[i - 1] + 1)
			cur = NULL;
		slot = pc_slot_of_pos(g, pattern, pos);
		o = &s->occ[slot];
		if (!wanted(s, slot) || !o->whole) {
			cur = NULL;
			continue;
		}
		if (cur && cur->cycle == o->cycle && cur->flags == o->flags &&
		    ((cur->seq == 0 && o->seq == 0) || (cur->seq && o->seq == cur->seq + cur->n))) {
			cur->n++;
			continue;
		}
		if (nr == PC_PROTO_RUNS_PER_LINE) {
			emit(s, pc_msg_runs(runs, nr));
			nr = 0;
		}
		cur = &runs[nr++];
		*cur = (struct pc_run){ .pos = pos, .n = 1, .seq = o->seq, .cycle = o->cycle, .flags = o->flags };
	}
	if (nr)
		emit(s, pc_msg_runs(runs, nr));
}

int region_scan(struct region *r, int pattern, const struct pc_posrange *ranges, uint32_t nranges,
		region_emit_fn fn, void *arg, struct scan_stats *st)
{
	return region_scan_known(r, pattern, ranges, nranges, NULL, fn, arg, st);
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Zeroed memory whose pages come as they are first touched (a partial scan's tables, sized by the
 * region, touched at its few slots): never a pass over all of it, as calloc may make. */
static void *lazy_map(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The wanted slots (want[] 1) listed once each: by position and by slot, sorted. 0 or -ENOMEM. */
static int want_lists(struct scan *s, int pattern, const struct pc_posrange *ranges, uint32_t nranges)
{
	const struct pc_geom *g = &s->r->g;
	uint32_t n = 0;

	s->wpos = malloc((s->st->slots ? s->st->slots : 1) * sizeof(*s->wpos));
	s->wslot = malloc((s->st->slots ? s->st->slots : 1) * sizeof(*s->wslot));
	if (!s->wpos || !s->wslot)
		return -ENOMEM;
	for (uint32_t i = 0; i < nranges; i++)
		for (uint32_t p = ranges[i].pos; p < ranges[i].pos + ranges[i].n; p++) {
			uint32_t slot = pc_slot_of_pos(g, pattern, p);

			if (s->want[slot] != 1 || n >= s->st->slots)
				continue;
			s->want[slot] = 2;	/* listed (still wanted) */
			s->wpos[n] = p;
			s->wslot[n++] = slot;
		}
	s->nw = n;
	qsort(s->wpos, n, sizeof(*s->wpos), u32_cmp);
	qsort(s->wslot, n, sizeof(*s->wslot), u32_cmp);
	return 0;
}

int region_scan_known(struct region *r, int pattern, const struct pc_posrange *ranges, uint32_t nranges,
		      struct scan_known *kn, region_emit_fn fn, void *arg, struct scan_stats *st)
{
	struct scan s = { .r = r, .emit = fn, .arg = arg, .st = st };
	uint64_t t0 = pc_now_ms();
	json_object *m;

	memset(st, 0, sizeof(*st));
	if (kn && kn->k && kn->n) {
		qsort(kn->k, kn->n, sizeof(*kn->k), known_cmp);
		s.known = kn->k;
		s.nknown = kn->n;
	}
	if (kn && kn->slots && kn->nslots) {
		qsort(kn->slots, kn->nslots, sizeof(*kn->slots), kslot_cmp);
		s.kslots = kn->slots;
		s.nkslots = kn->nslots;
	}
	st->slots = r->g.nslots;
	if (ranges) {
		s.want = lazy_map(r->g.nslots);
		if (!s.want)
			return -ENOMEM;
		st->slots = 0;
		for (uint32_t i = 0; i < nranges; i++) {
			if ((uint64_t)ranges[i].pos + ranges[i].n > r->g.nslots) {
				region_mem_unmap(s.want, r->g.nslots);
				return -ERANGE;
			}
			for (uint32_t p = ranges[i].pos; p < ranges[i].pos + ranges[i].n; p++) {
				uint32_t slot = pc_slot_of_pos(&r->g, pattern, p);
				st->slots += !s.want[slot];
				s.want[slot] = 1;
			}
		}
	}
	/* a scan of a few slots in a large region (under a 64th) maps in only the pages it touches */
	s.occ_lazy = s.want && st->slots < r->g.nslots / 64;
	s.occ = s.want && want_lists(&s, pattern, ranges, nranges) ? NULL :
		s.occ_lazy ? lazy_map((size_t)r->g.nslots * sizeof(*s.occ)) :
		region_mem_map((size_t)r->g.nslots * sizeof(*s.occ));
	if (!s.occ) {
		region_mem_unmap(s.want, r->g.nslots);
		free(s.wpos);
		free(s.wslot);
		return -ENOMEM;
	}
	m = pc_msg_new(PC_MSG_SCAN_BEGIN);
	json_object_object_add(m, "slots", json_object_new_int64(st->slots));
	json_object_object_add(m, "pattern", json_object_new_string(pc_pattern_name(pattern)));
	json_object_object_add(m, "full", json_object_new_boolean(ranges == NULL));
	emit(&s, m);
	/* Slot reports go out while reading; runs need the whole picture. */
	scan_read(&s);
	scan_runs(&s, pattern);
	for (uint32_t i = 0; i < s.nsame && !s.ret; i += PC_PROTO_SAME_PER_LINE)
		emit(&s, pc_msg_same(s.same + i, s.nsame - i < PC_PROTO_SAME_PER_LINE ? s.nsame - i :
								   PC_PROTO_SAME_PER_LINE));
	free(s.same);
	st->ms = pc_now_ms() - t0;
	m = pc_msg_new(PC_MSG_SCAN_END);
	json_object_object_add(m, "slots", json_object_new_int64(st->slots));
	json_object_object_add(m, "anomalies", json_object_new_int64(st->anomalies));
	json_object_object_add(m, "raw_dropped", json_object_new_int64(st->raw_dropped));
	json_object_object_add(m, "known", json_object_new_int64(st->known));
	json_object_object_add(m, "same", json_object_new_int64(st->same));
	json_object_object_add(m, "ms", json_object_new_int64((int64_t)st->ms));
	emit(&s, m);
	region_mem_unmap(s.occ, (size_t)r->g.nslots * sizeof(*s.occ));
	region_mem_unmap(s.want, r->g.nslots);
	free(s.wpos);
	free(s.wslot);
	return s.ret;
}

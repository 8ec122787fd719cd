/*
 * emmc.c - the emulated eMMC (see emmc.h and docs/sim.md).
 *
 * The volatile write cache is a FIFO of write requests. Only one cached copy
 * of a sector is ever live: a write marks the sectors it overwrites dead in
 * older entries, so a read can take any live copy and destaging, which
 * programs live sectors only, never puts older data over newer. Capacity is
 * counted in live sectors. Every operation walks the FIFO once; with the
 * default 256-sector cache that is a handful of entries.
 *
 * What must outlive a cut lives in files next to the media, mapped MAP_SHARED
 * and changed with plain stores, which a SIGKILL cannot undo once made:
 * <media>.state, the status page (which sector is being programmed, how far,
 * and which power-on fault is half done), and for the stale profile
 * <media>.stale, a ring of records as they were before being overwritten.
 * The faults of a power-on are taken from the status page and the media, each
 * logged before it is committed, and a power-on that is itself cut resumes
 * them instead of repeating them.
 */
#include "sim/emmc.h"
#include "sim/opts_int.h"
#include "sim/sim_truth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/record.h"
#include "common/util.h"

#define SIM_ALL_PROFILES	((SIM_P_NO_FUA << 1) - 1)
/* the profiles that draw from the seeded generator and use the rate */
#define SIM_RANDOM_PROFILES	(SIM_P_TEARING_RELWR | SIM_P_PAIRED_PAGE | SIM_P_MISDIRECT | \
				 SIM_P_BITROT | SIM_P_STALE | SIM_P_BRICK)
#define SIM_CHUNKS		8u	/* subsector-tear: a sector programs in 8 chunks of 64 bytes */
#define SIM_CHUNK_BYTES		(PC_SECTOR / SIM_CHUNKS)
#define SIM_PAIR_DISTANCE	64u	/* paired-page: sectors from a page back to its pair */
/* Faults at power-on spare the first two sessions: prepare, and the boot whose
 * scan is the verifier's baseline (damage found there is taken as given). */
#define SIM_QUIET_SESSIONS	2u
#define SIM_MISDIRECT_TRIES	16u
#define SIM_BITROT_TRIES	256u
#define SIM_RING_ENTS		64u
#define SIM_RING_PER_SESSION	32u	/* leaves room for records of older sessions */
#define SIM_RING_DEF_BYTES	65536u	/* per entry when the region has no superblock yet */
#define SIM_PAGE		4096u
#define SIM_STATE_MAGIC		0x54534350u	/* "PCST" */
#define SIM_RING_MAGIC		0x52534350u	/* "PCSR" */
#define SIM_FILE_VERSION	1u

/* Keep the compiler from moving status-page stores across each other or a write. */
#define sim_barrier()	__asm__ __volatile__("" ::: "memory")


/* Power-on steps already taken in the session done_session names. */
#define SIM_DONE_TEAR	(1u << 0)
#define SIM_DONE_PAIRED	(1u << 1)
#define SIM_DONE_BITROT	(1u << 2)
#define SIM_DONE_STALE	(1u << 3)

enum sim_pend_kind {
	SIM_PEND_NONE,
	SIM_PEND_TEAR,
	SIM_PEND_PAIRED,
	SIM_PEND_BITROT,
	SIM_PEND_STALE,
	SIM_PEND_NKINDS,
};

#define SIM_PEND_MAXKV	5

/* The truth line of each power-on fault: its members, in order, then expect. */
static const struct {
	const char *ev;
	const char *keys[SIM_PEND_MAXKV];
	unsigned nkv;
	const char *expect;
	unsigned done;
} sim_pend_kinds[SIM_PEND_NKINDS] = {
	[SIM_PEND_TEAR] = { "subsector_tear", { "lba", "sector_lba", "offset", "seq" }, 4,
			    "torn_sector", SIM_DONE_TEAR },
	[SIM_PEND_PAIRED] = { "paired_page", { "lba", "sector_lba", "cut_lba", "bits", "seq" }, 5,
			      "corrupt-or-collateral", SIM_DONE_PAIRED },
	[SIM_PEND_BITROT] = { "bitrot", { "lba", "sector_lba", "bits", "seq" }, 4,
			      "corrupt-or-collateral", SIM_DONE_BITROT },
	[SIM_PEND_STALE] = { "stale", { "lba", "n", "seq_restored", "seq_lost" }, 4,
			     "stale", SIM_DONE_STALE },
};

/*
 * A power-on fault in progress. Stage 1: decided, its line may not be in the
 * log yet; stage 2: logged, its media write may not be done yet. The write
 * puts fixed bytes at a fixed place, so doing it twice is harmless.
 */
struct sim_pend {
	uint32_t stage;
	uint32_t kind;			/* enum sim_pend_kind */
	uint32_t session;		/* the line's session */
	uint32_t done_session;		/* the power-on whose step this is */
	uint64_t v[SIM_PEND_MAXKV];	/* the line's members, as sim_pend_kinds names them */
	uint64_t lba;			/* where the media write goes */
	uint32_t n;			/* sectors; 0: only a line (a tear is already on the media) */
	uint32_t ring;			/* stale: the ring entry holding the data */
	uint8_t data[PC_SECTOR];	/* paired-page, bitrot: the damaged sector */
};

/* The status page, <media>.state. */
struct sim_state {
	uint32_t magic;
	uint32_t version;
	uint64_t dev, ino;	/* the media file it describes */
	uint32_t session;	/* the session whose programming it describes */
	uint32_t prog;		/* a sector is being programmed */
	uint64_t req_lba;	/* the request it belongs to: lba, n, seq */
	uint64_t req_seq;
	uint32_t req_n;
	uint32_t sect_idx;	/* the new sector's header: idx, seq */
	uint64_t sect_lba;
	uint64_t sect_seq;
	uint32_t chunks_done;	/* chunks programmed, of nchunks */
	uint32_t nchunks;
	uint32_t done;		/* SIM_DONE_* */
	uint32_t done_session;
	struct sim_pend pend;
	uint8_t sect_new[PC_SECTOR];	/* a chunked program's data */
};

/* One record as it was before a write replaced it. */
struct sim_ring_ent {
	uint64_t lba;
	uint64_t old_seq;	/* the record kept */
	uint64_t new_seq;	/* the record that replaced it */
	uint32_t n;
	uint32_t session;	/* when it was replaced */
	uint32_t valid;
	uint32_t pad;
};

/* <media>.stale: this header page, then SIM_RING_ENTS * slot_bytes of data. */
struct sim_ring {
	uint32_t magic;
	uint32_t version;
	uint64_t dev, ino;
	uint32_t slot_bytes;
	uint32_t next;		/* the entry to fill next */
	uint32_t cur_session;	/* entries filled by cur_session */
	uint32_t cur_count;
	struct sim_ring_ent ent[SIM_RING_ENTS];
};

_Static_assert(sizeof(struct sim_state) <= SIM_PAGE, "the status page is one page");
_Static_assert(sizeof(struct sim_ring) <= SIM_PAGE, "the ring header is one page");

/* One cached write request. */
struct sim_ent {
	struct sim_ent *next;
	uint64_t lba;
	uint32_t nsect;
	uint32_t nlive;		/* sectors still holding the newest copy */
	uint64_t seq;		/* record header seq of the first sector (truth log only) */
	int raw;		/* first sector is not a powercut record */
	uint8_t *live;		/* nsect flags */
	uint8_t *data;		/* nsect * 512 bytes */
};

struct sim_emmc {
	char *media;
	int fd;
	const uint8_t *map;	/* the NAND: PROT_READ, MAP_SHARED */
	uint64_t sectors;
	uint64_t dev, ino;
	unsigned profile;
	uint32_t program_us;
	uint32_t chunk_us;	/* subsector-tear: program time of one chunk */
	uint32_t cache_sectors;
	uint32_t cached;	/* live sectors in the cache */
	struct sim_ent *head;	/* oldest */
	struct sim_ent *tail;	/* newest */
	struct sim_truth *truth;
	uint32_t session;
	uint64_t seed;
	double rate;
	uint64_t rng;		/* this session's generator state */
	struct pc_geom g;	/* from the superblock at power-on, if there was one */
	int have_geom;
	uint64_t slot_lo, slot_hi;	/* the slot area [lo, hi): never a superblock */
	struct sim_state *st;	/* MAP_SHARED */
	struct sim_ring *ring;	/* MAP_SHARED; stale only */
	size_t ring_len;
	uint64_t cut_after;	/* deterministic cut point (0: none) */
	uint64_t programmed;	/* record sectors programmed this session */
	/* the exact cut (sim_opts.cut_op): the planned operation, and once it
	 * started with a delay, the sectors it may still program */
	unsigned cut_op;
	uint32_t cut_nth, cut_delay_us;
	uint32_t cut_seen;		/* flushes or FUA writes so far this session */
	int cut_armed;			/* the nth flush runs: cut after cut_left more sectors */
	uint64_t cut_left, cut_prog;
	struct sim_truth_ent *cut_ents;	/* what was cached when the flush started */
	size_t cut_nents;
};

int sim_emmc_create(const char *media, uint64_t size, char *err, size_t errlen)
{
	int fd, ret = 0;

	if (size == 0 || size % PC_SECTOR || size > (uint64_t)INT64_MAX) {
		snprintf(err, errlen, "sim media %s: size %" PRIu64 " is not a positive multiple of 512",
			 media, size);
		return -EINVAL;
	}
	fd = open(media, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		if (ret == -EEXIST)
			snprintf(err, errlen, "sim media %s already exists; remove it to make a new one", media);
		else
			snprintf(err, errlen, "sim media %s: cannot create: %s", media, strerror(-ret));
		return ret;
	}
	/* sparse: reads as zeros, costs no space until programmed */
	if (ftruncate(fd, (off_t)size) < 0) {
		ret = -errno;
		snprintf(err, errlen, "sim media %s: cannot size to %" PRIu64 " bytes: %s", media, size,
			 strerror(-ret));
		unlink(media);
	}
	close(fd);
	return ret;
}

static int sim_check_opts(const char *media, const struct sim_opts *o, char *err, size_t errlen)
{
	if (o->profile & ~(unsigned)SIM_ALL_PROFILES) {
		snprintf(err, errlen, "sim profile bits 0x%x are unknown", o->profile & ~(unsigned)SIM_ALL_PROFILES);
		return -EINVAL;
	}
	if (!(o->rate >= 0 && o->rate <= 1)) {	/* NaN too */
		snprintf(err, errlen, "sim media %s: fault rate %g is outside 0..1", media, o->rate);
		return -EINVAL;
	}
	return 0;
}

static int sim_map_media(struct sim_emmc *e, char *err, size_t errlen)
{
	struct stat st;
	void *map;
	int ret;

	e->fd = open(e->media, O_RDWR | O_CLOEXEC);
	if (e->fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "sim media %s: cannot open: %s%s", e->media, strerror(-ret),
			 ret == -ENOENT ? " (create it first)" : "");
		return ret;
	}
	if (fstat(e->fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "sim media %s: cannot stat: %s", e->media, strerror(-ret));
		return ret;
	}
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size % PC_SECTOR) {
		snprintf(err, errlen, "sim media %s is not a regular file whose size is a positive multiple of 512",
			 e->media);
		return -EINVAL;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, e->fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "sim media %s: cannot map: %s", e->media, strerror(-ret));
		return ret;
	}
	e->map = map;
	e->sectors = (uint64_t)st.st_size / PC_SECTOR;
	e->dev = (uint64_t)st.st_dev;
	e->ino = (uint64_t)st.st_ino;
	return 0;
}

/* The seeded generator: splitmix64 over (seed, session), so runs reproduce. */
static uint64_t sim_rand(struct sim_emmc *e)
{
	e->rng += 0x9e3779b97f4a7c15ull;
	return pc_mix64(e->rng);
}

static uint64_t sim_below(struct sim_emmc *e, uint64_t n)
{
	return n ? sim_rand(e) % n : 0;
}

/* True with probability rate (always at 1.0, never at 0). */
static int sim_chance(struct sim_emmc *e)
{
	return (double)(sim_rand(e) >> 11) * 0x1p-53 < e->rate;
}

/*
 * The slot area, from the superblock at LBA 0 if the region is prepared, so
 * faults never land in a superblock; else everything but the 8 sectors at
 * each end.
 */
static void sim_geom_load(struct sim_emmc *e)
{
	struct pc_geom g;
	char why[160];

	e->slot_lo = PC_SB_RESERVE_SECT;
	e->slot_hi = e->sectors > 2 * PC_SB_RESERVE_SECT ? e->sectors - PC_SB_RESERVE_SECT : e->slot_lo;
	if (pc_sb_decode(e->map, &g, why, sizeof(why)) || g.region_bytes / PC_SECTOR > e->sectors)
		return;
	e->g = g;
	e->have_geom = 1;
	e->slot_hi = pc_slot_lba(&g, g.nslots);
}

/* First LBA of the record holding sector lba, whose header says it is sector idx. */
static uint64_t sim_rec_start(const struct sim_emmc *e, uint64_t lba, uint32_t idx)
{
	if (e->have_geom && lba >= e->slot_lo && lba < e->slot_hi) {
		uint32_t spr = pc_geom_spr(&e->g);

		return e->slot_lo + (lba - e->slot_lo) / spr * spr;
	}
	return lba >= e->slot_lo && idx <= lba - e->slot_lo ? lba - idx : lba;
}

static void sim_side_path(const struct sim_emmc *e, const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", e->media, suffix);
}

/* Map a side file of len bytes next to the media, creating or resizing it (zeroed). */
static int sim_side_map(struct sim_emmc *e, const char *suffix, size_t len, void **out,
			char *err, size_t errlen)
{
	char path[PATH_MAX + 16];
	struct stat st;
	void *m;
	int fd, ret = 0;

	sim_side_path(e, suffix, path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "sim media %s: cannot open %s: %s", e->media, path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "sim media %s: cannot stat %s: %s", e->media, path, strerror(-ret));
		goto out;
	}
	if ((uint64_t)st.st_size != len && (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)len) < 0)) {
		ret = -errno;
		snprintf(err, errlen, "sim media %s: cannot size %s: %s", e->media, path, strerror(-ret));
		goto out;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "sim media %s: cannot map %s: %s", e->media, path, strerror(-ret));
		goto out;
	}
	*out = m;
out:
	close(fd);
	return ret;
}

/*
 * The status page. What it says about another media file, or about a media
 * whose truth log starts over (session 1: the board was made anew), is void.
 */
static int sim_state_open(struct sim_emmc *e, char *err, size_t errlen)
{
	struct sim_state *st;
	void *m;
	int ret = sim_side_map(e, ".state", SIM_PAGE, &m, err, errlen);

	if (ret)
		return ret;
	e->st = st = m;
	if (st->magic != SIM_STATE_MAGIC || st->version != SIM_FILE_VERSION || st->dev != e->dev ||
	    st->ino != e->ino || e->session == 1) {
		memset(st, 0, SIM_PAGE);
		st->magic = SIM_STATE_MAGIC;
		st->version = SIM_FILE_VERSION;
		st->dev = e->dev;
		st->ino = e->ino;
	}
	return 0;
}

/* The stale ring, one entry a record (record_size from the superblock). */
static int sim_ring_open(struct sim_emmc *e, char *err, size_t errlen)
{
	uint32_t bytes = e->have_geom ? e->g.record_size : SIM_RING_DEF_BYTES;
	size_t len = SIM_PAGE + (size_t)SIM_RING_ENTS * bytes;
	struct sim_ring *r;
	void *m;
	int ret = sim_side_map(e, ".stale", len, &m, err, errlen);

	if (ret)
		return ret;
	e->ring = r = m;
	e->ring_len = len;
	if (r->magic != SIM_RING_MAGIC || r->version != SIM_FILE_VERSION || r->dev != e->dev ||
	    r->ino != e->ino || r->slot_bytes != bytes || e->session == 1) {
		memset(r, 0, SIM_PAGE);
		r->magic = SIM_RING_MAGIC;
		r->version = SIM_FILE_VERSION;
		r->dev = e->dev;
		r->ino = e->ino;
		r->slot_bytes = bytes;
	}
	return 0;
}

static uint8_t *sim_ring_data(const struct sim_emmc *e, uint32_t i)
{
	return (uint8_t *)e->ring + SIM_PAGE + (size_t)i * e->ring->slot_bytes;
}

/*
 * stale: keep the record a whole-record write is about to replace. A session
 * fills at most half the ring, so records replaced in earlier sessions, the
 * only ones that can come back as stale, outlive a long cycle.
 */
static void sim_ring_save(struct sim_emmc *e, uint64_t lba, uint32_t n, const uint8_t *newd)
{
	struct sim_ring *r = e->ring;
	struct sim_ring_ent *x;
	const uint8_t *old;
	uint32_t i;

	if (!r || !e->have_geom || n != pc_geom_spr(&e->g) || (uint64_t)n * PC_SECTOR > r->slot_bytes ||
	    lba < e->slot_lo || lba + n > e->slot_hi || (lba - e->slot_lo) % n)
		return;
	old = e->map + lba * PC_SECTOR;
	if (pc_get32(old + PC_OFF_MAGIC) != PC_REC_MAGIC || pc_get32(newd + PC_OFF_MAGIC) != PC_REC_MAGIC)
		return;
	if (r->cur_session != e->session) {
		r->cur_session = e->session;
		r->cur_count = 0;
	}
	if (r->cur_count >= SIM_RING_PER_SESSION)
		return;
	i = r->next % SIM_RING_ENTS;
	x = &r->ent[i];
	x->valid = 0;
	sim_barrier();
	memcpy(sim_ring_data(e, i), old, (size_t)n * PC_SECTOR);
	x->lba = lba;
	x->n = n;
	x->old_seq = pc_get64(old + PC_OFF_SEQ);
	x->new_seq = pc_get64(newd + PC_OFF_SEQ);
	x->session = e->session;
	sim_barrier();
	x->valid = 1;
	r->next = (i + 1) % SIM_RING_ENTS;
	r->cur_count++;
}

/* Log the pending fault's line; once: unless it is the log's last line already. */
static int sim_pend_log(struct sim_emmc *e, int once)
{
	const struct sim_pend *p = &e->st->pend;
	struct sim_truth_kv kv[SIM_PEND_MAXKV];

	for (unsigned i = 0; i < sim_pend_kinds[p->kind].nkv; i++) {
		kv[i].key = sim_pend_kinds[p->kind].keys[i];
		kv[i].v = p->v[i];
	}
	return sim_truth_fault(e->truth, p->session, sim_pend_kinds[p->kind].ev, kv,
			       sim_pend_kinds[p->kind].nkv, sim_pend_kinds[p->kind].expect, once);
}

/* The bytes the pending fault writes, or NULL if they are gone (stale ring reset). */
static const uint8_t *sim_pend_src(const struct sim_emmc *e, const struct sim_pend *p)
{
	if (p->kind != SIM_PEND_STALE)
		return p->data;
	if (!e->ring || p->ring >= SIM_RING_ENTS || (uint64_t)p->n * PC_SECTOR > e->ring->slot_bytes)
		return NULL;
	return sim_ring_data(e, p->ring);
}

/*
 * Carry the pending fault through: log it, then commit it to the media.
 * resume: a cut power-on left it. A kill that came during the log's write()
 * let the line out but not the stage store after it, so at stage 1 the line
 * may be there already.
 */
static int sim_pend_run(struct sim_emmc *e, int resume)
{
	struct sim_pend *p = &e->st->pend;
	int ret;

	if (p->kind == SIM_PEND_NONE || p->kind >= SIM_PEND_NKINDS || p->stage > 2) {
		p->stage = 0;
		return 0;
	}
	if (p->stage == 1) {
		ret = sim_pend_log(e, resume);
		if (ret)
			return ret;
		sim_barrier();
		p->stage = 2;
		sim_barrier();
	}
	if (p->n && p->lba + p->n <= e->sectors) {
		const uint8_t *src = sim_pend_src(e, p);

		if (src) {
			ret = pc_pwrite_all(e->fd, src, (size_t)p->n * PC_SECTOR, (off_t)(p->lba * PC_SECTOR));
			if (ret)
				return ret;
		}
		if (p->kind == SIM_PEND_STALE && e->ring && p->ring < SIM_RING_ENTS)
			e->ring->ent[p->ring].valid = 0;	/* it came back once */
	}
	if (p->done_session == e->st->done_session)
		e->st->done |= sim_pend_kinds[p->kind].done;
	sim_barrier();
	p->stage = 0;
	return 0;
}

/* A fresh pending fault for the caller to fill in and start. */
static struct sim_pend *sim_pend_new(struct sim_emmc *e, enum sim_pend_kind kind, uint32_t session)
{
	struct sim_pend *p = &e->st->pend;

	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->session = session;
	p->done_session = e->session;
	return p;
}

static int sim_pend_start(struct sim_emmc *e)
{
	sim_barrier();
	e->st->pend.stage = 1;
	sim_barrier();
	return sim_pend_run(e, 0);
}

/* Flip 1..max distinct random bits of a sector; returns how many. */
static unsigned sim_flip_bits(struct sim_emmc *e, uint8_t *sect, unsigned max)
{
	unsigned b = 1 + (unsigned)sim_below(e, max), pos[8], n = 0;

	while (n < b) {
		unsigned x = (unsigned)sim_below(e, PC_SECTOR * 8), k;

		for (k = 0; k < n && pos[k] != x; k++)
			;
		if (k < n)
			continue;
		pos[n++] = x;
		sect[x / 8] ^= (uint8_t)(1u << (x % 8));
	}
	return b;
}

/* paired-page: the program the cut interrupted damages its pair page, if it holds a record. */
static int sim_paired_page(struct sim_emmc *e, uint32_t prev)
{
	uint64_t cut = e->st->sect_lba, pl;
	const uint8_t *s;
	struct sim_pend *p;

	if (!sim_chance(e) || cut < e->slot_lo + SIM_PAIR_DISTANCE)
		goto none;
	pl = cut - SIM_PAIR_DISTANCE;
	s = e->map + pl * PC_SECTOR;
	if (pl >= e->slot_hi || pc_get32(s + PC_OFF_MAGIC) != PC_REC_MAGIC)
		goto none;
	p = sim_pend_new(e, SIM_PEND_PAIRED, prev);
	memcpy(p->data, s, PC_SECTOR);
	p->v[0] = sim_rec_start(e, pl, pc_get16(s + PC_OFF_IDX));
	p->v[1] = pl;
	p->v[2] = cut;
	p->v[3] = sim_flip_bits(e, p->data, 8);
	p->v[4] = pc_get64(s + PC_OFF_SEQ);
	p->lba = pl;
	p->n = 1;
	return sim_pend_start(e);
none:
	e->st->done |= SIM_DONE_PAIRED;
	return 0;
}

/*
 * What the cut that ended the last session interrupted: the status page
 * still names the sector being programmed and how many of its chunks made it.
 * A subsector-tear program stopped after 1..7 of its 8 chunks is a torn
 * sector, already on the media; it only needs its line. Under paired-page the
 * interrupted program damages the pair page.
 */
static int sim_cut_settle(struct sim_emmc *e)
{
	struct sim_state *st = e->st;
	uint32_t prev = e->session - 1;
	uint32_t c = st->chunks_done;
	int ret;

	if (!st->prog || st->session != prev || c >= st->nchunks || st->sect_lba >= e->sectors)
		return 0;
	/* A kill that comes during a chunk's pwrite() lets it finish (the signal
	 * is taken on the way back) but not the store after it: look. */
	if (st->nchunks == SIM_CHUNKS &&
	    memcmp(e->map + st->sect_lba * PC_SECTOR + c * SIM_CHUNK_BYTES, st->sect_new + c * SIM_CHUNK_BYTES,
		   SIM_CHUNK_BYTES) == 0)
		c++;
	if (st->nchunks == SIM_CHUNKS && c && c < SIM_CHUNKS && !(st->done & SIM_DONE_TEAR)) {
		struct sim_pend *p = sim_pend_new(e, SIM_PEND_TEAR, prev);

		p->v[0] = sim_rec_start(e, st->sect_lba, st->sect_idx);
		p->v[1] = st->sect_lba;
		p->v[2] = (uint64_t)c * SIM_CHUNK_BYTES;
		p->v[3] = st->sect_seq;
		ret = sim_pend_start(e);
		if (ret)
			return ret;
	}
	if ((e->profile & SIM_P_PAIRED_PAGE) && !(st->done & SIM_DONE_PAIRED))
		return sim_paired_page(e, prev);
	return 0;
}

/* bitrot: bits flip in a record sector at rest. */
static int sim_bitrot(struct sim_emmc *e)
{
	if (!(e->profile & SIM_P_BITROT) || e->session <= SIM_QUIET_SESSIONS || (e->st->done & SIM_DONE_BITROT))
		return 0;
	if (sim_chance(e) && e->slot_hi > e->slot_lo) {
		for (unsigned t = 0; t < SIM_BITROT_TRIES; t++) {
			uint64_t lba = e->slot_lo + sim_below(e, e->slot_hi - e->slot_lo);
			const uint8_t *s = e->map + lba * PC_SECTOR;
			struct sim_pend *p;

			if (pc_get32(s + PC_OFF_MAGIC) != PC_REC_MAGIC)
				continue;
			p = sim_pend_new(e, SIM_PEND_BITROT, e->session);
			memcpy(p->data, s, PC_SECTOR);
			p->v[0] = sim_rec_start(e, lba, pc_get16(s + PC_OFF_IDX));
			p->v[1] = lba;
			p->v[2] = sim_flip_bits(e, p->data, 3);
			p->v[3] = pc_get64(s + PC_OFF_SEQ);
			p->lba = lba;
			p->n = 1;
			return sim_pend_start(e);
		}
	}
	e->st->done |= SIM_DONE_BITROT;
	return 0;
}

/*
 * Can ring entry i come back as a stale record? Only if the verifier has seen
 * the record that replaced it: replaced two sessions ago or earlier (this
 * boot judges the last session's writes against the occupant before them, so
 * bringing that one back would look like a write that never landed), and the
 * replacement is still whole on the media. The kept record must be whole too.
 */
static int sim_ring_usable(const struct sim_emmc *e, uint32_t i)
{
	const struct sim_ring_ent *x = &e->ring->ent[i];
	const uint8_t *old = sim_ring_data(e, i);
	struct pc_sector_hdr h;

	if (!x->valid || x->session + 2 > e->session || x->old_seq >= x->new_seq || !x->n ||
	    (uint64_t)x->n * PC_SECTOR > e->ring->slot_bytes || x->lba < e->slot_lo || x->lba + x->n > e->slot_hi)
		return 0;
	for (uint32_t j = 0; j < x->n; j++) {
		if (pc_sector_check(e->map + (x->lba + j) * PC_SECTOR, &e->g, &h) != PC_SECT_VALID ||
		    h.seq != x->new_seq || h.lba != x->lba + j)
			return 0;
		if (pc_sector_check(old + (size_t)j * PC_SECTOR, &e->g, &h) != PC_SECT_VALID ||
		    h.seq != x->old_seq || h.lba != x->lba + j)
			return 0;
	}
	return 1;
}

/* stale: a record replaced earlier comes back, a whole record back in time. */
static int sim_stale(struct sim_emmc *e)
{
	uint32_t cand[SIM_RING_ENTS], nc = 0;

	if (!(e->profile & SIM_P_STALE) || (e->st->done & SIM_DONE_STALE))
		return 0;
	if (e->ring && e->have_geom && sim_chance(e)) {
		for (uint32_t i = 0; i < SIM_RING_ENTS; i++)
			if (sim_ring_usable(e, i))
				cand[nc++] = i;
		if (nc) {
			uint32_t i = cand[sim_below(e, nc)];
			const struct sim_ring_ent *x = &e->ring->ent[i];
			struct sim_pend *p = sim_pend_new(e, SIM_PEND_STALE, e->session);

			p->v[0] = x->lba;
			p->v[1] = x->n;
			p->v[2] = x->old_seq;
			p->v[3] = x->new_seq;
			p->lba = x->lba;
			p->n = x->n;
			p->ring = i;
			return sim_pend_start(e);
		}
	}
	e->st->done |= SIM_DONE_STALE;
	return 0;
}

/* A bricked device stays dead: <media>.bricked names the media file and the session. */
static int sim_brick_check(struct sim_emmc *e, char *err, size_t errlen)
{
	char path[PATH_MAX + 16], buf[128];
	unsigned long long dev, ino;
	unsigned session;
	ssize_t n;
	int fd;

	sim_side_path(e, ".bricked", path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = 0;
		if (sscanf(buf, "bricked in session %u, media %llu:%llu", &session, &dev, &ino) == 3 &&
		    dev == e->dev && ino == e->ino) {
			snprintf(err, errlen, SIM_BRICK_MSG, e->media, session);
			return -ENODEV;
		}
	}
	/* left by another media file of this name (the board was made anew) */
	unlink(path);
	return 0;
}

/* brick: the device may die at power-on, for good. */
static int sim_brick(struct sim_emmc *e, char *err, size_t errlen)
{
	char path[PATH_MAX + 16], buf[128];
	int fd, n, ret;

	if (!(e->profile & SIM_P_BRICK) || e->session <= SIM_QUIET_SESSIONS || !sim_chance(e))
		return 0;
	ret = sim_truth_fault(e->truth, e->session, "brick", NULL, 0, "BOOT_FAIL", 0);
	if (ret) {
		snprintf(err, errlen, "sim media %s: cannot log to the truth log: %s", e->media, strerror(-ret));
		return ret;
	}
	/* if this is lost, the brick line, the last in the log, still says it */
	sim_side_path(e, ".bricked", path, sizeof(path));
	n = snprintf(buf, sizeof(buf), "bricked in session %u, media %llu:%llu\n", e->session,
		     (unsigned long long)e->dev, (unsigned long long)e->ino);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		pc_write_all(fd, buf, (size_t)n);
		close(fd);
	}
	snprintf(err, errlen, SIM_BRICK_MSG, e->media, e->session);
	return -ENODEV;
}

/*
 * The power-on: finish a fault a cut power-on left half done, settle the
 * last session's cut, start the session, then the faults of data at rest.
 * The steps of a session are marked done as they go, so a power-on cut and
 * repeated (same session number) takes each fault once.
 */
static int sim_power_on(struct sim_emmc *e, char *err, size_t errlen)
{
	struct sim_state *st = e->st;
	char pname[256];
	int ret = 0;

	if (st->pend.stage) {
		ret = sim_pend_run(e, 1);
		if (ret)
			goto fail;
	}
	if (st->done_session != e->session) {
		st->done = 0;
		st->done_session = e->session;
	}
	ret = sim_cut_settle(e);
	if (ret)
		goto fail;
	st->prog = 0;
	ret = sim_truth_power_on(e->truth, sim_profile_name(e->profile, pname, sizeof(pname)),
				 e->cache_sectors, e->program_us, (e->profile & SIM_RANDOM_PROFILES) != 0,
				 e->seed, e->rate, err, errlen);
	if (ret)
		return ret;
	ret = sim_brick(e, err, errlen);
	if (ret)
		return ret;
	ret = sim_bitrot(e);
	if (!ret)
		ret = sim_stale(e);
	if (ret)
		goto fail;
	sim_barrier();
	st->session = e->session;
	return 0;
fail:
	snprintf(err, errlen, "sim media %s: power-on fault injection failed: %s", e->media, strerror(-ret));
	return ret;
}

int sim_emmc_open(const char *media, const struct sim_opts *opts, struct sim_emmc **out, char *err,
		  size_t errlen)
{
	static const struct sim_opts defaults = { .program_us = SIM_DEF_PROGRAM_US,
						  .cache_sectors = SIM_DEF_CACHE_SECTORS, .seed = 1, .rate = 0.01 };
	const struct sim_opts *o = opts ? opts : &defaults;
	struct sim_emmc *e;
	int ret;

	*out = NULL;
	if (!media || !*media) {
		snprintf(err, errlen, "sim: no media file given");
		return -EINVAL;
	}
	ret = sim_check_opts(media, o, err, errlen);
	if (ret)
		return ret;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->media = strdup(media))) {
		free(e);
		snprintf(err, errlen, "sim media %s: out of memory", media);
		return -ENOMEM;
	}
	e->fd = -1;
	e->profile = o->profile;
	e->program_us = o->program_us ? o->program_us : SIM_DEF_PROGRAM_US;
	e->chunk_us = e->program_us / SIM_CHUNKS ? e->program_us / SIM_CHUNKS : 1;
	e->cut_after = o->cut_after;
	if ((o->cut_op == SIM_CUT_FLUSH || o->cut_op == SIM_CUT_FUA) && o->cut_nth) {
		e->cut_op = o->cut_op;
		e->cut_nth = o->cut_nth;
		e->cut_delay_us = o->cut_delay_us;
	}
	e->cache_sectors = o->cache_sectors ? o->cache_sectors : SIM_DEF_CACHE_SECTORS;
	e->seed = o->seed;
	e->rate = o->rate;
	ret = sim_map_media(e, err, errlen);
	if (!ret)
		ret = sim_brick_check(e, err, errlen);
	if (!ret)
		ret = sim_truth_open(e->media, e->map, e->sectors, &e->truth, err, errlen);
	if (ret)
		goto fail;
	e->session = sim_truth_session(e->truth);
	e->rng = pc_mix64(pc_mix64(e->seed) + e->session);
	sim_geom_load(e);
	ret = sim_state_open(e, err, errlen);
	if (!ret && (e->profile & SIM_P_STALE))
		ret = sim_ring_open(e, err, errlen);
	if (!ret)
		ret = sim_power_on(e, err, errlen);
	if (ret)
		goto fail;
	*out = e;
	return 0;

fail:
	sim_emmc_close(e);
	return ret;
}

static void sim_ent_free(struct sim_ent *x)
{
	if (!x)
		return;
	free(x->live);
	free(x->data);
	free(x);
}

void sim_emmc_close(struct sim_emmc *e)
{
	if (!e)
		return;
	/* what is still cached is lost, as in a power cut */
	while (e->head) {
		struct sim_ent *x = e->head;

		e->head = x->next;
		sim_ent_free(x);
	}
	sim_truth_close(e->truth);
	free(e->cut_ents);
	if (e->ring)
		munmap(e->ring, e->ring_len);
	if (e->st)
		munmap(e->st, SIM_PAGE);
	if (e->map)
		munmap((void *)e->map, e->sectors * PC_SECTOR);
	if (e->fd >= 0)
		close(e->fd);
	free(e->media);
	free(e);
}

uint64_t sim_emmc_sectors(const struct sim_emmc *e)
{
	return e->sectors;
}

uint32_t sim_emmc_session(const struct sim_emmc *e)
{
	return e->session;
}

uint32_t sim_cut_fua_sectors(uint64_t seed, uint32_t session, uint32_t nth, uint32_t n)
{
	if (n < 2)
		return 0;
	return 1 + (uint32_t)(pc_mix64(pc_mix64(seed ^ 0x637574u) + ((uint64_t)session << 32 | nth)) % (n - 1));
}

/* The power goes: SIGKILL of the board's process group. Never returns. */
static void __attribute__((noreturn)) sim_kill_board(void)
{
	kill(0, SIGKILL);
	for (;;)
		pause();
}

/*
 * The exact cut of a flush (cut_op SIM_CUT_FLUSH) lands now: cut_prog
 * sectors of the destage made it. Logged (one write()) before the kill.
 */
static void __attribute__((noreturn)) sim_cut_flush_now(struct sim_emmc *e)
{
	static const struct sim_truth_ent none[1];
	struct sim_truth_kv kv[] = {
		{ "nth", e->cut_nth }, { "delay_us", e->cut_delay_us }, { "programmed", e->cut_prog },
	};

	/* entries: [] when nothing was cached */
	sim_truth_cut(e->truth, "cut_flush", kv, PC_ARRAY_SIZE(kv), e->cut_ents ? e->cut_ents : none,
		      e->cut_nents, "none");
	sim_kill_board();
}

/*
 * Program one sector: the program time passes first, then the data goes in
 * with one pwrite() inside one page, which a SIGKILL cannot split, so a cut
 * leaves the old sector or the new one. Under subsector-tear a record sector
 * programs in 8 chunks of 64 bytes, each after an eighth of the time, and a
 * cut can leave it part new. The status page follows along with plain
 * stores: no system call more than before.
 */
static int sim_program(struct sim_emmc *e, uint64_t lba, const uint8_t *data, int atomic)
{
	struct sim_state *st = e->st;
	uint32_t k = 1, us = e->program_us;

	if (!atomic && (e->profile & SIM_P_SUBSECTOR_TEAR) && pc_get32(data + PC_OFF_MAGIC) == PC_REC_MAGIC) {
		k = SIM_CHUNKS;
		us = e->chunk_us;
	}
	if (e->cut_after && pc_get32(data + PC_OFF_MAGIC) == PC_REC_MAGIC && ++e->programmed > e->cut_after) {
		/* the deterministic cut point: exactly cut_after sectors made it */
		struct sim_truth_kv kv[] = { { "after", e->cut_after }, { "lba", lba } };
		sim_truth_fault(e->truth, e->session, "cut_point", kv, 2, "none", 0);
		sim_kill_board();
	}
	if (e->cut_armed) {
		/* the planned flush has run its delay */
		if (!e->cut_left)
			sim_cut_flush_now(e);
		e->cut_left--;
		e->cut_prog++;
	}
	st->sect_lba = lba;
	st->sect_seq = pc_get64(data + PC_OFF_SEQ);
	st->sect_idx = pc_get16(data + PC_OFF_IDX);
	st->nchunks = k;
	st->chunks_done = 0;
	if (k > 1)
		memcpy(st->sect_new, data, PC_SECTOR);
	sim_barrier();
	st->prog = 1;
	sim_barrier();
	for (uint32_t c = 0; c < k; c++) {
		size_t len = PC_SECTOR / k;
		ssize_t n;

		pc_sleep_us(us);
		do
			n = pwrite(e->fd, data + c * len, len, (off_t)(lba * PC_SECTOR + c * len));
		while (n < 0 && errno == EINTR);
		if (n != (ssize_t)len) {
			int ret = n < 0 ? -errno : -EIO;

			st->prog = 0;	/* an I/O error, not a cut */
			return ret;
		}
		sim_barrier();
		st->chunks_done = c + 1;
		sim_barrier();
	}
	st->prog = 0;
	return 0;
}

/* Program the sectors of a request (those live, if live is given) in order. */
static int sim_program_run(struct sim_emmc *e, uint64_t lba, const uint8_t *buf, uint32_t nsect,
			   const uint8_t *live, int atomic)
{
	e->st->req_lba = lba;
	e->st->req_n = nsect;
	e->st->req_seq = pc_get64(buf + PC_OFF_SEQ);
	for (uint32_t i = 0; i < nsect; i++) {
		if (live && !live[i])
			continue;
		int ret = sim_program(e, lba + i, buf + (size_t)i * PC_SECTOR, atomic);
		if (ret)
			return ret;
	}
	return 0;
}

static void sim_unlink_head(struct sim_emmc *e)
{
	struct sim_ent *x = e->head;

	e->head = x->next;
	if (!e->head)
		e->tail = NULL;
	e->cached -= x->nlive;
	sim_ent_free(x);
}

/* Program the oldest entry's live sectors in order, then forget it. */
static int sim_destage_one(struct sim_emmc *e)
{
	struct sim_ent *x = e->head;
	int ret;

	if (x->nlive == x->nsect)
		sim_ring_save(e, x->lba, x->nsect, x->data);
	ret = sim_program_run(e, x->lba, x->data, x->nsect, x->live, 0);
	if (ret)
		return ret;	/* stays cached: a retry programs it again */
	sim_unlink_head(e);
	return 0;
}

static int sim_destage_all(struct sim_emmc *e)
{
	while (e->head) {
		int ret = sim_destage_one(e);
		if (ret)
			return ret;
	}
	return 0;
}

/* Kill the cached copies of [lba, lba + n): something newer is on its way. */
static void sim_supersede(struct sim_emmc *e, uint64_t lba, uint32_t n)
{
	struct sim_ent **pp = &e->head, *prev = NULL;

	while (*pp) {
		struct sim_ent *x = *pp;
		uint64_t lo = lba > x->lba ? lba : x->lba;
		uint64_t hi = lba + n < x->lba + x->nsect ? lba + n : x->lba + x->nsect;

		for (uint64_t s = lo; s < hi; s++) {
			if (x->live[s - x->lba]) {
				x->live[s - x->lba] = 0;
				x->nlive--;
				e->cached--;
			}
		}
		if (x->nlive) {
			prev = x;
			pp = &x->next;
			continue;
		}
		*pp = x->next;
		if (e->tail == x)
			e->tail = prev;
		sim_ent_free(x);
	}
}

/* A write that bypasses the cache: older cached copies go first. */
static int sim_program_direct(struct sim_emmc *e, uint64_t lba, const uint8_t *buf, uint32_t nsect)
{
	sim_supersede(e, lba, nsect);
	sim_ring_save(e, lba, nsect, buf);
	return sim_program_run(e, lba, buf, nsect, NULL, 0);
}

static struct sim_truth_ent sim_truth_of(const struct sim_ent *x)
{
	struct sim_truth_ent t = { .lba = x->lba, .n = x->nsect, .seq = x->seq, .raw = x->raw };

	return t;
}

static int sim_cache_insert(struct sim_emmc *e, uint64_t lba, const uint8_t *buf, uint32_t nsect,
			    int fua_ignored)
{
	struct sim_ent *x = calloc(1, sizeof(*x));
	int ret;

	if (!x || !(x->data = malloc((size_t)nsect * PC_SECTOR)) || !(x->live = malloc(nsect))) {
		sim_ent_free(x);
		return -ENOMEM;
	}
	x->lba = lba;
	x->nsect = x->nlive = nsect;
	x->seq = pc_get64(buf + PC_OFF_SEQ);
	x->raw = pc_get32(buf + PC_OFF_MAGIC) != PC_REC_MAGIC;
	memcpy(x->data, buf, (size_t)nsect * PC_SECTOR);
	memset(x->live, 1, nsect);
	if (fua_ignored) {
		struct sim_truth_ent t = sim_truth_of(x);

		/* logged before the write is cached: a cut cannot hide the lie */
		ret = sim_truth_fua_ignored(e->truth, &t);
		if (ret) {
			sim_ent_free(x);
			return ret;
		}
	}
	sim_supersede(e, lba, nsect);
	while (e->head && e->cached + nsect > e->cache_sectors) {
		ret = sim_destage_one(e);
		if (ret) {
			sim_ent_free(x);
			return ret;
		}
	}
	if (e->tail)
		e->tail->next = x;
	else
		e->head = x;
	e->tail = x;
	e->cached += nsect;
	return 0;
}

/*
 * tearing-relwr: the reliable write reports completion once its first k
 * sectors are programmed; the rest wait in the volatile cache like a normal
 * write, and a cut before they are destaged tears the record.
 */
static int sim_relwr_early(struct sim_emmc *e, uint64_t lba, const uint8_t *buf, uint32_t nsect)
{
	uint32_t k = 1 + (uint32_t)sim_below(e, nsect - 1);
	struct sim_truth_kv kv[4];
	int ret;

	if (nsect - k > e->cache_sectors)
		k = nsect - e->cache_sectors;
	sim_supersede(e, lba, nsect);
	sim_ring_save(e, lba, nsect, buf);
	ret = sim_program_run(e, lba, buf, k, NULL, 0);
	if (ret)
		return ret;
	kv[0] = (struct sim_truth_kv){ "lba", lba };
	kv[1] = (struct sim_truth_kv){ "n", nsect };
	kv[2] = (struct sim_truth_kv){ "seq", pc_get64(buf + PC_OFF_SEQ) };
	kv[3] = (struct sim_truth_kv){ "programmed", k };
	ret = sim_truth_fault(e->truth, e->session, "relwr_early_ack", kv, 4, NULL, 0);
	if (ret)
		return ret;
	return sim_cache_insert(e, lba + k, buf + (size_t)k * PC_SECTOR, nsect - k, 0);
}

static int sim_cached_overlap(const struct sim_emmc *e, uint64_t lba, uint32_t n)
{
	for (const struct sim_ent *x = e->head; x; x = x->next)
		if (x->lba < lba + n && lba < x->lba + x->nsect)
			return 1;
	return 0;
}

/*
 * misdirect: where a record write lands instead, at the same offset in
 * another slot, inside the slot area, clear of the intended sectors and of
 * anything cached (a later destage would cover the evidence). 0 if nowhere.
 */
static int sim_misdirect_target(struct sim_emmc *e, uint64_t lba, const uint8_t *buf, uint32_t nsect,
				uint64_t *land)
{
	uint32_t spr;
	uint64_t off;

	if (!e->have_geom || e->g.nslots < 2 || pc_get32(buf + PC_OFF_MAGIC) != PC_REC_MAGIC ||
	    lba < e->slot_lo || lba + nsect > e->slot_hi)
		return 0;
	spr = pc_geom_spr(&e->g);
	off = (lba - e->slot_lo) % spr;
	for (unsigned t = 0; t < SIM_MISDIRECT_TRIES; t++) {
		uint64_t l = e->slot_lo + sim_below(e, e->g.nslots) * spr + off;

		if (l + nsect > e->slot_hi || (l < lba + nsect && lba < l + nsect) ||
		    sim_cached_overlap(e, l, nsect))
			continue;
		*land = l;
		return 1;
	}
	return 0;
}

/*
 * The data goes to the wrong place, at once and whole (no subsector tear: the
 * landing slot's finding is the misdirect). The intended sectors keep what
 * they held, cached copies included: the mapping is what broke.
 */
static int sim_misdirect(struct sim_emmc *e, uint64_t lba, uint64_t land, const uint8_t *buf, uint32_t nsect)
{
	struct sim_truth_kv kv[4] = {
		{ "lba", lba }, { "n", nsect }, { "seq", pc_get64(buf + PC_OFF_SEQ) }, { "landed", land },
	};
	int ret = sim_truth_fault(e->truth, e->session, "misdirect", kv, 4, "misdirected", 0);

	return ret ? ret : sim_program_run(e, land, buf, nsect, NULL, 1);
}

/*
 * The nth flush starts: what is cached is what it was to make durable. No
 * delay (or nothing to program): the cut comes before any sector is
 * programmed. Else it comes after delay_us of program time.
 */
static void sim_cut_flush_start(struct sim_emmc *e)
{
	uint64_t d = e->cut_delay_us / e->program_us;
	size_t n = 0;

	for (const struct sim_ent *x = e->head; x; x = x->next)
		n++;
	free(e->cut_ents);
	e->cut_ents = n ? calloc(n, sizeof(*e->cut_ents)) : NULL;
	e->cut_nents = 0;
	for (const struct sim_ent *x = e->head; e->cut_ents && x; x = x->next)
		e->cut_ents[e->cut_nents++] = sim_truth_of(x);
	e->cut_prog = 0;
	if (!d || !e->head)
		sim_cut_flush_now(e);
	e->cut_armed = 1;
	e->cut_left = d;
}

/*
 * The exact cut of a FUA write (cut_op SIM_CUT_FUA): the first k of its
 * sectors are programmed (seeded, or delay_us of program time; none on a
 * card that ignores FUA, which would only have cached it), then the power
 * goes, the write never completing.
 */
static void __attribute__((noreturn)) sim_cut_fua(struct sim_emmc *e, uint64_t lba, const uint8_t *buf,
						   uint32_t nsect)
{
	uint64_t k = e->cut_delay_us ? e->cut_delay_us / e->program_us :
		     sim_cut_fua_sectors(e->seed, e->session, e->cut_nth, nsect);
	int raw = pc_get32(buf + PC_OFF_MAGIC) != PC_REC_MAGIC;
	struct sim_truth_kv kv[] = {
		{ "nth", e->cut_nth }, { "delay_us", e->cut_delay_us }, { "lba", lba }, { "n", nsect },
		{ "seq", raw ? 0 : pc_get64(buf + PC_OFF_SEQ) }, { "programmed", 0 },
	};

	if (k > nsect)
		k = nsect;
	if (e->profile & SIM_P_FUA_IGNORED)
		k = 0;
	sim_supersede(e, lba, nsect);
	if (k && sim_program_run(e, lba, buf, (uint32_t)k, NULL, 0))
		k = 0;	/* an I/O error of the media file: say nothing made it */
	kv[5].v = k;
	sim_truth_cut(e->truth, "cut_fua", kv, PC_ARRAY_SIZE(kv), NULL, 0,
		      !k ? "not_written" : k < nsect ? "torn" : "intact");
	sim_kill_board();
}

int sim_emmc_write(struct sim_emmc *e, uint64_t lba, const void *buf, uint32_t nsect, unsigned wflags)
{
	int fua = (wflags & SIM_W_FUA) != 0;

	if (nsect == 0 || lba >= e->sectors || nsect > e->sectors - lba)
		return -EINVAL;
	if (fua && e->cut_op == SIM_CUT_FUA && ++e->cut_seen == e->cut_nth)
		sim_cut_fua(e, lba, buf, nsect);
	if ((e->profile & SIM_P_MISDIRECT) && sim_chance(e)) {
		uint64_t land;

		if (sim_misdirect_target(e, lba, buf, nsect, &land))
			return sim_misdirect(e, lba, land, buf, nsect);
	}
	if ((e->profile & SIM_P_NO_CACHE) || (fua && !(e->profile & SIM_P_FUA_IGNORED))) {
		if (fua && (e->profile & SIM_P_TEARING_RELWR) && nsect > 1 && sim_chance(e))
			return sim_relwr_early(e, lba, buf, nsect);
		return sim_program_direct(e, lba, buf, nsect);
	}
	if (nsect > e->cache_sectors) {
		/* larger than the whole cache: it streams through to the NAND */
		int ret = sim_destage_all(e);
		return ret ? ret : sim_program_direct(e, lba, buf, nsect);
	}
	return sim_cache_insert(e, lba, buf, nsect, fua);
}

int sim_emmc_read(struct sim_emmc *e, uint64_t lba, void *buf, uint32_t nsect)
{
	uint8_t *out = buf;

	if (nsect == 0 || lba >= e->sectors || nsect > e->sectors - lba)
		return -EINVAL;
	memcpy(out, e->map + lba * PC_SECTOR, (size_t)nsect * PC_SECTOR);
	/* at most one live copy of a sector exists, and it is the newest */
	for (const struct sim_ent *x = e->head; x; x = x->next) {
		uint64_t lo = lba > x->lba ? lba : x->lba;
		uint64_t hi = lba + nsect < x->lba + x->nsect ? lba + nsect : x->lba + x->nsect;

		for (uint64_t s = lo; s < hi; s++)
			if (x->live[s - x->lba])
				memcpy(out + (s - lba) * PC_SECTOR, x->data + (s - x->lba) * PC_SECTOR,
				       PC_SECTOR);
	}
	return 0;
}

/* lying-flush: record what stays volatile, then report success. */
static int sim_flush_lie(struct sim_emmc *e)
{
	struct sim_truth_ent *ents;
	size_t n = 0;
	int ret;

	for (const struct sim_ent *x = e->head; x; x = x->next)
		n++;
	if (!n)
		return 0;	/* nothing cached, nothing to lie about */
	ents = calloc(n, sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	n = 0;
	for (const struct sim_ent *x = e->head; x; x = x->next)
		ents[n++] = sim_truth_of(x);
	ret = sim_truth_flush_lie(e->truth, ents, n);
	free(ents);
	return ret;
}

int sim_emmc_host_reset(struct sim_emmc *e)
{
	return e->head ? sim_destage_all(e) : 0;
}

static int sim_flush_do(struct sim_emmc *e)
{
	/* no-cache: only the tail of an early-acked reliable write is ever cached */
	if ((e->profile & SIM_P_NO_CACHE) && !e->head)
		return 0;
	if (e->profile & SIM_P_LYING_FLUSH)
		return sim_flush_lie(e);
	return sim_destage_all(e);
}

int sim_emmc_flush(struct sim_emmc *e)
{
	int ret;

	if (e->cut_op == SIM_CUT_FLUSH && ++e->cut_seen == e->cut_nth)
		sim_cut_flush_start(e);
	ret = sim_flush_do(e);
	/* the planned flush finished before its delay ran out: its completion
	 * never reaches the host */
	if (e->cut_armed)
		sim_cut_flush_now(e);
	return ret;
}

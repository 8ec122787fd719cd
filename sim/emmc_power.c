/*
 * emmc_power.c - what of the emulated eMMC outlives a cut (the status page
 * <media>.state, the stale profile's ring <media>.stale) and the faults a
 * power-on takes from them and the media: a cut's settling, paired pages,
 * bit rot, stale records, the brick. Each is logged before it is committed,
 * and a power-on that is itself cut resumes it instead of repeating it.
 */
#include "sim/emmc.h"
#include "sim/emmc_int.h"

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
	if (fd < 0)
		return pc_fail(err, errlen, -errno, "sim media %s: cannot open %s: %s", e->media, path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		ret = pc_fail(err, errlen, -errno, "sim media %s: cannot stat %s: %s", e->media, path, strerror(errno));
		goto out;
	}
	if ((uint64_t)st.st_size != len && (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)len) < 0)) {
		ret = pc_fail(err, errlen, -errno, "sim media %s: cannot size %s: %s", e->media, path, strerror(errno));
		goto out;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		ret = pc_fail(err, errlen, -errno, "sim media %s: cannot map %s: %s", e->media, path, strerror(errno));
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
int sim_state_open(struct sim_emmc *e, char *err, size_t errlen)
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
int sim_ring_open(struct sim_emmc *e, char *err, size_t errlen)
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
void sim_ring_save(struct sim_emmc *e, uint64_t lba, uint32_t n, const uint8_t *newd)
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
			e->power_on_writes++;	/* before: a failed write may have changed something */
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

	if (!st->prog || st->session != prev || c >= st->nchunks || st->nchunks > SIM_CHUNKS ||
	    st->sect_lba >= e->sectors)
		return 0;
	/* A kill that comes during a chunk's pwrite() (or after it, before the
	 * store of chunks_done: a process preempted there) lets the chunk land:
	 * look. A sector whose last chunk landed was programmed whole, and the
	 * cut interrupted no program: nothing to damage. */
	if (memcmp(e->map + st->sect_lba * PC_SECTOR + c * (PC_SECTOR / st->nchunks),
		   st->sect_new + c * (PC_SECTOR / st->nchunks), PC_SECTOR / st->nchunks) == 0 &&
	    ++c >= st->nchunks)
		return 0;
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
int sim_brick_check(struct sim_emmc *e, char *err, size_t errlen)
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
			return pc_fail(err, errlen, -ENODEV, SIM_BRICK_MSG, e->media, session);
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
	if (ret)
		return pc_fail(err, errlen, ret, "sim media %s: cannot log to the truth log: %s", e->media, strerror(-ret));
	/* if this is lost, the brick line, the last in the log, still says it */
	sim_side_path(e, ".bricked", path, sizeof(path));
	n = snprintf(buf, sizeof(buf), "bricked in session %u, media %llu:%llu\n", e->session,
		     (unsigned long long)e->dev, (unsigned long long)e->ino);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		pc_write_all(fd, buf, (size_t)n);
		close(fd);
	}
	return pc_fail(err, errlen, -ENODEV, SIM_BRICK_MSG, e->media, e->session);
}

/*
 * The power-on: finish a fault a cut power-on left half done, settle the
 * last session's cut, start the session, then the faults of data at rest.
 * The steps of a session are marked done as they go, so a power-on cut and
 * repeated (same session number) takes each fault once.
 */
int sim_power_on(struct sim_emmc *e, char *err, size_t errlen)
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
	return pc_fail(err, errlen, ret, "sim media %s: power-on fault injection failed: %s", e->media, strerror(-ret));
}


/*
 * emmc.c - the emulated eMMC (see emmc.h and docs/sim.md); what outlives a
 * cut and the faults taken at power-on are in emmc_power.c.
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

int sim_emmc_create(const char *media, uint64_t size, char *err, size_t errlen)
{
	int fd, ret = 0;

	if (size == 0 || size % PC_SECTOR || size > (uint64_t)INT64_MAX)
		return pc_fail(err, errlen, -EINVAL, "sim media %s: size %" PRIu64 " is not a positive multiple of 512",
			 media, size);
	fd = open(media, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		if (ret == -EEXIST)
			return pc_fail(err, errlen, ret, "sim media %s already exists; remove it to make a new one", media);
		return pc_fail(err, errlen, ret, "sim media %s: cannot create: %s", media, strerror(-ret));
	}
	/* sparse: reads as zeros, costs no space until programmed */
	if (ftruncate(fd, (off_t)size) < 0) {
		ret = pc_fail(err, errlen, -errno, "sim media %s: cannot size to %" PRIu64 " bytes: %s", media, size,
			      strerror(errno));
		unlink(media);
	}
	close(fd);
	return ret;
}

static int sim_check_opts(const char *media, const struct sim_opts *o, char *err, size_t errlen)
{
	if (o->profile & ~(unsigned)SIM_ALL_PROFILES)
		return pc_fail(err, errlen, -EINVAL, "sim profile bits 0x%x are unknown", o->profile & ~(unsigned)SIM_ALL_PROFILES);
	if (!(o->rate >= 0 && o->rate <= 1)) {	/* NaN too */
		return pc_fail(err, errlen, -EINVAL, "sim media %s: fault rate %g is outside 0..1", media, o->rate);
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
		return pc_fail(err, errlen, ret, "sim media %s: cannot open: %s%s", e->media, strerror(-ret),
			 ret == -ENOENT ? " (create it first)" : "");
	}
	if (fstat(e->fd, &st) < 0)
		return pc_fail(err, errlen, -errno, "sim media %s: cannot stat: %s", e->media, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size % PC_SECTOR)
		return pc_fail(err, errlen, -EINVAL, "sim media %s is not a regular file whose size is a positive multiple of 512",
			 e->media);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, e->fd, 0);
	if (map == MAP_FAILED)
		return pc_fail(err, errlen, -errno, "sim media %s: cannot map: %s", e->media, strerror(errno));
	e->map = map;
	e->sectors = (uint64_t)st.st_size / PC_SECTOR;
	e->dev = (uint64_t)st.st_dev;
	e->ino = (uint64_t)st.st_ino;
	return 0;
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

int sim_emmc_open(const char *media, const struct sim_opts *opts, struct sim_emmc **out, char *err,
		  size_t errlen)
{
	static const struct sim_opts defaults = { .program_us = SIM_DEF_PROGRAM_US,
						  .cache_sectors = SIM_DEF_CACHE_SECTORS, .seed = 1, .rate = 0.01 };
	const struct sim_opts *o = opts ? opts : &defaults;
	struct sim_emmc *e;
	char ierr[PATH_MAX + 128];
	int ret;

	*out = NULL;
	if (!media || !*media)
		return pc_fail(err, errlen, -EINVAL, "sim: no media file given");
	ret = sim_check_opts(media, o, err, errlen);
	if (ret)
		return ret;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->media = strdup(media))) {
		free(e);
		return pc_fail(err, errlen, -ENOMEM, "sim media %s: out of memory", media);
	}
	e->fd = -1;
	e->profile = o->profile;
	e->program_us = o->program_us ? o->program_us : SIM_DEF_PROGRAM_US;
	e->untimed = o->untimed;
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
	/* the inputs of the last session end here, before this power-on's
	 * faults; keeping them never stops the device (a full disk says so on
	 * stderr, the board's console) */
	if (!ret && e->session == 1)
		sim_inputs_forget(e);
	if (!ret && sim_inputs_finish_prev(e, ierr, sizeof(ierr)))
		fprintf(stderr, "powercut sim: %s\n", ierr);
	if (!ret)
		ret = sim_power_on(e, err, errlen);
	if (ret)
		goto fail;
	if (sim_inputs_start(e, o->keep_inputs, &e->inputs, ierr, sizeof(ierr)))
		fprintf(stderr, "powercut sim: %s\n", ierr);
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
	sim_inputs_close(e->inputs);
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

void sim_emmc_wear(const struct sim_emmc *e, int *life_a, int *life_b, int *pre_eol)
{
	uint64_t w = e->st ? e->st->wear_sectors : 0;
	uint64_t b = 1 + w / SIM_WEAR_STEP, a = 1 + w / (2ull * SIM_WEAR_STEP);

	*life_a = a > 11 ? 11 : (int)a;
	*life_b = b > 11 ? 11 : (int)b;
	*pre_eol = *life_b >= 10 ? 3 : *life_b >= 9 ? 2 : 1;
}

void sim_emmc_mark(struct sim_emmc *e, const char *text)
{
	sim_inputs_mark(e->inputs, text);
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

	if (!atomic && !e->untimed && (e->profile & SIM_P_SUBSECTOR_TEAR) &&
	    pc_get32(data + PC_OFF_MAGIC) == PC_REC_MAGIC) {
		k = SIM_CHUNKS;
		us = e->chunk_us;
	}
	if (e->untimed)
		us = 0;
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
	st->wear_sectors++;
	st->sect_lba = lba;
	st->sect_seq = pc_get64(data + PC_OFF_SEQ);
	st->sect_idx = pc_get16(data + PC_OFF_IDX);
	st->nchunks = k;
	st->chunks_done = 0;
	memcpy(st->sect_new, data, PC_SECTOR);
	sim_barrier();
	st->prog = 1;
	sim_barrier();
	for (uint32_t c = 0; c < k; c++) {
		size_t len = PC_SECTOR / k;
		ssize_t n;

		if (us)
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

/*
 * Untimed (prepare): a run of sectors in one pwrite, at file speed. The
 * kernel copies a pwrite page by page and a SIGKILL can only stop it between
 * pages, so it stays atomic per sector; the status page tracks no sector
 * (a cut here is not one a campaign measures: no tear, no paired page).
 */
static int sim_program_bulk(struct sim_emmc *e, uint64_t lba, const uint8_t *buf, uint32_t nsect)
{
	size_t len = (size_t)nsect * PC_SECTOR, done = 0;

	e->st->prog = 0;
	while (done < len) {
		ssize_t n = pwrite(e->fd, buf + done, len - done, (off_t)(lba * PC_SECTOR + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* Program the sectors of a request (those live, if live is given) in order. */
static int sim_program_run(struct sim_emmc *e, uint64_t lba, const uint8_t *buf, uint32_t nsect,
			   const uint8_t *live, int atomic)
{
	e->st->req_lba = lba;
	e->st->req_n = nsect;
	e->st->req_seq = pc_get64(buf + PC_OFF_SEQ);
	/* untimed: runs of live sectors at file speed, unless a planned cut
	 * counts sectors (cut-after, a flush cut's delay) */
	if (e->untimed && !e->cut_after && !e->cut_armed) {
		for (uint32_t i = 0, j; i < nsect; i = j) {
			int ret;

			if (live && !live[i]) {
				j = i + 1;
				continue;
			}
			for (j = i + 1; j < nsect && (!live || live[j]); j++)
				;
			ret = sim_program_bulk(e, lba + i, buf + (size_t)i * PC_SECTOR, j - i);
			if (ret)
				return ret;
		}
		return 0;
	}
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

static int sim_write_do(struct sim_emmc *e, uint64_t lba, const void *buf, uint32_t nsect, int fua)
{
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

/* Every request is logged as it completes (keep-inputs): completion order. */
int sim_emmc_write(struct sim_emmc *e, uint64_t lba, const void *buf, uint32_t nsect, unsigned wflags)
{
	int fua = (wflags & SIM_W_FUA) != 0, ret;

	if (nsect == 0 || lba >= e->sectors || nsect > e->sectors - lba)
		return -EINVAL;
	sim_inputs_begin(e->inputs, 1, lba, buf, nsect, fua);
	ret = sim_write_do(e, lba, buf, nsect, fua);
	sim_inputs_end(e->inputs, ret == 0);
	return ret;
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

/* The card destages everything, as a flush would: logged as one. */
int sim_emmc_host_reset(struct sim_emmc *e)
{
	int ret;

	sim_inputs_begin(e->inputs, 2, 0, NULL, 0, 0);
	ret = e->head ? sim_destage_all(e) : 0;
	sim_inputs_end(e->inputs, ret == 0);
	return ret;
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

	sim_inputs_begin(e->inputs, 2, 0, NULL, 0, 0);
	if (e->cut_op == SIM_CUT_FLUSH && ++e->cut_seen == e->cut_nth)
		sim_cut_flush_start(e);
	ret = sim_flush_do(e);
	/* the planned flush finished before its delay ran out: its completion
	 * never reaches the host */
	if (e->cut_armed)
		sim_cut_flush_now(e);
	sim_inputs_end(e->inputs, ret == 0);
	return ret;
}


/*
 * emmc.c - the emulated eMMC (see emmc.h and docs/sim.md).
 *
 * The volatile write cache is a FIFO of write requests. Only one cached copy
 * of a sector is ever live: a write marks the sectors it overwrites dead in
 * older entries, so a read can take any live copy and destaging, which
 * programs live sectors only, never puts older data over newer. Capacity is
 * counted in live sectors. Every operation walks the FIFO once; with the
 * default 256-sector cache that is a handful of entries.
 */
#include "emmc.h"
#include "sim_truth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/record.h"
#include "../common/util.h"

#define SIM_DEF_PROGRAM_US	20u
#define SIM_DEF_CACHE_SECTORS	256u
#define SIM_IMPLEMENTED		(SIM_P_LYING_FLUSH | SIM_P_NO_CACHE | SIM_P_FUA_IGNORED)

static const struct {
	const char *name;
	unsigned bit;
} sim_profiles[] = {
	{ "honest", SIM_P_HONEST },
	{ "lying-flush", SIM_P_LYING_FLUSH },
	{ "no-cache", SIM_P_NO_CACHE },
	{ "fua-ignored", SIM_P_FUA_IGNORED },
	{ "tearing-relwr", SIM_P_TEARING_RELWR },
	{ "subsector-tear", SIM_P_SUBSECTOR_TEAR },
	{ "paired-page", SIM_P_PAIRED_PAGE },
	{ "misdirect", SIM_P_MISDIRECT },
	{ "bitrot", SIM_P_BITROT },
	{ "stale", SIM_P_STALE },
	{ "brick", SIM_P_BRICK },
};

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
	unsigned profile;
	uint32_t program_us;
	uint32_t cache_sectors;
	uint32_t cached;	/* live sectors in the cache */
	struct sim_ent *head;	/* oldest */
	struct sim_ent *tail;	/* newest */
	struct sim_truth *truth;
};

int sim_profile_parse(const char *s, unsigned *bits, char *err, size_t errlen)
{
	char valid[256] = "", *copy, *tok, *save = NULL;
	unsigned b = 0;
	int ret = 0, n = 0;

	for (size_t i = 0; i < PC_ARRAY_SIZE(sim_profiles); i++) {
		strncat(valid, i ? ", " : "", sizeof(valid) - strlen(valid) - 1);
		strncat(valid, sim_profiles[i].name, sizeof(valid) - strlen(valid) - 1);
	}
	if (!s || !*s) {
		snprintf(err, errlen, "empty sim profile (valid: %s, joined by '+')", valid);
		return -EINVAL;
	}
	copy = strdup(s);
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* strtok would skip empty parts; "a++b" is a typo we want to report */
	for (tok = copy; tok && !ret; tok = save) {
		size_t i;

		save = strchr(tok, '+');
		if (save)
			*save++ = 0;
		for (i = 0; i < PC_ARRAY_SIZE(sim_profiles); i++)
			if (strcmp(tok, sim_profiles[i].name) == 0)
				break;
		if (i == PC_ARRAY_SIZE(sim_profiles)) {
			snprintf(err, errlen, "unknown sim profile '%s' in '%s' (valid: %s, joined by '+')",
				 tok, s, valid);
			ret = -EINVAL;
		} else if (sim_profiles[i].bit == SIM_P_HONEST && (n || save)) {
			snprintf(err, errlen, "sim profile 'honest' cannot be combined with others in '%s'", s);
			ret = -EINVAL;
		}
		if (!ret)
			b |= sim_profiles[i].bit;
		n++;
	}
	free(copy);
	if (!ret)
		*bits = b;
	return ret;
}

const char *sim_profile_name(unsigned bits, char *buf, size_t len)
{
	size_t used = 0;

	if (!len)
		return buf;
	buf[0] = 0;
	if (!bits) {
		pc_strlcpy(buf, "honest", len);
		return buf;
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(sim_profiles); i++) {
		if (!(bits & sim_profiles[i].bit))
			continue;
		int n = snprintf(buf + used, len - used, "%s%s", used ? "+" : "", sim_profiles[i].name);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	return buf;
}

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

static int sim_check_profile(const struct sim_opts *o, char *err, size_t errlen)
{
	for (size_t i = 0; i < PC_ARRAY_SIZE(sim_profiles); i++) {
		unsigned bit = sim_profiles[i].bit;

		if ((o->profile & bit) && !(bit & SIM_IMPLEMENTED)) {
			snprintf(err, errlen, "sim profile '%s' is not implemented in this build",
				 sim_profiles[i].name);
			return -ENOTSUP;
		}
	}
	if (o->profile & ~(unsigned)((SIM_P_BRICK << 1) - 1)) {
		snprintf(err, errlen, "sim profile bits 0x%x are unknown", o->profile);
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
	return 0;
}

int sim_emmc_open(const struct sim_opts *o, struct sim_emmc **out, char *err, size_t errlen)
{
	struct sim_emmc *e;
	char pname[256];
	int ret;

	*out = NULL;
	if (!o->media || !*o->media) {
		snprintf(err, errlen, "sim: no media file given");
		return -EINVAL;
	}
	ret = sim_check_profile(o, err, errlen);
	if (ret)
		return ret;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->media = strdup(o->media))) {
		free(e);
		snprintf(err, errlen, "sim media %s: out of memory", o->media);
		return -ENOMEM;
	}
	e->fd = -1;
	e->profile = o->profile;
	e->program_us = o->program_us ? o->program_us : SIM_DEF_PROGRAM_US;
	e->cache_sectors = o->cache_sectors ? o->cache_sectors : SIM_DEF_CACHE_SECTORS;
	ret = sim_map_media(e, err, errlen);
	if (ret)
		goto fail;
	ret = sim_truth_open(e->media, e->map, e->sectors, &e->truth, err, errlen);
	if (ret)
		goto fail;
	ret = sim_truth_power_on(e->truth, sim_profile_name(e->profile, pname, sizeof(pname)),
				 e->cache_sectors, e->program_us, err, errlen);
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
	return sim_truth_session(e->truth);
}

/*
 * Program one sector: the program time passes first, then a single 512-byte
 * pwrite() inside one page, which a SIGKILL cannot split. A cut during the
 * sleep leaves the old sector: programming is atomic per sector.
 */
static int sim_program(struct sim_emmc *e, uint64_t lba, const uint8_t *data)
{
	ssize_t n;

	pc_sleep_us(e->program_us);
	do
		n = pwrite(e->fd, data, PC_SECTOR, (off_t)(lba * PC_SECTOR));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == PC_SECTOR ? 0 : -EIO;
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

	for (uint32_t i = 0; i < x->nsect; i++) {
		if (!x->live[i])
			continue;
		int ret = sim_program(e, x->lba + i, x->data + (size_t)i * PC_SECTOR);
		if (ret)
			return ret;	/* stays cached: a retry programs it again */
	}
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
	for (uint32_t i = 0; i < nsect; i++) {
		int ret = sim_program(e, lba + i, buf + (size_t)i * PC_SECTOR);
		if (ret)
			return ret;
	}
	return 0;
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

int sim_emmc_write(struct sim_emmc *e, uint64_t lba, const void *buf, uint32_t nsect, unsigned wflags)
{
	int fua = (wflags & SIM_W_FUA) != 0;

	if (nsect == 0 || lba >= e->sectors || nsect > e->sectors - lba)
		return -EINVAL;
	if ((e->profile & SIM_P_NO_CACHE) || (fua && !(e->profile & SIM_P_FUA_IGNORED)))
		return sim_program_direct(e, lba, buf, nsect);
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

int sim_emmc_flush(struct sim_emmc *e)
{
	if (e->profile & SIM_P_NO_CACHE)
		return 0;
	if (e->profile & SIM_P_LYING_FLUSH)
		return sim_flush_lie(e);
	return sim_destage_all(e);
}

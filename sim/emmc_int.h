/*
 * emmc_int.h - the emulated eMMC's state, shared by its files (private to
 * sim/): emmc.c (power on and off, the cache, programming, the host's
 * requests), emmc_power.c (the files that outlive a cut, and the faults
 * taken at power-on) and emmc_util.c below both (the seeded generator, where
 * a record starts). See emmc.h and docs/sim.md.
 */
#ifndef PC_SIM_EMMC_INT_H
#define PC_SIM_EMMC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"
#include "sim/emmc.h"
#include "sim/opts_int.h"
#include "sim/sim_truth.h"
#include "sim/inputs.h"

#define SIM_ALL_PROFILES	((SIM_P_ACK_EARLY << 1) - 1)
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
	uint8_t sect_new[PC_SECTOR];	/* the data being programmed */
	uint64_t wear_sectors;		/* sectors programmed since the media was made (SIM_P_WEAR) */
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
	int untimed;		/* no program time: a request's sectors in one pwrite */
	uint32_t chunk_us;	/* subsector-tear: program time of one chunk */
	uint32_t cache_sectors;
	uint32_t cached;	/* live sectors in the cache */
	struct sim_ent *head;	/* oldest */
	struct sim_ent *tail;	/* newest */
	struct sim_truth *truth;
	struct sim_inputs *inputs;	/* keep-inputs: this session's, else NULL */
	int after_fresh;		/* this power-on wrote the last session's after.img */
	uint32_t power_on_writes;	/* media writes of this power-on's faults */
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

int sim_brick_check(struct sim_emmc *e, char *err, size_t errlen);
int sim_power_on(struct sim_emmc *e, char *err, size_t errlen);
int sim_ring_open(struct sim_emmc *e, char *err, size_t errlen);
void sim_ring_save(struct sim_emmc *e, uint64_t lba, uint32_t n, const uint8_t *newd);
int sim_state_open(struct sim_emmc *e, char *err, size_t errlen);
/* emmc_util.c */
uint64_t sim_below(struct sim_emmc *e, uint64_t n);
int sim_chance(struct sim_emmc *e);
uint64_t sim_rec_start(const struct sim_emmc *e, uint64_t lba, uint32_t idx);

#endif

/*
 * emmc.h - an emulated eMMC for the sim board.
 *
 * The NAND is a media file mapped MAP_SHARED: what was programmed survives a
 * SIGKILL of the board's process group. The volatile write cache lives in
 * process memory and dies with it. Programming a sector takes program_us, so
 * a cut lands mid-program; one sector is programmed by a single pwrite() of
 * 512 bytes into the media file, which a SIGKILL cannot split (reliable write
 * is atomic per sector). Reads are served from the cache first, then the media.
 *
 * Fault profiles change what the device does; each one appends a ground-truth
 * log (<media>.truth.jsonl, one JSON object a line, fsync'd) of what it did,
 * written before the act so a cut cannot hide it. See docs/sim.md.
 *
 * All functions return 0 or -errno unless said otherwise; the single-threaded
 * caller (the agent) owns the object.
 */
#ifndef PC_SIM_EMMC_H
#define PC_SIM_EMMC_H

#include <stddef.h>
#include <stdint.h>

struct sim_emmc;

/* Profile bits; profiles combine ("paired-page+lying-flush"). */
#define SIM_P_HONEST		0u
#define SIM_P_LYING_FLUSH	(1u << 0)	/* flush returns without destaging */
#define SIM_P_NO_CACHE		(1u << 1)	/* no volatile cache: every write programs */
#define SIM_P_FUA_IGNORED	(1u << 2)	/* FUA writes go through the cache */
#define SIM_P_TEARING_RELWR	(1u << 3)	/* a FUA write completes with only part programmed */
#define SIM_P_SUBSECTOR_TEAR	(1u << 4)	/* a sector programs in 8 chunks: a cut tears it */
#define SIM_P_PAIRED_PAGE	(1u << 5)	/* a cut mid-program damages the page 64 sectors back */
#define SIM_P_MISDIRECT		(1u << 6)	/* a write lands in another slot */
#define SIM_P_BITROT		(1u << 7)	/* bits flip at rest (at power-on) */
#define SIM_P_STALE		(1u << 8)	/* an overwritten record comes back (at power-on) */
#define SIM_P_BRICK		(1u << 9)	/* the device dies (at power-on) */
/* Not the card's: the host's queue has no FUA (an SD card, an eMMC whose host
 * disabled it): the agent's sim backend reports queue fua 0 and sends a FUA
 * write as the block layer would, a plain write and then a cache flush; the
 * card never sees a reliable write (agent/dev_sim.c). */
#define SIM_P_NO_FUA		(1u << 10)
/* The card wears fast: EXT_CSD's DEVICE_LIFE_TIME_EST_TYP_B rises one step
 * (10% of the rated life) per SIM_WEAR_STEP sectors programmed since the
 * media was made, TYP_A at half that pace, PRE_EOL_INFO warns at step 9 and
 * is urgent at 10 (reported in the identity's ext_csd only under this
 * profile: the sim's other profiles claim no EXT_CSD). */
#define SIM_P_WEAR		(1u << 11)
#define SIM_WEAR_STEP		2048u
/* Not the card's: the agent's, a test of powercut crash-states (issue 38). The
 * board's agent acknowledges each record before the device makes it durable:
 * a flush group before its flush, a FUA or reliable write before it is
 * issued (agent/writer.c). The card is honest. */
#define SIM_P_ACK_EARLY		(1u << 12)

/* Parse "honest", "lying-flush", "a+b"...; 0 or -EINVAL (err names the bad part). */
int sim_profile_parse(const char *s, unsigned *bits, char *err, size_t errlen);
/* Canonical name of a profile bit set ("honest" for 0), into buf. */
const char *sim_profile_name(unsigned bits, char *buf, size_t len);

/*
 * The options of one emulated eMMC, opaque (sim/opts.c). sim_opts_new gives
 * the defaults: profile honest, 20 us to program a sector, a 256-sector
 * cache, seed 1, rate 0.01, no planned cut; NULL when out of memory. The
 * caller owns it and frees it with sim_opts_free (which accepts NULL).
 */
struct sim_opts;

struct sim_opts *sim_opts_new(void);
void sim_opts_free(struct sim_opts *o);

/*
 * Set one option from its text, named as the agent's --sim-NAME options:
 *   profile         a profile, "honest" or fault profiles joined by '+'
 *   program-us      0..1000000 microseconds to program one sector (0: 20)
 *   cache-sectors   0..1048576, the volatile cache's capacity (0: 256)
 *   seed, rate      the randomness of the fault profiles (rate 0..1)
 *   cut-after       a deterministic cut: after this many sectors programmed in
 *                   a power session the board's process group is SIGKILLed
 *                   (0: never)
 *   cut-at          flush:N[:US] or fua:N[:US]: an exact cut at the start of
 *                   the Nth cache flush, or inside the Nth FUA write, of the
 *                   power session (a campaign's cut plan "flush" or "fua"),
 *                   US microseconds of program time into it
 *   untimed         0 or 1: 1 programs at file speed, without the program time
 *                   (the agent's prepare sets it: nothing a campaign measures)
 *   keep-inputs     0..1000: keep the inputs of a crash-state check (base image,
 *                   write log, image at the cut) of the last N power-ons in
 *                   <media>.inputs/session-S (0: none; docs/sim.md)
 * 0, -EINVAL with err saying what was expected, -ENOENT for an unknown name.
 */
int sim_opts_set(struct sim_opts *o, const char *name, const char *val, char *err, size_t errlen);

/* What a power-on with these options uses (defaults applied). */
unsigned sim_opts_profile(const struct sim_opts *o);
uint32_t sim_opts_program_us(const struct sim_opts *o);
uint32_t sim_opts_cache_sectors(const struct sim_opts *o);
uint64_t sim_opts_seed(const struct sim_opts *o);
double sim_opts_rate(const struct sim_opts *o);

/* How many sectors of an n-sector FUA write an exact cut without a delay lets
 * through: seeded by (seed, session, nth), 1..n-1 (0 for one sector). */
uint32_t sim_cut_fua_sectors(uint64_t seed, uint32_t session, uint32_t nth, uint32_t n);

/* Create a zero-filled media file of size bytes (refuses to replace one). */
int sim_emmc_create(const char *media, uint64_t size, char *err, size_t errlen);

/*
 * Power on: map the media file media, with options o (NULL: the defaults),
 * start a new power session in the truth log (and settle what the last
 * session's cut did, e.g. which lied-about writes were dropped). *out is freed with sim_emmc_close(). -ENODEV ("sim eMMC <media>
 * does not respond (bricked in session N)") once the brick profile struck;
 * -EINVAL for a rate outside 0..1 (NaN).
 */
int sim_emmc_open(const char *media, const struct sim_opts *o, struct sim_emmc **out, char *err,
		  size_t errlen);
/* Orderly close (not a power cut): the cache is NOT destaged. Accepts NULL. */
void sim_emmc_close(struct sim_emmc *e);

uint64_t sim_emmc_sectors(const struct sim_emmc *e);

#define SIM_W_FUA	1u	/* reliable write: bypasses the cache (unless fua-ignored) */

/* Write nsect sectors at lba; returns when the device reports completion. */
int sim_emmc_write(struct sim_emmc *e, uint64_t lba, const void *buf, uint32_t nsect, unsigned wflags);
int sim_emmc_read(struct sim_emmc *e, uint64_t lba, void *buf, uint32_t nsect);
/* FLUSH_CACHE: destage the whole cache (or lie about it). */
int sim_emmc_flush(struct sim_emmc *e);
/* The host reboots but the card keeps power (a sysrq crash): the card goes
 * on to program everything in its cache, whatever its flush would say. */
int sim_emmc_host_reset(struct sim_emmc *e);

/* EXT_CSD's wear fields as the card reports them (SIM_P_WEAR): life time
 * type A and B (1..11) and pre-EOL info (1..3), from the sectors programmed
 * since the media was made. */
void sim_emmc_wear(const struct sim_emmc *e, int *life_a, int *life_b, int *pre_eol);

/* A mark in the kept write log (keep-inputs; nothing otherwise): the agent's
 * ACK, logged between requests before the ACK is sent (sim/inputs.h). */
void sim_emmc_mark(struct sim_emmc *e, const char *text);

/* Power session number (1 for the first power-on of a media file). */
uint32_t sim_emmc_session(const struct sim_emmc *e);

#endif

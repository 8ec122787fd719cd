/*
 * sim_truth.h - the emulated eMMC's ground-truth log, <media>.truth.jsonl.
 * Private to sim/: emmc.c and emmc_power.c are its users. Format in docs/sim.md.
 *
 * One JSON object a line, each line one write() on an O_APPEND descriptor.
 * Lines that record an injected fault are fdatasync'd before the fault is
 * committed, so a power cut can never hide one. At power-on the log of the
 * previous session is settled against the media: which of the writes the
 * device lied about did not survive.
 *
 * Functions return 0 or -errno; err names the log file.
 */
#ifndef PC_SIM_TRUTH_H
#define PC_SIM_TRUTH_H

#include <stddef.h>
#include <stdint.h>

struct sim_truth;

/* One cached write request as the log describes it. */
struct sim_truth_ent {
	uint64_t lba;		/* device LBA of its first sector */
	uint32_t n;		/* sectors */
	uint64_t seq;		/* record header seq of its first sector */
	int raw;		/* not a powercut record (superblock...): never settled */
};

/* One numeric member of a fault line, in the order it is written. */
struct sim_truth_kv {
	const char *key;
	uint64_t v;
};

/* What a bricked device says at power-on (media, session of the brick). */
#define SIM_BRICK_MSG	"sim eMMC %s does not respond (bricked in session %u)"

/*
 * Open (create) the log of media, find the session number and settle the
 * previous session against the media image map of sectors sectors (dropped
 * lies, torn early-acked reliable writes, misdirects that left no trace). The caller then starts the
 * session with sim_truth_power_on(). *out is freed with sim_truth_close().
 * -ENODEV (err: SIM_BRICK_MSG) when the last session logged a brick.
 */
int sim_truth_open(const char *media, const uint8_t *map, uint64_t sectors,
		   struct sim_truth **out, char *err, size_t errlen);
/* faults: add the seed and rate that drive the random fault profiles. */
int sim_truth_power_on(struct sim_truth *t, const char *profile, uint32_t cache_sectors,
		       uint32_t program_us, int faults, uint64_t seed, double rate,
		       char *err, size_t errlen);
uint32_t sim_truth_session(const struct sim_truth *t);
/*
 * Log one injected fault, {"ev":ev,"session":session,kv...,"expect":expect}
 * (expect may be NULL), with one write() and no fdatasync: a SIGKILL cannot
 * undo a completed write, and the caller commits the fault only afterwards.
 * once: write nothing if the log already ends with this very line (resuming
 * a fault whose line may have gone out just before a cut).
 */
int sim_truth_fault(struct sim_truth *t, uint32_t session, const char *ev,
		    const struct sim_truth_kv *kv, size_t nkv, const char *expect, int once);
/*
 * Log an exact cut (a cut plan's flush or FUA write), {"ev":ev,"session":S,
 * kv...,"entries":[...] (when ents is not NULL),"expect":expect}, with one
 * write(): the caller kills the board right after.
 */
int sim_truth_cut(struct sim_truth *t, const char *ev, const struct sim_truth_kv *kv, size_t nkv,
		  const struct sim_truth_ent *ents, size_t nents, const char *expect);
/* Log (and fdatasync) a flush that destaged nothing, listing what it left cached. */
int sim_truth_flush_lie(struct sim_truth *t, const struct sim_truth_ent *ents, size_t n);
/* Log (and fdatasync) a FUA write about to be cached instead of programmed. */
int sim_truth_fua_ignored(struct sim_truth *t, const struct sim_truth_ent *e);
/* Accepts NULL. */
void sim_truth_close(struct sim_truth *t);

#endif

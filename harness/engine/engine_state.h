/*
 * engine_state.h - the per-slot state: compact slot tables (what a slot
 * holds, packed), and the expected state built on them (struct eng_expect:
 * what every slot is to hold at the next scan). engine_state.c owns both:
 * the tables' layout and memory are its own (struct slots is opaque), and
 * the expected state is read through eng_exp_get() and given up through
 * eng_exp_drop(). The scan's adoption of a complete scan as the expected
 * state (engine_scan.c), the kept raw sectors' bookkeeping there and in
 * engine_hold.c, and the judge's baseline (engine_judge.c) write its
 * fields directly: they are the one step that makes the expected state.
 * Split out of struct board (issue 41). Private to
 * harness/engine.
 */
#ifndef PC_HARNESS_ENGINE_STATE_H
#define PC_HARNESS_ENGINE_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/record.h"

/* A sector as seen in a slot that was not one whole record. */
struct sect {
	uint8_t kind;		/* enum pc_sect_kind */
	uint16_t hidx;
	uint16_t flags;
	uint32_t cycle;
	uint32_t value;		/* fill value, crc of raw bytes, or errno */
	uint64_t seq;
	uint64_t lba;
};

enum { OCC_UNKNOWN, OCC_WHOLE, OCC_DAMAGED };

/* One slot's occupant, unpacked (a slot table, engine_state.c, keeps it
 * packed): what the judge reads. */
struct occ {
	uint8_t state;
	uint16_t flags;
	uint16_t got;		/* OCC_DAMAGED while scanning: sectors reported so far */
	uint32_t cycle;
	uint64_t seq;
	struct sect *sect;	/* OCC_DAMAGED: spr entries, owned */
};

/* The bytes of one damaged sector. */
struct raw {
	uint32_t slot;
	uint16_t idx;
	uint8_t bytes[PC_SECTOR];
};

/* Bitmaps of slots: (n + 63) / 64 words. */
#define BITMAP_WORDS(n)		(((size_t)(n) + 63) / 64)
#define BIT_GET(m, i)		((m)[(i) / 64] >> ((i) % 64) & 1u)
#define BIT_SET(m, i)		((m)[(i) / 64] |= (uint64_t)1 << ((i) % 64))

/* A table of every slot's occupant (engine_state.c). */
struct slots;

struct slots *eng_slots_new(uint32_t n, int dense);
void eng_slots_free(struct slots *t);
int eng_slots_dense(const struct slots *t);
int eng_slots_get(const struct slots *t, uint32_t slot, struct occ *o);
int eng_slots_state(const struct slots *t, uint32_t slot);
void eng_slots_count_damaged(const struct slots *t, const uint64_t *want, uint64_t *in, uint64_t *out);
int eng_slots_set(struct slots *t, uint32_t slot, const struct occ *o);
struct occ *eng_slots_side(struct slots *t, uint32_t slot, int create);
uint32_t eng_slots_nside(const struct slots *t);
int eng_slots_take(struct slots *t, uint32_t slot, struct occ *o);
int eng_slots_move_side(struct slots *from, struct slots *to, const uint64_t *want);
int eng_slots_densify(struct slots *t, const struct slots *base, const uint64_t *seen);
void eng_slots_compact(struct slots *t);

/* The expected state: what every slot is to hold when next scanned. */
struct eng_expect {
	struct slots *slots;	/* the expected occupant of every slot (dense) */
	int baseline;		/* a complete scan was adopted: there is something to judge against */
	/* bytes of damaged sectors the expected state holds (a later tear over
	 * them is located against these) */
	struct raw *raws;
	unsigned nraws;
	uint64_t next_seq;	/* the seq the next work is expected to start at */
};

struct board;

/* The expected occupant of the slot (none: OCC_UNKNOWN). */
void eng_exp_get(const struct board *b, uint32_t slot, struct occ *o);
/* The expected state given up, and the writes that were to be judged
 * against it: the next scan takes a new baseline. */
void eng_exp_drop(struct board *b);

/* The scan in progress against the expected state (engine_scan.h holds the
 * scan; these read or fill its table, sparse against b->exp). */
void eng_obs_get(const struct board *b, uint32_t slot, struct occ *o);
int eng_obs_differs(const struct board *b, uint32_t slot);
int eng_obs_put(struct board *b, uint32_t slot, const struct occ *o);

#endif

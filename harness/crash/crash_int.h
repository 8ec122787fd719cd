/*
 * crash_int.h - the crash-state checker's state, shared by its three parts,
 * in layers (each calls only the ones below it).
 * Nothing outside harness/crash includes it: crash.h is the interface.
 *
 *   crash.c         the inputs (events, log, images), the cycle driven
 *                   through its states, the result
 *   crash_acks.c    the ACKs against the log: at each ACK mark, at the cut
 *   crash_bound.c   the legal states at the cut, those judged, what is left out
 *   crash_states.c  which states: subsets, tears (the covering design),
 *                   virtual cuts, illegal states, the observed image
 *   crash_space.c   every legal state at the cut, where affordable
 *   crash_judge.c   one state built, scanned and judged (incrementally: the cycle
 *                   fed once to a held engine, each state's scan judged on it);
 *                   shared helpers
 */
#ifndef PC_HARNESS_CRASH_INT_H
#define PC_HARNESS_CRASH_INT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <json-c/json.h>

#include "agent/region.h"
#include "harness/crash/crash.h"
#include "harness/engine/engine.h"

/* One write of the log, in 512-byte sectors. */
struct cwrite {
	uint64_t lba, n;
	size_t entry;		/* its index among the log's entries */
	int fua, durable;
	size_t sect0;		/* its first sector in the per-sector tables */
	size_t ext;		/* the extent holding it, and its byte offset there */
	size_t ext_off;
};

/* One ACK mark of the log: the agent acknowledged [first, first + n) at log entry entry. */
struct cmark {
	size_t entry;
	uint64_t first, n;
};

/* A state's fingerprint: 128 bits of its image's bytes in the extents and of its acks. */
struct crash_fp {
	uint64_t a, b;
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
	struct cmark *mk;	/* the agent's ACK marks, in log order */
	size_t nmk, capmk;
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
	int pattern, torn_violation, torn_sector_violation;
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
	uint8_t *rtsec;		/* per record: one of its sectors torn within (c->half) */
	size_t half;		/* 1 + a write sector kept only in its first half (a sub-sector tear,
				 * an illegal state), 0 none */
	size_t ack_limit;
	json_object *verdict;
	int no_truth;		/* the state's truth is not known: no notes of its differences */
	uint64_t cap_lo, cap_hi;	/* findings of these seqs are kept in captured */
	char *captured;
	struct engine *eng;
	int feed_rc;
	char feed_err[256];
	/* distinct states: fingerprints of (the image in the extents, the acks) judged so far */
	struct crash_fp *fps;
	size_t nfps, capfps;
	int dedup;		/* crash_state_judge: a state judged before is a repeat */
	int repeat;		/* the state being judged is one (judged only for its captured findings) */
	unsigned nvol;
	size_t *vol;		/* the volatile writes' indexes */
	/* incremental judging (crash_judge.c): the cycle fed once to heng, held before the states' scan */
	json_object *verify_states;	/* the states' partial VERIFY (c->verify while it is this one) */
	struct engine *heng;
	struct engine_hold *hold;
	size_t hold_limit;		/* the ACK limit heng was fed with */
	int hold_refused;		/* the engine fed with hold_refused_limit ACKs could not be held */
	size_t hold_refused_limit;
};

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

/* crash_judge.c: helpers, then one state. -errno rc, err set from fmt. */
/* The held engine of incremental judging, freed. */
void crash_incr_drop(struct ctx *c);
uint64_t crash_mix(uint64_t x);
/* An rx event's message type ("" when none); a number in an object (k2: in its member k1). */
const char *crash_msg_type(json_object *ev);
int64_t crash_ev_int(json_object *o, const char *k1, const char *k2, int64_t dflt);
/* An event's cycle (UINT32_MAX when none or out of range). */
unsigned crash_ev_cycle(json_object *ev);
/* A clock's time in ms (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID). */
double crash_clock_ms(clockid_t id);
/* The records [*lo, *hi) of the cycle an ACK event names: -1 not an ACK, 0 all it names are the
 * cycle's, 1 it names others too (or none of the cycle's). */
int crash_ack_range(struct ctx *c, json_object *ev, size_t *lo, size_t *hi);
/* A verify event of the next boot (takes msg). */
json_object *crash_verify_event(struct ctx *c, unsigned cycle, json_object *msg);
/* The base image scanned into c->base_scan (a verify event and the scan's rx events). 0 or -errno. */
int crash_base_scan(struct ctx *c, char *err, size_t errlen);
/* One of the result's first CRASH_MAX_LISTED notes. */
void crash_note(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * Judge the state in keep[] (or, img_ready, the image already in the map)
 * with the ACKs up to c->ack_limit: 1 when its verdict says what it holds,
 * 0 when not, 2 (c->dedup) a state judged before, not judged again (c->repeat:
 * one judged again for its captured findings only), -errno. *failed: the
 * verdict is FAIL.
 */
int crash_state_judge(struct ctx *c, enum crash_mode mode, const char *label, int img_ready, int *failed,
		      char *err, size_t errlen);
/* Is the state now in the map (with racked[]) one judged before? 1 yes; 0 no, and it is remembered
 * when insert; -ENOMEM. */
int crash_fp_seen(struct ctx *c, int insert);
/* racked[]: the records of the ACK events up to c->ack_limit. */
void crash_state_acks(struct ctx *c);
/* A legal state: judged, counted, a mismatch when its verdict is wrong; one judged before (the same
 * image and acks) is counted in repeats, not judged again. 0 or -errno. */
int crash_legal(struct ctx *c, enum crash_mode mode, const char *label, char *err, size_t errlen);

/* crash_acks.c: the ACKs against the log. */
struct wlog_entry;
/* A mark entry of the log read: a pc-ack mark into c->mk (capmk must have room). 0 or -EPROTO/-EIO. */
int crash_mark_read(struct ctx *c, int fd, const struct wlog_entry *e, size_t i, uint32_t ss, char *err,
		    size_t errlen);
/* r->acked, acked_not_durable (at each mark, and at the real cut), ack_marks, acks_unmarked. 0 or -errno. */
int crash_acks_check(struct ctx *c, char *err, size_t errlen);
/* With marks: how many of the host's ACKs can have come by log entry at (the marks before it). */
size_t crash_marks_before(const struct ctx *c, size_t at);

/* crash_states.c: the kinds of states, each 0 or -errno. */
#define CRASH_ALL_MASKS_SPR	8u	/* records of at most 8 sectors: every tear mask (254 for 4 KiB) */
#define CRASH_ALL_MASKS_WRITES	8u	/* ... of every volatile write while at most 8; beyond, the first's */
#define CRASH_PAIR_WRITES	8u	/* two torn writes: the pairs of the first 8 volatile writes */
int crash_tear_all(const struct ctx *c, unsigned v);
/* crash_bound.c: after the states, the bound (r->judged_at_cut, legal, leaves, design). 0 or -errno. */
int crash_bound(struct ctx *c, char *err, size_t errlen);
int crash_design_make(struct design *d, uint32_t spr);
/* Each sector kept by one row and dropped by another, and every pair of sectors in each of the
 * three states a row can give it: 0, or -EPROTO naming what is missed. */
int crash_design_check(const struct design *d, uint32_t spr, char *err, size_t errlen);
int crash_subsets(struct ctx *c, char *err, size_t errlen);
int crash_tears(struct ctx *c, const struct design *d, char *err, size_t errlen);
int crash_cuts(struct ctx *c, char *err, size_t errlen);
int crash_illegal(struct ctx *c, const struct design *d, char *err, size_t errlen);
int crash_observed(struct ctx *c, const struct design *d, char *err, size_t errlen);
/* crash_space.c: every legal state at the cut (opts.every_state), or -E2BIG over the limit. */
int crash_space(struct ctx *c, char *err, size_t errlen);

#endif

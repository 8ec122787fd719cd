/*
 * crash_inputs.h - the inputs of one cycle's crash states: what a kept
 * power-on gave (the write log's entries and bytes, the base image mapped,
 * the agent's ACK marks, the records the cycle's work names, its events).
 * crash_inputs.c alone builds, fills and frees it; the states
 * (crash_states.h) and the judge (crash_judge.h) read it through a const
 * pointer. The one part written after it is built is the bytes of the map
 * and of the extents' buf: the states' device, where each state's image is
 * composed (crash_judge.c) or the image after the cut loaded
 * (crash_states.c).
 */
#ifndef PC_HARNESS_CRASH_INPUTS_H
#define PC_HARNESS_CRASH_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "agent/region.h"
#include "harness/crash/crash.h"

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

struct crash_inputs {
	const struct crash_input *in;
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
	unsigned nvol;
	size_t *vol;		/* the volatile writes' indexes */
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
	json_object *verify;	/* the states' verify event: a partial scan of the slots they touch */
	size_t nacks;		/* ACK events in mid */
	int64_t post_t;
};

/*
 * The inputs of in's cycle read, checked against its cycle.json and bounded
 * (the events picked, the log loaded, the base image mapped, the write in
 * flight made, each write sector mapped to its record, the ACKs before the
 * cut, the states' partial verify): 0 or -errno, err set. r->mode is the
 * work's. Free with crash_inputs_free, whatever it returned.
 */
int crash_inputs_load(struct crash_inputs *c, const struct crash_input *in, struct crash_result *r, char *err,
		      size_t errlen);
void crash_inputs_free(struct crash_inputs *c);

/* The cycle's events read. An rx event's message type ("" when none); a number in an object (k2: in its
 * member k1). */
const char *crash_msg_type(json_object *ev);
int64_t crash_ev_int(json_object *o, const char *k1, const char *k2, int64_t dflt);
/* An event's cycle (UINT32_MAX when none or out of range). */
unsigned crash_ev_cycle(json_object *ev);
/* The records [*lo, *hi) of the cycle an ACK event names: -1 not an ACK, 0 all it names are the
 * cycle's, 1 it names others too (or none of the cycle's). */
int crash_ack_range(const struct crash_inputs *c, json_object *ev, size_t *lo, size_t *hi);
/* A verify event of the next boot (takes msg). */
json_object *crash_verify_event(const struct crash_inputs *c, unsigned cycle, json_object *msg);

#endif

/*
 * proto.h - the host <-> agent protocol: one JSON object per line.
 *
 * Every line is untrusted input. pc_msg_parse() checks its length, that it is
 * one JSON object, its "type" and protocol version "v", and every field the
 * type requires (presence, JSON type, range); anything else is a precise
 * error, never a crash. See docs/protocol.md for the messages.
 */
#ifndef PC_PROTO_H
#define PC_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#define PC_PROTO_VERSION	1
#define PC_PROTO_MAX_LINE	8192	/* bytes, newline excluded */
/* Lines carried over a serial console start with this marker. */
#define PC_PROTO_MARKER		"@@PC "
/* Raw sector images sent in one scan, at most (the rest are summarised). */
#define PC_PROTO_MAX_RAW	64
/* Runs per "runs" line. */
#define PC_PROTO_RUNS_PER_LINE	64

enum pc_msg_type {
	PC_MSG_HELLO,		/* agent: identity, region geometry */
	PC_MSG_SCAN_BEGIN,	/* agent: a scan starts */
	PC_MSG_RUNS,		/* agent: runs of whole records, in position order */
	PC_MSG_SLOT,		/* agent: one slot that is not one whole record */
	PC_MSG_SCAN_END,	/* agent: scan finished */
	PC_MSG_SUBMIT,		/* agent: about to issue writes of seqs [first, first+n) */
	PC_MSG_ACK,		/* agent: seqs [first, first+n) are durable */
	PC_MSG_DONE,		/* agent: the cycle's work is finished */
	PC_MSG_ERROR,		/* agent: cannot go on */
	PC_MSG_VERIFY,		/* host: scan the region */
	PC_MSG_WORK,		/* host: the cycle's writes */
	PC_MSG_CRASH,		/* host: reboot now without syncing (the sysrq "cut") */
	PC_MSG_CHALLENGE,	/* host: answer a hello with the host's nonce (auth.h) */
	PC_MSG_AUTH,		/* agent: the proof that it holds the campaign's key */
	PC_MSG_KNOWN,		/* host: damaged sectors and slots it already holds (before VERIFY) */
	PC_MSG_SAME,		/* agent: damaged slots exactly as the host holds them (a scan line) */
	PC_MSG_IO,		/* agent: about to issue a cache flush or a FUA write (when the work asks) */
	PC_MSG_AUDIT,		/* agent: the block requests the work issued so far (audit) */
	PC_MSG_SETUP_ERROR,	/* agent, unauthenticated: why it cannot get to a valid hello */
	PC_MSG_TYPE_MAX,
};

const char *pc_msg_type_name(enum pc_msg_type t);

/*
 * The io audit (AUDIT messages, and DONE's "audit"): either
 * {"unavailable": "why"} or {"src": "tracefs"|"sim", "rq": {"WS": 60, ...},
 * "sectors": {"WS": 512}}: the block requests the work issued so far by the
 * kernel's rwbs name (1 to 9 capital letters, or "other"), at most
 * PC_PROTO_AUDIT_KINDS of them, each count at most 2^40; and, optionally,
 * the 512-byte sectors of the kinds that carried data (only kinds in rq).
 * Nothing else.
 */
#define PC_PROTO_AUDIT_KINDS	17
#define PC_PROTO_AUDIT_MAX	(1ull << 40)

/*
 * The I/O the agent announces (IO messages) when the work's "announce" asks:
 * bits, so a work may ask for both. A cut plan "at a flush" or "at a FUA
 * write" is carried out on these announcements.
 */
#define PC_IO_FLUSH	1u	/* a cache flush (fdatasync: REQ_OP_FLUSH, eMMC FLUSH_CACHE) */
#define PC_IO_FUA	2u	/* a FUA write (RWF_DSYNC: REQ_FUA, eMMC reliable write) */
#define PC_IO_ALL	(PC_IO_FLUSH | PC_IO_FUA)
/* "flush", "fua" (one bit), or "?" */
const char *pc_io_op_name(unsigned op);
/* The bit of "flush" or "fua"; 0 for anything else. */
unsigned pc_io_op_from_name(const char *s);

/* One run of whole records in position order (see record.h):
 * positions [pos, pos+n) hold seqs seq, seq+1, ... (or all gen-0 if seq == 0),
 * all written in cycle with flags. */
struct pc_run {
	uint32_t pos;
	uint32_t n;
	uint64_t seq;
	uint32_t cycle;
	uint16_t flags;
};

enum pc_sect_kind {
	PC_SK_VALID,	/* a whole, valid sector of some record */
	PC_SK_RAW,	/* a bad sector, with its bytes */
	PC_SK_FILL,	/* a bad sector whose bytes are all one value */
	PC_SK_HASH,	/* a bad sector, bytes not sent (raw budget spent) */
	PC_SK_ERR,	/* the read failed */
};

struct pc_sect_report {
	uint16_t idx;
	enum pc_sect_kind kind;
	/* PC_SK_VALID: the header found in the sector */
	uint64_t seq;
	uint32_t cycle;
	uint16_t flags;
	uint64_t lba;		/* the LBA in the header (differs from the slot's: misdirected) */
	uint16_t hidx;		/* the sector index in the header */
	/* PC_SK_RAW: 512 bytes; PC_SK_FILL: value; PC_SK_HASH: crc32c of the bytes; PC_SK_ERR: errno */
	uint8_t raw[512];
	uint32_t value;
};

/*
 * A damaged sector the host already holds (KNOWN): the crc32c of the bytes an
 * earlier scan reported for sector idx of slot. The agent reports such a
 * sector, if its bytes are unchanged, by hash alone: old damage never spends
 * the raw budget that new damage needs (docs/protocol.md).
 */
struct pc_known {
	uint32_t slot;
	uint16_t idx;
	uint32_t crc;
};
/* Entries per KNOWN line (10 bytes each, base64), and per scan in all. */
#define PC_PROTO_KNOWN_PER_LINE	500
#define PC_PROTO_MAX_KNOWN	16384

/*
 * A damaged slot the host holds (KNOWN "slots"): the digest of what the last
 * scan reported for it, sector by sector (pc_slot_digest()). A slot the agent
 * finds damaged with the same digest is reported in a SAME line by its number
 * alone: old damage is not sent again at every boot.
 */
struct pc_known_slot {
	uint32_t slot;
	uint64_t digest;
};
/* Slot entries per KNOWN line (12 bytes each), per scan in all, and slots per SAME line. */
#define PC_PROTO_KNOWN_SLOTS_PER_LINE	400
#define PC_PROTO_MAX_KNOWN_SLOTS	65536
#define PC_PROTO_SAME_PER_LINE		600

/* Positions [pos, pos+n) in the pattern's position order (VERIFY). */
struct pc_posrange {
	uint32_t pos;
	uint32_t n;
};
#define PC_PROTO_MAX_RANGES 256
/* ACK latencies ("us"): at most this many records per ACK carry them (a
 * larger range is acknowledged without), each at most an hour. */
#define PC_PROTO_MAX_LAT_N	256u
#define PC_PROTO_MAX_LAT_US	3600000000u

struct pc_slot_report {
	uint32_t slot;
	uint32_t nsect;
	struct pc_sect_report *sect;	/* nsect entries, malloc'd */
};

struct pc_work {
	uint32_t cycle;
	uint64_t first;
	uint32_t n;
	int mode;		/* enum pc_mode */
	int pattern;		/* enum pc_pattern */
	uint32_t record_size;
	uint32_t flush_every;
	uint32_t qd;
	uint64_t seed;
	unsigned announce;	/* PC_IO_* bits: the agent sends an IO message before each such I/O */
};

/* A parsed, validated message. obj holds the whole JSON object (for HELLO and
 * DONE, whose free-form parts are kept as they came). */
struct pc_msg {
	enum pc_msg_type type;
	json_object *obj;
	union {
		struct {					/* SUBMIT, ACK */
			uint64_t first;
			uint32_t n;
			uint32_t *us;	/* ACK: each record's SUBMIT->ACK latency in
					 * microseconds (n of them, malloc'd), or NULL */
		} range;
		struct pc_work work;				/* WORK */
		struct {					/* VERIFY */
			int pattern;
			int full;
			struct pc_posrange *ranges;	/* !full: positions to scan (malloc'd) */
			uint32_t nranges;
		} verify;
		struct { struct pc_run *runs; uint32_t nruns; } runs;
		struct pc_slot_report slot;
		struct { uint32_t slots; uint32_t anomalies; uint32_t raw_dropped; } scan_end;
		struct { uint64_t records; } done;
		struct {					/* KNOWN (both malloc'd) */
			struct pc_known *k;
			uint32_t n;
			struct pc_known_slot *slots;
			uint32_t nslots;
		} known;
		struct { uint32_t *slots; uint32_t n; } same;	/* SAME (malloc'd) */
		struct {					/* IO */
			unsigned op;	/* PC_IO_FLUSH or PC_IO_FUA */
			uint64_t seq;	/* fua: the record written; flush: the last record it covers */
		} io;
	} u;
};

/*
 * Parse and validate one line (without its newline; an optional serial marker
 * prefix is skipped). Returns 0 and fills *m (release with pc_msg_clear), or
 * -EINVAL with a message in err naming what is wrong.
 */
int pc_msg_parse(const char *line, size_t len, struct pc_msg *m, char *err, size_t errlen);
/* The same checks on an object already parsed (a message read back from
 * events.jsonl): every field and array bound, but no line length. m->obj
 * takes a reference to o. */
int pc_msg_parse_obj(json_object *o, struct pc_msg *m, char *err, size_t errlen);
/* An integer member of o within [min, max], or -1 (missing, not an integer,
 * out of range): for records the harness reads back (lock files, groups). */
int64_t pc_json_int_in(json_object *o, const char *key, int64_t min, int64_t max);
/* The first line of a record file the harness rewrites in place (a lock
 * file: a run writes its new line over the old one before it truncates
 * the rest) as a JSON object, read with pread at offset 0 into buf (at most
 * len - 1 bytes); NULL when it is empty, unreadable or not an object. */
json_object *pc_json_first_line(int fd, char *buf, size_t len);
void pc_msg_clear(struct pc_msg *m);

/*
 * Builders: each returns a new json_object (the caller puts it) with "type"
 * and "v" set. pc_msg_line() serialises a message into buf as one line with a
 * trailing newline; returns its length or -E2BIG when it exceeds the limit.
 */
json_object *pc_msg_new(enum pc_msg_type t);
json_object *pc_msg_range(enum pc_msg_type t, uint64_t first, uint32_t n);
/* An ACK with each record's latency (us: n values, n <= PC_PROTO_MAX_LAT_N,
 * each <= PC_PROTO_MAX_LAT_US); us NULL gives a plain ACK. */
json_object *pc_msg_ack(uint64_t first, uint32_t n, const uint32_t *us);
json_object *pc_msg_work(const struct pc_work *w);
/* IO: op is PC_IO_FLUSH or PC_IO_FUA, seq >= 1. */
json_object *pc_msg_io(unsigned op, uint64_t seq);
json_object *pc_msg_verify(int pattern, int full);
/* A partial scan: only the positions in ranges (1..PC_PROTO_MAX_RANGES). */
json_object *pc_msg_verify_ranges(int pattern, const struct pc_posrange *ranges, uint32_t n);
/* Damaged sectors the host holds: 1..PC_PROTO_KNOWN_PER_LINE entries. */
json_object *pc_msg_known(const struct pc_known *k, uint32_t n);
/* Damaged slots the host holds: 1..PC_PROTO_KNOWN_SLOTS_PER_LINE entries. */
json_object *pc_msg_known_slots(const struct pc_known_slot *k, uint32_t n);
/* Slots found damaged exactly as known: 1..PC_PROTO_SAME_PER_LINE. */
json_object *pc_msg_same(const uint32_t *slots, uint32_t n);

/* The digest of a damaged slot's report: every sector's index, kind and
 * fields in order (a raw sector counts by the crc32c of its bytes, as a hash
 * does). The agent and the engine compute it alike. */
uint64_t pc_slot_digest(const struct pc_sect_report *sect, uint32_t n);
/* The same, one sector at a time from PC_SLOT_DIGEST_INIT. */
#define PC_SLOT_DIGEST_INIT 0x9e3779b97f4a7c15ull
uint64_t pc_slot_digest_add(uint64_t h, const struct pc_sect_report *r);
json_object *pc_msg_runs(const struct pc_run *runs, uint32_t n);
json_object *pc_msg_slot(const struct pc_slot_report *s);
json_object *pc_msg_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * SETUP_ERROR: the agent cannot get to a valid hello (no key, no host at the
 * address it was given, ...), said before any authentication: on the link
 * when it reaches the host, and marked on its console. board may be NULL
 * (the agent was not told its name); cause is a short token (PC_SETUP_CAUSE_
 * below, [a-z0-9_], 1..32), the reason at most PC_PROTO_MAX_REASON bytes
 * (longer is cut). The host takes it as the agent's word, unproven.
 */
#define PC_PROTO_MAX_REASON	480
json_object *pc_msg_setup_error(const char *board, const char *cause, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int pc_msg_line(json_object *msg, char *buf, size_t buflen);
/*
 * The writer's messages as pc_msg_line() would write them (the same bytes,
 * newline and NUL included; unit suite proto compares), built without
 * json-c or any allocation: SUBMIT and ACK ranges (pc_msg_range), an ACK
 * with latencies (pc_msg_ack) and IO (pc_msg_io). The length with the
 * newline, -E2BIG when buf is too small, -EINVAL for a bad IO.
 */
int pc_line_range(char *buf, size_t buflen, enum pc_msg_type t, uint64_t first, uint32_t n);
int pc_line_ack(char *buf, size_t buflen, uint64_t first, uint32_t n, const uint32_t *us);
int pc_line_io(char *buf, size_t buflen, unsigned op, uint64_t seq);

/*
 * Line reader for a byte stream: feed bytes, take complete lines. A line
 * longer than PC_PROTO_MAX_LINE is reported once as too long and skipped up
 * to its newline.
 */
struct pc_linebuf {
	char buf[PC_PROTO_MAX_LINE + 2];
	size_t len;
	int overflow;	/* discarding an over-long line */
};

enum pc_line_result { PC_LINE_NONE, PC_LINE_OK, PC_LINE_TOO_LONG };

/* Append up to n bytes; returns how many were taken (stop when it is < n and
 * drain lines first). */
size_t pc_linebuf_feed(struct pc_linebuf *lb, const char *data, size_t n);
/* Take the next complete line into out (NUL-terminated, newline stripped). */
enum pc_line_result pc_linebuf_take(struct pc_linebuf *lb, char *out, size_t outlen, size_t *linelen);

/* Integer helpers for validated json objects (0 or -EINVAL with err). */
int pc_json_u64(json_object *o, const char *key, uint64_t max, uint64_t *out, char *err, size_t errlen);
int pc_json_str(json_object *o, const char *key, const char **out, char *err, size_t errlen);

/* A double written as typed (0.1, not 0.10000000000000001), and always a
 * JSON double ("1.0", never "1"). */
json_object *pc_json_double(double v);

/* A seed as the agent's --seed and --sim-seed take it: 0 to 2^64-1 in decimal
 * or 0x hex, no sign, no octal, nothing after the digits. 0 or -EINVAL. */
int pc_parse_seed(const char *s, uint64_t *out);

/* base64 (RFC 4648) */
size_t pc_b64_encode(const uint8_t *in, size_t n, char *out);	/* out: 4*((n+2)/3)+1 bytes */
int pc_b64_decode(const char *in, uint8_t *out, size_t outmax, size_t *outlen);

#endif

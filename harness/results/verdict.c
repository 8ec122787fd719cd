/*
 * verdict.c - the verdict vocabulary and the violation rule (verdict.h).
 */
#include "harness/results/verdict.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/json.h"
#include "common/record.h"
#include "common/util.h"

const char *const pc_class_names[PC_NCLASSES] = {
	"intact", "not_written", "lost_acked", "torn", "torn_sector",
	"corrupt", "misdirected", "stale", "collateral", "unreadable",
	"unclassified",
};

const char *const pc_outcome_names[PC_NOUTCOMES] = { "PASS", "FAIL", "BOOT_FAIL", "INFRA_ERROR" };

const char *const pc_ev_names[PC_NEV_KINDS] = {
	"power_on", "boot_stage", "rx", "rx_bad", "rx_stray", "verify", "work", "cut", "boot_fail", "infra",
	"final_boot_fail", "final_infra", "link_reject", "give_up", "run_end", "run_start",
	"link_reject_summary", "config_change",
};

const char *const pc_result_names[PC_NRESULTS] = { "PASS", "FAIL", "BOOT_FAIL", "INCOMPLETE",
						   "INCONCLUSIVE" };

const char *const pc_incomplete_names[PC_NINCOMPLETE] = {
	"given_up", "cycles_missing", "running", "killed", "infra_share", "nothing_judged",
};

const char *const pc_run_end_names[PC_NRUN_ENDS] = {
	"finished", "interrupted", "given_up", PC_DEAD_DEVICE, "first_fail", "target_met", "disk_floor",
};

const char *const pc_trigger_names[PC_NTRIGGERS] = {
	"random instant", "acks", "flush", "fua", "sim exact", "work done", "work timeout", "link lost",
	"write refused",
};

/* The index of s in names[0..n), or -1 (s NULL: -1). */
static int name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

int pc_ev_from_name(const char *s)
{
	return name_index(pc_ev_names, PC_NEV_KINDS, s);
}

int pc_class_from_name(const char *s)
{
	return name_index(pc_class_names, PC_NCLASSES, s);
}

int pc_outcome_from_name(const char *s)
{
	return name_index(pc_outcome_names, PC_NOUTCOMES, s);
}

int pc_result_from_name(const char *s)
{
	return name_index(pc_result_names, PC_NRESULTS, s);
}

int pc_run_end_from_name(const char *s)
{
	return name_index(pc_run_end_names, PC_NRUN_ENDS, s);
}

int pc_trigger_from_name(const char *s)
{
	return name_index(pc_trigger_names, PC_NTRIGGERS, s);
}

int pc_cut_counts(int outcome, uint64_t not_written, uint64_t torn, uint64_t torn_sector)
{
	if (outcome == PC_OUT_FAIL)
		return 1;
	return outcome == PC_OUT_PASS && not_written + torn + torn_sector > 0;
}

/* A count of a verdict line: missing, negative or not an integer is 0. */
static uint64_t verdict_count(json_object *o, const char *key)
{
	int64_t n = 0;

	return pc_jint(o, key, &n) || n < 0 ? 0 : (uint64_t)n;
}

int pc_verdict_read(json_object *line, struct pc_verdict *v)
{
	json_object *board = pc_jget(line, "board"), *cycle = pc_jget(line, "cycle");
	json_object *counts = pc_jget(line, "counts");

	/* a hostile line: a board that is not a name, a cycle that is not a
	 * count (the report refuses the same line) */
	if (!json_object_is_type(board, json_type_string) || !json_object_is_type(cycle, json_type_int) ||
	    json_object_get_int64(cycle) < 0)
		return -EINVAL;
	memset(v, 0, sizeof(*v));
	v->json = line;
	v->board = json_object_get_string(board);
	v->cycle = json_object_get_int64(cycle);
	v->outcome = pc_outcome_from_name(pc_jstr(line, "verdict", NULL));
	v->mode = pc_mode_from_name(pc_jstr(line, "mode", NULL));
	for (int i = 0; i < PC_NCLASSES; i++)
		v->counts[i] = verdict_count(counts, pc_class_names[i]);
	v->violations = verdict_count(line, "violations");
	return 0;
}

void pc_policy_default(struct pc_policy *p, int mode)
{
	p->torn = 0;
	p->torn_sector = mode == PC_MODE_FUA || mode == PC_MODE_FUA_FLUSH || mode == PC_MODE_RELWR;
	p->unclassified = 0;
}

int pc_is_violation(enum pc_class c, int acked, const struct pc_policy *p)
{
	switch (c) {
	case PC_CLS_INTACT:
	case PC_CLS_NOT_WRITTEN:
		return 0;
	case PC_CLS_TORN:
		return acked || p->torn;
	case PC_CLS_TORN_SECTOR:
		return acked || p->torn_sector;
	case PC_CLS_UNCLASSIFIED:
		return p->unclassified;
	default:
		return 1;
	}
}

int pc_class_always_violation(enum pc_class c)
{
	return c != PC_CLS_INTACT && c != PC_CLS_NOT_WRITTEN && c != PC_CLS_TORN && c != PC_CLS_TORN_SECTOR &&
	       c != PC_CLS_UNCLASSIFIED && c < PC_NCLASSES;
}

int pc_format_read(struct json_object *v, const char *what, int *major, int *minor, char *err, size_t errlen)
{
	const char *s;
	char *end;
	unsigned long ma, mi;

	*major = 1;
	*minor = 0;
	if (!v)
		return 0;
	s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	errno = 0;
	ma = strtoul(s, &end, 10);
	if (end == s || *end != '.' || s[0] < '0' || s[0] > '9' || errno || ma < 1 || ma > 1000)
		goto bad;
	s = end + 1;
	mi = strtoul(s, &end, 10);
	if (end == s || *end || s[0] < '0' || s[0] > '9' || errno || mi > 1000)
		goto bad;
	if (ma > PC_FORMAT_MAJOR)
		return pc_fail(err, errlen, -EINVAL, "%s: results format %lu.%lu is newer than this powercut reads (%d.x, "
			 "powercut %s): read it with a newer powercut", what, ma, mi, PC_FORMAT_MAJOR, PC_VERSION);
	*major = (int)ma;
	*minor = (int)mi;
	return 0;
bad:
	return pc_fail(err, errlen, -EINVAL, "%s: \"format\": expected a version string \"MAJOR.MINOR\" such as \"%s\", got %s",
		 what, PC_FORMAT, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
}

unsigned pc_lat_bucket(uint32_t us)
{
	unsigned e;

	if (us > PC_LAT_MAX_US)
		us = PC_LAT_MAX_US;
	if (us < 16)
		return us;
	e = 31u - (unsigned)__builtin_clz(us);	/* 4..31 */
	return 16u + (e - 4u) * 8u + ((us >> (e - 3u)) & 7u);
}

uint32_t pc_lat_lo(unsigned b)
{
	unsigned e;

	if (b < 16)
		return b;
	if (b >= PC_LAT_BUCKETS)
		b = PC_LAT_BUCKETS - 1;
	e = (b - 16u) / 8u + 4u;
	return (uint32_t)((8u + (b - 16u) % 8u) << (e - 3u));
}

uint32_t pc_lat_hi(unsigned b)
{
	if (b < 16)
		return b;
	if (b >= PC_LAT_BUCKETS - 1)
		return UINT32_MAX;
	return pc_lat_lo(b + 1) - 1;
}

uint32_t pc_lat_quantile(const uint64_t *hist, uint64_t n, double q, uint32_t max)
{
	uint64_t want, seen = 0;

	if (!n)
		return 0;
	/* the smallest value with at least q*n at or below it */
	want = (uint64_t)(q * (double)n + 0.999999);
	if (want < 1)
		want = 1;
	for (unsigned b = 0; b < PC_LAT_BUCKETS; b++) {
		seen += hist[b];
		if (seen >= want)
			return pc_lat_hi(b) < max ? pc_lat_hi(b) : max;
	}
	return max;
}

void pc_rq_add(const char *rwbs, uint64_t n, uint64_t sums[PC_NRQ])
{
	const char *op = rwbs;
	int pre = 0;

	/* blk_fill_rwbs(): an F first is a preflush, then the operation (W, R,
	 * D, F flush, N driver), then F for FUA, then S, M, ... */
	if (op[0] == 'F' && op[1] && strchr("WRDFN", op[1])) {
		pre = 1;
		op++;
	}
	if (pre)
		sums[PC_RQ_FLUSH] += n;
	switch (op[0]) {
	case 'W':
		sums[op[1] == 'F' ? PC_RQ_FUA : PC_RQ_WRITE] += n;
		break;
	case 'F':
		if (!pre)
			sums[PC_RQ_FLUSH] += n;
		break;
	default:
		sums[PC_RQ_OTHER] += n;
	}
}

int pc_io_mismatch(int mode, const uint64_t sums[PC_NRQ], int done, const struct pc_queue *q)
{
	uint64_t w = sums[PC_RQ_WRITE] + sums[PC_RQ_FUA];

	switch (mode) {
	case PC_MODE_FUA:
		/* the audit is the count the agent last sent before the cut: an
		 * emulated FUA's write may be in it without its flush yet */
		return w > 0 && sums[PC_RQ_FUA] == 0 &&
		       (done || sums[PC_RQ_FLUSH] > 0 || (q && q->write_through == 1));
	case PC_MODE_FUA_FLUSH:
	case PC_MODE_FLUSH:
	case PC_MODE_JOURNAL:
		return done && w > 0 && sums[PC_RQ_FLUSH] == 0;
	default:
		return 0;
	}
}

void pc_queue_read(struct json_object *fua, struct json_object *write_cache, struct pc_queue *q)
{
	const char *wc;

	q->fua = q->write_through = -1;
	q->rel_wr_sec_c = q->wr_rel_param = -1;
	q->record_sectors = 0;
	if (fua && (json_object_is_type(fua, json_type_int) || json_object_is_type(fua, json_type_boolean)))
		q->fua = json_object_get_int(fua) != 0;
	wc = write_cache && json_object_is_type(write_cache, json_type_string) ? json_object_get_string(write_cache) : "";
	if (!strcmp(wc, "write through"))
		q->write_through = 1;
	else if (!strcmp(wc, "write back"))
		q->write_through = 0;
}

void pc_queue_read_emmc(struct json_object *ext_csd, uint64_t record_size, struct pc_queue *q)
{
	struct json_object *v;
	int64_t n;

	q->rel_wr_sec_c = q->wr_rel_param = -1;
	q->record_sectors = record_size % 512 == 0 && record_size / 512 <= 65535 ? (unsigned)(record_size / 512) : 0;
	if (!ext_csd || !json_object_object_get_ex(ext_csd, "available", &v) || !json_object_get_boolean(v))
		return;
	/* EXT_CSD bytes: 0..255, else unknown */
	if (json_object_object_get_ex(ext_csd, "rel_wr_sec_c", &v) && json_object_is_type(v, json_type_int) &&
	    (n = json_object_get_int64(v)) >= 0 && n <= 255)
		q->rel_wr_sec_c = (int)n;
	if (json_object_object_get_ex(ext_csd, "wr_rel_param", &v) && json_object_is_type(v, json_type_int) &&
	    (n = json_object_get_int64(v)) >= 0 && n <= 255)
		q->wr_rel_param = (int)n;
}

/* An eMMC's FUA writes: reliable writes, and how many a record takes. Linux's
 * mmc_block in legacy mode (EN_REL_WR clear) writes rel_wr_sec_c sectors per
 * command, re-issuing the request for the rest. */
static void io_became_relwr(const struct pc_queue *q, const char *flushes, char *buf, size_t len)
{
	unsigned rs = q->record_sectors, per;
	char size[32];

	if (rs % 2 == 0)
		snprintf(size, sizeof(size), rs % 2048 == 0 ? "%u MiB" : "%u KiB", rs % 2048 == 0 ? rs / 2048 : rs / 2);
	else
		snprintf(size, sizeof(size), "%u-byte", rs * 512);
	if (q->wr_rel_param > 0 && (q->wr_rel_param & 0x04)) {
		snprintf(buf, len, "reliable writes, one per %s record: wr_rel_param 0x%02x (EN_REL_WR)%s", size,
			 (unsigned)q->wr_rel_param, flushes);
		return;
	}
	per = (rs + (unsigned)q->rel_wr_sec_c - 1) / (unsigned)q->rel_wr_sec_c;
	snprintf(buf, len, "reliable writes, %u per %s record: rel_wr_sec_c %d%s", per, size, q->rel_wr_sec_c, flushes);
}

const char *pc_io_became(int mode, const uint64_t sums[PC_NRQ], int done, const struct pc_queue *q,
			 char *buf, size_t len)
{
	uint64_t w = sums[PC_RQ_WRITE], f = sums[PC_RQ_FUA], fl = sums[PC_RQ_FLUSH], o = sums[PC_RQ_OTHER];
	int wt = q ? q->write_through : -1, qfua = q ? q->fua : -1;
	int asks_flush = mode == PC_MODE_FLUSH || mode == PC_MODE_FUA_FLUSH || mode == PC_MODE_JOURNAL;

	if (!w && !f && !fl && !o)
		snprintf(buf, len, "nothing reached the device");
	else if (o && !w && !f)
		snprintf(buf, len, "driver commands (raw MMC)%s", fl ? " and flushes" : "");
	else if (mode == PC_MODE_FUA && f && q && q->rel_wr_sec_c > 0 && q->record_sectors)
		io_became_relwr(q, fl ? ", and flushes" : "", buf, len);
	else if (mode == PC_MODE_FUA && f)
		snprintf(buf, len, "FUA writes (native)%s", fl ? ", and flushes" : "");
	else if (mode == PC_MODE_FUA && fl)
		snprintf(buf, len, "writes + flushes: FUA emulated %s", qfua == 1 ?
			 "(although the queue says it has FUA)" : "(the queue has no FUA)");
	else if (wt == 1 && !f && !fl && (mode == PC_MODE_FUA || (asks_flush && done)))
		/* the kernel drops FUA and flushes on a queue without a cache
		 * (submit_bio_noacct()): by design, not a fault */
		snprintf(buf, len, "plain writes: %s dropped (write-through queue: no cache to flush)",
			 mode == PC_MODE_FLUSH ? "flushes" : "FUA and flushes");
	else if (mode == PC_MODE_FUA && !done)
		snprintf(buf, len, "writes; cut before any FUA write or flush was seen");
	else if (mode == PC_MODE_FUA)
		snprintf(buf, len, "plain writes: neither FUA nor a flush reached the device%s",
			 wt == 0 ? " (the queue has a write-back cache)" : "");
	else if (asks_flush && !fl)
		snprintf(buf, len, "%s", !done ? "writes; cut before the first flush" :
			 wt == 0 ? "no flush reached the device (the queue has a write-back cache)" :
			 "no flush reached the device (a write-through queue drops them)");
	else if (mode == PC_MODE_FUA_FLUSH || mode == PC_MODE_JOURNAL)
		snprintf(buf, len, "writes and flushes, %s", f ? "FUA writes native" : "FUA emulated by flushes");
	else if (mode == PC_MODE_FLUSH)
		snprintf(buf, len, "writes and flushes");
	else
		snprintf(buf, len, "%s%s%s", w ? "plain writes" : "", f ? (w ? ", FUA writes" : "FUA writes") : "",
			 fl ? ", flushes" : "");
	return buf;
}

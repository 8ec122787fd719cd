/*
 * status.c - `powercut status DIR [--json]`: whether a run holds a results
 * folder, when it last appended an event, and per board the cycle, the
 * state, the verdict counts, the last FAIL and an ETA (status.h).
 *
 * What is read, and how much:
 *   lock            results_lock_probe() (a shared flock held for an instant)
 *   campaign.json   at most 16 MB, in a buffer of its size, through the
 *                   scanner: the campaign, cycles, board names (at most 256)
 *   verdicts.jsonl  every line, through the scanner (board, cycle, verdict);
 *                   each board's last FAIL line is read again for its classes.
 *                   The file is read whole, however long (its lines are
 *                   counted, never kept: time, not memory)
 *   events.jsonl    its tail only: 8 MB, then 32, 128, 256 MB at most while
 *                   a configured board has no event in what was read. Each
 *                   line through the scanner (t, board, cycle, ev, msg.type,
 *                   power_on's and run_end's cycles, run_end's end); the
 *                   whole file is never parsed
 * A torn last line (no newline yet: a run is writing it) is never read.
 * The sizes are status_limits_default's; the buffers grow to them as lines
 * need. Every number read is bounded before it counts or sizes anything
 * (cycles by ENGINE_MAX_CYCLE and CFG_MAX_CYCLES, times by ENGINE_MAX_T, an
 * ETA by a million hours, a file's mtime by ST_TIME_MAX).
 */
#include "harness/cli/status.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"
#include "harness/campaign/config.h"
#include "harness/engine/engine.h"
#include "harness/results/jsonl.h"
#include "harness/results/results.h"
#include "harness/results/verdict.h"

const struct status_limits status_limits_default = {
	.line_max = 1u << 20,		/* a longer line is seen as its first MB */
	.chunk = 1u << 20,		/* one read */
	.tail_first = 8u << 20,		/* events.jsonl: the tail read first, */
	.tail_max = 256u << 20,		/* growing 4x to at most this */
	.campaign_max = 16u << 20,	/* campaign.json */
};

/* No ETA means anything past a million hours (and a double past INT64_MAX
 * must not be converted to an integer) */
#define ST_ETA_MAX	(3600.0 * 1e6)
#define ST_TIME_MAX	((int64_t)1 << 40)	/* epoch seconds: the year 36812 */

const char *const status_bstate_names[ST_NSTATES] = {
	"unknown", "off", "booting", "verifying", "writing", "given up", "done",
};
const char *const status_bstate_keys[ST_NSTATES] = {
	"unknown", "off", "booting", "verifying", "writing", "given_up", "done",
};

/* ---- the scanner ---- */

static const char *skip_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* Past the string that opens at p ('"'); NULL with *st 1 (the input ended
 * first) or -1 (a raw control character). */
static const char *skip_string(const char *p, const char *e, int *st)
{
	for (p++; p < e; p++) {
		if (*p == '\\') {
			if (++p >= e)
				break;
		} else if (*p == '"') {
			return p + 1;
		} else if ((unsigned char)*p < 0x20) {
			*st = -1;
			return NULL;
		}
	}
	*st = 1;
	return NULL;
}

static int is_numch(char c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Past the value at p, its type in *type; NULL with *st as skip_string().
 * Containers are skipped by counting brackets outside strings: no recursion,
 * whatever the depth. */
static const char *skip_value(const char *p, const char *e, enum status_vtype *type, int *st)
{
	static const struct { const char *lit; enum status_vtype type; } lits[] = {
		{ "true", ST_V_TRUE }, { "false", ST_V_FALSE }, { "null", ST_V_NULL },
	};
	const char *q;
	int minus, digit;

	if (p >= e) {
		*st = 1;
		return NULL;
	}
	if (*p == '"') {
		*type = ST_V_STRING;
		return skip_string(p, e, st);
	}
	if (*p == '{' || *p == '[') {
		size_t depth = 0;

		*type = *p == '{' ? ST_V_OBJECT : ST_V_ARRAY;
		for (q = p; q < e; q++) {
			if (*q == '"') {
				q = skip_string(q, e, st);
				if (!q)
					return NULL;
				q--;
			} else if (*q == '{' || *q == '[') {
				depth++;
			} else if (*q == '}' || *q == ']') {
				if (--depth > 0)
					continue;
				/* the outermost pair must match (the spans say so);
				 * brackets inside are counted, not matched */
				if (*q != (*p == '{' ? '}' : ']')) {
					*st = -1;
					return NULL;
				}
				return q + 1;
			}
		}
		*st = 1;
		return NULL;
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(lits); i++) {
		size_t l = strlen(lits[i].lit), have = (size_t)(e - p);

		if (*p != lits[i].lit[0])
			continue;
		if (memcmp(p, lits[i].lit, have < l ? have : l)) {
			*st = -1;
			return NULL;
		}
		if (have < l) {
			*st = 1;
			return NULL;
		}
		*type = lits[i].type;
		return p + l;
	}
	for (q = p; q < e && is_numch(*q); q++)
		;
	/* a number: an optional minus, then a digit (the rest is not checked:
	 * status_span_u64() reads the values used) */
	minus = *p == '-';
	digit = q - p > minus && p[minus] >= '0' && p[minus] <= '9';
	if (q == e && (digit || q - p == minus)) {
		*st = 1;	/* the number may go on (a line cut after its minus, too) */
		return NULL;
	}
	if (!digit) {
		*st = -1;
		return NULL;
	}
	*type = ST_V_NUMBER;
	return q;
}

static void set_span(struct status_span *s, enum status_vtype type, const char *v, const char *ve)
{
	s->type = type;
	if (type == ST_V_STRING) {
		s->p = v + 1;
		s->n = (size_t)(ve - v) - 2;
	} else {
		s->p = v;
		s->n = (size_t)(ve - v);
	}
}

int status_scan(const char *s, size_t n, int partial, const char *const *keys, unsigned nkeys,
		struct status_span *out)
{
	const char *p, *e = s + n;
	int st = 0;

	for (unsigned i = 0; i < nkeys; i++)
		out[i] = (struct status_span){ ST_V_ABSENT, NULL, 0 };
	p = skip_ws(s, e);
	if (p >= e)
		return partial ? 1 : -1;	/* (cut in the whitespace before it) */
	if (*p != '{')
		return -1;
	p = skip_ws(p + 1, e);
	if (p < e && *p == '}') {
		p++;
		goto end;
	}
	for (;;) {
		const char *k, *ke, *v, *ve;
		enum status_vtype type = ST_V_ABSENT;
		size_t klen;

		if (p >= e)
			goto ran_out;
		if (*p != '"')
			return -1;
		k = p + 1;
		ke = skip_string(p, e, &st);
		if (!ke)
			goto failed;
		klen = (size_t)(ke - k) - 1;
		p = skip_ws(ke, e);
		if (p >= e)
			goto ran_out;
		if (*p != ':')
			return -1;
		v = skip_ws(p + 1, e);
		ve = skip_value(v, e, &type, &st);
		if (!ve)
			goto failed;
		for (unsigned i = 0; i < nkeys; i++)
			if (strlen(keys[i]) == klen && !memcmp(keys[i], k, klen))
				set_span(&out[i], type, v, ve);
		p = skip_ws(ve, e);
		if (p >= e)
			goto ran_out;
		if (*p == '}') {
			p++;
			break;
		}
		if (*p != ',')
			return -1;
		p = skip_ws(p + 1, e);
	}
end:
	return skip_ws(p, e) == e ? 0 : -1;
failed:
	if (st < 0)
		return -1;
ran_out:
	return partial ? 1 : -1;
}

int status_array_next(const struct status_span *a, size_t *pos, struct status_span *el)
{
	const char *s = a->p, *e, *p, *ve;
	enum status_vtype type = ST_V_ABSENT;
	int st = 0;

	if (a->type != ST_V_ARRAY || a->n < 2 || s[0] != '[' || s[a->n - 1] != ']')
		return -1;
	e = s + a->n - 1;	/* the closing bracket */
	if (*pos >= a->n)
		return -1;
	p = skip_ws(s + (*pos ? *pos : 1), e);
	if (p == e)
		return 0;
	if (*pos) {
		if (*p != ',')
			return -1;
		p = skip_ws(p + 1, e);
	}
	ve = skip_value(p, e, &type, &st);
	if (!ve)
		return -1;
	set_span(el, type, p, ve);
	*pos = (size_t)(ve - s);
	return 1;
}

int status_span_u64(const struct status_span *v, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;

	if (v->type != ST_V_NUMBER || !v->n || v->n > 20)
		return -1;
	for (size_t i = 0; i < v->n; i++) {
		unsigned d = (unsigned)(v->p[i] - '0');

		/* (d > max first: max - d must not wrap) */
		if (d > 9 || d > max || x > (max - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

int status_span_str(const struct status_span *v, char *buf, size_t len)
{
	if (v->type != ST_V_STRING || v->n >= len)
		return -1;
	for (size_t i = 0; i < v->n; i++)
		if (v->p[i] < 0x20 || v->p[i] > 0x7e || v->p[i] == '\\')
			return -1;
	memcpy(buf, v->p, v->n);
	buf[v->n] = 0;
	return 0;
}

/* ---- states, times ---- */

enum status_bstate status_next_state(enum status_bstate prev, int ev, const char *rxtype, const char *end)
{
	static const char *const verifying[] = { "hello", "auth", "scan_begin", "runs", "slot", "same", "scan_end" };
	static const char *const writing[] = { "submit", "ack", "done" };

	switch (ev) {
	case PC_EV_POWER_ON:
	case PC_EV_BOOT_STAGE:
		return ST_BOOTING;
	case PC_EV_VERIFY:
		return ST_VERIFYING;
	case PC_EV_WORK:
		return ST_WRITING;
	case PC_EV_CUT:
	case PC_EV_BOOT_FAIL:
	case PC_EV_INFRA:
		return ST_OFF;
	case PC_EV_FINAL_BOOT_FAIL:
	case PC_EV_FINAL_INFRA:
		return ST_DONE;	/* the final verification is over, judged or not */
	case PC_EV_GIVE_UP:
		return ST_GIVEN_UP;
	case PC_EV_RUN_END:
		switch (pc_run_end_from_name(end)) {
		case PC_END_FINISHED:
			return ST_DONE;
		case PC_END_GIVEN_UP:
			return ST_GIVEN_UP;
		case PC_END_INTERRUPTED:
			return ST_OFF;
		default:
			return prev;
		}
	case PC_EV_RX:
		if (!rxtype)
			return prev;
		for (size_t i = 0; i < PC_ARRAY_SIZE(verifying); i++)
			if (!strcmp(rxtype, verifying[i]))
				return ST_VERIFYING;
		for (size_t i = 0; i < PC_ARRAY_SIZE(writing); i++)
			if (!strcmp(rxtype, writing[i]))
				return ST_WRITING;
		return prev;
	default:
		return prev;
	}
}

void status_hmm(double seconds, char *buf, size_t len)
{
	uint64_t m;

	if (!(seconds >= 0)) {
		snprintf(buf, len, "-");
		return;
	}
	if (seconds > ST_ETA_MAX)
		seconds = ST_ETA_MAX;
	m = (uint64_t)((seconds + 59.999) / 60.0);
	snprintf(buf, len, "%" PRIu64 ":%02u", m / 60, (unsigned)(m % 60));
}

static void local_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S %z", &tm))
		snprintf(buf, len, "%" PRId64 " (epoch seconds)", t);
}

static void utc_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%" PRId64, t);
}

/* ---- the folder ---- */

/* What the events of one board in one window of events.jsonl say. */
struct st_evs {
	int seen;
	unsigned cycle;		/* the highest cycle of its events */
	unsigned work;		/* the highest cycle with a work event */
	unsigned plan;		/* the cycles its last run_end planned (0: none) */
	unsigned run_plan;	/* the cycles the run of its last power_on plans (0: not said) */
	enum status_bstate state;
	unsigned starts;	/* power-ons of a new cycle, with their time */
	unsigned c0, c1;	/* the first and the last of them */
	int64_t t0, t1;
};

struct st_board {
	char name[64];
	/* verdicts.jsonl */
	uint64_t n[PC_NOUTCOMES];	/* (a count of lines: never past INT64_MAX) */
	unsigned last_verdict;
	unsigned fail_cycle;	/* the last FAIL's cycle, 0: none */
	off_t fail_off;		/* its line: where, how long (as read: at most line_max), cut */
	size_t fail_len;
	int fail_trunc;
	struct st_evs ev;
	/* derived */
	unsigned plan, cycle;
	enum status_bstate state;
	double cycle_ms, eta_s;	/* < 0: unknown */
	uint64_t fail_cnt[PC_NCLASSES];	/* the last FAIL's violations by class */
	char fail_what[256];		/* the same as text: "lost_acked=3 torn=1" */
	char fail_time[48];
};

struct st_ctx {
	const char *dir;
	const struct status_limits *lim;
	FILE *out;
	char path[PATH_MAX + 32];
	char campaign[64];
	unsigned cycles;
	struct st_board *b;
	unsigned nb;
	char *line;		/* a FAIL line read again (at most lim->line_max) */
	size_t line_cap;
	/* events.jsonl */
	int ev_fd;
	off_t ev_size, ev_from;
	int64_t ev_mtime;
	uint64_t ev_lines;	/* complete lines in [ev_from, ev_size) */
	struct st_evs *win;	/* the window being read */
	/* verdicts.jsonl */
	uint64_t v_lines;
	char err[1024];
};

static int fail(struct st_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct st_ctx *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->err, sizeof(x->err), fmt, ap);
	va_end(ap);
	return -1;
}

static struct st_board *board_find(struct st_ctx *x, const struct status_span *v)
{
	if (v->type != ST_V_STRING || v->n >= sizeof(x->b[0].name))
		return NULL;
	for (unsigned i = 0; i < x->nb; i++)
		if (strlen(x->b[i].name) == v->n && !memcmp(x->b[i].name, v->p, v->n))
			return &x->b[i];
	return NULL;
}

typedef int (*line_fn)(struct st_ctx *x, const char *line, size_t len, int trunc, off_t off, uint64_t lineno);

/*
 * Call fn for each whole line (one that ends in a newline before size) that
 * starts in [a, b), in order, as the one .jsonl reader hands them out
 * (harness/results/jsonl.h: UTF-8 checked); lineno counts from the first
 * such line. A line longer than lim->line_max comes as its first line_max
 * bytes, trunc set. What follows the last newline is a torn line a run is
 * still writing.
 */
static int each_line(struct st_ctx *x, int fd, off_t a, off_t b, off_t size, line_fn fn)
{
	struct jsonl j;
	struct jsonl_line l;
	int ret;

	if (jsonl_open_fd(&j, fd, x->path, a, b, size, x->lim->line_max, x->lim->chunk, 1))
		return fail(x, "out of memory");
	while ((ret = jsonl_next(&j, &l)) == 1)
		if ((ret = fn(x, l.s, l.len, l.trunc, l.off, l.lineno)))
			break;
	if (ret < 0 && ret != -1)
		ret = fail(x, "%s", j.err);
	else if (ret == -1 && !x->err[0])
		ret = fail(x, "%s", j.err);
	jsonl_close(&j);
	return ret;
}

static int open_file(struct st_ctx *x, const char *name, struct stat *st)
{
	int fd;

	snprintf(x->path, sizeof(x->path), "%s/%s", x->dir, name);
	fd = open(x->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(x, "%s: cannot open: %s%s", x->path, strerror(errno),
			    errno == ENOENT ? " (not a powercut results folder, or no run has started in it yet)" : "");
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return fail(x, "%s: not a regular file", x->path);
	}
	return fd;
}

/* campaign.json: the campaign's name, its cycles and its boards, found by
 * the scanner as in the .jsonl files. (json-c would build the whole document
 * first: 850 MB for a campaign.json of 16 MB of empty arrays.) */
static int read_campaign(struct st_ctx *x)
{
	static const char *const dkeys[] = { "config" };
	static const char *const ckeys[] = { "campaign", "cycles", "boards" };
	static const char *const bkeys[] = { "name" };
	struct status_span cfg, c[3], el, name;
	struct stat st;
	char *buf;
	size_t len = 0, cap, pos = 0;
	uint64_t cycles;
	ssize_t n;
	int fd, ret = -1, r = 0;

	fd = open_file(x, PC_FILE_CAMPAIGN, &st);
	if (fd < 0)
		return -1;
	if ((uint64_t)st.st_size > x->lim->campaign_max) {
		close(fd);
		return fail(x, "%s: %lld bytes is too large for a campaign.json", x->path, (long long)st.st_size);
	}
	/* the size it has (campaign.json is replaced whole, by a rename, never
	 * rewritten in place) */
	cap = (size_t)st.st_size;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return fail(x, "out of memory");
	}
	while (len < cap && (n = read(fd, buf + len, cap - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fail(x, "%s: cannot read: %s", x->path, strerror(errno));
			goto out;
		}
		len += (size_t)n;
	}
	if (memchr(buf, 0, len)) {
		fail(x, "%s: contains a NUL byte: not JSON", x->path);
		goto out;
	}
	if (status_scan(buf, len, 0, dkeys, 1, &cfg)) {
		fail(x, "%s: not a JSON object", x->path);
		goto out;
	}
	if (cfg.type != ST_V_OBJECT || status_scan(cfg.p, cfg.n, 0, ckeys, 3, c)) {
		fail(x, "%s: no \"config\" object", x->path);
		goto out;
	}
	if (status_span_str(&c[0], x->campaign, sizeof(x->campaign)) || !config_valid_name(x->campaign)) {
		fail(x, "%s: config.campaign is not a campaign name (1 to 63 of A-Z a-z 0-9 _ . -)", x->path);
		goto out;
	}
	if (status_span_u64(&c[1], CFG_MAX_CYCLES, &cycles) || !cycles) {
		fail(x, "%s: config.cycles is not an integer 1..%u", x->path, CFG_MAX_CYCLES);
		goto out;
	}
	x->cycles = (unsigned)cycles;
	/* count them (stopping past the most there may be), then read them */
	while (c[2].type == ST_V_ARRAY && x->nb <= CFG_MAX_BOARDS && (r = status_array_next(&c[2], &pos, &el)) == 1)
		x->nb++;
	if (c[2].type != ST_V_ARRAY || r < 0 || x->nb < 1 || x->nb > CFG_MAX_BOARDS) {
		x->nb = 0;
		fail(x, "%s: config.boards is not an array of 1 to %u boards", x->path, CFG_MAX_BOARDS);
		goto out;
	}
	x->b = calloc(x->nb, sizeof(*x->b));
	if (!x->b) {
		x->nb = 0;
		fail(x, "out of memory");
		goto out;
	}
	pos = 0;
	for (unsigned i = 0; i < x->nb; i++) {
		r = status_array_next(&c[2], &pos, &el);
		assert(r == 1);
		if (el.type != ST_V_OBJECT || status_scan(el.p, el.n, 0, bkeys, 1, &name) ||
		    status_span_str(&name, x->b[i].name, sizeof(x->b[i].name)) || !config_valid_name(x->b[i].name)) {
			fail(x, "%s: config.boards[%u].name is not a board name (1 to 63 of A-Z a-z 0-9 _ . -)",
			     x->path, i);
			goto out;
		}
		x->b[i].cycle_ms = x->b[i].eta_s = -1;
	}
	ret = 0;
out:
	free(buf);
	close(fd);
	return ret;
}

/* ---- verdicts.jsonl ---- */

static int on_verdict(struct st_ctx *x, const char *line, size_t len, int trunc, off_t off, uint64_t lineno)
{
	static const char *const keys[] = { "board", "cycle", "verdict" };
	struct status_span v[3];
	struct st_board *b;
	char name[64], outcome[32];
	uint64_t cycle;
	int k;

	if (!len)
		return 0;
	x->v_lines++;
	if (status_scan(line, len, trunc, keys, 3, v) < 0)
		return fail(x, "%s:%" PRIu64 ": not a JSON object", x->path, lineno);
	if (status_span_str(&v[0], name, sizeof(name)))
		return fail(x, "%s:%" PRIu64 ": \"board\" is not a board name", x->path, lineno);
	if (status_span_u64(&v[1], ENGINE_MAX_CYCLE, &cycle) || !cycle)
		return fail(x, "%s:%" PRIu64 ": \"cycle\" is not an integer 1..%u", x->path, lineno, ENGINE_MAX_CYCLE);
	if (status_span_str(&v[2], outcome, sizeof(outcome)) || (k = pc_outcome_from_name(outcome)) < 0)
		return fail(x, "%s:%" PRIu64 ": \"verdict\" is not one of PASS, FAIL, BOOT_FAIL, INFRA_ERROR",
			    x->path, lineno);
	b = board_find(x, &v[0]);
	if (!b)
		return 0;	/* not a board of this campaign: not shown */
	b->n[k]++;
	if (cycle > b->last_verdict)
		b->last_verdict = (unsigned)cycle;
	if (k == PC_OUT_FAIL && cycle >= b->fail_cycle) {
		b->fail_cycle = (unsigned)cycle;
		b->fail_off = off;
		b->fail_len = len;
		b->fail_trunc = trunc;
	}
	return 0;
}

/* The classes of a FAIL verdict's violations: those of its findings marked
 * "violation" (each counted, a range by its "n"), or, when the findings are
 * not there to read, its counts other than intact and not_written. */
static void fail_classes(struct st_board *b, const char *line, size_t len, int trunc)
{
	static const char *const keys[] = { "counts", "findings", "time" };
	static const char *const fkeys[] = { "class", "violation", "n" };
	struct status_span v[3], el, f[3], c[PC_NCLASSES];
	uint64_t *cnt = b->fail_cnt, n;
	size_t pos = 0, l = 0;
	int any = 0;

	memset(b->fail_cnt, 0, sizeof(b->fail_cnt));
	b->fail_what[0] = b->fail_time[0] = 0;
	if (status_scan(line, len, trunc, keys, 3, v) < 0)
		return;
	if (v[1].type == ST_V_ARRAY) {
		while (status_array_next(&v[1], &pos, &el) == 1) {
			char cls[32];
			int k;

			if (el.type != ST_V_OBJECT || status_scan(el.p, el.n, 0, fkeys, 3, f) ||
			    f[1].type != ST_V_TRUE || status_span_str(&f[0], cls, sizeof(cls)) ||
			    (k = pc_class_from_name(cls)) < 0)
				continue;
			if (status_span_u64(&f[2], UINT32_MAX, &n) || !n)
				n = 1;
			cnt[k] += n;
			any = 1;
		}
	}
	if (!any && v[0].type == ST_V_OBJECT &&
	    status_scan(v[0].p, v[0].n, 0, pc_class_names, PC_NCLASSES, c) == 0) {
		for (unsigned k = 0; k < PC_NCLASSES; k++)
			if (k != PC_CLS_INTACT && k != PC_CLS_NOT_WRITTEN && !status_span_u64(&c[k], UINT32_MAX, &n))
				cnt[k] = n;
	}
	for (unsigned k = 0; k < PC_NCLASSES && l < sizeof(b->fail_what); k++)
		if (cnt[k])
			l += (size_t)snprintf(b->fail_what + l, sizeof(b->fail_what) - l, "%s%s=%" PRIu64, l ? " " : "",
					      pc_class_names[k], cnt[k]);
	if (status_span_str(&v[2], b->fail_time, sizeof(b->fail_time)))
		b->fail_time[0] = 0;
}

static int read_verdicts(struct st_ctx *x)
{
	struct stat st;
	int fd = open_file(x, PC_FILE_VERDICTS, &st), ret;

	if (fd < 0)
		return -1;
	ret = each_line(x, fd, 0, st.st_size, st.st_size, on_verdict);
	for (unsigned i = 0; !ret && i < x->nb; i++) {
		struct st_board *b = &x->b[i];
		ssize_t got;

		if (!b->fail_cycle)
			continue;
		/* the line as it was read (at most line_max bytes) */
		if (b->fail_len > x->line_cap) {
			char *nl = realloc(x->line, b->fail_len);

			if (!nl) {
				ret = fail(x, "out of memory");
				break;
			}
			x->line = nl;
			x->line_cap = b->fail_len;
		}
		got = pread(fd, x->line, b->fail_len, b->fail_off);
		if (got <= 0)
			continue;
		fail_classes(b, x->line, (size_t)got, b->fail_trunc || (size_t)got < b->fail_len);
	}
	close(fd);
	return ret;
}

/* ---- events.jsonl ---- */

static int bad_event(struct st_ctx *x, off_t off, const char *why)
{
	return fail(x, "%s:%" PRIu64 ": %s", x->path, jsonl_line_number(x->ev_fd, off), why);
}

static int on_event(struct st_ctx *x, const char *line, size_t len, int trunc, off_t off, uint64_t lineno)
{
	static const char *const keys[] = { "t", "board", "cycle", "ev", "msg", "end", "cycles" };
	static const char *const mkeys[] = { "type" };
	struct status_span v[7], m[1];
	struct st_board *b;
	struct st_evs *e;
	char kind[32], rxtype[32] = "", end[32] = "";
	uint64_t t = 0, cycle, plan;
	int k, have_t;

	x->ev_lines++;
	if (!len)
		return 0;
	if (status_scan(line, len, trunc, keys, 7, v) < 0)
		return bad_event(x, off, "not a JSON object");
	b = board_find(x, &v[1]);
	if (!b || v[2].type == ST_V_ABSENT || v[3].type == ST_V_ABSENT)
		return 0;	/* another board's, or no board's (a refused link) */
	have_t = v[0].type != ST_V_ABSENT;
	if (have_t && status_span_u64(&v[0], ENGINE_MAX_T, &t))
		return bad_event(x, off, "\"t\" is not a time in ms (an integer 0..2^62)");
	if (status_span_u64(&v[2], ENGINE_MAX_CYCLE, &cycle))
		return bad_event(x, off, "\"cycle\" is not an integer 0..10000001");
	if (status_span_str(&v[3], kind, sizeof(kind)))
		return bad_event(x, off, "\"ev\" is not an event kind");
	k = pc_ev_from_name(kind);
	if (k == PC_EV_RX && v[4].type == ST_V_OBJECT && status_scan(v[4].p, v[4].n, 0, mkeys, 1, m) == 0 &&
	    status_span_str(&m[0], rxtype, sizeof(rxtype)))
		rxtype[0] = 0;
	if (k == PC_EV_RUN_END && status_span_str(&v[5], end, sizeof(end)))
		end[0] = 0;
	e = &x->win[b - x->b];
	e->seen = 1;
	if (cycle > e->cycle)
		e->cycle = (unsigned)cycle;
	if (k == PC_EV_WORK && cycle > e->work)
		e->work = (unsigned)cycle;
	if (k == PC_EV_RUN_END && !status_span_u64(&v[6], CFG_MAX_CYCLES, &plan))
		e->plan = (unsigned)plan;
	if (k == PC_EV_POWER_ON && !status_span_u64(&v[6], CFG_MAX_CYCLES, &plan))
		e->run_plan = (unsigned)plan;
	e->state = status_next_state(e->state, k, rxtype[0] ? rxtype : NULL, end[0] ? end : NULL);
	if (k == PC_EV_POWER_ON && have_t && (!e->starts || cycle != e->c1)) {
		if (!e->starts++) {
			e->c0 = (unsigned)cycle;
			e->t0 = (int64_t)t;
		}
		e->c1 = (unsigned)cycle;
		e->t1 = (int64_t)t;
	}
	return 0;
}

static int unseen(const struct st_ctx *x)
{
	for (unsigned i = 0; i < x->nb; i++)
		if (!x->b[i].ev.seen)
			return 1;
	return 0;
}

static int read_events(struct st_ctx *x)
{
	struct stat st;
	off_t from;
	int ret;

	x->ev_fd = open_file(x, PC_FILE_EVENTS, &st);
	if (x->ev_fd < 0)
		return -1;
	x->ev_size = st.st_size;
	/* (any time a file may be given: now minus it must not overflow) */
	x->ev_mtime = st.st_mtim.tv_sec < 0 ? 0 : st.st_mtim.tv_sec > ST_TIME_MAX ? ST_TIME_MAX : st.st_mtim.tv_sec;
	from = (uint64_t)x->ev_size > x->lim->tail_first ? x->ev_size - (off_t)x->lim->tail_first : 0;
	x->win = calloc(x->nb, sizeof(*x->win));
	if (!x->win)
		return fail(x, "out of memory");
	ret = each_line(x, x->ev_fd, from, x->ev_size, x->ev_size, on_event);
	for (unsigned i = 0; i < x->nb; i++)
		x->b[i].ev = x->win[i];
	/* a board whose last event is older than the tail: read further back,
	 * and take what the older part says of it (only of it) */
	while (!ret && from > 0 && unseen(x) && (uint64_t)(x->ev_size - from) < x->lim->tail_max) {
		off_t span = (x->ev_size - from) * 4, nfrom;

		if ((uint64_t)span > x->lim->tail_max)
			span = (off_t)x->lim->tail_max;
		nfrom = x->ev_size - span > 0 ? x->ev_size - span : 0;
		memset(x->win, 0, x->nb * sizeof(*x->win));
		ret = each_line(x, x->ev_fd, nfrom, from, x->ev_size, on_event);
		for (unsigned i = 0; i < x->nb; i++)
			if (!x->b[i].ev.seen && x->win[i].seen)
				x->b[i].ev = x->win[i];
		from = nfrom;
	}
	x->ev_from = from;
	return ret;
}

/* ---- what it all says ---- */

enum st_run { RUN_RUNNING, RUN_KILLED, RUN_STOPPED, RUN_FINISHED, RUN_NOT_RUNNING, RUN_UNKNOWN };
static const char *const run_keys[] = { "running", "killed", "stopped", "finished", "not_running", "unknown" };

static void derive(struct st_ctx *x, int running)
{
	for (unsigned i = 0; i < x->nb; i++) {
		struct st_board *b = &x->b[i];
		struct st_evs *e = &b->ev;
		unsigned plan = x->cycles, left;

		/* the plan: the one the last power-on's run said (--cycles), else
		 * the configuration's or the last run_end's (older runs said it only
		 * when they ended), grown by what was worked on or judged since */
		if (e->run_plan)
			plan = e->run_plan;
		else if (e->plan > plan)
			plan = e->plan;
		if (e->work > plan)
			plan = e->work;
		if (b->last_verdict > plan)
			plan = b->last_verdict;
		b->plan = plan;
		b->cycle = e->seen ? e->cycle : b->last_verdict + (b->last_verdict < plan);
		b->state = e->seen ? e->state : x->ev_from == 0 ? ST_OFF : ST_UNKNOWN;
		/* every cycle judged, and past the last one: its final verification is done */
		if (b->state != ST_GIVEN_UP && b->last_verdict >= plan && (b->cycle > plan || !e->seen))
			b->state = ST_DONE;
		if (b->state == ST_DONE)
			b->cycle = plan;
		else if (b->cycle > plan)
			b->cycle = plan;	/* the final verification of the last cycle */
		if (e->starts >= 2 && e->c1 > e->c0 && e->t1 >= e->t0)
			b->cycle_ms = (double)(e->t1 - e->t0) / (double)(e->c1 - e->c0);
		left = plan - (b->cycle ? b->cycle : 1) + 1;
		if (b->state == ST_DONE)
			b->eta_s = 0;
		else if (running && b->state != ST_GIVEN_UP && b->cycle_ms >= 0)
			b->eta_s = b->cycle_ms * left / 1000.0 > ST_ETA_MAX ? ST_ETA_MAX : b->cycle_ms * left / 1000.0;
	}
}

static int all_done(const struct st_ctx *x)
{
	for (unsigned i = 0; i < x->nb; i++)
		if (x->b[i].state != ST_DONE && x->b[i].state != ST_GIVEN_UP)
			return 0;
	return 1;
}

/* Is the run the lock names alive? 1, 0 (gone), -1 (cannot tell: another host). */
static int pid_alive(const struct results_lock_info *li)
{
	char host[256] = "";

	if (!li->known || gethostname(host, sizeof(host) - 1) || strcmp(host, li->host))
		return -1;
	return kill((pid_t)li->pid, 0) == 0 || errno == EPERM;
}

static enum st_run run_state(const struct st_ctx *x, const struct results_lock_info *li, int alive)
{
	switch (li->state) {
	case RESULTS_LOCK_HELD:
		return alive == 0 ? RUN_KILLED : RUN_RUNNING;
	case RESULTS_LOCK_FREE:
		if (li->known && !li->ended)
			return RUN_KILLED;
		if (all_done(x))
			return RUN_FINISHED;
		return li->known ? RUN_STOPPED : RUN_NOT_RUNNING;
	case RESULTS_LOCK_NONE:
		return all_done(x) ? RUN_FINISHED : RUN_NOT_RUNNING;
	default:
		return RUN_UNKNOWN;
	}
}

static void eta_text(const struct st_board *b, char *buf, size_t len)
{
	if (b->state == ST_DONE)
		snprintf(buf, len, "done");
	else
		status_hmm(b->eta_s, buf, len);
}


static void print_text(struct st_ctx *x, const struct results_lock_info *li, enum st_run run, int alive)
{
	char t0[64], t1[64], eta[32];
	int64_t now = (int64_t)time(NULL), age = now - x->ev_mtime;
	int w = 0;

	local_time(li->started, t0, sizeof(t0));
	local_time(li->ended, t1, sizeof(t1));
	fprintf(x->out, "campaign %s: ", x->campaign);
	switch (run) {
	case RUN_RUNNING:
		if (li->known)
			fprintf(x->out, "running (pid %ld on %s since %s)\n", li->pid, li->host, t0);
		else
			fprintf(x->out, "running (a process holds the lock; its lock file names no pid)\n");
		break;
	case RUN_KILLED:
		if (alive == 0 && li->state == RESULTS_LOCK_HELD)
			fprintf(x->out, "not running: the last run was killed (pid %ld on %s, started %s, is gone; a process it "
			       "started still holds the lock)\n", li->pid, li->host, t0);
		else
			fprintf(x->out, "not running: the last run was killed (pid %ld on %s, started %s: it never closed the "
			       "folder); the same powercut run command resumes it\n", li->pid, li->host, t0);
		break;
	case RUN_STOPPED:
		fprintf(x->out, "not running: the last run (pid %ld on %s) stopped with cycles left (ended %s); the same "
		       "powercut run command resumes it\n", li->pid, li->host, t1);
		break;
	case RUN_FINISHED:
		if (li->known && li->ended)
			fprintf(x->out, "finished: every board ran its cycles (the last run ended %s)\n", t1);
		else
			fprintf(x->out, "finished: every board ran its cycles\n");
		break;
	case RUN_NOT_RUNNING:
		fprintf(x->out, "not running\n");
		break;
	default:
		fprintf(x->out, "unknown whether a run holds the folder: %s\n", li->err);
		break;
	}
	if (x->ev_size) {
		local_time(x->ev_mtime, t0, sizeof(t0));
		fprintf(x->out, "last event appended %s (%" PRId64 " s ago); %s%" PRIu64 " events, %" PRIu64 " verdicts\n", t0,
		       age > 0 ? age : 0, x->ev_from ? "about " : "",
		       x->ev_from ? (uint64_t)((double)x->ev_lines * (double)x->ev_size / (double)(x->ev_size - x->ev_from))
				  : x->ev_lines,
		       x->v_lines);
	} else {
		fprintf(x->out, "no event yet; 0 events, %" PRIu64 " verdicts\n", x->v_lines);
	}
	for (unsigned i = 0; i < x->nb; i++) {
		int l = (int)strlen(x->b[i].name);
		w = l > w ? l : w;
	}
	for (unsigned i = 0; i < x->nb; i++) {
		struct st_board *b = &x->b[i];

		eta_text(b, eta, sizeof(eta));
		fprintf(x->out, "  %s:%*s cycle %u of %u, %s%s; ", b->name, w - (int)strlen(b->name), "", b->cycle, b->plan,
		       status_bstate_names[b->state],
		       run != RUN_RUNNING && b->state >= ST_BOOTING && b->state <= ST_WRITING ? " when the run stopped" : "");
		for (unsigned k = 0; k < PC_NOUTCOMES; k++)
			fprintf(x->out, "%s%s %" PRIu64, k ? ", " : "", pc_outcome_names[k], b->n[k]);
		fprintf(x->out, "; ETA %s", eta);
		if (b->cycle_ms >= 0 && b->state != ST_DONE)
			fprintf(x->out, " (%.1f s a cycle)", b->cycle_ms / 1000.0);
		fprintf(x->out, "\n");
		if (b->fail_cycle)
			fprintf(x->out, "  %*s  last FAIL: cycle %u (%s)%s%s\n", w, "", b->fail_cycle,
			       b->fail_what[0] ? b->fail_what : "no violation class recorded",
			       b->fail_time[0] ? ", at " : "", b->fail_time);
	}
}

static json_object *jstr_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static void print_json(struct st_ctx *x, const struct results_lock_info *li, enum st_run run, int alive)
{
	static const char *const lock_keys[] = { "none", "held", "free", "unknown" };
	json_object *doc = json_object_new_object(), *lock = json_object_new_object(), *boards = json_object_new_array();
	char desc[768], buf[64];

	results_lock_describe(li, desc, sizeof(desc));
	json_object_object_add(doc, "dir", json_object_new_string(x->dir));
	json_object_object_add(doc, "campaign", json_object_new_string(x->campaign));
	json_object_object_add(doc, "run", json_object_new_string(run_keys[run]));
	json_object_object_add(doc, "running", json_object_new_boolean(run == RUN_RUNNING));
	json_object_object_add(lock, "state", json_object_new_string(lock_keys[li->state]));
	json_object_object_add(lock, "pid", li->known ? json_object_new_int64(li->pid) : NULL);
	json_object_object_add(lock, "host", jstr_or_null(li->known ? li->host : NULL));
	json_object_object_add(lock, "started", li->known ? json_object_new_int64(li->started) : NULL);
	json_object_object_add(lock, "ended", li->known && li->ended ? json_object_new_int64(li->ended) : NULL);
	json_object_object_add(lock, "pid_alive", alive < 0 ? NULL : json_object_new_boolean(alive));
	json_object_object_add(lock, "text", json_object_new_string(desc));
	json_object_object_add(doc, "lock", lock);
	if (x->ev_size) {
		json_object *le = json_object_new_object();
		int64_t age = (int64_t)time(NULL) - x->ev_mtime;

		utc_time(x->ev_mtime, buf, sizeof(buf));
		json_object_object_add(le, "time", json_object_new_string(buf));
		json_object_object_add(le, "epoch", json_object_new_int64(x->ev_mtime));
		json_object_object_add(le, "age_s", json_object_new_int64(age > 0 ? age : 0));
		json_object_object_add(doc, "last_event", le);
	} else {
		json_object_object_add(doc, "last_event", NULL);
	}
	json_object_object_add(doc, "events", json_object_new_int64(x->ev_from ?
		(int64_t)((double)x->ev_lines * (double)x->ev_size / (double)(x->ev_size - x->ev_from)) :
		(int64_t)x->ev_lines));
	json_object_object_add(doc, "events_exact", json_object_new_boolean(x->ev_from == 0));
	json_object_object_add(doc, "events_bytes", json_object_new_int64(x->ev_size));
	json_object_object_add(doc, "verdicts", json_object_new_int64((int64_t)x->v_lines));
	for (unsigned i = 0; i < x->nb; i++) {
		struct st_board *b = &x->b[i];
		json_object *o = json_object_new_object(), *cnt = json_object_new_object();

		json_object_object_add(o, "board", json_object_new_string(b->name));
		json_object_object_add(o, "cycle", json_object_new_int64(b->cycle));
		json_object_object_add(o, "cycles", json_object_new_int64(b->plan));
		json_object_object_add(o, "state", json_object_new_string(status_bstate_keys[b->state]));
		for (unsigned k = 0; k < PC_NOUTCOMES; k++)
			json_object_object_add(cnt, pc_outcome_names[k], json_object_new_int64((int64_t)b->n[k]));
		json_object_object_add(o, "counts", cnt);
		if (b->fail_cycle) {
			json_object *lf = json_object_new_object(), *cls = json_object_new_object();

			json_object_object_add(lf, "cycle", json_object_new_int64(b->fail_cycle));
			for (unsigned k = 0; k < PC_NCLASSES; k++)
				if (b->fail_cnt[k])
					json_object_object_add(cls, pc_class_names[k], json_object_new_int64(
						b->fail_cnt[k] > INT64_MAX ? INT64_MAX : (int64_t)b->fail_cnt[k]));
			json_object_object_add(lf, "classes", cls);
			json_object_object_add(lf, "time", jstr_or_null(b->fail_time[0] ? b->fail_time : NULL));
			json_object_object_add(o, "last_fail", lf);
		} else {
			json_object_object_add(o, "last_fail", NULL);
		}
		json_object_object_add(o, "cycle_ms", b->cycle_ms >= 0 ? json_object_new_int64((int64_t)(b->cycle_ms + 0.5)) : NULL);
		json_object_object_add(o, "eta_s", b->eta_s >= 0 ? json_object_new_int64((int64_t)(b->eta_s + 0.5)) : NULL);
		eta_text(b, buf, sizeof(buf));
		json_object_object_add(o, "eta", json_object_new_string(buf));
		json_object_array_add(boards, o);
	}
	json_object_object_add(doc, "boards", boards);
	fprintf(x->out, "%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
}

static const char status_usage[] =
	"usage: powercut status [--json] RESULTS_DIR\n"
	"  whether a run holds the folder, when it last appended an event, and per board\n"
	"  the cycle, the state, the verdict counts, the last FAIL and an ETA; works while\n"
	"  the campaign runs. --json: the same as one JSON document (powercut(1))\n";

int status_run(const char *dir, int json, const struct status_limits *lim, FILE *out, char *err, size_t errlen)
{
	struct st_ctx x = { .dir = dir, .lim = lim ? lim : &status_limits_default, .out = out, .ev_fd = -1 };
	struct results_lock_info li;
	char desc[768];
	int ret = 1, alive;
	enum st_run run;

	assert(x.lim->line_max >= 1 && x.lim->chunk >= 1 && x.lim->tail_first >= 1 &&
	       x.lim->tail_max >= x.lim->tail_first && x.lim->campaign_max >= 1);
	err[0] = 0;
	/* first, so that a folder too damaged to read still says whether a run is at it */
	results_lock_probe(x.dir, &li);
	alive = li.state == RESULTS_LOCK_HELD ? pid_alive(&li) : -1;
	if (!json) {
		if (alive == 0)
			fprintf(out, "%s: not running: the lock is held, but the run it names (pid %ld on %s) is gone\n",
				x.dir, li.pid, li.host);
		else {
			results_lock_describe(&li, desc, sizeof(desc));
			fprintf(out, "%s: %s\n", x.dir, desc);
		}
		fflush(out);
	}
	if (read_campaign(&x) || read_verdicts(&x) || read_events(&x))
		goto out;
	run = run_state(&x, &li, alive);
	derive(&x, run == RUN_RUNNING);
	/* derive() knows the boards' states: a run that ended finished only if they are done */
	run = run_state(&x, &li, alive);
	if (json)
		print_json(&x, &li, run, alive);
	else
		print_text(&x, &li, run, alive);
	ret = 0;
out:
	if (ret)
		pc_strlcpy(err, x.err, errlen);
	if (x.ev_fd >= 0)
		close(x.ev_fd);
	free(x.win);
	free(x.b);
	free(x.line);
	return ret;
}

int status_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[1024];
	int c, json = 0, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jh", lo, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'h': fputs(status_usage, stdout); return 0;
		default: fputs(status_usage, stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		pc_err("status takes one results folder");
		fputs(status_usage, stderr);
		return 2;
	}
	ret = status_run(argv[optind], json, NULL, stdout, err, sizeof(err));
	fflush(stdout);
	if (ret)
		pc_err("%s", err);
	return ret;
}

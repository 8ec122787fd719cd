/*
 * status_read.c - what status reads of a results folder (status.c says how
 * much): campaign.json through the scanner, verdicts.jsonl whole and the
 * tail of events.jsonl line by line through the one .jsonl reader
 * (harness/results/jsonl.h), each line through the scanner.
 */
#include "harness/cli/status_read.h"
#include "harness/cli/status_limits.h"
#include "harness/cli/status_model.h"
#include "harness/cli/status_scan.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#include "common/record.h"
#include "harness/campaign/config_limits.h"
#include "harness/engine/engine.h"
#include "harness/results/jsonl.h"
#include "harness/results/limits.h"
#include "harness/results/verdict.h"

#define ST_TIME_MAX	((int64_t)1 << 40)	/* epoch seconds: the year 36812 */

/* ---- the folder ---- */

/* rc (a -errno) with x->err filled in */
static int fail(struct st_ctx *x, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(struct st_ctx *x, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->err, sizeof(x->err), fmt, ap);
	va_end(ap);
	return rc;
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

/* A number value (a plain JSON number, at most 40 characters): 0, or -EINVAL. */
static int span_double(const struct status_span *v, double *out)
{
	char buf[48], *end;

	if (v->type != ST_V_NUMBER || !v->n || v->n > 40)
		return -EINVAL;
	memcpy(buf, v->p, v->n);
	buf[v->n] = 0;
	errno = 0;
	*out = strtod(buf, &end);
	return *end || errno ? -EINVAL : 0;
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
	int ret, by_fn = 0;

	ret = jsonl_open_fd(&j, fd, x->path, a, b, size, x->lim->line_max, x->lim->chunk, 1);
	if (ret)
		return fail(x, ret, "out of memory");
	while ((ret = jsonl_next(&j, &l)) == 1)
		if ((ret = fn(x, l.s, l.len, l.trunc, l.off, l.lineno))) {
			by_fn = 1;
			break;
		}
	/* the reader's error, or a line's that said nothing (fn says its own) */
	if (ret < 0 && (!by_fn || !x->err[0]))
		ret = fail(x, ret, "%s", j.err);
	jsonl_close(&j);
	return ret;
}

static int open_file(struct st_ctx *x, const char *name, struct stat *st)
{
	int fd, e;

	snprintf(x->path, sizeof(x->path), "%s/%s", x->dir, name);
	fd = open(x->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		return fail(x, -e, "%s: cannot open: %s%s", x->path, strerror(e),
			    e == ENOENT ? " (not a powercut results folder, or no run has started in it yet)" : "");
	}
	e = fstat(fd, st) < 0 ? -errno : !S_ISREG(st->st_mode) ? -EINVAL : 0;
	if (e) {
		close(fd);
		return fail(x, e, "%s: not a regular file", x->path);
	}
	return fd;
}

/* campaign.json: the campaign's name, its cycles and its boards, found by
 * the scanner as in the .jsonl files. (json-c would build the whole document
 * first: 850 MB for a campaign.json of 16 MB of empty arrays.) */
/* campaign.json whole into *buf (NUL-free, up to the limit): 0, or -errno with x->err */
static int campaign_load(struct st_ctx *x, char **buf, size_t *lenp)
{
	struct stat st;
	size_t len = 0, cap;
	ssize_t n;
	int fd;

	fd = open_file(x, PC_FILE_CAMPAIGN, &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > x->lim->campaign_max) {
		close(fd);
		return fail(x, -EFBIG, "%s: %lld bytes is too large for a " PC_FILE_CAMPAIGN, x->path, (long long)st.st_size);
	}
	/* the size it has (campaign.json is replaced whole, by a rename, never
	 * rewritten in place) */
	cap = (size_t)st.st_size;
	*buf = malloc(cap + 1);
	if (!*buf) {
		close(fd);
		return fail(x, -ENOMEM, "out of memory");
	}
	while (len < cap && (n = read(fd, *buf + len, cap - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			return fail(x, -e, "%s: cannot read: %s", x->path, strerror(e));
		}
		len += (size_t)n;
	}
	close(fd);
	if (memchr(*buf, 0, len))
		return fail(x, -EINVAL, "%s: contains a NUL byte: not JSON", x->path);
	*lenp = len;
	return 0;
}

/* config.campaign, .cycles, .results_min_free and .target (c: their spans) */
static int campaign_config(struct st_ctx *x, const struct status_span *c)
{
	static const char *const tkeys[] = { "rate", "confidence" };
	struct status_span t[2];
	uint64_t cycles;

	if (status_span_str(&c[0], x->campaign, sizeof(x->campaign)) || !config_valid_name(x->campaign))
		return fail(x, -EINVAL, "%s: config.campaign is not a campaign name (1 to 63 of A-Z a-z 0-9 _ . -)", x->path);
	if (status_span_u64(&c[1], CFG_MAX_CYCLES, &cycles) || !cycles)
		return fail(x, -EINVAL, "%s: config.cycles is not an integer 1..%u", x->path, CFG_MAX_CYCLES);
	x->cycles = (unsigned)cycles;
	/* the target and the floor, as the run checked them (absent: none, the default) */
	x->min_free = CFG_DEFAULT_MIN_FREE;
	if (c[4].type != ST_V_ABSENT && status_span_u64(&c[4], CFG_MAX_MIN_FREE, &x->min_free))
		return fail(x, -EINVAL, "%s: config.results_min_free is not a byte count 0..%llu", x->path,
			    (unsigned long long)CFG_MAX_MIN_FREE);
	if (c[3].type != ST_V_ABSENT) {
		if (c[3].type != ST_V_OBJECT || status_scan(c[3].p, c[3].n, 0, tkeys, 2, t) ||
		    span_double(&t[0], &x->target_rate) || !(x->target_rate >= CFG_TARGET_RATE_MIN && x->target_rate < 1) ||
		    span_double(&t[1], &x->target_conf) ||
		    !(x->target_conf >= CFG_TARGET_CONF_MIN && x->target_conf <= CFG_TARGET_CONF_MAX)) {
			x->target_rate = 0;
			return fail(x, -EINVAL, "%s: config.target is not {\"rate\": %g..1, \"confidence\": %g..%g}", x->path,
				    CFG_TARGET_RATE_MIN, CFG_TARGET_CONF_MIN, CFG_TARGET_CONF_MAX);
		}
	}
	return 0;
}

/* config.boards[i]: its name, and the modes the target must be shown for
 * (one not known here: ignored) */
static int campaign_board(struct st_ctx *x, unsigned i, const struct status_span *el)
{
	static const char *const bkeys[] = { "name", "modes" };
	struct status_span name[2], m;
	size_t mpos = 0;
	char mode[16];
	int mi;

	if (el->type != ST_V_OBJECT || status_scan(el->p, el->n, 0, bkeys, 2, name) ||
	    status_span_str(&name[0], x->b[i].name, sizeof(x->b[i].name)) || !config_valid_name(x->b[i].name))
		return fail(x, -EINVAL, "%s: config.boards[%u].name is not a board name (1 to 63 of A-Z a-z 0-9 _ . -)",
			    x->path, i);
	if (name[1].type == ST_V_ARRAY)
		while (status_array_next(&name[1], &mpos, &m) == 1)
			if (!status_span_str(&m, mode, sizeof(mode)) && (mi = pc_mode_from_name(mode)) > 0 &&
			    mi < PC_MODE_MAX)
				x->b[i].mode_on[mi] = 1;
	x->b[i].cycle_ms = x->b[i].eta_s = -1;
	return 0;
}

/* config.boards: counted (stopping past the most there may be), then read */
static int campaign_boards(struct st_ctx *x, const struct status_span *boards)
{
	struct status_span el;
	size_t pos = 0;
	int r = 0;

	while (boards->type == ST_V_ARRAY && x->nb <= CFG_MAX_BOARDS && (r = status_array_next(boards, &pos, &el)) == 1)
		x->nb++;
	if (boards->type != ST_V_ARRAY || r < 0 || x->nb < 1 || x->nb > CFG_MAX_BOARDS) {
		x->nb = 0;
		return fail(x, -EINVAL, "%s: config.boards is not an array of 1 to %u boards", x->path, CFG_MAX_BOARDS);
	}
	x->b = calloc(x->nb, sizeof(*x->b));
	if (!x->b) {
		x->nb = 0;
		return fail(x, -ENOMEM, "out of memory");
	}
	pos = 0;
	for (unsigned i = 0; i < x->nb; i++) {
		r = status_array_next(boards, &pos, &el);
		assert(r == 1);
		r = campaign_board(x, i, &el);
		if (r)
			return r;
	}
	return 0;
}

int status_read_campaign(struct st_ctx *x)
{
	static const char *const dkeys[] = { "config" };
	static const char *const ckeys[] = { "campaign", "cycles", "boards", "target", "results_min_free" };
	struct status_span cfg, c[5];
	char *buf = NULL;
	size_t len = 0;
	int ret;

	ret = campaign_load(x, &buf, &len);
	if (ret)
		goto out;
	if (status_scan(buf, len, 0, dkeys, 1, &cfg)) {
		ret = fail(x, -EINVAL, "%s: not a JSON object", x->path);
		goto out;
	}
	if (cfg.type != ST_V_OBJECT || status_scan(cfg.p, cfg.n, 0, ckeys, 5, c)) {
		ret = fail(x, -EINVAL, "%s: no \"config\" object", x->path);
		goto out;
	}
	ret = campaign_config(x, c);
	if (!ret)
		ret = campaign_boards(x, &c[2]);
out:
	free(buf);
	return ret;
}

/* ---- verdicts.jsonl ---- */

static int on_verdict(struct st_ctx *x, const char *line, size_t len, int trunc, off_t off, uint64_t lineno)
{
	static const char *const keys[] = { "board", "cycle", "verdict", "mode", "counts" };
	static const char *const ckeys[] = { "not_written", "torn", "torn_sector" };
	struct status_span v[5], cn[3];
	struct st_board *b;
	char name[64], outcome[32], mode[16];
	uint64_t cycle, c3[3] = { 0, 0, 0 };
	int k, m;

	if (!len)
		return 0;
	x->v_lines++;
	if (status_scan(line, len, trunc, keys, 5, v) < 0)
		return fail(x, -EINVAL, "%s:%" PRIu64 ": not a JSON object", x->path, lineno);
	if (status_span_str(&v[0], name, sizeof(name)))
		return fail(x, -EINVAL, "%s:%" PRIu64 ": \"board\" is not a board name", x->path, lineno);
	if (status_span_u64(&v[1], ENGINE_MAX_CYCLE, &cycle) || !cycle)
		return fail(x, -EINVAL, "%s:%" PRIu64 ": \"cycle\" is not an integer 1..%u", x->path, lineno, ENGINE_MAX_CYCLE);
	if (status_span_str(&v[2], outcome, sizeof(outcome)) || (k = pc_outcome_from_name(outcome)) < 0)
		return fail(x, -EINVAL, "%s:%" PRIu64 ": \"verdict\" is not one of PASS, FAIL, BOOT_FAIL, INFRA_ERROR",
			    x->path, lineno);
	b = board_find(x, &v[0]);
	if (!b)
		return 0;	/* not a board of this campaign: not shown */
	b->n[k]++;
	/* towards the target: the cuts that count, per mode (pc_cut_counts) */
	if (!status_span_str(&v[3], mode, sizeof(mode)) && (m = pc_mode_from_name(mode)) > 0 && m < PC_MODE_MAX) {
		if (v[4].type == ST_V_OBJECT && status_scan(v[4].p, v[4].n, 0, ckeys, 3, cn) == 0)
			for (unsigned i = 0; i < 3; i++)
				if (status_span_u64(&cn[i], UINT32_MAX, &c3[i]))
					c3[i] = 0;
		if (pc_cut_counts(k, c3[0], c3[1], c3[2])) {
			b->cuts[m]++;
			b->fails[m] += k == PC_OUT_FAIL;
		}
	}
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

int status_read_verdicts(struct st_ctx *x)
{
	struct stat st;
	int fd = open_file(x, PC_FILE_VERDICTS, &st), ret;

	if (fd < 0)
		return fd;
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
				ret = fail(x, -ENOMEM, "out of memory");
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
	return fail(x, -EINVAL, "%s:%" PRIu64 ": %s", x->path, jsonl_line_number(x->ev_fd, off), why);
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
	if (x->rate_window && v[0].type != ST_V_ABSENT && !status_span_u64(&v[0], ENGINE_MAX_T, &t)) {
		/* the campaign's clock (ms; it runs on from run to run, pauses
		 * left out) at the first and the last line of the tail: how fast
		 * the file grows while a run writes it */
		if (!x->rate_t_set) {
			x->rate_off = off;
			x->rate_t0 = (int64_t)t;
			x->rate_t_set = 1;
		}
		x->rate_t1 = (int64_t)t;
	}
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
	if (k == PC_EV_RUN_END)
		e->end = pc_run_end_from_name(end) + 1;
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

int status_read_events(struct st_ctx *x)
{
	struct stat st;
	off_t from;
	int64_t mtime;
	int ret;

	ret = open_file(x, PC_FILE_EVENTS, &st);
	if (ret < 0)
		return ret;
	x->ev_fd = ret;
	x->ev_size = st.st_size;
	/* (any time a file may be given: now minus it must not overflow; in
	 * 64 bits: a 32-bit time_t, armhf's, is never above ST_TIME_MAX and
	 * the comparison would be a -Wtype-limits error) */
	mtime = st.st_mtim.tv_sec;
	x->ev_mtime = mtime < 0 ? 0 : mtime > ST_TIME_MAX ? ST_TIME_MAX : mtime;
	from = (uint64_t)x->ev_size > x->lim->tail_first ? x->ev_size - (off_t)x->lim->tail_first : 0;
	x->win = calloc(x->nb, sizeof(*x->win));
	if (!x->win)
		return fail(x, -ENOMEM, "out of memory");
	x->rate_window = 1;
	ret = each_line(x, x->ev_fd, from, x->ev_size, x->ev_size, on_event);
	x->rate_window = 0;
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


/*
 * fuzz_status.c - a crafted results folder through `powercut status`, and
 * every line of it through status's own JSON scanner.
 *
 * The input is an events.jsonl, optionally followed by sections, each
 * opened by a line of its own and in this order:
 *
 *   --- verdicts ---   verdicts.jsonl (without it: an empty file)
 *   --- campaign ---   campaign.json (without it: one whose config names the
 *                      boards of the seed campaigns, tests/fuzz/corpus/status/)
 *   --- lock ---       the folder's lock file (without it: none); @PID@ and
 *                      @HOST@ in it become this process's pid and host name
 *   --- lock held ---  the same, and the target holds the lock while status
 *                      reads: a live run's folder, as `status` sees it
 *
 * A first line "#small" reads the folder with small limits (lines of 193
 * bytes, reads of 61, a tail of 512 bytes growing 4x to at most 5000) instead of
 * status_limits_default, so that a few KB reach the long-line and
 * growing-tail paths that need megabytes otherwise.
 *
 * The files go into a results folder (on tmpfs: /dev/shm, else $TMPDIR), and
 * status_run() reads it as `powercut status DIR` and `powercut status --json
 * DIR` do, printing into memory. Checked beyond no crash, leak or read out of
 * bounds: both forms succeed or fail alike; a failure says why, naming the
 * file; the JSON form parses, with every board's cycle within its plan, its
 * counts within the verdicts read, a last FAIL within the plan, no negative
 * time or ETA, a known state, and "finished" only when every board is done or
 * given up.
 *
 * Then each line of the three files goes through the scanner directly:
 * status_scan() whole and cut (partial) at a point the line picks, the
 * spans it returns (inside the line, of their type, the same in the cut
 * scan for each member that ended before the cut), status_array_next() on
 * every array, status_span_u64() against strtoull() for several maxima and
 * status_span_str().
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"
#include "harness/cli/status.h"
#include "harness/cli/status_scan.h"
#include "harness/results/verdict.h"
#include "tests/fuzz/fuzz.h"

#define FUZZ_MAX_INPUT	(256u << 10)
#define SMALL		"#small\n"

static char dir[PATH_MAX];
static const char *const names[] = { "events.jsonl", "verdicts.jsonl", "campaign.json", "lock" };
static const char *const seps[] = { NULL, "--- verdicts ---\n", "--- campaign ---\n", "--- lock ---\n",
				    "--- lock held ---\n" };
static const char default_campaign[] =
	"{\"format\":\"2.0\",\"campaign\":\"fuzz-seeds\",\"config\":{\"campaign\":\"fuzz-seeds\",\"cycles\":4,"
	"\"boards\":[{\"name\":\"tear\"},{\"name\":\"mis\"},{\"name\":\"pp\"},{\"name\":\"honest-1\"},"
	"{\"name\":\"lying-1\"},{\"name\":\"cfl\"},{\"name\":\"cfu\"}]}}\n";
static const struct status_limits small_limits = {
	.line_max = 193, .chunk = 61, .tail_first = 512, .tail_max = 5000, .campaign_max = 16u << 20,
};

static void cleanup(void)
{
	char p[PATH_MAX + 32];

	if (!dir[0])
		return;
	for (size_t i = 0; i < PC_ARRAY_SIZE(names); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
	dir[0] = 0;
}

static void put_file(const char *name, const void *data, size_t len)
{
	char p[PATH_MAX + 32];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (!data) {
		FUZZ_CHECK(unlink(p) == 0 || errno == ENOENT, "%s: %s", p, strerror(errno));
		return;
	}
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	FUZZ_CHECK(fd >= 0, "%s: %s", p, strerror(errno));
	FUZZ_CHECK(pc_write_all(fd, data, len) == 0, "%s: cannot write", p);
	close(fd);
}

/* The lock file: @PID@ and @HOST@ become this process's pid and this
 * host's name, so that a held lock can name a live run (status tells a live
 * one by kill(pid, 0) on the host the lock names). */
static void put_lock(const char *data, size_t len)
{
	char host[256] = "", pid[24], *buf, *o;
	size_t hl, pl;

	if (!data) {
		put_file(names[3], NULL, 0);
		return;
	}
	gethostname(host, sizeof(host) - 1);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	hl = strlen(host);
	pl = strlen(pid);
	/* each 6-byte token becomes at most 255 bytes */
	buf = o = malloc(len * 43 + 1);
	FUZZ_CHECK(buf != NULL, "out of memory");
	for (size_t i = 0; i < len;) {
		if (len - i >= 6 && !memcmp(data + i, "@HOST@", 6)) {
			memcpy(o, host, hl);
			o += hl;
			i += 6;
		} else if (len - i >= 5 && !memcmp(data + i, "@PID@", 5)) {
			memcpy(o, pid, pl);
			o += pl;
			i += 5;
		} else {
			*o++ = data[i++];
		}
	}
	put_file(names[3], buf, (size_t)(o - buf));
	free(buf);
}

/* Where the line sep (with its newline) starts, at s or after a newline in [s, end). */
static const char *find_line(const char *s, const char *end, const char *sep)
{
	char nsep[32];
	size_t l = strlen(sep);
	const char *at;

	if ((size_t)(end - s) >= l && !memcmp(s, sep, l))
		return s;
	snprintf(nsep, sizeof(nsep), "\n%s", sep);
	at = memmem(s, (size_t)(end - s), nsep, l + 1);
	return at ? at + 1 : NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	pc_log_init("fuzz-status", PC_LOG_ERR);
	snprintf(dir, sizeof(dir), "%s/pc-fuzz-status.XXXXXX", tmp);
	FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
	atexit(cleanup);
	return 0;
}

/* ---- the scanner, line by line ---- */

static const char *const keys[] = {
	/* events.jsonl */
	"t", "board", "cycle", "ev", "msg", "end", "cycles", "type",
	/* verdicts.jsonl */
	"verdict", "counts", "findings", "time", "class", "violation", "n",
	/* campaign.json, lock */
	"config", "campaign", "boards", "name", "pid", "host", "started", "ended",
};
#define NKEYS PC_ARRAY_SIZE(keys)

static int is_numch(char c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* A span status_scan() or status_array_next() returned, within [s, e). */
static void check_span(const struct status_span *v, const char *s, const char *e)
{
	const char *p = v->p, *pe;

	if (v->type == ST_V_ABSENT)
		return;
	FUZZ_CHECK(v->type <= ST_V_NULL, "span type %d", v->type);
	if (v->type == ST_V_STRING) {
		FUZZ_CHECK(p > s && p + v->n < e && p[-1] == '"' && p[v->n] == '"', "a string span not in its quotes");
		return;
	}
	pe = p + v->n;
	FUZZ_CHECK(v->n >= 1 && p >= s && pe <= e, "a span outside its line");
	switch (v->type) {
	case ST_V_OBJECT:
		FUZZ_CHECK(p[0] == '{' && pe[-1] == '}', "an object span '%c'..'%c'", p[0], pe[-1]);
		break;
	case ST_V_ARRAY:
		FUZZ_CHECK(p[0] == '[' && pe[-1] == ']', "an array span '%c'..'%c'", p[0], pe[-1]);
		break;
	case ST_V_NUMBER:
		for (size_t i = 0; i < v->n; i++)
			FUZZ_CHECK(is_numch(p[i]), "a number span holds 0x%02x", (unsigned char)p[i]);
		FUZZ_CHECK(pe < e && !is_numch(*pe), "a number span that does not end where the number does");
		break;
	default:
		FUZZ_CHECK(v->n == (v->type == ST_V_FALSE ? 5u : 4u) &&
				   !memcmp(p, v->type == ST_V_TRUE ? "true" : v->type == ST_V_FALSE ? "false" : "null", v->n),
			   "a literal span of %zu bytes", v->n);
		break;
	}
}

/* Integers: what status_span_u64() accepts is exactly the digits strtoull() reads, up to max. */
static void check_u64(const struct status_span *v)
{
	static const uint64_t maxes[] = { 0, 1, 5, 9, 10, 99, 10000001, UINT32_MAX, UINT64_MAX };
	char buf[32];
	int digits = v->type == ST_V_NUMBER && v->n >= 1 && v->n <= 20;
	unsigned long long want = 0;
	uint64_t got;
	int r;

	for (size_t i = 0; digits && i < v->n; i++)
		digits = v->p[i] >= '0' && v->p[i] <= '9';
	if (digits) {
		memcpy(buf, v->p, v->n);
		buf[v->n] = 0;
		errno = 0;
		want = strtoull(buf, NULL, 10);
		digits = errno == 0;
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(maxes); i++) {
		int ok = digits && want <= maxes[i];

		got = 12345;
		r = status_span_u64(v, maxes[i], &got);
		FUZZ_CHECK(ok ? r == 0 : r == -EPROTO || r == -ERANGE,
			   "status_span_u64('%.*s', %llu) %s", (int)(v->n < 40 ? v->n : 40), v->p ? v->p : "",
			   (unsigned long long)maxes[i], ok ? "refused" : "accepted");
		FUZZ_CHECK(!ok || got == want, "status_span_u64 read %llu, not %llu", (unsigned long long)got, want);
	}
}

static void check_str(const struct status_span *v)
{
	char buf[64];

	if (status_span_str(v, buf, sizeof(buf)))
		return;
	FUZZ_CHECK(v->type == ST_V_STRING && v->n < sizeof(buf) && strlen(buf) == v->n && !memcmp(buf, v->p, v->n),
		   "status_span_str gave something else than the span");
	for (size_t i = 0; i < v->n; i++)
		FUZZ_CHECK(buf[i] >= 0x20 && buf[i] <= 0x7e && buf[i] != '\\', "status_span_str passed 0x%02x",
			   (unsigned char)buf[i]);
}

static void check_value(const struct status_span *v, const char *s, const char *e, unsigned depth);

static void check_array(const struct status_span *a, unsigned depth)
{
	struct status_span el;
	size_t pos = 0, last = 0;
	unsigned n = 0;
	int r;

	while ((r = status_array_next(a, &pos, &el)) == 1) {
		FUZZ_CHECK(pos > last && pos < a->n, "status_array_next: pos %zu after %zu in %zu", pos, last, a->n);
		last = pos;
		check_span(&el, a->p, a->p + a->n);
		check_value(&el, a->p, a->p + a->n, depth + 1);
		FUZZ_CHECK(++n <= a->n, "status_array_next: more elements than bytes");
	}
	FUZZ_CHECK(r == 0 || r == -EPROTO, "status_array_next returned %d", r);
}

/* A value's own checks, and those of what it holds (a few levels down: the
 * scanner itself does not recurse, this checker does) */
static void check_value(const struct status_span *v, const char *s, const char *e, unsigned depth)
{
	struct status_span in[NKEYS];

	check_u64(v);
	check_str(v);
	if (depth >= 4)
		return;
	if (v->type == ST_V_ARRAY)
		check_array(v, depth);
	if (v->type == ST_V_OBJECT && status_scan(v->p, v->n, 0, keys, NKEYS, in) == 0)
		for (size_t i = 0; i < NKEYS; i++) {
			check_span(&in[i], v->p, v->p + v->n);
			check_value(&in[i], v->p, v->p + v->n, depth + 1);
		}
}

static int span_eq(const struct status_span *a, const struct status_span *b)
{
	return a->type == b->type && (a->type == ST_V_ABSENT || (a->p == b->p && a->n == b->n));
}

static void check_line(const char *s, size_t n)
{
	struct status_span whole[NKEYS], cut[NKEYS];
	const char *e = s + n;
	int r, rc;
	size_t k;

	r = status_scan(s, n, 0, keys, NKEYS, whole);
	FUZZ_CHECK(r == 0 || r == -EPROTO, "status_scan of a whole line returned %d", r);
	rc = status_scan(s, n, 1, keys, NKEYS, cut);
	FUZZ_CHECK(rc == r || (r == -EPROTO && rc == 1), "status_scan: %d whole, %d when partial", r, rc);
	for (size_t i = 0; r == 0 && i < NKEYS; i++)
		FUZZ_CHECK(span_eq(&whole[i], &cut[i]), "status_scan: member %s differs when partial", keys[i]);
	for (size_t i = 0; i < NKEYS; i++) {
		check_span(&whole[i], s, e);
		check_span(&cut[i], s, e);
		check_value(&cut[i], s, e, 0);
	}
	if (r != 0 || n < 2)
		return;
	/* A whole object cut anywhere is a partial one (or, cut in the
	 * whitespace after it, still whole); a member that ended before the cut
	 * is there, the same. (A number ends where a byte after it says so.) */
	k = 1 + (n > 2 ? (unsigned char)s[n / 2] * 131u % (n - 1) : 0);
	rc = status_scan(s, k, 1, keys, NKEYS, cut);
	FUZZ_CHECK(rc == 1 || rc == 0, "status_scan: a whole line cut at %zu of %zu: %d", k, n, rc);
	for (size_t i = 0; i < NKEYS; i++) {
		/* where the member's value ends (a string: past its closing quote) */
		size_t we = whole[i].type == ST_V_ABSENT ? SIZE_MAX :
			    (size_t)(whole[i].p - s) + whole[i].n + (whole[i].type == ST_V_STRING);

		if (we < k)
			FUZZ_CHECK(span_eq(&whole[i], &cut[i]), "member %s differs when cut at %zu",
				   keys[i], k);
		check_span(&cut[i], s, s + k);
	}
}

static void check_lines(const char *s, size_t n)
{
	const char *e = s + n;

	while (s < e) {
		const char *nl = memchr(s, '\n', (size_t)(e - s));
		size_t len = (size_t)((nl ? nl : e) - s);
		/* each line in a buffer of its own size, as status reads it, so
		 * that ASan sees a read past its end */
		char *line = malloc(len ? len : 1);

		FUZZ_CHECK(line != NULL, "out of memory");
		memcpy(line, s, len);
		check_line(line, len);
		free(line);
		s += len + 1;
	}
}

/* ---- the folder ---- */

static void check_states(void)
{
	static const char *const rx[] = { NULL, "hello", "ack", "error" };
	static const char *const ends[] = { NULL, "finished", "given_up", "interrupted", "other" };

	for (int st = 0; st < ST_NSTATES; st++)
		for (int ev = -1; ev <= PC_NEV_KINDS; ev++)
			for (size_t i = 0; i < PC_ARRAY_SIZE(rx) * PC_ARRAY_SIZE(ends); i++)
				FUZZ_CHECK(status_next_state((enum status_bstate)st, ev, rx[i % PC_ARRAY_SIZE(rx)],
							     ends[i / PC_ARRAY_SIZE(rx)]) < ST_NSTATES,
					   "status_next_state(%d, %d)", st, ev);
}

static int64_t jint(json_object *o, const char *key, int64_t absent)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v)
		return absent;
	FUZZ_CHECK(json_object_is_type(v, json_type_int), "status --json: \"%s\" is not an integer", key);
	return json_object_get_int64(v);
}

static void check_json(const char *out)
{
	json_object *doc = json_tokener_parse(out), *boards, *v;
	int64_t verdicts, counted = 0;
	const char *run;
	int all_over = 1;
	size_t nb;

	FUZZ_CHECK(doc && json_object_is_type(doc, json_type_object), "status --json is not a JSON object: %.200s", out);
	FUZZ_CHECK(json_object_object_get_ex(doc, "run", &v) && json_object_is_type(v, json_type_string),
		   "status --json: no run");
	run = json_object_get_string(v);
	verdicts = jint(doc, "verdicts", -1);
	FUZZ_CHECK(verdicts >= 0 && jint(doc, "events", -1) >= 0, "status --json: counts of lines");
	FUZZ_CHECK(json_object_object_get_ex(doc, "boards", &boards) && json_object_is_type(boards, json_type_array),
		   "status --json: no boards");
	nb = json_object_array_length(boards);
	FUZZ_CHECK(nb >= 1 && nb <= 256, "status --json: %zu boards", nb);
	for (size_t i = 0; i < nb; i++) {
		json_object *b = json_object_array_get_idx(boards, i), *cnt, *lf;
		int64_t cycle = jint(b, "cycle", -1), cycles = jint(b, "cycles", -1);
		const char *state;
		int known = 0;

		FUZZ_CHECK(cycles >= 1 && cycle >= 0 && cycle <= cycles, "board %zu: cycle %lld of %lld", i,
			   (long long)cycle, (long long)cycles);
		FUZZ_CHECK(json_object_object_get_ex(b, "state", &v) && json_object_is_type(v, json_type_string),
			   "board %zu: no state", i);
		state = json_object_get_string(v);
		for (int k = 0; k < ST_NSTATES; k++)
			known |= !strcmp(state, status_bstate_keys[k]);
		FUZZ_CHECK(known, "board %zu: state %s", i, state);
		FUZZ_CHECK(strcmp(state, "done") || cycle == cycles, "board %zu: done at cycle %lld of %lld", i,
			   (long long)cycle, (long long)cycles);
		all_over &= !strcmp(state, "done") || !strcmp(state, "given_up");
		FUZZ_CHECK(json_object_object_get_ex(b, "counts", &cnt) && json_object_is_type(cnt, json_type_object),
			   "board %zu: no counts", i);
		for (int k = 0; k < PC_NOUTCOMES; k++) {
			int64_t c = jint(cnt, pc_outcome_names[k], -1);

			FUZZ_CHECK(c >= 0, "board %zu: %s %lld", i, pc_outcome_names[k], (long long)c);
			counted += c;
		}
		FUZZ_CHECK(jint(b, "eta_s", 0) >= 0 && jint(b, "cycle_ms", 0) >= 0, "board %zu: a negative time", i);
		if (json_object_object_get_ex(b, "last_fail", &lf) && lf) {
			int64_t fc = jint(lf, "cycle", -1);

			FUZZ_CHECK(fc >= 1 && fc <= cycles, "board %zu: last FAIL in cycle %lld of %lld", i,
				   (long long)fc, (long long)cycles);
		}
	}
	FUZZ_CHECK(counted <= verdicts, "status --json: %lld verdicts counted of %lld lines", (long long)counted,
		   (long long)verdicts);
	FUZZ_CHECK(strcmp(run, "finished") || all_over, "status --json: finished, with a board not done");
	json_object_put(doc);
}

/* status_run() into memory: its return, and what it printed in *out (to free). */
static int run_status(int json, const struct status_limits *lim, char **out, char *err, size_t errlen)
{
	size_t len = 0;
	FILE *f = open_memstream(out, &len);
	int rc;

	FUZZ_CHECK(f != NULL, "open_memstream: %s", strerror(errno));
	err[0] = 0;
	rc = status_run(dir, json, lim, f, err, errlen);
	FUZZ_CHECK(fclose(f) == 0, "fclose");
	FUZZ_CHECK(rc == 0 || rc == 1, "status_run returned %d", rc);
	FUZZ_CHECK(!rc || (err[0] && (strstr(err, dir) || !strcmp(err, "out of memory"))),
		   "a refusal that does not name the file: '%s'", err);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *end = s + size, *part[4] = { s }, *pend[4] = { NULL };
	const struct status_limits *lim = NULL;
	char *out = NULL, err[1024], jerr[1024], p[PATH_MAX + 32];
	int cur = 0, rc, hold = 0, lock_fd = -1;

	if (size > FUZZ_MAX_INPUT)
		return 0;
	if (!dir[0])
		LLVMFuzzerInitialize(NULL, NULL);
	if (size >= strlen(SMALL) && !memcmp(s, SMALL, strlen(SMALL))) {
		lim = &small_limits;
		part[0] = s += strlen(SMALL);
	}
	/* the sections: each separator a line of its own, in order (s is
	 * always at the start of a line); the lock's, either of two */
	for (int i = 1; i < 4; i++) {
		const char *at = find_line(s, end, seps[i]), *held;
		int k = i;

		if (i == 3 && (held = find_line(s, end, seps[4])) && (!at || held < at)) {
			at = held;
			k = 4;
		}
		if (!at)
			continue;
		pend[cur] = at;
		cur = i;
		part[i] = s = at + strlen(seps[k]);
		hold = k == 4;
	}
	pend[cur] = end;
	for (int i = 0; i < 4; i++)
		if (pend[i])
			check_lines(part[i], (size_t)(pend[i] - part[i]));
	check_states();

	put_file(names[0], part[0], (size_t)(pend[0] - part[0]));
	put_file(names[1], pend[1] ? part[1] : "", pend[1] ? (size_t)(pend[1] - part[1]) : 0);
	if (pend[2])
		put_file(names[2], part[2], (size_t)(pend[2] - part[2]));
	else
		put_file(names[2], default_campaign, strlen(default_campaign));
	put_lock(pend[3] ? part[3] : NULL, pend[3] ? (size_t)(pend[3] - part[3]) : 0);
	if (hold) {
		/* a run holds the folder: this process, by another open file than
		 * the one status probes (flock() locks conflict between them) */
		snprintf(p, sizeof(p), "%s/%s", dir, names[3]);
		lock_fd = open(p, O_RDONLY | O_CLOEXEC);
		FUZZ_CHECK(lock_fd >= 0 && flock(lock_fd, LOCK_EX) == 0, "%s: %s", p, strerror(errno));
	}

	rc = run_status(0, lim, &out, err, sizeof(err));
	FUZZ_CHECK(!rc || strlen(out) > 0, "status printed nothing, not even the lock's line");
	FUZZ_CHECK(rc || strstr(out, "\ncampaign ") != NULL, "status printed no campaign line:\n%s", out);
	free(out);
	out = NULL;
	FUZZ_CHECK(run_status(1, lim, &out, jerr, sizeof(jerr)) == rc, "status and status --json disagree: %s",
		   rc ? err : jerr);
	FUZZ_CHECK(!rc || !strcmp(err, jerr), "status and status --json refuse differently: '%s', '%s'", err, jerr);
	if (!rc)
		check_json(out);
	free(out);
	if (lock_fd >= 0)
		close(lock_fd);
	return 0;
}

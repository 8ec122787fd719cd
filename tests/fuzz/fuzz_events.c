/*
 * fuzz_events.c - a crafted results folder through replay and resume.
 *
 * The input is an events.jsonl, optionally followed by a line
 * "--- verdicts ---" and a verdicts.jsonl. Both go into a results folder
 * (on tmpfs: /dev/shm, else $TMPDIR) whose campaign.json is fixed: the
 * resolved configuration of tests/fuzz/seed-campaign.json (boards tear, mis
 * and pp: the boards of the seed events), then:
 *   replay: replay_dir(), as `powercut replay` runs it (the engine configured
 *           from campaign.json, results_each_line, engine_feed on every line,
 *           verdicts compared);
 *   resume: as `powercut run` resumes a campaign: a new engine fed every
 *           event line, then the per-board state and region the campaign
 *           loop asks for, for every board the events name; this engine is
 *           left unconfigured, as replay leaves it for a results folder
 *           older than the configuration in campaign.json (any board name,
 *           any record size: the engine's own ceilings).
 * Whatever the files hold, neither may crash, leak or read out of bounds.
 *
 * An input that starts with the line "#fix" has it removed and its
 * geometry made consistent before it is written: in every HELLO whose region
 * has a size and record size pc_geom_init() accepts, "slots" becomes the
 * count they give (and so does "slots" of that board's later full scans).
 * Without that the parser's check (slots must follow from bytes and
 * record_size, in decimal) stops nearly every mutated geometry, and the
 * engine would only ever see the seeds' regions.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/record.h"
#include "common/util.h"
#include "harness/campaign/config.h"
#include "harness/engine/engine.h"
#include "harness/cli/replay.h"
#include "harness/results/results.h"
#include "tests/fuzz/fuzz.h"
#include "vboard/vboard.h"

#define FUZZ_MAX_INPUT	(256u << 10)
#define MAX_BOARDS	16
#define SEPARATOR	"\n--- verdicts ---\n"
#define FIX		"#fix\n"

static char dir[PATH_MAX];
static FILE *devnull;

static void path_of(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void cleanup(void)
{
	static const char *const names[] = { "campaign.json", "events.jsonl", "verdicts.jsonl" };
	char p[PATH_MAX + 32];

	if (!dir[0])
		return;
	for (size_t i = 0; i < PC_ARRAY_SIZE(names); i++) {
		path_of(p, sizeof(p), names[i]);
		unlink(p);
	}
	rmdir(dir);
	dir[0] = 0;
}

static void put_file(const char *name, const uint8_t *data, size_t len)
{
	char p[PATH_MAX + 32];
	int fd;

	path_of(p, sizeof(p), name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	FUZZ_CHECK(fd >= 0, "%s: %s", p, strerror(errno));
	FUZZ_CHECK(pc_write_all(fd, data, len) == 0, "%s: cannot write", p);
	close(fd);
}

/* tests/fuzz/seed-campaign.json, the parts the engine reads */
static const char seed_config[] =
	"{\"campaign\": \"fuzz-seeds\", \"cycles\": 4, \"seed\": 7,"
	" \"defaults\": {\"relay\": {\"driver\": \"sim\"},"
	"  \"device\": {\"backend\": \"sim\", \"size\": \"64K\", \"record_size\": 1024},"
	"  \"pattern\": \"random\", \"records_per_cycle\": 40},"
	" \"boards\": [{\"name\": \"tear\"}, {\"name\": \"mis\", \"pattern\": \"sequential\"},"
	"  {\"name\": \"pp\"}]}";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	struct campaign_cfg cfg;
	json_object *campaign;
	const char *text;
	char err[512];

	pc_log_init("fuzz-events", PC_LOG_ERR);
	/* the qemu driver joins relay.c's list as powercut's main() adds it */
	FUZZ_CHECK(vboard_register() == 0, "cannot add the qemu relay driver");
	snprintf(dir, sizeof(dir), "%s/pc-fuzz-events.XXXXXX", tmp);
	FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
	atexit(cleanup);
	/* campaign.json as the campaign writes it: its name and resolved configuration */
	FUZZ_CHECK(config_parse(seed_config, "seed-campaign.json", &cfg, err, sizeof(err)) == 0, "%s", err);
	campaign = json_object_new_object();
	json_object_object_add(campaign, "campaign", json_object_new_string(cfg.name));
	json_object_object_add(campaign, "config", json_object_get(cfg.root));
	text = json_object_to_json_string_ext(campaign, JSON_C_TO_STRING_PLAIN);
	put_file("campaign.json", (const uint8_t *)text, strlen(text));
	json_object_put(campaign);
	config_free(&cfg);
	devnull = fopen("/dev/null", "we");
	FUZZ_CHECK(devnull != NULL, "/dev/null: %s", strerror(errno));
	return 0;
}

struct resume {
	struct engine *eng;
	char boards[MAX_BOARDS][64];
	unsigned nboards;
	unsigned verdicts;
};

/* A verdict is read as the campaign would write it. */
static int on_verdict(const struct pc_verdict *v, void *arg)
{
	struct resume *r = arg;
	const char *s = json_object_to_json_string_ext(v->json, JSON_C_TO_STRING_PLAIN);

	FUZZ_CHECK(s && s[0] == '{', "a verdict that is not a JSON object");
	r->verdicts++;
	return 0;
}

static void on_note(const char *board, const char *text, void *arg)
{
	FUZZ_CHECK(board && text, "a note without board or text");
}

static int on_event(json_object *ev, unsigned lineno, void *arg)
{
	struct resume *r = arg;
	char err[512] = "";
	json_object *b;

	engine_feed(r->eng, ev, err, sizeof(err));
	/* the boards the campaign loop would then ask about (it knows them from
	 * its configuration; here, from the events) */
	if (json_object_object_get_ex(ev, "board", &b) && json_object_is_type(b, json_type_string) &&
	    json_object_get_string_len(b) < 64 && r->nboards < MAX_BOARDS) {
		const char *name = json_object_get_string(b);
		unsigned i;

		for (i = 0; i < r->nboards && strcmp(r->boards[i], name); i++)
			;
		if (i == r->nboards)
			pc_strlcpy(r->boards[r->nboards++], name, sizeof(r->boards[0]));
	}
	return 0;
}

static void resume(void)
{
	struct resume r = { 0 };
	char p[PATH_MAX + 32], err[512] = "";
	int torn;

	r.eng = engine_new("fuzz", on_verdict, on_note, &r);
	FUZZ_CHECK(r.eng != NULL, "engine_new failed");
	path_of(p, sizeof(p), "events.jsonl");
	results_each_line(p, on_event, &r, &torn, err, sizeof(err));
	for (unsigned i = 0; i < r.nboards; i++) {
		struct engine_board_state st;
		json_object *region;

		memset(&st, 0, sizeof(st));
		engine_board_state(r.eng, r.boards[i], &st);
		FUZZ_CHECK(st.verdicts <= r.verdicts, "board %s: %u verdicts, %u emitted", r.boards[i], st.verdicts,
			   r.verdicts);
		region = engine_board_region(r.eng, r.boards[i]);
		json_object_put(region);
	}
	engine_free(r.eng);
}

static int run_input(const uint8_t *data, size_t size);

static json_object *member(json_object *o, const char *key, json_type t)
{
	json_object *v = NULL;

	return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, t) ? v : NULL;
}

/* One event line with its geometry made consistent (see the top), or NULL
 * when it is left as it is. nslots per board name, up to MAX_BOARDS. */
static json_object *fix_line(const char *line, char names[][64], uint32_t *nslots, unsigned *n)
{
	json_object *ev = json_tokener_parse(line), *msg, *b, *t, *reg, *v;
	unsigned i;

	msg = member(ev, "msg", json_type_object);
	b = member(ev, "board", json_type_string);
	t = member(msg, "type", json_type_string);
	if (!b || !t || json_object_get_string_len(b) >= 64) {
		json_object_put(ev);
		return NULL;
	}
	for (i = 0; i < *n && strcmp(names[i], json_object_get_string(b)); i++)
		;
	if (!strcmp(json_object_get_string(t), "hello") && (reg = member(msg, "region", json_type_object))) {
		json_object *bytes = member(reg, "bytes", json_type_int), *rs = member(reg, "record_size", json_type_int);
		struct pc_geom g;
		char why[160];

		if (bytes && rs && json_object_get_int64(bytes) >= 0 && json_object_get_int64(rs) >= 0 &&
		    json_object_get_int64(rs) <= UINT32_MAX &&
		    !pc_geom_init(&g, (uint64_t)json_object_get_int64(bytes), (uint32_t)json_object_get_int64(rs), 0,
				  why, sizeof(why))) {
			json_object_object_add(reg, "slots", json_object_new_int64(g.nslots));
			if (i == *n && *n < MAX_BOARDS)
				pc_strlcpy(names[(*n)++], json_object_get_string(b), 64);
			if (i < *n)
				nslots[i] = g.nslots;
			return ev;
		}
	} else if (i < *n && (!strcmp(json_object_get_string(t), "scan_end") ||
			      (!strcmp(json_object_get_string(t), "scan_begin") &&
			       (v = member(msg, "full", json_type_boolean)) && json_object_get_boolean(v)))) {
		json_object_object_add(msg, "slots", json_object_new_int64(nslots[i]));
		return ev;
	}
	json_object_put(ev);
	return NULL;
}

static uint8_t *fix_geometry(const uint8_t *data, size_t size, size_t *outlen)
{
	char names[MAX_BOARDS][64];
	uint32_t nslots[MAX_BOARDS];
	unsigned nb = 0;
	/* a line is rewritten only when that adds at most GROW bytes (a slots
	 * field; json-c may also re-escape strings, then the line stays as it is) */
	enum { GROW = 32 };
	size_t lines = 1, cap, o = 0;
	uint8_t *out;
	char *line = malloc(size + 1);

	for (const uint8_t *q = data; (q = memchr(q, '\n', size - (size_t)(q - data))); q++)
		lines++;
	cap = size + GROW * lines;
	out = malloc(cap);
	FUZZ_CHECK(out && line, "out of memory");
	for (size_t p = 0; p < size;) {
		const uint8_t *nl = memchr(data + p, '\n', size - p);
		size_t len = nl ? (size_t)(nl - data - p) : size - p;
		json_object *ev = NULL;
		const char *text;

		memcpy(line, data + p, len);
		line[len] = 0;
		if (nl && strlen(line) == len)
			ev = fix_line(line, names, nslots, &nb);
		text = ev ? json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
			  : NULL;
		if (text && strlen(text) <= len + GROW) {
			memcpy(out + o, text, strlen(text));
			o += strlen(text);
		} else {
			memcpy(out + o, data + p, len);
			o += len;
		}
		if (nl)
			out[o++] = '\n';
		json_object_put(ev);
		p += len + (nl ? 1 : 0);
	}
	free(line);
	*outlen = o;
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed = NULL;
	int ret;

	if (size > FUZZ_MAX_INPUT)
		return -1;
	if (size >= sizeof(FIX) - 1 && memcmp(data, FIX, sizeof(FIX) - 1) == 0) {
		fixed = fix_geometry(data + sizeof(FIX) - 1, size - (sizeof(FIX) - 1), &size);
		data = fixed;
	}
	ret = run_input(data, size);
	free(fixed);
	return ret;
}

static int run_input(const uint8_t *data, size_t size)
{
	struct replay_result rr;
	const uint8_t *sep = NULL;
	size_t evlen = size, seplen = sizeof(SEPARATOR) - 1;
	char err[512] = "";

	if (size >= seplen)
		sep = memmem(data, size, SEPARATOR, seplen);
	if (sep)
		evlen = (size_t)(sep - data) + 1;	/* keep the newline that ends the last event */
	put_file("events.jsonl", data, evlen);
	if (sep)
		put_file("verdicts.jsonl", sep + seplen, size - (size_t)(sep - data) - seplen);
	else
		put_file("verdicts.jsonl", (const uint8_t *)"", 0);
	if (replay_dir(dir, devnull, &rr, err, sizeof(err)) == 0)
		FUZZ_CHECK(rr.matched + rr.differ <= rr.recorded, "%u matched and %u differ of %u recorded",
			   rr.matched, rr.differ, rr.recorded);
	resume();
	return 0;
}

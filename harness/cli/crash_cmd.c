/*
 * crash_cmd.c - `powercut crash-states RESULTS`: every crash state of the
 * cycles whose inputs a sim board kept (device.keep_inputs), judged
 * (harness/crash, docs/crash-states.md). One JSON line per cycle.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"
#include "harness/cli/cli.h"
#include "harness/crash/crash.h"
#include "harness/results/results.h"
#include "harness/results/verdict.h"

static const char crash_usage[] =
	"usage: powercut crash-states RESULTS_DIR [--board NAME] [--cycle N | --all]\n"
	"                             [--exhaustive K] [--random R] [--seed S] [--locality]\n"
	"                             [--full-judge | --check-incremental]\n"
	"                             [--every-state [--max-states N]]\n"
	"\n"
	"Every crash state the block layer allows for each cycle whose inputs a sim board\n"
	"kept (device.keep_inputs: base image, write log, the image after the cut), built,\n"
	"scanned with the agent's scan and judged with the verdict engine. One JSON line per\n"
	"cycle: states, durable, volatile, acked, acked_not_durable, lost_acked_states,\n"
	"mismatches, injected, caught, ms. --all (the default) checks every kept cycle.\n"
	"Every subset of the volatile writes while they are at most K (default 10, at most\n"
	"16); beyond, R seeded random subsets (default 64) among others. --locality judges\n"
	"each tear twice to show a slot is judged alone.\n"
	"Each state is judged incrementally: the cycle is fed to the engine once and each\n"
	"state's scan of the slots the log touched is judged on it. --full-judge feeds a\n"
	"fresh engine the whole cycle for every state (slower, the reference);\n"
	"--check-incremental judges every state both ways: the verdicts must be the same.\n"
	"--every-state judges every legal state at the cut (each sector of a volatile write\n"
	"old or one of its writes' bytes) after saying how many and how long; a cycle with\n"
	"more than N (default 1000000) is refused with that estimate (exit 2).\n"
	"\n"
	"The lines are kept in RESULTS_DIR/crash-states.jsonl too (a rerun replaces a cycle's\n"
	"line), which powercut report shows per board and mode.\n"
	"\n"
	"Exit 0 when every cycle has acked_not_durable 0, mismatches 0 and caught = injected;\n"
	"1 when one does not; 2 on errors (no kept inputs, a missing, malformed or damaged\n"
	"file: a field of cycle.json or writes.log out of its bounds).\n"
	"See docs/crash-states.md.\n";

#define MAX_CYCLES_KEPT 4096u
#define CRASH_FILE "crash-states.jsonl"	/* the lines kept in the results folder */

struct kept {
	char *board;
	unsigned cycle;
	char dir[PATH_MAX];		/* session-S */
	char next_base[PATH_MAX];	/* session-(S+1)/base.img, or "" */
	struct crash_kept meta;		/* its cycle.json, bounded */
	json_object *events;		/* the board's events of cycle and cycle + 1 */
	char recorded[16];
	char *line;			/* its JSON line, once checked */
};

struct cs {
	struct kept *k;
	size_t n;
	json_object *config;
};

static int read_json_file(const char *path, json_object **out)
{
	*out = json_object_from_file(path);
	return *out ? 0 : -EINVAL;
}

/* One session's folder: its cycle.json read and bounded (damaged: an error), and when it finished and
 * its records are one cycle's (want_all, or want), that cycle kept. */
static int kept_add(struct cs *s, const char *dir, const char *name, const char *board, int want_all,
		    unsigned want, char *err, size_t errlen)
{
	char p[PATH_MAX + 300];
	struct crash_kept m;
	unsigned long sess;
	struct kept *k, *t;
	char *end;
	int rc;

	errno = 0;
	sess = strtoul(name + 8, &end, 10);
	if (errno || *end || name[8] < '0' || name[8] > '9' || sess < 1 || sess > UINT32_MAX - 1)
		return 0;
	snprintf(p, sizeof(p), "%s/%s/cycle.json", dir, name);
	if (access(p, F_OK))
		return 0;	/* a folder the sim is making */
	if ((rc = crash_kept_read(p, (uint32_t)sess, &m, err, errlen)))
		return rc;
	if (!m.finished || m.ncycles > 1 || m.cycles_more || !m.cycle || (!want_all && m.cycle != want))
		return 0;
	if (s->n >= MAX_CYCLES_KEPT)
		return pc_fail(err, errlen, -E2BIG, "%s: more than %u kept cycles; give --cycle", dir, MAX_CYCLES_KEPT);
	if (!(t = realloc(s->k, (s->n + 1) * sizeof(*s->k))))
		return -ENOMEM;
	s->k = t;
	k = &s->k[s->n++];
	memset(k, 0, sizeof(*k));
	k->meta = m;
	k->board = strdup(board);
	k->cycle = m.cycle;
	snprintf(k->dir, sizeof(k->dir), "%s/%s", dir, name);
	snprintf(k->next_base, sizeof(k->next_base), "%s/session-%lu/base.img", dir, sess + 1);
	if (access(k->next_base, R_OK))
		k->next_base[0] = 0;
	k->events = json_object_new_array();
	return k->board && k->events ? 0 : -ENOMEM;
}

/* The sessions of a board's media that finished and wrote one cycle's records. */
static int scan_board(struct cs *s, const char *results, const char *board, int want_all, unsigned want,
		      char *err, size_t errlen)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	snprintf(dir, sizeof(dir), "%s/boards/%s/media.img.inputs", results, board);
	d = opendir(dir);
	if (!d) {	/* a qemu board's (relay.keep_inputs, docs/vm.md) */
		snprintf(dir, sizeof(dir), "%s/boards/%s/vc-inputs", results, board);
		d = opendir(dir);
	}
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "session-", 8))
			continue;
		if ((rc = kept_add(s, dir, de->d_name, board, want_all, want, err, errlen)))
			break;
	}
	closedir(d);
	if (rc == -ENOMEM)
		return pc_fail(err, errlen, rc, "out of memory");
	return rc;
}

static int kept_cmp(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;
	int c = strcmp(x->board, y->board);

	return c ? c : x->cycle < y->cycle ? -1 : x->cycle > y->cycle;
}

/* s->k is sorted by kept_cmp */
static struct kept *find(struct cs *s, const char *board, unsigned cycle)
{
	struct kept key;

	key.board = (char *)board;
	key.cycle = cycle;
	return s->n ? bsearch(&key, s->k, s->n, sizeof(*s->k), kept_cmp) : NULL;
}

static int on_event(json_object *ev, unsigned lineno, void *arg)
{
	struct cs *s = arg;
	json_object *b, *c;
	struct kept *k;
	int64_t cyc;

	(void)lineno;
	if (!json_object_object_get_ex(ev, "board", &b) || !json_object_object_get_ex(ev, "cycle", &c))
		return 0;
	cyc = json_object_get_int64(c);
	if (cyc < 1 || cyc > UINT32_MAX)
		return 0;
	if ((k = find(s, json_object_get_string(b), (unsigned)cyc)))
		json_object_array_add(k->events, json_object_get(ev));
	if ((k = find(s, json_object_get_string(b), (unsigned)cyc - 1)))
		json_object_array_add(k->events, json_object_get(ev));
	return 0;
}

static int on_verdict(json_object *v, unsigned lineno, void *arg)
{
	struct cs *s = arg;
	json_object *b, *c, *vv;
	struct kept *k;

	(void)lineno;
	if (json_object_object_get_ex(v, "board", &b) && json_object_object_get_ex(v, "cycle", &c) &&
	    json_object_object_get_ex(v, "verdict", &vv) && json_object_get_int64(c) >= 1 &&
	    json_object_get_int64(c) <= UINT32_MAX &&
	    (k = find(s, json_object_get_string(b), (unsigned)json_object_get_int64(c))))
		snprintf(k->recorded, sizeof(k->recorded), "%s", json_object_get_string(vv));
	return 0;
}

/* What the command line asks for. */
struct args {
	struct crash_opts o;
	const char *board, *results;
	int want_all;
	unsigned want;
};

/* The whole space's estimate, before it starts. */
static void say(const char *line, void *arg)
{
	(void)arg;
	fprintf(stderr, "powercut crash-states: %s\n", line);
	fflush(stderr);
}

/* -1, or the exit status (2: a bad option; 0: --help). */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option lo[] = {
		{ "board", required_argument, NULL, 'b' },
		{ "cycle", required_argument, NULL, 'c' },
		{ "all", no_argument, NULL, 'a' },
		{ "exhaustive", required_argument, NULL, 'x' },
		{ "random", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ "locality", no_argument, NULL, 'l' },
		{ "full-judge", no_argument, NULL, 'F' },
		{ "check-incremental", no_argument, NULL, 'I' },
		{ "every-state", no_argument, NULL, 'E' },
		{ "max-states", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	crash_opts_default(&a->o);
	optind = 1;
	while ((c = getopt_long(argc, argv, "b:c:ah", lo, NULL)) != -1) {
		switch (c) {
		case 'b': a->board = optarg; break;
		case 'c':
			if (pc_parse_u64(optarg, 0, &v) || v < 1 || v > UINT32_MAX - 1)
				return pc_err("--cycle '%s': expected a cycle number", optarg), 2;
			a->want = (unsigned)v;
			a->want_all = 0;
			break;
		case 'a': a->want_all = 1; break;
		case 'x':
			if (pc_parse_u64(optarg, 0, &v) || v > CRASH_MAX_EXHAUSTIVE)
				return pc_err("--exhaustive '%s': expected 0..%u", optarg, CRASH_MAX_EXHAUSTIVE), 2;
			a->o.exhaustive = (unsigned)v;
			break;
		case 'r':
			if (pc_parse_u64(optarg, 0, &v) || v > CRASH_MAX_RANDOM)
				return pc_err("--random '%s': expected 0..%u", optarg, CRASH_MAX_RANDOM), 2;
			a->o.random = (unsigned)v;
			break;
		case 's':
			if (pc_parse_u64(optarg, 0, &v))
				return pc_err("--seed '%s': expected a number", optarg), 2;
			a->o.seed = v;
			break;
		case 'l': a->o.locality = 1; break;
		case 'F': a->o.full_judge = 1; break;
		case 'I': a->o.check_incremental = 1; break;
		case 'E': a->o.every_state = 1; break;
		case 'M':
			if (pc_parse_u64(optarg, 0, &v) || v < 1 || v > CRASH_MAX_STATES)
				return pc_err("--max-states '%s': expected 1..%llu", optarg, CRASH_MAX_STATES), 2;
			a->o.max_states = v;
			break;
		case 'h': fputs(crash_usage, stdout); return 0;
		default: return 2;
		}
	}
	a->o.say = say;
	if (a->o.full_judge && a->o.check_incremental)
		return pc_err("--full-judge and --check-incremental: one or the other"), 2;
	if (optind != argc - 1)
		return pc_err("crash-states takes one results folder (see powercut crash-states --help)"), 2;
	a->results = argv[optind];
	return -1;
}

/* Every board's kept cycles (campaign.json's boards), their events and recorded verdicts. 0 or 2. */
static int kept_find(struct cs *s, const struct args *a, json_object **camp)
{
	char path[PATH_MAX + 64], err[1024] = "";
	json_object *boards, *cfg;
	int rc = 0, torn = 0;

	snprintf(path, sizeof(path), "%s/" PC_FILE_CAMPAIGN, a->results);
	if (read_json_file(path, camp))
		return pc_err("%s: cannot read it as JSON: is %s a results folder?", path, a->results), -1;
	if (!json_object_object_get_ex(*camp, "config", &cfg) || !json_object_object_get_ex(cfg, "boards", &boards) ||
	    !json_object_is_type(boards, json_type_array))
		return pc_err("%s: no config.boards", path), -1;
	s->config = cfg;
	for (size_t i = 0; i < json_object_array_length(boards) && !rc; i++) {
		json_object *nm;
		const char *name;

		if (!json_object_object_get_ex(json_object_array_get_idx(boards, i), "name", &nm))
			continue;
		name = json_object_get_string(nm);
		if ((a->board && strcmp(a->board, name)) || strchr(name, '/') || !strcmp(name, "..") || !strcmp(name, "."))
			continue;
		rc = scan_board(s, a->results, name, a->want_all, a->want, err, sizeof(err));
	}
	if (rc)
		return pc_err("%s", err), -1;
	if (!s->n)
		return pc_err("%s: no kept inputs%s%s%s (a sim board keeps them with \"device\": {\"keep_inputs\": K}; "
			      "see docs/crash-states.md)", a->results, a->board ? " of board " : "",
			      a->board ? a->board : "", a->want_all ? "" : " for that cycle"), -1;
	qsort(s->k, s->n, sizeof(*s->k), kept_cmp);
	snprintf(path, sizeof(path), "%s/" PC_FILE_EVENTS, a->results);
	if (results_each_line(path, on_event, s, &torn, err, sizeof(err)))
		return pc_err("%s", err), -1;
	snprintf(path, sizeof(path), "%s/" PC_FILE_VERDICTS, a->results);
	if (results_each_line(path, on_verdict, s, &torn, err, sizeof(err)))
		return pc_err("%s", err), -1;
	return 0;
}

/* Check one kept cycle, print its line and keep it for crash-states.jsonl: 0 ok, 1 not, 2 an error. */
static int check_one(struct cs *s, struct kept *k, const struct crash_opts *o)
{
	char base[PATH_MAX + 16], log[PATH_MAX + 16], after[PATH_MAX + 16], err[1024] = "";
	struct crash_input in = { .board = k->board, .cycle = k->cycle, .config = s->config,
				  .events = k->events, .base = base, .log = log,
				  .recorded = k->recorded[0] ? k->recorded : NULL };
	struct crash_result r;
	json_object *line;
	int rc;

	snprintf(base, sizeof(base), "%s/base.img", k->dir);
	snprintf(log, sizeof(log), "%s/writes.log", k->dir);
	snprintf(after, sizeof(after), "%s/after.img", k->dir);
	/* what the next boot scanned: its base image (after.img plus that power-on's faults) */
	in.post = k->next_base[0] ? k->next_base : access(after, R_OK) ? NULL : after;
	in.in_flight = k->meta.in_flight;
	in.kept = &k->meta;
	if (crash_check(&in, o, &r, err, sizeof(err))) {
		pc_err("board %s cycle %u (%s): %s", k->board, k->cycle, k->dir, err);
		return 2;
	}
	line = crash_result_json(&in, &r);
	k->line = strdup(json_object_to_json_string_ext(line, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	printf("%s\n", json_object_to_json_string_ext(line, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(stdout);
	json_object_put(line);
	rc = crash_result_ok(&r) ? 0 : 1;
	crash_result_clear(&r);
	return rc;
}

/*
 * crash-states.jsonl in the results folder: the lines of earlier runs whose
 * cycles this run did not check, then this run's, written whole under a
 * temporary name, fsync'd and renamed over it. A killed run leaves the
 * earlier file as it was; a rerun replaces a cycle's line, never adds a
 * second one. 0, or -1 with the error said.
 */
struct keep_old {
	struct cs *s;
	FILE *f;
};

static int on_old(json_object *o, unsigned lineno, void *arg)
{
	struct keep_old *ko = arg;
	json_object *b, *c;
	struct kept *k = NULL;

	(void)lineno;
	if (json_object_object_get_ex(o, "board", &b) && json_object_object_get_ex(o, "cycle", &c) &&
	    json_object_get_int64(c) >= 1 && json_object_get_int64(c) <= UINT32_MAX)
		k = find(ko->s, json_object_get_string(b), (unsigned)json_object_get_int64(c));
	if (!k || !k->line)
		fprintf(ko->f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
									JSON_C_TO_STRING_NOSLASHESCAPE));
	return 0;
}

/* The checked cycles' lines into the results folder's CRASH_FILE, the
 * others' lines kept: 0, or -errno (said). */
static int crash_file_keep(struct cs *s, const char *results)
{
	char path[PATH_MAX + 32], err[1024] = "", *text = NULL;
	size_t len = 0;
	struct keep_old ko = { s, open_memstream(&text, &len) };
	int rc = 0;

	snprintf(path, sizeof(path), "%s/" CRASH_FILE, results);
	if (!ko.f) {
		rc = -errno;
		pc_err("%s: %s: the lines above are not kept in the results folder", path, strerror(-rc));
		return rc;
	}
	if (access(path, F_OK) == 0 && (rc = results_each_line(path, on_old, &ko, NULL, err, sizeof(err))))
		pc_err("%s: %s is left as it was (mend or remove it)", err, path);
	for (size_t i = 0; i < s->n; i++)
		if (s->k[i].line)
			fprintf(ko.f, "%s\n", s->k[i].line);
	if (fclose(ko.f) && !rc) {
		rc = -errno;
		pc_err("%s: %s: the lines above are not kept in the results folder", path, strerror(-rc));
	}
	if (!rc && (rc = pc_write_file(path, text, len, PC_FILE_SYNC)))
		pc_err("%s: %s", path, strerror(-rc));
	free(text);
	return rc;
}

int cmd_crash_states(int argc, char **argv)
{
	struct args a = { .want_all = 1 };
	struct cs s = { NULL, 0, NULL };
	json_object *camp = NULL;
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	if (kept_find(&s, &a, &camp)) {
		rc = 2;		/* nothing checked */
		goto out;
	}
	rc = 0;
	for (size_t i = 0; i < s.n; i++) {
		int r1 = check_one(&s, &s.k[i], &a.o);

		if (r1 == 2 || (r1 == 1 && rc == 0))
			rc = r1;	/* 2: a cycle's inputs damaged; the others are still checked */
	}
	if (crash_file_keep(&s, a.results))
		rc = 2;
out:
	for (size_t i = 0; i < s.n; i++) {
		free(s.k[i].board);
		free(s.k[i].line);
		json_object_put(s.k[i].events);
	}
	free(s.k);
	json_object_put(camp);
	return rc;
}

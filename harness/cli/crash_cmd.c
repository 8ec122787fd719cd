/*
 * crash_cmd.c - `powercut crash-states RESULTS`: every crash state of the
 * cycles whose inputs a sim board kept (device.keep_inputs), judged
 * (harness/crash, docs/crash-states.md). One JSON line per cycle.
 */
#include <dirent.h>
#include <errno.h>
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

static const char crash_usage[] =
	"usage: powercut crash-states RESULTS_DIR [--board NAME] [--cycle N | --all]\n"
	"                             [--exhaustive K] [--random R] [--seed S] [--locality]\n"
	"\n"
	"Every crash state the block layer allows for each cycle whose inputs a sim board\n"
	"kept (device.keep_inputs: base image, write log, the image after the cut), built,\n"
	"scanned with the agent's scan and judged with the verdict engine. One JSON line per\n"
	"cycle: states, durable, volatile, acked, acked_not_durable, lost_acked_states,\n"
	"mismatches, injected, caught, ms. --all (the default) checks every kept cycle.\n"
	"Every subset of the volatile writes while they are at most K (default 10, at most\n"
	"16); beyond, R seeded random subsets (default 64) among others. --locality judges\n"
	"each tear twice to show a slot is judged alone.\n"
	"\n"
	"Exit 0 when every cycle has acked_not_durable 0, mismatches 0 and caught = injected;\n"
	"1 when one does not; 2 on errors (no kept inputs, a missing or malformed file).\n"
	"See docs/crash-states.md.\n";

#define MAX_CYCLES_KEPT 4096u

struct kept {
	char *board;
	unsigned cycle;
	char dir[PATH_MAX];		/* session-S */
	char next_base[PATH_MAX];	/* session-(S+1)/base.img, or "" */
	json_object *in_flight;
	json_object *events;		/* the board's events of cycle and cycle + 1 */
	char recorded[16];
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

static uint64_t jget(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) && json_object_get_int64(v) > 0 ? (uint64_t)json_object_get_int64(v) : 0;
}

/* The sessions of a board's media that finished and wrote one cycle's records. */
static int scan_board(struct cs *s, const char *results, const char *board, int want_all, unsigned want,
		      char *err, size_t errlen)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/boards/%s/media.img.inputs", results, board);
	d = opendir(dir);
	if (!d) {	/* a qemu board's (relay.keep_inputs, docs/vm.md) */
		snprintf(dir, sizeof(dir), "%s/boards/%s/vc-inputs", results, board);
		d = opendir(dir);
	}
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char p[PATH_MAX + 300];
		json_object *cj = NULL, *cy, *fin, *inf;
		unsigned long sess;
		char *end;

		if (strncmp(de->d_name, "session-", 8))
			continue;
		errno = 0;
		sess = strtoul(de->d_name + 8, &end, 10);
		if (errno || *end || sess > UINT32_MAX - 1)
			continue;
		snprintf(p, sizeof(p), "%s/%s/cycle.json", dir, de->d_name);
		if (read_json_file(p, &cj)) {
			if (access(p, F_OK) == 0)
				pc_warn("%s: not a JSON object: that session is left out", p);
			continue;
		}
		if (!json_object_object_get_ex(cj, "finished", &fin) || !json_object_get_boolean(fin) ||
		    !json_object_object_get_ex(cj, "cycles", &cy) || !json_object_is_type(cy, json_type_array) ||
		    json_object_array_length(cy) > 1) {
			json_object_put(cj);
			continue;
		}
		{
			/* the cycle whose records the session wrote; none completed: the one in flight */
			int64_t c = json_object_array_length(cy) ? json_object_get_int64(json_object_array_get_idx(cy, 0)) :
				    json_object_object_get_ex(cj, "in_flight", &inf) &&
				    json_object_is_type(inf, json_type_object) ? (int64_t)jget(inf, "cycle") : 0;
			struct kept *k, *t;

			if (c < 1 || c > UINT32_MAX - 1 || (!want_all && (unsigned)c != want)) {
				json_object_put(cj);
				continue;
			}
			if (s->n >= MAX_CYCLES_KEPT) {
				json_object_put(cj);
				closedir(d);
				snprintf(err, errlen, "%s: more than %u kept cycles; give --cycle", dir, MAX_CYCLES_KEPT);
				return -E2BIG;
			}
			t = realloc(s->k, (s->n + 1) * sizeof(*s->k));
			if (!t) {
				json_object_put(cj);
				closedir(d);
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
			s->k = t;
			k = &s->k[s->n++];
			memset(k, 0, sizeof(*k));
			k->board = strdup(board);
			k->cycle = (unsigned)c;
			snprintf(k->dir, sizeof(k->dir), "%s/%s", dir, de->d_name);
			snprintf(k->next_base, sizeof(k->next_base), "%s/session-%lu/base.img", dir, sess + 1);
			if (access(k->next_base, R_OK))
				k->next_base[0] = 0;
			if (json_object_object_get_ex(cj, "in_flight", &inf) && json_object_is_type(inf, json_type_object))
				k->in_flight = json_object_get(inf);
			k->events = json_object_new_array();
			if (!k->board || !k->events) {
				json_object_put(cj);
				closedir(d);
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
		}
		json_object_put(cj);
	}
	closedir(d);
	return 0;
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

int cmd_crash_states(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "board", required_argument, NULL, 'b' },
		{ "cycle", required_argument, NULL, 'c' },
		{ "all", no_argument, NULL, 'a' },
		{ "exhaustive", required_argument, NULL, 'x' },
		{ "random", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ "locality", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct crash_opts o;
	struct cs s = { NULL, 0, NULL };
	const char *board = NULL, *results;
	char path[PATH_MAX + 64], err[1024] = "";
	json_object *camp = NULL, *boards, *cfg;
	int want_all = 1, c, rc = 0, torn = 0;
	unsigned want = 0;
	uint64_t v;

	crash_opts_default(&o);
	optind = 1;
	while ((c = getopt_long(argc, argv, "b:c:ah", lo, NULL)) != -1) {
		switch (c) {
		case 'b': board = optarg; break;
		case 'c':
			if (pc_parse_u64(optarg, 0, &v) || v < 1 || v > UINT32_MAX - 1) {
				pc_err("--cycle '%s': expected a cycle number", optarg);
				return 2;
			}
			want = (unsigned)v;
			want_all = 0;
			break;
		case 'a': want_all = 1; break;
		case 'x':
			if (pc_parse_u64(optarg, 0, &v) || v > CRASH_MAX_EXHAUSTIVE) {
				pc_err("--exhaustive '%s': expected 0..%u", optarg, CRASH_MAX_EXHAUSTIVE);
				return 2;
			}
			o.exhaustive = (unsigned)v;
			break;
		case 'r':
			if (pc_parse_u64(optarg, 0, &v) || v > CRASH_MAX_RANDOM) {
				pc_err("--random '%s': expected 0..%u", optarg, CRASH_MAX_RANDOM);
				return 2;
			}
			o.random = (unsigned)v;
			break;
		case 's':
			if (pc_parse_u64(optarg, 0, &v)) {
				pc_err("--seed '%s': expected a number", optarg);
				return 2;
			}
			o.seed = v;
			break;
		case 'l': o.locality = 1; break;
		case 'h': fputs(crash_usage, stdout); return 0;
		default: return 2;
		}
	}
	if (optind != argc - 1) {
		pc_err("crash-states takes one results folder (see powercut crash-states --help)");
		return 2;
	}
	results = argv[optind];
	snprintf(path, sizeof(path), "%s/campaign.json", results);
	if (read_json_file(path, &camp)) {
		pc_err("%s: cannot read it as JSON: is %s a results folder?", path, results);
		return 2;
	}
	if (!json_object_object_get_ex(camp, "config", &cfg) || !json_object_object_get_ex(cfg, "boards", &boards) ||
	    !json_object_is_type(boards, json_type_array)) {
		pc_err("%s: no config.boards", path);
		json_object_put(camp);
		return 2;
	}
	s.config = cfg;
	for (size_t i = 0; i < json_object_array_length(boards) && !rc; i++) {
		json_object *nm;
		const char *name;

		if (!json_object_object_get_ex(json_object_array_get_idx(boards, i), "name", &nm))
			continue;
		name = json_object_get_string(nm);
		if (board && strcmp(board, name))
			continue;
		if (strchr(name, '/') || !strcmp(name, "..") || !strcmp(name, "."))
			continue;
		rc = scan_board(&s, results, name, want_all, want, err, sizeof(err));
	}
	if (rc) {
		pc_err("%s", err);
		rc = 2;
		goto out;
	}
	if (!s.n) {
		pc_err("%s: no kept inputs%s%s%s (a sim board keeps them with \"device\": {\"keep_inputs\": K}; "
		       "see docs/crash-states.md)", results, board ? " of board " : "", board ? board : "",
		       want_all ? "" : " for that cycle");
		rc = 2;
		goto out;
	}
	qsort(s.k, s.n, sizeof(*s.k), kept_cmp);
	snprintf(path, sizeof(path), "%s/events.jsonl", results);
	if (results_each_line(path, on_event, &s, &torn, err, sizeof(err))) {
		pc_err("%s", err);
		rc = 2;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/verdicts.jsonl", results);
	if (results_each_line(path, on_verdict, &s, &torn, err, sizeof(err))) {
		pc_err("%s", err);
		rc = 2;
		goto out;
	}
	for (size_t i = 0; i < s.n; i++) {
		struct kept *k = &s.k[i];
		char base[PATH_MAX + 16], log[PATH_MAX + 16], after[PATH_MAX + 16];
		struct crash_input in = { .board = k->board, .cycle = k->cycle, .config = s.config,
					  .events = k->events, .base = base, .log = log,
					  .recorded = k->recorded[0] ? k->recorded : NULL };
		struct crash_result r;
		json_object *line;

		snprintf(base, sizeof(base), "%s/base.img", k->dir);
		snprintf(log, sizeof(log), "%s/writes.log", k->dir);
		snprintf(after, sizeof(after), "%s/after.img", k->dir);
		/* what the next boot scanned: its base image (after.img plus that power-on's faults) */
		in.post = k->next_base[0] ? k->next_base : access(after, R_OK) ? NULL : after;
		if (k->in_flight) {
			json_object *op, *raw;

			if (json_object_object_get_ex(k->in_flight, "op", &op) &&
			    !strcmp(json_object_get_string(op), "write") &&
			    !(json_object_object_get_ex(k->in_flight, "raw", &raw) && json_object_get_boolean(raw)) &&
			    jget(k->in_flight, "seq")) {
				in.in_flight.valid = 1;
				in.in_flight.lba = jget(k->in_flight, "lba");
				in.in_flight.n = jget(k->in_flight, "n");
				in.in_flight.seq = jget(k->in_flight, "seq");
				in.in_flight.cycle = (uint32_t)jget(k->in_flight, "cycle");
				in.in_flight.flags = (uint16_t)jget(k->in_flight, "flags");
			}
		}
		if (crash_check(&in, &o, &r, err, sizeof(err))) {
			pc_err("board %s cycle %u (%s): %s", k->board, k->cycle, k->dir, err);
			rc = 2;
			continue;
		}
		line = crash_result_json(&in, &r);
		printf("%s\n", json_object_to_json_string_ext(line, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		fflush(stdout);
		json_object_put(line);
		if (!crash_result_ok(&r) && rc == 0)
			rc = 1;
		crash_result_clear(&r);
	}
out:
	for (size_t i = 0; i < s.n; i++) {
		free(s.k[i].board);
		json_object_put(s.k[i].events);
		json_object_put(s.k[i].in_flight);
	}
	free(s.k);
	json_object_put(camp);
	return rc;
}

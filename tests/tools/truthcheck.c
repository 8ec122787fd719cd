/*
 * truthcheck.c - hold a board's verdicts against the sim's ground-truth log.
 *
 *   truthcheck RESULTS_DIR BOARD
 *
 * The sim writes <media>.truth.jsonl: which records a cut dropped after the
 * device had claimed them durable (lying-flush: "dropped" lines with the
 * sectors lost of each). The host knows which records were acknowledged
 * (ACK lines in events.jsonl). Every dropped and acknowledged record must be a
 * violation in the verdicts -- lost_acked when nothing of it survived, torn
 * when part did -- and no other record may be: no more, no fewer.
 * Exit 0 when that holds, 1 with the differences listed otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/json.h"
#include "harness/results/verdict.h"

struct rec {
	uint64_t seq;
	unsigned cycle;
	int acked;
	int dropped_sectors;	/* -1: not in the truth log */
	int dropped_of;
	const char *found;	/* violation class in the verdicts, or NULL */
};

static struct rec *recs;
static size_t nrecs, caprecs;

static struct rec *rec_get(uint64_t seq)
{
	/* seqs arrive in increasing order per work: binary search */
	size_t lo = 0, hi = nrecs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (recs[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nrecs && recs[lo].seq == seq ? &recs[lo] : NULL;
}

typedef void (*line_fn)(json_object *o, void *arg);

static int each_line(const char *path, line_fn fn, void *arg)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f) {
		fprintf(stderr, "truthcheck: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		json_object *o;
		if (line[n - 1] != '\n')
			break;	/* torn tail */
		o = json_tokener_parse(line);
		if (o)
			fn(o, arg);
		json_object_put(o);
	}
	free(line);
	fclose(f);
	return 0;
}

static const char *board;

static void on_event(json_object *ev, void *arg)
{
	const char *kind = pc_jstr(ev, "ev", "");
	json_object *m;

	if (strcmp(pc_jstr(ev, "board", ""), board))
		return;
	if (!strcmp(kind, "work") && json_object_object_get_ex(ev, "work", &m)) {
		uint64_t first = (uint64_t)pc_jint_or(m, "first", -1), n = (uint64_t)pc_jint_or(m, "n", -1);
		for (uint64_t s = first; s < first + n; s++) {
			if (nrecs == caprecs) {
				caprecs = caprecs ? caprecs * 2 : 4096;
				recs = realloc(recs, caprecs * sizeof(*recs));
				if (!recs)
					exit(2);
			}
			recs[nrecs++] = (struct rec){ .seq = s, .cycle = (unsigned)pc_jint_or(ev, "cycle", -1),
						      .dropped_sectors = -1 };
		}
	} else if (!strcmp(kind, "rx") && json_object_object_get_ex(ev, "msg", &m) &&
		   !strcmp(pc_jstr(m, "type", ""), "ack")) {
		uint64_t first = (uint64_t)pc_jint_or(m, "first", -1), n = (uint64_t)pc_jint_or(m, "n", -1);
		for (uint64_t s = first; s < first + n; s++) {
			struct rec *r = rec_get(s);
			if (r)
				r->acked = 1;
		}
	}
}

static unsigned truth_dropped, truth_lies;

static void on_truth(json_object *t, void *arg)
{
	const char *kind = pc_jstr(t, "ev", "");

	if (!strcmp(kind, "flush_lie") || !strcmp(kind, "fua_ignored"))
		truth_lies++;
	if (strcmp(kind, "dropped"))
		return;
	struct rec *r = rec_get((uint64_t)pc_jint_or(t, "seq", -1));
	truth_dropped++;
	if (r) {
		r->dropped_sectors = (int)pc_jint_or(t, "sectors", -1);
		r->dropped_of = (int)pc_jint_or(t, "of", -1);
	}
}

static unsigned fail_cycles, verdicts;

static void on_verdict(json_object *v, void *arg)
{
	json_object *fs;

	if (strcmp(pc_jstr(v, "board", ""), board))
		return;
	verdicts++;
	if (!strcmp(pc_jstr(v, "verdict", ""), "FAIL"))
		fail_cycles++;
	if (!json_object_object_get_ex(v, "findings", &fs))
		return;
	for (size_t i = 0; i < json_object_array_length(fs); i++) {
		json_object *f = json_object_array_get_idx(fs, i), *viol;
		struct rec *r;

		if (!json_object_object_get_ex(f, "violation", &viol) || !json_object_get_boolean(viol))
			continue;
		r = rec_get((uint64_t)pc_jint_or(f, "seq", -1));
		if (r && !json_object_object_get_ex(f, "cold", NULL))
			r->found = strcmp(pc_jstr(f, "class", ""), "lost_acked") == 0 ? "lost_acked" :
				   strcmp(pc_jstr(f, "class", ""), "torn") == 0 ? "torn" : "other";
		else
			printf("violation not tied to a written record: %s\n",
			       json_object_to_json_string_ext(f, JSON_C_TO_STRING_PLAIN));
	}
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	unsigned expect_lost = 0, expect_torn = 0, got = 0, bad = 0, acked = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: truthcheck RESULTS_DIR BOARD\n");
		return 2;
	}
	board = argv[2];
	snprintf(path, sizeof(path), "%s/" PC_FILE_EVENTS, argv[1]);
	if (each_line(path, on_event, NULL))
		return 2;
	snprintf(path, sizeof(path), "%s/boards/%s/media.img.truth.jsonl", argv[1], board);
	if (each_line(path, on_truth, NULL))
		return 2;
	snprintf(path, sizeof(path), "%s/" PC_FILE_VERDICTS, argv[1]);
	if (each_line(path, on_verdict, NULL))
		return 2;
	for (size_t i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i];
		const char *want = NULL;

		acked += r->acked;
		if (r->acked && r->dropped_sectors > 0)
			want = r->dropped_sectors == r->dropped_of ? "lost_acked" : "torn";
		if (want && !strcmp(want, "lost_acked"))
			expect_lost++;
		else if (want)
			expect_torn++;
		if (r->found)
			got++;
		if ((want == NULL) != (r->found == NULL) || (want && strcmp(want, r->found))) {
			printf("seq %" PRIu64 " (cycle %u, %s): truth log says %s, verdicts say %s\n", r->seq, r->cycle,
			       r->acked ? "acked" : "not acked",
			       r->dropped_sectors > 0 ? (want ? want : "dropped but never acked") : "kept",
			       r->found ? r->found : "no violation");
			bad++;
		}
	}
	printf("%s: %u verdicts (%u FAIL), %zu records written, %u acked; truth log: %u lied-about "
	       "flushes or FUA writes, %u records dropped, of them acked: %u wholly (lost_acked), "
	       "%u partly (torn); violations found on %u records; %u disagreements\n",
	       board, verdicts, fail_cycles, nrecs, acked, truth_lies, truth_dropped, expect_lost, expect_torn,
	       got, bad);
	free(recs);
	return bad ? 1 : 0;
}

/*
 * faultmatrix.c - hold a sim campaign's verdicts against what its fault
 * profiles injected.
 *
 *   faultmatrix RESULTS_DIR [--json]
 *
 * Every sim board logs what it injected to <media>.truth.jsonl, with the class
 * the verifier should report. For each board (one fault profile each) and
 * each kind of fault this counts:
 *   injected     truth-log lines
 *   observable   the fault was left for a scan to see (an acknowledged record
 *                lost, data not overwritten before the scan, ...)
 *   detected     a finding at the right place (slot, and record where the fault
 *                concerns one) in the verdict of the boot that saw it
 *   right class  ...with the class the truth log expects
 * and, per board, false findings: findings that no injected fault explains
 * (unacknowledged records caught in flight -- not_written, torn -- are what a
 * cut does to any device and are not counted). Exit 0 when every observable
 * fault was detected with the right class and no board has a false finding.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/json.h"
#include "common/record.h"
#include "harness/results/verdict.h"

#define MAXB 64

struct rec {			/* a record some cycle wrote */
	uint64_t seq;
	unsigned cycle;
	uint8_t acked;
};

struct fnd {			/* a finding in a verdict */
	json_object *f;
	unsigned verdict_cycle;
	unsigned session;	/* the power session whose scan found it */
	int matched;
};

struct kind {
	char name[24];
	unsigned injected, observable, detected, right;
};

struct board {
	char name[64];
	char profile[64];
	uint32_t spr, nslots;
	struct rec *recs;
	size_t nrecs, caprecs;
	unsigned sess_cycle[65536];	/* power session -> the cycle whose boot it was */
	struct fnd *f;
	size_t nf, capf;
	unsigned boot_fail;
	struct kind kinds[16];
	unsigned nkinds;
	unsigned false_findings;
	json_object *false_list;
};

static struct board boards[MAXB];
static unsigned nboards;

static struct board *board_of(const char *name)
{
	for (unsigned i = 0; i < nboards; i++)
		if (!strcmp(boards[i].name, name))
			return &boards[i];
	return NULL;
}

typedef void (*line_fn)(json_object *o, void *arg);

static int each_line(const char *path, line_fn fn, void *arg)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		return -errno;
	while ((n = getline(&line, &cap, f)) > 0) {
		json_object *o;
		if (line[n - 1] != '\n')
			break;
		o = json_tokener_parse(line);
		if (o)
			fn(o, arg);
		json_object_put(o);
	}
	free(line);
	fclose(f);
	return 0;
}

static struct rec *rec_get(struct board *b, uint64_t seq)
{
	size_t lo = 0, hi = b->nrecs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (b->recs[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < b->nrecs && b->recs[lo].seq == seq ? &b->recs[lo] : NULL;
}

static void on_event(json_object *ev, void *arg)
{
	struct board *b = board_of(pc_jstr(ev, "board", ""));
	const char *kind = pc_jstr(ev, "ev", "");
	json_object *m;

	if (!b)
		return;
	if (!strcmp(kind, "work") && json_object_object_get_ex(ev, "work", &m)) {
		uint64_t first = (uint64_t)pc_jint_or(m, "first", -1), n = (uint64_t)pc_jint_or(m, "n", -1);
		for (uint64_t s = first; s < first + n; s++) {
			if (b->nrecs == b->caprecs) {
				b->caprecs = b->caprecs ? b->caprecs * 2 : 4096;
				b->recs = realloc(b->recs, b->caprecs * sizeof(*b->recs));
				if (!b->recs)
					exit(2);
			}
			b->recs[b->nrecs++] = (struct rec){ .seq = s, .cycle = (unsigned)pc_jint_or(ev, "cycle", -1) };
		}
	} else if (!strcmp(kind, "rx") && json_object_object_get_ex(ev, "msg", &m)) {
		const char *type = pc_jstr(m, "type", "");
		if (!strcmp(type, "ack")) {
			uint64_t first = (uint64_t)pc_jint_or(m, "first", -1), n = (uint64_t)pc_jint_or(m, "n", -1);
			for (uint64_t s = first; s < first + n; s++) {
				struct rec *r = rec_get(b, s);
				if (r)
					r->acked = 1;
			}
		} else if (!strcmp(type, "hello")) {
			json_object *dev, *reg;
			int64_t sess = json_object_object_get_ex(m, "device", &dev) ? pc_jint_or(dev, "session", -1) : -1;
			if (sess > 0 && sess < 65536)
				b->sess_cycle[sess] = (unsigned)pc_jint_or(ev, "cycle", -1);
			if (json_object_object_get_ex(m, "region", &reg) && pc_jint_or(reg, "record_size", -1) > 0) {
				b->spr = (uint32_t)(pc_jint_or(reg, "record_size", -1) / 512);
				b->nslots = (uint32_t)pc_jint_or(reg, "slots", -1);
			}
		}
	}
}

static void on_verdict(json_object *v, void *arg)
{
	struct board *b = board_of(pc_jstr(v, "board", ""));
	json_object *fs, *dev;
	unsigned sess = 0;

	if (!b)
		return;
	if (!strcmp(pc_jstr(v, "verdict", ""), "BOOT_FAIL"))
		b->boot_fail++;
	if (json_object_object_get_ex(v, "device", &dev) && pc_jint_or(dev, "session", -1) > 0)
		sess = (unsigned)pc_jint_or(dev, "session", -1);
	if (!json_object_object_get_ex(v, "findings", &fs))
		return;
	for (size_t i = 0; i < json_object_array_length(fs); i++) {
		json_object *f = json_object_array_get_idx(fs, i);
		const char *cls = pc_jstr(f, "class", "");
		unsigned s = sess;

		if (!strcmp(cls, "not_written"))
			continue;
		if (pc_jint_or(f, "found_at_boot", -1) > 0) {
			/* carried from an earlier boot's scan: find that boot's session */
			for (unsigned k = 1; k < 65536; k++)
				if (b->sess_cycle[k] == (unsigned)pc_jint_or(f, "found_at_boot", -1))
					s = k;
		}
		if (b->nf == b->capf) {
			b->capf = b->capf ? b->capf * 2 : 256;
			b->f = realloc(b->f, b->capf * sizeof(*b->f));
			if (!b->f)
				exit(2);
		}
		b->f[b->nf++] = (struct fnd){ .f = json_object_get(f), .verdict_cycle = (unsigned)pc_jint_or(v, "cycle", -1),
					      .session = s };
	}
}

static struct kind *kind_get(struct board *b, const char *name)
{
	for (unsigned i = 0; i < b->nkinds; i++)
		if (!strcmp(b->kinds[i].name, name))
			return &b->kinds[i];
	if (b->nkinds == 16)
		return &b->kinds[15];
	snprintf(b->kinds[b->nkinds].name, sizeof(b->kinds[0].name), "%s", name);
	return &b->kinds[b->nkinds++];
}

static uint32_t slot_of_lba(const struct board *b, int64_t lba)
{
	return lba < 8 || !b->spr ? UINT32_MAX : (uint32_t)((uint64_t)(lba - 8) / b->spr);
}

/*
 * Find the finding for a fault seen by the scan of session `sess`, at `slot`
 * (and for `seq` when seq >= 0). Returns it (marked), or NULL.
 */
static struct fnd *find(struct board *b, unsigned sess, uint32_t slot, int64_t seq, const char *want_class)
{
	struct fnd *any = NULL;

	for (size_t i = 0; i < b->nf; i++) {
		struct fnd *x = &b->f[i];
		if (x->session != sess || (uint32_t)pc_jint_or(x->f, "slot", -1) != slot)
			continue;
		if (seq >= 0 && pc_jint_or(x->f, "seq", -1) != seq && !json_object_object_get_ex(x->f, "cold", NULL))
			continue;
		if (want_class && !strcmp(pc_jstr(x->f, "class", ""), want_class)) {
			x->matched = 1;
			return x;
		}
		if (!any)
			any = x;
	}
	if (any)
		any->matched = 1;
	return any;
}

/* Did the cycle this session's scan judged write slot? (sequential pattern) */
static int hot_at(struct board *b, unsigned sess, uint32_t slot, int64_t seq)
{
	unsigned boot = sess < 65536 ? b->sess_cycle[sess] : 0;

	(void)seq;
	if (!boot || !b->nslots)
		return 0;
	for (size_t i = 0; i < b->nrecs; i++)
		if (b->recs[i].cycle + 1 == boot && (uint32_t)((b->recs[i].seq - 1) % b->nslots) == slot)
			return 1;
	return 0;
}

static void judge(struct board *b, const char *kname, int observable, struct fnd *x, const char *want)
{
	struct kind *k = kind_get(b, kname);

	k->injected++;
	if (!observable)
		return;
	k->observable++;
	if (x)
		k->detected++;
	if (x && !strcmp(pc_jstr(x->f, "class", ""), want))
		k->right++;
	else if (x)
		fprintf(stderr, "%s: %s found as %s, expected %s: %s\n", b->name, kname, pc_jstr(x->f, "class", ""), want,
			json_object_to_json_string_ext(x->f, JSON_C_TO_STRING_PLAIN));
	else if (strcmp(kname, "misdirect"))	/* a later misdirect_void may explain it */
		fprintf(stderr, "%s: %s not detected (expected %s)\n", b->name, kname, want);
}

static struct board *cur;

/* The session whose scan saw damage done in or before session o: a boot that
 * never said HELLO (it timed out, the device was slow) scanned nothing. */
static unsigned seen_by(const struct board *b, unsigned o)
{
	for (unsigned k = o; k < 65536; k++)
		if (b->sess_cycle[k])
			return k;
	return o;	/* no scan came after it: not observable */
}

static void on_truth(json_object *t, void *arg)
{
	struct board *b = cur;
	const char *ev = pc_jstr(t, "ev", "");
	unsigned s = (unsigned)pc_jint_or(t, "session", -1);
	int64_t seq = pc_jint_or(t, "seq", -1), lba = pc_jint_or(t, "lba", -1);
	struct rec *r;
	struct fnd *x;

	if (!strcmp(ev, "dropped") || !strcmp(ev, "torn_acked")) {
		/* an acknowledged record the device lost: seen at the next boot */
		int whole = !strcmp(ev, "dropped") ? pc_jint_or(t, "sectors", -1) == pc_jint_or(t, "of", -1)
						   : pc_jint_or(t, "new_sectors", -1) == 0;
		const char *want = whole ? "lost_acked" : "torn";
		r = rec_get(b, (uint64_t)seq);
		x = r && r->acked ? find(b, seen_by(b, s + 1), slot_of_lba(b, lba), seq, want) : NULL;
		judge(b, ev, r && r->acked && b->sess_cycle[seen_by(b, s + 1)], x, want);
	} else if (!strcmp(ev, "subsector_tear")) {
		x = find(b, seen_by(b, s + 1), slot_of_lba(b, lba), seq, "torn_sector");
		judge(b, ev, b->sess_cycle[seen_by(b, s + 1)] != 0, x, "torn_sector");
		if (x && pc_jint_or(x->f, "offset", -1) != pc_jint_or(t, "offset", -1))
			fprintf(stderr, "%s: subsector tear at byte %" PRId64 " reported at %" PRId64 "\n", b->name,
				pc_jint_or(t, "offset", -1), pc_jint_or(x->f, "offset", -1));
	} else if (!strcmp(ev, "paired_page") || !strcmp(ev, "bitrot")) {
		unsigned o = seen_by(b, !strcmp(ev, "bitrot") ? s : s + 1);
		uint32_t slot = slot_of_lba(b, lba);
		const char *want = hot_at(b, o, slot, seq) ? "corrupt" : "collateral";
		x = find(b, o, slot, -1, want);
		judge(b, ev, b->sess_cycle[o] != 0, x, want);
	} else if (!strcmp(ev, "misdirect")) {
		/* observable unless the sim says nothing of it stayed where it landed */
		struct kind *k;
		x = find(b, seen_by(b, s + 1), slot_of_lba(b, pc_jint_or(t, "landed", -1)), -1, "misdirected");
		judge(b, ev, b->sess_cycle[seen_by(b, s + 1)] != 0, x, "misdirected");
		/* the intended record is lost: that finding is part of this fault */
		find(b, seen_by(b, s + 1), slot_of_lba(b, lba), seq, "lost_acked");
		(void)k;
	} else if (!strcmp(ev, "misdirect_void")) {
		/* undo the observable count of its misdirect: nothing was left to see */
		struct kind *k = kind_get(b, "misdirect");
		x = find(b, seen_by(b, s + 1), slot_of_lba(b, pc_jint_or(t, "landed", -1)), -1, "misdirected");
		if (!x && k->observable) {
			k->observable--;
			fprintf(stderr, "%s: (misdirect at %" PRId64 " left nothing to find: not observable)\n", b->name,
				pc_jint_or(t, "landed", -1));
		}
	} else if (!strcmp(ev, "stale")) {
		x = find(b, seen_by(b, s), slot_of_lba(b, lba), -1, "stale");
		judge(b, ev, b->sess_cycle[seen_by(b, s)] != 0, x, "stale");
	} else if (!strcmp(ev, "brick")) {
		struct kind *k = kind_get(b, "brick");
		k->injected++;
		k->observable++;
		if (b->boot_fail) {
			k->detected++;
			k->right++;
		}
	}
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	json_object *camp, *cfg, *bs, *out = json_object_new_array();
	int json = argc > 2 && !strcmp(argv[2], "--json"), bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: faultmatrix RESULTS_DIR [--json]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/" PC_FILE_CAMPAIGN, argv[1]);
	camp = json_object_from_file(path);
	if (!camp || !json_object_object_get_ex(camp, "config", &cfg) || !json_object_object_get_ex(cfg, "boards", &bs)) {
		fprintf(stderr, "faultmatrix: %s: not a campaign\n", path);
		return 2;
	}
	for (size_t i = 0; i < json_object_array_length(bs) && nboards < MAXB; i++) {
		json_object *bo = json_object_array_get_idx(bs, i), *dev;
		struct board *b = &boards[nboards++];
		snprintf(b->name, sizeof(b->name), "%s", pc_jstr(bo, "name", ""));
		json_object_object_get_ex(bo, "device", &dev);
		snprintf(b->profile, sizeof(b->profile), "%s", pc_jstr(dev, "profile", ""));
		b->false_list = json_object_new_array();
	}
	snprintf(path, sizeof(path), "%s/" PC_FILE_EVENTS, argv[1]);
	if (each_line(path, on_event, NULL))
		return 2;
	snprintf(path, sizeof(path), "%s/" PC_FILE_VERDICTS, argv[1]);
	if (each_line(path, on_verdict, NULL))
		return 2;
	for (unsigned i = 0; i < nboards; i++) {
		struct board *b = &boards[i];
		cur = b;
		snprintf(path, sizeof(path), "%s/boards/%s/media.img.truth.jsonl", argv[1], b->name);
		each_line(path, on_truth, NULL);
		/* what no fault explains */
		for (size_t k = 0; k < b->nf; k++) {
			struct fnd *x = &b->f[k];
			json_object *viol;
			const char *cls = pc_jstr(x->f, "class", "");
			int v = json_object_object_get_ex(x->f, "violation", &viol) && json_object_get_boolean(viol);
			if (x->matched || (!strcmp(cls, "torn") && !v))
				continue;
			b->false_findings++;
			json_object_array_add(b->false_list, json_object_get(x->f));
			fprintf(stderr, "%s: false finding in cycle %u: %s\n", b->name, x->verdict_cycle,
				json_object_to_json_string_ext(x->f, JSON_C_TO_STRING_PLAIN));
		}
	}
	if (!json) {
		printf("%-14s %-26s %-14s %9s %11s %9s %12s %6s\n", "board", "profile", "fault", "injected",
		       "observable", "detected", "right class", "false");
	}
	for (unsigned i = 0; i < nboards; i++) {
		struct board *b = &boards[i];
		json_object *bo = json_object_new_object(), *ks = json_object_new_array();

		json_object_object_add(bo, "board", json_object_new_string(b->name));
		json_object_object_add(bo, "profile", json_object_new_string(b->profile));
		json_object_object_add(bo, "false_findings", json_object_new_int(b->false_findings));
		if (!b->nkinds && !json)
			printf("%-14s %-26s %-14s %9d %11d %9d %12d %6u\n", b->name, b->profile, "-", 0, 0, 0, 0,
			       b->false_findings);
		for (unsigned k = 0; k < b->nkinds; k++) {
			struct kind *kd = &b->kinds[k];
			json_object *ko = json_object_new_object();
			if (!json)
				printf("%-14s %-26s %-14s %9u %11u %9u %12u %6u\n", k ? "" : b->name, k ? "" : b->profile,
				       kd->name, kd->injected, kd->observable, kd->detected, kd->right,
				       k ? 0 : b->false_findings);
			json_object_object_add(ko, "fault", json_object_new_string(kd->name));
			json_object_object_add(ko, "injected", json_object_new_int(kd->injected));
			json_object_object_add(ko, "observable", json_object_new_int(kd->observable));
			json_object_object_add(ko, "detected", json_object_new_int(kd->detected));
			json_object_object_add(ko, "right_class", json_object_new_int(kd->right));
			json_object_array_add(ks, ko);
			if (kd->right != kd->observable)
				bad = 1;
		}
		json_object_object_add(bo, "faults", ks);
		json_object_array_add(out, bo);
		if (b->false_findings)
			bad = 1;
	}
	if (json)
		puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY));
	json_object_put(out);
	json_object_put(camp);
	for (unsigned i = 0; i < nboards; i++) {
		for (size_t k = 0; k < boards[i].nf; k++)
			json_object_put(boards[i].f[k].f);
		free(boards[i].f);
		free(boards[i].recs);
		json_object_put(boards[i].false_list);
	}
	if (json)
		;
	else
		printf("%s\n", bad ? "faultmatrix: some observable fault was missed or misnamed, or a finding is false"
				   : "faultmatrix: every observable fault detected with the right class; no false findings");
	return bad;
}

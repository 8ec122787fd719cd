/*
 * replay_cli.c - `powercut replay DIR...`: each folder replayed in turn
 * (replay.c), its per-device report as this powercut judges it, the
 * comparison as JUnit XML, and the exit status.
 */
#include "harness/cli/replay.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "harness/report/report.h"
#include "harness/report/xml.h"
#include "harness/results/verdict.h"

/* ---- `powercut replay DIR...`: several folders, JUnit XML, the report ---- */

struct folder {
	const char *dir;
	int ret;		/* replay_dir_opts()'s */
	int report_failed;
	int damaged;		/* lines of events.jsonl refused or skipped: err says which */
	char err[1024];
	struct replay_result r;
	double secs;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The last component of a folder's path: "sim-honest" for
 * "tests/recordings/sim-honest/". */
static void base_of(const char *dir, char *buf, size_t len)
{
	size_t n = strlen(dir);
	const char *s;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	s = dir + n;
	while (s > dir && s[-1] != '/')
		s--;
	snprintf(buf, len, "%.*s", (int)(dir + n - s), s);
	if (!buf[0] || !strcmp(buf, ".") || !strcmp(buf, "..") || !strcmp(buf, "/"))
		snprintf(buf, len, "recording");
}

/*
 * The report of a folder's recomputed verdicts: a temporary folder holding
 * them as verdicts.jsonl, with links to the recording's campaign.json and
 * events.jsonl (what report_run() reads beside the verdicts), reported as any
 * results folder is. rd is the temporary folder, made by the caller. 0, or
 * -errno with fo->err.
 */
static int report_of(struct folder *fo, const char *rd, FILE *out)
{
	static const char *const companions[] = { PC_FILE_CAMPAIGN, PC_FILE_EVENTS };
	struct report_opts ro = { 0 };
	const char *dirs[1] = { rd };
	char src[PATH_MAX + 32], real[PATH_MAX], dst[PATH_MAX + 32];
	int result;

	for (size_t i = 0; i < PC_ARRAY_SIZE(companions); i++) {
		snprintf(src, sizeof(src), "%s/%s", fo->dir, companions[i]);
		snprintf(dst, sizeof(dst), "%s/%s", rd, companions[i]);
		if (!realpath(src, real) || symlink(real, dst)) {
			int e = errno;

			snprintf(fo->err, sizeof(fo->err), "%s: %s (for the report)", src, strerror(e));
			return -e;
		}
	}
	fprintf(out, "replay %s: the report of its verdicts as this powercut recomputes them:\n", fo->dir);
	fflush(out);
	return report_run(dirs, 1, out, &ro, &result, fo->err, sizeof(fo->err));
}

static void report_cleanup(const char *tmp, const char *rd)
{
	static const char *const files[] = { PC_FILE_VERDICTS, PC_FILE_CAMPAIGN, PC_FILE_EVENTS };
	char path[PATH_MAX + 32];

	if (rd[0]) {
		for (size_t i = 0; i < PC_ARRAY_SIZE(files); i++) {
			snprintf(path, sizeof(path), "%s/%s", rd, files[i]);
			unlink(path);
		}
		rmdir(rd);
	}
	if (tmp[0])
		rmdir(tmp);
}

static void one_folder(struct folder *fo, FILE *out, const struct replay_cli *o)
{
	struct replay_opts ro = { .boards = 1 };
	char tmp[PATH_MAX] = "", rd[PATH_MAX + 80] = "", base[256], path[PATH_MAX + 128];
	const char *td = getenv("TMPDIR");
	FILE *vf = NULL;
	double t0;

	if (o->report) {
		snprintf(tmp, sizeof(tmp), "%s/powercut-replay.XXXXXX", td && td[0] ? td : "/tmp");
		if (!mkdtemp(tmp)) {
			snprintf(fo->err, sizeof(fo->err), "%s: %s (a temporary folder for the report)", tmp, strerror(errno));
			tmp[0] = '\0';
			fo->ret = -EIO;
			return;
		}
		base_of(fo->dir, base, sizeof(base));
		snprintf(rd, sizeof(rd), "%s/%s", tmp, base);
		snprintf(path, sizeof(path), "%s/" PC_FILE_VERDICTS, rd);
		if (mkdir(rd, 0700) || !(vf = fopen(path, "we"))) {
			snprintf(fo->err, sizeof(fo->err), "%s: %s", path, strerror(errno));
			fo->ret = -EIO;
			goto out;
		}
		ro.recomputed = vf;
	}
	t0 = now_s();
	fo->ret = replay_dir_opts(fo->dir, out, &ro, &fo->r, fo->err, sizeof(fo->err));
	fo->secs = now_s() - t0;
	if (vf && fclose(vf) && !fo->ret) {
		snprintf(fo->err, sizeof(fo->err), "%s: %s", path, strerror(errno));
		fo->ret = -EIO;
	}
	vf = NULL;
	if (fo->ret)
		goto out;
	if (!o->quiet || fo->r.differ || fo->r.missing || fo->r.extra)
		fprintf(out, "replay %s: %u verdicts recomputed, %u match, %u differ, %u missing, %u extra\n", fo->dir,
			fo->r.recomputed, fo->r.matched, fo->r.differ, fo->r.missing, fo->r.extra);
	if (fo->r.refused) {
		unsigned nl = fo->r.refused < REPLAY_REFUSED_LINES ? fo->r.refused : REPLAY_REFUSED_LINES;
		int n = snprintf(fo->err, sizeof(fo->err), "%s/" PC_FILE_EVENTS ": %u line%s refused or skipped (line%s ",
				 fo->dir, fo->r.refused, fo->r.refused == 1 ? "" : "s", fo->r.refused == 1 ? "" : "s");

		for (unsigned i = 0; i < nl && n > 0 && (size_t)n < sizeof(fo->err); i++)
			n += snprintf(fo->err + n, sizeof(fo->err) - (size_t)n, "%s%u", i ? ", " : "",
				      fo->r.refused_line[i]);
		if (n > 0 && (size_t)n < sizeof(fo->err))
			snprintf(fo->err + n, sizeof(fo->err) - (size_t)n,
				 "%s): a damaged or crafted recording; the verdicts above are from the other lines",
				 fo->r.refused > nl ? ", ..." : "");
		fo->damaged = 1;
	}
	if (o->report && report_of(fo, rd, out))
		fo->report_failed = 1;
out:
	if (vf)
		fclose(vf);
	fflush(out);
	report_cleanup(tmp, rd);
}

static void junit_count(struct junit *j, const char *name, unsigned v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%u", v);
	junit_property(j, name, buf);
}

/* A board's first difference, and how many more (NULL: out of memory; free it). */
static char *difference_text(const struct replay_board *b, unsigned nv, int brief)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);

	if (!f)
		return NULL;
	if (brief) {
		if (b->differ)
			fprintf(f, "%u of %u verdicts differ", b->differ, nv);
		if (b->missing)
			fprintf(f, "%s%u recomputed but not recorded", b->differ ? ", " : "", b->missing);
		if (b->extra)
			fprintf(f, "%s%u recorded but not recomputed", b->differ || b->missing ? ", " : "", b->extra);
		fprintf(f, "; first: %s", b->first_brief ? b->first_brief : "");
	} else {
		fputs(b->first, f);
		if (b->nmore)
			fprintf(f, "%u more (cycles %s%s)\n", b->nmore, b->more, b->nmore > REPLAY_MORE_CYCLES ? ", ..." : "");
	}
	if (ferror(f) | fclose(f)) {
		free(s);
		return NULL;
	}
	return s;
}

/* One board of a folder: a testcase, failed at its first difference. */
static int junit_board(struct junit *j, const struct replay_board *b, const char *cls)
{
	unsigned nv = b->recomputed > b->recorded ? b->recomputed : b->recorded;
	char out[256];

	junit_case_begin(j, cls, b->name);
	if (b->first) {
		char *msg = difference_text(b, nv, 1), *text = difference_text(b, nv, 0);

		if (!msg || !text) {
			free(msg);
			free(text);
			return -ENOMEM;
		}
		junit_problem_begin(j, "failure", "replay.difference", msg);
		junit_text(j, text);
		junit_problem_end(j, "failure");
		free(msg);
		free(text);
	}
	if (b->has_cycles)
		snprintf(out, sizeof(out), "%u verdicts, cycles %" PRIu32 "-%" PRIu32 ", %u match", nv, b->cycle_min,
			 b->cycle_max, b->matched);
	else
		snprintf(out, sizeof(out), "%u verdicts, %u match", nv, b->matched);
	junit_system_out(j, out);
	junit_case_end(j);
	return 0;
}

/*
 * JUnit XML: one testsuite per folder, one testcase per board (its first
 * difference in a failure element); a folder that could not be replayed is
 * one testcase with an error element.
 */
static int write_junit(const char *file, const struct folder *fs, int n, char *err, size_t errlen)
{
	FILE *f = fopen(file, "we");
	unsigned tests = 0, failures = 0, errors = 0;
	double secs = 0;
	struct junit j;
	int ret = 0;

	if (!f) {
		int e = errno;

		return pc_fail(err, errlen, -e, "%s: %s", file, strerror(e));
	}
	for (int i = 0; i < n; i++) {
		if (fs[i].ret || fs[i].report_failed || fs[i].damaged) {
			tests++;
			errors++;
		}
		if (!fs[i].ret) {
			tests += fs[i].r.nboards;
			for (unsigned k = 0; k < fs[i].r.nboards; k++)
				failures += fs[i].r.boards[k].first != NULL;
		}
		secs += fs[i].secs;
	}
	junit_begin(&j, f, "powercut replay", tests, failures, errors, secs);
	for (int i = 0; !ret && i < n; i++) {
		const struct folder *fo = &fs[i];
		const struct replay_result *r = &fo->r;
		unsigned nt = fo->ret ? 0 : r->nboards, nf = 0, ne = fo->ret || fo->report_failed || fo->damaged;
		char cls[256];

		base_of(fo->dir, cls, sizeof(cls));
		for (unsigned k = 0; k < nt; k++)
			nf += r->boards[k].first != NULL;
		junit_suite_begin(&j, fo->dir, nt + ne, nf, ne, fo->secs, NULL);
		if (!fo->ret) {
			junit_count(&j, "verdicts.recomputed", r->recomputed);
			junit_count(&j, "verdicts.recorded", r->recorded);
			junit_count(&j, "verdicts.matched", r->matched);
			junit_count(&j, "verdicts.differ", r->differ);
			junit_count(&j, "verdicts.missing", r->missing);
			junit_count(&j, "verdicts.extra", r->extra);
		}
		for (unsigned k = 0; !ret && k < nt; k++)
			ret = junit_board(&j, &r->boards[k], cls);
		if (ne) {
			junit_case_begin(&j, cls, "replay");
			junit_problem_begin(&j, "error", "replay.error", fo->err);
			junit_problem_end(&j, "error");
			junit_case_end(&j);
		}
		junit_suite_end(&j);
	}
	if (!ret)
		ret = junit_end(&j);
	if (ret | fclose(f)) {
		int e = errno ? errno : EIO;

		return pc_fail(err, errlen, ret ? ret : -e, "%s: %s", file, ret == -ENOMEM ? "out of memory" : strerror(e));
	}
	return 0;
}

int replay_main(const char *const *dirs, int ndirs, FILE *out, const struct replay_cli *o)
{
	struct folder *fs = calloc((size_t)ndirs, sizeof(*fs));
	unsigned long tot[6] = { 0 };
	unsigned bad = 0, differ = 0;
	int rc;

	if (!fs) {
		pc_err("out of memory");
		return 2;
	}
	for (int i = 0; i < ndirs; i++) {
		struct folder *fo = &fs[i];

		fo->dir = dirs[i];
		one_folder(fo, out, o);
		if (fo->ret || fo->report_failed || fo->damaged) {
			pc_err("%s", fo->err);
			bad++;
		}
		if (fo->ret)
			continue;
		tot[0] += fo->r.recomputed;
		tot[1] += fo->r.matched;
		tot[2] += fo->r.differ;
		tot[3] += fo->r.missing;
		tot[4] += fo->r.extra;
		tot[5] += fo->r.recorded;
		differ += fo->r.differ || fo->r.missing || fo->r.extra;
	}
	rc = bad ? 2 : differ ? 1 : 0;
	if (ndirs > 1 && (!o->quiet || rc))
		fprintf(out,
			"replay: %d folders, %lu verdicts recomputed, %lu match, %lu differ, %lu missing, %lu extra; "
			"%u folder%s differ%s, %u could not be replayed\n",
			ndirs, tot[0], tot[1], tot[2], tot[3], tot[4], differ, differ == 1 ? "" : "s",
			differ == 1 ? "s" : "", bad);
	fflush(out);
	if (o->junit) {
		char err[1024];

		if (write_junit(o->junit, fs, ndirs, err, sizeof(err))) {
			pc_err("%s", err);
			rc = 2;
		}
	}
	for (int i = 0; i < ndirs; i++)
		replay_result_free(&fs[i].r);
	free(fs);
	return rc;
}

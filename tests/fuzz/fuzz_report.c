/*
 * fuzz_report.c - a crafted results folder through `powercut report`.
 *
 * The input is a verdicts.jsonl, optionally followed by a line
 * "--- campaign ---" and a campaign.json, and by a line "--- events ---"
 * and an events.jsonl (the report reads give_up and run_end from it). They
 * go into a results folder (on tmpfs: /dev/shm, else $TMPDIR), which is
 * reported in every format, given twice (the second is read once). Whatever
 * the files hold, the report may refuse them (with an error naming the file)
 * but never crash, leak or read out of bounds, and a report it makes has a
 * result.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "harness/report/report.h"
#include "tests/fuzz/fuzz.h"

#define FUZZ_MAX_INPUT	(256u << 10)
#define CAMPAIGN	"\n--- campaign ---\n"
#define EVENTS		"\n--- events ---\n"

static char dir[PATH_MAX];
static FILE *devnull;
static const char *const names[] = { "verdicts.jsonl", "campaign.json", "events.jsonl" };

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

static void put_file(const char *name, const uint8_t *data, size_t len)
{
	char p[PATH_MAX + 32];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (!data) {
		unlink(p);
		return;
	}
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	FUZZ_CHECK(fd >= 0, "%s: %s", p, strerror(errno));
	FUZZ_CHECK(pc_write_all(fd, data, len) == 0, "%s: cannot write", p);
	close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	pc_log_init("fuzz-report", PC_LOG_ERR);
	snprintf(dir, sizeof(dir), "%s/pc-fuzz-report.XXXXXX", tmp);
	FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
	atexit(cleanup);
	devnull = fopen("/dev/null", "we");
	FUZZ_CHECK(devnull != NULL, "/dev/null: %s", strerror(errno));
	return 0;
}

/* The part of [p, end) before the first sep, and where the rest starts. */
static const uint8_t *split(const uint8_t *p, const uint8_t *end, const char *sep, const uint8_t **rest)
{
	const uint8_t *at = memmem(p, (size_t)(end - p), sep, strlen(sep));

	*rest = at ? at + strlen(sep) : NULL;
	return at ? at : end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum report_format fmts[] = { REPORT_FMT_TEXT, REPORT_FMT_MD, REPORT_FMT_HTML, REPORT_FMT_JSON,
						   REPORT_FMT_JUNIT, REPORT_FMT_CSV };
	const uint8_t *end = data + size, *vend, *camp = NULL, *cend = NULL, *ev = NULL;
	const char *dirs[2] = { dir, dir };
	char err[1024];

	if (size > FUZZ_MAX_INPUT)
		return 0;
	if (!dir[0])
		LLVMFuzzerInitialize(NULL, NULL);
	vend = split(data, end, CAMPAIGN, &camp);
	if (!camp)
		vend = split(data, end, EVENTS, &ev);
	else
		cend = split(camp, end, EVENTS, &ev);
	put_file(names[0], data, (size_t)(vend - data));
	put_file(names[1], camp, camp ? (size_t)(cend - camp) : 0);
	put_file(names[2], ev, ev ? (size_t)(end - ev) : 0);
	for (size_t i = 0; i < PC_ARRAY_SIZE(fmts); i++) {
		struct report_opts o = { .format = fmts[i] };
		int result = -1, rc = report_run(dirs, i == 0 ? 2 : 1, devnull, &o, &result, err, sizeof(err));

		FUZZ_CHECK(rc || result == REPORT_PASS || result == REPORT_FAIL || result == REPORT_INCOMPLETE,
			   "a report without a result: %d", result);
		FUZZ_CHECK(!rc || err[0], "an error without a message");
		if (rc)
			break;	/* the same files: the same refusal in every format */
	}
	return 0;
}

/*
 * report_read.c - a results folder read into the report model: its
 * verdicts.jsonl and the companions that say how to read them
 * (campaign.json, the give_up and run_end lines of events.jsonl), each line
 * through the one .jsonl reader (harness/results/jsonl.h).
 */
#include "harness/report/report_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include "common/record.h"
#include "common/util.h"
#include "harness/results/limits.h"
#include "harness/report/qualify.h"
#include "harness/results/jsonl.h"
#include "harness/results/results.h"

/* Lines of one file still waiting for their device (no device.id on them). */
struct rep_pending {
	json_object *v;
	unsigned long line;
};

/* board -> the device id it last reported, within one file */
struct rep_boardmap {
	struct { char *board, *id; } *v;
	unsigned n;
};

/* ---- reading one file ---- */

static const char *boardmap_get(const struct rep_boardmap *bm, const char *board)
{
	for (unsigned i = 0; i < bm->n; i++)
		if (strcmp(bm->v[i].board, board) == 0)
			return bm->v[i].id;
	return NULL;
}

static int boardmap_set(struct rep_boardmap *bm, const char *board, const char *id)
{
	char *nid;
	void *nv;
	unsigned i;

	for (i = 0; i < bm->n; i++)
		if (strcmp(bm->v[i].board, board) == 0)
			break;
	if (i < bm->n && strcmp(bm->v[i].id, id) == 0)
		return 0;
	if (!(nid = strdup(id)))
		return -ENOMEM;
	if (i == bm->n) {
		nv = realloc(bm->v, (bm->n + 1) * sizeof(*bm->v));
		if (nv)
			bm->v = nv;
		if (!nv || !(bm->v[i].board = strdup(board))) {
			free(nid);
			return -ENOMEM;
		}
		bm->v[i].id = NULL;
		bm->n++;
	}
	free(bm->v[i].id);
	bm->v[i].id = nid;
	return 0;
}

static void boardmap_free(struct rep_boardmap *bm)
{
	for (unsigned i = 0; i < bm->n; i++) {
		free(bm->v[i].board);
		free(bm->v[i].id);
	}
	free(bm->v);
}

static int rep_line(struct rep *r, const char *file, unsigned long lineno, json_object *v,
		    struct rep_boardmap *bm, struct rep_pending **pend, size_t *npend)
{
	struct rep_pending *p;
	struct verdict vd;
	int rc = rep_verdict_parse(r, file, lineno, v, &vd);

	if (rc)
		return rc;
	if (vd.id) {
		if (boardmap_set(bm, vd.board, vd.id))
			return -ENOMEM;
		return rep_add(r, &vd, vd.id);
	}
	/* A boot failure never met the device: attribute it once the file has
	 * said which device this board holds (a BOOT_FAIL may come first). */
	p = realloc(*pend, (*npend + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*pend = p;
	p[*npend].v = json_object_get(v);
	p[*npend].line = lineno;
	(*npend)++;
	return 0;
}

static int rep_flush_pending(struct rep *r, const char *file, struct rep_boardmap *bm,
			     struct rep_pending *pend, size_t npend)
{
	for (size_t k = 0; k < npend; k++) {
		struct verdict vd;
		int rc = rep_verdict_parse(r, file, pend[k].line, pend[k].v, &vd);

		if (rc || (rc = rep_add(r, &vd, boardmap_get(bm, vd.board))))
			return rc;
	}
	return 0;
}

static int rep_read(struct rep *r, const char *dir)
{
	struct rep_boardmap bm = { NULL, 0 };
	struct rep_pending *pend = NULL;
	size_t npend = 0;
	char *path = NULL;
	struct jsonl j = { .fd = -1 };
	struct jsonl_line l = { .lineno = 0 };
	struct stat st;
	int rc = 0;

	if (stat(dir, &st) == 0 && S_ISREG(st.st_mode))
		path = strdup(dir);
	else if (asprintf(&path, "%s/" PC_FILE_VERDICTS, dir) < 0)
		path = NULL;
	if (!path)
		return rep_fail(r, dir, 0, "out of memory");
	if ((rc = jsonl_open(&j, path))) {
		rep_fail(r, path, 0, "%s", j.why);
		goto out;
	}
	while ((rc = jsonl_next(&j, &l)) == 1) {
		json_object *v;

		if (jsonl_blank(l.s, l.len))
			continue;
		v = jsonl_parse(&j, &l);
		if (!v) {
			rc = rep_fail(r, path, l.lineno, "not a JSON verdict line: %s", j.why);
			goto out;
		}
		rc = rep_line(r, path, l.lineno, v, &bm, &pend, &npend);
		json_object_put(v);
		if (rc)
			goto fail_rc;
	}
	if (rc < 0) {
		rep_fail(r, path, (unsigned long)j.err_line, "%s", j.why);
		goto out;
	}
	if (j.torn_text) {
		/* the harness fsyncs whole lines: no newline means it was cut mid-line */
		pc_warn("%s:%" PRIu64 ": ignoring a torn last line (no newline: the harness stopped "
			"while writing it)", path, j.lineno + 1);
		r->torn_lines++;
	}
	rc = rep_flush_pending(r, path, &bm, pend, npend);
fail_rc:
	if (rc == -ENOMEM)
		rep_fail(r, path, l.lineno, "out of memory");
out:
	for (size_t k = 0; k < npend; k++)
		json_object_put(pend[k].v);
	free(pend);
	boardmap_free(&bm);
	jsonl_close(&j);
	free(path);
	return rc;
}

/* ---- what a folder's companions say: campaign.json, events.jsonl ---- */

/* A string of campaign.json, checked: printable, at most 255 bytes. */
static int camp_str(struct rep *r, const char *path, json_object *v, const char *what, char **out)
{
	const char *s;

	if (!v || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_string) || strlen(s = json_object_get_string(v)) > 255)
		return rep_fail(r, path, 0, "%s: expected a string of at most 255 bytes", what);
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return rep_fail(r, path, 0, "%s: a control character", what);
	if (!(*out = strdup(s)))
		return rep_fail(r, path, 0, "out of memory");
	return 0;
}

/* campaign.json: its format, the campaign's identity (host, name, start),
 * the cycles planned, the boards and their configuration, the INFRA_ERROR
 * limit. Read before the verdicts: it says how to read them. */
/* campaign.json of dd parsed into *doc, *path its name: 0 with *doc NULL
 * when there is none (a verdicts file from elsewhere, or a folder from long
 * ago), or rep_fail's code */
static int camp_load(struct rep *r, const struct rep_dir *dd, char **path, json_object **doc)
{
	struct stat st;
	int rc = 0;

	*doc = NULL;
	if (asprintf(path, "%s/" PC_FILE_CAMPAIGN, dd->base) < 0) {
		*path = NULL;
		return rep_fail(r, dd->base, 0, "out of memory");
	}
	if (stat(*path, &st) != 0) {
		if (errno != ENOENT)
			rc = rep_fail(r, *path, 0, "cannot read: %s", strerror(errno));
		return rc;
	}
	if (st.st_size > 64 << 20)
		return rep_fail(r, *path, 0, "%lld bytes: larger than a " PC_FILE_CAMPAIGN " can be (64 MiB)",
				(long long)st.st_size);
	*doc = json_object_from_file(*path);
	if (!*doc)
		return rep_fail(r, *path, 0, "cannot read it as JSON: %s", json_util_get_last_err());
	if (!json_object_is_type(*doc, json_type_object))
		return rep_fail(r, *path, 0, "expected a JSON object");
	return 0;
}

/* started, host, powercut version and name: the key that merges copies of
 * a campaign's folder (from a sync, a backup) */
static int camp_identity(struct rep *r, struct rep_dir *dd, const char *path, json_object *doc)
{
	json_object *v, *host = pc_jget(doc, "host");
	char *name = NULL;
	uint64_t n;
	int rc = 0;

	if ((v = pc_jget(doc, "started")) && (rc = rep_opt_count(r, path, 0, v, "started", &n)) == 0)
		dd->started = n > INT64_MAX ? INT64_MAX : (int64_t)n;
	if (rc ||
	    (rc = camp_str(r, path, pc_jget(host, "id"), "host.id", &dd->host)) ||
	    (!dd->host && (rc = camp_str(r, path, pc_jget(host, "hostname"), "host.hostname", &dd->host))) ||
	    (rc = camp_str(r, path, pc_jget(host, "powercut"), "host.powercut", &dd->version)) ||
	    (rc = camp_str(r, path, pc_jget(doc, "campaign"), "campaign", &name)))
		goto out;
	free(dd->camp_key);
	if (asprintf(&dd->camp_key, "%s|%s|%lld", dd->host ? dd->host : "", name ? name : "",
		     (long long)dd->started) < 0) {
		dd->camp_key = NULL;
		rc = rep_fail(r, path, 0, "out of memory");
	}
out:
	free(name);
	return rc;
}

/* config.cycles, config.incomplete_infra_share and config.target.confidence */
static int camp_limits(struct rep *r, struct rep_dir *dd, const char *path, json_object *cfg)
{
	json_object *v;
	uint64_t n;
	int rc;

	if ((v = pc_jget(cfg, "cycles"))) {
		if ((rc = rep_opt_count(r, path, 0, v, "config.cycles", &n)))
			return rc;
		dd->cfg_cycles = n > CFG_MAX_CYCLES ? CFG_MAX_CYCLES : (unsigned long)n;
	}
	if ((v = pc_jget(cfg, "incomplete_infra_share"))) {
		if ((!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) ||
		    !(json_object_get_double(v) >= 0.0 && json_object_get_double(v) <= 1.0))
			return rep_fail(r, path, 0, "config.incomplete_infra_share: expected a number from 0 to 1, got %s",
					json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
		dd->limit = json_object_get_double(v);
	}
	/* the campaign's target confidence bounds its rates, unless the
	 * report was given one (the first folder that says wins) */
	if ((v = pc_jget(pc_jget(cfg, "target"), "confidence")) && !r->conf_given) {
		double c = json_object_get_double(v);

		if ((!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) ||
		    !(c >= QUAL_CONF_MIN && c <= QUAL_CONF_MAX))
			return rep_fail(r, path, 0, "config.target.confidence: expected a number from %g to %g, got %s",
					QUAL_CONF_MIN, QUAL_CONF_MAX, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
		r->confidence = c;
		r->conf_given = 1;
	}
	return 0;
}

/* config.boards: each named board's configuration and record size (one
 * without a name, or a bad record_size, is passed over) */
static int camp_boards(struct rep *r, const struct rep_dir *dd, const char *path, json_object *cfg)
{
	json_object *boards = pc_jget(cfg, "boards");

	if (!boards || !json_object_is_type(boards, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(boards) && i < CFG_MAX_BOARDS; i++) {
		json_object *bo = json_object_array_get_idx(boards, i), *bn = pc_jget(bo, "name");
		struct rep_board *b;
		uint64_t rs = 0;

		if (!bn || !json_object_is_type(bn, json_type_string))
			continue;
		if (!(b = rep_board_get(r, (unsigned)(dd - r->dirs), json_object_get_string(bn))))
			return rep_fail(r, path, 0, "out of memory");
		b->cfg = bo;
		if (!rep_opt_count(r, path, 0, pc_jget(pc_jget(bo, "device"), "record_size"), "record_size", &rs) &&
		    rs <= PC_MAX_RECORD_SIZE)
			b->record_sectors = (unsigned)(rs / PC_SECTOR);
		r->err[0] = 0;
	}
	return 0;
}

static int rep_campaign(struct rep *r, struct rep_dir *dd)
{
	json_object *doc, *cfg;
	char *path = NULL, why[512];
	int rc;

	if ((rc = camp_load(r, dd, &path, &doc)) || !doc)
		goto out;
	if (pc_format_read(pc_jget(doc, "format"), path, &dd->format_major, &dd->format_minor, why, sizeof(why))) {
		rc = rep_fail(r, path, 0, "%s", why + strlen(path) + 2);
		goto out;
	}
	cfg = pc_jget(doc, "config");
	if (!cfg || !json_object_is_type(cfg, json_type_object)) {
		rc = rep_fail(r, path, 0, "config: expected an object (the campaign's resolved configuration)");
		goto out;
	}
	dd->has_campaign = 1;
	dd->campaign = json_object_get(doc);
	rc = camp_identity(r, dd, path, doc);
	if (!rc)
		rc = camp_limits(r, dd, path, cfg);
	if (!rc)
		rc = camp_boards(r, dd, path, cfg);
out:
	json_object_put(doc);
	free(path);
	return rc;
}

/* One give_up or run_end event, in file order: a run_end that does not say
 * the board was given up means a later run took the board on again. */
static int rep_event(struct rep *r, unsigned di, const char *path, unsigned long lineno, json_object *v)
{
	const char *ev = NULL, *board = NULL, *s = NULL;
	struct rep_board *b;
	uint64_t n = 0;
	int rc;

	if (!json_object_is_type(v, json_type_object))
		return rep_fail(r, path, lineno, "expected a JSON object (one event per line)");
	if ((rc = rep_opt_string(r, path, lineno, v, "ev", "ev", &ev)))
		return rc;
	if (!ev || (strcmp(ev, pc_ev_names[PC_EV_GIVE_UP]) && strcmp(ev, pc_ev_names[PC_EV_RUN_END])))
		return 0;	/* another event that merely mentions one */
	if ((rc = rep_opt_string(r, path, lineno, v, "board", "board", &board)))
		return rc;
	if (!board)
		return rep_fail(r, path, lineno, "%s: missing \"board\"", ev);
	if (!(b = rep_board_get(r, di, board)))
		return rep_fail(r, path, lineno, "out of memory");
	if (!strcmp(ev, pc_ev_names[PC_EV_GIVE_UP])) {
		char *why;

		if ((rc = rep_opt_count(r, path, lineno, pc_jget(v, "cycle"), "cycle", &n)) ||
		    (rc = rep_opt_string(r, path, lineno, v, "reason", "reason", &s)))
			return rc;
		if (!(why = strdup(s ? s : "no reason recorded")))
			return rep_fail(r, path, lineno, "out of memory");
		/* for a terminal: the reason may quote what an agent said */
		for (char *p = why; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		free(b->gu_reason);
		b->gu_reason = why;
		b->gu_cycle = (unsigned long)n;
		b->given_up = 1;
		return 0;
	}
	if (!pc_jget(v, "cycles"))
		return rep_fail(r, path, lineno, "run_end: missing \"cycles\"");
	if ((rc = rep_opt_count(r, path, lineno, pc_jget(v, "cycles"), "cycles", &n)) ||
	    (rc = rep_opt_string(r, path, lineno, v, "end", "end", &s)))
		return rc;
	b->has_plan = 1;
	b->plan = (unsigned long)n;
	if (pc_run_end_from_name(s) != PC_END_GIVEN_UP)
		b->given_up = 0;
	free(b->stop_reason);
	b->stop_reason = NULL;
	if (pc_run_end_from_name(s) > PC_END_GIVEN_UP && pc_run_end_from_name(s) != PC_END_DISK_FLOOR) {
		/* a stop rule ended the board early: its cycles are where it stopped */
		const char *why = NULL;

		if ((rc = rep_opt_string(r, path, lineno, v, "reason", "reason", &why)))
			return rc;
		if (asprintf(&b->stop_reason, "board %s at cycle %lu: %s", board, b->plan, why ? why : s) < 0) {
			b->stop_reason = NULL;
			return rep_fail(r, path, lineno, "out of memory");
		}
		for (char *p = b->stop_reason; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
	}
	return 0;
}

/* events.jsonl: only the give_up and run_end lines, picked out by a plain
 * substring search before any parsing, so a night's worth of events stays
 * quick to read. No file: no such events (an older folder). */
static int rep_events(struct rep *r, unsigned di)
{
	char give_up[32], run_end[32];
	char *path = NULL;
	struct jsonl j;
	struct jsonl_line l;
	int rc = 0;

	snprintf(give_up, sizeof(give_up), "\"%s\"", pc_ev_names[PC_EV_GIVE_UP]);
	snprintf(run_end, sizeof(run_end), "\"%s\"", pc_ev_names[PC_EV_RUN_END]);
	if (asprintf(&path, "%s/" PC_FILE_EVENTS, r->dirs[di].base) < 0)
		return rep_fail(r, r->dirs[di].base, 0, "out of memory");
	if ((rc = jsonl_open(&j, path))) {
		rc = rc == -ENOENT ? 0 : rep_fail(r, path, 0, "%s", j.why);
		free(path);
		return rc;
	}
	/* a torn last line is never read: the harness trims it when it starts again */
	while ((rc = jsonl_next(&j, &l)) == 1) {
		json_object *v;

		if (!strstr(l.s, give_up) && !strstr(l.s, run_end))
			continue;
		v = jsonl_parse(&j, &l);
		if (!v) {
			rc = rep_fail(r, path, l.lineno, "not a JSON event line: %s", j.why);
			goto out;
		}
		rc = rep_event(r, di, path, l.lineno, v);
		json_object_put(v);
		if (rc)
			goto out;
	}
	if (rc < 0)	/* the reader's: a read error, a line too long or not UTF-8 */
		rc = rep_fail(r, path, (unsigned long)j.err_line, "%s", j.why);
out:
	jsonl_close(&j);
	free(path);
	return rc;
}

/* One argument: a folder, or a verdicts file (whose folder holds the
 * companions only when the file is the folder's verdicts.jsonl). */
int rep_folder(struct rep *r, const char *arg)
{
	char real[PATH_MAX];
	struct rep_dir *dd;
	struct stat st;
	int rc;

	dd = realloc(r->dirs, (r->ndirs + 1) * sizeof(*dd));
	if (!dd)
		return rep_fail(r, arg, 0, "out of memory");
	r->dirs = dd;
	dd = &r->dirs[r->ndirs];
	memset(dd, 0, sizeof(*dd));
	dd->arg = arg;
	dd->dup_of = -1;
	dd->format_major = 1;
	dd->limit = CFG_DEFAULT_INCOMPLETE_INFRA_SHARE;
	r->cur = r->ndirs++;
	/* the same folder (or file) given twice is read once */
	if (!realpath(arg, real))
		snprintf(real, sizeof(real), "%s", arg);
	for (unsigned i = 0; i + 1 < r->ndirs; i++)
		if (r->dirs[i].real && !strcmp(r->dirs[i].real, real)) {
			dd->dup_of = (int)i;
			return 0;
		}
	if (!(dd->real = strdup(real)) || asprintf(&dd->camp_key, "path:%s", real) < 0) {
		dd->camp_key = NULL;
		return rep_fail(r, arg, 0, "out of memory");
	}
	if (stat(arg, &st) == 0 && S_ISREG(st.st_mode)) {
		const char *slash = strrchr(arg, '/'), *name = slash ? slash + 1 : arg;

		if (!strcmp(name, PC_FILE_VERDICTS))
			dd->base = slash ? strndup(arg, slash == arg ? 1 : (size_t)(slash - arg)) : strdup(".");
		if (!strcmp(name, PC_FILE_VERDICTS) && !dd->base)
			return rep_fail(r, arg, 0, "out of memory");
	} else if (!(dd->base = strdup(arg))) {
		return rep_fail(r, arg, 0, "out of memory");
	}
	/* campaign.json first: the format and the campaign's identity (a copy
	 * of a folder given before is the same campaign; its key replaces the
	 * path one, and the path stays for spotting the same folder again) */
	if (dd->base) {
		char *pathkey = dd->camp_key;

		dd->camp_key = NULL;
		rc = rep_campaign(r, dd);
		if (!dd->camp_key)
			dd->camp_key = pathkey;
		else
			free(pathkey);
		if (rc)
			return rc;
	}
	if ((rc = rep_read(r, arg)))
		return rc;
	if (dd->base && (rc = rep_events(r, r->cur)))
		return rc;
	return 0;
}


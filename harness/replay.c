/*
 * replay.c - `powercut replay`: the verdicts must follow from the events.
 */
#include "replay.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "engine.h"
#include "results.h"

struct rp {
	struct engine *eng;
	json_object *recomputed;	/* "board/cycle" -> verdict */
	json_object *recorded;
	struct replay_result *r;
	FILE *out;
	char *err;
	size_t errlen;
	const char *dir;
	/* the recomputed verdicts as results_verdict() writes them, in order:
	 * a recording whose verdicts.jsonl holds exactly these lines agrees
	 * without parsing a line of it */
	char **text;
	size_t ntext, captext;
	int dup;		/* the engine produced two verdicts for one cycle */
};

/* "board/cycle". A verdict line is hostile input too: a cycle json-c would
 * saturate (2^63 and 2^64 - 1 would be one key) is kept as written. */
static void key_of(json_object *v, char *key, size_t len)
{
	json_object *b = NULL, *c = NULL;
	const char *board = "?";

	if (json_object_object_get_ex(v, "board", &b) && json_object_is_type(b, json_type_string))
		board = json_object_get_string(b);
	json_object_object_get_ex(v, "cycle", &c);
	if (c && json_object_is_type(c, json_type_int) && json_object_get_int64(c) >= 0 &&
	    json_object_get_uint64(c) <= UINT32_MAX)
		snprintf(key, len, "%.63s/%" PRIu64, board, json_object_get_uint64(c));
	else
		snprintf(key, len, "%.63s/(cycle %.40s)", board,
			 c ? json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN) : "missing");
}

static int on_verdict(json_object *v, void *arg)
{
	struct rp *p = arg;
	char key[128];

	key_of(v, key, sizeof(key));
	if (json_object_object_get_ex(p->recomputed, key, NULL)) {
		fprintf(p->out, "engine produced two verdicts for %s\n", key);
		p->dup = 1;
	}
	/* the key names the verdict's text; the object itself is not kept (a
	 * long recording's verdicts would all stay in memory) */
	json_object_object_add(p->recomputed, key, json_object_new_int64((int64_t)p->ntext));
	p->r->recomputed++;
	if (p->ntext == p->captext) {
		size_t cap = p->captext ? p->captext * 2 : 1024;
		char **t = realloc(p->text, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		p->text = t;
		p->captext = cap;
	}
	p->text[p->ntext] = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
								       JSON_C_TO_STRING_NOSLASHESCAPE));
	if (!p->text[p->ntext])
		return -ENOMEM;
	p->ntext++;
	return 0;
}

static int on_event(json_object *ev, unsigned lineno, void *arg)
{
	struct rp *p = arg;
	char err[512] = "";

	if (engine_feed(p->eng, ev, err, sizeof(err)))
		fprintf(p->out, "%s/events.jsonl:%u: %s\n", p->dir, lineno, err);
	return 0;
}

static int on_recorded(json_object *v, unsigned lineno, void *arg)
{
	struct rp *p = arg;
	char key[128];

	key_of(v, key, sizeof(key));
	if (json_object_object_get_ex(p->recorded, key, NULL)) {
		fprintf(p->out, "verdicts.jsonl:%u: a second verdict for %s\n", lineno, key);
		p->r->extra++;
	}
	json_object_object_add(p->recorded, key, json_object_get(v));
	p->r->recorded++;
	return 0;
}

/*
 * Does verdicts.jsonl hold exactly the recomputed verdicts, line for line, as
 * the campaign wrote them? Then they all match and nothing needs parsing (a
 * verdict line is as large as a scan's worth of events). Anything else -- a
 * line edited, reordered, missing, extra, torn, or written by another
 * serialiser -- is left to the comparison by board and cycle.
 */
static int same_text(struct rp *p, const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0, i = 0;
	ssize_t n;
	int same = !p->dup;

	if (!f)
		return 0;
	while (same && (n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] != '\n' || i >= p->ntext || (size_t)n - 1 != strlen(p->text[i]) ||
		    memcmp(line, p->text[i], (size_t)n - 1))
			same = 0;
		i++;
	}
	if (same && (!feof(f) || i != p->ntext))
		same = 0;
	free(line);
	fclose(f);
	return same;
}

int replay_dir(const char *dir, FILE *out, struct replay_result *r, char *err, size_t errlen)
{
	struct rp p = { .r = r, .out = out, .err = err, .errlen = errlen, .dir = dir };
	char path[PATH_MAX + 32];
	json_object *campaign, *name = NULL;
	int torn, ret;

	memset(r, 0, sizeof(*r));
	/* json-c makes and drops millions of small objects here: without
	 * fastbins glibc does not stop to consolidate them at every larger
	 * request (measured: 6% of replay's time) */
	mallopt(M_MXFAST, 0);
	snprintf(path, sizeof(path), "%s/campaign.json", dir);
	campaign = json_object_from_file(path);
	if (!campaign) {
		snprintf(err, errlen, "%s: cannot read (is %s a results folder?)", path, dir);
		return -ENOENT;
	}
	json_object_object_get_ex(campaign, "campaign", &name);
	p.eng = engine_new(name && json_object_is_type(name, json_type_string) ? json_object_get_string(name) : "?",
			   on_verdict, NULL, &p);
	if (!p.eng) {
		json_object_put(campaign);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* the boards and their limits, as the live campaign's engine had them;
	 * a folder without a configuration gets the engine's defaults */
	{
		json_object *cfg = NULL;
		json_object *fv = NULL;
		char why[384];
		int major, minor;

		json_object_object_get_ex(campaign, "config", &cfg);
		json_object_object_get_ex(campaign, "format", &fv);
		/* the verdicts are recomputed in the folder's own format; a
		 * newer major one is refused, saying so */
		if (pc_format_read(fv, path, &major, &minor, err, errlen)) {
			json_object_put(campaign);
			engine_free(p.eng);
			return -EINVAL;
		}
		engine_set_format(p.eng, major);
		if (engine_configure(p.eng, cfg, why, sizeof(why))) {
			snprintf(err, errlen, "%s: %s", path, why);
			json_object_put(campaign);
			engine_free(p.eng);
			return -EINVAL;
		}
	}
	json_object_put(campaign);
	p.recomputed = json_object_new_object();
	p.recorded = json_object_new_object();
	snprintf(path, sizeof(path), "%s/events.jsonl", dir);
	ret = results_each_line(path, on_event, &p, &torn, err, errlen);
	if (!ret && torn)
		fprintf(out, "%s: ignoring a torn last line\n", path);
	snprintf(path, sizeof(path), "%s/verdicts.jsonl", dir);
	if (!ret && same_text(&p, path)) {
		r->recorded = r->matched = (unsigned)p.ntext;
		goto out;
	}
	if (!ret)
		ret = results_each_line(path, on_recorded, &p, &torn, err, errlen);
	if (!ret) {
		/* the verdicts by board and cycle, from their texts */
		json_object_object_foreach(p.recomputed, k0, idx) {
			int64_t i = json_object_get_int64(idx);
			json_object *v0 = i >= 0 && (size_t)i < p.ntext ? json_tokener_parse(p.text[i]) : NULL;

			if (!v0) {
				snprintf(err, errlen, "%s: a recomputed verdict does not read back", k0);
				ret = -EINVAL;
				break;
			}
			json_object_object_add(p.recomputed, k0, v0);
		}
	}
	if (!ret) {
		json_object_object_foreach(p.recomputed, k, v) {
			json_object *rec;
			if (!json_object_object_get_ex(p.recorded, k, &rec)) {
				fprintf(out, "%s: recomputed but not in verdicts.jsonl\n", k);
				r->missing++;
			} else if (!json_object_equal(v, rec)) {
				fprintf(out, "%s differs:\n  recorded:   %s\n", k,
					json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN));
				fprintf(out, "  recomputed: %s\n", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
				r->differ++;
			} else {
				r->matched++;
			}
		}
		json_object_object_foreach(p.recorded, k2, v2) {
			(void)v2;
			if (!json_object_object_get_ex(p.recomputed, k2, NULL)) {
				fprintf(out, "%s: in verdicts.jsonl but not recomputed from the events\n", k2);
				r->extra++;
			}
		}
	}
out:
	for (size_t i = 0; i < p.ntext; i++)
		free(p.text[i]);
	free(p.text);
	json_object_put(p.recomputed);
	json_object_put(p.recorded);
	engine_free(p.eng);
	return ret;
}

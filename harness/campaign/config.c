/*
 * config.c - campaign configuration: JSON in, a validated campaign_cfg out.
 * This file reads the document; config.h says where the rest lives.
 *
 * Nothing is half-accepted: the whole document is checked before the harness
 * touches a relay, and every error names the file and the key path, so a typo
 * in an overnight campaign is caught at `powercut check-config`, not at 3 am.
 *
 * "defaults" is merged into each board first (see cfg_merge), then each
 * merged board is validated and written out again with every default filled
 * in. That resolved document (c->root) is itself a valid configuration:
 * campaign.json records exactly what ran.
 */
#include "harness/campaign/config.h"
#include "harness/campaign/config_board.h"
#include "harness/campaign/config_read.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json.h"
#include "common/util.h"

#define CFG_MAX_FILE		(16u << 20)

/* ---- merging "defaults" into a board ---- */

/* The key that picks what the rest of a section means. */
static const char *selector_of(const char *section, const char **dflt)
{
	*dflt = NULL;
	if (strcmp(section, "relay") == 0)
		return "driver";
	if (strcmp(section, "device") == 0) {
		*dflt = "sim";
		return "backend";
	}
	if (strcmp(section, "cut") == 0) {
		*dflt = "random";
		return "at";
	}
	return NULL;
}

/*
 * Sections merge key by key, unless the board picks a different driver,
 * backend or cut kind than the defaults: then the defaults' keys would mean
 * nothing (or something else), so the board's section replaces them.
 */
static int same_kind(const char *section, json_object *d, json_object *b)
{
	const char *dflt, *sel = selector_of(section, &dflt);
	json_object *bs, *ds;
	const char *dv;

	if (!sel)
		return 1;
	bs = pc_jget(b, sel);
	if (!bs || !json_object_is_type(bs, json_type_string))
		return 1;	/* inherits it (or is wrong, which validation reports) */
	ds = pc_jget(d, sel);
	dv = ds && json_object_is_type(ds, json_type_string) ? json_object_get_string(ds) : dflt;
	return dv && strcmp(dv, json_object_get_string(bs)) == 0;
}

static json_object *cfg_merge(json_object *defaults, json_object *board)
{
	json_object *m = json_object_new_object();

	if (!m)
		return NULL;
	if (defaults) {
		json_object_object_foreach(defaults, key, dv) {
			json_object *bv = pc_jget(board, key);

			if (bv && json_object_is_type(dv, json_type_object) &&
			    json_object_is_type(bv, json_type_object) && same_kind(key, dv, bv)) {
				json_object *sec = json_object_new_object();

				if (!sec)
					goto fail;
				json_object_object_foreach(dv, k1, v1)
					cfg_put(sec, k1, json_object_get(v1));
				json_object_object_foreach(bv, k2, v2)
					cfg_put(sec, k2, json_object_get(v2));
				cfg_put(m, key, sec);
			} else {
				cfg_put(m, key, json_object_get(bv ? bv : dv));
			}
		}
	}
	json_object_object_foreach(board, key, bv) {
		if (!pc_jget(m, key))
			cfg_put(m, key, json_object_get(bv));
	}
	return m;
fail:
	json_object_put(m);
	return NULL;
}

/* ---- the document ---- */

static const char *const top_keys[] = { "campaign", "cycles", "seed", "listen", "key_file", "incomplete_infra_share",
					  "target", "results_min_free", "defaults", "boards", NULL };

/* A number within [lo, hi] (either end open when its flag says so). */
static int cfg_num(struct cfg_ctx *x, json_object *v, const char *path, double lo, int lo_open, double hi,
		   int hi_open, const char *what, double *out)
{
	double d;

	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return cfg_fail(x, path, "expected a number (%s), got %s", what, cfg_jtype(v));
	d = json_object_get_double(v);
	if (!(lo_open ? d > lo : d >= lo) || !(hi_open ? d < hi : d <= hi))
		return cfg_fail(x, path, "%g is out of range %s%g..%g%s (%s)", d, lo_open ? "(" : "", lo, hi,
				hi_open ? ", exclusive)" : lo_open ? ")" : "", what);
	*out = d;
	return 0;
}

/* "target": {"rate": 0.001, "confidence": 0.95}: a board stops once each of
 * its modes shows its per-cut violation rate below rate at confidence. */
static int cfg_target(struct cfg_ctx *x, json_object *t, struct campaign_cfg *c)
{
	static const char *const keys[] = { "rate", "confidence", NULL };
	json_object *v;
	int rc;

	if (!json_object_is_type(t, json_type_object))
		return cfg_fail(x, "target", "expected {\"rate\": R, \"confidence\": C}, got %s", cfg_jtype(t));
	if ((rc = cfg_check_keys(x, t, "target", keys)))
		return rc;
	if (!(v = pc_jget(t, "rate")))
		return cfg_fail(x, "target", "missing required key 'rate' (the per-cut violation rate to show "
				"the device below, e.g. 0.001 for 0.1%%)");
	if ((rc = cfg_num(x, v, "target.rate", CFG_TARGET_RATE_MIN, 0, 1.0, 1,
			  "a share of the cuts: 0.001 is 0.1%", &c->target_rate)))
		return rc;
	c->target_confidence = CFG_DEFAULT_TARGET_CONF;
	if ((v = pc_jget(t, "confidence")) &&
	    (rc = cfg_num(x, v, "target.confidence", CFG_TARGET_CONF_MIN, 0, CFG_TARGET_CONF_MAX, 0,
			  "0.95 is 95%", &c->target_confidence)))
		return rc;
	return 0;
}

/* "results_min_free": bytes, an integer or "256M". */
static int cfg_min_free(struct cfg_ctx *x, json_object *v, uint64_t *out)
{
	if (json_object_is_type(v, json_type_string)) {
		if (pc_parse_u64(json_object_get_string(v), 1, out) != 0)
			return cfg_fail(x, "results_min_free", "expected bytes, as an integer or a string like "
					"\"256M\", got '%s'", json_object_get_string(v));
	} else if (json_object_is_type(v, json_type_int)) {
		int rc = cfg_u64(x, v, "results_min_free", 0, CFG_MAX_MIN_FREE, out);
		if (rc)
			return rc;
	} else {
		return cfg_fail(x, "results_min_free", "expected bytes, as an integer or a string like \"256M\", got %s",
				cfg_jtype(v));
	}
	if (*out > CFG_MAX_MIN_FREE)
		return cfg_fail(x, "results_min_free", "%" PRIu64 " bytes is more than 1T: a typo?", *out);
	return 0;
}

void config_set_target(struct campaign_cfg *c, double rate, double confidence)
{
	json_object *t = json_object_new_object();

	c->target_rate = rate;
	c->target_confidence = confidence;
	cfg_put(t, "rate", json_object_new_double(rate));
	cfg_put(t, "confidence", json_object_new_double(confidence));
	if (c->root)
		cfg_put(c->root, "target", t);
	else
		json_object_put(t);
}

int config_target_parse(const char *s, double *rate, double *confidence, char *err, size_t errlen)
{
	char *end;
	double r, c = CFG_DEFAULT_TARGET_CONF;

	errno = 0;
	r = strtod(s, &end);
	if (end == s || errno || (*end && *end != ','))
		goto bad;
	if (*end == ',') {
		const char *cs = end + 1;

		c = strtod(cs, &end);
		if (end == cs || errno || *end)
			goto bad;
	}
	if (!(r >= CFG_TARGET_RATE_MIN && r < 1.0)) {
		return pc_fail(err, errlen, -EINVAL, "target rate %g is out of range %g..1 (exclusive): a share of the cuts, 0.001 "
			 "is 0.1%%", r, CFG_TARGET_RATE_MIN);
	}
	if (!(c >= CFG_TARGET_CONF_MIN && c <= CFG_TARGET_CONF_MAX)) {
		return pc_fail(err, errlen, -EINVAL, "target confidence %g is out of range %g..%g (0.95 is 95%%)", c,
			 CFG_TARGET_CONF_MIN, CFG_TARGET_CONF_MAX);
	}
	*rate = r;
	*confidence = c;
	return 0;
bad:
	return pc_fail(err, errlen, -EINVAL, "'%s': expected RATE or RATE,CONFIDENCE (e.g. 0.001 or 0.001,0.95)", s);
}

static int cfg_defaults(struct cfg_ctx *x, json_object *d)
{
	if (!json_object_is_type(d, json_type_object))
		return cfg_fail(x, "defaults", "expected an object of board keys, got %s", cfg_jtype(d));
	if (pc_jget(d, "name"))
		return cfg_fail(x, "defaults", "'name' cannot have a default: every board needs its own");
	return cfg_check_keys(x, d, "defaults", cfg_board_keys);
}

static int cfg_boards(struct cfg_ctx *x, json_object *arr, struct campaign_cfg *c, json_object *outarr)
{
	char path[160];
	size_t n;
	int rc;

	if (!json_object_is_type(arr, json_type_array))
		return cfg_fail(x, "boards", "expected an array of board objects, got %s", cfg_jtype(arr));
	n = json_object_array_length(arr);
	if (n < 1 || n > CFG_MAX_BOARDS)
		return cfg_fail(x, "boards", "expected 1 to %u boards, got %zu", CFG_MAX_BOARDS, n);
	c->boards = calloc(n, sizeof(*c->boards));
	if (!c->boards)
		return cfg_fail(x, NULL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_object *b = json_object_array_get_idx(arr, i), *out;

		x->bi = (unsigned)i;
		x->merged = NULL;
		if (!json_object_is_type(b, json_type_object))
			return cfg_fail(x, cfg_bpath(x, path, sizeof(path), NULL, NULL), "expected an object, got %s",
					cfg_jtype(b));
		out = json_object_new_object();
		x->merged = cfg_merge(x->defaults, b);
		if (!out || !x->merged) {
			json_object_put(out);
			return cfg_fail(x, NULL, "out of memory");
		}
		json_object_array_add(outarr, out);
		c->nboards = (unsigned)i + 1;
		rc = cfg_board(x, &c->boards[i], out);
		json_object_put(x->merged);
		x->merged = NULL;
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(c->boards[j].name, c->boards[i].name) == 0)
				return cfg_fail(x, cfg_bpath(x, path, sizeof(path), "name", NULL),
						"'%s' is already the name of boards[%zu]: names must be unique",
						c->boards[i].name, j);
	}
	return 0;
}

/*
 * key_file as an absolute path into out: a relative one is relative to the
 * folder of the configuration file (file), never to the working directory,
 * so check-config, run and relay by hand from anywhere name one key. 0, or
 * -ENAMETOOLONG.
 */
static int cfg_key_path(const char *file, const char *kf, char *out, size_t len)
{
	char dir[PATH_MAX] = "";
	const char *slash = strrchr(file, '/');
	int n;

	if (slash && slash != file)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - file), file);
	if (kf[0] == '/')
		n = snprintf(out, len, "%s", kf);
	else if (slash == file)
		n = snprintf(out, len, "/%s", kf);		/* a configuration in / */
	else if (dir[0] == '/')
		n = snprintf(out, len, "%s/%s", dir, kf);
	else {
		char cwd[PATH_MAX] = ".";

		if (!getcwd(cwd, sizeof(cwd)))
			pc_strlcpy(cwd, ".", sizeof(cwd));
		n = snprintf(out, len, "%s%s%s/%s", cwd, dir[0] ? "/" : "", dir, kf);
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* "listen" (host:port, default 127.0.0.1:0) and "key_file", into c. */
static int cfg_top_listen(struct cfg_ctx *x, json_object *doc, struct campaign_cfg *c)
{
	const char *listen = "127.0.0.1:0";
	json_object *v;
	char host[128];
	uint16_t port;
	int rc;

	if ((v = pc_jget(doc, "listen"))) {
		if ((rc = cfg_str(x, v, "listen", &listen)))
			return rc;
		if (strlen(listen) >= sizeof(c->listen) ||
		    pc_parse_hostport(listen, host, sizeof(host), &port) != 0)
			return cfg_fail(x, "listen", "expected \"host:port\" (port 0 picks a free one), got '%s'",
					listen);
	}
	pc_strlcpy(c->listen, listen, sizeof(c->listen));
	if ((v = pc_jget(doc, "key_file"))) {
		const char *kf;
		if ((rc = cfg_str(x, v, "key_file", &kf)))
			return rc;
		if (!kf[0] || strlen(kf) >= sizeof(c->key_file))
			return cfg_fail(x, "key_file", "expected the path of the campaign's key file");
		if (cfg_key_path(x->file, kf, c->key_file, sizeof(c->key_file)))
			return cfg_fail(x, "key_file", "'%s' relative to the configuration's folder: the path is "
					"too long", kf);
	}
	return 0;
}

static int cfg_infra_share(struct cfg_ctx *x, json_object *share, struct campaign_cfg *c)
{
	/* a share, not a percentage: 10 for 10% is the typo to catch */
	if (!json_object_is_type(share, json_type_double) && !json_object_is_type(share, json_type_int))
		return cfg_fail(x, "incomplete_infra_share", "expected a number from 0 to 1 (the share of "
				"a device's cycles that may be INFRA_ERROR: 0.1 is 10%%), got %s", cfg_jtype(share));
	c->incomplete_infra_share = json_object_get_double(share);
	if (!(c->incomplete_infra_share >= 0.0 && c->incomplete_infra_share <= 1.0))
		return cfg_fail(x, "incomplete_infra_share", "%g is out of range 0..1 (a share of the cycles: "
				"0.1 is 10%%)", c->incomplete_infra_share);
	return 0;
}

/*
 * The resolved top of campaign.json into c->root (which owns it): the
 * campaign's keys as read; its "boards" array, still empty, returned for
 * cfg_boards to fill; NULL when out of memory.
 */
static json_object *cfg_top_resolved(json_object *doc, struct campaign_cfg *c, json_object *share)
{
	json_object *root = json_object_new_object(), *boards = json_object_new_array();

	if (!root || !boards) {
		json_object_put(root);
		json_object_put(boards);
		return NULL;
	}
	c->root = root;
	cfg_put(root, "campaign", json_object_new_string(c->name));
	cfg_put(root, "cycles", json_object_new_int64(c->cycles));
	cfg_put(root, "seed", json_object_new_uint64(c->seed));
	cfg_put(root, "listen", json_object_new_string(c->listen));
	/* only when given, resolved: campaign.json names the file the run used */
	if (c->key_file[0])
		cfg_put(root, "key_file", json_object_new_string(c->key_file));
	/* only when given, as the user wrote it ("0.05"): a campaign.json from
	 * before the key still resumes, and the report applies the same default */
	if (share)
		cfg_put(root, "incomplete_infra_share", cfg_copy(share));
	/* likewise; status reads the target from campaign.json */
	if (pc_jget(doc, "target")) {
		json_object *t = json_object_new_object(), *tv = pc_jget(doc, "target");

		cfg_put(t, "rate", cfg_copy(pc_jget(tv, "rate")));
		cfg_put(t, "confidence", pc_jget(tv, "confidence") ? cfg_copy(pc_jget(tv, "confidence")) :
			json_object_new_double(c->target_confidence));
		cfg_put(root, "target", t);
	}
	if (pc_jget(doc, "results_min_free"))
		cfg_put(root, "results_min_free", json_object_new_uint64(c->min_free));
	cfg_put(root, "boards", boards);
	return boards;
}

static int cfg_top(struct cfg_ctx *x, json_object *doc, struct campaign_cfg *c)
{
	json_object *v, *boards, *share = NULL;
	int rc;

	if (!json_object_is_type(doc, json_type_object))
		return cfg_fail(x, NULL, "expected a JSON object at the top, got %s", cfg_jtype(doc));
	if ((rc = cfg_check_keys(x, doc, NULL, top_keys)))
		return rc;
	if (!(v = pc_jget(doc, "campaign")))
		return cfg_fail(x, NULL, "missing required key 'campaign' (the campaign's name)");
	if ((rc = cfg_name(x, v, "campaign", c->name, sizeof(c->name))))
		return rc;
	if (!(v = pc_jget(doc, "cycles")))
		return cfg_fail(x, NULL, "missing required key 'cycles' (power cycles to run, 1..%u)",
				CFG_MAX_CYCLES);
	if ((rc = cfg_u32(x, v, "cycles", 1, CFG_MAX_CYCLES, &c->cycles)))
		return rc;
	c->seed = 1;
	if ((v = pc_jget(doc, "seed")) && (rc = cfg_u64(x, v, "seed", 0, UINT64_MAX, &c->seed)))
		return rc;
	if ((rc = cfg_top_listen(x, doc, c)))
		return rc;
	c->incomplete_infra_share = CFG_DEFAULT_INCOMPLETE_INFRA_SHARE;
	if ((share = pc_jget(doc, "incomplete_infra_share")) && (rc = cfg_infra_share(x, share, c)))
		return rc;
	if ((v = pc_jget(doc, "target")) && (rc = cfg_target(x, v, c)))
		return rc;
	c->min_free = CFG_DEFAULT_MIN_FREE;
	if ((v = pc_jget(doc, "results_min_free")) && (rc = cfg_min_free(x, v, &c->min_free)))
		return rc;
	if ((x->defaults = pc_jget(doc, "defaults")) && (rc = cfg_defaults(x, x->defaults)))
		return rc;
	if (!(v = pc_jget(doc, "boards")))
		return cfg_fail(x, NULL, "missing required key 'boards' (an array of 1 to %u boards)",
				CFG_MAX_BOARDS);
	if (!(boards = cfg_top_resolved(doc, c, share)))
		return cfg_fail(x, NULL, "out of memory");
	return cfg_boards(x, v, c, boards);
}

static void offset_to_linecol(const char *text, size_t off, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && text[i]; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

__attribute__((format(printf, 4, 5)))
static int cfg_syntax(struct cfg_ctx *x, const char *text, size_t off, const char *fmt, ...)
{
	unsigned line, col;
	va_list ap;
	int n;

	offset_to_linecol(text, off, &line, &col);
	n = snprintf(x->err, x->errlen, "%s:%u:%u: JSON syntax error: ", x->file, line, col);
	if (n >= 0 && (size_t)n < x->errlen) {
		va_start(ap, fmt);
		vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* The offset of an integer literal above 2^64 - 1 in a JSON text that
 * parsed, or (size_t)-1: json-c saturates one silently. */
static size_t big_int(const char *text)
{
	static const char max[] = "18446744073709551615";
	int in_str = 0;

	for (size_t i = 0; text[i]; i++) {
		size_t j, n;

		if (in_str) {
			if (text[i] == '\\' && text[i + 1])
				i++;
			else if (text[i] == '"')
				in_str = 0;
			continue;
		}
		if (text[i] == '"') {
			in_str = 1;
			continue;
		}
		if (text[i] < '0' || text[i] > '9')
			continue;
		for (j = i; text[j] >= '0' && text[j] <= '9'; j++)
			;
		n = j - i;
		/* an integer: no fraction or exponent follows, none came before */
		if (text[j] != '.' && text[j] != 'e' && text[j] != 'E' &&
		    (n > sizeof(max) - 1 || (n == sizeof(max) - 1 && memcmp(text + i, max, n) > 0)))
			return i > 0 && text[i - 1] == '-' ? i - 1 : i;
		i = j;
		while (text[i] && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.' || text[i] == 'e' ||
				   text[i] == 'E' || text[i] == '+' || text[i] == '-'))
			i++;
		i--;
	}
	return (size_t)-1;
}

static int cfg_json(struct cfg_ctx *x, const char *text, json_object **out)
{
	size_t len = strlen(text), end;
	struct json_tokener *tok;
	enum json_tokener_error jerr;
	json_object *doc;

	*out = NULL;
	if (text[strspn(text, " \t\r\n")] == 0)
		return cfg_fail(x, NULL, "empty file: expected a JSON object with \"campaign\", \"cycles\" "
				"and \"boards\"");
	if (len > CFG_MAX_FILE)
		return cfg_fail(x, NULL, "%zu bytes is too large for a configuration", len);
	tok = json_tokener_new();
	if (!tok)
		return cfg_fail(x, NULL, "out of memory");
	/* trailing data is checked below, to say so rather than "unexpected character" */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
	doc = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!doc) {
		if (jerr == json_tokener_continue || jerr == json_tokener_success)
			return cfg_syntax(x, text, len, "unexpected end of file (unclosed object, array or string?)");
		return cfg_syntax(x, text, end, "%s", json_tokener_error_desc(jerr));
	}
	end += strspn(text + end, " \t\r\n");
	if (text[end]) {
		json_object_put(doc);
		return cfg_syntax(x, text, end, "trailing data after the JSON document");
	}
	if ((end = big_int(text)) != (size_t)-1) {
		json_object_put(doc);
		return cfg_syntax(x, text, end, "%.*s is past the largest integer, 18446744073709551615",
				  (int)(strspn(text + end + 1, "0123456789") + 1), text + end);
	}
	*out = doc;
	return 0;
}

int config_parse(const char *text, const char *name, struct campaign_cfg *c, char *err, size_t errlen)
{
	struct cfg_ctx x = { .file = name, .err = err, .errlen = errlen };
	json_object *doc = NULL;
	int rc;

	memset(c, 0, sizeof(*c));
	if (errlen)
		err[0] = 0;
	pc_strlcpy(c->path, name, sizeof(c->path));
	rc = cfg_json(&x, text, &doc);
	if (rc == 0)
		rc = cfg_top(&x, doc, c);
	json_object_put(doc);
	if (rc)
		config_free(c);
	return rc;
}

int config_load(const char *path, struct campaign_cfg *c, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd, rc;

	memset(c, 0, sizeof(*c));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0)
		goto fail_errno;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		goto fail_errno;
	}
	if (st.st_size > CFG_MAX_FILE) {
		rc = pc_fail(err, errlen, -EFBIG, "%s: %lld bytes is too large for a configuration", path,
			 (long long)st.st_size);
		goto out;
	}
	buf = malloc(CFG_MAX_FILE + 1);
	if (!buf)
		goto fail_errno;
	/* read to EOF rather than trusting st_size: it may be a pipe */
	while ((n = read(fd, buf + len, CFG_MAX_FILE + 1 - len)) > 0 && len + (size_t)n <= CFG_MAX_FILE)
		len += (size_t)n;
	if (n < 0)
		goto fail_errno;
	if (n > 0) {
		rc = pc_fail(err, errlen, -EFBIG, "%s: too large for a configuration", path);
		goto out;
	}
	buf[len] = 0;
	if (strlen(buf) != len) {
		rc = pc_fail(err, errlen, -EINVAL, "%s: contains a NUL byte: not a text file", path);
		goto out;
	}
	rc = config_parse(buf, path, c, err, errlen);
	goto out;
fail_errno:
	rc = -errno;
	snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}

void config_free(struct campaign_cfg *c)
{
	if (!c)
		return;
	json_object_put(c->root);
	free(c->boards);
	memset(c, 0, sizeof(*c));
}

/*
 * config_resume.c - what a resumed campaign may change (config.h,
 * config_resume_diff; docs/config.md#resuming-a-campaign).
 *
 * A campaign is a test of one device: its identity (the boards, each
 * device, region, record size, modes, pattern, cut plan, policy, verify,
 * audit, the seed) is fixed by its first run, since every verdict already
 * on record was judged against it. How the lab runs it is not: timeouts,
 * off time, retries, the relay's address and commands, the link and the
 * console, where agents connect, the key file and when to stop may change
 * from one run to the next. The two resolved configurations (campaign.json's
 * "config" and this run's) are compared leaf by leaf (objects descended,
 * arrays and scalars compared whole); "cycles" never (--cycles may grow a
 * campaign).
 */
#include "harness/campaign/config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"

#define RD_DEPTH	8	/* the deepest key path a configuration has */
#define RD_VAL_MAX	120	/* a value quoted in a refusal, at most */

/* Top-level keys a resume may change. */
static const char *const top_op[] = { "listen", "key_file", "target", "results_min_free", NULL };
/* Board keys a resume may change, all of their sub-keys too ("relay" apart). */
static const char *const board_op[] = { "boot_timeout_ms", "boot_retries", "verify_timeout_ms", "work_timeout_ms",
					"off_ms", "link", "stop", NULL };
/* A virtual board's relay keys that say how QEMU runs, not what it holds
 * (the disk image, the disk's kind and cache, the kernel are the device). */
static const char *const qemu_op[] = { "timeout_ms", "accel", "qemu", "console", "memory_mb", NULL };

struct rdiff {
	const char *file;		/* this run's configuration file, for messages */
	const char *board;		/* the board being compared, NULL at the top */
	const char *driver;		/* its relay's driver */
	const char *comp[RD_DEPTH];	/* the key path below the board (or the top) */
	unsigned depth;
	unsigned bi;
	int report;			/* 0: look for a refusal; 1: report the changes */
	config_change_fn fn;
	void *arg;
	char *err;
	size_t errlen;
};

static int in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return 1;
	return 0;
}

/* May the leaf at d->comp change on resume? */
static int rd_operational(const struct rdiff *d)
{
	if (!d->board)
		return in_list(d->comp[0], top_op);
	if (strcmp(d->comp[0], "relay"))
		return in_list(d->comp[0], board_op);
	if (d->depth < 2 || !strcmp(d->comp[1], "driver"))
		return 0;
	return strcmp(d->driver, "qemu") || in_list(d->comp[1], qemu_op);
}

static void rd_path(const struct rdiff *d, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	if (d->board)
		n = (size_t)snprintf(buf, len, "boards[%u].", d->bi);
	for (unsigned i = 0; i < d->depth && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "." : "", d->comp[i]);
}

static void rd_val(json_object *v, char *buf, size_t len)
{
	if (!v) {
		snprintf(buf, len, "not set");
		return;
	}
	snprintf(buf, len, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
								     JSON_C_TO_STRING_NOSLASHESCAPE));
	if (strlen(buf) >= len - 1 && len > 4)
		memcpy(buf + len - 4, "...", 4);
}

/* A leaf differs: refuse it (pass 0) or report it (pass 1). -EEXIST when refused. */
static int rd_leaf(struct rdiff *d, json_object *a, json_object *b)
{
	char path[256], va[RD_VAL_MAX], vb[RD_VAL_MAX];
	int op = rd_operational(d);

	rd_path(d, path, sizeof(path));
	if (d->report) {
		if (op && d->fn)
			d->fn(path, d->board, a, b, d->arg);
		return 0;
	}
	if (op)
		return 0;
	rd_val(a, va, sizeof(va));
	rd_val(b, vb, sizeof(vb));
	snprintf(d->err, d->errlen, "%s: %s on record, %s in %s. That is part of what the campaign tests "
		 "(its boards, devices, record size, modes, pattern, cut plan, policy, verification, seed), "
		 "which a resume cannot change: give it back its value, or choose another --results folder "
		 "(a resume may change the timeouts, off_ms, boot_retries, the relay's address and commands, "
		 "the link and console, listen, key_file and when to stop: docs/config.md#resuming-a-campaign)",
		 path, va, vb, d->file);
	return -EEXIST;
}

/* Compare a and b (either may be NULL) below d->comp. */
static int rd_walk(struct rdiff *d, json_object *a, json_object *b)
{
	int rc = 0;

	if (json_object_equal(a, b))
		return 0;
	if (d->depth >= RD_DEPTH || !a || !b || !json_object_is_type(a, json_type_object) ||
	    !json_object_is_type(b, json_type_object))
		return rd_leaf(d, a, b);
	json_object_object_foreach(a, ka, va) {
		json_object *vb = NULL;

		json_object_object_get_ex(b, ka, &vb);
		d->comp[d->depth++] = ka;
		rc = rd_walk(d, va, vb);
		d->depth--;
		if (rc)
			return rc;
	}
	json_object_object_foreach(b, kb, vb2) {
		if (json_object_object_get_ex(a, kb, NULL))
			continue;
		d->comp[d->depth++] = kb;
		rc = rd_walk(d, NULL, vb2);
		d->depth--;
		if (rc)
			return rc;
	}
	return 0;
}

/* Each key of two objects, a's first, then those only b has; skip skipped. */
static int rd_keys(struct rdiff *d, json_object *a, json_object *b, const char *skip)
{
	int rc;

	json_object_object_foreach(a, ka, va) {
		json_object *vb = NULL;

		if (skip && !strcmp(ka, skip))
			continue;
		json_object_object_get_ex(b, ka, &vb);
		d->comp[0] = ka;
		d->depth = 1;
		if ((rc = rd_walk(d, va, vb)))
			return rc;
	}
	json_object_object_foreach(b, kb, vb2) {
		if ((skip && !strcmp(kb, skip)) || json_object_object_get_ex(a, kb, NULL))
			continue;
		d->comp[0] = kb;
		d->depth = 1;
		if ((rc = rd_walk(d, NULL, vb2)))
			return rc;
	}
	return 0;
}

static const char *rd_str(json_object *o, const char *k1, const char *k2)
{
	return k2 ? pc_jstr(pc_jget(o, k1), k2, "") : pc_jstr(o, k1, "");
}

/* The boards, one by one: the same number, in the same order, with the same names. */
static int rd_boards(struct rdiff *d, json_object *ba, json_object *bb)
{
	size_t n = json_object_array_length(ba), m = json_object_array_length(bb);
	int rc;

	if (n != m) {
		snprintf(d->err, d->errlen, "boards: %zu on record, %zu in %s. The boards are part of what the "
			 "campaign tests, which a resume cannot change: choose another --results folder", n, m,
			 d->file);
		return -EEXIST;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *a = json_object_array_get_idx(ba, i), *b = json_object_array_get_idx(bb, i);
		const char *da = rd_str(a, "relay", "driver"), *db = rd_str(b, "relay", "driver");

		d->bi = (unsigned)i;
		d->board = rd_str(a, "name", NULL);
		d->driver = da;
		d->comp[0] = "name";
		d->depth = 1;
		if (strcmp(d->board, rd_str(b, "name", NULL)) && (rc = rd_leaf(d, json_object_object_get(a, "name"),
									       json_object_object_get(b, "name"))))
			return rc;
		d->comp[0] = "relay";
		d->comp[1] = "driver";
		d->depth = 2;
		if (strcmp(da, db) && (rc = rd_leaf(d, json_object_object_get(json_object_object_get(a, "relay"), "driver"),
						  json_object_object_get(json_object_object_get(b, "relay"), "driver"))))
			return rc;
		if ((rc = rd_keys(d, a, b, "name")))
			return rc;
	}
	d->board = NULL;
	return 0;
}

static int rd_pass(struct rdiff *d, json_object *old, json_object *cur)
{
	json_object *ba = NULL, *bb = NULL;
	int rc;

	d->board = NULL;
	json_object_object_get_ex(old, "boards", &ba);
	json_object_object_get_ex(cur, "boards", &bb);
	if (!json_object_is_type(ba, json_type_array) || !json_object_is_type(bb, json_type_array)) {
		snprintf(d->err, d->errlen, "the configuration on record has no boards");
		return -EEXIST;
	}
	if ((rc = rd_keys(d, old, cur, "boards")))
		return rc;
	return rd_boards(d, ba, bb);
}

int config_resume_diff(json_object *old, json_object *cur, const char *file, config_change_fn fn, void *arg,
		       char *err, size_t errlen)
{
	struct rdiff d = { .file = file, .fn = fn, .arg = arg, .err = err, .errlen = errlen };
	json_object *a = NULL, *b = NULL;
	int rc;

	if (!json_object_is_type(old, json_type_object) || !json_object_is_type(cur, json_type_object)) {
		return pc_fail(err, errlen, -EEXIST, "the configuration on record is not an object");
	}
	/* --cycles may grow a campaign: never compared */
	json_object_deep_copy(old, &a, NULL);
	json_object_deep_copy(cur, &b, NULL);
	if (!a || !b) {
		json_object_put(a);
		json_object_put(b);
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	}
	json_object_object_del(a, "cycles");
	json_object_object_del(b, "cycles");
	rc = rd_pass(&d, a, b);
	if (!rc) {
		d.report = 1;
		rc = rd_pass(&d, a, b);
	}
	json_object_put(a);
	json_object_put(b);
	return rc;
}

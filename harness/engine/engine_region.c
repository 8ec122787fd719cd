/*
 * engine_region.c - what HELLO says: the region's geometry checked against the
 * board's configuration and adopted, the device's identity and superblocks
 * watched, and the region's continuity judged (docs/verdicts.md).
 */
#include "harness/engine/engine_board.h"
#include "harness/engine/engine_carry.h"
#include "harness/engine/engine_region.h"
#include "harness/engine/engine_state.h"
#include "harness/engine/engine_verdict.h"
#include "harness/engine/engine_wcycle.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/json.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"

/*
 * What HELLO says about the device itself, against what it said before: a
 * superblock copy that went bad, or an identity (CID, serial, size) that
 * changed, is damage outside the records -- reported once, as collateral.
 */
static void check_device(struct engine *e, struct board *b, json_object *hello)
{
	static const char *const idkeys[] = { "cid", "serial", "size", "manfid", "name" };
	json_object *sb, *old_sb = NULL, *dev, *old_dev = NULL, *v, *ov;
	const char *region_err = pc_jstr(hello, "region_error", NULL);

	if (!b->hello)
		return;
	json_object_object_get_ex(b->hello, "superblock", &old_sb);
	if (json_object_object_get_ex(hello, "superblock", &sb) && old_sb) {
		for (int c = 0; c < 2; c++) {
			const char *k = c ? "b" : "a", *now = pc_jstr(sb, k, "ok"), *was = pc_jstr(old_sb, k, "ok");
			if (!strcmp(was, "ok") && strcmp(now, "ok")) {
				json_object *f = json_object_new_object();
				json_object_object_add(f, "class", json_object_new_string(pc_class_names[PC_CLS_COLLATERAL]));
				json_object_object_add(f, "what", json_object_new_string("superblock"));
				json_object_object_add(f, "copy", json_object_new_string(c ? "B" : "A"));
				json_object_object_add(f, "detail", json_object_new_string(now));
				eng_carry_device(b, f);
				eng_note(e, b, "superblock copy %s is gone: %s", c ? "B" : "A", now);
			}
		}
	}
	if (region_err && !pc_jstr(b->hello, "region_error", NULL))
		eng_note(e, b, "the agent refuses the region (%s): no scan, no writes", region_err);
	if (json_object_object_get_ex(hello, "device", &dev) && json_object_object_get_ex(b->hello, "device", &old_dev)) {
		for (size_t i = 0; i < PC_ARRAY_SIZE(idkeys); i++) {
			if (!json_object_object_get_ex(old_dev, idkeys[i], &ov) ||
			    !json_object_object_get_ex(dev, idkeys[i], &v) || json_object_equal(v, ov))
				continue;
			json_object *f = json_object_new_object();
			json_object_object_add(f, "class", json_object_new_string(pc_class_names[PC_CLS_COLLATERAL]));
			json_object_object_add(f, "what", json_object_new_string("identity"));
			json_object_object_add(f, "field", json_object_new_string(idkeys[i]));
			json_object_object_add(f, "before", json_object_get(ov));
			json_object_object_add(f, "after", json_object_get(v));
			eng_carry_device(b, f);
			eng_note(e, b, "device %s changed from %s to %s", idkeys[i], json_object_get_string(ov),
			     json_object_get_string(v));
		}
	}
}

static void remember_device(struct board *b)
{
	json_object *d;

	/* a new HELLO: what verdicts say of the device is built anew */
	json_object_put(b->dev_cache);
	json_object_put(b->queue_cache);
	b->dev_cache = b->queue_cache = NULL;
	if (json_object_object_get_ex(b->hello, "device", &d) && json_object_is_type(d, json_type_object) &&
	    json_object_object_length(d)) {
		json_object_put(b->last_device);
		b->last_device = json_object_get(d);
	}
}

/* ---- the region's continuity ---- */

/* 0, or -EINVAL with why when o is not a region description (hostile
 * input: every field checked; the one parse of HELLO's region and of each
 * superblock copy). */
static int sbrec_parse(json_object *o, struct sbrec *r, char *why, size_t whylen)
{
	const char *u;

	memset(r, 0, sizeof(*r));
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(why, whylen, "expected an object");
		return -EINVAL;
	}
	if (pc_json_str(o, "uuid", &u, why, whylen) ||
	    pc_json_u64(o, "bytes", UINT64_MAX, &r->bytes, why, whylen) ||
	    pc_json_u64(o, "record_size", PC_MAX_RECORD_SIZE, &r->record_size, why, whylen) ||
	    pc_json_u64(o, "slots", UINT32_MAX, &r->slots, why, whylen) ||
	    pc_json_u64(o, "seed", UINT64_MAX, &r->seed, why, whylen))
		return -EINVAL;
	if (strlen(u) != 36) {
		snprintf(why, whylen, "field \"uuid\": expected 36 characters");
		return -EINVAL;
	}
	memcpy(r->uuid, u, 37);
	if (json_object_object_get_ex(o, "created", NULL)) {
		if (pc_json_u64(o, "created", UINT64_MAX, &r->created, why, whylen))
			return -EINVAL;
		r->has_created = 1;
	}
	return 0;
}

/* {"field": {"before": .., "after": ..}, ...} for every field in which b
 * differs from a (a creation time only when both say one), or NULL. */
static json_object *sbrec_changes(const struct sbrec *a, const struct sbrec *b)
{
	static const char *const names[] = { "bytes", "record_size", "slots", "seed", "created" };
	const uint64_t va[] = { a->bytes, a->record_size, a->slots, a->seed, a->created };
	const uint64_t vb[] = { b->bytes, b->record_size, b->slots, b->seed, b->created };
	json_object *ch = NULL, *pair;

	if (strcmp(a->uuid, b->uuid)) {
		ch = json_object_new_object();
		pair = json_object_new_object();
		json_object_object_add(pair, "before", json_object_new_string(a->uuid));
		json_object_object_add(pair, "after", json_object_new_string(b->uuid));
		json_object_object_add(ch, "uuid", pair);
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(names); i++) {
		if (va[i] == vb[i] || (i == 4 && !(a->has_created && b->has_created)))
			continue;
		if (!ch)
			ch = json_object_new_object();
		pair = json_object_new_object();
		json_object_object_add(pair, "before", json_object_new_uint64(va[i]));
		json_object_object_add(pair, "after", json_object_new_uint64(vb[i]));
		json_object_object_add(ch, names[i], pair);
	}
	return ch;
}

/* A device-level finding about the region (docs/design.md section 6), for the next verdict. */
static void region_finding(struct engine *e, struct board *b, const char *what, const char *copy,
			   json_object *changes, const char *detail)
{
	json_object *f = json_object_new_object();

	json_object_object_add(f, "class", json_object_new_string(pc_class_names[PC_CLS_COLLATERAL]));
	json_object_object_add(f, "subject", json_object_new_string("device"));
	json_object_object_add(f, "what", json_object_new_string(what));
	if (copy)
		json_object_object_add(f, "copy", json_object_new_string(copy));
	if (changes)
		json_object_object_add(f, "changes", json_object_get(changes));
	json_object_object_add(f, "detail", json_object_new_string(detail));
	eng_carry_device(b, f);
	eng_note(e, b, "%s%s%s: %s", what, copy ? " of copy " : "", copy ? copy : "",
	     changes ? json_object_to_json_string_ext(changes, JSON_C_TO_STRING_PLAIN) : detail);
}

/*
 * What this HELLO says about the region against the engine's record of it:
 * both superblock copies rewritten alike (a new UUID: the region was
 * replaced, by a re-flash, a new prepare, another campaign, a lost medium;
 * the same UUID: its metadata rewritten), or one copy that differs from the
 * record in any field, creation time included. Each is reported once, when
 * it appears; a campaign that goes on does so against the new region only
 * after the finding. now: the region the agent uses (NULL: none).
 */
static void check_region(struct engine *e, struct board *b, json_object *hello, const struct sbrec *now)
{
	json_object *sb, *copies = NULL, *c, *ch[2] = { NULL, NULL };
	struct sbrec cr[2];
	int have[2] = { 0, 0 };
	char sig[2][512] = { "", "" };

	if (!b->have_rec)
		return;
	if (json_object_object_get_ex(hello, "superblock", &sb) && json_object_is_type(sb, json_type_object))
		json_object_object_get_ex(sb, "copies", &copies);
	if (copies && json_object_is_type(copies, json_type_object)) {
		for (int k = 0; k < 2; k++) {
			if (!json_object_object_get_ex(copies, k ? "b" : "a", &c))
				continue;
			char why[160];

			if (sbrec_parse(c, &cr[k], why, sizeof(why))) {
				snprintf(sig[k], sizeof(sig[k]), "unreadable");
				continue;
			}
			have[k] = 1;
			ch[k] = sbrec_changes(&b->rec, &cr[k]);
			if (ch[k])
				pc_strlcpy(sig[k], json_object_to_json_string_ext(ch[k], JSON_C_TO_STRING_PLAIN),
					   sizeof(sig[k]));
		}
	} else if (now) {
		/* an agent that does not show its copies: the region it uses */
		cr[0] = cr[1] = *now;
		have[0] = have[1] = 1;
		ch[0] = sbrec_changes(&b->rec, now);
		ch[1] = ch[0] ? json_object_get(ch[0]) : NULL;
	}
	if (have[0] && have[1] && ch[0] && ch[1] && json_object_equal(ch[0], ch[1])) {
		/* both copies changed alike: the region is another one now */
		int replaced = json_object_object_get_ex(ch[0], "uuid", NULL);
		region_finding(e, b, replaced ? "region_replaced" : "region_changed", NULL, ch[0], replaced ?
			       "both superblock copies name another region: the one this campaign judged is gone, "
			       "and nothing written before can be checked against it" :
			       "both superblock copies were rewritten with other values");
		b->rec = cr[0];
		memset(b->copy_sig, 0, sizeof(b->copy_sig));
	} else {
		for (int k = 0; k < 2; k++) {
			if (!strcmp(sig[k], b->copy_sig[k]))
				continue;	/* as the last HELLO said: reported then */
			if (sig[k][0])
				region_finding(e, b, "superblock_mismatch", k ? "B" : "A", ch[k],
					       ch[k] ? "a valid superblock copy differs from the region's record" :
					       "a superblock copy's fields cannot be read");
			memcpy(b->copy_sig[k], sig[k], sizeof(sig[k]));
		}
	}
	json_object_put(ch[0]);
	json_object_put(ch[1]);
}

static int refuse(struct board *b, unsigned cycle, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int refuse(struct board *b, unsigned cycle, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b->refused_why, sizeof(b->refused_why), fmt, ap);
	va_end(ap);
	b->refused = 1;
	b->refused_cycle = cycle;
	return pc_fail(err, errlen, -EINVAL, "%s", b->refused_why);
}

/* The region changed: what was judged against the old one, and what was
 * sized or located by its geometry, goes. */
static void drop_region(struct engine *e, struct board *b, const char *uuid)
{
	eng_note(e, b, "the region changed (uuid %s): starting a new baseline", uuid);
	if (b->w)
		eng_verdict_unjudged(e, b, PC_OUT_INFRA_ERROR, "the region was replaced before its writes were checked", NULL);
	eng_exp_drop(b);
	/* what was sized or located by the old geometry goes with it */
	eng_scan_want_clear(&b->scan);
	b->have_geom = 0;
	e->slots -= b->g.nslots;
}

int eng_set_geom(struct engine *e, struct board *b, const struct pc_msg *m, unsigned cycle,
		    char *err, size_t errlen)
{
	json_object *region;
	struct pc_geom g;
	struct sbrec now;
	char why[256] = "";
	int changed = 0;

	if (!json_object_object_get_ex(m->obj, "region", &region)) {
		/* both superblocks gone: keep the geometry we know, if we know one */
		if (!b->have_geom)
			return refuse(b, cycle, err, errlen, "the board's region has no superblock and no geometry "
				      "is known: %.200s", pc_jstr(m->obj, "region_error", "?"));
		check_device(e, b, m->obj);
		check_region(e, b, m->obj, NULL);
		if (b->w && eng_carry_any(b->carry)) {
			/* the agent will not scan a region it cannot trust: the pending
			 * writes are never checked, and the finding is why */
			char reason[400];
			snprintf(reason, sizeof(reason), "the agent has no usable region (%.300s)",
				 pc_jstr(m->obj, "region_error", "?"));
			eng_verdict_unjudged(e, b, PC_OUT_INFRA_ERROR, reason, NULL);
			eng_wcycle_free(b->w);
			b->w = NULL;
		}
		json_object_put(b->hello);
		b->hello = json_object_get(m->obj);
		remember_device(b);
		return 0;
	}
	/* every number is checked against the configured board before the
	 * engine holds anything sized by it */
	if (sbrec_parse(region, &now, why, sizeof(why)))
		return refuse(b, cycle, err, errlen, "hello refused: %s", why);
	if (b->lim_record_size && now.record_size != b->lim_record_size)
		return refuse(b, cycle, err, errlen, "hello refused: the region holds %" PRIu64 "-byte records but "
			      "the configuration says device.record_size %" PRIu32, now.record_size, b->lim_record_size);
	if (now.bytes > b->lim_region_bytes)
		return refuse(b, cycle, err, errlen, "hello refused: the region claims %" PRIu64 " bytes (%" PRIu64
			      " slots), more than device.max_region_bytes %" PRIu64 " allows this board; if the "
			      "region is right, raise the board's device.max_region_bytes to at least its size (up "
			      "to 64G; the host keeps 8 to 19 bytes per slot, docs/config.md)",
			      now.bytes, now.slots, b->lim_region_bytes);
	if (pc_geom_init(&g, now.bytes, (uint32_t)now.record_size, now.seed, why, sizeof(why)))
		return refuse(b, cycle, err, errlen, "hello refused: %s", why);
	if (g.nslots != now.slots || pc_uuid_parse(now.uuid, g.uuid))
		return refuse(b, cycle, err, errlen, "hello refused: region geometry is inconsistent");
	/* without a configuration nothing bounds the boards' sum: one budget */
	if (!e->configured &&
	    e->slots - (b->have_geom ? b->g.nslots : 0) + g.nslots > ENGINE_UNCONFIGURED_SLOTS)
		return refuse(b, cycle, err, errlen, "hello refused: %" PRIu32 " slots, and without the campaign's "
			      "configuration the engine holds at most %" PRIu32 " for all boards together (%" PRIu64
			      " held)", g.nslots, ENGINE_UNCONFIGURED_SLOTS, e->slots - (b->have_geom ? b->g.nslots : 0));
	check_device(e, b, m->obj);
	check_region(e, b, m->obj, &now);
	if (b->have_geom && (memcmp(g.uuid, b->g.uuid, 16) || g.nslots != b->g.nslots ||
			     g.record_size != b->g.record_size || g.seed != b->g.seed)) {
		drop_region(e, b, now.uuid);
		changed = 1;	/* the caller drops the scan in progress */
	}
	if (!b->have_geom) {
		/* the region judged from here on, and the record its superblock
		 * copies are held against */
		b->g = g;
		b->have_geom = 1;
		e->slots += g.nslots;
		b->rec = now;
		b->have_rec = 1;
		memset(b->copy_sig, 0, sizeof(b->copy_sig));
	}
	json_object_put(b->hello);
	b->hello = json_object_get(m->obj);
	remember_device(b);
	return changed;
}

/*
 * crash_judge.c - the judge: one crash state built (its image composed from
 * the kept write sectors), scanned by the agent's region_scan and judged by
 * a fresh engine (or incrementally, by a held one) against what the state
 * holds; the distinct states judged so far; the helpers the checker's other
 * files share. The one owner of struct crash_judge. Below the states
 * (crash_states.c, crash_space.c call it), above the inputs (it reads them
 * and calls their event helpers). See crash.h and docs/crash-states.md.
 */
#include "harness/crash/crash_judge.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/region.h"
#include "common/json.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "harness/engine/engine.h"

/* A state's fingerprint: 128 bits of its image's bytes in the extents and of its acks. */
struct crash_fp {
	uint64_t a, b;
};

struct crash_judge {
	const struct crash_inputs *inp;
	const struct crash_opts *o;
	struct crash_result *r;
	const struct crash_state *st;	/* the state to judge, the states' */
	struct region reg;	/* the inputs' region: its device is the map */
	json_object *base_scan;	/* verify and the base image's scan, as events */
	json_object *verify;	/* the verify event the states' scan answers (the inputs' partial one, or
				 * crash_judge_verify's) */
	/* the state being judged */
	uint8_t *recnew;	/* per record sector: holds its new bytes */
	uint8_t *racked;	/* per record: acknowledged in this state */
	uint8_t *rtsec;		/* per record: one of its sectors torn within (st->half) */
	json_object *verdict;
	char *captured;		/* the findings of the seqs [st->cap_lo, st->cap_hi] */
	struct engine *eng;
	int feed_rc;
	char feed_err[256];
	/* distinct states: fingerprints of (the image in the extents, the acks) judged so far */
	struct crash_fp *fps;
	size_t nfps, capfps;
	int dedup;		/* crash_state_judge: a state judged before is a repeat */
	int repeat;		/* the state being judged is one (judged only for its captured findings) */
	/* incremental judging: the cycle fed once to heng, held before the states' scan */
	struct engine *heng;
	struct engine_hold *hold;
	size_t hold_limit;		/* the ACK limit heng was fed with */
	int hold_refused;		/* the engine fed with hold_refused_limit ACKs could not be held */
	size_t hold_refused_limit;
};

uint64_t crash_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

double crash_clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double now_ms(void)
{
	return crash_clock_ms(CLOCK_MONOTONIC);
}

/* ---- one state ---- */

static int collect(const struct pc_verdict *v, void *arg)
{
	struct crash_judge *c = arg;

	if (v->cycle == c->inp->in->cycle && !c->verdict)
		c->verdict = json_object_get(v->json);
	return 0;
}

static int feed(struct crash_judge *c, json_object *ev)
{
	if (!c->feed_rc)
		c->feed_rc = engine_feed(c->eng, ev, c->feed_err, sizeof(c->feed_err));
	return c->feed_rc;
}

/* The scan's messages fed to the engine as the next boot's rx events (or kept, for the base). */
struct emit_arg {
	struct crash_judge *c;
	json_object *keep;	/* NULL: feed */
	unsigned cycle;
};

static int emit(json_object *msg, void *arg)
{
	struct emit_arg *a = arg;
	json_object *ev = json_object_new_object();

	if (!ev) {
		json_object_put(msg);
		return -ENOMEM;
	}
	json_object_object_add(ev, "t", json_object_new_int64(a->c->inp->post_t));
	json_object_object_add(ev, "board", json_object_new_string(a->c->inp->in->board));
	json_object_object_add(ev, "cycle", json_object_new_int64(a->cycle));
	json_object_object_add(ev, "ev", json_object_new_string("rx"));
	json_object_object_add(ev, "msg", msg);
	if (a->keep) {
		json_object_array_add(a->keep, ev);
		return 0;
	}
	feed(a->c, ev);
	json_object_put(ev);
	return a->c->feed_rc;
}

static int base_scan(struct crash_judge *c, char *err, size_t errlen)
{
	struct emit_arg a = { c, NULL, c->inp->in->cycle };
	struct scan_stats st;
	int rc;

	c->base_scan = json_object_new_array();
	a.keep = c->base_scan;
	json_object_array_add(c->base_scan, crash_verify_event(c->inp, c->inp->in->cycle, pc_msg_verify(c->inp->pattern, 1)));
	rc = region_scan(&c->reg, c->inp->pattern, NULL, 0, emit, &a, &st);
	if (rc)
		return pc_fail(err, errlen, rc, "scanning the base image %s: %s", c->inp->in->base, strerror(-rc));
	return 0;
}

/* Compose the state's image from keep[] and write it; recnew[] follows. */
static int state_write(struct crash_judge *c, char *err, size_t errlen)
{
	for (size_t i = 0; i < c->inp->next; i++)
		memcpy(c->inp->ext[i].buf, c->inp->ext[i].base, (size_t)c->inp->ext[i].n * 512);
	memset(c->recnew, 0, c->inp->nrec * c->inp->spr);
	memset(c->rtsec, 0, c->inp->nrec);
	for (size_t i = 0; i < c->inp->nw; i++) {
		const struct cwrite *w = &c->inp->w[i];
		unsigned char *dst = c->inp->ext[w->ext].buf + w->ext_off;

		for (uint64_t k = 0; k < w->n; k++) {
			size_t s = w->sect0 + k;

			if (!c->st->keep[s])
				continue;
			memcpy(dst + k * 512, c->inp->data + s * 512, 512);
			if (c->inp->tgt[s] >= 0)
				c->recnew[c->inp->tgt[s]] = c->inp->isnew[s];
			if (s + 1 != c->st->half)
				continue;
			/* a sub-sector tear: the sector's second half keeps its old bytes */
			memcpy(dst + k * 512 + 256, c->inp->ext[w->ext].base + w->ext_off + k * 512 + 256, 256);
			if (c->inp->tgt[s] >= 0 && c->inp->isnew[s])
				c->rtsec[c->inp->tgt[s] / (int32_t)c->inp->spr] = 1;
		}
	}
	for (size_t i = 0; i < c->inp->next; i++)
		memcpy(c->inp->map + c->inp->ext[i].lba * 512, c->inp->ext[i].buf, (size_t)c->inp->ext[i].n * 512);
	(void)err;
	(void)errlen;
	return 0;
}

/* An image already in the map (the observed one): recnew[] from keep[], the last write in log order
 * whose bytes it holds. */
static void state_recnew(struct crash_judge *c)
{
	memset(c->recnew, 0, c->inp->nrec * c->inp->spr);
	memset(c->rtsec, 0, c->inp->nrec);
	for (size_t i = 0; i < c->inp->nw; i++)
		for (uint64_t k = 0; k < c->inp->w[i].n; k++) {
			size_t s = c->inp->w[i].sect0 + k;

			if (c->inp->tgt[s] >= 0 && c->st->keep[s])
				c->recnew[c->inp->tgt[s]] = c->inp->isnew[s];
		}
}

/* The classes a state's records can fall in: the verdict vocabulary's first
 * five (harness/results/verdict.h), by their own names. */
#define X_N (PC_CLS_TORN_SECTOR + 1)

struct expect {
	unsigned counts[X_N];
	int fail;
	unsigned lost;		/* acknowledged records not intact */
};

/* What the state holds, record by record: the ground truth. */
static void state_truth(struct crash_judge *c, struct expect *x, uint8_t *viol)
{
	memset(x, 0, sizeof(*x));
	for (size_t i = 0; i < c->inp->nrec; i++) {
		unsigned nnew = 0, cls;

		for (uint32_t k = 0; k < c->inp->spr; k++)
			nnew += c->recnew[i * c->inp->spr + k];
		cls = nnew == c->inp->spr ? PC_CLS_INTACT
		      : nnew == 0 ? (c->racked[i] ? PC_CLS_LOST_ACKED : PC_CLS_NOT_WRITTEN) : PC_CLS_TORN;
		if (c->rtsec[i])
			cls = PC_CLS_TORN_SECTOR;	/* a sector part new, part old: the worst sector decides */
		x->counts[cls]++;
		viol[i] = (c->racked[i] && cls != PC_CLS_INTACT) || (cls == PC_CLS_TORN && c->inp->torn_violation) ||
			  (cls == PC_CLS_TORN_SECTOR && c->inp->torn_sector_violation);
		x->lost += c->racked[i] && cls != PC_CLS_INTACT;
		x->fail |= viol[i];
	}
}

void crash_vnote(struct crash_result *r, const char *fmt, va_list ap)
{
	char buf[512];

	if (json_object_array_length(r->notes) >= CRASH_MAX_LISTED)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	json_object_array_add(r->notes, json_object_new_string(buf));
}

void crash_note(struct crash_result *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	crash_vnote(r, fmt, ap);
	va_end(ap);
}

/* A note of the state judged: none when its truth is not known. */
static void jnote(struct crash_judge *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jnote(struct crash_judge *c, const char *fmt, ...)
{
	va_list ap;

	if (c->st->no_truth)
		return;
	va_start(ap, fmt);
	crash_vnote(c->r, fmt, ap);
	va_end(ap);
}

/* Acknowledged in this state: the records of the ACK events up to the limit. */
static void state_acks(struct crash_judge *c)
{
	size_t acks = 0;

	memset(c->racked, 0, c->inp->nrec);
	for (size_t i = 0, n = json_object_array_length(c->inp->mid), lo, hi; i < n; i++) {
		if (crash_ack_range(c->inp, json_object_array_get_idx(c->inp->mid, i), &lo, &hi) < 0 || acks++ >= c->st->ack_limit)
			continue;
		for (size_t r = lo; r < hi; r++)
			c->racked[r] = 1;
	}
}

/* The state's image scanned at the positions the verify event asked for, the lines fed to the engine. */
static void state_scan(struct crash_judge *c, char *err, size_t errlen)
{
	struct emit_arg a = { c, NULL, c->inp->in->cycle + 1 };
	struct scan_stats st;
	json_object *vm;
	struct pc_msg m;
	struct pc_posrange *rg = NULL;
	uint32_t nrg = 0;
	int rc;

	if (!json_object_object_get_ex(c->verify, "msg", &vm) || pc_msg_parse_obj(vm, &m, err, errlen))
		return;
	if (!m.u.verify.full) {
		rg = m.u.verify.ranges;
		nrg = m.u.verify.nranges;
	}
	rc = region_scan(&c->reg, c->inp->pattern, rg, nrg, emit, &a, &st);
	pc_msg_clear(&m);
	if (rc && !c->feed_rc)
		c->feed_rc = rc;
}

/* A fresh engine (c->eng) fed the cycle with the ACKs up to the limit, the next boot and the states'
 * VERIFY: what every state's scan is judged after. c->feed_rc says whether the engine refused. */
static int cycle_feed(struct crash_judge *c, char *err, size_t errlen)
{
	size_t acks = 0;

	c->eng = engine_new("crash-states", collect, NULL, c);
	c->feed_rc = 0;
	c->verdict = NULL;
	if (!c->eng)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	if (c->inp->in->config && engine_configure(c->eng, c->inp->in->config, c->feed_err, sizeof(c->feed_err)))
		c->feed_rc = -EINVAL;
	for (size_t i = 0; i < json_object_array_length(c->inp->pre); i++)
		feed(c, json_object_array_get_idx(c->inp->pre, i));
	for (size_t i = 0; i < json_object_array_length(c->base_scan); i++)
		feed(c, json_object_array_get_idx(c->base_scan, i));
	for (size_t i = 0; i < json_object_array_length(c->inp->mid); i++) {
		json_object *ev = json_object_array_get_idx(c->inp->mid, i);

		if (!strcmp(crash_msg_type(ev), "ack") && acks++ >= c->st->ack_limit)
			continue;
		feed(c, ev);
	}
	for (size_t i = 0; i < json_object_array_length(c->inp->post); i++)
		feed(c, json_object_array_get_idx(c->inp->post, i));
	feed(c, c->verify);
	return 0;
}

/* After a state's scan: its verdict, or -errno naming the state. */
static int state_verdict(struct crash_judge *c, const char *label, char *err, size_t errlen)
{
	if (c->feed_rc) {
		json_object_put(c->verdict);
		c->verdict = NULL;
		return pc_fail(err, errlen, c->feed_rc < 0 ? c->feed_rc : -EIO, "board %s cycle %u, state %s: the engine "
			    "or the scan refused: %s", c->inp->in->board, c->inp->in->cycle, label, c->feed_err);
	}
	if (!c->verdict)
		return pc_fail(err, errlen, -EPROTO, "board %s cycle %u, state %s: the engine gave no verdict",
			    c->inp->in->board, c->inp->in->cycle, label);
	return 0;
}

/* The full judge: a fresh engine fed the cycle, the next boot and the state's scan: c->verdict, or -errno. */
static int state_engine_full(struct crash_judge *c, const char *label, char *err, size_t errlen)
{
	int rc = cycle_feed(c, err, errlen);

	if (rc)
		return rc;
	if (!c->feed_rc)
		state_scan(c, err, errlen);
	engine_free(c->eng);
	c->eng = NULL;
	return state_verdict(c, label, err, errlen);
}

static void incr_drop(struct crash_judge *c)
{
	engine_hold_free(c->hold);
	engine_free(c->heng);
	c->hold = NULL;
	c->heng = NULL;
}

/*
 * Incremental judging: the cycle is fed once (per ACK limit) to an engine
 * held just before the states' scan (engine_hold); each state's scan, of
 * the slots the log touched and the cycle's records only, is judged against
 * it and the engine put back. 0 with c->verdict; 1 when a state cannot be
 * judged so (the observed image's full scan, --full-judge, an engine that
 * gave its verdict before the scan or cannot be held): the full judge does
 * it; -errno.
 */
static int state_engine_held(struct crash_judge *c, const char *label, char *err, size_t errlen)
{
	int rc;

	if (c->o->full_judge || c->verify != c->inp->verify)
		return 1;
	if (c->heng && c->hold_limit != c->st->ack_limit)
		incr_drop(c);
	if (!c->heng) {
		if (c->hold_refused && c->hold_refused_limit == c->st->ack_limit)
			return 1;
		if ((rc = cycle_feed(c, err, errlen)))
			return rc;
		c->hold = !c->feed_rc && !c->verdict ? engine_hold(c->eng, c->inp->in->board) : NULL;
		if (!c->hold) {
			engine_free(c->eng);
			c->eng = NULL;
			json_object_put(c->verdict);
			c->verdict = NULL;
			c->hold_refused = 1;
			c->hold_refused_limit = c->st->ack_limit;
			return 1;
		}
		c->heng = c->eng;
		c->hold_limit = c->st->ack_limit;
	}
	c->eng = c->heng;
	c->feed_rc = 0;
	c->verdict = NULL;
	state_scan(c, err, errlen);
	c->eng = NULL;
	if (engine_hold_restore(c->heng, c->hold))
		incr_drop(c);	/* the next state feeds the cycle again */
	if ((rc = state_verdict(c, label, err, errlen)))
		return rc;
	c->r->incremental++;
	return 0;
}

/* The state judged (incrementally where it can be), c->verdict; with --check-incremental, the full
 * judge's verdict too, which must be the same, byte for byte. 0 or -errno. */
static int state_engine(struct crash_judge *c, const char *label, char *err, size_t errlen)
{
	json_object *inc;
	int rc = state_engine_held(c, label, err, errlen);

	if (rc < 0)
		return rc;
	if (rc == 1)
		return state_engine_full(c, label, err, errlen);
	if (!c->o->check_incremental)
		return 0;
	inc = c->verdict;
	c->verdict = NULL;
	if ((rc = state_engine_full(c, label, err, errlen))) {
		json_object_put(inc);
		return rc;
	}
	c->r->incremental_checked++;
	if (strcmp(json_object_to_json_string_ext(inc, JSON_C_TO_STRING_PLAIN),
		   json_object_to_json_string_ext(c->verdict, JSON_C_TO_STRING_PLAIN))) {
		c->r->incremental_diffs++;
		jnote(c, "cycle %u state %s: the incremental judge's verdict is not the full judge's: %.160s",
			   c->inp->in->cycle, label, json_object_to_json_string_ext(inc, JSON_C_TO_STRING_PLAIN));
	}
	json_object_put(inc);
	return 0;
}

/* The findings of the seqs [cap_lo, cap_hi], as text, into c->captured. */
static void state_capture(struct crash_judge *c, json_object *fnd)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; arr && fnd && i < json_object_array_length(fnd); i++) {
		json_object *f = json_object_array_get_idx(fnd, i);
		int64_t s = crash_ev_int(f, "seq", NULL, -1);

		if (s >= (int64_t)c->st->cap_lo && s <= (int64_t)c->st->cap_hi)
			json_object_array_add(arr, json_object_get(f));
	}
	free(c->captured);
	c->captured = arr ? strdup(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN)) : NULL;
	json_object_put(arr);
}

/* The verdict against the state: the classes' counts and which seqs are violations. 1 when they agree. */
static int state_compare(struct crash_judge *c, enum crash_mode mode, const char *label, const struct expect *x,
			 const uint8_t *viol, json_object *fnd)
{
	json_object *cnt = json_object_object_get(c->verdict, "counts"), *v;
	size_t nviol_found = 0, want = 0;
	int ok = 1;

	json_object_object_foreach(cnt, k, cv) {
		int64_t w = 0;

		for (unsigned i = 0; i < X_N; i++)
			if (!strcmp(k, pc_class_names[i]))
				w = x->counts[i];
		if (json_object_get_int64(cv) != w) {
			ok = 0;
			jnote(c, "cycle %u %s %s: %s %" PRId64 ", the state holds %" PRId64, c->inp->in->cycle,
			     crash_mode_name(mode), label, k, json_object_get_int64(cv), w);
		}
	}
	for (size_t i = 0; fnd && i < json_object_array_length(fnd); i++) {
		json_object *f = json_object_array_get_idx(fnd, i);
		int64_t s;

		if (!json_object_object_get_ex(f, "violation", &v) || !json_object_get_boolean(v))
			continue;
		s = crash_ev_int(f, "seq", NULL, -1);
		nviol_found++;
		if (s < (int64_t)c->inp->first || (uint64_t)s >= c->inp->first + c->inp->nrec || !viol[s - (int64_t)c->inp->first]) {
			ok = 0;
			jnote(c, "cycle %u %s %s: the verdict names seq %" PRId64 " a violation; the state does not",
			     c->inp->in->cycle, crash_mode_name(mode), label, s);
		}
	}
	for (size_t i = 0; i < c->inp->nrec; i++)
		want += viol[i];
	if (want != nviol_found) {
		ok = 0;
		jnote(c, "cycle %u %s %s: %zu violations named, the state holds %zu", c->inp->in->cycle,
		     crash_mode_name(mode), label, nviol_found, want);
	}
	return ok;
}

/* ---- distinct states ---- */

static struct crash_fp state_fp(const struct crash_judge *c)
{
	uint64_t a = 0x243f6a8885a308d3ULL, b = 0x13198a2e03707344ULL, w;

	for (size_t i = 0; i < c->inp->next; i++) {
		const unsigned char *p = c->inp->map + c->inp->ext[i].lba * 512;
		size_t len = (size_t)c->inp->ext[i].n * 512;

		for (size_t k = 0; k < len; k += 8) {
			memcpy(&w, p + k, 8);
			a = ((a ^ w) * 0x9fb21c651e98df25ULL);
			a ^= a >> 29;
			b = (b + w) * 0xff51afd7ed558ccdULL;
			b ^= b >> 32;
		}
		a = crash_mix(a ^ c->inp->ext[i].lba);
	}
	for (size_t r = 0; r < c->inp->nrec; r++)
		b = b * 31 + c->racked[r];
	return (struct crash_fp){ crash_mix(a), crash_mix(b ^ a) | 1 };	/* b odd: never the empty slot */
}

static int fp_insert(struct crash_fp *t, size_t cap, struct crash_fp f)
{
	for (size_t i = (size_t)f.a & (cap - 1);; i = (i + 1) & (cap - 1)) {
		if (!t[i].b) {
			t[i] = f;
			return 0;
		}
		if (t[i].a == f.a && t[i].b == f.b)
			return 1;
	}
}

static int fp_seen(struct crash_judge *c, int insert)
{
	struct crash_fp f = state_fp(c);

	if (c->nfps * 2 >= c->capfps) {
		size_t cap = c->capfps ? c->capfps * 2 : 1024;
		struct crash_fp *t = calloc(cap, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < c->capfps; i++)
			if (c->fps[i].b)
				fp_insert(t, cap, c->fps[i]);
		free(c->fps);
		c->fps = t;
		c->capfps = cap;
	}
	if (!insert) {
		for (size_t i = (size_t)f.a & (c->capfps - 1); c->fps[i].b; i = (i + 1) & (c->capfps - 1))
			if (c->fps[i].a == f.a && c->fps[i].b == f.b)
				return 1;
		return 0;
	}
	if (fp_insert(c->fps, c->capfps, f))
		return 1;
	c->nfps++;
	return 0;
}

/* ---- one state judged ---- */

/*
 * Judge the state in keep[] (or, img_ready, the image already written) with
 * acks up to ack_limit. 1 when the verdict says what the state holds, 0 when
 * it does not, 2 (c->dedup) a state judged before, not judged again; -errno.
 * *failed: the verdict is FAIL.
 */
int crash_state_judge(struct crash_judge *c, enum crash_mode mode, const char *label, int img_ready, int *failed,
		       char *err, size_t errlen)
{
	uint8_t *viol;
	struct expect x;
	json_object *fnd;
	int rc, ok;
	double t0 = now_ms(), c0 = crash_clock_ms(CLOCK_PROCESS_CPUTIME_ID);

	viol = calloc(c->inp->nrec, 1);
	if (!viol)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	if (img_ready)
		state_recnew(c);
	else if ((rc = state_write(c, err, errlen))) {
		free(viol);
		return rc;
	}
	state_acks(c);
	c->repeat = c->dedup ? fp_seen(c, 1) : 0;
	if (c->repeat < 0 || (c->repeat && !c->st->cap_hi)) {
		free(viol);
		return c->repeat < 0 ? pc_fail(err, errlen, -ENOMEM, "out of memory") : 2;
	}
	state_truth(c, &x, viol);
	if ((rc = state_engine(c, label, err, errlen))) {
		free(viol);
		return rc;
	}
	if (c->o->hook)
		c->o->hook(c->verdict, c->o->hook_arg);
	fnd = json_object_object_get(c->verdict, "findings");
	if (c->st->cap_hi)
		state_capture(c, fnd);
	/* compare: the outcome, the classes' counts, and which seqs are violations */
	*failed = pc_outcome_from_name(json_object_get_string(json_object_object_get(c->verdict, "verdict"))) ==
		  PC_OUT_FAIL;
	ok = state_compare(c, mode, label, &x, viol, fnd) && *failed == x.fail;
	if (!ok && x.fail != *failed)
		jnote(c, "cycle %u %s %s: verdict %s, the state calls for %s", c->inp->in->cycle, crash_mode_name(mode),
		     label, pc_outcome_names[*failed ? PC_OUT_FAIL : PC_OUT_PASS],
		     pc_outcome_names[x.fail ? PC_OUT_FAIL : PC_OUT_PASS]);
	if (!c->repeat) {
		c->r->lost_acked_states += x.lost > 0;
		c->r->ms_by_mode[mode] += now_ms() - t0;
		c->r->cpu_ms_by_mode[mode] += crash_clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
		c->r->by_mode[mode]++;
	}
	json_object_put(c->verdict);
	c->verdict = NULL;
	free(viol);
	return ok;
}

/* A legal state: counted, and a mismatch when its verdict is wrong; a repeat counted as one. */
int crash_legal(struct crash_judge *c, enum crash_mode mode, const char *label, char *err, size_t errlen)
{
	int failed, rc;

	c->dedup = 1;
	rc = crash_state_judge(c, mode, label, 0, &failed, err, errlen);
	c->dedup = 0;
	if (rc < 0)
		return rc;
	if (rc == 2 || c->repeat) {
		c->r->repeats++;
		c->repeat = 0;
		return 0;
	}
	c->r->states++;
	c->r->mismatches += rc == 0;
	return 0;
}

int crash_state_seen(struct crash_judge *c)
{
	state_acks(c);
	return fp_seen(c, 1);
}

/* ---- the judge ---- */

int crash_judge_new(struct crash_judge **jp, const struct crash_inputs *in, const struct crash_opts *o,
		    struct crash_result *r, const struct crash_state *st, char *err, size_t errlen)
{
	struct crash_judge *c = calloc(1, sizeof(*c));

	*jp = c;
	if (!c)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	c->inp = in;
	c->o = o;
	c->r = r;
	c->st = st;
	c->reg = in->reg;
	c->verify = in->verify;
	/* the per-record tables, one block: recnew, then racked, then rtsec */
	c->recnew = calloc(in->nrec * in->spr + 2 * in->nrec, 1);
	if (!c->recnew)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	c->racked = c->recnew + in->nrec * in->spr;
	c->rtsec = c->racked + in->nrec;
	return base_scan(c, err, errlen);
}

void crash_judge_verify(struct crash_judge *c, json_object *verify)
{
	c->verify = verify ? verify : c->inp->verify;
}

char *crash_judge_captured(struct crash_judge *c)
{
	char *s = c->captured;

	c->captured = NULL;
	return s;
}

void crash_judge_free(struct crash_judge *c)
{
	if (!c)
		return;
	incr_drop(c);
	free(c->recnew);	/* and racked, rtsec */
	free(c->fps);
	free(c->captured);
	json_object_put(c->base_scan);
	free(c);
}

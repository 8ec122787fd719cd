/*
 * engine_verdict.c - findings and verdicts as JSON, at the edge: one verdict
 * per cycle, carried device findings in the next one, notes to the user.
 * The bottom of the engine's pipeline: it calls only engine_state.c, and
 * eng_verdict_write() is the one writer of a verdict that carries findings.
 */
#include "harness/engine/engine_board.h"
#include "harness/engine/engine_carry.h"
#include "harness/engine/engine_judgement.h"
#include "harness/engine/engine_ledger.h"
#include "harness/engine/engine_state.h"
#include "harness/engine/engine_verdict.h"
#include "harness/engine/engine_wcycle.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/crc32c.h"
#include "common/json.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"

static json_object *counts_json(const struct engine *e, const uint32_t *counts);
static void add_audit(const struct engine *e, const struct board *b, json_object *v, const struct wcycle *w);

void eng_note(struct engine *e, struct board *b, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!e->nfn)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	e->nfn(b->name, buf, e->arg);
}

/* ---- verdict output ---- */

static json_object *jcopy(json_object *o, const char *key)
{
	json_object *v, *out = NULL;

	if (o && json_object_object_get_ex(o, key, &v))
		json_object_deep_copy(v, &out, NULL);
	return out;
}

/* A stable identity for the device: what a supplier's part is known by. */
static json_object *device_json(struct board *b)
{
	json_object *dev;
	char id[512];
	const char *cid, *serial;

	if (b->dev_cache)
		return json_object_get(b->dev_cache);
	dev = jcopy(b->hello, "device");
	if ((!dev || !json_object_object_length(dev)) && b->last_device) {
		/* an agent that refused its region cannot say what it opened: the
		 * board's device is the one it last named */
		json_object_put(dev);
		dev = NULL;
		json_object_deep_copy(b->last_device, &dev, NULL);
	}
	if (!dev)
		dev = json_object_new_object();
	cid = pc_jstr(dev, "cid", NULL);
	serial = pc_jstr(dev, "serial", NULL);
	if (cid)
		snprintf(id, sizeof(id), "%s:%s:%s", pc_jstr(dev, "type", "mmc"), pc_jstr(dev, "name", "?"), cid);
	else if (serial)
		snprintf(id, sizeof(id), "%s:%s:%s", pc_jstr(dev, "type", "disk"), pc_jstr(dev, "model", "?"), serial);
	else {
		char u[37] = "unknown";
		if (b->have_geom)
			pc_uuid_format(b->g.uuid, u);
		snprintf(id, sizeof(id), "board:%s:region:%s", b->name, u);
	}
	json_object_object_add(dev, "id", json_object_new_string(id));
	b->dev_cache = dev;
	return json_object_get(dev);
}

static json_object *verdict_base(struct engine *e, struct board *b, unsigned cycle, enum pc_outcome outcome)
{
	json_object *v = json_object_new_object();
	json_object *q;

	if (!b->queue_cache)
		b->queue_cache = jcopy(b->hello, "queue");
	q = b->queue_cache ? json_object_get(b->queue_cache) : NULL;

	if (e->format >= 2)
		json_object_object_add(v, "format", json_object_new_string(PC_FORMAT));
	json_object_object_add(v, "campaign", json_object_new_string(e->campaign));
	json_object_object_add(v, "board", json_object_new_string(b->name));
	json_object_object_add(v, "cycle", json_object_new_int64(cycle));
	json_object_object_add(v, "verdict", json_object_new_string(pc_outcome_names[outcome]));
	if (e->format >= 2 && e->have_wall) {
		char ts[40];

		eng_wall_time(e, ts, sizeof(ts));
		json_object_object_add(v, "time", json_object_new_string(ts));
		json_object_object_add(v, "host", json_object_new_string(e->host));
	}
	json_object_object_add(v, "device", device_json(b));
	if (q)
		json_object_object_add(v, "queue", q);
	if (b->hello) {
		json_object_object_add(v, "kernel", json_object_new_string(pc_jstr(b->hello, "kernel", "?")));
		json_object_object_add(v, "agent", json_object_new_string(pc_jstr(b->hello, "agent", "?")));
	}
	return v;
}

/* The wall clock of the event being fed, RFC 3339 UTC to the millisecond. */
void eng_wall_time(const struct engine *e, char *buf, size_t len)
{
	int64_t ms = e->wall_ms + (e->t_now > e->wall_t ? e->t_now - e->wall_t : 0);
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&sec, &tm) || tm.tm_year + 1900 > 9999) {
		snprintf(buf, len, "9999-12-31T23:59:59.999Z");
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/*
 * Format 2: every outcome carries the same core fields, so that a table of
 * verdicts has no holes: the mode (the one the cycle wrote, else the one its
 * boot was to write, else null: a final verification), the counts per class
 * and the number of violations, zeros written out.
 */
static void core_fields(struct engine *e, struct board *b, json_object *v, struct pc_verdict *vd)
{
	if (!json_object_object_get_ex(v, "mode", NULL)) {
		json_object_object_add(v, "mode", b->planned_mode >= 0 ?
				       json_object_new_string(pc_mode_name(b->planned_mode)) : NULL);
		vd->mode = b->planned_mode >= 0 ? b->planned_mode : -1;
	}
	if (!json_object_object_get_ex(v, "counts", NULL)) {
		uint32_t zero[PC_NCLASSES] = { 0 };

		json_object_object_add(v, "counts", counts_json(e, zero));
	}
	if (!json_object_object_get_ex(v, "violations", NULL))
		eng_add_int(v, "violations", 0);
}

/* The verdict v of the board's cycle handed on, with vd: what it says,
 * typed (its outcome, mode, counts and violations set by the caller, as it
 * wrote them into v). */
static int emit(struct engine *e, struct board *b, unsigned cycle, json_object *v, struct pc_verdict *vd)
{
	int ret;

	if (eng_ledger_judged(b->ledger, cycle)) {
		/* one verdict per cycle: the first one stands */
		json_object_put(v);
		return 0;
	}
	if (eng_ledger_mark(&b->ledger, cycle)) {
		json_object_put(v);
		return -ENOMEM;
	}
	if (e->format >= 2)
		core_fields(e, b, v, vd);
	if (e->dead_device)
		eng_add_int(v, PC_DEAD_DEVICE, e->dead_device);
	vd->board = b->name;
	vd->cycle = cycle;
	vd->json = v;
	ret = e->vfn ? e->vfn(vd, e->arg) : 0;
	json_object_put(v);
	return ret;
}

static int verdict_carried(struct engine *e, struct board *b, unsigned cycle, enum pc_outcome outcome,
			   const char *reason);

/* A verdict with no records judged. Device-level findings waiting for a
 * verdict (the carry) go into it: they belong to the first verdict after
 * they were seen, whatever its outcome, and are never dropped. */
int eng_verdict_simple(struct engine *e, struct board *b, unsigned cycle, enum pc_outcome outcome,
			  const char *reason)
{
	struct pc_verdict vd = { .outcome = outcome, .mode = -1 };
	json_object *v;

	if (eng_ledger_judged(b->ledger, cycle))
		return 0;
	if (eng_carry_any(b->carry))
		return verdict_carried(e, b, cycle, outcome, reason);
	v = verdict_base(e, b, cycle, outcome);
	json_object_object_add(v, "reason", json_object_new_string(reason));
	return emit(e, b, cycle, v, &vd);
}

/* The carried findings move into the verdict being built. */
void eng_take_carry(struct judge *j)
{
	if (!j->findings)
		j->findings = json_object_new_array();
	eng_carry_take(&j->b->carry, j);
}

/* eng_verdict_simple() with carried findings: FAIL when any is a violation. */
static int verdict_carried(struct engine *e, struct board *b, unsigned cycle, enum pc_outcome outcome,
			   const char *reason)
{
	struct judge j = { .e = e, .b = b };

	eng_take_carry(&j);
	return eng_verdict_write(&j, cycle, outcome, NULL, NULL, NULL, reason);
}

/* List a finding, or past ENGINE_MAX_FINDINGS only count it: a device that
 * damages a whole region must not make one verdict line gigabytes long. */
static void list_finding(struct judge *j, json_object *f)
{
	if (j->nlisted < ENGINE_MAX_FINDINGS) {
		json_object_array_add(j->findings, f);
		j->nlisted++;
		return;
	}
	json_object_put(j->scratch);
	j->scratch = f;
	j->unlisted++;
}

void eng_flush_nw(struct judge *j)
{
	json_object *f;

	if (!j->nw_n)
		return;
	f = json_object_new_object();
	json_object_object_add(f, "class", json_object_new_string(pc_class_names[PC_CLS_NOT_WRITTEN]));
	json_object_object_add(f, "seq", json_object_new_int64((int64_t)j->nw_first));
	json_object_object_add(f, "n", json_object_new_int64(j->nw_n));
	json_object_object_add(f, "slot", json_object_new_int64(j->nw_slot));
	json_object_object_add(f, "lba", json_object_new_int64((int64_t)pc_slot_lba(&j->b->g, j->nw_slot)));
	json_object_object_add(f, "acked", json_object_new_boolean(0));
	json_object_object_add(f, "violation", json_object_new_boolean(0));
	list_finding(j, f);
	j->nw_n = 0;
}

/* The policy: what the cycle's configuration says, or docs/design.md section 6's
 * defaults for a finding with no cycle (events that carry none). */
static int is_violation(const struct wcycle *w, enum pc_class c, int acked, int mode)
{
	struct pc_policy d;

	if (!w)
		pc_policy_default(&d, mode);
	return pc_is_violation(c, acked, w ? &w->pol : &d);
}

json_object *eng_finding(struct judge *j, enum pc_class c, uint64_t seq, uint32_t slot, int acked, int mode)
{
	json_object *f = json_object_new_object();
	int viol = is_violation(j->w, c, acked, mode);

	eng_flush_nw(j);
	j->counts[c]++;
	if (viol)
		j->violations++;
	json_object_object_add(f, "class", json_object_new_string(pc_class_names[c]));
	json_object_object_add(f, "seq", json_object_new_int64((int64_t)seq));
	json_object_object_add(f, "slot", json_object_new_int64(slot));
	json_object_object_add(f, "lba", json_object_new_int64((int64_t)pc_slot_lba(&j->b->g, slot)));
	json_object_object_add(f, "acked", json_object_new_boolean(acked));
	json_object_object_add(f, "violation", json_object_new_boolean(viol));
	list_finding(j, f);
	return f;
}

void eng_add_int(json_object *o, const char *k, int64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v));
}

void eng_describe_prev(json_object *f, const struct occ *prev)
{
	if (prev->state == OCC_WHOLE) {
		eng_add_int(f, "previous_seq", (int64_t)prev->seq);
		eng_add_int(f, "previous_cycle", prev->cycle);
	} else {
		json_object_object_add(f, "previous", json_object_new_string("damaged"));
	}
}

static json_object *counts_json(const struct engine *e, const uint32_t *counts)
{
	json_object *o = json_object_new_object();

	for (int i = 0; i < PC_NCLASSES; i++)
		/* format 1 as verdicts before unclassified existed read */
		if (i != PC_CLS_UNCLASSIFIED || counts[i] || e->format >= 2)
			eng_add_int(o, pc_class_names[i], counts[i]);
	return o;
}

/*
 * The writes the device refused during the cycle (docs/design.md section 6: a
 * device-level finding belongs to the verdict of the cycle that saw it):
 * violations whatever the scan finds. Shaped like the other device-level
 * findings: class collateral, "what" says what happened.
 */
void eng_add_refused(struct judge *j, const struct wcycle *w)
{
	uint32_t kept = w->nwerr < ENGINE_MAX_WRITE_ERRORS ? w->nwerr : ENGINE_MAX_WRITE_ERRORS;

	for (uint32_t i = 0; i < kept; i++) {
		const struct werr *we = &w->werr[i];
		json_object *f = json_object_new_object();

		json_object_object_add(f, "class", json_object_new_string(pc_class_names[PC_CLS_COLLATERAL]));
		json_object_object_add(f, "what", json_object_new_string(PC_WHAT_WRITE_REFUSED));
		eng_add_int(f, "seq", we->seq > INT64_MAX ? INT64_MAX : (int64_t)we->seq);
		if (we->lba > INT64_MAX)
			json_object_object_add(f, "lba", json_object_new_uint64(we->lba));
		else
			eng_add_int(f, "lba", (int64_t)we->lba);
		eng_add_int(f, "errno", we->err);
		json_object_object_add(f, "mode", json_object_new_string(pc_mode_name(we->mode)));
		json_object_object_add(f, "detail", json_object_new_string(we->msg));
		json_object_object_add(f, "acked", json_object_new_boolean(0));
		json_object_object_add(f, "violation", json_object_new_boolean(1));
		j->counts[PC_CLS_COLLATERAL]++;
		j->violations++;
		list_finding(j, f);
	}
	if (w->nwerr > kept) {
		json_object *f = json_object_new_object();
		char txt[96];

		snprintf(txt, sizeof(txt), "%" PRIu32 " more refused writes, not listed one by one", w->nwerr - kept);
		json_object_object_add(f, "class", json_object_new_string(pc_class_names[PC_CLS_COLLATERAL]));
		json_object_object_add(f, "what", json_object_new_string(PC_WHAT_WRITE_REFUSED));
		eng_add_int(f, "n", w->nwerr - kept);
		json_object_object_add(f, "detail", json_object_new_string(txt));
		json_object_object_add(f, "acked", json_object_new_boolean(0));
		json_object_object_add(f, "violation", json_object_new_boolean(1));
		j->counts[PC_CLS_COLLATERAL] += w->nwerr - kept;
		j->violations += w->nwerr - kept;
		list_finding(j, f);
	}
}

/*
 * Format 2: what reached the device during the cycle's work (docs/io-audit.md):
 * the agent's counts of block requests by kind, or why it could not see
 * them (its HELLO said so). Nothing when the agent said nothing (an older
 * agent): never guessed.
 */
/* The audit's request counts (rq) as sums by what they did; 0 when it has none. */
static int audit_sums(const struct wcycle *w, uint64_t sums[PC_NRQ])
{
	json_object *rq;

	memset(sums, 0, PC_NRQ * sizeof(*sums));
	if (!w || !w->audit || !json_object_object_get_ex(w->audit, "rq", &rq))
		return 0;
	json_object_object_foreach(rq, k, n)
		pc_rq_add(k, json_object_get_uint64(n), sums);
	return 1;
}

/* What the board's HELLO said of the queue (fua, write_cache): part of the
 * events, so replay reads the same. */
static void board_queue(const struct board *b, struct pc_queue *q)
{
	json_object *qo = NULL, *fua = NULL, *wc = NULL;

	if (b->hello && json_object_object_get_ex(b->hello, "queue", &qo) && qo) {
		json_object_object_get_ex(qo, "fua", &fua);
		json_object_object_get_ex(qo, "write_cache", &wc);
	}
	pc_queue_read(fua, wc, q);
}

static void add_audit(const struct engine *e, const struct board *b, json_object *v, const struct wcycle *w)
{
	uint64_t sums[PC_NRQ];
	json_object *a;
	char became[160];

	if (e->format < 2)
		return;
	if (w && w->audit) {
		json_object_object_add(v, "io_audit", json_object_get(w->audit));
		/* the mode asked for one thing and the device got another: said */
		struct pc_queue q;

		board_queue(b, &q);
		if (audit_sums(w, sums) && pc_io_mismatch(w->mode_run, sums, w->done, &q)) {
			char note[256];

			snprintf(note, sizeof(note), "%s: %s", pc_mode_name(w->mode_run),
				 pc_io_became(w->mode_run, sums, w->done, &q, became, sizeof(became)));
			json_object_object_add(v, "io_note", json_object_new_string(note));
		}
		return;
	}
	if (b->hello && json_object_object_get_ex(b->hello, "audit", &a) &&
	    json_object_object_get_ex(a, "unavailable", NULL))
		json_object_object_add(v, "io_audit", json_object_get(a));
}

/*
 * "audit": "require": a cycle whose requests could not be seen, or were not
 * what its mode promises, did not run the test that was asked for: its
 * verdict is INFRA_ERROR (unless a violation proves more).
 */
void eng_audit_require(const struct engine *e, const struct board *b, struct wcycle *w)
{
	uint64_t sums[PC_NRQ];
	json_object *a;
	char became[160];
	struct pc_queue q;

	if (!b->audit_require || e->format < 2 || w->infra[0])
		return;
	if (!w->audit) {
		snprintf(w->infra, sizeof(w->infra), "audit \"require\": the agent reported no io audit%s%.300s",
			 b->hello && json_object_object_get_ex(b->hello, "audit", &a) ? ": " : "",
			 b->hello && json_object_object_get_ex(b->hello, "audit", &a) ?
			 pc_jstr(a, "unavailable", "") : "");
		return;
	}
	if (json_object_object_get_ex(w->audit, "unavailable", &a)) {
		snprintf(w->infra, sizeof(w->infra), "audit \"require\": the io audit is unavailable: %.300s",
			 json_object_get_string(a));
		return;
	}
	board_queue(b, &q);
	if (audit_sums(w, sums) && pc_io_mismatch(w->mode_run, sums, w->done, &q)) {
		snprintf(w->infra, sizeof(w->infra), "audit \"require\": mode %s was asked for, but %s",
			 pc_mode_name(w->mode_run), pc_io_became(w->mode_run, sums, w->done, &q, became, sizeof(became)));
	}
}

/*
 * The one writer of a verdict with findings -- judged (engine_judge.c),
 * unjudged, or carried findings only -- in the order of keys every such
 * verdict has had: the base, the cycle's work (w, when there is one), what
 * judging says of its policy and scan (judged), the counts, violations and
 * findings, the cut, the speed (speed), and the reason. FAIL when a finding
 * is a violation, else outcome. judged and speed (objects whose keys are
 * copied in, or NULL) are consumed.
 */
int eng_verdict_write(struct judge *j, unsigned cycle, enum pc_outcome outcome, const struct wcycle *w,
		      json_object *judged, json_object *speed, const char *reason)
{
	struct engine *e = j->e;
	struct board *b = j->b;
	struct pc_verdict vd = { .outcome = j->violations ? PC_OUT_FAIL : outcome, .mode = w ? w->mode : -1,
				 .violations = j->violations };
	json_object *v = verdict_base(e, b, cycle, (enum pc_outcome)vd.outcome);

	for (int i = 0; i < PC_NCLASSES; i++)
		vd.counts[i] = j->counts[i];
	if (w) {
		json_object_object_add(v, "mode", json_object_new_string(pc_mode_name(w->mode)));
		json_object_object_add(v, "mode_run", json_object_new_string(pc_mode_name(w->mode_run)));
		json_object_object_add(v, "pattern", json_object_new_string(pc_pattern_name(w->pattern)));
	}
	if (judged) {
		json_object_object_foreach(judged, k, val)
			json_object_object_add(v, k, json_object_get(val));
		json_object_put(judged);
	}
	if (w) {
		json_object *rec = json_object_new_object();

		eng_add_int(rec, "first", (int64_t)w->first);
		eng_add_int(rec, "planned", w->n);
		eng_add_int(rec, "submitted", w->nsub);
		eng_add_int(rec, "acked", w->nack);
		json_object_object_add(v, "records", rec);
		add_audit(e, b, v, w);
	}
	json_object_object_add(v, "counts", counts_json(e, j->counts));
	eng_add_int(v, "violations", j->violations);
	json_object_object_add(v, "findings", j->findings);
	j->findings = NULL;
	if (j->unlisted)
		eng_add_int(v, "findings_unlisted", j->unlisted);
	if (w && w->cut)
		json_object_object_add(v, "cut", json_object_get(w->cut));
	if (speed) {
		json_object_object_foreach(speed, k, val)
			json_object_object_add(v, k, json_object_get(val));
		json_object_put(speed);
	}
	if (reason)
		json_object_object_add(v, "reason", json_object_new_string(reason));
	return emit(e, b, cycle, v, &vd);
}

/*
 * The pending cycle's verdict when its writes cannot be judged (no scan will
 * come, or none can tell them apart any more): outcome with reason -- unless
 * the device refused a write in that cycle, which needs no scan to be a
 * violation: then FAIL, with the refused writes and the reason the records
 * were not judged.
 */
int eng_verdict_unjudged(struct engine *e, struct board *b, enum pc_outcome outcome, const char *reason,
			    json_object *extra)
{
	struct wcycle *w = b->w;
	struct judge j = { .e = e, .b = b, .w = w };
	char why[640];

	if (!w->nwerr && !extra && !eng_carry_any(b->carry))
		return eng_verdict_simple(e, b, w->cycle, outcome, reason);
	if (eng_ledger_judged(b->ledger, w->cycle)) {
		json_object_put(extra);
		return 0;
	}
	eng_take_carry(&j);
	if (extra) {
		/* a device-level finding the scan proved (eng_scan_overflow()) */
		j.counts[PC_CLS_COLLATERAL]++;
		j.violations++;
		list_finding(&j, extra);
	}
	eng_add_refused(&j, w);
	json_object_put(j.scratch);
	snprintf(why, sizeof(why), "the records were not judged: %s", reason);
	return eng_verdict_write(&j, w->cycle, outcome, w, NULL, NULL, why);
}

/* ---- event intake ---- */

/* A device-level finding, reported in the next verdict. */
void eng_carry_device(struct board *b, json_object *f)
{
	eng_carry_add(&b->carry, f, b->cur_cycle);
}

/*
 * crash_acks.c - the agent's ACKs against the device's log (issue 38,
 * docs/crash-states.md "ACK marks"). An agent that keeps its inputs (the
 * sim) puts a mark "pc-ack FIRST N" in the write log right before each ACK
 * goes to the host: the ACK then stands in the device's own order, not the
 * host's clock. At every mark the records it names must be durable by the
 * log up to it (a FUA write, or a write a flush logged before the mark
 * follows); at the real cut, every ACK the host received must be durable by
 * the whole log. A record that fails either is counted once in
 * acked_not_durable. With marks, the host's ACKs must be the marks, in
 * order (a host ACK without its mark: acks_unmarked).
 */
#include "harness/crash/crash_judge.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* The records of [first, first + n) that are the cycle's: [*lo, *hi). 0 when none. */
static int mark_recs(const struct crash_inputs *c, const struct cmark *m, size_t *lo, size_t *hi)
{
	uint64_t end = c->first + c->nrec, a = m->first, b = m->first + m->n;

	if (b <= c->first || a >= end)
		return 0;
	*lo = (size_t)((a > c->first ? a : c->first) - c->first);
	*hi = (size_t)((b < end ? b : end) - c->first);
	return 1;
}

static void cover_write(const struct crash_inputs *c, size_t wi, uint8_t *cover)
{
	for (uint64_t k = 0; k < c->w[wi].n; k++) {
		size_t s = c->w[wi].sect0 + k;

		if (c->tgt[s] >= 0 && c->isnew[s])
			cover[c->tgt[s]] = 1;
	}
}

static int rec_whole(const struct crash_inputs *c, const uint8_t *cover, size_t r)
{
	for (uint32_t k = 0; k < c->spr; k++)
		if (!cover[r * c->spr + k])
			return 0;
	return 1;
}

static int is_flush_entry(const struct crash_inputs *c, size_t p, size_t wi)
{
	/* a persistence point that is not a FUA write (writes before it: index < wi) */
	return !(wi < c->nw && c->w[wi].entry == c->pp[p]);
}

/* Walk the log in order: at each mark, what it names must be durable by then. */
static void marks_walk(const struct crash_inputs *c, struct crash_result *r, uint8_t *cover, uint8_t *bad)
{
	size_t wi = 0, pi = 0, flushed = 0, lo, hi;

	for (size_t mi = 0; mi <= c->nmk; mi++) {
		size_t until = mi < c->nmk ? c->mk[mi].entry : SIZE_MAX;

		/* the writes and flushes logged before the mark */
		while ((wi < c->nw && c->w[wi].entry < until) || (pi < c->npp && c->pp[pi] < until)) {
			if (pi < c->npp && (wi >= c->nw || c->pp[pi] <= c->w[wi].entry)) {
				if (is_flush_entry(c, pi, wi))
					for (; flushed < wi; flushed++)
						cover_write(c, flushed, cover);
				pi++;
				continue;
			}
			if (c->w[wi].fua && wi < c->nw - (size_t)c->in_flight)
				cover_write(c, wi, cover);
			wi++;
		}
		if (mi == c->nmk || !mark_recs(c, &c->mk[mi], &lo, &hi))
			continue;
		for (size_t q = lo; q < hi; q++) {
			if (rec_whole(c, cover, q) || bad[q])
				continue;
			bad[q] = 1;
			r->acked_not_durable++;
			crash_note(r, "cycle %u: seq %" PRIu64 " acknowledged (its ACK mark is log entry %zu) before the "
				   "log made it durable", c->in->cycle, c->rec[q].seq, c->mk[mi].entry);
		}
	}
}

/* With marks: the host's ACKs, in order, are the marks' (a cut may swallow the last ones). */
static void marks_match(const struct crash_inputs *c, struct crash_result *r)
{
	size_t k = 0;

	for (size_t i = 0, n = json_object_array_length(c->mid); i < n; i++) {
		json_object *ev = json_object_array_get_idx(c->mid, i), *m;

		if (strcmp(crash_msg_type(ev), "ack") || !json_object_object_get_ex(ev, "msg", &m))
			continue;
		if (k >= c->nmk || crash_ev_int(m, "first", NULL, 0) != (int64_t)c->mk[k].first ||
		    crash_ev_int(m, "n", NULL, 0) != (int64_t)c->mk[k].n) {
			r->acks_unmarked++;
			crash_note(r, "cycle %u: the host's ACK %zu (of seq %" PRId64 "+%" PRId64 ") is not the agent's "
				   "ACK mark %zu in the log", c->in->cycle, k + 1, crash_ev_int(m, "first", NULL, 0),
				   crash_ev_int(m, "n", NULL, 0), k + 1);
		}
		k++;
	}
}

/* The ACKs of the cycle against the log: r->acked, acked_not_durable, ack_marks, acks_unmarked. */
int crash_acks_check(const struct crash_inputs *c, struct crash_result *r, char *err, size_t errlen)
{
	uint8_t *cover = calloc(c->nrec * c->spr, 1), *bad = calloc(c->nrec, 1);

	if (!cover || !bad) {
		free(cover);
		free(bad);
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	}
	r->ack_marks = (unsigned)c->nmk;
	if (c->nmk) {
		marks_walk(c, r, cover, bad);
		marks_match(c, r);
		memset(cover, 0, c->nrec * c->spr);
	}
	/* the real cut: every record an ACK the host received names, durable by the whole log */
	for (size_t i = 0; i < c->nw; i++)
		if (c->w[i].durable)
			cover_write(c, i, cover);
	for (size_t i = 0; i < c->nrec; i++) {
		r->acked += c->rec[i].acked;
		if (!c->rec[i].acked || bad[i] || rec_whole(c, cover, i))
			continue;
		bad[i] = 1;
		r->acked_not_durable++;
		crash_note(r, "cycle %u: seq %" PRIu64 " acknowledged, not durable by the log", c->in->cycle,
			   c->rec[i].seq);
	}
	free(cover);
	free(bad);
	return 0;
}

/* The ACKs the host can have received by log entry at: the marks before it (with marks). */
size_t crash_marks_before(const struct crash_inputs *c, size_t at)
{
	size_t n = 0;

	while (n < c->nmk && c->mk[n].entry < at)
		n++;
	return n < c->nacks ? n : c->nacks;
}

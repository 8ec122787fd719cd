/*
 * crash_states.c - which crash states a cycle has: every subset of the
 * volatile writes (or the bounded sample beyond), each volatile write torn
 * by a covering design and by its in-order prefixes, a virtual cut at each
 * persistence point, the illegal states, and the image after the real cut;
 * each made in the states' crash_state and judged by the judge
 * (crash_judge.h). See crash.h and docs/crash-states.md.
 */
#include "harness/crash/crash_states.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "harness/results/verdict.h"

/* keep[]: every durable write whole; each volatile write as bits say (1 kept). */
static void keep_set(struct crash_states *c, const uint8_t *volkeep)
{
	for (size_t i = 0, v = 0; i < c->inp->nw; i++) {
		int k = c->inp->w[i].durable ? 1 : volkeep[v++];

		memset(c->st.keep + c->inp->w[i].sect0, k, (size_t)c->inp->w[i].n);
	}
}

static int subset(struct crash_states *c, const uint8_t *volkeep, const char *label, char *err, size_t errlen)
{
	keep_set(c, volkeep);
	c->st.ack_limit = SIZE_MAX;
	return crash_legal(c->j, CRASH_M_SUBSETS, label, err, errlen);
}

int crash_subsets(struct crash_states *c, char *err, size_t errlen)
{
	uint8_t *k = calloc(c->inp->nvol ? c->inp->nvol : 1, 1);
	char label[64];
	int rc = 0;

	if (!k)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	if (c->inp->nvol <= c->o->exhaustive) {
		for (uint64_t m = 0; m < (1ull << c->inp->nvol) && !rc; m++) {
			for (unsigned i = 0; i < c->inp->nvol; i++)
				k[i] = (m >> i) & 1;
			snprintf(label, sizeof(label), "subset 0x%" PRIx64, m);
			rc = subset(c, k, label, err, errlen);
		}
		free(k);
		return rc;
	}
	memset(k, 1, c->inp->nvol);
	rc = subset(c, k, "all kept", err, errlen);
	memset(k, 0, c->inp->nvol);
	if (!rc)
		rc = subset(c, k, "all dropped", err, errlen);
	for (unsigned i = 0; i < c->inp->nvol && !rc; i++) {
		memset(k, 1, c->inp->nvol);
		k[i] = 0;
		snprintf(label, sizeof(label), "drop %u", i);
		rc = subset(c, k, label, err, errlen);
		if (rc)
			break;
		memset(k, 0, c->inp->nvol);
		k[i] = 1;
		snprintf(label, sizeof(label), "keep %u", i);
		rc = subset(c, k, label, err, errlen);
	}
	/* in-order prefixes: the first i volatile writes in completion order (0 and all: above) */
	for (unsigned i = 1; i < c->inp->nvol && !rc; i++) {
		for (unsigned j = 0; j < c->inp->nvol; j++)
			k[j] = j < i;
		snprintf(label, sizeof(label), "prefix %u", i);
		rc = subset(c, k, label, err, errlen);
	}
	for (unsigned r = 0; r < c->o->random && !rc; r++) {
		uint64_t x = crash_mix(c->o->seed ^ crash_mix(c->inp->in->cycle) ^ crash_mix(r + 0x243f6a8885a308d3ULL));

		for (unsigned j = 0; j < c->inp->nvol; j++) {
			if (j % 64 == 0 && j)
				x = crash_mix(x);
			k[j] = (x >> (j % 64)) & 1;
		}
		snprintf(label, sizeof(label), "random %u", r);
		rc = subset(c, k, label, err, errlen);
	}
	free(k);
	return rc;
}


static uint64_t binom(unsigned n, unsigned k)
{
	uint64_t r = 1;

	for (unsigned i = 1; i <= k; i++)
		r = r * (n - k + i) / i;
	return r;
}

int crash_design_make(struct design *d, uint32_t spr)
{
	unsigned w;
	uint64_t x;

	d->col = NULL;
	d->m = d->rows = 0;
	if (spr < 2)
		return 0;
	for (d->m = 2; d->m < 62 && binom(d->m, d->m / 2 + 1) < spr; d->m++)
		;
	w = d->m / 2 + 1;
	d->col = calloc(spr, sizeof(*d->col));
	if (!d->col)
		return -ENOMEM;
	x = (1ull << w) - 1;
	for (uint32_t i = 0; i < spr; i++) {
		uint64_t c0 = x & -x, r0 = x + c0;

		d->col[i] = x;
		x = (((r0 ^ x) >> 2) / c0) | r0;	/* the next word of the same weight (Gosper) */
	}
	d->rows = d->m + spr - 1;
	return 0;
}

/*
 * The covering design does what the tears rely on: each sector kept by some
 * row and dropped by another, and any two sectors kept and dropped, dropped
 * and kept, and both kept by some row (pairs checked up to 512 sectors a
 * record; beyond, positions only). 0, or -EPROTO naming what it misses.
 */
int crash_design_check(const struct design *d, uint32_t spr, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < spr && spr >= 2; i++) {
		uint64_t c = d->col[i] & ((d->m < 64 ? 1ull << d->m : 0) - 1);

		if (!c || c == ((d->m < 64 ? 1ull << d->m : 0) - 1))
			return pc_fail(err, errlen, -EPROTO, "the covering design over %u sectors never %s sector %u",
				       spr, c ? "drops" : "keeps", i);
		for (uint32_t j = i + 1; j < spr && spr <= 512; j++) {
			uint64_t cj = d->col[j];

			if (!(c & ~cj) || !(cj & ~c) || !(c & cj))
				return pc_fail(err, errlen, -EPROTO, "the covering design over %u sectors never %s "
					       "sectors %u and %u", spr, !(c & ~cj) ? "keeps-drops" : !(cj & ~c) ?
					       "drops-keeps" : "keeps both", i, j);
		}
	}
	return 0;
}

static int design_row_kept(const struct design *d, unsigned row, uint32_t idx)
{
	if (row >= d->m)
		return idx < row - d->m + 1;	/* a prefix */
	return (d->col[idx] >> row) & 1;
}

/* Does the row keep some sectors and drop others? */
static int design_row_tears(const struct design *d, unsigned row, uint32_t spr)
{
	unsigned kept = 0;

	for (uint32_t i = 0; i < spr; i++)
		kept += design_row_kept(d, row, i);
	return kept && kept < spr;
}

/* Does volatile write v get every tear mask (2^spr - 2 of them: records of at most
 * CRASH_ALL_MASKS_SPR sectors; every volatile write while there are at most
 * CRASH_ALL_MASKS_WRITES, beyond only the first), or the design's rows? */
int crash_tear_all(const struct crash_states *c, unsigned v)
{
	return c->inp->spr <= CRASH_ALL_MASKS_SPR && (c->inp->nvol <= CRASH_ALL_MASKS_WRITES || v == 0);
}

/* How many tears write v gets, and whether tear t keeps sector idx of a record. */
static unsigned tears_of(const struct crash_states *c, const struct design *d, unsigned v)
{
	return crash_tear_all(c, v) ? (1u << c->inp->spr) - 2 : d->rows;
}

static int tear_kept(const struct crash_states *c, const struct design *d, unsigned v, unsigned t, uint32_t idx)
{
	if (crash_tear_all(c, v))
		return ((t + 1) >> idx) & 1;	/* the masks 1 .. 2^spr - 2 */
	return design_row_kept(d, t, idx);
}

static int tear_tears(const struct crash_states *c, const struct design *d, unsigned v, unsigned t)
{
	return crash_tear_all(c, v) || design_row_tears(d, t, c->inp->spr);
}

/* keep[] of write wi (volatile write v, or any write with v = UINT_MAX: the design's rows) torn by
 * tear t: each sector by its index in its record. */
static void tear(struct crash_states *c, const struct design *d, size_t wi, unsigned v, unsigned t)
{
	const struct cwrite *w = &c->inp->w[wi];
	uint64_t slot0 = c->inp->off_lba + PC_SB_RESERVE_SECT;

	for (uint64_t k = 0; k < w->n; k++) {
		uint64_t lba = w->lba + k;
		uint32_t idx = lba >= slot0 ? (uint32_t)((lba - slot0) % c->inp->spr) : (uint32_t)(k % c->inp->spr);

		c->st.keep[w->sect0 + k] = (uint8_t)(v == UINT_MAX ? design_row_kept(d, t, idx) :
						   tear_kept(c, d, v, t, idx));
	}
}

/* The seqs whose new sectors write wi carries. */
static void write_seqs(struct crash_states *c, size_t wi, uint64_t *lo, uint64_t *hi)
{
	const struct cwrite *w = &c->inp->w[wi];

	*lo = UINT64_MAX;
	*hi = 0;
	for (uint64_t k = 0; k < w->n; k++) {
		int32_t t = c->inp->tgt[w->sect0 + k];

		if (t >= 0 && c->inp->isnew[w->sect0 + k]) {
			uint64_t s = c->inp->rec[t / (int32_t)c->inp->spr].seq;

			*lo = s < *lo ? s : *lo;
			*hi = s > *hi ? s : *hi;
		}
	}
}

/*
 * Two torn writes: each pair of the first CRASH_PAIR_WRITES volatile writes (of two sectors or
 * more) torn together by each pair of the covering design's rows (m^2: any sector of one and any
 * of the other are then kept-kept, kept-dropped, dropped-kept and dropped-dropped in some state),
 * the other volatile writes kept.
 */
static int tear_pairs(struct crash_states *c, const struct design *d, uint8_t *k, char *err, size_t errlen)
{
	unsigned p = c->inp->nvol < CRASH_PAIR_WRITES ? c->inp->nvol : CRASH_PAIR_WRITES;
	char label[96];
	int rc = 0;

	memset(k, 1, c->inp->nvol ? c->inp->nvol : 1);
	for (unsigned a = 0; a < p && !rc; a++)
		for (unsigned b = a + 1; b < p && !rc && c->inp->w[c->inp->vol[a]].n >= 2; b++)
			for (unsigned r = 0; r < d->m && !rc && c->inp->w[c->inp->vol[b]].n >= 2; r++)
				for (unsigned q = 0; q < d->m && !rc; q++) {
					if (!design_row_tears(d, r, c->inp->spr) || !design_row_tears(d, q, c->inp->spr))
						continue;
					keep_set(c, k);
					tear(c, d, c->inp->vol[a], UINT_MAX, r);
					tear(c, d, c->inp->vol[b], UINT_MAX, q);
					snprintf(label, sizeof(label), "writes %zu and %zu torn by rows %u and %u",
						 c->inp->vol[a], c->inp->vol[b], r, q);
					rc = crash_legal(c->j, CRASH_M_TEARS, label, err, errlen);
				}
	return rc;
}

int crash_tears(struct crash_states *c, const struct design *d, char *err, size_t errlen)
{
	uint8_t *k = malloc(c->inp->nvol ? c->inp->nvol : 1);
	char label[64];
	int rc = 0;

	if (!k)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	memset(k, 1, c->inp->nvol ? c->inp->nvol : 1);
	c->st.ack_limit = SIZE_MAX;
	for (unsigned v = 0; v < c->inp->nvol && !rc; v++)
		for (unsigned row = 0; row < tears_of(c, d, v) && !rc; row++) {
			if (!tear_tears(c, d, v, row) || c->inp->w[c->inp->vol[v]].n < 2)
				continue;
			keep_set(c, k);
			tear(c, d, c->inp->vol[v], v, row);
			snprintf(label, sizeof(label), "write %zu torn by %s %u", c->inp->vol[v],
				 crash_tear_all(c, v) ? "mask" : "row", crash_tear_all(c, v) ? row + 1 : row);
			if (c->o->locality)
				write_seqs(c, c->inp->vol[v], &c->st.cap_lo, &c->st.cap_hi);
			rc = crash_legal(c->j, CRASH_M_TEARS, label, err, errlen);
			if (rc || !c->o->locality || !c->st.cap_hi)
				continue;
			/* judging is local to a slot: the same tear with every other volatile write
			 * dropped must give the torn records the same findings */
			{
				char *with = crash_judge_captured(c->j), *again;

				memset(k, 0, c->inp->nvol);
				keep_set(c, k);
				memset(k, 1, c->inp->nvol);
				tear(c, d, c->inp->vol[v], v, row);
				snprintf(label, sizeof(label), "write %zu torn by tear %u, the others dropped", c->inp->vol[v],
					 row);
				rc = crash_legal(c->j, CRASH_M_TEARS, label, err, errlen);
				again = crash_judge_captured(c->j);
				c->r->locality_checked++;
				if (!rc && (!with || !again || strcmp(with, again))) {
					c->r->locality_breaks++;
					crash_note(c->r, "cycle %u: %s: the torn record's findings changed with the other "
					     "writes: %s / %s", c->inp->in->cycle, label, with ? with : "?",
					     again ? again : "?");
				}
				free(with);
				free(again);
			}
			c->st.cap_lo = c->st.cap_hi = 0;
		}
	if (!rc)
		rc = tear_pairs(c, d, k, err, errlen);
	free(k);
	return rc;
}

/* A virtual cut at each persistence point: the log up to it, the ACKs received by then. */
int crash_cuts(struct crash_states *c, char *err, size_t errlen)
{
	uint8_t *dur = malloc(c->inp->nw ? c->inp->nw : 1), *rdur = malloc(c->inp->nrec);
	char label[64];
	int rc = 0;

	if (!dur || !rdur) {
		free(dur);
		free(rdur);
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	}
	for (size_t p = 0; p < c->inp->npp && !rc; p++) {
		size_t at = c->inp->pp[p], limit = 0;

		/* the log up to and with the persistence point; what it made durable */
		for (size_t i = 0; i < c->inp->nw; i++) {
			int in = c->inp->w[i].entry <= at;
			int flushed = 0;

			for (size_t q = 0; q <= p && !flushed; q++)
				flushed = c->inp->pp[q] > c->inp->w[i].entry && !(c->inp->w[i].fua && c->inp->pp[q] == c->inp->w[i].entry);
			memset(c->st.keep + c->inp->w[i].sect0, in, (size_t)c->inp->w[i].n);
			/* a flush logged after it, up to the point, or its own FUA */
			dur[i] = in && (c->inp->w[i].fua || flushed);
		}
		memset(rdur, 0, c->inp->nrec);
		{
			/* a record is durable at p when its new sectors all come from durable writes */
			uint8_t *cover = calloc(c->inp->nrec * c->inp->spr, 1);

			if (!cover) {
				rc = pc_fail(err, errlen, -ENOMEM, "out of memory");
				break;
			}
			for (size_t i = 0; i < c->inp->nw; i++)
				for (uint64_t k = 0; dur[i] && k < c->inp->w[i].n; k++) {
					size_t s = c->inp->w[i].sect0 + k;

					if (c->inp->tgt[s] >= 0 && c->inp->isnew[s])
						cover[c->inp->tgt[s]] = 1;
				}
			for (size_t r = 0; r < c->inp->nrec; r++) {
				rdur[r] = 1;
				for (uint32_t k = 0; k < c->inp->spr; k++)
					rdur[r] &= cover[r * c->inp->spr + k];
			}
			free(cover);
		}
		/* the ACKs received by then: with marks, those the agent had sent (marked before the point);
		 * else the ACK events, in order, while all they name is durable */
		if (c->inp->nmk)
			limit = crash_marks_before(c->inp, at);
		for (size_t i = 0, n = c->inp->nmk ? 0 : json_object_array_length(c->inp->mid), lo, hi; i < n; i++) {
			int rc2 = crash_ack_range(c->inp, json_object_array_get_idx(c->inp->mid, i), &lo, &hi), all = rc2 == 0;

			if (rc2 < 0)
				continue;
			for (size_t r = lo; r < hi && all; r++)
				all = rdur[r];
			if (!all)
				break;
			limit++;
		}
		c->st.ack_limit = limit;
		snprintf(label, sizeof(label), "cut at log entry %zu (%zu acks)", at, limit);
		rc = crash_legal(c->j, CRASH_M_CUTS, label, err, errlen);
	}
	free(dur);
	free(rdur);
	return rc;
}

/* Each durable write whose records were all acknowledged: dropped, then torn. */
int crash_illegal(struct crash_states *c, const struct design *d, char *err, size_t errlen)
{
	uint8_t *k = malloc(c->inp->nvol ? c->inp->nvol : 1);
	char label[96];
	int rc = 0;

	if (!k)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	memset(k, 1, c->inp->nvol ? c->inp->nvol : 1);
	c->st.ack_limit = SIZE_MAX;
	for (size_t i = 0; i < c->inp->nw && rc >= 0; i++) {
		const struct cwrite *w = &c->inp->w[i];
		int acked = 0, all = 1;
		unsigned row = 0;

		if (!w->durable)
			continue;
		for (uint64_t s = 0; s < w->n; s++) {
			int32_t t = c->inp->tgt[w->sect0 + s];

			if (t >= 0 && c->inp->isnew[w->sect0 + s]) {
				acked = 1;
				all &= c->inp->rec[t / (int32_t)c->inp->spr].acked;
			}
		}
		if (!acked || !all)
			continue;
		for (int torn = 0; torn < 3 && rc >= 0; torn++) {
			static const char *const how[] = { "dropped", "torn", "torn within a sector" };
			int failed;

			keep_set(c, k);
			if (!torn) {
				memset(c->st.keep + w->sect0, 0, (size_t)w->n);
			} else if (torn == 1) {
				while (row < d->m && !design_row_tears(d, row, c->inp->spr))
					row++;
				if (row >= d->m || w->n < 2)
					continue;
				tear(c, d, i, UINT_MAX, row);
			} else {
				/* a sector of a record it writes keeps its old second half: the judge's
				 * torn_sector path, a violation for an acknowledged record */
				size_t s = w->sect0 + w->n / 2;

				if (c->inp->tgt[s] < 0 || !c->inp->isnew[s])
					continue;
				c->st.half = s + 1;
			}
			snprintf(label, sizeof(label), "durable write %zu (lba %" PRIu64 ") %s", i, w->lba, how[torn]);
			rc = crash_state_judge(c->j, CRASH_M_ILLEGAL, label, 0, &failed, err, errlen);
			c->st.half = 0;
			if (rc < 0)
				break;
			c->r->injected++;
			/* caught: FAIL naming exactly the write's seqs (the judge's full agreement) */
			if (rc == 1 && failed)
				c->r->caught++;
			else
				crash_note(c->r, "cycle %u: injected %s not caught", c->inp->in->cycle, label);
			rc = 0;
		}
	}
	free(k);
	return rc < 0 ? rc : 0;
}

/* Does write wi (volatile write v) hold in keep[] exactly one of its tears? */
static int tear_row_of(struct crash_states *c, const struct design *d, size_t wi, unsigned v)
{
	const struct cwrite *w = &c->inp->w[wi];
	uint64_t slot0 = c->inp->off_lba + PC_SB_RESERVE_SECT;

	if (crash_tear_all(c, v)) {
		/* every mask was a tear of it: the same mask in each record it covers */
		for (uint64_t k = c->inp->spr; k < w->n; k++)
			if (c->st.keep[w->sect0 + k] != c->st.keep[w->sect0 + k % c->inp->spr])
				return 0;
		return 1;
	}
	for (unsigned row = 0; row < d->rows; row++) {
		int same = 1;

		for (uint64_t k = 0; k < w->n && same; k++) {
			uint64_t lba = w->lba + k;
			uint32_t idx = lba >= slot0 ? (uint32_t)((lba - slot0) % c->inp->spr) : (uint32_t)(k % c->inp->spr);

			same = c->st.keep[w->sect0 + k] == design_row_kept(d, row, idx);
		}
		if (same)
			return 1;
	}
	return 0;
}

/* What the image after the cut holds, against the log. */
struct obs {
	uint8_t *vk;		/* per volatile write: kept whole */
	int other;		/* a written sector neither old nor new */
	int outside;		/* a change outside the log's writes */
	int durable_lost;	/* a durable write lost or torn */
	int torn_ok;		/* each torn write torn by a row of the design */
	unsigned torn_n;	/* volatile writes torn */
};

/* The base image again in the map, then the image after the cut over it, noting changes outside the
 * log's writes (only the sectors that differ are copied: the map's other pages stay shared). */
static int obs_load(struct crash_states *c, struct obs *ob, char *err, size_t errlen)
{
	unsigned char *chunk = malloc(1 << 20);
	struct stat st;
	int pfd = -1, rc = 0;

	if (!chunk)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	pfd = open(c->inp->in->post, O_RDONLY | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, &st) < 0) {
		rc = pc_fail(err, errlen, -errno, "image %s: %s", c->inp->in->post, strerror(errno));
		goto out;
	}
	if ((uint64_t)st.st_size != c->inp->map_len) {
		rc = pc_fail(err, errlen, -EINVAL, "image %s: %lld bytes, the base image %s %zu", c->inp->in->post,
			  (long long)st.st_size, c->inp->in->base, c->inp->map_len);
		goto out;
	}
	for (size_t i = 0; i < c->inp->next; i++)
		memcpy(c->inp->map + c->inp->ext[i].lba * 512, c->inp->ext[i].base, (size_t)c->inp->ext[i].n * 512);
	for (size_t o = 0, e = 0; o < c->inp->map_len; o += 1 << 20) {
		size_t len = c->inp->map_len - o < (1u << 20) ? c->inp->map_len - o : 1u << 20;

		if (pc_pread_all(pfd, chunk, len, (off_t)o)) {
			rc = pc_fail(err, errlen, -EIO, "image %s: cannot read %zu bytes at %zu", c->inp->in->post, len, o);
			goto out;
		}
		for (size_t k = 0; k < len; k += 512) {
			uint64_t lba = (o + k) / 512;

			if (!memcmp(chunk + k, c->inp->map + o + k, 512))
				continue;
			while (e < c->inp->next && c->inp->ext[e].lba + c->inp->ext[e].n <= lba)
				e++;
			if (e >= c->inp->next || lba < c->inp->ext[e].lba)
				ob->outside = 1;
			memcpy(c->inp->map + o + k, chunk + k, 512);
		}
	}
out:
	if (pfd >= 0)
		close(pfd);
	free(chunk);
	return rc;
}

/* Per write sector: does the image hold the write's bytes (keep[]); which volatile writes are whole,
 * torn (by a row of the design?), and whether a durable one was lost. */
static void obs_classify(struct crash_states *c, const struct design *d, struct obs *ob)
{
	for (size_t i = 0, v = 0; i < c->inp->nw; i++) {
		const struct cwrite *w = &c->inp->w[i];
		uint64_t kept = 0;

		for (uint64_t k = 0; k < w->n; k++) {
			size_t s = w->sect0 + k;
			const unsigned char *img = c->inp->map + (w->lba + k) * 512;

			c->st.keep[s] = !memcmp(img, c->inp->data + s * 512, 512);
			if (!c->st.keep[s] && memcmp(img, c->inp->ext[w->ext].base + w->ext_off + k * 512, 512))
				ob->other = 1;	/* neither the old bytes nor the new */
			kept += c->st.keep[s];
		}
		if (w->durable) {
			ob->durable_lost |= kept != w->n;
			continue;
		}
		ob->vk[v] = kept == w->n;
		if (kept && kept < w->n) {
			ob->torn_n++;
			ob->torn_ok &= tear_row_of(c, d, i, v);
		}
		v++;
	}
}

/* What the observed state is, before its fingerprint is looked up: one tear by a row with the other
 * volatile writes kept, or a subset (2: a state the enumeration has, if it was drawn); each torn
 * write torn by a row and the whole ones a subset of the exhaustive enumeration (1: covered slot by
 * slot -- judging is local to a slot); a legal state whose truth is known but that the design does
 * not hold (3: a tear mask no row has, a subset the random draws missed); else 0 (not legal, or
 * bytes no state has). */
static int obs_enumerated(struct crash_states *c, const struct obs *ob)
{
	unsigned not_whole = 0;

	if (ob->other || ob->outside || ob->durable_lost)
		return 0;
	if (ob->torn_n == 0)
		return 2;
	if (!ob->torn_ok)
		return 3;
	for (unsigned v = 0; v < c->inp->nvol; v++)
		not_whole += !ob->vk[v];
	/* the torn write is the one not whole: all the others kept */
	return ob->torn_n == 1 && not_whole == 1 ? 2 : c->inp->nvol <= c->o->exhaustive ? 1 : 3;
}

/* The observed state judged with a full scan, as the real boot; compared with what it holds when
 * that is known, and with the recorded verdict. 0 or -errno. */
static int obs_judge(struct crash_states *c, const struct obs *ob, char *err, size_t errlen)
{
	json_object *full;
	int rc, failed = 0;

	c->st.ack_limit = SIZE_MAX;
	c->st.no_truth = ob->other || ob->outside;
	full = crash_verify_event(c->inp, c->inp->in->cycle + 1, pc_msg_verify(c->inp->pattern, 1));
	crash_judge_verify(c->j, full);
	rc = full ? crash_state_judge(c->j, CRASH_M_OBSERVED, "observed", 1, &failed, err, errlen) : -ENOMEM;
	json_object_put(full);
	crash_judge_verify(c->j, NULL);
	c->st.no_truth = 0;
	if (rc < 0)
		return rc;
	/* one more distinct state only when it is legal, known and none judged before */
	c->r->states += c->r->observed == 1 || c->r->observed == 3;
	c->r->observed_legal = !ob->durable_lost;
	c->r->observed_known = !ob->other && !ob->outside;
	if (c->r->observed_known)
		c->r->mismatches += rc == 0;
	snprintf(c->r->observed_verdict, sizeof(c->r->observed_verdict), "%s",
		 pc_outcome_names[failed ? PC_OUT_FAIL : PC_OUT_PASS]);
	c->r->observed_agrees = c->inp->in->recorded ? !strcmp(c->inp->in->recorded, c->r->observed_verdict) : -1;
	/* a disagreement fails the cycle, whether or not what the image holds is known */
	if (!c->r->observed_agrees)
		crash_note(c->r, "cycle %u: the image after the cut (%s, its content %s) is judged %s again; "
			   "verdicts.jsonl holds %s", c->inp->in->cycle,
			   !c->r->observed_legal ? "illegal" : c->r->observed_known ? "legal" : "unknown",
			   c->r->observed_known ? "known" : "not known", c->r->observed_verdict, c->inp->in->recorded);
	return 0;
}

/*
 * The image the boot after the cut scanned: which of the enumerated states it
 * is, and its verdict, from a full scan (as the real one was). When every
 * sector the log wrote holds its old or its new bytes and nothing else in
 * the image changed, what it holds is known and its verdict is compared
 * with it like any state's; else only with the recorded verdict.
 */
int crash_observed(struct crash_states *c, const struct design *d, char *err, size_t errlen)
{
	struct obs ob = { .vk = calloc(c->inp->nvol ? c->inp->nvol : 1, 1), .torn_ok = 1 };
	int rc;

	c->r->observed = 0;
	if (!ob.vk)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	rc = obs_load(c, &ob, err, errlen);
	if (!rc) {
		obs_classify(c, d, &ob);
		c->r->observed = obs_enumerated(c, &ob);
		/* exact: the same image and acks as a state judged; else, if legal and known, a new one */
		c->st.ack_limit = SIZE_MAX;
		if (c->r->observed) {
			int seen = crash_state_seen(c->j);

			if (seen < 0)
				rc = pc_fail(err, errlen, -ENOMEM, "out of memory");
			c->r->observed = seen == 1 ? 2 : c->r->observed == 2 ? 3 : c->r->observed;
		}
		if (ob.durable_lost)
			crash_note(c->r, "cycle %u: the image after the cut lost or tore a write the log made durable",
				   c->inp->in->cycle);
		if (ob.other || ob.outside)
			crash_note(c->r, "cycle %u: the image after the cut holds bytes no enumerated state has (%s): its "
				   "verdict is compared with the recorded one only", c->inp->in->cycle,
				   ob.other ? "a written sector neither old nor new" : "a change outside the log's writes");
		if (!rc)
			rc = obs_judge(c, &ob, err, errlen);
	}
	free(ob.vk);
	return rc;
}

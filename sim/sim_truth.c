/*
 * sim_truth.c - the emulated eMMC's ground-truth log (see sim_truth.h).
 *
 * Power-on reads only the log's tail: the lines from the last power_on on,
 * i.e. the previous session (and what a cut settle of it already wrote), so
 * power-on costs the same on the first cycle and the ten-thousandth.
 *
 * The settle judges two kinds of promise the previous session broke in the
 * volatile cache: the entries of flush_lie and fua_ignored lines (dropped),
 * and the cached tails of reliable writes acknowledged early (torn_acked).
 * It also voids a misdirect whose data is gone from where it landed (the cut
 * came before it was programmed, or a later write covered it): the verifier
 * cannot find what is not there.
 */
#include "sim/sim_truth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/crc32c.h"

#include "common/json.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"

#define TRUTH_SUFFIX	".truth.jsonl"
#define TRUTH_CHUNK	65536
/* Every power_on line starts so: json-c keeps the order keys were added in. */
#define POWER_ON_MARK	"{\"ev\":\"power_on\""

struct sim_truth {
	char *path;
	int fd;
	uint32_t session;
	int need_nl;		/* the log ends in a torn line: begin on a new one */
};

/* A logged request with one more number: relwr_early_ack (x: sectors
 * programmed before the ack) or misdirect (x: the landing LBA). */
struct ent_x {
	struct sim_truth_ent e;
	uint64_t x;
};

/* What the previous session's log says, gathered for the settle. */
struct prev_session {
	uint32_t session;	/* 0: there was none */
	int settled;
	int bricked;
	struct sim_truth_ent *lies;
	size_t nlies, alies;
	struct sim_truth_ent *dropped;	/* already logged (a cut settle): lba, seq */
	size_t ndropped, adropped;
	struct ent_x *early;
	size_t nearly, aearly;
	struct sim_truth_ent *torn;	/* torn_acked already logged: lba, seq */
	size_t ntorn, atorn;
	struct ent_x *misdir;
	size_t nmisdir, amisdir;
	struct sim_truth_ent *voids;	/* misdirect_void already logged: lba, seq */
	size_t nvoids, avoids;
};

uint32_t sim_truth_session(const struct sim_truth *t)
{
	return t->session;
}

/* Does the log end with line s (len bytes), as a whole line? */
static int truth_ends_with(struct sim_truth *t, const char *s, size_t len)
{
	size_t want = len + 2;	/* the newline before, the line, its newline */
	struct stat st;
	char *tail;
	int ok;

	if (fstat(t->fd, &st) < 0 || (uint64_t)st.st_size < len + 1)
		return 0;
	tail = malloc(want);
	if (!tail)
		return 0;
	if ((uint64_t)st.st_size == len + 1) {
		tail[0] = '\n';	/* the line is the whole log */
		ok = pc_pread_all(t->fd, tail + 1, len + 1, 0) == 0;
	} else {
		ok = pc_pread_all(t->fd, tail, want, st.st_size - (off_t)want) == 0;
	}
	ok = ok && tail[0] == '\n' && memcmp(tail + 1, s, len) == 0 && tail[len + 1] == '\n';
	free(tail);
	return ok;
}

/*
 * Append one line (taking o); fdatasync it when it records a dropped write.
 * once: not if the log already ends with it.
 */
static int truth_append_once(struct sim_truth *t, json_object *o, int sync, int once)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(s), n = 0;
	char *line;
	int ret = 0;

	if (once && !t->need_nl && truth_ends_with(t, s, len)) {
		json_object_put(o);
		return 0;
	}
	line = malloc(len + 2);
	if (!line) {
		json_object_put(o);
		return -ENOMEM;
	}
	if (t->need_nl)
		line[n++] = '\n';
	memcpy(line + n, s, len);
	n += len;
	line[n++] = '\n';
	json_object_put(o);
	/* one write() per line: a SIGKILL cannot interleave or split it */
	ret = pc_write_all(t->fd, line, n);
	free(line);
	if (ret)
		return ret;
	t->need_nl = 0;
	if (sync && fdatasync(t->fd) < 0)
		return -errno;
	return 0;
}

static int truth_append(struct sim_truth *t, json_object *o, int sync)
{
	return truth_append_once(t, o, sync, 0);
}

static json_object *truth_line(const char *ev, uint32_t session)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ev", json_object_new_string(ev));
	json_object_object_add(o, "session", json_object_new_int64(session));
	return o;
}

static void truth_ent_add(json_object *o, const struct sim_truth_ent *e)
{
	json_object_object_add(o, "lba", json_object_new_uint64(e->lba));
	json_object_object_add(o, "n", json_object_new_int64(e->n));
	if (e->raw)
		json_object_object_add(o, "raw", json_object_new_boolean(1));
	else
		json_object_object_add(o, "seq", json_object_new_uint64(e->seq));
}

int sim_truth_cut(struct sim_truth *t, const char *ev, const struct sim_truth_kv *kv, size_t nkv,
		  const struct sim_truth_ent *ents, size_t nents, const char *expect)
{
	json_object *o = truth_line(ev, t->session);

	for (size_t i = 0; i < nkv; i++)
		json_object_object_add(o, kv[i].key, json_object_new_uint64(kv[i].v));
	if (ents) {
		json_object *arr = json_object_new_array();

		for (size_t i = 0; i < nents; i++) {
			json_object *e = json_object_new_object();

			truth_ent_add(e, &ents[i]);
			json_object_array_add(arr, e);
		}
		json_object_object_add(o, "entries", arr);
	}
	if (expect)
		json_object_object_add(o, "expect", json_object_new_string(expect));
	return truth_append(t, o, 0);
}

int sim_truth_flush_lie(struct sim_truth *t, const struct sim_truth_ent *ents, size_t n)
{
	json_object *o = truth_line("flush_lie", t->session);
	json_object *arr = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_new_object();

		truth_ent_add(e, &ents[i]);
		json_object_array_add(arr, e);
	}
	json_object_object_add(o, "entries", arr);
	return truth_append(t, o, 1);
}

int sim_truth_fua_ignored(struct sim_truth *t, const struct sim_truth_ent *e)
{
	json_object *o = truth_line("fua_ignored", t->session);

	truth_ent_add(o, e);
	return truth_append(t, o, 1);
}

int sim_truth_fault(struct sim_truth *t, uint32_t session, const char *ev,
		    const struct sim_truth_kv *kv, size_t nkv, const char *expect, int once)
{
	json_object *o = truth_line(ev, session);

	for (size_t i = 0; i < nkv; i++)
		json_object_object_add(o, kv[i].key, json_object_new_uint64(kv[i].v));
	if (expect)
		json_object_object_add(o, "expect", json_object_new_string(expect));
	return truth_append_once(t, o, 0, once);
}

int sim_truth_power_on(struct sim_truth *t, const char *profile, uint32_t cache_sectors,
		       uint32_t program_us, int faults, uint64_t seed, double rate,
		       char *err, size_t errlen)
{
	json_object *o = truth_line("power_on", t->session);
	int ret;

	json_object_object_add(o, "profile", json_object_new_string(profile));
	json_object_object_add(o, "cache_sectors", json_object_new_int64(cache_sectors));
	json_object_object_add(o, "program_us", json_object_new_int64(program_us));
	if (faults) {
		json_object_object_add(o, "seed", json_object_new_uint64(seed));
		json_object_object_add(o, "rate", pc_json_double(rate));
	}
	ret = truth_append(t, o, 1);
	if (ret)
		return pc_fail(err, errlen, ret, "truth log %s: cannot append: %s", t->path, strerror(-ret));
	return 0;
}

/* A non-negative integer member; 0 or -EINVAL. */
static int json_u64(json_object *o, const char *key, uint64_t *v)
{
	json_object *m = pc_jget(o, key);

	if (!m || !json_object_is_type(m, json_type_int))
		return -EINVAL;
	if (json_object_get_int64(m) < 0 && json_object_get_uint64(m) <= INT64_MAX)
		return -EINVAL;
	*v = json_object_get_uint64(m);
	return 0;
}

static int ents_push(struct sim_truth_ent **a, size_t *n, size_t *alloc, const struct sim_truth_ent *e)
{
	if (*n == *alloc) {
		size_t na = *alloc ? *alloc * 2 : 64;
		struct sim_truth_ent *p = realloc(*a, na * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*a = p;
		*alloc = na;
	}
	(*a)[(*n)++] = *e;
	return 0;
}

static int entx_push(struct ent_x **a, size_t *n, size_t *alloc, const struct ent_x *v)
{
	if (*n == *alloc) {
		size_t na = *alloc ? *alloc * 2 : 64;
		struct ent_x *q = realloc(*a, na * sizeof(*q));

		if (!q)
			return -ENOMEM;
		*a = q;
		*alloc = na;
	}
	(*a)[(*n)++] = *v;
	return 0;
}

/* A request line with lba, n, seq and the member xkey. */
static int entx_parse(json_object *o, const char *xkey, struct ent_x *v)
{
	uint64_t n;

	memset(v, 0, sizeof(*v));
	if (json_u64(o, "lba", &v->e.lba) || json_u64(o, "n", &n) || json_u64(o, "seq", &v->e.seq) ||
	    json_u64(o, xkey, &v->x) || n == 0 || n > UINT32_MAX)
		return -EINVAL;
	v->e.n = (uint32_t)n;
	return 0;
}

/* An entry object of a flush_lie or fua_ignored line; raw ones are not settled. */
static int prev_add_lie(struct prev_session *p, json_object *o)
{
	struct sim_truth_ent e = { 0 };
	json_object *raw;
	uint64_t n;

	if (json_object_object_get_ex(o, "raw", &raw) && json_object_get_boolean(raw))
		return 0;
	if (json_u64(o, "lba", &e.lba) || json_u64(o, "n", &n) || json_u64(o, "seq", &e.seq) ||
	    n == 0 || n > UINT32_MAX)
		return 0;	/* not ours to judge: skip, never crash */
	e.n = (uint32_t)n;
	return ents_push(&p->lies, &p->nlies, &p->alies, &e);
}

static int prev_add_line(struct prev_session *p, json_object *o)
{
	json_object *evo, *arr;
	const char *ev;
	uint64_t session;

	if (!json_object_object_get_ex(o, "ev", &evo) || !json_object_is_type(evo, json_type_string) ||
	    json_u64(o, "session", &session) || session != p->session)
		return 0;
	ev = json_object_get_string(evo);
	if (strcmp(ev, "flush_lie") == 0) {
		if (!json_object_object_get_ex(o, "entries", &arr) || !json_object_is_type(arr, json_type_array))
			return 0;
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			int ret = prev_add_lie(p, json_object_array_get_idx(arr, i));
			if (ret)
				return ret;
		}
	} else if (strcmp(ev, "fua_ignored") == 0) {
		return prev_add_lie(p, o);
	} else if (strcmp(ev, "relwr_early_ack") == 0) {
		struct ent_x a;

		if (entx_parse(o, "programmed", &a) || a.x >= a.e.n)
			return 0;
		return entx_push(&p->early, &p->nearly, &p->aearly, &a);
	} else if (strcmp(ev, "misdirect") == 0) {
		struct ent_x a;

		if (entx_parse(o, "landed", &a))
			return 0;
		return entx_push(&p->misdir, &p->nmisdir, &p->amisdir, &a);
	} else if (strcmp(ev, "misdirect_void") == 0) {
		struct sim_truth_ent e = { 0 };

		if (json_u64(o, "lba", &e.lba) || json_u64(o, "seq", &e.seq))
			return 0;
		return ents_push(&p->voids, &p->nvoids, &p->avoids, &e);
	} else if (strcmp(ev, "torn_acked") == 0) {
		struct sim_truth_ent e = { 0 };

		if (json_u64(o, "lba", &e.lba) || json_u64(o, "seq", &e.seq))
			return 0;
		return ents_push(&p->torn, &p->ntorn, &p->atorn, &e);
	} else if (strcmp(ev, "brick") == 0) {
		p->bricked = 1;
	} else if (strcmp(ev, "dropped") == 0) {
		struct sim_truth_ent e = { 0 };

		if (json_u64(o, "lba", &e.lba) || json_u64(o, "seq", &e.seq))
			return 0;
		return ents_push(&p->dropped, &p->ndropped, &p->adropped, &e);
	} else if (strcmp(ev, "settled") == 0) {
		p->settled = 1;
	}
	return 0;
}

/*
 * Read the tail of the log: from the start of the last complete power_on
 * line to the end of the last complete line. *torn says the log ends in a
 * line without its newline (a cut host), which is ignored.
 */
static int truth_read_tail(int fd, char **out, size_t *outlen, int *torn)
{
	struct stat st;
	off_t pos, vend = -1, start = -1;
	char *buf = NULL;
	size_t len = 0, mlen = strlen(POWER_ON_MARK);

	*out = NULL;
	*outlen = 0;
	*torn = 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	pos = st.st_size;
	while (pos > 0 && start < 0) {
		size_t chunk = pos > TRUTH_CHUNK ? TRUTH_CHUNK : (size_t)pos;
		char *nb = malloc(chunk + len + 1);
		int ret;

		if (!nb) {
			free(buf);
			return -ENOMEM;
		}
		ret = pc_pread_all(fd, nb, chunk, pos - (off_t)chunk);
		if (ret) {
			free(nb);
			free(buf);
			return ret;
		}
		if (len)
			memcpy(nb + chunk, buf, len);
		free(buf);
		buf = nb;
		len += chunk;
		pos -= (off_t)chunk;
		if (vend < 0) {
			for (size_t i = chunk; i-- > 0;) {
				if (buf[i] == '\n') {
					vend = pos + (off_t)i + 1;
					break;
				}
			}
		}
		if (vend < 0)
			continue;
		/* line starts in the new chunk; index 0 only once we know it is the file's start */
		for (size_t j = chunk + 1; j-- > 0;) {
			if (pos + (off_t)j + (off_t)mlen > vend || (j == 0 && pos > 0))
				continue;
			if ((j == 0 || buf[j - 1] == '\n') && memcmp(buf + j, POWER_ON_MARK, mlen) == 0) {
				start = pos + (off_t)j;
				break;
			}
		}
	}
	*torn = st.st_size > 0 && vend != st.st_size;
	if (start < 0) {
		/* no power_on: a new log (or one holding only a torn line) */
		free(buf);
		return 0;
	}
	memmove(buf, buf + (start - pos), (size_t)(vend - start));
	buf[vend - start] = 0;
	*out = buf;
	*outlen = (size_t)(vend - start);
	return 0;
}

/* Gather the previous session from the tail; its first line is its power_on. */
static int prev_parse(struct prev_session *p, char *tail, size_t len, const char *path,
		      char *err, size_t errlen)
{
	char *line = tail, *end = tail + len;
	int first = 1;

	while (line < end) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		json_object *o;
		int ret = 0;

		if (!nl)
			break;
		*nl = 0;
		o = json_tokener_parse(line);
		if (first) {
			uint64_t s;

			if (!o || json_u64(o, "session", &s) || s == 0 || s >= UINT32_MAX) {
				json_object_put(o);
				return pc_fail(err, errlen, -EINVAL, "truth log %s: the last power_on line is malformed; "
					 "move the log away to start over", path);
			}
			p->session = (uint32_t)s;
			first = 0;
		} else if (o) {
			ret = prev_add_line(p, o);
		}
		json_object_put(o);
		if (ret)
			return pc_fail(err, errlen, ret, "truth log %s: %s", path, strerror(-ret));
		line = nl + 1;
	}
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct sim_truth_ent *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->lba != y->lba)
		return x->lba < y->lba ? -1 : 1;
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return 0;
}

/*
 * Sectors of e missing from the media: a sector survived if it holds e's
 * record or a newer one written for the same LBA (the record header's lba is
 * region-relative; sim regions start at device LBA 0, so the two agree).
 */
static uint32_t settle_count(const struct sim_truth_ent *e, const uint8_t *map, uint64_t sectors)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < e->n; i++) {
		const uint8_t *s;

		if (e->lba + i >= sectors) {
			k++;
			continue;
		}
		s = map + (e->lba + i) * PC_SECTOR;
		/* a sector survived if it holds this record or a newer one -- a
		 * whole, checksummed sector: one whose bits flipped (paired page,
		 * bitrot) says nothing about its seq */
		if (pc_get32(s + PC_OFF_MAGIC) != PC_REC_MAGIC ||
		    pc_get32(s + PC_OFF_CRC) != pc_crc32c(0, s, PC_OFF_CRC) ||
		    pc_get64(s + PC_OFF_SEQ) < e->seq || pc_get64(s + PC_OFF_LBA) != e->lba + i)
			k++;
	}
	return k;
}

static int ents_have(const struct sim_truth_ent *a, size_t n, const struct sim_truth_ent *e)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].seq == e->seq && a[i].lba == e->lba)
			return 1;
	return 0;
}

/*
 * A reliable write acknowledged after only its first k sectors: its tail sat
 * in the volatile cache. If the cut lost any of the tail, the record is torn
 * although the device said it was whole. new_sectors counts the sectors that
 * hold the record (or a newer one), by the same test as settle_count().
 */
static int settle_early(struct sim_truth *t, const struct prev_session *p, const struct ent_x *a,
			const uint8_t *map, uint64_t sectors)
{
	const struct sim_truth_ent *e = &a->e;
	struct sim_truth_ent tail = { .lba = e->lba + a->x, .n = e->n - (uint32_t)a->x, .seq = e->seq };
	uint32_t missing;
	json_object *o;

	if (!settle_count(&tail, map, sectors) || ents_have(p->torn, p->ntorn, e))
		return 0;
	missing = settle_count(e, map, sectors);
	o = truth_line("torn_acked", p->session);
	json_object_object_add(o, "lba", json_object_new_uint64(e->lba));
	json_object_object_add(o, "n", json_object_new_int64(e->n));
	json_object_object_add(o, "seq", json_object_new_uint64(e->seq));
	json_object_object_add(o, "new_sectors", json_object_new_int64(e->n - missing));
	json_object_object_add(o, "expect", json_object_new_string("torn"));
	return truth_append(t, o, 0);
}

/*
 * A misdirect leaves evidence while a sector where it landed still holds the
 * misdirected record (its seq, and the lba it was meant for). With none left,
 * the misdirect line is void: the verifier has nothing to find.
 */
static int settle_misdirect(struct sim_truth *t, const struct prev_session *p, const struct ent_x *a,
			    const uint8_t *map, uint64_t sectors)
{
	const struct sim_truth_ent *e = &a->e;
	json_object *o;

	for (uint32_t i = 0; i < e->n; i++) {
		const uint8_t *s;

		if (a->x + i >= sectors)
			break;
		s = map + (a->x + i) * PC_SECTOR;
		if (pc_get32(s + PC_OFF_MAGIC) == PC_REC_MAGIC && pc_get64(s + PC_OFF_SEQ) == e->seq &&
		    pc_get64(s + PC_OFF_LBA) == e->lba + i)
			return 0;
	}
	if (ents_have(p->voids, p->nvoids, e))
		return 0;
	o = truth_line("misdirect_void", p->session);
	json_object_object_add(o, "lba", json_object_new_uint64(e->lba));
	json_object_object_add(o, "n", json_object_new_int64(e->n));
	json_object_object_add(o, "seq", json_object_new_uint64(e->seq));
	json_object_object_add(o, "landed", json_object_new_uint64(a->x));
	json_object_object_add(o, "expect", json_object_new_string("none"));
	return truth_append(t, o, 0);
}

static int truth_settle(struct sim_truth *t, struct prev_session *p, const uint8_t *map, uint64_t sectors)
{
	uint64_t ndrop = 0;
	json_object *o;
	int ret;

	if (p->nlies)
		qsort(p->lies, p->nlies, sizeof(p->lies[0]), ent_cmp);
	for (size_t i = 0; i < p->nlies; i++) {
		const struct sim_truth_ent *e = &p->lies[i];
		uint32_t k;

		/* listed by several flush_lie lines: settle it once */
		if (i && ent_cmp(e, &p->lies[i - 1]) == 0)
			continue;
		k = settle_count(e, map, sectors);
		if (!k)
			continue;
		ndrop++;
		if (ents_have(p->dropped, p->ndropped, e))	/* written by a settle that was cut */
			continue;
		o = truth_line("dropped", p->session);
		json_object_object_add(o, "seq", json_object_new_uint64(e->seq));
		json_object_object_add(o, "lba", json_object_new_uint64(e->lba));
		json_object_object_add(o, "sectors", json_object_new_int64(k));
		json_object_object_add(o, "of", json_object_new_int64(e->n));
		ret = truth_append(t, o, 1);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < p->nearly; i++) {
		ret = settle_early(t, p, &p->early[i], map, sectors);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < p->nmisdir; i++) {
		ret = settle_misdirect(t, p, &p->misdir[i], map, sectors);
		if (ret)
			return ret;
	}
	o = truth_line("settled", p->session);
	json_object_object_add(o, "dropped_records", json_object_new_uint64(ndrop));
	return truth_append(t, o, 1);
}

static void prev_free(struct prev_session *p)
{
	free(p->lies);
	free(p->dropped);
	free(p->early);
	free(p->torn);
	free(p->misdir);
	free(p->voids);
}

int sim_truth_open(const char *media, const uint8_t *map, uint64_t sectors,
		   struct sim_truth **out, char *err, size_t errlen)
{
	struct prev_session prev = { 0 };
	struct sim_truth *t;
	char *tail = NULL;
	size_t tlen;
	int ret;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t || asprintf(&t->path, "%s%s", media, TRUTH_SUFFIX) < 0) {
		free(t);
		return pc_fail(err, errlen, -ENOMEM, "sim media %s: out of memory", media);
	}
	t->fd = open(t->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (t->fd < 0) {
		ret = pc_fail(err, errlen, -errno, "truth log %s: cannot open: %s", t->path, strerror(errno));
		goto fail;
	}
	ret = truth_read_tail(t->fd, &tail, &tlen, &t->need_nl);
	if (ret) {
		pc_fail(err, errlen, ret, "truth log %s: cannot read: %s", t->path, strerror(-ret));
		goto fail;
	}
	ret = prev_parse(&prev, tail, tlen, t->path, err, errlen);
	if (ret)
		goto fail_tail;
	t->session = prev.session + 1;
	if (prev.bricked) {
		/* a dead device writes nothing, not even a settle */
		ret = pc_fail(err, errlen, -ENODEV, SIM_BRICK_MSG, media, prev.session);
		goto fail_tail;
	}
	if (prev.session && !prev.settled) {
		ret = truth_settle(t, &prev, map, sectors);
		if (ret) {
			pc_fail(err, errlen, ret, "truth log %s: cannot append: %s", t->path, strerror(-ret));
			goto fail_tail;
		}
	}
	prev_free(&prev);
	free(tail);
	*out = t;
	return 0;

fail_tail:
	prev_free(&prev);
	free(tail);
fail:
	sim_truth_close(t);
	return ret;
}

void sim_truth_close(struct sim_truth *t)
{
	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	free(t->path);
	free(t);
}

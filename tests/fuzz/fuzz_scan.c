/*
 * fuzz_scan.c - the agent's scan of a region image (agent/region_scan.c).
 *
 * The input is a device image: its first floor(size / 512) * 512 bytes. The
 * size % 512 bytes after it, when there are any, set how it is scanned (all
 * zero: a full sequential scan of a region at offset 0, every read fine):
 *
 *   t[0]      bit 0 random pattern; bit 1 partial scan (ranges below);
 *             bit 2 rebuild every sector that starts with the record magic
 *             from its own header (valid CRC and payload, so made-up headers
 *             get past the checks); bit 3 reseal every superblock sector
 *             (a valid CRC over whatever geometry it claims); bit 4 read
 *             errors (t[1..8])
 *   t[1..8]   a 64-bit map: a read touching 4 KiB block b fails (EIO) if
 *             bit b % 64 is set
 *   t[9]      region offset, in sectors; t[10..11] region length, in sectors
 *             (0: to the device's end), little-endian
 *   t[12]     ranges (1..16), then 4 bytes each: pos, n (16 bits each, LE)
 *
 * The image is served by an in-memory device backend: dev_ops_for() is
 * wrapped at link time (-Wl,--wrap=dev_ops_for, see the Makefile) so that
 * "mem:" specs get it and region_open() runs unchanged. Whatever the image
 * holds, region_open() either refuses it or the scan emits messages that each
 * fit one protocol line and parse on the host, scan_begin first and scan_end
 * last, and that report every slot asked for, whole (in runs) or not (in
 * slot messages), and no other.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dev.h"
#include "agent/region.h"
#include "common/crc32c.h"
#include "common/proto.h"
#include "common/record.h"
#include "common/util.h"
#include "tests/fuzz/fuzz.h"

#define FUZZ_MAX_INPUT	(4u << 20)
#define MEM_PREFIX	"mem:"

const struct dev_ops *__wrap_dev_ops_for(const char *spec, const char **path);
const struct dev_ops *__real_dev_ops_for(const char *spec, const char **path);

/* The image being scanned (one at a time: libFuzzer runs inputs in turn). */
static struct {
	uint8_t *img;
	size_t len;
	uint64_t failmap;
} mem;

static int mem_open(struct dev *d, int for_write)
{
	if (for_write) {
		snprintf(d->err, sizeof(d->err), "%s: the fuzz image is read-only", d->o.path);
		return -EROFS;
	}
	d->fd = -1;
	d->size = mem.len;
	d->wlo = 0;
	d->whi = mem.len;
	return 0;
}

static void mem_close(struct dev *d)
{
}

static int mem_read(struct dev *d, uint64_t off, void *buf, size_t len)
{
	if (off > mem.len || len > mem.len - off) {
		snprintf(d->err, sizeof(d->err), "%s: read past the end", d->o.path);
		return -EIO;
	}
	for (uint64_t b = off / 4096; len && b <= (off + len - 1) / 4096; b++)
		if (mem.failmap >> (b % 64) & 1)
			return -EIO;
	memcpy(buf, mem.img + off, len);
	return 0;
}

/* Reads only: a scan never writes, and region_open() is asked for reading. */
static const struct dev_ops mem_ops = {
	.name = "fuzz-mem",
	.open = mem_open,
	.close = mem_close,
	.read = mem_read,
};

const struct dev_ops *__wrap_dev_ops_for(const char *spec, const char **path)
{
	if (strncmp(spec, MEM_PREFIX, strlen(MEM_PREFIX)) == 0) {
		*path = spec + strlen(MEM_PREFIX);
		return &mem_ops;
	}
	return __real_dev_ops_for(spec, path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pc_log_init("fuzz-scan", PC_LOG_ERR);
	return 0;
}

/* What the scan said, checked as it goes. */
struct seen {
	const struct pc_geom *g;
	int pattern;
	const uint8_t *want;	/* NULL: every slot */
	uint8_t *in_run;	/* per slot */
	uint8_t *in_slot;
	uint32_t nwant;
	int began, ended;
	uint32_t end_slots;
};

static int emit(json_object *msg, void *arg)
{
	static char line[PC_PROTO_MAX_LINE + 2];
	struct seen *s = arg;
	struct pc_msg m;
	char err[512];
	int n = pc_msg_line(msg, line, sizeof(line));

	json_object_put(msg);
	FUZZ_CHECK(n > 0, "a scan message does not fit a protocol line (%d)", n);
	FUZZ_CHECK(pc_msg_parse(line, (size_t)n - 1, &m, err, sizeof(err)) == 0,
		   "the host would refuse a scan message: %s: %.200s", err, line);
	FUZZ_CHECK(!s->ended, "a %s message after scan_end", pc_msg_type_name(m.type));
	FUZZ_CHECK(s->began || m.type == PC_MSG_SCAN_BEGIN, "a %s message before scan_begin",
		   pc_msg_type_name(m.type));
	switch (m.type) {
	case PC_MSG_SCAN_BEGIN:
		FUZZ_CHECK(!s->began, "two scan_begin messages");
		s->began = 1;
		break;
	case PC_MSG_RUNS:
		for (uint32_t i = 0; i < m.u.runs.nruns; i++) {
			const struct pc_run *r = &m.u.runs.runs[i];

			FUZZ_CHECK((uint64_t)r->pos + r->n <= s->g->nslots, "run [%u, +%u) past %u slots", r->pos,
				   r->n, s->g->nslots);
			for (uint32_t p = r->pos; p < r->pos + r->n; p++) {
				uint32_t slot = pc_slot_of_pos(s->g, s->pattern, p);

				FUZZ_CHECK(!s->want || s->want[slot], "slot %u reported, not asked for", slot);
				FUZZ_CHECK(!s->in_run[slot] && !s->in_slot[slot], "slot %u reported twice", slot);
				s->in_run[slot] = 1;
			}
		}
		break;
	case PC_MSG_SLOT:
		FUZZ_CHECK(m.u.slot.slot < s->g->nslots, "slot %u of %u", m.u.slot.slot, s->g->nslots);
		FUZZ_CHECK(!s->want || s->want[m.u.slot.slot], "slot %u reported, not asked for", m.u.slot.slot);
		FUZZ_CHECK(!s->in_run[m.u.slot.slot], "slot %u both whole and not", m.u.slot.slot);
		FUZZ_CHECK(m.u.slot.sect[m.u.slot.nsect - 1].idx < pc_geom_spr(s->g), "sector %u of %u",
			   m.u.slot.sect[m.u.slot.nsect - 1].idx, pc_geom_spr(s->g));
		s->in_slot[m.u.slot.slot] = 1;
		break;
	case PC_MSG_SCAN_END:
		s->ended = 1;
		s->end_slots = m.u.scan_end.slots;
		break;
	default:
		FUZZ_CHECK(0, "a %s message in a scan", pc_msg_type_name(m.type));
	}
	pc_msg_clear(&m);
	return 0;
}

/* Flag bit 2: every sector that starts with the record magic is rebuilt from
 * its header, with the seed superblock A (valid or not) names. */
static void rebuild_sectors(uint8_t *img, size_t len, size_t off)
{
	uint64_t seed = off + PC_SECTOR <= len ? pc_get64(img + off + 48) : 0;

	for (size_t at = 0; at + PC_SECTOR <= len; at += PC_SECTOR) {
		struct pc_sector_hdr h;

		if (pc_get32(img + at) != PC_REC_MAGIC)
			continue;
		pc_sector_hdr_decode(img + at, &h);
		pc_sector_build(img + at, &h, seed);
	}
}

/* Flag bit 3: a valid CRC on every sector that starts with the superblock magic. */
static void reseal_superblocks(uint8_t *img, size_t len)
{
	for (size_t at = 0; at + PC_SECTOR <= len; at += PC_SECTOR)
		if (memcmp(img + at, PC_SB_MAGIC, 8) == 0)
			pc_put32(img + at + PC_OFF_CRC, pc_crc32c(0, img + at, PC_OFF_CRC));
}

static void scan(const uint8_t *t, size_t tlen)
{
	struct region_opts o = { .spec = MEM_PREFIX "fuzz-image" };
	struct pc_posrange ranges[16];
	struct scan_stats st;
	struct region r;
	struct seen s = { 0 };
	uint8_t *want = NULL;
	uint32_t nranges = 0;
	char err[1024];
	int pattern = tlen > 0 && (t[0] & 1) ? PC_PAT_RANDOM : PC_PAT_SEQUENTIAL, ret;

	if (tlen > 11) {
		o.offset = (uint64_t)t[9] * PC_SECTOR;
		o.length = (uint64_t)pc_get16(t + 10) * PC_SECTOR;
	}
	if (tlen > 12 && (t[0] & 2))
		for (uint32_t i = 0; i < t[12] % 17 && 13 + 4 * (size_t)i + 4 <= tlen; i++) {
			ranges[i].pos = pc_get16(t + 13 + 4 * i);
			ranges[i].n = pc_get16(t + 15 + 4 * i) ? pc_get16(t + 15 + 4 * i) : 1;	/* n >= 1, as parsed */
			nranges = i + 1;
		}
	if (region_open(&r, &o, 0, err, sizeof(err)))
		return;
	FUZZ_CHECK(r.g.nslots >= 2 && r.g.record_size % PC_SECTOR == 0 &&
		   r.off + r.g.region_bytes <= mem.len, "region_open accepted a geometry that does not fit: %u slots "
		   "of %u bytes, %llu bytes at %llu of %zu", r.g.nslots, r.g.record_size,
		   (unsigned long long)r.g.region_bytes, (unsigned long long)r.off, mem.len);
	s.g = &r.g;
	s.pattern = pattern;
	s.in_run = calloc(r.g.nslots, 1);
	s.in_slot = calloc(r.g.nslots, 1);
	FUZZ_CHECK(s.in_run && s.in_slot, "out of memory");
	if (nranges) {
		/* the positions the agent would be asked for: a VERIFY's ranges are
		 * checked (pos + n <= 2^32) by the parser, the region by region_scan */
		want = calloc(r.g.nslots, 1);
		FUZZ_CHECK(want != NULL, "out of memory");
		for (uint32_t i = 0; i < nranges; i++)
			for (uint32_t p = ranges[i].pos; p < ranges[i].pos + ranges[i].n && p < r.g.nslots; p++)
				want[pc_slot_of_pos(&r.g, pattern, p)] = 1;
		for (uint32_t k = 0; k < r.g.nslots; k++)
			s.nwant += want[k];
		s.want = want;
	} else {
		s.nwant = r.g.nslots;
	}
	ret = region_scan(&r, pattern, nranges ? ranges : NULL, nranges, emit, &s, &st);
	if (ret == -ERANGE) {
		int past = 0;

		for (uint32_t i = 0; i < nranges; i++)
			past |= (uint64_t)ranges[i].pos + ranges[i].n > r.g.nslots;
		FUZZ_CHECK(past, "a partial scan refused (-ERANGE) with every range inside %u slots", r.g.nslots);
		FUZZ_CHECK(!s.began, "a refused scan emitted messages");
	} else {
		FUZZ_CHECK(ret == 0, "the scan failed: %d", ret);
		FUZZ_CHECK(s.ended, "no scan_end");
		FUZZ_CHECK(s.end_slots == s.nwant && st.slots == s.nwant, "scan_end says %u slots (stats %u), %u asked for",
			   s.end_slots, st.slots, s.nwant);
		for (uint32_t k = 0; k < r.g.nslots; k++)
			FUZZ_CHECK((s.in_run[k] || s.in_slot[k]) == (!want || want[k]), "slot %u: asked for %d, "
				   "reported %d", k, !want || want[k], s.in_run[k] || s.in_slot[k]);
	}
	free(want);
	free(s.in_run);
	free(s.in_slot);
	region_close(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t len = size - size % PC_SECTOR;
	const uint8_t *t = data + len;
	size_t tlen = size - len;

	if (size > FUZZ_MAX_INPUT || len == 0)
		return -1;
	/* a private copy: the flags below rewrite it, and reads must stay in it */
	mem.img = malloc(len);
	FUZZ_CHECK(mem.img != NULL, "out of memory");
	memcpy(mem.img, data, len);
	mem.len = len;
	mem.failmap = tlen > 8 && (t[0] & 16) ? pc_get64(t + 1) : 0;
	if (tlen > 0 && (t[0] & 4))
		rebuild_sectors(mem.img, len, tlen > 9 ? (size_t)t[9] * PC_SECTOR : 0);
	if (tlen > 0 && (t[0] & 8))
		reseal_superblocks(mem.img, len);
	scan(t, tlen);
	free(mem.img);
	mem.img = NULL;
	return 0;
}

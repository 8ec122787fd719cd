/*
 * wlog.c - the write log's codec: the dm-log-writes superblock and entry
 * headers, and the reader of a whole log (wlog.h).
 */
#include "common/wlog.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/record.h"
#include "common/util.h"

#define WLOG_MAX_WRITE		(64u << 20)	/* bytes in one logged write */
#define WLOG_MAX_HOLE		(256u << 20)	/* bytes of zeros read past in a log (the places of
						 * entries in flight at the kill: a few writes) */

void wlog_super_put(uint8_t *p, uint64_t entries, uint32_t sectsize)
{
	pc_put64(p, WLOG_MAGIC);
	pc_put64(p + 8, WLOG_VERSION);
	pc_put64(p + 16, entries);
	pc_put32(p + 24, sectsize);
	pc_put32(p + 28, 0);
}

void wlog_super_get(const uint8_t *p, struct wlog_super *sb)
{
	sb->magic = pc_get64(p);
	sb->version = pc_get64(p + 8);
	sb->entries = pc_get64(p + 16);
	sb->sectsize = pc_get32(p + 24);
}

void wlog_hdr_put(uint8_t *p, const struct wlog_hdr *h)
{
	pc_put64(p, h->sector);
	pc_put64(p + 8, h->nsect);
	pc_put64(p + 16, h->flags);
	pc_put64(p + 24, h->data_len);
}

void wlog_hdr_get(const uint8_t *p, struct wlog_hdr *h)
{
	h->sector = pc_get64(p);
	h->nsect = pc_get64(p + 8);
	h->flags = pc_get64(p + 16);
	h->data_len = pc_get64(p + 24);
}

/* Is the log's sector at off all zeros? */
static int wlog_sector_zero(int fd, off_t off, uint32_t ss)
{
	unsigned char b[4096];

	for (uint32_t k = 0; k < ss; k += sizeof(b)) {
		size_t len = ss - k < sizeof(b) ? ss - k : sizeof(b);

		if (pread(fd, b, len, off + k) != (ssize_t)len)
			return 0;
		for (size_t i = 0; i < len; i++)
			if (b[i])
				return 0;
	}
	return 1;
}

/* Room in *e (*cap entries) for entry n: doubled from 1024 up to WLOG_MAX_ENTRIES. 0, or -E2BIG with *e
 * freed (NULL). */
static int wlog_room(struct wlog_entry **e, size_t n, size_t *cap)
{
	struct wlog_entry *t;
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 1024;
	if (ncap > WLOG_MAX_ENTRIES || !(t = realloc(*e, ncap * sizeof(*t)))) {
		free(*e);
		*e = NULL;
		return -E2BIG;
	}
	*e = t;
	*cap = ncap;
	return 0;
}

int wlog_read(int fd, const char *path, uint32_t *ssize, struct wlog_entry **out, size_t *nout, char *err,
	      size_t errlen)
{
	unsigned char hdr[WLOG_HDR_BYTES];
	struct wlog_entry *e = NULL;
	size_t n = 0, cap = 0;
	struct stat st;
	uint32_t ss = 512;
	off_t off, hole = 0;

	*out = NULL;
	*nout = 0;
	if (fstat(fd, &st) < 0)
		return pc_fail(err, errlen, -errno, "log %s: %s", path, strerror(errno));
	/* The superblock is rewritten only at a flush: it may be missing or
	 * behind. Its sector size, when it has one, is the log's. */
	if (st.st_size >= (off_t)sizeof(hdr) && pread(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) &&
	    pc_get64(hdr) == WLOG_MAGIC) {
		struct wlog_super sb;

		wlog_super_get(hdr, &sb);
		if (sb.version != WLOG_VERSION)
			return pc_fail(err, errlen, -EPROTO, "log %s: version %" PRIu64 ", not 1", path, sb.version);
		if (sb.sectsize < 512 || sb.sectsize > (1u << 20) || (sb.sectsize & (sb.sectsize - 1)))
			return pc_fail(err, errlen, -EPROTO, "log %s: sector size %u", path, sb.sectsize);
		ss = sb.sectsize;
	}
	*ssize = ss;
	/* Entries follow one another; the log ends at the first sector that is
	 * not a whole entry (one cut short, or more than WLOG_MAX_HOLE of zeros). */
	for (off = ss; off + (off_t)ss <= st.st_size;) {
		struct wlog_hdr h;
		uint64_t bytes;

		if (pread(fd, hdr, sizeof(hdr), off) != (ssize_t)sizeof(hdr))
			break;
		wlog_hdr_get(hdr, &h);
		if (h.flags == 0 && h.nsect == 0) {
			/* A hole: blklogwrites reserves an entry's place in the log
			 * before writing it, so with requests in parallel a later
			 * entry can land first, and a kill between leaves zeros where
			 * the earlier one goes (docs/vm.md). A sector of zeros is
			 * skipped; an entry after it is read like any other. */
			if (!hole)
				hole = off;
			if (off - hole < (off_t)WLOG_MAX_HOLE && wlog_sector_zero(fd, off, ss)) {
				off += ss;
				continue;
			}
			break;
		}
		if (h.flags & ~(uint64_t)WLOG_FLAG_MASK)
			break;
		hole = 0;
		bytes = h.flags & (WLOG_FLUSH | WLOG_DISCARD | WLOG_MARK) ? 0 : h.nsect * ss;
		if (h.nsect > WLOG_MAX_WRITE / ss || (off_t)bytes > st.st_size - off - (off_t)ss)
			break;
		if (wlog_room(&e, n, &cap))
			return pc_fail(err, errlen, -E2BIG, "log %s: more than %u entries", path, WLOG_MAX_ENTRIES);
		e[n++] = (struct wlog_entry){ .sector = h.sector, .nsect = h.nsect, .data = off + (off_t)ss,
					      .flags = (unsigned)h.flags };
		off += (off_t)ss + (off_t)bytes;
	}
	*out = e;
	*nout = n;
	return 0;
}

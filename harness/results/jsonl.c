/*
 * jsonl.c - the one reader of the results' .jsonl files (jsonl.h).
 */
#include "harness/results/jsonl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int setup(struct jsonl *j, const char *path, size_t line_max, size_t chunk, int truncate)
{
	snprintf(j->path, sizeof(j->path), "%s", path);
	j->line_max = line_max ? line_max : JSONL_LINE_MAX;
	j->chunk = chunk ? chunk : JSONL_CHUNK;
	j->truncate = truncate;
	j->tok = json_tokener_new();
	if (!j->tok)
		return -ENOMEM;
	json_tokener_set_flags(j->tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
	return 0;
}

int jsonl_open(struct jsonl *j, const char *path)
{
	struct stat st;
	int ret;

	memset(j, 0, sizeof(*j));
	j->fd = -1;
	snprintf(j->path, sizeof(j->path), "%s", path);
	j->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (j->fd < 0 || fstat(j->fd, &st) < 0) {
		ret = -errno;
		snprintf(j->why, sizeof(j->why), "cannot read: %s", strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		snprintf(j->why, sizeof(j->why), "cannot read: %s", strerror(-ret));
		goto fail;
	}
	j->own_fd = 1;
	j->to = j->size = st.st_size;
	if ((ret = setup(j, path, 0, 0, 0))) {
		snprintf(j->why, sizeof(j->why), "out of memory");
		goto fail;
	}
	return 0;
fail:
	snprintf(j->err, sizeof(j->err), "%s: %s", j->path, j->why);
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	j->own_fd = 0;
	return ret;
}

int jsonl_open_fd(struct jsonl *j, int fd, const char *path, off_t from, off_t to, off_t size, size_t line_max,
		  size_t chunk, int truncate)
{
	memset(j, 0, sizeof(*j));
	j->fd = fd;
	j->from = from;
	j->to = to;
	j->size = size;
	/* a range that starts inside a line: read from the byte before it, so
	 * that a line starting exactly at from is seen whole */
	j->pos = from > 0 ? from - 1 : 0;
	j->cpos = j->pos;
	j->lstart = from;
	j->skip = from > 0;
	if (setup(j, path, line_max, chunk, truncate)) {
		snprintf(j->why, sizeof(j->why), "out of memory");
		snprintf(j->err, sizeof(j->err), "%s: out of memory", j->path);
		return -ENOMEM;
	}
	return 0;
}

void jsonl_close(struct jsonl *j)
{
	if (j->own_fd && j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	j->own_fd = 0;
	if (j->tok)
		json_tokener_free(j->tok);
	j->tok = NULL;
	free(j->chunk_buf);
	free(j->line);
	j->chunk_buf = j->line = NULL;
	j->chunk_cap = j->line_cap = 0;
}

/* Make *buf hold n bytes: doubled from 4 KiB, never past limit (>= n), so
 * that a small file costs little and nothing grows past what the limits
 * allow. Never leaves *buf NULL. 0, or -ENOMEM. */
static int grow(char **buf, size_t *cap, size_t n, size_t limit)
{
	size_t c = *cap ? *cap : 4096;
	char *nb;

	if (n <= *cap && *buf)
		return 0;
	while (c < n)
		c = c > limit / 2 ? limit : c * 2;
	if (c > limit)
		c = limit;
	nb = realloc(*buf, c);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = c;
	return 0;
}

uint64_t jsonl_line_number(int fd, off_t off)
{
	char buf[65536];
	uint64_t n = 1;
	off_t pos = 0;

	while (pos < off) {
		size_t want = off - pos < (off_t)sizeof(buf) ? (size_t)(off - pos) : sizeof(buf);
		ssize_t got = pread(fd, buf, want, pos);

		if (got <= 0)
			break;
		for (const char *p = buf, *e = buf + got; (p = memchr(p, '\n', (size_t)(e - p))); p++)
			n++;
		pos += got;
	}
	return n;
}

/* A line's number in the file, for a message: counted when the range
 * started at 0, else counted from the start (on an error only). */
static uint64_t file_line(const struct jsonl *j, off_t off, uint64_t lineno)
{
	return j->from == 0 ? lineno : jsonl_line_number(j->fd, off);
}

static int bad(struct jsonl *j, off_t off, uint64_t lineno, int ret, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int bad(struct jsonl *j, off_t off, uint64_t lineno, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->why, sizeof(j->why), fmt, ap);
	va_end(ap);
	j->err_line = file_line(j, off, lineno);
	snprintf(j->err, sizeof(j->err), "%s:%" PRIu64 ": %s", j->path, j->err_line, j->why);
	return ret;
}

size_t jsonl_utf8_valid(const char *str, size_t n, int partial)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t k, len;
		uint32_t cp;

		if (c >= 0x01 && c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			len = 2;
			cp = c & 0x1fu;
		} else if (c >= 0xe0 && c <= 0xef) {
			len = 3;
			cp = c & 0x0fu;
		} else if (c >= 0xf0 && c <= 0xf4) {
			len = 4;
			cp = c & 0x07u;
		} else {
			return i;	/* NUL, a continuation byte, 0xc0, 0xc1, 0xf5.. */
		}
		for (k = 1; k < len && i + k < n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = cp << 6 | (s[i + k] & 0x3fu);
		}
		if (k < len)
			return partial ? n : i;	/* cut short by the end */
		if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) ||
		    cp > 0x10ffff)
			return i;
		i += len;
	}
	return n;
}

int jsonl_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return 0;
	return 1;
}

/* The line assembled in j->line[0..llen), starting at off: checked, then handed out. */
static int hand_out(struct jsonl *j, size_t llen, int trunc, off_t off, struct jsonl_line *l)
{
	size_t ok;

	j->line[llen] = 0;
	j->lineno++;
	ok = jsonl_utf8_valid(j->line, llen, trunc);
	if (ok < llen)
		return bad(j, off, j->lineno, -EINVAL, "%s at byte %zu: not UTF-8 text (a damaged file?)",
			   j->line[ok] ? "an invalid byte" : "a NUL byte", ok + 1);
	/* JSON allows none in a string, and only tab and return around values
	 * (json-c's strict mode lets them through) */
	for (size_t i = 0; i < llen; i++)
		if ((unsigned char)j->line[i] < 0x20 && j->line[i] != '\t' && j->line[i] != '\r')
			return bad(j, off, j->lineno, -EINVAL, "a control character (0x%02x) at byte %zu: not JSON text",
				   (unsigned char)j->line[i], i + 1);
	l->s = j->line;
	l->len = llen;
	l->trunc = trunc;
	l->off = off;
	l->lineno = j->lineno;
	return 1;
}

int jsonl_next(struct jsonl *j, struct jsonl_line *l)
{
	size_t llen = 0;
	int trunc = 0;

	if (j->fd < 0)
		return bad(j, 0, 0, -EBADF, "not open");
	while (j->lstart < j->to) {
		const char *c, *ce, *nl;
		size_t seg;

		if (j->coff == j->clen) {
			size_t want;
			ssize_t got;

			if (j->pos >= j->size)
				break;
			want = (uint64_t)(j->size - j->pos) < j->chunk ? (size_t)(j->size - j->pos) : j->chunk;
			if (grow(&j->chunk_buf, &j->chunk_cap, want, j->chunk))
				return bad(j, j->lstart, j->lineno + 1, -ENOMEM, "out of memory");
			got = pread(j->fd, j->chunk_buf, want, j->pos);
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0) {
				int e = errno;

				snprintf(j->why, sizeof(j->why), "cannot read: %s", strerror(e));
				j->err_line = 0;
				snprintf(j->err, sizeof(j->err), "%s: %s", j->path, j->why);
				return -e;
			}
			if (got == 0)
				break;	/* it shrank: a run cut a torn tail off */
			j->cpos = j->pos;
			j->pos += got;
			j->coff = 0;
			j->clen = (size_t)got;
		}
		c = j->chunk_buf + j->coff;
		ce = j->chunk_buf + j->clen;
		nl = memchr(c, '\n', (size_t)(ce - c));
		seg = (size_t)((nl ? nl : ce) - c);
		if (!j->skip) {
			if (seg > j->line_max - llen) {
				if (!j->truncate)
					return bad(j, j->lstart, j->lineno + 1, -EINVAL,
						   "a line longer than %zu bytes: not a powercut record", j->line_max);
				seg = j->line_max - llen;
				trunc = 1;
			}
			if (grow(&j->line, &j->line_cap, llen + seg + 1, j->line_max + 1))
				return bad(j, j->lstart, j->lineno + 1, -ENOMEM, "out of memory");
			memcpy(j->line + llen, c, seg);
			llen += seg;
		}
		if (!nl) {
			j->coff = j->clen;
			continue;
		}
		j->coff = (size_t)(nl + 1 - j->chunk_buf);
		if (j->skip) {
			j->skip = 0;
			j->lstart = j->cpos + (off_t)j->coff;
			llen = trunc = 0;
			continue;
		}
		{
			off_t off = j->lstart;

			j->lstart = j->cpos + (off_t)j->coff;
			return hand_out(j, llen, trunc, off, l);
		}
	}
	/* bytes after the last newline: a torn line, never handed out */
	if (llen && !j->skip) {
		j->torn = 1;
		j->torn_text = !jsonl_blank(j->line, llen);
	}
	j->lstart = j->to;
	return 0;
}

static json_object *not_object(struct jsonl *j, const struct jsonl_line *l)
{
	j->err_line = file_line(j, l->off, l->lineno);
	snprintf(j->err, sizeof(j->err), "%s:%" PRIu64 ": not a JSON object: %s", j->path, j->err_line, j->why);
	return NULL;
}

json_object *jsonl_parse(struct jsonl *j, const struct jsonl_line *l)
{
	json_object *v;
	size_t end;
	enum json_tokener_error e;

	json_tokener_reset(j->tok);
	v = json_tokener_parse_ex(j->tok, l->s, (int)l->len);
	e = json_tokener_get_error(j->tok);
	end = json_tokener_get_parse_end(j->tok);
	if (!v) {
		snprintf(j->why, sizeof(j->why), "%s",
			 e == json_tokener_continue || e == json_tokener_success ? "incomplete JSON object"
										  : json_tokener_error_desc(e));
	} else if (!jsonl_blank(l->s + end, l->len - end)) {
		snprintf(j->why, sizeof(j->why), "data after the JSON object");
	} else {
		return v;
	}
	json_object_put(v);
	return not_object(j, l);
}

int jsonl_next_object(struct jsonl *j, json_object **obj, struct jsonl_line *l)
{
	int ret;

	*obj = NULL;
	while ((ret = jsonl_next(j, l)) == 1) {
		if (jsonl_blank(l->s, l->len))
			continue;
		*obj = jsonl_parse(j, l);
		if (*obj && !json_object_is_type(*obj, json_type_object)) {
			snprintf(j->why, sizeof(j->why), "a JSON %s, not an object",
				 json_type_to_name(json_object_get_type(*obj)));
			json_object_put(*obj);
			*obj = not_object(j, l);
		}
		return *obj ? 1 : -EINVAL;
	}
	return ret;
}

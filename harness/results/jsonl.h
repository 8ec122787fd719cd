/*
 * jsonl.h - the one reader of a results folder's .jsonl files (events.jsonl,
 * verdicts.jsonl; docs/results.md). replay, resume, report and status all
 * read them through it, so that a line means the same to each:
 *
 * - a line ends in a newline; what follows the last newline is a torn line
 *   (the harness was cut while writing it, or a run is writing it now): it
 *   is never returned, and jsonl.torn says it was there;
 * - a line is at most line_max bytes: a longer one is an error, or (status,
 *   which reads lines for a few fields) its first line_max bytes, marked;
 * - a line is UTF-8 (no overlong forms, surrogates or NUL bytes) with no
 *   control character but tab and return: anything else is an error naming
 *   the file, the line and the byte;
 * - as JSON, a line is one object, as json-c's strict mode reads it (no
 *   comments, trailing commas or raw control characters in strings),
 *   whitespace around it allowed; a blank line is skipped.
 *
 * Memory: the longest line read, the read chunk and one JSON object at a
 * time; the caller frees each object. The reader owns nothing it hands out.
 */
#ifndef PC_HARNESS_JSONL_H
#define PC_HARNESS_JSONL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

/* The longest line a record of powercut may have (json callers): past it a
 * line is damage, not a record. */
#define JSONL_LINE_MAX	(64u << 20)
#define JSONL_CHUNK	(1u << 20)

struct jsonl {
	char path[PATH_MAX + 32];	/* for messages */
	int fd;
	int own_fd;		/* jsonl_open opened fd: jsonl_close closes it */
	size_t line_max;	/* see above */
	size_t chunk;		/* the bytes of one read */
	int truncate;		/* a longer line comes as its first line_max bytes */
	off_t to, size;		/* lines that start before to; the file's end */
	off_t from;		/* where the range starts (0: the whole file) */
	/* state */
	off_t pos;		/* the file offset of the next read */
	off_t cpos;		/* the file offset of chunk_buf[0] */
	off_t lstart;		/* where the next line starts */
	int skip;		/* dropping the line the range starts in */
	char *chunk_buf, *line;
	size_t chunk_cap, coff, clen, line_cap;
	uint64_t lineno;	/* the last line returned: its number, counted from `from` */
	int torn;		/* the range ended in a line with no newline */
	int torn_text;		/* ... and that line was not blank */
	json_tokener *tok;
	char why[160];		/* what was wrong, without the location */
	uint64_t err_line;	/* the line it was wrong in (its number in the file), 0: none */
	char err[PATH_MAX + 256];	/* "PATH:LINE: why" */
};

/* One line as read: s[len] is a NUL; off is where it starts in the file. */
struct jsonl_line {
	const char *s;
	size_t len;
	int trunc;		/* longer than line_max: these are its first bytes */
	off_t off;
	uint64_t lineno;
};

/* Open path for reading every line (line_max JSONL_LINE_MAX, no
 * truncation). 0, or -errno with err "PATH: cannot read: why". */
int jsonl_open(struct jsonl *j, const char *path);
/* Read the lines of fd (not taken over) that start in [from, to), the file
 * being size bytes: a line that from falls in the middle of is skipped.
 * line_max and chunk: 0 for the defaults; truncate as above. 0, or -ENOMEM. */
int jsonl_open_fd(struct jsonl *j, int fd, const char *path, off_t from, off_t to, off_t size, size_t line_max,
		  size_t chunk, int truncate);
/* Free what j holds (and close what jsonl_open opened). j may be zeroed. */
void jsonl_close(struct jsonl *j);

/* The next whole line: 1, 0 at the end of the range (j->torn set if a torn
 * line was left), or -errno / -EINVAL (a line too long, not UTF-8) with
 * j->why and j->err. */
int jsonl_next(struct jsonl *j, struct jsonl_line *l);
/* The line as one JSON value (new reference; jsonl_next_object and its
 * callers require an object), or NULL with j->why saying why it is not one
 * (and j->err "PATH:LINE: not a JSON object: why"). */
json_object *jsonl_parse(struct jsonl *j, const struct jsonl_line *l);
/* The next object, blank lines skipped: 1, 0 at the end, or < 0 with j->why
 * and j->err (a read error, a bad line, not a JSON object). */
int jsonl_next_object(struct jsonl *j, json_object **obj, struct jsonl_line *l);

/* Is s[0..n) blank (spaces, tabs, returns, newlines only)? */
int jsonl_blank(const char *s, size_t n);
/* The 1-based number in the file fd of the line that starts at off (it
 * reads the file up to off: for a message only). */
uint64_t jsonl_line_number(int fd, off_t off);
/* The length of the valid UTF-8 prefix of s[0..n) (n when it is all valid;
 * partial: a sequence cut short by the end of s counts as valid). NUL is
 * not valid. */
size_t jsonl_utf8_valid(const char *s, size_t n, int partial);

#endif

/*
 * proto_line.c - the line grammar: the writer's lines formatted without
 * json-c, a message framed as one line, the line reader, and base64.
 */
#include "common/proto.h"
#include "common/proto_int.h"
#include "common/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

/* ---- the writer's lines, without json-c ---- */

/* Append "<s>" (no escaping: our own constant names only) or a decimal. */
static size_t put_s(char *b, size_t at, const char *s)
{
	size_t n = strlen(s);

	memcpy(b + at, s, n);
	return at + n;
}

static size_t put_u(char *b, size_t at, uint64_t v)
{
	char t[20];
	size_t n = 0;

	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		b[at++] = t[--n];
	return at;
}

/* "{"type":"<t>","v":1": the head json-c writes for pc_msg_new(t) */
static size_t put_head(char *b, enum pc_msg_type t)
{
	size_t at = put_s(b, 0, "{\"type\":\"");

	at = put_s(b, at, pc_msg_type_name(t));
	at = put_s(b, at, "\",\"v\":");
	return put_u(b, at, PC_PROTO_VERSION);
}

/* "}\n" and the NUL; the length with the newline */
static int put_end(char *b, size_t at)
{
	b[at++] = '}';
	b[at++] = '\n';
	b[at] = 0;
	return (int)at;
}

/* a head, two 20-digit numbers and the tail fit in this */
#define LINE_FIXED 96

int pc_line_range(char *buf, size_t buflen, enum pc_msg_type t, uint64_t first, uint32_t n)
{
	size_t at;

	if ((unsigned)t >= PC_MSG_TYPE_MAX || buflen < LINE_FIXED)
		return -E2BIG;
	at = put_head(buf, t);
	at = put_s(buf, at, ",\"first\":");
	at = put_u(buf, at, first);
	at = put_s(buf, at, ",\"n\":");
	at = put_u(buf, at, n);
	return put_end(buf, at);
}

int pc_line_ack(char *buf, size_t buflen, uint64_t first, uint32_t n, const uint32_t *us)
{
	int r = pc_line_range(buf, buflen, PC_MSG_ACK, first, n);
	size_t at;

	if (r < 0 || !us || n > PC_PROTO_MAX_LAT_N)
		return r;
	/* each latency at most 10 digits and a comma */
	if (buflen < LINE_FIXED + (size_t)n * 11 + 8)
		return -E2BIG;
	at = (size_t)r - 2;	/* back over "}\n" */
	at = put_s(buf, at, ",\"us\":[");
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			buf[at++] = ',';
		at = put_u(buf, at, us[i] > PC_PROTO_MAX_LAT_US ? PC_PROTO_MAX_LAT_US : us[i]);
	}
	at = put_s(buf, at, "]}\n");
	buf[at] = 0;
	return (int)at;
}

int pc_line_io(char *buf, size_t buflen, unsigned op, uint64_t seq)
{
	size_t at;

	if ((op != PC_IO_FLUSH && op != PC_IO_FUA) || !seq)
		return -EINVAL;
	if (buflen < LINE_FIXED)
		return -E2BIG;
	at = put_head(buf, PC_MSG_IO);
	at = put_s(buf, at, ",\"op\":\"");
	at = put_s(buf, at, pc_io_op_name(op));
	at = put_s(buf, at, "\",\"seq\":");
	at = put_u(buf, at, seq);
	return put_end(buf, at);
}

int pc_msg_line(json_object *msg, char *buf, size_t buflen)
{
	const char *s;
	size_t len;

	if (!msg)
		return -EINVAL;
	/* PLAIN: no whitespace; NOSLASHESCAPE keeps device paths readable */
	s = json_object_to_json_string_length(msg, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (!s)
		return -ENOMEM;
	if (len > MAX_JSON || len + 2 > buflen)
		return -E2BIG;
	memcpy(buf, s, len);
	buf[len] = '\n';
	buf[len + 1] = 0;
	return (int)(len + 1);
}

/* ---- line reader ---- */

size_t pc_linebuf_feed(struct pc_linebuf *lb, const char *data, size_t n)
{
	size_t used = 0, room;

	/* the rest of an over-long line is dropped as it arrives */
	if (lb->overflow) {
		const char *nl = memchr(data, '\n', n);

		if (!nl)
			return n;
		used = (size_t)(nl - data) + 1;
		lb->overflow = 0;
	}
	room = sizeof(lb->buf) - lb->len;
	if (room > n - used)
		room = n - used;
	memcpy(lb->buf + lb->len, data + used, room);
	lb->len += room;
	return used + room;
}

static void linebuf_drop(struct pc_linebuf *lb, size_t n)
{
	memmove(lb->buf, lb->buf + n, lb->len - n);
	lb->len -= n;
}

enum pc_line_result pc_linebuf_take(struct pc_linebuf *lb, char *out, size_t outlen, size_t *linelen)
{
	char *nl = memchr(lb->buf, '\n', lb->len);
	size_t n;

	if (!nl) {
		if (lb->len <= PC_PROTO_MAX_LINE)
			return PC_LINE_NONE;
		/* no newline within the limit: report it now, skip the rest later */
		*linelen = lb->len;
		lb->len = 0;
		lb->overflow = 1;
		return PC_LINE_TOO_LONG;
	}
	n = (size_t)(nl - lb->buf);
	*linelen = n;
	if (n > PC_PROTO_MAX_LINE || n >= outlen) {
		linebuf_drop(lb, n + 1);
		return PC_LINE_TOO_LONG;
	}
	memcpy(out, lb->buf, n);
	out[n] = 0;
	linebuf_drop(lb, n + 1);
	return PC_LINE_OK;
}

/* ---- base64 (RFC 4648, with padding): libsodium's ---- */

/*
 * The original alphabet with padding, decoded strictly: no whitespace, no
 * other alphabet, padding exactly where the length needs it and nowhere else,
 * and the unused bits of the last character zero (one text per byte string).
 * libsodium checks the padding and the unused bits when it is given no
 * characters to ignore and no b64_end (the whole text must be consumed). Two
 * checks stay here: libsodium 1.0.18 takes some bytes above 0x7f for letters
 * of the alphabet (its constant-time compare sees a signed char), and its
 * "too long for the buffer" (ERANGE) is overwritten by EINVAL.
 */
static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";

size_t pc_b64_encode(const uint8_t *in, size_t n, char *out)
{
	sodium_bin2base64(out, sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL), in, n,
			  sodium_base64_VARIANT_ORIGINAL);
	return strlen(out);
}

int pc_b64_decode(const char *in, uint8_t *out, size_t outmax, size_t *outlen)
{
	size_t len = strlen(in), o = 0, need;

	if (outlen)
		*outlen = 0;
	if (len % 4 || strspn(in, b64_chars) != len)
		return -EINVAL;
	need = len / 4 * 3 - (len && in[len - 1] == '=') - (len > 1 && in[len - 2] == '=');
	if (need > outmax)
		return -E2BIG;
	if (sodium_base642bin(out, outmax, in, len, NULL, &o, NULL, sodium_base64_VARIANT_ORIGINAL) != 0)
		return -EINVAL;
	if (outlen)
		*outlen = o;
	return 0;
}


/*
 * xml.c - the one XML escaper and JUnit writer (xml.h).
 */
#include "harness/report/xml.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define REPLACEMENT "\xef\xbf\xbd"	/* U+FFFD */

/* The length of the valid UTF-8 sequence at s that XML 1.0 allows as a
 * character, or 0. */
static size_t utf8_ok(const unsigned char *s)
{
	uint32_t c;
	size_t n;

	if (s[0] < 0x80) {
		if (s[0] == '\t' || s[0] == '\n' || s[0] == '\r')
			return 1;
		return s[0] >= 0x20 && s[0] != 0x7f;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		c = s[0] & 0x1fu;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		c = s[0] & 0x0fu;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		c = s[0] & 0x07u;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)	/* also stops at the terminating NUL */
			return 0;
		c = c << 6 | (s[i] & 0x3fu);
	}
	/* overlong forms, surrogates, past U+10FFFF, C1 controls, U+FFFE/U+FFFF */
	if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff ||
	    (c >= 0x80 && c <= 0x9f) || c == 0xfffe || c == 0xffff)
		return 0;
	return n;
}

/* a character: a valid sequence, or one byte that is not */
static size_t char_len(const unsigned char *p)
{
	size_t n = utf8_ok(p);

	return n ? n : 1;
}

void xml_escape_max(FILE *out, const char *s, size_t maxchars)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t total = 0, limit;

	if (!s || !maxchars)
		return;
	for (const unsigned char *q = p; *q && total <= maxchars; q += char_len(q))
		total++;
	limit = total <= maxchars ? total : maxchars - 1;
	for (size_t i = 0; i < limit; i++) {
		size_t n = utf8_ok(p);

		if (!n) {
			fputs(REPLACEMENT, out);
			p++;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fwrite(p, 1, n, out); break;
		}
		p += n;
	}
	if (limit < total)
		fputs("\xe2\x80\xa6", out);	/* U+2026 */
}

void xml_escape(FILE *out, const char *s)
{
	xml_escape_max(out, s, (size_t)-1);
}

/* ---- JUnit ---- */

static void attr(FILE *out, const char *name, const char *v)
{
	fprintf(out, " %s=\"", name);
	xml_escape(out, v);
	fputc('"', out);
}

static void counts(FILE *out, unsigned long tests, unsigned long failures, unsigned long errors, double secs)
{
	fprintf(out, " tests=\"%lu\" failures=\"%lu\" errors=\"%lu\" skipped=\"0\"", tests, failures, errors);
	if (secs >= 0)
		fprintf(out, " time=\"%.3f\"", secs);
}

void junit_begin(struct junit *j, FILE *out, const char *name, unsigned long tests, unsigned long failures,
		 unsigned long errors, double secs)
{
	j->out = out;
	j->props_open = 0;
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", out);
	attr(out, "name", name);
	counts(out, tests, failures, errors, secs);
	fputs(">\n", out);
}

void junit_suite_begin(struct junit *j, const char *name, unsigned long tests, unsigned long failures,
		       unsigned long errors, double secs, const char *timestamp)
{
	fputs("  <testsuite", j->out);
	attr(j->out, "name", name);
	counts(j->out, tests, failures, errors, secs);
	if (timestamp)
		attr(j->out, "timestamp", timestamp);
	fputs(">\n", j->out);
}

void junit_property(struct junit *j, const char *name, const char *value)
{
	if (!j->props_open) {
		fputs("    <properties>\n", j->out);
		j->props_open = 1;
	}
	fputs("      <property", j->out);
	attr(j->out, "name", name);
	attr(j->out, "value", value);
	fputs("/>\n", j->out);
}

static void props_close(struct junit *j)
{
	if (j->props_open)
		fputs("    </properties>\n", j->out);
	j->props_open = 0;
}

void junit_case_begin(struct junit *j, const char *classname, const char *name)
{
	props_close(j);
	fputs("    <testcase", j->out);
	attr(j->out, "classname", classname);
	attr(j->out, "name", name);
	fputs(" time=\"0\">\n", j->out);
}

void junit_problem_begin(struct junit *j, const char *kind, const char *type, const char *message)
{
	fprintf(j->out, "      <%s", kind);
	attr(j->out, "message", message);
	attr(j->out, "type", type);
	fputc('>', j->out);
}

void junit_text(struct junit *j, const char *text)
{
	xml_escape(j->out, text);
}

void junit_problem_end(struct junit *j, const char *kind)
{
	fprintf(j->out, "</%s>\n", kind);
}

void junit_system_out(struct junit *j, const char *text)
{
	fputs("      <system-out>", j->out);
	xml_escape(j->out, text);
	fputs("</system-out>\n", j->out);
}

void junit_case_end(struct junit *j)
{
	fputs("    </testcase>\n", j->out);
}

void junit_suite_end(struct junit *j)
{
	props_close(j);
	fputs("  </testsuite>\n", j->out);
}

int junit_end(struct junit *j)
{
	fputs("</testsuites>\n", j->out);
	return ferror(j->out) ? -EIO : 0;
}

/*
 * test_html.c - the HTML report (harness/report/report_html.c) and its SVG writer
 * (harness/report/svg.c), on a report model built by hand: two devices of two
 * parts, several modes, thousands of cycles, and hostile strings wherever
 * the results put text (board, mode and campaign names, identities,
 * reasons, folder names). The page must be well formed where it matters
 * (every <svg> a well-formed XML document, the page's elements balanced),
 * hold no script, show the hostile names as text, and the strip chart must
 * keep the worst outcome of the cycles it bins.
 */
#include <CUnit/CUnit.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "harness/report/report_model.h"
#include "harness/report/svg.h"
#include "tests/unit/suites.h"

#define EVIL_BOARD	"<script>alert('board')</script>"
#define EVIL_MODE	"<script>m</script>"
#define EVIL_NAME	"<img src=x onerror=alert(1)>"
#define EVIL_WHY	"board \"x\" given up: </td></table><script>alert(2)</script> & more"
#define EVIL_DIR	"results/<script>dir</script>"

/* ---- a structural XML check ---- */

static int name_char(int c)
{
	return isalnum(c) || c == '-' || c == '_' || c == ':' || c == '.';
}

/* &amp; &lt; &gt; &quot; &apos; &#NN; &#xHH; at s: its length, or 0 */
static size_t entity(const char *s)
{
	static const char *const names[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&apos;" };
	size_t n = 2;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(s, names[i], strlen(names[i])))
			return strlen(names[i]);
	if (s[1] != '#')
		return 0;
	if (s[2] == 'x') {
		n = 3;
		while (isxdigit((unsigned char)s[n]))
			n++;
		return n > 3 && s[n] == ';' ? n + 1 : 0;
	}
	while (isdigit((unsigned char)s[n]))
		n++;
	return n > 2 && s[n] == ';' ? n + 1 : 0;
}

static int is_void(const char *name, int html)
{
	return html && (!strcmp(name, "meta") || !strcmp(name, "br"));
}

/*
 * Is s[0..len) well formed: every element closed in order, attributes
 * quoted and unique, no stray '<' or '&'? html: <!DOCTYPE>, void <meta>
 * and <br>, and <style> content raw. Returns 0, or -1 with err saying where.
 */
static int xml_check(const char *s, size_t len, int html, char *err, size_t errlen)
{
	char stack[64][32];
	int depth = 0, roots = 0;
	size_t i = 0;

	while (i < len) {
		if (s[i] == '&') {
			size_t n = entity(s + i);

			if (!n) {
				snprintf(err, errlen, "stray & at %zu: %.30s", i, s + i);
				return -1;
			}
			i += n;
			continue;
		}
		if (s[i] != '<') {
			i++;
			continue;
		}
		if (html && !strncmp(s + i, "<!DOCTYPE", 9)) {
			while (i < len && s[i] != '>')
				i++;
			i++;
			continue;
		}
		if (s[i + 1] == '/') {
			size_t n = 0;

			i += 2;
			while (i + n < len && name_char((unsigned char)s[i + n]))
				n++;
			if (!depth || strlen(stack[depth - 1]) != n || strncmp(stack[depth - 1], s + i, n) ||
			    s[i + n] != '>') {
				snprintf(err, errlen, "unmatched close at %zu: %.30s (open: %s)", i, s + i - 2,
					 depth ? stack[depth - 1] : "none");
				return -1;
			}
			depth--;
			i += n + 1;
			continue;
		}
		{
			char name[32], attrs[32][32];
			size_t n = 0;
			int na = 0, self = 0;

			i++;
			while (i + n < len && name_char((unsigned char)s[i + n]))
				n++;
			if (!n || n >= sizeof(name)) {
				snprintf(err, errlen, "stray < at %zu: %.30s", i - 1, s + i - 1);
				return -1;
			}
			memcpy(name, s + i, n);
			name[n] = 0;
			i += n;
			for (;;) {
				size_t a = 0;

				while (i < len && isspace((unsigned char)s[i]))
					i++;
				if (s[i] == '>') {
					i++;
					break;
				}
				if (s[i] == '/' && s[i + 1] == '>') {
					self = 1;
					i += 2;
					break;
				}
				while (i + a < len && name_char((unsigned char)s[i + a]))
					a++;
				if (!a || a >= sizeof(attrs[0]) || s[i + a] != '=' || s[i + a + 1] != '"' || na == 32) {
					snprintf(err, errlen, "bad attribute in <%s> at %zu: %.30s", name, i, s + i);
					return -1;
				}
				memcpy(attrs[na], s + i, a);
				attrs[na][a] = 0;
				for (int k = 0; k < na; k++)
					if (!strcmp(attrs[k], attrs[na])) {
						snprintf(err, errlen, "attribute %s twice in <%s>", attrs[na], name);
						return -1;
					}
				na++;
				i += a + 2;
				while (i < len && s[i] != '"') {
					if (s[i] == '<' || (s[i] == '&' && !entity(s + i))) {
						snprintf(err, errlen, "bad attribute value in <%s> at %zu", name, i);
						return -1;
					}
					i++;
				}
				i++;
			}
			if (!depth)
				roots++;
			if (html && !strcmp(name, "style")) {
				const char *e = strstr(s + i, "</style>");

				if (!e) {
					snprintf(err, errlen, "<style> not closed");
					return -1;
				}
				i = (size_t)(e - s) + 8;
				continue;
			}
			if (self || is_void(name, html))
				continue;
			if (depth == 64) {
				snprintf(err, errlen, "too deep at %zu", i);
				return -1;
			}
			snprintf(stack[depth++], sizeof(stack[0]), "%s", name);
		}
	}
	if (depth) {
		snprintf(err, errlen, "<%s> not closed", stack[depth - 1]);
		return -1;
	}
	if (roots != 1) {
		snprintf(err, errlen, "%d root elements", roots);
		return -1;
	}
	return 0;
}

/* every <svg>...</svg> of doc well formed; returns how many, -1 on a bad one */
static int svg_blocks(const char *doc, char *err, size_t errlen)
{
	const char *p = doc;
	int n = 0;

	while ((p = strstr(p, "<svg"))) {
		const char *e = strstr(p, "</svg>");

		if (!e) {
			snprintf(err, errlen, "<svg> without </svg>");
			return -1;
		}
		e += 6;
		if (xml_check(p, (size_t)(e - p), 0, err, errlen))
			return -1;
		n++;
		p = e;
	}
	return n;
}

static void test_checker(void)
{
	char err[256];

#define XML(s) xml_check(s, strlen(s), 0, err, sizeof(err))
	/* the checker itself: it must catch what it is for */
	CU_ASSERT_EQUAL(XML("<a x=\"1\"><b/>t &amp; u</a>"), 0);
	CU_ASSERT_EQUAL(XML("<a><b></a></b>"), -1);
	CU_ASSERT_EQUAL(XML("<a>x < y</a>"), -1);
	CU_ASSERT_EQUAL(XML("<a>x & y</a>"), -1);
	CU_ASSERT_EQUAL(XML("<a x=1></a>"), -1);
	CU_ASSERT_EQUAL(XML("<a x=\"1\" x=\"2\"></a>"), -1);
	CU_ASSERT_EQUAL(XML("<a></a><b></b>"), -1);
	CU_ASSERT_EQUAL(XML("<a>"), -1);
#undef XML
}

/* ---- escaping ---- */

static char *escaped(const char *s, size_t max)
{
	static char buf[512];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	if (max)
		xml_escape_max(f, s, max);
	else
		xml_escape(f, s);
	fputc(0, f);
	fclose(f);
	return buf;
}

static void test_escape(void)
{
	CU_ASSERT_STRING_EQUAL(escaped("a<b>&\"'c", 0), "a&lt;b&gt;&amp;&quot;&#39;c");
	CU_ASSERT_STRING_EQUAL(escaped(EVIL_BOARD, 0), "&lt;script&gt;alert(&#39;board&#39;)&lt;/script&gt;");
	/* UTF-8 kept; bytes that are not UTF-8, and controls XML forbids, as U+FFFD */
	CU_ASSERT_STRING_EQUAL(escaped("5 \xc2\xb5s", 0), "5 \xc2\xb5s");
	CU_ASSERT_STRING_EQUAL(escaped("a\xff" "b", 0), "a\xef\xbf\xbd" "b");
	CU_ASSERT_STRING_EQUAL(escaped("a\x01\x1b[31m", 0), "a\xef\xbf\xbd\xef\xbf\xbd[31m");
	CU_ASSERT_STRING_EQUAL(escaped("\xc0\xbc", 0), "\xef\xbf\xbd\xef\xbf\xbd");	/* an overlong '<' */
	CU_ASSERT_STRING_EQUAL(escaped("\xed\xa0\x80", 0), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");	/* a surrogate */
	CU_ASSERT_STRING_EQUAL(escaped("\xe2\x82", 0), "\xef\xbf\xbd\xef\xbf\xbd");	/* cut short */
	CU_ASSERT_STRING_EQUAL(escaped("tab\tnl\n", 0), "tab\tnl\n");
	CU_ASSERT_STRING_EQUAL(escaped(NULL, 0), "");
	/* cut to a number of characters, an ellipsis saying so */
	CU_ASSERT_STRING_EQUAL(escaped("abcdef", 6), "abcdef");
	CU_ASSERT_STRING_EQUAL(escaped("abcdefg", 6), "abcde\xe2\x80\xa6");
	CU_ASSERT_STRING_EQUAL(escaped("\xc2\xb5\xc2\xb5\xc2\xb5<", 3), "\xc2\xb5\xc2\xb5\xe2\x80\xa6");
	CU_ASSERT_STRING_EQUAL(escaped("<<<", 3), "&lt;&lt;&lt;");
}

/* ---- strip binning ---- */

static void test_worse(void)
{
	CU_ASSERT_EQUAL(svg_outcome_worse(-1, -1), -1);
	CU_ASSERT_EQUAL(svg_outcome_worse(-1, PC_OUT_PASS), PC_OUT_PASS);
	CU_ASSERT_EQUAL(svg_outcome_worse(PC_OUT_PASS, PC_OUT_INFRA_ERROR), PC_OUT_INFRA_ERROR);
	CU_ASSERT_EQUAL(svg_outcome_worse(PC_OUT_BOOT_FAIL, PC_OUT_INFRA_ERROR), PC_OUT_BOOT_FAIL);
	CU_ASSERT_EQUAL(svg_outcome_worse(PC_OUT_BOOT_FAIL, PC_OUT_FAIL), PC_OUT_FAIL);
	CU_ASSERT_EQUAL(svg_outcome_worse(PC_OUT_FAIL, PC_OUT_PASS), PC_OUT_FAIL);
	CU_ASSERT_EQUAL(svg_outcome_worse(PC_OUT_PASS, 99), PC_OUT_PASS);	/* no outcome: the least */
}

static void test_bin(void)
{
	enum { N = 5000 };
	static unsigned long cyc[N];
	static signed char out[N];
	struct svg_strip_row row = { "b", cyc, out, N };
	signed char cells[400];
	size_t ncells;

	/* cycles 1..5000, in reverse order (any order bins the same) */
	for (size_t i = 0; i < N; i++) {
		cyc[i] = N - i;
		out[i] = PC_OUT_PASS;
	}
	out[N - 2345] = PC_OUT_FAIL;		/* cycle 2345 */
	out[N - 100] = PC_OUT_BOOT_FAIL;	/* cycle 100 */
	out[N - 101] = PC_OUT_FAIL;		/* cycle 101: FAIL wins in the same cell */
	out[N - 4000] = PC_OUT_INFRA_ERROR;	/* cycle 4000 */
	out[N - 4990] = PC_OUT_BOOT_FAIL;	/* cycle 4990 */
	/* 13 cycles a cell: cycle c in cell (c - 1) / 13 */
	ncells = (N - 1) / 13 + 1;
	CU_ASSERT_FATAL(ncells <= sizeof(cells));
	svg_strip_bin(&row, 1, 13, cells, ncells);
	CU_ASSERT_EQUAL(cells[2344 / 13], PC_OUT_FAIL);
	CU_ASSERT_EQUAL(cells[99 / 13], PC_OUT_FAIL);
	CU_ASSERT_EQUAL(cells[3999 / 13], PC_OUT_INFRA_ERROR);
	CU_ASSERT_EQUAL(cells[4989 / 13], PC_OUT_BOOT_FAIL);
	CU_ASSERT_EQUAL(cells[0], PC_OUT_PASS);
	CU_ASSERT_EQUAL(cells[ncells - 1], PC_OUT_PASS);
	/* every other cell all PASS */
	for (size_t k = 0; k < ncells; k++)
		if (k != 2344 / 13 && k != 99 / 13 && k != 3999 / 13 && k != 4989 / 13)
			CU_ASSERT_EQUAL(cells[k], PC_OUT_PASS);
	/* a gap has no outcome; cycles before first or past the cells are ignored */
	row.n = 10;	/* cycles 5000..4991 */
	svg_strip_bin(&row, 4000, 13, cells, 10);
	CU_ASSERT_EQUAL(cells[0], -1);
	CU_ASSERT_EQUAL(cells[(4991 - 4000) / 13], PC_OUT_PASS);
}

/* ---- the page, from a model built by hand ---- */

struct fixture {
	struct rep r;
	struct rep_dev devs[2];
	struct rep_board boards[3];
	struct rep_dir dirs[1];
	struct rep_mode modes0[4], modes1[2];
	struct rep_why why0[1], why1[1];
	char *blist0[2], *blist1[1], *camp[1], *hosts[1], *vers[1];
};

static json_object *str(const char *s)
{
	return json_object_new_string(s);
}

static void mode_fill(struct rep_mode *m, const char *name, unsigned long pass, unsigned long fail, double rate,
		      uint32_t lat_us)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->out[PC_OUT_PASS] = pass;
	m->out[PC_OUT_FAIL] = fail;
	m->worked = m->inflight = pass + fail;
	m->rate_sum = rate * (double)(pass + fail);
	m->rate_n = pass + fail;
	m->mib_sum = rate * 4096.0 / 1048576.0 * (double)(pass + fail);
	m->mib_n = pass + fail;
	/* a spread around lat_us */
	for (uint32_t k = 0; k < 7; k++) {
		uint32_t us = lat_us / 4 + lat_us / 2 * k;

		m->lat.hist[pc_lat_bucket(us)] += 100 * (k < 4 ? k + 1 : 7 - k);
		m->lat.n += 100 * (k < 4 ? k + 1 : 7 - k);
		if (us > m->lat.max)
			m->lat.max = us;
	}
	m->record_sectors = 8;
}

static void fixture_build(struct fixture *f)
{
	static const char *const b0[] = { EVIL_BOARD, "b2", "honest" };
	struct rep *r = &f->r;
	struct rep_dev *d;

	memset(f, 0, sizeof(*f));
	r->devs = f->devs;
	r->ndevs = 2;
	r->boards = f->boards;
	r->nboards = 3;
	r->dirs = f->dirs;
	r->ndirs = 1;
	f->dirs[0].arg = EVIL_DIR;
	f->dirs[0].dup_of = -1;
	for (unsigned b = 0; b < 3; b++) {
		f->boards[b].name = (char *)b0[b];
		f->boards[b].dev = b < 2 ? 0 : 1;
	}

	/* device 0: FAIL, hostile everywhere, four modes */
	d = &f->devs[0];
	d->id = (char *)"mmc:" EVIL_NAME;
	d->key = d->id;
	d->part = (char *)"0x000015 " EVIL_NAME " 0x07";
	f->blist0[0] = (char *)EVIL_BOARD;
	f->blist0[1] = (char *)"b2";
	d->boards = (struct strlist){ f->blist0, 2 };
	f->camp[0] = (char *)"camp<script>";
	d->campaigns = (struct strlist){ f->camp, 1 };
	f->hosts[0] = (char *)"lab&host";
	d->hosts = (struct strlist){ f->hosts, 1 };
	f->vers[0] = (char *)"0.1.0";
	d->versions = (struct strlist){ f->vers, 1 };
	d->ident[ID_NAME].v = str(EVIL_NAME);
	d->ident[ID_MANFID].v = str("0x000015");
	d->ident[ID_FWREV].v = str("0x07");
	d->ident[ID_SERIAL].v = str("0xdeadbeef\">");
	d->ident[ID_CID].v = str("15010038474e443352a1b2c3d4e5f600");
	d->ident[ID_KERNEL].v = str("6.1.0 <b>");
	d->ident[ID_FUA].v = json_object_new_int(1);
	d->ident[ID_WCACHE].v = str("write back");
	d->ident[ID_WCACHE].varies = 1;
	d->cond[COND_RECORD_SIZE].v = json_object_new_int(4096);
	d->cond[COND_REGION].v = json_object_new_int64(64 << 20);
	d->cond[COND_CUT].v = json_tokener_parse("{\"at\": \"random\", \"window_ms\": [5, 60], \"x\": \"</td>\"}");
	d->first_ms = 1764500000000;
	d->last_ms = d->first_ms + 9 * 3600000 + 13 * 60000;
	d->modes = f->modes0;
	d->nmodes = 4;
	mode_fill(&f->modes0[0], "fua", 1200, 0, 900, 3000);
	mode_fill(&f->modes0[1], "flush", 1190, 10, 2000, 1900);
	mode_fill(&f->modes0[2], "none", 1200, 0, 4500, 250);
	mode_fill(&f->modes0[3], EVIL_MODE, 1199, 1, 1000, 90000);
	f->modes0[1].viol[PC_CLS_LOST_ACKED] = 401;
	f->modes0[1].viol[PC_CLS_TORN] = 7;
	f->modes0[1].violations = 408;
	f->modes0[1].tears[1] = 3;
	f->modes0[1].tears[5] = 4;
	f->modes0[1].tears_n = 7;
	f->modes0[1].torn_cycles = 7;
	f->modes0[1].first_fail[0] = (struct rep_fail_ref){ 0, 1234, "lost_acked=27 torn=1" };
	f->modes0[1].nfirst_fail = 1;
	f->modes0[3].refused = 1;
	f->modes0[3].tears[63] = 2;
	f->modes0[3].tears_n = 2;
	f->modes0[3].out[PC_OUT_BOOT_FAIL] = 3;
	f->modes0[3].out[PC_OUT_INFRA_ERROR] = 2;
	memset(f->modes0[3].first_fail[0].what, 'A', sizeof(f->modes0[3].first_fail[0].what));	/* unterminated */
	f->modes0[3].first_fail[0].board = 7;	/* no such board */
	f->modes0[3].nfirst_fail = 1;
	snprintf(f->modes0[0].ran[0].name, sizeof(f->modes0[0].ran[0].name), "fua+flush<i>");
	f->modes0[0].ran[0].n = 12;
	f->modes0[0].nran = 1;
	f->why0[0].text = (char *)EVIL_WHY;
	f->why0[0].brief = (char *)"given up <script>";
	d->why = f->why0;
	d->nwhy = 1;

	/* device 1: INCOMPLETE, another part, no latency, no tears */
	d = &f->devs[1];
	d->id = (char *)"mmc:honest";
	d->key = d->id;
	d->part = (char *)"0x000045 SEM08G 0x01";
	f->blist1[0] = (char *)"honest";
	d->boards = (struct strlist){ f->blist1, 1 };
	d->ident[ID_NAME].v = str("SEM08G");
	d->first_ms = d->last_ms = -1;
	d->modes = f->modes1;
	d->nmodes = 2;
	mode_fill(&f->modes1[0], "relwr", 500, 0, 300, 0);
	mode_fill(&f->modes1[1], "", 0, 0, -1, 0);
	memset(&f->modes1[0].lat, 0, sizeof(f->modes1[0].lat));
	f->modes1[1].out[PC_OUT_INFRA_ERROR] = 100;
	f->modes1[1].rate_n = f->modes1[1].mib_n = 0;
	memset(&f->modes1[1].lat, 0, sizeof(f->modes1[1].lat));
	f->why1[0].text = (char *)"16.7% of cycles INFRA_ERROR (100 of 600; limit 10%, incomplete_infra_share)";
	f->why1[0].brief = (char *)"16.7% INFRA_ERROR (limit 10%)";
	d->why = f->why1;
	d->nwhy = 1;

	/* cycles: board 0 3000 (FAIL at 1234, BOOT_FAIL at 77), board 1 2000, board 2 600 */
	r->ncycles = 3000 + 2000 + 600;
	r->cycles = calloc(r->ncycles, sizeof(*r->cycles));
	CU_ASSERT_PTR_NOT_NULL_FATAL(r->cycles);
	for (size_t i = 0; i < r->ncycles; i++) {
		struct rep_cycle *c = &r->cycles[i];

		c->board = i < 3000 ? 0 : i < 5000 ? 1 : 2;
		c->dev = c->board < 2 ? 0 : 1;
		c->cycle = i < 3000 ? i + 1 : i < 5000 ? i - 3000 + 1 : i - 5000 + 1;
		c->out = PC_OUT_PASS;
		c->mode = -1;
		c->time_ms = -1;
		c->rate = c->mib = -1;
	}
	r->cycles[1233].out = PC_OUT_FAIL;
	r->cycles[76].out = PC_OUT_BOOT_FAIL;
	r->cycles[3000 + 1999].out = PC_OUT_INFRA_ERROR;
	for (size_t i = 5000; i < 5100; i++)
		r->cycles[i].out = PC_OUT_INFRA_ERROR;
	f->devs[0].ncycles = 5000;
	f->devs[1].ncycles = 600;
}

static void fixture_free(struct fixture *f)
{
	for (unsigned i = 0; i < 2; i++)
		for (int k = 0; k < ID_N; k++)
			json_object_put(f->devs[i].ident[k].v);
	for (unsigned i = 0; i < 2; i++)
		for (int k = 0; k < COND_N; k++)
			json_object_put(f->devs[i].cond[k].v);
	free(f->r.cycles);
}

static char *render(const struct rep *r, size_t *len)
{
	static const char *const dirs[] = { EVIL_DIR };
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(report_html(r, f, dirs, 1), 0);
	fclose(f);
	return buf;
}

/* the n-th <svg> block of doc that contains needle, as a new string */
static char *svg_with(const char *doc, const char *needle)
{
	const char *p = doc;

	while ((p = strstr(p, "<svg"))) {
		const char *e = strstr(p, "</svg>");
		char *s;

		if (!e)
			return NULL;
		s = strndup(p, (size_t)(e + 6 - p));
		if (s && strstr(s, needle))
			return s;
		free(s);
		p = e;
	}
	return NULL;
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void test_page(void)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[256], *doc, *strip;
	size_t len;
	int n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fixture_build(f);
	doc = render(&f->r, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	CU_ASSERT_EQUAL(strlen(doc), len);

	/* one page, balanced, every chart well-formed XML */
	CU_ASSERT(!strncmp(doc, "<!DOCTYPE html>\n<html", 21));
	if (xml_check(doc, len, 1, err, sizeof(err)))
		fprintf(stderr, "\nhtml: %s\n", err);
	CU_ASSERT_EQUAL(xml_check(doc, len, 1, err, sizeof(err)), 0);
	n = svg_blocks(doc, err, sizeof(err));
	if (n < 0)
		fprintf(stderr, "\nsvg: %s\n", err);
	/* device 0: strip, latency, rates, tears; device 1: strip, rates */
	CU_ASSERT_EQUAL(n, 6);

	/* no script, no way out of the page; the hostile strings as text */
	CU_ASSERT_PTR_NULL(strcasestr(doc, "<script"));
	CU_ASSERT_PTR_NULL(strcasestr(doc, "<img"));
	CU_ASSERT_PTR_NULL(strcasestr(doc, "</td></table>"));
	CU_ASSERT_PTR_NULL(strstr(doc, "http:"));
	CU_ASSERT_PTR_NULL(strstr(doc, "https:"));
	CU_ASSERT_PTR_NULL(strstr(doc, "url("));
	CU_ASSERT_PTR_NULL(strstr(doc, "@import"));
	CU_ASSERT_PTR_NULL(strstr(doc, "src=\""));
	/* links only within the page: to a unit, or to the glossary */
	CU_ASSERT_EQUAL(count(doc, "href=\""), count(doc, "href=\"#dev-") + count(doc, "href=\"#glossary\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "&lt;script&gt;alert(&#39;board&#39;)&lt;/script&gt;"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "&lt;img src=x onerror=alert(1)&gt;"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "&lt;/td&gt;&lt;/table&gt;&lt;script&gt;alert(2)&lt;/script&gt; &amp; more"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "results/&lt;script&gt;dir&lt;/script&gt;"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "&lt;script&gt;m&lt;/script&gt;"));	/* the mode */
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "fua+flush&lt;i&gt;"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "0xdeadbeef&quot;&gt;"));

	/* what it says: results at the top, the INCOMPLETE reason, both parts */
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "<span class=\"badge FAIL\">FAIL</span>"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "<span class=\"badge INCOMPLETE\">INCOMPLETE</span>"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "incomplete: 16.7% INFRA_ERROR (limit 10%)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "incomplete: 16.7% of cycles INFRA_ERROR"));
	CU_ASSERT_EQUAL(count(doc, "<section class=\"part\">"), 2);
	CU_ASSERT_EQUAL(count(doc, "<section class=\"unit\""), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "9 h 13 min"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "(64 MiB)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "<td class=\"n\">baseline</td>"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "<td class=\"n\">5.00\xc3\x97</td>"));	/* fua: 4500 / 900 */
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "<th class=\"n\">lost_acked</th>"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "<th class=\"n\">" REFUSED_NAME "</th>"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "<td class=\"n\">1234</td><td class=\"bad\">lost_acked=27 torn=1</td>"));
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "(no mode)"));

	/* the strip of device 0: 3000 cycles binned, the one FAIL and the one
	 * BOOT_FAIL each still in their cell, and the size bounded */
	strip = svg_with(doc, "Verdicts over cycles");
	CU_ASSERT_PTR_NOT_NULL_FATAL(strip);
	CU_ASSERT_PTR_NOT_NULL(strstr(strip, "each cell: 8 cycles, coloured by the worst outcome among them"));
	CU_ASSERT_PTR_NOT_NULL(strstr(strip, "cycles 1233-1240: worst FAIL"));
	CU_ASSERT_PTR_NOT_NULL(strstr(strip, "cycles 73-80: worst BOOT_FAIL"));
	CU_ASSERT_PTR_NOT_NULL(strstr(strip, "cycles 1993-2000: worst INFRA_ERROR"));
	CU_ASSERT_PTR_NOT_NULL(strstr(strip, svg_outcome_colours[PC_OUT_FAIL]));
	CU_ASSERT_PTR_NOT_NULL(strstr(strip, "FAIL 1<"));
	CU_ASSERT(count(strip, "<rect") < 40);	/* runs, not 5000 cells */
	CU_ASSERT(strlen(strip) < 20000);
	free(strip);
	CU_ASSERT(len < 200000);

	free(doc);
	fixture_free(f);
	free(f);
}

/* An empty report, and a report whose writing fails, say so. */
static void test_edges(void)
{
	struct rep r = { 0 };
	size_t len;
	char err[256], *doc = render(&r, &len);
	FILE *full;

	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	CU_ASSERT_EQUAL(xml_check(doc, len, 1, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(doc, "No verdicts yet."));
	free(doc);

	full = fopen("/dev/full", "w");
	if (!full) {
		pc_test_skip("no /dev/full: %s", strerror(errno));
		return;
	}
	{
		struct fixture *f = calloc(1, sizeof(*f));
		static const char *const dirs[] = { "r" };

		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fixture_build(f);
		CU_ASSERT_EQUAL(report_html(&f->r, full, dirs, 1), -EIO);
		fixture_free(f);
		free(f);
	}
	fclose(full);
}

int suite_html(void)
{
	CU_pSuite s = CU_add_suite("html", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "the XML check of these tests", test_checker) ||
	    !CU_add_test(s, "text escaped for XML and HTML", test_escape) ||
	    !CU_add_test(s, "the worst outcome", test_worse) ||
	    !CU_add_test(s, "strip cells keep the worst outcome", test_bin) ||
	    !CU_add_test(s, "a page from hostile results", test_page) ||
	    !CU_add_test(s, "no devices; a write error", test_edges))
		return -1;
	return 0;
}

/*
 * svg.c - a small SVG writer for the HTML report (svg.h).
 *
 * Charts are drawn in pixels of a fixed width (CHART_W) with a viewBox, so
 * the page may scale them, and with no fonts or styles of their own beyond
 * "sans-serif": the report is one file a supplier opens anywhere, offline.
 * Numbers are printed with %.1f in the C locale (powercut never calls
 * setlocale), so a decimal comma cannot break an attribute.
 */
#include "harness/report/svg.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/report/xml.h"
#include "harness/results/verdict.h"

#define CHART_W		960
#define FONT		"font-family=\"sans-serif\" font-size=\"12\""
#define AXIS_COLOUR	"#444"
#define GRID_COLOUR	"#ddd"
#define LABEL_CHARS	24	/* row and bar labels are cut to this (full text in a <title>) */

const char *const svg_outcome_colours[PC_NOUTCOMES] = {
	[PC_OUT_PASS] = "#2ca02c",
	[PC_OUT_FAIL] = "#d62728",
	[PC_OUT_BOOT_FAIL] = "#7b1fa2",
	[PC_OUT_INFRA_ERROR] = "#9e9e9e",
};

/* No red, green, purple or grey: those say outcomes. */
static const char *const series_colours[] = {
	"#1f77b4", "#ff7f0e", "#17becf", "#bcbd22", "#8c564b", "#e377c2", "#393b79", "#e7969c",
};

const char *svg_series_colour(unsigned i)
{
	return series_colours[i % (sizeof(series_colours) / sizeof(series_colours[0]))];
}

/* "1,234,567", "12.3", "0.25": a value as a reader wants it. */
static const char *num_text(double v, char *buf, size_t len)
{
	char tmp[64];
	size_t n, lead, o = 0;
	const char *dot;

	if (!isfinite(v)) {
		snprintf(buf, len, "-");
		return buf;
	}
	if (fabs(v) >= 100 || v == floor(v))
		snprintf(tmp, sizeof(tmp), "%.0f", v);
	else if (fabs(v) >= 10)
		snprintf(tmp, sizeof(tmp), "%.1f", v);
	else
		snprintf(tmp, sizeof(tmp), "%.2f", v);
	dot = strchr(tmp, '.');
	n = dot ? (size_t)(dot - tmp) : strlen(tmp);
	lead = tmp[0] == '-';
	for (size_t i = 0; tmp[i] && o + 2 < len; i++) {
		buf[o++] = tmp[i];
		if (i >= lead && i + 1 < n && (n - i - 1) % 3 == 0)
			buf[o++] = ',';
	}
	buf[o] = 0;
	return buf;
}

/* "850 µs", "1.2 ms", "3.4 s" */
static const char *us_text(double us, char *buf, size_t len)
{
	if (us < 1000)
		snprintf(buf, len, "%.0f \xc2\xb5s", us);
	else if (us < 10000)
		snprintf(buf, len, "%.2f ms", us / 1e3);
	else if (us < 1e6)
		snprintf(buf, len, "%.0f ms", us / 1e3);
	else
		snprintf(buf, len, "%.2f s", us / 1e6);
	return buf;
}

/* A step of 1, 2 or 5 times a power of ten giving about n ticks over range. */
static double nice_step(double range, int n)
{
	double raw = range / n, mag, f;

	if (!(raw > 0) || !isfinite(raw))
		return 1;
	mag = pow(10, floor(log10(raw)));
	f = raw / mag;
	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static void svg_open(FILE *out, int w, int h, const char *title)
{
	fprintf(out, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" " FONT
		" aria-label=\"", w, h, w, h);
	xml_escape(out, title);
	fputs("\"><title>", out);
	xml_escape(out, title);
	fprintf(out, "</title>\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", w, h);
	fputs("<text x=\"8\" y=\"18\" font-size=\"14\" font-weight=\"bold\">", out);
	xml_escape(out, title);
	fputs("</text>\n", out);
}

static void svg_close(FILE *out)
{
	fputs("</svg>\n", out);
}

/* A legend entry at (x, y); returns the x of the next one. */
static double legend_item(FILE *out, double x, double y, const char *colour, const char *text)
{
	size_t chars = 0;

	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"11\" height=\"11\" fill=\"%s\" stroke=\"" AXIS_COLOUR
		"\" stroke-width=\"0.5\"/><text x=\"%.1f\" y=\"%.1f\">", x, y - 10, colour, x + 15, y);
	xml_escape_max(out, text, 60);
	fputs("</text>\n", out);
	for (const unsigned char *p = (const unsigned char *)text; *p && chars < 60; p++)
		chars += (*p & 0xc0) != 0x80;
	return x + 15 + 7.0 * (double)chars + 18;
}

/* ---- strip chart ---- */

#define STRIP_L		160
#define STRIP_R		16
#define STRIP_T		50
#define STRIP_ROW	18
#define STRIP_GAP	6
#define STRIP_MINCELL	2	/* px: more cycles than this allows are binned */
#define STRIP_MAXCELL	24
#define STRIP_SPLIT	200	/* up to this many cells, each is drawn apart */

static int outcome_rank(int o)
{
	switch (o) {
	case PC_OUT_PASS: return 1;
	case PC_OUT_INFRA_ERROR: return 2;
	case PC_OUT_BOOT_FAIL: return 3;
	case PC_OUT_FAIL: return 4;
	default: return 0;
	}
}

int svg_outcome_worse(int a, int b)
{
	int ra = outcome_rank(a), rb = outcome_rank(b);

	if (!ra && !rb)
		return -1;
	return ra >= rb ? a : b;
}

void svg_strip_bin(const struct svg_strip_row *row, unsigned long first, unsigned long per, signed char *cells,
		   size_t ncells)
{
	memset(cells, -1, ncells);
	if (!per)
		return;
	for (size_t i = 0; i < row->n; i++) {
		unsigned long k;

		if (row->cycle[i] < first)
			continue;
		k = (row->cycle[i] - first) / per;
		if (k < ncells)
			cells[k] = (signed char)svg_outcome_worse(cells[k], row->out[i]);
	}
}

static void strip_cell(FILE *out, const char *name, double x, double y, double w, int o, unsigned long c0,
		       unsigned long c1, int binned)
{
	fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>", x, y, w,
		STRIP_ROW, svg_outcome_colours[o]);
	xml_escape(out, name);
	if (c0 == c1)
		fprintf(out, ": cycle %lu: %s", c0, pc_outcome_names[o]);
	else
		fprintf(out, ": cycles %lu-%lu: %s%s", c0, c1, binned ? "worst " : "", pc_outcome_names[o]);
	fputs("</title></rect>\n", out);
}

/* the cells of a strip chart: cycles cmin..cmax, per cycles a cell, ncells of width cw */
struct strip_geom {
	unsigned long cmin, cmax, per;
	size_t ncells;
	double cw;
};

/* the legend: the outcomes that occur, with their counts */
static void strip_legend(FILE *out, const unsigned long *count)
{
	double x = 8;

	for (int o = 0; o < PC_NOUTCOMES; o++) {
		char t[96], n[32];

		if (!count[o] && o != PC_OUT_PASS && o != PC_OUT_FAIL)
			continue;
		snprintf(t, sizeof(t), "%s %s", pc_outcome_names[o], num_text((double)count[o], n, sizeof(n)));
		x = legend_item(out, x, 38, svg_outcome_colours[o], t);
	}
}

/* a board's row at y, its cells binned into cells: the number of empty cells */
static unsigned long strip_row(FILE *out, const struct strip_geom *g, const struct svg_strip_row *row, double y,
			       signed char *cells)
{
	unsigned long gaps = 0;
	size_t k = 0;

	svg_strip_bin(row, g->cmin, g->per, cells, g->ncells);
	fprintf(out, "<g><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\"><title>", STRIP_L - 8,
		y + STRIP_ROW - 5);
	xml_escape(out, row->name);
	fputs("</title>", out);
	xml_escape_max(out, row->name, LABEL_CHARS);
	fprintf(out, "</text>\n<rect x=\"%d\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"" SVG_NONE_COLOUR
		"\"/>\n", STRIP_L, y, g->cw * (double)g->ncells, STRIP_ROW);
	while (k < g->ncells) {
		size_t e = k + 1;
		unsigned long c0, c1;

		if (cells[k] < 0) {
			gaps++;
			k++;
			continue;
		}
		/* few cells: each apart, with a hairline between; many: runs */
		if (g->ncells > STRIP_SPLIT)
			while (e < g->ncells && cells[e] == cells[k])
				e++;
		c0 = g->cmin + k * g->per;
		c1 = g->cmin + e * g->per - 1;
		if (c1 > g->cmax)
			c1 = g->cmax;
		strip_cell(out, row->name, STRIP_L + g->cw * (double)k, y,
			   g->cw * (double)(e - k) - (g->ncells <= STRIP_SPLIT && g->cw >= 4 ? 1 : 0), cells[k], c0, c1,
			   g->per > 1);
		k = e;
	}
	fputs("</g>\n", out);
	return gaps;
}

/* the cycle axis at yax: ticks at the middle of a tick cycle's cell */
static void strip_axis(FILE *out, const struct strip_geom *g, double yax, unsigned long gaps)
{
	double step = nice_step((double)(g->cmax - g->cmin), 8);
	unsigned long s = step < 1 ? 1 : (unsigned long)step, c;

	fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"" AXIS_COLOUR "\"/>\n",
		STRIP_L, yax, STRIP_L + g->cw * (double)g->ncells, yax);
	for (c = (g->cmin + s - 1) / s * s; c <= g->cmax; c += s) {
		double tx = STRIP_L + ((double)((c - g->cmin) / g->per) + 0.5) * g->cw;

		fprintf(out, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"" AXIS_COLOUR
			"\"/><text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%lu</text>\n", tx, yax, tx,
			yax + 5, tx, yax + 18, c);
		if (c > (unsigned long)-1 - s)
			break;
	}
	fprintf(out, "<text x=\"%d\" y=\"%.1f\" fill=\"" AXIS_COLOUR "\">cycle", STRIP_L, yax + 38);
	if (g->per > 1)
		fprintf(out, " (each cell: %lu cycles, coloured by the worst outcome among them)", g->per);
	if (gaps)
		fputs("; light grey: no verdict", out);
	fputs("</text>\n", out);
}

int svg_strip(FILE *out, const char *title, const struct svg_strip_row *rows, size_t nrows)
{
	const int pw = CHART_W - STRIP_L - STRIP_R;
	const size_t maxcells = (size_t)pw / STRIP_MINCELL;
	struct strip_geom g = { .cmin = (unsigned long)-1, .cmax = 0 };
	unsigned long count[PC_NOUTCOMES] = { 0 }, gaps = 0;
	signed char *cells;
	int h;

	for (size_t r = 0; r < nrows; r++)
		for (size_t i = 0; i < rows[r].n; i++) {
			if (rows[r].cycle[i] < g.cmin)
				g.cmin = rows[r].cycle[i];
			if (rows[r].cycle[i] > g.cmax)
				g.cmax = rows[r].cycle[i];
			if (rows[r].out[i] >= 0 && rows[r].out[i] < PC_NOUTCOMES)
				count[rows[r].out[i]]++;
		}
	h = STRIP_T + (int)nrows * (STRIP_ROW + STRIP_GAP) + 52;
	if (g.cmin > g.cmax) {
		svg_open(out, CHART_W, 60, title);
		fputs("<text x=\"8\" y=\"44\">no verdicts</text>\n", out);
		svg_close(out);
		return 0;
	}
	/* per > (cmax - cmin) / maxcells, so at most maxcells cells */
	g.per = (g.cmax - g.cmin) / maxcells + 1;
	g.ncells = (size_t)((g.cmax - g.cmin) / g.per + 1);
	g.cw = (double)pw / (double)g.ncells;
	if (g.cw > STRIP_MAXCELL)
		g.cw = STRIP_MAXCELL;
	if (!(cells = malloc(g.ncells)))
		return -ENOMEM;

	svg_open(out, CHART_W, h, title);
	strip_legend(out, count);
	for (size_t r = 0; r < nrows; r++)
		gaps += strip_row(out, &g, &rows[r], STRIP_T + (double)r * (STRIP_ROW + STRIP_GAP), cells);
	strip_axis(out, &g, STRIP_T + (double)nrows * (STRIP_ROW + STRIP_GAP), gaps);
	svg_close(out);
	free(cells);
	return 0;
}

/* ---- latency ---- */

#define LAT_L		70
#define LAT_R		34
#define LAT_PH		220
#define LAT_EIGHTH	(0.30102999566398120 / 8)	/* log10(2) / 8 */

/* log10 of a bucket's edges: [lo, hi + 1), with 0 drawn as 0.5 us */
static double lat_x0(unsigned b)
{
	uint32_t lo = pc_lat_lo(b);

	return log10(lo ? (double)lo : 0.5);
}

static double lat_x1(unsigned b)
{
	return log10((double)pc_lat_hi(b) + 1.0);
}

/* the share of a series' writes in bucket b, per eighth of an octave (%) */
static double lat_density(const struct svg_lat_series *s, unsigned b)
{
	return 100.0 * (double)s->hist[b] / (double)s->n / ((lat_x1(b) - lat_x0(b)) / LAT_EIGHTH);
}

static const char *decade_text(int k, char *buf, size_t len)
{
	static const char *const unit[] = { "\xc2\xb5s", "ms", "s" };
	static const char *const mant[] = { "1", "10", "100" };

	if (k < 0)
		snprintf(buf, len, "0.%s \xc2\xb5s", k == -1 ? "1" : "01");
	else if (k < 9)
		snprintf(buf, len, "%s %s", mant[k % 3], unit[k / 3]);
	else
		snprintf(buf, len, "%s000 s", mant[k % 3]);
	return buf;
}

/* the latency chart's scales: decades dlo..dhi across pw, 0..ymax (%) in steps, plot top t */
struct lat_geom {
	int dlo, dhi, t, pw;
	double ymax, step;
};

static double lat_px(const struct lat_geom *g, double v)
{
	return LAT_L + (v - g->dlo) / (double)(g->dhi - g->dlo) * g->pw;
}

static double lat_py(const struct lat_geom *g, double v)
{
	return g->t + LAT_PH - v / g->ymax * LAT_PH;
}

/* the decades the buckets span, the highest share rounded up to a step:
 * the number of series shown (0: nothing to draw) */
static int lat_scale(const struct svg_lat_series *s, size_t ns, struct lat_geom *g)
{
	double xmin = 1e9, xmax = -1e9, ymax = 0;
	int shown = 0;

	for (size_t i = 0; i < ns; i++) {
		if (!s[i].n || !s[i].hist)
			continue;
		shown++;
		for (unsigned b = 0; b < PC_LAT_BUCKETS; b++) {
			if (!s[i].hist[b])
				continue;
			if (lat_x0(b) < xmin)
				xmin = lat_x0(b);
			if (lat_x1(b) > xmax)
				xmax = lat_x1(b);
			if (lat_density(&s[i], b) > ymax)
				ymax = lat_density(&s[i], b);
		}
	}
	if (!shown || xmin > xmax)
		return 0;
	g->pw = CHART_W - LAT_L - LAT_R;
	g->dlo = (int)floor(xmin + 1e-9);
	g->dhi = (int)ceil(xmax - 1e-9);
	if (g->dhi <= g->dlo)
		g->dhi = g->dlo + 1;
	g->step = nice_step(ymax, 5);
	g->ymax = ceil(ymax / g->step - 1e-9) * g->step;
	if (!(g->ymax > 0))
		g->ymax = g->step;
	g->t = 34 + 18 * shown;
	return shown;
}

/* a line per series: its colour, name, writes and percentiles */
static void lat_legend(FILE *out, const struct svg_lat_series *s, size_t ns)
{
	int k = 0;

	for (size_t i = 0; i < ns; i++) {
		char txt[256], a[32], b[32], c[32], d[32];

		if (!s[i].n || !s[i].hist)
			continue;
		fprintf(out, "<rect x=\"8\" y=\"%d\" width=\"11\" height=\"11\" fill=\"%s\"/><text x=\"24\" y=\"%d\">",
			24 + 18 * k, svg_series_colour(s[i].colour), 34 + 18 * k);
		xml_escape_max(out, s[i].name, LABEL_CHARS);
		snprintf(txt, sizeof(txt), ": %s writes, p50 %s, p99 %s, max %s", num_text((double)s[i].n, a, sizeof(a)),
			 us_text(s[i].p50, b, sizeof(b)), us_text(s[i].p99, c, sizeof(c)),
			 us_text(s[i].max, d, sizeof(d)));
		xml_escape(out, txt);
		fputs("</text>\n", out);
		k++;
	}
}

/* grid: decades labelled, 2..9 as minor ticks; shares on y */
static void lat_grid(FILE *out, const struct lat_geom *g)
{
	const int t = g->t;

	for (int k = g->dlo; k <= g->dhi; k++) {
		char txt[32];

		fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"" GRID_COLOUR "\"/>"
			"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", lat_px(g, k), t, lat_px(g, k),
			t + LAT_PH + 5, lat_px(g, k), t + LAT_PH + 18, decade_text(k, txt, sizeof(txt)));
		for (int m = 2; m < 10 && k < g->dhi; m++)
			fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"" AXIS_COLOUR "\"/>\n",
				lat_px(g, k + log10(m)), t + LAT_PH, lat_px(g, k + log10(m)), t + LAT_PH + 3);
	}
	for (double v = 0; v <= g->ymax + g->step / 2; v += g->step) {
		char txt[32];

		fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"" GRID_COLOUR "\"/>"
			"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s%%</text>\n", LAT_L, lat_py(g, v), LAT_L + g->pw,
			lat_py(g, v), LAT_L - 6, lat_py(g, v) + 4, num_text(v, txt, sizeof(txt)));
	}
}

/* a series' outline: a step over its buckets, on the baseline where it has none */
static void lat_outline(FILE *out, const struct lat_geom *g, const struct svg_lat_series *s)
{
	const char *col = svg_series_colour(s->colour);
	unsigned b0 = PC_LAT_BUCKETS, b1 = 0;

	for (unsigned b = 0; b < PC_LAT_BUCKETS; b++)
		if (s->hist[b]) {
			if (b < b0)
				b0 = b;
			b1 = b;
		}
	fprintf(out, "<polyline fill=\"%s\" fill-opacity=\"0.18\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
		col, col);
	fprintf(out, "%.1f,%.1f", lat_px(g, lat_x0(b0)), lat_py(g, 0.0));
	for (unsigned b = b0; b <= b1; b++) {
		double y = lat_py(g, lat_density(s, b));

		fprintf(out, " %.1f,%.1f %.1f,%.1f", lat_px(g, lat_x0(b)), y, lat_px(g, lat_x1(b)), y);
	}
	fprintf(out, " %.1f,%.1f\"><title>", lat_px(g, lat_x1(b1)), lat_py(g, 0.0));
	xml_escape(out, s->name);
	fputs("</title></polyline>\n", out);
}

int svg_latency(FILE *out, const char *title, const struct svg_lat_series *s, size_t ns)
{
	struct lat_geom g;
	int t;

	if (!lat_scale(s, ns, &g))
		return 0;
	t = g.t;
	svg_open(out, CHART_W, t + LAT_PH + 52, title);
	lat_legend(out, s, ns);
	lat_grid(out, &g);
	for (size_t i = 0; i < ns; i++)
		if (s[i].n && s[i].hist)
			lat_outline(out, &g, &s[i]);
	fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"" AXIS_COLOUR "\"/>\n", LAT_L,
		t + LAT_PH, LAT_L + g.pw, t + LAT_PH);
	fprintf(out, "<text x=\"%d\" y=\"%d\" fill=\"" AXIS_COLOUR "\">write latency, SUBMIT to ACK (log scale)</text>\n",
		LAT_L, t + LAT_PH + 40);
	fprintf(out, "<text x=\"14\" y=\"%d\" fill=\"" AXIS_COLOUR "\" transform=\"rotate(-90 14 %d)\" "
		"text-anchor=\"middle\">%% of writes per 1/8 octave</text>\n", t + LAT_PH / 2, t + LAT_PH / 2);
	svg_close(out);
	return 0;
}

/* ---- horizontal bars ---- */

#define HB_L	170
#define HB_R	330
#define HB_BAR	20
#define HB_GAP	8
#define HB_T	34

int svg_hbars(FILE *out, const char *title, const char *unit, const char *const *label, const double *v,
	      const char *const *note, const unsigned *colour, size_t n)
{
	const int pw = CHART_W - HB_L - HB_R;
	double vmax = 0, step;
	int h, yax;

	for (size_t i = 0; i < n; i++)
		if (isfinite(v[i]) && v[i] > vmax)
			vmax = v[i];
	step = nice_step(vmax, 5);
	vmax = ceil(vmax / step - 1e-9) * step;
	if (!(vmax > 0))
		vmax = step;
	yax = HB_T + (int)n * (HB_BAR + HB_GAP);
	h = yax + 40;

	svg_open(out, CHART_W, h, title);
	for (double g = 0; g <= vmax + step / 2; g += step) {
		double gx = HB_L + g / vmax * pw;
		char txt[32];

		fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"" GRID_COLOUR "\"/>"
			"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", gx, HB_T - 4, gx, yax + 4, gx,
			yax + 18, num_text(g, txt, sizeof(txt)));
	}
	for (size_t i = 0; i < n; i++) {
		int y = HB_T + (int)i * (HB_BAR + HB_GAP) + HB_GAP / 2;
		double w = isfinite(v[i]) && v[i] > 0 ? v[i] / vmax * pw : 0;
		char txt[48];

		fprintf(out, "<g><text x=\"%d\" y=\"%d\" text-anchor=\"end\"><title>", HB_L - 8, y + HB_BAR - 5);
		xml_escape(out, label[i]);
		fputs("</title>", out);
		xml_escape_max(out, label[i], LABEL_CHARS);
		fputs("</text>\n", out);
		if (isfinite(v[i]) && v[i] >= 0)
			fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", HB_L, y, w,
				HB_BAR, svg_series_colour(colour ? colour[i] : (unsigned)i));
		fprintf(out, "<text x=\"%.1f\" y=\"%d\">", HB_L + w + 6, y + HB_BAR - 5);
		if (isfinite(v[i]) && v[i] >= 0) {
			xml_escape(out, num_text(v[i], txt, sizeof(txt)));
			if (unit) {
				fputc(' ', out);
				xml_escape(out, unit);
			}
		} else {
			fputs("no data", out);
		}
		if (note && note[i]) {
			fputs(" \xc2\xb7 ", out);
			xml_escape_max(out, note[i], 48);
		}
		fputs("</text></g>\n", out);
	}
	fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"" AXIS_COLOUR "\"/>\n", HB_L, HB_T - 4,
		HB_L, yax + 4);
	if (unit) {
		fprintf(out, "<text x=\"%d\" y=\"%d\" fill=\"" AXIS_COLOUR "\">", HB_L, yax + 34);
		xml_escape(out, unit);
		fputs("</text>\n", out);
	}
	svg_close(out);
	return 0;
}

/* ---- stacked columns ---- */

#define COL_L	70
#define COL_R	20
#define COL_PH	200

int svg_columns(FILE *out, const char *title, const char *xlabel, const char *ylabel,
		const char *const *catlabel, size_t ncat, const struct svg_series *s, size_t ns)
{
	const int pw = CHART_W - COL_L - COL_R;
	double ymax = 0, step, colw;
	size_t every = 1;
	int t = 50, h = t + COL_PH + 52;

	if (!ncat)
		return 0;
	for (size_t c = 0; c < ncat; c++) {
		double sum = 0;

		for (size_t i = 0; i < ns; i++)
			if (isfinite(s[i].v[c]) && s[i].v[c] > 0)
				sum += s[i].v[c];
		if (sum > ymax)
			ymax = sum;
	}
	step = nice_step(ymax, 5);
	if (step < 1)
		step = 1;	/* counts */
	ymax = ceil(ymax / step - 1e-9) * step;
	if (!(ymax > 0))
		ymax = step;
	colw = (double)pw / (double)ncat;
	while (colw * (double)every < 28)
		every *= 2;

	svg_open(out, CHART_W, h, title);
	{
		double x = 8;

		for (size_t i = 0; i < ns; i++)
			x = legend_item(out, x, 38, svg_series_colour(s[i].colour), s[i].name);
	}
#define CY(v) (t + COL_PH - (v) / ymax * COL_PH)
	for (double v = 0; v <= ymax + step / 2; v += step) {
		char txt[32];

		fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"" GRID_COLOUR "\"/>"
			"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", COL_L, CY(v), COL_L + pw, CY(v),
			COL_L - 6, CY(v) + 4, num_text(v, txt, sizeof(txt)));
	}
	for (size_t c = 0; c < ncat; c++) {
		double x = COL_L + colw * (double)c, base = 0;

		for (size_t i = 0; i < ns; i++) {
			double v = s[i].v[c];
			char txt[32];

			if (!isfinite(v) || v <= 0)
				continue;
			fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>",
				x + colw * 0.1, CY(base + v), colw * 0.8, CY(base) - CY(base + v),
				svg_series_colour(s[i].colour));
			xml_escape(out, s[i].name);
			fputs(" ", out);
			xml_escape(out, catlabel[c]);
			fprintf(out, ": %s</title></rect>\n", num_text(v, txt, sizeof(txt)));
			base += v;
		}
		if (c % every == 0 || c + 1 == ncat) {
			fprintf(out, "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">", x + colw / 2, t + COL_PH + 18);
			xml_escape_max(out, catlabel[c], 8);
			fputs("</text>\n", out);
		}
	}
	fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"" AXIS_COLOUR "\"/>\n", COL_L,
		t + COL_PH, COL_L + pw, t + COL_PH);
	fprintf(out, "<text x=\"%d\" y=\"%d\" fill=\"" AXIS_COLOUR "\">", COL_L, t + COL_PH + 40);
	xml_escape(out, xlabel);
	fprintf(out, "</text>\n<text x=\"14\" y=\"%d\" fill=\"" AXIS_COLOUR "\" transform=\"rotate(-90 14 %d)\" "
		"text-anchor=\"middle\">", t + COL_PH / 2, t + COL_PH / 2);
	xml_escape(out, ylabel);
	fputs("</text>\n", out);
#undef CY
	svg_close(out);
	return 0;
}

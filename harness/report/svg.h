/*
 * svg.h - a small SVG writer for the HTML report: the few charts a person
 * would rather look at than read (cycle outcomes as a strip, a latency
 * histogram on a log axis, horizontal bars, stacked columns). Each chart
 * is one self-contained inline <svg> element: no script, no external font,
 * stylesheet or link. Strings are escaped wherever they land (xml_escape,
 * harness/report/xml.h), so hostile board or mode names stay text.
 *
 * Every function writes to out and returns 0, or -ENOMEM; the caller checks
 * ferror(out) once at the end.
 */
#ifndef PC_HARNESS_SVG_H
#define PC_HARNESS_SVG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "harness/report/xml.h"

/* Fill colours of the cycle outcomes (enum pc_outcome), and of "no verdict". */
extern const char *const svg_outcome_colours[];
#define SVG_NONE_COLOUR "#e6e6e6"
/* A colour for the i-th series of a chart (write modes), distinct from the
 * outcome colours. */
const char *svg_series_colour(unsigned i);

/*
 * The worse of two outcomes for a cell that stands for several cycles:
 * FAIL, then BOOT_FAIL, then INFRA_ERROR, then PASS; -1 (no verdict, or a
 * value that is no outcome) is the least.
 */
int svg_outcome_worse(int a, int b);

/* One row of a strip chart: a board's verdicts, by cycle (any order). */
struct svg_strip_row {
	const char *name;
	const unsigned long *cycle;
	const signed char *out;		/* enum pc_outcome per cycle */
	size_t n;
};

/*
 * Bin a row: cells[k] is the worst outcome of its cycles numbered
 * first + k * per to first + (k + 1) * per - 1, -1 when it has none.
 * Cycles outside the ncells cells are ignored.
 */
void svg_strip_bin(const struct svg_strip_row *row, unsigned long first, unsigned long per, signed char *cells,
		   size_t ncells);

/*
 * A strip chart: one row per board, one cell per cycle on a common cycle
 * axis, coloured by outcome, with a legend (counts per outcome) and cycle
 * ticks. More cycles than the chart has room for are binned, each cell
 * showing the worst outcome of its cycles; the size of the output is
 * bounded by the number of rows, not of cycles.
 */
int svg_strip(FILE *out, const char *title, const struct svg_strip_row *rows, size_t nrows);

/* One series of the latency chart: a log-bucket histogram (verdict.h). */
struct svg_lat_series {
	const char *name;
	unsigned colour;		/* svg_series_colour(colour) */
	const uint64_t *hist;		/* PC_LAT_BUCKETS counts */
	uint64_t n;
	uint32_t p50, p99, max;		/* for the legend (us) */
};

/*
 * The write-latency distribution of each series on a log axis (us to s), as
 * overlaid outlines of the share of writes per eighth of an octave, so that
 * series of different sizes and buckets of different widths compare.
 * Series without latencies are left out; none at all writes nothing.
 */
int svg_latency(FILE *out, const char *title, const struct svg_lat_series *s, size_t ns);

/*
 * Horizontal bars, one per label, value v[i] (< 0: "no data", no bar), the
 * value printed after the bar followed by unit and note[i] (note may be
 * NULL, or hold NULLs); bar i is svg_series_colour(colour[i]), or of i when
 * colour is NULL.
 */
int svg_hbars(FILE *out, const char *title, const char *unit, const char *const *label, const double *v,
	      const char *const *note, const unsigned *colour, size_t n);

/* One series of stacked columns: ncat values. */
struct svg_series {
	const char *name;
	unsigned colour;		/* svg_series_colour(colour) */
	const double *v;
};

/*
 * Stacked columns: ncat categories along x (catlabel[i] under every few of
 * them), ns series stacked in each, with a legend and axis labels.
 */
int svg_columns(FILE *out, const char *title, const char *xlabel, const char *ylabel,
		const char *const *catlabel, size_t ncat, const struct svg_series *s, size_t ns);

#endif

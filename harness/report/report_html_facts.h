/*
 * report_html_facts.h - pieces of the HTML report (report_html.c) that put
 * the results' facts in words: the part's name, the test conditions as
 * readable rows, what reached the device per mode, and the glossary of the
 * verdict vocabulary. Private to harness/report/.
 */
#ifndef PC_REPORT_HTML_FACTS_H
#define PC_REPORT_HTML_FACTS_H

#include <stdio.h>

#include "harness/report/report_model.h"

/* The part a unit is: an eMMC/SD's name; a disk's vendor and model; else its
 * type and path ("file /srv/disk.img"). "unknown" when nothing says. */
const char *rep_html_part_name(const struct rep_dev *d, char *buf, size_t len);
/* A part section's heading after "Part ": manfid, name, firmware for an
 * eMMC/SD; for other devices their part name when every unit of the part
 * (units[0..n), those of devs with same part) has the same one. */
void rep_html_part_heading(FILE *out, const struct rep *r, unsigned first);
/* Test condition k of d as readable text (the region's size from the device
 * when the configuration gives none, the modes as a list, the cut plan and
 * the policy as rows): 1 written, 0 nothing written (the caller writes the
 * raw field). */
int rep_html_cond(FILE *out, const struct rep_dev *d, int k);
/* "What reached the device": per mode what it became on the way (the text
 * report's io line), its requests and audited cycles; nothing when no
 * cycle was audited. */
void rep_html_io(FILE *out, const struct rep_dev *d);
/* The glossary of the verdict vocabulary (docs/design.md section 6). */
void rep_html_glossary(FILE *out);

#endif

/*
 * report_html_facts.c - the HTML report's facts in words (report_html.c
 * lays out the page): a unit's part name and region size whatever its
 * device (an eMMC, a disk, a partition, a file), the modes, cut plan and
 * policy as rows rather than JSON, what each mode became on the way to the
 * device (the text report's "io:" line), and a glossary of the verdict
 * vocabulary, so that a reader handed the page needs nothing else to read
 * it. Every string from the results goes through xml_escape().
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "harness/report/report_html_facts.h"
#include "harness/report/xml.h"

static const char *jstr(json_object *v)
{
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static void esc(FILE *out, const char *s)
{
	xml_escape(out, s);
}

/* 4194304 -> "4194304 bytes (4 MiB)" */
static void bytes_text(FILE *out, int64_t v)
{
	fprintf(out, "%" PRId64 " bytes", v);
	if (v >= 1 << 30 && v % (1 << 30) == 0)
		fprintf(out, " <span class=\"muted\">(%" PRId64 " GiB)</span>", v >> 30);
	else if (v >= 1 << 20 && v % (1 << 20) == 0)
		fprintf(out, " <span class=\"muted\">(%" PRId64 " MiB)</span>", v >> 20);
	else if (v >= 1 << 20)
		fprintf(out, " <span class=\"muted\">(%.1f MiB)</span>", (double)v / (1 << 20));
	else if (v >= 1024 && v % 1024 == 0)
		fprintf(out, " <span class=\"muted\">(%" PRId64 " KiB)</span>", v >> 10);
}

static void varies(FILE *out, const struct rep_field *f)
{
	if (f->varies)
		fputs(" <span class=\"muted\">(varies; the latest)</span>", out);
}

/* ---- the part ---- */

const char *rep_html_part_name(const struct rep_dev *d, char *buf, size_t len)
{
	const char *name = jstr(d->ident[ID_NAME].v), *model = jstr(d->hw[HW_MODEL].v);
	const char *vendor = jstr(d->hw[HW_VENDOR].v), *type = jstr(d->ident[ID_TYPE].v);
	const char *path = jstr(d->hw[HW_PATH].v);

	if (name && *name)
		snprintf(buf, len, "%s", name);
	else if (model && *model)
		snprintf(buf, len, "%s%s%s", vendor && *vendor ? vendor : "", vendor && *vendor ? " " : "", model);
	else if (type && path)
		snprintf(buf, len, "%s %s", type, path);
	else
		snprintf(buf, len, "%s", type ? type : "unknown");
	return buf;
}

static const char *part_of(const struct rep_dev *d)
{
	return d->part ? d->part : "unknown part";
}

void rep_html_part_heading(FILE *out, const struct rep *r, unsigned first)
{
	const struct rep_dev *d = &r->devs[first];
	char b[3][1024];
	int same = 1;

	if (d->ident[ID_NAME].v || d->ident[ID_MANFID].v || d->ident[ID_FWREV].v) {
		fputs("<span class=\"muted\">manfid</span> ", out);
		esc(out, rep_field_text(&d->ident[ID_MANFID], b[0], sizeof(b[0])));
		fputs(" <span class=\"muted\">name</span> ", out);
		esc(out, rep_field_text(&d->ident[ID_NAME], b[1], sizeof(b[1])));
		fputs(" <span class=\"muted\">firmware</span> ", out);
		esc(out, rep_field_text(&d->ident[ID_FWREV], b[2], sizeof(b[2])));
		return;
	}
	/* no eMMC/SD identity: the units' own part name, when they share one */
	rep_html_part_name(d, b[0], sizeof(b[0]));
	for (unsigned j = first + 1; j < r->ndevs; j++)
		if (!strcmp(part_of(&r->devs[j]), part_of(d)) && strcmp(rep_html_part_name(&r->devs[j], b[1], sizeof(b[1])), b[0]))
			same = 0;
	if (!same) {
		fputs("<span class=\"muted\">devices without an eMMC/SD identity (each unit names its part)</span>", out);
		return;
	}
	esc(out, b[0]);
	if (d->hw[HW_FIRMWARE].v) {
		fputs(" <span class=\"muted\">firmware</span> ", out);
		esc(out, rep_field_text(&d->hw[HW_FIRMWARE], b[1], sizeof(b[1])));
	}
}

/* ---- the conditions ---- */

/* "[5, 60]" -> "5 to 60"; a single number as it is; else the JSON */
static void range_text(FILE *out, json_object *v)
{
	if (v && json_object_is_type(v, json_type_array) && json_object_array_length(v) == 2) {
		esc(out, json_object_get_string(json_object_array_get_idx(v, 0)));
		fputs(" to ", out);
		esc(out, json_object_get_string(json_object_array_get_idx(v, 1)));
	} else {
		esc(out, v ? json_object_get_string(v) : "the default range");
	}
}

static void kv_row(FILE *out, const char *k)
{
	fputs("<tr><th>", out);
	esc(out, k);
	fputs("</th><td>", out);
}

/* One cut plan ({"at": ..., ...}) as rows: the plan, when it cuts, and any
 * other key as it is. */
static void cut_rows(FILE *out, json_object *c)
{
	const char *at = jstr(json_object_object_get(c, "at"));
	json_object *delay = json_object_object_get(c, "delay_us");

	if (!at)
		at = "random";	/* the default plan */
	kv_row(out, "plan");
	esc(out, at);
	fputs("</td></tr>\n", out);
	kv_row(out, "cut");
	if (!strcmp(at, "random")) {
		fputs("at a random instant ", out);
		range_text(out, json_object_object_get(c, "window_ms"));
		fputs(" ms after the work is sent", out);
	} else if (!strcmp(at, "acks")) {
		fputs("after a random number of acknowledged records, ", out);
		range_text(out, json_object_object_get(c, "acks"));
	} else if (!strcmp(at, "flush") || !strcmp(at, "fua")) {
		fputs(!strcmp(at, "flush") ? "at the start of the nth cache flush" : "at the nth FUA write", out);
		fputs(" of the cycle's work, n random in ", out);
		range_text(out, json_object_object_get(c, "nth"));
		if (delay && json_object_get_int64(delay) > 0)
			fprintf(out, ", %" PRId64 " \xc2\xb5s after it", json_object_get_int64(delay));
	} else if (!strcmp(at, "mix")) {
		/* docs/config.md, Cut plans: each cycle one of the plans its mode can take */
		fputs("each cycle one of the plans its mode can take, in turn over the cycles of that mode: at a cache "
		      "flush (modes flush, journal), at a FUA write (fua, fua+flush, journal), and at a random instant ", out);
		range_text(out, json_object_object_get(c, "window_ms"));
		fputs(" ms after the work is sent", out);
		if (delay && json_object_get_int64(delay) > 0)
			fprintf(out, "; flushes and FUA writes cut %" PRId64 " \xc2\xb5s after they start",
				json_object_get_int64(delay));
	} else {
		esc(out, json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	}
	fputs("</td></tr>\n", out);
	json_object_object_foreach(c, key, val) {
		static const char *const known[] = { "at", "window_ms", "acks", "nth", "delay_us" };
		int k = 0;

		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			k |= !strcmp(key, known[i]);
		if (k)
			continue;
		kv_row(out, key);
		esc(out, json_object_to_json_string_ext(val, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		fputs("</td></tr>\n", out);
	}
}

static void cut_table(FILE *out, const struct rep_field *f)
{
	json_object *v = f->v;

	fputs("<table class=\"kv inner\">\n", out);
	if (json_object_is_type(v, json_type_object)) {
		cut_rows(out, v);
	} else if (json_object_is_type(v, json_type_array)) {
		/* several plans: each one's rows */
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (json_object_is_type(json_object_array_get_idx(v, i), json_type_object))
				cut_rows(out, json_object_array_get_idx(v, i));
	}
	fputs("</table>", out);
	varies(out, f);
}

/* policy {"fua": {"torn": "allowed", ...}, ...}: a row per mode, a column
 * per class the policy names */
static void policy_table(FILE *out, const struct rep_field *f)
{
	const char *cols[8];
	unsigned ncols = 0;

	json_object_object_foreach(f->v, m0, p0) {
		(void)m0;
		if (!json_object_is_type(p0, json_type_object))
			continue;
		json_object_object_foreach(p0, cls, v0) {
			unsigned i = 0;

			(void)v0;
			while (i < ncols && strcmp(cols[i], cls))
				i++;
			if (i == ncols && ncols < sizeof(cols) / sizeof(cols[0]))
				cols[ncols++] = cls;
		}
	}
	fputs("<table class=\"inner\">\n<tr><th>mode</th>", out);
	for (unsigned i = 0; i < ncols; i++) {
		fputs("<th>", out);
		esc(out, cols[i]);
		fputs(strcmp(cols[i], "unclassified") ? " unacknowledged" : "", out);
		fputs("</th>", out);
	}
	fputs("</tr>\n", out);
	json_object_object_foreach(f->v, mode, pol) {
		fputs("<tr><td>", out);
		esc(out, mode);
		fputs("</td>", out);
		for (unsigned i = 0; i < ncols; i++) {
			const char *w = jstr(json_object_object_get(pol, cols[i]));

			int v = w && !strcmp(w, "violation");

			fputs(v ? "<td><b>" : "<td>", out);
			esc(out, w ? w : "-");
			fputs(v ? "</b></td>" : "</td>", out);
		}
		fputs("</tr>\n", out);
	}
	fputs("</table>", out);
	varies(out, f);
	fputs("<span class=\"muted\">violation: such a finding fails the cycle; allowed: it is counted, not a "
	      "violation. An acknowledged torn record or sector is always a violation.</span>", out);
}

int rep_html_cond(FILE *out, const struct rep_dev *d, int k)
{
	const struct rep_field *f = &d->cond[k];

	switch (k) {
	case COND_REGION:
		if (f->v || !d->hw[HW_SIZE].v || !json_object_is_type(d->hw[HW_SIZE].v, json_type_int))
			return 0;
		/* a posix device: the configuration gives no size, the agent did */
		bytes_text(out, json_object_get_int64(d->hw[HW_SIZE].v));
		varies(out, &d->hw[HW_SIZE]);
		fputs(" <span class=\"muted\">(the device's size as its agent reported it: the region fills it "
		      "unless the agent was given --offset or --length)</span>", out);
		return 1;
	case COND_MODES:
		if (!f->v || !json_object_is_type(f->v, json_type_array))
			return 0;
		for (size_t i = 0; i < json_object_array_length(f->v); i++) {
			fputs(i ? ", " : "", out);
			esc(out, json_object_get_string(json_object_array_get_idx(f->v, i)));
		}
		varies(out, f);
		return 1;
	case COND_CUT:
		if (!f->v || !(json_object_is_type(f->v, json_type_object) || json_object_is_type(f->v, json_type_array)))
			return 0;
		cut_table(out, f);
		return 1;
	case COND_POLICY:
		if (!f->v || !json_object_is_type(f->v, json_type_object))
			return 0;
		policy_table(out, f);
		return 1;
	default:
		return 0;
	}
}

/* ---- what reached the device ---- */

void rep_html_io(FILE *out, const struct rep_dev *d)
{
	int any = 0;

	for (unsigned i = 0; i < d->nmodes; i++)
		any |= d->modes[i].name[0] && (d->modes[i].audited || d->modes[i].audit_unavailable);
	if (!any)
		return;
	fputs("<h4>What reached the device</h4>\n<table class=\"modes io\">\n<tr><th>mode</th><th>became</th>"
	      "<th class=\"n\">writes</th><th class=\"n\">FUA writes</th><th class=\"n\">flushes</th>"
	      "<th class=\"n\">cycles audited</th><th class=\"n\">not what the mode promises</th></tr>\n", out);
	for (unsigned i = 0; i < d->nmodes; i++) {
		const struct rep_mode *m = &d->modes[i];
		char became[160];

		if (!m->name[0] || (!m->audited && !m->audit_unavailable))
			continue;
		fputs("<tr><td>", out);
		esc(out, m->name);
		if (!m->audited) {
			fputs("</td><td colspan=\"6\">not seen: ", out);
			esc(out, m->audit_why);
			fputs("</td></tr>\n", out);
			continue;
		}
		fputs(m->io_notes ? "</td><td class=\"bad\">" : "</td><td>", out);
		esc(out, rep_io_became(d, m, became, sizeof(became)));
		fprintf(out, "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64
			"</td><td class=\"n\">%lu</td><td class=\"n%s\">%lu</td></tr>\n", m->rq[PC_RQ_WRITE], m->rq[PC_RQ_FUA],
			m->rq[PC_RQ_FLUSH], m->audited, m->io_notes ? " bad" : "", m->io_notes);
	}
	fputs("</table>\n<p class=\"muted\">The block requests the device was sent during the work "
	      "(docs/io-audit.md), against what each mode promises: a mode whose durability was emulated "
	      "(FUA by flushes, say) passed on what the kernel did, not on what the part does.</p>\n", out);
}

/* ---- the glossary ---- */

/* The meanings of docs/design.md section 6, word for word (t-report-html
 * holds them against it). */
static const char *const class_meaning[PC_NCLASSES][2] = {
	[PC_CLS_INTACT] = { "the newest submitted record is fully present", "no" },
	[PC_CLS_NOT_WRITTEN] = { "the previous occupant is intact, the new record never landed", "only if acknowledged" },
	[PC_CLS_LOST_ACKED] = { "an acknowledged record is absent (old occupant, erased, or anything else)", "yes" },
	[PC_CLS_TORN] = { "a record holds a mix of new and old sectors (the boundary is reported)",
			  "if acknowledged, or the mode promises atomicity" },
	[PC_CLS_TORN_SECTOR] = { "a sector holds part new, part old bytes (the byte offset is reported)",
				 "if acknowledged, or a reliable write" },
	[PC_CLS_CORRUPT] = { "a sector that is neither old, new nor a tear of the two (the bits flipped are reported)",
			     "yes" },
	[PC_CLS_MISDIRECTED] = { "a valid sector found at an LBA other than the one it was written for", "yes" },
	[PC_CLS_STALE] = { "an occupant older than the previous one came back", "yes" },
	[PC_CLS_COLLATERAL] = { "damage to a slot that was not written in the cut cycle (cold data)", "yes" },
	[PC_CLS_UNREADABLE] = { "the read returned an error", "yes" },
	[PC_CLS_UNCLASSIFIED] = { "a damaged sector whose bytes the host never received: it cannot be classified, and "
				  "no class is guessed (the reason is given)",
				  "no, unless the mode's policy says unclassified: violation" },
};

static const char *const outcome_meaning[PC_NOUTCOMES] = {
	[PC_OUT_PASS] = "the cycle's writes were judged and no finding is a violation",
	[PC_OUT_FAIL] = "any violation",
	[PC_OUT_BOOT_FAIL] = "a board heard in this campaign powers on into silence after the boot timeout and its "
			     "retries, on positive evidence against the device (the board known to have lost power "
			     "and booted, the device shown to be what failed): a dead or bricked device",
	[PC_OUT_INFRA_ERROR] = "relay, link, host or lab setup trouble: not the device's fault, never counted "
			       "against it",
};

static const char *const result_meaning[PC_NRESULTS] = {
	[PC_RES_PASS] = "every cycle judged passed, and enough of them were judged",
	[PC_RES_FAIL] = "a FAIL cycle: a violation",
	[PC_RES_BOOT_FAIL] = "a BOOT_FAIL cycle: the device failed to come back",
	[PC_RES_INCOMPLETE] = "a board given up, too many cycles not judged, cycles left to run: a campaign that "
			      "judged too little never reads PASS",
	[PC_RES_INCONCLUSIVE] = "too few cuts landed during the writes (fewer than 1 in 10, or none) to prove "
				"anything: cut earlier, write longer, or cut at flushes and FUA writes",
};

static void gloss_row(FILE *out, const char *name, const char *meaning, const char *viol)
{
	fputs("<tr><td><code>", out);
	esc(out, name);
	fputs("</code></td><td>", out);
	esc(out, meaning ? meaning : "see docs/verdicts.md");
	if (viol) {
		fputs("</td><td>", out);
		esc(out, viol);
	}
	fputs("</td></tr>\n", out);
}

void rep_html_glossary(FILE *out)
{
	fputs("<section class=\"glossary\" id=\"glossary\">\n<h2>Glossary</h2>\n"
	      "<p>The verdict vocabulary (docs/design.md section 6, docs/verdicts.md): every record a cycle wrote, "
	      "and every slot checked, is found to be one of these classes. In short: kept (<code>intact</code>), "
	      "lost (<code>not_written</code>, <code>lost_acked</code>), torn (<code>torn</code>, "
	      "<code>torn_sector</code>), damaged (<code>corrupt</code>, <code>misdirected</code>, <code>stale</code>, "
	      "<code>collateral</code>, <code>unreadable</code>); only a violation fails a cycle.</p>\n"
	      "<table class=\"gloss\">\n<tr><th>class</th><th>meaning</th><th>violation?</th></tr>\n", out);
	for (int c = 0; c < PC_NCLASSES; c++)
		gloss_row(out, pc_class_names[c], class_meaning[c][0], class_meaning[c][1] ? class_meaning[c][1] : "");
	gloss_row(out, REFUSED_NAME, "a write the device refused (its completion failed): counted apart from "
		  "collateral", "yes");
	fputs("</table>\n<p>Each power cycle gets one outcome:</p>\n<table class=\"gloss\">\n<tr><th>outcome</th>"
	      "<th>meaning</th></tr>\n", out);
	for (int o = 0; o < PC_NOUTCOMES; o++)
		gloss_row(out, pc_outcome_names[o], outcome_meaning[o], NULL);
	fputs("</table>\n<p>Each device gets one result, the worst that applies:</p>\n<table class=\"gloss\">\n"
	      "<tr><th>result</th><th>meaning</th></tr>\n", out);
	for (int o = 0; o < PC_NRESULTS; o++)
		gloss_row(out, pc_result_names[o], result_meaning[o], NULL);
	fputs("</table>\n<p class=\"muted\">Acknowledged: the host received the agent's ACK, a promise that the "
	      "device confirmed the record durable (a FUA write completed, or a flush that covers it). A cut in "
	      "flight: the cut caught writes not yet acknowledged, whose loss or tear is expected, not a "
	      "violation.</p>\n</section>\n", out);
}

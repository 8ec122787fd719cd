/*
 * cmd_write.c - powercut-agent write: records in one mode as fast as the
 * device takes them, and the rate (a benchmark; nothing is verified).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/crc32c.h"
#include "common/proto.h"
#include "common/util.h"
#include "agent/audit.h"
#include "agent/link.h"
#include "agent/region.h"
#include "agent/writer.h"
#include "agent/cmd.h"

/* The writer's lines go nowhere; the audit is read as they come, often
 * enough that the kernel's buffer (1 MiB a CPU: some 14,000 requests) never
 * fills: every 1,024 lines or 20 ms. Each read is a system call per CPU:
 * reading every 8 lines cost the writer a tenth of its rate at QD 1 on a
 * memory-backed loop device. */
struct counts {
	struct audit *audit;
	unsigned lines;
	uint64_t last_ms;
};

static int line_count(const char *text, size_t len, void *arg)
{
	struct counts *c = arg;

	(void)text;
	(void)len;
	if (!c->audit)
		return 0;
	if (++c->lines % 1024 == 0 || (c->lines % 16 == 0 && pc_now_ms() - c->last_ms >= 20)) {
		audit_poll(c->audit);
		c->last_ms = pc_now_ms();
	}
	return 0;
}

static void print_json(json_object *out)
{
	puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(out);
}

/* The refused write, for scripts: the same facts the host gets. */
static void print_write_error(const char *err, const struct writer_result *res, const struct audit *aud)
{
	json_object *out = json_object_new_object(), *we = json_object_new_object();

	json_object_object_add(we, "errno", json_object_new_int(res->write_errno));
	json_object_object_add(we, "lba", json_object_new_uint64(res->write_lba));
	json_object_object_add(we, "seq", json_object_new_uint64(res->write_seq));
	json_object_object_add(we, "mode", json_object_new_string(pc_mode_name(res->mode_run)));
	json_object_object_add(we, "op", json_object_new_string(res->write_op ? res->write_op : "write"));
	json_object_object_add(out, "error", json_object_new_string(err));
	json_object_object_add(out, "write_error", we);
	json_object_object_add(out, "io_audit", audit_json(aud));
	print_json(out);
}

/* What was written, how fast, and what reached the device. */
static void print_result(const struct opts *o, const struct region *r, const struct writer_io *io,
			 const struct writer_result *res, const struct audit *aud)
{
	json_object *out = json_object_new_object();

	json_object_object_add(out, "mode", json_object_new_string(o->mode));
	json_object_object_add(out, "mode_run", json_object_new_string(pc_mode_name(res->mode_run)));
	json_object_object_add(out, "pattern", json_object_new_string(pc_pattern_name(o->pattern)));
	json_object_object_add(out, "record_size", json_object_new_int64(r->g.record_size));
	json_object_object_add(out, "qd", json_object_new_int64((int64_t)o->qd));
	json_object_object_add(out, "records", json_object_new_int64((int64_t)res->records));
	json_object_object_add(out, "acked", json_object_new_int64((int64_t)res->acked));
	json_object_object_add(out, "ms", json_object_new_int64((int64_t)res->ms));
	json_object_object_add(out, "records_per_s",
			       json_object_new_double(res->ms ? (double)res->records * 1000.0 / (double)res->ms : 0));
	json_object_object_add(out, "mib_per_s", json_object_new_double(
		res->ms ? (double)res->records * r->g.record_size / 1048576.0 * 1000.0 / (double)res->ms : 0));
	json_object_object_add(out, "io", writer_describe(r, io));
	json_object_object_add(out, "io_audit", audit_json(aud));
	print_json(out);
}

int cmd_write(struct opts *o)
{
	struct region r;
	struct writer_io io = { 0 };
	struct writer_result res;
	struct counts cnt = { 0 };
	struct pc_work w = { 0 };
	struct audit aud;
	char err[1024] = "";
	int ret;

	if (!o->mode || !o->yes) {
		pc_err("write needs --mode MODE and --yes (it overwrites the records in the region on %s)", o->ro.spec);
		return 2;
	}
	if (region_open(&r, &o->ro, 1, err, sizeof(err))) {
		pc_err("%s", err);
		return 1;
	}
	writer_probe(&r, &io);
	w.cycle = 1;
	w.first = 1;
	w.n = o->records ? (uint32_t)o->records : r.g.nslots;
	if (w.n > r.g.nslots)
		w.n = r.g.nslots;
	w.mode = pc_mode_from_name(o->mode);
	w.pattern = o->pattern;
	w.record_size = r.g.record_size;
	w.flush_every = (uint32_t)o->flush_every;
	w.qd = (uint32_t)o->qd;
	/* what reached the device, as in a campaign's verdict (docs/io-audit.md) */
	audit_open(&aud, &r);
	audit_reset(&aud);
	cnt.audit = &aud;
	ret = writer_run(&r, &io, &w, &(struct writer_sink){ line_count, NULL, &cnt }, &res, err, sizeof(err));
	audit_poll(&aud);
	if (ret) {
		pc_err("%s", err);
		if (res.write_errno)
			print_write_error(err, &res, &aud);
		audit_close(&aud);
		region_close(&r);
		writer_release(&io);
		return 1;
	}
	print_result(o, &r, &io, &res, &aud);
	audit_close(&aud);
	region_close(&r);
	writer_release(&io);
	return 0;
}


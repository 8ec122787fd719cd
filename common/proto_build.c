/*
 * proto_build.c - the session's messages built with json-c (hello's are the
 * agent's own): new, range, ack, work, io, error, setup_error.
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

json_object *pc_msg_new(enum pc_msg_type t)
{
	json_object *o;

	if ((unsigned)t >= PC_MSG_TYPE_MAX)
		return NULL;
	o = json_object_new_object();
	if (!o)
		return NULL;
	pv_add(o, "type", json_object_new_string(pc_msg_type_name(t)));
	pv_add(o, "v", json_object_new_int(PC_PROTO_VERSION));
	return o;
}

json_object *pc_msg_range(enum pc_msg_type t, uint64_t first, uint32_t n)
{
	json_object *o = pc_msg_new(t);

	if (o) {
		pv_add(o, "first", pv_jint(first));
		pv_add(o, "n", pv_jint(n));
	}
	return o;
}

json_object *pc_msg_ack(uint64_t first, uint32_t n, const uint32_t *us)
{
	json_object *o = pc_msg_range(PC_MSG_ACK, first, n), *a;

	if (!o || !us || n > PC_PROTO_MAX_LAT_N)
		return o;
	a = json_object_new_array_ext((int)n);
	for (uint32_t i = 0; a && i < n; i++)
		json_object_array_add(a, pv_jint(us[i] > PC_PROTO_MAX_LAT_US ? PC_PROTO_MAX_LAT_US : us[i]));
	pv_add(o, "us", a);
	return o;
}

json_object *pc_msg_work(const struct pc_work *w)
{
	json_object *o = pc_msg_new(PC_MSG_WORK);

	if (!o)
		return NULL;
	pv_add(o, "cycle", pv_jint(w->cycle));
	pv_add(o, "first", pv_jint(w->first));
	pv_add(o, "n", pv_jint(w->n));
	pv_add(o, "mode", json_object_new_string(pc_mode_name(w->mode)));
	pv_add(o, "pattern", json_object_new_string(pc_pattern_name(w->pattern)));
	pv_add(o, "record_size", pv_jint(w->record_size));
	pv_add(o, "flush_every", pv_jint(w->flush_every));
	pv_add(o, "qd", pv_jint(w->qd));
	pv_add(o, "seed", pv_jint(w->seed));
	if (w->announce & PC_IO_ALL) {
		json_object *a = json_object_new_array();

		for (unsigned op = PC_IO_FLUSH; a && op <= PC_IO_FUA; op <<= 1)
			if (w->announce & op)
				json_object_array_add(a, json_object_new_string(pc_io_op_name(op)));
		pv_add(o, "announce", a);
	}
	return o;
}

json_object *pc_msg_io(unsigned op, uint64_t seq)
{
	json_object *o;

	if ((op != PC_IO_FLUSH && op != PC_IO_FUA) || !seq)
		return NULL;
	o = pc_msg_new(PC_MSG_IO);
	if (o) {
		pv_add(o, "op", json_object_new_string(pc_io_op_name(op)));
		pv_add(o, "seq", pv_jint(seq));
	}
	return o;
}

json_object *pc_msg_error(const char *fmt, ...)
{
	json_object *o = pc_msg_new(PC_MSG_ERROR);
	char msg[1024];
	va_list ap;

	if (!o)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pv_add(o, "msg", json_object_new_string(msg));
	return o;
}

json_object *pc_msg_setup_error(const char *board, const char *cause, const char *fmt, ...)
{
	json_object *o = pc_msg_new(PC_MSG_SETUP_ERROR);
	char msg[PC_PROTO_MAX_REASON + 1];
	va_list ap;

	if (!o)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* printable ASCII: a cut in a multi-byte character must not make the
	 * line invalid UTF-8, which the host's parser refuses */
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	if (board && pv_board_name_ok(board))
		pv_add(o, "board", json_object_new_string(board));
	pv_add(o, "cause", json_object_new_string(pv_cause_ok(cause) ? cause : "other"));
	pv_add(o, "reason", json_object_new_string(msg[0] ? msg : "?"));
	return o;
}


/*
 * proto_int.h - what the files of the protocol share (private to common/proto*.c):
 *
 *   proto.c        the message types, the session's schemas, parsing a line
 *   proto_scan.c   the scan report's schemas and builders (scan_begin ... same, verify)
 *   proto_check.c  the validation helpers every schema uses, json helpers
 *   proto_build.c  the session's builders (json-c)
 *   proto_line.c   the line grammar: the writer's lines without json-c, framing,
 *                  the line reader, base64
 */
#ifndef PC_COMMON_PROTO_INT_H
#define PC_COMMON_PROTO_INT_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/auth.h"
#include "common/proto.h"
#include "common/record.h"

#define MARKER_LEN	(sizeof(PC_PROTO_MARKER) - 1)
/*
 * Builders keep the JSON text short enough that the line still fits the
 * limit with the serial marker in front and a CR behind it: the limit is on
 * the line as received, so the reader needs to know nothing about framing.
 */
/* room for the serial marker, a \r and the authentication tag (auth.h) */
#define MAX_JSON	(PC_PROTO_MAX_LINE - MARKER_LEN - 1 - PC_AUTH_TAG_OVERHEAD)
/* Our own fields nest three deep; leave room for free-form device facts. */
#define MAX_DEPTH	16
#define MAX_SPR		(PC_MAX_RECORD_SIZE / PC_SECTOR)
#define MAX_RANGE_N	1048576u
#define RAW_B64_LEN	684u	/* base64 of 512 bytes */

/* One message being validated: errors go to err, prefixed with the type. */
struct vctx {
	const char *type;	/* prefix for errors: the message type, or NULL */
	char *err;
	size_t errlen;
};

/* ---- validation helpers (proto_check.c); each returns 0 or -EINVAL with c->err ---- */

int pv_verr(struct vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *pv_quote(const char *s, char *buf, size_t n);
const char *pv_jtype(json_object *v);
void pv_range_desc(char *buf, size_t n, int64_t min, uint64_t max);
int pv_int_err(struct vctx *c, int present, json_object *v, const char *pfx, const char *key,
	       int64_t min, uint64_t max);
int pv_want_int(struct vctx *c, int present, json_object *v, const char *pfx, const char *key,
		int64_t min, uint64_t max, uint64_t *out);
int pv_get_int(struct vctx *c, json_object *o, const char *pfx, const char *key,
	       int64_t min, uint64_t max, uint64_t *out);
int pv_get_u32(struct vctx *c, json_object *o, const char *pfx, const char *key,
	       uint32_t min, uint32_t max, uint32_t *out);
int pv_get_str(struct vctx *c, json_object *o, const char *pfx, const char *key, const char **out);
int pv_get_hex(struct vctx *c, json_object *o, const char *key, size_t n, const char **out);
int pv_get_bool(struct vctx *c, json_object *o, const char *key, int *out);
int pv_get_obj(struct vctx *c, json_object *o, const char *key, json_object **out);
int pv_get_array(struct vctx *c, json_object *o, const char *key, size_t min, size_t max,
		 json_object **out, size_t *n);
int pv_get_mode(struct vctx *c, json_object *o, const char *key, int *out);
int pv_get_pattern(struct vctx *c, json_object *o, const char *key, int *out);
int pv_get_record_size(struct vctx *c, json_object *o, const char *pfx, uint32_t *out);
int pv_check_seq_range(struct vctx *c, const char *what, uint64_t first, uint64_t n);
json_object *pv_jint(uint64_t v);
void pv_add(json_object *o, const char *key, json_object *v);

/* ---- shared by the schemas and builders (proto_check.c) ---- */

/* A board name as HELLO and setup_error carry it: 1 when valid. */
int pv_board_name_ok(const char *s);
/* A setup_error cause as the host can match it unquoted ([a-z0-9_], 1..32): 1 when valid. */
int pv_cause_ok(const char *s);
/* HELLO's and scan_begin's "region" object. */
int pv_parse_region(struct vctx *c, json_object *reg);

/* ---- the scan report's schemas (proto_scan.c), for the type table ---- */

int pv_parse_scan_begin(struct vctx *c, json_object *o, struct pc_msg *m);
int pv_parse_runs(struct vctx *c, json_object *o, struct pc_msg *m);
int pv_parse_slot(struct vctx *c, json_object *o, struct pc_msg *m);
int pv_parse_scan_end(struct vctx *c, json_object *o, struct pc_msg *m);
int pv_parse_verify(struct vctx *c, json_object *o, struct pc_msg *m);
int pv_parse_known(struct vctx *c, json_object *o, struct pc_msg *m);
int pv_parse_same(struct vctx *c, json_object *o, struct pc_msg *m);

#endif

/*
 * json.h - the one set of JSON field getters: a member of an object, a
 * string member, an integer member. Every reader of a results file, a
 * configuration or an event uses these (proto.h's pc_json_u64/pc_json_str
 * are the validating ones, with an error text); tools/lint-code refuses a
 * private getter elsewhere. The agent links json-c too, so they live here.
 */
#ifndef PC_JSON_H
#define PC_JSON_H

#include <stdint.h>

#include <json-c/json.h>

/* The member key of object o, or NULL (o NULL, not an object, no such member). */
json_object *pc_jget(json_object *o, const char *key);

/* The string member key of o, or def (o NULL, no such member, not a string). */
const char *pc_jstr(json_object *o, const char *key, const char *def);

/* The integer member key of o into *out: 0, or -ENOENT (o NULL, no such
 * member) or -EINVAL (not an integer); *out untouched then. */
int pc_jint(json_object *o, const char *key, int64_t *out);

/* The integer member key of o, or def. */
int64_t pc_jint_or(json_object *o, const char *key, int64_t def);

#endif

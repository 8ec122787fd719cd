/*
 * json.c - the JSON field getters (json.h).
 */
#include "common/json.h"

#include <errno.h>

json_object *pc_jget(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!o || !json_object_is_type(o, json_type_object))
		return NULL;
	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

const char *pc_jstr(json_object *o, const char *key, const char *def)
{
	json_object *v = pc_jget(o, key);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : def;
}

int pc_jint(json_object *o, const char *key, int64_t *out)
{
	json_object *v = pc_jget(o, key);

	if (!v)
		return -ENOENT;
	if (!json_object_is_type(v, json_type_int))
		return -EINVAL;
	*out = json_object_get_int64(v);
	return 0;
}

int64_t pc_jint_or(json_object *o, const char *key, int64_t def)
{
	int64_t v;

	return pc_jint(o, key, &v) ? def : v;
}

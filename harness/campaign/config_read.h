/*
 * config_read.h - the document being read (struct cfg_ctx: the file, where
 * errors go, the "defaults" section and the board being checked), and
 * config_read.c's functions that read one value of it: types, bounds, key
 * typos, paths in errors. config.c makes the context, for the whole
 * document; config.c and config_board.c read through it. Private to
 * harness/campaign/config*.c (split out of config_int.h, issue 41).
 */
#ifndef PC_HARNESS_CAMPAIGN_CONFIG_READ_H
#define PC_HARNESS_CAMPAIGN_CONFIG_READ_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* The document being checked: where errors go and which board is being read. */
struct cfg_ctx {
	const char *file;
	char *err;
	size_t errlen;
	json_object *defaults;	/* the "defaults" section, or NULL */
	json_object *merged;	/* the board being checked, defaults merged in */
	unsigned bi;		/* its index */
};

__attribute__((format(printf, 3, 4)))
int cfg_fail(struct cfg_ctx *x, const char *path, const char *fmt, ...);
const char *cfg_jtype(json_object *v);
unsigned cfg_edit_distance(const char *a, const char *b);
const char *cfg_closest(const char *word, const char *const *cands);
int cfg_unknown_key(struct cfg_ctx *x, const char *path, const char *key,
		    const char *const *valid, const char *hint);
int cfg_in_list(const char *key, const char *const *list);
int cfg_check_keys(struct cfg_ctx *x, json_object *o, const char *path, const char *const *valid);
int cfg_from_defaults(struct cfg_ctx *x, const char *key, const char *sub);
const char *cfg_bpath(struct cfg_ctx *x, char *buf, size_t len, const char *key, const char *sub);
const char *cfg_bsec(struct cfg_ctx *x, char *buf, size_t len, const char *section, const char *key);
int cfg_u64(struct cfg_ctx *x, json_object *v, const char *path, uint64_t min, uint64_t max,
	    uint64_t *out);
int cfg_u32(struct cfg_ctx *x, json_object *v, const char *path, uint32_t min, uint32_t max,
	    uint32_t *out);
int cfg_str(struct cfg_ctx *x, json_object *v, const char *path, const char **out);
int cfg_name(struct cfg_ctx *x, json_object *v, const char *path, char *out, size_t len);
json_object *cfg_bval(struct cfg_ctx *x, const char *key);
void cfg_put(json_object *o, const char *key, json_object *v);
json_object *cfg_copy(json_object *v);
const char *cfg_size_text(uint64_t v, char *buf, size_t len);

#endif

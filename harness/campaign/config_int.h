/*
 * config_int.h - what the files of the campaign configuration share (private
 * to harness/campaign/config*.c):
 *
 *   config.c        the document: campaign keys, "defaults" merged into each
 *                   board, loading and parsing
 *   config_board.c  one board's sections: relay, device, modes, cut, link,
 *                   verify, policy
 *   config_read.c   reading one value: types, bounds, key typos, paths in errors
 *   config_check.c  checks against what a board says (HELLO) and real-board warnings
 *   config_resume.c what a resumed campaign may change (config.h: it needs none of this)
 */
#ifndef PC_HARNESS_CAMPAIGN_CONFIG_INT_H
#define PC_HARNESS_CAMPAIGN_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "harness/campaign/config.h"

#include "common/json.h"

#define CFG_MAX_FILE		(16u << 20)
#define CFG_MAX_SIM_SIZE	(64ull << 30)	/* a typo like "4T" must not fill the disk */
#define CFG_MAX_MS		86400000u	/* one day: any timeout longer is a typo */
#define CFG_MAX_ACKS		10000000u
#define CFG_MAX_DELAY_US	1000000u	/* cut.delay_us: a second after the flush or FUA write starts */

/* The document being checked: where errors go and which board is being read. */
struct cfg_ctx {
	const char *file;
	char *err;
	size_t errlen;
	json_object *defaults;	/* the "defaults" section, or NULL */
	json_object *merged;	/* the board being checked, defaults merged in */
	unsigned bi;		/* its index */
};

/* ---- config_read.c ---- */

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

/* ---- config_board.c ---- */

/* The keys a board (and "defaults") may have. */
extern const char *const cfg_board_keys[];
/* The identity keys a device section may pin (the agent's HELLO must match). */
extern const char *const cfg_ident_keys[];
/* Check the merged board x->merged into b, writing it out with every default
 * filled in into out. */
int cfg_board(struct cfg_ctx *x, struct board_cfg *b, json_object *out);

#endif

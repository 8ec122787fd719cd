/*
 * config_board.h - config_board.c's functions: one board's sections (relay,
 * device, modes, cut, link, verify, policy, stop) checked into a struct
 * board_cfg (config.h), and the key lists the others check against: config.c
 * the "defaults" section's keys and each board (cfg_board), config_check.c
 * the identity keys against a board's HELLO. Private to
 * harness/campaign/config*.c (split out of config_int.h, issue 41).
 */
#ifndef PC_HARNESS_CAMPAIGN_CONFIG_BOARD_H
#define PC_HARNESS_CAMPAIGN_CONFIG_BOARD_H

#include <json-c/json.h>

struct cfg_ctx;
struct board_cfg;

/* The keys a board (and "defaults") may have. */
extern const char *const cfg_board_keys[];
/* The identity keys a device section may pin (the agent's HELLO must match). */
extern const char *const cfg_ident_keys[];
/* Check the merged board x->merged into b, writing it out with every default
 * filled in into out. */
int cfg_board(struct cfg_ctx *x, struct board_cfg *b, json_object *out);

#endif

/*
 * campaign_setup.h - a boot without a hello (campaign_setup.c): what the
 * board's console shows, what the agent said, and the judgement of a silent
 * boot as a setup matter (INFRA_ERROR) or the device's BOOT_FAIL.
 */
#ifndef PC_HARNESS_CAMPAIGN_SETUP_H
#define PC_HARNESS_CAMPAIGN_SETUP_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/proto.h"

struct bctx;

/* What a board's console log holds, for a boot without a hello. */
struct camp_console_facts {
	int exists;		/* the log is there */
	uint64_t bytes;		/* its size */
	char kernel[96];	/* the first sign of a booted kernel, or "" */
	char boot[96];		/* the first line holding one of the board's boot_patterns, or "" */
	char device[128];	/* the first line showing the device failing (MMC, block errors), or "" */
	char tail[240];		/* its last lines (up to 3, not the agent's marked ones), " / " between */
	char cause[33];		/* the last setup_error line for the board: its cause ("" none) */
	char reason[PC_PROTO_MAX_REASON + 1];
};
/* Look through console output (pure): signs of a booted kernel, of the
 * device failing, its last lines, and the last setup_error line (marked)
 * for board. f is reset first. */
void camp_console_inspect(const char *text, size_t len, const char *board, struct camp_console_facts *f);
/* The cycle's console log of board b, read from its last MiB; path set. */
void camp_console_look(struct bctx *b, struct camp_console_facts *f, char *path, size_t pathlen);
/* Take what the agent said (a setup_error message, validated) as this
 * cycle's reason; via: where it came. */
void camp_agent_said(struct bctx *b, json_object *msg, const char *via);
/* The last attempt's boot timeout passed with no authenticated hello: the
 * cycle ends, as a setup matter (INFRA_ERROR) or the device's BOOT_FAIL. */
void camp_boot_judge(struct bctx *b);
/* Grace after the last boot timeout: how long the power stays on. */
uint32_t camp_late_ms(const struct bctx *b);
/* An authenticated hello with a new boot id, on a serial link whose console
 * is whole since power-on (camp_console_whole): on a board that showed a
 * boot before an earlier hello of this run, a hello whose boot id the agent
 * made itself (--fresh-boot-id) with no boot on the console since power-on
 * is no power cut: the cycle ends INFRA_ERROR (cause no_cut), 1. Else 0 (a
 * boot line seen is remembered). */
int camp_hello_unbooted(struct bctx *b, json_object *hello);

#endif

/*
 * config_limits.h - the bounds and defaults of the campaign's own keys (the
 * modes a board may list, stop.boot_fails, results_min_free, target, what a
 * name may be), which config*.c enforce and `powercut status`
 * (status_read.c) takes as given when it reads campaign.json back. Apart from config.h, so that a reader of
 * the bounds does not see struct board_cfg; the results contract's limits
 * (boards, cycles, regions) are harness/results/limits.h's.
 */
#ifndef PC_HARNESS_CAMPAIGN_CONFIG_LIMITS_H
#define PC_HARNESS_CAMPAIGN_CONFIG_LIMITS_H

#define CFG_MAX_MODES 8
/* stop.boot_fails: this many BOOT_FAILs in a row and the board's device is
 * dead (a finding of the device): the board stops. 0: never. */
#define CFG_DEFAULT_STOP_BOOT_FAILS	3u
#define CFG_MAX_STOP_BOOT_FAILS		1000u
/* results_min_free: the campaign stops cleanly (exit 2, resumable) before
 * the results folder's filesystem has less free than this */
#define CFG_DEFAULT_MIN_FREE		(256ull << 20)
#define CFG_MAX_MIN_FREE		(1ull << 40)
/* target: what a rate target may ask (harness/report/qualify.h's bounds) */
#define CFG_TARGET_RATE_MIN		1e-7
#define CFG_TARGET_CONF_MIN		0.5
#define CFG_TARGET_CONF_MAX		0.9999
#define CFG_DEFAULT_TARGET_CONF		0.95

/* A campaign or board name: 1 to 63 of [A-Za-z0-9_.-] (config_read.c). */
int config_valid_name(const char *s);

#endif

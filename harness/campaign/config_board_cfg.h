/*
 * config_board_cfg.h - one board's configuration (struct board_cfg), checked
 * and filled in by config_board.c (cfg_board, config_board.h), held in the
 * campaign's configuration (config.h: struct campaign_cfg's boards), and
 * read by the campaign's files through their board (campaign_board.h: bctx's
 * cfg), by config_check.c and by `powercut relay` (relay_cmd.c). With it,
 * its cut plan's queries, config_board.c's too. Apart from config.h, so
 * that config_board.c sees the board it fills without an arrow up to
 * config.c (issue 41).
 */
#ifndef PC_HARNESS_CAMPAIGN_CONFIG_BOARD_CFG_H
#define PC_HARNESS_CAMPAIGN_CONFIG_BOARD_CFG_H

#include <limits.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/record.h"
#include "harness/campaign/config_limits.h"

enum cut_plan {
	CUT_RANDOM,	/* a random instant in [cut_min, cut_max] ms after the work is sent */
	CUT_ACKS,	/* after a random number in [cut_min, cut_max] of acked records */
	CUT_FLUSH,	/* at the nth cache flush the agent announces, n random in [cut_min, cut_max] */
	CUT_FUA,	/* at the nth FUA write the agent announces, likewise */
	CUT_MIX,	/* each cycle one of flush, fua (the I/O its mode issues) and random, in
			 * turn per mode: [cut_min, cut_max] is the random window, nth any of
			 * the cycle's flushes or FUA writes (the default plan) */
};

struct board_cfg {
	char name[64];			/* [A-Za-z0-9_.-]+, unique */
	char relay_driver[32];
	json_object *relay;		/* the "relay" section (borrowed from root) */
	json_object *device;		/* the "device" section (borrowed from root) */
	char backend[16];		/* device.backend: "sim" or "posix" */
	uint32_t record_size;		/* device.record_size, bytes, multiple of 512 */
	uint64_t max_region_bytes;	/* device.max_region_bytes: the most a HELLO may claim */
	int pattern;			/* enum pc_pattern */
	int modes[CFG_MAX_MODES];	/* enum pc_mode, used in turn, cycle by cycle */
	unsigned nmodes;
	uint32_t records_per_cycle;
	uint32_t flush_every;		/* flush/journal: records per flush */
	uint32_t queue_depth;		/* 1..32 */
	enum cut_plan cut;
	uint32_t cut_min, cut_max;
	uint32_t cut_delay_us;		/* CUT_FLUSH, CUT_FUA: how long after the announcement */
	uint32_t boot_timeout_ms;	/* power on -> HELLO */
	int boot_timeout_given;		/* boot_timeout_ms was in the file (not the default) */
	uint32_t boot_retries;		/* power cycles before BOOT_FAIL */
	uint32_t verify_timeout_ms;	/* VERIFY -> scan_end */
	uint32_t work_timeout_ms;	/* WORK -> the cut, at most */
	uint32_t off_ms;		/* power-off time before the next power-on */
	/* verification: the cut cycle's slots always; cold data by sample */
	uint32_t full_every;		/* verify.full_every: a whole-region scan every K cycles (1: always) */
	uint32_t cold_sample;		/* verify.cold_sample: cold slots checked in other cycles */
	/* policy: is an unacknowledged finding of this class a violation, per mode? */
	uint8_t torn_violation[PC_MODE_MAX];
	uint8_t torn_sector_violation[PC_MODE_MAX];
	uint8_t unclassified_violation[PC_MODE_MAX];	/* a record whose damage could not be classified */
	/* the link: TCP (the agent connects to "listen"), or the board's serial console */
	int link_serial;
	int console_capture;		/* a tcp link with link.console: the console is captured, not spoken */
	char serial_device[PATH_MAX];	/* link.device (serial), link.console (tcp) */
	uint32_t serial_baud;		/* link.baud */
	int audit_require;		/* audit "require": requests not seen, or not the mode's, are INFRA_ERROR */
	char boot_patterns[8][64];	/* link.boot_patterns: console lines that time the boot */
	unsigned nboot_patterns;
	/* stop rules (docs/config.md "stop") */
	uint32_t stop_boot_fails;	/* stop.boot_fails: BOOT_FAILs in a row that name the device dead, 0 never */
	int stop_on_fail;		/* stop.on_fail "stop": a screening run, the board stops at its first FAIL */
};

/* "random", "acks", "flush", "fua", "mix". */
const char *config_cut_name(enum cut_plan p);
/* How many cache flushes (CUT_FLUSH) or FUA writes (CUT_FUA) a cycle of mode
 * issues with records and flush_every: what the agent announces. 0: none. */
uint32_t config_cut_ops(enum cut_plan p, int mode, uint32_t records, uint32_t flush_every);
/* The plan of a board's cycle (1, 2, ...) and its range ([lo, hi]: the
 * window in ms, the acks or the nth): the board's plan, or under CUT_MIX the
 * cycle's turn among the plans its mode can take (flush, fua, random). */
enum cut_plan config_cycle_cut(const struct board_cfg *b, uint32_t cycle, uint32_t *lo, uint32_t *hi);

#endif

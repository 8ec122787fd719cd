/*
 * limits.h - the results contract's limits, which the configuration enforces
 * when it is read (harness/campaign/config.c) and the engine, the report and
 * status take as given when they read a results folder back: how many
 * boards and cycles a campaign may have, how large a region a board may
 * claim, and the INFRA_ERROR share past which a device is INCOMPLETE. Here,
 * in the results room, so that the rooms which read results need not lean
 * on the campaign's configuration for them (docs/config.md has the keys).
 */
#ifndef PC_HARNESS_RESULTS_LIMITS_H
#define PC_HARNESS_RESULTS_LIMITS_H

#define CFG_MAX_BOARDS		256u
#define CFG_MAX_CYCLES		10000000u	/* also what --cycles may ask for */
/* device.max_region_bytes: the largest region a board's HELLO may claim. The
 * verdict engine holds per slot about 70 bytes (docs/architecture.md), so
 * this is the board's memory ceiling on the host too. */
#define CFG_DEFAULT_MAX_REGION	(4ull << 30)
#define CFG_MAX_REGION_LIMIT	(64ull << 30)
#define CFG_MIN_REGION_LIMIT	(16ull << 10)
/* incomplete_infra_share: a device with a larger share of INFRA_ERROR cycles
 * is INCOMPLETE in the report (and `run` exits 3), never PASS */
#define CFG_DEFAULT_INCOMPLETE_INFRA_SHARE	0.10

#endif

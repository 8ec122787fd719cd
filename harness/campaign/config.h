/*
 * config.h - campaign configuration (JSON), parsed and validated up front.
 *
 * Every error names the file, the key path (boards[1].cut.window_ms) and what
 * is expected, so `powercut check-config` can print it as it is. See
 * docs/config.md for every key and its default.
 *
 * The files, each with its functions' header (private to config*.c; the
 * functions here are public):
 *   config.c        the document: campaign keys, "defaults" merged into each
 *                   board, loading and parsing
 *   config_board.c  one board's sections: relay, device, modes, cut, link,
 *                   verify, policy (config_board.h), into the board's
 *                   configuration, struct board_cfg, and its cut plan's
 *                   queries (config_board_cfg.h)
 *   config_read.c   reading one value: types, bounds, key typos, paths in
 *                   errors; the document being read, struct cfg_ctx
 *                   (config_read.h)
 *   config_check.c  checks against what a board says (HELLO) and real-board warnings
 *   config_resume.c what a resumed campaign may change
 * The campaign keys' bounds and defaults, and what a name may be, are
 * config_limits.h's (status reads them without struct board_cfg).
 */
#ifndef PC_HARNESS_CONFIG_H
#define PC_HARNESS_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/record.h"
#include "harness/campaign/config_board_cfg.h"
#include "harness/campaign/config_limits.h"
#include "harness/results/limits.h"

struct campaign_cfg {
	char name[64];			/* "campaign": [A-Za-z0-9_.-]+ */
	char path[PATH_MAX];		/* the file it came from */
	uint32_t cycles;
	uint64_t seed;
	char listen[128];		/* "host:port"; port 0 picks a free one */
	char key_file[PATH_MAX];	/* key_file: the agents' key ("": <results>/agent.key) */
	double incomplete_infra_share;	/* 0..1: more INFRA_ERROR than this is INCOMPLETE */
	/* target: {rate, confidence}: a board stops once each of its modes shows
	 * its violation rate below rate at confidence (0: no target) */
	double target_rate, target_confidence;
	uint64_t min_free;		/* results_min_free: bytes the results filesystem keeps free */
	struct board_cfg *boards;
	unsigned nboards;
	json_object *root;		/* the whole document, as resolved (defaults filled in) */
};

/*
 * Load and validate. Returns 0, or -errno/-EINVAL with err holding
 * "FILE: key.path: what is wrong" (or "FILE:LINE:COL: JSON syntax ..." for
 * syntax errors). The caller frees with config_free().
 */
int config_load(const char *path, struct campaign_cfg *c, char *err, size_t errlen);
/* Same, from a string already in memory (name is used in messages). */
int config_parse(const char *text, const char *name, struct campaign_cfg *c, char *err, size_t errlen);
/*
 * Values that suit only the sim, on a real board (a gpiod, hidrelay, lcus
 * or pdudaemon relay, or a posix device): a loopback or port-0 listen
 * address its agent must reach over TCP, an off_ms shorter than
 * CFG_REAL_OFF_MS, the default boot_timeout_ms. One warning per line into
 * buf ("FILE: KEY: what is wrong; what to choose"), never an error: the
 * campaign runs as configured. Returns how many.
 */
#define CFG_REAL_OFF_MS		500
unsigned config_warnings(const struct campaign_cfg *c, char *buf, size_t len);
/* A target given as text, "RATE" or "RATE,CONFIDENCE" (--target): 0, or -EINVAL
 * with err saying what is wrong. */
int config_target_parse(const char *s, double *rate, double *confidence, char *err, size_t errlen);
/* Set the campaign's target (--target over the file's "target"), in c and
 * in its resolved document (campaign.json records it). */
void config_set_target(struct campaign_cfg *c, double rate, double confidence);
/* Accepts a zeroed or freed config. */
void config_free(struct campaign_cfg *c);

/* A setting a resumed campaign changes: its key path ("boards[0].off_ms"),
 * its board (NULL for a campaign key), the value on record (NULL: not set)
 * and this run's. */
typedef void (*config_change_fn)(const char *path, const char *board, json_object *from, json_object *to,
				 void *arg);
/*
 * May a campaign whose resolved configuration on record is old resume with
 * cur (both as config_parse resolves them; file names cur in messages)?
 * 0 when only what a resume may change differs, each such leaf given to fn
 * (may be NULL) in document order; -EEXIST with err naming the first key of
 * the test's identity that differs, both values and what may change
 * (config_resume.c, docs/config.md#resuming-a-campaign). cycles is never
 * compared.
 */
int config_resume_diff(json_object *old, json_object *cur, const char *file, config_change_fn fn, void *arg,
		       char *err, size_t errlen);
/*
 * Is the device a board's agent opened (its HELLO) the one the board's
 * device section names? Each of device.cid, serial,
 * model, manfid, name, vendor, fwrev given must equal what the HELLO's
 * device says (case aside); a posix device.path must be what the agent was
 * told (--device), the node it opened or its region's path
 * (/dev/disk/by-partlabel/x and PARTLABEL=x are the same). 1 with why set on
 * a mismatch, else 0.
 */
int config_device_check(const struct board_cfg *b, json_object *hello, char *why, size_t len);

#endif

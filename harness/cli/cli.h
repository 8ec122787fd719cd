/*
 * cli.h - what the `powercut` commands in harness/cli/ share.
 */
#ifndef PC_CLI_H
#define PC_CLI_H

struct campaign_cfg;

/* Load and check a campaign configuration; 0, or -errno with the error said. */
int cli_load(const char *path, struct campaign_cfg *cfg);

/* `powercut crash-states RESULTS_DIR ...` (crash_cmd.c). */
int cmd_crash_states(int argc, char **argv);

/* `powercut relay CONFIG BOARD on|off|cycle|get|release` (relay_cmd.c). */
int cmd_relay(int argc, char **argv);

#endif

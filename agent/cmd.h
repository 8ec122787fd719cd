/*
 * cmd.h - the agent's commands and what they share (private to agent/main.c
 * and agent/cmd_*.c): main.c parses the options and runs prepare, info and
 * scan; cmd_run.c is `run` (the session with the host), cmd_write.c `write`.
 */
#ifndef PC_AGENT_CMD_H
#define PC_AGENT_CMD_H

#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "agent/region.h"
#include "agent/writer.h"

struct opts {
	struct region_opts ro;
	struct sim_opts *sims;	/* --sim-*: the sim backend's options (ro.sim), or NULL */
	const char *connect;
	const char *console;
	const char *sysrq;	/* --sysrq PATH: crash requests allowed, written there */
	const char *key;	/* --key FILE: the campaign's secret (auth.h) */
	int fresh_boot_id;	/* --fresh-boot-id: this process start is the boot */
	uint64_t baud;
	const char *board;
	uint64_t record_size;
	uint64_t seed;
	uint64_t size;		/* sim media size for prepare */
	uint64_t boot_delay_ms;
	uint64_t connect_timeout_ms;
	int pattern;
	int yes;
	int verbose;
	const char *mode;
	uint64_t records;
	uint64_t qd;
	uint64_t flush_every;
};

/* The agent's --help (cmd_usage.c): COMMAND's usage and options, or the
 * commands' when cmd is NULL or no command. */
void agent_usage(FILE *f, const char *cmd);
/* 1 when cmd is one of the agent's commands */
int agent_cmd_known(const char *cmd);

/* powercut-agent run: 0, 1 failure, 2 usage error. */
int cmd_run(struct opts *o);
/* powercut-agent write: 0, 1 failure, 2 usage error. */
int cmd_write(struct opts *o);

/* Who is speaking and about what device (HELLO, info): agent, boot, kernel,
 * backend, device identity, queue, region and how each mode is written. */
json_object *agent_identity(struct region *r, const struct writer_io *io);

#endif

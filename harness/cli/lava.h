/*
 * lava.h - `powercut lava`: a campaign as a LAVA job (docs/lava.md).
 *
 * In a LAVA docker test shell the device's power commands and console come
 * as environment variables (LAVA_POWER_ON_COMMAND, LAVA_POWER_OFF_COMMAND,
 * LAVA_HARD_RESET_COMMAND, LAVA_CONNECTION_COMMAND[_NAME]). The adapter
 * turns them into the board's relay and console, runs or resumes the
 * campaign into a results folder, and turns the per-device report into LAVA
 * test cases: a FAIL is a failed case in a Complete job; what is not the
 * device's fault is lava-test-raise, naming the board and the cause.
 */
#ifndef PC_LAVA_H
#define PC_LAVA_H

#include <stddef.h>

int cmd_lava(int argc, char **argv);

/* What a LAVA power command is, when it is a PDUDaemon request. */
struct lava_pdu {
	char url[256];		/* http://HOST:PORT or tcp://HOST:PORT */
	char hostname[128];	/* the PDU's name in pdudaemon's configuration */
	char port[64];		/* the outlet */
	char command[16];	/* on, off, reboot */
};

#define LAVA_CMD_MAX	4096	/* a power or connection command, bytes */
#define LAVA_ARGS_MAX	64	/* words in one */

/*
 * Split a command as /bin/sh would for plain words, single and double quotes
 * and backslashes (no expansions: a `$`, a backquote, a pipe, `;`, `&&`,
 * redirections make it "not simple": -EINVAL). Fills argv with pointers into buf
 * (a copy of cmd), NULL-terminated. Returns the word count, or -EINVAL.
 */
int lava_split(const char *cmd, char *buf, size_t len, char **argv, int max);

/*
 * A PDUDaemon request, in either form LAVA device dictionaries use:
 *   pduclient --daemon HOST [--port-daemon? no] --hostname PDU --port N --command on
 *   curl [opts] 'http://HOST:PORT/power/control/on?hostname=PDU&port=N'
 * (wget too). 0 and *out filled, or -EINVAL: not one (then it is run as a command).
 */
int lava_parse_pdu(const char *cmd, struct lava_pdu *out);

/*
 * The console: `telnet HOST PORT` -> telnet://HOST:PORT, `nc HOST PORT` or
 * `netcat HOST PORT` -> tcp://HOST:PORT. 0, or -EINVAL with why in err.
 */
int lava_parse_console(const char *cmd, char *url, size_t len, char *err, size_t errlen);

/* A LAVA test case id from a name: [A-Za-z0-9_.-] kept, the rest '_'. */
void lava_case_id(const char *in, char *out, size_t len);

#endif

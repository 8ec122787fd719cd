/*
 * test_setup.c - a boot without a hello, the pure parts: the agent's
 * setup_error message (built, parsed, refused), and what the host reads in a
 * board's console log (harness/campaign/campaign_setup.c): the last setup_error for
 * the board, and the first sign of a booted kernel, among noise.
 */
#include "tests/unit/suites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/proto.h"
#include "harness/campaign/campaign_setup.h"

static int parses(const char *line, enum pc_msg_type want)
{
	struct pc_msg m;
	char err[256];
	int ok;

	if (pc_msg_parse(line, strlen(line), &m, err, sizeof(err)))
		return 0;
	ok = m.type == want;
	pc_msg_clear(&m);
	return ok;
}

static void test_message(void)
{
	char line[PC_PROTO_MAX_LINE + 2], big[PC_PROTO_MAX_REASON + 40];
	json_object *m = pc_msg_setup_error("b-1", "key_missing", "key file %s: %s", "/k", "No such file");
	int n;

	n = pc_msg_line(m, line, sizeof(line));
	json_object_put(m);
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_STRING_EQUAL(line, "{\"type\":\"setup_error\",\"v\":1,\"board\":\"b-1\",\"cause\":\"key_missing\","
			       "\"reason\":\"key file /k: No such file\"}\n");
	CU_ASSERT(parses(line, PC_MSG_SETUP_ERROR));
	/* no board told, a bad board name, a bad cause, a reason that is not
	 * ASCII or too long: still a line the host's parser takes */
	m = pc_msg_setup_error(NULL, "Not A Cause!", "caf\xc3\xa9\n%s", "x");
	n = pc_msg_line(m, line, sizeof(line));
	json_object_put(m);
	CU_ASSERT_STRING_EQUAL(line, "{\"type\":\"setup_error\",\"v\":1,\"cause\":\"other\",\"reason\":\"caf???x\"}\n");
	CU_ASSERT(parses(line, PC_MSG_SETUP_ERROR));
	memset(big, 'r', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	m = pc_msg_setup_error("bad name", "connect", "%s", big);
	n = pc_msg_line(m, line, sizeof(line));
	json_object_put(m);
	CU_ASSERT(n > 0 && !strstr(line, "\"board\""));
	CU_ASSERT(parses(line, PC_MSG_SETUP_ERROR));
	/* refused */
	CU_ASSERT(!parses("{\"type\":\"setup_error\",\"v\":1,\"reason\":\"x\"}", PC_MSG_SETUP_ERROR));
	CU_ASSERT(!parses("{\"type\":\"setup_error\",\"v\":1,\"cause\":\"x\"}", PC_MSG_SETUP_ERROR));
	CU_ASSERT(!parses("{\"type\":\"setup_error\",\"v\":1,\"cause\":\"Key\",\"reason\":\"x\"}", PC_MSG_SETUP_ERROR));
	CU_ASSERT(!parses("{\"type\":\"setup_error\",\"v\":1,\"cause\":\"\",\"reason\":\"x\"}", PC_MSG_SETUP_ERROR));
	CU_ASSERT(!parses("{\"type\":\"setup_error\",\"v\":1,\"cause\":\"k\",\"reason\":\"\"}", PC_MSG_SETUP_ERROR));
	CU_ASSERT(!parses("{\"type\":\"setup_error\",\"v\":1,\"cause\":\"k\",\"reason\":7}", PC_MSG_SETUP_ERROR));
	CU_ASSERT(!parses("{\"type\":\"setup_error\",\"v\":1,\"board\":\"a b\",\"cause\":\"k\",\"reason\":\"x\"}",
			  PC_MSG_SETUP_ERROR));
	CU_ASSERT(!parses("{\"type\":\"setup_error\",\"v\":1,\"cause\":\"abcdefghijabcdefghijabcdefghijabc\","
			  "\"reason\":\"x\"}", PC_MSG_SETUP_ERROR));
	snprintf(line, sizeof(line), "{\"type\":\"setup_error\",\"v\":1,\"cause\":\"k\",\"reason\":\"%s\"}", big);
	CU_ASSERT(!parses(line, PC_MSG_SETUP_ERROR));
}

static void inspect(const char *text, const char *board, struct camp_console_facts *f)
{
	camp_console_inspect(text, strlen(text), board, f);
}

static void test_console(void)
{
	struct camp_console_facts f;
	char *long_line;

	inspect("", "b1", &f);
	CU_ASSERT(!f.kernel[0] && !f.cause[0]);
	/* kernel noise: the first sign, from the sign on, trimmed */
	inspect("U-Boot 2023.01\r\n[    0.000000] Linux version 6.1.0 (gcc) #1 SMP  \r\n"
		"[    2.1] Run /sbin/init as init process\r\n", "b1", &f);
	CU_ASSERT_STRING_EQUAL(f.kernel, "Linux version 6.1.0 (gcc) #1 SMP");
	CU_ASSERT(!f.cause[0]);
	inspect("U-Boot 2023.01\r\nStarting kernel ...\r\n", "b1", &f);
	CU_ASSERT_STRING_EQUAL(f.kernel, "Starting kernel ...");
	inspect("U-Boot 2023.01\r\nHit any key to stop autoboot\r\n", "b1", &f);
	CU_ASSERT(!f.kernel[0]);
	/* powercut's own line quoting a boot (the host's reason, echoed by an
	 * agent killed late into the next cycle's console) is no boot */
	inspect("powercut-agent: error: the host ended this session: the relay did not cut power: though an "
		"earlier power-on printed \"Linux version 6.1.0-sim (powercut test)\" before its agent's hello\r\n",
		"b1", &f);
	CU_ASSERT(!f.kernel[0]);
	/* the agent's lines: the last setup_error for this board (or one that
	 * names none) counts, after kernel noise on the same line too */
	inspect("powercut-agent: error: cannot reach the host\n"
		"@@PC {\"type\":\"setup_error\",\"v\":1,\"board\":\"b1\",\"cause\":\"connect\",\"reason\":\"first\"}\n"
		"[  3.0] usb 1-1: new device @@PC {\"type\":\"setup_error\",\"v\":1,\"board\":\"b1\",\"cause\":\"connect\","
		"\"reason\":\"second\"}\r\n"
		"@@PC {\"type\":\"setup_error\",\"v\":1,\"board\":\"b2\",\"cause\":\"usage\",\"reason\":\"not mine\"}\n"
		"@@PC {\"type\":\"hello\",\"v\":1}\n"
		"@@PC {\"type\":\"setup_error\",\"v\":1,\"cause\":\"Bad\",\"reason\":\"refused\"}\n"
		"@@PC {\"type\":\"setup_error\",\"v\":1,\"board\":\"b1\",\"cause\":\"conn", "b1", &f);
	CU_ASSERT_STRING_EQUAL(f.cause, "connect");
	CU_ASSERT_STRING_EQUAL(f.reason, "second");
	inspect("@@PC {\"type\":\"setup_error\",\"v\":1,\"cause\":\"usage\",\"reason\":\"no --board\\u0007\"}\n", "b9", &f);
	CU_ASSERT_STRING_EQUAL(f.cause, "usage");
	CU_ASSERT_STRING_EQUAL(f.reason, "no --board?");
	/* the device failing: MMC and block errors, quoted whole; not an SDIO
	 * card's probe, not powercut's own lines */
	inspect("[    1.2] mmc1: error -110 whilst initialising SDIO card\r\n"
		"powercut-agent: error: /dev/mmcblk0p5: key file missing\n"
		"[    1.5] mmc0: new HS200 MMC card at address 0001\n"
		"[    2.0] mmc0: error -110 whilst initialising MMC card  \r\n"
		"[    2.1] blk_update_request: I/O error, dev mmcblk0, sector 0\n", "b1", &f);
	CU_ASSERT_STRING_EQUAL(f.device, "[    2.0] mmc0: error -110 whilst initialising MMC card");
	/* its last three lines, trimmed, the agent's marked ones left out */
	CU_ASSERT_STRING_EQUAL(f.tail, "[    1.5] mmc0: new HS200 MMC card at address 0001 / [    2.0] mmc0: error -110 "
			       "whilst initialising MMC card / [    2.1] blk_update_request: I/O error, dev mmcblk0, sector 0");
	inspect("[    0.0] Linux version 6.1\n\n   \r\nS95powercut-agent: /usr/bin/powercut-agent is missing or not "
		"executable\r\n@@PC {\"type\":\"hello\",\"v\":1}\n", "b1", &f);
	CU_ASSERT(!f.device[0]);
	CU_ASSERT_STRING_EQUAL(f.tail, "[    0.0] Linux version 6.1 / S95powercut-agent: /usr/bin/powercut-agent is "
			       "missing or not executable");
	inspect("", "b1", &f);
	CU_ASSERT(!f.tail[0] && !f.device[0]);
	/* a line longer than any of ours is noise, whatever it holds */
	long_line = calloc(1, PC_PROTO_MAX_LINE + 600);
	CU_ASSERT_FATAL(long_line != NULL);
	strcpy(long_line, "@@PC {\"type\":\"setup_error\",\"v\":1,\"cause\":\"usage\",\"reason\":\"x\"} ");
	memset(long_line + strlen(long_line), 'x', PC_PROTO_MAX_LINE + 400);
	inspect(long_line, "b1", &f);
	CU_ASSERT(!f.cause[0]);
	free(long_line);
}

int suite_setup(void)
{
	CU_pSuite s = CU_add_suite("setup", NULL, NULL);

	if (!s || !CU_add_test(s, "setup_error: built, parsed, refused", test_message) ||
	    !CU_add_test(s, "a console log: the agent's reason, a booted kernel, the device failing, its last lines", test_console))
		return -1;
	return 0;
}

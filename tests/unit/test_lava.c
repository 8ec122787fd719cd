/*
 * test_lava.c - reading LAVA's power and connection commands
 * (harness/cli/lava.h): PDUDaemon requests in both forms device
 * dictionaries use, consoles, and hostile commands.
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <string.h>

#include "harness/cli/lava.h"

static void test_split(void)
{
	char buf[256], *av[8];

	CU_ASSERT_EQUAL(lava_split("a 'b c' \"d\\\"e\" f\\ g", buf, sizeof(buf), av, 8), 4);
	CU_ASSERT_STRING_EQUAL(av[1], "b c");
	CU_ASSERT_STRING_EQUAL(av[2], "d\"e");
	CU_ASSERT_STRING_EQUAL(av[3], "f g");
	CU_ASSERT_PTR_NULL(av[4]);
	/* not a simple command: run by the shell as it is, never read */
	CU_ASSERT_EQUAL(lava_split("a && b", buf, sizeof(buf), av, 8), -EINVAL);
	CU_ASSERT_EQUAL(lava_split("a $(b)", buf, sizeof(buf), av, 8), -EINVAL);
	CU_ASSERT_EQUAL(lava_split("a \"$HOME\"", buf, sizeof(buf), av, 8), -EINVAL);
	CU_ASSERT_EQUAL(lava_split("a 'open", buf, sizeof(buf), av, 8), -EINVAL);
	CU_ASSERT_EQUAL(lava_split("a b c d e f g h i", buf, sizeof(buf), av, 8), -EINVAL);	/* too many words */
	CU_ASSERT_EQUAL(lava_split("a; b", buf, sizeof(buf), av, 8), -EINVAL);
}

static void test_pdu(void)
{
	struct lava_pdu p;

	CU_ASSERT_EQUAL(lava_parse_pdu("pduclient --daemon lab-pdu --hostname apc1 --port 3 --command off", &p), 0);
	CU_ASSERT_STRING_EQUAL(p.url, "tcp://lab-pdu:16421");
	CU_ASSERT_STRING_EQUAL(p.hostname, "apc1");
	CU_ASSERT_STRING_EQUAL(p.port, "3");
	CU_ASSERT_STRING_EQUAL(p.command, "off");
	CU_ASSERT_EQUAL(lava_parse_pdu("/usr/bin/pduclient --daemon localhost:1642 --delay 5 --command on --port 1 --hostname x", &p), 0);
	CU_ASSERT_STRING_EQUAL(p.url, "tcp://localhost:1642");
	CU_ASSERT_EQUAL(lava_parse_pdu("curl -s 'http://pdu:16421/power/control/on?hostname=apc1&port=7'", &p), 0);
	CU_ASSERT_STRING_EQUAL(p.url, "http://pdu:16421");
	CU_ASSERT_STRING_EQUAL(p.command, "on");
	CU_ASSERT_STRING_EQUAL(p.port, "7");
	CU_ASSERT_EQUAL(lava_parse_pdu("wget -q -O- http://pdu/power/control/reboot?port=a&hostname=b", &p), -EINVAL);	/* & unquoted */
	CU_ASSERT_EQUAL(lava_parse_pdu("wget -q 'http://pdu/power/control/reboot?port=a&hostname=b'", &p), 0);
	CU_ASSERT_STRING_EQUAL(p.command, "reboot");
	/* not ours: run as commands */
	CU_ASSERT_EQUAL(lava_parse_pdu("pduclient --daemon d --hostname h --port 1", &p), -EINVAL);	/* no command */
	CU_ASSERT_EQUAL(lava_parse_pdu("pduclient --daemon d --hostname h --port 1 --command on --bogus", &p), -EINVAL);
	CU_ASSERT_EQUAL(lava_parse_pdu("curl 'http://pdu/other/on?hostname=h&port=1'", &p), -EINVAL);
	CU_ASSERT_EQUAL(lava_parse_pdu("curl 'http://pdu/power/control/on?hostname=h'", &p), -EINVAL);
	CU_ASSERT_EQUAL(lava_parse_pdu("curl -o out 'http://pdu/power/control/on?hostname=h&port=1'", &p), -EINVAL);
	CU_ASSERT_EQUAL(lava_parse_pdu("curl 'http://pdu/power/control/on?hostname=h\"x&port=1'", &p), -EINVAL);
	CU_ASSERT_EQUAL(lava_parse_pdu("uhubctl -a off -p 2", &p), -EINVAL);
	CU_ASSERT_EQUAL(lava_parse_pdu("", &p), -EINVAL);
}

static void test_console(void)
{
	char url[64], err[256];

	CU_ASSERT_EQUAL(lava_parse_console("telnet lab 7001", url, sizeof(url), err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(url, "telnet://lab:7001");
	CU_ASSERT_EQUAL(lava_parse_console("/usr/bin/nc 10.0.0.2 2000", url, sizeof(url), err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(url, "tcp://10.0.0.2:2000");
	CU_ASSERT_EQUAL(lava_parse_console("telnet ::1 23", url, sizeof(url), err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(url, "telnet://[::1]:23");
	CU_ASSERT_EQUAL(lava_parse_console("telnet lab 70001", url, sizeof(url), err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "port"));
	CU_ASSERT_EQUAL(lava_parse_console("ssh lab", url, sizeof(url), err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "telnet HOST PORT"));
	CU_ASSERT_EQUAL(lava_parse_console("telnet a/b 23", url, sizeof(url), err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(lava_parse_console("telnet lab 23; rm -rf /", url, sizeof(url), err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(lava_parse_console("telnet a-very-long-host-name-that-does-not-fit-in-the-url-buffer-at-all 23",
					   url, sizeof(url), err, sizeof(err)), -EINVAL);
}

static void test_case_ids(void)
{
	char id[32];

	lava_case_id("powercut-b1-fua+flush", id, sizeof(id));
	CU_ASSERT_STRING_EQUAL(id, "powercut-b1-fua_flush");
	lava_case_id("a b/c\xc3\xa9", id, sizeof(id));
	CU_ASSERT_STRING_EQUAL(id, "a_b_c__");
	lava_case_id("0123456789012345678901234567890123456789", id, 8);
	CU_ASSERT_STRING_EQUAL(id, "0123456");
}

int suite_lava(void)
{
	CU_pSuite s = CU_add_suite("lava", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "commands split as the shell would, or refused", test_split) ||
	    !CU_add_test(s, "pdudaemon requests (pduclient, curl, wget)", test_pdu) ||
	    !CU_add_test(s, "consoles (telnet, nc)", test_console) ||
	    !CU_add_test(s, "test case ids", test_case_ids))
		return -1;
	return 0;
}

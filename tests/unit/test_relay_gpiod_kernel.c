/*
 * test_relay_gpiod_kernel.c - the gpiod relay against what the real kernel
 * did on the relay-host VM (t-vm-gpiohost.sh, docs/relays.md#the-gpio-relay-
 * on-a-real-kernel), played by the gpiosim shim's keep= and late= fields:
 *   late  QEMU's AST2600 GPIO model drops the latch gpio-aspeed writes before
 *         it makes the pin an output: a request for an output driven ON left
 *         the pin low, and `powercut relay on` said done. The driver now reads
 *         the line back after the request and sets it once more.
 *   keep  gpio-aspeed leaves a released line an output, still driven: a
 *         holder SIGKILLed while ON leaves the board powered, a later `get`
 *         reads on, and a new holder opened ON takes it without a low glitch.
 * Registered into the relay_hw suite (its cases run under the shims).
 */
#include "tests/unit/suites.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "relay/relay.h"

int relay_gpiod_kernel_cases(CU_pSuite s);

#ifdef PC_GPIOD_API

static char st_path[PATH_MAX];

static void st_write(const char *text)
{
	FILE *f = fopen(st_path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

/* An integer field of gpiochip1's line 3, or -1. */
static int st_int(const char *key)
{
	char buf[8192], k[32];
	const char *l, *v;
	FILE *f = fopen(st_path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	l = strstr(buf, "line gpiochip1 3 ");
	snprintf(k, sizeof(k), " %s=", key);
	v = l ? strstr(l, k) : NULL;
	if (!v || memchr(l, '\n', (size_t)(v - l)))
		return -1;
	v += strlen(k);
	if (!strncmp(v, "out", 3))
		return 1;
	if (!strncmp(v, "in", 2))
		return 0;
	return atoi(v);
}

static int open_in(struct relay *r, int state, char *err, size_t len)
{
	struct relay_ctx ctx = { .board = "b1", .open_state = state };
	json_object *cfg = json_tokener_parse("{\"chip\":\"gpiochip1\",\"line\":3}");
	int rc = relay_open(r, "gpiod", cfg, &ctx, err, len);

	json_object_put(cfg);
	return rc;
}

static void test_gpiod_kernel_late_keep(void)
{
	char err[512];
	struct relay r;

	snprintf(st_path, sizeof(st_path), "%s/gpiosim.state", pc_test_tmpdir("relay_gpiod_kernel"));
	st_write("chip gpiochip0 lines=4 label=pinctrl-sim\n"
		 "chip gpiochip1 lines=8 label=1e780000.gpio\n"
		 "line gpiochip1 3 value=0 pull=0 dir=in keep=1 late=1\n");
	setenv("GPIOSIM_STATE", st_path, 1);
	/* an input requested as an output driven ON: high once open returns */
	CU_ASSERT_EQUAL_FATAL(open_in(&r, RELAY_OPEN_ON, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(st_int("dir"), 1);
	CU_ASSERT_EQUAL(st_int("value"), 1);
	CU_ASSERT_EQUAL(relay_get(&r), 1);
	relay_close(&r);
	/* released (as by a SIGKILL): still an output, still high */
	CU_ASSERT_EQUAL(st_int("owner"), 0);
	CU_ASSERT_EQUAL(st_int("dir"), 1);
	CU_ASSERT_EQUAL(st_int("value"), 1);
	/* observed: reads on, and nothing moves */
	CU_ASSERT_EQUAL_FATAL(open_in(&r, RELAY_OPEN_OBSERVE, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_get(&r), 1);
	relay_close(&r);
	CU_ASSERT_EQUAL(st_int("value"), 1);
	/* a new holder opened ON (a resume) keeps it high */
	CU_ASSERT_EQUAL_FATAL(open_in(&r, RELAY_OPEN_ON, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(st_int("value"), 1);
	CU_ASSERT_EQUAL(relay_off(&r), 0);
	CU_ASSERT_EQUAL(st_int("value"), 0);
	relay_close(&r);
	CU_ASSERT_EQUAL(st_int("value"), 0);
	/* an input left high, requested OFF: low once open returns */
	st_write("chip gpiochip0 lines=4 label=pinctrl-sim\n"
		 "chip gpiochip1 lines=8 label=1e780000.gpio\n"
		 "line gpiochip1 3 value=1 pull=1 dir=in keep=1 late=1\n");
	CU_ASSERT_EQUAL_FATAL(open_in(&r, RELAY_OPEN_OFF, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(st_int("value"), 0);
	CU_ASSERT_EQUAL(relay_get(&r), 0);
	relay_close(&r);
}

int relay_gpiod_kernel_cases(CU_pSuite s)
{
	return CU_add_test(s, "gpiod: a latch the chip dropped is set again; a released line stays driven",
			   test_gpiod_kernel_late_keep) ? 0 : -1;
}

#else

int relay_gpiod_kernel_cases(CU_pSuite s)
{
	return 0;
}

#endif

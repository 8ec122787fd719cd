/*
 * test_relay_hw.c - the hardware relay drivers against real things or
 * faithful simulators:
 *
 *   lcus       a pseudo-terminal pair: the test reads the exact bytes sent
 *              and the termios the driver set
 *   pdudaemon  a tiny HTTP server in a child process that records request lines
 *   sysrq      real shell commands through the command driver it wraps
 *   gpiod      the real libgpiod (1.6, or 2.x in build/gpiod2) under the
 *              gpiosim LD_PRELOAD shim (tests/gpiosim/gpiosim.c), which plays
 *              the GPIO character device and keeps the "physical" line levels
 *              in a state file this test reads
 *   hidrelay   the hidrawsim shim (tests/gpiosim/hidrawsim.c), which plays a
 *              dcttech board behind /dev/hidrawN and logs every ioctl's bytes
 *
 * The shims must be preloaded before the process starts, so the gpiod and
 * hidrelay cases run in a child: this suite re-executes its own binary
 * ("<exe> relay_hw") with LD_PRELOAD set to the shims found next to the
 * executable (or in $PC_GPIOSIM_DIR) - behind the sanitizer runtime when
 * there is one - and asserts that child passed. Run under the shims
 * already, the suite registers those cases itself.
 */
#include "tests/unit/suites.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "common/util.h"
#include "relay/relay.h"
#include "relay/relay_lock.h"
#include "vboard/vboard.h"

#define HAS(hay, needle) (strstr((hay), (needle)) != NULL)
int relay_gpiod_kernel_cases(CU_pSuite s);

static void strf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void strf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int rc;

	if (fd < 0)
		return -errno;
	rc = pc_write_all(fd, text, strlen(text));
	close(fd);
	return rc;
}

/* The whole small file into buf ("" if missing). */
static const char *read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	return buf;
}

static json_object *cfg_parse(const char *text)
{
	json_object *o = json_tokener_parse(text);

	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	return o;
}

static int open_relay(struct relay *r, const char *driver, const char *cfgtext, char *err, size_t errlen)
{
	struct relay_ctx ctx = { .board = "b1" };
	json_object *cfg = cfg_parse(cfgtext);
	int rc = relay_open(r, driver, cfg, &ctx, err, errlen);

	json_object_put(cfg);
	return rc;
}

/* ---- config checks, every driver ------------------------------------------ */

static const struct {
	const char *driver, *cfg;
	const char *err;	/* NULL: valid */
} check_cases[] = {
	{ "gpiod", "{\"driver\":\"gpiod\",\"chip\":\"gpiochip0\",\"line\":3}", NULL },
	{ "gpiod", "{\"chip\":\"/dev/gpiochip1\",\"line\":\"RELAY_1\",\"active_low\":true,\"settle_ms\":20}", NULL },
	{ "gpiod", "{\"line\":3}", "chip: missing" },
	{ "gpiod", "{\"chip\":\"gpiochip0\"}", "line: missing" },
	{ "gpiod", "{\"chip\":\"gpiochip0\",\"line\":-1}", "line: expected an integer from 0 to 65535, got -1" },
	{ "gpiod", "{\"chip\":\"gpiochip0\",\"line\":true}", "line: expected an offset (integer) or a line name" },
	{ "gpiod", "{\"chip\":\"gpiochip0\",\"line\":1,\"active_low\":\"yes\"}", "active_low: expected true or false" },
	{ "gpiod", "{\"chip\":\"gpiochip0\",\"line\":1,\"settle_ms\":20000}",
	  "settle_ms: expected an integer from 0 to 10000" },
	{ "gpiod", "{\"chip\":\"gpiochip0\",\"line\":1,\"on_value\":1}",
	  "unknown key 'on_value' (valid: driver, chip, line, active_low, settle_ms)" },
	{ "gpiod", "{\"driver\":\"gpio\",\"chip\":\"gpiochip0\",\"line\":1}", "driver: expected \"gpiod\"" },
	{ "gpiod", "[1]", "expected an object" },
	{ "hidrelay", "{\"device\":\"/dev/hidraw0\",\"channel\":2,\"timeout_ms\":500}", NULL },
	{ "hidrelay", "{\"channel\":1}", "device: missing" },
	{ "hidrelay", "{\"device\":\"/dev/hidraw0\",\"channel\":9}", "channel: expected an integer from 1 to 8, got 9" },
	{ "hidrelay", "{\"device\":\"/dev/hidraw0\",\"timeout_ms\":0}", "timeout_ms: expected an integer from 1 to" },
	{ "hidrelay", "{\"device\":\"/dev/hidraw0\",\"serial\":\"ABCDE\"}",
	  "unknown key 'serial' (valid: driver, device, channel, timeout_ms)" },
	{ "lcus", "{\"device\":\"/dev/ttyUSB0\"}", NULL },
	{ "lcus", "{\"device\":\"/dev/ttyUSB0\",\"channel\":4,\"baud\":115200}", NULL },
	{ "lcus", "{\"device\":\"/dev/ttyUSB0\",\"baud\":9601}", "baud: expected one of 1200," },
	{ "lcus", "{\"device\":\"/dev/ttyUSB0\",\"channel\":0}", "channel: expected an integer from 1 to 8, got 0" },
	{ "lcus", "{\"device\":3}", "device: expected a non-empty string" },
	{ "pdudaemon", "{\"hostname\":\"pdu1\",\"port\":3}", NULL },
	{ "pdudaemon", "{\"url\":\"http://[::1]:8080/pdu\",\"hostname\":\"pdu1\",\"port\":\"A1\"}", NULL },
	{ "pdudaemon", "{\"hostname\":\"pdu1\"}", "port: missing" },
	{ "pdudaemon", "{\"port\":1}", "hostname: missing" },
	{ "pdudaemon", "{\"hostname\":\"p\",\"port\":-2}", "port: expected an integer from 0 to 65535" },
	{ "pdudaemon", "{\"url\":\"https://pdu\",\"hostname\":\"p\",\"port\":1}", "url: expected http://HOST[:PORT]" },
	{ "pdudaemon", "{\"url\":\"http://pdu:99999\",\"hostname\":\"p\",\"port\":1}", "url: bad port" },
	{ "pdudaemon", "{\"url\":\"http://:80\",\"hostname\":\"p\",\"port\":1}", "url: missing or bad host" },
	{ "pdudaemon", "{\"hostname\":\"p\",\"port\":1,\"delay\":5}",
	  "unknown key 'delay' (valid: driver, url, hostname, port, timeout_ms)" },
	{ "sysrq", "{}", NULL },
	{ "sysrq", "{\"on\":\"wakeonlan aa:bb:cc:dd:ee:ff\",\"timeout_ms\":3000}", NULL },
	{ "sysrq", "{\"on\":\"\"}", "on: expected a non-empty string" },
	{ "sysrq", "{\"off\":\"reboot\"}", "unknown key 'off' (valid: driver, on, timeout_ms)" },
};

static void test_check_table(void)
{
	for (size_t i = 0; i < PC_ARRAY_SIZE(check_cases); i++) {
		const struct relay_ops *ops = relay_find(check_cases[i].driver);
		json_object *cfg = json_tokener_parse(check_cases[i].cfg);
		char err[256] = "";
		int rc;

		CU_ASSERT_PTR_NOT_NULL_FATAL(ops);
		CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
		rc = ops->check(cfg, err, sizeof(err));
		if (check_cases[i].err) {
			CU_ASSERT_EQUAL(rc, -EINVAL);
			CU_ASSERT(HAS(err, check_cases[i].err));
			if (!HAS(err, check_cases[i].err))
				fprintf(stderr, "\n  case %zu: wanted '%s', got '%s'\n", i, check_cases[i].err, err);
		} else {
			CU_ASSERT_EQUAL(rc, 0);
			if (rc)
				fprintf(stderr, "\n  case %zu: unexpected error '%s'\n", i, err);
		}
		json_object_put(cfg);
	}
}

static void test_registry(void)
{
	static const char *const names[] = { "gpiod", "hidrelay", "lcus", "pdudaemon", "sysrq" };

	for (size_t i = 0; i < PC_ARRAY_SIZE(names); i++) {
		CU_ASSERT_PTR_NOT_NULL(relay_find(names[i]));
		CU_ASSERT(HAS(relay_names(), names[i]));
	}
	CU_ASSERT_STRING_EQUAL(relay_names(), "sim command gpiod hidrelay lcus pdudaemon sysrq qemu");
}

/* ---- lcus: a pseudo-terminal stands in for the CH340 ---------------------- */

/* Read exactly len bytes from fd within ms; the count read. */
static size_t read_exact(int fd, unsigned char *buf, size_t len, int ms)
{
	uint64_t deadline = pc_now_ms() + (uint64_t)ms;
	size_t got = 0;

	while (got < len && pc_now_ms() < deadline) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(fd, buf + got, len - got);
		if (n > 0)
			got += (size_t)n;
	}
	return got;
}

static int pty_open(char *slave, size_t len)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY);

	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || !ptsname(m)) {
		if (m >= 0)
			close(m);
		return -1;
	}
	pc_strlcpy(slave, ptsname(m), len);
	fcntl(m, F_SETFL, O_NONBLOCK);
	return m;
}

static void test_lcus_frames(void)
{
	static const struct {
		int channel, on;
		unsigned char frame[4];
	} cases[] = {
		{ 1, 1, { 0xA0, 0x01, 0x01, 0xA2 } },
		{ 1, 0, { 0xA0, 0x01, 0x00, 0xA1 } },
		{ 2, 1, { 0xA0, 0x02, 0x01, 0xA3 } },
		{ 2, 0, { 0xA0, 0x02, 0x00, 0xA2 } },
		{ 4, 1, { 0xA0, 0x04, 0x01, 0xA5 } },
	};
	char slave[64], cfg[160], err[512];
	unsigned char got[8];
	struct relay r;
	int m = pty_open(slave, sizeof(slave));

	CU_ASSERT_FATAL(m >= 0);
	for (size_t i = 0; i < PC_ARRAY_SIZE(cases); i++) {
		strf(cfg, sizeof(cfg), "{\"device\":\"%s\",\"channel\":%d}", slave, cases[i].channel);
		CU_ASSERT_EQUAL_FATAL(open_relay(&r, "lcus", cfg, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(cases[i].on ? relay_on(&r) : relay_off(&r), 0);
		CU_ASSERT_EQUAL(read_exact(m, got, 4, 10000), 4);
		CU_ASSERT_EQUAL(memcmp(got, cases[i].frame, 4), 0);
		/* and nothing more */
		CU_ASSERT_EQUAL(read_exact(m, got, 1, 50), 0);
		relay_close(&r);
	}
	close(m);
}

static void test_lcus_termios_and_get(void)
{
	char slave[64], cfg[160], err[512];
	struct termios tio;
	struct relay r;
	int m = pty_open(slave, sizeof(slave)), s;

	CU_ASSERT_FATAL(m >= 0);
	strf(cfg, sizeof(cfg), "{\"device\":\"%s\",\"baud\":115200,\"timeout_ms\":500}", slave);
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "lcus", cfg, err, sizeof(err)), 0);
	s = open(slave, O_RDWR | O_NOCTTY);
	CU_ASSERT_FATAL(s >= 0);
	CU_ASSERT_EQUAL(tcgetattr(s, &tio), 0);
	CU_ASSERT_EQUAL(cfgetospeed(&tio), B115200);
	CU_ASSERT_EQUAL(tio.c_cflag & CSIZE, CS8);
	CU_ASSERT_EQUAL(tio.c_cflag & (PARENB | CSTOPB | CRTSCTS), 0);
	CU_ASSERT(tio.c_cflag & CLOCAL);
	CU_ASSERT_EQUAL(tio.c_lflag & (ICANON | ECHO | ISIG), 0);
	CU_ASSERT_EQUAL(tio.c_oflag & OPOST, 0);
	close(s);
	CU_ASSERT_EQUAL(relay_get(&r), -ENOTSUP);
	CU_ASSERT(HAS(r.err, "board b1: relay lcus: LCUS boards do not report"));
	relay_close(&r);
	close(m);
}

static void test_lcus_errors(void)
{
	char err[512];
	struct relay r;

	CU_ASSERT_EQUAL(open_relay(&r, "lcus", "{\"device\":\"/dev/ttyNOPE9\"}", err, sizeof(err)), -ENOENT);
	CU_ASSERT(HAS(err, "board b1: relay lcus: cannot open /dev/ttyNOPE9"));
	CU_ASSERT(HAS(err, "check relay.device"));
	CU_ASSERT_EQUAL(open_relay(&r, "lcus", "{\"device\":\"/dev/null\"}", err, sizeof(err)), -ENOTTY);
	CU_ASSERT(HAS(err, "/dev/null is not a serial port"));
	relay_close(&r);	/* a failed open is closable */
}

/* ---- pdudaemon: a tiny HTTP server in a child ------------------------------ */

struct http_srv {
	pid_t pid;
	int port;
	char log[PATH_MAX];
};

/*
 * Serve until killed: each request line is appended to log, each answer is
 * the response text, or nothing at all (the connection is held) if NULL.
 */
static int http_start(struct http_srv *h, const char *dir, const char *name, const char *response)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strf(h->log, sizeof(h->log), "%s/%s.log", dir, name);
	unlink(h->log);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 8) < 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &alen) < 0)
		return -1;
	h->port = ntohs(a.sin_port);
	h->pid = fork();
	if (h->pid < 0)
		return -1;
	if (h->pid == 0) {
		for (;;) {
			char req[2048];
			size_t have = 0;
			int c = accept(ls, NULL, NULL);

			if (c < 0)
				_exit(1);
			while (have < sizeof(req) - 1 && !memmem(req, have, "\r\n\r\n", 4)) {
				ssize_t n = read(c, req + have, sizeof(req) - 1 - have);

				if (n <= 0)
					break;
				have += (size_t)n;
			}
			req[have] = 0;
			req[strcspn(req, "\r\n")] = 0;
			{
				int lf = open(h->log, O_WRONLY | O_CREAT | O_APPEND, 0644);

				if (lf >= 0) {
					if (write(lf, req, strlen(req)) < 0 || write(lf, "\n", 1) < 0)
						_exit(1);
					close(lf);
				}
			}
			if (!response) {
				pause();	/* hold the connection, answer nothing */
				_exit(0);
			}
			if (write(c, response, strlen(response)) < 0)
				_exit(1);
			close(c);
		}
	}
	close(ls);
	return 0;
}

static void http_stop(struct http_srv *h)
{
	if (h->pid > 0) {
		kill(h->pid, SIGKILL);
		waitpid(h->pid, NULL, 0);
	}
	h->pid = 0;
}

#define HTTP_OK "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 22\r\n\r\nOK - accepted request\n"
#define HTTP_500 "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 38\r\n\r\n" \
		 "Invalid request: unknown pdu 'pdu9'\n"

static void test_pdudaemon_requests(void)
{
	const char *dir = pc_test_tmpdir("relay_hw_pdu");
	struct http_srv h;
	char cfg[300], err[512], log[2048];
	struct relay r;

	CU_ASSERT_EQUAL_FATAL(http_start(&h, dir, "ok", HTTP_OK), 0);
	strf(cfg, sizeof(cfg), "{\"url\":\"http://127.0.0.1:%d\",\"hostname\":\"pdu1\",\"port\":3}", h.port);
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "pdudaemon", cfg, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_on(&r), 0);
	CU_ASSERT_EQUAL(relay_off(&r), 0);
	CU_ASSERT_EQUAL(relay_get(&r), -ENOTSUP);
	CU_ASSERT(HAS(r.err, "board b1: relay pdudaemon: pdudaemon has no state query"));
	relay_close(&r);
	/* a path prefix (a reverse proxy), a string port, names that need %-encoding */
	strf(cfg, sizeof(cfg),
	     "{\"url\":\"http://127.0.0.1:%d/lab/pdu/\",\"hostname\":\"rack 2&b\",\"port\":\"A/1\",\"timeout_ms\":2000}",
	     h.port);
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "pdudaemon", cfg, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_on(&r), 0);
	relay_close(&r);
	http_stop(&h);
	read_text(h.log, log, sizeof(log));
	CU_ASSERT_STRING_EQUAL(log,
			       "GET /power/control/on?hostname=pdu1&port=3 HTTP/1.1\n"
			       "GET /power/control/off?hostname=pdu1&port=3 HTTP/1.1\n"
			       "GET /lab/pdu/power/control/on?hostname=rack%202%26b&port=A%2F1 HTTP/1.1\n");
}

static void test_pdudaemon_errors(void)
{
	const char *dir = pc_test_tmpdir("relay_hw_pdu");
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	char cfg[300], err[512];
	struct http_srv h;
	struct relay r;
	uint64_t t0;
	int s, dead_port;

	/* 500 from the daemon: the status line and its reason are quoted */
	CU_ASSERT_EQUAL_FATAL(http_start(&h, dir, "e500", HTTP_500), 0);
	strf(cfg, sizeof(cfg), "{\"url\":\"http://127.0.0.1:%d\",\"hostname\":\"pdu9\",\"port\":1}", h.port);
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "pdudaemon", cfg, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_off(&r), -EIO);
	CU_ASSERT(HAS(r.err, "board b1: relay pdudaemon: pdudaemon at 127.0.0.1:"));
	CU_ASSERT(HAS(r.err, "\"HTTP/1.1 500 Internal Server Error\": Invalid request: unknown pdu 'pdu9'"));
	CU_ASSERT(HAS(r.err, "check relay.hostname and relay.port"));
	relay_close(&r);
	http_stop(&h);

	/* not HTTP at all */
	CU_ASSERT_EQUAL_FATAL(http_start(&h, dir, "junk", "SSH-2.0-OpenSSH_9.2\r\n"), 0);
	strf(cfg, sizeof(cfg), "{\"url\":\"http://127.0.0.1:%d\",\"hostname\":\"p\",\"port\":1}", h.port);
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "pdudaemon", cfg, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_on(&r), -EPROTO);
	CU_ASSERT(HAS(r.err, "not an HTTP answer: \"SSH-2.0-OpenSSH_9.2\""));
	relay_close(&r);
	http_stop(&h);

	/* accepted, never answered: bounded by timeout_ms */
	CU_ASSERT_EQUAL_FATAL(http_start(&h, dir, "hang", NULL), 0);
	strf(cfg, sizeof(cfg), "{\"url\":\"http://127.0.0.1:%d\",\"hostname\":\"p\",\"port\":1,\"timeout_ms\":300}",
	     h.port);
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "pdudaemon", cfg, err, sizeof(err)), 0);
	t0 = pc_now_ms();
	CU_ASSERT_EQUAL(relay_off(&r), -ETIMEDOUT);
	CU_ASSERT(pc_now_ms() - t0 >= 300 && pc_now_ms() - t0 < 10000);	/* loose: CI may be loaded */
	CU_ASSERT(HAS(r.err, "'off' request to pdudaemon at 127.0.0.1:"));
	CU_ASSERT(HAS(r.err, "got no answer within 300 ms"));
	relay_close(&r);
	http_stop(&h);

	/* nobody listening */
	s = socket(AF_INET, SOCK_STREAM, 0);
	CU_ASSERT_FATAL(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
			getsockname(s, (struct sockaddr *)&a, &alen) == 0);
	dead_port = ntohs(a.sin_port);
	close(s);
	strf(cfg, sizeof(cfg), "{\"url\":\"http://127.0.0.1:%d\",\"hostname\":\"p\",\"port\":1}", dead_port);
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "pdudaemon", cfg, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_on(&r), -ECONNREFUSED);
	CU_ASSERT(HAS(r.err, "cannot connect to pdudaemon at 127.0.0.1:"));
	CU_ASSERT(HAS(r.err, "Connection refused"));
	relay_close(&r);

	/* a name that does not resolve */
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "pdudaemon",
					 "{\"url\":\"http://no-such-host.invalid:16421\",\"hostname\":\"p\",\"port\":1,"
					 "\"timeout_ms\":3000}", err, sizeof(err)), 0);
	CU_ASSERT(relay_on(&r) < 0);
	CU_ASSERT(HAS(r.err, "no-such-host.invalid"));
	relay_close(&r);
}

/* ---- sysrq ---------------------------------------------------------------- */

static void test_sysrq(void)
{
	const char *dir = pc_test_tmpdir("relay_hw_sysrq");
	char cfg[PATH_MAX + 100], err[512], path[PATH_MAX], buf[64];
	struct relay r;

	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "sysrq", "{}", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_on(&r), 0);	/* always powered */
	CU_ASSERT_EQUAL(relay_off(&r), -ENOTSUP);
	CU_ASSERT(HAS(r.err, "board b1: relay sysrq: a sysrq board has no power to switch"));
	CU_ASSERT(HAS(r.err, "nothing was switched off"));
	CU_ASSERT_EQUAL(relay_get(&r), -ENOTSUP);
	relay_close(&r);

	strf(path, sizeof(path), "%s/powered", dir);
	strf(cfg, sizeof(cfg), "{\"on\":\"echo $PC_BOARD-$PC_ACTION > %s\",\"timeout_ms\":5000}", path);
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "sysrq", cfg, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_on(&r), 0);
	CU_ASSERT_STRING_EQUAL(read_text(path, buf, sizeof(buf)), "b1-on\n");
	CU_ASSERT_EQUAL(relay_off(&r), -ENOTSUP);
	relay_close(&r);

	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "sysrq", "{\"on\":\"echo no wol >&2; exit 3\"}", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_on(&r), -EIO);
	CU_ASSERT(HAS(r.err, "board b1: relay sysrq: 'on' command `echo no wol >&2; exit 3` exited with status 3: no wol"));
	relay_close(&r);

	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "sysrq", "{\"on\":\"sleep 5\",\"timeout_ms\":200}", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_on(&r), -ETIMEDOUT);
	CU_ASSERT(HAS(r.err, "timed out after 200 ms"));
	relay_close(&r);
}

/* ---- the simulator cases (run in a child under the shims) ----------------- */

static int shim_loaded(const char *sym)
{
	return dlsym(RTLD_DEFAULT, sym) != NULL;
}

#ifdef PC_GPIOD_API

static char gs_path[PATH_MAX];

/* Two chips: the relay is on the second, found by path, name, label or line name. */
static void gs_reset(void)
{
	const char *dir = pc_test_tmpdir("relay_hw_gpiosim");

	strf(gs_path, sizeof(gs_path), "%s/gpiosim.state", dir);
	CU_ASSERT_EQUAL_FATAL(write_text(gs_path,
		"chip gpiochip0 lines=4 label=pinctrl-sim\n"
		"chip gpiochip1 lines=8 label=relay-hat\n"
		"line gpiochip1 3 pull=0 name=RELAY_B1\n"
		"line gpiochip1 4 pull=1 name=RELAY_B2\n"), 0);
	setenv("GPIOSIM_STATE", gs_path, 1);
}

/* A field of a simulated line ("value", "owner", "dir", ...) as text. */
static const char *gs_field(const char *chip, int offset, const char *key, char *out, size_t len)
{
	char buf[8192], head[64], k[32];
	const char *l, *v;

	read_text(gs_path, buf, sizeof(buf));
	strf(head, sizeof(head), "line %s %d ", chip, offset);
	strf(k, sizeof(k), " %s=", key);
	out[0] = 0;
	l = strstr(buf, head);
	if (!l)
		return out;
	v = strstr(l, k);
	if (!v || memchr(l, '\n', (size_t)(v - l)))
		return out;
	v += strlen(k);
	snprintf(out, len, "%.*s", (int)strcspn(v, " \n"), v);
	return out;
}

static int gs_int(const char *chip, int offset, const char *key)
{
	char v[32];

	return atoi(gs_field(chip, offset, key, v, sizeof(v)));
}

/* Rewrite one field in the state file, as another process driving the line would. */
static void gs_poke(const char *chip, int offset, const char *key, const char *val)
{
	char buf[8192], out[8192], head[64], k[32];
	char *l, *v;
	size_t vlen;

	read_text(gs_path, buf, sizeof(buf));
	strf(head, sizeof(head), "line %s %d ", chip, offset);
	strf(k, sizeof(k), " %s=", key);
	l = strstr(buf, head);
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	v = strstr(l, k);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	v += strlen(k);
	vlen = strcspn(v, " \n");
	strf(out, sizeof(out), "%.*s%s%s", (int)(v - buf), buf, val, v + vlen);
	CU_ASSERT_EQUAL(write_text(gs_path, out), 0);
}

static void test_gpiod_lifecycle(void)
{
	char err[512], v[64];
	struct relay r;

	gs_reset();
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "gpiod", "{\"chip\":\"gpiochip1\",\"line\":3}", err, sizeof(err)), 0);
	/* requested at open, driven OFF, held */
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "owner"), (int)getpid());
	CU_ASSERT_STRING_EQUAL(gs_field("gpiochip1", 3, "dir", v, sizeof(v)), "out");
	CU_ASSERT_STRING_EQUAL(gs_field("gpiochip1", 3, "consumer", v, sizeof(v)), "powercut:b1");
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "value"), 0);
	CU_ASSERT_EQUAL(relay_get(&r), 0);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(relay_on(&r), 0);
		CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "value"), 1);
		CU_ASSERT_EQUAL(relay_get(&r), 1);
		CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "owner"), (int)getpid());
		CU_ASSERT_EQUAL(relay_off(&r), 0);
		CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "value"), 0);
		CU_ASSERT_EQUAL(relay_get(&r), 0);
		CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "owner"), (int)getpid());
	}
	/* off while off is fine */
	CU_ASSERT_EQUAL(relay_off(&r), 0);
	CU_ASSERT_EQUAL(relay_on(&r), 0);
	relay_close(&r);
	/* released: nobody drives it, it falls to its pull */
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "owner"), 0);
	CU_ASSERT_STRING_EQUAL(gs_field("gpiochip1", 3, "dir", v, sizeof(v)), "in");
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "value"), 0);
}

static void test_gpiod_active_low(void)
{
	char err[512];
	struct relay r;

	gs_reset();
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "gpiod",
					 "{\"chip\":\"gpiochip1\",\"line\":4,\"active_low\":true,\"settle_ms\":5}",
					 err, sizeof(err)), 0);
	/* OFF on an active-low board is a high level, from the first instant */
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 4, "value"), 1);
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 4, "active_low"), 1);
	CU_ASSERT_EQUAL(relay_get(&r), 0);
	CU_ASSERT_EQUAL(relay_on(&r), 0);
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 4, "value"), 0);
	CU_ASSERT_EQUAL(relay_get(&r), 1);
	CU_ASSERT_EQUAL(relay_off(&r), 0);
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 4, "value"), 1);
	CU_ASSERT_EQUAL(relay_get(&r), 0);
	relay_close(&r);
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 4, "owner"), 0);
}

/* The chip by path, by label (scanning /dev), and the line by name. */
static void test_gpiod_lookup(void)
{
	static const char *const cfgs[] = {
		"{\"chip\":\"/dev/gpiochip1\",\"line\":3}",
		"{\"chip\":\"relay-hat\",\"line\":3}",
		"{\"chip\":\"gpiochip1\",\"line\":\"RELAY_B1\"}",
		"{\"chip\":\"relay-hat\",\"line\":\"RELAY_B1\"}",
	};
	char err[512];
	struct relay r;

	gs_reset();
	for (size_t i = 0; i < PC_ARRAY_SIZE(cfgs); i++) {
		CU_ASSERT_EQUAL_FATAL(open_relay(&r, "gpiod", cfgs[i], err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(relay_on(&r), 0);
		CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "value"), 1);
		CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "owner"), (int)getpid());
		relay_close(&r);
		CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "owner"), 0);
	}
}

/* Opened in a given state (relay_ctx.open_state). */
static int open_relay_in(struct relay *r, const char *cfgtext, int state, char *err, size_t errlen)
{
	struct relay_ctx ctx = { .board = "b1", .open_state = state };
	json_object *cfg = cfg_parse(cfgtext);
	int rc = relay_open(r, "gpiod", cfg, &ctx, err, errlen);

	json_object_put(cfg);
	return rc;
}

/* `powercut relay get`: the line is read as it is, never driven, and
 * released as it was; ON at open is on from the first instant; the lock
 * identity resolves names and labels to chip and offset. */
static void test_gpiod_observe(void)
{
	char err[512], v[64], key[160];
	struct relay r;

	gs_reset();
	/* line 4 rests at its pull-up: a board powered through a released line;
	 * line 3 an output something else left driven high */
	CU_ASSERT_EQUAL_FATAL(write_text(gs_path,
		"chip gpiochip0 lines=4 label=pinctrl-sim\n"
		"chip gpiochip1 lines=8 label=relay-hat\n"
		"line gpiochip1 3 value=1 pull=0 dir=out name=RELAY_B1\n"
		"line gpiochip1 4 value=1 pull=1 dir=in name=RELAY_B2\n"), 0);
	CU_ASSERT_EQUAL_FATAL(open_relay_in(&r, "{\"chip\":\"relay-hat\",\"line\":\"RELAY_B2\"}", RELAY_OPEN_OBSERVE,
					    err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 4, "value"), 1);
	CU_ASSERT_STRING_EQUAL(gs_field("gpiochip1", 4, "dir", v, sizeof(v)), "in");
	CU_ASSERT_EQUAL(relay_get(&r), 1);
	CU_ASSERT_EQUAL(relay_off(&r), -EPERM);
	CU_ASSERT(HAS(r.err, "was opened only to read it"));
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 4, "value"), 1);
	relay_close(&r);
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 4, "value"), 1);
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 4, "owner"), 0);
	/* an output left high stays an output, high, while observed */
	CU_ASSERT_EQUAL_FATAL(open_relay_in(&r, "{\"chip\":\"gpiochip1\",\"line\":3}", RELAY_OPEN_OBSERVE, err,
					    sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(gs_field("gpiochip1", 3, "dir", v, sizeof(v)), "out");
	CU_ASSERT_EQUAL(relay_get(&r), 1);
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "value"), 1);
	relay_close(&r);
	/* opened ON: high from the request on, no OFF first */
	gs_reset();
	CU_ASSERT_EQUAL_FATAL(open_relay_in(&r, "{\"chip\":\"gpiochip1\",\"line\":3}", RELAY_OPEN_ON, err,
					    sizeof(err)), 0);
	CU_ASSERT_EQUAL(gs_int("gpiochip1", 3, "value"), 1);
	CU_ASSERT_STRING_EQUAL(gs_field("gpiochip1", 3, "dir", v, sizeof(v)), "out");
	CU_ASSERT_EQUAL(relay_get(&r), 1);
	relay_close(&r);
	/* one lock key whichever way the line is named */
	{
		json_object *a = cfg_parse("{\"chip\":\"relay-hat\",\"line\":\"RELAY_B1\"}");
		json_object *b = cfg_parse("{\"chip\":\"/dev/gpiochip1\",\"line\":3}");

		CU_ASSERT_EQUAL(relay_gpiod_ops.ident(a, key, sizeof(key)), 0);
		CU_ASSERT_STRING_EQUAL(key, "gpiod:gpiochip1:3");
		CU_ASSERT_EQUAL(relay_gpiod_ops.ident(b, key, sizeof(key)), 0);
		CU_ASSERT_STRING_EQUAL(key, "gpiod:gpiochip1:3");
		json_object_put(a);
		json_object_put(b);
	}
}

static void test_gpiod_errors(void)
{
	char err[512];
	struct relay r, r2;

	gs_reset();
	CU_ASSERT_EQUAL(open_relay(&r, "gpiod", "{\"chip\":\"gpiochip7\",\"line\":0}", err, sizeof(err)), -ENOENT);
	CU_ASSERT(HAS(err, "board b1: relay gpiod: chip 'gpiochip7': no /dev/gpiochip7 and no GPIO chip labelled so"));
	CU_ASSERT(HAS(err, "found: gpiochip0 [pinctrl-sim], gpiochip1 [relay-hat]"));
	CU_ASSERT_EQUAL(open_relay(&r, "gpiod", "{\"chip\":\"gpiochip1\",\"line\":8}", err, sizeof(err)), -EINVAL);
	CU_ASSERT(HAS(err, "line 8: gpiochip1 [relay-hat] has 8 lines (0-7)"));
	CU_ASSERT_EQUAL(open_relay(&r, "gpiod", "{\"chip\":\"gpiochip1\",\"line\":\"RELAY_B9\"}", err, sizeof(err)),
			-EINVAL);
	CU_ASSERT(HAS(err, "no line named 'RELAY_B9' on gpiochip1 [relay-hat]"));
	/* not a GPIO chip: libgpiod 1.x says ENOTTY, 2.x what sysfs says about /dev/null */
	CU_ASSERT(open_relay(&r, "gpiod", "{\"chip\":\"/dev/null\",\"line\":0}", err, sizeof(err)) < 0);
	CU_ASSERT(HAS(err, "cannot open GPIO chip /dev/null"));
	/* a line someone holds is busy, and the message says who */
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "gpiod", "{\"chip\":\"gpiochip1\",\"line\":3}", err, sizeof(err)), 0);
	{
		struct relay_ctx ctx = { .board = "b2" };
		json_object *cfg = cfg_parse("{\"chip\":\"gpiochip1\",\"line\":3}");

		CU_ASSERT_EQUAL(relay_open(&r2, "gpiod", cfg, &ctx, err, sizeof(err)), -EBUSY);
		CU_ASSERT(HAS(err, "board b2: relay gpiod: line 3 of gpiochip1 [relay-hat] is busy (held by 'powercut:b1')"));
		json_object_put(cfg);
	}
	/* something else drives the line: get notices */
	CU_ASSERT_EQUAL(relay_on(&r), 0);
	gs_poke("gpiochip1", 3, "value", "0");
	CU_ASSERT_EQUAL(relay_get(&r), -EIO);
	CU_ASSERT(HAS(r.err, "line 3 of gpiochip1 [relay-hat] reads back off but powercut set it on"));
	/* the chip vanishes under us */
	CU_ASSERT_EQUAL(write_text(gs_path, "chip gpiochip0 lines=4 label=pinctrl-sim\n"), 0);
	CU_ASSERT_EQUAL(relay_off(&r), -ENODEV);
	CU_ASSERT(HAS(r.err, "cannot set line 3 of gpiochip1 [relay-hat] off"));
	relay_close(&r);
}

#endif /* PC_GPIOD_API */

static char hs_state[PATH_MAX], hs_log[PATH_MAX];

static void hs_reset(const char *extra)
{
	const char *dir = pc_test_tmpdir("relay_hw_hidraw");
	char text[1024];

	strf(hs_state, sizeof(hs_state), "%s/hidraw.state", dir);
	strf(hs_log, sizeof(hs_log), "%s/hidraw.log", dir);
	strf(text, sizeof(text),
	     "hidraw0 vid=16c0 pid=05df serial=PCSIM state=00 %s name=www.dcttech.com USBRelay2\n"
	     "hidraw1 vid=046d pid=c52b serial=X state=00 name=Logitech USB Receiver\n"
	     "hidraw2 vid=16c0 pid=05df serial=ONE01 state=00 name=www.dcttech.com USBRelay1\n", extra);
	CU_ASSERT_EQUAL_FATAL(write_text(hs_state, text), 0);
	unlink(hs_log);
	setenv("HIDRAWSIM_STATE", hs_state, 1);
	setenv("HIDRAWSIM_LOG", hs_log, 1);
}

static void test_hidrelay_bytes(void)
{
	char err[512], buf[4096];
	struct relay r;

	hs_reset("");
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "hidrelay", "{\"device\":\"/dev/hidraw0\",\"channel\":2,\"timeout_ms\":20000}",
					 err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(read_text(hs_log, buf, sizeof(buf)),
			       "GRAWINFO 0:\nGRAWNAME 0:\nGFEATURE 9: 01 00 00 00 00 00 00 00 00\n");
	unlink(hs_log);
	CU_ASSERT_EQUAL(relay_on(&r), 0);
	CU_ASSERT(HAS(read_text(hs_state, buf, sizeof(buf)), "hidraw0 vid=16c0 pid=05df serial=PCSIM state=02 "));
	CU_ASSERT_EQUAL(relay_get(&r), 1);
	CU_ASSERT_EQUAL(relay_off(&r), 0);
	CU_ASSERT(HAS(read_text(hs_state, buf, sizeof(buf)), "serial=PCSIM state=00 "));
	CU_ASSERT_EQUAL(relay_get(&r), 0);
	CU_ASSERT_STRING_EQUAL(read_text(hs_log, buf, sizeof(buf)),
			       "SFEATURE 9: 00 ff 02 00 00 00 00 00 00\n"
			       "GFEATURE 9: 01 00 00 00 00 00 00 00 00\n"
			       "GFEATURE 9: 01 00 00 00 00 00 00 00 00\n"
			       "SFEATURE 9: 00 fd 02 00 00 00 00 00 00\n"
			       "GFEATURE 9: 01 00 00 00 00 00 00 00 00\n"
			       "GFEATURE 9: 01 00 00 00 00 00 00 00 00\n");
	relay_close(&r);
	/* channel 1 is bit 0, and other channels are left alone */
	hs_reset("");
	CU_ASSERT_EQUAL_FATAL(write_text(hs_state,
		"hidraw0 vid=16c0 pid=05df serial=PCSIM state=02 name=www.dcttech.com USBRelay2\n"), 0);
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "hidrelay", "{\"device\":\"/dev/hidraw0\",\"timeout_ms\":20000}", err,
					 sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_get(&r), 0);
	CU_ASSERT_EQUAL(relay_on(&r), 0);
	CU_ASSERT(HAS(read_text(hs_state, buf, sizeof(buf)), "state=03 "));
	CU_ASSERT_EQUAL(relay_off(&r), 0);
	CU_ASSERT(HAS(read_text(hs_state, buf, sizeof(buf)), "state=02 "));
	relay_close(&r);
}

static void test_hidrelay_errors(void)
{
	char err[512], buf[2048];
	struct relay r;
	uint64_t t0;

	hs_reset("");
	CU_ASSERT_EQUAL(open_relay(&r, "hidrelay", "{\"device\":\"/dev/hidraw0\",\"channel\":3,\"timeout_ms\":20000}",
				   err, sizeof(err)), -EINVAL);
	CU_ASSERT(HAS(err, "board b1: relay hidrelay: channel 3: /dev/hidraw0 (\"www.dcttech.com USBRelay2\") has 2 relays"));
	CU_ASSERT_EQUAL(open_relay(&r, "hidrelay", "{\"device\":\"/dev/hidraw2\",\"channel\":2,\"timeout_ms\":20000}",
				   err, sizeof(err)), -EINVAL);
	CU_ASSERT(HAS(err, "has 1 relay;"));
	CU_ASSERT_EQUAL(open_relay(&r, "hidrelay", "{\"device\":\"/dev/hidraw1\",\"timeout_ms\":20000}", err,
				   sizeof(err)), -ENODEV);
	CU_ASSERT(HAS(err, "/dev/hidraw1 is \"Logitech USB Receiver\" (USB 046d:c52b), not a dcttech-style USBRelay board"));
	CU_ASSERT_EQUAL(open_relay(&r, "hidrelay", "{\"device\":\"/dev/hidraw9\",\"timeout_ms\":20000}", err,
				   sizeof(err)), -ENOENT);
	CU_ASSERT(HAS(err, "cannot open /dev/hidraw9: No such file or directory; check relay.device"));
	/* nothing but the probe was sent to the wrong devices */
	CU_ASSERT(!HAS(read_text(hs_log, buf, sizeof(buf)), "SFEATURE"));

	/* a board that takes the command but does not switch */
	hs_reset("ignore=1");
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "hidrelay", "{\"device\":\"/dev/hidraw0\",\"timeout_ms\":20000}", err,
					 sizeof(err)), 0);
	CU_ASSERT_EQUAL(relay_on(&r), -EIO);
	CU_ASSERT(HAS(r.err, "/dev/hidraw0 did not switch channel 1 on (state byte 0x00 after the command)"));
	relay_close(&r);

	/* a stalled board */
	hs_reset("");
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "hidrelay", "{\"device\":\"/dev/hidraw0\",\"timeout_ms\":20000}", err,
					 sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(write_text(hs_state,
		"hidraw0 vid=16c0 pid=05df serial=PCSIM state=00 fail=32 name=www.dcttech.com USBRelay2\n"), 0);
	CU_ASSERT_EQUAL(relay_off(&r), -EPIPE);
	CU_ASSERT(HAS(r.err, "HIDIOCSFEATURE on /dev/hidraw0 failed: Broken pipe"));
	relay_close(&r);
	/* a board that hangs on the command: abandoned at timeout_ms, long
	 * before the board would answer (the bound is loose: CI may be loaded) */
	hs_reset("hang_ms=60000");
	CU_ASSERT_EQUAL_FATAL(open_relay(&r, "hidrelay", "{\"device\":\"/dev/hidraw0\",\"timeout_ms\":1000}", err,
					 sizeof(err)), 0);
	t0 = pc_now_ms();
	CU_ASSERT_EQUAL(relay_on(&r), -ETIMEDOUT);
	CU_ASSERT(pc_now_ms() - t0 >= 1000 && pc_now_ms() - t0 < 20000);
	CU_ASSERT(HAS(r.err, "/dev/hidraw0 did not answer within 1000 ms"));
	relay_close(&r);
}

/* ---- running the simulator cases under the shims ----------------------------- */

static int find_asan(struct dl_phdr_info *info, size_t size, void *data)
{
	if (info->dlpi_name && strstr(info->dlpi_name, "libasan.so")) {
		pc_strlcpy(data, info->dlpi_name, PATH_MAX);
		return 1;
	}
	return 0;
}

/* Re-run this binary's relay_hw suite with the shims preloaded; it must pass. */
static void test_under_simulators(void)
{
	char exe[PATH_MAX], dir[PATH_MAX], gpiosim[PATH_MAX + 16], hidrawsim[PATH_MAX + 16];
	char asan[PATH_MAX] = "", preload[3 * PATH_MAX + 64];
	const char *env = getenv("PC_GPIOSIM_DIR"), *old = getenv("LD_PRELOAD");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	uint64_t deadline;
	int status = -1;
	pid_t pid, w = 0;

	CU_ASSERT_FATAL(n > 0);
	exe[n] = 0;
	if (env && *env) {
		pc_strlcpy(dir, env, sizeof(dir));
	} else {
		pc_strlcpy(dir, exe, sizeof(dir));
		*strrchr(dir, '/') = 0;
	}
	strf(gpiosim, sizeof(gpiosim), "%s/gpiosim.so", dir);
	strf(hidrawsim, sizeof(hidrawsim), "%s/hidrawsim.so", dir);
	if (access(gpiosim, R_OK) != 0 || access(hidrawsim, R_OK) != 0) {
		pc_test_skip("no %s or %s (make gpiosim builds them); gpiod and hidrelay not tested", gpiosim,
			     hidrawsim);
		return;
	}
	dl_iterate_phdr(find_asan, asan);
	strf(preload, sizeof(preload), "%s%s%s:%s%s%s", asan, asan[0] ? ":" : "", gpiosim, hidrawsim,
	     old && *old ? ":" : "", old && *old ? old : "");
	fflush(stdout);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		char *argv[] = { exe, "relay_hw", NULL };

		setenv("LD_PRELOAD", preload, 1);
		execv(exe, argv);
		_exit(127);
	}
	deadline = pc_now_ms() + 120000;
	while (pc_now_ms() < deadline && (w = waitpid(pid, &status, WNOHANG)) == 0)
		pc_sleep_us(10000);
	if (w != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		CU_FAIL("the simulator run did not finish within 120 s");
		return;
	}
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The relay lock's key: one per physical relay, however a section names it. */
static void test_lock_keys(void)
{
	const char *dir = pc_test_tmpdir("relay_lock_keys");
	char link[PATH_MAX], real[PATH_MAX], text[PATH_MAX + 128], key[160];
	static const struct {
		const char *driver, *cfg, *key;	/* key NULL: -ENOENT, no lock */
	} cases[] = {
		{ "pdudaemon", "{\"hostname\":\"pdu01\",\"port\":3}", "pdudaemon:pdu01:3" },
		{ "pdudaemon", "{\"url\":\"http://other:80\",\"hostname\":\"pdu01\",\"port\":3}", "pdudaemon:pdu01:3" },
		{ "pdudaemon", "{\"hostname\":\"pdu01\",\"port\":\"A1\"}", "pdudaemon:pdu01:A1" },
		{ "command", "{\"on\":\"x\",\"off\":\"y\"}", "board:camp/b7" },
		{ "sysrq", "{}", "board:camp/b7" },
		{ "sim", "{}", NULL },
		{ "hidrelay", "{\"device\":\"/dev/nonexistent-hidraw\",\"channel\":2}", "hidrelay:/dev/nonexistent-hidraw:2" },
	};

	for (size_t i = 0; i < PC_ARRAY_SIZE(cases); i++) {
		json_object *cfg = cfg_parse(cases[i].cfg);
		int rc = relay_lock_key(cases[i].driver, cfg, "camp", "b7", key, sizeof(key));

		if (cases[i].key) {
			CU_ASSERT_EQUAL(rc, 0);
			CU_ASSERT_STRING_EQUAL(key, cases[i].key);
		} else {
			CU_ASSERT_EQUAL(rc, -ENOENT);
		}
		json_object_put(cfg);
	}
	/* a serial relay by a symlink (/dev/serial/by-id/...) and by its node: one key */
	CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(dir, text));
	strf(real, sizeof(real), "%s/ttyUSB9", text);
	strf(link, sizeof(link), "%s/usb-1a86_USB_Serial-if00-port0", dir);
	CU_ASSERT_EQUAL_FATAL(write_text(real, ""), 0);
	unlink(link);
	CU_ASSERT_EQUAL_FATAL(symlink(real, link), 0);
	{
		char k1[160], k2[160];
		json_object *a, *b;

		strf(text, sizeof(text), "{\"device\":\"%s\",\"channel\":2}", link);
		a = cfg_parse(text);
		strf(text, sizeof(text), "{\"device\":\"%s\",\"channel\":2}", real);
		b = cfg_parse(text);
		CU_ASSERT_EQUAL(relay_lock_key("lcus", a, "c1", "x", k1, sizeof(k1)), 0);
		CU_ASSERT_EQUAL(relay_lock_key("lcus", b, "c2", "y", k2, sizeof(k2)), 0);
		CU_ASSERT_STRING_EQUAL(k1, k2);
		CU_ASSERT(strncmp(k1, "lcus:/", 6) == 0 && strstr(k1, "/ttyUSB9:2") != NULL);
		json_object_put(a);
		json_object_put(b);
	}
}

/* The lock itself: busy names its holder, a clean release leaves nothing to
 * take over, a dead holder's is taken over and said, a hostile file is read
 * as printable text only. */
static void test_lock_take(void)
{
	const char *dir = pc_test_tmpdir("relay_lock_take");
	struct relay_lock_who me = { .role = "run", .campaign = "c", .board = "b1", .results = "/r/c" }, who;
	struct relay_lock l1, l2;
	char err[1024], note[1024], *old = getenv(RELAY_LOCK_ENV) ? strdup(getenv(RELAY_LOCK_ENV)) : NULL;

	setenv(RELAY_LOCK_ENV, dir, 1);
	CU_ASSERT_EQUAL_FATAL(relay_lock_take(&l1, "gpiod:gpiochip0:4", &me, 0, NULL, note, sizeof(note), err,
					      sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(note, "");
	memset(&who, 0, sizeof(who));
	CU_ASSERT_EQUAL(relay_lock_take(&l2, "gpiod:gpiochip0:4", &me, 50, &who, note, sizeof(note), err, sizeof(err)),
			-EBUSY);
	CU_ASSERT_EQUAL(who.pid, (long)getpid());
	CU_ASSERT_STRING_EQUAL(who.role, "run");
	CU_ASSERT(HAS(err, "relay gpiod:gpiochip0:4 is in use by campaign c (powercut run pid "));
	CU_ASSERT(HAS(err, "results /r/c"));
	/* another key is another lock */
	CU_ASSERT_EQUAL(relay_lock_take(&l2, "gpiod:gpiochip0:5", &me, 0, NULL, note, sizeof(note), err, sizeof(err)), 0);
	relay_lock_release(&l2);
	relay_lock_release(&l1);
	CU_ASSERT_EQUAL(relay_lock_take(&l1, "gpiod:gpiochip0:4", &me, 0, NULL, note, sizeof(note), err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(note, "");
	/* gone without releasing (the lock drops, the file still names us) */
	relay_lock_forget(&l1);
	CU_ASSERT_EQUAL(relay_lock_take(&l1, "gpiod:gpiochip0:4", &me, 0, NULL, note, sizeof(note), err, sizeof(err)), 0);
	CU_ASSERT(HAS(note, "stale lock taken over: it named campaign c (powercut run pid "));
	/* a hostile file: control characters never reach a terminal */
	{
		static const char hostile[] = "{\"pid\":7,\"host\":\"\\u001b[2Jx\",\"role\":\"holder\","
					      "\"board\":\"b\\u0007\",\"state\":\"on\"}\n";

		CU_ASSERT_EQUAL(pc_pwrite_all(l1.fd, hostile, strlen(hostile), 0), 0);
		CU_ASSERT_EQUAL(ftruncate(l1.fd, (off_t)strlen(hostile)), 0);
	}
	relay_lock_forget(&l1);
	CU_ASSERT_EQUAL(relay_lock_take(&l1, "gpiod:gpiochip0:4", &me, 0, NULL, note, sizeof(note), err, sizeof(err)), 0);
	if (!HAS(note, "a relay holder keeping board b? on (pid 7 on ?[2Jx "))
		printf("\n  note: %s\n", note);
	CU_ASSERT(HAS(note, "a relay holder keeping board b? on (pid 7 on ?[2Jx "));
	relay_lock_release(&l1);
	if (old) {
		setenv(RELAY_LOCK_ENV, old, 1);
		free(old);
	} else {
		unsetenv(RELAY_LOCK_ENV);
	}
}

int suite_relay_hw(void)
{
	CU_pSuite s = CU_add_suite("relay_hw", NULL, NULL);

	/* the qemu driver joins relay.c's list as powercut's main() adds it */
	if (!s || vboard_register() < 0)
		return -1;
	/* Under the shims: only the cases that need them (the parent ran the rest). */
	if (shim_loaded("gpiosim_loaded") && shim_loaded("hidrawsim_loaded")) {
#ifdef PC_GPIOD_API
		if (!CU_add_test(s, "gpiod: requested OFF at open, held, set and read back, released",
				 test_gpiod_lifecycle) ||
		    !CU_add_test(s, "gpiod: active_low inverts the physical level", test_gpiod_active_low) ||
		    !CU_add_test(s, "gpiod: chip by path, name or label; line by offset or name", test_gpiod_lookup) ||
		    !CU_add_test(s, "gpiod: errors name the chip, the line and who holds it", test_gpiod_errors) ||
		    !CU_add_test(s, "gpiod: get reads the line as it is; ON at open; one lock key", test_gpiod_observe) ||
		    relay_gpiod_kernel_cases(s))	/* tests/unit/test_relay_gpiod_kernel.c */
			return -1;
#endif
		if (!CU_add_test(s, "hidrelay: exact feature reports, state read back", test_hidrelay_bytes) ||
		    !CU_add_test(s, "hidrelay: wrong device, channel, dead, stalled and hung boards",
				 test_hidrelay_errors))
			return -1;
		return 0;
	}
	if (!CU_add_test(s, "every driver's check() table", test_check_table) ||
	    !CU_add_test(s, "drivers are registered in order", test_registry) ||
	    !CU_add_test(s, "lcus: exact frames on a pty", test_lcus_frames) ||
	    !CU_add_test(s, "lcus: raw 8N1 at the configured speed; get is ENOTSUP", test_lcus_termios_and_get) ||
	    !CU_add_test(s, "lcus: missing device, not a tty", test_lcus_errors) ||
	    !CU_add_test(s, "pdudaemon: request lines against a tiny HTTP server", test_pdudaemon_requests) ||
	    !CU_add_test(s, "pdudaemon: 500, junk, no answer, refused, unresolvable", test_pdudaemon_errors) ||
	    !CU_add_test(s, "sysrq: on command, off and get are ENOTSUP", test_sysrq) ||
	    !CU_add_test(s, "relay lock keys: one per physical relay", test_lock_keys) ||
	    !CU_add_test(s, "relay lock: busy, released, stale, hostile", test_lock_take) ||
	    !CU_add_test(s, "gpiod and hidrelay under the gpiosim/hidrawsim shims", test_under_simulators))
		return -1;
	return 0;
}

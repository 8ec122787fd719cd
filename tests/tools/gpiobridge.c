/*
 * gpiobridge.c - the pin-to-power bridge of the relay-host VM (docs/relays.md#
 * the-gpio-relay-on-a-real-kernel): watches GPIO pins of a QEMU AST2600
 * guest over QMP and switches the board each one powers.
 *
 *   gpiobridge --qmp SOCK --log FILE [--console SOCK] [--object PATH]
 *              [--poll-ms N] --pin PROP=COMMAND [--pin ...]
 *
 * Each pin is a boolean QOM property of the guest's GPIO controller (PROP,
 * e.g. gpioA0, of --object, default /machine/soc/gpio), read with qom-get
 * every --poll-ms (default 2). A pin going high powers its board on: COMMAND
 * runs with /bin/sh -c in a process group of its own; a pin going low powers
 * it off: that group is SIGKILLed and reaped. The guest's serial console
 * (a QEMU socket chardev, server end) is read too, so that pin changes and
 * what the guest printed share one clock in the log.
 *
 * The log, one line an event, microseconds on CLOCK_MONOTONIC:
 *   T qmp ready
 *   T pin PROP initial L
 *   T pin PROP L power on|off pid P latency_us U bound_us B
 *   T console TEXT            (bytes outside printable ASCII become '?')
 *   T summary switches N latency_us mean M max X bound_us mean M max X
 *   T exit REASON
 * latency_us runs from the sample that saw the change to the power switch
 * done (the child forked, or its group killed and reaped); bound_us from the
 * sample before it, which still saw the old level: the change happened
 * between the two, so bound_us is the most the pin-to-power delay can be.
 * It exits 0 when QEMU closes QMP (the guest powered off), switching every
 * board off first; 2 on a usage error, 1 when QMP cannot be had.
 * Every input is hostile: a QMP reply is read to its end of line, bounded,
 * and only "return": true|false is taken for a level.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/spawn.h"

#define MAX_PINS	8
#define LINE_MAX_Q	8192

struct pin {
	const char *prop;
	const char *cmd;
	int level;		/* -1: not read yet */
	pid_t pid;		/* the board's process group, 0 when off */
	uint64_t last_us;	/* the previous sample */
};

static FILE *bridge_log;
static struct pin pins[MAX_PINS];
static int npins;
/* every switch's figures, for the summary line at exit */
static uint64_t n_sw, lat_sum, lat_max, bound_sum, bound_max;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;
	uint64_t t = now_us();

	fprintf(bridge_log, "%llu.%06llu ", (unsigned long long)(t / 1000000u), (unsigned long long)(t % 1000000u));
	va_start(ap, fmt);
	vfprintf(bridge_log, fmt, ap);
	va_end(ap);
	fputc('\n', bridge_log);
	fflush(bridge_log);
}

static int unix_connect(const char *path, int wait_s)
{
	struct sockaddr_un sa;
	int i, fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, path);
	for (i = 0; i < wait_s * 20; i++) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		close(fd);
		usleep(50000);
	}
	return -ETIMEDOUT;
}

/* QMP: one reply line (events skipped) into buf; 0, or -1 when QMP closed. */
static char qbuf[LINE_MAX_Q];
static size_t qlen;

static int qmp_line(int fd, char *out, size_t outlen)
{
	for (;;) {
		char *nl = memchr(qbuf, '\n', qlen);
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - qbuf);
			size_t c = l < outlen - 1 ? l : outlen - 1;

			memcpy(out, qbuf, c);
			out[c] = 0;
			memmove(qbuf, nl + 1, qlen - l - 1);
			qlen -= l + 1;
			if (strstr(out, "\"event\""))
				continue;
			return 0;
		}
		if (qlen == sizeof(qbuf))
			qlen = 0;	/* a line longer than any reply we ask for: dropped */
		n = read(fd, qbuf + qlen, sizeof(qbuf) - qlen);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		qlen += (size_t)n;
	}
}

static int qmp_cmd(int fd, const char *cmd, char *reply, size_t len)
{
	size_t l = strlen(cmd), off = 0;

	while (off < l) {
		ssize_t n = write(fd, cmd + off, l - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return qmp_line(fd, reply, len);
}

/* 1, 0, or -1 (QMP closed), -2 (an answer that is no level) */
static int pin_read(int fd, const char *object, const char *prop, char *why, size_t wlen)
{
	char cmd[512], reply[LINE_MAX_Q];

	snprintf(cmd, sizeof(cmd),
		 "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"%s\",\"property\":\"%s\"}}\n", object, prop);
	if (qmp_cmd(fd, cmd, reply, sizeof(reply)))
		return -1;
	if (strstr(reply, "\"return\": true") || strstr(reply, "\"return\":true"))
		return 1;
	if (strstr(reply, "\"return\": false") || strstr(reply, "\"return\":false"))
		return 0;
	snprintf(why, wlen, "%.300s", reply);
	return -2;
}

static void tally(uint64_t lat, uint64_t bound)
{
	n_sw++;
	lat_sum += lat;
	bound_sum += bound;
	if (lat > lat_max)
		lat_max = lat;
	if (bound > bound_max)
		bound_max = bound;
}

static void summary(void)
{
	note("summary switches %llu latency_us mean %llu max %llu bound_us mean %llu max %llu",
	     (unsigned long long)n_sw, (unsigned long long)(n_sw ? lat_sum / n_sw : 0),
	     (unsigned long long)lat_max, (unsigned long long)(n_sw ? bound_sum / n_sw : 0),
	     (unsigned long long)bound_max);
}

static void power_on(struct pin *p, uint64_t seen)
{
	char *const argv[] = { "sh", "-c", (char *)p->cmd, NULL };
	struct pc_spawn s;
	struct pc_child c;
	pid_t pid;
	uint64_t t;

	/* its own group (set on both sides: either may run first) */
	pc_spawn_init(&s);
	s.flags = PC_SPAWN_GROUP;
	s.path = "/bin/sh";
	pid = pc_spawn(&c, &s, argv) < 0 ? -1 : c.pid;
	t = now_us();
	p->pid = pid > 0 ? pid : 0;
	tally(t - seen, t - p->last_us);
	note("pin %s 1 power on pid %d latency_us %llu bound_us %llu", p->prop, (int)pid,
	     (unsigned long long)(t - seen), (unsigned long long)(t - p->last_us));
}

static void power_off(struct pin *p, uint64_t seen)
{
	pid_t pid = p->pid;

	if (pid > 0)
		pc_kill_reap(pid, 1, NULL, PC_REAP_FOREVER);
	uint64_t t;

	p->pid = 0;
	t = now_us();
	tally(t - seen, t - p->last_us);
	note("pin %s 0 power off pid %d latency_us %llu bound_us %llu", p->prop, (int)pid,
	     (unsigned long long)(t - seen), (unsigned long long)(t - p->last_us));
}

/* console bytes to lines in the log */
static char cbuf[4096];
static size_t clen;

static void console_flush(int all)
{
	char *nl;

	while ((nl = memchr(cbuf, '\n', clen)) || (all && clen) || clen == sizeof(cbuf)) {
		size_t l = nl ? (size_t)(nl - cbuf) : clen, i;

		for (i = 0; i < l; i++)
			if (cbuf[i] == '\r' || (unsigned char)cbuf[i] < 32 || (unsigned char)cbuf[i] > 126)
				cbuf[i] = cbuf[i] == '\r' ? ' ' : '?';
		note("console %.*s", (int)l, cbuf);
		if (nl)
			l++;
		memmove(cbuf, cbuf + l, clen - l);
		clen -= l;
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: gpiobridge --qmp SOCK --log FILE [--console SOCK] [--object PATH] "
		"[--poll-ms N] --pin PROP=COMMAND [--pin ...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *qmp = NULL, *con = NULL, *logpath = NULL, *object = "/machine/soc/gpio";
	char reply[LINE_MAX_Q], why[400];
	int poll_ms = 2, qfd, cfd = -1, i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		if (!strcmp(a, "--qmp"))
			qmp = v;
		else if (!strcmp(a, "--console"))
			con = v;
		else if (!strcmp(a, "--log"))
			logpath = v;
		else if (!strcmp(a, "--object"))
			object = v;
		else if (!strcmp(a, "--poll-ms")) {
			char *end;
			long n = strtol(v, &end, 10);

			if (*end || n < 1 || n > 1000)
				usage();
			poll_ms = (int)n;
		} else if (!strcmp(a, "--pin")) {
			char *eq = strchr(argv[i + 1], '=');
			size_t k;

			if (npins == MAX_PINS || !eq || eq == v || !eq[1])
				usage();
			*eq = 0;
			for (k = 0; v[k]; k++)	/* a property name goes into JSON as is */
				if (!((v[k] >= 'A' && v[k] <= 'Z') || (v[k] >= 'a' && v[k] <= 'z') ||
				      (v[k] >= '0' && v[k] <= '9') || v[k] == '_' || v[k] == '-'))
					usage();
			pins[npins].prop = v;
			pins[npins].cmd = eq + 1;
			pins[npins].level = -1;
			npins++;
		} else {
			usage();
		}
		i++;
	}
	if (!qmp || !logpath || !npins || strchr(object, '"') || strchr(object, '\\'))
		usage();
	bridge_log = fopen(logpath, "a");
	if (!bridge_log) {
		perror(logpath);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	/* the console first: QEMU waits for it (server=on,wait=on) before it
	 * opens QMP, so no line of the boot is lost */
	if (con) {
		cfd = unix_connect(con, 120);
		if (cfd < 0)
			fprintf(stderr, "gpiobridge: console %s: cannot connect (%s)\n", con, strerror(-cfd));
	}
	qfd = unix_connect(qmp, 120);
	if (qfd < 0 || qmp_line(qfd, reply, sizeof(reply)) ||
	    qmp_cmd(qfd, "{\"execute\":\"qmp_capabilities\"}\n", reply, sizeof(reply)) || !strstr(reply, "return")) {
		note("exit no QMP at %s", qmp);
		return 1;
	}
	note("qmp ready");
	for (;;) {
		struct pollfd pfd = { .fd = cfd, .events = POLLIN };

		if (cfd >= 0 && poll(&pfd, 1, poll_ms) > 0) {
			ssize_t n = read(cfd, cbuf + clen, sizeof(cbuf) - clen);

			if (n > 0) {
				clen += (size_t)n;
				console_flush(0);
			} else if (n == 0 || errno != EINTR) {
				console_flush(1);
				close(cfd);
				cfd = -1;
			}
		} else if (cfd < 0) {
			usleep((useconds_t)poll_ms * 1000u);
		}
		for (i = 0; i < npins; i++) {
			struct pin *p = &pins[i];
			uint64_t seen;
			int l = pin_read(qfd, object, p->prop, why, sizeof(why));

			seen = now_us();
			if (l == -1) {
				console_flush(1);
				for (i = 0; i < npins; i++)
					if (pins[i].pid)
						power_off(&pins[i], now_us());
				summary();
				note("exit QMP closed (QEMU exited)");
				return 0;
			}
			if (l == -2) {
				note("exit pin %s: qom-get answered %s", p->prop, why);
				for (i = 0; i < npins; i++)
					if (pins[i].pid)
						power_off(&pins[i], now_us());
				return 1;
			}
			if (p->level < 0) {
				note("pin %s initial %d", p->prop, l);
				if (l)
					power_on(p, seen);
			} else if (l != p->level) {
				if (l)
					power_on(p, seen);
				else
					power_off(p, seen);
			}
			p->level = l;
			p->last_us = seen;
		}
	}
}

/*
 * relay_lcus.c - LCUS-1/2/4/8 USB relay boards (a CH340 USB-serial chip and
 * a microcontroller), through their tty.
 *
 * The protocol is a 4-byte frame at 9600 8N1, raw:
 *   A0 <channel> <state> <checksum>      state 01 closes (on), 00 opens (off)
 *   checksum = (0xA0 + channel + state) & 0xff   e.g. A0 01 01 A2 / A0 01 00 A1
 * The boards acknowledge nothing and have no standard way to report their
 * state (a few vendors answer a 0xFF query, each differently), so get is
 * -ENOTSUP: powercut never pretends to know.
 *
 * The tty is opened once at open() (raw, no flow control, CLOCAL so modem
 * lines do not matter) and kept: reopening re-asserts DTR/RTS, and some
 * adapters glitch on that. A write that fails because the USB device went
 * away reopens it once. Writes are non-blocking under poll(), and we wait
 * (bounded) until the kernel has shifted the frame out, so on/off return
 * when the command has left the host: ~4 ms of wire time at 9600 baud, then
 * the relay's own few milliseconds to move its contacts.
 */
#include "relay/relay_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "common/tty.h"

#define LCUS_START	0xA0
#define LCUS_CH_MAX	8

struct lcus_priv {
	char device[PATH_MAX];
	int channel, baud, timeout_ms;
	int fd;
};

static const char *const lcus_keys[] = { "driver", "device", "channel", "baud", "timeout_ms" };

/* The rates an LCUS board may be set to (common/tty.h has the speeds). */
static int lcus_speed(int baud, speed_t *out)
{
	return baud <= 115200 && !pc_tty_speed((uint32_t)baud, out) ? 0 : -EINVAL;
}

static int lcus_check(json_object *cfg, char *err, size_t errlen)
{
	speed_t sp;
	int rc;

	rc = relay_check_keys(cfg, "lcus", lcus_keys, PC_ARRAY_SIZE(lcus_keys), err, errlen);
	if (!rc)
		rc = relay_check_string(cfg, "device", 1,
					"the board's tty, like \"/dev/ttyUSB0\" or a /dev/serial/by-id/ link", err,
					errlen);
	if (!rc)
		rc = relay_check_int(cfg, "channel", 1, LCUS_CH_MAX, err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "baud", 1, 115200, err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "timeout_ms", 1, RELAY_MS_MAX, err, errlen);
	if (rc)
		return rc;
	if (lcus_speed((int)relay_cfg_int(cfg, "baud", 9600), &sp) < 0)
		return pc_fail(err, errlen, -EINVAL, "baud: expected one of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200 "
			 "(LCUS boards use 9600), got %" PRId64, relay_cfg_int(cfg, "baud", 0));
	return 0;
}

/* Open the tty raw 8N1 at the configured speed; 0 or -errno with r->err set. */
static int lcus_tty_open(struct relay *r, struct lcus_priv *p)
{
	char why[PATH_MAX + 128];
	int fd;

	fd = pc_tty_open(p->device, (uint32_t)p->baud, PC_TTY_NONBLOCK, why, sizeof(why));
	if (fd == -ENOTTY) {
		relay_errf(r, "%s; check relay.device", why);
		return fd;
	}
	if (fd < 0) {
		relay_errf(r, "%s; check relay.device (is the board plugged in? `ls /dev/serial/by-id/`) and that "
			   "you may use it (the dialout group)", why);
		return fd;
	}
	tcflush(fd, TCIOFLUSH);
	p->fd = fd;
	return 0;
}

static int lcus_open(struct relay *r, json_object *cfg, const struct relay_ctx *ctx)
{
	struct lcus_priv *p = calloc(1, sizeof(*p));
	int rc;

	if (!p) {
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	pc_strlcpy(p->device, relay_cfg_str(cfg, "device", ""), sizeof(p->device));
	p->channel = (int)relay_cfg_int(cfg, "channel", 1);
	p->baud = (int)relay_cfg_int(cfg, "baud", 9600);
	p->timeout_ms = (int)relay_cfg_int(cfg, "timeout_ms", 2000);
	p->fd = -1;
	rc = lcus_tty_open(r, p);
	if (rc < 0) {
		free(p);
		return rc;
	}
	r->priv = p;
	return 0;
}

/* Write the whole frame, then wait until the UART has sent it; by the deadline. */
static int lcus_write(struct lcus_priv *p, const unsigned char *frame, size_t len, uint64_t deadline)
{
	size_t done = 0;
	int queued = 0;

	while (done < len) {
		struct pollfd pfd = { .fd = p->fd, .events = POLLOUT };
		ssize_t n = write(p->fd, frame + done, len - done);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (poll(&pfd, 1, relay_ms_left(deadline)) == 0)
			return -ETIMEDOUT;
	}
	/* No tcdrain(): it cannot be bounded. Poll the output queue instead. */
	for (;;) {
		if (ioctl(p->fd, TIOCOUTQ, &queued) < 0 || queued == 0)
			return 0;
		if (relay_ms_left(deadline) == 0)
			return -ETIMEDOUT;
		pc_sleep_us(1000);
	}
}

static int lcus_switch(struct relay *r, int on)
{
	struct lcus_priv *p = r->priv;
	uint64_t deadline = pc_now_ms() + (uint64_t)p->timeout_ms;
	unsigned char frame[4] = { LCUS_START, (unsigned char)p->channel, (unsigned char)on, 0 };
	int rc;

	frame[3] = (unsigned char)((frame[0] + frame[1] + frame[2]) & 0xff);
	if (p->fd < 0 && (rc = lcus_tty_open(r, p)) < 0)
		return rc;
	rc = lcus_write(p, frame, sizeof(frame), deadline);
	if (rc == -EIO || rc == -ENXIO || rc == -ENODEV) {
		/* Unplugged and back (or a USB reset): one fresh open. */
		close(p->fd);
		p->fd = -1;
		rc = lcus_tty_open(r, p);
		if (rc == 0)
			rc = lcus_write(p, frame, sizeof(frame), deadline);
	}
	if (rc == -ETIMEDOUT) {
		relay_errf(r, "sending '%s' to %s took more than %d ms (is something holding the port, or flow "
			   "control on?); raise relay.timeout_ms or check the board", on ? "on" : "off", p->device,
			   p->timeout_ms);
		return rc;
	}
	if (rc < 0) {
		if (!r->err[0])
			relay_errf(r, "sending '%s' to %s: %s; check the USB cable and relay.device",
				   on ? "on" : "off", p->device, strerror(-rc));
		return rc;
	}
	return 0;
}

static int lcus_on(struct relay *r)
{
	return lcus_switch(r, 1);
}

static int lcus_off(struct relay *r)
{
	return lcus_switch(r, 0);
}

static int lcus_get(struct relay *r)
{
	relay_errf(r, "LCUS boards do not report their relay state; the power state cannot be read back");
	return -ENOTSUP;
}

static void lcus_close(struct relay *r)
{
	struct lcus_priv *p = r->priv;

	if (!p)
		return;
	if (p->fd >= 0)
		close(p->fd);
	free(p);
	r->priv = NULL;
}

static int lcus_ident(json_object *cfg, char *buf, size_t len)
{
	return relay_ident_device("lcus", cfg, buf, len);
}

const struct relay_ops relay_lcus_ops = {
	.name = "lcus",
	.check = lcus_check,
	.open = lcus_open,
	.on = lcus_on,
	.off = lcus_off,
	.get = lcus_get,
	.close = lcus_close,
	.ident = lcus_ident,
	.caps = RELAY_CAP_HARDWARE,
};

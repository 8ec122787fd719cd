/*
 * relay_hidrelay.c - dcttech-style USB HID relay boards ("USBRelay2" etc.,
 * V-USB firmware, USB ID 16c0:05df) through /dev/hidrawN.
 *
 * The protocol is two HID feature reports (as in usbrelay and the vendor's
 * hidusb-relay-cmd):
 *   set:  HIDIOCSFEATURE, 9 bytes: report id 0, 0xFF (close = on) or 0xFD
 *         (open = off), the channel (1-8), six zeros
 *   read: HIDIOCGFEATURE, 9 bytes asked with report id 1; the board answers
 *         8 bytes: its 5-character serial in bytes 0-4, and in byte 7 the
 *         state of all relays, bit channel-1 set when that relay is on
 * The product string ends in the number of relays ("USBRelay2"); open()
 * checks the board is one of these and that the channel exists.
 *
 * A HID feature request is a USB control transfer: the ioctl blocks until
 * the board answers or the kernel gives up (5 s). So that a hung board
 * cannot hold the harness longer than timeout_ms, each operation runs in a
 * short-lived child process (open, ioctls, close) that reports back through
 * a pipe; past the deadline the child is SIGKILLed and reaped (bounded). The
 * device is opened per operation, so a board that re-enumerated behind a
 * stable udev link keeps working.
 *
 * After switching, the state byte is read back: a board that ignored the
 * command is an error, not a silent pass.
 */
#include "relay/relay_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/hidraw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define HIDR_VENDOR	0x16c0
#define HIDR_PRODUCT	0x05df
#define HIDR_ON		0xFF
#define HIDR_OFF	0xFD
#define HIDR_REPORT	9	/* report id + 8 data bytes */
#define HIDR_STATE_BYTE	7
#define HIDR_CH_MAX	8

struct hidr_priv {
	char device[PATH_MAX];
	int channel, timeout_ms;
	pid_t stuck;		/* a child we SIGKILLed but could not reap yet */
};

/* What a child does, and what it reports back. */
enum hidr_op { HIDR_PROBE, HIDR_SET, HIDR_GET };

struct hidr_reply {
	int err;		/* 0 or an errno */
	int step;		/* which call failed, for the message */
	struct hidraw_devinfo info;
	char name[128];
	unsigned char report[HIDR_REPORT];
	int len;		/* bytes HIDIOCGFEATURE returned */
};

enum { STEP_OPEN = 1, STEP_INFO, STEP_NAME, STEP_SET, STEP_GET };

static const char *const hidr_steps[] = { "", "open", "HIDIOCGRAWINFO", "HIDIOCGRAWNAME", "HIDIOCSFEATURE",
					  "HIDIOCGFEATURE" };

static const char *const hidr_keys[] = { "driver", "device", "channel", "timeout_ms" };

static int hidr_check(json_object *cfg, char *err, size_t errlen)
{
	int rc;

	rc = relay_check_keys(cfg, "hidrelay", hidr_keys, PC_ARRAY_SIZE(hidr_keys), err, errlen);
	if (!rc)
		rc = relay_check_string(cfg, "device", 1, "the board's hidraw node, like \"/dev/hidraw0\"", err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "channel", 1, HIDR_CH_MAX, err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "timeout_ms", 1, RELAY_MS_MAX, err, errlen);
	return rc;
}

/* In the child: do op on a fresh fd, fill the reply. */
static void hidr_child_op(const struct hidr_priv *p, enum hidr_op op, int on, struct hidr_reply *rep)
{
	unsigned char set[HIDR_REPORT] = { 0 };
	int fd = open(p->device, O_RDWR | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		rep->err = errno;
		rep->step = STEP_OPEN;
		return;
	}
	if (op == HIDR_PROBE) {
		if (ioctl(fd, HIDIOCGRAWINFO, &rep->info) < 0) {
			rep->err = errno;
			rep->step = STEP_INFO;
			goto out;
		}
		if (ioctl(fd, HIDIOCGRAWNAME(sizeof(rep->name) - 1), rep->name) < 0) {
			rep->err = errno;
			rep->step = STEP_NAME;
			goto out;
		}
	}
	if (op == HIDR_SET) {
		set[0] = 0;
		set[1] = on ? HIDR_ON : HIDR_OFF;
		set[2] = (unsigned char)p->channel;
		if (ioctl(fd, HIDIOCSFEATURE(sizeof(set)), set) < 0) {
			rep->err = errno;
			rep->step = STEP_SET;
			goto out;
		}
	}
	/* Every op ends by reading the state (and serial) back. */
	memset(rep->report, 0, sizeof(rep->report));
	rep->report[0] = 1;
	rep->len = ioctl(fd, HIDIOCGFEATURE(sizeof(rep->report)), rep->report);
	if (rep->len < 0) {
		rep->err = errno;
		rep->step = STEP_GET;
	}
out:
	close(fd);
}

/* The helper's reply from fd by deadline: 0, -ETIMEDOUT, or -EPIPE when it ended without one. */
static int hidr_read_reply(int fd, struct hidr_reply *rep, uint64_t deadline)
{
	size_t got = 0;
	int rc = 0;

	while (got < sizeof(*rep)) {
		struct pollfd w = { .fd = fd, .events = POLLIN };
		ssize_t n;

		rc = poll(&w, 1, relay_ms_left(deadline));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc == 0)
			return -ETIMEDOUT;
		n = read(fd, (char *)rep + got, sizeof(*rep) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPIPE;
		got += (size_t)n;
		rc = 0;
	}
	return rc;
}

/* What the helper said: the step that failed, or a state report too short to read. */
static int hidr_reply_check(struct relay *r, const struct hidr_priv *p, const struct hidr_reply *rep)
{
	if (rep->err) {
		if (rep->step == STEP_OPEN)
			relay_errf(r, "cannot open %s: %s; check relay.device (is the board plugged in?) and that "
				   "you may use it (a udev rule giving the hidraw node to your group)", p->device,
				   strerror(rep->err));
		else
			relay_errf(r, "%s on %s failed: %s; replug the board or check relay.device",
				   hidr_steps[rep->step], p->device, strerror(rep->err));
		return -rep->err;
	}
	if (rep->len < HIDR_STATE_BYTE + 1) {
		relay_errf(r, "%s answered a %d-byte state report, expected 8; is it a dcttech-style relay?",
			   p->device, rep->len);
		return -EPROTO;
	}
	return 0;
}

/* What the child of hidr_run does, and where it answers. */
struct hidr_job {
	struct hidr_priv *p;
	enum hidr_op op;
	int on, rd, wr;
};

static void hidr_child(void *arg)
{
	struct hidr_job *j = arg;
	struct hidr_reply out;

	close(j->rd);
	memset(&out, 0, sizeof(out));
	hidr_child_op(j->p, j->op, j->on, &out);
	/* One small write on a pipe is atomic; _exit skips the parent's atexit work. */
	_exit(write(j->wr, &out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : 1);
}

/*
 * Run op in a child bounded by timeout_ms. 0 with *rep filled, or -errno
 * with r->err set (-ETIMEDOUT: the child was killed).
 */
static int hidr_run(struct relay *r, struct hidr_priv *p, enum hidr_op op, int on, struct hidr_reply *rep)
{
	uint64_t deadline = pc_now_ms() + (uint64_t)p->timeout_ms;
	int pfd[2], rc = 0, status;
	struct hidr_job job;
	struct pc_spawn s;
	pid_t pid;

	if (p->stuck && relay_reap(p->stuck, NULL, 0) == 0)
		p->stuck = 0;
	memset(rep, 0, sizeof(*rep));
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		rc = -errno;
		relay_errf(r, "cannot make a pipe: %s", strerror(-rc));
		return rc;
	}
	pc_spawn_init(&s);
	job = (struct hidr_job){ .p = p, .op = op, .on = on, .rd = pfd[0], .wr = pfd[1] };
	rc = pc_spawn_fn(&pid, &s, hidr_child, &job);
	if (rc < 0) {
		relay_errf(r, "fork: %s", strerror(-rc));
		close(pfd[0]);
		close(pfd[1]);
		return rc;
	}
	close(pfd[1]);
	rc = hidr_read_reply(pfd[0], rep, deadline);
	close(pfd[0]);
	if (rc < 0)
		kill(pid, SIGKILL);
	/* A child stuck in an uninterruptible USB wait dies when the kernel
	 * gives up; reap it on a later call rather than wait here. */
	if (relay_reap(pid, &status, rc < 0 ? RELAY_REAP_MS : (uint64_t)p->timeout_ms + RELAY_REAP_MS) < 0)
		p->stuck = pid;
	if (rc == -ETIMEDOUT) {
		relay_errf(r, "%s did not answer within %d ms (the request was abandoned); replug the board, "
			   "or raise relay.timeout_ms", p->device, p->timeout_ms);
		return rc;
	}
	if (rc < 0) {
		relay_errf(r, "the helper process for %s died without an answer", p->device);
		return -EIO;
	}
	return hidr_reply_check(r, p, rep);
}

/* The number of relays from the product string ("... USBRelay2"), or 0. */
static int hidr_count(const char *name)
{
	const char *s = strstr(name, "USBRelay");

	return s && s[8] >= '1' && s[8] <= '8' ? s[8] - '0' : 0;
}

static int hidr_open(struct relay *r, json_object *cfg, const struct relay_ctx *ctx)
{
	struct hidr_priv *p = calloc(1, sizeof(*p));
	struct hidr_reply rep;
	int rc, count;

	if (!p) {
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	pc_strlcpy(p->device, relay_cfg_str(cfg, "device", ""), sizeof(p->device));
	p->channel = (int)relay_cfg_int(cfg, "channel", 1);
	p->timeout_ms = (int)relay_cfg_int(cfg, "timeout_ms", 2000);
	rc = hidr_run(r, p, HIDR_PROBE, 0, &rep);
	if (rc < 0)
		goto fail;
	rep.name[sizeof(rep.name) - 1] = 0;
	count = hidr_count(rep.name);
	/* 16c0:05df is V-USB's shared ID: the product string tells relays apart. */
	if ((rep.info.vendor & 0xffff) != HIDR_VENDOR || (rep.info.product & 0xffff) != HIDR_PRODUCT || !count) {
		relay_errf(r, "%s is \"%s\" (USB %04x:%04x), not a dcttech-style USBRelay board (16c0:05df, "
			   "\"USBRelayN\"); check relay.device", p->device, rep.name, rep.info.vendor & 0xffff,
			   rep.info.product & 0xffff);
		rc = -ENODEV;
		goto fail;
	}
	if (p->channel > count) {
		relay_errf(r, "channel %d: %s (\"%s\") has %d relay%s; check relay.channel", p->channel, p->device,
			   rep.name, count, count == 1 ? "" : "s");
		rc = -EINVAL;
		goto fail;
	}
	r->priv = p;
	return 0;
fail:
	free(p);
	return rc;
}

static int hidr_state(const struct hidr_priv *p, const struct hidr_reply *rep)
{
	return (rep->report[HIDR_STATE_BYTE] >> (p->channel - 1)) & 1;
}

static int hidr_switch(struct relay *r, int on)
{
	struct hidr_priv *p = r->priv;
	struct hidr_reply rep;
	int rc = hidr_run(r, p, HIDR_SET, on, &rep);

	if (rc < 0)
		return rc;
	if (hidr_state(p, &rep) != on) {
		relay_errf(r, "%s did not switch channel %d %s (state byte 0x%02x after the command); "
			   "replug the board", p->device, p->channel, on ? "on" : "off", rep.report[HIDR_STATE_BYTE]);
		return -EIO;
	}
	return 0;
}

static int hidr_on(struct relay *r)
{
	return hidr_switch(r, 1);
}

static int hidr_off(struct relay *r)
{
	return hidr_switch(r, 0);
}

static int hidr_get(struct relay *r)
{
	struct hidr_priv *p = r->priv;
	struct hidr_reply rep;
	int rc = hidr_run(r, p, HIDR_GET, 0, &rep);

	return rc < 0 ? rc : hidr_state(p, &rep);
}

static void hidr_close(struct relay *r)
{
	struct hidr_priv *p = r->priv;

	if (!p)
		return;
	if (p->stuck)
		relay_reap(p->stuck, NULL, RELAY_REAP_MS);
	free(p);
	r->priv = NULL;
}

static int hidr_ident(json_object *cfg, char *buf, size_t len)
{
	return relay_ident_device("hidrelay", cfg, buf, len);
}

const struct relay_ops relay_hidrelay_ops = {
	.name = "hidrelay",
	.check = hidr_check,
	.open = hidr_open,
	.on = hidr_on,
	.off = hidr_off,
	.get = hidr_get,
	.close = hidr_close,
	.ident = hidr_ident,
	.caps = RELAY_CAP_HARDWARE,
};

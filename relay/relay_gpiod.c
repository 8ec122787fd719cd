/*
 * relay_gpiod.c - a relay board wired to a GPIO line, through libgpiod.
 *
 * The line is requested as an output at open(), driven OFF from the first
 * instant (ON for a holder switched on by hand: relay_ctx.open_state), and
 * the request is held for the relay's whole life: a released line is no
 * longer driven (gpio-sim lets it fall to its pull, real chips do as they
 * please), so letting go between operations could switch the board; which
 * is why `powercut relay on` leaves it to a holder (relay_hold.h, RELAY_CAP_HOLD).
 * on/off set the logical value (active_low makes the kernel invert it), get
 * reads it back from the request and compares it with what we set. Opened
 * to observe (`powercut relay get`), the line is requested as is: no
 * direction, no value, so reading never drives it.
 *
 * libgpiod changed its whole API between 1.x (Debian 12) and 2.x; which one
 * is used is decided at build time from pkg-config (PC_GPIOD_API=1 or 2).
 * The few calls that differ live in the gl_* functions below; the rest of
 * the driver does not know which API it runs on. Built without libgpiod, the
 * driver still validates its config but open() says how to get it.
 *
 * GPIO ioctls do not block (a line on an I2C expander takes a bus transfer,
 * bounded by the bus driver), so there is no timeout_ms here; settle_ms is
 * how long on/off wait for the relay's contacts after switching.
 */
#include "relay/relay_priv.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef PC_GPIOD_API
#include <gpiod.h>
#endif

#define GPIOD_SETTLE_MAX	10000
#define GPIOD_LINE_MAX		65535

static const char *const gpiod_keys[] = { "driver", "chip", "line", "active_low", "settle_ms" };

static int gpiod_check(json_object *cfg, char *err, size_t errlen)
{
	json_object *v;
	int rc;

	rc = relay_check_keys(cfg, "gpiod", gpiod_keys, PC_ARRAY_SIZE(gpiod_keys), err, errlen);
	if (!rc)
		rc = relay_check_string(cfg, "chip", 1,
					"the GPIO chip: a path like \"/dev/gpiochip0\", a name like \"gpiochip0\" or its label",
					err, errlen);
	if (rc)
		return rc;
	if (!json_object_object_get_ex(cfg, "line", &v))
		return pc_fail(err, errlen, -EINVAL, "line: missing; give the line offset (an integer) or the line name (a string)");
	if (json_object_is_type(v, json_type_int)) {
		rc = relay_check_int(cfg, "line", 0, GPIOD_LINE_MAX, err, errlen);
	} else if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0) {
		rc = pc_fail(err, errlen, -EINVAL, "line: expected an offset (integer) or a line name (string), got %s",
			     relay_json_text(v));
	}
	if (!rc)
		rc = relay_check_bool(cfg, "active_low", err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "settle_ms", 0, GPIOD_SETTLE_MAX, err, errlen);
	return rc;
}

/* The relay's identity as configured, when the chip cannot be resolved. */
static int gpiod_ident_raw(json_object *cfg, char *buf, size_t len)
{
	json_object *line = NULL;

	json_object_object_get_ex(cfg, "line", &line);
	snprintf(buf, len, "gpiod:%s:%s", relay_cfg_str(cfg, "chip", "?"), line ? json_object_get_string(line) : "?");
	return 0;
}

#ifndef PC_GPIOD_API

static int gpiod_open(struct relay *r, json_object *cfg, const struct relay_ctx *ctx)
{
	relay_errf(r, "this powercut was built without libgpiod; install libgpiod-dev (and pkg-config) "
		   "and rebuild, or use the 'command' driver with gpioset");
	return -ENOTSUP;
}

static int gpiod_unreachable(struct relay *r)
{
	relay_errf(r, "built without libgpiod");
	return -ENOTSUP;
}

static void gpiod_close(struct relay *r)
{
}

const struct relay_ops relay_gpiod_ops = {
	.name = "gpiod",
	.check = gpiod_check,
	.open = gpiod_open,
	.on = gpiod_unreachable,
	.off = gpiod_unreachable,
	.get = gpiod_unreachable,
	.close = gpiod_close,
	.caps = RELAY_CAP_HOLD | RELAY_CAP_HARDWARE,
	.ident = gpiod_ident_raw,
};

#else /* PC_GPIOD_API */

#if PC_GPIOD_API != 1 && PC_GPIOD_API != 2
#error "PC_GPIOD_API must be 1 (libgpiod 1.x) or 2 (libgpiod 2.x)"
#endif

struct gpiod_priv {
	char chip_path[PATH_MAX];
	char chip_desc[96];		/* "gpiochip0 [pinctrl-bcm2711]" for messages */
	char consumer[32];
	unsigned int offset;
	int active_low, settle_ms;
	int value;			/* what we last set: 1 on, 0 off */
	int observe;			/* requested as is, to read only (RELAY_OPEN_OBSERVE) */
	struct gpiod_chip *chip;
#if PC_GPIOD_API == 1
	struct gpiod_line *line;
#else
	struct gpiod_line_request *req;
#endif
};

/* --- the calls that differ between libgpiod 1.x and 2.x ------------------ */

/* Name, label and line count of an open chip; 0 or -errno. */
static int gl_chip_info(struct gpiod_chip *chip, char *name, size_t nlen, char *label, size_t llen,
			unsigned int *nlines)
{
#if PC_GPIOD_API == 1
	pc_strlcpy(name, gpiod_chip_name(chip), nlen);
	pc_strlcpy(label, gpiod_chip_label(chip), llen);
	*nlines = gpiod_chip_num_lines(chip);
	return 0;
#else
	struct gpiod_chip_info *info = gpiod_chip_get_info(chip);

	if (!info)
		return -errno;
	pc_strlcpy(name, gpiod_chip_info_get_name(info), nlen);
	pc_strlcpy(label, gpiod_chip_info_get_label(info), llen);
	*nlines = (unsigned int)gpiod_chip_info_get_num_lines(info);
	gpiod_chip_info_free(info);
	return 0;
#endif
}

/* Offset of the line called name, or -errno (-ENOENT: no such line). */
static int gl_find_line(struct gpiod_chip *chip, const char *name)
{
#if PC_GPIOD_API == 1
	struct gpiod_line *line = gpiod_chip_find_line(chip, name);

	if (!line)
		return errno ? -errno : -ENOENT;
	return (int)gpiod_line_offset(line);
#else
	int off = gpiod_chip_get_line_offset_from_name(chip, name);

	return off < 0 ? (errno ? -errno : -ENOENT) : off;
#endif
}

/* Who holds the line now, into buf ("" if free or unknown). */
static void gl_line_consumer(struct gpiod_chip *chip, unsigned int offset, char *buf, size_t len)
{
#if PC_GPIOD_API == 1
	struct gpiod_line *line = gpiod_chip_get_line(chip, offset);
	const char *c = line ? gpiod_line_consumer(line) : NULL;

	pc_strlcpy(buf, c ? c : "", len);
#else
	struct gpiod_line_info *info = gpiod_chip_get_line_info(chip, offset);
	const char *c = info && gpiod_line_info_is_used(info) ? gpiod_line_info_get_consumer(info) : NULL;

	pc_strlcpy(buf, c ? c : "", len);
	gpiod_line_info_free(info);
#endif
}

/* Request the line as an output driven to p->value from the first instant
 * or, observing, as it is: neither direction nor level is touched (the
 * uAPI changes the direction only when a request names one). 0 or -errno. */
static int gl_request(struct gpiod_priv *p)
{
#if PC_GPIOD_API == 1
	struct gpiod_line_request_config rc = {
		.consumer = p->consumer,
		.request_type = p->observe ? GPIOD_LINE_REQUEST_DIRECTION_AS_IS : GPIOD_LINE_REQUEST_DIRECTION_OUTPUT,
		.flags = p->active_low ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0,
	};

	p->line = gpiod_chip_get_line(p->chip, p->offset);
	if (!p->line || gpiod_line_request(p->line, &rc, p->value) < 0) {
		p->line = NULL;
		return -errno;
	}
	return 0;
#else
	struct gpiod_line_settings *ls = gpiod_line_settings_new();
	struct gpiod_line_config *lc = gpiod_line_config_new();
	struct gpiod_request_config *rc = gpiod_request_config_new();
	int err = -ENOMEM;

	if (!ls || !lc || !rc)
		goto out;
	/* observing: the settings' default direction, AS_IS, changes nothing */
	if (!p->observe &&
	    (gpiod_line_settings_set_direction(ls, GPIOD_LINE_DIRECTION_OUTPUT) < 0 ||
	     gpiod_line_settings_set_output_value(ls, p->value ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE) < 0)) {
		err = -errno;
		goto out;
	}
	gpiod_line_settings_set_active_low(ls, p->active_low);
	if (gpiod_line_config_add_line_settings(lc, &p->offset, 1, ls) < 0) {
		err = -errno;
		goto out;
	}
	gpiod_request_config_set_consumer(rc, p->consumer);
	p->req = gpiod_chip_request_lines(p->chip, rc, lc);
	err = p->req ? 0 : -errno;
out:
	gpiod_request_config_free(rc);
	gpiod_line_config_free(lc);
	gpiod_line_settings_free(ls);
	return err;
#endif
}

static int gl_set(struct gpiod_priv *p, int value)
{
#if PC_GPIOD_API == 1
	return gpiod_line_set_value(p->line, value) < 0 ? -errno : 0;
#else
	return gpiod_line_request_set_value(p->req, p->offset,
					    value ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE) < 0 ? -errno : 0;
#endif
}

/* The logical value (1/0) or -errno. */
static int gl_get(struct gpiod_priv *p)
{
#if PC_GPIOD_API == 1
	int v = gpiod_line_get_value(p->line);
#else
	int v = gpiod_line_request_get_value(p->req, p->offset);
#endif
	return v < 0 ? -errno : !!v;
}

static void gl_release(struct gpiod_priv *p)
{
#if PC_GPIOD_API == 1
	if (p->line)
		gpiod_line_release(p->line);
	p->line = NULL;
#else
	if (p->req)
		gpiod_line_request_release(p->req);
	p->req = NULL;
#endif
	if (p->chip)
		gpiod_chip_close(p->chip);
	p->chip = NULL;
}

/* --- finding the chip and the line ----------------------------------------- */

static int gpiod_is_chip_entry(const struct dirent *d)
{
	return strncmp(d->d_name, "gpiochip", 8) == 0;
}

/*
 * "chip" is a path, a /dev name, or a label. Labels are what stays stable
 * across boots (gpiochip numbers follow probe order), so a label is looked
 * up among all chips and must match exactly one.
 */
static int gpiod_find_chip(struct relay *r, struct gpiod_priv *p, const char *chip)
{
	struct dirent **list = NULL;
	char seen[200] = "", name[32], label[64];
	size_t seenlen = 0;
	unsigned int nlines;
	struct stat st;
	int n, matches = 0;

	if (strchr(chip, '/')) {
		pc_strlcpy(p->chip_path, chip, sizeof(p->chip_path));
		return 0;
	}
	snprintf(p->chip_path, sizeof(p->chip_path), "/dev/%s", chip);
	if (lstat(p->chip_path, &st) == 0)
		return 0;
	n = scandir("/dev", &list, gpiod_is_chip_entry, alphasort);
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		struct gpiod_chip *c;

		snprintf(path, sizeof(path), "/dev/%s", list[i]->d_name);
		c = gpiod_chip_open(path);
		if (c && gl_chip_info(c, name, sizeof(name), label, sizeof(label), &nlines) == 0) {
			if (strcmp(label, chip) == 0 && matches++ == 0)
				pc_strlcpy(p->chip_path, path, sizeof(p->chip_path));
			if (seenlen < sizeof(seen))
				seenlen += (size_t)snprintf(seen + seenlen, sizeof(seen) - seenlen, "%s%s [%s]",
							    seenlen ? ", " : "", name, label);
		}
		if (c)
			gpiod_chip_close(c);
		free(list[i]);
	}
	free(list);
	if (matches == 1)
		return 0;
	if (matches > 1) {
		relay_errf(r, "chip '%s': %d GPIO chips have that label; give relay.chip as a path (%s)", chip,
			   matches, seen);
		return -EINVAL;
	}
	relay_errf(r, "chip '%s': no /dev/%s and no GPIO chip labelled so (found: %s); check relay.chip "
		   "(`gpiodetect` lists the chips)", chip, chip, seen[0] ? seen : "none");
	return -ENOENT;
}

static int gpiod_find_line(struct relay *r, struct gpiod_priv *p, json_object *line, unsigned int nlines)
{
	int off;

	if (json_object_is_type(line, json_type_int)) {
		off = (int)json_object_get_int64(line);
		if ((unsigned int)off >= nlines) {
			relay_errf(r, "line %d: %s has %u lines (0-%u); check relay.line", off, p->chip_desc, nlines,
				   nlines ? nlines - 1 : 0);
			return -EINVAL;
		}
		p->offset = (unsigned int)off;
		return 0;
	}
	off = gl_find_line(p->chip, json_object_get_string(line));
	if (off < 0) {
		relay_errf(r, "no line named '%s' on %s: %s; check relay.line (`gpioinfo` lists the names)",
			   json_object_get_string(line), p->chip_desc, strerror(-off));
		return off == -ENOENT ? -EINVAL : off;
	}
	p->offset = (unsigned int)off;
	return 0;
}

/* --- the ops --------------------------------------------------------------- */

/*
 * An output request names the level to drive from the first instant, and
 * the uAPI applies it, but a chip's driver may not: the AST2600's
 * (gpio-aspeed) writes the data latch and then the direction, and QEMU's
 * model of that controller drops a latch written while the pin is an input,
 * so the pin drives its old level until the next set (t-vm-gpiohost.sh saw
 * `powercut relay on` report ON with the pin low). So the level is read back
 * right after the request and, if it is not what was asked, set once more
 * and read again; a line that still disagrees is driven by something else.
 */
static int gpiod_settle_request(struct relay *r, struct gpiod_priv *p)
{
	int v = gl_get(p), rc;

	if (v == p->value)
		return 0;
	if (v >= 0) {
		rc = gl_set(p, p->value);
		v = rc < 0 ? rc : gl_get(p);
	}
	if (v < 0) {
		relay_errf(r, "cannot read back line %u of %s after requesting it: %s", p->offset, p->chip_desc,
			   strerror(-v));
		return v;
	}
	if (v != p->value) {
		relay_errf(r, "line %u of %s reads back %s after it was requested %s and set again; something "
			   "else drives it (check `gpioinfo` and the wiring)", p->offset, p->chip_desc,
			   v ? "on" : "off", p->value ? "on" : "off");
		return -EIO;
	}
	return 0;
}

static int gpiod_open(struct relay *r, json_object *cfg, const struct relay_ctx *ctx)
{
	struct gpiod_priv *p = calloc(1, sizeof(*p));
	char name[32], label[64], user[64];
	unsigned int nlines;
	json_object *line = NULL;
	int rc;

	if (!p) {
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	p->active_low = relay_cfg_bool(cfg, "active_low", 0);
	p->observe = ctx && ctx->open_state == RELAY_OPEN_OBSERVE;
	p->value = ctx && ctx->open_state == RELAY_OPEN_ON;
	p->settle_ms = (int)relay_cfg_int(cfg, "settle_ms", 0);
	/* The kernel keeps 31 characters of a consumer label. */
	snprintf(p->consumer, sizeof(p->consumer), "powercut:%.22s", r->board);
	json_object_object_get_ex(cfg, "line", &line);
	rc = gpiod_find_chip(r, p, relay_cfg_str(cfg, "chip", ""));
	if (rc < 0)
		goto fail;
	p->chip = gpiod_chip_open(p->chip_path);
	if (!p->chip) {
		rc = -errno;
		relay_errf(r, "cannot open GPIO chip %s: %s; check relay.chip and that you may use it "
			   "(root, or the gpio group)", p->chip_path, strerror(-rc));
		goto fail;
	}
	rc = gl_chip_info(p->chip, name, sizeof(name), label, sizeof(label), &nlines);
	if (rc < 0) {
		relay_errf(r, "cannot read GPIO chip %s: %s", p->chip_path, strerror(-rc));
		goto fail;
	}
	snprintf(p->chip_desc, sizeof(p->chip_desc), "%.31s [%.60s]", name, label);
	rc = gpiod_find_line(r, p, line, nlines);
	if (rc < 0)
		goto fail;
	rc = gl_request(p);
	if (rc < 0) {
		gl_line_consumer(p->chip, p->offset, user, sizeof(user));
		if (rc == -EBUSY)
			relay_errf(r, "line %u of %s is busy (held by '%s'); stop whatever holds it "
				   "(`gpioinfo` shows consumers)", p->offset, p->chip_desc, user[0] ? user : "?");
		else
			relay_errf(r, "cannot request line %u of %s%s: %s", p->offset, p->chip_desc,
				   p->observe ? " to read it" : " as an output", strerror(-rc));
		goto fail;
	}
	if (!p->observe) {
		rc = gpiod_settle_request(r, p);
		if (rc < 0)
			goto fail;
	}
	r->priv = p;
	return 0;
fail:
	gl_release(p);
	free(p);
	return rc;
}

static int gpiod_set(struct relay *r, int value)
{
	struct gpiod_priv *p = r->priv;
	int rc;

	if (p->observe) {
		relay_errf(r, "line %u of %s was opened only to read it", p->offset, p->chip_desc);
		return -EPERM;
	}
	rc = gl_set(p, value);
	if (rc < 0) {
		relay_errf(r, "cannot set line %u of %s %s: %s; is the chip still there?", p->offset, p->chip_desc,
			   value ? "on" : "off", strerror(-rc));
		return rc;
	}
	p->value = value;
	if (p->settle_ms)
		pc_sleep_us((uint64_t)p->settle_ms * 1000);
	return 0;
}

static int gpiod_on(struct relay *r)
{
	return gpiod_set(r, 1);
}

static int gpiod_off(struct relay *r)
{
	return gpiod_set(r, 0);
}

static int gpiod_get(struct relay *r)
{
	struct gpiod_priv *p = r->priv;
	int v = gl_get(p);

	if (v < 0) {
		relay_errf(r, "cannot read line %u of %s: %s", p->offset, p->chip_desc, strerror(-v));
		return v;
	}
	if (!p->observe && v != p->value) {
		relay_errf(r, "line %u of %s reads back %s but powercut set it %s; something else drives it "
			   "(check `gpioinfo` and the wiring)", p->offset, p->chip_desc, v ? "on" : "off",
			   p->value ? "on" : "off");
		return -EIO;
	}
	return v;
}

/*
 * "gpiod:gpiochip1:3": the chip's kernel name and the line's offset, however
 * the section names them (a path, a label, a line name), so two
 * configurations naming one line by different names still share its lock.
 * Opening a chip requests no line. As configured when it cannot be resolved
 * (open() then says why).
 */
static int gpiod_ident(json_object *cfg, char *buf, size_t len)
{
	struct gpiod_priv *p = calloc(1, sizeof(*p));
	struct relay *r = calloc(1, sizeof(*r));
	char name[32], label[64];
	unsigned int nlines;
	json_object *line = NULL;
	int ok = 0;

	json_object_object_get_ex(cfg, "line", &line);
	if (p && r && line && gpiod_find_chip(r, p, relay_cfg_str(cfg, "chip", "")) == 0 &&
	    (p->chip = gpiod_chip_open(p->chip_path)) &&
	    gl_chip_info(p->chip, name, sizeof(name), label, sizeof(label), &nlines) == 0 &&
	    gpiod_find_line(r, p, line, nlines) == 0) {
		snprintf(buf, len, "gpiod:%s:%u", name, p->offset);
		ok = 1;
	}
	if (p && p->chip)
		gpiod_chip_close(p->chip);
	free(p);
	free(r);
	return ok ? 0 : gpiod_ident_raw(cfg, buf, len);
}

static void gpiod_close(struct relay *r)
{
	struct gpiod_priv *p = r->priv;

	if (!p)
		return;
	gl_release(p);
	free(p);
	r->priv = NULL;
}

const struct relay_ops relay_gpiod_ops = {
	.name = "gpiod",
	.check = gpiod_check,
	.open = gpiod_open,
	.on = gpiod_on,
	.off = gpiod_off,
	.get = gpiod_get,
	.close = gpiod_close,
	.caps = RELAY_CAP_HOLD | RELAY_CAP_HARDWARE,
	.ident = gpiod_ident,
};

#endif /* PC_GPIOD_API */

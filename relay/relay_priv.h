/*
 * relay_priv.h - small helpers shared by the relay drivers (not by callers).
 *
 * Every driver validates its own "relay" section the same way (an object,
 * only known keys, typed values in range), writes errors the same way and
 * reaps its children the same way; these live here once so the messages a
 * user reads are identical across drivers. Header-only and static: each
 * driver file stays self-contained behind its ops table.
 */
#ifndef PC_RELAY_PRIV_H
#define PC_RELAY_PRIV_H

#include "relay/relay.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/json.h"
#include "common/spawn.h"
#include "common/util.h"

#define RELAY_MS_MAX	3600000	/* an hour: any longer timeout is a typo */
#define RELAY_REAP_MS	2000	/* after SIGKILL a child is gone at once; bound it anyway */

/* Fill r->err (common/util.c's pc_vfail fills every error buffer); paths
 * make messages long, and truncating one beats failing. */
static inline void relay_errf(struct relay *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void relay_errf(struct relay *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pc_vfail(r->err, sizeof(r->err), 0, fmt, ap);
	va_end(ap);
}

/* A value as JSON text, for "got ..." in messages. */
static inline const char *relay_json_text(json_object *v)
{
	return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
}

/*
 * The section is an object (or absent) holding only keys[] and, when it
 * names one, "driver" equal to driver. keys[] lists "driver" itself, so the
 * message "unknown key 'X' (valid: driver, ...)" comes out in table order.
 */
static inline int relay_check_keys(json_object *cfg, const char *driver, const char *const *keys, size_t nkeys,
				   char *err, size_t errlen)
{
	json_object *v;

	if (!cfg)
		return 0;
	if (!json_object_is_type(cfg, json_type_object))
		return pc_fail(err, errlen, -EINVAL, "expected an object");
	json_object_object_foreach(cfg, key, val) {
		char valid[256];
		size_t i, n = 0;

		(void)val;
		for (i = 0; i < nkeys; i++)
			if (strcmp(key, keys[i]) == 0)
				break;
		if (i < nkeys)
			continue;
		valid[0] = 0;
		for (i = 0; i < nkeys && n < sizeof(valid); i++)
			n += (size_t)snprintf(valid + n, sizeof(valid) - n, "%s%s", i ? ", " : "", keys[i]);
		return pc_fail(err, errlen, -EINVAL, "unknown key '%s' (valid: %s)", key, valid);
	}
	if (json_object_object_get_ex(cfg, "driver", &v) &&
	    (!json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), driver))) {
		return pc_fail(err, errlen, -EINVAL, "driver: expected \"%s\"", driver);
	}
	return 0;
}

/* An optional integer key within [min, max]. */
static inline int relay_check_int(json_object *cfg, const char *key, int64_t min, int64_t max, char *err,
				  size_t errlen)
{
	json_object *v;
	int64_t x;

	if (!cfg || !json_object_object_get_ex(cfg, key, &v))
		return 0;
	x = json_object_get_int64(v);
	if (!json_object_is_type(v, json_type_int) || x < min || x > max)
		return pc_fail(err, errlen, -EINVAL, "%s: expected an integer from %" PRId64 " to %" PRId64 ", got %s", key, min,
			 max, relay_json_text(v));
	return 0;
}

/* An optional true/false key. */
static inline int relay_check_bool(json_object *cfg, const char *key, char *err, size_t errlen)
{
	json_object *v;

	if (!cfg || !json_object_object_get_ex(cfg, key, &v) || json_object_is_type(v, json_type_boolean))
		return 0;
	return pc_fail(err, errlen, -EINVAL, "%s: expected true or false, got %s", key, relay_json_text(v));
}

/* A non-empty string key; what says what it holds, for the messages. */
static inline int relay_check_string(json_object *cfg, const char *key, int required, const char *what,
				     char *err, size_t errlen)
{
	json_object *v;

	if (!cfg || !json_object_object_get_ex(cfg, key, &v)) {
		if (!required)
			return 0;
		return pc_fail(err, errlen, -EINVAL, "%s: missing; give %s", key, what);
	}
	if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
		return pc_fail(err, errlen, -EINVAL, "%s: expected a non-empty string (%s), got %s", key, what, relay_json_text(v));
	return 0;
}

/* Getters for a section check() accepted (its types are right), on common/json.h's. */
static inline int64_t relay_cfg_int(json_object *cfg, const char *key, int64_t def)
{
	return pc_jint_or(cfg, key, def);
}

static inline int relay_cfg_bool(json_object *cfg, const char *key, int def)
{
	json_object *v = pc_jget(cfg, key);

	return v ? json_object_get_boolean(v) : def;
}

static inline const char *relay_cfg_str(json_object *cfg, const char *key, const char *def)
{
	return pc_jstr(cfg, key, def);
}

/*
 * "DRIVER:DEVICE:CHANNEL" for a relay on a device node (relay_ops.ident):
 * the node's real path, so /dev/serial/by-id/... and /dev/ttyUSB0 are one
 * relay; as configured when it does not resolve (open() says why then).
 */
static inline int relay_ident_device(const char *driver, json_object *cfg, char *buf, size_t len)
{
	const char *dev = relay_cfg_str(cfg, "device", "?");
	char *real = realpath(dev, NULL);

	snprintf(buf, len, "%s:%s:%" PRId64, driver, real ? real : dev, relay_cfg_int(cfg, "channel", 1));
	free(real);
	return 0;
}

/* Milliseconds left until deadline (pc_now_ms() based), 0 once it passed. */
static inline int relay_ms_left(uint64_t deadline)
{
	uint64_t now = pc_now_ms();

	return now >= deadline ? 0 : (int)(deadline - now);
}

/* waitpid() on our own child for at most ms; 0, -ETIMEDOUT or -errno
 * (common/spawn.c: pc_reap). */
static inline int relay_reap(pid_t pid, int *status, uint64_t ms)
{
	return pc_reap(pid, status, ms);
}

/*
 * Cut a board run by a child of ours: SIGKILL its whole process group, then
 * reap the leader within RELAY_REAP_MS. *pid becomes 0 once it is gone (also
 * when someone else reaped it). what names it in errors ("agent", "QEMU"),
 * hint says what it may be stuck on. 0, or -errno / -ETIMEDOUT with r->err
 * set; after a timeout the kill is pending and a later call reaps it.
 */
static inline int relay_kill_group(struct relay *r, pid_t *pid, const char *what, const char *hint)
{
	int rc;

	if (kill(-*pid, SIGKILL) < 0 && errno != ESRCH) {
		rc = -errno;
		relay_errf(r, "kill %s group %d: %s", what, (int)*pid, strerror(-rc));
		return rc;
	}
	rc = relay_reap(*pid, NULL, RELAY_REAP_MS);
	if (rc == -ETIMEDOUT) {
		relay_errf(r, "%s pid %d still not gone %d ms after SIGKILL; it is stuck in the kernel%s, check dmesg",
			   what, (int)*pid, RELAY_REAP_MS, hint);
		return rc;
	}
	*pid = 0;
	return 0;
}

/* The last non-empty line of s, trimmed, into buf; returns buf. */
static inline const char *relay_last_line(const char *s, char *buf, size_t len)
{
	size_t end = strlen(s), start;

	while (end && (s[end - 1] == '\n' || s[end - 1] == '\r' || s[end - 1] == ' ' || s[end - 1] == '\t'))
		end--;
	start = end;
	while (start && s[start - 1] != '\n')
		start--;
	if (end - start >= len)
		start = end - (len - 1);
	memcpy(buf, s + start, end - start);
	buf[end - start] = 0;
	return buf;
}

#endif

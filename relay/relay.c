/*
 * relay.c - the relay driver table and the wrappers every caller goes through.
 *
 * Drivers write only what went wrong into r->err ("'off' command timed out
 * after 10000 ms; check ..."); the wrappers here prefix the board and the
 * driver, so every message a user reads says which board and which relay.
 */
#include "relay/relay.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

/* Explicit and ordered: relay_names() lists them in this order, then the
 * drivers added from the rooms above (relay_register). */
static const struct relay_ops *const relay_drivers[] = {
	&relay_sim_ops,
	&relay_command_ops,
	&relay_gpiod_ops,
	&relay_hidrelay_ops,
	&relay_lcus_ops,
	&relay_pdudaemon_ops,
	&relay_sysrq_ops,
};

/* The virtual boards' qemu (vboard/vboard.h): relay/ names no driver of a
 * room above it; the program's top adds them at start-up. */
static const struct relay_ops *relay_added[4];
static size_t relay_nadded;
static char relay_names_buf[256];

/* The i-th driver, this file's first; NULL past the last. */
static const struct relay_ops *relay_nth(size_t i)
{
	if (i < PC_ARRAY_SIZE(relay_drivers))
		return relay_drivers[i];
	i -= PC_ARRAY_SIZE(relay_drivers);
	return i < relay_nadded ? relay_added[i] : NULL;
}

const struct relay_ops *relay_find(const char *name)
{
	const struct relay_ops *ops;

	if (!name)
		return NULL;
	for (size_t i = 0; (ops = relay_nth(i)); i++)
		if (strcmp(ops->name, name) == 0)
			return ops;
	return NULL;
}

int relay_register(const struct relay_ops *ops)
{
	const struct relay_ops *known = relay_find(ops->name);

	if (known)
		return known == ops ? 0 : -EEXIST;
	if (relay_nadded == PC_ARRAY_SIZE(relay_added))
		return -ENOSPC;
	relay_added[relay_nadded++] = ops;
	relay_names_buf[0] = 0;
	return 0;
}

const char *relay_names(void)
{
	const struct relay_ops *ops;
	size_t n = 0;

	if (relay_names_buf[0])
		return relay_names_buf;
	for (size_t i = 0; (ops = relay_nth(i)); i++) {
		int w = snprintf(relay_names_buf + n, sizeof(relay_names_buf) - n, "%s%s", i ? " " : "", ops->name);

		if (w < 0 || (size_t)w >= sizeof(relay_names_buf) - n)
			break;
		n += (size_t)w;
	}
	return relay_names_buf;
}

/* Turn the driver's bare detail in r->err into "board B: relay D: detail". */
static int relay_fail(struct relay *r, int rc)
{
	char detail[sizeof(r->err)];

	if (r->err[0])
		pc_strlcpy(detail, r->err, sizeof(detail));
	else
		snprintf(detail, sizeof(detail), "%s", strerror(-rc));
	snprintf(r->err, sizeof(r->err), "board %.63s: relay %.31s: %.400s", r->board,
		 r->ops ? r->ops->name : "?", detail);
	return rc;
}

static int relay_not_open(struct relay *r, const char *what)
{
	snprintf(r->err, sizeof(r->err), "board %s: relay: %s on a relay that is not open",
		 r->board[0] ? r->board : "?", what);
	return -EBADF;
}

int relay_open(struct relay *r, const char *driver, json_object *cfg, const struct relay_ctx *ctx,
	       char *err, size_t errlen)
{
	const struct relay_ops *ops = relay_find(driver);
	char detail[sizeof(r->err)];
	int rc;

	memset(r, 0, sizeof(*r));
	pc_strlcpy(r->board, ctx && ctx->board ? ctx->board : "?", sizeof(r->board));
	if (!ops)
		return pc_fail(err, errlen, -EINVAL, "board %s: unknown relay driver '%s' (valid: %s)", r->board,
			 driver ? driver : "(none)", relay_names());
	r->ops = ops;
	/* The config layer checks too; checking here lets drivers trust cfg. */
	rc = ops->check(cfg, detail, sizeof(detail));
	if (rc < 0) {
		snprintf(r->err, sizeof(r->err), "relay section: %.480s", detail);
		goto fail;
	}
	rc = ops->open(r, cfg, ctx);
	if (rc < 0)
		goto fail;
	return 0;
fail:
	relay_fail(r, rc);
	pc_strlcpy(err, r->err, errlen);
	r->ops = NULL;
	r->priv = NULL;
	return rc;
}

int relay_on(struct relay *r)
{
	int rc;

	if (!r->ops)
		return relay_not_open(r, "power on");
	r->err[0] = 0;
	rc = r->ops->on(r);
	return rc < 0 ? relay_fail(r, rc) : rc;
}

int relay_off(struct relay *r)
{
	int rc;

	if (!r->ops)
		return relay_not_open(r, "power off");
	r->err[0] = 0;
	rc = r->ops->off(r);
	return rc < 0 ? relay_fail(r, rc) : rc;
}

int relay_get(struct relay *r)
{
	int rc;

	if (!r->ops)
		return relay_not_open(r, "get state");
	r->err[0] = 0;
	rc = r->ops->get(r);
	return rc < 0 ? relay_fail(r, rc) : rc;
}

void relay_close(struct relay *r)
{
	if (!r || !r->ops)
		return;
	if (r->ops->close)
		r->ops->close(r);
	r->ops = NULL;
	r->priv = NULL;
}

int relay_host_fault(const char *driver, const struct relay_ctx *ctx, char *why, size_t len)
{
	const struct relay_ops *ops = driver ? relay_find(driver) : NULL;

	if (len)
		why[0] = 0;
	if (!ops || !ops->host_fault || !ctx || !ctx->state_dir || !ctx->state_dir[0])
		return 0;
	return ops->host_fault(ctx, why, len) == 1;
}

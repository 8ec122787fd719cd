/*
 * relay_sysrq.c - "cut" by having the board reboot itself without syncing.
 *
 * The agent on the board writes 'b' to /proc/sysrq-trigger: the kernel
 * reboots at once, without syncing or unmounting. What was in the page
 * cache and the device's volatile write cache at that instant is lost - a
 * crash test, not a power cut: the device itself keeps power, so a device
 * that flushes its cache on reset (most eMMC and SSDs do) passes tests it
 * would fail under a real cut. Use it when nothing can switch the power.
 *
 * The cut is delivered by the agent when the host sends it a "sysrq"
 * request; that protocol message is not there yet, so off() is -ENOTSUP and
 * says so rather than pretend. on() powers the board with an optional shell
 * command (relay.on, e.g. wake-on-LAN or a PDU outlet left on); run through
 * the command driver's ops, which already bound it by timeout_ms.
 */
#include "relay/relay_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sysrq_priv {
	struct relay cmd;	/* a command relay running relay.on, when given */
	int has_on;
};

static const char *const sysrq_keys[] = { "driver", "on", "timeout_ms" };

static int sysrq_check(json_object *cfg, char *err, size_t errlen)
{
	int rc;

	rc = relay_check_keys(cfg, "sysrq", sysrq_keys, PC_ARRAY_SIZE(sysrq_keys), err, errlen);
	if (!rc)
		rc = relay_check_string(cfg, "on", 0, "a shell command that powers the board on", err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "timeout_ms", 1, RELAY_MS_MAX, err, errlen);
	return rc;
}

static int sysrq_open(struct relay *r, json_object *cfg, const struct relay_ctx *ctx)
{
	struct sysrq_priv *p = calloc(1, sizeof(*p));
	json_object *cmd_cfg;
	int rc;

	if (!p) {
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	if (!relay_cfg_str(cfg, "on", NULL)) {
		r->priv = p;
		return 0;
	}
	/* The command driver wants an 'off' too; ours never runs it. */
	cmd_cfg = json_object_new_object();
	if (!cmd_cfg) {
		free(p);
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	json_object_object_add(cmd_cfg, "on", json_object_new_string(relay_cfg_str(cfg, "on", "")));
	json_object_object_add(cmd_cfg, "off", json_object_new_string("true"));
	json_object_object_add(cmd_cfg, "timeout_ms", json_object_new_int64(relay_cfg_int(cfg, "timeout_ms", 10000)));
	pc_strlcpy(p->cmd.board, r->board, sizeof(p->cmd.board));
	p->cmd.ops = &relay_command_ops;
	rc = relay_command_ops.check(cmd_cfg, r->err, sizeof(r->err));
	if (rc == 0)
		rc = relay_command_ops.open(&p->cmd, cmd_cfg, ctx);
	json_object_put(cmd_cfg);
	if (rc < 0) {
		if (p->cmd.err[0])
			pc_strlcpy(r->err, p->cmd.err, sizeof(r->err));
		free(p);
		return rc;
	}
	p->has_on = 1;
	r->priv = p;
	return 0;
}

static int sysrq_on(struct relay *r)
{
	struct sysrq_priv *p = r->priv;
	int rc;

	/* Without a command the board is simply always powered. */
	if (!p->has_on)
		return 0;
	p->cmd.err[0] = 0;
	pc_strlcpy(p->cmd.console, r->console, sizeof(p->cmd.console));
	rc = relay_command_ops.on(&p->cmd);
	if (rc < 0)
		pc_strlcpy(r->err, p->cmd.err, sizeof(r->err));
	return rc;
}

static int sysrq_off(struct relay *r)
{
	relay_errf(r, "a sysrq board has no power to switch: its cut is a reboot the agent triggers "
		   "(echo b > /proc/sysrq-trigger) when the harness sends it a crash request; nothing was "
		   "switched off here");
	return -ENOTSUP;
}

static int sysrq_get(struct relay *r)
{
	relay_errf(r, "the sysrq driver switches no power: the board stays powered, there is no state to read");
	return -ENOTSUP;
}

static void sysrq_close(struct relay *r)
{
	struct sysrq_priv *p = r->priv;

	if (!p)
		return;
	if (p->has_on)
		relay_command_ops.close(&p->cmd);
	free(p);
	r->priv = NULL;
}

const struct relay_ops relay_sysrq_ops = {
	.name = "sysrq",
	.check = sysrq_check,
	.open = sysrq_open,
	.on = sysrq_on,
	.off = sysrq_off,
	.get = sysrq_get,
	.close = sysrq_close,
	.caps = RELAY_CAP_NO_OFF,
};

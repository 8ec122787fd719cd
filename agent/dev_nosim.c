/*
 * dev_nosim.c - the "sim" backend of an agent built without the emulated
 * eMMC (`make agent SIM=0`): no sim/ object is linked, and a sim: device or
 * a --sim-* option is refused with a message saying so. It stands in for
 * dev_sim.c, with the same names, so nothing else changes.
 */
#include "agent/dev.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>

#define NOSIM "this agent was built without the sim board (make SIM=0); give it a file or block device"

static int nosim_open(struct dev *d, int for_write)
{
	(void)for_write;
	d->fd = -1;
	snprintf(d->err, sizeof(d->err), "sim:%s: %s", d->o.path ? d->o.path : "", NOSIM);
	return -ENOTSUP;
}

static void nosim_close(struct dev *d)
{
	(void)d;
}

static int nosim_create(const char *path, uint64_t size, char *err, size_t errlen)
{
	(void)size;
	return pc_fail(err, errlen, -ENOTSUP, "sim:%s: %s", path, NOSIM);
}

int dev_sim_opt(struct sim_opts **so, const char *name, const char *val, char *err, size_t errlen)
{
	(void)so;
	(void)name;
	(void)val;
	return pc_fail(err, errlen, -ENOTSUP, "%s", NOSIM);
}

void dev_sim_opts_free(struct sim_opts *so)
{
	(void)so;
}

const struct dev_ops dev_sim_ops = {
	.name = "sim",
	.prefix = "sim:",
	.caps = DEV_CAP_REGION_AT_0,
	.open = nosim_open,
	.close = nosim_close,
	.create = nosim_create,
};

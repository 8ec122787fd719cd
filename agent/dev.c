/*
 * dev.c - the table of device backends: which ops serve a device spec.
 */
#include "agent/dev.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The backends a spec can pick by prefix, then the default. */
static const struct dev_ops *const dev_backends[] = { &dev_sim_ops };

const struct dev_ops *dev_ops_for(const char *spec, const char **path)
{
	assert(spec && path);
	for (size_t i = 0; i < sizeof(dev_backends) / sizeof(dev_backends[0]); i++) {
		const char *p = dev_backends[i]->prefix;

		if (p && strncmp(spec, p, strlen(p)) == 0) {
			*path = spec + strlen(p);
			return dev_backends[i];
		}
	}
	*path = spec;
	return &dev_posix_ops;
}

int dev_write_check(struct dev *d, const char *what, uint64_t off, size_t len)
{
	/* written so that no sum can wrap: off + len is never formed */
	if (d->wlo < d->whi && off >= d->wlo && off < d->whi && len <= d->whi - off)
		return 0;
	snprintf(d->err, sizeof(d->err), "%s: refused a %s of %zu bytes at offset %" PRIu64 ": outside the "
		 "region [%" PRIu64 ", %" PRIu64 ") the agent may write (a bug, or a host asking for a "
		 "geometry the device does not hold)", d->o.path ? d->o.path : "?", what, len, off, d->wlo, d->whi);
	return -ERANGE;
}

int dev_write_window(struct dev *d, uint64_t lo, uint64_t hi)
{
	if (lo >= hi || lo < d->wlo || hi > d->whi) {
		snprintf(d->err, sizeof(d->err), "%s: write window [%" PRIu64 ", %" PRIu64 ") is not inside [%"
			 PRIu64 ", %" PRIu64 ")", d->o.path ? d->o.path : "?", lo, hi, d->wlo, d->whi);
		return -ERANGE;
	}
	d->wlo = lo;
	d->whi = hi;
	return 0;
}

/*
 * dev_window.c - the write window every backend checks right before a write
 * goes out (docs/devices.md): a write outside [wlo, whi) is refused. The
 * bottom of the device files: it calls no backend.
 */
#include "agent/dev.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

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

/*
 * dev_window.c - the one window of the device the agent may write (the
 * prepared region), and the check every backend makes before a write goes
 * out (docs/design.md section 4: the agent never writes outside its region).
 * Below the backends: dev_posix.c and dev_sim.c call it, dev.c picks them.
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

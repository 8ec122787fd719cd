/*
 * dev.c - the table of device backends: which ops serve a device spec.
 */
#include "agent/dev.h"

#include <assert.h>
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

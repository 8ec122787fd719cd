/*
 * dev.c - the table of device backends: which ops serve a device spec.
 */
#include "dev.h"

#include <assert.h>
#include <string.h>

#define SIM_PREFIX "sim:"

const struct dev_ops *dev_ops_for(const char *spec, const char **path)
{
	assert(spec && path);
	if (strncmp(spec, SIM_PREFIX, strlen(SIM_PREFIX)) == 0) {
		*path = spec + strlen(SIM_PREFIX);
		return &dev_sim_ops;
	}
	*path = spec;
	return &dev_posix_ops;
}

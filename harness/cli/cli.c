/*
 * cli.c - what the `powercut` commands share (cli.h).
 */
#include "harness/cli/cli.h"

#include "common/util.h"
#include "harness/campaign/config.h"

int cli_load(const char *path, struct campaign_cfg *cfg)
{
	char err[1024];
	int ret = config_load(path, cfg, err, sizeof(err));

	if (ret)
		pc_err("%s", err);
	return ret;
}

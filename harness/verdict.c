/*
 * verdict.c - the verdict vocabulary and the violation rule (verdict.h).
 */
#include "verdict.h"

#include <string.h>

#include "../common/record.h"

const char *const pc_class_names[PC_NCLASSES] = {
	"intact", "not_written", "lost_acked", "torn", "torn_sector",
	"corrupt", "misdirected", "stale", "collateral", "unreadable",
	"unclassified",
};

const char *const pc_outcome_names[PC_NOUTCOMES] = { "PASS", "FAIL", "BOOT_FAIL", "INFRA_ERROR" };

const char *const pc_ev_names[PC_NEV_KINDS] = {
	"power_on", "boot_stage", "rx", "rx_bad", "rx_stray", "verify", "work", "cut", "boot_fail", "infra",
	"final_boot_fail", "final_infra", "link_reject", "give_up", "run_end",
};

int pc_ev_from_name(const char *s)
{
	for (int i = 0; s && i < PC_NEV_KINDS; i++)
		if (!strcmp(s, pc_ev_names[i]))
			return i;
	return -1;
}

int pc_class_from_name(const char *s)
{
	for (int i = 0; s && i < PC_NCLASSES; i++)
		if (!strcmp(s, pc_class_names[i]))
			return i;
	return -1;
}

int pc_outcome_from_name(const char *s)
{
	for (int i = 0; s && i < PC_NOUTCOMES; i++)
		if (!strcmp(s, pc_outcome_names[i]))
			return i;
	return -1;
}

void pc_policy_default(struct pc_policy *p, int mode)
{
	p->torn = 0;
	p->torn_sector = mode == PC_MODE_FUA || mode == PC_MODE_FUA_FLUSH || mode == PC_MODE_RELWR;
	p->unclassified = 0;
}

int pc_is_violation(enum pc_class c, int acked, const struct pc_policy *p)
{
	switch (c) {
	case PC_CLS_INTACT:
	case PC_CLS_NOT_WRITTEN:
		return 0;
	case PC_CLS_TORN:
		return acked || p->torn;
	case PC_CLS_TORN_SECTOR:
		return acked || p->torn_sector;
	case PC_CLS_UNCLASSIFIED:
		return p->unclassified;
	default:
		return 1;
	}
}

int pc_class_always_violation(enum pc_class c)
{
	return c != PC_CLS_INTACT && c != PC_CLS_NOT_WRITTEN && c != PC_CLS_TORN && c != PC_CLS_TORN_SECTOR &&
	       c != PC_CLS_UNCLASSIFIED && c < PC_NCLASSES;
}

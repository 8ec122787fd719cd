/*
 * opts.c - the sim's options: the fault profiles by name, and the option
 * parser the agent's --sim-* options go through (emmc.h). The host links this
 * file alone (it checks a board's profile name), never the emulator.
 */
#include "sim/emmc.h"
#include "sim/opts_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/proto.h"
#include "common/util.h"

static const struct {
	const char *name;
	unsigned bit;
} sim_profiles[] = {
	{ "honest", SIM_P_HONEST },
	{ "lying-flush", SIM_P_LYING_FLUSH },
	{ "no-cache", SIM_P_NO_CACHE },
	{ "fua-ignored", SIM_P_FUA_IGNORED },
	{ "tearing-relwr", SIM_P_TEARING_RELWR },
	{ "subsector-tear", SIM_P_SUBSECTOR_TEAR },
	{ "paired-page", SIM_P_PAIRED_PAGE },
	{ "misdirect", SIM_P_MISDIRECT },
	{ "bitrot", SIM_P_BITROT },
	{ "stale", SIM_P_STALE },
	{ "brick", SIM_P_BRICK },
	{ "no-fua", SIM_P_NO_FUA },
	{ "wear", SIM_P_WEAR },
	{ "ack-early", SIM_P_ACK_EARLY },
};

int sim_profile_parse(const char *s, unsigned *bits, char *err, size_t errlen)
{
	char valid[256] = "", *copy, *tok, *save = NULL;
	unsigned b = 0;
	int ret = 0, n = 0;

	for (size_t i = 0; i < PC_ARRAY_SIZE(sim_profiles); i++) {
		strncat(valid, i ? ", " : "", sizeof(valid) - strlen(valid) - 1);
		strncat(valid, sim_profiles[i].name, sizeof(valid) - strlen(valid) - 1);
	}
	if (!s || !*s)
		return pc_fail(err, errlen, -EINVAL, "empty sim profile (valid: %s, joined by '+')", valid);
	copy = strdup(s);
	if (!copy)
		return pc_fail(err, errlen, -ENOMEM, "out of memory");
	/* strtok would skip empty parts; "a++b" is a typo we want to report */
	for (tok = copy; tok && !ret; tok = save) {
		size_t i;

		save = strchr(tok, '+');
		if (save)
			*save++ = 0;
		for (i = 0; i < PC_ARRAY_SIZE(sim_profiles); i++)
			if (strcmp(tok, sim_profiles[i].name) == 0)
				break;
		if (i == PC_ARRAY_SIZE(sim_profiles)) {
			ret = pc_fail(err, errlen, -EINVAL, "unknown sim profile '%s' in '%s' (valid: %s, joined by '+')",
				      tok, s, valid);
		} else if (sim_profiles[i].bit == SIM_P_HONEST && (n || save)) {
			ret = pc_fail(err, errlen, -EINVAL, "sim profile 'honest' cannot be combined with others in '%s'", s);
		}
		if (!ret)
			b |= sim_profiles[i].bit;
		n++;
	}
	free(copy);
	if (!ret)
		*bits = b;
	return ret;
}

const char *sim_profile_name(unsigned bits, char *buf, size_t len)
{
	size_t used = 0;

	if (!len)
		return buf;
	buf[0] = 0;
	if (!bits) {
		pc_strlcpy(buf, "honest", len);
		return buf;
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(sim_profiles); i++) {
		if (!(bits & sim_profiles[i].bit))
			continue;
		int n = snprintf(buf + used, len - used, "%s%s", used ? "+" : "", sim_profiles[i].name);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	return buf;
}

struct sim_opts *sim_opts_new(void)
{
	struct sim_opts *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->program_us = SIM_DEF_PROGRAM_US;
	o->cache_sectors = SIM_DEF_CACHE_SECTORS;
	o->seed = 1;
	o->rate = 0.01;
	return o;
}

void sim_opts_free(struct sim_opts *o)
{
	free(o);
}

/* cut-at flush:N[:US] or fua:N[:US]: the exact cut. */
static int opt_cut_at(struct sim_opts *o, const char *arg)
{
	char buf[64], *p, *q;
	uint64_t n, us = 0;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	pc_strlcpy(buf, arg, sizeof(buf));
	p = strchr(buf, ':');
	if (!p)
		return -EINVAL;
	*p++ = 0;
	q = strchr(p, ':');
	if (q)
		*q++ = 0;
	if (pc_parse_u64(p, 0, &n) || n < 1 || n > UINT32_MAX || (q && (pc_parse_u64(q, 0, &us) || us > 1000000)))
		return -EINVAL;
	if (!strcmp(buf, "flush"))
		o->cut_op = SIM_CUT_FLUSH;
	else if (!strcmp(buf, "fua"))
		o->cut_op = SIM_CUT_FUA;
	else
		return -EINVAL;
	o->cut_nth = (uint32_t)n;
	o->cut_delay_us = (uint32_t)us;
	return 0;
}

static int opt_bad(char *err, size_t errlen, const char *what)
{
	return pc_fail(err, errlen, -EINVAL, "%s", what);
}

int sim_opts_set(struct sim_opts *o, const char *name, const char *val, char *err, size_t errlen)
{
	uint64_t v;

	if (!strcmp(name, "profile"))
		return sim_profile_parse(val, &o->profile, err, errlen);
	if (!strcmp(name, "program-us")) {
		if (pc_parse_u64(val, 0, &v) || v > 1000000)
			return opt_bad(err, errlen, "expected 0..1000000");
		o->program_us = (uint32_t)v;
		return 0;
	}
	if (!strcmp(name, "cache-sectors")) {
		if (pc_parse_u64(val, 0, &v) || v > 1048576)
			return opt_bad(err, errlen, "expected 0..1048576");
		o->cache_sectors = (uint32_t)v;
		return 0;
	}
	if (!strcmp(name, "seed"))
		return pc_parse_seed(val, &o->seed) ?
			opt_bad(err, errlen, "expected an integer from 0 to 18446744073709551615") : 0;
	if (!strcmp(name, "rate")) {
		char *end;
		double r = strtod(val, &end);

		/* NaN passes here and is refused at power-on (sim_emmc_open) */
		if (*end || end == val || r < 0 || r > 1)
			return opt_bad(err, errlen, "expected a number from 0 to 1");
		o->rate = r;
		return 0;
	}
	if (!strcmp(name, "cut-after"))
		return pc_parse_u64(val, 0, &o->cut_after) ? opt_bad(err, errlen, "expected a sector count") : 0;
	if (!strcmp(name, "cut-at"))
		return opt_cut_at(o, val) ? opt_bad(err, errlen, "expected flush:N[:US] or fua:N[:US], "
						    "N 1..4294967295, US 0..1000000") : 0;
	if (!strcmp(name, "untimed")) {
		if (strcmp(val, "0") && strcmp(val, "1"))
			return opt_bad(err, errlen, "expected 0 or 1");
		o->untimed = val[0] == '1';
		return 0;
	}
	if (!strcmp(name, "keep-inputs")) {
		if (pc_parse_u64(val, 0, &v) || v > 1000)
			return opt_bad(err, errlen, "expected 0..1000 (power-ons whose inputs are kept; 0: none)");
		o->keep_inputs = (uint32_t)v;
		return 0;
	}
	return pc_fail(err, errlen, -ENOENT, "no sim option '%s' (profile, program-us, cache-sectors, seed, rate, cut-after, "
		 "cut-at, untimed, keep-inputs)", name);
}

unsigned sim_opts_profile(const struct sim_opts *o)
{
	return o->profile;
}

uint32_t sim_opts_program_us(const struct sim_opts *o)
{
	return o->program_us ? o->program_us : SIM_DEF_PROGRAM_US;
}

uint32_t sim_opts_cache_sectors(const struct sim_opts *o)
{
	return o->cache_sectors ? o->cache_sectors : SIM_DEF_CACHE_SECTORS;
}

uint64_t sim_opts_seed(const struct sim_opts *o)
{
	return o->seed;
}

double sim_opts_rate(const struct sim_opts *o)
{
	return o->rate;
}

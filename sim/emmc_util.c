/*
 * emmc_util.c - the small helpers both halves of the emulated eMMC use
 * (emmc.c, the device; emmc_power.c, what outlives a cut and the power-on
 * faults): the seeded generator and where a record starts. Below both, so
 * neither file calls back into the other.
 */
#include "sim/emmc.h"
#include "sim/emmc_int.h"

#include <stdint.h>

#include "common/record.h"
#include "common/util.h"

/* The seeded generator: splitmix64 over (seed, session), so runs reproduce. */
static uint64_t sim_rand(struct sim_emmc *e)
{
	e->rng += 0x9e3779b97f4a7c15ull;
	return pc_mix64(e->rng);
}

uint64_t sim_below(struct sim_emmc *e, uint64_t n)
{
	return n ? sim_rand(e) % n : 0;
}

/* True with probability rate (always at 1.0, never at 0). */
int sim_chance(struct sim_emmc *e)
{
	return (double)(sim_rand(e) >> 11) * 0x1p-53 < e->rate;
}

/* First LBA of the record holding sector lba, whose header says it is sector idx. */
uint64_t sim_rec_start(const struct sim_emmc *e, uint64_t lba, uint32_t idx)
{
	if (e->have_geom && lba >= e->slot_lo && lba < e->slot_hi) {
		uint32_t spr = pc_geom_spr(&e->g);

		return e->slot_lo + (lba - e->slot_lo) / spr * spr;
	}
	return lba >= e->slot_lo && idx <= lba - e->slot_lo ? lba - idx : lba;
}

/*
 * opts_int.h - the sim's options as the emulator reads them. Private to sim/
 * (opts.c fills them, emmc.c reads them); everyone else holds a struct
 * sim_opts * made by sim_opts_new() and set with sim_opts_set() (emmc.h).
 */
#ifndef PC_SIM_OPTS_INT_H
#define PC_SIM_OPTS_INT_H

#include <stdint.h>

#define SIM_DEF_PROGRAM_US	20u
#define SIM_DEF_CACHE_SECTORS	256u

#define SIM_CUT_FLUSH	1u
#define SIM_CUT_FUA	2u

struct sim_opts {
	unsigned profile;	/* SIM_P_* bits */
	uint32_t program_us;	/* time to program one sector (0: SIM_DEF_PROGRAM_US) */
	uint32_t cache_sectors;	/* volatile cache capacity in sectors (0: SIM_DEF_CACHE_SECTORS) */
	uint64_t seed;		/* for profiles that draw random numbers */
	double rate;		/* probability knob for profiles that use one (0..1) */
	uint64_t cut_after;	/* a deterministic cut: after this many sectors programmed in a
				 * power session, the board's process group is SIGKILLed (0: never) */
	/*
	 * An exact cut at the nth cache flush or FUA write of the power session
	 * (a campaign's cut plan "flush" or "fua"): the board's process group is
	 * SIGKILLed at the start of the flush, before it programs a sector, or
	 * inside the FUA write, after a seeded number of its sectors (1..n-1).
	 * cut_delay_us moves the cut that far into the operation, counted in
	 * program time: delay_us / program_us sectors programmed first.
	 */
	unsigned cut_op;	/* SIM_CUT_FLUSH or SIM_CUT_FUA; 0: none */
	uint32_t cut_nth;	/* 1..: which one of the session (0: none) */
	uint32_t cut_delay_us;
	/* Program at file speed, no program time (prepare: nothing a campaign
	 * measures; docs/sim.md "Timing"). */
	int untimed;
	/* Keep the inputs of a crash-state check of the last keep_inputs
	 * power-ons (sim/inputs.h; 0: none). */
	uint32_t keep_inputs;
};

#endif

/*
 * fuzz.h - what every fuzz target shares (docs/fuzzing.md).
 *
 * Each tests/fuzz/fuzz_<target>.c defines LLVMFuzzerTestOneInput (and may
 * define LLVMFuzzerInitialize). The same object links two ways: with clang's
 * libFuzzer (`make fuzz`, build/fuzz/fuzz-<target>), or with replay_main.c,
 * a plain driver that runs every corpus file through it once under ASan and
 * UBSan (`make fuzz-replay`, part of `make check`; gcc will do).
 *
 * A target must not depend on anything but its input: no clock, no random
 * numbers, no state carried from one input to the next.
 */
#ifndef PC_FUZZ_H
#define PC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant the input broke: a finding like a crash (abort, so both
 * libFuzzer and the replay driver stop and report it). */
#define FUZZ_CHECK(cond, ...)							\
	do {									\
		if (!(cond)) {							\
			fprintf(stderr, "%s:%d: fuzz invariant broken: %s: ",	\
				__FILE__, __LINE__, #cond);			\
			fprintf(stderr, __VA_ARGS__);				\
			fputc('\n', stderr);					\
			abort();						\
		}								\
	} while (0)

#endif

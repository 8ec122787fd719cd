/*
 * crc32c.h - CRC32C (Castagnoli), as used by iSCSI, ext4 and btrfs.
 *
 * The implementation is chosen once, at first use: SSE4.2 crc32 instructions
 * on x86-64, the ARMv8 CRC32 extension on aarch64 (when the CPU has it), or a
 * portable slice-by-8 table. All give identical results.
 */
#ifndef PC_CRC32C_H
#define PC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: start with crc = 0. Standard check value: "123456789" -> 0xe3069283. */
uint32_t pc_crc32c(uint32_t crc, const void *buf, size_t len);

/* The CRC32C (from 0) of each of four buffers of len bytes, computed together:
 * the same results as four pc_crc32c(0, b[k], len), faster on hardware. */
void pc_crc32c_x4(const uint8_t *const b[4], size_t len, uint32_t out[4]);

/* Each implementation, for tests and benchmarks. Hardware ones return the
 * table result when the CPU lacks the instructions (see pc_crc32c_impl_name). */
uint32_t pc_crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t pc_crc32c_hw(uint32_t crc, const void *buf, size_t len);
/* 1 when this CPU has a hardware CRC32C. */
int pc_crc32c_have_hw(void);
/* "sse4.2", "armv8-crc" or "table": the one pc_crc32c() uses. */
const char *pc_crc32c_impl_name(void);

#endif

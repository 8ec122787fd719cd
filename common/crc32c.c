/*
 * crc32c.c - CRC32C with run-time choice of hardware or table implementation.
 */
#include "common/crc32c.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

#define POLY 0x82f63b78u	/* reflected Castagnoli polynomial */

static uint32_t table[8][256];
static int table_ready;

static void table_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		table[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = table[0][n];
		for (int k = 1; k < 8; k++) {
			c = table[0][c & 0xff] ^ (c >> 8);
			table[k][n] = c;
		}
	}
	__atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

uint32_t pc_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
		table_init();	/* idempotent: racing initialisers write equal values */
	crc = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		w = __builtin_bswap64(w);
#endif
		w ^= crc;
		crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^
		      table[5][(w >> 16) & 0xff] ^ table[4][(w >> 24) & 0xff] ^
		      table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
		      table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
static int detect_hw(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	return (c & bit_SSE4_2) != 0;
}

__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t c = ~crc;

	while (len && ((uintptr_t)p & 7)) {
		c = _mm_crc32_u8((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
/* Four buffers at once: four independent chains keep the crc32 unit busy
 * (one instruction's latency is three cycles, its throughput one a cycle). */
__attribute__((target("sse4.2")))
static void crc_hw_x4(const uint8_t *const b[4], size_t len, uint32_t out[4])
{
	uint64_t c0 = 0xffffffffu, c1 = c0, c2 = c0, c3 = c0;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w0, w1, w2, w3;

		memcpy(&w0, b[0] + i, 8);
		memcpy(&w1, b[1] + i, 8);
		memcpy(&w2, b[2] + i, 8);
		memcpy(&w3, b[3] + i, 8);
		c0 = _mm_crc32_u64(c0, w0);
		c1 = _mm_crc32_u64(c1, w1);
		c2 = _mm_crc32_u64(c2, w2);
		c3 = _mm_crc32_u64(c3, w3);
	}
	for (; i < len; i++) {
		c0 = _mm_crc32_u8((uint32_t)c0, b[0][i]);
		c1 = _mm_crc32_u8((uint32_t)c1, b[1][i]);
		c2 = _mm_crc32_u8((uint32_t)c2, b[2][i]);
		c3 = _mm_crc32_u8((uint32_t)c3, b[3][i]);
	}
	out[0] = ~(uint32_t)c0;
	out[1] = ~(uint32_t)c1;
	out[2] = ~(uint32_t)c2;
	out[3] = ~(uint32_t)c3;
}
#define HW_X4 1
#define HW_NAME "sse4.2"
#elif defined(__aarch64__)
static int detect_hw(void)
{
	return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
}

__attribute__((target("+crc")))
static uint32_t crc_hw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t c = ~crc;

	while (len && ((uintptr_t)p & 7)) {
		c = __crc32cb(c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = __crc32cd(c, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __crc32cb(c, *p++);
	return ~c;
}
__attribute__((target("+crc")))
static void crc_hw_x4(const uint8_t *const b[4], size_t len, uint32_t out[4])
{
	uint32_t c0 = 0xffffffffu, c1 = c0, c2 = c0, c3 = c0;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w0, w1, w2, w3;

		memcpy(&w0, b[0] + i, 8);
		memcpy(&w1, b[1] + i, 8);
		memcpy(&w2, b[2] + i, 8);
		memcpy(&w3, b[3] + i, 8);
		c0 = __crc32cd(c0, w0);
		c1 = __crc32cd(c1, w1);
		c2 = __crc32cd(c2, w2);
		c3 = __crc32cd(c3, w3);
	}
	for (; i < len; i++) {
		c0 = __crc32cb(c0, b[0][i]);
		c1 = __crc32cb(c1, b[1][i]);
		c2 = __crc32cb(c2, b[2][i]);
		c3 = __crc32cb(c3, b[3][i]);
	}
	out[0] = ~c0;
	out[1] = ~c1;
	out[2] = ~c2;
	out[3] = ~c3;
}
#define HW_X4 1
#define HW_NAME "armv8-crc"
#else
static int detect_hw(void) { return 0; }
static uint32_t crc_hw(uint32_t crc, const void *buf, size_t len)
{
	return pc_crc32c_sw(crc, buf, len);
}
#define HW_NAME "table"
#endif

/* -1 unknown, 0 no, 1 yes */
static int have_hw = -1;

int pc_crc32c_have_hw(void)
{
	int h = __atomic_load_n(&have_hw, __ATOMIC_RELAXED);

	if (h < 0) {
		h = detect_hw();
		__atomic_store_n(&have_hw, h, __ATOMIC_RELAXED);
	}
	return h;
}

uint32_t pc_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return pc_crc32c_have_hw() ? crc_hw(crc, buf, len) : pc_crc32c_sw(crc, buf, len);
}

uint32_t pc_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return pc_crc32c_hw(crc, buf, len);
}

void pc_crc32c_x4(const uint8_t *const b[4], size_t len, uint32_t out[4])
{
#ifdef HW_X4
	if (pc_crc32c_have_hw()) {
		crc_hw_x4(b, len, out);
		return;
	}
#endif
	for (int k = 0; k < 4; k++)
		out[k] = pc_crc32c(0, b[k], len);
}

const char *pc_crc32c_impl_name(void)
{
	return pc_crc32c_have_hw() ? HW_NAME : "table";
}

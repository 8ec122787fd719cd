/*
 * bytes.h - the one set of little-endian byte codecs: a 16, 32 or 64-bit
 * value put into or got from bytes in little-endian order whatever the
 * host's, and a word in little-endian order (pc_le64word, for a word stored
 * whole). The on-disk formats (the record, the sim's and the virtual
 * boards' write logs) and the tests' readers use these; tools/lint-code
 * refuses a codec of its own elsewhere.
 */
#ifndef PC_BYTES_H
#define PC_BYTES_H

#include <stdint.h>

static inline void pc_put16(uint8_t *p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
static inline void pc_put32(uint8_t *p, uint32_t v)
{
	p[0] = v; p[1] = v >> 8; p[2] = v >> 16; p[3] = v >> 24;
}
static inline void pc_put64(uint8_t *p, uint64_t v)
{
	pc_put32(p, (uint32_t)v);
	pc_put32(p + 4, (uint32_t)(v >> 32));
}
static inline uint16_t pc_get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t pc_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t pc_get64(const uint8_t *p)
{
	return (uint64_t)pc_get32(p) | (uint64_t)pc_get32(p + 4) << 32;
}

/* A host word as the little-endian word stored whole (and back): the same
 * on a little-endian host, swapped on a big-endian one. */
static inline uint64_t pc_le64word(uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap64(v);
#else
	return v;
#endif
}

#endif

/* half.h — bit-exact conversions between f32 and the 16-bit float types bf16 and f16 (internal;
 * the public names are xir_f32_to_bf16 & co. in xir.h).
 *
 * These are the reference semantics every other implementation matches bit for bit: the
 * interpreter's reads, the .npy reader and writer, the test inputs, and the native code's loads
 * and stores (hardware conversions where the target has them, the same integer operations as
 * here where it does not — src/lower/convert.c).
 *
 *  - to f32: exact. bf16 is the upper half of an f32 (NaN bits kept as they are). An f16 NaN
 *    becomes a quiet f32 NaN with the same sign and the payload in the top fraction bits
 *    (F16C's vcvtph2ps does exactly this).
 *  - from f32: round to nearest, ties to even; IEEE overflow (to inf: bf16 beyond the f32 range
 *    rounding, f16 for |x| >= 65520); subnormal results exact (never flushed); NaN stays NaN,
 *    quiet, with its sign and the top payload bits (as AVX512_BF16's vcvtneps2bf16 and F16C's
 *    vcvtps2ph do). */
#ifndef XIR_UTIL_HALF_H
#define XIR_UTIL_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t xir__f32_bits(float x) {
  uint32_t b;
  memcpy(&b, &x, 4);
  return b;
}

static inline float xir__bits_f32(uint32_t b) {
  float x;
  memcpy(&x, &b, 4);
  return x;
}

static inline uint16_t xir__bf16_from_bits(uint32_t b) {
  if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40u); /* NaN: quiet */
  return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

static inline float xir__bf16_to_f32(uint16_t h) { return xir__bits_f32((uint32_t)h << 16); }
static inline uint16_t xir__f32_to_bf16(float x) { return xir__bf16_from_bits(xir__f32_bits(x)); }

static inline uint16_t xir__f16_from_bits(uint32_t b) {
  uint32_t s = (b >> 16) & 0x8000u, a = b & 0x7fffffffu, r;
  if (a > 0x7f800000u) {
    r = 0x7e00u | ((a >> 13) & 0x3ffu); /* NaN: quiet, the top 10 payload bits */
  } else if (a >= 0x477ff000u) {
    r = 0x7c00u; /* inf, and everything that rounds beyond 65504 */
  } else if (a >= 0x38800000u) {
    /* normal: rebias the exponent, round the 13 dropped bits to nearest even */
    uint32_t t = a - 0x38000000u;
    r = (t + 0xfffu + ((t >> 13) & 1u)) >> 13;
  } else {
    /* subnormal or zero: the 24-bit significand shifted right by 126 - e (>= 14), rounded to
     * nearest even; 31 is enough to give 0 for everything smaller */
    uint32_t e = a >> 23, sh = 126u - e, m = (a & 0x7fffffu) | 0x800000u;
    if (sh > 31u) sh = 31u;
    uint32_t q = m >> sh, rem = m - (q << sh), half = 1u << (sh - 1u);
    r = q + (rem > half || (rem == half && (q & 1u)));
  }
  return (uint16_t)(r | s);
}

static inline float xir__f16_to_f32(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu;
  if (em >= 0x7c00u) /* inf; NaN quiet */
    return xir__bits_f32(s | 0x7f800000u | (em > 0x7c00u ? 0x400000u : 0u) | ((em & 0x3ffu) << 13));
  if (em >= 0x0400u) return xir__bits_f32(s | ((em << 13) + 0x38000000u));
  /* subnormal: em * 2^-24, exact in f32 */
  float v = (float)em * 0x1p-24f;
  return s ? -v : v;
}

static inline uint16_t xir__f32_to_f16(float x) { return xir__f16_from_bits(xir__f32_bits(x)); }

#endif

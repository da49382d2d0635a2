/* rng.c — xoshiro256** seeded through splitmix64 (see rng.h).
 *
 * xoshiro256** and splitmix64 are by David Blackman and Sebastiano Vigna (public domain,
 * https://prng.di.unimi.it/). */
#include "rng.h"

#include <math.h>

#include "util.h"

/* Bit-exact results on every machine: no fused multiply-add may change a rounding. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#define XIR_NO_CONTRACT
#elif defined(__GNUC__)
#define XIR_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define XIR_NO_CONTRACT
#endif

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void xir__rng_seed(xir_rng *rng, uint64_t seed, uint64_t stream) {
  /* mix64 is a bijection, so for a fixed seed every stream gives a different splitmix start,
   * and for a fixed stream every seed does. */
  uint64_t sm = seed ^ mix64(stream + UINT64_C(0x6a09e667f3bcc909));
  for (int i = 0; i < 4; i++) {
    sm += UINT64_C(0x9e3779b97f4a7c15);
    rng->s[i] = mix64(sm);
  }
  if (!(rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3])) rng->s[0] = 1; /* never all zero */
}

uint64_t xir__rng_u64(xir_rng *rng) {
  uint64_t *s = rng->s;
  const uint64_t result = rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double xir__rng_double(xir_rng *rng) {
  return (double)(xir__rng_u64(rng) >> 11) * 0x1.0p-53; /* exact */
}

uint64_t xir__rng_below(xir_rng *rng, uint64_t n) {
  if (n == 0) return 0;
  uint64_t threshold = (0 - n) % n; /* 2^64 mod n: reject the biased low values */
  for (;;) {
    uint64_t x = xir__rng_u64(rng);
    if (x >= threshold) return x % n;
  }
}

XIR_NO_CONTRACT
xir_status xir__rng_fill_f32(xir_rng *rng, float *p, size_t n, float lo, float hi, xir_diag *d) {
  const double t = XIR_RNG_MIN_ABS;
  if (!rng || (!p && n))
    return xir__err(d, XIR_ERR_INVALID_ARG, "rng fill: NULL generator or buffer");
  if (!isfinite(lo) || !isfinite(hi) || lo > hi)
    return xir__err(d, XIR_ERR_INVALID_ARG, "rng fill: invalid range [%g, %g]", (double)lo,
                    (double)hi);
  double dlo = lo, dhi = hi;
  if (lo == hi) {
    if (fabs(dlo) < t)
      return xir__err(d, XIR_ERR_INVALID_ARG,
                      "rng fill: range [%g, %g] has no value with magnitude >= %g", dlo, dhi, t);
    for (size_t i = 0; i < n; i++) p[i] = lo;
    return XIR_OK;
  }
  /* The allowed set is [lo, hi] minus (-t, t): a negative part [lo, neg_hi] and a positive part
   * [pos_lo, hi], either possibly empty. One uniform draw over their total length picks a value;
   * that is exactly the distribution of re-drawing uniform [lo, hi] until |v| >= t. */
  double neg_len = 0, pos_lo = dlo > t ? dlo : t, pos_len = 0;
  if (dlo <= -t) {
    double neg_hi = dhi < -t ? dhi : -t;
    neg_len = neg_hi - dlo;
  }
  if (dhi >= t) pos_len = dhi - pos_lo;
  double total = neg_len + pos_len;
  if (!(total > 0))
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "rng fill: range [%g, %g] has no value with magnitude >= %g", dlo, dhi, t);
  for (size_t i = 0; i < n; i++) {
    float f;
    do {
      double y = xir__rng_double(rng) * total;
      double v;
      if (y < neg_len) {
        v = dlo + y;
      } else {
        double off = y - neg_len;
        v = pos_lo + off;
      }
      if (v > dhi) v = dhi;
      f = (float)v;
      /* Rounding to float is monotone and lo, hi are floats, so this never fails; it is the
       * re-draw guarantee spelled out. */
    } while (!(fabs((double)f) >= t && f >= lo && f <= hi));
    p[i] = f;
  }
  return XIR_OK;
}

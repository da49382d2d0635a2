/* rng.h — a small seeded, deterministic random generator (xoshiro256**, seeded via splitmix64).
 *
 * The same (seed, stream) pair yields the same sequence of bits on every machine, compiler and
 * optimization level: only 64-bit integer arithmetic and exactly rounded IEEE double operations
 * are used. Distinct streams of one seed are independent sequences (e.g. one stream per input
 * buffer of a kernel). An xir_rng is a plain value: copy it to fork a sequence; it is not
 * thread-safe to share one generator between threads. */
#ifndef XIR_RNG_H
#define XIR_RNG_H

#include <stddef.h>
#include <stdint.h>
#include "xir_status.h"

typedef struct xir_rng {
  uint64_t s[4]; /* xoshiro256** state; never all zero after xir__rng_seed */
} xir_rng;

/* The smallest magnitude xir__rng_fill_f32 produces. */
#define XIR_RNG_MIN_ABS 1e-3

/* Initializes rng from a seed and a stream number. Any values are allowed. */
void xir__rng_seed(xir_rng *rng, uint64_t seed, uint64_t stream);

/* The next 64 uniformly distributed bits. */
uint64_t xir__rng_u64(xir_rng *rng);

/* A uniform double in [0, 1): a multiple of 2^-53 (consumes one u64). */
double xir__rng_double(xir_rng *rng);

/* A uniform integer in [0, n) without modulo bias; 0 when n == 0. */
uint64_t xir__rng_below(xir_rng *rng, uint64_t n);

/* Fills p[0..n-1] with floats uniformly distributed over [lo, hi] minus the open interval
 * (-XIR_RNG_MIN_ABS, XIR_RNG_MIN_ABS): never exactly 0, never denormal, never NaN/inf. A value
 * that would fall outside (after rounding to float) is re-drawn. If lo == hi the buffer is filled
 * with lo (allowed when |lo| >= XIR_RNG_MIN_ABS).
 * XIR_ERR_INVALID_ARG (and p untouched) when rng is NULL, p is NULL with n > 0, lo or hi is not
 * finite, lo > hi, or [lo, hi] has no allowed value (e.g. [-1e-4, 1e-4]). */
xir_status xir__rng_fill_f32(xir_rng *rng, float *p, size_t n, float lo, float hi, xir_diag *d);

#endif

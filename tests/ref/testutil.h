/* testutil.h — small helpers shared by the C tests: guarded buffers with sentinels, and the
 * sanitizer pass's quick mode. */
#ifndef XIR_TESTUTIL_H
#define XIR_TESTUTIL_H
#include <stddef.h>
#include <stdint.h>

#define XIR_GUARD_FLOATS 64 /* sentinel floats on each side of a guarded buffer */

/* A float buffer of n elements with XIR_GUARD_FLOATS sentinel floats (a NaN bit pattern that no
 * kernel produces) before and after. data points at element 0. */
typedef struct guarded_f32 {
  float *base;
  float *data;
  size_t n;
} guarded_f32;

int guarded_alloc(guarded_f32 *g, size_t n);
/* 1 when every sentinel is intact. */
int guarded_intact(const guarded_f32 *g);
void guarded_free(guarded_f32 *g);

/* 1 when XIR_TEST_QUICK is set: scripts/test.sh sets it for the sanitizer pass, which looks for
 * memory errors in the library while the normal pass checks every candidate and shape, so the
 * tests may run a sample of their candidates and leave out their largest shapes there. */
int test_quick(void);
/* The first index of a loop over n candidates that runs every step-th one starting at
 * first % step (callers vary `first` across shapes and widths, so every candidate runs
 * somewhere), or 0 when that would run none. */
size_t thin_start(size_t n, size_t first, size_t step);

#endif

/* testutil.h — small helpers shared by the C tests: guarded buffers with sentinels. */
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

#endif

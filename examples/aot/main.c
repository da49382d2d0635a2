/* examples/aot/main.c — calling an ahead-of-time compiled kernel: no libxir, no LLVM.
 *
 *   xir compile rmsnorm --shape R=7,C=100 --emit-obj aot_rmsnorm.o \
 *       --emit-header aot_rmsnorm.h --header-alias aot_rmsnorm
 *   cc -O2 main.c aot_rmsnorm.o -lm -o main
 *
 * Runs the kernel on the calling thread, then again as two halves of its block range (what a
 * thread pool would do), and compares both with a plain double-precision RMSNorm. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "aot_rmsnorm.h"

enum { R = 7, C = 100 };

int main(void) {
  static float x[R * C], w[C], y[R * C], y2[R * C];
  for (int i = 0; i < R * C; i++) x[i] = (float)sin(0.37 * i + 1.0) * 3.0f;
  for (int j = 0; j < C; j++) w[j] = 0.5f + (float)j / C;
  if (aot_rmsnorm_run(x, w, y, 1e-5f) != 0) return 1;

  aot_rmsnorm_args a = {.x = x, .w = w, .y = y2, .eps = {.value = 1e-5f}};
  uint64_t half = aot_rmsnorm_BLOCKS / 2;
  if (aot_rmsnorm(&a, 0, half) != 0 || aot_rmsnorm(&a, half, aot_rmsnorm_BLOCKS) != 0) return 1;
  if (memcmp(y, y2, sizeof y) != 0) {
    printf("aot_example: the split run differs from the whole run\n");
    return 1;
  }
  double worst = 0;
  for (int r = 0; r < R; r++) {
    double ss = 0;
    for (int j = 0; j < C; j++) ss += (double)x[r * C + j] * x[r * C + j];
    double inv = 1.0 / sqrt(ss / C + 1e-5);
    for (int j = 0; j < C; j++) {
      double ref = x[r * C + j] * inv * w[j];
      double err = fabs(y[r * C + j] - ref) / (1e-6 + fabs(ref));
      if (!(err <= worst)) worst = err; /* a NaN makes worst NaN */
    }
  }
  if (!(worst < 1e-5)) {
    printf("aot_example: max relative error %g\n", worst);
    return 1;
  }
  printf("aot_example: ok  %s %s (%s), %llu blocks, max relative error %.2g\n", aot_rmsnorm_KERNEL,
         aot_rmsnorm_SHAPE, aot_rmsnorm_SYMBOL, (unsigned long long)aot_rmsnorm_BLOCKS, worst);
  return 0;
}

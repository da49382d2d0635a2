/* rmsnorm.c — xir from an installed package: load the built-in rmsnorm, plan it for this host,
 * JIT-compile the chosen candidate, launch it on a 2-worker runtime and compare with a plain C
 * loop. Prints "ok" and exits 0 when they agree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "xir_compile.h"
#include "xir_plan.h"
#include "xir_runtime.h"

enum { R = 64, C = 4096 };

#define CHECK(call)                                                             \
  do {                                                                          \
    if ((call) != XIR_OK) {                                                     \
      fprintf(stderr, "%s: %s\n", #call, d.msg);                                \
      return 1;                                                                 \
    }                                                                           \
  } while (0)

int main(void) {
  static float x[R * C], w[C], y[R * C];
  for (int i = 0; i < R * C; i++) x[i] = sinf((float)i * 0.01f);
  for (int j = 0; j < C; j++) w[j] = 1.0f + 0.001f * (float)j;

  xir_diag d = {0};
  xir_program *p;
  xir_shape s;
  xir_compiler *cc;
  xir_runtime *rt;
  xir_plan *pl;
  const xir_kernel *k;
  CHECK(xir_kernel_load("rmsnorm", &p, &d));
  CHECK(xir_shape_parse(p, "R=64,C=4096", &s, &d));
  CHECK(xir_compiler_create(NULL, &cc, &d));
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  ro.workers = 2;
  CHECK(xir_runtime_create(&ro, &rt, &d));
  xir_plan_options po;
  xir_plan_options_base(&po); /* the uncalibrated priors: no calibration run */
  po.width = xir_compiler_width(cc);
  po.workers = 2;
  po.local_lanes = 0;
  po.search_task_grain = 1;
  CHECK(xir_plan_make(p, &s, &po, &pl, &d));
  CHECK(xir_compile(cc, p, &s, &pl->entries[0].cand, &k, &d));
  xir_arg args[4] = {{.in = x}, {.in = w}, {.out = y}, {.use_default = 1}}; /* x, w, y, eps */
  void *slots = malloc(xir_kernel_args_size(k));
  CHECK(xir_kernel_pack_args(k, args, slots, &d));
  /* the task split, so that a task's last row prefetches this thread's next task's first row */
  uint64_t stride = xir_launch_task_stride(xir_runtime_workers(rt), xir_kernel_blocks(k),
                                           pl->entries[0].work.grain, 2);
  CHECK(xir_kernel_set_task_stride(k, slots, stride, &d));
  CHECK(xir_runtime_launch(rt, (xir_block_fn)xir_kernel_entry(k), slots, xir_kernel_blocks(k),
                           pl->entries[0].work.grain, 2, NULL, &d));

  double worst = 0;
  for (int r = 0; r < R; r++) {
    double ss = 0;
    for (int j = 0; j < C; j++) ss += (double)x[r * C + j] * x[r * C + j];
    double inv = 1.0 / sqrt(ss / C + 1e-5);
    for (int j = 0; j < C; j++) {
      double e = fabs(y[r * C + j] - x[r * C + j] * inv * w[j]);
      if (e > worst) worst = e;
    }
  }
  printf("xir %s: rmsnorm %dx%d max abs err %.3g: %s\n", xir_version(), R, C, worst,
         worst < 1e-4 ? "ok" : "FAIL");
  free(slots);
  xir_plan_free(pl);
  xir_runtime_destroy(rt);
  xir_compiler_destroy(cc);
  xir_program_free(p);
  return worst < 1e-4 ? 0 : 1;
}

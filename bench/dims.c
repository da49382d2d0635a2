/* dims.c — what launch-time dims cost and save (docs/lowering.md, "Launch-time dims").
 *
 *   bench_dims [rounds]
 *
 * 1. Speed, paired: for rmsnorm and softmax_mask at 129×768 and 1024×4096, the planner's
 *    candidate and grain (2 workers) compiled twice — as the bridge asks (R a launch argument)
 *    and with every dim compile-time (fixed_dims = all: the one-shape kernel of before) — and
 *    launched alternately in the same rounds; medians and the ratio per case. Both outputs are
 *    checked against the fp64 oracle first.
 * 2. Recompiles avoided: R = 1 … 256 for rmsnorm C = 768 and K = 1 … 256 for decode attention
 *    (Q = 1) through one compiler: how many compiles did real work, and the mean time of a
 *    reused xir_compile call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check.h"
#include "util/util.h"
#include "xir_compile.h"
#include "xir_plan.h"
#include "xir_runtime.h"

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int fail(const xir_diag *d) {
  char b[2048];
  fprintf(stderr, "bench_dims: %s\n", xir_diag_format(d, b, sizeof b));
  return 1;
}

static int speed(xir_compiler *cc, xir_runtime *rt, const char *kernel, const char *spec,
                 int rounds) {
  xir_program *p;
  xir_diag d;
  xir_shape s;
  if (xir_kernel_load(kernel, &p, &d) || xir_shape_parse(p, spec, &s, &d)) return fail(&d);
  xir_plan_options po;
  xir_plan_options_default(&po);
  po.workers = 2;
  po.width = xir_compiler_width(cc);
  xir_plan *pl;
  if (xir_plan_make(p, &s, &po, &pl, &d)) return fail(&d);
  xir_candidate cand = pl->entries[0].cand;
  uint32_t G = pl->entries[0].work.grain;
  xir_plan_free(pl);
  const xir_kernel *k[2];
  xir_candidate all = cand;
  all.fixed_dims = UINT32_MAX;
  if (xir_compile(cc, p, &s, &cand, &k[0], &d) || xir_compile(cc, p, &s, &all, &k[1], &d))
    return fail(&d);
  xir_case c;
  if (xir__case_init(&c, p, &s, 1, &d) || xir__case_oracle(&c, &d)) return fail(&d);
  uint64_t slots[2][XIR_MAX_ARG_SLOTS], blocks[2];
  for (int v = 0; v < 2; v++) {
    if (xir_kernel_pack_launch(k[v], &s, c.args, slots[v], &blocks[v], &d)) return fail(&d);
    xir__case_reset_outputs(&c);
    xir_launch_stats st;
    if (xir_runtime_launch(rt, (xir_block_fn)xir_kernel_entry(k[v]), slots[v], blocks[v], G, 2,
                           &st, &d))
      return fail(&d);
    for (int q = 0; q < xir_program_num_params(p); q++)
      if (c.ref[q] && !(xir__case_compare(&c, q, xir__kernel_tolerance(kernel)).pass &&
                        xir__case_sentinels_ok(&c))) {
        fprintf(stderr, "bench_dims: %s %s variant %d does not match the oracle\n", kernel, spec, v);
        return 1;
      }
  }
  double *t[2] = {malloc(sizeof(double) * (size_t)rounds), malloc(sizeof(double) * (size_t)rounds)};
  int reps = xir_shape_root_count(p, &s) > 1000 ? 4 : 64;
  for (int r = 0; r < rounds; r++)
    for (int vv = 0; vv < 2; vv++) {
      int v = (r & 1) ? 1 - vv : vv; /* alternate the order */
      double t0 = (double)xir__now_ns();
      for (int i = 0; i < reps; i++) {
        xir_launch_stats st;
        xir_runtime_launch(rt, (xir_block_fn)xir_kernel_entry(k[v]), slots[v], blocks[v], G, 2,
                           &st, NULL);
      }
      t[v][r] = ((double)xir__now_ns() - t0) / reps;
    }
  qsort(t[0], (size_t)rounds, sizeof(double), cmp_d);
  qsort(t[1], (size_t)rounds, sizeof(double), cmp_d);
  char nm[160];
  xir_candidate_name(p, &cand, nm, sizeof nm);
  double m0 = t[0][rounds / 2], m1 = t[1][rounds / 2];
  xir_kernel_info i0, i1;
  xir_kernel_get_info(k[0], &i0);
  xir_kernel_get_info(k[1], &i1);
  printf("%-16s %-34s %-24s G=%-10u launch-time dims %9.0f ns  all fixed %9.0f ns  ratio %.3f"
         "  (jit %.1f / %.1f ms)\n", kernel, spec, nm, G, m0, m1, m0 / m1, i0.jit_ms, i1.jit_ms);
  free(t[0]);
  free(t[1]);
  xir__case_free(&c);
  xir_program_free(p);
  return 0;
}

/* Compiles kernel at every shape of the sweep through one compiler; reports the real compiles. */
static int sweep(xir_compiler *cc, const char *kernel, const char *fmt, int n) {
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load(kernel, &p, &d)) return fail(&d);
  int compiled = 0;
  double reuse_ms = 0, jit_ms = 0;
  for (int i = 1; i <= n; i++) {
    char spec[128];
    snprintf(spec, sizeof spec, fmt, i);
    xir_shape s;
    if (xir_shape_parse(p, spec, &s, &d)) return fail(&d);
    uint8_t perm[XIR_MAX_ROOT] = {0, 1, 2};
    uint32_t W = xir_compiler_width(cc);
    xir_candidate c;
    if (xir_candidate_make(p, &s, W, W, strcmp(kernel, "rmsnorm") ? 1 : W, perm, &c, &d))
      return fail(&d);
    const xir_kernel *k;
    double t0 = (double)xir__now_ns();
    if (xir_compile(cc, p, &s, &c, &k, &d)) return fail(&d);
    double ms = ((double)xir__now_ns() - t0) / 1e6;
    xir_kernel_info info;
    xir_kernel_get_info(k, &info);
    if (info.cached) reuse_ms += ms;
    else {
      compiled++;
      jit_ms += ms;
    }
  }
  printf("%-13s %d shapes (%s): %d compiled (%.1f ms), %d reused (mean xir_compile call %.1f us)\n",
         kernel, n, fmt, compiled, jit_ms, n - compiled, n > compiled ? reuse_ms * 1e3 / (n - compiled) : 0);
  xir_program_free(p);
  return 0;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 41;
  if (rounds < 3) rounds = 3;
  xir_compiler_options o = {.no_kernel_cache = 1};
  xir_compiler *cc;
  xir_runtime *rt;
  xir_runtime_options ro;
  xir_diag d;
  xir_runtime_options_default(&ro);
  ro.workers = 2;
  if (xir_compiler_create(&o, &cc, &d) || xir_runtime_create(&ro, &rt, &d)) return fail(&d);
  printf("paired medians of %d rounds (2 workers, the planner's candidate and grain):\n", rounds);
  const char *ks[] = {"rmsnorm", "softmax_mask"}, *ss[] = {"R=129,C=768", "R=1024,C=4096"};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      if (speed(cc, rt, ks[i], ss[j], rounds)) return 1;
  if (speed(cc, rt, "attention", "B=1,HQ=8,HKV=2,Q=16,K=128,D=64,DV=64", rounds) ||
      speed(cc, rt, "attention", "B=1,HQ=8,HKV=2,Q=1,K=512,D=64,DV=64", rounds))
    return 1;
  if (sweep(cc, "rmsnorm", "R=%d,C=768", 256) ||
      sweep(cc, "attention", "B=1,HQ=8,HKV=2,Q=1,K=%d,D=64,DV=64", 256))
    return 1;
  xir_runtime_destroy(rt);
  xir_compiler_destroy(cc);
  return 0;
}

/* jit_time.c — JIT time and run time of small kernels under several pass pipelines.
 *
 * For each pipeline (and code generation level) it compiles, R times, a module of W-lane map
 * kernels (one vector math function applied over an array, see xir__vm_build_map_kernel), and
 * reports the median optimize / codegen+link / total milliseconds and the kernel's run time in
 * ns per element (best of several runs over 64 Ki elements). This is how the default pipeline in
 * src/lower/jit.h was chosen; the figures are in docs/vmath.md.
 *
 *   bench_jit_time [W] [repeats]      (W = host max by default)
 *   bench_jit_time --per-fn [W]       ns per element of each vector math function, plain and
 *                                     FMA variants side by side (xir__vm_set_fma); pow_ub is
 *                                     pow with a uniform base (xir__vm_pow_uniform_base, x[0]) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lower/jit.h"
#include "lower/vmath.h"
#include "util/util.h"

typedef void (*kern_fn)(const float *x, const float *y, float *out, int64_t nvec);

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
/* ns per element of every vector math function at width W (default pipeline), inputs in a range
 * where each function does real work. */
static int per_function(unsigned W) {
  enum { NEL = 1 << 16 };
  float *x = malloc(NEL * sizeof(float)), *y = malloc(NEL * sizeof(float)),
        *o = malloc(NEL * sizeof(float));
  xir__jit *jit;
  xir_diag d = {0};
  if (!x || !y || !o || xir__jit_create(NULL, &jit, &d)) return 1;
  for (int i = 0; i < NEL; i++) {
    x[i] = 0.01f + 20.0f * (float)i / NEL;
    y[i] = -2.0f + 4.0f * (float)((i * 7919) % NEL) / NEL;
  }
  /* The variants, interleaved per function, so that a before/after pair comes from one run:
   * "plain" (fmul/fadd, sin/cos/pow in fp64 lanes), "fma" (xir__vm_set_fma, host only) and
   * "x512" (fma plus xir__vm_set_avx512, where the host has AVX-512F+VL). */
  int nvar = !xir__vm_host_has_fma() ? 1 : xir__vm_host_has_avx512() ? 3 : 2;
  printf("W=%u: ns per element (best of 50 runs over %d elements)\n", W, NEL);
  printf("  %-8s %7s %7s %7s\n", "fn", "plain", nvar > 1 ? "fma" : "", nvar > 2 ? "x512" : "");
  for (int f = 0; f <= XIR__VM_COUNT; f++) { /* XIR__VM_COUNT: pow with a uniform base */
    double ns[3] = {0, 0, 0};
    for (int v = 0; v < nvar; v++) {
      xir__jit_module m;
      xir__vm *vm;
      const xir__jit_artifact *a;
      if (xir__jit_module_create(jit, "pf", &m, &d) || xir__vm_create(m.mod, NULL, &vm, &d))
        return 1;
      xir__vm_set_fma(vm, v > 0);
      xir__vm_set_avx512(vm, v > 1);
      if (f == XIR__VM_COUNT ? xir__vm_build_pow_uniform_kernel(vm, "k", W, &d)
                             : xir__vm_build_map_kernel(vm, "k", (xir__vm_fn)f, W, &d))
        return 1;
      xir__vm_destroy(vm);
      if (xir__jit_add(jit, &m, "k", NULL, &a, NULL, &d)) return 1;
      double best = 1e30;
      for (int rep = 0; rep < 50; rep++) {
        double t1 = now_ms();
        ((kern_fn)a->entry)(x, y, o, NEL / W);
        double dt = now_ms() - t1;
        if (dt < best) best = dt;
      }
      ns[v] = best * 1e6 / NEL;
    }
    const char *fname = f == XIR__VM_COUNT ? "pow_ub" : xir__vm_name((xir__vm_fn)f);
    if (nvar > 2)
      printf("  %-8s %7.3f %7.3f %7.3f  (fma %.2fx, x512 %.2fx faster than plain)\n", fname,
             ns[0], ns[1], ns[2], ns[0] / ns[1], ns[0] / ns[2]);
    else if (nvar > 1)
      printf("  %-8s %7.3f %7.3f  (%.2fx)\n", fname, ns[0], ns[1], ns[0] / ns[1]);
    else
      printf("  %-8s %7.3f\n", fname, ns[0]);
  }
  xir__jit_destroy(jit);
  free(x);
  free(y);
  free(o);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--per-fn"))
    return per_function(argc > 2 ? (unsigned)atoi(argv[2]) : xir__jit_host_max_width());
  unsigned W = argc > 1 ? (unsigned)atoi(argv[1]) : xir__jit_host_max_width();
  int R = argc > 2 ? atoi(argv[2]) : 15;
  if (R < 1 || R > 1000) R = 15;
  static const struct {
    const char *pipeline;
    int level;
  } cfg[] = {
      {XIR__JIT_DEFAULT_PIPELINE, 2},
      {XIR__JIT_DEFAULT_PIPELINE, 1},
      {"function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm),gvn,"
       "instcombine<no-verify-fixpoint>,simplifycfg)", 2},
      {"function(instcombine<no-verify-fixpoint>,simplifycfg)", 2},
      {"function(early-cse,instcombine<no-verify-fixpoint>,simplifycfg)", 2},
      {"default<O1>", 2},
      {"default<O2>", 2},
      {"default<O3>", 2},
  };
  /* the kernels: one "small" (exp) and one "medium" (five functions) module */
  static const xir__vm_fn small[] = {XIR__VM_EXP};
  static const xir__vm_fn medium[] = {XIR__VM_EXP, XIR__VM_TANH, XIR__VM_ERF, XIR__VM_SIN,
                                      XIR__VM_POW};
  struct {
    const char *name;
    const xir__vm_fn *fns;
    int n;
  } mods[] = {{"small: exp", small, 1}, {"medium: exp tanh erf sin pow", medium, 5}};
  enum { NEL = 1 << 16 };
  float *x = malloc(NEL * sizeof(float)), *y = malloc(NEL * sizeof(float)),
        *o = malloc(NEL * sizeof(float));
  if (!x || !y || !o) return 1;
  for (int i = 0; i < NEL; i++) {
    x[i] = -20.0f + 40.0f * (float)i / NEL;
    y[i] = 0.5f + (float)(i % 7) * 0.25f;
  }
  printf("W=%u, %d compiles per row (medians), run time = best of 20 over %d elements\n", W, R,
         NEL);
  printf("%-30s %-82s %3s %8s %8s %8s %10s\n", "module", "pipeline", "cg", "opt_ms", "cg_ms",
         "total_ms", "ns/elem");
  for (size_t mi = 0; mi < sizeof mods / sizeof *mods; mi++) {
    for (size_t c = 0; c < sizeof cfg / sizeof *cfg; c++) {
      xir__jit_options opt = {.pipeline = cfg[c].pipeline, .codegen_level = cfg[c].level};
      xir__jit *jit;
      xir_diag d = {0};
      if (xir__jit_create(&opt, &jit, &d)) {
        fprintf(stderr, "jit: %s\n", d.msg);
        return 1;
      }
      double *to = calloc((size_t)R, sizeof(double)), *tc = calloc((size_t)R, sizeof(double)),
             *tt = calloc((size_t)R, sizeof(double));
      double ns = 0;
      for (int r = 0; r < R; r++) {
        xir__jit_module m;
        xir__vm *vm;
        if (xir__jit_module_create(jit, "bench", &m, &d) ||
            xir__vm_create(m.mod, NULL, &vm, &d))
          return 1;
        for (int k = 0; k < mods[mi].n; k++) {
          char nm[32];
          snprintf(nm, sizeof nm, "k%d", k);
          if (xir__vm_build_map_kernel(vm, nm, mods[mi].fns[k], W, &d)) return 1;
        }
        xir__vm_destroy(vm);
        char key[32];
        snprintf(key, sizeof key, "r%d", r);
        double t0 = now_ms();
        const xir__jit_artifact *a;
        if (xir__jit_add(jit, &m, "k0", key, &a, NULL, &d)) {
          fprintf(stderr, "add: %s\n", d.msg);
          return 1;
        }
        tt[r] = now_ms() - t0;
        to[r] = a->opt_ms;
        tc[r] = a->codegen_ms;
        if (r == 0) { /* run time of the module's kernels, summed */
          for (int k = 0; k < mods[mi].n; k++) {
            char nm[32];
            snprintf(nm, sizeof nm, "k%d", k);
            void *p;
            if (xir__jit_lookup(jit, a, nm, &p, &d)) return 1;
            double best = 1e30;
            for (int rep = 0; rep < 20; rep++) {
              double t1 = now_ms();
              ((kern_fn)p)(x, y, o, NEL / W);
              double dt = now_ms() - t1;
              if (dt < best) best = dt;
            }
            ns += best * 1e6 / NEL;
          }
        }
      }
      printf("%-30s %-82s %3d %8.2f %8.2f %8.2f %10.3f\n", mods[mi].name, cfg[c].pipeline,
             cfg[c].level, xir__median(to, (size_t)R), xir__median(tc, (size_t)R),
             xir__median(tt, (size_t)R), ns);
      free(to);
      free(tc);
      free(tt);
      xir__jit_destroy(jit);
    }
  }
  free(x);
  free(y);
  free(o);
  return 0;
}

/* jit_levels.c — JIT time per candidate (lowering + optimization + code generation) for every
 * legal candidate of a kernel × shape, at each code generation level. Prints the median.
 *   bench_jit_levels KERNEL SHAPE [PIPELINE] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "xir_compile.h"

int main(int argc, char **argv) {
  const char *kernel = argc > 1 ? argv[1] : "rmsnorm", *spec = argc > 2 ? argv[2] : "R=129,C=768";
  const char *levels[] = {"none", "less", "default"};
  xir_diag d;
  xir_program *p;
  xir_shape s;
  if (xir_kernel_load(kernel, &p, &d) || xir_shape_parse(p, spec, &s, &d)) return 1;
  for (int l = 0; l < 3; l++) {
    xir_compiler_options o = {.codegen = levels[l], .pipeline = argc > 3 ? argv[3] : NULL,
                              .no_kernel_cache = 1}; /* measure compiles, not cache loads */
    xir_compiler *cc;
    if (xir_compiler_create(&o, &cc, &d)) return 1;
    xir_candidate *cs;
    size_t n;
    if (xir_candidates(p, &s, xir_compiler_width(cc), &cs, &n, &d)) return 1;
    double *t = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) {
      const xir_kernel *k;
      if (xir_compile(cc, p, &s, &cs[i], &k, &d)) return 1;
      xir_kernel_info info;
      xir_kernel_get_info(k, &info);
      t[i] = info.jit_ms;
    }
    double med = xir__median(t, n); /* sorts t */
    printf("%s %s codegen=%-8s %zu candidates: median %.2f ms, min %.2f, max %.2f\n", kernel, spec,
           levels[l], n, med, t[0], t[n - 1]);
    free(t);
    xir_free(cs);
    xir_compiler_destroy(cc);
  }
  xir_program_free(p);
  return 0;
}

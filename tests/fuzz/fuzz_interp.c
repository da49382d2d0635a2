/* fuzz_interp.c — libFuzzer target: parse, and run every program that parses through the fp64
 * interpreter on tiny shapes (every dim 2, else 1, else 3 — whichever meets the `require`
 * clauses), from the original and from the reparsed printed text. Both runs must report the
 * same status and, on success, the same outputs (NaNs compare equal). An out-of-range gather or
 * an integer division by zero (XIR_ERR_RUNTIME) is a normal outcome.
 *
 * Built by `XIR_FUZZ_TARGET=interp tests/fuzz/run_fuzz.sh SECONDS`, without
 * -fsanitize=float-cast-overflow,signed-integer-overflow, two known problems that would stop
 * every run at once: src/ir/interp.c converts every f64 operand to int64 even for f32 ops (NaN,
 * inf and huge values make that conversion undefined; the result is unused), and the i64 forms
 * of neg/abs in include/xir_ops.h overflow on INT64_MIN (add/sub/mul wrap; they do not). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xir.h"

static void die(const char *what, const char *text) {
  fprintf(stderr, "fuzz_interp: %s\n%s\n", what, text ? text : "");
  abort();
}

static xir_status run(const xir_program *p, const xir_shape *sh, double **out) {
  xir_arg args[XIR_MAX_PARAMS];
  void *in[XIR_MAX_PARAMS] = {0};
  memset(args, 0, sizeof args);
  for (int i = 0; i < xir_program_num_params(p); i++) {
    xir_param_info info;
    xir_program_param(p, i, &info);
    size_t n = xir_param_numel(p, i, sh);
    out[i] = NULL;
    if (info.kind == XIR_PARAM_SCALAR) {
      args[i].use_default = info.has_default;
      args[i].scalar = info.elem == XIR_I64 ? 1 : 0.5;
    } else if (info.is_output) {
      out[i] = calloc(n ? n : 1, sizeof(double));
      args[i].out64 = out[i];
    } else if (info.elem == XIR_I64) { /* i64 inputs: small integers, some negative */
      int64_t *v = malloc((n ? n : 1) * sizeof(int64_t));
      for (size_t e = 0; e < n; e++) v[e] = (int64_t)(e % 5) - 1;
      in[i] = v;
      args[i].in = v;
    } else {
      float *v = malloc((n ? n : 1) * sizeof(float));
      for (size_t e = 0; e < n; e++) v[e] = (float)e * 0.25f - 1.0f;
      in[i] = v;
      args[i].in = v;
    }
  }
  xir_diag d;
  xir_status s = xir_interpret(p, sh, args, &d);
  for (int i = 0; i < XIR_MAX_PARAMS; i++) free(in[i]);
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  xir_program *p = NULL, *q = NULL;
  xir_diag d;
  if (xir_program_parse((const char *)data, size, "fuzz.xir", &p, &d)) return 0;
  char *t1 = NULL;
  if (xir_program_print(p, &t1, &d)) die("print failed", NULL);
  if (xir_program_parse(t1, strlen(t1), "printed.xir", &q, &d)) die("reparse failed", t1);
  xir_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.ndims = xir_program_num_dims(p);
  static const int tries[3] = {2, 1, 3};
  int ok = 0;
  for (int t = 0; t < 3 && !ok; t++) {
    for (int k = 0; k < sh.ndims; k++) sh.dims[k] = tries[t];
    ok = xir_shape_check(p, &sh, &d) == XIR_OK;
  }
  if (ok && xir_shape_root_count(p, &sh) <= 4096) {
    double *a[XIR_MAX_PARAMS], *b[XIR_MAX_PARAMS];
    xir_status sa = run(p, &sh, a), sb = run(q, &sh, b);
    if (sa != XIR_OK && sa != XIR_ERR_RUNTIME) die("unexpected interpreter status", t1);
    if (sa != sb) die("the reparsed program runs differently", t1);
    for (int i = 0; i < xir_program_num_params(p); i++) {
      if (!a[i]) continue;
      size_t n = xir_param_numel(p, i, &sh);
      for (size_t e = 0; sa == XIR_OK && e < n; e++)
        if (!(isnan(a[i][e]) && isnan(b[i][e])) && memcmp(&a[i][e], &b[i][e], sizeof(double)))
          die("the reparsed program computes other values", t1);
      free(a[i]);
      free(b[i]);
    }
  }
  xir_free(t1);
  xir_program_free(p);
  xir_program_free(q);
  return 0;
}

/* cmd_suite.c — `xir suite`: the built-in kernel suite at the report shapes. For each kernel:
 * make seeded inputs, evaluate, check the whole output against the fp64 oracle, print a table. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check/check.h"
#include "cli.h"

/* The report shape of each built-in kernel in the suite. */
static const struct {
  const char *kernel, *shape;
} kSuite[] = {
    {"rmsnorm", "R=129,C=768"},           {"layernorm", "R=129,C=768"},
    {"rope", "R=129,C=768,HD=64"},        {"softmax_mask", "R=129,C=768"},
    {"softmax_causal", "R=129,C=768"},    {"swiglu", "R=129,C=768"},
    {"gelu_residual", "R=129,C=768"},
    {"attention", "B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16"},
    {"attention_causal", "B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16"},
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int cmd_suite(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: xir suite [--seed N]\n\n"
           "Runs every built-in kernel at its report shape on seeded random inputs, checks the\n"
           "whole output against the fp64 reference interpreter and prints a table. Exit status\n"
           "1 if any kernel fails its check.\n");
    return 0;
  }
  uint64_t seed = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
    else return cli_usage_error("suite", "unknown option '%s'", argv[i]);
  }
  printf("%-17s %-36s %-12s %10s %10s %9s %s\n", "kernel", "shape", "evaluator", "max abs",
         "rel l2", "ms", "check");
  int failed = 0;
  for (size_t k = 0; k < sizeof kSuite / sizeof kSuite[0]; k++) {
    xir_program *p;
    xir_diag d;
    xir_case c;
    xir_shape shape;
    if (xir_kernel_load(kSuite[k].kernel, &p, &d)) return cli_fail(&d);
    if (xir_shape_parse(p, kSuite[k].shape, &shape, &d) || xir__case_init(&c, p, &shape, seed, &d)) {
      xir_program_free(p);
      return cli_fail(&d);
    }
    double t0 = now_ms();
    if (xir__case_oracle(&c, &d)) {
      xir__case_free(&c);
      xir_program_free(p);
      return cli_fail(&d);
    }
    double ms = now_ms() - t0;
    for (int i = 0; i < xir_program_num_params(p); i++)
      if (c.ref[i])
        for (size_t e = 0; e < c.numel[i]; e++) c.data[i][e] = (float)c.ref[i][e];
    xir_tolerance tol = xir__kernel_tolerance(kSuite[k].kernel);
    for (int i = 0; i < xir_program_num_params(p); i++) {
      if (!c.ref[i]) continue;
      xir_compare cmp = xir__case_compare(&c, i, tol);
      int ok = cmp.pass && xir__case_sentinels_ok(&c);
      failed += !ok;
      printf("%-17s %-36s %-12s %10.3g %10.3g %9.2f %s\n", kSuite[k].kernel, kSuite[k].shape,
             "interpreter", cmp.max_abs, cmp.rel_l2, ms, ok ? "ok" : "FAIL");
    }
    xir__case_free(&c);
    xir_program_free(p);
  }
  return failed ? 1 : 0;
}

/* cmd_suite.c — `xir suite`: the built-in kernel suite at the report shapes. For each kernel:
 * make seeded inputs, evaluate, check the whole output against the fp64 oracle, print a table. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check/check.h"
#include "cli.h"
#include "native.h"
#include "util/util.h"

/* The report shape of each built-in kernel in the suite. */
static const struct {
  const char *kernel, *shape;
} kSuite[] = {
    {"rmsnorm", "R=129,C=768"},           {"layernorm", "R=129,C=768"},
    {"rope", "R=129,C=768,HD=64"},
    {"rope_cache", "R=129,C=768,HD=64,P=4096,H2=32"},
    {"softmax_mask", "R=129,C=768"},
    {"softmax_causal", "R=129,C=768"},    {"swiglu", "R=129,C=768"},
    {"gelu_residual", "R=129,C=768"},
    {"attention", "B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16"},
    {"attention_causal", "B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16"},
};

int cmd_suite(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: xir suite [--seed N] [--workers N]\n\n"
           "Runs every built-in kernel at its report shape on seeded random inputs, checks the\n"
           "whole output against the fp64 reference interpreter and prints a table. Exit status\n"
           "1 if any kernel fails its check.\n");
    return 0;
  }
  uint64_t seed = 1;
  uint32_t workers = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      if (cli_parse_u64(argv[++i], &seed))
        return cli_usage_error("suite", "--seed needs an integer in [0, 2^64), not '%s'", argv[i]);
    }
    else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc) {
      if (cli_parse_u32(argv[++i], 0, &workers) || !workers)
        return cli_usage_error("suite", "--workers needs a positive integer");
    }
    else return cli_usage_error("suite", "unknown option '%s'", argv[i]);
  }
  printf("Each kernel: seeded inputs, the planner's default choice (l and G searched, calibrated service model), "
         "native code, one launch on %u worker(s), the whole output checked against the fp64 "
         "interpreter.\n\n", workers);
  printf("%-17s %-36s %-28s %10s %10s %9s %s\n", "kernel", "shape", "candidate", "max abs",
         "rel l2", "ms(1x)", "check");
  int failed = 0;
  /* one compiler for the whole suite: shapes that differ in launch-time dims share code */
  xir_compiler *cc = NULL;
  xir_diag cd;
  if (xir_compiler_create(NULL, &cc, &cd)) return cli_fail(&cd);
  for (size_t k = 0; k < sizeof kSuite / sizeof kSuite[0]; k++) {
    xir_program *p;
    xir_diag d;
    xir_case c;
    xir_shape shape;
    if (xir_kernel_load(kSuite[k].kernel, &p, &d)) {
      xir_compiler_destroy(cc);
      return cli_fail(&d);
    }
    if (xir_shape_parse(p, kSuite[k].shape, &shape, &d) || xir__case_init(&c, p, &shape, seed, &d)) {
      xir_program_free(p);
      xir_compiler_destroy(cc);
      return cli_fail(&d);
    }
    if (xir__case_oracle(&c, &d)) {
      xir__case_free(&c);
      xir_program_free(p);
      xir_compiler_destroy(cc);
      return cli_fail(&d);
    }
    /* the planner chooses, with its defaults (ℓ and G searched, this machine's service model) */
    xir_plan_options po;
    xir_plan_options_default(&po);
    po.workers = workers;
    native_opts no = {.workers = workers, .grain = 0, .plan = &po, .cc = cc};
    native_result nr;
    if (run_native(p, &shape, &c, &no, &nr, &d)) {
      xir__case_free(&c);
      xir_program_free(p);
      xir_compiler_destroy(cc);
      return cli_fail(&d);
    }
    double ms = nr.last_ms;
    const char *cand = "?";
    cJSON *first = cJSON_GetArrayItem(nr.json, 0); /* the one run */
    if (first) cand = cJSON_GetStringValue(cJSON_GetObjectItem(first, "candidate"));
    xir_tolerance tol = xir__kernel_tolerance(kSuite[k].kernel);
    for (int i = 0; i < xir_program_num_params(p); i++) {
      if (!c.ref[i]) continue;
      xir_compare cmp = xir__case_compare(&c, i, tol);
      int ok = cmp.pass && xir__case_sentinels_ok(&c);
      failed += !ok;
      printf("%-17s %-36s %-28s %10.3g %10.3g %9.3f %s\n", kSuite[k].kernel, kSuite[k].shape,
             cand, cmp.max_abs, cmp.rel_l2, ms, ok ? "ok" : "FAIL");
    }
    cJSON_Delete(nr.json);
    xir__free(nr.text);
    xir__case_free(&c);
    xir_program_free(p);
  }
  xir_compiler_destroy(cc);
  return failed ? 1 : 0;
}

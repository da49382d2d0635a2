/* test_native_grain.c — the task grain is a pure scheduling decision: for native kernels run
 * through the runtime, every G and H gives bit-identical outputs (and the code is compiled once,
 * independent of G), with sentinels intact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "check/check.h"
#include "xir_compile.h"
#include "xir_runtime.h"

static void die(const xir_diag *d) {
  char b[2048];
  fail_msg("%s", xir_diag_format(d, b, sizeof b));
}

static void check_kernel(xir_compiler *cc, xir_runtime *rt, const char *kernel, const char *spec,
                         uint32_t local, uint32_t B) {
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load(kernel, &p, &d)) die(&d);
  xir_shape s;
  if (xir_shape_parse(p, spec, &s, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &s, 5, &d) || xir__case_oracle(&c, &d)) die(&d);
  uint8_t perm[XIR_MAX_ROOT];
  for (int k = 0; k < xir_program_num_root(p); k++) perm[k] = (uint8_t)k;
  xir_candidate cand;
  if (xir_candidate_make(p, &s, xir_compiler_width(cc), B, local, perm, &cand, &d)) die(&d);
  const xir_kernel *k;
  if (xir_compile(cc, p, &s, &cand, &k, &d)) die(&d);
  uint64_t L = xir_kernel_blocks(k);
  int out = -1;
  for (int i = 0; i < xir_program_num_params(p); i++)
    if (c.ref[i]) out = i;
  size_t bytes = c.numel[out] * sizeof(float);
  float *first = test_malloc(bytes);
  uint32_t grains[] = {UINT32_MAX, 0, 1, 2, 3, 7, (uint32_t)(L > 1 ? L - 1 : 1), (uint32_t)L};
  uint32_t hs[] = {1, 2, 3, 8};
  int have_first = 0;
  for (size_t gi = 0; gi < sizeof grains / sizeof *grains; gi++)
    for (size_t hi = 0; hi < 4; hi++) {
      xir__case_reset_outputs(&c);
      uint64_t slots[XIR_MAX_ARG_SLOTS];
      if (xir_kernel_pack_args(k, c.args, slots, &d)) die(&d);
      xir_launch_stats st;
      if (xir_runtime_launch(rt, (xir_block_fn)xir_kernel_entry(k), slots, L, grains[gi], hs[hi], &st, &d))
        die(&d);
      assert_true(xir__case_sentinels_ok(&c));
      if (!have_first) {
        xir_compare cmp = xir__case_compare(&c, out, xir__kernel_tolerance(kernel));
        if (!cmp.pass) fail_msg("%s %s: output does not match the oracle", kernel, spec);
        memcpy(first, c.data[out], bytes);
        have_first = 1;
      } else if (memcmp(first, c.data[out], bytes) != 0) {
        fail_msg("%s %s: G=%u H=%u changed the output bits", kernel, spec, grains[gi], hs[hi]);
      }
    }
  test_free(first);
  xir__case_free(&c);
  xir_program_free(p);
}

static void test_outputs_identical_across_grain_and_workers(void **state) {
  (void)state;
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  ro.workers = 8;
  xir_runtime *rt;
  if (xir_runtime_create(&ro, &rt, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  check_kernel(cc, rt, "rmsnorm", "R=257,C=1538", 8, 2 * W);
  check_kernel(cc, rt, "layernorm", "R=129,C=768", 1, W);
  check_kernel(cc, rt, "softmax_causal", "R=33,C=1000", 4 * W, 4 * W);
  check_kernel(cc, rt, "rope", "R=129,C=768,HD=64", W, W);
  check_kernel(cc, rt, "gelu_residual", "R=17,C=65", 1, 2 * W);
  check_kernel(cc, rt, "swiglu", "R=64,C=256", 1, W);
  check_kernel(cc, rt, "attention_causal", "B=1,HQ=8,HKV=2,Q=33,K=65,D=24,DV=8", 1, W);
  xir_runtime_destroy(rt);
  xir_compiler_destroy(cc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_outputs_identical_across_grain_and_workers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

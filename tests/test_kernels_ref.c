/* test_kernels_ref.c — every built-in kernel, evaluated by the fp64 interpreter, against an
 * independent hand-written fp64 C implementation (tests/ref/ref_kernels.c), on seeded random
 * inputs (never zeros) at the report shapes and at ragged ones, plus the fully masked rows. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "check/check.h"
#include "ref_kernels.h"
#include "testutil.h"

static const int64_t kRowShapes[][2] = {{64, 256},   {129, 768}, {17, 65}, {257, 1538},
                                        {1024, 4096}, {4096, 1024}, {1, 1}, {3, 7},
                                        {33, 1000}};

/* The interpreter and the hand reference are both fp64; they differ only by the order of a few
 * operations and by f32-rounded literals in the XIR text (e.g. gelu's sqrt(2/pi)). */
static void expect_close_tol(const char *what, const double *got, const double *want, size_t n,
                             double atol) {
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs(got[i] - want[i]);
    int ok = !isnan(got[i]) && !isnan(want[i]) && e <= atol + 2e-7 * fabs(want[i]);
    if (!ok && !bad++) first = i;
    if (e > worst || isnan(e)) worst = e;
  }
  if (bad)
    fail_msg("%s: %zu of %zu elements differ (first at %zu: interpreter %.17g, reference %.17g;"
             " worst abs %.3g)", what, bad, n, first, got[first], want[first], worst);
}

static void expect_close(const char *what, const double *got, const double *want, size_t n) {
  expect_close_tol(what, got, want, n, 1e-9);
}

/* Sets up a case for a built-in kernel and runs the oracle. */
static xir_program *setup(const char *kernel, const char *shape_spec, xir_case *c, uint64_t seed) {
  xir_program *p;
  xir_diag d;
  char msg[2048];
  if (xir_kernel_load(kernel, &p, &d)) fail_msg("%s", xir_diag_format(&d, msg, sizeof msg));
  xir_shape shape;
  if (xir_shape_parse(p, shape_spec, &shape, &d)) fail_msg("%s", xir_diag_format(&d, msg, sizeof msg));
  if (xir__case_init(c, p, &shape, seed, &d)) fail_msg("%s", xir_diag_format(&d, msg, sizeof msg));
  return p;
}

static void run_oracle(xir_case *c) {
  xir_diag d;
  char msg[2048];
  if (xir__case_oracle(c, &d)) fail_msg("%s", xir_diag_format(&d, msg, sizeof msg));
}

static int pidx(const xir_program *p, const char *n) { return xir_program_find_param(p, n); }

static void check_row_kernel(const char *kernel, int64_t R, int64_t C) {
  char spec[128], what[160];
  int64_t HD = 0;
  if (strcmp(kernel, "rope") == 0) {
    for (int64_t h = 128; h >= 2; h -= 2)
      if (C % h == 0) {
        HD = h;
        break;
      }
    if (!HD) return; /* RoPE needs an even C (pairs); odd widths are not RoPE shapes */
    snprintf(spec, sizeof spec, "R=%lld,C=%lld,HD=%lld", (long long)R, (long long)C, (long long)HD);
  } else {
    snprintf(spec, sizeof spec, "R=%lld,C=%lld", (long long)R, (long long)C);
  }
  snprintf(what, sizeof what, "%s %s", kernel, spec);
  xir_case c;
  xir_program *p = setup(kernel, spec, &c, 42 + (uint64_t)R);
  run_oracle(&c);
  size_t n = (size_t)(R * C);
  double *want = test_malloc(n * sizeof(double));
  const float **in = (const float **)c.data;
  double eps = (double)1e-5f;
  if (strcmp(kernel, "rmsnorm") == 0)
    ref_rmsnorm(R, C, in[pidx(p, "x")], in[pidx(p, "w")], eps, want);
  else if (strcmp(kernel, "layernorm") == 0)
    ref_layernorm(R, C, in[pidx(p, "x")], in[pidx(p, "w")], in[pidx(p, "b")], eps, want);
  else if (strcmp(kernel, "rope") == 0)
    assert_int_equal(ref_rope(R, C, HD, in[pidx(p, "x")], 10000.0, 0, want), 0);
  else if (strcmp(kernel, "softmax_mask") == 0)
    ref_softmax_mask(R, C, in[pidx(p, "x")], in[pidx(p, "mask")], 1.0, want);
  else if (strcmp(kernel, "softmax_causal") == 0)
    ref_softmax_causal(R, C, in[pidx(p, "x")], 1.0, want);
  else if (strcmp(kernel, "swiglu") == 0)
    ref_swiglu(R, C, in[pidx(p, "a")], in[pidx(p, "b")], want);
  else if (strcmp(kernel, "gelu_residual") == 0)
    ref_gelu_residual(R, C, in[pidx(p, "x")], in[pidx(p, "r")], want);
  else
    fail_msg("no reference for %s", kernel);
  /* gelu's literals sqrt(2/pi) and 0.044715 are f32 in the XIR text: relative error <= 2^-24
   * each, so |du| <= 1.9 * 6e-8 and |dy| <= 0.5 |x| |du| <= 1.2e-7 for |x| <= 2. */
  double atol = strcmp(kernel, "gelu_residual") == 0 ? 1.2e-7 : 1e-9;
  expect_close_tol(what, c.ref[pidx(p, "y")], want, n, atol);
  test_free(want);
  xir__case_free(&c);
  xir_program_free(p);
}

/* XIR_TEST_QUICK (the sanitizer runs) leaves out the 4M-element shapes, which the normal pass
 * checks: under AddressSanitizer the interpreter takes most of a minute on them. */
static int skip_large(int64_t r, int64_t c) { return test_quick() && r * c >= (1 << 22); }

#define ROW_TEST(k)                                                           \
  static void test_##k##_matches_hand_reference(void **state) {               \
    (void)state;                                                              \
    for (size_t i = 0; i < sizeof kRowShapes / sizeof kRowShapes[0]; i++)     \
      if (!skip_large(kRowShapes[i][0], kRowShapes[i][1]))                    \
        check_row_kernel(#k, kRowShapes[i][0], kRowShapes[i][1]);             \
  }
ROW_TEST(rmsnorm)
ROW_TEST(layernorm)
ROW_TEST(rope)
ROW_TEST(softmax_mask)
ROW_TEST(softmax_causal)
ROW_TEST(swiglu)
ROW_TEST(gelu_residual)

/* rope_cache: R, C, HD, P (H2 = HD/2) — P above, below and equal to R, and P = 1 */
static const int64_t kRopeCacheShapes[][4] = {{129, 768, 64, 4096}, {64, 256, 64, 100},
                                              {257, 1538, 2, 7},    {1, 2, 2, 1},
                                              {33, 1000, 100, 33},  {17, 66, 22, 2},
                                              {1024, 4096, 128, 4096}};

static void test_rope_cache_matches_hand_reference(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof kRopeCacheShapes / sizeof *kRopeCacheShapes; k++) {
    const int64_t *s = kRopeCacheShapes[k];
    if (skip_large(s[0], s[1])) continue;
    char spec[128];
    snprintf(spec, sizeof spec, "R=%lld,C=%lld,HD=%lld,P=%lld,H2=%lld", (long long)s[0],
             (long long)s[1], (long long)s[2], (long long)s[3], (long long)(s[2] / 2));
    xir_case c;
    xir_program *p = setup("rope_cache", spec, &c, 11 + (uint64_t)k);
    run_oracle(&c);
    int y = pidx(p, "y"), ps = pidx(p, "pos");
    double *want = test_malloc(c.numel[y] * sizeof(double));
    assert_int_equal(ref_rope_from_tables((size_t)s[0], (size_t)s[1], (size_t)s[2], (size_t)s[3],
                                    c.data[pidx(p, "x")], c.idata[ps], c.data[pidx(p, "cos")],
                                    c.data[pidx(p, "sin")], want), 0);
    expect_close(spec, c.ref[y], want, c.numel[y]);
    test_free(want);
    xir__case_free(&c);
    xir_program_free(p);
  }
}

/* Seeded positions: integers in [0, P), reproducible, not all zero (P > 1), spread over the
 * table; the float copy the f32-only consumers get equals them. */
static void test_rope_cache_positions_are_seeded_in_range(void **state) {
  (void)state;
  xir_case a, b;
  xir_program *p = setup("rope_cache", "R=300,C=8,HD=4,P=37,H2=2", &a, 3);
  xir_program *q = setup("rope_cache", "R=300,C=8,HD=4,P=37,H2=2", &b, 3);
  int ps = pidx(p, "pos");
  assert_non_null(a.idata[ps]);
  assert_ptr_equal(a.args[ps].in, a.idata[ps]);
  int seen[37] = {0}, distinct = 0;
  for (int r = 0; r < 300; r++) {
    int64_t v = a.idata[ps][r];
    assert_true(v >= 0 && v < 37);
    assert_true(v == b.idata[ps][r]);
    assert_true(a.data[ps][r] == (float)v);
    distinct += !seen[v]++;
  }
  assert_true(distinct > 20);
  /* one row: still not all zeros */
  xir_case one;
  xir_program *p1 = setup("rope_cache", "R=1,C=8,HD=4,P=4096,H2=2", &one, 1);
  for (uint64_t seed = 0; seed < 64; seed++) {
    xir__case_free(&one);
    xir_diag d;
    xir_shape sh;
    assert_int_equal(xir_shape_parse(p1, "R=1,C=8,HD=4,P=4096,H2=2", &sh, &d), XIR_OK);
    assert_int_equal(xir__case_init(&one, p1, &sh, seed, &d), XIR_OK);
    assert_true(one.idata[ps][0] > 0 && one.idata[ps][0] < 4096);
  }
  xir__case_free(&one);
  xir_program_free(p1);
  xir__case_free(&a);
  xir__case_free(&b);
  xir_program_free(p);
  xir_program_free(q);
}

/* A position outside [0, P) is an error in the interpreter, naming the load's line and the
 * value; an i64 input beyond 2^53 is an error too (the interpreter holds integers as doubles). */
static void test_rope_cache_position_out_of_range_is_an_error(void **state) {
  (void)state;
  const int64_t bad[] = {5, -1, INT64_MAX, INT64_MIN, ((int64_t)1 << 53) + 1};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    xir_case c;
    xir_program *p = setup("rope_cache", "R=3,C=8,HD=4,P=5,H2=2", &c, 1);
    int ps = pidx(p, "pos");
    c.idata[ps][1] = bad[k];
    xir_diag d;
    assert_int_equal(xir__case_oracle(&c, &d), XIR_ERR_RUNTIME);
    char msg[2048];
    xir_diag_format(&d, msg, sizeof msg);
    if (k < 2) {
      char want[128];
      snprintf(want, sizeof want, "index 1 of 'cos' is %lld, outside [0, 5) (dim 'P')",
               (long long)bad[k]);
      if (!strstr(msg, want)) fail_msg("message '%s' lacks '%s'", msg, want);
      if (!strstr(msg, "<builtin:rope_cache>:")) fail_msg("message '%s' names no line", msg);
    } else if (!strstr(msg, "i64 input 'pos'") || !strstr(msg, "2^53")) {
      fail_msg("message '%s' does not name the i64 input and its range", msg);
    }
    xir__case_free(&c);
    xir_program_free(p);
  }
  /* the boundary values are fine */
  xir_case c;
  xir_program *p = setup("rope_cache", "R=2,C=8,HD=4,P=5,H2=2", &c, 1);
  c.idata[pidx(p, "pos")][0] = 0;
  c.idata[pidx(p, "pos")][1] = 4;
  run_oracle(&c);
  xir__case_free(&c);
  xir_program_free(p);
}

static void check_attention(int causal, const int64_t s[7], double scale) {
  char spec[256], what[300];
  snprintf(spec, sizeof spec, "B=%lld,HQ=%lld,HKV=%lld,Q=%lld,K=%lld,D=%lld,DV=%lld",
           (long long)s[0], (long long)s[1], (long long)s[2], (long long)s[3], (long long)s[4],
           (long long)s[5], (long long)s[6]);
  const char *kernel = causal ? "attention_causal" : "attention";
  snprintf(what, sizeof what, "%s %s scale %g", kernel, spec, scale);
  xir_case c;
  xir_program *p = setup(kernel, spec, &c, 7 + (uint64_t)s[3]);
  xir_diag d;
  if (scale > 0) assert_int_equal(xir__case_set_scalar(&c, "scale", scale, &d), XIR_OK);
  run_oracle(&c);
  int o = pidx(p, "o");
  double *want = test_malloc(c.numel[o] * sizeof(double));
  double sc = scale > 0 ? (double)(float)scale : 1.0 / sqrt((double)s[5]);
  assert_int_equal(ref_attention(s[0], s[1], s[2], s[3], s[4], s[5], s[6],
                                 c.data[pidx(p, "q")], c.data[pidx(p, "k")],
                                 c.data[pidx(p, "v")], sc, causal, want), 0);
  expect_close(what, c.ref[o], want, c.numel[o]);
  test_free(want);
  xir__case_free(&c);
  xir_program_free(p);
}

static const int64_t kAttnShapes[][7] = {
    {1, 4, 2, 16, 32, 16, 16}, {1, 1, 1, 1, 1, 1, 1}, {2, 3, 1, 5, 7, 3, 5},
    {1, 8, 2, 33, 65, 24, 8},  {2, 2, 2, 4, 4, 16, 16}};

static void test_attention_matches_hand_reference(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof kAttnShapes / sizeof kAttnShapes[0]; i++) {
    check_attention(0, kAttnShapes[i], 0);
    check_attention(0, kAttnShapes[i], 0.3);
  }
}

static void test_attention_causal_matches_hand_reference(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof kAttnShapes / sizeof kAttnShapes[0]; i++)
    check_attention(1, kAttnShapes[i], 0);
}

/* Q > K: queries 0..Q-K-1 see no key at all; their rows are zero, never NaN. */
static void test_attention_causal_query_without_keys_is_zero(void **state) {
  (void)state;
  const int64_t s[7] = {1, 2, 1, 5, 3, 4, 4};
  check_attention(1, s, 0);
  xir_case c;
  xir_program *p = setup("attention_causal", "B=1,HQ=2,HKV=1,Q=5,K=3,D=4,DV=4", &c, 3);
  run_oracle(&c);
  const double *o = c.ref[pidx(p, "o")];
  for (int h = 0; h < 2; h++)
    for (int i = 0; i < 5; i++)
      for (int e = 0; e < 4; e++) {
        double v = o[((size_t)h * 5 + (size_t)i) * 4 + (size_t)e];
        assert_false(isnan(v));
        if (i < 2) assert_true(v == 0.0);
        else assert_true(v != 0.0);
      }
  xir__case_free(&c);
  xir_program_free(p);
}

/* A mask row of all -inf: the output row is exactly zero, not NaN; other rows sum to 1. */
static void test_softmax_fully_masked_row_is_zero(void **state) {
  (void)state;
  xir_case c;
  xir_program *p = setup("softmax_mask", "R=5,C=9", &c, 11);
  float *mask = c.data[pidx(p, "mask")];
  for (int j = 0; j < 9; j++) mask[2 * 9 + j] = -INFINITY;
  mask[4 * 9 + 3] = -INFINITY; /* a partly masked row */
  run_oracle(&c);
  const double *y = c.ref[pidx(p, "y")];
  double want[45];
  ref_softmax_mask(5, 9, c.data[pidx(p, "x")], mask, 1.0, want);
  expect_close("softmax_mask with masked rows", y, want, 45);
  for (int r = 0; r < 5; r++) {
    double sum = 0;
    for (int j = 0; j < 9; j++) {
      assert_false(isnan(y[r * 9 + j]));
      sum += y[r * 9 + j];
    }
    if (r == 2) assert_true(sum == 0.0);
    else assert_true(fabs(sum - 1.0) < 1e-12);
  }
  assert_true(y[4 * 9 + 3] == 0.0);
  xir__case_free(&c);
  xir_program_free(p);
}

/* Inputs are never zero, differ between parameters, and are reproducible from the seed. */
static void test_case_inputs_are_seeded_and_nonzero(void **state) {
  (void)state;
  xir_case a, b;
  xir_program *p = setup("swiglu", "R=3,C=7", &a, 5);
  xir_program *q = setup("swiglu", "R=3,C=7", &b, 5);
  for (int i = 0; i < 21; i++) {
    assert_true(a.data[0][i] != 0.0f);
    assert_true(a.data[0][i] == b.data[0][i]);
    assert_true(a.data[1][i] == b.data[1][i]);
  }
  assert_memory_not_equal(a.data[0], a.data[1], 21 * sizeof(float));
  xir__case_free(&a);
  xir__case_free(&b);
  xir_program_free(p);
  xir_program_free(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rmsnorm_matches_hand_reference),
      cmocka_unit_test(test_layernorm_matches_hand_reference),
      cmocka_unit_test(test_rope_matches_hand_reference),
      cmocka_unit_test(test_rope_cache_matches_hand_reference),
      cmocka_unit_test(test_rope_cache_positions_are_seeded_in_range),
      cmocka_unit_test(test_rope_cache_position_out_of_range_is_an_error),
      cmocka_unit_test(test_softmax_mask_matches_hand_reference),
      cmocka_unit_test(test_softmax_causal_matches_hand_reference),
      cmocka_unit_test(test_swiglu_matches_hand_reference),
      cmocka_unit_test(test_gelu_residual_matches_hand_reference),
      cmocka_unit_test(test_attention_matches_hand_reference),
      cmocka_unit_test(test_attention_causal_matches_hand_reference),
      cmocka_unit_test(test_attention_causal_query_without_keys_is_zero),
      cmocka_unit_test(test_softmax_fully_masked_row_is_zero),
      cmocka_unit_test(test_case_inputs_are_seeded_and_nonzero),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

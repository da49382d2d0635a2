/* test_aot.c — ahead-of-time objects (docs/aot.md). tests/CMakeLists.txt runs `xir compile
 * --emit-obj --emit-header --header-alias` at build time for six built-in kernels and links the
 * objects into this test. For each: the header's metadata matches what this process compiles for
 * the same kernel, shape and candidate (same symbol, same object bytes), the argument struct has
 * the packed layout, the object's output matches the fp64 oracle over the whole output with
 * sentinels intact, and any split of the block range over threads gives the same bits. Plus the
 * header generator's own checks (alias, reserved names, a kernel from another program). */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "aot_attention.h"
#include "aot_rmsnorm.h"
#include "aot_rope.h"
#include "aot_rope_cache.h"
#include "aot_softmax_causal.h"
#include "aot_swiglu.h"
#include "check/check.h"
#include "xir_compile.h"

typedef struct aot {
  const char *kernel, *shape, *candidate, *symbol;
  int (*entry)(void *, uint64_t, uint64_t);
  uint64_t blocks;
  size_t args_size;
} aot;

#define AOT(A) {A##_KERNEL, A##_SHAPE, A##_CANDIDATE, A##_SYMBOL, A, A##_BLOCKS, sizeof(A##_args)}
static const aot kAot[] = {AOT(aot_rmsnorm), AOT(aot_softmax_causal), AOT(aot_rope),
                           AOT(aot_rope_cache), AOT(aot_swiglu), AOT(aot_attention)};

static xir_compiler *g_cc;

static void die(const xir_diag *d) { fail_msg("%s", d->msg); }

typedef struct half_job {
  const aot *a;
  void *slots;
  uint64_t b0, b1;
  int rc;
} half_job;
static void *run_half(void *arg) {
  half_job *j = arg;
  j->rc = j->a->entry(j->slots, j->b0, j->b1);
  return NULL;
}

static void check_one(const aot *a) {
  xir_diag d;
  xir_program *p;
  xir_shape shape;
  xir_candidate cd;
  const xir_kernel *k;
  if (xir_kernel_load(a->kernel, &p, &d) || xir_shape_parse(p, a->shape, &shape, &d) ||
      xir_candidate_parse(p, &shape, a->candidate, xir_compiler_width(g_cc), &cd, &d) ||
      xir_compile(g_cc, p, &shape, &cd, &k, &d))
    die(&d);
  /* The same compile in this process names the same symbol and makes the same object. */
  xir_kernel_info info;
  xir_kernel_get_info(k, &info);
  assert_string_equal(info.entry_symbol, a->symbol);
  assert_int_equal(xir_kernel_blocks(k), a->blocks);
  assert_int_equal(xir_kernel_args_size(k), a->args_size);
  char *hdr = NULL;
  if (xir_kernel_c_header(g_cc, k, p, &shape, NULL, &hdr, &d)) die(&d);
  assert_non_null(strstr(hdr, a->symbol));
  assert_null(strstr(hdr, "Stable names")); /* no alias asked */
  xir_free(hdr);

  xir_case c;
  if (xir__case_init(&c, p, &shape, 77, &d) || xir__case_oracle(&c, &d)) die(&d);
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  if (xir_kernel_pack_args(k, c.args, slots, &d)) die(&d);
  assert_int_equal(a->entry(slots, 0, a->blocks), 0);
  assert_true(xir__case_sentinels_ok(&c));
  xir_tolerance tol = xir__kernel_tolerance(a->kernel);
  int np = xir_program_num_params(p), outputs = 0;
  float *first[XIR_MAX_PARAMS] = {0};
  for (int q = 0; q < np; q++) {
    if (!c.ref[q]) continue;
    outputs++;
    xir_compare r = xir__case_compare(&c, q, tol);
    if (!r.pass)
      fail_msg("%s %s: %zu of %zu elements out of tolerance (%zu NaN); first at %zu: got %.9g, "
               "oracle %.9g",
               a->kernel, a->shape, r.bad, r.n, r.nan, r.first_bad,
               (double)c.data[q][r.first_bad], c.ref[q][r.first_bad]);
    first[q] = malloc(c.numel[q] * sizeof(float));
    memcpy(first[q], c.data[q], c.numel[q] * sizeof(float));
  }
  assert_true(outputs > 0);
  /* Two threads, each a part of the block range, at every split point: the same bits. */
  for (uint64_t split = 0; split <= a->blocks; split += (a->blocks > 8 ? a->blocks / 4 : 1)) {
    xir__case_reset_outputs(&c);
    half_job j[2] = {{a, slots, 0, split, -1}, {a, slots, split, a->blocks, -1}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, run_half, &j[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    assert_int_equal(j[0].rc, 0);
    assert_int_equal(j[1].rc, 0);
    assert_true(xir__case_sentinels_ok(&c));
    for (int q = 0; q < np; q++)
      if (first[q]) assert_memory_equal(first[q], c.data[q], c.numel[q] * sizeof(float));
  }
  for (int q = 0; q < np; q++) free(first[q]);
  xir__case_free(&c);
  xir_program_free(p);
}

static void test_objects(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof kAot / sizeof kAot[0]; i++) check_one(&kAot[i]);
}

/* The typed convenience call and the struct, used as a C program would. */
static void test_run_typed(void **state) {
  (void)state;
  enum { R = 5, C = 33 };
  static float a[R * C], b[R * C], y[R * C], y2[R * C];
  for (int i = 0; i < R * C; i++) {
    a[i] = (float)(i % 17) * 0.3f - 2.0f;
    b[i] = 1.0f + (float)(i % 5) * 0.1f;
  }
  assert_int_equal(aot_swiglu_run(a, b, y), 0);
  /* the launch-time dim R, the outer strides and the flags follow the parameters */
  aot_swiglu_args s = {.a = a, .b = b, .y = y2};
  aot_swiglu_set_shape(&s);
  assert_int_equal(s.dim_R, R);
  assert_int_equal(s.stride_y[0], C);
  assert_int_equal(aot_swiglu(&s, 0, aot_swiglu_BLOCKS), 0);
  assert_memory_equal(y, y2, sizeof y);
  for (int i = 0; i < R * C; i++) {
    double v = a[i], ref = v / (1.0 + exp(-v)) * b[i];
    assert_true(fabs(y[i] - ref) <= 1e-5 * (1 + fabs(ref)));
  }
  /* f32 and i64 scalars in their slots */
  assert_int_equal(offsetof(aot_rope_args, theta), 16);
  assert_int_equal(offsetof(aot_rope_args, offset), 24);
  assert_int_equal(offsetof(aot_rope_args, dim_R), 32);
  assert_int_equal(sizeof(aot_rope_args), 64); /* + R, the strides of x and y, the flags */
}

static void test_header_errors(void **state) {
  (void)state;
  xir_diag d;
  xir_program *p, *q;
  xir_shape shape;
  xir_candidate *cands;
  size_t n;
  const xir_kernel *k;
  if (xir_kernel_load("rmsnorm", &p, &d) || xir_shape_parse(p, "R=2,C=8", &shape, &d) ||
      xir_candidates(p, &shape, xir_compiler_width(g_cc), &cands, &n, &d) ||
      xir_compile(g_cc, p, &shape, &cands[0], &k, &d))
    die(&d);
  xir_free(cands);
  char *h = NULL;
  assert_int_equal(xir_kernel_c_header(g_cc, k, p, &shape, "2bad", &h, &d), XIR_ERR_INVALID_ARG);
  assert_null(h);
  assert_non_null(strstr(d.msg, "not a C identifier"));
  assert_int_equal(xir_kernel_c_header(g_cc, k, p, &shape, "int", &h, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_kernel_c_header(g_cc, NULL, p, &shape, NULL, &h, &d), XIR_ERR_INVALID_ARG);
  /* a kernel of another program (different parameter count) */
  if (xir_kernel_load("swiglu", &q, &d)) die(&d);
  xir_shape qs;
  if (xir_shape_parse(q, "R=2,C=8", &qs, &d)) die(&d);
  assert_int_equal(xir_kernel_c_header(g_cc, k, q, &qs, NULL, &h, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "not compiled from this program"));
  /* an alias defines the stable names */
  if (xir_kernel_c_header(g_cc, k, p, &shape, "my_norm", &h, &d)) die(&d);
  assert_non_null(strstr(h, "#define my_norm_run "));
  assert_non_null(strstr(h, "#define my_norm_BLOCKS "));
  xir_free(h);
  /* a parameter named like a C keyword */
  const char *src = "kernel kw[N](double: f32[N], y: out f32[N])\nroot i in N {\n"
                    "  store y[i] = load double[i]\n}\n";
  xir_program *kw;
  if (xir_program_parse(src, strlen(src), "kw.xir", &kw, &d)) die(&d);
  {
    xir_shape ks;
    if (xir_shape_parse(kw, "N=4", &ks, &d) ||
        xir_candidates(kw, &ks, xir_compiler_width(g_cc), &cands, &n, &d) ||
        xir_compile(g_cc, kw, &ks, &cands[0], &k, &d))
      die(&d);
    xir_free(cands);
    assert_int_equal(xir_kernel_c_header(g_cc, k, kw, &ks, NULL, &h, &d), XIR_ERR_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "'double'"));
    xir_program_free(kw);
  }
  xir_program_free(q);
  xir_program_free(p);
}

int main(void) {
  xir_diag d;
  if (xir_compiler_create(NULL, &g_cc, &d)) {
    fprintf(stderr, "test_aot: %s\n", d.msg);
    return 1;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_objects), cmocka_unit_test(test_run_typed),
                                     cmocka_unit_test(test_header_errors)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  xir_compiler_destroy(g_cc);
  return rc;
}

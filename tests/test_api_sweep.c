/* test_api_sweep.c — the NULL and range sweep of the public API (issue 13).
 *
 * Every public function of the headers in include/ is called with each pointer argument NULL in turn (the
 * others valid) and with its integer arguments at the edges of their types and ranges. A NULL that
 * the call needs must give XIR_ERR_INVALID_ARG (a getter: its documented neutral value), an
 * out-of-range integer an error status (never a crash, a hang or a sanitizer report), and an
 * out-pointer must be cleared on failure. The default run uses a list of edge values; the full run
 * (test_api_sweep_full, label slow, XIR_SWEEP=full) adds every small value and every power of two
 * and its neighbours. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xir.h"
#include "xir_compile.h"
#include "xir_plan.h"
#include "xir_runtime.h"

#define INV XIR_ERR_INVALID_ARG
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int g_full;
static int64_t g_vals[1024]; /* the integer probe values (as int64; cast to each type) */
static size_t g_nvals;

static void add_val(int64_t v) {
  for (size_t i = 0; i < g_nvals; i++)
    if (g_vals[i] == v) return;
  if (g_nvals < NELEM(g_vals)) g_vals[g_nvals++] = v;
}

static void init_vals(void) {
  const int64_t edge[] = {INT64_MIN, INT32_MIN, -2, -1, 0, 1, 2, 3, 4, 7, 8, 16, 17, 31, 32, 33,
                          255, 256, 257, 4096, 4097, INT32_MAX, (int64_t)UINT32_MAX,
                          (int64_t)UINT32_MAX + 1, INT64_MAX};
  for (size_t i = 0; i < NELEM(edge); i++) add_val(edge[i]);
  if (!g_full) return;
  for (int64_t v = -8; v <= 300; v++) add_val(v);
  for (int k = 0; k < 63; k++) {
    add_val(((int64_t)1 << k) - 1);
    add_val((int64_t)1 << k);
    add_val(((int64_t)1 << k) + 1);
    add_val(-((int64_t)1 << k));
  }
}

typedef struct fixture {
  xir_program *p;   /* rmsnorm */
  xir_shape sh;     /* R=4,C=16 */
  xir_candidate c;  /* a legal candidate for W = 4 */
  xir_diag d;
} fixture;

static void fixture_make(fixture *f) {
  memset(f, 0, sizeof *f);
  assert_int_equal(xir_kernel_load("rmsnorm", &f->p, &f->d), XIR_OK);
  assert_int_equal(xir_shape_parse(f->p, "R=4,C=16", &f->sh, &f->d), XIR_OK);
  assert_int_equal(xir_candidate_parse(f->p, &f->sh, "perm=r,l=1,B=8", 4, &f->c, &f->d), XIR_OK);
}

static void expect_status(xir_status got, xir_status want, const char *what) {
  if (got != want) fail_msg("%s: expected '%s', got '%s'", what, xir_status_name(want), xir_status_name(got));
}

/* ---- xir_status.h ---- */

static void test_status_and_diag(void **state) {
  (void)state;
  for (size_t i = 0; i < g_nvals; i++) assert_non_null(xir_status_name((xir_status)(int)g_vals[i]));
  xir_diag_clear(NULL);
  char buf[64] = "x";
  assert_ptr_equal(xir_diag_format(NULL, buf, sizeof buf), buf);
  xir_diag d;
  xir_diag_clear(&d);
  assert_null(xir_diag_format(&d, NULL, 10));
  assert_ptr_equal(xir_diag_format(&d, buf, 0), buf);
  assert_ptr_equal(xir_diag_format(&d, buf, 1), buf);
  assert_int_equal(buf[0], 0);
  /* an allocator with a NULL hook restores the default instead of crashing later */
  xir_allocator bad = {NULL, NULL, NULL, NULL};
  xir_set_allocator(&bad);
  xir_program *p = NULL;
  assert_int_equal(xir_kernel_load("rmsnorm", &p, &d), XIR_OK);
  xir_program_free(p);
  xir_set_allocator(NULL);
}

/* ---- xir.h: programs, shapes, interpreter, kernels ---- */

static void test_program_api(void **state) {
  (void)state;
  fixture f;
  fixture_make(&f);
  xir_diag *d = &f.d;
  const char *text = xir_kernel_text(0);
  xir_program *q = (xir_program *)1;
  expect_status(xir_program_parse(NULL, 5, "x", &q, d), INV, "parse(text NULL)");
  assert_null(q);
  expect_status(xir_program_parse(text, strlen(text), "x", NULL, d), INV, "parse(out NULL)");
  expect_status(xir_program_parse(text, strlen(text), NULL, &q, NULL), XIR_OK, "parse(file NULL)");
  xir_program_free(q);
  expect_status(xir_program_parse(text, 0, NULL, &q, d), XIR_ERR_PARSE, "parse(len 0)");
  expect_status(xir_program_parse_file(NULL, &q, d), INV, "parse_file(path NULL)");
  expect_status(xir_program_parse_file("/nonexistent/x.xir", NULL, d), INV, "parse_file(out NULL)");
  expect_status(xir_program_parse_file("/nonexistent/x.xir", &q, d), XIR_ERR_IO, "parse_file(missing)");
  char *s = (char *)1;
  expect_status(xir_program_print(NULL, &s, d), INV, "print(p NULL)");
  assert_null(s);
  expect_status(xir_program_print(f.p, NULL, d), INV, "print(out NULL)");
  xir_program_free(NULL);
  xir_free(NULL);
  for (size_t i = 0; i < g_nvals; i++) {
    int v = (int)g_vals[i];
    const char *on = xir_op_name((xir_op)v);
    assert_true((v >= 0 && v < XIR_OP_COUNT_) == (on != NULL));
    assert_null(xir_program_dim_name(NULL, v));
    assert_true(xir_program_dim_name(f.p, v) == NULL || (v >= 0 && v < 2));
    xir_param_info info;
    xir_status st = xir_program_param(f.p, v, &info);
    assert_true(st == XIR_OK ? v >= 0 && v < xir_program_num_params(f.p) : st == INV);
    expect_status(xir_program_param(NULL, v, &info), INV, "param(p NULL)");
    expect_status(xir_program_param(f.p, v, NULL), INV, "param(info NULL)");
    assert_true(xir_program_root_name(f.p, v) == NULL || v == 0);
    assert_true(xir_program_root_dim(f.p, v) == -1 || v == 0);
    assert_null(xir_program_root_name(NULL, v));
    assert_int_equal(xir_program_root_dim(NULL, v), -1);
    assert_true(xir_param_numel(f.p, v, &f.sh) == 0 || (v >= 0 && v < 3));
    assert_int_equal(xir_param_numel(NULL, v, &f.sh), 0);
    assert_int_equal(xir_param_numel(f.p, v, NULL), 0);
    assert_true(xir_kernel_name(v) == NULL || (v >= 0 && v < xir_kernel_count()));
    assert_true(xir_kernel_text(v) == NULL || (v >= 0 && v < xir_kernel_count()));
    assert_true(xir_kernel_summary(v) == NULL || (v >= 0 && v < xir_kernel_count()));
  }
  assert_null(xir_program_name(NULL));
  assert_int_equal(xir_program_num_dims(NULL), 0);
  assert_int_equal(xir_program_num_params(NULL), 0);
  assert_int_equal(xir_program_num_root(NULL), 0);
  assert_int_equal(xir_program_find_dim(NULL, "R"), -1);
  assert_int_equal(xir_program_find_dim(f.p, NULL), -1);
  assert_int_equal(xir_program_find_param(NULL, "x"), -1);
  assert_int_equal(xir_program_find_param(f.p, NULL), -1);
  assert_int_equal(xir_kernel_find(NULL), -1);
  expect_status(xir_kernel_load(NULL, &q, d), XIR_ERR_NOT_FOUND, "kernel_load(name NULL)");
  expect_status(xir_kernel_load("rmsnorm", NULL, d), INV, "kernel_load(out NULL)");
  xir_program_free(f.p);
}

static void test_shape_api(void **state) {
  (void)state;
  fixture f;
  fixture_make(&f);
  xir_diag *d = &f.d;
  xir_shape sh;
  expect_status(xir_shape_parse(NULL, "R=4,C=16", &sh, d), INV, "shape_parse(p NULL)");
  expect_status(xir_shape_parse(f.p, "R=4,C=16", NULL, d), INV, "shape_parse(shape NULL)");
  expect_status(xir_shape_parse(f.p, NULL, &sh, d), INV, "shape_parse(spec NULL)");
  const char *bad[] = {"", "R", "R=", "=4", ",", "R=4,,C=16", "R=0,C=16",
                       "R=-1,C=16", "R=2147483648,C=16", "R=99999999999999999999999,C=1",
                       "R=4,R=4,C=16", "X=1,R=4,C=16", "R=4", "R=4;C=16", "R=4,C=1e3"};
  for (size_t i = 0; i < NELEM(bad); i++) {
    xir_status st = xir_shape_parse(f.p, bad[i], &sh, d);
    if (st == XIR_OK) fail_msg("shape '%s' accepted", bad[i]);
    assert_true(d->msg[0] != 0);
  }
  expect_status(xir_shape_check(NULL, &f.sh, d), INV, "shape_check(p NULL)");
  expect_status(xir_shape_check(f.p, NULL, d), INV, "shape_check(shape NULL)");
  char buf[128];
  assert_ptr_equal(xir_shape_format(NULL, &f.sh, buf, sizeof buf), buf);
  assert_ptr_equal(xir_shape_format(f.p, NULL, buf, sizeof buf), buf);
  assert_null(xir_shape_format(f.p, &f.sh, NULL, 0));
  assert_int_equal(xir_shape_root_count(NULL, &f.sh), 0);
  assert_int_equal(xir_shape_root_count(f.p, NULL), 0);
  for (size_t i = 0; i < g_nvals; i++) {
    xir_shape t = f.sh;
    t.ndims = (int)g_vals[i];
    xir_status st = xir_shape_check(f.p, &t, d);
    assert_true(st == XIR_OK ? t.ndims == 2 : st == INV);
    xir_shape_format(f.p, &t, buf, sizeof buf);
    t = f.sh;
    t.dims[i % 2] = g_vals[i];
    st = xir_shape_check(f.p, &t, d);
    assert_true(st == XIR_OK ? g_vals[i] >= 1 && g_vals[i] < ((int64_t)1 << 31) : st == INV);
    xir_shape_format(f.p, &t, buf, (size_t)(i % 8));
    for (size_t cap = 0; cap < 4; cap++) xir_shape_format(f.p, &f.sh, buf, cap);
  }
  /* the interpreter */
  xir_arg args[4];
  memset(args, 0, sizeof args);
  expect_status(xir_interpret(NULL, &f.sh, args, d), INV, "interpret(p NULL)");
  expect_status(xir_interpret(f.p, NULL, args, d), INV, "interpret(shape NULL)");
  expect_status(xir_interpret(f.p, &f.sh, NULL, d), INV, "interpret(args NULL)");
  expect_status(xir_interpret(f.p, &f.sh, args, d), INV, "interpret(buffers NULL)");
  xir_program_free(f.p);
}

/* A fresh builder with dims R, C, buffers x[R, C] and out y[R, C], scalar s, root r in R. */
typedef struct bfix {
  xir_builder *b;
  int R, C, x, y, s, r;
  xir_value rv;
} bfix;

static void bfix_make(bfix *f) {
  assert_int_equal(xir_builder_new("b", &f->b), XIR_OK);
  f->R = xir_builder_dim(f->b, "R");
  f->C = xir_builder_dim(f->b, "C");
  int dims[2] = {f->R, f->C};
  f->x = xir_builder_buffer(f->b, "x", XIR_F32, 2, dims, 0);
  f->y = xir_builder_buffer(f->b, "y", XIR_F32, 2, dims, 1);
  f->s = xir_builder_scalar(f->b, "s", XIR_F32, 0, 0);
  f->r = xir_builder_root(f->b, "r", f->R);
  f->rv = xir_builder_root_value(f->b, f->r);
}

/* Finishes; a probe left the builder either valid or failed, never crashed. */
static void bfix_finish(bfix *f) {
  xir_program *p = (xir_program *)1;
  xir_diag d;
  xir_status st = xir_builder_finish(f->b, &p, &d);
  if (st) {
    assert_null(p);
    assert_true(d.msg[0] != 0);
  }
  xir_program_free(p);
}

static void test_builder_api(void **state) {
  (void)state;
  xir_diag d;
  xir_program *p = (xir_program *)1;
  expect_status(xir_builder_new("k", NULL), INV, "builder_new(out NULL)");
  expect_status(xir_builder_finish(NULL, &p, &d), INV, "finish(NULL)");
  assert_null(p);
  xir_builder_free(NULL);
  xir_builder_set_loc(NULL, "f", 1, 1);
  assert_int_equal(xir_builder_dim(NULL, "R"), -1);
  assert_int_equal(xir_builder_buffer(NULL, "x", XIR_F32, 1, (int[]){0}, 0), -1);
  assert_int_equal(xir_builder_scalar(NULL, "s", XIR_F32, 0, 0), -1);
  assert_int_equal(xir_builder_root(NULL, "r", 0), -1);
  xir_builder_require(NULL, 0);
  assert_true(xir_builder_const_f32(NULL, 1) < 0);
  assert_true(xir_builder_const_i64(NULL, 1) < 0);
  assert_true(xir_builder_dim_value(NULL, 0) < 0);
  assert_true(xir_builder_param_value(NULL, 0) < 0);
  assert_true(xir_builder_root_value(NULL, 0) < 0);
  assert_true(xir_builder_iota(NULL, 0) < 0);
  assert_true(xir_builder_op(NULL, XIR_OP_ADD, 2, (xir_value[]){0, 0}) < 0);
  assert_true(xir_builder_reduce(NULL, XIR_OP_REDUCE_SUM, 0, -1) < 0);
  assert_true(xir_builder_load(NULL, 0, 1, (xir_index[]){{1, -1}}) < 0);
  xir_builder_store(NULL, 0, 0, NULL, 0);
  xir_builder_name(NULL, 0, "v");
  bfix f;
  bfix_make(&f);
  expect_status(xir_builder_finish(f.b, NULL, &d), INV, "finish(out NULL)"); /* consumed */
  /* NULL pointers into a live builder: each makes it fail (sticky), never crash */
  for (int probe = 0; probe < 12; probe++) {
    bfix_make(&f);
    switch (probe) {
      case 0: xir_builder_set_loc(f.b, NULL, -1, INT_MIN); break;
      case 1: xir_builder_dim(f.b, NULL); break;
      case 2: xir_builder_buffer(f.b, NULL, XIR_F32, 1, (int[]){0}, 0); break;
      case 3: xir_builder_buffer(f.b, "z", XIR_F32, 2, NULL, 0); break;
      case 4: xir_builder_scalar(f.b, NULL, XIR_F32, 0, 0); break;
      case 5: xir_builder_root(f.b, NULL, f.C); break;
      case 6: xir_builder_op(f.b, XIR_OP_ADD, 2, NULL); break;
      case 7: xir_builder_load(f.b, f.x, 2, NULL); break;
      case 8: xir_builder_store(f.b, f.y, 2, NULL, f.rv); break;
      case 9: xir_builder_name(f.b, f.rv, NULL); break;
      case 10: xir_builder_name(f.b, xir_builder_op(f.b, XIR_OP_NEG, 1, &f.rv), NULL); break;
      case 11: {
        xir_builder *b2 = NULL; /* a NULL kernel name is "kernel" */
        assert_int_equal(xir_builder_new(NULL, &b2), XIR_OK);
        xir_builder_free(b2);
        break;
      }
    }
    bfix_finish(&f);
  }
  /* integer arguments at their edges */
  for (size_t i = 0; i < g_nvals; i++) {
    int v = (int)g_vals[i];
    for (int probe = 0; probe < 16; probe++) {
      bfix_make(&f);
      xir_value one = xir_builder_const_i64(f.b, 1);
      xir_index idx[XIR_MAX_RANK + 1] = {xir_at(f.rv), xir_slice()};
      switch (probe) {
        case 0: xir_builder_buffer(f.b, "z", (xir_elem)v, 1, &f.R, 0); break;
        case 1: xir_builder_buffer(f.b, "z", XIR_F32, v, (int[XIR_MAX_RANK + 1]){0}, 0); break;
        case 2: xir_builder_buffer(f.b, "z", XIR_F32, 1, &v, 0); break;
        case 3: xir_builder_scalar(f.b, "z", (xir_elem)v, 1, (double)g_vals[i]); break;
        case 4: xir_builder_root(f.b, "q", v); break;
        case 5: xir_builder_require(f.b, v); break;
        case 6: xir_builder_dim_value(f.b, v); break;
        case 7: xir_builder_param_value(f.b, v); break;
        case 8: xir_builder_root_value(f.b, v); break;
        case 9: xir_builder_iota(f.b, v); break;
        case 10: xir_builder_op(f.b, (xir_op)v, 2, (xir_value[]){one, one}); break;
        case 11: xir_builder_op(f.b, XIR_OP_ADD, v, (xir_value[8]){one, one}); break;
        case 12: xir_builder_reduce(f.b, (xir_op)v, one, v); break;
        case 13: xir_builder_load(f.b, v, 2, idx); break;
        case 14: xir_builder_load(f.b, f.x, v, idx); break;
        case 15: xir_builder_store(f.b, f.y, 2, idx, v); break;
      }
      /* a valid body so that a probe that was ignored still finishes */
      xir_value ld = xir_builder_load(f.b, f.x, 2, idx);
      xir_builder_store(f.b, f.y, 2, idx, ld);
      xir_builder_name(f.b, v, "nm");
      bfix_finish(&f);
    }
  }
}

/* ---- xir_compile.h ---- */

static void test_bridge_api(void **state) {
  (void)state;
  fixture f;
  fixture_make(&f);
  xir_diag *d = &f.d;
  xir_candidate *all = (xir_candidate *)1, c;
  size_t n = 9;
  expect_status(xir_candidates(NULL, &f.sh, 4, &all, &n, d), INV, "candidates(p NULL)");
  assert_null(all);
  assert_int_equal(n, 0);
  expect_status(xir_candidates(f.p, NULL, 4, &all, &n, d), INV, "candidates(shape NULL)");
  expect_status(xir_candidates(f.p, &f.sh, 4, NULL, &n, d), INV, "candidates(out NULL)");
  expect_status(xir_candidates(f.p, &f.sh, 4, &all, NULL, d), INV, "candidates(count NULL)");
  uint8_t perm[XIR_MAX_ROOT] = {0};
  expect_status(xir_candidate_make(NULL, &f.sh, 4, 8, 1, perm, &c, d), INV, "make(p NULL)");
  expect_status(xir_candidate_make(f.p, NULL, 4, 8, 1, perm, &c, d), INV, "make(shape NULL)");
  expect_status(xir_candidate_make(f.p, &f.sh, 4, 8, 1, NULL, &c, d), INV, "make(perm NULL)");
  expect_status(xir_candidate_make(f.p, &f.sh, 4, 8, 1, perm, NULL, d), INV, "make(c NULL)");
  expect_status(xir_candidate_parse(NULL, &f.sh, "perm=r,l=1,B=8", 4, &c, d), INV, "parse(p NULL)");
  expect_status(xir_candidate_parse(f.p, NULL, "perm=r,l=1,B=8", 4, &c, d), INV, "parse(shape NULL)");
  expect_status(xir_candidate_parse(f.p, &f.sh, NULL, 4, &c, d), INV, "parse(name NULL)");
  expect_status(xir_candidate_parse(f.p, &f.sh, "perm=r,l=1,B=8", 4, NULL, d), INV, "parse(c NULL)");
  char buf[128];
  assert_ptr_equal(xir_candidate_name(NULL, &f.c, buf, sizeof buf), buf);
  assert_ptr_equal(xir_candidate_name(f.p, NULL, buf, sizeof buf), buf);
  assert_null(xir_candidate_name(f.p, &f.c, NULL, 0));
  const char *names[] = {"", "perm=", "perm=r", "perm=r,l=0,B=8", "perm=r,l=1,B=-8",
                         "perm=r,l=1,B=99999999999999999999999", "perm=r.r,l=1,B=8",
                         "perm=zz,l=1,B=8", "perm=r,l=1,B=8,W=3", "perm=r,l=1,B=8,X=1",
                         "perm=r,l=3,B=8", "perm=r,l=16,B=8", "perm=r,l=1,B=4294967304", ",,,", "="};
  for (size_t i = 0; i < NELEM(names); i++)
    if (xir_candidate_parse(f.p, &f.sh, names[i], 4, &c, d) == XIR_OK)
      fail_msg("candidate '%s' accepted", names[i]);
  for (size_t i = 0; i < g_nvals; i++) {
    uint32_t v = (uint32_t)g_vals[i];
    xir_status st = xir_candidates(f.p, &f.sh, v, &all, &n, d);
    assert_true(st == XIR_OK ? (v == 1 || v == 2 || v == 4 || v == 8 || v == 16) : st == INV);
    if (!st) xir_free(all);
    for (int which = 0; which < 3; which++) {
      uint32_t W = which == 0 ? v : 4, B = which == 1 ? v : 8, l = which == 2 ? v : 1;
      st = xir_candidate_make(f.p, &f.sh, W, B, l, perm, &c, d);
      assert_true(st == XIR_OK || st == INV || st == XIR_ERR_NOT_FOUND);
      if (!st) xir_candidate_name(f.p, &c, buf, sizeof buf);
    }
    uint8_t pv[XIR_MAX_ROOT] = {(uint8_t)v};
    st = xir_candidate_make(f.p, &f.sh, 4, 8, 1, pv, &c, d);
    assert_true(st == XIR_OK ? (uint8_t)v == 0 : st == INV);
    xir_candidate g = f.c; /* a garbage candidate can still be named */
    g.nperm = (int)g_vals[i];
    g.perm[0] = (uint8_t)v;
    xir_candidate_name(f.p, &g, buf, (size_t)(i % 16));
    xir_candidate_name(f.p, &g, buf, sizeof buf);
    assert_non_null(xir_impl_kind_name((xir_impl_kind)(int)g_vals[i]));
  }
  xir_program_free(f.p);
}

static void test_compile_api(void **state) {
  (void)state;
  fixture f;
  fixture_make(&f);
  xir_diag *d = &f.d;
  xir_compiler *cc = (xir_compiler *)1;
  expect_status(xir_compiler_create(NULL, NULL, d), INV, "compiler_create(out NULL)");
  expect_status(xir_compiler_create(NULL, &cc, d), XIR_OK, "compiler_create(opt NULL)");
  xir_compiler_destroy(NULL);
  assert_int_equal(xir_compiler_width(NULL), 0);
  assert_non_null(xir_compiler_cpu(NULL));
  assert_non_null(xir_compiler_features(NULL));
  assert_non_null(xir_llvm_version());
  const xir_kernel *k = (const xir_kernel *)1;
  expect_status(xir_compile(NULL, f.p, &f.sh, &f.c, &k, d), INV, "compile(cc NULL)");
  assert_null(k);
  expect_status(xir_compile(cc, NULL, &f.sh, &f.c, &k, d), INV, "compile(p NULL)");
  expect_status(xir_compile(cc, f.p, NULL, &f.c, &k, d), INV, "compile(shape NULL)");
  expect_status(xir_compile(cc, f.p, &f.sh, NULL, &k, d), INV, "compile(cand NULL)");
  expect_status(xir_compile(cc, f.p, &f.sh, &f.c, NULL, d), INV, "compile(out NULL)");
  assert_int_equal(xir_kernel_args_size(NULL), 0);
  assert_null(xir_kernel_entry(NULL));
  assert_int_equal(xir_kernel_blocks(NULL), 0);
  assert_null(xir_kernel_candidate(NULL));
  xir_kernel_info info;
  memset(&info, 0xff, sizeof info);
  xir_kernel_get_info(NULL, &info);
  assert_null(info.ir_text);
  xir_arg args[4];
  memset(args, 0, sizeof args);
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  expect_status(xir_kernel_pack_args(NULL, args, slots, d), INV, "pack_args(k NULL)");
  /* a real kernel for the host width, then NULLs around it */
  xir_candidate *all = NULL;
  size_t n = 0;
  assert_int_equal(xir_candidates(f.p, &f.sh, xir_compiler_width(cc), &all, &n, d), XIR_OK);
  expect_status(xir_compile(cc, f.p, &f.sh, &all[0], &k, d), XIR_OK, "compile");
  expect_status(xir_kernel_pack_args(k, NULL, slots, d), INV, "pack_args(args NULL)");
  expect_status(xir_kernel_pack_args(k, args, NULL, d), INV, "pack_args(slots NULL)");
  expect_status(xir_kernel_pack_args(k, args, slots, d), INV, "pack_args(buffers NULL)");
  uint64_t nb = 5;
  expect_status(xir_kernel_pack_launch(NULL, &f.sh, args, slots, &nb, d), INV, "pack_launch(k NULL)");
  assert_int_equal(nb, 0);
  expect_status(xir_kernel_pack_launch(k, NULL, args, slots, NULL, d), INV, "pack_launch(shape NULL)");
  expect_status(xir_kernel_check_shape(NULL, &f.sh, NULL, d), INV, "check_shape(k NULL)");
  expect_status(xir_kernel_check_shape(k, NULL, NULL, d), INV, "check_shape(shape NULL)");
  assert_null(xir_kernel_shape(NULL));
  assert_non_null(xir_kernel_shape(k));
  expect_status(xir_program_alias_ok(NULL, 0, 0, d), INV, "alias_ok(p NULL)");
  expect_status(xir_program_alias_ok(f.p, -1, 99, d), INV, "alias_ok(bad params)");
  expect_status(xir_arg_strides(NULL, &f.sh, 0, args, NULL, d), INV, "arg_strides(NULL)");
  assert_int_equal(xir_candidate_dim_max(NULL, NULL, 0), 0);
  xir_kernel_get_info(k, NULL);
  /* candidates that do not fit this compiler or shape */
  for (size_t i = 0; i < g_nvals; i++) {
    xir_candidate c = all[0];
    switch (i % 4) {
      case 0: c.W = (uint32_t)g_vals[i]; break;
      case 1: c.B = (uint32_t)g_vals[i]; break;
      case 2: c.local = (uint32_t)g_vals[i]; break;
      case 3: c.nperm = (int)g_vals[i]; c.perm[0] = (uint8_t)g_vals[i]; break;
    }
    const xir_kernel *k2 = NULL;
    xir_status st = xir_compile(cc, f.p, &f.sh, &c, &k2, d);
    if (st) assert_null(k2);
  }
  xir_free(all);
  /* options out of range */
  const uint32_t widths[] = {3, 32, 64, UINT32_MAX};
  for (size_t i = 0; i < NELEM(widths); i++) {
    xir_compiler_options o = {.force_width = widths[i]};
    xir_compiler *c2 = (xir_compiler *)1;
    if (xir_compiler_create(&o, &c2, d) == XIR_OK) fail_msg("force_width %u accepted", widths[i]);
    assert_null(c2);
  }
  xir_compiler_options o = {.pipeline = "no-such-pass<>", .codegen = "ultra"};
  xir_compiler *c3 = NULL;
  if (xir_compiler_create(&o, &c3, d) == XIR_OK) xir_compiler_destroy(c3);
  xir_compiler_destroy(cc);
  xir_program_free(f.p);
}

/* ---- xir_plan.h ---- */

static xir_status evaluate_nan(void *ud, const xir_execution_work *w, const xir_cost_coefficients *c,
                               xir_cost_terms *out) {
  (void)ud;
  (void)w;
  (void)c;
  out->total = 0.0 / 0.0;
  return XIR_OK;
}

static void test_plan_api(void **state) {
  (void)state;
  fixture f;
  fixture_make(&f);
  xir_diag *d = &f.d;
  xir_cost_coefficients_default(NULL);
  xir_cost_coefficients_experimental(NULL);
  xir_cost_coefficients co;
  xir_cost_coefficients_from_calibration(NULL, &co);
  xir_calibration cal = {0};
  xir_cost_coefficients_from_calibration(&cal, NULL);
  expect_status(xir_calibrate(NULL, NULL, NULL, d), INV, "calibrate(NULLs)");
  expect_status(xir_calibrate(NULL, NULL, &cal, d), INV, "calibrate(cc NULL)");
  xir_plan_options_default(NULL);
  xir_plan *pl = (xir_plan *)1;
  xir_plan_options o;
  xir_plan_options_default(&o);
  expect_status(xir_plan_make(NULL, &f.sh, &o, &pl, d), INV, "plan_make(p NULL)");
  assert_null(pl);
  expect_status(xir_plan_make(f.p, NULL, &o, &pl, d), INV, "plan_make(shape NULL)");
  expect_status(xir_plan_make(f.p, &f.sh, &o, NULL, d), INV, "plan_make(out NULL)");
  expect_status(xir_plan_make(f.p, &f.sh, NULL, &pl, d), XIR_OK, "plan_make(options NULL)");
  xir_plan_free(pl);
  xir_plan_free(NULL);
  xir_execution_work w;
  xir_cost_terms t;
  xir_cost_coefficients_default(&co);
  expect_status(xir_execution_work_make(NULL, &f.sh, &f.c, 0, 1, &w, d), INV, "work(p NULL)");
  expect_status(xir_execution_work_make(f.p, NULL, &f.c, 0, 1, &w, d), INV, "work(shape NULL)");
  expect_status(xir_execution_work_make(f.p, &f.sh, NULL, 0, 1, &w, d), INV, "work(cand NULL)");
  expect_status(xir_execution_work_make(f.p, &f.sh, &f.c, 0, 1, NULL, d), INV, "work(out NULL)");
  expect_status(xir_execution_work_make(f.p, &f.sh, &f.c, 0, 1, &w, d), XIR_OK, "work");
  expect_status(xir_cost_evaluate(NULL, NULL, &co, &t, d), INV, "evaluate(work NULL)");
  expect_status(xir_cost_evaluate(NULL, &w, NULL, &t, d), INV, "evaluate(coefficients NULL)");
  expect_status(xir_cost_evaluate(NULL, &w, &co, NULL, d), INV, "evaluate(out NULL)");
  xir_cost_policy pol;
  memset(&pol, 0, sizeof pol);
  expect_status(xir_cost_evaluate(&pol, &w, &co, &t, d), XIR_OK, "evaluate(empty policy)");
  pol.evaluate = evaluate_nan;
  expect_status(xir_cost_evaluate(&pol, &w, &co, &t, d), XIR_ERR_COST, "evaluate(NaN)");
  for (size_t i = 0; i < g_nvals; i++) {
    int64_t v = g_vals[i];
    assert_non_null(xir_cost_term_name((xir_cost_term)(int)v));
    for (size_t j = 0; j < g_nvals; j += 3)
      (void)xir_critical_count((uint64_t)v, (uint64_t)g_vals[j], (uint64_t)g_vals[(j + i) % g_nvals],
                               (uint32_t)g_vals[(j + 2 * i) % g_nvals]);
    xir_status st = xir_execution_work_make(f.p, &f.sh, &f.c, (uint32_t)v, 2, &w, d);
    assert_true(st == XIR_OK || st == INV);
    st = xir_execution_work_make(f.p, &f.sh, &f.c, 0, (uint32_t)v, &w, d);
    assert_true(st == XIR_OK ? (uint32_t)v >= 1 && (uint32_t)v <= XIR_RUNTIME_MAX_WORKERS : st == INV);
    for (int field = 0; field < 5; field++) {
      xir_plan_options_default(&o);
      switch (field) {
        case 0: o.workers = (uint32_t)v; break;
        case 1: o.budget = (size_t)v; break;
        case 2: o.blocks_per_task = v; break;
        case 3: o.local_lanes = (uint32_t)v; break;
        case 4: o.width = (uint32_t)v; break;
      }
      pl = (xir_plan *)1;
      st = xir_plan_make(f.p, &f.sh, &o, &pl, d);
      if (st) {
        assert_null(pl);
        assert_true(d->msg[0] != 0);
      }
      xir_plan_free(pl);
    }
    co.c[i % XIR_TERM_COUNT] = (double)v;
    o.coefficients = &co;
    pl = NULL;
    st = xir_plan_make(f.p, &f.sh, &o, &pl, d);
    assert_true(st == XIR_OK ? v >= 0 : st != XIR_OK);
    xir_plan_free(pl);
    xir_cost_coefficients_default(&co);
  }
  xir_program_free(f.p);
}

/* ---- xir_runtime.h ---- */

static int nop_fn(void *ctx, uint64_t b, uint64_t e) {
  (void)ctx;
  (void)b;
  (void)e;
  return 0;
}

static void test_runtime_api(void **state) {
  (void)state;
  xir_diag d;
  xir_runtime_options_default(NULL);
  xir_runtime *rt = (xir_runtime *)1, *rt2 = NULL;
  xir_runtime_options o = {2, XIR_WAIT_SPIN_THEN_SLEEP, 50};
  expect_status(xir_runtime_create(&o, NULL, &d), INV, "runtime_create(out NULL)");
  assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_OK);
  assert_int_equal(xir_runtime_create(&o, &rt2, &d), XIR_OK);
  xir_runtime_destroy(NULL);
  assert_int_equal(xir_runtime_workers(NULL), 0);
  expect_status(xir_runtime_set_wait(NULL, XIR_WAIT_SPIN, 0, &d), INV, "set_wait(NULL)");
  xir_runtime_get_wait(NULL, NULL, NULL);
  xir_runtime_get_wait(rt, NULL, NULL);
  xir_launch_shape ls;
  expect_status(xir_launch_resolve(2, 10, 1, 1, NULL, &d), INV, "resolve(out NULL)");
  expect_status(xir_runtime_launch(NULL, nop_fn, NULL, 1, 1, 1, NULL, &d), INV, "launch(rt NULL)");
  expect_status(xir_runtime_launch(rt, NULL, NULL, 1, 1, 1, NULL, &d), INV, "launch(fn NULL)");
  xir_wake_cost wc;
  expect_status(xir_runtime_measure_wake(NULL, 1, &wc, &d), INV, "measure_wake(rt NULL)");
  expect_status(xir_runtime_measure_wake(rt, 1, NULL, &d), INV, "measure_wake(out NULL)");
  xir_batch *b = (xir_batch *)1, *b2 = NULL;
  expect_status(xir_batch_create(NULL, &b, &d), INV, "batch_create(rt NULL)");
  expect_status(xir_batch_create(rt, NULL, &d), INV, "batch_create(out NULL)");
  assert_int_equal(xir_batch_create(rt, &b, &d), XIR_OK);
  assert_int_equal(xir_batch_create(rt2, &b2, &d), XIR_OK);
  xir_batch_destroy(NULL);
  xir_batch_reset(NULL);
  assert_int_equal(xir_batch_count(NULL), 0);
  expect_status(xir_batch_record(NULL, nop_fn, NULL, 1, 1, 1, &d), INV, "record(b NULL)");
  expect_status(xir_batch_record(b, NULL, NULL, 1, 1, 1, &d), INV, "record(fn NULL)");
  expect_status(xir_runtime_submit(NULL, b, &d), INV, "submit(rt NULL)");
  expect_status(xir_runtime_submit(rt, NULL, &d), INV, "submit(b NULL)");
  expect_status(xir_runtime_submit(rt, b2, &d), INV, "submit(batch of another runtime)");
  xir_batch_result br;
  xir_batch_get_result(NULL, &br);
  xir_batch_get_result(b, NULL);
  xir_launch_stats st;
  expect_status(xir_batch_stats(NULL, 0, &st, &d), INV, "stats(b NULL)");
  expect_status(xir_batch_stats(b, 0, NULL, &d), INV, "stats(out NULL)");
  for (size_t i = 0; i < g_nvals; i++) {
    int64_t v = g_vals[i];
    uint32_t u = (uint32_t)v;
    xir_runtime_options ro = {u, XIR_WAIT_SPIN_THEN_SLEEP, 50};
    xir_runtime *r3 = (xir_runtime *)1;
    xir_status s = u <= 4 ? xir_runtime_create(&ro, &r3, &d) : XIR_ERR_INVALID_ARG;
    if (u > 4 && u > XIR_RUNTIME_MAX_WORKERS) s = xir_runtime_create(&ro, &r3, &d);
    if (s == XIR_OK) xir_runtime_destroy(r3);
    ro = (xir_runtime_options){2, (xir_wait_policy)(int)v, u};
    r3 = NULL;
    if (xir_runtime_create(&ro, &r3, &d) == XIR_OK) xir_runtime_destroy(r3);
    s = xir_runtime_set_wait(rt, (xir_wait_policy)(int)v, 0, &d);
    assert_true(s == XIR_OK ? (int)v >= 0 && (int)v <= 2 : s == INV);
    s = xir_runtime_set_wait(rt, XIR_WAIT_SPIN_THEN_SLEEP, u, &d);
    assert_true(s == XIR_OK ? u <= XIR_RUNTIME_MAX_SPIN_US : s == INV);
    s = xir_launch_resolve(u, (uint64_t)v, u, u, &ls, &d);
    assert_true(s == XIR_OK ? u >= 1 && u <= XIR_RUNTIME_MAX_WORKERS : s == INV);
    (void)xir_launch_home_share((uint64_t)v, u, (uint32_t)g_vals[(i + 3) % g_nvals]);
    /* small launches only: the block count is what the function is called on */
    uint64_t L = (uint64_t)v <= 4096 ? (uint64_t)v : 7;
    assert_int_equal(xir_runtime_launch(rt, nop_fn, NULL, L, u, u, NULL, &d), XIR_OK);
    xir_batch_reset(b);
    assert_int_equal(xir_batch_record(b, nop_fn, NULL, L, u, u, &d), XIR_OK);
    assert_int_equal(xir_runtime_submit(rt, b, &d), XIR_OK);
    s = xir_batch_stats(b, (size_t)v, &st, &d);
    assert_true(s == XIR_OK ? v == 0 : s == INV);
    if (u > 1000000) {
      s = xir_runtime_measure_wake(rt, u, &wc, &d);
      assert_int_equal(s, INV);
    }
  }
  xir_runtime_set_wait(rt, XIR_WAIT_SPIN_THEN_SLEEP, 50, &d);
  xir_batch_destroy(b);
  xir_batch_destroy(b2);
  xir_runtime_destroy(rt);
  xir_runtime_destroy(rt2);
}

int main(int argc, char **argv) {
  const char *mode = getenv("XIR_SWEEP");
  g_full = mode && strcmp(mode, "full") == 0;
  init_vals();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_and_diag), cmocka_unit_test(test_program_api),
      cmocka_unit_test(test_shape_api),       cmocka_unit_test(test_builder_api),
      cmocka_unit_test(test_bridge_api),      cmocka_unit_test(test_compile_api),
      cmocka_unit_test(test_plan_api),        cmocka_unit_test(test_runtime_api),
  };
  if (argc > 1) cmocka_set_test_filter(argv[1]);
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_session.c — the one-call API (xir_session.h): every built-in kernel through a session on
 * small shapes, the whole output checked against the fp64 oracle with sentinels; the cache (a
 * second run neither plans nor compiles; a program and an equal copy share their entries); bf16
 * and f16 buffers (xir_session_retype);
 * arguments by position (trailing defaults) and by name; explanations; clear errors for an
 * unknown kernel, a bad shape, a wrong argument count, unknown/missing named arguments and a
 * prepared kernel of another session. (Concurrent callers: test_runtime_session.) */
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
#include "lower/pack.h"
#include "lower/stream.h"
#include "xir_compile.h"
#include "xir_session.h"

static void die(const xir_diag *d) {
  char b[2048];
  fail_msg("%s", xir_diag_format(d, b, sizeof b));
}

static xir_session *new_session(uint32_t workers) {
  xir_session_options o = {.workers = workers};
  xir_session *s;
  xir_diag d;
  if (xir_session_create(&o, &s, &d)) die(&d);
  assert_int_equal(xir_session_workers(s), workers);
  return s;
}

static const struct {
  const char *kernel, *shape;
} kCases[] = {
    {"rmsnorm", "R=5,C=33"},
    {"layernorm", "R=3,C=40"},
    {"rope", "R=4,C=32,HD=8"},
    {"rope_cache", "R=4,C=32,HD=8,P=16,H2=4"},
    {"softmax_mask", "R=5,C=20"},
    {"softmax_causal", "R=6,C=17"},
    {"swiglu", "R=3,C=50"},
    {"gelu_residual", "R=4,C=21"},
    {"attention", "B=1,HQ=4,HKV=2,Q=3,K=9,D=8,DV=8"},
    {"attention_causal", "B=2,HQ=2,HKV=1,Q=3,K=9,D=4,DV=6"},
};

/* Runs c's arguments through the session and checks every output and its sentinels. */
static void check_case(xir_session *s, const char *kernel, const char *shape, xir_case *c) {
  xir_diag d;
  xir__case_reset_outputs(c);
  if (xir_session_run_program(s, c->p, shape, c->args, xir_program_num_params(c->p), &d)) die(&d);
  if (!xir__case_sentinels_ok(c)) fail_msg("%s %s: a sentinel was overwritten", kernel, shape);
  xir_tolerance tol = xir__kernel_tolerance(kernel);
  int outputs = 0;
  for (int q = 0; q < xir_program_num_params(c->p); q++) {
    if (!c->ref[q]) continue;
    outputs++;
    xir_compare r = xir__case_compare(c, q, tol);
    if (!r.pass)
      fail_msg("%s %s: %zu of %zu elements out of tolerance (%zu NaN); first at %zu: got %.9g, "
               "oracle %.9g", kernel, shape, r.bad, r.n, r.nan, r.first_bad,
               (double)xir__case_output_f32(c, q, r.first_bad), c->ref[q][r.first_bad]);
  }
  assert_int_equal(outputs, 1);
}

/* check_case through xir_session_run (the kernel by name) instead of _run_program. */
static void check_named(xir_session *s, const char *kernel, const char *shape, xir_case *c) {
  xir_diag d;
  xir__case_reset_outputs(c);
  if (xir_session_run(s, kernel, shape, c->args, xir_program_num_params(c->p), &d)) die(&d);
  if (!xir__case_sentinels_ok(c)) fail_msg("%s %s: a sentinel was overwritten", kernel, shape);
  for (int q = 0; q < xir_program_num_params(c->p); q++)
    if (c->ref[q] && !xir__case_compare(c, q, xir__kernel_tolerance(kernel)).pass)
      fail_msg("%s %s (by name): out of tolerance", kernel, shape);
}

/* The run memo (session.c): a repeated run skips the lookups and counts as a cache hit; it
 * never answers for another session (a new one, maybe at the same address), another shape text,
 * or a caller's program whose memory now holds another program. More shapes than memo slots
 * cycle through correctly. */
static void test_run_memo(void **state) {
  (void)state;
  xir_diag d;
  for (int round = 0; round < 2; round++) { /* the second session may reuse the first's address */
    xir_session *s = new_session(1);
    const xir_program *p;
    if (xir_session_program(s, "rmsnorm", &p, &d)) die(&d);
    const char *shapes[6] = {"R=7,C=100", "R=3,C=100", "R=7,C=64", "R=1,C=17", "R=2,C=5", "C=100,R=7"};
    xir_case c[6];
    for (int i = 0; i < 6; i++) {
      xir_shape sh;
      if (xir_shape_parse(p, shapes[i], &sh, &d) || xir__case_init(&c[i], p, &sh, 11 + (uint64_t)i, &d) ||
          xir__case_oracle(&c[i], &d))
        die(&d);
    }
    /* round 2 first: the same name and shape as the last call of round 1's session, whose
     * memo entry is still in this thread's slots (and the new session may have its address) */
    if (round == 1) check_named(s, "rmsnorm", shapes[5], &c[5]);
    for (int it = 0; it < 3; it++)
      for (int i = 0; i < 6; i++) {
        check_named(s, "rmsnorm", shapes[i], &c[i]);
        check_named(s, "rmsnorm", shapes[i], &c[i]); /* a memo hit */
        check_case(s, "rmsnorm", shapes[i], &c[i]);
        check_case(s, "rmsnorm", shapes[i], &c[i]); /* a memo hit */
      }
    xir_session_stats st;
    xir_session_get_stats(s, &st);
    assert_int_equal(st.compiles, 5); /* "C=100,R=7" is R=7,C=100: the same prepared kernel */
    assert_int_equal(st.launches, 72 + round);
    assert_int_equal(st.hits + st.misses, 72 + round);
    assert_int_equal(st.misses, 5);
    if (round == 0) check_named(s, "rmsnorm", shapes[5], &c[5]);
    for (int i = 0; i < 6; i++) xir__case_free(&c[i]);
    xir_session_destroy(s);
  }
  /* a caller's program, run by pointer, freed, and another parsed (maybe at its address) */
  xir_session *s = new_session(1);
  const char *names[2] = {"rmsnorm", "swiglu"};
  for (int i = 0; i < 2; i++) {
    int idx = xir_kernel_find(names[i]);
    const char *text = xir_kernel_text(idx);
    xir_program *mine;
    if (xir_program_parse(text, strlen(text), "user.xir", &mine, &d)) die(&d);
    xir_shape sh;
    xir_case c;
    if (xir_shape_parse(mine, "R=3,C=40", &sh, &d) || xir__case_init(&c, mine, &sh, 3, &d) ||
        xir__case_oracle(&c, &d))
      die(&d);
    check_case(s, names[i], "R=3,C=40", &c);
    check_case(s, names[i], "R=3,C=40", &c);
    xir__case_free(&c);
    xir_program_free(mine);
  }
  xir_session_destroy(s);
}

/* xir_kernel_pack_args at the kernel's own shape with dense buffers takes the precomputed path
 * (launch.c, pack_dense); it must give the general path's slots bit for bit, and where it hands
 * over (strides, an exact in-place alias, an overlap, a NULL buffer) the same status and message:
 * the general path is reached through xir_kernel_pack_launch with a copy of the shape. */
static void pack_both(const xir_kernel *k, const xir_arg *args, const char *what) {
  unsigned char a[1024], b[1024];
  size_t n = xir_kernel_args_size(k);
  assert_true(n <= sizeof a);
  memset(a, 0xa5, sizeof a);
  memset(b, 0x5a, sizeof b);
  xir_diag da, db;
  memset(&da, 0, sizeof da);
  memset(&db, 0, sizeof db);
  xir_shape copy = *xir_kernel_shape(k);
  uint64_t nb = 0;
  xir_status sa = xir_kernel_pack_args(k, args, a, &da);
  xir_status sb = xir_kernel_pack_launch(k, &copy, args, b, &nb, &db);
  if (sa != sb) fail_msg("%s: status %d (pack_args) vs %d (general)", what, (int)sa, (int)sb);
  if (sa) {
    if (strcmp(da.msg, db.msg) != 0) fail_msg("%s: '%s' vs '%s'", what, da.msg, db.msg);
    return;
  }
  if (memcmp(a, b, n) != 0) fail_msg("%s: the slots differ", what);
  assert_int_equal(nb, xir_kernel_blocks(k));
}

static void test_dense_pack_matches(void **state) {
  (void)state;
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  const char *kernels[4] = {"rmsnorm", "swiglu", "rope_cache", "rope"};
  const char *shapes[4] = {"R=5,C=33", "R=3,C=50", "R=4,C=32,HD=8,P=16,H2=4", "R=3,C=16,HD=8"};
  for (int t = 0; t < 4; t++) {
    xir_program *p;
    xir_shape sh;
    if (xir_kernel_load(kernels[t], &p, &d) || xir_shape_parse(p, shapes[t], &sh, &d)) die(&d);
    xir_candidate *cands;
    size_t nc;
    if (xir_candidates(p, &sh, xir_compiler_width(cc), &cands, &nc, &d)) die(&d);
    xir_case c;
    if (xir__case_init(&c, p, &sh, 9, &d)) die(&d);
    for (size_t i = 0; i < nc; i += 3) {
      const xir_kernel *k;
      if (xir_compile(cc, p, &sh, &cands[i], &k, &d)) die(&d);
      int np = xir_program_num_params(p);
      xir_arg args[8];
      memcpy(args, c.args, sizeof(xir_arg) * (size_t)np);
      pack_both(k, args, "dense");
      /* a session's pack (xir__kernel_pack_dense): the trailing defaulted scalars left out
       * give the slots of the full list with use_default; a buffer left out hands over */
      int nreq = np;
      while (nreq > 0 && args[nreq - 1].use_default) nreq--;
      {
        unsigned char a[1024], b[1024];
        size_t n = xir_kernel_args_size(k);
        memset(a, 0xa5, sizeof a);
        memset(b, 0x5a, sizeof b);
        xir_arg cut[8]; /* what lies past nargs is not read */
        memcpy(cut, args, sizeof(xir_arg) * (size_t)np);
        for (int q = nreq; q < np; q++) cut[q] = (xir_arg){.scalar = 99.0};
        assert_int_equal(xir__kernel_pack_dense(k, cut, nreq, a), 1);
        if (xir_kernel_pack_args(k, args, b, &d)) die(&d);
        if (memcmp(a, b, n) != 0) fail_msg("%s: the session's pack differs", kernels[t]);
        assert_int_equal(xir__kernel_pack_dense(k, args, nreq - 1, a), 0);
        /* slots at an odd address (the API does not ask for alignment): the same bytes */
        _Alignas(8) unsigned char u[1032];
        assert_int_equal(xir__kernel_pack_dense(k, cut, nreq, u + 1), 1);
        if (memcmp(u + 1, b, n) != 0) fail_msg("%s: unaligned slots differ", kernels[t]);
      }
      for (int q = 0; q < np; q++) { /* scalars given (rope's i64 offset among them) */
        xir_param_info pi;
        if (xir_program_param(p, q, &pi)) die(&d);
        if (pi.kind != XIR_PARAM_BUFFER) args[q].use_default = 0, args[q].scalar = 3.0;
      }
      pack_both(k, args, "dense, scalars given");
      for (int mode = 0; mode < 2; mode++) { /* the streaming flag both ways */
        xir__stream_stores_set(mode);
        pack_both(k, args, mode ? "dense, streamed" : "dense, not streamed");
      }
      xir__stream_stores_set(-1);
      memcpy(args, c.args, sizeof(xir_arg) * (size_t)np);
      int out = -1, in = -1;
      int64_t st[8][4];
      for (int q = 0; q < np; q++) {
        xir_param_info pi;
        if (xir_program_param(p, q, &pi)) die(&d);
        if (pi.kind != XIR_PARAM_BUFFER) {
          args[q].use_default = 0, args[q].scalar = 0.25;
          continue;
        }
        if (pi.is_output) out = q;
        else if (in < 0 && pi.elem == XIR_F32) in = q;
        if (xir_arg_strides(p, &sh, q, &c.args[q], st[q], &d)) die(&d);
        args[q].strides = st[q]; /* the dense strides, given: the general path */
      }
      pack_both(k, args, "scalars, strides given");
      memcpy(args, c.args, sizeof(xir_arg) * (size_t)np);
      assert_true(out >= 0 && in >= 0);
      float *save = args[out].out;
      args[out].out = (float *)args[in].in; /* exactly in place */
      pack_both(k, args, "in place");
      args[out].out = (float *)args[in].in + 1; /* overlapping */
      pack_both(k, args, "overlap");
      args[out].out = NULL;
      pack_both(k, args, "NULL output");
      args[out].out = save;
    }
    xir_free(cands);
    xir__case_free(&c);
    xir_program_free(p);
  }
  xir_compiler_destroy(cc);
}

static void test_every_kernel(void **state) {
  (void)state;
  xir_session *s = new_session(2);
  assert_int_equal(sizeof kCases / sizeof kCases[0], xir_kernel_count());
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++) {
    xir_diag d;
    const xir_program *p;
    if (xir_session_program(s, kCases[i].kernel, &p, &d)) die(&d);
    xir_shape sh;
    if (xir_shape_parse(p, kCases[i].shape, &sh, &d)) die(&d);
    xir_case c;
    if (xir__case_init(&c, p, &sh, 77 + i, &d) || xir__case_oracle(&c, &d)) die(&d);
    check_case(s, kCases[i].kernel, kCases[i].shape, &c);
    xir__case_free(&c);
  }
  xir_session_stats st;
  xir_session_get_stats(s, &st);
  assert_int_equal(st.launches, xir_kernel_count());
  assert_int_equal(st.misses, xir_kernel_count());
  assert_int_equal(st.programs, xir_kernel_count());
  assert_int_equal(st.prepared, xir_kernel_count());
  xir_session_destroy(s);
}

/* 16-bit buffers through the session: xir_session_retype (interned: the same spec gives the same
 * program), every output checked against the oracle reading the same stored values. */
static void test_retype(void **state) {
  (void)state;
  xir_session *s = new_session(2);
  static const struct {
    const char *kernel, *shape, *spec;
  } cases[] = {{"rmsnorm", "R=5,C=33", "bf16"},
               {"swiglu", "R=3,C=50", "f16"},
               {"attention", "B=1,HQ=4,HKV=2,Q=3,K=9,D=8,DV=8", "bf16,o=f32"},
               {"rope_cache", "R=4,C=32,HD=8,P=16,H2=4", "x=f16,y=bf16"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    xir_diag d;
    const xir_program *p, *q, *q2;
    if (xir_session_program(s, cases[i].kernel, &p, &d)) die(&d);
    if (xir_session_retype(s, p, cases[i].spec, &q, &d)) die(&d);
    if (xir_session_retype(s, p, cases[i].spec, &q2, &d)) die(&d);
    assert_ptr_equal(q, q2);
    assert_ptr_not_equal(p, q);
    xir_shape sh;
    if (xir_shape_parse(q, cases[i].shape, &sh, &d)) die(&d);
    xir_case c;
    if (xir__case_init(&c, q, &sh, 300 + i, &d) || xir__case_oracle(&c, &d)) die(&d);
    check_case(s, cases[i].kernel, cases[i].shape, &c);
    xir__case_free(&c);
  }
  xir_diag d;
  const xir_program *p, *q;
  if (xir_session_program(s, "rope_cache", &p, &d)) die(&d);
  assert_int_equal(xir_session_retype(s, p, "pos=bf16", &q, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "pos"));
  assert_null(q);
  xir_session_destroy(s);
}

static void test_cache_hit(void **state) {
  (void)state;
  xir_session *s = new_session(2);
  xir_diag d;
  const xir_program *p;
  if (xir_session_program(s, "rmsnorm", &p, &d)) die(&d);
  xir_shape sh;
  if (xir_shape_parse(p, "R=7,C=100", &sh, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &sh, 5, &d) || xir__case_oracle(&c, &d)) die(&d);
  check_case(s, "rmsnorm", "R=7,C=100", &c);
  xir_session_stats a, b;
  xir_session_get_stats(s, &a);
  assert_int_equal(a.compiles, 1);
  assert_int_equal(a.plans, 1);
  check_case(s, "rmsnorm", "R=7,C=100", &c); /* the second call neither plans nor compiles */
  xir_session_get_stats(s, &b);
  assert_int_equal(b.compiles, 1);
  assert_int_equal(b.plans, 1);
  assert_int_equal(b.hits, a.hits + 1);
  assert_int_equal(b.launches, 2);
  /* the same program parsed from its text (a user's copy, freed at once) shares the entry */
  xir_program *mine;
  int idx = xir_kernel_find("rmsnorm");
  const char *text = xir_kernel_text(idx);
  if (xir_program_parse(text, strlen(text), "user.xir", &mine, &d)) die(&d);
  const xir_prepared *k1, *k2;
  if (xir_session_prepare(s, mine, &sh, &k1, &d)) die(&d);
  xir_program_free(mine);
  if (xir_session_prepare(s, p, &sh, &k2, &d)) die(&d);
  assert_ptr_equal(k1, k2);
  assert_ptr_equal(xir_prepared_program(k1), p);
  xir_session_get_stats(s, &b);
  assert_int_equal(b.compiles, 1);
  assert_int_equal(b.programs, 1);
  /* another shape is another entry */
  sh.dims[0] = 8;
  if (xir_session_prepare(s, p, &sh, &k2, &d)) die(&d);
  assert_ptr_not_equal(k1, k2);
  xir_session_get_stats(s, &b);
  assert_int_equal(b.compiles, 2);
  assert_int_equal(b.prepared, 2);
  /* xir_session_parse: custom text, interned by canonical text */
  const xir_program *q1, *q2;
  const char *t = "kernel twice[N](x: f32[N], y: out f32[N])\nroot i in N {\n"
                  "  store y[i] = load x[i] * 2.0\n}\n";
  if (xir_session_parse(s, t, strlen(t), "a.xir", &q1, &d)) die(&d);
  const char *t2 = "# the same, spaced differently\nkernel twice[N](x: f32[N],   y: out f32[N])\n"
                   "root i in N {\n    store y[i] = load x[i] * 2.0\n}\n";
  if (xir_session_parse(s, t2, strlen(t2), "b.xir", &q2, &d)) die(&d);
  assert_ptr_equal(q1, q2);
  float x[9], y[9 + 2];
  for (int i = 0; i < 9; i++) x[i] = (float)i - 3.5f;
  y[0] = y[10] = -7.0f;
  xir_arg args[] = {{.in = x}, {.out = y + 1}};
  if (xir_session_run_program(s, q1, "N=9", args, 2, &d)) die(&d);
  for (int i = 0; i < 9; i++) assert_float_equal(y[i + 1], 2.0f * x[i], 0);
  assert_float_equal(y[0], -7.0f, 0);
  assert_float_equal(y[10], -7.0f, 0);
  xir__case_free(&c);
  xir_session_destroy(s);
}

static void test_args(void **state) {
  (void)state;
  xir_session *s = new_session(1);
  xir_diag d;
  const xir_program *p;
  if (xir_session_program(s, "rmsnorm", &p, &d)) die(&d);
  xir_shape sh;
  if (xir_shape_parse(p, "R=3,C=64", &sh, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &sh, 9, &d)) die(&d);
  if (xir__case_set_scalar(&c, "eps", 0.5, &d) || xir__case_oracle(&c, &d)) die(&d);
  xir_tolerance tol = xir__kernel_tolerance("rmsnorm");
  /* by name, in any order, eps given */
  xir_named_arg na[] = {{"eps", c.args[3]}, {"y", c.args[2]}, {"w", c.args[1]}, {"x", c.args[0]}};
  xir__case_reset_outputs(&c);
  if (xir_session_run_named(s, "rmsnorm", "R=3,C=64", na, 4, &d)) die(&d);
  assert_true(xir__case_sentinels_ok(&c));
  assert_true(xir__case_compare(&c, 2, tol).pass);
  /* positional with eps left out: the default (1e-5), which differs from the oracle's 0.5 */
  xir__case_reset_outputs(&c);
  if (xir_session_run(s, "rmsnorm", "R=3,C=64", c.args, 3, &d)) die(&d);
  assert_false(xir__case_compare(&c, 2, tol).pass);
  /* named, eps left out: the default too */
  xir__case_reset_outputs(&c);
  if (xir_session_run_named(s, "rmsnorm", "R=3,C=64", na + 1, 3, &d)) die(&d);
  assert_false(xir__case_compare(&c, 2, tol).pass);
  if (xir__case_set_scalar(&c, "eps", 1e-5, &d) || xir__case_oracle(&c, &d)) die(&d);
  assert_true(xir__case_compare(&c, 2, tol).pass);

  /* errors */
  assert_int_equal(xir_session_run(s, "rmsnorm", "R=3,C=64", c.args, 2, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "rmsnorm takes 3 to 4 arguments (x, w, y, eps = 1e-05), got 2"));
  assert_int_equal(xir_session_run(s, "rmsnorm", "R=3,C=64", c.args, 5, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "got 5"));
  assert_int_equal(xir_session_run(s, "rmsnorn", "R=3,C=64", c.args, 4, &d), XIR_ERR_NOT_FOUND);
  assert_non_null(strstr(d.msg, "rmsnorn"));
  assert_non_null(strstr(d.msg, "rmsnorm")); /* the known kernels are listed */
  assert_int_equal(xir_session_run(s, "rmsnorm", "R=3", c.args, 4, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "C"));
  assert_int_equal(xir_session_run(s, "rmsnorm", "R=3,C=0", c.args, 4, &d), XIR_ERR_INVALID_ARG);
  assert_int_not_equal(xir_session_run(s, "rope", "R=3,C=64,HD=3", c.args, 2, &d), XIR_OK);
  assert_non_null(strstr(d.msg, "does not hold for R=3,C=64,HD=3"));
  assert_int_equal(xir_session_run(s, "rmsnorm", NULL, c.args, 4, &d), XIR_ERR_INVALID_ARG);
  xir_arg nobuf[4] = {c.args[0], {.in = NULL}, c.args[2], c.args[3]};
  assert_int_equal(xir_session_run(s, "rmsnorm", "R=3,C=64", nobuf, 4, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "NULL"));
  xir_named_arg bad[] = {{"x", c.args[0]}, {"z", c.args[1]}};
  assert_int_equal(xir_session_run_named(s, "rmsnorm", "R=3,C=64", bad, 2, &d), XIR_ERR_NOT_FOUND);
  assert_non_null(strstr(d.msg, "rmsnorm has no parameter 'z' (parameters: x, w, y, eps = 1e-05)"));
  xir_named_arg twice[] = {{"x", c.args[0]}, {"x", c.args[0]}};
  assert_int_equal(xir_session_run_named(s, "rmsnorm", "R=3,C=64", twice, 2, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "'x' given twice"));
  assert_int_equal(xir_session_run_named(s, "rmsnorm", "R=3,C=64", na + 1, 2, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "parameter 'x' is missing"));
  const char *broken = "kernel k[N](x: f32[N], y: out f32[N])\nroot i in N {\n  store y[i] = lod x[i]\n}\n";
  const xir_program *q;
  assert_int_equal(xir_session_parse(s, broken, strlen(broken), "broken.xir", &q, &d), XIR_ERR_PARSE);
  assert_null(q);
  assert_int_equal(d.line, 3);
  assert_true(d.col > 0);
  /* a prepared kernel of another session */
  xir_session *other = new_session(1);
  const xir_prepared *k;
  if (xir_session_prepare(s, p, &sh, &k, &d)) die(&d);
  assert_int_equal(xir_session_launch(other, k, c.args, 4, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "another session"));
  xir_session_destroy(other);
  /* NULLs */
  assert_int_equal(xir_session_run(NULL, "rmsnorm", "R=3,C=64", c.args, 4, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_session_create(NULL, NULL, &d), XIR_ERR_INVALID_ARG);
  xir_session_options huge = {.workers = XIR_RUNTIME_MAX_WORKERS + 1};
  xir_session *none = (xir_session *)&huge;
  assert_int_equal(xir_session_create(&huge, &none, &d), XIR_ERR_INVALID_ARG);
  assert_null(none);
  xir_session_destroy(NULL);
  xir__case_free(&c);
  xir_session_destroy(s);
}

static void test_explain(void **state) {
  (void)state;
  xir_session *s = new_session(2);
  xir_diag d;
  char *text;
  if (xir_session_explain(s, "softmax_mask", "R=9,C=40", &text, &d)) die(&d);
  const xir_program *p;
  if (xir_session_program(s, "softmax_mask", &p, &d)) die(&d);
  xir_shape sh;
  if (xir_shape_parse(p, "R=9,C=40", &sh, &d)) die(&d);
  const xir_prepared *k;
  if (xir_session_prepare(s, p, &sh, &k, &d)) die(&d);
  const xir_plan *pl = xir_prepared_plan(k);
  assert_true(pl->count > 1);
  char name[160], head[256];
  xir_candidate_name(p, &pl->entries[0].cand, name, sizeof name);
  snprintf(head, sizeof head, "plan for softmax_mask R=9,C=40 (2 workers): %s, G=", name);
  assert_memory_equal(text, head, strlen(head));
  assert_non_null(strstr(text, " arith "));
  assert_non_null(strstr(text, "activation"));
  /* one line per ranked entry, after the two header lines (three when the service is chosen at
   * launch time: whether it is depends on the calibrated costs, session/choice.h) */
  size_t lines = 0;
  for (const char *c = text; *c; c++) lines += *c == '\n';
  assert_int_equal(lines, pl->count + 2 + (strstr(text, "\nat launch time: ") != NULL));
  char rank1[200];
  snprintf(rank1, sizeof rank1, "\n   1 %-28s", name);
  assert_non_null(strstr(text, rank1));
  assert_int_equal(xir_prepared_grain(k), pl->entries[0].work.grain);
  assert_int_equal(xir_prepared_workers(k), 2);
  assert_int_equal(xir_kernel_candidate(xir_prepared_kernel(k))->B, pl->entries[0].cand.B);
  xir_free(text);
  xir_session_stats st;
  xir_session_get_stats(s, &st);
  assert_int_equal(st.compiles, 1);
  assert_int_equal(st.launches, 0);
  xir_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_kernel),
      cmocka_unit_test(test_cache_hit),
      cmocka_unit_test(test_run_memo),
      cmocka_unit_test(test_dense_pack_matches),
      cmocka_unit_test(test_retype),
      cmocka_unit_test(test_args),
      cmocka_unit_test(test_explain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

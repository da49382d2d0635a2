/* test_dims.c — launch-time dims, strided rows and in-place launches.
 *
 * - The bridge's compile-time dims per kernel (xir_candidate.fixed_dims) and its tile bound.
 * - One compiled kernel launched at several R (row kernels) and several B, Q, K (attention),
 *   every candidate: each launch checked against the fp64 oracle over the whole output with
 *   sentinels; the task grain changes no output byte; the IR and object do not depend on the
 *   launch-time dims (two compilers, the disk cache off).
 * - A launch whose compile-time dim differs, or whose tile dim is above the bound, is refused.
 * - Strided rows (xir_arg.row_stride / strides): inputs and outputs with gaps between rows, the
 *   gaps of outputs untouched, the interpreter reading the same elements; bad strides refused.
 * - In place: the allowed y = x of each built-in kernel matches the oracle; RoPE's y = x, a
 *   partial overlap and two overlapping outputs are refused.
 * - Attention-mapping candidates fix HQ, HKV, D and DV only: one kernel serves every B, Q and K
 *   (attention_causal too: its causal end is computed at launch), reads K/V views into a larger
 *   KV cache through their strides, and refuses in place. A masked row kernel fixes the dims its
 *   mask end reads; strided bf16/f16 buffers are refused. */
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
#include "xir_compile.h"
#include "xir_runtime.h"

static xir_compiler *g_cc;
static xir_runtime *g_rt;

static void die(const xir_diag *d) {
  char b[2048];
  fail_msg("%s", xir_diag_format(d, b, sizeof b));
}

static xir_program *load(const char *name) {
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load(name, &p, &d)) die(&d);
  return p;
}

static xir_shape shape_of(const xir_program *p, const char *spec) {
  xir_shape s;
  xir_diag d;
  if (xir_shape_parse(p, spec, &s, &d)) die(&d);
  return s;
}

static uint32_t mask_of(const xir_program *p, const char *names) {
  uint32_t m = 0;
  char buf[128];
  snprintf(buf, sizeof buf, "%s", names);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
    int i = xir_program_find_dim(p, t);
    assert_true(i >= 0);
    m |= 1u << i;
  }
  return m;
}

/* Checks every output of c (oracle, sentinels); fails naming the case. */
static void check_case(xir_case *c, const char *what) {
  if (!xir__case_sentinels_ok(c)) fail_msg("%s: a sentinel was overwritten", what);
  xir_tolerance tol = xir__kernel_tolerance(xir_program_name(c->p));
  for (int q = 0; q < xir_program_num_params(c->p); q++) {
    if (!c->ref[q]) continue;
    xir_compare r = xir__case_compare(c, q, tol);
    if (!r.pass)
      fail_msg("%s: %zu of %zu elements out of tolerance (%zu NaN); first at %zu, oracle %.9g", what,
               r.bad, r.n, r.nan, r.first_bad, c->ref[q][r.first_bad]);
  }
}

/* Launches k for c's shape through the runtime at grain G (2 workers). */
static void launch(const xir_kernel *k, xir_case *c, uint32_t G) {
  uint64_t slots[XIR_MAX_ARG_SLOTS], blocks;
  xir_diag d;
  if (xir_kernel_pack_launch(k, &c->shape, c->args, slots, &blocks, &d)) die(&d);
  xir_launch_stats st;
  if (xir_runtime_launch(g_rt, (xir_block_fn)xir_kernel_entry(k), slots, blocks, G, 2, &st, &d))
    die(&d);
  assert_int_equal(st.shape.blocks, blocks);
}

/* ---- the bridge ---- */

static void expect_fixed(const char *kernel, const char *spec, uint32_t local, const char *fixed) {
  xir_program *p = load(kernel);
  xir_shape s = shape_of(p, spec);
  uint8_t perm[XIR_MAX_ROOT] = {0, 1, 2};
  xir_candidate c;
  xir_diag d;
  if (xir_candidate_make(p, &s, 16, 16, local, perm, &c, &d)) die(&d);
  if (c.fixed_dims != mask_of(p, fixed))
    fail_msg("%s %s l=%u: fixed_dims 0x%x, expected {%s} = 0x%x", kernel, spec, local,
             c.fixed_dims, fixed, mask_of(p, fixed));
  xir_program_free(p);
}

static void test_bridge_fixed_dims(void **state) {
  (void)state;
  expect_fixed("rmsnorm", "R=129,C=768", 16, "C");
  expect_fixed("rmsnorm", "R=129,C=768", 1, "C");
  expect_fixed("layernorm", "R=129,C=768", 16, "C");
  expect_fixed("softmax_mask", "R=129,C=768", 16, "C");
  expect_fixed("softmax_causal", "R=129,C=768", 16, "C");
  expect_fixed("swiglu", "R=129,C=768", 1, "C");
  expect_fixed("gelu_residual", "R=129,C=768", 1, "C");
  /* RoPE: HD builds the hoisted frequencies; rope_cache: HD in the index, H2 a row length */
  expect_fixed("rope", "R=129,C=768,HD=128", 16, "C,HD");
  /* past XIR_HOIST_MAX no hoisted tile reads HD: `c % HD` divides by it (rule 6; launch-time
   * it was one scalar idiv per lane, rope 8x24576 453 us instead of 9.6) */
  expect_fixed("rope", "R=8,C=24576,HD=128", 16, "C,HD");
  expect_fixed("rope", "R=1,C=128000,HD=128", 1, "C,HD");
  expect_fixed("rope_cache", "R=129,C=768,HD=64,P=4096,H2=32", 16, "C,HD,H2");
  /* attention: B, Q and K are launch-time; HQ and HKV feed the GQA index, D and DV are rows */
  expect_fixed("attention", "B=1,HQ=8,HKV=2,Q=16,K=128,D=64,DV=64", 1, "HQ,HKV,D,DV");
  /* causal: the masked-work skipping's end i + (K - Q) + 1 reads Q and K (dims.c, rule 5) */
  expect_fixed("attention_causal", "B=1,HQ=8,HKV=2,Q=16,K=128,D=64,DV=64", 1, "HQ,HKV,Q,K,D,DV");
  /* a key length above the tile bound is compiled in */
  expect_fixed("attention", "B=1,HQ=8,HKV=2,Q=1,K=20000,D=8,DV=8", 1, "HQ,HKV,K,D,DV");
  xir_program *p = load("attention");
  xir_shape s = shape_of(p, "B=1,HQ=8,HKV=2,Q=16,K=128,D=64,DV=64");
  uint8_t perm[3] = {0, 1, 2};
  xir_candidate c;
  xir_diag d;
  if (xir_candidate_make(p, &s, 16, 16, 1, perm, &c, &d)) die(&d);
  assert_int_equal(xir_candidate_dim_max(p, &c, xir_program_find_dim(p, "K")), XIR_RUNTIME_TILE_MAX);
  assert_int_equal(xir_candidate_dim_max(p, &c, xir_program_find_dim(p, "B")), INT32_MAX);
  assert_int_equal(xir_candidate_dim_max(p, &c, 99), 0);
  xir_program_free(p);
}

static void expect_refused(const xir_kernel *k, const xir_program *p, const char *spec,
                           xir_status want, const char *needle);

/* Compiles candidate c of p at s, checks one launch against the oracle (inputs of `seed`), and
 * expects a launch at shape `bad` to be refused with `needle` in the message. */
static void compile_check_refuse(const xir_program *p, const xir_shape *s, const xir_candidate *c,
                                 uint64_t seed, const char *what, const char *bad,
                                 const char *needle) {
  const xir_kernel *k;
  xir_diag d;
  if (xir_compile(g_cc, p, s, c, &k, &d)) die(&d);
  xir_case cs;
  if (xir__case_init(&cs, p, s, seed, &d) || xir__case_oracle(&cs, &d)) die(&d);
  launch(k, &cs, 0);
  check_case(&cs, what);
  xir__case_free(&cs);
  expect_refused(k, p, bad, XIR_ERR_INVALID_ARG, needle);
}

/* The attention mapping fixes HQ, HKV, D and DV (dims.c, rule 7): B, Q and K are launch-time,
 * and K has no launch bound. A masked kernel's mask axis and the dims its end reads are compile-time
 * (rule 5): softmax_causal's end r + 1 reads none, an end r + (C - R) reads R and C. */
static void test_bridge_attn_and_mask_dims(void **state) {
  (void)state;
  xir_program *p = load("attention");
  xir_shape s = shape_of(p, "B=1,HQ=8,HKV=2,Q=16,K=128,D=64,DV=64");
  xir_candidate c;
  xir_diag d;
  if (xir_candidate_make_attn(p, &s, 16, XIR_ATTN_VEC_Q, 4, 2, &c, &d)) die(&d);
  assert_int_equal(c.fixed_dims, mask_of(p, "HQ,HKV,D,DV"));
  assert_int_equal(xir_candidate_dim_max(p, &c, xir_program_find_dim(p, "K")), INT32_MAX);
  xir_candidate *cands;
  size_t n, nattn = 0;
  if (xir_candidates(p, &s, 16, &cands, &n, &d)) die(&d);
  for (size_t i = 0; i < n; i++)
    if (cands[i].attn_vec) {
      assert_int_equal(cands[i].fixed_dims, mask_of(p, "HQ,HKV,D,DV"));
      nattn++;
    } else {
      assert_int_not_equal(cands[i].fixed_dims & mask_of(p, "B"), mask_of(p, "B"));
    }
  assert_true(nattn > 0);
  xir_free(cands);
  xir_program_free(p);
  /* causal: the mask end i + (K − Q) + 1 is computed at launch, so Q and K stay launch-time */
  p = load("attention_causal");
  s = shape_of(p, "B=1,HQ=8,HKV=2,Q=16,K=128,D=64,DV=64");
  if (xir_candidate_make_attn(p, &s, 16, XIR_ATTN_VEC_D, 4, 2, &c, &d)) die(&d);
  assert_int_equal(c.fixed_dims, mask_of(p, "HQ,HKV,D,DV"));
  xir_program_free(p);
  expect_fixed("softmax_causal", "R=129,C=768", 1, "C");
  const char *text =
      "kernel dims[R, C](x: f32[R, C], y: out f32[R, C], scale: f32 = 0.5)\n"
      "root r in R {\n"
      "  z = select(iota(C) > r + (C - R), -inf, load x[r, :] * scale)\n"
      "  m = reduce.max(z)\n"
      "  e = exp(z - select(m == -inf, 0.0, m))\n"
      "  s = reduce.sum(e)\n"
      "  store y[r, :] = e * select(s == 0.0, 0.0, 1.0 / s)\n"
      "}\n";
  if (xir_program_parse(text, strlen(text), "dims.xir", &p, &d)) die(&d);
  s = shape_of(p, "R=37,C=20");
  uint8_t perm[1] = {0};
  uint32_t W = xir_compiler_width(g_cc);
  for (uint32_t l = 1; l <= W; l *= 2) {
    if (xir_candidate_make(p, &s, W, W, l, perm, &c, &d)) die(&d);
    assert_int_equal(c.fixed_dims, mask_of(p, "R,C"));
    compile_check_refuse(p, &s, &c, 13, "mask end r + (C - R)", "R=38,C=20", "R = 37");
  }
  xir_program_free(p);
}

/* A dim that only divides (rule 6): K in `c % K` and `c / K` is compile-time in every candidate
 * (launch-time it was a scalar idiv per lane), and the kernel matches the oracle. */
static void test_divisor_dims_fixed(void **state) {
  (void)state;
  const char *text =
      "kernel divdims[R, C, K](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n"
      "  c = iota(C)\n"
      "  store y[r, :] = load x[r, :] * f32(c % K) + f32(c / K)\n"
      "}\n";
  xir_program *p;
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "divdims.xir", &p, &d)) die(&d);
  xir_shape s = shape_of(p, "R=5,C=100,K=7");
  uint8_t perm[1] = {0};
  uint32_t W = xir_compiler_width(g_cc);
  for (uint32_t l = 1; l <= 4 * W; l *= 2) {
    xir_candidate c;
    if (xir_candidate_make(p, &s, W, l > W ? l : W, l, perm, &c, &d)) die(&d);
    assert_int_equal(c.fixed_dims & mask_of(p, "C,K"), mask_of(p, "C,K"));
    assert_int_equal(c.fixed_dims & mask_of(p, "R"), 0);
    compile_check_refuse(p, &s, &c, 5, "c % K, c / K", "R=5,C=100,K=8", "K = 7");
  }
  xir_program_free(p);
}

/* bf16/f16 buffers must be contiguous: a row stride or strides that are not the contiguous ones
 * are refused by the native packing and by the interpreter, naming the buffer and its type. */
static void test_strided_16bit_refused(void **state) {
  (void)state;
  xir_program *p0 = load("rmsnorm"), *p;
  xir_diag d;
  if (xir_program_retype(p0, "bf16", &p, &d)) die(&d);
  xir_shape s = shape_of(p, "R=4,C=8");
  uint8_t perm[1] = {0};
  xir_candidate cd;
  uint32_t W = xir_compiler_width(g_cc);
  if (xir_candidate_make(p, &s, W, W, 1, perm, &cd, &d)) die(&d);
  const xir_kernel *k;
  if (xir_compile(g_cc, p, &s, &cd, &k, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &s, 3, &d)) die(&d);
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  /* contiguous: packs; the contiguous strides given explicitly: packs too */
  assert_int_equal(xir_kernel_pack_args(k, c.args, slots, &d), XIR_OK);
  int64_t st[2] = {8, 1};
  c.args[0].strides = st;
  assert_int_equal(xir_kernel_pack_args(k, c.args, slots, &d), XIR_OK);
  c.args[0].strides = NULL;
  c.args[0].row_stride = 9;
  assert_int_equal(xir_kernel_pack_args(k, c.args, slots, &d), XIR_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.msg, "buffer 'x' is bf16: strided 16-bit buffers are not supported"));
  assert_int_equal(xir_interpret(p, &s, c.args, &d), XIR_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.msg, "strided 16-bit"));
  c.args[0].row_stride = 0;
  c.args[2].row_stride = 16; /* the output */
  assert_int_equal(xir_kernel_pack_args(k, c.args, slots, &d), XIR_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.msg, "buffer 'y' is bf16"));
  /* the check harness's strided views are f32 only */
  assert_int_equal(xir__case_set_row_stride(&c, 0, 9, &d), XIR_ERR_INVALID_ARG);
  xir__case_free(&c);
  xir_program_free(p);
  xir_program_free(p0);
}

/* ---- one kernel, many shapes ---- */

/* The candidates these tests run (to keep the test fast): B = W with every ℓ ≤ W and every
 * perm, plus the multi-packet ones (ℓ = B > W). test_native runs them all. */
static int sampled(const xir_candidate *c) { return c->B == c->W || c->local == c->B; }

/* Compiles every candidate of `kernel` at `compile_spec` (attention-mapping ones only when
 * attn_only), launches each at every spec of `launch` (the same compiled code: in-memory reuse),
 * at three grains; returns the count. */
static size_t many_shapes(const char *kernel, const char *compile_spec, const char **specs,
                          int nl, int attn_only) {
  xir_program *p = load(kernel);
  xir_shape s0 = shape_of(p, compile_spec);
  xir_candidate *cands;
  size_t n, runs = 0;
  xir_diag d;
  if (xir_candidates(p, &s0, xir_compiler_width(g_cc), &cands, &n, &d)) die(&d);
  /* the inputs and the oracle of each launch shape, once (every candidate is checked against
   * them: the fp64 interpreter was most of this test's time under the sanitizers) */
  xir_case cs[8];
  assert_true(nl <= 8);
  for (int j = 0; j < nl; j++) {
    xir_shape s = shape_of(p, specs[j]);
    if (xir__case_init(&cs[j], p, &s, 99 + (uint64_t)j, &d) || xir__case_oracle(&cs[j], &d)) die(&d);
  }
  for (size_t i = 0; i < n; i++) {
    if (!sampled(&cands[i]) || (attn_only && !cands[i].attn_vec)) continue;
    const xir_kernel *k;
    if (xir_compile(g_cc, p, &s0, &cands[i], &k, &d)) die(&d);
    xir_kernel_info info0;
    xir_kernel_get_info(k, &info0);
    char name[128];
    xir_candidate_name(p, &cands[i], name, sizeof name);
    for (int j = 0; j < nl; j++) {
      xir_shape s = shape_of(p, specs[j]);
      xir_case *c = &cs[j];
      /* the compiler hands back the same code for this shape */
      const xir_kernel *k2;
      if (xir_compile(g_cc, p, &s, &cands[i], &k2, &d)) die(&d);
      xir_kernel_info info;
      xir_kernel_get_info(k2, &info);
      if (info.cached != 1)
        fail_msg("%s %s at %s: not reused (fixed 0x%x vs 0x%x)", kernel, name, specs[j],
                 xir_kernel_candidate(k2)->fixed_dims, xir_kernel_candidate(k)->fixed_dims);
      assert_string_equal(info.obj_sha256, info0.obj_sha256);
      assert_ptr_equal(xir_kernel_entry(k2), xir_kernel_entry(k));
      uint64_t blocks;
      if (xir_kernel_check_shape(k, &s, &blocks, &d)) die(&d);
      assert_int_equal(blocks, xir_kernel_blocks(k2));
      /* the launch's blocks are the bridge's count for that shape (attention: its tiles) */
      xir_candidate at;
      if ((cands[i].attn_vec ? xir_candidate_make_attn(p, &s, cands[i].W, cands[i].attn_vec,
                                                       cands[i].attn_qb, cands[i].attn_hb, &at, &d)
                             : xir_candidate_make(p, &s, cands[i].W, cands[i].B, cands[i].local,
                                                  cands[i].perm, &at, &d)))
        die(&d);
      assert_int_equal(blocks, at.blocks);
      float *first[XIR_MAX_PARAMS] = {0};
      const uint32_t grains[3] = {1, 0, UINT32_MAX};
      for (int g = 0; g < 3; g++) {
        xir__case_reset_outputs(c);
        launch(k, c, grains[g]);
        char what[256];
        snprintf(what, sizeof what, "%s compiled at %s, %s, launched at %s G=%u", kernel,
                 compile_spec, name, specs[j], grains[g]);
        check_case(c, what);
        for (int q = 0; q < xir_program_num_params(p); q++) {
          if (!c->ref[q]) continue;
          if (!g) {
            first[q] = malloc(c->numel[q] * sizeof(float));
            memcpy(first[q], c->data[q], c->numel[q] * sizeof(float));
          } else if (memcmp(first[q], c->data[q], c->numel[q] * sizeof(float)) != 0) {
            fail_msg("%s: the grain changed the output", what);
          }
        }
      }
      for (int q = 0; q < XIR_MAX_PARAMS; q++) free(first[q]);
      runs++;
    }
  }
  for (int j = 0; j < nl; j++) xir__case_free(&cs[j]);
  xir_free(cands);
  xir_program_free(p);
  return runs;
}

static void test_row_kernels_many_r(void **state) {
  (void)state;
  const char *rows[] = {"R=1,C=768", "R=3,C=768", "R=17,C=768", "R=129,C=768", "R=300,C=768"};
  const char *kernels[] = {"rmsnorm", "layernorm", "softmax_mask", "softmax_causal", "swiglu",
                           "gelu_residual"};
  size_t runs = 0;
  for (int i = 0; i < 6; i++) runs += many_shapes(kernels[i], "R=129,C=768", rows, 5, 0);
  const char *odd[] = {"R=1,C=65", "R=2,C=65", "R=33,C=65"};
  runs += many_shapes("rmsnorm", "R=17,C=65", odd, 3, 0);
  runs += many_shapes("swiglu", "R=17,C=65", odd, 3, 0);
  const char *rope[] = {"R=1,C=256,HD=64", "R=5,C=256,HD=64", "R=70,C=256,HD=64"};
  runs += many_shapes("rope", "R=64,C=256,HD=64", rope, 3, 0);
  const char *rc[] = {"R=1,C=256,HD=64,P=7,H2=32", "R=40,C=256,HD=64,P=300,H2=32"};
  runs += many_shapes("rope_cache", "R=64,C=256,HD=64,P=100,H2=32", rc, 2, 0);
  /* short rows (1 < ℓ < W: several a packet, a launch-time R leaves a partial last unit) */
  const char *short8[] = {"R=1,C=8", "R=3,C=8", "R=100,C=8"};
  runs += many_shapes("rmsnorm", "R=37,C=8", short8, 3, 0);
  const char *short6[] = {"R=1,C=6", "R=2,C=6", "R=50,C=6"};
  runs += many_shapes("softmax_mask", "R=19,C=6", short6, 3, 0);
  const char *rc2[] = {"R=1,C=2,HD=2,P=5,H2=1", "R=3,C=2,HD=2,P=5,H2=1", "R=40,C=2,HD=2,P=5,H2=1"};
  runs += many_shapes("rope_cache", "R=37,C=2,HD=2,P=5,H2=1", rc2, 3, 0);
  printf("# %zu launches of reused kernels checked\n", runs);
}

static void test_attention_many_k(void **state) {
  (void)state;
  const char *sh[] = {"B=1,HQ=4,HKV=2,Q=16,K=1,D=16,DV=16",  "B=1,HQ=4,HKV=2,Q=16,K=7,D=16,DV=16",
                      "B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16", "B=2,HQ=4,HKV=2,Q=5,K=100,D=16,DV=16",
                      "B=1,HQ=4,HKV=2,Q=1,K=300,D=16,DV=16", "B=3,HQ=4,HKV=2,Q=33,K=65,D=16,DV=16"};
  size_t runs = many_shapes("attention", "B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16", sh, 6, 0);
  /* the attention mapping at K around the 64-key block (the ragged last block), Q around its
   * query blocks, and odd D, DV (the vector tails are compile-time) */
  const char *sha[] = {"B=1,HQ=4,HKV=2,Q=1,K=63,D=19,DV=13", "B=1,HQ=4,HKV=2,Q=1,K=64,D=19,DV=13",
                       "B=2,HQ=4,HKV=2,Q=3,K=65,D=19,DV=13", "B=1,HQ=4,HKV=2,Q=17,K=130,D=19,DV=13",
                       "B=1,HQ=4,HKV=2,Q=2,K=1,D=19,DV=13"};
  runs += many_shapes("attention", "B=1,HQ=4,HKV=2,Q=8,K=100,D=19,DV=13", sha, 5, 1);
  /* causal, row kernels: Q and K are compile-time (the mask's end reads them); B is launch-time */
  const char *shc[] = {"B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16", "B=3,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16",
                       "B=2,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16"};
  runs += many_shapes("attention_causal", "B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16", shc, 3, 0);
  /* causal, the attention mapping: the end i + (K − Q) + 1 from the launch's Q and K (Q > K:
   * rows that see no key; Q = K: the triangle; Q = 1: decode) */
  const char *shca[] = {"B=1,HQ=4,HKV=2,Q=9,K=5,D=16,DV=16", "B=1,HQ=4,HKV=2,Q=33,K=33,D=16,DV=16",
                        "B=2,HQ=4,HKV=2,Q=1,K=67,D=16,DV=16", "B=1,HQ=4,HKV=2,Q=20,K=129,D=16,DV=16"};
  runs += many_shapes("attention_causal", "B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16", shca, 4, 1);
  printf("# %zu attention launches of reused kernels checked\n", runs);
}

/* The IR and object bytes depend on the compile-time dims only: two compilers (no disk cache)
 * compiling R=129 and R=1000 (attention: K=32 and K=500, Q=16 and Q=1; the attention mapping:
 * decode at K = 4096 and K = 4100, and B, Q changed too) produce the same bytes. */
static void test_code_independent_of_launch_dims(void **state) {
  (void)state;
  const char *pairs[][3] = {{"rmsnorm", "R=129,C=768", "R=1000,C=768"},
                            {"swiglu", "R=17,C=65", "R=1,C=65"},
                            {"attention", "B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16",
                             "B=2,HQ=4,HKV=2,Q=1,K=500,D=16,DV=16"},
                            {"attention", "B=1,HQ=32,HKV=8,Q=1,K=4096,D=128,DV=128",
                             "B=1,HQ=32,HKV=8,Q=1,K=4100,D=128,DV=128"},
                            {"attention_causal", "B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16",
                             "B=3,HQ=4,HKV=2,Q=5,K=77,D=16,DV=16"}};
  for (int i = 0; i < 5; i++) {
    xir_program *p = load(pairs[i][0]);
    const char *obj[2];
    char hash[2][2][65];
    for (int j = 0; j < 2; j++) {
      xir_compiler_options o = {.no_kernel_cache = 1};
      xir_compiler *cc;
      xir_diag d;
      if (xir_compiler_create(&o, &cc, &d)) die(&d);
      xir_shape s = shape_of(p, pairs[i][1 + j]);
      uint8_t perm[3] = {0, 1, 2};
      xir_candidate c;
      uint32_t W = xir_compiler_width(cc);
      if (i < 3 ? xir_candidate_make(p, &s, W, W, 1, perm, &c, &d)
                : xir_candidate_make_attn(p, &s, W, XIR_ATTN_VEC_D, 1, i == 3 ? 4 : 2, &c, &d))
        die(&d);
      const xir_kernel *k;
      if (xir_compile(cc, p, &s, &c, &k, &d)) die(&d);
      xir_kernel_info info;
      xir_kernel_get_info(k, &info);
      assert_int_equal(info.cached, 0);
      snprintf(hash[j][0], 65, "%s", info.ir_sha256);
      snprintf(hash[j][1], 65, "%s", info.obj_sha256);
      obj[j] = pairs[i][1 + j];
      xir_compiler_destroy(cc);
    }
    if (strcmp(hash[0][0], hash[1][0]) || strcmp(hash[0][1], hash[1][1]))
      fail_msg("%s: %s and %s gave different code", pairs[i][0], obj[0], obj[1]);
    xir_program_free(p);
  }
}

static void expect_refused(const xir_kernel *k, const xir_program *p, const char *spec,
                           xir_status want, const char *needle) {
  xir_shape s = shape_of(p, spec);
  xir_case c;
  xir_diag d;
  if (xir__case_init(&c, p, &s, 3, &d)) die(&d);
  uint64_t slots[XIR_MAX_ARG_SLOTS], blocks = 7;
  xir_status st = xir_kernel_pack_launch(k, &s, c.args, slots, &blocks, &d);
  if (st != want || !strstr(d.msg, needle))
    fail_msg("%s: got status %d '%s', expected %d mentioning '%s'", spec, st, st ? d.msg : "",
             want, needle);
  assert_int_equal(blocks, 0);
  xir__case_free(&c);
}

static void test_mismatch_refused(void **state) {
  (void)state;
  xir_program *p = load("rmsnorm");
  xir_shape s = shape_of(p, "R=129,C=768");
  uint8_t perm[1] = {0};
  xir_candidate c;
  xir_diag d;
  uint32_t W = xir_compiler_width(g_cc);
  if (xir_candidate_make(p, &s, W, W, W, perm, &c, &d)) die(&d);
  const xir_kernel *k;
  if (xir_compile(g_cc, p, &s, &c, &k, &d)) die(&d);
  expect_refused(k, p, "R=129,C=1024", XIR_ERR_INVALID_ARG, "compiled for C = 768, a compile-time dim");
  /* a caller may fix more dims: then R must match too */
  c.fixed_dims = UINT32_MAX;
  if (xir_compile(g_cc, p, &s, &c, &k, &d)) die(&d);
  assert_int_equal(xir_kernel_candidate(k)->fixed_dims, mask_of(p, "R,C"));
  expect_refused(k, p, "R=128,C=768", XIR_ERR_INVALID_ARG, "R = 129");
  xir_program_free(p);
  /* attention: K above the tile bound */
  p = load("attention");
  s = shape_of(p, "B=1,HQ=2,HKV=1,Q=1,K=64,D=4,DV=4");
  uint8_t perm3[3] = {0, 1, 2};
  if (xir_candidate_make(p, &s, W, W, 1, perm3, &c, &d)) die(&d);
  if (xir_compile(g_cc, p, &s, &c, &k, &d)) die(&d);
  expect_refused(k, p, "B=1,HQ=2,HKV=1,Q=1,K=16385,D=4,DV=4", XIR_ERR_UNSUPPORTED, "above 16384");
  expect_refused(k, p, "B=1,HQ=2,HKV=1,Q=1,K=64,D=8,DV=4", XIR_ERR_INVALID_ARG, "D = 4");
  /* the attention mapping: no bound on K; HQ, HKV, D, DV must match */
  if (xir_candidate_make_attn(p, &s, W, XIR_ATTN_VEC_Q, 1, 2, &c, &d)) die(&d);
  if (xir_compile(g_cc, p, &s, &c, &k, &d)) die(&d);
  xir_shape big = shape_of(p, "B=1,HQ=2,HKV=1,Q=1,K=20000,D=4,DV=4");
  uint64_t nb = 0;
  assert_int_equal(xir_kernel_check_shape(k, &big, &nb, &d), XIR_OK);
  assert_int_equal(nb, 1);
  expect_refused(k, p, "B=1,HQ=2,HKV=1,Q=1,K=64,D=4,DV=8", XIR_ERR_INVALID_ARG, "DV = 4");
  expect_refused(k, p, "B=1,HQ=4,HKV=2,Q=1,K=64,D=4,DV=4", XIR_ERR_INVALID_ARG, "HQ = 2");
  xir_program_free(p);
}

/* ---- strided rows ---- */

/* Runs every candidate of kernel at spec with row strides (param name → stride, pairs) on every
 * buffer named; checks oracle, sentinels and gaps. */
static void strided_program(xir_program *p, const char *spec, const char **names,
                            const int64_t *ld, int nb) {
  const char *kernel = xir_program_name(p);
  xir_shape s = shape_of(p, spec);
  xir_case c;
  xir_diag d;
  if (xir__case_init(&c, p, &s, 5, &d)) die(&d);
  /* the contiguous oracle, for the interpreter's strided reading below */
  if (xir__case_oracle(&c, &d)) die(&d);
  int out = -1;
  for (int i = 0; i < xir_program_num_params(p); i++)
    if (c.ref[i]) out = i;
  double *ref0 = malloc(c.numel[out] * sizeof(double));
  memcpy(ref0, c.ref[out], c.numel[out] * sizeof(double));
  for (int b = 0; b < nb; b++)
    if (xir__case_set_row_stride(&c, xir_program_find_param(p, names[b]), ld[b], &d)) die(&d);
  if (xir__case_oracle(&c, &d)) die(&d);
  /* the interpreter reads (and writes) the same elements through the strides */
  assert_memory_equal(ref0, c.ref[out], c.numel[out] * sizeof(double));
  free(ref0);
  xir_candidate *cands;
  size_t n;
  if (xir_candidates(p, &s, xir_compiler_width(g_cc), &cands, &n, &d)) die(&d);
  for (size_t i = 0; i < n; i++) {
    if (!sampled(&cands[i])) continue;
    const xir_kernel *k;
    if (xir_compile(g_cc, p, &s, &cands[i], &k, &d)) die(&d);
    xir__case_reset_outputs(&c);
    launch(k, &c, 0);
    char name[128], what[256];
    xir_candidate_name(p, &cands[i], name, sizeof name);
    snprintf(what, sizeof what, "%s %s %s strided", kernel, spec, name);
    check_case(&c, what);
  }
  xir_free(cands);
  xir__case_free(&c);
  xir_program_free(p);
}

static void strided(const char *kernel, const char *spec, const char **names, const int64_t *ld,
                    int nb) {
  strided_program(load(kernel), spec, names, ld, nb);
}

static void test_strided_rows(void **state) {
  (void)state;
  /* gaps on inputs and outputs, odd strides (misaligned rows) */
  const char *xy[] = {"x", "y"};
  const int64_t ld1[] = {768 + 13, 768 + 7};
  strided("rmsnorm", "R=33,C=768", xy, ld1, 2);
  strided("layernorm", "R=17,C=65", xy, (const int64_t[]){80, 65}, 2);
  /* short rows (1 < ℓ < W packs several a packet: a strided view takes the masked path) */
  strided("rmsnorm", "R=37,C=8", xy, (const int64_t[]){11, 9}, 2);
  strided("softmax_mask", "R=19,C=6", (const char *[]){"x", "mask", "y"}, (const int64_t[]){7, 6, 9}, 3);
  strided("rope_cache", "R=37,C=2,HD=2,P=5,H2=1", xy, (const int64_t[]){3, 5}, 2);
  strided("softmax_mask", "R=20,C=100", (const char *[]){"x", "mask", "y"},
          (const int64_t[]){101, 200, 117}, 3);
  strided("rope", "R=9,C=256,HD=64", xy, (const int64_t[]){300, 257}, 2);
  /* the two halves of a fused gate/up tensor [R, 2C]: a at column 0, b at column C */
  strided("swiglu", "R=17,C=65", (const char *[]){"a", "b", "y"}, (const int64_t[]){130, 130, 70}, 3);
  strided("swiglu", "R=9,C=64", (const char *[]){"a", "b"}, (const int64_t[]){128, 128}, 2);
  strided("gelu_residual", "R=5,C=48", (const char *[]){"x", "y"}, (const int64_t[]){49, 64}, 2);
  /* three root axes, a launch-time H: whole blocks address root-ordered accesses at p0 only when
   * every buffer is contiguous (src/lower/lower.c, whole_flat); strided, the tested unit loop */
  {
    static const char *kE4 =
        "kernel e4[B, H, C](x: f32[B, H, C], w: f32[H, C], t: f32[H, B, C], y: out f32[B, H, C])\n"
        "root b in B, h in H, c in C {\n"
        "  store y[b, h, c] = load x[b, h, c] * load w[h, c] + load t[h, b, c]\n}\n";
    xir_program *p;
    xir_diag d;
    if (xir_program_parse(kE4, strlen(kE4), "e4.xir", &p, &d)) die(&d);
    strided_program(p, "B=3,H=5,C=48", (const char *[]){"x", "y"}, (const int64_t[]){51, 64}, 2);
    static const char *kE3 = "kernel e3[B, H, C](x: f32[B, H, C], y: out f32[B, H, C])\n"
                             "root b in B, h in H, c in C {\n  store y[b, h, c] = load x[b, h, c] * 2.0\n}\n";
    if (xir_program_parse(kE3, strlen(kE3), "e3.xir", &p, &d)) die(&d);
    strided_program(p, "B=3,H=5,C=17", (const char *[]){"x", "y"}, (const int64_t[]){19, 32}, 2);
  }
  /* attention (every candidate, the attention mapping's too): rows of q, k, v and o apart by
   * more than D or DV, odd strides */
  strided("attention", "B=2,HQ=4,HKV=2,Q=5,K=70,D=16,DV=12", (const char *[]){"q", "k", "v", "o"},
          (const int64_t[]){17, 21, 13, 19}, 4);
  strided("attention_causal", "B=1,HQ=4,HKV=2,Q=9,K=67,D=8,DV=8",
          (const char *[]){"k", "v", "o"}, (const int64_t[]){9, 24, 11}, 3);
}

/* A [B, HKV, K, D] view into a KV cache of capacity KC > K (strides), q and o contiguous; the
 * unused capacity holds NaN, so any read of it shows. Every candidate runs, the attention
 * mapping's too (it reads the strides from the argument block). */
static void test_kv_cache_view(void **state) {
  (void)state;
  xir_program *p = load("attention");
  const int B = 2, HKV = 2, K = 37, KC = 64, D = 16;
  xir_shape s = shape_of(p, "B=2,HQ=4,HKV=2,Q=3,K=37,D=16,DV=16");
  xir_case c;
  xir_diag d;
  if (xir__case_init(&c, p, &s, 11, &d) || xir__case_oracle(&c, &d)) die(&d);
  float *cache[2];
  int64_t st[4] = {(int64_t)HKV * KC * D, (int64_t)KC * D, D, 1};
  for (int t = 0; t < 2; t++) {
    int pi = xir_program_find_param(p, t ? "v" : "k");
    size_t n = (size_t)B * HKV * KC * D;
    cache[t] = malloc(n * sizeof(float));
    for (size_t e = 0; e < n; e++) cache[t][e] = NAN; /* any read of the unused capacity shows */
    for (int b = 0; b < B; b++)
      for (int g = 0; g < HKV; g++)
        for (int j = 0; j < K; j++)
          memcpy(cache[t] + ((size_t)(b * HKV + g) * KC + j) * D,
                 c.data[pi] + ((size_t)(b * HKV + g) * K + j) * D, D * sizeof(float));
    c.args[pi].in = cache[t];
    c.args[pi].strides = st;
  }
  xir_candidate *cands;
  size_t n, mapped = 0, ran = 0;
  if (xir_candidates(p, &s, xir_compiler_width(g_cc), &cands, &n, &d)) die(&d);
  for (size_t i = 0; i < n; i++) {
    if (!sampled(&cands[i])) continue;
    const xir_kernel *k;
    if (xir_compile(g_cc, p, &s, &cands[i], &k, &d)) die(&d);
    xir__case_reset_outputs(&c);
    launch(k, &c, 0);
    char name[128], what[256];
    xir_candidate_name(p, &cands[i], name, sizeof name);
    snprintf(what, sizeof what, "attention on a KV cache view, %s", name);
    check_case(&c, what);
    mapped += cands[i].attn_vec != 0;
    ran++;
  }
  assert_true(mapped > 0 && ran > mapped);
  /* the interpreter reads the view the same way */
  double *ref0 = malloc(c.numel[3] * sizeof(double));
  memcpy(ref0, c.ref[3], c.numel[3] * sizeof(double));
  if (xir__case_oracle(&c, &d)) die(&d);
  assert_memory_equal(ref0, c.ref[3], c.numel[3] * sizeof(double));
  free(ref0);
  free(cache[0]);
  free(cache[1]);
  xir_free(cands);
  xir__case_free(&c);
  xir_program_free(p);
}

static void test_bad_strides_refused(void **state) {
  (void)state;
  xir_program *p = load("rmsnorm");
  xir_shape s = shape_of(p, "R=4,C=8");
  uint8_t perm[1] = {0};
  xir_candidate cd;
  xir_diag d;
  uint32_t W = xir_compiler_width(g_cc);
  if (xir_candidate_make(p, &s, W, W, 1, perm, &cd, &d)) die(&d);
  const xir_kernel *k;
  if (xir_compile(g_cc, p, &s, &cd, &k, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &s, 3, &d)) die(&d);
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  c.args[0].row_stride = 7; /* below C */
  assert_int_equal(xir_kernel_pack_args(k, c.args, slots, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "below the row length"));
  int64_t st[2] = {8, 2}; /* innermost stride 2 */
  c.args[0].row_stride = 0;
  c.args[0].strides = st;
  assert_int_equal(xir_kernel_pack_args(k, c.args, slots, &d), XIR_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.msg, "unit innermost stride"));
  int64_t st2[2] = {4, 1}; /* rows overlap */
  c.args[0].strides = st2;
  assert_int_equal(xir_kernel_pack_args(k, c.args, slots, &d), XIR_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.msg, "overlap"));
  c.args[0].row_stride = 9;
  assert_int_equal(xir_kernel_pack_args(k, c.args, slots, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "not both"));
  c.args[0].strides = NULL;
  c.args[1].row_stride = 9; /* w is rank 1 */
  assert_int_equal(xir_kernel_pack_args(k, c.args, slots, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "rank 1"));
  xir__case_free(&c);
  xir_program_free(p);
}

/* ---- in place ---- */

/* y = x for kernel's output `out` and input `in`: every candidate matches the oracle computed on
 * the original input. */
static void in_place(const char *kernel, const char *spec, const char *out, const char *in) {
  xir_program *p = load(kernel);
  int o = xir_program_find_param(p, out), i = xir_program_find_param(p, in);
  xir_diag d;
  if (xir_program_alias_ok(p, o, i, &d)) die(&d);
  xir_shape s = shape_of(p, spec);
  xir_case c;
  if (xir__case_init(&c, p, &s, 21, &d) || xir__case_oracle(&c, &d)) die(&d);
  float *buf = malloc(c.numel[i] * sizeof(float));
  xir_candidate *cands;
  size_t n;
  if (xir_candidates(p, &s, xir_compiler_width(g_cc), &cands, &n, &d)) die(&d);
  xir_tolerance tol = xir__kernel_tolerance(kernel);
  for (size_t j = 0; j < n; j++) {
    if (!sampled(&cands[j])) continue;
    const xir_kernel *k;
    if (xir_compile(g_cc, p, &s, &cands[j], &k, &d)) die(&d);
    memcpy(buf, c.data[i], c.numel[i] * sizeof(float));
    xir_arg a[XIR_MAX_PARAMS];
    memcpy(a, c.args, sizeof a);
    a[i].in = buf;
    a[o].out = buf;
    uint64_t slots[XIR_MAX_ARG_SLOTS], blocks;
    if (cands[j].attn_vec) { /* its tiles are not in-place safe: refused */
      assert_int_equal(xir_kernel_pack_launch(k, &s, a, slots, &blocks, &d), XIR_ERR_UNSUPPORTED);
      assert_non_null(strstr(d.msg, "in-place launch refused: the attention mapping"));
      continue;
    }
    if (xir_kernel_pack_launch(k, &s, a, slots, &blocks, &d)) die(&d);
    xir_launch_stats st;
    if (xir_runtime_launch(g_rt, (xir_block_fn)xir_kernel_entry(k), slots, blocks, 0, 2, &st, &d))
      die(&d);
    for (size_t e = 0; e < c.numel[o]; e++) {
      double y = buf[e], r = c.ref[o][e];
      if (!(fabs(y - r) <= tol.atol + tol.rtol * fabs(r)))
        fail_msg("%s %s in place (%s = %s), candidate %zu: element %zu is %.9g, oracle %.9g",
                 kernel, spec, out, in, j, e, y, r);
    }
  }
  free(buf);
  xir_free(cands);
  xir__case_free(&c);
  xir_program_free(p);
}

static void test_in_place_allowed(void **state) {
  (void)state;
  in_place("rmsnorm", "R=33,C=100", "y", "x");
  in_place("layernorm", "R=17,C=65", "y", "x");
  in_place("softmax_mask", "R=20,C=100", "y", "x");
  in_place("softmax_mask", "R=20,C=100", "y", "mask");
  in_place("softmax_causal", "R=20,C=37", "y", "x");
  in_place("swiglu", "R=17,C=65", "y", "a");
  in_place("swiglu", "R=17,C=65", "y", "b");
  in_place("gelu_residual", "R=9,C=40", "y", "x");
  in_place("gelu_residual", "R=9,C=40", "y", "r");
  in_place("attention", "B=1,HQ=4,HKV=2,Q=5,K=9,D=8,DV=8", "o", "q");
}

static void test_in_place_refused(void **state) {
  (void)state;
  xir_diag d;
  xir_program *p = load("rope");
  int x = xir_program_find_param(p, "x"), y = xir_program_find_param(p, "y");
  assert_int_equal(xir_program_alias_ok(p, y, x, &d), XIR_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.msg, "computed value"));
  xir_shape s = shape_of(p, "R=4,C=8,HD=4");
  uint8_t perm[1] = {0};
  xir_candidate cd;
  uint32_t W = xir_compiler_width(g_cc);
  if (xir_candidate_make(p, &s, W, W, 1, perm, &cd, &d)) die(&d);
  const xir_kernel *k;
  if (xir_compile(g_cc, p, &s, &cd, &k, &d)) die(&d);
  float buf[64] = {1};
  xir_arg a[4] = {{.in = buf}, {.out = buf}, {.use_default = 1}, {.use_default = 1}};
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  assert_int_equal(xir_kernel_pack_args(k, a, slots, &d), XIR_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.msg, "in-place launch refused"));
  /* a partial overlap: y one row into x */
  a[1].out = buf + 8;
  assert_int_equal(xir_kernel_pack_args(k, a, slots, &d), XIR_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.msg, "overlaps input 'x'"));
  xir_program_free(p);
  /* rmsnorm: y = x allowed, but not y = w (rank), and not with different strides */
  p = load("rmsnorm");
  assert_int_equal(xir_program_alias_ok(p, 2, 1, &d), XIR_ERR_UNSUPPORTED);
  assert_int_equal(xir_program_alias_ok(p, 0, 1, &d), XIR_ERR_INVALID_ARG);
  s = shape_of(p, "R=4,C=8");
  if (xir_candidate_make(p, &s, W, W, 1, perm, &cd, &d)) die(&d);
  if (xir_compile(g_cc, p, &s, &cd, &k, &d)) die(&d);
  float big[128] = {1};
  xir_arg b[4] = {{.in = big}, {.in = big + 100}, {.out = big, .row_stride = 16}, {.use_default = 1}};
  assert_int_equal(xir_kernel_pack_args(k, b, slots, &d), XIR_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.msg, "overlaps input 'x'"));
  b[2].row_stride = 0;
  assert_int_equal(xir_kernel_pack_args(k, b, slots, &d), XIR_OK);
  xir_program_free(p);
  /* a user program: a load of x after the store to y */
  const char *src = "kernel late[R, C](x: f32[R, C], y: out f32[R, C], z: out f32[R, C])\n"
                    "root r in R {\n"
                    "  store y[r, :] = load x[r, :] * 2.0\n"
                    "  store z[r, :] = load x[r, :] + 1.0\n"
                    "}\n";
  if (xir_program_parse(src, strlen(src), "late", &p, &d)) die(&d);
  assert_int_equal(xir_program_alias_ok(p, 1, 0, &d), XIR_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.msg, "after the store"));
  assert_int_equal(xir_program_alias_ok(p, 2, 0, &d), XIR_OK);
  /* two outputs at the same memory */
  s = shape_of(p, "R=2,C=16");
  if (xir_candidate_make(p, &s, W, W, 1, perm, &cd, &d)) die(&d);
  if (xir_compile(g_cc, p, &s, &cd, &k, &d)) die(&d);
  float xs[32] = {1}, ys[32];
  xir_arg e[3] = {{.in = xs}, {.out = ys}, {.out = ys}};
  assert_int_equal(xir_kernel_pack_args(k, e, slots, &d), XIR_ERR_UNSUPPORTED);
  assert_non_null(strstr(d.msg, "overlaps output"));
  xir_program_free(p);
}

static int setup(void **state) {
  (void)state;
  xir_diag d;
  if (xir_compiler_create(NULL, &g_cc, &d)) return -1;
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  ro.workers = 2;
  if (xir_runtime_create(&ro, &g_rt, &d)) return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  xir_runtime_destroy(g_rt);
  xir_compiler_destroy(g_cc);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bridge_fixed_dims),
      cmocka_unit_test(test_divisor_dims_fixed),
      cmocka_unit_test(test_bridge_attn_and_mask_dims),
      cmocka_unit_test(test_strided_16bit_refused),
      cmocka_unit_test(test_row_kernels_many_r),
      cmocka_unit_test(test_attention_many_k),
      cmocka_unit_test(test_code_independent_of_launch_dims),
      cmocka_unit_test(test_mismatch_refused),
      cmocka_unit_test(test_strided_rows),
      cmocka_unit_test(test_kv_cache_view),
      cmocka_unit_test(test_bad_strides_refused),
      cmocka_unit_test(test_in_place_allowed),
      cmocka_unit_test(test_in_place_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

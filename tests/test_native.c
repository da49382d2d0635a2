/* test_native.c — every built-in kernel × the report and ragged shapes × every legal candidate at
 * W = 8 and W = 16, compiled to native code and run on the calling thread: the whole output
 * matches the fp64 oracle within the kernel's stated tolerance (NaN never passes, unwritten
 * elements are NaN), sentinels intact. Plus: a sub-range of blocks writes exactly its part.
 *
 * Usage: test_native [KERNEL]   (CTest runs one process per kernel). */
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
#include "lower/jit.h"
#include "xir_compile.h"
#include "testutil.h"

static const char *g_kernel;
static xir_compiler *g_cc[2]; /* W = 16, W = 8 */

/* (short rows, C < W: 1 < ℓ < W packs several rows a packet — C = ℓ contiguous, C < ℓ through
 * window loads and stores) */
static const char *kRowShapes[] = {"R=64,C=256",  "R=129,C=768", "R=17,C=65",   "R=257,C=1538",
                                   "R=1024,C=4096", "R=4096,C=1024", "R=1,C=1", "R=3,C=7",
                                   "R=33,C=1000", "R=37,C=8", "R=19,C=6", "R=21,C=2", "R=13,C=24"};
static const char *kRopeShapes[] = {"R=64,C=256,HD=64", "R=129,C=768,HD=128", "R=257,C=1538,HD=2",
                                    "R=1024,C=4096,HD=128", "R=4096,C=1024,HD=64", "R=1,C=2,HD=2",
                                    "R=3,C=6,HD=2", "R=33,C=1000,HD=100", "R=17,C=66,HD=22",
                                    /* one head a row: sin and cos in a buffer of the row's
                                     * values (M = N), computed past N at HD = 100, 80, 34 */
                                    "R=9,C=96,HD=96", "R=7,C=100,HD=100", "R=5,C=80,HD=80",
                                    "R=3,C=34,HD=34"};
/* rope_cache: P above, below and equal to R (positions repeat when P < R), P = 1 (all zero) */
static const char *kRopeCacheShapes[] = {
    "R=64,C=256,HD=64,P=100,H2=32",      "R=129,C=768,HD=64,P=4096,H2=32",
    "R=257,C=1538,HD=2,P=7,H2=1",        "R=1024,C=4096,HD=128,P=4096,H2=64",
    "R=4096,C=1024,HD=64,P=8192,H2=32",  "R=1,C=2,HD=2,P=1,H2=1",
    "R=3,C=6,HD=2,P=5,H2=1",             "R=33,C=1000,HD=100,P=33,H2=50",
    "R=17,C=66,HD=22,P=2,H2=11",         "R=9,C=480,HD=96,P=11,H2=48",
    "R=37,C=2,HD=2,P=5,H2=1",            "R=19,C=4,HD=4,P=3,H2=2"};
static const char *kAttnShapes[] = {"B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16", "B=1,HQ=1,HKV=1,Q=1,K=1,D=1,DV=1",
                                    "B=2,HQ=3,HKV=1,Q=5,K=3,D=3,DV=5", "B=1,HQ=8,HKV=2,Q=33,K=65,D=24,DV=8"};

static void die(const xir_diag *d) {
  char b[2048];
  fail_msg("%s", xir_diag_format(d, b, sizeof b));
}

/* Runs the candidates first, first + step, ... of program p × shape at width W (step 1: every
 * candidate) against the oracle with tolerance tol; returns the number run. */
static size_t check_program(xir_compiler *cc, const xir_program *p, const char *spec, size_t first,
                            size_t step, xir_tolerance tol) {
  const char *kernel = xir_program_name(p);
  xir_diag d;
  xir_shape shape;
  if (xir_shape_parse(p, spec, &shape, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &shape, 1234, &d) || xir__case_oracle(&c, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  xir_candidate *cands;
  size_t n;
  if (xir_candidates(p, &shape, W, &cands, &n, &d)) die(&d);
  assert_true(n > 0);
  size_t ran = 0;
  for (size_t i = thin_start(n, first, step); i < n; i += step, ran++) {
    char name[128];
    xir_candidate_name(p, &cands[i], name, sizeof name);
    const xir_kernel *k;
    if (xir_compile(cc, p, &shape, &cands[i], &k, &d)) die(&d);
    xir__case_reset_outputs(&c);
    uint64_t slots[XIR_MAX_ARG_SLOTS];
    if (xir_kernel_pack_args(k, c.args, slots, &d)) die(&d);
    assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
    if (!xir__case_sentinels_ok(&c)) fail_msg("%s %s %s: a sentinel was overwritten", kernel, spec, name);
    for (int q = 0; q < xir_program_num_params(p); q++) {
      if (!c.ref[q]) continue;
      xir_compare r = xir__case_compare(&c, q, tol);
      if (!r.pass)
        fail_msg("%s %s %s: %zu of %zu elements out of tolerance (%zu NaN); first at %zu: "
                 "got %.9g, oracle %.9g; max abs %.3g", kernel, spec, name, r.bad, r.n, r.nan,
                 r.first_bad, (double)c.data[q][r.first_bad], c.ref[q][r.first_bad], r.max_abs);
    }
  }
  xir_free(cands);
  xir__case_free(&c);
  return ran;
}

/* check_program for built-in kernel `kernel` with its stated tolerance. */
static size_t check_all(xir_compiler *cc, const char *kernel, const char *spec, size_t first,
                        size_t step) {
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load(kernel, &p, &d)) die(&d);
  size_t ran = check_program(cc, p, spec, first, step, xir__kernel_tolerance(kernel));
  xir_program_free(p);
  return ran;
}

/* A secondary sweep's candidates (the tests below the main one): every one in the normal pass;
 * under XIR_TEST_QUICK (the sanitizer pass) every third, starting at salt mod 3 (callers vary
 * salt across shapes, widths and CPUs, so that every residue runs somewhere). */
static size_t sweep(xir_compiler *cc, const char *kernel, const char *spec, size_t salt) {
  return check_all(cc, kernel, spec, test_quick() ? salt : 0, test_quick() ? 3 : 1);
}

static void run_shapes(const char **shapes, size_t count) {
  for (int w = 0; w < 2; w++) {
    if (!g_cc[w]) continue;
    size_t total = 0;
    int quick = test_quick();
    for (size_t i = 0; i < count; i++) {
      /* XIR_TEST_QUICK (the sanitizer runs, which look for memory errors in the library, while
       * the normal pass checks every candidate's output) skips the two largest shapes and runs
       * every third candidate, starting at the shape's index (plus the width's), so that the
       * three residues take turns from shape to shape */
      if (quick && (strstr(shapes[i], "R=1024,") || strstr(shapes[i], "R=4096,"))) continue;
      total += check_all(g_cc[w], g_kernel, shapes[i], quick ? i + (size_t)w : 0, quick ? 3 : 1);
    }
    printf("# %s W=%u: %zu candidate runs checked\n", g_kernel, xir_compiler_width(g_cc[w]), total);
  }
}

static void test_every_candidate_matches_oracle(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rope") == 0) run_shapes(kRopeShapes, sizeof kRopeShapes / sizeof *kRopeShapes);
  else if (strcmp(g_kernel, "rope_cache") == 0)
    run_shapes(kRopeCacheShapes, sizeof kRopeCacheShapes / sizeof *kRopeCacheShapes);
  else if (strncmp(g_kernel, "attention", 9) == 0)
    run_shapes(kAttnShapes, sizeof kAttnShapes / sizeof *kAttnShapes);
  else run_shapes(kRowShapes, sizeof kRowShapes / sizeof *kRowShapes);
}

/* Root program of output element e (row-major over the buffer), under the candidate's perm. */
static uint64_t owner(const xir_program *p, const xir_shape *s, int out, const xir_candidate *c,
                      size_t e) {
  xir_param_info in;
  xir_program_param(p, out, &in);
  int64_t coord[XIR_MAX_RANK];
  for (int k = in.rank - 1; k >= 0; k--) {
    int64_t ext = s->dims[in.dims[k]];
    coord[k] = (int64_t)(e % (size_t)ext);
    e /= (size_t)ext;
  }
  /* the verifier guarantees each root variable indexes the output at the dim it ranges over */
  uint64_t rp = 0;
  for (int i = 0; i < c->nperm; i++) {
    int axis = c->perm[i], dim = xir_program_root_dim(p, axis);
    int64_t v = 0;
    for (int k = 0; k < in.rank; k++)
      if (in.dims[k] == dim) v = coord[k];
    rp = rp * (uint64_t)s->dims[dim] + (uint64_t)v;
  }
  return rp;
}

/* Blocks [b0, b1) write exactly the elements of their root programs, and those correctly. */
static void test_block_subrange_writes_exactly_its_part(void **state) {
  (void)state;
  const char *spec = strcmp(g_kernel, "rope") == 0            ? "R=37,C=20,HD=4"
                     : strcmp(g_kernel, "rope_cache") == 0    ? "R=37,C=20,HD=4,P=50,H2=2"
                     : strncmp(g_kernel, "attention", 9) == 0 ? "B=2,HQ=4,HKV=2,Q=7,K=9,D=5,DV=3"
                                                              : "R=37,C=20";
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load(g_kernel, &p, &d)) die(&d);
  xir_shape shape;
  if (xir_shape_parse(p, spec, &shape, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &shape, 99, &d) || xir__case_oracle(&c, &d)) die(&d);
  xir_compiler *cc = g_cc[0] ? g_cc[0] : g_cc[1];
  xir_candidate *cands;
  size_t n;
  if (xir_candidates(p, &shape, xir_compiler_width(cc), &cands, &n, &d)) die(&d);
  for (size_t i = 0; i < n; i++) {
    const xir_kernel *k;
    if (xir_compile(cc, p, &shape, &cands[i], &k, &d)) die(&d);
    const xir_candidate *cd = xir_kernel_candidate(k);
    uint64_t L = xir_kernel_blocks(k), b0 = L / 3, b1 = L - L / 4;
    if (b1 <= b0) b1 = b0 + 1;
    xir__case_reset_outputs(&c);
    uint64_t slots[XIR_MAX_ARG_SLOTS];
    if (xir_kernel_pack_args(k, c.args, slots, &d)) die(&d);
    xir_kernel_entry(k)(slots, b0, b1);
    assert_true(xir__case_sentinels_ok(&c));
    uint64_t per_block = cd->B / cd->local;
    for (int q = 0; q < xir_program_num_params(p); q++) {
      if (!c.ref[q]) continue;
      for (size_t e = 0; e < c.numel[q]; e++) {
        uint64_t rp = owner(p, &shape, q, cd, e);
        int mine = rp >= b0 * per_block && rp < b1 * per_block;
        if (cd->attn_vec) {
          /* the attention mapping: block = tile (b, h / hb, i / qb) of o[b, h, i, :] */
          const int64_t *D = shape.dims; /* B, HQ, HKV, Q, K, D, DV */
          uint64_t dv = (uint64_t)D[6], i = e / dv % (uint64_t)D[3];
          uint64_t h = e / dv / (uint64_t)D[3] % (uint64_t)D[1], b = e / dv / (uint64_t)D[3] / (uint64_t)D[1];
          uint64_t nqb = ((uint64_t)D[3] + cd->attn_qb - 1) / cd->attn_qb;
          uint64_t tile = (b * ((uint64_t)D[1] / cd->attn_hb) + h / cd->attn_hb) * nqb + i / cd->attn_qb;
          mine = tile >= b0 && tile < b1;
        }
        float y = c.data[q][e];
        if (mine && !(fabs(y - c.ref[q][e]) <= 1e-3 + 1e-3 * fabs(c.ref[q][e])))
          fail_msg("%s: element %zu of its blocks is %g, oracle %g", g_kernel, e, (double)y, c.ref[q][e]);
        if (!mine && !isnan(y)) fail_msg("%s: element %zu outside blocks [%llu, %llu) was written",
                                         g_kernel, e, (unsigned long long)b0, (unsigned long long)b1);
      }
    }
  }
  xir_free(cands);
  xir__case_free(&c);
  xir_program_free(p);
}

/* The narrow widths W = 1, 2, 4 (forced): every candidate at a ragged and a regular shape. */
static void test_narrow_widths(void **state) {
  (void)state;
  const char *spec = strcmp(g_kernel, "rope") == 0            ? "R=5,C=12,HD=4"
                     : strcmp(g_kernel, "rope_cache") == 0    ? "R=5,C=12,HD=4,P=3,H2=2"
                     : strncmp(g_kernel, "attention", 9) == 0 ? "B=1,HQ=4,HKV=2,Q=5,K=7,D=3,DV=5"
                                                              : "R=5,C=13";
  uint32_t widths[] = {1, 2, 4};
  for (int i = 0; i < 3; i++) {
    xir_compiler_options o = {.force_width = widths[i]};
    xir_compiler *cc;
    xir_diag d;
    if (xir_compiler_create(&o, &cc, &d)) die(&d);
    assert_int_equal(xir_compiler_width(cc), widths[i]);
    sweep(cc, g_kernel, spec, (size_t)i);
    xir_compiler_destroy(cc);
  }
}

/* W = 4 and W = 8 on an AVX-512 CPU that LLVM tunes to prefer 256-bit vectors (Intel's server
 * cores; this host's own tuning may not): vmath's 16-lane AVX-512 instructions are legal there
 * too. Before the fix, LLVM aborted the process in instruction selection ("Do not know how to split
 * the result of this operator") on swiglu, gelu_residual, rope and softmax at W = 4. */
static void test_narrow_widths_on_256_preferring_cpu(void **state) {
  (void)state;
  xir_compiler *host;
  xir_diag d;
  if (xir_compiler_create(NULL, &host, &d)) die(&d);
  uint32_t hw = xir_compiler_width(host);
  xir_compiler_destroy(host);
  if (hw < 16) skip(); /* forcing an AVX-512 CPU needs an AVX-512 host */
  const char *spec = strcmp(g_kernel, "rope") == 0            ? "R=5,C=12,HD=4"
                     : strcmp(g_kernel, "rope_cache") == 0    ? "R=5,C=12,HD=4,P=3,H2=2"
                     : strncmp(g_kernel, "attention", 9) == 0 ? "B=1,HQ=4,HKV=2,Q=5,K=7,D=3,DV=5"
                                                              : "R=5,C=13";
  uint32_t widths[] = {4, 8};
  for (int i = 0; i < 2; i++) {
    xir_compiler_options o = {.force_width = widths[i], .cpu = "icelake-server"};
    xir_compiler *cc;
    if (xir_compiler_create(&o, &cc, &d)) die(&d);
    assert_int_equal(xir_compiler_width(cc), widths[i]);
    sweep(cc, g_kernel, spec, (size_t)i);
    xir_compiler_destroy(cc);
  }
}

/* Targets without AVX-512 read and write constant lane masks with plain narrow loads and stores
 * (xir__ir_mask_load / xir__ir_mask_store: windows, tail packets over compile-time dims, the
 * stride-2 load), and Zen 1 ("znver1") splits lane-crossing shuffles into 128-bit halves
 * (xir__ir_shuffle_halves). On any host that runs them: every candidate of this kernel at shapes
 * with such packets (rows of 8 and 24 at ℓ = 4 and 16, ragged rows, rope_cache's half-rate
 * cos/sin windows and rows of 2) matches the oracle, and rope_cache at ℓ = 64 has no masked load
 * or lane-crossing permute left. */
static void test_narrow_masks_without_avx512(void **state) {
  (void)state;
  static const char *const kRows[] = {"R=17,C=8", "R=33,C=24", "R=5,C=100", "R=3,C=7"};
  static const char *const kRopeCache[] = {"R=5,C=256,HD=128,P=7,H2=64", "R=3,C=1000,HD=100,P=4096,H2=50",
                                           "R=37,C=2,HD=2,P=5,H2=1"};
  static const char *const kRope[] = {"R=5,C=256,HD=128", "R=3,C=200,HD=100", "R=37,C=2,HD=2"};
  if (!strncmp(g_kernel, "attention", 9)) skip();
  int rc = !strcmp(g_kernel, "rope_cache"), rope = !strcmp(g_kernel, "rope");
  const char *const *shapes = rc ? kRopeCache : rope ? kRope : kRows;
  size_t nshapes = rc || rope ? 3 : 4;
  const char *cpus[] = {"haswell", "znver1"};
  int ran = 0;
  for (int t = 0; t < 2; t++) {
    xir_compiler_options o = {.cpu = cpus[t], .no_kernel_cache = 1};
    xir_compiler *cc;
    xir_diag d;
    if (xir_compiler_create(&o, &cc, &d)) continue; /* not runnable here (znver1 on Intel) */
    assert_int_equal(xir_compiler_width(cc), 8);
    for (size_t i = 0; i < nshapes; i++) assert_true(sweep(cc, g_kernel, shapes[i], i + (size_t)t) > 0);
    if (rc) {
      xir_program *p;
      xir_shape s;
      xir_candidate c;
      uint8_t perm[1] = {0};
      const xir_kernel *k;
      if (xir_kernel_load("rope_cache", &p, &d) || xir_shape_parse(p, kRopeCache[0], &s, &d) ||
          xir_candidate_make(p, &s, 8, 64, 64, perm, &c, &d) || xir_compile(cc, p, &s, &c, &k, &d))
        die(&d);
      xir_kernel_info info;
      xir_kernel_get_info(k, &info);
      if (strstr(info.ir_text, "llvm.masked.load")) fail_msg("%s: rope_cache l = 64 has a masked load", cpus[t]);
      /* znver1: the cos/sin duplication as two in-lane halves kept apart by an empty asm (one
       * lane-crossing vpermps otherwise); haswell keeps the one shuffle */
      int split = strstr(info.ir_text, "asm \"\", \"=x,0\"") != NULL;
      if (split != (t == 1)) fail_msg("%s: split halves %d", cpus[t], split);
      xir_program_free(p);
      /* at ℓ = HD the table rows are the same in every chunk: their loads (and the duplicating
       * shuffles) stay out of the chunk loop, in a loop preheader, on both targets (the split's
       * asm is memory(none): counted as a store, it kept them in every chunk on znver1) */
      if (xir_kernel_load("rope_cache", &p, &d) || xir_shape_parse(p, "R=5,C=768,HD=64,P=7,H2=32", &s, &d) ||
          xir_candidate_make(p, &s, 8, 64, 64, perm, &c, &d) || xir_compile(cc, p, &s, &c, &k, &d))
        die(&d);
      xir_kernel_get_info(k, &info);
      int in_body = 0, hoisted = 0;
      const char *blk = "";
      size_t blen = 0;
      for (const char *ln = info.ir_text; ln && *ln; ln = strchr(ln, '\n') ? strchr(ln, '\n') + 1 : NULL) {
        size_t n = strcspn(ln, "\n");
        const char *colon = memchr(ln, ':', n);
        if (n && ln[0] != ' ' && colon) blk = ln, blen = (size_t)(colon - ln);
        const char *ld = strstr(ln, "load <4 x float>");
        if (!ld || ld >= ln + n) continue; /* the tables' half-vector loads (x is loaded whole) */
        if (blen >= 4 && !strncmp(blk, "body", 4)) in_body++;
        else hoisted++;
      }
      if (in_body || hoisted < 16)
        fail_msg("%s: rope_cache HD = 64 at l = 64: %d table loads in a chunk loop body, %d hoisted",
                 cpus[t], in_body, hoisted);
      xir_program_free(p);
    }
    xir_compiler_destroy(cc);
    ran++;
  }
  if (!ran) skip(); /* a host without AVX2 */
}

/* The optimized IR of kernel at spec, candidate B = ℓ = W (the host's width) in the first
 * permutation, compiled by a new compiler with the light pipeline (no inliner: vmath's call
 * sites stay visible). The text belongs to *cc; the caller destroys *cc and frees *p. */
/* The optimized IR (light pipeline) of kernel at spec, candidate (ℓ, B) in units of W: ℓ = W·lw
 * (lw = 0: ℓ = 1), B = W·bw. */
static const char *light_ir_at(const char *kernel, const char *spec, unsigned lw, unsigned bw,
                               xir_compiler **cc, xir_program **p) {
  xir_diag d;
  xir_shape s;
  if (xir_kernel_load(kernel, p, &d) || xir_shape_parse(*p, spec, &s, &d)) die(&d);
  xir_compiler_options o = {.pipeline = XIR__JIT_LIGHT_PIPELINE};
  if (xir_compiler_create(&o, cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(*cc);
  xir_candidate c;
  uint8_t perm[8] = {0, 1, 2, 3, 4, 5, 6, 7}; /* the root axes in order */
  if (xir_candidate_make(*p, &s, W, W * bw, lw ? W * lw : 1, perm, &c, &d)) die(&d);
  const xir_kernel *k;
  if (xir_compile(*cc, *p, &s, &c, &k, &d)) die(&d);
  xir_kernel_info info;
  xir_kernel_get_info(k, &info);
  return info.ir_text;
}

static const char *light_ir(const char *kernel, const char *spec, xir_compiler **cc,
                            xir_program **p) {
  return light_ir_at(kernel, spec, 1, 1, cc, p);
}

static int count_str(const char *hay, const char *needle) {
  int n = 0;
  for (const char *q = hay; (q = strstr(q, needle)) != NULL; q++) n++;
  return n;
}

/* ℓ = 1 over rows whose length E is a multiple of B (swiglu, C = 768, B = 8W): a block stays in
 * one row, so the row and the block's first column are one unsigned division per block (LICM
 * keeps it out of the unit loop) and the packets step by W; no signed scalar division is left
 * (it was two per packet, with the sign fix-ups). The masked path of a partial last unit (R is a
 * launch-time dim) keeps its vector floor division. A block runs one of two unit loops: a whole
 * block of contiguous buffers addresses by the flattened index (its division and remainder fold
 * away, test_whole_block_flat_address), the tested loop (the launch's last block, a strided
 * view's blocks) keeps one division and one remainder a block. */
static void test_block_coords_once_per_block(void **state) {
  (void)state;
  if (strcmp(g_kernel, "swiglu") != 0) return;
  xir_compiler *cc;
  xir_program *p;
  const char *ir = light_ir_at("swiglu", "R=64,C=768", 0, 8, &cc, &p);
  assert_int_equal(count_str(ir, "sdiv i64 "), 0);
  assert_int_equal(count_str(ir, "srem i64 "), 0);
  assert_int_equal(count_str(ir, "udiv i64 "), 1);
  assert_int_equal(count_str(ir, "urem i64 "), 1);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* The text of IR basic block `name` (from its label to the blank line that ends it), or "". */
static const char *ir_block(const char *ir, const char *name, char *buf, size_t cap) {
  char label[64];
  snprintf(label, sizeof label, "\n%s:", name);
  const char *b = strstr(ir, label);
  buf[0] = 0;
  if (!b) return buf;
  const char *e = strstr(b + 1, "\n\n");
  size_t n = e ? (size_t)(e - b) : strlen(b);
  if (n >= cap) n = cap - 1;
  memcpy(buf, b, n);
  buf[n] = 0;
  return buf;
}

/* ℓ = 1 with rows whose length E is a multiple of W but not of B (C = 1040, 48): a whole block
 * of contiguous buffers addresses every packet at the flattened index p0 — no division or
 * remainder by E and no run-time stride in its unit loop (they were one udiv, one urem and a
 * multiplication per buffer a packet: swiglu 2x100000 on one thread, 11.7-11.9 -> 7.3 ns a
 * packet) — while the tested unit loop keeps them for strided views. Every candidate at those
 * shapes matches the oracle (the strided views: test_dims test_strided_rows). */
static void test_whole_block_flat_address(void **state) {
  (void)state;
  if (strcmp(g_kernel, "swiglu") != 0 && strcmp(g_kernel, "gelu_residual") != 0) return;
  static const char *const specs[] = {"R=9,C=1040", "R=50,C=48"};
  for (int i = 0; i < 2; i++) {
    xir_compiler *cc;
    xir_program *p;
    const char *ir = light_ir_at(g_kernel, specs[i], 0, 8, &cc, &p);
    static char blk[1 << 16];
    ir_block(ir, "wholeunit", blk, sizeof blk);
    assert_true(strlen(blk) > 0);
    assert_int_equal(count_str(blk, "udiv "), 0);
    assert_int_equal(count_str(blk, "urem "), 0);
    assert_int_equal(count_str(blk, "mul i64 "), 0);
    assert_true(count_str(ir, "urem i64 ") > 0); /* the tested unit loop's */
    xir_compiler_destroy(cc);
    xir_program_free(p);
    for (int w = 0; w < 2; w++)
      if (g_cc[w]) assert_true(sweep(g_cc[w], g_kernel, specs[i], (size_t)(i + w)) > 0);
  }
}

/* ℓ = 1: a block whose root programs all exist runs its units with no per-unit tests (the
 * "wholeblock" path), on the lin path (C = 1538, not a multiple of W) too; ℓ = W (rmsnorm) has
 * one unit a block and no such path. */
static void test_whole_block_path(void **state) {
  (void)state;
  if (strcmp(g_kernel, "swiglu") != 0) return;
  static const char *const specs[] = {"R=64,C=768", "R=7,C=1538"};
  for (int i = 0; i < 2; i++) {
    xir_compiler *cc;
    xir_program *p;
    const char *ir = light_ir_at("swiglu", specs[i], 0, 8, &cc, &p);
    assert_int_equal(count_str(ir, "\nwholeunit:"), 1); /* the body of its unit loop */
    xir_compiler_destroy(cc);
    xir_program_free(p);
  }
  xir_compiler *cc;
  xir_program *p;
  const char *ir = light_ir_at("rmsnorm", "R=64,C=768", 1, 1, &cc, &p);
  assert_int_equal(count_str(ir, "wholeunit"), 0);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* Three root axes with a launch-time middle extent (off the lin path): a whole block of
 * contiguous buffers addresses an access in root order (x[b, h, c], y[b, h, c]) at p0 — no
 * division by H or C is left in its unit loop (there were a 64-bit signed division and remainder
 * by H and a division by C a packet) — while a broadcast (w[h, c]) and a transposed (t[h, b, c])
 * access keep the coordinates. With C = 17 (packets wrap) e3, whose every root index is one of
 * a root-ordered access, has the same whole-block path (it had none: the tested unit loop,
 * wrapping packets gathering). Every candidate matches the oracle at shapes whose H and B differ
 * from the first (the code is shared across launch-time dims), C a multiple of W or not. */
static void test_whole_block_flat_three_axes(void **state) {
  (void)state;
  if (strcmp(g_kernel, "swiglu") != 0) return;
  static const char *const kText[] = {
      "kernel e3[B, H, C](x: f32[B, H, C], y: out f32[B, H, C])\n"
      "root b in B, h in H, c in C {\n  store y[b, h, c] = load x[b, h, c] * 2.0\n}\n",
      "kernel e4[B, H, C](x: f32[B, H, C], w: f32[H, C], t: f32[H, B, C], y: out f32[B, H, C])\n"
      "root b in B, h in H, c in C {\n"
      "  store y[b, h, c] = load x[b, h, c] * load w[h, c] + load t[h, b, c]\n}\n"};
  static const char *const kShapes[] = {"B=3,H=5,C=48", "B=7,H=13,C=160", "B=2,H=3,C=16",
                                        "B=5,H=7,C=17"};
  xir_tolerance tol = {1e-6, 1e-6};
  for (int t = 0; t < 2; t++) {
    xir_program *p;
    xir_diag d;
    if (xir_program_parse(kText[t], strlen(kText[t]), "e.xir", &p, &d)) die(&d);
    for (int sp = 0; t == 0 && sp < 4; sp += 3) { /* C = 48 and C = 17 (packets wrap) */
      xir_shape sh;
      if (xir_shape_parse(p, kShapes[sp], &sh, &d)) die(&d);
      xir_compiler_options o = {.pipeline = XIR__JIT_LIGHT_PIPELINE};
      xir_compiler *cc;
      if (xir_compiler_create(&o, &cc, &d)) die(&d);
      uint32_t W = xir_compiler_width(cc);
      xir_candidate c;
      uint8_t perm[3] = {0, 1, 2};
      if (xir_candidate_make(p, &sh, W, 8 * W, 1, perm, &c, &d)) die(&d);
      const xir_kernel *k;
      if (xir_compile(cc, p, &sh, &c, &k, &d)) die(&d);
      xir_kernel_info info;
      xir_kernel_get_info(k, &info);
      static char blk[1 << 16];
      ir_block(info.ir_text, "wholeunit", blk, sizeof blk);
      assert_true(strlen(blk) > 0);
      assert_int_equal(count_str(blk, "div i64 "), 0); /* udiv, sdiv */
      assert_int_equal(count_str(blk, "rem i64 "), 0); /* urem, srem */
      assert_int_equal(count_str(blk, "mul i64 "), 0);
      xir_compiler_destroy(cc);
    }
    for (int w = 0; w < 2; w++)
      for (int i = 0; i < 4; i++)
        if (g_cc[w]) assert_true(check_program(g_cc[w], p, kShapes[i], 0, 1, tol) > 0);
    xir_program_free(p);
  }
}

/* An expensive tile used by two consumers is computed once: softmax's exp appears at one call
 * site (the sum's loop stores it, the store's loop reloads it). Compiled without the inliner so
 * that the call sites stay visible in the IR. */
static void test_shared_exp_is_computed_once(void **state) {
  (void)state;
  if (strcmp(g_kernel, "softmax_mask") != 0) return;
  xir_compiler *cc;
  xir_program *p;
  const char *ir = light_ir("softmax_mask", "R=32,C=256", &cc, &p);
  int calls = 0;
  for (const char *q = ir; (q = strstr(q, "call fastcc")) != NULL; q++)
    if (strncmp(strchr(q, '@'), "@xir.vexp", 9) == 0) calls++;
  assert_int_equal(calls, 1);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* exp's vscalefps scales +0, not y, in the lanes whose result rounds to +0 (x < −103.98, the
 * −inf of masked softmax rows among them): y·2^−150 underflows, and Intel cores take a microcode
 * assist of about 150 cycles for every vscalefps that does (softmax_causal 3×100 ran 0.53 µs
 * instead of 0.15 on the 2026-12-02 Xeon host). The bits are the same either way (the
 * exhaustive hashes of exp, sigmoid, sigmoid16, tanh and erf did not change); this checks the
 * IR: every scalef's first operand is a select with zeroinitializer. */
static void test_exp_scales_zero_in_tiny_lanes(void **state) {
  (void)state;
  if (strcmp(g_kernel, "softmax_causal") != 0) return;
  xir_compiler *cc;
  xir_program *p;
  const char *ir = light_ir("softmax_causal", "R=8,C=100", &cc, &p);
  if (xir_compiler_width(cc) < 16) { /* no AVX-512: exp scales with integer operations and
                                        handles the tiny lanes itself */
    xir_compiler_destroy(cc);
    xir_program_free(p);
    skip();
  }
  const char *call = "@llvm.x86.avx512.mask.scalef.ps.512(<16 x float> %";
  int calls = 0;
  for (const char *q = ir; (q = strstr(q, call)) != NULL; q++) {
    char name[64] = "  %", def[80];
    const char *a = q + strlen(call);
    size_t len = strcspn(a, ",) ");
    assert_true(len > 0 && len < 40);
    memcpy(name + 3, a, len);
    name[3 + len] = 0;
    snprintf(def, sizeof def, "%s = select ", name);
    const char *at = strstr(ir, def);
    assert_non_null(at); /* the scaled value is a select */
    const char *eol = strchr(at, '\n');
    const char *z = strstr(at, "zeroinitializer");
    assert_true(z && z < eol); /* ... with +0 in the tiny lanes */
    calls++;
  }
  assert_true(calls >= 1);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* rope's pow(theta, …) has a scalar base: the lowering computes log|theta| once
 * (xir.vpowlog, the uniform-base pow) and never emits the general pow; every candidate of a rope
 * shape still matches the oracle (pow with a uniform base is bit-identical to pow). */
static void test_rope_pow_uses_uniform_base(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rope") != 0) return;
  xir_program *p;
  xir_diag d;
  xir_shape s;
  if (xir_kernel_load("rope", &p, &d) || xir_shape_parse(p, "R=5,C=96,HD=32", &s, &d)) die(&d);
  xir_compiler_options o = {.pipeline = XIR__JIT_LIGHT_PIPELINE};
  xir_compiler *cc;
  if (xir_compiler_create(&o, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  uint8_t perm[1] = {0};
  for (uint32_t ell = 1; ell <= 2 * W; ell *= 2) {
    xir_candidate c;
    if (xir_candidate_make(p, &s, W, 2 * W, ell, perm, &c, &d)) die(&d);
    const xir_kernel *k;
    if (xir_compile(cc, p, &s, &c, &k, &d)) die(&d);
    xir_kernel_info info;
    xir_kernel_get_info(k, &info);
    assert_non_null(strstr(info.ir_text, "@xir.vpowlog"));
    assert_null(strstr(info.ir_text, "@xir.vpow."));
  }
  assert_true(sweep(cc, "rope", "R=5,C=96,HD=32", 0) > 0);
  assert_true(sweep(cc, "rope", "R=3,C=12,HD=4", 1) > 0);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* ℓ ≥ W (one root program a packet): a rank-0 division or square root that every lane shares is
 * one scalar operation (rmsnorm's 1/sqrt(mean + eps): `fdiv float`, `llvm.sqrt.f32`), at ℓ < W it
 * stays a vector one (the lanes hold several rows); a row of one chunk (C ≤ ℓ) has no chunk loop;
 * a row max at ℓ ≥ W folds with vrangeps only (no llvm.maximum) where the target has it. Every
 * candidate of these shapes is checked against the oracle. */
/* exp(z - S) with S the row max of z (softmax) is computed without exp's clamp at 89 (vmath's
 * exp_nonpos, the same bits as exp there); an exp of any other value keeps it. */
static void test_softmax_exp_nonpos(void **state) {
  (void)state;
  if (strcmp(g_kernel, "softmax_mask") != 0) return;
  xir_compiler_options o = {.pipeline = XIR__JIT_LIGHT_PIPELINE};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&o, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  static const char kExp[] =
      "kernel exp_row[R, C](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n"
      "  z = load x[r, :]\n"
      "  store y[r, :] = exp(z - reduce.min(z))\n"
      "}\n";
  for (int k = 0; k < 3; k++) {
    xir_program *p;
    if (k < 2 ? xir_kernel_load(k ? "softmax_causal" : "softmax_mask", &p, &d)
              : xir_program_parse(kExp, strlen(kExp), "exp_row", &p, &d))
      die(&d);
    xir_shape s;
    if (xir_shape_parse(p, "R=5,C=100", &s, &d)) die(&d);
    uint8_t perm[1] = {0};
    xir_candidate c;
    if (xir_candidate_make(p, &s, W, 2 * W, 2 * W, perm, &c, &d)) die(&d);
    const xir_kernel *kn;
    if (xir_compile(cc, p, &s, &c, &kn, &d)) die(&d);
    xir_kernel_info info;
    xir_kernel_get_info(kn, &info);
    int clamp = strstr(info.ir_text, "8.900000e+01") != NULL;
    if (clamp != (k == 2)) fail_msg("kernel %d: exp's clamp at 89 %s", k, clamp ? "kept" : "left out");
    xir_program_free(p);
  }
  xir_compiler_destroy(cc);
}

static void test_uniform_row_values(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rmsnorm") != 0) return;
  xir_compiler_options o = {.pipeline = XIR__JIT_LIGHT_PIPELINE};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&o, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  /* C = 80: five chunks of W = 16, more than lower.c emits straight-line (XIR__UNROLL_CHUNKS);
   * C = 4W: four, emitted one after the other with no loop. The loops counted are those of one
   * root program at a time: row groups (C = 16 here, test_row_groups) replace the block and unit
   * loops with loops of their own */
  setenv("XIR_ROW_GROUP", "1", 1);
  char four[32];
  snprintf(four, sizeof four, "R=7,C=%u", 4 * W);
  const char *shapes[] = {"R=7,C=16", "R=7,C=80", four};
  int heads[3] = {0, 0, 0};
  for (int i = 0; i < 3; i++) {
    for (int k = 0; k < 2; k++) {
      const char *name = k ? "softmax_mask" : "rmsnorm";
      xir_program *p;
      xir_shape s;
      if (xir_kernel_load(name, &p, &d) || xir_shape_parse(p, shapes[i], &s, &d)) die(&d);
      uint8_t perm[1] = {0};
      for (uint32_t ell = W > 1 ? W / 2 : 1; ell <= 2 * W; ell *= 2) {
        xir_candidate c;
        if (xir_candidate_make(p, &s, W, 2 * W, ell, perm, &c, &d)) die(&d);
        const xir_kernel *kn;
        if (xir_compile(cc, p, &s, &c, &kn, &d)) die(&d);
        xir_kernel_info info;
        xir_kernel_get_info(kn, &info);
        const char *ir = info.ir_text;
        int uniform = W > 1 && ell >= W;
        if (!k) {
          assert_int_equal(strstr(ir, "fdiv float") != NULL, uniform);
          assert_int_equal(strstr(ir, "@llvm.sqrt.f32(") != NULL, uniform);
          if (ell == W) heads[i] = count_str(ir, "\nhead");
        } else if (uniform && strstr(ir, "range.ps")) {
          assert_null(strstr(ir, "@llvm.maximum"));
        }
      }
      xir_program_free(p);
      assert_true(sweep(cc, name, shapes[i], i) > 0);
    }
  }
  if (W > 1) assert_true(heads[0] < heads[1]); /* C = 16 ≤ ℓ = W: no chunk loops */
  if (W > 1) assert_int_equal(heads[2], heads[0]); /* four chunks: no chunk loops either */
  unsetenv("XIR_ROW_GROUP");
  xir_compiler_destroy(cc);
}

/* reduce.sum(mul(a, b)) accumulates with llvm.fma on a host with FMA (one rounding per element),
 * and a sum without a product does not. At ℓ = 1 each lane sums its row in order, so the result
 * is exactly the serial fmaf loop's. */
static void test_sum_of_products_fuses(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rmsnorm") != 0) return;
  static const char *kDot =
      "kernel dot[R, C](x: f32[R, C], y: f32[R, C], o: out f32[R], s: out f32[R])\n"
      "root r in R {\n  a = load x[r, :]\n  b = load y[r, :]\n"
      "  store o[r] = reduce.sum(mul(a, b), C)\n  store s[r] = reduce.sum(a, C)\n}\n";
  xir_program *p;
  xir_diag d;
  xir_shape s;
  if (xir_program_parse(kDot, strlen(kDot), "dot.xir", &p, &d) || xir_shape_parse(p, "R=37,C=203", &s, &d)) die(&d);
  xir_compiler_options o = {.pipeline = XIR__JIT_LIGHT_PIPELINE};
  xir_compiler *cc;
  if (xir_compiler_create(&o, &cc, &d)) die(&d);
  int fma = strstr(xir_compiler_features(cc), "+fma") != NULL;
  uint32_t W = xir_compiler_width(cc);
  enum { R = 37, C = 203 };
  float *x = malloc(sizeof(float) * R * C), *y = malloc(sizeof(float) * R * C);
  float out[R], sum[R];
  for (int i = 0; i < R * C; i++) {
    x[i] = (float)((i * 7919 % 1000) - 500) / 137.0f;
    y[i] = (float)((i * 104729 % 997) - 498) / 311.0f;
  }
  uint8_t perm[1] = {0};
  for (uint32_t ell = 1; ell <= 4 * W; ell *= 2) {
    xir_candidate c;
    if (xir_candidate_make(p, &s, W, ell > W ? ell : W, ell, perm, &c, &d)) die(&d);
    const xir_kernel *k;
    if (xir_compile(cc, p, &s, &c, &k, &d)) die(&d);
    xir_kernel_info info;
    xir_kernel_get_info(k, &info);
    int calls = 0;
    for (const char *q = info.ir_text; (q = strstr(q, "call <")) != NULL; q++)
      if (strstr(q, "@llvm.fma.") && strstr(q, "@llvm.fma.") < strchr(q, '\n')) calls++;
    if ((calls > 0) != fma) fail_msg("dot l=%u: %d fma calls, host fma %d", ell, calls, fma);
    xir_arg args[4] = {{.in = x}, {.in = y}, {.out = out}, {.out = sum}};
    uint64_t slots[XIR_MAX_ARG_SLOTS];
    if (xir_kernel_pack_args(k, args, slots, &d)) die(&d);
    assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
    for (int r = 0; r < R; r++) {
      double want = 0, wsum = 0;
      for (int j = 0; j < C; j++) {
        want += (double)x[r * C + j] * y[r * C + j];
        wsum += x[r * C + j];
      }
      if (fabs(out[r] - want) > 1e-4 * (1 + fabs(want)) || fabs(sum[r] - wsum) > 1e-4 * (1 + fabs(wsum)))
        fail_msg("dot l=%u row %d: %g / %g, expected %g / %g", ell, r, out[r], sum[r], want, wsum);
      if (ell == 1 && fma) {
        float acc = 0;
        for (int j = 0; j < C; j++) acc = fmaf(x[r * C + j], y[r * C + j], acc);
        if (out[r] != acc) fail_msg("dot l=1 row %d: %a, the serial fmaf loop gives %a", r, out[r], acc);
      }
    }
  }
  free(x);
  free(y);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* Loop blocks ("body", as loop_begin names them) in a kernel's IR. */
/* 1 < ℓ < W with rows of C = ℓ (lower.c access_offset): the packet's W/ℓ rows are one vector
 * load and one vector store; a weight w[c] and rope_cache's position pos[r] are one masked
 * (window) load and a shuffle; rows of C < ℓ store through a shuffle and one masked store, and
 * two rows of C > ℓ through two windows a chunk; the per-row square root and division run on
 * W/ℓ lanes. Before, every one of them gathered or
 * scattered (rmsnorm 16384x8 at ℓ = 8: 41 µs; rope_cache 65536x2: 62). Every candidate of these
 * shapes is checked against the oracle by test_every_candidate_matches_oracle; strided views
 * (the masked path) by test_dims. */
static void test_small_rows_pack_contiguously(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rmsnorm") != 0) return;
  xir_compiler_options o = {.pipeline = XIR__JIT_LIGHT_PIPELINE};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&o, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  if (W != 16) {
    xir_compiler_destroy(cc);
    return;
  }
  static const struct {
    const char *kernel, *spec;
    uint32_t ell;
    const char *want[4];
  } cases[] = {
      /* x and y one vector each; w[c] a window; rsqrt on <2 x float> */
      {"rmsnorm", "R=37,C=8", 8, {"load <16 x float>", "store <16 x float>", "@llvm.masked.load.v16f32", "<2 x float>"}},
      /* rows of 6 at ℓ = 8: loads and the store through windows */
      {"rmsnorm", "R=37,C=6", 8, {"@llvm.masked.store.v16f32", "@llvm.masked.load.v16f32", NULL, NULL}},
      /* two rows of 24 at ℓ = 8: each chunk two windows, loads (lanes 8.. take window 1's
       * elements, 16.. of the two-source shuffle) and stores; the row's chain on 2 lanes from
       * the rsqrt on (narrow_chain: ms·(1/C) + eps is one fma before it), not broadcast to 16
       * and narrowed again around each op */
      {"rmsnorm", "R=37,C=24", 8, {"@llvm.masked.store.v16f32", "i32 7, i32 16, i32 17, i32 18", "@llvm.sqrt.v2f32", "fdiv <2 x float>"}},
      /* pos[r] a window of 8 positions; x and y one vector */
      {"rope_cache", "R=37,C=2,HD=2,P=5,H2=1", 2, {"@llvm.masked.load.v16i64", "store <16 x float>", NULL, NULL}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    xir_program *p;
    xir_shape s;
    if (xir_kernel_load(cases[i].kernel, &p, &d) || xir_shape_parse(p, cases[i].spec, &s, &d)) die(&d);
    uint8_t perm[1] = {0};
    xir_candidate c;
    if (xir_candidate_make(p, &s, W, 2 * W, cases[i].ell, perm, &c, &d)) die(&d);
    const xir_kernel *k;
    if (xir_compile(cc, p, &s, &c, &k, &d)) die(&d);
    xir_kernel_info info;
    xir_kernel_get_info(k, &info);
    for (int j = 0; j < 4; j++)
      if (cases[i].want[j] && !strstr(info.ir_text, cases[i].want[j]))
        fail_msg("%s %s l=%u: no '%s' in its IR", cases[i].kernel, cases[i].spec, cases[i].ell, cases[i].want[j]);
    xir_program_free(p);
    assert_true(sweep(cc, cases[i].kernel, cases[i].spec, i) > 0);
  }
  /* a bf16 weight, converted once a call into a buffer of f32: read by a window load too (it
   * was a gather of that buffer in every packet) */
  xir_program *p0, *p;
  xir_shape s;
  if (xir_kernel_load("rmsnorm", &p0, &d) || xir_program_retype(p0, "bf16", &p, &d) ||
      xir_shape_parse(p, "R=37,C=8", &s, &d))
    die(&d);
  uint8_t perm[1] = {0};
  xir_candidate c;
  if (xir_candidate_make(p, &s, W, 2 * W, 8, perm, &c, &d)) die(&d);
  const xir_kernel *k;
  if (xir_compile(cc, p, &s, &c, &k, &d)) die(&d);
  xir_kernel_info info;
  xir_kernel_get_info(k, &info);
  assert_null(strstr(info.ir_text, "@llvm.masked.gather.v16f32"));
  assert_true(check_program(cc, p, "R=37,C=8", 0, 1, xir__kernel_tolerance("rmsnorm")) > 0);
  xir_program_free(p);
  xir_program_free(p0);
  xir_compiler_destroy(cc);
}

static int body_blocks(const xir_kernel *k) {
  xir_kernel_info info;
  xir_kernel_get_info(k, &info);
  int n = 0;
  for (const char *q = info.ir_text; (q = strstr(q, "\nbody")) != NULL; q++) n++;
  return n;
}

/* Sibling reductions (docs/lowering.md): sum(d + 4), sum(d*d) and max(d) need nothing of each other
 * and share one loop; with a store between the first and the others (kSplit) they cannot. The
 * shared loop has fewer loop blocks, and y is bit-identical: each reduction keeps its order. At
 * ℓ ≥ W the two shared sums also fold together (red_fold_pair: one butterfly for both), the split
 * ones each alone, so the same bits say the pair fold adds what each butterfly adds. */
static void test_sibling_reductions_share_a_loop(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rmsnorm") != 0) return;
  static const char *kShared =
      "kernel sib[R, C](x: f32[R, C], y: out f32[R, C], z: out f32[R])\n"
      "root r in R {\n  v = load x[r, :]\n  m = reduce.sum(v) / f32(C)\n  d = v - m\n"
      "  s1 = reduce.sum(d + 4.0)\n  s2 = reduce.sum(d * d)\n  s3 = reduce.max(d)\n"
      "  store y[r, :] = d * d * s2 + s1 + s3\n  store z[r] = m\n}\n";
  static const char *kSplit =
      "kernel sib[R, C](x: f32[R, C], y: out f32[R, C], z: out f32[R])\n"
      "root r in R {\n  v = load x[r, :]\n  m = reduce.sum(v) / f32(C)\n  d = v - m\n"
      "  s1 = reduce.sum(d + 4.0)\n  store z[r] = m\n  s2 = reduce.sum(d * d)\n  s3 = reduce.max(d)\n"
      "  store y[r, :] = d * d * s2 + s1 + s3\n}\n";
  xir_program *p[2];
  xir_diag d;
  xir_shape s[2];
  if (xir_program_parse(kShared, strlen(kShared), "shared.xir", &p[0], &d) ||
      xir_program_parse(kSplit, strlen(kSplit), "split.xir", &p[1], &d) ||
      xir_shape_parse(p[0], "R=7,C=1203", &s[0], &d) || xir_shape_parse(p[1], "R=7,C=1203", &s[1], &d))
    die(&d);
  xir_compiler_options o = {.pipeline = XIR__JIT_LIGHT_PIPELINE};
  xir_compiler *cc;
  if (xir_compiler_create(&o, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  enum { R = 7, C = 1203 };
  float *x = malloc(sizeof(float) * R * C), *y[2] = {malloc(sizeof(float) * R * C), malloc(sizeof(float) * R * C)};
  float z[2][R];
  assert_non_null(x);
  assert_non_null(y[0]);
  assert_non_null(y[1]);
  for (int i = 0; i < R * C; i++) x[i] = (float)((i * 7919 % 1000) - 500) / 137.0f + 3.0f;
  uint8_t perm[1] = {0};
  for (uint32_t ell = 1; ell <= 4 * W; ell *= 2) {
    int blocks[2];
    for (int v = 0; v < 2; v++) {
      xir_candidate c;
      if (xir_candidate_make(p[v], &s[v], W, ell > W ? ell : W, ell, perm, &c, &d)) die(&d);
      const xir_kernel *k;
      if (xir_compile(cc, p[v], &s[v], &c, &k, &d)) die(&d);
      blocks[v] = body_blocks(k);
      xir_arg args[3] = {{.in = x}, {.out = y[v]}, {.out = z[v]}};
      uint64_t slots[XIR_MAX_ARG_SLOTS];
      if (xir_kernel_pack_args(k, args, slots, &d)) die(&d);
      assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
    }
    if (blocks[0] >= blocks[1]) fail_msg("l=%u: %d loop blocks shared, %d split", ell, blocks[0], blocks[1]);
    if (memcmp(y[0], y[1], sizeof(float) * R * C) != 0) fail_msg("l=%u: y differs, shared vs split", ell);
    for (int r = 0; r < R; r++) { /* and the shared one is right */
      double m = 0, s1 = 0, s2 = 0, s3 = -INFINITY;
      for (int j = 0; j < C; j++) m += x[r * C + j];
      m /= C;
      for (int j = 0; j < C; j++) {
        double e = x[r * C + j] - m;
        s1 += e + 4.0, s2 += e * e, s3 = e > s3 ? e : s3;
      }
      for (int j = 0; j < C; j++) {
        double e = x[r * C + j] - m, want = e * e * s2 + s1 + s3;
        if (fabs(y[0][r * C + j] - want) > 1e-3 * (1 + fabs(want)))
          fail_msg("l=%u y[%d][%d] = %g, expected %g", ell, r, j, y[0][r * C + j], want);
      }
    }
  }
  free(x);
  free(y[0]);
  free(y[1]);
  xir_compiler_destroy(cc);
  xir_program_free(p[0]);
  xir_program_free(p[1]);
}

/* A sum starts from −0, its identity (−0 + x is x for every x): LLVM folds the first add of an
 * accumulator into its operand, so a row that is one chunk (rmsnorm C = W at ℓ = W) squares
 * without an fma on a zero addend; and a row of −0 sums to −0 (IEEE), where a +0 start gave +0,
 * in every candidate, while −0 and +0 together sum to +0. */
/* Row groups (lower.c emit_unit_group, docs/lowering.md): at ℓ ≥ W and short rows, layernorm's
 * root programs are emitted four at a time, statement by statement; the group's sums fold
 * together (group_fold) and its rank-0 arithmetic runs once on four lanes (group_eval) — the IR
 * holds the group's one square root of four lanes (of eight at C = 24, W = 16) and the
 * one-at-a-time remainder's scalar one. Every root program
 * computes the same bits whether it ran in a group, alone in the remainder, in a call of any
 * block range (groups start at the call's first root program) or with groups turned off. */
static void run_blocks(const xir_kernel *k, xir_case *c, const uint64_t *cuts, int ncuts) {
  xir_diag d;
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  xir__case_reset_outputs(c);
  if (xir_kernel_pack_args(k, c->args, slots, &d)) die(&d);
  for (int i = 0; i + 1 < ncuts; i++) xir_kernel_entry(k)(slots, cuts[i], cuts[i + 1]);
  assert_true(xir__case_sentinels_ok(c));
}

static void test_row_groups(void **state) {
  (void)state;
  if (strcmp(g_kernel, "layernorm") != 0) return;
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load("layernorm", &p, &d)) die(&d);
  static const char *kShapes[] = {"R=37,C=40", "R=37,C=24"};
  for (int si = 0; si < 2; si++) {
    xir_shape s;
    if (xir_shape_parse(p, kShapes[si], &s, &d)) die(&d);
    xir_case c;
    if (xir__case_init(&c, p, &s, 7, &d) || xir__case_oracle(&c, &d)) die(&d);
    int out = -1;
    for (int q = 0; q < xir_program_num_params(p); q++)
      if (c.ref[q]) out = q;
    assert_true(out >= 0);
    size_t bytes = c.numel[out] * sizeof(float);
    float *want = malloc(bytes);
    assert_non_null(want);
    for (int w = 0; w < 2; w++) {
      if (!g_cc[w]) continue;
      uint32_t W = xir_compiler_width(g_cc[w]);
      if (W < 8) continue;
      uint8_t perm[1] = {0};
      xir_candidate cand;
      /* ℓ = 2W, one root program a block: 37 blocks; C = 40 is 3 (W = 16) or 5 (W = 8) packets,
       * groups of 4 (W = 16) or 8 (W = 8: up to 6 packets); C = 24 is 2 or 3, groups of 8 */
      if (xir_candidate_make(p, &s, W, 2 * W, 2 * W, perm, &cand, &d)) die(&d);
      const xir_kernel *k;
      if (xir_compile(g_cc[w], p, &s, &cand, &k, &d)) die(&d);
      xir_kernel_info info;
      xir_kernel_get_info(k, &info);
      unsigned G = si == 1 || W == 8 ? 8 : 4;
      char vsqrt[64];
      snprintf(vsqrt, sizeof vsqrt, "call <%u x float> @llvm.sqrt.v%uf32(", G, G);
      assert_int_equal(count_str(info.ir_text, "call float @llvm.sqrt.f32("), 1);
      assert_int_equal(count_str(info.ir_text, vsqrt), 1);
      uint64_t L = xir_kernel_blocks(k);
      assert_int_equal(L, 37);
      uint64_t whole[] = {0, L}, pieces[] = {0, 1, 3, 6, 11, 12, 19, 37};
      run_blocks(k, &c, whole, 2);
      xir_compare cmp = xir__case_compare(&c, out, xir__kernel_tolerance("layernorm"));
      assert_true(cmp.pass);
      memcpy(want, c.data[out], bytes);
      run_blocks(k, &c, pieces, (int)(sizeof pieces / sizeof pieces[0]));
      assert_memory_equal(c.data[out], want, bytes);
      /* the same candidate without groups (a compiler of its own: the first caches the kernel) */
      setenv("XIR_ROW_GROUP", "1", 1);
      xir_compiler_options o = {.force_width = W};
      xir_compiler *cc1;
      if (xir_compiler_create(&o, &cc1, &d)) die(&d);
      const xir_kernel *k1;
      if (xir_compile(cc1, p, &s, &cand, &k1, &d)) die(&d);
      unsetenv("XIR_ROW_GROUP");
      xir_kernel_get_info(k1, &info);
      assert_int_equal(count_str(info.ir_text, "call float @llvm.sqrt.f32("), 1);
      assert_int_equal(count_str(info.ir_text, vsqrt), 0);
      run_blocks(k1, &c, whole, 2);
      assert_memory_equal(c.data[out], want, bytes);
      xir_compiler_destroy(cc1);
    }
    free(want);
    xir__case_free(&c);
  }
  xir_program_free(p);
}

/* A sum's masked packet adds under its mask (lower.c reduce_body): rmsnorm's row of 24 at
 * ℓ = 2W = 32 is one chunk of a full packet and a half one; the half one's square adds into the
 * full one's accumulator, select(m, acc + x, acc), instead of being blended with −0 first
 * (the same bits: acc + −0 is acc) — no −0 vector is left in the optimized IR, where the blend
 * kept one. Every candidate's output is checked against the oracle by
 * test_every_candidate_matches_oracle. */
static void test_masked_packet_adds_under_mask(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rmsnorm") != 0) return;
  xir_compiler *cc;
  xir_program *p;
  const char *ir = light_ir_at("rmsnorm", "R=5,C=24", 2, 2, &cc, &p);
  if (xir_compiler_width(cc) == 16) {
    assert_int_equal(count_str(ir, "-0.000000e+00"), 0);
    assert_true(count_str(ir, "@llvm.masked.load.v16f32") >= 1);
  }
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* The number of vector fmas of ir whose first two operands are the same value (a square added
 * to something: fma(v, v, acc)). */
static int count_square_fma(const char *ir) {
  static const char pre[] = "call <16 x float> @llvm.fma.v16f32(<16 x float> ";
  int n = 0;
  for (const char *at = ir; (at = strstr(at, pre)) != NULL; at++) {
    const char *a = at + sizeof pre - 1;
    size_t la = strcspn(a, ",)");
    static const char mid[] = ", <16 x float> ";
    if (strncmp(a + la, mid, sizeof mid - 1)) continue;
    const char *b = a + la + sizeof mid - 1;
    n += strcspn(b, ",)") == la && !strncmp(a, b, la);
  }
  return n;
}

static void test_sum_starts_at_negative_zero(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rmsnorm") != 0) return;
  xir_compiler *cc;
  xir_program *p;
  const char *ir = light_ir("rmsnorm", "R=5,C=16", &cc, &p);
  if (xir_compiler_width(cc) == 16) /* the row's one square is a multiply, not fma(v, v, -0) */
    assert_int_equal(count_square_fma(ir), 0);
  xir_program_free(p);
  static const char *kSum =
      "kernel rowsum[R, C](x: f32[R, C], z: out f32[R])\n"
      "root r in R {\n  store z[r] = reduce.sum(load x[r, :])\n}\n";
  xir_diag d;
  xir_shape s;
  if (xir_program_parse(kSum, strlen(kSum), "rowsum.xir", &p, &d) ||
      xir_shape_parse(p, "R=3,C=37", &s, &d))
    die(&d);
  enum { R = 3, C = 37 };
  float x[R * C], z[R];
  for (int j = 0; j < C; j++) {
    x[j] = -0.0f;                        /* row 0: every element −0 */
    x[C + j] = j == 20 ? 0.0f : -0.0f;   /* row 1: one +0 */
    x[2 * C + j] = j == 5 ? 1.5f : -0.0f; /* row 2: one nonzero */
  }
  xir_candidate *cands;
  size_t nc;
  if (xir_candidates(p, &s, xir_compiler_width(cc), &cands, &nc, &d)) die(&d);
  for (size_t ci = 0; ci < nc; ci++) {
    const xir_kernel *k;
    if (xir_compile(cc, p, &s, &cands[ci], &k, &d)) die(&d);
    xir_arg args[2] = {{.in = x}, {.out = z}};
    uint64_t slots[XIR_MAX_ARG_SLOTS];
    if (xir_kernel_pack_args(k, args, slots, &d)) die(&d);
    assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
    char name[128];
    xir_candidate_name(p, &cands[ci], name, sizeof name);
    if (!(z[0] == 0.0f && signbit(z[0]))) fail_msg("%s: sum of -0 = %a, expected -0", name, z[0]);
    if (!(z[1] == 0.0f && !signbit(z[1]))) fail_msg("%s: sum of -0 and +0 = %a, expected +0", name, z[1]);
    if (z[2] != 1.5f) fail_msg("%s: sum = %a, expected 1.5", name, z[2]);
  }
  xir_free(cands);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* Compiles candidate cand of p at s with cc and runs all its blocks on the calling thread over
 * args (one per parameter, as xir_kernel_pack_args takes them). */
static void compile_and_run(xir_compiler *cc, const xir_program *p, const xir_shape *s,
                            const xir_candidate *cand, const xir_arg *args) {
  xir_diag d;
  const xir_kernel *k;
  if (xir_compile(cc, p, s, cand, &k, &d)) die(&d);
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  if (xir_kernel_pack_args(k, args, slots, &d)) die(&d);
  assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
}

/* add/sub of a product is one fused multiply-add on a host with FMA (the product unrounded):
 * every element of a·b + c, c − a·b, a·b − c and c + a·b is exactly fmaf's; without FMA, exactly
 * the twice-rounded expression's. Every candidate. */
static void test_add_of_product_fuses(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rmsnorm") != 0) return;
  static const char *kAxpy =
      "kernel axpy[R, C](a: f32[R, C], b: f32[R, C], c: f32[R, C], y0: out f32[R, C],\n"
      "    y1: out f32[R, C], y2: out f32[R, C], y3: out f32[R, C])\n"
      "root r in R, j in C {\n  x = load a[r, j]\n  u = load b[r, j]\n  z = load c[r, j]\n"
      "  store y0[r, j] = add(mul(x, u), z)\n  store y1[r, j] = sub(z, mul(x, u))\n"
      "  store y2[r, j] = sub(mul(x, u), z)\n  store y3[r, j] = add(z, mul(x, u))\n}\n";
  xir_program *p;
  xir_diag d;
  xir_shape s;
  if (xir_program_parse(kAxpy, strlen(kAxpy), "axpy.xir", &p, &d) ||
      xir_shape_parse(p, "R=7,C=45", &s, &d))
    die(&d);
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  int fma = strstr(xir_compiler_features(cc), "+fma") != NULL;
  enum { N = 7 * 45 };
  float in[3][N], out[4][N];
  for (int i = 0; i < N; i++) {
    in[0][i] = (float)((i * 7919 % 1000) - 500) / 137.0f;
    in[1][i] = (float)((i * 104729 % 997) - 498) / 311.0f;
    in[2][i] = (float)((i * 31 % 101) - 50) / 7.0f;
  }
  xir_candidate *cands;
  size_t nc;
  if (xir_candidates(p, &s, xir_compiler_width(cc), &cands, &nc, &d)) die(&d);
  for (size_t ci = 0; ci < nc; ci++) {
    xir_arg args[7] = {{.in = in[0]}, {.in = in[1]}, {.in = in[2]}, {.out = out[0]},
                       {.out = out[1]}, {.out = out[2]}, {.out = out[3]}};
    compile_and_run(cc, p, &s, &cands[ci], args);
    for (int i = 0; i < N; i++) {
      float a = in[0][i], b = in[1][i], c = in[2][i];
      volatile float ab = a * b; /* rounded */
      float want[4] = {fma ? fmaf(a, b, c) : ab + c, fma ? fmaf(-a, b, c) : c - ab,
                       fma ? fmaf(a, b, -c) : ab - c, fma ? fmaf(a, b, c) : c + ab};
      for (int o = 0; o < 4; o++)
        if (memcmp(&out[o][i], &want[o], 4)) {
          char name[128];
          xir_candidate_name(p, &cands[ci], name, sizeof name);
          fail_msg("axpy %s y%d[%d] = %a, expected %a (fma %d)", name, o, i, out[o][i], want[o], fma);
        }
    }
  }
  xir_free(cands);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* A product of per-unit values added to a tile (layernorm's x − sum·(1/C)) is not fused: the
 * product is computed once per unit either way, and the fused form only moves the tile's add to
 * the FMA ports (lower.c, eval_fused). Every element is x − round(m·t) — checked to differ from
 * fmaf(−m, t, x) somewhere in the data, so the test tells the two apart — on every candidate. */
static void test_uniform_product_not_fused(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rmsnorm") != 0) return;
  static const char *kText =
      "kernel k[R, C](a: f32[R, C], y: out f32[R, C], t: f32 = 0.3)\n"
      "root r in R {\n  v = load a[r, :]\n  m = load a[r, 0]\n  store y[r, :] = sub(v, mul(m, t))\n}\n";
  xir_program *p;
  xir_diag d;
  xir_shape s;
  if (xir_program_parse(kText, strlen(kText), "k.xir", &p, &d) || xir_shape_parse(p, "R=7,C=45", &s, &d))
    die(&d);
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  enum { N = 7 * 45 };
  float in[N], out[N];
  const float t = 0.3f;
  for (int i = 0; i < N; i++) in[i] = (float)((i * 7919 % 1000) - 500) / 137.0f;
  int differ = 0;
  for (int i = 0; i < N; i++) {
    volatile float mt = in[i / 45 * 45] * t;
    differ |= fmaf(-in[i / 45 * 45], t, in[i]) != in[i] - mt;
  }
  assert_true(differ);
  xir_candidate *cands;
  size_t nc;
  if (xir_candidates(p, &s, xir_compiler_width(cc), &cands, &nc, &d)) die(&d);
  for (size_t ci = 0; ci < nc; ci++) {
    xir_arg args[3] = {{.in = in}, {.out = out}, {.scalar = 0.3}};
    compile_and_run(cc, p, &s, &cands[ci], args);
    for (int i = 0; i < N; i++) {
      volatile float mt = in[i / 45 * 45] * t; /* rounded */
      float want = in[i] - mt;
      if (memcmp(&out[i], &want, 4)) {
        char name[128];
        xir_candidate_name(p, &cands[ci], name, sizeof name);
        fail_msg("%s y[%d] = %a, expected %a", name, i, out[i], want);
      }
    }
  }
  xir_free(cands);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* Compiles candidate cand of p at shape s with cc and runs all its blocks over case c (outputs
 * reset first; the sentinels must stay intact). */
static void run_candidate(xir_compiler *cc, const xir_program *p, const xir_shape *s,
                          const xir_candidate *cand, xir_case *c) {
  xir_diag d;
  const xir_kernel *k;
  if (xir_compile(cc, p, s, cand, &k, &d)) die(&d);
  xir__case_reset_outputs(c);
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  if (xir_kernel_pack_args(k, c->args, slots, &d)) die(&d);
  assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
  assert_true(xir__case_sentinels_ok(c));
}

/* rope_cache: native code clamps a position outside [0, P) into it (memory safety; the oracle
 * reports it as an error): every candidate computes exactly what the in-range clamped positions
 * give. */
static void test_rope_cache_clamps_positions(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rope_cache") != 0) return;
  const char *spec = "R=21,C=16,HD=8,P=6,H2=4";
  xir_program *p;
  xir_diag d;
  xir_shape shape;
  if (xir_kernel_load(g_kernel, &p, &d) || xir_shape_parse(p, spec, &shape, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &shape, 5, &d)) die(&d);
  int ps = xir_program_find_param(p, "pos"), y = xir_program_find_param(p, "y");
  const int64_t wild[] = {-1, 6, 1000, -1000000, INT64_MAX, INT64_MIN, 7};
  int64_t saved[21];
  memcpy(saved, c.idata[ps], sizeof saved);
  for (int r = 0; r < 7; r++) {
    c.idata[ps][3 * r] = wild[r];
    saved[3 * r] = wild[r] < 0 ? 0 : 5;
  }
  /* the oracle of the clamped positions */
  xir_case ok;
  if (xir__case_init(&ok, p, &shape, 5, &d)) die(&d);
  memcpy(ok.idata[ps], saved, sizeof saved);
  if (xir__case_oracle(&ok, &d)) die(&d);
  assert_int_equal(xir__case_oracle(&c, &d), XIR_ERR_RUNTIME); /* the oracle rejects them */
  xir_compiler *cc = g_cc[0] ? g_cc[0] : g_cc[1];
  xir_candidate *cands;
  size_t n;
  if (xir_candidates(p, &shape, xir_compiler_width(cc), &cands, &n, &d)) die(&d);
  for (size_t i = 0; i < n; i++) {
    run_candidate(cc, p, &shape, &cands[i], &c);
    for (size_t e = 0; e < c.numel[y]; e++)
      if (!(fabs(c.data[y][e] - ok.ref[y][e]) <= 1e-5 + 1e-4 * fabs(ok.ref[y][e])))
        fail_msg("candidate %zu: element %zu is %g, the clamped oracle %g", i, e,
                 (double)c.data[y][e], ok.ref[y][e]);
  }
  xir_free(cands);
  xir__case_free(&ok);
  xir__case_free(&c);
  xir_program_free(p);
}

/* rope_cache computes partner * (sign * sin) (sign * sin once a row): the same bits as the
 * textbook sign * partner * sin, for every candidate, since sign is ±1. */
static void test_rope_cache_sign_fold_same_bits(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rope_cache") != 0) return;
  static const char kTextbook[] =
      "kernel rope_cache[R, C, HD, P, H2](x: f32[R, C], pos: i64[R], cos: f32[P, H2],\n"
      "                                   sin: f32[P, H2], y: out f32[R, C])\n"
      "  require HD % 2 == 0\n  require H2 * 2 == HD\n  require C % HD == 0\n"
      "root r in R {\n  c = iota(C)\n  odd = c % 2\n  i = (c % HD) / 2\n  p = load pos[r]\n"
      "  partner = load x[r, c + 1 - 2 * odd]\n  sign = f32(2 * odd - 1)\n"
      "  store y[r, :] = load x[r, :] * load cos[p, i] + sign * partner * load sin[p, i]\n}\n";
  const char *spec = "R=7,C=300,HD=100,P=9,H2=50";
  xir_program *p, *q;
  xir_diag d;
  xir_shape sp, sq;
  if (xir_kernel_load(g_kernel, &p, &d) || xir_program_parse(kTextbook, strlen(kTextbook), "textbook", &q, &d) ||
      xir_shape_parse(p, spec, &sp, &d) || xir_shape_parse(q, spec, &sq, &d))
    die(&d);
  xir_case a, b;
  if (xir__case_init(&a, p, &sp, 11, &d) || xir__case_init(&b, q, &sq, 11, &d)) die(&d);
  int y = xir_program_find_param(p, "y");
  for (int w = 0; w < 2; w++) {
    xir_compiler *cc = g_cc[w];
    if (!cc) continue;
    xir_candidate *ca, *cb;
    size_t na, nb;
    if (xir_candidates(p, &sp, xir_compiler_width(cc), &ca, &na, &d) ||
        xir_candidates(q, &sq, xir_compiler_width(cc), &cb, &nb, &d))
      die(&d);
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) {
      char n1[96], n2[96];
      xir_candidate_name(p, &ca[i], n1, sizeof n1);
      xir_candidate_name(q, &cb[i], n2, sizeof n2);
      assert_string_equal(n1, n2);
      run_candidate(cc, p, &sp, &ca[i], &a);
      run_candidate(cc, q, &sq, &cb[i], &b);
      if (memcmp(a.data[y], b.data[y], a.numel[y] * sizeof(float)) != 0)
        fail_msg("W=%u candidate %s: the folded and the textbook form differ",
                 xir_compiler_width(cc), n1);
    }
    xir_free(ca);
    xir_free(cb);
  }
  xir__case_free(&a);
  xir__case_free(&b);
  xir_program_free(p);
  xir_program_free(q);
}

/* rope_cache where the chunk width divides the head (HD = 96 at W = 16, HD = 48 at W = 8; l = W
 * and 2W): every chunk starts at a residue whose cos/sin lanes are one window, so the load is a
 * masked window load and a shuffle with no run-time test and no gather path left in the IR
 * (every_chunk_good in lower.c; before it, a test on c mod HD per chunk chose between that load and
 * a gather, and the gather's index vectors were computed in every chunk: 8192x48 at l = 16 took
 * 70 us against 52 after). */
static void test_rope_cache_whole_head_chunks(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rope_cache") != 0) return;
  xir_compiler_options o = {.pipeline = XIR__JIT_LIGHT_PIPELINE};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&o, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  xir_program *p;
  xir_shape s;
  const char *spec = W == 16 ? "R=9,C=480,HD=96,P=11,H2=48" : "R=9,C=240,HD=48,P=11,H2=24";
  if (xir_kernel_load("rope_cache", &p, &d) || xir_shape_parse(p, spec, &s, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &s, 77, &d)) die(&d);
  for (uint32_t m = 1; m <= 2; m++) {
    uint8_t perm[1] = {0};
    xir_candidate cand;
    if (xir_candidate_make(p, &s, W, m * W, m * W, perm, &cand, &d)) die(&d);
    const xir_kernel *kn;
    if (xir_compile(cc, p, &s, &cand, &kn, &d)) die(&d);
    xir_kernel_info info;
    xir_kernel_get_info(kn, &info);
    int gathers = strstr(info.ir_text, "llvm.masked.gather") != NULL;
    if (gathers) fail_msg("l = %u: the cos/sin loads keep a gather", m * W);
    run_candidate(cc, p, &s, &cand, &c); /* outputs: test_every_candidate_matches_oracle */
  }
  xir__case_free(&c);
  xir_program_free(p);
  xir_compiler_destroy(cc);
}

/* Lines of ir that allocate a buffer named `name` ("\n  %<name>… = alloca"). */
static int named_allocas(const char *ir, const char *name) {
  char key[32];
  snprintf(key, sizeof key, "\n  %%%s", name);
  int n = 0;
  for (const char *q = ir; (q = strstr(q, key)) != NULL; q++) {
    const char *eol = strchr(q + 1, '\n');
    const char *a = strstr(q, " = alloca ");
    n += a && (!eol || a < eol);
  }
  return n;
}

/* rope_cache's cos and sin rows (cos[p, (c % HD) / 2]: each value spread over two lanes) are read
 * from period buffers filled once per row when the head repeats at least four times a row
 * (analysis.c xir__period_buffer): no window load and duplicating shuffle per packet (the sin
 * row's buffer holds sign · sin: its one use). At two heads a row, or at l = HD, none. Every
 * candidate of both shapes matches the oracle. */
static void test_rope_cache_period_buffers(void **state) {
  (void)state;
  if (strcmp(g_kernel, "rope_cache") != 0) return;
  xir_compiler_options o = {.pipeline = XIR__JIT_LIGHT_PIPELINE};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&o, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  static const char *const specs[2] = {"R=5,C=1024,HD=128,P=9,H2=64", "R=5,C=256,HD=128,P=9,H2=64"};
  for (int k = 0; k < 2; k++) {
    xir_program *p;
    xir_shape s;
    if (xir_kernel_load("rope_cache", &p, &d) || xir_shape_parse(p, specs[k], &s, &d)) die(&d);
    for (uint32_t m = 1; m <= 8; m *= 2) {
      uint8_t perm[1] = {0};
      xir_candidate cand;
      if (xir_candidate_make(p, &s, W, 8 * W, m * W, perm, &cand, &d)) die(&d);
      const xir_kernel *kn;
      if (xir_compile(cc, p, &s, &cand, &kn, &d)) die(&d);
      xir_kernel_info info;
      xir_kernel_get_info(kn, &info);
      /* none at l = HD (W = 16, l = 8W = 128): every chunk reads the same table row, which
       * stays in registers (chunk invariance) */
      int bufs = named_allocas(info.ir_text, "period"), want = k == 0 && (m * W) % 128 != 0 ? 2 : 0;
      if (bufs != want)
        fail_msg("%s l = %u: %d period buffers, expected %d", specs[k], m * W, bufs, want);
    }
    assert_true(sweep(cc, "rope_cache", specs[k], (size_t)k) > 0);
    xir_program_free(p);
  }
  xir_compiler_destroy(cc);
}

/* The lines of ir that allocate a materialized slot (lower.c mat_slot: "%mat…  = alloca"). */
static int mat_slots(const char *ir) { return named_allocas(ir, "mat"); }

/* A row value computed from two loads and read by two consumer loops (softmax_mask's z = x·scale
 * + mask, read by the max and by the sum of exp) is kept in a slot by the first loop, so that the
 * second reads one slot instead of both rows; and exp(z − m), first stored by the loop that reads
 * z last, is written over z's slot (lower.c cheap_mats): one slot. Where z is read again after
 * that loop (the store adds it), z and exp keep a slot each; a value of one load is not kept
 * (exp's slot alone); a causal two-load form, whose loops masked-work skipping bounds, keeps the
 * one shared slot. Every candidate of the four forms matches the oracle (ℓ = 1 keeps its slots
 * too, one vector per element). */
static void test_row_value_slot(void **state) {
  (void)state;
  if (strcmp(g_kernel, "softmax_mask") != 0) return;
  static const char *const kForms[4] = {
      "kernel zs[R, C](x: f32[R, C], b: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n  z = load x[r, :] * 0.5 + load b[r, :]\n  m = reduce.max(z)\n"
      "  e = exp(z - m)\n  s = reduce.sum(e)\n  store y[r, :] = e * (1.0 / s)\n}\n",
      "kernel zl[R, C](x: f32[R, C], b: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n  z = load x[r, :] * 0.5 + load b[r, :]\n  m = reduce.max(z)\n"
      "  e = exp(z - m)\n  s = reduce.sum(e)\n  store y[r, :] = e * (1.0 / s) + z\n}\n",
      "kernel z1[R, C](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n  z = load x[r, :] * 0.5\n  m = reduce.max(z)\n"
      "  e = exp(z - m)\n  s = reduce.sum(e)\n  store y[r, :] = e * (1.0 / s)\n}\n",
      /* causal, two loads: the loops' live ranges are bounded by the mask (masked-work
       * skipping), and z's slot must hold what the sum loop reads */
      "kernel zc[R, C](x: f32[R, C], b: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n  z = select(iota(C) > r, -inf, load x[r, :] * 0.5 + load b[r, :])\n"
      "  m = reduce.max(z)\n  e = exp(z - select(m == -inf, 0.0, m))\n  s = reduce.sum(e)\n"
      "  store y[r, :] = e * select(s == 0.0, 0.0, 1.0 / s)\n}\n"};
  static const int kSlots[4] = {1, 2, 1, 1};
  xir_compiler_options o = {.pipeline = XIR__JIT_LIGHT_PIPELINE};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&o, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  xir_tolerance tol = {1e-5, 1e-6};
  for (int f = 0; f < 4; f++) {
    xir_program *p;
    xir_shape s;
    if (xir_program_parse(kForms[f], strlen(kForms[f]), "slot.xir", &p, &d) ||
        xir_shape_parse(p, "R=9,C=200", &s, &d))
      die(&d);
    uint8_t perm[1] = {0};
    xir_candidate c;
    if (xir_candidate_make(p, &s, W, W, W, perm, &c, &d)) die(&d);
    const xir_kernel *kn;
    if (xir_compile(cc, p, &s, &c, &kn, &d)) die(&d);
    xir_kernel_info info;
    xir_kernel_get_info(kn, &info);
    if (mat_slots(info.ir_text) != kSlots[f])
      fail_msg("%s: %d slots, expected %d", xir_program_name(p), mat_slots(info.ir_text), kSlots[f]);
    for (int w = 0; w < 2; w++)
      if (g_cc[w]) {
        assert_true(check_program(g_cc[w], p, "R=9,C=200", 0, 1, tol) > 0);
        assert_true(check_program(g_cc[w], p, "R=70,C=50", 0, 1, tol) > 0); /* causal rows that
                                                                                 end and that don't */
      }
    xir_program_free(p);
  }
  xir_compiler_destroy(cc);
}

/* Compiling the same candidate twice returns the first kernel. */
static void test_compile_twice_reuses_result(void **state) {
  (void)state;
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load("rmsnorm", &p, &d)) die(&d);
  xir_shape s;
  if (xir_shape_parse(p, "R=5,C=9", &s, &d)) die(&d);
  xir_compiler *cc = g_cc[0] ? g_cc[0] : g_cc[1];
  xir_candidate c;
  uint8_t perm[1] = {0};
  if (xir_candidate_make(p, &s, xir_compiler_width(cc), xir_compiler_width(cc) * 2, 4, perm, &c, &d)) die(&d);
  const xir_kernel *a, *b;
  if (xir_compile(cc, p, &s, &c, &a, &d) || xir_compile(cc, p, &s, &c, &b, &d)) die(&d);
  assert_ptr_equal(a, b);
  xir_kernel_info ia;
  xir_kernel_get_info(b, &ia);
  assert_int_equal(ia.cached, 1);
  xir_program_free(p);
}

int main(int argc, char **argv) {
  g_kernel = argc > 1 ? argv[1] : "rmsnorm";
  xir_diag d;
  uint32_t widths[2] = {16, 8};
  for (int i = 0; i < 2; i++) {
    xir_compiler_options o = {.force_width = widths[i]};
    if (xir_compiler_create(&o, &g_cc[i], &d) != XIR_OK) {
      char b[1024];
      printf("# W=%u not runnable here: %s\n", widths[i], xir_diag_format(&d, b, sizeof b));
      g_cc[i] = NULL;
    }
  }
  if (!g_cc[0] && !g_cc[1]) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_candidate_matches_oracle),
      cmocka_unit_test(test_block_subrange_writes_exactly_its_part),
      cmocka_unit_test(test_compile_twice_reuses_result),
      cmocka_unit_test(test_narrow_widths),
      cmocka_unit_test(test_narrow_widths_on_256_preferring_cpu),
      cmocka_unit_test(test_narrow_masks_without_avx512),
      cmocka_unit_test(test_exp_scales_zero_in_tiny_lanes),
      cmocka_unit_test(test_shared_exp_is_computed_once),
      cmocka_unit_test(test_block_coords_once_per_block),
      cmocka_unit_test(test_whole_block_flat_address),
      cmocka_unit_test(test_whole_block_flat_three_axes),
      cmocka_unit_test(test_whole_block_path),
      cmocka_unit_test(test_rope_pow_uses_uniform_base),
      cmocka_unit_test(test_uniform_row_values), cmocka_unit_test(test_softmax_exp_nonpos),
      cmocka_unit_test(test_sum_of_products_fuses),
      cmocka_unit_test(test_sibling_reductions_share_a_loop),
      cmocka_unit_test(test_sum_starts_at_negative_zero), cmocka_unit_test(test_row_groups),
      cmocka_unit_test(test_masked_packet_adds_under_mask),
      cmocka_unit_test(test_small_rows_pack_contiguously),
      cmocka_unit_test(test_add_of_product_fuses),
      cmocka_unit_test(test_uniform_product_not_fused),
      cmocka_unit_test(test_rope_cache_clamps_positions),
      cmocka_unit_test(test_rope_cache_sign_fold_same_bits),
      cmocka_unit_test(test_rope_cache_whole_head_chunks),
      cmocka_unit_test(test_row_value_slot),
      cmocka_unit_test(test_rope_cache_period_buffers),
  };
  int rc = cmocka_run_group_tests_name(g_kernel, tests, NULL, NULL);
  xir_compiler_destroy(g_cc[0]);
  xir_compiler_destroy(g_cc[1]);
  return rc;
}

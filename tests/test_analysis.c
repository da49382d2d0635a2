/* test_analysis.c — the program analyses that the lowering and the execution work share
 * (src/ir/analysis.c), and what each one changes: root-invariant tiles computed once per call,
 * periods along the inner axis, contiguous packets across row boundaries — in the IR and in the
 * cost model's counts. Correctness of the code itself is test_native's (every candidate against
 * the fp64 oracle). */
#include <math.h>
#include <stdlib.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ir/program.h"
#include "xir_compile.h"
#include "xir_plan.h"

static void die(const xir_diag *d) { fail_msg("%s", d->msg); }

static xir_program *load(const char *k, const char *spec, xir_shape *s) {
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load(k, &p, &d) || xir_shape_parse(p, spec, s, &d)) die(&d);
  return p;
}

/* The inner-axis facts the period-buffer rules read: periods, stretches and hoisted tiles. */
static void inner_facts(const xir_program *p, const xir_shape *s, int X, int64_t *per, int64_t *str,
                        uint8_t *hoist) {
  xir__inner_period(p, s, X, per);
  xir__inner_stretch(p, s, X, str);
  xir__hoisted_tiles(p, s, hoist);
}

static int node_named(const xir_program *p, const char *name) {
  for (int i = 0; i < p->nnodes; i++)
    if (p->nodes[i].name && !strcmp(p->nodes[i].name, name)) return i;
  fail_msg("no node '%s'", name);
  return -1;
}

/* The bf16 weight loads hoisted per call (xir__hoisted_tiles), in program order, while their f32
 * copies total at most XIR_HOIST_HALF_BYTES: layernorm at C = 2048 both w and b, at C = 4096 only
 * w (b would make 32 KiB), at C = 8192 neither; rmsnorm's w up to C = 4096. */
static void test_half_weight_hoist_budget(void **state) {
  (void)state;
  static const struct {
    const char *k, *spec;
    int hoisted_w, hoisted_b;
  } cases[] = {{"layernorm", "R=4,C=1024", 1, 1}, {"layernorm", "R=4,C=2048", 1, 0},
               {"layernorm", "R=4,C=4096", 0, 0}, {"rmsnorm", "R=4,C=2048", 1, -1},
               {"rmsnorm", "R=4,C=4096", 0, -1}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    xir_shape s;
    xir_program *f = load(cases[c].k, cases[c].spec, &s), *p;
    xir_diag d;
    if (xir_program_retype(f, "bf16", &p, &d)) die(&d);
    uint8_t *hoist = calloc((size_t)p->nnodes + 1, 1);
    assert_non_null(hoist);
    xir__hoisted_tiles(p, &s, hoist);
    int w = -1, b = -1;
    for (int i = p->body_begin; i < p->nnodes; i++) {
      const xir_node *n = &p->nodes[i];
      if (n->op != XIR_OP_LOAD) continue;
      if (!strcmp(p->params[n->ref].name, "w")) w = hoist[i];
      if (!strcmp(p->params[n->ref].name, "b")) b = hoist[i];
      if (!strcmp(p->params[n->ref].name, "x")) assert_false(hoist[i]);
    }
    if (w != cases[c].hoisted_w || b != cases[c].hoisted_b)
      fail_msg("%s %s: w hoisted %d, b hoisted %d", cases[c].k, cases[c].spec, w, b);
    free(hoist);
    xir_program_free(p);
    xir_program_free(f);
  }
}

/* RoPE: the frequencies depend on the column only (hoisted), with period HD; the angle depends
 * on the row (not hoisted); the loaded x varies with every element (period 0). */
static void test_rope_frequencies_are_hoisted_and_periodic(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rope", "R=5,C=96,HD=32", &s);
  uint8_t inv[512], hoist[512];
  int64_t per[512];
  assert_true(p->nnodes < 512);
  xir__root_invariant(p, inv);
  xir__hoisted_tiles(p, &s, hoist);
  int C = -1;
  for (int i = 0; i < p->ndims; i++)
    if (!strcmp(p->dims[i], "C")) C = i;
  xir__inner_period(p, &s, C, per);
  int freq = node_named(p, "freq"), angle = node_named(p, "angle"), partner = node_named(p, "partner");
  assert_true(inv[freq] && hoist[freq]);
  assert_false(inv[angle] || hoist[angle]);
  assert_int_equal(per[freq], 32);
  assert_int_equal(per[angle], 32);
  assert_int_equal(per[partner], 0);
  int hoisted = 0;
  for (int i = 0; i < p->nnodes; i++) hoisted += hoist[i];
  assert_int_equal(hoisted, 1);
  xir_program_free(p);
}

/* A period larger than the extent is no period; `c % 7` of a polynomial in iota has period 7,
 * while `(c / 2) % 7` is not a polynomial and gets none. */
static void test_period_rules(void **state) {
  (void)state;
  const char *text =
      "kernel k[R, C](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n"
      "  c = iota(C)\n"
      "  a = f32((3 * c + r) % 7)\n"
      "  b = f32((c / 2) % 7)\n"
      "  e = f32(c % 64)\n"
      "  store y[r, :] = a + b + e + load x[r, :]\n"
      "}\n";
  xir_program *p;
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "k.xir", &p, &d)) die(&d);
  xir_shape s;
  if (xir_shape_parse(p, "R=3,C=40", &s, &d)) die(&d);
  int64_t per[256];
  xir__inner_period(p, &s, 1, per);
  assert_int_equal(per[node_named(p, "a")], 7);
  assert_int_equal(per[node_named(p, "b")], 0);
  assert_int_equal(per[node_named(p, "e")], 0); /* 64 > C = 40 */
  uint8_t inv[256];
  xir__root_invariant(p, inv);
  assert_false(inv[node_named(p, "a")]); /* uses r */
  assert_true(inv[node_named(p, "b")]);
  xir_program_free(p);
}

static double arith_per_packet(const xir_program *p, const xir_shape *s, uint32_t B, uint32_t l) {
  uint8_t perm[XIR_MAX_ROOT] = {0, 1, 2, 3};
  xir_candidate c;
  xir_execution_work w;
  xir_diag d;
  if (xir_candidate_make(p, s, 16, B, l, perm, &c, &d) ||
      xir_execution_work_make(p, s, &c, UINT32_MAX, 1, &w, &d))
    die(&d);
  return w.arith_per_packet;
}

/* With ℓ a multiple of the period, sin/cos of the angle are charged once per unit: the cost per
 * packet of ℓ = HD is well below that of ℓ = 16, and the hoisted pow is not charged per element. */
static void test_chunk_invariant_work_is_charged_once(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rope", "R=129,C=768,HD=64", &s);
  double a16 = arith_per_packet(p, &s, 16, 16), a64 = arith_per_packet(p, &s, 64, 64);
  assert_true(a64 < 0.5 * a16);
  xir_program_free(p);
  /* a period dividing W (HD = 2): chunk-invariant at ℓ = 16 already */
  p = load("rope", "R=17,C=64,HD=2", &s);
  assert_true(arith_per_packet(p, &s, 16, 16) < 0.5 * a16);
  xir_program_free(p);
}

/* A local window pattern is charged by the fraction of chunks whose residue is good: at HD = 96
 * the table reads of ℓ = 32 never cross a head (3 chunks a head), those of ℓ = 64 do in one
 * chunk start residue of three (64 mod 96), which gather; and the lowering's test agrees. */
static void test_local_pattern_fraction(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rope_cache", "R=5,C=960,HD=96,P=16,H2=48", &s);
  int cos_id = -1;
  for (int i = 0; i < p->nnodes; i++)
    if (p->nodes[i].op == XIR_OP_LOAD && p->params[p->nodes[i].ref].name[0] == 'c') cos_id = i;
  assert_true(cos_id >= 0);
  xir__lpat pt;
  uint8_t good[XIR_LPAT_MAXP], reach[XIR_LPAT_MAXP];
  assert_true(xir__window_access_local(p, &s, 1, 32, 16, cos_id, &pt));
  assert_true(xir__window_local_residues(&pt, 32, 16, good, reach) == 1.0);
  assert_true(xir__window_access_local(p, &s, 1, 64, 16, cos_id, &pt));
  double f = xir__window_local_residues(&pt, 64, 16, good, reach);
  assert_true(fabs(f - 2.0 / 3.0) < 1e-12);
  assert_true(reach[0] && reach[64] && reach[32] && !good[64] && good[0] && good[32]);
  /* ℓ = 64 reads the table rows from a period buffer instead (xir__period_buffer: a local
   * pattern with a bad residue); so does ℓ = 32, whose window loads are right, because the head
   * repeats ten times a row (a stretched load, N ≥ 4M) — at two heads a row (C = 192) ℓ = 32
   * keeps its window loads */
  int64_t per[64] = {0}, str[64] = {0};
  uint8_t hoist[64] = {0};
  assert_true(p->nnodes <= 64);
  inner_facts(p, &s, 1, per, str, hoist);
  xir__pbuf pb;
  assert_true(xir__period_buffer(p, &s, 1, 32, 16, 1, 0, hoist, per, str, cos_id, &pb));
  assert_true(xir__period_buffer(p, &s, 1, 64, 16, 1, 0, hoist, per, str, cos_id, &pb));
  xir_program_free(p);
  p = load("rope_cache", "R=5,C=192,HD=96,P=16,H2=48", &s);
  inner_facts(p, &s, 1, per, str, hoist);
  assert_false(xir__period_buffer(p, &s, 1, 32, 16, 1, 0, hoist, per, str, cos_id, &pb));
  xir_program_free(p);
}

/* swiglu on rows of 1538 (not a multiple of 16): perm r.c addresses a[r, c] at the flattened
 * root index, so its loads are contiguous (no gather in the full-packet path nor in the last,
 * partial packet, and the work counts 4 bytes a lane); perm c.r is a gather. */
static void test_contiguous_packets_across_rows(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("swiglu", "R=5,C=1538", &s);
  xir_diag d;
  xir_candidate rc, cr;
  uint8_t prc[2] = {0, 1}, pcr[2] = {1, 0};
  if (xir_candidate_make(p, &s, 16, 64, 1, prc, &rc, &d) ||
      xir_candidate_make(p, &s, 16, 64, 1, pcr, &cr, &d))
    die(&d);
  xir_execution_work w1, w2;
  if (xir_execution_work_make(p, &s, &rc, 0, 1, &w1, &d) ||
      xir_execution_work_make(p, &s, &cr, 0, 1, &w2, &d))
    die(&d);
  assert_true(w1.memory_per_packet == 3 * 4 * 16);
  assert_true(w2.memory_per_packet > w1.memory_per_packet);
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  if (xir_compiler_width(cc) == 16) {
    const xir_kernel *k;
    if (xir_compile(cc, p, &s, &rc, &k, &d)) die(&d);
    xir_kernel_info info;
    xir_kernel_get_info(k, &info);
    /* the full path loads vectors; the ragged last packet (5·1538 = 16·480 + 10) on contiguous
     * buffers is a masked vector load at p0 + lane (the lin tail), on strided views it gathers */
    const char *full = strstr(info.ir_text, "load <16 x float>");
    assert_non_null(full);
    assert_non_null(strstr(info.ir_text, "lintail"));
    assert_non_null(strstr(info.ir_text, "@llvm.masked.load.v16f32"));
    assert_non_null(strstr(info.ir_text, "@llvm.masked.store.v16f32"));
  }
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* Rows shorter than W: at ℓ = C = 8 the packet's two rows of x and y are one vector each (the
 * work counts 4 bytes a lane for each, w is shared and near); at ℓ = 4 (two chunks a row, four
 * rows a packet) each chunk is two windows, 4 bytes an element too; at ℓ = 2 (four chunks) the work
 * counts them as gathers (work.c: two windows only up to three chunks a row). rope_cache's
 * position pos[r] at ℓ = C = 2 is a window (8 bytes a lane, not a gather's 16). The lowering:
 * test_native's test_small_rows_pack_contiguously. */
static void test_short_rows_work(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=37,C=8", &s);
  xir_diag d;
  uint8_t perm[1] = {0};
  xir_candidate c8, c4, c2;
  if (xir_candidate_make(p, &s, 16, 32, 8, perm, &c8, &d) || xir_candidate_make(p, &s, 16, 32, 4, perm, &c4, &d) ||
      xir_candidate_make(p, &s, 16, 32, 2, perm, &c2, &d))
    die(&d);
  xir_execution_work w8, w4, w2;
  if (xir_execution_work_make(p, &s, &c8, 0, 1, &w8, &d) || xir_execution_work_make(p, &s, &c4, 0, 1, &w4, &d) ||
      xir_execution_work_make(p, &s, &c2, 0, 1, &w2, &d))
    die(&d);
  assert_true(w8.memory_per_packet == 2 * 4 * 16);
  assert_true(w4.memory_per_packet == 2 * 2 * 4 * 16); /* two chunks a packet */
  assert_true(w2.memory_per_packet > 2 * w8.memory_per_packet);
  xir_program_free(p);
  p = load("rope_cache", "R=37,C=2,HD=2,P=5,H2=1", &s);
  if (xir_candidate_make(p, &s, 16, 32, 2, perm, &c2, &d)) die(&d);
  if (xir_execution_work_make(p, &s, &c2, 0, 1, &w2, &d)) die(&d);
  /* x, y contiguous (64 + 64), the partner a window (64: the same elements as x, which the
   * model counts again), pos a window (128), the two tables gathered (2·16·16) */
  assert_true(w2.memory_per_packet == 64 + 64 + 64 + 128 + 2 * 16 * 16);
  xir_program_free(p);
}

/* The pair swap of RoPE and rope_cache's table reads are window loads + shuffles when ℓ is a
 * multiple of their period (the cost model counts them as contiguous); with ℓ = 16 and HD = 64
 * the table read is not (period 64 > ℓ). */
static void test_window_accesses(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rope_cache", "R=5,C=256,HD=64,P=16,H2=32", &s);
  int partner = node_named(p, "partner"), C = 1;
  int tables = 0, windows64 = 0, windows16 = 0;
  for (int i = 0; i < p->nnodes; i++)
    if (p->nodes[i].op == XIR_OP_LOAD && (p->params[p->nodes[i].ref].name[0] == 'c' ||
                                           p->params[p->nodes[i].ref].name[0] == 's')) {
      tables++;
      windows64 += xir__window_access(p, &s, C, 64, 16, i, NULL);
      windows16 += xir__window_access(p, &s, C, 16, 16, i, NULL);
    }
  assert_int_equal(tables, 2);
  assert_int_equal(windows64, 2);
  assert_int_equal(windows16, 0);
  assert_true(xir__window_access(p, &s, C, 16, 16, partner, NULL));
  assert_false(xir__window_access(p, &s, C, 8, 16, partner, NULL)); /* l < W: no chunks of W lanes */
  xir__lpat pt;
  assert_true(xir__access_pattern(p, &s, C, partner, &pt));
  assert_int_equal(pt.P, 2);
  assert_int_equal(pt.A, 1);
  assert_int_equal(pt.tab[0], 0); /* c + 1 - 2·(c % 2): the constant 1 is the uniform part */
  assert_int_equal(pt.tab[1], -2);
  xir_program_free(p);
}

/* A window load whose offsets the run time finds clamped (x[r, c + 2 - 2·(c % 2)] runs past the
 * row's end in the last chunk) takes the gather: the output matches a hand-written reference
 * with clamped indices, and the IR has both paths. */
static void test_window_load_falls_back_when_clamped(void **state) {
  (void)state;
  const char *text =
      "kernel k[R, C](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n"
      "  c = iota(C)\n"
      "  store y[r, :] = load x[r, c + 2 - 2 * (c % 2)]\n"
      "}\n";
  xir_program *p;
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "k.xir", &p, &d)) die(&d);
  xir_shape s;
  if (xir_shape_parse(p, "R=3,C=128", &s, &d)) die(&d);
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  if (W == 16) {
    uint8_t perm[1] = {0};
    xir_candidate c;
    if (xir_candidate_make(p, &s, W, 64, 64, perm, &c, &d)) die(&d);
    const xir_kernel *k;
    if (xir_compile(cc, p, &s, &c, &k, &d)) die(&d);
    xir_kernel_info info;
    xir_kernel_get_info(k, &info);
    assert_non_null(strstr(info.ir_text, "perm.fast"));
    assert_non_null(strstr(info.ir_text, "masked.gather"));
    float x[3 * 128], y[3 * 128];
    for (int i = 0; i < 3 * 128; i++) x[i] = (float)(i + 1);
    xir_arg args[2] = {{.in = x}, {.out = y}};
    uint64_t slots[XIR_MAX_ARG_SLOTS];
    if (xir_kernel_pack_args(k, args, slots, &d)) die(&d);
    xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k));
    for (int r = 0; r < 3; r++)
      for (int e = 0; e < 128; e++) {
        int src = e + 2 - 2 * (e % 2);
        if (src > 127) src = 127;
        assert_true(y[r * 128 + e] == x[r * 128 + src]);
      }
  }
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* Compiles every candidate the bridge enumerates for p at s and runs it over all its blocks on
 * args (nargs of them); check(ci, ud) then inspects candidate ci's outputs. */
static void run_every_candidate(const xir_program *p, const xir_shape *s, const xir_arg *args,
                                int nargs, void (*check)(size_t ci, void *ud), void *ud) {
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  xir_candidate *cands;
  size_t n;
  if (xir_candidates(p, s, xir_compiler_width(cc), &cands, &n, &d)) die(&d);
  xir_arg a[8];
  assert_true(nargs <= 8);
  for (size_t ci = 0; ci < n; ci++) {
    const xir_kernel *k;
    if (xir_compile(cc, p, s, &cands[ci], &k, &d)) die(&d);
    memcpy(a, args, sizeof(xir_arg) * (size_t)nargs);
    uint64_t slots[XIR_MAX_ARG_SLOTS];
    if (xir_kernel_pack_args(k, a, slots, &d)) die(&d);
    assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
    check(ci, ud);
  }
  xir_free(cands);
  xir_compiler_destroy(cc);
}

static int col_mod100(int c) { return c % 100; }
static int col_mod96(int c) { return c % 96; }
static int col_two_windows(int c) { return c % 40 / 2 + 10 * (c % 40 / 20); }
static double want_x_plus_exp(int r, int c, float x) {
  return x + exp((double)(0.1f * (float)(r + 1)) * ((c % 24) / 4));
}
static double want_x_cos_plus_sin(int r, int c, float x) {
  float a = 0.37f * (float)(r + 1) * (float)((c % 24) / 4);
  return (double)x * cos((double)a) + sin((double)a);
}

/* y = x · t[r, col(c)] exactly, for an R×C x and y and an R×T t. */
typedef struct xt_check {
  const float *x, *t, *y;
  int R, C, T;
  int (*col)(int c);
} xt_check;
static void check_xt(size_t ci, void *ud) {
  const xt_check *k = ud;
  for (int r = 0; r < k->R; r++)
    for (int c = 0; c < k->C; c++)
      if (k->y[r * k->C + c] != k->x[r * k->C + c] * k->t[r * k->T + k->col(c)])
        fail_msg("candidate %zu, r %d c %d: got %g", ci, r, c, (double)k->y[r * k->C + c]);
}

/* Every candidate gives candidate 0's bits, within atol + rtol·|want| of want(r, c, x) in
 * double, for an R×C x and y (y0: candidate 0's output). */
typedef struct same_bits_check {
  const float *x;
  float *y, *y0;
  int R, C;
  double (*want)(int r, int c, float x);
  double rtol, atol;
} same_bits_check;
static void check_same_bits(size_t ci, void *ud) {
  same_bits_check *k = ud;
  size_t N = (size_t)k->R * (size_t)k->C;
  if (ci == 0) memcpy(k->y0, k->y, N * sizeof(float));
  for (int r = 0; r < k->R; r++)
    for (int c = 0; c < k->C; c++) {
      int i = r * k->C + c;
      double want = k->want(r, c, k->x[i]);
      if (memcmp(&k->y[i], &k->y0[i], sizeof(float)) ||
          fabs(k->y[i] - want) > k->atol + k->rtol * fabs(want))
        fail_msg("candidate %zu, r %d c %d: got %.9g, candidate 0 %.9g, want %.9g", ci, r, c,
                 (double)k->y[i], (double)k->y0[i], want);
    }
}

/* Compiles the row candidate perm = (0), ℓ = B = ell at W = 16 (when the host has it) and checks
 * its IR: each of has[] appears, lacks (if any) does not. */
static void check_ir16(const xir_program *p, const xir_shape *s, uint32_t ell, const char *const *has,
                       int nhas, const char *lacks) {
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  if (xir_compiler_width(cc) == 16) {
    uint8_t perm[1] = {0};
    xir_candidate c;
    const xir_kernel *k;
    if (xir_candidate_make(p, s, 16, ell, ell, perm, &c, &d) || xir_compile(cc, p, s, &c, &k, &d))
      die(&d);
    xir_kernel_info info;
    xir_kernel_get_info(k, &info);
    for (int i = 0; i < nhas; i++) assert_non_null(strstr(info.ir_text, has[i]));
    if (lacks) assert_null(strstr(info.ir_text, lacks));
  }
  xir_compiler_destroy(cc);
}

/* With HD = 100 no power-of-two ℓ is a multiple of the table column's period ((c % HD) / 2):
 * xir__window_access refuses it, xir__window_access_local gives the pattern of a chunk that does
 * not cross a head, and the ℓ = 16 code has the window path (checked at run time), the chunks
 * that cross a head as two window loads (perm.split, below), and the gather; its output equals
 * the oracle's (test_native runs every candidate of HD = 100, and of HD = 22). */
static void test_window_load_local_pattern(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rope_cache", "R=3,C=1000,HD=100,P=8,H2=50", &s);
  int C = 1, local = 0, periodic = 0;
  for (int i = 0; i < p->nnodes; i++)
    if (p->nodes[i].op == XIR_OP_LOAD && (p->params[p->nodes[i].ref].name[0] == 'c' ||
                                           p->params[p->nodes[i].ref].name[0] == 's')) {
      xir__lpat pt;
      periodic += xir__window_access(p, &s, C, 16, 16, i, NULL);
      if (xir__window_access_local(p, &s, C, 16, 16, i, &pt)) {
        local++;
        int64_t pi[16], lo;
        assert_true(xir__lane_window(&pt, 16, 0, pi, &lo));
        for (int l = 0; l < 16; l++) assert_int_equal(pi[l], l / 2); /* each column twice */
      }
    }
  assert_int_equal(periodic, 0);
  assert_int_equal(local, 2);
  xir_program_free(p);
  /* rope_cache reads those rows from a period buffer (test_period_buffers). A table read at
   * c % 100 on rows of 150 (at most 32 packets: xir__chunk_unroll) runs every chunk
   * straight-line at a constant residue: no run-time window test, no split, no gather (before
   * 2026-12-06 its chunk loop had all three). Every candidate's output is exact, also on rows
   * of 960 at c % 96 (a chunk loop, no chunk crossing a period). */
  const char *text = "kernel k[R, C, T](x: f32[R, C], t: f32[R, T], y: out f32[R, C])\n"
                     "root r in R {\n"
                     "  c = iota(C)\n"
                     "  store y[r, :] = load x[r, :] * load t[r, c % T]\n"
                     "}\n";
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "k.xir", &p, &d)) die(&d);
  if (xir_shape_parse(p, "R=3,C=960,T=96", &s, &d)) die(&d);
  {
    static float x[3 * 960], t[3 * 96], y[3 * 960];
    for (int i = 0; i < 3 * 960; i++) x[i] = 1.0f + (float)(i % 7);
    for (int i = 0; i < 3 * 96; i++) t[i] = 0.5f + (float)(i % 11);
    xir_arg args[3] = {{.in = x}, {.in = t}, {.out = y}};
    xt_check ck = {x, t, y, 3, 960, 96, col_mod96};
    run_every_candidate(p, &s, args, 3, check_xt, &ck);
  }

  if (xir_shape_parse(p, "R=3,C=150,T=100", &s, &d)) die(&d);
  static const char *const def[] = {"define"};
  static const char *const lacks[] = {"perm.fast", "perm.split",
                                      "call <16 x float> @llvm.masked.gather"};
  for (int i = 0; i < 3; i++) check_ir16(p, &s, 16, def, 1, lacks[i]);
  /* every candidate (window loads, split chunks, the tail chunk, gathers) exactly x · t */
  float x[3 * 150], t[3 * 100], y[3 * 150];
  for (int i = 0; i < 3 * 150; i++) x[i] = 1.0f + (float)(i % 7);
  for (int i = 0; i < 3 * 100; i++) t[i] = 0.5f + (float)(i % 11);
  xir_arg args[3] = {{.in = x}, {.in = t}, {.out = y}};
  xt_check ck = {x, t, y, 3, 150, 100, col_mod100};
  run_every_candidate(p, &s, args, 3, check_xt, &ck);
  xir_program_free(p);
}

/* xir__window_split: a chunk of rope_cache's table column (c % 100) / 2 that starts at residue 88
 * crosses a head after 12 lanes: the lanes before read columns 44..49 (window 1, the larger
 * offsets), the lanes after columns 0 and 1 (window 0, 44 columns below lane 0's); the row's tail
 * chunk (8 live lanes at residue 92) fits one window; a pattern whose lanes spread over three
 * windows does not split; the fraction counts the crossing residues 88, 92, 96 of the 25. */
static void test_window_split(void **state) {
  (void)state;
  xir__lpat pt;
  memset(&pt, 0, sizeof pt);
  pt.P = 100;
  for (int r = 0; r < 100; r++) pt.tab[r] = r / 2;
  xir__wsplit sp;
  assert_true(xir__window_split(&pt, 88, 16, 0, 16, &sp));
  assert_int_equal(sp.nwin, 2);
  assert_int_equal(sp.base[0], -44);
  assert_int_equal(sp.base[1], 0);
  for (int i = 0; i < 16; i++)
    assert_int_equal(sp.src[i], i < 12 ? 16 + i / 2 : (i - 12) / 2);
  assert_int_equal(sp.mask[0], 0x3);
  assert_int_equal(sp.mask[1], 0x3f);
  assert_true(xir__window_split(&pt, 92, 16, 0, 8, &sp));
  assert_int_equal(sp.nwin, 1);
  for (int i = 0; i < 16; i++) assert_int_equal(sp.src[i], i < 8 ? i / 2 : -1);
  assert_true(fabs(xir__window_split_fraction(&pt, 16, 16) - 3.0 / 25) < 1e-12);
  memset(&pt, 0, sizeof pt);
  pt.P = 16;
  for (int r = 0; r < 16; r++) pt.tab[r] = r % 3 == 0 ? 0 : r % 3 == 1 ? 40 : 80; /* 3 windows */
  assert_false(xir__window_split(&pt, 0, 16, 0, 16, &sp));
  /* the tail chunk of a row (C = 192 at l = 128: 64 live lanes) reads its table columns and the
   * pair partners by window loads too: no gather left in the kernel */
  xir_shape s;
  xir_program *p = load("rope_cache", "R=3,C=192,HD=64,P=8,H2=32", &s);
  static const char *const has[] = {"masked.load"};
  check_ir16(p, &s, 128, has, 1, "masked.gather");
  xir_program_free(p);
}

/* Period buffers: rope's sin and cos of its angle repeat along c with period HD and take each
 * value on two consecutive elements (stretch 2: i = (c % HD) / 2), but depend on the row. With ℓ
 * not a multiple of HD (HD = 100 at ℓ = 16) each unit computes the 50 values at even c, W at a
 * step (comp = 128, 64 values), into a buffer of M + ℓ = 116 → 128 elements; with ℓ = 128 and HD =
 * 64 (every chunk at residue 0) the buffer holds ℓ elements, 32 computed. Not for a launch-time
 * inner axis, a masked kernel, or a row too short to pay (comp / D > N / 2). The IR has the buffer
 * (the kernel's outputs are checked against the oracle for every candidate in test_native, HD =
 * 100 among its shapes). */
static void test_period_buffers(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rope", "R=3,C=1000,HD=100", &s);
  int64_t *per = calloc((size_t)p->nnodes + 1, sizeof(int64_t));
  int64_t *str = calloc((size_t)p->nnodes + 1, sizeof(int64_t));
  uint8_t *hoist = calloc((size_t)p->nnodes + 1, 1);
  assert_non_null(per);
  assert_non_null(str);
  assert_non_null(hoist);
  int C = 1, nsc = 0;
  xir__pbuf pb;
  inner_facts(p, &s, C, per, str, hoist);
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    int sc = n->op == XIR_OP_SIN || n->op == XIR_OP_COS;
    nsc += sc;
    if (n->op == XIR_OP_IOTA) assert_int_equal(str[i], 1);
    if (n->op == XIR_OP_ROOT) assert_int_equal(str[i], 0);
    assert_int_equal(xir__period_buffer(p, &s, C, 16, 16, 1, 0, hoist, per, str, i, &pb), sc);
    if (!sc) continue;
    assert_int_equal(str[i], 2);
    assert_int_equal(pb.D, 2);
    assert_int_equal(pb.M, 100);
    assert_int_equal(pb.comp, 128);
    assert_int_equal(pb.len, 128);
    assert_false(xir__period_buffer(p, &s, C, 16, 16, 0, 0, hoist, per, str, i, &pb));
    assert_false(xir__period_buffer(p, &s, C, 16, 16, 1, 1, hoist, per, str, i, &pb));
    assert_true(xir__period_buffer(p, &s, C, 16, 16, 1, 0, hoist, per, NULL, i, &pb));
    assert_int_equal(pb.D, 1); /* without the stretch: every element computed */
    assert_int_equal(pb.comp, 112);
  }
  assert_int_equal(nsc, 2);
  static const char *const has[] = {"period"};
  check_ir16(p, &s, 16, has, 1, NULL);
  xir_program_free(p);
  p = load("rope", "R=3,C=256,HD=64", &s);
  inner_facts(p, &s, C, per, str, hoist);
  for (int i = p->body_begin; i < p->nnodes; i++) {
    if (p->nodes[i].op != XIR_OP_SIN) {
      assert_int_equal(xir__period_buffer(p, &s, C, 128, 16, 1, 0, hoist, per, str, i, &pb),
                       p->nodes[i].op == XIR_OP_COS);
      continue;
    }
    assert_true(xir__period_buffer(p, &s, C, 128, 16, 1, 0, hoist, per, str, i, &pb));
    assert_int_equal(pb.comp, 64);
    assert_int_equal(pb.len, 128);
    assert_false(xir__period_buffer(p, &s, C, 128, 16, 1, 0, hoist, per, NULL, i, &pb));
    assert_true(xir__period_buffer(p, &s, C, 16, 16, 1, 0, hoist, per, str, i, &pb));
    assert_int_equal(pb.len, 80);
  }
  xir_program_free(p);
  p = load("rope", "R=3,C=200,HD=100", &s); /* without the stretch: 2 · 112 > 200 */
  inner_facts(p, &s, C, per, str, hoist);
  for (int i = p->body_begin; i < p->nnodes; i++) {
    if (p->nodes[i].op != XIR_OP_SIN) continue;
    assert_true(xir__period_buffer(p, &s, C, 16, 16, 1, 0, hoist, per, str, i, &pb));
    assert_false(xir__period_buffer(p, &s, C, 16, 16, 1, 0, hoist, per, NULL, i, &pb));
  }
  xir_program_free(p);
  /* One head a row (C = HD): sin and cos do not repeat along the row but take each value on two
   * elements, so the unit computes the row's N / 2 values into a buffer of the row (M = N): at
   * HD = 96 comp = 96 (three vectors at even c), the buffer 96 elements at l = 16 (the chunks
   * read [0, 96)); at HD = 100 comp = 128 passes the row (the tile has period N, so the values
   * past it are those of c mod N), the buffer 128. Without the stretch none (chunk by chunk
   * computes the same values). The outputs: test_native runs every candidate at C = HD = 96,
   * 100, 80, 34. */
  static const char *const one[] = {"R=3,C=96,HD=96", "R=3,C=100,HD=100"};
  for (int t = 0; t < 2; t++) {
    p = load("rope", one[t], &s);
    inner_facts(p, &s, C, per, str, hoist);
    int n1 = 0;
    for (int i = p->body_begin; i < p->nnodes; i++) {
      int sc = p->nodes[i].op == XIR_OP_SIN || p->nodes[i].op == XIR_OP_COS;
      n1 += sc;
      assert_int_equal(xir__period_buffer(p, &s, C, 16, 16, 1, 0, hoist, per, str, i, &pb), sc);
      if (!sc) continue;
      assert_int_equal(pb.M, s.dims[C]);
      assert_int_equal(pb.D, 2);
      assert_int_equal(pb.comp, t == 0 ? 96 : 128);
      assert_int_equal(pb.len, t == 0 ? 96 : 128);
      assert_true(xir__period_buffer(p, &s, C, 64, 16, 1, 0, hoist, per, str, i, &pb));
      assert_int_equal(pb.len, 128); /* the chunks read [0, 128) */
      assert_false(xir__period_buffer(p, &s, C, 16, 16, 1, 0, hoist, per, NULL, i, &pb));
      assert_false(xir__period_buffer(p, &s, C, 16, 16, 0, 0, hoist, per, str, i, &pb));
    }
    assert_int_equal(n1, 2);
    check_ir16(p, &s, 16, has, 1, NULL);
    xir_program_free(p);
  }
  /* periodic loads: rope_cache's table reads at HD = 100, l = 16 (3 of 25 chunk residues cross
   * a head); not at HD = 96 with two heads a row (no chunk of 16 crosses one, and the head
   * repeats fewer than four times: ten heads would take the buffer, test_local_pattern_fraction)
   * nor at HD = 128, l = 128 (every chunk at residue 0). The sin row's one use is its product
   * with the sign (sign(c) · sin[p, i], free of loads otherwise): at HD = 100 (a period of 6.25
   * vectors) the load keeps its buffer and the product has none; at HD = 128, l = 64 (whole
   * vectors, 8 heads a row) the product is buffered (D = 1: the sign alternates within each
   * pair) and the sin load not, the cos load as before (D = 2) */
  static const char *const rc[] = {"R=3,C=1000,HD=100,P=8,H2=50", "R=3,C=192,HD=96,P=8,H2=48",
                                   "R=3,C=1024,HD=128,P=8,H2=64"};
  for (int t = 0; t < 3; t++) {
    p = load("rope_cache", rc[t], &s);
    inner_facts(p, &s, C, per, str, hoist);
    int nl = 0;
    for (int i = p->body_begin; i < p->nnodes; i++) {
      const xir_node *n = &p->nodes[i];
      if (n->op != XIR_OP_LOAD || (p->params[n->ref].name[0] != 'c' && p->params[n->ref].name[0] != 's'))
        continue;
      nl++;
      int ell = t == 2 ? 128 : 16, is_cos = p->params[n->ref].name[0] == 'c';
      assert_int_equal(xir__period_buffer(p, &s, C, ell, 16, 1, 0, hoist, per, str, i, &pb), t == 0);
      if (t == 0) assert_int_equal(pb.D, 2);
      if (t == 2) /* l = 64: the cos load's own buffer, the sin load's product's (below) */
        assert_int_equal(xir__period_buffer(p, &s, C, 64, 16, 1, 0, hoist, per, str, i, &pb), is_cos);
      for (int j = i + 1; j < p->nnodes && !is_cos; j++) {
        if (p->nodes[j].op != XIR_OP_MUL || (p->nodes[j].args[0] != i && p->nodes[j].args[1] != i))
          continue;
        assert_false(xir__period_buffer(p, &s, C, ell, 16, 1, 0, hoist, per, str, j, &pb));
        if (t != 2) continue;
        assert_true(xir__period_buffer(p, &s, C, 64, 16, 1, 0, hoist, per, str, j, &pb));
        assert_true(pb.D == 1 && pb.M == 128 && pb.comp == 128);
        /* without the stretch facts, not (the factor's eligibility rests on the load's D) */
        assert_false(xir__period_buffer(p, &s, C, 64, 16, 1, 0, hoist, per, NULL, j, &pb));
      }
    }
    assert_int_equal(nl, 2);
    /* (C = 192 is 12 packets: a local pattern's chunks straight-line, below) */
    assert_int_equal(xir__chunk_unroll(p, &s, C, t == 2 ? 128 : 16, 16, 1),
                     t == 1 ? XIR__UNROLL_PERIODIC : XIR__UNROLL_CHUNKS);
    xir_program_free(p);
  }
  /* A row of at most XIR__UNROLL_PERIODIC full packets runs its chunks straight-line instead
   * (xir__chunk_unroll): rope_cache at C = 200, HD = 100, l = 16 (12 chunks and a tail) has no
   * buffer, its IR neither a buffer nor a gather (each chunk's c mod 100 a constant); at C = 1000
   * (62 chunks) the buffer stays, and the chunk loop carries the residue c0 mod 100 (no urem in
   * the IR: lower.c res_next). rope's computed sin and cos keep their buffers at C = 200 (a sin
   * and a cos a chunk would cost more than the buffer). Outputs: test_native runs every candidate
   * of rope_cache at HD = 100 and 22. */
  p = load("rope_cache", "R=3,C=200,HD=100,P=8,H2=50", &s);
  inner_facts(p, &s, C, per, str, hoist);
  assert_int_equal(xir__chunk_unroll(p, &s, C, 16, 16, 1), XIR__UNROLL_PERIODIC);
  assert_int_equal(xir__chunk_unroll(p, &s, C, 16, 16, 0), XIR__UNROLL_CHUNKS);
  for (int i = p->body_begin; i < p->nnodes; i++)
    assert_false(xir__period_buffer(p, &s, C, 16, 16, 1, 0, hoist, per, str, i, &pb));
  static const char *const none[] = {"define"};
  check_ir16(p, &s, 16, none, 1, "%period");
  check_ir16(p, &s, 16, none, 1, "call <16 x float> @llvm.masked.gather");
  xir_program_free(p);
  p = load("rope_cache", "R=3,C=1000,HD=100,P=8,H2=50", &s);
  static const char *const buf[] = {"%period"};
  check_ir16(p, &s, 16, buf, 1, "urem");
  xir_program_free(p);
  p = load("rope", "R=3,C=200,HD=100", &s);
  inner_facts(p, &s, C, per, str, hoist);
  assert_int_equal(xir__chunk_unroll(p, &s, C, 16, 16, 1), XIR__UNROLL_CHUNKS);
  check_ir16(p, &s, 16, buf, 1, NULL);
  xir_program_free(p);
  free(per);
  free(str);
  free(hoist);
}

/* Floor division and modulo of an affine index by a constant (affine_divmod in lower.c: one
 * scalar division per packet, constants per lane) agree with floor semantics for negative
 * values, strides other than 1 and several packets per chunk, at every candidate. */
static void test_affine_divmod_floor(void **state) {
  (void)state;
  const char *text =
      "kernel k[R, C](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n"
      "  c = iota(C)\n"
      "  a = (3 * c - 50) % 7\n"
      "  b = (c - 37) / 6\n"
      "  e = (0 - 5 * c + 11) / 9\n"
      "  store y[r, :] = load x[r, :] + f32(a) + 100.0 * f32(b) + 10000.0 * f32(e)\n"
      "}\n";
  xir_program *p;
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "k.xir", &p, &d)) die(&d);
  xir_shape s;
  if (xir_shape_parse(p, "R=3,C=203", &s, &d)) die(&d);
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  xir_candidate *cands;
  size_t n;
  if (xir_candidates(p, &s, W, &cands, &n, &d)) die(&d);
  float x[3 * 203], y[3 * 203];
  for (int i = 0; i < 3 * 203; i++) x[i] = (float)(i % 5);
  for (size_t ci = 0; ci < n; ci++) {
    const xir_kernel *k;
    if (xir_compile(cc, p, &s, &cands[ci], &k, &d)) die(&d);
    xir_arg args[2] = {{.in = x}, {.out = y}};
    uint64_t slots[XIR_MAX_ARG_SLOTS];
    if (xir_kernel_pack_args(k, args, slots, &d)) die(&d);
    assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
    for (int r = 0; r < 3; r++)
      for (int64_t c = 0; c < 203; c++) {
        int64_t a = 3 * c - 50, b = c - 37, e = -5 * c + 11;
        int64_t fa = a - 7 * (a / 7 - (a % 7 < 0)), fb = b / 6 - (b % 6 < 0), fe = e / 9 - (e % 9 < 0);
        float want = x[r * 203 + c] + (float)fa + 100.0f * (float)fb + 10000.0f * (float)fe;
        if (y[r * 203 + c] != want)
          fail_msg("candidate %zu, c = %lld: got %g, want %g", ci, (long long)c, y[r * 203 + c], want);
      }
  }
  xir_free(cands);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* A period buffer on a kernel of its own: exp of a per-row value times a function of (c % 24) / 4
 * (period 24, runs of 4), rows of 203 elements (a tail chunk at every ℓ). Every candidate — with
 * and without a period buffer, with and without the stretch — gives the same bits (the same
 * operations on the same inputs), and they match exp in double within 2e-6 relative. */
static void test_period_buffer_custom_kernel(void **state) {
  (void)state;
  const char *text =
      "kernel k[R, C](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n"
      "  c = iota(C)\n"
      "  g = (c % 24) / 4\n"
      "  store y[r, :] = load x[r, :] + exp(0.1 * f32(r + 1) * f32(g))\n"
      "}\n";
  xir_program *p;
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "k.xir", &p, &d)) die(&d);
  xir_shape s;
  if (xir_shape_parse(p, "R=3,C=203", &s, &d)) die(&d);
  int64_t str[64] = {0};
  assert_true(p->nnodes <= 64);
  xir__inner_stretch(p, &s, 1, str);
  int found = 0;
  for (int i = 0; i < p->nnodes; i++)
    if (p->nodes[i].op == XIR_OP_EXP) found = str[i] == 4;
  assert_true(found);
  float x[3 * 203], y[3 * 203], y0[3 * 203];
  for (int i = 0; i < 3 * 203; i++) x[i] = (float)(i % 5) * 0.25f;
  xir_arg args[2] = {{.in = x}, {.out = y}};
  same_bits_check ck = {x, y, y0, 3, 203, want_x_plus_exp, 2e-6, 0};
  run_every_candidate(p, &s, args, 2, check_same_bits, &ck);
  static const char *const has[] = {"period"}; /* l = 16 uses one */
  check_ir16(p, &s, 16, has, 1, NULL);
  xir_program_free(p);
}

/* A period buffer of a table row is filled by window loads (xir__window_fill, lower.c's
 * window_fill_plan), not gathers: rope_cache's column (c % 100) / 2 at the even elements c = 0,
 * 2, …, 30 reads columns 0..15 (one window), and the last fill vector (c = 96, 98; the rest of
 * the buffer is copied) columns 48 and 49; a table read at m / 2 + 10·(m / 20), m = c % 40,
 * takes two windows in its first vector (columns 0..9 and 20..25); lanes that spread over three
 * windows do not fit. The ℓ = 16 code of both kernels has the buffer and no gather, and every
 * candidate of the second gives exactly x · t (test_native checks rope_cache against the oracle
 * at HD = 100). */
static void test_period_buffer_window_fill(void **state) {
  (void)state;
  xir__lpat pt;
  memset(&pt, 0, sizeof pt);
  pt.P = 100;
  for (int r = 0; r < 100; r++) pt.tab[r] = r / 2;
  xir__wsplit sp;
  assert_true(xir__window_fill(&pt, 0, 2, 16, 100, &sp));
  assert_int_equal(sp.nwin, 1);
  assert_int_equal(sp.base[0], 0);
  assert_int_equal(sp.mask[0], 0xffff);
  for (int i = 0; i < 16; i++) assert_int_equal(sp.src[i], i);
  assert_true(xir__window_fill(&pt, 96, 2, 16, 100, &sp));
  assert_int_equal(sp.nwin, 1);
  assert_int_equal(sp.base[0], 48);
  assert_int_equal(sp.mask[0], 0x3);
  for (int i = 0; i < 16; i++) assert_int_equal(sp.src[i], i < 2 ? i : -1);
  for (int r = 0; r < 40; r++) pt.tab[r] = r / 2 + 10 * (r / 20);
  pt.P = 40;
  assert_true(xir__window_fill(&pt, 0, 2, 16, 40, &sp));
  assert_int_equal(sp.nwin, 2);
  assert_int_equal(sp.base[0], 0);
  assert_int_equal(sp.base[1], 20);
  assert_int_equal(sp.mask[0], 0x3ff);
  assert_int_equal(sp.mask[1], 0x3f);
  for (int i = 0; i < 16; i++) assert_int_equal(sp.src[i], i < 10 ? i : 16 + i - 10);
  pt.P = 16;
  for (int r = 0; r < 16; r++) pt.tab[r] = r % 3 == 0 ? 0 : r % 3 == 1 ? 40 : 80; /* 3 windows */
  assert_false(xir__window_fill(&pt, 0, 1, 16, 16, &sp));
  static const char *const has[] = {"period"};
  xir_shape s;
  xir_program *p = load("rope_cache", "R=3,C=1000,HD=100,P=8,H2=50", &s);
  check_ir16(p, &s, 16, has, 1, "masked.gather");
  xir_program_free(p);
  const char *text = "kernel k[R, C, T](x: f32[R, C], t: f32[R, T], y: out f32[R, C])\n"
                     "root r in R {\n"
                     "  c = iota(C)\n"
                     "  m = c % 40\n"
                     "  store y[r, :] = load x[r, :] * load t[r, m / 2 + 10 * (m / 20)]\n"
                     "}\n";
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "k.xir", &p, &d)) die(&d);
  /* (603: 37 chunks, a loop; a row of at most 32 packets runs straight-line, no buffer) */
  if (xir_shape_parse(p, "R=3,C=603,T=32", &s, &d)) die(&d);
  check_ir16(p, &s, 16, has, 1, "masked.gather");
  float x[3 * 603], t[3 * 32], y[3 * 603];
  for (int i = 0; i < 3 * 603; i++) x[i] = 1.0f + (float)(i % 7);
  for (int i = 0; i < 3 * 32; i++) t[i] = 0.5f + (float)(i % 11);
  xir_arg args[3] = {{.in = x}, {.in = t}, {.out = y}};
  xt_check ck = {x, t, y, 3, 603, 32, col_two_windows};
  run_every_candidate(p, &s, args, 3, check_xt, &ck);
  xir_program_free(p);
}

/* Period buffers of one layout share their fill loop: sin and cos of a per-row angle of
 * (c % 24) / 4 (period 24, runs of 4) at ℓ = 16 are computed in one loop, the angle once (and
 * after inlining the range reduction both share). Every candidate — ℓ = 1 computes per element,
 * without the buffers — gives the same bits, within 1e-6 of sin and cos in double. */
static void test_period_buffers_share_a_loop(void **state) {
  (void)state;
  const char *text =
      "kernel k[R, C](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n"
      "  c = iota(C)\n"
      "  a = 0.37 * f32(r + 1) * f32((c % 24) / 4)\n"
      "  store y[r, :] = load x[r, :] * cos(a) + sin(a)\n"
      "}\n";
  xir_program *p;
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "k.xir", &p, &d)) die(&d);
  xir_shape s;
  if (xir_shape_parse(p, "R=3,C=203", &s, &d)) die(&d);
  static const char *const has[] = {"period"};
  check_ir16(p, &s, 16, has, 1, NULL);
  float x[3 * 203], y[3 * 203], y0[3 * 203];
  for (int i = 0; i < 3 * 203; i++) x[i] = 0.5f + (float)(i % 5) * 0.25f;
  xir_arg args[2] = {{.in = x}, {.out = y}};
  same_bits_check ck = {x, y, y0, 3, 203, want_x_cos_plus_sin, 1e-6, 1e-6};
  run_every_candidate(p, &s, args, 2, check_same_bits, &ck);
  xir_program_free(p);
}

/* A window load's lane-0 offset is computed without clamping the indices that vary along X when
 * they never clamp (xir__access_in_bounds): rope_cache's partner x[r, c + 1 − 2·(c % 2)] at ℓ =
 * 128 has offset c0 + 1 − 1 = c0, the address of x[r, c0] (one load, the pairs swapped in the
 * register); before, its min(c0 + 1, C − 1) was in the IR as llvm.umin and x was loaded twice.
 * (test_native checks every candidate against the oracle.) */
static void test_window_offsets_unclamped(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rope_cache", "R=1,C=4096,HD=128,P=8,H2=64", &s);
  static const char *const has[] = {"masked.load"};
  check_ir16(p, &s, 128, has, 1, "llvm.umin.i64");
  xir_program_free(p);
}

/* The aliasing contract in the IR: rope_cache's inputs that no in-place rule pairs with y (pos,
 * cos, sin) are loaded under alias scopes of their own, and y's stores are marked noalias with
 * them, so the table rows (chunk-invariant at l = HD) can stay out of the chunk loop; x, which y
 * may replace in place, has no scope. */
static void test_alias_scopes_follow_the_contract(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rope_cache", "R=5,C=256,HD=64,P=16,H2=32", &s);
  uint8_t ok[XIR_MAX_PARAMS][XIR_MAX_PARAMS];
  xir__alias_table(p, ok);
  static const char *const has[] = {"!alias.scope", "!noalias", ".alias\"", ".cos\"", ".sin\""};
  check_ir16(p, &s, 64, has, 5, ok[4][0] ? ".x\"" : NULL);
  xir_program_free(p);
}

/* Window loads whose indices never clamp (every X-dependent index known and inside its dim over
 * the whole extent) need no run-time check: RoPE's partner and rope_cache's table rows. An index
 * that reaches past its dim, or that mixes a per-root value into a lane-varying index, keeps the
 * check. The IR of rope_cache at l = 64 has the window path and no gather at all. */
static void test_window_load_without_check(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rope_cache", "R=5,C=256,HD=64,P=16,H2=32", &s);
  int C = 1, n_in = 0, n_loads = 0;
  for (int i = 0; i < p->nnodes; i++)
    if (p->nodes[i].op == XIR_OP_LOAD && p->nodes[i].type.rank == 1) {
      n_loads++;
      n_in += xir__access_in_bounds(p, &s, C, i);
    }
  assert_int_equal(n_loads, 4); /* x[r, :], the partner, cos[p, i], sin[p, i] */
  assert_int_equal(n_in, 4);
  static const char *const has[] = {"masked.load"};
  check_ir16(p, &s, 64, has, 1, "masked.gather");
  xir_program_free(p);

  static const struct {
    const char *text, *shape;
    int in_bounds;
  } kCases[] = {
      /* past the row's end at c = C - 1 */
      {"kernel k[R, C](x: f32[R, C], y: out f32[R, C])\nroot r in R {\n  c = iota(C)\n"
       "  store y[r, :] = load x[r, c + 2 - 2 * (c % 2)]\n}\n", "R=3,C=128", 0},
      /* a pair swap stays in the row */
      {"kernel k[R, C](x: f32[R, C], y: out f32[R, C])\nroot r in R {\n  c = iota(C)\n"
       "  store y[r, :] = load x[r, c + 1 - 2 * (c % 2)]\n}\n", "R=3,C=128", 1},
      /* a table of T columns read at (c % 64) / 2: in bounds when T >= 32, not when smaller */
      {"kernel k[R, C, T](x: f32[R, T], y: out f32[R, C])\nroot r in R {\n  c = iota(C)\n"
       "  store y[r, :] = load x[r, (c % 64) / 2]\n}\n", "R=3,C=128,T=32", 1},
      {"kernel k[R, C, T](x: f32[R, T], y: out f32[R, C])\nroot r in R {\n  c = iota(C)\n"
       "  store y[r, :] = load x[r, (c % 64) / 2]\n}\n", "R=3,C=128,T=31", 0},
      /* c / 2 has no pattern (a division of a lane-varying value): never "in bounds" */
      {"kernel k[R, C, T](x: f32[R, T], y: out f32[R, C])\nroot r in R {\n  c = iota(C)\n"
       "  store y[r, :] = load x[r, c / 2]\n}\n", "R=3,C=128,T=64", 0},
      /* the row index mixed into the column: clamps differ per lane, per root */
      {"kernel k[R, C](x: f32[R, C], y: out f32[R, C])\nroot r in R {\n  c = iota(C)\n"
       "  store y[r, :] = load x[r, (c + r) % C]\n}\n", "R=3,C=128", 0},
  };
  xir_diag d;
  for (size_t t = 0; t < sizeof kCases / sizeof kCases[0]; t++) {
    xir_program *q;
    if (xir_program_parse(kCases[t].text, strlen(kCases[t].text), "k.xir", &q, &d) ||
        xir_shape_parse(q, kCases[t].shape, &s, &d))
      die(&d);
    int load_id = -1;
    for (int i = 0; i < q->nnodes; i++)
      if (q->nodes[i].op == XIR_OP_LOAD) load_id = i;
    assert_true(load_id >= 0);
    int X = xir_program_find_dim(q, "C");
    int got = xir__access_in_bounds(q, &s, X, load_id);
    if (got != kCases[t].in_bounds)
      fail_msg("case %zu (%s): in bounds %d, expected %d", t, kCases[t].shape, got,
               kCases[t].in_bounds);
    xir_program_free(q);
  }
}

/* A contiguous slice is one vector load (1 unit), never charged as a window load: a row copy
 * with l = 64 costs load + store = 2 units per chunk and packet, plus the chunk loop's 2 units an
 * iteration shared by the 4 packets (the first version of window loads charged every slice the
 * shuffle too, and moved softmax_mask to l = 16). */
static void test_slices_are_not_window_loads(void **state) {
  (void)state;
  const char *text =
      "kernel copy[R, C](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n"
      "  store y[r, :] = load x[r, :]\n"
      "}\n";
  xir_program *p;
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "copy.xir", &p, &d)) die(&d);
  xir_shape s;
  if (xir_shape_parse(p, "R=4,C=768", &s, &d)) die(&d);
  uint8_t perm[1] = {0};
  xir_candidate c;
  xir_execution_work w;
  if (xir_candidate_make(p, &s, 16, 64, 64, perm, &c, &d) ||
      xir_execution_work_make(p, &s, &c, UINT32_MAX, 1, &w, &d))
    die(&d);
  assert_true(w.arith_per_packet == (2.0 + 2.0 / 4) * (768 / 64));
  assert_true(w.memory_per_packet == 2.0 * 64 * (768 / 64));
  xir_program_free(p);
}

/* Bytes from beyond L1 only: rmsnorm reads its row twice (reduction, then store) and w[:] in
 * every unit; with l = 64 (a 3 KiB row) the second read of x and all of w are near, so a packet
 * moves x once and y once. */
static void test_near_bytes(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=129,C=768", &s);
  uint8_t perm[1] = {0};
  xir_candidate c;
  xir_execution_work w;
  xir_diag d;
  if (xir_candidate_make(p, &s, 16, 64, 64, perm, &c, &d) ||
      xir_execution_work_make(p, &s, &c, UINT32_MAX, 1, &w, &d))
    die(&d);
  assert_true(w.memory_per_packet == 2.0 * 64 * (768 / 64));
  assert_true(w.footprint_bytes == 4.0 * (2 * 129 * 768 + 768));
  xir_program_free(p);
}

/* The memory hierarchy of the coefficients: flat without levels; with levels, the level's rate
 * at and below its footprint, log-linear between, the last beyond; the planner rejects levels
 * that do not increase. */
static void test_byte_rate(void **state) {
  (void)state;
  xir_cost_coefficients c;
  xir_cost_coefficients_default(&c);
  assert_true(xir_cost_byte_rate(&c, 1e9) == c.c[XIR_TERM_MEMORY]);
  c.c[XIR_TERM_MEMORY] = 1;
  double B[3] = {1 << 18, 1 << 24, 1 << 25}, N[3] = {0.005, 0.008, 0.02};
  for (int i = 0; i < 3; i++) c.mem_bytes[i] = B[i], c.mem_ns[i] = N[i];
  assert_true(xir_cost_byte_rate(&c, 1000) == 0.005);
  assert_true(xir_cost_byte_rate(&c, B[1]) == 0.008);
  assert_true(fabs(xir_cost_byte_rate(&c, 1 << 21) - 0.0065) < 1e-12); /* halfway in log */
  assert_true(xir_cost_byte_rate(&c, 1e12) == 0.02);
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=4,C=16", &s);
  xir_plan_options o;
  xir_plan_options_base(&o);
  o.coefficients = &c;
  xir_plan *pl;
  xir_diag d;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_OK);
  xir_plan_free(pl);
  c.mem_bytes[2] = c.mem_bytes[1];
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_COST);
  assert_non_null(strstr(d.msg, "memory hierarchy"));
  c.mem_bytes[2] = B[2];
  c.ns_per_math = -1;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_COST);
  xir_program_free(p);
}

/* The math part of the arithmetic (ops weighing more than 1) is reported apart and priced at
 * ns_per_math when the coefficients have it: gelu's tanh is math, a copy has none. */
static void test_math_part(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("gelu_residual", "R=8,C=64", &s);
  uint8_t perm[2] = {0, 1};
  xir_candidate c;
  xir_execution_work w;
  xir_diag d;
  if (xir_candidate_make(p, &s, 16, 16, 1, perm, &c, &d) ||
      xir_execution_work_make(p, &s, &c, UINT32_MAX, 1, &w, &d))
    die(&d);
  assert_true(w.math_per_packet >= 20 && w.math_per_packet < w.arith_per_packet);
  xir_cost_coefficients k;
  xir_cost_coefficients_default(&k);
  k.c[XIR_TERM_ARITH] = 1;
  assert_true(xir_cost_arith_per_packet(&k, &w) == w.arith_per_packet);
  k.ns_per_math = 3;
  assert_true(xir_cost_arith_per_packet(&k, &w) ==
              (w.arith_per_packet - w.math_per_packet) + 3 * w.math_per_packet);
  xir_program_free(p);
}

/* A rank-0 value is one per root program: with ℓ > W the unit's k packets hold the same value
 * and the object code computes it once, so the work charges it once per unit (rmsnorm's rsqrt:
 * 8 math units a row, whatever ℓ). Its 1/C (a division of constants and dims, root-invariant) is
 * folded by LLVM or hoisted out of the unit loop: nothing a row (it was 4 more until session
 * 45). The rsqrt is the divider's (hw_math_per_packet), at ns_per_hw_math when that is set. */
static void test_rank0_once_per_unit(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=8,C=1024", &s);
  uint8_t perm[1] = {0};
  for (uint32_t l = 16; l <= 128; l *= 2) {
    xir_candidate c;
    xir_execution_work w;
    xir_diag d;
    if (xir_candidate_make(p, &s, 16, 128, l, perm, &c, &d) ||
        xir_execution_work_make(p, &s, &c, UINT32_MAX, 1, &w, &d))
      die(&d);
    assert_true(fabs(w.math_per_packet * (double)(l / 16) - 8) < 1e-9);
    assert_true(fabs(w.hw_math_per_packet * (double)(l / 16) - 8) < 1e-9);
    xir_cost_coefficients k;
    xir_cost_coefficients_default(&k);
    k.ns_per_math = 3;
    double one = xir_cost_arith_per_packet(&k, &w);
    k.ns_per_hw_math = 2;
    assert_true(fabs(xir_cost_arith_per_packet(&k, &w) - (one - w.hw_math_per_packet)) < 1e-9);
  }
  xir_program_free(p);
  /* gelu_residual's tanh is a polynomial, not the divider's */
  p = load("gelu_residual", "R=8,C=1024", &s);
  xir_candidate c;
  xir_execution_work w;
  xir_diag d;
  uint8_t perm2[2] = {0, 1};
  if (xir_candidate_make(p, &s, 16, 128, 1, perm2, &c, &d) ||
      xir_execution_work_make(p, &s, &c, UINT32_MAX, 1, &w, &d))
    die(&d);
  assert_true(w.math_per_packet > 0 && w.hw_math_per_packet == 0);
  xir_program_free(p);
}

/* Row groups in the execution work (xir__row_group_size, which the lowering's group_size shares):
 * layernorm rows of 24 at ℓ = 16 in groups of 8 and rmsnorm's of 4, rows of 40 (3 packets) 4
 * and 2, softmax_mask's 4 (exp on the row: up to 3 packets); none for rows of 7 packets, ℓ < W,
 * a launch-time row, a masked kernel or period buffers. At W = 8 (no AVX-512) without vector
 * math: 8 up to 6 packets, 4 up to 16, none beyond (rmsnorm rows of 24, 100, 200); with it the
 * rule of W = 16 (softmax_mask rows of 40: 5 packets, none). A grouped unit pays 1/g of its serial
 * chain (combining trees, rank-0 ops): layernorm 4096x24 costs less arithmetic a row at ℓ = 16
 * than at ℓ = 8 (two rows a packet, no groups) — measured 17.6 against 19.9 us on 2 workers,
 * which the model had backwards (114 against 82.5 a row) — and the ragged packet moves only its
 * live bytes: x read and y written, 24 floats each a row (w and b come from L1). */
static void test_row_groups_in_the_work(void **state) {
  (void)state;
  static const struct {
    const char *k, *shape;
    unsigned ell, g, W;
  } cases[] = {{"layernorm", "R=4096,C=24", 16, 8, 16}, {"rmsnorm", "R=4096,C=24", 16, 4, 16},
               {"layernorm", "R=64,C=40", 64, 4, 16},    {"rmsnorm", "R=64,C=40", 16, 2, 16},
               {"softmax_mask", "R=64,C=40", 16, 4, 16}, {"layernorm", "R=64,C=100", 16, 1, 16},
               {"layernorm", "R=64,C=24", 8, 1, 16},     {"rmsnorm", "R=4096,C=24", 16, 8, 8},
               {"rmsnorm", "R=64,C=100", 16, 4, 8},      {"layernorm", "R=64,C=128", 8, 4, 8},
               {"rmsnorm", "R=64,C=200", 16, 1, 8},      {"softmax_mask", "R=64,C=40", 16, 1, 8},
               {"layernorm", "R=64,C=24", 4, 1, 8}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    xir_shape s;
    xir_program *p = load(cases[i].k, cases[i].shape, &s);
    unsigned W = cases[i].W;
    assert_int_equal(xir__row_group_size(p, &s, 1, cases[i].ell, W, 1, 0, 0), cases[i].g);
    if (cases[i].g > 1) {
      assert_int_equal(xir__row_group_size(p, &s, 1, cases[i].ell, W, 0, 0, 0), 1);
      assert_int_equal(xir__row_group_size(p, &s, 1, cases[i].ell, W, 1, 1, 0), 1);
      assert_int_equal(xir__row_group_size(p, &s, 1, cases[i].ell, W, 1, 0, 1), 1);
    }
    xir_program_free(p);
  }
  xir_shape s;
  xir_program *p = load("layernorm", "R=4096,C=24", &s);
  uint8_t perm[1] = {0};
  xir_execution_work w8, w16;
  xir_candidate c8, c16;
  xir_diag d;
  if (xir_candidate_make(p, &s, 16, 128, 8, perm, &c8, &d) ||
      xir_candidate_make(p, &s, 16, 128, 16, perm, &c16, &d) ||
      xir_execution_work_make(p, &s, &c8, 0, 2, &w8, &d) ||
      xir_execution_work_make(p, &s, &c16, 0, 2, &w16, &d))
    die(&d);
  assert_true(w16.arith_per_packet < w8.arith_per_packet / 2); /* a packet: 1 row, 2 rows */
  assert_true(fabs(w16.memory_per_packet - 24 * 4 * 2) < 1e-9);
  xir_program_free(p);
  /* the group computes its rows' sqrt and div once, in one vector: a grouped row's math is 1/8
   * of an ungrouped one's and stays below its arithmetic (clamped to it, the whole arithmetic
   * was priced as math: rmsnorm 16384x8 ranked l = 4 first, 64 us, against 45 at l = 8) */
  p = load("rmsnorm", "R=16384,C=8", &s);
  xir_execution_work w4, w8g;
  xir_candidate c4, c8g;
  if (xir_candidate_make(p, &s, 8, 64, 4, perm, &c4, &d) ||
      xir_candidate_make(p, &s, 8, 64, 8, perm, &c8g, &d) ||
      xir_execution_work_make(p, &s, &c4, 0, 2, &w4, &d) ||
      xir_execution_work_make(p, &s, &c8g, 0, 2, &w8g, &d))
    die(&d);
  assert_int_equal(xir__row_group_size(p, &s, 1, 8, 8, 1, 0, 0), 8);
  assert_true(w8g.math_per_packet < w8g.arith_per_packet / 4);
  /* one vector sqrt and div: l = 4 one a packet (two rows), l = 8 grouped one per 8 packets */
  assert_true(w8g.math_per_packet > 0);
  assert_true(fabs(w8g.math_per_packet * 8 - w4.math_per_packet) < 1e-9);
  xir_program_free(p);
}

/* A rank-0 reduction's accumulation chain is counted in steps by kind (sum 0, max/min 1): ℓ = 16
 * on rows of 1024 is 64 steps a packet, ℓ = 64 four packets sharing 16 steps. ns_per_step adds
 * its cost per step to the prior's arithmetic; a max step weighs more ops than a sum's
 * (llvm.maximum's expansion). */
static void test_reduction_chain_steps(void **state) {
  (void)state;
  static const char *src[2] = {
      "kernel s[R, C](x: f32[R, C], y: out f32[R])\nroot r in R {\n"
      "  store y[r] = reduce.sum(load x[r, :])\n}\n",
      "kernel m[R, C](x: f32[R, C], y: out f32[R])\nroot r in R {\n"
      "  store y[r] = reduce.max(load x[r, :])\n}\n"};
  xir_execution_work w[2][2];
  for (int k = 0; k < 2; k++) {
    xir_program *p;
    xir_shape s;
    xir_diag d;
    if (xir_program_parse(src[k], strlen(src[k]), "chain", &p, &d) ||
        xir_shape_parse(p, "R=8,C=1024", &s, &d))
      die(&d);
    uint8_t perm[1] = {0};
    for (int l = 0; l < 2; l++) {
      xir_candidate c;
      if (xir_candidate_make(p, &s, 16, 64, l ? 64 : 16, perm, &c, &d) ||
          xir_execution_work_make(p, &s, &c, UINT32_MAX, 1, &w[k][l], &d))
        die(&d);
      assert_true(w[k][l].steps_per_packet[k] == (l ? 16.0 / 4 : 64.0));
      assert_true(w[k][l].steps_per_packet[1 - k] == 0);
    }
    xir_program_free(p);
  }
  assert_true(w[1][1].arith_per_packet > w[0][1].arith_per_packet); /* 6 ops a max step */
  xir_cost_coefficients k;
  xir_cost_coefficients_default(&k);
  assert_true(xir_cost_arith_per_packet(&k, &w[0][0]) == w[0][0].arith_per_packet);
  k.ns_per_step[0] = 0.5;
  k.ns_per_step[1] = 3;
  for (int i = 0; i < 2; i++)
    for (int l = 0; l < 2; l++)
      assert_true(fabs(xir_cost_arith_per_packet(&k, &w[i][l]) -
                       (w[i][l].arith_per_packet + k.ns_per_step[i] * w[i][l].steps_per_packet[i])) <
                  1e-9);
  /* a max step at ℓ = 16 costs more than four max packets' throughput at ℓ = 64 */
  assert_true(xir_cost_arith_per_packet(&k, &w[1][0]) > xir_cost_arith_per_packet(&k, &w[1][1]));
}

/* Register pressure at W = 8 (AVX2: 16 ymm registers). Sibling reductions (one loop) keep k
 * partial sums each: layernorm's sum(d) and sum(d·d) at ℓ = 64 are 16 accumulators beside a
 * loaded value, a temporary and the mean, and llc spills 3 of them (a reload and a store each an
 * iteration; 2026-12-07 znver1, 32x3072: that loop 13.3 us at ℓ = 64 against 10.8 at ℓ = 16).
 * The same two reductions with a store between them are two loops: no spill. At ℓ = 32 (8
 * accumulators) or at W = 16 (32 zmm registers) neither spills. A vector-math loop's bodies
 * (kMathLive) also count against 16 registers at W = 8. */
/* The whole launch's arithmetic prior, per row, of program text src at shape spec, W and ℓ (B = ℓ,
 * one task). */
static double text_arith_per_row(const char *src, const char *spec, unsigned W, unsigned l) {
  xir_program *p;
  xir_shape s;
  xir_diag d;
  if (xir_program_parse(src, strlen(src), "pressure", &p, &d) || xir_shape_parse(p, spec, &s, &d))
    die(&d);
  uint8_t perm[1] = {0};
  xir_candidate c;
  xir_execution_work w;
  if (xir_candidate_make(p, &s, W, l, l, perm, &c, &d) ||
      xir_execution_work_make(p, &s, &c, UINT32_MAX, 1, &w, &d))
    die(&d);
  double rows = (double)s.dims[0];
  xir_program_free(p);
  return w.arith_per_packet * (double)w.packets / rows;
}

static void test_register_pressure(void **state) {
  (void)state;
  static const char *src[2] = {
      /* siblings: both sums, then the store */
      "kernel g[R, C](x: f32[R, C], y: out f32[R, C], s: out f32[R])\nroot r in R {\n"
      "  v = load x[r, :]\n  m = reduce.sum(v, C)\n  d = sub(v, m)\n  a = reduce.sum(d, C)\n"
      "  b = reduce.sum(mul(d, d), C)\n  store y[r, :] = d\n  store s[r] = add(a, b)\n}\n",
      /* the store first: the second sum has a loop of its own */
      "kernel h[R, C](x: f32[R, C], y: out f32[R, C], s: out f32[R])\nroot r in R {\n"
      "  v = load x[r, :]\n  m = reduce.sum(v, C)\n  d = sub(v, m)\n  a = reduce.sum(d, C)\n"
      "  store y[r, :] = d\n  b = reduce.sum(mul(d, d), C)\n  store s[r] = add(a, b)\n}\n"};
  struct { unsigned W, l; double spill; } cases[] = {
      {8, 64, 2 * (2 * 8 + 3 - 16)}, {8, 32, 0}, {16, 128, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double g = text_arith_per_row(src[0], "R=4,C=1536", cases[i].W, cases[i].l);
    double h = text_arith_per_row(src[1], "R=4,C=1536", cases[i].W, cases[i].l);
    /* the sibling loop's iterations a row: 1536 / ℓ */
    assert_true(fabs(g - h - cases[i].spill * 1536.0 / cases[i].l) < 1e-6);
  }
  /* a vector-math store loop: k bodies of 5 live vectors and 12 constants. A row of 1024: from
   * ℓ = W to 2W the loop runs half the iterations (2 ops each: 128 fewer at W = 8, 64 at W = 16).
   * One packet an iteration keeps 17 vectors live, 1 past 16 registers; two keep 22, 6 past 16:
   * 128 x 1 -> 64 x 6 spill ops at W = 8, none at W = 16 (32 registers). */
  static const char *e = "kernel e[R, C](x: f32[R, C], y: out f32[R, C])\nroot r in R {\n"
                         "  store y[r, :] = exp(load x[r, :])\n}\n";
  double d8 = text_arith_per_row(e, "R=4,C=1024", 8, 16) - text_arith_per_row(e, "R=4,C=1024", 8, 8);
  double d16 =
      text_arith_per_row(e, "R=4,C=1024", 16, 32) - text_arith_per_row(e, "R=4,C=1024", 16, 16);
  assert_true(fabs(d8 - (-128 + (64 * 6 - 128 * 1))) < 1e-9);
  assert_true(fabs(d16 - (-64)) < 1e-9);
}

static int dim_named(const xir_program *p, const char *name) {
  for (int i = 0; i < p->ndims; i++)
    if (!strcmp(p->dims[i], name)) return i;
  fail_msg("no dim '%s'", name);
  return -1;
}

/* The two causal kernels' masks: softmax_causal's `iota(C) > r` ends at r + 1; attention_causal's
 * `iota(K) > i + (K - Q)` at i + K − Q + 1; both fill −inf and keep the other operand live. */
static void test_prefix_mask_of_causal_kernels(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("softmax_causal", "R=5,C=7", &s);
  int z = node_named(p, "z");
  xir__prefix_mask m;
  assert_true(xir__prefix_mask_of(p, z, &m));
  assert_int_equal(m.axis_dim, dim_named(p, "C"));
  assert_int_equal(m.c0, 1);
  assert_int_equal(m.root_coef[0], 1);
  for (int d = 0; d < XIR_MAX_DIMS; d++) assert_int_equal(m.dim_coef[d], 0);
  assert_true(isinf(m.fill) && m.fill < 0);
  assert_int_equal(m.live, p->nodes[z].args[2]);
  assert_int_equal(p->nodes[m.live].op, XIR_OP_MUL);
  int64_t root[XIR_MAX_ROOT] = {3};
  assert_int_equal(xir__prefix_mask_end(&m, root, s.dims, 7), 4);
  root[0] = 6;
  assert_int_equal(xir__prefix_mask_end(&m, root, s.dims, 7), 7); /* clamped to the extent */
  for (int i = 0; i < p->nnodes; i++) /* nothing else is a mask */
    if (i != z) assert_false(xir__prefix_mask_of(p, i, &m));
  xir_program_free(p);

  p = load("attention_causal", "B=1,HQ=2,HKV=1,Q=3,K=8,D=4,DV=4", &s);
  int sm = node_named(p, "s");
  assert_true(xir__prefix_mask_of(p, sm, &m));
  assert_int_equal(m.axis_dim, dim_named(p, "K"));
  assert_int_equal(m.c0, 1);
  assert_int_equal(m.root_coef[0], 0);
  assert_int_equal(m.root_coef[1], 0);
  assert_int_equal(m.root_coef[2], 1);
  assert_int_equal(m.dim_coef[dim_named(p, "K")], 1);
  assert_int_equal(m.dim_coef[dim_named(p, "Q")], -1);
  assert_int_equal(m.dim_coef[dim_named(p, "D")], 0);
  assert_int_equal(m.live, node_named(p, "s0"));
  int64_t rt[XIR_MAX_ROOT] = {0, 1, 0};
  assert_int_equal(xir__prefix_mask_end(&m, rt, s.dims, 8), 6); /* 0 + 8 − 3 + 1 */
  xir_program_free(p);
  /* Q > K: the first queries see no key (end clamped to 0) */
  p = load("attention_causal", "B=1,HQ=1,HKV=1,Q=6,K=2,D=4,DV=4", &s);
  assert_true(xir__prefix_mask_of(p, node_named(p, "s"), &m));
  assert_int_equal(xir__prefix_mask_end(&m, rt, s.dims, 2), 0); /* 0 + 2 − 6 + 1 < 0 */
  rt[2] = 5;
  assert_int_equal(xir__prefix_mask_end(&m, rt, s.dims, 2), 2);
  xir_program_free(p);
}

/* Every recognised spelling, with the end it gives at r = 2 (C = 10, R = 4), checked against the
 * positions where the select's condition picks the fill (evaluated here by hand). */
static void test_prefix_mask_forms(void **state) {
  (void)state;
  static const struct {
    const char *expr;
    int64_t end_at_2; /* r = 2 */
  } forms[] = {
      {"select(c > r, -inf, t)", 3},
      {"select(c >= r, -inf, t)", 2},
      {"select(r < c, -inf, t)", 3},
      {"select(r <= c, -inf, t)", 2},
      {"select(c <= r, t, -inf)", 3},
      {"select(c < r + 2, t, -inf)", 4},
      {"select(r + 3 >= c, t, -inf)", 6},
      {"select(r + 3 > c, t, -inf)", 5},
      {"select(!(c > r), t, -inf)", 3},
      {"select(!(c <= r), -inf, t)", 3},
      {"select(c - r > 1, 0.0, t)", 4},
      {"select(2 * r - C + 9 < c, -inf, t)", 4},   /* 2·2 − 10 + 9 = 3 < c */
      {"select(-c < -r, -inf, t)", 3},             /* c > r */
      {"select(c + (R - 1) * 2 > r * 3 + 1, -inf, t)", 2}, /* c > 3r + 1 − 6 = 1 */
  };
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
    char text[512];
    snprintf(text, sizeof text,
             "kernel k[R, C](x: f32[R, C], y: out f32[R, C])\n"
             "root r in R {\n"
             "  c = iota(C)\n"
             "  t = load x[r, :]\n"
             "  z = %s\n"
             "  store y[r, :] = z\n"
             "}\n",
             forms[f].expr);
    xir_program *p;
    xir_diag d;
    if (xir_program_parse(text, strlen(text), "k.xir", &p, &d)) die(&d);
    xir_shape s;
    if (xir_shape_parse(p, "R=4,C=10", &s, &d)) die(&d);
    xir__prefix_mask m;
    int ok = xir__prefix_mask_of(p, node_named(p, "z"), &m);
    if (!ok) fail_msg("not recognised: %s", forms[f].expr);
    assert_int_equal(m.axis_dim, 1);
    assert_int_equal(m.live, node_named(p, "t"));
    int64_t root[XIR_MAX_ROOT] = {2};
    int64_t e = xir__prefix_mask_end(&m, root, s.dims, 10);
    if (e != forms[f].end_at_2) fail_msg("%s: end %lld, want %lld", forms[f].expr, (long long)e,
                                         (long long)forms[f].end_at_2);
    assert_true(f == 10 ? m.fill == 0.0 : isinf(m.fill) && m.fill < 0);
    xir_program_free(p);
  }
}

/* What must not be a prefix mask: a non-affine bound (r·r, r / 2, a loaded index), a multiple of
 * iota, an equality, a masked operand that is not a constant, and a "mask" on a root axis (no
 * tile axis: rank 0) or on an iota of another axis than the tile's. */
static void test_prefix_mask_rejects(void **state) {
  (void)state;
  static const char *bad[] = {
      "select(c > r * r, -inf, t)",
      "select(c > r / 2, -inf, t)",
      "select(c > load n[r], -inf, t)",
      "select(2 * c > r, -inf, t)",
      "select(c > c - r, -inf, t)",
      "select(c == r, -inf, t)",
      "select(c != r, -inf, t)",
      "select(c > r, t, -inf)",     /* the masked (suffix) operand is t */
      "select(c <= r, -inf, t)",    /* the same: the suffix is the else operand */
      "select(c > r, t * 0.0, t)",  /* not a constant */
      "select(c > r, load x[r, 0], t)",
      "select((c > r) && (c > 3), -inf, t)",
      "select(f32(c) > f32(r), -inf, t)",
      "select(c > r * 100000, -inf, t)",             /* a coefficient above 2^16 */
      "select(c > r + 4000000000000000000, -inf, t)", /* a bound that could wrap */
  };
  for (size_t f = 0; f < sizeof bad / sizeof bad[0]; f++) {
    char text[512];
    snprintf(text, sizeof text,
             "kernel k[R, C](x: f32[R, C], n: i64[R], y: out f32[R, C])\n"
             "root r in R {\n"
             "  c = iota(C)\n"
             "  t = load x[r, :]\n"
             "  z = %s\n"
             "  store y[r, :] = z\n"
             "}\n",
             bad[f]);
    xir_program *p;
    xir_diag d;
    if (xir_program_parse(text, strlen(text), "k.xir", &p, &d)) die(&d);
    xir__prefix_mask m;
    if (xir__prefix_mask_of(p, node_named(p, "z"), &m)) fail_msg("recognised: %s", bad[f]);
    xir_program_free(p);
  }
  /* a comparison of root indices: no tile axis */
  const char *elem =
      "kernel k[R, C](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R, c in C {\n"
      "  z = select(c > r, -inf, load x[r, c])\n"
      "  store y[r, c] = z\n"
      "}\n";
  /* an iota of an axis the tile does not have: w is a [C] tile masked along D */
  const char *other =
      "kernel k[R, C, D](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n"
      "  m = reduce.max(select(iota(D) > r, -inf, 1.0))\n"
      "  z = select(r > 2, -inf, load x[r, :] + m)\n"
      "  store y[r, :] = z\n"
      "}\n";
  const char *texts[2] = {elem, other};
  for (int i = 0; i < 2; i++) {
    xir_program *p;
    xir_diag d;
    if (xir_program_parse(texts[i], strlen(texts[i]), "k.xir", &p, &d)) die(&d);
    xir__prefix_mask m;
    assert_false(xir__prefix_mask_of(p, node_named(p, "z"), &m));
    xir_program_free(p);
  }
}

static xir_execution_work work_of(const xir_program *p, const xir_shape *s, uint32_t W,
                                   uint32_t B, uint32_t l, uint32_t G, uint32_t H) {
  uint8_t perm[XIR_MAX_ROOT] = {0, 1, 2, 3};
  xir_candidate c;
  xir_execution_work w;
  xir_diag d;
  if (xir_candidate_make(p, s, W, B, l, perm, &c, &d) ||
      xir_execution_work_make(p, s, &c, G, H, &w, &d))
    die(&d);
  return w;
}

/* The triangle's counts, exactly: softmax_causal R=40, C=64 (row r has r + 1 live columns).
 * ℓ = 16 (one row a unit): Σ ceil((r+1)/16) = 16·1 + 16·2 + 8·3 = 72 chunks of 160; with G = 8
 * (5 tasks of 8 rows, round-robin on 2 workers) worker 0 has rows 0-7, 16-23, 32-39: 8 + 16 + 24
 * = 48 live chunks, worker 1 24 — its 24 packets carry more than 24 packets of average work,
 * while with G = 1 (alternate rows) both hold 36 and the work is nearly balanced. ℓ = 1 (16 rows a
 * packet, the loop runs to the packet's largest end): 16 + 32 + 40 = 88 of 3·64. ℓ = 4 (4 rows
 * a packet): Σ_j (j + 1) = 55 chunks of 10·16. ℓ = 32 multi-packet at R = 100 > C: 32·1 + 31·2
 * + 37·2 = 168 of 200. A kernel without a mask has no mask counts. */
static void test_mask_work_counts(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("softmax_causal", "R=40,C=64", &s);
  xir_execution_work w = work_of(p, &s, 16, 16, 16, 8, 2);
  assert_int_equal(w.grain_used, 8);
  assert_int_equal(w.tasks, 5);
  assert_int_equal(w.mask_live_iterations, 72);
  assert_int_equal(w.mask_full_iterations, 160);
  assert_int_equal(w.mask_critical_live_iterations, 48);
  assert_int_equal(w.critical_packets, 24);
  assert_true(w.critical_arith_packets > 24.5 && w.critical_memory_packets > 24.5);
  xir_execution_work w1 = work_of(p, &s, 16, 16, 16, 1, 2);
  assert_int_equal(w1.mask_critical_live_iterations, 36);
  /* (the even rows have fewer chunks that are live in every lane, which cost a little more) */
  assert_true(w1.critical_arith_packets >= 20 && w1.critical_arith_packets < 20.2);
  assert_true(w1.critical_memory_packets >= 20 && w1.critical_memory_packets < 20.2);
  /* the average packet: less work than the full rows */
  xir_execution_work wl1 = work_of(p, &s, 16, 16, 1, 1, 2);
  assert_int_equal(wl1.mask_live_iterations, 88);
  assert_int_equal(wl1.mask_full_iterations, 192);
  assert_int_equal(wl1.mask_critical_live_iterations, 56); /* blocks 0 and 2 on worker 0 */
  /* the skipped reductions' chains are their live steps: 72 over 40 rows, max and sum alike */
  assert_true(fabs(w.steps_per_packet[1] - 72.0 / 40) < 1e-12);
  assert_true(fabs(w.steps_per_packet[0] - 72.0 / 40) < 1e-12);
  xir_execution_work w4 = work_of(p, &s, 16, 16, 4, 1, 1);
  assert_int_equal(w4.mask_live_iterations, 55);
  assert_int_equal(w4.mask_full_iterations, 160);
  assert_int_equal(w4.mask_critical_live_iterations, 55); /* one worker */
  xir_program_free(p);
  p = load("softmax_causal", "R=100,C=64", &s);
  xir_execution_work w32 = work_of(p, &s, 16, 32, 32, 1, 1);
  assert_int_equal(w32.mask_live_iterations, 168);
  assert_int_equal(w32.mask_full_iterations, 200);
  assert_true(fabs(w32.steps_per_packet[1] - 168.0 / 100 / 2) < 1e-12); /* 2 packets share a chain */
  xir_program_free(p);
  p = load("softmax_mask", "R=40,C=64", &s);
  xir_execution_work wm = work_of(p, &s, 16, 16, 16, 8, 2);
  assert_int_equal(wm.mask_live_iterations, 0);
  assert_true(wm.critical_arith_packets == (double)wm.critical_packets);
  xir_program_free(p);
}

/* Skipping shows in the priors: a causal row costs less than the same row of softmax_mask, and
 * the grain choice sees the triangle — at 1024×4096 two tasks (rows 0-511 on one worker, the
 * heavy 512-1023 on the other) pay an imbalance term, alternating blocks do not. */
static void test_mask_work_priors_and_imbalance(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("softmax_causal", "R=1024,C=4096", &s), *q = load("softmax_mask", "R=1024,C=4096", &s);
  xir_execution_work wc = work_of(p, &s, 16, 128, 32, 1, 2), wm = work_of(q, &s, 16, 128, 32, 1, 2);
  assert_true(wc.arith_per_packet < 0.3 * wm.arith_per_packet);
  assert_true(wc.memory_per_packet < 0.8 * wm.memory_per_packet); /* the zeros are still written */
  xir_execution_work halves = work_of(p, &s, 16, 128, 32, 128, 2);
  assert_int_equal(halves.tasks, 2);
  xir_cost_coefficients k;
  xir_cost_coefficients_default(&k);
  xir_cost_terms t1, t2;
  xir_diag d;
  if (xir_cost_evaluate(NULL, &wc, &k, &t1, &d) || xir_cost_evaluate(NULL, &halves, &k, &t2, &d)) die(&d);
  assert_true(t1.term[XIR_TERM_IMBALANCE] < 1e-3 * t1.total);
  assert_true(t2.term[XIR_TERM_IMBALANCE] > 0.2 * t2.term[XIR_TERM_ARITH]);
  /* 74% of the live chunks; the zero-fill iterations (stores and their loop) are the same on both */
  assert_true(halves.critical_arith_packets > 1.25 * (double)halves.critical_packets);
  xir_program_free(p);
  xir_program_free(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rope_frequencies_are_hoisted_and_periodic),
      cmocka_unit_test(test_half_weight_hoist_budget),
      cmocka_unit_test(test_period_rules),
      cmocka_unit_test(test_chunk_invariant_work_is_charged_once),
      cmocka_unit_test(test_contiguous_packets_across_rows),
      cmocka_unit_test(test_window_accesses),
      cmocka_unit_test(test_short_rows_work),
      cmocka_unit_test(test_slices_are_not_window_loads),
      cmocka_unit_test(test_near_bytes),
      cmocka_unit_test(test_byte_rate),
      cmocka_unit_test(test_math_part),
      cmocka_unit_test(test_rank0_once_per_unit),
      cmocka_unit_test(test_row_groups_in_the_work),
      cmocka_unit_test(test_reduction_chain_steps),
      cmocka_unit_test(test_register_pressure),
      cmocka_unit_test(test_window_load_falls_back_when_clamped),
      cmocka_unit_test(test_local_pattern_fraction),
      cmocka_unit_test(test_alias_scopes_follow_the_contract),
      cmocka_unit_test(test_window_load_without_check),
      cmocka_unit_test(test_window_load_local_pattern),
      cmocka_unit_test(test_window_split),
      cmocka_unit_test(test_period_buffers),
      cmocka_unit_test(test_period_buffer_custom_kernel),
      cmocka_unit_test(test_period_buffer_window_fill),
      cmocka_unit_test(test_period_buffers_share_a_loop),
      cmocka_unit_test(test_window_offsets_unclamped),
      cmocka_unit_test(test_affine_divmod_floor),
      cmocka_unit_test(test_prefix_mask_of_causal_kernels),
      cmocka_unit_test(test_prefix_mask_forms),
      cmocka_unit_test(test_prefix_mask_rejects),
      cmocka_unit_test(test_mask_work_counts),
      cmocka_unit_test(test_mask_work_priors_and_imbalance),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_attn.c — the attention mapping (docs/lowering.md, "The attention mapping"): every
 * candidate kind compiled and checked against the fp64 oracle with sentinels on small odd shapes
 * (Q, K, D, DV not multiples of 16, more than one key block, HQ/HKV = 1, 2, 4, 3), the results
 * independent of how the tiles are split into calls (the grain), legality and its messages, the
 * stable names, and the execution work's counts. Launch-time K: a kernel compiled at one K and
 * run at a K that ends mid-block with K and V ending at a guard page (no read past key K − 1),
 * and decode compiled once for K = 4096, 4097, 4100 through the session. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "check/check.h"
#include "xir_compile.h"
#include "xir_plan.h"
#include "xir_session.h"

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

static const char *kShapes[] = {
    "B=1,HQ=4,HKV=2,Q=5,K=7,D=3,DV=5",        /* HQ/HKV = 2, everything tiny and odd */
    "B=2,HQ=4,HKV=1,Q=13,K=70,D=17,DV=19",    /* HQ/HKV = 4, two key blocks, D, DV ragged */
    "B=1,HQ=3,HKV=3,Q=9,K=129,D=20,DV=33",    /* HQ/HKV = 1, three key blocks */
    "B=1,HQ=6,HKV=2,Q=1,K=67,D=24,DV=8",      /* HQ/HKV = 3 (not a power of two), one query */
};

/* Every attention-mapping candidate of kernel × spec at the compiler's width: the whole output
 * matches the oracle, sentinels intact; the tiles run as one call and as three calls give the
 * same bits. Returns the number of candidates. */
static const char *kCausalShapes[] = {
    "B=1,HQ=4,HKV=2,Q=9,K=5,D=3,DV=5",        /* Q > K: the first rows see no key (zeros) */
    "B=2,HQ=4,HKV=1,Q=70,K=130,D=17,DV=19",   /* three key blocks, the last tiles skip none */
    "B=1,HQ=3,HKV=3,Q=33,K=33,D=20,DV=33",    /* Q = K: the triangle */
    "B=1,HQ=6,HKV=2,Q=1,K=67,D=24,DV=8",      /* one query sees every key */
};

/* Non-finite inputs (special = 1, for shapes with B ≥ 2, HQ ≥ 4, Q ≥ 8, K ≥ 67, D ≥ 3, DV ≥ 4):
 * a NaN in one q row (every score of that row NaN), +inf in another (±inf scores: the row's max
 * is +inf and exp(inf − inf) NaN), −inf in one K row (its scores ±inf for every row of that K/V
 * head, in the second key block) and +inf in one V row (an infinite column). The oracle's
 * output then holds NaN, ±inf and finite rows; the compare matches NaN with NaN. */
static void put_special(xir_case *c, const xir_program *p, const xir_shape *s) {
  const int64_t *D = s->dims; /* [B, HQ, HKV, Q, K, D, DV] */
  int64_t HQ = D[1], HKV = D[2], Q = D[3], K = D[4], Dd = D[5], DV = D[6];
  float *q = c->data[xir_program_find_param(p, "q")], *k = c->data[xir_program_find_param(p, "k")];
  float *v = c->data[xir_program_find_param(p, "v")];
  q[((1 * HQ + 2) * Q + 4) * Dd + 0] = NAN;
  q[((1 * HQ + 1) * Q + 7) * Dd + 2] = INFINITY;
  k[((1 * HKV + 0) * K + 66) * Dd + 1] = -INFINITY;
  v[((0 * HKV + 0) * K + 10) * DV + 3] = INFINITY;
}

static size_t check_shape_special(xir_compiler *cc, const char *kernel, const char *spec, int special) {
  xir_program *p = load(kernel);
  xir_shape s = shape_of(p, spec);
  xir_diag d;
  xir_case c;
  if (xir__case_init(&c, p, &s, 77, &d)) die(&d);
  if (special) put_special(&c, p, &s);
  if (xir__case_oracle(&c, &d)) die(&d);
  int out = -1;
  for (int i = 0; i < xir_program_num_params(p); i++)
    if (c.ref[i]) out = i;
  if (special) { /* the oracle's output has NaN, infinite and finite elements */
    size_t nan = 0, inf = 0, fin = 0;
    for (size_t e = 0; e < c.numel[out]; e++) {
      double x = c.ref[out][e];
      nan += isnan(x) != 0;
      inf += isinf(x) != 0;
      fin += isfinite(x) != 0;
    }
    assert_true(nan > 0 && inf > 0 && fin > 0);
  }
  size_t bytes = c.numel[out] * sizeof(float);
  float *first = malloc(bytes);
  assert_non_null(first);
  xir_candidate *cands;
  size_t n, seen = 0, kinds[3] = {0};
  if (xir_candidates(p, &s, xir_compiler_width(cc), &cands, &n, &d)) die(&d);
  for (size_t i = 0; i < n; i++) {
    if (!cands[i].attn_vec) continue;
    seen++;
    kinds[cands[i].attn_vec]++;
    char name[160];
    xir_candidate_name(p, &cands[i], name, sizeof name);
    const xir_kernel *k;
    if (xir_compile(cc, p, &s, &cands[i], &k, &d)) die(&d);
    uint64_t L = xir_kernel_blocks(k);
    assert_int_equal(L, cands[i].blocks);
    for (int split = 0; split < 2; split++) {
      xir__case_reset_outputs(&c);
      uint64_t slots[XIR_MAX_ARG_SLOTS];
      if (xir_kernel_pack_args(k, c.args, slots, &d)) die(&d);
      if (!split) {
        assert_int_equal(xir_kernel_entry(k)(slots, 0, L), 0);
      } else { /* three calls, as three tasks of a grain would run them */
        uint64_t a = L / 3, b = L - L / 4;
        xir_kernel_entry(k)(slots, 0, a);
        xir_kernel_entry(k)(slots, a, b);
        xir_kernel_entry(k)(slots, b, L);
      }
      if (!xir__case_sentinels_ok(&c)) fail_msg("%s %s %s: a sentinel was overwritten", kernel, spec, name);
      xir_compare r = xir__case_compare(&c, out, xir__kernel_tolerance(kernel));
      if (!r.pass)
        fail_msg("%s %s %s: %zu of %zu elements out of tolerance (%zu NaN); first at %zu: got "
                 "%.9g, oracle %.9g", kernel, spec, name, r.bad, r.n, r.nan, r.first_bad,
                 (double)c.data[out][r.first_bad], c.ref[out][r.first_bad]);
      if (!split) memcpy(first, c.data[out], bytes);
      else if (memcmp(first, c.data[out], bytes) != 0)
        fail_msg("%s %s %s: splitting the tiles into calls changed the output bits", kernel, spec, name);
    }
  }
  /* both vectorizations are offered at every shape */
  assert_true(kinds[XIR_ATTN_VEC_Q] > 0);
  assert_true(kinds[XIR_ATTN_VEC_D] > 0);
  xir_free(cands);
  free(first);
  xir__case_free(&c);
  xir_program_free(p);
  return seen;
}

static size_t check_shape(xir_compiler *cc, const char *kernel, const char *spec) {
  return check_shape_special(cc, kernel, spec, 0);
}

static void run_widths(const char *kernel, const char **shapes, size_t ns) {
  uint32_t widths[] = {0, 8, 4, 1}, host_w = 0;
  for (size_t w = 0; w < 4; w++) {
    if (w > 0 && widths[w] == host_w) continue; /* the host's width ran as width 0 */
    xir_compiler_options o = {.force_width = widths[w]};
    xir_compiler *cc;
    xir_diag d;
    if (xir_compiler_create(&o, &cc, &d)) {
      if (widths[w]) continue; /* a width this host cannot run */
      die(&d);
    }
    if (w == 0) host_w = xir_compiler_width(cc);
    size_t total = 0;
    /* the narrow widths: the first two shapes only (seconds, not minutes) */
    for (size_t i = 0; i < (w >= 2 ? 2 : ns); i++) total += check_shape(cc, kernel, shapes[i]);
    printf("# %s W=%u: %zu attention-mapping candidates checked\n", kernel, xir_compiler_width(cc), total);
    assert_true(total > 0);
    xir_compiler_destroy(cc);
  }
}

static void test_attention_candidates_match_oracle(void **state) {
  (void)state;
  run_widths("attention", kShapes, sizeof kShapes / sizeof *kShapes);
}

static void test_attention_causal_candidates_match_oracle(void **state) {
  (void)state;
  run_widths("attention_causal", kCausalShapes, sizeof kCausalShapes / sizeof *kCausalShapes);
}

/* Every candidate of both kernels with NaN and infinities in q, k and v (put_special), at the
 * compiler's width: the same NaN, ±inf and finite elements as the oracle. */
static void test_attention_special_values(void **state) {
  (void)state;
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  const char *spec = "B=2,HQ=4,HKV=2,Q=9,K=70,D=5,DV=6";
  assert_true(check_shape_special(cc, "attention", spec, 1) > 0);
  assert_true(check_shape_special(cc, "attention_causal", spec, 1) > 0);
  xir_compiler_destroy(cc);
}

/* Legality: the rules and their messages; the mapping is not offered to other programs. */
static void test_attention_legality(void **state) {
  (void)state;
  xir_program *p = load("attention");
  xir_shape s = shape_of(p, "B=1,HQ=8,HKV=2,Q=40,K=9,D=8,DV=8");
  xir_candidate c;
  xir_diag d;
  assert_int_equal(xir_candidate_make_attn(p, &s, 16, XIR_ATTN_VEC_Q, 8, 4, &c, &d), XIR_OK);
  assert_int_equal(c.blocks, 1u * (8 / 4) * 5);
  assert_int_equal(c.packets, c.blocks);
  assert_int_equal(c.B, 16);
  assert_int_equal(c.local, 1);
  assert_int_equal(xir_candidate_make_attn(p, &s, 16, XIR_ATTN_VEC_Q, 8, 3, &c, &d), XIR_ERR_NOT_FOUND);
  assert_non_null(strstr(d.msg, "share one K/V head"));
  assert_int_equal(xir_candidate_make_attn(p, &s, 16, XIR_ATTN_VEC_Q, 16, 4, &c, &d), XIR_ERR_NOT_FOUND);
  assert_non_null(strstr(d.msg, "two packets"));
  assert_int_equal(xir_candidate_make_attn(p, &s, 16, XIR_ATTN_VEC_D, 8, 4, &c, &d), XIR_ERR_NOT_FOUND);
  assert_non_null(strstr(d.msg, "one packet"));
  assert_int_equal(xir_candidate_make_attn(p, &s, 16, XIR_ATTN_VEC_Q, 3, 1, &c, &d), XIR_ERR_INVALID_ARG);
  /* names round-trip, and a name with a wrong perm is refused */
  assert_int_equal(xir_candidate_make_attn(p, &s, 16, XIR_ATTN_VEC_D, 4, 2, &c, &d), XIR_OK);
  char name[160];
  xir_candidate_name(p, &c, name, sizeof name);
  assert_string_equal(name, "perm=b.h.i,l=1,B=16,W=16,vec=d,qb=4,hb=2");
  xir_candidate back;
  if (xir_candidate_parse(p, &s, name, 16, &back, &d)) die(&d);
  assert_memory_equal(&back, &c, sizeof c);
  assert_int_not_equal(xir_candidate_parse(p, &s, "perm=h.b.i,l=1,B=16,W=16,vec=d,qb=4,hb=2", 16,
                                           &back, &d), XIR_OK);
  assert_int_not_equal(xir_candidate_parse(p, &s, "perm=b.h.i,l=1,B=16,W=16,vec=x,qb=4,hb=2", 16,
                                           &back, &d), XIR_OK);
  xir_program_free(p);
  /* other programs: no attention-mapping candidate, and a readable refusal */
  p = load("softmax_mask");
  s = shape_of(p, "R=4,C=8");
  assert_int_equal(xir_candidate_make_attn(p, &s, 16, XIR_ATTN_VEC_Q, 1, 1, &c, &d), XIR_ERR_NOT_FOUND);
  assert_non_null(strstr(d.msg, "attention chain"));
  xir_candidate *all;
  size_t n;
  if (xir_candidates(p, &s, 16, &all, &n, &d)) die(&d);
  for (size_t i = 0; i < n; i++) assert_int_equal(all[i].attn_vec, 0);
  xir_free(all);
  xir_program_free(p);
  /* a program that does more than attention keeps the general lowering */
  const char *text =
      "kernel att2[B, HQ, HKV, Q, K, D, DV](q: f32[B, HQ, Q, D], k: f32[B, HKV, K, D],\n"
      "    v: f32[B, HKV, K, DV], o: out f32[B, HQ, Q, DV])\n"
      "root b in B, h in HQ, i in Q {\n"
      "  g = h / (HQ / HKV)\n"
      "  s = reduce.sum(load k[b, g, :, :] * load q[b, h, i, :], D) * 0.5\n"
      "  m = reduce.max(s)\n"
      "  p = exp(s - select(m == -inf, 0.0, m))\n"
      "  l = reduce.sum(p)\n"
      "  acc = reduce.sum(p * load v[b, g, :, :], K)\n"
      "  store o[b, h, i, :] = select(l == 0.0, 0.0, acc / l) + 1.0\n"
      "}\n";
  if (xir_program_parse(text, strlen(text), "att2", &p, &d)) die(&d);
  s = shape_of(p, "B=1,HQ=2,HKV=1,Q=3,K=4,D=5,DV=6");
  assert_int_equal(xir_candidate_make_attn(p, &s, 16, XIR_ATTN_VEC_Q, 1, 1, &c, &d), XIR_ERR_NOT_FOUND);
  xir_program_free(p);
}

static xir_execution_work work_of(const xir_program *p, const xir_shape *s, uint32_t vec,
                                  uint32_t qb, uint32_t hb, uint32_t grain) {
  xir_candidate c;
  xir_execution_work w;
  xir_diag d;
  if (xir_candidate_make_attn(p, s, 16, vec, qb, hb, &c, &d)) die(&d);
  if (xir_execution_work_make(p, s, &c, grain, 2, &w, &d)) die(&d);
  return w;
}

/* The execution work of the attention mapping: its counts, its bytes (K and V once per tile, so
 * once per K/V head when a tile holds the whole group), and a hand count of the arithmetic. */
static void test_attention_work_counts(void **state) {
  (void)state;
  xir_program *p = load("attention");
  /* decode: B1 HQ32 HKV8 Q1 K4096 D128 DV128 with the 4 heads of a group in one tile */
  xir_shape s = shape_of(p, "B=1,HQ=32,HKV=8,Q=1,K=4096,D=128,DV=128");
  xir_execution_work w = work_of(p, &s, XIR_ATTN_VEC_D, 1, 4, 1);
  assert_int_equal(w.packets, 8);
  assert_int_equal(w.blocks, 8);
  assert_int_equal(w.tasks, 8);
  assert_int_equal(w.critical_packets, 4);
  double total = w.memory_per_packet * (double)w.packets;
  assert_true(total == 4.0 * (8.0 * 4096 * 256 + 32.0 * 256)); /* K, V once per K/V head */
  xir_execution_work w1 = work_of(p, &s, XIR_ATTN_VEC_D, 1, 1, 1);
  assert_int_equal(w1.packets, 32);
  assert_true(w1.memory_per_packet * 32 > 3.9 * total); /* one head a tile: K, V read 4 times */
  /* ragged query blocks: ceil(Q / qb) per head block */
  s = shape_of(p, "B=2,HQ=4,HKV=2,Q=13,K=70,D=17,DV=19");
  w = work_of(p, &s, XIR_ATTN_VEC_Q, 4, 2, 0);
  assert_int_equal(w.packets, 2u * 2 * 4);
  assert_true(w.memory_per_packet == 4.0 * (70.0 * 36 + 8.0 * 36));
  /* a hand count: W = 16, vec q, one row, D = DV = K = 1 (lower_attn.c, work_attn.c):
   * q·kᵀ 1·(1 + 16 + 16) + 2·16 = 65, the K rows 16 keys ahead prefetched 16·(1 + 1) = 32 and
   * the block's max over the 16 key slots 16; softmax 5 + 14 + (4 + 14) + 6 = 43; p·v 1·3 +
   * max(1·(1 + 1 + 1 + 2), 8) + 1 = 12 (its V prefetch: an address and a line); the tile: q
   * transposed 1·(1 + 16·4) + 1 = 66, 2 + 1 (state), 1·(2 + 7) (output) = 78 */
  s = shape_of(p, "B=1,HQ=1,HKV=1,Q=1,K=1,D=1,DV=1");
  w = work_of(p, &s, XIR_ATTN_VEC_Q, 1, 1, 0);
  assert_true(w.arith_per_packet == 246);
  assert_true(w.math_per_packet == 14 * 2 + 4);
  /* vec d, the same shape: q·kᵀ 1·(16 + 1 + 16) = 33, the tree 3·15 + 2 (order, ·sc) + 3 (dead
   * lanes) + 1 (store) = 51, the prefetches 32, the running max 1; softmax over one packed
   * vector with 4 folds 4·4 + 5 + 14 + (4 + 14) + 6 = 59; p·v 12; the tile 2 + 1 (state) + 9
   * (output) = 12 */
  w = work_of(p, &s, XIR_ATTN_VEC_D, 1, 1, 0);
  assert_true(w.arith_per_packet == 200);
  assert_true(w.math_per_packet == 14 * 2 + 4);
  assert_true(w.memory_per_packet == 4.0 * (2 + 2));
  xir_program_free(p);
}

/* attention_causal: tile t runs the keys up to the largest end of its rows, so the work is a
 * triangle, and the longest home assignment is summed tile by tile. */
static void test_attention_causal_counts_the_triangle(void **state) {
  (void)state;
  xir_program *p = load("attention_causal");
  xir_shape s = shape_of(p, "B=1,HQ=1,HKV=1,Q=128,K=128,D=8,DV=8");
  xir_execution_work w = work_of(p, &s, XIR_ATTN_VEC_Q, 1, 1, 1);
  assert_int_equal(w.packets, 128);
  /* query i sees keys 0..i: 16 floats per key (K and V), 16 per row of q and o, and the V rows
   * of the other 127 − i keys once (0·v) */
  double tri = 4.0 * (16 * (128.0 * 129 / 2) + 128 * 16 + 8 * (127.0 * 128 / 2));
  assert_true(fabs(w.memory_per_packet * 128 - tri) <= 1e-9 * tri);
  /* G = 1 on 2 workers: worker 1 holds the odd queries, 2 + 4 + … + 128 = 4160 keys seen and
   * 126 + 124 + … + 0 = 4032 masked */
  double w1 = 4.0 * (16 * 4160 + 64 * 16 + 8 * 4032);
  assert_true(fabs(w.critical_memory_packets * w.memory_per_packet - w1) <= 1e-9 * w1);
  assert_true(w.critical_arith_packets > 64.0); /* the odd queries do more than half the work */
  /* the triangle halves the work of the non-causal kernel at Q = K */
  xir_program *pn = load("attention");
  s = shape_of(p, "B=1,HQ=32,HKV=8,Q=512,K=512,D=64,DV=64");
  xir_execution_work wc = work_of(p, &s, XIR_ATTN_VEC_Q, 8, 4, 0);
  xir_execution_work wn = work_of(pn, &s, XIR_ATTN_VEC_Q, 8, 4, 0);
  assert_true(wc.arith_per_packet < 0.6 * wn.arith_per_packet);
  assert_true(wc.arith_per_packet > 0.4 * wn.arith_per_packet);
  xir_program_free(pn);
  xir_program_free(p);
}

/* The cost policy ranks the mapping first where it is much cheaper (the large report shape). */
static void test_attention_mapping_is_chosen(void **state) {
  (void)state;
  xir_program *p = load("attention");
  xir_shape s = shape_of(p, "B=1,HQ=32,HKV=8,Q=128,K=512,D=64,DV=64");
  xir_plan_options o;
  xir_plan_options_base(&o);
  o.workers = 2;
  xir_plan *pl;
  xir_diag d;
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  assert_true(pl->count > 0);
  assert_true(pl->entries[0].cand.attn_vec != 0);
  xir_plan_free(pl);
  xir_program_free(p);
}

/* A copy of n floats that ends at a page boundary followed by an inaccessible page: any read past
 * the last element faults. *map / *len: the mapping, for munmap. */
static float *guarded(const float *src, size_t n, void **map, size_t *len) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = n * sizeof(float);
  size_t open = (bytes + page - 1) / page;
  *len = (open + 1) * page;
  *map = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(*map != MAP_FAILED);
  float *x = (float *)((uint8_t *)*map + open * page - bytes);
  memcpy(x, src, bytes);
  assert_int_equal(mprotect((uint8_t *)*map + open * page, page, PROT_NONE), 0);
  return x;
}

/* K is a launch-time dim: every attention-mapping candidate compiled at K = 100 runs at K = 67
 * (a full block and a tail of 3 keys) and K = 5 (a tail only) with K and V each ending at a guard
 * page, and matches the oracle with sentinels intact (attention and attention_causal, two
 * widths). */
static void test_attention_tail_stays_in_bounds(void **state) {
  (void)state;
  const char *kernels[] = {"attention", "attention_causal"};
  const char *specs[] = {"B=1,HQ=4,HKV=2,Q=3,K=67,D=16,DV=12", "B=2,HQ=4,HKV=2,Q=6,K=5,D=16,DV=12"};
  uint32_t widths[] = {0, 8}, host_w = 0;
  size_t ran = 0;
  for (int w = 0; w < 2; w++) {
    if (w > 0 && widths[w] == host_w) continue; /* the host's width ran as width 0 */
    xir_compiler_options o = {.force_width = widths[w]};
    xir_compiler *cc;
    xir_diag d;
    if (xir_compiler_create(&o, &cc, &d)) {
      if (widths[w]) continue;
      die(&d);
    }
    if (w == 0) host_w = xir_compiler_width(cc);
    for (int kk = 0; kk < 2; kk++) {
      xir_program *p = load(kernels[kk]);
      xir_shape s0 = shape_of(p, "B=1,HQ=4,HKV=2,Q=3,K=100,D=16,DV=12");
      xir_candidate *cands;
      size_t n;
      if (xir_candidates(p, &s0, xir_compiler_width(cc), &cands, &n, &d)) die(&d);
      for (int sp = 0; sp < 2; sp++) {
        xir_shape s = shape_of(p, specs[sp]);
        xir_case c;
        if (xir__case_init(&c, p, &s, 31, &d) || xir__case_oracle(&c, &d)) die(&d);
        int kp = xir_program_find_param(p, "k"), vp = xir_program_find_param(p, "v"),
            op = xir_program_find_param(p, "o");
        void *mk, *mv;
        size_t lk, lv;
        xir_arg a[XIR_MAX_PARAMS];
        memcpy(a, c.args, sizeof a);
        a[kp].in = guarded(c.data[kp], c.numel[kp], &mk, &lk);
        a[vp].in = guarded(c.data[vp], c.numel[vp], &mv, &lv);
        for (size_t i = 0; i < n; i++) {
          if (!cands[i].attn_vec) continue;
          const xir_kernel *k;
          if (xir_compile(cc, p, &s0, &cands[i], &k, &d)) die(&d);
          xir__case_reset_outputs(&c);
          uint64_t slots[XIR_MAX_ARG_SLOTS], blocks;
          if (xir_kernel_pack_launch(k, &s, a, slots, &blocks, &d)) die(&d);
          assert_int_equal(xir_kernel_entry(k)(slots, 0, blocks), 0);
          char name[160];
          xir_candidate_name(p, &cands[i], name, sizeof name);
          if (!xir__case_sentinels_ok(&c)) fail_msg("%s %s %s: a sentinel was overwritten", kernels[kk], specs[sp], name);
          xir_compare r = xir__case_compare(&c, op, xir__kernel_tolerance(kernels[kk]));
          if (!r.pass)
            fail_msg("%s compiled at K=100, %s, launched at %s: %zu of %zu elements out of "
                     "tolerance", kernels[kk], name, specs[sp], r.bad, r.n);
          ran++;
        }
        munmap(mk, lk);
        munmap(mv, lv);
        xir__case_free(&c);
      }
      xir_free(cands);
      xir_program_free(p);
    }
    xir_compiler_destroy(cc);
  }
  assert_true(ran > 8);
}

/* Decode (B1 HQ32 HKV8 Q1 D128 DV128) compiles once for every K: the session plans K = 4096,
 * 4097 and 4100, the planner picks the same attention-mapping candidate, and the compiler hands
 * back the same code (a reused kernel: cached, the same entry and object); the last one matches
 * the oracle. */
static void test_attention_decode_compiles_once(void **state) {
  (void)state;
  xir_session *ss;
  xir_diag d;
  if (xir_session_create(NULL, &ss, &d)) die(&d);
  const xir_program *p;
  if (xir_session_program(ss, "attention", &p, &d)) die(&d);
  const char *ks[] = {"4096", "4097", "4100"};
  const xir_prepared *pk[3];
  char first[160] = "";
  for (int i = 0; i < 3; i++) {
    char spec[128];
    snprintf(spec, sizeof spec, "B=1,HQ=32,HKV=8,Q=1,K=%s,D=128,DV=128", ks[i]);
    xir_shape s = shape_of(p, spec);
    if (xir_session_prepare(ss, p, &s, &pk[i], &d)) die(&d);
    const xir_candidate *c = &xir_prepared_plan(pk[i])->entries[0].cand;
    assert_int_not_equal(c->attn_vec, 0);
    char name[160];
    xir_candidate_name(p, c, name, sizeof name);
    if (i == 0) snprintf(first, sizeof first, "%s", name);
    else assert_string_equal(name, first);
    xir_kernel_info info, info0;
    xir_kernel_get_info(xir_prepared_kernel(pk[i]), &info);
    xir_kernel_get_info(xir_prepared_kernel(pk[0]), &info0);
    if (i > 0) {
      assert_int_equal(info.cached, 1); /* no lowering, no JIT: the K = 4096 kernel's code */
      assert_int_equal(info.jit_ms, 0);
      assert_ptr_equal(xir_kernel_entry(xir_prepared_kernel(pk[i])),
                       xir_kernel_entry(xir_prepared_kernel(pk[0])));
      assert_string_equal(info.obj_sha256, info0.obj_sha256);
    }
  }
  xir_session_stats st;
  xir_session_get_stats(ss, &st);
  assert_int_equal(st.misses, 3); /* three shapes planned ... */
  xir_case c;
  if (xir__case_init(&c, p, xir_prepared_shape(pk[2]), 5, &d) || xir__case_oracle(&c, &d)) die(&d);
  if (xir_session_launch(ss, pk[2], c.args, xir_program_num_params(p), &d)) die(&d);
  assert_true(xir__case_sentinels_ok(&c));
  xir_compare r = xir__case_compare(&c, xir_program_find_param(p, "o"), xir__kernel_tolerance("attention"));
  if (!r.pass) fail_msg("decode K=4100: %zu of %zu elements out of tolerance", r.bad, r.n);
  xir__case_free(&c);
  xir_session_destroy(ss);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attention_candidates_match_oracle),
      cmocka_unit_test(test_attention_causal_candidates_match_oracle),
      cmocka_unit_test(test_attention_causal_counts_the_triangle),
      cmocka_unit_test(test_attention_special_values),
      cmocka_unit_test(test_attention_legality),
      cmocka_unit_test(test_attention_work_counts),
      cmocka_unit_test(test_attention_mapping_is_chosen),
      cmocka_unit_test(test_attention_tail_stays_in_bounds),
      cmocka_unit_test(test_attention_decode_compiles_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

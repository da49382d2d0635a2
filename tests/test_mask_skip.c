/* test_mask_skip.c — masked work is skipped (docs/lowering.md, "Masked work"): programs whose
 * prefix masks bound their loops, every legal candidate at W = 16, 8 and the narrow widths,
 * against the fp64 oracle on the whole output with sentinels — including rows that are all
 * masked, masked values that are not the identity of their reduction (the run-time check sends
 * them over the whole row), a store that cannot be skipped, NaN and inf in the live part — and
 * the masked part of a row never read: the input ends in an inaccessible page right after the
 * live part of the last row. */
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

#include "testutil.h"
#include "check/check.h"
#include "ir/program.h"
#include "xir_compile.h"

static void die(const xir_diag *d) {
  char b[2048];
  fail_msg("%s", xir_diag_format(d, b, sizeof b));
}

/* softmax over the columns c <= r - 3: rows 0..2 are all masked (zero rows) */
static const char *kShifted =
    "kernel shifted[R, C](x: f32[R, C], y: out f32[R, C])\n"
    "root r in R {\n"
    "  z = select(iota(C) > r - 3, -inf, load x[r, :])\n"
    "  m = reduce.max(z)\n"
    "  e = exp(z - select(m == -inf, 0.0, m))\n"
    "  s = reduce.sum(e)\n"
    "  store y[r, :] = e * select(s == 0.0, 0.0, 1.0 / s)\n"
    "}\n";
/* the other spelling, fill 0 under a sum, an expensive live operand shared by two consumers */
static const char *kSumExp =
    "kernel sumexp[R, C](x: f32[R, C], y: out f32[R, C])\n"
    "root r in R {\n"
    "  t = select(r + 1 >= iota(C), exp(load x[r, :]), 0.0)\n"
    "  s = reduce.sum(t)\n"
    "  store y[r, :] = t * (1.0 / (s + 1.0))\n"
    "}\n";
/* masked values that are not the identity: max and sum run over the whole row; the store of
 * z·m + s is still skipped */
static const char *kNotNeutral =
    "kernel notneutral[R, C](x: f32[R, C], y: out f32[R, C])\n"
    "root r in R {\n"
    "  z = select(iota(C) > r, 0.5, load x[r, :])\n"
    "  m = reduce.max(z)\n"
    "  s = reduce.sum(z)\n"
    "  store y[r, :] = z * m + s\n"
    "}\n";
/* the max is skipped; the store adds another row and cannot be */
static const char *kMixed =
    "kernel mixed[R, C](x: f32[R, C], b: f32[R, C], y: out f32[R, C])\n"
    "root r in R {\n"
    "  z = select(iota(C) > r, -inf, load x[r, :])\n"
    "  m = reduce.max(z)\n"
    "  store y[r, :] = exp(z - select(m == -inf, 0.0, m)) + load b[r, :]\n"
    "}\n";
/* attention's form, with dims: row r sees c <= r + (C - R); for R > C the first rows see nothing */
static const char *kDims =
    "kernel dims[R, C](x: f32[R, C], y: out f32[R, C], scale: f32 = 0.5)\n"
    "root r in R {\n"
    "  z = select(iota(C) > r + (C - R), -inf, load x[r, :] * scale)\n"
    "  m = reduce.max(z)\n"
    "  e = exp(z - select(m == -inf, 0.0, m))\n"
    "  s = reduce.sum(e)\n"
    "  store y[r, :] = e * select(s == 0.0, 0.0, 1.0 / s)\n"
    "}\n";

static xir_program *parse(const char *text) {
  xir_program *p;
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "mask.xir", &p, &d)) die(&d);
  return p;
}

static int param_named(const xir_program *p, const char *name) {
  for (int i = 0; i < p->nparams; i++)
    if (!strcmp(p->params[i].name, name)) return i;
  fail_msg("no parameter %s", name);
  return -1;
}

/* Every candidate of p at `spec` on compiler cc matches the oracle (one block width per local
 * width). special: put NaN and +inf into the live part of two rows (and -inf into a third) before
 * the oracle runs. Under XIR_TEST_QUICK (the sanitizer pass) every second of those candidates,
 * the even ones on one call and the odd ones on the next. */
static size_t check_all(xir_compiler *cc, xir_program *p, const char *spec, int special) {
  static size_t calls;
  size_t step = test_quick() ? 2 : 1, phase = calls++ % step, eligible = 0;
  xir_diag d;
  xir_shape shape;
  if (xir_shape_parse(p, spec, &shape, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &shape, 77, &d)) die(&d);
  int x = param_named(p, "x");
  int64_t R = shape.dims[0], C = shape.dims[1];
  if (special && R > 6 && C > 2) {
    c.data[x][3 * C + 1] = NAN;
    c.data[x][5 * C + 0] = INFINITY;
    c.data[x][6 * C + 1] = -INFINITY;
  }
  if (xir__case_oracle(&c, &d)) die(&d);
  xir_candidate *cands;
  size_t n;
  if (xir_candidates(p, &shape, xir_compiler_width(cc), &cands, &n, &d)) die(&d);
  assert_true(n > 0);
  xir_tolerance tol = xir__kernel_tolerance(p->name);
  size_t ran = 0;
  for (size_t i = 0; i < n; i++) {
    /* one block width per local width (test_native runs every candidate of the built-ins) */
    uint32_t W = cands[i].W, want = cands[i].local > 2 * W ? cands[i].local : 2 * W;
    if (cands[i].B != want && n > 1) continue;
    if (eligible++ % step != phase && n > 1) continue;
    ran++;
    char name[128];
    xir_candidate_name(p, &cands[i], name, sizeof name);
    const xir_kernel *k;
    if (xir_compile(cc, p, &shape, &cands[i], &k, &d)) die(&d);
    xir__case_reset_outputs(&c);
    uint64_t slots[XIR_MAX_ARG_SLOTS];
    if (xir_kernel_pack_args(k, c.args, slots, &d)) die(&d);
    assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
    if (!xir__case_sentinels_ok(&c)) fail_msg("%s %s %s: a sentinel was overwritten", p->name, spec, name);
    int y = param_named(p, "y");
    xir_compare r = xir__case_compare(&c, y, tol);
    if (!r.pass)
      fail_msg("%s %s %s: %zu of %zu elements out of tolerance (%zu NaN); first at %zu: got %.9g, "
               "oracle %.9g", p->name, spec, name, r.bad, r.n, r.nan, r.first_bad,
               (double)c.data[y][r.first_bad], c.ref[y][r.first_bad]);
  }
  assert_true(ran > 0);
  xir_free(cands);
  xir__case_free(&c);
  return ran;
}

static const char *kShapes[] = {"R=37,C=20", "R=20,C=37", "R=1,C=100", "R=70,C=33",
                                "R=9,C=130", "R=3,C=1",   "R=40,C=64"};

static void run_program(const char *text, int expect_skips) {
  xir_program *p = parse(text);
  uint8_t skip[256];
  assert_true(p->nnodes < 256);
  int M = xir__mask_skips(p, skip, NULL);
  int nskip = 0;
  for (int i = 0; i < p->nnodes; i++) nskip += skip[i];
  assert_int_equal(nskip, expect_skips);
  assert_true(M >= 0);
  xir_diag d;
  uint32_t widths[] = {0, 8, 4, 2, 1}, host_w = 0;
  for (int w = 0; w < 5; w++) {
    if (w > 0 && widths[w] == host_w) continue; /* the host's width ran as width 0 */
    xir_compiler_options o = {.force_width = widths[w]};
    xir_compiler *cc;
    if (xir_compiler_create(&o, &cc, &d)) die(&d);
    if (w == 0) host_w = xir_compiler_width(cc);
    size_t total = 0;
    for (size_t s = 0; s < sizeof kShapes / sizeof *kShapes; s++) {
      if (widths[w] && widths[w] < 8 && s > 1) break; /* the narrow widths: two shapes */
      total += check_all(cc, p, kShapes[s], 0);
    }
    total += check_all(cc, p, "R=12,C=40", 1);
    printf("# %s W=%u: %zu candidate runs checked\n", p->name, xir_compiler_width(cc), total);
    xir_compiler_destroy(cc);
  }
  xir_program_free(p);
}

static void test_all_masked_rows(void **state) {
  (void)state;
  run_program(kShifted, 3); /* max, sum, store */
}

static void test_fill_zero_under_sum(void **state) {
  (void)state;
  run_program(kSumExp, 2);
}

static void test_masked_values_that_are_not_the_identity(void **state) {
  (void)state;
  run_program(kNotNeutral, 3);
}

static void test_unskippable_store(void **state) {
  (void)state;
  run_program(kMixed, 1); /* the max only */
}

static void test_end_with_dims(void **state) {
  (void)state;
  run_program(kDims, 3);
}

/* softmax_causal R=16, C=2048: x's last row is followed by an inaccessible page from column 128
 * on (128 is a multiple of every ℓ, and the last row's live part is [0, 16)). Any load of the
 * masked part there faults; every candidate still matches the oracle. */
static void test_masked_part_is_never_loaded(void **state) {
  (void)state;
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load("softmax_causal", &p, &d)) die(&d);
  xir_shape shape;
  if (xir_shape_parse(p, "R=16,C=2048", &shape, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &shape, 5, &d) || xir__case_oracle(&c, &d)) die(&d);
  int x = param_named(p, "x"), y = param_named(p, "y");
  const int64_t R = 16, C = 2048, open_elems = (R - 1) * C + 128;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t open_bytes = (size_t)open_elems * 4, head = (page - open_bytes % page) % page;
  size_t open_pages = (head + open_bytes) / page, closed = ((size_t)(R * C) * 4 - open_bytes + page - 1) / page;
  uint8_t *map = mmap(NULL, (open_pages + closed) * page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(map != MAP_FAILED);
  float *gx = (float *)(map + head);
  assert_true(((uintptr_t)(gx + open_elems)) % page == 0);
  memcpy(gx, c.data[x], (size_t)open_elems * 4);
  assert_int_equal(mprotect(map + open_pages * page, closed * page, PROT_NONE), 0);
  xir_arg args[XIR_MAX_PARAMS];
  memcpy(args, c.args, sizeof args);
  args[x].in = gx;
  uint32_t widths[] = {0, 8}, host_w = 0;
  for (int w = 0; w < 2; w++) {
    if (w > 0 && widths[w] == host_w) continue; /* the host's width ran as width 0 */
    xir_compiler_options o = {.force_width = widths[w]};
    xir_compiler *cc;
    if (xir_compiler_create(&o, &cc, &d)) die(&d);
    if (w == 0) host_w = xir_compiler_width(cc);
    xir_candidate *cands;
    size_t n;
    if (xir_candidates(p, &shape, xir_compiler_width(cc), &cands, &n, &d)) die(&d);
    for (size_t i = 0; i < n; i++) {
      uint32_t W = cands[i].W, want = cands[i].local > 2 * W ? cands[i].local : 2 * W;
      if (cands[i].B != want) continue; /* one block width per local width */
      const xir_kernel *k;
      if (xir_compile(cc, p, &shape, &cands[i], &k, &d)) die(&d);
      xir__case_reset_outputs(&c);
      uint64_t slots[XIR_MAX_ARG_SLOTS];
      if (xir_kernel_pack_args(k, args, slots, &d)) die(&d);
      assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
      assert_true(xir__case_sentinels_ok(&c));
      xir_compare r = xir__case_compare(&c, y, xir__kernel_tolerance("softmax_causal"));
      if (!r.pass) {
        char name[128];
        xir_candidate_name(p, &cands[i], name, sizeof name);
        fail_msg("%s: %zu elements out of tolerance", name, r.bad);
      }
    }
    xir_free(cands);
    xir_compiler_destroy(cc);
  }
  munmap(map, (open_pages + closed) * page);
  xir__case_free(&c);
  xir_program_free(p);
}

/* Early fill (lower.c, early_fill_ok): y = x in place, every candidate at W = 16 and 8, against
 * the oracle of the original x. softmax_causal writes +0 over a row's masked part before its
 * reductions (and NaN rows rewrite it: row 3 has one); kEarlyMixed's sum reads the whole row of x
 * without the mask, so its store must not be filled early (were it, t would sum the zeros). */
static const char *kEarlyMixed =
    "kernel early_mixed[R, C](x: f32[R, C], y: out f32[R, C], t: out f32[R])\n"
    "root r in R {\n"
    "  z = select(iota(C) > r, -inf, load x[r, :])\n"
    "  m = reduce.max(z)\n"
    "  store t[r] = reduce.sum(load x[r, :])\n"
    "  store y[r, :] = exp(z - m)\n"
    "}\n";

static void in_place_all(xir_program *p, const char *spec) {
  xir_diag d;
  xir_shape shape;
  if (xir_shape_parse(p, spec, &shape, &d)) die(&d);
  int x = param_named(p, "x"), y = param_named(p, "y");
  assert_int_equal(xir_program_alias_ok(p, y, x, &d), XIR_OK);
  xir_case c;
  if (xir__case_init(&c, p, &shape, 9, &d)) die(&d);
  c.data[x][3 * shape.dims[1] + 1] = NAN;
  if (xir__case_oracle(&c, &d)) die(&d);
  float *buf = malloc(c.numel[x] * sizeof(float));
  assert_non_null(buf);
  xir_tolerance tol = xir__kernel_tolerance("softmax_causal");
  uint32_t widths[] = {0, 8}, host_w = 0;
  size_t ran = 0;
  for (int w = 0; w < 2; w++) {
    if (w > 0 && widths[w] == host_w) continue; /* the host's width ran as width 0 */
    xir_compiler_options o = {.force_width = widths[w]};
    xir_compiler *cc;
    if (xir_compiler_create(&o, &cc, &d)) die(&d);
    if (w == 0) host_w = xir_compiler_width(cc);
    xir_candidate *cands;
    size_t n;
    if (xir_candidates(p, &shape, xir_compiler_width(cc), &cands, &n, &d)) die(&d);
    for (size_t i = 0; i < n; i++) {
      if (cands[i].local < cands[i].W || cands[i].B != cands[i].local) continue;
      const xir_kernel *k;
      if (xir_compile(cc, p, &shape, &cands[i], &k, &d)) die(&d);
      memcpy(buf, c.data[x], c.numel[x] * sizeof(float));
      xir__case_reset_outputs(&c);
      xir_arg a[XIR_MAX_PARAMS];
      memcpy(a, c.args, sizeof a);
      a[x].in = buf;
      a[y].out = buf;
      uint64_t slots[XIR_MAX_ARG_SLOTS];
      if (xir_kernel_pack_args(k, a, slots, &d)) die(&d);
      assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
      char name[128];
      xir_candidate_name(p, &cands[i], name, sizeof name);
      for (int q = 0; q < p->nparams; q++) {
        if (!p->params[q].is_output) continue;
        const float *got = q == y ? buf : c.data[q];
        for (size_t e = 0; e < c.numel[q]; e++) {
          double g = got[e], r = c.ref[q][e];
          int ok = isnan(r) ? isnan(g) : fabs(g - r) <= tol.atol + tol.rtol * fabs(r);
          if (!ok)
            fail_msg("%s %s in place, %s: %s[%zu] is %.9g, oracle %.9g", p->name, spec, name,
                     p->params[q].name, e, g, r);
        }
      }
      ran++;
    }
    xir_free(cands);
    xir_compiler_destroy(cc);
  }
  assert_true(ran >= 4);
  free(buf);
  xir__case_free(&c);
}

static void test_early_fill_in_place(void **state) {
  (void)state;
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load("softmax_causal", &p, &d)) die(&d);
  in_place_all(p, "R=5,C=1000");
  in_place_all(p, "R=40,C=130");
  xir_program_free(p);
  p = parse(kEarlyMixed);
  in_place_all(p, "R=5,C=1000");
  in_place_all(p, "R=40,C=130");
  xir_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_masked_rows),
      cmocka_unit_test(test_fill_zero_under_sum),
      cmocka_unit_test(test_masked_values_that_are_not_the_identity),
      cmocka_unit_test(test_unskippable_store),
      cmocka_unit_test(test_end_with_dims),
      cmocka_unit_test(test_masked_part_is_never_loaded),
      cmocka_unit_test(test_early_fill_in_place),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

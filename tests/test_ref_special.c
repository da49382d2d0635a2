/* test_ref_special.c — special values and the edges of f32, judged by the hand-written fp64
 * references (tests/ref/ref_kernels.c), not only by the oracle that runs the same XIR program.
 *
 * Each case puts NaN, +inf or -inf into the inputs of a built-in kernel (or fully masked rows, or
 * rows at the documented magnitude bound), computes the hand reference, and checks
 *   - the fp64 interpreter: NaN exactly where the reference is NaN, the same infinities, the same
 *     finite values to 1e-9;
 *   - native code, every legal candidate at W = 16 and W = 8: NaN exactly where the reference is
 *     NaN, the same infinities, the finite values within the kernel's stated tolerance.
 * Special-value semantics are NumPy's softmax, exp(z - max z) / sum, with one defined exception:
 * a row (query) whose every score is -inf gives zeros. Beyond the documented f32 ranges
 * (docs/xir.md, "Numeric range of the built-in kernels") the tests pin what happens instead. */
#include <float.h>
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
#include "xir_compile.h"
#include "testutil.h"

static xir_compiler *g_cc[2]; /* W = 16, W = 8 (NULL when not runnable here) */

/* XIR_TEST_QUICK (test_quick): every second candidate, the even ones at W = 16, the odd at 8. */
static size_t quick_step(void) { return test_quick() ? 2 : 1; }

static void die(const xir_diag *d) {
  char b[2048];
  fail_msg("%s", xir_diag_format(d, b, sizeof b));
}

static int pidx(const xir_program *p, const char *n) { return xir_program_find_param(p, n); }

static xir_program *setup(const char *kernel, const char *spec, xir_case *c, uint64_t seed) {
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load(kernel, &p, &d)) die(&d);
  xir_shape shape;
  if (xir_shape_parse(p, spec, &shape, &d)) die(&d);
  if (xir__case_init(c, p, &shape, seed, &d)) die(&d);
  return p;
}

/* Compiles candidate `cand` of the case's program with cc, resets the outputs (sentinels around
 * them) and runs every block on the calling thread. */
static void run_candidate(xir_compiler *cc, const xir_program *p, xir_case *c,
                          const xir_candidate *cand) {
  xir_diag d;
  const xir_kernel *k;
  if (xir_compile(cc, p, &c->shape, cand, &k, &d)) die(&d);
  xir__case_reset_outputs(c);
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  if (xir_kernel_pack_args(k, c->args, slots, &d)) die(&d);
  assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
}

/* got vs want: NaN exactly where want is NaN, equal infinities, finite values within
 * atol + rtol |want|. Returns the number of mismatches; the first is described in msg. */
static size_t mismatches(const char *who, const float *gotf, const double *gotd, const double *want,
                         size_t n, double rtol, double atol, char *msg, size_t msgn) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double g = gotf ? (double)gotf[i] : gotd[i], w = want[i];
    int ok;
    if (isnan(w) || isnan(g)) ok = isnan(w) && isnan(g);
    else if (isinf(w) || isinf(g)) ok = g == w;
    else ok = fabs(g - w) <= atol + rtol * fabs(w);
    if (!ok && !bad++)
      snprintf(msg, msgn, "%s: element %zu is %.9g, the hand reference %.9g", who, i, g, w);
  }
  return bad;
}

/* Checks output `out` of the prepared case (inputs already edited) against want, in the
 * interpreter and in native code (every candidate at each width). */
static void judge(const char *what, xir_case *c, const xir_program *p, const char *out,
                  const double *want) {
  xir_diag d;
  char msg[512];
  int o = pidx(p, out);
  size_t n = c->numel[o];
  if (xir__case_oracle(c, &d)) die(&d);
  size_t bad = mismatches("interpreter", NULL, c->ref[o], want, n, 2e-7, 1e-9, msg, sizeof msg);
  if (bad) fail_msg("%s: %zu of %zu differ; %s", what, bad, n, msg);
  xir_tolerance tol = xir__kernel_tolerance(xir_program_name(p));
  for (int w = 0; w < 2; w++) {
    if (!g_cc[w]) continue;
    xir_candidate *cands;
    size_t nc;
    if (xir_candidates(p, &c->shape, xir_compiler_width(g_cc[w]), &cands, &nc, &d)) die(&d);
    assert_true(nc > 0);
    for (size_t i = thin_start(nc, (size_t)w, quick_step()); i < nc; i += quick_step()) {
      char name[128];
      xir_candidate_name(p, &cands[i], name, sizeof name);
      run_candidate(g_cc[w], p, c, &cands[i]);
      if (!xir__case_sentinels_ok(c)) fail_msg("%s %s: a sentinel was overwritten", what, name);
      bad = mismatches("native", c->data[o], NULL, want, n, tol.rtol, tol.atol, msg, sizeof msg);
      if (bad)
        fail_msg("%s, candidate %s (W=%u): %zu of %zu differ; %s", what, name,
                 xir_compiler_width(g_cc[w]), bad, n, msg);
      /* and the check's own comparison agrees (NaN where the oracle is NaN passes) */
      xir_compare r = xir__case_compare(c, o, tol);
      if (!r.pass) fail_msg("%s %s: xir__case_compare fails where the reference passes", what, name);
    }
    xir_free(cands);
  }
}

static size_t count_nan(const double *v, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += isnan(v[i]) != 0;
  return k;
}

/* ---------------------------------------------------------------------------------------------- */
/* softmax                                                                                         */

/* Rows of softmax_mask, R = 9, C = 37 (ragged at every width):
 *  0 plain; 1 one NaN in x; 2 one +inf in x; 3 mask all -inf (fully masked: zeros); 4 one -inf in
 *  x; 5 every x = -inf (fully masked: zeros); 6 every x = +inf; 7 +inf in x under a -inf mask
 *  (inf - inf = NaN); 8 all masked but one column. */
static void test_softmax_mask_special(void **state) {
  (void)state;
  enum { R = 9, C = 37 };
  xir_case c;
  xir_program *p = setup("softmax_mask", "R=9,C=37", &c, 21);
  float *x = c.data[pidx(p, "x")], *mask = c.data[pidx(p, "mask")];
  for (int i = 0; i < R * C; i++) mask[i] = 0;
  x[1 * C + 17] = NAN;
  x[2 * C + 36] = INFINITY;
  for (int j = 0; j < C; j++) mask[3 * C + j] = -INFINITY;
  x[4 * C + 0] = -INFINITY;
  for (int j = 0; j < C; j++) x[5 * C + j] = -INFINITY;
  for (int j = 0; j < C; j++) x[6 * C + j] = INFINITY;
  x[7 * C + 5] = INFINITY;
  mask[7 * C + 5] = -INFINITY;
  for (int j = 0; j < C; j++) mask[8 * C + j] = j == 30 ? 0.0f : -INFINITY;
  double want[R * C];
  ref_softmax_mask(R, C, x, mask, 1.0, want);
  /* the reference itself: NaN rows 1, 2, 6, 7; zero rows 3, 5; one-hot row 8 */
  for (int r = 0; r < R; r++) {
    size_t nn = count_nan(want + r * C, C);
    int nan_row = r == 1 || r == 2 || r == 6 || r == 7;
    assert_int_equal(nn, nan_row ? C : 0);
    for (int j = 0; j < C; j++) {
      if (r == 3 || r == 5) assert_true(want[r * C + j] == 0.0);
      if (r == 8) assert_true(want[r * C + j] == (j == 30 ? 1.0 : 0.0));
    }
  }
  assert_true(want[4 * C] == 0.0 && want[4 * C + 1] > 0.0);
  judge("softmax_mask special rows", &c, p, "y", want);
  xir__case_free(&c);
  xir_program_free(p);
}

/* softmax_causal, R = 7, C = 19: NaN / +inf in visible columns poison their row, in masked
 * columns (c > r) they are never seen; a row whose visible columns are all -inf gives zeros. */
static void test_softmax_causal_special(void **state) {
  (void)state;
  enum { R = 7, C = 19 };
  xir_case c;
  xir_program *p = setup("softmax_causal", "R=7,C=19", &c, 22);
  float *x = c.data[pidx(p, "x")];
  x[0 * C + 0] = NAN;       /* row 0: its only visible column */
  x[1 * C + 5] = NAN;       /* row 1: masked column */
  x[2 * C + 9] = INFINITY;  /* row 2: masked column */
  x[3 * C + 2] = INFINITY;  /* row 3: visible */
  for (int j = 0; j <= 4; j++) x[4 * C + j] = -INFINITY; /* row 4: every visible column -inf */
  x[5 * C + 3] = -INFINITY; /* row 5: one visible -inf */
  x[6 * C + 6] = NAN;       /* row 6: the last visible column */
  double want[R * C];
  ref_softmax_causal(R, C, x, 1.0, want);
  const int nan_rows[R] = {1, 0, 0, 1, 0, 0, 1};
  for (int r = 0; r < R; r++) {
    assert_int_equal(count_nan(want + r * C, C), nan_rows[r] ? C : 0);
    if (r == 4)
      for (int j = 0; j < C; j++) assert_true(want[r * C + j] == 0.0);
  }
  assert_true(want[5 * C + 3] == 0.0 && want[5 * C + 2] > 0.0);
  judge("softmax_causal special rows", &c, p, "y", want);
  /* scale = 2 and the same rows */
  xir_diag d;
  assert_int_equal(xir__case_set_scalar(&c, "scale", 2.0, &d), XIR_OK);
  ref_softmax_causal(R, C, x, 2.0, want);
  judge("softmax_causal special rows, scale 2", &c, p, "y", want);
  xir__case_free(&c);
  xir_program_free(p);
}

/* ---------------------------------------------------------------------------------------------- */
/* attention                                                                                       */

static void attention_ref(const xir_case *c, const xir_program *p, const int64_t s[7], int causal,
                          double *want) {
  double sc = 1.0 / sqrt((double)s[5]);
  assert_int_equal(ref_attention((size_t)s[0], (size_t)s[1], (size_t)s[2], (size_t)s[3],
                                 (size_t)s[4], (size_t)s[5], (size_t)s[6], c->data[pidx(p, "q")],
                                 c->data[pidx(p, "k")], c->data[pidx(p, "v")], sc, causal, want),
                   0);
}

/* B = 1, HQ = 4, HKV = 2, Q = 6, K = 9, D = 5, DV = 7. */
static void test_attention_special(void **state) {
  (void)state;
  static const int64_t s[7] = {1, 4, 2, 6, 9, 5, 7};
  const char *spec = "B=1,HQ=4,HKV=2,Q=6,K=9,D=5,DV=7";
  enum { HQ = 4, Q = 6, K = 9, D = 5, DV = 7, NO = HQ * Q * DV };
  for (int causal = 0; causal < 2; causal++) {
    const char *kernel = causal ? "attention_causal" : "attention";
    char what[128];
    double want[NO];

    /* (a) a NaN in one query row (head 1, query 2): that output row is NaN, the rest finite */
    xir_case c;
    xir_program *p = setup(kernel, spec, &c, 31);
    c.data[pidx(p, "q")][(1 * Q + 2) * D + 3] = NAN;
    attention_ref(&c, p, s, causal, want);
    assert_int_equal(count_nan(want, NO), DV);
    for (int e = 0; e < DV; e++) assert_true(isnan(want[(1 * Q + 2) * DV + e]));
    snprintf(what, sizeof what, "%s, NaN in one query", kernel);
    judge(what, &c, p, "o", want);
    xir__case_free(&c);

    /* (b) a +inf in one key (kv head 0, key 4, dim 0): for query heads 0 and 1, a query with
     * q[0] > 0 scores +inf (NaN row), one with q[0] < 0 scores -inf (the key weighs 0) */
    xir_program_free(p);
    p = setup(kernel, spec, &c, 32);
    c.data[pidx(p, "k")][(0 * K + 4) * D + 0] = INFINITY;
    attention_ref(&c, p, s, causal, want);
    size_t nan_rows = count_nan(want, NO) / DV;
    assert_true(nan_rows > 0 && nan_rows < 2 * Q); /* both signs occur with this seed */
    for (int t = 2 * Q * DV; t < NO; t++) assert_false(isnan(want[t])); /* kv head 1 untouched */
    snprintf(what, sizeof what, "%s, +inf in one key", kernel);
    judge(what, &c, p, "o", want);
    xir__case_free(&c);

    /* (c) a -inf in one key: scores +-inf the other way round */
    xir_program_free(p);
    p = setup(kernel, spec, &c, 32);
    c.data[pidx(p, "k")][(1 * K + 0) * D + 1] = -INFINITY;
    attention_ref(&c, p, s, causal, want);
    assert_true(count_nan(want, NO) > 0);
    snprintf(what, sizeof what, "%s, -inf in one key", kernel);
    judge(what, &c, p, "o", want);
    xir__case_free(&c);

    /* (d) a +inf in v (kv head 1, key 0, column 3): column 3 of heads 2, 3 is +inf (key 0 is
     * visible to every query in both variants, K >= Q) */
    xir_program_free(p);
    p = setup(kernel, spec, &c, 33);
    c.data[pidx(p, "v")][(1 * K + 0) * DV + 3] = INFINITY;
    attention_ref(&c, p, s, causal, want);
    for (int h = 2; h < 4; h++)
      for (int i = 0; i < Q; i++) assert_true(want[(h * Q + i) * DV + 3] == INFINITY);
    assert_int_equal(count_nan(want, NO), 0);
    snprintf(what, sizeof what, "%s, +inf in v", kernel);
    judge(what, &c, p, "o", want);
    xir__case_free(&c);
    xir_program_free(p);
  }
}

/* Causal, Q > K: queries 0..Q-K-1 see no key and get zeros, even when their q is NaN and v holds
 * +inf; a query that sees keys but not the +inf value's key gets 0 * inf = NaN (as NumPy). */
static void test_attention_causal_masked_queries(void **state) {
  (void)state;
  static const int64_t s[7] = {1, 2, 1, 7, 4, 3, 5};
  enum { HQ = 2, Q = 7, K = 4, D = 3, DV = 5, NO = HQ * Q * DV };
  xir_case c;
  xir_program *p = setup("attention_causal", "B=1,HQ=2,HKV=1,Q=7,K=4,D=3,DV=5", &c, 41);
  c.data[pidx(p, "q")][(0 * Q + 1) * D + 0] = NAN;       /* head 0, query 1: sees no key */
  c.data[pidx(p, "v")][3 * DV + 2] = INFINITY;           /* key 3: seen by query 6 only */
  double want[NO];
  attention_ref(&c, p, s, 1, want);
  for (int h = 0; h < HQ; h++)
    for (int i = 0; i < Q; i++)
      for (int e = 0; e < DV; e++) {
        double v = want[(h * Q + i) * DV + e];
        if (i < Q - K) assert_true(v == 0.0);                /* no key at all */
        else if (e == 2 && i < Q - 1) assert_true(isnan(v)); /* 0 * inf */
        else if (e == 2) assert_true(v == INFINITY);
        else assert_true(isfinite(v));
      }
  judge("attention_causal, queries without keys", &c, p, "o", want);
  xir__case_free(&c);
  xir_program_free(p);
}

/* ---------------------------------------------------------------------------------------------- */
/* the edges of f32 (docs/xir.md, "Numeric range of the built-in kernels")                        */

/* v rounded to f32 towards zero (so that a bound on |v| holds for the float). */
static float below(double v) {
  float f = (float)v;
  return fabs((double)f) > fabs(v) ? nextafterf(f, 0.0f) : f;
}

/* Fills x[0..C-1] with pseudo-random signs and magnitudes in (mag/2, mag]. */
static void fill_row(float *x, int C, double mag, unsigned seed) {
  for (int j = 0; j < C; j++) {
    seed = seed * 1103515245u + 12345u;
    double m = mag * (1.0 - (double)(seed >> 16 & 0x3ff) / 2048.0);
    x[j] = below((seed >> 30) & 1 ? m : -m);
  }
}

/* rmsnorm is in range while sum_c x^2 <= 2^127, i.e. ||x_r||_2 <= 2^63.5 (about 1.304e19):
 * rows at the bound (every |x| = 2^63.5 / sqrt(C), or one element carrying the whole norm)
 * match the reference. */
static void test_rmsnorm_at_the_bound(void **state) {
  (void)state;
  const int Cs[3] = {256, 768, 4096};
  for (int t = 0; t < 3; t++) {
    int C = Cs[t];
    char spec[64];
    snprintf(spec, sizeof spec, "R=4,C=%d", C);
    xir_case c;
    xir_program *p = setup("rmsnorm", spec, &c, 51);
    float *x = c.data[pidx(p, "x")];
    const double bound = ldexp(sqrt(2.0), 63); /* 2^63.5 */
    const double each = nextafter(bound / sqrt((double)C), 0);
    for (int j = 0; j < C; j++) x[j] = below(j % 3 ? each : -each);   /* row 0 */
    fill_row(x + C, C, each, 7);                                        /* row 1 */
    for (int j = 0; j < C; j++) x[2 * C + j] = j % 5 ? 1.0f : -3.0f;   /* row 2: ordinary */
    x[3 * C + 0] = (float)(bound * 0.999);                              /* row 3: one big one */
    for (int j = 1; j < C; j++) x[3 * C + j] = (float)(bound * 1e-3 / sqrt((double)C));
    for (int r = 0; r < 4; r++) {
      double ss = 0;
      for (int j = 0; j < C; j++) ss += (double)x[r * C + j] * x[r * C + j];
      assert_true(ss <= ldexp(1.0, 127));
    }
    char note[512];
    assert_int_equal(xir__case_range_note(&c, note, sizeof note), 0);
    double *want = test_malloc(sizeof(double) * 4 * (size_t)C);
    ref_rmsnorm(4, (size_t)C, x, c.data[pidx(p, "w")], (double)1e-5f, want);
    char what[64];
    snprintf(what, sizeof what, "rmsnorm C=%d at ||x|| = 2^63.5", C);
    judge(what, &c, p, "y", want);
    test_free(want);
    xir__case_free(&c);
    xir_program_free(p);
  }
}

/* Beyond the bound the f32 sum of squares overflows: ms = inf, rsqrt(inf) = 0, and native code
 * writes a row of (signed) zeros, which the check reports as a mismatch with the oracle (the fp64
 * interpreter does not overflow). Pinned here so that the documented behaviour stays true. */
static void test_rmsnorm_beyond_the_bound(void **state) {
  (void)state;
  xir_case c;
  xir_program *p = setup("rmsnorm", "R=3,C=64", &c, 52);
  float *x = c.data[pidx(p, "x")];
  fill_row(x, 64, 3e38, 3);               /* row 0: the rows of 3e38 */
  fill_row(x + 64, 64, ldexp(1.0, 62), 4); /* row 1: ||x|| about 2^65 */
  /* row 2 stays random in [-2, 2] */
  char note[512];
  assert_int_equal(xir__case_range_note(&c, note, sizeof note), 1); /* xir run prints it */
  assert_non_null(strstr(note, "2 row(s)"));
  assert_non_null(strstr(note, "zeros"));
  xir_diag d;
  if (xir__case_oracle(&c, &d)) die(&d);
  int y = pidx(p, "y");
  double want[3 * 64];
  ref_rmsnorm(3, 64, x, c.data[pidx(p, "w")], (double)1e-5f, want);
  char msg[256];
  assert_int_equal(mismatches("interpreter", NULL, c.ref[y], want, 3 * 64, 2e-7, 1e-9, msg,
                              sizeof msg), 0);
  for (int w = 0; w < 2; w++) {
    if (!g_cc[w]) continue;
    xir_candidate *cands;
    size_t nc;
    if (xir_candidates(p, &c.shape, xir_compiler_width(g_cc[w]), &cands, &nc, &d)) die(&d);
    for (size_t i = thin_start(nc, (size_t)w, quick_step()); i < nc; i += quick_step()) {
      run_candidate(g_cc[w], p, &c, &cands[i]);
      for (int j = 0; j < 128; j++) assert_true(c.data[y][j] == 0.0f); /* rows 0, 1: zeros */
      assert_int_equal(mismatches("native row 2", c.data[y] + 128, NULL, want + 128, 64, 1e-4,
                                  1e-5, msg, sizeof msg), 0);
      xir_compare r = xir__case_compare(&c, y, xir__kernel_tolerance("rmsnorm"));
      assert_false(r.pass);
      assert_int_equal(r.bad, 128);
    }
    xir_free(cands);
  }
  xir__case_free(&c);
  xir_program_free(p);
}

/* layernorm is in range while ||x_r||_2 <= 2^63 (about 9.22e18). */
static void test_layernorm_at_the_bound(void **state) {
  (void)state;
  const int Cs[2] = {256, 1000};
  for (int t = 0; t < 2; t++) {
    int C = Cs[t];
    char spec[64];
    snprintf(spec, sizeof spec, "R=3,C=%d", C);
    xir_case c;
    xir_program *p = setup("layernorm", spec, &c, 53);
    float *x = c.data[pidx(p, "x")];
    const double each = nextafter(ldexp(1.0, 63) / sqrt((double)C), 0);
    for (int j = 0; j < C; j++) x[j] = below(j % 4 ? each : -each); /* mean 0.5 * each */
    fill_row(x + C, C, each, 9);
    for (int j = 0; j < C; j++) x[2 * C + j] = below(j % 7 == 0 ? each : 0.25 * each);
    for (int r = 0; r < 3; r++) {
      double ss = 0;
      for (int j = 0; j < C; j++) ss += (double)x[r * C + j] * x[r * C + j];
      assert_true(ss <= ldexp(1.0, 126));
    }
    char note[512];
    assert_int_equal(xir__case_range_note(&c, note, sizeof note), 0);
    double *want = test_malloc(sizeof(double) * 3 * (size_t)C);
    ref_layernorm(3, (size_t)C, x, c.data[pidx(p, "w")], c.data[pidx(p, "b")], (double)1e-5f,
                  want);
    char what[64];
    snprintf(what, sizeof what, "layernorm C=%d at ||x|| = 2^63", C);
    judge(what, &c, p, "y", want);
    test_free(want);
    xir__case_free(&c);
    xir_program_free(p);
  }
}

/* Beyond it the sum of squared deviations overflows, rsqrt(inf) = 0 and native code writes b. */
static void test_layernorm_beyond_the_bound(void **state) {
  (void)state;
  xir_case c;
  xir_program *p = setup("layernorm", "R=2,C=64", &c, 54);
  float *x = c.data[pidx(p, "x")];
  fill_row(x, 64, 1e30, 5); /* ||x|| about 6e30 */
  char note[512];
  assert_int_equal(xir__case_range_note(&c, note, sizeof note), 1);
  assert_non_null(strstr(note, "1 row(s)"));
  xir_diag d;
  if (xir__case_oracle(&c, &d)) die(&d);
  int y = pidx(p, "y");
  const float *b = c.data[pidx(p, "b")];
  /* the host's compiler (FMA: ms - corr·corr is one fma) and one for a CPU without FMA
   * (sandybridge: corr·corr rounds to inf on its own; the kernel's select keeps var = inf rather
   * than inf - inf = NaN) */
  xir_compiler *nofma = NULL;
  xir_compiler_options o = {.cpu = "sandybridge"};
  if (xir_compiler_create(&o, &nofma, &d) != XIR_OK) nofma = NULL;
  xir_compiler *ccs[2] = {g_cc[0] ? g_cc[0] : g_cc[1], nofma};
  for (int t = 0; t < 2 && ccs[t]; t++) {
    xir_candidate *cands;
    size_t nc;
    if (xir_candidates(p, &c.shape, xir_compiler_width(ccs[t]), &cands, &nc, &d)) die(&d);
    for (size_t i = 0; i < nc; i++) {
      run_candidate(ccs[t], p, &c, &cands[i]);
      for (int j = 0; j < 64; j++)
        if (!(c.data[y][j] == b[j]))
          fail_msg("compiler %d candidate %zu: y[%d] = %g, b = %g", t, i, j, (double)c.data[y][j], (double)b[j]);
      xir_compare r = xir__case_compare(&c, y, xir__kernel_tolerance("layernorm"));
      assert_false(r.pass);
      assert_true(r.first_bad < 64 && r.bad <= 64); /* row 1 (ordinary) passes */
    }
    xir_free(cands);
  }
  xir_compiler_destroy(nofma);
  xir__case_free(&c);
  xir_program_free(p);
}

/* Rows whose spread is small next to their magnitude: x - mean must carry the rounding of the
 * spread, not of the magnitude, which inv = rsqrt(var + eps) (up to 1/sqrt(eps) = 316) would
 * amplify. The unshifted kernel (mean = sum(x) / C, d = x - mean) gave max abs 0.0145 at
 * 1000 + 0.01 * noise, and 2.2e-5 (out of tolerance where b nearly cancels the row) on C = 2 rows
 * of near-equal pairs; the corrected two-pass one (corr = the mean of x - mean0) stays within it. */
static void test_layernorm_small_spread(void **state) {
  (void)state;
  const char *specs[2] = {"R=6,C=77", "R=64,C=2"};
  for (int t = 0; t < 2; t++) {
    xir_case c;
    xir_program *p = setup("layernorm", specs[t], &c, 57 + (uint64_t)t);
    float *x = c.data[pidx(p, "x")];
    size_t R = (size_t)c.shape.dims[0], C = (size_t)c.shape.dims[1];
    const double offs[6] = {1000.0, -1000.0, 1.3, -1.7, 65536.0, 0.5};
    for (size_t r = 0; r < R; r++) {
      double o = offs[r % 6], spread = C == 2 ? ldexp(1.0, -10 - (int)(r % 8)) : 0.01;
      for (size_t j = 0; j < C; j++) {
        unsigned h = (unsigned)(r * 2654435761u + j * 40503u + 17u);
        x[r * C + j] = (float)(o + spread * ((double)(h % 2001u) / 1000.0 - 1.0));
      }
    }
    double *want = test_malloc(sizeof(double) * R * C);
    ref_layernorm(R, C, x, c.data[pidx(p, "w")], c.data[pidx(p, "b")], (double)1e-5f, want);
    char what[64];
    snprintf(what, sizeof what, "layernorm %s, small spread", specs[t]);
    judge(what, &c, p, "y", want);
    test_free(want);
    xir__case_free(&c);
    xir_program_free(p);
  }
}

/* rope: the position p = r + offset is converted to f32, exact for |p| <= 2^24. With HD = 2 every
 * pair has frequency theta^0 = 1, so the angle is exactly p and native code matches the
 * reference right up to 2^24 (sin/cos reduce |x| <= 5.2e7 accurately). */
static void test_rope_positions_up_to_2p24(void **state) {
  (void)state;
  const int64_t offsets[3] = {(1 << 24) - 8, -(1 << 24), (1 << 13) - 8};
  for (int t = 0; t < 3; t++) {
    xir_case c;
    xir_program *p = setup("rope", "R=9,C=6,HD=2", &c, 61);
    xir_diag d;
    assert_int_equal(xir__case_set_scalar(&c, "offset", (double)offsets[t], &d), XIR_OK);
    char note[512];
    assert_int_equal(xir__case_range_note(&c, note, sizeof note), t < 2); /* |p| > 2^13 */
    if (t < 2) assert_null(strstr(note, "exceed 2^24"));                    /* but <= 2^24 */
    double want[9 * 6];
    assert_int_equal(ref_rope(9, 6, 2, c.data[pidx(p, "x")], 10000.0, offsets[t], want), 0);
    char what[64];
    snprintf(what, sizeof what, "rope HD=2 offset %lld", (long long)offsets[t]);
    judge(what, &c, p, "y", want);
    xir__case_free(&c);
    xir_program_free(p);
  }
  /* the general case (HD = 64: frequencies below 1, the f32 product p * freq rounds) is within
   * the check's tolerance for |p| <= 2^13 */
  xir_case c;
  xir_program *p = setup("rope", "R=17,C=128,HD=64", &c, 62);
  xir_diag d;
  assert_int_equal(xir__case_set_scalar(&c, "offset", 8192 - 16, &d), XIR_OK);
  char note[512];
  assert_int_equal(xir__case_range_note(&c, note, sizeof note), 0); /* positions end at 2^13 */
  double want[17 * 128];
  assert_int_equal(ref_rope(17, 128, 64, c.data[pidx(p, "x")], 10000.0, 8192 - 16, want), 0);
  judge("rope HD=64 positions up to 2^13", &c, p, "y", want);
  xir__case_free(&c);
  xir_program_free(p);
}

/* Beyond 2^24 the position itself rounds to the nearest f32 (ties to even): at offset 2^24 + 1,
 * row 0 is rotated as position 2^24, not 2^24 + 1 (the oracle, in fp64, uses 2^24 + 1). */
static void test_rope_beyond_2p24(void **state) {
  (void)state;
  xir_case c;
  xir_program *p = setup("rope", "R=1,C=2,HD=2", &c, 63);
  xir_diag d;
  const int64_t off = (1 << 24) + 1;
  assert_int_equal(xir__case_set_scalar(&c, "offset", (double)off, &d), XIR_OK);
  char note[512];
  assert_int_equal(xir__case_range_note(&c, note, sizeof note), 1);
  assert_non_null(strstr(note, "exceed 2^24"));
  const float *x = c.data[pidx(p, "x")];
  double at_off[2], rounded[2];
  assert_int_equal(ref_rope(1, 2, 2, x, 10000.0, off, at_off), 0);
  assert_int_equal(ref_rope(1, 2, 2, x, 10000.0, off - 1, rounded), 0);
  if (xir__case_oracle(&c, &d)) die(&d);
  int y = pidx(p, "y");
  char msg[256];
  assert_int_equal(mismatches("interpreter", NULL, c.ref[y], at_off, 2, 2e-7, 1e-9, msg,
                              sizeof msg), 0);
  xir_compiler *cc = g_cc[0] ? g_cc[0] : g_cc[1];
  xir_candidate *cands;
  size_t nc;
  if (xir_candidates(p, &c.shape, xir_compiler_width(cc), &cands, &nc, &d)) die(&d);
  const xir_kernel *k;
  if (xir_compile(cc, p, &c.shape, &cands[0], &k, &d)) die(&d);
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  if (xir_kernel_pack_args(k, c.args, slots, &d)) die(&d);
  assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
  assert_int_equal(mismatches("native", c.data[y], NULL, rounded, 2, 1e-6, 1e-6, msg, sizeof msg),
                   0);
  assert_true(mismatches("native", c.data[y], NULL, at_off, 2, 1e-3, 4e-3, msg, sizeof msg) > 0);
  assert_false(xir__case_compare(&c, y, xir__kernel_tolerance("rope")).pass);
  xir_free(cands);
  xir__case_free(&c);
  xir_program_free(p);
}

/* ---------------------------------------------------------------------------------------------- */

/* The check's comparison: NaN where the oracle is NaN passes, NaN where it is not fails, a finite
 * value where the oracle is NaN fails, and infinities must be equal. */
/* ---------------------------------------------------------------------------------------------- */
/* reduce.max / reduce.min                                                                         */

/* IEEE 754-2019 maximum / minimum (what llvm.maximum/minimum compute): NaN if either is NaN,
 * −0 below +0. */
static float ieee_max(float a, float b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}
static float ieee_min(float a, float b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}

static int same_or_nan(double got, float want) {
  if (isnan(want)) return isnan(got);
  return got == (double)want && !signbit(got) == !signbit(want);
}

/* Rank-0 max and min of rows with NaNs at the first, a middle and the last column (the tail
 * packet), rows of NaN only, of −0 only, of ±0 mixed, −inf only, ±inf, subnormals: the
 * interpreter and every candidate at W = 16 and 8 give maximum's and minimum's value, the sign of
 * a zero included, and a NaN wherever the row has one (the AVX-512DQ fold, vrangeps plus a NaN
 * lane, in src/lower/lower.c range_fold). */
static void test_reduce_max_min_special(void **state) {
  (void)state;
  static const char *text =
      "kernel redmm[R, C](x: f32[R, C], hi: out f32[R], lo: out f32[R])\n"
      "root r in R {\n"
      "  v = load x[r, :]\n"
      "  store hi[r] = reduce.max(v)\n"
      "  store lo[r] = reduce.min(v)\n"
      "}\n";
  xir_program *p;
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "redmm.xir", &p, &d)) die(&d);
  const char *shapes[3] = {"R=13,C=37", "R=13,C=300", "R=13,C=5"};
  for (int si = 0; si < 3; si++) {
    xir_shape shape;
    if (xir_shape_parse(p, shapes[si], &shape, &d)) die(&d);
    xir_case c;
    if (xir__case_init(&c, p, &shape, 90 + (uint64_t)si, &d)) die(&d);
    const int R = 13, C = (int)shape.dims[1];
    float *x = c.data[pidx(p, "x")];
    x[1 * C + 0] = NAN;
    x[2 * C + C - 1] = NAN;
    x[3 * C + C / 2] = NAN;
    x[3 * C + C / 2 + 1] = -NAN;
    for (int j = 0; j < C; j++) {
      x[4 * C + j] = NAN;
      x[5 * C + j] = -0.0f;
      x[6 * C + j] = j % 2 ? 0.0f : -0.0f;
      x[7 * C + j] = -1.0f - (float)j;
      x[8 * C + j] = -INFINITY;
      x[10 * C + j] = (j % 2 ? 1 : -1) * (float)(j + 1) * 1e-45f;
      x[11 * C + j] = j == 0 ? 0.0f : -0.0f;
      x[12 * C + j] = j == C - 1 ? 0.0f : -0.0f;
    }
    x[7 * C + C - 1] = -0.0f;
    x[7 * C + C / 3] = 0.0f;
    x[9 * C + C / 3] = INFINITY;
    x[9 * C + C / 2] = -INFINITY;
    float want_hi[13], want_lo[13];
    for (int r = 0; r < R; r++) {
      want_hi[r] = -INFINITY;
      want_lo[r] = INFINITY;
      for (int j = 0; j < C; j++) {
        want_hi[r] = ieee_max(want_hi[r], x[r * C + j]);
        want_lo[r] = ieee_min(want_lo[r], x[r * C + j]);
      }
    }
    /* the reference itself */
    for (int r = 1; r <= 4; r++) assert_true(isnan(want_hi[r]) && isnan(want_lo[r]));
    assert_true(want_hi[5] == 0 && signbit(want_hi[5]) && signbit(want_lo[5]));
    assert_true(want_hi[6] == 0 && !signbit(want_hi[6]) && signbit(want_lo[6]));
    assert_true(want_hi[7] == 0 && !signbit(want_hi[7]));
    assert_true(want_hi[8] == -INFINITY && want_lo[9] == -INFINITY && want_hi[9] == INFINITY);
    assert_true(!signbit(want_hi[11]) && signbit(want_lo[11]) && !signbit(want_hi[12]));
    const int hi = pidx(p, "hi"), lo = pidx(p, "lo");
    if (xir__case_oracle(&c, &d)) die(&d);
    for (int r = 0; r < R; r++)
      if (!same_or_nan(c.ref[hi][r], want_hi[r]) || !same_or_nan(c.ref[lo][r], want_lo[r]))
        fail_msg("%s interpreter row %d: max %a min %a, want %a %a", shapes[si], r,
                 c.ref[hi][r], c.ref[lo][r], (double)want_hi[r], (double)want_lo[r]);
    for (int w = 0; w < 2; w++) {
      if (!g_cc[w]) continue;
      xir_candidate *cands;
      size_t nc;
      if (xir_candidates(p, &c.shape, xir_compiler_width(g_cc[w]), &cands, &nc, &d)) die(&d);
      assert_true(nc > 0);
      for (size_t i = thin_start(nc, (size_t)w, quick_step()); i < nc; i += quick_step()) {
        char name[128];
        xir_candidate_name(p, &cands[i], name, sizeof name);
        run_candidate(g_cc[w], p, &c, &cands[i]);
        if (!xir__case_sentinels_ok(&c)) fail_msg("%s %s: a sentinel was overwritten", shapes[si], name);
        const float *gh = c.data[hi], *gl = c.data[lo];
        for (int r = 0; r < R; r++)
          if (!same_or_nan(gh[r], want_hi[r]) || !same_or_nan(gl[r], want_lo[r]))
            fail_msg("%s %s (W=%u) row %d: max %a min %a, want %a %a", shapes[si], name,
                     xir_compiler_width(g_cc[w]), r, (double)gh[r], (double)gl[r],
                     (double)want_hi[r], (double)want_lo[r]);
      }
      xir_free(cands);
    }
    xir__case_free(&c);
  }
  xir_program_free(p);
}

static void test_check_compare_nan_rules(void **state) {
  (void)state;
  xir_case c;
  xir_program *p = setup("swiglu", "R=1,C=6", &c, 71);
  int y = pidx(p, "y");
  const double ref[6] = {NAN, 1.0, NAN, INFINITY, -INFINITY, 2.0};
  const float good[6] = {NAN, 1.0f, -NAN, INFINITY, -INFINITY, 2.0f};
  memcpy(c.ref[y], ref, sizeof ref);
  memcpy(c.data[y], good, sizeof good);
  xir_tolerance tol = xir__kernel_tolerance("swiglu");
  xir_compare r = xir__case_compare(&c, y, tol);
  assert_true(r.pass);
  assert_int_equal(r.bad, 0);
  const float bad[4][6] = {{NAN, NAN, NAN, INFINITY, -INFINITY, 2.0f},   /* NaN, ref 1 */
                           {0.0f, 1.0f, NAN, INFINITY, -INFINITY, 2.0f}, /* 0, ref NaN */
                           {NAN, 1.0f, NAN, FLT_MAX, -INFINITY, 2.0f},
                           {NAN, 1.0f, NAN, INFINITY, INFINITY, 2.0f}};
  const size_t nan_count[4] = {1, 0, 0, 0};
  for (int t = 0; t < 4; t++) {
    memcpy(c.data[y], bad[t], sizeof bad[t]);
    r = xir__case_compare(&c, y, tol);
    assert_false(r.pass);
    assert_int_equal(r.bad, 1);
    assert_int_equal(r.nan, nan_count[t]);
  }
  xir__case_free(&c);
  xir_program_free(p);
}

int main(void) {
  uint32_t widths[2] = {16, 8};
  for (int i = 0; i < 2; i++) {
    xir_compiler_options o = {.force_width = widths[i]};
    xir_diag d;
    if (xir_compiler_create(&o, &g_cc[i], &d) != XIR_OK) {
      char b[1024];
      printf("# W=%u not runnable here: %s\n", widths[i], xir_diag_format(&d, b, sizeof b));
      g_cc[i] = NULL;
    }
  }
  if (!g_cc[0] && !g_cc[1]) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_softmax_mask_special),
      cmocka_unit_test(test_softmax_causal_special),
      cmocka_unit_test(test_attention_special),
      cmocka_unit_test(test_attention_causal_masked_queries),
      cmocka_unit_test(test_rmsnorm_at_the_bound),
      cmocka_unit_test(test_rmsnorm_beyond_the_bound),
      cmocka_unit_test(test_layernorm_at_the_bound),
      cmocka_unit_test(test_layernorm_beyond_the_bound),
      cmocka_unit_test(test_layernorm_small_spread),
      cmocka_unit_test(test_rope_positions_up_to_2p24),
      cmocka_unit_test(test_rope_beyond_2p24),
      cmocka_unit_test(test_reduce_max_min_special),
      cmocka_unit_test(test_check_compare_nan_rules),
  };
  int rc = cmocka_run_group_tests_name("ref_special", tests, NULL, NULL);
  xir_compiler_destroy(g_cc[0]);
  xir_compiler_destroy(g_cc[1]);
  return rc;
}

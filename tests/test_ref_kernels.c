/* test_ref_kernels.c — the fp64 reference kernels (tests/ref/ref_kernels.h) against values worked
 * out by hand, chosen so that a wrong index, a wrong axis or an off-by-one changes the answer. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_kernels.h"

#define NEAR(got, want, tol) near_((got), (want), (tol), #got, __FILE__, __LINE__)
static void near_(double got, double want, double tol, const char *expr, const char *file,
                  int line) {
  if (!(fabs(got - want) <= tol)) {
    print_error("%s:%d: %s = %.17g, expected %.17g (tol %g)\n", file, line, expr, got, want, tol);
    fail();
  }
}

static const double kTol = 1e-12;
static const double kPi = 3.14159265358979323846;

/* ---------------------------------------------------------------------------------------------- */

static void test_rmsnorm(void **state) {
  (void)state;
  /* row 0 [3, 4]: mean square 12.5; row 1 [0, 2]: mean square 2 */
  const float x[4] = {3, 4, 0, 2};
  const float w1[2] = {1, 1};
  double y[4];
  ref_rmsnorm(2, 2, x, w1, 0.0, y);
  NEAR(y[0], 3 / sqrt(12.5), kTol);
  NEAR(y[1], 4 / sqrt(12.5), kTol);
  NEAR(y[2], 0.0, kTol);
  NEAR(y[3], 2 / sqrt(2.0), kTol);
  /* per-column weights, and eps inside the sqrt */
  const float w[2] = {2, 0.5f};
  ref_rmsnorm(2, 2, x, w, 1.0, y);
  NEAR(y[0], 2 * 3 / sqrt(13.5), kTol);
  NEAR(y[1], 0.5 * 4 / sqrt(13.5), kTol);
  NEAR(y[3], 0.5 * 2 / sqrt(3.0), kTol);
  /* 1 x 4: the mean divides by C = 4 (not by the row count) */
  const float x4[4] = {1, 1, 1, 1};
  const float w4[4] = {1, 1, 1, 1};
  double y4[4];
  ref_rmsnorm(1, 4, x4, w4, 0.0, y4);
  for (int c = 0; c < 4; c++) NEAR(y4[c], 1.0, kTol);
  /* rms of the output is 1 when w = 1 and eps = 0 */
  const float xr[5] = {-1.5f, 2, 0.25f, 7, -3};
  double yr[5], ss = 0;
  const float w5[5] = {1, 1, 1, 1, 1};
  ref_rmsnorm(1, 5, xr, w5, 0.0, yr);
  for (int c = 0; c < 5; c++) ss += yr[c] * yr[c];
  NEAR(ss / 5, 1.0, kTol);
}

static void test_layernorm(void **state) {
  (void)state;
  /* [1, 2, 3, 4]: mean 2.5, var (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25 */
  const float x[8] = {1, 2, 3, 4, 10, 10, 10, 10};
  const float w1[4] = {1, 1, 1, 1}, b0[4] = {0, 0, 0, 0};
  double y[8];
  ref_layernorm(2, 4, x, w1, b0, 0.0, y);
  for (int c = 0; c < 4; c++) NEAR(y[c], (c + 1 - 2.5) / sqrt(1.25), kTol);
  /* (the constant row 1 is 0/0 with eps = 0; it is checked below with eps > 0) */
  /* per-column w and b, eps */
  const float w[4] = {1, 2, 3, 4}, b[4] = {0.5f, -1, 0, 2};
  ref_layernorm(2, 4, x, w, b, 0.75, y);
  for (int c = 0; c < 4; c++) NEAR(y[c], (c + 1 - 2.5) / sqrt(2.0) * w[c] + b[c], kTol);
  for (int c = 4; c < 8; c++) NEAR(y[c], b[c - 4], kTol); /* constant row: x - mean = 0 */
  /* w = 1: the mean of the output is the mean of b, the variance about it is ~1 */
  const float xs[6] = {0.3f, -2, 5, 1.25f, -0.5f, 8};
  const float wv[6] = {1, 1, 1, 1, 1, 1}, bv[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
  double ys[6], m = 0, mb = 0, v = 0;
  ref_layernorm(1, 6, xs, wv, bv, 0.0, ys);
  for (int c = 0; c < 6; c++) m += ys[c], mb += bv[c];
  NEAR(m / 6, mb / 6, 1e-12);
  for (int c = 0; c < 6; c++) v += (ys[c] - bv[c]) * (ys[c] - bv[c]);
  NEAR(v / 6, 1.0, 1e-12);
}

static void test_rope(void **state) {
  (void)state;
  /* R = 2, C = 8, HD = 4, theta = 100: pair 0 has frequency 1, pair 1 frequency 100^-0.5 = 0.1 */
  const float x[16] = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8};
  double y[16];
  assert_int_equal(ref_rope(2, 8, 4, x, 100.0, 0, y), 0);
  /* row 0: position 0 is the identity */
  for (int c = 0; c < 8; c++) NEAR(y[c], x[c], kTol);
  /* row 1: position 1: pair 0 of each head turns by 1 rad, pair 1 by 0.1 rad */
  const double c1 = 0.54030230586813977, s1 = 0.84147098480789651;
  const double c01 = 0.99500416527802577, s01 = 0.099833416646828155;
  for (int h = 0; h < 2; h++) {
    const double *yr = y + 8 + 4 * h;
    const float *xr = x + 8 + 4 * h;
    NEAR(yr[0], xr[0] * c1 - xr[1] * s1, kTol);
    NEAR(yr[1], xr[0] * s1 + xr[1] * c1, kTol);
    NEAR(yr[2], xr[2] * c01 - xr[3] * s01, kTol);
    NEAR(yr[3], xr[2] * s01 + xr[3] * c01, kTol);
  }
  /* the first pair turned by 1 rad: (1, 2) -> (cos1 - 2 sin1, sin1 + 2 cos1) */
  NEAR(y[8], -1.1426396637476532, 1e-12);
  NEAR(y[9], 1.9220755965441760, 1e-12);

  /* offset: row 0 with offset 10 is position 10 -> pair 1 turns by exactly 1 rad */
  double z[8];
  assert_int_equal(ref_rope(1, 8, 4, x, 100.0, 10, z), 0);
  NEAR(z[2], 3 * c1 - 4 * s1, kTol);
  NEAR(z[3], 3 * s1 + 4 * c1, kTol);
  NEAR(z[6], 7 * c1 - 8 * s1, kTol);
  NEAR(z[7], 7 * s1 + 8 * c1, kTol);
  /* negative positions rotate backwards: offset -1 on row 0 */
  assert_int_equal(ref_rope(1, 8, 4, x, 100.0, -1, z), 0);
  NEAR(z[0], 1 * c1 + 2 * s1, kTol);
  NEAR(z[1], -1 * s1 + 2 * c1, kTol);
  /* offset shifts rows: rows 3..4 with offset 0 equal rows 0..1 with offset 3 */
  float xs[5 * 4];
  for (int i = 0; i < 20; i++) xs[i] = (float)(i % 7) - 2.5f;
  double a[20], b[8];
  assert_int_equal(ref_rope(5, 4, 4, xs, 10000.0, 0, a), 0);
  float tail[8];
  memcpy(tail, xs + 12, sizeof tail);
  assert_int_equal(ref_rope(2, 4, 4, tail, 10000.0, 3, b), 0);
  for (int i = 0; i < 8; i++) NEAR(a[12 + i], b[i], kTol);
  /* theta = 10000, HD = 2: a single pair per head, at frequency theta^0 = 1; position 3 (offset
   * 3 on row 0) turns both heads by 3 rad */
  const float one[4] = {1, 0, 0, 1};
  double yo[4];
  assert_int_equal(ref_rope(1, 4, 2, one, 10000.0, 3, yo), 0);
  NEAR(yo[0], cos(3.0), kTol);
  NEAR(yo[1], sin(3.0), kTol);
  NEAR(yo[2], -sin(3.0), kTol);
  NEAR(yo[3], cos(3.0), kTol);
  /* the norm of each pair is preserved */
  NEAR(yo[0] * yo[0] + yo[1] * yo[1], 1.0, kTol);
  /* invalid head widths */
  assert_int_equal(ref_rope(1, 8, 3, x, 100.0, 0, y), -1);
  assert_int_equal(ref_rope(1, 8, 0, x, 100.0, 0, y), -1);
  assert_int_equal(ref_rope(1, 12, 8, x, 100.0, 0, y), -1);
}

static void test_rope_cache(void **state) {
  (void)state;
  /* R = 3, C = 8, HD = 4 (two heads, two pairs), P = 4 positions; the tables hold the cos/sin of
   * angle p * (i + 1) for pair i (not a geometric RoPE: any table must be read as given) */
  const float x[24] = {1, 2, 3, 4, 5, 6, 7, 8, -1, 0.5f, 2, -3, 4, 1, -2, 6, 1, 2, 3, 4, 5, 6, 7, 8};
  float ct[8], st[8];
  for (int p = 0; p < 4; p++)
    for (int i = 0; i < 2; i++) {
      ct[p * 2 + i] = (float)cos(p * (i + 1.0));
      st[p * 2 + i] = (float)sin(p * (i + 1.0));
    }
  const int64_t pos[3] = {2, 0, 3}; /* not in row order; row 1 at position 0 is the identity */
  double y[24];
  assert_int_equal(ref_rope_from_tables(3, 8, 4, 4, x, pos, ct, st, y), 0);
  for (int c = 0; c < 8; c++) NEAR(y[8 + c], x[8 + c], kTol);
  for (int r = 0; r < 3; r += 2)
    for (int h = 0; h < 2; h++)
      for (int i = 0; i < 2; i++) {
        int c0 = r * 8 + h * 4 + 2 * i;
        double cs = ct[pos[r] * 2 + i], sn = st[pos[r] * 2 + i];
        NEAR(y[c0], x[c0] * cs - x[c0 + 1] * sn, kTol);
        NEAR(y[c0 + 1], x[c0] * sn + x[c0 + 1] * cs, kTol);
      }
  /* worked by hand: row 0, head 0, pair 0 at position 2 turns (1, 2) by 2 rad */
  NEAR(y[0], (double)ct[4] * 1 - (double)st[4] * 2, kTol);
  NEAR(y[0], -2.2347416, 2e-7);
  NEAR(y[1], (double)st[4] * 1 + (double)ct[4] * 2, kTol);
  NEAR(y[1], 0.077004, 2e-6);
  /* the same position reads the same table row: rows 0 and 2 have equal x, so only the
   * positions differ; with pos[2] = 2 as well they agree */
  const int64_t same[3] = {2, 0, 2};
  double z[24];
  assert_int_equal(ref_rope_from_tables(3, 8, 4, 4, x, same, ct, st, z), 0);
  for (int c = 0; c < 8; c++) NEAR(z[16 + c], z[c], kTol);
  /* positions outside [0, P) and invalid head widths */
  const int64_t bad_hi[3] = {0, 4, 1}, bad_lo[3] = {0, -1, 1};
  assert_int_equal(ref_rope_from_tables(3, 8, 4, 4, x, bad_hi, ct, st, y), -1);
  assert_int_equal(ref_rope_from_tables(3, 8, 4, 4, x, bad_lo, ct, st, y), -1);
  assert_int_equal(ref_rope_from_tables(3, 8, 3, 4, x, pos, ct, st, y), -1);
  assert_int_equal(ref_rope_from_tables(3, 8, 0, 4, x, pos, ct, st, y), -1);
  assert_int_equal(ref_rope_from_tables(1, 12, 8, 4, x, pos, ct, st, y), -1);
}

static void test_softmax_mask(void **state) {
  (void)state;
  const double ninf = -INFINITY;
  /* equal values -> 1/C; [0, ln 3] -> [1/4, 3/4] */
  const float x[3 * 4] = {2, 2, 2, 2, 0, (float)log(3.0), 0, 0, 5, 5, 5, 5};
  const float mask[3 * 4] = {0, 0, 0, 0, 0, 0, (float)ninf, (float)ninf,
                             (float)ninf, (float)ninf, (float)ninf, (float)ninf};
  double y[12];
  ref_softmax_mask(3, 4, x, mask, 1.0, y);
  for (int c = 0; c < 4; c++) NEAR(y[c], 0.25, kTol);
  NEAR(y[4], 0.25, 1e-7); /* ln 3 rounded to float */
  NEAR(y[5], 0.75, 1e-7);
  NEAR(y[6], 0.0, 0);
  NEAR(y[7], 0.0, 0);
  for (int c = 8; c < 12; c++) {
    assert_false(isnan(y[c])); /* fully masked row: zeros, never NaN */
    NEAR(y[c], 0.0, 0);
  }
  /* scale multiplies x before the mask is added: x = [0, 1], scale = ln 3 */
  const float x2[2] = {0, 1}, m2[2] = {0, 0};
  double y2[2];
  ref_softmax_mask(1, 2, x2, m2, log(3.0), y2);
  NEAR(y2[0], 0.25, kTol);
  NEAR(y2[1], 0.75, kTol);
  /* a finite additive mask: x = [0, 0], mask = [0, ln 3] */
  const float m3[2] = {0, (float)log(3.0)}, x3[2] = {0, 0};
  ref_softmax_mask(1, 2, x3, m3, 1.0, y2);
  NEAR(y2[1], 0.75, 1e-7);
  /* stability: huge values do not overflow */
  const float xb[3] = {1000, 1000, 1000 - (float)log(2.0)}, mb[3] = {0, 0, 0};
  double yb[3];
  ref_softmax_mask(1, 3, xb, mb, 1.0, yb);
  NEAR(yb[0], 0.4, 1e-4);
  NEAR(yb[0] + yb[1] + yb[2], 1.0, kTol);
  /* each row is normalized separately */
  const float xr[2 * 3] = {1, 2, 3, 1, 2, 3}, mr[2 * 3] = {0, 0, 0, 0, 0, (float)ninf};
  double yr[6];
  ref_softmax_mask(2, 3, xr, mr, 1.0, yr);
  double e = exp(1.0), e2 = exp(2.0), e3 = exp(3.0);
  NEAR(yr[2], e3 / (e + e2 + e3), kTol);
  NEAR(yr[3], e / (e + e2), kTol);
  NEAR(yr[4], e2 / (e + e2), kTol);
}

static void test_softmax_causal(void **state) {
  (void)state;
  /* all x = 0: row r is uniform over columns 0..r */
  float x[4 * 3];
  for (int i = 0; i < 12; i++) x[i] = 0;
  double y[12];
  ref_softmax_causal(4, 3, x, 1.0, y);
  const double want[12] = {1, 0, 0, 0.5, 0.5, 0, 1 / 3., 1 / 3., 1 / 3., 1 / 3., 1 / 3., 1 / 3.};
  for (int i = 0; i < 12; i++) NEAR(y[i], want[i], kTol);
  /* scale applies to the visible part; row 1 of [[., .], [0, 1]] with scale ln 3 -> [1/4, 3/4] */
  const float x2[4] = {9, 9, 0, 1};
  double y2[4];
  ref_softmax_causal(2, 2, x2, log(3.0), y2);
  NEAR(y2[0], 1.0, kTol);
  NEAR(y2[1], 0.0, 0);
  NEAR(y2[2], 0.25, kTol);
  NEAR(y2[3], 0.75, kTol);
}

static void test_swiglu(void **state) {
  (void)state;
  const float a[5] = {0, 1, -1000, (float)log(3.0), 30};
  const float b[5] = {7, 2, 5, 4, -1};
  double y[5];
  ref_swiglu(1, 5, a, b, y);
  NEAR(y[0], 0.0, 0);
  NEAR(y[1], 2 * 0.7310585786300049, kTol); /* sigmoid(1) */
  NEAR(y[2], 0.0, kTol);                     /* no NaN for very negative a */
  assert_false(isnan(y[2]));
  NEAR(y[3], (double)(float)log(3.0) * 4 * (1 / (1 + exp(-(double)(float)log(3.0)))), kTol);
  NEAR(y[3], log(3.0) * 0.75 * 4, 1e-6); /* sigmoid(ln 3) = 3/4 */
  NEAR(y[4], -30.0, 1e-9);
  /* elementwise over R x C: a in row 1 meets b in row 1 */
  const float a2[4] = {1, 0, 0, 1}, b2[4] = {1, 1, 10, 10};
  double y2[4];
  ref_swiglu(2, 2, a2, b2, y2);
  NEAR(y2[0], 0.7310585786300049, kTol);
  NEAR(y2[2], 0.0, 0);
  NEAR(y2[3], 7.310585786300049, 1e-12);
}

static void test_gelu_residual(void **state) {
  (void)state;
  const float x[5] = {0, 1, -1, 10, -10};
  const float r[5] = {5, 0, 0, 1, 1};
  double y[5];
  ref_gelu_residual(1, 5, x, r, y);
  NEAR(y[0], 5.0, 0);
  NEAR(y[1], 0.8411919906082768, 1e-12); /* gelu_tanh(1) */
  NEAR(y[2], -0.15880800939172324, 1e-12); /* gelu_tanh(-1) = -1 + gelu_tanh(1) */
  NEAR(y[3], 11.0, 1e-12);
  NEAR(y[4], 1.0, 1e-12);
  /* the tanh form, not the erf form: they differ at x = 0.5 by ~1.6e-4 */
  const float h = 0.5f, z = 0;
  double yh;
  ref_gelu_residual(1, 1, &h, &z, &yh);
  double k = sqrt(2 / kPi);
  NEAR(yh, 0.25 * (1 + tanh(k * (0.5 + 0.044715 * 0.125))), kTol);
  assert_true(fabs(yh - 0.25 * (1 + erf(0.5 / sqrt(2.0)))) > 1e-5);
}

/* ---------------------------------------------------------------------------------------------- */
/* Attention                                                                                       */

static void test_attention_single_key(void **state) {
  (void)state;
  /* K = 1: softmax over one key is 1, so o = v whatever q is. D = 2, DV = 3. */
  const float q[1 * 1 * 2 * 2] = {5, -3, 0.1f, 100};
  const float k[2] = {0.7f, -2};
  const float v[3] = {1.5f, -4, 9};
  double o[2 * 3];
  assert_int_equal(ref_attention(1, 1, 1, 2, 1, 2, 3, q, k, v, 0.5, 0, o), 0);
  for (int i = 0; i < 2; i++)
    for (int e = 0; e < 3; e++) NEAR(o[i * 3 + e], v[e], kTol);
}

static void test_attention_weights(void **state) {
  (void)state;
  /* D = 2: q = [1, 0]; k0 = [0, 5], k1 = [ln 3, 7] -> scores [0, ln 3] -> p = [1/4, 3/4]. */
  const float q[2] = {1, 0};
  const float k[4] = {0, 5, (float)log(3.0), 7};
  const float v[4] = {1, 10, 5, 20}; /* DV = 2 */
  double o[2];
  assert_int_equal(ref_attention(1, 1, 1, 1, 2, 2, 2, q, k, v, 1.0, 0, o), 0);
  NEAR(o[0], 0.25 * 1 + 0.75 * 5, 1e-6);
  NEAR(o[1], 0.25 * 10 + 0.75 * 20, 1e-6);
  /* scale multiplies the dot product: q = [1, 0], k1 = [1, 0], scale ln 3 */
  const float k2[4] = {0, 5, 1, 7};
  assert_int_equal(ref_attention(1, 1, 1, 1, 2, 2, 2, q, k2, v, log(3.0), 0, o), 0);
  NEAR(o[0], 4.0, kTol);
  NEAR(o[1], 17.5, kTol);
}

static void test_attention_gqa_mapping(void **state) {
  (void)state;
  /* B = 2, HQ = 4, HKV = 2, Q = 1, K = 1, D = 1, DV = 1: o = v of the mapped head. Query heads
   * 0, 1 -> kv head 0; 2, 3 -> kv head 1 (hq / 2, not hq % 2). Batches use their own v. */
  const float q[2 * 4] = {1, 1, 1, 1, 1, 1, 1, 1};
  const float k[2 * 2] = {1, 1, 1, 1};
  const float v[2 * 2] = {10, 20, 30, 40}; /* [b][hkv] */
  double o[2 * 4];
  assert_int_equal(ref_attention(2, 4, 2, 1, 1, 1, 1, q, k, v, 1.0, 0, o), 0);
  const double want[8] = {10, 10, 20, 20, 30, 30, 40, 40};
  for (int i = 0; i < 8; i++) NEAR(o[i], want[i], kTol);

  /* HQ = 6, HKV = 3 with two keys: head hkv's keys are [0, ln 3 * (hkv + 1)] against q = [1], so
   * every query head sees weights that depend on its kv head. */
  float q6[6], k6[3 * 2], v6[3 * 2];
  for (int h = 0; h < 6; h++) q6[h] = 1;
  for (int h = 0; h < 3; h++) {
    k6[h * 2 + 0] = 0;
    k6[h * 2 + 1] = (float)(h + 1);
    v6[h * 2 + 0] = 0;
    v6[h * 2 + 1] = 1; /* o = weight of key 1 */
  }
  double o6[6];
  assert_int_equal(ref_attention(1, 6, 3, 1, 2, 1, 1, q6, k6, v6, 1.0, 0, o6), 0);
  for (int hq = 0; hq < 6; hq++) {
    double s = (double)(hq / 2 + 1);
    NEAR(o6[hq], exp(s) / (1 + exp(s)), kTol);
  }
  /* MHA (HQ == HKV) and MQA (HKV == 1) */
  assert_int_equal(ref_attention(1, 3, 3, 1, 2, 1, 1, q6, k6, v6, 1.0, 0, o6), 0);
  for (int h = 0; h < 3; h++) NEAR(o6[h], exp(h + 1.0) / (1 + exp(h + 1.0)), kTol);
  assert_int_equal(ref_attention(1, 3, 1, 1, 2, 1, 1, q6, k6, v6, 1.0, 0, o6), 0);
  for (int h = 0; h < 3; h++) NEAR(o6[h], exp(1.0) / (1 + exp(1.0)), kTol);
  /* HKV must divide HQ */
  assert_int_equal(ref_attention(1, 4, 3, 1, 1, 1, 1, q, k, v, 1.0, 0, o), -1);
  assert_int_equal(ref_attention(1, 4, 0, 1, 1, 1, 1, q, k, v, 1.0, 0, o), -1);
}

static void test_attention_causal(void **state) {
  (void)state;
  /* q = k = 0: all visible keys weigh the same, so o[i] = mean of v over the visible keys.
   * v[j] = 10^j makes every visible set distinguishable. */
  float q[4] = {0}, k[4] = {0};
  const float v[4] = {1, 10, 100, 1000};
  double o[4];
  /* Q = K = 3: query i sees keys 0..i */
  assert_int_equal(ref_attention(1, 1, 1, 3, 3, 1, 1, q, k, v, 1.0, 1, o), 0);
  NEAR(o[0], 1, kTol);
  NEAR(o[1], 11 / 2.0, kTol);
  NEAR(o[2], 111 / 3.0, kTol);
  /* Q = 2, K = 4: K - Q = 2, query 0 sees keys 0..2, query 1 sees 0..3 */
  assert_int_equal(ref_attention(1, 1, 1, 2, 4, 1, 1, q, k, v, 1.0, 1, o), 0);
  NEAR(o[0], 111 / 3.0, kTol);
  NEAR(o[1], 1111 / 4.0, kTol);
  /* Q = 3, K = 2: K - Q = -1, query 0 sees nothing (zeros, not NaN), 1 sees key 0, 2 sees 0..1 */
  assert_int_equal(ref_attention(1, 1, 1, 3, 2, 1, 1, q, k, v, 1.0, 1, o), 0);
  assert_false(isnan(o[0]));
  NEAR(o[0], 0, 0);
  NEAR(o[1], 1, kTol);
  NEAR(o[2], 11 / 2.0, kTol);
  /* not causal: everything visible */
  assert_int_equal(ref_attention(1, 1, 1, 3, 2, 1, 1, q, k, v, 1.0, 0, o), 0);
  for (int i = 0; i < 3; i++) NEAR(o[i], 11 / 2.0, kTol);
  /* K = 0: nothing to attend to */
  assert_int_equal(ref_attention(1, 1, 1, 2, 0, 1, 1, q, k, v, 1.0, 0, o), 0);
  NEAR(o[0], 0, 0);
  NEAR(o[1], 0, 0);
}

/* Special values, as NumPy's exp(z - max z) / sum(...) gives them: NaN anywhere in a row makes the
 * row NaN, +inf makes it NaN (exp(inf - inf)), -inf weighs 0, and only a row of nothing but -inf
 * is the defined fully masked case (zeros). */
static void test_softmax_special_values(void **state) {
  (void)state;
  const float inf = INFINITY, nan = NAN;
  const float x[6 * 3] = {1, nan, 2,  1, inf, 2,  1, -inf, 2,
                          -inf, -inf, -inf,  inf, inf, inf,  nan, nan, nan};
  const float m0[6 * 3] = {0};
  double y[18];
  ref_softmax_mask(6, 3, x, m0, 1.0, y);
  for (int c = 0; c < 3; c++) {
    assert_true(isnan(y[0 + c]));  /* NaN in the row */
    assert_true(isnan(y[3 + c]));  /* +inf in the row */
    assert_true(y[9 + c] == 0.0);  /* every column -inf: zeros */
    assert_true(isnan(y[12 + c])); /* all +inf */
    assert_true(isnan(y[15 + c])); /* all NaN: NaN, not "masked" */
  }
  const double e = exp(1.0);
  NEAR(y[6], 1 / (1 + e), kTol); /* -inf weighs 0: softmax of [1, 2] */
  NEAR(y[7], 0.0, 0);
  NEAR(y[8], e / (1 + e), kTol);
  /* additive mask: +inf + -inf = NaN (the row is NaN); NaN under a -inf mask is still NaN */
  const float x2[2 * 2] = {inf, 1, nan, 1};
  const float mk[2 * 2] = {-inf, 0, -inf, 0};
  double y2[4];
  ref_softmax_mask(2, 2, x2, mk, 1.0, y2);
  for (int i = 0; i < 4; i++) assert_true(isnan(y2[i]));
  /* causal: a NaN or +inf in a masked column (c > r) is never seen; in a visible one it is */
  const float xc[3 * 3] = {1, nan, inf, nan, 1, inf, 1, inf, 1};
  double yc[9];
  ref_softmax_causal(3, 3, xc, 1.0, yc);
  NEAR(yc[0], 1.0, 0);
  NEAR(yc[1], 0.0, 0);
  NEAR(yc[2], 0.0, 0);
  for (int i = 3; i < 9; i++) assert_true(isnan(yc[i]));
}

static void test_attention_special_values(void **state) {
  (void)state;
  const float inf = INFINITY, nan = NAN;
  /* D = 1, DV = 1, Q = 3, K = 2: k = [1, 2], v = [10, 20]. Query 0 = NaN: a NaN row. Query 1 = 1:
   * weights softmax([1, 2]). Query 2 = 0: uniform. */
  const float q[3] = {nan, 1, 0};
  const float k[2] = {1, 2};
  const float v[2] = {10, 20};
  double o[3];
  assert_int_equal(ref_attention(1, 1, 1, 3, 2, 1, 1, q, k, v, 1.0, 0, o), 0);
  assert_true(isnan(o[0]));
  const double e = exp(1.0);
  NEAR(o[1], (10 + 20 * e) / (1 + e), kTol);
  NEAR(o[2], 15.0, kTol);
  /* a +inf key: score +inf for q > 0 (NaN row), -inf for q < 0 (that key weighs 0), NaN for
   * q = 0 (inf * 0) */
  const float qi[3] = {1, -1, 0};
  const float ki[2] = {inf, 2};
  assert_int_equal(ref_attention(1, 1, 1, 3, 2, 1, 1, qi, ki, v, 1.0, 0, o), 0);
  assert_true(isnan(o[0]));
  NEAR(o[1], 20.0, kTol);
  assert_true(isnan(o[2]));
  /* a +inf value: +inf where its key has weight > 0; causal, a query that does not see it gets
   * 0 * inf = NaN, and a query that sees no key at all gets zeros */
  const float qz[3] = {0, 0, 0};
  const float kz[2] = {0, 0};
  const float vi[2] = {1, inf};
  assert_int_equal(ref_attention(1, 1, 1, 3, 2, 1, 1, qz, kz, vi, 1.0, 0, o), 0);
  for (int i = 0; i < 3; i++) assert_true(o[i] == inf);
  assert_int_equal(ref_attention(1, 1, 1, 3, 2, 1, 1, qz, kz, vi, 1.0, 1, o), 0);
  NEAR(o[0], 0.0, 0); /* sees nothing (K - Q = -1) */
  assert_true(isnan(o[1])); /* sees key 0 only: 1 * 1 + 0 * inf */
  assert_true(o[2] == inf);
}

/* The report's attention shape against a direct, separately written evaluation of one entry. */
static void test_attention_report_shape(void **state) {
  (void)state;
  enum { B = 1, HQ = 4, HKV = 2, Q = 16, K = 32, D = 16, DV = 16 };
  float *q = malloc(sizeof(float) * B * HQ * Q * D), *k = malloc(sizeof(float) * B * HKV * K * D),
        *v = malloc(sizeof(float) * B * HKV * K * DV);
  double *o = malloc(sizeof(double) * B * HQ * Q * DV);
  assert_true(q && k && v && o);
  for (int i = 0; i < B * HQ * Q * D; i++) q[i] = (float)((i * 37 % 101) - 50) / 50.0f;
  for (int i = 0; i < B * HKV * K * D; i++) k[i] = (float)((i * 53 % 97) - 48) / 48.0f;
  for (int i = 0; i < B * HKV * K * DV; i++) v[i] = (float)((i * 29 % 89) - 44) / 44.0f;
  double scale = 1 / sqrt((double)D);
  assert_int_equal(ref_attention(B, HQ, HKV, Q, K, D, DV, q, k, v, scale, 1, o), 0);
  /* check (hq = 3, i = 5, e = 7): kv head 3 / (4/2) = 1; keys j <= 5 + (32 - 16), i.e. 0..21 */
  int hq = 3, i = 5, e = 7, hkv = 1;
  double s[K], m = -INFINITY, sum = 0, want = 0;
  int nvis = i + (K - Q) + 1;
  for (int j = 0; j < nvis; j++) {
    double dot = 0;
    for (int d = 0; d < D; d++) dot += (double)q[(hq * Q + i) * D + d] * k[(hkv * K + j) * D + d];
    s[j] = dot * scale;
    if (s[j] > m) m = s[j];
  }
  for (int j = 0; j < nvis; j++) sum += exp(s[j] - m);
  for (int j = 0; j < nvis; j++) want += exp(s[j] - m) / sum * v[(hkv * K + j) * DV + e];
  NEAR(o[(hq * Q + i) * DV + e], want, 1e-12);
  /* and the rows are convex combinations of v: |o| <= max |v| = 1 */
  for (int t = 0; t < B * HQ * Q * DV; t++) assert_true(fabs(o[t]) <= 1.0 + 1e-12);
  free(q);
  free(k);
  free(v);
  free(o);
}

static void test_compare(void **state) {
  (void)state;
  const float got[3] = {1, 2, 3};
  const double want[3] = {1, 2, 3.5};
  double ma, rel;
  ref_compare(got, want, 3, &ma, &rel);
  NEAR(ma, 0.5, kTol);
  NEAR(rel, 0.5 / sqrt(1 + 4 + 12.25), kTol);
  const float bad[3] = {1, NAN, 3};
  ref_compare(bad, want, 3, &ma, &rel);
  assert_true(isinf(ma) && isinf(rel));
  const float inf[1] = {-INFINITY};
  const double winf[1] = {-INFINITY};
  ref_compare(inf, winf, 1, &ma, &rel);
  NEAR(ma, 0, 0);
  const double zero[3] = {0, 0, 0};
  ref_compare(got, zero, 3, NULL, &rel);
  NEAR(rel, sqrt(14.0), kTol);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rmsnorm),
      cmocka_unit_test(test_layernorm),
      cmocka_unit_test(test_rope),
      cmocka_unit_test(test_rope_cache),
      cmocka_unit_test(test_softmax_mask),
      cmocka_unit_test(test_softmax_causal),
      cmocka_unit_test(test_swiglu),
      cmocka_unit_test(test_gelu_residual),
      cmocka_unit_test(test_attention_single_key),
      cmocka_unit_test(test_attention_weights),
      cmocka_unit_test(test_attention_gqa_mapping),
      cmocka_unit_test(test_attention_causal),
      cmocka_unit_test(test_attention_report_shape),
      cmocka_unit_test(test_softmax_special_values),
      cmocka_unit_test(test_attention_special_values),
      cmocka_unit_test(test_compare),
  };
  return cmocka_run_group_tests_name("ref_kernels", tests, NULL, NULL);
}

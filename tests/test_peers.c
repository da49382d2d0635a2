/* test_peers.c — the hand-written C peers (peers/c/xir_peers.h) against the fp64 references of
 * tests/ref/ref_kernels.h (rope_cache: a reference written here): every kernel, every variant
 * (c_fast_omp, c_fast_1t, c_strict_omp), seeded random inputs at regular and ragged shapes,
 * sentinels around every output, and the tolerances `xir bench` checks them with; and the
 * streaming probe, bit for bit. Under ThreadSanitizer the multi-threaded variants and the probe
 * are skipped (libgomp is not TSan-instrumented). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check.h"
#include "ref_kernels.h"
#include "testutil.h"
#include "util/rng.h"
#include "xir_peers.h"

#if defined(__SANITIZE_THREAD__)
#define PEERS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PEERS_TSAN 1
#endif
#endif
#ifndef PEERS_TSAN
#define PEERS_TSAN 0
#endif

static int variant_enabled(const char *variant) {
  return !(PEERS_TSAN && xir_peer_threads(variant) > 1);
}

/* rope_cache's inputs: positions (integers in [0, P), some repeated, not in row order) and
 * cos/sin tables of seeded values. */
static void fill_rope_cache(const int64_t *d, float *const in[8], uint64_t seed) {
  const int64_t R = d[0], P = d[3], H2 = d[4];
  for (int64_t r = 0; r < R; r++) in[1][r] = (float)((r * 7 + (int64_t)(seed % 5)) % (P ? P : 1));
  if (R > 2 && P > 1) { /* both ends of the table */
    in[1][R - 1] = (float)(P - 1);
    in[1][1] = 0.0f;
  }
  xir_rng rng;
  xir__rng_seed(&rng, seed, 17);
  for (int64_t i = 0; i < P * H2; i++) {
    float ang;
    assert_int_equal(xir__rng_fill_f32(&rng, &ang, 1, -3.0f, 3.0f, NULL), XIR_OK);
    in[2][i] = cosf(ang);
    in[3][i] = sinf(ang);
  }
}

/* The fp64 reference of rope_cache (dims R, C, HD, P, H2). */
static void ref_rope_cache(const int64_t *d, float *const in[8], double *want) {
  const int64_t R = d[0], C = d[1], HD = d[2], H2 = d[4];
  for (int64_t r = 0; r < R; r++) {
    const int64_t p = (int64_t)in[1][r];
    for (int64_t h = 0; h < C / HD; h++)
      for (int64_t i = 0; i < H2; i++) {
        const size_t j = (size_t)(r * C + h * HD + 2 * i);
        const double x0 = in[0][j], x1 = in[0][j + 1];
        const double cs = in[2][p * H2 + i], sn = in[3][p * H2 + i];
        want[j] = x0 * cs - x1 * sn;
        want[j + 1] = x0 * sn + x1 * cs;
      }
  }
}

enum { MASK_NONE, MASK_SOME_INF }; /* softmax_mask: add -inf entries and one fully masked row */

typedef struct pcase {
  const char *kernel;
  int64_t dims[8];
  double scalar[4];
  int special;
} pcase;

/* Number of inputs and their element counts, and the output's element count. */
static int shapes_of(const pcase *c, size_t in_n[8], size_t *out_n) {
  const int64_t *d = c->dims;
  const char *k = c->kernel;
  if (strncmp(k, "attention", 9) == 0) {
    size_t B = (size_t)d[0], HQ = (size_t)d[1], HKV = (size_t)d[2], Q = (size_t)d[3],
           K = (size_t)d[4], D = (size_t)d[5], DV = (size_t)d[6];
    in_n[0] = B * HQ * Q * D;
    in_n[1] = B * HKV * K * D;
    in_n[2] = B * HKV * K * DV;
    *out_n = B * HQ * Q * DV;
    return 3;
  }
  size_t R = (size_t)d[0], C = (size_t)d[1];
  *out_n = R * C;
  in_n[0] = R * C;
  if (!strcmp(k, "rmsnorm")) {
    in_n[1] = C;
    return 2;
  }
  if (!strcmp(k, "layernorm")) {
    in_n[1] = in_n[2] = C;
    return 3;
  }
  if (!strcmp(k, "rope") || !strcmp(k, "softmax_causal")) return 1;
  if (!strcmp(k, "rope_cache")) {
    in_n[1] = R;
    in_n[2] = in_n[3] = (size_t)d[3] * (size_t)d[4];
    return 4;
  }
  in_n[1] = R * C; /* softmax_mask, swiglu, gelu_residual */
  return 2;
}

/* The fp64 reference of case c into want. */
static void reference(const pcase *c, float *const in[8], double *want) {
  const int64_t *d = c->dims;
  size_t R = (size_t)d[0], C = (size_t)d[1];
  const char *k = c->kernel;
  if (!strcmp(k, "rmsnorm")) ref_rmsnorm(R, C, in[0], in[1], c->scalar[0], want);
  else if (!strcmp(k, "layernorm")) ref_layernorm(R, C, in[0], in[1], in[2], c->scalar[0], want);
  else if (!strcmp(k, "rope"))
    assert_int_equal(ref_rope(R, C, (size_t)d[2], in[0], c->scalar[0], (int64_t)c->scalar[1], want), 0);
  else if (!strcmp(k, "rope_cache")) ref_rope_cache(d, in, want);
  else if (!strcmp(k, "softmax_mask")) ref_softmax_mask(R, C, in[0], in[1], c->scalar[0], want);
  else if (!strcmp(k, "softmax_causal")) ref_softmax_causal(R, C, in[0], c->scalar[0], want);
  else if (!strcmp(k, "swiglu")) ref_swiglu(R, C, in[0], in[1], want);
  else if (!strcmp(k, "gelu_residual")) ref_gelu_residual(R, C, in[0], in[1], want);
  else {
    double scale = c->scalar[0] != 0 ? c->scalar[0] : 1.0 / sqrt((double)d[5]);
    assert_int_equal(ref_attention((size_t)d[0], (size_t)d[1], (size_t)d[2], (size_t)d[3],
                                   (size_t)d[4], (size_t)d[5], (size_t)d[6], in[0], in[1], in[2],
                                   scale, !strcmp(k, "attention_causal"), want),
                     0);
  }
}

/* Runs case c with `variant` and checks it. */
static void run_case(const char *variant, const pcase *c, uint64_t seed) {
  xir_peer_fn fn = xir_peer_find(c->kernel, variant);
  assert_non_null(fn);
  size_t in_n[8] = {0}, out_n = 0;
  int nin = shapes_of(c, in_n, &out_n);

  float *in[8] = {0};
  xir_peer_args args;
  memset(&args, 0, sizeof args);
  for (int i = 0; i < nin; i++) {
    in[i] = malloc((in_n[i] ? in_n[i] : 1) * sizeof(float));
    assert_non_null(in[i]);
    xir_rng rng;
    xir__rng_seed(&rng, seed, (uint64_t)i);
    int qk = strncmp(c->kernel, "attention", 9) == 0 && i < 2;
    assert_int_equal(xir__rng_fill_f32(&rng, in[i], in_n[i], qk ? -1.0f : -2.0f,
                                       qk ? 1.0f : 2.0f, NULL), XIR_OK);
    args.in[i] = in[i];
  }
  if (!strcmp(c->kernel, "rope_cache")) fill_rope_cache(c->dims, in, seed);
  if (c->special == MASK_SOME_INF) {
    size_t R = (size_t)c->dims[0], C = (size_t)c->dims[1];
    for (size_t j = 0; j < R * C; j += 3) in[1][j] = -INFINITY;
    if (R > 1)
      for (size_t j = 0; j < C; j++) in[1][C + j] = -INFINITY; /* row 1 fully masked */
  }
  memcpy(args.dims, c->dims, sizeof args.dims);
  memcpy(args.scalar, c->scalar, sizeof args.scalar);

  guarded_f32 out;
  assert_int_equal(guarded_alloc(&out, out_n), 0);
  args.out = out.data;
  double *want = malloc((out_n ? out_n : 1) * sizeof(double));
  assert_non_null(want);
  reference(c, in, want);

  assert_int_equal(fn(&args), XIR_PEER_OK);
  assert_true(guarded_intact(&out));

  xir_tolerance tol = xir__kernel_tolerance(c->kernel);
  size_t bad = 0, first = 0;
  double max_err = 0;
  for (size_t i = 0; i < out_n; i++) {
    double got = out.data[i], e = fabs(got - want[i]);
    int ok = !isnan(got) && e <= tol.atol + tol.rtol * fabs(want[i]);
    if (!ok && !bad++) first = i;
    if (e > max_err) max_err = e;
  }
  if (bad) {
    print_error("%s/%s dims %lld,%lld,%lld,%lld,%lld,%lld,%lld: %zu bad of %zu, first [%zu] got %.9g "
                "want %.9g, max err %g\n",
                variant, c->kernel, (long long)c->dims[0], (long long)c->dims[1],
                (long long)c->dims[2], (long long)c->dims[3], (long long)c->dims[4],
                (long long)c->dims[5], (long long)c->dims[6], bad, out_n, first,
                (double)out.data[first], want[first], max_err);
    fail();
  }

  /* Same inputs, same output, bit for bit (static schedule, no shared accumulators). */
  guarded_f32 again;
  assert_int_equal(guarded_alloc(&again, out_n), 0);
  args.out = again.data;
  assert_int_equal(fn(&args), XIR_PEER_OK);
  assert_true(guarded_intact(&again));
  assert_memory_equal(again.data, out.data, out_n * sizeof(float));

  guarded_free(&again);
  guarded_free(&out);
  free(want);
  for (int i = 0; i < nin; i++) free(in[i]);
}

/* Every variant of xir_peer_variants() (the headline ones and c_strict_omp). */
static void run_all(const pcase *cases, size_t n) {
  const char *const *v = xir_peer_variants();
  for (size_t j = 0; v[j]; j++) {
    if (!variant_enabled(v[j])) continue;
    for (size_t i = 0; i < n; i++) run_case(v[j], &cases[i], 0x5eed0000u + i);
  }
}

/* ---------------------------------------------------------------------------------------------- */

static const int64_t kRowShapes[][2] = {{1, 1},     {3, 7},    {17, 65},  {64, 256},
                                        {129, 768}, {5, 1538}, {1, 4096}, {3, 1000}};
#define NROWSHAPES (sizeof kRowShapes / sizeof kRowShapes[0])

static void rows_kernel(const char *kernel, double s0) {
  pcase cases[NROWSHAPES];
  for (size_t i = 0; i < NROWSHAPES; i++)
    cases[i] = (pcase){kernel, {kRowShapes[i][0], kRowShapes[i][1]}, {s0}, MASK_NONE};
  run_all(cases, NROWSHAPES);
}

static void test_rmsnorm(void **state) {
  (void)state;
  rows_kernel("rmsnorm", 1e-5);
  const pcase big_eps[] = {{"rmsnorm", {17, 65}, {0.5}, MASK_NONE}};
  run_all(big_eps, 1);
}

static void test_layernorm(void **state) {
  (void)state;
  rows_kernel("layernorm", 1e-5);
}

static void test_rope(void **state) {
  (void)state;
  const pcase cases[] = {
      {"rope", {3, 8, 4}, {10000, 0}, MASK_NONE},    {"rope", {17, 64, 16}, {10000, 0}, MASK_NONE},
      {"rope", {129, 768, 64}, {10000, 0}, MASK_NONE}, {"rope", {5, 6, 6}, {10000, 3}, MASK_NONE},
      {"rope", {2, 2, 2}, {500, 0}, MASK_NONE},      {"rope", {7, 96, 32}, {10000, 100}, MASK_NONE},
  };
  run_all(cases, sizeof cases / sizeof cases[0]);
}

/* dims R, C, HD, P, H2 */
static void test_rope_cache(void **state) {
  (void)state;
  const pcase cases[] = {
      {"rope_cache", {3, 8, 4, 5, 2}, {0}, MASK_NONE},
      {"rope_cache", {17, 64, 16, 40, 8}, {0}, MASK_NONE},
      {"rope_cache", {129, 768, 128, 300, 64}, {0}, MASK_NONE},
      {"rope_cache", {1, 6, 6, 1, 3}, {0}, MASK_NONE},
      {"rope_cache", {7, 100, 50, 9, 25}, {0}, MASK_NONE}, /* H2 odd */
      {"rope_cache", {3, 1000, 100, 4096, 50}, {0}, MASK_NONE},
  };
  run_all(cases, sizeof cases / sizeof cases[0]);

  /* a position that is not an integer in [0, P), or H2 != HD/2: an error, nothing written */
  const char *const *v = xir_peer_variants();
  for (size_t j = 0; v[j]; j++) {
    if (!variant_enabled(v[j])) continue;
    xir_peer_fn fn = xir_peer_find("rope_cache", v[j]);
    assert_non_null(fn);
    float x[8], pos[2], tab[8], y[8];
    for (int i = 0; i < 8; i++) x[i] = tab[i] = 0.5f, y[i] = 42.0f;
    xir_peer_args a;
    memset(&a, 0, sizeof a);
    a.in[0] = x, a.in[1] = pos, a.in[2] = a.in[3] = tab, a.out = y;
    int64_t d[5] = {2, 4, 4, 4, 2};
    memcpy(a.dims, d, sizeof d);
    const float bad[] = {-1.0f, 4.0f, 1.5f, NAN, INFINITY};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
      pos[0] = 0.0f, pos[1] = bad[b];
      assert_int_equal(fn(&a), XIR_PEER_EINVAL);
    }
    pos[1] = 3.0f;
    a.dims[4] = 3;
    assert_int_equal(fn(&a), XIR_PEER_EINVAL);
    a.dims[4] = 2, a.dims[3] = 0;
    assert_int_equal(fn(&a), XIR_PEER_EINVAL); /* P = 0: no position is valid */
    for (int i = 0; i < 8; i++) assert_true(y[i] == 42.0f);
    a.dims[3] = 4;
    assert_int_equal(fn(&a), XIR_PEER_OK);
    /* x0 cos - x1 sin = 0.25 - 0.25, x0 sin + x1 cos = 0.5 */
    for (int i = 0; i < 8; i++) assert_true(y[i] == (i % 2 ? 0.5f : 0.0f));
  }
}

static void test_softmax_mask(void **state) {
  (void)state;
  rows_kernel("softmax_mask", 1.0);
  const pcase cases[] = {
      {"softmax_mask", {3, 7}, {1.0}, MASK_SOME_INF},
      {"softmax_mask", {17, 65}, {0.125}, MASK_SOME_INF},
      {"softmax_mask", {129, 768}, {3.0}, MASK_NONE},
  };
  run_all(cases, sizeof cases / sizeof cases[0]);
}

static void test_softmax_causal(void **state) {
  (void)state;
  rows_kernel("softmax_causal", 1.0);
  const pcase cases[] = {
      {"softmax_causal", {65, 17}, {0.5}, MASK_NONE}, /* R > C: late rows see every column */
      {"softmax_causal", {7, 3}, {2.0}, MASK_NONE},
  };
  run_all(cases, sizeof cases / sizeof cases[0]);
}

static void test_swiglu(void **state) {
  (void)state;
  rows_kernel("swiglu", 0);
}

static void test_gelu_residual(void **state) {
  (void)state;
  rows_kernel("gelu_residual", 0);
}

static void test_attention(void **state) {
  (void)state;
  const pcase cases[] = {
      {"attention", {1, 4, 2, 16, 32, 16, 16}, {0}, MASK_NONE},
      {"attention", {2, 3, 1, 5, 7, 3, 5}, {0}, MASK_NONE},
      {"attention", {1, 8, 2, 33, 65, 64, 48}, {0.1}, MASK_NONE},
      {"attention", {2, 2, 2, 3, 0, 4, 4}, {0}, MASK_NONE}, /* K = 0: zero rows */
      {"attention_causal", {1, 4, 2, 16, 32, 16, 16}, {0}, MASK_NONE},
      {"attention_causal", {2, 3, 1, 5, 7, 3, 5}, {0}, MASK_NONE},
      {"attention_causal", {2, 4, 2, 9, 4, 8, 8}, {0}, MASK_NONE},  /* Q > K: masked queries */
      {"attention_causal", {1, 2, 1, 16, 16, 32, 16}, {0.25}, MASK_NONE},
      /* the blocked peer (issue 10): odd shapes across its query blocks (64 rows: 64 queries
       * at HQ/HKV = 1, 32 at 2, 16 at 4) and key blocks (64 keys), HQ/HKV = 1, 2, 4, causal
       * with Q > K (fully masked queries) and Q < K (the diagonal inside a key block) */
      {"attention", {1, 3, 3, 67, 131, 9, 7}, {0}, MASK_NONE},
      {"attention", {2, 4, 2, 35, 65, 17, 5}, {0}, MASK_NONE},
      {"attention", {1, 8, 2, 1, 200, 33, 40}, {0}, MASK_NONE},   /* decode-like: Q = 1 */
      {"attention", {1, 70, 1, 3, 66, 5, 3}, {0}, MASK_NONE},     /* HQ/HKV = 70 > 64 rows */
      {"attention_causal", {1, 2, 2, 131, 67, 9, 7}, {0}, MASK_NONE},   /* Q > K, HQ/HKV = 1 */
      {"attention_causal", {2, 4, 2, 37, 150, 17, 5}, {0}, MASK_NONE},  /* Q < K, 2 */
      {"attention_causal", {1, 8, 2, 19, 19, 11, 13}, {0}, MASK_NONE},  /* Q = K, 4 */
      {"attention_causal", {1, 4, 1, 70, 3, 8, 8}, {0}, MASK_NONE},     /* Q >> K, 4 */
      {"attention_causal", {1, 4, 1, 3, 130, 8, 8}, {0}, MASK_NONE},    /* Q << K, 4 */
      /* DV a multiple of the 32-column tile (V read in place), with one row tile (decode: the
       * scores as dot products) and with several */
      {"attention", {1, 8, 2, 1, 130, 64, 64}, {0}, MASK_NONE},
      {"attention", {1, 4, 2, 20, 70, 16, 64}, {0}, MASK_NONE},
      {"attention_causal", {2, 2, 1, 33, 47, 24, 32}, {0}, MASK_NONE},
  };
  run_all(cases, sizeof cases / sizeof cases[0]);
}

/* Names, invalid arguments (nothing written), empty outputs. */
static void test_api(void **state) {
  (void)state;
  const char *const *v = xir_peer_variants();
  const char *const *k = xir_peer_kernels();
  size_t nv = 0, nk = 0;
  while (v[nv]) nv++;
  while (k[nk]) nk++;
  assert_int_equal(nv, 3);
  assert_int_equal(nk, 10);
  for (size_t i = 0; i < nv; i++) {
    assert_true(xir_peer_threads(v[i]) >= 1);
    for (size_t j = 0; j < nk; j++) assert_non_null(xir_peer_find(k[j], v[i]));
  }
  assert_string_equal(v[0], "c_fast_omp");
  assert_string_equal(v[1], "c_fast_1t");
  assert_string_equal(v[2], "c_strict_omp");
  assert_int_equal(xir_peer_threads("c_fast_omp"), 2);
  assert_int_equal(xir_peer_threads("c_fast_1t"), 1);
  assert_int_equal(xir_peer_threads("c_strict_omp"), 2);
  assert_int_equal(xir_peer_threads("nope"), 0);
  assert_int_equal(xir_peer_threads("c_omp"), 0); /* the old names are gone */
  assert_int_equal(xir_peer_threads("c_fastmath"), 0);
  assert_int_equal(xir_peer_threads(NULL), 0);
  /* the headline variants: the fast ones, not the strict one */
  const char *const *hl = xir_peer_headline_variants();
  assert_string_equal(hl[0], "c_fast_omp");
  assert_string_equal(hl[1], "c_fast_1t");
  assert_null(hl[2]);
  assert_null(xir_peer_find("rmsnorm", "c_nope"));
  assert_null(xir_peer_find("matmul", "c_fast_omp"));
  assert_null(xir_peer_find(NULL, "c_fast_omp"));
  assert_null(xir_peer_find("rmsnorm", NULL));
  assert_null(xir_peer_find("rmsnorm", "c_omp"));
  /* the dims each peer reads, by name */
  const struct {
    const char *kernel, *dims;
  } want_dims[] = {{"rmsnorm", "R,C"},          {"rope", "R,C,HD"},
                   {"rope_cache", "R,C,HD,P,H2"}, {"gelu_residual", "R,C"},
                   {"attention", "B,HQ,HKV,Q,K,D,DV"}, {"attention_causal", "B,HQ,HKV,Q,K,D,DV"}};
  for (size_t i = 0; i < sizeof want_dims / sizeof want_dims[0]; i++) {
    const char *const *dn = xir_peer_dims(want_dims[i].kernel);
    assert_non_null(dn);
    char got[64] = "";
    for (size_t j = 0; dn[j]; j++) {
      if (j) strcat(got, ",");
      strcat(got, dn[j]);
    }
    assert_string_equal(got, want_dims[i].dims);
  }
  for (size_t j = 0; j < nk; j++) assert_non_null(xir_peer_dims(k[j]));
  assert_null(xir_peer_dims("matmul"));
  assert_null(xir_peer_dims(NULL));

  float x[16], y[16];
  for (int i = 0; i < 16; i++) x[i] = (float)i + 1;
  for (size_t i = 0; i < nv; i++) {
    if (!variant_enabled(v[i])) continue;
    xir_peer_args a;
    memset(&a, 0, sizeof a);
    a.in[0] = a.in[1] = a.in[2] = x;
    a.out = y;
    for (int j = 0; j < 16; j++) y[j] = 42.0f;
    /* rope: HD odd, HD not dividing C, HD 0 */
    a.dims[0] = 2, a.dims[1] = 8, a.dims[2] = 3;
    a.scalar[0] = 10000;
    assert_int_equal(xir_peer_find("rope", v[i])(&a), XIR_PEER_EINVAL);
    a.dims[2] = 6;
    assert_int_equal(xir_peer_find("rope", v[i])(&a), XIR_PEER_EINVAL);
    a.dims[2] = 0;
    assert_int_equal(xir_peer_find("rope", v[i])(&a), XIR_PEER_EINVAL);
    /* negative dim, NULL buffer */
    a.dims[0] = -1, a.dims[1] = 4;
    assert_int_equal(xir_peer_find("rmsnorm", v[i])(&a), XIR_PEER_EINVAL);
    a.dims[0] = 2;
    a.in[1] = NULL;
    assert_int_equal(xir_peer_find("rmsnorm", v[i])(&a), XIR_PEER_EINVAL);
    a.in[1] = x;
    assert_int_equal(xir_peer_find("rmsnorm", v[i])(NULL), XIR_PEER_EINVAL);
    /* attention: HKV 0, HKV not dividing HQ */
    int64_t ad[7] = {1, 3, 0, 2, 2, 2, 2};
    memcpy(a.dims, ad, sizeof ad);
    assert_int_equal(xir_peer_find("attention", v[i])(&a), XIR_PEER_EINVAL);
    a.dims[2] = 2;
    assert_int_equal(xir_peer_find("attention_causal", v[i])(&a), XIR_PEER_EINVAL);
    for (int j = 0; j < 16; j++) assert_true(y[j] == 42.0f);
    /* empty outputs: nothing to do, nothing touched (even with NULL buffers) */
    memset(a.dims, 0, sizeof a.dims);
    a.dims[1] = 4;
    a.in[0] = a.in[1] = a.in[2] = NULL;
    a.out = NULL;
    for (size_t j = 0; j < nk; j++) {
      if (!strcmp(k[j], "rope")) a.dims[2] = 2;
      else if (!strcmp(k[j], "rope_cache")) a.dims[2] = 2, a.dims[4] = 1;
      else if (!strncmp(k[j], "attention", 9)) a.dims[2] = 1;
      assert_int_equal(xir_peer_find(k[j], v[i])(&a), XIR_PEER_OK);
    }
  }
}

/* The streaming probe: out = the inputs of out's size summed left to right (bit for bit), the
 * others read into the sink; invalid arguments. */
static void test_stream(void **state) {
  (void)state;
  if (PEERS_TSAN) skip();
  const size_t sizes[] = {1, 7, 16, 1000, 4099, 1 << 16};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    const size_t n = sizes[si];
    for (int nstream = 0; nstream <= 4; nstream++) {
      float *in[6];
      xir_peer_stream_args a;
      memset(&a, 0, sizeof a);
      double want_sink = 0;
      for (int j = 0; j < nstream + 2; j++) {
        /* nstream streamed inputs, then two smaller ones (a vector and a table) */
        size_t m = j < nstream ? n : (j == nstream ? 3 : 65);
        in[j] = malloc(m * sizeof(float));
        assert_non_null(in[j]);
        xir_rng rng;
        xir__rng_seed(&rng, 0x5717ea00u + si, (uint64_t)j);
        assert_int_equal(xir__rng_fill_f32(&rng, in[j], m, -2.0f, 2.0f, NULL), XIR_OK);
        if (j >= nstream)
          for (size_t i = 0; i < m; i++) want_sink += in[j][i];
        /* the small inputs first: the order of the inputs does not decide what is streamed */
        int slot = j < nstream ? j + 2 : j - nstream;
        a.in[slot] = in[j];
        a.n_in[slot] = m;
      }
      a.nin = nstream + 2;
      guarded_f32 out;
      assert_int_equal(guarded_alloc(&out, n), 0);
      a.out = out.data;
      a.n_out = n;
      for (int nt = 0; nt < 2; nt++) { /* plain stores, then non-temporal ones: the same bits */
        memset(out.data, 0xff, n * sizeof(float));
        a.nt = nt;
        assert_int_equal(xir_peer_stream(&a), XIR_PEER_OK);
        assert_true(guarded_intact(&out));
        for (size_t i = 0; i < n; i++) {
          float want = 0.0f;
          for (int j = 0; j < nstream; j++) want = j ? want + in[j][i] : in[j][i];
          if (memcmp(&want, &out.data[i], sizeof want) != 0) {
            print_error("stream n=%zu, %d streamed, nt %d: [%zu] got %.9g want %.9g\n", n,
                        nstream, nt, i, (double)out.data[i], (double)want);
            fail();
          }
        }
        assert_true(fabs(a.sink - want_sink) <= 1e-4 * (1 + fabs(want_sink)));
      }
      guarded_free(&out);
      for (int j = 0; j < nstream + 2; j++) free(in[j]);
    }
  }
  xir_peer_stream_args a;
  memset(&a, 0, sizeof a);
  assert_int_equal(xir_peer_stream(NULL), XIR_PEER_EINVAL);
  a.nin = 9;
  assert_int_equal(xir_peer_stream(&a), XIR_PEER_EINVAL);
  a.nin = -1;
  assert_int_equal(xir_peer_stream(&a), XIR_PEER_EINVAL);
  a.nin = 1, a.n_in[0] = 4;
  float y[4];
  a.out = y, a.n_out = 4;
  assert_int_equal(xir_peer_stream(&a), XIR_PEER_EINVAL); /* in[0] NULL with 4 elements */
  a.nin = 0, a.out = NULL;
  assert_int_equal(xir_peer_stream(&a), XIR_PEER_EINVAL); /* out NULL with 4 elements */
  a.n_out = 0;
  assert_int_equal(xir_peer_stream(&a), XIR_PEER_OK); /* nothing to do */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_api),          cmocka_unit_test(test_rmsnorm),
      cmocka_unit_test(test_layernorm),    cmocka_unit_test(test_rope),
      cmocka_unit_test(test_rope_cache),   cmocka_unit_test(test_stream),
      cmocka_unit_test(test_softmax_mask), cmocka_unit_test(test_softmax_causal),
      cmocka_unit_test(test_swiglu),       cmocka_unit_test(test_gelu_residual),
      cmocka_unit_test(test_attention),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

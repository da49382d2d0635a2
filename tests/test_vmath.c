/* test_vmath.c — accuracy and special values of the vector math (src/lower/vmath.c).
 *
 * For W = 1, 8 and 16 (16 only where the host has AVX-512) one module holds a kernel per function
 * that applies it over an array, W lanes per iteration. Each function is swept densely over its
 * range (bit-pattern sweeps, linear sweeps, boundary points, special values), compared with fp64
 * libm, and its max ulp error (against the fp64 value) and max abs error are checked against the
 * bounds documented in docs/vmath.md. All widths must give the same bits. Under sanitizers the
 * sweeps are 8x smaller. Set XIR_VMATH_REPORT=1 to print the measured table. */
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

#include "lower/jit.h"
#include "lower/vmath.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define SWEEP_SHIFT 3
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWEEP_SHIFT 3
#endif
#endif
#ifndef SWEEP_SHIFT
#define SWEEP_SHIFT 0
#endif

typedef void (*kern_fn)(const float *x, const float *y, float *out, int64_t nvec);

/* ---- building and compiling the kernels ---- */

typedef struct kset {
  unsigned W;
  int fma;
  kern_fn k[XIR__VM_COUNT];
  kern_fn powu; /* pow with a uniform base: out[i] = pow(x[0], y[i]) */
  void (*sincos)(const float *x, float *s, float *c, int64_t nvec); /* xir__vm_sincos */
  double ms;
} kset;

/* Two variants: [0] plain fmul/fadd (every host), [1] FMA (only where the host has it; with
 * vscalefps where the host has AVX-512F+VL, as the lowering emits it). Within a
 * variant every W must give the same bits; the variants may differ by the documented ulp. */
static xir__jit *g_jit;
static kset g_vsets[2][3];
static int g_vn[2];
static int g_nvar;
/* the variant under test (check/expect loop over variants and set these) */
static kset *g_sets;
static int g_nsets;
static const char *g_vname[2] = {"plain", "fma"};

static void use_variant(int v) {
  g_sets = g_vsets[v];
  g_nsets = g_vn[v];
}

static void compile_set(kset *s, unsigned W, int fma) {
  xir_diag d = {0};
  xir__jit_module m;
  assert_int_equal(xir__jit_module_create(g_jit, "vmath_test", &m, &d), XIR_OK);
  xir__vm *vm;
  assert_int_equal(xir__vm_create(m.mod, NULL, &vm, &d), XIR_OK);
  assert_int_equal(xir__vm_fma(vm), 0); /* off by default */
  xir__vm_set_fma(vm, fma);
  assert_int_equal(xir__vm_fma(vm), fma);
  /* the FMA variant as the lowering builds it on this host: with vscalefps where AVX-512F+VL
   * exist (W = 8, 16; W = 1 keeps the integer scaling, so the W check below also checks that the
   * two give the same bits) */
  if (fma) xir__vm_set_avx512(vm, xir__vm_host_has_avx512() && !getenv("XIR_VMATH_NO_X512"));
  for (int f = 0; f < XIR__VM_COUNT; f++) {
    char name[64];
    snprintf(name, sizeof name, "k_%s", xir__vm_name((xir__vm_fn)f));
    if (xir__vm_build_map_kernel(vm, name, (xir__vm_fn)f, W, &d)) fail_msg("%s", d.msg);
  }
  if (xir__vm_build_pow_uniform_kernel(vm, "k_powu", W, &d)) fail_msg("%s", d.msg);
  if (xir__vm_build_sincos_kernel(vm, "k_sincos", W, &d)) fail_msg("%s", d.msg);
  xir__vm_destroy(vm);
  const xir__jit_artifact *a;
  xir_status st = xir__jit_add(g_jit, &m, "k_exp", NULL, &a, NULL, &d);
  if (st) fail_msg("compile W=%u: %s", W, d.msg);
  /* no libm calls, no llvm math intrinsics other than sqrt (and fma in the FMA variant) */
  static const char *banned[] = {"@expf", "@logf", "@sinf", "@cosf", "@tanhf", "@erff", "@powf",
                                 "@fma", "@llvm.exp.", "@llvm.log.", "@llvm.sin.",
                                 "@llvm.cos.", "@llvm.pow.", "@llvm.fmuladd.", " fast ",
                                 " reassoc ", " contract ", " afn ", " arcp "};
  for (size_t i = 0; i < sizeof banned / sizeof *banned; i++)
    if (strstr(a->ir_text, banned[i])) /* "@fma" also catches "@fmaf"; not "@llvm.fma." */
      fail_msg("W=%u fma=%d: IR contains '%s'", W, fma, banned[i]);
  if (!fma && strstr(a->ir_text, "@llvm.fma."))
    fail_msg("W=%u: the plain variant contains llvm.fma", W);
  if (fma && !strstr(a->ir_text, "@llvm.fma."))
    fail_msg("W=%u: the FMA variant contains no llvm.fma", W);
  /* sigmoid's reciprocal in the FMA variant on AVX-512 hosts is vrcp14ps, at 16 lanes for every
   * W (only there) */
  int x512 = fma && xir__vm_host_has_avx512() && !getenv("XIR_VMATH_NO_X512");
  if (x512 != !!strstr(a->ir_text, "@llvm.x86.avx512.rcp14.ps.512("))
    fail_msg("W=%u fma=%d: vrcp14ps %s", W, fma, x512 ? "missing" : "where the host lacks AVX-512");
  /* without vscalefps, exp's subnormal/overflow scaling is a cold path, branched to once per
   * vector with a weight (test_exp_cold_lanes_same_bits checks its bits) */
  if (!x512 && !strstr(a->ir_text, "branch_weights"))
    fail_msg("W=%u fma=%d: no weighted branch to exp's cold path", W, fma);
  s->W = W;
  s->fma = fma;
  s->ms = a->total_ms;
  for (int f = 0; f < XIR__VM_COUNT; f++) {
    char name[64];
    snprintf(name, sizeof name, "k_%s", xir__vm_name((xir__vm_fn)f));
    void *p;
    if (xir__jit_lookup(g_jit, a, name, &p, &d)) fail_msg("lookup %s: %s", name, d.msg);
    s->k[f] = (kern_fn)p;
  }
  void *p;
  if (xir__jit_lookup(g_jit, a, "k_powu", &p, &d)) fail_msg("lookup k_powu: %s", d.msg);
  s->powu = (kern_fn)p;
  if (xir__jit_lookup(g_jit, a, "k_sincos", &p, &d)) fail_msg("lookup k_sincos: %s", d.msg);
  s->sincos = (void (*)(const float *, float *, float *, int64_t))p;
}

static int setup(void **state) {
  (void)state;
  xir_diag d = {0};
  if (xir__jit_create(NULL, &g_jit, &d)) {
    fprintf(stderr, "jit: %s\n", d.msg);
    return -1;
  }
  static const unsigned Ws[3] = {1, 8, 16};
  g_nvar = xir__vm_host_has_fma() ? 2 : 1;
  if (g_nvar == 1) fprintf(stderr, "test_vmath: this host has no FMA; only the plain variant runs\n");
  for (int v = 0; v < g_nvar; v++)
    for (int i = 0; i < 3; i++)
      if (xir__jit_check_width(g_jit, Ws[i], NULL) == XIR_OK)
        compile_set(&g_vsets[v][g_vn[v]++], Ws[i], v);
  use_variant(0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  xir__jit_destroy(g_jit);
  g_jit = NULL;
  return 0;
}

/* ---- sweeps ---- */

typedef struct pts {
  float *x, *y;
  size_t n, cap;
} pts;

static void push(pts *p, float x, float y) {
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 1 << 16;
    p->x = realloc(p->x, p->cap * sizeof(float));
    p->y = realloc(p->y, p->cap * sizeof(float));
    assert_non_null(p->x);
    assert_non_null(p->y);
  }
  p->x[p->n] = x;
  p->y[p->n] = y;
  p->n++;
}

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* n points spread over the bit patterns of [lo, hi] (0 ≤ lo < hi), both signs if both. */
static void sweep_bits(pts *p, float lo, float hi, size_t n, int both) {
  n >>= SWEEP_SHIFT;
  uint32_t a = f2u(lo), b = f2u(hi);
  for (size_t i = 0; i < n; i++) {
    uint32_t u = a + (uint32_t)(((uint64_t)(b - a) * i) / (n > 1 ? n - 1 : 1));
    push(p, u2f(u), 0);
    if (both) push(p, -u2f(u), 0);
  }
}
static void sweep_lin(pts *p, double lo, double hi, size_t n) {
  n >>= SWEEP_SHIFT;
  for (size_t i = 0; i < n; i++) push(p, (float)(lo + (hi - lo) * (double)i / (double)(n - 1)), 0);
}
/* x and its neighbours (k floats each side). */
static void around(pts *p, float x, int k) {
  for (int i = -k; i <= k; i++) {
    uint32_t u = f2u(x) + (uint32_t)i;
    if (x == 0.0f && i < 0) continue;
    push(p, u2f(u), 0);
  }
}
static void specials(pts *p) {
  const float s[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MIN, -FLT_MIN, FLT_MAX,
                     -FLT_MAX, 1e-45f, -1e-45f, 1.0f, -1.0f};
  for (size_t i = 0; i < sizeof s / sizeof *s; i++) push(p, s[i], 0);
}

static void pad(pts *p) { /* to a multiple of 16 with zeros */
  while (p->n % 16) push(p, 0.0f, 1.0f);
}

/* ---- the reference and the error ---- */

static double ref_of(xir__vm_fn fn, float x, float y) {
  double X = x, Y = y;
  switch (fn) {
    case XIR__VM_EXP: return exp(X);
    case XIR__VM_LOG: return log(X);
    case XIR__VM_TANH: return tanh(X);
    case XIR__VM_ERF: return erf(X);
    case XIR__VM_SIGMOID:
    case XIR__VM_SIGMOID16: return X >= 0 ? 1.0 / (1.0 + exp(-X)) : exp(X) / (1.0 + exp(X));
    case XIR__VM_SIN: return sin(X);
    case XIR__VM_COS: return cos(X);
    case XIR__VM_POW: return pow(X, Y);
    case XIR__VM_SQRT: return sqrt(X);
    case XIR__VM_RSQRT: return 1.0 / sqrt(X);
    default: return NAN;
  }
}

/* fp32 ulp at the magnitude of r (subnormal spacing below FLT_MIN). */
static double ulp32(double r) {
  r = fabs(r);
  if (r < FLT_MIN) return ldexp(1.0, -149);
  int e;
  frexp(r, &e); /* r = m·2^e, m ∈ [0.5, 1) */
  if (e > 128) e = 128;
  return ldexp(1.0, e - 24);
}

typedef struct errs {
  double max_ulp, max_abs, at_ulp, at_abs;
  size_t bad_special; /* NaN/inf mismatches */
  float bad_x, bad_y, bad_got;
} errs;

static void measure(xir__vm_fn fn, const pts *p, const float *got, errs *e,
                    double ulp_from, double ulp_to) {
  for (size_t i = 0; i < p->n; i++) {
    float x = p->x[i], y = p->y[i], g = got[i];
    double r = ref_of(fn, x, y);
    float rf = (float)r;
    if (isnan(rf) || isinf(rf) || isnan(g) || isinf(g)) {
      int same = (isnan(rf) && isnan(g)) || (isinf(rf) && isinf(g) && !signbit(rf) == !signbit(g));
      if (!same) {
        if (!e->bad_special) {
          e->bad_x = x;
          e->bad_y = y;
          e->bad_got = g;
        }
        e->bad_special++;
      }
      continue;
    }
    if (r == 0.0 && g == 0.0f && !signbit(r) != !signbit(g)) {
      /* a zero of the wrong sign counts as a special-value error */
      if (!e->bad_special) {
        e->bad_x = x;
        e->bad_y = y;
        e->bad_got = g;
      }
      e->bad_special++;
      continue;
    }
    double ae = fabs((double)g - r);
    if (fabs(r) <= 1.0 && ae > e->max_abs) { /* abs error where |f| <= 1 */
      e->max_abs = ae;
      e->at_abs = x;
    }
    double ax = fabs((double)x);
    if (ax < ulp_from || ax > ulp_to) continue;
    double ue = ae / ulp32(r);
    if (ue > e->max_ulp) {
      e->max_ulp = ue;
      e->at_ulp = x;
    }
  }
}

static void run_all(xir__vm_fn fn, pts *p, float *out[3]) {
  pad(p);
  for (int s = 0; s < g_nsets; s++) {
    out[s] = malloc(p->n * sizeof(float));
    assert_non_null(out[s]);
    for (size_t i = 0; i < p->n; i++) out[s][i] = -12345.0f;
    g_sets[s].k[fn](p->x, p->y, out[s], (int64_t)(p->n / g_sets[s].W));
  }
  for (int s = 1; s < g_nsets; s++)
    for (size_t i = 0; i < p->n; i++)
      if (f2u(out[s][i]) != f2u(out[0][i]))
        fail_msg("%s: W=%u and W=%u differ at x=%a y=%a: %a vs %a", xir__vm_name(fn),
                 g_sets[0].W, g_sets[s].W, p->x[i], p->y[i], out[0][i], out[s][i]);
}

static int report(void) { return getenv("XIR_VMATH_REPORT") != NULL; }

/* Sweeps fn over p in every variant, checks identical bits across W within a variant, ulp error
 * (for |x| in [ulp_from, ulp_to]) ≤ max_ulp[v] and abs error ≤ max_abs[v]. */
static void check_v(xir__vm_fn fn, const char *what, pts *p, double ulp_from, double ulp_to,
                    const double max_ulp[2], const double max_abs[2]) {
  for (int v = 0; v < g_nvar; v++) {
    use_variant(v);
    float *out[3] = {0};
    run_all(fn, p, out);
    errs e = {0};
    measure(fn, p, out[0], &e, ulp_from, ulp_to);
    if (report())
      printf("  %-5s %-8s %-34s n=%-8zu max ulp %.3f (x=%.9g)  max abs(|f|<=1) %.3g (x=%.9g)\n",
             g_vname[v], xir__vm_name(fn), what, p->n, e.max_ulp, e.at_ulp, e.max_abs, e.at_abs);
    for (int s = 0; s < 3; s++) free(out[s]);
    if (e.bad_special)
      fail_msg("%s %s %s: %zu special-value mismatches, first x=%a y=%a got %a", g_vname[v],
               xir__vm_name(fn), what, e.bad_special, e.bad_x, e.bad_y, e.bad_got);
    if (e.max_ulp > max_ulp[v])
      fail_msg("%s %s %s: max ulp error %.3f at x=%.9g exceeds %.3f", g_vname[v],
               xir__vm_name(fn), what, e.max_ulp, e.at_ulp, max_ulp[v]);
    if (e.max_abs > max_abs[v])
      fail_msg("%s %s %s: max abs error %.3g at x=%.9g exceeds %.3g", g_vname[v],
               xir__vm_name(fn), what, e.max_abs, e.at_abs, max_abs[v]);
  }
  use_variant(0);
  free(p->x);
  free(p->y);
  memset(p, 0, sizeof *p);
}
/* The same bounds for both variants. */
static void check(xir__vm_fn fn, const char *what, pts *p, double ulp_from, double ulp_to,
                  double max_ulp, double max_abs) {
  const double u[2] = {max_ulp, max_ulp}, a[2] = {max_abs, max_abs};
  check_v(fn, what, p, ulp_from, ulp_to, u, a);
}

/* Exact expectations, in every variant and W: y = fn(x) bit-for-bit (NaN: any NaN). */
static void expect(xir__vm_fn fn, float x, float y, float want) {
  float xs[16], ys[16], o[16];
  for (int i = 0; i < 16; i++) xs[i] = x, ys[i] = y;
  for (int v = 0; v < g_nvar; v++)
    for (int s = 0; s < g_vn[v]; s++) {
      const kset *k = &g_vsets[v][s];
      k->k[fn](xs, ys, o, 16 / k->W);
      for (int i = 0; i < 16; i++) {
        int ok = isnan(want) ? isnan(o[i]) : f2u(o[i]) == f2u(want);
        if (!ok)
          fail_msg("%s(%a, %a) with W=%u (%s): got %a, want %a", xir__vm_name(fn), x, y, k->W,
                   g_vname[v], o[i], want);
      }
    }
}

/* ---- tests ---- */

static void test_exp_accuracy(void **state) {
  (void)state;
  pts p = {0};
  sweep_bits(&p, 0.0f, 89.0f, 1u << 21, 1);
  sweep_bits(&p, 89.0f, 104.0f, 1u << 16, 0);
  sweep_lin(&p, -104.0, 89.0, 1u << 20);
  around(&p, 88.72283935546875f, 64);   /* overflow threshold */
  around(&p, -87.33654022216797f, 64);  /* FLT_MIN threshold */
  around(&p, -103.27892303466797f, 64); /* smallest subnormal */
  specials(&p);
  check(XIR__VM_EXP, "[-104, 104] + thresholds", &p, 0, 87.3, 1.0, INFINITY);
  sweep_bits(&p, 87.3f, 104.0f, 1u << 16, 0);
  for (size_t i = 0; i < p.n; i++) p.x[i] = -p.x[i];
  check(XIR__VM_EXP, "subnormal results [-104, -87.3]", &p, 0, INFINITY, 1.0, 0x1p-149);
  expect(XIR__VM_EXP, -INFINITY, 0, 0.0f);
  expect(XIR__VM_EXP, INFINITY, 0, INFINITY);
  expect(XIR__VM_EXP, 89.0f, 0, INFINITY);
  expect(XIR__VM_EXP, 1000.0f, 0, INFINITY);
  expect(XIR__VM_EXP, -1000.0f, 0, 0.0f);
  expect(XIR__VM_EXP, NAN, 0, NAN);
  expect(XIR__VM_EXP, 0.0f, 0, 1.0f);
  expect(XIR__VM_EXP, -0.0f, 0, 1.0f);
}

static void test_log_accuracy(void **state) {
  (void)state;
  pts p = {0};
  sweep_bits(&p, 1e-45f, FLT_MAX, 1u << 21, 0);
  sweep_lin(&p, 0.5, 2.0, 1u << 20);
  sweep_bits(&p, 0.70f, 1.42f, 1u << 20, 0);
  around(&p, 1.0f, 256);
  around(&p, FLT_MIN, 16);
  specials(&p);
  check(XIR__VM_LOG, "(0, FLT_MAX] + near 1", &p, 0, INFINITY, 1.0, INFINITY);
  expect(XIR__VM_LOG, 0.0f, 0, -INFINITY);
  expect(XIR__VM_LOG, -0.0f, 0, -INFINITY);
  expect(XIR__VM_LOG, -1.0f, 0, NAN);
  expect(XIR__VM_LOG, -INFINITY, 0, NAN);
  expect(XIR__VM_LOG, INFINITY, 0, INFINITY);
  expect(XIR__VM_LOG, NAN, 0, NAN);
  expect(XIR__VM_LOG, 1.0f, 0, 0.0f);
}

static void test_tanh_accuracy(void **state) {
  (void)state;
  pts p = {0};
  sweep_bits(&p, 0.0f, 20.0f, 1u << 21, 1);
  sweep_lin(&p, -10.0, 10.0, 1u << 20);
  around(&p, 0.625f, 64);
  around(&p, -0.625f, 64);
  specials(&p);
  check(XIR__VM_TANH, "[-20, 20]", &p, 0, INFINITY, 1.5, INFINITY);
  expect(XIR__VM_TANH, INFINITY, 0, 1.0f);
  expect(XIR__VM_TANH, -INFINITY, 0, -1.0f);
  expect(XIR__VM_TANH, 100.0f, 0, 1.0f);
  expect(XIR__VM_TANH, NAN, 0, NAN);
  expect(XIR__VM_TANH, -0.0f, 0, -0.0f);
}

static void test_erf_accuracy(void **state) {
  (void)state;
  pts p = {0};
  sweep_bits(&p, 0.0f, 6.0f, 1u << 21, 1);
  sweep_lin(&p, -5.0, 5.0, 1u << 20);
  around(&p, 1.0f, 64);
  around(&p, 2.5f, 64);
  around(&p, 4.0f, 64);
  specials(&p);
  check(XIR__VM_ERF, "[-6, 6]", &p, 0, INFINITY, 1.5, INFINITY);
  expect(XIR__VM_ERF, INFINITY, 0, 1.0f);
  expect(XIR__VM_ERF, -INFINITY, 0, -1.0f);
  expect(XIR__VM_ERF, NAN, 0, NAN);
  expect(XIR__VM_ERF, -0.0f, 0, -0.0f);
}

static void test_sigmoid_accuracy(void **state) {
  (void)state;
  pts p = {0};
  sweep_bits(&p, 0.0f, 110.0f, 1u << 21, 1);
  sweep_lin(&p, -20.0, 20.0, 1u << 20);
  specials(&p);
  check(XIR__VM_SIGMOID, "[-110, 110]", &p, 0, INFINITY, 2.0, INFINITY);
  expect(XIR__VM_SIGMOID, -INFINITY, 0, 0.0f);
  expect(XIR__VM_SIGMOID, INFINITY, 0, 1.0f);
  expect(XIR__VM_SIGMOID, 0.0f, 0, 0.5f);
  expect(XIR__VM_SIGMOID, NAN, 0, NAN);
}

/* exp_nonpos (the lowering's exp of softmax's z - max(z), known <= 0 or NaN): the same bits as
 * exp on every such input, in every variant and W (run_all compares the W's). */
static void test_exp_nonpos_is_exp(void **state) {
  (void)state;
  for (int v = 0; v < g_nvar; v++) {
    pts p = {0};
    sweep_bits(&p, 0.0f, 110.0f, 1u << 21, 0);
    for (size_t i = 0; i < p.n; i++) p.x[i] = -p.x[i];
    push(&p, -INFINITY, 0);
    push(&p, -0.0f, 0);
    push(&p, 0.0f, 0);
    push(&p, NAN, 0);
    push(&p, -FLT_MAX, 0);
    push(&p, -1e-45f, 0);
    use_variant(v);
    float *a[3] = {0}, *b[3] = {0};
    run_all(XIR__VM_EXPNP, &p, a);
    run_all(XIR__VM_EXP, &p, b);
    for (size_t i = 0; i < p.n; i++)
      if (f2u(a[0][i]) != f2u(b[0][i]) && !(isnan(a[0][i]) && isnan(b[0][i])))
        fail_msg("%s exp_nonpos(%a) = %a, exp %a", g_vname[v], p.x[i], a[0][i], b[0][i]);
    for (int s2 = 0; s2 < 3; s2++) free(a[s2]), free(b[s2]);
    free(p.x);
    free(p.y);
  }
  use_variant(0);
}

/* sigmoid16 (the lowering's sigmoid for values that only reach bf16/f16 stores): relative error
 * below 2^-13.9 in both variants, every W the same bits; results below FLT_MIN may in addition be
 * off by one fp32 subnormal spacing (2^-149, far below bf16's 2^-133 and f16's 2^-24). Also:
 * it is not sigmoid (some results differ), so the lowering's choice is visible. */
static void test_sigmoid16_accuracy(void **state) {
  (void)state;
  const double bound = 0x1.12p-14; /* 2^-13.9 = 6.70e-5 */
  for (int v = 0; v < g_nvar; v++) {
    pts p = {0};
    sweep_bits(&p, 0.0f, 110.0f, 1u << 21, 1);
    sweep_lin(&p, -20.0, 20.0, 1u << 20);
    specials(&p);
    use_variant(v);
    float *out[3] = {0}, *acc[3] = {0};
    run_all(XIR__VM_SIGMOID16, &p, out);
    run_all(XIR__VM_SIGMOID, &p, acc);
    double max_rel = 0, at = 0;
    size_t differ = 0;
    for (size_t i = 0; i < p.n; i++) {
      double r = ref_of(XIR__VM_SIGMOID, p.x[i], 0);
      float g = out[0][i];
      if (isnan(r)) {
        if (!isnan(g)) fail_msg("%s sigmoid16(%a) = %a, want NaN", g_vname[v], p.x[i], g);
        continue;
      }
      double e = fabs((double)g - r);
      if (!(e <= bound * fabs(r) + (fabs(r) < FLT_MIN ? 0x1p-149 : 0.0)))
        fail_msg("%s sigmoid16(%a) = %a, ref %a: relative error %.3g above 2^-13.9", g_vname[v],
                 p.x[i], g, r, e / fabs(r));
      if (fabs(r) >= FLT_MIN && e / fabs(r) > max_rel) max_rel = e / fabs(r), at = p.x[i];
      differ += f2u(g) != f2u(acc[0][i]);
    }
    if (report())
      printf("  %-5s sigmoid16 n=%-8zu max rel %.3g = 2^%.2f (x=%.9g), differs from sigmoid in %zu\n",
             g_vname[v], p.n, max_rel, log2(max_rel), at, differ);
    assert_true(differ > 0);
    for (int s = 0; s < 3; s++) free(out[s]), free(acc[s]);
    free(p.x);
    free(p.y);
  }
  use_variant(0);
  expect(XIR__VM_SIGMOID16, -INFINITY, 0, 0.0f);
  expect(XIR__VM_SIGMOID16, INFINITY, 0, 1.0f);
  expect(XIR__VM_SIGMOID16, 0.0f, 0, 0.5f);
  expect(XIR__VM_SIGMOID16, 200.0f, 0, 1.0f);
  expect(XIR__VM_SIGMOID16, -200.0f, 0, 0.0f);
  expect(XIR__VM_SIGMOID16, NAN, 0, NAN);
}

/* floats nearest to k·π/2, where sin or cos is tiny: the hardest points for range reduction */
static void near_half_pis(pts *p, double maxx, int both) {
  long kmax = (long)(maxx / (M_PI / 2));
  long step = kmax > (4000 >> SWEEP_SHIFT) ? kmax / (4000 >> SWEEP_SHIFT) : 1;
  for (long k = 1; k <= kmax; k += step) {
    float x = (float)(k * (M_PI / 2));
    around(p, x, 2);
    if (both) around(p, -x, 2);
  }
}

static void test_sin_cos_accuracy(void **state) {
  (void)state;
  for (int c = 0; c < 2; c++) {
    xir__vm_fn fn = c ? XIR__VM_COS : XIR__VM_SIN;
    pts p = {0};
    sweep_lin(&p, -1e4, 1e4, 1u << 21);
    sweep_bits(&p, 0.0f, 1e4f, 1u << 20, 1);
    near_half_pis(&p, 1e4, 1);
    const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MIN, -FLT_MIN, 1e-45f, -1e-45f};
    for (size_t i = 0; i < sizeof sp / sizeof *sp; i++) push(&p, sp[i], 0);
    check(fn, "|x| <= 1e4", &p, 0, INFINITY, 0.6, 1e-7);
    sweep_bits(&p, 1e4f, 5.2e7f, 1u << 19, 1);
    near_half_pis(&p, 5.2e7, 0);
    check(fn, "1e4 < |x| <= 5.2e7", &p, 0, INFINITY, 0.6, 1e-7);
    sweep_bits(&p, 5.2e7f, 1e9f, 1u << 18, 1);
    check(fn, "5.2e7 < |x| <= 1e9 (abs only)", &p, INFINITY, INFINITY, INFINITY, 1e-6);
    sweep_bits(&p, 1e9f, FLT_MAX, 1u << 17, 1);
    push(&p, FLT_MAX, 0);
    push(&p, -FLT_MAX, 0);
    check(fn, "|x| > 1e9 (bounded only)", &p, INFINITY, INFINITY, INFINITY, 2.0);
  }
  expect(XIR__VM_SIN, INFINITY, 0, NAN);
  expect(XIR__VM_SIN, -INFINITY, 0, NAN);
  expect(XIR__VM_SIN, NAN, 0, NAN);
  expect(XIR__VM_SIN, -0.0f, 0, -0.0f);
  expect(XIR__VM_SIN, 0.0f, 0, 0.0f);
  expect(XIR__VM_COS, INFINITY, 0, NAN);
  expect(XIR__VM_COS, NAN, 0, NAN);
  expect(XIR__VM_COS, -0.0f, 0, 1.0f);
}

/* sincos (one reduction, both polynomials) gives the bits of sin and of cos, in every variant
 * and W, over the sin/cos sweeps' ranges and the special values. */
static void test_sincos_bits(void **state) {
  (void)state;
  pts p = {0};
  sweep_lin(&p, -1e4, 1e4, 1u << 18);
  sweep_bits(&p, 0.0f, FLT_MAX, 1u << 18, 1);
  near_half_pis(&p, 5.2e7, 1);
  specials(&p);
  pad(&p);
  float *s0 = malloc(p.n * sizeof(float)), *c0 = malloc(p.n * sizeof(float));
  float *s1 = malloc(p.n * sizeof(float)), *c1 = malloc(p.n * sizeof(float));
  assert_non_null(s0);
  assert_non_null(c0);
  assert_non_null(s1);
  assert_non_null(c1);
  size_t compared = 0;
  for (int v = 0; v < g_nvar; v++)
    for (int k = 0; k < g_vn[v]; k++) {
      const kset *ks = &g_vsets[v][k];
      int64_t nv = (int64_t)(p.n / ks->W);
      ks->k[XIR__VM_SIN](p.x, p.y, s0, nv);
      ks->k[XIR__VM_COS](p.x, p.y, c0, nv);
      ks->sincos(p.x, s1, c1, nv);
      for (size_t i = 0; i < p.n; i++, compared++)
        if (f2u(s0[i]) != f2u(s1[i]) || f2u(c0[i]) != f2u(c1[i]))
          fail_msg("sincos(%a) W=%u %s: %a %a, sin and cos give %a %a", p.x[i], ks->W,
                   g_vname[v], s1[i], c1[i], s0[i], c0[i]);
    }
  if (report()) printf("  sincos: %zu results bit-equal to sin and cos\n", compared);
  assert_true(compared >= p.n);
  free(s0);
  free(c0);
  free(s1);
  free(c1);
  free(p.x);
  free(p.y);
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double urand(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) * 0x1p-53;
}

/* The fma variant on AVX-512 hosts computes sin and cos in fp32 lanes for |x| ≤ 2^19 and runs the
 * fp64 code for a vector that has any other lane (larger |x|, ±inf, NaN), taking its value in
 * those lanes only. Checked on vectors that mix both kinds, every variant and W, sin, cos and
 * sincos: (a) each lane has the bits W = 1 gives it (a lane does not depend on its neighbours);
 * (b) the large lanes have the bits of the fp64 code (the fma variant built without AVX-512, whose
 * sin and cos are fp64 only), and so do the small lanes near the limit's other side: |x| just
 * above 2^19 takes fp64, just below fp32 (both within the sweep bounds). */
static void test_sincos_mixed_lanes(void **state) {
  (void)state;
  pts p = {0};
  const float big[] = {0x1.000002p+19f, 6e5f, 1e6f, 5.2e7f, 1e9f, FLT_MAX, INFINITY, NAN};
  const float small[] = {0x1p+19f, 0x1.fffffep+18f, 3.0f, 1e4f, 0.5f, 1e-3f, 0.0f, -0.0f};
  for (int i = 0; i < 4096; i++) { /* xorshift picks per lane: big (1/8) or small */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    unsigned k = (unsigned)(g_rng >> 40);
    float sg = (k & 1) ? -1.0f : 1.0f;
    float x = (k & 0xe) == 0 ? big[(k >> 4) & 7] : small[(k >> 4) & 7] * (1.0f + (float)(k >> 8 & 255) * 0x1p-12f);
    push(&p, (k & 0xe) == 0 || x != 0.0f ? sg * x : x, 0);
  }
  const size_t n = p.n;
  float *ref[3], *got[3];
  for (int f = 0; f < 3; f++) {
    ref[f] = malloc(n * sizeof(float));
    got[f] = malloc(n * sizeof(float));
    assert_non_null(ref[f]);
    assert_non_null(got[f]);
  }
  for (int v = 0; v < g_nvar; v++) {
    const kset *k1 = &g_vsets[v][0];
    assert_int_equal(k1->W, 1);
    k1->k[XIR__VM_SIN](p.x, p.y, ref[0], (int64_t)n);
    k1->k[XIR__VM_COS](p.x, p.y, ref[1], (int64_t)n);
    for (int k = 0; k < g_vn[v]; k++) {
      const kset *ks = &g_vsets[v][k];
      int64_t nv = (int64_t)(n / ks->W);
      ks->k[XIR__VM_SIN](p.x, p.y, got[0], nv);
      ks->k[XIR__VM_COS](p.x, p.y, got[1], nv);
      ks->sincos(p.x, got[2], ref[2], nv);
      for (size_t i = 0; i < n; i++)
        if (f2u(got[0][i]) != f2u(ref[0][i]) || f2u(got[1][i]) != f2u(ref[1][i]) ||
            f2u(got[2][i]) != f2u(ref[0][i]) || f2u(ref[2][i]) != f2u(ref[1][i]))
          fail_msg("%s W=%u x=%a: sin %a cos %a sincos %a %a, W=1 gives %a %a", g_vname[v],
                   ks->W, p.x[i], got[0][i], got[1][i], got[2][i], ref[2][i], ref[0][i], ref[1][i]);
    }
  }
  /* (b): the fma variant without AVX-512 instructions (fp64 sin and cos only) */
  size_t big_lanes = 0;
  if (g_nvar == 2 && xir__vm_host_has_avx512() && !getenv("XIR_VMATH_NO_X512")) {
    xir_diag d = {0};
    xir__jit_module m;
    assert_int_equal(xir__jit_module_create(g_jit, "vmath_fp64", &m, &d), XIR_OK);
    xir__vm *vm;
    assert_int_equal(xir__vm_create(m.mod, NULL, &vm, &d), XIR_OK);
    xir__vm_set_fma(vm, 1);
    if (xir__vm_build_map_kernel(vm, "k64_sin", XIR__VM_SIN, 16, &d)) fail_msg("%s", d.msg);
    if (xir__vm_build_map_kernel(vm, "k64_cos", XIR__VM_COS, 16, &d)) fail_msg("%s", d.msg);
    xir__vm_destroy(vm);
    const xir__jit_artifact *a;
    if (xir__jit_add(g_jit, &m, "k64_sin", NULL, &a, NULL, &d)) fail_msg("%s", d.msg);
    assert_null(strstr(a->ir_text, "vpermi2var")); /* no table: the fp64 code */
    void *ps, *pc;
    if (xir__jit_lookup(g_jit, a, "k64_sin", &ps, &d) || xir__jit_lookup(g_jit, a, "k64_cos", &pc, &d))
      fail_msg("%s", d.msg);
    ((kern_fn)ps)(p.x, p.y, got[0], (int64_t)(n / 16));
    ((kern_fn)pc)(p.x, p.y, got[1], (int64_t)(n / 16));
    use_variant(1);
    const kset *k16 = &g_sets[g_nsets - 1];
    k16->k[XIR__VM_SIN](p.x, p.y, ref[0], (int64_t)(n / k16->W));
    k16->k[XIR__VM_COS](p.x, p.y, ref[1], (int64_t)(n / k16->W));
    use_variant(0);
    for (size_t i = 0; i < n; i++) {
      if (!(fabsf(p.x[i]) > 0x1p+19f)) continue; /* also NaN */
      big_lanes++;
      if (f2u(got[0][i]) != f2u(ref[0][i]) || f2u(got[1][i]) != f2u(ref[1][i]))
        fail_msg("x=%a: sin %a cos %a, the fp64 code gives %a %a", p.x[i], ref[0][i], ref[1][i],
                 got[0][i], got[1][i]);
    }
    assert_true(big_lanes > 300);
  }
  if (report()) printf("  sin/cos mixed lanes: %zu points, %zu compared with the fp64 code\n", n, big_lanes);
  for (int f = 0; f < 3; f++) {
    free(ref[f]);
    free(got[f]);
  }
  free(p.x);
  free(p.y);
}


/* Without vscalefps, exp computes a vector's lanes with one-step scaling and no clamps when every
 * lane allows it (sigmoid: −86 ≤ −|x|; exp and softmax's exp_nonpos: −125 ≤ n ≤ 125; tanh clamps
 * its argument so that it always does), and otherwise (one branch per vector) with the full
 * code. Each lane's bits must not depend on its neighbours: vectors mixing such lanes (1/8 of the
 * lanes: subnormal and overflowing results, ±inf, NaN, the thresholds) with ordinary ones give,
 * at every W, the bits of W = 1, where each lane decides alone. */
static void test_exp_cold_lanes_same_bits(void **state) {
  (void)state;
  static const float cold[16] = {-86.01f, -86.5f, -87.33654f, -90.0f, -100.0f, -103.5f, -104.5f,
                                 -1000.0f, -INFINITY, NAN, 86.7f, 88.0f, 88.8f, 95.0f, INFINITY,
                                 -0.0f};
  static const xir__vm_fn fns[] = {XIR__VM_EXP, XIR__VM_EXPNP, XIR__VM_SIGMOID, XIR__VM_SIGMOID16,
                                   XIR__VM_TANH};
  for (size_t f = 0; f < sizeof fns / sizeof *fns; f++) {
    pts p = {0};
    int nonpos = fns[f] == XIR__VM_EXPNP, tanh = fns[f] == XIR__VM_TANH;
    for (int i = 0; i < 8192; i++) {
      g_rng ^= g_rng << 13;
      g_rng ^= g_rng >> 7;
      g_rng ^= g_rng << 17;
      unsigned k = (unsigned)(g_rng >> 32);
      float x = (k & 7) == 0 ? cold[(k >> 3) & 15] : ((float)(k >> 8) * 0x1p-24f - 0.5f) * 160.0f;
      if (tanh) x *= 0.25f; /* tanh's 2|x| crosses its clamp at 40 and exp's limits */
      push(&p, nonpos && !(x <= 0.0f) ? -fabsf(x) : x, 0);
    }
    pad(&p);
    float *ref = malloc(p.n * sizeof(float)), *got = malloc(p.n * sizeof(float));
    assert_non_null(ref);
    assert_non_null(got);
    for (int v = 0; v < g_nvar; v++) {
      const kset *k1 = &g_vsets[v][0];
      assert_int_equal(k1->W, 1);
      k1->k[fns[f]](p.x, p.y, ref, (int64_t)p.n);
      for (int s = 1; s < g_vn[v]; s++) {
        const kset *ks = &g_vsets[v][s];
        ks->k[fns[f]](p.x, p.y, got, (int64_t)(p.n / ks->W));
        for (size_t i = 0; i < p.n; i++)
          if (f2u(got[i]) != f2u(ref[i]) && !(isnan(got[i]) && isnan(ref[i])))
            fail_msg("%s %s W=%u x=%a: %a, W=1 gives %a", g_vname[v], xir__vm_name(fns[f]),
                     ks->W, p.x[i], got[i], ref[i]);
      }
    }
    free(ref);
    free(got);
    free(p.x);
    free(p.y);
  }
}

static void test_pow_accuracy(void **state) {
  (void)state;
  pts p = {0};
  size_t n = (1u << 21) >> SWEEP_SHIFT;
  for (size_t i = 0; i < n; i++) /* x log-uniform over 2^±40, y in [-3, 3] */
    push(&p, (float)exp2(-40 + 80 * urand()), (float)(-3 + 6 * urand()));
  for (size_t i = 0; i < n; i++) /* x near 1, large |y|: the log must be accurate */
    push(&p, (float)(0.5 + 1.5 * urand()), (float)(-150 + 300 * urand()));
  for (size_t i = 0; i < n / 4; i++) /* results near overflow and into the subnormals */
    push(&p, (float)exp2(-8 + 16 * urand()), (float)(-25 + 50 * urand()) * 1.0f);
  for (size_t i = 0; i < n / 4; i++) { /* negative x, integer y */
    float y = (float)(int)(-20 + 40 * urand());
    push(&p, (float)-(0.25 + 4 * urand()), y);
  }
  const float sx[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -0.5f, INFINITY, -INFINITY,
                      NAN, 1e-45f, FLT_MAX, 3.0f};
  const float sy[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 3.0f, -3.0f, 0.5f, -0.5f,
                      INFINITY, -INFINITY, NAN, 1e30f, 16777217.0f, 1.5f};
  for (size_t i = 0; i < sizeof sx / sizeof *sx; i++)
    for (size_t j = 0; j < sizeof sy / sizeof *sy; j++) push(&p, sx[i], sy[j]);
  check(XIR__VM_POW, "x in 2^±40, |y| <= 150, specials", &p, 0, INFINITY, 0.6, INFINITY);
  expect(XIR__VM_POW, NAN, 0.0f, 1.0f);
  expect(XIR__VM_POW, 1.0f, NAN, 1.0f);
  expect(XIR__VM_POW, -1.0f, INFINITY, 1.0f);
  expect(XIR__VM_POW, -2.0f, 0.5f, NAN);
  expect(XIR__VM_POW, -2.0f, 3.0f, -8.0f);
  expect(XIR__VM_POW, -0.0f, -1.0f, -INFINITY);
  expect(XIR__VM_POW, -0.0f, 3.0f, -0.0f);
  expect(XIR__VM_POW, -0.0f, 0.5f, 0.0f);
  expect(XIR__VM_POW, 0.0f, -2.0f, INFINITY);
  expect(XIR__VM_POW, -INFINITY, 3.0f, -INFINITY);
  expect(XIR__VM_POW, -INFINITY, 0.5f, INFINITY);
  expect(XIR__VM_POW, -INFINITY, -3.0f, -0.0f);
  expect(XIR__VM_POW, 0.5f, INFINITY, 0.0f);
  expect(XIR__VM_POW, 2.0f, -INFINITY, 0.0f);
  expect(XIR__VM_POW, 2.0f, 128.0f, INFINITY);
  expect(XIR__VM_POW, 2.0f, -149.0f, 1e-45f);
  expect(XIR__VM_POW, 2.0f, -151.0f, 0.0f);
}

/* pow with a uniform base is bit-identical to pow with the base splat, in every variant and W:
 * special bases (0, ±inf, NaN, ±1, negative, subnormal, FLT_MAX) and random ones, against
 * exponents that mix specials, integers, half-integers and random values. */
static void test_pow_uniform_base(void **state) {
  (void)state;
  enum { NY = 4096 };
  static float ys[NY], xs[NY], o1[NY], o2[NY];
  const float sy[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, 3.0f, -3.0f, 0.5f, -0.5f, INFINITY,
                      -INFINITY, NAN, 1e30f, -1e30f, 16777217.0f, 1.5f};
  for (int i = 0; i < NY; i++) {
    double u = urand();
    if (i < 16) ys[i] = sy[i];
    else if (i % 4 == 0) ys[i] = (float)(int)(-40 + 80 * u);
    else if (i % 4 == 1) ys[i] = (float)(-150 + 300 * u);
    else ys[i] = (float)(-4 + 8 * u);
  }
  float bases[64 + 96];
  const float sb[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -0.5f, INFINITY, -INFINITY,
                      NAN, 1e-45f, -1e-45f, FLT_MIN, FLT_MAX, -FLT_MAX, 3.0f, 10000.0f, 0.999f};
  int nb = 0;
  for (size_t i = 0; i < sizeof sb / sizeof *sb; i++) bases[nb++] = sb[i];
  while (nb < (int)(sizeof bases / sizeof *bases)) {
    float b = (float)exp2(-60 + 120 * urand());
    bases[nb] = (nb & 1) ? -b : b;
    nb++;
  }
  size_t compared = 0;
  for (int v = 0; v < g_nvar; v++)
    for (int s = 0; s < g_vn[v]; s++) {
      const kset *k = &g_vsets[v][s];
      for (int bi = 0; bi < nb; bi++) {
        for (int i = 0; i < NY; i++) xs[i] = bases[bi];
        k->k[XIR__VM_POW](xs, ys, o1, NY / k->W);
        float b1[1] = {bases[bi]};
        k->powu(b1, ys, o2, NY / k->W);
        for (int i = 0; i < NY; i++, compared++)
          if (f2u(o1[i]) != f2u(o2[i]))
            fail_msg("pow_uniform_base(%a, %a) W=%u %s: %a, pow gives %a", bases[bi], ys[i], k->W,
                     g_vname[v], o2[i], o1[i]);
      }
    }
  if (report()) printf("  pow_uniform_base: %zu results bit-equal to pow\n", compared);
  assert_true(compared >= (size_t)nb * NY);
}

static void test_sqrt_rsqrt_exact(void **state) {
  (void)state;
  pts p = {0};
  sweep_bits(&p, 0.0f, INFINITY, 1u << 21, 0);
  specials(&p);
  check(XIR__VM_SQRT, "[0, inf]", &p, 0, INFINITY, 0.5, INFINITY);
  sweep_bits(&p, 0.0f, INFINITY, 1u << 21, 0);
  specials(&p);
  check(XIR__VM_RSQRT, "[0, inf]", &p, 0, INFINITY, 1.5, INFINITY);
  /* rsqrt is exactly 1/sqrt(x) in fp32: compare bits with the C expression */
  float xs[64], o[64];
  for (int i = 0; i < 64; i++) xs[i] = 0.37f + 1.93f * (float)i;
  g_sets[0].k[XIR__VM_RSQRT](xs, xs, o, 64 / g_sets[0].W);
  for (int i = 0; i < 64; i++) assert_true(f2u(o[i]) == f2u(1.0f / sqrtf(xs[i])));
  expect(XIR__VM_SQRT, -1.0f, 0, NAN);
  expect(XIR__VM_SQRT, -0.0f, 0, -0.0f);
  expect(XIR__VM_RSQRT, 0.0f, 0, INFINITY);
  expect(XIR__VM_RSQRT, INFINITY, 0, 0.0f);
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

static void test_api_errors_and_emit_once(void **state) {
  (void)state;
  xir_diag d = {0};
  /* a JIT without optimization ("verify" only), so that the IR shows what vmath emitted */
  xir__jit *jit;
  xir__jit_options o = {.pipeline = "verify", .codegen_level = -1};
  assert_int_equal(xir__jit_create(&o, &jit, &d), XIR_OK);
  xir__jit_module m;
  assert_int_equal(xir__jit_module_create(jit, "api", &m, &d), XIR_OK);
  xir__vm *vm;
  assert_int_equal(xir__vm_create(m.mod, NULL, &vm, &d), XIR_OK);
  assert_int_equal(xir__vm_build_map_kernel(vm, "k3", XIR__VM_EXP, 3, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "W = 3"));
  assert_int_equal(xir__vm_build_map_kernel(vm, "kx", XIR__VM_COUNT, 8, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__vm_emit(vm, XIR__VM_EXP, NULL, NULL, NULL, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__vm_build_sincos_kernel(vm, "ks3", 3, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir__vm_emit_sincos(vm, NULL, NULL, NULL, &d), XIR_ERR_INVALID_ARG);
  assert_null(xir__vm_sincos(vm, NULL, NULL));
  assert_int_equal(xir__vm_build_sincos_kernel(vm, "ks8", 8, &d), XIR_OK);
  assert_int_equal(xir__vm_build_sincos_kernel(vm, "ks8", 8, &d), XIR_ERR_INVALID_ARG);
  /* tanh and sigmoid call exp; exp itself is emitted once per module and type */
  assert_int_equal(xir__vm_build_map_kernel(vm, "k_exp", XIR__VM_EXP, 1, &d), XIR_OK);
  assert_int_equal(xir__vm_build_map_kernel(vm, "k_tanh", XIR__VM_TANH, 1, &d), XIR_OK);
  assert_int_equal(xir__vm_build_map_kernel(vm, "k_sig", XIR__VM_SIGMOID, 1, &d), XIR_OK);
  assert_int_equal(xir__vm_build_map_kernel(vm, "k_exp8", XIR__VM_EXP, 8, &d), XIR_OK);
  assert_int_equal(xir__vm_build_map_kernel(vm, "k_exp", XIR__VM_LOG, 1, &d), XIR_ERR_INVALID_ARG);
  /* uniform-base pow: the log function is emitted once for two kernels */
  assert_int_equal(xir__vm_build_pow_uniform_kernel(vm, "k_pu8", 8, &d), XIR_OK);
  assert_int_equal(xir__vm_build_pow_uniform_kernel(vm, "k_pu1", 1, &d), XIR_OK);
  assert_int_equal(xir__vm_build_pow_uniform_kernel(vm, "k_pu3", 3, &d), XIR_ERR_INVALID_ARG);
  LLVMValueRef out = (LLVMValueRef)&d;
  assert_int_equal(xir__vm_emit_pow_uniform_base(vm, NULL, NULL, &out, &d), XIR_ERR_INVALID_ARG);
  assert_null(out);
  assert_null(xir__vm_pow_uniform_base(NULL, NULL, NULL));
  /* the FMA variant has its own names, so both coexist in one module */
  xir__vm_set_fma(vm, 1);
  assert_int_equal(xir__vm_fma(vm), 1);
  assert_int_equal(xir__vm_build_map_kernel(vm, "k_expf", XIR__VM_EXP, 1, &d), XIR_OK);
  assert_int_equal(xir__vm_build_map_kernel(vm, "k_tanhf", XIR__VM_TANH, 1, &d), XIR_OK);
  assert_int_equal(xir__vm_build_pow_uniform_kernel(vm, "k_puf", 8, &d), XIR_OK);
  xir__vm_set_fma(vm, 0);
  assert_int_equal(xir__vm_fma(vm), 0);
  xir__vm_set_fma(NULL, 1); /* ignored */
  xir__vm_destroy(vm);
  const xir__jit_artifact *a;
  assert_int_equal(xir__jit_add(jit, &m, "k_tanh", NULL, &a, NULL, &d), XIR_OK);
  assert_int_equal(count(a->ir_text, "define internal fastcc float @xir.vexp.f32("), 1);
  assert_int_equal(count(a->ir_text, "define internal fastcc <8 x float> @xir.vexp.v8f32("), 1);
  assert_int_equal(count(a->ir_text, "define internal fastcc float @xir.vtanh.f32("), 1);
  assert_int_equal(count(a->ir_text, "define internal fastcc double @xir.vpowlog.f32("), 1);
  assert_int_equal(count(a->ir_text, "define internal fastcc <8 x float> @xir.vpowu.v8f32("), 1);
  assert_int_equal(count(a->ir_text, "define internal fastcc float @xir.vpowu.f32("), 1);
  assert_int_equal(count(a->ir_text, "define internal fastcc float @xir.vexp.fma.f32("), 1);
  assert_int_equal(count(a->ir_text, "define internal fastcc float @xir.vtanh.fma.f32("), 1);
  assert_int_equal(count(a->ir_text, "define internal fastcc double @xir.vpowlog.fma.f32("), 1);
  /* only the FMA functions contain llvm.fma (the plain tanh calls the plain exp) */
  const char *pt = strstr(a->ir_text, "define internal fastcc float @xir.vtanh.f32(");
  const char *pe = strstr(pt, "\n}\n");
  assert_non_null(pe);
  for (const char *q = strstr(pt, "llvm.fma"); q; q = NULL) assert_true(q > pe);
  assert_non_null(strstr(a->ir_text, "call fastcc float @xir.vexp.fma.f32("));
  assert_int_equal(xir__vm_from_name("sigmoid"), XIR__VM_SIGMOID);
  assert_int_equal(xir__vm_from_name("nope"), XIR__VM_COUNT);
  assert_int_equal(xir__vm_arity(XIR__VM_POW), 2);
  assert_string_equal(xir__vm_name(XIR__VM_RSQRT), "rsqrt");
  xir__jit_destroy(jit);
}

/* ---- the exhaustive driver (not part of CTest) ----
 * XIR_VMATH_EXHAUSTIVE=exp,sin[,...] [XIR_VMATH_VARIANT=plain|fma] build/tests/test_vmath
 * runs the widest kernel of each named unary function over all 2^32 fp32 bit patterns (chunks of
 * 2^20) in each variant, and prints the max ulp error (for sin and cos: over |x| ≤ 1e4 and over
 * |x| ≤ 5.2e7, the range where the reduction is exact), the max abs error where |f| ≤ 1, and the
 * special-value mismatches, measured as measure() does, and an FNV-1a hash of the output bits
 * (to compare two builds or two widths bit for bit). With XIR_VMATH_STEP=k only every k-th
 * pattern is evaluated (a sample); XIR_VMATH_W=1|8 picks a narrower kernel. About a minute per function and variant on one core. */
static int exhaustive(const char *list) {
  if (setup(NULL)) return 1;
  const char *vsel = getenv("XIR_VMATH_VARIANT");
  const char *st = getenv("XIR_VMATH_STEP");
  const char *wsel = getenv("XIR_VMATH_W"); /* a width of the set (1, 8, 16); default the widest */
  uint32_t step = st ? (uint32_t)strtoul(st, NULL, 10) : 1;
  if (!step) step = 1;
  enum { CH = 1 << 20 };
  float *xs = malloc(CH * sizeof(float)), *ys = calloc(CH, sizeof(float)),
        *o = malloc(CH * sizeof(float));
  if (!xs || !ys || !o) return 1;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    xir__vm_fn fn = xir__vm_from_name(tok);
    if (fn == XIR__VM_COUNT || xir__vm_arity(fn) != 1) {
      fprintf(stderr, "exhaustive: '%s' is not a unary function\n", tok);
      return 1;
    }
    int trig = fn == XIR__VM_SIN || fn == XIR__VM_COS;
    for (int v = 0; v < g_nvar; v++) {
      if (vsel && strcmp(vsel, g_vname[v])) continue;
      const kset *k = &g_vsets[v][g_vn[v] - 1];
      for (int s = 0; wsel && s < g_vn[v]; s++)
        if (g_vsets[v][s].W == (unsigned)atoi(wsel)) k = &g_vsets[v][s];
      double mu = 0, mu2 = 0, ma = 0;
      float at = 0, at2 = 0, ata = 0;
      size_t bad = 0, n = 0;
      float badx = 0;
      uint64_t u = 0, hash = 1469598103934665603ull; /* FNV-1a over the output bits */
      while (u < (1ull << 32)) {
        size_t m = 0;
        for (; m < CH && u < (1ull << 32); m++, u += step) xs[m] = u2f((uint32_t)u);
        while (m % 16) xs[m++] = 0.0f;
        k->k[fn](xs, ys, o, (int64_t)(m / k->W));
        n += m;
        for (size_t i = 0; i < m; i++) {
          float x = xs[i], g = o[i];
          hash = (hash ^ f2u(g)) * 1099511628211ull;
          double r = ref_of(fn, x, 0);
          float rf = (float)r;
          if (isnan(rf) || isinf(rf) || isnan(g) || isinf(g) ||
              (r == 0.0 && g == 0.0f && !signbit(r) != !signbit(g))) {
            int same = (isnan(rf) && isnan(g)) ||
                       (isinf(rf) && isinf(g) && !signbit(rf) == !signbit(g)) ||
                       (r == 0.0 && g == 0.0f && !signbit(r) == !signbit(g));
            if (!same && !bad++) badx = x;
            continue;
          }
          double ae = fabs((double)g - r);
          if (fabs(r) <= 1.0 && ae > ma) ma = ae, ata = x;
          double ax = fabs((double)x);
          if (trig && ax > 5.2e7) continue;
          double ue = ae / ulp32(r);
          if (ue > mu2) mu2 = ue, at2 = x;
          if ((!trig || ax <= 1e4) && ue > mu) mu = ue, at = x;
        }
      }
      if (trig)
        printf("%-5s %-8s W=%u n=%zu  max ulp %.3f (x=%.9g) |x|<=1e4, %.3f (x=%.9g) |x|<=5.2e7"
               "  max abs %.3g (x=%.9g)  special mismatches %zu (x=%a)  bits %016llx\n",
               g_vname[v], tok, k->W, n, mu, at, mu2, at2, ma, ata, bad, badx,
               (unsigned long long)hash);
      else
        printf("%-5s %-8s W=%u n=%zu  max ulp %.3f (x=%.9g)  max abs %.3g (x=%.9g)  special "
               "mismatches %zu (x=%a)  bits %016llx\n",
               g_vname[v], tok, k->W, n, mu, at, ma, ata, bad, badx, (unsigned long long)hash);
      fflush(stdout);
    }
  }
  free(xs);
  free(ys);
  free(o);
  teardown(NULL);
  return 0;
}

int main(void) {
  const char *exh = getenv("XIR_VMATH_EXHAUSTIVE");
  if (exh) return exhaustive(exh);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exp_accuracy),     cmocka_unit_test(test_log_accuracy),
      cmocka_unit_test(test_tanh_accuracy),    cmocka_unit_test(test_erf_accuracy),
      cmocka_unit_test(test_sigmoid_accuracy), cmocka_unit_test(test_sigmoid16_accuracy), cmocka_unit_test(test_exp_nonpos_is_exp), cmocka_unit_test(test_sin_cos_accuracy),
      cmocka_unit_test(test_sincos_bits),      cmocka_unit_test(test_sincos_mixed_lanes),
      cmocka_unit_test(test_exp_cold_lanes_same_bits),
      cmocka_unit_test(test_pow_accuracy),     cmocka_unit_test(test_pow_uniform_base),
      cmocka_unit_test(test_sqrt_rsqrt_exact),
      cmocka_unit_test(test_api_errors_and_emit_once),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

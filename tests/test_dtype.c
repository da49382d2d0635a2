/* test_dtype.c — bf16 and f16 buffers.
 *
 *   test_dtype            the conversions (half.h against independent references, exhaustively
 *                         where the input space allows), native loads and stores bit for bit on
 *                         three targets (the host with F16C/AVX512_BF16, AVX2 without either, the
 *                         x86-64 baseline), the text form, the verifier, retyping, the kernel cache
 *                         key, and .npy round trips;
 *   test_dtype KERNEL     built-in kernel KERNEL retyped to bf16, to f16 and mixed (bf16 input,
 *                         f32 weights, f16 output), every candidate of a small shape at the host's
 *                         width, checked against the fp64 oracle with the 16-bit tolerance
 *                         (docs/xir.md, "16-bit buffers"). CTest runs one process per kernel. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "check/check.h"
#include "ir/program.h"
#include "util/half.h"
#include "util/npy.h"
#include "util/rng.h"
#include "util/util.h"
#include "xir_compile.h"
#include "testutil.h"

static const char *g_kernel;

static void die(const xir_diag *d) {
  char b[2048];
  fail_msg("%s", xir_diag_format(d, b, sizeof b));
}

static xir_program *parse(const char *text) {
  xir_program *p;
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "t.xir", &p, &d)) die(&d);
  return p;
}

/* ---- the scalar conversions ---- */

/* Nearest-even bf16 of a finite f32, computed independently: the two bf16 neighbours by
 * truncation and the next one up, compared in double. */
static uint16_t ref_bf16(float x) {
  uint32_t b = xir__f32_bits(x);
  uint16_t lo = (uint16_t)(b >> 16);
  double dx = fabs((double)x), dlo = fabs((double)xir__bits_f32((uint32_t)lo << 16));
  double dhi = (lo & 0x7fff) == 0x7f7f ? 0x1p128 /* beyond the largest finite: rounds to inf */
                                       : fabs((double)xir__bits_f32((uint32_t)(lo + 1) << 16));
  double elo = dx - dlo, ehi = dhi - dx;
  if (elo < ehi || (elo == ehi && !(lo & 1))) return lo;
  return (uint16_t)(lo + 1);
}

static uint32_t rand_bits(xir_rng *r) { return (uint32_t)xir__rng_u64(r); }

/* Random inputs per scalar conversion test: 2^22, 2^18 under XIR_TEST_QUICK (sanitizers). */
static size_t n_random(void) { return test_quick() ? 1u << 18 : 1u << 22; }

/* Special f32 inputs: zeros, subnormals (bf16 subnormals too), ties, the overflow edges of f16,
 * infinities and NaNs with payloads. */
static const uint32_t kSpecial[] = {
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x00400000, 0x807fffff, 0x00008000,
    0x00018000, 0x00017fff, 0x007f8000, 0x00800000, 0x3f808000, 0x3f818000, 0x3f80c000,
    0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, 0xc77ff000, 0x7f7fffff, 0x7f7f8000,
    0xff7fffff, 0x7f800000, 0xff800000, 0x7f800001, 0xff800100, 0x7fc00000, 0xffc00001,
    0x7fa00000, 0x7f802000, 0x387fc000, 0x387fe000, 0x38800000, 0x33000000, 0x33000001,
    0x337fffff, 0x33800000, 0x32ffffff, 0x3c00f000, 0x38000000, 0x47800000, 0x3f7fffff};

static void test_f16_matches_the_compiler(void **state) {
  (void)state;
  /* every f16 to f32 */
  for (uint32_t h = 0; h < 65536; h++) {
    uint16_t hv = (uint16_t)h;
    _Float16 hf;
    memcpy(&hf, &hv, 2);
    float want = (float)hf;
    float got = xir__f16_to_f32((uint16_t)h);
    if (isnan(want)) {
      assert_true(isnan(got));
      assert_int_equal(signbit(got) != 0, (h & 0x8000) != 0);
      assert_true(xir__f32_bits(got) & 0x400000); /* quiet */
    } else {
      assert_int_equal(xir__f32_bits(got), xir__f32_bits(want));
    }
    /* and back: every f16 value is exact, a NaN keeps its (quieted) top payload */
    uint16_t back = xir__f32_to_f16(got);
    assert_int_equal(back, isnan(got) ? (uint16_t)(h | 0x200) : (uint16_t)h);
  }
  /* f32 to f16: the specials and 2^22 random bit patterns */
  xir_rng r;
  xir__rng_seed(&r, 7, 0);
  for (size_t i = 0; i < n_random() + XIR_ARRAY_LEN(kSpecial); i++) {
    uint32_t b = i < XIR_ARRAY_LEN(kSpecial) ? kSpecial[i] : rand_bits(&r);
    float x = xir__bits_f32(b);
    uint16_t got = xir__f32_to_f16(x);
    if (isnan(x)) {
      assert_int_equal(got, (uint16_t)(((b >> 16) & 0x8000) | 0x7e00 | ((b >> 13) & 0x3ff)));
      continue;
    }
    _Float16 h = (_Float16)x;
    uint16_t want;
    memcpy(&want, &h, 2);
    if (got != want) fail_msg("f32 %08x: f16 %04x, the compiler says %04x", b, got, want);
  }
}

static void test_bf16_matches_an_independent_rounding(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++)
    assert_int_equal(xir__f32_bits(xir__bf16_to_f32((uint16_t)h)), h << 16);
  xir_rng r;
  xir__rng_seed(&r, 8, 0);
  for (size_t i = 0; i < n_random() + XIR_ARRAY_LEN(kSpecial); i++) {
    uint32_t b = i < XIR_ARRAY_LEN(kSpecial) ? kSpecial[i] : rand_bits(&r);
    float x = xir__bits_f32(b);
    uint16_t got = xir__f32_to_bf16(x);
    uint16_t want = isnan(x) ? (uint16_t)((b >> 16) | 0x40) : isinf(x) ? (uint16_t)(b >> 16)
                                                                         : ref_bf16(x);
    if (got != want) fail_msg("f32 %08x: bf16 %04x, expected %04x", b, got, want);
  }
  /* a few by hand: a tie to even each way, the smallest subnormal tie, overflow to inf */
  assert_int_equal(xir__f32_to_bf16(xir__bits_f32(0x3f808000)), 0x3f80);
  assert_int_equal(xir__f32_to_bf16(xir__bits_f32(0x3f818000)), 0x3f82);
  assert_int_equal(xir__f32_to_bf16(xir__bits_f32(0x00018000)), 0x0002);
  assert_int_equal(xir__f32_to_bf16(xir__bits_f32(0x7f7fffff)), 0x7f80);
  assert_int_equal(xir__f32_to_bf16(xir__bits_f32(0x7f800001)), 0x7fc0); /* sNaN stays NaN */
  /* the public names are the same functions */
  assert_int_equal(xir_f32_to_bf16(1.00390625f), xir__f32_to_bf16(1.00390625f));
  assert_int_equal(xir_f32_to_f16(65520.0f), 0x7c00);
  assert_true(xir_f16_to_f32(0x0001) == 0x1p-24f);
}

/* ---- native loads and stores, bit for bit ---- */

static const char *kToHalf =
    "kernel to_half[N](x: f32[N], h: out bf16[N], f: out f16[N])\n"
    "root n in N {\n  v = load x[n]\n  store h[n] = v\n  store f[n] = v\n}\n";
static const char *kFromHalf =
    "kernel from_half[N](h: bf16[N], f: f16[N], a: out f32[N], b: out f32[N])\n"
    "root n in N {\n  store a[n] = load h[n]\n  store b[n] = load f[n]\n}\n";
/* rows: contiguous loads and stores with ragged chunks (l > 1), gathers and scatters (l = 1) */
static const char *kRows =
    "kernel rows[R, C](x: f32[R, C], h: bf16[R, C], f: f16[R, C], y: out bf16[R, C],\n"
    "    z: out f16[R, C], a: out f32[R, C], b: out f32[R, C])\n"
    "root r in R {\n  v = load x[r, :]\n  store y[r, :] = v\n  store z[r, :] = v\n"
    "  store a[r, :] = load h[r, :]\n  store b[r, :] = load f[r, :]\n}\n";

typedef struct target {
  const char *cpu, *features;
  int hw; /* 1 when it must use the hardware conversions */
} target;

/* Runs every candidate of p at shape spec on compiler cc with inputs in[] (f32 bits for f32
 * buffers, 16-bit patterns for the others) and checks each output against half.h exactly. */
static void run_bits(xir_compiler *cc, const char *text, const char *spec, const uint32_t *xbits,
                     const uint16_t *hbits, const uint16_t *fbits, size_t n, int hw) {
  xir_program *p = parse(text);
  xir_shape s;
  xir_diag d;
  if (xir_shape_parse(p, spec, &s, &d)) die(&d);
  int np = xir_program_num_params(p);
  void *buf[XIR_MAX_PARAMS] = {0};
  xir_arg args[XIR_MAX_PARAMS];
  memset(args, 0, sizeof args);
  for (int i = 0; i < np; i++) {
    xir_param_info in;
    xir_program_param(p, i, &in);
    size_t es = xir_elem_size(in.elem);
    assert_int_equal(xir_param_numel(p, i, &s), n);
    buf[i] = calloc(n + 64, es); /* room to see a write past the end */
    if (!in.is_output) {
      const void *src = in.elem == XIR_F32 ? (const void *)xbits : in.elem == XIR_BF16
                                                                       ? (const void *)hbits
                                                                       : (const void *)fbits;
      memcpy(buf[i], src, n * es);
      args[i].in = buf[i];
    } else {
      args[i].out = buf[i];
    }
  }
  xir_candidate *cands;
  size_t nc;
  if (xir_candidates(p, &s, xir_compiler_width(cc), &cands, &nc, &d)) die(&d);
  for (size_t c = 0; c < nc; c++) {
    const xir_kernel *k;
    if (xir_compile(cc, p, &s, &cands[c], &k, &d)) die(&d);
    xir_kernel_info info;
    xir_kernel_get_info(k, &info);
    /* the hardware path is in the IR exactly when the target has it */
    int has_half = strstr(info.ir_text, " x half>") != NULL;
    int has_bf = strstr(info.ir_text, " x bfloat>") != NULL;
    /* (a bf16 load is a shift everywhere: only bf16 stores use the bfloat type) */
    int want_bf = hw && strstr(text, "out bf16") != NULL;
    char name[160];
    xir_candidate_name(p, &cands[c], name, sizeof name);
    if (has_half != hw || has_bf != want_bf)
      fail_msg("%s %s: hardware conversions %s in the IR (half %d, bfloat %d)", xir_program_name(p),
               name, hw ? "expected" : "not expected", has_half, has_bf);
    for (int i = 0; i < np; i++) {
      xir_param_info in;
      xir_program_param(p, i, &in);
      if (in.is_output) memset(buf[i], 0xa5, (n + 64) * xir_elem_size(in.elem));
    }
    uint64_t slots[XIR_MAX_ARG_SLOTS];
    if (xir_kernel_pack_args(k, args, slots, &d)) die(&d);
    xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k));
    for (int i = 0; i < np; i++) {
      xir_param_info in;
      xir_program_param(p, i, &in);
      if (!in.is_output) continue;
      const unsigned char *tail = (const unsigned char *)buf[i] + n * xir_elem_size(in.elem);
      for (size_t t = 0; t < 64 * xir_elem_size(in.elem); t++)
        if (tail[t] != 0xa5) fail_msg("%s %s: wrote past the end of '%s'", text, name, in.name);
      for (size_t e = 0; e < n; e++) {
        uint32_t want, got;
        if (in.elem == XIR_F32) {
          /* a decoded input: from the bf16 input for the first f32 output, else the f16 one */
          int from_bf = !strcmp(in.name, "a");
          want = xir__f32_bits(from_bf ? xir__bf16_to_f32(hbits[e]) : xir__f16_to_f32(fbits[e]));
          got = ((const uint32_t *)buf[i])[e];
        } else {
          float x = xir__bits_f32(xbits[e]);
          want = in.elem == XIR_BF16 ? xir__f32_to_bf16(x) : xir__f32_to_f16(x);
          got = ((const uint16_t *)buf[i])[e];
        }
        if (got != want)
          fail_msg("%s, %s: '%s'[%zu] is %08x, expected %08x (input %08x / %04x / %04x)",
                   xir_program_name(p), name, in.name, e, got, want, xbits[e], hbits[e], fbits[e]);
      }
    }
  }
  xir_free(cands);
  for (int i = 0; i < np; i++) free(buf[i]);
  xir_program_free(p);
}

static void test_native_conversions_are_exact_on_every_target(void **state) {
  (void)state;
  /* N covers every 16-bit pattern (the decodes are exhaustive), the specials and random f32
   * bits; N is not a multiple of 16, so the last packet is ragged */
  const size_t N = 65536 + 4096 + 37;
  uint32_t *xb = malloc(N * 4);
  uint16_t *hb = malloc(N * 2), *fb = malloc(N * 2);
  xir_rng r;
  xir__rng_seed(&r, 11, 0);
  for (size_t i = 0; i < N; i++) {
    xb[i] = i < XIR_ARRAY_LEN(kSpecial) ? kSpecial[i] : rand_bits(&r);
    /* a third of the f32 inputs near the f16 range and its subnormals, where f16 rounds */
    if (i % 3 == 1) xb[i] = (xb[i] & 0x807fffff) | ((uint32_t)(100 + xir__rng_below(&r, 50)) << 23);
    /* bf16 inputs: every pattern; f16: every pattern, in another order */
    hb[i] = (uint16_t)i;
    fb[i] = (uint16_t)(i * 40503u);
  }
  const target kTargets[] = {{NULL, NULL, -1}, {NULL, "+avx2,+fma", 0}, {"x86-64", NULL, 0}};
  for (size_t t = 0; t < XIR_ARRAY_LEN(kTargets); t++) {
    xir_compiler_options co = {.no_kernel_cache = 1, .cpu = kTargets[t].cpu,
                               .features = kTargets[t].features};
    xir_compiler *cc;
    xir_diag d;
    if (xir_compiler_create(&co, &cc, &d)) {
      printf("# target %s/%s not runnable here: %s\n", co.cpu ? co.cpu : "host",
             co.features ? co.features : "", d.msg);
      continue;
    }
    int hw = kTargets[t].hw;
    if (hw < 0) {
      /* the host: the hardware path when it has both F16C and AVX512_BF16 */
      const char *f = xir_compiler_features(cc);
      hw = strstr(f, "+f16c") && strstr(f, "+avx512bf16");
      printf("# host %s: hardware conversions %s\n", xir_compiler_cpu(cc), hw ? "on" : "off");
      if (!hw && (strstr(f, "+f16c") || strstr(f, "+avx512bf16"))) {
        xir_compiler_destroy(cc);
        continue; /* only one of the two: the IR checks below assume both or neither */
      }
    }
    char spec[64];
    snprintf(spec, sizeof spec, "N=%zu", N);
    run_bits(cc, kToHalf, spec, xb, hb, fb, N, hw);
    run_bits(cc, kFromHalf, spec, xb, hb, fb, N, hw);
    /* rows: 37 columns (ragged chunks for every l), 111 rows */
    run_bits(cc, kRows, "R=111,C=37", xb, hb, fb, 111 * 37, hw);
    printf("# target %s%s%s W=%u: conversions exact\n", co.cpu ? co.cpu : "host",
           co.features ? " " : "", co.features ? co.features : "", xir_compiler_width(cc));
    xir_compiler_destroy(cc);
  }
  free(xb);
  free(hb);
  free(fb);
}

/* Pairs of full bf16 packets convert in one vcvtne2ps2bf16 with one subnormal test for both
 * (convert.h): a subnormal in either packet sends the pair to the exact path. Rows of 64 (every
 * chunk of l >= 32 full) where some rows hold subnormals in the low packet, the high packet or
 * both, and others none; every candidate's bits are half.h's, and on a host with AVX512_BF16 and
 * AVX512DQ the l = 32 and 64 candidates use the pair conversion. */
static void test_bf16_pair_stores(void **state) {
  (void)state;
  const size_t R = 16, C = 64, N = R * C;
  uint32_t *xb = malloc(N * 4);
  uint16_t *hb = malloc(N * 2), *fb = malloc(N * 2);
  xir_rng r;
  xir__rng_seed(&r, 12, 0);
  for (size_t i = 0; i < N; i++) {
    /* normal values with random mantissas, exponents around 1 */
    xb[i] = (rand_bits(&r) & 0x807fffff) | ((uint32_t)(120 + xir__rng_below(&r, 14)) << 23);
    hb[i] = (uint16_t)(i * 7919u);
    fb[i] = (uint16_t)(i * 40503u);
  }
  for (size_t row = 0; row < R; row++) {
    size_t lanes[4][2] = {{3, 99}, {20, 99}, {5, 47}, {99, 99}}; /* 99: none */
    for (int j = 0; j < 2; j++) {
      size_t c = lanes[row % 4][j];
      if (c < C) xb[row * C + c] = (rand_bits(&r) & 0x807fffff) | 1u; /* a subnormal, odd bits */
    }
    /* a subnormal tie to even in the high packet of the second pair of some rows */
    if (row % 3 == 0) xb[row * C + 33] = 0x00018000;
  }
  xir_compiler_options co = {.no_kernel_cache = 1};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&co, &cc, &d)) die(&d);
  const char *f = xir_compiler_features(cc);
  int hw = strstr(f, "+f16c") && strstr(f, "+avx512bf16");
  if (!hw && (strstr(f, "+f16c") || strstr(f, "+avx512bf16"))) {
    /* (the buffers too: a host with F16C and no AVX512_BF16 skips here, and LeakSanitizer
     * reported them on the Zen 1 host) */
    xir_compiler_destroy(cc);
    free(xb);
    free(hb);
    free(fb);
    skip();
  }
  run_bits(cc, kRows, "R=16,C=64", xb, hb, fb, N, hw);
  int pairs = hw && strstr(f, "+avx512dq") && xir_compiler_width(cc) == 16;
  xir_program *p = parse(kRows);
  xir_shape s;
  if (xir_shape_parse(p, "R=16,C=64", &s, &d)) die(&d);
  xir_candidate *cands;
  size_t nc, wide = 0;
  if (xir_candidates(p, &s, xir_compiler_width(cc), &cands, &nc, &d)) die(&d);
  for (size_t c = 0; c < nc; c++) {
    /* full chunks only: a ragged chunk stores masked packets */
    if (cands[c].local < 2 * cands[c].W || C % cands[c].local) continue;
    const xir_kernel *k;
    if (xir_compile(cc, p, &s, &cands[c], &k, &d)) die(&d);
    xir_kernel_info info;
    xir_kernel_get_info(k, &info);
    int has = strstr(info.ir_text, "cvtne2ps2bf16") != NULL;
    char name[160];
    xir_candidate_name(p, &cands[c], name, sizeof name);
    if (has != pairs) fail_msg("rows %s: pair conversion %s", name, pairs ? "missing" : "unexpected");
    wide++;
  }
  assert_true(wide > 0);
  printf("# bf16 pair stores %s, %zu candidates with l >= 2W\n", pairs ? "on" : "off (host)", wide);
  xir_free(cands);
  xir_program_free(p);
  xir_compiler_destroy(cc);
  free(xb);
  free(hb);
  free(fb);
}

/* The optimized IR of a one-root-axis kernel with every float buffer bf16, at spec, candidate
 * B = ℓ = ell (owned by cc's kernel). */
static const char *bf16_ir(xir_compiler *cc, const char *kernel, const char *spec, uint32_t ell) {
  xir_program *base, *p;
  xir_diag d;
  if (xir_kernel_load(kernel, &base, &d) || xir_program_retype(base, "bf16", &p, &d)) die(&d);
  xir_shape s;
  if (xir_shape_parse(p, spec, &s, &d)) die(&d);
  uint8_t perm[1] = {0};
  xir_candidate c;
  if (xir_candidate_make(p, &s, xir_compiler_width(cc), ell, ell, perm, &c, &d)) die(&d);
  const xir_kernel *k;
  if (xir_compile(cc, p, &s, &c, &k, &d)) die(&d);
  xir_kernel_info info;
  xir_kernel_get_info(k, &info);
  xir_program_free(p);
  xir_program_free(base);
  return info.ir_text;
}

/* Number of "load <W x i16>" instructions in the IR of bf16 layernorm's ℓ = W candidate at R=4,C. */
static int half_row_loads(xir_compiler *cc, int64_t C) {
  uint32_t W = xir_compiler_width(cc);
  char spec[64], pat[32];
  snprintf(spec, sizeof spec, "R=4,C=%lld", (long long)C);
  snprintf(pat, sizeof pat, "load <%u x i16>", W);
  int n = 0;
  for (const char *q = bf16_ir(cc, "layernorm", spec, W); (q = strstr(q, pat)); q++) n++;
  return n;
}

/* A bf16 row read by several consumer loops (layernorm's x: the mean, the variance, the output)
 * is converted once, into an f32 copy the later loops read, while that copy is at most 8 KiB
 * (lower.c mat_slot); a longer row is converted in every loop. */
static void test_half_rows_convert_once(void **state) {
  (void)state;
  xir_compiler_options co = {.no_kernel_cache = 1};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&co, &cc, &d)) die(&d);
  int small = half_row_loads(cc, 768), large = half_row_loads(cc, 4096);
  printf("# bf16 layernorm row loads in the IR: C=768 %d, C=4096 %d\n", small, large);
  assert_true(small >= 1);
  assert_true(large >= small + 2);
  xir_compiler_destroy(cc);
}

/* ---- the text form, the verifier, retyping ---- */

static void expect_parse_error(const char *text, const char *msg) {
  xir_program *p;
  xir_diag d;
  assert_int_not_equal(xir_program_parse(text, strlen(text), "t.xir", &p, &d), XIR_OK);
  assert_null(p);
  if (!strstr(d.msg, msg)) fail_msg("error '%s' does not say '%s'", d.msg, msg);
}

static void test_text_round_trip_and_rules(void **state) {
  (void)state;
  const char *src =
      "kernel k[R, C](x: bf16[R, C], w: f16[C], y: out bf16[R, C], z: out f16[R, C], eps: f32 = 1e-5)\n"
      "root r in R {\n  v = load x[r, :] * load w[:]\n  store y[r, :] = v + eps\n  store z[r, :] = v\n}\n";
  xir_program *p = parse(src);
  char *t1, *t2;
  xir_diag d;
  if (xir_program_print(p, &t1, &d)) die(&d);
  assert_non_null(strstr(t1, "x: bf16[R, C], w: f16[C], y: out bf16[R, C], z: out f16[R, C]"));
  xir_program *q = parse(t1);
  if (xir_program_print(q, &t2, &d)) die(&d);
  assert_string_equal(t1, t2);
  xir_param_info in;
  xir_program_param(q, 0, &in);
  assert_int_equal(in.elem, XIR_BF16);
  xir_program_param(q, 1, &in);
  assert_int_equal(in.elem, XIR_F16);
  xir_free(t1);
  xir_free(t2);
  xir_program_free(q);
  xir_program_free(p);
  /* a load is f32: no bf16 values exist; scalars and i64 outputs are refused */
  expect_parse_error("kernel k[R](x: bf16[R], y: out bf16[R])\nroot r in R {\n"
                     "  store y[r] = load x[r] + 1\n}\n", "different types f32 and i64");
  expect_parse_error("kernel k[R](s: bf16, y: out f32[R])\nroot r in R {\n  store y[r] = 1.0\n}\n",
                     "scalar 's' cannot be bf16");
  expect_parse_error("kernel k[R](x: f16[R], y: out i64[R])\nroot r in R {\n"
                     "  store y[r] = load x[r]\n}\n", "must be f32, bf16 or f16");
  expect_parse_error("kernel k[R](x: f8[R], y: out f32[R])\nroot r in R {\n  store y[r] = 1.0\n}\n",
                     "unknown type 'f8'");
  /* the names are reserved */
  expect_parse_error("kernel k[bf16](y: out f32[bf16])\nroot r in bf16 {\n  store y[r] = 1.0\n}\n",
                     "reserved");
  /* the builder refuses a bf16 scalar */
  xir_builder *b;
  assert_int_equal(xir_builder_new("k", &b), XIR_OK);
  assert_int_equal(xir_builder_scalar(b, "s", XIR_BF16, 0, 0), -1);
  xir_program *none;
  assert_int_not_equal(xir_builder_finish(b, &none, &d), XIR_OK);
  assert_non_null(strstr(d.msg, "must be f32 or i64"));
  /* element names and sizes */
  assert_string_equal(xir_elem_name(XIR_BF16), "bf16");
  assert_int_equal(xir_elem_from_name("f16"), XIR_F16);
  assert_int_equal(xir_elem_size(XIR_BF16), 2);
  assert_int_equal(xir_elem_size(XIR_I64), 8);
  assert_int_equal(xir_elem_from_name("f64"), XIR_ELEM_NONE);
}

static int elem_of(const xir_program *p, const char *name) {
  xir_param_info in;
  xir_program_param(p, xir_program_find_param(p, name), &in);
  return in.elem;
}

static void test_retype(void **state) {
  (void)state;
  xir_program *p, *q;
  xir_diag d;
  if (xir_kernel_load("rope_cache", &p, &d)) die(&d);
  /* a bare type retypes every float buffer, later items win; i64 and scalars stay */
  if (xir_program_retype(p, "bf16,cos=f32,y=f16", &q, &d)) die(&d);
  assert_int_equal(elem_of(q, "x"), XIR_BF16);
  assert_int_equal(elem_of(q, "sin"), XIR_BF16);
  assert_int_equal(elem_of(q, "cos"), XIR_F32);
  assert_int_equal(elem_of(q, "y"), XIR_F16);
  assert_int_equal(elem_of(q, "pos"), XIR_I64);
  /* the copy keeps the source positions; printing it shows the types; the original is intact */
  char *t;
  if (xir_program_print(q, &t, &d)) die(&d);
  assert_non_null(strstr(t, "x: bf16["));
  assert_non_null(strstr(t, "y: out f16["));
  assert_non_null(strstr(t, "pos: i64["));
  xir_free(t);
  assert_int_equal(elem_of(p, "x"), XIR_F32);
  xir_program *back;
  if (xir_program_retype(q, "f32", &back, &d)) die(&d);
  char *t0, *t1;
  if (xir_program_print(p, &t0, &d) || xir_program_print(back, &t1, &d)) die(&d);
  assert_string_equal(t0, t1);
  xir_free(t0);
  xir_free(t1);
  xir_program_free(back);
  /* per parameter */
  xir_program *r1;
  if (xir_program_retype_param(p, xir_program_find_param(p, "x"), XIR_F16, &r1, &d)) die(&d);
  assert_int_equal(elem_of(r1, "x"), XIR_F16);
  assert_int_equal(elem_of(r1, "y"), XIR_F32);
  xir_program_free(r1);
  /* refused: i64 buffers, scalars, unknown names and types, malformed items */
  struct {
    const char *spec, *msg;
  } bad[] = {{"pos=bf16", "it is an i64 buffer"},
             {"nope=bf16", "has no parameter 'nope'"}, {"x=f64", "unknown type 'f64'"},
             {"x=i64", "unknown type 'i64'"},        {"x=", "expected TYPE or NAME=TYPE"},
             {",", "expected TYPE or NAME=TYPE"}};
  for (size_t i = 0; i < XIR_ARRAY_LEN(bad); i++) {
    xir_program *z = (xir_program *)1;
    assert_int_not_equal(xir_program_retype(p, bad[i].spec, &z, &d), XIR_OK);
    assert_null(z);
    if (!strstr(d.msg, bad[i].msg)) fail_msg("'%s': '%s' does not say '%s'", bad[i].spec, d.msg, bad[i].msg);
  }
  xir_program_free(q);
  assert_int_not_equal(xir_program_retype_param(p, xir_program_find_param(p, "pos"), XIR_BF16, &q, &d), XIR_OK);
  assert_null(q);
  xir_program_free(p);
  /* scalars stay f32 */
  if (xir_kernel_load("rope", &p, &d)) die(&d);
  assert_int_not_equal(xir_program_retype(p, "theta=bf16", &q, &d), XIR_OK);
  assert_non_null(strstr(d.msg, "it is a scalar"));
  xir_program_free(p);
}

/* The kernel cache keys the canonical text: the same kernel in f32 and bf16 are two kernels
 * with different code. */
static void test_cache_key_has_the_types(void **state) {
  (void)state;
  char dir[] = "/tmp/xir-dtype-cache-XXXXXX";
  assert_non_null(mkdtemp(dir));
  xir_compiler_options co = {.kernel_cache_dir = dir};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&co, &cc, &d)) die(&d);
  xir_program *p, *q;
  if (xir_kernel_load("swiglu", &p, &d) || xir_program_retype(p, "bf16", &q, &d)) die(&d);
  xir_shape s;
  if (xir_shape_parse(p, "R=8,C=64", &s, &d)) die(&d);
  xir_candidate *cands;
  size_t nc;
  if (xir_candidates(p, &s, xir_compiler_width(cc), &cands, &nc, &d)) die(&d);
  xir_candidate c = cands[0];
  xir_free(cands);
  const xir_kernel *k1, *k2;
  if (xir_compile(cc, p, &s, &c, &k1, &d) || xir_compile(cc, q, &s, &c, &k2, &d)) die(&d);
  assert_ptr_not_equal(k1, k2);
  xir_kernel_info i1, i2;
  xir_kernel_get_info(k1, &i1);
  xir_kernel_get_info(k2, &i2);
  assert_string_not_equal(i1.obj_sha256, i2.obj_sha256);
  assert_string_equal(i2.disk_cache, "miss");
  char sha[65];
  snprintf(sha, sizeof sha, "%s", i2.obj_sha256);
  xir_compiler_destroy(cc);
  /* a second compiler finds the bf16 kernel on disk, under its own key */
  if (xir_compiler_create(&co, &cc, &d)) die(&d);
  if (xir_compile(cc, q, &s, &c, &k2, &d)) die(&d);
  xir_kernel_get_info(k2, &i1);
  assert_string_equal(i1.disk_cache, "hit");
  assert_string_equal(i1.obj_sha256, sha);
  xir_compiler_destroy(cc);
  xir_program_free(q);
  xir_program_free(p);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* ---- .npy ---- */

static void test_npy_round_trips(void **state) {
  (void)state;
  char dir[] = "/tmp/xir-dtype-npy-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/a.npy", dir);
  uint16_t v[3 * 5];
  for (int i = 0; i < 15; i++) v[i] = (uint16_t)(0x3f80 + 977 * i);
  size_t sh[2] = {3, 5}, got_sh[4];
  xir_diag d;
  for (int bf = 0; bf < 2; bf++) {
    if (xir__npy_write_half(path, v, sh, 2, bf, &d)) die(&d);
    uint16_t *back = NULL;
    int nd = 0;
    if (xir__npy_read_half(path, &back, got_sh, &nd, 4, bf, &d)) die(&d);
    assert_int_equal(nd, 2);
    assert_int_equal(got_sh[0], 3);
    assert_int_equal(got_sh[1], 5);
    assert_memory_equal(back, v, sizeof v);
    xir__free(back);
    /* the header says '<f2' / 'bfloat16' (ml_dtypes' name) */
    FILE *f = fopen(path, "rb");
    char hdr[129] = {0};
    assert_int_equal(fread(hdr, 1, 128, f), 128);
    fclose(f);
    assert_non_null(strstr(hdr + 10, bf ? "'descr': 'bfloat16'" : "'descr': '<f2'"));
    /* read as the other type: a clear error */
    assert_int_equal(xir__npy_read_half(path, &back, got_sh, &nd, 4, !bf, &d), XIR_ERR_FORMAT);
    assert_non_null(strstr(d.msg, "unsupported dtype"));
    assert_null(back);
  }
  /* what np.save writes for an ml_dtypes.bfloat16 array: '<V2' */
  char file[256];
  size_t len;
  if (xir__npy_build_header(file, sizeof file, &len, sh, 2, &d)) die(&d);
  char *at = memmem(file, len, "'<f4'", 5);
  assert_non_null(at);
  memcpy(at, "'<V2'", 5);
  memcpy(file + len, v, sizeof v);
  uint16_t *back = NULL;
  int nd = 0;
  if (xir__npy_decode_half(file, len + sizeof v, "v2.npy", &back, got_sh, &nd, 4, 1, &d)) die(&d);
  assert_memory_equal(back, v, sizeof v);
  xir__free(back);
  /* '<V2' is not float16 */
  assert_int_equal(xir__npy_decode_half(file, len + sizeof v, "v2.npy", &back, got_sh, &nd, 4, 0, &d),
                   XIR_ERR_FORMAT);
  /* truncated data */
  assert_int_equal(xir__npy_decode_half(file, len + sizeof v - 1, "v2.npy", &back, got_sh, &nd, 4, 1, &d),
                   XIR_ERR_FORMAT);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* xir__case_load_inputs: a 16-bit buffer reads its own type, or f32 rounded to it. */
static void test_case_inputs_from_npy(void **state) {
  (void)state;
  char dir[] = "/tmp/xir-dtype-in-XXXXXX";
  assert_non_null(mkdtemp(dir));
  xir_program *p = parse("kernel k[N](x: bf16[N], w: f16[N], y: out f32[N])\nroot n in N {\n"
                         "  store y[n] = load x[n] + load w[n]\n}\n");
  xir_shape s;
  xir_diag d;
  if (xir_shape_parse(p, "N=4", &s, &d)) die(&d);
  float xf[4] = {1.00390625f, -3.0f, 1e-40f, 70000.0f};
  uint16_t wh[4] = {0x3c00, 0x0001, 0x7bff, 0xbc00};
  char path[256];
  size_t sh[1] = {4};
  snprintf(path, sizeof path, "%s/x.npy", dir);
  if (xir__npy_write_f32(path, xf, sh, 1, &d)) die(&d);
  snprintf(path, sizeof path, "%s/w.npy", dir);
  if (xir__npy_write_half(path, wh, sh, 1, 0, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &s, 1, &d) || xir__case_load_inputs(&c, dir, &d) ||
      xir__case_oracle(&c, &d))
    die(&d);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(c.hdata[0][i], xir__f32_to_bf16(xf[i]));
    assert_int_equal(c.hdata[1][i], wh[i]);
    /* the oracle reads the stored values */
    double want = (double)xir__bf16_to_f32(c.hdata[0][i]) + (double)xir__f16_to_f32(wh[i]);
    assert_true(c.ref[2][i] == want);
  }
  xir__case_free(&c);
  xir_program_free(p);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* The tolerance of a 16-bit output: the f32 bound plus half an ulp of the type at y. */
static void test_half_ulp_and_compare(void **state) {
  (void)state;
  assert_true(xir__half_ulp(XIR_BF16, 1.0) == 0x1p-8);
  assert_true(xir__half_ulp(XIR_BF16, 1.99) == 0x1p-8);
  assert_true(xir__half_ulp(XIR_BF16, 2.0) == 0x1p-7);
  assert_true(xir__half_ulp(XIR_F16, 1.0) == 0x1p-11);
  assert_true(xir__half_ulp(XIR_F16, 65504.0) == 16.0);
  assert_true(xir__half_ulp(XIR_F16, 0x1p-20) == 0x1p-25); /* subnormal: the fixed spacing */
  assert_true(xir__half_ulp(XIR_F16, 0.0) == 0x1p-25);
  assert_true(xir__half_ulp(XIR_F32, 1.0) == 0);
  /* the comparison: the rounded oracle passes, one ulp off fails, f16 overflow to inf passes */
  for (int e = 0; e < 2; e++) {
    const char *txt = e ? "kernel k[N](x: f32[N], y: out f16[N])\nroot n in N {\n  store y[n] = load x[n] * 3.0\n}\n"
                        : "kernel k[N](x: f32[N], y: out bf16[N])\nroot n in N {\n  store y[n] = load x[n] * 3.0\n}\n";
    xir_program *p = parse(txt);
    xir_shape s;
    xir_diag d;
    xir_case c;
    if (xir_shape_parse(p, "N=64", &s, &d) || xir__case_init(&c, p, &s, 5, &d)) die(&d);
    c.data[0][7] = 30000.0f; /* 90000: beyond f16 */
    c.data[0][3] = 1.0f;     /* 3.0: exact, so one ulp off is a whole ulp */
    if (xir__case_oracle(&c, &d)) die(&d);
    xir_tolerance tol = {1e-4, 1e-5};
    for (int i = 0; i < 64; i++) {
      float f = (float)c.ref[1][i];
      c.hdata[1][i] = e ? xir__f32_to_f16(f) : xir__f32_to_bf16(f);
    }
    assert_true(xir__case_compare(&c, 1, tol).pass);
    if (e) assert_int_equal(c.hdata[1][7], 0x7c00);
    c.hdata[1][3] = (uint16_t)(c.hdata[1][3] + 1);
    xir_compare r = xir__case_compare(&c, 1, tol);
    assert_false(r.pass);
    assert_int_equal(r.bad, 1);
    assert_int_equal(r.first_bad, 3);
    c.hdata[1][3] = (uint16_t)(c.hdata[1][3] - 1);
    if (e) {
      c.hdata[1][7] = 0x7bff; /* 65504 for 90000 */
      assert_false(xir__case_compare(&c, 1, tol).pass);
    }
    xir__case_free(&c);
    xir_program_free(p);
  }
}

/* ---- every built-in kernel in bf16, f16 and mixed, every candidate ---- */

static const char *small_shape(const char *k) {
  if (!strcmp(k, "rope")) return "R=13,C=40,HD=8";
  if (!strcmp(k, "rope_cache")) return "R=13,C=40,HD=8,P=20,H2=4";
  if (!strncmp(k, "attention", 9)) return "B=1,HQ=4,HKV=2,Q=5,K=9,D=8,DV=6";
  return "R=13,C=70";
}

/* The mixed case: the first floating-point input bf16, the other inputs f32, the output f16. */
static void mixed_spec(const xir_program *p, char *buf, size_t cap) {
  size_t o = 0;
  int first = 1;
  buf[0] = 0;
  for (int i = 0; i < xir_program_num_params(p); i++) {
    xir_param_info in;
    xir_program_param(p, i, &in);
    if (in.kind != XIR_PARAM_BUFFER || in.elem != XIR_F32) continue;
    const char *t = in.is_output ? "f16" : first ? "bf16" : "f32";
    if (!in.is_output) first = 0;
    o += (size_t)snprintf(buf + o, cap - o, "%s%s=%s", o ? "," : "", in.name, t);
  }
}

/* Every candidate of g_kernel at shape, retyped by each of specs[0..nspecs), against the oracle. */
static void every_candidate(xir_compiler *cc, const xir_program *base, const char *shape,
                            const char *const *specs, size_t nspecs) {
  xir_diag d;
  xir_tolerance tol = xir__kernel_tolerance(g_kernel);
  for (size_t si = 0; si < nspecs; si++) {
    xir_program *p;
    if (xir_program_retype(base, specs[si], &p, &d)) die(&d);
    xir_shape s;
    if (xir_shape_parse(p, shape, &s, &d)) die(&d);
    xir_case c;
    if (xir__case_init(&c, p, &s, 99, &d) || xir__case_oracle(&c, &d)) die(&d);
    xir_candidate *cands;
    size_t n;
    if (xir_candidates(p, &s, xir_compiler_width(cc), &cands, &n, &d)) die(&d);
    assert_true(n > 0);
    double worst = 0;
    /* XIR_TEST_QUICK (the sanitizer runs): every third candidate */
    size_t step = test_quick() ? 3 : 1;
    for (size_t i = 0; i < n; i += step) {
      char name[160];
      xir_candidate_name(p, &cands[i], name, sizeof name);
      const xir_kernel *k;
      if (xir_compile(cc, p, &s, &cands[i], &k, &d)) die(&d);
      xir__case_reset_outputs(&c);
      uint64_t slots[XIR_MAX_ARG_SLOTS];
      if (xir_kernel_pack_args(k, c.args, slots, &d)) die(&d);
      assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
      if (!xir__case_sentinels_ok(&c)) fail_msg("%s %s %s: a sentinel was overwritten", g_kernel, specs[si], name);
      for (int q = 0; q < xir_program_num_params(p); q++) {
        if (!c.ref[q]) continue;
        xir_compare r = xir__case_compare(&c, q, tol);
        if (!r.pass)
          fail_msg("%s --dtype %s %s: %zu of %zu elements out of tolerance (%zu NaN); first at "
                   "%zu: got %.9g, oracle %.9g", g_kernel, specs[si], name, r.bad, r.n, r.nan,
                   r.first_bad, (double)xir__case_output_f32(&c, q, r.first_bad),
                   c.ref[q][r.first_bad]);
        if (r.max_abs > worst) worst = r.max_abs;
      }
    }
    printf("# %s %s --dtype %s: %zu candidates within tolerance (max abs %.3g)\n", g_kernel,
           shape, specs[si], n, worst);
    xir_free(cands);
    xir__case_free(&c);
    xir_program_free(p);
  }
}

static void test_kernel_in_every_dtype(void **state) {
  (void)state;
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  xir_program *base;
  if (xir_kernel_load(g_kernel, &base, &d)) die(&d);
  char mixed[256];
  mixed_spec(base, mixed, sizeof mixed);
  const char *specs[] = {"bf16", "f16", mixed};
  every_candidate(cc, base, small_shape(g_kernel), specs, 3);
  /* the row kernels at rows too long for an f32 copy of a bf16 row (> 8 KiB): their reductions
   * over one bf16 row load it even/odd at l >= 2W (lower.c evenodd_reduction), with a tail
   * chunk at every l (2100 = 131·16 + 4) */
  if (!strcmp(g_kernel, "rmsnorm") || !strcmp(g_kernel, "layernorm") ||
      !strncmp(g_kernel, "softmax", 7))
    every_candidate(cc, base, "R=3,C=2100", specs, 3);
  xir_program_free(base);
  xir_compiler_destroy(cc);
}

/* The even/odd loads of a reduction over one bf16 row (lower.c evenodd_reduction): at l >= 2W
 * bf16 rmsnorm's sum of squares reads 2W elements as one <W x i32> load, the odd ones by
 * `and 0xffff0000`; at l = W (one vector a chunk) it keeps the widening load. The outputs of
 * both are checked against the oracle by test_kernel_in_every_dtype (R=3,C=2100). */
static void test_bf16_reduction_loads_even_odd(void **state) {
  (void)state;
  xir_compiler_options co = {.no_kernel_cache = 1};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&co, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  char pat[48];
  snprintf(pat, sizeof pat, "and <%u x i32> %%", W);
  int found[2] = {0, 0};
  for (int wide = 0; wide < 2; wide++) {
    const char *ir = bf16_ir(cc, "rmsnorm", "R=4,C=4096", wide ? 4 * W : W);
    for (const char *q = ir; (q = strstr(q, pat)); q++) {
      const char *eol = strchr(q, '\n');
      const char *m = strstr(q, "i32 -65536");
      if (m && (!eol || m < eol)) found[wide]++;
    }
  }
  printf("# bf16 rmsnorm C=4096: odd-element masks l=W %d, l=4W %d\n", found[0], found[1]);
  assert_int_equal(found[0], 0);
  assert_true(found[1] >= 1);
  xir_compiler_destroy(cc);
}

/* ℓ = 1 pair units (src/lower/lower.c, pair_units_ok / pair_evenodd_ok): two packets a unit in
 * the blocks whose root programs all exist; where every row access is a bf16 one at the flattened
 * index, the loads split even and odd elements and the store interleaves them back. Every ℓ = 1
 * candidate of an all-bf16 product (R = 1000, C = 70: rows wrap inside units, the last block is
 * partial) gives the bits of half.h on every bf16 pattern times random factors (subnormal
 * products take the exact path of the pair conversion, NaN and inf pass), and on a host with the
 * pair conversion some candidate's IR has the interleave, which a mixed f32/bf16 one never has. */
static void test_bf16_pair_units(void **state) {
  (void)state;
  static const char *kEo =
      "kernel eo[R, C](h: bf16[R, C], g: bf16[R, C], y: out bf16[R, C])\n"
      "root r in R, c in C {\n  store y[r, c] = mul(load h[r, c], load g[r, c])\n}\n";
  static const char *kMixed =
      "kernel eo_mixed[R, C](h: bf16[R, C], g: f32[R, C], y: out bf16[R, C])\n"
      "root r in R, c in C {\n  store y[r, c] = mul(load h[r, c], load g[r, c])\n}\n";
  const size_t R = 1000, C = 70, N = R * C;
  uint16_t *h = malloc(N * 2), *g = malloc(N * 2), *y = malloc((N + 64) * 2);
  float *gf = malloc(N * 4);
  xir_rng r;
  xir__rng_seed(&r, 13, 0);
  for (size_t i = 0; i < N; i++) {
    h[i] = (uint16_t)(i * 40503u); /* every pattern (N > 65536) */
    /* factors of 2^-8..2^8, a few of 2^-120 (subnormal products) */
    uint32_t e = i % 97 == 0 ? 7 : 119 + (uint32_t)xir__rng_below(&r, 17);
    g[i] = (uint16_t)((rand_bits(&r) & 0x807f) | e << 7);
    gf[i] = xir__bf16_to_f32(g[i]);
  }
  xir_compiler_options co = {.no_kernel_cache = 1};
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(&co, &cc, &d)) die(&d);
  const char *f = xir_compiler_features(cc);
  int pairs = strstr(f, "+avx512bf16") && strstr(f, "+avx512dq") && xir_compiler_width(cc) == 16;
  int interleaved[2] = {0, 0}, runs = 0;
  for (int mixed = 0; mixed < 2; mixed++) {
    xir_program *p = parse(mixed ? kMixed : kEo);
    xir_shape s;
    if (xir_shape_parse(p, "R=1000,C=70", &s, &d)) die(&d);
    xir_candidate *cands;
    size_t nc;
    if (xir_candidates(p, &s, xir_compiler_width(cc), &cands, &nc, &d)) die(&d);
    for (size_t c = 0; c < nc; c++) {
      if (cands[c].local != 1) continue;
      const xir_kernel *k;
      if (xir_compile(cc, p, &s, &cands[c], &k, &d)) die(&d);
      xir_kernel_info info;
      xir_kernel_get_info(k, &info);
      interleaved[mixed] += strstr(info.ir_text, "<i32 0, i32 16, i32 1, i32 17") != NULL;
      memset(y, 0xa5, (N + 64) * 2);
      xir_arg args[3];
      memset(args, 0, sizeof args);
      args[0].in = h;
      args[1].in = mixed ? (const void *)gf : (const void *)g;
      args[2].out = y;
      uint64_t slots[XIR_MAX_ARG_SLOTS];
      if (xir_kernel_pack_args(k, args, slots, &d)) die(&d);
      xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k));
      char name[160];
      xir_candidate_name(p, &cands[c], name, sizeof name);
      for (size_t e = 0; e < N; e++) {
        uint16_t want = xir__f32_to_bf16(xir__bf16_to_f32(h[e]) * gf[e]);
        if (y[e] != want)
          fail_msg("%s %s: y[%zu] is %04x, expected %04x (h %04x, g %04x)", xir_program_name(p), name,
                   e, y[e], want, h[e], g[e]);
      }
      for (size_t t = N; t < N + 64; t++)
        if (y[t] != 0xa5a5) fail_msg("%s %s: wrote past the end", xir_program_name(p), name);
      runs++;
    }
    xir_free(cands);
    xir_program_free(p);
  }
  printf("# bf16 pair units: %d l = 1 candidates exact; interleaved stores %d (bf16) / %d (mixed)\n",
         runs, interleaved[0], interleaved[1]);
  assert_int_equal(interleaved[1], 0);
  if (pairs) assert_true(interleaved[0] > 0);
  else assert_int_equal(interleaved[0], 0);
  xir_compiler_destroy(cc);
  free(h);
  free(g);
  free(gf);
  free(y);
}

/* ---- math precision that follows the output type ---- */

static int narrow_of(const char *text, const char *node) {
  xir_program *p = parse(text);
  uint8_t *nar = calloc((size_t)p->nnodes + 1, 1);
  assert_non_null(nar);
  xir__narrow_values(p, nar);
  int id = -1;
  for (int i = 0; i < p->nnodes; i++)
    if (p->nodes[i].name && !strcmp(p->nodes[i].name, node)) id = i;
  assert_true(id >= 0);
  int r = nar[id];
  free(nar);
  xir_program_free(p);
  return r;
}

/* xir__narrow_values: a sigmoid is narrow exactly when every path from it reaches a bf16/f16 store
 * through mul/div/neg/abs; then the lowering emits vmath's sigmoid16 (and only then). */
static void test_narrow_values_pick_sigmoid16(void **state) {
  (void)state;
  static const char *head =
      "kernel k[R, C](a: %s[R, C], b: f32[R, C], y: out %s[R, C]%s)\n"
      "root r in R, c in C {\n  va = load a[r, c]\n  vb = load b[r, c]\n  s = sigmoid(va)\n%s}\n";
  struct {
    const char *ain, *yout, *extra, *body;
    int want;
  } cases[] = {
      {"bf16", "bf16", "", "  t = mul(va, s)\n  u = mul(t, vb)\n  store y[r, c] = u\n", 1},
      {"f32", "f16", "", "  t = div(vb, s)\n  u = neg(t)\n  w = abs(u)\n  store y[r, c] = w\n", 1},
      {"bf16", "f32", "", "  t = mul(va, s)\n  store y[r, c] = t\n", 0},
      {"f32", "bf16", "", "  t = add(va, s)\n  store y[r, c] = t\n", 0},
      {"f32", "bf16", ", z: out f32[R, C]",
       "  t = mul(va, s)\n  store y[r, c] = t\n  store z[r, c] = s\n", 0},
      {"f32", "bf16", "", "  t = mul(s, s)\n  u = sub(t, vb)\n  store y[r, c] = u\n", 0},
  };
  char text[1024];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(text, sizeof text, head, cases[i].ain, cases[i].yout, cases[i].extra, cases[i].body);
    if (narrow_of(text, "s") != cases[i].want)
      fail_msg("case %zu: narrow(s) = %d, want %d:\n%s", i, !cases[i].want, cases[i].want, text);
  }
  /* a reduction is not multiplicative: softmax-like use of sigmoid */
  assert_int_equal(narrow_of("kernel k[R, C](x: f32[R, C], y: out bf16[R, C])\n"
                             "root r in R {\n  v = load x[r, :]\n  s = sigmoid(v)\n"
                             "  m = reduce.sum(s, C)\n  t = div(s, m)\n  store y[r, :] = t\n}\n",
                             "s"),
                   0);
  /* the lowering follows it: swiglu in bf16 calls sigmoid16, in f32 sigmoid */
  xir_compiler *cc;
  xir_diag d;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  xir_program *base;
  if (xir_kernel_load("swiglu", &base, &d)) die(&d);
  const char *specs[] = {"f32", "bf16", "y=f16", "a=bf16,b=bf16"};
  const int want16[] = {0, 1, 1, 0};
  for (int si = 0; si < 4; si++) {
    xir_program *p;
    if (xir_program_retype(base, specs[si], &p, &d)) die(&d);
    xir_shape sh;
    if (xir_shape_parse(p, "R=3,C=40", &sh, &d)) die(&d);
    xir_candidate *cands;
    size_t n;
    if (xir_candidates(p, &sh, xir_compiler_width(cc), &cands, &n, &d)) die(&d);
    const xir_kernel *k;
    if (xir_compile(cc, p, &sh, &cands[0], &k, &d)) die(&d);
    xir_kernel_info info;
    xir_kernel_get_info(k, &info);
    /* the math functions are inlined: tell them apart by a constant of each (the degree-4
     * polynomial's leading coefficient - of e^r, or of 2^f on AVX-512 hosts; the second ln2
     * constant, which sigmoid16 leaves out) */
    int has16 = strstr(info.ir_text, "0x3FA5414D40000000") != NULL ||
                strstr(info.ir_text, "0x3F8B814A80000000") != NULL;
    int has32 = strstr(info.ir_text, "0x3F2BD01060000000") != NULL;
    if (has16 != want16[si] || has32 == want16[si])
      fail_msg("swiglu --dtype %s: sigmoid16 %d, sigmoid %d in the IR", specs[si], has16, has32);
    xir_free(cands);
    xir_program_free(p);
  }
  xir_program_free(base);
  xir_compiler_destroy(cc);
}

int main(int argc, char **argv) {
  if (argc > 1) {
    g_kernel = argv[1];
    const struct CMUnitTest k[] = {cmocka_unit_test(test_kernel_in_every_dtype)};
    return cmocka_run_group_tests(k, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16_matches_the_compiler),
      cmocka_unit_test(test_bf16_matches_an_independent_rounding),
      cmocka_unit_test(test_half_ulp_and_compare),
      cmocka_unit_test(test_text_round_trip_and_rules),
      cmocka_unit_test(test_retype),
      cmocka_unit_test(test_cache_key_has_the_types),
      cmocka_unit_test(test_npy_round_trips),
      cmocka_unit_test(test_case_inputs_from_npy),
      cmocka_unit_test(test_native_conversions_are_exact_on_every_target),
      cmocka_unit_test(test_bf16_pair_stores),
      cmocka_unit_test(test_half_rows_convert_once),
      cmocka_unit_test(test_bf16_reduction_loads_even_odd),
      cmocka_unit_test(test_bf16_pair_units),
      cmocka_unit_test(test_narrow_values_pick_sigmoid16),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

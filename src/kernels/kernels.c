/* kernels.c — the built-in LLM kernel library, shipped as XIR text (SPEC.md's names table).
 *
 * Each kernel is ordinary XIR: the `xir kernels` command lists them, `xir print` shows their
 * canonical form, and tests check each one against an independent hand-written fp64 reference.
 * Conventions: fp32, row-major, the normalized / softmax axis last; a row whose every column is
 * masked produces zeros (the max is replaced by 0 and a sum of exactly 0 gives a zero row), never
 * NaN. Any other special value propagates as in NumPy's exp(z - max z) / sum: a NaN score, or a
 * +inf one (exp(inf - inf) = NaN), makes the row NaN, so the guards test `s == 0.0`, never
 * `s > 0.0` (which would turn a NaN sum into zeros). docs/xir.md gives the f32 ranges. */
#include <string.h>

#include "ir/program.h"

typedef struct builtin {
  const char *name;
  const char *summary;
  const char *text;
} builtin;

static const builtin kKernels[] = {
    {"rmsnorm", "y = x * rsqrt(mean(x^2) + eps) * w",
     "# RMSNorm over the last axis. The mean multiplies by 1/C (a division is on each row's\n"
     "# critical path: 1x768 91-104 -> 84 ns a launch, 8x768 596-654 -> 579-586).\n"
     "kernel rmsnorm[R, C](x: f32[R, C], w: f32[C], y: out f32[R, C], eps: f32 = 1e-5)\n"
     "root r in R {\n"
     "  v = load x[r, :]\n"
     "  ms = reduce.sum(v * v) * (1.0 / f32(C))\n"
     "  inv = rsqrt(ms + eps)\n"
     "  store y[r, :] = v * inv * load w[:]\n"
     "}\n"},
    {"layernorm", "y = (x - mean) * rsqrt(var + eps) * w + b",
     "# LayerNorm over the last axis (population variance), by the corrected two-pass\n"
     "# algorithm: corr, the mean of x - mean0, removes the rounding of the f32 mean (a row of\n"
     "# small spread next to its magnitude would otherwise carry it, amplified by inv). An\n"
     "# overflowed ms stays inf (inv = 0, the row is b), never inf - inf. The means multiply\n"
     "# by 1/C (a division is on each row's critical path: 17x65 336 -> 292 ns a launch).\n"
     "kernel layernorm[R, C](x: f32[R, C], w: f32[C], b: f32[C], y: out f32[R, C],\n"
     "                       eps: f32 = 1e-5)\n"
     "root r in R {\n"
     "  v = load x[r, :]\n"
     "  rc = 1.0 / f32(C)\n"
     "  mean0 = reduce.sum(v) * rc\n"
     "  d0 = v - mean0\n"
     "  corr = reduce.sum(d0) * rc\n"
     "  ms = reduce.sum(d0 * d0) * rc\n"
     "  t = ms - corr * corr\n"
     "  var = select(ms == inf, ms, select(t < 0.0, 0.0, t))\n"
     "  inv = rsqrt(var + eps)\n"
     "  store y[r, :] = (d0 * inv - corr * inv) * load w[:] + load b[:]\n"
     "}\n"},
    {"rope", "rotary embedding: pairs of each head rotated by p * theta^(-2i/HD), p = row + offset",
     "# RoPE: row r is position p = r + offset; within each head of width HD the pair\n"
     "# (x[2i], x[2i+1]) is rotated by the angle p * theta^(-2i/HD).\n"
     "kernel rope[R, C, HD](x: f32[R, C], y: out f32[R, C], theta: f32 = 10000.0,\n"
     "                      offset: i64 = 0)\n"
     "  require HD % 2 == 0\n"
     "  require C % HD == 0\n"
     "root r in R {\n"
     "  c = iota(C)\n"
     "  odd = c % 2\n"
     "  i = (c % HD) / 2\n"
     "  freq = pow(theta, f32(-2 * i) / f32(HD))\n"
     "  angle = f32(r + offset) * freq\n"
     "  partner = load x[r, c + 1 - 2 * odd]\n"
     "  sign = f32(2 * odd - 1)\n"
     "  store y[r, :] = load x[r, :] * cos(angle) + sign * partner * sin(angle)\n"
     "}\n"},
    {"rope_cache",
     "rotary embedding from cos/sin tables: pairs of each head rotated by the angle of position pos[r]",
     "# RoPE from a cache, the form LLM engines use: row r is at position pos[r] (an integer in\n"
     "# [0, P)); within each head of width HD the pair (x[2i], x[2i+1]) is rotated by the angle\n"
     "# whose cosine and sine are cos[pos[r], i] and sin[pos[r], i] (tables of H2 = HD/2 columns,\n"
     "# one row per position). A position outside [0, P) is an error in the interpreter; native\n"
     "# code clamps it into [0, P) (as every computed index).\n"
     "kernel rope_cache[R, C, HD, P, H2](x: f32[R, C], pos: i64[R], cos: f32[P, H2],\n"
     "                                   sin: f32[P, H2], y: out f32[R, C])\n"
     "  require HD % 2 == 0\n"
     "  require H2 * 2 == HD\n"
     "  require C % HD == 0\n"
     "root r in R {\n"
     "  c = iota(C)\n"
     "  odd = c % 2\n"
     "  i = (c % HD) / 2\n"
     "  p = load pos[r]\n"
     "  partner = load x[r, c + 1 - 2 * odd]\n"
     "  sign = f32(2 * odd - 1)\n"
     "  # partner * (sign * sin) is sign * partner * sin bit for bit (sign is +-1), and\n"
     "  # sign * sin repeats across the heads: computed once a row, not once a packet\n"
     "  store y[r, :] = load x[r, :] * load cos[p, i] + partner * (sign * load sin[p, i])\n"
     "}\n"},
    {"softmax_mask", "y = softmax(x * scale + mask) along the row (an all -inf row gives zeros)",
     "# Masked softmax: mask is additive and may hold -inf.\n"
     "kernel softmax_mask[R, C](x: f32[R, C], mask: f32[R, C], y: out f32[R, C],\n"
     "                          scale: f32 = 1.0)\n"
     "root r in R {\n"
     "  z = load x[r, :] * scale + load mask[r, :]\n"
     "  m = reduce.max(z)\n"
     "  e = exp(z - select(m == -inf, 0.0, m))\n"
     "  s = reduce.sum(e)\n"
     "  store y[r, :] = e * select(s == 0.0, 0.0, 1.0 / s)\n"
     "}\n"},
    {"softmax_causal", "y = softmax(x * scale) along the row, column c masked when c > r",
     "# Causal softmax: column c of row r is masked when c > r.\n"
     "kernel softmax_causal[R, C](x: f32[R, C], y: out f32[R, C], scale: f32 = 1.0)\n"
     "root r in R {\n"
     "  z = select(iota(C) > r, -inf, load x[r, :] * scale)\n"
     "  m = reduce.max(z)\n"
     "  e = exp(z - select(m == -inf, 0.0, m))\n"
     "  s = reduce.sum(e)\n"
     "  store y[r, :] = e * select(s == 0.0, 0.0, 1.0 / s)\n"
     "}\n"},
    {"swiglu", "y = silu(a) * b, silu(a) = a * sigmoid(a)",
     "# SwiGLU: one root program per element.\n"
     "kernel swiglu[R, C](a: f32[R, C], b: f32[R, C], y: out f32[R, C])\n"
     "root r in R, c in C {\n"
     "  va = load a[r, c]\n"
     "  store y[r, c] = va * sigmoid(va) * load b[r, c]\n"
     "}\n"},
    {"gelu_residual", "y = gelu_tanh(x) + r",
     "# GELU (tanh approximation) plus a residual: one root program per element.\n"
     "kernel gelu_residual[R, C](x: f32[R, C], r: f32[R, C], y: out f32[R, C])\n"
     "root i in R, j in C {\n"
     "  v = load x[i, j]\n"
     "  u = 0.7978845608028654 * (v + 0.044715 * v * v * v)\n"
     "  store y[i, j] = 0.5 * v * (1.0 + tanh(u)) + load r[i, j]\n"
     "}\n"},
    {"attention", "o = softmax(q k^T * scale) v, grouped-query (HQ heads share HKV K/V heads)",
     "# Grouped-query attention. scale = 0 (the default) means 1/sqrt(D).\n"
     "kernel attention[B, HQ, HKV, Q, K, D, DV](q: f32[B, HQ, Q, D], k: f32[B, HKV, K, D],\n"
     "    v: f32[B, HKV, K, DV], o: out f32[B, HQ, Q, DV], scale: f32 = 0.0)\n"
     "  require HQ % HKV == 0\n"
     "root b in B, h in HQ, i in Q {\n"
     "  g = h / (HQ / HKV)\n"
     "  sc = select(scale > 0.0, scale, rsqrt(f32(D)))\n"
     "  s = reduce.sum(load k[b, g, :, :] * load q[b, h, i, :], D) * sc\n"
     "  m = reduce.max(s)\n"
     "  p = exp(s - select(m == -inf, 0.0, m))\n"
     "  l = reduce.sum(p)\n"
     "  acc = reduce.sum(p * load v[b, g, :, :], K)\n"
     "  store o[b, h, i, :] = select(l == 0.0, 0.0, acc / l)\n"
     "}\n"},
    {"attention_causal",
     "causal grouped-query attention: key j masked for query i when j > i + (K - Q)",
     "# Causal grouped-query attention. scale = 0 (the default) means 1/sqrt(D).\n"
     "# A query that sees no key (Q > K) gets a zero row.\n"
     "kernel attention_causal[B, HQ, HKV, Q, K, D, DV](q: f32[B, HQ, Q, D],\n"
     "    k: f32[B, HKV, K, D], v: f32[B, HKV, K, DV], o: out f32[B, HQ, Q, DV],\n"
     "    scale: f32 = 0.0)\n"
     "  require HQ % HKV == 0\n"
     "root b in B, h in HQ, i in Q {\n"
     "  g = h / (HQ / HKV)\n"
     "  sc = select(scale > 0.0, scale, rsqrt(f32(D)))\n"
     "  s0 = reduce.sum(load k[b, g, :, :] * load q[b, h, i, :], D) * sc\n"
     "  s = select(iota(K) > i + (K - Q), -inf, s0)\n"
     "  m = reduce.max(s)\n"
     "  p = exp(s - select(m == -inf, 0.0, m))\n"
     "  l = reduce.sum(p)\n"
     "  acc = reduce.sum(p * load v[b, g, :, :], K)\n"
     "  store o[b, h, i, :] = select(l == 0.0, 0.0, acc / l)\n"
     "}\n"},
};

int xir_kernel_count(void) { return (int)XIR_ARRAY_LEN(kKernels); }

const char *xir_kernel_name(int i) {
  return i >= 0 && i < xir_kernel_count() ? kKernels[i].name : NULL;
}
const char *xir_kernel_text(int i) {
  return i >= 0 && i < xir_kernel_count() ? kKernels[i].text : NULL;
}
const char *xir_kernel_summary(int i) {
  return i >= 0 && i < xir_kernel_count() ? kKernels[i].summary : NULL;
}

int xir_kernel_find(const char *name) {
  for (int i = 0; name && i < xir_kernel_count(); i++)
    if (strcmp(kKernels[i].name, name) == 0) return i;
  return -1;
}

xir_status xir_kernel_load(const char *name, xir_program **out, xir_diag *d) {
  if (!out) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_kernel_load: out is NULL");
  *out = NULL;
  int i = xir_kernel_find(name);
  if (i < 0) {
    char known[512];
    size_t o = 0;
    known[0] = 0;
    for (int k = 0; k < xir_kernel_count(); k++)
      o += (size_t)snprintf(known + o, o < sizeof known ? sizeof known - o : 0, "%s%s",
                            k ? ", " : "", kKernels[k].name);
    return xir__err(d, XIR_ERR_NOT_FOUND, "unknown kernel '%s' (built-in kernels: %s)",
                    name ? name : "", known);
  }
  char file[96];
  snprintf(file, sizeof file, "<builtin:%s>", kKernels[i].name);
  return xir_program_parse(kKernels[i].text, strlen(kKernels[i].text), file, out, d);
}

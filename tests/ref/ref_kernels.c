/* ref_kernels.c — fp64 reference kernels written straight from the math (see ref_kernels.h).
 * Deliberately naive: one obvious loop nest per definition, no shared code with src/. */
#include "ref_kernels.h"

#include <math.h>
#include <stdlib.h>

void ref_rmsnorm(size_t R, size_t C, const float *x, const float *w, double eps, double *y) {
  for (size_t r = 0; r < R; r++) {
    const float *xr = x + r * C;
    double ss = 0.0;
    for (size_t c = 0; c < C; c++) ss += (double)xr[c] * (double)xr[c];
    double inv = 1.0 / sqrt(ss / (double)C + eps);
    for (size_t c = 0; c < C; c++) y[r * C + c] = (double)xr[c] * inv * (double)w[c];
  }
}

void ref_layernorm(size_t R, size_t C, const float *x, const float *w, const float *b, double eps,
                   double *y) {
  for (size_t r = 0; r < R; r++) {
    const float *xr = x + r * C;
    double sum = 0.0;
    for (size_t c = 0; c < C; c++) sum += (double)xr[c];
    double mean = sum / (double)C;
    double sq = 0.0;
    for (size_t c = 0; c < C; c++) {
      double dv = (double)xr[c] - mean;
      sq += dv * dv;
    }
    double var = sq / (double)C;
    double inv = 1.0 / sqrt(var + eps);
    for (size_t c = 0; c < C; c++)
      y[r * C + c] = ((double)xr[c] - mean) * inv * (double)w[c] + (double)b[c];
  }
}

int ref_rope(size_t R, size_t C, size_t HD, const float *x, double theta, int64_t offset,
             double *y) {
  if (HD == 0 || HD % 2 != 0 || C % HD != 0) return -1;
  size_t H = C / HD;
  for (size_t r = 0; r < R; r++) {
    double p = (double)((int64_t)r + offset);
    for (size_t h = 0; h < H; h++) {
      for (size_t i = 0; i < HD / 2; i++) {
        double freq = pow(theta, -2.0 * (double)i / (double)HD);
        double angle = p * freq;
        double cs = cos(angle), sn = sin(angle);
        size_t c0 = r * C + h * HD + 2 * i;
        double x0 = x[c0], x1 = x[c0 + 1];
        y[c0] = x0 * cs - x1 * sn;
        y[c0 + 1] = x0 * sn + x1 * cs;
      }
    }
  }
  return 0;
}

int ref_rope_from_tables(size_t R, size_t C, size_t HD, size_t P, const float *x, const int64_t *pos,
                         const float *cos_t, const float *sin_t, double *y) {
  if (HD == 0 || HD % 2 != 0 || C % HD != 0) return -1;
  for (size_t r = 0; r < R; r++)
    if (pos[r] < 0 || (uint64_t)pos[r] >= P) return -1;
  size_t H2 = HD / 2;
  for (size_t r = 0; r < R; r++) {
    const float *cs = cos_t + (size_t)pos[r] * H2, *sn = sin_t + (size_t)pos[r] * H2;
    for (size_t h = 0; h < C / HD; h++) {
      for (size_t i = 0; i < H2; i++) {
        size_t c0 = r * C + h * HD + 2 * i;
        double x0 = x[c0], x1 = x[c0 + 1];
        y[c0] = x0 * cs[i] - x1 * sn[i];
        y[c0 + 1] = x0 * sn[i] + x1 * cs[i];
      }
    }
  }
  return 0;
}

/* Softmax of one row z[0..n-1] into y, as NumPy's exp(z - max(z)) / sum computes it: a NaN
 * anywhere makes the max NaN and so the whole row NaN; a +inf makes the max +inf, so
 * exp(inf - inf) = NaN and the whole row is NaN; -inf entries give 0. The one exception is the
 * defined fully masked case: a row whose every entry is -inf (or n == 0) gives zeros, and the
 * function returns 1 for it (0 otherwise). */
static int softmax_row(size_t n, const double *z, double *y) {
  double m = -INFINITY;
  for (size_t j = 0; j < n; j++)
    if (isnan(z[j]) || z[j] > m) m = z[j]; /* once m is NaN, z[j] > m never holds again */
  if (m == -INFINITY) {
    for (size_t j = 0; j < n; j++) y[j] = 0.0;
    return 1;
  }
  double sum = 0.0;
  for (size_t j = 0; j < n; j++) {
    y[j] = exp(z[j] - m); /* exp(-inf) = 0; NaN - m and z - NaN are NaN */
    sum += y[j];
  }
  for (size_t j = 0; j < n; j++) y[j] /= sum;
  return 0;
}

void ref_softmax_mask(size_t R, size_t C, const float *x, const float *mask, double scale,
                      double *y) {
  for (size_t r = 0; r < R; r++) {
    /* z is built in y itself, then normalized in place (softmax_row reads z[j] before writing
     * y[j] in every loop, and reads all of z for the max first). */
    double *z = y + r * C;
    for (size_t c = 0; c < C; c++) z[c] = (double)x[r * C + c] * scale + (double)mask[r * C + c];
    softmax_row(C, z, z);
  }
}

void ref_softmax_causal(size_t R, size_t C, const float *x, double scale, double *y) {
  for (size_t r = 0; r < R; r++) {
    double *z = y + r * C;
    for (size_t c = 0; c < C; c++) z[c] = c <= r ? (double)x[r * C + c] * scale : -INFINITY;
    softmax_row(C, z, z);
  }
}

void ref_swiglu(size_t R, size_t C, const float *a, const float *b, double *y) {
  for (size_t i = 0; i < R * C; i++) {
    double av = a[i];
    double sig = 1.0 / (1.0 + exp(-av));
    y[i] = av * sig * (double)b[i];
  }
}

void ref_gelu_residual(size_t R, size_t C, const float *x, const float *r, double *y) {
  const double k = sqrt(2.0 / 3.14159265358979323846);
  for (size_t i = 0; i < R * C; i++) {
    double xv = x[i];
    y[i] = 0.5 * xv * (1.0 + tanh(k * (xv + 0.044715 * xv * xv * xv))) + (double)r[i];
  }
}

int ref_attention(size_t B, size_t HQ, size_t HKV, size_t Q, size_t K, size_t D, size_t DV,
                  const float *q, const float *k, const float *v, double scale, int causal,
                  double *o) {
  if (HKV == 0 || HQ % HKV != 0) return -1;
  size_t group = HQ / HKV;
  double *s = malloc((K ? K : 1) * sizeof(double));
  if (!s) return -1;
  for (size_t b = 0; b < B; b++) {
    for (size_t hq = 0; hq < HQ; hq++) {
      size_t hkv = hq / group;
      const float *qh = q + ((b * HQ + hq) * Q) * D;
      const float *kh = k + ((b * HKV + hkv) * K) * D;
      const float *vh = v + ((b * HKV + hkv) * K) * DV;
      double *oh = o + ((b * HQ + hq) * Q) * DV;
      for (size_t i = 0; i < Q; i++) {
        for (size_t j = 0; j < K; j++) {
          if (causal && (int64_t)j > (int64_t)i + ((int64_t)K - (int64_t)Q)) {
            s[j] = -INFINITY;
            continue;
          }
          double dot = 0.0;
          for (size_t dd = 0; dd < D; dd++) dot += (double)qh[i * D + dd] * (double)kh[j * D + dd];
          s[j] = scale * dot;
        }
        /* every key masked: a zero row whatever v holds (0 * inf would be NaN) */
        int masked = softmax_row(K, s, s);
        for (size_t e = 0; e < DV; e++) {
          if (masked) {
            oh[i * DV + e] = 0.0;
            continue;
          }
          double acc = 0.0;
          for (size_t j = 0; j < K; j++) acc += s[j] * (double)vh[j * DV + e];
          oh[i * DV + e] = acc;
        }
      }
    }
  }
  free(s);
  return 0;
}

void ref_compare(const float *got, const double *want, size_t n, double *max_abs, double *rel) {
  double mx = 0.0, num = 0.0, den = 0.0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    double g = got[i], w = want[i];
    if (isnan(g) || isnan(w)) {
      if (!(isnan(g) && isnan(w))) bad = 1;
      continue;
    }
    if (isinf(g) || isinf(w)) {
      if (g != w) bad = 1;
      continue;
    }
    double e = fabs(g - w);
    if (e > mx) mx = e;
    num += e * e;
    den += w * w;
  }
  double r = den > 0.0 ? sqrt(num) / sqrt(den) : sqrt(num);
  if (bad) mx = r = INFINITY;
  if (max_abs) *max_abs = mx;
  if (rel) *rel = r;
}

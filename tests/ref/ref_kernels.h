/* ref_kernels.h — independent, hand-written fp64 references of the built-in kernel library.
 *
 * These are the tests' second opinion on xir's own interpreter and compiled code: plain C loops
 * written straight from the math in SPEC.md ("The built-in kernel library"), sharing no code with
 * src/. Inputs are fp32, row-major (C order), the normalized/softmax axis last; every output is
 * fp64, row-major, same shape as described. Nothing is allocated except small per-row scratch
 * buffers; output buffers must not alias inputs.
 *
 * Masked rows: when every score of a softmax row (or of an attention query) is -inf, the output
 * row is all zeros, never NaN (for attention, whatever v holds).
 * Special values otherwise follow NumPy's softmax, exp(z - max z) / sum: a NaN score or a +inf
 * score makes the whole row NaN (NaN max; exp(inf - inf) = NaN), a -inf score weighs 0, and
 * 0 * inf in p @ v is NaN. */
#ifndef XIR_REF_KERNELS_H
#define XIR_REF_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* y[r,c] = x[r,c] * (1 / sqrt(sum_c x[r,c]^2 / C + eps)) * w[c].  x[R,C], w[C], y[R,C]. */
void ref_rmsnorm(size_t R, size_t C, const float *x, const float *w, double eps, double *y);

/* mean = sum_c x / C; var = sum_c (x - mean)^2 / C;
 * y[r,c] = (x[r,c] - mean) / sqrt(var + eps) * w[c] + b[c].  x[R,C], w[C], b[C], y[R,C]. */
void ref_layernorm(size_t R, size_t C, const float *x, const float *w, const float *b, double eps,
                   double *y);

/* Rotary embedding. Row r has position p = r + offset. For each head h in [0, C/HD) and pair
 * i in [0, HD/2): angle = p * theta^(-2i/HD); with x0 = x[r, h*HD + 2i], x1 = x[r, h*HD + 2i + 1]:
 *   y[r, h*HD + 2i]     = x0 cos(angle) - x1 sin(angle)
 *   y[r, h*HD + 2i + 1] = x0 sin(angle) + x1 cos(angle).
 * Returns 0, or -1 (y untouched) when HD is 0, odd, or does not divide C. */
int ref_rope(size_t R, size_t C, size_t HD, const float *x, double theta, int64_t offset,
             double *y);

/* Rotary embedding from cos/sin tables (the form LLM engines use). Row r has position
 * p = pos[r], which must lie in [0, P). For each head h in [0, C/HD) and pair i in [0, HD/2), with
 * x0 = x[r, h*HD + 2i], x1 = x[r, h*HD + 2i + 1] and the table entries cs = cos_t[p, i],
 * sn = sin_t[p, i] (tables [P, HD/2], row-major):
 *   y[r, h*HD + 2i]     = x0 cs - x1 sn
 *   y[r, h*HD + 2i + 1] = x0 sn + x1 cs.
 * Returns 0, or -1 (y untouched) when HD is 0, odd, or does not divide C, or a position is
 * outside [0, P). */
int ref_rope_from_tables(size_t R, size_t C, size_t HD, size_t P, const float *x, const int64_t *pos,
                         const float *cos_t, const float *sin_t, double *y);

/* z[r,c] = x[r,c] * scale + mask[r,c] (mask may hold -inf); y = softmax(z) along each row, with
 * the row max subtracted first. A row whose every z is -inf gives zeros.  x, mask, y: [R,C]. */
void ref_softmax_mask(size_t R, size_t C, const float *x, const float *mask, double scale,
                      double *y);

/* As ref_softmax_mask with z[r,c] = x[r,c] * scale for c <= r and -inf for c > r. */
void ref_softmax_causal(size_t R, size_t C, const float *x, double scale, double *y);

/* y = a * sigmoid(a) * b, sigmoid(a) = 1 / (1 + exp(-a)).  a, b, y: [R,C]. */
void ref_swiglu(size_t R, size_t C, const float *a, const float *b, double *y);

/* y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) + r.  x, r, y: [R,C]. */
void ref_gelu_residual(size_t R, size_t C, const float *x, const float *r, double *y);

/* Grouped-query attention. q[B,HQ,Q,D], k[B,HKV,K,D], v[B,HKV,K,DV], o[B,HQ,Q,DV].
 * Query head hq reads K/V head hkv = hq / (HQ/HKV).
 * s[j] = scale * sum_d q[b,hq,i,d] * k[b,hkv,j,d]; when causal, key j is masked (-inf) for
 * query i when j > i + (K - Q) (signed); p = softmax(s) over j; o[b,hq,i,e] = sum_j p[j] v[b,hkv,j,e].
 * A query with every key masked (or K == 0) gets a zero output row.
 * Returns 0, or -1 (o untouched) when HKV is 0 or does not divide HQ, or scratch allocation fails. */
int ref_attention(size_t B, size_t HQ, size_t HKV, size_t Q, size_t K, size_t D, size_t DV,
                  const float *q, const float *k, const float *v, double scale, int causal,
                  double *o);

/* Compares a fp32 result against an fp64 reference over n elements:
 *   *max_abs = max_i |got[i] - want[i]|,
 *   *rel     = ||got - want||_2 / ||want||_2  (or ||got - want||_2 when ||want||_2 == 0).
 * A NaN in got where want is not NaN (or vice versa), or an infinity that differs, makes both
 * results +inf. Either output pointer may be NULL. */
void ref_compare(const float *got, const double *want, size_t n, double *max_abs, double *rel);

#endif

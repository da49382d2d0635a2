/* peers_stream.c — the streaming-bandwidth probe of `xir bench` (see xir_peers.h): a 2-thread
 * OpenMP read+write stream over a kernel's own buffers. Built like c_fast_omp but without
 * -ffast-math, so that the fp32 sums keep their left-to-right order and the output can be
 * checked bit for bit. */
#ifdef __FAST_MATH__
#error "peers_stream.c must be compiled without -ffast-math"
#endif
#include <stddef.h>
#include <stdint.h>
#if defined(__SSE__)
#include <immintrin.h>
#endif

#include <omp.h>

#include "xir_peers.h"

/* s[0][i] + s[1][i] + ... left to right (0 without inputs). */
static float sum_at(const float *const *s, int ns, ptrdiff_t i) {
  float v = 0.0f;
  for (int j = 0; j < ns; j++) v = j ? v + s[j][i] : s[j][i];
  return v;
}

/* y[i] = s[0][i] + s[1][i] + ... (left to right; 0 without inputs) over [lo, hi), the output
 * written with non-temporal stores of whole vectors from its first aligned element on (the
 * widest the target has: 64-byte lines with AVX-512), plain stores for the unaligned ends; the
 * inputs prefetched pf elements ahead, a line (16 elements) at a time (pf = 0: none). */
static void stream_nt(float *restrict y, const float *const *s, int ns, ptrdiff_t lo, ptrdiff_t hi,
                      ptrdiff_t pf) {
#if defined(__AVX512F__)
#define V 16
#elif defined(__AVX__)
#define V 8
#elif defined(__SSE__)
#define V 4
#else
#define V 1
#endif
  ptrdiff_t i = lo;
  for (; i < hi && ((uintptr_t)(y + i) % (V * sizeof(float))) != 0; i++) y[i] = sum_at(s, ns, i);
#if V > 1
  for (; i + V <= hi; i += V) {
    if (pf && (i & 15) < V)
      for (int j = 0; j < ns; j++) _mm_prefetch((const char *)(s[j] + i + pf), _MM_HINT_T0);
#if V == 16
    __m512 v = _mm512_setzero_ps();
    for (int j = 0; j < ns; j++) v = j ? _mm512_add_ps(v, _mm512_loadu_ps(s[j] + i)) : _mm512_loadu_ps(s[j] + i);
    _mm512_stream_ps(y + i, v);
#elif V == 8
    __m256 v = _mm256_setzero_ps();
    for (int j = 0; j < ns; j++) v = j ? _mm256_add_ps(v, _mm256_loadu_ps(s[j] + i)) : _mm256_loadu_ps(s[j] + i);
    _mm256_stream_ps(y + i, v);
#else
    __m128 v = _mm_setzero_ps();
    for (int j = 0; j < ns; j++) v = j ? _mm_add_ps(v, _mm_loadu_ps(s[j] + i)) : _mm_loadu_ps(s[j] + i);
    _mm_stream_ps(y + i, v);
#endif
  }
#endif
  for (; i < hi; i++) y[i] = sum_at(s, ns, i);
#undef V
}

int xir_peer_stream(xir_peer_stream_args *a) {
  if (!a || a->nin < 0 || a->nin > 8 || (a->n_out && !a->out)) return XIR_PEER_EINVAL;
  const float *s[8];
  const float *rest[8];
  size_t nrest[8];
  int ns = 0, nr = 0;
  for (int j = 0; j < a->nin; j++) {
    if (a->n_in[j] && !a->in[j]) return XIR_PEER_EINVAL;
    if (a->n_in[j] == a->n_out) s[ns++] = a->in[j];
    else {
      rest[nr] = a->in[j];
      nrest[nr++] = a->n_in[j];
    }
  }
  const ptrdiff_t n = (ptrdiff_t)a->n_out;
  float *restrict y = a->out;
  /* the streamed inputs: y = s0 + s1 + ... (left to right), y = 0 without any */
  if (a->nt) {
    /* blocks of 4096 elements dealt round-robin to the threads (the two streams stay close in
     * memory), each thread prefetching its inputs a line a vector, its next block ahead */
    enum { BLK = 4096 };
#pragma omp parallel num_threads(2)
    {
      ptrdiff_t nth = omp_get_num_threads(), t = omp_get_thread_num();
      for (ptrdiff_t b = t * BLK; b < n; b += nth * BLK) {
        ptrdiff_t e = b + BLK < n ? b + BLK : n;
        stream_nt(y, s, ns, b, e, nth * BLK < n - e ? nth * BLK : 0);
      }
#if defined(__SSE__)
      _mm_sfence();
#endif
    }
  } else if (ns == 0) {
#pragma omp parallel for simd schedule(static) num_threads(2)
    for (ptrdiff_t i = 0; i < n; i++) y[i] = 0.0f;
  } else if (ns == 1) {
    const float *restrict s0 = s[0];
#pragma omp parallel for simd schedule(static) num_threads(2)
    for (ptrdiff_t i = 0; i < n; i++) y[i] = s0[i];
  } else if (ns == 2) {
    const float *restrict s0 = s[0], *restrict s1 = s[1];
#pragma omp parallel for simd schedule(static) num_threads(2)
    for (ptrdiff_t i = 0; i < n; i++) y[i] = s0[i] + s1[i];
  } else {
    const float *restrict s0 = s[0], *restrict s1 = s[1], *restrict s2 = s[2];
#pragma omp parallel for simd schedule(static) num_threads(2)
    for (ptrdiff_t i = 0; i < n; i++) y[i] = s0[i] + s1[i] + s2[i];
    for (int j = 3; j < ns; j++) {
      const float *restrict sj = s[j];
#pragma omp parallel for simd schedule(static) num_threads(2)
      for (ptrdiff_t i = 0; i < n; i++) y[i] += sj[i];
    }
  }
  /* the other inputs (vectors, tables): read once, summed into the sink */
  double sink = 0;
  for (int j = 0; j < nr; j++) {
    const float *restrict r = rest[j];
    const ptrdiff_t m = (ptrdiff_t)nrest[j];
    float acc = 0.0f;
#pragma omp parallel for simd schedule(static) num_threads(2) reduction(+ : acc)
    for (ptrdiff_t i = 0; i < m; i++) acc += r[i];
    sink += acc;
  }
  a->sink = sink;
  return XIR_PEER_OK;
}

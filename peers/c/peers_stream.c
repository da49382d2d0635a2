/* peers_stream.c — the streaming-bandwidth probe of `xir bench` (see xir_peers.h): a 2-thread
 * OpenMP read+write stream over a kernel's own buffers. Built like c_fast_omp but without
 * -ffast-math, so that the fp32 sums keep their left-to-right order and the output can be
 * checked bit for bit. */
#ifdef __FAST_MATH__
#error "peers_stream.c must be compiled without -ffast-math"
#endif
#include <stddef.h>

#include "xir_peers.h"

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
  if (ns == 0) {
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

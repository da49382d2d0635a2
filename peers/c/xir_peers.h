/* xir_peers.h — hand-written C "peer" kernels: what a competent user writes instead of xir.
 *
 * `xir bench` times these side by side with xir's generated code (docs/peers.md, "In-process C
 * peers"). Each built-in kernel of SPEC.md ("The built-in kernel library"), and rope_cache, exists
 * in three variants, the same straightforward loops (peer_kernels.inc: one pass per quantity, fp32
 * accumulators, `#pragma omp simd` on the inner loops) compiled three ways:
 *
 *   c_fast_omp    the headline C peer: gcc -O3 -march=native -ffast-math -fopenmp, OpenMP
 *                 `parallel for schedule(static) num_threads(2)` over rows (attention:
 *                 `schedule(static, 1)` over (b, KV head, query block) tasks — the blocked loop of
 *                 peer_kernels.inc; swiglu, gelu_residual: over the flat elements). Under
 *                 fast-math glibc declares its vector math (libmvec), so expf, tanhf, sinf, cosf
 *                 in the inner loops become _ZGVeN16v_expf etc.
 *   c_fast_1t     the same flags and loops, one thread (no parallel region).
 *   c_strict_omp  not a headline peer: c_fast_omp's threads without -ffast-math (strict IEEE);
 *                 every expf/tanhf/sinf/cosf stays a scalar libm call per element.
 *
 * Semantics (all fp32, row-major, the normalized/softmax axis last, fp32 accumulation):
 *   rmsnorm          dims R,C;  in x[R,C], w[C];        scalar eps (1e-5)
 *   layernorm        dims R,C;  in x[R,C], w[C], b[C];  scalar eps (1e-5); var = mean((x-mean)^2)
 *   rope             dims R,C,HD (HD even, divides C); in x[R,C]; scalars theta (10000), offset (0).
 *                    p = r + offset, angle = p * theta^(-2i/HD) (an fp32 product), pairs
 *                    (x[2i], x[2i+1]) of every head of width HD rotated by angle. The per-row
 *                    cos/sin table is computed inside the call (the same work as xir's rope).
 *   rope_cache       dims R,C,HD,P,H2 (HD even, divides C, H2 = HD/2); in x[R,C], pos[R],
 *                    cos[P,H2], sin[P,H2]. Row r's pairs (x[2i], x[2i+1]) of every head rotated
 *                    by the angle whose cos/sin are cos[pos[r], i], sin[pos[r], i]; every pos[r]
 *                    must be an integer in [0, P) (else XIR_PEER_EINVAL, nothing written).
 *   softmax_mask     dims R,C;  in x[R,C], mask[R,C] (additive, may hold -inf); scalar scale (1)
 *   softmax_causal   dims R,C;  in x[R,C]; scalar scale (1); column c masked when c > r
 *   swiglu           dims R,C;  in a[R,C], b[R,C];      y = a * sigmoid(a) * b
 *   gelu_residual    dims R,C;  in x[R,C], r[R,C];      y = gelu_tanh(x) + r
 *   attention, attention_causal
 *                    dims B,HQ,HKV,Q,K,D,DV (HKV divides HQ); in q[B,HQ,Q,D], k[B,HKV,K,D],
 *                    v[B,HKV,K,DV]; out o[B,HQ,Q,DV]; scalar scale (0 = 1/sqrt(D)). Query head
 *                    hq reads K/V head hq / (HQ/HKV). Causal: key j masked for query i when
 *                    j > i + (K - Q).
 * A softmax row (or attention query) whose every column is masked gives a zero output row, never
 * NaN. Outputs must not alias inputs. The peers allocate only small scratch buffers (RoPE's
 * per-row cos/sin table, attention's per-thread blocks) and keep no state between calls; they
 * are safe to call from several threads at once. */
#ifndef XIR_PEERS_H
#define XIR_PEERS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The arguments of one peer call. */
typedef struct xir_peer_args {
  const float *in[8]; /* the kernel's input buffers, in parameter order */
  float *out;         /* the kernel's (single) output buffer */
  int64_t dims[8];    /* the kernel's dims, in the order of xir_peer_dims(kernel) */
  double scalar[4];   /* the kernel's scalar parameters, in order, defaults resolved (they are
                         converted to fp32 like the kernel's f32 scalars; rope's offset is
                         rounded to an integer) */
} xir_peer_args;

/* Return codes of a peer call. */
enum {
  XIR_PEER_OK = 0,
  XIR_PEER_EINVAL = -1, /* a negative dim, a NULL buffer, HD odd or not dividing C, HKV 0 or
                           not dividing HQ; nothing written */
  XIR_PEER_ENOMEM = -2  /* scratch allocation failed; nothing written */
};

/* Runs one kernel on a->in into a->out. Returns XIR_PEER_OK (0) or a negative XIR_PEER_E*. A
 * kernel with an empty output (a zero dim) returns 0 without touching any buffer. */
typedef int (*xir_peer_fn)(const xir_peer_args *a);

/* The implementation of `kernel` (a name of xir_peer_kernels(), e.g. "rmsnorm") in `variant`
 * (a name of xir_peer_variants()); NULL when either name is unknown or NULL. */
xir_peer_fn xir_peer_find(const char *kernel, const char *variant);

/* The variant names, a static NULL-terminated list: {"c_fast_omp", "c_fast_1t", "c_strict_omp",
 * NULL}. */
const char *const *xir_peer_variants(void);

/* The variants of the headline table (the honest C peers): {"c_fast_omp", "c_fast_1t", NULL}. */
const char *const *xir_peer_headline_variants(void);

/* The kernel names every variant implements, a static NULL-terminated list: the order of
 * `xir kernels`, with rope_cache after rope. */
const char *const *xir_peer_kernels(void);

/* The names of the dims a kernel's peer reads, in the order of xir_peer_args.dims (a static
 * NULL-terminated list, e.g. {"R", "C", NULL}); NULL for an unknown kernel. A caller fills dims
 * by name, so the peer does not depend on the order in which a kernel declares its dims. */
const char *const *xir_peer_dims(const char *kernel);

/* The number of threads a variant uses (2 for c_fast_omp and c_strict_omp, 1 for c_fast_1t);
 * 0 when unknown. */
int xir_peer_threads(const char *variant);

/* The streaming-bandwidth probe of `xir bench`: the compulsory traffic of a kernel (read every
 * input once, write the output once) as a 2-thread OpenMP stream (`parallel for simd
 * schedule(static) num_threads(2)`, -O3 -march=native, no fast-math). The inputs with exactly
 * n_out elements are streamed: out[i] = in_a[i] + in_b[i] + ... in input order (fp32, left to
 * right; out = 0 when there is none, a copy when there is one); every other input is read once
 * and summed into `sink` (so that the reads are not optimized away). */
typedef struct xir_peer_stream_args {
  const float *in[8];
  size_t n_in[8];
  int nin;
  float *out;
  size_t n_out;
  int nt;      /* 1: the output is written with non-temporal (streaming) stores, where the
                * target has them: no read for ownership of its lines, which a large output
                * would pay; the same bits either way */
  double sink; /* written by the call */
} xir_peer_stream_args;

/* Returns XIR_PEER_OK, or XIR_PEER_EINVAL (nin outside [0, 8], a NULL buffer with elements). */
int xir_peer_stream(xir_peer_stream_args *a);

#ifdef __cplusplus
}
#endif

#endif

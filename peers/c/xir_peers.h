/* xir_peers.h — hand-written C "peer" kernels: what a competent user writes instead of xir.
 *
 * `xir bench` times these side by side with xir's generated code (docs/peers.md, "In-process C
 * peers"). Each of the nine built-in kernels of SPEC.md ("The built-in kernel library") exists in
 * two variants, the same loops compiled twice with `gcc -O3 -march=native`:
 *
 *   c_omp       OpenMP, `#pragma omp parallel for schedule(static) num_threads(2)` over rows
 *               (attention: over the B*HQ*Q query rows), strict IEEE fp32 (no fast-math);
 *               reductions carry `#pragma omp simd reduction(...)` so that they vectorize.
 *   c_fastmath  single thread, built with -ffast-math (libm calls become libmvec vector calls).
 *
 * Semantics (all fp32, row-major, the normalized/softmax axis last, fp32 accumulation):
 *   rmsnorm          dims R,C;  in x[R,C], w[C];        scalar eps (1e-5)
 *   layernorm        dims R,C;  in x[R,C], w[C], b[C];  scalar eps (1e-5); var = mean((x-mean)^2)
 *   rope             dims R,C,HD (HD even, divides C); in x[R,C]; scalars theta (10000), offset (0).
 *                    p = r + offset, angle = p * theta^(-2i/HD) (an fp32 product), pairs
 *                    (x[2i], x[2i+1]) of every head of width HD rotated by angle.
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
 * per-row cos/sin table, attention's per-query scores) and keep no state between calls; they
 * are safe to call from several threads at once. */
#ifndef XIR_PEERS_H
#define XIR_PEERS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The arguments of one peer call. */
typedef struct xir_peer_args {
  const float *in[8]; /* the kernel's input buffers, in parameter order */
  float *out;         /* the kernel's (single) output buffer */
  int64_t dims[8];    /* the kernel's dims, in the order of `xir kernels` */
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

/* The implementation of `kernel` (a name of `xir kernels`, e.g. "rmsnorm") in `variant`
 * ("c_omp" or "c_fastmath"); NULL when either name is unknown or NULL. */
xir_peer_fn xir_peer_find(const char *kernel, const char *variant);

/* The variant names, a static NULL-terminated list: {"c_omp", "c_fastmath", NULL}. */
const char *const *xir_peer_variants(void);

/* The kernel names every variant implements, a static NULL-terminated list in the order of
 * `xir kernels`. */
const char *const *xir_peer_kernels(void);

/* The number of threads a variant uses (2 for c_omp, 1 for c_fastmath); 0 when unknown. */
int xir_peer_threads(const char *variant);

#ifdef __cplusplus
}
#endif

#endif

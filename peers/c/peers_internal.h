/* peers_internal.h — private to peers/c: the per-variant kernel tables (see xir_peers.h). */
#ifndef XIR_PEERS_INTERNAL_H
#define XIR_PEERS_INTERNAL_H

#include "xir_peers.h"

#define XIR__PEER_NKERNELS 10

typedef struct xir__peer_entry {
  const char *kernel;
  xir_peer_fn fn;
} xir__peer_entry;

/* Defined by peers_fast_omp.c, peers_fast_1t.c and peers_strict_omp.c (all from
 * peer_kernels.inc), in the order of xir_peer_kernels(). */
extern const xir__peer_entry xir__peers_c_fast_omp[XIR__PEER_NKERNELS];
extern const xir__peer_entry xir__peers_c_fast_1t[XIR__PEER_NKERNELS];
extern const xir__peer_entry xir__peers_c_strict_omp[XIR__PEER_NKERNELS];

/* 1 when every pos[0..R-1] is an integer in [0, P) (NaN and infinities are not); peers.c, built
 * without fast-math. */
int xir__peer_positions_ok(const float *pos, int64_t R, int64_t P);

#endif

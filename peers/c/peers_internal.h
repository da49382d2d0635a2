/* peers_internal.h — private to peers/c: the per-variant kernel tables (see xir_peers.h). */
#ifndef XIR_PEERS_INTERNAL_H
#define XIR_PEERS_INTERNAL_H

#include "xir_peers.h"

#define XIR__PEER_NKERNELS 9

typedef struct xir__peer_entry {
  const char *kernel;
  xir_peer_fn fn;
} xir__peer_entry;

/* Defined by peers_omp.c and peers_fastmath.c (both from peer_kernels.inc), in the order of
 * `xir kernels`. */
extern const xir__peer_entry xir__peers_c_omp[XIR__PEER_NKERNELS];
extern const xir__peer_entry xir__peers_c_fastmath[XIR__PEER_NKERNELS];

#endif

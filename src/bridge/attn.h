/* attn.h — the attention mapping's candidates (internal to the bridge; see attn.c). */
#ifndef XIR_BRIDGE_ATTN_H
#define XIR_BRIDGE_ATTN_H

#include "xir_bridge.h"

/* Appends every legal attention-mapping candidate for W to *list (n entries, capacity *cap;
 * grown with xir__grow). Nothing is appended when p is not the attention chain. */
xir_status xir__attn_candidates(const xir_program *p, const xir_shape *shape, uint32_t W,
                                xir_candidate **list, size_t *n, size_t *cap, xir_diag *d);

#endif

/* dims.h — the compile-time dims of a candidate (internal; see dims.c). */
#ifndef XIR_BRIDGE_DIMS_H
#define XIR_BRIDGE_DIMS_H

#include "xir_bridge.h"

/* *out = the bit mask of the dims that are compile-time constants for a candidate with local
 * width `local` sharing inner axis `inner_axis` (-1: none) under `shape` (the rules are in
 * dims.c). XIR_ERR_NOMEM when out of memory. */
xir_status xir__fixed_dims(const xir_program *p, const xir_shape *shape, uint32_t local,
                           uint32_t W, int inner_axis, uint32_t *out, xir_diag *d);


#endif

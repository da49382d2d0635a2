/* work_attn.h — the execution work of the attention mapping (internal; see work_attn.c). */
#ifndef XIR_COST_WORK_ATTN_H
#define XIR_COST_WORK_ATTN_H

#include "ir/program.h"
#include "xir_bridge.h"

/* Per tile (one block = one packet of the attention mapping) of candidate c (attn_vec set): the
 * weighted arithmetic prior, its math part and the bytes from beyond L1, counted the way
 * lower_attn.c emits them. 1 when c is an attention-mapping candidate of p, else 0. */
int xir__attn_work(const xir_program *p, const xir_shape *s, const xir_candidate *c,
                   double *arith, double *math, double *bytes);

#endif

/* work_attn.h — the execution work of the attention mapping (internal; see work_attn.c). */
#ifndef XIR_COST_WORK_ATTN_H
#define XIR_COST_WORK_ATTN_H

#include "ir/program.h"
#include "xir_bridge.h"
#include "xir_plan.h"

/* Per tile (one block = one packet of the attention mapping) of candidate c (attn_vec set): fills
 * w's arith_per_packet, math_per_packet and memory_per_packet (bytes from beyond L1; averages
 * over the tiles), counted the way lower_attn.c emits them, and critical_arith_packets /
 * critical_memory_packets (the longest home assignment for grain G′ = grain and h = active
 * workers, in average packets). w's counts (critical_packets) must be set. 1 when c is an
 * attention-mapping candidate of p, else 0. */
int xir__attn_work(const xir_program *p, const xir_shape *s, const xir_candidate *c,
                   uint64_t grain, uint32_t active, xir_execution_work *w);

#endif

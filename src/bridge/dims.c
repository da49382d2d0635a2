/* dims.c — which dims of a candidate are compile-time constants (xir_candidate.fixed_dims).
 *
 * Every other dim is a launch argument: one compiled kernel serves every value of it. A dim is
 * compile-time when the code needs its value, or when specializing on it pays:
 *   1. the inner axis X that the ℓ > 1 lanes share (chunking, the masked tail chunk);
 *   2. the innermost dim of every buffer of rank ≥ 2 or read as a tile: the row length, the
 *      unit-stride axis of vector loads;
 *   3. every dim read by an index computation (an index operand of a load or store: GQA's
 *      `h / (HQ / HKV)`, RoPE's `(c % HD) / 2`) and every dim a hoisted tile is built from — the
 *      address analyses evaluate them;
 *   4. the axis of a hoisted tile, and the axes of tiles the lowering keeps in stack buffers (the
 *      tile results of reductions, expensive tiles used twice) when the shape's value exceeds
 *      XIR_RUNTIME_TILE_MAX or a tile result would exceed its scratch with the free axes at that
 *      bound.
 *   5. for a masked kernel (xir__mask_skips finds a prefix mask the lowering bounds loops by), the
 *      mask's axis and every dim its end reads (the ranged loops and the unit's end are built
 *      from their values);
 *   6. every dim an integer division or remainder divides by: x86 has no vector integer
 *      division, so a launch-time divisor costs one scalar idiv per lane (RoPE's `c % HD` at
 *      C > XIR_HOIST_MAX, where no hoisted tile fixes HD: 4.5 ns an element), a constant one is a
 *      multiply and shifts; and the period analyses (xir__inner_period, the period buffers) take
 *      the divisor's value from the shape, so a launch-time divisor would let a kernel built for
 *      one value run at another with the first one's periods. Every divisor under a division
 *      counts, even one that varies per lane (no built-in kernel has one: it only costs reuse);
 *   7. for an attention-mapping candidate (attn_vec set; src/bridge/attn.c): HQ and HKV (the tile
 *      decomposition and the group E = HQ/HKV, with every dim E reads), D and DV (the register
 *      blocking of q·kᵀ and p·v, the vector tails). Rules 1–6 do not apply: its B, Q and K —
 *      and with them the causal end i + (K − Q) + 1 — are launch-time, and it has no K-sized
 *      stack buffer (one block of XIR_ATTN_KEY_BLOCK scores), so K has no launch bound.
 * The rest — the root extents (R of the row kernels; B and Q of attention), attention's key
 * length K (a loop and reduction bound), rope_cache's table length P — are read from the
 * argument block at run time. */
#include <string.h>

#include "ir/program.h"
#include "xir_bridge.h"

enum { SCRATCH_MAX_VECTORS = 65536 }; /* the lowering's scratch cap for a reduction's tile result */

static int is_reduce(int op) {
  return op == XIR_OP_REDUCE_SUM || op == XIR_OP_REDUCE_MAX || op == XIR_OP_REDUCE_MIN;
}

/* Marks (in *mask) every dim that node `root` reads, through its operands. */
static void dims_under(const xir_program *p, int root, uint8_t *seen, int *stack,
                       uint32_t *mask) {
  int sp = 0;
  stack[sp++] = root;
  while (sp) {
    int id = stack[--sp];
    if (id < 0 || seen[id]) continue;
    seen[id] = 1;
    const xir_node *n = &p->nodes[id];
    if (n->op == XIR_OP_DIM) *mask |= 1u << n->ref;
    if (n->op == XIR_OP_LOAD || n->op == XIR_OP_STORE || is_reduce(n->op) ||
        n->op == XIR_OP_IOTA)
      continue; /* a load's own indices are handled by the caller; reductions/iota read no dim
                   value (their extents are loop bounds) */
    for (int a = 0; a < n->nargs; a++)
      if (n->args[a] >= 0) stack[sp++] = n->args[a];
  }
}

xir_status xir__fixed_dims(const xir_program *p, const xir_shape *shape, uint32_t local,
                           uint32_t W, int inner_axis, uint32_t *out, xir_diag *d) {
  uint32_t fixed = 0;
  *out = 0;
  (void)W;
  if (local > 1 && inner_axis >= 0) fixed |= 1u << inner_axis;
  /* the row length: the innermost dim of a buffer of rank ≥ 2, or of a rank-1 buffer read as a
   * tile (w[:]); a rank-1 buffer indexed per root program (pos[r]) has no row */
  for (int i = 0; i < p->nparams; i++) {
    const xir_param *q = &p->params[i];
    if (q->kind != XIR_PARAM_BUFFER || q->rank == 0) continue;
    int inner = q->dims[q->rank - 1], row = q->rank >= 2;
    for (int j = p->body_begin; j < p->nnodes && !row; j++) {
      const xir_node *n = &p->nodes[j];
      if ((n->op == XIR_OP_LOAD || n->op == XIR_OP_STORE) && n->ref == i && n->args[0] < 0) row = 1;
    }
    if (row) fixed |= 1u << inner;
  }
  size_t nn = (size_t)p->nnodes + 1;
  uint8_t *seen = xir__calloc(nn, 1), *hoist = xir__calloc(nn, 1);
  int *stack = xir__malloc(sizeof(int) * (nn * (XIR_MAX_RANK + 2) + 1));
  if (!seen || !hoist || !stack) {
    xir__free(seen);
    xir__free(hoist);
    xir__free(stack);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory finding the compile-time dims");
  }
  xir__prefix_mask m;
  int mask = xir__mask_skips(p, hoist, &m); /* hoist[] as its scratch: recomputed below */
  if (mask < -1) {
    xir__free(seen);
    xir__free(hoist);
    xir__free(stack);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory finding the compile-time dims");
  }
  if (mask >= 0 && !(local > 1 && m.axis_dim != inner_axis)) { /* the lowering's condition */
    fixed |= 1u << m.axis_dim;
    for (int k = 0; k < p->ndims; k++)
      if (m.dim_coef[k]) fixed |= 1u << k;
  }
  xir__hoisted_tiles(p, shape, hoist);
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    if (n->op == XIR_OP_LOAD || n->op == XIR_OP_STORE) {
      int nidx = n->op == XIR_OP_STORE ? n->nargs - 1 : n->nargs;
      for (int k = 0; k < nidx; k++)
        if (n->args[k] >= 0) {
          memset(seen, 0, nn);
          dims_under(p, n->args[k], seen, stack, &fixed);
        }
    }
    if ((n->op == XIR_OP_DIV || n->op == XIR_OP_REM) && n->args[1] >= 0 &&
        n->type.elem == XIR_I64) {
      memset(seen, 0, nn);
      dims_under(p, n->args[1], seen, stack, &fixed);
    }
    if (hoist[i]) {
      fixed |= 1u << n->type.axes[0];
      memset(seen, 0, nn);
      dims_under(p, i, seen, stack, &fixed);
    }
  }
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    if (n->type.rank == 0 || n->op == XIR_OP_STORE) continue;
    uint64_t vectors = 1;
    int free_axes = 0;
    for (int a = 0; a < n->type.rank; a++) {
      int dim = n->type.axes[a];
      if (fixed >> dim & 1) {
        vectors *= (uint64_t)shape->dims[dim];
      } else if (shape->dims[dim] > XIR_RUNTIME_TILE_MAX) {
        fixed |= 1u << dim;
        vectors *= (uint64_t)shape->dims[dim];
      } else {
        vectors *= XIR_RUNTIME_TILE_MAX;
        free_axes++;
      }
    }
    if (free_axes && is_reduce(n->op) && vectors > SCRATCH_MAX_VECTORS)
      for (int a = 0; a < n->type.rank; a++) fixed |= 1u << n->type.axes[a];
  }
  xir__free(seen);
  xir__free(hoist);
  xir__free(stack);
  *out = fixed;
  return XIR_OK;
}

int64_t xir_candidate_dim_max(const xir_program *p, const xir_candidate *c, int dim) {
  if (!p || !c || dim < 0 || dim >= p->ndims) return 0;
  if (c->attn_vec) return INT32_MAX; /* no stack buffer grows with a launch-time dim (rule 7) */
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    for (int a = 0; a < n->type.rank; a++)
      if (n->type.axes[a] == dim && !(c->fixed_dims >> dim & 1)) return XIR_RUNTIME_TILE_MAX;
  }
  return INT32_MAX;
}

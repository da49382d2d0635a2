/* prefetch.c — which rows the next unit streams in (docs/lowering.md, "Next-row prefetch").
 *
 * A row kernel with several consumer loops over its inner axis X (layernorm: the mean, the
 * correction and variance — one loop, docs/lowering.md "sibling reductions" — and the store;
 * softmax: the max, the sum and the store) reads a row from memory in its
 * first loop and from the L1 cache in the others. While the later loops run, nothing asks memory
 * for the next row: its first loop then waits for it. The lowering prefetches, inside the last of
 * those loops, the rows of the next root program — the loads found here. */
#include <string.h>

#include "ir/program.h"

/* 1 when node id is a consumer (reduction to a scalar, or store) whose loop nest is 1-D over X. */
static int consumer_over(const xir_program *p, int id, int X) {
  const xir_node *n = &p->nodes[id];
  if (n->op == XIR_OP_REDUCE_SUM || n->op == XIR_OP_REDUCE_MAX || n->op == XIR_OP_REDUCE_MIN) {
    const xir_type *in = &p->nodes[n->args[0]].type;
    return n->type.rank == 0 && in->rank == 1 && in->axes[0] == X;
  }
  if (n->op != XIR_OP_STORE) return 0;
  const xir_param *q = &p->params[n->ref];
  int slices = 0, over_x = 0;
  for (int kd = 0; kd < n->nargs - 1; kd++)
    if (n->args[kd] < 0) {
      slices++;
      over_x += q->dims[kd] == X;
    }
  return slices == 1 && over_x == 1;
}

/* 1 when load id reads one contiguous row along X whose place depends on root axis `fast`:
 * the last index is the slice over X, one index is root(fast), every other one is another root
 * index or the same in every root program. */
static int streamed_row(const xir_program *p, const uint8_t *inv, int id, int X, int fast) {
  const xir_node *n = &p->nodes[id];
  if (n->op != XIR_OP_LOAD || n->nargs < 2) return 0;
  const xir_param *q = &p->params[n->ref];
  if (q->elem == XIR_I64) return 0;
  if (n->args[n->nargs - 1] >= 0 || q->dims[n->nargs - 1] != X) return 0;
  int by_fast = 0;
  for (int kd = 0; kd < n->nargs - 1; kd++) {
    int a = n->args[kd];
    if (a < 0) return 0; /* a second slice: not one row */
    const xir_node *ix = &p->nodes[a];
    if (ix->op == XIR_OP_ROOT) by_fast |= ix->ref == fast;
    else if (!inv[a]) return 0;
  }
  return by_fast;
}

/* 1 when loads i and j read the same buffer at the same indices (the same nodes, or the same
 * root index through two nodes). */
static int same_access(const xir_program *p, int i, int j) {
  const xir_node *a = &p->nodes[i], *b = &p->nodes[j];
  if (a->ref != b->ref || a->nargs != b->nargs) return 0;
  for (int k = 0; k < a->nargs; k++) {
    int x = a->args[k], y = b->args[k];
    if (x == y) continue;
    if (x < 0 || y < 0) return 0;
    const xir_node *nx = &p->nodes[x], *ny = &p->nodes[y];
    if (nx->op != XIR_OP_ROOT || ny->op != XIR_OP_ROOT || nx->ref != ny->ref) return 0;
  }
  return 1;
}

/* The number of vector-math nodes in consumer c's pointwise expression (not through other
 * reductions or rank-0 values). stack, seen: scratch of the caller's sizes (seen is cleared). */
static int math_in(const xir_program *p, int c, int *stack, uint8_t *seen) {
  const xir_node *n = &p->nodes[c];
  int sp = 0, count = 0;
  memset(seen, 0, (size_t)p->nnodes);
  stack[sp++] = n->op == XIR_OP_STORE ? n->args[n->nargs - 1] : n->args[0];
  while (sp) {
    int id = stack[--sp];
    if (id < 0 || seen[id]) continue;
    seen[id] = 1;
    const xir_node *m = &p->nodes[id];
    if (m->type.rank == 0 || m->op == XIR_OP_REDUCE_SUM || m->op == XIR_OP_REDUCE_MAX ||
        m->op == XIR_OP_REDUCE_MIN)
      continue;
    count += xir__is_vector_math(m->op);
    for (int a = 0; a < m->nargs; a++)
      if (m->args[a] >= 0) stack[sp++] = m->args[a];
  }
  return count;
}

int xir__next_row_loads(const xir_program *p, int X, int fast, int math_only, uint8_t *pf) {
  size_t nn = (size_t)p->nnodes;
  memset(pf, 0, nn);
  if (X < 0 || fast < 0 || fast >= p->nroot) return -1;
  int loops = 0, last = -1;
  for (int i = p->body_begin; i < p->nnodes; i++)
    if (consumer_over(p, i, X)) {
      loops++;
      last = i;
    }
  if (loops < 2) return -1;
  /* The loop that prefetches: the first later loop that evaluates the most vector math
   * (softmax: the sum of exp, which computes and keeps e; the store only rescales it), else the
   * last. Its prefetches are spread over its long chunks, about two lines per exp packet — the
   * pace one core streams at — where the short store loop issued the next row's lines in one
   * burst that the fill buffers serialize. */
  int *stack = xir__malloc(sizeof(int) * (nn * (XIR_MAX_RANK + 2) + 1));
  uint8_t *seen = xir__malloc(nn + 1);
  if (!stack || !seen) {
    xir__free(stack);
    xir__free(seen);
    return -2;
  }
  int at = last, best = 0, first = 1;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    if (!consumer_over(p, i, X)) continue;
    if (first) { /* the loop that streams the row itself */
      first = 0;
      continue;
    }
    int m = math_in(p, i, stack, seen);
    if (m > best) best = m, at = i;
  }
  xir__free(stack);
  xir__free(seen);
  if (math_only && best == 0) return -1; /* a norm's store loop on AMD Zen: lowering.md */
  last = at;
  uint8_t *inv = xir__calloc(nn + 1, 1);
  if (!inv) return -2;
  xir__root_invariant(p, inv);
  int any = 0;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    if (!streamed_row(p, inv, i, X, fast)) continue;
    int dup = 0; /* the same buffer at the same indices: one prefetch */
    for (int j = p->body_begin; j < i && !dup; j++) dup = pf[j] && same_access(p, i, j);
    if (!dup) pf[i] = 1, any = 1;
  }
  xir__free(inv);
  return any ? last : -1;
}

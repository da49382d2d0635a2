/* analysis.c — facts about a verified program that the lowering and the execution work must
 * agree on (so that the cost model counts what the native code does): which values are the same
 * for every root program, and which tiles are therefore computed once per call. */
#include "ir/program.h"

int xir__op_is_transcendental(int op) {
  return op == XIR_OP_EXP || op == XIR_OP_LOG || op == XIR_OP_TANH || op == XIR_OP_ERF ||
         op == XIR_OP_SIGMOID || op == XIR_OP_SIN || op == XIR_OP_COS || op == XIR_OP_POW;
}

void xir__root_invariant(const xir_program *p, uint8_t *inv) {
  for (int i = 0; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    int ok;
    switch (n->op) {
      case XIR_OP_CONST: case XIR_OP_DIM: case XIR_OP_PARAM: case XIR_OP_IOTA: ok = 1; break;
      case XIR_OP_ROOT: case XIR_OP_LOAD: case XIR_OP_STORE: case XIR_OP_REDUCE_SUM:
      case XIR_OP_REDUCE_MAX: case XIR_OP_REDUCE_MIN: ok = 0; break;
      default:
        ok = 1;
        for (int a = 0; a < n->nargs && ok; a++) ok = n->args[a] >= 0 && inv[n->args[a]];
    }
    inv[i] = (uint8_t)ok;
  }
}

void xir__hoisted_tiles(const xir_program *p, const xir_shape *s, uint8_t *hoist) {
  xir__root_invariant(p, hoist);
  for (int i = 0; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    hoist[i] = hoist[i] && i >= p->body_begin && n->type.rank == 1 && n->type.elem == XIR_F32 &&
               xir__op_is_transcendental(n->op) && s->dims[n->type.axes[0]] <= XIR_HOIST_MAX;
  }
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

void xir__inner_period(const xir_program *p, const xir_shape *s, int X, int64_t *period) {
  int64_t N = s->dims[X];
  /* poly: an integer polynomial in iota(X) and per-root values (so that x ≡ x' (mod M) when the
   * iota values are ≡ (mod M)) */
  for (int i = 0; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    int64_t per = 1;
    switch (n->op) {
      case XIR_OP_CONST: case XIR_OP_DIM: case XIR_OP_PARAM: case XIR_OP_ROOT: per = 1; break;
      case XIR_OP_IOTA: per = n->ref == X ? 0 : 1; break;
      case XIR_OP_REDUCE_SUM: case XIR_OP_REDUCE_MAX: case XIR_OP_REDUCE_MIN:
        per = n->type.rank == 0 ? 1 : 0;
        break;
      case XIR_OP_STORE: per = 0; break;
      case XIR_OP_LOAD: {
        const xir_param *q = &p->params[n->ref];
        for (int k = 0; k < n->nargs && per; k++) {
          if (n->args[k] < 0) {
            if (q->dims[k] == X) per = 0;
            continue;
          }
          int64_t a = period[n->args[k]];
          per = a == 0 ? 0 : per / gcd64(per, a) * a;
        }
        break;
      }
      default:
        for (int a = 0; a < n->nargs && per; a++) {
          int64_t pa = period[n->args[a]];
          per = pa == 0 ? 0 : per / gcd64(per, pa) * pa;
        }
        if (n->op == XIR_OP_REM && n->type.elem == XIR_I64) {
          /* x % M for a constant M > 0 and x a polynomial in iota: period M */
          const xir_node *m = &p->nodes[n->args[1]];
          int64_t M = m->op == XIR_OP_CONST ? m->imm.i : m->op == XIR_OP_DIM ? s->dims[m->ref] : 0;
          int poly = 1;
          /* check that args[0] is a polynomial: walk its (small) expression iteratively */
          int stack[64], sp = 0;
          stack[sp++] = n->args[0];
          while (sp && poly) {
            const xir_node *e = &p->nodes[stack[--sp]];
            if (e->op == XIR_OP_ADD || e->op == XIR_OP_SUB || e->op == XIR_OP_MUL || e->op == XIR_OP_NEG) {
              for (int a = 0; a < e->nargs && poly; a++) {
                if (sp >= 64) poly = 0;
                else stack[sp++] = e->args[a];
              }
            } else if (!(e->op == XIR_OP_CONST || e->op == XIR_OP_DIM || e->op == XIR_OP_PARAM ||
                         e->op == XIR_OP_ROOT || e->op == XIR_OP_IOTA)) {
              poly = 0;
            }
          }
          if (M > 0 && poly) per = M;
        }
    }
    if (per > N) per = 0;
    period[i] = per;
  }
}

/* alias.c — which outputs may alias which inputs (y = x, in place): docs/xir.md, "Aliasing".
 *
 * Root programs run in any order and in parallel, and a root program evaluates its body in SSA
 * order: rank-0 values at their position, tile values pointwise inside each consumer (a
 * reduction or a store). Output y may share its memory with input x when
 *   1. they have the same rank (and, checked at launch, the same extents and strides);
 *   2. every load of x and every store to y index the buffer the same way, by root indices and
 *      whole axes (`:`) only, with every root axis used once: each root program reads exactly
 *      the elements it writes, and no other root program touches them;
 *   3. no element of x is read after the first store to y wrote it: every load of x is evaluated
 *      before that store, or inside it at the very point being stored (the load precedes the
 *      store of that element in the code, and the lowering keeps that order).
 * RoPE's partner load x[r, c + 1 - 2·(c % 2)] breaks rule 2: element c is read by the store of
 * c − 1 or c + 1 too, so y = x is refused. */
#include <string.h>

#include "ir/program.h"

static int is_reduce(int op) {
  return op == XIR_OP_REDUCE_SUM || op == XIR_OP_REDUCE_MAX || op == XIR_OP_REDUCE_MIN;
}

/* The index signature of a load/store: per position -1 for `:`, the root axis for a root index.
 * Returns -1, or the node of the first index that is anything else. */
static int signature(const xir_program *p, const xir_node *n, int *sig) {
  int nidx = n->op == XIR_OP_STORE ? n->nargs - 1 : n->nargs;
  for (int k = 0; k < nidx; k++) {
    if (n->args[k] < 0) {
      sig[k] = -1;
      continue;
    }
    const xir_node *a = &p->nodes[n->args[k]];
    if (a->op != XIR_OP_ROOT) return n->args[k];
    sig[k] = a->ref;
  }
  return -1;
}

/* 1 when node `id`'s pointwise expression (not through reductions or rank-0 values) contains
 * node `target`. */
static int contains(const xir_program *p, int id, int target, int *stack, uint8_t *seen) {
  memset(seen, 0, (size_t)p->nnodes);
  int sp = 0;
  stack[sp++] = id;
  while (sp) {
    int i = stack[--sp];
    if (i < 0 || seen[i]) continue;
    seen[i] = 1;
    if (i == target) return 1;
    const xir_node *n = &p->nodes[i];
    if (i != id && (n->type.rank == 0 || is_reduce(n->op))) continue;
    for (int a = 0; a < n->nargs; a++)
      if (n->args[a] >= 0) stack[sp++] = n->args[a];
  }
  return 0;
}

static int alias_check(const xir_program *p, int out, int in, char *why, size_t cap) {
  why[0] = 0;
  if (out < 0 || out >= p->nparams || in < 0 || in >= p->nparams) {
    snprintf(why, cap, "no such parameter");
    return 0;
  }
  const xir_param *y = &p->params[out], *x = &p->params[in];
  if (y->kind != XIR_PARAM_BUFFER || !y->is_output || x->kind != XIR_PARAM_BUFFER ||
      x->is_output) {
    snprintf(why, cap, "'%s' is not an output buffer or '%s' not an input buffer", y->name,
             x->name);
    return 0;
  }
  if (x->rank != y->rank || x->elem != XIR_F32) {
    snprintf(why, cap, "'%s' and '%s' differ in rank or element type", y->name, x->name);
    return 0;
  }
  int ref[XIR_MAX_RANK], sig[XIR_MAX_RANK], have = 0, first_store = -1;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    int mine = (n->op == XIR_OP_STORE && n->ref == out) || (n->op == XIR_OP_LOAD && n->ref == in);
    if (!mine) continue;
    if (n->op == XIR_OP_STORE && first_store < 0) first_store = i;
    char e[160];
    int bad = signature(p, n, sig);
    if (bad >= 0) {
      snprintf(why, cap, "%s of '%s' at line %d indexes it by a computed value (%s)",
               n->op == XIR_OP_STORE ? "a store" : "a load", p->params[n->ref].name, n->line,
               xir__print_expr(p, bad, e, sizeof e));
      return 0;
    }
    if (!have) {
      memcpy(ref, sig, sizeof sig);
      have = 1;
      int used[XIR_MAX_ROOT] = {0};
      for (int k = 0; k < y->rank; k++)
        if (sig[k] >= 0) used[sig[k]]++;
      for (int a = 0; a < p->nroot; a++)
        if (used[a] != 1) {
          snprintf(why, cap, "root programs share elements of '%s' (root axis %s is not one "
                   "index)", p->params[n->ref].name, p->root[a].var);
          return 0;
        }
    } else if (memcmp(ref, sig, sizeof(int) * (size_t)y->rank) != 0) {
      snprintf(why, cap, "the loads of '%s' and the stores of '%s' do not index the same "
               "elements (line %d)", x->name, y->name, n->line);
      return 0;
    }
  }
  if (first_store < 0) return 1;
  int *stack = xir__malloc(sizeof(int) * ((size_t)p->nnodes * (XIR_MAX_RANK + 2) + 1));
  uint8_t *seen = xir__malloc((size_t)p->nnodes + 1);
  int ok = stack && seen;
  if (!ok) snprintf(why, cap, "out of memory");
  for (int l = p->body_begin; l < p->nnodes && ok; l++) {
    const xir_node *n = &p->nodes[l];
    if (n->op != XIR_OP_LOAD || n->ref != in) continue;
    if (n->type.rank == 0) {
      if (l > first_store) ok = 0;
    } else {
      for (int c = first_store + 1; c < p->nnodes && ok; c++) {
        const xir_node *m = &p->nodes[c];
        if (m->op != XIR_OP_STORE && !is_reduce(m->op)) continue;
        int arg = m->op == XIR_OP_STORE ? m->args[m->nargs - 1] : m->args[0];
        if (contains(p, arg, l, stack, seen)) ok = 0;
      }
    }
    if (!ok) snprintf(why, cap, "'%s' is read (line %d) after the store to '%s' (line %d)",
                      x->name, n->line, y->name, p->nodes[first_store].line);
  }
  xir__free(stack);
  xir__free(seen);
  return ok;
}

void xir__alias_table(const xir_program *p, uint8_t ok[XIR_MAX_PARAMS][XIR_MAX_PARAMS]) {
  char why[256];
  memset(ok, 0, sizeof(uint8_t) * XIR_MAX_PARAMS * XIR_MAX_PARAMS);
  for (int o = 0; o < p->nparams; o++)
    for (int i = 0; i < p->nparams; i++)
      if (p->params[o].is_output && p->params[o].kind == XIR_PARAM_BUFFER &&
          p->params[i].kind == XIR_PARAM_BUFFER && !p->params[i].is_output)
        ok[o][i] = (uint8_t)alias_check(p, o, i, why, sizeof why);
}

xir_status xir_program_alias_ok(const xir_program *p, int out, int in, xir_diag *d) {
  if (!p) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_program_alias_ok: the program is NULL");
  char why[512];
  if (alias_check(p, out, in, why, sizeof why)) return XIR_OK;
  if (out >= 0 && out < p->nparams && in >= 0 && in < p->nparams &&
      p->params[out].kind == XIR_PARAM_BUFFER && p->params[out].is_output &&
      p->params[in].kind == XIR_PARAM_BUFFER && !p->params[in].is_output)
    return xir__err(d, XIR_ERR_UNSUPPORTED, "'%s': output '%s' may not alias input '%s': %s",
                    p->name, p->params[out].name, p->params[in].name, why);
  return xir__err(d, XIR_ERR_INVALID_ARG, "xir_program_alias_ok: %s", why);
}

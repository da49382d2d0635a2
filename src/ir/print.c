/* print.c — the canonical text of a program.
 *
 * One statement per computed value, in SSA order; every op printed in call form (`mul(a, b)`),
 * leaves (literals, dims, scalar params, root variables) printed inline, unnamed values given
 * fresh names `_N` that collide with nothing. Floats print in the shortest form that reads back to
 * the same f32. Printing is deterministic, and parse(print(p)) prints identically. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/program.h"
#include "util/strmap.h"

typedef xir__sbuf sbuf;
#define put xir__sbuf_put

/* Shortest decimal that reads back as the same float; always looks like a float literal. */
static void put_f32(sbuf *b, double v) {
  float f = (float)v;
  if (isnan(f)) {
    put(b, "nan");
    return;
  }
  if (isinf(f)) {
    put(b, f < 0 ? "-inf" : "inf");
    return;
  }
  char tmp[64];
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
    if (strtof(tmp, NULL) == f && (f != 0 || signbit(strtof(tmp, NULL)) == signbit(f))) break;
  }
  if (!strpbrk(tmp, ".e")) strcat(tmp, ".0");
  put(b, "%s", tmp);
}

typedef struct pctx {
  const xir_program *p;
  const char **names; /* per node: the printed name of a computed value */
  sbuf out;
} pctx;

static void operand(pctx *c, int32_t id) {
  const xir_node *n = &c->p->nodes[id];
  switch (n->op) {
    case XIR_OP_CONST:
      if (n->type.elem == XIR_I64) put(&c->out, "%" PRId64, n->imm.i);
      else put_f32(&c->out, n->imm.f);
      return;
    case XIR_OP_DIM: put(&c->out, "%s", c->p->dims[n->ref]); return;
    case XIR_OP_PARAM: put(&c->out, "%s", c->p->params[n->ref].name); return;
    case XIR_OP_ROOT: put(&c->out, "%s", c->p->root[n->ref].var); return;
    default: break;
  }
  if (c->names[id]) {
    put(&c->out, "%s", c->names[id]);
    return;
  }
  /* Only `require` expressions reach here: print them nested. */
  put(&c->out, "%s(", xir__op_info[n->op].name);
  for (int i = 0; i < n->nargs; i++) {
    if (i) put(&c->out, ", ");
    operand(c, n->args[i]);
  }
  put(&c->out, ")");
}

static void indices(pctx *c, const xir_node *n, int nidx) {
  put(&c->out, "%s[", c->p->params[n->ref].name);
  for (int i = 0; i < nidx; i++) {
    if (i) put(&c->out, ", ");
    if (n->args[i] < 0) put(&c->out, ":");
    else operand(c, n->args[i]);
  }
  put(&c->out, "]");
}

static void rhs(pctx *c, const xir_node *n) {
  const xir_program *p = c->p;
  switch (n->op) {
    case XIR_OP_LOAD:
      put(&c->out, "load ");
      indices(c, n, n->nargs);
      return;
    case XIR_OP_IOTA: put(&c->out, "iota(%s)", p->dims[n->ref]); return;
    case XIR_OP_REDUCE_SUM:
    case XIR_OP_REDUCE_MAX:
    case XIR_OP_REDUCE_MIN:
      put(&c->out, "%s(", xir__op_info[n->op].name);
      operand(c, n->args[0]);
      put(&c->out, ", %s)", p->dims[n->ref]);
      return;
    default:
      put(&c->out, "%s(", xir__op_info[n->op].name);
      for (int i = 0; i < n->nargs; i++) {
        if (i) put(&c->out, ", ");
        operand(c, n->args[i]);
      }
      put(&c->out, ")");
  }
}

/* Every name the program declares (dims, params, root variables, named values): the fresh
 * names `_N` must avoid them. 0, or -1 when out of memory. */
static int collect_names(const xir_program *p, xir_strmap *taken) {
  if (xir__strmap_reserve(taken, (size_t)p->ndims + (size_t)p->nparams + (size_t)p->nroot + 16))
    return -1;
  for (int i = 0; i < p->ndims; i++)
    if (xir__strmap_put(taken, p->dims[i], 1)) return -1;
  for (int i = 0; i < p->nparams; i++)
    if (xir__strmap_put(taken, p->params[i].name, 1)) return -1;
  for (int k = 0; k < p->nroot; k++)
    if (xir__strmap_put(taken, p->root[k].var, 1)) return -1;
  for (int i = 0; i < p->nnodes; i++)
    if (p->nodes[i].name && xir__strmap_put(taken, p->nodes[i].name, 1)) return -1;
  return 0;
}

xir_status xir_program_print(const xir_program *p, char **out, xir_diag *d) {
  if (out) *out = NULL;
  if (!p || !out) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_program_print: %s is NULL",
                                  !p ? "the program" : "out");
  pctx c = {.p = p};
  xir_arena tmp = {0};
  xir_strmap taken = {0};
  c.names = xir__calloc((size_t)p->nnodes + 1, sizeof(char *));
  if (!c.names) return xir__err(d, XIR_ERR_NOMEM, "out of memory printing '%s'", p->name);
  int next_tmp = 1, oom = collect_names(p, &taken) != 0;
  for (int i = p->body_begin; i < p->nnodes && !oom; i++) {
    const xir_node *n = &p->nodes[i];
    if (xir__is_inline_leaf(n->op) || n->op == XIR_OP_STORE) continue;
    if (n->name) {
      c.names[i] = n->name;
      continue;
    }
    char buf[32];
    do snprintf(buf, sizeof buf, "_%d", next_tmp++);
    while (xir__strmap_get(&taken, buf, strlen(buf), NULL));
    if (!(c.names[i] = xir__arena_strdup(&tmp, buf)) || xir__strmap_put(&taken, c.names[i], 1))
      oom = 1;
  }
  xir__strmap_free(&taken);
  if (oom) {
    /* Never print with a partial name table: an unnamed value would be printed nested, and a
     * load's slice index (-1) read as a node. */
    xir__free(c.names);
    xir__arena_free(&tmp);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory printing '%s'", p->name);
  }

  put(&c.out, "kernel %s[", p->name);
  for (int i = 0; i < p->ndims; i++) put(&c.out, "%s%s", i ? ", " : "", p->dims[i]);
  put(&c.out, "](");
  for (int i = 0; i < p->nparams; i++) {
    const xir_param *q = &p->params[i];
    put(&c.out, "%s%s: ", i ? ", " : "", q->name);
    if (q->kind == XIR_PARAM_BUFFER) {
      put(&c.out, "%s%s[", q->is_output ? "out " : "", xir_elem_name((xir_elem)q->elem));
      for (int k = 0; k < q->rank; k++) put(&c.out, "%s%s", k ? ", " : "", p->dims[q->dims[k]]);
      put(&c.out, "]");
    } else {
      put(&c.out, "%s", q->elem == XIR_I64 ? "i64" : "f32");
      if (q->has_default) {
        put(&c.out, " = ");
        if (q->elem == XIR_I64) put(&c.out, "%" PRId64, (int64_t)q->default_value);
        else put_f32(&c.out, q->default_value);
      }
    }
  }
  put(&c.out, ")\n");
  for (int i = 0; i < p->nreq; i++) {
    put(&c.out, "  require ");
    operand(&c, p->reqs[i]);
    put(&c.out, "\n");
  }
  put(&c.out, "root ");
  for (int k = 0; k < p->nroot; k++)
    put(&c.out, "%s%s in %s", k ? ", " : "", p->root[k].var, p->dims[p->root[k].dim]);
  put(&c.out, " {\n");
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    if (xir__is_inline_leaf(n->op)) continue;
    if (n->op == XIR_OP_STORE) {
      put(&c.out, "  store ");
      indices(&c, n, n->nargs - 1);
      put(&c.out, " = ");
      operand(&c, n->args[n->nargs - 1]);
      put(&c.out, "\n");
      continue;
    }
    put(&c.out, "  %s = ", c.names[i]);
    rhs(&c, n);
    put(&c.out, "\n");
  }
  put(&c.out, "}\n");
  xir__free(c.names);
  xir__arena_free(&tmp);
  if (oom || c.out.oom) {
    xir__free(c.out.s);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory printing '%s'", p->name);
  }
  *out = c.out.s;
  return XIR_OK;
}

char *xir__print_expr(const xir_program *p, int32_t node, char *buf, size_t cap) {
  pctx c = {.p = p};
  c.names = xir__calloc((size_t)p->nnodes + 1, sizeof(char *));
  if (cap) buf[0] = 0;
  if (!c.names) return buf;
  operand(&c, node);
  if (!c.out.oom && c.out.s) snprintf(buf, cap, "%s", c.out.s);
  xir__free(c.out.s);
  xir__free(c.names);
  return buf;
}

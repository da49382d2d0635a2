/* verify.c — the XIR verifier: infers every node's type and rejects ill-typed or out-of-domain
 * programs with the node's file:line:col and the rule that was broken.
 *
 * Rules (docs/xir.md states them for users):
 *  - types are f32, i64 and bool tiles; a tile's axes are named by dims; elementwise operands
 *    broadcast by axis name; there are no implicit conversions (use f32(...));
 *  - buffers hold f32, bf16 or f16 (a load gives f32 values, a store takes f32 values); input
 *    buffers may hold i64 (a load of one gives i64 values, which can index other buffers);
 *    outputs are f32, bf16 or f16;
 *  - a load/store has one index per buffer dim: `:` (the whole axis) or an i64 value; a root
 *    variable or an iota used directly as an index must range over that buffer dim;
 *  - every output buffer is stored exactly once, indexed only by `:` and root variables, each
 *    root variable exactly once, so every output element is written by exactly one root program;
 *    outputs are never loaded and inputs never stored;
 *  - `require` clauses are i64/bool scalars over dims and literals. */
#include <string.h>

#include "ir/program.h"

typedef struct vctx {
  xir_program *p;
  xir_diag *d;
  char buf[256];
} vctx;

static xir_status verr(vctx *v, const xir_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static xir_status verr(vctx *v, const xir_node *n, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return xir__err_at(v->d, XIR_ERR_VERIFY, v->p->file, n ? n->line : 0, n ? n->col : 0, "%s",
                     msg);
}

static const char *elem_name(int e) {
  switch (e) {
    case XIR_F32: return "f32";
    case XIR_I64: return "i64";
    case XIR_BOOL: return "bool";
    case XIR_BF16: return "bf16";
    case XIR_F16: return "f16";
    default: return "none";
  }
}

/* "f32[C]" / "i64" into v->buf-like storage. */
static const char *type_str(const xir_program *p, const xir_type *t, char *buf, size_t cap) {
  size_t o = (size_t)snprintf(buf, cap, "%s", elem_name(t->elem));
  if (t->rank) {
    o += (size_t)snprintf(buf + o, cap > o ? cap - o : 0, "[");
    for (int i = 0; i < t->rank; i++)
      o += (size_t)snprintf(buf + o, cap > o ? cap - o : 0, "%s%s", i ? ", " : "",
                            p->dims[t->axes[i]]);
    snprintf(buf + o, cap > o ? cap - o : 0, "]");
  }
  return buf;
}

static int has_axis(const xir_type *t, int dim) {
  for (int i = 0; i < t->rank; i++)
    if (t->axes[i] == dim) return 1;
  return 0;
}

/* Adds the axes of `t` to `out` (union, order of first appearance). -1 when the rank overflows. */
static int union_axes(xir_type *out, const xir_type *t) {
  for (int i = 0; i < t->rank; i++) {
    if (has_axis(out, t->axes[i])) continue;
    if (out->rank >= XIR_MAX_TILE_RANK) return -1;
    out->axes[out->rank++] = t->axes[i];
  }
  return 0;
}

static xir_status broadcast(vctx *v, const xir_node *n, int first, int count, xir_type *out) {
  /* Start from the highest-rank operand so that its axis order wins. */
  int best = first;
  for (int i = first; i < first + count; i++)
    if (v->p->nodes[n->args[i]].type.rank > v->p->nodes[n->args[best]].type.rank) best = i;
  out->rank = 0;
  if (union_axes(out, &v->p->nodes[n->args[best]].type) < 0) goto too_big;
  for (int i = first; i < first + count; i++)
    if (union_axes(out, &v->p->nodes[n->args[i]].type) < 0) goto too_big;
  return XIR_OK;
too_big:
  return verr(v, n, "'%s': broadcasting gives a tile of rank above %d",
              xir__op_info[n->op].name, XIR_MAX_TILE_RANK);
}

static xir_status want_elem(vctx *v, const xir_node *n, int argi, int elem) {
  const xir_node *a = &v->p->nodes[n->args[argi]];
  if (a->type.elem == elem) return XIR_OK;
  char t[128];
  return verr(v, n, "operand %d of '%s' must be %s, but it is %s%s", argi + 1,
              xir__op_info[n->op].name, elem_name(elem),
              type_str(v->p, &a->type, t, sizeof t),
              (elem == XIR_F32 && a->type.elem == XIR_I64) ? " (convert with f32(...))" : "");
}

static xir_status same_elem(vctx *v, const xir_node *n, int i, int j) {
  const xir_node *a = &v->p->nodes[n->args[i]], *b = &v->p->nodes[n->args[j]];
  if (a->type.elem == b->type.elem) return XIR_OK;
  char ta[128], tb[128];
  return verr(v, n, "operands of '%s' have different types %s and %s%s",
              xir__op_info[n->op].name, type_str(v->p, &a->type, ta, sizeof ta),
              type_str(v->p, &b->type, tb, sizeof tb),
              (a->type.elem == XIR_I64 || b->type.elem == XIR_I64)
                  ? " (no implicit conversion: use f32(...))"
                  : "");
}

static xir_status check_access(vctx *v, xir_node *n, int nidx, xir_type *tile) {
  const xir_program *p = v->p;
  const xir_param *buf = &p->params[n->ref];
  const char *what = n->op == XIR_OP_LOAD ? "load" : "store";
  if (nidx != buf->rank)
    return verr(v, n, "%s of '%s' has %d ind%s, but '%s' has rank %d", what, buf->name, nidx,
                nidx == 1 ? "ex" : "ices", buf->name, buf->rank);
  tile->rank = 0;
  for (int k = 0; k < nidx; k++) {
    int32_t a = n->args[k];
    int bd = buf->dims[k];
    if (a < 0) {
      if (has_axis(tile, bd))
        return verr(v, n, "%s of '%s': two ':' indices range over dim '%s' (tile axes must be "
                    "distinct dims)", what, buf->name, p->dims[bd]);
      if (tile->rank >= XIR_MAX_TILE_RANK)
        return verr(v, n, "%s of '%s' gives a tile of rank above %d", what, buf->name,
                    XIR_MAX_TILE_RANK);
      tile->axes[tile->rank++] = (int8_t)bd;
      continue;
    }
    const xir_node *ix = &p->nodes[a];
    if (ix->type.elem != XIR_I64) {
      char t[128];
      return verr(v, n, "index %d of '%s' must be i64, but it is %s", k + 1, buf->name,
                  type_str(p, &ix->type, t, sizeof t));
    }
    if (ix->op == XIR_OP_ROOT && p->root[ix->ref].dim != bd)
      return verr(v, n, "index %d of '%s': root variable '%s' ranges over '%s', but that "
                  "dimension of '%s' is '%s'", k + 1, buf->name, p->root[ix->ref].var,
                  p->dims[p->root[ix->ref].dim], buf->name, p->dims[bd]);
    if (ix->op == XIR_OP_IOTA && ix->ref != bd)
      return verr(v, n, "index %d of '%s': iota(%s) ranges over '%s', but that dimension of "
                  "'%s' is '%s'", k + 1, buf->name, p->dims[ix->ref], p->dims[ix->ref],
                  buf->name, p->dims[bd]);
  }
  for (int k = 0; k < nidx; k++)
    if (n->args[k] >= 0 && union_axes(tile, &p->nodes[n->args[k]].type) < 0)
      return verr(v, n, "%s of '%s' gives a tile of rank above %d", what, buf->name,
                  XIR_MAX_TILE_RANK);
  return XIR_OK;
}

static xir_status check_output_store(vctx *v, xir_node *n) {
  const xir_program *p = v->p;
  const xir_param *buf = &p->params[n->ref];
  int seen[XIR_MAX_ROOT] = {0};
  for (int k = 0; k < buf->rank; k++) {
    int32_t a = n->args[k];
    if (a < 0) continue;
    if (p->nodes[a].op != XIR_OP_ROOT)
      return verr(v, n, "store to '%s': index %d must be ':' or a root variable, so that every "
                  "element of the output is written exactly once", buf->name, k + 1);
    seen[p->nodes[a].ref]++;
  }
  for (int r = 0; r < p->nroot; r++)
    if (seen[r] != 1)
      return verr(v, n, "store to '%s' must use root variable '%s' exactly once as an index "
                  "(it is used %d times), so that root programs write disjoint parts",
                  buf->name, p->root[r].var, seen[r]);
  return XIR_OK;
}

static xir_status type_node(vctx *v, xir_node *n) {
  xir_program *p = v->p;
  const xir_op_info *oi = &xir__op_info[n->op];
  xir_type *t = &n->type;
  xir_status s;
  char ta[128];
  switch (oi->typing) {
    case XIR_TY_LEAF:
      t->rank = 0;
      if (n->op == XIR_OP_DIM || n->op == XIR_OP_ROOT) t->elem = XIR_I64;
      if (n->op == XIR_OP_PARAM) {
        const xir_param *prm = &p->params[n->ref];
        if (prm->kind != XIR_PARAM_SCALAR)
          return verr(v, n, "buffer '%s' used as a value (read it with load %s[...])",
                      prm->name, prm->name);
        t->elem = prm->elem;
      }
      return XIR_OK;
    case XIR_TY_IOTA:
      t->elem = XIR_I64;
      t->rank = 1;
      t->axes[0] = (int8_t)n->ref;
      return XIR_OK;
    case XIR_TY_LOAD: {
      if (p->params[n->ref].is_output)
        return verr(v, n, "'%s' is an output: it cannot be loaded", p->params[n->ref].name);
      if ((s = check_access(v, n, n->nargs, t))) return s;
      /* f32 (a bf16/f16 buffer's elements are converted exactly), or i64 for an i64 input */
      t->elem = p->params[n->ref].elem == XIR_I64 ? XIR_I64 : XIR_F32;
      return XIR_OK;
    }
    case XIR_TY_STORE: {
      const xir_param *buf = &p->params[n->ref];
      if (!buf->is_output)
        return verr(v, n, "'%s' is an input: only `out` buffers can be stored to", buf->name);
      xir_type tile = {0};
      if ((s = check_access(v, n, n->nargs - 1, &tile))) return s;
      tile.elem = XIR_F32;
      if ((s = check_output_store(v, n))) return s;
      const xir_node *val = &p->nodes[n->args[n->nargs - 1]];
      if (val->type.elem != XIR_F32)
        return verr(v, n, "store to '%s' needs an f32 value, but it is %s", buf->name,
                    type_str(p, &val->type, ta, sizeof ta));
      for (int i = 0; i < val->type.rank; i++)
        if (!has_axis(&tile, val->type.axes[i])) {
          char tb[128];
          return verr(v, n, "store to '%s': the value %s has axis '%s', which the store's "
                      "tile %s does not cover", buf->name,
                      type_str(p, &val->type, ta, sizeof ta), p->dims[val->type.axes[i]],
                      type_str(p, &tile, tb, sizeof tb));
        }
      t->elem = XIR_ELEM_NONE;
      t->rank = 0;
      return XIR_OK;
    }
    case XIR_TY_REDUCE: {
      const xir_node *a = &p->nodes[n->args[0]];
      if ((s = want_elem(v, n, 0, XIR_F32))) return s;
      if (a->type.rank == 0)
        return verr(v, n, "'%s' needs a tile, but its operand is a scalar", oi->name);
      int dim = n->ref;
      if (dim < 0) {
        if (a->type.rank != 1)
          return verr(v, n, "'%s' of %s must name the axis to reduce (e.g. %s(x, %s))", oi->name,
                      type_str(p, &a->type, ta, sizeof ta), oi->name, p->dims[a->type.axes[0]]);
        dim = a->type.axes[0];
        n->ref = dim;
      }
      if (!has_axis(&a->type, dim))
        return verr(v, n, "'%s' along '%s', but the operand %s has no such axis", oi->name,
                    p->dims[dim], type_str(p, &a->type, ta, sizeof ta));
      t->elem = XIR_F32;
      t->rank = 0;
      for (int i = 0; i < a->type.rank; i++)
        if (a->type.axes[i] != dim) t->axes[t->rank++] = a->type.axes[i];
      return XIR_OK;
    }
    case XIR_TY_TOF32: {
      const xir_node *a = &p->nodes[n->args[0]];
      if (a->type.elem != XIR_I64 && a->type.elem != XIR_BOOL)
        return verr(v, n, "f32(...) converts i64 or bool values, but its operand is %s",
                    type_str(p, &a->type, ta, sizeof ta));
      *t = a->type;
      t->elem = XIR_F32;
      return XIR_OK;
    }
    default: break;
  }
  /* Elementwise. */
  switch (oi->typing) {
    case XIR_TY_NUM1: {
      int e = p->nodes[n->args[0]].type.elem;
      if (e != XIR_F32 && e != XIR_I64)
        return verr(v, n, "'%s' needs an f32 or i64 operand, not %s", oi->name, elem_name(e));
      t->elem = (uint8_t)e;
      break;
    }
    case XIR_TY_F1:
      if ((s = want_elem(v, n, 0, XIR_F32))) return s;
      t->elem = XIR_F32;
      break;
    case XIR_TY_NUM2:
    case XIR_TY_CMP: {
      int e = p->nodes[n->args[0]].type.elem;
      if (e != XIR_F32 && e != XIR_I64)
        return verr(v, n, "'%s' needs f32 or i64 operands, not %s", oi->name, elem_name(e));
      if ((s = same_elem(v, n, 0, 1))) return s;
      t->elem = oi->typing == XIR_TY_CMP ? XIR_BOOL : (uint8_t)e;
      break;
    }
    case XIR_TY_I2:
      if ((s = want_elem(v, n, 0, XIR_I64)) || (s = want_elem(v, n, 1, XIR_I64))) return s;
      t->elem = XIR_I64;
      break;
    case XIR_TY_F2:
      if ((s = want_elem(v, n, 0, XIR_F32)) || (s = want_elem(v, n, 1, XIR_F32))) return s;
      t->elem = XIR_F32;
      break;
    case XIR_TY_BOOL2:
      if ((s = want_elem(v, n, 0, XIR_BOOL)) || (s = want_elem(v, n, 1, XIR_BOOL))) return s;
      t->elem = XIR_BOOL;
      break;
    case XIR_TY_BOOL1:
      if ((s = want_elem(v, n, 0, XIR_BOOL))) return s;
      t->elem = XIR_BOOL;
      break;
    case XIR_TY_F3:
      for (int i = 0; i < 3; i++)
        if ((s = want_elem(v, n, i, XIR_F32))) return s;
      t->elem = XIR_F32;
      break;
    case XIR_TY_SELECT:
      if ((s = want_elem(v, n, 0, XIR_BOOL))) return s;
      if ((s = same_elem(v, n, 1, 2))) return s;
      t->elem = p->nodes[n->args[1]].type.elem;
      break;
    default:
      return verr(v, n, "internal: op '%s' has no typing rule", oi->name);
  }
  return broadcast(v, n, 0, n->nargs, t);
}

/* For every node before the root domain: 1 when it is an i64/bool expression over dims and
 * integer literals only, and its nesting depth. One forward pass (operands precede their users),
 * so no recursion on the program's depth. */
static int require_facts(const xir_program *p, uint8_t *ok, int *depth) {
  for (int i = 0; i < p->body_begin; i++) {
    const xir_node *n = &p->nodes[i];
    depth[i] = 1;
    if (n->op == XIR_OP_CONST) ok[i] = n->type.elem == XIR_I64;
    else if (n->op == XIR_OP_DIM) ok[i] = 1;
    else if (xir__op_info[n->op].typing <= XIR_TY_TOF32) ok[i] = 0;
    else {
      ok[i] = n->type.elem != XIR_F32;
      for (int a = 0; a < n->nargs; a++) {
        ok[i] &= ok[n->args[a]];
        if (depth[n->args[a]] + 1 > depth[i]) depth[i] = depth[n->args[a]] + 1;
      }
    }
  }
  return 0;
}

xir_status xir__verify(xir_program *p, xir_diag *d) {
  vctx v = {.p = p, .d = d};
  xir_status s;
  if (p->nroot == 0) return verr(&v, NULL, "kernel '%s' has no root domain", p->name);
  int outputs = 0;
  for (int b = 0; b < p->nparams; b++) {
    const xir_param *q = &p->params[b];
    if (q->kind == XIR_PARAM_BUFFER && q->is_output && q->elem == XIR_I64) {
      xir_node at = {.line = q->line, .col = q->col};
      return verr(&v, &at, "output buffer '%s' must be f32, bf16 or f16: i64 buffers can only be "
                  "inputs", q->name);
    }
    if (q->kind == XIR_PARAM_SCALAR ? q->elem != XIR_F32 && q->elem != XIR_I64
                                    : !xir_elem_size((xir_elem)q->elem)) {
      xir_node at = {.line = q->line, .col = q->col};
      return verr(&v, &at, "parameter '%s' has element type %s, which a %s cannot have", q->name,
                  elem_name(q->elem), q->kind == XIR_PARAM_SCALAR ? "scalar" : "buffer");
    }
    outputs += q->kind == XIR_PARAM_BUFFER && q->is_output;
  }
  if (!outputs) {
    xir_node at = {.line = p->nparams ? p->params[0].line : 1, .col = p->nparams ? p->params[0].col : 1};
    return verr(&v, &at, "kernel '%s' has no output buffer (declare one with `out`)", p->name);
  }
  for (int i = 0; i < p->nnodes; i++)
    if ((s = type_node(&v, &p->nodes[i]))) return s;
  /* Nodes before the root domain belong to `require` clauses; the body may share only leaves. */
  for (int i = 0; i < p->body_begin; i++)
    if (p->nodes[i].op == XIR_OP_STORE || p->nodes[i].op == XIR_OP_LOAD ||
        p->nodes[i].op == XIR_OP_IOTA || p->nodes[i].op == XIR_OP_REDUCE_SUM ||
        p->nodes[i].op == XIR_OP_REDUCE_MAX || p->nodes[i].op == XIR_OP_REDUCE_MIN)
      return verr(&v, &p->nodes[i], "'%s' before the root domain", xir__op_info[p->nodes[i].op].name);
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    for (int a = 0; a < n->nargs; a++)
      if (n->args[a] >= 0 && n->args[a] < p->body_begin && !xir__is_inline_leaf(p->nodes[n->args[a]].op))
        return verr(&v, n, "the body uses a value computed before the root domain");
  }
  /* Every output stored exactly once. */
  for (int b = 0; b < p->nparams; b++) {
    if (p->params[b].kind != XIR_PARAM_BUFFER || !p->params[b].is_output) continue;
    int count = 0;
    const xir_node *second = NULL;
    for (int i = 0; i < p->nnodes; i++)
      if (p->nodes[i].op == XIR_OP_STORE && p->nodes[i].ref == b && ++count == 2)
        second = &p->nodes[i];
    if (count == 0) {
      xir_node at = {.line = p->params[b].line, .col = p->params[b].col};
      return verr(&v, &at, "output '%s' is never stored", p->params[b].name);
    }
    if (count > 1)
      return verr(&v, second, "output '%s' is stored more than once", p->params[b].name);
  }
  if (p->nreq) {
    uint8_t *ok = xir__calloc((size_t)p->body_begin + 1, 1);
    int *depth = xir__calloc((size_t)p->body_begin + 1, sizeof(int));
    if (!ok || !depth) {
      xir__free(ok);
      xir__free(depth);
      return xir__err(d, XIR_ERR_NOMEM, "out of memory verifying '%s'", p->name);
    }
    require_facts(p, ok, depth);
    xir_status rs = XIR_OK;
    for (int i = 0; i < p->nreq && !rs; i++) {
      const xir_node *n = &p->nodes[p->reqs[i]];
      if (n->type.rank != 0 || !ok[p->reqs[i]])
        rs = verr(&v, n, "a `require` clause must be an i64/bool expression over dims and "
                  "integer literals");
      else if (depth[p->reqs[i]] > 200)
        rs = verr(&v, n, "a `require` clause nested too deeply (at most 200 levels)");
    }
    xir__free(ok);
    xir__free(depth);
    if (rs) return rs;
  }
  return XIR_OK;
}

int xir__eval_dims_expr(const xir_program *p, const int64_t *dims, int32_t id, int64_t *out) {
  if (id < 0 || id >= p->body_begin) return -1;
  int64_t *val = xir__malloc(sizeof(int64_t) * ((size_t)id + 1));
  if (!val) return -3;
  int rc = 0;
  /* forward over the require nodes up to id: operands are always evaluated first */
  for (int k = 0; k <= id && !rc; k++) {
    const xir_node *n = &p->nodes[k];
    int64_t ia = n->nargs > 0 ? val[n->args[0]] : 0, ib = n->nargs > 1 ? val[n->args[1]] : 0;
    int64_t ic = n->nargs > 2 ? val[n->args[2]] : 0;
    switch (n->op) {
      case XIR_OP_CONST: val[k] = n->imm.i; continue;
      case XIR_OP_DIM: val[k] = dims[n->ref]; continue;
      case XIR_OP_AND: val[k] = ia && ib; continue;
      case XIR_OP_OR: val[k] = ia || ib; continue;
      case XIR_OP_NOT: val[k] = !ia; continue;
      case XIR_OP_SELECT: val[k] = ia ? ib : ic; continue;
      case XIR_OP_DIV:
      case XIR_OP_REM:
        if (ib == 0) rc = -2; /* division by zero: the clause does not hold */
        break;
      default: break;
    }
    if (rc) break;
    if (xir__op_info[n->op].typing <= XIR_TY_TOF32) {
      val[k] = 0; /* not a require node: never an operand of one */
      continue;
    }
    switch (n->op) {
#define XIR_OP_IEVAL_(oid, text, nn, ty, f, i) \
  case XIR_OP_##oid:                           \
    val[k] = (i);                              \
    break;
      XIR_OPS_ELEM(XIR_OP_IEVAL_)
#undef XIR_OP_IEVAL_
      default: val[k] = 0;
    }
  }
  if (!rc) *out = val[id];
  xir__free(val);
  return rc;
}

/* attn_form.c — recognises the attention chain (attn_form.h) node by node.
 *
 * The match is structural and complete: every non-leaf node of the body must play one of the
 * roles (or be part of the rank-0 root-invariant expressions sc and E), so a program that does
 * anything more than attention keeps the general lowering. */
#include <math.h>
#include <string.h>

#include "ir/attn_form.h"

static const xir_node *node(const xir_program *p, int id) {
  return id >= 0 && id < p->nnodes ? &p->nodes[id] : NULL;
}

static int is_const_f(const xir_program *p, int id, double v) {
  const xir_node *n = node(p, id);
  return n && n->op == XIR_OP_CONST && n->type.elem == XIR_F32 && n->imm.f == v;
}

static int root_axis(const xir_program *p, int id) {
  const xir_node *n = node(p, id);
  return n && n->op == XIR_OP_ROOT ? n->ref : -1;
}

int xir__attn_scalar_ok(const xir_program *p, int id) {
  const xir_node *n = node(p, id);
  if (!n || n->type.rank != 0) return 0;
  switch (n->op) {
    case XIR_OP_CONST: case XIR_OP_DIM: return 1;
    case XIR_OP_PARAM: return p->params[n->ref].kind == XIR_PARAM_SCALAR;
    case XIR_OP_TOF32: case XIR_OP_NEG: case XIR_OP_ABS: case XIR_OP_SQRT: case XIR_OP_RSQRT:
    case XIR_OP_NOT: case XIR_OP_ADD: case XIR_OP_SUB: case XIR_OP_MUL: case XIR_OP_DIV:
    case XIR_OP_MIN: case XIR_OP_MAX: case XIR_OP_LT: case XIR_OP_LE: case XIR_OP_GT:
    case XIR_OP_GE: case XIR_OP_EQ: case XIR_OP_NE: case XIR_OP_AND: case XIR_OP_OR:
    case XIR_OP_SELECT:
      for (int a = 0; a < n->nargs; a++)
        if (!xir__attn_scalar_ok(p, n->args[a])) return 0;
      return 1;
    default: return 0;
  }
}

/* Marks the nodes of a scalar expression as used. */
static void mark_expr(const xir_program *p, int id, uint8_t *used) {
  const xir_node *n = node(p, id);
  if (!n || used[id]) return;
  used[id] = 1;
  for (int a = 0; a < n->nargs; a++) mark_expr(p, n->args[a], used);
}

static uint32_t dims_read(const xir_program *p, int id, int depth) {
  const xir_node *n = node(p, id);
  if (!n || depth > 64) return 0;
  uint32_t m = n->op == XIR_OP_DIM ? 1u << n->ref : 0;
  for (int a = 0; a < n->nargs; a++) m |= dims_read(p, n->args[a], depth + 1);
  return m;
}

uint32_t xir__attn_dims_read(const xir_program *p, int id) { return dims_read(p, id, 0); }

/* load X[rb, g, :, :] of a rank-4 input buffer: its parameter, and the node of g. */
static int kv_load(const xir_program *p, int id, int ax_b, int *param, int *g) {
  const xir_node *n = node(p, id);
  if (!n || n->op != XIR_OP_LOAD || n->nargs != 4) return 0;
  const xir_param *q = &p->params[n->ref];
  if (q->is_output || q->elem != XIR_F32 || q->rank != 4) return 0;
  if (root_axis(p, n->args[0]) != ax_b || n->args[1] < 0 || n->args[2] >= 0 || n->args[3] >= 0)
    return 0;
  *param = n->ref;
  *g = n->args[1];
  return 1;
}

/* An i64 expression over dims and constants (+ − × ÷ % min max): 1 and *out, else 0. */
static int dims_value(const xir_program *p, const xir_shape *s, int id, int depth, int64_t *out) {
  const xir_node *n = node(p, id);
  if (!n || n->type.elem != XIR_I64 || n->type.rank != 0 || depth > 64) return 0;
  if (n->op == XIR_OP_CONST) { *out = n->imm.i; return 1; }
  if (n->op == XIR_OP_DIM) { *out = s->dims[n->ref]; return 1; }
  int64_t a, b;
  if (n->nargs != 2 || !dims_value(p, s, n->args[0], depth + 1, &a) ||
      !dims_value(p, s, n->args[1], depth + 1, &b))
    return 0;
  switch (n->op) {
    case XIR_OP_ADD: *out = xir__iadd(a, b); return 1;
    case XIR_OP_SUB: *out = xir__isub(a, b); return 1;
    case XIR_OP_MUL: *out = xir__imul(a, b); return 1;
    case XIR_OP_DIV: *out = xir__idiv(a, b); return b != 0;
    case XIR_OP_REM: *out = xir__irem(a, b); return b != 0;
    case XIR_OP_MAX: *out = a > b ? a : b; return 1;
    case XIR_OP_MIN: *out = a < b ? a : b; return 1;
    default: return 0;
  }
}

/* g = h / E, E rank-0 over dims only: *E and its value. */
static int group_of(const xir_program *p, const xir_shape *s, int g, int ax_h, int *E, int64_t *val) {
  const xir_node *n = node(p, g);
  if (!n || n->op != XIR_OP_DIV || n->type.elem != XIR_I64 || n->type.rank != 0) return 0;
  if (root_axis(p, n->args[0]) != ax_h) return 0;
  int64_t v;
  if (!dims_value(p, s, n->args[1], 0, &v) || v < 1) return 0;
  *E = n->args[1];
  *val = v;
  return 1;
}

/* a · b in either order: 1 and the operands with a matching `first`. */
static int mul_pair(const xir_program *p, int id, int *x, int *y) {
  const xir_node *n = node(p, id);
  if (!n || n->op != XIR_OP_MUL || n->type.elem != XIR_F32) return 0;
  *x = n->args[0];
  *y = n->args[1];
  return 1;
}

int xir__attn_form_of(const xir_program *p, const xir_shape *s, xir__attn_form *f) {
  memset(f, 0, sizeof *f);
  f->mask = -1;
  if (!p || !s || p->nroot != 3) return 0;
  /* the single store: o[rb, rh, ri, :] = select(l == 0.0, 0.0, acc / l) */
  int st = -1;
  for (int i = p->body_begin; i < p->nnodes; i++)
    if (p->nodes[i].op == XIR_OP_STORE) {
      if (st >= 0) return 0;
      st = i;
    }
  const xir_node *sn = node(p, st);
  if (!sn || sn->nargs != 5) return 0;
  const xir_param *po = &p->params[sn->ref];
  if (po->rank != 4 || po->elem != XIR_F32 || sn->args[3] >= 0) return 0;
  f->o = sn->ref;
  f->ax_b = root_axis(p, sn->args[0]);
  f->ax_h = root_axis(p, sn->args[1]);
  f->ax_i = root_axis(p, sn->args[2]);
  if (f->ax_b < 0 || f->ax_h < 0 || f->ax_i < 0 || f->ax_b == f->ax_h || f->ax_b == f->ax_i ||
      f->ax_h == f->ax_i)
    return 0;
  const xir_node *out = node(p, sn->args[4]);
  if (!out || out->op != XIR_OP_SELECT) return 0;
  const xir_node *c0 = node(p, out->args[0]), *dv = node(p, out->args[2]);
  if (!c0 || c0->op != XIR_OP_EQ || !is_const_f(p, c0->args[1], 0.0) ||
      !is_const_f(p, out->args[1], 0.0) || !dv || dv->op != XIR_OP_DIV || dv->args[1] != c0->args[0])
    return 0;
  f->n_l = c0->args[0];
  f->n_acc = dv->args[0];
  /* l = reduce.sum(p, K); acc = reduce.sum(p * load v[rb, g', :, :], K) */
  const xir_node *ln = node(p, f->n_l), *an = node(p, f->n_acc);
  if (!ln || ln->op != XIR_OP_REDUCE_SUM || ln->type.rank != 0 || !an ||
      an->op != XIR_OP_REDUCE_SUM || an->type.rank != 1)
    return 0;
  f->n_p = ln->args[0];
  f->dim_k = ln->ref;
  int x, y, gv, gk;
  if (an->ref != f->dim_k || !mul_pair(p, an->args[0], &x, &y)) return 0;
  if (y == f->n_p) { int t = x; x = y; y = t; }
  if (x != f->n_p || !kv_load(p, y, f->ax_b, &f->v, &gv)) return 0;
  int vload = y;
  /* p = exp(sm - select(m == -inf, 0.0, m)); m = reduce.max(sm, K) */
  const xir_node *pn = node(p, f->n_p);
  if (!pn || pn->op != XIR_OP_EXP || pn->type.rank != 1) return 0;
  const xir_node *sub = node(p, pn->args[0]);
  if (!sub || sub->op != XIR_OP_SUB) return 0;
  int sm = sub->args[0];
  const xir_node *safe = node(p, sub->args[1]);
  if (!safe || safe->op != XIR_OP_SELECT) return 0;
  f->n_m = safe->args[2];
  const xir_node *ceq = node(p, safe->args[0]), *mn = node(p, f->n_m);
  if (!ceq || ceq->op != XIR_OP_EQ || ceq->args[0] != f->n_m ||
      !is_const_f(p, ceq->args[1], -INFINITY) || !is_const_f(p, safe->args[1], 0.0) || !mn ||
      mn->op != XIR_OP_REDUCE_MAX || mn->args[0] != sm || mn->ref != f->dim_k)
    return 0;
  /* the mask (attention_causal): a prefix mask along K with fill −inf over s, whose end
   * depends on the query coordinate and dims only (every head and batch of a tile shares it) */
  f->n_s = sm;
  const xir_node *smn = node(p, sm);
  if (smn && smn->op == XIR_OP_SELECT) {
    if (!xir__prefix_mask_of(p, sm, &f->pm) || f->pm.axis_dim != f->dim_k ||
        f->pm.fill != -INFINITY || f->pm.root_coef[f->ax_b] != 0 || f->pm.root_coef[f->ax_h] != 0)
      return 0;
    f->mask = sm;
    f->n_s = f->pm.live;
  }
  /* s = sdot * sc (either order), sdot = reduce.sum(load k[...] * load q[rb, rh, ri, :], D) */
  if (!mul_pair(p, f->n_s, &x, &y)) return 0;
  const xir_node *nx = node(p, x);
  if (!nx || nx->op != XIR_OP_REDUCE_SUM) { int t = x; x = y; y = t; }
  nx = node(p, x);
  if (!nx || nx->op != XIR_OP_REDUCE_SUM || nx->type.rank != 1 || !xir__attn_scalar_ok(p, y))
    return 0;
  f->n_sdot = x;
  f->scale = y;
  f->dim_d = nx->ref;
  int kx, qx;
  if (!mul_pair(p, nx->args[0], &kx, &qx)) return 0;
  const xir_node *qn = node(p, qx);
  if (!qn || qn->op != XIR_OP_LOAD) { int t = kx; kx = qx; qx = t; }
  if (!kv_load(p, kx, f->ax_b, &f->k, &gk)) return 0;
  qn = node(p, qx);
  if (!qn || qn->op != XIR_OP_LOAD || qn->nargs != 4) return 0;
  const xir_param *pq = &p->params[qn->ref];
  if (pq->is_output || pq->elem != XIR_F32 || pq->rank != 4 ||
      root_axis(p, qn->args[0]) != f->ax_b || root_axis(p, qn->args[1]) != f->ax_h ||
      root_axis(p, qn->args[2]) != f->ax_i || qn->args[3] >= 0)
    return 0;
  f->q = qn->ref;
  int64_t ev;
  int Ev;
  if (!group_of(p, s, gk, f->ax_h, &f->group_expr, &f->group)) return 0;
  if (gv != gk && (!group_of(p, s, gv, f->ax_h, &Ev, &ev) || ev != f->group)) return 0;
  f->group_dims = dims_read(p, f->group_expr, 0) | (gv != gk ? dims_read(p, Ev, 0) : 0);
  /* dims: q[B, HQ, Q, D], k[B, HKV, K, D], v[B, HKV, K, DV], o[B, HQ, Q, DV] */
  const xir_param *pk = &p->params[f->k], *pv = &p->params[f->v];
  f->dim_b = pq->dims[0];
  f->dim_hq = pq->dims[1];
  f->dim_q = pq->dims[2];
  f->dim_hkv = pk->dims[1];
  f->dim_dv = pv->dims[3];
  if (pq->dims[3] != f->dim_d || pk->dims[0] != f->dim_b || pk->dims[2] != f->dim_k ||
      pk->dims[3] != f->dim_d || pv->dims[0] != f->dim_b || pv->dims[1] != f->dim_hkv ||
      pv->dims[2] != f->dim_k || po->dims[0] != f->dim_b || po->dims[1] != f->dim_hq ||
      po->dims[2] != f->dim_q || po->dims[3] != f->dim_dv || f->o == f->q)
    return 0;
  if (p->root[f->ax_b].dim != f->dim_b || p->root[f->ax_h].dim != f->dim_hq ||
      p->root[f->ax_i].dim != f->dim_q)
    return 0;
  /* every non-leaf body node plays a role */
  uint8_t used[4096];
  if (p->nnodes > (int)sizeof used) return 0;
  memset(used, 0, (size_t)p->nnodes);
  int roles[] = {st, sn->args[4], out->args[0], out->args[2], f->n_l, f->n_acc, an->args[0],
                 vload, f->n_p, pn->args[0], sub->args[1], safe->args[0], f->n_m, f->n_s,
                 f->n_sdot, nx->args[0], kx, qx, gk, gv};
  for (size_t r = 0; r < sizeof roles / sizeof *roles; r++) used[roles[r]] = 1;
  if (f->mask >= 0) { /* the select and its condition (iota, the root index, dims) */
    used[f->mask] = 1;
    mark_expr(p, p->nodes[f->mask].args[0], used);
    for (int a = 1; a < 3; a++)
      if (p->nodes[f->mask].args[a] != f->n_s) mark_expr(p, p->nodes[f->mask].args[a], used);
  }
  mark_expr(p, f->scale, used);
  mark_expr(p, f->group_expr, used);
  if (gv != gk) mark_expr(p, p->nodes[gv].args[1], used);
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    if (used[i] || xir__is_inline_leaf(n->op)) continue;
    /* an unused rank-0 root-invariant value (dead code) changes nothing */
    if (n->type.rank == 0 && xir__attn_scalar_ok(p, i)) continue;
    return 0;
  }
  return 1;
}

static unsigned pow2_ceil(unsigned x) {
  unsigned r = 1;
  while (r < x) r *= 2;
  return r;
}

void xir__attn_geometry(unsigned W, int vec_d, unsigned qb, unsigned hb, int64_t D, int64_t DV,
                        xir__attn_geom *g) {
  unsigned n = qb * hb;
  memset(g, 0, sizeof *g);
  g->rows = n;
  g->vec_d = vec_d != 0;
  g->nv = g->vec_d ? 1 : (n + W - 1) / W;
  g->lanes = g->nv * W;
  g->npad = pow2_ceil(n);
  /* vec q: 16 accumulators (16 keys × 1 packet, 8 × 2); vec d: W (W/npad keys × npad rows) */
  g->jr = g->vec_d ? (W >= g->npad ? W / g->npad : 1) : (g->nv == 1 ? 16 : 8);
  g->dvec = (unsigned)((D + W - 1) / W);
  g->cv = (unsigned)((DV + W - 1) / W);
  g->cb = g->cv < 8 ? g->cv : 8;
  unsigned rr = 1;
  while (rr * 2 * g->cb <= 16 && rr * 2 <= g->npad && rr * 2 <= g->lanes) rr *= 2;
  g->rr = rr;
  g->rows_pv = (n + rr - 1) / rr * rr;
}

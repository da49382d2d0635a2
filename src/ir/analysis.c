/* analysis.c — facts about a verified program that the lowering and the execution work must
 * agree on (so that the cost model counts what the native code does): which values are the same
 * for every root program, and which tiles are therefore computed once per call. */
#include <string.h>

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

/* ---- lane patterns ---- */

static int64_t floordiv64(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t floormod64(int64_t a, int64_t b) { return a - b * floordiv64(a, b); }

/* Combines two patterns' periods; 0 when the lcm is too large. */
static int lcm_period(int a, int b) {
  int64_t l = (int64_t)a / gcd64(a, b) * b;
  return l <= XIR_LPAT_MAXP ? (int)l : 0;
}

static int lpat_rec(const xir_program *p, const xir_shape *s, int X, const int64_t *period,
                    int id, int depth, xir__lpat *o) {
  const xir_node *n = &p->nodes[id];
  memset(o, 0, sizeof *o);
  o->P = 1;
  if (depth > 16 || n->type.elem != XIR_I64 || n->type.rank > 1) return 0;
  if (n->op == XIR_OP_CONST || n->op == XIR_OP_DIM) {
    o->u_known = 1;
    o->u = n->op == XIR_OP_CONST ? n->imm.i : s->dims[n->ref];
    return 1;
  }
  if (n->op == XIR_OP_IOTA && n->ref == X) {
    o->u_known = 1;
    o->A = 1;
    return 1;
  }
  if (period[id] == 1) return 1; /* the same for every element: an unknown uniform */
  xir__lpat a, b;
  switch (n->op) {
    case XIR_OP_ADD:
    case XIR_OP_SUB: {
      if (!lpat_rec(p, s, X, period, n->args[0], depth + 1, &a) ||
          !lpat_rec(p, s, X, period, n->args[1], depth + 1, &b))
        return 0;
      int P = lcm_period(a.P, b.P), sg = n->op == XIR_OP_ADD ? 1 : -1;
      if (!P) return 0;
      o->P = P;
      o->A = a.A + sg * b.A;
      o->u_known = a.u_known && b.u_known;
      o->u = a.u + sg * b.u;
      for (int j = 0; j < P; j++) o->tab[j] = a.tab[j % a.P] + sg * b.tab[j % b.P];
      return 1;
    }
    case XIR_OP_NEG:
      if (!lpat_rec(p, s, X, period, n->args[0], depth + 1, &a)) return 0;
      *o = a;
      o->A = -a.A;
      o->u = -a.u;
      for (int j = 0; j < a.P; j++) o->tab[j] = -a.tab[j];
      return 1;
    case XIR_OP_MUL: {
      if (!lpat_rec(p, s, X, period, n->args[0], depth + 1, &a) ||
          !lpat_rec(p, s, X, period, n->args[1], depth + 1, &b))
        return 0;
      xir__lpat *k = NULL, *v = NULL;
      if (b.u_known && b.A == 0 && b.P == 1 && b.tab[0] == 0) k = &b, v = &a;
      else if (a.u_known && a.A == 0 && a.P == 1 && a.tab[0] == 0) k = &a, v = &b;
      if (!k) return 0;
      *o = *v;
      o->A = v->A * k->u;
      o->u = v->u * k->u;
      for (int j = 0; j < v->P; j++) o->tab[j] = (int32_t)(v->tab[j] * k->u);
      return 1;
    }
    case XIR_OP_REM:
    case XIR_OP_DIV: {
      const xir_node *m = &p->nodes[n->args[1]];
      int64_t M = m->op == XIR_OP_CONST ? m->imm.i : m->op == XIR_OP_DIM ? s->dims[m->ref] : 0;
      if (M <= 0 || M > XIR_LPAT_MAXP || !lpat_rec(p, s, X, period, n->args[0], depth + 1, &a) ||
          !a.u_known)
        return 0;
      int P = a.P;
      if (n->op == XIR_OP_REM && a.A != 0) P = lcm_period(a.P, (int)M);
      if (n->op == XIR_OP_DIV && a.A != 0) return 0;
      if (!P) return 0;
      o->P = P;
      o->u_known = 1;
      for (int j = 0; j < P; j++) {
        int64_t v = a.u + a.A * j + a.tab[j % a.P];
        o->tab[j] = (int32_t)(n->op == XIR_OP_REM ? floormod64(v, M) : floordiv64(v, M));
      }
      return 1;
    }
    default: return 0;
  }
}

int xir__access_pattern(const xir_program *p, const xir_shape *s, int X, int id, xir__lpat *out) {
  const xir_node *n = &p->nodes[id];
  memset(out, 0, sizeof *out);
  out->P = 1;
  int64_t *period = xir__calloc((size_t)p->nnodes + 1, sizeof(int64_t));
  if (!period) return 0;
  xir__inner_period(p, s, X, period);
  const xir_param *q = &p->params[n->ref];
  int nidx = n->op == XIR_OP_STORE ? n->nargs - 1 : n->nargs, ok = 1;
  int64_t stride = 1;
  for (int k = nidx - 1; k >= 0 && ok; k--) {
    xir__lpat a;
    memset(&a, 0, sizeof a);
    a.P = 1;
    if (n->args[k] < 0) a.A = q->dims[k] == X; /* a slice: the element index, or a loop index */
    else ok = lpat_rec(p, s, X, period, n->args[k], 0, &a);
    if (!ok) break;
    int P = lcm_period(out->P, a.P);
    if (!P) {
      ok = 0;
      break;
    }
    int32_t t[XIR_LPAT_MAXP];
    for (int j = 0; j < P; j++) {
      int64_t v = out->tab[j % out->P] + stride * a.tab[j % a.P];
      if (v > INT32_MAX || v < INT32_MIN) ok = 0;
      t[j] = (int32_t)v;
    }
    memcpy(out->tab, t, sizeof(int32_t) * (size_t)P);
    out->P = P;
    out->A += stride * a.A;
    stride *= s->dims[q->dims[k]];
  }
  xir__free(period);
  return ok;
}

/* min/max of u + A·c + tab[c mod P] over c in [0, E): for each residue the value is monotone in
 * c, so its extremes are at the residue's first and last c. */
static void lpat_range(const xir__lpat *a, int64_t E, int64_t *mn, int64_t *mx) {
  *mn = INT64_MAX;
  *mx = INT64_MIN;
  for (int j = 0; j < a->P && j < E; j++) {
    int64_t c0 = j, c1 = j + (int64_t)a->P * ((E - 1 - j) / a->P);
    int64_t v0 = a->u + a->A * c0 + a->tab[j], v1 = a->u + a->A * c1 + a->tab[j];
    if (v0 < *mn) *mn = v0;
    if (v1 < *mn) *mn = v1;
    if (v0 > *mx) *mx = v0;
    if (v1 > *mx) *mx = v1;
  }
}

int xir__access_in_bounds(const xir_program *p, const xir_shape *s, int X, int id) {
  const xir_node *n = &p->nodes[id];
  if (X < 0 || (n->op != XIR_OP_LOAD && n->op != XIR_OP_STORE)) return 0;
  int64_t *period = xir__calloc((size_t)p->nnodes + 1, sizeof(int64_t));
  if (!period) return 0;
  xir__inner_period(p, s, X, period);
  const xir_param *q = &p->params[n->ref];
  int nidx = n->op == XIR_OP_STORE ? n->nargs - 1 : n->nargs, ok = 1;
  for (int k = 0; k < nidx && ok; k++) {
    if (n->args[k] < 0) { /* a slice: the element index itself, in [0, dim) */
      ok = q->dims[k] == X;
      continue;
    }
    if (period[n->args[k]] == 1) continue; /* the same for every element: one clamp for all */
    xir__lpat a;
    if (!lpat_rec(p, s, X, period, n->args[k], 0, &a) || !a.u_known) {
      ok = 0;
      break;
    }
    int64_t mn, mx;
    lpat_range(&a, s->dims[X], &mn, &mx);
    ok = mn >= 0 && mx < s->dims[q->dims[k]];
  }
  xir__free(period);
  return ok;
}

int xir__lane_window(const xir__lpat *pt, unsigned W, unsigned q, int64_t *pi, int64_t *lo) {
  int64_t mn = INT64_MAX, mx = INT64_MIN;
  for (unsigned i = 0; i < W; i++) {
    int64_t c = (int64_t)(q * W + i);
    pi[i] = pt->A * c + pt->tab[c % pt->P];
    if (pi[i] < mn) mn = pi[i];
    if (pi[i] > mx) mx = pi[i];
  }
  *lo = mn;
  return mx - mn < (int64_t)W;
}

int xir__window_access(const xir_program *p, const xir_shape *s, int X, unsigned ell, unsigned W,
                       int id, xir__lpat *pt_out) {
  if (ell < W || X < 0 || W < 2 || W > 16) return 0;
  xir__lpat pt;
  if (!xir__access_pattern(p, s, X, id, &pt) || ell % (unsigned)pt.P) return 0;
  int64_t pi[16], lo;
  for (unsigned q = 0; q < ell / W; q++)
    if (!xir__lane_window(&pt, W, q, pi, &lo)) return 0;
  if (pt_out) *pt_out = pt;
  return 1;
}

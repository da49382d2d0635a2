/* analysis.c — facts about a verified program that the lowering and the execution work must
 * agree on (so that the cost model counts what the native code does): which values are the same
 * for every root program, and which tiles are therefore computed once per call. */
#include <string.h>

#include "ir/program.h"

int xir__op_is_transcendental(int op) {
  return op == XIR_OP_EXP || op == XIR_OP_LOG || op == XIR_OP_TANH || op == XIR_OP_ERF ||
         op == XIR_OP_SIGMOID || op == XIR_OP_SIN || op == XIR_OP_COS || op == XIR_OP_POW;
}

static int64_t gcd0(int64_t a, int64_t b);

void xir__narrow_values(const xir_program *p, uint8_t *narrow) {
  int n = p->nnodes;
  memset(narrow, 0, (size_t)n);
  /* users come after their operands: walking backwards, a node's users are final when it is
   * reached. narrow[] holds 1 for "used, every use fine so far", 2 for "some use is not". */
  for (int j = n - 1; j >= 0; j--) {
    const xir_node *u = &p->nodes[j];
    int ok_user = (u->op == XIR_OP_MUL || u->op == XIR_OP_DIV || u->op == XIR_OP_NEG ||
                   u->op == XIR_OP_ABS) && narrow[j] == 1 && u->type.elem == XIR_F32;
    if (u->op == XIR_OP_STORE) {
      int el = p->params[u->ref].elem;
      ok_user = el == XIR_BF16 || el == XIR_F16;
    }
    for (int i = 0; i < u->nargs; i++) {
      int a = u->args[i];
      if (a < 0 || a >= n) continue;
      int fine = ok_user && (u->op != XIR_OP_STORE || i == u->nargs - 1);
      if (!fine) narrow[a] = 2;
      else if (narrow[a] == 0) narrow[a] = 1;
    }
    if (narrow[j] == 2) narrow[j] = 0;
  }
}

void xir__inner_stretch(const xir_program *p, const xir_shape *s, int X, int64_t *stretch) {
  for (int i = 0; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    int64_t D = 0;
    switch (n->op) {
      case XIR_OP_CONST: case XIR_OP_DIM: case XIR_OP_PARAM: case XIR_OP_ROOT: D = 0; break;
      case XIR_OP_IOTA: D = n->ref == X ? 1 : 0; break;
      case XIR_OP_REDUCE_SUM: case XIR_OP_REDUCE_MAX: case XIR_OP_REDUCE_MIN:
        D = n->type.rank == 0 ? 0 : 1;
        break;
      case XIR_OP_STORE: D = 1; break;
      case XIR_OP_LOAD: {
        const xir_param *q = &p->params[n->ref];
        for (int k = 0; k < n->nargs; k++) {
          if (n->args[k] < 0) {
            if (q->dims[k] == X) D = 1;
            continue;
          }
          D = gcd0(D, stretch[n->args[k]]);
        }
        break;
      }
      default:
        for (int a = 0; a < n->nargs; a++)
          if (n->args[a] >= 0) D = gcd0(D, stretch[n->args[a]]);
        if (n->op == XIR_OP_DIV && n->type.elem == XIR_I64) {
          /* (iota(X) % M) / E, E dividing M: the same value on aligned runs of E */
          const xir_node *r = &p->nodes[n->args[0]], *e = &p->nodes[n->args[1]];
          int64_t E = e->op == XIR_OP_CONST ? e->imm.i : e->op == XIR_OP_DIM ? s->dims[e->ref] : 0;
          if (r->op == XIR_OP_REM && r->type.elem == XIR_I64 && E > 0) {
            const xir_node *c = &p->nodes[r->args[0]], *m = &p->nodes[r->args[1]];
            int64_t M = m->op == XIR_OP_CONST ? m->imm.i : m->op == XIR_OP_DIM ? s->dims[m->ref] : 0;
            if (c->op == XIR_OP_IOTA && c->ref == X && M > 0 && M % E == 0) D = E;
          }
        }
    }
    stretch[i] = D;
  }
}

int xir__direct_uses(const xir_program *p, const xir__pbuf *pbuf, uint8_t *reached) {
  memset(reached, 0, (size_t)p->nnodes);
  int *stack = xir__malloc(sizeof(int) * ((size_t)p->nnodes * (XIR_MAX_RANK + 2) + 1));
  if (!stack) return -1;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    int sp = 0;
    if (n->op == XIR_OP_STORE) stack[sp++] = n->args[n->nargs - 1];
    else if (n->op == XIR_OP_REDUCE_SUM || n->op == XIR_OP_REDUCE_MAX || n->op == XIR_OP_REDUCE_MIN)
      stack[sp++] = n->args[0];
    else continue;
    while (sp) {
      int id = stack[--sp];
      if (id < 0 || reached[id]) continue;
      reached[id] = 1;
      if (pbuf && pbuf[id].len) continue;
      const xir_node *m = &p->nodes[id];
      if (m->op == XIR_OP_REDUCE_SUM || m->op == XIR_OP_REDUCE_MAX || m->op == XIR_OP_REDUCE_MIN)
        continue; /* a reduction's operand is the reduction's own consumer loop */
      for (int a = 0; a < m->nargs; a++)
        if (m->args[a] >= 0) stack[sp++] = m->args[a];
    }
  }
  xir__free(stack);
  return 0;
}

int64_t xir__hoist_extent(const xir_program *p, int id, int64_t N, int64_t M, int x_is_inner,
                          unsigned ell, unsigned W, const xir__pbuf *pbuf, const uint8_t *direct) {
  int64_t need = N, L = ell;
  if (x_is_inner && M < N && L >= W && L % M == 0 && N % L == 0 && (M % W == 0 || W % M == 0))
    need = M > W ? M : W;
  if (!pbuf) return need;
  int any = 0;
  for (int j = p->body_begin; j < p->nnodes; j++) any |= pbuf[j].len > 0;
  if (!any) return need;
  if (direct && !direct[id]) need = W;
  int64_t cap = N;
  for (int j = p->body_begin; j < p->nnodes; j++)
    if (pbuf[j].len && pbuf[j].comp > need) need = pbuf[j].comp;
  /* a buffer of a whole row's values (M = N) may compute past N (up to N + D·W − 1, inside the
   * tile's buffer of ⌈N / W⌉ + D vectors): the hoisted tile is filled as far, its period (N)
   * copied */
  for (int j = p->body_begin; j < p->nnodes; j++)
    if (pbuf[j].len && pbuf[j].M == N && pbuf[j].comp > cap) cap = pbuf[j].comp;
  return need > cap ? cap : need;
}

int xir__chunk_unroll(const xir_program *p, const xir_shape *s, int X, unsigned ell, unsigned W,
                      int x_fixed) {
  if (X < 0 || !x_fixed || ell < W || W < 1 || s->dims[X] / (int64_t)W > XIR__UNROLL_PERIODIC)
    return XIR__UNROLL_CHUNKS;
  xir__lpat pt;
  /* a local window pattern, which a loop tests chunk by chunk at run time or reads from a period
   * buffer (rope_cache at HD = C = 120, l = 16: 9.1 us in a loop of 7 chunks, l = 32 5.8 us
   * with its 3 chunks straight-line) */
  for (int i = p->body_begin; i < p->nnodes; i++)
    if (p->nodes[i].op == XIR_OP_LOAD && !xir__window_access(p, s, X, ell, W, i, NULL) &&
        xir__window_access_local(p, s, X, ell, W, i, &pt))
      return XIR__UNROLL_PERIODIC;
  return XIR__UNROLL_CHUNKS;
}

/* 1 when the value of node id is computed without any load or reduction (iota, constants, dims,
 * parameters, root coordinates and arithmetic on them). The walk does not mark visited nodes, so
 * it stops (0: not known to be free) after 256 steps: a shared subexpression is visited once per
 * path, and a chain of self-sums would otherwise take 2^depth steps. */
static int free_of_loads(const xir_program *p, int id) {
  int stack[64], sp = 0, steps = 0;
  stack[sp++] = id;
  while (sp) {
    if (++steps > 256) return 0;
    int i = stack[--sp];
    if (i < 0) return 0;
    const xir_node *e = &p->nodes[i];
    if (e->op == XIR_OP_LOAD || e->op == XIR_OP_STORE || xir__is_reduce(e->op)) return 0;
    for (int a = 0; a < e->nargs; a++) {
      if (sp >= 64) return 0;
      stack[sp++] = e->args[a];
    }
  }
  return 1;
}

int xir__period_buffer(const xir_program *p, const xir_shape *s, int X, unsigned ell, unsigned W,
                       int x_fixed, int masked, const uint8_t *hoist, const int64_t *period,
                       const int64_t *stretch, int id, xir__pbuf *out) {
  memset(out, 0, sizeof *out);
  if (ell < W || W < 1 || X < 0 || !x_fixed || masked || !period || id < p->body_begin) return 0;
  const xir_node *n = &p->nodes[id];
  int load = n->op == XIR_OP_LOAD;
  /* a stretched load times a factor computed from iota and per-unit values only (rope_cache's
   * sign(c) · sin[p, i]): the product repeats with the load's period and is buffered whole, so
   * that a packet reads it with one load instead of a window load, a duplicating shuffle and a
   * multiply (the buffer's fill does those once per unit) */
  int scaled = 0;
  if (n->op == XIR_OP_MUL && n->nargs == 2 && stretch && n->type.rank == 1 && n->type.axes[0] == X) {
    for (int a = 0; a < 2 && !scaled; a++) {
      const xir_node *ld = &p->nodes[n->args[a]];
      if (ld->op != XIR_OP_LOAD || ld->type.rank != 1 || ld->type.axes[0] != X ||
          stretch[n->args[a]] < 2 || (hoist && hoist[n->args[a]]))
        continue;
      scaled = free_of_loads(p, n->args[1 - a]) ? n->args[a] + 1 : 0;
    }
  }
  if (!(xir__op_is_transcendental(n->op) || load || scaled) || (hoist && hoist[id]) ||
      n->type.rank != 1 || n->type.axes[0] != X)
    return 0;
  if (load && stretch) {
    /* a load whose every use is such a product has no buffer of its own: the product's buffer
     * is what the packets read */
    int uses = 0, all_scaled = 1;
    for (int j = id + 1; j < p->nnodes && all_scaled; j++)
      for (int a = 0; a < p->nodes[j].nargs; a++)
        if (p->nodes[j].args[a] == id) {
          xir__pbuf pj;
          uses++;
          all_scaled = p->nodes[j].op == XIR_OP_MUL &&
                       xir__period_buffer(p, s, X, ell, W, x_fixed, masked, hoist, period, stretch, j, &pj);
          break;
        }
    if (uses && all_scaled) return 0;
  }
  int64_t M = period[id], N = s->dims[X], L = ell;
  int64_t D = stretch ? stretch[id] : 1;
  if (D < 1 || W % D != 0) D = 1;
  /* a tile that does not repeat along the row (period N or none) but whose consecutive
   * elements share values (RoPE with one head a row, C = HD: D = 2) is a buffer of the row's
   * values, computed at N / D of its elements instead of every one */
  int64_t M0 = M;
  if ((M == 0 || M >= N) && D > 1 && N % D == 0) M = N;
  if (M <= 1 || M > N || (M == N && (load || D == 1))) return 0;
  if (M % D != 0) D = 1;
  int inv = L % M == 0; /* every chunk at residue 0 */
  if (inv && D == 1) return 0; /* chunk invariance computes the same values already */
  /* as a stretched load below, and only where the period is whole chunks: at HD = 100 the fill's
   * last vector crosses the period (the sin index wraps mid-vector: a split or a gather), and
   * the product's buffer made 3x1000 slower (AOT, one thread: l = 32 1.09x, l = 64 1.37x); at
   * HD = 96, l = 64 (chunks across the period's end) 45x960 ran 1.28x slower, l = 16 0.955x */
  if (scaled && !(N >= 4 * M && period[scaled - 1] == M && M % L == 0)) return 0;
  if (load) {
    /* a periodic load (rope_cache's cos[p, (c % HD) / 2]): where some chunks would gather or
     * split — a local window pattern with a bad residue (other loads are one window load and a
     * shuffle per packet, or chunk-invariant when ℓ is a multiple of M; but see the stretched
     * case below) — and where the chunks are a loop: such a load is a local pattern that no chunk loop reads as
     * a window (a bad residue), so a row of at most XIR__UNROLL_PERIODIC packets runs its
     * chunks straight-line instead (xir__chunk_unroll), each at a known residue */
    xir__lpat pt;
    uint8_t good[XIR_LPAT_MAXP], reach[XIR_LPAT_MAXP];
    int bad = !inv && N / (int64_t)W > XIR__UNROLL_PERIODIC &&
              xir__window_access_local(p, s, X, ell, W, id, &pt) &&
              xir__window_local_residues(&pt, ell, W, good, reach) < 1.0;
    /* or a stretched load (D > 1, each value spread over D lanes: a window load and a duplicating
     * shuffle per packet, three shuffle operations at W = 8) whose period repeats at least four
     * times a row: its buffer is filled once per unit (M / (D·W) window loads and shuffles) and
     * each packet reads it with one load (rope_cache's cos and sin at HD = 128 and C = 4096: 32
     * heads a row) */
    int stretched = !inv && D > 1 && N >= 4 * M;
    if (!bad && !stretched) return 0;
  }
  /* with M = N no chunk passes the row: the chunks read [0, ceil(N / ℓ)·ℓ) */
  int64_t comp = (M + D * W - 1) / (D * W) * (D * W),
          need = inv ? L : M == N ? (N + L - 1) / L * L : M + L;
  int64_t len = (need + W - 1) / W * W;
  if (len < comp) len = comp;
  /* comp past the row only where the tile has period N: the values past N are those of c mod N,
   * in range, and the hoisted tiles it reads are filled that far (xir__hoist_extent) */
  /* and the unit computes fewer values than the chunks would: at most half of them for a
   * period, fewer than N for the row */
  if ((comp > N && M0 != N) || len > 65536 || (!inv && (M == N ? comp / D >= N : 2 * (comp / D) > N)))
    return 0;
  out->len = len;
  out->comp = comp;
  out->D = D;
  out->M = M;
  return 1;
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
  /* last node first: a node's arguments are earlier nodes, whose hoist[] still holds their
   * invariance */
  for (int i = p->nnodes - 1; i >= 0; i--) {
    const xir_node *n = &p->nodes[i];
    /* a bf16/f16 load at root-invariant indices (rmsnorm's weight w[:]): converted once per
     * call instead of once per root program */
    int half_load = n->op == XIR_OP_LOAD && p->params[n->ref].kind == XIR_PARAM_BUFFER &&
                    (p->params[n->ref].elem == XIR_BF16 || p->params[n->ref].elem == XIR_F16);
    for (int a = 0; a < n->nargs && half_load; a++) /* a ':' index is -1 */
      half_load = n->args[a] < 0 || hoist[n->args[a]];
    int ok = half_load || (hoist[i] && xir__op_is_transcendental(n->op));
    hoist[i] = ok && i >= p->body_begin && n->type.rank == 1 && n->type.elem == XIR_F32 &&
               s->dims[n->type.axes[0]] <= XIR_HOIST_MAX;
  }
  /* The converted weights stay in L1 next to the row only while they are small: hoisted 16-bit
   * loads, first fit in program order (a load whose f32 copy would take the total past
   * XIR_HOIST_HALF_BYTES is converted where it is used; a later, smaller one may still fit).
   * bf16 layernorm 1024x4096 (w and b: 32 KiB of f32 next to an 8 KiB row and the next row's
   * prefetch, a 48 KiB L1) ran 3-5 % faster converting both per use than hoisting both
   * (docs/lowering.md, "16-bit buffers"); rmsnorm 1024x4096's one w (16 KiB of f32) ran 0.573 of
   * f32 hoisted, 0.507 converted per use (session 24, paired in the dtype suite): 8 KiB. */
  int64_t half_bytes = 0;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    if (!hoist[i] || n->op != XIR_OP_LOAD) continue;
    int64_t b = 4 * s->dims[n->type.axes[0]];
    if (half_bytes + b > XIR_HOIST_HALF_BYTES) hoist[i] = 0;
    else half_bytes += b;
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

static int64_t gcd0(int64_t a, int64_t b) { return a == 0 ? b : b == 0 ? a : gcd64(a, b); }

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

int xir__const_int_op(int op, int64_t a, int64_t b, int64_t *r) {
  switch (op) {
    case XIR_OP_ADD: return !__builtin_add_overflow(a, b, r);
    case XIR_OP_SUB: return !__builtin_sub_overflow(a, b, r);
    case XIR_OP_MUL: return !__builtin_mul_overflow(a, b, r);
    case XIR_OP_MAX: *r = a > b ? a : b; return 1;
    case XIR_OP_MIN: *r = a < b ? a : b; return 1;
    case XIR_OP_DIV:
    case XIR_OP_REM: {
      if (b == 0 || (b == -1 && a == INT64_MIN)) return 0;
      int64_t q = a / b;
      if (a % b != 0 && ((a < 0) != (b < 0))) q--;
      *r = op == XIR_OP_DIV ? q : a - q * b;
      return 1;
    }
    default: return 0;
  }
}

int xir__window_lanes(const int64_t *pi, const int *live, unsigned W, int distinct, xir__wsplit *out) {
  int64_t mn[2] = {INT64_MAX, INT64_MAX}, mx[2] = {INT64_MIN, INT64_MIN};
  int nw = 0, win[16];
  if (W > 16) return 0;
  for (unsigned g = 0; g < W; g++) {
    win[g] = -1;
    if (!live[g]) continue;
    int k = 0;
    for (; k < 2; k++) {
      int64_t a = pi[g] < mn[k] ? pi[g] : mn[k], b = pi[g] > mx[k] ? pi[g] : mx[k];
      if (b - a < (int64_t)W) break;
    }
    if (k == 2 || k > nw) return 0;
    if (k == nw) nw++;
    if (pi[g] < mn[k]) mn[k] = pi[g];
    if (pi[g] > mx[k]) mx[k] = pi[g];
    win[g] = k;
  }
  if (distinct)
    for (unsigned g = 0; g < W; g++)
      for (unsigned h = g + 1; h < W; h++)
        if (live[g] && live[h] && pi[g] == pi[h]) return 0;
  memset(out, 0, sizeof *out);
  out->nwin = nw;
  for (int k = 0; k < nw; k++) out->base[k] = mn[k];
  for (unsigned g = 0; g < W; g++) {
    out->src[g] = -1;
    if (win[g] < 0) continue;
    int64_t e = pi[g] - mn[win[g]];
    out->mask[win[g]] |= 1u << e;
    out->src[g] = (int8_t)(e + win[g] * (int64_t)W);
  }
  return nw;
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

static int window_access(const xir_program *p, const xir_shape *s, int X, unsigned ell,
                         unsigned W, int id, int periodic, xir__lpat *pt_out) {
  if (ell < W || X < 0 || W < 2 || W > 16) return 0;
  xir__lpat pt;
  if (!xir__access_pattern(p, s, X, id, &pt) || (periodic && ell % (unsigned)pt.P)) return 0;
  int64_t pi[16], lo;
  for (unsigned q = 0; q < ell / W; q++)
    if (!xir__lane_window(&pt, W, q, pi, &lo)) return 0;
  if (pt_out) *pt_out = pt;
  return 1;
}
int xir__window_access(const xir_program *p, const xir_shape *s, int X, unsigned ell, unsigned W,
                       int id, xir__lpat *pt_out) {
  return window_access(p, s, X, ell, W, id, 1, pt_out);
}
int xir__window_access_local(const xir_program *p, const xir_shape *s, int X, unsigned ell,
                             unsigned W, int id, xir__lpat *pt_out) {
  return window_access(p, s, X, ell, W, id, 0, pt_out);
}

double xir__window_local_residues(const xir__lpat *pt, unsigned ell, unsigned W,
                                  uint8_t good[XIR_LPAT_MAXP], uint8_t reach[XIR_LPAT_MAXP]) {
  int P = pt->P, nreach = 0, ngood = 0;
  unsigned k = ell > W ? ell / W : 1;
  int64_t pi[16][16], lo;
  if (W > 16 || k > 16) return 0;
  for (unsigned q = 0; q < k; q++) xir__lane_window(pt, W, q, pi[q], &lo);
  memset(reach, 0, XIR_LPAT_MAXP);
  memset(good, 0, XIR_LPAT_MAXP);
  for (int64_t t = 0; t < P; t++) reach[(uint64_t)t * ell % (uint64_t)P] = 1;
  for (int r = 0; r < P; r++) {
    if (!reach[r]) continue;
    nreach++;
    int ok = 1;
    for (unsigned q = 0; q < k && ok; q++)
      for (unsigned i = 0; i < W && ok; i++) {
        int64_t c = (int64_t)(q * W + i);
        ok = pt->tab[(r + c) % P] - pt->tab[r] + pt->A * c == pi[q][i] - pi[0][0];
      }
    good[r] = (uint8_t)ok;
    ngood += ok;
  }
  return nreach ? (double)ngood / nreach : 0;
}

/* The live lanes' offsets rel[i] (live[i] set) as at most two windows of W elements
 * (xir__window_split's out); 0 when none is live or a third window would be needed. */
static int split_windows(const int64_t *rel, const uint8_t *live, unsigned W, xir__wsplit *out) {
  int any = 0;
  for (unsigned i = 0; i < W; i++) {
    out->src[i] = -1;
    any |= live[i];
  }
  if (!any) return 0;
  /* window 0 from the smallest offset; window 1 from the smallest offset past window 0 */
  for (int w = 0; w < 2; w++) {
    int64_t mn = INT64_MAX;
    for (unsigned i = 0; i < W; i++)
      if (out->src[i] < 0 && live[i] && rel[i] < mn) mn = rel[i];
    if (mn == INT64_MAX) break;
    out->base[w] = mn;
    out->nwin = w + 1;
    for (unsigned i = 0; i < W; i++) {
      if (out->src[i] >= 0 || !live[i]) continue;
      int64_t e = rel[i] - mn;
      if (e < 0 || e >= (int64_t)W) continue;
      out->src[i] = (int8_t)(w * (int)W + (int)e);
      out->mask[w] |= 1u << e;
    }
  }
  for (unsigned i = 0; i < W; i++)
    if (out->src[i] < 0 && live[i]) return 0; /* a third window */
  return 1;
}

int xir__window_split(const xir__lpat *pt, int64_t r0, unsigned W, unsigned q, int64_t live,
                      xir__wsplit *out) {
  memset(out, 0, sizeof *out);
  if (W > 16 || W < 2 || pt->P < 1 || r0 < 0) return 0;
  int P = pt->P;
  int64_t rel[16];
  uint8_t lv[16];
  for (unsigned i = 0; i < W; i++) {
    int64_t c = (int64_t)(q * W + i);
    lv[i] = c < live;
    rel[i] = lv[i] ? pt->A * c + pt->tab[(r0 + c) % P] - pt->tab[r0 % P] : 0;
  }
  return split_windows(rel, lv, W, out);
}

int xir__window_fill(const xir__lpat *pt, int64_t c0, int64_t D, unsigned W, int64_t live,
                     xir__wsplit *out) {
  memset(out, 0, sizeof *out);
  if (W > 16 || W < 2 || pt->P < 1 || c0 < 0 || D < 1) return 0;
  int64_t rel[16];
  uint8_t lv[16];
  for (unsigned i = 0; i < W; i++) {
    int64_t c = c0 + D * (int64_t)i;
    lv[i] = c < live;
    rel[i] = lv[i] ? pt->A * c + pt->tab[c % pt->P] - pt->tab[0] : 0;
  }
  return split_windows(rel, lv, W, out);
}

double xir__window_split_fraction(const xir__lpat *pt, unsigned ell, unsigned W) {
  uint8_t good[XIR_LPAT_MAXP], reach[XIR_LPAT_MAXP];
  if (W > 16 || W < 2 || ell < W || ell / W > 16) return 0;
  xir__window_local_residues(pt, ell, W, good, reach);
  int nreach = 0, nsplit = 0;
  for (int r = 0; r < pt->P; r++) {
    if (!reach[r]) continue;
    nreach++;
    if (good[r]) continue;
    int ok = 1;
    xir__wsplit sp;
    for (unsigned q = 0; q < ell / W && ok; q++) ok = xir__window_split(pt, r, W, q, (int64_t)ell, &sp);
    nsplit += ok;
  }
  return nreach ? (double)nsplit / nreach : 0;
}

/* ---- prefix masks ---- */

/* An affine i64 expression: k·iota(X) + c0 + Σ root_coef·root + Σ dim_coef·dim. */
typedef struct maff {
  int X;      /* the iota's dim, -1 while none */
  int64_t k;  /* coefficient of iota(X) */
  int64_t c0;
  int64_t rc[XIR_MAX_ROOT];
  int64_t dc[XIR_MAX_DIMS];
} maff;

static int maff_is_const(const maff *a) {
  if (a->k) return 0;
  for (int i = 0; i < XIR_MAX_ROOT; i++)
    if (a->rc[i]) return 0;
  for (int i = 0; i < XIR_MAX_DIMS; i++)
    if (a->dc[i]) return 0;
  return 1;
}

/* a := a + sg·b (sg = ±1); 0 when the two use iotas of different axes. */
static int maff_add(maff *a, const maff *b, int64_t sg) {
  if (b->k && a->k && a->X != b->X) return 0;
  if (b->k) a->X = b->X;
  a->k = xir__iadd(a->k, xir__imul(sg, b->k));
  a->c0 = xir__iadd(a->c0, xir__imul(sg, b->c0));
  for (int i = 0; i < XIR_MAX_ROOT; i++) a->rc[i] = xir__iadd(a->rc[i], xir__imul(sg, b->rc[i]));
  for (int i = 0; i < XIR_MAX_DIMS; i++) a->dc[i] = xir__iadd(a->dc[i], xir__imul(sg, b->dc[i]));
  return 1;
}

static int maff_of(const xir_program *p, int id, int depth, maff *o) {
  memset(o, 0, sizeof *o);
  o->X = -1;
  if (id < 0 || depth > 32) return 0;
  const xir_node *n = &p->nodes[id];
  if (n->type.elem != XIR_I64) return 0;
  maff a, b;
  switch (n->op) {
    case XIR_OP_CONST: o->c0 = n->imm.i; return 1;
    case XIR_OP_DIM: o->dc[n->ref] = 1; return 1;
    case XIR_OP_ROOT: o->rc[n->ref] = 1; return 1;
    case XIR_OP_IOTA: o->X = n->ref; o->k = 1; return 1;
    case XIR_OP_NEG:
      if (!maff_of(p, n->args[0], depth + 1, &a)) return 0;
      return maff_add(o, &a, -1);
    case XIR_OP_ADD:
    case XIR_OP_SUB:
      if (!maff_of(p, n->args[0], depth + 1, &a) || !maff_of(p, n->args[1], depth + 1, &b))
        return 0;
      *o = a;
      return maff_add(o, &b, n->op == XIR_OP_ADD ? 1 : -1);
    case XIR_OP_MUL: {
      if (!maff_of(p, n->args[0], depth + 1, &a) || !maff_of(p, n->args[1], depth + 1, &b))
        return 0;
      const maff *k = maff_is_const(&b) ? &b : maff_is_const(&a) ? &a : NULL;
      if (!k) return 0;
      return maff_add(o, k == &b ? &a : &b, k->c0);
    }
    default: return 0;
  }
}

int xir__prefix_mask_of(const xir_program *p, int id, xir__prefix_mask *out) {
  memset(out, 0, sizeof *out);
  if (id < 0 || id >= p->nnodes) return 0;
  const xir_node *n = &p->nodes[id];
  if (n->op != XIR_OP_SELECT || n->type.elem != XIR_F32 || n->type.rank < 1) return 0;
  /* the condition, under any number of `not` */
  int cid = n->args[0], neg = 0;
  while (p->nodes[cid].op == XIR_OP_NOT) {
    cid = p->nodes[cid].args[0];
    neg ^= 1;
  }
  const xir_node *c = &p->nodes[cid];
  int op = c->op;
  if (op != XIR_OP_LT && op != XIR_OP_LE && op != XIR_OP_GT && op != XIR_OP_GE) return 0;
  maff a, b;
  if (!maff_of(p, c->args[0], 0, &a) || !maff_of(p, c->args[1], 0, &b) || !maff_add(&a, &b, -1))
    return 0;
  /* cond ⇔ s·d > 0 (strict) or s·d >= 0, d = a − b */
  int strict = op == XIR_OP_LT || op == XIR_OP_GT;
  int64_t s = (op == XIR_OP_GT || op == XIR_OP_GE) ? 1 : -1;
  if (neg) { /* not(d > 0) ⇔ −d >= 0; not(d >= 0) ⇔ −d > 0 */
    strict = !strict;
    s = -s;
  }
  maff d = {.X = -1};
  if (!maff_add(&d, &a, s)) return 0;
  if (d.k != 1 && d.k != -1) return 0; /* no iota, or a multiple of it */
  int X = d.X, on_axis = 0;
  for (int i = 0; i < n->type.rank; i++) on_axis |= n->type.axes[i] == X;
  if (!on_axis) return 0;
  /* d = k·x + r: with k = 1 the condition holds at x >= −r (+1 if strict); with k = −1 it holds
   * at x <= r (x < r if strict), so it fails exactly at x >= r + 1 (x >= r if strict) */
  int fill_arg;
  int64_t sg;
  if (d.k == 1) {
    sg = -1;
    out->c0 = xir__iadd(xir__imul(-1, d.c0), strict);
    fill_arg = 1;
  } else {
    sg = 1;
    out->c0 = xir__iadd(d.c0, !strict);
    fill_arg = 2;
  }
  for (int i = 0; i < XIR_MAX_ROOT; i++) out->root_coef[i] = xir__imul(sg, d.rc[i]);
  for (int i = 0; i < XIR_MAX_DIMS; i++) out->dim_coef[i] = xir__imul(sg, d.dc[i]);
  /* The form is exact modulo 2^64 (i64 arithmetic wraps); with small coefficients (dims and
   * root coordinates are below 2^40) the end never wraps, so it equals the program's bound + 0/1. */
  const int64_t kMaxCoef = (int64_t)1 << 16, kMaxC0 = (int64_t)1 << 50;
  if (out->c0 > kMaxC0 || out->c0 < -kMaxC0) return 0;
  for (int i = 0; i < XIR_MAX_ROOT; i++)
    if (out->root_coef[i] > kMaxCoef || out->root_coef[i] < -kMaxCoef) return 0;
  for (int i = 0; i < XIR_MAX_DIMS; i++)
    if (out->dim_coef[i] > kMaxCoef || out->dim_coef[i] < -kMaxCoef) return 0;
  const xir_node *f = &p->nodes[n->args[fill_arg]];
  if (f->op != XIR_OP_CONST || f->type.elem != XIR_F32 || f->type.rank != 0) return 0;
  out->axis_dim = X;
  out->fill = f->imm.f;
  out->live = n->args[3 - fill_arg];
  return 1;
}

int64_t xir__prefix_mask_end(const xir__prefix_mask *m, const int64_t *root, const int64_t *dims,
                             int64_t extent) {
  int64_t e = m->c0;
  for (int i = 0; i < XIR_MAX_ROOT; i++)
    if (m->root_coef[i]) e = xir__iadd(e, xir__imul(m->root_coef[i], root[i]));
  for (int i = 0; i < XIR_MAX_DIMS; i++)
    if (m->dim_coef[i]) e = xir__iadd(e, xir__imul(m->dim_coef[i], dims[i]));
  return e < 0 ? 0 : e > extent ? extent : e;
}

/* ---- masked-work skipping ---- */

static int is_1d_over(const xir_type *t, int X) { return t->rank == 1 && t->axes[0] == X; }

/* The expensive 1-D tiles reached from consumer `root` (the walk of lower.c's count_mat_uses:
 * through tile nodes, stopping at rank-0 values, leaves and reductions) get `mark` in seen[];
 * each newly reached expensive node is appended to users[node] as consumer `cons`. */
static void mask_walk(const xir_program *p, int root, unsigned mark, unsigned *seen, int *stack,
                      int cons, int *first, int *later_bad, const uint8_t *skip) {
  int sp = 0;
  stack[sp++] = root;
  while (sp) {
    int id = stack[--sp];
    if (id < 0 || seen[id] == mark) continue;
    const xir_node *m = &p->nodes[id];
    if (m->type.rank == 0 || xir__is_inline_leaf(m->op) || xir__is_reduce(m->op)) continue;
    seen[id] = mark;
    if (xir__op_is_transcendental(m->op)) {
      if (first[id] < 0) first[id] = cons;
      else if (!(skip[cons] && p->nodes[cons].op == XIR_OP_STORE)) later_bad[id] = 1;
    }
    for (int a = 0; a < m->nargs; a++)
      if (m->args[a] >= 0) stack[sp++] = m->args[a];
  }
}

int xir__mask_skips(const xir_program *p, uint8_t *skip, xir__prefix_mask *mout) {
  memset(skip, 0, (size_t)p->nnodes);
  size_t nn = (size_t)p->nnodes + 1;
  uint8_t *inv = xir__calloc(nn, 1), *mv = xir__calloc(nn, 1);
  int *stack = xir__malloc(sizeof(int) * ((size_t)p->nnodes * (XIR_MAX_RANK + 2) + 1));
  int *first = xir__malloc(sizeof(int) * nn);
  int *later_bad = xir__calloc(nn, sizeof(int));
  unsigned *seen = xir__calloc(nn, sizeof(unsigned));
  int M = -1;
  if (!inv || !mv || !stack || !first || !later_bad || !seen) {
    M = -2;
    goto done;
  }
  xir__root_invariant(p, inv);
  xir__prefix_mask pm;
  for (int i = p->body_begin; i < p->nnodes && M < 0; i++) {
    if (inv[i] || !xir__prefix_mask_of(p, i, &pm)) continue;
    int rootdep = 0;
    for (int k = 0; k < p->nroot; k++) rootdep |= pm.root_coef[k] != 0;
    if (rootdep && is_1d_over(&p->nodes[i].type, pm.axis_dim)) M = i;
  }
  if (M < 0) goto done;
  int X = pm.axis_dim;
  /* mv[i]: node i is, at the masked positions, a function of the fill and rank-0 values */
  mv[M] = 1;
  for (int i = M + 1; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    if (!is_1d_over(&n->type, X) || n->op < XIR_OP_NEG || n->op == XIR_OP_LOAD ||
        n->op == XIR_OP_STORE || n->op == XIR_OP_IOTA || xir__is_reduce(n->op))
      continue;
    int ok = 1, any = 0;
    for (int a = 0; a < n->nargs && ok; a++) {
      const xir_node *q = &p->nodes[n->args[a]];
      if (mv[n->args[a]]) any = 1;
      else ok = q->type.rank == 0;
    }
    mv[i] = (uint8_t)(ok && any);
  }
  int any_skip = 0;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    if (xir__is_reduce(n->op) && n->type.rank == 0) {
      skip[i] = mv[n->args[0]];
    } else if (n->op == XIR_OP_STORE) {
      int v = n->args[n->nargs - 1], ok = mv[v], slices = 0;
      const xir_param *q = &p->params[n->ref];
      for (int k = 0; k < n->nargs - 1 && ok; k++) {
        if (n->args[k] < 0) ok = q->dims[k] == X && !slices++;
        else ok = p->nodes[n->args[k]].type.rank == 0;
      }
      skip[i] = (uint8_t)(ok && slices == 1);
    }
    any_skip |= skip[i];
  }
  /* shared expensive tiles: their first consumer covers every later one's range */
  for (int changed = 1; changed && any_skip;) {
    changed = 0;
    for (size_t i = 0; i < nn; i++) first[i] = -1;
    memset(later_bad, 0, sizeof(int) * nn);
    unsigned mark = 0;
    for (int i = p->body_begin; i < p->nnodes; i++) {
      const xir_node *n = &p->nodes[i];
      if (n->op != XIR_OP_STORE && !xir__is_reduce(n->op)) continue;
      mask_walk(p, n->op == XIR_OP_STORE ? n->args[n->nargs - 1] : n->args[0], ++mark, seen, stack,
                i, first, later_bad, skip);
    }
    for (int i = 0; i < p->nnodes; i++)
      if (first[i] >= 0 && later_bad[i] && skip[first[i]]) {
        skip[first[i]] = 0;
        changed = 1;
      }
  }
  any_skip = 0;
  for (int i = 0; i < p->nnodes; i++) any_skip |= skip[i];
  if (!any_skip) M = -1;
  else if (mout) *mout = pm;
done:
  xir__free(inv);
  xir__free(mv);
  xir__free(stack);
  xir__free(first);
  xir__free(later_bad);
  xir__free(seen);
  return M;
}

unsigned xir__row_group_size(const xir_program *p, const xir_shape *s, int X, unsigned ell,
                             unsigned W, int x_fixed, int masked, int pbuf) {
  if (ell < W || W < 1 || X < 0 || !x_fixed || p->nroot < 1 || masked || pbuf) return 1;
  int64_t q = (s->dims[X] + (int64_t)W - 1) / (int64_t)W;
  if (q > (W <= 8 ? 16 : 6)) return 1;
  int *depth = xir__calloc((size_t)p->nnodes + 1, sizeof(int));
  if (!depth) return 1;
  int over_x = 0, dmax = 0, math = 0;
  for (int i = 0; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    math |= n->type.rank > 0 && xir__is_vector_math(n->op);
    int dd = 0;
    for (int a = 0; a < n->nargs; a++)
      if (n->args[a] >= 0 && n->args[a] < i && depth[n->args[a]] > dd) dd = depth[n->args[a]];
    int red = n->op == XIR_OP_REDUCE_SUM || n->op == XIR_OP_REDUCE_MAX || n->op == XIR_OP_REDUCE_MIN;
    if (red && n->type.rank == 0) {
      const xir_type *in = &p->nodes[n->args[0]].type;
      over_x |= in->rank == 1 && in->axes[0] == X;
      dd++;
    }
    depth[i] = dd;
    if (dd > dmax) dmax = dd;
  }
  xir__free(depth);
  if (!over_x) return 1;
  unsigned m = dmax >= 2 && !math && q <= 2 ? 8
               : dmax >= 2 && (!math || q <= 3) ? 4
               : q <= 2 ? 4
               : q <= 3 ? 2
                        : 1;
  /* W <= 8 (no AVX-512: 16 vector registers, and on Zen 1 slow lane-crossing folds and scalar
   * sqrt/div): without vector math, 8 programs up to 6 packets and 4 up to 16. One thread, AOT
   * objects of the same candidate alternately (znver1, 2026-12-07), time against no group:
   * rmsnorm 2048 rows of 8 / 16 / 24 / 33 / 40 / 48 in groups of 8: 0.74 / 0.64 / 0.59 / 0.72 /
   * 0.57 / 0.48 (the rule above gave 4, 4, 2, 1, 1, 1: 1.16 / 0.90 / 1.12 / 1 / 1 / 1); layernorm
   * the same rows 0.52-0.64 (the rule above: 0.71-1.0); 1024 rows of 64 / 96 / 128: rmsnorm in
   * groups of 4 0.56 / 0.63 / 0.69 (l = 16), layernorm 0.69 / 0.84 / 0.81 (l = 32), groups of
   * 8 within 0.03 of that at twice the code; rows of 256 gain nothing (groups of 8 up to 1.10). */
  if (W <= 8 && !math) m = q <= 6 ? 8 : 4;
  return m > XIR__GROUP_MAX ? XIR__GROUP_MAX : m;
}

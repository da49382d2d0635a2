/* test_roundtrip.c — print∘parse on thousands of random valid programs built with the C builder.
 *
 * A seeded generator builds well-typed programs through include/xir.h: random dims, input and
 * output buffers, f32/i64 scalars (with and without defaults), `require` clauses that always
 * hold, one to three root axes, and a body of random ops — elementwise f32/i64/bool math,
 * comparisons, selects, f32(...) conversions, iota, root variables and dims as values,
 * reductions along named axes, loads with slices, root variables, iotas and computed (gather)
 * indices — ending in one store per output that meets the verifier's store rules. Some values
 * get user names (including names like `_1` that the printer's temporaries must avoid).
 *
 * For every program: xir_builder_finish succeeds (a failure is a generator or a verifier bug
 * and prints the seed), print, parse, print: the two texts are identical. Some small programs
 * are also run by the fp64 interpreter, once as built and once as reparsed: both runs must
 * agree bit for bit (an out-of-range gather index giving XIR_ERR_RUNTIME is fine, but then both
 * must report it). XIR_ROUNDTRIP_COUNT and XIR_ROUNDTRIP_SEED override the count and seed;
 * XIR_ROUNDTRIP_DUMP=N prints the first N programs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xir.h"

/* ---- a small seeded PRNG (splitmix64) ---- */
typedef struct prng {
  uint64_t s;
} prng;
static uint64_t next_u64(prng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static int rnd(prng *r, int n) { return n <= 1 ? 0 : (int)(next_u64(r) % (uint64_t)n); }
static int chance(prng *r, int percent) { return rnd(r, 100) < percent; }

/* ---- the generator ---- */

enum { MAXV = 512, TILE_LIMIT = 3 };

typedef struct vinfo {
  xir_value id;
  int elem;    /* XIR_F32 / XIR_I64 / XIR_BOOL */
  int rank;
  int axes[4]; /* dims */
  int direct_dim; /* root variables and iotas: the dim they range over (else -1) */
} vinfo;

typedef struct gen {
  prng r;
  xir_builder *b;
  int ndims;
  char names[256][16]; /* every declared name */
  int nnames;
  int nroot, root_dim[XIR_MAX_ROOT];
  int nbuf_in, buf_in[8];
  int nbuf_out, buf_out[4];
  int nscalar, scalar[4], scalar_elem[4];
  int buf_rank[XIR_MAX_PARAMS], buf_dims[XIR_MAX_PARAMS][XIR_MAX_RANK];
  int buf_elem[XIR_MAX_PARAMS]; /* inputs: XIR_F32 or XIR_I64 */
  vinfo v[MAXV];
  int nv;
  int big_ints;   /* the program holds i64 constants beyond 2^40 (not interpreted) */
  int next_under; /* next `_N` user name to try */
} gen;

static const char *kReserved[] = {
    "kernel", "root", "in", "require", "store", "load", "out", "f32", "i64", "iota", "inf",
    "nan", "reduce", "const", "dim", "param", "neg", "abs", "exp", "log", "tanh", "erf", "sqrt",
    "rsqrt", "sigmoid", "sin", "cos", "add", "sub", "mul", "div", "rem", "max", "min", "pow",
    "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not", "fma", "select"};

static int name_taken(const gen *g, const char *s) {
  for (size_t i = 0; i < sizeof kReserved / sizeof *kReserved; i++)
    if (strcmp(kReserved[i], s) == 0) return 1;
  for (int i = 0; i < g->nnames; i++)
    if (strcmp(g->names[i], s) == 0) return 1;
  return 0;
}

/* A fresh identifier; `upper` for dims. Sometimes `_N`, which the printer also uses. */
static const char *fresh(gen *g, int upper) {
  static const char lo[] = "abcdefghijklmnopqrstuvwxyz", up[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                    tail[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
  char s[16];
  for (;;) {
    if (!upper && chance(&g->r, 10)) {
      snprintf(s, sizeof s, "_%d", g->next_under);
      g->next_under += 1 + rnd(&g->r, 3);
    } else {
      int len = 1 + rnd(&g->r, chance(&g->r, 80) ? 3 : 12);
      s[0] = upper ? up[rnd(&g->r, 26)] : (chance(&g->r, 10) ? '_' : lo[rnd(&g->r, 26)]);
      for (int i = 1; i < len; i++) s[i] = tail[rnd(&g->r, (int)sizeof tail - 1)];
      s[len] = 0;
      if (s[0] == '_' && len == 1) continue;
    }
    if (!name_taken(g, s)) break;
  }
  assert_true(g->nnames < 256);
  snprintf(g->names[g->nnames], sizeof g->names[0], "%s", s);
  return g->names[g->nnames++];
}

static int has_axis(const vinfo *v, int d) {
  for (int i = 0; i < v->rank; i++)
    if (v->axes[i] == d) return 1;
  return 0;
}

/* Rank of the union of a's and b's axes. */
static int union_rank(const vinfo *a, const vinfo *b) {
  int n = a->rank;
  for (int i = 0; i < b->rank; i++)
    if (!has_axis(a, b->axes[i])) n++;
  return n;
}

static void union_into(vinfo *out, const vinfo *a) {
  for (int i = 0; i < a->rank; i++)
    if (!has_axis(out, a->axes[i])) out->axes[out->rank++] = a->axes[i];
}

static vinfo *push(gen *g, xir_value id, int elem, const vinfo *shape_of1, const vinfo *shape_of2,
                   const vinfo *shape_of3) {
  assert_true(id >= 0);
  assert_true(g->nv < MAXV);
  vinfo *v = &g->v[g->nv++];
  memset(v, 0, sizeof *v);
  v->id = id;
  v->elem = elem;
  v->direct_dim = -1;
  /* broadcast: the highest-rank operand's order first (the verifier's rule; order does not
   * matter to the generator, only the set) */
  if (shape_of1) union_into(v, shape_of1);
  if (shape_of2) union_into(v, shape_of2);
  if (shape_of3) union_into(v, shape_of3);
  if (chance(&g->r, 25)) xir_builder_name(g->b, id, fresh(g, 0));
  return v;
}

static vinfo *push_leaf(gen *g, xir_value id, int elem) {
  assert_true(id >= 0);
  assert_true(g->nv < MAXV);
  vinfo *v = &g->v[g->nv++];
  memset(v, 0, sizeof *v);
  v->id = id;
  v->elem = elem;
  v->direct_dim = -1;
  return v;
}

/* A random value of element type `elem` (made on the spot when the pool has none). */
static const vinfo *pick(gen *g, int elem, int max_rank);

static float rand_f32(gen *g) {
  switch (rnd(&g->r, 12)) {
    case 0: return 0.0f;
    case 1: return -0.0f;
    case 2: return INFINITY;
    case 3: return -INFINITY;
    case 4: return NAN;
    case 5: {
      uint32_t bits = (uint32_t)next_u64(&g->r);
      float f;
      memcpy(&f, &bits, 4);
      return f; /* any bit pattern: denormals, huge, NaN payloads */
    }
    case 6: return (float)rnd(&g->r, 100);
    case 7: return 1e-30f * (float)(1 + rnd(&g->r, 1000));
    default: return (float)((double)rnd(&g->r, 2000001) / 1000.0 - 1000.0);
  }
}

static int64_t rand_i64(gen *g) {
  switch (rnd(&g->r, 10)) {
    case 0:
      g->big_ints = 1;
      return chance(&g->r, 50) ? INT64_MAX : INT64_MIN;
    case 1:
      g->big_ints = 1;
      return (int64_t)next_u64(&g->r);
    case 2: return -rnd(&g->r, 50);
    default: return rnd(&g->r, 17);
  }
}

static void make_leaf(gen *g, int elem) {
  xir_builder *b = g->b;
  if (elem == XIR_F32) {
    int k = rnd(&g->r, 4);
    for (int i = 0; k == 0 && i < g->nscalar; i++)
      if (g->scalar_elem[i] == XIR_F32) {
        push_leaf(g, xir_builder_param_value(b, g->scalar[i]), XIR_F32);
        return;
      }
    push_leaf(g, xir_builder_const_f32(b, rand_f32(g)), XIR_F32);
    return;
  }
  if (elem == XIR_I64) {
    switch (rnd(&g->r, 5)) {
      case 0: push_leaf(g, xir_builder_dim_value(b, rnd(&g->r, g->ndims)), XIR_I64); return;
      case 1: {
        int k = rnd(&g->r, g->nroot);
        push_leaf(g, xir_builder_root_value(b, k), XIR_I64)->direct_dim = g->root_dim[k];
        return;
      }
      case 2:
        for (int i = 0; i < g->nscalar; i++)
          if (g->scalar_elem[i] == XIR_I64) {
            push_leaf(g, xir_builder_param_value(b, g->scalar[i]), XIR_I64);
            return;
          }
        /* fall through */
      default: push_leaf(g, xir_builder_const_i64(b, rand_i64(g)), XIR_I64); return;
    }
  }
  /* bool: a comparison of two fresh leaves */
  const vinfo *a = pick(g, XIR_I64, TILE_LIMIT);
  xir_value args[2] = {a->id, xir_builder_const_i64(b, rnd(&g->r, 5))};
  push(g, xir_builder_op(b, XIR_OP_LT + rnd(&g->r, 6), 2, args), XIR_BOOL, a, NULL, NULL);
}

static const vinfo *pick(gen *g, int elem, int max_rank) {
  int cand[MAXV], n = 0;
  for (int i = 0; i < g->nv; i++)
    if (g->v[i].elem == elem && g->v[i].rank <= max_rank) cand[n++] = i;
  if (n == 0 || chance(&g->r, 15)) {
    make_leaf(g, elem);
    if (g->v[g->nv - 1].rank <= max_rank) return &g->v[g->nv - 1];
    return pick(g, elem, max_rank);
  }
  return &g->v[cand[rnd(&g->r, n)]];
}

/* A second operand compatible with `a` (the union of axes stays within TILE_LIMIT). */
static const vinfo *pick_with(gen *g, int elem, const vinfo *a) {
  for (int tries = 0; tries < 8; tries++) {
    const vinfo *b = pick(g, elem, TILE_LIMIT);
    if (union_rank(a, b) <= TILE_LIMIT) return b;
  }
  make_leaf(g, elem == XIR_BOOL ? XIR_I64 : elem);
  if (elem == XIR_BOOL) return pick(g, XIR_BOOL, 0);
  return &g->v[g->nv - 1];
}

/* A load of a random input buffer: each index a slice, a root variable / iota of that dim, or a
 * computed i64 value (a gather; `safe` wraps it into range with a floor modulo). */
static void gen_load(gen *g) {
  xir_builder *b = g->b;
  int buf = g->buf_in[rnd(&g->r, g->nbuf_in)];
  int rank = g->buf_rank[buf];
  xir_index idx[XIR_MAX_RANK];
  vinfo shape = {0};
  for (int k = 0; k < rank; k++) {
    int d = g->buf_dims[buf][k];
    int choice = rnd(&g->r, 10);
    int root_of_d = -1;
    for (int q = 0; q < g->nroot; q++)
      if (g->root_dim[q] == d) root_of_d = q;
    if (choice < 4 && !has_axis(&shape, d) && shape.rank < TILE_LIMIT) {
      idx[k] = xir_slice();
      shape.axes[shape.rank++] = d;
    } else if (choice < 6 && root_of_d >= 0) {
      idx[k] = xir_at(xir_builder_root_value(b, root_of_d));
    } else if (choice < 7 && !has_axis(&shape, d) && shape.rank < TILE_LIMIT) {
      xir_value io = xir_builder_iota(b, d);
      idx[k] = xir_at(io);
      shape.axes[shape.rank++] = d;
    } else {
      /* computed index: (v % D) is in range; v alone may not be (a runtime error is fine) */
      const vinfo *v = pick_with(g, XIR_I64, &shape);
      xir_value x = v->id;
      /* a root variable or iota used directly must range over this dim */
      if (chance(&g->r, 85) || (v->direct_dim >= 0 && v->direct_dim != d)) {
        xir_value args[2] = {x, xir_builder_dim_value(b, d)};
        x = xir_builder_op(b, XIR_OP_REM, 2, args);
      }
      idx[k] = xir_at(x);
      union_into(&shape, v);
    }
  }
  xir_value id = xir_builder_load(b, buf, rank, idx);
  push(g, id, g->buf_elem[buf], &shape, NULL, NULL);
}

static void gen_op(gen *g) {
  xir_builder *b = g->b;
  int kind = rnd(&g->r, 16);
  switch (kind) {
    case 0:
    case 1: gen_load(g); return;
    case 2: { /* iota */
      int d = rnd(&g->r, g->ndims);
      vinfo t = {.rank = 1, .axes = {d}};
      push(g, xir_builder_iota(b, d), XIR_I64, &t, NULL, NULL)->direct_dim = d;
      return;
    }
    case 3: { /* reduction */
      const vinfo *a = NULL;
      for (int tries = 0; tries < 6 && !a; tries++) {
        const vinfo *c = pick(g, XIR_F32, TILE_LIMIT);
        if (c->rank > 0) a = c;
      }
      if (!a) return;
      int ax = a->axes[rnd(&g->r, a->rank)];
      xir_op op = XIR_OP_REDUCE_SUM + rnd(&g->r, 3);
      int dim = a->rank == 1 && chance(&g->r, 50) ? -1 : ax;
      vinfo t = {0};
      for (int i = 0; i < a->rank; i++)
        if (a->axes[i] != ax) t.axes[t.rank++] = a->axes[i];
      push(g, xir_builder_reduce(b, op, a->id, dim), XIR_F32, &t, NULL, NULL);
      return;
    }
    case 4: { /* f32(i64 | bool) */
      const vinfo *a = pick(g, chance(&g->r, 70) ? XIR_I64 : XIR_BOOL, TILE_LIMIT);
      push(g, xir_builder_op(b, XIR_OP_TOF32, 1, &a->id), XIR_F32, a, NULL, NULL);
      return;
    }
    case 5: { /* select */
      const vinfo *c = pick(g, XIR_BOOL, TILE_LIMIT);
      int e = rnd(&g->r, 10) < 6 ? XIR_F32 : rnd(&g->r, 2) ? XIR_I64 : XIR_BOOL;
      const vinfo *x = pick_with(g, e, c);
      vinfo cx = {0};
      union_into(&cx, c);
      union_into(&cx, x);
      const vinfo *y = pick_with(g, e, &cx);
      xir_value args[3] = {c->id, x->id, y->id};
      push(g, xir_builder_op(b, XIR_OP_SELECT, 3, args), e, c, x, y);
      return;
    }
    case 6: { /* fma */
      const vinfo *x = pick(g, XIR_F32, TILE_LIMIT);
      const vinfo *y = pick_with(g, XIR_F32, x);
      vinfo xy = {0};
      union_into(&xy, x);
      union_into(&xy, y);
      const vinfo *z = pick_with(g, XIR_F32, &xy);
      xir_value args[3] = {x->id, y->id, z->id};
      push(g, xir_builder_op(b, XIR_OP_FMA, 3, args), XIR_F32, x, y, z);
      return;
    }
    case 7: { /* comparisons */
      int e = chance(&g->r, 50) ? XIR_F32 : XIR_I64;
      const vinfo *x = pick(g, e, TILE_LIMIT), *y = pick_with(g, e, x);
      xir_value args[2] = {x->id, y->id};
      push(g, xir_builder_op(b, XIR_OP_LT + rnd(&g->r, 6), 2, args), XIR_BOOL, x, y, NULL);
      return;
    }
    case 8: { /* bool logic */
      if (chance(&g->r, 30)) {
        const vinfo *x = pick(g, XIR_BOOL, TILE_LIMIT);
        push(g, xir_builder_op(b, XIR_OP_NOT, 1, &x->id), XIR_BOOL, x, NULL, NULL);
      } else {
        const vinfo *x = pick(g, XIR_BOOL, TILE_LIMIT), *y = pick_with(g, XIR_BOOL, x);
        xir_value args[2] = {x->id, y->id};
        push(g, xir_builder_op(b, chance(&g->r, 50) ? XIR_OP_AND : XIR_OP_OR, 2, args),
             XIR_BOOL, x, y, NULL);
      }
      return;
    }
    case 9:
    case 10: { /* i64 arithmetic */
      static const xir_op ops[] = {XIR_OP_ADD, XIR_OP_SUB, XIR_OP_MUL, XIR_OP_DIV,
                                   XIR_OP_REM, XIR_OP_MAX, XIR_OP_MIN};
      if (chance(&g->r, 20)) {
        const vinfo *x = pick(g, XIR_I64, TILE_LIMIT);
        push(g, xir_builder_op(b, chance(&g->r, 50) ? XIR_OP_NEG : XIR_OP_ABS, 1, &x->id),
             XIR_I64, x, NULL, NULL);
        return;
      }
      const vinfo *x = pick(g, XIR_I64, TILE_LIMIT), *y = pick_with(g, XIR_I64, x);
      xir_value args[2] = {x->id, y->id};
      push(g, xir_builder_op(b, ops[rnd(&g->r, 7)], 2, args), XIR_I64, x, y, NULL);
      return;
    }
    default: { /* f32 math */
      static const xir_op un[] = {XIR_OP_NEG, XIR_OP_ABS,  XIR_OP_EXP,     XIR_OP_LOG,
                                  XIR_OP_TANH, XIR_OP_ERF, XIR_OP_SQRT,    XIR_OP_RSQRT,
                                  XIR_OP_SIGMOID, XIR_OP_SIN, XIR_OP_COS};
      static const xir_op bin[] = {XIR_OP_ADD, XIR_OP_SUB, XIR_OP_MUL, XIR_OP_DIV,
                                   XIR_OP_MAX, XIR_OP_MIN, XIR_OP_POW};
      if (chance(&g->r, 35)) {
        const vinfo *x = pick(g, XIR_F32, TILE_LIMIT);
        push(g, xir_builder_op(b, un[rnd(&g->r, 11)], 1, &x->id), XIR_F32, x, NULL, NULL);
        return;
      }
      const vinfo *x = pick(g, XIR_F32, TILE_LIMIT), *y = pick_with(g, XIR_F32, x);
      xir_value args[2] = {x->id, y->id};
      push(g, xir_builder_op(b, bin[rnd(&g->r, 7)], 2, args), XIR_F32, x, y, NULL);
      return;
    }
  }
}

/* An f32 value whose axes are all in `tile` (reducing away the others). */
static xir_value value_for_store(gen *g, const vinfo *tile) {
  const vinfo *v = pick(g, XIR_F32, TILE_LIMIT);
  vinfo cur = *v;
  while (1) {
    int bad = -1;
    for (int i = 0; i < cur.rank; i++)
      if (!has_axis(tile, cur.axes[i])) bad = cur.axes[i];
    if (bad < 0) break;
    xir_value r = xir_builder_reduce(g->b, XIR_OP_REDUCE_SUM + rnd(&g->r, 3), cur.id, bad);
    vinfo t = {0};
    for (int i = 0; i < cur.rank; i++)
      if (cur.axes[i] != bad) t.axes[t.rank++] = cur.axes[i];
    vinfo *pushed = push(g, r, XIR_F32, &t, NULL, NULL);
    cur = *pushed;
  }
  return cur.id;
}

/* Builds one random program; returns the builder's finish status and the program. */
static xir_status generate(uint64_t seed, xir_program **out, xir_diag *d, int *big_ints) {
  static gen g; /* large: keep it off the stack */
  memset(&g, 0, sizeof g);
  g.r.s = seed;
  g.next_under = 1 + rnd(&g.r, 4);
  char kname[16];
  snprintf(kname, sizeof kname, "%s", fresh(&g, 0));
  assert_int_equal(xir_builder_new(kname, &g.b), XIR_OK);
  xir_builder *b = g.b;
  g.ndims = 1 + rnd(&g.r, 5);
  for (int i = 0; i < g.ndims; i++) assert_int_equal(xir_builder_dim(b, fresh(&g, 1)), i);
  /* the root domain: distinct dims */
  int perm[8];
  for (int i = 0; i < g.ndims; i++) perm[i] = i;
  for (int i = g.ndims - 1; i > 0; i--) {
    int j = rnd(&g.r, i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  g.nroot = 1 + rnd(&g.r, g.ndims < 3 ? g.ndims : 3);
  for (int k = 0; k < g.nroot; k++) g.root_dim[k] = perm[k];
  /* parameters, in a random interleaving of inputs, outputs and scalars */
  int nin = 1 + rnd(&g.r, 3), nout = 1 + rnd(&g.r, 2), nsc = rnd(&g.r, 4);
  while (nin + nout + nsc > 0) {
    int which = rnd(&g.r, nin + nout + nsc);
    if (which < nin) {
      int rank = 1 + rnd(&g.r, 3), dims[XIR_MAX_RANK];
      for (int k = 0; k < rank; k++) dims[k] = rnd(&g.r, g.ndims);
      int elem = chance(&g.r, 25) ? XIR_I64 : XIR_F32; /* i64 inputs: index values */
      int p = xir_builder_buffer(b, fresh(&g, 0), elem, rank, dims, 0);
      assert_true(p >= 0);
      g.buf_elem[p] = elem;
      g.buf_rank[p] = rank;
      memcpy(g.buf_dims[p], dims, sizeof dims);
      g.buf_in[g.nbuf_in++] = p;
      nin--;
    } else if (which < nin + nout) {
      /* every root dim once (its variable indexes it), plus up to two slice dims */
      int dims[XIR_MAX_RANK], rank = 0;
      for (int k = 0; k < g.nroot; k++) dims[rank++] = g.root_dim[k];
      int extra = rnd(&g.r, 3);
      for (int e = 0; e < extra; e++) {
        int d = rnd(&g.r, g.ndims), dup = 0;
        for (int k = g.nroot; k < rank; k++) dup |= dims[k] == d;
        if (!dup) dims[rank++] = d;
      }
      for (int i = rank - 1; i > 0; i--) {
        int j = rnd(&g.r, i + 1), t = dims[i];
        dims[i] = dims[j];
        dims[j] = t;
      }
      int p = xir_builder_buffer(b, fresh(&g, 0), XIR_F32, rank, dims, 1);
      assert_true(p >= 0);
      g.buf_rank[p] = rank;
      memcpy(g.buf_dims[p], dims, sizeof dims);
      g.buf_out[g.nbuf_out++] = p;
      nout--;
    } else {
      int e = chance(&g.r, 50) ? XIR_F32 : XIR_I64, has = chance(&g.r, 60);
      double dv = e == XIR_F32 ? (double)rand_f32(&g) : (double)(rnd(&g.r, 2001) - 1000);
      if (e == XIR_F32 && isnan(dv)) has = 0; /* nan is not a default literal */
      int p = xir_builder_scalar(b, fresh(&g, 0), e, has, dv);
      assert_true(p >= 0);
      g.scalar_elem[g.nscalar] = e;
      g.scalar[g.nscalar++] = p;
      nsc--;
    }
  }
  /* require clauses that always hold: or(E > c, E <= c) over dims and literals */
  int nreq = rnd(&g.r, 3);
  for (int i = 0; i < nreq; i++) {
    xir_value e = xir_builder_dim_value(b, rnd(&g.r, g.ndims));
    int terms = rnd(&g.r, 4);
    for (int t = 0; t < terms; t++) {
      static const xir_op ops[] = {XIR_OP_ADD, XIR_OP_SUB, XIR_OP_MUL, XIR_OP_MAX, XIR_OP_MIN};
      xir_value rhs = chance(&g.r, 50) ? xir_builder_dim_value(b, rnd(&g.r, g.ndims))
                                       : xir_builder_const_i64(b, rnd(&g.r, 9) - 4);
      xir_value args[2] = {e, rhs};
      e = xir_builder_op(b, ops[rnd(&g.r, 5)], 2, args);
    }
    xir_value c = xir_builder_const_i64(b, rnd(&g.r, 20));
    xir_value a1[2] = {e, c}, a2[2] = {e, c};
    xir_value gt = xir_builder_op(b, XIR_OP_GT, 2, a1), le = xir_builder_op(b, XIR_OP_LE, 2, a2);
    xir_value both[2] = {gt, le};
    xir_builder_require(b, chance(&g.r, 50) ? xir_builder_op(b, XIR_OP_OR, 2, both)
                                            : (xir_value)xir_builder_op(b, XIR_OP_GE, 2,
                                                  (xir_value[2]){xir_builder_dim_value(b, 0),
                                                                 xir_builder_const_i64(b, 1)}));
  }
  for (int k = 0; k < g.nroot; k++) assert_int_equal(xir_builder_root(b, fresh(&g, 0), perm[k]), k);
  /* the body */
  int nops = 1 + rnd(&g.r, chance(&g.r, 10) ? 60 : 15);
  for (int i = 0; i < nops && g.nv < MAXV - 64; i++) gen_op(&g);
  /* one store per output */
  for (int o = 0; o < g.nbuf_out; o++) {
    int p = g.buf_out[o];
    xir_index idx[XIR_MAX_RANK];
    vinfo tile = {0};
    int used[XIR_MAX_ROOT] = {0};
    for (int k = 0; k < g.buf_rank[p]; k++) {
      int d = g.buf_dims[p][k], q = -1;
      for (int r = 0; r < g.nroot; r++)
        if (g.root_dim[r] == d && !used[r]) q = r;
      if (q >= 0) {
        used[q] = 1;
        idx[k] = xir_at(xir_builder_root_value(b, q));
      } else {
        idx[k] = xir_slice();
        tile.axes[tile.rank++] = d;
      }
    }
    xir_value v = value_for_store(&g, &tile);
    xir_builder_store(b, p, g.buf_rank[p], idx, v);
  }
  *big_ints = g.big_ints;
  return xir_builder_finish(b, out, d);
}

/* ---- interpretation ---- */

typedef struct run {
  xir_status status;
  char msg[1024];
  double *out[XIR_MAX_PARAMS];
  size_t n[XIR_MAX_PARAMS];
} run;

static void run_free(run *r) {
  for (int i = 0; i < XIR_MAX_PARAMS; i++) free(r->out[i]);
}

static void interpret(const xir_program *p, const xir_shape *sh, void **in, run *r) {
  xir_arg args[XIR_MAX_PARAMS];
  memset(args, 0, sizeof args);
  memset(r, 0, sizeof *r);
  for (int i = 0; i < xir_program_num_params(p); i++) {
    xir_param_info info;
    assert_int_equal(xir_program_param(p, i, &info), XIR_OK);
    if (info.kind == XIR_PARAM_SCALAR) {
      args[i].use_default = info.has_default;
      args[i].scalar = info.elem == XIR_I64 ? 3 : 0.75;
    } else if (info.is_output) {
      r->n[i] = xir_param_numel(p, i, sh);
      r->out[i] = calloc(r->n[i] ? r->n[i] : 1, sizeof(double));
      args[i].out64 = r->out[i];
    } else {
      args[i].in = in[i];
    }
  }
  xir_diag d;
  r->status = xir_interpret(p, sh, args, &d);
  if (r->status) snprintf(r->msg, sizeof r->msg, "%s", d.msg);
}

/* Bitwise equal, except that every NaN equals every NaN: `nan` in text has no payload or sign,
 * so a NaN constant built in C with a payload reads back as the default NaN. */
static int same_values(const double *a, const double *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (isnan(a[i]) && isnan(b[i])) continue;
    if (memcmp(&a[i], &b[i], sizeof(double)) != 0) return 0;
  }
  return 1;
}

static uint64_t env_u64(const char *name, uint64_t dflt) {
  const char *s = getenv(name);
  return s && *s ? strtoull(s, NULL, 0) : dflt;
}

static void test_random_programs_roundtrip(void **state) {
  (void)state;
  uint64_t base = env_u64("XIR_ROUNDTRIP_SEED", 20240601);
  int count = (int)env_u64("XIR_ROUNDTRIP_COUNT", 20000);
  int dump = (int)env_u64("XIR_ROUNDTRIP_DUMP", 0); /* print the first N programs */
  int interpreted = 0, runtime_errors = 0, max_len = 0;
  long total_len = 0;
  for (int i = 0; i < count; i++) {
    uint64_t seed = base * 1000003u + (uint64_t)i;
    xir_program *p = NULL;
    xir_diag d;
    char buf[2048];
    int big_ints = 0;
    xir_status s = generate(seed, &p, &d, &big_ints);
    if (s) fail_msg("seed %llu: builder_finish failed (generator or verifier bug): %s",
                    (unsigned long long)seed, xir_diag_format(&d, buf, sizeof buf));
    char *t1 = NULL, *t2 = NULL;
    assert_int_equal(xir_program_print(p, &t1, &d), XIR_OK);
    xir_program *q = NULL;
    if (xir_program_parse(t1, strlen(t1), "printed.xir", &q, &d))
      fail_msg("seed %llu: the printed program does not parse: %s\n%s",
               (unsigned long long)seed, xir_diag_format(&d, buf, sizeof buf), t1);
    assert_int_equal(xir_program_print(q, &t2, &d), XIR_OK);
    if (strcmp(t1, t2) != 0)
      fail_msg("seed %llu: print(parse(print(p))) != print(p):\n%s\n---\n%s",
               (unsigned long long)seed, t1, t2);
    if (i < dump) printf("# seed %llu\n%s\n", (unsigned long long)seed, t1);
    int len = (int)strlen(t1);
    total_len += len;
    if (len > max_len) max_len = len;

    /* Interpret some small programs, built and reparsed: the same results. */
    if (i % 7 == 0 && !big_ints) {
      prng r = {seed ^ 0xabcdefull};
      xir_shape sh;
      memset(&sh, 0, sizeof sh);
      sh.ndims = xir_program_num_dims(p);
      for (int k = 0; k < sh.ndims; k++) sh.dims[k] = 1 + rnd(&r, 4);
      if (xir_shape_check(p, &sh, &d) == XIR_OK) {
        void *in[XIR_MAX_PARAMS] = {0};
        for (int k = 0; k < xir_program_num_params(p); k++) {
          size_t n = xir_param_numel(p, k, &sh);
          xir_param_info info;
          assert_int_equal(xir_program_param(p, k, &info), XIR_OK);
          if (info.kind == XIR_PARAM_BUFFER && !info.is_output && info.elem == XIR_I64) {
            int64_t *v = malloc((n ? n : 1) * sizeof(int64_t)); /* small, some negative */
            for (size_t e = 0; e < n; e++) v[e] = rnd(&r, 9) - 2;
            in[k] = v;
          } else {
            float *v = malloc((n ? n : 1) * sizeof(float));
            for (size_t e = 0; e < n; e++) v[e] = (float)(rnd(&r, 4001) - 2000) / 1000.0f;
            in[k] = v;
          }
        }
        run a, c;
        interpret(p, &sh, in, &a);
        interpret(q, &sh, in, &c);
        if (a.status != XIR_OK && a.status != XIR_ERR_RUNTIME)
          fail_msg("seed %llu: interpreter status %s: %s\n%s", (unsigned long long)seed,
                   xir_status_name(a.status), a.msg, t1);
        assert_int_equal(a.status, c.status);
        if (a.status == XIR_OK) {
          for (int k = 0; k < XIR_MAX_PARAMS; k++)
            if (a.out[k] && !same_values(a.out[k], c.out[k], a.n[k]))
              fail_msg("seed %llu: the reparsed program computes other values\n%s",
                       (unsigned long long)seed, t1);
        } else {
          runtime_errors++;
        }
        interpreted++;
        run_free(&a);
        run_free(&c);
        for (int k = 0; k < XIR_MAX_PARAMS; k++) free(in[k]);
      }
    }
    xir_free(t1);
    xir_free(t2);
    xir_program_free(p);
    xir_program_free(q);
  }
  printf("roundtrip: %d programs (mean %ld, max %d bytes printed), %d interpreted "
         "(%d with a runtime error)\n",
         count, total_len / (count ? count : 1), max_len, interpreted, runtime_errors);
  assert_true(interpreted > count / 20);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_programs_roundtrip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

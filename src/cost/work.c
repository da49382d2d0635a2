/* work.c — execution work (exact counts + priors) and the analytic default cost policy.
 *
 * Counts come from the bridge (Q, L) and the runtime's own launch resolution (G', C, h), so the
 * model and the runtime can never disagree on them; the critical counts use SPEC.md's closed form.
 * The priors walk the program the way lower.c emits it: rank-0 values once per unit, each
 * consumer (reduction or store) a loop nest that recomputes its tile expression pointwise. Op
 * weights are one table (kWeights): data, not code. */
#include <math.h>
#include <string.h>

#include "cost/work_attn.h"
#include "ir/program.h"
#include "xir_plan.h"
#include "xir_runtime.h"

/* Relative cost of one vector op of each kind (an add = 1). See docs/planner.md. */
static const struct {
  xir_op op;
  double w;
} kWeights[] = {
    {XIR_OP_DIV, 4},   {XIR_OP_SQRT, 6},  {XIR_OP_RSQRT, 8},   {XIR_OP_EXP, 14},
    {XIR_OP_LOG, 16},  {XIR_OP_TANH, 20}, {XIR_OP_ERF, 22},    {XIR_OP_SIGMOID, 18},
    {XIR_OP_SIN, 28},  {XIR_OP_COS, 28},  {XIR_OP_POW, 40},    {XIR_OP_REM, 3},
    {XIR_OP_CONST, 0}, {XIR_OP_DIM, 0},   {XIR_OP_PARAM, 0},   {XIR_OP_ROOT, 0},
    {XIR_OP_IOTA, 0.5},
};
static const double kDefaultWeight = 1.0;
/* sigmoid16 (a sigmoid whose value only reaches 16-bit stores): 15 vector ops against sigmoid's
 * 21 (the AVX-512 FMA variant's object code at W = 16). */
static const double kSigmoid16Weight = 12;
static const double kGatherPerLane = 0.5;  /* a gather costs about half an op per lane */
/* Without AVX-512 (W ≤ 8) a gather is one lane at a time: LLVM scalarizes it where the target
 * prefers no gather (AMD Zen 1-3), and AVX2's vgatherdps takes about a cycle a lane where it is
 * used. rmsnorm 16384x8 at ℓ = 1 (8 gathers and 8 scatters a packet) on the 2026-12-07 Zen 1
 * EPYC (W = 8): 159 us against 60 for ℓ = 8, about 19 cycles a gathered packet, 7 units of
 * ns_per_arith a lane (xir bench --suite peers --kernels rmsnorm --configs
 * 'default,fixed:l=1,B=64,G=128,fixed:l=8,B=64,G=128'). */
static const double kGatherPerLaneNarrow = 6;
static double gather_per_lane(double W) { return W >= 16 ? kGatherPerLane : kGatherPerLaneNarrow; }
static const double kGatherBytesPerLane = 16; /* a gathered lane touches part of a cache line */
/* Latency of one dependent vector accumulation, in the same units (an add's throughput cost is 1;
 * its latency is several cycles at two adds per cycle). */
static const double kAccumulateLatency = 8;
/* reduce.max/min accumulate with llvm.maximum/minimum (NaN-propagating, −0 < +0), which x86
 * expands to about six vector ops a step (sign test, blend, merge, NaN compare, max, merge; see
 * docs/planner.md), where a sum's step is one add. */
static const double kMaxAccumulateOps = 6;
/* A consumer's loop over its tile (the chunks for ℓ > 1): the induction step, compare and branch
 * of one iteration, shared by the unit's k packets — what makes ℓ = 128 (8 packets an iteration)
 * cheaper than ℓ = 64 on the same row, as measured. */
static const double kLoopOverhead = 2;
/* Register pressure of vector math in a chunk loop. A vector-math body (exp, log, tanh, erf,
 * sigmoid, sin, cos, pow: docs/vmath.md) keeps about kMathLive vectors live per packet while it
 * runs (its argument, the reduced argument, the polynomial, the scale, the accumulator or the
 * value stored) and about kMathConsts vector constants for the whole loop (its coefficients,
 * bounds and masks). A unit's k packets evaluate their bodies side by side, so past the 32 zmm
 * registers LLVM spills and reloads, about one op per missing register an iteration. Measured
 * (2026-12-06, session 37; one worker, `xir bench --suite peers --kernels softmax_mask,
 * softmax_causal --configs default,fixed:l=L,B=128,G=0 --workers 1`): softmax_mask 400x3000
 * l = 16/32/64/128: 441/432/427/467 us, 64x4000 94.6/93.5/94.8/100.4; softmax_causal 400x3000
 * l = 32/64/128: 90.5/94.7/109.1 — l = 128 (k = 8: 8 exp bodies in flight, 21 reloads an
 * iteration of the sum loop in llc's listing) 6-20 % slower, l = 64 (k = 4) not; layernorm and
 * rmsnorm (no vector math) alike at every l. Without the term the model preferred l = 128 by its
 * loop overhead, and the default's regret on eight softmax_mask shapes was 1.067 (geomean). */
static const double kMathLive = 5;
static const double kMathConsts = 12;
/* The vector registers: 32 with AVX-512 (W = 16), 16 ymm without it (W <= 8). */
static double vector_regs(unsigned W) { return W >= 16 ? 32 : 16; }
/* The vector registers (of 32) that chunk-invariant loads may hold for a whole unit. */
static const int64_t kChunkInvariantRegs = 16;
/* What a unit's repeated or shared tiles may hold and still come from L1. */
static const double kNearBytes = 32768;

static double op_weight(int op) {
  for (size_t i = 0; i < sizeof kWeights / sizeof kWeights[0]; i++)
    if ((int)kWeights[i].op == op) return kWeights[i].w;
  return kDefaultWeight;
}

uint64_t xir_critical_count(uint64_t N, uint64_t R, uint64_t C, uint32_t h) {
  if (C == 0 || h == 0) return 0;
  if (h == 1) return N;
  uint64_t F = C - 1;
  uint64_t last = N - F * R;
  uint64_t a = ((F + h - 1) / h) * R;
  uint64_t b = (F / h) * R + last;
  return a > b ? a : b;
}

typedef struct wctx {
  const xir_program *p;
  const xir_shape *s;
  const xir_candidate *c;
  unsigned k;
  unsigned *mark;
  unsigned gen;
  uint8_t *stored;  /* expensive 1-D tiles a previous 1-D consumer loop stored (lower.c reuses them) */
  int nest_rank;    /* rank of the current consumer's loop nest */
  uint8_t *hoist;   /* tiles computed once per native call (xir__hoisted_tiles) */
  int precompute;   /* costing a hoisted tile's own expression */
  uint8_t *cinv;    /* ℓ ≥ W: 1-D tiles that are the same in every chunk of a unit (see below) */
  xir__pbuf *pbuf;  /* ℓ ≥ W: per node, its period buffer (xir__period_buffer; len 0: none) */
  int any_pbuf;
  int unroll;       /* the most full chunks a chunk loop runs straight-line (xir__chunk_unroll) */
  /* The unit's serial part: its rank-0 reductions' combining trees and dependent accumulations
   * beyond their throughput, and its rank-0 ops — a chain each program waits on, which a row
   * group (xir__row_group_size) overlaps across its programs; smath: the rank-0 ops' math part
   * (rmsnorm's sqrt and div), which a group computes once for its programs, in one vector */
  double serial, smath;
  double hmath, hsmath; /* the rank-0 div, sqrt and rsqrt of math and smath (hw_math_per_packet) */
  int pcompute;     /* costing a period buffer's own expression */
  int once;         /* costing a chunk-invariant tile: charged once per unit */
  double once_a, once_b;
  double m_cur, m_once;  /* the math part (ops weighing more than 1) of the accumulating costs */
  int vm_cur;            /* vector-math bodies (expensive ops) evaluated per packet in this loop */
  double steps[XIR_CHAIN_KINDS]; /* dependent accumulation steps per unit, by kind */
  uint8_t *inv;          /* root-invariant nodes (xir__root_invariant) */
  uint8_t *loaded;       /* loads an earlier consumer loop of the unit already made */
  int64_t *iperiod;      /* per node, its period along the inner axis (xir__inner_period), or NULL */
  double arith, bytes, math;
  /* Masked-work skipping: the consumers bounded by the mask (xir__mask_skips), their costs per
   * live iteration (sk_*) and per masked iteration (fl_*: a skipped store writes the masked
   * value there); the unit's cost is arith + n·sk_a + (I − n)·fl_a for n live iterations of I. */
  uint8_t *skip;
  uint8_t *narrow;  /* xir__narrow_values: a sigmoid lower.c emits as vmath's sigmoid16 */
  double sk_a, sk_b, sk_m, fl_a, fl_b;
  double sk_steps[XIR_CHAIN_KINDS]; /* dependent steps per live iteration of the skipped rank-0
                                     * reductions, by kind (mask_counts scales them) */
  /* lower.c runs the live iterations every lane of which is live as a loop of their own, where
   * the mask is its live operand: their cost per iteration (sl_*), counted with mask_live = the
   * mask's node (-1 otherwise) */
  double sl_a, sl_b, sl_m;
  int mask_id, mask_live, mask_live_arg;
  uint8_t *snap;    /* stored[] and loaded[] before a skipped consumer (2 × nodes) */
  /* ℓ ≥ W with X not a multiple of ℓ: the peeled tail chunk (lower.c, tile_loops_at part 1)
   * masks its lanes past the row's end: the inner slice is a masked vector load/store, but no
   * window load is used there (gathers); tail set while costing that chunk; tsnap: stored[] and
   * loaded[] before the consumer, and after (4 × nodes) */
  int ragged, tail;
  uint8_t *sib; /* per node: its sibling group's size on a group's first reduction (sibling_groups) */
  double lfrac; /* kind 5 (access_kind): the fraction of chunks whose local window load is right */
  double sfrac; /* ... and of those (not right) whose packets split into two window loads */
  uint8_t *tsnap;
} wctx;

static int lane_dep(const wctx *w, int id) {
  const xir_node *n = &w->p->nodes[id];
  unsigned ell = w->c->local, W = w->c->W;
  if (n->op == XIR_OP_ROOT) return ell < W;
  if (n->op == XIR_OP_IOTA) return ell > 1 && n->ref == w->c->inner_dim;
  if (n->op == XIR_OP_IOTA || xir__is_inline_leaf(n->op)) return 0;
  for (int i = 0; i < n->nargs; i++)
    if (n->args[i] >= 0 && lane_dep(w, n->args[i])) return 1;
  return 0;
}

/* ℓ = 1: 1 when the access's element offset is the root program's flattened index, as the
 * lowering's address analysis finds it (lower.c, access_offset): every lane-dependent index is a
 * root variable itself (computed indices are clamped, which hides their form), and the offset is
 * Σ flat_stride[a]·root[a] over the root axes in perm order. Then consecutive root programs
 * touch consecutive elements, across row boundaries too. */
static int flattened_root_index(const wctx *w, const xir_node *n, int nidx) {
  const xir_param *q = &w->p->params[n->ref];
  int64_t dc[XIR_MAX_ROOT] = {0}, flat[XIR_MAX_ROOT], stride = 1, S = 1;
  for (int k = nidx - 1; k >= 0; k--) {
    int a = n->args[k];
    if (a >= 0 && lane_dep(w, a)) {
      const xir_node *ix = &w->p->nodes[a];
      if (ix->op != XIR_OP_ROOT) return 0;
      dc[ix->ref] += stride;
    }
    stride *= w->s->dims[q->dims[k]];
  }
  for (int i = w->c->nperm - 1; i >= 0; i--) {
    flat[w->c->perm[i]] = S;
    S *= w->s->dims[w->p->root[w->c->perm[i]].dim];
  }
  for (int i = 0; i < w->p->nroot; i++)
    if (dc[i] != flat[i]) return 0;
  return 1;
}

/* The value of integer node id at element c of the inner axis, where it depends on nothing but
 * c, constants and dims (RoPE's (c % HD) / 2); 0 otherwise. */
static int const_index_at(const wctx *w, int id, int64_t c, int depth, int64_t *out) {
  const xir_node *n = &w->p->nodes[id];
  int64_t a, b;
  if (depth > 32) return 0;
  switch (n->op) {
    case XIR_OP_CONST: *out = n->imm.i; return 1;
    case XIR_OP_DIM: *out = w->s->dims[n->ref]; return 1;
    case XIR_OP_IOTA:
      if (n->ref != w->c->inner_dim) return 0;
      *out = c;
      return 1;
    case XIR_OP_NEG:
      if (!const_index_at(w, n->args[0], c, depth + 1, &a) || a == INT64_MIN) return 0;
      *out = -a;
      return 1;
    case XIR_OP_ADD: case XIR_OP_SUB: case XIR_OP_MUL: case XIR_OP_DIV: case XIR_OP_REM:
    case XIR_OP_MIN: case XIR_OP_MAX:
      if (!const_index_at(w, n->args[0], c, depth + 1, &a) || !const_index_at(w, n->args[1], c, depth + 1, &b))
        return 0;
      return xir__const_int_op(n->op, a, b, out);
    default: return 0;
  }
}

/* 1 < ℓ < W, contiguous buffers (lower.c's lin path, access_offset): the offsets of an access's
 * W lanes relative to the unit's, pi[g] = A·⌊g/ℓ⌋ + f(g mod ℓ), when they are compile-time —
 * every lane-dependent index is a root variable (the root axes in flat order, A·flat_stride),
 * the inner axis' slice or iota, or, on a row of one chunk (N ≤ ℓ: the chunk starts at a
 * constant), an expression of iota, constants and dims (clamped into its dim). live[g]: the lane
 * is inside the row (a row shorter than ℓ masks the rest). */
static int small_row_offsets(const wctx *w, const xir_node *n, int nidx, int64_t *pi, int *live) {
  const xir_param *q = &w->p->params[n->ref];
  unsigned ell = w->c->local, W = w->c->W;
  int X = w->c->inner_dim;
  if (ell <= 1 || ell >= W || X < 0 || W > 16) return 0;
  /* the lowering's lin path needs the root extents inside the outermost at compile time
   * (lower.c: small_lin) and the chunk's element index on a compile-time inner axis */
  if (!(w->c->fixed_dims >> X & 1)) return 0;
  for (int a = 0; a < w->p->nroot; a++)
    if (a != w->c->perm[0] && !(w->c->fixed_dims >> w->p->root[a].dim & 1)) return 0;
  int64_t N = w->s->dims[X], dc[XIR_MAX_ROOT] = {0}, f[16] = {0}, stride = 1;
  for (int k = nidx - 1; k >= 0; k--) {
    int a = n->args[k];
    if (a < 0) {
      if (q->dims[k] == X)
        for (unsigned j = 0; j < ell; j++) f[j] += stride * (int64_t)j;
    } else if (lane_dep(w, a)) {
      const xir_node *ix = &w->p->nodes[a];
      if (ix->op == XIR_OP_ROOT) {
        dc[ix->ref] += stride;
      } else if (ix->op == XIR_OP_IOTA) {
        for (unsigned j = 0; j < ell; j++) f[j] += stride * (int64_t)j;
      } else {
        int64_t v, hi = w->s->dims[q->dims[k]] - 1;
        if (N > (int64_t)ell) return 0;
        for (unsigned j = 0; j < ell; j++) {
          if (!const_index_at(w, a, (int64_t)j, 0, &v)) return 0;
          f[j] += stride * (v < 0 ? 0 : v > hi ? hi : v);
        }
      }
    }
    stride *= w->s->dims[q->dims[k]];
  }
  int64_t flat[XIR_MAX_ROOT], S = 1;
  for (int i = w->c->nperm - 1; i >= 0; i--) {
    flat[w->c->perm[i]] = S;
    S *= w->s->dims[w->p->root[w->c->perm[i]].dim];
  }
  int64_t A = dc[w->c->perm[w->c->nperm - 1]];
  for (int i = 0; i < w->p->nroot; i++)
    if (dc[i] != A * flat[i]) return 0;
  /* a store of a value per root program (no index follows the inner axis): lane j = 0 writes */
  int per_root = n->op == XIR_OP_STORE;
  for (unsigned j = 0; j < ell; j++) per_root &= f[j] == 0;
  for (int k = 0; k < nidx; k++)
    if (n->args[k] < 0 && q->dims[k] == X) per_root = 0;
  for (unsigned g = 0; g < W; g++) {
    pi[g] = A * (int64_t)(g / ell) + f[g % ell];
    live[g] = (int64_t)(g % ell) < N && (!per_root || g % ell == 0);
  }
  return 1;
}

/* Classifies a load/store access: 0 broadcast, 1 contiguous, 2 gather/scatter, 3 window load +
 * shuffle; access_kind adds 4-6; 7: two windows of compile-time lane offsets (short rows). */
static int access_kind_base(const wctx *w, const xir_node *n, int nidx) {
  const xir_param *q = &w->p->params[n->ref];
  unsigned ell = w->c->local, W = w->c->W;
  int last = nidx - 1, dep = 0;
  for (int k = 0; k < nidx; k++) {
    int a = n->args[k];
    int d = a < 0 ? (ell > 1 && q->dims[k] == w->c->inner_dim) : lane_dep(w, a);
    if (d && k != last) dep = 2;
    else if (d) dep = dep ? dep : 1;
  }
  if (dep == 0) return 0;
  if (ell == 1 && flattened_root_index(w, n, nidx)) return 1;
  int64_t pi[16];
  int live[16];
  if (small_row_offsets(w, n, nidx, pi, live)) {
    /* 1 < ℓ < W: one vector where the lanes address consecutive elements (a row of C = ℓ per
     * root program), else one window load and a shuffle (a store: a shuffle and a masked store,
     * where no two live lanes write one element; kind 4) or two of them (kind 7: two rows of
     * C > ℓ a packet, each chunk a window a row), else the gather */
    int id = 1;
    for (unsigned g = 0; g < W; g++)
      if (pi[g] != pi[0] + (int64_t)g || !live[g]) id = 0;
    if (id) return 1;
    xir__wsplit sp;
    int nw = xir__window_lanes(pi, live, W, n->op == XIR_OP_STORE, &sp);
    /* Two windows are counted only up to three chunks a row: beyond, the measured time of such
     * candidates exceeds what their counts say and a mapping of ℓ ≥ W is faster (rmsnorm
     * 3000 x 32, 40, 56 at ℓ = 8: 1.5x the best, at ℓ = 32 or 64), while at two or three chunks
     * they are the fastest (softmax_mask 4096 x 8 at ℓ = 4, 999 x 3 at ℓ = 2, layernorm 4096 x 24
     * at ℓ = 8); so the longer rows count them as gathers. */
    int64_t N = w->s->dims[w->c->inner_dim];
    if (nw == 2 && N > 3 * (int64_t)w->c->local) nw = 0;
    return nw == 1 ? 4 : nw == 2 ? 7 : 2;
  }

  if (dep == 2) return 2;
  int a = n->args[last];
  if (a < 0) return ell >= W ? 1 : 2; /* the inner axis slice (masked in the tail chunk) */
  const xir_node *ix = &w->p->nodes[a];
  if (ell == 1 && ix->op == XIR_OP_ROOT) {
    /* the fastest root axis, when packets never wrap it (lower.c's unit_coords) */
    int fastest = w->c->perm[w->c->nperm - 1];
    int64_t E = w->s->dims[w->p->root[fastest].dim];
    if (ix->ref == fastest && (w->c->nperm == 1 || E % W == 0)) return 1;
  }
  return 2;
}

/* A load the lowering would gather may be a window load and a shuffle (lower.c, perm_load):
 * kind 3 with the run-time offset check, kind 4 without (its indices never clamp); kind 5, a
 * local pattern (the period does not divide ℓ) tested per chunk by its residue: the window load
 * in the fraction w->lfrac of the chunks whose residue is good, the gather in the others
 * (rope_cache at HD = 96: ℓ = 32 never crosses a head, ℓ = 64 does in a third of its chunks),
 * two window loads in the fraction w->sfrac whose packets split (xir__window_split: a chunk that
 * crosses a head at HD = 100), the gather in the rest; kind 6, the row's tail chunk read by at
 * most two window loads per packet. */
static int access_kind(wctx *w, const xir_node *n, int nidx) {
  int k = access_kind_base(w, n, nidx);
  int id = (int)(n - w->p->nodes);
  if (k != 2 || n->op != XIR_OP_LOAD) return k;
  int X = w->c->inner_dim;
  unsigned ell = w->c->local, W = w->c->W;
  xir__lpat pt;
  if (w->tail) {
    /* the tail chunk: at most two window loads per packet at its compile-time residue when no
     * index clamps (lower.c, tail_window_load), else the gather */
    if (X < 0 || ell < W || !xir__access_in_bounds(w->p, w->s, X, id) ||
        !xir__window_access_local(w->p, w->s, X, ell, W, id, &pt))
      return k;
    int64_t N = w->s->dims[X], t0 = N / (int64_t)ell * (int64_t)ell, live = N - t0;
    xir__wsplit sp;
    for (unsigned q = 0; (int64_t)(q * W) < live; q++)
      if (!xir__window_split(&pt, t0 % pt.P, W, q, live, &sp)) return k;
    return 6;
  }
  if (xir__window_access(w->p, w->s, X, ell, W, id, NULL))
    return xir__access_in_bounds(w->p, w->s, X, id) ? 4 : 3;
  if (xir__window_access_local(w->p, w->s, X, ell, W, id, &pt) &&
      xir__access_in_bounds(w->p, w->s, X, id)) {
    uint8_t good[XIR_LPAT_MAXP], reach[XIR_LPAT_MAXP];
    w->lfrac = xir__window_local_residues(&pt, ell, W, good, reach);
    w->sfrac = xir__window_split_fraction(&pt, ell, W);
    return 5;
  }
  return k;
}

/* esize: the element's bytes (4 for f32, 8 for an i64 input buffer). */
static void access_cost(wctx *w, int kind, double esize, double *arith, double *bytes) {
  double W = w->c->W;
  if (kind == 0) {
    *arith += 1;
    *bytes += esize;
  } else if (kind == 1 || kind == 3 || kind == 4) {
    *arith += kind == 3 ? 3 : kind == 4 ? 2 : 1; /* the offset check (3) and the shuffle (3, 4) */
    *bytes += esize * W;
  } else if (kind == 5) {
    /* good residues: one window load and a shuffle; split ones: two loads, a two-source
     * shuffle and the switch; the rest gather */
    double f = w->lfrac, sp = w->sfrac, g = 1 - f - sp;
    *arith += f * 2 + sp * 4 + g * (1 + gather_per_lane(W) * W);
    *bytes += f * esize * W + sp * 2 * esize * W + g * kGatherBytesPerLane * W;
  } else if (kind == 6) {
    *arith += 3;
    *bytes += 2 * esize * W;
  } else if (kind == 7) {
    *arith += 4; /* two masked loads and a two-source shuffle, or two shuffles and two stores */
    *bytes += esize * W;
  } else {
    *arith += 1 + gather_per_lane(W) * W;
    *bytes += kGatherBytesPerLane * W;
  }
}

/* A load whose bytes come from L1 (see expr_cost). */
static int near_load(const wctx *w, int id) {
  const xir_node *n = &w->p->nodes[id];
  double tile = (double)xir_elem_size((xir_elem)w->p->params[n->ref].elem);
  for (int i = 0; i < n->type.rank; i++) tile *= (double)w->s->dims[n->type.axes[i]];
  if (w->c->local < w->c->W) tile *= (double)w->c->W / (double)w->c->local; /* root programs a packet holds */
  if (w->loaded[id] && tile <= kNearBytes) return 1;
  int shared = 1;
  for (int a = 0; a < n->nargs && shared; a++) shared = n->args[a] < 0 || w->inv[n->args[a]];
  return shared && (double)xir_elem_size((xir_elem)w->p->params[n->ref].elem) *
                        (double)xir_param_numel(w->p, n->ref, w->s) <= kNearBytes;
}

/* The share of a load's per-packet bytes that come from beyond L1: a 1-D load along the inner
 * axis whose values repeat with period M < N (rope_cache's table row cos[p, (c % HD) / 2]) reads
 * new lines only over its first period — the row's later heads find them in L1 — when the period
 * fits there; other loads, all of it. Counted per packet, the table rows of rope_cache 300x4096 at
 * HD = 256 came to 10241 bytes a unit against 6401 now (x, y and its read for ownership: 15.4 MB
 * a launch; the tables add 0.3 MB), the memory term to 1.6x what it is now. */
static double first_touch_share(const wctx *w, int id, double esize) {
  const xir_node *n = &w->p->nodes[id];
  int X = w->c->inner_dim;
  if (!w->iperiod || X < 0 || n->type.rank != 1 || n->type.axes[0] != X || w->once || w->precompute)
    return 1;
  int64_t M = w->iperiod[id], N = w->s->dims[X];
  if (M <= 1 || M >= N || (double)M * esize > kNearBytes) return 1;
  return (double)M / (double)N;
}

/* Cost of evaluating tile expression `id` once (distinct nodes, rank-0 values excluded). */
static void expr_cost(wctx *w, int id, double *arith, double *bytes) {
  const xir_node *n = &w->p->nodes[id];
  if (w->mark[id] == w->gen) return;
  if (w->pbuf && w->pbuf[id].len && !w->pcompute && !w->once && !w->precompute) {
    /* a period buffer: one vector load per packet; once per unit its expression over comp / D
     * elements (W a vector), a shuffle and a store per vector of comp, and the copy of the rest
     * (charged through once_*, which the unit scales by k) */
    const xir__pbuf *pb = &w->pbuf[id];
    double W = w->c->W, a = 0, b = 0, m0 = w->m_once, f = (double)pb->comp / (double)pb->D / W / w->k;
    w->pcompute = w->once = 1;
    expr_cost(w, id, &a, &b);
    w->pcompute = w->once = 0;
    w->once_a += f * a + ((double)pb->comp / W * (pb->D > 1 ? 2 : 1) +
                          2.0 * (double)(pb->len - pb->comp) / (pb->M >= W ? W : 1.0)) / w->k;
    w->once_b += f * b;
    w->m_once = m0 + f * (w->m_once - m0);
    w->mark[id] = w->gen;
    /* the load, which LLVM folds into its consumer as a memory operand, and its address (the
     * chunk's residue r0 + q·W: one select a chunk, shared by its k packets); none when ℓ is a
     * multiple of M: every chunk reads the same elements, and LLVM keeps the loads out of the
     * chunk loop. Charged 2 a packet before, rope_cache at HD = 96 chose ℓ = 32 (a window load
     * and a vpermps a packet for each table, the residue's division a chunk) over ℓ = 64,
     * which ran 12 % faster on one worker at 45x960 and 24 % at 7x4608. */
    if ((int64_t)w->c->local % pb->M != 0) *arith += 1 + 1.0 / (double)w->k;
    return;
  }
  if (w->cinv && w->cinv[id] && !w->once && !w->precompute && n->type.rank == 1) {
    w->once = 1;
    expr_cost(w, id, &w->once_a, &w->once_b);
    w->once = 0;
    return;
  }
  w->mark[id] = w->gen;
  if (id == w->mask_live) { /* every lane is live: no comparison, no select */
    expr_cost(w, w->mask_live_arg, arith, bytes);
    return;
  }
  if (n->type.rank == 0 && !xir__is_inline_leaf(n->op)) return; /* computed once per unit */
  /* Bytes are counted where they come from beyond L1: a load the unit repeats (an earlier
   * consumer loop read the same tile, at most kNearBytes), a tile every root program shares (w[:],
   * at most kNearBytes), the hoisted buffers, the reduction scratch and the stored expensive tiles
   * stay in L1 and cost their load instruction only. */
  double dummy = 0;
  if (w->hoist[id] && !w->precompute) { /* loaded from the per-call buffer */
    unsigned ell = w->c->local, W = w->c->W;
    /* (1 < ℓ < W: the element index's lanes are compile-time offsets, one window load) */
    access_cost(w, ell == 1 ? 0 : ell >= W ? 1 : 4, 4, arith, &dummy);
    return;
  }
  if (n->op == XIR_OP_REDUCE_SUM || n->op == XIR_OP_REDUCE_MAX || n->op == XIR_OP_REDUCE_MIN) {
    *arith += 1; /* a scratch load */
    return;
  }
  int expensive = n->op == XIR_OP_EXP || n->op == XIR_OP_LOG || n->op == XIR_OP_TANH ||
                  n->op == XIR_OP_ERF || n->op == XIR_OP_SIGMOID || n->op == XIR_OP_SIN ||
                  n->op == XIR_OP_COS || n->op == XIR_OP_POW;
  if (expensive && n->type.rank == 1 && w->nest_rank == 1) {
    if (w->stored[id]) { /* computed by an earlier consumer: one vector load */
      *arith += 1;
      if (4.0 * (double)w->s->dims[n->type.axes[0]] * (w->c->local >= w->c->W ? 1 : w->c->W) > kNearBytes)
        *bytes += 4 * w->c->W;
      return;
    }
    w->stored[id] = 1;
  }
  if (expensive && !w->once) w->vm_cur++; /* a body evaluated per packet (spill_ops) */
  if (n->op == XIR_OP_LOAD) {
    double esize = (double)xir_elem_size((xir_elem)w->p->params[n->ref].elem); /* 8, 4 or 2 */
    int near = near_load(w, id);
    w->loaded[id] = 1;
    int kind = access_kind(w, n, n->nargs);
    double lb = 0;
    access_cost(w, kind, esize, arith, near ? &dummy : &lb);
    if (!near) *bytes += lb * first_touch_share(w, id, esize);
    /* The lane indices are computed only where the lowering gathers (kind 2, and kind 5's
     * chunks that are neither right nor split): a broadcast, a contiguous slice and a window
     * load take their offset from the unit's coordinates and a compile-time lane pattern, so
     * LLVM drops the index expression (as a store's indices are not charged either). */
    if (kind == 2 || kind == 5) {
      double g = kind == 2 ? 1 : 1 - w->lfrac - w->sfrac, ia = 0, ib = 0;
      double *m = w->once ? &w->m_once : &w->m_cur, m0 = *m;
      for (int i = 0; i < n->nargs; i++)
        if (n->args[i] >= 0) expr_cost(w, n->args[i], &ia, &ib);
      *arith += g * ia;
      *bytes += g * ib;
      *m = m0 + g * (*m - m0);
    }
    return;
  } else {
    double wt = n->op == XIR_OP_SIGMOID && w->narrow && w->narrow[id] ? kSigmoid16Weight
                                                                     : op_weight(n->op);
    *arith += wt;
    if (wt > 1) *(w->once ? &w->m_once : &w->m_cur) += wt;
  }
  for (int i = 0; i < n->nargs; i++)
    if (n->args[i] >= 0) expr_cost(w, n->args[i], arith, bytes);
}

/* ℓ ≥ W: the 1-D tiles whose values are the same in every chunk of a unit, so that LLVM keeps
 * them out of the chunk loop — built from per-unit values and hoisted tiles whose period along the
 * inner axis divides ℓ (and is a multiple or a divisor of W: lower.c loads those at constant offsets). */
static xir_status chunk_invariant_tiles(wctx *w, uint8_t **out) {
  const xir_program *p = w->p;
  int64_t *per = xir__calloc((size_t)p->nnodes + 1, sizeof(int64_t));
  uint8_t *ci = xir__calloc((size_t)p->nnodes + 1, 1);
  if (!per || !ci) {
    xir__free(per);
    xir__free(ci);
    return XIR_ERR_NOMEM;
  }
  xir__inner_period(p, w->s, w->c->inner_dim, per);
  int64_t ell = w->c->local, W = w->c->W, regs = 0;
  for (int i = 0; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    int v, fits = per[i] >= 1 && ell % per[i] == 0 && (per[i] % W == 0 || W % per[i] == 0);
    if (n->type.rank == 0) v = 1;
    else if (w->hoist[i]) v = per[i] > 1 && fits;
    else if (n->op == XIR_OP_LOAD) {
      /* a periodic load whose period divides ℓ (rope_cache's table row at HD ≤ ℓ) reads the
       * same vectors in every chunk: LLVM keeps them in registers for the unit, as long as
       * they fit (kChunkInvariantRegs) */
      int64_t vecs = per[i] > W ? per[i] / W : 1;
      v = fits && per[i] > 1 && regs + vecs <= kChunkInvariantRegs;
      for (int a = 0; a < n->nargs && v; a++) v = n->args[a] >= 0;
      if (v) regs += vecs;
    } else if (n->op == XIR_OP_REDUCE_SUM || n->op == XIR_OP_REDUCE_MAX || n->op == XIR_OP_REDUCE_MIN)
      v = 0;
    else if (per[i] >= 1 && (W % per[i] == 0 || (ell % per[i] == 0 && per[i] % W == 0)))
      v = 1; /* a polynomial in iota and per-unit values, e.g. rope's sign of rem(iota, 2): LLVM
              * folds it to the same vector(s) in every chunk */
    else if (n->op == XIR_OP_IOTA)
      v = 0;
    else {
      v = 1;
      for (int a = 0; a < n->nargs && v; a++) v = n->args[a] >= 0 && ci[n->args[a]];
    }
    ci[i] = (uint8_t)v;
  }
  xir__free(per);
  *out = ci;
  return XIR_OK;
}

/* The iterations of t's loop nest, the inner axis X in chunks of ℓ (ℓ > 1). loops = 1: only
 * those that run as loop iterations (their counter, compare and branch: kLoopOverhead each) —
 * a compile-time X loops over its full chunks only, and not at all when there are at most
 * w->unroll (xir__chunk_unroll; lower.c, tile_loops_at: such a row's chunks are straight-line
 * code, as is the tail chunk). */
static double count_iterations(const wctx *w, const xir_type *t, int loops) {
  double it = 1;
  for (int i = 0; i < t->rank; i++) {
    int X = t->axes[i];
    int64_t N = w->s->dims[X], ell = (int64_t)w->c->local;
    if (ell > 1 && X == w->c->inner_dim) {
      int64_t full = N / ell;
      it *= loops && (w->c->fixed_dims >> X & 1) ? (double)(full > w->unroll ? full : 0)
                                                  : (double)((N + ell - 1) / ell);
    } else {
      it *= (double)N;
    }
  }
  return it;
}
static double iterations(const wctx *w, const xir_type *t) { return count_iterations(w, t, 0); }
static double loop_iterations(const wctx *w, const xir_type *t) { return count_iterations(w, t, 1); }

/* A skipped consumer's expression `root` costed again with the mask as its live operand, from
 * the state before its first costing (the comparison has no loads or expensive tiles, so the
 * state after is the same): *a, *b and *m (its math part) per iteration. */
static void live_cost(wctx *w, int root, double *a, double *b, double *m) {
  size_t nn = (size_t)w->p->nnodes;
  double once_a = w->once_a, once_b = w->once_b, m_cur = w->m_cur, m_once = w->m_once;
  memcpy(w->stored, w->snap, nn);
  memcpy(w->loaded, w->snap + nn, nn);
  w->gen++;
  w->m_cur = 0;
  w->mask_live = w->mask_id;
  *a = *b = 0;
  expr_cost(w, root, a, b);
  w->mask_live = -1;
  *m = w->m_cur;
  w->once_a = once_a;
  w->once_b = once_b;
  w->m_cur = m_cur;
  w->m_once = m_once;
}

/* The tail chunk's cost of consumer expression `root` (and of `store`'s own access): costed again
 * from the state before the consumer with its window loads as gathers; the state
 * after the first costing is kept. *a, *b per packet of that one chunk. */
static void tail_cost(wctx *w, int root, const xir_node *store, double *a, double *b) {
  size_t nn = (size_t)w->p->nnodes;
  double once_a = w->once_a, once_b = w->once_b, m_cur = w->m_cur, m_once = w->m_once;
  memcpy(w->tsnap + 2 * nn, w->stored, nn);
  memcpy(w->tsnap + 3 * nn, w->loaded, nn);
  memcpy(w->stored, w->tsnap, nn);
  memcpy(w->loaded, w->tsnap + nn, nn);
  w->gen++;
  w->tail = 1;
  *a = *b = 0;
  expr_cost(w, root, a, b);
  if (store)
    access_cost(w, access_kind(w, store, store->nargs - 1),
                (double)xir_elem_size((xir_elem)w->p->params[store->ref].elem), a, b);
  w->tail = 0;
  memcpy(w->stored, w->tsnap + 2 * nn, nn);
  memcpy(w->loaded, w->tsnap + 3 * nn, nn);
  w->once_a = once_a;
  w->once_b = once_b;
  w->m_cur = m_cur;
  w->m_once = m_once;
}

/* The tail chunk of a ragged inner axis (ℓ ≥ W, E % ℓ = r ≠ 0): with E a compile-time dim the
 * lane masks are constants, and LLVM drops the packets with no live lane and keeps the full ones
 * unmasked (rmsnorm C = 65 at ℓ = 128: four full packets and one one-lane packet of its eight).
 * The chunk then costs floor(r/W) packets at the full cost a and one at the masked cost ta when
 * r % W ≠ 0; with E a launch-time dim, k packets at ta. Returns the chunk's cost minus the k·a
 * that `iterations` already charged for it. */
static double tail_delta(const wctx *w, double a, double ta) {
  double k = w->k;
  int X = w->c->inner_dim;
  if (!(w->c->fixed_dims >> X & 1)) return k * (ta - a);
  int64_t r = w->s->dims[X] % (int64_t)w->c->local, W = w->c->W;
  return (double)(r / W) * a + (r % W ? ta : 0) - k * a;
}

/* The packets whose partial results a rank-0 reduction combines: k, or with a compile-time inner
 * extent E below ℓ only the ceil(E/W) that hold a live lane (LLVM folds the others to the
 * identity). */
static double combined_packets(const wctx *w) {
  int X = w->c->inner_dim;
  if (X < 0 || !(w->c->fixed_dims >> X & 1) || w->s->dims[X] >= (int64_t)w->c->local) return w->k;
  return (double)((w->s->dims[X] + w->c->W - 1) / w->c->W);
}

/* The same for bytes: the masked packet moves only its live lanes' bytes (a contiguous row's
 * lines are the next row's too; rmsnorm 5000x20 at l = 16 moved 256 bytes a row in the model
 * against 160 in memory). */
static double tail_delta_bytes(const wctx *w, double b, double tb) {
  int X = w->c->inner_dim;
  if (!(w->c->fixed_dims >> X & 1)) return tail_delta(w, b, tb);
  int64_t r = w->s->dims[X] % (int64_t)w->c->local, W = w->c->W;
  return (double)(r / W) * b + (r % W ? tb * (double)(r % W) / (double)W : 0) - w->k * b;
}

static int type_has_axis(const xir_type *t, int dim) {
  for (int i = 0; i < t->rank; i++)
    if (t->axes[i] == dim) return 1;
  return 0;
}

/* The spill and reload ops an iteration of the current consumer loop pays for its vector-math
 * bodies' registers (kMathLive): 0 without vector math or while k packets' bodies fit. */
static double spill_ops(const wctx *w) {
  if (w->vm_cur == 0) return 0;
  double regs = w->k * kMathLive + kMathConsts, have = vector_regs(w->c->W);
  return regs > have ? regs - have : 0;
}

/* Sibling reductions (lower.c, reduce_loops and sibling_ok): a rank-0 reduction and the ones
 * after it, up to the first store, that accumulate in its loop — rank 0 over the same tile, not
 * masked-skipped, their expression reaching neither it nor a later reduction nor a rank-0 value
 * computed after it; at most kMaxSiblings. sib[i] = the group's size on its first reduction, 0
 * elsewhere (a member, or not a reduction). */
enum { kMaxSiblings = 4 };
static int sibling_reaches(const xir_program *p, int from, int id, uint8_t *seen, int *stack) {
  int sp = 0, bad = 0;
  memset(seen, 0, (size_t)p->nnodes + 1);
  stack[sp++] = from;
  while (sp && !bad) {
    int x = stack[--sp];
    if (x < 0 || seen[x]) continue;
    seen[x] = 1;
    const xir_node *e = &p->nodes[x];
    if (x == id || (xir__is_reduce(e->op) && x > id)) bad = 1;
    else if (e->type.rank == 0 && !xir__is_inline_leaf(e->op)) bad = x > id;
    else
      for (int a = 0; a < e->nargs; a++)
        if (e->args[a] >= 0) stack[sp++] = e->args[a];
  }
  return bad;
}

/* sib, seen and member: nnodes + 1 bytes each (sib and member zeroed here); stack: the walk's */
static void sibling_groups(const wctx *w, uint8_t *sib, uint8_t *seen, uint8_t *member, int *stack) {
  const xir_program *p = w->p;
  memset(sib, 0, (size_t)p->nnodes + 1);
  memset(member, 0, (size_t)p->nnodes + 1);
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    if (!xir__is_reduce(n->op) || n->type.rank != 0 || member[i]) continue;
    int g = 1;
    const xir_type *a = &p->nodes[n->args[0]].type;
    int skipped = w->skip && w->skip[i]; /* a skipped reduction's loop is its own */
    for (int j = i + 1; !skipped && j < p->nnodes && g < kMaxSiblings; j++) {
      const xir_node *m = &p->nodes[j];
      if (m->op == XIR_OP_STORE) break;
      if (!xir__is_reduce(m->op)) continue;
      const xir_type *b = &p->nodes[m->args[0]].type;
      if (m->type.rank != 0 || (w->skip && w->skip[j]) || a->rank != b->rank ||
          memcmp(a->axes, b->axes, (size_t)a->rank * sizeof a->axes[0]) != 0 ||
          sibling_reaches(p, m->args[0], i, seen, stack))
        break;
      member[j] = 1;
      g++;
    }
    sib[i] = (uint8_t)g;
  }
}

/* The spill and reload ops an iteration of a sibling group's loop pays for its accumulators: k
 * partial sums per reduction, with a loaded value, a temporary and a broadcast rank-0 operand
 * live beside them. layernorm's sum(x − mean) and sum((x − mean)²) at ℓ = 8W, W = 8: 16 + 3
 * vectors in 16 ymm registers, and llc keeps 3 partial sums on the stack (a reload and a store
 * each an iteration). */
static double accumulator_spill(const wctx *w, int group) {
  double live = (double)group * w->k + 3, have = vector_regs(w->c->W);
  return group > 1 && w->k > 1 && live > have ? 2 * (live - have) : 0;
}

static void unit_cost(wctx *w) {
  const xir_program *p = w->p;
  double k = w->k;
  const uint8_t *sib = w->sib;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    double a = 0, b = 0;
    w->gen++;
    if (w->ragged) {
      memcpy(w->tsnap, w->stored, (size_t)p->nnodes);
      memcpy(w->tsnap + p->nnodes, w->loaded, (size_t)p->nnodes);
    }
    if (w->skip && w->skip[i]) {
      memcpy(w->snap, w->stored, (size_t)p->nnodes);
      memcpy(w->snap + p->nnodes, w->loaded, (size_t)p->nnodes);
    }
    if (n->op == XIR_OP_STORE) {
      xir_type tile = {.elem = XIR_F32};
      for (int kd = 0; kd < n->nargs - 1; kd++)
        if (n->args[kd] < 0) tile.axes[tile.rank++] = (int8_t)p->params[n->ref].dims[kd];
      w->nest_rank = tile.rank;
      w->once_a = w->once_b = w->m_cur = w->m_once = 0;
      w->vm_cur = 0;
      expr_cost(w, n->args[n->nargs - 1], &a, &b);
      double spill = spill_ops(w);
      access_cost(w, access_kind(w, n, n->nargs - 1),
                  (double)xir_elem_size((xir_elem)w->p->params[n->ref].elem), &a, &b); /* f32, bf16, f16 */
      double it = iterations(w, &tile);
      if (w->ragged && !(w->skip && w->skip[i]) && type_has_axis(&tile, w->c->inner_dim)) {
        double ta, tb; /* one of the `it` chunks is the tail */
        tail_cost(w, n->args[n->nargs - 1], n, &ta, &tb);
        w->arith += tail_delta(w, a, ta);
        w->bytes += tail_delta_bytes(w, b, tb);
        w->gen++;
      }
      if (w->skip && w->skip[i]) {
        /* live iterations as usual; the masked ones store the masked value, computed once */
        double fa = 0, fb = 0, es = (double)xir_elem_size((xir_elem)w->p->params[n->ref].elem);
        access_cost(w, access_kind(w, n, n->nargs - 1), es, &fa, &fb);
        double la, lb, lm;
        live_cost(w, n->args[n->nargs - 1], &la, &lb, &lm);
        access_cost(w, access_kind(w, n, n->nargs - 1), es, &la, &lb);
        w->sk_a += k * a + kLoopOverhead + spill;
        w->sk_b += k * b;
        w->sk_m += k * w->m_cur;
        w->sl_a += k * la + kLoopOverhead + spill;
        w->sl_b += k * lb;
        w->sl_m += k * lm;
        w->fl_a += k * fa + kLoopOverhead;
        w->fl_b += k * fb;
        w->arith += k * (a - fa) + k * w->once_a;
        w->math += k * w->m_cur + k * w->m_once;
        w->bytes += k * w->once_b;
        continue;
      }
      w->arith += it * k * a + (tile.rank > 0 ? loop_iterations(w, &tile) * kLoopOverhead : 0) +
                  it * spill + k * w->once_a;
      w->math += it * k * w->m_cur + k * w->m_once;
      w->bytes += it * k * b + k * w->once_b;
    } else if (n->op == XIR_OP_REDUCE_SUM || n->op == XIR_OP_REDUCE_MAX ||
               n->op == XIR_OP_REDUCE_MIN) {
      const xir_type *in = &p->nodes[n->args[0]].type;
      w->nest_rank = in->rank;
      w->once_a = w->once_b = w->m_cur = w->m_once = 0;
      w->vm_cur = 0;
      expr_cost(w, n->args[0], &a, &b);
      double spill = spill_ops(w);
      if (w->ragged && !(w->skip && w->skip[i]) && type_has_axis(in, w->c->inner_dim)) {
        double ta, tb; /* one of the chunks is the tail */
        tail_cost(w, n->args[0], NULL, &ta, &tb);
        w->arith += tail_delta(w, a, ta);
        w->bytes += tail_delta_bytes(w, b, tb);
        w->gen++;
      }
      int maxmin = n->op != XIR_OP_REDUCE_SUM;
      a += n->type.rank > 0 ? 3 : maxmin ? kMaxAccumulateOps : 1;
      double it = iterations(w, in);
      w->arith += k * w->once_a;
      w->bytes += k * w->once_b;
      if (w->skip && w->skip[i]) {
        /* live iterations only (the masked value, computed once per unit, is the identity) */
        double la, lb, lm;
        live_cost(w, n->args[0], &la, &lb, &lm);
        la += 1;
        w->math += k * w->m_cur + k * w->m_once;
        w->sk_m += k * w->m_cur;
        w->sk_a += fmax(k * a + kLoopOverhead + spill, kAccumulateLatency);
        w->sk_b += k * b;
        w->sl_m += k * lm;
        w->sl_a += fmax(k * la + kLoopOverhead + spill, kAccumulateLatency);
        w->sl_b += k * lb;
        if (n->type.rank == 0) w->sk_steps[maxmin] += 1;
        w->arith += k * a + (combined_packets(w) - 1) +
                    2 * log2((double)(w->c->local < w->c->W ? w->c->local : w->c->W));
        continue;
      }
      w->math += it * k * w->m_cur + k * w->m_once;
      /* Each iteration's accumulation depends on the previous one: a unit cannot go faster
       * than the chain of `it` dependent ops (the k packets of a multi-packet unit accumulate
       * independently, so they share the chain). */
      double chain = n->type.rank > 0 ? 0 : it * kAccumulateLatency;
      spill += accumulator_spill(w, sib[i]);
      double thr = it * k * a + loop_iterations(w, in) * kLoopOverhead + it * spill;
      w->arith += fmax(thr, chain);
      if (n->type.rank == 0) w->steps[maxmin] += it;
      w->bytes += it * k * b;
      if (w->c->local > 1) {
        unsigned g = w->c->local < w->c->W ? w->c->local : w->c->W;
        double tree = (combined_packets(w) - 1) + 2 * log2((double)g);
        w->arith += tree;
        if (n->type.rank == 0) w->serial += tree + fmax(chain - thr, 0);
      }
    } else if (n->type.rank == 0 && !xir__is_inline_leaf(n->op) && !w->inv[i]) {
      /* (a root-invariant value — rmsnorm's 1/C from constants and dims — is folded by LLVM or
       * hoisted out of the unit loop: nothing per unit) */
      if (n->op == XIR_OP_LOAD)
        access_cost(w, access_kind(w, n, n->nargs),
                    (double)xir_elem_size((xir_elem)w->p->params[n->ref].elem), &a, &b);
      else a = op_weight(n->op);
      /* once per unit: with ℓ > W its k packets hold the same value (one root program), and
       * the object code computes it once (rmsnorm's sqrt and div) */
      w->arith += a;
      if (n->op != XIR_OP_LOAD) w->serial += a;
      if (n->op != XIR_OP_LOAD && a > 1) w->math += a, w->smath += a;
      if (n->op == XIR_OP_DIV || n->op == XIR_OP_SQRT || n->op == XIR_OP_RSQRT)
        w->hmath += a, w->hsmath += a;
      w->bytes += b;
    }
  }
}

/* Row groups (xir__row_group_size): g programs' serial chains overlap, so a unit pays 1/g of its
 * own (serial ≤ arith: every part of it is charged there too) and of its dependent accumulation
 * steps. The lowering also declines where it keeps a tile per unit; here, where a consumer loop
 * reuses a stored tile (its materialized tiles). */
static void row_group_overlap(wctx *x, int masked) {
  const xir_candidate *c = x->c;
  int X = c->inner_dim;
  for (int i = 0; i < x->p->nnodes && x->stored; i++)
    if (x->stored[i]) return;
  unsigned g = xir__row_group_size(x->p, x->s, X, c->local, c->W,
                                   X >= 0 && (int)(c->fixed_dims >> X & 1), masked, x->any_pbuf);
  if (g <= 1) return;
  x->arith -= x->serial * (1.0 - 1.0 / g);
  /* the serial part's math too: without it math_per_packet, clamped to arith_per_packet, priced
   * a grouped unit's whole arithmetic at the math rate (rmsnorm 16384x8 ranked l = 4 first,
   * 64 us, against 45 us at l = 8 in groups of 8) */
  x->math -= x->smath * (1.0 - 1.0 / g);
  x->hmath -= x->hsmath * (1.0 - 1.0 / g);
  for (int i = 0; i < XIR_CHAIN_KINDS; i++) x->steps[i] /= g;
}

/* The mask's live iterations: per unit (the lowering's: one root program for ℓ ≥ W, a packet of
 * W/ℓ for ℓ < W; units never straddle blocks), the chunks (ℓ > 1) or elements (ℓ = 1) up to the
 * largest end of its root programs, of which those below the smallest end (full chunks only)
 * are live in every lane; summed over all units and per home worker of the round-robin task
 * assignment. A unit of n such iterations, nl of them live in every lane, costs
 * arith + nl·sl_a + (n − nl)·sk_a + (I − n)·fl_a. Fills w's mask counts and critical_*_packets
 * and leaves the average unit in x. Returns 0, or -1 when there are too many root programs to
 * walk. */
enum { MASK_WALK_MAX = 1 << 26 };
static int mask_counts(wctx *x, const xir__prefix_mask *m, const xir_launch_shape *ls,
                       xir_execution_work *w) {
  const xir_program *p = x->p;
  const xir_candidate *c = x->c;
  uint64_t P = c->root_programs, ell = c->local, W = c->W;
  if (P > MASK_WALK_MAX || P == 0) return -1;
  int64_t N = x->s->dims[m->axis_dim];
  uint64_t I = ell > 1 ? (uint64_t)(N + (int64_t)ell - 1) / ell : (uint64_t)N;
  uint64_t FC = ell > 1 ? (uint64_t)N / ell : (uint64_t)N; /* full chunks */
  uint64_t rpu = ell >= W ? 1 : W / ell, rpb = c->B / ell, upb = rpb / rpu;
  uint32_t h = ls->active > 1 ? ls->active : 1;
  uint64_t units_w[XIR_RUNTIME_MAX_WORKERS] = {0}, live_w[XIR_RUNTIME_MAX_WORKERS] = {0};
  uint64_t all_w[XIR_RUNTIME_MAX_WORKERS] = {0};
  uint64_t total = 0, total_all = 0, units = 0;
  for (uint64_t b = 0; b < c->blocks; b++) {
    uint32_t hw = h > 1 ? (uint32_t)((b / ls->grain) % h) : 0; /* task b / G′, home task mod h */
    for (uint64_t u = 0; u < upb; u++) {
      uint64_t p0 = b * rpb + u * rpu;
      if (p0 >= P) break;
      int64_t end = 0, lo = N;
      for (uint64_t q = p0; q < p0 + rpu && q < P; q++) {
        int64_t coord[XIR_MAX_ROOT] = {0};
        uint64_t r = q;
        for (int i = c->nperm - 1; i >= 0; i--) {
          uint64_t E = (uint64_t)x->s->dims[p->root[c->perm[i]].dim];
          coord[c->perm[i]] = (int64_t)(r % E);
          r /= E;
        }
        int64_t e = xir__prefix_mask_end(m, coord, x->s->dims, N);
        if (e > end) end = e;
        if (e < lo) lo = e;
      }
      uint64_t n = ell > 1 ? ((uint64_t)end + ell - 1) / ell : (uint64_t)end;
      uint64_t nl = ell > 1 ? (uint64_t)lo / ell : (uint64_t)lo;
      if (nl > FC) nl = FC;
      total += n;
      total_all += nl;
      units++;
      units_w[hw]++;
      live_w[hw] += n;
      all_w[hw] += nl;
    }
  }
  w->mask_live_iterations = total;
  w->mask_full_iterations = units * I;
  double U = (double)units, k = x->k;
  double unit_a = x->arith + ((double)total_all * x->sl_a + (double)(total - total_all) * x->sk_a +
                              (double)(units * I - total) * x->fl_a) / U;
  double unit_b = x->bytes + ((double)total_all * x->sl_b + (double)(total - total_all) * x->sk_b +
                              (double)(units * I - total) * x->fl_b) / U;
  double ca = 0, cb = 0;
  for (uint32_t i = 0; i < h; i++) {
    double n = (double)live_w[i], nl = (double)all_w[i], uw = (double)units_w[i];
    double a = uw * x->arith + nl * x->sl_a + (n - nl) * x->sk_a + (uw * (double)I - n) * x->fl_a;
    double by = uw * x->bytes + nl * x->sl_b + (n - nl) * x->sk_b + (uw * (double)I - n) * x->fl_b;
    if (a > ca) ca = a;
    if (by > cb) cb = by;
    if (live_w[i] > w->mask_critical_live_iterations) w->mask_critical_live_iterations = live_w[i];
  }
  w->critical_arith_packets = unit_a > 0 ? ca / unit_a * k : (double)w->critical_packets;
  w->critical_memory_packets = unit_b > 0 ? cb / unit_b * k : (double)w->critical_packets;
  x->arith = unit_a;
  x->bytes = unit_b;
  x->math += ((double)total_all * x->sl_m + (double)(total - total_all) * x->sk_m) / U;
  for (int i = 0; i < XIR_CHAIN_KINDS; i++) x->steps[i] += (double)total / U * x->sk_steps[i];
  return 0;
}

static void wctx_free(wctx *x) {
  xir__free(x->mark);
  xir__free(x->stored);
  xir__free(x->hoist);
  xir__free(x->pbuf);
  xir__free(x->cinv);
  xir__free(x->inv);
  xir__free(x->loaded);
  xir__free(x->skip);
  xir__free(x->narrow);
  xir__free(x->snap);
  xir__free(x->tsnap);
  xir__free(x->iperiod);
  xir__free(x->sib);
}

/* Distinct bytes the launch touches: every buffer once. */
/* The distinct bytes a launch touches: every buffer once, but no more of it than its accesses
 * can reach. An access whose index along a dim is a per-root-program value (rank 0: a root index,
 * a loaded position) reaches one slice of that dim per root program, so at most P · Π (the other
 * dims) elements: rope_cache's cos/sin tables [P_tab, HD/2] are read one row per row of x, not
 * all 2 × 1 MiB of them (a launch of one row then moved at the table's DRAM rate in the model). */
static double footprint(const xir_program *p, const xir_shape *s) {
  double roots = 1, b = 0;
  for (int a = 0; a < p->nroot; a++) roots *= (double)s->dims[p->root[a].dim];
  for (int i = 0; i < p->nparams; i++) {
    if (p->params[i].kind != XIR_PARAM_BUFFER) continue;
    const xir_param *q = &p->params[i];
    double numel = (double)xir_param_numel(p, i, s), reach = 0;
    int accessed = 0;
    for (int id = p->body_begin; id < p->nnodes; id++) {
      const xir_node *n = &p->nodes[id];
      if ((n->op != XIR_OP_LOAD && n->op != XIR_OP_STORE) || n->ref != i) continue;
      int nidx = n->op == XIR_OP_STORE ? n->nargs - 1 : n->nargs;
      double per_root = 1;
      for (int k = 0; k < nidx && k < q->rank; k++) {
        int a = n->args[k];
        if (a < 0 || p->nodes[a].type.rank > 0) per_root *= (double)s->dims[q->dims[k]];
      }
      reach += roots * per_root;
      accessed = 1;
    }
    double e = accessed && reach < numel ? reach : numel;
    b += (double)xir_elem_size((xir_elem)q->elem) * e;
  }
  return b;
}

xir_status xir_execution_work_make(const xir_program *p, const xir_shape *s,
                                   const xir_candidate *c, uint32_t grain, uint32_t workers,
                                   xir_execution_work *w, xir_diag *d) {
  if (!p || !s || !c || !w) {
    if (w) memset(w, 0, sizeof *w);
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_execution_work_make: %s is NULL",
                    !p ? "the program" : !s ? "the shape" : !c ? "the candidate" : "the work");
  }
  memset(w, 0, sizeof *w);
  if (workers == 0)
    return xir__err(d, XIR_ERR_INVALID_ARG, "workers must be at least 1");
  if (workers > XIR_RUNTIME_MAX_WORKERS)
    return xir__err(d, XIR_ERR_INVALID_ARG, "workers = %u is above the runtime's maximum %d",
                    workers, XIR_RUNTIME_MAX_WORKERS);
  xir_launch_shape ls;
  xir_status st = xir_launch_resolve(workers, c->blocks, grain, workers, &ls, d);
  if (st) return st;
  w->packets = c->packets;
  w->blocks = c->blocks;
  w->tasks = ls.tasks;
  w->grain = grain;
  w->grain_used = ls.grain;
  w->workers = workers;
  w->active = ls.active;
  uint64_t ppb = c->B / c->W; /* packets per block */
  if (ls.active <= 1) {
    w->critical_packets = w->packets;
    w->critical_blocks = w->blocks;
    w->critical_tasks = 1;
  } else {
    w->critical_packets = xir_critical_count(w->packets, ls.grain * ppb, ls.tasks, ls.active);
    w->critical_blocks = xir_critical_count(w->blocks, ls.grain, ls.tasks, ls.active);
    w->critical_tasks = (ls.tasks + ls.active - 1) / ls.active;
  }
  w->kind = c->kind;
  w->full_packet_path = c->full_packet_path;
  w->ragged_packets = c->ragged_packets;
  w->ragged_inner = c->ragged_inner;
  if (c->attn_vec && xir__attn_work(p, s, c, ls.grain, ls.active, w)) {
    w->footprint_bytes = footprint(p, s);
    return XIR_OK; /* the attention mapping: one tile per packet (work_attn.c) */
  }
  wctx x = {.p = p, .s = s, .c = c, .k = c->local > c->W ? c->local / c->W : 1,
         .unroll = XIR__UNROLL_CHUNKS};
  x.mark = xir__calloc((size_t)p->nnodes + 1, sizeof(unsigned));
  x.stored = xir__calloc((size_t)p->nnodes + 1, 1);
  x.hoist = xir__calloc((size_t)p->nnodes + 1, 1);
  x.inv = xir__calloc((size_t)p->nnodes + 1, 1);
  x.loaded = xir__calloc((size_t)p->nnodes + 1, 1);
  x.narrow = xir__calloc((size_t)p->nnodes + 1, 1);
  if (!x.mark || !x.stored || !x.hoist || !x.inv || !x.loaded || !x.narrow) {
    wctx_free(&x);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  }
  xir__hoisted_tiles(p, s, x.hoist);
  xir__root_invariant(p, x.inv);
  xir__narrow_values(p, x.narrow);
  xir__prefix_mask mask;
  int mask_id = -1;
  x.skip = xir__calloc((size_t)p->nnodes + 1, 1);
  if (x.skip) mask_id = xir__mask_skips(p, x.skip, &mask);
  if (!x.skip || mask_id < -1) {
    wctx_free(&x);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  }
  if (mask_id >= 0 && c->local > 1 && mask.axis_dim != c->inner_dim) mask_id = -1; /* lower.c */
  if (mask_id < 0) {
    xir__free(x.skip);
    x.skip = NULL;
  }
  x.mask_live = -1;
  if (x.skip) {
    x.mask_id = mask_id;
    x.mask_live_arg = mask.live;
    x.snap = xir__calloc(2 * (size_t)p->nnodes + 1, 1);
    if (!x.snap) {
      wctx_free(&x);
      return xir__err(d, XIR_ERR_NOMEM, "out of memory");
    }
  }
  x.ragged = c->local >= c->W && c->inner_dim >= 0 && s->dims[c->inner_dim] % c->local != 0;
  if (x.ragged && !(x.tsnap = xir__calloc(4 * (size_t)p->nnodes + 1, 1))) {
    wctx_free(&x);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  }
  if (c->local >= c->W && c->inner_dim >= 0 &&
      chunk_invariant_tiles(&x, &x.cinv) != XIR_OK) {
    wctx_free(&x);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  }
  if (c->local >= c->W && c->inner_dim >= 0) {
    int64_t *per = xir__calloc((size_t)p->nnodes + 1, sizeof(int64_t));
    x.pbuf = xir__calloc((size_t)p->nnodes + 1, sizeof(xir__pbuf));
    if (!per || !x.pbuf) {
      xir__free(per);
      wctx_free(&x);
      return xir__err(d, XIR_ERR_NOMEM, "out of memory");
    }
    int64_t *stretch = xir__calloc((size_t)p->nnodes + 1, sizeof(int64_t));
    if (!stretch) {
      xir__free(per);
      wctx_free(&x);
      return xir__err(d, XIR_ERR_NOMEM, "out of memory");
    }
    xir__inner_period(p, s, c->inner_dim, per);
    xir__inner_stretch(p, s, c->inner_dim, stretch);
    x.unroll = xir__chunk_unroll(p, s, c->inner_dim, c->local, c->W,
                                 (int)(c->fixed_dims >> c->inner_dim & 1));
    for (int i = p->body_begin; i < p->nnodes; i++)
      x.any_pbuf |= xir__period_buffer(p, s, c->inner_dim, c->local, c->W,
                                       (int)(c->fixed_dims >> c->inner_dim & 1), mask_id >= 0,
                                       x.hoist, per, stretch, i, &x.pbuf[i]);
    x.iperiod = per; /* (first_touch_share; freed with the context) */
    xir__free(stretch);
  }
  {
    size_t nn = (size_t)p->nnodes + 1;
    uint8_t *seen = xir__calloc(2 * nn, 1);
    int *stack = xir__malloc(sizeof(int) * (nn * (XIR_MAX_RANK + 2)));
    x.sib = xir__calloc(nn, 1);
    if (!seen || !stack || !x.sib) {
      xir__free(seen);
      xir__free(stack);
      wctx_free(&x);
      return xir__err(d, XIR_ERR_NOMEM, "out of memory");
    }
    sibling_groups(&x, x.sib, seen, seen + nn, stack);
    xir__free(seen);
    xir__free(stack);
  }
  unit_cost(&x);
  row_group_overlap(&x, mask_id >= 0);
  w->critical_arith_packets = w->critical_memory_packets = (double)w->critical_packets;
  if (x.skip && mask_counts(&x, &mask, &ls, w)) {
    /* too many root programs to walk: every unit counted with all its iterations */
    double I = (double)(c->local > 1 ? (s->dims[mask.axis_dim] + c->local - 1) / c->local
                                     : s->dims[mask.axis_dim]);
    x.arith += I * x.sk_a;
    x.bytes += I * x.sk_b;
    x.math += I * x.sk_m;
    for (int i = 0; i < XIR_CHAIN_KINDS; i++) x.steps[i] += I * x.sk_steps[i];
  }
  /* hoisted tiles: their whole expression, W elements at a time, once per native call (one call
   * on the caller path, one per task on the pool) — spread over the packets */
  double pre = 0, pre_b = 0, pre_m = 0;
  uint8_t *pdirect = NULL;
  if (x.any_pbuf && (pdirect = xir__calloc((size_t)p->nnodes + 1, 1)) &&
      xir__direct_uses(p, x.pbuf, pdirect)) {
    xir__free(pdirect);
    pdirect = NULL;
  }
  x.precompute = 1;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    if (!x.hoist[i]) continue;
    double a = 0;
    x.gen++;
    x.m_cur = 0;
    expr_cost(&x, i, &a, &pre_b);
    int64_t N = s->dims[p->nodes[i].type.axes[0]];
    int64_t M = N; /* a periodic tile is computed over one period, then copied (lower.c) */
    int64_t *per = xir__calloc((size_t)p->nnodes + 1, sizeof(int64_t)), D = 1;
    if (per) {
      xir__inner_period(p, s, p->nodes[i].type.axes[0], per);
      if (per[i] > 1 && per[i] < N) M = per[i];
      xir__inner_stretch(p, s, p->nodes[i].type.axes[0], per); /* values per run of D */
      D = per[i];
      if (D < 1 || M % D != 0 || c->W % D != 0) D = 1;
      xir__free(per);
    }
    /* copied up to what the chunks and the period buffers read (lower.c, emit_hoisted) */
    int64_t W = c->W;
    int64_t need = xir__hoist_extent(p, i, N, M, p->nodes[i].type.axes[0] == c->inner_dim,
                                     c->local, c->W, x.any_pbuf ? x.pbuf : NULL, pdirect);
    double vecs = (double)((M + D * W - 1) / (D * W));
    pre += a * vecs + (D > 1 ? vecs * (double)D * 2 : 0) +
           2.0 * (double)(need - M) / (M >= W ? (double)W : 1.0);
    pre_m += x.m_cur * vecs;
  }
  double calls = ls.active <= 1 ? 1 : (double)ls.tasks;
  xir__free(pdirect);
  wctx_free(&x);
  w->footprint_bytes = footprint(p, s);
  w->arith_per_packet = x.arith / x.k + (w->packets ? pre * calls / (double)w->packets : 0);
  w->math_per_packet = x.math / x.k + (w->packets ? pre_m * calls / (double)w->packets : 0);
  if (w->math_per_packet > w->arith_per_packet) w->math_per_packet = w->arith_per_packet;
  w->hw_math_per_packet = x.hmath / x.k;
  if (w->hw_math_per_packet > w->math_per_packet) w->hw_math_per_packet = w->math_per_packet;
  w->memory_per_packet = x.bytes / x.k;
  for (int i = 0; i < XIR_CHAIN_KINDS; i++) w->steps_per_packet[i] = x.steps[i] / x.k;
  return XIR_OK;
}

/* ---- the analytic default policy ---- */

void xir_cost_coefficients_default(xir_cost_coefficients *c) {
  if (!c) return;
  memset(c, 0, sizeof *c); /* no memory hierarchy: the flat rate */
  c->c[XIR_TERM_ARITH] = 1;
  c->c[XIR_TERM_MEMORY] = 0.25;
  c->c[XIR_TERM_BLOCK] = 8;
  c->c[XIR_TERM_IMBALANCE] = 1;
  c->c[XIR_TERM_DISPATCH] = 0;
  c->c[XIR_TERM_ACTIVATION] = 0;
}

void xir_cost_coefficients_experimental(xir_cost_coefficients *c) {
  if (!c) return;
  xir_cost_coefficients_default(c);
  c->c[XIR_TERM_ACTIVATION] = 1000000;
  c->c[XIR_TERM_DISPATCH] = 128;
}

const char *xir_cost_term_name(xir_cost_term t) {
  static const char *names[XIR_TERM_COUNT] = {"arith",     "memory",   "block",
                                              "imbalance", "dispatch", "activation"};
  return (int)t >= 0 && t < XIR_TERM_COUNT ? names[t] : "?";
}

/* Where x lies between the footprints lo < hi, log-linearly: 0 at lo, 1 at hi (not clamped). */
static double level_fraction(double x, double lo, double hi) { return log(x / lo) / log(hi / lo); }

double xir_cost_byte_rate(const xir_cost_coefficients *c, double footprint_per_core) {
  if (!(c->mem_bytes[0] > 0)) return c->c[XIR_TERM_MEMORY];
  const double *B = c->mem_bytes, *N = c->mem_ns;
  double r = N[XIR_MEM_LEVELS - 1];
  if (footprint_per_core <= B[0]) {
    r = N[0];
  } else {
    for (int i = 0; i + 1 < XIR_MEM_LEVELS; i++)
      if (footprint_per_core <= B[i + 1]) {
        double f = level_fraction(footprint_per_core, B[i], B[i + 1]);
        r = N[i] + f * (N[i + 1] - N[i]);
        break;
      }
  }
  return c->c[XIR_TERM_MEMORY] * r;
}

double xir_cost_arith_per_packet(const xir_cost_coefficients *c, const xir_execution_work *w) {
  double chain = 0; /* measured step costs beyond the prior (its floor included) */
  for (int i = 0; i < XIR_CHAIN_KINDS; i++) chain += c->ns_per_step[i] * w->steps_per_packet[i];
  if (!(c->ns_per_math > 0)) return c->c[XIR_TERM_ARITH] * w->arith_per_packet + chain;
  double hw = c->ns_per_hw_math > 0 ? w->hw_math_per_packet : 0;
  return c->c[XIR_TERM_ARITH] * (w->arith_per_packet - w->math_per_packet) +
         c->ns_per_math * (w->math_per_packet - hw) + c->ns_per_hw_math * hw + chain;
}

/* The static imbalance: the critical worker's packets beyond the average, in packets of average
 * work (with equal packets both counts are critical_packets). */
static double static_imbalance(const xir_execution_work *w, const xir_cost_coefficients *c,
                               double arith, double byte) {
  double h = w->active ? w->active : 1;
  double ea = w->critical_arith_packets - (double)w->packets / h;
  double em = w->critical_memory_packets - (double)w->packets / h;
  ea = ea > 0 ? ea : 0;
  em = em > 0 ? em : 0;
  double k = c->c[XIR_TERM_IMBALANCE];
  if (ea == em) return k * ea * (arith + byte * w->memory_per_packet);
  return k * (ea * arith + em * byte * w->memory_per_packet);
}

static double default_term(int t, const xir_execution_work *w, const xir_cost_coefficients *c) {
  double h = w->active ? w->active : 1;
  double byte = xir_cost_byte_rate(c, w->footprint_bytes / h);
  double arith = xir_cost_arith_per_packet(c, w);
  switch (t) {
    case XIR_TERM_ARITH: return arith * (double)w->packets / h;
    case XIR_TERM_MEMORY: return byte * w->memory_per_packet * (double)w->packets / h;
    case XIR_TERM_BLOCK: return c->c[t] * (double)w->blocks / h;
    case XIR_TERM_IMBALANCE: return static_imbalance(w, c, arith, byte);
    case XIR_TERM_DISPATCH: {
      /* beyond L2 (per-core footprint past mem_bytes[0]) a task also restarts its memory
       * streams: ns_per_task_far at mem_bytes[1] and beyond, log-linear from 0 at mem_bytes[0] */
      double far = 0, fp = w->footprint_bytes / h;
      if (c->ns_per_task_far > 0 && c->mem_bytes[0] > 0 && c->mem_bytes[1] > c->mem_bytes[0] &&
          fp > c->mem_bytes[0])
        far = c->ns_per_task_far *
              (fp >= c->mem_bytes[1] ? 1 : level_fraction(fp, c->mem_bytes[0], c->mem_bytes[1]));
      return (c->c[t] + far) * (double)w->critical_tasks;
    }
    case XIR_TERM_ACTIVATION: {
      /* a is the calibrated round trip (xir_runtime_measure_wake): the wake-up reaching the
       * workers, then their completion reaching the caller — two one-way hand-overs, taken as
       * equal. The caller starts at once and the woken workers a/2 later; the caller is the
       * home of task 0, so it holds the critical share, B + d against B − d, and then waits
       * for the last completion: B + max(d, a/2 − d) + a/2. Only the wake-up overlaps the
       * caller's extra work; with the imbalance term charging d, this term is what is left:
       * a/2 + max(0, a/2 − 2d). Measured on 2 workers (2026-12-02, 2 + 1 equal tasks of
       * 0.14–0.66 µs of arithmetic): 94–99 ns over the caller's two tasks, with a/2 = 90 ns;
       * the former max(0, a − 2d) said 0, and chose the pool for sub-µs launches where the
       * caller alone is 1.4× faster (rmsnorm 17×65). */
      double a = c->c[t] * (h - 1);
      if (h < 2) return a;
      double rest = 0.5 * a - 2 * static_imbalance(w, c, arith, byte);
      return 0.5 * a + (rest > 0 ? rest : 0);
    }
    default: return 0;
  }
}

xir_status xir_cost_evaluate(const xir_cost_policy *pol, const xir_execution_work *w,
                             const xir_cost_coefficients *c, xir_cost_terms *out, xir_diag *d) {
  if (!w || !c || !out) {
    if (out) memset(out, 0, sizeof *out);
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_cost_evaluate: %s is NULL",
                    !w ? "the work" : !c ? "the coefficients" : "out");
  }
  memset(out, 0, sizeof *out);
  if (pol && pol->evaluate) {
    xir_status st = pol->evaluate(pol->ud, w, c, out);
    if (st) return xir__err(d, st, "the cost policy's evaluate hook failed (%s)", xir_status_name(st));
  } else {
    double total = 0;
    for (int t = 0; t < XIR_TERM_COUNT; t++) {
      out->term[t] = pol && pol->term[t] ? pol->term[t](pol->ud, w, c) : default_term(t, w, c);
      total += out->term[t];
    }
    out->total = total;
  }
  for (int t = 0; t < XIR_TERM_COUNT; t++)
    if (!isfinite(out->term[t]) || out->term[t] < 0)
      return xir__err(d, XIR_ERR_COST, "cost term '%s' is %g: every term must be finite and >= 0",
                      xir_cost_term_name((xir_cost_term)t), out->term[t]);
  if (!isfinite(out->total) || out->total < 0)
    return xir__err(d, XIR_ERR_COST, "the cost total is %g: it must be finite and >= 0",
                    out->total);
  return XIR_OK;
}

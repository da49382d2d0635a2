/* lower.c — XIR to LLVM IR for one candidate (W, B, ℓ, perm) and one bound shape.
 *
 *   xir_kernel(args, block_begin, block_end):
 *     for blk in [block_begin, block_end):            ← the runtime splits this range (grain G)
 *       for unit in block:                            ← ℓ ≤ W: one packet holding W/ℓ root programs
 *                                                       ℓ > W: one root program over ℓ/W packets
 *         full unit?  ── yes ─► body, mask-free       (full-packet path)
 *                     └─ no ──► body, masked           (inactive lanes clamped, stores masked)
 *                               or ℓ = 1, lin tail       (unclamped, loads and stores masked)
 *     body: values in SSA order; a rank-0 value is computed once per unit; a tile value is
 *           computed pointwise inside the loop nest of each consumer (reduce or store) — no tile
 *           is stored, except the tile results of reductions of 2-D tiles (a small scratch).
 *
 * Lanes. A unit has k = max(1, ℓ/W) packets of W lanes; global lane g = sub·W + lane. With ℓ = 1
 * each lane runs its own root program and tile axes become scalar loops. With ℓ > 1 the ℓ lanes of
 * a root program share the inner axis X: lane j handles the elements c ≡ j (mod ℓ), chunk t covers
 * c = t·ℓ + j, and a ragged last chunk is peeled and masked. Reductions over X accumulate per
 * lane in chunk order, then combine the k packets in a fixed tree and the lanes of a packet by a
 * butterfly (xor distances ℓ/2 … 1): the order is fixed by the candidate.
 *
 * Integer values are tracked as affine functions of the lane (u + s·g) where possible, so that a
 * load whose address is affine with stride 1 is one contiguous vector load, stride 0 a scalar load
 * and anything else a gather. Computed indices are clamped into their dim (memory safety; the
 * oracle reports them as errors). No fast-math flags; math functions come from vmath.c. */
#include <llvm-c/Core.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/program.h"
#include "lower/irutil.h"
#include "lower/stream.h"
#include "lower/lower.h"
#include "lower/vmath.h"

enum { MAXK = 8 };

typedef struct val {
  int aff;               /* 1: integer u + s·g (u a scalar i64) */
  LLVMValueRef u;
  int64_t s;
  LLVMValueRef v[MAXK];  /* vectors, one per packet of the unit (when !aff) */
  /* Also known as lu + Σ dc[a]·coord[a] (ℓ = 1, full units, vector root coordinates): the address
   * analysis that finds a flattened row-major index even where the coordinates wrap inside a
   * packet (access_offset). */
  int lin;
  LLVMValueRef lu;
  int64_t dc[XIR_MAX_ROOT];
  /* ... + tab[g] (lin with tab: units of one packet, k = 1): a compile-time value per lane — the
   * lane's index j within its root program when 1 < ℓ < W (jlane), and what integer arithmetic
   * on it and on constants gives (RoPE's c % 2). With lu a constant and dc = 0 the val is a
   * constant vector. */
  int tab_on;
  int64_t tab[16];
  /* An element offset pu + tab[g] (access_offset; v holds it too): the lanes read a
   * compile-time pattern around pu, which load_elems reads as a window and a shuffle. */
  int pat;
  LLVMValueRef pu;
} val;

/* At most this many buffers' next rows are prefetched in one chunk (more are not: no built-in
 * kernel reads more than 4 rows). */
#define XIR__PREFETCH_BUFS 16

typedef struct lw {
  const xir_program *p;
  const xir_shape *sh;
  const xir_candidate *c;
  xir_diag *d;
  xir_status st;
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  xir__vm *vm;
  xir__cvt_target cvt;     /* hardware f32 <-> bf16/f16 conversions of the target */
  int narrow_masks;        /* constant-mask loads as plain narrow loads (no AVX-512: irutil.h) */
  LLVMValueRef fn;
  LLVMTypeRef f32, i64, i32, i1, ptr, vf, vi, vb;
  unsigned W, k, ell;
  /* Launch-time dims (docs/lowering.md): a dim whose bit in fixed is clear is loaded from the
   * argument block at the entry; dimval[] holds every dim as an i64 value (a constant for the
   * compile-time ones). Pv is the root program count, bstride the buffers' run-time strides and
   * cstride their contiguous ones (products of dims). */
  uint32_t fixed;
  LLVMValueRef dimval[XIR_MAX_DIMS], Pv, contig_flag;
  LLVMValueRef bstride[XIR_MAX_PARAMS][XIR_MAX_RANK], cstride[XIR_MAX_PARAMS][XIR_MAX_RANK];
  /* one past the last element of each buffer: the product of its dims (cend) and, for a
   * strided view, 1 + the sum of (dim − 1)·stride (bend) */
  LLVMValueRef bend[XIR_MAX_PARAMS], cend[XIR_MAX_PARAMS];
  int use_cstride;         /* this unit's addresses use the contiguous strides (lin path) */
  int flat;                /* a whole block of contiguous buffers off the lin path (ℓ = 1): an
                            * access in root order (root_ordered) is at p0 */
  int nowrap;              /* this unit's innermost root coordinate does not wrap (run-time check) */
  int lin_ok;              /* the root extents inside the outermost are compile-time */
  int lin_tail;            /* ℓ = 1, the last unit: root programs unclamped, every vector load
                            * and store masked to the lanes whose root program exists */
  LLVMValueRef buf[XIR_MAX_PARAMS], scal[XIR_MAX_PARAMS];
  /* per unit */
  int full;
  LLVMValueRef p0;         /* first root program of the unit (i64) */
  LLVMValueRef p0_blk, p0_unit; /* p0 = p0_blk (the block's first) + p0_unit (within it) */
  LLVMValueRef p_call_end;      /* block_end · root programs a block: this call's root programs
                                   end there (next_row_prefetch) */
  LLVMValueRef p_home_next;     /* (block_begin + home stride) · root programs a block: the first
                                   root program of this worker's next task (the stride from the
                                   flags slot, XIR__ARGS_HOME_SHIFT; 0 when the launcher did not
                                   set it, and then it is the call's first, never ahead of p0) */
  LLVMValueRef home_stride;     /* that stride, in blocks */
  val coord[XIR_MAX_ROOT]; /* root coordinates (clamped in the masked path) */
  val active;              /* lanes whose root program exists (masked path), as a bool val */
  val jlane;               /* ℓ > 1: the lane's index j within its root program */
  /* per loop body */
  val env[XIR_MAX_DIMS];   /* index along each dim of the current loop nest */
  int env_set[XIR_MAX_DIMS];
  int tail;                /* inside the masked tail chunk of the inner axis */
  int evenodd;             /* a reduction loop whose one tile operand is a bf16 row: its full
                            * chunks load 2W elements as W words, even and odd ones apart
                            * (evenodd_reduction) */
  val inner_c;             /* in the tail chunk: the lane's unclamped element index */
  val *top;                /* rank-0 values, per node */
  int *top_ok;
  val *memo;
  unsigned *memo_gen;
  unsigned gen;
  unsigned ugen;           /* generations of side evaluations (perm_load), never equal to gen */
  LLVMValueRef *scratch;   /* per node: materialized tile reduce results */
  /* Expensive tile values used by several consumers are computed once per unit: the first
   * consumer loop stores them (one vector per chunk and packet), the later ones load them. */
  int *mat_uses;           /* per node: how many consumer loops evaluate it */
  LLVMValueRef *mat_buf;   /* per node: its buffer (allocated on first use) */
  int *mat_share;          /* per node: the materialized node whose buffer it takes over (its
                            * last reader is the loop that first stores this one), or -1 */
  uint8_t *mat_state;      /* per node, per unit: 0 not stored, 1 being stored, 2 stored */
  int nest_dim;            /* the axis of the current consumer loop nest when it is 1-D, or -1 */
  LLVMValueRef mat_index;  /* the chunk (ℓ > 1) or element (ℓ = 1) index of the current point */
  int64_t flat_stride[XIR_MAX_ROOT]; /* ℓ = 1: Σ flat_stride[a]·coord[a] is the root program's index */
  LLVMValueRef entry_alloca_pt;
  /* Root-invariant transcendental tiles (xir__hoisted_tiles) are computed once per call, at the
   * entry, into a buffer indexed by the element; units load them. */
  uint8_t *hoist;
  LLVMValueRef *hoist_buf;
  uint8_t *narrow;         /* xir__narrow_values: sigmoid computed as vmath's sigmoid16 */
  uint8_t *uni;            /* per node: a rank-0 value the same in every lane (uniform_values) */
  uint8_t *nar;            /* per node: a rank-0 value computed on W/ℓ lanes (1 < ℓ < W) and
                              broadcast back (eval_elementwise) */
  int precompute;          /* evaluating hoisted tiles at the entry */
  /* Period buffers (xir__period_buffer_len): per node its length (0: none), its buffer, and
   * whether the unit's values are being computed into it */
  xir__pbuf *pm;
  LLVMValueRef *pm_buf;
  uint8_t *pm_direct;      /* xir__direct_uses: the nodes the chunk loops evaluate */
  int pm_compute;
  /* In a chunk loop (tile_loops_at): the residues c0 mod res_M[j] of the current chunk, carried
   * from chunk to chunk (res_var: their slots; res_cur: this chunk's values), valid while the
   * inner coordinate's offset is res_u */
  int nres;
  int unroll;              /* the most full chunks a chunk loop emits straight-line (xir__chunk_unroll) */
  int64_t res_M[4];
  LLVMValueRef res_var[4], res_cur[4], res_u;
  /* lane0_offset: the access whose indices that vary along the inner axis are known never to
   * clamp (xir__access_in_bounds), so that they are computed without the clamp */
  const xir_node *noclamp;
  int64_t *period;         /* ℓ > 1: per node, its period along the inner axis (xir__inner_period) */
  /* Masked-work skipping (xir__mask_skips): the mask, the consumers whose loops it bounds, and
   * per unit the end of the live range (the largest over the unit's root programs). */
  int mask_id;
  xir__prefix_mask mask;
  uint8_t *skip;
  LLVMValueRef mask_end, mask_end_min; /* the largest and the smallest end of the unit */
  LLVMValueRef rng_lo, rng_hi; /* when set: the mask axis' loop covers only these chunks (ℓ > 1)
                                  or elements (ℓ = 1) */
  LLVMValueRef rng_live;       /* when set: the range's chunks below it are live in every lane:
                                  they run as a loop of their own, where the mask is its live
                                  operand (no comparison, no select) */
  int mask_live;               /* in that loop */
  const val *fill_val;         /* when set: store_body stores it instead of evaluating the value */
  int early_fill;              /* the skipped stores' masked parts are written with +0 before
                                  their live parts (early_fill_ok, emit_early_fill) */
  LLVMValueRef early_hi;       /* there: the first masked chunk (element for ℓ = 1) */
  /* Next-row prefetch (xir__next_row_loads): the loads whose row the next root program reads,
   * prefetched in the chunk loop of consumer pf_at (ℓ ≥ W) */
  uint8_t *pf;
  int pf_at;
  int pf_emit; /* emitting the far copy of a norm's streamed store loop (emit_streamed) */
  int pf_far; /* pf_at is a norm's store loop (xir__cpu_math_prefetch_only): it prefetches the next
                 row into L2, and only in launches with XIR__ARGS_FAR (far_flag) */
  LLVMValueRef far_flag;
  /* the packet values of pf_at's chunk, set by its body (reduce_body, store_body): the chunk's
   * prefetches are spread over them (next_row_prefetch) */
  LLVMValueRef pf_anchor[MAXK];
  LLVMValueRef pf_addr[XIR__PREFETCH_BUFS][XIR__PREFETCH_MAX]; /* the chunk's prefetches */
  int pf_cnt[XIR__PREFETCH_BUFS], pf_nb;
  LLVMValueRef pf_mark; /* the last instruction before the body (after the addresses) */
  LLVMBasicBlockRef pf_block;
  /* Streaming stores (ℓ ≥ W and ℓ = 1): per output buffer, whether this launch writes it with
   * non-temporal stores (the launch's flag and the buffer's alignment, tested at the entry; ℓ = 1
   * also tests each packet's offset in store_body); nt: inside the streaming copy of a store loop
   * (ℓ ≥ W) */
  LLVMValueRef stream_flag, nt_ok[XIR_MAX_PARAMS];
  LLVMValueRef rowbuf_flag; /* XIR__ARGS_STREAM and XIR__ARGS_STREAM_ROWBUF: realign_copy */
  /* ℓ = 1 pair units (pair_units_ok): two packets a unit, a bf16 output's pair stored as one
   * 64-byte vector; nt_pair: the streaming test of such a buffer at 64 bytes (nt_ok skips bf16
   * at ℓ = 1: its 32-byte packets leave half a line to the next one) */
  LLVMValueRef nt_pair[XIR_MAX_PARAMS];
  int pair_ok, pair;       /* pair units may be / are being emitted; with evenodd: their bf16
                            * rows load even and odd elements apart (pair_evenodd_ok) */
  int nt, any_nt;
  uint8_t *mat_save;
  /* Row groups (ℓ ≥ W, short rows: group_size): a group of ilv consecutive root programs is
   * emitted statement by statement, each statement once per program before the next (its own
   * coordinates and rank-0 values: grp_top, grp_top_ok), so that the programs' reduction chains
   * overlap in the core's out-of-order window */
  unsigned ilv;
  struct xir__grp_prog *grp;
  val *grp_top[XIR__GROUP_MAX];
  int *grp_top_ok[XIR__GROUP_MAX];
  /* ... and a rank-0 value of the group as one vector of ilv lanes, lane j program j's
   * (group_fold, group_eval): gv_ok 2 where the programs' values differ (a sum's, or computed
   * from one), 1 where they are one value (a constant's) */
  val *gv;
  int *gv_ok;
} lw;

static LLVMValueRef ci64(lw *L, int64_t v) { return LLVMConstInt(L->i64, (unsigned long long)v, 1); }

static int is_fixed(const lw *L, int dim) { return (int)(L->fixed >> dim & 1); }
/* The value of a compile-time dim (reading a launch-time one is a lowering bug: reported). */
static int64_t dimc(lw *L, int dim) {
  if (!is_fixed(L, dim) && !L->st)
    L->st = xir__err(L->d, XIR_ERR_UNSUPPORTED, "internal: lowering '%s' read launch-time dim %s as a constant",
                     L->p->name, L->p->dims[dim]);
  return L->sh->dims[dim];
}
static LLVMValueRef dimv(lw *L, int dim) { return L->dimval[dim]; }
static LLVMValueRef cf32(lw *L, double v) { return LLVMConstReal(L->f32, v); }

static LLVMValueRef splat(lw *L, LLVMValueRef x) { return xir__ir_splat(L->b, x, L->W); }

/* <W x i64> constant: base + step·lane */
static LLVMValueRef lane_consts(lw *L, int64_t base, int64_t step) {
  LLVMValueRef e[16];
  for (unsigned i = 0; i < L->W; i++) e[i] = ci64(L, base + step * (int64_t)i);
  return LLVMConstVector(e, L->W);
}

static val vaff(LLVMValueRef u, int64_t s) {
  val r;
  memset(&r, 0, sizeof r);
  r.aff = 1;
  r.u = u;
  r.s = s;
  return r;
}

/* The vectors of an integer val (materializing an affine one). */
static void ivecs(lw *L, const val *a, LLVMValueRef *out) {
  if (!a->aff) {
    for (unsigned q = 0; q < L->k; q++) out[q] = a->v[q];
    return;
  }
  LLVMValueRef u = splat(L, a->u);
  for (unsigned q = 0; q < L->k; q++)
    out[q] = a->s == 0 ? u : LLVMBuildAdd(L->b, u, lane_consts(L, a->s * (int64_t)(q * L->W), a->s), "");
}

static val vvec(lw *L, LLVMValueRef *v) {
  val r;
  memset(&r, 0, sizeof r);
  for (unsigned q = 0; q < L->k; q++) r.v[q] = v[q];
  return r;
}

static val vsplat(lw *L, LLVMValueRef x) {
  LLVMValueRef s = splat(L, x), v[MAXK];
  for (unsigned q = 0; q < L->k; q++) v[q] = s;
  return vvec(L, v);
}

static LLVMValueRef intrinsic(lw *L, const char *name, LLVMTypeRef *tys, unsigned ntys,
                              LLVMValueRef *args, unsigned nargs) {
  return xir__ir_intrinsic(L->b, L->mod, name, tys, ntys, args, nargs);
}

/* ---- control flow helpers: counted loops over i64 with the counter in an alloca ---- */

typedef struct loop {
  LLVMValueRef var;
  LLVMBasicBlockRef head, body, exit;
  LLVMValueRef i;
  int once; /* one iteration known at compile time: straight-line code (loop_begin_chunks) */
} loop;

static LLVMValueRef entry_alloca(lw *L, LLVMTypeRef t, const char *name) {
  return xir__ir_entry_alloca(L->ctx, L->fn, t, name);
}

static void loop_begin(lw *L, loop *lp, LLVMValueRef from, LLVMValueRef to) {
  lp->once = 0;
  lp->var = entry_alloca(L, L->i64, "i");
  LLVMBuildStore(L->b, from, lp->var);
  lp->head = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "head");
  /* (the loop storing a masked value over a masked tail is named "fill": test_stream reads it) */
  lp->body = LLVMAppendBasicBlockInContext(L->ctx, L->fn, L->fill_val ? "fill" : "body");
  lp->exit = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "exit");
  LLVMBuildBr(L->b, lp->head);
  LLVMPositionBuilderAtEnd(L->b, lp->head);
  LLVMValueRef i = LLVMBuildLoad2(L->b, L->i64, lp->var, "");
  LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, i, to, ""), lp->body, lp->exit);
  LLVMPositionBuilderAtEnd(L->b, lp->body);
  lp->i = LLVMBuildLoad2(L->b, L->i64, lp->var, "");
}

static int const_of(LLVMValueRef v, int64_t *out);

/* A loop over chunks [from, to): when both are constants one apart (a row of one chunk: C ≤ ℓ)
 * the body is emitted once, straight-line — the light pipeline has no loop passes to remove a
 * one-trip loop's counter, compare and branches, which short rows pay in every loop nest.
 * (tile_loops_at emits up to XIR__UNROLL_CHUNKS constant chunks one after the other the same
 * way, each through this with [t, t + 1).) */
static void loop_begin_chunks(lw *L, loop *lp, LLVMValueRef from, LLVMValueRef to) {
  int64_t a, b;
  memset(lp, 0, sizeof *lp);
  if (const_of(from, &a) && const_of(to, &b) && b - a == 1) {
    lp->once = 1;
    lp->i = from;
    return;
  }
  loop_begin(L, lp, from, to);
}

static void loop_end(lw *L, loop *lp) {
  if (lp->once) return;
  LLVMBuildStore(L->b, LLVMBuildAdd(L->b, lp->i, ci64(L, 1), ""), lp->var);
  LLVMBuildBr(L->b, lp->head);
  LLVMPositionBuilderAtEnd(L->b, lp->exit);
}

/* ---- integer arithmetic with affine tracking ---- */

static LLVMValueRef floordiv(lw *L, LLVMValueRef a, LLVMValueRef b, int rem) {
  LLVMValueRef one = LLVMTypeOf(a) == L->i64 ? ci64(L, 1) : splat(L, ci64(L, 1));
  return xir__ir_floordiv(L->b, a, b, one, rem);
}

static LLVMValueRef int_op(lw *L, int op, LLVMValueRef a, LLVMValueRef b) {
  switch (op) {
    case XIR_OP_ADD: return LLVMBuildAdd(L->b, a, b, "");
    case XIR_OP_SUB: return LLVMBuildSub(L->b, a, b, "");
    case XIR_OP_MUL: return LLVMBuildMul(L->b, a, b, "");
    case XIR_OP_DIV: return floordiv(L, a, b, 0);
    case XIR_OP_REM: return floordiv(L, a, b, 1);
    case XIR_OP_MAX: return LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSGT, a, b, ""), a, b, "");
    case XIR_OP_MIN: return LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, a, b, ""), a, b, "");
    case XIR_OP_NEG: return LLVMBuildNeg(L->b, a, "");
    case XIR_OP_ABS: {
      LLVMValueRef n = LLVMBuildNeg(L->b, a, "");
      return LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, a, LLVMConstNull(LLVMTypeOf(a)), ""), n, a, "");
    }
    default: return NULL;
  }
}

static LLVMValueRef smin(lw *L, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, a, b, ""), a, b, "");
}

static LLVMValueRef smax(lw *L, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSGT, a, b, ""), a, b, "");
}

static int const_of(LLVMValueRef v, int64_t *out) {
  if (!v || !LLVMIsAConstantInt(v)) return 0;
  *out = LLVMConstIntGetSExtValue(v);
  return 1;
}

/* floor(a / M) or floor-mod(a, M) of an affine a = u + s·g (s ≠ 0) by a constant M > 0, without
 * a per-lane division: with u = q0·M + r0 (one scalar division) and each lane's offset
 * d = s·g = dd·M + dm (compile-time constants, dm in [0, M)), lane g is q0 + dd + w and
 * r0 + dm − w·M, where w = (r0 + dm ≥ M) ∈ {0, 1}: the same integers as dividing u + d lane by
 * lane (vector i64 division has no instruction and is scalarized). RoPE's c % HD when no chunk
 * width is a multiple of HD. 0 when a, b have another form. */
static int affine_divmod(lw *L, int op, const val *a, const val *b, val *out) {
  int64_t M = 0;
  if ((op != XIR_OP_DIV && op != XIR_OP_REM) || !a->aff || a->s == 0 || !b->aff || b->s != 0 ||
      !const_of(b->u, &M) || M <= 0 || M > (1LL << 40) || a->s > (1LL << 20) || a->s < -(1LL << 20))
    return 0;
  LLVMValueRef q0 = floordiv(L, a->u, b->u, 0);
  LLVMValueRef r0 = LLVMBuildSub(L->b, a->u, LLVMBuildMul(L->b, q0, b->u, ""), "");
  LLVMValueRef sr0 = splat(L, r0), sq0 = splat(L, q0), sM = splat(L, b->u);
  LLVMValueRef r[MAXK];
  for (unsigned q = 0; q < L->k; q++) {
    LLVMValueRef dm[16], dd[16];
    for (unsigned i = 0; i < L->W; i++) {
      int64_t d = a->s * (int64_t)(q * L->W + i), qd = d / M - (d % M < 0), rd = d - qd * M;
      dm[i] = ci64(L, rd);
      dd[i] = ci64(L, qd);
    }
    LLVMValueRef t = LLVMBuildAdd(L->b, sr0, LLVMConstVector(dm, L->W), "");
    LLVMValueRef w = LLVMBuildICmp(L->b, LLVMIntSGE, t, sM, "");
    if (op == XIR_OP_REM) {
      r[q] = LLVMBuildSelect(L->b, w, LLVMBuildSub(L->b, t, sM, ""), t, "");
    } else {
      LLVMValueRef base = LLVMBuildAdd(L->b, sq0, LLVMConstVector(dd, L->W), "");
      r[q] = LLVMBuildAdd(L->b, base, LLVMBuildZExt(L->b, w, LLVMTypeOf(base), ""), "");
    }
  }
  *out = vvec(L, r);
  return 1;
}

static val int_binop_vec(lw *L, int op, const val *a, const val *b) {
  int64_t cv = 0;
  val dmv;
  if (affine_divmod(L, op, a, b, &dmv)) return dmv;
  if (a->aff && b->aff) {
    if (op == XIR_OP_ADD) return vaff(LLVMBuildAdd(L->b, a->u, b->u, ""), a->s + b->s);
    if (op == XIR_OP_SUB) return vaff(LLVMBuildSub(L->b, a->u, b->u, ""), a->s - b->s);
    if (op == XIR_OP_MUL && b->s == 0 && (a->s == 0 || const_of(b->u, &cv)))
      return vaff(LLVMBuildMul(L->b, a->u, b->u, ""), a->s == 0 ? 0 : a->s * cv);
    if (op == XIR_OP_MUL && a->s == 0 && const_of(a->u, &cv))
      return vaff(LLVMBuildMul(L->b, a->u, b->u, ""), b->s * cv);
    if (a->s == 0 && b->s == 0) return vaff(int_op(L, op, a->u, b->u), 0);
  }
  LLVMValueRef va[MAXK], vb[MAXK], r[MAXK];
  ivecs(L, a, va);
  ivecs(L, b, vb);
  for (unsigned q = 0; q < L->k; q++) r[q] = int_op(L, op, va[q], vb[q]);
  return vvec(L, r);
}

/* The linear form of a val in the root coordinates: lin vals, and uniform affine ones (dc = 0);
 * tab (zero without one) its per-lane constants. */
static int lin_form(const val *a, LLVMValueRef *lu, int64_t *dc, int64_t *tab) {
  if (a->lin) {
    *lu = a->lu;
    memcpy(dc, a->dc, sizeof a->dc);
    if (a->tab_on) memcpy(tab, a->tab, sizeof a->tab);
    else memset(tab, 0, sizeof a->tab);
    return 1;
  }
  if (!a->aff || a->s != 0) return 0;
  *lu = a->u;
  memset(dc, 0, sizeof a->dc);
  memset(tab, 0, sizeof a->tab);
  return 1;
}

/* A constant-per-lane val (lin, dc = 0, lu a constant; or a constant affine one in a unit of one
 * packet): its value in each lane. */
static int lane_consts_of(lw *L, const val *a, int64_t *out) {
  int64_t c;
  if (L->k != 1) return 0;
  if (a->aff) {
    if (!const_of(a->u, &c)) return 0;
    for (unsigned i = 0; i < L->W; i++) {
      int64_t d;
      if (__builtin_mul_overflow(a->s, (int64_t)i, &d) || __builtin_add_overflow(c, d, &out[i])) return 0;
    }
    return 1;
  }
  if (!a->lin || !a->tab_on || !const_of(a->lu, &c)) return 0;
  for (int i = 0; i < XIR_MAX_ROOT; i++)
    if (a->dc[i]) return 0;
  for (unsigned i = 0; i < L->W; i++)
    if (__builtin_add_overflow(c, a->tab[i], &out[i])) return 0;
  return 1;
}

/* The val of compile-time lane values t (a constant vector). */
static val vtab(lw *L, const int64_t *t) {
  LLVMValueRef e[16];
  for (unsigned i = 0; i < L->W; i++) e[i] = ci64(L, t[i]);
  LLVMValueRef v = LLVMConstVector(e, L->W);
  val r = vvec(L, &v);
  r.lin = 1;
  r.lu = ci64(L, 0);
  r.tab_on = 1;
  memcpy(r.tab, t, sizeof r.tab[0] * L->W);
  return r;
}

/* Integer binary op; a non-affine result keeps its linear form in the root coordinates (and its
 * per-lane constants) through add, sub and multiplication by a constant, and two constant-per-
 * lane operands give a constant-per-lane result. */
static val int_binop(lw *L, int op, const val *a, const val *b) {
  int64_t ta[16], tb[16];
  if (!(a->aff && b->aff) && lane_consts_of(L, a, ta) && lane_consts_of(L, b, tb)) {
    int64_t t[16];
    int ok = 1;
    for (unsigned i = 0; i < L->W && ok; i++) ok = xir__const_int_op(op, ta[i], tb[i], &t[i]);
    if (ok) return vtab(L, t);
  }
  val r = int_binop_vec(L, op, a, b);
  LLVMValueRef ua, ub;
  int64_t da[XIR_MAX_ROOT], db[XIR_MAX_ROOT], cv;
  if (r.aff || !lin_form(a, &ua, da, ta) || !lin_form(b, &ub, db, tb)) return r;
  /* (a per-lane constant that overflows int64 drops the form: the vectors wrap as LLVM's do) */
  int ovf = 0;
  if (op == XIR_OP_ADD || op == XIR_OP_SUB) {
    r.lu = op == XIR_OP_ADD ? LLVMBuildAdd(L->b, ua, ub, "") : LLVMBuildSub(L->b, ua, ub, "");
    for (int i = 0; i < XIR_MAX_ROOT; i++) r.dc[i] = op == XIR_OP_ADD ? da[i] + db[i] : da[i] - db[i];
    for (int i = 0; i < 16; i++)
      ovf |= op == XIR_OP_ADD ? __builtin_add_overflow(ta[i], tb[i], &r.tab[i])
                              : __builtin_sub_overflow(ta[i], tb[i], &r.tab[i]);
  } else if (op == XIR_OP_MUL && b->aff && b->s == 0 && const_of(b->u, &cv)) {
    r.lu = LLVMBuildMul(L->b, ua, ub, "");
    for (int i = 0; i < XIR_MAX_ROOT; i++) r.dc[i] = da[i] * cv;
    for (int i = 0; i < 16; i++) ovf |= __builtin_mul_overflow(ta[i], cv, &r.tab[i]);
  } else if (op == XIR_OP_MUL && a->aff && a->s == 0 && const_of(a->u, &cv)) {
    r.lu = LLVMBuildMul(L->b, ua, ub, "");
    for (int i = 0; i < XIR_MAX_ROOT; i++) r.dc[i] = db[i] * cv;
    for (int i = 0; i < 16; i++) ovf |= __builtin_mul_overflow(tb[i], cv, &r.tab[i]);
  } else {
    return r;
  }
  if (ovf) {
    memset(r.tab, 0, sizeof r.tab);
    return r;
  }
  r.lin = 1;
  r.tab_on = a->tab_on || b->tab_on;
  return r;
}

static val int_unop(lw *L, int op, const val *a) {
  if (a->aff && a->s == 0) return vaff(int_op(L, op, a->u, NULL), 0);
  int64_t t[16];
  if (!a->aff && (op == XIR_OP_NEG || op == XIR_OP_ABS) && lane_consts_of(L, a, t)) {
    /* per-lane constants stay such (as the work model's const_index_at folds them) */
    int ok = 1;
    for (unsigned i = 0; i < L->W && ok; i++) {
      ok = t[i] != INT64_MIN;
      t[i] = op == XIR_OP_NEG || t[i] < 0 ? -t[i] : t[i];
    }
    if (ok) return vtab(L, t);
  }
  if (a->aff && op == XIR_OP_NEG) return vaff(LLVMBuildNeg(L->b, a->u, ""), -a->s);
  LLVMValueRef va[MAXK], r[MAXK];
  ivecs(L, a, va);
  for (unsigned q = 0; q < L->k; q++) r[q] = int_op(L, op, va[q], NULL);
  return vvec(L, r);
}

/* Clamps an integer val into [0, hi]. */
static val clamp_v(lw *L, const val *a, LLVMValueRef hi) {
  val lo0 = vaff(ci64(L, 0), 0), top = vaff(hi, 0);
  val t = int_binop(L, XIR_OP_MAX, a, &lo0);
  return int_binop(L, XIR_OP_MIN, &t, &top);
}
static val clamp(lw *L, const val *a, int64_t hi) { return clamp_v(L, a, ci64(L, hi)); }

/* An alloca of factor × Π dims[i] elements of t in the entry block, before its terminator
 * (every dim value is loaded before it): a run-time size when a dim is a launch-time one. */
static LLVMValueRef entry_array(lw *L, LLVMTypeRef t, const int8_t *dims, int ndims,
                                int64_t factor, const char *name) {
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(L->ctx);
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(L->fn);
  LLVMValueRef term = LLVMGetBasicBlockTerminator(entry);
  if (term) LLVMPositionBuilderBefore(eb, term);
  else LLVMPositionBuilderAtEnd(eb, entry);
  LLVMValueRef count = ci64(L, factor);
  for (int i = 0; i < ndims; i++) count = LLVMBuildMul(eb, count, dimv(L, dims[i]), "");
  LLVMValueRef a = LLVMBuildArrayAlloca(eb, t, count, name);
  LLVMDisposeBuilder(eb);
  return a;
}

/* ---- the unit: root coordinates ---- */

static void unit_coords(lw *L) {
  const xir_program *p = L->p;
  unsigned ell = L->ell;
  val rp;
  if (ell >= L->W) {
    rp = vaff(L->p0, 0);
  } else if (ell == 1) {
    rp = vaff(L->p0, 1);
  } else {
    LLVMValueRef s = splat(L, L->p0);
    LLVMValueRef e[16];
    for (unsigned i = 0; i < L->W; i++) e[i] = ci64(L, (int64_t)(i / ell));
    LLVMValueRef v = LLVMBuildAdd(L->b, s, LLVMConstVector(e, L->W), "");
    rp = vvec(L, &v);
  }
  /* lanes whose root program exists */
  if (!L->full && !(rp.aff && rp.s == 0)) {
    LLVMValueRef v[MAXK], pv = splat(L, L->Pv), r[MAXK];
    ivecs(L, &rp, v);
    for (unsigned q = 0; q < L->k; q++) {
      r[q] = LLVMBuildICmp(L->b, LLVMIntSLT, v[q], pv, "");
      if (!L->lin_tail)
        v[q] = LLVMBuildSelect(L->b, r[q], v[q], splat(L, LLVMBuildSub(L->b, L->Pv, ci64(L, 1), "")), "");
    }
    L->active = vvec(L, r);
    if (!L->lin_tail) rp = vvec(L, v); /* else rp stays p0 + lane: its loads are masked */
  } else {
    memset(&L->active, 0, sizeof L->active);
  }
  /* decompose: the last axis of perm is the fastest */
  for (int i = p->nroot - 1; i >= 0; i--) {
    int axis = L->c->perm[i];
    int ed = p->root[axis].dim;
    if (i == 0) {
      L->coord[axis] = rp;
      break;
    }
    val ev = vaff(dimv(L, ed), 0);
    if (rp.aff && rp.s == 1 && ((is_fixed(L, ed) && dimc(L, ed) % (L->W * L->k) == 0) || L->nowrap)) {
      /* units start at multiples of their k·W root programs (ℓ = 1: k = 2 in pair units) and
       * E is a multiple of k·W, or the unit was checked at run time not to wrap (nowrap): no
       * wrap inside a unit */
      /* root program indices and dims are >= 0: unsigned (a shift and a mask for a power of
       * two, no sign fix-up) */
      if (ell == 1 && rp.u == L->p0 && is_fixed(L, ed) && L->p0_blk &&
          dimc(L, ed) % (int64_t)L->c->B == 0) {
        /* a block of B root programs starts at a multiple of B and E is one: the block stays in
         * one row, so its outer coordinates and its first inner one are computed once per block
         * (loop-invariant in the unit loop), and the packets step by W from there */
        L->coord[axis] = vaff(LLVMBuildAdd(L->b, LLVMBuildURem(L->b, L->p0_blk, dimv(L, ed), ""),
                                           L->p0_unit, ""), 1);
        rp = vaff(LLVMBuildUDiv(L->b, L->p0_blk, dimv(L, ed), ""), 0);
        continue;
      }
      L->coord[axis] = vaff(LLVMBuildURem(L->b, rp.u, dimv(L, ed), ""), 1);
      rp = vaff(LLVMBuildUDiv(L->b, rp.u, dimv(L, ed), ""), 0);
    } else {
      L->coord[axis] = int_binop(L, XIR_OP_REM, &rp, &ev);
      rp = int_binop(L, XIR_OP_DIV, &rp, &ev);
    }
  }
  /* ℓ = 1, full unit: the root program index is p0 + lane = Σ flat_stride[a]·coord[a], so a
   * coordinate that is a vector is also a linear form (see access_offset). The same for
   * 1 < ℓ < W on the lin path, where lane g holds root program p0 + ⌊g/ℓ⌋. */
  if ((ell == 1 || ell < L->W) && (L->full || L->lin_tail) && L->lin_ok) {
    int64_t S = 1;
    for (int i = p->nroot - 1; i >= 0; i--) {
      int axis = L->c->perm[i];
      L->flat_stride[axis] = S;
      if (i > 0) S *= dimc(L, p->root[axis].dim);
      if (!L->coord[axis].aff) {
        L->coord[axis].lin = 1;
        L->coord[axis].lu = ci64(L, 0);
        memset(L->coord[axis].dc, 0, sizeof L->coord[axis].dc);
        L->coord[axis].dc[axis] = 1;
      }
    }
  }
  if (ell > 1) {
    if (ell >= L->W) {
      L->jlane = vaff(ci64(L, 0), 1);
    } else {
      /* g mod ℓ: compile-time per lane (its tab), in every unit */
      int64_t t[16];
      for (unsigned i = 0; i < L->W; i++) t[i] = (int64_t)(i % ell);
      L->jlane = vtab(L, t);
    }
  }
}

/* ---- pointwise evaluation ---- */

static val eval(lw *L, int id);

static int is_index_exact(const xir_node *n) {
  return n->op == XIR_OP_ROOT || n->op == XIR_OP_IOTA;
}

/* Whether load/store n (nidx indices) reads its buffer in root order: the buffer's dims are the
 * root axes' extents, outermost first as the candidate's perm orders them, and each index is
 * that root axis. In a contiguous row-major buffer its element is then at the root program's
 * flattened index, whatever the dims' values. */
static int root_ordered(const lw *L, const xir_node *n, int nidx) {
  const xir_program *p = L->p;
  const xir_param *q = &p->params[n->ref];
  if (q->rank != p->nroot || nidx != p->nroot) return 0;
  for (int a = 0; a < nidx; a++) {
    int ax = L->c->perm[a];
    if (n->args[a] < 0 || p->nodes[n->args[a]].op != XIR_OP_ROOT || p->nodes[n->args[a]].ref != ax ||
        q->dims[a] != p->root[ax].dim)
      return 0;
  }
  return 1;
}

/* Whether the body has a root-ordered load or store (root_ordered); *only: and uses the root
 * coordinates only as the indices of such accesses (then on the flat path no coordinate is used
 * at all). */
static int root_order_use(const lw *L, int *only) {
  const xir_program *p = L->p;
  int any = 0;
  *only = 1;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    int nidx = n->op == XIR_OP_LOAD ? n->nargs : n->op == XIR_OP_STORE ? n->nargs - 1 : 0;
    int ordered = nidx > 0 && root_ordered(L, n, nidx);
    any |= ordered;
    for (int a = 0; a < n->nargs; a++)
      if (n->args[a] >= 0 && p->nodes[n->args[a]].op == XIR_OP_ROOT && !(ordered && a < nidx))
        *only = 0;
  }
  *only &= any;
  return any;
}

/* Element offset of a load/store at the current env. */
static val access_offset(lw *L, const xir_node *n, int nidx) {
  const xir_param *q = &L->p->params[n->ref];
  /* a whole block of contiguous buffers (ℓ = 1, every lane a root program, the contiguity flag
   * checked): consecutive root programs address consecutive elements, across rows too, with
   * launch-time dims — no coordinate enters the address (their divisions die unused) */
  if (L->flat && L->full && L->ell == 1 && root_ordered(L, n, nidx)) return vaff(L->p0, 1);
  val off = vaff(ci64(L, 0), 0);
  for (int kdim = nidx - 1; kdim >= 0; kdim--) {
    int bd = q->dims[kdim];
    val ix;
    if (n->args[kdim] < 0) {
      ix = L->env[bd];
    } else {
      ix = eval(L, n->args[kdim]);
      int inb = L->noclamp == n && L->period && L->period[n->args[kdim]] != 1;
      if (!is_index_exact(&L->p->nodes[n->args[kdim]]) && !inb)
        ix = clamp_v(L, &ix, LLVMBuildSub(L->b, dimv(L, bd), ci64(L, 1), ""));
    }
    /* the run-time strides (a strided view), or the contiguous ones where the unit's addresses
     * rely on rows being adjacent (the lin path, taken only when every buffer is contiguous) */
    val sv = vaff(kdim == nidx - 1 ? ci64(L, 1)
                  : L->use_cstride ? L->cstride[n->ref][kdim] : L->bstride[n->ref][kdim], 0);
    val term = int_binop(L, XIR_OP_MUL, &ix, &sv);
    off = int_binop(L, XIR_OP_ADD, &off, &term);
  }
  /* Address analysis: an offset u + A·(Σ flat_stride[a]·coord[a]) + tab[g] is u + A·p0 + pi[g]
   * with pi[g] = A·g + tab[g] (ℓ = 1: lane g holds root program p0 + g) or A·⌊g/ℓ⌋ + tab[g]
   * (1 < ℓ < W: p0 + ⌊g/ℓ⌋) — compile-time lane offsets. Where pi[g] = s·g it is affine:
   * consecutive root programs address consecutive elements (ℓ = 1, stride A) even where the
   * coordinates wrap inside the packet (a row-major buffer indexed by the root axes in order), and
   * with 1 < ℓ < W the ℓ lanes of each of the packet's root programs address its row of ℓ
   * elements, the rows one after the other (x[r, c] with C = ℓ: one vector load). Other pi keep
   * the vectors and note the pattern (pat: a window load and a shuffle, load_elems). */
  if (!off.aff && off.lin) {
    int64_t A = off.dc[L->c->perm[L->p->nroot - 1]];
    int ok = L->ell == 1 ? A != 0 : L->ell < L->W;
    for (int a = 0; a < L->p->nroot && ok; a++) ok = off.dc[a] == A * L->flat_stride[a];
    if (ok && L->ell == 1 && !off.tab_on)
      return vaff(LLVMBuildAdd(L->b, off.lu, LLVMBuildMul(L->b, L->p0, ci64(L, A), ""), ""), A);
    if (ok && L->k == 1 && L->W >= 2) {
      int64_t pi[16];
      for (unsigned g = 0; g < L->W; g++)
        pi[g] = A * (L->ell == 1 ? (int64_t)g : (int64_t)(g / L->ell)) + (off.tab_on ? off.tab[g] : 0);
      int64_t st = pi[1] - pi[0];
      int aff = pi[0] == 0;
      for (unsigned g = 0; g < L->W && aff; g++) aff = pi[g] == st * (int64_t)g;
      LLVMValueRef u = A ? LLVMBuildAdd(L->b, off.lu, LLVMBuildMul(L->b, L->p0, ci64(L, A), ""), "") : off.lu;
      if (aff) return vaff(u, st);
      val r;
      memset(&r, 0, sizeof r);
      LLVMValueRef e[16];
      for (unsigned g = 0; g < L->W; g++) e[g] = ci64(L, pi[g]);
      r.v[0] = LLVMBuildAdd(L->b, splat(L, u), LLVMConstVector(e, L->W), "");
      r.pat = 1;
      r.pu = u;
      memcpy(r.tab, pi, sizeof pi);
      return r;
    }
  }
  return off;
}

/* The in-memory element type of a buffer of elem (f32, i64, or i16 bits for bf16/f16). */
static LLVMTypeRef mem_type(lw *L, int elem) {
  return elem == XIR_I64 ? L->i64 : elem == XIR_F32 ? L->f32 : LLVMInt16TypeInContext(L->ctx);
}

static int is_half(int elem) { return elem == XIR_BF16 || elem == XIR_F16; }

/* The elements base[off] of every lane, of a buffer of elem (f32, i64 for an i64 input buffer,
 * or bf16/f16 converted to f32 after the load): a scalar load when the offset is uniform (a splat
 * for f32, an affine stride-0 val for i64), contiguous vector loads at stride 1, else a gather. */
static void lane_mask(lw *L, int covers_inner, LLVMValueRef *m);

static LLVMValueRef window_packet(lw *L, LLVMValueRef base, int elem, const xir__wsplit *sp, LLVMValueRef u0);
static unsigned mask_const_bits(LLVMValueRef m, uint64_t *bits);

static val load_elems(lw *L, LLVMValueRef base, val off, int elem) {
  int i64 = elem == XIR_I64, h = is_half(elem);
  LLVMTypeRef t = mem_type(L, elem), vt = LLVMVectorType(t, L->W);
  unsigned align = (unsigned)xir_elem_size((xir_elem)elem);
  LLVMValueRef r[MAXK], tm[MAXK];
  /* in a row's tail chunk the lanes past the row's end read nothing (the element index is not
   * clamped there), nor do the lanes past the last root program in the lin tail unit */
  int tail = ((L->ell > 1 && L->tail) || L->lin_tail) && !(off.aff && off.s == 0);
  if (tail) lane_mask(L, 1, tm);
  if (off.aff && off.s == 1 && tail) {
    for (unsigned q = 0; q < L->k; q++) {
      LLVMValueRef o = LLVMBuildAdd(L->b, off.u, ci64(L, (int64_t)(q * L->W)), "");
      LLVMValueRef ptr = LLVMBuildGEP2(L->b, t, base, &o, 1, "");
      uint64_t bits;
      if (L->narrow_masks && mask_const_bits(tm[q], &bits)) {
        /* a tail packet over a compile-time dim without AVX-512: plain narrow loads */
        r[q] = xir__ir_mask_load(L->b, L->mod, t, L->W, ptr, bits, align, LLVMConstNull(vt), 1);
      } else {
        LLVMTypeRef tys[2] = {vt, L->ptr};
        LLVMValueRef args[4] = {ptr, LLVMConstInt(L->i32, align, 0),
                                tm[q] ? tm[q] : LLVMConstAllOnes(L->vb), LLVMConstNull(vt)};
        r[q] = intrinsic(L, "llvm.masked.load", tys, 2, args, 4);
      }
      if (h) r[q] = xir__cvt_to_f32(L->b, &L->cvt, elem, r[q]);
    }
    return vvec(L, r);
  }
  if (off.aff && off.s == 0) {
    LLVMValueRef ptr = LLVMBuildGEP2(L->b, t, base, &off.u, 1, "");
    LLVMValueRef x = LLVMBuildLoad2(L->b, t, ptr, "");
    LLVMSetAlignment(x, align);
    if (h) x = xir__cvt_to_f32(L->b, &L->cvt, elem, x);
    return i64 ? vaff(x, 0) : vsplat(L, x);
  }
  if (off.aff && off.s == 1 && L->evenodd && elem == XIR_BF16 && L->k % 2 == 0) {
    /* 2W bf16 elements as W 32-bit words: word j holds element 2j in its low half and 2j + 1 in
     * its high half, so vector q gets the even elements (word << 16) and vector q + 1 the odd
     * ones (word & 0xffff0000) — the bits of the usual conversion, two integer operations per
     * 2W elements instead of a widening shuffle and a shift per W. Only in ℓ = 1 pair units whose
     * every row access is such a load or store (pair_evenodd_ok: the store interleaves back), or
     * in a reduction whose one tile operand this load is (evenodd_reduction): every lane of it
     * then sees its elements in the same order, and a sum, max or min does not care which lane
     * holds which element. */
    LLVMTypeRef wt = LLVMVectorType(L->i32, L->W);
    LLVMValueRef s16[16], hi[16];
    for (unsigned i = 0; i < L->W; i++) {
      s16[i] = LLVMConstInt(L->i32, 16, 0);
      hi[i] = LLVMConstInt(L->i32, 0xffff0000u, 0);
    }
    for (unsigned q = 0; q < L->k; q += 2) {
      LLVMValueRef o = LLVMBuildAdd(L->b, off.u, ci64(L, (int64_t)(q * L->W)), "");
      LLVMValueRef ptr = LLVMBuildGEP2(L->b, t, base, &o, 1, "");
      LLVMValueRef w = LLVMBuildLoad2(L->b, wt, ptr, "");
      LLVMSetAlignment(w, align);
      r[q] = LLVMBuildBitCast(L->b, LLVMBuildShl(L->b, w, LLVMConstVector(s16, L->W), ""), L->vf, "");
      r[q + 1] = LLVMBuildBitCast(L->b, LLVMBuildAnd(L->b, w, LLVMConstVector(hi, L->W), ""), L->vf, "");
    }
    return vvec(L, r);
  }
  if (off.aff && off.s == 1) {
    for (unsigned q = 0; q < L->k; q++) {
      LLVMValueRef o = LLVMBuildAdd(L->b, off.u, ci64(L, (int64_t)(q * L->W)), "");
      LLVMValueRef ptr = LLVMBuildGEP2(L->b, t, base, &o, 1, "");
      r[q] = LLVMBuildLoad2(L->b, vt, ptr, "");
      LLVMSetAlignment(r[q], align);
      if (h) r[q] = xir__cvt_to_f32(L->b, &L->cvt, elem, r[q]);
    }
    return vvec(L, r);
  }
  if (off.aff && off.s == 2 && !tail && L->W >= 2) {
    /* stride 2: two contiguous vectors (the second without its last element, one past the last
     * lane's) and one shuffle of their even elements, instead of a gather */
    LLVMValueRef m[16], sh[16];
    for (unsigned i = 0; i < L->W; i++) {
      m[i] = LLVMConstInt(L->i1, i + 1 < L->W, 0);
      sh[i] = LLVMConstInt(L->i32, 2 * i, 0);
    }
    for (unsigned q = 0; q < L->k; q++) {
      LLVMValueRef o = LLVMBuildAdd(L->b, off.u, ci64(L, (int64_t)(2 * q * L->W)), "");
      LLVMValueRef p0 = LLVMBuildGEP2(L->b, t, base, &o, 1, "");
      LLVMValueRef o1 = LLVMBuildAdd(L->b, o, ci64(L, (int64_t)L->W), "");
      LLVMValueRef p1 = LLVMBuildGEP2(L->b, t, base, &o1, 1, "");
      LLVMValueRef lo = LLVMBuildLoad2(L->b, vt, p0, "");
      LLVMSetAlignment(lo, align);
      if (L->narrow_masks) {
        /* without AVX-512 a masked load is slow (irutil.h): the W elements before the last one
         * read instead (o + W − 1 .. o + 2W − 2, all between the first and last lanes' elements),
         * their odd elements the upper lanes' */
        LLVMValueRef o2 = LLVMBuildAdd(L->b, o, ci64(L, (int64_t)L->W - 1), "");
        LLVMValueRef hi2 = LLVMBuildLoad2(L->b, vt, LLVMBuildGEP2(L->b, t, base, &o2, 1, ""), "");
        LLVMSetAlignment(hi2, align);
        LLVMValueRef sh2[16];
        for (unsigned i = 0; i < L->W; i++) sh2[i] = LLVMConstInt(L->i32, 2 * i < L->W ? 2 * i : 2 * i + 1, 0);
        r[q] = LLVMBuildShuffleVector(L->b, lo, hi2, LLVMConstVector(sh2, L->W), "");
        if (h) r[q] = xir__cvt_to_f32(L->b, &L->cvt, elem, r[q]);
        continue;
      }
      LLVMTypeRef tys[2] = {vt, L->ptr};
      LLVMValueRef args[4] = {p1, LLVMConstInt(L->i32, align, 0), LLVMConstVector(m, L->W), LLVMGetPoison(vt)};
      LLVMValueRef hi = intrinsic(L, "llvm.masked.load", tys, 2, args, 4);
      r[q] = LLVMBuildShuffleVector(L->b, lo, hi, LLVMConstVector(sh, L->W), "");
      if (h) r[q] = xir__cvt_to_f32(L->b, &L->cvt, elem, r[q]);
    }
    return vvec(L, r);
  }
  if (off.pat) {
    /* compile-time lane offsets pu + tab[g] (access_offset): one or two masked loads of the
     * elements the live lanes read and a shuffle (lanes past the row's end in its tail chunk:
     * zero, as the gather's) — rope_cache's pos[r] at ℓ = 2, a weight w[c] at C = ℓ < W, two
     * rows of 24 at ℓ = 8 (a window each) */
    int64_t cv[16];
    int live[16], ok = 1;
    xir__wsplit sp;
    if (tail) ok = lane_consts_of(L, &L->inner_c, cv) && !L->lin_tail && (L->full || !L->active.v[0]);
    for (unsigned g = 0; g < L->W && ok; g++) live[g] = !tail || cv[g] < dimc(L, L->c->inner_dim);
    if (ok && xir__window_lanes(off.tab, live, L->W, 0, &sp)) {
      r[0] = window_packet(L, base, elem, &sp, off.pu);
      LLVMValueRef lm[16];
      int any_dead = 0;
      for (unsigned g = 0; g < L->W; g++) {
        any_dead |= sp.src[g] < 0;
        lm[g] = LLVMConstInt(L->i1, sp.src[g] >= 0, 0);
      }
      if (any_dead)
        r[0] = LLVMBuildSelect(L->b, LLVMConstVector(lm, L->W), r[0], LLVMConstNull(LLVMTypeOf(r[0])), "");
      return vvec(L, r);
    }
  }
  LLVMValueRef ov[MAXK];
  ivecs(L, &off, ov);
  LLVMTypeRef vp = LLVMVectorType(L->ptr, L->W);
  LLVMValueRef ones = LLVMConstAllOnes(L->vb);
  for (unsigned q = 0; q < L->k; q++) {
    LLVMValueRef ptrs = LLVMBuildGEP2(L->b, t, base, &ov[q], 1, "");
    LLVMTypeRef tys[2] = {vt, vp};
    LLVMValueRef gm = tail && tm[q] ? tm[q] : ones;
    LLVMValueRef args[4] = {ptrs, LLVMConstInt(L->i32, align, 0), gm,
                            tail ? LLVMConstNull(vt) : LLVMGetPoison(vt)};
    r[q] = intrinsic(L, "llvm.masked.gather", tys, 2, args, 4);
    if (h) r[q] = xir__cvt_to_f32(L->b, &L->cvt, elem, r[q]);
  }
  return vvec(L, r);
}

static val load_at(lw *L, LLVMValueRef base, val off) { return load_elems(L, base, off, XIR_F32); }

static int type_has(const xir_type *t, int dim) {
  for (int i = 0; i < t->rank; i++)
    if (t->axes[i] == dim) return 1;
  return 0;
}

/* 1 when every residue a chunk can start at (c0 = t·ℓ mod P) sees the local pattern: then no
 * chunk needs the run-time test or the gather (rope_cache at HD = 48, ℓ = 16: the chunks start
 * at 0, 16 and 32 of a head and never cross one; the test, and the gather's index vectors that
 * were computed in every chunk, cost 20 instructions a packet: 8192×48 took 70 µs, 52 without). */
static int every_chunk_good(lw *L, const xir__lpat *pt) {
  uint8_t good[XIR_LPAT_MAXP], reach[XIR_LPAT_MAXP];
  return xir__window_local_residues(pt, L->ell, L->W, good, reach) >= 1.0;
}

/* The chunk-level test of a local window pattern pt (perm_load): with c0 the chunk's first element
 * (t·ℓ) and r0 = c0 mod P, the window load is right when r0 is a good residue
 * (xir__window_local_residues; no clamp differs, the caller checked the bounds). Emits r0 ≤ T
 * when the good residues among the reachable ones are those up to T, else a 64-bit mask test for
 * P ≤ 64; NULL when neither applies (the caller compares the lanes' offsets). */
static LLVMValueRef local_pattern_test(lw *L, const xir__lpat *pt, LLVMValueRef *r0_out) {
  int P = pt->P;
  uint8_t good[XIR_LPAT_MAXP], reach[XIR_LPAT_MAXP];
  xir__window_local_residues(pt, L->ell, L->W, good, reach); /* analysis.c: the cost model's too */
  int64_t T = -1, bad_lo = P;
  for (int r = 0; r < P; r++) {
    if (!reach[r]) continue;
    if (good[r] && r > T) T = r;
    if (!good[r] && r < bad_lo) bad_lo = r;
  }
  if (T < 0) return NULL;
  LLVMValueRef c0 = L->env[L->c->inner_dim].u;
  LLVMValueRef r0 = LLVMBuildURem(L->b, c0, ci64(L, P), "");
  *r0_out = r0;
  if (T < bad_lo) /* good exactly below the first bad residue, and none good above */
    return LLVMBuildICmp(L->b, LLVMIntULE, r0, ci64(L, T), "perm.ok");
  if (P > 64) return NULL;
  uint64_t mask = 0;
  for (int r = 0; r < P; r++)
    if (good[r]) mask |= 1ull << r;
  LLVMValueRef bit = LLVMBuildAnd(L->b, LLVMBuildLShr(L->b, ci64(L, (int64_t)mask), r0, ""), ci64(L, 1), "");
  return LLVMBuildICmp(L->b, LLVMIntNE, bit, ci64(L, 0), "perm.ok");
}

/* The W lanes read as planned in sp (xir__window_split, xir__window_lanes) from the elem buffer
 * at base: one masked load per window at element u0 plus the window's base (only the elements a
 * live lane reads), then one two-source shuffle (dead lanes: poison); f32 for a 16-bit buffer. */
static LLVMValueRef window_packet(lw *L, LLVMValueRef base, int elem, const xir__wsplit *sp, LLVMValueRef u0) {
  LLVMTypeRef et = mem_type(L, elem), evt = LLVMVectorType(et, L->W);
  LLVMValueRef w[2];
  for (int k = 0; k < 2; k++) {
    if (k >= sp->nwin) {
      w[k] = LLVMGetPoison(evt);
      continue;
    }
    LLVMValueRef o = LLVMBuildAdd(L->b, u0, ci64(L, sp->base[k]), "");
    LLVMValueRef ptr = LLVMBuildGEP2(L->b, et, base, &o, 1, "");
    w[k] = xir__ir_mask_load(L->b, L->mod, et, L->W, ptr, sp->mask[k],
                             (unsigned)xir_elem_size((xir_elem)elem), LLVMGetPoison(evt), L->narrow_masks);
  }
  LLVMValueRef sh[16], v;
  int one = sp->nwin < 2, ix[16];
  for (unsigned i = 0; i < L->W; i++) {
    sh[i] = sp->src[i] < 0 ? LLVMGetUndef(L->i32) : LLVMConstInt(L->i32, (unsigned)sp->src[i], 0);
    ix[i] = sp->src[i];
    one &= sp->src[i] < (int)L->W;
  }
  if (one) v = xir__ir_shuffle_halves(L->b, w[0], ix, L->W, L->cvt.slow_lane_cross);
  else v = LLVMBuildShuffleVector(L->b, w[0], w[1], LLVMConstVector(sh, L->W), "");
  if (is_half(elem)) v = xir__cvt_to_f32(L->b, &L->cvt, elem, v);
  return v;
}

/* Packet q of a chunk of access n read as planned by xir__window_split, at the chunk's lane-0
 * offset u0 (window_packet). */
static LLVMValueRef split_packet(lw *L, const xir_node *n, const xir__wsplit *sp, LLVMValueRef u0) {
  return window_packet(L, L->buf[n->ref], L->p->params[n->ref].elem, sp, u0);
}

/* lane 0's offset of access n as a scalar: the access evaluated with the element index uniform
 * (c0 in every lane), in a generation of its own so that no vector value is reused or overwritten
 * for the current one. NULL when it is not uniform then. Every caller has checked that no index
 * of n clamps differently across the elements (xir__access_in_bounds), so the indices that vary
 * along X are in their dims and are computed without the clamp: RoPE's partner offset
 * c0 + 1 − 1 then folds to c0, the same address as x[r, c0], and LLVM loads x once and swaps
 * the pairs in the register (the uniform indices, e.g. rope_cache's position, keep theirs). */
static LLVMValueRef lane0_offset(lw *L, const xir_node *n) {
  int X = L->c->inner_dim;
  val saved = L->env[X];
  unsigned g = L->gen;
  L->env[X] = vaff(saved.u, 0);
  L->gen = L->ugen++;
  L->noclamp = n;
  val o0 = access_offset(L, n, n->nargs);
  L->noclamp = NULL;
  L->env[X] = saved;
  L->gen = g;
  return o0.aff && o0.s == 0 ? o0.u : NULL;
}

/* The row's tail chunk (its first element t0 and its residue known at compile time) of an access
 * whose indices never clamp: every packet as at most two window loads and a shuffle
 * (xir__window_split), the dead lanes zero; 0 when some packet does not fit (then it gathers). */
static int tail_window_load(lw *L, const xir_node *n, const xir__lpat *pt, val *out) {
  int X = L->c->inner_dim;
  LLVMValueRef c0 = L->env[X].u;
  if (!LLVMIsAConstantInt(c0) || L->k > MAXK) return 0;
  int64_t t0 = LLVMConstIntGetSExtValue(c0), live = dimc(L, X) - t0;
  if (t0 < 0 || live <= 0) return 0;
  xir__wsplit sp[MAXK];
  for (unsigned q = 0; q < L->k; q++)
    if ((int64_t)(q * L->W) < live && !xir__window_split(pt, t0 % pt->P, L->W, q, live, &sp[q])) return 0;
  LLVMValueRef u0 = lane0_offset(L, n);
  if (!u0) return 0;
  LLVMValueRef tm[MAXK], r[MAXK];
  lane_mask(L, 1, tm);
  LLVMValueRef zero = LLVMConstNull(L->vf);
  for (unsigned q = 0; q < L->k; q++) {
    if ((int64_t)(q * L->W) >= live) {
      r[q] = zero;
      continue;
    }
    r[q] = split_packet(L, n, &sp[q], u0);
    if (tm[q]) r[q] = LLVMBuildSelect(L->b, tm[q], r[q], zero, "");
  }
  *out = vvec(L, r);
  return 1;
}

/* A gather whose lanes are a fixed permutation of a window of W consecutive elements (RoPE's pair
 * swap x[r, c + 1 - 2·(c % 2)], a table row read twice per pair): a masked contiguous load and a
 * shuffle, taken only when the run-time offsets are exactly base + pi in every packet (a clamped
 * index, or anything the pattern did not foresee, takes the gather). Returns 0 when no pattern
 * applies. */
static int perm_load(lw *L, const xir_node *n, const val *off, val *out) {
  int X = L->c->inner_dim;
  if (off->aff || L->ell < L->W || L->precompute || X < 0 || L->W < 2 ||
      !type_has(&n->type, X) || !L->env[X].aff || L->env[X].s != 1)
    return 0;
  xir__lpat pt;
  int id = (int)(n - L->p->nodes);
  /* periodic: every chunk sees the pattern; local: only chunks where it repeats (checked below) */
  int periodic = xir__window_access(L->p, L->sh, X, L->ell, L->W, id, &pt);
  if (!periodic && !xir__window_access_local(L->p, L->sh, X, L->ell, L->W, id, &pt)) return 0;
  int64_t pi[MAXK][16], lo[MAXK];
  for (unsigned q = 0; q < L->k; q++) xir__lane_window(&pt, L->W, q, pi[q], &lo[q]);
  LLVMValueRef ov[MAXK], U[MAXK], all = NULL;
  ivecs(L, off, ov);
  /* No index is ever clamped differently across lanes: the offsets are exactly U + pi, so the
   * window load needs no run-time check (and no gather path). */
  int exact = xir__access_in_bounds(L->p, L->sh, X, id);
  /* ...and only when the element index enters the innermost (unit-stride) index alone: an outer
   * index varying along X would be scaled by a run-time stride the pattern does not know */
  for (int kd = 0; kd + 1 < n->nargs && exact; kd++)
    exact = n->args[kd] >= 0 && L->period && L->period[n->args[kd]] == 1;
  if (L->tail) return exact && tail_window_load(L, n, &pt, out);
  /* A local pattern under the same conditions holds in a chunk exactly when its first element's
   * residue r0 = c0 mod P is a good one (the offsets are u + A·c + tab[c mod P]): a scalar test
   * instead of comparing every lane's offset (rope_cache at HD = 100, l = 16: the chunks that
   * cross a head take the gather). */
  LLVMValueRef scalar_ok = NULL, r0 = NULL;
  if (exact && !periodic && !every_chunk_good(L, &pt)) {
    exact = 0;
    scalar_ok = local_pattern_test(L, &pt, &r0);
  }
  LLVMValueRef u0 = NULL, lane0 = NULL;
  if (scalar_ok || exact) {
    /* lane 0's offset as a scalar (lane0_offset); the lanes' offset vector is then needed by
     * the gather only (and not at all for an exact pattern: rope_cache at l = 128 computed 8
     * packets' clamped partner indices in vectors to extract one lane of each) */
    lane0 = lane0_offset(L, n);
    if (lane0) u0 = LLVMBuildSub(L->b, lane0, ci64(L, pi[0][0]), "");
  }
  LLVMTypeRef rty = LLVMVectorType(L->i1, L->W);
  for (unsigned q = 0; q < L->k; q++) {
    LLVMValueRef e[16];
    for (unsigned i = 0; i < L->W; i++) e[i] = ci64(L, pi[q][i]);
    /* offsets U[q] + pi[q][i]: with u0 the same base for every packet (the test above) */
    U[q] = u0 ? u0
              : LLVMBuildSub(L->b, LLVMBuildExtractElement(L->b, ov[q], LLVMConstInt(L->i32, 0, 0), ""),
                             ci64(L, pi[q][0]), "");
    if (exact || scalar_ok) continue;
    LLVMValueRef want = LLVMBuildAdd(L->b, splat(L, U[q]), LLVMConstVector(e, L->W), "");
    LLVMValueRef eq = LLVMBuildICmp(L->b, LLVMIntEQ, ov[q], want, "");
    LLVMValueRef r = intrinsic(L, "llvm.vector.reduce.and", &rty, 1, &eq, 1);
    all = all ? LLVMBuildAnd(L->b, all, r, "") : r;
  }
  if (scalar_ok) all = scalar_ok;
  LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "perm.fast");
  LLVMBasicBlockRef slow = exact ? NULL : LLVMAppendBasicBlockInContext(L->ctx, L->fn, "perm.gather");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "perm.join");
  if (exact) LLVMBuildBr(L->b, fast);
  else LLVMBuildCondBr(L->b, all, fast, slow);
  LLVMValueRef vf[MAXK];
  LLVMPositionBuilderAtEnd(L->b, fast);
  for (unsigned q = 0; q < L->k; q++) {
    int64_t hi = 0;
    for (unsigned i = 0; i < L->W; i++)
      if (pi[q][i] - lo[q] > hi) hi = pi[q][i] - lo[q];
    LLVMValueRef o = LLVMBuildAdd(L->b, U[q], ci64(L, lo[q]), "");
    int elem = L->p->params[n->ref].elem;
    LLVMTypeRef et = mem_type(L, elem), evt = LLVMVectorType(et, L->W);
    LLVMValueRef ptr = LLVMBuildGEP2(L->b, et, L->buf[n->ref], &o, 1, "");
    /* lanes 0 .. hi (hi < W) */
    LLVMValueRef w = xir__ir_mask_load(L->b, L->mod, et, L->W, ptr, (2ull << hi) - 1, (unsigned)xir_elem_size((xir_elem)elem),
                                       LLVMGetPoison(evt), L->narrow_masks);
    int ix[16];
    for (unsigned i = 0; i < L->W; i++) ix[i] = (int)(pi[q][i] - lo[q]);
    vf[q] = xir__ir_shuffle_halves(L->b, w, ix, L->W, L->cvt.slow_lane_cross);
    if (is_half(elem)) vf[q] = xir__cvt_to_f32(L->b, &L->cvt, elem, vf[q]);
  }
  LLVMBasicBlockRef fast_end = LLVMGetInsertBlock(L->b);
  LLVMBuildBr(L->b, join);
  if (exact) {
    LLVMPositionBuilderAtEnd(L->b, join);
    *out = vvec(L, vf);
    return 1;
  }
  LLVMPositionBuilderAtEnd(L->b, slow);
  /* the bad residues whose chunks split into two windows per packet (a chunk that crosses a
   * period boundary: the lanes before and after it) take those by a switch on the residue; the
   * others (and every chunk where the pattern is not exact) gather */
  enum { MAXSPLIT = 8 };
  int64_t split_r[MAXSPLIT];
  int nsplit = 0;
  if (scalar_ok && r0 && lane0 && L->k <= MAXK) {
    uint8_t good[XIR_LPAT_MAXP], reach[XIR_LPAT_MAXP];
    xir__window_local_residues(&pt, L->ell, L->W, good, reach);
    for (int r = 0; r < pt.P && nsplit <= MAXSPLIT; r++) {
      if (!reach[r] || good[r]) continue;
      int ok = 1;
      xir__wsplit sp;
      for (unsigned q = 0; q < L->k && ok; q++) ok = xir__window_split(&pt, r, L->W, q, L->ell, &sp);
      if (ok && nsplit < MAXSPLIT) split_r[nsplit] = r;
      if (ok) nsplit++;
    }
    if (nsplit > MAXSPLIT) nsplit = 0; /* too many cases: the code would grow more than it pays */
  }
  LLVMValueRef in[MAXSPLIT + 2][MAXK];
  LLVMBasicBlockRef from[MAXSPLIT + 2];
  int nin = 0;
  for (unsigned q = 0; q < L->k; q++) in[nin][q] = vf[q];
  from[nin++] = fast_end;
  if (nsplit) {
    LLVMBasicBlockRef gath = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "perm.gather");
    LLVMValueRef sw = LLVMBuildSwitch(L->b, r0, gath, (unsigned)nsplit);
    for (int i = 0; i < nsplit; i++) {
      LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "perm.split");
      LLVMAddCase(sw, ci64(L, split_r[i]), bb);
      LLVMPositionBuilderAtEnd(L->b, bb);
      for (unsigned q = 0; q < L->k; q++) {
        xir__wsplit sp;
        xir__window_split(&pt, split_r[i], L->W, q, L->ell, &sp);
        in[nin][q] = split_packet(L, n, &sp, lane0);
      }
      from[nin++] = LLVMGetInsertBlock(L->b);
      LLVMBuildBr(L->b, join);
    }
    LLVMPositionBuilderAtEnd(L->b, gath);
  }
  val g = load_elems(L, L->buf[n->ref], *off, L->p->params[n->ref].elem);
  for (unsigned q = 0; q < L->k; q++) in[nin][q] = g.v[q];
  from[nin++] = LLVMGetInsertBlock(L->b);
  LLVMBuildBr(L->b, join);
  LLVMPositionBuilderAtEnd(L->b, join);
  LLVMValueRef r[MAXK];
  for (unsigned q = 0; q < L->k; q++) {
    r[q] = LLVMBuildPhi(L->b, L->vf, "");
    LLVMValueRef v[MAXSPLIT + 2];
    for (int i = 0; i < nin; i++) v[i] = in[i][q];
    LLVMAddIncoming(r[q], v, from, (unsigned)nin);
  }
  *out = vvec(L, r);
  return 1;
}

/* ℓ = 1 (an elementwise kernel): a packet of W root programs that loads W consecutive f32
 * elements also prefetches the elements PREFETCH_AHEAD_BYTES further on (the packet's own when
 * that lies past the buffer's end: no prefetch leaves it). The hardware's stream prefetch stops
 * at every 4 KiB page, and the out-of-order window of a body as long as SwiGLU's or GELU's
 * (~25 vector instructions a packet) holds too few loads to keep memory busy: swiglu and
 * gelu_residual at 192-240 MiB ran 1.32-1.68x the stream probe, a C loop with the same body
 * 1.2x; with the prefetch xir / probe, 2 rounds x 2 (`xir bench --suite peers --kernels
 * swiglu,gelu_residual --configs default,probe:stream,peer:c_fast_omp`): swiglu 20000x1000
 * 1.42-1.46 -> 0.93-0.98, 4096x4096 1.32-1.52 -> 0.89-0.97, gelu_residual 20000x1000
 * 1.52-1.68 -> 0.97-1.03, 4096x4096 1.44-1.63 -> 0.98-1.00; 129x768 and 257x1538 (in the
 * caches) against the OpenMP C the same or faster (swiglu 257x1538 0.68-0.75 -> 0.60-0.65).
 * 4 KiB ahead measured as well as 8 KiB. */
enum { PREFETCH_AHEAD_BYTES = 4096 };
static void ahead_prefetch(lw *L, const xir_node *n, const val *off) {
  LLVMValueRef end = L->use_cstride ? L->cend[n->ref] : L->bend[n->ref];
  for (unsigned q = 0; q < L->k; q++) {
    LLVMValueRef o = LLVMBuildAdd(L->b, off->u, ci64(L, (int64_t)(q * L->W) + PREFETCH_AHEAD_BYTES / 4), "");
    LLVMValueRef own = LLVMBuildAdd(L->b, off->u, ci64(L, (int64_t)(q * L->W)), "");
    o = LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, o, end, ""), o, own, "");
    LLVMValueRef args[4] = {LLVMBuildGEP2(L->b, L->f32, L->buf[n->ref], &o, 1, ""),
                            LLVMConstInt(L->i32, 0, 0), LLVMConstInt(L->i32, 3, 0),
                            LLVMConstInt(L->i32, 1, 0)};
    intrinsic(L, "llvm.prefetch", &L->ptr, 1, args, 4);
  }
}

static val eval_load(lw *L, const xir_node *n) {
  int elem = L->p->params[n->ref].elem;
  if (elem == XIR_I64) return load_elems(L, L->buf[n->ref], access_offset(L, n, n->nargs), elem);
  val off = access_offset(L, n, n->nargs), r;
  if (perm_load(L, n, &off, &r)) return r;
  if (L->ell == 1 && off.aff && off.s == 1 && elem == XIR_F32 && !L->lin_tail) ahead_prefetch(L, n, &off);
  return load_elems(L, L->buf[n->ref], off, elem);
}

/* A vmath call; vmath takes `float` for W = 1, so <1 x float> goes through element 0. */
static LLVMValueRef vm(lw *L, xir__vm_fn fn, LLVMValueRef a, LLVMValueRef b) {
  if (L->W != 1 || LLVMGetTypeKind(LLVMTypeOf(a)) != LLVMVectorTypeKind)
    return xir__vm_call(L->vm, fn, a, b);
  LLVMValueRef zero = LLVMConstInt(L->i32, 0, 0);
  LLVMValueRef x = LLVMBuildExtractElement(L->b, a, zero, "");
  LLVMValueRef y = b ? LLVMBuildExtractElement(L->b, b, zero, "") : NULL;
  LLVMValueRef r = xir__vm_call(L->vm, fn, x, y);
  return r ? LLVMBuildInsertElement(L->b, LLVMGetPoison(L->vf), r, zero, "") : NULL;
}

/* pow(base, y) with a base every lane shares (an f32 constant or scalar parameter): log|base| is
 * computed once (xir__vm_pow_uniform_base, bit-identical to pow with the base splat). NULL when
 * the base is not such a value. */
static LLVMValueRef pow_uniform(lw *L, const xir_node *base, LLVMValueRef y) {
  if (base->type.rank != 0 || base->type.elem != XIR_F32) return NULL;
  LLVMValueRef b = base->op == XIR_OP_CONST ? cf32(L, base->imm.f)
                   : base->op == XIR_OP_PARAM ? L->scal[base->ref] : NULL;
  if (!b) return NULL;
  if (L->W != 1) return xir__vm_pow_uniform_base(L->vm, b, y);
  LLVMValueRef zero = LLVMConstInt(L->i32, 0, 0);
  LLVMValueRef r = xir__vm_pow_uniform_base(L->vm, b, LLVMBuildExtractElement(L->b, y, zero, ""));
  return r ? LLVMBuildInsertElement(L->b, LLVMGetPoison(L->vf), r, zero, "") : NULL;
}

static LLVMValueRef f_op(lw *L, int op, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMTypeRef t = LLVMTypeOf(a);
  switch (op) {
    case XIR_OP_ADD: return LLVMBuildFAdd(L->b, a, b, "");
    case XIR_OP_SUB: return LLVMBuildFSub(L->b, a, b, "");
    case XIR_OP_MUL: return LLVMBuildFMul(L->b, a, b, "");
    case XIR_OP_DIV: return LLVMBuildFDiv(L->b, a, b, "");
    case XIR_OP_NEG: return LLVMBuildFNeg(L->b, a, "");
    case XIR_OP_MAX: {
      LLVMValueRef args[2] = {a, b};
      return intrinsic(L, "llvm.maximum", &t, 1, args, 2);
    }
    case XIR_OP_MIN: {
      LLVMValueRef args[2] = {a, b};
      return intrinsic(L, "llvm.minimum", &t, 1, args, 2);
    }
    case XIR_OP_ABS: return intrinsic(L, "llvm.fabs", &t, 1, &a, 1);
    case XIR_OP_FMA: {
      LLVMValueRef args[3] = {a, b, c};
      return intrinsic(L, "llvm.fma", &t, 1, args, 3);
    }
    case XIR_OP_EXP: return vm(L, XIR__VM_EXP, a, NULL);
    case XIR_OP_LOG: return vm(L, XIR__VM_LOG, a, NULL);
    case XIR_OP_TANH: return vm(L, XIR__VM_TANH, a, NULL);
    case XIR_OP_ERF: return vm(L, XIR__VM_ERF, a, NULL);
    case XIR_OP_SQRT: return vm(L, XIR__VM_SQRT, a, NULL);
    case XIR_OP_RSQRT: return vm(L, XIR__VM_RSQRT, a, NULL);
    case XIR_OP_SIGMOID: return vm(L, XIR__VM_SIGMOID, a, NULL);
    case XIR_OP_SIN: return vm(L, XIR__VM_SIN, a, NULL);
    case XIR_OP_COS: return vm(L, XIR__VM_COS, a, NULL);
    case XIR_OP_POW: return vm(L, XIR__VM_POW, a, b);
    default: return NULL;
  }
}

/* add(mul(a, b), c), add(c, mul(a, b)), sub(mul(a, b), c) and sub(c, mul(a, b)) on a host with
 * FMA: one fused multiply-add (the product is not rounded). The first operand's product is
 * fused where both are products. The code, and so the bits, do not depend on W or G. 0 (and
 * nothing emitted) when n is none of these. */
static int fusable_mul(lw *L, int id) {
  const xir_node *m = &L->p->nodes[id];
  return m->op == XIR_OP_MUL && m->type.elem == XIR_F32 && !L->hoist[id] &&
         L->p->nodes[m->args[0]].type.elem == XIR_F32 && L->p->nodes[m->args[1]].type.elem == XIR_F32;
}

static int eval_fused(lw *L, const xir_node *n, val *out) {
  if ((n->op != XIR_OP_ADD && n->op != XIR_OP_SUB) || !L->cvt.fma || n->type.elem != XIR_F32)
    return 0;
  int side = fusable_mul(L, n->args[0]) ? 0 : fusable_mul(L, n->args[1]) ? 1 : -1;
  if (side < 0) return 0;
  const xir_node *m = &L->p->nodes[n->args[side]];
  /* A product of per-unit values (rank 0: layernorm's mean = sum · (1/C)) added to a tile is
   * computed once per unit either way, so fusing saves no instruction; it only moves the
   * tile's add from an adder to a multiplier port (Zen 4: two FADD and two FMA pipes), where
   * the tile's own products already queue: layernorm's output loop was three FMAs a packet
   * instead of an add and two FMAs. Such a sum rounds the product first, as C without
   * contraction of a hoisted product would. (The choice depends on the program only.) */
  if (m->type.rank == 0 && n->type.rank > 0) return 0;
  val a = eval(L, m->args[0]), b = eval(L, m->args[1]), c = eval(L, n->args[1 - side]);
  LLVMValueRef r[MAXK];
  for (unsigned q = 0; q < L->k; q++) {
    LLVMValueRef x = a.v[q], z = c.v[q];
    if (n->op == XIR_OP_SUB && side == 0) z = LLVMBuildFNeg(L->b, z, "");  /* a·b − c */
    if (n->op == XIR_OP_SUB && side == 1) x = LLVMBuildFNeg(L->b, x, "");  /* c − a·b */
    r[q] = f_op(L, XIR_OP_FMA, x, b.v[q], z);
  }
  *out = vvec(L, r);
  return 1;
}

/* Whether exp's operand is z − S with S the row max of z itself — M = reduce.max(z), or
 * select(M == −inf, K, M) for a constant K (softmax's z − max): then it is ≤ 0 or NaN (z ≤ M;
 * where M = −inf every z is −inf, and −inf − K is −inf or NaN), and exp_nonpos leaves out the
 * clamp at 89, which changes no such lane (the same bits as exp). */
static int exp_nonpos(const xir_program *p, const xir_node *n) {
  const xir_node *s = &p->nodes[n->args[0]];
  if (s->op != XIR_OP_SUB || s->args[0] < 0 || s->args[1] < 0) return 0;
  int z = s->args[0];
  const xir_node *S = &p->nodes[s->args[1]];
  int m = -1;
  if (S->op == XIR_OP_REDUCE_MAX) {
    m = s->args[1];
  } else if (S->op == XIR_OP_SELECT && S->args[0] >= 0 && S->args[1] >= 0 && S->args[2] >= 0) {
    const xir_node *c = &p->nodes[S->args[0]], *k = &p->nodes[S->args[1]];
    if (c->op != XIR_OP_EQ || k->op != XIR_OP_CONST || c->args[0] != S->args[2] ||
        c->args[1] < 0 || p->nodes[c->args[1]].op != XIR_OP_CONST ||
        !(p->nodes[c->args[1]].imm.f == -INFINITY))
      return 0;
    m = S->args[2];
  }
  return m >= 0 && p->nodes[m].op == XIR_OP_REDUCE_MAX && p->nodes[m].args[0] == z;
}

/* 1 < ℓ < W: an add, subtraction or multiplication of rank-0 f32 values one of which was computed
 * on W/ℓ lanes (a division, square root or rsqrt, or such an op before it) runs on W/ℓ lanes too:
 * when the others are the same in every lane: its narrowing shuffle folds into the operand's
 * broadcast, so a chain (rmsnorm's ms / C + eps before the rsqrt) stays narrow instead of broadcasting to W lanes and narrowing again around
 * each wide op (two shuffles a link on the row's critical path). The same numbers lane by lane
 * (the root program's lanes hold one value, eval_elementwise's narrow path). */
static int narrow_chain(const lw *L, const xir_node *n) {
  if (n->op != XIR_OP_ADD && n->op != XIR_OP_SUB && n->op != XIR_OP_MUL) return 0;
  int any = 0;
  for (int i = 0; i < n->nargs; i++) {
    int a = n->args[i];
    const xir_type *t = &L->p->nodes[a].type;
    if (t->rank != 0 || t->elem != XIR_F32) return 0;
    /* the other operands the same in every lane (eps, 1/C; uniform_values): narrowing them
     * folds to constants or one broadcast; a wide value (a butterfly's) would cost a shuffle
     * each way */
    if (L->nar[a]) any = 1;
    else if (!L->uni[a]) return 0;
  }
  return any;
}

static val eval_elementwise(lw *L, const xir_node *n) {
  val fused;
  if (eval_fused(L, n, &fused)) return fused;
  val a[3];
  for (int i = 0; i < n->nargs; i++) a[i] = eval(L, n->args[i]);
  const xir_node *n0 = &L->p->nodes[n->args[0]];
  int integer = n0->type.elem == XIR_I64;
  int ty = xir__op_info[n->op].typing;
  LLVMValueRef r[MAXK];
  if (integer && (ty == XIR_TY_NUM2 || ty == XIR_TY_I2)) return int_binop(L, n->op, &a[0], &a[1]);
  if (integer && ty == XIR_TY_NUM1) return int_unop(L, n->op, &a[0]);
  LLVMValueRef v[3][MAXK];
  for (int i = 0; i < n->nargs; i++) {
    if (L->p->nodes[n->args[i]].type.elem == XIR_I64) ivecs(L, &a[i], v[i]);
    else
      for (unsigned q = 0; q < L->k; q++) v[i][q] = a[i].v[q];
  }
  if (L->uni && L->uni[n - L->p->nodes] && n->type.elem == XIR_F32 &&
      (n->op == XIR_OP_DIV || n->op == XIR_OP_SQRT || n->op == XIR_OP_RSQRT)) {
    /* a value every lane shares: one scalar division or square root, broadcast (vdivss and
     * vsqrtss instead of the 16-lane forms, which take several times their throughput on
     * these cores: a norm's or softmax's per-row 1/s, rsqrt(var + eps)); IEEE-exact either
     * way, so the bits are the same */
    LLVMValueRef zero = LLVMConstInt(L->i32, 0, 0);
    LLVMValueRef x = LLVMBuildExtractElement(L->b, v[0][0], zero, "");
    LLVMValueRef y = n->nargs > 1 ? LLVMBuildExtractElement(L->b, v[1][0], zero, "") : NULL;
    LLVMValueRef r0 = f_op(L, n->op, x, y, NULL);
    if (r0) {
      LLVMValueRef sp = splat(L, r0);
      for (unsigned q = 0; q < L->k; q++) r[q] = sp;
      return vvec(L, r);
    }
  }
  if (L->ell > 1 && L->ell < L->W && n->type.rank == 0 && n->type.elem == XIR_F32 &&
      (n->op == XIR_OP_DIV || n->op == XIR_OP_SQRT || n->op == XIR_OP_RSQRT || narrow_chain(L, n))) {
    /* 1 < ℓ < W: a rank-0 value is the same in the ℓ lanes of each root program (a reduction's
     * butterfly leaves the same bits in all of them: each step adds two lanes' partial sums in
     * either order — except a NaN's payload, which x86 takes from the first operand: the lanes
     * of a row may hold different NaNs, and this takes lane 0's), so the packet's W/ℓ root
     * programs divide or take the square root in a vector of W/ℓ lanes (vsqrtps/vdivps on xmm
     * or ymm: a fraction of the 16-lane forms' throughput; rmsnorm 16384x8 at ℓ = 8 was bound by
     * them), broadcast back; IEEE-exact either way, so the numbers are the same */
    unsigned nr = L->W / L->ell;
    LLVMValueRef ix[16], bx[16];
    for (unsigned i = 0; i < nr; i++) ix[i] = LLVMConstInt(L->i32, i * L->ell, 0);
    for (unsigned g = 0; g < L->W; g++) bx[g] = LLVMConstInt(L->i32, g / L->ell, 0);
    LLVMValueRef x = LLVMBuildShuffleVector(L->b, v[0][0], LLVMGetPoison(L->vf), LLVMConstVector(ix, nr), "");
    LLVMValueRef y = n->nargs > 1 ? LLVMBuildShuffleVector(L->b, v[1][0], LLVMGetPoison(L->vf), LLVMConstVector(ix, nr), "")
                                  : NULL;
    LLVMValueRef r0 = f_op(L, n->op, x, y, NULL);
    if (r0) {
      r[0] = LLVMBuildShuffleVector(L->b, r0, LLVMGetPoison(LLVMTypeOf(r0)), LLVMConstVector(bx, L->W), "");
      L->nar[n - L->p->nodes] = 1;
      return vvec(L, r);
    }
  }
  for (unsigned q = 0; q < L->k; q++) {
    LLVMValueRef x = v[0][q], y = n->nargs > 1 ? v[1][q] : NULL, z = n->nargs > 2 ? v[2][q] : NULL;
    switch (n->op) {
      case XIR_OP_TOF32:
        r[q] = n0->type.elem == XIR_BOOL ? LLVMBuildUIToFP(L->b, x, L->vf, "")
                                         : LLVMBuildSIToFP(L->b, x, L->vf, "");
        break;
      case XIR_OP_LT: case XIR_OP_LE: case XIR_OP_GT: case XIR_OP_GE: case XIR_OP_EQ: case XIR_OP_NE:
        r[q] = xir__ir_cmp(L->b, n->op, integer, x, y);
        break;
      case XIR_OP_AND: r[q] = LLVMBuildAnd(L->b, x, y, ""); break;
      case XIR_OP_OR: r[q] = LLVMBuildOr(L->b, x, y, ""); break;
      case XIR_OP_NOT: r[q] = LLVMBuildNot(L->b, x, ""); break;
      case XIR_OP_SELECT: r[q] = LLVMBuildSelect(L->b, x, y, z, ""); break;
      case XIR_OP_SIGMOID:
        r[q] = vm(L, L->narrow[n - L->p->nodes] ? XIR__VM_SIGMOID16 : XIR__VM_SIGMOID, x, NULL);
        break;
      case XIR_OP_EXP: r[q] = vm(L, exp_nonpos(L->p, n) ? XIR__VM_EXPNP : XIR__VM_EXP, x, NULL); break;
      case XIR_OP_POW:
        r[q] = pow_uniform(L, n0, y);
        if (!r[q]) r[q] = f_op(L, n->op, x, y, z);
        break;
      default: r[q] = f_op(L, n->op, x, y, z);
    }
    if (!r[q]) {
      L->st = xir__err(L->d, XIR_ERR_UNSUPPORTED, "op '%s' has no native lowering",
                       xir__op_info[n->op].name);
      r[q] = LLVMGetPoison(L->vf);
    }
  }
  /* A select of integers: keep the vectors. */
  return vvec(L, r);
}

static LLVMValueRef scratch_ptr(lw *L, int id) {
  const xir_node *n = &L->p->nodes[id];
  val lin = vaff(ci64(L, 0), 0);
  for (int i = 0; i < n->type.rank; i++) {
    val e = vaff(dimv(L, n->type.axes[i]), 0);
    val t = int_binop(L, XIR_OP_MUL, &lin, &e);
    lin = int_binop(L, XIR_OP_ADD, &t, &L->env[n->type.axes[i]]);
  }
  return LLVMBuildGEP2(L->b, L->vf, L->scratch[id], &lin.u, 1, "");
}

/* Whether node id's materialized slot fits its cap; *vectors_out (if not NULL) its size in
 * vectors. */
static int mat_fits(lw *L, int id, int64_t *vectors_out) {
  const xir_node *n = &L->p->nodes[id];
  int ax = n->type.axes[0];
  /* a launch-time axis is at most XIR_RUNTIME_TILE_MAX (the bridge's rule): sized at run time */
  int64_t N = is_fixed(L, ax) ? dimc(L, ax) : XIR_RUNTIME_TILE_MAX;
  int64_t chunks = L->ell > 1 && ax == L->c->inner_dim ? (N + L->ell - 1) / L->ell : N;
  int64_t vectors = chunks * (int64_t)L->k;
  if (vectors_out) *vectors_out = vectors;
  /* a converted bf16/f16 load only while its f32 copy stays small next to the row and the
   * other buffers in L1 (one worker, min of 5 rounds: bf16 layernorm 256x1024 49.3-49.8 ->
   * 42.2-42.5 us, C = 2048 47.9-48.5 -> 44.8-45.4, but C = 4096 53.9-54.4 -> 56.3-59.1 and
   * rmsnorm 32.0-32.6 -> 37.6-39.4; a 16 KiB cap measured the same on 2026-12-02's Xeon) */
  int64_t cap = n->op == XIR_OP_LOAD ? 8192 : 1 << 20;
  return vectors * 4 * (int64_t)L->W <= cap;
}

/* The materialized slot of node id at the current point, or NULL when id is not materialized
 * here (only expensive 1-D tiles used by several consumers, inside 1-D consumer loops). */
static LLVMValueRef mat_slot(lw *L, int id, unsigned q) {
  const xir_node *n = &L->p->nodes[id];
  if (L->mat_uses[id] < 2 || n->type.rank != 1 || L->nest_dim != n->type.axes[0]) return NULL;
  if (!L->mat_buf[id]) {
    int ax = n->type.axes[0];
    int64_t vectors;
    if (!mat_fits(L, id, &vectors)) {
      L->mat_uses[id] = 0; /* too large for a stack buffer: recompute instead */
      return NULL;
    }
    int owner = id;
    while (L->mat_share && L->mat_share[owner] >= 0) owner = L->mat_share[owner];
    if (!L->mat_buf[owner]) {
      if (is_fixed(L, ax)) L->mat_buf[owner] = entry_alloca(L, LLVMArrayType2(L->vf, (uint64_t)vectors), "mat");
      else L->mat_buf[owner] = entry_array(L, L->vf, n->type.axes, 1, (int64_t)L->k, "mat");
    }
    L->mat_buf[id] = L->mat_buf[owner];
  }
  LLVMValueRef ix = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, L->mat_index, ci64(L, L->k), ""),
                                 ci64(L, q), "");
  return LLVMBuildGEP2(L->b, L->vf, L->mat_buf[id], &ix, 1, "");
}

static val eval_uncached(lw *L, int id);

static val eval(lw *L, int id) {
  if (L->mask_live && id == L->mask_id) return eval(L, L->mask.live); /* every lane is live */
  if (L->top_ok[id]) return L->top[id];
  if (L->memo_gen[id] == L->gen) return L->memo[id];
  val r;
  int X = L->c->inner_dim;
  if (L->pm_buf && L->pm_buf[id] && !L->pm_compute && !L->precompute && X >= 0 &&
      L->env[X].aff && L->env[X].s == 1) {
    /* a period buffer: the chunk's ℓ values from its residue c0 mod M on (carried by the chunk
     * loop where it can: a division a chunk otherwise) */
    int64_t M = L->pm[id].M;
    /* M = the row's length (a buffer of one row's values): c0 is its own residue */
    LLVMValueRef r0 = M == dimc(L, X) ? L->env[X].u : NULL;
    for (int j = 0; j < L->nres && !r0; j++)
      if (L->res_M[j] == M && L->env[X].u == L->res_u) r0 = L->res_cur[j];
    if (!r0) r0 = LLVMBuildURem(L->b, L->env[X].u, ci64(L, M), "");
    memset(&r, 0, sizeof r);
    for (unsigned q = 0; q < L->k; q++) {
      LLVMValueRef o = LLVMBuildAdd(L->b, r0, ci64(L, (int64_t)(q * L->W)), "");
      LLVMValueRef ptr = LLVMBuildGEP2(L->b, L->f32, L->pm_buf[id], &o, 1, "");
      r.v[q] = LLVMBuildLoad2(L->b, L->vf, ptr, "");
      LLVMSetAlignment(r.v[q], 4);
    }
  } else if (L->hoist_buf[id] && !L->precompute) {
    int64_t M = L->period ? L->period[id] : 0;
    if (M > 1 && L->ell >= L->W && L->ell % M == 0 && (M % L->W == 0 || L->W % M == 0) &&
        !L->tail && !L->pm_compute) {
      /* periodic with a period dividing ℓ: lane q·W + i of every chunk holds element
       * (q·W mod M) + i — constant offsets, so the loads (and what is computed from them) are
       * the same in every chunk and LLVM keeps them out of the chunk loop. A period dividing W
       * (rope at HD = 2: M = 2) reads elements 0..W−1 of the buffer, which holds the period
       * repeated over the whole extent (emit_hoisted) */
      memset(&r, 0, sizeof r);
      for (unsigned q = 0; q < L->k; q++) {
        LLVMValueRef o = ci64(L, (int64_t)(q * L->W) % M);
        LLVMValueRef ptr = LLVMBuildGEP2(L->b, L->f32, L->hoist_buf[id], &o, 1, "");
        r.v[q] = LLVMBuildLoad2(L->b, L->vf, ptr, "");
        LLVMSetAlignment(r.v[q], 4);
      }
    } else {
      val off = L->env[L->p->nodes[id].type.axes[0]];
      int flat = off.lin && off.tab_on && L->k == 1;
      for (int a = 0; a < XIR_MAX_ROOT && flat; a++) flat = off.dc[a] == 0;
      if (flat && !off.aff) {
        /* 1 < ℓ < W: the element index t0 + (g mod ℓ) — compile-time lane offsets from t0, one
         * window load and a shuffle (load_elems) instead of a gather (a bf16 weight converted
         * into the buffer: rmsnorm 16384x8 gathered it once a packet) */
        off.pat = 1;
        off.pu = off.lu;
      }
      r = load_at(L, L->hoist_buf[id], off);
    }
  } else if (L->mat_uses[id] >= 2 && L->mat_state[id] == 2 && mat_slot(L, id, 0)) {
    memset(&r, 0, sizeof r);
    for (unsigned q = 0; q < L->k; q++) {
      r.v[q] = LLVMBuildLoad2(L->b, L->vf, mat_slot(L, id, q), "");
      LLVMSetAlignment(r.v[q], 4);
    }
  } else {
    r = eval_uncached(L, id);
    if (L->mat_uses[id] >= 2 && mat_slot(L, id, 0)) {
      for (unsigned q = 0; q < L->k; q++)
        LLVMSetAlignment(LLVMBuildStore(L->b, r.v[q], mat_slot(L, id, q)), 4);
      L->mat_state[id] = 1;
    }
  }
  L->memo[id] = r;
  L->memo_gen[id] = L->gen;
  return r;
}

static val eval_uncached(lw *L, int id) {
  const xir_node *n = &L->p->nodes[id];
  val r;
  memset(&r, 0, sizeof r);
  switch (n->op) {
    case XIR_OP_CONST:
      r = n->type.elem == XIR_I64 ? vaff(ci64(L, n->imm.i), 0) : vsplat(L, cf32(L, n->imm.f));
      break;
    case XIR_OP_DIM: r = vaff(dimv(L, n->ref), 0); break;
    case XIR_OP_PARAM:
      r = n->type.elem == XIR_I64 ? vaff(L->scal[n->ref], 0) : vsplat(L, L->scal[n->ref]);
      break;
    case XIR_OP_ROOT: r = L->coord[n->ref]; break;
    case XIR_OP_IOTA: r = L->env[n->ref]; break;
    case XIR_OP_LOAD: r = eval_load(L, n); break;
    case XIR_OP_REDUCE_SUM:
    case XIR_OP_REDUCE_MAX:
    case XIR_OP_REDUCE_MIN: {
      /* a materialized tile (rank-0 results are in top[]) */
      LLVMValueRef ptr = scratch_ptr(L, id);
      LLVMValueRef x = LLVMBuildLoad2(L->b, L->vf, ptr, "");
      LLVMSetAlignment(x, 4);
      r = vsplat(L, cf32(L, 0));
      r.v[0] = x;
      break;
    }
    default: r = eval_elementwise(L, n);
  }
  return r;
}

/* ---- loop nests over tile axes ---- */

typedef void (*body_fn)(lw *L, int id, void *ud);

static void tile_loops_at(lw *L, const xir_type *t, int depth, body_fn body, int id, void *ud);

/* Runs body over the axes (rank ≤ 4) of a tile type; the inner axis X (ℓ > 1) is chunked. */
static void tile_loops(lw *L, const xir_type *t, int depth, body_fn body, int id, void *ud) {
  L->nest_dim = t->rank == 1 ? t->axes[0] : -1;
  tile_loops_at(L, t, depth, body, id, ud);
  for (int i = 0; i < L->p->nnodes; i++)
    if (L->mat_state[i] == 1) L->mat_state[i] = 2;
  L->nest_dim = -1;
}

static void next_row_prefetch_addrs(lw *L);
static void next_row_prefetch(lw *L);

/* Before a chunk loop from chunk `from` on: the periods of the unit's period buffers (at most
 * four), each residue slot set to (from·ℓ) mod M (one division a loop instead of one a chunk;
 * a slot the body never reads is removed with it). */
static void res_begin(lw *L, LLVMValueRef from, int64_t ell) {
  L->nres = 0;
  L->res_u = NULL;
  if (!L->pm || !L->pm_buf || !L->period || L->pm_compute || L->precompute) return;
  for (int i = L->p->body_begin; i < L->p->nnodes; i++) {
    if (!L->pm[i].len || !L->pm_buf[i]) continue;
    int64_t M = L->pm[i].M;
    /* every chunk at residue 0 (the division folds), or M the row's length (no division) */
    if (ell % M == 0 || M == dimc(L, L->c->inner_dim)) continue;
    int seen = 0;
    for (int j = 0; j < L->nres; j++) seen |= L->res_M[j] == M;
    if (seen || L->nres == 4) continue;
    L->res_M[L->nres] = M;
    L->res_var[L->nres] = entry_alloca(L, L->i64, "res");
    LLVMValueRef c0 = LLVMBuildMul(L->b, from, ci64(L, ell), "");
    LLVMBuildStore(L->b, LLVMBuildURem(L->b, c0, ci64(L, M), ""), L->res_var[L->nres]);
    L->nres++;
  }
}

/* At the end of a chunk: the next chunk's residues, r + (ℓ mod M), less M when it reaches M. */
static void res_next(lw *L, int64_t ell) {
  for (int j = 0; j < L->nres; j++) {
    int64_t M = L->res_M[j];
    LLVMValueRef r = LLVMBuildAdd(L->b, L->res_cur[j], ci64(L, ell % M), "");
    LLVMValueRef wrap = LLVMBuildICmp(L->b, LLVMIntUGE, r, ci64(L, M), "");
    r = LLVMBuildSelect(L->b, wrap, LLVMBuildSub(L->b, r, ci64(L, M), ""), r, "");
    LLVMBuildStore(L->b, r, L->res_var[j]);
  }
  L->nres = 0;
  L->res_u = NULL;
}

static void tile_loops_at(lw *L, const xir_type *t, int depth, body_fn body, int id, void *ud) {
  if (depth == t->rank) {
    L->gen++;
    memset(L->pf_anchor, 0, sizeof L->pf_anchor);
    /* (not in the masked tail a store fills with its masked value: the next row's elements
     * there are mostly masked too, as a causal mask's are, and the fill loop stays two stores) */
    int pf = id == L->pf_at && L->nest_dim == L->c->inner_dim && !L->fill_val;
    /* a norm's (pf_far): only in the far copy of its streamed store loop (emit_streamed) — a
     * launch is far only past the cache, where it streams; not in the row buffer's copy (rows
     * that do not start on a vector boundary): there it cost more than it saved (rmsnorm
     * 20000x1000 and 1800x5500, xir / OpenMP C 0.79-0.85 -> 0.93-1.03) */
    pf = pf && (!L->pf_far || L->pf_emit);
    /* before the body: the prefetches go between its packets (a norm's, pf_far, after it) */
    if (pf && !L->pf_far) next_row_prefetch_addrs(L);
    body(L, id, ud);
    if (pf) next_row_prefetch(L);
    return;
  }
  int dim = t->axes[depth];
  if (L->ell > 1 && dim == L->c->inner_dim) {
    int64_t N = dimc(L, dim), ell = L->ell, full_chunks = N / ell;
    int ranged = L->rng_hi && dim == L->mask.axis_dim;
    for (int part = 0; part < 2; part++) {
      if (part == 0 && full_chunks == 0) continue;
      if (part == 1 && N % ell == 0) continue;
      /* part 0 is one loop over the full chunks, or two for a range with a live prefix */
      int nseg = part == 0 && ranged && L->rng_live ? 2 : 1;
      LLVMValueRef from = ci64(L, 0), to = ci64(L, full_chunks), mid = NULL;
      if (part == 0 && ranged) {
        from = smin(L, L->rng_lo, to);
        to = smin(L, L->rng_hi, to);
        if (nseg == 2) mid = smax(L, from, smin(L, L->rng_live, to));
      }
      /* a compile-time run of 2..L->unroll full chunks (xir__chunk_unroll): each chunk straight-line, its
       * offsets constants (rope_cache 8192x48 at l = 16: the three chunks' c mod HD fold) */
      int64_t ua = 0, ub = 0;
      int unroll = part == 0 && nseg == 1 && const_of(from, &ua) && const_of(to, &ub) &&
                   ub - ua >= 2 && ub - ua <= L->unroll;
      for (int seg = 0; seg < (unroll ? (int)(ub - ua) : nseg); seg++) {
        loop lp;
        LLVMBasicBlockRef tail_done = NULL;
        if (unroll) {
          loop_begin_chunks(L, &lp, ci64(L, ua + seg), ci64(L, ua + seg + 1));
        } else if (part == 0) {
          LLVMValueRef lo = nseg == 2 && seg == 1 ? mid : from;
          res_begin(L, lo, ell);
          loop_begin_chunks(L, &lp, lo, nseg == 2 && seg == 0 ? mid : to);
          if (lp.once) L->nres = 0;
          for (int j = 0; j < L->nres; j++) L->res_cur[j] = LLVMBuildLoad2(L->b, L->i64, L->res_var[j], "");
        } else if (ranged) {
          /* the tail chunk (index full_chunks), when it lies in the range */
          LLVMValueRef fc = ci64(L, full_chunks);
          LLVMValueRef in = LLVMBuildAnd(L->b, LLVMBuildICmp(L->b, LLVMIntSLE, L->rng_lo, fc, ""),
                                         LLVMBuildICmp(L->b, LLVMIntSLT, fc, L->rng_hi, ""), "");
          LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "tail");
          tail_done = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "tail.done");
          LLVMBuildCondBr(L->b, in, yes, tail_done);
          LLVMPositionBuilderAtEnd(L->b, yes);
        }
        LLVMValueRef t0 = part == 0 ? LLVMBuildMul(L->b, lp.i, ci64(L, ell), "") : ci64(L, full_chunks * ell);
        val base = vaff(t0, 0);
        val c = int_binop(L, XIR_OP_ADD, &base, &L->jlane);
        L->tail = part;
        L->mask_live = nseg == 2 && seg == 0;
        L->env_set[dim] = 1;
        /* the tail chunk keeps c affine (not clamped): its loads and stores are masked to the
         * lanes with c < N (load_elems, store_body), so contiguous accesses stay one masked
         * vector load or store instead of a gather or scatter */
        L->env[dim] = c;
        L->res_u = part == 0 && c.aff ? c.u : NULL;
        if (part == 1) L->inner_c = c;
        L->mat_index = part == 0 ? lp.i : ci64(L, full_chunks);
        tile_loops_at(L, t, depth + 1, body, id, ud);
        if (part == 0) {
          res_next(L, ell);
          loop_end(L, &lp);
        } else if (tail_done) {
          LLVMBuildBr(L->b, tail_done);
          LLVMPositionBuilderAtEnd(L->b, tail_done);
        }
        L->tail = 0;
        L->mask_live = 0;
      }
    }
    return;
  }
  int ranged = L->rng_hi && dim == L->mask.axis_dim;
  int nseg = ranged && L->rng_live ? 2 : 1;
  LLVMValueRef from = ranged ? L->rng_lo : ci64(L, 0), to = ranged ? L->rng_hi : dimv(L, dim);
  LLVMValueRef mid = nseg == 2 ? smax(L, from, smin(L, L->rng_live, to)) : NULL;
  for (int seg = 0; seg < nseg; seg++) {
    loop lp;
    loop_begin(L, &lp, nseg == 2 && seg == 1 ? mid : from, nseg == 2 && seg == 0 ? mid : to);
    L->mask_live = ranged && nseg == 2 && seg == 0;
    L->env[dim] = vaff(lp.i, 0);
    L->env_set[dim] = 1;
    L->mat_index = lp.i;
    tile_loops_at(L, t, depth + 1, body, id, ud);
    loop_end(L, &lp);
    L->mask_live = 0;
  }
}

/* In a chunk of the last consumer loop over X: prefetch the same chunk of the rows that the next
 * root program's loads read (xir__next_row_loads) — the row one step further along the fastest
 * root axis, base + offset + its stride — one prefetch per 64 bytes, at the line of each 64-byte
 * group's last element (xir__prefetch_offsets; on a row that starts inside a line, the later of
 * the two lines a packet's load touches). Where that row's last prefetched element leaves
 * the buffer (the last root program, or where the axis wraps at the buffer's end), the chunk of
 * the current row is prefetched instead (it is in L1): memory past a buffer's end may belong to
 * another buffer that another core is writing — the output of the same launch, in the caller's
 * heap — and a read prefetch of its lines takes them from that core, which must fetch them back
 * to write (measured: rmsnorm 3×1500 on 2 workers, the pool path 0.68 → 0.50 µs). The same when
 * the next root program is not this call's (p0 + 1 reaches block_end's): the runtime deals tasks
 * round-robin, so the next row belongs to another worker's task, and the prefetch both wasted this
 * core's fill buffers and pulled the other core's row here (2 workers, one row a task: rmsnorm
 * 10×50000 74–78 → 51–52 µs, softmax_mask 100×10000 367–381 → 283–288). A prefetch never faults
 * and changes no value, and the call's range is a run-time argument, so outputs, and the code for
 * every grain, stay the same. */
/* An empty asm that takes value v: what follows it in program order (the prefetches: both touch
 * only inaccessible memory) is not scheduled before v is computed. No instruction is emitted. */
static void prefetch_after(lw *L, LLVMValueRef v) {
  LLVMTypeRef vt = LLVMTypeOf(v);
  LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(L->ctx), &vt, 1, 0);
  LLVMValueRef as = LLVMGetInlineAsm(ft, "", 0, "v", 1, 1, 0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef call = LLVMBuildCall2(L->b, ft, as, &v, 1, "");
  /* memory(inaccessiblemem: readwrite): ModRef (3) for location 1 (inaccessible memory) */
  unsigned mk = LLVMGetEnumAttributeKindForName("memory", 6);
  unsigned nk = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
                           LLVMCreateEnumAttribute(L->ctx, mk, 3u << 2));
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
                           LLVMCreateEnumAttribute(L->ctx, nk, 0));
}

/* v through an empty asm that returns it ("=r,0"): the same value, which the IR passes cannot
 * see through. Not speculatable either, so what is computed from it stays in v's block: a
 * norm's far copy (pf_far) takes its prefetch addresses from such copies of the buffer's base
 * and end, which LICM otherwise hoisted into the entry — four line addresses and a bound
 * computed and spilled in every call, far or not (rmsnorm 1x128, an AOT object called in a
 * loop: 18.4 ns a call with them, 13.3 without the far copy). */
static LLVMValueRef opaque(lw *L, LLVMValueRef v) {
  LLVMTypeRef vt = LLVMTypeOf(v);
  LLVMTypeRef ft = LLVMFunctionType(vt, &vt, 1, 0);
  LLVMValueRef as = LLVMGetInlineAsm(ft, "", 0, "=r,0", 4, 0, 0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef call = LLVMBuildCall2(L->b, ft, as, &v, 1, "");
  unsigned nk = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(L->ctx, nk, 0));
  return call;
}

static void next_row_prefetch_addrs(lw *L) {
  const xir_program *p = L->p;
  int fast = L->c->perm[p->nroot - 1];
  /* the chunk's elements: ℓ, or the tail's N mod ℓ (its packets past the row's end prefetch
   * nothing) */
  int64_t N = dimc(L, L->c->inner_dim);
  int64_t len = L->tail && N % L->ell ? N % L->ell : L->ell, at[XIR__PREFETCH_MAX];
  int nb = 0;
  for (int i = p->body_begin; i < p->nnodes && nb < XIR__PREFETCH_BUFS; i++) {
    if (!L->pf[i]) continue;
    const xir_node *n = &p->nodes[i];
    val off = access_offset(L, n, n->nargs);
    if (!off.aff || off.s != 1) continue;
    int elem = p->params[n->ref].elem;
    /* where a row does not start on a 64-byte boundary (a buffer from malloc: 16 bytes past
     * one), each packet's load straddles two lines; prefetching the later one (the line of the
     * group's last element; the earlier is the previous group's) measured 6–9 % faster than the
     * first line (rmsnorm, layernorm 1024×4096, ℓ = 64 and 128, 2 workers, docs/lowering.md);
     * on aligned rows it is the same line */
    int np = xir__prefetch_offsets(L->W, L->k, len, (int64_t)xir_elem_size((xir_elem)elem), at);
    if (np == 0) continue;
    /* the root programs ahead: 1 inside the call; past its end, with one root axis, this
     * worker's next task's first (p_home_next − p0) when that lies ahead, else 0 */
    LLVMValueRef ahead = ci64(L, 0);
    if (p->nroot == 1) {
      LLVMValueRef later = LLVMBuildICmp(L->b, LLVMIntSGT, L->p_home_next, L->p0, "");
      ahead = LLVMBuildSelect(L->b, later, LLVMBuildSub(L->b, L->p_home_next, L->p0, ""), ci64(L, 0), "");
    }
    LLVMValueRef in_call =
        LLVMBuildICmp(L->b, LLVMIntSLT, LLVMBuildAdd(L->b, L->p0, ci64(L, 1), ""), L->p_call_end, "");
    ahead = LLVMBuildSelect(L->b, in_call, ci64(L, 1), ahead, "ahead");
    LLVMValueRef o = off.u;
    for (int kd = 0; kd < n->nargs - 1; kd++) {
      const xir_node *ix = &p->nodes[n->args[kd]];
      if (ix->op != XIR_OP_ROOT || ix->ref != fast) continue;
      LLVMValueRef st = L->use_cstride ? L->cstride[n->ref][kd] : L->bstride[n->ref][kd];
      o = LLVMBuildAdd(L->b, o, LLVMBuildMul(L->b, ahead, st, ""), "");
    }
    /* the next row's chunk while its last prefetched element is inside the buffer, else this
     * row's (in L1): no prefetch leaves the buffer */
    LLVMValueRef end = L->use_cstride ? L->cend[n->ref] : L->bend[n->ref];
    LLVMValueRef base = L->buf[n->ref];
    if (L->pf_far) { /* in the far copy only (opaque) */
      end = opaque(L, end);
      base = opaque(L, base);
    }
    LLVMValueRef inside =
        LLVMBuildICmp(L->b, LLVMIntSLT, LLVMBuildAdd(L->b, o, ci64(L, at[np - 1]), ""), end, "");
    o = LLVMBuildSelect(L->b, inside, o, off.u, "");
    LLVMTypeRef t = mem_type(L, elem);
    for (int j = 0; j < np; j++) {
      LLVMValueRef oq = LLVMBuildAdd(L->b, o, ci64(L, at[j]), "");
      L->pf_addr[nb][j] = LLVMBuildGEP2(L->b, t, base, &oq, 1, "");
    }
    L->pf_cnt[nb++] = np;
  }
  L->pf_nb = nb;
  L->pf_block = LLVMGetInsertBlock(L->b);
  L->pf_mark = LLVMGetLastInstruction(L->pf_block);
}

/* 1 when anchor v is an instruction of the body in block cur, after the prefetch addresses
 * (next_row_prefetch_addrs), not a phi and not the block's last instruction. */
static int pf_anchor_ok(lw *L, LLVMValueRef v, LLVMBasicBlockRef cur) {
  if (!v || LLVMTypeOf(v) != L->vf || !LLVMIsAInstruction(v) || LLVMIsAPHINode(v) ||
      LLVMGetInstructionParent(v) != cur || !LLVMGetNextInstruction(v) || cur != L->pf_block)
    return 0;
  LLVMValueRef i = L->pf_mark ? LLVMGetNextInstruction(L->pf_mark) : LLVMGetFirstInstruction(cur);
  for (; i; i = LLVMGetNextInstruction(i))
    if (i == v) return 1;
  return 0;
}

/* The chunk's prefetches (next_row_prefetch_addrs computed their addresses before the body). */
static void next_row_prefetch(lw *L) {
  int nb = L->pf_nb, *cnt = L->pf_cnt;
  /* Issued line by line across the buffers (x's line j, then the mask's), and spread over the
   * chunk's packets: group g of the T prefetches (items i with i·k / T = g) is placed right after
   * the instruction that computes packet g's value, behind an empty asm that takes the value (and
   * touches only inaccessible memory, as a prefetch does, so the IR passes still move loads and
   * stores across it; the code generator keeps memory operations in order around it) so that the
   * scheduler does not hoist the prefetches above that value. Issued as one burst at the end of
   * an ℓ = 64 softmax chunk, the 8 prefetches of 4 exp bodies left the row 7–8 % slower than
   * ℓ = 16, whose chunk issues its two after its one exp (softmax_mask 1024x4096, 2 workers:
   * ℓ64 1107–1153 µs, ℓ64 spread 1014–1020, ℓ16 1050–1053; docs/lowering.md). */
  if (L->pf_far) {
    /* a norm's store loop (its far copy): the chunk's prefetches after its packets */
    next_row_prefetch_addrs(L);
    nb = L->pf_nb;
  }
  int total = 0, maxnp = 0;
  for (int b = 0; b < nb; b++) {
    total += cnt[b];
    if (cnt[b] > maxnp) maxnp = cnt[b];
  }
  LLVMBasicBlockRef cur = LLVMGetInsertBlock(L->b);
  int spread = L->k > 1 && L->W * 4 == 64 && !L->pf_far;
  for (unsigned q = 0; q < L->k && spread; q++) spread = pf_anchor_ok(L, L->pf_anchor[q], cur);
  int item = 0, group = -1;
  for (int j = 0; j < maxnp; j++)
    for (int b = 0; b < nb; b++) {
      if (j >= cnt[b]) continue;
      int g = spread ? (int)((int64_t)item * L->k / total) : 0;
      if (spread && g != group) {
        LLVMPositionBuilderBefore(L->b, LLVMGetNextInstruction(L->pf_anchor[g]));
        prefetch_after(L, L->pf_anchor[g]);
        group = g;
      }
      /* locality 3 (prefetcht0, into L1), a norm's (pf_far) 2 (prefetcht1, into L2): its store
       * loop reads this row and w from L1, which the next row's lines would push out */
      LLVMValueRef args[4] = {L->pf_addr[b][j], LLVMConstInt(L->i32, 0, 0),
                              LLVMConstInt(L->i32, L->pf_far ? 2 : 3, 0), LLVMConstInt(L->i32, 1, 0)};
      intrinsic(L, "llvm.prefetch", &L->ptr, 1, args, 4);
      item++;
    }
  LLVMPositionBuilderAtEnd(L->b, cur);
}

/* The lanes that hold a real element at this point: root program exists, inner element exists,
 * and (no_inner) only lane j = 0 of a root program when the point does not involve X. NULL = all. */
static void lane_mask(lw *L, int covers_inner, LLVMValueRef *m) {
  for (unsigned q = 0; q < L->k; q++) m[q] = NULL;
  if (!L->full && L->active.v[0])
    for (unsigned q = 0; q < L->k; q++) m[q] = L->active.v[q];
  if (L->ell > 1 && L->tail && covers_inner) {
    LLVMValueRef cv[MAXK];
    ivecs(L, &L->inner_c, cv);
    LLVMValueRef N = splat(L, ci64(L, dimc(L, L->c->inner_dim)));
    for (unsigned q = 0; q < L->k; q++) {
      LLVMValueRef ok = LLVMBuildICmp(L->b, LLVMIntSLT, cv[q], N, "");
      m[q] = m[q] ? LLVMBuildAnd(L->b, m[q], ok, "") : ok;
    }
  }
  if (L->ell > 1 && !covers_inner) {
    LLVMValueRef jv[MAXK];
    ivecs(L, &L->jlane, jv);
    for (unsigned q = 0; q < L->k; q++) {
      LLVMValueRef ok = LLVMBuildICmp(L->b, LLVMIntEQ, jv[q], LLVMConstNull(LLVMTypeOf(jv[q])), "");
      m[q] = m[q] ? LLVMBuildAnd(L->b, m[q], ok, "") : ok;
    }
  }
}


/* A full vector store made non-temporal (vmovntps), aligned to its size: ℓ ≥ W, the entry
 * checked the buffer's base and strides and chunks start at multiples of ℓ; ℓ = 1, store_body
 * tests the packet's offset. */
static void stream_store(lw *L, LLVMValueRef s, unsigned bytes) {
  LLVMValueRef one = LLVMConstInt(L->i32, 1, 0);
  LLVMMetadataRef md = LLVMValueAsMetadata(one);
  unsigned kind = LLVMGetMDKindIDInContext(L->ctx, "nontemporal", 11);
  LLVMSetMetadata(s, kind, LLVMMetadataAsValue(L->ctx, LLVMMDNodeInContext2(L->ctx, &md, 1)));
  LLVMSetAlignment(s, bytes);
  L->any_nt = 1;
}

/* Stores x at ptr non-temporally (a vector of `bytes`) where the run-time test `nt` holds, else
 * with the element alignment `align`: the streaming copy of ℓ = 1 stores, whose test depends on
 * the packet (or pair) and the launch. */
static void store_streamed_if(lw *L, LLVMValueRef nt, LLVMValueRef x, LLVMValueRef ptr, unsigned bytes,
                              unsigned align) {
  LLVMBasicBlockRef ntb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "ntstore");
  LLVMBasicBlockRef rb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "store");
  LLVMBasicBlockRef jb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "stored");
  LLVMBuildCondBr(L->b, nt, ntb, rb);
  LLVMPositionBuilderAtEnd(L->b, ntb);
  stream_store(L, LLVMBuildStore(L->b, x, ptr), bytes);
  LLVMBuildBr(L->b, jb);
  LLVMPositionBuilderAtEnd(L->b, rb);
  LLVMSetAlignment(LLVMBuildStore(L->b, x, ptr), align);
  LLVMBuildBr(L->b, jb);
  LLVMPositionBuilderAtEnd(L->b, jb);
}

/* Stores two full bf16 packets converted at once (xir__cvt_bf16_pair, <2W x i16>) at ptr, the
 * element offset o: one zmm store, non-temporal where store_body would stream both packets (one
 * 64-byte store where ptr is 64-byte aligned, else the two halves). */
static void store_bf16_pair(lw *L, int buf, LLVMValueRef x2, LLVMValueRef ptr, LLVMValueRef o) {
  if (L->ell == 1 && L->pair) {
    /* a pair unit starts at a multiple of 2W: 64-byte aligned where the base is (nt_pair) */
    if (L->nt_pair[buf]) store_streamed_if(L, L->nt_pair[buf], x2, ptr, 2 * L->W * 2, 2);
    else LLVMSetAlignment(LLVMBuildStore(L->b, x2, ptr), 2);
    return;
  }
  LLVMValueRef nt = NULL;
  if (L->ell == 1 && L->nt_ok[buf])
    nt = LLVMBuildAnd(L->b, L->nt_ok[buf],
                      LLVMBuildICmp(L->b, LLVMIntEQ, LLVMBuildAnd(L->b, o, ci64(L, L->W - 1), ""),
                                    ci64(L, 0), ""), "");
  else if (L->nt)
    nt = LLVMConstInt(LLVMInt1TypeInContext(L->ctx), 1, 0);
  if (!nt) {
    LLVMSetAlignment(LLVMBuildStore(L->b, x2, ptr), 2);
    return;
  }
  LLVMValueRef a64 = LLVMBuildICmp(L->b, LLVMIntEQ,
                                   LLVMBuildAnd(L->b, LLVMBuildPtrToInt(L->b, ptr, L->i64, ""), ci64(L, 63), ""),
                                   ci64(L, 0), "");
  LLVMBasicBlockRef zb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "ntstore2");
  LLVMBasicBlockRef tb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "ntstore2.halves");
  LLVMBasicBlockRef hb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "ntstore2.test");
  LLVMBasicBlockRef rb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "store2");
  LLVMBasicBlockRef jb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "stored2");
  LLVMBuildCondBr(L->b, LLVMBuildAnd(L->b, nt, a64, ""), zb, hb);
  LLVMPositionBuilderAtEnd(L->b, zb);
  stream_store(L, LLVMBuildStore(L->b, x2, ptr), 2 * L->W * 2);
  LLVMBuildBr(L->b, jb);
  LLVMPositionBuilderAtEnd(L->b, hb);
  LLVMBuildCondBr(L->b, nt, tb, rb);
  LLVMPositionBuilderAtEnd(L->b, tb);
  LLVMTypeRef h16 = LLVMVectorType(LLVMInt16TypeInContext(L->ctx), L->W);
  for (unsigned hf = 0; hf < 2; hf++) {
    LLVMValueRef idx[64];
    for (unsigned i = 0; i < L->W; i++) idx[i] = LLVMConstInt(L->i32, hf * L->W + i, 0);
    LLVMValueRef h = LLVMBuildShuffleVector(L->b, x2, LLVMGetUndef(LLVMTypeOf(x2)), LLVMConstVector(idx, L->W), "");
    LLVMValueRef oo = ci64(L, (int64_t)(hf * L->W));
    LLVMValueRef p = LLVMBuildGEP2(L->b, LLVMInt16TypeInContext(L->ctx), ptr, &oo, 1, "");
    stream_store(L, LLVMBuildStore(L->b, LLVMBuildBitCast(L->b, h, h16, ""), p), L->W * 2);
  }
  LLVMBuildBr(L->b, jb);
  LLVMPositionBuilderAtEnd(L->b, rb);
  LLVMSetAlignment(LLVMBuildStore(L->b, x2, ptr), 2);
  LLVMBuildBr(L->b, jb);
  LLVMPositionBuilderAtEnd(L->b, jb);
}

/* A store at compile-time lane offsets (access_offset's pat) whose live lanes write distinct
 * elements within one or two windows of W (xir__window_lanes): per window a shuffle into its
 * order and one masked store, instead of a scatter — the rows of C < ℓ < W root programs, one
 * after the other (C = 6 at ℓ = 8), two rows of C > ℓ (C = 24 at ℓ = 8, each chunk a window a
 * row), or one value per root program (only lane j = 0 stores). Live: not past the row's end in
 * its tail chunk, and lane j = 0 for a store whose tile does not cover the inner axis
 * (lane_mask); a unit whose root programs may not all exist keeps the scatter. 0 when it does
 * not apply. */
static int store_window(lw *L, const val *off, LLVMValueRef x, LLVMValueRef base, LLVMTypeRef et,
                        LLVMTypeRef evt, LLVMValueRef align, int covers_inner) {
  int64_t cv[16];
  int live[16];
  xir__wsplit sp;
  if (L->k != 1 || (!L->full && L->active.v[0])) return 0;
  int tail = L->ell > 1 && L->tail && covers_inner;
  if (tail && !lane_consts_of(L, &L->inner_c, cv)) return 0;
  for (unsigned g = 0; g < L->W; g++)
    live[g] = (!tail || cv[g] < dimc(L, L->c->inner_dim)) && (L->ell <= 1 || covers_inner || g % L->ell == 0);
  if (!xir__window_lanes(off->tab, live, L->W, 1, &sp)) return 0;
  for (int k = 0; k < sp.nwin; k++) {
    LLVMValueRef sh[16];
    for (unsigned i = 0; i < L->W; i++) sh[i] = LLVMGetUndef(L->i32);
    for (unsigned g = 0; g < L->W; g++)
      if (sp.src[g] >= (int)(k * L->W) && sp.src[g] < (int)((k + 1) * L->W))
        sh[sp.src[g] - k * L->W] = LLVMConstInt(L->i32, g, 0);
    LLVMValueRef v = LLVMBuildShuffleVector(L->b, x, LLVMGetPoison(evt), LLVMConstVector(sh, L->W), "");
    LLVMValueRef o = LLVMBuildAdd(L->b, off->pu, ci64(L, sp.base[k]), "");
    LLVMValueRef ptr = LLVMBuildGEP2(L->b, et, base, &o, 1, "");
    xir__ir_mask_store(L->b, L->mod, et, L->W, ptr, v, sp.mask[k], (unsigned)LLVMConstIntGetZExtValue(align),
                       L->narrow_masks);
  }
  return 1;
}

/* The lanes of lane mask m (an i1 or a vector of them) when it is a compile-time constant (a
 * tail chunk's packet over a compile-time dim), as bits in *bits; returns the lane count, or 0
 * when m is not constant. */
static unsigned mask_const_bits(LLVMValueRef m, uint64_t *bits) {
  if (!m || !LLVMIsConstant(m)) return 0;
  LLVMTypeRef t = LLVMTypeOf(m);
  int vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
  unsigned n = vec ? LLVMGetVectorSize(t) : 1;
  *bits = 0;
  for (unsigned i = 0; i < n; i++) {
    LLVMValueRef e = vec ? LLVMGetAggregateElement(m, i) : m;
    if (!e || !LLVMIsAConstantInt(e)) return 0;
    if (LLVMConstIntGetZExtValue(e)) *bits |= 1ull << i;
  }
  return n;
}

/* 1 when lane mask m (NULL: every lane) is known at compile time to keep every lane: a full
 * packet of a tail chunk (its lanes' c < N fold to constants), stored like any full packet. */
static int mask_all_true(LLVMValueRef m) {
  uint64_t bits;
  unsigned n = m ? mask_const_bits(m, &bits) : 0;
  return !m || (n && bits == (1ull << n) - 1);
}

static void store_body(lw *L, int id, void *ud) {
  const xir_node *n = &L->p->nodes[id];
  const xir_type *tile = ud;
  val v = L->fill_val ? *L->fill_val : eval(L, n->args[n->nargs - 1]);
  if (id == L->pf_at && !v.aff)
    for (unsigned q = 0; q < L->k; q++) L->pf_anchor[q] = v.v[q];
  val off = access_offset(L, n, n->nargs - 1);
  LLVMValueRef m[MAXK], base = L->buf[n->ref];
  lane_mask(L, L->ell > 1 && type_has(tile, L->c->inner_dim), m);
  /* a tail chunk's full packets are full vectors (at element offsets that are multiples of W:
   * aligned wherever nt_ok holds), stored and streamed like the other chunks' */
  for (unsigned q = 0; q < L->k; q++)
    if (mask_all_true(m[q])) m[q] = NULL;
  LLVMTypeRef vp = LLVMVectorType(L->ptr, L->W);
  /* a bf16/f16 output stores the f32 values rounded to nearest even (convert.h) */
  int elem = L->p->params[n->ref].elem;
  LLVMTypeRef et = mem_type(L, elem), evt = LLVMVectorType(et, L->W);
  LLVMValueRef align = LLVMConstInt(L->i32, (unsigned)xir_elem_size((xir_elem)elem), 0);
  int pairs = elem == XIR_BF16 && off.aff && off.s == 1 && xir__cvt_bf16_pairs(&L->cvt, L->W);
  for (unsigned q = 0; q < L->k; q++) {
    if (pairs && q + 1 < L->k && !m[q] && !m[q + 1]) {
      LLVMValueRef o = LLVMBuildAdd(L->b, off.u, ci64(L, (int64_t)(q * L->W)), "");
      LLVMValueRef x2 = xir__cvt_bf16_pair(L->b, L->fn, &L->cvt, v.v[q], v.v[q + 1]);
      if (L->pair && L->evenodd) {
        /* packet q holds the even elements, q + 1 the odd ones (pair_evenodd_ok): interleave */
        LLVMValueRef ix[32];
        for (unsigned i = 0; i < 2 * L->W; i++) ix[i] = LLVMConstInt(L->i32, (i % 2) * L->W + i / 2, 0);
        x2 = LLVMBuildShuffleVector(L->b, x2, LLVMGetPoison(LLVMTypeOf(x2)), LLVMConstVector(ix, 2 * L->W), "");
      }
      store_bf16_pair(L, n->ref, x2, LLVMBuildGEP2(L->b, et, base, &o, 1, ""), o);
      q++;
      continue;
    }
    LLVMValueRef x = is_half(elem) ? xir__cvt_from_f32(L->b, L->fn, &L->cvt, elem, v.v[q]) : v.v[q];
    if (off.aff && off.s == 1) {
      LLVMValueRef o = LLVMBuildAdd(L->b, off.u, ci64(L, (int64_t)(q * L->W)), "");
      LLVMValueRef ptr = LLVMBuildGEP2(L->b, et, base, &o, 1, "");
      if (!m[q] && L->ell == 1 && L->nt_ok[n->ref]) {
        /* ℓ = 1: a packet's W root programs; where its elements fill one aligned vector (the
         * entry checked the base; LLVM folds the test where o is known to be a multiple of W:
         * the lin path's p0) the streaming copy stores it non-temporally */
        unsigned vb = L->W * (unsigned)xir_elem_size((xir_elem)elem);
        LLVMValueRef al = LLVMBuildICmp(L->b, LLVMIntEQ, LLVMBuildAnd(L->b, o, ci64(L, L->W - 1), ""),
                                        ci64(L, 0), "");
        store_streamed_if(L, LLVMBuildAnd(L->b, L->nt_ok[n->ref], al, ""), x, ptr, vb,
                          (unsigned)xir_elem_size((xir_elem)elem));
      } else if (!m[q]) {
        LLVMValueRef s = LLVMBuildStore(L->b, x, ptr);
        LLVMSetAlignment(s, (unsigned)xir_elem_size((xir_elem)elem));
        if (L->nt) stream_store(L, s, L->W * (unsigned)xir_elem_size((xir_elem)elem));
      } else {
        uint64_t bits;
        if (L->narrow_masks && mask_const_bits(m[q], &bits)) {
          /* a tail packet over a compile-time dim without AVX-512: plain narrow stores */
          xir__ir_mask_store(L->b, L->mod, et, L->W, ptr, x, bits, (unsigned)xir_elem_size((xir_elem)elem), 1);
          continue;
        }
        LLVMTypeRef tys[2] = {evt, L->ptr};
        LLVMValueRef args[4] = {x, ptr, align, m[q]};
        intrinsic(L, "llvm.masked.store", tys, 2, args, 4);
      }
    } else if (off.pat && store_window(L, &off, x, base, et, evt, align, L->ell > 1 && type_has(tile, L->c->inner_dim))) {
      continue;
    } else {
      LLVMValueRef ov[MAXK];
      ivecs(L, &off, ov);
      LLVMValueRef ptrs = LLVMBuildGEP2(L->b, et, base, &ov[q], 1, "");
      LLVMTypeRef tys[2] = {evt, vp};
      LLVMValueRef args[4] = {x, ptrs, align, m[q] ? m[q] : LLVMConstAllOnes(L->vb)};
      intrinsic(L, "llvm.masked.scatter", tys, 2, args, 4);
    }
  }
}

typedef struct red {
  LLVMValueRef acc[MAXK]; /* allocas of <W x float> */
  LLVMValueRef nan[MAXK]; /* range_fold: allocas of <W x float>, the last NaN input of the lane */
  int range;              /* max/min folded with vrangeps (range_fold) */
  xir_type outer;         /* result axes */
  int64_t lin_stride;
} red;

/* The identity of a reduction's op: for a sum −0, not +0 — −0 + x is x for every x (+0 + −0 is
 * +0), so LLVM folds the first add of an accumulator into its operand (and fma(a, b, −0) into a
 * multiply) with no fast-math flag: a row of k chunks takes k − 1 adds, not k. A sum of only −0
 * terms is now −0 (IEEE's sum of them), where the +0 start made it +0; nothing else changes. */
static LLVMValueRef red_identity(lw *L, int op) {
  double v = op == XIR_OP_REDUCE_SUM ? -0.0 : op == XIR_OP_REDUCE_MAX ? -__builtin_inf() : __builtin_inf();
  return splat(L, cf32(L, v));
}

static LLVMValueRef red_op(lw *L, int op, LLVMValueRef a, LLVMValueRef b) {
  return f_op(L, op == XIR_OP_REDUCE_SUM ? XIR_OP_ADD : op == XIR_OP_REDUCE_MAX ? XIR_OP_MAX : XIR_OP_MIN, a, b, NULL);
}

/* reduce.max/min of a rank-0 result on an AVX-512DQ target (W ≥ 4): llvm.maximum/minimum take six
 * instructions a packet on x86 (vmaxps returns its second operand for a NaN or a ±0 tie, so LLVM
 * orders the operands by sign and patches NaNs). vrangeps (imm 5: max, 4: min, the sign of the
 * selected operand) orders −0 below +0 exactly as maximum/minimum do, but returns the other
 * operand for a quiet NaN; so each lane also keeps the last NaN input it saw (one compare and one
 * blend, off the accumulator's dependency chain), and the fold ends with that NaN where there is
 * one. The result is maximum/minimum's for every input (a NaN where any input of the lane is NaN;
 * which NaN is unspecified there as well): tests/test_ref_special.c, test_reduce_max_min_special,
 * checks the special values against a hand reference. W < 16 is widened to 16 lanes, as rcp14 in
 * vmath.c. */
static int range_fold(lw *L, const xir_node *n) {
  return (n->op == XIR_OP_REDUCE_MAX || n->op == XIR_OP_REDUCE_MIN) && n->type.rank == 0 &&
         L->cvt.avx512dq && L->W >= 4 && L->W <= 16;
}

static LLVMValueRef range_op(lw *L, int op, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef v16 = LLVMVectorType(L->f32, 16);
  LLVMValueRef m[16];
  for (unsigned i = 0; i < 16; i++) m[i] = i < L->W ? LLVMConstInt(L->i32, i, 0) : LLVMGetUndef(L->i32);
  if (L->W < 16) {
    a = LLVMBuildShuffleVector(L->b, a, LLVMGetPoison(L->vf), LLVMConstVector(m, 16), "");
    b = LLVMBuildShuffleVector(L->b, b, LLVMGetPoison(L->vf), LLVMConstVector(m, 16), "");
  }
  LLVMValueRef args[6] = {a, b, LLVMConstInt(L->i32, op == XIR_OP_REDUCE_MAX ? 5 : 4, 0),
                          LLVMGetUndef(v16), LLVMConstAllOnes(LLVMIntTypeInContext(L->ctx, 16)),
                          LLVMConstInt(L->i32, 4, 0)};
  LLVMValueRef r = intrinsic(L, "llvm.x86.avx512.mask.range.ps.512", NULL, 0, args, 6);
  if (L->W < 16) r = LLVMBuildShuffleVector(L->b, r, LLVMGetPoison(v16), LLVMConstVector(m, L->W), "");
  return r;
}

/* reduce.sum(mul(a, b)) on a host with FMA accumulates with one fused multiply-add per packet
 * instead of a multiply and an add (the norms' sums of squares, dot products). The partial sums
 * are then rounded once per element instead of twice: the code, and so the bits, do not depend
 * on G; like any reduction they depend on ℓ and W (the order of the partial sums). */
static int fused_sum(lw *L, const xir_node *n, val *a, val *b) {
  if (n->op != XIR_OP_REDUCE_SUM || !L->cvt.fma) return 0;
  const xir_node *m = &L->p->nodes[n->args[0]];
  if (m->op != XIR_OP_MUL || m->type.elem != XIR_F32 || L->hoist[n->args[0]]) return 0;
  for (int i = 0; i < 2; i++)
    if (L->p->nodes[m->args[i]].type.elem != XIR_F32) return 0;
  *a = eval(L, m->args[0]);
  *b = eval(L, m->args[1]);
  return 1;
}

static void reduce_body(lw *L, int id, void *ud) {
  const xir_node *n = &L->p->nodes[id];
  red *R = ud;
  val fa, fb;
  int fused = fused_sum(L, n, &fa, &fb);
  val v = fused ? fa : eval(L, n->args[0]);
  if (id == L->pf_at && !v.aff)
    for (unsigned q = 0; q < L->k; q++) L->pf_anchor[q] = v.v[q];
  LLVMValueRef m[MAXK];
  for (unsigned q = 0; q < L->k; q++) m[q] = NULL;
  if (L->ell > 1 && L->tail) {
    /* only the inner-tail validity matters for the partials: inactive root programs are clamped
     * duplicates and their results are never stored */
    int saved = L->full;
    L->full = 1;
    lane_mask(L, 1, m);
    L->full = saved;
  }
  /* A sum's masked packet (the tail chunk) is written select(m, acc + x, acc), not
   * acc + select(m, x, −0): acc + −0 is acc, so the bits are the same, and a select with the
   * accumulator LLVM may merge into the shuffles after it where one with −0 stays a blend (it
   * also turns some back into the blend: its canonical form). Where the tail chunk is the row's
   * only chunk (a row shorter than ℓ) each accumulator holds one packet, and fold_packets' first
   * step adds packets q − 1 and q for odd q: such a masked packet adds into packet q − 1's
   * accumulator now, its own staying −0 (the step then adds −0, which folds away) — the same two
   * operands in the same order; a fused product is rounded alone, as fma(a, b, −0) rounds it
   * (rmsnorm's row of 24 at ℓ = 32: no −0 blend, the half packet's square and add on 256 bits). */
  int msum = n->op == XIR_OP_REDUCE_SUM && !R->range && !L->evenodd && L->ell > 1 && L->tail;
  int only = msum && L->k > 1 && is_fixed(L, L->c->inner_dim) &&
             dimc(L, L->c->inner_dim) < (int64_t)L->ell;
  for (unsigned q = 0; q < L->k; q++) {
    LLVMValueRef a = LLVMBuildLoad2(L->b, L->vf, R->acc[q], "");
    if (msum && m[q]) {
      unsigned t = only && (q & 1) ? q - 1 : q;
      LLVMValueRef at = t == q ? a : LLVMBuildLoad2(L->b, L->vf, R->acc[t], "");
      LLVMValueRef r;
      if (fused && t != q) r = red_op(L, n->op, at, LLVMBuildFMul(L->b, fa.v[q], fb.v[q], ""));
      else r = fused ? f_op(L, XIR_OP_FMA, fa.v[q], fb.v[q], at) : red_op(L, n->op, at, v.v[q]);
      LLVMBuildStore(L->b, LLVMBuildSelect(L->b, m[q], r, at, ""), R->acc[t]);
      continue;
    }
    if (fused) {
      LLVMValueRef r = f_op(L, XIR_OP_FMA, fa.v[q], fb.v[q], a);
      LLVMBuildStore(L->b, m[q] ? LLVMBuildSelect(L->b, m[q], r, a, "") : r, R->acc[q]);
      continue;
    }
    LLVMValueRef x = v.v[q];
    if (m[q]) x = LLVMBuildSelect(L->b, m[q], x, red_identity(L, n->op), "");
    if (R->range) {
      LLVMValueRef nn = LLVMBuildLoad2(L->b, L->vf, R->nan[q], "");
      LLVMValueRef uno = LLVMBuildFCmp(L->b, LLVMRealUNO, x, x, "");
      LLVMBuildStore(L->b, LLVMBuildSelect(L->b, uno, x, nn, ""), R->nan[q]);
      LLVMBuildStore(L->b, range_op(L, n->op, a, x), R->acc[q]);
      continue;
    }
    LLVMBuildStore(L->b, red_op(L, n->op, a, x), R->acc[q]);
  }
}

static void reduce_tile_body(lw *L, int id, void *ud) {
  const xir_node *n = &L->p->nodes[id];
  (void)ud;
  val v = eval(L, n->args[0]);
  LLVMValueRef ptr = scratch_ptr(L, id);
  LLVMValueRef a = LLVMBuildLoad2(L->b, L->vf, ptr, "");
  LLVMSetAlignment(a, 4);
  LLVMSetAlignment(LLVMBuildStore(L->b, red_op(L, n->op, a, v.v[0]), ptr), 4);
}

/* ---- masked-work skipping (xir__mask_skips; docs/lowering.md) ---- */

/* The unit's live end along the mask axis: the largest end of its root programs (inactive lanes
 * are clamped duplicates), each clamped to [0, extent]; *lo the smallest. */
static LLVMValueRef unit_mask_end(lw *L, LLVMValueRef *lo) {
  const xir__prefix_mask *m = &L->mask;
  int64_t c0 = m->c0;
  for (int d = 0; d < L->p->ndims; d++)
    if (m->dim_coef[d]) c0 = xir__iadd(c0, xir__imul(m->dim_coef[d], dimc(L, d)));
  val e = vaff(ci64(L, c0), 0);
  for (int a = 0; a < L->p->nroot; a++)
    if (m->root_coef[a]) {
      val k = vaff(ci64(L, m->root_coef[a]), 0);
      val t = int_binop(L, XIR_OP_MUL, &L->coord[a], &k);
      e = int_binop(L, XIR_OP_ADD, &e, &t);
    }
  e = clamp(L, &e, dimc(L, m->axis_dim));
  if (e.aff && e.s == 0) {
    *lo = e.u;
    return e.u;
  }
  LLVMValueRef v[MAXK], mx = NULL, mn = NULL;
  ivecs(L, &e, v);
  for (unsigned q = 0; q < L->k; q++) {
    LLVMValueRef r = intrinsic(L, "llvm.vector.reduce.smax", &L->vi, 1, &v[q], 1);
    LLVMValueRef rn = intrinsic(L, "llvm.vector.reduce.smin", &L->vi, 1, &v[q], 1);
    mx = mx ? smax(L, r, mx) : r;
    mn = mn ? smin(L, rn, mn) : rn;
  }
  *lo = mn;
  return mx;
}

/* The chunks (ℓ > 1) or elements (ℓ = 1) live in every lane of the unit. */
static LLVMValueRef mask_live_chunks(lw *L) {
  if (L->ell == 1) return L->mask_end_min;
  return LLVMBuildUDiv(L->b, L->mask_end_min, ci64(L, L->ell), "");
}

/* Elements [0, end) of the mask axis as a loop range: chunks for ℓ > 1 (the last one partly
 * masked: its lanes at or past the end compute the fill's value, as without skipping). */
static LLVMValueRef mask_chunks(lw *L, LLVMValueRef end) {
  if (L->ell == 1) return end;
  return LLVMBuildUDiv(L->b, LLVMBuildAdd(L->b, end, ci64(L, L->ell - 1), ""), ci64(L, L->ell), "");
}

static int64_t axis_chunks(lw *L) {
  int64_t N = dimc(L, L->mask.axis_dim);
  return L->ell > 1 ? (N + L->ell - 1) / L->ell : N;
}

/* The value of tile expression `id` at the masked positions: the mask is the constant fill there
 * and every other operand on the way is a rank-0 value (xir__mask_skips), so it is computed once
 * per unit, without the loop nest. */
static val masked_value(lw *L, int id) {
  int nest = L->nest_dim;
  L->nest_dim = -1; /* no materialized slot */
  L->gen++;
  L->memo[L->mask_id] = vsplat(L, cf32(L, L->mask.fill));
  L->memo_gen[L->mask_id] = L->gen;
  val u = eval(L, id);
  L->gen++;
  L->nest_dim = nest;
  return u;
}

/* 1 when reduction id (rank 0, over the inner axis X, ℓ ≥ 2W) may load its row even/odd
 * (lw.evenodd): its expression's tile nodes are 1-D over X, f32 or bool, pointwise ops that do
 * not look at positions (no iota, no index arithmetic), and one load of a bf16 buffer that is
 * neither hoisted, nor a period buffer, nor kept in a materialized slot — every other operand is
 * a rank-0 value, the same in every lane. Iterative walk; 0 on OOM (the usual loads). */
static int evenodd_reduction(lw *L, int id) {
  const xir_program *p = L->p;
  const xir_node *n = &p->nodes[id];
  int X = L->c->inner_dim;
  if (L->ell < 2 * L->W || L->k % 2 || L->skip[id] || n->type.rank != 0) return 0;
  const xir_type *in = &p->nodes[n->args[0]].type;
  if (in->rank != 1 || in->axes[0] != X) return 0;
  size_t nn = (size_t)p->nnodes;
  int *stack = xir__malloc(sizeof(int) * (nn * (XIR_MAX_RANK + 2) + 1));
  uint8_t *seen = xir__calloc(nn + 1, 1);
  int ok = stack && seen, sp = 0, leaf = -1;
  if (ok) stack[sp++] = n->args[0];
  while (ok && sp) {
    int a = stack[--sp];
    if (a < 0 || seen[a]) continue;
    seen[a] = 1;
    const xir_node *m = &p->nodes[a];
    if (m->type.rank == 0) continue; /* uniform */
    if (m->type.rank != 1 || m->type.axes[0] != X ||
        (m->type.elem != XIR_F32 && m->type.elem != XIR_BOOL)) {
      ok = 0;
      break;
    }
    if (m->op == XIR_OP_LOAD) {
      ok = leaf < 0 && p->params[m->ref].elem == XIR_BF16 && !L->hoist[a] &&
           !(L->hoist_buf && L->hoist_buf[a]) && !(L->pm_buf && L->pm_buf[a]) &&
           !(L->mat_uses[a] >= 2 && mat_fits(L, a, NULL));
      leaf = a;
      continue;
    }
    switch (m->op) {
    case XIR_OP_NEG: case XIR_OP_ABS: case XIR_OP_EXP: case XIR_OP_LOG: case XIR_OP_TANH:
    case XIR_OP_ERF: case XIR_OP_SQRT: case XIR_OP_RSQRT: case XIR_OP_SIGMOID: case XIR_OP_SIN:
    case XIR_OP_COS: case XIR_OP_ADD: case XIR_OP_SUB: case XIR_OP_MUL: case XIR_OP_DIV:
    case XIR_OP_MAX: case XIR_OP_MIN: case XIR_OP_POW: case XIR_OP_LT: case XIR_OP_LE:
    case XIR_OP_GT: case XIR_OP_GE: case XIR_OP_EQ: case XIR_OP_NE: case XIR_OP_AND:
    case XIR_OP_OR: case XIR_OP_NOT: case XIR_OP_FMA: case XIR_OP_SELECT:
      break;
    default:
      ok = 0;
    }
    if (L->hoist[a] || (L->mat_uses[a] >= 2 && mat_fits(L, a, NULL))) ok = 0; /* kept in order */
    for (int k = 0; ok && k < m->nargs; k++)
      if (m->args[k] >= 0) stack[sp++] = m->args[k];
  }
  xir__free(stack);
  xir__free(seen);
  return ok && leaf >= 0;
}

/* The identity in every partial sum of reduction id (and, for a vrangeps fold, its NaN slots). */
static void red_init(lw *L, int id, red *R) {
  const xir_node *n = &L->p->nodes[id];
  for (unsigned q = 0; q < L->k; q++) LLVMBuildStore(L->b, red_identity(L, n->op), R->acc[q]);
  if ((R->range = range_fold(L, n)))
    for (unsigned q = 0; q < L->k; q++) {
      R->nan[q] = entry_alloca(L, L->vf, "nan");
      LLVMBuildStore(L->b, red_identity(L, n->op), R->nan[q]);
    }
}

static void red_fold(lw *L, int id, red *Rp);
static int pair_fold_ok(lw *L, int a, const red *Ra, int b, const red *Rb);
static void red_fold_pair(lw *L, int a, red *Ra, int b, red *Rb);

/* Sibling reductions (docs/lowering.md, "Reductions"): rank-0 reductions over the same tile that
 * do not depend on each other share one loop, so that a row is read once for all of them
 * (layernorm's corrected two-pass: sum(d0) and sum(d0 * d0)). Each keeps its own partial sums in
 * the same order as in a loop of its own: the bits do not change. */
enum { MAX_SIBLINGS = 4 };
typedef struct red_group {
  int n;
  int ids[MAX_SIBLINGS];
  red R[MAX_SIBLINGS];
} red_group;

static void reduce_body(lw *L, int id, void *ud);

static void reduce_group_body(lw *L, int id, void *ud) {
  red_group *g = ud;
  (void)id;
  for (int i = 0; i < g->n; i++) reduce_body(L, g->ids[i], &g->R[i]);
}

/* 1 when reduction j (> id, not emitted yet, no store between the two: emit_reduce's scan) may
 * accumulate in reduction id's loop: rank 0 over the same tile, not masked-skipped, loaded
 * even/odd exactly when id is, not the next-row prefetch's anchor, and every value j's
 * expression needs is available now — its rank-0 operands already computed, no tile reduction
 * emitted after id, and not id itself. Iterative walk; 0 on OOM. */
static int sibling_ok(lw *L, int id, int j) {
  const xir_program *p = L->p;
  const xir_node *n = &p->nodes[id], *m = &p->nodes[j];
  if (m->type.rank != 0 || L->skip[j] || j == L->pf_at) return 0;
  const xir_type *a = &p->nodes[n->args[0]].type, *b = &p->nodes[m->args[0]].type;
  if (a->rank != b->rank || memcmp(a->axes, b->axes, (size_t)a->rank * sizeof a->axes[0]) != 0)
    return 0;
  /* both loaded even/odd or neither (the loop has one mode; each gets the order it would get in
   * a loop of its own) */
  if (evenodd_reduction(L, j) != L->evenodd) return 0;
  size_t nn = (size_t)p->nnodes;
  int *stack = xir__malloc(sizeof(int) * (nn * (XIR_MAX_RANK + 2) + 1));
  uint8_t *seen = xir__calloc(nn + 1, 1);
  int ok = stack && seen, sp = 0;
  if (ok) stack[sp++] = m->args[0];
  while (ok && sp) {
    int x = stack[--sp];
    if (x < 0 || seen[x]) continue;
    seen[x] = 1;
    const xir_node *e = &p->nodes[x];
    if (x == id) ok = 0;
    else if (e->type.rank == 0 && !xir__is_inline_leaf(e->op)) ok = L->top_ok[x];
    else if ((e->op == XIR_OP_REDUCE_SUM || e->op == XIR_OP_REDUCE_MAX ||
              e->op == XIR_OP_REDUCE_MIN) && x > id) ok = 0;
    else
      for (int k = 0; k < e->nargs; k++)
        if (e->args[k] >= 0) stack[sp++] = e->args[k];
  }
  xir__free(stack);
  xir__free(seen);
  return ok;
}

/* A reduction's loops: a tile result (ℓ = 1) is complete in its scratch and 0 is returned; a
 * rank-0 one and its siblings (g: ids and partial sums) accumulate, and 1 is returned — their
 * folds are left to reduce_folds (or, in a row group, group_fold). */
static int reduce_loops(lw *L, int id, red_group *gp) {
  const xir_node *n = &L->p->nodes[id];
  const xir_type *in = &L->p->nodes[n->args[0]].type;
  red R;
  memset(&R, 0, sizeof R);
  for (unsigned q = 0; q < L->k; q++) R.acc[q] = entry_alloca(L, L->vf, "acc");
  if (n->type.rank > 0) {
    /* A tile result (ℓ = 1 only): scratch[result point] accumulates while the loops walk the
     * input in its own axis order, so each result element is reduced in order along the axis and
     * values that do not depend on the inner axes are computed once per outer point. */
    int64_t size = 1;
    int all_fixed = 1;
    LLVMValueRef sizev = ci64(L, 1);
    for (int i = 0; i < n->type.rank; i++) {
      int ax = n->type.axes[i];
      all_fixed &= is_fixed(L, ax);
      size *= is_fixed(L, ax) ? dimc(L, ax) : XIR_RUNTIME_TILE_MAX;
      sizev = LLVMBuildMul(L->b, sizev, dimv(L, ax), "");
    }
    if (size * 64 > (4 << 20)) {
      L->st = xir__err(L->d, XIR_ERR_UNSUPPORTED,
                       "the tile result of '%s' needs %lld vectors of scratch (at most 64 Ki)",
                       xir__op_info[n->op].name, (long long)size);
      return 0;
    }
    if (!L->scratch[id])
      L->scratch[id] = all_fixed ? entry_alloca(L, LLVMArrayType2(L->vf, (uint64_t)size), "scratch")
                                 : entry_array(L, L->vf, n->type.axes, n->type.rank, 1, "scratch");
    loop init;
    loop_begin(L, &init, ci64(L, 0), sizev);
    LLVMValueRef ptr = LLVMBuildGEP2(L->b, L->vf, L->scratch[id], &init.i, 1, "");
    LLVMSetAlignment(LLVMBuildStore(L->b, red_identity(L, n->op), ptr), 4);
    loop_end(L, &init);
    tile_loops(L, in, 0, reduce_tile_body, id, NULL);
    return 0;
  }
  if (L->skip[id]) {
    /* positions past the end hold the masked value: left out when it is the identity (in every
     * lane), else the loop covers the whole axis */
    val u = masked_value(L, n->args[0]);
    LLVMTypeRef bt = LLVMVectorType(L->i1, L->W);
    LLVMValueRef neutral = NULL;
    for (unsigned q = 0; q < L->k; q++) {
      LLVMValueRef eq = LLVMBuildFCmp(L->b, LLVMRealOEQ, u.v[q], red_identity(L, n->op), "");
      LLVMValueRef all = intrinsic(L, "llvm.vector.reduce.and", &bt, 1, &eq, 1);
      neutral = neutral ? LLVMBuildAnd(L->b, neutral, all, "") : all;
    }
    LLVMValueRef end = LLVMBuildSelect(L->b, neutral, L->mask_end,
                                       ci64(L, dimc(L, L->mask.axis_dim)), "");
    L->rng_lo = ci64(L, 0);
    L->rng_hi = mask_chunks(L, end);
    L->rng_live = mask_live_chunks(L);
  }
  red_init(L, id, &R);
  L->evenodd = evenodd_reduction(L, id);
  red_group g = {.n = 1, .ids = {id}};
  /* the next reductions in body order while they qualify, up to the first store (j's loads
   * would move before it): the loops merged stay adjacent, so
   * the materialized slots' plan (mat_sim, body order: which loop first stores a value, which
   * reads another for the last time and takes its slot) sees no loop move past another */
  for (int j = id + 1; !L->skip[id] && j < L->p->nnodes && g.n < MAX_SIBLINGS; j++) {
    int op = L->p->nodes[j].op;
    if (op == XIR_OP_STORE) break;
    if (op != XIR_OP_REDUCE_SUM && op != XIR_OP_REDUCE_MAX && op != XIR_OP_REDUCE_MIN) continue;
    if (!sibling_ok(L, id, j)) break;
    g.ids[g.n++] = j;
  }
  g.R[0] = R;
  if (g.n == 1) {
    tile_loops(L, in, 0, reduce_body, id, &g.R[0]);
  } else {
    for (int i = 1; i < g.n; i++) {
      memset(&g.R[i], 0, sizeof g.R[i]);
      for (unsigned q = 0; q < L->k; q++) g.R[i].acc[q] = entry_alloca(L, L->vf, "acc");
      red_init(L, g.ids[i], &g.R[i]);
    }
    tile_loops(L, in, 0, reduce_group_body, id, &g);
  }
  L->evenodd = 0;
  L->rng_lo = L->rng_hi = L->rng_live = NULL;
  *gp = g;
  return 1;
}

/* The folds of reduce_loops' results g, but those marked in done (a bit a sibling): two sums a
 * fold where they may share one (red_fold_pair). */
static void reduce_folds(lw *L, red_group *g, unsigned done) {
  for (int i = 0; i < g->n;) {
    if (done >> i & 1) {
      i++;
    } else if (i + 1 < g->n && !(done >> (i + 1) & 1) &&
               pair_fold_ok(L, g->ids[i], &g->R[i], g->ids[i + 1], &g->R[i + 1])) {
      red_fold_pair(L, g->ids[i], &g->R[i], g->ids[i + 1], &g->R[i + 1]);
      i += 2;
    } else {
      red_fold(L, g->ids[i], &g->R[i]);
      i++;
    }
  }
}

/* Emits a reduction: rank-0 results go to top[], tile results to scratch. */
static void emit_reduce(lw *L, int id) {
  red_group g;
  if (reduce_loops(L, id, &g)) reduce_folds(L, &g, 0);
}

/* The k packets' partial results of a root program folded into acc[0]: a fixed pairwise tree
 * (vrangeps where range, red_fold). */
static void fold_packets(lw *L, int op, int range, LLVMValueRef *acc) {
  for (unsigned w = 1; w < L->k; w *= 2)
    for (unsigned q = 0; q + w < L->k; q += 2 * w)
      acc[q] = range ? range_op(L, op, acc[q], acc[q + w]) : red_op(L, op, acc[q], acc[q + w]);
}

/* Butterfly steps over the lanes of v at xor distances dist, dist/2, …, 1 (none for dist 0): each
 * lane ends with the fold of its 2·dist-lane group, the same bits in all of them. */
static LLVMValueRef butterfly(lw *L, int op, int range, LLVMValueRef v, unsigned dist) {
  for (; dist >= 1; dist /= 2) {
    LLVMValueRef e[16];
    for (unsigned i = 0; i < L->W; i++) e[i] = LLVMConstInt(L->i32, i ^ dist, 0);
    LLVMValueRef sh = LLVMBuildShuffleVector(L->b, v, LLVMGetPoison(L->vf), LLVMConstVector(e, L->W), "");
    v = range ? range_op(L, op, v, sh) : red_op(L, op, v, sh);
  }
  return v;
}

/* 1 when sibling reductions a and b (one loop, partial sums Ra, Rb) may fold together
 * (red_fold_pair): both rank-0 sums over the inner axis, one root program a packet (ℓ ≥ W),
 * W ≥ 2. */
static int pair_fold_ok(lw *L, int a, const red *Ra, int b, const red *Rb) {
  const xir_program *p = L->p;
  int ids[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    const xir_node *n = &p->nodes[ids[i]];
    const xir_type *in = &p->nodes[n->args[0]].type;
    if (n->op != XIR_OP_REDUCE_SUM || n->type.rank != 0 || in->rank != 1 ||
        in->axes[0] != L->c->inner_dim)
      return 0;
  }
  return !Ra->range && !Rb->range && L->ell >= L->W && L->W >= 2 && L->W <= 16;
}

/* Two sibling sums folded as red_fold folds each, with the same bits, in fewer instructions:
 * after each one's packets are added (the same pairwise tree), the butterfly's first step
 * (distance W/2) of both is one add of two shuffles — lanes [0, W/2) hold a's lane i + lane i + W/2
 * (a's butterfly lane i, the same operands in the same order), lanes [W/2, W) b's — and the
 * steps W/4 … 1 run once on that vector, each lane pairing with a lane of its own half as in its
 * own butterfly. A butterfly leaves the same bits in every lane (each step's two lanes add the
 * same two values), so lane 0 broadcast is a's result and lane W/2 b's. For W = 16: 2 + 1 + 3·2 +
 * 2 = 11 vector ops instead of 2·8 (layernorm's corr and mean square). */
static void red_fold_pair(lw *L, int a, red *Ra, int b, red *Rb) {
  LLVMValueRef acc[2][MAXK];
  red *Rs[2] = {Ra, Rb};
  for (int j = 0; j < 2; j++) {
    for (unsigned q = 0; q < L->k; q++) acc[j][q] = LLVMBuildLoad2(L->b, L->vf, Rs[j]->acc[q], "");
    fold_packets(L, XIR_OP_REDUCE_SUM, 0, acc[j]);
  }
  unsigned W = L->W, h = W / 2;
  LLVMValueRef lo[16], hi[16], e[16];
  for (unsigned i = 0; i < W; i++) {
    lo[i] = LLVMConstInt(L->i32, i < h ? i : W + i - h, 0);
    hi[i] = LLVMConstInt(L->i32, i < h ? i + h : W + i, 0);
  }
  LLVMValueRef c = red_op(L, XIR_OP_REDUCE_SUM,
                          LLVMBuildShuffleVector(L->b, acc[0][0], acc[1][0], LLVMConstVector(lo, W), ""),
                          LLVMBuildShuffleVector(L->b, acc[0][0], acc[1][0], LLVMConstVector(hi, W), ""));
  c = butterfly(L, XIR_OP_REDUCE_SUM, 0, c, h / 2);
  for (int j = 0; j < 2; j++) {
    for (unsigned i = 0; i < W; i++) e[i] = LLVMConstInt(L->i32, j ? h : 0, 0);
    LLVMValueRef r = LLVMBuildShuffleVector(L->b, c, LLVMGetPoison(L->vf), LLVMConstVector(e, W), "");
    for (unsigned q = 0; q < L->k; q++) acc[j][q] = r;
    int id = j ? b : a;
    L->top[id] = vvec(L, acc[j]);
    L->top_ok[id] = 1;
  }
}

/* A rank-0 reduction's result from its partial sums R (after its loop): the packets and lanes
 * folded, in top[id]. */
static void red_fold(lw *L, int id, red *Rp) {
  const xir_node *n = &L->p->nodes[id];
  const xir_type *in = &L->p->nodes[n->args[0]].type;
  red R = *Rp;
  LLVMValueRef acc[MAXK];
  int lanes_fold = L->ell > 1 && in->rank == 1 && in->axes[0] == L->c->inner_dim;
  /* ℓ ≥ W (one root program a packet) with a vrangeps fold: the packets and lanes fold with
   * vrangeps too (two instructions a butterfly step instead of llvm.maximum's seven) and a NaN
   * anywhere in the row, kept apart in nan[], makes the result a NaN (the quiet NaN 0x7fc00000:
   * which NaN is unspecified, as for maximum/minimum) — one compare and one mask test a row.
   * Elsewhere each lane's kept NaN is merged first and the fold is llvm.maximum/minimum. */
  int row_range = R.range && lanes_fold && L->ell >= L->W;
  LLVMValueRef anyv = NULL;
  for (unsigned q = 0; q < L->k; q++) {
    acc[q] = LLVMBuildLoad2(L->b, L->vf, R.acc[q], "");
    if (R.range) {
      LLVMValueRef nn = LLVMBuildLoad2(L->b, L->vf, R.nan[q], "");
      LLVMValueRef uno = LLVMBuildFCmp(L->b, LLVMRealUNO, nn, nn, "");
      if (row_range) anyv = anyv ? LLVMBuildOr(L->b, anyv, uno, "") : uno;
      else acc[q] = LLVMBuildSelect(L->b, uno, nn, acc[q], "");
    }
  }
  if (lanes_fold) {
    fold_packets(L, n->op, row_range, acc);
    unsigned g = L->ell < L->W ? L->ell : L->W;
    acc[0] = butterfly(L, n->op, row_range, acc[0], g / 2);
    if (row_range) {
      LLVMTypeRef bt = LLVMVectorType(L->i1, L->W);
      LLVMValueRef any = intrinsic(L, "llvm.vector.reduce.or", &bt, 1, &anyv, 1);
      acc[0] = LLVMBuildSelect(L->b, any, splat(L, cf32(L, __builtin_nan(""))), acc[0], "");
    }
    for (unsigned q = 1; q < L->k; q++) acc[q] = acc[0];
  }
  L->top[id] = vvec(L, acc);
  L->top_ok[id] = 1;
}

static void emit_store_loops(lw *L, int id);

/* The element offset of the row that store id writes in this root program (its slice index at
 * 0), or NULL when its offset is not that row plus c (realign_ok). */
static LLVMValueRef store_row_offset(lw *L, const xir_node *n) {
  int X = L->c->inner_dim;
  val keep = L->env[X];
  L->env[X] = L->jlane;
  val off = access_offset(L, n, n->nargs - 1);
  L->env[X] = keep;
  return off.aff && off.s == 1 ? off.u : NULL;
}

/* Rows that stream although they do not start on a vector boundary (docs/lowering.md,
 * "Streaming stores"): store id writes one contiguous f32 row over the inner axis X, of a
 * compile-time length N small enough for a stack buffer, and nothing in the body reads the
 * output. The unit then computes the row into that buffer (regular stores, L1) and copies it to
 * the output with non-temporal stores of whole aligned vectors, the partial vectors at either
 * end masked: rows of 1000 floats (4000 bytes) otherwise take regular stores, which read every
 * output line first. Forced streaming, xir / the stream probe, old and new alternating x2:
 * rmsnorm 20000x1000 1.63-1.96 -> 1.00-1.10, 40000x500 1.63-1.71 -> 1.13-1.41, softmax_mask
 * 20000x1000 1.69-1.81 -> 1.28-1.55, layernorm 1.69-1.81 -> 1.18-1.23. Rows shorter than
 * REALIGN_MIN_BYTES keep the regular stores: at 400 bytes (two of their seven lines partial,
 * each shared with the next row) the copy lost, rmsnorm 300000x100 1.53-1.63 -> 2.03-2.12. */
enum { REALIGN_MIN_BYTES = 1 << 10, REALIGN_MAX_BYTES = 64 << 10 };
static int realign_ok(lw *L, int id, void (*loops)(lw *, int)) {
  const xir_program *p = L->p;
  const xir_node *n = &p->nodes[id];
  const xir_param *q = &p->params[n->ref];
  int X = L->c->inner_dim;
  if (loops != emit_store_loops || L->skip[id] || L->early_fill || L->ell < L->W) return 0;
  if (q->elem != XIR_F32 || X < 0 || !is_fixed(L, X) || dimc(L, X) * 4 > REALIGN_MAX_BYTES ||
      dimc(L, X) * 4 < REALIGN_MIN_BYTES)
    return 0;
  if (n->args[n->nargs - 2] >= 0 || q->dims[n->nargs - 2] != X) return 0;
  for (int kd = 0; kd < n->nargs - 2; kd++)
    if (n->args[kd] < 0) return 0;
  for (int i = p->body_begin; i < p->nnodes; i++)
    if (p->nodes[i].op == XIR_OP_LOAD && p->nodes[i].ref == n->ref) return 0;
  return 1;
}

/* Copies the N floats at src (a stack buffer of N + W) to dst, whose address is a multiple of
 * 4: the elements before dst's first W-float boundary and after its last one with masked
 * stores, every whole vector between with a non-temporal store. */
static void realign_copy(lw *L, LLVMValueRef src, LLVMValueRef dst, int64_t N) {
  int64_t V = (int64_t)L->W * 4;
  LLVMTypeRef tys[2] = {L->vf, L->ptr};
  LLVMValueRef align = LLVMConstInt(L->i32, 4, 0);
  LLVMValueRef lanes = lane_consts(L, 0, 1);
  LLVMValueRef da = LLVMBuildPtrToInt(L->b, dst, L->i64, "");
  LLVMValueRef h = LLVMBuildLShr(
      L->b, LLVMBuildAnd(L->b, LLVMBuildSub(L->b, ci64(L, V), LLVMBuildAnd(L->b, da, ci64(L, V - 1), ""), ""),
                         ci64(L, V - 1), ""),
      ci64(L, 2), "head");
  h = LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, h, ci64(L, N), ""), h, ci64(L, N), "");
  /* the head: elements [0, h) */
  LLVMValueRef v0 = LLVMBuildLoad2(L->b, L->vf, src, "");
  LLVMSetAlignment(v0, 4);
  LLVMValueRef m0 = LLVMBuildICmp(L->b, LLVMIntSLT, lanes, splat(L, h), "");
  LLVMValueRef a0[4] = {v0, dst, align, m0};
  intrinsic(L, "llvm.masked.store", tys, 2, a0, 4);
  /* the whole vectors: [h + W·j, h + W·j + W) for j < (N − h) / W */
  LLVMValueRef nv = LLVMBuildSDiv(L->b, LLVMBuildSub(L->b, ci64(L, N), h, ""), ci64(L, L->W), "");
  loop lp;
  loop_begin(L, &lp, ci64(L, 0), nv);
  LLVMValueRef o = LLVMBuildAdd(L->b, h, LLVMBuildMul(L->b, lp.i, ci64(L, L->W), ""), "");
  LLVMValueRef v = LLVMBuildLoad2(L->b, L->vf, LLVMBuildGEP2(L->b, L->f32, src, &o, 1, ""), "");
  LLVMSetAlignment(v, 4);
  stream_store(L, LLVMBuildStore(L->b, v, LLVMBuildGEP2(L->b, L->f32, dst, &o, 1, "")), (unsigned)V);
  loop_end(L, &lp);
  /* the tail: [h + W·nv, N), fewer than W */
  LLVMValueRef t = LLVMBuildAdd(L->b, h, LLVMBuildMul(L->b, nv, ci64(L, L->W), ""), "");
  LLVMValueRef vt = LLVMBuildLoad2(L->b, L->vf, LLVMBuildGEP2(L->b, L->f32, src, &t, 1, ""), "");
  LLVMSetAlignment(vt, 4);
  LLVMValueRef mt = LLVMBuildICmp(L->b, LLVMIntSLT, lanes, splat(L, LLVMBuildSub(L->b, ci64(L, N), t, "")), "");
  LLVMValueRef at[4] = {vt, LLVMBuildGEP2(L->b, L->f32, dst, &t, 1, ""), align, mt};
  intrinsic(L, "llvm.masked.store", tys, 2, at, 4);
}

/* Emits store id's loops by `loops`; where its buffer may be streamed (ℓ ≥ W, nt_ok) twice,
 * behind a branch on nt_ok: the streaming copy with non-temporal full-vector stores, the other
 * with regular ones — and, where realign_ok, a third for a streaming launch whose rows nt_ok
 * found unaligned: the row into a buffer, then realign_copy. All compute the same values (the
 * materialized tiles start in the same state). */
static void emit_streamed(lw *L, int id, void (*loops)(lw *, int)) {
  const xir_node *n = &L->p->nodes[id];
  if (!L->nt_ok[n->ref] || !L->mat_save) {
    loops(L, id);
    return;
  }
  LLVMValueRef row0 = realign_ok(L, id, loops) ? store_row_offset(L, n) : NULL;
  LLVMBasicBlockRef ntb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "stream");
  LLVMBasicBlockRef cb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "cached");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "stored");
  LLVMBasicBlockRef rab = NULL;
  LLVMValueRef dst = NULL;
  if (row0) {
    /* not aligned for the streaming copy, but streamed: through a row buffer where the row
     * starts on a 4-byte boundary */
    LLVMBasicBlockRef notb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "unaligned");
    rab = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "realign");
    LLVMBuildCondBr(L->b, L->nt_ok[n->ref], ntb, notb);
    LLVMPositionBuilderAtEnd(L->b, notb);
    dst = LLVMBuildGEP2(L->b, L->f32, L->buf[n->ref], &row0, 1, "row");
    LLVMValueRef a4 = LLVMBuildICmp(
        L->b, LLVMIntEQ, LLVMBuildAnd(L->b, LLVMBuildPtrToInt(L->b, dst, L->i64, ""), ci64(L, 3), ""),
        ci64(L, 0), "");
    LLVMBuildCondBr(L->b, LLVMBuildAnd(L->b, L->rowbuf_flag, a4, ""), rab, cb);
  } else {
    LLVMBuildCondBr(L->b, L->nt_ok[n->ref], ntb, cb);
  }
  memcpy(L->mat_save, L->mat_state, (size_t)L->p->nnodes);
  LLVMPositionBuilderAtEnd(L->b, ntb);
  L->nt = 1;
  if (L->pf_far && L->pf_at == id && loops == emit_store_loops) {
    /* a norm's store loop on AMD Zen (not its early +0 fill, which never prefetches: the
     * copy would be a duplicate): a copy for launches whose rows come from memory
     * (XIR__ARGS_FAR), which prefetches the next row into L2, and one for the others, which is
     * the streamed copy as before (not even a test of the flag in its chunks) */
    LLVMBasicBlockRef farb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "stream.far");
    LLVMBasicBlockRef nearb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "stream.near");
    LLVMBuildCondBr(L->b, L->far_flag, farb, nearb);
    LLVMPositionBuilderAtEnd(L->b, farb);
    L->pf_emit = 1;
    loops(L, id);
    L->pf_emit = 0;
    LLVMBuildBr(L->b, done);
    memcpy(L->mat_state, L->mat_save, (size_t)L->p->nnodes);
    LLVMPositionBuilderAtEnd(L->b, nearb);
  }
  loops(L, id);
  L->nt = 0;
  LLVMBuildBr(L->b, done);
  if (row0) {
    int64_t N = dimc(L, L->c->inner_dim);
    memcpy(L->mat_state, L->mat_save, (size_t)L->p->nnodes);
    LLVMPositionBuilderAtEnd(L->b, rab);
    LLVMValueRef rowbuf = entry_alloca(L, LLVMArrayType2(L->f32, (uint64_t)(N + L->W)), "rowbuf");
    LLVMSetAlignment(rowbuf, 64);
    LLVMValueRef keep = L->buf[n->ref];
    /* the row's element c at rowbuf[c] (the offset stays that of the output's row) */
    LLVMValueRef back = LLVMBuildNeg(L->b, row0, "");
    L->buf[n->ref] = LLVMBuildGEP2(L->b, L->f32, rowbuf, &back, 1, "");
    loops(L, id);
    L->buf[n->ref] = keep;
    realign_copy(L, rowbuf, dst, N);
    LLVMBuildBr(L->b, done);
  }
  memcpy(L->mat_state, L->mat_save, (size_t)L->p->nnodes);
  LLVMPositionBuilderAtEnd(L->b, cb);
  loops(L, id);
  LLVMBuildBr(L->b, done);
  LLVMPositionBuilderAtEnd(L->b, done);
}

/* The masked part of a skipped store's row, [end, extent) of the mask axis, written with the
 * value *v (emit_store_loops' fill), through the streaming copy where the store has one. */
static void fill_masked(lw *L, int id, const val *v, LLVMValueRef hi) {
  const xir_node *n = &L->p->nodes[id];
  xir_type tile = {.elem = XIR_F32};
  for (int kd = 0; kd < n->nargs - 1; kd++)
    if (n->args[kd] < 0) tile.axes[tile.rank++] = (int8_t)L->p->params[n->ref].dims[kd];
  L->rng_lo = hi;
  L->rng_hi = ci64(L, axis_chunks(L));
  L->fill_val = v;
  tile_loops(L, &tile, 0, store_body, id, &tile);
  L->fill_val = NULL;
  L->rng_lo = L->rng_hi = NULL;
}

/* Early fill (docs/lowering.md, "Masked-work skipping"): a skipped store's masked part holds one
 * value per unit, computed after the row's reductions (softmax: 0·(1/s)); the stores waited for
 * that chain (a causal row of one live element spent most of its time there). With ℓ ≥ W the unit
 * writes +0 there with constant stores that need no value of the chain (emit_early_fill, just
 * before the store statement), and after the chain writes the real value only when some lane of
 * it is not +0 (a row with a NaN: 0·NaN). Legal unless the unit could read what the early stores
 * wrote (checked as if they came at the unit's start, which covers every later placement):
 * for every input that may alias an output (xir_program_alias_ok), every reduction and store of
 * the body must be skipped (their values at masked positions do not depend on the input) and
 * every load of that input must be a row over the mask axis (no element read alone). */
static int early_fill_ok(lw *L) {
  const xir_program *p = L->p;
  if (L->mask_id < 0 || L->ell < L->W) return 0;
  int any = 0, all = 1;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    int op = p->nodes[i].op;
    if (op != XIR_OP_STORE && op != XIR_OP_REDUCE_SUM && op != XIR_OP_REDUCE_MAX &&
        op != XIR_OP_REDUCE_MIN)
      continue;
    if (!L->skip[i]) all = 0;
    else if (op == XIR_OP_STORE) any = 1;
  }
  if (!any) return 0;
  for (int o = 0; o < p->nparams; o++) {
    if (p->params[o].kind != XIR_PARAM_BUFFER || !p->params[o].is_output) continue;
    for (int in = 0; in < p->nparams; in++) {
      if (in == o || p->params[in].kind != XIR_PARAM_BUFFER || p->params[in].is_output ||
          xir_program_alias_ok(p, o, in, NULL) != XIR_OK)
        continue;
      if (!all) return 0;
      for (int i = p->body_begin; i < p->nnodes; i++) {
        const xir_node *n = &p->nodes[i];
        if (n->op == XIR_OP_LOAD && n->ref == in &&
            !(n->type.rank == 1 && n->type.axes[0] == L->mask.axis_dim))
          return 0;
      }
    }
  }
  return 1;
}

/* The element offset of row element 0 of store id (a row y[.., :] over the mask axis, its last
 * dim: contiguous), uniform over the unit; NULL where the store is not such a row. */
static LLVMValueRef fill_row_offset(lw *L, const xir_node *n) {
  const xir_param *q = &L->p->params[n->ref];
  int nidx = n->nargs - 1, X = L->mask.axis_dim;
  if (nidx < 1 || n->args[nidx - 1] >= 0 || q->dims[nidx - 1] != X) return NULL;
  for (int kd = 0; kd < nidx - 1; kd++)
    if (n->args[kd] < 0) return NULL;
  val saved = L->env[X];
  L->env[X] = vaff(ci64(L, 0), 0);
  val off = access_offset(L, n, nidx);
  L->env[X] = saved;
  return off.aff && off.s == 0 ? off.u : NULL;
}

/* Where `cond` holds: +0 to the lanes `m` of the aligned line at ptr (a masked store). Behind a
 * branch: a masked store, even one with no lane, holds back later loads of the same 4 KiB offset
 * (4K aliasing) until it commits — x and y page-aligned, the empty store past a 1x4096 causal row
 * kept the row's first load waiting for the whole fill (136 instead of 123 ns). */
static void masked_zero_if(lw *L, LLVMValueRef cond, LLVMValueRef ptr, LLVMValueRef m) {
  LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "fill.part");
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "fill.next");
  LLVMBuildCondBr(L->b, cond, yes, next);
  LLVMPositionBuilderAtEnd(L->b, yes);
  LLVMTypeRef tys[2] = {L->vf, L->ptr};
  LLVMValueRef args[4] = {LLVMConstNull(L->vf), ptr, LLVMConstInt(L->i32, 4, 0), m};
  intrinsic(L, "llvm.masked.store", tys, 2, args, 4);
  LLVMBuildBr(L->b, next);
  LLVMPositionBuilderAtEnd(L->b, next);
}

/* +0 over elements [s, e) of buffer `ref` (f32, elements 4-byte aligned as every access assumes)
 * in whole aligned 64-byte lines: a masked store for the line holding s where s is not aligned,
 * full-line stores (non-temporal in the streaming copy), a masked store for the rest if any. A
 * row that starts inside a line (malloc'ed or NumPy arrays lie 16 bytes past a page) otherwise
 * writes every line twice with split stores: softmax_causal 1024x4096 at page + 16 took 530 us
 * instead of 393. Only bytes of [s, e) are written; a buffer whose elements are not 4-byte
 * aligned gets the same stores at unaligned addresses (still correct, as slow as before). */
static void aligned_zero_fill(lw *L, int ref, LLVMValueRef s, LLVMValueRef e) {
  LLVMBuilderRef b = L->b;
  LLVMValueRef base = L->buf[ref], zero = LLVMConstNull(L->vf);
  LLVMValueRef lanes = lane_consts(L, 0, 1);
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "fill.head");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "fill.done");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, s, e, ""), go, done);
  LLVMPositionBuilderAtEnd(b, go);
  /* line0: the element index of the aligned line holding s (may lie before the buffer: its lanes
   * there are masked off) */
  LLVMValueRef addr = LLVMBuildPtrToInt(b, LLVMBuildGEP2(b, L->f32, base, &s, 1, ""), L->i64, "");
  LLVMValueRef mis = LLVMBuildLShr(b, LLVMBuildAnd(b, addr, ci64(L, 63), ""), ci64(L, 2), "");
  LLVMValueRef line0 = LLVMBuildSub(b, s, mis, "");
  /* head, where s is not aligned: lanes [mis, min(W, e - line0)) of line0 */
  LLVMValueRef sa = LLVMBuildICmp(b, LLVMIntEQ, mis, ci64(L, 0), "");
  LLVMValueRef p = LLVMBuildSelect(b, sa, s, LLVMBuildAdd(b, line0, ci64(L, L->W), ""), "");
  LLVMValueRef hm = LLVMBuildAnd(
      b, LLVMBuildICmp(b, LLVMIntSGE, lanes, splat(L, mis), ""),
      LLVMBuildICmp(b, LLVMIntSLT, lanes, splat(L, LLVMBuildSub(b, e, line0, "")), ""), "");
  masked_zero_if(L, LLVMBuildNot(b, sa, ""), LLVMBuildGEP2(b, L->f32, base, &line0, 1, ""), hm);
  /* full lines [p, p + W·n) */
  LLVMValueRef left = LLVMBuildSub(b, e, p, "");
  LLVMValueRef nfull = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, left, ci64(L, 0), ""),
                                       LLVMBuildSDiv(b, left, ci64(L, L->W), ""), ci64(L, 0), "");
  loop lp;
  loop_begin(L, &lp, ci64(L, 0), nfull);
  LLVMSetValueName2(LLVMBasicBlockAsValue(lp.body), "fill", 4); /* as loop_begin's (test_stream) */
  LLVMValueRef o = LLVMBuildAdd(b, p, LLVMBuildMul(b, lp.i, ci64(L, L->W), ""), "");
  LLVMValueRef st = LLVMBuildStore(b, zero, LLVMBuildGEP2(b, L->f32, base, &o, 1, ""));
  /* the streaming copy runs where nt_ok found the rows 64-byte aligned; elsewhere the lines are
   * aligned only if the buffer's elements are (align 4: an output 1 byte past a line, which
   * xir_kernel_pack_args accepts, must not fault) */
  if (L->nt) stream_store(L, st, 64);
  else LLVMSetAlignment(st, 4);
  loop_end(L, &lp);
  /* tail, where elements are left: lanes [0, e - t) of line t */
  LLVMValueRef t = LLVMBuildAdd(b, p, LLVMBuildMul(b, nfull, ci64(L, L->W), ""), "");
  LLVMValueRef tm = LLVMBuildICmp(b, LLVMIntSLT, lanes, splat(L, LLVMBuildSub(b, e, t, "")), "");
  masked_zero_if(L, LLVMBuildICmp(b, LLVMIntSLT, t, e, ""),
                 LLVMBuildGEP2(b, L->f32, base, &t, 1, ""), tm);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
}

/* store id's masked part, from chunk L->early_hi on, with +0 (emit_early_fill): in aligned lines
 * where the store is an f32 row of 64-byte vectors over the mask axis, else by its tile loops */
static void early_fill_loops(lw *L, int id) {
  const xir_node *n = &L->p->nodes[id];
  LLVMValueRef row = L->W * 4 == 64 && L->p->params[n->ref].elem == XIR_F32 && L->ell >= L->W
                         ? fill_row_offset(L, n)
                         : NULL;
  if (row) {
    LLVMValueRef s = LLVMBuildMul(L->b, L->early_hi, ci64(L, L->ell), "");
    aligned_zero_fill(L, n->ref, LLVMBuildAdd(L->b, row, s, ""),
                      LLVMBuildAdd(L->b, row, ci64(L, dimc(L, L->mask.axis_dim)), ""));
    return;
  }
  val z = vsplat(L, cf32(L, 0.0));
  fill_masked(L, id, &z, L->early_hi);
}

/* Before a skipped store (early_fill_ok), after the reductions and rank-0 values it waits for in
 * program order: +0 over its masked part, with the streaming copy where the store has one. The
 * fill depends on nothing the chain computes, so its stores run while the chain's latency
 * resolves; at the unit's start (where it was until session 39) the chain's first loads came
 * after the whole fill, and the chain ran after it: softmax_causal 1x2560, one AOT object per
 * placement in one C process, 150 -> 141 ns (the C peer 133); through the session, 1x4096
 * 206 -> 193 ns, 3x1000 265 -> 236, 64x4096 14.6-14.9 -> 13.8-13.9 us (docs/lowering.md). */
static void emit_early_fill(lw *L, int id) {
  if (!L->early_hi) L->early_hi = mask_chunks(L, L->mask_end);
  emit_streamed(L, id, early_fill_loops);
}

/* A store: its loops, streamed or not (emit_streamed). */
static void emit_store(lw *L, int id) { emit_streamed(L, id, emit_store_loops); }

static void emit_store_loops(lw *L, int id) {
  const xir_node *n = &L->p->nodes[id];
  xir_type tile = {.elem = XIR_F32};
  for (int kd = 0; kd < n->nargs - 1; kd++)
    if (n->args[kd] < 0) tile.axes[tile.rank++] = (int8_t)L->p->params[n->ref].dims[kd];
  if (!L->skip[id]) {
    tile_loops(L, &tile, 0, store_body, id, &tile);
    return;
  }
  /* [0, end) computed; [end, extent) written with the masked value */
  val u = masked_value(L, n->args[n->nargs - 1]);
  LLVMValueRef hi = mask_chunks(L, L->mask_end);
  L->rng_lo = ci64(L, 0);
  L->rng_hi = hi;
  L->rng_live = mask_live_chunks(L);
  tile_loops(L, &tile, 0, store_body, id, &tile);
  L->rng_live = NULL;
  L->rng_lo = L->rng_hi = NULL;
  if (!L->early_fill) {
    fill_masked(L, id, &u, hi);
    return;
  }
  /* +0 was written there before the live part (emit_early_fill): again only if a lane is not +0 */
  LLVMValueRef nz = NULL;
  LLVMTypeRef vi32 = LLVMVectorType(LLVMInt32TypeInContext(L->ctx), L->W);
  for (unsigned q = 0; q < L->k; q++) {
    LLVMValueRef bits = LLVMBuildBitCast(L->b, u.v[q], vi32, "");
    LLVMValueRef c = LLVMBuildICmp(L->b, LLVMIntNE, bits, LLVMConstNull(vi32), "");
    LLVMValueRef r = intrinsic(L, "llvm.vector.reduce.or", &L->vb, 1, &c, 1);
    nz = nz ? LLVMBuildOr(L->b, nz, r, "") : r;
  }
  LLVMBasicBlockRef fb = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "refill");
  LLVMBasicBlockRef db = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "refilled");
  LLVMBuildCondBr(L->b, nz, fb, db);
  LLVMPositionBuilderAtEnd(L->b, fb);
  fill_masked(L, id, &u, hi);
  LLVMBuildBr(L->b, db);
  LLVMPositionBuilderAtEnd(L->b, db);
}

/* The body for one unit (full or masked). */
/* buf[base + e] = v[e / D] for e in [0, D·W): the D vectors of a vector of compact values
 * (one per run of D equal elements), each by a constant shuffle. */
static void spread_store(lw *L, LLVMValueRef v, int64_t D, LLVMValueRef buf, LLVMValueRef base) {
  for (int64_t j = 0; j < D; j++) {
    LLVMValueRef x = v;
    if (D > 1) {
      LLVMValueRef sh[16];
      for (unsigned i = 0; i < L->W; i++) sh[i] = LLVMConstInt(L->i32, (unsigned)((j * L->W + i) / D), 0);
      x = LLVMBuildShuffleVector(L->b, x, LLVMGetPoison(L->vf), LLVMConstVector(sh, L->W), "");
    }
    LLVMValueRef o = LLVMBuildAdd(L->b, base, ci64(L, j * (int64_t)L->W), "");
    LLVMSetAlignment(LLVMBuildStore(L->b, x, LLVMBuildGEP2(L->b, L->f32, buf, &o, 1, "")), 4);
  }
}

/* buf[e] = buf[e − M] for e = from, from + step, … below to: W elements a step when the source
 * run lies below e (M ≥ W; the last step may write up to W − 1 elements past to, into the
 * buffer's spare vector), else one. */
static void copy_period(lw *L, LLVMValueRef buf, int64_t M, int64_t from, int64_t to) {
  if (from >= to) return;
  int vec = M >= L->W;
  LLVMTypeRef t = vec ? L->vf : L->f32;
  int64_t step = vec ? L->W : 1, n = (to - from + step - 1) / step;
  loop cp;
  loop_begin(L, &cp, ci64(L, 0), ci64(L, n));
  LLVMValueRef e = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, cp.i, ci64(L, step), ""), ci64(L, from), "");
  LLVMValueRef src = LLVMBuildSub(L->b, e, ci64(L, M), "");
  LLVMValueRef x = LLVMBuildLoad2(L->b, t, LLVMBuildGEP2(L->b, L->f32, buf, &src, 1, ""), "");
  LLVMSetAlignment(x, 4);
  LLVMSetAlignment(LLVMBuildStore(L->b, x, LLVMBuildGEP2(L->b, L->f32, buf, &e, 1, "")), 4);
  loop_end(L, &cp);
}

/* The fill of load id's period buffer as window loads (xir__window_fill): vector j holds the
 * elements c = j·D·W + D·i below M; 1 and sp[j] for each of the n vectors when every index of the
 * load has a known pattern that never clamps differently across elements (as perm_load's exact
 * case) and every vector's live lanes fit in two windows. */
static int window_fill_plan(lw *L, int id, const xir__pbuf *pb, xir__wsplit *sp, int *n) {
  enum { MAXFILL = 16 };
  const xir_node *nd = &L->p->nodes[id];
  int X = L->c->inner_dim;
  int64_t D = pb->D, M = pb->M, step = D * (int64_t)L->W, nv = (M + step - 1) / step;
  if (nd->op != XIR_OP_LOAD || L->p->params[nd->ref].elem == XIR_I64 || nv > MAXFILL || !L->period ||
      !xir__access_in_bounds(L->p, L->sh, X, id))
    return 0;
  for (int kd = 0; kd + 1 < nd->nargs; kd++)
    if (nd->args[kd] < 0 || L->period[nd->args[kd]] != 1) return 0;
  xir__lpat pt;
  if (!xir__access_pattern(L->p, L->sh, X, id, &pt)) return 0;
  for (int64_t j = 0; j < nv; j++)
    if (!xir__window_fill(&pt, j * step, D, L->W, M, &sp[j])) return 0;
  *n = (int)nv;
  return 1;
}

/* The unit's period buffers (xir__period_buffer): the values at c = 0, D, 2D, … below comp, W
 * at a step with the element index unclamped (the tile depends on it only through c mod M, and
 * comp ≤ the extent), each spread over D lanes (a constant shuffle per vector of the buffer);
 * then buf[e] = buf[e − M] up to len, W elements a step when M ≥ W (the source run lies below e).
 * A load's buffer may be filled by window loads instead (window_fill_plan); the computed buffers
 * of one layout share their loop. */
static void emit_period_bufs(lw *L) {
  if (!L->pm) return;
  int X = L->c->inner_dim;
  unsigned k = L->k, W = L->W;
  val saved = L->env[X];
  int saved_set = L->env_set[X];
  uint8_t *done = xir__calloc((size_t)L->p->nnodes + 1, 1);
  if (!done) {
    L->st = xir__err(L->d, XIR_ERR_NOMEM, "out of memory lowering '%s'", L->p->name);
    return;
  }
  for (int id = L->p->body_begin; id < L->p->nnodes; id++) {
    const xir__pbuf *pb = &L->pm[id];
    if (!pb->len || done[id]) continue;
    int64_t D = pb->D, M = pb->M;
    xir__wsplit fsp[16];
    int nfill = 0, wfill = window_fill_plan(L, id, pb, fsp, &nfill);
    /* the window fill copies from M on, whose last step may pass len by up to W − 1 elements */
    if (!L->pm_buf[id])
      L->pm_buf[id] = entry_alloca(L, LLVMArrayType2(L->f32, (uint64_t)(pb->len + (wfill ? W : 0))), "period");
    LLVMValueRef buf = L->pm_buf[id];
    L->k = 1;
    L->pm_compute = 1;
    if (wfill) {
      /* a table row (rope_cache's cos[p, (c % HD) / 2]): each vector of its values is one or two
       * masked window loads and a shuffle instead of a gather; the elements past M are copied */
      L->env[X] = vaff(ci64(L, 0), 1);
      L->env_set[X] = 1;
      L->gen++;
      LLVMValueRef u0 = lane0_offset(L, &L->p->nodes[id]);
      if (u0) {
        for (int j = 0; j < nfill; j++)
          spread_store(L, split_packet(L, &L->p->nodes[id], &fsp[j], u0), D, buf, ci64(L, j * D * (int64_t)W));
        copy_period(L, buf, M, M, pb->len);
        L->k = k;
        L->pm_compute = 0;
        done[id] = 1;
        continue;
      }
    }
    /* the computed buffers of the same layout (D, M, comp) share one loop: what they have in
     * common is evaluated once per vector (RoPE's angle, and after inlining the range reduction
     * that sin and cos of it share), and each result is the same bits as in a loop of its own */
    enum { MAXGROUP = 8 };
    int grp[MAXGROUP], ng = 0;
    for (int j = id; j < L->p->nnodes && ng < MAXGROUP; j++) {
      const xir__pbuf *pj = &L->pm[j];
      xir__wsplit tmp[16];
      int nt = 0;
      if (!pj->len || done[j] || pj->D != D || pj->M != M || pj->comp != pb->comp) continue;
      if (j != id && window_fill_plan(L, j, pj, tmp, &nt)) continue;
      if (!L->pm_buf[j]) L->pm_buf[j] = entry_alloca(L, LLVMArrayType2(L->f32, (uint64_t)pj->len), "period");
      grp[ng++] = j;
      done[j] = 1;
    }
    loop lp;
    loop_begin(L, &lp, ci64(L, 0), ci64(L, pb->comp / (D * W)));
    LLVMValueRef base = LLVMBuildMul(L->b, lp.i, ci64(L, D * W), "");
    L->env[X] = vaff(base, D);
    L->env_set[X] = 1;
    L->gen++;
    int paired[MAXGROUP] = {0};
    for (int g = 0; g < ng; g++) {
      if (paired[g]) continue;
      const xir_node *gn = &L->p->nodes[grp[g]];
      /* sin and cos of one value: one xir__vm_sincos, the same bits as apart */
      int h = -1, other = gn->op == XIR_OP_SIN ? XIR_OP_COS : gn->op == XIR_OP_COS ? XIR_OP_SIN : -1;
      for (int j = g + 1; j < ng && h < 0 && W > 1 && other >= 0; j++)
        if (L->p->nodes[grp[j]].op == other && L->p->nodes[grp[j]].args[0] == gn->args[0]) h = j;
      LLVMValueRef cv = NULL, sv = h < 0 ? NULL : xir__vm_sincos(L->vm, eval(L, gn->args[0]).v[0], &cv);
      if (sv) {
        int si = gn->op == XIR_OP_SIN ? g : h, ci = si == g ? h : g;
        spread_store(L, sv, D, L->pm_buf[grp[si]], base);
        spread_store(L, cv, D, L->pm_buf[grp[ci]], base);
        paired[h] = 1;
        continue;
      }
      val v = eval_uncached(L, grp[g]);
      spread_store(L, v.v[0], D, L->pm_buf[grp[g]], base);
    }
    loop_end(L, &lp);
    for (int g = 0; g < ng; g++) copy_period(L, L->pm_buf[grp[g]], M, pb->comp, L->pm[grp[g]].len);
    L->k = k;
    L->pm_compute = 0;
  }
  xir__free(done);
  L->env[X] = saved;
  L->env_set[X] = saved_set;
  L->gen++;
}

/* Which rank-0 values are the same in every lane — the constants, parameters and dims, rank-0
 * loads at such indices, and what is computed from these alone; with ℓ ≥ W (one root program a
 * packet) also the root coordinates and the reductions over the inner axis (their butterfly
 * leaves the result in every lane). With ℓ < W a packet holds several root programs, so those
 * two differ between its lanes. Nothing is marked at W = 1. */
static void uniform_values(lw *L) {
  if (!L->uni || L->W == 1) return;
  int one = L->ell >= L->W;
  for (int i = 0; i < L->p->nnodes; i++) {
    const xir_node *n = &L->p->nodes[i];
    int u = n->type.rank == 0;
    switch (n->op) {
      case XIR_OP_CONST: case XIR_OP_PARAM: case XIR_OP_DIM: break;
      case XIR_OP_ROOT: u = u && one; break;
      case XIR_OP_IOTA: u = 0; break;
      case XIR_OP_REDUCE_SUM: case XIR_OP_REDUCE_MAX: case XIR_OP_REDUCE_MIN: {
        const xir_type *in = &L->p->nodes[n->args[0]].type;
        u = u && one && in->rank == 1 && in->axes[0] == L->c->inner_dim;
        break;
      }
      default:
        for (int a = 0; a < n->nargs && u; a++) u = n->args[a] >= 0 && n->args[a] < i && L->uni[n->args[a]];
    }
    L->uni[i] = (uint8_t)u;
  }
}

/* One statement of the body for the current root program (or unit): a store, a reduction (and
 * its siblings), or a rank-0 value. */
static void emit_stmt(lw *L, int i) {
  const xir_node *n = &L->p->nodes[i];
  if (n->op == XIR_OP_STORE) {
    if (L->early_fill && L->skip[i]) emit_early_fill(L, i);
    emit_store(L, i);
  } else if (n->op == XIR_OP_REDUCE_SUM || n->op == XIR_OP_REDUCE_MAX || n->op == XIR_OP_REDUCE_MIN) {
    if (!L->top_ok[i]) emit_reduce(L, i); /* (set: a sibling's loop computed it) */
  } else if (n->type.rank == 0 && !xir__is_inline_leaf(n->op)) {
    L->gen++;
    L->top[i] = eval(L, i);
    L->top_ok[i] = 1;
  }
}

static void emit_unit(lw *L) {
  const xir_program *p = L->p;
  unit_coords(L);
  if (L->mask_id >= 0) L->mask_end = unit_mask_end(L, &L->mask_end_min);
  L->early_hi = NULL; /* (emit_early_fill: set at the unit's first skipped store) */
  memset(L->top_ok, 0, sizeof(int) * (size_t)p->nnodes);
  memset(L->mat_state, 0, (size_t)p->nnodes);
  L->gen++;
  emit_period_bufs(L);
  for (int i = p->body_begin; i < p->nnodes && !L->st; i++) emit_stmt(L, i);
}

/* Row groups: program j's coordinates (emit_unit_group); its rank-0 values are grp_top[j]. */
typedef struct xir__grp_prog {
  LLVMValueRef p0;
  val coord[XIR_MAX_ROOT];
  val active, jlane;
} xir__grp_prog;

/* Makes program j of the row group the current root program: its p0, coordinates and rank-0
 * values, and a new generation (no memoized value of another program is reused). */
static void group_select(lw *L, unsigned j) {
  const xir__grp_prog *g = &L->grp[j];
  L->p0 = g->p0;
  memcpy(L->coord, g->coord, sizeof L->coord);
  L->active = g->active;
  L->jlane = g->jlane;
  L->top = L->grp_top[j];
  L->top_ok = L->grp_top_ok[j];
  L->gen++;
}

/* Row groups, a rank-0 sum over the inner axis (ℓ ≥ W: one packet a chunk of the row): the
 * group's ilv programs (a power of two, at most W) fold their lanes together (group_fold). */
static int group_fold_ok(lw *L, int id, const red *R) {
  const xir_node *n = &L->p->nodes[id];
  const xir_type *in = &L->p->nodes[n->args[0]].type;
  unsigned G = L->ilv;
  return n->op == XIR_OP_REDUCE_SUM && n->type.rank == 0 && !R->range && in->rank == 1 &&
         in->axes[0] == L->c->inner_dim && L->ell >= L->W && L->W >= 2 && L->W <= 16 && G >= 2 &&
         G <= L->W && (G & (G - 1)) == 0 && L->gv;
}

/* Sibling s of the group's reductions gs[0..ilv) folded for all programs at once, with the bits
 * each program's butterfly (red_fold) gives it. After its packets are added (fold_packets), each
 * program's vector is one segment of W lanes; a step takes two vectors of m segments of width w
 * into one of 2m segments of width w/2 — the first vector's segments in its lower half, each
 * segment's lane t < w/2 the add of its lanes t and t + w/2 (two shuffles and one add): that is
 * the butterfly's step at distance w/2 on lane t, the same operands in the same order. After
 * log2(ilv) steps one vector holds program j's segment of W/ilv lanes at lane j·W/ilv, and the
 * butterfly's last steps run inside the segments. For ilv = 8: 7 steps of 2 shuffles and an add,
 * one butterfly step, instead of 8 butterflies of 4 shuffles and 4 adds. Program j's result is
 * lane j·W/ilv broadcast (the butterfly's lane 0: red_fold_pair's choice too), and gv[id] the
 * ilv results, lane j program j's. */
static void group_fold(lw *L, red_group *gs, int s) {
  unsigned G = L->ilv, W = L->W;
  int id = gs[0].ids[s];
  LLVMValueRef v[XIR__GROUP_MAX], acc[MAXK];
  for (unsigned j = 0; j < G; j++) {
    for (unsigned q = 0; q < L->k; q++) acc[q] = LLVMBuildLoad2(L->b, L->vf, gs[j].R[s].acc[q], "");
    fold_packets(L, XIR_OP_REDUCE_SUM, 0, acc);
    v[j] = acc[0];
  }
  unsigned w = W;
  for (unsigned cnt = G; cnt > 1; cnt /= 2, w /= 2) {
    unsigned h = w / 2;
    LLVMValueRef lo[16], hi[16];
    for (unsigned o = 0; o < W; o++) {
      unsigned half = o >= W / 2, oo = o - half * (W / 2);
      unsigned src = half * W + oo / h * w + oo % h;
      lo[o] = LLVMConstInt(L->i32, src, 0);
      hi[o] = LLVMConstInt(L->i32, src + h, 0);
    }
    for (unsigned i = 0; i < cnt / 2; i++)
      v[i] = red_op(L, XIR_OP_REDUCE_SUM,
                    LLVMBuildShuffleVector(L->b, v[2 * i], v[2 * i + 1], LLVMConstVector(lo, W), ""),
                    LLVMBuildShuffleVector(L->b, v[2 * i], v[2 * i + 1], LLVMConstVector(hi, W), ""));
  }
  LLVMValueRef c = butterfly(L, XIR_OP_REDUCE_SUM, 0, v[0], w / 2);
  LLVMValueRef e[16];
  for (unsigned j = 0; j < G; j++) {
    for (unsigned i = 0; i < W; i++) e[i] = LLVMConstInt(L->i32, j * w, 0);
    LLVMValueRef r = LLVMBuildShuffleVector(L->b, c, LLVMGetPoison(L->vf), LLVMConstVector(e, W), "");
    for (unsigned q = 0; q < L->k; q++) acc[q] = r;
    L->grp_top[j][id] = vvec(L, acc);
    L->grp_top_ok[j][id] = 1;
  }
  for (unsigned j = 0; j < G; j++) e[j] = LLVMConstInt(L->i32, j * w, 0);
  memset(&L->gv[id], 0, sizeof L->gv[id]);
  L->gv[id].v[0] = LLVMBuildShuffleVector(L->b, c, LLVMGetPoison(L->vf), LLVMConstVector(e, G), "");
  L->gv_ok[id] = 2;
}

/* A row group's reduction statement id (and its siblings): every program's loops, then the sums
 * that may fold across the group (group_fold_ok) fold together, the others program by program. */
static void emit_reduce_group(lw *L, int id) {
  red_group gs[XIR__GROUP_MAX];
  unsigned G = L->ilv;
  gs[0].n = 0;
  for (unsigned j = 0; j < G && !L->st; j++) {
    group_select(L, j);
    if (!reduce_loops(L, id, &gs[j])) return; /* (a tile result: not in a row group) */
  }
  if (L->st) return;
  unsigned done = 0;
  int same = 1;
  for (unsigned j = 1; j < G; j++)
    same &= gs[j].n == gs[0].n && memcmp(gs[j].ids, gs[0].ids, sizeof gs[0].ids[0] * (size_t)gs[0].n) == 0;
  for (int s = 0; s < gs[0].n && same; s++)
    if (group_fold_ok(L, gs[0].ids[s], &gs[0].R[s])) {
      group_fold(L, gs, s);
      done |= 1u << s;
    }
  for (unsigned j = 0; j < G; j++) {
    group_select(L, j);
    reduce_folds(L, &gs[j], done);
  }
}

/* A rank-0 f32 or bool elementwise statement: what group_eval and group_uniform may take. */
static int group_op(const xir_node *n) {
  if (n->type.rank != 0 || (n->type.elem != XIR_F32 && n->type.elem != XIR_BOOL)) return 0;
  switch (n->op) {
    case XIR_OP_CONST: case XIR_OP_DIM: case XIR_OP_PARAM: case XIR_OP_ROOT: case XIR_OP_IOTA:
    case XIR_OP_LOAD: case XIR_OP_STORE: case XIR_OP_REDUCE_SUM: case XIR_OP_REDUCE_MAX:
    case XIR_OP_REDUCE_MIN:
      return 0;
    default: return 1;
  }
}

/* Row-group statement i's operands as group values: -1 when some operand is not one (a value of
 * a program's own: its coordinates, loads, or what was computed program by program) nor a
 * constant, parameter or dim; 1 when some operand differs between the programs (gv_ok 2); 0
 * when all are one value for every program. */
static int group_args(lw *L, int i) {
  const xir_node *n = &L->p->nodes[i];
  int varying = 0;
  for (int a = 0; a < n->nargs; a++) {
    int x = n->args[a];
    if (x < 0) return -1;
    int op = L->p->nodes[x].op;
    if (op == XIR_OP_CONST || op == XIR_OP_DIM || op == XIR_OP_PARAM) continue;
    if (!L->gv_ok[x]) return -1;
    varying |= L->gv_ok[x] == 2;
  }
  return varying;
}

/* Whether row-group statement i (rank 0, not a reduction) is computed once for the group on ilv
 * lanes (group_eval): an elementwise op on group values at least one of which differs between
 * the programs. */
static int group_eval_ok(lw *L, int i) {
  return L->gv && group_op(&L->p->nodes[i]) && group_args(L, i) == 1;
}

/* Statement i (group_eval_ok) for the whole group: the same operations as each program's (lane
 * by lane, so the same bits) on vectors of ilv lanes — one division or square root for the
 * group instead of one a program — and each program's value its lane, broadcast. */
static void group_eval(lw *L, int i) {
  unsigned W = L->W, k = L->k, G = L->ilv;
  LLVMTypeRef vf = L->vf, vi = L->vi, vb = L->vb;
  val *top = L->top;
  int *top_ok = L->top_ok;
  uint8_t *uni = L->uni;
  L->W = G;
  L->k = 1;
  L->vf = LLVMVectorType(L->f32, G);
  L->vi = LLVMVectorType(L->i64, G);
  L->vb = LLVMVectorType(L->i1, G);
  L->top = L->gv;
  L->top_ok = L->gv_ok;
  L->uni = NULL; /* (its lanes differ: no lane-0 shortcut) */
  L->gen++;
  val r = eval(L, i);
  L->gen++;
  L->W = W;
  L->k = k;
  L->vf = vf;
  L->vi = vi;
  L->vb = vb;
  L->top = top;
  L->top_ok = top_ok;
  L->uni = uni;
  if (L->st) return;
  memset(&L->gv[i], 0, sizeof L->gv[i]);
  L->gv[i].v[0] = r.v[0];
  L->gv_ok[i] = 2;
  LLVMValueRef e[16], acc[MAXK];
  for (unsigned j = 0; j < G; j++) {
    for (unsigned l = 0; l < W; l++) e[l] = LLVMConstInt(L->i32, j, 0);
    LLVMValueRef b = LLVMBuildShuffleVector(L->b, r.v[0], LLVMGetPoison(LLVMTypeOf(r.v[0])),
                                            LLVMConstVector(e, W), "");
    for (unsigned q = 0; q < L->k; q++) acc[q] = b;
    L->grp_top[j][i] = vvec(L, acc);
    L->grp_top_ok[j][i] = 1;
  }
}

/* A row-group statement computed program by program (rank 0): where it is one value for all of
 * them — an elementwise f32 or bool op on constants, parameters, dims and such values, nothing
 * of a program's own (its coordinates, loads, reductions) — it is also a group value (gv_ok 1),
 * program 0's lane 0 in every lane. */
static void group_uniform(lw *L, int i) {
  if (!L->gv || !group_op(&L->p->nodes[i]) || !L->grp_top_ok[0][i] || group_args(L, i) != 0)
    return;
  const val *x = &L->grp_top[0][i];
  if (x->aff || !x->v[0]) return;
  LLVMValueRef e[16];
  for (unsigned j = 0; j < L->ilv; j++) e[j] = LLVMConstInt(L->i32, 0, 0);
  memset(&L->gv[i], 0, sizeof L->gv[i]);
  L->gv[i].v[0] = LLVMBuildShuffleVector(L->b, x->v[0], LLVMGetPoison(LLVMTypeOf(x->v[0])),
                                         LLVMConstVector(e, L->ilv), "");
  L->gv_ok[i] = 1;
}

/* A store's loops for every program of the group, in turn: inside emit_streamed, the streaming
 * test is made once for the group's stores — a test per program would leave each program's last
 * values to be computed (sunk by the code generator) inside its own store's branches, one
 * program after the other. */
static void group_store_loops(lw *L, int id) {
  for (unsigned j = 0; j < L->ilv && !L->st; j++) {
    group_select(L, j);
    emit_store_loops(L, id);
  }
}

/* A row group: ilv root programs from p0 on, all of them full. Each program's coordinates and
 * rank-0 values are its own (grp, grp_top, grp_top_ok); the body's statements are emitted in
 * order, each for every program before the next statement, so that program j + 1's row loads
 * and first reduction are next to program j's in the instruction stream and run while program
 * j's chain (reduction, fold, the rank-0 arithmetic, the next reduction) waits on its
 * latencies: the out-of-order window holds one row's dependent work, not several rows'
 * (docs/lowering.md, "Row groups"). Every program computes exactly what it computes alone: the
 * same operations on the same values, only their places in the stream differ. */
static void emit_unit_group(lw *L) {
  const xir_program *p = L->p;
  val *top0 = L->top;
  int *top_ok0 = L->top_ok;
  LLVMValueRef base = L->p0;
  for (unsigned j = 0; j < L->ilv; j++) {
    L->p0 = j ? LLVMBuildAdd(L->b, base, ci64(L, (int64_t)j), "") : base;
    unit_coords(L);
    xir__grp_prog *g = &L->grp[j];
    g->p0 = L->p0;
    memcpy(g->coord, L->coord, sizeof g->coord);
    g->active = L->active;
    g->jlane = L->jlane;
    memset(L->grp_top_ok[j], 0, sizeof(int) * (size_t)p->nnodes);
  }
  memset(L->mat_state, 0, (size_t)p->nnodes);
  /* no next-row prefetch: a group's rows are at most 6 packets (6 lines of f32), which the
   * hardware's stream prefetch covers, and the prefetch's address arithmetic a program (the
   * selects of its distance, ~15 integer operations and their registers) cost rmsnorm's short
   * rows more than the group saved (rmsnorm 2000x64, 1 worker: 11.3 -> 12.5 us with it) */
  int pf_at = L->pf_at;
  L->pf_at = -1;
  if (L->gv) memset(L->gv_ok, 0, sizeof(int) * (size_t)p->nnodes);
  for (int i = p->body_begin; i < p->nnodes && !L->st; i++) {
    const xir_node *n = &p->nodes[i];
    if (n->op == XIR_OP_STORE) {
      emit_streamed(L, i, group_store_loops);
      continue;
    }
    int red = n->op == XIR_OP_REDUCE_SUM || n->op == XIR_OP_REDUCE_MAX || n->op == XIR_OP_REDUCE_MIN;
    if (red && n->type.rank == 0) {
      /* (set: a sibling's loops computed it — in every program, unless a sibling test ran out
       * of memory in some: those compute it alone) */
      unsigned have = 0;
      for (unsigned j = 0; j < L->ilv; j++) have += L->grp_top_ok[j][i] != 0;
      if (have == 0) emit_reduce_group(L, i);
      else
        for (unsigned j = 0; j < L->ilv && have < L->ilv && !L->st; j++) {
          group_select(L, j);
          emit_stmt(L, i);
        }
      continue;
    }
    if (group_eval_ok(L, i)) {
      group_eval(L, i);
      continue;
    }
    for (unsigned j = 0; j < L->ilv && !L->st; j++) {
      group_select(L, j);
      emit_stmt(L, i);
    }
    group_uniform(L, i);
  }
  L->pf_at = pf_at;
  L->p0 = base;
  L->top = top0;
  L->top_ok = top_ok0;
}

/* Where a walk of a consumer's pointwise expression stops: a rank-0 value (computed once per
 * unit), an inline leaf, or another reduction (its result is a value, not a tile). */
static int walk_stops(const xir_node *m) {
  return m->type.rank == 0 || xir__is_inline_leaf(m->op) || m->op == XIR_OP_REDUCE_SUM ||
         m->op == XIR_OP_REDUCE_MAX || m->op == XIR_OP_REDUCE_MIN;
}

/* The axis of consumer i's loop nest when it is 1-D (what tile_loops sets as nest_dim), -1 when
 * it is not, -2 when i is not a consumer. */
static int consumer_dim(const xir_program *p, int i) {
  const xir_node *n = &p->nodes[i];
  if (n->op == XIR_OP_REDUCE_SUM || n->op == XIR_OP_REDUCE_MAX || n->op == XIR_OP_REDUCE_MIN) {
    const xir_type *in = &p->nodes[n->args[0]].type;
    return in->rank == 1 ? in->axes[0] : -1;
  }
  if (n->op != XIR_OP_STORE) return -2;
  int rank = 0, dim = -1;
  for (int kd = 0; kd < n->nargs - 1; kd++)
    if (n->args[kd] < 0) rank++, dim = p->params[n->ref].dims[kd];
  return rank == 1 ? dim : -1;
}

/* Visits, for each consumer (store, reduction) in body order, every tile node of its pointwise
 * expression once (not hoisted tiles, nor what walk_stops stops at): visit(L, consumer, id, ud),
 * whose operands are walked next when it returns 1. Iterative (no recursion on program depth);
 * stack holds nnodes × (XIR_MAX_RANK + 2) + 1 ints (a node is pushed once per user at most),
 * seen nnodes + 1 marks (cleared here). */
typedef int (*tile_visit)(lw *L, int consumer, int id, void *ud);
static void walk_consumers(lw *L, int *stack, unsigned *seen, tile_visit visit, void *ud) {
  const xir_program *p = L->p;
  memset(seen, 0, sizeof(unsigned) * ((size_t)p->nnodes + 1));
  unsigned mark = 0;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    if (consumer_dim(p, i) == -2) continue;
    const xir_node *n = &p->nodes[i];
    mark++;
    int sp = 0;
    stack[sp++] = n->op == XIR_OP_STORE ? n->args[n->nargs - 1] : n->args[0];
    while (sp) {
      int id = stack[--sp];
      if (id < 0 || seen[id] == mark) continue;
      const xir_node *m = &p->nodes[id];
      if (walk_stops(m)) continue;
      seen[id] = mark;
      if (L->hoist[id] || !visit(L, i, id, ud)) continue; /* a hoisted tile: loaded from its buffer */
      for (int a = 0; a < m->nargs; a++)
        if (m->args[a] >= 0) stack[sp++] = m->args[a];
    }
  }
}

/* The scratch of walk_consumers for program p (NULL on OOM). */
static int *walk_stack(const xir_program *p) {
  return xir__malloc(sizeof(int) * ((size_t)p->nnodes * (XIR_MAX_RANK + 2) + 1));
}

static int count_visit(lw *L, int consumer, int id, void *ud) {
  (void)consumer, (void)ud;
  const xir_node *m = &L->p->nodes[id];
  /* a bf16/f16 load is expensive too: its conversion is a shuffle and a shift (bf16) or
   * vcvtph2ps, where an f32 reload from L1 folds into the consumer's instruction */
  if (xir__is_vector_math(m->op) || (m->op == XIR_OP_LOAD && is_half(L->p->params[m->ref].elem)))
    L->mat_uses[id]++;
  return 1;
}

/* For each expensive tile node: the number of consumers (reductions, stores) whose pointwise
 * expression contains it. Returns -1 on OOM. */
static int count_mat_uses(lw *L) {
  int *stack = walk_stack(L->p);
  unsigned *seen = xir__malloc(sizeof(unsigned) * ((size_t)L->p->nnodes + 1));
  if (stack && seen) walk_consumers(L, stack, seen, count_visit, NULL);
  int rc = stack && seen ? 0 : -1;
  xir__free(stack);
  xir__free(seen);
  return rc;
}

/* Whether node id is kept in a materialized slot wherever a 1-D loop over its axis reaches it. */
static int is_mat(lw *L, int id) {
  return L->mat_uses[id] >= 2 && L->p->nodes[id].type.rank == 1 && mat_fits(L, id, NULL);
}

/* mat_sim's results, per node. */
typedef struct mat_flow {
  int *first, *last, *evals;
  uint8_t *bad;
} mat_flow;

static int sim_visit(lw *L, int i, int id, void *ud) {
  mat_flow *f = ud;
  const xir_node *m = &L->p->nodes[id];
  f->last[id] = i;
  if (is_mat(L, id)) {
    if (consumer_dim(L->p, i) != m->type.axes[0]) f->bad[id] = 1;
    else if (f->first[id] >= 0) return 0; /* loaded from its slot */
    else f->first[id] = i;
  }
  f->evals[id]++;
  return 1;
}

/* The consumer loops in body order, as the unit will emit them: per node, the loop that first
 * stores it (first[], materialized nodes; -1: none), the last loop that reaches it (last[]: a
 * load from its slot or its computation), how many loops compute it (evals[]), and bad[] when a
 * loop that is not 1-D over its axis reaches a materialized node (computed there, not loaded). */
static void mat_sim(lw *L, int *stack, unsigned *seen, mat_flow *f) {
  for (int i = 0; i < L->p->nnodes; i++) f->first[i] = f->last[i] = -1, f->evals[i] = 0, f->bad[i] = 0;
  walk_consumers(L, stack, seen, sim_visit, f);
}

/* The number of distinct loads of tiles (not hoisted) in node id's pointwise expression. */
static int tile_loads_in(lw *L, int id, int *stack, unsigned *seen, unsigned mark) {
  const xir_program *p = L->p;
  int sp = 0, count = 0;
  stack[sp++] = id;
  while (sp) {
    int a = stack[--sp];
    if (a < 0 || seen[a] == mark) continue;
    seen[a] = mark;
    const xir_node *m = &p->nodes[a];
    if (walk_stops(m) || L->hoist[a]) continue;
    if (m->op == XIR_OP_LOAD) {
      count++;
      continue;
    }
    for (int k = 0; k < m->nargs; k++)
      if (m->args[k] >= 0) stack[sp++] = m->args[k];
  }
  return count;
}

/* Row values computed from two or more loads (softmax_mask's z = x·scale + mask, read by the max
 * and by the sum of exp) are materialized too when two or more consumer loops compute them: the
 * later loop reads one slot instead of both rows. And a materialized node whose last reader is
 * the loop that first stores another one of the same axis gives that one its slot (mat_share:
 * softmax_mask's e = exp(z − m) is written over z, chunk by chunk, after z is read): the row's
 * scratch stays one row, and the input rows are touched once. Both objects of softmax_mask in
 * one C harness (same candidate, 2 threads, min of 15, 2026-12-05): 1024×4096 1090 → 1037 µs,
 * 4096×1024 955 → 920, 129×768 18.4 → 15.6, bf16 1024×4096 743 → 620; in a C model of the kernel
 * a separate slot for e cost 7 % against the shared one. Slots over 16 KiB are left out (C =
 * 16384: 2.6 % slower, the slot itself no longer in L1). Returns -1 on OOM. */
enum { XIR__CHEAP_MAT_BYTES = 16384 };
static int cheap_mats(lw *L) {
  const xir_program *p = L->p;
  size_t nn = (size_t)p->nnodes;
  int *stack = walk_stack(p);
  unsigned *seen = xir__malloc(sizeof(unsigned) * (nn + 1));
  mat_flow f = {xir__malloc(sizeof(int) * (nn + 1)), xir__malloc(sizeof(int) * (nn + 1)),
                xir__malloc(sizeof(int) * (nn + 1)), xir__malloc(nn + 1)};
  int rc = -1;
  if (!stack || !seen || !f.first || !f.last || !f.evals || !f.bad) goto out;
  for (int id = p->nnodes - 1; id >= p->body_begin; id--) {
    const xir_node *n = &p->nodes[id];
    if (n->type.rank != 1 || n->op == XIR_OP_LOAD || xir__is_inline_leaf(n->op) || L->hoist[id] ||
        L->mat_uses[id] >= 2 || n->type.elem != XIR_F32)
      continue;
    mat_sim(L, stack, seen, &f);
    if (f.evals[id] < 2 || f.bad[id]) continue;
    memset(seen, 0, sizeof(unsigned) * (nn + 1));
    if (tile_loads_in(L, id, stack, seen, 1) < 2) continue;
    int64_t vectors;
    L->mat_uses[id] = f.evals[id];
    if (!mat_fits(L, id, &vectors) || vectors * 4 * (int64_t)L->W > XIR__CHEAP_MAT_BYTES)
      L->mat_uses[id] = 0;
  }
  mat_sim(L, stack, seen, &f);
  for (int e = p->body_begin; e < p->nnodes; e++) {
    if (!is_mat(L, e) || f.bad[e] || f.first[e] < 0) continue;
    for (int z = p->body_begin; z < p->nnodes; z++) {
      if (z == e || !is_mat(L, z) || f.bad[z] || f.first[z] < 0 || f.first[z] >= f.first[e] ||
          f.last[z] != f.first[e] || p->nodes[z].type.axes[0] != p->nodes[e].type.axes[0])
        continue;
      L->mat_share[e] = z;
      f.last[z] = -1; /* its slot is taken: no other value gets it */
      break;
    }
  }
  rc = 0;
out:
  xir__free(stack);
  xir__free(seen);
  xir__free(f.first);
  xir__free(f.last);
  xir__free(f.evals);
  xir__free(f.bad);
  return rc;
}

/* One step of a hoisted tile's fill: its values at c = base + D·lane (clamped to [0, hi] when
 * hi >= 0, else affine: a contiguous load where the tile is one), spread into buf from base. */
static void hoist_step(lw *L, int id, int X, int64_t D, LLVMValueRef buf, LLVMValueRef base,
                       int64_t hi) {
  val c = vaff(base, D);
  if (hi >= 0) {
    c = clamp(L, &c, hi);
    LLVMValueRef cv[MAXK];
    ivecs(L, &c, cv);
    c = vvec(L, cv);
  }
  L->env[X] = c;
  L->env_set[X] = 1;
  L->gen++;
  val v = eval_uncached(L, id);
  spread_store(L, v.v[0], D, buf, base);
}

/* At the entry: every hoisted tile, W elements at a time (c = t·W + lane, clamped into the
 * extent), into a buffer padded to a multiple of W. */
static void emit_hoisted(lw *L) {
  unsigned k = L->k;
  L->precompute = 1;
  L->k = 1;
  L->full = 1;
  int64_t *per = NULL;
  for (int id = L->p->body_begin; id < L->p->nnodes; id++) {
    if (!L->hoist[id]) continue;
    int X = L->p->nodes[id].type.axes[0];
    int64_t N = dimc(L, X), steps = (N + L->W - 1) / L->W;
    /* a tile periodic along its axis is computed over one period and copied over the rest */
    if (!per) per = xir__calloc(2 * ((size_t)L->p->nnodes + 1), sizeof(int64_t));
    int64_t *str = per ? per + L->p->nnodes + 1 : NULL;
    if (!per) {
      L->st = xir__err(L->d, XIR_ERR_NOMEM, "out of memory lowering '%s'", L->p->name);
      break;
    }
    xir__inner_period(L->p, L->sh, X, per);
    int64_t M = per[id] > 1 && per[id] < N ? per[id] : N;
    /* D consecutive elements sharing each value (xir__inner_stretch: RoPE's θ^(−2i/HD), D = 2):
     * the values at c = 0, D, 2D, … each spread over D lanes */
    xir__inner_stretch(L->p, L->sh, X, str);
    int64_t D = str[id];
    if (D < 1 || M % D != 0 || L->W % D != 0) D = 1;
    /* then copied as far as the chunks and the period buffers read it (xir__hoist_extent): past
     * N where a period buffer of a whole row computes past it; the copy's last step writes up to
     * W − 1 elements beyond */
    int64_t need = xir__hoist_extent(L->p, id, N, M, X == L->c->inner_dim, L->ell, L->W, L->pm,
                                     L->pm_direct);
    int64_t nvec = steps + D > (need + L->W - 1) / L->W + 1 ? steps + D : (need + L->W - 1) / L->W + 1;
    LLVMValueRef buf = entry_alloca(L, LLVMArrayType2(L->f32, (uint64_t)(nvec * L->W)), "hoist");
    /* a few steps are emitted unrolled, at constant element indices: what depends on the index
     * only folds to constants (RoPE's exponent −2i/HD, and pow's special cases of it) */
    int64_t nstep = (M + D * L->W - 1) / (D * L->W);
    /* the steps whose lanes all lie inside [0, N) keep c affine (a bf16 weight: one contiguous
     * load, not a 16-bit gather, which has no instruction and became 16 scalar inserts); only
     * the steps past them are clamped */
    int64_t last = D * ((int64_t)L->W - 1); /* the last lane's offset from the step's base */
    int64_t nfull = N > last ? (N - 1 - last) / (D * L->W) + 1 : 0;
    if (nfull > nstep) nfull = nstep;
    /* the whole steps in a loop when there are more than 8 steps; the rest one by one (every
     * step when there are few, else the one or two that reach past the extent) */
    int64_t nloop = nstep <= 8 ? 0 : nfull;
    if (nloop > 0) {
      loop lp;
      loop_begin(L, &lp, ci64(L, 0), ci64(L, nloop));
      hoist_step(L, id, X, D, buf, LLVMBuildMul(L->b, lp.i, ci64(L, D * L->W), ""), -1);
      loop_end(L, &lp);
    }
    for (int64_t t = nloop; t < nstep; t++)
      hoist_step(L, id, X, D, buf, ci64(L, t * D * (int64_t)L->W), t >= nfull ? N - 1 : -1);
    /* With every chunk full (ℓ divides N) and ℓ a multiple of M, eval reads the buffer at the
     * constant offsets (q·W mod M) + i only (the periodic path): elements [0, max(M, W)) */
    copy_period(L, buf, M, M, need);
    L->hoist_buf[id] = buf;
  }
  xir__free(per);
  L->gen++;
  L->k = k;
  L->precompute = 0;
}

void xir__arg_layout_make(const xir_program *p, uint32_t fixed_dims, xir__arg_layout *l) {
  memset(l, 0, sizeof *l);
  int n = p->nparams;
  for (int i = 0; i < p->ndims; i++) l->dim_slot[i] = fixed_dims >> i & 1 ? -1 : n++;
  for (int i = 0; i < p->nparams; i++) {
    l->stride_slot[i] = -1;
    if (p->params[i].kind == XIR_PARAM_BUFFER && p->params[i].rank >= 2) {
      l->stride_slot[i] = n;
      n += p->params[i].rank - 1;
    }
  }
  l->flags_slot = n++;
  l->nslots = n;
}

/* Loads the launch-time dims, the root program count, the buffers' strides and the flags at the
 * entry. */
static void load_dims(lw *L, LLVMValueRef args) {
  const xir_program *p = L->p;
  xir__arg_layout lay;
  xir__arg_layout_make(p, L->fixed, &lay);
  for (int i = 0; i < p->ndims; i++) {
    if (lay.dim_slot[i] < 0) {
      L->dimval[i] = ci64(L, L->sh->dims[i]);
      continue;
    }
    LLVMValueRef idx = ci64(L, lay.dim_slot[i]);
    L->dimval[i] = LLVMBuildLoad2(L->b, L->i64, LLVMBuildGEP2(L->b, L->i64, args, &idx, 1, ""),
                                  p->dims[i]);
  }
  L->Pv = ci64(L, 1);
  for (int a = 0; a < p->nroot; a++) L->Pv = LLVMBuildMul(L->b, L->Pv, dimv(L, p->root[a].dim), "");
  for (int i = 0; i < p->nparams; i++) {
    const xir_param *q = &p->params[i];
    if (q->kind != XIR_PARAM_BUFFER) continue;
    LLVMValueRef st = ci64(L, 1);
    for (int k = q->rank - 1; k >= 0; k--) {
      L->cstride[i][k] = st;
      L->bstride[i][k] = st;
      if (k < q->rank - 1) {
        LLVMValueRef idx = ci64(L, lay.stride_slot[i] + k);
        L->bstride[i][k] = LLVMBuildLoad2(L->b, L->i64,
                                          LLVMBuildGEP2(L->b, L->i64, args, &idx, 1, ""), "");
      }
      st = LLVMBuildMul(L->b, st, dimv(L, q->dims[k]), "");
    }
    LLVMValueRef dv[XIR_MAX_RANK];
    for (int k = 0; k < q->rank; k++) dv[k] = dimv(L, q->dims[k]);
    L->cend[i] = st;
    L->bend[i] = xir__ir_buffer_end(L->b, L->i64, q->rank, dv, L->bstride[i]);
  }
  LLVMValueRef idx = ci64(L, lay.flags_slot);
  LLVMValueRef fl = LLVMBuildLoad2(L->b, L->i64, LLVMBuildGEP2(L->b, L->i64, args, &idx, 1, ""), "");
  L->contig_flag = LLVMBuildICmp(L->b, LLVMIntNE,
                                 LLVMBuildAnd(L->b, fl, ci64(L, XIR__ARGS_CONTIGUOUS), ""),
                                 ci64(L, 0), "contiguous");
  L->home_stride = LLVMBuildLShr(L->b, fl, ci64(L, XIR__ARGS_HOME_SHIFT), "homestride");
  L->stream_flag = LLVMBuildICmp(L->b, LLVMIntNE, LLVMBuildAnd(L->b, fl, ci64(L, XIR__ARGS_STREAM), ""),
                                 ci64(L, 0), "streamflag");
  L->far_flag = LLVMBuildICmp(L->b, LLVMIntNE, LLVMBuildAnd(L->b, fl, ci64(L, XIR__ARGS_FAR), ""),
                              ci64(L, 0), "farflag");
  L->rowbuf_flag = LLVMBuildICmp(
      L->b, LLVMIntEQ, LLVMBuildAnd(L->b, fl, ci64(L, XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF), ""),
      ci64(L, XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF), "rowbufflag");
}

/* Streaming stores (stream.c, docs/lowering.md): with ℓ ≥ W, an output is written with
 * non-temporal stores when the launch asks for it (XIR__ARGS_STREAM) and its base and strides
 * keep every full vector aligned to its size; nt_ok[i] is that test, once per call. With ℓ = 1
 * nt_ok tests the base only, and each full packet whose element offset is a multiple of W
 * streams (store_body). */
static void stream_tests(lw *L) {
  const xir_program *p = L->p;
  if (L->ell < L->W && L->ell != 1) return;
  int any = 0;
  for (int i = 0; i < p->nparams; i++) {
    const xir_param *q = &p->params[i];
    if (q->kind != XIR_PARAM_BUFFER || !q->is_output || q->rank < 1) continue;
    int64_t es = (int64_t)xir_elem_size((xir_elem)q->elem), V = (int64_t)L->W * es;
    if (V < 16 || q->elem == XIR_I64) continue;
    /* ℓ = 1 streams whole 64-byte lines only: a packet of 32 bytes (bf16/f16 at W = 16, f32 at
     * W = 8) leaves half a line to the next packet, which with B = W and small grains another
     * worker writes — bf16 swiglu 512×4096, B = 16, G = 1, forced streaming: 21 ms against 0.35
     * for B = 128 — and even B = 128 lost 13% with them (docs/lowering.md) */
    if (L->ell == 1 && L->pair_ok && q->elem == XIR_BF16) { /* W = 16: 64-byte pairs */
      LLVMValueRef b64 = LLVMBuildAnd(L->b, LLVMBuildPtrToInt(L->b, L->buf[i], L->i64, ""), ci64(L, 63), "");
      L->nt_pair[i] = LLVMBuildAnd(L->b, L->stream_flag,
                                   LLVMBuildICmp(L->b, LLVMIntEQ, b64, ci64(L, 0), ""), "stream2");
      any = 1;
    }
    if (L->ell == 1 && V < 64) continue;
    LLVMValueRef bad = LLVMBuildAnd(L->b, LLVMBuildPtrToInt(L->b, L->buf[i], L->i64, ""), ci64(L, V - 1), "");
    /* (ℓ = 1 tests each packet's offset instead: store_body) */
    for (int kd = 0; L->ell != 1 && kd + 1 < q->rank; kd++) {
      LLVMValueRef sb = LLVMBuildMul(L->b, L->bstride[i][kd], ci64(L, es), "");
      bad = LLVMBuildOr(L->b, bad, LLVMBuildAnd(L->b, sb, ci64(L, V - 1), ""), "");
    }
    L->nt_ok[i] = LLVMBuildAnd(L->b, L->stream_flag, LLVMBuildICmp(L->b, LLVMIntEQ, bad, ci64(L, 0), ""),
                               "stream");
    any = 1;
  }
  if (any && L->ell >= L->W && !(L->mat_save = xir__calloc((size_t)p->nnodes + 1, 1)))
    L->st = xir__err(L->d, XIR_ERR_NOMEM, "out of memory lowering '%s'", p->name);
}

/* ℓ = 1 pair units: in a block whose root programs all exist (the whole-block path), two packets
 * a unit (k = 2, 2W root programs), so that a bf16 output's two packets are converted by one
 * vcvtne2ps2bf16 with one subnormal test and stored as one 64-byte vector (streamable), and the
 * unit loop's own instructions are paid once per 2W elements. Only for bodies of rank-0 values
 * (no tile loops: every value is one vector a packet, which k handles throughout), without
 * masked-work skipping, with a bf16 output, at W = 16 on a target with the pair conversion, and
 * an even number of units a block. */
static int pair_units_ok(lw *L, unsigned units, int use_lin) {
  const xir_program *p = L->p;
  /* several root axes off the lin path: a pair must not wrap the innermost extent */
  int ed = p->nroot > 1 ? p->root[L->c->perm[p->nroot - 1]].dim : -1;
  if (ed >= 0 && !use_lin && !(is_fixed(L, ed) && dimc(L, ed) % (2 * (int64_t)L->W) == 0))
    return 0;
  if (L->ell != 1 || L->W != 16 || units < 2 || units % 2 || !xir__cvt_bf16_pairs(&L->cvt, L->W) ||
      L->mask_id >= 0 || L->early_fill)
    return 0;
  for (int i = p->body_begin; i < p->nnodes; i++)
    if (p->nodes[i].type.rank != 0) return 0;
  for (int i = 0; i < p->nparams; i++)
    if (p->params[i].kind == XIR_PARAM_BUFFER && p->params[i].is_output && p->params[i].elem == XIR_BF16)
      return 1;
  return 0;
}

/* Pair units whose values may sit in any lane order: every load and store is either of a bf16
 * buffer at the root program's flattened index (the buffer's dims are the root axes, outermost
 * first, indexed by them in that order: one contiguous run of 2W elements a unit) or at indices
 * that no root axis enters (the same element in every lane), and no root index enters any other
 * value. Then the bf16 loads may give the unit's even elements to packet 0 and its odd ones to
 * packet 1 (two integer operations per 2W elements, load_elems' evenodd path, instead of a
 * widening shuffle and a shift per W) and the store interleaves them back (one shuffle of the
 * pair's bf16 bits): no lane sees which element it holds. */
static int pair_evenodd_ok(const lw *L) {
  const xir_program *p = L->p;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *n = &p->nodes[i];
    if (n->op == XIR_OP_IOTA) return 0;
    int nidx = n->op == XIR_OP_LOAD ? n->nargs : n->op == XIR_OP_STORE ? n->nargs - 1 : -1;
    for (int a = 0; a < n->nargs; a++) /* a root index only as an index of a load or store */
      if (n->args[a] >= 0 && p->nodes[n->args[a]].op == XIR_OP_ROOT && a >= (nidx < 0 ? 0 : nidx))
        return 0;
    if (nidx < 0) continue;
    const xir_param *q = &p->params[n->ref];
    int roots = 0;
    for (int a = 0; a < nidx; a++) roots += n->args[a] >= 0 && p->nodes[n->args[a]].op == XIR_OP_ROOT;
    if (!roots) {
      int uniform = 1; /* no root index, no slice: every index is rank 0 and root-free */
      for (int a = 0; a < nidx; a++) uniform &= n->args[a] >= 0 && p->nodes[n->args[a]].type.rank == 0;
      if (uniform && n->op == XIR_OP_LOAD) continue;
      return 0;
    }
    if (q->elem != XIR_BF16 || !root_ordered(L, n, nidx)) return 0;
  }
  return 1;
}

/* Row groups (emit_unit_group): how many root programs a group takes — 1 (none) unless ℓ ≥ W,
 * the inner axis has a compile-time length of at most 6 packets and the body reduces over it,
 * and none of what is kept per unit rather than per program is used: masked-work skipping,
 * early fills, period buffers, materialized tiles. Where reductions depend on reductions
 * (layernorm: the mean, then corr and ms; a long chain a row next to its work): 8 for rows of
 * 1-2 packets, 4 up to 6 packets — with vector math on the row (softmax's exp: its own work,
 * and registers) 4 up to 3 packets only. One reduction (rmsnorm; longer rows have the work to
 * hide it): 4 for rows of 1-2 packets, 2 for 3. Measured (docs/lowering.md, "Row groups"), one
 * worker, rows in L1/L2: layernorm 2000 rows of 40 / 64 / 80: 27 / 28 / 31 us alone, 20-23 / 22
 * / 24-26 in groups of 4; rmsnorm 2000x40 13 -> 10 in groups of 2, 2000x64 and x80 no gain
 * (groups of 4 up to 1.2x slower); two workers, l = 16: layernorm 3000x32 15.4 / 13.8-14.0 /
 * 12.5-13.0 / 11.3-12.0 us alone / in groups of 2 / 4 / 8, 4096x24 24.4 / 20.8 / 18.3 / 17.0-17.8;
 * rmsnorm 4096x24 11.5 / 9.7-10.2 / 9.2-9.4 / 9.9-10.1. */
static unsigned group_size(lw *L) {
  const xir_program *p = L->p;
  int X = L->c->inner_dim;
  unsigned m = xir__row_group_size(p, L->sh, X, L->ell, L->W, X >= 0 && is_fixed(L, X),
                                   L->mask_id >= 0, L->pm != NULL);
  if (m <= 1 || L->early_fill) return 1;
  for (int i = p->body_begin; i < p->nnodes; i++)
    if (is_mat(L, i)) return 1;
  /* XIR_ROW_GROUP=N (1: none) overrides the choice: for measuring it (docs/lowering.md) */
  const char *e = getenv("XIR_ROW_GROUP");
  if (e && *e) m = (unsigned)atoi(e);
  return m < 1 ? 1 : m > XIR__GROUP_MAX ? XIR__GROUP_MAX : m;
}

const char *xir__lower_env_key(void) {
  static _Thread_local char buf[48];
  const char *e = getenv("XIR_ROW_GROUP");
  if (!e || !*e) return "";
  snprintf(buf, sizeof buf, "row-group=%d", atoi(e));
  return buf;
}

/* Opens the loop over a block's units and sets the unit's first root program p0 (and its block
 * and unit parts). */
static void unit_loop_begin(lw *L, loop *un, LLVMValueRef blk, unsigned units, uint64_t rp_per_block,
                            unsigned rp_per_unit) {
  loop_begin(L, un, ci64(L, 0), ci64(L, units));
  L->p0_blk = LLVMBuildMul(L->b, blk, ci64(L, (int64_t)rp_per_block), "");
  L->p0_unit = LLVMBuildMul(L->b, un->i, ci64(L, rp_per_unit), "");
  L->p0 = LLVMBuildAdd(L->b, L->p0_blk, L->p0_unit, "p0");
}

/* Emits one unit in a mode: full (all root programs exist), nowrap (and its innermost root
 * coordinate does not wrap), lin (contiguous buffers: addresses may use the flattened row-major
 * index across rows) — or the masked path (none of them). lin_tail (ℓ = 1, not full): the last
 * unit with the root program index p0 + lane unclamped, every vector load and store masked to the
 * lanes below P, so that contiguous accesses stay masked vector loads and stores. */
static void emit_mode(lw *L, LLVMBasicBlockRef bb, LLVMBasicBlockRef next, int full, int nowrap,
                      int lin, int lin_tail) {
  LLVMPositionBuilderAtEnd(L->b, bb);
  L->full = full;
  L->nowrap = nowrap;
  L->lin_ok = lin;
  L->use_cstride = lin;
  L->lin_tail = lin_tail;
  if (L->ilv > 1) emit_unit_group(L);
  else emit_unit(L);
  LLVMBuildBr(L->b, next);
  L->full = L->nowrap = L->lin_ok = L->use_cstride = L->lin_tail = 0;
}

/* ℓ ≥ W, row groups (xir__lower_for): a loop over i in [from, to) whose units — root programs
 * p0 = base + i·step (base NULL: p0 = i), a row group of L->ilv when L->ilv > 1 — are all full. */
static void full_unit_loop(lw *L, LLVMValueRef from, LLVMValueRef to, LLVMValueRef base,
                           unsigned step, const char *name) {
  loop lp;
  loop_begin(L, &lp, from, to);
  L->p0 = base ? LLVMBuildAdd(L->b, base, LLVMBuildMul(L->b, lp.i, ci64(L, (int64_t)step), ""), "p0")
               : lp.i;
  LLVMBasicBlockRef ub = LLVMAppendBasicBlockInContext(L->ctx, L->fn, name);
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "");
  LLVMBuildBr(L->b, ub);
  emit_mode(L, ub, next, 1, 0, 0, 0);
  LLVMPositionBuilderAtEnd(L->b, next);
  loop_end(L, &lp);
}

/* ---- alias scopes (the aliasing contract: docs/api.md) ---- */

/* The buffer param whose pointer v is computed from (through GEPs), or -1. */
static int base_param(const lw *L, LLVMValueRef v) {
  while (v && LLVMIsAGetElementPtrInst(v)) v = LLVMGetOperand(v, 0);
  for (int i = 0; i < L->p->nparams; i++)
    if (L->buf[i] && L->buf[i] == v) return i;
  return -1;
}

/* An output may share memory only with an input that its kernel's in-place rule allows, exactly
 * (checked at launch, src/lower/launch.c). Every other input is disjoint from every output, so
 * its loads get a scope of their own (!alias.scope) and the outputs' stores say they touch none
 * of those scopes (!noalias): LICM may then keep a table row loaded once per row out of the
 * chunk loop (rope_cache's cos/sin window loads at ℓ = HD). */
static void alias_scopes(lw *L) {
  const xir_program *p = L->p;
  uint8_t ok[XIR_MAX_PARAMS][XIR_MAX_PARAMS];
  xir__alias_table(p, ok);
  int disjoint[XIR_MAX_PARAMS] = {0}, any = 0;
  for (int i = 0; i < p->nparams; i++) {
    if (p->params[i].kind != XIR_PARAM_BUFFER || p->params[i].is_output) continue;
    disjoint[i] = 1;
    for (int o = 0; o < p->nparams; o++)
      if (p->params[o].kind == XIR_PARAM_BUFFER && p->params[o].is_output && ok[o][i]) disjoint[i] = 0;
    any |= disjoint[i];
  }
  if (!any) return;
  size_t nl;
  const char *fname = LLVMGetValueName2(L->fn, &nl);
  char name[300];
  snprintf(name, sizeof name, "%.*s.alias", (int)(nl > 200 ? 200 : nl), fname);
  LLVMMetadataRef dom_name = LLVMMDStringInContext2(L->ctx, name, strlen(name));
  LLVMMetadataRef domain = LLVMMDNodeInContext2(L->ctx, &dom_name, 1);
  LLVMMetadataRef scope[XIR_MAX_PARAMS], list[XIR_MAX_PARAMS], all[XIR_MAX_PARAMS];
  int nall = 0;
  for (int i = 0; i < p->nparams; i++) {
    if (!disjoint[i]) continue;
    snprintf(name, sizeof name, "%.*s.%s", (int)(nl > 200 ? 200 : nl), fname, p->params[i].name);
    LLVMMetadataRef ops[2] = {LLVMMDStringInContext2(L->ctx, name, strlen(name)), domain};
    scope[i] = LLVMMDNodeInContext2(L->ctx, ops, 2);
    list[i] = LLVMMDNodeInContext2(L->ctx, &scope[i], 1);
    all[nall++] = scope[i];
  }
  LLVMValueRef noalias = LLVMMetadataAsValue(L->ctx, LLVMMDNodeInContext2(L->ctx, all, (size_t)nall));
  unsigned k_scope = LLVMGetMDKindIDInContext(L->ctx, "alias.scope", 11);
  unsigned k_noalias = LLVMGetMDKindIDInContext(L->ctx, "noalias", 7);
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(L->fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
      LLVMValueRef ptr = NULL;
      int writes = 0;
      if (LLVMIsALoadInst(in)) {
        ptr = LLVMGetOperand(in, 0);
      } else if (LLVMIsAStoreInst(in)) {
        ptr = LLVMGetOperand(in, 1);
        writes = 1;
      } else if (LLVMIsACallInst(in)) {
        LLVMValueRef callee = LLVMGetCalledValue(in);
        size_t cl = 0;
        const char *cn = callee ? LLVMGetValueName2(callee, &cl) : "";
        if (!strncmp(cn, "llvm.masked.load.", 17) || !strncmp(cn, "llvm.masked.gather.", 19)) {
          ptr = LLVMGetOperand(in, 0);
        } else if (!strncmp(cn, "llvm.masked.store.", 18) || !strncmp(cn, "llvm.masked.scatter.", 20)) {
          ptr = LLVMGetOperand(in, 1);
          writes = 1;
        }
      }
      if (!ptr) continue;
      int q = base_param(L, ptr);
      if (q < 0) continue;
      if (!writes && disjoint[q]) LLVMSetMetadata(in, k_scope, LLVMMetadataAsValue(L->ctx, list[q]));
      if (writes && p->params[q].is_output) LLVMSetMetadata(in, k_noalias, noalias);
    }
}

xir_status xir__lower(const xir_program *p, const xir_shape *shape, const xir_candidate *c,
                      LLVMModuleRef mod, const char *entry, xir_diag *d) {
  xir__cvt_target t = xir__cvt_host();
  return xir__lower_for(p, shape, c, &t, mod, entry, d);
}

xir_status xir__lower_for(const xir_program *p, const xir_shape *shape, const xir_candidate *c,
                          const xir__cvt_target *t, LLVMModuleRef mod, const char *entry,
                          xir_diag *d) {
  if (c->attn_vec) return xir__lower_attn(p, shape, c, t, mod, entry, d); /* lower_attn.c */
  lw L;
  memset(&L, 0, sizeof L);
  L.cvt = *t;
  L.narrow_masks = !t->avx512;
  L.p = p;
  L.sh = shape;
  L.c = c;
  L.d = d;
  L.mod = mod;
  L.ctx = LLVMGetModuleContext(mod);
  L.W = c->W;
  L.ell = c->local;
  L.k = c->local > c->W ? c->local / c->W : 1;
  L.fixed = c->fixed_dims;
  if (L.k > MAXK)
    return xir__err(d, XIR_ERR_UNSUPPORTED, "l/W = %u packets per root program is above %d", L.k, MAXK);
  L.f32 = LLVMFloatTypeInContext(L.ctx);
  L.i64 = LLVMInt64TypeInContext(L.ctx);
  L.i32 = LLVMInt32TypeInContext(L.ctx);
  L.i1 = LLVMInt1TypeInContext(L.ctx);
  L.ptr = LLVMPointerTypeInContext(L.ctx, 0);
  L.vf = LLVMVectorType(L.f32, L.W);
  L.vi = LLVMVectorType(L.i64, L.W);
  L.vb = LLVMVectorType(L.i1, L.W);
  size_t nn = (size_t)p->nnodes + 1;
  L.top = xir__calloc(nn, sizeof(val));
  L.top_ok = xir__calloc(nn, sizeof(int));
  L.memo = xir__calloc(nn, sizeof(val));
  L.memo_gen = xir__calloc(nn, sizeof(unsigned));
  L.scratch = xir__calloc(nn, sizeof(LLVMValueRef));
  L.mat_uses = xir__calloc(nn, sizeof(int));
  L.mat_buf = xir__calloc(nn, sizeof(LLVMValueRef));
  L.mat_share = xir__malloc(nn * sizeof(int));
  L.mat_state = xir__calloc(nn, 1);
  L.hoist = xir__calloc(nn, 1);
  L.hoist_buf = xir__calloc(nn, sizeof(LLVMValueRef));
  L.skip = xir__calloc(nn, 1);
  L.narrow = xir__calloc(nn, 1);
  L.uni = xir__calloc(nn, 1);
  L.nar = xir__calloc(nn, 1);
  if (c->local > 1 && c->inner_dim >= 0) {
    L.period = xir__calloc(nn, sizeof(int64_t));
    if (L.period) xir__inner_period(p, shape, c->inner_dim, L.period);
  }
  L.nest_dim = -1;
  L.unroll = XIR__UNROLL_CHUNKS;
  L.ugen = 1u << 31;
  xir_status st = XIR_OK;
  if (L.mat_share)
    for (size_t i = 0; i < nn; i++) L.mat_share[i] = -1;
  if (!L.top || !L.top_ok || !L.memo || !L.memo_gen || !L.scratch || !L.mat_uses || !L.mat_buf ||
      !L.mat_share ||
      !L.mat_state || !L.hoist || !L.hoist_buf || !L.skip || !L.narrow || !L.uni || !L.nar ||
      (c->local > 1 && !L.period)) {
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory lowering '%s'", p->name);
    goto done;
  }
  L.pf_at = -1;
  if (c->local >= c->W && c->inner_dim >= 0 && p->nroot > 0) {
    L.pf_at = (L.pf = xir__calloc(nn, 1)) == NULL ? -2
              : xir__next_row_loads(p, c->inner_dim, c->perm[p->nroot - 1],
                                                    t->math_prefetch_only, L.pf);
    if (L.pf_at == -1 && t->math_prefetch_only) { /* a norm on AMD Zen: far launches only */
      L.pf_at = xir__next_row_loads(p, c->inner_dim, c->perm[p->nroot - 1], 0, L.pf);
      L.pf_far = L.pf_at >= 0;
    }
  }
  if (L.pf_at == -2) {
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory lowering '%s'", p->name);
    goto done;
  }
  xir__hoisted_tiles(p, shape, L.hoist);
  xir__narrow_values(p, L.narrow);
  uniform_values(&L);
  for (int i = 0; i < p->nnodes; i++) /* a launch-time axis is never hoisted (the bridge agrees) */
    if (L.hoist[i] && !is_fixed(&L, p->nodes[i].type.axes[0])) L.hoist[i] = 0;
  L.mask_id = xir__mask_skips(p, L.skip, &L.mask);
  if (L.mask_id >= 0 && c->local > 1 && L.mask.axis_dim != c->inner_dim) {
    memset(L.skip, 0, nn); /* the chunked axis is another one: nothing to bound */
    L.mask_id = -1;
  }
  L.early_fill = early_fill_ok(&L);
  if (L.mask_id < -1 || count_mat_uses(&L) || cheap_mats(&L)) {
    st = xir__err(d, XIR_ERR_NOMEM, "out of memory lowering '%s'", p->name);
    goto done;
  }
  if (L.period && L.ell >= L.W) {
    int any = 0;
    xir__pbuf *pm = xir__calloc(nn, sizeof(xir__pbuf));
    int64_t *stretch = xir__calloc(nn, sizeof(int64_t));
    if (!pm || !stretch) {
      xir__free(pm);
      xir__free(stretch);
      st = xir__err(d, XIR_ERR_NOMEM, "out of memory lowering '%s'", p->name);
      goto done;
    }
    xir__inner_stretch(p, shape, c->inner_dim, stretch);
    L.unroll = xir__chunk_unroll(p, shape, c->inner_dim, L.ell, L.W, is_fixed(&L, c->inner_dim));
    for (int i = p->body_begin; i < p->nnodes; i++)
      any |= xir__period_buffer(p, shape, c->inner_dim, L.ell, L.W, is_fixed(&L, c->inner_dim),
                                L.mask_id >= 0, L.hoist, L.period, stretch, i, &pm[i]);
    xir__free(stretch);
    if (any && (L.pm_buf = xir__calloc(nn, sizeof(LLVMValueRef))) != NULL) {
      L.pm = pm;
      /* without it (out of memory) every hoisted tile is filled as if a chunk read it */
      if ((L.pm_direct = xir__calloc(nn, 1)) && xir__direct_uses(p, pm, L.pm_direct)) {
        xir__free(L.pm_direct);
        L.pm_direct = NULL;
      }
    } else {
      xir__free(pm);
    }
  }
  LLVMTypeRef params[3] = {L.ptr, L.i64, L.i64};
  LLVMTypeRef fty = LLVMFunctionType(L.i32, params, 3, 0);
  L.fn = LLVMAddFunction(mod, entry, fty);
  xir__vm_function_attrs(L.fn, L.W);
  L.b = LLVMCreateBuilderInContext(L.ctx);
  LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "entry");
  LLVMPositionBuilderAtEnd(L.b, bb);
  if ((st = xir__vm_create(mod, L.b, &L.vm, d))) goto done;
  xir__vm_set_fma(L.vm, t->fma); /* what the JIT's target has */
  xir__vm_set_avx512(L.vm, t->avx512 && t->avx512dq);
  LLVMValueRef args = LLVMGetParam(L.fn, 0);
  for (int i = 0; i < p->nparams; i++) {
    LLVMValueRef idx = ci64(&L, i);
    LLVMValueRef slot = LLVMBuildGEP2(L.b, L.i64, args, &idx, 1, "");
    if (p->params[i].kind == XIR_PARAM_BUFFER) L.buf[i] = LLVMBuildLoad2(L.b, L.ptr, slot, p->params[i].name);
    else if (p->params[i].elem == XIR_I64) L.scal[i] = LLVMBuildLoad2(L.b, L.i64, slot, p->params[i].name);
    else L.scal[i] = LLVMBuildLoad2(L.b, L.f32, slot, p->params[i].name);
  }
  load_dims(&L, args);
  unsigned rp_per_unit = L.ell >= L.W ? 1 : L.W / L.ell;
  unsigned units = L.ell >= L.W ? c->B / L.ell : c->B / L.W;
  uint64_t rp_per_block = c->B / L.ell;
  int all_root_fixed = 1, inner_fixed = 1;
  for (int a = 0; a < p->nroot; a++) {
    all_root_fixed &= is_fixed(&L, p->root[a].dim);
    if (a != c->perm[0]) inner_fixed &= is_fixed(&L, p->root[a].dim);
  }
  int ed = p->nroot > 0 ? p->root[c->perm[p->nroot - 1]].dim : -1;
  int multi = L.ell == 1 && p->nroot >= 2 && !(is_fixed(&L, ed) && dimc(&L, ed) % L.W == 0);
  int use_lin = multi && inner_fixed;
  /* 1 < ℓ < W with the root extents inside the outermost at compile time: full units of
   * contiguous buffers take the lin path (access_offset: a row of C = ℓ elements per root
   * program is one vector load across the packet's rows), a strided view's the masked path;
   * otherwise full units take the plain full path (run-time strides, gathers) */
  int small_lin = L.ell > 1 && L.ell < L.W && inner_fixed && p->nroot >= 1 && c->inner_dim >= 0 &&
                  is_fixed(&L, c->inner_dim);
  int whole_blocks = L.ell == 1 && units > 1 && (!multi || use_lin);
  /* whole blocks of contiguous buffers address by the flattened index (the lin path with the
   * compile-time strides), also where E is a multiple of W: the coordinates' remainder and
   * quotient by E then fold into p0 (c + (p0 / E)·E = p0: the optimizer drops both), where a
   * strided view's run-time strides keep a division a packet (swiglu 2x100000, one thread, 64
   * blocks in L2, AOT objects: 11.7-11.9 -> 7.3 ns a packet). Strided views take the unit loop. */
  int whole_lin = use_lin || (whole_blocks && p->nroot >= 2 && inner_fixed);
  /* Off the lin path (a launch-time extent inside the outermost: the coordinates divide by it),
   * whole blocks of contiguous buffers address root-ordered accesses at p0 (access_offset: a
   * root over [B, H, C] with a launch-time H paid a 64-bit signed division and remainder by H and
   * one by E a packet). Where packets do not wrap (E a compile-time multiple of W) as soon as one
   * access is root-ordered: the others keep the full path's affine coordinates. Where they may
   * wrap, only when no coordinate is needed at all (root_order_use's *only) — such packets
   * otherwise went through the tested unit loop, the wrapping ones gathering. */
  int whole_flat = 0;
  if (L.ell == 1 && units > 1 && p->nroot >= 2 && !whole_lin) {
    int only, any = root_order_use(&L, &only);
    whole_flat = multi ? only : any;
    whole_blocks |= whole_flat;
  }
  L.pair_ok = whole_blocks && pair_units_ok(&L, units, whole_lin);
  stream_tests(&L);
  emit_hoisted(&L);
  /* blocks */
  L.p_call_end = LLVMBuildMul(L.b, LLVMGetParam(L.fn, 2), ci64(&L, (int64_t)rp_per_block), "");
  L.p_home_next = LLVMBuildMul(L.b, LLVMBuildAdd(L.b, LLVMGetParam(L.fn, 1), L.home_stride, ""),
                               ci64(&L, (int64_t)rp_per_block), "homenext");
  L.ilv = group_size(&L);
  if (L.ilv > 1) {
    int ok = (L.grp = xir__calloc(L.ilv, sizeof *L.grp)) != NULL;
    for (unsigned j = 0; j < L.ilv && ok; j++)
      ok = (L.grp_top[j] = xir__calloc(nn, sizeof(val))) && (L.grp_top_ok[j] = xir__calloc(nn, sizeof(int)));
    ok = ok && (L.gv = xir__calloc(nn, sizeof(val))) && (L.gv_ok = xir__calloc(nn, sizeof(int)));
    if (!ok) {
      st = xir__err(d, XIR_ERR_NOMEM, "out of memory lowering '%s'", p->name);
      goto done;
    }
    /* ℓ ≥ W, row groups: the call's root programs [pb, pe) — its blocks' (one unit a root
     * program), below P — in groups of ilv, then the rest one at a time; every unit is full */
    LLVMValueRef pb = LLVMBuildMul(L.b, LLVMGetParam(L.fn, 1), ci64(&L, (int64_t)rp_per_block), "pb");
    LLVMValueRef pe = smin(&L, L.p_call_end, L.Pv);
    LLVMValueRef cnt = smax(&L, LLVMBuildSub(L.b, pe, pb, ""), ci64(&L, 0));
    LLVMValueRef ng = LLVMBuildUDiv(L.b, cnt, ci64(&L, (int64_t)L.ilv), "groups");
    full_unit_loop(&L, ci64(&L, 0), ng, pb, L.ilv, "group");
    unsigned m = L.ilv;
    L.ilv = 1;
    full_unit_loop(&L, LLVMBuildAdd(L.b, pb, LLVMBuildMul(L.b, ng, ci64(&L, (int64_t)m), ""), ""), pe,
                   NULL, 1, "single");
    L.ilv = m;
    goto finish;
  }
  loop blk;
  loop_begin(&L, &blk, LLVMGetParam(L.fn, 1), LLVMGetParam(L.fn, 2));
  /* ℓ = 1, several units a block: a block whose root programs all exist (and, on the lin path,
   * whose buffers are contiguous) runs its units through the full path with no per-unit tests
   * (p0 < P, the unit's end, the wrap check); the other blocks — the launch's last, or a strided
   * view's — take the unit loop below. Decided here, before the unit paths; the rest of this
   * decision is made with them (use_lin, multi). */
  LLVMBasicBlockRef blk_done = NULL;
  if (whole_blocks) {
    LLVMValueRef p0b = LLVMBuildMul(L.b, blk.i, ci64(&L, (int64_t)rp_per_block), "");
    LLVMValueRef whole = LLVMBuildICmp(L.b, LLVMIntSLE,
                                       LLVMBuildAdd(L.b, p0b, ci64(&L, (int64_t)rp_per_block), ""),
                                       L.Pv, "wholeblock");
    if (whole_lin || whole_flat) whole = LLVMBuildAnd(L.b, whole, L.contig_flag, "");
    LLVMBasicBlockRef fastb = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "wholeblock");
    LLVMBasicBlockRef slowb = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "unitloop");
    blk_done = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "blockdone");
    LLVMBuildCondBr(L.b, whole, fastb, slowb);
    LLVMPositionBuilderAtEnd(L.b, fastb);
    loop fu;
    L.pair = L.pair_ok;
    if (L.pair) L.k = 2;
    L.evenodd = L.pair && pair_evenodd_ok(&L);
    unit_loop_begin(&L, &fu, blk.i, L.pair ? units / 2 : units, rp_per_block, L.k * rp_per_unit);
    LLVMBasicBlockRef ub = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "wholeunit");
    LLVMBasicBlockRef un_next = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "wholenext");
    LLVMBuildBr(L.b, ub);
    L.flat = whole_flat;
    emit_mode(&L, ub, un_next, 1, 0, whole_lin, 0);
    L.flat = 0;
    LLVMPositionBuilderAtEnd(L.b, un_next);
    loop_end(&L, &fu);
    L.k = 1;
    L.pair = L.evenodd = 0;
    LLVMBuildBr(L.b, blk_done);
    LLVMPositionBuilderAtEnd(L.b, slowb);
  }
  loop un;
  unit_loop_begin(&L, &un, blk.i, units, rp_per_block, rp_per_unit);
  LLVMBasicBlockRef live = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "unit");
  LLVMBasicBlockRef fullb = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "full");
  LLVMBasicBlockRef maskb = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "masked");
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "next");
  LLVMBuildCondBr(L.b, LLVMBuildICmp(L.b, LLVMIntSLT, L.p0, L.Pv, ""), live, un.exit);
  LLVMPositionBuilderAtEnd(L.b, live);
  /* The paths of a unit (docs/lowering.md, "Launch-time dims"):
   *  - masked: where a unit can lack root programs (ℓ < W and P·ℓ not known to be a multiple
   *    of W; for ℓ ≥ W a unit is one root program, and p0 < P was just checked), and for the
   *    full units of the lin path when a buffer is strided;
   *  - nowrap (ℓ = 1, several root axes, the innermost extent E not a compile-time multiple of
   *    W): the packet's innermost coordinates p0 % E + lane do not wrap, the outer ones are
   *    uniform — affine addresses with any strides;
   *  - full: with ℓ = 1 and compile-time inner root extents, the lin path (the flattened index,
   *    contiguous across rows), taken only when every buffer is contiguous; other wrapping
   *    packets take the masked path. */
  int partial = L.ell < L.W && (!all_root_fixed || c->ragged_packets);
  /* the last, partial unit with ℓ = 1 of one root axis, or of several on the lin path (under
   * the contiguity check): masked vector loads and stores at p0 + lane (lin_tail) */
  int lin_tail = partial && L.ell == 1 && (p->nroot == 1 || use_lin);
  int need_masked = (partial && !(lin_tail && p->nroot == 1)) || multi || small_lin;
  LLVMBasicBlockRef after_full = live, tailb = NULL;
  if (partial) {
    LLVMValueRef end = LLVMBuildAdd(L.b, L.p0, ci64(&L, rp_per_unit), "");
    after_full = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "isfull");
    LLVMBasicBlockRef notfull = maskb;
    if (lin_tail) {
      tailb = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "lintail");
      notfull = tailb;
      if (use_lin) {
        notfull = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "partial");
        LLVMPositionBuilderAtEnd(L.b, notfull);
        LLVMBuildCondBr(L.b, L.contig_flag, tailb, maskb);
        LLVMPositionBuilderAtEnd(L.b, live);
      }
    }
    LLVMBuildCondBr(L.b, LLVMBuildICmp(L.b, LLVMIntSLE, end, L.Pv, ""), after_full, notfull);
    LLVMPositionBuilderAtEnd(L.b, after_full);
  }
  LLVMBasicBlockRef nowrapb = NULL;
  if (multi) {
    nowrapb = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "nowrap");
    LLVMBasicBlockRef wraps = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "wraps");
    if (use_lin) {
      /* contiguous buffers: every full unit takes the lin path, wrapping or not (no per-packet
       * remainder by E); the wrap test is for strided views only */
      LLVMBasicBlockRef check = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "wrapcheck");
      LLVMBuildCondBr(L.b, L.contig_flag, fullb, check);
      LLVMPositionBuilderAtEnd(L.b, check);
    }
    LLVMValueRef e0 = LLVMBuildSRem(L.b, L.p0, dimv(&L, ed), "");
    LLVMValueRef e1 = LLVMBuildAdd(L.b, e0, ci64(&L, L.W), "");
    LLVMBuildCondBr(L.b, LLVMBuildICmp(L.b, LLVMIntSLE, e1, dimv(&L, ed), ""), nowrapb, wraps);
    LLVMPositionBuilderAtEnd(L.b, wraps);
  }
  /* a wrapping packet without the lin path (or of a strided view) takes the masked path
   * (correct for full units too): one body less to compile */
  if (multi) LLVMBuildBr(L.b, maskb);
  else if (small_lin) LLVMBuildCondBr(L.b, L.contig_flag, fullb, maskb);
  else LLVMBuildBr(L.b, fullb);
  if (!multi || use_lin) emit_mode(&L, fullb, next, 1, 0, use_lin || small_lin, 0);
  else LLVMDeleteBasicBlock(fullb);
  if (nowrapb) emit_mode(&L, nowrapb, next, 1, 1, 0, 0);
  if (tailb) emit_mode(&L, tailb, next, 0, 0, use_lin, 1);
  if (need_masked) emit_mode(&L, maskb, next, 0, 0, 0, 0);
  else LLVMDeleteBasicBlock(maskb);
  LLVMPositionBuilderAtEnd(L.b, next);
  loop_end(&L, &un);
  if (blk_done) {
    LLVMBuildBr(L.b, blk_done);
    LLVMPositionBuilderAtEnd(L.b, blk_done);
  }
  loop_end(&L, &blk);
finish:
  if (L.any_nt) {
    /* non-temporal stores are weakly ordered: an sfence before the return, so that whoever
     * learns of the call's end (the runtime's release/acquire) sees them */
    LLVMBasicBlockRef fb = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "sfence");
    LLVMBasicBlockRef rb = LLVMAppendBasicBlockInContext(L.ctx, L.fn, "ret");
    LLVMBuildCondBr(L.b, L.stream_flag, fb, rb);
    LLVMPositionBuilderAtEnd(L.b, fb);
    intrinsic(&L, "llvm.x86.sse.sfence", NULL, 0, NULL, 0);
    LLVMBuildBr(L.b, rb);
    LLVMPositionBuilderAtEnd(L.b, rb);
  }
  LLVMBuildRet(L.b, LLVMConstInt(L.i32, 0, 0));
  st = L.st;
  if (!st) alias_scopes(&L);
done:
  xir__vm_destroy(L.vm);
  if (L.b) LLVMDisposeBuilder(L.b);
  xir__free(L.top);
  xir__free(L.top_ok);
  xir__free(L.memo);
  xir__free(L.memo_gen);
  xir__free(L.scratch);
  xir__free(L.mat_uses);
  xir__free(L.mat_buf);
  xir__free(L.mat_share);
  xir__free(L.mat_state);
  xir__free(L.hoist);
  xir__free(L.narrow);
  xir__free(L.uni);
  xir__free(L.nar);
  xir__free(L.hoist_buf);
  xir__free(L.period);
  xir__free(L.pm);
  xir__free(L.pm_direct);
  xir__free(L.pm_buf);
  xir__free(L.skip);
  xir__free(L.pf);
  xir__free(L.mat_save);
  xir__free(L.grp);
  xir__free(L.gv);
  xir__free(L.gv_ok);
  for (unsigned j = 0; j < XIR__GROUP_MAX; j++) {
    xir__free(L.grp_top[j]);
    xir__free(L.grp_top_ok[j]);
  }
  return st;
}

/* program.h — the in-memory form of an XIR program, shared by every pass (internal).
 *
 * A program is a flat array of nodes in SSA order: a node's operands always precede it. Leaves
 * (constants, dims, scalar params, root indices) are nodes too, printed inline by the printer.
 * Types are filled in by the verifier; every later pass may rely on them. All memory lives in the
 * program's arena and is freed in one call. */
#ifndef XIR_IR_PROGRAM_H
#define XIR_IR_PROGRAM_H

#include "util/util.h"
#include "xir.h"

/* A value's type: element type and tile axes. Each tile axis is named by the dim it ranges over
 * (broadcasting aligns axes by dim, not by position); rank 0 is a per-root-program scalar. */
typedef struct xir_type {
  uint8_t elem; /* xir_elem */
  uint8_t rank;
  int8_t axes[XIR_MAX_TILE_RANK]; /* dim indices */
} xir_type;

typedef struct xir_node {
  uint16_t op;     /* xir_op */
  uint8_t nargs;   /* operand count (load/store: index count, plus 1 value for store) */
  xir_type type;   /* result type (store: elem NONE) */
  int32_t *args;   /* operands; load/store: indices (-1 = slice), store's value last */
  union {
    double f;      /* CONST f32 (already rounded to float) */
    int64_t i;     /* CONST i64 */
  } imm;
  int32_t ref;     /* DIM/IOTA/REDUCE: dim; PARAM/LOAD/STORE: param; ROOT: root axis */
  const char *name; /* user-visible name or NULL */
  int line, col;   /* source position, 0 if built in C */
} xir_node;

typedef struct xir_param {
  const char *name;
  uint8_t kind;    /* xir_param_kind */
  uint8_t elem;
  uint8_t is_output;
  uint8_t has_default;
  int rank;
  int dims[XIR_MAX_RANK];
  double default_value;
  int line, col;
} xir_param;

typedef struct xir_root_axis {
  const char *var;
  int dim;
  int line, col;
} xir_root_axis;

struct xir_program {
  xir_arena arena;
  const char *name;
  const char *file;
  int ndims;
  const char *dims[XIR_MAX_DIMS];
  int dim_line[XIR_MAX_DIMS], dim_col[XIR_MAX_DIMS];
  int nparams;
  xir_param params[XIR_MAX_PARAMS];
  int nroot;
  xir_root_axis root[XIR_MAX_ROOT];
  int nreq;
  int32_t *reqs;   /* node ids of `require` conditions (evaluated over dims only) */
  int body_begin;  /* nodes before this index belong to `require` clauses */
  int nnodes;
  xir_node *nodes;
};

/* The program a builder is filling (the parser reads declarations back through it). */
xir_program *xir__builder_program(xir_builder *b);
/* What a declared name refers to (xir__builder_lookup). */
enum { XIR__NAME_DIM = 0, XIR__NAME_PARAM = 1, XIR__NAME_ROOT = 2, XIR__NAME_VALUE = 3 };
/* Looks a declared name up in the builder's hash table (O(1)): 1 and *kind (XIR__NAME_*) and
 * *index (dim, param, root axis or node id) set when declared, else 0. Either pointer may be NULL. */
int xir__builder_lookup(const xir_builder *b, const char *name, int *kind, int *index);
/* 1 and *d filled when the builder has recorded an error. */
int xir__builder_error(const xir_builder *b, xir_diag *d);

/* Verifies p and fills in node types. Errors name the node's line:col and the rule. */
xir_status xir__verify(xir_program *p, xir_diag *d);

/* 1 when node kind is a leaf printed inline (CONST, DIM, PARAM, ROOT). */
static inline int xir__is_inline_leaf(int op) {
  return op == XIR_OP_CONST || op == XIR_OP_DIM || op == XIR_OP_PARAM || op == XIR_OP_ROOT;
}

/* 1 when op is a reduction (reduce.sum, reduce.max, reduce.min). */
static inline int xir__is_reduce(int op) {
  return op == XIR_OP_REDUCE_SUM || op == XIR_OP_REDUCE_MAX || op == XIR_OP_REDUCE_MIN;
}

/* 1 when op is vector math (a polynomial or table evaluation of tens of operations per packet,
 * src/lower/vmath.c): what the lowering keeps in a materialized slot when several consumers use
 * it, and what the next-row prefetch looks for in a consumer loop. */
static inline int xir__is_vector_math(int op) {
  return op == XIR_OP_EXP || op == XIR_OP_LOG || op == XIR_OP_TANH || op == XIR_OP_ERF ||
         op == XIR_OP_SIGMOID || op == XIR_OP_SIN || op == XIR_OP_COS || op == XIR_OP_POW;
}

/* Integer helpers the op table's integer semantics use (wrapping, floor division). */
int64_t xir__iadd(int64_t a, int64_t b);
int64_t xir__isub(int64_t a, int64_t b);
int64_t xir__imul(int64_t a, int64_t b);
int64_t xir__idiv(int64_t a, int64_t b); /* floor division; b == 0 gives 0 (checked before) */
int64_t xir__irem(int64_t a, int64_t b); /* a - b*floor(a/b); b == 0 gives 0 */
/* IEEE-754 maximum/minimum: NaN if either is NaN. */
double xir__fmax(double a, double b);
double xir__fmin(double a, double b);

/* Evaluates an i64 scalar expression over dims only (used for `require`). Returns 0 on success
 * and sets *out; -1 when the expression uses something other than dims/literals; -2 when it
 * divides by zero; -3 when out of memory. */
int xir__eval_dims_expr(const xir_program *p, const int64_t *dims, int32_t node, int64_t *out);

/* The nested (call-form) text of expression `node` into buf (used in messages). */
char *xir__print_expr(const xir_program *p, int32_t node, char *buf, size_t cap);

/* ---- analyses shared by the lowering and the execution work (analysis.c) ---- */

/* ok[out][in] = 1 when output buffer `out` may alias input buffer `in` (alias.c, the rule of
 * xir_program_alias_ok); 0 for every other pair. */
void xir__alias_table(const xir_program *p, uint8_t ok[XIR_MAX_PARAMS][XIR_MAX_PARAMS]);

/* exp, log, tanh, erf, sigmoid, sin, cos, pow. */
int xir__op_is_transcendental(int op);
/* narrow[i] = 1 when every use of node i's value ends in a store to a bf16/f16 buffer through
 * multiplicative elementwise ops only (mul, div, neg, abs): a relative error of node i then moves
 * the stored value by the same relative amount, before its rounding to the 16-bit type. The
 * lowering computes such a sigmoid with the reduced-precision variant (vmath `sigmoid16`, relative
 * error < 2^-13.9, docs/vmath.md); the execution work charges it accordingly. Index operands of
 * loads and stores, reductions, adds and every other use make a value not narrow. */
void xir__narrow_values(const xir_program *p, uint8_t *narrow);
/* inv[i] = 1 when node i has the same value in every root program: it is built from constants,
 * dims, scalar parameters and iota only (no root index, load or reduction). */
void xir__root_invariant(const xir_program *p, uint8_t *inv);
enum { XIR_HOIST_MAX = 16384 }; /* elements of a hoisted tile */
enum { XIR_HOIST_HALF_BYTES = 8192 }; /* f32 bytes of the hoisted bf16/f16 loads of a call */
/* hoist[i] = 1 for the tiles the lowering computes once per native call (per task) instead of
 * once per root program: root-invariant 1-D f32 tiles whose op is transcendental (RoPE's
 * frequencies), and loads of bf16/f16 buffers at root-invariant indices (a weight vector: the
 * conversion to f32 once per call), of at most XIR_HOIST_MAX elements; the 16-bit loads first
 * fit in program order, their f32 copies at most XIR_HOIST_HALF_BYTES in total. */
void xir__hoisted_tiles(const xir_program *p, const xir_shape *s, uint8_t *hoist);
/* period[i] along the inner axis X (a dim index): 1 when node i does not depend on the element
 * index along X, M > 1 when its value at element c equals its value at c + M (it depends on
 * iota(X) only through `x % M`, x an integer polynomial in iota, M a constant or dim), and 0 when
 * it varies otherwise (or M exceeds the extent). With ℓ a multiple of M, every chunk of a root
 * program sees the same values: they are computed once per unit, not once per chunk. */
void xir__inner_period(const xir_program *p, const xir_shape *s, int X, int64_t *period);
/* stretch[i] for every node: D ≥ 1 when, along X, the node's value depends on the element index c
 * only through floor(c / D) within aligned runs of D (RoPE's i = (c % HD) / 2 and everything
 * computed from it: D = 2), 1 when it varies with every element, 0 when it does not depend on c.
 * Recognised: div(rem(iota(X), M), E) with constants (or dims) E dividing M; elementwise ops and
 * loads take the gcd of their operands'. */
void xir__inner_stretch(const xir_program *p, const xir_shape *s, int X, int64_t *stretch);
/* Period buffers (ℓ ≥ W): a transcendental 1-D tile over the inner axis X that repeats along X
 * with period M (period[id], xir__inner_period) but depends on the root program (not hoisted,
 * hoist[id] = 0) is computed once per unit into a buffer of len elements, and every chunk reads
 * its ℓ values from the chunk's residue c0 mod M on (the buffer holds the period and then its
 * first elements again, up to M + ℓ; up to ℓ when ℓ is a multiple of M, every residue 0). D
 * (stretch[id], when it divides M and W) is how many consecutive elements share a value: the
 * unit computes the values at c = 0, D, 2D, … below comp (a multiple of D·W, at least M) and
 * spreads each over D lanes; the rest of the buffer is copied from an element M below. Used
 * where ℓ is not a multiple of M (chunk invariance does not apply: RoPE's sin and cos of its
 * angle at HD = 100, or ℓ < HD) and the unit computes fewer values than a row's chunks would
 * (comp / D ≤ N / 2), and, with D > 1, also where ℓ is a multiple of M (RoPE at ℓ = HD computes
 * HD / 2 values instead of HD). Not for a launch-time X (x_fixed = 0) or a masked kernel
 * (masked = 1), nor a load where the row's chunks run straight-line (xir__chunk_unroll). Returns
 * 1 and *out, or 0. The lowering and the execution work both ask here. */
typedef struct xir__pbuf {
  int64_t len, comp, D, M;
} xir__pbuf;
int xir__period_buffer(const xir_program *p, const xir_shape *s, int X, unsigned ell, unsigned W,
                       int x_fixed, int masked, const uint8_t *hoist, const int64_t *period,
                       const int64_t *stretch, int id, xir__pbuf *out);
/* reached[i] = 1 for the nodes that a consumer's loops evaluate directly: the values of stores
 * and the operands of reductions, and what they are computed from, without looking inside the
 * nodes with a period buffer (pbuf[i].len > 0: their operands are evaluated once per unit, not in
 * the chunk loops; pbuf may be NULL). Iterative; returns 0, or -1 when out of memory. */
int xir__direct_uses(const xir_program *p, const xir__pbuf *pbuf, uint8_t *reached);
/* How far the buffer of hoisted tile `id` (its axis X of extent N, period M, M = N when not
 * periodic) must be filled: [0, N), or [0, max(M, W)) when every chunk reads it at constant
 * offsets (X the inner axis, ℓ a multiple of M that divides N, M a multiple or divisor of W);
 * with period buffers (pbuf, may be NULL), at least their comp, and only that (and W) when no
 * chunk loop reads the tile itself (direct: xir__direct_uses, may be NULL). The lowering fills
 * that much and the execution work charges the copy. */
int64_t xir__hoist_extent(const xir_program *p, int id, int64_t N, int64_t M, int x_is_inner,
                          unsigned ell, unsigned W, const xir__pbuf *pbuf, const uint8_t *direct);

/* The most full chunks of a compile-time extent that a consumer's chunk loop emits one after the
 * other, straight-line, instead of as a loop (lower.c tile_loops_at; the cost model charges them
 * no loop overhead: work.c count_iterations). */
enum { XIR__UNROLL_CHUNKS = 4 };
/* Row groups (lower.c emit_unit_group): how many consecutive root programs the lowering emits
 * statement by statement — 1 (none) unless ℓ ≥ W, the inner axis X has a compile-time length
 * (x_fixed) of at most 6 packets (16 at W <= 8) and the body reduces over it (a rank-0
 * reduction), and neither masked-work skipping (masked) nor period buffers (pbuf) are used. The
 * size: 8 for rows of 1-2 packets where reductions depend on reductions (layernorm), 4 up to 6
 * (with vector math on the row 4 up to 3 packets only); one reduction deep 4 for 1-2 packets, 2
 * for 3. At W <= 8 (AVX2 hosts) without vector math: 8 up to 6 packets, 4 up to 16. The lowering
 * also declines where it keeps a tile per unit (materialized tiles, early fills); the execution
 * work where a consumer loop reuses a stored tile. At most XIR__GROUP_MAX. */
enum { XIR__GROUP_MAX = 8 };
unsigned xir__row_group_size(const xir_program *p, const xir_shape *s, int X, unsigned ell,
                             unsigned W, int x_fixed, int masked, int pbuf);
/* The limit where a periodic load would otherwise read a period buffer (xir__period_buffer): a
 * compile-time row of at most this many full packets runs its chunks straight-line, each chunk's
 * c mod M a constant, so the load is one window load and a shuffle, or two and a permute where
 * the chunk crosses a period, with no buffer to fill a unit and no residue a chunk. rope_cache
 * 1024x200 (HD = 100, l = 16, 12 chunks and a tail) 23.4-24.8 us with the buffer, 17.6-18.9
 * straight-line; 300x300 9.0-9.5 -> 7.6 at 32 packets (16: a loop); 64 packets gained another
 * 5-10 % at 600 and 1000 columns for three times the compile time (97 against 31 ms): rows of
 * more packets keep the loop and the buffer. */
enum { XIR__UNROLL_PERIODIC = 32 };
/* The unroll limit (in chunks) of a consumer's chunk loops over X at local width ell ≥ W:
 * XIR__UNROLL_PERIODIC when some load has a local window pattern (xir__window_access_local, not
 * xir__window_access: a loop would test its residue chunk by chunk, or read it from a period
 * buffer) and X's compile-time extent (x_fixed) has at most that many full packets of W, else
 * XIR__UNROLL_CHUNKS. */
int xir__chunk_unroll(const xir_program *p, const xir_shape *s, int X, unsigned ell, unsigned W,
                      int x_fixed);

enum { XIR_LPAT_MAXP = 256 };
/* How an integer index depends on the element index c along an axis X: u + A·c + tab[c mod P],
 * with u the same for every element (its value known only for constant expressions). */
typedef struct xir__lpat {
  int64_t A;
  int P;                        /* 1..XIR_LPAT_MAXP */
  int u_known;
  int64_t u;
  int32_t tab[XIR_LPAT_MAXP];
} xir__lpat;
/* The pattern of the element offset of load/store `id` along X (built from iota(X), constants,
 * dims, per-root values, + − ×const, and % or / by a constant): 1 and *out, or 0 when the offset
 * has no such form. The lowering uses it to turn a gather whose lanes are a fixed permutation of a
 * contiguous window (RoPE's pair swap, a table row read twice per pair) into a load and a
 * shuffle — and checks at run time that the offsets are exactly that before using it. */
int xir__access_pattern(const xir_program *p, const xir_shape *s, int X, int id, xir__lpat *out);
/* 1 when no index of load/store `id` is ever clamped differently across the elements of X: every
 * index that varies along X has a fully known pattern (xir__lpat with u known) whose values over
 * the whole extent of X lie inside its dim, every other index is the same for all elements, and
 * slices are over X. The offsets are then exactly base + the pattern, and the lowering needs no
 * run-time check before a window load. */
int xir__access_in_bounds(const xir_program *p, const xir_shape *s, int X, int id);
/* Lane i of packet q of a chunk (whose first element is ≡ 0 mod P) reads base + pi[i]; 1 when
 * every pi[i] (i < W) lies in a window of W elements starting at base + *lo. */
int xir__lane_window(const xir__lpat *pt, unsigned W, unsigned q, int64_t *pi, int64_t *lo);
/* 1 when a candidate with local width ell ≥ W over inner axis X lowers load `id` as a window
 * load + shuffle in its full chunks (ell a multiple of the pattern's period, every packet's lanes
 * within one window); *pt_out (may be NULL) then receives the pattern. */
int xir__window_access(const xir_program *p, const xir_shape *s, int X, unsigned ell, unsigned W,
                       int id, xir__lpat *pt_out);
/* The same without requiring ell to be a multiple of the pattern's period: the lane windows are
 * those of a chunk whose first element is ≡ 0 mod P, which chunks starting elsewhere match only
 * where the pattern repeats locally (RoPE's table column (c % HD) / 2 with HD = 100: every even
 * chunk start whose chunk does not cross a head boundary). The offsets must then be checked at
 * run time before a window load is used (the lowering does, and gathers otherwise). */
int xir__window_access_local(const xir_program *p, const xir_shape *s, int X, unsigned ell,
                             unsigned W, int id, xir__lpat *pt_out);
/* For such a local pattern and chunks of ell ≥ W lanes starting at multiples of ell: reach[r]
 * = 1 for the residues r = c0 mod P that chunk starts c0 take, and good[r] = 1 where lane c (qW +
 * i) of a chunk starting at residue r reads the offset of lane 0 plus pi[q][i] − pi[0][0] (the
 * lane windows of xir__lane_window), so that one window load per packet with a base common to
 * all packets is right. Returns the fraction of reachable residues (= of the chunks, which cycle
 * through them evenly) that are good. */
double xir__window_local_residues(const xir__lpat *pt, unsigned ell, unsigned W,
                                  uint8_t good[XIR_LPAT_MAXP], uint8_t reach[XIR_LPAT_MAXP]);
/* A packet of a chunk at residue r0 (its first element c0 ≡ r0 mod P) read as at most two window
 * loads and one two-source shuffle: lane i of packet q (element c = qW + i of the chunk, live when
 * c < live) reads the offset of the chunk's lane 0 plus rel = A·c + tab[(r0 + c) mod P] − tab[r0];
 * window w covers [base[w], base[w] + W) relative to that offset and loads the elements of
 * mask[w] (bit e: element base[w] + e, read by a live lane); src[i] is the lane's element in the
 * concatenation of the windows (0 .. 2W − 1), −1 for a dead lane. Returns 1, or 0 when the live
 * lanes' offsets do not fit in two windows (a chunk that crosses a period boundary of rope_cache's
 * (c % HD) / 2 at HD = 100 fits: the lanes before and after the boundary). W ≤ 16. */
typedef struct xir__wsplit {
  int nwin;
  int64_t base[2];
  uint32_t mask[2];
  int8_t src[16];
} xir__wsplit;
int xir__window_split(const xir__lpat *pt, int64_t r0, unsigned W, unsigned q, int64_t live,
                      xir__wsplit *out);
/* The same for the lanes of a period buffer's fill (lower.c, emit_period_bufs): lane i reads the
 * element c = c0 + D·i (live when c < live), at the offset of element 0 plus
 * rel = A·c + tab[c mod P] − tab[0]. Returns 1, or 0 when the live lanes need a third window. */
int xir__window_fill(const xir__lpat *pt, int64_t c0, int64_t D, unsigned W, int64_t live,
                     xir__wsplit *out);
/* Integer op (add, sub, mul, min, max, floor div and mod: the native code's and the
 * interpreter's semantics) on two compile-time values; 0 where it is none of those, divides by
 * zero or overflows int64 (the lowering's per-lane folding and the execution work's index values
 * agree through it). */
int xir__const_int_op(int op, int64_t a, int64_t b, int64_t *r);
/* The same for compile-time lane offsets pi[g] (1 < ℓ < W, lower.c access_offset's patterns):
 * the live lanes in lane order, each in window 0 while it keeps that window's span below W, else
 * in window 1; base[w] is the window's lowest offset. With distinct set (a store), no two live
 * lanes may have one offset. Returns the number of windows (1 or 2), 0 when two do not do. */
int xir__window_lanes(const int64_t *pi, const int *live, unsigned W, int distinct, xir__wsplit *out);
/* The fraction of the reachable residues of xir__window_local_residues that are not good but
 * whose every packet (ell / W of them, all lanes live) splits into two windows (xir__window_split). */
double xir__window_split_fraction(const xir__lpat *pt, unsigned ell, unsigned W);

/* A prefix mask: value `id` is a select whose condition, on tile axis X of dim `axis_dim`,
 * holds exactly at the positions x >= end, where
 *   end = c0 + Σ_k root_coef[k]·root_k + Σ_d dim_coef[d]·dims[d]   (clamped to [0, extent]),
 * and whose value there is the constant `fill` (the other operand is the live value `live`).
 * Recognised: select(iota(X) > e, fill, t), select(iota(X) >= e, ...), select(e < iota(X), ...),
 * select(iota(X) <= e, t, fill) and the like (lt, le, gt, ge, either side, under `not`), e affine
 * in root coordinates and dims (built from i64 constants, dims, root indices, + − neg and × by a
 * constant); the comparison may be any `a cmp b` where a − b is ±iota(X) + e. The select must be
 * an f32 tile with X among its axes and `fill` an f32 constant; coefficients above 2^16 and
 * constants above 2^50 in magnitude are not recognised (so that the end cannot wrap). */
typedef struct xir__prefix_mask {
  int axis_dim;
  int64_t c0;
  int64_t root_coef[XIR_MAX_ROOT];
  int64_t dim_coef[XIR_MAX_DIMS];
  double fill;
  int live; /* the value id of the unmasked operand */
} xir__prefix_mask;
/* 1 and *out when value `id` is a prefix mask (above), else 0 (*out then unspecified). */
int xir__prefix_mask_of(const xir_program *p, int id, xir__prefix_mask *out);
/* The mask's end for one root program (root[k] its coordinates, dims the shape's dims), clamped
 * to [0, extent]: positions [0, end) are live, [end, extent) hold `fill`. */
int64_t xir__prefix_mask_end(const xir__prefix_mask *m, const int64_t *root, const int64_t *dims,
                             int64_t extent);

/* Masked-work skipping (lower.c emits it, work.c counts it). Finds the program's first prefix
 * mask M (xir__prefix_mask_of) whose end depends on a root coordinate, and marks in skip[] (one
 * byte per node) the consumers whose loop over the mask's axis X runs over [0, end) only:
 *  - a reduction with a rank-0 result, or a store, whose tile is 1-D over X, and
 *  - whose expression, at the masked positions, is a per-root-program value: every 1-D node on the
 *    way from the consumer to M is an elementwise op whose other operands are rank-0 values (M
 *    itself is the constant fill there), so that value can be computed once per unit.
 * A skipped store writes that value over [end, extent); a skipped reduction leaves [end, extent)
 * out when the value is its identity (sum ±0, max −inf, min +inf), checked at run time, else runs
 * over the whole axis. An expensive tile that several consumers share (lower.c stores it in the
 * first one and reloads it in the others) keeps its first consumer unskipped unless every later
 * one is a skipped store. Returns M, or -1 (skip[] all 0) when nothing is skipped; *m (may be
 * NULL) receives the mask. Returns -2 when out of memory. */
int xir__mask_skips(const xir_program *p, uint8_t *skip, xir__prefix_mask *m);

/* Next-row prefetch (prefetch.c; lower.c emits it for ℓ ≥ W, one root program per unit). When
 * the body has at least two consumer loops over the inner axis X (reductions to a scalar of a
 * 1-D tile over X, stores of a 1-D slice over X), marks in pf[] (one byte per node) the loads
 * that read one contiguous row along X whose place moves with root axis `fast` (the fastest axis
 * of the candidate's perm): the last index is the slice over X, one index is root(fast), the
 * others are root indices or root-invariant values (one load per buffer and index list). Returns
 * the consumer loop that prefetches those loads' rows for the next root program: the first later
 * loop with the most vector math, else (math_only 0) the last; -1 when nothing is marked or
 * (math_only 1) no later loop evaluates vector math; -2 when out of memory. */
int xir__next_row_loads(const xir_program *p, int X, int fast, int math_only, uint8_t *pf);

/* Typing rules of the op table. */
enum {
  XIR_TY_LEAF, XIR_TY_IOTA, XIR_TY_LOAD, XIR_TY_STORE, XIR_TY_REDUCE, XIR_TY_TOF32,
  XIR_TY_NUM1, XIR_TY_F1, XIR_TY_NUM2, XIR_TY_I2, XIR_TY_F2, XIR_TY_CMP, XIR_TY_BOOL2,
  XIR_TY_BOOL1, XIR_TY_F3, XIR_TY_SELECT
};

/* Per-op static facts from the table. */
typedef struct xir_op_info {
  const char *name;
  int nargs;
  int typing;
} xir_op_info;
extern const xir_op_info xir__op_info[XIR_OP_COUNT_];

#endif

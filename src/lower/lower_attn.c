/* lower_attn.c — the attention mapping: one block = one tile of n = hb·qb query rows (hb query
 * heads sharing one K/V head × qb consecutive queries), online softmax over key blocks.
 *
 *   xir_kernel(args, tile_begin, tile_end):
 *     for tile t:  (b, head block, query block) = t in the bridge's order; g = h0 / E
 *       [vec q] qT[d][λ] = q[b, h0 + λ / qb, i0 + λ % qb, d]         (the tile's rows as lanes)
 *       m[λ] = −inf, l[λ] = 0, acc[λ][:] = 0
 *       for key block [k0, k0 + kn), kn ≤ XIR_ATTN_KEY_BLOCK:
 *         S:   s[j][λ] = (Σ_d k[b, g, j, d] · q[λ, d]) · sc          vec q: lanes λ, k broadcast,
 *              JR keys × NV packets of accumulators over d in order; vec d: along d, one vector
 *              per (key, row), W of them summed across lanes by a fixed tree (lane_sums)
 *         softmax (lanes λ): m' = max(m, max_j s[j]); ms = m' == −inf ? 0 : m';
 *              α = exp(m − ms); p[j] = exp(s[j] − ms) (over s); l = l·α + Σ_j p[j] (j in order)
 *         PV:  acc[λ][:] = acc[λ][:]·α[λ] + Σ_j p[j][λ] · v[b, g, k0 + j, :]   (along DV; RR rows
 *              × CB vectors of accumulators, keys in order)
 *       o[b, h, i, :] = l == 0 ? 0 : acc / l        for the rows that exist (i < Q)
 *
 * Every order of summation is fixed by the candidate (W, vec, qb, hb) and the shape: results
 * do not depend on the task grain. Rows past Q are clamped onto Q − 1 (loads stay in bounds) and
 * never stored; padding lanes compute finite garbage that is never stored. B, Q and K (the tile
 * count, the row clamp, the key loop and the causal end) are launch-time values read from the
 * argument block, as are every buffer's strides (a K/V view into a larger cache); HQ, HKV, D and
 * DV are compile-time (the candidate's fixed_dims, src/bridge/attn.c). */
#include <llvm-c/Core.h>
#include <math.h>
#include <string.h>

#include "ir/attn_form.h"
#include "lower/irutil.h"
#include "lower/lower.h"
#include "lower/vmath.h"

enum { MAXROWS = 32, MAXJR = 16, MAXCB = 8, MAXRR = 16 };

typedef struct al {
  const xir_program *p;
  const xir_shape *sh;
  const xir_candidate *c;
  xir__attn_form f;
  xir_diag *d;
  xir_status st;
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMValueRef fn;
  xir__vm *vm;
  LLVMTypeRef f32, i64, i32, i1, ptr, vf, vb;
  unsigned W;
  int fma;
  LLVMValueRef buf[XIR_MAX_PARAMS], scal[XIR_MAX_PARAMS];
  LLVMValueRef dimv[XIR_MAX_DIMS];                 /* every dim: a constant or a launch slot */
  LLVMValueRef stride[XIR_MAX_PARAMS][XIR_MAX_RANK]; /* element strides of the buffers */
  LLVMValueRef *sval; /* per node: emitted scalar values */
} al;

static LLVMValueRef ci64(al *A, int64_t v) { return LLVMConstInt(A->i64, (unsigned long long)v, 1); }
static LLVMValueRef ci32(al *A, unsigned v) { return LLVMConstInt(A->i32, v, 0); }
static LLVMValueRef cf32(al *A, double v) { return LLVMConstReal(A->f32, v); }

/* The extent of a dim: a constant for a compile-time dim (the candidate's fixed_dims: HQ, HKV,
 * D, DV), else the value in its launch slot (B, Q, K). */
static LLVMValueRef dim_value(al *A, int dim) { return A->dimv[dim]; }

static LLVMValueRef splat(al *A, LLVMValueRef x) { return xir__ir_splat(A->b, x, A->W); }

static LLVMValueRef intrinsic(al *A, const char *name, LLVMTypeRef *tys, unsigned ntys,
                              LLVMValueRef *args, unsigned nargs) {
  return xir__ir_intrinsic(A->b, A->mod, name, tys, ntys, args, nargs);
}

/* a·b + c: one exactly rounded fma where the host has it (as vmath), else fmul and fadd. */
static LLVMValueRef fmadd(al *A, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  if (!A->fma) return LLVMBuildFAdd(A->b, LLVMBuildFMul(A->b, a, b, ""), c, "");
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef args[3] = {a, b, c};
  return intrinsic(A, "llvm.fma", &t, 1, args, 3);
}

static LLVMValueRef vmaximum(al *A, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef args[2] = {a, b};
  return intrinsic(A, "llvm.maximum", &t, 1, args, 2);
}

/* a > b ? a : b — one vmaxps on x86, where llvm.maximum takes five instructions (NaN and signed
 * zeros). For the block's max of the scores only: a NaN score it may drop still makes that row's
 * p NaN, so the row is NaN as in the oracle, and the sign of a zero max does not change any
 * s − m. Not commutative for NaN and ±0, but the order is fixed by the candidate. */
static LLVMValueRef vmax_fast(al *A, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(A->b, LLVMBuildFCmp(A->b, LLVMRealOGT, a, b, ""), a, b, "");
}

static LLVMValueRef vexp(al *A, LLVMValueRef x) {
  if (A->W != 1) return xir__vm_call(A->vm, XIR__VM_EXP, x, NULL);
  LLVMValueRef e = LLVMBuildExtractElement(A->b, x, ci32(A, 0), "");
  LLVMValueRef r = xir__vm_call(A->vm, XIR__VM_EXP, e, NULL);
  return LLVMBuildInsertElement(A->b, LLVMGetPoison(A->vf), r, ci32(A, 0), "");
}

static LLVMValueRef gep(al *A, LLVMValueRef base, LLVMValueRef idx) {
  return LLVMBuildGEP2(A->b, A->f32, base, &idx, 1, "");
}
static LLVMValueRef gepc(al *A, LLVMValueRef base, LLVMValueRef idx, int64_t add) {
  return gep(A, base, add ? LLVMBuildAdd(A->b, idx, ci64(A, add), "") : idx);
}

/* A hint that the line at ptr is read soon (llvm.prefetch, read, into L1: locality 3). It never
 * faults; the callers still keep it inside the buffer (buf_end): the memory past the last key of
 * K or V may be another buffer that another core writes, the output in the benchmarks. */
static void prefetch(al *A, LLVMValueRef ptr) {
  LLVMTypeRef t = A->ptr;
  LLVMValueRef args[4] = {ptr, ci32(A, 0), ci32(A, 3), ci32(A, 1)};
  intrinsic(A, "llvm.prefetch", &t, 1, args, 4);
}

static LLVMValueRef load(al *A, LLVMTypeRef t, LLVMValueRef ptr) {
  LLVMValueRef x = LLVMBuildLoad2(A->b, t, ptr, "");
  LLVMSetAlignment(x, 4);
  return x;
}
static void store(al *A, LLVMValueRef v, LLVMValueRef ptr) {
  LLVMSetAlignment(LLVMBuildStore(A->b, v, ptr), 4);
}

static LLVMValueRef lane_mask(al *A, unsigned n) {
  LLVMValueRef m[16];
  for (unsigned i = 0; i < A->W; i++) m[i] = LLVMConstInt(A->i1, i < n, 0);
  return LLVMConstVector(m, A->W);
}

/* The first n lanes from ptr (the others 0): a plain load when n = W, else a masked one. */
static LLVMValueRef vload_n(al *A, LLVMValueRef ptr, unsigned n) {
  if (n >= A->W) return load(A, A->vf, ptr);
  LLVMTypeRef tys[2] = {A->vf, A->ptr};
  LLVMValueRef args[4] = {ptr, ci32(A, 4), lane_mask(A, n), LLVMConstNull(A->vf)};
  return intrinsic(A, "llvm.masked.load", tys, 2, args, 4);
}
static void vstore_n(al *A, LLVMValueRef v, LLVMValueRef ptr, unsigned n) {
  if (n >= A->W) {
    store(A, v, ptr);
    return;
  }
  LLVMTypeRef tys[2] = {A->vf, A->ptr};
  LLVMValueRef args[4] = {v, ptr, ci32(A, 4), lane_mask(A, n)};
  intrinsic(A, "llvm.masked.store", tys, 2, args, 4);
}

static LLVMValueRef entry_alloca(al *A, LLVMTypeRef t, const char *name) {
  return xir__ir_entry_alloca(A->ctx, A->fn, t, name);
}
static LLVMValueRef scratch(al *A, uint64_t floats, const char *name) {
  LLVMValueRef a = entry_alloca(A, LLVMArrayType2(A->f32, floats ? floats : 1), name);
  LLVMSetAlignment(a, 64);
  return a;
}

/* Counted loops: i from `from` while i < to, by `step`; the counter lives in an alloca. */
typedef struct loop {
  LLVMValueRef var, i;
  LLVMBasicBlockRef head, exit;
  int64_t step;
} loop;

static void loop_begin(al *A, loop *lp, LLVMValueRef from, LLVMValueRef to, int64_t step) {
  lp->var = entry_alloca(A, A->i64, "i");
  lp->step = step;
  LLVMBuildStore(A->b, from, lp->var);
  lp->head = LLVMAppendBasicBlockInContext(A->ctx, A->fn, "head");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(A->ctx, A->fn, "body");
  lp->exit = LLVMAppendBasicBlockInContext(A->ctx, A->fn, "exit");
  LLVMBuildBr(A->b, lp->head);
  LLVMPositionBuilderAtEnd(A->b, lp->head);
  LLVMValueRef i = LLVMBuildLoad2(A->b, A->i64, lp->var, "");
  LLVMBuildCondBr(A->b, LLVMBuildICmp(A->b, LLVMIntSLT, i, to, ""), body, lp->exit);
  LLVMPositionBuilderAtEnd(A->b, body);
  lp->i = LLVMBuildLoad2(A->b, A->i64, lp->var, "");
}
static void loop_end(al *A, loop *lp) {
  LLVMBuildStore(A->b, LLVMBuildAdd(A->b, lp->i, ci64(A, lp->step), ""), lp->var);
  LLVMBuildBr(A->b, lp->head);
  LLVMPositionBuilderAtEnd(A->b, lp->exit);
}

static LLVMValueRef imin(al *A, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(A->b, LLVMBuildICmp(A->b, LLVMIntSLT, a, b, ""), a, b, "");
}

/* One past the last element of buffer i (xir__ir_buffer_end). */
static LLVMValueRef buf_end(al *A, int i) {
  const xir_param *q = &A->p->params[i];
  LLVMValueRef dv[XIR_MAX_RANK];
  for (int r = 0; r < q->rank; r++) dv[r] = dim_value(A, q->dims[r]);
  return xir__ir_buffer_end(A->b, A->i64, q->rank, dv, A->stride[i]);
}

static LLVMValueRef floordiv(al *A, LLVMValueRef a, LLVMValueRef b, int rem) {
  return xir__ir_floordiv(A->b, a, b, ci64(A, 1), rem);
}

/* A root-invariant rank-0 expression (xir__attn_scalar_ok), as a scalar. */
static LLVMValueRef scalar(al *A, int id) {
  if (A->sval[id]) return A->sval[id];
  const xir_node *n = &A->p->nodes[id];
  LLVMValueRef x = n->nargs > 0 ? scalar(A, n->args[0]) : NULL;
  LLVMValueRef y = n->nargs > 1 ? scalar(A, n->args[1]) : NULL;
  LLVMValueRef z = n->nargs > 2 ? scalar(A, n->args[2]) : NULL;
  int in = n->nargs > 0 ? A->p->nodes[n->args[0]].type.elem : XIR_F32;
  int integer = in == XIR_I64;
  LLVMTypeRef t = x ? LLVMTypeOf(x) : A->f32;
  LLVMValueRef r = NULL;
  switch (n->op) {
    case XIR_OP_CONST:
      r = n->type.elem == XIR_I64 ? ci64(A, n->imm.i) : cf32(A, n->imm.f);
      break;
    case XIR_OP_DIM: r = dim_value(A, n->ref); break;
    case XIR_OP_PARAM: r = A->scal[n->ref]; break;
    case XIR_OP_TOF32:
      r = in == XIR_BOOL ? LLVMBuildUIToFP(A->b, x, A->f32, "")
          : in == XIR_I64 ? LLVMBuildSIToFP(A->b, x, A->f32, "") : x;
      break;
    case XIR_OP_NEG: r = integer ? LLVMBuildNeg(A->b, x, "") : LLVMBuildFNeg(A->b, x, ""); break;
    case XIR_OP_ABS:
      r = integer ? LLVMBuildSelect(A->b, LLVMBuildICmp(A->b, LLVMIntSLT, x, ci64(A, 0), ""),
                                    LLVMBuildNeg(A->b, x, ""), x, "")
                  : intrinsic(A, "llvm.fabs", &t, 1, &x, 1);
      break;
    case XIR_OP_SQRT: r = intrinsic(A, "llvm.sqrt", &t, 1, &x, 1); break;
    case XIR_OP_RSQRT: /* exactly 1/sqrt(x), as vmath */
      r = LLVMBuildFDiv(A->b, cf32(A, 1.0), intrinsic(A, "llvm.sqrt", &t, 1, &x, 1), "");
      break;
    case XIR_OP_ADD: r = integer ? LLVMBuildAdd(A->b, x, y, "") : LLVMBuildFAdd(A->b, x, y, ""); break;
    case XIR_OP_SUB: r = integer ? LLVMBuildSub(A->b, x, y, "") : LLVMBuildFSub(A->b, x, y, ""); break;
    case XIR_OP_MUL: r = integer ? LLVMBuildMul(A->b, x, y, "") : LLVMBuildFMul(A->b, x, y, ""); break;
    case XIR_OP_DIV: r = integer ? floordiv(A, x, y, 0) : LLVMBuildFDiv(A->b, x, y, ""); break;
    case XIR_OP_MAX: case XIR_OP_MIN:
      if (integer) {
        LLVMIntPredicate pr = n->op == XIR_OP_MAX ? LLVMIntSGT : LLVMIntSLT;
        r = LLVMBuildSelect(A->b, LLVMBuildICmp(A->b, pr, x, y, ""), x, y, "");
      } else {
        LLVMValueRef args[2] = {x, y};
        r = intrinsic(A, n->op == XIR_OP_MAX ? "llvm.maximum" : "llvm.minimum", &t, 1, args, 2);
      }
      break;
    case XIR_OP_LT: case XIR_OP_LE: case XIR_OP_GT: case XIR_OP_GE: case XIR_OP_EQ: case XIR_OP_NE:
      r = xir__ir_cmp(A->b, n->op, integer, x, y);
      break;
    case XIR_OP_AND: r = LLVMBuildAnd(A->b, x, y, ""); break;
    case XIR_OP_OR: r = LLVMBuildOr(A->b, x, y, ""); break;
    case XIR_OP_NOT: r = LLVMBuildNot(A->b, x, ""); break;
    case XIR_OP_SELECT: r = LLVMBuildSelect(A->b, x, y, z, ""); break;
    default:
      A->st = xir__err(A->d, XIR_ERR_UNSUPPORTED, "op '%s' in attention's scale",
                       xir__op_info[n->op].name);
      r = cf32(A, 0);
  }
  A->sval[id] = r;
  return r;
}

/* The mask: lanes whose end ≤ key j get −inf (ends NULL: no mask). */
static LLVMValueRef mask_scores(al *A, LLVMValueRef s, LLVMValueRef ends, LLVMValueRef j) {
  if (!ends) return s;
  LLVMValueRef dead = LLVMBuildICmp(A->b, LLVMIntSGE, splat(A, j), ends, "");
  return LLVMBuildSelect(A->b, dead, splat(A, cf32(A, -INFINITY)), s, "");
}

/* Folds the key slots of a packed score vector: lane l holds slot l / np of row l % np; after
 * log2(W / np) butterfly steps (lane l with lane l ^ step, step = np, 2np, …) every lane holds
 * the max (is_max) or the sum of its row's slots, the same bits in every slot (each step is
 * commutative). np = W: nothing to fold. */
static LLVMValueRef fold_slots(al *A, LLVMValueRef x, unsigned np, int is_max) {
  for (unsigned step = np; step < A->W; step *= 2) {
    LLVMValueRef ix[16];
    for (unsigned l = 0; l < A->W; l++) ix[l] = ci32(A, l ^ step);
    LLVMValueRef y = LLVMBuildShuffleVector(A->b, x, LLVMGetPoison(A->vf), LLVMConstVector(ix, A->W), "");
    x = is_max ? vmaximum(A, x, y) : LLVMBuildFAdd(A->b, x, y, "");
  }
  return x;
}

/* Transposes the W × W matrix whose rows are a[0..W) in place (a[c][r] = old a[r][c]): log2(W)
 * stages, each swapping the off-diagonal blocks of size bs (W/2, …, 1) with two-source shuffles. */
static void transpose(al *A, LLVMValueRef *a) {
  unsigned W = A->W;
  for (unsigned bs = W / 2; bs >= 1; bs /= 2) {
    LLVMValueRef lo[16], hi[16];
    for (unsigned l = 0; l < W; l++) {
      lo[l] = ci32(A, l & bs ? W + l - bs : l);
      hi[l] = ci32(A, l & bs ? W + l : l + bs);
    }
    LLVMValueRef ml = LLVMConstVector(lo, W), mh = LLVMConstVector(hi, W);
    for (unsigned r = 0; r < W; r++) {
      if (r & bs) continue;
      LLVMValueRef x = a[r], y = a[r | bs];
      a[r] = LLVMBuildShuffleVector(A->b, x, y, ml, "");
      a[r | bs] = LLVMBuildShuffleVector(A->b, x, y, mh, "");
    }
  }
}

/* m ≤ W vectors a[0..m) → one vector whose lane i is the sum of a[i]'s lanes: log2(W) levels of
 * "fold each lane group in half and pair two vectors" (2 shuffles and an add per pair), then one
 * shuffle that puts the sums in order. The tree is fixed by W: the same order every run. */
static LLVMValueRef lane_sums(al *A, const LLVMValueRef *a, unsigned m) {
  unsigned W = A->W;
  LLVMValueRef cur[16];
  int orig[16][16];
  for (unsigned i = 0; i < W; i++) {
    cur[i] = i < m ? a[i] : LLVMConstNull(A->vf);
    orig[i][0] = (int)i;
  }
  unsigned nv = W, gs = W, ng = 1;
  while (gs > 1) {
    unsigned h = gs / 2;
    int norig[16][16];
    for (unsigned i = 0; i < nv / 2; i++) {
      LLVMValueRef lo[16], hi[16];
      for (unsigned o = 0; o < W; o++) {
        unsigned ob = o / h, src = ob % 2, sg = ob / 2, e = sg * gs + o % h + src * W;
        lo[o] = ci32(A, e);
        hi[o] = ci32(A, e + h);
      }
      LLVMValueRef x = cur[2 * i], y = cur[2 * i + 1];
      LLVMValueRef sl = LLVMBuildShuffleVector(A->b, x, y, LLVMConstVector(lo, W), "");
      LLVMValueRef sh = LLVMBuildShuffleVector(A->b, x, y, LLVMConstVector(hi, W), "");
      cur[i] = LLVMBuildFAdd(A->b, sl, sh, "");
      for (unsigned ob = 0; ob < 2 * ng; ob++) norig[i][ob] = orig[2 * i + ob % 2][ob / 2];
    }
    nv /= 2;
    gs = h;
    ng *= 2;
    memcpy(orig, norig, sizeof orig);
  }
  LLVMValueRef idx[16];
  for (unsigned want = 0; want < W; want++)
    for (unsigned o = 0; o < W; o++)
      if (orig[0][o] == (int)want) idx[want] = ci32(A, o);
  return LLVMBuildShuffleVector(A->b, cur[0], LLVMGetPoison(A->vf), LLVMConstVector(idx, W), "");
}

xir_status xir__lower_attn(const xir_program *p, const xir_shape *shape, const xir_candidate *c,
                           const xir__cvt_target *t, LLVMModuleRef mod, const char *entry,
                           xir_diag *d) {
  al A;
  memset(&A, 0, sizeof A);
  A.p = p;
  A.sh = shape;
  A.c = c;
  A.d = d;
  A.mod = mod;
  A.ctx = LLVMGetModuleContext(mod);
  A.W = c->W;
  if (!xir__attn_form_of(p, shape, &A.f))
    return xir__err(d, XIR_ERR_UNSUPPORTED, "'%s' is not the attention chain", p->name);
  const xir__attn_form *F = &A.f;
  const int64_t *dims = shape->dims;
  const int need[4] = {F->dim_d, F->dim_dv, F->dim_hq, F->dim_hkv};
  for (int i = 0; i < 4; i++)
    if (!(c->fixed_dims >> need[i] & 1))
      return xir__err(d, XIR_ERR_UNSUPPORTED, "the attention mapping needs %s compile-time",
                      p->dims[need[i]]);
  int64_t Dd = dims[F->dim_d], DV = dims[F->dim_dv], HQ = dims[F->dim_hq], HKV = dims[F->dim_hkv];
  int64_t E = F->group;
  unsigned W = A.W, qb = c->attn_qb, hb = c->attn_hb;
  xir__attn_geom G;
  xir__attn_geometry(W, c->attn_vec == XIR_ATTN_VEC_D, qb, hb, Dd, DV, &G);
  unsigned n = G.rows, NV = G.nv, NVL = G.lanes, JR = G.jr;
  if (n > MAXROWS || JR > MAXJR)
    return xir__err(d, XIR_ERR_UNSUPPORTED, "a tile of %u rows is above the lowering's %d", n, MAXROWS);
  A.f32 = LLVMFloatTypeInContext(A.ctx);
  A.i64 = LLVMInt64TypeInContext(A.ctx);
  A.i32 = LLVMInt32TypeInContext(A.ctx);
  A.i1 = LLVMInt1TypeInContext(A.ctx);
  A.ptr = LLVMPointerTypeInContext(A.ctx, 0);
  A.vf = LLVMVectorType(A.f32, W);
  A.vb = LLVMVectorType(A.i1, W);
  A.sval = xir__calloc((size_t)p->nnodes + 1, sizeof(LLVMValueRef));
  if (!A.sval) return xir__err(d, XIR_ERR_NOMEM, "out of memory lowering '%s'", p->name);
  LLVMTypeRef params[3] = {A.ptr, A.i64, A.i64};
  A.fn = LLVMAddFunction(mod, entry, LLVMFunctionType(A.i32, params, 3, 0));
  xir__vm_function_attrs(A.fn, W);
  A.b = LLVMCreateBuilderInContext(A.ctx);
  LLVMPositionBuilderAtEnd(A.b, LLVMAppendBasicBlockInContext(A.ctx, A.fn, "entry"));
  xir_status st = xir__vm_create(mod, A.b, &A.vm, d);
  if (st) goto done;
  A.fma = t->fma; /* what the JIT's target has (as lower.c) */
  xir__vm_set_fma(A.vm, A.fma);
  xir__vm_set_avx512(A.vm, t->avx512 && t->avx512dq);
  LLVMValueRef args = LLVMGetParam(A.fn, 0);
  for (int i = 0; i < p->nparams; i++) {
    LLVMValueRef idx = ci64(&A, i), slot = LLVMBuildGEP2(A.b, A.i64, args, &idx, 1, "");
    if (p->params[i].kind == XIR_PARAM_BUFFER) A.buf[i] = LLVMBuildLoad2(A.b, A.ptr, slot, "");
    else A.scal[i] = LLVMBuildLoad2(A.b, p->params[i].elem == XIR_I64 ? A.i64 : A.f32, slot, "");
  }
  /* the launch-time dims and the buffers' strides, from the argument block (lower.h's layout) */
  xir__arg_layout lay;
  xir__arg_layout_make(p, c->fixed_dims, &lay);
  for (int i = 0; i < p->ndims; i++) {
    if (lay.dim_slot[i] < 0) {
      A.dimv[i] = ci64(&A, dims[i]);
      continue;
    }
    LLVMValueRef idx = ci64(&A, lay.dim_slot[i]);
    A.dimv[i] = LLVMBuildLoad2(A.b, A.i64, LLVMBuildGEP2(A.b, A.i64, args, &idx, 1, ""), p->dims[i]);
  }
  for (int i = 0; i < p->nparams; i++) {
    const xir_param *q = &p->params[i];
    if (q->kind != XIR_PARAM_BUFFER) continue;
    for (int r = 0; r < q->rank; r++) {
      if (r == q->rank - 1 || lay.stride_slot[i] < 0) {
        A.stride[i][r] = ci64(&A, 1);
        continue;
      }
      LLVMValueRef idx = ci64(&A, lay.stride_slot[i] + r);
      A.stride[i][r] = LLVMBuildLoad2(A.b, A.i64, LLVMBuildGEP2(A.b, A.i64, args, &idx, 1, ""), "");
    }
  }
  LLVMValueRef qbuf = A.buf[F->q], kbuf = A.buf[F->k], vbuf = A.buf[F->v], obuf = A.buf[F->o];
  LLVMValueRef sc = splat(&A, scalar(&A, F->scale));
  LLVMValueRef Bv = dim_value(&A, F->dim_b), Qv = dim_value(&A, F->dim_q), Kv = dim_value(&A, F->dim_k);
  (void)Bv; /* the batch extent bounds the tile count (the bridge's); tiles decompose by Q and HQ */
  int64_t KB = XIR_ATTN_KEY_BLOCK;
  uint64_t DVP = (uint64_t)G.cv * W;
  LLVMValueRef qT = G.vec_d ? NULL : scratch(&A, (uint64_t)Dd * NVL, "qT");
  LLVMValueRef sbuf = scratch(&A, (uint64_t)(KB + MAXJR) * NVL, "s");
  LLVMValueRef accb = scratch(&A, (uint64_t)NVL * DVP, "acc");
  LLVMValueRef mb = scratch(&A, NVL, "m"), lb = scratch(&A, NVL, "l"), alb = scratch(&A, NVL, "alpha");
  LLVMValueRef zero = LLVMConstNull(A.vf), ninf = splat(&A, cf32(&A, -INFINITY));
  /* tiles */
  loop tl;
  loop_begin(&A, &tl, LLVMGetParam(A.fn, 1), LLVMGetParam(A.fn, 2), 1);
  LLVMValueRef nqb = LLVMBuildSDiv(A.b, LLVMBuildAdd(A.b, Qv, ci64(&A, qb - 1), ""), ci64(&A, qb), "");
  LLVMValueRef ti = LLVMBuildSRem(A.b, tl.i, nqb, ""), rest = LLVMBuildSDiv(A.b, tl.i, nqb, "");
  LLVMValueRef th = LLVMBuildSRem(A.b, rest, ci64(&A, HQ / hb), "");
  LLVMValueRef tb = LLVMBuildSDiv(A.b, rest, ci64(&A, HQ / hb), "");
  LLVMValueRef h0 = LLVMBuildMul(A.b, th, ci64(&A, hb), ""), i0 = LLVMBuildMul(A.b, ti, ci64(&A, qb), "");
  LLVMValueRef g = imin(&A, LLVMBuildSDiv(A.b, h0, ci64(&A, E), ""), ci64(&A, HKV - 1));
  LLVMValueRef *ks = A.stride[F->k], *vs = A.stride[F->v], *qs = A.stride[F->q], *os = A.stride[F->o];
  LLVMValueRef kbase = LLVMBuildAdd(A.b, LLVMBuildMul(A.b, tb, ks[0], ""), LLVMBuildMul(A.b, g, ks[1], ""), "");
  LLVMValueRef vbase = LLVMBuildAdd(A.b, LLVMBuildMul(A.b, tb, vs[0], ""), LLVMBuildMul(A.b, g, vs[1], ""), "");
  LLVMValueRef kst = ks[2], vst = vs[2]; /* the row strides: key j's row at base + j·stride */
  LLVMValueRef kbend = buf_end(&A, F->k), vbend = buf_end(&A, F->v);
  LLVMValueRef qrow[MAXROWS], orow[MAXROWS], valid[MAXROWS];
  LLVMValueRef Qm1 = LLVMBuildSub(A.b, Qv, ci64(&A, 1), "");
  for (unsigned lam = 0; lam < n; lam++) {
    LLVMValueRef i = LLVMBuildAdd(A.b, i0, ci64(&A, lam % qb), "");
    valid[lam] = LLVMBuildICmp(A.b, LLVMIntSLT, i, Qv, "");
    LLVMValueRef h = LLVMBuildAdd(A.b, h0, ci64(&A, lam / qb), ""), ic = imin(&A, i, Qm1);
    qrow[lam] = LLVMBuildAdd(A.b, LLVMBuildAdd(A.b, LLVMBuildMul(A.b, tb, qs[0], ""),
                                               LLVMBuildMul(A.b, h, qs[1], ""), ""),
                             LLVMBuildMul(A.b, ic, qs[2], ""), "");
    orow[lam] = LLVMBuildAdd(A.b, LLVMBuildAdd(A.b, LLVMBuildMul(A.b, tb, os[0], ""),
                                               LLVMBuildMul(A.b, h, os[1], ""), ""),
                             LLVMBuildMul(A.b, ic, os[2], ""), "");
  }
  /* the mask (causal): keys j ≥ end[λ] are −inf for row λ; the tile runs over [0, kmax) only,
   * kmax the largest end of its rows that exist — keys past it are never loaded */
  LLVMValueRef endl[MAXROWS], kmax = Kv;
  if (F->mask >= 0) {
    LLVMValueRef base = ci64(&A, F->pm.c0);
    for (int dd = 0; dd < XIR_MAX_DIMS; dd++)
      if (F->pm.dim_coef[dd])
        base = LLVMBuildAdd(A.b, base, LLVMBuildMul(A.b, dim_value(&A, dd), ci64(&A, F->pm.dim_coef[dd]), ""), "");
    kmax = ci64(&A, 0);
    for (unsigned lam = 0; lam < n; lam++) {
      LLVMValueRef i = imin(&A, LLVMBuildAdd(A.b, i0, ci64(&A, lam % qb), ""), Qm1);
      LLVMValueRef e = LLVMBuildAdd(A.b, base, LLVMBuildMul(A.b, i, ci64(&A, F->pm.root_coef[F->ax_i]), ""), "");
      e = imin(&A, e, Kv);
      e = LLVMBuildSelect(A.b, LLVMBuildICmp(A.b, LLVMIntSLT, e, ci64(&A, 0), ""), ci64(&A, 0), e, "");
      endl[lam] = e;
      LLVMValueRef live = LLVMBuildSelect(A.b, valid[lam], e, ci64(&A, 0), "");
      kmax = LLVMBuildSelect(A.b, LLVMBuildICmp(A.b, LLVMIntSGT, live, kmax, ""), live, kmax, "");
    }
  }
  /* pack q transposed (vec q): W rows × W columns at a time, loaded as vectors and transposed
   * in registers (rows past the tile and columns past D are zero; padding lanes stay 0) */
  if (qT)
    for (unsigned v = 0; v < NV; v++) {
      int64_t full = Dd / (int64_t)W;
      for (int part = 0; part < 2; part++) {
        unsigned ncol = part == 0 ? W : (unsigned)(Dd % W);
        if ((part == 0 && full == 0) || ncol == 0) continue;
        loop cl;
        LLVMValueRef d0;
        if (part == 0) {
          loop_begin(&A, &cl, ci64(&A, 0), ci64(&A, full), 1);
          d0 = LLVMBuildMul(A.b, cl.i, ci64(&A, W), "");
        } else {
          d0 = ci64(&A, full * (int64_t)W);
        }
        LLVMValueRef rows[16];
        for (unsigned r = 0; r < W; r++) {
          unsigned lam = v * W + r;
          rows[r] = lam < n ? vload_n(&A, gep(&A, qbuf, LLVMBuildAdd(A.b, qrow[lam], d0, "")), ncol)
                            : zero;
        }
        transpose(&A, rows);
        for (unsigned cc = 0; cc < ncol; cc++)
          store(&A, rows[cc], gepc(&A, qT, LLVMBuildMul(A.b, LLVMBuildAdd(A.b, d0, ci64(&A, cc), ""), ci64(&A, NVL), ""), v * W));
        if (part == 0) loop_end(&A, &cl);
      }
    }
  for (unsigned v = 0; v < NV; v++) {
    store(&A, ninf, gepc(&A, mb, ci64(&A, 0), v * W));
    store(&A, zero, gepc(&A, lb, ci64(&A, 0), v * W));
  }
  {
    loop z;
    loop_begin(&A, &z, ci64(&A, 0), ci64(&A, (int64_t)(G.rows_pv * DVP)), W);
    store(&A, zero, gep(&A, accb, z.i));
    loop_end(&A, &z);
  }
  /* key blocks */
  loop kl;
  loop_begin(&A, &kl, ci64(&A, 0), kmax, KB);
  LLVMValueRef k0 = kl.i;
  LLVMValueRef kn = imin(&A, ci64(&A, KB), LLVMBuildSub(A.b, kmax, k0, ""));
  LLVMValueRef kend = LLVMBuildAdd(A.b, k0, kn, ""), Km1 = LLVMBuildSub(A.b, kend, ci64(&A, 1), "");
  /* the ends as vectors over the lanes of a score row (vec d: lane λ holds row λ mod npad) */
  LLVMValueRef endv[2] = {NULL, NULL};
  if (F->mask >= 0)
    for (unsigned v = 0; v < NV; v++) {
      LLVMValueRef e = LLVMGetPoison(LLVMVectorType(A.i64, W));
      for (unsigned l = 0; l < W; l++) {
        unsigned lam = G.vec_d ? l % G.npad : v * W + l;
        e = LLVMBuildInsertElement(A.b, e, lam < n ? endl[lam] : ci64(&A, 0), ci32(&A, l), "");
      }
      endv[v] = e;
    }
  /* the block's running max per packet of lanes, folded in as the scores are written (max is
   * exact and commutative: any order gives the same bits; the clamped keys of the last group
   * repeat key kend − 1 or are −inf, so they do not change it) */
  LLVMValueRef bmx[2];
  for (unsigned v = 0; v < NV; v++) {
    bmx[v] = entry_alloca(&A, A.vf, "bmx");
    LLVMBuildStore(A.b, ninf, bmx[v]);
  }
  /* S: scores of keys [k0, kend) in groups of JR (the last group's keys clamped onto kend − 1:
   * no key past the block is loaded; their rows of s past kn are never read by the softmax) */
  {
    loop jl;
    loop_begin(&A, &jl, k0, kend, JR);
    LLVMValueRef kptr[MAXJR], koff[MAXJR];
    for (unsigned r = 0; r < JR; r++) {
      LLVMValueRef j = imin(&A, LLVMBuildAdd(A.b, jl.i, ci64(&A, r), ""), Km1);
      koff[r] = LLVMBuildAdd(A.b, kbase, LLVMBuildMul(A.b, j, kst, ""), "");
      kptr[r] = gep(&A, kbuf, koff[r]);
    }
    /* the keys XIR_ATTN_PREFETCH_KEYS ahead: one prefetch per 64-byte line of each K row (past
     * the end of K: the current row instead, in L1) */
    for (unsigned r = 0; r < JR; r++) {
      LLVMValueRef o = koff[r];
      LLVMValueRef op = LLVMBuildAdd(A.b, o, LLVMBuildMul(A.b, kst, ci64(&A, XIR_ATTN_PREFETCH_KEYS), ""), "");
      op = LLVMBuildSelect(A.b, LLVMBuildICmp(A.b, LLVMIntSLT, op, kbend, ""), op, o, "");
      LLVMValueRef pb = gep(&A, kbuf, op);
      for (int64_t e = 0; e < Dd; e += XIR_ATTN_PREFETCH_LINE) prefetch(&A, gepc(&A, pb, ci64(&A, 0), e));
    }
    LLVMValueRef srow = LLVMBuildMul(A.b, LLVMBuildSub(A.b, jl.i, k0, ""), ci64(&A, NVL), "");
    LLVMValueRef accv[MAXJR * 2];
    unsigned nacc = G.vec_d ? JR * G.npad : JR * NV;
    LLVMValueRef slot[MAXJR * 2];
    for (unsigned a = 0; a < nacc; a++) {
      slot[a] = entry_alloca(&A, A.vf, "sacc");
      LLVMBuildStore(A.b, zero, slot[a]);
    }
    if (!G.vec_d) {
      loop dl;
      loop_begin(&A, &dl, ci64(&A, 0), ci64(&A, Dd), 1);
      LLVMValueRef qv[2];
      for (unsigned v = 0; v < NV; v++)
        qv[v] = load(&A, A.vf, gepc(&A, qT, LLVMBuildMul(A.b, dl.i, ci64(&A, NVL), ""), v * W));
      for (unsigned r = 0; r < JR; r++) {
        LLVMValueRef kx = splat(&A, load(&A, A.f32, LLVMBuildGEP2(A.b, A.f32, kptr[r], &dl.i, 1, "")));
        for (unsigned v = 0; v < NV; v++) {
          LLVMValueRef s = LLVMBuildLoad2(A.b, A.vf, slot[r * NV + v], "");
          LLVMBuildStore(A.b, fmadd(&A, kx, qv[v], s), slot[r * NV + v]);
        }
      }
      loop_end(&A, &dl);
      for (unsigned v = 0; v < NV; v++) {
        LLVMValueRef sv[MAXJR];
        for (unsigned r = 0; r < JR; r++) {
          LLVMValueRef s = LLVMBuildFMul(A.b, LLVMBuildLoad2(A.b, A.vf, slot[r * NV + v], ""), sc, "");
          s = mask_scores(&A, s, endv[v], LLVMBuildAdd(A.b, jl.i, ci64(&A, r), ""));
          store(&A, s, gepc(&A, sbuf, srow, (int64_t)(r * NVL + v * W)));
          sv[r] = s;
        }
        /* the group's max by a tree (independent maxima, one step of the running chain) */
        for (unsigned st = 1; st < JR; st *= 2)
          for (unsigned r = 0; r + st < JR; r += 2 * st) sv[r] = vmax_fast(&A, sv[r], sv[r + st]);
        LLVMBuildStore(A.b, vmax_fast(&A, LLVMBuildLoad2(A.b, A.vf, bmx[v], ""), sv[0]), bmx[v]);
      }
    } else {
      unsigned np = G.npad;
      LLVMValueRef qptr[16];
      for (unsigned t = 0; t < np; t++) qptr[t] = gep(&A, qbuf, qrow[t < n ? t : n - 1]);
      int64_t full = Dd / W;
      for (int part = 0; part < 2; part++) {
        unsigned valid_lanes = part == 0 ? W : (unsigned)(Dd % W);
        if ((part == 0 && full == 0) || (part == 1 && valid_lanes == 0)) continue;
        loop dl;
        LLVMValueRef off;
        if (part == 0) {
          loop_begin(&A, &dl, ci64(&A, 0), ci64(&A, full), 1);
          off = LLVMBuildMul(A.b, dl.i, ci64(&A, W), "");
        } else {
          off = ci64(&A, full * W);
        }
        LLVMValueRef kx[MAXJR], qx[16];
        for (unsigned r = 0; r < JR; r++)
          kx[r] = vload_n(&A, LLVMBuildGEP2(A.b, A.f32, kptr[r], &off, 1, ""), valid_lanes);
        for (unsigned t = 0; t < np; t++)
          qx[t] = vload_n(&A, LLVMBuildGEP2(A.b, A.f32, qptr[t], &off, 1, ""), valid_lanes);
        for (unsigned r = 0; r < JR; r++)
          for (unsigned t = 0; t < np; t++) {
            LLVMValueRef s = LLVMBuildLoad2(A.b, A.vf, slot[r * np + t], "");
            LLVMBuildStore(A.b, fmadd(&A, kx[r], qx[t], s), slot[r * np + t]);
          }
        if (part == 0) loop_end(&A, &dl);
      }
      for (unsigned a = 0; a < nacc; a++) accv[a] = LLVMBuildLoad2(A.b, A.vf, slot[a], "");
      /* the group's JR·np = W scores packed in one vector, lane r·np + t = (key r, row t); the
       * clamped keys past kend (and, with a mask, keys at or past a row's end) are −inf */
      LLVMValueRef sums = LLVMBuildFMul(A.b, lane_sums(&A, accv, nacc), sc, "");
      LLVMValueRef koff[16];
      for (unsigned l = 0; l < W; l++) koff[l] = ci64(&A, l / np);
      LLVMValueRef kj = LLVMBuildAdd(A.b, xir__ir_splat(A.b, jl.i, W), LLVMConstVector(koff, W), "");
      LLVMValueRef dead = LLVMBuildICmp(A.b, LLVMIntSGE, kj, xir__ir_splat(A.b, kend, W), "");
      if (endv[0]) dead = LLVMBuildOr(A.b, dead, LLVMBuildICmp(A.b, LLVMIntSGE, kj, endv[0], ""), "");
      sums = LLVMBuildSelect(A.b, dead, ninf, sums, "");
      store(&A, sums, gep(&A, sbuf, LLVMBuildMul(A.b, LLVMBuildSub(A.b, jl.i, k0, ""), ci64(&A, np), "")));
      LLVMBuildStore(A.b, vmax_fast(&A, LLVMBuildLoad2(A.b, A.vf, bmx[0], ""), sums), bmx[0]);
    }
    loop_end(&A, &jl);
  }
  /* softmax over the block, per lane: running max, rescale factor, exponentials, running sum.
   * vec q: one vector per key (lanes = rows); vec d: one vector per group of JR keys (lanes =
   * (key, row), packed), the max and the sum then folded across the JR key slots */
  LLVMValueRef nvec = G.vec_d ? LLVMBuildSDiv(A.b, LLVMBuildAdd(A.b, kn, ci64(&A, JR - 1), ""),
                                              ci64(&A, JR), "")
                              : kn;
  for (unsigned v = 0; v < NV; v++) {
    LLVMValueRef ls = entry_alloca(&A, A.vf, "ls");
    LLVMValueRef mold = load(&A, A.vf, gepc(&A, mb, ci64(&A, 0), v * W));
    LLVMValueRef mnew = vmaximum(&A, mold, fold_slots(&A, LLVMBuildLoad2(A.b, A.vf, bmx[v], ""),
                                                        G.vec_d ? G.npad : W, 1));
    LLVMValueRef msafe = LLVMBuildSelect(A.b, LLVMBuildFCmp(A.b, LLVMRealOEQ, mnew, ninf, ""), zero, mnew, "");
    LLVMValueRef alpha = vexp(&A, LLVMBuildFSub(A.b, mold, msafe, ""));
    LLVMBuildStore(A.b, zero, ls);
    loop el;
    loop_begin(&A, &el, ci64(&A, 0), nvec, 1);
    LLVMValueRef ep = gepc(&A, sbuf, LLVMBuildMul(A.b, el.i, ci64(&A, NVL), ""), v * W);
    LLVMValueRef pj = vexp(&A, LLVMBuildFSub(A.b, load(&A, A.vf, ep), msafe, ""));
    store(&A, pj, ep);
    LLVMBuildStore(A.b, LLVMBuildFAdd(A.b, LLVMBuildLoad2(A.b, A.vf, ls, ""), pj, ""), ls);
    loop_end(&A, &el);
    LLVMValueRef lp = gepc(&A, lb, ci64(&A, 0), v * W);
    LLVMValueRef lnew = LLVMBuildFAdd(A.b, LLVMBuildFMul(A.b, load(&A, A.vf, lp), alpha, ""),
                                      fold_slots(&A, LLVMBuildLoad2(A.b, A.vf, ls, ""),
                                                 G.vec_d ? G.npad : W, 0), "");
    store(&A, lnew, lp);
    store(&A, mnew, gepc(&A, mb, ci64(&A, 0), v * W));
    store(&A, alpha, gepc(&A, alb, ci64(&A, 0), v * W));
  }
  /* PV: acc[λ] = acc[λ]·α[λ] + Σ_j p[j][λ]·v[k0 + j], RR rows × CB vectors at a time. The
   * first row group (peeled) also prefetches the V rows XIR_ATTN_PREFETCH_KEYS ahead; the others
   * loop. */
  for (int pass = 0; pass < 2; pass++) {
    unsigned RR = G.rr;
    if (pass == 1 && G.rows_pv <= RR) break;
    loop rl;
    LLVMValueRef r0 = ci64(&A, 0);
    if (pass == 1) {
      loop_begin(&A, &rl, ci64(&A, RR), ci64(&A, G.rows_pv), RR);
      r0 = rl.i;
    }
    for (unsigned cb0 = 0; cb0 < G.cv; cb0 += G.cb) {
      unsigned cbn = G.cv - cb0 < G.cb ? G.cv - cb0 : G.cb;
      LLVMValueRef slot[MAXRR * MAXCB];
      for (unsigned r = 0; r < RR; r++) {
        LLVMValueRef lam = LLVMBuildAdd(A.b, r0, ci64(&A, r), "");
        LLVMValueRef al_ = splat(&A, load(&A, A.f32, gep(&A, alb, lam)));
        LLVMValueRef arow = LLVMBuildMul(A.b, lam, ci64(&A, (int64_t)DVP), "");
        for (unsigned cc = 0; cc < cbn; cc++) {
          slot[r * MAXCB + cc] = entry_alloca(&A, A.vf, "pacc");
          LLVMValueRef a = load(&A, A.vf, gepc(&A, accb, arow, (int64_t)((cb0 + cc) * W)));
          LLVMBuildStore(A.b, LLVMBuildFMul(A.b, a, al_, ""), slot[r * MAXCB + cc]);
        }
      }
      loop jl;
      loop_begin(&A, &jl, ci64(&A, 0), kn, 1);
      LLVMValueRef vrow = LLVMBuildAdd(A.b, vbase, LLVMBuildMul(A.b, LLVMBuildAdd(A.b, k0, jl.i, ""), vst, ""), "");
      LLVMValueRef vv[MAXCB];
      if (pass == 0) { /* the V row XIR_ATTN_PREFETCH_KEYS ahead, its lines of this column block */
        LLVMValueRef pr = LLVMBuildAdd(A.b, vrow, LLVMBuildMul(A.b, vst, ci64(&A, XIR_ATTN_PREFETCH_KEYS), ""), "");
        pr = LLVMBuildSelect(A.b, LLVMBuildICmp(A.b, LLVMIntSLT, pr, vbend, ""), pr, vrow, "");
        for (int64_t e = (int64_t)(cb0 * W); e < (int64_t)((cb0 + cbn) * W) && e < DV;
             e += XIR_ATTN_PREFETCH_LINE)
          prefetch(&A, gepc(&A, vbuf, pr, e));
      }
      for (unsigned cc = 0; cc < cbn; cc++) {
        int64_t e0 = (int64_t)((cb0 + cc) * W);
        unsigned nval = DV - e0 >= (int64_t)W ? W : (unsigned)(DV - e0);
        vv[cc] = vload_n(&A, gepc(&A, vbuf, vrow, e0), nval);
      }
      LLVMValueRef prow = LLVMBuildAdd(A.b, LLVMBuildMul(A.b, jl.i, ci64(&A, G.vec_d ? G.npad : NVL), ""), r0, "");
      for (unsigned r = 0; r < RR; r++) {
        LLVMValueRef pb = splat(&A, load(&A, A.f32, gepc(&A, sbuf, prow, r)));
        for (unsigned cc = 0; cc < cbn; cc++) {
          LLVMValueRef s = LLVMBuildLoad2(A.b, A.vf, slot[r * MAXCB + cc], "");
          LLVMBuildStore(A.b, fmadd(&A, pb, vv[cc], s), slot[r * MAXCB + cc]);
        }
      }
      loop_end(&A, &jl);
      for (unsigned r = 0; r < RR; r++) {
        LLVMValueRef arow = LLVMBuildMul(A.b, LLVMBuildAdd(A.b, r0, ci64(&A, r), ""), ci64(&A, (int64_t)DVP), "");
        for (unsigned cc = 0; cc < cbn; cc++)
          store(&A, LLVMBuildLoad2(A.b, A.vf, slot[r * MAXCB + cc], ""),
                gepc(&A, accb, arow, (int64_t)((cb0 + cc) * W)));
      }
    }
    if (pass == 1) loop_end(&A, &rl);
  }
  loop_end(&A, &kl);
  /* the keys past kmax (a mask): every row of the tile sees them masked, p = 0, and the oracle
   * still adds 0·v[j] — NaN where v[j] is ±inf or NaN. z = Σ_{j ≥ kmax} 0·v[j] carries exactly
   * that (V rows only: no K row past kmax is loaded, nothing is scored or exponentiated) */
  LLVMValueRef z[64];
  unsigned ncz = G.cv < 64 ? G.cv : 64;
  if (F->mask >= 0 && G.cv <= 64) {
    LLVMValueRef zs[64];
    for (unsigned cc = 0; cc < ncz; cc++) {
      zs[cc] = entry_alloca(&A, A.vf, "z");
      LLVMBuildStore(A.b, zero, zs[cc]);
    }
    loop zl;
    loop_begin(&A, &zl, kmax, Kv, 1);
    LLVMValueRef vrow = LLVMBuildAdd(A.b, vbase, LLVMBuildMul(A.b, zl.i, vst, ""), "");
    for (unsigned cc = 0; cc < ncz; cc++) {
      int64_t e0 = (int64_t)(cc * W);
      unsigned nval = DV - e0 >= (int64_t)W ? W : (unsigned)(DV - e0);
      LLVMValueRef t = LLVMBuildFMul(A.b, zero, vload_n(&A, gepc(&A, vbuf, vrow, e0), nval), "");
      LLVMBuildStore(A.b, LLVMBuildFAdd(A.b, LLVMBuildLoad2(A.b, A.vf, zs[cc], ""), t, ""), zs[cc]);
    }
    loop_end(&A, &zl);
    for (unsigned cc = 0; cc < ncz; cc++) z[cc] = LLVMBuildLoad2(A.b, A.vf, zs[cc], "");
  } else {
    for (unsigned cc = 0; cc < ncz; cc++) z[cc] = NULL;
  }
  /* o = l == 0 ? 0 : acc / l, for the rows that exist */
  for (unsigned lam = 0; lam < n; lam++) {
    LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(A.ctx, A.fn, "row");
    LLVMBasicBlockRef no = LLVMAppendBasicBlockInContext(A.ctx, A.fn, "next");
    LLVMBuildCondBr(A.b, valid[lam], yes, no);
    LLVMPositionBuilderAtEnd(A.b, yes);
    LLVMValueRef l = load(&A, A.f32, gepc(&A, lb, ci64(&A, 0), lam));
    LLVMValueRef lz = splat(&A, LLVMBuildFCmp(A.b, LLVMRealOEQ, l, cf32(&A, 0), ""));
    LLVMValueRef lv = splat(&A, l);
    for (unsigned cc = 0; cc < G.cv; cc++) {
      int64_t e0 = (int64_t)(cc * W);
      unsigned nval = DV - e0 >= (int64_t)W ? W : (unsigned)(DV - e0);
      LLVMValueRef a = load(&A, A.vf, gepc(&A, accb, ci64(&A, 0), (int64_t)(lam * DVP) + e0));
      if (cc < ncz && z[cc]) a = LLVMBuildFAdd(A.b, a, z[cc], "");
      LLVMValueRef y = LLVMBuildSelect(A.b, lz, zero, LLVMBuildFDiv(A.b, a, lv, ""), "");
      vstore_n(&A, y, gepc(&A, obuf, orow[lam], e0), nval);
    }
    LLVMBuildBr(A.b, no);
    LLVMPositionBuilderAtEnd(A.b, no);
  }
  loop_end(&A, &tl);
  LLVMBuildRet(A.b, LLVMConstInt(A.i32, 0, 0));
  st = A.st;
done:
  xir__vm_destroy(A.vm);
  if (A.b) LLVMDisposeBuilder(A.b);
  xir__free(A.sval);
  return st;
}

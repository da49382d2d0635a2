/* vmath.c — vector math in LLVM IR (see vmath.h for the API, docs/vmath.md for the algorithms
 * and the measured error).
 *
 * How it thinks: each math function is one internal IR function per (function, W), built by a
 * small emitter (`em`) that knows the lane count and turns C-like arithmetic into IR on `float`
 * or `<W x float>` (and `double`/`<W x double>` lanes for sin, cos and pow). Every branch of a
 * piecewise definition is computed for all lanes and chosen with `select`, except two rare cases
 * that branch once per vector to a cold path (exp's scaling of subnormal and overflowing results
 * on hosts without vscalefps; sin/cos's fp64 fallback on AVX-512 hosts), which give the in-range
 * lanes the same bits. Special values are handled with ordered compares and selects after the
 * arithmetic, and no instruction ever sees a value it could turn into poison (no fptosi of NaN or
 * of an out-of-range value). Rounding to an integer uses the 1.5·2^p "magic number" addition
 * (round to nearest even) instead of llvm.floor/llvm.rint, which are libm calls on SSE2-only
 * targets.
 *
 * Constants are written as C float literals (exact in fp32) for the fp32 code, and as double
 * literals for the fp64 code. The polynomials: exp, log, tanh (small range) are the Cephes
 * single-precision coefficients; erf's were fitted for this file (Chebyshev fits in mpmath,
 * rounded to fp32, checked in simulated fp32 arithmetic); sin, cos, pow use Taylor series in fp64,
 * truncated well below fp32 precision. */
#include "lower/vmath.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"

#define NWIDTH 5 /* W = 1, 2, 4, 8, 16 */

struct xir__vm {
  LLVMModuleRef mod;
  LLVMContextRef ctx;
  LLVMBuilderRef b;
  int fma;    /* xir__vm_set_fma: use llvm.fma (functions emitted from then on) */
  int avx512; /* xir__vm_set_avx512: AVX-512F + VL instructions (vscalefps) where they pay */
  LLVMValueRef fns[4][XIR__VM_COUNT][NWIDTH]; /* [fma + 2·avx512] */
  LLVMValueRef powlog[2], powu[2][NWIDTH];      /* xir__vm_pow_uniform_base's two halves */
  LLVMValueRef sincos[4][NWIDTH];               /* xir__vm_sincos, [fma + 2·avx512] */
};

static const struct {
  const char *name;
  int arity;
} k_fn[XIR__VM_COUNT] = {
#define XIR__VM_ROW(e, n, a) {#n, a},
    XIR__VM_FUNCS(XIR__VM_ROW)
#undef XIR__VM_ROW
};

const char *xir__vm_name(xir__vm_fn fn) {
  return (unsigned)fn < XIR__VM_COUNT ? k_fn[fn].name : "?";
}
int xir__vm_arity(xir__vm_fn fn) { return (unsigned)fn < XIR__VM_COUNT ? k_fn[fn].arity : 0; }
xir__vm_fn xir__vm_from_name(const char *name) {
  for (int i = 0; name && i < XIR__VM_COUNT; i++)
    if (!strcmp(k_fn[i].name, name)) return (xir__vm_fn)i;
  return XIR__VM_COUNT;
}

static int width_index(unsigned W) {
  switch (W) {
    case 1: return 0;
    case 2: return 1;
    case 4: return 2;
    case 8: return 3;
    case 16: return 4;
  }
  return -1;
}

/* ---- the emitter ---- */

typedef struct em {
  xir__vm *vm;
  LLVMContextRef C;
  LLVMBuilderRef b;
  unsigned W;
  int fma;                    /* emit llvm.fma for the fused steps (else fmul + fadd) */
  int scalef;                 /* y·2^n by vscalefps (AVX-512, W = 4, 8, 16) */
  int x512;                   /* AVX-512F + VL instructions allowed (every W) */
  LLVMTypeRef vf, vi, vd, vl; /* float, i32, double, i64 lanes (scalars when W = 1) */
} em;

static LLVMTypeRef lanes(LLVMTypeRef elem, unsigned W) {
  return W == 1 ? elem : LLVMVectorType(elem, W);
}

static void em_init(em *e, xir__vm *vm, LLVMBuilderRef b, unsigned W) {
  e->vm = vm;
  e->C = vm->ctx;
  e->b = b;
  e->W = W;
  e->fma = vm->fma;
  e->scalef = vm->avx512 && (W == 4 || W == 8 || W == 16);
  e->x512 = vm->avx512;
  e->vf = lanes(LLVMFloatTypeInContext(e->C), W);
  e->vi = lanes(LLVMInt32TypeInContext(e->C), W);
  e->vd = lanes(LLVMDoubleTypeInContext(e->C), W);
  e->vl = lanes(LLVMInt64TypeInContext(e->C), W);
}

static LLVMValueRef splat(em *e, LLVMValueRef s) {
  if (e->W == 1) return s;
  LLVMValueRef v[16];
  for (unsigned i = 0; i < e->W; i++) v[i] = s;
  return LLVMConstVector(v, e->W);
}
static LLVMValueRef kf(em *e, float v) {
  return splat(e, LLVMConstReal(LLVMFloatTypeInContext(e->C), (double)v));
}
static LLVMValueRef kd(em *e, double v) {
  return splat(e, LLVMConstReal(LLVMDoubleTypeInContext(e->C), v));
}
static LLVMValueRef ki(em *e, int v) {
  return splat(e, LLVMConstInt(LLVMInt32TypeInContext(e->C), (unsigned long long)(long long)v, 1));
}
static LLVMValueRef kl(em *e, long long v) {
  return splat(e, LLVMConstInt(LLVMInt64TypeInContext(e->C), (unsigned long long)v, 1));
}

static LLVMValueRef add(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(e->b, a, b, ""); }
static LLVMValueRef sub(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFSub(e->b, a, b, ""); }
static LLVMValueRef mul(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(e->b, a, b, ""); }
static LLVMValueRef fdiv(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFDiv(e->b, a, b, ""); }
static LLVMValueRef neg(em *e, LLVMValueRef a) { return LLVMBuildFNeg(e->b, a, ""); }
static LLVMValueRef iadd(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(e->b, a, b, ""); }
static LLVMValueRef isub(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSub(e->b, a, b, ""); }
static LLVMValueRef iand(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAnd(e->b, a, b, ""); }
static LLVMValueRef ior(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildOr(e->b, a, b, ""); }
static LLVMValueRef shl(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildShl(e->b, a, b, ""); }
static LLVMValueRef lshr(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildLShr(e->b, a, b, ""); }
static LLVMValueRef ashr(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAShr(e->b, a, b, ""); }
static LLVMValueRef sel(em *e, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(e->b, c, a, b, "");
}
static LLVMValueRef fcmp(em *e, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFCmp(e->b, p, a, b, "");
}
static LLVMValueRef icmp(em *e, LLVMIntPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildICmp(e->b, p, a, b, "");
}
static LLVMValueRef land(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAnd(e->b, a, b, ""); }
static LLVMValueRef lor(em *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildOr(e->b, a, b, ""); }
static LLVMValueRef f2i(em *e, LLVMValueRef a) { return LLVMBuildBitCast(e->b, a, e->vi, ""); }
static LLVMValueRef i2f(em *e, LLVMValueRef a) { return LLVMBuildBitCast(e->b, a, e->vf, ""); }
static LLVMValueRef d2l(em *e, LLVMValueRef a) { return LLVMBuildBitCast(e->b, a, e->vl, ""); }
static LLVMValueRef l2d(em *e, LLVMValueRef a) { return LLVMBuildBitCast(e->b, a, e->vd, ""); }

/* |x| and copysign(mag, s) for fp32 lanes, through the sign bit. */
static LLVMValueRef fabs32(em *e, LLVMValueRef x) { return i2f(e, iand(e, f2i(e, x), ki(e, 0x7fffffff))); }
static LLVMValueRef copysign32(em *e, LLVMValueRef mag, LLVMValueRef s) {
  LLVMValueRef sb = iand(e, f2i(e, s), ki(e, (int)0x80000000u));
  return i2f(e, ior(e, iand(e, f2i(e, mag), ki(e, 0x7fffffff)), sb));
}

/* llvm.fma (one rounding) of any float type. */
static LLVMValueRef fma_exact(em *e, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  unsigned id = LLVMLookupIntrinsicID("llvm.fma", 8);
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(e->vm->mod, id, &t, 1);
  LLVMValueRef args[3] = {a, b, c};
  return LLVMBuildCall2(e->b, LLVMIntrinsicGetType(e->C, id, &t, 1), decl, args, 3, "");
}
/* a·b + c: fused (llvm.fma) on the FMA path, fmul then fadd (two roundings) otherwise. */
static LLVMValueRef fmadd(em *e, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  return e->fma ? fma_exact(e, a, b, c) : add(e, mul(e, a, b), c);
}

/* y·2^n for integral n (float lanes), rounded once: vscalefps (AVX-512F, VL below 512 bits).
 * Its result is the correctly rounded product, also when it is subnormal, 0 or ±inf, so it gives
 * the bits of the two-step integer scaling in body_exp. Only when e->scalef. */
static LLVMValueRef scalef(em *e, LLVMValueRef y, LLVMValueRef n) {
  const char *name = e->W == 16  ? "llvm.x86.avx512.mask.scalef.ps.512"
                     : e->W == 8 ? "llvm.x86.avx512.mask.scalef.ps.256"
                                 : "llvm.x86.avx512.mask.scalef.ps.128";
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(e->vm->mod, id, NULL, 0);
  LLVMTypeRef fty = LLVMIntrinsicGetType(e->C, id, NULL, 0);
  LLVMTypeRef mt = LLVMIntTypeInContext(e->C, e->W == 16 ? 16 : 8);
  LLVMValueRef args[5] = {y, n, LLVMGetUndef(e->vf), LLVMConstAllOnes(mt),
                          LLVMConstInt(LLVMInt32TypeInContext(e->C), 4, 0)}; /* current rounding */
  return LLVMBuildCall2(e->b, fty, decl, args, e->W == 16 ? 5 : 4, "");
}

/* x (float or <W x float>) as the low lanes of a <16 x float>, and back: the x512 helpers below
 * run the 512-bit instruction at every W, so that every W gets the same bits. */
static LLVMValueRef widen16(em *e, LLVMValueRef x) {
  LLVMTypeRef f32 = LLVMFloatTypeInContext(e->C), i32 = LLVMInt32TypeInContext(e->C);
  LLVMTypeRef v16 = LLVMVectorType(f32, 16);
  if (e->W == 16) return x;
  if (e->W == 1) return LLVMBuildInsertElement(e->b, LLVMGetPoison(v16), x, LLVMConstInt(i32, 0, 0), "");
  LLVMValueRef m[16];
  for (unsigned i = 0; i < 16; i++) m[i] = i < e->W ? LLVMConstInt(i32, i, 0) : LLVMGetUndef(i32);
  return LLVMBuildShuffleVector(e->b, x, LLVMGetPoison(e->vf), LLVMConstVector(m, 16), "");
}
static LLVMValueRef narrow16(em *e, LLVMValueRef r) {
  LLVMTypeRef f32 = LLVMFloatTypeInContext(e->C), i32 = LLVMInt32TypeInContext(e->C);
  if (e->W == 16) return r;
  if (e->W == 1) return LLVMBuildExtractElement(e->b, r, LLVMConstInt(i32, 0, 0), "");
  LLVMValueRef m[16];
  for (unsigned i = 0; i < e->W; i++) m[i] = LLVMConstInt(i32, i, 0);
  return LLVMBuildShuffleVector(e->b, r, LLVMGetPoison(LLVMVectorType(f32, 16)), LLVMConstVector(m, e->W), "");
}
/* A call of a 512-bit AVX-512 intrinsic of masked form (a, [b | imm], passthru, mask[, rounding]):
 * all lanes, passthru undefined, the current rounding mode. */
static LLVMValueRef x512_call(em *e, const char *name, LLVMValueRef a, LLVMValueRef b) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(e->vm->mod, id, NULL, 0);
  LLVMTypeRef fty = LLVMIntrinsicGetType(e->C, id, NULL, 0);
  LLVMTypeRef v16 = LLVMVectorType(LLVMFloatTypeInContext(e->C), 16);
  LLVMValueRef args[5] = {a, b, LLVMGetUndef(v16), LLVMConstAllOnes(LLVMIntTypeInContext(e->C, 16)),
                          LLVMConstInt(LLVMInt32TypeInContext(e->C), 4, 0)};
  unsigned n = LLVMCountParamTypes(fty);
  if (!b) { /* (a, passthru, mask) */
    args[1] = args[2];
    args[2] = args[3];
  }
  return LLVMBuildCall2(e->b, fty, decl, args, n, "");
}

/* ≈ 1/x with relative error < 2^−14: vrcp14ps (AVX-512F) at 16 lanes, every W (widen16). Only
 * when e->x512. */
static LLVMValueRef rcp14(em *e, LLVMValueRef x) {
  return narrow16(e, x512_call(e, "llvm.x86.avx512.rcp14.ps.512", widen16(e, x), NULL));
}
/* t − floor(t), exactly, in [0, 1] (1 only where t is a tiny negative): vreduceps (AVX-512DQ),
 * imm 1 = keep no fraction bits, round down. Only when e->x512. */
static LLVMValueRef frac_floor(em *e, LLVMValueRef t) {
  return narrow16(e, x512_call(e, "llvm.x86.avx512.mask.reduce.ps.512", widen16(e, t),
                               LLVMConstInt(LLVMInt32TypeInContext(e->C), 1, 0)));
}
/* y·2^floor(n), rounded once (vscalefps scales by the floor of a non-integral n), every W. Only
 * when e->x512. */
static LLVMValueRef scalef_floor(em *e, LLVMValueRef y, LLVMValueRef n) {
  if (e->scalef) return scalef(e, y, n);
  return narrow16(e, x512_call(e, "llvm.x86.avx512.mask.scalef.ps.512", widen16(e, y), widen16(e, n)));
}

/* c[0]·t^(n-1) + … + c[n-1], Horner (each step one fmadd), fp32. */
static LLVMValueRef horner32(em *e, LLVMValueRef t, const float *c, int n) {
  LLVMValueRef r = kf(e, c[0]);
  for (int i = 1; i < n; i++) r = fmadd(e, r, t, kf(e, c[i]));
  return r;
}
static LLVMValueRef horner64(em *e, LLVMValueRef t, const double *c, int n) {
  LLVMValueRef r = kd(e, c[0]);
  for (int i = 1; i < n; i++) r = fmadd(e, r, t, kd(e, c[i]));
  return r;
}

static LLVMValueRef call_fn(em *e, xir__vm_fn fn, LLVMValueRef x, LLVMValueRef y);

/* Continues in a new cold block, entered when some lane of `ok` is false, and returns the block
 * both paths join (the caller emits the cold path, branches to the join block and builds its
 * phis there). *entry is the block the branch leaves from. The branch is weighted unlikely, so
 * LLVM lays the cold block out of the loop. */
static LLVMBasicBlockRef cold_branch(em *e, LLVMValueRef ok, LLVMBasicBlockRef *entry) {
  LLVMValueRef all = ok;
  if (e->W > 1) {
    LLVMTypeRef iw = LLVMIntTypeInContext(e->C, e->W);
    all = icmp(e, LLVMIntEQ, LLVMBuildBitCast(e->b, ok, iw, ""), LLVMConstAllOnes(iw));
  }
  *entry = LLVMGetInsertBlock(e->b);
  LLVMValueRef fn = LLVMGetBasicBlockParent(*entry);
  LLVMBasicBlockRef cold = LLVMAppendBasicBlockInContext(e->C, fn, "cold");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(e->C, fn, "join");
  LLVMValueRef br = LLVMBuildCondBr(e->b, all, done, cold);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(e->C);
  LLVMMetadataRef md[3] = {LLVMMDStringInContext2(e->C, "branch_weights", 14),
                           LLVMValueAsMetadata(LLVMConstInt(i32, 2000, 0)),
                           LLVMValueAsMetadata(LLVMConstInt(i32, 1, 0))};
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(e->C, "prof", 4),
                  LLVMMetadataAsValue(e->C, LLVMMDNodeInContext2(e->C, md, 3)));
  LLVMPositionBuilderAtEnd(e->b, cold);
  return done;
}
/* Ends the cold path (the current block) at `done` and returns the phi of `hot` (from `entry`)
 * and `cold`. */
static LLVMValueRef cold_join(em *e, LLVMBasicBlockRef done, LLVMBasicBlockRef entry,
                              LLVMValueRef hot, LLVMValueRef cold) {
  LLVMBasicBlockRef cold_end = LLVMGetInsertBlock(e->b);
  LLVMBuildBr(e->b, done);
  LLVMPositionBuilderAtEnd(e->b, done);
  LLVMValueRef phi = LLVMBuildPhi(e->b, LLVMTypeOf(hot), "");
  LLVMValueRef vals[2] = {hot, cold};
  LLVMBasicBlockRef bbs[2] = {entry, cold_end};
  LLVMAddIncoming(phi, vals, bbs, 2);
  return phi;
}

/* exp_core's argument range: any x; x ≤ 0 or NaN (softmax's x − max, whose masked −inf lanes
 * are common); x ≤ 0 or NaN with x < −86 rare (sigmoid's −|x|); or −86 ≤ x ≤ 87 and not NaN
 * (tanh's clamped 2|x|): no clamps, no tiny lanes, no two-step path. */
enum { EXP_ANY = 0, EXP_NONPOS = 1, EXP_NONPOS_RARE = 2, EXP_BOUNDED = 3 };

/* ---- exp (fp32): Cephes expf ----
 * n = round(x·log2 e), r = x − n·C1 − n·C2 (C1 has 9 bits: n·C1 and x − n·C1 are exact),
 * e^r = 1 + r + r²·P(r), deg P = 5, |r| ≤ ln2/2 (fma: a degree-6 polynomial by Horner, fitted
 * for this file: near-minimax relative error 2^−28 on [−ln2/2, ln2/2] after rounding the
 * coefficients to fp32; mpmath, iteratively reweighted least squares with c0 = c1 = 1);
 * 2^n added to y's exponent when every lane's result is normal, else applied as 2^n1·2^n2
 * (n1 = n>>1) so that subnormal results are rounded once and overflow gives +inf. */
/* exp_core(x, keep_nan): keep_nan = 1 returns a NaN input itself; 0 (exp, sigmoid, tanh) only
 * promises some NaN for a NaN input (the ordered clamps pass it on and every later step
 * propagates it), which is all sigmoid and tanh need, and saves a compare and two selects. The
 * other lanes get the same bits either way (and so did the NaN lanes, measured: the exhaustive
 * hashes of sigmoid and tanh did not change). */
/* range (the enum above): for x ≤ 0 or NaN the clamp at 89 is left out (it changes no lane); for
 * EXP_BOUNDED every clamp. lowp = 1 (sigmoid16): r = x − n·ln2 in one step (ln2 rounded to fp32:
 * |n·(ln2 − ln2_f32)| ≤ 150·1.9e−9, about 2^−21.7 relative in the result) and a degree-4
 * polynomial (near-minimax for this file, numpy IRLS on [−ln2/2, ln2/2] with c0 = 1, checked in
 * simulated fp32 arithmetic: 2^−18.4 relative) — two fewer operations in the reduction and two
 * fewer Horner steps. */
static LLVMValueRef exp_core(em *e, LLVMValueRef x, int keep_nan, int range, int lowp) {
  int nonpos = range == EXP_NONPOS || range == EXP_NONPOS_RARE, bounded = range == EXP_BOUNDED;
  if (lowp && nonpos && !keep_nan && e->x512 && e->fma) {
    /* x512 (AVX-512F/VL/DQ): t = x·log2 e rounded (for |t| ≤ 150 an error of at most 2^−17 in
     * the exponent, 2^−17.5 relative in the result), f = t − floor(t) ∈ [0, 1) exactly by
     * vreduceps, 2^f by a degree-4 polynomial 1 + f·(c1 + … + c4·f³) (fitted for this file on
     * [0, 1): numpy, iteratively reweighted least squares, c0 = 1; 2^−18.3 relative in simulated
     * fp32), and 2^floor(t) applied by vscalefps, which floors its exponent operand itself. e^x
     * for x ≤ 0 in 2^−17.1 relative (simulated over [−104, 0]); 7 operations where the path
     * below takes 11 and two register copies. The tiny lanes (x < −103.98, −inf included)
     * scale 0, as below. */
    static const float F4[] = {1.343019679e-02f, 5.224625021e-02f, 2.412706465e-01f,
                               6.930480003e-01f, 1.0f};
    LLVMValueRef tiny = fcmp(e, LLVMRealOLT, x, kf(e, -103.98f));
    LLVMValueRef t = mul(e, x, kf(e, 1.44269504088896341f));
    LLVMValueRef y = horner32(e, frac_floor(e, t), F4, 5);
    return scalef_floor(e, sel(e, tiny, kf(e, 0.0f), y), t);
  }
  if (range == EXP_NONPOS_RARE && !e->scalef) {
    /* the bounded code when every lane has −86 ≤ x (no clamp, no tiny lanes, one-step scaling),
     * else (one branch per vector) the EXP_NONPOS code, whose bits the bounded code has in
     * those lanes */
    LLVMValueRef hot = exp_core(e, x, keep_nan, EXP_BOUNDED, lowp);
    LLVMBasicBlockRef entry;
    LLVMBasicBlockRef done = cold_branch(e, fcmp(e, LLVMRealOGE, x, kf(e, -86.0f)), &entry);
    return cold_join(e, done, entry, hot, exp_core(e, x, keep_nan, EXP_NONPOS, lowp));
  }
  if (range == EXP_NONPOS_RARE) range = EXP_NONPOS, nonpos = 1;
  static const float P[] = {1.9875691500E-4f, 1.3981999507E-3f, 8.3334519073E-3f,
                            4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f};
  LLVMValueRef isnan = keep_nan && !bounded ? fcmp(e, LLVMRealUNO, x, x) : NULL;
  LLVMValueRef xc =
      range != EXP_ANY ? x : sel(e, fcmp(e, LLVMRealOGT, x, kf(e, 89.0f)), kf(e, 89.0f), x);
  if (!bounded) xc = sel(e, fcmp(e, LLVMRealOLT, xc, kf(e, -104.0f)), kf(e, -104.0f), xc);
  if (isnan) xc = sel(e, isnan, kf(e, 0.0f), xc);
  /* Below ln(2^-150) the result rounds to +0 (-inf included: masked softmax and attention
   * columns). No such lane may produce a subnormal or underflowing intermediate, which x86
   * handles with slow microcode assists: the integer scaling computes them on 0 and sets them to
   * 0 at the end; vscalefps scales 0 in them (below). */
  /* tested on the clamped value (x < −103.98 exactly when xc is, NaN lanes in neither): for
   * sigmoid's −|x| LLVM would otherwise keep |x| for the test as well as −|x| (one operation) */
  LLVMValueRef tiny = bounded ? NULL : fcmp(e, LLVMRealOLT, xc, kf(e, -103.98f));
  if (tiny && !e->scalef) xc = sel(e, tiny, kf(e, 0.0f), xc);
  LLVMValueRef t = fmadd(e, xc, kf(e, 1.44269504088896341f), kf(e, 12582912.0f));
  LLVMValueRef nf = sub(e, t, kf(e, 12582912.0f));
  LLVMValueRef r, y;
  if (lowp) {
    static const float S4[] = {4.15138379e-2f, 1.67874753e-1f, 5.00030160e-1f, 9.99966860e-1f,
                               1.0f};
    r = fmadd(e, nf, kf(e, -0.693147182f), xc);
    y = horner32(e, r, S4, 5);
  } else if (r = fmadd(e, nf, kf(e, 2.12194440e-4f), fmadd(e, nf, kf(e, -0.693359375f), xc)),
             e->fma) {
    /* e^r ≈ 1 + r·(1 + S1·r + … + S5·r^5), six fused Horner steps (nine operations for the
     * Cephes form below). Exhaustive: 0.878 ulp (was 0.977; 2026-12-01) */
    static const float S[] = {1.381456852e-03f, 8.368730545e-03f, 4.166838899e-02f,
                              1.666652113e-01f, 4.999999404e-01f, 1.0f, 1.0f};
    y = horner32(e, r, S, 7);
  } else {
    LLVMValueRef z = mul(e, r, r);
    y = horner32(e, r, P, 6);
    y = add(e, add(e, mul(e, y, z), r), kf(e, 1.0f));
  }
  if (e->scalef) {
    /* one vscalefps by nf instead of the integer scaling: the same bits (the tiny lanes round to
     * +0 either way: x < −103.98 means e^x < 2^−150), checked over every fp32 input. The tiny
     * lanes scale 0 instead of y: y·2^−150 underflows, and Intel cores take a microcode assist
     * for each vscalefps that underflows (about 150 cycles; masked softmax rows, whose −inf
     * lanes are all tiny, ran 3× slower on the 2026-12-02 Xeon host), while 0·2^n is exact. */
    if (tiny) y = sel(e, tiny, kf(e, 0.0f), y);
    LLVMValueRef res = scalef(e, y, nf);
    return isnan ? sel(e, isnan, x, res) : res;
  }
  /* y·2^n by adding n to y's exponent field, exact when the result is normal: y ∈ [0.70, 1.42]
   * has biased exponent 126 or 127, so −125 ≤ n ≤ 127 keeps it in [1, 254]. t's bits are
   * 0x4b400000 + n (t = 1.5·2^23 + n) and 0x4b400000 has nine zero low bits, so t's bits shifted
   * left by 23 are n·2^23 (mod 2^32): two integer operations. Vectors with a lane outside
   * −125 ≤ n ≤ 125 (a subnormal, 0 or +inf result; NaN; never for a bounded x, nor for the tiny
   * lanes, whose xc is 0) take the two-step scaling below instead, branching once per vector:
   * for the in-range lanes it gives the same bits, so each lane's result depends on its own x
   * only (the same bits at every W and grain). */
  LLVMValueRef fast = i2f(e, iadd(e, f2i(e, y), shl(e, f2i(e, t), ki(e, 23))));
  LLVMValueRef res = fast;
  if (!bounded) {
    LLVMValueRef ok = nonpos ? fcmp(e, LLVMRealOGE, nf, kf(e, -125.0f))
                             : fcmp(e, LLVMRealOLE, fabs32(e, nf), kf(e, 125.0f));
    LLVMBasicBlockRef entry;
    LLVMBasicBlockRef done = cold_branch(e, ok, &entry);
    LLVMValueRef ni = isub(e, f2i(e, t), ki(e, 0x4b400000));
    LLVMValueRef n1 = ashr(e, ni, ki(e, 1));
    LLVMValueRef n2 = isub(e, ni, n1);
    LLVMValueRef s1 = i2f(e, shl(e, iadd(e, n1, ki(e, 127)), ki(e, 23)));
    LLVMValueRef s2 = i2f(e, shl(e, iadd(e, n2, ki(e, 127)), ki(e, 23)));
    res = cold_join(e, done, entry, fast, mul(e, mul(e, y, s1), s2));
  }
  if (tiny) res = sel(e, tiny, kf(e, 0.0f), res);
  return isnan ? sel(e, isnan, x, res) : res;
}
static LLVMValueRef body_exp(em *e, LLVMValueRef x) { return exp_core(e, x, 0, EXP_ANY, 0); }

/* ---- log (fp32): Cephes logf ----
 * x = m·2^k, m ∈ [√½, √2) (subnormals scaled by 2^23 first), f = m − 1 (exact),
 * log x = f − f²/2 + f³·P(f) + k·ln2 with deg P = 8, ln2 split in two (k·C1 exact). */
static LLVMValueRef body_log(em *e, LLVMValueRef x) {
  static const float P[] = {7.0376836292E-2f,  -1.1514610310E-1f, 1.1676998740E-1f,
                            -1.2420140846E-1f, 1.4249322787E-1f,  -1.6668057665E-1f,
                            2.0000714765E-1f,  -2.4999993993E-1f, 3.3333331174E-1f};
  LLVMValueRef sub_n = fcmp(e, LLVMRealOLT, x, kf(e, 1.17549435e-38f));
  LLVMValueRef xs = sel(e, sub_n, mul(e, x, kf(e, 8388608.0f)), x);
  LLVMValueRef bits = f2i(e, xs);
  LLVMValueRef k = isub(e, iand(e, lshr(e, bits, ki(e, 23)), ki(e, 0xff)), ki(e, 126));
  k = isub(e, k, sel(e, sub_n, ki(e, 23), ki(e, 0)));
  LLVMValueRef m = i2f(e, ior(e, iand(e, bits, ki(e, 0x007fffff)), ki(e, 0x3f000000)));
  LLVMValueRef small = fcmp(e, LLVMRealOLT, m, kf(e, 0.707106781186547524f));
  k = isub(e, k, sel(e, small, ki(e, 1), ki(e, 0)));
  LLVMValueRef f = sel(e, small, sub(e, add(e, m, m), kf(e, 1.0f)), sub(e, m, kf(e, 1.0f)));
  LLVMValueRef kf_ = LLVMBuildSIToFP(e->b, k, e->vf, "");
  LLVMValueRef z = mul(e, f, f);
  LLVMValueRef y = mul(e, mul(e, horner32(e, f, P, 9), f), z);
  y = fmadd(e, kf_, kf(e, -2.12194440e-4f), y);
  y = fmadd(e, z, kf(e, -0.5f), y);
  LLVMValueRef r = add(e, f, y);
  r = fmadd(e, kf_, kf(e, 0.693359375f), r);
  float inf = __builtin_inff(), nan = __builtin_nanf("");
  r = sel(e, fcmp(e, LLVMRealOEQ, x, kf(e, inf)), kf(e, inf), r);
  r = sel(e, fcmp(e, LLVMRealOEQ, x, kf(e, 0.0f)), kf(e, -inf), r);
  r = sel(e, fcmp(e, LLVMRealOLT, x, kf(e, 0.0f)), kf(e, nan), r);
  return sel(e, fcmp(e, LLVMRealUNO, x, x), x, r);
}

/* tanh on AVX-512 hosts: 32 intervals of |x| (quarter binades from 2^-4 to 16; interval 0 is
 * [0, 0.078125)), p(t) = c0 + c1·t + … + c6·t^6 with t = |x| − lo. Chebyshev interpolation
 * of tanh(lo + t) at 7 nodes per interval (interval 0: c0 = 0, c1 = 1 and the rest fitted to
 * tanh(t) − t), computed in fp64 and rounded to fp32 (generated for this file). Row k holds c_k;
 * the last row is lo. Intervals from 10 on give exactly 1. */
static const float k_tanh_tab[8][32] = {
    {
        0.000000000e+00f, 7.796644419e-02f, 9.347630292e-02f, 1.089409292e-01f, 1.243529990e-01f,
        1.549907327e-01f, 1.853332072e-01f, 2.153263390e-01f, 2.449186593e-01f, 3.027097285e-01f,
        3.583573997e-01f, 4.115700424e-01f, 4.621171653e-01f, 5.545997024e-01f, 6.351489425e-01f,
        7.039055824e-01f, 7.615941763e-01f, 8.482836485e-01f, 9.051482677e-01f, 9.413755536e-01f,
        9.640275836e-01f, 9.866142869e-01f, 9.950547814e-01f, 9.981778860e-01f, 9.993293285e-01f,
        9.999092221e-01f, 9.999877214e-01f, 9.999983311e-01f, 9.999997616e-01f, 1.000000000e+00f,
        1.000000000e+00f, 1.000000000e+00f,
    },
    {
        1.000000000e+00f, 9.939212203e-01f, 9.912621975e-01f, 9.881318808e-01f, 9.845363498e-01f,
        9.759778976e-01f, 9.656516314e-01f, 9.536345601e-01f, 9.400148392e-01f, 9.083667994e-01f,
        8.715800047e-01f, 8.306100965e-01f, 7.864477038e-01f, 6.924191713e-01f, 5.965858102e-01f,
        5.045168996e-01f, 4.199743569e-01f, 2.804148793e-01f, 1.807066500e-01f, 1.138120964e-01f,
        7.065085322e-02f, 2.659220621e-02f, 9.866025299e-03f, 3.640879411e-03f, 1.340864575e-03f,
        1.815713767e-04f, 2.457493974e-05f, 3.325891612e-06f, 4.492792698e-07f, 0.000000000e+00f,
        0.000000000e+00f, 0.000000000e+00f,
    },
    {
        -3.037122220e-10f, -7.749250531e-02f, -9.265952557e-02f, -1.076480076e-01f, -1.224300489e-01f,
        -1.512675285e-01f, -1.789672971e-01f, -2.053426355e-01f, -2.302271873e-01f, -2.749714851e-01f,
        -3.123371303e-01f, -3.418542445e-01f, -3.634307981e-01f, -3.840153217e-01f, -3.789207637e-01f,
        -3.551322222e-01f, -3.198503852e-01f, -2.378722429e-01f, -1.635668725e-01f, -1.071401611e-01f,
        -6.811029464e-02f, -2.623564191e-02f, -9.816854261e-03f, -3.634082852e-03f, -1.338654547e-03f,
        -1.813743875e-04f, -2.455015238e-05f, -3.322571501e-06f, -4.430332297e-07f, 0.000000000e+00f,
        0.000000000e+00f, 0.000000000e+00f,
    },
    {
        -3.333331347e-01f, -3.252652586e-01f, -3.217592537e-01f, -3.176500201e-01f, -3.129541874e-01f,
        -3.018808663e-01f, -2.887152433e-01f, -2.736624777e-01f, -2.569512129e-01f, -2.195525020e-01f,
        -1.785986423e-01f, -1.361735165e-01f, -9.421011060e-02f, -1.783909649e-02f, 4.180442542e-02f,
        8.180531114e-02f, 1.036130786e-01f, 1.083323359e-01f, 8.783004433e-02f, 6.292738020e-02f,
        4.212121665e-02f, 1.701346785e-02f, 6.475262810e-03f, 2.411962720e-03f, 8.835528279e-04f,
        1.198352911e-04f, 1.622269883e-05f, 2.195590696e-06f, 2.774231120e-07f, 0.000000000e+00f,
        0.000000000e+00f, 0.000000000e+00f,
    },
    {
        -1.991891986e-05f, 5.119015276e-02f, 6.096248329e-02f, 7.048684359e-02f, 7.972274721e-02f,
        9.720779955e-02f, 1.131615564e-01f, 1.273722947e-01f, 1.396674663e-01f, 1.581221074e-01f,
        1.681281328e-01f, 1.700165570e-01f, 1.648712009e-01f, 1.380690038e-01f, 9.986360371e-02f,
        6.083953753e-02f, 2.762367763e-02f, -1.283494662e-02f, -2.512522601e-02f, -2.358789369e-02f,
        -1.796918735e-02f, -8.004872128e-03f, -3.147905925e-03f, -1.186284353e-03f, -4.190407635e-04f,
        -5.692409832e-05f, -7.707746590e-06f, -1.043201792e-06f, -1.139777410e-07f, 0.000000000e+00f,
        0.000000000e+00f, 0.000000000e+00f,
    },
    {
        1.340481788e-01f, 1.265679747e-01f, 1.236578673e-01f, 1.202328652e-01f, 1.164733171e-01f,
        1.074105576e-01f, 9.685295820e-02f, 8.507982641e-02f, 7.250929624e-02f, 4.541579261e-02f,
        1.834199578e-02f, -6.589544006e-03f, -2.950467728e-02f, -5.721556395e-02f, -6.538107991e-02f,
        -5.942691118e-02f, -4.590176791e-02f, -1.774143241e-02f, -1.690756413e-03f, 4.115192220e-03f,
        5.057370756e-03f, 2.732985653e-03f, 1.135455095e-03f, 4.359407467e-04f, 1.356196590e-04f,
        1.845867700e-05f, 2.500027904e-06f, 3.383771627e-07f, 2.796690524e-08f, 0.000000000e+00f,
        0.000000000e+00f, 0.000000000e+00f,
    },
    {
        -1.048384421e-02f, -3.121388704e-02f, -3.698040545e-02f, -4.175992310e-02f, -4.823685810e-02f,
        -5.619995669e-02f, -6.267061830e-02f, -6.756479293e-02f, -7.175236195e-02f, -7.179379463e-02f,
        -6.620622426e-02f, -5.636908486e-02f, -3.726086020e-02f, -1.160766277e-02f, 7.233172189e-03f,
        1.697891019e-02f, 1.848433353e-02f, 1.096992660e-02f, 4.114327021e-03f, 6.477360148e-04f,
        -7.203537971e-04f, -5.454447819e-04f, -2.433091868e-04f, -9.552962001e-05f, -2.243886593e-05f,
        -3.059685469e-06f, -4.145037735e-07f, -5.610470666e-08f, -3.065434351e-09f, 0.000000000e+00f,
        0.000000000e+00f, 0.000000000e+00f,
    },
    {
        0.000000000e+00f, 7.812500000e-02f, 9.375000000e-02f, 1.093750000e-01f, 1.250000000e-01f,
        1.562500000e-01f, 1.875000000e-01f, 2.187500000e-01f, 2.500000000e-01f, 3.125000000e-01f,
        3.750000000e-01f, 4.375000000e-01f, 5.000000000e-01f, 6.250000000e-01f, 7.500000000e-01f,
        8.750000000e-01f, 1.000000000e+00f, 1.250000000e+00f, 1.500000000e+00f, 1.750000000e+00f,
        2.000000000e+00f, 2.500000000e+00f, 3.000000000e+00f, 3.500000000e+00f, 4.000000000e+00f,
        5.000000000e+00f, 6.000000000e+00f, 7.000000000e+00f, 8.000000000e+00f, 1.000000000e+01f,
        1.200000000e+01f, 1.400000000e+01f,
    },
};

/* Lane i of the result is tab[idx[i]] (idx: i32 lanes in [0, 32)), by one vpermi2ps over the
 * two 16-entry halves of tab; W < 16 is widened to 16 lanes and back, so every W reads the same
 * values. Only when e->x512. */
static LLVMValueRef lookup32(em *e, const float *tab, LLVMValueRef idx) {
  LLVMTypeRef f32 = LLVMFloatTypeInContext(e->C), i32 = LLVMInt32TypeInContext(e->C);
  LLVMTypeRef v16i = LLVMVectorType(i32, 16);
  LLVMValueRef lo[16], hi[16], m[16];
  for (int i = 0; i < 16; i++) {
    lo[i] = LLVMConstReal(f32, tab[i]);
    hi[i] = LLVMConstReal(f32, tab[16 + i]);
    m[i] = LLVMConstInt(i32, (unsigned)(i < (int)e->W ? i : 0), 0);
  }
  LLVMValueRef ix = idx;
  if (e->W == 1) ix = LLVMBuildInsertElement(e->b, LLVMConstNull(v16i), idx, LLVMConstInt(i32, 0, 0), "");
  else if (e->W < 16) ix = LLVMBuildShuffleVector(e->b, idx, LLVMConstNull(e->vi), LLVMConstVector(m, 16), "");
  const char *name = "llvm.x86.avx512.vpermi2var.ps.512";
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(e->vm->mod, id, NULL, 0);
  LLVMValueRef args[3] = {LLVMConstVector(lo, 16), ix, LLVMConstVector(hi, 16)};
  LLVMValueRef r = LLVMBuildCall2(e->b, LLVMIntrinsicGetType(e->C, id, NULL, 0), decl, args, 3, "");
  if (e->W == 1) return LLVMBuildExtractElement(e->b, r, LLVMConstInt(i32, 0, 0), "");
  if (e->W < 16)
    return LLVMBuildShuffleVector(e->b, r, LLVMGetPoison(LLVMTypeOf(r)), LLVMConstVector(m, e->W), "");
  return r;
}

/* tanh by the table above: a = min(|x|, 16) (NaN stays NaN), idx = clamp((bits(a) − bits(2^-4))
 * >> 21, 0, 31), t = a − lo[idx], p = Horner of the interval's c6 … c0 (fused), the sign of x
 * copied onto p (so tanh(±0) = ±0, and ±inf gives ±1 from interval 31). No division, no exp:
 * 8 table lookups and 6 fmas, about half the latency of the exp-based form. */
static LLVMValueRef tanh_table(em *e, LLVMValueRef x) {
  LLVMValueRef a = fabs32(e, x);
  a = sel(e, fcmp(e, LLVMRealOGT, a, kf(e, 16.0f)), kf(e, 16.0f), a);
  LLVMValueRef d = isub(e, f2i(e, a), ki(e, 0x3d800000)); /* bits of 2^-4 */
  d = sel(e, icmp(e, LLVMIntSLT, d, ki(e, 0)), ki(e, 0), d);
  d = sel(e, icmp(e, LLVMIntSGT, d, ki(e, 31 << 21)), ki(e, 31 << 21), d);
  LLVMValueRef idx = lshr(e, d, ki(e, 21));
  LLVMValueRef t = sub(e, a, lookup32(e, k_tanh_tab[7], idx));
  LLVMValueRef p = lookup32(e, k_tanh_tab[6], idx);
  for (int k = 5; k >= 0; k--) p = fma_exact(e, p, t, lookup32(e, k_tanh_tab[k], idx));
  return copysign32(e, p, x);
}

/* ---- tanh (fp32) ----
 * |x| < 0.625: x + x³·P(x²), deg P = 4 (Cephes tanhf); else sign(x)·(1 − 2/(e^{2|x|} + 1)) with
 * the vector exp above (e^{2|x|} = +inf gives exactly ±1). */
static LLVMValueRef body_tanh(em *e, LLVMValueRef x) {
  if (e->x512 && e->fma) return tanh_table(e, x);
  static const float P[] = {-5.70498872745E-3f, 2.06390887954E-2f, -5.37397155531E-2f,
                            1.33314422036E-1f, -3.33332819422E-1f};
  /* Both branches on a = |x|, the sign applied once at the end (tanh(±0) = ±0 too): the same
   * bits as evaluating the small branch on x, whose rounding is symmetric in x. */
  LLVMValueRef a = fabs32(e, x);
  LLVMValueRef z = mul(e, a, a);
  LLVMValueRef ps = fmadd(e, mul(e, horner32(e, z, P, 5), z), a, a);
  /* e^{2|x|} for 2|x| ≤ 40 (NaN: 40): above it 2/(e^{2|x|} + 1) < 8.5e−18 and the large branch is
   * exactly 1 either way, so exp needs no clamps and never the two-step scaling. A NaN lane takes
   * the small branch's value (NaN, the same bits the large branch gave through exp). */
  LLVMValueRef a2 = add(e, a, a);
  a2 = sel(e, fcmp(e, LLVMRealOLT, a2, kf(e, 40.0f)), a2, kf(e, 40.0f));
  LLVMValueRef ex = exp_core(e, a2, 0, EXP_BOUNDED, 0);
  LLVMValueRef tl = sub(e, kf(e, 1.0f), fdiv(e, kf(e, 2.0f), add(e, ex, kf(e, 1.0f))));
  LLVMValueRef r = sel(e, fcmp(e, LLVMRealOGE, a, kf(e, 0.625f)), tl, ps);
  return copysign32(e, r, x);
}

/* ---- sigmoid (fp32) ----
 * t = e^{−|x|} ∈ (0, 1]: x ≥ 0: 1/(1 + t); x < 0: t/(1 + t) (no overflow, accurate far left).
 * plain: 1 + t is kept as s + c exactly (Fast2Sum, 1 ≥ t), and the quotients are corrected by
 * c: a/(s + c) ≈ a/s − (a/s)·(c/s). fma: see below. */
static LLVMValueRef body_sigmoid(em *e, LLVMValueRef x) {
  LLVMValueRef t = exp_core(e, neg(e, fabs32(e, x)), 0, EXP_NONPOS_RARE, 0);
  LLVMValueRef s = add(e, kf(e, 1.0f), t);
  if (e->fma) {
    /* a = 1 (x ≥ 0) or t (x < 0), r ≈ 1/s, q0 = a·r, and one Newton step on the quotient:
     * q = q0 + (a − q0·(1 + t))·r. The residual needs no Fast2Sum of 1 + t: r ∈ [½, 1], so
     * q0 ∈ [a/2, a] and a − q0 is exact (Sterbenz), and fma(−q0, t, a − q0) rounds
     * a − q0 − q0·t once. r is 1/s (a division), or on AVX-512 vrcp14ps (relative error
     * < 2^−14: the step leaves about 2^−28 of it; q0 may then fall below a/2 by 2^−14 when s is
     * near 2, where a − q0 rounds by at most ulp(a)/4). Both measured exhaustively
     * (docs/vmath.md); for the same t the division form gave the bits of the former two-fma
     * residual (the same hash over every third fp32 input). */
    LLVMValueRef a = sel(e, fcmp(e, LLVMRealOGE, x, kf(e, 0.0f)), kf(e, 1.0f), t);
    LLVMValueRef r = e->x512 ? rcp14(e, s) : fdiv(e, kf(e, 1.0f), s);
    LLVMValueRef q0 = mul(e, a, r);
    LLVMValueRef res = fma_exact(e, neg(e, q0), t, sub(e, a, q0));
    return fma_exact(e, res, r, q0);
  }
  LLVMValueRef c = add(e, sub(e, kf(e, 1.0f), s), t);
  LLVMValueRef r = fdiv(e, kf(e, 1.0f), s);
  LLVMValueRef q = fdiv(e, t, s);
  LLVMValueRef cr = mul(e, c, r);
  LLVMValueRef pos = fmadd(e, neg(e, r), cr, r);
  LLVMValueRef negv = fmadd(e, neg(e, q), cr, q);
  return sel(e, fcmp(e, LLVMRealOGE, x, kf(e, 0.0f)), pos, negv);
}

/* ---- sigmoid16: sigmoid for values that only reach bf16/f16 stores (xir__narrow_values) ----
 * t = e^{−|x|} by exp_core's lowp path (2^−18.4), a = 1 (x ≥ 0) or t (x < 0), result a·r with
 * r = vrcp14ps(1 + t) on AVX-512 hosts (relative error < 2^−14), 1/(1 + t) elsewhere: relative
 * error < 2^−13.9, which is below 1/60 ulp of bf16 and 0.14 ulp of f16 (docs/vmath.md). Against
 * sigmoid: no second reduction constant, two fewer Horner steps, no Newton step on the quotient. */
static LLVMValueRef body_sigmoid16(em *e, LLVMValueRef x) {
  LLVMValueRef t = exp_core(e, neg(e, fabs32(e, x)), 0, EXP_NONPOS_RARE, 1);
  LLVMValueRef s = add(e, kf(e, 1.0f), t);
  LLVMValueRef r = e->x512 ? rcp14(e, s) : fdiv(e, kf(e, 1.0f), s);
  /* r where x ≥ 0 (1·r is r), t·r where x < 0: one merge-masked multiply on AVX-512 (the
   * select of a constant 1 before the multiply was a multiply and a blend) */
  return sel(e, fcmp(e, LLVMRealOLT, x, kf(e, 0.0f)), mul(e, t, r), r);
}

/* ---- erf (fp32) ----
 * |x| < 1: x + x·Q(x²), deg Q = 6. 1 ≤ |x| < 4: sign(x)·(1 − E(|x| − c)), E a degree-10
 * polynomial for erfc on [1, 2.5] (c = 1.75) or [2.5, 4] (c = 3.25), coefficients chosen per lane
 * with select. |x| ≥ 4: ±1 (erf rounds to 1 from 3.92 on). Fitted for this file (mpmath). */
static LLVMValueRef body_erf(em *e, LLVMValueRef x) {
  static const float Q[] = {7.875874871388078e-05f, -0.000801686430349946f,
                            0.005189087241888046f,  -0.02685421146452427f,
                            0.11283594369888306f,   -0.3761262595653534f,
                            0.12837916612625122f};
  static const float E1[] = {0.00034371743095107377f, -0.0008625054033473134f,
                             -0.0006756556686013937f, 0.0060370382852852345f,
                             -0.008976282551884651f,  -0.006618595216423273f,
                             0.04810353368520737f,    -0.0901578813791275f,
                             0.09235620498657227f,    -0.052774980664253235f,
                             0.013328328728675842f};
  static const float E2[] = {-5.902226689613599e-07f, -2.0731817130581476e-05f,
                             8.328210969921201e-05f,  -0.00017303484492003918f,
                             0.00026312729460187256f, -0.0003130341647192836f,
                             0.00028660957468673587f, -0.00019588705617934465f,
                             9.486320050200447e-05f,  -2.9186841857153922e-05f,
                             4.3027794163208455e-06f};
  LLVMValueRef a = fabs32(e, x);
  LLVMValueRef z = mul(e, x, x);
  LLVMValueRef rs = fmadd(e, x, horner32(e, z, Q, 7), x);
  LLVMValueRef lo = fcmp(e, LLVMRealOLT, a, kf(e, 2.5f));
  LLVMValueRef t = sub(e, a, sel(e, lo, kf(e, 1.75f), kf(e, 3.25f)));
  LLVMValueRef h = sel(e, lo, kf(e, E1[0]), kf(e, E2[0]));
  for (int i = 1; i < 11; i++) h = fmadd(e, h, t, sel(e, lo, kf(e, E1[i]), kf(e, E2[i])));
  LLVMValueRef rl = sub(e, kf(e, 1.0f), h);
  rl = sel(e, fcmp(e, LLVMRealOGE, a, kf(e, 4.0f)), kf(e, 1.0f), rl);
  rl = copysign32(e, rl, x);
  return sel(e, fcmp(e, LLVMRealOLT, a, kf(e, 1.0f)), rs, rl);
}

/* ---- sin, cos (fp64 lanes) ----
 * q = round(x·2/π) (magic 1.5·2^52), r = x − q·P1 − q·P2 − q·P3 with π/2 = P1 + P2 + P3, P1 and
 * P2 of 28 bits, so q·P1, q·P2 and x − q·P1 are exact for |q| < 2^25 (|x| < 5.2e7); then Taylor
 * sin r (to r^11) / cos r (to r^10) on |r| ≤ π/4 in fp64, quadrant from q mod 4, one rounding to
 * fp32 at the end. Clamped to [−1, 1] so that huge arguments still give bounded values. The FMA
 * variant fuses the reduction and Horner steps (about a third fewer fp64 operations).
 * The fma variant on AVX-512 hosts uses this code only for |x| > 2^19, ±inf and NaN (sc32_fallback
 * below); an fp32 version by polynomials alone (π/2 steps, compensated fp32 Taylor polynomials)
 * had reached 0.513 ulp at ~110 zmm instructions, slower than this; the fp32 code below reduces by
 * π/16 and reads sin and cos of q·π/16 from a table, so its polynomials are short and their
 * errors small against the result. */
static const double kSinS[] = {-1.0 / 39916800, 1.0 / 362880, -1.0 / 5040, 1.0 / 120, -1.0 / 6};
static const double kCosC[] = {-1.0 / 3628800, 1.0 / 40320, -1.0 / 720, 1.0 / 24, -0.5};

/* The reduction: r (fp64) and z = r², and q in i32 lanes (its low bits give the quadrant). */
static void sc_reduce(em *e, LLVMValueRef x, LLVMValueRef *r_out, LLVMValueRef *z_out,
                      LLVMValueRef *qi_out) {
  const double MD = 6755399441055744.0; /* 1.5·2^52 */
  LLVMValueRef xd = LLVMBuildFPExt(e->b, x, e->vd, "");
  LLVMValueRef t = fmadd(e, xd, kd(e, 0.6366197723675814), kd(e, MD));
  LLVMValueRef q = sub(e, t, kd(e, MD));
  /* q mod 4 from the low bits, in i32 lanes (the fp32 width) */
  *qi_out = LLVMBuildTrunc(e->b, d2l(e, t), e->vi, "");
  LLVMValueRef nq = neg(e, q);
  LLVMValueRef r = fmadd(e, nq, kd(e, 1.570796325802803), xd);
  r = fmadd(e, nq, kd(e, 9.920935739593517e-10), r);
  r = fmadd(e, nq, kd(e, 5.721188726109832e-18), r);
  *r_out = r;
  *z_out = mul(e, r, r);
}

/* The polynomial g + g·z·P(z) for (g, P) = (r, S) (sin r) or (1, C) (cos r), by Horner: in the
 * fma variant the same operations as the per-lane select form below applies to a lane whose
 * choice it is, so the two give the same bits. */
static LLVMValueRef sc_poly(em *e, LLVMValueRef r, LLVMValueRef z, int cos_poly) {
  const double *P = cos_poly ? kCosC : kSinS;
  if (!e->fma) {
    return cos_poly ? fmadd(e, z, horner64(e, z, P, 5), kd(e, 1.0))
                    : fmadd(e, r, mul(e, z, horner64(e, z, P, 5)), r);
  }
  LLVMValueRef h = kd(e, P[0]);
  for (int i = 1; i < 5; i++) h = fmadd(e, h, z, kd(e, P[i]));
  LLVMValueRef g = cos_poly ? kd(e, 1.0) : r;
  return fmadd(e, g, mul(e, z, h), g);
}

/* From the fp64 value of the quadrant's polynomial to the result: one rounding to fp32, the sign
 * of quadrants 2 and 3 (qi already advanced by one for cos), the clamp, sin(±0) = ±0. */
static LLVMValueRef sc_finish(em *e, LLVMValueRef x, LLVMValueRef res, LLVMValueRef qi, int is_cos) {
  res = LLVMBuildFPTrunc(e->b, res, e->vf, "");
  /* the sign of quadrants 2 and 3, then the clamp, in fp32 (fptrunc is monotonic and symmetric,
   * so this is the same value as negating and clamping in fp64) */
  LLVMValueRef sgn = shl(e, iand(e, qi, ki(e, 2)), ki(e, 30));
  res = i2f(e, LLVMBuildXor(e->b, f2i(e, res), sgn, ""));
  res = sel(e, fcmp(e, LLVMRealOGT, res, kf(e, 1.0f)), kf(e, 1.0f), res);
  res = sel(e, fcmp(e, LLVMRealOLT, res, kf(e, -1.0f)), kf(e, -1.0f), res);
  if (!is_cos) res = sel(e, fcmp(e, LLVMRealOEQ, x, kf(e, 0.0f)), x, res); /* sin(±0) = ±0 */
  return res;
}

static LLVMValueRef sincos64(em *e, LLVMValueRef x, int is_cos) {
  LLVMValueRef r, z, qi;
  sc_reduce(e, x, &r, &z, &qi);
  if (is_cos) qi = iadd(e, qi, ki(e, 1));
  LLVMValueRef odd = icmp(e, LLVMIntNE, iand(e, qi, ki(e, 1)), ki(e, 0));
  LLVMValueRef res;
  if (!e->fma) {
    res = sel(e, odd, sc_poly(e, r, z, 1), sc_poly(e, r, z, 0));
  } else {
    /* one polynomial per lane, its coefficients chosen with select: g + g·z·P(z) with
     * (g, P) = (r, S) for sin r and (1, C) for cos r (selects are cheaper than a second
     * Horner chain: they do not compete for the two FMA pipes) */
    LLVMValueRef h = sel(e, odd, kd(e, kCosC[0]), kd(e, kSinS[0]));
    for (int i = 1; i < 5; i++) h = fmadd(e, h, z, sel(e, odd, kd(e, kCosC[i]), kd(e, kSinS[i])));
    LLVMValueRef g = sel(e, odd, kd(e, 1.0), r);
    res = fmadd(e, g, mul(e, z, h), g);
  }
  return sc_finish(e, x, res, qi, is_cos);
}

/* sin and cos of one argument (xir__vm_sincos): one reduction, both polynomials (each lane needs
 * both: sin's quadrant picks one, cos's the other) and no coefficient selects; each result has
 * the bits of sincos_common's. */
static void sincos64_pair(em *e, LLVMValueRef x, LLVMValueRef *s_out, LLVMValueRef *c_out) {
  LLVMValueRef r, z, qi;
  sc_reduce(e, x, &r, &z, &qi);
  LLVMValueRef sp = sc_poly(e, r, z, 0), cp = sc_poly(e, r, z, 1);
  LLVMValueRef odd = icmp(e, LLVMIntNE, iand(e, qi, ki(e, 1)), ki(e, 0));
  LLVMValueRef qc = iadd(e, qi, ki(e, 1));
  *s_out = sc_finish(e, x, sel(e, odd, cp, sp), qi, 0);
  *c_out = sc_finish(e, x, sel(e, odd, sp, cp), qc, 1);
}

/* ---- sin and cos in fp32 lanes (fma variant on AVX-512 hosts, |x| ≤ 2^19) ----
 * x = q·π/16 + r with q = round(x·fp32(16/π)) (magic-number addition) and |r| ≤ 0.518·π/16 (the
 * constant is 6.5e−9 relative off: up to 0.018 of q at |x| = 2^19), then
 * sin x = sin(a)·cos r + cos(a)·sin r with a = q·π/16: sin a and cos a = sin(a + π/2) come from one
 * 32-entry table of sin(jπ/16) (j = q mod 32) held as hi + lo (fp32 each, hi + lo within 2^-48
 * relative), read by vpermi2ps (lookup32). cos x = sin(x + π/2) reads the table at j + 8 and
 * j + 16 (= −sin a, the table is antisymmetric bit for bit).
 * The reduction, with π/16 = A1 + A2 + A3 (fp32 parts; the rest is 1.3e−24):
 *   r1 = fma(−q, A1, x) is exact: q·A1 and x are multiples of 2^−26 (|x| ≥ 1/8; smaller x have
 *   q ∈ {0, ±1} and are multiples of 2^−27) and |r1| ≤ π/32 + |q|·|π/16 − A1| < 1/8 as long as
 *   |q| < 3.6e6, so r1 fits in 24 bits. |x| ≤ 2^19 gives |q| ≤ 2.67e6 (and |q| < 2^22 for
 *   the magic-number rounding); beyond that the fp64 code below runs.
 *   P + pl = q·A2 exactly (fma), rh = r1 − P with its error by Fast2Sum (r1 is a multiple of 2^−26
 *   and |P| < 2^−5, so r1 is a multiple of ulp(P): exact), rl = err − pl − q·A3.
 *   rh + rl is within 2^−31 relative of x − q·π/16 for every fp32 |x| ≤ 2^19 (checked against a
 *   binary128 reduction, every 5th pattern) — also at the fp32 values nearest multiples of π.
 * The result is S + C·rh + [S·(cos r − 1) + C·(sin r − r + rl) + C_lo·rh + S_lo]
 * (S, C = sin a, cos a): S + C·rh is kept exactly as s1 + e1 + pl (TwoProduct by fma, Fast2Sum:
 * |S| ≥ 0.195 > |C·rh| unless S = 0), the bracket is below 0.0053·|S| + 0.0018·|r| and carries
 * only its own fp32 rounding errors, and the final s1 + tail rounds once. cos r − 1 to z³ and
 * sin r − r to r⁵ (Taylor; the next terms are below 2^−29 of the result). No clamp: the result is
 * within 0.531 ulp of sin x or cos x (exhaustive), and the float above 1 is 2 ulp away. */
static const float kSinTabHi[16] = {
    0.0f,          0x1.8f8b84p-3f, 0x1.87de2ap-2f, 0x1.1c73b4p-1f, 0x1.6a09e6p-1f, 0x1.a9b662p-1f,
    0x1.d906bcp-1f, 0x1.f6297cp-1f, 0x1.0p+0f,      0x1.f6297cp-1f, 0x1.d906bcp-1f, 0x1.a9b662p-1f,
    0x1.6a09e6p-1f, 0x1.1c73b4p-1f, 0x1.87de2ap-2f, 0x1.8f8b84p-3f};
static const float kSinTabLo[16] = {
    0.0f,           -0x1.cb2cfap-30f, 0x1.abaa58p-28f, -0x1.9465cep-27f, 0x1.9fcef4p-27f,
    0x1.21d434p-26f, 0x1.e651a8p-26f, 0x1.feeb96p-26f, 0.0f,             0x1.feeb96p-26f,
    0x1.e651a8p-26f, 0x1.21d434p-26f, 0x1.9fcef4p-27f, -0x1.9465cep-27f, 0x1.abaa58p-28f,
    -0x1.cb2cfap-30f};
#define SC32_LIMIT 524288.0f /* 2^19: the fp32 reduction is exact below (see above) */

static int sc_fp32(const em *e) { return e->fma && e->x512; }

/* sin(jπ/16) hi or lo at j = idx mod 32 (i32 lanes: vpermi2ps reads only the low 5 bits of
 * each index, so no mask). */
static LLVMValueRef sc32_tab(em *e, int lo, LLVMValueRef idx) {
  float tab[32];
  const float *h = lo ? kSinTabLo : kSinTabHi;
  for (int i = 0; i < 16; i++) {
    tab[i] = h[i];
    tab[16 + i] = -h[i]; /* sin(a + π) = −sin a, bit for bit (also −0) */
  }
  return lookup32(e, tab, idx);
}

typedef struct sc32 {
  LLVMValueRef rh, rl, z, cm1, sm, j; /* r = rh + rl, z = rh², cos r − 1, sin r − r − rl, q */
} sc32;

static void sc32_reduce(em *e, LLVMValueRef x, sc32 *o) {
  LLVMValueRef M = kf(e, 12582912.0f); /* 1.5·2^23 */
  LLVMValueRef t = fma_exact(e, x, kf(e, 0x1.45f306p+2f), M); /* x·16/π + M */
  LLVMValueRef q = sub(e, t, M), nq = neg(e, q);
  o->j = f2i(e, t); /* q mod 2^22 in the low bits */
  LLVMValueRef r1 = fma_exact(e, nq, kf(e, 0x1.921fb6p-3f), x);
  LLVMValueRef A2 = kf(e, -0x1.777a5cp-28f);
  LLVMValueRef P = mul(e, q, A2);
  LLVMValueRef pl = fma_exact(e, q, A2, neg(e, P));
  LLVMValueRef rh = sub(e, r1, P);
  LLVMValueRef err = sub(e, neg(e, P), sub(e, rh, r1));
  o->rl = fma_exact(e, nq, kf(e, -0x1.ee59dap-53f), sub(e, err, pl));
  o->rh = rh;
  LLVMValueRef z = mul(e, rh, rh);
  o->z = z;
  o->cm1 = mul(e, z, fma_exact(e, z, fma_exact(e, z, kf(e, -1.0f / 720), kf(e, 1.0f / 24)),
                               kf(e, -0.5f)));
  o->sm = mul(e, mul(e, rh, z), fma_exact(e, z, kf(e, 1.0f / 120), kf(e, -1.0f / 6)));
}

/* S·cos r + C·sin r for the table values S = Sh + Sl, C = Ch + Cl (see above). */
static LLVMValueRef sc32_combine(em *e, const sc32 *o, LLVMValueRef Sh, LLVMValueRef Sl,
                                 LLVMValueRef Ch, LLVMValueRef Cl) {
  LLVMValueRef p = mul(e, Ch, o->rh);
  LLVMValueRef pl = fma_exact(e, Ch, o->rh, neg(e, p));
  LLVMValueRef s1 = add(e, Sh, p);
  LLVMValueRef e1 = add(e, sub(e, Sh, s1), p);
  LLVMValueRef tail = fma_exact(e, Ch, add(e, o->rl, o->sm), add(e, add(e, e1, pl), Sl));
  tail = fma_exact(e, Cl, o->rh, tail);
  tail = fma_exact(e, Sh, o->cm1, tail);
  return add(e, s1, tail);
}

/* The lanes that need the fp64 code (|x| > 2^19, ±inf, NaN): if there is any, the vector also
 * runs the fp64 code (one branch per vector) and those lanes take its value, so a lane's result
 * depends on its own x only (the same bits at every W and task grain). v[0] (sin) and v[1] (cos;
 * which = 0 sin only, 1 cos only, 2 both) are the fp32 values on entry and the results on return. */
static void sc32_fallback(em *e, LLVMValueRef x, int which, LLVMValueRef v[2]) {
  LLVMValueRef big = fcmp(e, LLVMRealUGT, fabs32(e, x), kf(e, SC32_LIMIT));
  LLVMValueRef any = big;
  if (e->W > 1) {
    LLVMTypeRef iw = LLVMIntTypeInContext(e->C, e->W);
    any = icmp(e, LLVMIntNE, LLVMBuildBitCast(e->b, big, iw, ""), LLVMConstInt(iw, 0, 0));
  }
  LLVMBasicBlockRef entry = LLVMGetInsertBlock(e->b);
  LLVMValueRef fn = LLVMGetBasicBlockParent(entry);
  LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(e->C, fn, "sc.fp64");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(e->C, fn, "sc.done");
  LLVMBuildCondBr(e->b, any, slow, done);
  LLVMPositionBuilderAtEnd(e->b, slow);
  LLVMValueRef w[2] = {NULL, NULL};
  if (which == 2) sincos64_pair(e, x, &w[0], &w[1]);
  else w[which] = sincos64(e, x, which);
  for (int k = 0; k < 2; k++)
    if (w[k]) w[k] = sel(e, big, w[k], v[k]);
  LLVMBasicBlockRef slow_end = LLVMGetInsertBlock(e->b);
  LLVMBuildBr(e->b, done);
  LLVMPositionBuilderAtEnd(e->b, done);
  for (int k = 0; k < 2; k++) {
    if (!w[k]) continue;
    LLVMValueRef phi = LLVMBuildPhi(e->b, e->vf, "");
    LLVMValueRef vals[2] = {v[k], w[k]};
    LLVMBasicBlockRef bbs[2] = {entry, slow_end};
    LLVMAddIncoming(phi, vals, bbs, 2);
    v[k] = phi;
  }
}

static LLVMValueRef sincos_common(em *e, LLVMValueRef x, int is_cos) {
  if (!sc_fp32(e)) return sincos64(e, x, is_cos);
  sc32 o;
  sc32_reduce(e, x, &o);
  LLVMValueRef js = is_cos ? iadd(e, o.j, ki(e, 8)) : o.j;
  LLVMValueRef jc = iadd(e, js, ki(e, 8));
  LLVMValueRef v[2] = {NULL, NULL};
  v[is_cos] = sc32_combine(e, &o, sc32_tab(e, 0, js), sc32_tab(e, 1, js), sc32_tab(e, 0, jc),
                           sc32_tab(e, 1, jc));
  if (!is_cos) v[0] = sel(e, fcmp(e, LLVMRealOEQ, x, kf(e, 0.0f)), x, v[0]); /* sin(±0) = ±0 */
  sc32_fallback(e, x, is_cos, v);
  return v[is_cos];
}

/* sin and cos of one argument: one reduction and one set of table reads (sin a, cos a); cos x
 * combines (cos a, −sin a), which are the values cos's own reads at j + 8 and j + 16 give, so
 * each result has the bits of sincos_common's. */
static void sincos_pair(em *e, LLVMValueRef x, LLVMValueRef *s_out, LLVMValueRef *c_out) {
  if (!sc_fp32(e)) {
    sincos64_pair(e, x, s_out, c_out);
    return;
  }
  sc32 o;
  sc32_reduce(e, x, &o);
  LLVMValueRef j8 = iadd(e, o.j, ki(e, 8));
  LLVMValueRef Sh = sc32_tab(e, 0, o.j), Sl = sc32_tab(e, 1, o.j);
  LLVMValueRef Ch = sc32_tab(e, 0, j8), Cl = sc32_tab(e, 1, j8);
  LLVMValueRef s32 = sc32_combine(e, &o, Sh, Sl, Ch, Cl);
  s32 = sel(e, fcmp(e, LLVMRealOEQ, x, kf(e, 0.0f)), x, s32);
  LLVMValueRef v[2] = {s32, sc32_combine(e, &o, Ch, Cl, neg(e, Sh), neg(e, Sl))};
  sc32_fallback(e, x, 2, v);
  *s_out = v[0];
  *c_out = v[1];
}
static LLVMValueRef body_sin(em *e, LLVMValueRef x) { return sincos_common(e, x, 0); }
static LLVMValueRef body_cos(em *e, LLVMValueRef x) { return sincos_common(e, x, 1); }

/* ---- pow (fp64 lanes inside) ----
 * log|x| in fp64: |x| = m·2^k, m ∈ [√½, √2), s = (m−1)/(m+1), log m = 2s·(1 + s²/3 + … + s¹⁴/15);
 * t = y·log|x|; e^t in fp64: n = round(t/ln2), r = t − n·ln2 (ln2 in two parts), Taylor to r^10,
 * ·2^n; one rounding to fp32 (overflow → inf, subnormals rounded once). Then the C99 special
 * cases: sign for x < 0 and odd integer y, NaN for x < 0 finite and non-integer y, pow(x, ±0) = 1,
 * pow(1, y) = 1, pow(−1, ±inf) = 1, NaN otherwise propagates.
 * The FMA variant: m and k come from the fp32 bits (i32 lanes; subnormals scaled by 2^23 first),
 * 1/(m+1) is an fp32 division refined by one fp64 Newton step (relative error ~2^-46) instead of
 * an fp64 division, the series stop at s¹²/13 and r^9 (truncation below 2^-37 relative), and every
 * Horner and reduction step is an fma. It is split in two, log|x| (pow_log) and the rest
 * (pow_finish), so that xir__vm_pow_uniform_base can compute the log once. */
static LLVMValueRef pow_log(em *e, LLVMValueRef x) {
  static const double L[] = {1.0 / 15, 1.0 / 13, 1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3, 1.0};
  const double inf = __builtin_inf();
  LLVMValueRef ax = fabs32(e, x);
  LLVMValueRef xd = LLVMBuildFPExt(e->b, ax, e->vd, "");
  LLVMValueRef lg;
  if (!e->fma) {
    LLVMValueRef bits = d2l(e, xd);
    LLVMValueRef k = isub(e, lshr(e, bits, kl(e, 52)), kl(e, 1023));
    LLVMValueRef m = l2d(e, ior(e, iand(e, bits, kl(e, 0x000fffffffffffffLL)),
                                kl(e, 0x3ff0000000000000LL)));
    LLVMValueRef big = fcmp(e, LLVMRealOGT, m, kd(e, 1.4142135623730951));
    m = sel(e, big, mul(e, m, kd(e, 0.5)), m);
    k = iadd(e, k, sel(e, big, kl(e, 1), kl(e, 0)));
    LLVMValueRef s = fdiv(e, sub(e, m, kd(e, 1.0)), add(e, m, kd(e, 1.0)));
    LLVMValueRef s2 = mul(e, s, s);
    lg = add(e, mul(e, LLVMBuildSIToFP(e->b, k, e->vd, ""), kd(e, 0.6931471805599453)),
             mul(e, add(e, s, s), horner64(e, s2, L, 8)));
  } else {
    LLVMValueRef sub_n = fcmp(e, LLVMRealOLT, ax, kf(e, 1.17549435e-38f));
    LLVMValueRef bits = f2i(e, sel(e, sub_n, mul(e, ax, kf(e, 8388608.0f)), ax));
    LLVMValueRef k = isub(e, lshr(e, bits, ki(e, 23)), ki(e, 127));
    k = isub(e, k, sel(e, sub_n, ki(e, 23), ki(e, 0)));
    LLVMValueRef mf = i2f(e, ior(e, iand(e, bits, ki(e, 0x007fffff)), ki(e, 0x3f800000)));
    LLVMValueRef big = fcmp(e, LLVMRealOGT, mf, kf(e, 1.41421354f));
    mf = sel(e, big, mul(e, mf, kf(e, 0.5f)), mf); /* m ∈ (0.7071, 1.4142], exact */
    k = iadd(e, k, sel(e, big, ki(e, 1), ki(e, 0)));
    LLVMValueRef m = LLVMBuildFPExt(e->b, mf, e->vd, "");
    LLVMValueRef d = add(e, m, kd(e, 1.0));
    LLVMValueRef rf = fdiv(e, kf(e, 1.0f), add(e, mf, kf(e, 1.0f))); /* ≈ 1/d, 2^-23 */
    LLVMValueRef rd = LLVMBuildFPExt(e->b, rf, e->vd, "");
    rd = fmadd(e, rd, fmadd(e, neg(e, d), rd, kd(e, 1.0)), rd); /* Newton: ≈ 2^-46 */
    LLVMValueRef s = mul(e, sub(e, m, kd(e, 1.0)), rd);
    LLVMValueRef s2 = mul(e, s, s);
    lg = fmadd(e, LLVMBuildSIToFP(e->b, k, e->vd, ""), kd(e, 0.6931471805599453),
               mul(e, add(e, s, s), horner64(e, s2, L + 1, 7)));
  }
  lg = sel(e, fcmp(e, LLVMRealOEQ, xd, kd(e, 0.0)), kd(e, -inf), lg);
  return sel(e, fcmp(e, LLVMRealOEQ, xd, kd(e, inf)), kd(e, inf), lg);
}

static LLVMValueRef pow_finish(em *e, LLVMValueRef x, LLVMValueRef y, LLVMValueRef lg) {
  static const double X[] = {1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720,
                             1.0 / 120,     1.0 / 24,     1.0 / 6,     0.5,        1.0,
                             1.0};
  const double MD = 6755399441055744.0;
  LLVMValueRef tt = mul(e, LLVMBuildFPExt(e->b, y, e->vd, ""), lg);
  /* exp in fp64; NaN becomes 0 here and is restored by the special cases below */
  tt = sel(e, fcmp(e, LLVMRealOGT, tt, kd(e, 100.0)), kd(e, 100.0), tt);
  tt = sel(e, fcmp(e, LLVMRealOLT, tt, kd(e, -110.0)), kd(e, -110.0), tt);
  tt = sel(e, fcmp(e, LLVMRealUNO, tt, tt), kd(e, 0.0), tt);
  LLVMValueRef tm = fmadd(e, tt, kd(e, 1.4426950408889634), kd(e, MD));
  LLVMValueRef n = sub(e, tm, kd(e, MD));
  LLVMValueRef ni = isub(e, d2l(e, tm), d2l(e, kd(e, MD)));
  LLVMValueRef r = fmadd(e, n, kd(e, -0.6931471803691238), tt);
  r = fmadd(e, n, kd(e, -1.9082149292705877e-10), r);
  LLVMValueRef p = e->fma ? horner64(e, r, X + 1, 10) : horner64(e, r, X, 11);
  LLVMValueRef sc = l2d(e, shl(e, iadd(e, ni, kl(e, 1023)), kl(e, 52)));
  LLVMValueRef res = LLVMBuildFPTrunc(e->b, mul(e, p, sc), e->vf, "");
  /* integer and odd-integer y */
  LLVMValueRef ay = fabs32(e, y);
  LLVMValueRef yc = sel(e, fcmp(e, LLVMRealOLT, ay, kf(e, 16777216.0f)), y, kf(e, 0.0f));
  LLVMValueRef yi = LLVMBuildFPToSI(e->b, yc, e->vi, "");
  LLVMValueRef yint = lor(e, fcmp(e, LLVMRealOGE, ay, kf(e, 8388608.0f)),
                          fcmp(e, LLVMRealOEQ, LLVMBuildSIToFP(e->b, yi, e->vf, ""), yc));
  LLVMValueRef yodd = land(e, yint, icmp(e, LLVMIntNE, iand(e, yi, ki(e, 1)), ki(e, 0)));
  LLVMValueRef xneg = icmp(e, LLVMIntSLT, f2i(e, x), ki(e, 0)); /* sign bit, −0 included */
  res = sel(e, land(e, xneg, yodd), neg(e, res), res);
  LLVMValueRef bad = land(e, fcmp(e, LLVMRealOLT, x, kf(e, 0.0f)),
                          land(e, fcmp(e, LLVMRealONE, x, kf(e, -__builtin_inff())),
                               LLVMBuildNot(e->b, yint, "")));
  res = sel(e, bad, kf(e, __builtin_nanf("")), res);
  res = sel(e, fcmp(e, LLVMRealUNO, x, y), add(e, x, y), res);
  LLVMValueRef one = lor(e, fcmp(e, LLVMRealOEQ, y, kf(e, 0.0f)),
                         fcmp(e, LLVMRealOEQ, x, kf(e, 1.0f)));
  one = lor(e, one, land(e, fcmp(e, LLVMRealOEQ, x, kf(e, -1.0f)),
                         fcmp(e, LLVMRealOEQ, ay, kf(e, __builtin_inff()))));
  return sel(e, one, kf(e, 1.0f), res);
}

static LLVMValueRef body_pow(em *e, LLVMValueRef x, LLVMValueRef y) {
  return pow_finish(e, x, y, pow_log(e, x));
}

/* ---- functions ---- */

static void add_enum_attr(LLVMContextRef C, LLVMValueRef f, const char *name, uint64_t val) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  if (kind) LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(C, kind, val));
}

void xir__vm_function_attrs(LLVMValueRef fn, unsigned W) {
  LLVMContextRef C = LLVMGetTypeContext(LLVMTypeOf(fn));
  add_enum_attr(C, fn, "nounwind", 0);
  /* At least 512: at every W, vmath widens some operations to one 16-lane AVX-512 instruction
   * (rcp14, lookup32), so 512-bit vectors must be legal even in a W = 4 function. */
  unsigned bits = 32 * (W ? W : 1);
  if (bits < 512) bits = 512;
  char buf[16];
  int n = snprintf(buf, sizeof buf, "%u", bits);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(C, "min-legal-vector-width", 22, buf, (unsigned)n));
}

/* An internal fastcc function with the attributes of a pure math function (no body yet). */
static LLVMValueRef new_internal_fn(xir__vm *vm, const char *name, LLVMTypeRef fty, unsigned W) {
  LLVMValueRef f = LLVMAddFunction(vm->mod, name, fty);
  LLVMSetLinkage(f, LLVMInternalLinkage);
  LLVMSetFunctionCallConv(f, LLVMFastCallConv);
  xir__vm_function_attrs(f, W);
  add_enum_attr(vm->ctx, f, "willreturn", 0);
  add_enum_attr(vm->ctx, f, "nosync", 0);
  add_enum_attr(vm->ctx, f, "nofree", 0);
  add_enum_attr(vm->ctx, f, "norecurse", 0);
  add_enum_attr(vm->ctx, f, "memory", 0); /* memory(none) */
  return f;
}

static LLVMValueRef get_fn(xir__vm *vm, xir__vm_fn fn, unsigned W) {
  int wi = width_index(W);
  if (wi < 0) return NULL;
  int fz = (vm->fma ? 1 : 0) + (vm->avx512 ? 2 : 0);
  if (vm->fns[fz][fn][wi]) return vm->fns[fz][fn][wi];
  char name[64];
  static const char *const tags[4] = {"", ".fma", ".x512", ".fma.x512"};
  const char *tag = tags[fz];
  if (W == 1) snprintf(name, sizeof name, "xir.v%s%s.f32", k_fn[fn].name, tag);
  else snprintf(name, sizeof name, "xir.v%s%s.v%uf32", k_fn[fn].name, tag, W);
  LLVMTypeRef vf = lanes(LLVMFloatTypeInContext(vm->ctx), W);
  LLVMTypeRef params[2] = {vf, vf};
  LLVMTypeRef fty = LLVMFunctionType(vf, params, (unsigned)k_fn[fn].arity, 0);
  LLVMValueRef f = LLVMGetNamedFunction(vm->mod, name);
  if (f) {
    if (LLVMGlobalGetValueType(f) != fty) return NULL;
    vm->fns[fz][fn][wi] = f;
    return f;
  }
  f = new_internal_fn(vm, name, fty, W);
  vm->fns[fz][fn][wi] = f; /* before the body: bodies may call other functions */
  LLVMBuilderRef b = LLVMCreateBuilderInContext(vm->ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(vm->ctx, f, "entry"));
  em e;
  em_init(&e, vm, b, W);
  LLVMValueRef x = LLVMGetParam(f, 0), r = NULL;
  switch (fn) {
    case XIR__VM_EXP: r = body_exp(&e, x); break;
    case XIR__VM_LOG: r = body_log(&e, x); break;
    case XIR__VM_TANH: r = body_tanh(&e, x); break;
    case XIR__VM_ERF: r = body_erf(&e, x); break;
    case XIR__VM_SIGMOID: r = body_sigmoid(&e, x); break;
    case XIR__VM_SIGMOID16: r = body_sigmoid16(&e, x); break;
    case XIR__VM_EXPNP: r = exp_core(&e, x, 0, EXP_NONPOS, 0); break;
    case XIR__VM_SIN: r = body_sin(&e, x); break;
    case XIR__VM_COS: r = body_cos(&e, x); break;
    case XIR__VM_POW: r = body_pow(&e, x, LLVMGetParam(f, 1)); break;
    default: break; /* sqrt, rsqrt are inline */
  }
  LLVMBuildRet(b, r);
  LLVMDisposeBuilder(b);
  return f;
}

static LLVMValueRef sqrt_inline(em *e, LLVMValueRef x) {
  unsigned id = LLVMLookupIntrinsicID("llvm.sqrt", 9);
  LLVMTypeRef t = e->vf;
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(e->vm->mod, id, &t, 1);
  LLVMTypeRef fty = LLVMIntrinsicGetType(e->C, id, &t, 1);
  return LLVMBuildCall2(e->b, fty, decl, &x, 1, "");
}

/* Emits a call of fn at e->b. */
static LLVMValueRef call_fn(em *e, xir__vm_fn fn, LLVMValueRef x, LLVMValueRef y) {
  if (fn == XIR__VM_SQRT) return sqrt_inline(e, x);
  if (fn == XIR__VM_RSQRT) return fdiv(e, kf(e, 1.0f), sqrt_inline(e, x));
  LLVMValueRef f = get_fn(e->vm, fn, e->W);
  if (!f) return NULL;
  LLVMValueRef args[2] = {x, y};
  LLVMValueRef c =
      LLVMBuildCall2(e->b, LLVMGlobalGetValueType(f), f, args, (unsigned)k_fn[fn].arity, "");
  LLVMSetInstructionCallConv(c, LLVMFastCallConv);
  return c;
}

/* ---- pow with a uniform base ----
 * xir.vpowlog[.fma].f32(float base) -> double: pow_log at W = 1 (the same fp64 operations as
 * every lane of pow, so the same value); xir.vpowu[.fma].<type>(float base, double lg, y):
 * pow_finish with base and lg splat. pow_uniform_base(b, y) is therefore bit-identical to
 * pow(splat(b), y), and the log is computed once per call (or once per loop when LICM hoists the
 * speculatable, memory(none) powlog call). */
static LLVMValueRef splat_value(em *e, LLVMValueRef s, LLVMTypeRef vt) {
  if (e->W == 1) return s;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(e->C);
  LLVMValueRef v = LLVMBuildInsertElement(e->b, LLVMGetPoison(vt), s, LLVMConstInt(i32, 0, 0), "");
  return LLVMBuildShuffleVector(e->b, v, LLVMGetPoison(vt), LLVMConstNull(lanes(i32, e->W)), "");
}

static LLVMValueRef get_powlog(xir__vm *vm) {
  int fz = vm->fma ? 1 : 0;
  if (vm->powlog[fz]) return vm->powlog[fz];
  const char *name = fz ? "xir.vpowlog.fma.f32" : "xir.vpowlog.f32";
  LLVMTypeRef f32 = LLVMFloatTypeInContext(vm->ctx);
  LLVMTypeRef fty = LLVMFunctionType(LLVMDoubleTypeInContext(vm->ctx), &f32, 1, 0);
  LLVMValueRef f = LLVMGetNamedFunction(vm->mod, name);
  if (f) return LLVMGlobalGetValueType(f) == fty ? (vm->powlog[fz] = f) : NULL;
  f = new_internal_fn(vm, name, fty, 1);
  add_enum_attr(vm->ctx, f, "speculatable", 0); /* pure arithmetic: LICM may hoist the call */
  vm->powlog[fz] = f;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(vm->ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(vm->ctx, f, "entry"));
  em e;
  em_init(&e, vm, b, 1);
  LLVMBuildRet(b, pow_log(&e, LLVMGetParam(f, 0)));
  LLVMDisposeBuilder(b);
  return f;
}

static LLVMValueRef get_powu(xir__vm *vm, unsigned W) {
  int wi = width_index(W), fz = vm->fma ? 1 : 0;
  if (wi < 0) return NULL;
  if (vm->powu[fz][wi]) return vm->powu[fz][wi];
  char name[64];
  const char *tag = fz ? ".fma" : "";
  if (W == 1) snprintf(name, sizeof name, "xir.vpowu%s.f32", tag);
  else snprintf(name, sizeof name, "xir.vpowu%s.v%uf32", tag, W);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(vm->ctx), vf = lanes(f32, W);
  LLVMTypeRef ps[3] = {f32, LLVMDoubleTypeInContext(vm->ctx), vf};
  LLVMTypeRef fty = LLVMFunctionType(vf, ps, 3, 0);
  LLVMValueRef f = LLVMGetNamedFunction(vm->mod, name);
  if (f) return LLVMGlobalGetValueType(f) == fty ? (vm->powu[fz][wi] = f) : NULL;
  f = new_internal_fn(vm, name, fty, W);
  vm->powu[fz][wi] = f;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(vm->ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(vm->ctx, f, "entry"));
  em e;
  em_init(&e, vm, b, W);
  LLVMValueRef x = splat_value(&e, LLVMGetParam(f, 0), e.vf);
  LLVMValueRef lg = splat_value(&e, LLVMGetParam(f, 1), e.vd);
  LLVMBuildRet(b, pow_finish(&e, x, LLVMGetParam(f, 2), lg));
  LLVMDisposeBuilder(b);
  return f;
}

/* Emits pow_uniform_base at b (W lanes); NULL when a function of that name has another type. */
static LLVMValueRef call_pow_uniform(xir__vm *vm, LLVMBuilderRef b, LLVMValueRef base,
                                     LLVMValueRef y, unsigned W) {
  LLVMValueRef fl = get_powlog(vm), fu = get_powu(vm, W);
  if (!fl || !fu) return NULL;
  LLVMValueRef lg = LLVMBuildCall2(b, LLVMGlobalGetValueType(fl), fl, &base, 1, "");
  LLVMSetInstructionCallConv(lg, LLVMFastCallConv);
  LLVMValueRef args[3] = {base, lg, y};
  LLVMValueRef c = LLVMBuildCall2(b, LLVMGlobalGetValueType(fu), fu, args, 3, "");
  LLVMSetInstructionCallConv(c, LLVMFastCallConv);
  return c;
}

/* xir.vsincos[.fma].<type>(x) -> {sin, cos} (sincos_pair). */
static LLVMValueRef get_sincos(xir__vm *vm, unsigned W) {
  int wi = width_index(W), fz = (vm->fma ? 1 : 0) + (vm->avx512 ? 2 : 0);
  if (wi < 0) return NULL;
  if (vm->sincos[fz][wi]) return vm->sincos[fz][wi];
  char name[64];
  static const char *const tags[4] = {"", ".fma", ".x512", ".fma.x512"};
  const char *tag = tags[fz];
  if (W == 1) snprintf(name, sizeof name, "xir.vsincos%s.f32", tag);
  else snprintf(name, sizeof name, "xir.vsincos%s.v%uf32", tag, W);
  LLVMTypeRef vf = lanes(LLVMFloatTypeInContext(vm->ctx), W);
  LLVMTypeRef two[2] = {vf, vf};
  LLVMTypeRef st = LLVMStructTypeInContext(vm->ctx, two, 2, 0);
  LLVMTypeRef fty = LLVMFunctionType(st, &vf, 1, 0);
  LLVMValueRef f = LLVMGetNamedFunction(vm->mod, name);
  if (f) return LLVMGlobalGetValueType(f) == fty ? (vm->sincos[fz][wi] = f) : NULL;
  f = new_internal_fn(vm, name, fty, W);
  vm->sincos[fz][wi] = f;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(vm->ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(vm->ctx, f, "entry"));
  em e;
  em_init(&e, vm, b, W);
  LLVMValueRef sc[2];
  sincos_pair(&e, LLVMGetParam(f, 0), &sc[0], &sc[1]);
  LLVMValueRef agg = LLVMGetPoison(st);
  agg = LLVMBuildInsertValue(b, agg, sc[0], 0, "");
  agg = LLVMBuildInsertValue(b, agg, sc[1], 1, "");
  LLVMBuildRet(b, agg);
  LLVMDisposeBuilder(b);
  return f;
}

static LLVMValueRef call_sincos(xir__vm *vm, LLVMBuilderRef b, LLVMValueRef x, unsigned W,
                                LLVMValueRef *cos_out) {
  LLVMValueRef f = get_sincos(vm, W);
  if (!f) return NULL;
  LLVMValueRef c = LLVMBuildCall2(b, LLVMGlobalGetValueType(f), f, &x, 1, "");
  LLVMSetInstructionCallConv(c, LLVMFastCallConv);
  *cos_out = LLVMBuildExtractValue(b, c, 1, "");
  return LLVMBuildExtractValue(b, c, 0, "");
}

/* ---- API ---- */

xir_status xir__vm_create(LLVMModuleRef mod, LLVMBuilderRef b, xir__vm **out, xir_diag *d) {
  if (!out) return xir__err(d, XIR_ERR_INVALID_ARG, "xir__vm_create: out is NULL");
  *out = NULL;
  if (!mod) return xir__err(d, XIR_ERR_INVALID_ARG, "xir__vm_create: module is NULL");
  xir__vm *vm = xir__calloc(1, sizeof *vm);
  if (!vm) return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  vm->mod = mod;
  vm->ctx = LLVMGetModuleContext(mod);
  vm->b = b;
  *out = vm;
  return XIR_OK;
}

void xir__vm_destroy(xir__vm *vm) { xir__free(vm); }
void xir__vm_set_builder(xir__vm *vm, LLVMBuilderRef b) { vm->b = b; }
void xir__vm_set_fma(xir__vm *vm, int on) {
  if (vm) vm->fma = on != 0;
}
int xir__vm_fma(const xir__vm *vm) { return vm && vm->fma; }
void xir__vm_set_avx512(xir__vm *vm, int on) {
  if (vm) vm->avx512 = on != 0;
}

/* 1 when LLVM's host feature list (the one the JIT compiles for by default) has every one of
 * the n names ("+name"); x86 only. */
static int host_has_all(const char *const *names, int n) {
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
  char *f = LLVMGetHostCPUFeatures();
  int found = 0;
  for (int i = 0; i < n; i++) {
    size_t nl = strlen(names[i]);
    for (const char *p = f; p && *p;) {
      const char *c = strchr(p, ',');
      size_t len = c ? (size_t)(c - p) : strlen(p);
      if (len == nl + 1 && p[0] == '+' && !memcmp(p + 1, names[i], nl)) {
        found++;
        break;
      }
      p = c ? c + 1 : NULL;
    }
  }
  LLVMDisposeMessage(f);
  return found == n;
#else
  (void)names;
  (void)n;
  return 0; /* only x86 hosts are known to need the choice; the plain path is always valid */
#endif
}
int xir__vm_host_has_fma(void) {
  static const char *const f[] = {"fma"};
  return host_has_all(f, 1);
}
int xir__vm_host_has_avx512(void) {
  static const char *const f[] = {"avx512f", "avx512vl", "avx512dq"};
  return host_has_all(f, 3);
}

/* W of a float / <W x float> type in vm's context, or 0. */
static unsigned type_width(xir__vm *vm, LLVMTypeRef t) {
  if (LLVMGetTypeContext(t) != vm->ctx) return 0;
  if (LLVMGetTypeKind(t) == LLVMFloatTypeKind) return 1;
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return 0;
  if (LLVMGetTypeKind(LLVMGetElementType(t)) != LLVMFloatTypeKind) return 0;
  unsigned W = LLVMGetVectorSize(t);
  return width_index(W) > 0 ? W : 0;
}

xir_status xir__vm_emit(xir__vm *vm, xir__vm_fn fn, LLVMValueRef x, LLVMValueRef y,
                        LLVMValueRef *out, xir_diag *d) {
  if (out) *out = NULL;
  if (!vm || !out || !x) return xir__err(d, XIR_ERR_INVALID_ARG, "xir__vm_emit: NULL argument");
  if ((unsigned)fn >= XIR__VM_COUNT)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir__vm_emit: unknown function %d", (int)fn);
  if (!vm->b || !LLVMGetInsertBlock(vm->b))
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir__vm_emit: the builder has no position");
  unsigned W = type_width(vm, LLVMTypeOf(x));
  if (!W)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "%s: the argument must be float or <W x float> (W = 2, 4, 8, 16)",
                    k_fn[fn].name);
  if (k_fn[fn].arity == 2 && (!y || LLVMTypeOf(y) != LLVMTypeOf(x)))
    return xir__err(d, XIR_ERR_INVALID_ARG, "%s needs a second argument of the same type",
                    k_fn[fn].name);
  if (k_fn[fn].arity == 1 && y)
    return xir__err(d, XIR_ERR_INVALID_ARG, "%s takes one argument", k_fn[fn].name);
  em e;
  em_init(&e, vm, vm->b, W);
  LLVMValueRef r = call_fn(&e, fn, x, y);
  if (!r)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "the module already has a function named like xir.v%s with another type",
                    k_fn[fn].name);
  *out = r;
  return XIR_OK;
}

LLVMValueRef xir__vm_call(xir__vm *vm, xir__vm_fn fn, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef r = NULL;
  return xir__vm_emit(vm, fn, x, y, &r, NULL) == XIR_OK ? r : NULL;
}

/* The map kernels' bodies: fn over x (and y), pow with a uniform base x[0], or sin and cos of
 * x into the two outputs (params 1 and 2). */
enum { MAP_FN, MAP_POW_UNIFORM, MAP_SINCOS };

static xir_status build_map(xir__vm *vm, const char *name, xir__vm_fn fn, unsigned W, int mode,
                            xir_diag *d) {
  int uniform = mode == MAP_POW_UNIFORM;
  if (!vm || !name || !name[0])
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir__vm_build_map_kernel: NULL argument");
  if ((unsigned)fn >= XIR__VM_COUNT)
    return xir__err(d, XIR_ERR_INVALID_ARG, "unknown vector math function %d", (int)fn);
  if (width_index(W) < 0)
    return xir__err(d, XIR_ERR_INVALID_ARG, "W = %u: must be 1, 2, 4, 8 or 16", W);
  if (LLVMGetNamedFunction(vm->mod, name))
    return xir__err(d, XIR_ERR_INVALID_ARG, "the module already has a function '%s'", name);
  LLVMContextRef C = vm->ctx;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(C, 0), i64 = LLVMInt64TypeInContext(C);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(C);
  LLVMTypeRef vf = lanes(f32, W);
  LLVMTypeRef ps[4] = {ptr, ptr, ptr, i64};
  LLVMValueRef f =
      LLVMAddFunction(vm->mod, name, LLVMFunctionType(LLVMVoidTypeInContext(C), ps, 4, 0));
  xir__vm_function_attrs(f, W);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(C);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(C, f, "entry");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(C, f, "loop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(C, f, "done");
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef n = LLVMGetParam(f, 3), zero = LLVMConstInt(i64, 0, 0);
  LLVMValueRef base = NULL;
  if (uniform) { /* read once, before the loop (out may alias x) */
    base = LLVMBuildLoad2(b, f32, LLVMGetParam(f, 0), "base");
    LLVMSetAlignment(base, 4);
  }
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, n, zero, ""), done, loop);
  LLVMPositionBuilderAtEnd(b, loop);
  LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
  LLVMValueRef off = LLVMBuildMul(b, i, LLVMConstInt(i64, W, 0), "off");
  LLVMValueRef vx = NULL;
  if (!uniform) {
    vx = LLVMBuildLoad2(b, vf, LLVMBuildGEP2(b, f32, LLVMGetParam(f, 0), &off, 1, ""), "x");
    LLVMSetAlignment(vx, 4);
  }
  LLVMValueRef vy = NULL;
  if (mode != MAP_SINCOS && k_fn[fn].arity == 2) {
    vy = LLVMBuildLoad2(b, vf, LLVMBuildGEP2(b, f32, LLVMGetParam(f, 1), &off, 1, ""), "y");
    LLVMSetAlignment(vy, 4);
  }
  em e;
  em_init(&e, vm, b, W);
  LLVMValueRef c = NULL;
  LLVMValueRef r = mode == MAP_SINCOS ? call_sincos(vm, b, vx, W, &c)
                   : uniform          ? call_pow_uniform(vm, b, base, vy, W)
                                      : call_fn(&e, fn, vx, vy);
  if (!r) {
    LLVMDisposeBuilder(b);
    LLVMDeleteFunction(f);
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "the module already has a function named like xir.v%s with another type",
                    mode == MAP_SINCOS ? "sincos" : k_fn[fn].name);
  }
  /* sincos: sin to params[1], cos to params[2]; the others: the result to params[2] */
  LLVMValueRef st = LLVMBuildStore(
      b, r, LLVMBuildGEP2(b, f32, LLVMGetParam(f, mode == MAP_SINCOS ? 1 : 2), &off, 1, ""));
  LLVMSetAlignment(st, 4);
  if (c)
    LLVMSetAlignment(LLVMBuildStore(b, c, LLVMBuildGEP2(b, f32, LLVMGetParam(f, 2), &off, 1, "")), 4);
  LLVMValueRef i1 = LLVMBuildAdd(b, i, LLVMConstInt(i64, 1, 0), "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, i1, n, ""), loop, done);
  LLVMValueRef inc_v[2] = {zero, i1};
  LLVMBasicBlockRef inc_b[2] = {entry, loop};
  LLVMAddIncoming(i, inc_v, inc_b, 2);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return XIR_OK;
}

xir_status xir__vm_build_map_kernel(xir__vm *vm, const char *name, xir__vm_fn fn, unsigned W,
                                    xir_diag *d) {
  return build_map(vm, name, fn, W, MAP_FN, d);
}

xir_status xir__vm_build_pow_uniform_kernel(xir__vm *vm, const char *name, unsigned W,
                                            xir_diag *d) {
  return build_map(vm, name, XIR__VM_POW, W, MAP_POW_UNIFORM, d);
}

xir_status xir__vm_emit_pow_uniform_base(xir__vm *vm, LLVMValueRef base, LLVMValueRef y,
                                         LLVMValueRef *out, xir_diag *d) {
  if (out) *out = NULL;
  if (!vm || !out || !base || !y)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir__vm_emit_pow_uniform_base: NULL argument");
  if (!vm->b || !LLVMGetInsertBlock(vm->b))
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir__vm_emit_pow_uniform_base: the builder has no position");
  if (type_width(vm, LLVMTypeOf(base)) != 1)
    return xir__err(d, XIR_ERR_INVALID_ARG, "pow_uniform_base: the base must be a float scalar");
  unsigned W = type_width(vm, LLVMTypeOf(y));
  if (!W)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "pow_uniform_base: the exponent must be float or <W x float> (W = 2, 4, 8, 16)");
  LLVMValueRef r = call_pow_uniform(vm, vm->b, base, y, W);
  if (!r)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "the module already has a function named like xir.vpowu with another type");
  *out = r;
  return XIR_OK;
}

LLVMValueRef xir__vm_pow_uniform_base(xir__vm *vm, LLVMValueRef base, LLVMValueRef y) {
  LLVMValueRef r = NULL;
  return xir__vm_emit_pow_uniform_base(vm, base, y, &r, NULL) == XIR_OK ? r : NULL;
}

xir_status xir__vm_emit_sincos(xir__vm *vm, LLVMValueRef x, LLVMValueRef *sin_out,
                               LLVMValueRef *cos_out, xir_diag *d) {
  if (sin_out) *sin_out = NULL;
  if (cos_out) *cos_out = NULL;
  if (!vm || !x || !sin_out || !cos_out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir__vm_emit_sincos: NULL argument");
  if (!vm->b || !LLVMGetInsertBlock(vm->b))
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir__vm_emit_sincos: the builder has no position");
  unsigned W = type_width(vm, LLVMTypeOf(x));
  if (!W)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "sincos: the argument must be float or <W x float> (W = 2, 4, 8, 16)");
  LLVMValueRef c = NULL, s = call_sincos(vm, vm->b, x, W, &c);
  if (!s)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "the module already has a function named like xir.vsincos with another type");
  *sin_out = s;
  *cos_out = c;
  return XIR_OK;
}

LLVMValueRef xir__vm_sincos(xir__vm *vm, LLVMValueRef x, LLVMValueRef *cos_out) {
  LLVMValueRef s = NULL, c = NULL;
  if (xir__vm_emit_sincos(vm, x, &s, &c, NULL) != XIR_OK) return NULL;
  if (cos_out) *cos_out = c;
  return s;
}

xir_status xir__vm_build_sincos_kernel(xir__vm *vm, const char *name, unsigned W, xir_diag *d) {
  return build_map(vm, name, XIR__VM_SIN, W, MAP_SINCOS, d);
}

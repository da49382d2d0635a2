/* convert.c — f32 <-> bf16/f16 in LLVM IR (see convert.h; the reference is util/half.h). */
#include "lower/convert.h"
#include "lower/stream.h"

#include <llvm-c/TargetMachine.h>
#include <string.h>

#include "lower/vmath.h"
#include "xir.h"

/* A constant of integer/float type `t` (scalar or vector: splatted). */
static LLVMValueRef cst(LLVMTypeRef t, unsigned long long v) {
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return LLVMConstInt(t, v, 0);
  unsigned n = LLVMGetVectorSize(t);
  LLVMValueRef e[64], one = LLVMConstInt(LLVMGetElementType(t), v, 0);
  for (unsigned i = 0; i < n && i < 64; i++) e[i] = one;
  return LLVMConstVector(e, n);
}

/* The same shape as `like` with element type `el`. */
static LLVMTypeRef shaped(LLVMTypeRef like, LLVMTypeRef el) {
  return LLVMGetTypeKind(like) == LLVMVectorTypeKind ? LLVMVectorType(el, LLVMGetVectorSize(like))
                                                     : el;
}

static LLVMValueRef sel(LLVMBuilderRef b, LLVMValueRef c, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildSelect(b, c, x, y, "");
}

xir__cvt_target xir__cvt_host(void) {
  xir__cvt_target t = {0, 0, xir__vm_host_has_fma(), xir__vm_host_has_avx512(), 0, 0, 0};
  char *f = LLVMGetHostCPUFeatures();
  for (const char *p = f; p && *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == 5 && !memcmp(p, "+f16c", 5)) t.f16c = 1;
    if (len == 11 && !memcmp(p, "+avx512bf16", 11)) t.avx512bf16 = 1;
    if (len == 9 && !memcmp(p, "+avx512dq", 9)) t.avx512dq = 1;
    p = c ? c + 1 : NULL;
  }
  LLVMDisposeMessage(f);
  char *cpu = LLVMGetHostCPUName();
  t.math_prefetch_only = xir__cpu_math_prefetch_only(cpu);
  t.slow_lane_cross = xir__cpu_slow_lane_cross(cpu);
  LLVMDisposeMessage(cpu);
  return t;
}

LLVMValueRef xir__cvt_to_f32(LLVMBuilderRef b, const xir__cvt_target *t, int elem, LLVMValueRef h) {
  LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(h));
  LLVMTypeRef ht = LLVMTypeOf(h);
  LLVMTypeRef i32 = shaped(ht, LLVMInt32TypeInContext(ctx));
  LLVMTypeRef f32 = shaped(ht, LLVMFloatTypeInContext(ctx));
  if (elem == XIR_F16 && t->f16c) {
    LLVMValueRef hh = LLVMBuildBitCast(b, h, shaped(ht, LLVMHalfTypeInContext(ctx)), "");
    LLVMValueRef x = LLVMBuildFPExt(b, hh, f32, "");
    /* A fence: instcombine would otherwise narrow users of the extension to half arithmetic
     * (fcmp (fpext h), 0.0 -> fcmp h, 0.0), which x86 without AVX512_FP16 scalarizes (swiglu
     * f16 1024x4096: 6x the f32 time). The fence is a no-op in the generated code. */
    LLVMModuleRef mod = LLVMGetGlobalParent(LLVMGetBasicBlockParent(LLVMGetInsertBlock(b)));
    unsigned id = LLVMLookupIntrinsicID("llvm.arithmetic.fence", 21);
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(mod, id, &f32, 1);
    return LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, &f32, 1), f, &x, 1, "");
  }
  LLVMValueRef w = LLVMBuildZExt(b, h, i32, "");
  if (elem == XIR_BF16) return LLVMBuildBitCast(b, LLVMBuildShl(b, w, cst(i32, 16), ""), f32, "");
  /* f16, integer path (half.h: xir__f16_to_f32) */
  LLVMValueRef s = LLVMBuildShl(b, LLVMBuildAnd(b, w, cst(i32, 0x8000), ""), cst(i32, 16), "");
  LLVMValueRef em = LLVMBuildAnd(b, w, cst(i32, 0x7fff), "");
  LLVMValueRef frac = LLVMBuildShl(b, LLVMBuildAnd(b, em, cst(i32, 0x3ff), ""), cst(i32, 13), "");
  LLVMValueRef isnan = LLVMBuildICmp(b, LLVMIntUGT, em, cst(i32, 0x7c00), "");
  LLVMValueRef special = LLVMBuildOr(b, LLVMBuildOr(b, frac, cst(i32, 0x7f800000), ""),
                                     sel(b, isnan, cst(i32, 0x400000), cst(i32, 0)), "");
  LLVMValueRef normal = LLVMBuildAdd(b, LLVMBuildShl(b, em, cst(i32, 13), ""), cst(i32, 0x38000000), "");
  /* subnormal: em * 2^-24 (exact) */
  LLVMValueRef sv = LLVMBuildFMul(b, LLVMBuildUIToFP(b, em, f32, ""),
                                  LLVMBuildBitCast(b, cst(i32, 0x33800000), f32, ""), "");
  LLVMValueRef sub = LLVMBuildBitCast(b, sv, i32, "");
  LLVMValueRef r = sel(b, LLVMBuildICmp(b, LLVMIntUGE, em, cst(i32, 0x7c00), ""), special,
                       sel(b, LLVMBuildICmp(b, LLVMIntUGE, em, cst(i32, 0x400), ""), normal, sub));
  return LLVMBuildBitCast(b, LLVMBuildOr(b, r, s, ""), f32, "");
}

/* half.h's xir__bf16_from_bits on i32 lanes, truncated to i16. */
static LLVMValueRef bf16_int(LLVMBuilderRef b, LLVMValueRef bits, LLVMTypeRef i16) {
  LLVMTypeRef i32 = LLVMTypeOf(bits);
  LLVMValueRef lsb = LLVMBuildAnd(b, LLVMBuildLShr(b, bits, cst(i32, 16), ""), cst(i32, 1), "");
  LLVMValueRef r = LLVMBuildLShr(b, LLVMBuildAdd(b, LLVMBuildAdd(b, bits, cst(i32, 0x7fff), ""),
                                                lsb, ""), cst(i32, 16), "");
  LLVMValueRef a = LLVMBuildAnd(b, bits, cst(i32, 0x7fffffff), "");
  LLVMValueRef nan = LLVMBuildICmp(b, LLVMIntUGT, a, cst(i32, 0x7f800000), "");
  LLVMValueRef q = LLVMBuildOr(b, LLVMBuildLShr(b, bits, cst(i32, 16), ""), cst(i32, 0x40), "");
  return LLVMBuildTrunc(b, sel(b, nan, q, r), i16, "");
}

/* half.h's xir__f16_from_bits on i32 lanes, truncated to i16. */
static LLVMValueRef f16_int(LLVMBuilderRef b, LLVMValueRef bits, LLVMTypeRef i16) {
  LLVMTypeRef i32 = LLVMTypeOf(bits);
  LLVMValueRef s = LLVMBuildAnd(b, LLVMBuildLShr(b, bits, cst(i32, 16), ""), cst(i32, 0x8000), "");
  LLVMValueRef a = LLVMBuildAnd(b, bits, cst(i32, 0x7fffffff), "");
  LLVMValueRef nanv = LLVMBuildOr(b, LLVMBuildAnd(b, LLVMBuildLShr(b, a, cst(i32, 13), ""),
                                                  cst(i32, 0x3ff), ""), cst(i32, 0x7e00), "");
  LLVMValueRef t = LLVMBuildSub(b, a, cst(i32, 0x38000000), "");
  LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, t, cst(i32, 13), ""), cst(i32, 1), "");
  LLVMValueRef norm = LLVMBuildLShr(b, LLVMBuildAdd(b, LLVMBuildAdd(b, t, cst(i32, 0xfff), ""),
                                                   odd, ""), cst(i32, 13), "");
  /* subnormal or zero: m >> sh rounded to nearest even, sh = min(126 - e, 31) */
  LLVMValueRef e = LLVMBuildLShr(b, a, cst(i32, 23), "");
  LLVMValueRef sh = LLVMBuildSub(b, cst(i32, 126), e, "");
  sh = sel(b, LLVMBuildICmp(b, LLVMIntUGT, sh, cst(i32, 31), ""), cst(i32, 31), sh);
  LLVMValueRef m = LLVMBuildOr(b, LLVMBuildAnd(b, a, cst(i32, 0x7fffff), ""), cst(i32, 0x800000), "");
  LLVMValueRef q = LLVMBuildLShr(b, m, sh, "");
  LLVMValueRef rem = LLVMBuildSub(b, m, LLVMBuildShl(b, q, sh, ""), "");
  LLVMValueRef half = LLVMBuildShl(b, cst(i32, 1), LLVMBuildSub(b, sh, cst(i32, 1), ""), "");
  LLVMValueRef qodd = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, q, cst(i32, 1), ""), cst(i32, 0), "");
  LLVMValueRef up = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntUGT, rem, half, ""),
                                LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, rem, half, ""), qodd, ""), "");
  LLVMValueRef sub = LLVMBuildAdd(b, q, LLVMBuildZExt(b, up, i32, ""), "");
  LLVMValueRef r = sel(b, LLVMBuildICmp(b, LLVMIntUGT, a, cst(i32, 0x7f800000), ""), nanv,
                   sel(b, LLVMBuildICmp(b, LLVMIntUGE, a, cst(i32, 0x477ff000), ""), cst(i32, 0x7c00),
                   sel(b, LLVMBuildICmp(b, LLVMIntUGE, a, cst(i32, 0x38800000), ""), norm, sub)));
  return LLVMBuildTrunc(b, LLVMBuildOr(b, r, s, ""), i16, "");
}

LLVMValueRef xir__cvt_from_f32(LLVMBuilderRef b, LLVMValueRef fn, const xir__cvt_target *t,
                               int elem, LLVMValueRef x) {
  LLVMTypeRef xt = LLVMTypeOf(x);
  LLVMContextRef ctx = LLVMGetTypeContext(xt);
  LLVMTypeRef i32 = shaped(xt, LLVMInt32TypeInContext(ctx));
  LLVMTypeRef i16 = shaped(xt, LLVMInt16TypeInContext(ctx));
  if (elem == XIR_F16 && t->f16c) {
    LLVMValueRef h = LLVMBuildFPTrunc(b, x, shaped(xt, LLVMHalfTypeInContext(ctx)), "");
    return LLVMBuildBitCast(b, h, i16, "");
  }
  LLVMValueRef bits = LLVMBuildBitCast(b, x, i32, "");
  if (elem == XIR_F16) return f16_int(b, bits, i16);
  if (!t->avx512bf16) return bf16_int(b, bits, i16);
  /* vcvtneps2bf16, unless a lane is an f32 subnormal (the instruction flushes those to zero) */
  LLVMModuleRef mod = LLVMGetGlobalParent(fn);
  unsigned lanes = LLVMGetTypeKind(xt) == LLVMVectorTypeKind ? LLVMGetVectorSize(xt) : 1;
  LLVMValueRef hw;
  if (lanes == 16 || lanes == 8) {
    /* the instruction itself: LLVM 19 expands fptrunc to bfloat into integer operations even
     * where the target has AVX512_BF16 (bf16 swiglu 1024x4096 ran slower than f32) */
    const char *name = lanes == 16 ? "llvm.x86.avx512bf16.cvtneps2bf16.512"
                                   : "llvm.x86.avx512bf16.cvtneps2bf16.256";
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(mod, id, NULL, 0);
    hw = LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, NULL, 0), f, &x, 1, "");
    hw = LLVMBuildBitCast(b, hw, i16, "");
  } else {
    hw = LLVMBuildBitCast(b, LLVMBuildFPTrunc(b, x, shaped(xt, LLVMBFloatTypeInContext(ctx)), ""),
                          i16, "");
  }
  /* is some lane an f32 subnormal? llvm.is.fpclass(x, 0x90) becomes three integer operations on
   * x86 (and, sub, unsigned compare); vfpclassps (imm 0x20: denormal) is one, where the target
   * has AVX512DQ (bf16 swiglu 16x4096 on one thread: 0.399 -> 0.381 ns per element) */
  LLVMValueRef sub;
  if (t->avx512dq && (lanes == 16 || lanes == 8)) {
    const char *name = lanes == 16 ? "llvm.x86.avx512.fpclass.ps.512" : "llvm.x86.avx512.fpclass.ps.256";
    unsigned fid = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef ff = LLVMGetIntrinsicDeclaration(mod, fid, NULL, 0);
    LLVMValueRef fa[2] = {x, LLVMConstInt(LLVMInt32TypeInContext(ctx), 0x20, 0)};
    sub = LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, fid, NULL, 0), ff, fa, 2, "");
  } else {
    unsigned cid = LLVMLookupIntrinsicID("llvm.is.fpclass", 15);
    LLVMValueRef cf = LLVMGetIntrinsicDeclaration(mod, cid, &xt, 1);
    LLVMValueRef cargs[2] = {x, LLVMConstInt(LLVMInt32TypeInContext(ctx), 0x90, 0)};
    sub = LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, cid, &xt, 1), cf, cargs, 2, "");
  }
  if (LLVMGetTypeKind(xt) == LLVMVectorTypeKind) {
    LLVMTypeRef st = LLVMTypeOf(sub);
    unsigned id = LLVMLookupIntrinsicID("llvm.vector.reduce.or", 21);
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(mod, id, &st, 1);
    sub = LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, &st, 1), f, &sub, 1, "");
  }
  LLVMBasicBlockRef from = LLVMGetInsertBlock(b);
  LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(ctx, fn, "bf16.subnormal");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(ctx, fn, "bf16.join");
  LLVMBuildCondBr(b, sub, slow, join);
  LLVMPositionBuilderAtEnd(b, slow);
  LLVMValueRef exact = bf16_int(b, bits, i16);
  LLVMBasicBlockRef slow_end = LLVMGetInsertBlock(b);
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, join);
  LLVMValueRef phi = LLVMBuildPhi(b, i16, "");
  LLVMValueRef in[2] = {hw, exact};
  LLVMBasicBlockRef bbs[2] = {from, slow_end};
  LLVMAddIncoming(phi, in, bbs, 2);
  return phi;
}

/* The subnormal test of a <16 x float> packet: vfpclassps (imm 0x20), as an <16 x i1> mask. */
static LLVMValueRef fpclass_denormal16(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x) {
  LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(x));
  const char *name = "llvm.x86.avx512.fpclass.ps.512";
  unsigned fid = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef ff = LLVMGetIntrinsicDeclaration(mod, fid, NULL, 0);
  LLVMValueRef fa[2] = {x, LLVMConstInt(LLVMInt32TypeInContext(ctx), 0x20, 0)};
  return LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, fid, NULL, 0), ff, fa, 2, "");
}

int xir__cvt_bf16_pairs(const xir__cvt_target *t, unsigned lanes) {
  return t->avx512bf16 && t->avx512dq && lanes == 16;
}

LLVMValueRef xir__cvt_bf16_pair(LLVMBuilderRef b, LLVMValueRef fn, const xir__cvt_target *t,
                                LLVMValueRef lo, LLVMValueRef hi) {
  (void)t;
  LLVMTypeRef xt = LLVMTypeOf(lo);
  LLVMContextRef ctx = LLVMGetTypeContext(xt);
  LLVMModuleRef mod = LLVMGetGlobalParent(fn);
  LLVMTypeRef i16x32 = LLVMVectorType(LLVMInt16TypeInContext(ctx), 32);
  LLVMTypeRef i32 = shaped(xt, LLVMInt32TypeInContext(ctx));
  LLVMTypeRef i16 = shaped(xt, LLVMInt16TypeInContext(ctx));
  /* vcvtne2ps2bf16 zmm, hi, lo: elements 0..15 from lo, 16..31 from hi */
  const char *name = "llvm.x86.avx512bf16.cvtne2ps2bf16.512";
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(mod, id, NULL, 0);
  LLVMValueRef args[2] = {hi, lo};
  LLVMValueRef hw = LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, NULL, 0), f, args, 2, "");
  hw = LLVMBuildBitCast(b, hw, i16x32, "");
  /* one branch for both packets: kortestw of the two subnormal masks */
  LLVMValueRef m = LLVMBuildOr(b, fpclass_denormal16(b, mod, lo), fpclass_denormal16(b, mod, hi), "");
  LLVMTypeRef mt = LLVMTypeOf(m);
  unsigned rid = LLVMLookupIntrinsicID("llvm.vector.reduce.or", 21);
  LLVMValueRef rf = LLVMGetIntrinsicDeclaration(mod, rid, &mt, 1);
  LLVMValueRef sub = LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, rid, &mt, 1), rf, &m, 1, "");
  LLVMBasicBlockRef from = LLVMGetInsertBlock(b);
  LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(ctx, fn, "bf16.subnormal");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(ctx, fn, "bf16.join");
  LLVMBuildCondBr(b, sub, slow, join);
  LLVMPositionBuilderAtEnd(b, slow);
  LLVMValueRef el = bf16_int(b, LLVMBuildBitCast(b, lo, i32, ""), i16);
  LLVMValueRef eh = bf16_int(b, LLVMBuildBitCast(b, hi, i32, ""), i16);
  LLVMValueRef idx[32];
  for (unsigned i = 0; i < 32; i++) idx[i] = LLVMConstInt(LLVMInt32TypeInContext(ctx), i, 0);
  LLVMValueRef exact = LLVMBuildShuffleVector(b, el, eh, LLVMConstVector(idx, 32), "");
  LLVMBasicBlockRef slow_end = LLVMGetInsertBlock(b);
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, join);
  LLVMValueRef phi = LLVMBuildPhi(b, i16x32, "");
  LLVMValueRef in[2] = {hw, exact};
  LLVMBasicBlockRef bbs[2] = {from, slow_end};
  LLVMAddIncoming(phi, in, bbs, 2);
  return phi;
}

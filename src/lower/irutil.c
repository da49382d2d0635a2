/* irutil.c — LLVM IR building helpers shared by the lowerings (see irutil.h). */
#include <string.h>

#include "lower/irutil.h"
#include "xir.h"

LLVMValueRef xir__ir_entry_alloca(LLVMContextRef ctx, LLVMValueRef fn, LLVMTypeRef t,
                                  const char *name) {
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(ctx);
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first) LLVMPositionBuilderBefore(eb, first);
  else LLVMPositionBuilderAtEnd(eb, entry);
  LLVMValueRef a = LLVMBuildAlloca(eb, t, name);
  LLVMDisposeBuilder(eb);
  return a;
}

LLVMValueRef xir__ir_intrinsic(LLVMBuilderRef b, LLVMModuleRef mod, const char *name,
                               LLVMTypeRef *tys, unsigned ntys, LLVMValueRef *args, unsigned nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(mod, id, tys, ntys);
  LLVMTypeRef ft = LLVMIntrinsicGetType(LLVMGetModuleContext(mod), id, tys, ntys);
  return LLVMBuildCall2(b, ft, f, args, nargs, "");
}

LLVMValueRef xir__ir_floordiv(LLVMBuilderRef b, LLVMValueRef a, LLVMValueRef d, LLVMValueRef one,
                              int rem) {
  LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(a));
  LLVMValueRef ds = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, d, zero, ""), one, d, "");
  LLVMValueRef q = LLVMBuildSDiv(b, a, ds, "");
  LLVMValueRef r = LLVMBuildSRem(b, a, ds, "");
  LLVMValueRef adj = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntNE, r, zero, ""),
                                  LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildXor(b, r, ds, ""), zero, ""),
                                  "");
  if (rem) return LLVMBuildSelect(b, adj, LLVMBuildAdd(b, r, ds, ""), r, "");
  return LLVMBuildSelect(b, adj, LLVMBuildSub(b, q, one, ""), q, "");
}

LLVMValueRef xir__ir_splat(LLVMBuilderRef b, LLVMValueRef x, unsigned W) {
  LLVMTypeRef t = LLVMTypeOf(x), vt = LLVMVectorType(t, W);
  LLVMContextRef ctx = LLVMGetTypeContext(t);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
  LLVMValueRef ins = LLVMBuildInsertElement(b, LLVMGetPoison(vt), x, LLVMConstInt(i32, 0, 0), "");
  return LLVMBuildShuffleVector(b, ins, LLVMGetPoison(vt), LLVMConstNull(LLVMVectorType(i32, W)), "");
}

LLVMValueRef xir__ir_cmp(LLVMBuilderRef b, int op, int integer, LLVMValueRef x, LLVMValueRef y) {
  static const LLVMRealPredicate fp[] = {LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE,
                                         LLVMRealOEQ, LLVMRealUNE};
  static const LLVMIntPredicate ip[] = {LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE,
                                        LLVMIntEQ, LLVMIntNE};
  int w = op - XIR_OP_LT;
  return integer ? LLVMBuildICmp(b, ip[w], x, y, "") : LLVMBuildFCmp(b, fp[w], x, y, "");
}

LLVMValueRef xir__ir_buffer_end(LLVMBuilderRef b, LLVMTypeRef i64, int rank, const LLVMValueRef *dims,
                                const LLVMValueRef *strides) {
  LLVMValueRef one = LLVMConstInt(i64, 1, 0), e = one;
  for (int k = 0; k < rank; k++)
    e = LLVMBuildAdd(b, e, LLVMBuildMul(b, LLVMBuildSub(b, dims[k], one, ""), strides[k], ""), "");
  return e;
}

/* One plain load of p (a power of two) elements of et at ptr + at, as <p x et> (a scalar for p = 1,
 * inserted into lane 0 of a <1 x et>). */
static LLVMValueRef narrow_load(LLVMBuilderRef b, LLVMTypeRef et, LLVMValueRef ptr, unsigned at, unsigned p,
                                unsigned align) {
  LLVMContextRef ctx = LLVMGetTypeContext(et);
  LLVMValueRef o = LLVMConstInt(LLVMInt64TypeInContext(ctx), at, 0);
  LLVMValueRef q = LLVMBuildGEP2(b, et, ptr, &o, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(b, p == 1 ? et : LLVMVectorType(et, p), q, "");
  LLVMSetAlignment(v, align);
  if (p == 1)
    v = LLVMBuildInsertElement(b, LLVMGetPoison(LLVMVectorType(et, 1)), v,
                               LLVMConstInt(LLVMInt32TypeInContext(ctx), 0, 0), "");
  return v;
}

/* The runs of set bits of mask (W lanes) covered by at most four windows at[k], width[k] of a
 * power-of-two width each (two overlapping ones for a run of another length); 0 when more are
 * needed. */
static int run_cover(uint64_t mask, unsigned W, unsigned *at, unsigned *width, unsigned *n) {
  *n = 0;
  for (unsigned i = 0; i < W;) {
    if (!(mask >> i & 1)) {
      i++;
      continue;
    }
    unsigned a = i;
    while (i < W && mask >> i & 1) i++;
    unsigned len = i - a, p = 1;
    while (2 * p <= len) p *= 2;
    if (*n + (p == len ? 1 : 2) > 4) return 0;
    at[*n] = a, width[(*n)++] = p;
    if (p != len) at[*n] = i - p, width[(*n)++] = p;
  }
  return 1;
}

/* The one llvm.masked.load or llvm.masked.store (v != NULL) of the lanes set in mask. */
static LLVMValueRef masked_intrinsic(LLVMBuilderRef b, LLVMModuleRef mod, LLVMTypeRef vt, unsigned W,
                                     LLVMValueRef ptr, LLVMValueRef v, uint64_t mask, unsigned align,
                                     LLVMValueRef pass) {
  LLVMContextRef ctx = LLVMGetTypeContext(vt);
  LLVMValueRef m[16], al = LLVMConstInt(LLVMInt32TypeInContext(ctx), align, 0);
  for (unsigned i = 0; i < W; i++) m[i] = LLVMConstInt(LLVMInt1TypeInContext(ctx), mask >> i & 1, 0);
  LLVMTypeRef tys[2] = {vt, LLVMTypeOf(ptr)};
  if (v) {
    LLVMValueRef args[4] = {v, ptr, al, LLVMConstVector(m, W)};
    return xir__ir_intrinsic(b, mod, "llvm.masked.store", tys, 2, args, 4);
  }
  LLVMValueRef args[4] = {ptr, al, LLVMConstVector(m, W), pass};
  return xir__ir_intrinsic(b, mod, "llvm.masked.load", tys, 2, args, 4);
}

LLVMValueRef xir__ir_mask_load(LLVMBuilderRef b, LLVMModuleRef mod, LLVMTypeRef et, unsigned W,
                               LLVMValueRef ptr, uint64_t mask, unsigned align, LLVMValueRef pass,
                               int narrow) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(et)), vt = LLVMVectorType(et, W);
  uint64_t all = (1ull << W) - 1;
  mask &= all;
  if (mask == all) {
    LLVMValueRef v = LLVMBuildLoad2(b, vt, ptr, "");
    LLVMSetAlignment(v, align);
    return v;
  }
  /* the runs of set bits and the plain loads that cover them */
  unsigned at[4], width[4], n;
  if (!narrow || !mask || !run_cover(mask, W, at, width, &n))
    return masked_intrinsic(b, mod, vt, W, ptr, NULL, mask, align, pass);
  LLVMValueRef acc = pass;
  for (unsigned k = 0; k < n; k++) {
    LLVMValueRef v = narrow_load(b, et, ptr, at[k], width[k], align), sh[16];
    /* widen to W lanes (the loaded ones first), then take lanes at[k] .. at[k] + p − 1 from it */
    for (unsigned i = 0; i < W; i++) sh[i] = i < width[k] ? LLVMConstInt(i32, i, 0) : LLVMGetUndef(i32);
    v = LLVMBuildShuffleVector(b, v, LLVMGetPoison(LLVMTypeOf(v)), LLVMConstVector(sh, W), "");
    for (unsigned i = 0; i < W; i++)
      sh[i] = LLVMConstInt(i32, i >= at[k] && i < at[k] + width[k] ? W + i - at[k] : i, 0);
    acc = LLVMBuildShuffleVector(b, acc, v, LLVMConstVector(sh, W), "");
  }
  return acc;
}

LLVMValueRef xir__ir_shuffle_halves(LLVMBuilderRef b, LLVMValueRef v, const int *idx, unsigned W, int split) {
  LLVMTypeRef vt = LLVMTypeOf(v), et = LLVMGetElementType(vt);
  LLVMContextRef ctx = LLVMGetTypeContext(vt);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
  LLVMValueRef sh[16];
  int src[2] = {-1, -1}, cross = 0, ok = split && W == 8 && LLVMGetTypeKind(et) == LLVMFloatTypeKind;
  for (unsigned i = 0; i < W && ok; i++) {
    if (idx[i] < 0) continue;
    int h = (int)i / 4, s = idx[i] / 4;
    if (s != h) cross = 1;
    if (src[h] < 0) src[h] = s;
    else if (src[h] != s) ok = 0;
  }
  if (!ok || !cross) {
    for (unsigned i = 0; i < W; i++) sh[i] = idx[i] < 0 ? LLVMGetUndef(i32) : LLVMConstInt(i32, (unsigned)idx[i], 0);
    return LLVMBuildShuffleVector(b, v, LLVMGetPoison(vt), LLVMConstVector(sh, W), "");
  }
  LLVMTypeRef ht = LLVMVectorType(et, 4);
  LLVMTypeRef ft = LLVMFunctionType(ht, &ht, 1, 0);
  LLVMValueRef as = LLVMGetInlineAsm(ft, "", 0, "=x,0", 4, 0, 0, LLVMInlineAsmDialectATT, 0);
  /* nounwind and memory(none): the asm touches no memory, so it does not stop LICM from
   * keeping a load out of a loop (rope_cache's table rows at ℓ = HD, duplicated through this
   * split, were loaded and shuffled again in every chunk while the call counted as a store) */
  unsigned nk = LLVMGetEnumAttributeKindForName("nounwind", 8);
  unsigned mk = LLVMGetEnumAttributeKindForName("memory", 6);
  LLVMValueRef half[2];
  for (int h = 0; h < 2; h++) {
    for (unsigned i = 0; i < 4; i++) {
      int x = idx[4 * h + i];
      sh[i] = x < 0 ? LLVMGetUndef(i32) : LLVMConstInt(i32, (unsigned)x, 0);
    }
    /* the 4 lanes of this output half, read from the 8 lanes of v (all in one 128-bit half) */
    half[h] = LLVMBuildShuffleVector(b, v, LLVMGetPoison(vt), LLVMConstVector(sh, 4), "");
    LLVMValueRef call = LLVMBuildCall2(b, ft, as, &half[h], 1, "");
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, nk, 0));
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, mk, 0));
    half[h] = call;
  }
  for (unsigned i = 0; i < 8; i++) sh[i] = LLVMConstInt(i32, i, 0);
  return LLVMBuildShuffleVector(b, half[0], half[1], LLVMConstVector(sh, 8), "");
}

void xir__ir_mask_store(LLVMBuilderRef b, LLVMModuleRef mod, LLVMTypeRef et, unsigned W, LLVMValueRef ptr,
                        LLVMValueRef v, uint64_t mask, unsigned align, int narrow) {
  LLVMContextRef ctx = LLVMGetTypeContext(et);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), i64 = LLVMInt64TypeInContext(ctx);
  mask &= (1ull << W) - 1;
  unsigned at[4], width[4], n;
  if (!mask) return;
  if (!narrow || !run_cover(mask, W, at, width, &n)) {
    masked_intrinsic(b, mod, LLVMTypeOf(v), W, ptr, v, mask, align, NULL);
    return;
  }
  for (unsigned k = 0; k < n; k++) {
    LLVMValueRef x, o = LLVMConstInt(i64, at[k], 0), sh[16];
    if (width[k] == W) x = v;
    else if (width[k] == 1) x = LLVMBuildExtractElement(b, v, LLVMConstInt(i32, at[k], 0), "");
    else {
      for (unsigned i = 0; i < width[k]; i++) sh[i] = LLVMConstInt(i32, at[k] + i, 0);
      x = LLVMBuildShuffleVector(b, v, LLVMGetPoison(LLVMTypeOf(v)), LLVMConstVector(sh, width[k]), "");
    }
    LLVMValueRef s = LLVMBuildStore(b, x, LLVMBuildGEP2(b, et, ptr, &o, 1, ""));
    LLVMSetAlignment(s, align);
  }
}

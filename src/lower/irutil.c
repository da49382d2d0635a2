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

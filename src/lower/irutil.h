/* irutil.h — small LLVM IR building helpers shared by lower.c and lower_attn.c (internal). */
#ifndef XIR_LOWER_IRUTIL_H
#define XIR_LOWER_IRUTIL_H

#include <stdint.h>

#include <llvm-c/Core.h>

/* An alloca of type t at the start of fn's entry block (so that mem2reg/SROA promote it). */
LLVMValueRef xir__ir_entry_alloca(LLVMContextRef ctx, LLVMValueRef fn, LLVMTypeRef t,
                                  const char *name);
/* A call of intrinsic `name` overloaded on tys, at b's position, in module mod. */
LLVMValueRef xir__ir_intrinsic(LLVMBuilderRef b, LLVMModuleRef mod, const char *name,
                               LLVMTypeRef *tys, unsigned ntys, LLVMValueRef *args, unsigned nargs);
/* Floor division (rem = 0) or the floor remainder (rem = 1) of integers (scalars or vectors) a
 * and d, as the interpreter's: d = 0 divides by 1. one is the constant 1 of a's type. */
LLVMValueRef xir__ir_floordiv(LLVMBuilderRef b, LLVMValueRef a, LLVMValueRef d, LLVMValueRef one,
                              int rem);
/* The comparison XIR op `op` (XIR_OP_LT .. XIR_OP_NE, in that order) of x and y: ordered
 * predicates for floats except NE (unordered, so NaN != NaN), signed for integers. */
LLVMValueRef xir__ir_cmp(LLVMBuilderRef b, int op, int integer, LLVMValueRef x, LLVMValueRef y);
/* One past the last element of a buffer of the given rank (i64): 1 + the sum over its axes of
 * (dims[k] − 1)·strides[k]. Prefetches past a buffer's end stay inside it by this bound. */
LLVMValueRef xir__ir_buffer_end(LLVMBuilderRef b, LLVMTypeRef i64, int rank, const LLVMValueRef *dims,
                                const LLVMValueRef *strides);
/* <W x typeof(x)> with every lane x. */
LLVMValueRef xir__ir_splat(LLVMBuilderRef b, LLVMValueRef x, unsigned W);
/* <W x et>: lane i is ptr[i] where bit i of mask is set, else the lane of pass (a <W x et>;
 * poison or zero). narrow = 0: one llvm.masked.load. narrow = 1 (targets without AVX-512, where
 * a masked load is vmaskmovps: about 10 cycles a ymm load on Zen 1, against 1 for a plain one):
 * each run of set bits [a, b] is read by plain loads that touch only its own elements — one of
 * n = b − a + 1 elements when n is a power of two, else two overlapping ones of the largest power
 * of two below n, at a and at b − p + 1 — and shuffled into place; more than four such loads
 * fall back to the masked load. align: the element's alignment in bytes. */
LLVMValueRef xir__ir_mask_load(LLVMBuilderRef b, LLVMModuleRef mod, LLVMTypeRef et, unsigned W,
                               LLVMValueRef ptr, uint64_t mask, unsigned align, LLVMValueRef pass,
                               int narrow);
/* Stores lane i of the <W x et> v to ptr[i] where bit i of mask is set, as xir__ir_mask_load reads:
 * narrow = 0 one llvm.masked.store; narrow = 1 plain stores of each run of set bits (one of a
 * power-of-two length, else two overlapping ones writing the same values twice), at most four,
 * else the masked store (AVX2's vmaskmovps store is slower still than its load on AMD). */
void xir__ir_mask_store(LLVMBuilderRef b, LLVMModuleRef mod, LLVMTypeRef et, unsigned W, LLVMValueRef ptr,
                        LLVMValueRef v, uint64_t mask, unsigned align, int narrow);
/* shufflevector(v, poison, idx) for a <W x T> v, idx[i] < 0 for an undefined lane. split = 1 (a
 * target whose lane-crossing permutes are slow: Zen 1), W = 8 and a lane-crossing idx whose each
 * 4-lane output half reads one 4-lane half of v: each half shuffled on its own (in-lane, 128-bit
 * ops), kept apart by an empty asm so that LLVM does not merge them back into one vpermps, and
 * concatenated (vinsertf128). Otherwise the one shuffle. */
LLVMValueRef xir__ir_shuffle_halves(LLVMBuilderRef b, LLVMValueRef v, const int *idx, unsigned W, int split);

#endif

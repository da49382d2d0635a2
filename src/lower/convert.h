/* convert.h — f32 <-> bf16/f16 conversions in LLVM IR for the loads and stores of 16-bit buffers
 * (internal; the semantics are src/util/half.h's, bit for bit).
 *
 * Where the target has them the conversions are the hardware's: F16C (vcvtph2ps / vcvtps2ph,
 * through LLVM's fpext/fptrunc on half vectors) and AVX512_BF16 (vcvtneps2bf16, through fptrunc
 * to bfloat). vcvtneps2bf16 flushes f32 subnormal inputs to zero, which IEEE rounding does not:
 * a store takes the hardware result unless some lane holds an f32 subnormal (vfpclassps where
 * the target has AVX512DQ), and then the exact integer path for that packet (a branch that is
 * almost never taken). Elsewhere the
 * conversions are integer bit operations, identical to half.h. bf16 -> f32 is a shift on every
 * target (LLVM's own lowering of fpext from bfloat). */
#ifndef XIR_LOWER_CONVERT_H
#define XIR_LOWER_CONVERT_H

#include <llvm-c/Core.h>

/* What the target can do in hardware (conversions, and the vector math's variants), and how
 * the lowering tunes for it. */
typedef struct xir__cvt_target {
  int f16c;        /* vcvtph2ps / vcvtps2ph */
  int avx512bf16;  /* vcvtneps2bf16 */
  int fma;         /* vfmadd: the vector math's FMA variant (xir__vm_set_fma) */
  int avx512;      /* AVX-512F + VL; with avx512dq the vector math's x512 variant (xir__vm_set_avx512) */
  int avx512dq;    /* vfpclassps: the bf16 store's subnormal test in one instruction */
  int math_prefetch_only; /* the next-row prefetch only in a loop with vector math: AMD Zen
                           * (xir__cpu_math_prefetch_only; docs/lowering.md, "Next-row
                           * prefetch"); 0 prefetches there in the last loop too */
  int slow_lane_cross; /* lane-crossing ymm permutes are slow (Zen 1, "znver1": vpermps 3 µops,
                        * one per 4 cycles): xir__ir_shuffle_halves splits them */
} xir__cvt_target;

/* The host's capabilities (what the JIT targets by default). */
xir__cvt_target xir__cvt_host(void);

/* Converts the bits `h` (i16 or <W x i16>) of elem (XIR_BF16 or XIR_F16) to f32 (float or
 * <W x float>). */
LLVMValueRef xir__cvt_to_f32(LLVMBuilderRef b, const xir__cvt_target *t, int elem, LLVMValueRef h);

/* Converts x (<W x float>) to the bits (<W x i16>) of elem, rounding to nearest even. May add
 * basic blocks to fn (the builder is left at the end of the join block). */
LLVMValueRef xir__cvt_from_f32(LLVMBuilderRef b, LLVMValueRef fn, const xir__cvt_target *t,
                               int elem, LLVMValueRef x);

/* Whether stores may convert two <lanes x float> packets to bf16 at once
 * (xir__cvt_bf16_pair): AVX512_BF16 and AVX512DQ, lanes = 16. */
int xir__cvt_bf16_pairs(const xir__cvt_target *t, unsigned lanes);

/* Converts two <16 x float> packets to the bf16 bits of both, <32 x i16> (lo's elements first),
 * rounding to nearest even: one vcvtne2ps2bf16 and one subnormal test for the pair (the exact
 * integer path for both packets where a lane of either is an f32 subnormal). The same bits as
 * two xir__cvt_from_f32 calls. Needs xir__cvt_bf16_pairs(t, 16). */
LLVMValueRef xir__cvt_bf16_pair(LLVMBuilderRef b, LLVMValueRef fn, const xir__cvt_target *t,
                                LLVMValueRef lo, LLVMValueRef hi);

#endif

/* vmath.h — vector math emitted as LLVM IR: exp, log, tanh, erf, sigmoid, sin, cos, pow, sqrt,
 * rsqrt on `float` or `<W x float>` (W = 1, 2, 4, 8, 16).
 *
 * Each function is a real vector implementation (range reduction + polynomial) written in IR: no
 * libm calls, no llvm.exp/llvm.log/llvm.sin intrinsics (they become per-lane libm calls), no
 * fast-math flags. Two variants (xir__vm_set_fma): plain fmul/fadd (the default: the same bits on
 * every x86 target and W), or llvm.fma where the host has it (the same bits for every W on one
 * host; the two variants may differ by the ulp documented in docs/vmath.md). sqrt is llvm.sqrt;
 * rsqrt is exactly 1/sqrt(x) (fdiv of the rounded sqrt, never an approximation instruction).
 * sin, cos and pow compute internally in fp64 lanes (see docs/vmath.md); their inputs and
 * results are fp32.
 *
 * The first call for a (function, W, variant) emits an internal function `xir.v<name>.<type>`
 * (e.g. `xir.vexp.v16f32`, `xir.vexp.f32`; `xir.vexp.fma.v16f32` for the FMA variant) into the
 * module, with fastcc and memory(none); every call
 * site calls it. sqrt and rsqrt are emitted inline. The measured error bounds are in
 * docs/vmath.md and asserted by tests/test_vmath.c.
 *
 * Usage (the lowering):
 *   xir__vm *vm; xir__vm_create(mod, builder, &vm, d);   // builder positioned inside a function
 *   xir__vm_set_fma(vm, xir__vm_host_has_fma());                  // the JIT targets the host
 *   LLVMValueRef y = xir__vm_call(vm, XIR__VM_EXP, x, NULL);      // at the builder's position
 *   LLVMValueRef p = xir__vm_call(vm, XIR__VM_POW, x, e);         // binary: pow only
 *   xir__vm_destroy(vm);                                          // the module keeps the IR
 * One xir__vm per module (it remembers which functions it emitted); not thread-safe (an LLVM
 * context is not either). The LLVM handle types are declared here identically to llvm-c, so that
 * tests and tools can include this header without the LLVM headers. */
#ifndef XIR_LOWER_VMATH_H
#define XIR_LOWER_VMATH_H

/* The same typedefs as llvm-c/Types.h (a repeated identical typedef is valid C11). */
typedef struct LLVMOpaqueModule *LLVMModuleRef;
typedef struct LLVMOpaqueValue *LLVMValueRef;
typedef struct LLVMOpaqueBuilder *LLVMBuilderRef;

#include "xir_status.h"

/* X(enum suffix, name, arity) */
#define XIR__VM_FUNCS(X) \
  X(EXP, exp, 1)         \
  X(LOG, log, 1)         \
  X(TANH, tanh, 1)       \
  X(ERF, erf, 1)         \
  X(SIGMOID, sigmoid, 1) \
  X(SIN, sin, 1)         \
  X(COS, cos, 1)         \
  X(POW, pow, 2)         \
  X(SQRT, sqrt, 1)       \
  X(RSQRT, rsqrt, 1)     \
  X(SIGMOID16, sigmoid16, 1) \
  X(EXPNP, exp_nonpos, 1)

typedef enum xir__vm_fn {
#define XIR__VM_ENUM(e, n, a) XIR__VM_##e,
  XIR__VM_FUNCS(XIR__VM_ENUM)
#undef XIR__VM_ENUM
      XIR__VM_COUNT
} xir__vm_fn;

typedef struct xir__vm xir__vm;

/* mod: the module functions are emitted into; b: the builder calls are emitted at (borrowed,
 * may be changed later with xir__vm_set_builder). */
xir_status xir__vm_create(LLVMModuleRef mod, LLVMBuilderRef b, xir__vm **out, xir_diag *d);
void xir__vm_destroy(xir__vm *vm); /* NULL is fine; never touches the module */
void xir__vm_set_builder(xir__vm *vm, LLVMBuilderRef b);

/* FMA. Off after xir__vm_create: every function is plain fmul/fadd (the same bits on every x86
 * target, and the same bits as before the FMA variant existed). On: functions emitted from then on
 * evaluate their Horner steps, range-reduction steps and compensations with llvm.fma (exactly
 * rounded, so still the same bits for every W), sin/cos evaluate one fp64 polynomial per lane,
 * pow replaces its fp64 division by an fp32 one plus a Newton step, and the functions are named
 * `xir.v<name>.fma.<type>` (both variants can coexist in one module). Only turn it on
 * when the code's target has FMA, or llvm.fma becomes an fmaf call the JIT cannot link: the
 * lowering passes xir__vm_host_has_fma(), for the JIT's default host target. Error bounds of both
 * variants are in docs/vmath.md. */
void xir__vm_set_fma(xir__vm *vm, int on);
int xir__vm_fma(const xir__vm *vm);
/* Allows AVX-512F + VL + DQ instructions in the functions emitted from then on (off after
 * xir__vm_create): at W = 4, 8 and 16, exp (and sigmoid, tanh through it) applies 2^n with one
 * vscalefps instead of integer exponent arithmetic. The bits are the same either way (checked
 * over every fp32 input); the functions are named `xir.v<name>[.fma].x512.<type>`. With FMA on
 * as well, tanh and sigmoid use vpermi2ps tables / vrcp14ps, and sin, cos and sincos run in fp32
 * lanes (a 32-entry table by vpermi2ps) for |x| ≤ 2^19, the fp64 code for the other lanes (one
 * branch per vector); these change bits within the documented bounds (docs/vmath.md). Only turn
 * it on when the code's target has all three (the lowering asks the JIT's target). */
void xir__vm_set_avx512(xir__vm *vm, int on);
/* 1 when the host CPU has AVX-512F, AVX-512VL and AVX-512DQ (LLVM's host feature list; x86 only), else 0. */
int xir__vm_host_has_avx512(void);
/* 1 when the host CPU has FMA (LLVM's host feature list has +fma; x86 only), else 0. The same
 * answer every time on one host. */
int xir__vm_host_has_fma(void);

/* Emits fn(x) (or pow(x, y)) at the builder's position and returns the result, of x's type.
 * x (and y) must be float or <W x float> with W in {1, 2, 4, 8, 16}, y of the same type, y NULL
 * for unary functions. Errors: XIR_ERR_INVALID_ARG (wrong type, arity or fn), XIR_ERR_NOMEM. */
xir_status xir__vm_emit(xir__vm *vm, xir__vm_fn fn, LLVMValueRef x, LLVMValueRef y,
                        LLVMValueRef *out, xir_diag *d);
/* The same, returning NULL on error. */
LLVMValueRef xir__vm_call(xir__vm *vm, xir__vm_fn fn, LLVMValueRef x, LLVMValueRef y);

const char *xir__vm_name(xir__vm_fn fn); /* "exp", ...; "?" when out of range */
int xir__vm_arity(xir__vm_fn fn);        /* 1 or 2; 0 when out of range */
/* The function named name ("exp", "rsqrt", ...), or XIR__VM_COUNT. */
xir__vm_fn xir__vm_from_name(const char *name);

/* Sets the attributes a function working on W-lane fp32 vectors needs on x86: nounwind and
 * "min-legal-vector-width" = max(32·W, 512), without which LLVM splits 512-bit vectors on CPUs
 * tuned to prefer 256-bit ones (Intel's AVX-512 server and client cores) — and cannot split the
 * 16-lane AVX-512 intrinsics that vmath uses at every W (rcp14, lookup32: W < 16 is widened to
 * 16 lanes): a W = 4 function with 128 there aborted in instruction selection. The attribute only
 * makes wider types legal; it widens nothing. The lowering calls it on its kernels; vmath sets it
 * on its own functions. */
void xir__vm_function_attrs(LLVMValueRef fn, unsigned W);

/* Builds, in vm's module, `void name(const float *x, const float *y, float *out, int64_t nvec)`
 * that computes out[i] = fn(x[i]) (or fn(x[i], y[i])) for i < nvec·W, W lanes per iteration
 * (unaligned loads/stores, align 4; y is ignored by unary functions). For tests, benchmarks and
 * the calibration of per-function vector math cost. Does not use or move vm's builder. */
xir_status xir__vm_build_map_kernel(xir__vm *vm, const char *name, xir__vm_fn fn, unsigned W,
                                    xir_diag *d);

/* pow with a uniform (scalar) base: pow(base, y) for every lane of y, bit-identical to
 * xir__vm_call(vm, XIR__VM_POW, splat(base), y) (the same fp64 operations; tests/test_vmath.c
 * checks it), but log|base| is computed once, in a scalar call to the internal
 * `xir.vpowlog[.fma].f32` (speculatable, memory(none): LICM hoists it out of a loop when the
 * base is loop-invariant), and only the exp part and the special cases run per lane
 * (`xir.vpowu[.fma].<type>`). base: float; y: float or <W x float>. Emitted at the builder's
 * position; honours xir__vm_set_fma. Errors: XIR_ERR_INVALID_ARG. */
xir_status xir__vm_emit_pow_uniform_base(xir__vm *vm, LLVMValueRef base, LLVMValueRef y,
                                         LLVMValueRef *out, xir_diag *d);
LLVMValueRef xir__vm_pow_uniform_base(xir__vm *vm, LLVMValueRef base, LLVMValueRef y);

/* Like xir__vm_build_map_kernel for pow with a uniform base: out[i] = pow(x[0], y[i]) (x[0] is
 * read once, before the loop). For tests and benchmarks. */
xir_status xir__vm_build_pow_uniform_kernel(xir__vm *vm, const char *name, unsigned W,
                                            xir_diag *d);

/* sin and cos of one argument x (float or <W x float>): one range reduction, both polynomials,
 * no per-lane coefficient selects (`xir.vsincos[.fma][.x512].<type>`, returning both). Each result is
 * bit-identical to xir__vm_call(vm, XIR__VM_SIN / XIR__VM_COS, x) (tests/test_vmath.c checks
 * it). Emitted at the builder's position; honours xir__vm_set_fma and xir__vm_set_avx512.
 * Errors: XIR_ERR_INVALID_ARG.
 * xir__vm_sincos returns sin and sets *cos_out (may be NULL), or returns NULL. */
xir_status xir__vm_emit_sincos(xir__vm *vm, LLVMValueRef x, LLVMValueRef *sin_out,
                               LLVMValueRef *cos_out, xir_diag *d);
LLVMValueRef xir__vm_sincos(xir__vm *vm, LLVMValueRef x, LLVMValueRef *cos_out);

/* `void name(const float *x, float *s, float *c, int64_t nvec)`: s[i], c[i] = sin, cos of x[i]
 * by xir__vm_sincos, W lanes per iteration. For tests and benchmarks. */
xir_status xir__vm_build_sincos_kernel(xir__vm *vm, const char *name, unsigned W, xir_diag *d);

#endif

/* xir_compile.h — native code (lowering + JIT) for the bridge's candidates (xir_bridge.h).
 *
 *   program + shape ──bridge──► candidates (perm × B × ℓ), each with its implementation kind
 *                   ──compile──► xir_kernel: fn(args, block_begin, block_end) + IR/object hashes
 *
 * Legality is decided by the bridge only. Dims are bound at compile time: a kernel is compiled
 * for one shape. Included by xir.h users who want native code; it includes xir_bridge.h. */
#ifndef XIR_COMPILE_H
#define XIR_COMPILE_H

#include "xir.h"
#include "xir_bridge.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- compiling ---- */

typedef struct xir_compiler xir_compiler;

typedef struct xir_compiler_options {
  uint32_t force_width;   /* 0 = the host's widest; else 1, 2, 4, 8 or 16 (must be runnable) */
  const char *pipeline;   /* NULL = the default pass pipeline */
  const char *codegen;    /* code generation level: NULL or "default", "none", "less",
                             "aggressive" */
} xir_compiler_options;

/* A compiler owns one JIT for the host CPU and a cache: compiling the same candidate of the same
 * program and shape twice returns the first result. Thread-safe. */
xir_status xir_compiler_create(const xir_compiler_options *opt, xir_compiler **out, xir_diag *d);
void xir_compiler_destroy(xir_compiler *c);
/* The SIMD width code is generated for. */
uint32_t xir_compiler_width(const xir_compiler *c);
/* The CPU name and feature string code is generated for. */
const char *xir_compiler_cpu(const xir_compiler *c);
const char *xir_compiler_features(const xir_compiler *c);
/* The LLVM version xir was built with ("19.1.7"). */
const char *xir_llvm_version(void);

typedef struct xir_kernel xir_kernel;

/* The native entry: runs blocks [block_begin, block_end). args is the packed argument array
 * (xir_kernel_pack_args). Returns 0. Same shape as the runtime's xir_block_fn. */
typedef int (*xir_entry_fn)(void *args, uint64_t block_begin, uint64_t block_end);

/* Lowers, optimizes and JIT-compiles one candidate. The kernel is owned by the compiler (freed
 * with it); errors: XIR_ERR_UNSUPPORTED (e.g. W not runnable here), XIR_ERR_LLVM. */
xir_status xir_compile(xir_compiler *cc, const xir_program *p, const xir_shape *shape,
                       const xir_candidate *cand, const xir_kernel **out, xir_diag *d);

/* Size in bytes of a kernel's packed argument array. */
size_t xir_kernel_args_size(const xir_kernel *k);
/* Packs one xir_arg per parameter (buffers: .in or .out; scalars: .scalar/.use_default) into
 * `slots` (xir_kernel_args_size bytes). Custom strides are not supported by native code. */
xir_status xir_kernel_pack_args(const xir_kernel *k, const xir_arg *args, void *slots,
                                xir_diag *d);
xir_entry_fn xir_kernel_entry(const xir_kernel *k);
uint64_t xir_kernel_blocks(const xir_kernel *k);
const xir_candidate *xir_kernel_candidate(const xir_kernel *k);

/* Provenance: the optimized IR text, the object bytes, their SHA-256 (hex) and the JIT time. */
typedef struct xir_kernel_info {
  const char *ir_text;
  size_t ir_len;
  const unsigned char *obj;
  size_t obj_size;
  const char *ir_sha256;
  const char *obj_sha256;
  double jit_ms;    /* lowering + optimization + code generation, this compile */
  int cached;       /* 1 when this compile was answered from the cache */
} xir_kernel_info;
void xir_kernel_get_info(const xir_kernel *k, xir_kernel_info *info);

#ifdef __cplusplus
}
#endif
#endif

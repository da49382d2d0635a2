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
  /* The on-disk kernel cache (docs/cache.md). Also off when $XIR_NO_KERNEL_CACHE is set (not
   * "" or "0"). */
  int no_kernel_cache;            /* 1 = never read or write it */
  const char *kernel_cache_dir;   /* NULL = xir_cache_dir() + "/kernels" */
  uint64_t kernel_cache_max_bytes; /* 0 = $XIR_KERNEL_CACHE_MAX_BYTES, else 256 MiB */
  /* The target: NULL/"" = the host CPU and its features. A forced CPU name (x86-64, x86-64-v3,
   * x86-64-v4, haswell, skylake-avx512, znver4, ...) and/or a feature string ("+avx2,+fma") must
   * be runnable here; code for a narrower target runs on this host (e.g. without F16C or
   * AVX512_BF16: the 16-bit conversions then use their exact integer form, same bits). */
  const char *cpu;
  const char *features;
} xir_compiler_options;

/* A compiler owns one JIT for the host CPU and a cache: compiling the same candidate of the same
 * program and shape twice returns the first result. Thread-safe.
 *
 * The on-disk kernel cache: a compile first looks for the object in the cache folder, keyed by
 * the SHA-256 of the canonical XIR text, the candidate, the compile-time dims (the shape), the
 * target (triple, CPU, features), the pass pipeline and codegen level, the xir and LLVM versions
 * and the build-id of xir's own code. A hit links the stored object (no lowering, optimization
 * or code generation); a miss compiles and stores it. Damaged or foreign entries are never
 * trusted (they are rebuilt); the folder is kept under a size cap, least recently used entries
 * first; concurrent processes are safe. Cache problems never fail a compile (see
 * xir_kernel_info.cache_note). Errors of xir_compiler_create: a malformed
 * XIR_KERNEL_CACHE_MAX_BYTES (XIR_ERR_INVALID_ARG). */
xir_status xir_compiler_create(const xir_compiler_options *opt, xir_compiler **out, xir_diag *d);
void xir_compiler_destroy(xir_compiler *c);
/* The SIMD width code is generated for. */
uint32_t xir_compiler_width(const xir_compiler *c);
/* The CPU name and feature string code is generated for. */
const char *xir_compiler_cpu(const xir_compiler *c);
const char *xir_compiler_features(const xir_compiler *c);
/* The kernel cache folder in use, or NULL when the disk cache is off; *why (optional) then says
 * why ("disabled by XIR_NO_KERNEL_CACHE", ...). */
const char *xir_compiler_kernel_cache(const xir_compiler *c, const char **why);
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
  double jit_ms;    /* this compile's work: lowering + optimization + code generation, or on a
                       disk-cache hit reading + verifying + linking the stored object */
  int cached;       /* 1 when this compile was answered from the compiler's in-memory cache */
  /* The on-disk kernel cache, for the compile that made this kernel: */
  int from_disk;          /* 1 when the object was loaded from it (nothing was compiled) */
  const char *disk_cache; /* "hit", "miss" or "off" */
  const char *cache_note; /* "" or what went wrong with it: a damaged entry rebuilt, an entry
                             that could not be written (the compile itself succeeded) */
  /* The entry's symbol in the object: "xir_<program>_<16 hex digits of the SHA-256 of the
   * canonical program text, shape and candidate>" — unique per (program, shape, candidate), the
   * same in every process and for every grain (docs/aot.md). */
  const char *entry_symbol;
} xir_kernel_info;
void xir_kernel_get_info(const xir_kernel *k, xir_kernel_info *info);

/* The C header of kernel k (compiled by cc from program p for shape): the entry's prototype
 * (symbol S = xir_kernel_info.entry_symbol), a struct S_args for its argument block, the block
 * count S_BLOCKS, the strings S_SYMBOL, S_KERNEL, S_SHAPE, S_CANDIDATE, and S_run(...) that runs
 * every block on the calling thread — what a C program needs to call the object code
 * (xir_kernel_info.obj, `xir compile --emit-obj`) without LLVM or libxir (docs/aot.md). With an
 * alias A (a C identifier; NULL = none) the header also defines A, A_args, A_run, A_BLOCKS, ...
 * as those names. *out is freed with xir_free. Errors: XIR_ERR_INVALID_ARG (NULL, k not compiled
 * from p, a bad alias), XIR_ERR_UNSUPPORTED (a parameter named like a C/C++ keyword). */
xir_status xir_kernel_c_header(const xir_compiler *cc, const xir_kernel *k, const xir_program *p,
                               const xir_shape *shape, const char *alias, char **out,
                               xir_diag *d);

#ifdef __cplusplus
}
#endif
#endif

/* xir_compile.h — native code (lowering + JIT) for the bridge's candidates (xir_bridge.h).
 *
 *   program + shape ──bridge──► candidates (perm × B × ℓ), each with its implementation kind
 *                   ──compile──► xir_kernel: fn(args, block_begin, block_end) + IR/object hashes
 *
 * Legality is decided by the bridge only. Only the candidate's compile-time dims
 * (xir_candidate.fixed_dims) are constants of the code; the other dims are launch arguments, so
 * a kernel compiled for shape S runs any shape S' with the same compile-time dims:
 *
 *   xir_compile(cc, p, &S, &cand, &k, &d);                    once
 *   xir_kernel_pack_launch(k, &S2, args, slots, &blocks, &d); per launch, any S2 ≈ S
 *   xir_runtime_launch(rt, (xir_block_fn)xir_kernel_entry(k), slots, blocks, G, H, &st, &d);
 *
 * Included by xir.h users who want native code; it includes xir_bridge.h. */
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
 * program and shape twice returns the first result, and a shape that differs only in launch-time
 * dims reuses the compiled code (a new xir_kernel for that shape, info.cached = 1, nothing is
 * compiled). Thread-safe.
 *
 * The on-disk kernel cache: a compile first looks for the object in the cache folder, keyed by
 * the SHA-256 of the canonical XIR text, the candidate, its compile-time dims (not the others), the
 * target (triple, CPU, features), the pass pipeline and codegen level, the xir and LLVM versions
 * and the build-id of xir's own code. A hit links the stored object (no lowering, optimization
 * or code generation); a miss compiles and stores it. Damaged or foreign entries are never
 * trusted (they are rebuilt); the folder is kept under a size cap, least recently used entries
 * first; concurrent processes are safe. Cache problems never fail a compile (see
 * xir_kernel_info.cache_note). XIR_KERNEL_CACHE_KEY=ir keys entries by the lowered IR instead of
 * the build-id and the XIR text (differently built xir's share entries; a hit then skips
 * optimization and code generation, not lowering: docs/cache.md). Errors of
 * xir_compiler_create: a malformed XIR_KERNEL_CACHE_MAX_BYTES, an XIR_KERNEL_CACHE_KEY other
 * than "build", "ir" or "" (XIR_ERR_INVALID_ARG). */
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
 * with it) and does not borrow `p`, `shape` or `cand`. cand->fixed_dims may name more
 * compile-time dims than the bridge requires (all of them: a kernel for exactly `shape`); the
 * bridge's own are always kept. errors: XIR_ERR_UNSUPPORTED (e.g. W not runnable here),
 * XIR_ERR_LLVM. */
xir_status xir_compile(xir_compiler *cc, const xir_program *p, const xir_shape *shape,
                       const xir_candidate *cand, const xir_kernel **out, xir_diag *d);

/* The most argument slots (8 bytes each) any kernel needs: the parameters, the launch-time dims,
 * the strides of the buffers and a flags word. `uint64_t slots[XIR_MAX_ARG_SLOTS]` fits every
 * kernel; xir_kernel_args_size gives the exact size. */
enum { XIR_MAX_ARG_SLOTS = XIR_MAX_PARAMS + XIR_MAX_DIMS + XIR_MAX_PARAMS * (XIR_MAX_RANK - 1) + 1 };
/* Size in bytes of a kernel's packed argument array (at most 8 · XIR_MAX_ARG_SLOTS). */
size_t xir_kernel_args_size(const xir_kernel *k);

/* Checks that `shape` can be launched with kernel k: a valid shape of the program whose
 * compile-time dims equal the kernel's, with every launch-time dim within
 * xir_candidate_dim_max. *blocks (optional) gets the block count of that launch. A mismatch is
 * XIR_ERR_INVALID_ARG naming the dim, both values and the kernel's compile-time dims. */
xir_status xir_kernel_check_shape(const xir_kernel *k, const xir_shape *shape, uint64_t *blocks,
                                  xir_diag *d);
/* Packs a launch of kernel k for `shape` (checked as by xir_kernel_check_shape): one xir_arg per
 * parameter (buffers: .in or .out with their layout, xir_arg.strides / .row_stride; scalars:
 * .scalar / .use_default), the launch-time dims and the strides into `slots`
 * (xir_kernel_args_size bytes); *blocks (optional) gets the block count to launch. Buffers need
 * a unit innermost stride and nested strides (XIR_ERR_UNSUPPORTED otherwise). An output that
 * overlaps another buffer is refused (XIR_ERR_UNSUPPORTED) unless it is exactly an input (same
 * pointer, extents and strides) that the program lets it alias (xir_program_alias_ok). The
 * slots borrow the buffers: they stay valid while the buffers do. */
xir_status xir_kernel_pack_launch(const xir_kernel *k, const xir_shape *shape, const xir_arg *args,
                                  void *slots, uint64_t *blocks, xir_diag *d);
/* xir_kernel_pack_launch for the shape the kernel was compiled (or asked) for. */
xir_status xir_kernel_pack_args(const xir_kernel *k, const xir_arg *args, void *slots,
                                xir_diag *d);
xir_entry_fn xir_kernel_entry(const xir_kernel *k);
/* Tells packed `slots` where the thread that runs a task goes next: `stride` blocks from the
 * task's first block to the first of the next task the same thread runs — h·G for the runtime's
 * round-robin over h ≥ 2 workers (xir_launch_task_stride gives it), 0 for none, which packing
 * leaves. A row kernel's last root program of a call then prefetches that task's first row
 * instead of the next row, which another worker runs (docs/lowering.md, "Next-row prefetch").
 * Only the prefetch depends on it: results are the same bits with any stride. Call it after
 * xir_kernel_pack_launch / _pack_args and before each launch whose split differs. A stride of
 * 2^32 or more is stored as 0. XIR_ERR_INVALID_ARG for a NULL kernel or slots. */
xir_status xir_kernel_set_task_stride(const xir_kernel *k, void *slots, uint64_t stride,
                                      xir_diag *d);
/* The block count for the kernel's own shape (xir_kernel_check_shape gives it for others). */
uint64_t xir_kernel_blocks(const xir_kernel *k);
/* The candidate, for the kernel's own shape; its fixed_dims are the compile-time dims. */
const xir_candidate *xir_kernel_candidate(const xir_kernel *k);
/* The shape the kernel was compiled (or, for a reused kernel, asked) for. */
const xir_shape *xir_kernel_shape(const xir_kernel *k);

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
   * canonical program text, compile-time dims and candidate>" — unique per compiled code
   * (shapes that differ only in launch-time dims share it), the same in every process and for
   * every grain (docs/aot.md). */
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

/* jit.h — the JIT: LLVM IR module → optimized IR → native object → callable entry point.
 *
 * One xir__jit wraps one ORC LLJIT for one target (the host CPU by default, or a forced CPU name /
 * feature string, e.g. to restrict the code to AVX2 and W = 8). It is created once per compiler and
 * reused for many modules:
 *
 *   xir__jit_module_create ─► (the lowering fills m.mod) ─► xir__jit_add:
 *       cache probe ─► LLVMVerifyModule ─► LLVMRunPasses(pipeline, host target machine)
 *       ─► print IR (hash) ─► LLJIT add in a fresh JITDylib ─► lookup(entry) compiles + links
 *       ─► the ObjectTransformLayer captures the object bytes (hash) ─► xir__jit_artifact
 *
 * Every module gets its own JITDylib, so many kernels with the same symbol names coexist, and the
 * emitted object bytes do not depend on how many modules were added before. Compiling the same IR
 * text with the same options gives the same IR hash and object hash, in any JIT object and any
 * process. Artifacts are owned by the JIT and live until xir__jit_destroy.
 *
 * Thread safety: every function taking an xir__jit may be called from any thread; compiles are
 * serialized by the JIT's mutex (one compile at a time per JIT object).
 *
 * The LLVM handle types are declared here (identically to llvm-c), so that tests and tools can use
 * this header without the LLVM headers; only src/lower/ includes llvm-c itself. */
#ifndef XIR_LOWER_JIT_H
#define XIR_LOWER_JIT_H

#include <stddef.h>

/* The same typedefs as llvm-c/Types.h and llvm-c/Orc.h (a repeated identical typedef is valid C11). */
typedef struct LLVMOpaqueContext *LLVMContextRef;
typedef struct LLVMOpaqueModule *LLVMModuleRef;
typedef struct LLVMOrcOpaqueThreadSafeContext *LLVMOrcThreadSafeContextRef;
typedef struct LLVMOrcOpaqueJITDylib *LLVMOrcJITDylibRef;

#include "xir_status.h"

/* The default optimization pipeline: the inliner (the vector math functions are internal
 * functions, one per module and width), then a light function pipeline for IR that the lowering
 * already vectorized (no loop/SLP vectorizer, no unrolling). Inlining costs a few ms of JIT per
 * kernel (softmax_mask 129x768: 17.9 ms with it, 13.5 ms without, bench_jit_levels) and saves
 * the call, the spills around it and LICM's blind spot: single-thread best candidates measured
 * with bench_regret --workers 1 (paired, same session): gelu_residual 129x768 66-76 -> 57-58 us,
 * swiglu 257x1538 205 -> 190-194 us, softmax_mask 129x768 45 -> 44.5 us. Run time wins; the
 * on-disk kernel cache amortizes JIT time. `instcombine<no-verify-fixpoint>`: plain
 * `instcombine` in a pipeline string verifies its fixpoint and aborts the process when the
 * fixpoint is not reached. */
#define XIR__JIT_LIGHT_PIPELINE                                                                \
  "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm),gvn,"   \
  "instcombine<no-verify-fixpoint>,simplifycfg)"
#define XIR__JIT_DEFAULT_PIPELINE "cgscc(inline)," XIR__JIT_LIGHT_PIPELINE

typedef struct xir__jit xir__jit;

typedef struct xir__jit_options {
  /* NULL/"" = the host CPU (LLVMGetHostCPUName). A forced name must be one xir knows (x86-64,
   * x86-64-v2, x86-64-v3, x86-64-v4, haswell, skylake, skylake-avx512, icelake-server, znver3,
   * znver4, ... or the host's own name); its features must all be available on the host. */
  const char *cpu;
  /* NULL/"" = the host's features with a host CPU, the CPU's own features with a forced CPU.
   * Forced: a comma list "+avx2,+fma"; every +feature must be a host feature. With a forced
   * feature string and no forced CPU the CPU is "x86-64" (baseline) plus these features. */
  const char *features;
  /* NULL/"" = XIR__JIT_DEFAULT_PIPELINE; else a new-pass-manager pipeline text ("default<O3>"). */
  const char *pipeline;
  /* Code generation level 0..3 (LLVMCodeGenOptLevel); -1 = default (2). */
  int codegen_level;
} xir__jit_options;

/* Creates a JIT. opt may be NULL (host, defaults). Errors: XIR_ERR_UNSUPPORTED for a CPU/feature
 * set this host cannot run, XIR_ERR_INVALID_ARG for an unknown CPU name or bad option, XIR_ERR_LLVM
 * when LLVM fails. */
xir_status xir__jit_create(const xir__jit_options *opt, xir__jit **out, xir_diag *d);
void xir__jit_destroy(xir__jit *jit); /* NULL is fine; frees every artifact and all JIT'd code */

const char *xir__jit_cpu(const xir__jit *jit);      /* the CPU name code is generated for */
const char *xir__jit_features(const xir__jit *jit); /* the feature string ("" = CPU's own) */
const char *xir__jit_triple(const xir__jit *jit);
const char *xir__jit_pipeline(const xir__jit *jit);
int xir__jit_codegen_level(const xir__jit *jit);     /* 0..3 */

/* 1 when the JIT's target has CPU feature `name` ("f16c", "avx512bf16", "fma", "avx512f",
 * "avx512vl", "avx512dq"; LLVM's spelling): the host's features by default; for a forced CPU,
 * that CPU's (known for the names above: x86-64, x86-64-v2, nehalem, westmere and sandybridge
 * lack f16c; cooperlake, sapphirerapids and znver4 have avx512bf16; every 16-wide name has
 * avx512f, vl and dq; fma from Haswell and Zen on), then the forced feature string's +name/-name items in order (avx512f implies
 * f16c). 0 when unsure: callers use it to choose hardware instructions that have an exact
 * software equivalent. */
int xir__jit_has_feature(const xir__jit *jit, const char *name);

/* The widest fp32 SIMD width W of the JIT's target: 16 (avx512f), 8 (avx/avx2), 4 (sse2), else 1. */
unsigned xir__jit_max_width(const xir__jit *jit);
/* XIR_OK when W is in {1, 2, 4, 8, 16} and W ≤ the max width; XIR_ERR_INVALID_ARG for another W,
 * XIR_ERR_UNSUPPORTED (naming the missing feature) when the target is too narrow. */
xir_status xir__jit_check_width(const xir__jit *jit, unsigned W, xir_diag *d);
/* The widest fp32 width of the host this process runs on (the same rule, from the host features). */
unsigned xir__jit_host_max_width(void);

/* A module under construction, in its own ThreadSafeContext, with the JIT's triple and data layout.
 * The lowering builds IR in mod (using ctx). Hand it to xir__jit_add, or dispose of it. */
typedef struct xir__jit_module {
  LLVMOrcThreadSafeContextRef tsc;
  LLVMContextRef ctx;
  LLVMModuleRef mod;
} xir__jit_module;

xir_status xir__jit_module_create(xir__jit *jit, const char *name, xir__jit_module *m,
                                  xir_diag *d);
/* A module parsed from LLVM IR text (tests, tools, reproducing a candidate from its IR). A parse
 * error is XIR_ERR_LLVM with LLVM's message; the IR is not verified here (xir__jit_add does). The
 * triple and data layout are set to the JIT's. */
xir_status xir__jit_module_from_ir(xir__jit *jit, const char *name, const char *ir_text,
                                   xir__jit_module *m, xir_diag *d);
/* Frees a module that was not handed to xir__jit_add (safe on a zeroed or consumed one). */
void xir__jit_module_dispose(xir__jit_module *m);
/* SHA-256 (hex) of the module's IR text as it is now (the kernel cache's IR key). */
xir_status xir__jit_module_ir_sha256(const xir__jit_module *m, char out[65], xir_diag *d);

/* The result of one compile. Owned by the JIT; valid until xir__jit_destroy. */
typedef struct xir__jit_artifact {
  void *entry;             /* address of the entry symbol */
  const char *entry_name;  /* the symbol that was looked up */
  const char *key;         /* the cache key it is stored under */
  const char *ir_text;     /* the optimized IR, NUL-terminated */
  size_t ir_len;
  const unsigned char *obj; /* the emitted relocatable object bytes (before linking) */
  size_t obj_size;
  char ir_sha256[65];      /* lowercase hex */
  char obj_sha256[65];
  double verify_ms;        /* LLVMVerifyModule */
  double opt_ms;           /* LLVMRunPasses */
  double codegen_ms;       /* add + lookup: instruction selection, object emission, linking */
  double total_ms;         /* everything xir__jit_add did for it, printing and hashing included */
  LLVMOrcJITDylibRef jd;   /* the module's own JITDylib */
  int loaded;              /* 1: added from object bytes (xir__jit_add_object), nothing compiled */
} xir__jit_artifact;

/* Compiles m and looks up `entry`. Always takes ownership of m (m is zeroed on return).
 *   key == NULL: the key is "ir:" + SHA-256 of (unoptimized IR text, CPU, features, pipeline,
 *   codegen level, entry); key != NULL: the caller's key (it must describe everything that
 *   determines the code). When the key is already in the cache the earlier artifact is returned and
 *   m is disposed without compiling.
 * Errors: XIR_ERR_LLVM with LLVM's message (invalid IR, bad pipeline, codegen/link failure),
 * XIR_ERR_NOT_FOUND when the module has no symbol `entry`, XIR_ERR_INVALID_ARG, XIR_ERR_NOMEM.
 * *cached (optional) tells whether the artifact came from the cache. */
xir_status xir__jit_add(xir__jit *jit, xir__jit_module *m, const char *entry, const char *key,
                        const xir__jit_artifact **out, int *cached, xir_diag *d);

/* Links an already compiled object (e.g. from the on-disk kernel cache) under key and looks up
 * `entry`: no verification, optimization or code generation. The IR text and both hashes are
 * the caller's (they describe the object; the caller verified them); the object bytes the JIT
 * links are captured and must equal obj (else XIR_ERR_LLVM). When key is already in the cache the
 * earlier artifact is returned. Copies everything it keeps. */
xir_status xir__jit_add_object(xir__jit *jit, const char *key, const char *entry,
                               const char *ir_text, size_t ir_len, const char ir_sha256[65],
                               const unsigned char *obj, size_t obj_size,
                               const char obj_sha256[65], const xir__jit_artifact **out,
                               xir_diag *d);

/* The artifact stored under key, or NULL. */
const xir__jit_artifact *xir__jit_cache_find(xir__jit *jit, const char *key);
size_t xir__jit_cache_size(xir__jit *jit);

/* Looks up another symbol defined by an artifact's module. XIR_ERR_NOT_FOUND if it has none. */
xir_status xir__jit_lookup(xir__jit *jit, const xir__jit_artifact *a, const char *name,
                           void **addr, xir_diag *d);

/* Lowercase hex SHA-256 of n bytes into out[65]: the one implementation is util/sha256.c. */
void xir__sha256_hex(const void *data, size_t n, char out[65]);
#define xir__jit_sha256_hex xir__sha256_hex

#endif

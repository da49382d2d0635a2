/* lower.h — XIR to LLVM IR for one candidate and its compile-time dims (internal; see lower.c). */
#ifndef XIR_LOWER_H
#define XIR_LOWER_H

#include <llvm-c/Core.h>

#include "lower/convert.h"
#include "lower/stream.h"
#include "xir_compile.h"

/* The argument block of a kernel: 8-byte slots. Slots [0, nparams) are the parameters in
 * declaration order (a buffer's base pointer, an f32 scalar in the low 4 bytes, an i64 scalar);
 * then one i64 per launch-time dim (dims whose bit in fixed_dims is clear, in dim order); then,
 * for every buffer of rank ≥ 2, the strides (in elements) of its dims 0 … rank−2 (the innermost
 * stride is always 1); then one flags slot (bit 0: every buffer is contiguous row-major; bit 1:
 * write the outputs with non-temporal stores where they are aligned, xir__stream_launch; bits 32
 * to 63: the home stride h·G, the blocks from a task's first to the first of the next task the
 * same worker is dealt (round-robin), 0 when unknown: xir_kernel_set_task_stride). */
typedef struct xir__arg_layout {
  int nslots;
  int dim_slot[XIR_MAX_DIMS];      /* -1 for a compile-time dim */
  int stride_slot[XIR_MAX_PARAMS]; /* the slot of stride 0 of a buffer of rank ≥ 2, else -1 */
  int flags_slot;
} xir__arg_layout;
enum { XIR__ARGS_CONTIGUOUS = 1 }; /* XIR__ARGS_STREAM = 2: lower/stream.h */
enum { XIR__ARGS_HOME_SHIFT = 32 };

void xir__arg_layout_make(const xir_program *p, uint32_t fixed_dims, xir__arg_layout *l);

/* What of the environment the lowering reads: "" or "row-group=N" (XIR_ROW_GROUP, a
 * measurement override of the row groups, docs/lowering.md). Part of the kernel cache's key. */
const char *xir__lower_env_key(void);

/* Adds the function `entry` — i32 entry(ptr args, i64 block_begin, i64 block_end) — to mod.
 * Only the candidate's compile-time dims (c->fixed_dims) of `shape` are read: the others are
 * loaded from the argument block, so the IR is the same for every value of them. */
xir_status xir__lower(const xir_program *p, const xir_shape *shape, const xir_candidate *c,
                      LLVMModuleRef mod, const char *entry, xir_diag *d);
/* The same for a target whose f32 <-> bf16/f16 conversions are `t`'s (xir__lower: the host's). */
xir_status xir__lower_for(const xir_program *p, const xir_shape *shape, const xir_candidate *c,
                          const xir__cvt_target *t, LLVMModuleRef mod, const char *entry,
                          xir_diag *d);

/* The attention mapping (candidates with attn_vec set; docs/lowering.md): the same entry, one
 * tile of query rows per block, online softmax; the vector math's FMA and AVX-512 variants are
 * `t`'s. xir__lower_for calls it for those candidates. */
xir_status xir__lower_attn(const xir_program *p, const xir_shape *shape, const xir_candidate *c,
                           const xir__cvt_target *t, LLVMModuleRef mod, const char *entry,
                           xir_diag *d);

#endif

/* lower.h — XIR to LLVM IR for one candidate and one bound shape (internal; see lower.c). */
#ifndef XIR_LOWER_H
#define XIR_LOWER_H

#include <llvm-c/Core.h>

#include "lower/convert.h"
#include "xir_compile.h"

/* Adds the function `entry` — i32 entry(ptr args, i64 block_begin, i64 block_end) — to mod.
 * args is an array of 8-byte slots, one per parameter: a buffer's base pointer, an f32 scalar
 * in the low 4 bytes, or an i64 scalar. */
xir_status xir__lower(const xir_program *p, const xir_shape *shape, const xir_candidate *c,
                      LLVMModuleRef mod, const char *entry, xir_diag *d);
/* The same for a target whose f32 <-> bf16/f16 conversions are `t`'s (xir__lower: the host's). */
xir_status xir__lower_for(const xir_program *p, const xir_shape *shape, const xir_candidate *c,
                          const xir__cvt_target *t, LLVMModuleRef mod, const char *entry,
                          xir_diag *d);

/* The attention mapping (candidates with attn_vec set; docs/lowering.md): the same entry, one
 * tile of query rows per block, online softmax. xir__lower calls it for those candidates. */
xir_status xir__lower_attn(const xir_program *p, const xir_shape *shape, const xir_candidate *c,
                           LLVMModuleRef mod, const char *entry, xir_diag *d);

#endif

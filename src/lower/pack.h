/* pack.h — the argument block's fast path (internal; launch.c; without LLVM's headers, so that
 * the session, the bench and the tests can include it). */
#ifndef XIR_LOWER_PACK_H
#define XIR_LOWER_PACK_H

#include "xir_compile.h"

/* xir_kernel_pack_args's fast path (what a session launch takes): the launch at k's own shape
 * with dense buffers, args[0..nargs) in parameter order, a parameter at or past nargs a scalar
 * taking its default. 1 when the slots are packed (the same bits as xir_kernel_pack_args);
 * 0 when the general path must decide (a missing or NULL buffer, strides, overlapping
 * buffers, a kernel without the dense form), with slots unspecified. */
int xir__kernel_pack_dense(const xir_kernel *k, const xir_arg *args, int nargs, void *slots);

#endif

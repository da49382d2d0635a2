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

/* 1 when the stores of k's dense launch are chosen at launch time (session/choice.h): the mode
 * is by size (XIR_STREAM_STORES unset or auto), the kernel is not the attention mapping, and its
 * footprint is in xir__stream_choice_zone (lower/stream.h). bits[0] = the streaming bits the
 * rule gives (xir__stream_launch), bits[1] = the other choice: none when the rule streams every
 * row (both bits, or XIR__ARGS_STREAM when every output row starts on a vector boundary), both
 * (XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF) when it streams none or only the aligned rows of
 * rows that are not all aligned. 0 (bits zero) otherwise. The
 * stores never change the values written. */
int xir__kernel_stream_choice(const xir_kernel *k, int bits[2]);

/* Replaces the streaming bits (XIR__ARGS_STREAM, XIR__ARGS_STREAM_ROWBUF) of packed slots. */
void xir__kernel_set_stream_bits(const xir_kernel *k, void *slots, int bits);

#endif

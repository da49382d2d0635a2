/* kernel.h — the compiled kernel object (internal; compile.c makes them, launch.c binds shapes
 * and packs arguments). */
#ifndef XIR_LOWER_KERNEL_H
#define XIR_LOWER_KERNEL_H

#include <stdatomic.h>

#include "lower/jit.h"
#include "lower/lower.h"
#include "lower/pack.h"
#include "xir_compile.h"

/* A kernel for one shape. Kernels whose candidates and compile-time dims agree share one
 * compiled object: the first one compiled (the base) owns the key, the program copy and the
 * note; the others (views, answered from the in-memory cache) point at it. */
struct xir_kernel {
  struct xir_kernel *base;  /* itself for a base */
  char *key;                /* base: the canonical text, the compile-time dims, the candidate */
  xir_program *prog;        /* base: a copy of the program (shape checks, messages) */
  xir_shape shape;          /* the shape it was compiled or asked for */
  xir_candidate cand;       /* the candidate for that shape */
  xir__arg_layout lay;
  uint8_t alias_ok[XIR_MAX_PARAMS][XIR_MAX_PARAMS]; /* [out][in]: y = x allowed (xir_alias_ok) */
  const xir__jit_artifact *art;
  double jit_ms;
  int cached;
  int disk; /* 0 off, 1 miss, 2 hit */
  char *note;
  char symbol[80];          /* the entry's symbol (compile.c, entry_symbol) */
  /* the launch at its own shape with dense buffers (xir_kernel_pack_args without strides),
   * checked once (xir__kernel_dense_prepare): its block count, the argument block with every
   * slot but the pointers and scalars written (dims, dense strides, zeros, the contiguous flag),
   * the buffers (parameter indices, bytes, which are outputs), the scalars, and the footprint
   * the streaming decision takes */
  int dense_ok;
  uint64_t dense_blocks, dense_footprint;
  int dense_half_out;
  int reduces; /* 1: the body has a reduction, 2: and vector math (xir__stream_launch) */
  int dense_nbuf, dense_nscalar;
  uint8_t dense_buf[XIR_MAX_PARAMS], dense_scalar[XIR_MAX_PARAMS];
  uint32_t dense_outputs; /* bit j: buffer dense_buf[j] is an output */
  uint64_t dense_bytes[XIR_MAX_PARAMS]; /* of buffer dense_buf[j] */
  uint64_t dense_tmpl[XIR_MAX_ARG_SLOTS];
  /* the slots the template alone writes (dims, dense strides, unused), not the pointers, the
   * scalars or the flags */
  int dense_nconst;
  uint8_t dense_const[XIR_MAX_ARG_SLOTS];
  /* the streaming and far bits of a dense launch (xir__stream_launch | xir__far_launch of its
   * footprint) tagged with the xir__stream_generation they were computed in: generation << 32 |
   * bits, 0 before the first launch */
  _Atomic uint64_t dense_sbits;
  struct xir_kernel *next;
};

/* Fills the dense_* fields from k->shape (after the shape, candidate, layout and base are set). */
void xir__kernel_dense_prepare(struct xir_kernel *k);

#endif

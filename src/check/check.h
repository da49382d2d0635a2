/* check.h — test cases for a bound program: seeded inputs, the fp64 oracle's outputs, guarded
 * output buffers for compiled code, and the comparison of an f32 output with the oracle.
 *
 * The CLI, the benchmark and the tests all check results through this one module, so "checked
 * against the oracle" means the same thing everywhere: the whole output, NaN never passing,
 * sentinels around every output buffer. Internal (not part of the public API). */
#ifndef XIR_CHECK_H
#define XIR_CHECK_H

#include "xir.h"

enum { XIR_CASE_GUARD = 64 }; /* sentinel floats on each side of an output buffer */

typedef struct xir_case {
  const xir_program *p;
  xir_shape shape;
  uint64_t seed;
  size_t numel[XIR_MAX_PARAMS];
  float *data[XIR_MAX_PARAMS];   /* inputs, or the guarded outputs compiled code writes; for an
                                  * i64 input, its values converted to float (exact below 2^24),
                                  * for consumers that take f32 buffers only (the C peers) */
  int64_t *idata[XIR_MAX_PARAMS]; /* i64 inputs: the values (args[i].in points here) */
  /* bf16/f16 buffers: the stored bit patterns (args[i].in / .out point here). For an input,
   * data[i] holds the same values decoded to f32; an output is written here (guarded, hguard)
   * and data[i] is NULL — xir__case_compare and xir__case_output_f32 decode it. */
  uint16_t *hdata[XIR_MAX_PARAMS];
  uint16_t *hguard[XIR_MAX_PARAMS];
  float *guard[XIR_MAX_PARAMS];  /* outputs: data - XIR_CASE_GUARD, 64-byte aligned (as a
                                  * framework's tensors are: streaming stores need it) */
  void *graw[XIR_MAX_PARAMS];    /* outputs: the allocation guard or hguard lies in */
  double *ref[XIR_MAX_PARAMS];   /* outputs: the oracle's values (after xir__case_oracle) */
  double scalar[XIR_MAX_PARAMS]; /* scalar arguments */
  int scalar_set[XIR_MAX_PARAMS];
  xir_arg args[XIR_MAX_PARAMS];  /* ready for xir_interpret / native launches */
  /* Strided views (xir__case_set_row_stride): rows of a buffer `row_stride` elements apart in
   * sview (XIR_CASE_GUARD sentinels each side; the gaps between rows hold sentinels too);
   * args[i] then points into it. data[] and ref[] stay contiguous. */
  int64_t row_stride[XIR_MAX_PARAMS];
  float *sview[XIR_MAX_PARAMS];
  /* Placed inputs (xir__case_place_inputs): the allocations data[i], hdata[i] and idata[i] lie
   * in (NULL: the array is its own allocation). */
  void *iraw[XIR_MAX_PARAMS][3];
} xir_case;

/* The value range random inputs are drawn from, per parameter name (documented in docs/xir.md). */
void xir__case_input_range(const xir_program *p, int param, float *lo, float *hi);
/* The range [0, *hi) random integers of i64 input `param` are drawn from (docs/xir.md): the
 * smallest extent of the buffer dims its loaded values index directly (`load cos[load pos[r], i]`
 * gives P), else 1024. */
void xir__case_input_range_i64(const xir_program *p, const xir_shape *shape, int param,
                               int64_t *hi);

/* Allocates every buffer and fills inputs with seeded random values (f32: never zero; i64:
 * integers in [0, hi) of xir__case_input_range_i64, not all zero when hi > 1; stream = the
 * parameter index, so inputs do not depend on each other). Outputs are filled with a NaN pattern
 * so that an element nobody writes never passes. */
xir_status xir__case_init(xir_case *c, const xir_program *p, const xir_shape *shape,
                          uint64_t seed, xir_diag *d);
/* Moves every input array (data, hdata, idata of each input buffer) to `offset` bytes past a page
 * (4096-byte) boundary (0 <= offset < 64, a multiple of 8: every element type stays aligned to
 * its size) and points args[] at the moved copies: the benchmark places the inputs of every
 * configuration alike, where malloc's own placement (16 bytes past a page for large buffers, or
 * anywhere on the heap) differs from one allocation to the next and moved the compiled kernels by
 * up to 10 %. Call after xir__case_init (or xir__case_load_inputs, which allocates anew) and
 * before xir__case_set_row_stride and before packing arguments from args[] (packed slots keep the
 * old, freed addresses). XIR_ERR_INVALID_ARG for a bad offset or an input that already has a
 * strided view, XIR_ERR_NOMEM (the case unchanged). */
xir_status xir__case_place_inputs(xir_case *c, int offset, xir_diag *d);
/* 1 when xir__case_place_inputs takes `offset`: an integer in [0, 64), a multiple of 8 (the
 * benchmark's --input-offset asks the same; src/bench/records.c restates it for the audit). */
int xir__case_offset_ok(double offset);
/* Sets scalar parameter `name` (overrides its default). The value must be finite; for an f32
 * scalar within the f32 range, for an i64 scalar an integer of magnitude at most 2^53 (scalars
 * are carried as doubles). XIR_ERR_INVALID_ARG otherwise. */
#define XIR_CASE_MAX_EXACT_I64 9007199254740992.0 /* 2^53 */
xir_status xir__case_set_scalar(xir_case *c, const char *name, double value, xir_diag *d);
/* Replaces the inputs with DIR/<param>.npy files (shapes checked; '<f4' for f32 buffers, '<i8'
 * for i64 buffers, '<f2' for f16 and 'bfloat16' or '<V2' for bf16 buffers — or '<f4' for a
 * 16-bit buffer, rounded to nearest even). */
xir_status xir__case_load_inputs(xir_case *c, const char *dir, xir_diag *d);
/* Lays buffer `param` (f32, rank ≥ 2) out with rows `row_stride` elements apart (at least the
 * row length): an input's rows are copied there, the gaps and the guards around it are filled
 * with sentinels that xir__case_sentinels_ok checks for outputs (a write between rows fails);
 * the oracle reads and writes the same elements through xir_arg.row_stride, and
 * xir__case_compare reads the output's rows. */
xir_status xir__case_set_row_stride(xir_case *c, int param, int64_t row_stride, xir_diag *d);
/* Runs the fp64 interpreter into ref[]. */
xir_status xir__case_oracle(xir_case *c, xir_diag *d);
/* Resets the outputs to the NaN pattern (and the sentinels). */
void xir__case_reset_outputs(xir_case *c);
/* 1 when every output buffer's sentinels are intact (for a strided output: the gaps between its
 * rows too). */
int xir__case_sentinels_ok(const xir_case *c);
/* SHA-256 (hex) of the bytes of every input buffer and scalar, in parameter order. */
void xir__case_input_fingerprint(const xir_case *c, char hex[65]);
void xir__case_free(xir_case *c);

/* Tolerance: an element passes when |y - ref| <= atol + rtol * |ref| (and y is not NaN unless
 * ref is NaN). For a bf16/f16 output the bound adds half an ulp of the output type at y (the
 * final rounding; docs/xir.md, "Tolerances of 16-bit outputs"), and an infinite y passes where
 * ref plus that bound rounds to the same infinity. */
typedef struct xir_tolerance {
  double rtol, atol;
} xir_tolerance;

/* Output element k of `param` as f32 (decoded for a bf16/f16 output). */
float xir__case_output_f32(const xir_case *c, int param, size_t k);
/* Half the spacing of elem (XIR_BF16, XIR_F16; 0 for f32) values at |y|: the largest error of
 * rounding to elem a value that rounds to y. */
double xir__half_ulp(int elem, double y);

/* The stated tolerance of a built-in kernel for f32 native code vs the fp64 oracle (docs say
 * why); user programs get rtol 1e-4, atol 1e-5. */
xir_tolerance xir__kernel_tolerance(const char *kernel_name);

/* When the case's inputs lie outside the range in which built-in kernel `p->name` is documented
 * to meet its tolerance in f32 (docs/xir.md, "Special values and numeric ranges of the built-in
 * kernels"), writes a one-line note saying which input and why into buf and returns 1; returns
 * 0 (buf = "") otherwise. rmsnorm: a row with sum x^2 > 2^127; layernorm: a row with
 * ||x||_2 > 2^63; rope: a position |r + offset| > 2^13 (and the rounding of positions beyond
 * 2^24). Other kernels and user programs: never. */
int xir__case_range_note(const xir_case *c, char *buf, size_t n);

typedef struct xir_compare {
  size_t n, bad, nan;     /* elements, elements out of tolerance, NaN where ref is not */
  size_t first_bad;       /* index of the first bad element */
  double max_abs, max_rel; /* max |y-ref|; max |y-ref| / |ref| over |ref| > atol */
  double rel_l2;          /* ||y-ref||_2 / ||ref||_2 */
  int pass;
} xir_compare;

/* Compares output `param` (c->data) with the oracle (c->ref). */
xir_compare xir__case_compare(const xir_case *c, int param, xir_tolerance tol);

#endif

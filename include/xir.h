/* xir.h — the public API of xir: XIR programs (builder, text, verifier), the fp64 reference
 * interpreter, and the built-in LLM kernels. The compiler, runtime, planner and the one-call
 * session extend the API in their own headers (xir_compile.h, xir_runtime.h, xir_plan.h,
 * xir_session.h); xir_session.h includes all of them (docs/api.md).
 *
 * Handles are opaque; every fallible call returns an xir_status and fills an optional xir_diag.
 * A program is immutable once built and may be shared by threads for reading. */
#ifndef XIR_H
#define XIR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "xir_ops.h"
#include "xir_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Types and ops */

/* Element types. Buffers hold f32, bf16 or f16 (inputs and outputs), or i64 (inputs only:
 * positions, indices); scalars are f32 or i64; bool is the type of comparisons. A load of a bf16
 * or f16 buffer gives f32 values (exact), a store to one rounds the f32 value to nearest even:
 * arithmetic is always f32 (docs/xir.md, "16-bit buffers"). */
typedef enum xir_elem {
  XIR_ELEM_NONE = 0,
  XIR_F32,
  XIR_I64,
  XIR_BOOL,
  XIR_BF16, /* bfloat16: 1 sign, 8 exponent, 7 fraction bits (the upper half of an f32) */
  XIR_F16,  /* IEEE 754 binary16: 1 sign, 5 exponent, 10 fraction bits */
} xir_elem;

/* The name of an element type in XIR text ("f32", "i64", "bool", "bf16", "f16"); NULL when out of
 * range. */
const char *xir_elem_name(xir_elem e);
/* The element type named `name` (as above), or XIR_ELEM_NONE. */
xir_elem xir_elem_from_name(const char *name);
/* Bytes of one buffer element: 4 (f32), 8 (i64), 2 (bf16, f16); 0 for bool and NONE. */
size_t xir_elem_size(xir_elem e);

/* Exact conversions between f32 and the 16-bit types, bit for bit what native code does:
 * to f32 is exact (an f16/bf16 NaN gives an f32 NaN with the same sign and the payload shifted
 * up; an f16 signalling NaN comes back quiet, a bf16 one keeps its bits); from f32 rounds to
 * nearest, ties to even, with IEEE overflow to inf (f16: |x| >= 65520), exact subnormals (no
 * flushing), and NaN kept NaN (quiet, same sign, the top payload bits). */
uint16_t xir_f32_to_bf16(float x);
float xir_bf16_to_f32(uint16_t h);
uint16_t xir_f32_to_f16(float x);
float xir_f16_to_f32(uint16_t h);
/* The same over n elements (in and out may not overlap). */
void xir_f32_to_bf16_n(const float *in, uint16_t *out, size_t n);
void xir_bf16_to_f32_n(const uint16_t *in, float *out, size_t n);
void xir_f32_to_f16_n(const float *in, uint16_t *out, size_t n);
void xir_f16_to_f32_n(const uint16_t *in, float *out, size_t n);

/* The op enum, generated from the op table in xir_ops.h. */
typedef enum xir_op {
#define XIR_OP_ENUM_(id, text, n, ty, f, i) XIR_OP_##id,
  XIR_OPS(XIR_OP_ENUM_)
#undef XIR_OP_ENUM_
  XIR_OP_COUNT_
} xir_op;

/* The op's name in XIR text ("exp", "reduce.sum"). NULL for an out-of-range value. */
const char *xir_op_name(xir_op op);

/* Maximum buffer rank, tile rank, dims, root axes, parameters. */
enum {
  XIR_MAX_RANK = 8,
  XIR_MAX_TILE_RANK = 4,
  XIR_MAX_DIMS = 32,
  XIR_MAX_ROOT = 8,
  XIR_MAX_PARAMS = 32,
};

/* ---------------------------------------------------------------------------------------------
 * Programs */

typedef struct xir_program xir_program;

typedef enum xir_param_kind { XIR_PARAM_BUFFER = 1, XIR_PARAM_SCALAR = 2 } xir_param_kind;

/* A description of one parameter, as reported by xir_program_param(). Pointers stay valid for
 * the program's lifetime. */
typedef struct xir_param_info {
  const char *name;
  xir_param_kind kind;
  xir_elem elem;          /* buffers: XIR_F32, XIR_BF16, XIR_F16 or XIR_I64 (i64 buffers are
                             always inputs); scalars: XIR_F32 or XIR_I64 */
  int is_output;          /* buffers only: declared `out` */
  int rank;               /* buffers only */
  int dims[XIR_MAX_RANK]; /* buffers only: indices into the program's dims */
  int has_default;        /* scalars only */
  double default_value;   /* scalars only */
} xir_param_info;

/* Parses XIR text. `filename` is used in diagnostics (may be NULL). On success *out owns a
 * verified program. On failure *out is NULL and d names file:line:col and the problem. */
xir_status xir_program_parse(const char *text, size_t len, const char *filename,
                             xir_program **out, xir_diag *d);

/* Reads and parses a file. */
xir_status xir_program_parse_file(const char *path, xir_program **out, xir_diag *d);

/* Prints the canonical text of a program into a newly allocated string (free with xir_free).
 * print(parse(print(p))) == print(p) for every verified program. */
xir_status xir_program_print(const xir_program *p, char **out, xir_diag *d);

/* Frees a program (NULL is allowed). */
void xir_program_free(xir_program *p);

/* Frees memory returned by xir (strings from xir_program_print, ...). */
void xir_free(void *ptr);

const char *xir_program_name(const xir_program *p);
int xir_program_num_dims(const xir_program *p);
const char *xir_program_dim_name(const xir_program *p, int dim);
/* Index of a dim by name, or -1. */
int xir_program_find_dim(const xir_program *p, const char *name);
int xir_program_num_params(const xir_program *p);
/* Fills *info for parameter i (0-based, declaration order). Returns XIR_ERR_INVALID_ARG when out
 * of range. */
xir_status xir_program_param(const xir_program *p, int i, xir_param_info *info);
/* Index of a parameter by name, or -1. */
int xir_program_find_param(const xir_program *p, const char *name);
/* Root axes: count, the variable name of axis k and the dim it ranges over. */
int xir_program_num_root(const xir_program *p);
const char *xir_program_root_name(const xir_program *p, int k);
int xir_program_root_dim(const xir_program *p, int k);

/* A copy of p with some buffers re-typed, so that one kernel text serves every dtype: `spec` is
 * a comma list of NAME=TYPE items, or one bare TYPE that applies to every floating-point buffer
 * (f32, bf16 or f16), inputs and outputs; later items win, so "bf16,w=f32" makes every float
 * buffer bf16 except w. TYPE is f32, bf16 or f16. Only floating-point buffers retype: naming an
 * i64 buffer or a scalar (scalars stay f32/i64), an unknown type or a malformed item is
 * XIR_ERR_INVALID_ARG, an unknown parameter name XIR_ERR_NOT_FOUND, each naming it; an empty spec
 * is a plain copy. The copy is verified again, keeps every name and source
 * position, and prints with the new types (so the kernel cache keys differ). *out is owned by the
 * caller (xir_program_free); NULL on failure. */
xir_status xir_program_retype(const xir_program *p, const char *spec, xir_program **out,
                              xir_diag *d);
/* The same for one buffer parameter: a copy with buffer `param` of type `elem`. */
xir_status xir_program_retype_param(const xir_program *p, int param, xir_elem elem,
                                    xir_program **out, xir_diag *d);

/* ---------------------------------------------------------------------------------------------
 * Binding dims */

/* Concrete values for every dim of a program, indexed like the program's dims. */
typedef struct xir_shape {
  int ndims;
  int64_t dims[XIR_MAX_DIMS];
} xir_shape;

/* Parses "R=129,C=768" into *shape. Every dim of the program must be given exactly once, each
 * value in [1, 2^31); the program's `require` clauses must hold. Errors name the dim. */
xir_status xir_shape_parse(const xir_program *p, const char *spec, xir_shape *shape, xir_diag *d);

/* Checks an already filled shape (range and `require` clauses). */
xir_status xir_shape_check(const xir_program *p, const xir_shape *shape, xir_diag *d);

/* Number of elements of buffer parameter `param` under `shape` (0 for scalars). */
size_t xir_param_numel(const xir_program *p, int param, const xir_shape *shape);

/* Formats a shape as "R=129,C=768" into buf; returns buf. */
char *xir_shape_format(const xir_program *p, const xir_shape *shape, char *buf, size_t cap);

/* Number of root programs (the product of the root axes' extents). */
uint64_t xir_shape_root_count(const xir_program *p, const xir_shape *shape);

/* ---------------------------------------------------------------------------------------------
 * Arguments (shared by the interpreter and native launches) */

/* One argument per parameter, in declaration order. Scalars use `scalar`; `use_default` takes
 * the declared default.
 *
 * Layout of a buffer: row-major and contiguous by default. A strided view is given either by
 * `row_stride` — the distance in elements between consecutive rows (the leading dimension: the
 * stride of dim rank−2; at least the row length, the extent of the last dim; 0 = contiguous),
 * the dims above it nested contiguously on it — or by `strides`, one per dim in elements (the
 * stride of dim rank−3 for a [B, HKV, K, D] view into a KV cache of capacity above K). Not
 * both. Native code (xir_kernel_pack_launch) needs a unit innermost stride and strides that
 * nest (stride[k] ≥ stride[k+1] · extent[k+1]: rows never overlap; the gaps between them are
 * never read or written); the interpreter takes any strides and reads/writes the same elements.
 * An interpreter output (`out64`) uses the same layout as its native `out`.
 *
 * `in` and `out` point at a buffer's elements, typed by the parameter's element type
 * (xir_param_info.elem): `float` for f32, `uint16_t` bit patterns for bf16 and f16 (see
 * xir_f32_to_bf16), `int64_t` for i64 (inputs only). The interpreter writes its outputs in fp64
 * (`out64`) whatever their element type: the unrounded oracle. */
typedef struct xir_arg {
  const void *in;       /* input buffers: float (f32), uint16_t (bf16, f16), int64_t (i64) */
  void *out;            /* output buffers (native code): float (f32), uint16_t (bf16, f16) */
  double *out64;        /* output buffers (interpreter: the fp64 oracle writes doubles here) */
  const int64_t *strides; /* NULL = from row_stride / contiguous */
  double scalar;
  int use_default;
  int64_t row_stride;     /* buffers of rank ≥ 2: 0 = contiguous */
} xir_arg;

/* The strides (in elements, one per dim) of buffer parameter `param` for argument `a` under
 * `shape`: a->strides, else from a->row_stride, else contiguous row-major. Errors
 * (XIR_ERR_INVALID_ARG): both given, a row stride on a rank-1 buffer or below the row length, a
 * negative stride. */
xir_status xir_arg_strides(const xir_program *p, const xir_shape *shape, int param,
                           const xir_arg *a, int64_t strides[XIR_MAX_RANK], xir_diag *d);

/* Aliasing (docs/xir.md, "Aliasing"): XIR_OK when output buffer `out` may share its memory with
 * input buffer `in` (y = x, in place) — each root program reads exactly the elements of `in`
 * that it writes to `out`, and reads each before writing it. Native launches refuse any other
 * overlap of an output with a buffer (xir_kernel_pack_launch). XIR_ERR_UNSUPPORTED (the message
 * says which rule fails: RoPE's partner load, a read after the store, ...) or
 * XIR_ERR_INVALID_ARG (not an output / input buffer pair). */
xir_status xir_program_alias_ok(const xir_program *p, int out, int in, xir_diag *d);

/* ---------------------------------------------------------------------------------------------
 * The fp64 reference interpreter (the oracle) */

/* Evaluates a verified program for every root program, in fp64, reading f32, bf16/f16 (their
 * stored values, decoded exactly) and i64 inputs and
 * writing fp64 outputs (xir_arg.out64 of every output buffer). Errors: out-of-range computed
 * indices (named with the source line), an element of an i64 input whose magnitude exceeds 2^53
 * (the interpreter holds integers as exact doubles), missing buffers. */
xir_status xir_interpret(const xir_program *p, const xir_shape *shape, const xir_arg *args,
                         xir_diag *d);

/* ---------------------------------------------------------------------------------------------
 * The builder: the C way to construct a program (the parser uses it too) */

typedef struct xir_builder xir_builder;
typedef int32_t xir_value; /* an SSA value of the program being built; negative = invalid */

/* One index of a load/store: either a whole axis (`:`) or a value (i64 scalar or tile). */
typedef struct xir_index {
  int is_slice;
  xir_value value;
} xir_index;
static inline xir_index xir_slice(void) { xir_index i = {1, -1}; return i; }
static inline xir_index xir_at(xir_value v) { xir_index i = {0, v}; return i; }

/* Creates a builder for a kernel named `name`. Errors are sticky: after the first failure every
 * call returns -1 / does nothing, and xir_builder_finish reports that first error. */
xir_status xir_builder_new(const char *name, xir_builder **out);
void xir_builder_free(xir_builder *b);

/* Sets the source position attached to the next nodes/declarations (used by the parser). */
void xir_builder_set_loc(xir_builder *b, const char *file, int line, int col);

/* Declarations. Return the new dim/param index, or -1. */
int xir_builder_dim(xir_builder *b, const char *name);
int xir_builder_buffer(xir_builder *b, const char *name, xir_elem elem, int rank,
                       const int *dims, int is_output);
int xir_builder_scalar(xir_builder *b, const char *name, xir_elem elem, int has_default,
                       double default_value);
/* Adds root axis `var` ranging over `dim`. Returns the root axis index or -1. */
int xir_builder_root(xir_builder *b, const char *var, int dim);
/* Adds a requirement on dims, checked when binding a shape: `value` must be an i64 scalar
 * expression built from dims and literals that evaluates to non-zero (a comparison). */
void xir_builder_require(xir_builder *b, xir_value cond);

/* Leaves. */
xir_value xir_builder_const_f32(xir_builder *b, float v);
xir_value xir_builder_const_i64(xir_builder *b, int64_t v);
xir_value xir_builder_dim_value(xir_builder *b, int dim);
xir_value xir_builder_param_value(xir_builder *b, int param);
xir_value xir_builder_root_value(xir_builder *b, int root_axis);
xir_value xir_builder_iota(xir_builder *b, int dim);

/* Elementwise ops (and TOF32): nargs must match the op table. */
xir_value xir_builder_op(xir_builder *b, xir_op op, int nargs, const xir_value *args);
/* reduce.sum / reduce.max / reduce.min of `v` along the tile axis over `dim` (-1: the only axis). */
xir_value xir_builder_reduce(xir_builder *b, xir_op op, xir_value v, int dim);
xir_value xir_builder_load(xir_builder *b, int buffer, int nidx, const xir_index *idx);
void xir_builder_store(xir_builder *b, int buffer, int nidx, const xir_index *idx,
                       xir_value value);
/* Gives a value a name (used by the printer; must be unique). */
void xir_builder_name(xir_builder *b, xir_value v, const char *name);

/* Verifies and returns the program (the builder is consumed either way). */
xir_status xir_builder_finish(xir_builder *b, xir_program **out, xir_diag *d);

/* ---------------------------------------------------------------------------------------------
 * Built-in kernels */

/* Number of built-in kernels, and the name / XIR text of kernel i. */
int xir_kernel_count(void);
const char *xir_kernel_name(int i);
const char *xir_kernel_text(int i);
/* A one-line description of kernel i. */
const char *xir_kernel_summary(int i);
/* Index of a built-in kernel by name, or -1. */
int xir_kernel_find(const char *name);
/* Parses built-in kernel `name` (XIR_ERR_NOT_FOUND names the known kernels). */
xir_status xir_kernel_load(const char *name, xir_program **out, xir_diag *d);

/* ---------------------------------------------------------------------------------------------
 * The installation */

/* The xir version ("0.1.0"). */
const char *xir_version(void);
/* 16 hex digits naming the exact sources this library was built from (a SHA-256 over every file
 * under src/ and include/, cmake/fingerprint.cmake). Two builds of one version from different
 * code differ here; the service model's cache file is keyed by it. */
const char *xir_source_fingerprint(void);
/* The cache directory (the service model, the kernel cache): $XIR_CACHE_DIR, else
 * $XDG_CACHE_HOME/xir, else $HOME/.cache/xir. */
xir_status xir_cache_dir(char *buf, size_t cap, xir_diag *d);

#ifdef __cplusplus
}
#endif
#endif

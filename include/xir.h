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

/* Element types. Buffers hold f32, or i64 for input buffers (positions, indices); scalars are f32
 * or i64; bool is the type of comparisons. f16/bf16 will take new values here. */
typedef enum xir_elem { XIR_ELEM_NONE = 0, XIR_F32, XIR_I64, XIR_BOOL } xir_elem;

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
  xir_elem elem;          /* XIR_F32 or XIR_I64 (i64 buffers are always inputs) */
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

/* One argument per parameter, in declaration order. Buffers are row-major with unit innermost
 * stride unless `strides` (in elements, one per dim) is given. Scalars use `scalar`;
 * `use_default` takes the declared default.
 *
 * `in` points at an input buffer's elements, typed by the parameter's element type
 * (xir_param_info.elem): `const float *` for an f32 buffer, `const int64_t *` for an i64 buffer.
 * Outputs are always f32. */
typedef struct xir_arg {
  const void *in;       /* input buffers: float* (f32) or int64_t* (i64), by the element type */
  float *out;           /* output buffers (native code) */
  double *out64;        /* output buffers (interpreter: the fp64 oracle writes doubles here) */
  const int64_t *strides;
  double scalar;
  int use_default;
} xir_arg;

/* ---------------------------------------------------------------------------------------------
 * The fp64 reference interpreter (the oracle) */

/* Evaluates a verified program for every root program, in fp64, reading f32 and i64 inputs and
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
/* The cache directory (the service model, the kernel cache): $XIR_CACHE_DIR, else
 * $XDG_CACHE_HOME/xir, else $HOME/.cache/xir. */
xir_status xir_cache_dir(char *buf, size_t cap, xir_diag *d);

#ifdef __cplusplus
}
#endif
#endif

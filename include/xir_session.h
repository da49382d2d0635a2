/* xir_session.h — the one-call API: a session holds a compiler, a runtime, the plan options and
 * a cache of planned + compiled kernels, so that running a kernel is one call:
 *
 *   xir_session *s;
 *   xir_session_create(NULL, &s, &d);                       // workers = the online CPUs
 *   xir_arg a[] = {{.in = x}, {.in = w}, {.out = y}};       // by parameter order; eps defaulted
 *   xir_session_run(s, "rmsnorm", "R=64,C=4096", a, 3, &d);  // plan + compile once, then launch
 *   xir_session_destroy(s);
 *
 * docs/api.md describes the sequence (this one and the step-by-step API underneath: load, shape,
 * plan, compile, pack, launch), ownership and lifetimes, the aliasing contract and the errors.
 *
 * The cache: a session interns programs by the SHA-256 of their canonical text (built-in kernels
 * by name), and keeps one prepared kernel per (program, shape): the plan (every ranked candidate
 * with its cost terms) and the compiled kernel of its choice. The first run of a (program, shape)
 * plans and compiles (the compiler's on-disk cache may answer the compile); later runs only pack
 * the arguments and launch.
 *
 * Threading: every function may be called from any thread, concurrently, on one session (except
 * xir_session_destroy, which must not overlap any other call on it). The caches are guarded by
 * a mutex that is never held while planning, compiling or launching; two threads missing the
 * same (program, shape) at once may both plan it, and the first to finish is kept. Launches that
 * need the pool are serialized by the runtime (each runs on all the session's workers, one after
 * the other; a launch whose plan uses one worker runs on the calling thread at once, concurrently
 * with anything). A session call made from inside a block function of a pool launch is refused
 * with XIR_ERR_BUSY (xir_runtime.h). */
#ifndef XIR_SESSION_H
#define XIR_SESSION_H

#include "xir.h"
#include "xir_compile.h"
#include "xir_plan.h"
#include "xir_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xir_session xir_session;
/* A planned and compiled kernel for one program and shape, owned by its session (valid until
 * xir_session_destroy). Immutable: may be used by several threads at once. */
typedef struct xir_prepared xir_prepared;

typedef struct xir_session_options {
  uint32_t workers;                     /* runtime workers incl. the caller; 0 = the online CPUs */
  const xir_compiler_options *compiler; /* NULL = the defaults (host width, on-disk cache on) */
  /* NULL = xir_plan_options_default(). Copied; its `workers` and `width` are replaced by the
   * session's (the runtime's workers, the compiler's width). Its policy and coefficients
   * pointers are borrowed and must outlive the session. */
  const xir_plan_options *plan;
} xir_session_options;

/* What a session has done (a snapshot; counters only grow). */
typedef struct xir_session_stats {
  uint64_t launches;  /* kernels launched */
  uint64_t hits;      /* prepares answered from the cache (nothing planned or compiled) */
  uint64_t misses;    /* prepares that planned and compiled */
  uint64_t plans;     /* xir_plan_make calls */
  uint64_t compiles;  /* xir_compile calls (the compiler's disk cache may have answered some) */
  uint64_t programs;  /* distinct programs held */
  uint64_t prepared;  /* prepared kernels held */
  uint32_t workers;   /* the runtime's pool size */
} xir_session_stats;

/* An argument given by parameter name (xir_session_run_named). */
typedef struct xir_named_arg {
  const char *name;
  xir_arg arg;
} xir_named_arg;

/* Creates a session (opts NULL = all defaults). The first session in a process may take about a
 * second when this machine has no calibrated service model yet (xir_plan_options_default).
 * Errors: those of xir_compiler_create and xir_runtime_create (e.g. workers >
 * XIR_RUNTIME_MAX_WORKERS: XIR_ERR_INVALID_ARG), XIR_ERR_NOMEM. *out is NULL on error. */
xir_status xir_session_create(const xir_session_options *opts, xir_session **out, xir_diag *d);

/* Frees the session: its runtime, compiler (and so every kernel), programs and prepared kernels.
 * NULL is a no-op. Must not overlap another call on the session. */
void xir_session_destroy(xir_session *s);

/* The runtime's pool size (0 for NULL). */
uint32_t xir_session_workers(const xir_session *s);

/* Fills *out with the counters (zeroes for a NULL session). */
void xir_session_get_stats(const xir_session *s, xir_session_stats *out);

/* The session's copy of built-in kernel `name` (parsed once). XIR_ERR_NOT_FOUND names the
 * built-in kernels. The program is owned by the session. */
xir_status xir_session_program(xir_session *s, const char *name, const xir_program **out,
                               xir_diag *d);

/* Parses XIR text into a program owned by the session; text that prints the same as a program
 * the session already holds gives that program. Errors: those of xir_program_parse (file:line:col
 * in d; `filename` may be NULL). */
xir_status xir_session_parse(xir_session *s, const char *text, size_t len, const char *filename,
                             const xir_program **out, xir_diag *d);

/* The session's copy of p with buffers retyped (xir_program_retype: spec "bf16", "x=bf16,y=f16",
 * "bf16,w=f32"; docs/xir.md), interned like xir_session_parse: the same spec on the same program
 * gives the same program. The caller keeps ownership of p. Errors: those of xir_program_retype
 * (an unknown name or type, an i64 buffer or a scalar named). */
xir_status xir_session_retype(xir_session *s, const xir_program *p, const char *spec,
                              const xir_program **out, xir_diag *d);

/* The prepared kernel of program p for shape (planned and compiled on the first request, then
 * taken from the cache). p may be any verified program: one that is not the session's is interned
 * first (its canonical text is printed and hashed; the caller keeps ownership of p and may free it
 * at once). Errors: a shape that does not bind p (xir_shape_check), and those of xir_plan_make and
 * xir_compile. */
xir_status xir_session_prepare(xir_session *s, const xir_program *p, const xir_shape *shape,
                               const xir_prepared **out, xir_diag *d);

/* Launches a prepared kernel of this session with args in parameter order (xir_arg, xir.h):
 * nargs is the parameter count, or fewer when every parameter left out is a scalar with a
 * default. Blocks until the launch is complete. Buffer sizes are the caller's promise (xir cannot
 * check raw pointers): each buffer holds xir_param_numel elements for the prepared shape.
 * Errors: XIR_ERR_INVALID_ARG (a wrong argument count, a NULL buffer, a prepared kernel of another
 * session), XIR_ERR_UNSUPPORTED (strides native code cannot take: a non-unit innermost stride,
 * overlapping rows; an in-place launch the kernel does not allow; see xir_kernel_pack_launch),
 * XIR_ERR_BUSY (a nested pool submission). Row strides (xir_arg.row_stride / strides) are
 * accepted as for xir_kernel_pack_launch. With the calibrated service model, a kernel whose plan
 * has both a pool and a calling-thread grain of its candidate within a factor of 4 in cost runs
 * each launch on the one that measures faster (the same code and bits; docs/planner.md, "The
 * service at launch time"). */
xir_status xir_session_launch(xir_session *s, const xir_prepared *k, const xir_arg *args,
                              int nargs, xir_diag *d);

/* One call: built-in kernel `kernel` for the shape "R=64,C=4096" (every dim, xir_shape_parse),
 * prepared (cached) and launched with args as in xir_session_launch. */
xir_status xir_session_run(xir_session *s, const char *kernel, const char *shape,
                           const xir_arg *args, int nargs, xir_diag *d);

/* The same for any program (see xir_session_prepare for how p is interned). */
xir_status xir_session_run_program(xir_session *s, const xir_program *p, const char *shape,
                                   const xir_arg *args, int nargs, xir_diag *d);

/* The same as xir_session_run with arguments by parameter name, in any order. Every buffer must
 * be given; a scalar left out takes its default (an error when it has none). Errors name the
 * unknown, repeated or missing parameter and list the kernel's parameters. */
xir_status xir_session_run_named(xir_session *s, const char *kernel, const char *shape,
                                 const xir_named_arg *args, int nargs, xir_diag *d);

/* Why this plan: the chosen candidate and grain, then every evaluated candidate × grain ranked
 * by total cost with its counts and each cost term (the analytic policy's terms, docs/planner.md),
 * as text in a new string (free with xir_free). Prepares (plans and compiles) like
 * xir_session_run. */
xir_status xir_session_explain(xir_session *s, const char *kernel, const char *shape,
                               char **text, xir_diag *d);

/* The same text for a prepared kernel. */
xir_status xir_prepared_explain(const xir_prepared *k, char **text, xir_diag *d);

/* A prepared kernel's parts (NULL / 0 for NULL): the session's program, the shape, the plan
 * (entries[0] is the choice), the compiled kernel, and the grain and worker count it launches
 * with. All owned by the session. */
const xir_program *xir_prepared_program(const xir_prepared *k);
const xir_shape *xir_prepared_shape(const xir_prepared *k);
const xir_plan *xir_prepared_plan(const xir_prepared *k);
const xir_kernel *xir_prepared_kernel(const xir_prepared *k);
uint32_t xir_prepared_grain(const xir_prepared *k);
uint32_t xir_prepared_workers(const xir_prepared *k);

#ifdef __cplusplus
}
#endif
#endif

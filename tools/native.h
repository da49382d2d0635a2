/* native.h — compiling and running native code for a CLI case (shared by run and suite). */
#ifndef XIR_TOOLS_NATIVE_H
#define XIR_TOOLS_NATIVE_H

#include <cjson/cJSON.h>

#include "check/check.h"
#include "xir_compile.h"
#include "xir_plan.h"

typedef struct native_opts {
  const char *cand;   /* a candidate name, or NULL for the default choice */
  int all;            /* run every legal candidate */
  uint32_t width;     /* 0 = host widest */
  uint32_t workers;   /* runtime workers incl. the caller */
  uint32_t grain;     /* blocks per task (0 = heuristic) */
  int json;
  const xir_plan_options *plan; /* when set and no candidate is named: the planner chooses the
                                   candidate and the grain (its options carry workers and W) */
  xir_compiler *cc;   /* borrowed, or NULL: a compiler for this call. Sharing one across calls
                         reuses compiled code across shapes (launch-time dims) */
} native_opts;

typedef struct native_result {
  int all_pass;
  char *text;         /* one line per candidate run (xir__free) */
  cJSON *json;        /* array of runs (owned by the caller) */
  double last_ms;     /* time of the last launch, ms (one launch, not a benchmark) */
} native_result;

/* The candidate used when none is asked for (until the planner chooses): the local mapping
 * ℓ = W, B = W when the body has an inner tile axis, else the whole-program mapping, B = W. */
xir_status native_default_candidate(const xir_program *p, const xir_shape *s, uint32_t W,
                                    xir_candidate *c, xir_diag *d);

/* Compiles and runs the requested candidate(s) on c's inputs, checking every output. */
xir_status run_native(const xir_program *p, const xir_shape *s, xir_case *c,
                      const native_opts *o, native_result *r, xir_diag *d);

#endif

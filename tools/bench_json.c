/* bench_json.c — the service model and cost coefficients as JSON, written by `xir bench` (into the
 * records' provenance) and `xir calibrate --json`, read back by `xir audit` to re-plan. One list
 * of fields each, so that the writer and the reader cannot drift apart. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* Reads field f of object o into c->f: a finite number >= 0 (a reduction step's ns_per_step may
 * be below 0: the planner bounds it, XIR_STEP_CREDIT_OPS). */
#define GET(f)                                                                     \
  {                                                                                \
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, #f);                      \
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) ||                         \
        (x->valuedouble < 0 && strncmp(#f, "ns_per_step", 11))) {                  \
      snprintf(why, cap, "field %s is missing or not a finite number >= 0", #f);   \
      return 1;                                                                    \
    }                                                                              \
    c->f = x->valuedouble;                                                         \
  }

/* A field that later versions added: 0 when an older record lacks it. */
#define GET_OPT(f)                                                                 \
  {                                                                                \
    if (cJSON_GetObjectItemCaseSensitive(o, #f)) GET(f)                            \
  }

#define CAL_FIELDS(X)                                                                       \
  X(ns_per_arith) X(ns_per_math) X(ns_per_byte) X(ns_per_block) X(ns_per_task) X(ns_activation) \
  X(mem_bytes[0]) X(mem_bytes[1]) X(mem_bytes[2]) X(mem_ns[0]) X(mem_ns[1]) X(mem_ns[2])
#define CAL_FIELDS_OPT(X) X(ns_per_step[0]) X(ns_per_step[1]) X(stream_bytes) X(ns_per_task_far) \
  X(ns_per_hw_math)

cJSON *bench_calibration_json(const xir_calibration *c) {
  cJSON *o = cJSON_CreateObject();
#define PUT(f) cJSON_AddNumberToObject(o, #f, c->f);
  CAL_FIELDS(PUT)
  CAL_FIELDS_OPT(PUT)
#undef PUT
  return o;
}

int bench_calibration_from_json(const cJSON *o, xir_calibration *c, char *why, size_t cap) {
  memset(c, 0, sizeof *c);
  CAL_FIELDS(GET)
  CAL_FIELDS_OPT(GET_OPT)
  return 0;
}

#define COEF_FIELDS(X)                                                                         \
  X(c[0]) X(c[1]) X(c[2]) X(c[3]) X(c[4]) X(c[5]) X(mem_bytes[0]) X(mem_bytes[1]) X(mem_bytes[2]) \
  X(mem_ns[0]) X(mem_ns[1]) X(mem_ns[2]) X(ns_per_math)
#define COEF_FIELDS_OPT(X) X(ns_per_step[0]) X(ns_per_step[1]) X(ns_per_task_far) X(ns_per_hw_math)

_Static_assert(XIR_TERM_COUNT == 6, "COEF_FIELDS lists every term");
/* every field of the coefficients is written: `xir audit` re-plans from them, and a field left
 * out (ns_per_task_far, session 39) made it re-plan differently from the run it checks */
_Static_assert(sizeof(xir_cost_coefficients) ==
                   sizeof(double) * (XIR_TERM_COUNT + 2 * XIR_MEM_LEVELS + 2 + XIR_CHAIN_KINDS + 1),
               "COEF_FIELDS and COEF_FIELDS_OPT list every field of xir_cost_coefficients");
/* and every figure of the calibration but the two probe times (not needed to re-plan) */
_Static_assert(sizeof(xir_calibration) ==
                   sizeof(double) * (7 + 2 * XIR_MEM_LEVELS + XIR_CHAIN_KINDS + 2 + 2),
               "CAL_FIELDS and CAL_FIELDS_OPT list every figure of xir_calibration");

cJSON *bench_coefficients_json(const xir_cost_coefficients *c) {
  cJSON *o = cJSON_CreateObject();
#define PUT(f) cJSON_AddNumberToObject(o, #f, c->f);
  COEF_FIELDS(PUT)
  COEF_FIELDS_OPT(PUT)
#undef PUT
  return o;
}

int bench_coefficients_from_json(const cJSON *o, xir_cost_coefficients *c, char *why, size_t cap) {
  memset(c, 0, sizeof *c);
  COEF_FIELDS(GET)
  COEF_FIELDS_OPT(GET_OPT)
  return 0;
}
#undef GET

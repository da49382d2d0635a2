/* calibrate.c — a service model measured on this machine: the analytic policy's coefficients in
 * nanoseconds instead of the report's uncalibrated priors.
 *
 *   activation  the spin round trip of waking one worker (xir_runtime_measure_wake)
 *   dispatch    per task on the pool path: (t(L=256, G=1, H=2) − activation) / 128 critical tasks
 *   arith/mem   two real kernels on the caller path — gelu_residual 64×256 (arithmetic-bound,
 *               in cache) gives ns per arithmetic unit; rmsnorm 1024×4096 (memory-bound) then
 *               gives ns per byte of what the arithmetic does not explain
 *   block       8 arithmetic units (not measured separately)
 * With these, an objective is an estimate of the launch's wall time in ns, and the planner's
 * choice between the caller and the pool follows the machine. Legality is untouched: this only
 * produces coefficients. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check/check.h"
#include "util/util.h"
#include "xir_compile.h"
#include "xir_plan.h"

static int empty_blocks(void *ctx, uint64_t b0, uint64_t b1) {
  (void)ctx;
  (void)b0;
  (void)b1;
  return 0;
}

/* Median ns of one launch (fn, ctx, L, G, H) over `reps` batches of `n` launches. */
static xir_status time_launch(xir_runtime *rt, xir_batch *b, xir_block_fn fn, void *ctx,
                              uint64_t L, uint32_t G, uint32_t H, int n, int reps, double *out,
                              xir_diag *d) {
  double t[64];
  xir_status st;
  if (reps > 64) reps = 64;
  for (int r = 0; r < reps; r++) {
    xir_batch_reset(b);
    for (int i = 0; i < n; i++)
      if ((st = xir_batch_record(b, fn, ctx, L, G, H, d))) return st;
    double t0 = xir__now_ns();
    if ((st = xir_runtime_submit(rt, b, d))) return st;
    t[r] = (xir__now_ns() - t0) / n;
  }
  *out = xir__median(t, (size_t)reps);
  return XIR_OK;
}

/* Times a built-in kernel on the caller path; returns ns per launch and its work. */
static xir_status time_kernel(xir_compiler *cc, xir_runtime *rt, xir_batch *b, const char *name,
                              const char *spec, uint32_t local, uint32_t Bmul, double *ns,
                              xir_execution_work *w, xir_diag *d) {
  xir_program *p = NULL;
  xir_shape s;
  xir_case c;
  memset(&c, 0, sizeof c);
  xir_status st = xir_kernel_load(name, &p, d);
  if (st) return st;
  if ((st = xir_shape_parse(p, spec, &s, d)) || (st = xir__case_init(&c, p, &s, 1, d))) goto out;
  uint32_t W = xir_compiler_width(cc);
  uint8_t perm[XIR_MAX_ROOT];
  for (int k = 0; k < xir_program_num_root(p); k++) perm[k] = (uint8_t)k;
  xir_candidate cand;
  if ((st = xir_candidate_make(p, &s, W, W * Bmul, local ? local : W, perm, &cand, d))) goto out;
  const xir_kernel *k;
  if ((st = xir_compile(cc, p, &s, &cand, &k, d))) goto out;
  uint64_t slots[XIR_MAX_PARAMS];
  if ((st = xir_kernel_pack_args(k, c.args, slots, d))) goto out;
  if ((st = xir_execution_work_make(p, &s, &cand, UINT32_MAX, 1, w, d))) goto out;
  /* about 2 ms per batch */
  double one;
  if ((st = time_launch(rt, b, (xir_block_fn)xir_kernel_entry(k), slots, cand.blocks, UINT32_MAX,
                        1, 1, 3, &one, d)))
    goto out;
  int n = one > 0 ? (int)(2e6 / one) : 1;
  if (n < 1) n = 1;
  if (n > 4096) n = 4096;
  st = time_launch(rt, b, (xir_block_fn)xir_kernel_entry(k), slots, cand.blocks, UINT32_MAX, 1, n,
                   9, ns, d);
out:
  xir__case_free(&c);
  xir_program_free(p);
  return st;
}

xir_status xir_calibrate(xir_compiler *cc, xir_runtime *rt, xir_calibration *out, xir_diag *d) {
  if (!out) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_calibrate: out is NULL");
  memset(out, 0, sizeof *out);
  if (!cc || !rt) return xir__err(d, XIR_ERR_INVALID_ARG, "calibration needs a compiler and a runtime");
  if (xir_runtime_workers(rt) < 2)
    return xir__err(d, XIR_ERR_INVALID_ARG, "calibration needs a runtime with at least 2 workers");
  xir_batch *b;
  xir_status st = xir_batch_create(rt, &b, d);
  if (st) return st;
  /* Warm the pool first (workers asleep after a long compile would answer slowly at first),
   * then keep the smallest of three medians: the figure is a cost of waking a spinning worker,
   * and interference only ever adds to it. */
  double warm;
  if ((st = time_launch(rt, b, empty_blocks, NULL, 2, 1, 2, 256, 8, &warm, d))) goto out;
  out->ns_activation = INFINITY;
  for (int rep = 0; rep < 3; rep++) {
    xir_wake_cost wc;
    if ((st = xir_runtime_measure_wake(rt, 401, &wc, d))) goto out;
    if (wc.spin_wake_ns < out->ns_activation) out->ns_activation = wc.spin_wake_ns;
  }
  double t_pool;
  if ((st = time_launch(rt, b, empty_blocks, NULL, 256, 1, 2, 64, 15, &t_pool, d))) goto out;
  out->ns_per_task = (t_pool - out->ns_activation) / 128.0;
  if (out->ns_per_task < 0) out->ns_per_task = 0;
  double ta, tm;
  xir_execution_work wa, wm;
  if ((st = time_kernel(cc, rt, b, "gelu_residual", "R=64,C=256", 1, 8, &ta, &wa, d)) ||
      (st = time_kernel(cc, rt, b, "rmsnorm", "R=1024,C=4096", 0, 1, &tm, &wm, d)))
    goto out;
  /* t = a·A + m·M (A, M: total arithmetic units and bytes). Solved triangularly, which is
   * stable where the full 2×2 solve was not (its determinant is small: both probes have both
   * kinds of work): the in-cache arithmetic probe gives a (its bytes are cheap), then the
   * memory-bound probe gives m from what a does not explain. */
  double A1 = wa.arith_per_packet * (double)wa.packets;
  double A2 = wm.arith_per_packet * (double)wm.packets, M2 = wm.memory_per_packet * (double)wm.packets;
  double a = A1 > 0 ? ta / A1 : 0;
  double m = M2 > 0 ? (tm - a * A2) / M2 : 0;
  if (!(m > 0)) m = 0;
  out->ns_per_arith = a;
  out->ns_per_byte = m;
  out->ns_per_block = 8 * a;
  out->probe_ns[0] = ta;
  out->probe_ns[1] = tm;
  if (!isfinite(out->ns_per_arith) || !isfinite(out->ns_per_byte) || !isfinite(out->ns_per_task) ||
      !isfinite(out->ns_activation))
    st = xir__err(d, XIR_ERR_COST, "calibration produced a non-finite figure");
out:
  xir_batch_destroy(b);
  return st;
}

void xir_cost_coefficients_from_calibration(const xir_calibration *cal, xir_cost_coefficients *c) {
  if (!c) return;
  if (!cal) {
    xir_cost_coefficients_default(c);
    return;
  }
  c->c[XIR_TERM_ARITH] = cal->ns_per_arith;
  c->c[XIR_TERM_MEMORY] = cal->ns_per_byte;
  c->c[XIR_TERM_BLOCK] = cal->ns_per_block;
  c->c[XIR_TERM_IMBALANCE] = 1;
  c->c[XIR_TERM_DISPATCH] = cal->ns_per_task;
  c->c[XIR_TERM_ACTIVATION] = cal->ns_activation;
}

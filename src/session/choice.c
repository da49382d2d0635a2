/* choice.c — the service choice at launch time (choice.h). */
#include "session/choice.h"

#include <math.h>
#include <string.h>

#include "util/util.h"

/* explorations: XIR__CHOICE_RUN launches in a row every PERIOD launches, or every FAR_PERIOD
 * when the other service measured more than 1.3x slower (exploring it then costs more and says
 * less); only launches the model puts below XIR__CHOICE_MAX_NS are chosen at launch time (for
 * longer ones a microsecond of activation does not decide) */
enum { XIR__CHOICE_PERIOD = 256, XIR__CHOICE_FAR_PERIOD = 2048, XIR__CHOICE_RUN = 8 };
#define XIR__CHOICE_MAX_NS 50000.0

/* The plan copies one candidate into each of its grains' entries: equal bytes, equal mapping. */
static int same_candidate(const xir_candidate *a, const xir_candidate *b) {
  return !memcmp(a, b, sizeof *a);
}

void xir__choice_init(xir__choice *c, const xir_plan *plan, int calibrated) {
  memset(c, 0, sizeof *c);
  atomic_init(&c->n, 0);
  atomic_init(&c->ns_bits[0], 0);
  atomic_init(&c->ns_bits[1], 0);
  if (!plan || !plan->count) return;
  const xir_plan_entry *e0 = &plan->entries[0];
  c->plan_grain = e0->work.grain;
  c->plan_service = e0->work.active >= 2 ? 0 : 1;
  if (!calibrated) return;
  double t[2] = {INFINITY, INFINITY};
  for (size_t i = 0; i < plan->count; i++) { /* ranked: the first of each kind is its best */
    const xir_plan_entry *e = &plan->entries[i];
    int k = e->work.active >= 2 ? 0 : 1;
    if (isinf(t[k]) && same_candidate(&e->cand, &e0->cand)) {
      t[k] = e->cost.total;
      c->grain[k] = e->work.grain;
    }
  }
  c->adaptive = isfinite(t[0]) && isfinite(t[1]) && t[0] < 4 * t[1] && t[1] < 4 * t[0] &&
                (t[0] < XIR__CHOICE_MAX_NS || t[1] < XIR__CHOICE_MAX_NS);
}

double xir__choice_average(const xir__choice *c, int service) {
  uint64_t b = atomic_load_explicit(&((xir__choice *)c)->ns_bits[service & 1], memory_order_relaxed);
  if (!b) return -1;
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

uint32_t xir__choice_next(xir__choice *c, int *service, int *timed) {
  *timed = 0;
  if (!c->adaptive) {
    *service = c->plan_service;
    return c->plan_grain;
  }
  uint64_t n = atomic_fetch_add_explicit(&c->n, 1, memory_order_relaxed);
  double p = xir__choice_average(c, 0), q = xir__choice_average(c, 1);
  int best = p >= 0 && q >= 0 ? (p <= q ? 0 : 1) : c->plan_service;
  /* Explorations are runs of XIR__CHOICE_RUN launches on the other service, timed in their
   * second half only: a service's first launches after a switch pay for moving the data
   * between the cores' caches, which its steady state does not. The same holds after a run. */
  uint64_t period = XIR__CHOICE_PERIOD, run = XIR__CHOICE_RUN;
  if (p > 0 && q > 0 && (p > 1.3 * q || q > 1.3 * p)) period = XIR__CHOICE_FAR_PERIOD;
  uint64_t ph = n % period;
  int explore = ph >= period - run;
  int s = explore ? !best : best;
  *service = s;
  *timed = explore ? ph >= period - run / 2 : ph >= run && ph % 4 == 0;
  return c->grain[s];
}

xir_status xir__choice_launch(xir__choice *c, xir_runtime *rt, const xir_kernel *k, xir_block_fn fn,
                              void *ctx, uint64_t L, uint32_t workers, xir_diag *d) {
  int service, timed;
  uint32_t g = xir__choice_next(c, &service, &timed);
  if (k) {
    uint64_t stride = xir_launch_task_stride(xir_runtime_workers(rt), L, g, workers);
    xir_status s = xir_kernel_set_task_stride(k, ctx, stride, d);
    if (s) return s;
  }
  double t0 = timed ? xir__now_ns() : 0;
  xir_status st = xir_runtime_launch(rt, fn, ctx, L, g, workers, NULL, d);
  if (timed && !st) xir__choice_note(c, service, xir__now_ns() - t0);
  return st;
}

void xir__choice_note(xir__choice *c, int service, double ns) {
  if (!(ns > 0) || !isfinite(ns)) return;
  double prev = xir__choice_average(c, service);
  /* interference only adds time: a faster sample is taken at once, a slower one moves the
   * estimate by 1/16 of the difference (at most 1/16 of the estimate), so a descheduled launch
   * does not decide, and a lasting change is followed within some tens of samples */
  double v = ns;
  if (prev > 0 && ns > prev) v = prev + (ns - prev < prev ? ns - prev : prev) / 16;
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  atomic_store_explicit(&c->ns_bits[service & 1], b, memory_order_relaxed);
}

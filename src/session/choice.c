/* choice.c — the service choice at launch time (choice.h). */
#include "session/choice.h"

#include <math.h>
#include <string.h>

#include "lower/pack.h"
#include "util/util.h"

/* Explorations: every period launches, a run of launches in a row on the other service, the
 * last quarter of them timed. Of the caller, XIR__CHOICE_RUN; of the pool at least
 * XIR__CHOICE_RUN and as many as take XIR__CHOICE_RUN_NS on the caller, up to XIR__CHOICE_RUN_MAX:
 * a pool that slept is slow for tens of µs after the wake (the 2026-12-05 Xeon VM, softmax_causal
 * 7x5120, per launch after 3000 on the caller: 19-29 µs, then seven of 2.8-2.9 µs, slower than
 * the caller's 2.6, one of 7-11 µs, then 2.0-2.5, its steady state), and runs of 8 timed in
 * their second half kept the choice on the caller at 1.2x the pool's time.
 * Period: XIR__CHOICE_PERIOD, or XIR__CHOICE_FAR_PERIOD when the other service measured more than
 * 1.3x slower (exploring it then costs more and says less), doubled (up to XIR__CHOICE_MAX_PERIOD)
 * while what the last run of that service cost over the same launches on the faster one (the
 * run measured whole, a sleeping pool's wake included) is more than 1/XIR__CHOICE_BUDGET of the
 * period's launches on the faster one.
 * Of the other launches one in XIR__CHOICE_TIME_EVERY is timed, one in
 * XIR__CHOICE_TIME_EVERY_SHORT when they take less than XIR__CHOICE_SHORT_NS (two clock reads
 * are some tens of ns on a virtual machine). Only launches the model puts below
 * XIR__CHOICE_MAX_NS are chosen at launch time (for longer ones a microsecond of activation does
 * not decide). */
enum {
  XIR__CHOICE_PERIOD = 256, /* > XIR__CHOICE_RUN_MAX: a run fits in every period */
  XIR__CHOICE_FAR_PERIOD = 2048,
  XIR__CHOICE_MAX_PERIOD = 1 << 16,
  XIR__CHOICE_BUDGET = 64,
  XIR__CHOICE_RUN = 8,
  XIR__CHOICE_RUN_MAX = 64,
  XIR__CHOICE_TIME_EVERY = 4,
  XIR__CHOICE_TIME_EVERY_SHORT = 16
};
#define XIR__CHOICE_SHORT_NS 1000.0
#define XIR__CHOICE_RUN_NS 64000.0
_Static_assert(XIR__CHOICE_RUN_MAX < XIR__CHOICE_PERIOD, "a run fits in a period");
/* powers of two: xir__choice_next, on every launch, takes the phase and the timing pick with
 * masks instead of two 64-bit divisions */
_Static_assert((XIR__CHOICE_PERIOD & (XIR__CHOICE_PERIOD - 1)) == 0 &&
                   (XIR__CHOICE_FAR_PERIOD & (XIR__CHOICE_FAR_PERIOD - 1)) == 0 &&
                   (XIR__CHOICE_MAX_PERIOD & (XIR__CHOICE_MAX_PERIOD - 1)) == 0 &&
                   (XIR__CHOICE_TIME_EVERY & (XIR__CHOICE_TIME_EVERY - 1)) == 0 &&
                   (XIR__CHOICE_TIME_EVERY_SHORT & (XIR__CHOICE_TIME_EVERY_SHORT - 1)) == 0,
               "the period and the timing intervals are powers of two");
#define XIR__CHOICE_MAX_NS 50000.0
/* The store choice: runs of 32 launches (regular stores after streaming ones reach their steady
 * state only after some launches, as the cache fills again: rmsnorm 4096x1024 on the EPYC VM,
 * per launch after 16 streaming ones, 800-1000 us falling to 450-650 over 10-16 launches, while
 * streaming after regular is at its 605 at once), the first of them after 96 launches (the
 * first 32 after a run are not timed either: the rule's arm is timed in the 64 between; a
 * benchmark's visit of a 0.5 ms kernel is some hundreds of launches) */
#define XIR__CHOICE_STORE_RUN 32
#define XIR__CHOICE_STORE_FIRST 128
_Static_assert(2 * XIR__CHOICE_STORE_RUN < XIR__CHOICE_STORE_FIRST &&
                   XIR__CHOICE_STORE_RUN < XIR__CHOICE_PERIOD &&
                   (XIR__CHOICE_STORE_FIRST & (XIR__CHOICE_STORE_FIRST - 1)) == 0,
               "the first period times both arms, a power of two");

/* The plan copies one candidate into each of its grains' entries: equal bytes, equal mapping. */
static int same_candidate(const xir_candidate *a, const xir_candidate *b) {
  return !memcmp(a, b, sizeof *a);
}

void xir__choice_init(xir__choice *c, const xir_plan *plan, int calibrated) {
  memset(c, 0, sizeof *c);
  atomic_init(&c->n, 0);
  atomic_init(&c->ns_bits[0], 0);
  atomic_init(&c->ns_bits[1], 0);
  atomic_init(&c->run_bits, 0);
  atomic_init(&c->run_acc_bits, 0);
  atomic_init(&c->run_n, 0);
  atomic_init(&c->run_acc_n, 0);
  atomic_init(&c->run_service, -1);
  atomic_init(&c->run_arm, -1);
  for (int a = 0; a < 2; a++) {
    atomic_init(&c->ring_n[a], 0);
    for (int i = 0; i < XIR__CHOICE_RING; i++) atomic_init(&c->ring[a][i], 0);
  }
  atomic_init(&c->run_len, XIR__CHOICE_RUN);
  atomic_init(&c->period, XIR__CHOICE_PERIOD);
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

static double load_ns(const _Atomic uint64_t *a) {
  uint64_t b = atomic_load_explicit((_Atomic uint64_t *)a, memory_order_relaxed);
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

static void store_ns(_Atomic uint64_t *a, double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  atomic_store_explicit(a, b, memory_order_relaxed);
}

double xir__choice_average(const xir__choice *c, int service) {
  double v = load_ns(&c->ns_bits[service & 1]);
  return v > 0 ? v : -1;
}

double xir__choice_run_cost(const xir__choice *c) {
  double v = load_ns(&c->run_bits);
  return v > 0 ? v : -1;
}

static uint64_t compute_run(const xir__choice *c) {
  if (c->fixed_run) return c->fixed_run;
  double p = xir__choice_average(c, 0), q = xir__choice_average(c, 1);
  /* exploring the caller (the pool the faster): 8, which keeps the pool's worker spinning (a run
   * longer than its spin window puts it to sleep, and the pool pays the wake when it resumes) */
  if (!(p > 0 && q > 0) || p <= q) return XIR__CHOICE_RUN;
  double n = ceil(XIR__CHOICE_RUN_NS / q);
  return n <= XIR__CHOICE_RUN ? XIR__CHOICE_RUN : n >= XIR__CHOICE_RUN_MAX ? XIR__CHOICE_RUN_MAX
                                                                          : (uint64_t)n;
}

static uint64_t compute_period(const xir__choice *c, uint64_t runlen) {
  double p = xir__choice_average(c, 0), q = xir__choice_average(c, 1);
  double len = (double)runlen;
  /* the first period until the first exploration has run whole (not cut short when its first
   * timed launch gives the other arm a time) */
  if (c->first_period &&
      atomic_load_explicit(&((xir__choice *)c)->run_service, memory_order_relaxed) < 0)
    return c->first_period;
  uint64_t period = XIR__CHOICE_PERIOD;
  if (p > 0 && q > 0 && (p > 1.3 * q || q > 1.3 * p)) period = XIR__CHOICE_FAR_PERIOD;
  double best = p > 0 && q > 0 ? fmin(p, q) : -1;
  double run = xir__choice_run_cost(c);
  double n = (double)atomic_load_explicit(&((xir__choice *)c)->run_n, memory_order_relaxed);
  /* the last run measured the service the next one explores (the slower one); after the faster
   * service changed, its cost says nothing about the next run */
  int other = p <= q ? 1 : 0;
  if (atomic_load_explicit(&((xir__choice *)c)->run_service, memory_order_relaxed) != other)
    run = -1;
  if (run < 0 || n < 1) { /* no whole run of that service measured yet */
    run = best > 0 ? len * fmax(p, q) : -1;
    n = len;
  }
  double extra = run - n * best; /* what the last exploration cost over not exploring */
  if (best > 0 && extra > 0)
    while (period < XIR__CHOICE_MAX_PERIOD && (double)period * best < XIR__CHOICE_BUDGET * extra)
      period *= 2;
  return period;
}

/* The run length and the period, computed when a measurement changes (not per launch:
 * xir__choice_next runs on every launch of sub-µs kernels). */
static void refresh(xir__choice *c) {
  uint64_t run = compute_run(c);
  atomic_store_explicit(&c->run_len, run, memory_order_relaxed);
  atomic_store_explicit(&c->period, compute_period(c, run), memory_order_relaxed);
}

uint64_t xir__choice_run(const xir__choice *c) {
  return atomic_load_explicit(&((xir__choice *)c)->run_len, memory_order_relaxed);
}

uint64_t xir__choice_period(const xir__choice *c) {
  return atomic_load_explicit(&((xir__choice *)c)->period, memory_order_relaxed);
}

uint32_t xir__choice_next(xir__choice *c, int *service, int *timed) {
  *timed = 0;
  if (!c->adaptive) {
    *service = c->plan_service;
    return c->plan_grain;
  }
  /* the launch count as a relaxed load and store, not a fetch-add: a locked add waits for the
   * store buffer to drain — the previous launch's output stores — on every launch (as the
   * session's counters did, session.c SHARDS). Launches of one kernel from several threads at
   * once may count one launch for two: the count only sets the exploration's phase, and a
   * phase that slips by a launch explores as well. */
  uint64_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
  atomic_store_explicit(&c->n, n + 1, memory_order_relaxed);
  double p = xir__choice_average(c, 0), q = xir__choice_average(c, 1);
  int best = p >= 0 && q >= 0 ? (p <= q ? 0 : 1) : c->plan_service;
  /* Explorations are runs on the other service, timed in their last quarter only: a service's
   * first launches after a switch pay for moving the data between the cores' caches and, on
   * the pool, for waking a worker and its core's climb back to speed, which its steady state
   * does not. The same holds after a run. Every launch of a run is timed for the run's whole
   * cost, which sets the period. */
  uint64_t period = xir__choice_period(c), run = xir__choice_run(c);
  if (run >= period) run = period / 4; /* a torn pair of loads */
  uint64_t ph = n & (period - 1); /* a power of two (compute_period) */
  int explore = ph >= period - run;
  int s = explore ? !best : best;
  if (c->fixed_run && explore) {
    /* the store choice: a run stays on the arm it started on, even when its first timed launch
     * makes that arm the faster (the other arm's launches right after it would measure the
     * switch, not the arm) */
    if (ph == period - run) atomic_store_explicit(&c->run_arm, s, memory_order_relaxed);
    int ra = atomic_load_explicit(&c->run_arm, memory_order_relaxed);
    if (ra >= 0) s = ra;
    if (ph == period - 1) atomic_store_explicit(&c->run_arm, -1, memory_order_relaxed);
  }
  *service = s;
  double b = best == 0 ? p : q;
  uint64_t every = b > 0 && b < XIR__CHOICE_SHORT_NS ? XIR__CHOICE_TIME_EVERY_SHORT
                                                      : XIR__CHOICE_TIME_EVERY;
  if (explore)
    *timed = XIR__CHOICE_TIMED_RUN | (ph >= period - run / 4 ? XIR__CHOICE_TIMED : 0) |
             (ph == period - run ? XIR__CHOICE_TIMED_RUN_START : 0) |
             (ph == period - 1 ? XIR__CHOICE_TIMED_RUN_END : 0);
  else
    *timed = ph >= run && (ph & (every - 1)) == 0 ? XIR__CHOICE_TIMED : 0;
  return c->grain[s];
}

void xir__choice_note_launch(xir__choice *c, int service, int timed, double ns) {
  if (!(ns > 0) || !isfinite(ns)) return;
  if (timed & XIR__CHOICE_TIMED) xir__choice_note(c, service, ns);
  if (timed & XIR__CHOICE_TIMED_RUN) {
    /* concurrent launches of one kernel may mix two runs' sums: an estimate either way */
    int start = (timed & XIR__CHOICE_TIMED_RUN_START) != 0;
    double acc = start ? 0 : load_ns(&c->run_acc_bits);
    acc = (acc > 0 ? acc : 0) + ns;
    uint64_t cnt =
        (start ? 0 : atomic_load_explicit(&c->run_acc_n, memory_order_relaxed)) + 1;
    if (timed & XIR__CHOICE_TIMED_RUN_END) {
      store_ns(&c->run_bits, acc);
      atomic_store_explicit(&c->run_n, cnt, memory_order_relaxed);
      atomic_store_explicit(&c->run_service, service, memory_order_relaxed);
      refresh(c);
      acc = 0;
      cnt = 0;
    }
    atomic_store_explicit(&c->run_acc_n, cnt, memory_order_relaxed);
    store_ns(&c->run_acc_bits, acc);
  }
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
  if (timed && !st) xir__choice_note_launch(c, service, timed, xir__now_ns() - t0);
  return st;
}

int xir__choice_one_task(const xir__choice *c, uint64_t L, uint32_t workers, uint32_t pool) {
  xir_launch_shape ls;
  return !c->adaptive &&
         (L <= 1 || (!xir_launch_resolve(pool, L, c->plan_grain, workers, &ls, NULL) &&
                     ls.caller_path));
}

void xir__store_choice_init(xir__store_choice *sc, const xir_kernel *k,
                            const xir__choice *service) {
  if ((service && service->adaptive) || !xir__kernel_stream_choice(k, sc->bits)) {
    sc->bits[0] = sc->bits[1] = 0;
    xir__choice_init(&sc->arms, NULL, 0); /* not adaptive */
    return;
  }
  xir__choice_init_store(&sc->arms);
}

void xir__choice_init_store(xir__choice *c) {
  xir__choice_init(c, NULL, 0);
  c->adaptive = 1;
  c->plan_service = 0;
  c->first_period = XIR__CHOICE_STORE_FIRST;
  c->fixed_run = XIR__CHOICE_STORE_RUN;
  atomic_store_explicit(&c->run_len, XIR__CHOICE_STORE_RUN, memory_order_relaxed);
  atomic_store_explicit(&c->period, XIR__CHOICE_STORE_FIRST, memory_order_relaxed);
}

xir_status xir__choice_pack_launch(xir__choice *c, xir__store_choice *sc, xir_runtime *rt,
                                   const xir_kernel *k, const xir_arg *args, int nargs,
                                   int nparams, void *slots, uint32_t workers, int one_task,
                                   xir_diag *d) {
  int dense = xir__kernel_pack_dense(k, args, nargs, slots);
  if (!dense) {
    /* the general path: strides, an in-place alias, or the error that names the argument */
    xir_arg full[XIR_MAX_PARAMS];
    if (nargs < nparams) {
      memcpy(full, args, (size_t)nargs * sizeof *args);
      for (int i = nargs; i < nparams; i++) full[i] = (xir_arg){.use_default = 1};
      args = full;
    }
    xir_status st = xir_kernel_pack_args(k, args, slots, d);
    if (st) return st;
  }
  xir_block_fn fn = (xir_block_fn)xir_kernel_entry(k);
  uint64_t L = xir_kernel_blocks(k);
  int arm = 0, timed = 0;
  if (sc && sc->arms.adaptive && dense) {
    /* the stores of this launch (the general path keeps the rule's: its footprint may differ) */
    xir__choice_next(&sc->arms, &arm, &timed);
    xir__kernel_set_stream_bits(k, slots, sc->bits[arm & 1]);
  }
  double t0 = timed ? xir__now_ns() : 0;
  xir_status st = one_task ? xir_runtime_launch(rt, fn, slots, L, c->plan_grain, workers, NULL, d)
                           : xir__choice_launch(c, rt, k, fn, slots, L, workers, d);
  if (timed && !st) xir__choice_note_launch(&sc->arms, arm, timed, xir__now_ns() - t0);
  return st;
}

void xir__choice_note(xir__choice *c, int service, double ns) {
  if (!(ns > 0) || !isfinite(ns)) return;
  double prev = xir__choice_average(c, service);
  /* interference only adds time: a faster sample is taken at once, a slower one moves the
   * estimate by 1/16 of the difference (at most 1/16 of the estimate), so a descheduled launch
   * does not decide, and a lasting change is followed within some tens of samples */
  double v = ns;
  if (c->fixed_run) {
    /* the store choice: the median of the arm's last XIR__CHOICE_RING samples. Its arms differ
     * in spread, not only in level — regular stores near the cache took 450-1000 us a launch
     * where streaming ones took 600-620 (rmsnorm 4096x1024) — and the damped minimum above
     * favoured the wider one: it estimated regular stores at 559 us while they ran 640 on
     * average, streaming at 617 */
    int a = service & 1;
    uint32_t k = atomic_fetch_add_explicit(&c->ring_n[a], 1, memory_order_relaxed);
    store_ns(&c->ring[a][k % XIR__CHOICE_RING], ns);
    uint32_t m = k + 1 < XIR__CHOICE_RING ? k + 1 : XIR__CHOICE_RING;
    double x[XIR__CHOICE_RING];
    for (uint32_t i = 0; i < m; i++) x[i] = load_ns(&c->ring[a][i]);
    v = xir__median(x, m);
    if (!(v > 0)) v = ns; /* a torn read of a slot being written */
  } else if (prev > 0 && ns > prev) {
    v = prev + (ns - prev < prev ? ns - prev : prev) / 16;
  }
  store_ns(&c->ns_bits[service & 1], v);
  refresh(c);
}

/* runtime.c — the persistent worker pool (see include/xir_runtime.h and docs/runtime.md).
 *
 * Dispatch protocol of one pool launch (epoch e, h active workers, under the submit lock):
 *   1. the caller (worker 0) writes the launch descriptor and resets the h home-queue counters;
 *   2. it opens the gate:  gate = e << 32 | OPEN | 0 joined   (release);
 *   3. it stores gen[w] = e for w = h−1 down to 1 (seq_cst; reverse order, so that a worker that
 *      sees its own generation also sees those of its children in the wake tree);
 *   4. it wakes its sleeping children 1 and 2; every worker that joins wakes its own sleeping
 *      children 2w+1 and 2w+2 (a binary wake tree: the caller makes at most two system calls);
 *   5. a worker that sees a new generation JOINS by incrementing the gate count, but only while
 *      the gate still shows epoch e and OPEN; only joined workers read the descriptor;
 *   6. everyone drains its home queue (fetch_add on its counter), then steals from the other h−1
 *      queues (fetch_add on theirs): each task index is handed out once;
 *   7. after its steal pass finds every queue empty, the caller CLOSES the gate (clears OPEN) and
 *      waits until the joined count is 0. A late worker can no longer join, so the caller never
 *      waits for a worker that was not scheduled in time — its tasks were stolen.
 * Each joined worker writes its counters into its own cache line, then leaves (fetch_sub, seq_cst);
 * the caller's acquire of count 0 makes those counters, and every block's writes, visible.
 *
 * Sleeping uses one futex word per worker (its generation) and one for the caller; a "sleeping"
 * flag beside each word lets the waker skip the system call when nobody sleeps (Dekker pattern,
 * both sides seq_cst). */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rt_internal.h"
#include "util/util.h"

#define CACHE_LINE 64
#define GATE_OPEN ((uint64_t)1 << 31)
#define GATE_COUNT ((uint64_t)0x7fffffff)

/* One worker's state: three cache lines, each written mostly by one side. */
typedef struct rt_worker {
  /* control: gen written by the dispatcher, sleeping by the worker */
  _Alignas(CACHE_LINE) _Atomic uint32_t gen;
  _Atomic uint32_t sleeping;
  /* home queue: the next index into this worker's round-robin share (owner and thieves) */
  _Alignas(CACHE_LINE) _Atomic uint64_t next;
  /* counters of the last launch this worker joined, written only by it while joined; and
   * joined, the epoch it last joined (written at the join, read by thieves: run_tasks) */
  _Alignas(CACHE_LINE) uint32_t epoch;
  _Atomic uint32_t joined;
  int fail_code;
  uint64_t tasks, steals, fail_task;
  /* cold */
  _Alignas(CACHE_LINE) pthread_t thread;
  struct xir_runtime *rt;
  uint32_t id;
  int started;
} rt_worker;

struct xir_runtime {
  /* read-mostly configuration */
  _Alignas(CACHE_LINE) uint32_t pool;
  _Atomic uint32_t policy;
  _Atomic uint64_t spin_ns;
  _Atomic int stop;
  void *raw; /* the unaligned allocation holding this struct */
  rt_worker *w;
  pthread_mutex_t lock; /* serializes pool launches */

  /* launch descriptor: written by the caller while no worker is joined, read by joined workers */
  _Alignas(CACHE_LINE) xir_block_fn fn;
  void *ctx;
  uint64_t blocks, grain, tasks;
  uint32_t active;
  uint32_t epoch; /* only touched by the lock holder */

  /* completion: the gate, and the caller's futex word */
  _Alignas(CACHE_LINE) _Atomic uint64_t gate;
  _Atomic uint32_t caller_seq;
  _Atomic uint32_t caller_sleeping;
};

/* The runtime whose pool launch this thread is part of (a worker thread: always its runtime), or
 * NULL. A pool submission is refused (XIR_ERR_BUSY) while it is set: see xir__rt_run. */
static _Thread_local const xir_runtime *tl_inside;

/* ---- small helpers ------------------------------------------------------------------------- */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t expected) {
  /* Returns on wake, on a changed value (EAGAIN) or on a signal (EINTR); callers re-check. */
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr, int n) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

uint64_t xir_launch_task_stride(uint32_t pool_workers, uint64_t blocks, uint32_t grain,
                                uint32_t workers) {
  if (grain == UINT32_MAX || (grain != 0 && grain >= blocks)) return 0; /* one task */
  xir_launch_shape ls;
  if (xir_launch_resolve(pool_workers, blocks, grain, workers, &ls, NULL) || ls.active < 2)
    return 0;
  return (uint64_t)ls.active * ls.grain;
}

uint64_t xir_launch_home_share(uint64_t tasks, uint32_t active, uint32_t worker) {
  if (active == 0 || worker >= active || worker >= tasks) return 0;
  return (tasks - worker - 1) / active + 1;
}

static xir_status check_policy(xir_wait_policy p, uint32_t spin_us, xir_diag *d) {
  if (p != XIR_WAIT_SPIN_THEN_SLEEP && p != XIR_WAIT_SPIN && p != XIR_WAIT_SLEEP)
    return xir__err(d, XIR_ERR_INVALID_ARG, "runtime: unknown wait policy %d", (int)p);
  if (spin_us > XIR_RUNTIME_MAX_SPIN_US)
    return xir__err(d, XIR_ERR_INVALID_ARG, "runtime: spin window %u us exceeds the maximum %u us",
                    spin_us, XIR_RUNTIME_MAX_SPIN_US);
  return XIR_OK;
}

/* ---- shape resolution ----------------------------------------------------------------------- */

static void resolve(uint32_t pool, uint64_t L, uint32_t G, uint32_t H, xir_launch_shape *s) {
  memset(s, 0, sizeof *s);
  s->blocks = L;
  s->workers = (H == 0 || H > pool) ? pool : H;
  if (L == 0) return;
  uint64_t g;
  if (G == 0) {
    uint64_t target = 4u * (uint64_t)s->workers; /* about four tasks per requested worker */
    g = (L - 1) / target + 1;
    s->grain_heuristic = 1;
  } else if (G == UINT32_MAX || G >= L) {
    g = L;
  } else {
    g = G;
  }
  s->grain = g;
  s->tasks = g == L ? 1 : (L - 1) / g + 1; /* one task: no division on the caller's path */
  s->active = s->tasks < s->workers ? (uint32_t)s->tasks : s->workers;
  s->caller_path = s->active == 1;
}

xir_status xir_launch_resolve(uint32_t pool_workers, uint64_t blocks, uint32_t grain,
                              uint32_t workers, xir_launch_shape *out, xir_diag *d) {
  if (!out) return xir__err(d, XIR_ERR_INVALID_ARG, "launch resolve: out is NULL");
  if (pool_workers == 0 || pool_workers > XIR_RUNTIME_MAX_WORKERS)
    return xir__err(d, XIR_ERR_INVALID_ARG, "launch resolve: pool of %u workers (must be 1..%u)",
                    pool_workers, XIR_RUNTIME_MAX_WORKERS);
  resolve(pool_workers, blocks, grain, workers, out);
  return XIR_OK;
}

void xir__rt_resolve(const xir_runtime *rt, xir_block_fn fn, void *ctx, uint64_t blocks,
                     uint32_t grain, uint32_t workers, rt_rec *r) {
  r->fn = fn;
  r->ctx = ctx;
  resolve(rt->pool, blocks, grain, workers, &r->shape);
}

/* ---- waiting ------------------------------------------------------------------------------- */

/* Spins according to the policy until done(arg) or the window closes. Returns 1 when done. */
typedef int (*done_fn)(const void *arg);

/* Whether the wait policy lets a thread spin at all (not XIR_WAIT_SLEEP, nor a window of 0). */
static int may_spin(xir_runtime *rt) {
  uint32_t pol = atomic_load_explicit(&rt->policy, memory_order_relaxed);
  return pol == XIR_WAIT_SPIN ||
         (pol == XIR_WAIT_SPIN_THEN_SLEEP && atomic_load_explicit(&rt->spin_ns, memory_order_relaxed) > 0);
}

static int spin_phase(xir_runtime *rt, done_fn done, const void *arg) {
  if (!may_spin(rt)) return 0;
  uint32_t pol = atomic_load_explicit(&rt->policy, memory_order_relaxed);
  uint64_t window = atomic_load_explicit(&rt->spin_ns, memory_order_relaxed);
  uint64_t t0 = pol == XIR_WAIT_SPIN_THEN_SLEEP ? now_ns() : 0;
  for (uint32_t i = 1;; i++) {
    if (done(arg)) return 1;
    cpu_relax();
    if ((i & 15) == 0) {
      /* re-read the policy so that xir_runtime_set_wait reaches spinning workers */
      pol = atomic_load_explicit(&rt->policy, memory_order_relaxed);
      if (pol == XIR_WAIT_SLEEP) return 0;
      if (pol == XIR_WAIT_SPIN_THEN_SLEEP) {
        window = atomic_load_explicit(&rt->spin_ns, memory_order_relaxed);
        uint64_t t = now_ns();
        if (!t0) t0 = t;
        if (t - t0 >= window) return 0;
      } else {
        t0 = 0;
      }
    }
  }
}

typedef struct gen_wait {
  rt_worker *w;
  uint32_t seen;
} gen_wait;

static int gen_changed(const void *arg) {
  const gen_wait *g = arg;
  return atomic_load_explicit(&g->w->gen, memory_order_acquire) != g->seen;
}

/* A worker waits until its generation differs from `seen`; returns the new generation. */
static uint32_t worker_wait(xir_runtime *rt, rt_worker *w, uint32_t seen) {
  gen_wait gw = {w, seen};
  if (!spin_phase(rt, gen_changed, &gw)) {
    for (;;) {
      atomic_store_explicit(&w->sleeping, 1, memory_order_seq_cst);
      if (atomic_load_explicit(&w->gen, memory_order_seq_cst) != seen) {
        atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
        break;
      }
      futex_wait(&w->gen, seen);
      atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
      if (atomic_load_explicit(&w->gen, memory_order_acquire) != seen) break;
    }
  }
  return atomic_load_explicit(&w->gen, memory_order_acquire);
}

static int gate_empty(const void *arg) {
  const xir_runtime *rt = arg;
  return (atomic_load_explicit(&((xir_runtime *)rt)->gate, memory_order_acquire) & GATE_COUNT) == 0;
}

/* The caller waits until every joined worker has left the (closed) gate. */
static void caller_wait(xir_runtime *rt) {
  if (spin_phase(rt, gate_empty, rt)) return;
  for (;;) {
    uint32_t s = atomic_load_explicit(&rt->caller_seq, memory_order_relaxed);
    atomic_store_explicit(&rt->caller_sleeping, 1, memory_order_seq_cst);
    if ((atomic_load_explicit(&rt->gate, memory_order_seq_cst) & GATE_COUNT) == 0) break;
    futex_wait(&rt->caller_seq, s);
  }
  atomic_store_explicit(&rt->caller_sleeping, 0, memory_order_relaxed);
  (void)atomic_load_explicit(&rt->gate, memory_order_acquire);
}

static void wake_worker(xir_runtime *rt, uint32_t c) {
  if (atomic_load_explicit(&rt->w[c].sleeping, memory_order_seq_cst)) futex_wake(&rt->w[c].gen, 1);
}

static void wake_children(xir_runtime *rt, uint32_t p, uint32_t h) {
  uint32_t c = 2 * p + 1;
  if (c < h) wake_worker(rt, c);
  if (c + 1 < h) wake_worker(rt, c + 1);
}

/* ---- running tasks ------------------------------------------------------------------------- */

static void run_tasks(xir_runtime *rt, uint32_t id, uint32_t epoch) {
  const xir_block_fn fn = rt->fn;
  void *const ctx = rt->ctx;
  const uint64_t L = rt->blocks, G = rt->grain, C = rt->tasks;
  const uint32_t h = rt->active;
  uint64_t tasks = 0, steals = 0, fail_task = UINT64_MAX;
  int fail_code = 0;

  for (uint32_t i = 0; i < h; i++) {
    uint32_t v = id + i;
    if (v >= h) v -= h;
    _Atomic uint64_t *q = &rt->w[v].next;
    uint64_t n = xir_launch_home_share(C, h, v);
    if (i > 0 && atomic_load_explicit(q, memory_order_relaxed) >= n) continue;
    /* A thief leaves a joined owner its last task: the owner drains its own queue before it
     * leaves, and a task that moves to another core takes its rows out of this core's cache
     * (the same rows move back and forth between launches that repeat on the same buffers).
     * A worker that has not joined (asleep, descheduled) loses every task, as before. */
    int owner_in = i > 0 && (v == 0 || atomic_load_explicit(&rt->w[v].joined, memory_order_acquire) == epoch);
    for (;;) {
      if (owner_in && atomic_load_explicit(q, memory_order_relaxed) + 2 > n) break;
      uint64_t k = atomic_fetch_add_explicit(q, 1, memory_order_relaxed);
      if (k >= n) break;
      uint64_t c = v + k * h;
      uint64_t b = c * G;
      uint64_t e = L - b > G ? b + G : L;
      int r = fn(ctx, b, e);
      if (r != 0 && c < fail_task) {
        fail_task = c;
        fail_code = r;
      }
      tasks++;
      if (i > 0) steals++;
    }
  }
  rt_worker *me = &rt->w[id];
  me->epoch = epoch;
  me->tasks = tasks;
  me->steals = steals;
  me->fail_task = fail_task;
  me->fail_code = fail_code;
}

static void *worker_main(void *arg) {
  rt_worker *w = arg;
  xir_runtime *rt = w->rt;
  tl_inside = rt;
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = worker_wait(rt, w, seen);
    seen = g;
    if (atomic_load_explicit(&rt->stop, memory_order_acquire)) break;
    /* join epoch g, if it is still open */
    uint64_t gate = atomic_load_explicit(&rt->gate, memory_order_acquire);
    int joined = 0;
    while ((uint32_t)(gate >> 32) == g && (gate & GATE_OPEN)) {
      if (atomic_compare_exchange_weak_explicit(&rt->gate, &gate, gate + 1, memory_order_acq_rel,
                                                memory_order_acquire)) {
        joined = 1;
        break;
      }
    }
    if (!joined) continue;
    atomic_store_explicit(&w->joined, g, memory_order_release);
    wake_children(rt, w->id, rt->active);
    run_tasks(rt, w->id, g);
    uint64_t old = atomic_fetch_sub_explicit(&rt->gate, 1, memory_order_seq_cst);
    if ((old & GATE_COUNT) == 1 && !(old & GATE_OPEN) &&
        atomic_load_explicit(&rt->caller_sleeping, memory_order_seq_cst)) {
      atomic_fetch_add_explicit(&rt->caller_seq, 1, memory_order_seq_cst);
      futex_wake(&rt->caller_seq, 1);
    }
    /* While the launch is still open (the caller runs its last tasks), stay awake: the spin
     * window counts from the launch's end, not from this worker's, so that a launch whose
     * caller finishes more than a window after this worker does not find it asleep next time
     * (a futex wake costs the caller 16-27 us on the 2026-12-05 Xeon VM, and the worker 35-40 us
     * more before it joins). Only where the policy spins at all. */
    if ((old & GATE_OPEN) && may_spin(rt))
      for (uint64_t gt = atomic_load_explicit(&rt->gate, memory_order_acquire);
           gt >> 32 == g && (gt & GATE_OPEN) && !atomic_load_explicit(&rt->stop, memory_order_acquire);
           gt = atomic_load_explicit(&rt->gate, memory_order_acquire))
        cpu_relax();
  }
  return NULL;
}

/* A pool launch (h ≥ 2); the caller holds the lock. */
static void pool_launch(xir_runtime *rt, const rt_rec *r, rt_res *o, uint64_t *tasks_w,
                        uint64_t *steals_w) {
  const uint32_t h = r->shape.active;
  if (++rt->epoch == 0) rt->epoch = 1; /* 0 is every worker's initial generation */
  const uint32_t e = rt->epoch;
  rt->fn = r->fn;
  rt->ctx = r->ctx;
  rt->blocks = r->shape.blocks;
  rt->grain = r->shape.grain;
  rt->tasks = r->shape.tasks;
  rt->active = h;
  for (uint32_t w = 0; w < h; w++) atomic_store_explicit(&rt->w[w].next, 0, memory_order_relaxed);
  atomic_store_explicit(&rt->gate, ((uint64_t)e << 32) | GATE_OPEN, memory_order_release);
  for (uint32_t w = h - 1; w >= 1; w--) atomic_store_explicit(&rt->w[w].gen, e, memory_order_seq_cst);
  wake_children(rt, 0, h);

  run_tasks(rt, 0, e);

  uint64_t old = atomic_fetch_and_explicit(&rt->gate, ~GATE_OPEN, memory_order_seq_cst);
  if (old & GATE_COUNT) caller_wait(rt);

  /* every joined worker has left: their counters are visible */
  o->calls = r->shape.tasks;
  o->steals = 0;
  o->fail_task = UINT64_MAX;
  o->status = 0;
  for (uint32_t w = 0; w < h; w++) {
    const rt_worker *x = &rt->w[w];
    uint64_t t = 0, s = 0;
    if (x->epoch == e) {
      t = x->tasks;
      s = x->steals;
      if (x->fail_code != 0 && x->fail_task < o->fail_task) {
        o->fail_task = x->fail_task;
        o->status = x->fail_code;
      }
    }
    o->steals += s;
    if (tasks_w) tasks_w[w] = t;
    if (steals_w) steals_w[w] = s;
  }
  if (o->status != 0) {
    uint64_t b = o->fail_task * r->shape.grain;
    o->fail_begin = b;
    o->fail_end = r->shape.blocks - b > r->shape.grain ? b + r->shape.grain : r->shape.blocks;
  }
}

xir_status xir__rt_run(xir_runtime *rt, rt_session *s, const rt_rec *r, rt_res *o,
                       uint64_t *tasks_w, uint64_t *steals_w, xir_diag *d) {
  const xir_launch_shape *sh = &r->shape;
  o->ran = 1;
  o->status = 0;
  o->fail_task = UINT64_MAX;
  o->fail_begin = o->fail_end = 0;
  o->steals = 0;
  if (sh->active <= 1) {
    /* L = 0 (no-op) or the caller path: no pool involvement at all */
    o->calls = 0;
    if (sh->active == 1) {
      int rc = r->fn(r->ctx, 0, sh->blocks);
      o->calls = 1;
      if (rc != 0) {
        o->status = rc;
        o->fail_task = 0;
        o->fail_end = sh->blocks;
      }
    }
    if (tasks_w) {
      memset(tasks_w, 0, rt->pool * sizeof *tasks_w);
      tasks_w[0] = sh->tasks;
    }
    if (steals_w) memset(steals_w, 0, rt->pool * sizeof *steals_w);
    return XIR_OK;
  }
  if (!s->locked) {
    /* A thread that is part of a pool launch (its caller or one of its workers) holds up that
     * launch until it returns. If it waited here for another pool, that pool's launch could
     * itself be waiting on ours (A -> B -> A): a deadlock. So no pool submission nests inside a
     * pool launch, of the same runtime or of another; caller-path launches (h = 1) take no lock
     * and nest freely. One thread-local read; nothing on the dispatch path. */
    if (tl_inside == rt)
      return xir__err(d, XIR_ERR_BUSY,
                      "runtime: nested submission from inside a block function of a pool launch "
                      "of the same runtime (it would deadlock); only caller-path launches (h = 1) "
                      "may be nested");
    if (tl_inside)
      return xir__err(d, XIR_ERR_BUSY,
                      "runtime: nested submission from inside a block function of a pool launch "
                      "of another runtime (runtimes launching on each other would deadlock); only "
                      "caller-path launches (h = 1) may be nested");
    pthread_mutex_lock(&rt->lock);
    s->locked = 1;
    s->prev_inside = tl_inside;
    tl_inside = rt;
  }
  pool_launch(rt, r, o, tasks_w, steals_w);
  if (tasks_w && rt->pool > sh->active)
    memset(tasks_w + sh->active, 0, (rt->pool - sh->active) * sizeof *tasks_w);
  if (steals_w && rt->pool > sh->active)
    memset(steals_w + sh->active, 0, (rt->pool - sh->active) * sizeof *steals_w);
  return XIR_OK;
}

void xir__rt_end(xir_runtime *rt, rt_session *s) {
  if (!s->locked) return;
  tl_inside = s->prev_inside;
  s->locked = 0;
  pthread_mutex_unlock(&rt->lock);
}

void xir__rt_fill_stats(const rt_rec *r, const rt_res *o, uint32_t pool, const uint64_t *tasks_w,
                        const uint64_t *steals_w, xir_launch_stats *out) {
  out->shape = r->shape;
  out->pool_workers = pool;
  out->ran = o->ran;
  out->status = o->status;
  out->fail_task = o->fail_task;
  out->fail_begin = o->fail_begin;
  out->fail_end = o->fail_end;
  out->calls = o->calls;
  out->steals = o->steals;
  for (uint32_t w = 0; w < pool; w++) {
    out->tasks_per_worker[w] = tasks_w ? tasks_w[w] : 0;
    out->steals_per_worker[w] = steals_w ? steals_w[w] : 0;
  }
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

void xir_runtime_options_default(xir_runtime_options *o) {
  if (!o) return;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > (long)XIR_RUNTIME_MAX_WORKERS) n = XIR_RUNTIME_MAX_WORKERS;
  o->workers = (uint32_t)n;
  o->wait = XIR_WAIT_SPIN_THEN_SLEEP;
  o->spin_us = 50;
}

static void stop_threads(xir_runtime *rt) {
  atomic_store_explicit(&rt->stop, 1, memory_order_seq_cst);
  for (uint32_t i = 1; i < rt->pool; i++) {
    if (!rt->w[i].started) continue;
    atomic_fetch_add_explicit(&rt->w[i].gen, 1, memory_order_seq_cst);
    futex_wake(&rt->w[i].gen, INT_MAX);
  }
  for (uint32_t i = 1; i < rt->pool; i++)
    if (rt->w[i].started) pthread_join(rt->w[i].thread, NULL);
}

static void free_runtime(xir_runtime *rt) {
  pthread_mutex_destroy(&rt->lock);
  xir__free(rt->raw);
}

xir_status xir_runtime_create(const xir_runtime_options *opts, xir_runtime **out, xir_diag *d) {
  if (!out) return xir__err(d, XIR_ERR_INVALID_ARG, "runtime create: out is NULL");
  *out = NULL;
  xir_runtime_options o;
  if (opts) o = *opts;
  else xir_runtime_options_default(&o);
  if (o.workers == 0 || o.workers > XIR_RUNTIME_MAX_WORKERS)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "runtime create: pool of %u workers (must be 1..%u, the caller included)",
                    o.workers, XIR_RUNTIME_MAX_WORKERS);
  xir_status st = check_policy(o.wait, o.spin_us, d);
  if (st != XIR_OK) return st;

  /* one allocation: the runtime and its workers, aligned to a cache line */
  size_t rsz = (sizeof(xir_runtime) + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE;
  size_t total = CACHE_LINE + rsz + (size_t)o.workers * sizeof(rt_worker);
  void *raw = xir__malloc(total);
  if (!raw) return xir__err(d, XIR_ERR_NOMEM, "runtime create: out of memory (%zu bytes)", total);
  memset(raw, 0, total);
  uintptr_t base = ((uintptr_t)raw + CACHE_LINE - 1) & ~(uintptr_t)(CACHE_LINE - 1);
  xir_runtime *rt = (xir_runtime *)base;
  rt->raw = raw;
  rt->pool = o.workers;
  rt->w = (rt_worker *)(base + rsz);
  atomic_init(&rt->policy, (uint32_t)o.wait);
  atomic_init(&rt->spin_ns, (uint64_t)o.spin_us * 1000u);
  atomic_init(&rt->stop, 0);
  atomic_init(&rt->gate, 0);
  atomic_init(&rt->caller_seq, 0);
  atomic_init(&rt->caller_sleeping, 0);
  if (pthread_mutex_init(&rt->lock, NULL) != 0) {
    xir__free(raw);
    return xir__err(d, XIR_ERR_RUNTIME, "runtime create: cannot initialize the submit lock");
  }
  for (uint32_t i = 0; i < o.workers; i++) {
    rt_worker *w = &rt->w[i];
    atomic_init(&w->gen, 0);
    atomic_init(&w->sleeping, 0);
    atomic_init(&w->next, 0);
    w->rt = rt;
    w->id = i;
    w->fail_task = UINT64_MAX;
  }
  for (uint32_t i = 1; i < o.workers; i++) {
    int rc = pthread_create(&rt->w[i].thread, NULL, worker_main, &rt->w[i]);
    if (rc != 0) {
      stop_threads(rt);
      free_runtime(rt);
      return xir__err(d, XIR_ERR_RUNTIME, "runtime create: cannot start pool thread %u of %u: %s",
                      i, o.workers - 1, strerror(rc));
    }
    rt->w[i].started = 1;
    char name[16];
    snprintf(name, sizeof name, "xir-w%u", i);
    pthread_setname_np(rt->w[i].thread, name);
  }
  *out = rt;
  return XIR_OK;
}

void xir_runtime_destroy(xir_runtime *rt) {
  if (!rt) return;
  stop_threads(rt);
  free_runtime(rt);
}

uint32_t xir_runtime_workers(const xir_runtime *rt) { return rt ? rt->pool : 0; }

xir_status xir_runtime_set_wait(xir_runtime *rt, xir_wait_policy policy, uint32_t spin_us,
                                xir_diag *d) {
  if (!rt) return xir__err(d, XIR_ERR_INVALID_ARG, "runtime set wait: runtime is NULL");
  xir_status st = check_policy(policy, spin_us, d);
  if (st != XIR_OK) return st;
  atomic_store_explicit(&rt->spin_ns, (uint64_t)spin_us * 1000u, memory_order_relaxed);
  atomic_store_explicit(&rt->policy, (uint32_t)policy, memory_order_relaxed);
  return XIR_OK;
}

void xir_runtime_get_wait(const xir_runtime *rt, xir_wait_policy *policy, uint32_t *spin_us) {
  if (!rt) return;
  xir_runtime *m = (xir_runtime *)rt;
  if (policy) *policy = (xir_wait_policy)atomic_load_explicit(&m->policy, memory_order_relaxed);
  if (spin_us)
    *spin_us = (uint32_t)(atomic_load_explicit(&m->spin_ns, memory_order_relaxed) / 1000u);
}

/* ---- one-launch convenience ---------------------------------------------------------------- */

xir_status xir_runtime_launch(xir_runtime *rt, xir_block_fn fn, void *ctx, uint64_t blocks,
                              uint32_t grain, uint32_t workers, xir_launch_stats *stats,
                              xir_diag *d) {
  if (!rt) return xir__err(d, XIR_ERR_INVALID_ARG, "runtime launch: runtime is NULL");
  if (!fn) return xir__err(d, XIR_ERR_INVALID_ARG, "runtime launch: block function is NULL");
  if (!stats && (blocks <= 1 || grain == UINT32_MAX || (grain != 0 && grain >= blocks) ||
                 workers == 1 || rt->pool == 1)) {
    /* one task (resolve's caller path, which these launches always take): the block function
     * on the calling thread, without the launch record a pool launch fills (a launch of ten
     * nanoseconds paid almost as much again for it: rmsnorm 1x64 18.5 -> 12 ns a launch) */
    int rc = blocks ? fn(ctx, 0, blocks) : 0;
    if (rc != 0)
      return xir__err(d, XIR_ERR_RUNTIME,
                      "launch 0 of 1: block function returned %d on blocks [0, %llu) (task 0)", rc,
                      (unsigned long long)blocks);
    return XIR_OK;
  }
  rt_rec r;
  rt_res o;
  rt_session s = RT_SESSION_INIT;
  xir__rt_resolve(rt, fn, ctx, blocks, grain, workers, &r);
  uint64_t *tw = stats ? stats->tasks_per_worker : NULL;
  uint64_t *sw = stats ? stats->steals_per_worker : NULL;
  xir_status st = xir__rt_run(rt, &s, &r, &o, tw, sw, d);
  xir__rt_end(rt, &s);
  if (st != XIR_OK) return st;
  if (stats) xir__rt_fill_stats(&r, &o, rt->pool, tw, sw, stats);
  if (o.status != 0)
    return xir__err(d, XIR_ERR_RUNTIME,
                    "launch 0 of 1: block function returned %d on blocks [%llu, %llu) (task %llu)",
                    o.status, (unsigned long long)o.fail_begin, (unsigned long long)o.fail_end,
                    (unsigned long long)o.fail_task);
  return XIR_OK;
}

/* ---- wake-cost measurement ----------------------------------------------------------------- */

static int empty_fn(void *ctx, uint64_t b, uint64_t e) {
  (void)ctx; (void)b; (void)e;
  return 0;
}

/* Both tasks of a 2-task launch wait until the other one has started: the round trip therefore
 * includes worker 1 actually waking up and joining (an empty launch would not: the caller would
 * steal the sleeping worker's task and return after the wake-up system call). */
typedef struct rendezvous {
  _Atomic uint32_t started;
} rendezvous;

static int rendezvous_fn(void *ctx, uint64_t b, uint64_t e) {
  (void)b; (void)e;
  rendezvous *r = ctx;
  atomic_fetch_add_explicit(&r->started, 1, memory_order_acq_rel);
  while (atomic_load_explicit(&r->started, memory_order_acquire) < 2) cpu_relax();
  return 0;
}

/* Waits (up to ~1 s) until every pool thread sleeps, or only worker `only` when only != 0. */
static void wait_asleep(xir_runtime *rt, uint32_t only) {
  for (int tries = 0; tries < 20000; tries++) {
    int all = 1;
    for (uint32_t i = only ? only : 1; i < (only ? only + 1 : rt->pool); i++)
      if (!atomic_load_explicit(&rt->w[i].sleeping, memory_order_seq_cst)) all = 0;
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
    /* the flag is raised just before futex_wait: the extra pause lets the thread enter the kernel */
    if (all) return;
  }
}

xir_status xir_runtime_measure_wake(xir_runtime *rt, uint32_t samples, xir_wake_cost *out,
                                    xir_diag *d) {
  if (!rt || !out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "measure wake: runtime or out is NULL");
  if (rt->pool < 2)
    return xir__err(d, XIR_ERR_UNSUPPORTED,
                    "measure wake: the pool has a single worker (the caller); nothing to wake");
  if (samples == 0) samples = 201;
  if (samples > 1000000)
    return xir__err(d, XIR_ERR_INVALID_ARG, "measure wake: %u samples (at most 1000000)", samples);
  double *v = xir__malloc(samples * sizeof *v);
  if (!v) return xir__err(d, XIR_ERR_NOMEM, "measure wake: out of memory");

  rt_session s = RT_SESSION_INIT;
  rt_rec caller, two;
  rt_res o;
  rendezvous rv;
  atomic_init(&rv.started, 0);
  xir__rt_resolve(rt, empty_fn, NULL, 1, 0, 1, &caller);
  xir__rt_resolve(rt, rendezvous_fn, &rv, 2, 1, 2, &two);
  /* take the pool for the whole measurement (an empty pool launch) */
  rt_rec warm;
  xir__rt_resolve(rt, empty_fn, NULL, 2, 1, 2, &warm);
  xir_status st = xir__rt_run(rt, &s, &warm, &o, NULL, NULL, d);
  if (st != XIR_OK) {
    xir__free(v);
    return st;
  }
  uint32_t pol0 = atomic_load_explicit(&rt->policy, memory_order_relaxed);
  uint64_t spin0 = atomic_load_explicit(&rt->spin_ns, memory_order_relaxed);
  memset(out, 0, sizeof *out);
  out->samples = samples;

  for (uint32_t i = 0; i < samples; i++) {
    uint64_t t0 = now_ns();
    xir__rt_run(rt, &s, &caller, &o, NULL, NULL, NULL);
    v[i] = now_ns() - t0;
  }
  out->caller_ns = xir__median(v, samples);

  /* spinning: put every pool thread to sleep first, so that only worker 1 spins afterwards */
  atomic_store_explicit(&rt->policy, XIR_WAIT_SLEEP, memory_order_relaxed);
  wait_asleep(rt, 0);
  atomic_store_explicit(&rt->policy, XIR_WAIT_SPIN, memory_order_relaxed);
  for (uint32_t i = 0; i < 16; i++) {
    atomic_store_explicit(&rv.started, 0, memory_order_relaxed);
    xir__rt_run(rt, &s, &two, &o, NULL, NULL, NULL);
  }
  for (uint32_t i = 0; i < samples; i++) {
    atomic_store_explicit(&rv.started, 0, memory_order_relaxed);
    uint64_t t0 = now_ns();
    xir__rt_run(rt, &s, &two, &o, NULL, NULL, NULL);
    v[i] = now_ns() - t0;
  }
  out->spin_roundtrip_ns = xir__median(v, samples);

  atomic_store_explicit(&rt->policy, XIR_WAIT_SLEEP, memory_order_relaxed);
  for (uint32_t i = 0; i < samples; i++) {
    wait_asleep(rt, 1);
    atomic_store_explicit(&rv.started, 0, memory_order_relaxed);
    uint64_t t0 = now_ns();
    xir__rt_run(rt, &s, &two, &o, NULL, NULL, NULL);
    v[i] = now_ns() - t0;
  }
  out->sleep_roundtrip_ns = xir__median(v, samples);

  atomic_store_explicit(&rt->spin_ns, spin0, memory_order_relaxed);
  atomic_store_explicit(&rt->policy, pol0, memory_order_relaxed);
  xir__rt_end(rt, &s);
  xir__free(v);
  out->spin_wake_ns = out->spin_roundtrip_ns > out->caller_ns ? out->spin_roundtrip_ns - out->caller_ns : 0;
  out->sleep_wake_ns =
      out->sleep_roundtrip_ns > out->caller_ns ? out->sleep_roundtrip_ns - out->caller_ns : 0;
  return XIR_OK;
}

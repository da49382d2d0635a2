/* xir_runtime.h — the CPU runtime: a persistent worker pool that runs launches of block ranges.
 *
 * Model (see docs/runtime.md for the full description):
 *
 *  - A runtime owns a pool of P workers. THE CALLING THREAD IS WORKER 0: a runtime created with
 *    P workers starts P − 1 pool threads (workers 1..P−1), and the thread that submits work runs
 *    tasks as worker 0 until the launch is complete. H workers therefore means "the caller and
 *    H − 1 pool threads".
 *  - A block function runs a consecutive range of blocks [block_begin, block_end) and returns 0 on
 *    success, anything else on failure. Native JIT kernels have exactly this shape.
 *  - A launch of L blocks with grain G (blocks per task) and H requested workers becomes
 *        G' = the grain used (below),  C = ceil(L / G') tasks,  h = min(C, H') active workers,
 *    where H' = H, except H = 0 or H > P gives H' = P. Task c covers blocks
 *    [c·G', min((c+1)·G', L)).
 *      * G = 0           : the runtime heuristic  G' = max(1, ceil(L / (4·H')))  — about four tasks
 *                          per requested worker, so that stealing can absorb a slow or late worker
 *                          (C ≤ 4·H'; C = L when L ≤ 4·H').
 *      * G = UINT32_MAX  : one task for the whole launch, G' = L (C = 1, so h = 1).
 *      * 1 ≤ G ≤ L       : G' = G (an explicit grain always wins over the heuristic).
 *      * G > L           : clamped, G' = L (C = 1).
 *      * L = 0           : a no-op (C = 0, h = 0, the function is not called).
 *  - Caller execution: when h = 1 the runtime calls fn(ctx, 0, L) exactly ONCE on the calling thread
 *    with no pool involvement (no lock, no atomic on shared pool state, no wake-up). Even then the
 *    launch reports C = ceil(L/G') logical tasks, all counted on worker 0, and calls = 1.
 *  - Otherwise task c has home worker c mod h (round-robin) and idle workers steal from the other
 *    queues; every task runs exactly once, and every block exactly once.
 *
 * Threading: every function here may be called from any thread. Submissions to one runtime from
 * several threads at once are SERIALIZED internally (a submission that needs the pool waits for the
 * one in progress); they are never refused and never mixed. Caller-path launches (h = 1) take no
 * lock and run concurrently with anything. A submission that needs the pool, made from inside a
 * block function that is itself running in a pool launch of ANY runtime (the same one, or
 * another), is refused with XIR_ERR_BUSY and the message "nested submission ...": on the same
 * runtime it would deadlock at once, and across runtimes a block on A waiting for B while a block
 * on B waits for A would deadlock both. Caller-path launches (h = 1, e.g. workers = 1) run
 * entirely on the calling thread and may be nested anywhere.
 * xir_runtime_destroy must not overlap any other call on the same runtime. */
#ifndef XIR_RUNTIME_H
#define XIR_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "xir_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest pool a runtime accepts (worker 0 included). Larger requests are refused. */
#define XIR_RUNTIME_MAX_WORKERS 256u
/* The longest spin window accepted, in microseconds (10 s). */
#define XIR_RUNTIME_MAX_SPIN_US 10000000u

/* Runs blocks [block_begin, block_end) of a launch; 0 = success, anything else = failure.
 * Called concurrently from several threads with disjoint ranges. */
typedef int (*xir_block_fn)(void *ctx, uint64_t block_begin, uint64_t block_end);

/* How an idle worker waits for work, and how the caller waits for the workers of a launch. */
typedef enum xir_wait_policy {
  XIR_WAIT_SPIN_THEN_SLEEP = 0, /* spin for spin_us microseconds, then sleep on a futex */
  XIR_WAIT_SPIN = 1,            /* spin only (never sleeps; burns a core per idle worker) */
  XIR_WAIT_SLEEP = 2            /* sleep at once (every wake-up is a system call) */
} xir_wait_policy;

/* Start from xir_runtime_options_default() and change what you need: a zero-initialized struct
 * (e.g. `{.workers = 2}`) has spin_us = 0, i.e. workers that sleep as soon as a launch ends, and
 * every pool launch then pays a futex wake-up (rmsnorm 37x1234 on 2 workers, launches back to
 * back, 2026-12-03: 17–21 µs a launch with spin_us = 0, 6.5–9.9 µs with the default 50). */
typedef struct xir_runtime_options {
  uint32_t workers;     /* P, the pool size INCLUDING the calling thread: 1..XIR_RUNTIME_MAX_WORKERS */
  xir_wait_policy wait; /* xir_runtime_options_default: XIR_WAIT_SPIN_THEN_SLEEP */
  uint32_t spin_us;     /* spin window for XIR_WAIT_SPIN_THEN_SLEEP, 0..XIR_RUNTIME_MAX_SPIN_US
                           (0 = sleep at once); xir_runtime_options_default: 50 */
} xir_runtime_options;

typedef struct xir_runtime xir_runtime;
typedef struct xir_batch xir_batch;

/* The resolved shape of a launch (see the model above). */
typedef struct xir_launch_shape {
  uint64_t blocks;      /* L */
  uint64_t grain;       /* G' actually used (L when one task; 0 when L = 0) */
  uint64_t tasks;       /* C = ceil(L / G') (0 when L = 0) */
  uint32_t workers;     /* H' (requested, after 0 → P and clamping to P) */
  uint32_t active;      /* h = min(C, H') */
  int grain_heuristic;  /* 1 when G = 0 was resolved by the heuristic */
  int caller_path;      /* 1 when h = 1: one call on the calling thread */
} xir_launch_shape;

/* What one launch did, readable after its batch (or xir_runtime_launch) returned. */
typedef struct xir_launch_stats {
  xir_launch_shape shape;
  uint32_t pool_workers; /* P: the number of valid entries in the per-worker arrays */
  int ran;               /* 1 when the launch ran; 0 when it was skipped after an earlier failure */
  int status;            /* 0, or the non-zero code returned by the failing task with the lowest
                            index (deterministic even when several tasks fail) */
  uint64_t fail_task;    /* that task's index (0 on the caller path); UINT64_MAX when none failed */
  uint64_t fail_begin, fail_end; /* its block range */
  uint64_t calls;        /* block-function calls made: 1 on the caller path, C otherwise, 0 if L = 0 */
  uint64_t steals;       /* tasks run by a worker other than their home worker (sum) */
  /* Tasks run by each worker (the caller is worker 0; a caller-path launch counts its C logical
   * tasks on worker 0), and how many of those were stolen from another worker's home queue. Home
   * tasks run by worker w = tasks_per_worker[w] − steals_per_worker[w] ≤ xir_launch_home_share(). */
  uint64_t tasks_per_worker[XIR_RUNTIME_MAX_WORKERS];
  uint64_t steals_per_worker[XIR_RUNTIME_MAX_WORKERS];
} xir_launch_stats;

/* The outcome of a submitted batch. */
typedef struct xir_batch_result {
  size_t launches;      /* launches recorded */
  size_t completed;     /* launches that ran (all of them, or up to and including the failing one) */
  int failed;           /* 1 when a block function returned non-zero */
  size_t failed_launch; /* index of the failing launch in the batch */
  int code;             /* its code (see xir_launch_stats.status) */
  uint64_t failed_task, fail_begin, fail_end; /* see xir_launch_stats */
} xir_batch_result;

/* The measured cost of waking an idle worker, in nanoseconds (medians). */
typedef struct xir_wake_cost {
  uint32_t samples;         /* samples per median */
  double caller_ns;         /* empty launch on the caller path (h = 1): the baseline */
  double spin_roundtrip_ns; /* 2-task rendezvous launch (L = 2, G = 1, H = 2), worker 1 spinning */
  double sleep_roundtrip_ns;/* the same with worker 1 asleep on its futex */
  double spin_wake_ns;      /* spin_roundtrip_ns − caller_ns (≥ 0) */
  double sleep_wake_ns;     /* sleep_roundtrip_ns − caller_ns (≥ 0) */
} xir_wake_cost;

/* ---- runtime ------------------------------------------------------------------------------ */

/* Fills o with the defaults: workers = the number of online CPUs (clamped to
 * 1..XIR_RUNTIME_MAX_WORKERS), XIR_WAIT_SPIN_THEN_SLEEP, spin_us = 50. */
void xir_runtime_options_default(xir_runtime_options *o);

/* Creates a runtime and starts its P − 1 pool threads (opts NULL = the defaults).
 * XIR_ERR_INVALID_ARG: out NULL, workers 0 or > XIR_RUNTIME_MAX_WORKERS, an unknown policy,
 * spin_us > XIR_RUNTIME_MAX_SPIN_US. XIR_ERR_NOMEM, or XIR_ERR_RUNTIME when a thread cannot start
 * (nothing leaks; *out is NULL on any error). */
xir_status xir_runtime_create(const xir_runtime_options *opts, xir_runtime **out, xir_diag *d);

/* Stops and joins every pool thread, then frees the runtime. NULL is a no-op. Must not overlap
 * another call on this runtime (batches created on it must be destroyed separately). */
void xir_runtime_destroy(xir_runtime *rt);

/* P, the pool size including worker 0 (the caller). 0 for NULL. */
uint32_t xir_runtime_workers(const xir_runtime *rt);

/* Changes the wait policy; it takes effect the next time a worker starts waiting (spinning workers
 * notice within about a microsecond). Same argument checks as xir_runtime_create. */
xir_status xir_runtime_set_wait(xir_runtime *rt, xir_wait_policy policy, uint32_t spin_us,
                                xir_diag *d);

/* Reads the current wait policy (either out-pointer may be NULL). */
void xir_runtime_get_wait(const xir_runtime *rt, xir_wait_policy *policy, uint32_t *spin_us);

/* Resolves a launch shape exactly as a runtime of pool_workers workers would (pure; used by the
 * cost model). XIR_ERR_INVALID_ARG when pool_workers is 0 or > XIR_RUNTIME_MAX_WORKERS. */
xir_status xir_launch_resolve(uint32_t pool_workers, uint64_t blocks, uint32_t grain,
                              uint32_t workers, xir_launch_shape *out, xir_diag *d);

/* The blocks from a task's first block to the first block of the next task its home worker runs:
 * h·G' of the launch xir_launch_resolve gives for these arguments, 0 when h < 2 (one call runs the
 * whole range) or the arguments are bad. What xir_kernel_set_task_stride wants (xir_compile.h). */
uint64_t xir_launch_task_stride(uint32_t pool_workers, uint64_t blocks, uint32_t grain,
                                uint32_t workers);

/* Worker w's home share: the number of tasks c < C with c mod h = w, i.e. ceil((C − w) / h) for
 * w < min(C, h), else 0. Worker 0's share is the critical task count ceil(C / h). */
uint64_t xir_launch_home_share(uint64_t tasks, uint32_t active, uint32_t worker);

/* One launch as a one-launch batch, submitted and waited for. stats may be NULL. No allocation.
 * XIR_ERR_INVALID_ARG for rt or fn NULL; XIR_ERR_BUSY for a nested pool submission (see top);
 * XIR_ERR_RUNTIME when the block function failed (stats and the message say where). */
xir_status xir_runtime_launch(xir_runtime *rt, xir_block_fn fn, void *ctx, uint64_t blocks,
                              uint32_t grain, uint32_t workers, xir_launch_stats *stats,
                              xir_diag *d);

/* Measures the current cost of waking an idle worker: medians over `samples` repetitions
 * (0 = 201, at most 1000000) of an empty caller-path launch, and of a 2-task launch (L = 2, G = 1,
 * H = 2) whose two tasks wait for each other to start (a rendezvous: worker 1 must really wake and
 * join, the caller cannot steal its task), with worker 1 spinning, then asleep. The wait policy is switched temporarily (to spin, then to
 * sleep) and restored. Holds the runtime for the whole measurement (other submitters wait); call it
 * on an otherwise idle runtime. XIR_ERR_UNSUPPORTED when the pool has a single worker. */
xir_status xir_runtime_measure_wake(xir_runtime *rt, uint32_t samples, xir_wake_cost *out,
                                    xir_diag *d);

/* ---- command batches ---------------------------------------------------------------------- */

/* Creates an empty batch bound to rt (it may be submitted only to rt). */
xir_status xir_batch_create(xir_runtime *rt, xir_batch **out, xir_diag *d);

/* Frees a batch. NULL is a no-op. */
void xir_batch_destroy(xir_batch *b);

/* Forgets the recorded launches and results, keeping the capacity (re-recording the same number
 * of launches allocates nothing). */
void xir_batch_reset(xir_batch *b);

/* Appends a launch (fn, ctx, L, G, H), resolved as described at the top. May allocate (the
 * batch grows geometrically). XIR_ERR_INVALID_ARG for b or fn NULL; XIR_ERR_BUSY while the batch
 * is being submitted; XIR_ERR_NOMEM. */
xir_status xir_batch_record(xir_batch *b, xir_block_fn fn, void *ctx, uint64_t blocks,
                            uint32_t grain, uint32_t workers, xir_diag *d);

/* Number of launches recorded. */
size_t xir_batch_count(const xir_batch *b);

/* Runs every launch of b in order, on rt, and waits: launch k+1 starts only after launch k has
 * completed entirely (all its writes are visible to launch k+1). The caller works as worker 0.
 * On failure (a block function returned non-zero) the failing launch still runs all of its tasks
 * (each exactly once), the LATER launches of the batch are SKIPPED (stats.ran = 0), and the call
 * returns XIR_ERR_RUNTIME with "launch k of n: block function returned X on blocks [b, e) (task c)";
 * xir_batch_get_result tells the same. No allocation. A batch may be submitted again (it re-runs
 * every launch). XIR_ERR_INVALID_ARG: NULL, or a batch of another runtime; XIR_ERR_BUSY: the batch
 * is being submitted by another thread, or a nested pool submission (see top). */
xir_status xir_runtime_submit(xir_runtime *rt, xir_batch *b, xir_diag *d);

/* The outcome of the last submission of b (zeroed before the first). */
void xir_batch_get_result(const xir_batch *b, xir_batch_result *out);

/* Stats of launch k after the last submission. XIR_ERR_INVALID_ARG when k is out of range. */
xir_status xir_batch_stats(const xir_batch *b, size_t k, xir_launch_stats *out, xir_diag *d);

#ifdef __cplusplus
}
#endif
#endif

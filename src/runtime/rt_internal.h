/* rt_internal.h — what batch.c needs from the pool (runtime.c). Not public API. */
#ifndef XIR_RT_INTERNAL_H
#define XIR_RT_INTERNAL_H

#include <stdint.h>

#include "xir_runtime.h"

/* One resolved launch. */
typedef struct rt_rec {
  xir_block_fn fn;
  void *ctx;
  xir_launch_shape shape;
} rt_rec;

/* What one launch did (the per-worker arrays live beside it). */
typedef struct rt_res {
  int ran;
  int status;
  uint64_t fail_task, fail_begin, fail_end;
  uint64_t calls;
  uint64_t steals;
} rt_res;

/* A submission in progress on one thread: whether it holds the pool, and the thread's previous
 * "inside a pool launch of" marker, restored when it ends. */
typedef struct rt_session {
  int locked;
  const xir_runtime *prev_inside;
} rt_session;

#define RT_SESSION_INIT {0, 0}

/* Runs one launch (caller path or pool) and waits for it. Takes the pool lock on first pool use in
 * the session and keeps it until xir__rt_end. tasks_w/steals_w (P entries each, may be NULL) receive
 * the per-worker counters. Returns XIR_OK (a block-function failure is reported in o->status),
 * or XIR_ERR_BUSY for a nested pool submission. */
xir_status xir__rt_run(xir_runtime *rt, rt_session *s, const rt_rec *r, rt_res *o,
                       uint64_t *tasks_w, uint64_t *steals_w, xir_diag *d);

/* Releases the pool if the session holds it. */
void xir__rt_end(xir_runtime *rt, rt_session *s);

/* Resolves (fn, ctx, L, G, H) for rt into r. */
void xir__rt_resolve(const xir_runtime *rt, xir_block_fn fn, void *ctx, uint64_t blocks,
                     uint32_t grain, uint32_t workers, rt_rec *r);

/* Fills a public stats struct from a result. */
void xir__rt_fill_stats(const rt_rec *r, const rt_res *o, uint32_t pool, const uint64_t *tasks_w,
                        const uint64_t *steals_w, xir_launch_stats *out);

#endif

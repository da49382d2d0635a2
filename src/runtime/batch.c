/* batch.c — command batches: record launches, submit them in order, read the results. */
#include <stdatomic.h>
#include <string.h>

#include "runtime/rt_internal.h"
#include "util/util.h"

struct xir_batch {
  xir_runtime *rt;
  uint32_t pool;
  _Atomic int in_use; /* 1 while a thread submits this batch */
  size_t n, cap;
  rt_rec *rec;
  rt_res *res;
  uint64_t *per_worker; /* cap × 2 × pool: tasks then steals of each launch */
  xir_batch_result result;
};

xir_status xir_batch_create(xir_runtime *rt, xir_batch **out, xir_diag *d) {
  if (!out) return xir__err(d, XIR_ERR_INVALID_ARG, "batch create: out is NULL");
  *out = NULL;
  if (!rt) return xir__err(d, XIR_ERR_INVALID_ARG, "batch create: runtime is NULL");
  xir_batch *b = xir__calloc(1, sizeof *b);
  if (!b) return xir__err(d, XIR_ERR_NOMEM, "batch create: out of memory");
  b->rt = rt;
  b->pool = xir_runtime_workers(rt);
  atomic_init(&b->in_use, 0);
  *out = b;
  return XIR_OK;
}

void xir_batch_destroy(xir_batch *b) {
  if (!b) return;
  xir__free(b->rec);
  xir__free(b->res);
  xir__free(b->per_worker);
  xir__free(b);
}

void xir_batch_reset(xir_batch *b) {
  if (!b) return;
  b->n = 0;
  memset(&b->result, 0, sizeof b->result);
}

size_t xir_batch_count(const xir_batch *b) { return b ? b->n : 0; }

static int grow(xir_batch *b) {
  size_t nc = b->cap ? b->cap * 2 : 16;
  size_t pw = (size_t)2 * b->pool;
  if (nc > SIZE_MAX / sizeof(uint64_t) / pw) return -1;
  rt_rec *rec = xir__realloc(b->rec, nc * sizeof *rec);
  if (!rec) return -1;
  b->rec = rec;
  rt_res *res = xir__realloc(b->res, nc * sizeof *res);
  if (!res) return -1;
  b->res = res;
  uint64_t *w = xir__realloc(b->per_worker, nc * pw * sizeof *w);
  if (!w) return -1;
  b->per_worker = w;
  b->cap = nc;
  return 0;
}

xir_status xir_batch_record(xir_batch *b, xir_block_fn fn, void *ctx, uint64_t blocks,
                            uint32_t grain, uint32_t workers, xir_diag *d) {
  if (!b) return xir__err(d, XIR_ERR_INVALID_ARG, "batch record: batch is NULL");
  if (!fn) return xir__err(d, XIR_ERR_INVALID_ARG, "batch record: block function is NULL");
  if (atomic_load_explicit(&b->in_use, memory_order_acquire))
    return xir__err(d, XIR_ERR_BUSY, "batch record: the batch is being submitted");
  if (b->n == b->cap && grow(b) != 0)
    return xir__err(d, XIR_ERR_NOMEM, "batch record: out of memory growing to %zu launches",
                    b->cap * 2);
  rt_rec *r = &b->rec[b->n];
  xir__rt_resolve(b->rt, fn, ctx, blocks, grain, workers, r);
  memset(&b->res[b->n], 0, sizeof b->res[b->n]);
  b->res[b->n].fail_task = UINT64_MAX;
  memset(b->per_worker + b->n * 2 * b->pool, 0, 2 * b->pool * sizeof(uint64_t));
  b->n++;
  return XIR_OK;
}

xir_status xir_runtime_submit(xir_runtime *rt, xir_batch *b, xir_diag *d) {
  if (!rt || !b) return xir__err(d, XIR_ERR_INVALID_ARG, "submit: runtime or batch is NULL");
  if (b->rt != rt)
    return xir__err(d, XIR_ERR_INVALID_ARG, "submit: the batch was created for another runtime");
  int expected = 0;
  if (!atomic_compare_exchange_strong_explicit(&b->in_use, &expected, 1, memory_order_acq_rel,
                                               memory_order_acquire))
    return xir__err(d, XIR_ERR_BUSY,
                    "submit: this batch is being submitted by another thread (a batch is "
                    "submitted by one thread at a time; use one batch per thread)");
  xir_batch_result *R = &b->result;
  memset(R, 0, sizeof *R);
  R->launches = b->n;
  rt_session s = RT_SESSION_INIT;
  xir_status st = XIR_OK;
  size_t k = 0;
  for (; k < b->n; k++) {
    uint64_t *tw = b->per_worker + k * 2 * b->pool;
    st = xir__rt_run(rt, &s, &b->rec[k], &b->res[k], tw, tw + b->pool, d);
    if (st != XIR_OK) break;
    R->completed++;
    if (b->res[k].status != 0) {
      const rt_res *o = &b->res[k];
      R->failed = 1;
      R->failed_launch = k;
      R->code = o->status;
      R->failed_task = o->fail_task;
      R->fail_begin = o->fail_begin;
      R->fail_end = o->fail_end;
      st = xir__err(d, XIR_ERR_RUNTIME,
                    "launch %zu of %zu: block function returned %d on blocks [%llu, %llu) "
                    "(task %llu); the %zu later launch(es) were skipped",
                    k, b->n, o->status, (unsigned long long)o->fail_begin,
                    (unsigned long long)o->fail_end, (unsigned long long)o->fail_task,
                    b->n - k - 1);
      k++;
      break;
    }
  }
  xir__rt_end(rt, &s);
  for (; k < b->n; k++) {
    /* not run: after a failure, or when the submission was refused */
    memset(&b->res[k], 0, sizeof b->res[k]);
    b->res[k].fail_task = UINT64_MAX;
    memset(b->per_worker + k * 2 * b->pool, 0, 2 * b->pool * sizeof(uint64_t));
  }
  atomic_store_explicit(&b->in_use, 0, memory_order_release);
  return st;
}

void xir_batch_get_result(const xir_batch *b, xir_batch_result *out) {
  if (!out) return;
  if (!b) {
    memset(out, 0, sizeof *out);
    return;
  }
  *out = b->result;
}

xir_status xir_batch_stats(const xir_batch *b, size_t k, xir_launch_stats *out, xir_diag *d) {
  if (!b || !out) return xir__err(d, XIR_ERR_INVALID_ARG, "batch stats: batch or out is NULL");
  if (k >= b->n)
    return xir__err(d, XIR_ERR_INVALID_ARG, "batch stats: launch %zu out of range (batch has %zu)",
                    k, b->n);
  const uint64_t *tw = b->per_worker + k * 2 * b->pool;
  xir__rt_fill_stats(&b->rec[k], &b->res[k], b->pool, tw, tw + b->pool, out);
  return XIR_OK;
}

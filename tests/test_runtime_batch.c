/* test_runtime_batch.c — command batches: 10^5 launches with ordering checked, failure reporting,
 * concurrent submitters, nested submissions, and no allocation when a batch is reused. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "xir_runtime.h"

static xir_runtime *make_rt(uint32_t workers, xir_wait_policy p, uint32_t spin_us) {
  xir_runtime_options o = {workers, p, spin_us};
  xir_runtime *rt = NULL;
  xir_diag d;
  assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_OK);
  return rt;
}

/* ---- 10^5 launches, each reading the previous one's complete output ------------------------ */

#define CHAIN_N 512 /* elements; every launch covers all of them */

typedef struct chain_ctx {
  const uint32_t *src;
  uint32_t *dst;
  uint32_t expected; /* the value every src element must hold */
  uint32_t per_block;
  _Atomic uint32_t *bad;
} chain_ctx;

static int chain_fn(void *vctx, uint64_t b, uint64_t e) {
  chain_ctx *c = vctx;
  for (uint64_t i = b * c->per_block; i < e * c->per_block; i++) {
    if (c->src[i] != c->expected) atomic_fetch_add_explicit(c->bad, 1, memory_order_relaxed);
    c->dst[i] = c->expected + 1;
  }
  return 0;
}

static void test_100k_launches_in_batches_each_sees_previous_output(void **state) {
  (void)state;
  xir_runtime *rt = make_rt(4, XIR_WAIT_SPIN_THEN_SLEEP, 50);
  const size_t per_batch = 100;
  const size_t submits = 1000; /* 10^5 launches */
  static uint32_t buf[2][CHAIN_N];
  memset(buf, 0, sizeof buf);
  _Atomic uint32_t bad = 0;
  chain_ctx *ctx = calloc(per_batch, sizeof *ctx);
  assert_non_null(ctx);
  xir_batch *b = NULL;
  assert_int_equal(xir_batch_create(rt, &b, NULL), XIR_OK);
  const uint64_t Ls[] = {1, 2, 4, 8, 16, 32, 64, 128, 512};
  const uint32_t Gs[] = {0, 1, 3, UINT32_MAX, 2, 0, 7};
  const uint32_t Hs[] = {0, 2, 3, 1, 4};
  uint32_t value = 0;
  size_t launches = 0;
  for (size_t s = 0; s < submits; s++) {
    if (s % 10 == 0) { /* re-record with other shapes every 10 submissions */
      xir_batch_reset(b);
      for (size_t k = 0; k < per_batch; k++) {
        size_t m = k + s / 10;
        uint64_t L = Ls[m % (sizeof Ls / sizeof Ls[0])];
        ctx[k].per_block = (uint32_t)(CHAIN_N / L);
        ctx[k].bad = &bad;
        assert_int_equal(xir_batch_record(b, chain_fn, &ctx[k], L, Gs[m % 7], Hs[m % 5], NULL),
                         XIR_OK);
      }
    }
    for (size_t k = 0; k < per_batch; k++) {
      ctx[k].src = buf[(launches + k) % 2];
      ctx[k].dst = buf[(launches + k + 1) % 2];
      ctx[k].expected = value + (uint32_t)k;
    }
    xir_diag d;
    assert_int_equal(xir_runtime_submit(rt, b, &d), XIR_OK);
    xir_batch_result r;
    xir_batch_get_result(b, &r);
    assert_int_equal(r.launches, per_batch);
    assert_int_equal(r.completed, per_batch);
    assert_int_equal(r.failed, 0);
    value += (uint32_t)per_batch;
    launches += per_batch;
  }
  assert_int_equal(atomic_load(&bad), 0);
  for (size_t i = 0; i < CHAIN_N; i++) assert_int_equal(buf[launches % 2][i], value);
  xir_batch_destroy(b);
  free(ctx);
  xir_runtime_destroy(rt);
}

/* ---- failures ------------------------------------------------------------------------------ */

typedef struct fail_ctx {
  _Atomic uint32_t hits[64];
  int fail; /* fail on tasks containing block 10 (code 7) or block 30 (code 9) */
} fail_ctx;

static int fail_fn(void *vctx, uint64_t b, uint64_t e) {
  fail_ctx *c = vctx;
  for (uint64_t i = b; i < e; i++) atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
  if (c->fail && b <= 30 && 30 < e) return 9;
  if (c->fail && b <= 10 && 10 < e) return 7;
  return 0;
}

static void test_batch_failure_names_launch_and_lowest_task_and_skips_later(void **state) {
  (void)state;
  xir_runtime *rt = make_rt(4, XIR_WAIT_SPIN_THEN_SLEEP, 50);
  static fail_ctx c[5];
  memset(c, 0, sizeof c);
  c[2].fail = 1;
  xir_batch *b = NULL;
  assert_int_equal(xir_batch_create(rt, &b, NULL), XIR_OK);
  for (int k = 0; k < 5; k++) assert_int_equal(xir_batch_record(b, fail_fn, &c[k], 40, 4, 4, NULL), XIR_OK);
  xir_diag d;
  xir_diag_clear(&d);
  assert_int_equal(xir_runtime_submit(rt, b, &d), XIR_ERR_RUNTIME);
  assert_non_null(strstr(d.msg, "launch 2 of 5"));
  assert_non_null(strstr(d.msg, "returned 7"));
  assert_non_null(strstr(d.msg, "[8, 12)"));
  xir_batch_result r;
  xir_batch_get_result(b, &r);
  assert_int_equal(r.failed, 1);
  assert_int_equal(r.failed_launch, 2);
  assert_int_equal(r.completed, 3);
  assert_int_equal(r.code, 7); /* tasks 2 and 7 failed: the lowest index is reported */
  assert_int_equal(r.failed_task, 2);
  assert_int_equal(r.fail_begin, 8);
  assert_int_equal(r.fail_end, 12);
  /* launches 0..2 ran every block once (the failing launch too); 3 and 4 were skipped */
  for (int k = 0; k < 5; k++)
    for (int i = 0; i < 40; i++) assert_int_equal(atomic_load(&c[k].hits[i]), k <= 2 ? 1 : 0);
  static xir_launch_stats st;
  for (size_t k = 0; k < 5; k++) {
    assert_int_equal(xir_batch_stats(b, k, &st, NULL), XIR_OK);
    assert_int_equal(st.ran, k <= 2);
    assert_int_equal(st.status, k == 2 ? 7 : 0);
    assert_int_equal(st.fail_task, k == 2 ? 2 : UINT64_MAX);
  }
  /* fixed: the same batch resubmitted runs everything */
  c[2].fail = 0;
  memset(c, 0, sizeof c);
  assert_int_equal(xir_runtime_submit(rt, b, &d), XIR_OK);
  xir_batch_get_result(b, &r);
  assert_int_equal(r.failed, 0);
  assert_int_equal(r.completed, 5);
  for (int k = 0; k < 5; k++)
    for (int i = 0; i < 40; i++) assert_int_equal(atomic_load(&c[k].hits[i]), 1);

  /* a caller-path failure covers the whole range as task 0 */
  memset(c, 0, sizeof c);
  c[0].fail = 1;
  assert_int_equal(xir_runtime_launch(rt, fail_fn, &c[0], 40, 4, 1, &st, &d), XIR_ERR_RUNTIME);
  assert_non_null(strstr(d.msg, "launch 0 of 1"));
  assert_true(st.shape.caller_path);
  assert_int_equal(st.status, 9);
  assert_int_equal(st.fail_task, 0);
  assert_int_equal(st.fail_begin, 0);
  assert_int_equal(st.fail_end, 40);
  /* the same launches without stats (xir_runtime_launch's one-task path: H = 1, G ≥ L, one
   * block, or a pool of one) fail with the same message, every block run once */
  char with_stats[sizeof d.msg];
  snprintf(with_stats, sizeof with_stats, "%s", d.msg);
  const uint32_t one_task[][2] = {{4, 1}, {UINT32_MAX, 0}, {40, 0}, {64, 2}};
  for (size_t t = 0; t < sizeof one_task / sizeof one_task[0]; t++) {
    memset(c, 0, sizeof c);
    c[0].fail = 1;
    assert_int_equal(xir_runtime_launch(rt, fail_fn, &c[0], 40, one_task[t][0], one_task[t][1], NULL, &d),
                     XIR_ERR_RUNTIME);
    assert_string_equal(d.msg, with_stats);
    for (int i = 0; i < 40; i++) assert_int_equal(atomic_load(&c[0].hits[i]), 1);
  }
  memset(c, 0, sizeof c);
  assert_int_equal(xir_runtime_launch(rt, fail_fn, &c[0], 40, UINT32_MAX, 0, NULL, &d), XIR_OK);
  assert_int_equal(xir_runtime_launch(rt, fail_fn, &c[0], 0, UINT32_MAX, 0, NULL, &d), XIR_OK);
  for (int i = 0; i < 40; i++) assert_int_equal(atomic_load(&c[0].hits[i]), 1);
  /* a pool launch through xir_runtime_launch */
  memset(c, 0, sizeof c);
  c[0].fail = 1;
  assert_int_equal(xir_runtime_launch(rt, fail_fn, &c[0], 40, 1, 0, &st, &d), XIR_ERR_RUNTIME);
  assert_int_equal(st.status, 7);
  assert_int_equal(st.fail_task, 10);
  assert_int_equal(st.fail_begin, 10);
  assert_int_equal(st.fail_end, 11);
  for (int i = 0; i < 40; i++) assert_int_equal(atomic_load(&c[0].hits[i]), 1);
  xir_batch_destroy(b);
  xir_runtime_destroy(rt);
}

/* ---- concurrent submitters ----------------------------------------------------------------- */

typedef struct sub_arg {
  xir_runtime *rt;
  int mode; /* 0 = batches, 1 = single launches */
  int rounds;
  int errors;
} sub_arg;

typedef struct hit_ctx {
  _Atomic uint32_t hits[100];
} hit_ctx;

static int hit_fn(void *vctx, uint64_t b, uint64_t e) {
  hit_ctx *c = vctx;
  for (uint64_t i = b; i < e; i++) atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
  return 0;
}

static void *submitter(void *varg) {
  sub_arg *a = varg;
  hit_ctx *ctx = calloc(20, sizeof *ctx);
  xir_batch *b = NULL;
  if (!ctx || xir_batch_create(a->rt, &b, NULL) != XIR_OK) {
    a->errors++;
    free(ctx);
    return NULL;
  }
  for (int k = 0; k < 20; k++)
    xir_batch_record(b, hit_fn, &ctx[k], 1 + (uint64_t)k * 5, (uint32_t)(k % 4), (uint32_t)(k % 5), NULL);
  for (int r = 0; r < a->rounds; r++) {
    if (a->mode == 0) {
      if (xir_runtime_submit(a->rt, b, NULL) != XIR_OK) a->errors++;
    } else {
      for (int k = 0; k < 20; k++)
        if (xir_runtime_launch(a->rt, hit_fn, &ctx[k], 1 + (uint64_t)k * 5, (uint32_t)(k % 4),
                               (uint32_t)(k % 5), NULL, NULL) != XIR_OK)
          a->errors++;
    }
  }
  for (int k = 0; k < 20; k++)
    for (int i = 0; i < 100; i++) {
      uint32_t want = i < 1 + k * 5 ? (uint32_t)a->rounds : 0;
      if (atomic_load(&ctx[k].hits[i]) != want) a->errors++;
    }
  xir_batch_destroy(b);
  free(ctx);
  return NULL;
}

static void test_two_threads_submitting_at_once_are_serialized_not_corrupted(void **state) {
  (void)state;
  xir_runtime *rt = make_rt(4, XIR_WAIT_SPIN_THEN_SLEEP, 50);
  const int rounds = 300;
  sub_arg a[3] = {{rt, 0, rounds, 0}, {rt, 0, rounds, 0}, {rt, 1, rounds, 0}};
  pthread_t t[3];
  for (int i = 0; i < 3; i++) assert_int_equal(pthread_create(&t[i], NULL, submitter, &a[i]), 0);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 3; i++) assert_int_equal(a[i].errors, 0);
  xir_runtime_destroy(rt);
}

/* ---- nested submissions from a block function --------------------------------------------- */

typedef struct nest_ctx {
  xir_runtime *rt;
  xir_batch *self;
  _Atomic uint32_t busy_batch, busy_pool, ok_caller, other;
} nest_ctx;

static int nest_fn(void *vctx, uint64_t b, uint64_t e) {
  nest_ctx *c = vctx;
  (void)b; (void)e;
  static hit_ctx scratch[64];
  xir_status s = xir_runtime_submit(c->rt, c->self, NULL); /* the batch is being submitted */
  if (s == XIR_ERR_BUSY) atomic_fetch_add(&c->busy_batch, 1);
  else atomic_fetch_add(&c->other, 1);
  xir_diag d;
  s = xir_runtime_launch(c->rt, hit_fn, &scratch[b % 64], 10, 1, 2, NULL, &d); /* needs the pool */
  if (s == XIR_ERR_BUSY && strstr(d.msg, "nested submission")) atomic_fetch_add(&c->busy_pool, 1);
  else atomic_fetch_add(&c->other, 1);
  s = xir_runtime_launch(c->rt, hit_fn, &scratch[b % 64], 10, 0, 1, NULL, NULL); /* caller path */
  if (s == XIR_OK) atomic_fetch_add(&c->ok_caller, 1);
  else atomic_fetch_add(&c->other, 1);
  return 0;
}

static void test_nested_pool_submission_is_busy_and_caller_path_nests(void **state) {
  (void)state;
  xir_runtime *rt = make_rt(3, XIR_WAIT_SPIN_THEN_SLEEP, 50);
  static nest_ctx c;
  memset(&c, 0, sizeof c);
  c.rt = rt;
  assert_int_equal(xir_batch_create(rt, &c.self, NULL), XIR_OK);
  assert_int_equal(xir_batch_record(c.self, nest_fn, &c, 6, 1, 3, NULL), XIR_OK);
  assert_int_equal(xir_runtime_submit(rt, c.self, NULL), XIR_OK);
  assert_int_equal(atomic_load(&c.busy_batch), 6);
  assert_int_equal(atomic_load(&c.busy_pool), 6);
  assert_int_equal(atomic_load(&c.ok_caller), 6);
  assert_int_equal(atomic_load(&c.other), 0);
  xir_batch_destroy(c.self);
  xir_runtime_destroy(rt);
}

/* ---- runtimes launching on each other (A -> B -> A) ---------------------------------------- */

/* A block of a pool launch on one runtime launches on the other runtime, while a block of the
 * other runtime's launch does the same back: with the two outer launches holding both pools,
 * waiting would hang both. Each nested pool launch must return XIR_ERR_BUSY instead; a nested
 * caller-path launch (workers = 1) still runs. A watchdog turns a hang into a failure. */

typedef struct cross_side {
  xir_runtime *other;
  _Atomic uint32_t *started_mine, *started_other;
  _Atomic uint32_t busy, ok_caller, wrong;
} cross_side;

static int cross_leaf_fn(void *ctx, uint64_t b, uint64_t e) {
  (void)ctx; (void)b; (void)e;
  return 0;
}

static int cross_fn(void *vctx, uint64_t b, uint64_t e) {
  cross_side *c = vctx;
  (void)b; (void)e;
  atomic_fetch_add(c->started_mine, 1);
  /* wait (bounded) until the other runtime's launch runs too: both pools are then held */
  for (long i = 0; i < 200000000L && atomic_load(c->started_other) == 0; i++) {
  }
  xir_diag d;
  xir_status s = xir_runtime_launch(c->other, cross_leaf_fn, NULL, 8, 1, 2, NULL, &d);
  if (s == XIR_ERR_BUSY && strstr(d.msg, "nested submission") && strstr(d.msg, "another runtime"))
    atomic_fetch_add(&c->busy, 1);
  else atomic_fetch_add(&c->wrong, 1);
  s = xir_runtime_launch(c->other, cross_leaf_fn, NULL, 8, 1, 1, NULL, NULL); /* caller path */
  if (s == XIR_OK) atomic_fetch_add(&c->ok_caller, 1);
  else atomic_fetch_add(&c->wrong, 1);
  return 0;
}

typedef struct cross_thread {
  xir_runtime *rt;
  cross_side *side;
  xir_status st;
} cross_thread;

static void *cross_main(void *arg) {
  cross_thread *t = arg;
  t->st = xir_runtime_launch(t->rt, cross_fn, t->side, 2, 1, 2, NULL, NULL);
  return NULL;
}

static void watchdog(int sig) {
  (void)sig;
  static const char msg[] = "test_runtime_batch: runtimes launching on each other hung (deadlock)\n";
  if (write(2, msg, sizeof msg - 1) < 0) {
  }
  _exit(1);
}

static void test_runtimes_launching_on_each_other_are_busy_not_deadlocked(void **state) {
  (void)state;
  signal(SIGALRM, watchdog);
  alarm(30);
  for (int rep = 0; rep < 20; rep++) {
    xir_runtime *a = make_rt(2, XIR_WAIT_SPIN_THEN_SLEEP, 50);
    xir_runtime *b = make_rt(2, XIR_WAIT_SPIN_THEN_SLEEP, 50);
    static _Atomic uint32_t started_a, started_b;
    atomic_store(&started_a, 0);
    atomic_store(&started_b, 0);
    static cross_side sa, sb;
    memset(&sa, 0, sizeof sa);
    memset(&sb, 0, sizeof sb);
    sa.other = b;
    sa.started_mine = &started_a;
    sa.started_other = &started_b;
    sb.other = a;
    sb.started_mine = &started_b;
    sb.started_other = &started_a;
    cross_thread ta = {a, &sa, XIR_ERR_RUNTIME}, tb = {b, &sb, XIR_ERR_RUNTIME};
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, cross_main, &ta), 0);
    assert_int_equal(pthread_create(&t2, NULL, cross_main, &tb), 0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    assert_int_equal(ta.st, XIR_OK);
    assert_int_equal(tb.st, XIR_OK);
    assert_int_equal(atomic_load(&sa.busy), 2); /* both blocks of each outer launch */
    assert_int_equal(atomic_load(&sb.busy), 2);
    assert_int_equal(atomic_load(&sa.ok_caller), 2);
    assert_int_equal(atomic_load(&sb.ok_caller), 2);
    assert_int_equal(atomic_load(&sa.wrong) + atomic_load(&sb.wrong), 0);
    xir_runtime_destroy(a);
    xir_runtime_destroy(b);
  }
  alarm(0);
  signal(SIGALRM, SIG_DFL);
}

/* ---- allocation ---------------------------------------------------------------------------- */

static _Atomic long g_allocs;
static _Atomic long g_fail_after = -1; /* fail every allocation once this many more were made */

static void *count_alloc(void *ud, size_t n) {
  (void)ud;
  long f = atomic_load(&g_fail_after);
  if (f == 0) return NULL;
  if (f > 0) atomic_fetch_sub(&g_fail_after, 1);
  atomic_fetch_add(&g_allocs, 1);
  return malloc(n);
}
static void *count_realloc(void *ud, void *p, size_t n) {
  (void)ud;
  long f = atomic_load(&g_fail_after);
  if (f == 0) return NULL;
  if (f > 0) atomic_fetch_sub(&g_fail_after, 1);
  atomic_fetch_add(&g_allocs, 1);
  return realloc(p, n);
}
static void count_free(void *ud, void *p) {
  (void)ud;
  free(p);
}

static void test_reused_batch_and_launches_allocate_nothing(void **state) {
  (void)state;
  xir_allocator a = {count_alloc, count_realloc, count_free, NULL};
  xir_set_allocator(&a);
  xir_runtime *rt = make_rt(4, XIR_WAIT_SPIN_THEN_SLEEP, 50);
  static hit_ctx c;
  xir_batch *b = NULL;
  assert_int_equal(xir_batch_create(rt, &b, NULL), XIR_OK);
  for (int k = 0; k < 100; k++) assert_int_equal(xir_batch_record(b, hit_fn, &c, 100, 0, 0, NULL), XIR_OK);
  assert_int_equal(xir_runtime_submit(rt, b, NULL), XIR_OK);
  long before = atomic_load(&g_allocs);
  for (int r = 0; r < 5; r++) {
    xir_batch_reset(b);
    for (int k = 0; k < 100; k++)
      assert_int_equal(xir_batch_record(b, hit_fn, &c, 100, (uint32_t)k % 5, 0, NULL), XIR_OK);
    assert_int_equal(xir_runtime_submit(rt, b, NULL), XIR_OK);
    assert_int_equal(xir_runtime_launch(rt, hit_fn, &c, 100, 3, 0, NULL, NULL), XIR_OK);
    assert_int_equal(xir_runtime_launch(rt, hit_fn, &c, 100, 3, 1, NULL, NULL), XIR_OK);
  }
  assert_int_equal(atomic_load(&g_allocs), before);
  xir_batch_destroy(b);
  xir_runtime_destroy(rt);
  xir_set_allocator(NULL);
}

static void test_allocation_failures_return_nomem(void **state) {
  (void)state;
  xir_allocator a = {count_alloc, count_realloc, count_free, NULL};
  xir_set_allocator(&a);
  xir_runtime *rt = NULL;
  xir_runtime_options o = {4, XIR_WAIT_SLEEP, 0};
  xir_diag d;
  atomic_store(&g_fail_after, 0);
  assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_ERR_NOMEM);
  assert_null(rt);
  atomic_store(&g_fail_after, -1);
  assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_OK);
  xir_batch *b = NULL;
  atomic_store(&g_fail_after, 0);
  assert_int_equal(xir_batch_create(rt, &b, &d), XIR_ERR_NOMEM);
  assert_null(b);
  atomic_store(&g_fail_after, -1);
  assert_int_equal(xir_batch_create(rt, &b, &d), XIR_OK);
  static hit_ctx c;
  for (long fail = 0; fail < 3; fail++) { /* each of the three growth allocations can fail */
    xir_batch_reset(b);
    atomic_store(&g_fail_after, fail);
    assert_int_equal(xir_batch_record(b, hit_fn, &c, 10, 0, 0, &d), XIR_ERR_NOMEM);
    assert_int_equal(xir_batch_count(b), 0);
    atomic_store(&g_fail_after, -1);
  }
  assert_int_equal(xir_batch_record(b, hit_fn, &c, 10, 0, 0, &d), XIR_OK);
  assert_int_equal(xir_runtime_submit(rt, b, &d), XIR_OK);
  xir_batch_destroy(b);
  xir_runtime_destroy(rt);
  xir_set_allocator(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_100k_launches_in_batches_each_sees_previous_output),
      cmocka_unit_test(test_batch_failure_names_launch_and_lowest_task_and_skips_later),
      cmocka_unit_test(test_two_threads_submitting_at_once_are_serialized_not_corrupted),
      cmocka_unit_test(test_nested_pool_submission_is_busy_and_caller_path_nests),
      cmocka_unit_test(test_runtimes_launching_on_each_other_are_busy_not_deadlocked),
      cmocka_unit_test(test_reused_batch_and_launches_allocate_nothing),
      cmocka_unit_test(test_allocation_failures_return_nomem),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

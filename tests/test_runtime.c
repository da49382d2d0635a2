/* test_runtime.c — launch semantics of the CPU runtime: every block exactly once, the launch
 * counters (C, h, G, caller path, per-worker tasks and steals), guarded outputs, and identical
 * outputs across every task grain and worker count. No test asserts a timing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <math.h>
#include <pthread.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "xir_runtime.h"

#define MAX_L 257

/* ---- every block once ---------------------------------------------------------------------- */

typedef struct count_ctx {
  _Atomic uint32_t hits[MAX_L + 1];
  _Atomic uint32_t calls;
  _Atomic uint32_t bad_range; /* a call whose range is not exactly one task (or the whole launch) */
  uint64_t L, G;
  int caller_path;
} count_ctx;

static int count_fn(void *vctx, uint64_t b, uint64_t e) {
  count_ctx *c = vctx;
  atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
  int ok;
  if (c->caller_path) ok = b == 0 && e == c->L;
  else ok = b < e && e <= c->L && b % c->G == 0 && e == (c->L - b > c->G ? b + c->G : c->L);
  if (!ok) atomic_fetch_add_explicit(&c->bad_range, 1, memory_order_relaxed);
  for (uint64_t i = b; i < e && i < MAX_L + 1; i++)
    atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
  return 0;
}

static uint64_t expected_grain(uint64_t L, uint32_t G, uint32_t Hres) {
  if (G == 0) return (L + 4ull * Hres - 1) / (4ull * Hres);
  if (G == UINT32_MAX || G >= L) return L;
  return G;
}

/* Checks the counters of one launch against the launch semantics. */
static void check_stats(const xir_launch_stats *st, uint64_t L, uint32_t G, uint32_t H,
                        uint32_t pool) {
  uint32_t Hres = (H == 0 || H > pool) ? pool : H;
  uint64_t g = expected_grain(L, G, Hres);
  uint64_t C = (L + g - 1) / g;
  uint32_t h = C < Hres ? (uint32_t)C : Hres;
  assert_int_equal(st->pool_workers, pool);
  assert_int_equal(st->shape.blocks, L);
  assert_int_equal(st->shape.grain, g);
  assert_int_equal(st->shape.tasks, C);
  assert_int_equal(st->shape.workers, Hres);
  assert_int_equal(st->shape.active, h);
  assert_int_equal(st->shape.grain_heuristic, G == 0);
  assert_int_equal(st->shape.caller_path, h == 1);
  assert_int_equal(st->ran, 1);
  assert_int_equal(st->status, 0);
  assert_int_equal(st->calls, h == 1 ? 1 : C);
  uint64_t sum = 0, steals = 0, stolen_from = 0;
  for (uint32_t w = 0; w < pool; w++) {
    sum += st->tasks_per_worker[w];
    steals += st->steals_per_worker[w];
    assert_true(st->steals_per_worker[w] <= st->tasks_per_worker[w]);
    if (w >= h) {
      assert_int_equal(st->tasks_per_worker[w], 0);
      continue;
    }
    uint64_t share = xir_launch_home_share(C, h, w);
    uint64_t home = st->tasks_per_worker[w] - st->steals_per_worker[w];
    assert_true(home <= share);
    stolen_from += share - home;
  }
  assert_int_equal(sum, C);
  assert_int_equal(steals, st->steals);
  assert_int_equal(stolen_from, steals); /* every home task not run at home was stolen */
  if (h == 1) {
    assert_int_equal(st->tasks_per_worker[0], C);
    assert_int_equal(steals, 0);
  }
}

static void test_every_block_runs_exactly_once_with_consistent_counters(void **state) {
  (void)state;
  const uint32_t pool = 8;
  xir_runtime_options o;
  xir_runtime_options_default(&o);
  o.workers = pool;
  o.spin_us = 20;
  xir_runtime *rt = NULL;
  xir_diag d;
  assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_OK);
  static count_ctx c;
  static xir_launch_stats st;
  const uint32_t Hs[] = {1, 2, 3, 8, 0};
  const int step = 1;
  for (uint64_t L = 1; L <= MAX_L; L += (L < 20 ? 1 : (uint64_t)step)) {
    const uint32_t Gs[] = {0, 1, 2, 3, 7, (uint32_t)(L > 1 ? L - 1 : 1), (uint32_t)L, UINT32_MAX,
                           (uint32_t)L + 5};
    for (size_t gi = 0; gi < sizeof Gs / sizeof Gs[0]; gi++) {
      for (size_t hi = 0; hi < sizeof Hs / sizeof Hs[0]; hi++) {
        uint32_t G = Gs[gi], H = Hs[hi];
        memset(&c, 0, sizeof c);
        uint32_t Hres = (H == 0 || H > pool) ? pool : H;
        c.L = L;
        c.G = expected_grain(L, G, Hres);
        uint64_t C = (L + c.G - 1) / c.G;
        c.caller_path = (C < Hres ? C : Hres) == 1;
        assert_int_equal(xir_runtime_launch(rt, count_fn, &c, L, G, H, &st, &d), XIR_OK);
        for (uint64_t i = 0; i < L; i++) {
          if (atomic_load(&c.hits[i]) != 1)
            fail_msg("L=%llu G=%u H=%u: block %llu ran %u times", (unsigned long long)L, G, H,
                     (unsigned long long)i, atomic_load(&c.hits[i]));
        }
        assert_int_equal(atomic_load(&c.hits[L]), 0);
        assert_int_equal(atomic_load(&c.bad_range), 0);
        assert_int_equal(atomic_load(&c.calls), st.calls);
        check_stats(&st, L, G, H, pool);
      }
    }
  }
  xir_runtime_destroy(rt);
}

static void test_zero_blocks_is_a_noop(void **state) {
  (void)state;
  xir_runtime_options o;
  xir_runtime_options_default(&o);
  o.workers = 4;
  xir_runtime *rt = NULL;
  assert_int_equal(xir_runtime_create(&o, &rt, NULL), XIR_OK);
  static count_ctx c;
  memset(&c, 0, sizeof c);
  static xir_launch_stats st;
  const uint32_t Gs[] = {0, 1, 5, UINT32_MAX};
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(xir_runtime_launch(rt, count_fn, &c, 0, Gs[i], 0, &st, NULL), XIR_OK);
    assert_int_equal(atomic_load(&c.calls), 0);
    assert_int_equal(st.shape.tasks, 0);
    assert_int_equal(st.shape.active, 0);
    assert_int_equal(st.shape.caller_path, 0);
    assert_int_equal(st.calls, 0);
    assert_int_equal(st.ran, 1);
    for (uint32_t w = 0; w < 4; w++) assert_int_equal(st.tasks_per_worker[w], 0);
  }
  xir_runtime_destroy(rt);
}

static void test_resolve_follows_documented_formulas(void **state) {
  (void)state;
  xir_launch_shape s;
  /* G = 0: G' = ceil(L / (4·H')) */
  assert_int_equal(xir_launch_resolve(8, 1000, 0, 0, &s, NULL), XIR_OK);
  assert_int_equal(s.workers, 8);
  assert_int_equal(s.grain, 32);
  assert_int_equal(s.tasks, 32);
  assert_int_equal(s.active, 8);
  assert_true(s.grain_heuristic);
  assert_int_equal(xir_launch_resolve(8, 129, 0, 8, &s, NULL), XIR_OK);
  assert_int_equal(s.grain, 5);
  assert_int_equal(s.tasks, 26);
  assert_int_equal(xir_launch_resolve(8, 5, 0, 8, &s, NULL), XIR_OK);
  assert_int_equal(s.grain, 1);
  assert_int_equal(s.tasks, 5);
  assert_int_equal(s.active, 5);
  /* H = 1: caller path whatever the grain */
  assert_int_equal(xir_launch_resolve(8, 1000, 1, 1, &s, NULL), XIR_OK);
  assert_int_equal(s.tasks, 1000);
  assert_int_equal(s.active, 1);
  assert_true(s.caller_path);
  /* H > P clamps to P */
  assert_int_equal(xir_launch_resolve(4, 100, 1, 64, &s, NULL), XIR_OK);
  assert_int_equal(s.workers, 4);
  assert_int_equal(s.active, 4);
  /* UINT32_MAX: one task, even for L beyond 32 bits */
  assert_int_equal(xir_launch_resolve(8, 10000000000ull, UINT32_MAX, 0, &s, NULL), XIR_OK);
  assert_int_equal(s.grain, 10000000000ull);
  assert_int_equal(s.tasks, 1);
  assert_true(s.caller_path);
  /* G > L clamps */
  assert_int_equal(xir_launch_resolve(8, 10, 11, 0, &s, NULL), XIR_OK);
  assert_int_equal(s.grain, 10);
  assert_int_equal(s.tasks, 1);
  assert_true(s.caller_path);
  /* explicit grain wins */
  assert_int_equal(xir_launch_resolve(8, 10, 3, 0, &s, NULL), XIR_OK);
  assert_int_equal(s.grain, 3);
  assert_int_equal(s.tasks, 4);
  assert_int_equal(s.active, 4);
  assert_false(s.grain_heuristic);
  /* home shares */
  assert_int_equal(xir_launch_home_share(10, 4, 0), 3);
  assert_int_equal(xir_launch_home_share(10, 4, 1), 3);
  assert_int_equal(xir_launch_home_share(10, 4, 2), 2);
  assert_int_equal(xir_launch_home_share(10, 4, 3), 2);
  assert_int_equal(xir_launch_home_share(10, 4, 4), 0);
  assert_int_equal(xir_launch_home_share(0, 0, 0), 0);
}

/* ---- guarded output ------------------------------------------------------------------------ */

#define ELEMS_PER_BLOCK 16

typedef struct write_ctx {
  float *out;
  size_t n;
  _Atomic uint32_t overwrite; /* an element written when it no longer held the sentinel */
} write_ctx;

static int write_fn(void *vctx, uint64_t b, uint64_t e) {
  write_ctx *c = vctx;
  static const uint32_t sentinel = 0x7fa5a5a5u;
  for (uint64_t blk = b; blk < e; blk++) {
    for (size_t j = 0; j < ELEMS_PER_BLOCK; j++) {
      size_t i = (size_t)blk * ELEMS_PER_BLOCK + j;
      if (i >= c->n) break; /* ragged last block */
      uint32_t bits;
      memcpy(&bits, &c->out[i], 4);
      if (bits != sentinel) atomic_fetch_add_explicit(&c->overwrite, 1, memory_order_relaxed);
      c->out[i] = (float)i * 0.5f + 1.0f;
    }
  }
  return 0;
}

static void test_guarded_output_written_once_and_sentinels_intact(void **state) {
  (void)state;
  xir_runtime_options o;
  xir_runtime_options_default(&o);
  o.workers = 8;
  o.spin_us = 20;
  xir_runtime *rt = NULL;
  assert_int_equal(xir_runtime_create(&o, &rt, NULL), XIR_OK);
  const size_t ns[] = {1, 15, 16, 17, 100, 1000, 4099};
  const uint32_t Gs[] = {0, 1, 2, 3, 7, UINT32_MAX};
  const uint32_t Hs[] = {1, 2, 3, 8};
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
    for (size_t gi = 0; gi < sizeof Gs / sizeof Gs[0]; gi++) {
      for (size_t hi = 0; hi < sizeof Hs / sizeof Hs[0]; hi++) {
        guarded_f32 g;
        assert_int_equal(guarded_alloc(&g, ns[a]), 0);
        write_ctx c = {g.data, ns[a], 0};
        uint64_t L = (ns[a] + ELEMS_PER_BLOCK - 1) / ELEMS_PER_BLOCK;
        assert_int_equal(xir_runtime_launch(rt, write_fn, &c, L, Gs[gi], Hs[hi], NULL, NULL),
                         XIR_OK);
        assert_int_equal(atomic_load(&c.overwrite), 0);
        for (size_t i = 0; i < ns[a]; i++) assert_true(g.data[i] == (float)i * 0.5f + 1.0f);
        assert_true(guarded_intact(&g));
        guarded_free(&g);
      }
    }
  }
  xir_runtime_destroy(rt);
}

/* ---- identical outputs across G and H ------------------------------------------------------ */

typedef struct det_ctx {
  const float *x;
  float *y;
  size_t rows, cols;
} det_ctx;

/* One block = one row: y = x · rsqrt(mean(x²) + eps) (an RMSNorm-like deterministic body). */
static int det_fn(void *vctx, uint64_t b, uint64_t e) {
  det_ctx *c = vctx;
  for (uint64_t r = b; r < e; r++) {
    const float *x = c->x + r * c->cols;
    float *y = c->y + r * c->cols;
    float ss = 0.0f;
    for (size_t j = 0; j < c->cols; j++) ss += x[j] * x[j];
    float inv = 1.0f / sqrtf(ss / (float)c->cols + 1e-5f);
    for (size_t j = 0; j < c->cols; j++) y[j] = x[j] * inv;
  }
  return 0;
}

static void test_outputs_identical_across_every_grain_and_worker_count(void **state) {
  (void)state;
  xir_runtime_options o;
  xir_runtime_options_default(&o);
  o.workers = 8;
  o.spin_us = 20;
  xir_runtime *rt = NULL;
  assert_int_equal(xir_runtime_create(&o, &rt, NULL), XIR_OK);
  const size_t rows = 129, cols = 77;
  float *x = malloc(rows * cols * sizeof *x);
  float *ref = malloc(rows * cols * sizeof *ref);
  float *y = malloc(rows * cols * sizeof *y);
  assert_non_null(x);
  assert_non_null(ref);
  assert_non_null(y);
  uint32_t s = 12345;
  for (size_t i = 0; i < rows * cols; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)(s >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
  }
  det_ctx c = {x, ref, rows, cols};
  assert_int_equal(xir_runtime_launch(rt, det_fn, &c, rows, UINT32_MAX, 1, NULL, NULL), XIR_OK);
  const uint32_t Gs[] = {0, 1, 2, 3, 7, 64, 128, 129, UINT32_MAX};
  const uint32_t Hs[] = {0, 1, 2, 3, 5, 8};
  for (size_t gi = 0; gi < sizeof Gs / sizeof Gs[0]; gi++) {
    for (size_t hi = 0; hi < sizeof Hs / sizeof Hs[0]; hi++) {
      memset(y, 0xff, rows * cols * sizeof *y);
      c.y = y;
      assert_int_equal(xir_runtime_launch(rt, det_fn, &c, rows, Gs[gi], Hs[hi], NULL, NULL),
                       XIR_OK);
      assert_memory_equal(y, ref, rows * cols * sizeof *y);
    }
  }
  free(x);
  free(ref);
  free(y);
  xir_runtime_destroy(rt);
}

/* ---- a joined owner keeps its last task -------------------------------------------------- */

/* Which worker ran each block: the thread's own id, set once per thread (0 is the caller). */
typedef struct who_ctx {
  _Atomic int who[8];
  pthread_t caller;
  int wait_ms; /* block 0 waits (at most this long) until blocks 2 and 4 have run */
} who_ctx;

static int who_fn(void *vctx, uint64_t b, uint64_t e) {
  who_ctx *c = vctx;
  if (b == 0) {
    /* Hold the caller's first home task until a thief has taken 2 and 4 (or the wait ends):
     * the thief's choices then do not depend on how the two threads are scheduled. */
    for (int t = 0; t < c->wait_ms * 10; t++) {
      if (atomic_load(&c->who[2]) >= 0 && atomic_load(&c->who[4]) >= 0) break;
      struct timespec ts = {0, 100000L};
      nanosleep(&ts, NULL);
    }
  }
  for (uint64_t i = b; i < e && i < 8; i++)
    atomic_store(&c->who[i], pthread_equal(pthread_self(), c->caller) ? 0 : 1);
  return 0;
}

/* L = 7, G = 1, 2 workers: the caller's home tasks are 0, 2, 4, 6 and worker 1's 1, 3, 5. Task 0
 * waits until 2 and 4 have run, so worker 1 drains its queue and turns thief while the caller
 * still runs task 0 with 2, 4 and 6 left: it takes 2 and 4 and leaves 6, the caller's last, to
 * the caller (run_tasks: a thief leaves a joined owner its last task, so that a task's rows do
 * not move to the other core in launches that repeat; before, worker 1 also took 6). A launch in
 * which worker 1 did not join in time (it ran nothing), or in which the caller came late and the
 * worker took task 0 (seen on a loaded 2-core CI machine), says nothing and is repeated. */
static void test_thief_leaves_a_joined_owner_its_last_task(void **state) {
  (void)state;
  xir_runtime_options o;
  xir_runtime_options_default(&o);
  o.workers = 2;
  o.wait = XIR_WAIT_SPIN;
  xir_runtime *rt;
  xir_diag d;
  assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_OK);
  int checked = 0;
  for (int attempt = 0; attempt < 100 && checked < 3; attempt++) {
    who_ctx c;
    for (int i = 0; i < 8; i++) atomic_init(&c.who[i], -1);
    c.caller = pthread_self();
    c.wait_ms = 200;
    xir_launch_stats st;
    assert_int_equal(xir_runtime_launch(rt, who_fn, &c, 7, 1, 2, &st, &d), XIR_OK);
    for (int i = 0; i < 7; i++) assert_true(atomic_load(&c.who[i]) >= 0);
    if (st.tasks_per_worker[1] == 0 || atomic_load(&c.who[1]) != 1) continue; /* not joined in time */
    if (atomic_load(&c.who[0]) != 0) continue; /* the caller came late: its task 0 was stolen */
    if (atomic_load(&c.who[2]) != 1) continue; /* worker 1 came late: no thief while 0 ran */
    assert_int_equal(atomic_load(&c.who[6]), 0); /* the caller's last task stays with it */
    assert_int_equal(atomic_load(&c.who[4]), 1); /* while two or more were left: stolen */
    assert_int_equal(st.steals, 2);
    checked++;
  }
  assert_int_equal(checked, 3);
  xir_runtime_destroy(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resolve_follows_documented_formulas),
      cmocka_unit_test(test_zero_blocks_is_a_noop),
      cmocka_unit_test(test_every_block_runs_exactly_once_with_consistent_counters),
      cmocka_unit_test(test_guarded_output_written_once_and_sentinels_intact),
      cmocka_unit_test(test_outputs_identical_across_every_grain_and_worker_count),
      cmocka_unit_test(test_thief_leaves_a_joined_owner_its_last_task),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

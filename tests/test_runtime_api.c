/* test_runtime_api.c — runtime lifecycle and argument checking: create/destroy cycles under every
 * wait policy, bad input (NULL function, zero or absurd pool sizes, bad policies), wait-policy
 * switching, and the wake-cost measurement (its values are checked for sanity, never for speed). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "xir_runtime.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

typedef struct sum_ctx {
  _Atomic uint64_t sum;
} sum_ctx;

static int sum_fn(void *vctx, uint64_t b, uint64_t e) {
  sum_ctx *c = vctx;
  uint64_t s = 0;
  for (uint64_t i = b; i < e; i++) s += i + 1;
  atomic_fetch_add_explicit(&c->sum, s, memory_order_relaxed);
  return 0;
}

static void cycles(xir_wait_policy p, uint32_t spin_us) {
  const int n = 200;
  for (int i = 0; i < n; i++) {
    uint32_t workers = 1 + (uint32_t)(i % 8);
    xir_runtime_options o = {workers, p, spin_us};
    xir_runtime *rt = NULL;
    xir_diag d;
    assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_OK);
    assert_int_equal(xir_runtime_workers(rt), workers);
    if (i % 3 != 0) { /* some runtimes are destroyed without ever launching */
      sum_ctx c = {0};
      uint64_t L = 1 + (uint64_t)(i % 50);
      assert_int_equal(xir_runtime_launch(rt, sum_fn, &c, L, 1, 0, NULL, &d), XIR_OK);
      assert_int_equal(atomic_load(&c.sum), L * (L + 1) / 2);
    }
    xir_runtime_destroy(rt);
  }
}

static void test_create_destroy_cycles_spin(void **state) {
  (void)state;
  cycles(XIR_WAIT_SPIN, 0);
}
static void test_create_destroy_cycles_sleep(void **state) {
  (void)state;
  cycles(XIR_WAIT_SLEEP, 0);
}
static void test_create_destroy_cycles_spin_then_sleep(void **state) {
  (void)state;
  cycles(XIR_WAIT_SPIN_THEN_SLEEP, 30);
}

static void test_default_options_and_null_options_create(void **state) {
  (void)state;
  xir_runtime_options o;
  xir_runtime_options_default(&o);
  assert_true(o.workers >= 1 && o.workers <= XIR_RUNTIME_MAX_WORKERS);
  assert_int_equal(o.wait, XIR_WAIT_SPIN_THEN_SLEEP);
  assert_int_equal(o.spin_us, 50);
  xir_runtime *rt = NULL;
  assert_int_equal(xir_runtime_create(NULL, &rt, NULL), XIR_OK);
  assert_int_equal(xir_runtime_workers(rt), o.workers);
  sum_ctx c = {0};
  assert_int_equal(xir_runtime_launch(rt, sum_fn, &c, 1000, 0, 0, NULL, NULL), XIR_OK);
  assert_int_equal(atomic_load(&c.sum), 1000ull * 1001 / 2);
  xir_runtime_destroy(rt);
  xir_runtime_destroy(NULL);
}

static void test_bad_input_returns_clear_errors(void **state) {
  (void)state;
  xir_diag d;
  xir_runtime *rt = NULL;
  xir_runtime_options o = {0, XIR_WAIT_SPIN_THEN_SLEEP, 50};
  xir_diag_clear(&d);
  assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_ERR_INVALID_ARG);
  assert_null(rt);
  assert_int_equal(d.status, XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "pool of 0 workers"));
  o.workers = XIR_RUNTIME_MAX_WORKERS + 1;
  assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_ERR_INVALID_ARG);
  o.workers = UINT32_MAX;
  assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_ERR_INVALID_ARG);
  assert_null(rt);
  o.workers = 2;
  o.spin_us = XIR_RUNTIME_MAX_SPIN_US + 1;
  assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "spin window"));
  o.spin_us = 10;
  o.wait = (xir_wait_policy)7;
  assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "wait policy"));
  o.wait = XIR_WAIT_SLEEP;
  assert_int_equal(xir_runtime_create(&o, NULL, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_runtime_create(&o, &rt, &d), XIR_OK);

  sum_ctx c = {0};
  assert_int_equal(xir_runtime_launch(rt, NULL, &c, 10, 0, 0, NULL, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "block function is NULL"));
  assert_int_equal(xir_runtime_launch(NULL, sum_fn, &c, 10, 0, 0, NULL, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(atomic_load(&c.sum), 0);

  xir_batch *b = NULL;
  assert_int_equal(xir_batch_create(NULL, &b, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_batch_create(rt, NULL, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_batch_create(rt, &b, &d), XIR_OK);
  assert_int_equal(xir_batch_record(b, NULL, &c, 10, 0, 0, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_batch_record(NULL, sum_fn, &c, 10, 0, 0, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_batch_count(b), 0);
  assert_int_equal(xir_runtime_submit(rt, NULL, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_runtime_submit(NULL, b, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_runtime_submit(rt, b, &d), XIR_OK); /* an empty batch is fine */
  static xir_launch_stats st;
  assert_int_equal(xir_batch_stats(b, 0, &st, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "out of range"));

  /* a batch of another runtime */
  xir_runtime *rt2 = NULL;
  o.workers = 1;
  assert_int_equal(xir_runtime_create(&o, &rt2, &d), XIR_OK);
  assert_int_equal(xir_batch_record(b, sum_fn, &c, 10, 0, 0, &d), XIR_OK);
  assert_int_equal(xir_runtime_submit(rt2, b, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "another runtime"));
  /* a single-worker pool has nothing to wake; every launch runs on the caller */
  xir_wake_cost wc;
  assert_int_equal(xir_runtime_measure_wake(rt2, 5, &wc, &d), XIR_ERR_UNSUPPORTED);
  assert_int_equal(xir_runtime_launch(rt2, sum_fn, &c, 100, 1, 0, &st, &d), XIR_OK);
  assert_true(st.shape.caller_path);
  xir_runtime_destroy(rt2);

  assert_int_equal(xir_runtime_measure_wake(NULL, 5, &wc, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_runtime_measure_wake(rt, 5, NULL, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_runtime_set_wait(rt, (xir_wait_policy)-1, 0, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_runtime_set_wait(NULL, XIR_WAIT_SPIN, 0, &d), XIR_ERR_INVALID_ARG);

  xir_launch_shape s;
  assert_int_equal(xir_launch_resolve(0, 10, 0, 0, &s, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_launch_resolve(XIR_RUNTIME_MAX_WORKERS + 1, 10, 0, 0, &s, &d),
                   XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_launch_resolve(4, 10, 0, 0, NULL, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_runtime_workers(NULL), 0);

  xir_batch_destroy(b);
  xir_batch_destroy(NULL);
  xir_runtime_destroy(rt);
}

static void test_wait_policy_switches_while_running(void **state) {
  (void)state;
  xir_runtime_options o = {4, XIR_WAIT_SPIN_THEN_SLEEP, 100};
  xir_runtime *rt = NULL;
  assert_int_equal(xir_runtime_create(&o, &rt, NULL), XIR_OK);
  const xir_wait_policy ps[] = {XIR_WAIT_SPIN, XIR_WAIT_SLEEP, XIR_WAIT_SPIN_THEN_SLEEP,
                                XIR_WAIT_SPIN_THEN_SLEEP};
  const uint32_t us[] = {0, 0, 0, 5};
  for (int r = 0; r < 40; r++) {
    xir_wait_policy p = ps[r % 4];
    assert_int_equal(xir_runtime_set_wait(rt, p, us[r % 4], NULL), XIR_OK);
    xir_wait_policy q;
    uint32_t u;
    xir_runtime_get_wait(rt, &q, &u);
    assert_int_equal(q, p);
    assert_int_equal(u, us[r % 4]);
    for (int k = 0; k < 20; k++) {
      sum_ctx c = {0};
      uint64_t L = 1 + (uint64_t)(k * 7 % 64);
      assert_int_equal(xir_runtime_launch(rt, sum_fn, &c, L, (uint32_t)(k % 3), 0, NULL, NULL),
                       XIR_OK);
      assert_int_equal(atomic_load(&c.sum), L * (L + 1) / 2);
    }
  }
  xir_runtime_destroy(rt);
}

static void test_measure_wake_reports_finite_nonnegative_figures_and_restores_policy(void **state) {
  (void)state;
  xir_runtime_options o = {3, XIR_WAIT_SPIN_THEN_SLEEP, 20};
  xir_runtime *rt = NULL;
  assert_int_equal(xir_runtime_create(&o, &rt, NULL), XIR_OK);
  xir_wake_cost wc;
  xir_diag d;
  assert_int_equal(xir_runtime_measure_wake(rt, UNDER_TSAN ? 5 : 31, &wc, &d), XIR_OK);
  assert_int_equal(wc.samples, UNDER_TSAN ? 5 : 31);
  const double v[] = {wc.caller_ns, wc.spin_roundtrip_ns, wc.sleep_roundtrip_ns, wc.spin_wake_ns,
                      wc.sleep_wake_ns};
  for (int i = 0; i < 5; i++) assert_true(isfinite(v[i]) && v[i] >= 0.0);
  assert_true(wc.spin_roundtrip_ns > 0.0 && wc.sleep_roundtrip_ns > 0.0);
  xir_wait_policy p;
  uint32_t us;
  xir_runtime_get_wait(rt, &p, &us);
  assert_int_equal(p, XIR_WAIT_SPIN_THEN_SLEEP);
  assert_int_equal(us, 20);
  sum_ctx c = {0};
  assert_int_equal(xir_runtime_launch(rt, sum_fn, &c, 300, 0, 0, NULL, NULL), XIR_OK);
  assert_int_equal(atomic_load(&c.sum), 300ull * 301 / 2);
  xir_runtime_destroy(rt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_input_returns_clear_errors),
      cmocka_unit_test(test_default_options_and_null_options_create),
      cmocka_unit_test(test_create_destroy_cycles_spin),
      cmocka_unit_test(test_create_destroy_cycles_sleep),
      cmocka_unit_test(test_create_destroy_cycles_spin_then_sleep),
      cmocka_unit_test(test_wait_policy_switches_while_running),
      cmocka_unit_test(test_measure_wake_reports_finite_nonnegative_figures_and_restores_policy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

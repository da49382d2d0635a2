/* test_choice.c — the service choice at launch time (src/session/choice.h): which plans get
 * one, which service it launches on as measurements arrive, how often it explores the other,
 * how a slow outlier is damped, and that a session's outputs are the same bits whichever
 * service runs a launch. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "session/choice.h"
#include "xir_session.h"

static void die(const xir_diag *d) { fail_msg("%s", d->msg); }

/* A plan of swiglu 1x4096 on 2 workers with ns-like coefficients (activation 200 ns) and the
 * grain searched: it has pool and caller entries of its first candidate. */
static xir_plan *small_plan(void) {
  xir_program *p;
  xir_shape s;
  xir_diag d;
  if (xir_kernel_load("swiglu", &p, &d) || xir_shape_parse(p, "R=1,C=4096", &s, &d)) die(&d);
  xir_calibration cal = {.ns_per_arith = 0.03, .ns_per_byte = 0.008, .ns_per_block = 0.24,
                         .ns_per_task = 1, .ns_activation = 200, .ns_per_math = 0.14};
  xir_cost_coefficients c;
  xir_cost_coefficients_from_calibration(&cal, &c);
  xir_plan_options o;
  xir_plan_options_base(&o);
  o.local_lanes = 0;
  o.search_task_grain = 1;
  o.workers = 2;
  o.coefficients = &c;
  xir_plan *pl;
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  xir_program_free(p);
  return pl;
}

static void test_adaptive_only_for_ns_costs_with_both_services(void **state) {
  (void)state;
  xir_plan *pl = small_plan();
  xir__choice c;
  xir__choice_init(&c, pl, 0);
  assert_false(c.adaptive); /* priors or a custom policy: not ns */
  int s, t;
  assert_int_equal(xir__choice_next(&c, &s, &t), pl->entries[0].work.grain);
  assert_false(t);
  xir__choice_init(&c, pl, 1);
  assert_true(c.adaptive);
  assert_true(c.grain[1] == UINT32_MAX || c.grain[1] >= pl->entries[0].work.blocks);
  assert_true(c.grain[0] < pl->entries[0].work.blocks);
  assert_int_equal(c.plan_service, pl->entries[0].work.active >= 2 ? 0 : 1);
  xir_plan_free(pl);
}

/* Counts the services of `n` launches, noting pool_ns / caller_ns for the timed ones. */
static void drive(xir__choice *c, int n, double pool_ns, double caller_ns, int *count) {
  count[0] = count[1] = 0;
  for (int i = 0; i < n; i++) {
    int s, t;
    uint32_t g = xir__choice_next(c, &s, &t);
    assert_int_equal(g, c->grain[s]);
    count[s]++;
    if (t) xir__choice_note_launch(c, s, t, s == 0 ? pool_ns : caller_ns);
  }
}

/* Over n launches (a multiple of the period, which stays put): exactly n / period runs of
 * xir__choice_run launches explore the other service. */
static void expect_cadence(xir__choice *c, double pool_ns, double caller_ns, int other) {
  uint64_t per = xir__choice_period(c), run = xir__choice_run(c);
  int k[2];
  drive(c, (int)(4 * per), pool_ns, caller_ns, k);
  assert_int_equal(xir__choice_period(c), per);
  assert_int_equal(k[other], (int)(4 * run));
}

static void test_follows_the_faster_service_and_explores(void **state) {
  (void)state;
  xir_plan *pl = small_plan();
  xir__choice c;
  xir__choice_init(&c, pl, 1);
  int k[2];
  assert_int_equal(xir__choice_run(&c), 8); /* nothing measured: 8 */
  /* the caller path measures faster: after the first exploration of it, it runs nearly all */
  drive(&c, 4096, 700, 600, k);
  assert_true(k[1] > 3400); /* the plan's service until launch 248, then explorations */
  assert_true(k[0] >= 248 + 64); /* explorations of the pool continue */
  assert_true(xir__choice_average(&c, 1) == 600);
  /* runs cover 64 us of the faster service (at most 64 launches): 64 of 600 ns */
  assert_int_equal(xir__choice_run(&c), 64);
  /* an exploration costs 64 x 100 ns over the caller: 1/64 of a period needs 1024 launches */
  expect_cadence(&c, 700, 600, 0);
  assert_int_equal(xir__choice_period(&c), 1024);
  /* the machine changes: the pool is now faster; within a few periods the choice follows */
  drive(&c, 8192, 500, 600, k);
  assert_true(k[0] > 6000); /* the next exploration (within 1024 launches) finds it */
  drive(&c, 4096, 500, 600, k);
  expect_cadence(&c, 500, 600, 1); /* steady state: only the explorations */
  /* the other service much slower (> 1.3x): at least 2048 launches a period */
  xir__choice_note(&c, 0, 200);
  drive(&c, 16384, 200, 600, k);
  assert_true(xir__choice_period(&c) >= 2048);
  expect_cadence(&c, 200, 600, 1);
  /* a long kernel on the caller: pool runs of 4 (64 us of the caller) raised to 8 */
  xir__choice_init(&c, pl, 1);
  drive(&c, 4096, 25000, 16000, k);
  assert_int_equal(xir__choice_run(&c), 8);
  expect_cadence(&c, 25000, 16000, 0);
  /* ... and of 32 at 2 us (no more than 64 us) */
  xir__choice_init(&c, pl, 1);
  drive(&c, 4096, 2500, 2000, k);
  assert_int_equal(xir__choice_run(&c), 32);
  expect_cadence(&c, 2500, 2000, 0);
  xir_plan_free(pl);
}

/* Like drive, but the first launch on the pool after a caller launch pays for waking it. */
static void drive_wake(xir__choice *c, int n, double wake_ns, double pool_ns, double caller_ns,
                       int *count) {
  count[0] = count[1] = 0;
  int prev = 1;
  for (int i = 0; i < n; i++) {
    int s, t;
    xir__choice_next(c, &s, &t);
    count[s]++;
    double ns = s == 1 ? caller_ns : prev == 1 ? wake_ns + pool_ns : pool_ns;
    if (t) xir__choice_note_launch(c, s, t, ns);
    prev = s;
  }
}

/* A 0.12 us kernel whose pool exploration costs a wake (25 us) and 64 x 1 us: exploring every
 * 2048 launches would add 40 ns a launch (33 %) over staying on the caller; the period grows until an exploration costs
 * at most 1/64 of the period's launches over the same launches on the caller, and comes back
 * when exploring is cheap again. */
static void test_exploration_period_follows_its_cost(void **state) {
  (void)state;
  xir_plan *pl = small_plan();
  xir__choice c;
  xir__choice_init(&c, pl, 1);
  assert_int_equal(xir__choice_period(&c), 256); /* nothing measured */
  assert_true(xir__choice_run_cost(&c) < 0);
  int k[2];
  drive_wake(&c, 1 << 16, 25000, 1000, 120, k);
  assert_int_equal(xir__choice_run(&c), 64);
  assert_true(xir__choice_run_cost(&c) >= 25000 + 64 * 1000 - 1e-9);
  /* 64 x (89000 - 64 x 120) / 120 = 43371 -> 65536, the cap */
  assert_int_equal(xir__choice_period(&c), 65536);
  drive_wake(&c, 1 << 17, 25000, 1000, 120, k);
  assert_int_equal(k[0], 2 * 64);
  /* the pool's explorations become cheap (no wake, 150 ns, within 1.3x): after the next one,
   * 64 x (64 x 150 - 64 x 120) = 122880 = 1024 x 120 */
  drive_wake(&c, 1 << 17, 0, 150, 120, k);
  assert_true(xir__choice_run_cost(&c) <= 64 * 150 + 1e-9);
  assert_int_equal(xir__choice_period(&c), 1024);
  xir_plan_free(pl);
}

static void test_a_slow_outlier_does_not_decide(void **state) {
  (void)state;
  xir_plan *pl = small_plan();
  xir__choice c;
  xir__choice_init(&c, pl, 1);
  xir__choice_note(&c, 0, 500);
  xir__choice_note(&c, 1, 700);
  xir__choice_note(&c, 0, 1e6); /* a descheduled launch */
  assert_true(xir__choice_average(&c, 0) <= 500 * (1 + 1.0 / 16) + 1e-9);
  xir__choice_note(&c, 0, 450); /* faster: taken at once */
  assert_true(xir__choice_average(&c, 0) == 450);
  xir__choice_note(&c, 0, -1);
  xir__choice_note(&c, 0, NAN);
  assert_true(xir__choice_average(&c, 0) == 450);
  int s, t, pool = 0;
  for (int i = 0; i < 200; i++) {
    xir__choice_next(&c, &s, &t);
    pool += s == 0;
  }
  assert_int_equal(pool, 200); /* 450 < 700 and no exploration before launch 248 */
  xir_plan_free(pl);
}

/* Through a session: many launches of a tiny kernel (both services get used: the explorations)
 * give the same bits every time. */
static void test_session_outputs_do_not_depend_on_the_service(void **state) {
  (void)state;
  xir_session *s;
  xir_diag d;
  xir_session_options so = {0};
  so.workers = 2;
  if (xir_session_create(&so, &s, &d)) die(&d);
  enum { N = 1000 };
  float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *y = malloc(N * sizeof *y),
        *y0 = malloc(N * sizeof *y0);
  for (int i = 0; i < N; i++) {
    a[i] = (float)((i * 37) % 101) / 17.0f - 3.0f;
    b[i] = (float)((i * 13) % 29) / 7.0f - 2.0f;
  }
  xir_arg args[3] = {{.in = a}, {.in = b}, {.out = y0}};
  if (xir_session_run(s, "swiglu", "R=1,C=1000", args, 3, &d)) die(&d);
  args[2].out = y;
  for (int it = 0; it < 600; it++) {
    memset(y, 0xff, N * sizeof *y);
    if (xir_session_run(s, "swiglu", "R=1,C=1000", args, 3, &d)) die(&d);
    assert_memory_equal(y, y0, N * sizeof *y);
  }
  char *text;
  if (xir_session_explain(s, "swiglu", "R=1,C=1000", &text, &d)) die(&d);
  xir_free(text);
  free(a);
  free(b);
  free(y);
  free(y0);
  xir_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_adaptive_only_for_ns_costs_with_both_services),
      cmocka_unit_test(test_follows_the_faster_service_and_explores),
      cmocka_unit_test(test_exploration_period_follows_its_cost),
      cmocka_unit_test(test_a_slow_outlier_does_not_decide),
      cmocka_unit_test(test_session_outputs_do_not_depend_on_the_service),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

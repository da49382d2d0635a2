/* test_choice.c — the service choice at launch time (src/session/choice.h): which plans get
 * one, which service it launches on as measurements arrive, how often it explores the other,
 * how a slow outlier is damped, and that a session's outputs are the same bits whichever
 * service runs a launch; the same for the store choice (streaming or regular stores near the
 * last-level cache). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lower/stream.h"
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


/* The footprints whose stores are chosen at launch time: from half the smaller of the
 * threshold and the cache to four times the larger. */
static void test_store_zone(void **state) {
  (void)state;
  const int64_t M = 1 << 20;
  assert_false(xir__stream_choice_zone((uint64_t)(16 * M - 1), 45 * M, 32 * M));
  assert_true(xir__stream_choice_zone((uint64_t)(16 * M), 45 * M, 32 * M));
  assert_true(xir__stream_choice_zone((uint64_t)(180 * M), 45 * M, 32 * M));
  assert_false(xir__stream_choice_zone((uint64_t)(180 * M + 1), 45 * M, 32 * M));
  assert_true(xir__stream_choice_zone((uint64_t)(4 * M), 8 * M, 0)); /* cache unknown */
  assert_false(xir__stream_choice_zone((uint64_t)(33 * M), 8 * M, 0));
  assert_true(xir__stream_choice_zone((uint64_t)(4 * M), 0, 8 * M)); /* threshold unknown */
  assert_false(xir__stream_choice_zone((uint64_t)(4 * M), 0, 0));
}

/* The store choice's arms: arm 0 (the rule's) until launch 96, then 32 launches of arm 1, the
 * last 8 timed; the faster arm from then on, the other explored in runs of 32. */
static void test_store_choice_explores_in_long_runs(void **state) {
  (void)state;
  xir__choice c;
  xir__choice_init_store(&c);
  assert_true(c.adaptive);
  assert_int_equal(xir__choice_run(&c), 32);
  assert_int_equal(xir__choice_period(&c), 128);
  int s, t, timed1 = 0;
  for (int i = 0; i < 128; i++) {
    xir__choice_next(&c, &s, &t);
    assert_int_equal(s, i >= 96); /* the rule's arm, then the first exploration */
    if (s == 1 && (t & XIR__CHOICE_TIMED)) timed1++, assert_true(i >= 120);
    /* arm 1 is faster once it has warmed up (its first launches after arm 0 are slow) */
    if (t) xir__choice_note_launch(&c, s, t, s == 0 ? 600e3 : i < 110 ? 900e3 : 450e3);
  }
  assert_int_equal(timed1, 8);
  assert_true(xir__choice_average(&c, 1) == 450e3);
  assert_true(xir__choice_average(&c, 0) == 600e3);
  assert_int_equal(xir__choice_run(&c), 32);
  uint64_t per = xir__choice_period(&c);
  assert_true(per >= 256);
  int k[2] = {0, 0};
  drive(&c, (int)per, 600e3, 450e3, k);
  assert_int_equal(k[0], 32); /* one exploration of the rule's arm a period */
  /* an arm's estimate is the median of its last 8 samples: one fast launch among slow ones
   * does not make it the faster (the service choice would take the fast one at once) */
  xir__choice_init_store(&c);
  xir__choice_note(&c, 0, 600e3);
  xir__choice_note(&c, 1, 400e3);
  for (int i = 0; i < 4; i++) xir__choice_note(&c, 1, 1000e3);
  assert_true(xir__choice_average(&c, 1) == 1000e3);
  for (int i = 0; i < 8; i++) xir__choice_note(&c, 1, 500e3 + 1e3 * i); /* the last 8 only */
  assert_true(xir__choice_average(&c, 1) == 503.5e3);
}

/* Through a session with the priors' plans (no service choice), in the zone (the threshold set
 * to 512 KiB: rmsnorm 256x1024 and layernorm 300x1000 span about 1 MiB, whatever the cache):
 * both stores get measured, and every launch
 * gives the same bits — rows aligned for the streaming stores and rows that are not (through
 * the row buffer). With XIR_STREAM_STORES's `rule` the stores are not chosen. */
static void test_session_outputs_do_not_depend_on_the_stores(void **state) {
  (void)state;
  int64_t old = xir__stream_threshold_set(512 << 10);
  const char *kern[2] = {"rmsnorm", "layernorm"}, *shape[2] = {"R=256,C=1024", "R=300,C=1000"};
  for (int mode = -1; mode <= 2; mode += 3) {
    xir__stream_stores_set(mode);
    xir_session *s;
    xir_diag d;
    xir_session_options so = {0};
    so.workers = 2;
    /* the priors: no service choice at launch time (the store choice is made only without it) */
    xir_plan_options po;
    xir_plan_options_base(&po);
    so.plan = &po;
    if (xir_session_create(&so, &s, &d)) die(&d);
    for (int q = 0; q < 2; q++) {
      int C = q ? 1000 : 1024, R = q ? 300 : 256, n = R * C;
      float *x = malloc((size_t)n * sizeof *x), *w = malloc((size_t)C * sizeof *w),
            *b = malloc((size_t)C * sizeof *b), *y = malloc((size_t)n * sizeof *y),
            *y0 = malloc((size_t)n * sizeof *y0);
      for (int i = 0; i < n; i++) x[i] = (float)((i * 37) % 101) / 17.0f - 2.5f;
      for (int i = 0; i < C; i++) w[i] = 0.5f + (float)(i % 7) / 8, b[i] = (float)(i % 5) / 4;
      xir_arg a0[3] = {{.in = x}, {.in = w}, {.out = y0}};
      xir_arg a1[4] = {{.in = x}, {.in = w}, {.in = b}, {.out = y0}};
      xir_arg *args = q ? a1 : a0;
      int na = q ? 4 : 3;
      if (xir_session_run(s, kern[q], shape[q], args, na, &d)) die(&d);
      args[na - 1].out = y;
      for (int it = 0; it < 300; it++) {
        memset(y, 0xff, (size_t)n * sizeof *y);
        if (xir_session_run(s, kern[q], shape[q], args, na, &d)) die(&d);
        if (memcmp(y, y0, (size_t)n * sizeof *y))
          fail_msg("%s %s: launch %d differs", kern[q], shape[q], it);
      }
      char *text;
      if (xir_session_explain(s, kern[q], shape[q], &text, &d)) die(&d);
      const char *line = strstr(text, "stores at launch time");
      if (mode == -1) {
        if (!line) fail_msg("%s: no store choice:\n%s", kern[q], text);
        /* both measured after 300 launches (the first exploration ends at launch 128) */
        char first[512];
        snprintf(first, sizeof first, "%s", line);
        char *end = strchr(first, '\n');
        assert_non_null(end);
        *end = 0;
        if (strstr(first, "-1 ns")) fail_msg("%s: not both measured: %s", kern[q], first);
      } else {
        assert_null(line);
      }
      xir_free(text);
      free(x), free(w), free(b), free(y), free(y0);
    }
    xir_session_destroy(s);
  }
  xir__stream_stores_set(-1);
  xir__stream_threshold_set(old);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_adaptive_only_for_ns_costs_with_both_services),
      cmocka_unit_test(test_follows_the_faster_service_and_explores),
      cmocka_unit_test(test_exploration_period_follows_its_cost),
      cmocka_unit_test(test_a_slow_outlier_does_not_decide),
      cmocka_unit_test(test_session_outputs_do_not_depend_on_the_service),
      cmocka_unit_test(test_store_zone),
      cmocka_unit_test(test_store_choice_explores_in_long_runs),
      cmocka_unit_test(test_session_outputs_do_not_depend_on_the_stores),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

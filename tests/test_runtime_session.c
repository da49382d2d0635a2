/* test_runtime_session.c — several threads calling one session at once (xir_session.h's
 * threading contract; in the ThreadSanitizer set of scripts/test.sh, which selects `runtime`):
 * threads race on the first prepare of the same (kernel, shape) and on different ones, then keep
 * launching; every output of every call is checked against the fp64 oracle with sentinels. More
 * threads than the session has counter shards launch a one-task kernel at once: every launch is
 * counted (session.c, SHARDS). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "check/check.h"
#include "xir_session.h"

enum { THREADS = 4, ROUNDS = 12, MANY = 24, MANY_ROUNDS = 40 };

typedef struct job {
  xir_session *s;
  const char *kernel, *shape;
  int rounds;
  xir_case c;
  int failures;
  char msg[1536];
} job;

static void *worker(void *arg) {
  job *j = arg;
  xir_tolerance tol = xir__kernel_tolerance(j->kernel);
  for (int r = 0; r < j->rounds && !j->failures; r++) {
    xir_diag d;
    xir__case_reset_outputs(&j->c);
    if (xir_session_run(j->s, j->kernel, j->shape, j->c.args, xir_program_num_params(j->c.p), &d)) {
      j->failures++;
      snprintf(j->msg, sizeof j->msg, "%s %s: %s", j->kernel, j->shape, d.msg);
      break;
    }
    if (!xir__case_sentinels_ok(&j->c)) {
      j->failures++;
      snprintf(j->msg, sizeof j->msg, "%s %s round %d: a sentinel was overwritten", j->kernel,
               j->shape, r);
    }
    for (int q = 0; q < xir_program_num_params(j->c.p); q++) {
      if (j->c.ref[q] && !xir__case_compare(&j->c, q, tol).pass) {
        j->failures++;
        snprintf(j->msg, sizeof j->msg, "%s %s round %d: output differs from the oracle",
                 j->kernel, j->shape, r);
      }
    }
  }
  return NULL;
}

/* A session of 2 workers with the priors and the defaults' search (no calibration: this test
 * also runs under TSan). */
static xir_session *new_session(void) {
  xir_plan_options po;
  xir_plan_options_base(&po);
  po.local_lanes = 0;
  po.search_task_grain = 1;
  xir_session_options o = {.workers = 2, .plan = &po};
  xir_session *s;
  xir_diag d;
  if (xir_session_create(&o, &s, &d)) fail_msg("%s", d.msg);
  return s;
}

/* Job j: `rounds` runs of kernel at shape on s, with the case's own program (the session
 * interns its copy), inputs of seed `seed` and the oracle's outputs. */
static void job_init(job *j, xir_session *s, const char *kernel, const char *shape, int rounds,
                     uint64_t seed) {
  memset(j, 0, sizeof *j);
  j->s = s;
  j->kernel = kernel;
  j->shape = shape;
  j->rounds = rounds;
  xir_program *p;
  xir_shape sh;
  xir_diag d;
  if (xir_kernel_load(kernel, &p, &d) || xir_shape_parse(p, shape, &sh, &d) ||
      xir__case_init(&j->c, p, &sh, seed, &d) || xir__case_oracle(&j->c, &d))
    fail_msg("%s", d.msg);
}

/* Starts one thread a job, joins them, fails on the first job that failed. */
static void run_jobs(job *jobs, int n) {
  pthread_t th[MANY];
  assert_true(n <= MANY);
  for (int t = 0; t < n; t++) assert_int_equal(pthread_create(&th[t], NULL, worker, &jobs[t]), 0);
  for (int t = 0; t < n; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < n; t++)
    if (jobs[t].failures) fail_msg("thread %d: %s", t, jobs[t].msg);
}

static void free_jobs(job *jobs, int n) {
  for (int t = 0; t < n; t++) {
    xir_program *p = (xir_program *)jobs[t].c.p;
    xir__case_free(&jobs[t].c);
    xir_program_free(p);
  }
}

static void test_concurrent_callers(void **state) {
  (void)state;
  xir_session *s = new_session();
  static const char *kernels[THREADS] = {"rmsnorm", "rmsnorm", "swiglu", "softmax_causal"};
  static const char *shapes[THREADS] = {"R=64,C=256", "R=64,C=256", "R=33,C=300", "R=40,C=72"};
  job jobs[THREADS];
  for (int t = 0; t < THREADS; t++) job_init(&jobs[t], s, kernels[t], shapes[t], ROUNDS, 100 + (uint64_t)t);
  run_jobs(jobs, THREADS);
  xir_session_stats st;
  xir_session_get_stats(s, &st);
  assert_int_equal(st.launches, THREADS * ROUNDS);
  assert_int_equal(st.prepared, 3); /* two threads shared one (kernel, shape) */
  assert_int_equal(st.programs, 3);
  assert_int_equal(st.hits + st.misses, THREADS * ROUNDS);
  assert_int_equal(st.misses, 3);
  free_jobs(jobs, THREADS);
  xir_session_destroy(s);
}

/* MANY threads (more than the session's SHARDS - 1 owned counter shards, so some share the
 * last one) launch rmsnorm 1x64 — one task, run on each calling thread at once — through
 * xir_session_run; the stats count every launch and every memo hit exactly. */
static void test_counters_many_threads(void **state) {
  (void)state;
  xir_session *s = new_session();
  static job jobs[MANY];
  for (int t = 0; t < MANY; t++) job_init(&jobs[t], s, "rmsnorm", "R=1,C=64", MANY_ROUNDS, 300 + (uint64_t)t);
  xir_diag d;
  /* prepared first, so that every thread's run is a launch of the same one-task kernel */
  if (xir_session_run(s, "rmsnorm", "R=1,C=64", jobs[0].c.args,
                      xir_program_num_params(jobs[0].c.p), &d))
    fail_msg("%s", d.msg);
  run_jobs(jobs, MANY);
  xir_session_stats st;
  xir_session_get_stats(s, &st);
  assert_int_equal(st.launches, MANY * MANY_ROUNDS + 1);
  assert_int_equal(st.misses, 1);
  assert_int_equal(st.hits + st.misses, MANY * MANY_ROUNDS + 1);
  free_jobs(jobs, MANY);
  xir_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_concurrent_callers),
                                     cmocka_unit_test(test_counters_many_threads)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* bench/runtime.c — micro-benchmarks of the CPU runtime (not a test; never run by CTest).
 *
 *   bench_runtime [reps]      (default 20001 samples per case)
 *
 * Prints, per case, the median, min and max over `reps` samples, in nanoseconds:
 *   caller path   : an empty launch with h = 1 (xir_runtime_launch, and a one-launch batch);
 *                   each sample is the mean of 64 back-to-back launches (clock resolution)
 *   spin 2-task   : an empty 2-task launch (L = 2, G = 1, H = 2), pool of 2, workers spinning —
 *                   the caller may steal worker 1's task if it is faster;
 *   spin rendezvous: the same, but both tasks wait until the other has started, so worker 1 must
 *                   really join (the true round trip through a spinning worker);
 *   sleep wake h  : a rendezvous of h tasks (L = h, G = 1, H = h) with every pool thread asleep on
 *                   its futex (XIR_WAIT_SLEEP), for h = 2 .. online CPUs;
 * and finally what xir_runtime_measure_wake reports. Each sample is timed separately with
 * CLOCK_MONOTONIC; nothing is excluded. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"
#include "xir_runtime.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void report(const char *name, double *v, size_t n) {
  double med = xir__median(v, n); /* sorts v */
  printf("%-44s median %9.1f ns   min %9.1f   max %11.1f   (n=%zu)\n", name, med, v[0], v[n - 1], n);
}

static int empty_fn(void *ctx, uint64_t b, uint64_t e) {
  (void)ctx; (void)b; (void)e;
  return 0;
}

typedef struct rendezvous {
  _Atomic uint32_t started;
  uint32_t need;
} rendezvous;

static int rendezvous_fn(void *ctx, uint64_t b, uint64_t e) {
  rendezvous *r = ctx;
  (void)b; (void)e;
  atomic_fetch_add(&r->started, 1);
  while (atomic_load(&r->started) < r->need) {
  }
  return 0;
}

static xir_runtime *make(uint32_t workers, xir_wait_policy p, uint32_t spin_us) {
  xir_runtime_options o = {workers, p, spin_us};
  xir_runtime *rt = NULL;
  xir_diag d;
  if (xir_runtime_create(&o, &rt, &d) != XIR_OK) {
    fprintf(stderr, "runtime create failed: %s\n", d.msg);
    exit(1);
  }
  return rt;
}

static void wait_all_asleep(void) {
  /* The pool exposes no "asleep" query; with XIR_WAIT_SLEEP a worker sleeps right after its last
   * launch, so a short pause suffices. */
  struct timespec ts = {0, 200000};
  nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  size_t reps = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 20001;
  if (reps < 3) reps = 3;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  double *v = malloc(reps * sizeof *v);
  if (!v) return 1;
  printf("bench_runtime: %zu samples per case, %ld online CPUs\n", reps, ncpu);

  /* caller path */
  {
    xir_runtime *rt = make(8, XIR_WAIT_SPIN_THEN_SLEEP, 50);
    for (size_t i = 0; i < reps; i++) {
      uint64_t t0 = now_ns();
      for (int k = 0; k < 64; k++) xir_runtime_launch(rt, empty_fn, NULL, 1, 0, 1, NULL, NULL);
      v[i] = (double)(now_ns() - t0) / 64.0;
    }
    report("caller path, xir_runtime_launch (L=1,H=1)", v, reps);
    static xir_launch_stats st;
    for (size_t i = 0; i < reps; i++) {
      uint64_t t0 = now_ns();
      for (int k = 0; k < 64; k++) xir_runtime_launch(rt, empty_fn, NULL, 100, 0, 1, &st, NULL);
      v[i] = (double)(now_ns() - t0) / 64.0;
    }
    report("caller path, with stats (L=100,H=1)", v, reps);
    xir_batch *b = NULL;
    xir_batch_create(rt, &b, NULL);
    xir_batch_record(b, empty_fn, NULL, 1, 0, 1, NULL);
    for (size_t i = 0; i < reps; i++) {
      uint64_t t0 = now_ns();
      for (int k = 0; k < 64; k++) xir_runtime_submit(rt, b, NULL);
      v[i] = (double)(now_ns() - t0) / 64.0;
    }
    report("caller path, one-launch batch submit", v, reps);
    xir_batch_destroy(b);
    xir_runtime_destroy(rt);
  }

  /* 2 spinning workers */
  {
    xir_runtime *rt = make(2, XIR_WAIT_SPIN, 0);
    for (int k = 0; k < 1000; k++) xir_runtime_launch(rt, empty_fn, NULL, 2, 1, 2, NULL, NULL);
    for (size_t i = 0; i < reps; i++) {
      uint64_t t0 = now_ns();
      xir_runtime_launch(rt, empty_fn, NULL, 2, 1, 2, NULL, NULL);
      v[i] = (double)(now_ns() - t0);
    }
    report("spin 2-task empty launch (pool 2)", v, reps);
    rendezvous r = {0, 2};
    for (size_t i = 0; i < reps; i++) {
      atomic_store(&r.started, 0);
      uint64_t t0 = now_ns();
      xir_runtime_launch(rt, rendezvous_fn, &r, 2, 1, 2, NULL, NULL);
      v[i] = (double)(now_ns() - t0);
    }
    report("spin 2-task rendezvous (pool 2)", v, reps);
    xir_runtime_destroy(rt);
  }
  /* the same with a pool of 8, H = 2 (spin then sleep: the 6 unused threads fall asleep) */
  {
    xir_runtime *rt = make(8, XIR_WAIT_SPIN_THEN_SLEEP, 1000);
    for (int k = 0; k < 1000; k++) xir_runtime_launch(rt, empty_fn, NULL, 2, 1, 2, NULL, NULL);
    for (size_t i = 0; i < reps; i++) {
      uint64_t t0 = now_ns();
      xir_runtime_launch(rt, empty_fn, NULL, 2, 1, 2, NULL, NULL);
      v[i] = (double)(now_ns() - t0);
    }
    report("spin 2-task empty launch (pool 8, H=2)", v, reps);
    xir_runtime_destroy(rt);
  }

  /* waking sleeping workers */
  {
    size_t sreps = reps > 2001 ? 2001 : reps;
    uint32_t maxh = ncpu < 2 ? 2 : (ncpu > 8 ? 8 : (uint32_t)ncpu);
    xir_runtime *rt = make(8, XIR_WAIT_SLEEP, 0);
    const uint32_t hs[] = {2, 3, 4, 6, 8};
    for (size_t hi = 0; hi < sizeof hs / sizeof hs[0] && hs[hi] <= maxh; hi++) {
      uint32_t h = hs[hi];
      rendezvous r = {0, h};
      for (size_t i = 0; i < sreps; i++) {
        wait_all_asleep();
        atomic_store(&r.started, 0);
        uint64_t t0 = now_ns();
        xir_runtime_launch(rt, rendezvous_fn, &r, h, 1, h, NULL, NULL);
        v[i] = (double)(now_ns() - t0);
      }
      char name[64];
      snprintf(name, sizeof name, "sleep wake, %u-task rendezvous (pool 8)", h);
      report(name, v, sreps);
    }
    for (size_t i = 0; i < sreps; i++) {
      wait_all_asleep();
      uint64_t t0 = now_ns();
      xir_runtime_launch(rt, empty_fn, NULL, 2, 1, 2, NULL, NULL);
      v[i] = (double)(now_ns() - t0);
    }
    report("sleep, 2-task empty launch (caller side)", v, sreps);
    xir_runtime_destroy(rt);
  }

  {
    xir_runtime *rt = make(8, XIR_WAIT_SPIN_THEN_SLEEP, 50);
    xir_wake_cost wc;
    xir_diag d;
    if (xir_runtime_measure_wake(rt, 1001, &wc, &d) == XIR_OK)
      printf("xir_runtime_measure_wake(1001): caller %.0f ns, spin round trip %.0f ns (wake %.0f), "
             "sleep round trip %.0f ns (wake %.0f)\n",
             wc.caller_ns, wc.spin_roundtrip_ns, wc.spin_wake_ns, wc.sleep_roundtrip_ns,
             wc.sleep_wake_ns);
    else
      printf("measure_wake: %s\n", d.msg);
    xir_runtime_destroy(rt);
  }
  free(v);
  return 0;
}

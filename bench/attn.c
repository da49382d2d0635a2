/* attn.c — attention-mapping candidates side by side with a streaming read of the same K and V
 * (docs/lowering.md, "The attention mapping"; issue 10's decode target).
 *
 *   bench_attn [rounds] [shape] [candidate ...]
 *
 * Default shape: decode, B=1,HQ=32,HKV=8,Q=1,K=4096,D=128,DV=128; default candidates: every
 * attention-mapping candidate the bridge offers at that shape. Every candidate is checked against the fp64 oracle (whole output, sentinels)
 * first. Then, round after round (the order reversed every other round), each candidate and the
 * probe run a batch of about 20 ms (tiles split evenly over the 2 workers); per entry the median
 * over rounds of the time per call, and the probe's time / the entry's time — the fraction of
 * the streaming floor reached — per round, its median and range. The probe: 2 workers on the runtime each read half of K and of V once (16
 * independent vector sums, so the loads are not latency-chained), as probe:stream does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check.h"
#include "util/util.h"
#include "xir_compile.h"
#include "xir_runtime.h"

enum { MAXV = 64 };

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int fail(const xir_diag *d) {
  char b[2048];
  fprintf(stderr, "bench_attn: %s\n", xir_diag_format(d, b, sizeof b));
  return 1;
}

typedef struct probe {
  const float *buf[2];
  size_t n[2];
  volatile float sink[2];
} probe;

typedef float v4 __attribute__((vector_size(16), aligned(4))); /* any x86-64: SSE2 */

/* block b of 2: half of each buffer, summed into 8 independent 4-float vectors */
static int probe_block(void *ctx, uint64_t b0, uint64_t b1) {
  probe *pr = ctx;
  for (uint64_t b = b0; b < b1; b++) {
    v4 acc[8] = {{0}};
    float tail = 0;
    for (int t = 0; t < 2; t++) {
      size_t lo = pr->n[t] / 2 * b, hi = b ? pr->n[t] : pr->n[t] / 2;
      const float *x = pr->buf[t];
      size_t i = lo;
      for (; i + 32 <= hi; i += 32)
        for (int a = 0; a < 8; a++) {
          v4 y;
          memcpy(&y, x + i + 4 * a, sizeof y);
          acc[a] += y;
        }
      for (; i < hi; i++) tail += x[i];
    }
    v4 s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    float sum = tail;
    for (int l = 0; l < 4; l++) sum += s[l];
    pr->sink[b] = sum;
  }
  return 0;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 15;
  if (rounds < 3) rounds = 3;
  const char *spec = argc > 2 ? argv[2] : "B=1,HQ=32,HKV=8,Q=1,K=4096,D=128,DV=128";
  xir_compiler_options o = {.no_kernel_cache = 1};
  xir_compiler *cc;
  xir_runtime *rt;
  xir_diag d;
  if (xir_compiler_create(&o, &cc, &d)) return fail(&d);
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  ro.workers = 2;
  if (xir_runtime_create(&ro, &rt, &d)) return fail(&d);
  xir_program *p;
  xir_shape s;
  if (xir_kernel_load("attention", &p, &d) || xir_shape_parse(p, spec, &s, &d)) return fail(&d);
  uint32_t W = xir_compiler_width(cc);
  xir_candidate cand[MAXV];
  int nv = 0;
  if (argc > 3) {
    for (int i = 3; i < argc && nv < MAXV; i++)
      if (xir_candidate_parse(p, &s, argv[i], W, &cand[nv++], &d)) return fail(&d);
  } else {
    xir_candidate *all;
    size_t n;
    if (xir_candidates(p, &s, W, &all, &n, &d)) return fail(&d);
    for (size_t i = 0; i < n && nv < MAXV; i++)
      if (all[i].attn_vec) cand[nv++] = all[i];
    xir_free(all);
  }
  xir_case c;
  if (xir__case_init(&c, p, &s, 1, &d) || xir__case_oracle(&c, &d)) return fail(&d);
  int out = xir_program_find_param(p, "o");
  const xir_kernel *k[MAXV];
  uint64_t slots[MAXV][XIR_MAX_ARG_SLOTS], blocks[MAXV];
  uint32_t G[MAXV];
  for (int v = 0; v < nv; v++) {
    G[v] = 0; /* the runtime's even split: one task per worker */
    if (xir_compile(cc, p, &s, &cand[v], &k[v], &d) ||
        xir_kernel_pack_launch(k[v], &s, c.args, slots[v], &blocks[v], &d))
      return fail(&d);
    xir__case_reset_outputs(&c);
    xir_launch_stats st;
    if (xir_runtime_launch(rt, (xir_block_fn)xir_kernel_entry(k[v]), slots[v], blocks[v], G[v], 2,
                           &st, &d))
      return fail(&d);
    char nm[160];
    xir_candidate_name(p, &cand[v], nm, sizeof nm);
    xir_compare r = xir__case_compare(&c, out, xir__kernel_tolerance("attention"));
    if (!r.pass || !xir__case_sentinels_ok(&c)) {
      fprintf(stderr, "bench_attn: %s %s does not match the oracle (%zu of %zu)\n", spec, nm,
              r.bad, r.n);
      return 1;
    }
  }
  probe pr = {{c.data[xir_program_find_param(p, "k")], c.data[xir_program_find_param(p, "v")]},
              {c.numel[xir_program_find_param(p, "k")], c.numel[xir_program_find_param(p, "v")]},
              {0, 0}};
  double *t = malloc(sizeof(double) * (size_t)rounds * (size_t)(nv + 1));
  int *reps = calloc((size_t)nv + 1, sizeof(int));
  for (int r = 0; r < rounds; r++)
    for (int vv = 0; vv <= nv; vv++) {
      int v = (r & 1) ? nv - vv : vv; /* v = nv: the probe */
      xir_block_fn fn = v == nv ? probe_block : (xir_block_fn)xir_kernel_entry(k[v]);
      void *ctx = v == nv ? (void *)&pr : (void *)slots[v];
      uint64_t nb = v == nv ? 2 : blocks[v];
      uint32_t g = v == nv ? 1 : G[v];
      if (!reps[v]) { /* calibrate a ~20 ms batch */
        double t0 = (double)xir__now_ns();
        xir_launch_stats st;
        xir_runtime_launch(rt, fn, ctx, nb, g, 2, &st, NULL);
        double one = (double)xir__now_ns() - t0;
        reps[v] = one > 2e7 ? 1 : (int)(2e7 / (one > 1 ? one : 1));
      }
      double t0 = (double)xir__now_ns();
      for (int i = 0; i < reps[v]; i++) {
        xir_launch_stats st;
        xir_runtime_launch(rt, fn, ctx, nb, g, 2, &st, NULL);
      }
      t[(size_t)v * (size_t)rounds + (size_t)r] = ((double)xir__now_ns() - t0) / reps[v] / 1e3;
    }
  /* the paired ratio per round (probe / entry), then medians */
  double *ratio = malloc(sizeof(double) * (size_t)rounds * (size_t)nv);
  for (int v = 0; v < nv; v++)
    for (int r = 0; r < rounds; r++)
      ratio[(size_t)v * (size_t)rounds + (size_t)r] =
          t[(size_t)nv * (size_t)rounds + (size_t)r] / t[(size_t)v * (size_t)rounds + (size_t)r];
  for (int v = 0; v < nv; v++) qsort(ratio + (size_t)v * (size_t)rounds, (size_t)rounds, sizeof(double), cmp_d);
  for (int v = 0; v <= nv; v++) qsort(t + (size_t)v * (size_t)rounds, (size_t)rounds, sizeof(double), cmp_d);
  double floor_us = t[(size_t)nv * (size_t)rounds + (size_t)rounds / 2];
  printf("%s, 2 workers, %d rounds: stream probe (K and V read once) %.1f us\n", spec, rounds,
         floor_us);
  for (int v = 0; v < nv; v++) {
    char nm[160];
    xir_candidate_name(p, &cand[v], nm, sizeof nm);
    double m = t[(size_t)v * (size_t)rounds + (size_t)rounds / 2];
    const double *q = ratio + (size_t)v * (size_t)rounds;
    printf("  %-48s %9.1f us  floor/time %.3f (paired per round: median %.3f, %.3f–%.3f)\n", nm,
           m, floor_us / m, q[rounds / 2], q[0], q[rounds - 1]);
  }
  free(t);
  free(ratio);
  free(reps);
  xir__case_free(&c);
  xir_program_free(p);
  xir_runtime_destroy(rt);
  xir_compiler_destroy(cc);
  return 0;
}

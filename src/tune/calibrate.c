/* calibrate.c — a service model measured on this machine: the analytic policy's coefficients in
 * nanoseconds instead of the report's uncalibrated priors.
 *
 *   activation  the spin round trip of waking one worker (xir_runtime_measure_wake)
 *   dispatch    per task on the pool path: (t(L=256, G=1, H=2) − activation) / 128 critical tasks
 *               for empty tasks, or, when larger, what a task that moves data costs: the row copy
 *               64×2048 (1 MiB, in the two L2s) on 2 workers with one row a task against two
 *               tasks, per extra critical task (31)
 *   memory      a row copy (memory only) at three footprints: 256 KiB (L2), 16 MiB (L3), 64 MiB
 *               (beyond; its rate applies from the last-level cache's size on): ns per byte
 *   arith       arith_probe 32×1024 (24 multiply-adds an element, in L2): ns per simple arithmetic unit
 *   math        gelu_residual 64×256 (tanh-bound, in L2): ns per unit of the math part
 *   hw math     hw_probe, 1/sqrt of 16384 elements (in L2): ns per unit of a root program's
 *               div/sqrt/rsqrt (the divider, not a polynomial: 0.78 ns where tanh's unit is 1.05
 *               on Zen 1)
 *   steps       reduce.sum and reduce.max over 64×1024 (in L2) with ℓ = W (one chain of 64 steps
 *               a row) and ℓ = 8W (8 steps): the time difference per step, by kind
 *   block       8 arithmetic units (not measured separately)
 *   stream      the row copy at 4 to 256 MiB on 2 workers with regular and with streaming
 *               stores: the footprint from which streaming pays (stream_probe)
 * With these, an objective is an estimate of the launch's wall time in ns, and the planner's
 * choice between the caller and the pool follows the machine. Legality is untouched: this only
 * produces coefficients. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check.h"
#include "lower/stream.h"
#include "tune/service.h"
#include "util/util.h"
#include "xir_compile.h"
#include "xir_plan.h"

static int empty_blocks(void *ctx, uint64_t b0, uint64_t b1) {
  (void)ctx;
  (void)b0;
  (void)b1;
  return 0;
}

/* Median ns of one launch (fn, ctx, L, G, H) over `reps` batches of `n` launches. */
static xir_status time_launch(xir_runtime *rt, xir_batch *b, const xir_kernel *k, xir_block_fn fn,
                              void *ctx, uint64_t L, uint32_t G, uint32_t H, int n, int reps,
                              double *out, xir_diag *d) {
  double t[64];
  xir_status st;
  /* a kernel's slots are told the split, as xir_session_launch does (xir_kernel_set_task_stride) */
  if (k && (st = xir_kernel_set_task_stride(
                k, ctx, xir_launch_task_stride(xir_runtime_workers(rt), L, G, H), d)))
    return st;
  if (reps > 64) reps = 64;
  for (int r = 0; r < reps; r++) {
    xir_batch_reset(b);
    for (int i = 0; i < n; i++)
      if ((st = xir_batch_record(b, fn, ctx, L, G, H, d))) return st;
    double t0 = xir__now_ns();
    if ((st = xir_runtime_submit(rt, b, d))) return st;
    t[r] = (xir__now_ns() - t0) / n;
  }
  *out = xir__median(t, (size_t)reps);
  return XIR_OK;
}

/* The memory probe: a row copy, almost no arithmetic, so that its time is its bytes. */
static const char kCopyProbe[] =
    "kernel copy_probe[R, C](x: f32[R, C], y: out f32[R, C])\n"
    "root r in R {\n"
    "  store y[r, :] = load x[r, :]\n"
    "}\n";

/* The chain probes: one packet a unit (ℓ = W), so each row is one dependent accumulation chain
 * of C/W steps; their time beyond the throughput rates is the cost of a step (sum, max). */
static const char kSumProbe[] =
    "kernel sum_probe[R, C](x: f32[R, C], y: out f32[R])\n"
    "root r in R {\n"
    "  store y[r] = reduce.sum(load x[r, :])\n"
    "}\n";
static const char kMaxProbe[] =
    "kernel max_probe[R, C](x: f32[R, C], y: out f32[R])\n"
    "root r in R {\n"
    "  store y[r] = reduce.max(load x[r, :])\n"
    "}\n";

/* The arithmetic probe: per element 24 dependent multiply-adds between one load and one store,
 * so that its time is mostly arithmetic (the memory figure explains about a third of it, where it
 * explained 70-90% of rmsnorm's, the probe until 2026-12-05: the arithmetic rate, a residual,
 * then moved 0.009-0.047 ns between calibrations in a row; with this probe 0.042-0.045 in eight). Each
 * v·0.999 + 0.001 maps [-1, 1] into itself: no overflow, no subnormal. */
static const char kArithProbe[] =
    "kernel arith_probe[R, C](x: f32[R, C], y: out f32[R, C])\n"
    "root r in R {\n"
    "  v0 = load x[r, :]\n"
    "  v1 = v0 * 0.999 + 0.001\n  v2 = v1 * 0.999 + 0.001\n  v3 = v2 * 0.999 + 0.001\n"
    "  v4 = v3 * 0.999 + 0.001\n  v5 = v4 * 0.999 + 0.001\n  v6 = v5 * 0.999 + 0.001\n"
    "  v7 = v6 * 0.999 + 0.001\n  v8 = v7 * 0.999 + 0.001\n  v9 = v8 * 0.999 + 0.001\n"
    "  v10 = v9 * 0.999 + 0.001\n  v11 = v10 * 0.999 + 0.001\n  v12 = v11 * 0.999 + 0.001\n"
    "  v13 = v12 * 0.999 + 0.001\n  v14 = v13 * 0.999 + 0.001\n  v15 = v14 * 0.999 + 0.001\n"
    "  v16 = v15 * 0.999 + 0.001\n  v17 = v16 * 0.999 + 0.001\n  v18 = v17 * 0.999 + 0.001\n"
    "  v19 = v18 * 0.999 + 0.001\n  v20 = v19 * 0.999 + 0.001\n  v21 = v20 * 0.999 + 0.001\n"
    "  v22 = v21 * 0.999 + 0.001\n  v23 = v22 * 0.999 + 0.001\n"
    "  store y[r, :] = v23 * 0.999 + 0.001\n"
    "}\n";

/* The hardware-math probe: one reciprocal square root per element (a root program's rank-0
 * value at ℓ = 1, so a packet is W of them: vsqrtps and vdivps), between a load and a store. */
static const char kHwProbe[] =
    "kernel hw_probe[R](x: f32[R], y: out f32[R])\n"
    "root r in R {\n"
    "  store y[r] = rsqrt(add(load x[r], 1.0))\n"
    "}\n";

const char *xir__calibration_arith_probe(void) { return kArithProbe; }

/* A probe's candidate at the compiler's width W: ℓ = local (0: W), at most 8 packets (ℓ = 64 is 4
 * packets at W = 16 and 8 at W = 8; at W = 4 the probes take ℓ = 32), in blocks of Bmul·W lanes
 * or of ℓ when that is more. Until 2026-12-07 B was Bmul·W whatever ℓ was: no candidate at W = 8
 * (ℓ = 64 > B = 32), and the calibration failed on every AVX2 host. */
static xir_status probe_candidate(const xir_program *p, const xir_shape *s, uint32_t W, uint32_t local,
                                  uint32_t Bmul, const uint8_t *perm, xir_candidate *cand, xir_diag *d) {
  uint32_t ell = !local ? W : local > 8 * W ? 8 * W : local, B = W * Bmul > ell ? W * Bmul : ell;
  return xir_candidate_make(p, s, W, B, ell, perm, cand, d);
}

/* Times a built-in kernel (or the copy probe, name NULL) on the caller path; returns ns per launch
 * and its work. */
static xir_status time_kernel(xir_compiler *cc, xir_runtime *rt, xir_batch *b, const char *name,
                              const char *spec, uint32_t local, uint32_t Bmul, double *ns,
                              xir_execution_work *w, double *task_pair, xir_diag *d) {
  xir_program *p = NULL;
  xir_shape s;
  xir_case c;
  memset(&c, 0, sizeof c);
  const char *probe = !name ? kCopyProbe : !strcmp(name, "sum_probe") ? kSumProbe
                    : !strcmp(name, "max_probe") ? kMaxProbe
                    : !strcmp(name, "arith_probe") ? kArithProbe
                    : !strcmp(name, "hw_probe") ? kHwProbe : NULL;
  xir_status st = probe ? xir_program_parse(probe, strlen(probe), name ? name : "copy_probe", &p, d)
                        : xir_kernel_load(name, &p, d);
  if (st) return st;
  if ((st = xir_shape_parse(p, spec, &s, d)) || (st = xir__case_init(&c, p, &s, 1, d))) goto out;
  uint32_t W = xir_compiler_width(cc);
  uint8_t perm[XIR_MAX_ROOT];
  for (int k = 0; k < xir_program_num_root(p); k++) perm[k] = (uint8_t)k;
  xir_candidate cand;
  if ((st = probe_candidate(p, &s, W, local, Bmul, perm, &cand, d))) goto out;
  const xir_kernel *k;
  if ((st = xir_compile(cc, p, &s, &cand, &k, d))) goto out;
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  if ((st = xir_kernel_pack_args(k, c.args, slots, d))) goto out;
  if ((st = xir_execution_work_make(p, &s, &cand, UINT32_MAX, 1, w, d))) goto out;
  /* about 2 ms per batch */
  double one;
  if ((st = time_launch(rt, b, k, (xir_block_fn)xir_kernel_entry(k), slots, cand.blocks, UINT32_MAX,
                        1, 1, 3, &one, d)))
    goto out;
  int n = one > 0 ? (int)(2e6 / one) : 1;
  if (n < 1) n = 1;
  if (n > 4096) n = 4096;
  st = time_launch(rt, b, k, (xir_block_fn)xir_kernel_entry(k), slots, cand.blocks, UINT32_MAX, 1, n,
                   9, ns, d);
  if (!st && task_pair) {
    /* on 2 workers, one row a task (R tasks, R/2 critical) against two tasks (1 critical): the
     * cost of a task that moves data, beyond the empty-task figure — the rows of one task sit
     * next to the other worker's, which the hardware prefetchers and stealing pull across.
     * Both times are returned (task_pair[0] fine, [1] coarse): the caller keeps the fastest of
     * each over its repetitions and takes their difference (the fastest difference would pick
     * the repetition whose fine run was lucky or whose coarse run was slowed: 3.5–78 ns in
     * three calibrations in a row, 2026-12-02) */
    uint64_t L = cand.blocks, per_row = L / (uint64_t)s.dims[0];
    if ((st = time_launch(rt, b, k, (xir_block_fn)xir_kernel_entry(k), slots, L, (uint32_t)per_row, 2,
                          n, 9, &task_pair[0], d)) ||
        (st = time_launch(rt, b, k, (xir_block_fn)xir_kernel_entry(k), slots, L, (uint32_t)(L / 2), 2,
                          n, 9, &task_pair[1], d)))
      goto out;
  }
out:
  xir__case_free(&c);
  xir_program_free(p);
  return st;
}

/* Where streaming stores start to pay: the copy probe at footprints of 4 to 256 MiB (two
 * buffers of 2 to 128 MiB; the larger ones only while a quarter of the available memory holds
 * them) on 2 workers, one task each, with regular and with streaming stores, alternating, the
 * fastest of three each. Streaming wins a footprint when it is at least 5% faster there; the
 * threshold lies between the largest footprint it loses and the smallest of the run of wins that
 * reaches the largest probe (their geometric mean; the smallest probe when it wins everywhere: a
 * launch that small stays in the cache). 0 when it does not win the largest probe: the
 * cache-size prior stays (xir__stream_threshold). The cache size a guest sees can be far from
 * what it gets: an Intel Xeon VM with 2 vCPUs lists 480 MiB of L3 (prior: 240 MiB), and this
 * probe put its threshold at 45 MiB (docs/lowering.md, "Streaming stores"). There streaming is
 * only marginally faster at 64 MiB: when the probes stopped at 64 MiB, 6 of 108 calibrations (and
 * every one of a noisy hour) found no win and kept the 240 MiB prior, and launches of 100 to
 * 240 MiB then ran 1.3-1.5x slower with regular stores (rmsnorm 20000x1024: 4.2 against 2.9 ms);
 * at 128 and 256 MiB streaming wins by 1.4x. The copy reads and writes in one pass; a kernel
 * that reduces its rows before storing them streams from the last-level cache's size on at the
 * latest (xir__stream_launch). */
enum { STREAM_PROBES = 7 };
static xir_status stream_probe(xir_compiler *cc, xir_runtime *rt, xir_batch *b, double *bytes,
                               xir_diag *d) {
  *bytes = 0;
  double t_out[STREAM_PROBES][2]; /* per footprint: regular, streaming (ns, the fastest) */
  double avail = (double)xir__mem_available();
  int probes = 0; /* the footprints measured */
  xir_program *p = NULL;
  xir_status st = xir_program_parse(kCopyProbe, strlen(kCopyProbe), "copy_probe", &p, d);
  if (st) return st;
  int saved = xir__stream_stores_mode();
  double F[STREAM_PROBES];
  uint32_t W = xir_compiler_width(cc);
  for (int f = 0; f < STREAM_PROBES && !st; f++) {
    t_out[f][0] = t_out[f][1] = INFINITY;
    int64_t rows = (int64_t)256 << f; /* rows of 2048 floats: 8 KiB in x and 8 KiB in y */
    char spec[64];
    snprintf(spec, sizeof spec, "R=%lld,C=2048", (long long)rows);
    F[f] = (double)rows * 2048 * 4 * 2;
    if (f > 4 && F[f] > avail / 4) break; /* past 64 MiB: only while it fits */
    xir_shape s;
    xir_case c;
    memset(&c, 0, sizeof c);
    uint8_t perm[XIR_MAX_ROOT] = {0};
    xir_candidate cand;
    const xir_kernel *k;
    if ((st = xir_shape_parse(p, spec, &s, d)) || (st = xir__case_init(&c, p, &s, 1, d)) ||
        (st = probe_candidate(p, &s, W, 64, 4, perm, &cand, d)) ||
        (st = xir_compile(cc, p, &s, &cand, &k, d))) {
      xir__case_free(&c);
      break;
    }
    uint64_t slots[2][XIR_MAX_ARG_SLOTS];
    for (int m = 0; m < 2 && !st; m++) { /* the flags are set when the arguments are packed */
      xir__stream_stores_set(m);
      st = xir_kernel_pack_args(k, c.args, slots[m], d);
    }
    uint64_t L = cand.blocks;
    for (int rep = 0; rep < 3 && !st; rep++)
      for (int m = 0; m < 2 && !st; m++) {
        double x;
        /* about 2 ms a batch: a 64 MiB copy takes about 1 ms at 60 GB/s (n = 1 from there) */
        int n = (int)(2e6 / (F[f] / 30.0)) + 1;
        st = time_launch(rt, b, k, (xir_block_fn)xir_kernel_entry(k), slots[m], L,
                         (uint32_t)((L + 1) / 2), 2, n, 5, &x, d);
        if (!st && x < t_out[f][m]) t_out[f][m] = x;
      }
    xir__case_free(&c);
    if (!st) probes = f + 1;
  }
  xir__stream_stores_set(saved);
  xir_program_free(p);
  if (st) return st;
  *bytes = xir__stream_threshold_from(t_out, F, probes);
  return XIR_OK;
}

double xir__stream_threshold_from(const double (*t)[2], const double *F, int n) {
  int first = n; /* the first of the run of wins that reaches the largest probe */
  while (first > 0 && t[first - 1][1] < 0.95 * t[first - 1][0]) first--;
  if (first == n) return 0;
  if (first == 0) return F[0]; /* never below the smallest probe (in the L2s) */
  return sqrt(F[first - 1] * F[first]);
}

xir_status xir_calibrate(xir_compiler *cc, xir_runtime *rt, xir_calibration *out, xir_diag *d) {
  if (!out) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_calibrate: out is NULL");
  memset(out, 0, sizeof *out);
  if (!cc || !rt) return xir__err(d, XIR_ERR_INVALID_ARG, "calibration needs a compiler and a runtime");
  if (xir_runtime_workers(rt) < 2)
    return xir__err(d, XIR_ERR_INVALID_ARG, "calibration needs a runtime with at least 2 workers");
  xir_batch *b;
  xir_status st = xir_batch_create(rt, &b, d);
  if (st) return st;
  int64_t prev_stream = -1; /* the process's streaming threshold while the probes change it */
  /* Warm the pool first (workers asleep after a long compile would answer slowly at first),
   * then keep the smallest of three medians: the figure is a cost of waking a spinning worker,
   * and interference only ever adds to it. */
  double warm;
  if ((st = time_launch(rt, b, NULL, empty_blocks, NULL, 2, 1, 2, 256, 8, &warm, d))) goto out;
  out->ns_activation = INFINITY;
  for (int rep = 0; rep < 3; rep++) {
    xir_wake_cost wc;
    if ((st = xir_runtime_measure_wake(rt, 401, &wc, d))) goto out;
    if (wc.spin_wake_ns < out->ns_activation) out->ns_activation = wc.spin_wake_ns;
  }
  double t_pool;
  if ((st = time_launch(rt, b, NULL, empty_blocks, NULL, 256, 1, 2, 64, 15, &t_pool, d))) goto out;
  if ((st = stream_probe(cc, rt, b, &out->stream_bytes, d))) goto out;
  out->ns_per_task = (t_pool - out->ns_activation) / 128.0;
  if (out->ns_per_task < 0) out->ns_per_task = 0;
  /* Each probe three times, keeping the fastest: interference only ever adds. The copy runs at
   * three footprints — 256 KiB (in L2), 16 MiB (in L3), 128 MiB (beyond it) — for the memory
   * hierarchy; the middle one is also the flat per-byte figure. */
  static const char *const kCopy[XIR_MEM_LEVELS] = {"R=32,C=1024", "R=512,C=4096", "R=4096,C=2048"};
  double ta = INFINITY, ts = INFINITY, th = INFINITY, tm[XIR_MEM_LEVELS] = {INFINITY, INFINITY, INFINITY};
  /* ns per launch of the copy probe (64 rows of 8 KiB) on 2 workers with one row a task and with
   * two tasks: their difference is the cost of the extra tasks that move data */
  double tfine = INFINITY, tcoarse = INFINITY, ffine = INFINITY, fcoarse = INFINITY;
  const double task_rows = 64;
  double tc[XIR_CHAIN_KINDS][2] = {{INFINITY, INFINITY}, {INFINITY, INFINITY}};
  static const char *const kChain[XIR_CHAIN_KINDS] = {"sum_probe", "max_probe"};
  xir_execution_work wa, ws, wh, wm[XIR_MEM_LEVELS], wc[XIR_CHAIN_KINDS][2];
  /* the probes run with the stores the launches will use: the threshold just measured */
  prev_stream = xir__stream_threshold_set((int64_t)out->stream_bytes);
  for (int rep = 0; rep < 3; rep++) {
    double x;
    if ((st = time_kernel(cc, rt, b, "gelu_residual", "R=64,C=256", 1, 8, &x, &wa, NULL, d))) goto out;
    ta = fmin(ta, x);
    if ((st = time_kernel(cc, rt, b, "arith_probe", "R=32,C=1024", 64, 4, &x, &ws, NULL, d))) goto out;
    ts = fmin(ts, x);
    if ((st = time_kernel(cc, rt, b, "hw_probe", "R=16384", 1, 8, &x, &wh, NULL, d))) goto out;
    th = fmin(th, x);
    for (int l = 0; l < XIR_MEM_LEVELS; l++) {
      /* the L3 copy also with one row a task against two tasks: what a task costs there */
      double ft[2];
      if ((st = time_kernel(cc, rt, b, NULL, kCopy[l], 64, 4, &x, &wm[l], l == 1 ? ft : NULL, d)))
        goto out;
      tm[l] = fmin(tm[l], x);
      if (l == 1) {
        ffine = fmin(ffine, ft[0]);
        fcoarse = fmin(fcoarse, ft[1]);
      }
    }
    xir_execution_work wt;
    double tt[2];
    if ((st = time_kernel(cc, rt, b, NULL, "R=64,C=2048", 64, 4, &x, &wt, tt, d))) goto out;
    tfine = fmin(tfine, tt[0]);
    tcoarse = fmin(tcoarse, tt[1]);
    /* 64 rows of 1024 (256 KiB, in L2) with ℓ = W (64 steps a row) and ℓ = 8W (8 packets share
     * 8 steps): the same bytes and ops, only the chain differs */
    for (int k = 0; k < XIR_CHAIN_KINDS; k++)
      for (int v = 0; v < 2; v++) {
        uint32_t ell = v ? 8 * xir_compiler_width(cc) : 0;
        if ((st = time_kernel(cc, rt, b, kChain[k], "R=64,C=1024", ell, 8, &x, &wc[k][v], NULL, d)))
          goto out;
        tc[k][v] = fmin(tc[k][v], x);
      }
  }
  xir__stream_threshold_set(prev_stream);
  prev_stream = -1;
  /* t = a·A + μ·Aμ + m·M (A: simple units, Aμ: math units, M: bytes), solved triangularly (a
   * full solve is unstable: every probe has every kind of work). The copy probe is almost pure
   * memory — its few arithmetic units (a load and a store per packet) overlap with the transfer
   * — so it gives m by itself (per level); the arithmetic probe 32×1024 (in L2, simple ops only)
   * then gives a from what its bytes do not explain; gelu_residual 64×256 (in L2,
   * mostly tanh) gives μ from what a and m do not. (Solving for one arithmetic rate from gelu
   * alone overestimated simple kernels about 4×, and solving it before m left m = 0.) */
  for (int l = 0; l < XIR_MEM_LEVELS; l++) {
    double M = wm[l].memory_per_packet * (double)wm[l].packets;
    out->mem_bytes[l] = wm[l].footprint_bytes;
    out->mem_ns[l] = M > 0 ? tm[l] / M : 0;
  }
  /* The last probe (64 MiB) runs beyond the last-level cache; its rate applies from that cache's
   * size on (a footprint the size of L3 already misses nearly every line: LRU). */
  double llc = (double)xir__llc_bytes(); /* sysfs (the highest level), else sysconf */
  if (!(llc > 0)) llc = 32.0 * 1024 * 1024;
  if (llc > out->mem_bytes[1] && llc < out->mem_bytes[2]) out->mem_bytes[2] = llc;
  double m = out->mem_ns[1];
  double Ms = ws.memory_per_packet * (double)ws.packets, As = ws.arith_per_packet * (double)ws.packets;
  double a = As > 0 ? (ts - out->mem_ns[0] * Ms) / As : 0;
  if (!(a > 0)) a = As > 0 ? ts / As : 0;
  double A1 = (wa.arith_per_packet - wa.math_per_packet) * (double)wa.packets;
  double Am = wa.math_per_packet * (double)wa.packets, M1 = wa.memory_per_packet * (double)wa.packets;
  double mu = Am > 0 ? (ta - out->mem_ns[0] * M1 - a * A1) / Am : 0;
  if (!(mu > 0)) mu = a;
  out->ns_per_math = mu;
  /* the hardware math: the 1/sqrt probe's time beyond its bytes and simple ops, per unit of its
   * rank-0 div/sqrt/rsqrt (0, i.e. ns_per_math, when that leaves nothing) */
  double H = wh.hw_math_per_packet * (double)wh.packets;
  double Ah = (wh.arith_per_packet - wh.math_per_packet) * (double)wh.packets;
  double Mh = wh.memory_per_packet * (double)wh.packets;
  double muh = H > 0 ? (th - out->mem_ns[0] * Mh - a * Ah) / H : 0;
  out->ns_per_hw_math = isfinite(muh) && muh > 0 ? muh : 0;
  /* a chain step: what the longer chain adds beyond what the prior charges for it (its latency
   * floor), per step — a difference of two runs of the same bytes and ops, so the memory rate
   * does not enter it */
  for (int k = 0; k < XIR_CHAIN_KINDS; k++) {
    double S0 = wc[k][0].steps_per_packet[k] * (double)wc[k][0].packets;
    double S1 = wc[k][1].steps_per_packet[k] * (double)wc[k][1].packets;
    double dA = wc[k][0].arith_per_packet * (double)wc[k][0].packets -
                wc[k][1].arith_per_packet * (double)wc[k][1].packets;
    double dt = tc[k][0] - tc[k][1] - a * dA;
    out->ns_per_step[k] = S0 > S1 ? fmax(dt / (S0 - S1), -XIR_STEP_CREDIT_OPS * a) : 0;
  }
  /* a task's cost is what a task that moves data costs (the empty-task figure when that is
   * larger: interference on the machine) */
  double ttask = (tfine - tcoarse) / (task_rows / 2 - 1);
  if (isfinite(ttask) && ttask > out->ns_per_task) out->ns_per_task = ttask;
  /* the same difference on the L3 copy (512 rows of 16 KiB: 512 tasks, 256 critical, against
   * 2), beyond the figure above: a task there starts its rows' streams from L3 or memory, where
   * the prefetchers ramp up again (rope_cache 300x4096, HD = 256: 150 tasks of 2 rows ran 79 us,
   * 8 tasks 64-67, on the 2026-12-07 EPYC; the L2 probe's figure put the task at 20-25 ns) */
  double far_rows = 512, tfar = (ffine - fcoarse) / (far_rows / 2 - 1) - out->ns_per_task;
  out->ns_per_task_far = isfinite(tfar) && tfar > 0 ? tfar : 0;
  out->ns_per_arith = a;
  out->ns_per_byte = m;
  out->ns_per_block = 8 * a;
  out->probe_ns[0] = ta;
  out->probe_ns[1] = tm[1];
  if (!isfinite(out->ns_per_arith) || !isfinite(out->ns_per_byte) || !isfinite(out->ns_per_task) ||
      !isfinite(out->ns_per_task_far) ||
      !isfinite(out->ns_activation))
    st = xir__err(d, XIR_ERR_COST, "calibration produced a non-finite figure");
out:
  if (prev_stream >= 0) xir__stream_threshold_set(prev_stream);
  xir_batch_destroy(b);
  return st;
}

void xir_cost_coefficients_from_calibration(const xir_calibration *cal, xir_cost_coefficients *c) {
  if (!c) return;
  if (!cal) {
    xir_cost_coefficients_default(c);
    return;
  }
  memset(c, 0, sizeof *c);
  c->c[XIR_TERM_ARITH] = cal->ns_per_arith;
  c->ns_per_math = cal->ns_per_math;
  c->ns_per_hw_math = cal->ns_per_hw_math;
  for (int k = 0; k < XIR_CHAIN_KINDS; k++) c->ns_per_step[k] = cal->ns_per_step[k];
  c->c[XIR_TERM_MEMORY] = cal->ns_per_byte;
  if (cal->mem_bytes[0] > 0) {
    /* the hierarchy gives the rate; c[MEMORY] becomes its multiplier */
    c->c[XIR_TERM_MEMORY] = 1;
    for (int l = 0; l < XIR_MEM_LEVELS; l++) {
      c->mem_bytes[l] = cal->mem_bytes[l];
      c->mem_ns[l] = cal->mem_ns[l];
    }
  }
  c->c[XIR_TERM_BLOCK] = cal->ns_per_block;
  c->c[XIR_TERM_IMBALANCE] = 1;
  c->c[XIR_TERM_DISPATCH] = cal->ns_per_task;
  c->ns_per_task_far = cal->ns_per_task_far;
  c->c[XIR_TERM_ACTIVATION] = cal->ns_activation;
}

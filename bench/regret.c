/* bench/regret.c — the planner's regret, measured: every candidate × grain the planner
 * enumerates is compiled and timed in one run, and the choice is compared with the fastest.
 *
 *   bench_regret [--workers H] [--rounds N] [--policy default|legacy|calibrated]
 *                KERNEL 'D=N,...;D=N,...' [KERNEL 'shapes' ...]
 *
 * Each (kernel, shape): the plan (xir_plan_options_default unless --policy says otherwise, H
 * workers) ranks every legal entry; each entry's kernel is compiled once and timed as batches of
 * repeated launches (≈ 1 ms a batch) through the runtime with its grain and workers. Rounds
 * visit the entries forward then backward; an entry's time is the median over rounds of the
 * round's median of three batches. regret = t(choice) / t(best). Not a test, never run by CTest,
 * and not the benchmark protocol of SPEC.md (which `xir bench` implements): a quick tool to judge
 * cost-model changes on many shapes. The chosen entry's output is checked against the oracle. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/records.h"
#include "check/check.h"
#include "ir/program.h"
#include "util/util.h"
#include "xir_compile.h"
#include "xir_plan.h"

typedef struct slot {
  const xir_kernel *k;
  uint64_t args[XIR_MAX_PARAMS];
  double t[64];
} slot;

static double time_entry(xir_runtime *rt, xir_batch *b, slot *s, const xir_plan_entry *e,
                         int *n_io) {
  int n = *n_io;
  double best[3];
  for (int r = 0; r < 3; r++) {
    xir_batch_reset(b);
    for (int i = 0; i < n; i++)
      if (xir_batch_record(b, (xir_block_fn)xir_kernel_entry(s->k), s->args, e->cand.blocks,
                           e->work.grain, e->work.workers, NULL))
        return NAN;
    double t0 = xir__now_ns();
    if (xir_runtime_submit(rt, b, NULL)) return NAN;
    best[r] = (xir__now_ns() - t0) / n;
  }
  double m = xir__median(best, 3);
  if (*n_io == 1 && m > 0) {
    int want = (int)(1e6 / m);
    *n_io = want < 1 ? 1 : want > 2048 ? 2048 : want;
  }
  return m;
}

static int run_shape(xir_compiler *cc, xir_runtime *rt, const char *kname, const char *spec,
                     const xir_plan_options *po, int rounds, double *regret_out) {
  xir_diag d;
  xir_program *p = NULL;
  xir_shape s;
  xir_case c;
  memset(&c, 0, sizeof c);
  xir_plan *pl = NULL;
  slot *sl = NULL;
  int *reps = NULL, rc = 1;
  xir_batch *b = NULL;
  if ((xir_kernel_find(kname) >= 0 ? xir_kernel_load(kname, &p, &d)
                                    : xir_program_parse_file(kname, &p, &d)) ||
      xir_shape_parse(p, spec, &s, &d) ||
      xir__case_init(&c, p, &s, 1, &d) || xir_plan_make(p, &s, po, &pl, &d) ||
      xir_batch_create(rt, &b, &d)) {
    fprintf(stderr, "%s %s: %s\n", kname, spec, d.msg);
    goto out;
  }
  sl = calloc(pl->count, sizeof *sl);
  reps = calloc(pl->count, sizeof *reps);
  if (!sl || !reps) goto out;
  for (size_t i = 0; i < pl->count; i++) {
    if (xir_compile(cc, p, &s, &pl->entries[i].cand, &sl[i].k, &d) ||
        xir_kernel_pack_args(sl[i].k, c.args, sl[i].args, &d)) {
      fprintf(stderr, "%s %s: %s\n", kname, spec, d.msg);
      goto out;
    }
    reps[i] = 1;
    time_entry(rt, b, &sl[i], &pl->entries[i], &reps[i]); /* warm-up, sizes the batch */
  }
  if (rounds > 64) rounds = 64;
  for (int r = 0; r < rounds; r++)
    for (size_t j = 0; j < pl->count; j++) {
      size_t i = r % 2 ? pl->count - 1 - j : j;
      sl[i].t[r] = time_entry(rt, b, &sl[i], &pl->entries[i], &reps[i]);
    }
  size_t best = 0;
  double tb = INFINITY, t0 = 0;
  for (size_t i = 0; i < pl->count; i++) {
    double t = xir__median(sl[i].t, (size_t)rounds);
    if (i == 0) t0 = t;
    if (t < tb) tb = t, best = i;
  }
  /* the choice's output against the oracle */
  xir__case_reset_outputs(&c);
  if (xir_runtime_launch(rt, (xir_block_fn)xir_kernel_entry(sl[0].k), sl[0].args,
                         pl->entries[0].cand.blocks, pl->entries[0].work.grain,
                         pl->entries[0].work.workers, NULL, &d) ||
      xir__case_oracle(&c, &d)) {
    fprintf(stderr, "%s %s: %s\n", kname, spec, d.msg);
    goto out;
  }
  int ok = xir__case_sentinels_ok(&c);
  for (int i = 0; i < p->nparams; i++)
    if (p->params[i].is_output && !xir__case_compare(&c, i, xir__kernel_tolerance(kname)).pass) ok = 0;
  if (getenv("REGRET_ALL"))
    for (size_t i = 0; i < pl->count; i++) {
      char nm[96];
      xir_candidate_name(p, &pl->entries[i].cand, nm, sizeof nm);
      const xir_execution_work *w = &pl->entries[i].work;
      printf("  %4zu %-28s G=%-10u C=%-6llu h=%u  model %10.0f  measured %10.0f ns  [", i + 1, nm,
             w->grain, (unsigned long long)w->tasks, w->active, pl->entries[i].cost.total,
             xir__median(sl[i].t, (size_t)rounds));
      for (int t = 0; t < XIR_TERM_COUNT; t++) printf(" %.0f", pl->entries[i].cost.term[t]);
      printf(" ]\n");
    }
  char n0[96], nb[96];
  xir_candidate_name(p, &pl->entries[0].cand, n0, sizeof n0);
  xir_candidate_name(p, &pl->entries[best].cand, nb, sizeof nb);
  char g0[16], gb[16];
  uint32_t G0 = pl->entries[0].work.grain, Gb = pl->entries[best].work.grain;
  snprintf(g0, sizeof g0, G0 == UINT32_MAX ? "max" : "%u", G0);
  snprintf(gb, sizeof gb, Gb == UINT32_MAX ? "max" : "%u", Gb);
  *regret_out = t0 / tb;
  printf("%-15s %-26s %4zu  chosen %-26s G=%-4s %10.2f us   best %-26s G=%-4s %10.2f us (rank %4zu)  regret %.3f %s\n",
         kname, spec, pl->count, n0, g0, t0 / 1e3, nb, gb, tb / 1e3, best + 1, t0 / tb,
         ok ? "ok" : "MISMATCH");
  fflush(stdout);
  rc = ok ? 0 : 1;
out:
  xir_batch_destroy(b);
  free(sl);
  free(reps);
  xir_plan_free(pl);
  xir__case_free(&c);
  xir_program_free(p);
  return rc;
}

int main(int argc, char **argv) {
  uint32_t H = 2;
  int rounds = 5, i = 1;
  const char *policy = "default", *pipeline = NULL;
  for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
    if (!strcmp(argv[i], "--workers")) H = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--policy")) policy = argv[i + 1];
    else if (!strcmp(argv[i], "--pipeline")) pipeline = argv[i + 1];
    else break;
  }
  if (i >= argc || (argc - i) % 2) {
    fprintf(stderr, "usage: bench_regret [--workers H] [--rounds N] [--policy default|legacy|calibrated] [--pipeline P] KERNEL 'SHAPES' ...\n");
    return 2;
  }
  xir_diag d;
  xir_compiler *cc = NULL;
  xir_runtime *rt = NULL;
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  ro.workers = H;
  xir_compiler_options co = {.pipeline = pipeline};
  if (xir_compiler_create(&co, &cc, &d) || xir_runtime_create(&ro, &rt, &d)) {
    fprintf(stderr, "%s\n", d.msg);
    return 1;
  }
  xir_plan_options po;
  xir_plan_options_default(&po);
  po.workers = H;
  po.width = xir_compiler_width(cc);
  xir_cost_coefficients coef;
  if (!strcmp(policy, "legacy")) {
    po.local_lanes = 0;
    po.search_task_grain = 0;
    po.coefficients = NULL;
  } else if (!strcmp(policy, "calibrated")) {
    xir_calibration cal;
    if (xir_calibrate(cc, rt, &cal, &d)) {
      fprintf(stderr, "%s\n", d.msg);
      return 1;
    }
    xir_cost_coefficients_from_calibration(&cal, &coef);
    po.local_lanes = 0;
    po.search_task_grain = 1;
    po.coefficients = &coef;
  }
  po.budget = 1 << 16;
  double lsum = 0, worst = 0;
  int n = 0, bad = 0;
  for (; i + 1 < argc; i += 2) {
    char *specs = strdup(argv[i + 1]), *save = NULL;
    for (char *t = strtok_r(specs, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
      double r = 1;
      if (run_shape(cc, rt, argv[i], t, &po, rounds, &r)) bad++;
      lsum += log(r);
      if (r > worst) worst = r;
      n++;
    }
    free(specs);
  }
  printf("regret over %d cases: geomean %.3f, worst %.3f, failures %d\n", n, n ? exp(lsum / n) : 1.0,
         worst, bad);
  xir_runtime_destroy(rt);
  xir_compiler_destroy(cc);
  return bad ? 1 : 0;
}

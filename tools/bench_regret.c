/* bench_regret.c — `xir bench --suite regret`: the planner's regret, measured.
 *
 * For each (kernel, shape): the default plan (xir_plan_options_default on H workers, the host's
 * width) ranks every legal candidate × grain; every entry is compiled once and timed in the same
 * run as batches of repeated launches (≈ 1 ms a batch) through the runtime with its grain and
 * workers. Rounds visit the entries forward, then backward; an entry's time is the median over
 * rounds of the round's median of three batches (--stat min: the fastest batch of all rounds).
 * Then a confirmation (--confirm N, default 5): the choice and the sweep's three fastest entries
 * are timed again, alternating, N rounds of three batches each, and each keeps its fastest
 * batch. The fastest of many noisy entries in a sweep is biased low (interference makes some
 * entries look slow, and the minimum over a hundred entries picks the luckiest), so the ratio of
 * the sweep alone overstates regret; the confirmation measures the few entries that decide it
 * side by side. regret = t(the choice) / t(the fastest entry), both from the confirmation (both
 * from the sweep with --confirm 0); the sweep's ratio is printed too.
 * The choice's whole output is checked against the oracle (with sentinels). It prints, per
 * shape, the chosen and the fastest entry with their times and the ratio, and at the end the
 * geometric mean and the worst ratio. Not the measurement protocol of SPEC.md (no records): a
 * tool to judge the cost model on many shapes, runnable with one command. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench/records.h"
#include "check/check.h"
#include "cli.h"
#include "ir/program.h"
#include "util/util.h"

/* The named shape sets: "kernel:shape" items separated by ';'. README "Measured" reports them. */
static const struct {
  const char *name, *cases;
} kSets[] = {
    {"report",
     "rmsnorm:R=64,C=256;rmsnorm:R=129,C=768;rmsnorm:R=17,C=65;rmsnorm:R=1024,C=4096;"
     "layernorm:R=129,C=768;layernorm:R=4096,C=1024;softmax_mask:R=129,C=768;"
     "softmax_mask:R=1024,C=4096;swiglu:R=129,C=768;swiglu:R=257,C=1538;gelu_residual:R=64,C=256;"
     "gelu_residual:R=257,C=1538;rope:R=129,C=768,HD=64;"
     "rope_cache:R=129,C=768,HD=64,P=4096,H2=32"},
    {"unseen",
     "rmsnorm:R=5,C=333;rmsnorm:R=200,C=1000;rmsnorm:R=2048,C=2050;layernorm:R=7,C=4100;"
     "layernorm:R=600,C=777;softmax_mask:R=33,C=3000;softmax_mask:R=300,C=515;swiglu:R=11,C=999;"
     "swiglu:R=500,C=3001;gelu_residual:R=2,C=6000;gelu_residual:R=700,C=1111;"
     "rope:R=45,C=960,HD=96;rope_cache:R=45,C=960,HD=96,P=4096,H2=48"},
    /* picked after the model changes of 2026-12-01, never used while tuning */
    {"fresh",
     "rmsnorm:R=3,C=1500;rmsnorm:R=77,C=2304;layernorm:R=1,C=777;layernorm:R=150,C=3333;"
     "softmax_mask:R=9,C=1025;softmax_mask:R=1000,C=257;swiglu:R=31,C=4097;swiglu:R=3,C=111;"
     "gelu_residual:R=123,C=321;gelu_residual:R=1500,C=700;rope:R=20,C=1152,HD=128;"
     "rope_cache:R=20,C=1152,HD=128,P=4096,H2=64"},
    {"tiny", "rmsnorm:R=3,C=40;swiglu:R=2,C=20"},
    /* picked on 2026-12-01 14:45 before any measurement of them, after the model changes of that
     * afternoon (chain steps of skipped reductions, rank-0 once per unit, loop overhead) */
    {"odd",
     "rmsnorm:R=37,C=1234;rmsnorm:R=600,C=520;layernorm:R=19,C=700;layernorm:R=333,C=2222;"
     "softmax_mask:R=45,C=1800;softmax_mask:R=700,C=190;swiglu:R=7,C=5000;swiglu:R=123,C=901;"
     "gelu_residual:R=55,C=555;gelu_residual:R=999,C=129;rope:R=60,C=640,HD=80;"
     "rope_cache:R=70,C=896,HD=64,P=4096,H2=32;softmax_causal:R=200,C=700"},
    /* rows shorter than W (1 < ℓ < W packs several a packet), picked on 2026-12-05 before any
     * measurement of them: an MoE router's softmax over 8 experts, norms of 2-12 elements,
     * RoPE heads of 2 and 4 */
    {"short",
     "rmsnorm:R=5000,C=4;rmsnorm:R=3000,C=6;rmsnorm:R=50000,C=2;layernorm:R=2000,C=8;"
     "layernorm:R=777,C=12;softmax_mask:R=4096,C=8;softmax_mask:R=999,C=3;"
     "rope_cache:R=4000,C=4,HD=4,P=4096,H2=2;rope_cache:R=3333,C=2,HD=2,P=4096,H2=1;"
     "rope:R=2500,C=8,HD=8"},
    /* the masked triangle (unequal rows): the report shapes, then two odd ones (R < C, R > C) */
    {"causal",
     "softmax_causal:R=129,C=768;softmax_causal:R=257,C=1538;softmax_causal:R=1024,C=4096;"
     "softmax_causal:R=4096,C=1024;softmax_causal:R=77,C=1000;softmax_causal:R=1500,C=333"},
};

typedef struct slot {
  const xir_kernel *k;
  uint64_t args[XIR_MAX_ARG_SLOTS];
  double t[64];
} slot;

/* One round of an entry: three batches, their median (use_min: their fastest — on a shared
 * machine interference only adds). */
static double time_entry(xir_runtime *rt, xir_batch *b, slot *s, const xir_plan_entry *e, int *n_io,
                         int use_min) {
  int n = *n_io;
  double best[3];
  uint64_t stride =
      xir_launch_task_stride(xir_runtime_workers(rt), e->cand.blocks, e->work.grain, e->work.workers);
  if (xir_kernel_set_task_stride(s->k, s->args, stride, NULL))
    return NAN;
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
  double m = use_min ? fmin(best[0], fmin(best[1], best[2])) : xir__median(best, 3);
  if (*n_io == 1 && m > 0) {
    int want = (int)(1e6 / m);
    *n_io = want < 1 ? 1 : want > 2048 ? 2048 : want;
  }
  return m;
}

static void grain_name(uint32_t G, char *out, size_t cap) {
  snprintf(out, cap, G == UINT32_MAX ? "max" : "%u", G);
}

/* One shape: 0 and *regret, or 1 after printing the error. */
static double entry_time(slot *s, int rounds, int use_min) {
  if (!use_min) return xir__median(s->t, (size_t)rounds);
  double m = s->t[0];
  for (int r = 1; r < rounds; r++) m = fmin(m, s->t[r]);
  return m;
}

/* input_offset: where the case's inputs start past a page boundary (-1: malloc's placement). */
static int run_shape(xir_compiler *cc, xir_runtime *rt, const char *kname, const char *spec,
                     const xir_plan_options *po, int rounds, int use_min, int all, int confirm,
                     int input_offset, double *regret, double *sweep) {
  xir_diag d;
  xir_program *p = NULL;
  xir_shape s;
  xir_case c;
  memset(&c, 0, sizeof c);
  xir_plan *pl = NULL;
  slot *sl = NULL;
  int *reps = NULL, rc = 1;
  xir_batch *b = NULL;
  if (cli_load_program(kname, &p, &d) || xir_shape_parse(p, spec, &s, &d) ||
      xir__case_init(&c, p, &s, 1, &d) ||
      (input_offset >= 0 && xir__case_place_inputs(&c, input_offset, &d)) ||
      xir_plan_make(p, &s, po, &pl, &d) ||
      xir_batch_create(rt, &b, &d))
    goto fail;
  sl = calloc(pl->count, sizeof *sl);
  reps = calloc(pl->count, sizeof *reps);
  if (!sl || !reps) {
    xir__err(&d, XIR_ERR_NOMEM, "out of memory");
    goto fail;
  }
  for (size_t i = 0; i < pl->count; i++) {
    if (xir_compile(cc, p, &s, &pl->entries[i].cand, &sl[i].k, &d) ||
        xir_kernel_pack_args(sl[i].k, c.args, sl[i].args, &d))
      goto fail;
    reps[i] = 1;
    time_entry(rt, b, &sl[i], &pl->entries[i], &reps[i], 0); /* warm-up, sizes the batch */
  }
  for (int r = 0; r < rounds; r++)
    for (size_t j = 0; j < pl->count; j++) {
      size_t i = r % 2 ? pl->count - 1 - j : j;
      sl[i].t[r] = time_entry(rt, b, &sl[i], &pl->entries[i], &reps[i], use_min);
    }
  size_t best = 0;
  double tb = INFINITY, t0 = 0;
  for (size_t i = 0; i < pl->count; i++) {
    double t = entry_time(&sl[i], rounds, use_min);
    if (!(t > 0)) {
      xir__err(&d, XIR_ERR_RUNTIME, "entry %zu could not be timed", i + 1);
      goto fail;
    }
    if (i == 0) t0 = t;
    if (t < tb) tb = t, best = i;
  }
  /* the confirmation: the choice and the sweep's three fastest entries, side by side */
  size_t pick[4] = {0}, np = 1;
  double ts[4] = {INFINITY, INFINITY, INFINITY, INFINITY};
  for (int k = 0; k < 3 && confirm > 0; k++) {
    size_t bi = SIZE_MAX;
    double bt = INFINITY;
    for (size_t i = 1; i < pl->count; i++) {
      int taken = 0;
      for (size_t q = 0; q < np; q++) taken |= pick[q] == i;
      double t = entry_time(&sl[i], rounds, use_min);
      if (!taken && t < bt) bt = t, bi = i;
    }
    if (bi != SIZE_MAX) pick[np++] = bi;
  }
  double tc0 = t0, tcb = tb;
  size_t cbest = best;
  if (confirm > 0 && best != 0) {
    for (int r = 0; r < confirm; r++)
      for (size_t j = 0; j < np; j++) {
        size_t q = r % 2 ? np - 1 - j : j, i = pick[q];
        /* a warm-up round first: after another entry the pool workers may have gone to sleep
         * and the data sit in the other core's cache, which a run of launches pays once */
        time_entry(rt, b, &sl[i], &pl->entries[i], &reps[i], 1);
        double t = time_entry(rt, b, &sl[i], &pl->entries[i], &reps[i], 1);
        if (t > 0 && t < ts[q]) ts[q] = t;
      }
    tc0 = ts[0];
    tcb = INFINITY;
    for (size_t q = 0; q < np; q++)
      if (ts[q] < tcb) tcb = ts[q], cbest = pick[q];
    if (!(tc0 > 0) || !isfinite(tcb)) {
      xir__err(&d, XIR_ERR_RUNTIME, "the confirmation could not time its entries");
      goto fail;
    }
  }
  /* the choice's output against the oracle */
  xir__case_reset_outputs(&c);
  const xir_plan_entry *e0 = &pl->entries[0], *eb = &pl->entries[cbest];
  if (xir_runtime_launch(rt, (xir_block_fn)xir_kernel_entry(sl[0].k), sl[0].args, e0->cand.blocks,
                         e0->work.grain, e0->work.workers, NULL, &d) ||
      xir__case_oracle(&c, &d))
    goto fail;
  int ok = xir__case_sentinels_ok(&c);
  for (int i = 0; i < p->nparams; i++)
    if (p->params[i].is_output && !xir__case_compare(&c, i, xir__kernel_tolerance(kname)).pass) ok = 0;
  if (all)
    for (size_t i = 0; i < pl->count; i++) {
      char nm[96], g[16];
      xir_candidate_name(p, &pl->entries[i].cand, nm, sizeof nm);
      grain_name(pl->entries[i].work.grain, g, sizeof g);
      const xir_execution_work *w = &pl->entries[i].work;
      printf("  %4zu %-28s G=%-4s C=%-6llu h=%u  model %11.0f  measured %11.0f ns  [", i + 1, nm, g,
             (unsigned long long)w->tasks, w->active, pl->entries[i].cost.total,
             entry_time(&sl[i], rounds, use_min));
      for (int t = 0; t < XIR_TERM_COUNT; t++) printf(" %.0f", pl->entries[i].cost.term[t]);
      printf(" ]\n");
    }
  char n0[96], nb[96], g0[16], gb[16];
  xir_candidate_name(p, &e0->cand, n0, sizeof n0);
  xir_candidate_name(p, &eb->cand, nb, sizeof nb);
  grain_name(e0->work.grain, g0, sizeof g0);
  grain_name(eb->work.grain, gb, sizeof gb);
  *regret = tc0 / tcb;
  *sweep = t0 / tb;
  printf("%-14s %-30s %4zu  chosen %-26s G=%-4s %10.2f us  best %-26s G=%-4s %10.2f us  (rank %zu)  "
         "ratio %.3f  (sweep %.3f)%s\n",
         kname, spec, pl->count, n0, g0, tc0 / 1e3, nb, gb, tcb / 1e3, cbest + 1, *regret, t0 / tb,
         ok ? "" : "  OUTPUT MISMATCH");
  fflush(stdout);
  if (!ok) {
    xir__err(&d, XIR_ERR_RUNTIME, "the chosen entry's output does not match the oracle");
    goto fail;
  }
  rc = 0;
  goto out;
fail:
  fprintf(stderr, "xir bench: %s %s: %s\n", kname, spec, d.msg);
out:
  xir_batch_destroy(b);
  free(sl);
  free(reps);
  xir_plan_free(pl);
  xir__case_free(&c);
  xir_program_free(p);
  return rc;
}

static void help(void) {
  printf(
      "usage: xir bench --suite regret [--set NAME] [--kernels a,b] [--cases 'K:SHAPE;...'] [options]\n\n"
      "The planner's regret: for each kernel and shape, every candidate x grain of the default\n"
      "plan is compiled and timed in one run; prints the chosen and the fastest entry, their\n"
      "ratio (t(chosen) / t(fastest)), and the geometric mean and worst ratio at the end. The\n"
      "chosen entry's output is checked against the oracle. Quick tool, no records.\n\n"
      "options:\n"
      "  --set NAME        a named shape set: report (default), unseen, fresh, tiny,\n"
      "                    odd, short (rows shorter than W), causal (softmax_causal)\n"
      "  --cases 'K:S;..'  these kernel:shape cases instead (K a built-in kernel or an XIR file)\n"
      "  --kernels a,b     only the set's cases of these kernels\n"
      "  --workers N       runtime workers incl. the caller (default 2)\n"
      "  --rounds N        timing rounds per entry (default 5, at most 64)\n"
      "  --stat S          an entry's time over the rounds: median (default; of each round's\n"
      "                    three batches, then of the rounds) or min (the fastest batch of all\n"
      "                    rounds: on a shared machine interference only adds)\n"
      "  --confirm N       re-time the choice and the sweep's three fastest entries side by side,\n"
      "                    N alternating rounds (default 5, at most 64; 0: the sweep's times)\n"
      "  --all             also print every entry: model vs measured ns and the model's terms\n"
      "  --input-offset N  the case's inputs N bytes past a page boundary (0..56, a multiple\n"
      "                    of 8; default 0); malloc: where malloc puts them\n");
}

static int in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *q = list; q && *q;) {
    const char *e = strchr(q, ',');
    size_t len = e ? (size_t)(e - q) : strlen(q);
    if (len == n && !strncmp(q, name, n)) return 1;
    q = e ? e + 1 : NULL;
  }
  return 0;
}

int bench_regret_main(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    help();
    return 0;
  }
  static const struct option opts[] = {
      {"suite", required_argument, 0, 's'},   {"set", required_argument, 0, 'S'},
      {"cases", required_argument, 0, 'c'},   {"kernels", required_argument, 0, 'k'},
      {"workers", required_argument, 0, 'w'}, {"rounds", required_argument, 0, 'r'},
      {"all", no_argument, 0, 'a'},           {"stat", required_argument, 0, 't'},
      {"confirm", required_argument, 0, 'C'}, {"input-offset", required_argument, 0, 'I'},
      {0, 0, 0, 0}};
  const char *set = "report", *cases = NULL, *kernels = NULL;
  uint64_t H = 2, rounds = 5, confirm = 5;
  int all = 0, use_min = 0, input_offset = 0, c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
      case 's': break;
      case 'S': set = optarg; break;
      case 'c': cases = optarg; break;
      case 'k': kernels = optarg; break;
      case 'w':
        if (cli_parse_u64(optarg, &H) || H < 1 || H > XIR_RUNTIME_MAX_WORKERS) {
          fprintf(stderr, "xir bench: --workers must be 1..%d\n", XIR_RUNTIME_MAX_WORKERS);
          return 2;
        }
        break;
      case 'r':
        if (cli_parse_u64(optarg, &rounds) || rounds < 1 || rounds > 64) {
          fprintf(stderr, "xir bench: --rounds must be 1..64\n");
          return 2;
        }
        break;
      case 'C':
        if (cli_parse_u64(optarg, &confirm) || confirm > 64) {
          fprintf(stderr, "xir bench: --confirm must be 0..64\n");
          return 2;
        }
        break;
      case 'a': all = 1; break;
      case 'I':
        if (cli_parse_input_offset(optarg, &input_offset)) {
          fprintf(stderr, "xir bench: --input-offset '%s': needs a multiple of 8 below 64, or malloc\n",
                  optarg);
          return 2;
        }
        break;
      case 't':
        if (strcmp(optarg, "median") && strcmp(optarg, "min")) {
          fprintf(stderr, "xir bench: --stat is median or min\n");
          return 2;
        }
        use_min = !strcmp(optarg, "min");
        break;
      default:
        fprintf(stderr, "xir bench: unknown or incomplete option '%s' for the regret suite\n",
                argv[optind - 1]);
        return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "xir bench: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  if (!cases) {
    for (size_t i = 0; i < sizeof kSets / sizeof kSets[0] && !cases; i++)
      if (!strcmp(kSets[i].name, set)) cases = kSets[i].cases;
    if (!cases) {
      fprintf(stderr, "xir bench: unknown shape set '%s' (report, unseen, fresh, tiny, odd, causal)\n", set);
      return 2;
    }
  }
  xir_diag d;
  xir_compiler *cc = NULL;
  xir_runtime *rt = NULL;
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  ro.workers = (uint32_t)H;
  if (xir_compiler_create(NULL, &cc, &d) || xir_runtime_create(&ro, &rt, &d)) {
    fprintf(stderr, "xir bench: %s\n", d.msg);
    xir_compiler_destroy(cc);
    return 1;
  }
  xir_plan_options po;
  xir_plan_options_default(&po);
  po.workers = (uint32_t)H;
  po.width = xir_compiler_width(cc);
  po.budget = 1 << 16;
  printf("regret of the default plan, %u workers, W = %u, %d rounds, %s per entry, %d confirmation "
         "rounds\n", (unsigned)H, po.width, (int)rounds, use_min ? "min" : "median", (int)confirm);
  double lsum = 0, worst = 0, ssum = 0, sworst = 0;
  int n = 0, bad = 0;
  char *list = strdup(cases), *save = NULL;
  for (char *t = list ? strtok_r(list, ";", &save) : NULL; t; t = strtok_r(NULL, ";", &save)) {
    char *colon = strchr(t, ':');
    if (!colon) {
      fprintf(stderr, "xir bench: case '%s' is not KERNEL:SHAPE\n", t);
      bad++;
      continue;
    }
    *colon = 0;
    if (kernels && !in_list(kernels, t)) continue;
    double r = 1, sw = 1;
    if (run_shape(cc, rt, t, colon + 1, &po, (int)rounds, use_min, all, (int)confirm, input_offset, &r, &sw)) {
      bad++;
      continue;
    }
    lsum += log(r);
    ssum += log(sw);
    if (r > worst) worst = r;
    if (sw > sworst) sworst = sw;
    n++;
  }
  free(list);
  printf("regret over %d cases: geomean %.3f, worst %.3f, failures %d  (the sweep alone: geomean "
         "%.3f, worst %.3f)\n",
         n, n ? exp(lsum / n) : 1.0, worst, bad, n ? exp(ssum / n) : 1.0, sworst);
  xir_runtime_destroy(rt);
  xir_compiler_destroy(cc);
  return bad || !n ? 1 : 0;
}

/* test_plan.c — execution work and the planner: the closed-form critical counts against a
 * task-by-task simulation of the runtime's assignment, against real runtime launches, the cost
 * policy hooks, and every bad-input path. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lower/jit.h"
#include "xir_plan.h"
#include "xir_runtime.h"
#include "xir_compile.h"

static void die(const xir_diag *d) {
  char b[2048];
  fail_msg("%s", xir_diag_format(d, b, sizeof b));
}

static xir_program *load(const char *k, const char *spec, xir_shape *s) {
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load(k, &p, &d) || xir_shape_parse(p, spec, s, &d)) die(&d);
  return p;
}

/* The whole launch's arithmetic (arith per packet × packets) of candidate (W = 16, B, ℓ) of p at
 * s, on one worker. */
static double total_arith(const xir_program *p, const xir_shape *s, uint32_t B, uint32_t ell) {
  xir_candidate c;
  uint8_t perm[1] = {0};
  xir_diag d;
  xir_execution_work w;
  if (xir_candidate_make(p, s, 16, B, ell, perm, &c, &d) || xir_execution_work_make(p, s, &c, 0, 1, &w, &d))
    die(&d);
  return w.arith_per_packet * (double)w.packets;
}

/* Simulates the runtime's static home assignment task by task. */
static void simulate(const xir_candidate *c, const xir_launch_shape *ls, uint64_t *crit_p,
                     uint64_t *crit_b, uint64_t *crit_t) {
  uint64_t pk[64] = {0}, bl[64] = {0}, tk[64] = {0};
  uint64_t ppb = c->B / c->W;
  uint32_t h = ls->active ? ls->active : 1;
  for (uint64_t t = 0; t < ls->tasks; t++) {
    uint64_t b0 = t * ls->grain, b1 = b0 + ls->grain < c->blocks ? b0 + ls->grain : c->blocks;
    uint32_t w = h == 1 ? 0 : (uint32_t)(t % h);
    for (uint64_t b = b0; b < b1; b++) {
      uint64_t first = b * ppb, n = c->packets - first < ppb ? c->packets - first : ppb;
      pk[w] += n;
      bl[w]++;
    }
    tk[w]++;
  }
  *crit_p = *crit_b = *crit_t = 0;
  for (int w = 0; w < 64; w++) {
    if (pk[w] > *crit_p) *crit_p = pk[w];
    if (bl[w] > *crit_b) *crit_b = bl[w];
    if (tk[w] > *crit_t) *crit_t = tk[w];
  }
  if (h == 1) *crit_t = 1; /* the caller runs the whole range once */
}

static void test_critical_counts_match_simulation(void **state) {
  (void)state;
  static const uint32_t Ws[] = {1, 2, 4, 8, 16}, Hs[] = {1, 3, 8};
  static const char *Rs[] = {"R=1,C=5", "R=2,C=5", "R=7,C=5", "R=33,C=5", "R=100,C=5", "R=257,C=5"};
  size_t checked = 0;
  for (size_t wi = 0; wi < 5; wi++)
    for (size_t ri = 0; ri < 6; ri++) {
      xir_shape s;
      xir_program *p = load("rmsnorm", Rs[ri], &s);
      for (uint32_t Bm = 1; Bm <= 4; Bm *= 4)
        for (uint32_t l = 1; l <= Ws[wi] * Bm; l *= 4) {
          xir_candidate c;
          uint8_t perm[1] = {0};
          xir_diag d;
          if (xir_candidate_make(p, &s, Ws[wi], Ws[wi] * Bm, l, perm, &c, &d)) die(&d);
          uint64_t L = c.blocks;
          uint32_t grains[] = {0, 1, 3, (uint32_t)(L > 1 ? L - 1 : 1), (uint32_t)L, UINT32_MAX,
                               (uint32_t)(L + 5)};
          for (size_t gi = 0; gi < sizeof grains / sizeof *grains; gi++)
            for (size_t hi = 0; hi < 3; hi++) {
              xir_execution_work w;
              if (xir_execution_work_make(p, &s, &c, grains[gi], Hs[hi], &w, &d)) die(&d);
              xir_launch_shape ls;
              if (xir_launch_resolve(Hs[hi], L, grains[gi], Hs[hi], &ls, &d)) die(&d);
              uint64_t cp, cb, ct;
              simulate(&c, &ls, &cp, &cb, &ct);
              assert_int_equal(w.tasks, ls.tasks);
              assert_int_equal(w.active, ls.active);
              if (w.critical_packets != cp || w.critical_blocks != cb || w.critical_tasks != ct)
                fail_msg("W=%u %s B=%u l=%u G=%u H=%u: formula %llu/%llu/%llu, simulation "
                         "%llu/%llu/%llu", Ws[wi], Rs[ri], c.B, l, grains[gi], Hs[hi],
                         (unsigned long long)w.critical_packets,
                         (unsigned long long)w.critical_blocks,
                         (unsigned long long)w.critical_tasks, (unsigned long long)cp,
                         (unsigned long long)cb, (unsigned long long)ct);
              checked++;
            }
        }
      xir_program_free(p);
    }
  assert_true(checked > 1000);
}

static int count_blocks(void *ctx, uint64_t b0, uint64_t b1) {
  (void)ctx;
  (void)b0;
  (void)b1;
  return 0;
}

/* Real launches: the runtime's counters agree with the prediction. */
static void test_runtime_counters_match_prediction(void **state) {
  (void)state;
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  ro.workers = 3;
  xir_runtime *rt;
  xir_diag d;
  if (xir_runtime_create(&ro, &rt, &d)) die(&d);
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=100,C=5", &s);
  xir_candidate c;
  uint8_t perm[1] = {0};
  if (xir_candidate_make(p, &s, 8, 8, 1, perm, &c, &d)) die(&d);
  uint32_t grains[] = {0, 1, 3, 12, 13, UINT32_MAX};
  for (size_t gi = 0; gi < 6; gi++)
    for (uint32_t H = 1; H <= 3; H++) {
      xir_execution_work w;
      if (xir_execution_work_make(p, &s, &c, grains[gi], H, &w, &d)) die(&d);
      xir_launch_stats st;
      if (xir_runtime_launch(rt, count_blocks, NULL, c.blocks, grains[gi], H, &st, &d)) die(&d);
      assert_int_equal(st.shape.tasks, w.tasks);
      assert_int_equal(st.shape.active, w.active);
      assert_int_equal(st.shape.caller_path, w.active == 1);
      uint64_t sum = 0;
      for (uint32_t k = 0; k < st.pool_workers; k++) {
        sum += st.tasks_per_worker[k];
        uint64_t home = st.tasks_per_worker[k] - st.steals_per_worker[k];
        if (w.active > 1) assert_true(home <= xir_launch_home_share(w.tasks, w.active, k));
      }
      assert_int_equal(sum, w.tasks);
      if (w.active > 1) assert_int_equal(xir_launch_home_share(w.tasks, w.active, 0), w.critical_tasks);
    }
  xir_program_free(p);
  xir_runtime_destroy(rt);
}

/* The report's base options: whole-program mapping, G = 0, the priors. */
static void test_base_options_keep_whole_program_and_g0(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=129,C=768", &s);
  xir_plan_options o;
  xir_plan_options_base(&o);
  assert_int_equal(o.local_lanes, 1);
  assert_int_equal(o.search_task_grain, 0);
  assert_true(o.blocks_per_task == XIR_PLAN_NO_GRAIN);
  assert_null(o.coefficients);
  xir_plan *pl;
  xir_diag d;
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  for (size_t i = 0; i < pl->count; i++) {
    assert_int_equal(pl->entries[i].cand.local, 1);
    assert_int_equal(pl->entries[i].work.grain, 0);
    if (i) assert_true(pl->entries[i - 1].cost.total <= pl->entries[i].cost.total);
  }
  assert_true(pl->coefficients.c[XIR_TERM_DISPATCH] == 0 && pl->coefficients.c[XIR_TERM_ACTIVATION] == 0);
  xir_plan_free(pl);
  xir_program_free(p);
}

/* What a user gets: ℓ and G searched with the machine's service model, the host's width, every
 * online CPU. */
static void test_defaults_search_l_and_g_with_the_service_model(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=129,C=768", &s);
  xir_plan_options o;
  xir_plan_options_default(&o);
  assert_int_equal(o.local_lanes, 0);
  assert_int_equal(o.search_task_grain, 1);
  assert_int_equal(o.width, 0);
  assert_true(o.workers >= 1);
  assert_non_null(o.coefficients);
  assert_ptr_equal(o.coefficients, xir_service_coefficients());
  xir_plan *pl;
  xir_diag d;
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  int several_l = 0, several_g = 0;
  for (size_t i = 0; i < pl->count; i++) {
    assert_int_equal(pl->entries[i].cand.W, xir__jit_host_max_width());
    several_l |= pl->entries[i].cand.local != pl->entries[0].cand.local;
    several_g |= pl->entries[i].work.grain != pl->entries[0].work.grain;
  }
  assert_true(several_l && several_g);
  for (int t = 0; t < XIR_TERM_COUNT; t++) assert_true(pl->coefficients.c[t] == o.coefficients->c[t]);
  xir_plan_free(pl);
  xir_program_free(p);
}

static void test_explicit_grain_wins_over_search(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=129,C=768", &s);
  xir_plan_options o;
  xir_plan_options_default(&o);
  o.search_task_grain = 1;
  o.blocks_per_task = 3;
  o.workers = 2;
  xir_plan *pl;
  xir_diag d;
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  for (size_t i = 0; i < pl->count; i++) assert_int_equal(pl->entries[i].work.grain, 3);
  xir_plan_free(pl);
  /* a grain larger than the launch is clamped to one task (documented) */
  o.blocks_per_task = 100000;
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  assert_int_equal(pl->entries[0].work.tasks, 1);
  assert_int_equal(pl->entries[0].work.grain_used, pl->entries[0].work.blocks);
  assert_int_equal(pl->entries[0].work.active, 1);
  xir_plan_free(pl);
  xir_program_free(p);
}

/* The experimental prior (activation 1e6) puts a small RMSNorm on the caller; the priors do not
 * charge activation and keep h = 2. */
static void test_activation_prior_selects_caller(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=64,C=256", &s);
  xir_plan_options o;
  xir_plan_options_base(&o);
  o.search_task_grain = 1;
  o.local_lanes = 0;
  o.workers = 2;
  xir_plan *pl;
  xir_diag d;
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  assert_int_equal(pl->entries[0].work.active, 2);
  xir_plan_free(pl);
  xir_cost_coefficients c;
  xir_cost_coefficients_experimental(&c);
  o.coefficients = &c;
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  assert_int_equal(pl->entries[0].work.active, 1);
  xir_plan_free(pl);
  xir_program_free(p);
}

typedef struct hook_state {
  int coef_calls, eval_calls, term_calls;
  double bad_value;
  int mode;
} hook_state;

static xir_status coef_hook(void *ud, xir_cost_coefficients *c) {
  hook_state *h = ud;
  h->coef_calls++;
  if (h->mode == 1) c->c[XIR_TERM_MEMORY] = h->bad_value;
  if (h->mode == 2) return XIR_ERR_COST;
  return XIR_OK;
}

/* Prefers the largest B, ignoring everything else: the solver must take the total as is. */
static xir_status eval_hook(void *ud, const xir_execution_work *w, const xir_cost_coefficients *c,
                            xir_cost_terms *out) {
  hook_state *h = ud;
  (void)c;
  h->eval_calls++;
  out->total = h->mode == 3 ? NAN : 1e6 / (double)w->packets + (double)w->blocks;
  return XIR_OK;
}

static double term_hook(void *ud, const xir_execution_work *w, const xir_cost_coefficients *c) {
  hook_state *h = ud;
  (void)w;
  (void)c;
  h->term_calls++;
  return h->mode == 4 ? -1.0 : 0.0;
}

static void test_policy_hooks(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=129,C=768", &s);
  hook_state hs;
  memset(&hs, 0, sizeof hs);
  xir_cost_policy pol;
  memset(&pol, 0, sizeof pol);
  pol.ud = &hs;
  pol.coefficients = coef_hook;
  pol.evaluate = eval_hook;
  xir_plan_options o;
  xir_plan_options_default(&o);
  o.local_lanes = 0;
  o.policy = &pol;
  xir_plan *pl;
  xir_diag d;
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  assert_int_equal(hs.coef_calls, 1);
  assert_int_equal((size_t)hs.eval_calls, pl->count);
  /* the complete objective decides: its minimum is the choice, not divided by anything */
  double best = pl->entries[0].cost.total;
  for (size_t i = 0; i < pl->count; i++) assert_true(best <= pl->entries[i].cost.total);
  assert_true(fabs(best - (1e6 / (double)pl->entries[0].work.packets + (double)pl->entries[0].work.blocks)) < 1e-9);
  xir_plan_free(pl);
  int calls = hs.eval_calls;
  /* the policy is borrowed only during the call */
  assert_int_equal(hs.eval_calls, calls);
  /* a per-term override, one at a time: the dispatch term from the hook, others default */
  pol.evaluate = NULL;
  pol.term[XIR_TERM_MEMORY] = term_hook;
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  assert_true(hs.term_calls > 0);
  for (size_t i = 0; i < pl->count; i++) {
    assert_true(pl->entries[i].cost.term[XIR_TERM_MEMORY] == 0.0);
    assert_true(pl->entries[i].cost.term[XIR_TERM_ARITH] > 0.0);
  }
  xir_plan_free(pl);
  /* garbage from hooks: named errors */
  hs.mode = 4;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_COST);
  assert_non_null(strstr(d.msg, "memory"));
  pol.term[XIR_TERM_MEMORY] = NULL;
  pol.evaluate = eval_hook;
  hs.mode = 3;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_COST);
  assert_non_null(strstr(d.msg, "total"));
  double bads[] = {NAN, INFINITY, -1.0};
  for (int i = 0; i < 3; i++) {
    hs.mode = 1;
    hs.bad_value = bads[i];
    assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_COST);
    assert_non_null(strstr(d.msg, "memory"));
  }
  hs.mode = 2;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_COST);
  assert_non_null(strstr(d.msg, "coefficients hook"));
  xir_program_free(p);
}

static void test_bad_options(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=129,C=768", &s);
  xir_plan_options o;
  xir_plan *pl;
  xir_diag d;
  xir_plan_options_default(&o);
  o.budget = 0;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_INVALID_ARG);
  assert_null(pl);
  xir_plan_options_default(&o);
  o.workers = 0;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_INVALID_ARG);
  xir_plan_options_default(&o);
  o.local_lanes = 0;
  o.search_task_grain = 1;
  o.budget = 10;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_BUDGET);
  assert_non_null(strstr(d.msg, "budget"));
  xir_plan_options_default(&o);
  o.local_lanes = 3;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_INVALID_ARG);
  xir_cost_coefficients c;
  xir_cost_coefficients_default(&c);
  c.c[XIR_TERM_DISPATCH] = -5;
  xir_plan_options_default(&o);
  o.coefficients = &c;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_COST);
  assert_non_null(strstr(d.msg, "dispatch"));
  /* a chain step may take back up to XIR_STEP_CREDIT_OPS arithmetic units, not more */
  xir_cost_coefficients_default(&c);
  c.ns_per_step[0] = -XIR_STEP_CREDIT_OPS * c.c[XIR_TERM_ARITH];
  c.ns_per_step[1] = -0.5 * c.c[XIR_TERM_ARITH];
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  for (size_t i = 0; i < pl->count; i++) assert_true(pl->entries[i].cost.total > 0);
  xir_plan_free(pl);
  c.ns_per_step[1] = -(XIR_STEP_CREDIT_OPS + 0.5) * c.c[XIR_TERM_ARITH];
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_COST);
  assert_non_null(strstr(d.msg, "ns_per_step[1]"));
  assert_null(pl);
  xir_cost_coefficients_default(&c);
  c.ns_per_hw_math = -1;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_COST);
  assert_non_null(strstr(d.msg, "ns_per_hw_math"));
  xir_program_free(p);
  /* attention admits no local redistribution: ℓ = 2 is rejected with the reason */
  p = load("attention", "B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16", &s);
  xir_plan_options_default(&o);
  o.local_lanes = 2;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "2-D tiles"));
  xir_plan_options_default(&o);
  o.local_lanes = 0;
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  assert_true(pl->nrejected > 0);
  assert_non_null(strstr(pl->rejected[0].reason, "2-D"));
  xir_plan_free(pl);
  xir_program_free(p);
}

/* Exp-heavy bodies get a larger arithmetic prior than add/mul bodies of the same size. */
static void test_primitive_weights_separate_bodies(void **state) {
  (void)state;
  xir_shape s1, s2;
  xir_program *a = load("rmsnorm", "R=64,C=256", &s1), *b = load("softmax_mask", "R=64,C=256", &s2);
  xir_candidate c1, c2;
  uint8_t perm[1] = {0};
  xir_diag d;
  if (xir_candidate_make(a, &s1, 16, 16, 16, perm, &c1, &d) ||
      xir_candidate_make(b, &s2, 16, 16, 16, perm, &c2, &d)) die(&d);
  xir_execution_work w1, w2;
  if (xir_execution_work_make(a, &s1, &c1, 0, 1, &w1, &d) || xir_execution_work_make(b, &s2, &c2, 0, 1, &w2, &d))
    die(&d);
  assert_true(w2.arith_per_packet > 1.5 * w1.arith_per_packet);
  xir_program_free(a);
  xir_program_free(b);
}

/* A window load's lane indices are not computed (the lowering reads a window at the unit's
 * offset and shuffles it by a compile-time pattern), so they cost nothing beyond the window's
 * load and shuffle: rope's partner x[r, c + 1 - 2(c % 2)] against a plain x[r, :]. */
static void test_window_index_not_charged(void **state) {
  (void)state;
  static const char *kText[2] = {
      "kernel k[R, C](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n  c = iota(C)\n  store y[r, :] = load x[r, sub(add(c, 1), mul(2, rem(c, 2)))]\n}\n",
      "kernel k[R, C](x: f32[R, C], y: out f32[R, C])\n"
      "root r in R {\n  store y[r, :] = load x[r, :]\n}\n"};
  xir_execution_work w[2];
  for (int i = 0; i < 2; i++) {
    xir_program *p;
    xir_shape s;
    xir_candidate c;
    uint8_t perm[1] = {0};
    xir_diag d;
    if (xir_program_parse(kText[i], strlen(kText[i]), "k", &p, &d) ||
        xir_shape_parse(p, "R=8,C=256", &s, &d) || xir_candidate_make(p, &s, 16, 16, 16, perm, &c, &d) ||
        xir_execution_work_make(p, &s, &c, 0, 1, &w[i], &d))
      die(&d);
    xir_program_free(p);
  }
  /* per vector: the copy's load and store (2) against those plus the window's shuffle and its
   * offset check (4); charging the index expression (iota, rem, mul, add, sub: 6.5 a vector)
   * would make it more than 4 */
  assert_true(w[0].arith_per_packet > w[1].arith_per_packet);
  assert_true(w[0].arith_per_packet <= 2.5 * w[1].arith_per_packet);
}

/* A gathered lane costs more without AVX-512 (src/cost/work.c, kGatherPerLaneNarrow): at W = 8
 * LLVM scalarizes gathers on AMD (rmsnorm 16384x8 at ℓ = 1 ran 2.6x ℓ = 8 on Zen 1), so the
 * arithmetic of a packet of gathers, per lane, is several times the W = 16 one. */
static void test_gather_cost_follows_width(void **state) {
  (void)state;
  static const char kText[] = "kernel k[R, C](x: f32[R, C], y: out f32[R, C])\n"
                              "root r in R {\n  store y[r, :] = load x[r, :]\n}\n";
  double lane[2]; /* W = 8, 16: arith per packet per lane */
  for (int v = 0; v < 2; v++) {
    uint32_t W = v ? 16 : 8;
    xir_program *p;
    xir_shape s;
    xir_candidate c;
    xir_execution_work w;
    uint8_t perm[1] = {0};
    xir_diag d;
    /* ℓ = 1: a lane a row; the rows of 8 are 8 elements apart, so the load gathers and the
     * store scatters */
    if (xir_program_parse(kText, strlen(kText), "k", &p, &d) || xir_shape_parse(p, "R=4096,C=8", &s, &d) ||
        xir_candidate_make(p, &s, W, 64, 1, perm, &c, &d) || xir_execution_work_make(p, &s, &c, 0, 1, &w, &d))
      die(&d);
    lane[v] = w.arith_per_packet / W;
    xir_program_free(p);
  }
  assert_true(lane[0] > 4 * lane[1]);
}

/* rope_cache at HD = 128: with ℓ = 128 every chunk of a row is one head, so the cos/sin row
 * of pos[r] is the same 8 vectors in every chunk, which LLVM keeps in registers for the row
 * (and the sign vector is a constant); with ℓ = 64 each chunk loads its half of the row. The
 * arithmetic of the whole launch must say so. */
static void test_chunk_invariant_periodic_loads(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rope_cache", "R=20,C=1152,HD=128,P=4096,H2=64", &s);
  assert_true(total_arith(p, &s, 128, 128) < 0.85 * total_arith(p, &s, 128, 64));
  xir_program_free(p);
}

/* rope_cache at HD = 96: with ℓ = 32 each chunk reads its cos/sin window with a masked load and
 * a vpermps per table and packet, and computes its residue c0 mod 96 (a division); with ℓ = 64
 * each row fills period buffers of its table values once and every packet reads them with a load
 * LLVM folds into its multiply, the chunk's offset one select. Measured on one worker (`xir bench
 * --suite peers --kernels rope_cache --configs fixed:l=32,B=128,G=1,fixed:l=64,B=128,G=1
 * --workers 1`): 45x960 4.20 against 4.01 us, 129x768 10.60 against 10.41; while the period
 * buffer's load was charged 2 a packet, the model put ℓ = 32 below ℓ = 64 and the planner chose it. */
static void test_period_buffer_load_is_one_operand(void **state) {
  (void)state;
  const char *shapes[2] = {"R=45,C=960,HD=96,P=4096,H2=48", "R=129,C=768,HD=96,P=4096,H2=48"};
  for (int i = 0; i < 2; i++) {
    xir_shape s;
    xir_program *p = load("rope_cache", shapes[i], &s);
    assert_true(total_arith(p, &s, 128, 64) < total_arith(p, &s, 128, 32));
    xir_program_free(p);
  }
}

/* A ragged tail chunk with a compile-time extent costs only its live packets (LLVM folds the
 * constant masks: rmsnorm C = 65 at ℓ = 128 is four full packets and a one-lane one), so it
 * costs no more than C = 80 (five full packets) at the same ℓ; with C a launch-time dim all
 * eight packets run masked. (Until the one-chunk rows became straight-line code this compared
 * ℓ = 128 with ℓ = 64 at C = 65, where ℓ = 64 paid for a two-chunk loop; both are loop-free
 * now and differ by one pairwise-tree step a row.) */
static void test_tail_chunk_counts_live_packets(void **state) {
  (void)state;
  xir_shape s[2];
  xir_program *p = load("rmsnorm", "R=17,C=65", &s[0]);
  xir_program *p80 = load("rmsnorm", "R=17,C=80", &s[1]);
  double total[3];
  for (int i = 0; i < 3; i++) {
    xir_candidate c;
    uint8_t perm[1] = {0};
    xir_diag d;
    xir_execution_work w;
    xir_program *q = i == 1 ? p80 : p;
    if (xir_candidate_make(q, &s[i == 1], 16, 128, 128, perm, &c, &d)) die(&d);
    if (i == 2) c.fixed_dims &= ~(1u << c.inner_dim); /* C at launch time */
    if (xir_execution_work_make(q, &s[i == 1], &c, 0, 1, &w, &d)) die(&d);
    total[i] = w.arith_per_packet * (double)w.packets;
  }
  assert_true(total[0] <= total[1]);
  assert_true(total[2] > 1.3 * total[0]);
  xir_program_free(p);
  xir_program_free(p80);
}

/* A compile-time row of at most XIR__UNROLL_CHUNKS (4) full chunks has no chunk loop (lower.c,
 * tile_loops_at: straight-line chunks), so it pays no loop overhead: rmsnorm at ℓ = 64 over rows
 * of 256, 320 and 384 (four, five and six chunks). Each further chunk adds its packets and one
 * iteration of the two consumer loops, but the fifth chunk also adds the first four's iterations
 * (the loops appear): arith(320) − arith(256) exceeds arith(384) − arith(320) by eight iterations
 * of overhead a row (equal when every row paid for a loop). */
static void test_one_chunk_row_has_no_loop(void **state) {
  (void)state;
  const char *shapes[3] = {"R=50,C=256", "R=50,C=320", "R=50,C=384"};
  double total[3];
  for (int i = 0; i < 3; i++) {
    xir_shape s;
    xir_program *p = load("rmsnorm", shapes[i], &s);
    xir_candidate c;
    uint8_t perm[1] = {0};
    xir_diag d;
    xir_execution_work w;
    if (xir_candidate_make(p, &s, 16, 128, 64, perm, &c, &d) ||
        xir_execution_work_make(p, &s, &c, 0, 1, &w, &d))
      die(&d);
    total[i] = w.arith_per_packet * (double)w.packets;
    xir_program_free(p);
  }
  double d1 = total[1] - total[0], d2 = total[2] - total[1];
  assert_true(d2 > 0);
  assert_true(d1 > d2 + 50); /* at least one unit a row */
}

/* Vector math in a chunk loop pays for its registers (work.c, spill_ops): softmax_mask's sum
 * loop evaluates exp per packet, and k = 8 packets' bodies (l = 128) do not fit 32 registers
 * where k = 4 (l = 64) do; measured, l = 128 ran 6-20 % slower on one worker. So the whole
 * launch's arithmetic at l = 128 is above l = 64's (without the term it was below, by the loop
 * overhead), and a body without vector math (layernorm) keeps l = 128 cheaper than l = 64, as
 * before. */
static void test_vector_math_registers_price_wide_units(void **state) {
  (void)state;
  const char *kernels[2] = {"softmax_mask", "layernorm"};
  double total[2][2];
  for (int k = 0; k < 2; k++) {
    xir_shape s;
    xir_program *p = load(kernels[k], "R=400,C=3000", &s);
    total[k][0] = total_arith(p, &s, 128, 128);
    total[k][1] = total_arith(p, &s, 128, 64);
    xir_program_free(p);
  }
  assert_true(total[0][0] > 1.02 * total[0][1]);
  assert_true(total[1][0] < total[1][1]);
}

/* The caller holds the critical share; the woken worker starts a/2 after it (the wake-up half
 * of the calibrated round trip a) and the caller waits a/2 for its completion. So the activation
 * term is a/2 + max(0, a/2 − 2d) for an imbalance term d: the whole activation with equal
 * shares, the completion half a/2 when the caller's extra work covers the wake-up. */
/* A task's cost past L2 (ns_per_task_far): the dispatch term is c[DISPATCH] per critical task
 * while the per-core footprint stays within mem_bytes[0], c[DISPATCH] + ns_per_task_far from
 * mem_bytes[1] on, log-linear between; 0 keeps c[DISPATCH] everywhere. rope_cache 300x4096 at
 * HD = 256 (about 7 MiB a core) with 150 tasks of 2 rows ran 79 us where 8 tasks ran 64-67
 * (calibrate.c); the plan took the 150 tasks while the L2 figure was the only task cost. */
static void test_far_task_cost(void **state) {
  (void)state;
  xir_diag d;
  uint8_t perm[1] = {0};
  xir_cost_coefficients co;
  xir_cost_coefficients_default(&co);
  co.c[XIR_TERM_DISPATCH] = 25;
  co.mem_bytes[0] = 256 << 10;
  co.mem_bytes[1] = 16 << 20;
  co.mem_bytes[2] = 32 << 20;
  co.mem_ns[0] = co.mem_ns[1] = co.mem_ns[2] = 0.01;
  static const char *const shapes[] = {"R=8,C=1024", "R=300,C=4096", "R=64,C=8192"};
  for (int i = 0; i < 3; i++) {
    xir_shape s;
    xir_program *p = load("rmsnorm", shapes[i], &s);
    xir_candidate c;
    if (xir_candidate_make(p, &s, 16, 128, 128, perm, &c, &d)) die(&d);
    xir_execution_work w;
    xir_cost_terms t;
    if (xir_execution_work_make(p, &s, &c, 2, 2, &w, &d)) die(&d);
    double fp = w.footprint_bytes / 2, tasks = (double)w.critical_tasks;
    co.ns_per_task_far = 0;
    if (xir_cost_evaluate(NULL, &w, &co, &t, &d)) die(&d);
    assert_true(fabs(t.term[XIR_TERM_DISPATCH] - 25 * tasks) < 1e-9 * tasks);
    co.ns_per_task_far = 800;
    if (xir_cost_evaluate(NULL, &w, &co, &t, &d)) die(&d);
    double f = fp <= co.mem_bytes[0] ? 0 : fp >= co.mem_bytes[1] ? 1
               : log(fp / co.mem_bytes[0]) / log(co.mem_bytes[1] / co.mem_bytes[0]);
    if (i == 0) assert_true(f == 0);             /* 32 KiB in, 32 KiB out: in L2 */
    if (i == 1) assert_true(f > 0.5 && f < 1);   /* about 5 MiB a core */
    if (i == 2) assert_true(f > 0.5);
    assert_true(fabs(t.term[XIR_TERM_DISPATCH] - (25 + 800 * f) * tasks) < 1e-6 * (1 + tasks));
    xir_program_free(p);
  }
  /* a negative or non-finite figure is refused */
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=8,C=1024", &s);
  xir_plan_options o;
  xir_plan_options_default(&o);
  co.ns_per_task_far = -1;
  o.coefficients = &co;
  xir_plan *pl;
  assert_int_equal(xir_plan_make(p, &s, &o, &pl, &d), XIR_ERR_COST);
  assert_non_null(strstr(d.msg, "ns_per_task_far"));
  xir_program_free(p);
}

static void test_activation_overlaps_imbalance(void **state) {
  (void)state;
  xir_shape s;
  xir_program *p = load("rmsnorm", "R=3,C=4096", &s);
  xir_candidate c;
  uint8_t perm[1] = {0};
  xir_diag d;
  if (xir_candidate_make(p, &s, 16, 128, 128, perm, &c, &d)) die(&d);
  xir_cost_coefficients co;
  xir_cost_coefficients_default(&co);
  const uint32_t grains[2] = {1, 2}; /* 3 tasks: 2 rows against 1; 2 tasks: 2 against 1 */
  for (int g = 0; g < 2; g++) {
    xir_execution_work w;
    xir_cost_terms t;
    if (xir_execution_work_make(p, &s, &c, grains[g], 2, &w, &d)) die(&d);
    double imb = 0;
    co.c[XIR_TERM_ACTIVATION] = 1e9; /* far above any imbalance: a/2 + a/2 − 2d */
    if (xir_cost_evaluate(NULL, &w, &co, &t, &d)) die(&d);
    imb = t.term[XIR_TERM_IMBALANCE];
    assert_true(imb > 0);
    assert_true(fabs(t.term[XIR_TERM_ACTIVATION] - (1e9 - 2 * imb)) < 1e-6 * 1e9);
    co.c[XIR_TERM_ACTIVATION] = imb; /* a/2 < 2d: the wake-up is covered, the completion is not */
    if (xir_cost_evaluate(NULL, &w, &co, &t, &d)) die(&d);
    assert_true(fabs(t.term[XIR_TERM_ACTIVATION] - 0.5 * imb) < 1e-9 * imb);
  }
  /* equal shares (R = 4, one row a task): the whole activation */
  xir_program_free(p);
  p = load("rmsnorm", "R=4,C=4096", &s);
  if (xir_candidate_make(p, &s, 16, 128, 128, perm, &c, &d)) die(&d);
  xir_execution_work w;
  xir_cost_terms t;
  co.c[XIR_TERM_ACTIVATION] = 200;
  if (xir_execution_work_make(p, &s, &c, 1, 2, &w, &d) || xir_cost_evaluate(NULL, &w, &co, &t, &d))
    die(&d);
  assert_true(t.term[XIR_TERM_IMBALANCE] == 0);
  assert_true(t.term[XIR_TERM_ACTIVATION] == 200);
  xir_program_free(p);
}

/* The calibration yields finite, non-negative figures whose coefficients plan (no timing is
 * asserted: only that the measured service model is usable). */
static void test_calibration_is_usable(void **state) {
  (void)state;
  xir_diag d;
  xir_compiler *cc;
  xir_runtime *rt;
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  ro.workers = 1;
  if (xir_compiler_create(NULL, &cc, &d) || xir_runtime_create(&ro, &rt, &d)) die(&d);
  xir_calibration cal;
  assert_int_equal(xir_calibrate(cc, rt, &cal, &d), XIR_ERR_INVALID_ARG); /* needs 2 workers */
  xir_runtime_destroy(rt);
  ro.workers = 2;
  if (xir_runtime_create(&ro, &rt, &d)) die(&d);
  if (xir_calibrate(cc, rt, &cal, &d)) die(&d);
  double v[] = {cal.ns_per_arith, cal.ns_per_byte, cal.ns_per_block, cal.ns_per_task, cal.ns_activation};
  for (int i = 0; i < 5; i++) assert_true(isfinite(v[i]) && v[i] >= 0);
  assert_true(cal.ns_per_arith > 0);
  xir_cost_coefficients c;
  xir_cost_coefficients_from_calibration(&cal, &c);
  xir_shape s;
  xir_program *p = load("gelu_residual", "R=64,C=256", &s);
  xir_plan_options o;
  xir_plan_options_default(&o);
  o.local_lanes = 0;
  o.search_task_grain = 1;
  o.workers = 2;
  o.coefficients = &c;
  xir_plan *pl;
  if (xir_plan_make(p, &s, &o, &pl, &d)) die(&d);
  assert_true(pl->count > 0 && isfinite(pl->entries[0].cost.total));
  xir_plan_free(pl);
  xir_program_free(p);
  xir_runtime_destroy(rt);
  xir_compiler_destroy(cc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_critical_counts_match_simulation),
      cmocka_unit_test(test_runtime_counters_match_prediction),
      cmocka_unit_test(test_base_options_keep_whole_program_and_g0),
      cmocka_unit_test(test_defaults_search_l_and_g_with_the_service_model),
      cmocka_unit_test(test_explicit_grain_wins_over_search),
      cmocka_unit_test(test_activation_prior_selects_caller),
      cmocka_unit_test(test_policy_hooks),
      cmocka_unit_test(test_bad_options),
      cmocka_unit_test(test_primitive_weights_separate_bodies),
      cmocka_unit_test(test_window_index_not_charged),
      cmocka_unit_test(test_gather_cost_follows_width),
      cmocka_unit_test(test_chunk_invariant_periodic_loads),
      cmocka_unit_test(test_period_buffer_load_is_one_operand),
      cmocka_unit_test(test_activation_overlaps_imbalance),
      cmocka_unit_test(test_far_task_cost),
      cmocka_unit_test(test_tail_chunk_counts_live_packets),
      cmocka_unit_test(test_one_chunk_row_has_no_loop),
      cmocka_unit_test(test_vector_math_registers_price_wide_units),
      cmocka_unit_test(test_calibration_is_usable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

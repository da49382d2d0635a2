/* test_alloc_faults.c — the allocation-failure sweep (issue 13).
 *
 * Each scenario drives public entry points from nothing to nothing: parse, print, reparse,
 * builder, shape binding, require clauses, the interpreter, the bridge, cost, planning,
 * compilation (JIT), the runtime and batches. The sweep first runs a scenario without faults and
 * counts its allocations N (alloc + realloc calls through xir_set_allocator), then reruns it
 * failing the k-th call, for k = 1..N: once only, and (full sweep) that call and every later one.
 * Every run must end in XIR_OK or XIR_ERR_NOMEM, never crash (ASan/UBSan builds catch bad reads),
 * and free every block it allocated (the fault allocator counts live blocks, so leaks are caught
 * without LeakSanitizer too).
 *
 * Default run (CTest `test_alloc_faults`): the smoke sweep, every k failing once, over a few
 * kernels per scenario. `test_alloc_faults_full` (label slow, XIR_SWEEP=full) runs every built-in
 * kernel through every scenario and the whole valid corpus through parse/print, failing once and
 * persistently. A test name as argument runs that test only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "faultalloc.h"
#include "xir.h"
#include "xir_compile.h"
#include "xir_plan.h"
#include "xir_runtime.h"

static int g_full;

typedef xir_status (*scenario_fn)(const void *ud, xir_diag *d);

/* ---- scenarios (each frees everything it made, on every path) ---- */

/* parse -> print -> parse the print -> print again; both prints equal. */
static xir_status sc_text(const void *ud, xir_diag *d) {
  const char *text = ud;
  xir_program *p = NULL, *q = NULL;
  char *t1 = NULL, *t2 = NULL;
  xir_status s = xir_program_parse(text, strlen(text), "sweep.xir", &p, d);
  if (!s) s = xir_program_print(p, &t1, d);
  if (!s) s = xir_program_parse(t1, strlen(t1), "print.xir", &q, d);
  if (!s) s = xir_program_print(q, &t2, d);
  if (!s && strcmp(t1, t2) != 0) s = XIR_ERR_FORMAT; /* would be a round-trip bug */
  xir_free(t1);
  xir_free(t2);
  xir_program_free(p);
  xir_program_free(q);
  return s;
}

static xir_status sc_kernel_text(const void *ud, xir_diag *d) {
  return sc_text(xir_kernel_text(xir_kernel_find(ud)), d);
}

/* The builder API directly (y[r, :] = exp(x[r, :]) * s). */
static xir_status sc_builder(const void *ud, xir_diag *d) {
  (void)ud;
  xir_builder *b = NULL;
  xir_status s = xir_builder_new("built", &b);
  if (s) {
    snprintf(d->msg, sizeof d->msg, "xir_builder_new: %s", xir_status_name(s));
    return s;
  }
  xir_builder_set_loc(b, "built.c", 1, 1);
  int R = xir_builder_dim(b, "R"), C = xir_builder_dim(b, "C");
  int dims[2] = {R, C};
  int x = xir_builder_buffer(b, "x", XIR_F32, 2, dims, 0);
  int y = xir_builder_buffer(b, "y", XIR_F32, 2, dims, 1);
  int sc = xir_builder_scalar(b, "s", XIR_F32, 1, 2.0);
  xir_value one = xir_builder_const_i64(b, 1), rdim = xir_builder_dim_value(b, R);
  xir_value args[2] = {rdim, one};
  xir_builder_require(b, xir_builder_op(b, XIR_OP_GE, 2, args));
  int r = xir_builder_root(b, "r", R);
  xir_index idx[2] = {xir_at(xir_builder_root_value(b, r)), xir_slice()};
  xir_value v = xir_builder_load(b, x, 2, idx);
  xir_builder_name(b, v, "v");
  xir_value e = xir_builder_op(b, XIR_OP_EXP, 1, &v);
  xir_value m[2] = {e, xir_builder_param_value(b, sc)};
  xir_value out = xir_builder_op(b, XIR_OP_MUL, 2, m);
  xir_builder_name(b, out, "res");
  xir_builder_store(b, y, 2, idx, out);
  xir_program *p = NULL;
  s = xir_builder_finish(b, &p, d);
  char *t = NULL;
  if (!s) s = xir_program_print(p, &t, d);
  xir_free(t);
  xir_program_free(p);
  return s;
}

typedef struct kshape {
  const char *kernel, *shape;
} kshape;

/* kernel_load, shape_parse (require clauses), interpreter on a small shape. */
static xir_status sc_interpret(const void *ud, xir_diag *d) {
  const kshape *ks = ud;
  xir_program *p = NULL;
  xir_status s = xir_kernel_load(ks->kernel, &p, d);
  xir_shape sh;
  if (!s) s = xir_shape_parse(p, ks->shape, &sh, d);
  if (s) {
    xir_program_free(p);
    return s;
  }
  int np = xir_program_num_params(p);
  xir_arg *args = calloc((size_t)np, sizeof *args);
  for (int i = 0; i < np; i++) {
    xir_param_info info;
    xir_program_param(p, i, &info);
    size_t n = xir_param_numel(p, i, &sh);
    if (info.kind != XIR_PARAM_BUFFER) {
      args[i].use_default = info.has_default;
      args[i].scalar = 1;
    } else if (info.is_output) {
      args[i].out64 = calloc(n, sizeof(double));
    } else {
      float *in = calloc(n, sizeof(float));
      for (size_t k = 0; k < n; k++) in[k] = (float)((k % 7) * 0.25 - 0.5);
      args[i].in = in;
    }
  }
  s = xir_interpret(p, &sh, args, d);
  for (int i = 0; i < np; i++) {
    free((void *)args[i].in);
    free(args[i].out64);
  }
  free(args);
  xir_program_free(p);
  return s;
}

/* The bridge and the planner with ℓ and the grain searched (rejections, entries, cost). */
static xir_status sc_plan(const void *ud, xir_diag *d) {
  const kshape *ks = ud;
  xir_program *p = NULL;
  xir_status s = xir_kernel_load(ks->kernel, &p, d);
  xir_shape sh;
  if (!s) s = xir_shape_parse(p, ks->shape, &sh, d);
  xir_candidate *all = NULL;
  size_t n = 0;
  if (!s) s = xir_candidates(p, &sh, 8, &all, &n, d);
  if (!s && n) {
    char name[128];
    xir_candidate c;
    xir_candidate_name(p, &all[n - 1], name, sizeof name);
    s = xir_candidate_parse(p, &sh, name, 8, &c, d);
    xir_execution_work w;
    xir_cost_coefficients co;
    xir_cost_terms t;
    xir_cost_coefficients_default(&co);
    if (!s) s = xir_execution_work_make(p, &sh, &c, 0, 2, &w, d);
    if (!s) s = xir_cost_evaluate(NULL, &w, &co, &t, d);
  }
  xir_free(all);
  xir_plan_options o;
  xir_plan_options_default(&o);
  o.local_lanes = 0;
  o.search_task_grain = 1;
  o.workers = 2;
  o.width = 8;
  xir_plan *pl = NULL;
  if (!s) s = xir_plan_make(p, &sh, &o, &pl, d);
  xir_plan_free(pl);
  xir_program_free(p);
  return s;
}

/* A compiler, one compile (its printed program and IR), packing and running the kernel. */
static xir_status sc_compile(const void *ud, xir_diag *d) {
  const kshape *ks = ud;
  xir_program *p = NULL;
  xir_compiler *cc = NULL;
  xir_status s = xir_kernel_load(ks->kernel, &p, d);
  xir_shape sh;
  if (!s) s = xir_shape_parse(p, ks->shape, &sh, d);
  xir_compiler_options co = {0};
  if (!s) s = xir_compiler_create(&co, &cc, d);
  xir_candidate c;
  xir_candidate *all = NULL;
  size_t n = 0;
  if (!s) s = xir_candidates(p, &sh, xir_compiler_width(cc), &all, &n, d);
  if (!s) c = all[n - 1]; /* the widest B, largest l */
  xir_free(all);
  const xir_kernel *k = NULL;
  if (!s) s = xir_compile(cc, p, &sh, &c, &k, d);
  if (!s) {
    int np = xir_program_num_params(p);
    xir_arg args[XIR_MAX_PARAMS];
    memset(args, 0, sizeof args);
    float *bufs[XIR_MAX_PARAMS] = {0};
    for (int i = 0; i < np; i++) {
      xir_param_info info;
      xir_program_param(p, i, &info);
      size_t n = xir_param_numel(p, i, &sh);
      if (info.kind == XIR_PARAM_BUFFER) {
        bufs[i] = calloc(n ? n : 1, sizeof(float));
        if (info.is_output) args[i].out = bufs[i];
        else args[i].in = bufs[i];
      } else {
        args[i].use_default = 1;
      }
    }
    void *slots = calloc(1, xir_kernel_args_size(k) + 8);
    s = xir_kernel_pack_args(k, args, slots, d);
    if (!s) xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k));
    xir_kernel_info info;
    xir_kernel_get_info(k, &info);
    free(slots);
    for (int i = 0; i < np; i++) free(bufs[i]);
  }
  xir_compiler_destroy(cc);
  xir_program_free(p);
  return s;
}

static int add_fn(void *ctx, uint64_t b, uint64_t e) {
  (void)ctx;
  (void)b;
  (void)e;
  return 0;
}

/* A runtime of 2 workers, one launch, a batch of 40 launches (it grows), stats. */
static xir_status sc_runtime(const void *ud, xir_diag *d) {
  (void)ud;
  xir_runtime_options o;
  xir_runtime_options_default(&o);
  o.workers = 2;
  xir_runtime *rt = NULL;
  xir_batch *b = NULL;
  xir_status s = xir_runtime_create(&o, &rt, d);
  if (!s) s = xir_runtime_launch(rt, add_fn, NULL, 16, 1, 2, NULL, d);
  if (!s) s = xir_batch_create(rt, &b, d);
  for (int i = 0; i < 40 && !s; i++) s = xir_batch_record(b, add_fn, NULL, 8, 1, 2, d);
  if (!s) s = xir_runtime_submit(rt, b, d);
  xir_launch_stats st;
  if (!s) s = xir_batch_stats(b, 39, &st, d);
  xir_batch_destroy(b);
  xir_runtime_destroy(rt);
  return s;
}

static xir_status sc_parse_file(const void *ud, xir_diag *d) {
  xir_program *p = NULL;
  xir_status s = xir_program_parse_file(ud, &p, d);
  xir_program_free(p);
  return s;
}

/* ---- the sweep ---- */

static void sweep(const char *name, scenario_fn f, const void *ud) {
  xir_diag d;
  fa_install();
  /* warm-up: a lazily created global (if any) is allocated once, not counted as a leak */
  xir_status s = f(ud, &d);
  if (s) fail_msg("%s: fails without faults: %s (%s)", name, xir_status_name(s), d.msg);
  long live0 = fa_live();
  fa_arm(0, 0);
  s = f(ud, &d);
  long n = fa_calls();
  if (s) fail_msg("%s: fails without faults: %s (%s)", name, xir_status_name(s), d.msg);
  if (fa_live() != live0) fail_msg("%s: leaks %ld blocks without faults", name, fa_live() - live0);
  long runs = 0;
  for (int persistent = 0; persistent <= g_full; persistent++) {
    for (long k = 1; k <= n; k++) {
      memset(&d, 0, sizeof d);
      long before = fa_live();
      fa_arm(k, persistent);
      s = f(ud, &d);
      int injected = fa_injected();
      fa_arm(0, 0);
      runs++;
      long leaked = fa_live() - before;
      if (s != XIR_OK && s != XIR_ERR_NOMEM)
        fail_msg("%s: failing allocation %ld of %ld (%s) gave '%s', not 'out of memory': %s",
                 name, k, n, persistent ? "and every later one" : "once", xir_status_name(s),
                 d.msg);
      if (s == XIR_ERR_NOMEM && !injected)
        fail_msg("%s: k = %ld: out of memory reported but no allocation failed", name, k);
      if (s == XIR_ERR_NOMEM && d.msg[0] == 0)
        fail_msg("%s: k = %ld: out of memory without a message", name, k);
      if (leaked)
        fail_msg("%s: failing allocation %ld of %ld (%s) leaks %ld blocks (%s)", name, k, n,
                 persistent ? "and every later one" : "once", leaked, xir_status_name(s));
    }
  }
  fa_uninstall();
  print_message("%s: %ld allocations, %ld faulted runs\n", name, n, runs);
}

static const char *kRequireText =
    "kernel req[B, HQ, HKV, D](k: f32[B, HKV, D], o: out f32[B, HQ, D])\n"
    "  require HKV > 0 && HQ >= HKV\n"
    "  require HQ % HKV == 0\n"
    "root b in B, h in HQ {\n"
    "  g = h / (HQ / HKV)\n"
    "  store o[b, h, :] = load k[b, g, :] * 2.0 + f32(iota(D))\n"
    "}\n";

/* A small shape for every built-in kernel (the full sweep runs each through every scenario). */
static const kshape kAll[] = {
    {"rmsnorm", "R=3,C=8"},        {"layernorm", "R=3,C=8"},
    {"rope", "R=2,C=8,HD=4"},      {"softmax_mask", "R=3,C=9"},
    {"softmax_causal", "R=3,C=9"}, {"swiglu", "R=2,C=8"},
    {"gelu_residual", "R=2,C=8"},  {"attention", "B=1,HQ=2,HKV=1,Q=3,K=3,D=4,DV=2"},
    {"attention_causal", "B=1,HQ=2,HKV=1,Q=3,K=3,D=4,DV=2"},
};

static void sweep_all(const char *what, scenario_fn f) {
  for (size_t i = 0; i < sizeof kAll / sizeof kAll[0]; i++) {
    char name[96];
    snprintf(name, sizeof name, "%s:%s", what, kAll[i].kernel);
    sweep(name, f, &kAll[i]);
  }
}

static const kshape kInterpRms = {"rmsnorm", "R=3,C=5"};
static const kshape kInterpAttn = {"attention_causal", "B=1,HQ=2,HKV=1,Q=3,K=3,D=4,DV=2"};
static const kshape kPlanSoftmax = {"softmax_mask", "R=5,C=33"};
/* attention's 2-D tiles make every l > 1 illegal: the planner records rejections */
static const kshape kPlanAttn = {"attention", "B=1,HQ=2,HKV=1,Q=3,K=5,D=4,DV=2"};
static const kshape kCompileRms = {"rmsnorm", "R=3,C=8"};

static void test_text_kernels(void **state) {
  (void)state;
  for (int i = 0; i < xir_kernel_count(); i++) {
    char name[64];
    snprintf(name, sizeof name, "text:%s", xir_kernel_name(i));
    sweep(name, sc_kernel_text, xir_kernel_name(i));
  }
}
static void test_text_require(void **state) {
  (void)state;
  sweep("text:require", sc_text, kRequireText);
}
static void test_builder(void **state) {
  (void)state;
  sweep("builder", sc_builder, NULL);
}
static void test_interpret(void **state) {
  (void)state;
  if (g_full) {
    sweep_all("interpret", sc_interpret);
    return;
  }
  sweep("interpret:rmsnorm", sc_interpret, &kInterpRms);
  sweep("interpret:attention_causal", sc_interpret, &kInterpAttn);
}
static void test_plan(void **state) {
  (void)state;
  if (g_full) {
    sweep_all("plan", sc_plan);
    return;
  }
  sweep("plan:softmax_mask", sc_plan, &kPlanSoftmax);
  sweep("plan:attention", sc_plan, &kPlanAttn);
}
static void test_compile(void **state) {
  (void)state;
  if (g_full) {
    sweep_all("compile", sc_compile);
    return;
  }
  sweep("compile:rmsnorm", sc_compile, &kCompileRms);
}

/* Full sweep: parse/print every file of the valid corpus. */
static void test_corpus(void **state) {
  (void)state;
  if (!g_full) skip();
  const char *src = getenv("XIR_SOURCE_DIR");
  if (!src) skip();
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "ls %s/tests/corpus/valid/*.xir", src);
  FILE *ls = popen(cmd, "r");
  assert_non_null(ls);
  char path[1024];
  int files = 0;
  while (fgets(path, sizeof path, ls)) {
    path[strcspn(path, "\n")] = 0;
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    sweep(strrchr(path, '/') + 1, sc_text, text);
    files++;
  }
  pclose(ls);
  assert_true(files > 0);
}
static void test_runtime(void **state) {
  (void)state;
  sweep("runtime+batch", sc_runtime, NULL);
}
static void test_parse_file(void **state) {
  (void)state;
  char path[] = "/tmp/xir-faults-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_true(write(fd, kRequireText, strlen(kRequireText)) == (ssize_t)strlen(kRequireText));
  close(fd);
  sweep("parse_file", sc_parse_file, path);
  unlink(path);
}

int main(int argc, char **argv) {
  const char *mode = getenv("XIR_SWEEP");
  g_full = mode && strcmp(mode, "full") == 0;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text_kernels), cmocka_unit_test(test_text_require),
      cmocka_unit_test(test_builder),      cmocka_unit_test(test_interpret),
      cmocka_unit_test(test_plan),         cmocka_unit_test(test_compile),
      cmocka_unit_test(test_runtime),      cmocka_unit_test(test_parse_file),
      cmocka_unit_test(test_corpus),
  };
  if (argc > 1) cmocka_set_test_filter(argv[1]);
  return cmocka_run_group_tests(tests, NULL, NULL);
}

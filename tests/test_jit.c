/* test_jit.c — the JIT wrapper (src/lower/jit.c): compile and run, errors, hashes, cache, forced
 * targets, many modules, concurrent compiles.
 *
 * Modules are written as LLVM IR text (xir__jit_module_from_ir), so this test needs no LLVM
 * headers. `test_jit --hash` prints the hashes of the reference kernel and exits: the test runs
 * itself as a second process to prove the object bytes are stable across processes. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lower/jit.h"
#include "lower/vmath.h"
#include "testutil.h"

/* fill(args, b0, b1): for blocks b in [b0, b1) writes out[8b + j] = 8b + j + bias, where
 * args = {float *out, float bias}. Built with a loop over blocks, 8 lanes per block. */
static const char *k_fill_ir =
    "define void @fill(ptr %args, i64 %b0, i64 %b1) {\n"
    "entry:\n"
    "  %out = load ptr, ptr %args, align 8\n"
    "  %pb = getelementptr i8, ptr %args, i64 8\n"
    "  %bias = load float, ptr %pb, align 4\n"
    "  %bi = insertelement <8 x float> poison, float %bias, i64 0\n"
    "  %bv = shufflevector <8 x float> %bi, <8 x float> poison, <8 x i32> zeroinitializer\n"
    "  %c = icmp ult i64 %b0, %b1\n"
    "  br i1 %c, label %loop, label %exit\n"
    "loop:\n"
    "  %b = phi i64 [ %b0, %entry ], [ %bn, %loop ]\n"
    "  %base = mul i64 %b, 8\n"
    "  %bf = uitofp i64 %base to float\n"
    "  %v0 = insertelement <8 x float> poison, float %bf, i64 0\n"
    "  %vs = shufflevector <8 x float> %v0, <8 x float> poison, <8 x i32> zeroinitializer\n"
    "  %v1 = fadd <8 x float> %vs, <float 0.0, float 1.0, float 2.0, float 3.0, float 4.0, "
    "float 5.0, float 6.0, float 7.0>\n"
    "  %v = fadd <8 x float> %v1, %bv\n"
    "  %p = getelementptr float, ptr %out, i64 %base\n"
    "  store <8 x float> %v, ptr %p, align 4\n"
    "  %bn = add i64 %b, 1\n"
    "  %d = icmp ult i64 %bn, %b1\n"
    "  br i1 %d, label %loop, label %exit\n"
    "exit:\n"
    "  ret void\n"
    "}\n"
    "define i32 @helper() {\n"
    "  ret i32 42\n"
    "}\n";

typedef void (*fill_fn)(void *args, int64_t b0, int64_t b1);
struct fill_args {
  float *out;
  float bias;
};

static const xir__jit_artifact *compile_text(xir__jit *jit, const char *ir, const char *entry,
                                             const char *key, int *cached, xir_diag *d,
                                             xir_status *st) {
  xir__jit_module m;
  *st = xir__jit_module_from_ir(jit, "fill", ir, &m, d);
  if (*st) return NULL;
  const xir__jit_artifact *a = NULL;
  *st = xir__jit_add(jit, &m, entry, key, &a, cached, d);
  return a;
}

static const xir__jit_artifact *compile_ok(xir__jit *jit, const char *ir, const char *entry,
                                           const char *key, int *cached) {
  xir_diag d = {0};
  xir_status st;
  const xir__jit_artifact *a = compile_text(jit, ir, entry, key, cached, &d, &st);
  if (st) fail_msg("compile: %s: %s", xir_status_name(st), d.msg);
  assert_non_null(a);
  return a;
}

static void run_fill(const xir__jit_artifact *a, float bias) {
  enum { BLOCKS = 37 };
  guarded_f32 g;
  assert_int_equal(guarded_alloc(&g, BLOCKS * 8), 0);
  struct fill_args args = {g.data, bias};
  fill_fn f = (fill_fn)a->entry;
  f(&args, 0, 20); /* two consecutive ranges, as the runtime calls it */
  f(&args, 20, BLOCKS);
  for (int i = 0; i < BLOCKS * 8; i++) assert_true(g.data[i] == (float)i + bias);
  assert_true(guarded_intact(&g));
  guarded_free(&g);
}

static void test_compile_and_run_block_loop(void **state) {
  (void)state;
  xir_diag d = {0};
  xir__jit *jit;
  assert_int_equal(xir__jit_create(NULL, &jit, &d), XIR_OK);
  assert_true(xir__jit_max_width(jit) >= 4);
  assert_int_equal(xir__jit_max_width(jit), xir__jit_host_max_width());
  const xir__jit_artifact *a = compile_ok(jit, k_fill_ir, "fill", NULL, NULL);
  run_fill(a, 0.5f);
  assert_non_null(strstr(a->ir_text, "define void @fill"));
  assert_int_equal(strlen(a->ir_sha256), 64);
  assert_int_equal(strlen(a->obj_sha256), 64);
  assert_true(a->obj_size > 64);
  assert_memory_equal(a->obj, "\177ELF", 4); /* the captured relocatable object */
  assert_true(a->opt_ms >= 0 && a->codegen_ms > 0 && a->total_ms >= a->codegen_ms);
  /* another symbol of the same module */
  void *h;
  assert_int_equal(xir__jit_lookup(jit, a, "helper", &h, &d), XIR_OK);
  assert_int_equal(((int (*)(void))h)(), 42);
  xir__jit_destroy(jit);
}

static void test_invalid_ir_is_an_llvm_error(void **state) {
  (void)state;
  xir_diag d = {0};
  xir__jit *jit;
  assert_int_equal(xir__jit_create(NULL, &jit, &d), XIR_OK);
  xir_status st;
  /* parses, but breaks dominance: the verifier must reject it */
  const char *bad = "define i32 @bad(i32 %a) {\n"
                    "entry:\n"
                    "  %x = add i32 %y, 1\n"
                    "  %y = add i32 %a, 1\n"
                    "  ret i32 %x\n"
                    "}\n";
  assert_null(compile_text(jit, bad, "bad", NULL, NULL, &d, &st));
  assert_int_equal(st, XIR_ERR_LLVM);
  assert_non_null(strstr(d.msg, "invalid LLVM IR"));
  assert_non_null(strstr(d.msg, "dominate"));
  /* does not parse */
  xir_diag_clear(&d);
  assert_null(compile_text(jit, "define i32 @f( {", "f", NULL, NULL, &d, &st));
  assert_int_equal(st, XIR_ERR_LLVM);
  assert_non_null(strstr(d.msg, "cannot parse"));
  /* the JIT still works afterwards */
  run_fill(compile_ok(jit, k_fill_ir, "fill", NULL, NULL), 1.0f);
  /* a pipeline LLVM does not know */
  xir__jit *j2;
  xir__jit_options o = {.pipeline = "function(no-such-pass)", .codegen_level = -1};
  assert_int_equal(xir__jit_create(&o, &j2, &d), XIR_OK);
  assert_null(compile_text(j2, k_fill_ir, "fill", NULL, NULL, &d, &st));
  assert_int_equal(st, XIR_ERR_LLVM);
  assert_non_null(strstr(d.msg, "no-such-pass"));
  xir__jit_destroy(j2);
  /* NULL arguments */
  xir__jit_module m = {0};
  const xir__jit_artifact *a;
  assert_int_equal(xir__jit_add(jit, &m, "f", NULL, &a, NULL, &d), XIR_ERR_INVALID_ARG);
  o.codegen_level = 7;
  assert_int_equal(xir__jit_create(&o, &j2, &d), XIR_ERR_INVALID_ARG);
  assert_null(j2);
  xir__jit_destroy(jit);
}

static void test_missing_symbol_is_not_found(void **state) {
  (void)state;
  xir_diag d = {0};
  xir__jit *jit;
  assert_int_equal(xir__jit_create(NULL, &jit, &d), XIR_OK);
  xir_status st;
  assert_null(compile_text(jit, k_fill_ir, "no_such_entry", NULL, NULL, &d, &st));
  assert_int_equal(st, XIR_ERR_NOT_FOUND);
  assert_non_null(strstr(d.msg, "no_such_entry"));
  const xir__jit_artifact *a = compile_ok(jit, k_fill_ir, "fill", NULL, NULL);
  void *p = (void *)1;
  assert_int_equal(xir__jit_lookup(jit, a, "also_missing", &p, &d), XIR_ERR_NOT_FOUND);
  assert_null(p);
  assert_non_null(strstr(d.msg, "also_missing"));
  /* libm is not reachable from JIT'd code (only memcpy/memmove/memset are) */
  const char *uses_expf = "declare float @expf(float)\n"
                          "define float @g(float %x) {\n"
                          "  %r = call float @expf(float %x)\n"
                          "  ret float %r\n"
                          "}\n";
  assert_null(compile_text(jit, uses_expf, "g", NULL, NULL, &d, &st));
  assert_int_not_equal(st, XIR_OK);
  assert_non_null(strstr(d.msg, "expf"));
  run_fill(a, 2.0f); /* still fine */
  xir__jit_destroy(jit);
}

static void print_hashes(void) {
  xir__jit *jit;
  xir_diag d = {0};
  if (xir__jit_create(NULL, &jit, &d)) exit(2);
  xir__jit_module m;
  if (xir__jit_module_from_ir(jit, "fill", k_fill_ir, &m, &d)) exit(3);
  const xir__jit_artifact *a;
  if (xir__jit_add(jit, &m, "fill", NULL, &a, NULL, &d)) exit(4);
  printf("%s %s\n", a->ir_sha256, a->obj_sha256);
  xir__jit_destroy(jit);
}

static void test_hashes_stable_across_compiles_jits_and_processes(void **state) {
  (void)state;
  xir_diag d = {0};
  xir__jit *j1, *j2;
  assert_int_equal(xir__jit_create(NULL, &j1, &d), XIR_OK);
  assert_int_equal(xir__jit_create(NULL, &j2, &d), XIR_OK);
  /* distinct caller keys force real recompiles of the same text */
  const xir__jit_artifact *a = compile_ok(j1, k_fill_ir, "fill", "first", NULL);
  const xir__jit_artifact *b = compile_ok(j1, k_fill_ir, "fill", "second", NULL);
  const xir__jit_artifact *c = compile_ok(j2, k_fill_ir, "fill", "first", NULL);
  assert_ptr_not_equal(a, b);
  assert_ptr_not_equal(a->entry, b->entry);
  assert_string_equal(a->ir_sha256, b->ir_sha256);
  assert_string_equal(a->obj_sha256, b->obj_sha256);
  assert_string_equal(a->ir_sha256, c->ir_sha256);
  assert_string_equal(a->obj_sha256, c->obj_sha256);
  assert_int_equal(a->obj_size, c->obj_size);
  assert_memory_equal(a->obj, c->obj, a->obj_size);
  char h[65];
  xir__jit_sha256_hex(a->obj, a->obj_size, h);
  assert_string_equal(h, a->obj_sha256);
  /* a vector-math module too (larger, constants, internal functions) */
  const xir__jit_artifact *v[2];
  for (int i = 0; i < 2; i++) {
    xir__jit *j = i ? j2 : j1;
    xir__jit_module m;
    assert_int_equal(xir__jit_module_create(j, "vm", &m, &d), XIR_OK);
    xir__vm *vm;
    assert_int_equal(xir__vm_create(m.mod, NULL, &vm, &d), XIR_OK);
    assert_int_equal(xir__vm_build_map_kernel(vm, "k", XIR__VM_TANH, 4, &d), XIR_OK);
    assert_int_equal(xir__vm_build_map_kernel(vm, "k2", XIR__VM_POW, 4, &d), XIR_OK);
    xir__vm_destroy(vm);
    assert_int_equal(xir__jit_add(j, &m, "k", NULL, &v[i], NULL, &d), XIR_OK);
  }
  assert_string_equal(v[0]->ir_sha256, v[1]->ir_sha256);
  assert_string_equal(v[0]->obj_sha256, v[1]->obj_sha256);
  /* another process */
  char cmd[4200];
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  assert_true(n > 0);
  self[n] = 0;
  snprintf(cmd, sizeof cmd, "'%s' --hash", self);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char line[256] = {0};
  assert_non_null(fgets(line, sizeof line, p));
  assert_int_equal(pclose(p), 0);
  char want[256];
  snprintf(want, sizeof want, "%s %s\n", a->ir_sha256, a->obj_sha256);
  assert_string_equal(line, want);
  xir__jit_destroy(j1);
  xir__jit_destroy(j2);
}

static void test_cache_returns_the_first_artifact(void **state) {
  (void)state;
  xir_diag d = {0};
  xir__jit *jit;
  assert_int_equal(xir__jit_create(NULL, &jit, &d), XIR_OK);
  int cached = -1;
  const xir__jit_artifact *a = compile_ok(jit, k_fill_ir, "fill", NULL, &cached);
  assert_int_equal(cached, 0);
  assert_int_equal(strncmp(a->key, "ir:", 3), 0);
  const xir__jit_artifact *b = compile_ok(jit, k_fill_ir, "fill", NULL, &cached);
  assert_int_equal(cached, 1);
  assert_ptr_equal(a, b);
  assert_ptr_equal(xir__jit_cache_find(jit, a->key), a);
  assert_null(xir__jit_cache_find(jit, "ir:nothing"));
  /* a different entry is a different key */
  const xir__jit_artifact *c = compile_ok(jit, k_fill_ir, "helper", NULL, &cached);
  assert_int_equal(cached, 0);
  assert_ptr_not_equal(a, c);
  /* caller keys */
  const xir__jit_artifact *k1 = compile_ok(jit, k_fill_ir, "fill", "cand:rmsnorm:W8:B32", &cached);
  assert_int_equal(cached, 0);
  const xir__jit_artifact *k2 = compile_ok(jit, k_fill_ir, "fill", "cand:rmsnorm:W8:B32", &cached);
  assert_int_equal(cached, 1);
  assert_ptr_equal(k1, k2);
  assert_ptr_equal(xir__jit_cache_find(jit, "cand:rmsnorm:W8:B32"), k1);
  assert_int_equal(xir__jit_cache_size(jit), 3);
  run_fill(k2, 3.0f);
  /* a cache hit disposes the module without compiling: no hang, no leak (ASan) */
  xir__jit_destroy(jit);
}

static void test_forced_targets(void **state) {
  (void)state;
  xir_diag d = {0};
  xir__jit *jit = NULL;
  unsigned hw = xir__jit_host_max_width();
  /* AVX2 only: W = 8 */
  xir__jit_options o = {.features = "+avx2,+fma", .codegen_level = -1};
  if (hw >= 8) {
    assert_int_equal(xir__jit_create(&o, &jit, &d), XIR_OK);
    assert_int_equal(xir__jit_max_width(jit), 8);
    assert_string_equal(xir__jit_cpu(jit), "x86-64");
    assert_int_equal(xir__jit_check_width(jit, 8, &d), XIR_OK);
    assert_int_equal(xir__jit_check_width(jit, 16, &d), XIR_ERR_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "W = 16"));
    assert_non_null(strstr(d.msg, "avx512f"));
    run_fill(compile_ok(jit, k_fill_ir, "fill", NULL, NULL), 4.0f);
    xir__jit_destroy(jit);
  }
  /* baseline x86-64: W = 4 */
  o = (xir__jit_options){.cpu = "x86-64", .codegen_level = -1};
  assert_int_equal(xir__jit_create(&o, &jit, &d), XIR_OK);
  assert_int_equal(xir__jit_max_width(jit), 4);
  assert_int_equal(xir__jit_check_width(jit, 8, &d), XIR_ERR_UNSUPPORTED);
  assert_int_equal(xir__jit_check_width(jit, 3, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "W = 3"));
  run_fill(compile_ok(jit, k_fill_ir, "fill", NULL, NULL), 5.0f);
  xir__jit_destroy(jit);
  /* features the host does not have, or that do not exist */
  o = (xir__jit_options){.features = "+avx2,+not-a-feature", .codegen_level = -1};
  assert_int_equal(xir__jit_create(&o, &jit, &d), XIR_ERR_UNSUPPORTED);
  assert_null(jit);
  assert_non_null(strstr(d.msg, "+not-a-feature"));
  o = (xir__jit_options){.features = "avx2", .codegen_level = -1};
  assert_int_equal(xir__jit_create(&o, &jit, &d), XIR_ERR_INVALID_ARG);
  o = (xir__jit_options){.cpu = "pentium-mmx-9000", .codegen_level = -1};
  assert_int_equal(xir__jit_create(&o, &jit, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "pentium-mmx-9000"));
  if (hw < 16) { /* an AVX-512 CPU on a host without it */
    o = (xir__jit_options){.cpu = "skylake-avx512", .codegen_level = -1};
    assert_int_equal(xir__jit_create(&o, &jit, &d), XIR_ERR_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "avx512f"));
  } else {
    o = (xir__jit_options){.cpu = "skylake-avx512", .codegen_level = -1};
    assert_int_equal(xir__jit_create(&o, &jit, &d), XIR_OK);
    assert_int_equal(xir__jit_max_width(jit), 16);
    xir__jit_destroy(jit);
  }
}

static void test_many_modules_with_the_same_symbols(void **state) {
  (void)state;
  xir_diag d = {0};
  xir__jit *jit;
  assert_int_equal(xir__jit_create(NULL, &jit, &d), XIR_OK);
  enum { N = 24 };
  int (*fn[N])(void);
  for (int i = 0; i < N; i++) {
    char ir[256];
    snprintf(ir, sizeof ir, "define i32 @k() {\n  ret i32 %d\n}\n", 1000 + i);
    fn[i] = (int (*)(void))compile_ok(jit, ir, "k", NULL, NULL)->entry;
  }
  for (int i = 0; i < N; i++) assert_int_equal(fn[i](), 1000 + i);
  xir__jit_destroy(jit);
}

typedef struct worker {
  xir__jit *jit;
  int id, ok;
} worker;

static void *compile_worker(void *p) {
  worker *w = p;
  w->ok = 1;
  for (int i = 0; i < 6; i++) {
    char ir[256];
    int v = w->id * 100 + i;
    snprintf(ir, sizeof ir, "define i32 @k() {\n  ret i32 %d\n}\n", v);
    xir__jit_module m;
    xir_diag d = {0};
    const xir__jit_artifact *a;
    if (xir__jit_module_from_ir(w->jit, "t", ir, &m, &d) ||
        xir__jit_add(w->jit, &m, "k", NULL, &a, NULL, &d) || ((int (*)(void))a->entry)() != v)
      w->ok = 0;
  }
  return NULL;
}

static void test_concurrent_compiles(void **state) {
  (void)state;
  xir_diag d = {0};
  xir__jit *jit;
  assert_int_equal(xir__jit_create(NULL, &jit, &d), XIR_OK);
  worker w[3];
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    w[i] = (worker){jit, i + 1, 0};
    assert_int_equal(pthread_create(&t[i], NULL, compile_worker, &w[i]), 0);
  }
  for (int i = 0; i < 3; i++) {
    pthread_join(t[i], NULL);
    assert_true(w[i].ok);
  }
  assert_int_equal(xir__jit_cache_size(jit), 18);
  xir__jit_destroy(jit);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A small kernel (a block loop around a W-lane exp) with the default pipeline: report the median
 * time; the bound is loose (machines and sanitizers vary), the measured figure is in docs. */
static void test_small_kernel_jit_time(void **state) {
  (void)state;
  xir_diag d = {0};
  xir__jit *jit;
  assert_int_equal(xir__jit_create(NULL, &jit, &d), XIR_OK);
  unsigned W = xir__jit_max_width(jit);
  enum { N = 9 };
  double t[N], opt[N], cg[N];
  for (int i = 0; i < N; i++) {
    xir__jit_module m;
    assert_int_equal(xir__jit_module_create(jit, "small", &m, &d), XIR_OK);
    xir__vm *vm;
    assert_int_equal(xir__vm_create(m.mod, NULL, &vm, &d), XIR_OK);
    assert_int_equal(xir__vm_build_map_kernel(vm, "k", XIR__VM_EXP, W, &d), XIR_OK);
    xir__vm_destroy(vm);
    char key[32];
    snprintf(key, sizeof key, "t%d", i);
    const xir__jit_artifact *a;
    assert_int_equal(xir__jit_add(jit, &m, "k", key, &a, NULL, &d), XIR_OK);
    t[i] = a->total_ms;
    opt[i] = a->opt_ms;
    cg[i] = a->codegen_ms;
  }
  qsort(t, N, sizeof *t, cmp_double);
  qsort(opt, N, sizeof *opt, cmp_double);
  qsort(cg, N, sizeof *cg, cmp_double);
  if (getenv("XIR_JIT_REPORT"))
    printf("  exp map kernel W=%u, pipeline %s: median total %.2f ms (opt %.2f, codegen %.2f)\n",
           W, xir__jit_pipeline(jit), t[N / 2], opt[N / 2], cg[N / 2]);
  assert_true(t[N / 2] < 1000.0);
  xir__jit_destroy(jit);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--hash")) {
    print_hashes();
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compile_and_run_block_loop),
      cmocka_unit_test(test_invalid_ir_is_an_llvm_error),
      cmocka_unit_test(test_missing_symbol_is_not_found),
      cmocka_unit_test(test_hashes_stable_across_compiles_jits_and_processes),
      cmocka_unit_test(test_cache_returns_the_first_artifact),
      cmocka_unit_test(test_forced_targets),
      cmocka_unit_test(test_many_modules_with_the_same_symbols),
      cmocka_unit_test(test_concurrent_compiles),
      cmocka_unit_test(test_small_kernel_jit_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

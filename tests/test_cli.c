/* test_cli.c — the `xir` command as a user meets it: `xir run rmsnorm --save` writes x.npy w.npy
 * y.npy whose y matches an independent fp64 reference; bad input (unknown kernels and dims,
 * missing or wrong-shaped .npy files, unwritable folders, bad candidates, bad widths) gives a
 * clear message and a non-zero exit, never a crash or a half-written file. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli_harness.h"

#include "ref_kernels.h"
#include "util/npy.h"
#include "util/util.h"

static float *read_npy(const char *name, size_t *shape, int *nd) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", xir_cli_tmp, name);
  float *data;
  xir_diag d;
  if (xir__npy_read_f32(path, &data, shape, nd, 8, &d)) fail_msg("%s: %s", name, d.msg);
  return data;
}

static void test_run_save_matches_hand_reference(void **state) {
  (void)state;
  char out[16384];
  int rc = xir_cli_run("run rmsnorm --shape R=129,C=768 --save out/", out, sizeof out);
  if (rc) fail_msg("xir run failed: %s", out);
  assert_non_null(strstr(out, "plan:"));
  size_t sx[8], sw[8], sy[8];
  int nx, nw, ny;
  float *x = read_npy("out/x.npy", sx, &nx), *w = read_npy("out/w.npy", sw, &nw);
  float *y = read_npy("out/y.npy", sy, &ny);
  assert_int_equal(nx, 2);
  assert_int_equal(sx[0], 129);
  assert_int_equal(sx[1], 768);
  assert_int_equal(nw, 1);
  assert_int_equal(sw[0], 768);
  assert_int_equal(ny, 2);
  double *ref = malloc(sizeof(double) * 129 * 768);
  ref_rmsnorm(129, 768, x, w, (double)1e-5f, ref);
  double worst = 0;
  for (size_t i = 0; i < 129 * 768; i++) {
    assert_true(x[i] != 0.0f);
    double e = fabs(y[i] - ref[i]);
    if (!(e <= 1e-5 + 1e-4 * fabs(ref[i]))) fail_msg("y[%zu] = %g, reference %g", i, (double)y[i], ref[i]);
    if (e > worst) worst = e;
  }
  free(ref);
  xir__free(x);
  xir__free(w);
  xir__free(y);
  /* the saved inputs read back give the same result */
  rc = xir_cli_run("run rmsnorm --shape R=129,C=768 --inputs out --save out2", out, sizeof out);
  if (rc) fail_msg("xir run --inputs failed: %s", out);
  char a[700], b[700];
  snprintf(a, sizeof a, "cmp -s '%s/out/y.npy' '%s/out2/y.npy'", xir_cli_tmp, xir_cli_tmp);
  assert_int_equal(system(a), 0);
  (void)b;
}

/* rope_cache: `xir run --save` writes pos.npy as int64 ('<i8'), the output matches the hand
 * reference on the saved inputs, `--inputs` reads them back (same output bytes), and a pos.npy of
 * another dtype or with a position outside [0, P) is reported. */
static void test_run_rope_cache_i64_positions(void **state) {
  (void)state;
  char out[16384];
  int rc = xir_cli_run("run rope_cache --shape R=129,C=768,HD=64,P=4096,H2=32 --save rc/", out, sizeof out);
  if (rc) fail_msg("xir run failed: %s", out);
  char path[700];
  snprintf(path, sizeof path, "%s/rc/pos.npy", xir_cli_tmp);
  int64_t *pos;
  size_t sp[8], sx[8], sc[8], sy[8];
  int np, nx, nc, ny;
  xir_diag d;
  if (xir__npy_read_i64(path, &pos, sp, &np, 8, &d)) fail_msg("pos.npy: %s", d.msg);
  assert_int_equal(np, 1);
  assert_int_equal(sp[0], 129);
  int nonzero = 0;
  for (int r = 0; r < 129; r++) {
    assert_true(pos[r] >= 0 && pos[r] < 4096);
    nonzero += pos[r] != 0;
  }
  assert_true(nonzero > 100);
  float *x = read_npy("rc/x.npy", sx, &nx), *ct = read_npy("rc/cos.npy", sc, &nc);
  float *st = read_npy("rc/sin.npy", sc, &nc), *y = read_npy("rc/y.npy", sy, &ny);
  assert_int_equal(nc, 2);
  assert_int_equal(sc[0], 4096);
  assert_int_equal(sc[1], 32);
  double *ref = malloc(sizeof(double) * 129 * 768);
  assert_int_equal(ref_rope_from_tables(129, 768, 64, 4096, x, pos, ct, st, ref), 0);
  for (size_t i = 0; i < 129 * 768; i++)
    if (!(fabs(y[i] - ref[i]) <= 1e-5 + 1e-4 * fabs(ref[i])))
      fail_msg("y[%zu] = %g, reference %g", i, (double)y[i], ref[i]);
  free(ref);
  xir__free(x);
  xir__free(ct);
  xir__free(st);
  xir__free(y);
  /* read back: the same output */
  rc = xir_cli_run("run rope_cache --shape R=129,C=768,HD=64,P=4096,H2=32 --inputs rc --save rc2", out,
           sizeof out);
  if (rc) fail_msg("xir run --inputs failed: %s", out);
  char cmd[1600];
  snprintf(cmd, sizeof cmd, "cmp -s '%s/rc/y.npy' '%s/rc2/y.npy' && cmp -s '%s/rc/pos.npy' '%s/rc2/pos.npy'",
           xir_cli_tmp, xir_cli_tmp, xir_cli_tmp, xir_cli_tmp);
  assert_int_equal(system(cmd), 0);
  /* a position outside [0, P): the interpreter names it */
  pos[7] = 4096;
  size_t s1[1] = {129};
  if (xir__npy_write_i64(path, pos, s1, 1, &d)) fail_msg("%s", d.msg);
  xir_cli_expect_fail("run rope_cache --shape R=129,C=768,HD=64,P=4096,H2=32 --inputs rc",
              "index 1 of 'cos' is 4096, outside [0, 4096) (dim 'P')");
  /* positions saved as float32 are not int64 */
  float fpos[129];
  for (int r = 0; r < 129; r++) fpos[r] = 1.0f;
  if (xir__npy_write_f32(path, fpos, s1, 1, &d)) fail_msg("%s", d.msg);
  xir_cli_expect_fail("run rope_cache --shape R=129,C=768,HD=64,P=4096,H2=32 --inputs rc",
              "unsupported dtype '<f4' (only little-endian int64 '<i8' is supported)");
  xir__free(pos);
}

static void test_run_every_candidate_and_runtime_flags(void **state) {
  (void)state;
  char out[65536];
  int rc = xir_cli_run("run softmax_causal --shape R=17,C=65 --all-candidates --workers 3 --grain 2", out, sizeof out);
  if (rc) fail_msg("%s", out);
  assert_null(strstr(out, "FAIL"));
  assert_non_null(strstr(out, "multi-packet"));
  rc = xir_cli_run("run layernorm --shape R=33,C=1000 --candidate perm=r,l=8,B=32 --workers 2 --grain max --json", out, sizeof out);
  if (rc) fail_msg("%s", out);
  assert_non_null(strstr(out, "\"caller\":\ttrue"));
}

static void test_bad_input_is_reported(void **state) {
  (void)state;
  xir_cli_expect_fail("run nosuchkernel --shape R=1", "unknown kernel 'nosuchkernel'");
  xir_cli_expect_fail("run rmsnorm --shape R=3", "dim 'C'");
  xir_cli_expect_fail("run rmsnorm --shape R=3,C=0", "outside [1, 2^31)");
  xir_cli_expect_fail("run rmsnorm --shape R=3,X=4", "no dim 'X'");
  xir_cli_expect_fail("run rmsnorm --shape R=3,C=x", "not a positive integer");
  xir_cli_expect_fail("run rope --shape R=3,C=6,HD=4", "does not hold");
  xir_cli_expect_fail("run rmsnorm", "needs --shape");
  xir_cli_expect_fail("run rmsnorm --shape R=3,C=7 --inputs nowhere", "nowhere/x.npy");
  xir_cli_expect_fail("run rmsnorm --shape R=3,C=7 --candidate perm=r,l=3,B=16", "power of two");
  xir_cli_expect_fail("run attention --shape B=1,HQ=2,HKV=1,Q=3,K=4,D=5,DV=6 --candidate perm=b.h.i,l=2,B=16",
              "not legal");
  xir_cli_expect_fail("run rmsnorm --shape R=3,C=7 --width 32", "SIMD width");
  xir_cli_expect_fail("run rmsnorm --shape R=3,C=7 --set nope=1", "no scalar parameter 'nope'");
  xir_cli_expect_fail("compile rmsnorm --shape R=3,C=7 --candidate garbage", "cannot read candidate");
  xir_cli_expect_fail("plan rmsnorm --shape R=129,C=768 --local 0 --search-grain --budget 5", "budget");
  xir_cli_expect_fail("plan rmsnorm --shape R=129,C=768 --budget 0", "budget");
  xir_cli_expect_fail("plan rmsnorm --shape R=129,C=768 --workers 0", "--workers");
  xir_cli_expect_fail("bench --suite nosuch", "unknown suite");
  xir_cli_expect_fail("frobnicate", "unknown command");
  xir_cli_expect_fail("audit /nonexistent", "cannot read");
}

static void test_wrong_shaped_inputs_and_unwritable_output(void **state) {
  (void)state;
  char out[16384];
  assert_int_equal(xir_cli_run("run rmsnorm --shape R=3,C=7 --save small", out, sizeof out), 0);
  xir_cli_expect_fail("run rmsnorm --shape R=4,C=7 --inputs small", "x.npy has shape (3, 7) but the kernel expects (4, 7)");
  /* a file where the output folder should be */
  char path[600];
  snprintf(path, sizeof path, "%s/afile", xir_cli_tmp);
  FILE *f = fopen(path, "w");
  fputs("x", f);
  fclose(f);
  xir_cli_expect_fail("run rmsnorm --shape R=3,C=7 --save afile", "not a folder");
  xir_cli_expect_fail("run rmsnorm --shape R=3,C=7 --save /proc/xir-cannot", "cannot create output folder");
  /* a truncated .npy */
  snprintf(path, sizeof path, "%s/small/x.npy", xir_cli_tmp);
  assert_int_equal(truncate(path, 100), 0);
  xir_cli_expect_fail("run rmsnorm --shape R=3,C=7 --inputs small", "x.npy");
}

static void test_help_everywhere(void **state) {
  (void)state;
  const char *cmds[] = {"kernels", "check", "print", "run", "compile", "plan", "bench", "audit", "suite",
                        "calibrate"};
  char out[16384], args[64];
  for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
    snprintf(args, sizeof args, "%s --help", cmds[i]);
    assert_int_equal(xir_cli_run(args, out, sizeof out), 0);
    assert_non_null(strstr(out, "usage: xir"));
  }
  assert_int_equal(xir_cli_run("--help", out, sizeof out), 0);
  assert_int_equal(xir_cli_run("kernels --json", out, sizeof out), 0);
  assert_non_null(strstr(out, "\"attention_causal\""));
}

static void test_calibrated_policy(void **state) {
  (void)state;
  char out[16384];
  assert_int_equal(xir_cli_run("calibrate --json", out, sizeof out), 0);
  assert_non_null(strstr(out, "\"ns_activation\""));
  assert_int_equal(xir_cli_run("plan gelu_residual --shape R=64,C=256 --local 0 --search-grain --workers 2 "
                       "--policy calibrated", out, sizeof out), 0);
  assert_non_null(strstr(out, "policy calibrated"));
  xir_cli_expect_fail("plan rmsnorm --shape R=3,C=7 --policy bogus", "--policy is default (= calibrated), priors or experimental");
  /* the default plan uses the same service model */
  assert_int_equal(xir_cli_run("plan gelu_residual --shape R=64,C=256", out, sizeof out), 0);
  assert_non_null(strstr(out, "policy calibrated"));
  assert_int_equal(xir_cli_run("plan gelu_residual --shape R=64,C=256 --policy priors", out, sizeof out), 0);
  assert_non_null(strstr(out, "policy priors"));
}

/* xir compile without --candidate compiles the planner's choice (as xir plan shows it). */
static void test_compile_default_is_the_plan(void **state) {
  (void)state;
  char out[16384], want[256];
  assert_int_equal(xir_cli_run("plan rope_cache --shape R=9,C=256,HD=128,P=64,H2=64", out, sizeof out), 0);
  const char *c = strstr(out, "): ");
  assert_non_null(c);
  c += 3;
  size_t n = strcspn(c, ",");
  n += strcspn(c + n + 1, ",") + 1; /* perm=r,l=..., */
  n += strcspn(c + n + 1, ",") + 1;
  n += strcspn(c + n + 1, ",") + 1; /* ... B=..,W=.. */
  snprintf(want, sizeof want, "candidate %.*s ", (int)n, c);
  assert_int_equal(xir_cli_run("compile rope_cache --shape R=9,C=256,HD=128,P=64,H2=64", out, sizeof out), 0);
  if (!strstr(out, want)) fail_msg("expected '%s' in: %s", want, out);
}

/* xir bench creates its output folder with its parents, and refuses an impossible one before it
 * measures anything. */
static void test_bench_output_folder(void **state) {
  (void)state;
  char out[65536];
  int rc = xir_cli_run("bench --suite smoke --warmup-ms 1 --sample-ms 1 --samples 3 --no-plot --out deep/a/b",
               out, sizeof out);
  if (rc) fail_msg("%s", out);
  char path[600];
  snprintf(path, sizeof path, "%s/deep/a/b/raw.json.gz", xir_cli_tmp);
  assert_int_equal(access(path, R_OK), 0);
  xir_cli_expect_fail("bench --suite smoke --out /proc/xir-nope/x", "cannot create the output folder");
}

/* xir bench --suite regret runs a shape list and prints, per case, the chosen and the fastest
 * entry with the ratio, then the geometric mean and the worst (structure, not timing). */
static void test_bench_regret_suite(void **state) {
  (void)state;
  char out[65536];
  int rc = xir_cli_run("bench --suite regret --set tiny --rounds 1", out, sizeof out);
  if (rc) fail_msg("%s", out);
  int lines = 0;
  for (const char *q = out; (q = strstr(q, " chosen perm=")); q++) {
    lines++;
    const char *nl = strchr(q, '\n');
    const char *best = strstr(q, " best perm="), *ratio = strstr(q, " ratio ");
    assert_true(best && ratio && best < ratio && (!nl || ratio < nl));
    double r = atof(ratio + 7);
    assert_true(r >= 1.0); /* the fastest entry is never slower than the chosen one */
  }
  assert_int_equal(lines, 2);
  assert_non_null(strstr(out, "rmsnorm "));
  assert_non_null(strstr(out, "swiglu "));
  assert_non_null(strstr(out, "regret over 2 cases: geomean "));
  assert_non_null(strstr(out, ", worst "));
  assert_non_null(strstr(out, "failures 0"));
  rc = xir_cli_run("bench --suite regret --cases 'rmsnorm:R=2,C=17' --rounds 2 --stat min --all", out,
                   sizeof out);
  if (rc) fail_msg("%s", out);
  assert_non_null(strstr(out, " model "));
  assert_non_null(strstr(out, "regret over 1 cases"));
  xir_cli_expect_fail("bench --suite regret --set nosuch", "unknown shape set");
  xir_cli_expect_fail("bench --suite regret --cases 'nosuch:R=2,C=3'", "unknown kernel");
  xir_cli_expect_fail("bench --suite regret --cases 'rmsnorm'", "not KERNEL:SHAPE");
  xir_cli_expect_fail("bench --suite regret --rounds 0", "--rounds");
  xir_cli_expect_fail("bench --suite regret --stat mean", "--stat");
}

static int setup(void **state) {
  (void)state;
  return xir_cli_setup("xir-cli");
}

static int teardown(void **state) {
  (void)state;
  return xir_cli_teardown();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_save_matches_hand_reference),
      cmocka_unit_test(test_run_rope_cache_i64_positions),
      cmocka_unit_test(test_run_every_candidate_and_runtime_flags),
      cmocka_unit_test(test_bad_input_is_reported),
      cmocka_unit_test(test_wrong_shaped_inputs_and_unwritable_output),
      cmocka_unit_test(test_help_everywhere),
      cmocka_unit_test(test_calibrated_policy),
      cmocka_unit_test(test_compile_default_is_the_plan),
      cmocka_unit_test(test_bench_output_folder),
      cmocka_unit_test(test_bench_regret_suite),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_audit.c — runs the tiny smoke suite through the real `xir bench`, checks that `xir audit`
 * accepts the records, then tampers with them in every way SPEC.md lists and asserts that the
 * audit rejects each with the named reason. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "bench/records.h"

static char g_dir[256];
static char g_bin[1024];

/* Runs a shell command; returns its exit status and its stderr+stdout in out. */
static int run(const char *cmd, char *out, size_t cap) {
  char full[4096];
  snprintf(full, sizeof full, "%s 2>&1", cmd);
  FILE *f = popen(full, "r");
  if (!f) return -1;
  size_t n = fread(out, 1, cap - 1, f);
  out[n] = 0;
  int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int setup(void **state) {
  (void)state;
  const char *bin = getenv("XIR_BIN");
  snprintf(g_bin, sizeof g_bin, "%s", bin ? bin : "./xir");
  snprintf(g_dir, sizeof g_dir, "/tmp/xir-audit-XXXXXX");
  if (!mkdtemp(g_dir)) return -1;
  char cmd[2048], out[65536];
  snprintf(cmd, sizeof cmd, "'%s' bench --suite smoke --warmup-ms 2 --sample-ms 1 --samples 3 "
           "--no-plot --out '%s/ok'", g_bin, g_dir);
  int rc = run(cmd, out, sizeof out);
  if (rc != 0) {
    fprintf(stderr, "bench failed (%d): %s\n", rc, out);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static cJSON *load(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/ok/raw.json.gz", g_dir);
  cJSON *r;
  xir_diag d;
  assert_int_equal(xir__json_read_gz(path, &r, &d), XIR_OK);
  return r;
}

/* Writes rec as a new records folder and runs the audit on it; returns the exit status and the
 * output. */
static int audit(const char *name, cJSON *rec, char *out, size_t cap) {
  char dir[512], path[600], cmd[2048];
  snprintf(dir, sizeof dir, "%s/%s", g_dir, name);
  mkdir(dir, 0777);
  snprintf(path, sizeof path, "%s/raw.json.gz", dir);
  xir_diag d;
  assert_int_equal(xir__json_write_gz(path, rec, &d), XIR_OK);
  cJSON_Delete(rec);
  snprintf(cmd, sizeof cmd, "'%s' audit '%s'", g_bin, dir);
  return run(cmd, out, cap);
}

static void expect_reject(const char *name, cJSON *rec, const char *reason) {
  char out[8192];
  int rc = audit(name, rec, out, sizeof out);
  if (rc == 0 || !strstr(out, reason))
    fail_msg("tamper '%s': audit exit %d, wanted a rejection naming '%s'; it said: %s", name, rc,
             reason, out);
}

static cJSON *visit(cJSON *rec, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(rec, "visits"), i); }

static void test_untouched_records_pass(void **state) {
  (void)state;
  char out[8192];
  int rc = audit("same", load(), out, sizeof out);
  if (rc != 0) fail_msg("audit of untouched records failed: %s", out);
  assert_non_null(strstr(out, "OK"));
}

static void test_changed_sample(void **state) {
  (void)state;
  cJSON *r = load();
  cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItem(visit(r, 0), "samples_ns"), 0);
  cJSON_SetNumberValue(s, s->valuedouble * 1.5);
  expect_reject("sample", r, "changed sample");
}

static void test_summary_not_following_from_samples(void **state) {
  (void)state;
  /* a changed sample with a matching digest: the recomputed p50 gives it away */
  cJSON *r = load();
  cJSON *arr = cJSON_GetObjectItem(visit(r, 1), "samples_ns");
  for (int i = 0; i < cJSON_GetArraySize(arr); i++) {
    cJSON *s = cJSON_GetArrayItem(arr, i);
    cJSON_SetNumberValue(s, s->valuedouble * 3);
  }
  char hex[65];
  xir__bench_samples_digest(r, hex);
  cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "samples_sha256"), hex);
  expect_reject("p50", r, "does not follow from its samples");
  /* a summary ratio edited by hand */
  r = load();
  cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "comparisons"), 0);
  cJSON_SetNumberValue(cJSON_GetObjectItem(c, "median_ratio"), 0.5);
  expect_reject("ratio", r, "does not follow from its samples");
}

static void test_missing_and_duplicated_visits(void **state) {
  (void)state;
  cJSON *r = load();
  cJSON *v = cJSON_GetObjectItem(r, "visits");
  cJSON_DeleteItemFromArray(v, cJSON_GetArraySize(v) - 1);
  expect_reject("missing", r, "missing visit");
  r = load();
  v = cJSON_GetObjectItem(r, "visits");
  cJSON_ReplaceItemInArray(v, 1, cJSON_Duplicate(cJSON_GetArrayItem(v, 0), 1));
  expect_reject("duplicate", r, "duplicated visit");
  r = load();
  v = cJSON_GetObjectItem(r, "visits");
  cJSON_AddItemToArray(v, cJSON_Duplicate(cJSON_GetArrayItem(v, 0), 1));
  expect_reject("extra", r, "duplicated visit");
}

static void test_visit_order_differs(void **state) {
  (void)state;
  /* swap which cases the first two visits of round 0 were */
  cJSON *r = load();
  cJSON *a = visit(r, 0), *b = visit(r, 1);
  double ca = cJSON_GetNumberValue(cJSON_GetObjectItem(a, "case"));
  double cb = cJSON_GetNumberValue(cJSON_GetObjectItem(b, "case"));
  cJSON_SetNumberValue(cJSON_GetObjectItem(a, "case"), cb);
  cJSON_SetNumberValue(cJSON_GetObjectItem(b, "case"), ca);
  expect_reject("order", r, "visit order differs");
  /* a declared order that is not the suite's */
  r = load();
  cJSON *o0 = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "orders"), 0);
  cJSON *x = cJSON_GetArrayItem(o0, 0), *y = cJSON_GetArrayItem(o0, 1);
  double t = x->valuedouble;
  cJSON_SetNumberValue(x, y->valuedouble);
  cJSON_SetNumberValue(y, t);
  expect_reject("declared", r, "order");
}

static void test_changed_input_fingerprint(void **state) {
  (void)state;
  cJSON *r = load();
  cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cases"), 2);
  cJSON_SetValuestring(cJSON_GetObjectItem(c, "input_sha256"),
                       "0000000000000000000000000000000000000000000000000000000000000000");
  expect_reject("fingerprint", r, "changed input fingerprint");
}

static void test_failed_or_missing_oracle_check(void **state) {
  (void)state;
  cJSON *r = load();
  cJSON_ReplaceItemInObject(cJSON_GetObjectItem(visit(r, 3), "check"), "pass", cJSON_CreateFalse());
  expect_reject("oracle-failed", r, "oracle check");
  r = load();
  cJSON_DeleteItemFromObject(visit(r, 2), "check");
  expect_reject("oracle-missing", r, "oracle check");
}

static void test_other_binary_or_configuration(void **state) {
  (void)state;
  cJSON *r = load();
  cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "provenance"), "binary_sha256"),
                       "1111111111111111111111111111111111111111111111111111111111111111");
  expect_reject("binary", r, "another binary");
  r = load();
  cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cases"), 0), "config"),
                       "joint_tasks");
  expect_reject("config", r, "another configuration");
  r = load();
  cJSON_ReplaceItemInObject(r, "suite", cJSON_CreateString("pilot"));
  expect_reject("suite", r, "another configuration");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_untouched_records_pass),
      cmocka_unit_test(test_changed_sample),
      cmocka_unit_test(test_summary_not_following_from_samples),
      cmocka_unit_test(test_missing_and_duplicated_visits),
      cmocka_unit_test(test_visit_order_differs),
      cmocka_unit_test(test_changed_input_fingerprint),
      cmocka_unit_test(test_failed_or_missing_oracle_check),
      cmocka_unit_test(test_other_binary_or_configuration),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_python_side.c — the peers suite's Python side (src/bench/python_side.c) on synthetic
 * records, no timing: the statistics (paired ratios xir_python / torch_eager_py and
 * xir_python / default, the paired overhead in ns, the geometric means) from hand-picked p50s;
 * the tables.md section, measured and not measured (with the reason); the record audit accepts
 * the records and rejects a forged Python-side statistic and an inconsistent declaration. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bench/python_side.h"
#include "bench/records.h"

static const char kSha[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* The p50s (ns per call) of each case per round: rows rmsnorm (default, xir_python,
 * torch_eager_py) and swiglu (default, xir_python; torch did not run it). */
enum { ROUNDS = 3, NCASES = 5 };
static const char *kCase[NCASES][3] = {
    {"rmsnorm", "R=3,C=1000", "default"},        {"rmsnorm", "R=3,C=1000", "ext:xir_python"},
    {"rmsnorm", "R=3,C=1000", "ext:torch_eager_py"}, {"swiglu", "R=3,C=1000", "default"},
    {"swiglu", "R=3,C=1000", "ext:xir_python"}};
static const double kP50[ROUNDS][NCASES] = {
    {100, 700, 1400, 1000, 1500}, {200, 900, 1800, 1000, 1500}, {100, 800, 1000, 1000, 1500}};

static cJSON *add_obj(cJSON *arr) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToArray(arr, o);
  return o;
}

/* Records a peers run could have written (everything xir__bench_audit_records checks), with
 * three samples per visit whose median is kP50 (n = 2: the samples are 2 p50); without the
 * python_side declaration (decl 0) as a run from before the Python side wrote them (with_py: the
 * ext:xir_python cases of a --peer xir_python=... server). */
static cJSON *records_as(int with_py, int decl) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "format", XIR_BENCH_FORMAT);
  cJSON *prov = cJSON_AddObjectToObject(r, "provenance");
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(prov, "runtime"), "workers", 2);
  cJSON_AddNumberToObject(prov, "simd_width", 16);
  cJSON_AddStringToObject(r, "suite", "peers");
  if (decl) {
    cJSON *ps = cJSON_AddObjectToObject(r, "python_side");
    cJSON_AddBoolToObject(ps, "measured", with_py);
    if (!with_py) cJSON_AddStringToObject(ps, "reason", "no torch: /p/venv/bin/python is missing");
  }
  cJSON_AddNumberToObject(r, "rounds", ROUNDS);
  cJSON_AddNumberToObject(r, "samples", 3);
  cJSON_AddNumberToObject(r, "warmup_ms", 1);
  cJSON_AddNumberToObject(r, "sample_ms", 1);
  cJSON_AddNumberToObject(r, "settle_ms", 0);
  cJSON_AddNumberToObject(r, "seed", 1);
  cJSON_AddNumberToObject(r, "workers", 2);
  cJSON_AddArrayToObject(r, "unsupported");
  int keep[NCASES], n = 0;
  for (int c = 0; c < NCASES; c++)
    if (with_py || strncmp(kCase[c][2], "ext:", 4) != 0) keep[n++] = c;
  cJSON *cases = cJSON_AddArrayToObject(r, "cases");
  for (int i = 0; i < n; i++) {
    const char **k = kCase[keep[i]];
    cJSON *c = add_obj(cases);
    cJSON_AddStringToObject(c, "kernel", k[0]);
    cJSON_AddStringToObject(c, "shape", k[1]);
    cJSON_AddStringToObject(c, "config", k[2]);
    int is_xir = !strcmp(k[2], "default");
    cJSON_AddStringToObject(c, "candidate", is_xir ? "perm=r,l=16,B=16,W=16" : "-");
    cJSON_AddStringToObject(c, "grain", is_xir ? "max" : "-");
    cJSON_AddStringToObject(c, "implementation", is_xir ? "multi-packet" : "external peer");
    cJSON_AddStringToObject(c, "input_sha256", kSha);
    cJSON_AddStringToObject(c, "output_sha256", kSha);
    if (is_xir) {
      cJSON_AddStringToObject(c, "ir_sha256", kSha);
      cJSON_AddStringToObject(c, "obj_sha256", kSha);
      cJSON_AddNumberToObject(c, "workers", 2);
    }
    cJSON_AddNumberToObject(c, "max_abs_err", 1e-7);
  }
  cJSON *cmps = cJSON_AddArrayToObject(r, "comparisons");
  if (with_py) { /* what the peers suite declares: torch_eager_py -> xir_python, default -> xir_python */
    int pairs[3][2] = {{2, 1}, {0, 1}, {3, 4}};
    for (int k = 0; k < 3; k++) {
      cJSON *o = add_obj(cmps);
      cJSON_AddNumberToObject(o, "baseline", pairs[k][0]);
      cJSON_AddNumberToObject(o, "variant", pairs[k][1]);
    }
  }
  cJSON *orders = cJSON_AddArrayToObject(r, "orders");
  int fwd[NCASES], rev[NCASES];
  for (int i = 0; i < n; i++) fwd[i] = i, rev[i] = n - 1 - i;
  cJSON_AddItemToArray(orders, cJSON_CreateIntArray(fwd, n));
  cJSON_AddItemToArray(orders, cJSON_CreateIntArray(rev, n));
  cJSON *visits = cJSON_AddArrayToObject(r, "visits");
  for (int round = 0; round < ROUNDS; round++)
    for (int pos = 0; pos < n; pos++) {
      int ci = round % 2 ? rev[pos] : fwd[pos];
      double p = kP50[round][keep[ci]];
      cJSON *v = add_obj(visits);
      cJSON_AddNumberToObject(v, "round", round);
      cJSON_AddNumberToObject(v, "position", pos);
      cJSON_AddNumberToObject(v, "case", ci);
      cJSON_AddNumberToObject(v, "n", 2);
      double s[3] = {2 * p * 0.9, 2 * p, 2 * p * 1.3};
      cJSON_AddItemToObject(v, "samples_ns", cJSON_CreateDoubleArray(s, 3));
      cJSON *chk = cJSON_AddObjectToObject(v, "check");
      cJSON_AddBoolToObject(chk, "pass", 1);
      cJSON_AddNumberToObject(chk, "max_abs", 1e-7);
      cJSON_AddNumberToObject(chk, "rel_l2", 1e-8);
      cJSON_AddBoolToObject(chk, "sentinels", 1);
      cJSON_AddStringToObject(chk, "output_sha256", kSha);
    }
  xir_diag d;
  assert_int_equal(xir__bench_summarize(r, &d), XIR_OK);
  return r;
}

static cJSON *records(int with_py) { return records_as(with_py, 1); }

/* The JSON round trip of the written records (NaN becomes null), as the audit reads them. */
static cJSON *round_trip(cJSON *r) {
  char *t = cJSON_PrintUnformatted(r);
  cJSON *back = cJSON_Parse(t);
  cJSON_free(t);
  cJSON_Delete(r);
  assert_non_null(back);
  return back;
}

static const cJSON *py(const cJSON *r) {
  return cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "python_side");
}

static double at(const cJSON *o, const char *path) { /* "rows.0.vs_torch.median" */
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  const cJSON *x = o;
  for (char *tok = strtok(buf, "."); tok && x; tok = strtok(NULL, "."))
    x = (*tok >= '0' && *tok <= '9') ? cJSON_GetArrayItem(x, atoi(tok)) : cJSON_GetObjectItem(x, tok);
  assert_non_null(x);
  return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static void test_statistics_from_the_p50s(void **state) {
  (void)state;
  cJSON *r = records(1);
  const cJSON *p = py(r);
  assert_non_null(p);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p, "rows")), 2);
  /* rmsnorm: ratios xir/torch 0.5, 0.5, 0.8; xir/C 7, 4.5, 8; differences 600, 700, 700 */
  assert_float_equal(at(p, "rows.0.xir_python_ns"), 800, 1e-9);
  assert_float_equal(at(p, "rows.0.torch_ns"), 1400, 1e-9);
  assert_float_equal(at(p, "rows.0.default_ns"), 100, 1e-9);
  assert_float_equal(at(p, "rows.0.vs_torch.median"), 0.5, 1e-12);
  assert_float_equal(at(p, "rows.0.vs_torch.min"), 0.5, 1e-12);
  assert_float_equal(at(p, "rows.0.vs_torch.max"), 0.8, 1e-12);
  assert_float_equal(at(p, "rows.0.vs_c.median"), 7, 1e-12);
  assert_float_equal(at(p, "rows.0.vs_c.min"), 4.5, 1e-12);
  assert_float_equal(at(p, "rows.0.vs_c.max"), 8, 1e-12);
  assert_float_equal(at(p, "rows.0.overhead_ns"), 700, 1e-9);
  assert_float_equal(at(p, "rows.0.xir_python"), 1, 0);
  assert_float_equal(at(p, "rows.0.torch_eager_py"), 2, 0);
  assert_float_equal(at(p, "rows.0.default"), 0, 0);
  /* swiglu: no torch case, so no torch figures */
  assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "rows"), 1), "vs_torch"));
  assert_float_equal(at(p, "rows.1.vs_c.median"), 1.5, 1e-12);
  assert_float_equal(at(p, "rows.1.overhead_ns"), 500, 1e-9);
  /* totals */
  assert_float_equal(at(p, "n_vs_torch"), 1, 0);
  assert_float_equal(at(p, "geomean_vs_torch"), 0.5, 1e-12);
  assert_float_equal(at(p, "xir_faster"), 1, 0);
  assert_float_equal(at(p, "n_vs_c"), 2, 0);
  assert_float_equal(at(p, "geomean_vs_c"), sqrt(7 * 1.5), 1e-12);
  assert_float_equal(at(p, "median_overhead_ns"), 600, 1e-9);
  /* the same figures as the comparisons of the summary (one formula) */
  const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "comparisons"), 0);
  assert_float_equal(cJSON_GetObjectItem(c0, "median_ratio")->valuedouble, 0.5, 1e-12);
  xir_diag d;
  cJSON *back = round_trip(r);
  if (xir__bench_audit_records(back, &d)) fail_msg("audit rejected untouched records: %s", d.msg);
  cJSON_Delete(back);
}

static char *table_of(const cJSON *r) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  xir__bench_python_side_table(f, r);
  fclose(f);
  return buf;
}

static void test_table_when_measured(void **state) {
  (void)state;
  cJSON *r = records(1);
  cJSON *u = cJSON_CreateObject(); /* a Python-side case the package could not run */
  cJSON_AddStringToObject(u, "kernel", "rope_cache");
  cJSON_AddStringToObject(u, "shape", "R=3,C=1000");
  cJSON_AddStringToObject(u, "config", "ext:xir_python");
  cJSON_AddStringToObject(u, "reason", "xir_python: unknown kernel 'rope_cache'");
  cJSON_AddItemToArray(cJSON_GetObjectItem(r, "unsupported"), u);
  r = round_trip(r);
  char *t = table_of(r);
  const char *want[] = {
      "## Python side: xir called from Python vs torch eager in the same process\n",
      "| rmsnorm | R=3,C=1000 | 0.80 | 1.40 | 0.500 | 0.500–0.800 | 0.10 | 7.000 | 4.500–8.000 | 0.70 |\n",
      "| swiglu | R=3,C=1000 | 1.50 | - | - | - | 1.00 | 1.500 | 1.500–1.500 | 0.50 |\n",
      "Over 1 cases: geometric mean of xir/torch 0.500; xir from Python is faster in 1 of 1.",
      "Over 2 cases: geometric mean of Python / C launch 3.240; median + 0.60 µs per call.",
      "- rope_cache R=3,C=1000 ext:xir_python: xir_python: unknown kernel 'rope_cache'\n"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    if (!strstr(t, want[i])) fail_msg("the table lacks '%s'; it is:\n%s", want[i], t);
  assert_null(strstr(t, "Not measured:"));
  char line[512];
  xir__bench_python_side_line(r, line, sizeof line);
  assert_non_null(strstr(line, "over 1 cases: geometric mean 0.500, xir faster in 1"));
  assert_non_null(strstr(line, "Python call / C launch over 2 cases: geometric mean 3.240"));
  free(t);
  cJSON_Delete(r);
}

static void test_not_measured_says_why(void **state) {
  (void)state;
  cJSON *r = round_trip(records(0));
  assert_null(py(r)); /* no Python-side case, no statistics */
  char *t = table_of(r);
  if (!strstr(t, "## Python side") || !strstr(t, "Not measured: no torch: /p/venv/bin/python is missing.\n"))
    fail_msg("the not-measured section is wrong:\n%s", t);
  assert_null(strstr(t, "| kernel |"));
  free(t);
  char line[512];
  xir__bench_python_side_line(r, line, sizeof line);
  assert_string_equal(line, "Python side not measured: no torch: /p/venv/bin/python is missing");
  xir_diag d;
  if (xir__bench_audit_records(r, &d)) fail_msg("audit rejected a not-measured run: %s", d.msg);
  /* another suite: no section at all */
  cJSON_DeleteItemFromObject(r, "python_side");
  cJSON_SetValuestring(cJSON_GetObjectItem(r, "suite"), "smoke");
  t = table_of(r);
  assert_string_equal(t, "");
  free(t);
  cJSON_Delete(r);
}

static void expect_reject(cJSON *r, const char *reason) {
  xir_diag d;
  xir_status st = xir__bench_audit_records(r, &d);
  if (st == XIR_OK || !strstr(d.msg, reason))
    fail_msg("wanted a rejection naming '%s'; got status %d: %s", reason, st, st ? d.msg : "OK");
  cJSON_Delete(r);
}

static cJSON *set(cJSON *r, const char *path, double v) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  cJSON *x = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "python_side");
  char *last = strrchr(buf, '.'), *key = buf;
  if (last) {
    *last = 0;
    key = last + 1;
    for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, "."))
      x = (*tok >= '0' && *tok <= '9') ? cJSON_GetArrayItem(x, atoi(tok)) : cJSON_GetObjectItem(x, tok);
  }
  assert_non_null(cJSON_GetObjectItem(x, key));
  cJSON_SetNumberValue(cJSON_GetObjectItem(x, key), v);
  return r;
}

static void test_audit_recomputes_the_python_side(void **state) {
  (void)state;
  expect_reject(set(round_trip(records(1)), "rows.0.vs_torch.median", 0.4),
                "summary.python_side.rows[0].vs_torch.median is recorded as 0.4");
  expect_reject(set(round_trip(records(1)), "rows.1.overhead_ns", 1),
                "summary.python_side.rows[1].overhead_ns");
  expect_reject(set(round_trip(records(1)), "geomean_vs_c", 1.0), "summary.python_side.geomean_vs_c");
  expect_reject(set(round_trip(records(1)), "xir_faster", 0), "summary.python_side.xir_faster");
  cJSON *r = round_trip(records(1));
  cJSON_DeleteItemFromObject(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "python_side"), "rows");
  expect_reject(r, "summary.python_side has 6 members, the samples give 7");
  r = round_trip(records(1));
  cJSON_DeleteItemFromObject(cJSON_GetObjectItem(r, "summary"), "python_side");
  expect_reject(r, "summary.python_side is missing");
  /* a row's kernel renamed */
  r = round_trip(records(1));
  cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "python_side"), "rows"), 1);
  cJSON_SetValuestring(cJSON_GetObjectItem(row, "kernel"), "layernorm");
  expect_reject(r, "summary.python_side.rows[1].kernel");
}

static void test_audit_checks_the_declaration(void **state) {
  (void)state;
  cJSON *r = round_trip(records(1));
  cJSON_DeleteItemFromObject(r, "python_side"); /* a measured run's, the declaration removed */
  expect_reject(r, "declaration field python_side is missing, but summary.python_side is recorded");
  r = round_trip(records(1));
  cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "python_side"), "measured", cJSON_CreateString("yes"));
  expect_reject(r, "without a boolean \"measured\"");
  /* not measured, yet Python-side cases */
  r = round_trip(records(1));
  cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "python_side"), "measured", cJSON_CreateFalse());
  cJSON_AddStringToObject(cJSON_GetObjectItem(r, "python_side"), "reason", "none");
  expect_reject(r, "says not measured, but case 1 is rmsnorm R=3,C=1000 ext:xir_python");
  r = round_trip(records(0));
  cJSON_DeleteItemFromObject(cJSON_GetObjectItem(r, "python_side"), "reason");
  expect_reject(r, "not measured without a reason");
  r = round_trip(records(0));
  cJSON_SetValuestring(cJSON_GetObjectItem(r, "suite"), "pilot");
  expect_reject(r, "declaration field python_side in a pilot suite");
}

/* Measured, yet no statistics (every ext:xir_python case unsupported; or records of the binary
 * before this check, which declared a --peer server measured without looking): the line and the
 * table say so, and no count comes from a NaN (undefined behaviour when converted to int). */
static void test_measured_without_statistics(void **state) {
  (void)state;
  cJSON *r = round_trip(records(1));
  cJSON_DeleteItemFromObject(cJSON_GetObjectItem(r, "summary"), "python_side");
  char line[512];
  xir__bench_python_side_line(r, line, sizeof line);
  assert_string_equal(line, "Python side: no xir_python case has a ratio to report (see tables.md)");
  char *t = table_of(r);
  if (!strstr(t, "No case of the Python side ran") || strstr(t, "Over "))
    fail_msg("the section is wrong:\n%s", t);
  free(t);
  /* statistics whose counts are null (NaN written as JSON) or absurd: no ratio line from them */
  cJSON_Delete(r);
  r = round_trip(records(1));
  cJSON *ps = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "python_side");
  cJSON_ReplaceItemInObject(ps, "n_vs_torch", cJSON_CreateNull());
  cJSON_ReplaceItemInObject(ps, "n_vs_c", cJSON_CreateNumber(1e300));
  xir__bench_python_side_line(r, line, sizeof line);
  assert_string_equal(line, "Python side: no xir_python case has a ratio to report (see tables.md)");
  cJSON_Delete(r);
}

/* Records from before the Python side (XIR_BENCH_FORMAT unchanged): no declaration, no
 * summary.python_side. The record audit accepts them, with no Python-side case and with the
 * ext:xir_python cases of a --peer xir_python=... server (then an external peer like any other:
 * no statistics, no section); what gives a removed declaration away is the summary. */
static void test_records_from_before_the_python_side(void **state) {
  (void)state;
  xir_diag d;
  for (int with_py = 0; with_py < 2; with_py++) {
    cJSON *r = round_trip(records_as(with_py, 0));
    assert_null(py(r));
    if (xir__bench_audit_records(r, &d))
      fail_msg("audit rejected records from before the Python side (%s): %s",
               with_py ? "--peer xir_python" : "no Python-side case", d.msg);
    char *t = table_of(r);
    assert_string_equal(t, "");
    free(t);
    char line[512];
    xir__bench_python_side_line(r, line, sizeof line);
    assert_string_equal(line, "");
    cJSON_Delete(r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_statistics_from_the_p50s),
      cmocka_unit_test(test_table_when_measured),
      cmocka_unit_test(test_not_measured_says_why),
      cmocka_unit_test(test_audit_recomputes_the_python_side),
      cmocka_unit_test(test_audit_checks_the_declaration),
      cmocka_unit_test(test_measured_without_statistics),
      cmocka_unit_test(test_records_from_before_the_python_side),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

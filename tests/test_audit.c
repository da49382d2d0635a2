/* test_audit.c — runs the tiny smoke suite through the real `xir bench`, checks that `xir audit`
 * accepts the records, then tampers with them in every way SPEC.md lists and asserts that the
 * audit rejects each with the named reason; then the tamper list: one forged record per field
 * the audit can check (issue 13), and files that are not exactly one gzip member of one JSON
 * value (garbage after either, a cut-off trailer, a gzip bomb). */
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
#include <zlib.h>

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

/* The records' service coefficients may carry a reduction step below 0 (the calibration's step
 * credit, XIR_STEP_CREDIT_OPS): the audit reads such records; any other negative figure is
 * refused when read. (The smoke suite's configurations do not re-plan with the service
 * coefficients; the planner's bound on the credit is test_plan's test_bad_options.) */
static void test_step_credit_in_records(void **state) {
  (void)state;
  static const struct {
    const char *key;
    double v;
    const char *reason; /* NULL: accepted */
  } cases[] = {{"ns_per_step[0]", -1e-12, NULL},
               {"ns_per_step[1]", -0.25, NULL},
               {"ns_per_math", -1e-12, "ns_per_math"},
               {"ns_per_task_far", -0.25, "ns_per_task_far"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cJSON *r = load();
    cJSON *sv = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "provenance"), "service_coefficients");
    assert_non_null(sv);
    cJSON_ReplaceItemInObject(sv, cases[i].key, cJSON_CreateNumber(cases[i].v));
    char name[32], out[8192];
    snprintf(name, sizeof name, "step_credit_%zu", i);
    if (cases[i].reason) {
      expect_reject(name, r, cases[i].reason);
    } else {
      int rc = audit(name, r, out, sizeof out);
      if (rc != 0) fail_msg("a step credit of %g: audit exit %d: %s", cases[i].v, rc, out);
    }
  }
}

/* ---- the tamper list: one forged record per field the audit can check ----------------------- */

static cJSON *case_of(cJSON *rec, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(rec, "cases"), i); }

/* Replaces (or adds) obj[key] by item. */
static void set(cJSON *obj, const char *key, cJSON *item) {
  if (cJSON_GetObjectItem(obj, key)) cJSON_ReplaceItemInObject(obj, key, item);
  else cJSON_AddItemToObject(obj, key, item);
}

typedef enum { ROOT, PROV, RUNTIME, CASE0, CHECK0, VISIT0, CHECK_ALL0 } where;

typedef struct tamper {
  const char *name;
  where at;
  const char *key;
  int is_string;
  const char *str;
  double num;
  const char *reason;
} tamper;

static const char kOtherHash[] = "abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcd";

static void apply(cJSON *r, const tamper *t) {
  cJSON *item = t->is_string ? cJSON_CreateString(t->str) : cJSON_CreateNumber(t->num);
  switch (t->at) {
    case ROOT: set(r, t->key, item); break;
    case PROV: set(cJSON_GetObjectItem(r, "provenance"), t->key, item); break;
    case RUNTIME: set(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "provenance"), "runtime"), t->key, item); break;
    case CASE0: set(case_of(r, 0), t->key, item); break;
    case CHECK0: set(cJSON_GetObjectItem(visit(r, 0), "check"), t->key, item); break;
    case VISIT0: set(visit(r, 0), t->key, item); break;
    case CHECK_ALL0: {
      /* every visit of case 0, and the case's own copy, consistently */
      cJSON *v;
      cJSON_ArrayForEach(v, cJSON_GetObjectItem(r, "visits")) if (cJSON_GetNumberValue(cJSON_GetObjectItem(v, "case")) == 0)
        set(cJSON_GetObjectItem(v, "check"), t->key, cJSON_Duplicate(item, 1));
      if (!strcmp(t->key, "max_abs")) set(case_of(r, 0), "max_abs_err", cJSON_Duplicate(item, 1));
      if (!strcmp(t->key, "output_sha256")) set(case_of(r, 0), "output_sha256", cJSON_Duplicate(item, 1));
      cJSON_Delete(item);
      break;
    }
  }
}

static void test_tamper_list_every_field_rejected_with_its_reason(void **state) {
  (void)state;
  cJSON *r0 = load();
  double pool = cJSON_GetNumberValue(cJSON_GetObjectItem(r0, "workers"));
  /* the width the records were made at (the host's): a candidate at that width the configuration
   * does not give (ℓ = 1, B = W), and one at another width */
  const char *c0 = cJSON_GetStringValue(cJSON_GetObjectItem(case_of(r0, 0), "candidate"));
  const char *wp = c0 ? strstr(c0, ",W=") : NULL;
  assert_non_null(wp);
  int W = atoi(wp + 3);
  assert_true(W == 4 || W == 8 || W == 16);
  char cand_other[64], cand_width[64];
  snprintf(cand_other, sizeof cand_other, "perm=r,l=1,B=%d,W=%d", W, W);
  snprintf(cand_width, sizeof cand_width, "perm=r,l=1,B=16,W=%d", W == 8 ? 16 : 8);
  assert_string_not_equal(c0, cand_other);
  cJSON_Delete(r0);
  const tamper list[] = {
      /* the oracle entries of a visit */
      {"chk-max-abs-huge", CHECK_ALL0, "max_abs", 0, NULL, 1e30, "failed oracle check"},
      {"chk-max-abs-one", CHECK0, "max_abs", 0, NULL, 1e30, "oracle check inconsistent"},
      {"chk-max-abs-str", CHECK0, "max_abs", 1, "forged", 0, "max_abs = \"forged\", not a finite"},
      {"chk-rel-l2-neg", CHECK0, "rel_l2", 0, NULL, -7, "rel_l2 = -7, not a finite"},
      {"chk-rel-l2-huge", CHECK_ALL0, "rel_l2", 0, NULL, 0.5, "failed oracle check"},
      {"chk-sentinels", CHECK0, "sentinels", 1, "false", 0, "sentinels \"false\""},
      {"chk-out-forged", CHECK0, "output_sha256", 1, "forged", 0, "output_sha256 is \"forged\", not a SHA-256"},
      {"chk-out-other", CHECK0, "output_sha256", 1, kOtherHash, 0, "output hash inconsistent"},
      {"chk-out-num", CHECK0, "output_sha256", 0, NULL, -7, "output_sha256 is -7, not a SHA-256"},
      /* a case's fields */
      {"case-ir", CASE0, "ir_sha256", 1, "forged", 0, "field ir_sha256 is \"forged\""},
      {"case-ir-num", CASE0, "ir_sha256", 0, NULL, -7, "field ir_sha256 is -7"},
      {"case-obj", CASE0, "obj_sha256", 1, "forged", 0, "field obj_sha256 is \"forged\""},
      {"case-obj-upper", CASE0, "obj_sha256", 1, "ABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCD", 0, "field obj_sha256"},
      {"case-out", CASE0, "output_sha256", 1, "forged", 0, "field output_sha256 is \"forged\""},
      {"case-out-other", CASE0, "output_sha256", 1, kOtherHash, 0, "output hash inconsistent"},
      {"case-input", CASE0, "input_sha256", 1, "forged", 0, "field input_sha256 is \"forged\""},
      {"case-cand", CASE0, "candidate", 1, "forged", 0, "candidate 'forged' does not parse"},
      {"case-cand-num", CASE0, "candidate", 0, NULL, -7, "field candidate is -7, not a string"},
      {"case-cand-other", CASE0, "candidate", 1, cand_other, 0, "is not the one configuration joint_legacy gives"},
      {"case-cand-width", CASE0, "candidate", 1, cand_width, 0, "does not parse"},
      {"case-grain", CASE0, "grain", 1, "forged", 0, "grain 'forged' is not a task grain"},
      {"case-grain-num", CASE0, "grain", 0, NULL, -7, "field grain is -7, not a string"},
      {"case-grain-neg", CASE0, "grain", 1, "-7", 0, "grain '-7' is not a task grain"},
      {"case-grain-other", CASE0, "grain", 1, "5", 0, "grain '5' is not the one configuration"},
      {"case-workers", CASE0, "workers", 0, NULL, -7, "field workers is -7"},
      {"case-workers-str", CASE0, "workers", 1, "forged", 0, "field workers is \"forged\""},
      {"case-workers-big", CASE0, "workers", 0, NULL, pool + 1, "field workers is"},
      {"case-impl", CASE0, "implementation", 1, "forged", 0, "implementation 'forged' is not the candidate's"},
      {"case-max-abs-err", CASE0, "max_abs_err", 0, NULL, 1e30, "max_abs_err 1e+30 is not the largest"},
      {"case-max-abs-err-neg", CASE0, "max_abs_err", 0, NULL, -7, "field max_abs_err is -7"},
      /* the declaration */
      {"top-workers", ROOT, "workers", 0, NULL, 9999, "declaration field workers is 9999"},
      {"top-workers-frac", ROOT, "workers", 0, NULL, 1.5, "declaration field workers is 1.5"},
      {"top-warmup", ROOT, "warmup_ms", 0, NULL, -1, "declaration field warmup_ms is -1"},
      {"top-warmup-zero", ROOT, "warmup_ms", 0, NULL, 0, "declaration field warmup_ms is 0"},
      {"top-sample", ROOT, "sample_ms", 1, "x", 0, "declaration field sample_ms is \"x\""},
      {"top-settle", ROOT, "settle_ms", 0, NULL, -1, "declaration field settle_ms is -1"},
      {"top-samples", ROOT, "samples", 0, NULL, 2.5, "declaration field samples is 2.5"},
      {"top-rounds", ROOT, "rounds", 0, NULL, -7, "declaration field rounds is -7"},
      {"top-seed", ROOT, "seed", 0, NULL, -7, "declaration field seed is -7"},
      {"top-seed-other", ROOT, "seed", 0, NULL, 2, "changed input fingerprint"},
      {"top-input-offset", ROOT, "input_offset", 0, NULL, 12, "declaration field input_offset is 12"},
      {"top-input-offset-big", ROOT, "input_offset", 0, NULL, 64, "declaration field input_offset is 64"},
      {"top-input-offset-str", ROOT, "input_offset", 1, "16", 0, "declaration field input_offset is \"16\""},
      {"prov-workers", RUNTIME, "workers", 0, NULL, pool + 1, "the runtime's provenance says"},
      {"prov-width", PROV, "simd_width", 0, NULL, 3, "provenance field simd_width is 3"},
      /* a visit's own numbers */
      {"visit-n", VISIT0, "n", 0, NULL, 1.5, "must be integers"},
      {"visit-round", VISIT0, "round", 1, "0", 0, "must be integers"},
  };
  for (size_t i = 0; i < sizeof list / sizeof *list; i++) {
    if (!strcmp(list[i].name, "case-workers-big") && pool >= 256) continue;
    cJSON *r = load();
    if (!strcmp(list[i].name, "chk-sentinels"))
      set(cJSON_GetObjectItem(visit(r, 0), "check"), "sentinels", cJSON_CreateFalse());
    else apply(r, &list[i]);
    const char *reason = list[i].reason;
    if (!strcmp(list[i].name, "chk-sentinels")) reason = "passes with sentinels false";
    expect_reject(list[i].name, r, reason);
  }
  /* workers valid for the pool but not the configuration's */
  if (pool > 1) {
    cJSON *r = load();
    set(case_of(r, 0), "workers", cJSON_CreateNumber(1));
    expect_reject("case-workers-config", r, "workers 1 is not the");
  }
  /* grain_identity claimed by a suite that is not fixed-grain */
  cJSON *r = load();
  cJSON_AddItemToObject(r, "grain_identity", cJSON_CreateArray());
  expect_reject("grain-identity", r, "grain_identity in a smoke suite");
}

/* ---- the file itself ---------------------------------------------------------------------- */

static void write_bytes(const char *name, const void *data, size_t n) {
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/%s", g_dir, name);
  mkdir(dir, 0777);
  snprintf(path, sizeof path, "%s/raw.json.gz", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

static unsigned char *slurp(size_t *n) {
  char path[512];
  snprintf(path, sizeof path, "%s/ok/raw.json.gz", g_dir);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(*n + 64);
  assert_int_equal(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}

static void expect_file_reject(const char *env, const char *name, const char *reason) {
  char cmd[2048], out[8192];
  snprintf(cmd, sizeof cmd, "%s '%s' audit '%s/%s'", env ? env : "", g_bin, g_dir, name);
  int rc = run(cmd, out, sizeof out);
  if (rc == 0 || rc >= 128 || !strstr(out, reason))
    fail_msg("file '%s': audit exit %d, wanted a rejection naming '%s'; it said: %s", name, rc,
             reason, out);
}

/* Writes text as one gzip member, then `after` (raw, after the member) to name/raw.json.gz. */
static void write_gz_text(const char *name, const char *text, size_t n) {
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/%s", g_dir, name);
  mkdir(dir, 0777);
  snprintf(path, sizeof path, "%s/raw.json.gz", dir);
  gzFile g = gzopen(path, "wb1");
  assert_non_null(g);
  assert_int_equal(gzwrite(g, text, (unsigned)n), (int)n);
  assert_int_equal(gzclose(g), Z_OK);
}

static void test_file_must_be_one_gzip_member_of_one_json_value(void **state) {
  (void)state;
  size_t n;
  unsigned char *b = slurp(&n);
  /* garbage after the gzip member */
  memcpy(b + n, "garbage", 7);
  write_bytes("after-gzip", b, n + 7);
  expect_file_reject(NULL, "after-gzip", "garbage after the gzip member");
  /* a second gzip member is garbage too */
  memcpy(b + n, b, 20);
  write_bytes("two-members", b, n + 20);
  expect_file_reject(NULL, "two-members", "garbage after the gzip member");
  /* the CRC/size trailer cut off, or a part of it */
  write_bytes("no-trailer", b, n - 8);
  expect_file_reject(NULL, "no-trailer", "truncated gzip stream");
  write_bytes("half-trailer", b, n - 3);
  expect_file_reject(NULL, "half-trailer", "truncated gzip stream");
  /* a wrong CRC */
  b[n - 8] ^= 0x55;
  write_bytes("bad-crc", b, n);
  expect_file_reject(NULL, "bad-crc", "corrupt gzip stream");
  b[n - 8] ^= 0x55;
  free(b);
  /* not gzip at all */
  write_bytes("plain", "{\"format\":\"xir-bench-1\"}", 24);
  expect_file_reject(NULL, "plain", "is not a gzip file");
  /* garbage after the JSON value, inside the member */
  cJSON *r = load();
  char *text = cJSON_PrintUnformatted(r);
  cJSON_Delete(r);
  size_t tl = strlen(text);
  char *more = malloc(tl + 16);
  memcpy(more, text, tl);
  memcpy(more + tl, " {\"x\":1}", 8);
  write_gz_text("after-json", more, tl + 8);
  expect_file_reject(NULL, "after-json", "garbage after the JSON value");
  memcpy(more + tl, "\n\0{}", 4);
  write_gz_text("nul-json", more, tl + 4);
  expect_file_reject(NULL, "nul-json", "NUL byte");
  /* white space after the JSON is fine */
  memcpy(more + tl, " \n", 2);
  write_gz_text("ws-json", more, tl + 2);
  char cmd[2048], out[8192];
  snprintf(cmd, sizeof cmd, "'%s' audit '%s/ws-json'", g_bin, g_dir);
  if (run(cmd, out, sizeof out) != 0) fail_msg("white space after the JSON rejected: %s", out);
  free(more);
  cJSON_free(text);
}

static void test_gzip_bomb_is_refused_at_the_cap(void **state) {
  (void)state;
  /* 64 MiB of zeros inflate from a small file; with the cap lowered to 16 MiB the audit refuses
   * as soon as it passes the cap (the default cap, 256 MiB, is documented in records.h) */
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/bomb", g_dir);
  mkdir(dir, 0777);
  snprintf(path, sizeof path, "%s/raw.json.gz", dir);
  gzFile g = gzopen(path, "wb1");
  assert_non_null(g);
  static char zeros[1 << 20];
  memset(zeros, ' ', sizeof zeros); /* white space: valid JSON padding once a value follows */
  for (int i = 0; i < 64; i++) assert_int_equal(gzwrite(g, zeros, sizeof zeros), (int)sizeof zeros);
  gzputs(g, "{}");
  assert_int_equal(gzclose(g), Z_OK);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_true(st.st_size < 2 * 1024 * 1024);
  expect_file_reject("XIR_RECORDS_MAX_BYTES=16777216", "bomb", "decompresses to more than 16777216 bytes");
  /* the library function with an explicit cap */
  cJSON *r = NULL;
  xir_diag d;
  assert_int_equal(xir__json_read_gz_capped(path, 1 << 20, &r, &d), XIR_ERR_FORMAT);
  assert_null(r);
  assert_non_null(strstr(d.msg, "gzip bomb"));
  /* under the default cap the same file reads (and is then not records) */
  assert_true(xir__records_max_bytes() == XIR_RECORDS_MAX_BYTES);
  assert_int_equal(xir__json_read_gz(path, &r, &d), XIR_OK);
  cJSON_Delete(r);
  /* real records are far below the cap */
  snprintf(path, sizeof path, "%s/ok/raw.json.gz", g_dir);
  assert_int_equal(xir__json_read_gz_capped(path, 1 << 20, &r, &d), XIR_OK);
  cJSON_Delete(r);
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
      cmocka_unit_test(test_step_credit_in_records),
      cmocka_unit_test(test_tamper_list_every_field_rejected_with_its_reason),
      cmocka_unit_test(test_file_must_be_one_gzip_member_of_one_json_value),
      cmocka_unit_test(test_gzip_bomb_is_refused_at_the_cap),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

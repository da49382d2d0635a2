/* test_service.c — the machine's service model in the cache directory (src/tune/service.c):
 * measured once and stored, read back when intact, never trusted when corrupt or foreign,
 * refreshed on request, and kept out of the file system by XIR_NO_CALIBRATION_FILE. A real
 * measurement takes seconds (more under a parallel ctest), so one is real and the checks of
 * which files are trusted use a stand-in (xir__service_set_measure). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <utime.h>
#include <cmocka.h>

#include "lower/jit.h"
#include "lower/stream.h"
#include "tune/service.h"
#include "util/sha256.h"
#include "xir_compile.h"
#include "xir_plan.h"

static char g_dir[256];

static void die(const xir_diag *d) { fail_msg("%s", d->msg); }

static long read_all(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t n = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[n] = 0;
  return (long)n;
}

static void write_all(const char *path, const char *buf) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(buf, f);
  fclose(f);
}

/* Recomputes the closing SHA-256 line after an edit, so that only the key can make the file
 * foreign. */
static void rehash(char *text) {
  char *h = strstr(text, "\nsha256 ");
  assert_non_null(h);
  char hex[65];
  xir__sha256_hex(text, (size_t)(h - text) + 1, hex);
  snprintf(h + 1, 8 + 64 + 2, "sha256 %s\n", hex);
}

/* The stand-in measurement (xir__service_set_measure) for the file checks after the first real
 * one: figures that differ from call to call, so a re-measurement is also seen in the figures. */
static int g_fake_calls;
static xir_status fake_measure(xir_compiler *cc, xir_runtime *rt, xir_calibration *out,
                               xir_diag *d) {
  (void)cc;
  (void)rt;
  (void)d;
  memset(out, 0, sizeof *out);
  g_fake_calls++;
  out->ns_per_arith = 0.01 * g_fake_calls;
  out->ns_per_byte = 0.03;
  out->ns_per_block = 0.08;
  out->ns_per_task = 40;
  out->ns_per_task_far = 600;
  out->ns_activation = 700;
  out->stream_bytes = 8 << 20;
  return XIR_OK;
}

static void model(int refresh, xir_calibration *c, int *from_file) {
  xir_diag d;
  if (xir_service_model(2, refresh, c, from_file, &d)) die(&d);
}

static int same(const xir_calibration *a, const xir_calibration *b) {
  return a->ns_per_arith == b->ns_per_arith && a->ns_per_byte == b->ns_per_byte &&
         a->ns_per_task == b->ns_per_task && a->ns_activation == b->ns_activation &&
         a->ns_per_block == b->ns_per_block && a->stream_bytes == b->stream_bytes &&
         a->ns_per_task_far == b->ns_per_task_far;
}

/* XIR_CACHE_DIR wins over XDG_CACHE_HOME, which wins over HOME. */
static void test_cache_dir_order(void **state) {
  (void)state;
  char buf[512];
  setenv("XIR_CACHE_DIR", "/tmp/a", 1);
  setenv("XDG_CACHE_HOME", "/tmp/b", 1);
  assert_int_equal(xir_cache_dir(buf, sizeof buf, NULL), XIR_OK);
  assert_string_equal(buf, "/tmp/a");
  unsetenv("XIR_CACHE_DIR");
  assert_int_equal(xir_cache_dir(buf, sizeof buf, NULL), XIR_OK);
  assert_string_equal(buf, "/tmp/b/xir");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/tmp/c", 1);
  assert_int_equal(xir_cache_dir(buf, sizeof buf, NULL), XIR_OK);
  assert_string_equal(buf, "/tmp/c/.cache/xir");
  assert_int_equal(xir_cache_dir(buf, 4, NULL), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_cache_dir(NULL, 4, NULL), XIR_ERR_INVALID_ARG);
  setenv("XIR_CACHE_DIR", g_dir, 1);
}

/* Measured and stored the first time, read back (the same figures) the second; a corrupt file, a
 * file for another key and a refresh are measured again; the rewritten file is valid. */
static void test_measured_once_then_read_back(void **state) {
  (void)state;
  char path[1200], text[8192];
  xir_diag d;
  if (xir_service_model_path(2, path, sizeof path, &d)) die(&d);
  assert_true(strncmp(path, g_dir, strlen(g_dir)) == 0);
  xir_calibration a, b;
  int from_file = -1;
  model(0, &a, &from_file);
  assert_int_equal(from_file, 0);
  assert_true(read_all(path, text, sizeof text) > 0);
  assert_non_null(strstr(text, "\nsha256 "));
  assert_true(a.ns_per_arith > 0 && a.ns_activation > 0);
  /* the streaming threshold: not measured (0) or between the probes' footprints (4-256 MiB) */
  assert_non_null(strstr(text, "\nstream_bytes "));
  assert_true(a.stream_bytes == 0 || (a.stream_bytes >= 4 << 20 && a.stream_bytes <= 256 << 20));
  model(0, &b, &from_file);
  assert_int_equal(from_file, 1);
  assert_true(same(&a, &b));
  /* the planner's defaults apply it to the process's launches */
  assert_non_null(xir_service_coefficients());
  xir_calibration h; /* the host's model (the same file where the host has 2 CPUs) */
  if (xir_service_model(0, 0, &h, NULL, &d)) die(&d);
  if (h.stream_bytes > 0) assert_int_equal(xir__stream_threshold(0), (int64_t)h.stream_bytes);
  else assert_int_equal(xir__stream_threshold(0), xir__llc_bytes() / 2);

  /* From here on, which files are trusted: a stand-in measures (a real one takes seconds) */
  xir__service_set_measure(fake_measure);
  int calls = g_fake_calls;

  /* one changed digit: the hash no longer matches */
  char *v = strstr(text, "ns_per_task ");
  assert_non_null(v);
  v += strlen("ns_per_task ");
  *v = *v == '9' ? '1' : (char)(*v + 1);
  write_all(path, text);
  model(0, &b, &from_file);
  assert_int_equal(from_file, 0);
  model(0, &b, &from_file);
  assert_int_equal(from_file, 1); /* rewritten */

  /* a foreign file (another CPU) with a correct hash of its own is not trusted either */
  assert_true(read_all(path, text, sizeof text) > 0);
  char *k = strstr(text, "cpu ");
  assert_non_null(k);
  k[4] = k[4] == 'x' ? 'y' : 'x';
  rehash(text);
  write_all(path, text);
  model(0, &b, &from_file);
  assert_int_equal(from_file, 0);
  model(0, &b, &from_file);
  assert_int_equal(from_file, 1);

  /* nor is one written by a build from other sources of the same version */
  assert_true(read_all(path, text, sizeof text) > 0);
  const char *fp = xir_source_fingerprint();
  assert_int_equal(strlen(fp), 16);
  char want[64];
  snprintf(want, sizeof want, " source %s ", fp);
  char *src = strstr(text, want);
  assert_non_null(src);
  src[8] = src[8] == '0' ? '1' : '0';
  rehash(text);
  write_all(path, text);
  model(0, &b, &from_file);
  assert_int_equal(from_file, 0);

  /* garbage and an empty file */
  write_all(path, "not a model\n");
  model(0, &b, &from_file);
  assert_int_equal(from_file, 0);
  write_all(path, "");
  model(0, &b, &from_file);
  assert_int_equal(from_file, 0);

  /* refresh measures even when the file is intact */
  model(1, &b, &from_file);
  assert_int_equal(from_file, 0);
  model(0, &a, &from_file);
  assert_int_equal(from_file, 1);
  assert_true(same(&a, &b));
  /* corrupt, foreign CPU, foreign source, garbage, empty, refresh: six measurements */
  assert_int_equal(g_fake_calls - calls, 6);
  assert_true(a.ns_per_arith == 0.01 * g_fake_calls);

  /* a reduction step may be calibrated below 0 (the prior's latency floor overcharges it): such
   * a file is read back; any other figure below 0 is refused and measured again */
  static const char *const negative[2] = {"ns_per_step[0] ", "ns_per_task "};
  for (int i = 0; i < 2; i++) {
    assert_true(read_all(path, text, sizeof text) > 0);
    char *f = strstr(text, negative[i]);
    assert_non_null(f);
    f += strlen(negative[i]);
    char *end = strchr(f, '\n');
    assert_non_null(end);
    char tail[8192];
    snprintf(tail, sizeof tail, "%s", end);
    snprintf(f, sizeof text - (size_t)(f - text), "-0.25%s", tail);
    rehash(text);
    write_all(path, text);
    calls = g_fake_calls;
    model(0, &b, &from_file);
    assert_int_equal(from_file, i == 0);
    assert_int_equal(g_fake_calls - calls, i == 0 ? 0 : 1);
    if (i == 0) assert_true(b.ns_per_step[0] == -0.25);
    else assert_true(b.ns_per_task == 40);
  }
}

static void touch(const char *name, double days_ago) {
  char p[1600];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  write_all(p, "x\n");
  time_t t = time(NULL) - (time_t)(days_ago * 86400);
  struct utimbuf u = {t, t};
  assert_int_equal(utime(p, &u), 0);
}

static int exists(const char *name) {
  char p[1600];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  return access(p, F_OK) == 0;
}

/* Writing the model removes the service files (other builds', their locks, leftover temporaries)
 * older than XIR__SERVICE_STALE_DAYS, and nothing else: not a recent one, not the process's own
 * lock, not a file of another name. */
static void test_stale_files_pruned(void **state) {
  (void)state;
  char path[1200], own[1300];
  xir_diag d;
  if (xir_service_model_path(2, path, sizeof path, &d)) die(&d);
  snprintf(own, sizeof own, "%s.lock", strrchr(path, '/') + 1);
  const double old = XIR__SERVICE_STALE_DAYS + 10, recent = XIR__SERVICE_STALE_DAYS - 10;
  const char *gone[] = {"service-0123456789abcdef.txt", "service-0123456789abcdef.txt.lock",
                        "service-00000000000000ff.txt.4242.tmp"};
  const char *kept[] = {"service-fedcba9876543210.txt", "notes.txt", "service-0123.txt",
                        "service-0123456789abcdef.json", "service-0123456789ABCDEF.txt"};
  for (int i = 0; i < 3; i++) touch(gone[i], old);
  touch(kept[0], recent);
  for (int i = 1; i < 5; i++) touch(kept[i], old);
  touch(own, old);
  xir__service_set_measure(fake_measure);
  xir_calibration c;
  int from_file = -1;
  model(1, &c, &from_file); /* refresh: measured (by the stand-in) and written */
  assert_int_equal(from_file, 0);
  for (int i = 0; i < 3; i++)
    if (exists(gone[i])) fail_msg("%s is still there", gone[i]);
  for (int i = 0; i < 5; i++)
    if (!exists(kept[i])) fail_msg("%s was removed", kept[i]);
  assert_true(exists(own));
  assert_int_equal(access(path, F_OK), 0);
  /* nothing is pruned when the file is read, not written */
  touch(gone[0], old);
  model(0, &c, &from_file);
  assert_int_equal(from_file, 1);
  assert_true(exists(gone[0]));
}

/* XIR_NO_CALIBRATION_FILE=1: the file is neither read nor written. */
static void test_no_file_mode(void **state) {
  (void)state;
  char path[1200];
  xir_diag d;
  if (xir_service_model_path(2, path, sizeof path, &d)) die(&d);
  remove(path);
  setenv("XIR_NO_CALIBRATION_FILE", "1", 1);
  xir_calibration c;
  int from_file = -1;
  xir__service_set_measure(fake_measure);
  int calls = g_fake_calls;
  model(0, &c, &from_file);
  assert_int_equal(from_file, 0);
  assert_int_equal(g_fake_calls, calls + 1); /* measured (by the stand-in) */
  assert_int_not_equal(access(path, F_OK), 0);
  unsetenv("XIR_NO_CALIBRATION_FILE");
}

/* The calibration's probes are legal candidates at every width code can be generated for: at
 * W = 8 (AVX2 hosts) its ℓ = 64 probes once asked for B = 4W = 32 and the calibration failed,
 * which left every default plan on such a host without its service model. */
static void test_calibrate_at_every_width(void **state) {
  (void)state;
  int ran = 0;
  for (uint32_t W = 16; W >= 4; W /= 2) {
    if (W > xir__jit_host_max_width()) continue;
    xir_compiler_options co;
    memset(&co, 0, sizeof co);
    co.force_width = W;
    co.no_kernel_cache = 1;
    xir_compiler *cc;
    xir_runtime *rt;
    xir_diag d;
    if (xir_compiler_create(&co, &cc, &d)) die(&d);
    assert_int_equal(xir_compiler_width(cc), W);
    xir_runtime_options ro;
    xir_runtime_options_default(&ro);
    ro.workers = 2;
    if (xir_runtime_create(&ro, &rt, &d)) die(&d);
    xir_calibration c;
    if (xir_calibrate(cc, rt, &c, &d)) fail_msg("W = %u: %s", W, d.msg);
    assert_true(c.ns_per_arith > 0 && c.ns_activation > 0 && c.ns_per_math > 0);
    xir_runtime_destroy(rt);
    xir_compiler_destroy(cc);
    ran++;
  }
  assert_true(ran >= 2);
}

static void test_bad_arguments(void **state) {
  (void)state;
  xir_calibration c;
  xir_diag d;
  assert_int_equal(xir_service_model(1, 0, &c, NULL, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_service_model(2, 0, NULL, NULL, &d), XIR_ERR_INVALID_ARG);
  char small[4];
  assert_int_equal(xir_service_model_path(2, small, sizeof small, &d), XIR_ERR_INVALID_ARG);
  /* 0 = the planner defaults' count: the online CPUs, at least 2 */
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t host = n < 2 ? 2 : (uint32_t)n;
  char a[1200], b[1200];
  assert_int_equal(xir_service_model_path(0, a, sizeof a, &d), XIR_OK);
  assert_int_equal(xir_service_model_path(host, b, sizeof b, &d), XIR_OK);
  assert_string_equal(a, b);
}

static int setup(void **state) {
  (void)state;
  snprintf(g_dir, sizeof g_dir, "/tmp/xir-service-XXXXXX");
  if (!mkdtemp(g_dir)) return -1;
  setenv("XIR_CACHE_DIR", g_dir, 1);
  unsetenv("XIR_NO_CALIBRATION_FILE");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* The arithmetic rate is the residual of the arithmetic probe's time after its bytes: the probe
 * must be mostly arithmetic, or that residual is noise (rmsnorm, the probe until 2026-12-05, gave
 * 0.009-0.047 ns in calibrations in a row). At the shape and candidate the calibration times
 * (32x1024, l = 64, B = 4W), its arithmetic units per byte are over four times rmsnorm's. */
static void test_arith_probe_is_arithmetic(void **state) {
  (void)state;
  xir_diag d;
  double per_byte[2];
  for (int v = 0; v < 2; v++) {
    xir_program *p;
    const char *text = xir__calibration_arith_probe();
    if (v == 0 ? xir_program_parse(text, strlen(text), "arith_probe", &p, &d)
               : xir_kernel_load("rmsnorm", &p, &d))
      die(&d);
    xir_shape s;
    if (xir_shape_parse(p, "R=32,C=1024", &s, &d)) die(&d);
    uint8_t perm[XIR_MAX_ROOT] = {0};
    xir_candidate c;
    if (xir_candidate_make(p, &s, 16, 64, 64, perm, &c, &d)) die(&d);
    xir_execution_work w;
    if (xir_execution_work_make(p, &s, &c, UINT32_MAX, 1, &w, &d)) die(&d);
    assert_true(w.memory_per_packet > 0 && (v == 1 || w.math_per_packet == 0)); /* rmsnorm: an rsqrt a row */
    per_byte[v] = w.arith_per_packet / w.memory_per_packet;
    xir_program_free(p);
  }
  if (!(per_byte[0] > 4 * per_byte[1]))
    fail_msg("arith probe %.3f units a byte, rmsnorm %.3f", per_byte[0], per_byte[1]);
}

/* The copy probe's verdict (xir__stream_threshold_from): the threshold between the last losing
 * footprint and the run of wins that reaches the largest probe. The Xeon VM of 2026-12-06:
 * streaming marginal at 64 MiB and 1.4x faster at 128 and 256 MiB — the probes of 4 to 64 MiB
 * alone found no win there (0: the 240 MiB prior) while those up to 256 MiB put the threshold
 * at 90.5 MiB. */
static void test_stream_threshold_from(void **state) {
  (void)state;
  double F[7];
  for (int f = 0; f < 7; f++) F[f] = 4194304.0 * (1 << f); /* 4 .. 256 MiB */
  const double MiB = 1048576.0;
  double xeon[7][2] = {{100, 130}, {200, 240}, {400, 420}, {800, 810}, {1600, 1590}, {3200, 2300},
                       {6400, 4500}};
  assert_true(xir__stream_threshold_from(xeon, F, 5) == 0);
  assert_true(fabs(xir__stream_threshold_from(xeon, F, 7) - sqrt(64.0 * 128.0) * MiB) < 1);
  double wins[3][2] = {{100, 90}, {200, 150}, {400, 300}}; /* wins everywhere: the smallest */
  assert_true(xir__stream_threshold_from(wins, F, 3) == F[0]);
  double loses[3][2] = {{100, 100}, {200, 199}, {400, 390}}; /* within 5 %: no win */
  assert_true(xir__stream_threshold_from(loses, F, 3) == 0);
  /* a lone win below a loss does not count: the run must reach the largest probe */
  double lone[4][2] = {{100, 80}, {200, 210}, {400, 300}, {800, 600}};
  assert_true(fabs(xir__stream_threshold_from(lone, F, 4) - sqrt(8.0 * 16.0) * MiB) < 1);
  assert_true(xir__stream_threshold_from(lone, F, 0) == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cache_dir_order),
      cmocka_unit_test(test_measured_once_then_read_back),
      cmocka_unit_test(test_stale_files_pruned),
      cmocka_unit_test(test_no_file_mode),
      cmocka_unit_test(test_calibrate_at_every_width),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_arith_probe_is_arithmetic),
      cmocka_unit_test(test_stream_threshold_from),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

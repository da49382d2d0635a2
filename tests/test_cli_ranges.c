/* test_cli_ranges.c — `xir run` outside a built-in kernel's documented f32 range (issue 13,
 * defect 12; docs/xir.md, "Special values and numeric ranges of the built-in kernels"): it says
 * so in a `note:` line (and a "note" in --json) naming the input and the bound, and the check
 * verdict stays what the comparison says. Inside the range there is no note. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "util/npy.h"

static char g_bin[1024], g_tmp[256];

/* Runs `xir ARGS` in the temp folder; returns the exit status (128 + signal) and the output. */
static int run(const char *args, char *out, size_t cap) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", g_tmp, g_bin, args);
  FILE *f = popen(cmd, "r");
  if (!f) return -1;
  size_t n = fread(out, 1, cap - 1, f);
  out[n] = 0;
  char sink[4096];
  while (fread(sink, 1, sizeof sink, f) > 0) {
  }
  int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void expect(const char *args, int want_rc, const char *words, int want_note) {
  char out[16384];
  int rc = run(args, out, sizeof out);
  int has_note = strstr(out, "note") != NULL;
  if (rc != want_rc || (words && !strstr(out, words)) || has_note != want_note)
    fail_msg("xir %s: exit %d (wanted %d), note %d (wanted %d), wanted '%s'; output: %s", args, rc,
             want_rc, has_note, want_note, words ? words : "", out);
}

static void test_rope_positions(void **state) {
  (void)state;
  /* beyond 2^24: f32(p) is not exact; the check fails and the note says why */
  expect("run rope --shape R=4,C=8,HD=2 --set offset=16777217", 1, "exceed 2^24 = 16777216", 1);
  expect("run rope --shape R=4,C=8,HD=2 --set offset=16777217 --json", 1, "\"note\":", 1);
  /* in (2^13, 2^24] with HD = 2 (frequency 1, exact angle) the check passes; the note still
   * says that general head widths may not */
  expect("run rope --shape R=8,C=8,HD=2 --set offset=16777208", 0, "exceed 2^13 = 8192", 1);
  /* within 2^13: no note */
  expect("run rope --shape R=8,C=256,HD=64 --set offset=8184", 0, NULL, 0);
  expect("run rope --shape R=8,C=256,HD=64 --set offset=-8192", 0, NULL, 0);
}

static void write_npy(const char *name, const float *v, size_t r, size_t c) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", g_tmp, name);
  size_t shape[2] = {r, c};
  xir_diag d;
  assert_int_equal(xir__npy_write_f32(path, v, shape, c ? 2 : 1, &d), XIR_OK);
}

static void test_rmsnorm_rows_of_3e38(void **state) {
  (void)state;
  float x[2 * 16], w[16];
  for (int i = 0; i < 32; i++) x[i] = i < 16 ? (i % 2 ? 3e38f : -3e38f) : 0.5f + (float)i / 64;
  for (int i = 0; i < 16; i++) w[i] = 1.0f;
  write_npy("x.npy", x, 2, 16);
  size_t shape1[1] = {16};
  char path[512];
  snprintf(path, sizeof path, "%s/w.npy", g_tmp);
  xir_diag d;
  assert_int_equal(xir__npy_write_f32(path, w, shape1, 1, &d), XIR_OK);
  expect("run rmsnorm --shape R=2,C=16 --inputs .", 1, "1 row(s) of x exceed the f32 range", 1);
  expect("run rmsnorm --shape R=2,C=16 --inputs . --interpret", 0, "2^63.5", 1);
  /* the ordinary row alone is fine and has no note */
  write_npy("x.npy", x + 16, 1, 16);
  expect("run rmsnorm --shape R=1,C=16 --inputs .", 0, NULL, 0);
}

static int setup(void **state) {
  (void)state;
  const char *bin = getenv("XIR_BIN");
  snprintf(g_bin, sizeof g_bin, "%s", bin ? bin : "./xir");
  snprintf(g_tmp, sizeof g_tmp, "/tmp/xir-ranges-XXXXXX");
  return mkdtemp(g_tmp) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rope_positions),
      cmocka_unit_test(test_rmsnorm_rows_of_3e38),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

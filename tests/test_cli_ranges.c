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

#include "cli_harness.h"

#include "util/npy.h"

static void expect(const char *args, int want_rc, const char *words, int want_note) {
  char out[16384];
  int rc = xir_cli_run(args, out, sizeof out);
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
  snprintf(path, sizeof path, "%s/%s", xir_cli_tmp, name);
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
  snprintf(path, sizeof path, "%s/w.npy", xir_cli_tmp);
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
  return xir_cli_setup("xir-ranges");
}

static int teardown(void **state) {
  (void)state;
  return xir_cli_teardown();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rope_positions),
      cmocka_unit_test(test_rmsnorm_rows_of_3e38),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

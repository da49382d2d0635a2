/* cli_harness.c — see cli_harness.h. */
#include "cli_harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

char xir_cli_bin[1024], xir_cli_tmp[256];

int xir_cli_setup(const char *prefix) {
  const char *bin = getenv("XIR_BIN");
  snprintf(xir_cli_bin, sizeof xir_cli_bin, "%s", bin ? bin : "./xir");
  snprintf(xir_cli_tmp, sizeof xir_cli_tmp, "/tmp/%s-XXXXXX", prefix);
  return mkdtemp(xir_cli_tmp) ? 0 : -1;
}

int xir_cli_teardown(void) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", xir_cli_tmp);
  return system(cmd) == 0 ? 0 : -1;
}

int xir_cli_run_env(const char *env, const char *args, char *out, size_t cap) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s' %s 2>&1", xir_cli_tmp, env ? env : "", xir_cli_bin,
           args);
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

int xir_cli_run(const char *args, char *out, size_t cap) { return xir_cli_run_env(NULL, args, out, cap); }

void xir_cli_expect_fail_env(const char *env, const char *args, const char *words) {
  char out[16384];
  int rc = xir_cli_run_env(env, args, out, sizeof out);
  if (rc == 0 || rc >= 128 || !strstr(out, words))
    fail_msg("xir %s: exit %d, wanted a failure mentioning '%s'; output: %s", args, rc, words, out);
}

void xir_cli_expect_fail(const char *args, const char *words) { xir_cli_expect_fail_env(NULL, args, words); }

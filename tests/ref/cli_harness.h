/* cli_harness.h — what the tests that drive the `xir` command share: the binary (XIR_BIN, else
 * ./xir), a fresh temporary folder per test program, and running a command line in it with its
 * output captured (drained to the end, so that a long output never ends in SIGPIPE). */
#ifndef XIR_TEST_CLI_HARNESS_H
#define XIR_TEST_CLI_HARNESS_H

#include <stddef.h>

extern char xir_cli_bin[1024]; /* the xir command */
extern char xir_cli_tmp[256];  /* the temporary folder commands run in */

/* Sets xir_cli_bin and creates /tmp/PREFIX-XXXXXX as xir_cli_tmp; 0 or -1 (cmocka setup). */
int xir_cli_setup(const char *prefix);
/* Removes xir_cli_tmp and everything in it; 0 or -1 (cmocka teardown). */
int xir_cli_teardown(void);
/* Runs `ENV xir ARGS` in xir_cli_tmp (env may be NULL); returns the exit status (128 + the signal
 * when killed, -1 when it could not start) and stdout+stderr in out. */
int xir_cli_run_env(const char *env, const char *args, char *out, size_t cap);
int xir_cli_run(const char *args, char *out, size_t cap);
/* Fails the test unless `ENV xir ARGS` exits with an error (not a crash) mentioning words. */
void xir_cli_expect_fail_env(const char *env, const char *args, const char *words);
void xir_cli_expect_fail(const char *args, const char *words);

#endif

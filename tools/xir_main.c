/* xir_main.c — the `xir` command: a table of subcommands and the shared helpers of cli.h. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check/check.h"
#include "cli.h"

typedef struct cli_cmd {
  const char *name;
  cli_cmd_fn fn;
  const char *summary;
} cli_cmd;

static const cli_cmd kCommands[] = {
    {"kernels", cmd_kernels, "list the built-in kernels with their dims and parameters"},
    {"check", cmd_check, "parse and verify an XIR file"},
    {"print", cmd_print, "print the canonical text of an XIR file or built-in kernel"},
    {"run", cmd_run, "bind dims, make or read inputs, evaluate, check, save .npy files"},
    {"compile", cmd_compile, "lower and JIT one candidate; write its IR or object, print the JIT time"},
    {"plan", cmd_plan, "rank the legal candidates and task grains by cost; explain the choice"},
    {"bench", cmd_bench, "run a benchmark suite with the measurement protocol; write records"},
    {"audit", cmd_audit, "recompute a benchmark's statistics from its raw records; reject tampering"},
    {"calibrate", cmd_calibrate, "measure this machine's service model (the calibrated policy)"},
    {"suite", cmd_suite, "run every built-in kernel at its report shape and check it"},
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: xir <command> [options]   (xir <command> --help for each)\n\n"
          "xir compiles tile-level kernel programs (XIR) for LLM operators and runs them.\n\n"
          "commands:\n");
  for (size_t i = 0; i < sizeof kCommands / sizeof kCommands[0]; i++)
    fprintf(f, "  %-9s %s\n", kCommands[i].name, kCommands[i].summary);
}

int cli_fail(const xir_diag *d) {
  char buf[2048];
  fprintf(stderr, "xir: %s\n", xir_diag_format(d, buf, sizeof buf));
  return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "xir %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see xir %s --help)\n", cmd);
  va_end(ap);
  return 2;
}

int cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
  return 0;
}

int cli_make_dir(const char *dir, int parents) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  if (parents)
    for (char *q = path + 1; *q; q++)
      if (*q == '/') {
        *q = 0;
        mkdir(path, 0777); /* an error shows in the final mkdir/stat */
        *q = '/';
      }
  if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

int cli_parse_u32(const char *s, int allow_max, uint32_t *out) {
  if (allow_max && strcmp(s, "max") == 0) {
    *out = UINT32_MAX;
    return 0;
  }
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (!isdigit((unsigned char)*s) || errno || *end || v > UINT32_MAX) return -1;
  *out = (uint32_t)v;
  return 0;
}

int cli_parse_u64(const char *s, uint64_t *out) {
  if (!s || !isdigit((unsigned char)*s)) return -1; /* no sign, no blank: "-1" must not wrap */
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return -1;
  *out = (uint64_t)v;
  return 0;
}

int cli_parse_input_offset(const char *s, int *out) {
  uint64_t u;
  if (s && !strcmp(s, "malloc")) *out = -1;
  else if (!cli_parse_u64(s, &u) && u < 64 && xir__case_offset_ok((double)u)) *out = (int)u;
  else return -1;
  return 0;
}

xir_status cli_load_program(const char *spec, xir_program **p, xir_diag *d) {
  if (xir_kernel_find(spec) >= 0) return xir_kernel_load(spec, p, d);
  if (!strchr(spec, '/') && !strchr(spec, '.')) {
    FILE *f = fopen(spec, "r");
    if (!f) return xir_kernel_load(spec, p, d); /* reports the unknown kernel and the list */
    fclose(f);
  }
  return xir_program_parse_file(spec, p, d);
}

xir_status cli_retype(xir_program **p, const char *spec, xir_diag *d) {
  if (!spec) return XIR_OK;
  xir_program *q;
  xir_status s = xir_program_retype(*p, spec, &q, d);
  if (s) return s;
  xir_program_free(*p);
  *p = q;
  return XIR_OK;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return argc < 2 ? 2 : 0;
  }
  for (size_t i = 0; i < sizeof kCommands / sizeof kCommands[0]; i++)
    if (strcmp(argv[1], kCommands[i].name) == 0) return kCommands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "xir: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}

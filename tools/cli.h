/* cli.h — what the `xir` subcommands share: loading a program by kernel name or file, printing
 * diagnostics, and small option helpers. Each subcommand lives in its own tools/cmd_*.c. */
#ifndef XIR_CLI_H
#define XIR_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "xir.h"

/* A subcommand: returns the process exit status (0 ok, 1 failure, 2 usage error). */
typedef int (*cli_cmd_fn)(int argc, char **argv);

int cmd_kernels(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_print(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_suite(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* `xir bench --suite regret` (tools/bench_regret.c): the planner's regret, measured. */
int bench_regret_main(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

/* Prints "xir: file:line:col: error: msg" to stderr; returns 1. */
int cli_fail(const xir_diag *d);
/* Prints "xir <cmd>: msg" to stderr; returns 2 (usage) . */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Measures this machine's service model (a compiler and a 2-worker runtime); prints the error
 * and returns 1 on failure. */
struct xir_calibration;
int cli_calibrate(struct xir_calibration *out, char *path, size_t cap);

/* Creates folder `dir` (and, with parents, the folders above it) unless it exists. Returns 0, or
 * -1 with errno set (ENOTDIR when `dir` exists and is not a folder). */
int cli_make_dir(const char *dir, int parents);

/* Loads a built-in kernel by name, or else parses the file at `spec`. */
xir_status cli_load_program(const char *spec, xir_program **p, xir_diag *d);
/* Replaces *p by its copy retyped by `spec` (xir_program_retype: "bf16", "x=bf16,w=f32");
 * nothing happens for a NULL spec. On failure *p is unchanged. */
xir_status cli_retype(xir_program **p, const char *spec, xir_diag *d);

/* Parses a non-negative 32-bit integer ("max" = UINT32_MAX when allow_max). 0 on success. */
int cli_parse_u32(const char *s, int allow_max, uint32_t *out);

/* Parses a decimal integer in [0, 2^64) (digits only: no sign, no blank). 0 on success. */
int cli_parse_u64(const char *s, uint64_t *out);

/* Parses --input-offset's value: `malloc` (-1: where malloc puts the inputs) or a byte offset
 * past a page boundary that xir__case_offset_ok takes. 0 on success. */
int cli_parse_input_offset(const char *s, int *out);

/* 1 when argv[i] is --help or -h anywhere in argv. */
int cli_wants_help(int argc, char **argv);

#endif

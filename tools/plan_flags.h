/* plan_flags.h — the planner flags shared by `xir plan` and `xir run`. */
#ifndef XIR_TOOLS_PLAN_FLAGS_H
#define XIR_TOOLS_PLAN_FLAGS_H

#include <errno.h>
#include <stdlib.h>

#include "xir_plan.h"

typedef struct cli_plan_flags {
  xir_plan_options opt;
  xir_cost_coefficients coef;
  const char *policy_name;
  int width_given;
} cli_plan_flags;

/* Completes the flags after parsing (nothing to do since the service model is the default).
 * Returns 0, or prints the error and returns 1. */
int cli_plan_flags_finish(cli_plan_flags *f);

#define CLI_PLAN_LONG_OPTIONS                                                          \
  {"search-grain", no_argument, 0, 1001}, {"local", required_argument, 0, 1002},       \
      {"policy", required_argument, 0, 1003}, {"budget", required_argument, 0, 1004},  \
      {"workers", required_argument, 0, 1005}, {"grain", required_argument, 0, 1006},  \
      {"width", required_argument, 0, 1007}

void cli_plan_flags_init(cli_plan_flags *f);
/* Handles one planner flag: 0 handled, -1 not a planner flag, else a usage-error exit code. */
int cli_plan_flag(cli_plan_flags *f, int c, const char *arg, const char *cmd);

#endif

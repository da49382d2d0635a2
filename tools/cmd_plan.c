/* cmd_plan.c — `xir plan`: the planner's choice and every candidate ranked by cost, with each
 * term; --explain adds why each rejected candidate is not legal. Also the planner flags that
 * `xir run` shares (cli_plan_*). */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <string.h>

#include "cli.h"
#include "lower/jit.h"
#include "plan_flags.h"

void cli_plan_flags_init(cli_plan_flags *f) {
  memset(f, 0, sizeof *f);
  xir_plan_options_default(&f->opt);
  f->opt.width = xir__jit_host_max_width();
  f->policy_name = f->opt.coefficients ? "calibrated" : "priors (no service model)";
}

int cli_plan_flag(cli_plan_flags *f, int c, const char *arg, const char *cmd) {
  uint32_t v;
  switch (c) {
    case 1001: f->opt.search_task_grain = 1; return 0;
    case 1002:
      if (cli_parse_u32(arg, 0, &v)) return cli_usage_error(cmd, "--local needs 0 or a power of two");
      f->opt.local_lanes = v;
      return 0;
    case 1003:
      if (strcmp(arg, "experimental") == 0) {
        xir_cost_coefficients_experimental(&f->coef);
        f->opt.coefficients = &f->coef;
        f->policy_name = "experimental";
      } else if (strcmp(arg, "calibrated") == 0 || strcmp(arg, "default") == 0) {
        f->opt.coefficients = xir_service_coefficients();
        f->policy_name = f->opt.coefficients ? "calibrated" : "priors (no service model)";
      } else if (strcmp(arg, "priors") == 0) {
        f->opt.coefficients = NULL;
        f->policy_name = "priors";
      } else {
        return cli_usage_error(cmd, "--policy is default (= calibrated), priors or experimental, not '%s'", arg);
      }
      return 0;
    case 1004: {
      char *end;
      errno = 0;
      unsigned long long b = strtoull(arg, &end, 10);
      if (errno || *end || !*arg || *arg == '-') return cli_usage_error(cmd, "--budget needs a number");
      f->opt.budget = (size_t)b;
      return 0;
    }
    case 1005:
      if (cli_parse_u32(arg, 0, &v) || v == 0)
        return cli_usage_error(cmd, "--workers needs a positive integer, not '%s'", arg);
      f->opt.workers = v;
      return 0;
    case 1006:
      if (cli_parse_u32(arg, 1, &v)) return cli_usage_error(cmd, "--grain needs a number or max");
      f->opt.blocks_per_task = v;
      return 0;
    case 1007:
      if (cli_parse_u32(arg, 0, &v)) return cli_usage_error(cmd, "--width needs 1, 2, 4, 8 or 16");
      f->opt.width = v;
      f->width_given = 1;
      return 0;
    default: return -1;
  }
}

int cli_plan_flags_finish(cli_plan_flags *f) {
  (void)f;
  return 0;
}

static void print_entry(const xir_program *p, size_t rank, const xir_plan_entry *e) {
  char name[160], g[24];
  xir_candidate_name(p, &e->cand, name, sizeof name);
  if (e->work.grain == UINT32_MAX) snprintf(g, sizeof g, "max");
  else snprintf(g, sizeof g, "%u", e->work.grain);
  printf("%4zu %-28s %4s %-12s %7llu %6llu %6llu %3u %7llu %6llu %5llu %8.1f %8.1f", rank, name,
         g, xir_impl_kind_name(e->work.kind), (unsigned long long)e->work.packets,
         (unsigned long long)e->work.blocks, (unsigned long long)e->work.tasks, e->work.active,
         (unsigned long long)e->work.critical_packets, (unsigned long long)e->work.critical_blocks,
         (unsigned long long)e->work.critical_tasks, e->work.arith_per_packet,
         e->work.memory_per_packet);
  for (int t = 0; t < XIR_TERM_COUNT; t++) printf(" %10.4g", e->cost.term[t]);
  printf(" %12.6g\n", e->cost.total);
}

int cmd_plan(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: xir plan KERNEL|FILE --shape D=N,... [options]\n\n"
           "Enumerates the legal mapping candidates (root-axis order x block width B x local\n"
           "width l) and task grains, scores each with the cost policy, and prints the choice and\n"
           "every candidate ranked by cost with each term of the objective.\n\n"
           "options:\n"
           "  --shape D=N,...      value of every dim (required)\n"
           "  --dtype SPEC         retype buffers (bf16, f16, x=bf16,w=f32; docs/xir.md)\n"
           "  --local N            fix the local width l (default 0: search l)\n"
           "  --search-grain       search task grains (the default: powers of two, 0 and max)\n"
           "  --grain G            explicit blocks per task (wins over the search; 0 = the\n"
           "                       runtime heuristic)\n"
           "  --workers N          workers the launch may use (default: the online CPUs)\n"
           "  --width W            SIMD width (default: the host's widest)\n"
           "  --policy NAME        default = calibrated (this machine's service model, measured\n"
           "                       once and kept in the cache directory; `xir calibrate`\n"
           "                       refreshes it), priors (uncalibrated weights, dispatch =\n"
           "                       activation = 0) or experimental (activation 1e6, dispatch 128)\n"
           "  --budget N           most candidates x grains to evaluate (default 4096)\n"
           "  --explain            also list the candidates that are not legal, and why\n"
           "  --json               machine-readable output\n");
    return 0;
  }
  static const struct option opts[] = {CLI_PLAN_LONG_OPTIONS,
                                       {"shape", required_argument, 0, 's'},
                                       {"explain", no_argument, 0, 'x'},
                                       {"json", no_argument, 0, 'j'},
                                       {"dtype", required_argument, 0, 'T'},
                                       {0, 0, 0, 0}};
  cli_plan_flags f;
  cli_plan_flags_init(&f);
  const char *shape_spec = NULL, *dtype = NULL;
  int explain = 0, json = 0, c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 's') shape_spec = optarg;
    else if (c == 'x') explain = 1;
    else if (c == 'j') json = 1;
    else if (c == 'T') dtype = optarg;
    else {
      int r = cli_plan_flag(&f, c, optarg, "plan");
      if (r < 0) return cli_usage_error("plan", "unknown or incomplete option '%s'", argv[optind - 1]);
      if (r) return r;
    }
  }
  if (optind != argc - 1) return cli_usage_error("plan", "needs exactly one KERNEL or FILE");
  if (!shape_spec) return cli_usage_error("plan", "needs --shape");
  if (cli_plan_flags_finish(&f)) return 1;
  xir_diag d;
  xir_program *p;
  if (cli_load_program(argv[optind], &p, &d)) return cli_fail(&d);
  if (cli_retype(&p, dtype, &d)) {
    xir_program_free(p);
    return cli_fail(&d);
  }
  xir_shape shape;
  xir_plan *pl = NULL;
  if (xir_shape_parse(p, shape_spec, &shape, &d) || xir_plan_make(p, &shape, &f.opt, &pl, &d)) {
    xir_program_free(p);
    return cli_fail(&d);
  }
  char name[160];
  xir_candidate_name(p, &pl->entries[0].cand, name, sizeof name);
  if (json) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "kernel", xir_program_name(p));
    cJSON_AddStringToObject(root, "choice", name);
    cJSON_AddNumberToObject(root, "grain", (double)pl->entries[0].work.grain);
    cJSON *co = cJSON_AddObjectToObject(root, "coefficients");
    for (int t = 0; t < XIR_TERM_COUNT; t++)
      cJSON_AddNumberToObject(co, xir_cost_term_name((xir_cost_term)t), pl->coefficients.c[t]);
    cJSON *arr = cJSON_AddArrayToObject(root, "candidates");
    for (size_t i = 0; i < pl->count; i++) {
      const xir_plan_entry *e = &pl->entries[i];
      cJSON *o = cJSON_CreateObject();
      xir_candidate_name(p, &e->cand, name, sizeof name);
      cJSON_AddStringToObject(o, "candidate", name);
      cJSON_AddNumberToObject(o, "grain", (double)e->work.grain);
      cJSON_AddStringToObject(o, "implementation", xir_impl_kind_name(e->work.kind));
      cJSON_AddBoolToObject(o, "ragged_packets", e->work.ragged_packets);
      cJSON_AddBoolToObject(o, "ragged_inner", e->work.ragged_inner);
      cJSON_AddNumberToObject(o, "Q", (double)e->work.packets);
      cJSON_AddNumberToObject(o, "L", (double)e->work.blocks);
      cJSON_AddNumberToObject(o, "C", (double)e->work.tasks);
      cJSON_AddNumberToObject(o, "h", e->work.active);
      cJSON_AddNumberToObject(o, "critical_packets", (double)e->work.critical_packets);
      cJSON_AddNumberToObject(o, "critical_blocks", (double)e->work.critical_blocks);
      cJSON_AddNumberToObject(o, "critical_tasks", (double)e->work.critical_tasks);
      cJSON_AddNumberToObject(o, "critical_arith_packets", e->work.critical_arith_packets);
      cJSON_AddNumberToObject(o, "critical_memory_packets", e->work.critical_memory_packets);
      if (e->work.mask_full_iterations) {
        cJSON_AddNumberToObject(o, "mask_live_iterations", (double)e->work.mask_live_iterations);
        cJSON_AddNumberToObject(o, "mask_full_iterations", (double)e->work.mask_full_iterations);
        cJSON_AddNumberToObject(o, "mask_critical_live_iterations",
                                (double)e->work.mask_critical_live_iterations);
      }
      cJSON_AddNumberToObject(o, "arith_per_packet", e->work.arith_per_packet);
      cJSON_AddNumberToObject(o, "memory_per_packet", e->work.memory_per_packet);
      for (int t = 0; t < XIR_TERM_COUNT; t++)
        cJSON_AddNumberToObject(o, xir_cost_term_name((xir_cost_term)t), e->cost.term[t]);
      cJSON_AddNumberToObject(o, "total", e->cost.total);
      cJSON_AddItemToArray(arr, o);
    }
    if (explain) {
      cJSON *rj = cJSON_AddArrayToObject(root, "rejected");
      for (size_t i = 0; i < pl->nrejected; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "candidate", pl->rejected[i].name);
        cJSON_AddStringToObject(o, "reason", pl->rejected[i].reason);
        cJSON_AddItemToArray(rj, o);
      }
    }
    char *s = cJSON_Print(root);
    puts(s);
    cJSON_free(s);
    cJSON_Delete(root);
  } else {
    const xir_plan_entry *e = &pl->entries[0];
    char g[40];
    if (e->work.grain == UINT32_MAX) snprintf(g, sizeof g, "max (one task)");
    else if (e->work.grain == 0) snprintf(g, sizeof g, "0 (runtime heuristic)");
    else snprintf(g, sizeof g, "%u", e->work.grain);
    printf("plan for %s %s (W=%u, %u worker%s, policy %s): %s, G=%s, %s, total cost %.6g\n",
           xir_program_name(p), shape_spec, f.opt.width, f.opt.workers,
           f.opt.workers == 1 ? "" : "s", f.policy_name ? f.policy_name : "default", name, g,
           xir_impl_kind_name(e->work.kind), e->cost.total);
    printf("\n%4s %-28s %4s %-12s %7s %6s %6s %3s %7s %6s %5s %8s %8s", "rank", "candidate", "G",
           "impl", "Q", "L", "C", "h", "critQ", "critL", "critC", "arith/p", "bytes/p");
    for (int t = 0; t < XIR_TERM_COUNT; t++) printf(" %10s", xir_cost_term_name((xir_cost_term)t));
    printf(" %12s\n", "total");
    for (size_t i = 0; i < pl->count; i++) print_entry(p, i + 1, &pl->entries[i]);
    if (explain) {
      printf("\nnot evaluated (%zu):\n", pl->nrejected);
      for (size_t i = 0; i < pl->nrejected; i++)
        printf("  %-36s %s\n", pl->rejected[i].name, pl->rejected[i].reason);
    }
  }
  xir_plan_free(pl);
  xir_program_free(p);
  return 0;
}

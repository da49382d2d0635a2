/* cmd_calibrate.c — `xir calibrate`: measure the service model of this machine and print the
 * coefficients the calibrated policy uses. */
#include <cjson/cJSON.h>
#include <string.h>

#include "cli.h"
#include "xir_plan.h"

int cli_calibrate(xir_calibration *out) {
  xir_diag d;
  xir_compiler *cc = NULL;
  xir_runtime *rt = NULL;
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  ro.workers = 2;
  int rc = 0;
  if (xir_compiler_create(NULL, &cc, &d) || xir_runtime_create(&ro, &rt, &d) ||
      xir_calibrate(cc, rt, out, &d))
    rc = cli_fail(&d);
  xir_runtime_destroy(rt);
  xir_compiler_destroy(cc);
  return rc;
}

int cmd_calibrate(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: xir calibrate [--json]\n\n"
           "Measures, on this machine, what the calibrated cost policy needs: the cost of waking a\n"
           "worker, of dispatching a task, and of one unit of the arithmetic and memory priors\n"
           "(two probe kernels on the calling thread). Run it on an otherwise idle machine.\n"
           "`xir plan/run --policy calibrated` measure the same before planning.\n");
    return 0;
  }
  int json = argc == 2 && strcmp(argv[1], "--json") == 0;
  if (argc > 1 && !json) return cli_usage_error("calibrate", "unknown option '%s'", argv[1]);
  xir_calibration c;
  int rc = cli_calibrate(&c);
  if (rc) {
    /* cli_calibrate printed the error */
  } else if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "ns_per_arith", c.ns_per_arith);
    cJSON_AddNumberToObject(o, "ns_per_byte", c.ns_per_byte);
    cJSON_AddNumberToObject(o, "ns_per_block", c.ns_per_block);
    cJSON_AddNumberToObject(o, "ns_per_task", c.ns_per_task);
    cJSON_AddNumberToObject(o, "ns_activation", c.ns_activation);
    char *s = cJSON_Print(o);
    puts(s);
    cJSON_free(s);
    cJSON_Delete(o);
  } else {
    printf("activation (waking one spinning worker)  %10.1f ns\n", c.ns_activation);
    printf("dispatch per task (pool path)            %10.2f ns\n", c.ns_per_task);
    printf("arithmetic prior unit (one core)         %10.4f ns\n", c.ns_per_arith);
    printf("memory prior byte (one core)             %10.5f ns\n", c.ns_per_byte);
    printf("block (8 arithmetic units)               %10.3f ns\n", c.ns_per_block);
    printf("probes: gelu_residual 64x256 %.2f us, rmsnorm 1024x4096 %.1f us (caller path)\n",
           c.probe_ns[0] / 1e3, c.probe_ns[1] / 1e3);
  }
  return rc;
}

/* cmd_calibrate.c — `xir calibrate`: measure the service model of this machine and print the
 * coefficients the calibrated policy uses. */
#include <cjson/cJSON.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "xir_plan.h"

/* Measures the service model for the online CPUs (at least 2 workers) and refreshes its cache
 * file; *path (may be NULL) receives the file's path ("" when there is none). */
int cli_calibrate(xir_calibration *out, char *path, size_t cap) {
  xir_diag d;
  if (xir_service_model(0, 1, out, NULL, &d)) return cli_fail(&d);
  if (path && xir_service_model_path(0, path, cap, NULL)) path[0] = 0;
  return 0;
}

int cmd_calibrate(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: xir calibrate [--json]\n\n"
           "Measures, on this machine, what the calibrated cost policy needs: the cost of waking a\n"
           "worker, of dispatching a task, and of one unit of the arithmetic and memory priors\n"
           "(probe kernels on the calling thread), and the launch size from which streaming stores\n"
           "pay (a row copy on 2 workers). Run it on an otherwise idle machine.\n"
           "The figures are written to the cache directory ($XIR_CACHE_DIR, else\n"
           "$XDG_CACHE_HOME/xir, else ~/.cache/xir), keyed by CPU, features, worker count and\n"
           "xir version; every planner default reads them from there (and measures them the\n"
           "first time). XIR_NO_CALIBRATION_FILE=1 neither reads nor writes the file.\n");
    return 0;
  }
  int json = argc == 2 && strcmp(argv[1], "--json") == 0;
  if (argc > 1 && !json) return cli_usage_error("calibrate", "unknown option '%s'", argv[1]);
  xir_calibration c;
  char path[1200];
  int rc = cli_calibrate(&c, path, sizeof path);
  if (rc) {
    /* cli_calibrate printed the error */
  } else if (json) {
    cJSON *o = bench_calibration_json(&c);
    char *s = cJSON_Print(o);
    puts(s);
    cJSON_free(s);
    cJSON_Delete(o);
  } else {
    printf("activation (waking one spinning worker)  %10.1f ns\n", c.ns_activation);
    printf("dispatch per task (pool path)            %10.2f ns\n", c.ns_per_task);
    printf("  more per task, data in L3 (16 MiB copy) %10.2f ns\n", c.ns_per_task_far);
    printf("arithmetic prior unit (one core)         %10.4f ns\n", c.ns_per_arith);
    printf("memory prior byte (one core)             %10.5f ns\n", c.ns_per_byte);
    printf("block (8 arithmetic units)               %10.3f ns\n", c.ns_per_block);
    printf("math unit (div, sqrt, transcendentals)    %10.4f ns\n", c.ns_per_math);
    printf("  a root program's div, sqrt, rsqrt       %10.4f ns\n", c.ns_per_hw_math);
    /* < 0: the prior's latency floor charges the step more than it costs here */
    printf("reduction step, sum (beyond the prior)   %10.4f ns\n", c.ns_per_step[0]);
    printf("reduction step, max/min (beyond prior)   %10.4f ns\n", c.ns_per_step[1]);
    if (c.stream_bytes > 0)
      printf("streaming stores from footprint       %10.1f MiB\n", c.stream_bytes / 1048576.0);
    else
      printf("streaming stores from footprint          (never faster in the probes, up to 256 MiB: half the last-level cache)\n");
    for (int l = 0; l < XIR_MEM_LEVELS; l++)
      printf("memory, footprint %8.0f KiB              %10.5f ns per byte\n", c.mem_bytes[l] / 1024,
             c.mem_ns[l]);
    if (path[0]) printf("stored in %s\n", path);
    printf("probes: gelu_residual 64x256 %.2f us, row copy 512x4096 %.1f us (caller path)\n",
           c.probe_ns[0] / 1e3, c.probe_ns[1] / 1e3);
  }
  return rc;
}

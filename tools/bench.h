/* bench.h — the benchmark's cases, suites and external peers (tools/bench_*.c, cmd_bench.c,
 * cmd_audit.c). The protocol and its statistics are in src/bench/records.h. */
#ifndef XIR_TOOLS_BENCH_H
#define XIR_TOOLS_BENCH_H

#include <cjson/cJSON.h>

#include "check/check.h"
#include "xir_compile.h"
#include "xir_plan.h"
#include "xir_runtime.h"
#include "session/choice.h"

/* What a case runs: xir, an in-process C peer, an external peer, or the streaming probe. */
typedef enum bcase_kind { BC_XIR = 1, BC_CPEER, BC_EXT, BC_PROBE } bcase_kind;

typedef struct ext_peer ext_peer;

/* The declaration of one case: enough to rebuild it (the audit does). */
typedef struct bcase_decl {
  char kernel[32];
  char shape[160];   /* "R=64,C=256" */
  char config[96];   /* default | joint_legacy | joint_tasks | fixed:l=8,B=32,G=3 | peer:c_fast_omp |
                        ext:torch_eager | probe:stream */
} bcase_decl;

typedef struct bcase {
  bcase_decl decl;
  bcase_kind kind;
  xir_program *p;
  xir_shape shape;
  xir_case cs;
  int cs_ok;
  /* xir */
  const xir_kernel *k;
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  uint32_t grain;    /* the plan's (or the fixed configuration's) grain */
  uint32_t workers;  /* workers the launches may use */
  xir__choice choice; /* `default`: pool or caller at each launch, as xir_session_launch */
  xir__store_choice store; /* `default`: its stores at each launch, as xir_session_launch */
  char cand[160];
  char impl[24];
  xir_batch *batch;
  /* C peer (peer_args: xir_peer_args) or streaming probe (peer_args: xir_peer_stream_args) */
  void *peer_fn;
  void *peer_args;
  /* external peer */
  ext_peer *ext;
  char tmpdir[256];
  /* provenance */
  char input_sha[65], ir_sha[65], obj_sha[65], out_sha[65];
  int unsupported;
  char why[256];
  int probe_nt; /* the probe writes with non-temporal stores (the faster of the two here) */
} bcase;

/* External peer names a run may have (the three of --peers-dir, the Python side's two, --peer). */
#define BENCH_MAX_PEERS 8

typedef struct bench_env {
  xir_runtime *rt;
  xir_compiler *cc;
  int calibrated;              /* the calibration below was measured (once, on first use) */
  xir_calibration calibration;
  uint32_t workers;
  uint64_t seed;
  int input_offset; /* every case's inputs at this many bytes past a page boundary
                     * (xir__case_place_inputs); -1: where malloc puts them */
  const char *peers_dir;
  ext_peer *peers[BENCH_MAX_PEERS]; /* one process may answer for several names (the Python
                                      * side: xir_python and torch_eager_py): the same pointer */
  char peer_names[BENCH_MAX_PEERS][32];
  int peer_shared[BENCH_MAX_PEERS]; /* its process answers for several names: prepare says which
                                     * ("peer") */
  int npeers;
} bench_env;

/* The planner options of a named xir configuration — default (xir_plan_options_default with
 * `service` as its coefficients: the run records them, so the audit can re-plan), joint_legacy,
 * joint_tasks, joint_tasks_1w (sets *workers to 1), joint_calibrated (needs `cal`) — for width W
 * and *workers; coefficients, when the configuration has its own, go to *coef, which must outlive
 * *o. The bench and the audit both plan through this one function. */
xir_status bench_config_options(const char *cfg, uint32_t W, uint32_t *workers,
                                const xir_calibration *cal, const xir_cost_coefficients *service,
                                xir_plan_options *o, xir_cost_coefficients *coef, xir_diag *d);

/* The service model (all its figures) and cost coefficients (every field) as JSON objects, and
 * back; the readers return 1 with the reason when a field is missing or not a finite number
 * >= 0 (bench_json.c). */
cJSON *bench_calibration_json(const xir_calibration *c);
int bench_calibration_from_json(const cJSON *o, xir_calibration *c, char *why, size_t cap);
cJSON *bench_coefficients_json(const xir_cost_coefficients *c);
int bench_coefficients_from_json(const cJSON *o, xir_cost_coefficients *c, char *why, size_t cap);

/* A suite: its cases, its comparisons (baseline, variant indices) and its declared orders. */
typedef struct bench_suite {
  char name[32];
  bcase_decl *cases;
  int ncases;
  int (*comparisons)[2];
  int ncomparisons;
  int **orders;      /* norders arrays of ncases indices */
  int norders;
  int default_rounds;
} bench_suite;

typedef struct suite_filter {
  const char *kernels;  /* comma list or NULL */
  const char *shapes;   /* ';' list or NULL */
  const char *configs;  /* comma list or NULL */
  const char *extra;    /* ';' list of row shapes "R=..,C=.." the peers and dtype suites add to
                         * their own (--extra-shapes), or NULL */
} suite_filter;

/* Builds a named suite (pilot, validation, fixed-grain, peers, smoke). Deterministic: the audit
 * rebuilds it from the same name and filter and compares. */
xir_status bench_suite_build(const char *name, const suite_filter *f, bench_suite *s, xir_diag *d);
void bench_suite_free(bench_suite *s);
/* Drops the cases with drop[i] != 0 (what could not be measured), the comparisons that involve
 * them, and rebuilds the visit orders for the cases left. */
xir_status bench_suite_drop(bench_suite *s, const char *drop);
/* Sets the names of the external peers the peers suite compares with (before building it).
 * python_side 1 (every run, and records with the python_side declaration): xir_python and
 * torch_eager_py are the Python side (compared with each other and with default only); 0 (records
 * from before it): they are external peers like the others (vs default, vs probe:stream). */
void bench_set_ext_peers(const char **names, int n, int python_side);

/* Case lifecycle. prepare: inputs, oracle, plan/compile or peer setup (outside timing).
 * run: the timed region (n launches + wait), returning wall ns. check: the whole output vs the
 * oracle after timing. */
/* The program of a case's kernel: a built-in kernel name, or NAME@DTYPE — the kernel retyped
 * (xir_program_retype: "rmsnorm@bf16" is rmsnorm with every float buffer bf16). The bench and
 * the audit both load cases through this. */
xir_status bench_load_kernel(const char *decl_kernel, xir_program **p, xir_diag *d);
xir_status bcase_prepare(bench_env *e, bcase *c, xir_diag *d);
xir_status bcase_run(bench_env *e, bcase *c, uint64_t n, double *ns, xir_diag *d);
xir_status bcase_check(bench_env *e, bcase *c, xir_compare *out, int *sentinels_ok, xir_diag *d);
void bcase_release(bcase *c);

/* External peers (bench_ext.c). */
xir_status ext_peer_start(const char *name, const char *command, ext_peer **out, xir_diag *d);
xir_status ext_peer_request(ext_peer *p, const char *json_line, cJSON **answer, xir_diag *d);
void ext_peer_stop(ext_peer *p);
/* "VERSION: DETAIL" of the peer's hello answer (what it runs, e.g. oneDNN's primitives). */
const char *ext_peer_hello(const ext_peer *p);
/* Stops (SIGSTOP) or continues (SIGCONT) the peer's process. */
void ext_peer_pause(ext_peer *p, int paused);

#endif

/* xir_plan.h — execution work, the replaceable cost policy and the planner.
 *
 *   bridge candidates (perm × B × ℓ) × task grains G
 *        │  execution work: exact counts (Q, L, C, h, critical packets/blocks/tasks) + priors
 *        ▼
 *   cost policy ── coefficients hook ─► evaluate hook (or the analytic default, term by term)
 *        │
 *        ▼
 *   plan: every evaluated candidate with its terms, ranked; the chosen one; the rejected ones
 *
 * Legality is the bridge's: a policy only scores legal candidates. A policy is borrowed for the
 * duration of one synchronous xir_plan_make call. */
#ifndef XIR_PLAN_H
#define XIR_PLAN_H

#include "xir.h"
#include "xir_bridge.h"
#include "xir_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The compiler (xir_compile.h); xir_calibrate borrows one. */
typedef struct xir_compiler xir_compiler;

/* The cost terms of the analytic default policy, in order. */
typedef enum xir_cost_term {
  XIR_TERM_ARITH = 0,  /* arithmetic prior on the balanced share: arith/packet · Q / h */
  XIR_TERM_MEMORY,     /* memory prior on the balanced share: bytes/packet · Q / h */
  XIR_TERM_BLOCK,      /* per-block overhead on the balanced share: L / h */
  XIR_TERM_IMBALANCE,  /* static imbalance: (critical packets − Q/h) · (arith + memory)/packet */
  XIR_TERM_DISPATCH,   /* per-task dispatch on the critical worker: ceil(C / h) */
  XIR_TERM_ACTIVATION, /* per-worker activation: h − 1 woken workers, less what the caller's
                       * critical share overlaps: max(0, c·(h − 1) − 2·imbalance) for h ≥ 2 */
  XIR_TERM_COUNT
} xir_cost_term;

enum { XIR_MEM_LEVELS = 3 };
/* The kinds of dependent accumulation chains a reduction loop has: 0 = sum (one add per step),
 * 1 = max/min (llvm.maximum/minimum, NaN-propagating: a several-op sequence per step). */
enum { XIR_CHAIN_KINDS = 2 };

/* One coefficient per term. Every coefficient must be finite and ≥ 0.
 * Optionally, a memory hierarchy: when mem_bytes[0] > 0, a byte costs mem_ns[i] at a per-core
 * footprint (the launch's distinct bytes / active workers) of mem_bytes[i] — interpolated
 * log-linearly between the levels, flat outside them — times c[MEMORY] (1 for a calibrated
 * model). mem_bytes must then increase strictly. All zero (the priors) = the flat rate c[MEMORY]. */
typedef struct xir_cost_coefficients {
  double c[XIR_TERM_COUNT];
  double mem_bytes[XIR_MEM_LEVELS];
  double mem_ns[XIR_MEM_LEVELS];
  /* Optionally (> 0), the cost of one unit of the math part of the arithmetic prior (division,
   * square roots, transcendentals: math_per_packet), which then no longer costs c[ARITH]: simple
   * vector ops and math-function internals run at different rates. 0 = one rate for all. */
  double ns_per_math;
  /* Optionally (> 0), the cost of one unit of the rank-0 hardware math (hw_math_per_packet: a
   * root program's div, sqrt, rsqrt — the divider's instructions, not a polynomial), which then
   * no longer costs ns_per_math. 0 = ns_per_math for all math. */
  double ns_per_hw_math;
  /* Optionally (> 0), the cost of one dependent step of a reduction's accumulation chain, by
   * kind (steps_per_packet), beyond what the arithmetic prior (its latency floor included)
   * charges for it. 0 = the prior alone. */
  double ns_per_step[XIR_CHAIN_KINDS];
  /* Optionally (> 0), what a task costs beyond c[DISPATCH] when the launch's data lies past the
   * L2 level of the memory hierarchy (a task that starts new memory streams: the prefetchers
   * ramp up again at every task boundary), at a per-core footprint of mem_bytes[1] and more;
   * interpolated log-linearly from 0 at mem_bytes[0]. 0 = c[DISPATCH] at every footprint. */
  double ns_per_task_far;
} xir_cost_coefficients;

/* Production defaults: arith 1, memory 0.25, block 8, imbalance 1, dispatch 0, activation 0. */
void xir_cost_coefficients_default(xir_cost_coefficients *c);
/* The report's experimental prior: the defaults with activation 1,000,000 and dispatch 128
 * (uncalibrated relative weights, not nanoseconds). */
void xir_cost_coefficients_experimental(xir_cost_coefficients *c);
/* A service model measured on this machine (src/cost/calibrate.c): the analytic policy's
 * coefficients in nanoseconds, so that an objective estimates the launch's wall time. */
/* The most arithmetic units a reduction step's calibrated cost (ns_per_step) may take back from
 * the prior: the work charges every dependent step at least its latency floor of 8 units
 * (docs/planner.md), so a step never costs less than 2. Coefficients with ns_per_step below
 * −XIR_STEP_CREDIT_OPS · c[XIR_TERM_ARITH] are refused. */
#define XIR_STEP_CREDIT_OPS 6

typedef struct xir_calibration {
  double ns_per_arith;  /* per unit of the arithmetic prior, one core */
  double ns_per_byte;   /* per byte of the memory prior, one core */
  double ns_per_block;  /* per block (8 arithmetic units; not measured separately) */
  double ns_per_task;   /* per task on the critical worker, pool path */
  double ns_activation; /* waking one more worker (spin round trip minus the caller path) */
  double probe_ns[2];   /* the two probes' measured times (gelu_residual 64x256, a 512x4096 row copy) */
  double ns_per_math;   /* per unit of the math part of the prior (gelu probe), one core */
  double ns_per_hw_math; /* per unit of the rank-0 div/sqrt/rsqrt (a probe of 1/sqrt per element,
                            one core) */
  double mem_bytes[XIR_MEM_LEVELS]; /* the footprints of the copy probes (in L2, in L3, beyond) */
  double mem_ns[XIR_MEM_LEVELS];    /* their measured ns per byte moved, one core */
  double ns_per_step[XIR_CHAIN_KINDS]; /* per dependent reduction step (sum, max/min) that the
                                          prior does not explain (probes with ℓ = W and 8W); < 0
                                          where the prior's latency floor overcharges a step, down
                                          to −XIR_STEP_CREDIT_OPS · ns_per_arith */
  double ns_per_task_far; /* per task beyond ns_per_task where the data lies in L3: the copy probe
                             at 16 MiB with one row a task against two tasks (2 workers) */
  double stream_bytes; /* the launch footprint above which outputs are written with streaming
                          (non-temporal) stores: where a 2-worker row copy ran faster with them
                          (probes of 4 to 64 MiB); 0 when none did (the prior: half the
                          last-level cache). The planner's default coefficients apply it to
                          the process's launches whose outputs are all f32 (the probe's type;
                          bf16/f16 outputs keep the prior): xir_service_coefficients. */
} xir_calibration;

/* Measures the figures above with the given compiler and runtime (≥ 2 workers); takes about a
 * second. The machine should be otherwise idle. */
xir_status xir_calibrate(xir_compiler *cc, xir_runtime *rt, xir_calibration *out, xir_diag *d);
/* Coefficients from a calibration (imbalance 1: its term is already in ns). */
void xir_cost_coefficients_from_calibration(const xir_calibration *cal, xir_cost_coefficients *c);

/* ns (or prior units) per byte moved at a per-core footprint, from c[MEMORY] and the optional
 * memory hierarchy of c. */
double xir_cost_byte_rate(const xir_cost_coefficients *c, double footprint_per_core);

/* "arith", "memory", "block", "imbalance", "dispatch", "activation". */
const char *xir_cost_term_name(xir_cost_term t);

/* The exact description of one candidate × grain. */
typedef struct xir_execution_work {
  double arith_per_packet;   /* weighted arithmetic prior per packet (weights: docs/planner.md) */
  double math_per_packet;    /* the part of it from ops weighing more than 1 (div, sqrt, rsqrt,
                                transcendentals) */
  double hw_math_per_packet; /* the part of math_per_packet from a root program's rank-0 div,
                                sqrt and rsqrt (ns_per_hw_math) */
  double memory_per_packet;  /* bytes moved per packet (gathers counted per lane) */
  uint64_t packets;          /* Q */
  uint64_t blocks;           /* L */
  uint64_t tasks;            /* C */
  uint32_t grain;            /* G as requested (0 = heuristic, UINT32_MAX = one task) */
  uint64_t grain_used;       /* G' after the runtime's resolution */
  uint32_t workers;          /* H requested */
  uint32_t active;           /* h = min(C, H) */
  uint64_t critical_packets; /* longest home assignment, SPEC.md's formula */
  uint64_t critical_blocks;
  uint64_t critical_tasks;   /* ceil(C / h) */
  xir_impl_kind kind;        /* from the bridge */
  int full_packet_path, ragged_packets, ragged_inner;
  double footprint_bytes;    /* distinct bytes the launch touches: every buffer once */
  double steps_per_packet[XIR_CHAIN_KINDS]; /* dependent accumulation steps of the rank-0
                                               reductions, by kind, per packet */
  /* Masked-work skipping (docs/lowering.md): the iterations of the loops over the mask axis that
   * the units run (chunks for ℓ > 1, elements for ℓ = 1), summed over every unit (live), as they
   * would be without skipping (full), and the live sum of the home worker that holds the most;
   * all 0 when the candidate skips nothing. */
  uint64_t mask_live_iterations, mask_full_iterations, mask_critical_live_iterations;
  /* The arithmetic and the bytes of the longest home assignment (round-robin tasks, summed block
   * by block), in packets of the average arith_per_packet and memory_per_packet: equal to
   * critical_packets when every packet does the same work. The imbalance term uses these. */
  double critical_arith_packets, critical_memory_packets;
} xir_execution_work;

/* ns (or prior units) of arithmetic per packet of w, from c[ARITH], the optional ns_per_math and
 * the optional ns_per_step (docs/planner.md). */
double xir_cost_arith_per_packet(const xir_cost_coefficients *c, const xir_execution_work *w);

/* The terms and the total of one evaluation. */
typedef struct xir_cost_terms {
  double term[XIR_TERM_COUNT];
  double total;
} xir_cost_terms;

/* A cost policy. Any hook may be NULL (= the analytic default). Hooks return XIR_OK or an error
 * that aborts planning. `evaluate` returns the complete objective (terms optional, total
 * required); the solver never divides it by the worker count again. `term[t]` overrides one term
 * of the analytic default. */
typedef struct xir_cost_policy {
  void *ud;
  xir_status (*coefficients)(void *ud, xir_cost_coefficients *c);
  xir_status (*evaluate)(void *ud, const xir_execution_work *w, const xir_cost_coefficients *c,
                         xir_cost_terms *out);
  double (*term[XIR_TERM_COUNT])(void *ud, const xir_execution_work *w,
                                 const xir_cost_coefficients *c);
} xir_cost_policy;

/* The closed form of SPEC.md: N items in chunks of R, C chunks, round-robin over h workers.
 * Returns the items of the longest home assignment. */
uint64_t xir_critical_count(uint64_t N, uint64_t R, uint64_t C, uint32_t h);

/* Fills the execution work of candidate c with grain G on H workers. */
xir_status xir_execution_work_make(const xir_program *p, const xir_shape *s,
                                   const xir_candidate *c, uint32_t grain, uint32_t workers,
                                   xir_execution_work *w, xir_diag *d);

/* Evaluates one work with a policy (NULL = analytic default) and coefficients; checks that every
 * term and the total are finite and ≥ 0 (XIR_ERR_COST naming the term otherwise). */
xir_status xir_cost_evaluate(const xir_cost_policy *pol, const xir_execution_work *w,
                             const xir_cost_coefficients *c, xir_cost_terms *out, xir_diag *d);

enum { XIR_PLAN_NO_GRAIN = -1 };

typedef struct xir_plan_options {
  int64_t blocks_per_task;   /* explicit G (wins over search); XIR_PLAN_NO_GRAIN = not given */
  int search_task_grain;     /* search G ∈ {0, 1, 2, 4, …, ≤ L, UINT32_MAX} */
  uint32_t local_lanes;      /* 0 = search ℓ; else ℓ fixed */
  uint32_t workers;          /* H ≥ 1 */
  uint32_t width;            /* W; 0 = the host's widest (what xir_compiler_create gives) */
  size_t budget;             /* max candidates × grains evaluated (default 4096) */
  const xir_cost_policy *policy;            /* borrowed for the call; NULL = analytic default */
  const xir_cost_coefficients *coefficients; /* NULL = the uncalibrated production priors */
} xir_plan_options;

/* The defaults a user gets: ℓ and G searched (local_lanes 0, search_task_grain 1), width 0 (the
 * host's), workers = the online CPUs, and the coefficients of this machine's calibrated service
 * model (xir_service_coefficients: measured once per machine, kept in the cache directory). If
 * the model cannot be had, coefficients is NULL (the priors). The first call in a process may
 * take about a second when no valid calibration file exists. Thread-safe. */
void xir_plan_options_default(xir_plan_options *o);
/* The report's base options (its "legacy" defaults): ℓ = 1, G = 0 (the runtime heuristic), no
 * grain search, 1 worker, W = 16, budget 4096, the priors. The benchmark's named configurations
 * start from these. */
void xir_plan_options_base(xir_plan_options *o);

/* ---- the service model (src/tune/service.c) ---- */

/* This machine's calibrated service model for a runtime of `workers` (2 ≤ workers ≤ max)
 * workers; 0 = the count the planner defaults use (the online CPUs, at least 2). Read from the cache file keyed by the xir and LLVM versions, the CPU name and
 * features, and the worker count, when that file is intact; otherwise (or with refresh = 1)
 * measured with xir_calibrate (about a second; the machine should be idle) and written back.
 * A corrupt or foreign file is never trusted: it is measured again and replaced. With
 * XIR_NO_CALIBRATION_FILE=1 in the environment the file is neither read nor written. Writing
 * the file also removes the directory's service files not written for 30 days (other builds').
 * *from_file (may be NULL) says whether the figures came from the file. */
xir_status xir_service_model(uint32_t workers, int refresh, xir_calibration *out, int *from_file,
                             xir_diag *d);
/* The path of that cache file. */
xir_status xir_service_model_path(uint32_t workers, char *buf, size_t cap, xir_diag *d);
/* The coefficients of the service model for the online CPUs (at least 2 workers), obtained once
 * per process (xir_service_model) and kept for its lifetime; NULL when it could not be had. */
const xir_cost_coefficients *xir_service_coefficients(void);

typedef struct xir_plan_entry {
  xir_candidate cand;
  xir_execution_work work;
  xir_cost_terms cost;
} xir_plan_entry;

typedef struct xir_plan_rejection {
  char name[96];
  char reason[256];
} xir_plan_rejection;

typedef struct xir_plan {
  xir_plan_entry *entries;   /* ranked by total cost, ties broken by enumeration order */
  size_t count;              /* entries[0] is the choice */
  xir_plan_rejection *rejected;
  size_t nrejected;
  xir_cost_coefficients coefficients; /* after the coefficients hook */
} xir_plan;

/* Plans a program for a shape. Errors: XIR_ERR_BUDGET when the legal candidates × grains exceed
 * the budget (never a truncated search), XIR_ERR_COST when a policy produces a non-finite or
 * negative value, XIR_ERR_INVALID_ARG for zero workers, budget 0, bad coefficients, an
 * explicit grain of 0 < G that is not representable, or a fixed ℓ that is not legal. */
xir_status xir_plan_make(const xir_program *p, const xir_shape *s, const xir_plan_options *o,
                         xir_plan **out, xir_diag *d);
void xir_plan_free(xir_plan *plan);

#ifdef __cplusplus
}
#endif
#endif

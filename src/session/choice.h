/* choice.h — the service choice at launch time (internal; used by the session and the bench).
 *
 * The plan chooses between the pool and the calling thread with the calibrated service model,
 * measured once. On a virtual machine what a 2-worker launch costs over its work can change
 * several-fold within minutes (2026-12-01 here: waking a spinning worker took 0.2 µs, then 0.9 µs
 * for minutes, then 0.2 again), and for a launch of a few microseconds that decides which
 * service is faster. So a prepared kernel whose plan has both a pool entry and a caller entry of
 * its chosen candidate (the same code: the grain never changes it), with model times within a
 * factor of 4 of each other and one of them below 50 µs, measures both. Every period launches
 * (256; 2048 when the other service measured more than 1.3x slower; doubled, up to 65536, while
 * one exploration costs more than 1/64 of the period's time over the same launches on the
 * faster service — a 0.1 µs kernel whose pool must first be woken) a run of launches goes to the
 * other service: 8 of the caller (longer ones would put the pool's worker to sleep); of the pool
 * 8, or as many as take 64 µs on the caller, at most 64. The last quarter of a run is timed (the
 * first launches after a switch pay for moving data between the cores' caches, and a pool that
 * slept for its wake and its core's climb back to speed), every launch of it for the
 * exploration's whole cost; one in four of the other launches is timed (one in 16 below 1 µs);
 * the launches run on the service whose time per launch measures lower (the plan's until both
 * have one). Outputs do not depend on the choice. */
#ifndef XIR_SESSION_CHOICE_H
#define XIR_SESSION_CHOICE_H

#include <stdatomic.h>
#include <stdint.h>

#include "xir_plan.h"
#include "xir_compile.h"
#include "xir_runtime.h"

enum { XIR__CHOICE_RING = 8 };

typedef struct xir__choice {
  uint32_t grain[2];          /* [0] the pool entry's G, [1] the caller entry's */
  uint32_t plan_grain;        /* entries[0]'s G */
  int plan_service;           /* 0 pool, 1 caller: entries[0]'s */
  int adaptive;               /* 0: always plan_grain */
  _Atomic uint64_t n;         /* launches so far */
  _Atomic uint64_t ns_bits[2]; /* average ns per launch of each service (double bits; 0 = none) */
  _Atomic uint64_t run_bits;   /* the last exploration's whole time, ns (double bits; 0 = none) */
  _Atomic uint64_t run_acc_bits; /* the current exploration's time so far */
  _Atomic uint64_t run_n;      /* the launches of the last exploration */
  _Atomic uint64_t run_acc_n;  /* the current exploration's launches so far */
  _Atomic int run_service;     /* the service the last exploration ran on (-1: none yet) */
  _Atomic uint64_t run_len;    /* the next exploration's launches (xir__choice_run) */
  _Atomic uint64_t period;     /* launches from one exploration to the next (xir__choice_period) */
  uint64_t first_period;       /* the period until the first exploration has run whole (0: the
                                  rule of xir__choice_period from the start) */
  uint64_t fixed_run;          /* every exploration's launches (0: xir__choice_run's rule); with
                                  it a run keeps the arm it started on (run_arm) */
  _Atomic int run_arm;         /* the current run's arm (-1: none started) */
  /* with fixed_run (the store choice): each arm's last XIR__CHOICE_RING timed launches (double
   * bits), whose median is its estimate (xir__choice_note) */
  _Atomic uint64_t ring[2][XIR__CHOICE_RING];
  _Atomic uint32_t ring_n[2];
} xir__choice;

/* The stores at launch time. Past the last-level cache, streaming (non-temporal) stores save
 * the read of every output line; near it, which stores are faster depends on what else runs on
 * the machine: on the 2-vCPU EPYC VM of 2026-12-06 (32 MiB of L3 shared with other tenants),
 * in one hour, rmsnorm 4096x1024 (33.6 MB) took 648 us streaming and 446 regular, while
 * rmsnorm 1024x4096 (the same bytes) took 657 streaming and 794 regular, softmax_mask 802
 * streaming and 1766 regular; the day before the same shapes measured the other way round.
 * So a session launch whose footprint is in xir__stream_choice_zone (lower/stream.h) measures
 * both, with the service choice's machinery: arm 0 the rule's bits (xir__stream_launch), arm 1
 * the other stores (xir__kernel_stream_choice). Unlike the service choice: explorations of 32
 * launches timed in their last quarter that keep the arm they started on (regular stores after
 * streaming ones take 10-16 launches to reach their steady state, as the cache fills again),
 * the first after 96 launches, and each arm's estimate the median of its last 8 timed launches
 * (regular stores spread far wider than streaming ones, and a minimum favours the wider). Only
 * when the service choice is not adaptive (it is for launches below 50 us, the store choice
 * for tens of MB). The outputs are the same bits either way. */
typedef struct xir__store_choice {
  int bits[2];       /* the streaming bits of each arm */
  xir__choice arms;  /* arms.adaptive 0: the rule's bits, as packed */
} xir__store_choice;

/* The bits of xir__choice_next's *timed. */
enum {
  XIR__CHOICE_TIMED = 1,        /* a sample of the service's time per launch */
  XIR__CHOICE_TIMED_RUN = 2,    /* a launch of an exploration: its time adds to the run's cost */
  XIR__CHOICE_TIMED_RUN_START = 4, /* its first launch (a run cut short by a new period ends
                                      * without XIR__CHOICE_TIMED_RUN_END: the next one restarts) */
  XIR__CHOICE_TIMED_RUN_END = 8 /* the exploration's last launch */
};

/* From a plan: adaptive when the costs are the calibrated model's (ns), and entries[0]'s
 * candidate has entries of both kinds whose totals are within a factor of 4, one of them below
 * 50 µs. */
void xir__choice_init(xir__choice *c, const xir_plan *plan, int calibrated);

/* The grain of the next launch; *service (0 pool, 1 caller) and *timed: 0, or XIR__CHOICE_TIMED*
 * bits, when the caller should time it and report with xir__choice_note_launch. Thread-safe. */
uint32_t xir__choice_next(xir__choice *c, int *service, int *timed);

/* The launches of the next exploration: 8 of the caller; of the pool (the caller the faster),
 * 8, or as many as take 64 µs on the caller, at most 64. */
uint64_t xir__choice_run(const xir__choice *c);

/* The launches between two explorations now (a power of two, 256 .. 65536). Both are
 * recomputed when a measurement arrives, not per launch. */
uint64_t xir__choice_period(const xir__choice *c);

/* A timed launch's ns, with xir__choice_next's *timed bits: a sample of the service's time
 * (xir__choice_note) and/or a part of an exploration's whole cost. */
void xir__choice_note_launch(xir__choice *c, int service, int timed, double ns);

/* The last whole exploration's time in ns, or -1. */
double xir__choice_run_cost(const xir__choice *c);

/* A measured time per launch of a service: a faster sample replaces the estimate, a slower one
 * raises it by 1/16 of the difference (at most 1/16 of the estimate); for the store choice
 * (fixed_run) the estimate is the median of the arm's last 8 samples. Thread-safe; concurrent
 * notes may drop one. */
void xir__choice_note(xir__choice *c, int service, double ns);

/* The average so far of a service, or -1. */
double xir__choice_average(const xir__choice *c, int service);

/* The store choice of k's launches (not adaptive when service is: the two would time each
 * other's exploration). */
void xir__store_choice_init(xir__store_choice *sc, const xir_kernel *k, const xir__choice *service);

/* The store choice's two arms (xir__store_choice.arms): adaptive, arm 0 until both are timed,
 * explorations of 32 launches, the first after 96. */
void xir__choice_init_store(xir__choice *c);

/* One launch of fn over L blocks on `workers` with the grain xir__choice_next gives, timed and
 * noted when it says so: what xir_session_launch and the bench's `default` configuration run.
 * With k (else NULL) ctx is k's packed slots, told that launch's split first
 * (xir_kernel_set_task_stride). */
xir_status xir__choice_launch(xir__choice *c, xir_runtime *rt, const xir_kernel *k, xir_block_fn fn,
                              void *ctx, uint64_t L, uint32_t workers, xir_diag *d);

/* 1 when every launch over L blocks on `workers` (of a pool of `pool`) with this choice is one
 * task on the calling thread — not adaptive, and one block, the plan's grain covering the
 * launch, one worker or a pool of one — which xir_runtime_launch runs as a plain call: the
 * choice then has nothing to decide, time or tell the kernel (the task stride is 0). */
int xir__choice_one_task(const xir__choice *c, uint64_t L, uint32_t workers, uint32_t pool);

/* What xir_session_launch does once it has checked the argument count, and what the bench's
 * `default` configuration times: args[0..nargs) (a parameter past nargs a scalar taking its
 * default; nparams the kernel's count) packed into slots, with the bits xir_kernel_pack_args
 * gives (its dense fast path when it applies), then launched — xir_runtime_launch when
 * one_task (xir__choice_one_task), else xir__choice_launch. With sc adaptive (may be NULL) and
 * the dense fast path taken, the stores are sc's choice, the launch timed when it says so. */
xir_status xir__choice_pack_launch(xir__choice *c, xir__store_choice *sc, xir_runtime *rt,
                                   const xir_kernel *k, const xir_arg *args, int nargs,
                                   int nparams, void *slots, uint32_t workers, int one_task,
                                   xir_diag *d);

#endif

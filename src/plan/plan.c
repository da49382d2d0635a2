/* plan.c — the planner: legal candidates × task grains, scored by a cost policy, ranked.
 *
 *   options ─► mappings from the bridge (ℓ fixed or searched) ─► grains (explicit G, or the
 *   search set, or G = 0) ─► budget check (the whole space, before any evaluation) ─► coefficients
 *   hook ─► execution work + evaluate for each ─► stable sort by total ─► plan
 *
 * The budget is checked against the full legal space: a search prefix is never passed off as the
 * optimum. The policy is only called during this function. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/program.h"
#include "xir_plan.h"
#include "xir_runtime.h"
#include "lower/jit.h"

void xir_plan_options_base(xir_plan_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->blocks_per_task = XIR_PLAN_NO_GRAIN;
  o->search_task_grain = 0;
  o->local_lanes = 1;
  o->workers = 1;
  o->width = 16;
  o->budget = 4096;
}

/* The grains evaluated for a launch of L blocks. */
static size_t grains_for(const xir_plan_options *o, uint64_t L, uint32_t *g, size_t cap) {
  size_t n = 0;
  if (o->blocks_per_task != XIR_PLAN_NO_GRAIN) {
    g[n++] = (uint32_t)o->blocks_per_task;
    return n;
  }
  g[n++] = 0;
  if (!o->search_task_grain) return n;
  for (uint64_t x = 1; x <= L && n + 1 < cap; x *= 2) g[n++] = (uint32_t)x;
  g[n++] = UINT32_MAX;
  return n;
}

static int cmp_entries(const void *a, const void *b) {
  const xir_plan_entry *x = a, *y = b;
  if (x->cost.total < y->cost.total) return -1;
  if (x->cost.total > y->cost.total) return 1;
  return 0;
}

/* A stable sort: entries carry their enumeration order in the padding-free index array. */
static void stable_sort(xir_plan_entry *e, size_t n) {
  /* insertion sort is stable; n is bounded by the budget */
  for (size_t i = 1; i < n; i++) {
    xir_plan_entry t = e[i];
    size_t j = i;
    while (j > 0 && cmp_entries(&e[j - 1], &t) > 0) {
      e[j] = e[j - 1];
      j--;
    }
    e[j] = t;
  }
}

static xir_status add_rejection(xir_plan *pl, size_t *cap, const char *name, const char *why) {
  if (xir__grow((void **)&pl->rejected, cap, pl->nrejected + 1, sizeof *pl->rejected))
    return XIR_ERR_NOMEM;
  xir_plan_rejection *r = &pl->rejected[pl->nrejected++];
  snprintf(r->name, sizeof r->name, "%s", name);
  /* a longer reason is cut at the field's size (said with a precision: gcc -O3 warns otherwise) */
  snprintf(r->reason, sizeof r->reason, "%.*s", (int)sizeof r->reason - 1, why);
  return XIR_OK;
}

xir_status xir_plan_make(const xir_program *p, const xir_shape *s, const xir_plan_options *opt,
                         xir_plan **out, xir_diag *d) {
  if (out) *out = NULL;
  if (!p || !s || !out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_plan_make: %s is NULL",
                    !p ? "the program" : !s ? "the shape" : "out");
  *out = NULL;
  xir_plan_options o;
  if (opt) o = *opt;
  else xir_plan_options_default(&o);
  if (o.width == 0) o.width = xir__jit_host_max_width();
  if (o.workers == 0) return xir__err(d, XIR_ERR_INVALID_ARG, "workers must be at least 1");
  if (o.workers > XIR_RUNTIME_MAX_WORKERS)
    return xir__err(d, XIR_ERR_INVALID_ARG, "workers = %u is above the maximum %d", o.workers,
                    XIR_RUNTIME_MAX_WORKERS);
  if (o.budget == 0) return xir__err(d, XIR_ERR_INVALID_ARG, "the search budget must be at least 1");
  if (o.blocks_per_task != XIR_PLAN_NO_GRAIN &&
      (o.blocks_per_task < 0 || o.blocks_per_task > (int64_t)UINT32_MAX))
    return xir__err(d, XIR_ERR_INVALID_ARG, "blocks_per_task = %lld is out of range",
                    (long long)o.blocks_per_task);
  xir_status st = xir_shape_check(p, s, d);
  if (st) return st;

  xir_plan *pl = xir__calloc(1, sizeof *pl);
  if (!pl) return xir__err(d, XIR_ERR_NOMEM, "out of memory planning");
  size_t rej_cap = 0, ent_cap = 0;
  /* coefficients: options (or defaults), then the policy's hook; all finite and >= 0 */
  if (o.coefficients) pl->coefficients = *o.coefficients;
  else xir_cost_coefficients_default(&pl->coefficients);
  if (o.policy && o.policy->coefficients) {
    if ((st = o.policy->coefficients(o.policy->ud, &pl->coefficients))) {
      xir__err(d, st, "the cost policy's coefficients hook failed (%s)", xir_status_name(st));
      goto fail;
    }
  }
  if (!isfinite(pl->coefficients.ns_per_math) || pl->coefficients.ns_per_math < 0) {
    st = xir__err(d, XIR_ERR_COST, "coefficient ns_per_math is %g: it must be finite and >= 0",
                  pl->coefficients.ns_per_math);
    goto fail;
  }
  if (!isfinite(pl->coefficients.ns_per_hw_math) || pl->coefficients.ns_per_hw_math < 0) {
    st = xir__err(d, XIR_ERR_COST, "coefficient ns_per_hw_math is %g: it must be finite and >= 0",
                  pl->coefficients.ns_per_hw_math);
    goto fail;
  }
  if (!isfinite(pl->coefficients.ns_per_task_far) || pl->coefficients.ns_per_task_far < 0) {
    st = xir__err(d, XIR_ERR_COST, "coefficient ns_per_task_far is %g: it must be finite and >= 0",
                  pl->coefficients.ns_per_task_far);
    goto fail;
  }
  for (int i = 0; i < XIR_CHAIN_KINDS; i++)
    if (!isfinite(pl->coefficients.ns_per_step[i]) ||
        pl->coefficients.ns_per_step[i] <
            -XIR_STEP_CREDIT_OPS * pl->coefficients.c[XIR_TERM_ARITH] * (1 + 1e-12)) {
      st = xir__err(d, XIR_ERR_COST,
                    "coefficient ns_per_step[%d] is %g: it must be finite and at least "
                    "-%d x the arithmetic coefficient (%g)",
                    i, pl->coefficients.ns_per_step[i], XIR_STEP_CREDIT_OPS,
                    -XIR_STEP_CREDIT_OPS * pl->coefficients.c[XIR_TERM_ARITH]);
      goto fail;
    }
  for (int i = 0; i < XIR_MEM_LEVELS; i++) {
    const xir_cost_coefficients *k = &pl->coefficients;
    if (!isfinite(k->mem_bytes[i]) || k->mem_bytes[i] < 0 || !isfinite(k->mem_ns[i]) || k->mem_ns[i] < 0 ||
        (k->mem_bytes[0] > 0 && i > 0 && !(k->mem_bytes[i] > k->mem_bytes[i - 1]))) {
      st = xir__err(d, XIR_ERR_COST, "the memory hierarchy of the coefficients (level %d: %g bytes, "
                    "%g ns) must be finite, >= 0 and increase in bytes", i, k->mem_bytes[i], k->mem_ns[i]);
      goto fail;
    }
  }
  for (int t = 0; t < XIR_TERM_COUNT; t++)
    if (!isfinite(pl->coefficients.c[t]) || pl->coefficients.c[t] < 0) {
      st = xir__err(d, XIR_ERR_COST, "coefficient '%s' is %g: coefficients must be finite and >= 0",
                    xir_cost_term_name((xir_cost_term)t), pl->coefficients.c[t]);
      goto fail;
    }

  /* the mapping space: every legal candidate, and why the others are not */
  xir_candidate *all = NULL;
  size_t nall = 0;
  if ((st = xir_candidates(p, s, o.width, &all, &nall, d))) goto fail;
  {
    uint8_t perm[XIR_MAX_ROOT];
    for (int k = 0; k < p->nroot; k++) perm[k] = (uint8_t)k;
    for (uint32_t B = o.width; B <= 8 * o.width; B *= 2)
      for (uint32_t l = 2; l <= B; l *= 2) {
        xir_candidate c;
        xir_diag why;
        if (xir_candidate_make(p, s, o.width, B, l, perm, &c, &why) == XIR_OK) continue;
        char name[96];
        snprintf(name, sizeof name, "l=%u,B=%u,W=%u (every perm)", l, B, o.width);
        if (add_rejection(pl, &rej_cap, name, why.msg)) goto oom_all;
      }
  }
  size_t nsel = 0;
  for (size_t i = 0; i < nall; i++) {
    if (o.local_lanes && all[i].local != o.local_lanes) {
      char name[96], why[160];
      xir_candidate_name(p, &all[i], name, sizeof name);
      snprintf(why, sizeof why, "excluded by the options: local_lanes is fixed to %u (0 searches)",
               o.local_lanes);
      if (add_rejection(pl, &rej_cap, name, why)) goto oom_all;
      continue;
    }
    all[nsel++] = all[i];
  }
  if (nsel == 0) {
    uint8_t perm[XIR_MAX_ROOT];
    for (int k = 0; k < p->nroot; k++) perm[k] = (uint8_t)k;
    xir_candidate c;
    xir_diag why;
    xir_candidate_make(p, s, o.width, o.width * (o.local_lanes > o.width ? o.local_lanes / o.width : 1),
                       o.local_lanes, perm, &c, &why);
    st = xir__err(d, XIR_ERR_INVALID_ARG, "no legal candidate with local_lanes = %u: %s",
                  o.local_lanes, why.msg);
    xir__free(all);
    goto fail;
  }
  /* the budget covers the whole space */
  size_t total = 0;
  uint32_t grains[80];
  for (size_t i = 0; i < nsel; i++) total += grains_for(&o, all[i].blocks, grains, 80);
  if (total > o.budget) {
    st = xir__err(d, XIR_ERR_BUDGET,
                  "%zu candidates x grains are legal, more than the search budget of %zu "
                  "(raise the budget, fix local_lanes or the grain)", total, o.budget);
    xir__free(all);
    goto fail;
  }
  for (size_t i = 0; i < nsel; i++) {
    size_t ng = grains_for(&o, all[i].blocks, grains, 80);
    for (size_t g = 0; g < ng; g++) {
      if (xir__grow((void **)&pl->entries, &ent_cap, pl->count + 1, sizeof *pl->entries))
        goto oom_all;
      xir_plan_entry *e = &pl->entries[pl->count];
      memset(e, 0, sizeof *e);
      e->cand = all[i];
      if ((st = xir_execution_work_make(p, s, &all[i], grains[g], o.workers, &e->work, d)) ||
          (st = xir_cost_evaluate(o.policy, &e->work, &pl->coefficients, &e->cost, d))) {
        xir__free(all);
        goto fail;
      }
      pl->count++;
    }
  }
  xir__free(all);
  stable_sort(pl->entries, pl->count);
  *out = pl;
  return XIR_OK;
oom_all:
  xir__free(all);
  st = xir__err(d, XIR_ERR_NOMEM, "out of memory planning");
fail:
  xir_plan_free(pl);
  return st;
}

void xir_plan_free(xir_plan *pl) {
  if (!pl) return;
  xir__free(pl->entries);
  xir__free(pl->rejected);
  xir__free(pl);
}

/* native.c — compile + launch through the runtime + check, for the CLI (see native.h). */
#include "native.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "xir_runtime.h"

xir_status native_default_candidate(const xir_program *p, const xir_shape *s, uint32_t W,
                                    xir_candidate *c, xir_diag *d) {
  uint8_t perm[XIR_MAX_ROOT];
  for (int k = 0; k < xir_program_num_root(p); k++) perm[k] = (uint8_t)k;
  if (xir_candidate_make(p, s, W, W, W, perm, c, NULL) == XIR_OK) return XIR_OK;
  return xir_candidate_make(p, s, W, W, 1, perm, c, d);
}

static void appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (xir__grow((void **)buf, cap, *len + (size_t)n + 1, 1)) return;
  memcpy(*buf + *len, line, (size_t)n + 1);
  *len += (size_t)n;
}

xir_status run_native(const xir_program *p, const xir_shape *s, xir_case *c,
                      const native_opts *o, native_result *r, xir_diag *d) {
  memset(r, 0, sizeof *r);
  r->all_pass = 1;
  size_t len = 0, cap = 0;
  xir_compiler *cc = NULL;
  xir_runtime *rt = NULL;
  xir_candidate *list = NULL;
  size_t n = 0;
  uint32_t grain = o->grain;
  xir_compiler_options co = {.force_width = o->width};
  xir_status st = XIR_OK;
  if (o->cc && (!o->width || xir_compiler_width(o->cc) == o->width)) cc = o->cc;
  else if ((st = xir_compiler_create(&co, &cc, d))) return st;
  uint32_t W = xir_compiler_width(cc);
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  ro.workers = o->workers ? o->workers : 1;
  if ((st = xir_runtime_create(&ro, &rt, d))) goto done;
  if (o->all) {
    if ((st = xir_candidates(p, s, W, &list, &n, d))) goto done;
  } else {
    list = xir__malloc(sizeof *list);
    if (!list) {
      st = xir__err(d, XIR_ERR_NOMEM, "out of memory");
      goto done;
    }
    n = 1;
    if (o->cand) {
      st = xir_candidate_parse(p, s, o->cand, W, list, d);
    } else if (o->plan) {
      xir_plan_options po = *o->plan;
      po.width = W;
      xir_plan *pl;
      if ((st = xir_plan_make(p, s, &po, &pl, d))) goto done;
      list[0] = pl->entries[0].cand;
      grain = pl->entries[0].work.grain;
      char nm[160];
      xir_candidate_name(p, &list[0], nm, sizeof nm);
      char g[24];
      if (grain == UINT32_MAX) snprintf(g, sizeof g, "max");
      else snprintf(g, sizeof g, "%u", grain);
      appendf(&r->text, &len, &cap, "plan: %s, G=%s chosen from %zu candidates x grains "
              "(xir plan shows why)\n", nm, g, pl->count);
      xir_plan_free(pl);
    } else {
      st = native_default_candidate(p, s, W, list, d);
    }
    if (st) goto done;
  }
  r->json = cJSON_CreateArray();
  xir_tolerance tol = xir__kernel_tolerance(xir_program_name(p));
  for (size_t i = 0; i < n; i++) {
    char name[160];
    xir_candidate_name(p, &list[i], name, sizeof name);
    const xir_kernel *k;
    if ((st = xir_compile(cc, p, s, &list[i], &k, d))) goto done;
    xir_kernel_info info;
    xir_kernel_get_info(k, &info);
    xir__case_reset_outputs(c);
    uint64_t slots[XIR_MAX_ARG_SLOTS];
    uint64_t blocks;
    if ((st = xir_kernel_pack_launch(k, s, c->args, slots, &blocks, d))) goto done;
    uint64_t stride =
        xir_launch_task_stride(xir_runtime_workers(rt), blocks, grain, o->workers ? o->workers : 1);
    if ((st = xir_kernel_set_task_stride(k, slots, stride, d)))
      goto done;
    xir_launch_stats ls;
    double t0 = (xir__now_ns() / 1e6);
    st = xir_runtime_launch(rt, (xir_block_fn)xir_kernel_entry(k), slots, blocks,
                            grain, o->workers ? o->workers : 1, &ls, d);
    r->last_ms = (xir__now_ns() / 1e6) - t0;
    if (st) goto done;
    int ok = xir__case_sentinels_ok(c);
    double max_abs = 0, rel = 0;
    for (int q = 0; q < xir_program_num_params(p); q++) {
      if (!c->ref[q]) continue;
      xir_compare cmp = xir__case_compare(c, q, tol);
      ok &= cmp.pass;
      if (cmp.max_abs > max_abs) max_abs = cmp.max_abs;
      if (cmp.rel_l2 > rel) rel = cmp.rel_l2;
    }
    r->all_pass &= ok;
    const xir_candidate *cd = xir_kernel_candidate(k);
    appendf(&r->text, &len, &cap,
            "%-30s %-12s L=%-6llu G=%-5u C=%-6llu h=%-2u %-6s jit %6.2f ms (cache %s)  max abs "
            "%.3g  rel l2 %.3g  %s\n",
            name, xir_impl_kind_name(cd->kind), (unsigned long long)ls.shape.blocks,
            (unsigned)ls.shape.grain, (unsigned long long)ls.shape.tasks, ls.shape.active,
            ls.shape.caller_path ? "caller" : "pool", info.jit_ms, info.disk_cache, max_abs, rel,
            ok ? "ok" : "FAIL");
    if (info.cache_note[0]) appendf(&r->text, &len, &cap, "  warning: %s\n", info.cache_note);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "candidate", name);
    cJSON_AddStringToObject(j, "implementation", xir_impl_kind_name(cd->kind));
    cJSON_AddNumberToObject(j, "blocks", (double)ls.shape.blocks);
    cJSON_AddNumberToObject(j, "grain", (double)ls.shape.grain);
    cJSON_AddNumberToObject(j, "tasks", (double)ls.shape.tasks);
    cJSON_AddNumberToObject(j, "active_workers", ls.shape.active);
    cJSON_AddBoolToObject(j, "caller", ls.shape.caller_path);
    cJSON_AddNumberToObject(j, "jit_ms", info.jit_ms);
    cJSON_AddStringToObject(j, "cache", info.disk_cache);
    if (info.cache_note[0]) cJSON_AddStringToObject(j, "cache_note", info.cache_note);
    cJSON_AddStringToObject(j, "ir_sha256", info.ir_sha256);
    cJSON_AddStringToObject(j, "obj_sha256", info.obj_sha256);
    cJSON_AddNumberToObject(j, "max_abs_err", max_abs);
    cJSON_AddBoolToObject(j, "pass", ok);
    cJSON_AddItemToArray(r->json, j);
  }
done:
  if (st) {
    cJSON_Delete(r->json);
    r->json = NULL;
  }
  xir__free(list);
  xir_runtime_destroy(rt);
  if (cc != o->cc) xir_compiler_destroy(cc);
  return st;
}

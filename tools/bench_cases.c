/* bench_cases.c — one benchmark case: xir (planned or fixed), an in-process C peer, an
 * external peer process, or the streaming-bandwidth probe over a kernel's buffers.
 * prepare/check are outside the timed region; run is the timed region: a batch of n launches
 * plus the wait (xir), or n calls (peers, probe). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "lower/jit.h"
#include "util/npy.h"
#include "util/util.h"

#if __has_include("xir_peers.h")
#include "xir_peers.h"
#define HAVE_C_PEERS 1
#else
#define HAVE_C_PEERS 0
#endif

static int output_param(const xir_program *p) {
  for (int i = 0; i < xir_program_num_params(p); i++) {
    xir_param_info in;
    xir_program_param(p, i, &in);
    if (in.kind == XIR_PARAM_BUFFER && in.is_output) return i;
  }
  return -1;
}

xir_status bench_config_options(const char *cfg, uint32_t W, uint32_t *workers,
                                const xir_calibration *cal, const xir_cost_coefficients *service,
                                xir_plan_options *o, xir_cost_coefficients *coef, xir_diag *d) {
  /* the report's configurations start from its base options; `default` is what a user gets */
  xir_plan_options_base(o);
  if (!strcmp(cfg, "default") || !strcmp(cfg, "default_rule_stores")) {
    xir_plan_options_default(o);
    o->coefficients = service ? coef : NULL;
    if (service) *coef = *service;
  } else if (!strcmp(cfg, "joint_tasks") || !strcmp(cfg, "joint_tasks_1w")) {
    o->local_lanes = 0;
    o->search_task_grain = 1;
    xir_cost_coefficients_experimental(coef);
    o->coefficients = coef;
    if (!strcmp(cfg, "joint_tasks_1w")) *workers = 1;
  } else if (!strcmp(cfg, "joint_calibrated")) {
    if (!cal) return xir__err(d, XIR_ERR_INVALID_ARG, "joint_calibrated needs the run's calibration");
    o->local_lanes = 0;
    o->search_task_grain = 1;
    xir_cost_coefficients_from_calibration(cal, coef);
    o->coefficients = coef;
  } else if (!strcmp(cfg, "joint_legacy")) {
    o->local_lanes = 0;
  } else {
    return xir__err(d, XIR_ERR_INVALID_ARG, "unknown configuration '%s'", cfg);
  }
  o->width = W;
  o->workers = *workers;
  return XIR_OK;
}

static xir_status prepare_xir(bench_env *e, bcase *c, xir_diag *d) {
  const char *cfg = c->decl.config;
  xir_candidate cand;
  xir_status st;
  uint32_t workers = e->workers;
  if (!strncmp(cfg, "fixed:", 6)) {
    unsigned l = 0, B = 0, h = 0;
    char g[16] = "";
    if (sscanf(cfg + 6, "l=%u,B=%u,G=%15[^,],H=%u", &l, &B, g, &h) < 3)
      return xir__err(d, XIR_ERR_INVALID_ARG, "bad fixed configuration '%s'", cfg);
    if (h) workers = h;
    uint8_t perm[XIR_MAX_ROOT];
    for (int k = 0; k < xir_program_num_root(c->p); k++) perm[k] = (uint8_t)k;
    uint32_t W = xir_compiler_width(e->cc);
    if ((st = xir_candidate_make(c->p, &c->shape, W, B, l, perm, &cand, d))) return st;
    c->grain = !strcmp(g, "max") ? UINT32_MAX : (uint32_t)atol(g);
  } else {
    xir_plan_options o;
    xir_cost_coefficients coef;
    if (!strcmp(cfg, "joint_calibrated") && !e->calibrated) {
      /* measured once per run */
      if ((st = xir_calibrate(e->cc, e->rt, &e->calibration, d))) return st;
      e->calibrated = 1;
    }
    if ((st = bench_config_options(cfg, xir_compiler_width(e->cc), &workers,
                                   e->calibrated ? &e->calibration : NULL,
                                   xir_service_coefficients(), &o, &coef, d)))
      return st;
    o.workers = workers;
    xir_plan *pl;
    if ((st = xir_plan_make(c->p, &c->shape, &o, &pl, d))) return st;
    cand = pl->entries[0].cand;
    c->grain = pl->entries[0].work.grain;
    /* what a user gets: the session's choice between the pool and the caller at launch time */
    xir__choice_init(&c->choice, pl, !strncmp(cfg, "default", 7) && o.coefficients);
    xir_plan_free(pl);
  }
  c->workers = workers;
  if ((st = xir_compile(e->cc, c->p, &c->shape, &cand, &c->k, d))) return st;
  /* what a user gets: streaming or regular stores chosen at launch time near the cache's size
   * (`default_rule_stores`: the same launches with the rule's stores, xir__stream_launch) */
  if (!strcmp(cfg, "default")) xir__store_choice_init(&c->store, c->k, &c->choice);
  else memset(&c->store, 0, sizeof c->store);
  xir_candidate_name(c->p, xir_kernel_candidate(c->k), c->cand, sizeof c->cand);
  snprintf(c->impl, sizeof c->impl, "%s", xir_impl_kind_name(xir_kernel_candidate(c->k)->kind));
  xir_kernel_info info;
  xir_kernel_get_info(c->k, &info);
  snprintf(c->ir_sha, sizeof c->ir_sha, "%s", info.ir_sha256);
  snprintf(c->obj_sha, sizeof c->obj_sha, "%s", info.obj_sha256);
  if ((st = xir_kernel_pack_args(c->k, c->cs.args, c->slots, d))) return st;
  return xir_batch_create(e->rt, &c->batch, d);
}

#if HAVE_C_PEERS
static xir_status prepare_cpeer(bcase *c, xir_diag *d) {
  const char *variant = c->decl.config + 5;
  xir_peer_fn fn = xir_peer_find(c->decl.kernel, variant);
  const char *const *dn = xir_peer_dims(c->decl.kernel);
  if (!fn || !dn) {
    c->unsupported = 1;
    snprintf(c->why, sizeof c->why, "no C peer '%s' for %s", variant, c->decl.kernel);
    return XIR_OK;
  }
  /* rope_cache's peer reads x, pos, cos, sin in this order (the kernel is new: say so rather
   * than read the wrong buffers if it declares them otherwise) */
  static const char *const kRopeCacheIn[] = {"x", "pos", "cos", "sin"};
  int is_rc = !strcmp(c->decl.kernel, "rope_cache");
  xir_peer_args *a = xir__calloc(1, sizeof *a);
  if (!a) return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  int ni = 0, ns = 0;
  for (int i = 0; i < xir_program_num_params(c->p); i++) {
    xir_param_info in;
    xir_program_param(c->p, i, &in);
    if (in.kind == XIR_PARAM_BUFFER && !in.is_output && is_rc &&
        (ni >= 4 || strcmp(in.name, kRopeCacheIn[ni]) != 0)) {
      xir__free(a);
      c->unsupported = 1;
      snprintf(c->why, sizeof c->why, "the C peer of rope_cache reads x, pos, cos, sin; input "
               "%d of the kernel is '%s'", ni, in.name);
      return XIR_OK;
    }
    if (in.kind == XIR_PARAM_BUFFER && !in.is_output) a->in[ni++] = c->cs.data[i];
    else if (in.kind == XIR_PARAM_BUFFER) a->out = c->cs.data[i];
    else a->scalar[ns++] = c->cs.args[i].use_default ? in.default_value : c->cs.args[i].scalar;
  }
  /* the dims by name, in the peer's order (a kernel may declare them in another) */
  for (int k = 0; dn[k]; k++) {
    int found = -1;
    for (int j = 0; j < xir_program_num_dims(c->p); j++)
      if (!strcmp(xir_program_dim_name(c->p, j), dn[k])) found = j;
    if (found < 0 || k >= 8) {
      xir__free(a);
      c->unsupported = 1;
      snprintf(c->why, sizeof c->why, "the C peer of %s needs a dim %s the kernel does not have",
               c->decl.kernel, dn[k]);
      return XIR_OK;
    }
    a->dims[k] = c->shape.dims[found];
  }
  /* one untimed call: a peer that rejects these inputs (rope_cache: a position that is not an
   * integer in [0, P)) is reported as not measured, with the reason */
  int rc = fn(a);
  if (rc != XIR_PEER_OK) {
    xir__free(a);
    c->unsupported = 1;
    snprintf(c->why, sizeof c->why, "the C peer '%s' rejects these inputs (%s)", variant,
             rc == XIR_PEER_ENOMEM ? "out of memory" : "invalid arguments");
    return XIR_OK;
  }
  memcpy(&c->peer_fn, &fn, sizeof fn);
  c->peer_args = a;
  return XIR_OK;
}

/* The streaming probe: the kernel's own buffers (every input read once, the output written
 * once) through xir_peer_stream. */
static xir_status prepare_probe(bcase *c, xir_diag *d) {
  if (strcmp(c->decl.config, "probe:stream") != 0)
    return xir__err(d, XIR_ERR_INVALID_ARG, "unknown configuration '%s'", c->decl.config);
  xir_peer_stream_args *a = xir__calloc(1, sizeof *a);
  if (!a) return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  for (int i = 0; i < xir_program_num_params(c->p); i++) {
    xir_param_info in;
    xir_program_param(c->p, i, &in);
    if (in.kind != XIR_PARAM_BUFFER) continue;
    if (in.is_output) {
      a->out = c->cs.data[i];
      a->n_out = c->cs.numel[i];
    } else if (a->nin < 8) {
      a->in[a->nin] = c->cs.data[i];
      a->n_in[a->nin++] = c->cs.numel[i];
    }
  }
  /* The floor is the faster way to write the output: plain stores read each line first (read
   * for ownership), non-temporal ones do not but bypass the cache, which a small output would
   * keep. Timed here, before the run: the two alternate, at least 7 runs and 20 ms each, the
   * best of each kept; the same choice for every visit, and the records say which
   * (probe_stores). At 8192x4096 the plain stream was 1.5x the kernels that stream their
   * outputs (rmsnorm 6144 us against 9630), a floor above them; with a warm-up and 3 runs each
   * the choice flipped between kernels of the same buffers at 300x4000 (146 against 167 us). */
  double best[2] = {1e300, 1e300}, spent[2] = {0, 0};
  int runs[2] = {0, 0};
  for (int v = 0; v < 2; v++) {
    a->nt = v;
    if (xir_peer_stream(a)) { /* the warm-up */
      xir__free(a);
      return xir__err(d, XIR_ERR_RUNTIME, "the stream probe failed");
    }
  }
  for (int k = 0; k < 1000 && (runs[1] < 7 || spent[0] < 20e6 || spent[1] < 20e6); k++) {
    int v = k & 1;
    a->nt = v;
    double t0 = xir__now_ns();
    xir_peer_stream(a);
    double t = xir__now_ns() - t0;
    spent[v] += t;
    runs[v]++;
    if (t < best[v]) best[v] = t;
  }
  a->nt = best[1] < best[0];
  c->probe_nt = a->nt;
  c->peer_args = a;
  return XIR_OK;
}

/* The probe's check: its output, element by element, is the serial fp32 sum of the streamed
 * inputs in input order (exactly what xir_peer_stream computes). */
static void check_probe(const bcase *c, xir_compare *out) {
  const xir_peer_stream_args *a = c->peer_args;
  memset(out, 0, sizeof *out);
  out->first_bad = (size_t)-1;
  out->n = a->n_out;
  double num = 0, den = 0;
  for (size_t i = 0; i < a->n_out; i++) {
    float want = 0.0f;
    int first = 1;
    for (int j = 0; j < a->nin; j++)
      if (a->n_in[j] == a->n_out) {
        want = first ? a->in[j][i] : want + a->in[j][i];
        first = 0;
      }
    float got = a->out[i];
    double e = fabs((double)got - (double)want);
    if (memcmp(&got, &want, sizeof got) != 0) {
      if (!out->bad++) out->first_bad = i;
      if (isnan(got)) out->nan++;
    }
    if (e > out->max_abs || isnan(e)) out->max_abs = isnan(e) ? INFINITY : e;
    num += e * e;
    den += (double)want * want;
  }
  out->rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
  out->pass = out->bad == 0;
}
#endif

static xir_status prepare_ext(bench_env *e, bcase *c, xir_diag *d) {
  const char *name = c->decl.config + 4;
  int shared = 0;
  for (int i = 0; i < e->npeers; i++)
    if (!strcmp(e->peer_names[i], name)) {
      c->ext = e->peers[i];
      shared = e->peer_shared[i];
    }
  if (!c->ext) {
    c->unsupported = 1;
    snprintf(c->why, sizeof c->why, "external peer '%s' is not available", name);
    return XIR_OK;
  }
  snprintf(c->tmpdir, sizeof c->tmpdir, "/tmp/xir-bench-XXXXXX");
  if (!mkdtemp(c->tmpdir)) return xir__err(d, XIR_ERR_IO, "cannot create a temporary folder");
  cJSON *req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "op", "prepare");
  cJSON_AddStringToObject(req, "case", c->tmpdir); /* several cases are prepared at once */
  cJSON_AddStringToObject(req, "kernel", c->decl.kernel);
  if (shared) cJSON_AddStringToObject(req, "peer", name); /* which of the process's names */
  cJSON *dims = cJSON_AddObjectToObject(req, "dims");
  for (int k = 0; k < xir_program_num_dims(c->p); k++)
    cJSON_AddNumberToObject(dims, xir_program_dim_name(c->p, k), (double)c->shape.dims[k]);
  cJSON *sc = cJSON_AddObjectToObject(req, "scalars");
  cJSON *ins = cJSON_AddObjectToObject(req, "inputs");
  xir_status st = XIR_OK;
  for (int i = 0; i < xir_program_num_params(c->p) && !st; i++) {
    xir_param_info in;
    xir_program_param(c->p, i, &in);
    if (in.kind == XIR_PARAM_SCALAR) {
      cJSON_AddNumberToObject(sc, in.name, c->cs.args[i].use_default ? in.default_value : c->cs.args[i].scalar);
    } else if (in.is_output) {
      cJSON_AddStringToObject(req, "output", in.name);
    } else {
      size_t sh[XIR_MAX_RANK];
      for (int k = 0; k < in.rank; k++) sh[k] = (size_t)c->shape.dims[in.dims[k]];
      char path[512];
      snprintf(path, sizeof path, "%s/%s.npy", c->tmpdir, in.name);
      st = in.elem == XIR_I64 ? xir__npy_write_i64(path, c->cs.idata[i], sh, in.rank, d)
                              : xir__npy_write_f32(path, c->cs.data[i], sh, in.rank, d);
      cJSON_AddStringToObject(ins, in.name, path);
    }
  }
  char *line = st ? NULL : cJSON_PrintUnformatted(req);
  cJSON_Delete(req);
  if (st) return st;
  cJSON *ans = NULL;
  st = ext_peer_request(c->ext, line, &ans, d);
  cJSON_free(line);
  if (st) return st;
  if (!cJSON_IsTrue(cJSON_GetObjectItem(ans, "ok"))) {
    c->unsupported = 1;
    const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "error"));
    snprintf(c->why, sizeof c->why, "%s: %s", name, why ? why : "unsupported");
  }
  cJSON_Delete(ans);
  return XIR_OK;
}

xir_status bench_load_kernel(const char *decl_kernel, xir_program **p, xir_diag *d) {
  char name[64];
  const char *at = strchr(decl_kernel, '@');
  snprintf(name, sizeof name, "%.*s", at ? (int)(at - decl_kernel) : (int)strlen(decl_kernel),
           decl_kernel);
  xir_program *base;
  xir_status st = xir_kernel_load(name, &base, d);
  if (st || !at) {
    *p = st ? NULL : base;
    return st;
  }
  st = xir_program_retype(base, at + 1, p, d);
  xir_program_free(base);
  return st;
}

xir_status bcase_prepare(bench_env *e, bcase *c, xir_diag *d) {
  xir_status st;
  if ((st = bench_load_kernel(c->decl.kernel, &c->p, d))) return st;
  if ((st = xir_shape_parse(c->p, c->decl.shape, &c->shape, d))) return st;
  if ((st = xir__case_init(&c->cs, c->p, &c->shape, e->seed, d))) return st;
  c->cs_ok = 1;
  if (e->input_offset >= 0 && (st = xir__case_place_inputs(&c->cs, e->input_offset, d))) return st;
  xir__case_input_fingerprint(&c->cs, c->input_sha);
  if (!strncmp(c->decl.config, "probe:", 6)) {
    c->kind = BC_PROBE; /* checked against its own exact result, not the kernel's oracle */
#if HAVE_C_PEERS
    return prepare_probe(c, d);
#else
    c->unsupported = 1;
    snprintf(c->why, sizeof c->why, "this build has no C peers (the probe is one of them)");
    return XIR_OK;
#endif
  }
  if ((st = xir__case_oracle(&c->cs, d))) return st;
  if (!strncmp(c->decl.config, "peer:", 5)) {
    c->kind = BC_CPEER;
#if HAVE_C_PEERS
    return prepare_cpeer(c, d);
#else
    c->unsupported = 1;
    snprintf(c->why, sizeof c->why, "this build has no C peers");
    return XIR_OK;
#endif
  }
  if (!strncmp(c->decl.config, "ext:", 4)) {
    c->kind = BC_EXT;
    return prepare_ext(e, c, d);
  }
  c->kind = BC_XIR;
  return prepare_xir(e, c, d);
}

xir_status bcase_run(bench_env *e, bcase *c, uint64_t n, double *ns, xir_diag *d) {
  xir_status st = XIR_OK;
  if (c->kind == BC_XIR && (c->choice.adaptive || !strncmp(c->decl.config, "default", 7))) {
    /* what xir_session_launch does (session/choice.h): each launch packs its arguments and
     * runs on the service that measures faster, some timed, with explorations of the other
     * (or, not adaptive, on the plan's; a one-task plan as a plain call); n launches in a loop,
     * timed as a whole */
    int np = xir_program_num_params(c->p);
    int one = xir__choice_one_task(&c->choice, xir_kernel_blocks(c->k), c->workers,
                                   xir_runtime_workers(e->rt));
    double t0 = xir__now_ns();
    for (uint64_t i = 0; i < n && !st; i++)
      st = xir__choice_pack_launch(&c->choice, &c->store, e->rt, c->k, c->cs.args, np, np,
                                   c->slots, c->workers, one, d);
    *ns = xir__now_ns() - t0;
    return st;
  }
  if (c->kind == BC_XIR) {
    uint64_t stride = xir_launch_task_stride(xir_runtime_workers(e->rt), xir_kernel_blocks(c->k),
                                             c->grain, c->workers);
    st = xir_kernel_set_task_stride(c->k, c->slots, stride, d);
    if (st) return st;
    xir_batch_reset(c->batch);
    for (uint64_t i = 0; i < n && !st; i++)
      st = xir_batch_record(c->batch, (xir_block_fn)xir_kernel_entry(c->k), c->slots,
                            xir_kernel_blocks(c->k), c->grain, c->workers, d);
    if (st) return st;
    double t0 = xir__now_ns();
    st = xir_runtime_submit(e->rt, c->batch, d);
    *ns = xir__now_ns() - t0;
    return st;
  }
#if HAVE_C_PEERS
  if (c->kind == BC_CPEER) {
    xir_peer_fn fn;
    memcpy(&fn, &c->peer_fn, sizeof fn);
    const xir_peer_args *a = c->peer_args;
    double t0 = xir__now_ns();
    for (uint64_t i = 0; i < n; i++)
      if (fn(a)) return xir__err(d, XIR_ERR_RUNTIME, "C peer for %s failed", c->decl.kernel);
    *ns = xir__now_ns() - t0;
    return XIR_OK;
  }
  if (c->kind == BC_PROBE) {
    xir_peer_stream_args *a = c->peer_args;
    double t0 = xir__now_ns();
    for (uint64_t i = 0; i < n; i++)
      if (xir_peer_stream(a)) return xir__err(d, XIR_ERR_RUNTIME, "the stream probe failed");
    *ns = xir__now_ns() - t0;
    return XIR_OK;
  }
#endif
  if (c->kind == BC_EXT) {
    char line[512];
    snprintf(line, sizeof line, "{\"op\":\"run\",\"case\":\"%s\",\"n\":%llu}", c->tmpdir,
             (unsigned long long)n);
    cJSON *ans;
    if ((st = ext_peer_request(c->ext, line, &ans, d))) return st;
    const cJSON *t = cJSON_GetObjectItem(ans, "ns");
    if (!cJSON_IsTrue(cJSON_GetObjectItem(ans, "ok")) || !cJSON_IsNumber(t)) {
      cJSON_Delete(ans);
      return xir__err(d, XIR_ERR_RUNTIME, "peer %s failed to run %s", c->decl.config, c->decl.kernel);
    }
    *ns = t->valuedouble;
    cJSON_Delete(ans);
    return XIR_OK;
  }
  return xir__err(d, XIR_ERR_INVALID_ARG, "case %s cannot run", c->decl.config);
}

xir_status bcase_check(bench_env *e, bcase *c, xir_compare *out, int *sentinels_ok, xir_diag *d) {
  (void)e;
  int o = output_param(c->p);
  if (c->kind == BC_EXT) {
    char path[512], line[1024];
    snprintf(path, sizeof path, "%s/out.npy", c->tmpdir);
    snprintf(line, sizeof line, "{\"op\":\"output\",\"case\":\"%s\",\"path\":\"%s\"}",
             c->tmpdir, path);
    cJSON *ans;
    xir_status st = ext_peer_request(c->ext, line, &ans, d);
    if (st) return st;
    if (!cJSON_IsTrue(cJSON_GetObjectItem(ans, "ok"))) { /* its reason, not a missing file's */
      const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "error"));
      st = xir__err(d, XIR_ERR_RUNTIME, "peer %s did not write the output of %s: %s",
                    c->decl.config, c->decl.kernel, why ? why : "no reason given");
      cJSON_Delete(ans);
      return st;
    }
    cJSON_Delete(ans);
    float *data;
    size_t sh[XIR_MAX_RANK];
    int nd;
    if ((st = xir__npy_read_f32(path, &data, sh, &nd, XIR_MAX_RANK, d))) return st;
    size_t n = 1;
    for (int k = 0; k < nd; k++) n *= sh[k];
    if (n != c->cs.numel[o]) {
      xir__free(data);
      return xir__err(d, XIR_ERR_FORMAT, "peer %s wrote %zu elements, expected %zu", c->decl.config, n, c->cs.numel[o]);
    }
    memcpy(c->cs.data[o], data, n * sizeof(float));
    xir__free(data);
    remove(path);
  }
#if HAVE_C_PEERS
  if (c->kind == BC_PROBE) check_probe(c, out);
  else
#endif
    *out = xir__case_compare(&c->cs, o, xir__kernel_tolerance(xir_program_name(c->p)));
  *sentinels_ok = xir__case_sentinels_ok(&c->cs);
  if (c->cs.hdata[o]) /* a bf16/f16 output: its bits */
    xir__jit_sha256_hex(c->cs.hdata[o], c->cs.numel[o] * sizeof(uint16_t), c->out_sha);
  else
    xir__jit_sha256_hex(c->cs.data[o], c->cs.numel[o] * sizeof(float), c->out_sha);
  return XIR_OK;
}

void bcase_release(bcase *c) {
  if (c->batch) xir_batch_destroy(c->batch);
  if (c->kind == BC_CPEER || c->kind == BC_PROBE) xir__free(c->peer_args);
  if (c->tmpdir[0]) {
    for (int i = 0; c->p && i < xir_program_num_params(c->p); i++) {
      xir_param_info in;
      xir_program_param(c->p, i, &in);
      char path[512];
      snprintf(path, sizeof path, "%s/%s.npy", c->tmpdir, in.name);
      remove(path);
    }
    rmdir(c->tmpdir);
  }
  if (c->cs_ok) xir__case_free(&c->cs);
  xir_program_free(c->p);
  c->p = NULL;
  c->batch = NULL;
  c->peer_args = NULL;
  c->cs_ok = 0;
}

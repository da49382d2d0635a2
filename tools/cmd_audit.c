/* cmd_audit.c — `xir audit DIR`: recompute every statistic from the raw records and reject, with
 * a named reason, anything that does not follow: changed samples, summaries that do not follow
 * from their samples, missing/duplicated/out-of-order visits, changed input fingerprints, failed
 * or missing oracle checks, records from another binary or configuration. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench/records.h"
#include "cli.h"
#include "util/util.h"

void bench_binary_sha(char hex[65]);

static const char *jstr(const cJSON *o, const char *k) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
  return s ? s : "";
}

static int reject(const char *dir, const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "xir audit: %s: REJECTED: ", dir);
  fprintf(stderr, fmt, a, b);
  fprintf(stderr, "\n");
  return 1;
}

/* The configuration: rebuild the suite the records name and compare. */
static int check_configuration(const char *dir, const cJSON *rec) {
  const cJSON *filter = cJSON_GetObjectItemCaseSensitive(rec, "filter");
  suite_filter f = {0};
  if (cJSON_GetObjectItem(filter, "kernels")) f.kernels = jstr(filter, "kernels");
  if (cJSON_GetObjectItem(filter, "shapes")) f.shapes = jstr(filter, "shapes");
  if (cJSON_GetObjectItem(filter, "configs")) f.configs = jstr(filter, "configs");
  if (cJSON_GetObjectItem(filter, "extra_shapes")) f.extra = jstr(filter, "extra_shapes");
  const char *names[BENCH_MAX_PEERS];
  int np = 0;
  const cJSON *pn;
  cJSON_ArrayForEach(pn, cJSON_GetObjectItemCaseSensitive(rec, "peers")) if (np < BENCH_MAX_PEERS && cJSON_IsString(pn))
      names[np++] = pn->valuestring;
  /* records without the python_side declaration are from before the Python side: xir_python
   * and torch_eager_py there were external peers like the others (--peer NAME=...) */
  bench_set_ext_peers(names, np, cJSON_GetObjectItemCaseSensitive(rec, "python_side") != NULL);
  bench_suite s;
  xir_diag d;
  if (bench_suite_build(jstr(rec, "suite"), &f, &s, &d))
    return reject(dir, "records from another configuration: %s%s", d.msg, "");
  /* drop what the records list as unsupported */
  const cJSON *uns = cJSON_GetObjectItemCaseSensitive(rec, "unsupported");
  char *drop = xir__calloc((size_t)s.ncases + 1, 1);
  if (!drop) return reject(dir, "out of memory%s%s", "", "");
  for (int i = 0; i < s.ncases; i++) {
    const cJSON *u;
    cJSON_ArrayForEach(u, uns) if (!strcmp(jstr(u, "kernel"), s.cases[i].kernel) &&
                                   !strcmp(jstr(u, "shape"), s.cases[i].shape) &&
                                   !strcmp(jstr(u, "config"), s.cases[i].config)) drop[i] = 1;
  }
  xir_status dst = bench_suite_drop(&s, drop);
  xir__free(drop);
  int bad = 0;
  char what[1024] = "";
  if (dst) {
    snprintf(what, sizeof what, "out of memory");
    bad = 1;
  }
  const cJSON *cases = cJSON_GetObjectItemCaseSensitive(rec, "cases");
  if (!bad && cJSON_GetArraySize(cases) != s.ncases) {
    snprintf(what, sizeof what, "%d cases recorded, the suite declares %d", cJSON_GetArraySize(cases), s.ncases);
    bad = 1;
  }
  for (int i = 0; !bad && i < s.ncases; i++) {
    const cJSON *c = cJSON_GetArrayItem(cases, i);
    if (strcmp(jstr(c, "kernel"), s.cases[i].kernel) || strcmp(jstr(c, "shape"), s.cases[i].shape) ||
        strcmp(jstr(c, "config"), s.cases[i].config)) {
      snprintf(what, sizeof what, "case %d is %s %s %s, the suite declares %s %s %s", i,
               jstr(c, "kernel"), jstr(c, "shape"), jstr(c, "config"), s.cases[i].kernel,
               s.cases[i].shape, s.cases[i].config);
      bad = 1;
    }
  }
  const cJSON *cmps = cJSON_GetObjectItemCaseSensitive(rec, "comparisons");
  if (!bad && cJSON_GetArraySize(cmps) != s.ncomparisons) {
    snprintf(what, sizeof what, "%d comparisons recorded, the suite declares %d", cJSON_GetArraySize(cmps), s.ncomparisons);
    bad = 1;
  }
  for (int k = 0; !bad && k < s.ncomparisons; k++) {
    const cJSON *c = cJSON_GetArrayItem(cmps, k);
    if ((int)cJSON_GetNumberValue(cJSON_GetObjectItem(c, "baseline")) != s.comparisons[k][0] ||
        (int)cJSON_GetNumberValue(cJSON_GetObjectItem(c, "variant")) != s.comparisons[k][1]) {
      snprintf(what, sizeof what, "comparison %d differs from the suite's", k);
      bad = 1;
    }
  }
  const cJSON *orders = cJSON_GetObjectItemCaseSensitive(rec, "orders");
  if (!bad && cJSON_GetArraySize(orders) != s.norders) {
    snprintf(what, sizeof what, "%d visit orders declared in the records, the suite has %d", cJSON_GetArraySize(orders), s.norders);
    bad = 1;
  }
  for (int o = 0; !bad && o < s.norders; o++)
    for (int i = 0; !bad && i < s.ncases; i++)
      if ((int)cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetArrayItem(orders, o), i)) != s.orders[o][i]) {
        snprintf(what, sizeof what, "declared visit order %d differs from the suite's at position %d", o, i);
        bad = 1;
      }
  bench_suite_free(&s);
  return bad ? reject(dir, "records from another configuration: %s%s", what, "") : 0;
}

/* One xir case against its configuration: the candidate parses for the recorded SIMD width and
 * is the one the configuration gives (fixed: the same construction; joint_*: the planner re-run
 * with the recorded width, workers and calibration), and so are its grain, workers and
 * implementation. Peer cases carry "-". Returns 0, or 1 with the reason in why. */
static int check_case_config(const cJSON *rec, const cJSON *c, const xir_program *p,
                             const xir_shape *sh, char *why, size_t cap) {
  const char *cfg = jstr(c, "config"), *cand = jstr(c, "candidate"), *grain = jstr(c, "grain");
  const char *impl = jstr(c, "implementation");
  if (!strncmp(cfg, "peer:", 5) || !strncmp(cfg, "ext:", 4) || !strncmp(cfg, "probe:", 6)) {
    const char *want = !strncmp(cfg, "peer:", 5) ? "C peer"
                       : !strncmp(cfg, "ext:", 4) ? "external peer" : "stream probe";
    if (strcmp(cand, "-") || strcmp(grain, "-") || strcmp(impl, want) ||
        cJSON_GetObjectItem(c, "workers") || cJSON_GetObjectItem(c, "ir_sha256")) {
      snprintf(why, cap, "peer case %s records candidate '%s', grain '%s', implementation '%s' "
               "(a peer has candidate '-', grain '-', implementation '%s', no workers or code hashes)",
               cfg, cand, grain, impl, want);
      return 1;
    }
    return 0;
  }
  const cJSON *prov = cJSON_GetObjectItemCaseSensitive(rec, "provenance");
  uint32_t W = (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItem(prov, "simd_width"));
  uint32_t pool = (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItem(rec, "workers"));
  xir_candidate cd, want;
  xir_diag d;
  if (xir_candidate_parse(p, sh, cand, W, &cd, &d)) {
    snprintf(why, cap, "candidate '%s' does not parse: %.700s", cand, d.msg);
    return 1;
  }
  char name[160], wname[160];
  xir_candidate_name(p, &cd, name, sizeof name);
  if (strcmp(name, cand)) {
    snprintf(why, cap, "candidate '%s' is not in canonical form ('%s')", cand, name);
    return 1;
  }
  uint32_t g = 0, workers = pool;
  int bad_grain = strcmp(grain, "max") ? cli_parse_u32(grain, 0, &g) != 0 : (g = UINT32_MAX, 0);
  if (bad_grain) {
    snprintf(why, cap, "grain '%s' is not a task grain (a number or max)", grain);
    return 1;
  }
  uint32_t want_g;
  if (!strncmp(cfg, "fixed:", 6)) {
    unsigned l = 0, B = 0, h = 0;
    char gs[16] = "";
    if (sscanf(cfg + 6, "l=%u,B=%u,G=%15[^,],H=%u", &l, &B, gs, &h) < 3) {
      snprintf(why, cap, "configuration '%s' cannot be read", cfg);
      return 1;
    }
    if (h) workers = h;
    uint8_t perm[XIR_MAX_ROOT];
    for (int k = 0; k < xir_program_num_root(p); k++) perm[k] = (uint8_t)k;
    if (xir_candidate_make(p, sh, W, B, l, perm, &want, &d)) {
      snprintf(why, cap, "configuration '%s' gives no candidate: %.700s", cfg, d.msg);
      return 1;
    }
    want_g = !strcmp(gs, "max") ? UINT32_MAX : (uint32_t)strtoul(gs, NULL, 10);
  } else {
    xir_plan_options o;
    xir_cost_coefficients coef, service;
    xir_calibration k, *kp = NULL;
    const cJSON *cal = cJSON_GetObjectItem(prov, "calibration");
    if (cal) {
      if (bench_calibration_from_json(cal, &k, why, cap)) return 1;
      kp = &k;
    } else if (!strcmp(cfg, "joint_calibrated")) {
      snprintf(why, cap, "a joint_calibrated case without the calibration in the provenance");
      return 1;
    }
    const cJSON *sv = cJSON_GetObjectItem(prov, "service_coefficients");
    int have_service = sv != NULL;
    if (sv && bench_coefficients_from_json(sv, &service, why, cap)) return 1;
    if (bench_config_options(cfg, W, &workers, kp, have_service ? &service : NULL, &o, &coef, &d)) {
      snprintf(why, cap, "%.700s", d.msg);
      return 1;
    }
    o.workers = workers;
    xir_plan *pl;
    if (xir_plan_make(p, sh, &o, &pl, &d)) {
      snprintf(why, cap, "the planner cannot re-plan %s: %.700s", cfg, d.msg);
      return 1;
    }
    want = pl->entries[0].cand;
    want_g = pl->entries[0].work.grain;
    xir_plan_free(pl);
  }
  xir_candidate_name(p, &want, wname, sizeof wname);
  if (strcmp(wname, cand)) {
    snprintf(why, cap, "candidate '%s' is not the one configuration %s gives ('%s')", cand, cfg, wname);
    return 1;
  }
  if (g != want_g) {
    snprintf(why, cap, "grain '%s' is not the one configuration %s gives (%u)", grain, cfg, want_g);
    return 1;
  }
  double rw = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "workers"));
  if (rw != (double)workers) {
    snprintf(why, cap, "workers %g is not the %u that configuration %s runs on", rw, workers, cfg);
    return 1;
  }
  if (strcmp(impl, xir_impl_kind_name(want.kind))) {
    snprintf(why, cap, "implementation '%s' is not the candidate's (%s)", impl, xir_impl_kind_name(want.kind));
    return 1;
  }
  return 0;
}

/* The oracle's tolerance, re-derived: every element passes when |y - ref| <= atol + rtol |ref|
 * (check.h), so a passing check has max_abs <= atol + rtol max|ref| and
 * rel_l2 <= sqrt(sum (atol + rtol |ref|)^2) / ||ref|| over the finite ref. The audit runs the
 * fp64 oracle on the regenerated inputs and holds every visit of the case to both bounds. */
typedef struct tol_bound {
  double max_abs, rel_l2;
} tol_bound;

static int oracle_bound(xir_case *cs, const char *kernel, tol_bound *b, xir_diag *d) {
  (void)kernel; /* the tolerance is the program's (NAME@bf16 is kernel NAME) */
  if (xir__case_oracle(cs, d)) return 1;
  xir_tolerance t = xir__kernel_tolerance(xir_program_name(cs->p));
  double mx = 0, s2 = 0, a2 = 0, emax = 0;
  for (int i = 0; i < xir_program_num_params(cs->p); i++) {
    if (!cs->ref[i]) continue;
    xir_param_info in;
    xir_program_param(cs->p, i, &in);
    for (size_t k = 0; k < cs->numel[i]; k++) {
      double r = cs->ref[i][k];
      if (!isfinite(r)) continue;
      double e = t.atol + t.rtol * fabs(r);
      /* a bf16/f16 output: plus half an ulp at y, and |y| < 2 (|r| + e) */
      e += xir__half_ulp(in.elem, 2 * (fabs(r) + e));
      mx = fabs(r) > mx ? fabs(r) : mx;
      emax = e > emax ? e : emax;
      s2 += r * r;
      a2 += e * e;
    }
  }
  b->max_abs = (t.atol + t.rtol * mx > emax ? t.atol + t.rtol * mx : emax) * (1 + 1e-12);
  b->rel_l2 = (s2 > 0 ? sqrt(a2 / s2) : sqrt(a2)) * (1 + 1e-9);
  return 0;
}

/* fixed-grain: IR, object and output must be byte-identical across G for every kernel x shape
 * (recomputed from the cases' hashes), and the records' grain_identity must say so. */
static int check_grain_identity(const char *dir, const cJSON *rec) {
  if (strcmp(jstr(rec, "suite"), "fixed-grain")) {
    if (cJSON_GetObjectItem(rec, "grain_identity"))
      return reject(dir, "records from another configuration: grain_identity in a %s suite%s",
                    jstr(rec, "suite"), "");
    return 0;
  }
  const cJSON *cases = cJSON_GetObjectItem(rec, "cases"), *a, *b;
  int groups = 0;
  cJSON_ArrayForEach(a, cases) {
    if (strncmp(jstr(a, "config"), "fixed:", 6)) continue;
    int first = 1;
    for (const cJSON *x = cases->child; x != a; x = x->next)
      if (!strncmp(jstr(x, "config"), "fixed:", 6) && !strcmp(jstr(x, "kernel"), jstr(a, "kernel")) &&
          !strcmp(jstr(x, "shape"), jstr(a, "shape")))
        first = 0;
    if (!first) continue;
    groups++;
    cJSON_ArrayForEach(b, cases) {
      if (strncmp(jstr(b, "config"), "fixed:", 6) || strcmp(jstr(b, "kernel"), jstr(a, "kernel")) ||
          strcmp(jstr(b, "shape"), jstr(a, "shape")))
        continue;
      static const char *h[] = {"ir_sha256", "obj_sha256", "output_sha256"};
      for (int k = 0; k < 3; k++)
        if (strcmp(jstr(a, h[k]), jstr(b, h[k]))) {
          char what[600];
          snprintf(what, sizeof what, "%s %s: %s differs between %s and %s", jstr(a, "kernel"),
                   jstr(a, "shape"), h[k], jstr(a, "config"), jstr(b, "config"));
          return reject(dir, "task grain changed the code or the output: %s%s", what, "");
        }
    }
    int listed = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(rec, "grain_identity"))
      if (!strcmp(jstr(g, "kernel"), jstr(a, "kernel")) && !strcmp(jstr(g, "shape"), jstr(a, "shape")))
        listed = 1;
    if (!listed)
      return reject(dir, "grain_identity does not list %s %s", jstr(a, "kernel"), jstr(a, "shape"));
  }
  if (cJSON_GetArraySize(cJSON_GetObjectItem(rec, "grain_identity")) != groups)
    return reject(dir, "grain_identity does not follow from the cases' hashes%s%s", "", "");
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(rec, "grain_identity")) {
    if (!cJSON_IsTrue(cJSON_GetObjectItem(c, "ir_identical")) ||
        !cJSON_IsTrue(cJSON_GetObjectItem(c, "obj_identical")) ||
        !cJSON_IsTrue(cJSON_GetObjectItem(c, "output_identical")))
      return reject(dir, "task grain changed the code or the output of %s %s", jstr(c, "kernel"), jstr(c, "shape"));
  }
  return 0;
}

int cmd_audit(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: xir audit DIR\n\n"
           "Reads DIR/raw.json.gz written by xir bench, recomputes every statistic from the raw\n"
           "samples and checks the records: the samples' digest, every visit (none missing or\n"
           "duplicated, each round in its declared order), every p50 and summary, every oracle\n"
           "check, the input fingerprints (regenerated from the seed), the suite's configuration,\n"
           "and that this very binary produced them. Exit status 1 with the reason otherwise.\n");
    return 0;
  }
  if (argc != 2) return cli_usage_error("audit", "needs exactly one DIR");
  const char *dir = argv[1];
  char path[4096];
  snprintf(path, sizeof path, "%s/raw.json.gz", dir);
  cJSON *rec;
  xir_diag d;
  if (xir__json_read_gz(path, &rec, &d)) {
    if (d.status == XIR_ERR_FORMAT) return reject(dir, "%s%s", d.msg, "");
    return cli_fail(&d);
  }
  int rc = 0;
  if (xir__bench_audit_records(rec, &d)) {
    rc = reject(dir, "%s%s", d.msg, "");
    goto out;
  }
  char hex[65];
  bench_binary_sha(hex);
  const char *rb = jstr(cJSON_GetObjectItemCaseSensitive(rec, "provenance"), "binary_sha256");
  if (strcmp(rb, hex) != 0) {
    rc = reject(dir, "records from another binary: they were written by %s, this is %s", rb, hex);
    goto out;
  }
  if ((rc = check_configuration(dir, rec))) goto out;
  /* per case: the configuration's candidate, grain and workers; the input fingerprint,
   * regenerated from the seed; the oracle's tolerance, re-derived on those inputs */
  uint64_t seed = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(rec, "seed"));
  const cJSON *c;
  int ci = 0;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(rec, "cases")) {
    xir_program *p;
    xir_shape sh;
    xir_case cs;
    char what[512], why[1024];
    snprintf(what, sizeof what, "%s %s %s", jstr(c, "kernel"), jstr(c, "shape"), jstr(c, "config"));
    if (bench_load_kernel(jstr(c, "kernel"), &p, &d) || xir_shape_parse(p, jstr(c, "shape"), &sh, &d)) {
      rc = reject(dir, "a case cannot be rebuilt: %s%s", d.msg, "");
      goto out;
    }
    if (check_case_config(rec, c, p, &sh, why, sizeof why)) {
      xir_program_free(p);
      rc = reject(dir, "records from another configuration: case %s: %s", what, why);
      goto out;
    }
    if (xir__case_init(&cs, p, &sh, seed, &d)) {
      xir_program_free(p);
      rc = reject(dir, "a case cannot be rebuilt: %s%s", d.msg, "");
      goto out;
    }
    char fp[65];
    xir__case_input_fingerprint(&cs, fp);
    if (strcmp(fp, jstr(c, "input_sha256")) != 0) {
      xir__case_free(&cs);
      xir_program_free(p);
      rc = reject(dir, "changed input fingerprint: %s records %s", what, jstr(c, "input_sha256"));
      goto out;
    }
    tol_bound tb;
    if (oracle_bound(&cs, jstr(c, "kernel"), &tb, &d)) {
      xir__case_free(&cs);
      xir_program_free(p);
      rc = reject(dir, "the oracle cannot be re-run: %s%s", d.msg, "");
      goto out;
    }
    xir__case_free(&cs);
    xir_program_free(p);
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(rec, "visits")) {
      if ((int)cJSON_GetNumberValue(cJSON_GetObjectItem(v, "case")) != ci) continue;
      const cJSON *chk = cJSON_GetObjectItem(v, "check");
      double ma = cJSON_GetNumberValue(cJSON_GetObjectItem(chk, "max_abs"));
      double rl = cJSON_GetNumberValue(cJSON_GetObjectItem(chk, "rel_l2"));
      if (!(ma <= tb.max_abs) || !(rl <= tb.rel_l2)) {
        snprintf(why, sizeof why, "round %g records max_abs %.3g, rel_l2 %.3g; passing needs max_abs <= %.3g "
                 "and rel_l2 <= %.3g (the kernel's tolerance on the re-run oracle)",
                 cJSON_GetNumberValue(cJSON_GetObjectItem(v, "round")), ma, rl, tb.max_abs, tb.rel_l2);
        rc = reject(dir, "failed oracle check: %s: %s", what, why);
        goto out;
      }
    }
    ci++;
  }
  if ((rc = check_grain_identity(dir, rec))) goto out;
  printf("xir audit: %s: OK — %d cases, %d visits, %d comparisons recomputed from the raw samples\n",
         dir, cJSON_GetArraySize(cJSON_GetObjectItem(rec, "cases")),
         cJSON_GetArraySize(cJSON_GetObjectItem(rec, "visits")),
         cJSON_GetArraySize(cJSON_GetObjectItem(rec, "comparisons")));
out:
  cJSON_Delete(rec);
  return rc;
}

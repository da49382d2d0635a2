/* cmd_audit.c — `xir audit DIR`: recompute every statistic from the raw records and reject, with
 * a named reason, anything that does not follow: changed samples, summaries that do not follow
 * from their samples, missing/duplicated/out-of-order visits, changed input fingerprints, failed
 * or missing oracle checks, records from another binary or configuration. */
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
  const char *names[4];
  int np = 0;
  const cJSON *pn;
  cJSON_ArrayForEach(pn, cJSON_GetObjectItemCaseSensitive(rec, "peers")) if (np < 4 && cJSON_IsString(pn))
      names[np++] = pn->valuestring;
  bench_set_ext_peers(names, np);
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
  if (xir__json_read_gz(path, &rec, &d)) return cli_fail(&d);
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
  /* input fingerprints, regenerated from the seed */
  uint64_t seed = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(rec, "seed"));
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(rec, "cases")) {
    xir_program *p;
    xir_shape sh;
    xir_case cs;
    if (xir_kernel_load(jstr(c, "kernel"), &p, &d) || xir_shape_parse(p, jstr(c, "shape"), &sh, &d)) {
      rc = reject(dir, "a case cannot be rebuilt: %s%s", d.msg, "");
      goto out;
    }
    if (xir__case_init(&cs, p, &sh, seed, &d)) {
      xir_program_free(p);
      rc = reject(dir, "a case cannot be rebuilt: %s%s", d.msg, "");
      goto out;
    }
    char fp[65];
    xir__case_input_fingerprint(&cs, fp);
    xir__case_free(&cs);
    xir_program_free(p);
    if (strcmp(fp, jstr(c, "input_sha256")) != 0) {
      char what[512];
      snprintf(what, sizeof what, "%s %s %s", jstr(c, "kernel"), jstr(c, "shape"), jstr(c, "config"));
      rc = reject(dir, "changed input fingerprint: %s records %s", what, jstr(c, "input_sha256"));
      goto out;
    }
  }
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(rec, "grain_identity")) {
    if (!cJSON_IsTrue(cJSON_GetObjectItem(c, "ir_identical")) ||
        !cJSON_IsTrue(cJSON_GetObjectItem(c, "obj_identical")) ||
        !cJSON_IsTrue(cJSON_GetObjectItem(c, "output_identical"))) {
      rc = reject(dir, "task grain changed the code or the output of %s %s", jstr(c, "kernel"), jstr(c, "shape"));
      goto out;
    }
  }
  printf("xir audit: %s: OK — %d cases, %d visits, %d comparisons recomputed from the raw samples\n",
         dir, cJSON_GetArraySize(cJSON_GetObjectItem(rec, "cases")),
         cJSON_GetArraySize(cJSON_GetObjectItem(rec, "visits")),
         cJSON_GetArraySize(cJSON_GetObjectItem(rec, "comparisons")));
out:
  cJSON_Delete(rec);
  return rc;
}

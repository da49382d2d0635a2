/* records.c — gzip'd JSON records, the protocol's statistics and the record audit (records.h). */
#include "bench/records.h"

#include <errno.h>
#include <math.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "util/util.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

double xir__median(double *v, size_t n) {
  if (!n) return NAN;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

xir_status xir__json_write_gz(const char *path, const cJSON *root, xir_diag *d) {
  char *text = cJSON_PrintUnformatted(root);
  if (!text) return xir__err(d, XIR_ERR_NOMEM, "out of memory printing records");
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  gzFile f = gzopen(tmp, "wb9");
  if (!f) {
    cJSON_free(text);
    return xir__err(d, XIR_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  }
  size_t n = strlen(text);
  int ok = gzwrite(f, text, (unsigned)n) == (int)n;
  ok &= gzclose(f) == Z_OK;
  cJSON_free(text);
  if (!ok || rename(tmp, path) != 0) {
    remove(tmp);
    return xir__err(d, XIR_ERR_IO, "cannot write '%s'", path);
  }
  return XIR_OK;
}

xir_status xir__json_read_gz(const char *path, cJSON **root, xir_diag *d) {
  *root = NULL;
  gzFile f = gzopen(path, "rb");
  if (!f) return xir__err(d, XIR_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
  size_t cap = 0, len = 0;
  char *buf = NULL;
  for (;;) {
    if (xir__grow((void **)&buf, &cap, len + 65536 + 1, 1)) {
      gzclose(f);
      xir__free(buf);
      return xir__err(d, XIR_ERR_NOMEM, "out of memory reading '%s'", path);
    }
    int n = gzread(f, buf + len, 65536);
    if (n < 0) {
      gzclose(f);
      xir__free(buf);
      return xir__err(d, XIR_ERR_FORMAT, "'%s' is not a readable gzip file", path);
    }
    if (n == 0) break;
    len += (size_t)n;
  }
  gzclose(f);
  buf[len] = 0;
  *root = cJSON_ParseWithLength(buf, len);
  xir__free(buf);
  if (!*root) return xir__err(d, XIR_ERR_FORMAT, "'%s' is not valid JSON", path);
  return XIR_OK;
}

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

void xir__bench_samples_digest(const cJSON *records, char hex[65]) {
  struct sha256_ctx h;
  sha256_init(&h);
  const cJSON *visits = cJSON_GetObjectItemCaseSensitive(records, "visits"), *v;
  cJSON_ArrayForEach(v, visits) {
    char line[128];
    int n = snprintf(line, sizeof line, "%.0f %.0f %.0f", num(v, "round"), num(v, "case"),
                     num(v, "n"));
    sha256_update(&h, (size_t)n, (const uint8_t *)line);
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(v, "samples_ns")) {
      n = snprintf(line, sizeof line, " %.17g", cJSON_IsNumber(s) ? s->valuedouble : NAN);
      sha256_update(&h, (size_t)n, (const uint8_t *)line);
    }
    sha256_update(&h, 1, (const uint8_t *)"\n");
  }
  uint8_t dig[SHA256_DIGEST_SIZE];
  sha256_digest(&h, sizeof dig, dig);
  for (int i = 0; i < SHA256_DIGEST_SIZE; i++) snprintf(hex + 2 * i, 3, "%02x", dig[i]);
}

/* p50 (ns per launch) of one visit, from its samples; NaN when malformed. */
static double visit_p50(const cJSON *v) {
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(v, "samples_ns"), *s;
  double n = num(v, "n"), buf[256];
  size_t k = 0;
  if (!cJSON_IsArray(arr) || !(n >= 1)) return NAN;
  cJSON_ArrayForEach(s, arr) {
    if (!cJSON_IsNumber(s) || k >= 256) return NAN;
    buf[k++] = s->valuedouble / n;
  }
  return xir__median(buf, k);
}

xir_status xir__bench_summarize(cJSON *records, xir_diag *d) {
  cJSON *visits = cJSON_GetObjectItemCaseSensitive(records, "visits");
  const cJSON *cases = cJSON_GetObjectItemCaseSensitive(records, "cases");
  const cJSON *comps = cJSON_GetObjectItemCaseSensitive(records, "comparisons");
  int ncases = cJSON_GetArraySize(cases);
  int rounds = (int)num(records, "rounds");
  if (!cJSON_IsArray(visits) || ncases <= 0 || rounds <= 0)
    return xir__err(d, XIR_ERR_FORMAT, "records lack visits, cases or rounds");
  double *p50 = xir__malloc(sizeof(double) * (size_t)ncases * (size_t)rounds);
  if (!p50) return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  for (int i = 0; i < ncases * rounds; i++) p50[i] = NAN;
  cJSON *v;
  cJSON_ArrayForEach(v, visits) {
    double p = visit_p50(v);
    cJSON_DeleteItemFromObjectCaseSensitive(v, "p50_ns");
    cJSON_AddNumberToObject(v, "p50_ns", p);
    int r = (int)num(v, "round"), c = (int)num(v, "case");
    if (r >= 0 && r < rounds && c >= 0 && c < ncases) p50[r * ncases + c] = p;
  }
  cJSON *summary = cJSON_CreateObject();
  cJSON *sc = cJSON_AddArrayToObject(summary, "cases");
  double tmp[1024];
  for (int c = 0; c < ncases; c++) {
    size_t k = 0;
    double mn = INFINITY, mx = -INFINITY;
    for (int r = 0; r < rounds && k < 1024; r++) {
      double p = p50[r * ncases + c];
      if (isnan(p)) continue;
      tmp[k++] = p;
      mn = p < mn ? p : mn;
      mx = p > mx ? p : mx;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "case", c);
    cJSON_AddNumberToObject(o, "median_p50_ns", xir__median(tmp, k));
    cJSON_AddNumberToObject(o, "min_p50_ns", k ? mn : NAN);
    cJSON_AddNumberToObject(o, "max_p50_ns", k ? mx : NAN);
    cJSON_AddItemToArray(sc, o);
  }
  cJSON *scmp = cJSON_AddArrayToObject(summary, "comparisons");
  const cJSON *cmp;
  cJSON_ArrayForEach(cmp, comps) {
    int b = (int)num(cmp, "baseline"), va = (int)num(cmp, "variant");
    size_t k = 0;
    double mn = INFINITY, mx = -INFINITY;
    for (int r = 0; r < rounds && k < 1024; r++) {
      if (b < 0 || b >= ncases || va < 0 || va >= ncases) break;
      double x = p50[r * ncases + va] / p50[r * ncases + b];
      if (isnan(x)) continue;
      tmp[k++] = x;
      mn = x < mn ? x : mn;
      mx = x > mx ? x : mx;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "baseline", b);
    cJSON_AddNumberToObject(o, "variant", va);
    cJSON_AddNumberToObject(o, "median_ratio", xir__median(tmp, k));
    cJSON_AddNumberToObject(o, "min_ratio", k ? mn : NAN);
    cJSON_AddNumberToObject(o, "max_ratio", k ? mx : NAN);
    cJSON_AddItemToArray(scmp, o);
  }
  char hex[65];
  xir__bench_samples_digest(records, hex);
  cJSON_AddStringToObject(summary, "samples_sha256", hex);
  cJSON_DeleteItemFromObjectCaseSensitive(records, "summary");
  cJSON_AddItemToObject(records, "summary", summary);
  xir__free(p50);
  return XIR_OK;
}

/* Exact comparison of two numbers as the JSON round trip gives them (NaN equals NaN). */
static int same(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return fabs(a - b) <= 1e-9 * fabs(b);
}

xir_status xir__bench_audit_records(const cJSON *records, xir_diag *d) {
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(records, "format");
  if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, XIR_BENCH_FORMAT) != 0)
    return xir__err(d, XIR_ERR_FORMAT, "not xir benchmark records (format '%s')",
                    cJSON_IsString(fmt) ? fmt->valuestring : "missing");
  const cJSON *cases = cJSON_GetObjectItemCaseSensitive(records, "cases");
  const cJSON *orders = cJSON_GetObjectItemCaseSensitive(records, "orders");
  const cJSON *visits = cJSON_GetObjectItemCaseSensitive(records, "visits");
  const cJSON *summary = cJSON_GetObjectItemCaseSensitive(records, "summary");
  int ncases = cJSON_GetArraySize(cases), rounds = (int)num(records, "rounds");
  int norders = cJSON_GetArraySize(orders);
  if (ncases <= 0 || rounds <= 0 || norders <= 0 || !cJSON_IsArray(visits) || !summary)
    return xir__err(d, XIR_ERR_FORMAT, "records are incomplete (cases, rounds, orders, visits, summary)");
  int nsamples = (int)num(records, "samples");
  /* visits: complete, unique, in the declared order of their round */
  int expect_visits = ncases * rounds;
  if (cJSON_GetArraySize(visits) < expect_visits)
    return xir__err(d, XIR_ERR_FORMAT, "missing visit: %d visits recorded, %d cases x %d rounds "
                    "declared", cJSON_GetArraySize(visits), ncases, rounds);
  if (cJSON_GetArraySize(visits) > expect_visits)
    return xir__err(d, XIR_ERR_FORMAT, "duplicated visit: %d visits recorded, %d cases x %d "
                    "rounds declared", cJSON_GetArraySize(visits), ncases, rounds);
  char *seen = xir__calloc((size_t)expect_visits, 1);
  if (!seen) return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  int idx = 0;
  xir_status st = XIR_OK;
  const cJSON *v;
  cJSON_ArrayForEach(v, visits) {
    int r = (int)num(v, "round"), c = (int)num(v, "case"), pos = (int)num(v, "position");
    if (r < 0 || r >= rounds || c < 0 || c >= ncases) {
      st = xir__err(d, XIR_ERR_FORMAT, "visit %d names round %d / case %d, outside the declared "
                    "%d rounds x %d cases", idx, r, c, rounds, ncases);
      break;
    }
    if (seen[r * ncases + c]++) {
      st = xir__err(d, XIR_ERR_FORMAT, "duplicated visit: case %d in round %d", c, r);
      break;
    }
    const cJSON *order = cJSON_GetArrayItem(orders, r % norders);
    const cJSON *want = cJSON_GetArrayItem(order, pos);
    if (idx / ncases != r || pos != idx % ncases || !cJSON_IsNumber(want) || (int)want->valuedouble != c) {
      st = xir__err(d, XIR_ERR_FORMAT, "visit order differs from the declared one: visit %d is "
                    "case %d at position %d of round %d, the declared order has case %d there",
                    idx, c, pos, r, cJSON_IsNumber(want) ? (int)want->valuedouble : -1);
      break;
    }
    const cJSON *smp = cJSON_GetObjectItemCaseSensitive(v, "samples_ns"), *s;
    if (cJSON_GetArraySize(smp) != nsamples) {
      st = xir__err(d, XIR_ERR_FORMAT, "visit %d (case %d, round %d) has %d samples, %d declared",
                    idx, c, r, cJSON_GetArraySize(smp), nsamples);
      break;
    }
    cJSON_ArrayForEach(s, smp) if (!cJSON_IsNumber(s) || !(s->valuedouble > 0)) {
      st = xir__err(d, XIR_ERR_FORMAT, "visit %d (case %d, round %d) has a sample that is not a "
                    "positive number", idx, c, r);
      break;
    }
    if (st) break;
    const cJSON *chk = cJSON_GetObjectItemCaseSensitive(v, "check");
    if (!chk || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(chk, "pass"))) {
      st = xir__err(d, XIR_ERR_FORMAT, "failed or missing oracle check: case %d, round %d", c, r);
      break;
    }
    idx++;
  }
  xir__free(seen);
  if (st) return st;
  /* the digest, then every statistic recomputed */
  char hex[65];
  xir__bench_samples_digest(records, hex);
  const cJSON *dg = cJSON_GetObjectItemCaseSensitive(summary, "samples_sha256");
  if (!cJSON_IsString(dg) || strcmp(dg->valuestring, hex) != 0)
    return xir__err(d, XIR_ERR_FORMAT, "changed sample: the samples' digest is %s, the records "
                    "say %s", hex, cJSON_IsString(dg) ? dg->valuestring : "nothing");
  cJSON *copy = cJSON_Duplicate(records, 1);
  if (!copy) return xir__err(d, XIR_ERR_NOMEM, "out of memory");
  if ((st = xir__bench_summarize(copy, d))) {
    cJSON_Delete(copy);
    return st;
  }
  const cJSON *cv = cJSON_GetObjectItemCaseSensitive(copy, "visits"), *w;
  int i = 0;
  v = visits->child;
  cJSON_ArrayForEach(w, cv) {
    if (!same(num(v, "p50_ns"), num(w, "p50_ns"))) {
      st = xir__err(d, XIR_ERR_FORMAT, "a summary does not follow from its samples: visit %d's "
                    "p50 is recorded as %.17g, its samples give %.17g", i, num(v, "p50_ns"),
                    num(w, "p50_ns"));
      break;
    }
    v = v->next;
    i++;
  }
  const char *lists[2] = {"cases", "comparisons"};
  const char *fields[2][3] = {{"median_p50_ns", "min_p50_ns", "max_p50_ns"},
                              {"median_ratio", "min_ratio", "max_ratio"}};
  for (int l = 0; l < 2 && !st; l++) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(summary, lists[l]);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "summary"), lists[l]);
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) {
      st = xir__err(d, XIR_ERR_FORMAT, "a summary does not follow from its samples: %d %s "
                    "summarized, %d expected", cJSON_GetArraySize(a), lists[l], cJSON_GetArraySize(b));
      break;
    }
    for (int k = 0; k < cJSON_GetArraySize(a) && !st; k++)
      for (int f = 0; f < 3 && !st; f++) {
        double x = num(cJSON_GetArrayItem(a, k), fields[l][f]);
        double y = num(cJSON_GetArrayItem(b, k), fields[l][f]);
        if (!same(x, y))
          st = xir__err(d, XIR_ERR_FORMAT, "a summary does not follow from its samples: %s[%d]."
                        "%s is recorded as %.17g, the samples give %.17g", lists[l], k,
                        fields[l][f], x, y);
      }
  }
  cJSON_Delete(copy);
  return st;
}

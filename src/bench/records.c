/* records.c — gzip'd JSON records, the protocol's statistics and the record audit (records.h). */
#include "bench/records.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "bench/python_side.h"
#include "util/sha256.h"
#include "util/util.h"
#include "xir_runtime.h"

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

uint64_t xir__records_max_bytes(void) {
  const char *e = getenv("XIR_RECORDS_MAX_BYTES");
  if (e && *e >= '0' && *e <= '9') {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(e, &end, 10);
    if (!errno && !*end && v > 0) return (uint64_t)v;
  }
  return XIR_RECORDS_MAX_BYTES;
}

xir_status xir__json_read_gz_capped(const char *path, uint64_t cap, cJSON **root, xir_diag *d) {
  *root = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return xir__err(d, XIR_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 16) != Z_OK) { /* gzip only: one member, header and trailer */
    fclose(f);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory reading '%s'", path);
  }
  static const size_t kIn = 65536;
  unsigned char *in = xir__malloc(kIn);
  char *buf = NULL;
  size_t bcap = 0, len = 0;
  xir_status st = XIR_OK;
  int zr = Z_OK, first = 1;
  if (!in) st = xir__err(d, XIR_ERR_NOMEM, "out of memory reading '%s'", path);
  while (!st && zr != Z_STREAM_END) {
    if (z.avail_in == 0) {
      size_t n = fread(in, 1, kIn, f);
      if (n == 0) {
        st = ferror(f) ? xir__err(d, XIR_ERR_IO, "cannot read '%s'", path)
                       : xir__err(d, XIR_ERR_FORMAT, "'%s' is a truncated gzip stream: it ends "
                                  "before the end of its member (CRC and size trailer missing)", path);
        break;
      }
      if (first && (n < 2 || in[0] != 0x1f || in[1] != 0x8b)) {
        st = xir__err(d, XIR_ERR_FORMAT, "'%s' is not a gzip file", path);
        break;
      }
      first = 0;
      z.next_in = in;
      z.avail_in = (uInt)n;
    }
    if (len + 65536 + 1 > bcap && xir__grow((void **)&buf, &bcap, len + 65536 + 1, 1)) {
      st = xir__err(d, XIR_ERR_NOMEM, "out of memory reading '%s'", path);
      break;
    }
    z.next_out = (unsigned char *)buf + len;
    z.avail_out = (uInt)(bcap - len - 1 < 65536 ? bcap - len - 1 : 65536);
    uInt before = z.avail_out;
    zr = inflate(&z, Z_NO_FLUSH);
    len += before - z.avail_out;
    if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
      st = xir__err(d, XIR_ERR_FORMAT, "'%s' is a corrupt gzip stream (%s)", path,
                    z.msg ? z.msg : "inflate failed");
      break;
    }
    if (len > cap) {
      st = xir__err(d, XIR_ERR_FORMAT, "'%s' decompresses to more than %llu bytes, the cap on "
                    "records (XIR_RECORDS_MAX_BYTES; a gzip bomb or not xir records): refused",
                    path, (unsigned long long)cap);
      break;
    }
  }
  if (!st) {
    /* the member must end the file: nothing after its trailer */
    int extra = z.avail_in > 0;
    if (!extra) {
      unsigned char c;
      extra = fread(&c, 1, 1, f) == 1;
    }
    if (extra)
      st = xir__err(d, XIR_ERR_FORMAT, "'%s' has garbage after the gzip member (the records are "
                    "one gzip member and nothing else)", path);
  }
  inflateEnd(&z);
  fclose(f);
  xir__free(in);
  if (!st) {
    buf[len] = 0;
    if (memchr(buf, 0, len))
      st = xir__err(d, XIR_ERR_FORMAT, "'%s' holds a NUL byte: not JSON text", path);
  }
  if (!st) {
    const char *endp = NULL;
    *root = cJSON_ParseWithLengthOpts(buf, len + 1, &endp, 1);
    if (!*root) {
      /* garbage after a complete value, or not JSON at all */
      cJSON *prefix = cJSON_ParseWithLengthOpts(buf, len + 1, NULL, 0);
      if (prefix) {
        cJSON_Delete(prefix);
        st = xir__err(d, XIR_ERR_FORMAT, "'%s' has garbage after the JSON value", path);
      } else {
        st = xir__err(d, XIR_ERR_FORMAT, "'%s' is not valid JSON", path);
      }
    }
  }
  xir__free(buf);
  return st;
}

xir_status xir__json_read_gz(const char *path, cJSON **root, xir_diag *d) {
  return xir__json_read_gz_capped(path, xir__records_max_bytes(), root, d);
}

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

void xir__bench_samples_digest(const cJSON *records, char hex[65]) {
  xir__sha256 h;
  xir__sha256_init(&h);
  const cJSON *visits = cJSON_GetObjectItemCaseSensitive(records, "visits"), *v;
  cJSON_ArrayForEach(v, visits) {
    char line[128];
    int n = snprintf(line, sizeof line, "%.0f %.0f %.0f", num(v, "round"), num(v, "case"),
                     num(v, "n"));
    xir__sha256_update(&h, line, (size_t)n);
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(v, "samples_ns")) {
      n = snprintf(line, sizeof line, " %.17g", cJSON_IsNumber(s) ? s->valuedouble : NAN);
      xir__sha256_update(&h, line, (size_t)n);
    }
    xir__sha256_update(&h, "\n", 1);
  }
  xir__sha256_final_hex(&h, hex);
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
  /* the peers suite's Python side (python_side.h), from the same p50s */
  cJSON *py = xir__bench_python_side(records, p50, ncases, rounds);
  if (py) cJSON_AddItemToObject(summary, "python_side", py);
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

/* A number as the JSON round trip gives it: NaN is written as null. */
static double jval(const cJSON *v) { return cJSON_IsNumber(v) ? v->valuedouble : NAN; }

/* Compares a recorded JSON value with its recomputation: numbers by same() (null = NaN), strings
 * exactly, objects member by member (the same members), arrays item by item. 0 when equal, else
 * 1 with the path of the first difference (and both values) in what. */
static int json_differs(const cJSON *rec, const cJSON *want, char *path, size_t cap, char *what,
                        size_t wcap) {
  size_t len = strlen(path);
  if ((cJSON_IsNumber(want) || cJSON_IsNull(want)) && (cJSON_IsNumber(rec) || cJSON_IsNull(rec))) {
    if (same(jval(rec), jval(want))) return 0;
    snprintf(what, wcap, "%s is recorded as %.17g, the samples give %.17g", path, jval(rec), jval(want));
    return 1;
  }
  if (cJSON_IsString(want) && cJSON_IsString(rec)) {
    if (!strcmp(rec->valuestring, want->valuestring)) return 0;
    snprintf(what, wcap, "%s is recorded as \"%.80s\", the records give \"%.80s\"", path,
             rec->valuestring, want->valuestring);
    return 1;
  }
  if ((cJSON_IsObject(want) && cJSON_IsObject(rec)) || (cJSON_IsArray(want) && cJSON_IsArray(rec))) {
    int obj = cJSON_IsObject(want);
    if (cJSON_GetArraySize(rec) != cJSON_GetArraySize(want)) {
      snprintf(what, wcap, "%s has %d %s, the samples give %d", path, cJSON_GetArraySize(rec),
               obj ? "members" : "items", cJSON_GetArraySize(want));
      return 1;
    }
    const cJSON *w;
    int i = 0;
    cJSON_ArrayForEach(w, want) {
      const cJSON *r = obj ? cJSON_GetObjectItemCaseSensitive(rec, w->string) : cJSON_GetArrayItem(rec, i);
      if (obj) snprintf(path + len, len < cap ? cap - len : 0, ".%s", w->string);
      else snprintf(path + len, len < cap ? cap - len : 0, "[%d]", i);
      if (!r) {
        snprintf(what, wcap, "%s is missing", path);
        return 1;
      }
      if (json_differs(r, w, path, cap, what, wcap)) return 1;
      path[len] = 0;
      i++;
    }
    return 0;
  }
  snprintf(what, wcap, "%s is %s, not what the samples give", path, rec ? "of another type" : "missing");
  return 1;
}

int xir__is_sha256_hex(const char *s) {
  if (!s || strlen(s) != 64) return 0;
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

/* An integer-valued JSON number in [lo, hi]. */
static int int_in(const cJSON *v, double lo, double hi) {
  return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && v->valuedouble >= lo &&
         v->valuedouble <= hi;
}

static const char *describe(const cJSON *v, char *buf, size_t cap) {
  if (!v) return "missing";
  if (cJSON_IsString(v)) snprintf(buf, cap, "\"%.80s\"", v->valuestring);
  else if (cJSON_IsNumber(v)) snprintf(buf, cap, "%.17g", v->valuedouble);
  else if (cJSON_IsBool(v)) snprintf(buf, cap, "%s", cJSON_IsTrue(v) ? "true" : "false");
  else snprintf(buf, cap, "not a number or string");
  return buf;
}

/* The declaration's fields: types and the ranges xir bench accepts. */
static xir_status check_declaration(const cJSON *r, xir_diag *d) {
  char b[128];
  static const struct {
    const char *key;
    double lo, hi;
    int integer, open_lo;
  } f[] = {{"rounds", 1, 1000, 1, 0},      {"samples", 1, 256, 1, 0},
           {"warmup_ms", 0, 60000, 0, 1},  {"sample_ms", 0, 60000, 0, 1},
           {"settle_ms", 0, 60000, 0, 0},  {"seed", 0, 4294967295.0, 1, 0},
           {"workers", 1, XIR_RUNTIME_MAX_WORKERS, 1, 0}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, f[i].key);
    int ok = cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble <= f[i].hi &&
             (f[i].open_lo ? v->valuedouble > f[i].lo : v->valuedouble >= f[i].lo) &&
             (!f[i].integer || v->valuedouble == floor(v->valuedouble));
    if (!ok)
      return xir__err(d, XIR_ERR_FORMAT, "declaration field %s is %s: it must be %s in %s%g, %g]",
                      f[i].key, describe(v, b, sizeof b), f[i].integer ? "an integer" : "a number",
                      f[i].open_lo ? "(" : "[", f[i].lo, f[i].hi);
  }
  /* input_offset (since 2026-12-05): -1 (malloc's placement) or a multiple of 8 below 64 — the
   * rule of xir__case_offset_ok, restated: src/bench may not include src/check (architecture.md) */
  const cJSON *io = cJSON_GetObjectItemCaseSensitive(r, "input_offset");
  double iv = cJSON_IsNumber(io) ? io->valuedouble : -2;
  if (io && !(iv == -1 || (iv >= 0 && iv < 64 && iv == floor(iv) && fmod(iv, 8) == 0)))
    return xir__err(d, XIR_ERR_FORMAT, "declaration field input_offset is %s: it must be -1 or a "
                    "multiple of 8 in [0, 64)", describe(io, b, sizeof b));
  const cJSON *prov = cJSON_GetObjectItemCaseSensitive(r, "provenance");
  const cJSON *pw = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(prov, "runtime"), "workers");
  if (!cJSON_IsNumber(pw) || pw->valuedouble != num(r, "workers"))
    return xir__err(d, XIR_ERR_FORMAT, "declaration field workers is %g but the runtime's "
                    "provenance says %s", num(r, "workers"), describe(pw, b, sizeof b));
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(prov, "simd_width");
  if (!int_in(w, 1, 16) || ((int)w->valuedouble & ((int)w->valuedouble - 1)))
    return xir__err(d, XIR_ERR_FORMAT, "provenance field simd_width is %s: it must be 1, 2, 4, 8 "
                    "or 16", describe(w, b, sizeof b));
  return XIR_OK;
}

/* Every case's own fields: types and formats. */
static xir_status check_case_fields(const cJSON *r, xir_diag *d) {
  char b[128];
  const cJSON *c;
  int i = 0;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r, "cases")) {
    static const char *strs[] = {"kernel", "shape", "config", "candidate", "grain", "implementation"};
    for (size_t k = 0; k < sizeof strs / sizeof *strs; k++)
      if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, strs[k])))
        return xir__err(d, XIR_ERR_FORMAT, "case %d: field %s is %s, not a string", i, strs[k],
                        describe(cJSON_GetObjectItemCaseSensitive(c, strs[k]), b, sizeof b));
    const char *cfg = cJSON_GetObjectItemCaseSensitive(c, "config")->valuestring;
    int is_xir = strncmp(cfg, "peer:", 5) != 0 && strncmp(cfg, "ext:", 4) != 0 &&
                 strncmp(cfg, "probe:", 6) != 0;
    const char *hashes[] = {"input_sha256", "output_sha256", "ir_sha256", "obj_sha256"};
    for (int k = 0; k < (is_xir ? 4 : 2); k++) {
      const cJSON *h = cJSON_GetObjectItemCaseSensitive(c, hashes[k]);
      if (!cJSON_IsString(h) || !xir__is_sha256_hex(h->valuestring))
        return xir__err(d, XIR_ERR_FORMAT, "case %d: field %s is %s, not a SHA-256 (64 lowercase "
                        "hex digits)", i, hashes[k], describe(h, b, sizeof b));
    }
    if (is_xir) {
      const cJSON *w = cJSON_GetObjectItemCaseSensitive(c, "workers");
      if (!int_in(w, 1, num(r, "workers")))
        return xir__err(d, XIR_ERR_FORMAT, "case %d: field workers is %s: it must be an integer "
                        "in [1, %g] (the pool)", i, describe(w, b, sizeof b), num(r, "workers"));
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(c, "max_abs_err");
    if (!cJSON_IsNumber(m) || !isfinite(m->valuedouble) || m->valuedouble < 0)
      return xir__err(d, XIR_ERR_FORMAT, "case %d: field max_abs_err is %s, not a finite "
                      "non-negative number", i, describe(m, b, sizeof b));
    i++;
  }
  return XIR_OK;
}

/* A visit's oracle check: types, and pass consistent with its parts. */
static xir_status check_visit_check(const cJSON *chk, int idx, int c, int r, xir_diag *d) {
  char b[128];
  const cJSON *sent = cJSON_GetObjectItemCaseSensitive(chk, "sentinels");
  if (!cJSON_IsTrue(sent))
    return xir__err(d, XIR_ERR_FORMAT, "oracle check inconsistent: visit %d (case %d, round %d) "
                    "passes with sentinels %s (broken guards fail the check)", idx, c, r,
                    describe(sent, b, sizeof b));
  static const char *nums[] = {"max_abs", "rel_l2"};
  for (int k = 0; k < 2; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(chk, nums[k]);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
      return xir__err(d, XIR_ERR_FORMAT, "oracle check inconsistent: visit %d (case %d, round %d) "
                      "has %s = %s, not a finite non-negative number", idx, c, r, nums[k],
                      describe(v, b, sizeof b));
  }
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(chk, "output_sha256");
  if (!cJSON_IsString(h) || !xir__is_sha256_hex(h->valuestring))
    return xir__err(d, XIR_ERR_FORMAT, "visit %d (case %d, round %d): output_sha256 is %s, not a "
                    "SHA-256 (64 lowercase hex digits)", idx, c, r, describe(h, b, sizeof b));
  return XIR_OK;
}

/* Across a case's visits: the output the case records is the one every visit checked (the code
 * is deterministic: same inputs, same bytes), so every visit's hash, max_abs and rel_l2 agree, and
 * the case's max_abs_err is their maximum. External peers (ext:) are exempt from the hash rule:
 * their runtimes do not promise bit-identical reruns. */
static xir_status check_case_consistency(const cJSON *r, xir_diag *d) {
  const cJSON *cases = cJSON_GetObjectItemCaseSensitive(r, "cases");
  const cJSON *visits = cJSON_GetObjectItemCaseSensitive(r, "visits");
  int i = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cases) {
    const char *cfg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "config"));
    const char *out = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "output_sha256"));
    int exempt = cfg && strncmp(cfg, "ext:", 4) == 0;
    double worst = 0;
    const cJSON *first = NULL, *v;
    int idx = 0;
    cJSON_ArrayForEach(v, visits) {
      if ((int)num(v, "case") == i) {
        const cJSON *chk = cJSON_GetObjectItemCaseSensitive(v, "check");
        const char *h = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(chk, "output_sha256"));
        if (!exempt && (!h || !out || strcmp(h, out) != 0))
          return xir__err(d, XIR_ERR_FORMAT, "output hash inconsistent: visit %d checked output "
                          "%.64s, case %d records output_sha256 %.64s", idx, h ? h : "-", i,
                          out ? out : "-");
        if (!exempt && first &&
            (num(chk, "max_abs") != num(first, "max_abs") || num(chk, "rel_l2") != num(first, "rel_l2")))
          return xir__err(d, XIR_ERR_FORMAT, "oracle check inconsistent: visit %d of case %d "
                          "records max_abs %.17g, rel_l2 %.17g for the same output as an earlier "
                          "visit with %.17g, %.17g", idx, i, num(chk, "max_abs"),
                          num(chk, "rel_l2"), num(first, "max_abs"), num(first, "rel_l2"));
        if (!first) first = chk;
        if (num(chk, "max_abs") > worst) worst = num(chk, "max_abs");
      }
      idx++;
    }
    if (num(c, "max_abs_err") != worst)
      return xir__err(d, XIR_ERR_FORMAT, "case %d: max_abs_err %.17g is not the largest max_abs "
                      "of its visits (%.17g)", i, num(c, "max_abs_err"), worst);
    i++;
  }
  return XIR_OK;
}

xir_status xir__bench_audit_records(const cJSON *records, xir_diag *d) {
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(records, "format");
  if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, XIR_BENCH_FORMAT) != 0)
    return xir__err(d, XIR_ERR_FORMAT, "not xir benchmark records (format '%s')",
                    cJSON_IsString(fmt) ? fmt->valuestring : "missing");
  xir_status cst = check_declaration(records, d);
  if (cst) return cst;
  if ((cst = xir__bench_python_side_check(records, d))) return cst;
  const cJSON *cases = cJSON_GetObjectItemCaseSensitive(records, "cases");
  const cJSON *orders = cJSON_GetObjectItemCaseSensitive(records, "orders");
  const cJSON *visits = cJSON_GetObjectItemCaseSensitive(records, "visits");
  const cJSON *summary = cJSON_GetObjectItemCaseSensitive(records, "summary");
  int ncases = cJSON_GetArraySize(cases), rounds = (int)num(records, "rounds");
  int norders = cJSON_GetArraySize(orders);
  if (ncases <= 0 || rounds <= 0 || norders <= 0 || !cJSON_IsArray(visits) || !summary)
    return xir__err(d, XIR_ERR_FORMAT, "records are incomplete (cases, rounds, orders, visits, summary)");
  if ((cst = check_case_fields(records, d))) return cst;
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
    if (!int_in(cJSON_GetObjectItemCaseSensitive(v, "round"), 0, rounds - 1) ||
        !int_in(cJSON_GetObjectItemCaseSensitive(v, "case"), 0, ncases - 1) ||
        !int_in(cJSON_GetObjectItemCaseSensitive(v, "position"), 0, ncases - 1) ||
        !int_in(cJSON_GetObjectItemCaseSensitive(v, "n"), 1, 1e15)) {
      st = xir__err(d, XIR_ERR_FORMAT, "visit %d: round, case, position and n must be integers "
                    "within the declaration (round %g, case %g, position %g, n %g)", idx,
                    num(v, "round"), num(v, "case"), num(v, "position"), num(v, "n"));
      break;
    }
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
    if ((st = check_visit_check(chk, idx, c, r, d))) break;
    idx++;
  }
  xir__free(seen);
  if (st) return st;
  if ((st = check_case_consistency(records, d))) return st;
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
  if (!st) {
    /* the Python side's statistics (python_side.h): recomputed with the rest */
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(summary, "python_side");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "summary"), "python_side");
    char path[256] = "summary.python_side", what[1024];
    if (!a != !b)
      st = xir__err(d, XIR_ERR_FORMAT, "a summary does not follow from its samples: %s is %s, "
                    "the cases give %s", path, a ? "recorded" : "missing", b ? "one" : "none");
    else if (a && json_differs(a, b, path, sizeof path, what, sizeof what))
      st = xir__err(d, XIR_ERR_FORMAT, "a summary does not follow from its samples: %s", what);
  }
  cJSON_Delete(copy);
  return st;
}

/* python_side.c — the peers suite's Python side: statistics, the declaration's check and the
 * tables.md section (python_side.h). */
#include "bench/python_side.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#include "util/util.h"

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* A count member (n_vs_torch, ...) as an int: 0 when absent, not a number or out of range (a
 * NaN converted to int is undefined behaviour). */
static int count(const cJSON *o, const char *k) {
  double v = num(o, k);
  return v >= 0 && v <= INT_MAX ? (int)v : 0;
}

static const char *str(const cJSON *o, const char *k) {
  const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
  return s ? s : "";
}

static int is_py_config(const char *cfg) {
  return !strcmp(cfg, XIR_PY_SIDE_XIR) || !strcmp(cfg, XIR_PY_SIDE_TORCH);
}

/* The case of the same kernel and shape as case `me` with configuration cfg, or -1. */
static int sibling(const cJSON *cases, const cJSON *me, const char *cfg) {
  const cJSON *c;
  int i = 0;
  cJSON_ArrayForEach(c, cases) {
    if (!strcmp(str(c, "config"), cfg) && !strcmp(str(c, "kernel"), str(me, "kernel")) &&
        !strcmp(str(c, "shape"), str(me, "shape")))
      return i;
    i++;
  }
  return -1;
}

/* median, min, max of v[0..n) as {"median","min","max"} (NaN when n = 0: JSON null) */
static cJSON *stat3(double *v, size_t n) {
  double mn = INFINITY, mx = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    mn = v[i] < mn ? v[i] : mn;
    mx = v[i] > mx ? v[i] : mx;
  }
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "median", xir__median(v, n));
  cJSON_AddNumberToObject(o, "min", n ? mn : NAN);
  cJSON_AddNumberToObject(o, "max", n ? mx : NAN);
  return o;
}

/* The median over rounds of case c's p50 (the summary's median_p50_ns, recomputed). */
static double case_median(const double *p50, int rounds, int ncases, int c, double *tmp) {
  size_t k = 0;
  for (int r = 0; r < rounds; r++)
    if (!isnan(p50[r * ncases + c])) tmp[k++] = p50[r * ncases + c];
  return xir__median(tmp, k);
}

/* Same-round ratios (op 'r': a / b) or differences (op 'd': a − b) of cases a and b. */
static size_t paired(const double *p50, int rounds, int ncases, int a, int b, char op, double *out) {
  size_t k = 0;
  for (int r = 0; r < rounds; r++) {
    double x = p50[r * ncases + a], y = p50[r * ncases + b];
    double v = op == 'r' ? x / y : x - y;
    if (!isnan(v)) out[k++] = v;
  }
  return k;
}

/* Adds to row the other case's index (name), its median p50 (ns_key) and the paired ratio
 * me / other (key: median, min, max); returns that median. */
static double add_vs(cJSON *row, const char *name, const char *ns_key, const char *key,
                     const double *p50, int rounds, int ncases, int me, int other, double *tmp) {
  cJSON_AddNumberToObject(row, name, other);
  cJSON_AddNumberToObject(row, ns_key, case_median(p50, rounds, ncases, other, tmp));
  cJSON *s = stat3(tmp, paired(p50, rounds, ncases, me, other, 'r', tmp));
  cJSON_AddItemToObject(row, key, s);
  return num(s, "median");
}

cJSON *xir__bench_python_side(const cJSON *records, const double *p50, int ncases, int rounds) {
  const cJSON *cases = cJSON_GetObjectItemCaseSensitive(records, "cases");
  if (ncases <= 0 || rounds <= 0 || rounds > 1000 || ncases != cJSON_GetArraySize(cases))
    return NULL;
  /* records from before the Python side (no declaration): an ext:xir_python case there is an
   * external peer like any other (--peer xir_python=...), with no statistics of its own */
  if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(records, "python_side"))) return NULL;
  const cJSON *c;
  int any = 0;
  cJSON_ArrayForEach(c, cases) any |= !strcmp(str(c, "config"), XIR_PY_SIDE_XIR);
  if (!any) return NULL;
  double *tmp = xir__malloc(sizeof(double) * (size_t)(ncases > rounds ? ncases : rounds));
  double *gt = xir__malloc(sizeof(double) * (size_t)ncases);
  cJSON *o = cJSON_CreateObject();
  if (!tmp || !gt || !o) {
    xir__free(tmp);
    xir__free(gt);
    cJSON_Delete(o);
    return NULL;
  }
  cJSON *rows = cJSON_AddArrayToObject(o, "rows");
  int n_torch = 0, n_c = 0, faster = 0;
  double log_torch = 0, log_c = 0;
  size_t nover = 0;
  int i = 0;
  cJSON_ArrayForEach(c, cases) {
    int me = i++;
    if (strcmp(str(c, "config"), XIR_PY_SIDE_XIR) != 0) continue;
    int t = sibling(cases, c, XIR_PY_SIDE_TORCH), dflt = sibling(cases, c, "default");
    cJSON *row = cJSON_CreateObject();
    cJSON_AddStringToObject(row, "kernel", str(c, "kernel"));
    cJSON_AddStringToObject(row, "shape", str(c, "shape"));
    cJSON_AddNumberToObject(row, "xir_python", me);
    cJSON_AddNumberToObject(row, "xir_python_ns", case_median(p50, rounds, ncases, me, tmp));
    if (t >= 0) {
      double m = add_vs(row, "torch_eager_py", "torch_ns", "vs_torch", p50, rounds, ncases, me, t, tmp);
      if (m > 0 && isfinite(m)) {
        n_torch++;
        log_torch += log(m);
        faster += m < 1;
      }
    }
    if (dflt >= 0) {
      double m = add_vs(row, "default", "default_ns", "vs_c", p50, rounds, ncases, me, dflt, tmp);
      if (m > 0 && isfinite(m)) {
        n_c++;
        log_c += log(m);
      }
      size_t k = paired(p50, rounds, ncases, me, dflt, 'd', tmp);
      double od = xir__median(tmp, k);
      cJSON_AddNumberToObject(row, "overhead_ns", od);
      if (!isnan(od)) gt[nover++] = od;
    }
    cJSON_AddItemToArray(rows, row);
  }
  cJSON_AddNumberToObject(o, "n_vs_torch", n_torch);
  cJSON_AddNumberToObject(o, "geomean_vs_torch", n_torch ? exp(log_torch / n_torch) : NAN);
  cJSON_AddNumberToObject(o, "xir_faster", faster);
  cJSON_AddNumberToObject(o, "n_vs_c", n_c);
  cJSON_AddNumberToObject(o, "geomean_vs_c", n_c ? exp(log_c / n_c) : NAN);
  cJSON_AddNumberToObject(o, "median_overhead_ns", xir__median(gt, nover));
  xir__free(tmp);
  xir__free(gt);
  return o;
}

xir_status xir__bench_python_side_check(const cJSON *records, xir_diag *d) {
  const cJSON *decl = cJSON_GetObjectItemCaseSensitive(records, "python_side");
  int peers = !strcmp(str(records, "suite"), "peers");
  if (!peers) {
    if (decl)
      return xir__err(d, XIR_ERR_FORMAT, "declaration field python_side in a %s suite (only the "
                      "peers suite has a Python side)", str(records, "suite"));
    return XIR_OK;
  }
  if (!decl) {
    /* records from before the Python side (XIR_BENCH_FORMAT unchanged, as for input_offset):
     * no declaration and no summary.python_side; an ext:xir_python or ext:torch_eager_py case
     * there is an external peer of before (--peer NAME=...), compared as every external peer was
     * (the audit's configuration check rebuilds the suite that way) */
    if (cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(records, "summary"),
                                         "python_side"))
      return xir__err(d, XIR_ERR_FORMAT, "declaration field python_side is missing, but "
                      "summary.python_side is recorded (records from before the Python side have "
                      "neither)");
    return XIR_OK;
  }
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(decl, "measured");
  if (!cJSON_IsObject(decl) || !cJSON_IsBool(m))
    return xir__err(d, XIR_ERR_FORMAT, "declaration field python_side is %s: a peers suite says "
                    "whether its Python side was measured ({\"measured\": true|false, ...})",
                    !cJSON_IsObject(decl) ? "not an object" : "without a boolean \"measured\"");
  if (cJSON_IsTrue(m)) return XIR_OK;
  const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(decl, "reason"));
  if (!why || !*why)
    return xir__err(d, XIR_ERR_FORMAT, "declaration field python_side says not measured without "
                    "a reason (a string)");
  const cJSON *c;
  int i = 0;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(records, "cases")) {
    if (is_py_config(str(c, "config")))
      return xir__err(d, XIR_ERR_FORMAT, "declaration field python_side says not measured, but "
                      "case %d is %s %s %s", i, str(c, "kernel"), str(c, "shape"), str(c, "config"));
    i++;
  }
  return XIR_OK;
}

static const char *fmt_us(double ns, char *buf, size_t cap) {
  if (isnan(ns)) snprintf(buf, cap, "-");
  else if (fabs(ns) < 1e5) snprintf(buf, cap, "%.2f", ns / 1e3);
  else snprintf(buf, cap, "%.1f", ns / 1e3);
  return buf;
}

/* "r (min–max)" cells of a {median, min, max} object, or "-" cells */
static void ratio_cells(FILE *f, const cJSON *s) {
  if (!s) fprintf(f, " - | - |");
  else fprintf(f, " %.3f | %.3f–%.3f |", num(s, "median"), num(s, "min"), num(s, "max"));
}

void xir__bench_python_side_table(FILE *f, const cJSON *records) {
  const cJSON *decl = cJSON_GetObjectItemCaseSensitive(records, "python_side");
  const cJSON *ps = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(records, "summary"), "python_side");
  if (!decl && !ps) return;
  fprintf(f, "## Python side: xir called from Python vs torch eager in the same process\n\n");
  if (decl && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(decl, "measured"))) {
    fprintf(f, "Not measured: %s.\n\n", str(decl, "reason"));
    return;
  }
  const char *env = str(decl, "pyenv");
  fprintf(f, "One Python process (python/bench/xir_peer.py --torch, run by the peers venv's python "
             "with the xir package%s%s%s appended to its path) calls each kernel as a user writes "
             "it — `y = xir.rmsnorm(x, w)`, the result allocated per call (`xir_python`) — and "
             "torch eager's function of peers/ext/torch_peer.py (`torch_eager_py`) on the same "
             "seeded inputs; both are timed alike, n calls in one Python loop (perf_counter_ns). "
             "xir/torch is the paired ratio (median over rounds of the same-round ratio, min–max "
             "over rounds; < 1: xir from Python is faster). C launch = xir's `default` case (the "
             "compiled kernel launched from C in the bench); Python / C = xir_python / default, "
             "paired the same way, and + µs = the median over rounds of the same-round difference "
             "(what the Python call adds per call). Neither Python-side case is in the headline.\n\n",
          *env ? " from `" : "", env, *env ? "`" : "");
  const cJSON *rows = cJSON_GetObjectItemCaseSensitive(ps, "rows"), *r;
  if (!cJSON_GetArraySize(rows)) {
    fprintf(f, "No case of the Python side ran (see \"Not measured\").\n\n");
  } else {
    fprintf(f, "| kernel | shape | xir (Python) µs | torch eager (same process) µs | xir/torch | "
               "min–max | xir C launch µs | Python / C | min–max | + µs per call |\n"
               "|---|---|---:|---:|---:|---|---:|---:|---|---:|\n");
    cJSON_ArrayForEach(r, rows) {
      char a[32], b[32], c[32], o[32];
      fprintf(f, "| %s | %s | %s | %s |", str(r, "kernel"), str(r, "shape"),
              fmt_us(num(r, "xir_python_ns"), a, sizeof a), fmt_us(num(r, "torch_ns"), b, sizeof b));
      ratio_cells(f, cJSON_GetObjectItemCaseSensitive(r, "vs_torch"));
      fprintf(f, " %s |", fmt_us(num(r, "default_ns"), c, sizeof c));
      ratio_cells(f, cJSON_GetObjectItemCaseSensitive(r, "vs_c"));
      fprintf(f, " %s |\n", fmt_us(num(r, "overhead_ns"), o, sizeof o));
    }
    fprintf(f, "\n");
    int nt = count(ps, "n_vs_torch"), nc = count(ps, "n_vs_c");
    if (nt)
      fprintf(f, "Over %d cases: geometric mean of xir/torch %.3f; xir from Python is faster in %d "
                 "of %d.", nt, num(ps, "geomean_vs_torch"), count(ps, "xir_faster"), nt);
    if (nc) {
      char o[32];
      fprintf(f, "%sOver %d cases: geometric mean of Python / C launch %.3f; median + %s µs per "
                 "call.", nt ? " " : "", nc, num(ps, "geomean_vs_c"),
              fmt_us(num(ps, "median_overhead_ns"), o, sizeof o));
    }
    fprintf(f, "\n\n");
  }
  const cJSON *u;
  int n = 0;
  cJSON_ArrayForEach(u, cJSON_GetObjectItemCaseSensitive(records, "unsupported")) {
    if (!is_py_config(str(u, "config"))) continue;
    if (!n++) fprintf(f, "Not measured on the Python side:\n\n");
    fprintf(f, "- %s %s %s: %s\n", str(u, "kernel"), str(u, "shape"), str(u, "config"), str(u, "reason"));
  }
  if (n) fprintf(f, "\n");
}

void xir__bench_python_side_line(const cJSON *records, char *buf, size_t cap) {
  const cJSON *decl = cJSON_GetObjectItemCaseSensitive(records, "python_side");
  const cJSON *ps = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(records, "summary"), "python_side");
  buf[0] = 0;
  if (decl && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(decl, "measured"))) {
    snprintf(buf, cap, "Python side not measured: %s", str(decl, "reason"));
    return;
  }
  int nt = count(ps, "n_vs_torch"), nc = count(ps, "n_vs_c");
  if (decl && !nt && !nc) { /* measured, yet no ratio: no ext:xir_python case (or no pair) ran */
    snprintf(buf, cap, "Python side: no xir_python case has a ratio to report (see tables.md)");
    return;
  }
  size_t o = 0;
  if (nt)
    o += (size_t)snprintf(buf, cap, "xir from Python vs torch eager (same process) over %d cases: "
                          "geometric mean %.3f, xir faster in %d", nt, num(ps, "geomean_vs_torch"),
                          count(ps, "xir_faster"));
  if (nc && o < cap)
    snprintf(buf + o, cap - o, "%sPython call / C launch over %d cases: geometric mean %.3f",
             nt ? "; " : "", nc, num(ps, "geomean_vs_c"));
}

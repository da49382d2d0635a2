/* bench_suites.c — the benchmark suites: which cases, which comparisons, which visit orders.
 *
 *   pilot        rmsnorm, gelu_residual, swiglu at 64x256 and attention 1,4,2,16,32,16,16:
 *                joint_tasks and joint_calibrated vs joint_legacy (forward and reverse orders)
 *   validation   every kernel x the six report shapes (attention: a small and a large shape):
 *                joint_tasks and joint_calibrated vs joint_legacy (four fixed orders)
 *   fixed-grain  l = 8, B = 32 (l = 1 where the body has no inner tile) with G = 0, 1, 3, max
 *                at 129x768 and 1024x4096 (attention: small and large): each G vs G = 0
 *   peers        xir's default plan (xir_plan_options_default, the run's workers: `default`) vs
 *                the honest C peers — c_fast_omp (-O3 -march=native -ffast-math -fopenmp,
 *                2 threads) and c_fast_1t (the same, 1 thread) — and the external peers
 *                (--peers-dir), at the report shapes and odd ones; for the large shapes also vs
 *                the streaming probe over the kernel's own bytes (probe:stream: xir / floor).
 *                rope_cache joins when the binary has the kernel. Attention adds the decode
 *                case (with the probe: every peer's fraction of the floor) and Q = K = 512
 *                causal and not (xir causal / non-causal). `--configs` may add
 *                joint_tasks (vs c_fast_omp), joint_tasks_1w (vs c_fast_1t), peer:c_strict_omp
 *                (the strict-IEEE C, vs default), default_rule_stores (default's launches with
 *                the rule's stores, vs default) and fixed candidates
 *                (fixed:l=64,B=64,G=max,H=1: vs c_fast_1t when H=1, else vs c_fast_omp).
 *                The Python side (external peers xir_python and torch_eager_py, one process):
 *                xir_python vs torch_eager_py and vs default, nothing else.
 *   smoke        two tiny cases for CI
 * Everything here is deterministic: the audit rebuilds the suite and compares. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "util/util.h"

static const char *kRowShapes[] = {"R=64,C=256",   "R=129,C=768",   "R=17,C=65",
                                   "R=257,C=1538", "R=1024,C=4096", "R=4096,C=1024"};
static const char *kAttnShapes[] = {"B=1,HQ=4,HKV=2,Q=16,K=32,D=16,DV=16",
                                    "B=1,HQ=8,HKV=2,Q=64,K=256,D=64,DV=64"};
static const char *kKernels[] = {"rmsnorm", "layernorm", "rope", "softmax_mask", "softmax_causal",
                                 "swiglu", "gelu_residual", "attention", "attention_causal"};

/* The peers suite's row shapes: four of the report's (129x768, 257x1538, 1024x4096, 4096x1024;
 * 64x256 and 17x65 are in the validation suite) and odd ones — one row, three rows, row lengths
 * that are not a multiple of 16 (1000, 1538) — six, so that a full run (4 rounds, 250 ms settle
 * before each visit, 152 cases; 162 with the attention cases below) stays near six minutes on
 * this 2-core machine. */
static const char *kPeerRows[] = {"R=1,C=4096",   "R=3,C=1000",    "R=129,C=768",
                                  "R=257,C=1538", "R=1024,C=4096", "R=4096,C=1024"};
/* The peers suite's attention cases beyond kAttnShapes (issue 10): the decode step — one new
 * token of 32 query heads against a 4096-token KV cache of 8 KV heads — for attention, with the
 * streaming probe (its floor: K and V read once per KV head, q read and o written once); and a
 * long causal case, Q = K = 512, for attention_causal next to attention at the same shape (the
 * paired ratio causal / non-causal of xir's default plan). */
static const char kDecodeShape[] = "B=1,HQ=32,HKV=8,Q=1,K=4096,D=128,DV=128";
static const char kLongShape[] = "B=1,HQ=32,HKV=8,Q=512,K=512,D=64,DV=64";
/* softmax_causal's own odd shapes beyond kPeerRows: a triangle that ends inside the row (R < C)
 * and one whose last rows are full (R > C), neither a multiple of 16 */
static const char *kCausalRows[] = {"R=77,C=1000", "R=1500,C=333"};
/* Row shapes with at least this many elements get the streaming probe. */
#define PROBE_MIN_ELEMENTS 1000000L
/* rope_cache's cache length (positions are < P). */
#define ROPE_CACHE_P 4096

/* The head width RoPE uses at a row width (0: RoPE needs an even C). */
static int rope_hd(long C) {
  if (C % 2) return 0;
  for (int h = 128; h >= 2; h -= 2)
    if (C % h == 0) return h <= 128 ? h : 0;
  return 0;
}

static int in_list(const char *list, const char *item, char sep) {
  if (!list) return 1;
  size_t n = strlen(item);
  for (const char *s = list; *s;) {
    const char *e = strchr(s, sep);
    size_t l = e ? (size_t)(e - s) : strlen(s);
    if (l == n && strncmp(s, item, n) == 0) return 1;
    if (!e) break;
    s = e + 1;
  }
  return 0;
}

typedef struct builder {
  bench_suite *s;
  size_t ccap, kcap;
  const suite_filter *f;
  int oom;
} builder;

static int add_case(builder *b, const char *kernel, const char *shape, const char *config) {
  bench_suite *s = b->s;
  for (int i = 0; i < s->ncases; i++)
    if (!strcmp(s->cases[i].kernel, kernel) && !strcmp(s->cases[i].shape, shape) &&
        !strcmp(s->cases[i].config, config))
      return i;
  if (xir__grow((void **)&s->cases, &b->ccap, (size_t)s->ncases + 1, sizeof *s->cases)) {
    b->oom = 1;
    return -1;
  }
  bcase_decl *c = &s->cases[s->ncases];
  memset(c, 0, sizeof *c);
  snprintf(c->kernel, sizeof c->kernel, "%s", kernel);
  snprintf(c->shape, sizeof c->shape, "%s", shape);
  snprintf(c->config, sizeof c->config, "%s", config);
  return s->ncases++;
}

static void add_cmp(builder *b, int base, int var) {
  bench_suite *s = b->s;
  if (base < 0 || var < 0) return;
  if (xir__grow((void **)&s->comparisons, &b->kcap, (size_t)s->ncomparisons + 1, sizeof *s->comparisons)) {
    b->oom = 1;
    return;
  }
  s->comparisons[s->ncomparisons][0] = base;
  s->comparisons[s->ncomparisons][1] = var;
  s->ncomparisons++;
}

/* The HD and P of a RoPE row shape "R=..,C=..,HD=..[,P=..]" (--extra-shapes), 0 where not given. */
static void rope_dims(const char *rows, long *hd, long *P) {
  const char *h = strstr(rows, ",HD="), *q = strstr(rows, ",P=");
  *hd = h ? atol(h + 4) : 0;
  *P = q ? atol(q + 3) : 0;
}

/* rope_cache's shape at a row shape "R=..,C=..": the kernel's dims by name (R, C, HD = rope_hd(C),
 * P = ROPE_CACHE_P, H2 = HD/2; HD and P as given in a RoPE row shape "R=..,C=..,HD=..[,P=..]"), in
 * the kernel's order. 0 when the binary has no rope_cache, C is odd, or the kernel has a dim not
 * named here. */
static int rope_cache_shape(const char *rows, char *out, size_t cap) {
  long R = 0, C = 0, hd = 0, P = 0;
  if (xir_kernel_find("rope_cache") < 0 || sscanf(rows, "R=%ld,C=%ld", &R, &C) != 2) return 0;
  rope_dims(rows, &hd, &P);
  if (!hd) hd = rope_hd(C);
  if (!P) P = ROPE_CACHE_P;
  if (!hd) return 0;
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load("rope_cache", &p, &d)) return 0;
  size_t o = 0;
  int ok = 1;
  for (int k = 0; k < xir_program_num_dims(p) && ok; k++) {
    const char *n = xir_program_dim_name(p, k);
    long v = !strcmp(n, "R") ? R : !strcmp(n, "C") ? C : !strcmp(n, "HD") ? hd
             : !strcmp(n, "P") ? P : !strcmp(n, "H2") ? hd / 2 : -1;
    if (v < 0) ok = 0;
    else o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, "%s%s=%ld", k ? "," : "", n, v);
  }
  xir_program_free(p);
  return ok && o < cap;
}

/* Kernel × shape pairs of a suite, after the filter; calls fn for each. */
static void each_shape(builder *b, const char **kernels, int nk, const char **rows, int nrows,
                       const char **attn, int nattn,
                       void (*fn)(builder *, const char *, const char *)) {
  for (int k = 0; k < nk; k++) {
    if (!in_list(b->f->kernels, kernels[k], ',')) continue;
    int is_attn = strncmp(kernels[k], "attention", 9) == 0;
    const char **shapes = is_attn ? attn : rows;
    int ns = is_attn ? nattn : nrows;
    for (int i = 0; i < ns; i++) {
      char shape[224];
      snprintf(shape, sizeof shape, "%s", shapes[i]);
      long given_hd, given_p;
      rope_dims(shapes[i], &given_hd, &given_p);
      /* a RoPE row shape (HD given) is for rope and rope_cache only */
      if (given_hd && strcmp(kernels[k], "rope") && strcmp(kernels[k], "rope_cache")) continue;
      if (!strcmp(kernels[k], "rope")) {
        long R = 0, C = 0;
        sscanf(shapes[i], "R=%ld,C=%ld", &R, &C);
        long hd = given_hd ? given_hd : rope_hd(C);
        if (!hd) continue; /* RoPE rotates pairs: odd widths are not RoPE shapes */
        snprintf(shape, sizeof shape, "R=%ld,C=%ld,HD=%ld", R, C, hd); /* rope has no P */
      }
      if (!strcmp(kernels[k], "rope_cache") && !rope_cache_shape(shapes[i], shape, sizeof shape))
        continue;
      if (b->f->shapes && !in_list(b->f->shapes, shapes[i], ';') && !in_list(b->f->shapes, shape, ';'))
        continue;
      fn(b, kernels[k], shape);
    }
  }
}

static void pair_configs(builder *b, const char *k, const char *shape, const char *base,
                         const char *var) {
  if (!in_list(b->f->configs, base, ',') || !in_list(b->f->configs, var, ',')) return;
  int x = add_case(b, k, shape, base), y = add_case(b, k, shape, var);
  add_cmp(b, x, y);
}

static void legacy_vs_tasks(builder *b, const char *k, const char *shape) {
  pair_configs(b, k, shape, "joint_legacy", "joint_tasks");
  pair_configs(b, k, shape, "joint_legacy", "joint_calibrated");
}

static void fixed_grains(builder *b, const char *k, const char *shape) {
  int local = (!strcmp(k, "swiglu") || !strcmp(k, "gelu_residual") || !strncmp(k, "attention", 9)) ? 1 : 8;
  const char *gs[] = {"0", "1", "3", "max"};
  int base = -1;
  for (int i = 0; i < 4; i++) {
    char cfg[96];
    snprintf(cfg, sizeof cfg, "fixed:l=%d,B=32,G=%s", local, gs[i]);
    if (!in_list(b->f->configs, cfg, ',') && b->f->configs) continue;
    int c = add_case(b, k, shape, cfg);
    if (i == 0) base = c;
    else add_cmp(b, base, c);
  }
}

static const char *g_ext_peers[BENCH_MAX_PEERS];
static int g_next;
/* the Python side's two names among them (bench_set_ext_peers); g_py_side 0: records from before
 * the Python side, where they are external peers like the others */
static int g_py_xir, g_py_torch, g_py_side = 1;

/* The names of the Python side (one process: python/bench/xir_peer.py --torch): compared with
 * each other and with xir's C launch, never in the comparisons of the peers. */
static int python_side_name(const char *n) {
  return g_py_side && (!strcmp(n, "xir_python") || !strcmp(n, "torch_eager_py"));
}

/* 1 when --configs names cfg (configurations that are only measured on request). */
static int named(const builder *b, const char *cfg) {
  return b->f->configs && in_list(b->f->configs, cfg, ',');
}

/* The number of elements of a row shape "R=..,C=..[,...]" (0 for other shapes). */
static long row_elements(const char *shape) {
  long R = 0, C = 0;
  return sscanf(shape, "R=%ld,C=%ld", &R, &C) == 2 ? R * C : 0;
}

static void vs_peers(builder *b, const char *k, const char *shape) {
  pair_configs(b, k, shape, "peer:c_fast_omp", "default");
  pair_configs(b, k, shape, "peer:c_fast_1t", "default");
  for (int i = 0; i < g_next; i++) {
    char cfg[96];
    if (python_side_name(g_ext_peers[i])) continue; /* below: not a peer of xir's C launch */
    snprintf(cfg, sizeof cfg, "ext:%s", g_ext_peers[i]);
    pair_configs(b, k, shape, cfg, "default");
  }
  /* the Python side (docs/bench.md): xir called from Python against torch eager in the same
   * process, and against xir's own C launch (the overhead of the Python call) */
  if (g_py_xir) {
    if (g_py_torch) pair_configs(b, k, shape, "ext:torch_eager_py", "ext:xir_python");
    pair_configs(b, k, shape, "default", "ext:xir_python");
  }
  /* the streaming floor of the large row cases and of the decode case: xir / (the same bytes
   * streamed), and every peer / the same (the fraction of the floor each reaches) */
  if ((strncmp(k, "attention", 9) != 0 && row_elements(shape) >= PROBE_MIN_ELEMENTS) ||
      !strcmp(shape, kDecodeShape)) {
    pair_configs(b, k, shape, "probe:stream", "default");
    pair_configs(b, k, shape, "probe:stream", "peer:c_fast_omp");
    pair_configs(b, k, shape, "probe:stream", "peer:c_fast_1t");
    for (int i = 0; i < g_next; i++) {
      char cfg[96];
      if (python_side_name(g_ext_peers[i])) continue;
      snprintf(cfg, sizeof cfg, "ext:%s", g_ext_peers[i]);
      pair_configs(b, k, shape, "probe:stream", cfg);
    }
  }
  /* on request only */
  if (named(b, "peer:c_strict_omp")) pair_configs(b, k, shape, "peer:c_strict_omp", "default");
  if (named(b, "default_rule_stores")) pair_configs(b, k, shape, "default_rule_stores", "default");
  if (named(b, "joint_tasks")) pair_configs(b, k, shape, "peer:c_fast_omp", "joint_tasks");
  if (named(b, "joint_tasks_1w")) pair_configs(b, k, shape, "peer:c_fast_1t", "joint_tasks_1w");
  /* ad-hoc fixed candidates named in --configs: vs the single-thread C peer when H=1, else the
   * OpenMP C, when that peer is named too; else vs `default` when it is named; else measured
   * alone (a named configuration is never dropped) */
  for (const char *c = b->f->configs; c && *c;) {
    const char *e = strchr(c, ',');
    /* a fixed config holds commas itself: it runs to the next ",fixed:" / ",peer:" / ",joint" /
     * ",default" / ",probe:" / ",ext:" / end */
    if (!strncmp(c, "fixed:", 6)) {
      const char *end = c + strlen(c);
      static const char *const next[] = {",fixed:", ",peer:", ",joint", ",default", ",probe:", ",ext:"};
      for (size_t j = 0; j < sizeof next / sizeof next[0]; j++) {
        const char *n = strstr(c + 6, next[j]);
        if (n && n < end) end = n;
      }
      char cfg[96];
      snprintf(cfg, sizeof cfg, "%.*s", (int)(end - c), c);
      const char *base = strstr(cfg, ",H=1") ? "peer:c_fast_1t" : "peer:c_fast_omp";
      if (!in_list(b->f->configs, base, ',')) base = in_list(b->f->configs, "default", ',') ? "default" : NULL;
      int x = base ? add_case(b, k, shape, base) : -1;
      add_cmp(b, x, add_case(b, k, shape, cfg)); /* (no comparison without a base) */
      c = *end ? end + 1 : end;
      continue;
    }
    c = e ? e + 1 : c + strlen(c);
  }
}

/* The same kernel with 16-bit buffers against f32, both under the default planner: every float
 * buffer bf16, then f16 (NAME@DTYPE, bench_load_kernel). */
static void vs_dtypes(builder *b, const char *k, const char *shape) {
  if (!in_list(b->f->configs, "default", ',')) return;
  const char *types[] = {"bf16", "f16"};
  for (int i = 0; i < 2; i++) {
    char kd[32];
    snprintf(kd, sizeof kd, "%s@%s", k, types[i]);
    add_cmp(b, add_case(b, k, shape, "default"), add_case(b, kd, shape, "default"));
  }
}

/* Visit orders for n cases: forward, reverse, and for large suites interleaved and shuffled. */
static int make_orders(bench_suite *s, int four) {
  int n = s->ncases;
  s->norders = four ? 4 : 2;
  s->orders = xir__calloc((size_t)s->norders, sizeof(int *));
  if (!s->orders) return -1;
  for (int o = 0; o < s->norders; o++) {
    int *a = s->orders[o] = xir__malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!a) return -1;
    for (int i = 0; i < n; i++) a[i] = i;
    if (o == 1)
      for (int i = 0; i < n; i++) a[i] = n - 1 - i;
    if (o == 2) {
      int k = 0;
      for (int i = 0; i < n; i += 2) a[k++] = i;
      for (int i = 1; i < n; i += 2) a[k++] = i;
    }
    if (o == 3) {
      uint64_t x = 0x9E3779B97F4A7C15ull; /* a fixed xorshift shuffle */
      for (int i = n - 1; i > 0; i--) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int j = (int)(x % (uint64_t)(i + 1)), t = a[i];
        a[i] = a[j];
        a[j] = t;
      }
    }
  }
  return 0;
}

void bench_set_ext_peers(const char **names, int n, int python_side) {
  g_next = n > BENCH_MAX_PEERS ? BENCH_MAX_PEERS : n;
  g_py_side = python_side;
  g_py_xir = g_py_torch = 0;
  for (int i = 0; i < g_next; i++) {
    g_ext_peers[i] = names[i];
    g_py_xir |= python_side && !strcmp(names[i], "xir_python");
    g_py_torch |= python_side && !strcmp(names[i], "torch_eager_py");
  }
}

/* The shapes of --extra-shapes, at most 32: row shapes "R=N,C=N" (for the row kernels), RoPE row
 * shapes "R=N,C=N,HD=N" or "R=N,C=N,HD=N,P=N" (for rope and rope_cache only: HD even and a
 * divisor of C, P the cache's positions, default 4096) and attention shapes
 * "B=N,HQ=N,HKV=N,Q=N,K=N,D=N,DV=N" (for attention and attention_causal; the peers suite only),
 * every N >= 1 and nothing else. Row shapes go to rows[], attention shapes to attn[]; returns the
 * total, or -1 with the reason in d. */
enum { MAX_EXTRA = 32 };
static int extra_shapes(const char *list, char rows[][64], int *nrows, char attn[][192], int *nattn,
                        xir_diag *d) {
  int n = 0;
  *nrows = *nattn = 0;
  for (const char *s = list; s && *s;) {
    const char *e = strchr(s, ';');
    size_t l = e ? (size_t)(e - s) : strlen(s);
    long R = 0, C = 0, v[7] = {0};
    int used = 0;
    char one[96];
    if (l == 0 || l >= sizeof one) {
      xir__err(d, XIR_ERR_INVALID_ARG,
               "--extra-shapes: shape %d is %s (want R=N,C=N or B=N,HQ=N,HKV=N,Q=N,K=N,D=N,DV=N)",
               n + 1, l ? "too long" : "empty");
      return -1;
    }
    memcpy(one, s, l);
    one[l] = 0;
    if (n == MAX_EXTRA) {
      xir__err(d, XIR_ERR_INVALID_ARG, "--extra-shapes: more than %d shapes", MAX_EXTRA);
      return -1;
    }
    long hd = 0, P = 0;
    int used4 = 0;
    if (sscanf(one, "R=%ld,C=%ld%n", &R, &C, &used) == 2 && (size_t)used == l && R >= 1 && C >= 1) {
      snprintf(rows[(*nrows)++], 64, "R=%ld,C=%ld", R, C);
    } else if (((sscanf(one, "R=%ld,C=%ld,HD=%ld%n", &R, &C, &hd, &used) == 3 && (size_t)used == l) ||
                (sscanf(one, "R=%ld,C=%ld,HD=%ld,P=%ld%n", &R, &C, &hd, &P, &used4) == 4 &&
                 (size_t)used4 == l)) &&
               R >= 1 && C >= 1 && hd >= 1 && (used4 == 0 || P >= 1)) {
      if (hd % 2 || C % hd) {
        xir__err(d, XIR_ERR_INVALID_ARG,
                 "--extra-shapes: '%s': RoPE needs an even HD that divides C (HD = %ld, C = %ld)",
                 one, hd, C);
        return -1;
      }
      char canon[128];
      int len = used4 ? snprintf(canon, sizeof canon, "R=%ld,C=%ld,HD=%ld,P=%ld", R, C, hd, P)
                      : snprintf(canon, sizeof canon, "R=%ld,C=%ld,HD=%ld", R, C, hd);
      if (len < 0 || len >= 64) {
        xir__err(d, XIR_ERR_INVALID_ARG, "--extra-shapes: '%s' is too long", one);
        return -1;
      }
      memcpy(rows[(*nrows)++], canon, (size_t)len + 1);
    } else if (sscanf(one, "B=%ld,HQ=%ld,HKV=%ld,Q=%ld,K=%ld,D=%ld,DV=%ld%n", &v[0], &v[1], &v[2],
                      &v[3], &v[4], &v[5], &v[6], &used) == 7 &&
               (size_t)used == l && v[0] >= 1 && v[1] >= 1 && v[2] >= 1 && v[3] >= 1 &&
               v[4] >= 1 && v[5] >= 1 && v[6] >= 1) {
      if (v[1] % v[2] != 0) {
        xir__err(d, XIR_ERR_INVALID_ARG,
                 "--extra-shapes: '%s': HQ = %ld is not a multiple of HKV = %ld (grouped-query "
                 "heads share a K/V head)", one, v[1], v[2]);
        return -1;
      }
      snprintf(attn[(*nattn)++], 192, "B=%ld,HQ=%ld,HKV=%ld,Q=%ld,K=%ld,D=%ld,DV=%ld", v[0], v[1],
               v[2], v[3], v[4], v[5], v[6]);
    } else {
      xir__err(d, XIR_ERR_INVALID_ARG,
               "--extra-shapes: '%s' is neither a row shape R=N,C=N (RoPE: R=N,C=N,HD=N[,P=N]) "
               "nor an attention shape B=N,HQ=N,HKV=N,Q=N,K=N,D=N,DV=N (in that order, N >= 1)",
               one);
      return -1;
    }
    n++;
    s = e ? e + 1 : s + l;
  }
  return n;
}

xir_status bench_suite_build(const char *name, const suite_filter *f, bench_suite *s, xir_diag *d) {
  memset(s, 0, sizeof *s);
  char extra[MAX_EXTRA][64], extra_at[MAX_EXTRA][192];
  const char *extra_p[MAX_EXTRA], *extra_ap[MAX_EXTRA];
  int nextra = 0, nextra_at = 0;
  if (f && f->extra && extra_shapes(f->extra, extra, &nextra, extra_at, &nextra_at, d) < 0)
    return XIR_ERR_INVALID_ARG;
  if (nextra + nextra_at && strcmp(name, "peers") && strcmp(name, "dtype"))
    return xir__err(d, XIR_ERR_INVALID_ARG, "--extra-shapes is for the peers and dtype suites, not '%s'",
                    name);
  if (nextra_at && strcmp(name, "peers"))
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "--extra-shapes: attention shapes are for the peers suite (the dtype suite's "
                    "kernels are row kernels)");
  for (int i = 0; i < nextra; i++) extra_p[i] = extra[i];
  for (int i = 0; i < nextra_at; i++) extra_ap[i] = extra_at[i];
  snprintf(s->name, sizeof s->name, "%s", name);
  suite_filter none = {0};
  builder b = {.s = s, .f = f ? f : &none};
  int four = 0;
  s->default_rounds = 4;
  if (!strcmp(name, "pilot")) {
    const char *ks[] = {"rmsnorm", "gelu_residual", "swiglu", "attention"};
    const char *rows[] = {"R=64,C=256"};
    each_shape(&b, ks, 4, rows, 1, kAttnShapes, 1, legacy_vs_tasks);
  } else if (!strcmp(name, "validation")) {
    each_shape(&b, kKernels, 9, kRowShapes, 6, kAttnShapes, 2, legacy_vs_tasks);
    four = 1;
  } else if (!strcmp(name, "fixed-grain")) {
    const char *rows[] = {"R=129,C=768", "R=1024,C=4096"};
    each_shape(&b, kKernels, 9, rows, 2, kAttnShapes, 2, fixed_grains);
    s->default_rounds = 2;
  } else if (!strcmp(name, "peers")) {
    const char *ks[10];
    int nk = 0;
    for (int i = 0; i < 9; i++) {
      ks[nk++] = kKernels[i];
      if (!strcmp(kKernels[i], "rope") && xir_kernel_find("rope_cache") >= 0) ks[nk++] = "rope_cache";
    }
    each_shape(&b, ks, nk, kPeerRows, (int)(sizeof kPeerRows / sizeof kPeerRows[0]), kAttnShapes,
               2, vs_peers);
    /* the caller's own shapes: rows for the row kernels, attention shapes for attention */
    each_shape(&b, ks, nk, extra_p, nextra, extra_ap, nextra_at, vs_peers);
    const char *causal[] = {"softmax_causal"};
    each_shape(&b, causal, 1, kCausalRows, 2, NULL, 0, vs_peers);
    const char *decode[] = {kDecodeShape}, *lng[] = {kLongShape};
    const char *attn[] = {"attention", "attention_causal"};
    each_shape(&b, attn, 1, NULL, 0, decode, 1, vs_peers);
    each_shape(&b, attn, 2, NULL, 0, lng, 1, vs_peers);
    /* xir's default plan, causal / non-causal at the long shape (masked work skipped: < 1) */
    if (in_list(b.f->kernels, "attention", ',') && in_list(b.f->kernels, "attention_causal", ',') &&
        (!b.f->shapes || in_list(b.f->shapes, kLongShape, ';')) && in_list(b.f->configs, "default", ','))
      add_cmp(&b, add_case(&b, "attention", kLongShape, "default"),
              add_case(&b, "attention_causal", kLongShape, "default"));
  } else if (!strcmp(name, "dtype")) {
    /* bf16/f16 against f32 at the large shapes, where the bytes moved decide, and at one decode
     * row and a cache-resident block, where the conversions do (a 16-bit gather in the weight's
     * hoist made bf16 rmsnorm 1x4096 11.6x the f32 time unseen until session 24) */
    const char *ks[] = {"rmsnorm", "layernorm", "swiglu", "gelu_residual", "softmax_mask", "rope"};
    const char *rows[] = {"R=1024,C=4096", "R=2048,C=8192", "R=1,C=4096", "R=129,C=768"};
    each_shape(&b, ks, 6, rows, 4, kAttnShapes, 0, vs_dtypes);
    each_shape(&b, ks, 6, extra_p, nextra, NULL, 0, vs_dtypes);
    s->default_rounds = 2;
  } else if (!strcmp(name, "smoke")) {
    const char *ks[] = {"rmsnorm", "swiglu"};
    const char *rows[] = {"R=3,C=7", "R=17,C=65"};
    suite_filter sf = *b.f; /* two configurations only: CI time */
    if (!sf.configs) sf.configs = "joint_legacy,joint_tasks";
    b.f = &sf;
    each_shape(&b, ks, 2, rows, 2, kAttnShapes, 0, legacy_vs_tasks);
    s->default_rounds = 2;
  } else {
    return xir__err(d, XIR_ERR_NOT_FOUND,
                    "unknown suite '%s' (pilot, validation, fixed-grain, peers, dtype, smoke)", name);
  }
  if (b.oom || make_orders(s, four)) {
    bench_suite_free(s);
    return xir__err(d, XIR_ERR_NOMEM, "out of memory building suite '%s'", name);
  }
  if (s->ncases == 0) {
    bench_suite_free(s);
    return xir__err(d, XIR_ERR_INVALID_ARG, "suite '%s' has no case left after the filters", name);
  }
  return XIR_OK;
}

xir_status bench_suite_drop(bench_suite *s, const char *drop) {
  int *remap = xir__malloc(sizeof(int) * (size_t)(s->ncases ? s->ncases : 1)), kept = 0;
  if (!remap) return XIR_ERR_NOMEM;
  for (int i = 0; i < s->ncases; i++) {
    remap[i] = drop[i] ? -1 : kept;
    if (!drop[i]) s->cases[kept++] = s->cases[i];
  }
  int nc = 0;
  for (int k = 0; k < s->ncomparisons; k++) {
    int b = remap[s->comparisons[k][0]], v = remap[s->comparisons[k][1]];
    if (b >= 0 && v >= 0) {
      s->comparisons[nc][0] = b;
      s->comparisons[nc][1] = v;
      nc++;
    }
  }
  xir__free(remap);
  s->ncases = kept;
  s->ncomparisons = nc;
  int four = s->norders == 4;
  for (int o = 0; o < s->norders; o++) xir__free(s->orders[o]);
  xir__free(s->orders);
  s->orders = NULL;
  return make_orders(s, four) ? XIR_ERR_NOMEM : XIR_OK;
}

void bench_suite_free(bench_suite *s) {
  for (int o = 0; o < s->norders; o++) xir__free(s->orders[o]);
  xir__free(s->orders);
  xir__free(s->cases);
  xir__free(s->comparisons);
  memset(s, 0, sizeof *s);
}

/* onednn_peer.c — the oneDNN peer of `xir bench`, a line-JSON pipe server (docs/peers.md,
 * "External peers").  Built by scripts/setup_peers.sh against the oneDNN C API (dnnl.h, 3.x).
 *
 * Kernels, each one oneDNN primitive as a user would write it (forward_inference, f32, plain
 * row-major layouts, memory allocated by the library):
 *   rmsnorm        layer normalization, flags dnnl_use_scale | dnnl_rms_norm (oneDNN >= 3.3 has the
 *                  flag; setup_peers.sh defines XIR_HAVE_DNNL_RMS_NORM when dnnl_types.h has it,
 *                  else rmsnorm is answered unsupported)
 *   layernorm      layer normalization, flags dnnl_use_scale | dnnl_use_shift
 *   gelu_residual  eltwise gelu_tanh, then binary add (r)
 *   swiglu         eltwise swish (alpha = 1, i.e. silu), then binary mul (b)
 *                  The binary op is a post-op of the eltwise primitive when oneDNN has a JIT
 *                  implementation for that; oneDNN 3.2 only has its reference one ("ref:any",
 *                  ~40x slower), so by default (--fuse auto) it is then a second primitive, binary,
 *                  in place on y: two JIT primitives per call.  --fuse always|never forces one way.
 *   attention, attention_causal
 *                  three primitives, as a oneDNN user writes attention: matmul S = (q k^T) with an
 *                  eltwise linear post-op (x scale) — and for the causal kernel a binary add
 *                  post-op of an additive mask [1, G*Q, K] (0 or -1e30, made once in prepare,
 *                  broadcast over the batch) —, softmax (accurate, in place on S, last axis), then
 *                  matmul o = S v. GQA without copying K/V: q[B, HQ, Q, D] is read as
 *                  [B*HKV, G*Q, D] (G = HQ/HKV: the query heads of a KV head are adjacent), k as
 *                  the weights [B*HKV, D, K] in the transposed layout (acb), so o comes out as
 *                  o[B, HQ, Q, DV]. Causal with K < Q has fully masked query rows: their softmax
 *                  is uniform (the mask is finite), and a binary mul post-op of a [1, G*Q, 1] row
 *                  mask on the second matmul makes them 0, as SPEC says.
 *                  Fused scaled-dot-product attention: not available in this oneDNN (3.2) on the
 *                  CPU — see SDPA_NOTE below.
 * Everything else is answered {"ok":false,"error":...} (reported as unsupported): oneDNN's softmax
 * primitive has no pre-softmax scale+mask (its post-ops come after the softmax) and gives NaN, not
 * 0, on a fully masked row; there is no RoPE primitive.
 *
 * Threads: 2 (`--threads N`).  OpenMP builds: omp_set_num_threads(2) through dlsym (the OpenMP
 * runtime is loaded with libdnnl, before main could set OMP_NUM_THREADS); TBB builds: the process'
 * CPU affinity is narrowed to two CPUs when it has more, since TBB sizes its pool from it.
 *
 * Cases: "run"/"output" act on the last prepared case; an optional "case" member (string or
 * number) in prepare/run/output names the case instead (extension, docs/peers.md).
 * Timing: "run n" executes the primitive n times back to back on an in-order stream, then waits
 * on the stream; the wall time (CLOCK_MONOTONIC) of the whole is answered in ns.
 * Files: .npy format 1.0/2.0/3.0 read, float32 ('<f4') C order only; written as format 1.0.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dnnl.h"
#include "dnnl_debug.h"

/* ------------------------------------------------------------------ tiny JSON (requests) */

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
typedef struct jnode {
  int type;
  double num;
  char *str;            /* J_STR value */
  char *key;            /* member name when inside an object */
  struct jnode *child;  /* first member / element */
  struct jnode *next;
} jnode;

typedef struct { const char *p; int err; } jparser;

static void jfree(jnode *n) {
  while (n) {
    jnode *nx = n->next;
    jfree(n->child);
    free(n->str);
    free(n->key);
    free(n);
    n = nx;
  }
}

static void jws(jparser *P) { while (*P->p && isspace((unsigned char)*P->p)) P->p++; }

static char *jstring(jparser *P) { /* at '"' */
  size_t cap = 64, len = 0;
  char *s = malloc(cap);
  P->p++;
  while (*P->p && *P->p != '"') {
    char c = *P->p++;
    if (c == '\\') {
      char e = *P->p++;
      switch (e) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'u': {
          unsigned v = 0;
          for (int i = 0; i < 4; i++) {
            char h = *P->p++;
            v = v * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
          }
          c = v < 128 ? (char)v : '?';
          break;
        }
        case 0: P->err = 1; free(s); return NULL;
        default: c = e; break; /* \" \\ \/ */
      }
    }
    if (len + 2 > cap) s = realloc(s, cap *= 2);
    s[len++] = c;
  }
  if (*P->p != '"') { P->err = 1; free(s); return NULL; }
  P->p++;
  s[len] = 0;
  return s;
}

static jnode *jvalue(jparser *P) {
  jws(P);
  jnode *n = calloc(1, sizeof *n);
  char c = *P->p;
  if (c == '{' || c == '[') {
    n->type = c == '{' ? J_OBJ : J_ARR;
    char close = c == '{' ? '}' : ']';
    P->p++;
    jws(P);
    jnode **tail = &n->child;
    if (*P->p == close) { P->p++; return n; }
    for (;;) {
      char *key = NULL;
      if (n->type == J_OBJ) {
        jws(P);
        if (*P->p != '"') { P->err = 1; return n; }
        key = jstring(P);
        if (P->err) return n;
        jws(P);
        if (*P->p != ':') { free(key); P->err = 1; return n; }
        P->p++;
      }
      jnode *v = jvalue(P);
      v->key = key;
      *tail = v;
      tail = &v->next;
      if (P->err) return n;
      jws(P);
      if (*P->p == ',') { P->p++; continue; }
      if (*P->p == close) { P->p++; return n; }
      P->err = 1;
      return n;
    }
  } else if (c == '"') {
    n->type = J_STR;
    n->str = jstring(P);
  } else if (!strncmp(P->p, "true", 4)) {
    n->type = J_BOOL; n->num = 1; P->p += 4;
  } else if (!strncmp(P->p, "false", 5)) {
    n->type = J_BOOL; P->p += 5;
  } else if (!strncmp(P->p, "null", 4)) {
    n->type = J_NULL; P->p += 4;
  } else {
    char *end;
    n->type = J_NUM;
    n->num = strtod(P->p, &end);
    if (end == P->p) P->err = 1;
    P->p = end;
  }
  return n;
}

static jnode *jget(const jnode *obj, const char *key) {
  if (!obj || obj->type != J_OBJ) return NULL;
  for (jnode *c = obj->child; c; c = c->next)
    if (c->key && !strcmp(c->key, key)) return c;
  return NULL;
}
static const char *jstr(const jnode *obj, const char *key) {
  jnode *n = jget(obj, key);
  return n && n->type == J_STR ? n->str : NULL;
}

/* ------------------------------------------------------------------ answers */

static void json_escape(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c == '\n') fputs("\\n", f);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void reply_ok(void) { fputs("{\"ok\":true}\n", stdout); fflush(stdout); }

static void reply_err(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fputs("{\"ok\":false,\"error\":", stdout);
  json_escape(stdout, buf);
  fputs("}\n", stdout);
  fflush(stdout);
  fprintf(stderr, "onednn_peer: %s\n", buf);
}

/* ------------------------------------------------------------------ .npy */

/* Reads a float32 C-order .npy; returns malloc'ed data, shape in shp[*nd]. */
static float *npy_read(const char *path, int64_t shp[8], int *nd, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) { snprintf(err, errlen, "%s: %s", path, strerror(errno)); return NULL; }
  unsigned char pre[12];
  if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6)) {
    snprintf(err, errlen, "%s: not a .npy file", path);
    fclose(f);
    return NULL;
  }
  uint32_t hlen;
  if (pre[6] == 1) {
    if (fread(pre + 8, 1, 2, f) != 2) goto bad;
    hlen = pre[8] | (uint32_t)pre[9] << 8;
  } else {
    if (fread(pre + 8, 1, 4, f) != 4) goto bad;
    hlen = pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
  }
  char *h = malloc(hlen + 1);
  if (fread(h, 1, hlen, f) != hlen) { free(h); goto bad; }
  h[hlen] = 0;
  const char *d = strstr(h, "'descr'");
  const char *fo = strstr(h, "'fortran_order'");
  const char *sh = strstr(h, "'shape'");
  if (!d || !fo || !sh || !strstr(d, "'<f4'") || !strstr(fo, "False")) {
    snprintf(err, errlen, "%s: only float32 ('<f4') C-order .npy is read (header %s)", path, h);
    free(h);
    fclose(f);
    return NULL;
  }
  const char *p = strchr(sh, '(');
  *nd = 0;
  int64_t count = 1;
  if (p) {
    p++;
    while (*p && *p != ')') {
      while (*p == ' ' || *p == ',') p++;
      if (*p == ')') break;
      char *e;
      long long v = strtoll(p, &e, 10);
      if (e == p || *nd >= 8) { free(h); goto bad; }
      shp[(*nd)++] = v;
      count *= v;
      p = e;
    }
  }
  free(h);
  float *data = malloc((size_t)(count > 0 ? count : 1) * sizeof(float));
  if ((int64_t)fread(data, sizeof(float), (size_t)count, f) != count) {
    free(data);
    snprintf(err, errlen, "%s: short data", path);
    fclose(f);
    return NULL;
  }
  fclose(f);
  return data;
bad:
  snprintf(err, errlen, "%s: bad .npy header", path);
  fclose(f);
  return NULL;
}

static int npy_write(const char *path, const float *data, const int64_t *shp, int nd) {
  char dict[256];
  int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
  int64_t count = 1;
  for (int i = 0; i < nd; i++) {
    n += snprintf(dict + n, sizeof dict - n, i ? ", %lld" : "%lld", (long long)shp[i]);
    count *= shp[i];
  }
  if (nd == 1) n += snprintf(dict + n, sizeof dict - n, ",");
  n += snprintf(dict + n, sizeof dict - n, "), }");
  int total = 10 + n + 1;
  int pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  unsigned hl = (unsigned)(n + pad + 1);
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xff), (unsigned char)(hl >> 8)};
  fwrite(pre, 1, 10, f);
  fwrite(dict, 1, (size_t)n, f);
  for (int i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
  size_t w = fwrite(data, sizeof(float), (size_t)count, f);
  int rc = fclose(f);
  return (w == (size_t)count && rc == 0) ? 0 : -1;
}

/* ------------------------------------------------------------------ oneDNN state */

static dnnl_engine_t g_engine;
static dnnl_stream_t g_stream;

#define MAXARGS 8
#define MAXSTEPS 4
typedef struct {
  dnnl_primitive_desc_t pd;
  dnnl_primitive_t prim;
  int nargs;
  dnnl_exec_arg_t args[MAXARGS];
  char impl[128];
} step;

typedef struct {
  int ready;
  step steps[MAXSTEPS];  /* executed in order by "run" */
  int nsteps;
  dnnl_memory_t mem[MAXARGS];
  int nmem;
  dnnl_memory_t out;     /* memory holding the kernel's output */
  int64_t out_shape[8];
  int out_nd;
} pcase;

/* Prepared cases.  The documented protocol has one: "run"/"output" use the last prepared.  Optional
 * extension: a "case" member (string or number) in prepare/run/output names the case, so that a
 * driver may prepare many cases up front and run them in any order. */
typedef struct {
  char id[64];
  pcase c;
} slot;
static slot *g_slots;
static int g_nslots, g_cur = -1;

static void case_free(pcase *c) {
  for (int i = 0; i < c->nmem; i++)
    if (c->mem[i]) dnnl_memory_destroy(c->mem[i]);
  for (int i = 0; i < c->nsteps; i++) {
    if (c->steps[i].prim) dnnl_primitive_destroy(c->steps[i].prim);
    if (c->steps[i].pd) dnnl_primitive_desc_destroy(c->steps[i].pd);
  }
  memset(c, 0, sizeof *c);
}

#define DN(call)                                                              \
  do {                                                                        \
    dnnl_status_t st_ = (call);                                               \
    if (st_ != dnnl_success) {                                                \
      snprintf(err, errlen, "%s failed: %s", #call, dnnl_status2str(st_));    \
      goto fail;                                                              \
    }                                                                         \
  } while (0)

/* A library-owned memory for md (owned by the case), filled from data (count floats) or zeroed. */
static dnnl_memory_t new_mem(pcase *c, const_dnnl_memory_desc_t md, const float *data, size_t count,
                             char *err, size_t errlen) {
  dnnl_memory_t m = NULL;
  void *p = NULL;
  if (dnnl_memory_desc_get_size(md) != count * sizeof(float)) {
    snprintf(err, errlen, "memory size %zu != %zu floats", dnnl_memory_desc_get_size(md), count);
    return NULL;
  }
  DN(dnnl_memory_create(&m, md, g_engine, DNNL_MEMORY_ALLOCATE));
  c->mem[c->nmem++] = m;
  DN(dnnl_memory_map_data(m, &p));
  if (data) memcpy(p, data, count * sizeof(float));
  else memset(p, 0, count * sizeof(float));
  DN(dnnl_memory_unmap_data(m, p));
  return m;
fail:
  return NULL;
}

static void bind(step *s, int arg, dnnl_memory_t m) {
  s->args[s->nargs].arg = arg;
  s->args[s->nargs].memory = m;
  s->nargs++;
}

/* Makes the primitive of step s from its pd (already in s->pd) and records its implementation. */
static int make_prim(step *s, char *err, size_t errlen) {
  const char *impl = NULL;
  DN(dnnl_primitive_create(&s->prim, s->pd));
  dnnl_primitive_desc_query(s->pd, dnnl_query_impl_info_str, 0, &impl);
  snprintf(s->impl, sizeof s->impl, "%s", impl ? impl : "?");
  return 0;
fail:
  return -1;
}

static int is_ref(const_dnnl_primitive_desc_t pd) {
  const char *impl = NULL;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  return impl && !strncmp(impl, "ref", 3);
}

/* --fuse: how gelu_residual and swiglu are built.  auto: eltwise with a binary post-op, unless
 * oneDNN only has its reference implementation for that (oneDNN 3.2's JIT eltwise takes no
 * post-ops), then eltwise (into y) followed by an in-place binary (y op= r/b): two JIT primitives. */
enum { FUSE_AUTO, FUSE_ALWAYS, FUSE_NEVER };
static int g_fuse = FUSE_AUTO;

static const char *supported[] = {"rmsnorm", "layernorm", "gelu_residual", "swiglu", "attention",
                                  "attention_causal", NULL};

/* Why there is no fused SDPA peer (issue 10; said in hello and in docs/peers.md). */
#define SDPA_NOTE                                                                                  \
  "fused SDPA: not available in oneDNN 3.2 on the CPU (the primitive API has no SDPA primitive; "  \
  "the Graph API's f32_MHA_fusion pattern of the dnnl backend needs MatMul, Div|Mul, an Add mask, " \
  "SoftMax, MatMul, Transpose and Reshape|Reorder, has no GQA form, and compiles to a "              \
  "larger_partition_kernel_t, i.e. the same matmul/softmax/matmul primitives one after the other; " \
  "the fused CPU MHA kernels of 3.x are the graph-compiler backend's, which this build does not "  \
  "have)"

static const char *unsupported_reason(const char *k) {
#ifndef XIR_HAVE_DNNL_RMS_NORM
  if (!strcmp(k, "rmsnorm"))
    return "no oneDNN primitive for rmsnorm in this oneDNN: layer normalization has no dnnl_rms_norm "
           "flag before oneDNN 3.3";
#endif
  if (!strcmp(k, "rope")) return "no oneDNN primitive for rope";
  if (!strcmp(k, "softmax_mask"))
    return "no oneDNN primitive for softmax_mask: the softmax primitive has no pre-softmax scale + "
           "additive mask (its post-ops apply after the softmax) and gives NaN, not 0, on a fully masked row";
  if (!strcmp(k, "softmax_causal"))
    return "no oneDNN primitive for softmax_causal: the softmax primitive has no causal mask "
           "(its post-ops apply after the softmax)";
  return NULL;
}

typedef struct { const char *name; float *data; int64_t shp[8]; int nd; } input;

static int dim_of(const jnode *dims, const char *name, int64_t *v) {
  jnode *n = jget(dims, name);
  if (!n || n->type != J_NUM) return -1;
  *v = (int64_t)n->num;
  return 0;
}

static double scalar_of(const jnode *sc, const char *name, double def) {
  jnode *n = jget(sc, name);
  return n && n->type == J_NUM ? n->num : def;
}

/* Loads input `name` and checks its element count. */
static float *load_input(const jnode *inputs, const char *name, int64_t want, input *in,
                         char *err, size_t errlen) {
  const char *path = jstr(inputs, name);
  if (!path) { snprintf(err, errlen, "prepare: missing input '%s'", name); return NULL; }
  in->name = name;
  in->data = npy_read(path, in->shp, &in->nd, err, errlen);
  if (!in->data) return NULL;
  int64_t cnt = 1;
  for (int i = 0; i < in->nd; i++) cnt *= in->shp[i];
  if (cnt != want) {
    snprintf(err, errlen, "input '%s' has %lld elements, expected %lld", name, (long long)cnt, (long long)want);
    free(in->data);
    in->data = NULL;
    return NULL;
  }
  return in->data;
}

static int run_once(pcase *c, int64_t n, char *err, size_t errlen) {
  for (int64_t i = 0; i < n; i++)
    for (int j = 0; j < c->nsteps; j++)
      DN(dnnl_primitive_execute(c->steps[j].prim, g_stream, c->steps[j].nargs, c->steps[j].args));
  DN(dnnl_stream_wait(g_stream));
  return 0;
fail:
  return -1;
}

/* attention / attention_causal: matmul (x scale [+ causal mask]) -> softmax -> matmul (see the top
 * of the file). */
static int prepare_attention(pcase *c, const char *k, const jnode *dims, const jnode *sc,
                             const jnode *inputs, char *err, size_t errlen) {
  const int causal = !strcmp(k, "attention_causal");
  static const char *const names[7] = {"B", "HQ", "HKV", "Q", "K", "D", "DV"};
  int64_t d[7];
  for (int i = 0; i < 7; i++)
    if (dim_of(dims, names[i], &d[i]) || d[i] <= 0) {
      snprintf(err, errlen, "prepare %s: dims B, HQ, HKV, Q, K, D, DV are required and positive", k);
      return -1;
    }
  const int64_t B = d[0], HQ = d[1], HKV = d[2], Q = d[3], K = d[4], D = d[5], DV = d[6];
  if (HQ % HKV) {
    snprintf(err, errlen, "prepare %s: HKV=%lld does not divide HQ=%lld", k, (long long)HKV, (long long)HQ);
    return -1;
  }
  const int64_t G = HQ / HKV, N = B * HKV, M = G * Q;
  double scale = scalar_of(sc, "scale", 0.0);
  if (scale == 0.0) scale = 1.0 / sqrt((double)D);
  input in[3] = {{0}};
  dnnl_memory_desc_t qmd = NULL, kmd = NULL, vmd = NULL, smd = NULL, omd = NULL, mmd = NULL, rmd = NULL;
  dnnl_primitive_attr_t attr1 = NULL, attr2 = NULL;
  dnnl_post_ops_t po1 = NULL, po2 = NULL;
  float *mask = NULL, *rowmask = NULL;
  step *s0 = &c->steps[0], *sb = NULL, *s1, *s2;
  dnnl_memory_t mq, mk, mv, ms, mo, mm = NULL, mr = NULL;
  dnnl_primitive_desc_t masked = NULL;
  if (!load_input(inputs, "q", B * HQ * Q * D, &in[0], err, errlen)) goto fail;
  if (!load_input(inputs, "k", B * HKV * K * D, &in[1], err, errlen)) goto fail;
  if (!load_input(inputs, "v", B * HKV * K * DV, &in[2], err, errlen)) goto fail;
  {
    dnnl_dims_t dq = {N, M, D}, dk = {N, D, K}, dv = {N, K, DV}, ds = {N, M, K}, dout = {N, M, DV};
    dnnl_dims_t dm = {1, M, K}, dr = {1, M, 1};
    DN(dnnl_memory_desc_create_with_tag(&qmd, 3, dq, dnnl_f32, dnnl_abc));
    DN(dnnl_memory_desc_create_with_tag(&kmd, 3, dk, dnnl_f32, dnnl_acb)); /* k[n, j, d]: k^T */
    DN(dnnl_memory_desc_create_with_tag(&vmd, 3, dv, dnnl_f32, dnnl_abc));
    DN(dnnl_memory_desc_create_with_tag(&smd, 3, ds, dnnl_f32, dnnl_abc));
    DN(dnnl_memory_desc_create_with_tag(&omd, 3, dout, dnnl_f32, dnnl_abc));
    DN(dnnl_post_ops_create(&po1));
    DN(dnnl_post_ops_append_eltwise(po1, dnnl_eltwise_linear, (float)scale, 0.f));
    int fully_masked = 0;
    if (causal) {
      /* row r = g * Q + i (query i of the group's head g) sees keys j <= i + (K - Q) */
      DN(dnnl_memory_desc_create_with_tag(&mmd, 3, dm, dnnl_f32, dnnl_abc));
      DN(dnnl_memory_desc_create_with_tag(&rmd, 3, dr, dnnl_f32, dnnl_abc));
      mask = malloc((size_t)(M * K) * sizeof *mask);
      rowmask = malloc((size_t)M * sizeof *rowmask);
      if (!mask || !rowmask) { snprintf(err, errlen, "out of memory"); goto fail; }
      for (int64_t r = 0; r < M; r++) {
        const int64_t i = r % Q;
        for (int64_t j = 0; j < K; j++) mask[r * K + j] = j <= i + (K - Q) ? 0.0f : -1e30f;
        rowmask[r] = i + (K - Q) >= 0 ? 1.0f : 0.0f;
        fully_masked |= rowmask[r] == 0.0f;
      }
    }
    DN(dnnl_primitive_attr_create(&attr1));
    if (causal) {
      /* the mask as a binary post-op of the matmul when oneDNN has a JIT implementation for
       * that; oneDNN 3.2 only has its reference one for a [1, M, K] broadcast ("ref:any"), so
       * by default it is then a binary primitive of its own, in place on S (as for swiglu) */
      dnnl_post_ops_t pm = NULL;
      DN(dnnl_post_ops_clone(&pm, po1));
      dnnl_status_t st = dnnl_post_ops_append_binary(pm, dnnl_binary_add, mmd);
      if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr1, pm);
      dnnl_post_ops_destroy(pm);
      if (st == dnnl_success)
        st = dnnl_matmul_primitive_desc_create(&masked, g_engine, qmd, kmd, NULL, smd, attr1);
      if (st != dnnl_success) masked = NULL;
      if (masked && g_fuse == FUSE_AUTO && is_ref(masked)) {
        dnnl_primitive_desc_destroy(masked);
        masked = NULL;
      }
      if (!masked && g_fuse == FUSE_ALWAYS) {
        snprintf(err, errlen, "matmul with a binary add post-op: %s", dnnl_status2str(st));
        goto fail;
      }
    }
    if (masked) {
      s0->pd = masked;
      masked = NULL;
    } else {
      dnnl_primitive_attr_destroy(attr1); /* a fresh one: the mask post-op must not stay */
      attr1 = NULL;
      DN(dnnl_primitive_attr_create(&attr1));
      DN(dnnl_primitive_attr_set_post_ops(attr1, po1));
      DN(dnnl_matmul_primitive_desc_create(&s0->pd, g_engine, qmd, kmd, NULL, smd, attr1));
      if (causal) {
        sb = &c->steps[1];
        DN(dnnl_binary_primitive_desc_create(&sb->pd, g_engine, dnnl_binary_add, smd, mmd, smd, NULL));
        if (make_prim(sb, err, errlen)) goto fail;
      }
    }
    if (make_prim(s0, err, errlen)) goto fail;
    s1 = &c->steps[sb ? 2 : 1];
    s2 = &c->steps[sb ? 3 : 2];
    DN(dnnl_softmax_forward_primitive_desc_create(&s1->pd, g_engine, dnnl_forward_inference,
                                                  dnnl_softmax_accurate, smd, smd, 2, NULL));
    if (make_prim(s1, err, errlen)) goto fail;
    if (fully_masked) {
      DN(dnnl_post_ops_create(&po2));
      DN(dnnl_post_ops_append_binary(po2, dnnl_binary_mul, rmd));
      DN(dnnl_primitive_attr_create(&attr2));
      DN(dnnl_primitive_attr_set_post_ops(attr2, po2));
    }
    DN(dnnl_matmul_primitive_desc_create(&s2->pd, g_engine, smd, vmd, NULL, omd, attr2));
    if (make_prim(s2, err, errlen)) goto fail;
    c->nsteps = sb ? 4 : 3;
    if (!(mq = new_mem(c, qmd, in[0].data, (size_t)(N * M * D), err, errlen))) goto fail;
    if (!(mk = new_mem(c, kmd, in[1].data, (size_t)(N * K * D), err, errlen))) goto fail;
    if (!(mv = new_mem(c, vmd, in[2].data, (size_t)(N * K * DV), err, errlen))) goto fail;
    if (!(ms = new_mem(c, smd, NULL, (size_t)(N * M * K), err, errlen))) goto fail;
    if (!(mo = new_mem(c, omd, NULL, (size_t)(N * M * DV), err, errlen))) goto fail;
    if (causal && !(mm = new_mem(c, mmd, mask, (size_t)(M * K), err, errlen))) goto fail;
    if (fully_masked && !(mr = new_mem(c, rmd, rowmask, (size_t)M, err, errlen))) goto fail;
    bind(s0, DNNL_ARG_SRC, mq);
    bind(s0, DNNL_ARG_WEIGHTS, mk);
    bind(s0, DNNL_ARG_DST, ms);
    if (mm && !sb) bind(s0, DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, mm);
    if (sb) {
      bind(sb, DNNL_ARG_SRC_0, ms);
      bind(sb, DNNL_ARG_SRC_1, mm);
      bind(sb, DNNL_ARG_DST, ms);
    }
    bind(s1, DNNL_ARG_SRC, ms);
    bind(s1, DNNL_ARG_DST, ms);
    bind(s2, DNNL_ARG_SRC, ms);
    bind(s2, DNNL_ARG_WEIGHTS, mv);
    bind(s2, DNNL_ARG_DST, mo);
    if (mr) bind(s2, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mr);
    c->out = mo;
    c->out_nd = 4;
    c->out_shape[0] = B;
    c->out_shape[1] = HQ;
    c->out_shape[2] = Q;
    c->out_shape[3] = DV;
  }
  fprintf(stderr, "onednn_peer: prepared %s B=%lld HQ=%lld HKV=%lld Q=%lld K=%lld D=%lld DV=%lld: "
          "matmul %s%s%s, softmax %s, matmul %s\n", k, (long long)B, (long long)HQ, (long long)HKV,
          (long long)Q, (long long)K, (long long)D, (long long)DV, s0->impl,
          sb ? ", binary add (mask) " : "", sb ? sb->impl : "", s1->impl, s2->impl);
  if (run_once(c, 1, err, errlen)) goto fail;
  c->ready = 1;
  goto done;
fail:
  if (masked) dnnl_primitive_desc_destroy(masked);
  case_free(c);
done:
  for (int i = 0; i < 3; i++) free(in[i].data);
  free(mask);
  free(rowmask);
  if (attr1) dnnl_primitive_attr_destroy(attr1);
  if (attr2) dnnl_primitive_attr_destroy(attr2);
  if (po1) dnnl_post_ops_destroy(po1);
  if (po2) dnnl_post_ops_destroy(po2);
  dnnl_memory_desc_t mds[7] = {qmd, kmd, vmd, smd, omd, mmd, rmd};
  for (int i = 0; i < 7; i++)
    if (mds[i]) dnnl_memory_desc_destroy(mds[i]);
  return c->ready ? 0 : -1;
}

static int prepare(pcase *c, const jnode *req, char *err, size_t errlen) {
  case_free(c);
  const char *k = jstr(req, "kernel");
  const jnode *dims = jget(req, "dims"), *sc = jget(req, "scalars"), *inputs = jget(req, "inputs");
  if (!k) { snprintf(err, errlen, "prepare: no kernel"); return -1; }
  const char *why = unsupported_reason(k);
  if (why) { snprintf(err, errlen, "%s", why); return -1; }
  int known = 0;
  for (int i = 0; supported[i]; i++) known |= !strcmp(k, supported[i]);
  if (!known) { snprintf(err, errlen, "unknown kernel '%s'", k); return -1; }
  if (!strncmp(k, "attention", 9)) return prepare_attention(c, k, dims, sc, inputs, err, errlen);

  int64_t R, C;
  if (dim_of(dims, "R", &R) || dim_of(dims, "C", &C) || R <= 0 || C <= 0) {
    snprintf(err, errlen, "prepare %s: dims R and C are required and positive", k);
    return -1;
  }
  input in[3] = {{0}};
  dnnl_memory_desc_t md2 = NULL, md1 = NULL;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  dnnl_primitive_desc_t fused = NULL;
  dnnl_dims_t d2 = {R, C}, d1 = {C};
  DN(dnnl_memory_desc_create_with_tag(&md2, 2, d2, dnnl_f32, dnnl_ab));
  DN(dnnl_memory_desc_create_with_tag(&md1, 1, d1, dnnl_f32, dnnl_a));
  size_t n2 = (size_t)(R * C);
  dnnl_memory_t m0, m1, m2, y;
  step *s0 = &c->steps[0], *s1 = &c->steps[1];

  if (!strcmp(k, "rmsnorm") || !strcmp(k, "layernorm")) {
    int ln = !strcmp(k, "layernorm");
    double eps = scalar_of(sc, "eps", 1e-5);
    if (!load_input(inputs, "x", R * C, &in[0], err, errlen)) goto fail;
    if (!load_input(inputs, "w", C, &in[1], err, errlen)) goto fail;
    if (ln && !load_input(inputs, "b", C, &in[2], err, errlen)) goto fail;
#ifdef XIR_HAVE_DNNL_RMS_NORM
    unsigned flags = ln ? (dnnl_use_scale | dnnl_use_shift) : (dnnl_use_scale | dnnl_rms_norm);
#else
    unsigned flags = dnnl_use_scale | dnnl_use_shift;
#endif
    c->nsteps = 1;
    DN(dnnl_layer_normalization_forward_primitive_desc_create(&s0->pd, g_engine, dnnl_forward_inference,
                                                              md2, md2, NULL, (float)eps, flags, NULL));
    if (make_prim(s0, err, errlen)) goto fail;
    if (!(m0 = new_mem(c, md2, in[0].data, n2, err, errlen))) goto fail;
    if (!(m1 = new_mem(c, md1, in[1].data, (size_t)C, err, errlen))) goto fail;
    if (!(y = new_mem(c, md2, NULL, n2, err, errlen))) goto fail;
    bind(s0, DNNL_ARG_SRC, m0);
    bind(s0, DNNL_ARG_SCALE, m1);
    if (ln) {
      if (!(m2 = new_mem(c, md1, in[2].data, (size_t)C, err, errlen))) goto fail;
      bind(s0, DNNL_ARG_SHIFT, m2);
    }
    bind(s0, DNNL_ARG_DST, y);
  } else { /* gelu_residual, swiglu */
    int gelu = !strcmp(k, "gelu_residual");
    const char *a_name = gelu ? "x" : "a", *b_name = gelu ? "r" : "b";
    dnnl_alg_kind_t ealg = gelu ? dnnl_eltwise_gelu_tanh : dnnl_eltwise_swish;
    dnnl_alg_kind_t balg = gelu ? dnnl_binary_add : dnnl_binary_mul;
    float alpha = gelu ? 0.f : 1.f; /* swish(x) = x * sigmoid(alpha * x): alpha = 1 is silu */
    if (!load_input(inputs, a_name, R * C, &in[0], err, errlen)) goto fail;
    if (!load_input(inputs, b_name, R * C, &in[1], err, errlen)) goto fail;
    if (!(m0 = new_mem(c, md2, in[0].data, n2, err, errlen))) goto fail;
    if (!(m1 = new_mem(c, md2, in[1].data, n2, err, errlen))) goto fail;
    if (!(y = new_mem(c, md2, NULL, n2, err, errlen))) goto fail;
    if (g_fuse != FUSE_NEVER) {
      DN(dnnl_post_ops_create(&po));
      DN(dnnl_post_ops_append_binary(po, balg, md2));
      DN(dnnl_primitive_attr_create(&attr));
      DN(dnnl_primitive_attr_set_post_ops(attr, po));
      dnnl_status_t st = dnnl_eltwise_forward_primitive_desc_create(&fused, g_engine, dnnl_forward_inference, ealg,
                                                                    md2, md2, alpha, 0.f, attr);
      if (st != dnnl_success) fused = NULL;
      if (fused && g_fuse == FUSE_AUTO && is_ref(fused)) {
        dnnl_primitive_desc_destroy(fused);
        fused = NULL;
      }
      if (!fused && g_fuse == FUSE_ALWAYS) {
        snprintf(err, errlen, "eltwise with a binary post-op: %s", dnnl_status2str(st));
        goto fail;
      }
    }
    if (fused) { /* one primitive: y = eltwise(a) op b */
      c->nsteps = 1;
      s0->pd = fused;
      fused = NULL;
      if (make_prim(s0, err, errlen)) goto fail;
      bind(s0, DNNL_ARG_SRC, m0);
      bind(s0, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, m1);
      bind(s0, DNNL_ARG_DST, y);
    } else { /* two primitives: y = eltwise(a); y = y op b (in place) */
      c->nsteps = 2;
      DN(dnnl_eltwise_forward_primitive_desc_create(&s0->pd, g_engine, dnnl_forward_inference, ealg, md2, md2,
                                                    alpha, 0.f, NULL));
      if (make_prim(s0, err, errlen)) goto fail;
      DN(dnnl_binary_primitive_desc_create(&s1->pd, g_engine, balg, md2, md2, md2, NULL));
      if (make_prim(s1, err, errlen)) goto fail;
      bind(s0, DNNL_ARG_SRC, m0);
      bind(s0, DNNL_ARG_DST, y);
      bind(s1, DNNL_ARG_SRC_0, y);
      bind(s1, DNNL_ARG_SRC_1, m1);
      bind(s1, DNNL_ARG_DST, y);
    }
  }
  c->out = y;
  c->out_nd = 2;
  c->out_shape[0] = R;
  c->out_shape[1] = C;

  /* The scratchpad, if any, is owned by the primitive (default scratchpad mode). */
  fprintf(stderr, "onednn_peer: prepared %s R=%lld C=%lld: %s%s%s\n", k, (long long)R, (long long)C,
          c->steps[0].impl, c->nsteps > 1 ? " then " : "", c->nsteps > 1 ? c->steps[1].impl : "");
  /* One warm-up execution so that first-touch costs fall outside "run". */
  if (run_once(c, 1, err, errlen)) goto fail;
  c->ready = 1;
  for (int i = 0; i < 3; i++) free(in[i].data);
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (po) dnnl_post_ops_destroy(po);
  dnnl_memory_desc_destroy(md2);
  dnnl_memory_desc_destroy(md1);
  return 0;
fail:
  for (int i = 0; i < 3; i++) free(in[i].data);
  if (fused) dnnl_primitive_desc_destroy(fused);
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (po) dnnl_post_ops_destroy(po);
  if (md2) dnnl_memory_desc_destroy(md2);
  if (md1) dnnl_memory_desc_destroy(md1);
  case_free(c);
  return -1;
}

static int write_output(pcase *c, const char *path, char *err, size_t errlen) {
  void *p = NULL;
  DN(dnnl_memory_map_data(c->out, &p));
  int rc = npy_write(path, p, c->out_shape, c->out_nd);
  DN(dnnl_memory_unmap_data(c->out, p));
  if (rc) { snprintf(err, errlen, "output: cannot write %s: %s", path, strerror(errno)); return -1; }
  return 0;
fail:
  return -1;
}

/* The "case" member of req as a string in id: 1 if present, 0 if absent, -1 if of another type. */
static int case_id(const jnode *req, char *id, size_t cap) {
  jnode *n = jget(req, "case");
  id[0] = 0;
  if (!n) return 0;
  if (n->type == J_STR) snprintf(id, cap, "%s", n->str);
  else if (n->type == J_NUM) snprintf(id, cap, "%.17g", n->num);
  else return -1;
  return 1;
}

static int find_slot(const char *id) {
  for (int i = 0; i < g_nslots; i++)
    if (!strcmp(g_slots[i].id, id)) return i;
  return -1;
}

/* The case a run/output request is about: its "case", else the last prepared. */
static pcase *case_of(const jnode *req, const char *op, char *err, size_t errlen) {
  char id[64];
  int has = case_id(req, id, sizeof id);
  int i = has > 0 ? find_slot(id) : has == 0 ? g_cur : -1;
  if (i < 0 || !g_slots[i].c.ready) {
    if (has > 0) snprintf(err, errlen, "%s: no prepared case '%s'", op, id);
    else if (has < 0) snprintf(err, errlen, "%s: \"case\" must be a string or a number", op);
    else snprintf(err, errlen, "%s: no prepared case", op);
    return NULL;
  }
  return &g_slots[i].c;
}

static const char *runtime_name(unsigned r) {
  switch (r) {
    case DNNL_RUNTIME_NONE: return "none";
    case DNNL_RUNTIME_SEQ: return "sequential";
    case DNNL_RUNTIME_OMP: return "OpenMP";
    case DNNL_RUNTIME_TBB: return "TBB";
    case DNNL_RUNTIME_THREADPOOL: return "threadpool";
    case DNNL_RUNTIME_OCL: return "OpenCL";
    case DNNL_RUNTIME_SYCL: return "SYCL";
    default: return "?";
  }
}

/* Narrows the CPU affinity to `threads` CPUs if it is wider (TBB sizes its pool from it). */
static int limit_threads(int threads) {
  char buf[16];
  snprintf(buf, sizeof buf, "%d", threads);
  setenv("OMP_NUM_THREADS", buf, 1);
  void (*omp_set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
  if (omp_set) omp_set(threads);
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set)) return -1;
  int have = CPU_COUNT(&set);
  if (have <= threads) return have;
  cpu_set_t keep;
  CPU_ZERO(&keep);
  int kept = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && kept < threads; cpu++)
    if (CPU_ISSET(cpu, &set)) { CPU_SET(cpu, &keep); kept++; }
  sched_setaffinity(0, sizeof keep, &keep);
  return kept;
}

int main(int argc, char **argv) {
  int threads = 2;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--fuse") && i + 1 < argc) {
      const char *f = argv[++i];
      g_fuse = !strcmp(f, "always") ? FUSE_ALWAYS : !strcmp(f, "never") ? FUSE_NEVER : FUSE_AUTO;
    }
    else if (!strcmp(argv[i], "--version")) {
      const dnnl_version_t *v = dnnl_version();
      printf("oneDNN %d.%d.%d (cpu runtime %s)\n", v->major, v->minor, v->patch, runtime_name(v->cpu_runtime));
      return 0;
    } else {
      fprintf(stderr, "usage: %s [--threads N] [--fuse auto|always|never] [--version]\n  speaks docs/peers.md's line-JSON protocol on stdin/stdout\n", argv[0]);
      return 2;
    }
  }
  if (threads < 1) threads = 1;
  int cpus = limit_threads(threads);
  char err[2048];
  size_t errlen = sizeof err;
  int engine_ok = 0;
  {
    DN(dnnl_engine_create(&g_engine, dnnl_cpu, 0));
    DN(dnnl_stream_create(&g_stream, g_engine, dnnl_stream_in_order));
    engine_ok = 1;
  fail:;
  }
  if (!engine_ok) fprintf(stderr, "onednn_peer: %s\n", err);

  size_t cap = 0;
  char *line = NULL;
  ssize_t len;
  while ((len = getline(&line, &cap, stdin)) >= 0) {
    jparser P = {line, 0};
    jws(&P);
    if (!*P.p) continue;
    jnode *req = jvalue(&P);
    const char *op = P.err ? NULL : jstr(req, "op");
    if (!op) {
      reply_err("bad request (one JSON object with \"op\" per line expected)");
    } else if (!strcmp(op, "hello")) {
      const dnnl_version_t *v = dnnl_version();
      char detail[2048];
      int (*omp_max)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "omp_get_max_threads");
      snprintf(detail, sizeof detail,
               "oneDNN C API %d.%d.%d (%.12s), cpu runtime %s, threads %d (omp_get_max_threads %d, cpus in affinity %d); "
               "primitives: rmsnorm=%s, layernorm=layer_normalization"
               "(use_scale|use_shift), gelu_residual=eltwise gelu_tanh, swiglu=eltwise swish(alpha=1), each then "
               "binary add/mul: %s; attention, attention_causal = matmul (x scale, causal: + "
               "additive mask) -> softmax -> matmul, GQA as [B*HKV, G*Q, D] x k^T; " SDPA_NOTE "%s",
               v->major, v->minor, v->patch, v->hash ? v->hash : "", runtime_name(v->cpu_runtime), threads,
               omp_max ? omp_max() : -1, cpus,
#ifdef XIR_HAVE_DNNL_RMS_NORM
               "layer_normalization(rms_norm|use_scale)",
#else
               "unsupported (no dnnl_rms_norm before 3.3)",
#endif
               g_fuse == FUSE_ALWAYS ? "as a binary post-op (--fuse always)"
               : g_fuse == FUSE_NEVER ? "as a second primitive (--fuse never)"
               : "as a binary post-op unless only the reference implementation has it, else a second "
                 "primitive, in place (--fuse auto)",
               engine_ok ? "" : "; ENGINE CREATION FAILED");
      char ver[32];
      snprintf(ver, sizeof ver, "%d.%d.%d", v->major, v->minor, v->patch);
      fputs("{\"ok\":true,\"peer\":\"onednn\",\"version\":", stdout);
      json_escape(stdout, ver);
      fputs(",\"detail\":", stdout);
      json_escape(stdout, detail);
      fputs("}\n", stdout);
      fflush(stdout);
    } else if (!strcmp(op, "prepare")) {
      char id[64];
      int i = -1;
      if (!engine_ok) reply_err("oneDNN CPU engine could not be created");
      else if (case_id(req, id, sizeof id) < 0) reply_err("prepare: \"case\" must be a string or a number");
      else {
        if ((i = find_slot(id)) < 0) {
          slot *ns = realloc(g_slots, sizeof *g_slots * (size_t)(g_nslots + 1));
          if (!ns) { reply_err("out of memory"); jfree(req); continue; }
          g_slots = ns;
          i = g_nslots++;
          memset(&g_slots[i], 0, sizeof g_slots[i]);
          snprintf(g_slots[i].id, sizeof g_slots[i].id, "%s", id);
        }
        g_cur = -1;
        if (prepare(&g_slots[i].c, req, err, errlen)) reply_err("%s", err);
        else {
          g_cur = i;
          reply_ok();
        }
      }
    } else if (!strcmp(op, "run")) {
      jnode *nn = jget(req, "n");
      int64_t n = nn && nn->type == J_NUM ? (int64_t)nn->num : 0;
      pcase *c = case_of(req, "run", err, errlen);
      if (!c) reply_err("%s", err);
      else if (n < 1) reply_err("run: n must be a positive integer");
      else {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc = run_once(c, n, err, errlen);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (rc) reply_err("%s", err);
        else {
          long long ns = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
          printf("{\"ok\":true,\"ns\":%lld}\n", ns);
          fflush(stdout);
        }
      }
    } else if (!strcmp(op, "output")) {
      const char *path = jstr(req, "path");
      pcase *c = case_of(req, "output", err, errlen);
      if (!c) reply_err("%s", err);
      else if (!path) reply_err("output: no path");
      else if (write_output(c, path, err, errlen)) reply_err("%s", err);
      else reply_ok();
    } else if (!strcmp(op, "quit")) {
      jfree(req);
      break;
    } else {
      reply_err("unknown op '%s'", op);
    }
    jfree(req);
  }
  free(line);
  for (int i = 0; i < g_nslots; i++) case_free(&g_slots[i].c);
  free(g_slots);
  if (g_stream) dnnl_stream_destroy(g_stream);
  if (g_engine) dnnl_engine_destroy(g_engine);
  return 0;
}

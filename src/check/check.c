/* check.c — seeded cases, the oracle, guarded outputs and comparison (see check.h). */
#include "check/check.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ir/program.h"
#include "util/sha256.h"
#include "util/util.h"
#include "util/half.h"
#include "util/npy.h"
#include "util/rng.h"

static const uint32_t kUnwritten = 0x7fc0dead; /* a quiet NaN: "nobody wrote this element" */
static const uint32_t kSentinel = 0x7fa5a5a5;  /* a NaN with another payload: the guards */
/* the same for 16-bit outputs (NaN as bf16 and as f16) */
static const uint16_t kUnwritten16 = 0x7fd5, kSentinel16 = 0x7fa5;

static int is_half(int elem) { return elem == XIR_BF16 || elem == XIR_F16; }

static uint16_t to_half(int elem, float x) {
  return elem == XIR_BF16 ? xir__f32_to_bf16(x) : xir__f32_to_f16(x);
}

static float from_half(int elem, uint16_t h) {
  return elem == XIR_BF16 ? xir__bf16_to_f32(h) : xir__f16_to_f32(h);
}

void xir__case_input_range(const xir_program *p, int param, float *lo, float *hi) {
  const char *n = p->params[param].name;
  *lo = -2.0f;
  *hi = 2.0f;
  if (strcmp(n, "q") == 0 || strcmp(n, "k") == 0) {
    *lo = -1.0f;
    *hi = 1.0f;
  }
}

void xir__case_input_range_i64(const xir_program *p, const xir_shape *shape, int param,
                               int64_t *hi) {
  int64_t h = 0;
  for (int i = p->body_begin; i < p->nnodes; i++) {
    const xir_node *m = &p->nodes[i];
    if (m->op != XIR_OP_LOAD) continue;
    for (int k = 0; k < m->nargs; k++) {
      int a = m->args[k];
      if (a < 0 || p->nodes[a].op != XIR_OP_LOAD || p->nodes[a].ref != param) continue;
      int64_t e = shape->dims[p->params[m->ref].dims[k]];
      if (h == 0 || e < h) h = e;
    }
  }
  *hi = h ? h : 1024;
}

static void fill_u32(float *p, size_t n, uint32_t bits) {
  for (size_t i = 0; i < n; i++) memcpy(&p[i], &bits, 4);
}

/* n bytes at a 64-byte boundary inside a new allocation (*raw, for xir__free). */
static void *alloc64(size_t n, void **raw) {
  *raw = xir__malloc(n + 64);
  if (!*raw) return NULL;
  return (void *)(((uintptr_t)*raw + 63) & ~(uintptr_t)63);
}

xir_status xir__case_init(xir_case *c, const xir_program *p, const xir_shape *shape,
                          uint64_t seed, xir_diag *d) {
  memset(c, 0, sizeof *c);
  c->p = p;
  c->shape = *shape;
  c->seed = seed;
  xir_status s = xir_shape_check(p, shape, d);
  if (s) return s;
  /* every buffer at once, checked against the memory actually there (an overcommitted malloc
   * would succeed and the process be OOM-killed while filling it) */
  uint64_t need = 0;
  for (int i = 0; i < p->nparams; i++) {
    const xir_param *q = &p->params[i];
    if (q->kind != XIR_PARAM_BUFFER) continue;
    uint64_t n = (uint64_t)xir_param_numel(p, i, shape);
    need += q->is_output            ? (n + 2 * XIR_CASE_GUARD) * sizeof(float) + n * sizeof(double)
            : is_half(q->elem)       ? n * (sizeof(uint16_t) + sizeof(float))
            : q->elem == XIR_I64 ? n * (sizeof(int64_t) + sizeof(float)) /* values + float copy */
                                 : n * sizeof(float);
  }
  char what[128];
  snprintf(what, sizeof what, "the buffers of '%s' (inputs, guarded outputs, fp64 oracle)", p->name);
  if ((s = xir__mem_check(need, what, d))) return s;
  for (int i = 0; i < p->nparams; i++) {
    const xir_param *q = &p->params[i];
    if (q->kind != XIR_PARAM_BUFFER) {
      c->args[i].use_default = q->has_default;
      c->args[i].scalar = q->has_default ? q->default_value : 0;
      continue;
    }
    size_t n = xir_param_numel(p, i, shape);
    c->numel[i] = n;
    if (q->is_output && is_half(q->elem)) {
      c->hguard[i] = alloc64((n + 2 * XIR_CASE_GUARD) * sizeof(uint16_t), &c->graw[i]);
      c->ref[i] = xir__malloc(n * sizeof(double));
      if (!c->hguard[i] || !c->ref[i]) goto oom;
      c->hdata[i] = c->hguard[i] + XIR_CASE_GUARD;
      c->args[i].out = c->hdata[i];
      c->args[i].out64 = c->ref[i];
    } else if (q->is_output) {
      c->guard[i] = alloc64((n + 2 * XIR_CASE_GUARD) * sizeof(float), &c->graw[i]);
      c->ref[i] = xir__malloc(n * sizeof(double));
      if (!c->guard[i] || !c->ref[i]) goto oom;
      c->data[i] = c->guard[i] + XIR_CASE_GUARD;
      c->args[i].out = c->data[i];
      c->args[i].out64 = c->ref[i];
    } else if (q->elem == XIR_I64) {
      c->idata[i] = xir__malloc(n * sizeof(int64_t));
      c->data[i] = xir__malloc(n * sizeof(float));
      if (!c->idata[i] || !c->data[i]) goto oom;
      xir_rng rng;
      xir__rng_seed(&rng, seed, (uint64_t)i);
      int64_t hi;
      xir__case_input_range_i64(p, shape, i, &hi);
      int any = 0;
      for (size_t k = 0; k < n; k++) {
        c->idata[i][k] = (int64_t)xir__rng_below(&rng, (uint64_t)hi);
        any |= c->idata[i][k] != 0;
      }
      if (!any && hi > 1) c->idata[i][n - 1] = hi - 1; /* never all zeros */
      for (size_t k = 0; k < n; k++) c->data[i][k] = (float)c->idata[i][k];
      c->args[i].in = c->idata[i];
    } else {
      c->data[i] = xir__malloc(n * sizeof(float));
      if (!c->data[i]) goto oom;
      xir_rng rng;
      xir__rng_seed(&rng, seed, (uint64_t)i);
      float lo, hi;
      xir__case_input_range(p, i, &lo, &hi);
      if ((s = xir__rng_fill_f32(&rng, c->data[i], n, lo, hi, d))) {
        xir__case_free(c);
        return s;
      }
      c->args[i].in = c->data[i];
      if (is_half(q->elem)) {
        /* the stored values: the f32 draws rounded (never zero), data[] their f32 view */
        if (!(c->hdata[i] = xir__malloc(n * sizeof(uint16_t)))) goto oom;
        for (size_t k = 0; k < n; k++) {
          uint16_t h = to_half(q->elem, c->data[i][k]);
          if (!(h & 0x7fff)) h = (uint16_t)(h | (q->elem == XIR_BF16 ? 0x3f80 : 0x3c00));
          c->hdata[i][k] = h;
          c->data[i][k] = from_half(q->elem, h);
        }
        c->args[i].in = c->hdata[i];
      }
    }
  }
  xir__case_reset_outputs(c);
  return XIR_OK;
oom:
  xir__case_free(c);
  return xir__err(d, XIR_ERR_NOMEM, "out of memory allocating the buffers of '%s'", p->name);
}

/* Input array a of parameter i: 0 data, 1 hdata, 2 idata (NULL when it has none). */
static void *input_array(const xir_case *c, int i, int a) {
  return a == 0 ? (void *)c->data[i] : a == 1 ? (void *)c->hdata[i] : (void *)c->idata[i];
}

/* Frees input array a of parameter i, placed or not. */
static void free_input(xir_case *c, int i, int a) {
  xir__free(c->iraw[i][a] ? c->iraw[i][a] : input_array(c, i, a));
  c->iraw[i][a] = NULL;
}

int xir__case_offset_ok(double offset) {
  return offset >= 0 && offset < 64 && offset == floor(offset) && fmod(offset, 8) == 0;
}

xir_status xir__case_place_inputs(xir_case *c, int offset, xir_diag *d) {
  if (!xir__case_offset_ok(offset))
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "input offset %d: must be a multiple of 8 bytes in [0, 64)", offset);
  const xir_program *p = c->p;
  enum { PAGE = 4096 };
  size_t es[3] = {sizeof(float), sizeof(uint16_t), sizeof(int64_t)};
  uint64_t need = 0;
  for (int i = 0; i < p->nparams; i++) {
    if (p->params[i].kind != XIR_PARAM_BUFFER || p->params[i].is_output) continue;
    if (c->sview[i])
      return xir__err(d, XIR_ERR_INVALID_ARG, "input '%s' already has a strided view: place the "
                      "inputs before xir__case_set_row_stride", p->params[i].name);
    for (int a = 0; a < 3; a++)
      if (input_array(c, i, a)) need += c->numel[i] * es[a] + PAGE + (uint64_t)offset;
  }
  char what[128];
  snprintf(what, sizeof what, "a second copy of the inputs of '%s' (placing them)", p->name);
  xir_status st = xir__mem_check(need, what, d);
  if (st) return st;
  void *raw[XIR_MAX_PARAMS][3] = {{NULL}}, *moved[XIR_MAX_PARAMS][3] = {{NULL}};
  for (int i = 0; i < p->nparams; i++) {
    if (p->params[i].kind != XIR_PARAM_BUFFER || p->params[i].is_output) continue;
    for (int a = 0; a < 3; a++) {
      void *arr = input_array(c, i, a);
      if (!arr) continue;
      size_t bytes = c->numel[i] * es[a];
      if (!(raw[i][a] = xir__malloc(bytes + PAGE + (size_t)offset))) {
        for (int j = 0; j <= i; j++)
          for (int b = 0; b < 3; b++) xir__free(raw[j][b]);
        return xir__err(d, XIR_ERR_NOMEM, "out of memory placing the inputs of '%s'", p->name);
      }
      moved[i][a] = (char *)(((uintptr_t)raw[i][a] + PAGE - 1) & ~(uintptr_t)(PAGE - 1)) + offset;
      memcpy(moved[i][a], arr, bytes);
    }
  }
  for (int i = 0; i < p->nparams; i++) {
    if (p->params[i].kind != XIR_PARAM_BUFFER || p->params[i].is_output) continue;
    for (int a = 0; a < 3; a++) {
      if (!moved[i][a]) continue;
      if (c->args[i].in == input_array(c, i, a)) c->args[i].in = moved[i][a];
      free_input(c, i, a);
      c->iraw[i][a] = raw[i][a];
    }
    if (c->data[i]) c->data[i] = moved[i][0];
    if (c->hdata[i]) c->hdata[i] = moved[i][1];
    if (c->idata[i]) c->idata[i] = moved[i][2];
  }
  return XIR_OK;
}

xir_status xir__case_set_scalar(xir_case *c, const char *name, double value, xir_diag *d) {
  int i = xir_program_find_param(c->p, name);
  if (i < 0 || c->p->params[i].kind != XIR_PARAM_SCALAR)
    return xir__err(d, XIR_ERR_NOT_FOUND, "kernel '%s' has no scalar parameter '%s'",
                    c->p->name, name);
  if (!isfinite(value))
    return xir__err(d, XIR_ERR_INVALID_ARG, "scalar '%s' must be finite", name);
  if (c->p->params[i].elem == XIR_I64) {
    /* i64 scalars travel as doubles: only integers of magnitude <= 2^53 are exact */
    if (value != trunc(value))
      return xir__err(d, XIR_ERR_INVALID_ARG, "scalar '%s' is an i64: %.17g is not an integer",
                      name, value);
    if (fabs(value) > XIR_CASE_MAX_EXACT_I64)
      return xir__err(d, XIR_ERR_INVALID_ARG, "scalar '%s' = %.17g is outside the i64 range this "
                      "tool carries exactly, [-2^53, 2^53]", name, value);
  } else if (fabs(value) >= 0x1.ffffffp+127) { /* rounds to infinity in f32 */
    return xir__err(d, XIR_ERR_INVALID_ARG, "scalar '%s' is an f32: %.17g is outside the f32 "
                    "range (|v| <= %.9g)", name, value, (double)FLT_MAX);
  }
  c->args[i].scalar = value;
  c->args[i].use_default = 0;
  return XIR_OK;
}

xir_status xir__case_load_inputs(xir_case *c, const char *dir, xir_diag *d) {
  for (int i = 0; i < c->p->nparams; i++) {
    const xir_param *q = &c->p->params[i];
    if (q->kind != XIR_PARAM_BUFFER || q->is_output) continue;
    char path[4096], fname[128];
    snprintf(fname, sizeof fname, "%s.npy", q->name);
    snprintf(path, sizeof path, "%s/%s", dir, fname);
    float *data = NULL;
    int64_t *idata = NULL;
    uint16_t *hdata = NULL;
    size_t shape[XIR_MAX_RANK], want[XIR_MAX_RANK];
    int ndim = 0;
    xir_status s;
    if (is_half(q->elem)) {
      /* the 16-bit file, or an f32 one rounded to the buffer's type */
      xir_diag d16;
      s = xir__npy_read_half(path, &hdata, shape, &ndim, XIR_MAX_RANK, q->elem == XIR_BF16, &d16);
      if (s == XIR_ERR_FORMAT && strstr(d16.msg, "unsupported dtype '<f4'"))
        s = xir__npy_read_f32(path, &data, shape, &ndim, XIR_MAX_RANK, d);
      else if (s && d)
        *d = d16;
    } else {
      s = q->elem == XIR_I64 ? xir__npy_read_i64(path, &idata, shape, &ndim, XIR_MAX_RANK, d)
                             : xir__npy_read_f32(path, &data, shape, &ndim, XIR_MAX_RANK, d);
    }
    if (s) return s;
    for (int k = 0; k < q->rank; k++) want[k] = (size_t)c->shape.dims[q->dims[k]];
    if ((s = xir__npy_check_shape(fname, shape, ndim, want, q->rank, d))) {
      xir__free(data);
      xir__free(idata);
      xir__free(hdata);
      return s;
    }
    if (is_half(q->elem)) {
      /* both views: the stored bits (hdata) and their f32 values (data) */
      size_t n = c->numel[i];
      int from_f32 = data != NULL;
      if (from_f32) hdata = xir__malloc(n * sizeof(uint16_t));
      else data = xir__malloc(n * sizeof(float));
      if (!hdata || !data) {
        xir__free(hdata);
        xir__free(data);
        return xir__err(d, XIR_ERR_NOMEM, "out of memory reading '%s'", path);
      }
      for (size_t k = 0; k < n; k++) {
        if (from_f32) hdata[k] = to_half(q->elem, data[k]);
        data[k] = from_half(q->elem, hdata[k]);
      }
      free_input(c, i, 1);
      c->hdata[i] = hdata;
    }
    if (idata) {
      size_t n = c->numel[i];
      data = xir__malloc(n * sizeof(float));
      if (!data) {
        xir__free(idata);
        return xir__err(d, XIR_ERR_NOMEM, "out of memory reading '%s'", path);
      }
      for (size_t k = 0; k < n; k++) data[k] = (float)idata[k];
      free_input(c, i, 2);
      c->idata[i] = idata;
    }
    free_input(c, i, 0);
    c->data[i] = data;
    c->args[i].in = idata ? (const void *)idata : hdata ? (const void *)hdata : (const void *)data;
  }
  return XIR_OK;
}

/* Row length and row count of a strided buffer. */
static void rows_of(const xir_case *c, int i, size_t *len, size_t *rows) {
  const xir_param *q = &c->p->params[i];
  *len = (size_t)c->shape.dims[q->dims[q->rank - 1]];
  *rows = *len ? c->numel[i] / *len : 0;
}

/* Offset in the strided view (after its guard) of logical element e. */
static size_t view_off(const xir_case *c, int i, size_t e) {
  size_t len, rows;
  rows_of(c, i, &len, &rows);
  return (e / len) * (size_t)c->row_stride[i] + e % len;
}

xir_status xir__case_set_row_stride(xir_case *c, int param, int64_t row_stride, xir_diag *d) {
  const xir_program *p = c->p;
  if (param < 0 || param >= p->nparams || p->params[param].kind != XIR_PARAM_BUFFER ||
      p->params[param].rank < 2 || p->params[param].elem != XIR_F32)
    return xir__err(d, XIR_ERR_INVALID_ARG, "a row stride needs an f32 buffer of rank >= 2");
  size_t len, rows;
  rows_of(c, param, &len, &rows);
  if (row_stride < (int64_t)len)
    return xir__err(d, XIR_ERR_INVALID_ARG, "row stride %lld is below the row length %zu",
                    (long long)row_stride, len);
  size_t n = rows ? (rows - 1) * (size_t)row_stride + len : 0;
  float *v = xir__malloc((n + 2 * XIR_CASE_GUARD) * sizeof(float));
  if (!v) return xir__err(d, XIR_ERR_NOMEM, "out of memory for a strided view");
  xir__free(c->sview[param]);
  c->sview[param] = v;
  c->row_stride[param] = row_stride;
  fill_u32(v, n + 2 * XIR_CASE_GUARD, kSentinel);
  float *body = v + XIR_CASE_GUARD;
  c->args[param].row_stride = row_stride;
  if (p->params[param].is_output) {
    c->args[param].out = body;
  } else {
    for (size_t r = 0; r < rows; r++) memcpy(body + r * (size_t)row_stride, c->data[param] + r * len, len * sizeof(float));
    c->args[param].in = body;
  }
  xir__case_reset_outputs(c);
  return XIR_OK;
}

xir_status xir__case_oracle(xir_case *c, xir_diag *d) {
  /* the interpreter writes a strided output's elements where native code does: a strided
   * fp64 buffer, then gathered into ref[] */
  xir_arg a[XIR_MAX_PARAMS];
  double *tmp[XIR_MAX_PARAMS] = {0};
  memcpy(a, c->args, sizeof a);
  xir_status s = XIR_OK;
  for (int i = 0; i < c->p->nparams && !s; i++) {
    if (!c->sview[i] || !c->p->params[i].is_output) continue;
    size_t len, rows;
    rows_of(c, i, &len, &rows);
    size_t n = rows ? (rows - 1) * (size_t)c->row_stride[i] + len : 0;
    if (!(tmp[i] = xir__calloc(n + 1, sizeof(double))))
      s = xir__err(d, XIR_ERR_NOMEM, "out of memory for a strided oracle output");
    a[i].out64 = tmp[i];
  }
  if (!s) s = xir_interpret(c->p, &c->shape, a, d);
  for (int i = 0; i < c->p->nparams; i++) {
    if (!s && tmp[i])
      for (size_t e = 0; e < c->numel[i]; e++) c->ref[i][e] = tmp[i][view_off(c, i, e)];
    xir__free(tmp[i]);
  }
  return s;
}

static void fill_u16(uint16_t *p, size_t n, uint16_t bits) {
  for (size_t i = 0; i < n; i++) p[i] = bits;
}

void xir__case_reset_outputs(xir_case *c) {
  for (int i = 0; i < c->p->nparams; i++) {
    if (c->hguard[i]) {
      fill_u16(c->hguard[i], XIR_CASE_GUARD, kSentinel16);
      fill_u16(c->hdata[i], c->numel[i], kUnwritten16);
      fill_u16(c->hdata[i] + c->numel[i], XIR_CASE_GUARD, kSentinel16);
    }
    if (!c->guard[i]) continue;
    if (c->sview[i]) {
      size_t len, rows;
      rows_of(c, i, &len, &rows);
      size_t n = rows ? (rows - 1) * (size_t)c->row_stride[i] + len : 0;
      fill_u32(c->sview[i], n + 2 * XIR_CASE_GUARD, kSentinel);
      for (size_t r = 0; r < rows; r++)
        fill_u32(c->sview[i] + XIR_CASE_GUARD + r * (size_t)c->row_stride[i], len, kUnwritten);
    }
    fill_u32(c->guard[i], XIR_CASE_GUARD, kSentinel);
    fill_u32(c->data[i], c->numel[i], kUnwritten);
    fill_u32(c->data[i] + c->numel[i], XIR_CASE_GUARD, kSentinel);
  }
}

int xir__case_sentinels_ok(const xir_case *c) {
  for (int i = 0; i < c->p->nparams; i++) {
    if (c->hguard[i])
      for (size_t k = 0; k < XIR_CASE_GUARD; k++)
        if (c->hguard[i][k] != kSentinel16 || c->hdata[i][c->numel[i] + k] != kSentinel16)
          return 0;
    if (!c->guard[i]) continue;
    if (c->sview[i]) {
      /* every element of the view that is not a logical element: guards and gaps */
      size_t len, rows;
      rows_of(c, i, &len, &rows);
      size_t n = rows ? (rows - 1) * (size_t)c->row_stride[i] + len : 0;
      for (size_t k = 0; k < n + 2 * XIR_CASE_GUARD; k++) {
        int logical = k >= XIR_CASE_GUARD && k < XIR_CASE_GUARD + n &&
                      (k - XIR_CASE_GUARD) % (size_t)c->row_stride[i] < len;
        uint32_t a;
        memcpy(&a, &c->sview[i][k], 4);
        if (!logical && a != kSentinel) return 0;
      }
    }
    for (size_t k = 0; k < XIR_CASE_GUARD; k++) {
      uint32_t a, b;
      memcpy(&a, &c->guard[i][k], 4);
      memcpy(&b, &c->data[i][c->numel[i] + k], 4);
      if (a != kSentinel || b != kSentinel) return 0;
    }
  }
  return 1;
}

void xir__case_input_fingerprint(const xir_case *c, char hex[65]) {
  xir__sha256 h;
  xir__sha256_init(&h);
  for (int i = 0; i < c->p->nparams; i++) {
    const xir_param *q = &c->p->params[i];
    if (q->kind == XIR_PARAM_BUFFER && !q->is_output && c->idata[i])
      xir__sha256_update(&h, c->idata[i], c->numel[i] * sizeof(int64_t));
    else if (q->kind == XIR_PARAM_BUFFER && !q->is_output && c->hdata[i])
      xir__sha256_update(&h, c->hdata[i], c->numel[i] * sizeof(uint16_t));
    else if (q->kind == XIR_PARAM_BUFFER && !q->is_output && c->data[i])
      xir__sha256_update(&h, c->data[i], c->numel[i] * sizeof(float));
    else if (q->kind == XIR_PARAM_SCALAR)
      xir__sha256_update(&h, &c->args[i].scalar, sizeof(double));
  }
  xir__sha256_final_hex(&h, hex);
}

void xir__case_free(xir_case *c) {
  if (!c->p) return;
  for (int i = 0; i < c->p->nparams; i++) {
    if (!c->guard[i]) free_input(c, i, 0);
    xir__free(c->sview[i]);
    if (!c->hguard[i]) free_input(c, i, 1);
    xir__free(c->graw[i]);
    free_input(c, i, 2);
    xir__free(c->ref[i]);
  }
  memset(c, 0, sizeof *c);
}

xir_tolerance xir__kernel_tolerance(const char *name) {
  /* RoPE's angle p * freq is an f32 product: its rounding (about p * 2^-24 radians) dominates. */
  if (name && strcmp(name, "rope") == 0) return (xir_tolerance){1e-3, 4e-3};
  if (name && (strncmp(name, "softmax", 7) == 0 || strncmp(name, "attention", 9) == 0))
    return (xir_tolerance){1e-4, 1e-6};
  return (xir_tolerance){1e-4, 1e-5};
}

int xir__case_range_note(const xir_case *c, char *buf, size_t n) {
  if (n) buf[0] = 0;
  const xir_program *p = c->p;
  const char *name = p ? p->name : NULL;
  int x = p ? xir_program_find_param(p, "x") : -1;
  if (!name || x < 0 || !c->data[x] || p->params[x].rank != 2) return 0;
  size_t R = (size_t)c->shape.dims[p->params[x].dims[0]];
  size_t C = (size_t)c->shape.dims[p->params[x].dims[1]];
  int rms = strcmp(name, "rmsnorm") == 0, ln = strcmp(name, "layernorm") == 0;
  if (rms || ln) {
    const double bound = rms ? 0x1p127 : 0x1p126; /* on sum x^2: ||x|| <= 2^63.5 or 2^63 */
    size_t worst = 0, over = 0;
    double wss = 0;
    for (size_t r = 0; r < R; r++) {
      const float *row = c->data[x] + r * C;
      double ss = 0;
      for (size_t k = 0; k < C; k++) ss += (double)row[k] * (double)row[k];
      if (isfinite(ss) && ss > bound) {
        if (ss > wss) wss = ss, worst = r;
        over++;
      }
    }
    if (!over) return 0;
    snprintf(buf, n, "%s: %zu row(s) of x exceed the f32 range ||x_r||_2 <= %s (row %zu: %.4g); "
             "the f32 sum of squares overflows there and native code writes %s (docs/xir.md, "
             "numeric ranges)", name, over, rms ? "2^63.5 = 1.304e19" : "2^63 = 9.223e18", worst,
             sqrt(wss), rms ? "zeros" : "b");
    return 1;
  }
  if (strcmp(name, "rope") == 0) {
    int o = xir_program_find_param(p, "offset");
    if (o < 0 || R == 0) return 0;
    double off = c->args[o].use_default ? p->params[o].default_value : c->args[o].scalar;
    double pmax = fmax(fabs(off), fabs(off + (double)(R - 1)));
    if (pmax <= 0x1p13) return 0;
    if (pmax > 0x1p24)
      snprintf(buf, n, "rope: positions up to |p| = %.17g exceed 2^24 = 16777216, beyond which "
               "f32(p) is not exact (it rounds to the nearest f32), and 2^13, beyond which the "
               "f32 angle's error (about 2|p| 2^-24 rad) exceeds the check's tolerance "
               "(docs/xir.md, numeric ranges)", pmax);
    else
      snprintf(buf, n, "rope: positions up to |p| = %.17g exceed 2^13 = 8192: the f32 angle "
               "p * theta^(-2i/HD) is off by up to about 2|p| 2^-24 rad, which may exceed the "
               "check's tolerance (docs/xir.md, numeric ranges)", pmax);
    return 1;
  }
  return 0;
}

float xir__case_output_f32(const xir_case *c, int param, size_t k) {
  int elem = c->p->params[param].elem;
  return is_half(elem) ? from_half(elem, c->hdata[param][k]) : c->data[param][k];
}

double xir__half_ulp(int elem, double y) {
  if (!is_half(elem)) return 0;
  int frac = elem == XIR_BF16 ? 7 : 10, emin = elem == XIR_BF16 ? -126 : -14;
  int e;
  frexp(fabs(y), &e); /* |y| in [2^(e-1), 2^e) */
  if (e - 1 < emin || y == 0) e = emin + 1;
  return ldexp(1.0, e - 1 - frac) / 2;
}

xir_compare xir__case_compare(const xir_case *c, int param, xir_tolerance tol) {
  xir_compare r = {0};
  r.first_bad = (size_t)-1;
  const double *ref = c->ref[param];
  int elem = c->p->params[param].elem;
  double num = 0, den = 0;
  r.n = c->numel[param];
  for (size_t i = 0; i < r.n; i++) {
    /* a strided view is f32 only (xir__case_set_row_stride) */
    double a = c->sview[param] ? c->sview[param][XIR_CASE_GUARD + view_off(c, param, i)]
                               : xir__case_output_f32(c, param, i);
    double b = ref[i];
    int bad;
    if (isnan(b)) {
      bad = !isnan(a);
    } else if (isnan(a)) {
      bad = 1;
      r.nan++;
    } else if (isinf(a) && !isinf(b) && is_half(elem)) {
      /* overflow of the final rounding: the bound's far end must round to that infinity */
      double far = b + copysign(tol.atol + tol.rtol * fabs(b), b);
      float ff = (float)far;
      bad = !(fabs(far) >= 0x1p128 || from_half(elem, to_half(elem, ff)) == a);
    } else if (isinf(b) || isinf(a)) {
      bad = a != b;
    } else {
      double e = fabs(a - b);
      if (e > r.max_abs) r.max_abs = e;
      if (fabs(b) > tol.atol && e / fabs(b) > r.max_rel) r.max_rel = e / fabs(b);
      num += e * e;
      den += b * b;
      bad = !(e <= tol.atol + tol.rtol * fabs(b) + xir__half_ulp(elem, a));
    }
    if (bad) {
      if (!r.bad) r.first_bad = i;
      r.bad++;
    }
  }
  r.rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
  r.pass = r.bad == 0;
  return r;
}

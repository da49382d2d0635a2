/* interp.c — the fp64 reference interpreter: the oracle every compiled kernel is checked against.
 *
 * It runs the body once per root program, in root order, holding every value as a dense fp64
 * tile (i64 and bool values are held as exact doubles; indices stay far below 2^53, and an i64
 * input element beyond +-2^53 is an error). Elementwise
 * ops take their fp64 meaning straight from the op table; reductions accumulate in order along
 * the axis; f32 literals and f32 scalar arguments are rounded to f32 first (they are f32 in the
 * program), everything after that is fp64. Computed indices are bounds-checked and an
 * out-of-range one is an error naming its source line. */
#include <math.h>
#include <string.h>

#include "ir/program.h"
#include "util/half.h"

typedef struct ival {
  double *data;
  size_t size;   /* elements */
  size_t cap;
} ival;

typedef struct ictx {
  const xir_program *p;
  const xir_shape *shape;
  const xir_arg *args;
  xir_diag *d;
  ival *vals;
  int64_t root_coord[XIR_MAX_ROOT];
  int64_t strides[XIR_MAX_PARAMS][XIR_MAX_RANK];
} ictx;

/* Integer operands are exact doubles of i64 values (|v| < 2^63 by construction). */
static int64_t to_i64(double v) {
  if (!(v > -9223372036854775808.0 && v < 9223372036854775808.0)) return v > 0 ? INT64_MAX : INT64_MIN;
  return (int64_t)v;
}

static double elem_eval(int op, int integer, double a, double b, double c) {
  (void)c;
  if (integer) {
    int64_t ia = to_i64(a), ib = to_i64(b);
    switch (op) {
#define XIR_OP_I_(id, text, n, ty, f, i) \
  case XIR_OP_##id:                      \
    return (double)(i);
      XIR_OPS_ELEM(XIR_OP_I_)
#undef XIR_OP_I_
      default: return 0;
    }
  }
  switch (op) {
#define XIR_OP_F_(id, text, n, ty, f, i) \
  case XIR_OP_##id:                      \
    return (double)(f);
    XIR_OPS_ELEM(XIR_OP_F_)
#undef XIR_OP_F_
    default: return 0;
  }
}

static size_t tile_size(const ictx *c, const xir_type *t) {
  size_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= (size_t)c->shape->dims[t->axes[i]];
  return n;
}

/* For operand type `o` inside a loop over result type `r`: the operand's stride along each
 * result axis (0 where the operand does not have that axis). */
static void proj_strides(const ictx *c, const xir_type *r, const xir_type *o, size_t *st) {
  for (int i = 0; i < r->rank; i++) {
    st[i] = 0;
    size_t s = 1;
    for (int k = o->rank - 1; k >= 0; k--) {
      if (o->axes[k] == r->axes[i]) st[i] = s;
      s *= (size_t)c->shape->dims[o->axes[k]];
    }
  }
}

/* Odometer over the axes of r: advances coord and the projected offsets. Returns 0 at the end. */
static int step(const ictx *c, const xir_type *r, int64_t *coord, size_t (*st)[XIR_MAX_TILE_RANK],
                size_t *off, int nops) {
  for (int i = r->rank - 1; i >= 0; i--) {
    coord[i]++;
    for (int o = 0; o < nops; o++) off[o] += st[o][i];
    if (coord[i] < c->shape->dims[r->axes[i]]) return 1;
    for (int o = 0; o < nops; o++) off[o] -= st[o][i] * (size_t)coord[i];
    coord[i] = 0;
  }
  return 0;
}

static xir_status need(ictx *c, int id, size_t n) {
  ival *v = &c->vals[id];
  v->size = n;
  if (n <= v->cap) return XIR_OK;
  double *nd = xir__realloc(v->data, n * sizeof(double));
  if (!nd) return xir__err(c->d, XIR_ERR_NOMEM, "out of memory in the interpreter");
  v->data = nd;
  v->cap = n;
  return XIR_OK;
}

static double scalar_arg(const ictx *c, int prm) {
  const xir_param *q = &c->p->params[prm];
  const xir_arg *a = &c->args[prm];
  double v = a->use_default ? q->default_value : a->scalar;
  if (q->elem == XIR_F32) v = (double)(float)v;
  else v = (double)(int64_t)v;
  return v;
}

/* Buffer element offset for load/store node n at result point `coord` (over tile type t). */
static xir_status access_offset(ictx *c, const xir_node *n, int nidx, const xir_type *t,
                                const int64_t *coord, int64_t *offset) {
  const xir_param *q = &c->p->params[n->ref];
  int64_t off = 0;
  for (int k = 0; k < nidx; k++) {
    int bd = q->dims[k];
    int64_t ix = 0;
    if (n->args[k] < 0) {
      for (int i = 0; i < t->rank; i++)
        if (t->axes[i] == bd) ix = coord[i];
    } else {
      const xir_node *in = &c->p->nodes[n->args[k]];
      size_t st[XIR_MAX_TILE_RANK], o = 0;
      proj_strides(c, t, &in->type, st);
      for (int i = 0; i < t->rank; i++) o += st[i] * (size_t)coord[i];
      ix = to_i64(c->vals[n->args[k]].data[o]);
      if (ix < 0 || ix >= c->shape->dims[bd])
        return xir__err_at(c->d, XIR_ERR_RUNTIME, c->p->file, n->line, n->col,
                           "index %d of '%s' is %lld, outside [0, %lld) (dim '%s')", k + 1,
                           q->name, (long long)ix, (long long)c->shape->dims[bd],
                           c->p->dims[bd]);
    }
    off += ix * c->strides[n->ref][k];
  }
  *offset = off;
  return XIR_OK;
}

static xir_status eval_access(ictx *c, int id) {
  const xir_node *n = &c->p->nodes[id];
  int is_store = n->op == XIR_OP_STORE;
  int nidx = is_store ? n->nargs - 1 : n->nargs;
  xir_type t = n->type;
  const xir_arg *arg = &c->args[n->ref];
  size_t vst[XIR_MAX_TILE_RANK] = {0};
  if (is_store) {
    /* The store's tile: slice axes in order. */
    t.rank = 0;
    for (int k = 0; k < nidx; k++)
      if (n->args[k] < 0) t.axes[t.rank++] = (int8_t)c->p->params[n->ref].dims[k];
    proj_strides(c, &t, &c->p->nodes[n->args[nidx]].type, vst);
  } else {
    xir_status s = need(c, id, tile_size(c, &t));
    if (s) return s;
  }
  int64_t coord[XIR_MAX_TILE_RANK] = {0};
  size_t lin = 0, voff = 0;
  do {
    int64_t off = 0;
    xir_status s = access_offset(c, n, nidx, &t, coord, &off);
    if (s) return s;
    if (is_store) {
      c->args[n->ref].out64[off] = c->vals[n->args[nidx]].data[voff];
    } else if (c->p->params[n->ref].elem == XIR_I64) {
      /* an i64 input: held as an exact double, so its magnitude must stay within 2^53 */
      int64_t iv = ((const int64_t *)arg->in)[off];
      if (iv > ((int64_t)1 << 53) || iv < -((int64_t)1 << 53))
        return xir__err_at(c->d, XIR_ERR_RUNTIME, c->p->file, n->line, n->col,
                           "element %lld of i64 input '%s' is %lld, beyond the interpreter's "
                           "exact range of +-2^53", (long long)off, c->p->params[n->ref].name,
                           (long long)iv);
      c->vals[id].data[lin++] = (double)iv;
    } else if (c->p->params[n->ref].elem == XIR_BF16) {
      c->vals[id].data[lin++] = (double)xir__bf16_to_f32(((const uint16_t *)arg->in)[off]);
    } else if (c->p->params[n->ref].elem == XIR_F16) {
      c->vals[id].data[lin++] = (double)xir__f16_to_f32(((const uint16_t *)arg->in)[off]);
    } else {
      c->vals[id].data[lin++] = (double)((const float *)arg->in)[off];
    }
    /* advance */
    int i;
    for (i = t.rank - 1; i >= 0; i--) {
      coord[i]++;
      voff += vst[i];
      if (coord[i] < c->shape->dims[t.axes[i]]) break;
      voff -= vst[i] * (size_t)coord[i];
      coord[i] = 0;
    }
    if (i < 0) break;
  } while (1);
  return XIR_OK;
}

static xir_status eval_reduce(ictx *c, int id) {
  const xir_node *n = &c->p->nodes[id];
  const xir_type *in = &c->p->nodes[n->args[0]].type;
  const double *src = c->vals[n->args[0]].data;
  xir_status s = need(c, id, tile_size(c, &n->type));
  if (s) return s;
  double *dst = c->vals[id].data;
  /* Split the input axes into outer (before the reduced one), the axis, inner (after). */
  size_t outer = 1, inner = 1, len = (size_t)c->shape->dims[n->ref];
  int pos = 0;
  for (int i = 0; i < in->rank; i++)
    if (in->axes[i] == n->ref) pos = i;
  for (int i = 0; i < pos; i++) outer *= (size_t)c->shape->dims[in->axes[i]];
  for (int i = pos + 1; i < in->rank; i++) inner *= (size_t)c->shape->dims[in->axes[i]];
  for (size_t o = 0; o < outer; o++)
    for (size_t k = 0; k < inner; k++) {
      const double *x = src + o * len * inner + k;
      double acc = x[0];
      for (size_t j = 1; j < len; j++) {
        double v = x[j * inner];
        if (n->op == XIR_OP_REDUCE_SUM) acc += v;
        else if (n->op == XIR_OP_REDUCE_MAX) acc = xir__fmax(acc, v);
        else acc = xir__fmin(acc, v);
      }
      dst[o * inner + k] = acc;
    }
  return XIR_OK;
}

static xir_status eval_elementwise(ictx *c, int id) {
  const xir_node *n = &c->p->nodes[id];
  xir_status s = need(c, id, tile_size(c, &n->type));
  if (s) return s;
  size_t st[3][XIR_MAX_TILE_RANK], off[3] = {0, 0, 0};
  const double *src[3] = {NULL, NULL, NULL};
  for (int o = 0; o < n->nargs; o++) {
    proj_strides(c, &n->type, &c->p->nodes[n->args[o]].type, st[o]);
    src[o] = c->vals[n->args[o]].data;
  }
  int integer = c->p->nodes[n->args[0]].type.elem == XIR_I64 && n->op != XIR_OP_SELECT &&
                n->op != XIR_OP_TOF32;
  double *dst = c->vals[id].data;
  int64_t coord[XIR_MAX_TILE_RANK] = {0};
  size_t lin = 0;
  do {
    double a = src[0][off[0]];
    double b = n->nargs > 1 ? src[1][off[1]] : 0;
    double cc = n->nargs > 2 ? src[2][off[2]] : 0;
    double r;
    if (n->op == XIR_OP_TOF32) r = a;
    else if (integer && (n->op == XIR_OP_DIV || n->op == XIR_OP_REM) && b == 0)
      return xir__err_at(c->d, XIR_ERR_RUNTIME, c->p->file, n->line, n->col,
                         "integer division by zero in '%s'", xir__op_info[n->op].name);
    else r = elem_eval(n->op, integer, a, b, cc);
    dst[lin++] = r;
  } while (step(c, &n->type, coord, st, off, n->nargs));
  return XIR_OK;
}

static xir_status eval_node(ictx *c, int id) {
  const xir_node *n = &c->p->nodes[id];
  xir_status s;
  switch (n->op) {
    case XIR_OP_CONST:
    case XIR_OP_DIM:
    case XIR_OP_PARAM:
    case XIR_OP_ROOT: {
      if ((s = need(c, id, 1))) return s;
      double v = 0;
      if (n->op == XIR_OP_CONST) v = n->type.elem == XIR_I64 ? (double)n->imm.i : n->imm.f;
      else if (n->op == XIR_OP_DIM) v = (double)c->shape->dims[n->ref];
      else if (n->op == XIR_OP_PARAM) v = scalar_arg(c, n->ref);
      else v = (double)c->root_coord[n->ref];
      c->vals[id].data[0] = v;
      return XIR_OK;
    }
    case XIR_OP_IOTA: {
      size_t len = (size_t)c->shape->dims[n->ref];
      if ((s = need(c, id, len))) return s;
      for (size_t i = 0; i < len; i++) c->vals[id].data[i] = (double)i;
      return XIR_OK;
    }
    case XIR_OP_LOAD:
    case XIR_OP_STORE: return eval_access(c, id);
    case XIR_OP_REDUCE_SUM:
    case XIR_OP_REDUCE_MAX:
    case XIR_OP_REDUCE_MIN: return eval_reduce(c, id);
    default: return eval_elementwise(c, id);
  }
}

xir_status xir_interpret(const xir_program *p, const xir_shape *shape, const xir_arg *args,
                         xir_diag *d) {
  if (!p) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_interpret: the program is NULL");
  xir_status s = xir_shape_check(p, shape, d);
  if (s) return s;
  if (!args) return xir__err(d, XIR_ERR_INVALID_ARG, "no arguments");
  ictx c = {.p = p, .shape = shape, .args = args, .d = d};
  for (int i = 0; i < p->nparams; i++) {
    const xir_param *q = &p->params[i];
    if (q->kind != XIR_PARAM_BUFFER) continue;
    if (q->is_output ? !args[i].out64 : !args[i].in)
      return xir__err(d, XIR_ERR_INVALID_ARG, "buffer '%s' has no %s data", q->name,
                      q->is_output ? "fp64 output (out64)" : "input");
    if ((s = xir_arg_strides(p, shape, i, &args[i], c.strides[i], d))) return s;
  }
  c.vals = xir__calloc((size_t)p->nnodes, sizeof(ival));
  if (!c.vals) return xir__err(d, XIR_ERR_NOMEM, "out of memory in the interpreter");
  uint64_t total = xir_shape_root_count(p, shape);
  s = XIR_OK;
  for (uint64_t r = 0; r < total && !s; r++) {
    uint64_t rem = r;
    for (int k = p->nroot - 1; k >= 0; k--) {
      uint64_t ext = (uint64_t)shape->dims[p->root[k].dim];
      c.root_coord[k] = (int64_t)(rem % ext);
      rem /= ext;
    }
    for (int i = p->body_begin; i < p->nnodes && !s; i++) s = eval_node(&c, i);
  }
  for (int i = 0; i < p->nnodes; i++) xir__free(c.vals[i].data);
  xir__free(c.vals);
  return s;
}

/* ---- shapes ---- */

xir_status xir_shape_check(const xir_program *p, const xir_shape *shape, xir_diag *d) {
  if (!p) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_shape_check: the program is NULL");
  if (!shape || shape->ndims != p->ndims)
    return xir__err(d, XIR_ERR_INVALID_ARG, "kernel '%s' needs %d dims, the shape has %d",
                    p->name, p->ndims, shape ? shape->ndims : 0);
  for (int i = 0; i < p->ndims; i++)
    if (shape->dims[i] < 1 || shape->dims[i] >= ((int64_t)1 << 31))
      return xir__err(d, XIR_ERR_INVALID_ARG, "dim %s = %lld is outside [1, 2^31)", p->dims[i],
                      (long long)shape->dims[i]);
  /* Buffers must stay addressable. */
  for (int i = 0; i < p->nparams; i++) {
    double n = 1;
    for (int k = 0; k < p->params[i].rank; k++) n *= (double)shape->dims[p->params[i].dims[k]];
    if (n * (double)xir_elem_size((xir_elem)p->params[i].elem) > 1e12)
      return xir__err(d, XIR_ERR_INVALID_ARG, "buffer '%s' would hold %.3g elements: too large",
                      p->params[i].name, n);
  }
  for (int i = 0; i < p->nreq; i++) {
    int64_t v = 0;
    int rc = xir__eval_dims_expr(p, shape->dims, p->reqs[i], &v);
    if (rc == -3)
      return xir__err(d, XIR_ERR_NOMEM, "out of memory checking the requirements of '%s'",
                      p->name);
    if (rc || !v) {
      const xir_node *n = &p->nodes[p->reqs[i]];
      char clause[256], sh[512];
      xir__print_expr(p, p->reqs[i], clause, sizeof clause);
      xir_shape_format(p, shape, sh, sizeof sh);
      return xir__err(d, XIR_ERR_INVALID_ARG, "requirement %s of kernel '%s' (line %d) %s for %s",
                      clause, p->name, n->line, rc == -2 ? "divides by zero" : "does not hold", sh);
    }
  }
  return XIR_OK;
}

char *xir_shape_format(const xir_program *p, const xir_shape *shape, char *buf, size_t cap) {
  size_t o = 0;
  if (!buf) return buf;
  if (cap) buf[0] = 0;
  if (!p || !shape) return buf;
  for (int i = 0; i < p->ndims && i < shape->ndims; i++)
    o += (size_t)snprintf(buf + (o < cap ? o : cap), o < cap ? cap - o : 0, "%s%s=%lld",
                          i ? "," : "", p->dims[i], (long long)shape->dims[i]);
  return buf;
}

xir_status xir_shape_parse(const xir_program *p, const char *spec, xir_shape *shape,
                           xir_diag *d) {
  if (!p || !shape)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_shape_parse: %s is NULL",
                    !p ? "the program" : "the shape");
  memset(shape, 0, sizeof *shape);
  shape->ndims = p->ndims;
  int given[XIR_MAX_DIMS] = {0};
  const char *s = spec ? spec : "";
  while (*s) {
    const char *eq = strchr(s, '=');
    const char *end = strchr(s, ',');
    if (!end) end = s + strlen(s);
    if (!eq || eq > end)
      return xir__err(d, XIR_ERR_INVALID_ARG, "shape '%s': expected NAME=VALUE, found '%.*s'",
                      spec, (int)(end - s), s);
    char name[64];
    size_t nl = (size_t)(eq - s);
    if (nl == 0 || nl >= sizeof name)
      return xir__err(d, XIR_ERR_INVALID_ARG, "shape '%s': bad dim name", spec);
    memcpy(name, s, nl);
    name[nl] = 0;
    int dim = xir_program_find_dim(p, name);
    if (dim < 0) {
      char known[512];
      size_t o = 0;
      known[0] = 0;
      for (int i = 0; i < p->ndims; i++)
        o += (size_t)snprintf(known + o, o < sizeof known ? sizeof known - o : 0, "%s%s",
                              i ? ", " : "", p->dims[i]);
      return xir__err(d, XIR_ERR_NOT_FOUND, "kernel '%s' has no dim '%s' (its dims: %s)",
                      p->name, name, known);
    }
    if (given[dim]++)
      return xir__err(d, XIR_ERR_INVALID_ARG, "dim '%s' is given twice", name);
    const char *v = eq + 1;
    int64_t val = 0;
    if (v == end) return xir__err(d, XIR_ERR_INVALID_ARG, "dim '%s' has no value", name);
    for (const char *c = v; c < end; c++) {
      if (*c < '0' || *c > '9')
        return xir__err(d, XIR_ERR_INVALID_ARG, "dim '%s': '%.*s' is not a positive integer",
                        name, (int)(end - v), v);
      if (val > ((int64_t)1 << 40)) break;
      val = val * 10 + (*c - '0');
    }
    shape->dims[dim] = val;
    s = *end ? end + 1 : end;
  }
  for (int i = 0; i < p->ndims; i++)
    if (!given[i])
      return xir__err(d, XIR_ERR_INVALID_ARG, "dim '%s' of kernel '%s' is not given (e.g. %s=64)",
                      p->dims[i], p->name, p->dims[i]);
  return xir_shape_check(p, shape, d);
}

size_t xir_param_numel(const xir_program *p, int param, const xir_shape *shape) {
  if (!p || !shape || param < 0 || param >= p->nparams ||
      p->params[param].kind != XIR_PARAM_BUFFER)
    return 0;
  size_t n = 1;
  for (int k = 0; k < p->params[param].rank; k++)
    n *= (size_t)shape->dims[p->params[param].dims[k]];
  return n;
}

uint64_t xir_shape_root_count(const xir_program *p, const xir_shape *shape) {
  if (!p || !shape) return 0;
  uint64_t n = 1;
  for (int k = 0; k < p->nroot; k++) n *= (uint64_t)shape->dims[p->root[k].dim];
  return n;
}

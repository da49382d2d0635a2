/* builder.c — constructing programs in C (the parser builds through this too), the op table's
 * derived facts, and the read-only program accessors of xir.h.
 *
 * The builder only records structure and rejects what is wrong locally (unknown references,
 * duplicate names, wrong operand counts). Typing and domain rules are the verifier's. Errors are
 * sticky: the first one is kept and reported by xir_builder_finish. */
#include <math.h>
#include <string.h>

#include "ir/program.h"
#include "util/strmap.h"

const xir_op_info xir__op_info[XIR_OP_COUNT_] = {
#define XIR_OP_INFO_(id, text, n, ty, f, i) [XIR_OP_##id] = {text, n, ty},
    XIR_OPS(XIR_OP_INFO_)
#undef XIR_OP_INFO_
};

const char *xir_op_name(xir_op op) {
  if ((int)op < 0 || op >= XIR_OP_COUNT_) return NULL;
  return xir__op_info[op].name;
}

int64_t xir__iadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
int64_t xir__isub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
int64_t xir__imul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
int64_t xir__idiv(int64_t a, int64_t b) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}
int64_t xir__irem(int64_t a, int64_t b) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
  return a - b * xir__idiv(a, b);
}
/* IEEE 754-2019 maximum and minimum, what native code computes (llvm.maximum/minimum, and the
 * vrangeps fold of reductions): NaN if either operand is NaN, and −0 orders below +0, so the
 * result does not depend on the operand order (docs/xir.md, "Reductions"). */
double xir__fmax(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}
double xir__fmin(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}

struct xir_builder {
  xir_program *p;
  size_t node_cap;
  size_t req_cap;
  xir_diag err;
  int failed;
  const char *file;
  int line, col;
  xir_strmap names; /* every declared name -> XIR__NAME_* kind * 2^24 + index (O(1) lookup) */
};

static void fail(xir_builder *b, xir_status s, const char *fmt, const char *arg) {
  if (b->failed) return;
  b->failed = 1;
  char msg[512];
  snprintf(msg, sizeof msg, fmt, arg ? arg : "");
  xir__err_at(&b->err, s, b->file, b->line, b->col, "%s", msg);
}

xir_status xir_builder_new(const char *name, xir_builder **out) {
  if (!out) return XIR_ERR_INVALID_ARG;
  *out = NULL;
  xir_builder *b = xir__calloc(1, sizeof *b);
  if (!b) return XIR_ERR_NOMEM;
  b->p = xir__calloc(1, sizeof *b->p);
  if (!b->p) {
    xir__free(b);
    return XIR_ERR_NOMEM;
  }
  b->p->name = xir__arena_strdup(&b->p->arena, name ? name : "kernel");
  if (!b->p->name) {
    xir_program_free(b->p);
    xir__free(b);
    return XIR_ERR_NOMEM;
  }
  *out = b;
  return XIR_OK;
}

void xir_builder_free(xir_builder *b) {
  if (!b) return;
  xir__strmap_free(&b->names);
  xir_program_free(b->p);
  xir__free(b);
}

void xir_builder_set_loc(xir_builder *b, const char *file, int line, int col) {
  if (!b) return;
  if (b->failed) return;
  if (file && (!b->file || strcmp(file, b->file) != 0)) {
    const char *f = xir__arena_strdup(&b->p->arena, file);
    if (!f) {
      fail(b, XIR_ERR_NOMEM, "out of memory%s", "");
      return;
    }
    b->file = f;
    b->p->file = f;
  }
  b->line = line;
  b->col = col;
}

int xir__builder_lookup(const xir_builder *b, const char *name, int *kind, int *index) {
  int32_t v;
  if (!b || !name || !xir__strmap_get(&b->names, name, strlen(name), &v)) return 0;
  if (kind) *kind = v >> 24;
  if (index) *index = v & ((1 << 24) - 1);
  return 1;
}

static int valid_ident(const char *s) {
  if (!s || !*s) return 0;
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
  for (const char *c = s + 1; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '_'))
      return 0;
  return strlen(s) < 64;
}

/* Words of the text form that cannot name anything (the parser reads them as keywords or
 * literals, so a name spelled like them could never be used). */
static int reserved(const char *s) {
  static const char *words[] = {"inf", "nan",    "load", "store", "kernel", "root", "in",
                                "require", "out", "f32",   "i64",    "iota", "bf16", "f16"};
  for (size_t i = 0; i < XIR_ARRAY_LEN(words); i++)
    if (strcmp(s, words[i]) == 0) return 1;
  return 0;
}

/* Checks and copies a new name, and records it as (kind, index) in the name table. */
static const char *decl_name(xir_builder *b, const char *name, const char *what, int kind,
                             int index) {
  if (!valid_ident(name)) {
    fail(b, XIR_ERR_PARSE, "invalid %s name", what);
    return NULL;
  }
  if (reserved(name)) {
    fail(b, XIR_ERR_VERIFY, "'%s' is a reserved word and cannot be a name", name);
    return NULL;
  }
  if (xir__builder_lookup(b, name, NULL, NULL)) {
    fail(b, XIR_ERR_VERIFY, "'%s' is already declared", name);
    return NULL;
  }
  const char *s = xir__arena_strdup(&b->p->arena, name);
  if (!s || xir__strmap_put(&b->names, s, (int32_t)(kind * (1 << 24) + index))) {
    fail(b, XIR_ERR_NOMEM, "out of memory%s", "");
    return NULL;
  }
  return s;
}

int xir_builder_dim(xir_builder *b, const char *name) {
  if (!b || b->failed) return -1;
  if (b->p->ndims >= XIR_MAX_DIMS) {
    fail(b, XIR_ERR_VERIFY, "too many dims (at most 32)%s", "");
    return -1;
  }
  const char *s = decl_name(b, name, "dim", XIR__NAME_DIM, b->p->ndims);
  if (!s) return -1;
  int i = b->p->ndims++;
  b->p->dims[i] = s;
  b->p->dim_line[i] = b->line;
  b->p->dim_col[i] = b->col;
  return i;
}

static xir_param *new_param(xir_builder *b, const char *name) {
  if (b->p->nparams >= XIR_MAX_PARAMS) {
    fail(b, XIR_ERR_VERIFY, "too many parameters (at most 32)%s", "");
    return NULL;
  }
  const char *s = decl_name(b, name, "parameter", XIR__NAME_PARAM, b->p->nparams);
  if (!s) return NULL;
  xir_param *prm = &b->p->params[b->p->nparams++];
  memset(prm, 0, sizeof *prm);
  prm->name = s;
  prm->line = b->line;
  prm->col = b->col;
  return prm;
}

int xir_builder_buffer(xir_builder *b, const char *name, xir_elem elem, int rank,
                       const int *dims, int is_output) {
  if (!b || b->failed) return -1;
  if (elem != XIR_F32 && elem != XIR_I64 && elem != XIR_BF16 && elem != XIR_F16) {
    fail(b, XIR_ERR_VERIFY, "buffer '%s' must have element type f32, bf16, f16 or i64", name);
    return -1;
  }
  if (rank < 1 || rank > XIR_MAX_RANK) {
    fail(b, XIR_ERR_VERIFY, "buffer '%s' must have rank 1..8", name);
    return -1;
  }
  if (!dims) {
    fail(b, XIR_ERR_INVALID_ARG, "buffer '%s' has no dims array", name);
    return -1;
  }
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0 || dims[i] >= b->p->ndims) {
      fail(b, XIR_ERR_VERIFY, "buffer '%s' uses an undeclared dim", name);
      return -1;
    }
  xir_param *prm = new_param(b, name);
  if (!prm) return -1;
  prm->kind = XIR_PARAM_BUFFER;
  prm->elem = (uint8_t)elem;
  prm->is_output = is_output ? 1 : 0;
  prm->rank = rank;
  memcpy(prm->dims, dims, sizeof(int) * (size_t)rank);
  return b->p->nparams - 1;
}

int xir_builder_scalar(xir_builder *b, const char *name, xir_elem elem, int has_default,
                       double default_value) {
  if (!b || b->failed) return -1;
  if (elem != XIR_F32 && elem != XIR_I64) {
    fail(b, XIR_ERR_VERIFY, "scalar '%s' must be f32 or i64", name);
    return -1;
  }
  xir_param *prm = new_param(b, name);
  if (!prm) return -1;
  prm->kind = XIR_PARAM_SCALAR;
  prm->elem = (uint8_t)elem;
  prm->has_default = has_default ? 1 : 0;
  prm->default_value = elem == XIR_F32 ? (double)(float)default_value : default_value;
  return b->p->nparams - 1;
}

int xir_builder_root(xir_builder *b, const char *var, int dim) {
  if (!b || b->failed) return -1;
  if (b->p->nroot >= XIR_MAX_ROOT) {
    fail(b, XIR_ERR_VERIFY, "too many root axes (at most 8)%s", "");
    return -1;
  }
  if (dim < 0 || dim >= b->p->ndims) {
    fail(b, XIR_ERR_VERIFY, "root axis '%s' ranges over an undeclared dim", var);
    return -1;
  }
  for (int k = 0; k < b->p->nroot; k++)
    if (b->p->root[k].dim == dim) {
      fail(b, XIR_ERR_VERIFY, "two root axes range over dim '%s'", b->p->dims[dim]);
      return -1;
    }
  const char *s = decl_name(b, var, "root variable", XIR__NAME_ROOT, b->p->nroot);
  if (!s) return -1;
  int k = b->p->nroot++;
  if (k == 0) b->p->body_begin = b->p->nnodes;
  b->p->root[k].var = s;
  b->p->root[k].dim = dim;
  b->p->root[k].line = b->line;
  b->p->root[k].col = b->col;
  return k;
}

static xir_node *new_node(xir_builder *b, int op, int nargs) {
  xir_program *p = b->p;
  if (p->nnodes >= (1 << 24)) {
    fail(b, XIR_ERR_VERIFY, "program too large%s", "");
    return NULL;
  }
  if (xir__grow((void **)&p->nodes, &b->node_cap, (size_t)p->nnodes + 1, sizeof(xir_node))) {
    fail(b, XIR_ERR_NOMEM, "out of memory%s", "");
    return NULL;
  }
  xir_node *n = &p->nodes[p->nnodes++];
  memset(n, 0, sizeof *n);
  n->op = (uint16_t)op;
  n->nargs = (uint8_t)nargs;
  n->line = b->line;
  n->col = b->col;
  n->ref = -1;
  if (nargs) {
    n->args = xir__arena_alloc(&p->arena, sizeof(int32_t) * (size_t)nargs);
    if (!n->args) {
      p->nnodes--;
      fail(b, XIR_ERR_NOMEM, "out of memory%s", "");
      return NULL;
    }
  }
  return n;
}

static int check_value(xir_builder *b, xir_value v) {
  if (v < 0 || v >= b->p->nnodes || b->p->nodes[v].op == XIR_OP_STORE) {
    fail(b, XIR_ERR_INVALID_ARG, "operand is not a value%s", "");
    return 0;
  }
  return 1;
}

xir_value xir_builder_const_f32(xir_builder *b, float v) {
  if (!b || b->failed) return -1;
  xir_node *n = new_node(b, XIR_OP_CONST, 0);
  if (!n) return -1;
  n->type.elem = XIR_F32;
  n->imm.f = v;
  return b->p->nnodes - 1;
}

xir_value xir_builder_const_i64(xir_builder *b, int64_t v) {
  if (!b || b->failed) return -1;
  xir_node *n = new_node(b, XIR_OP_CONST, 0);
  if (!n) return -1;
  n->type.elem = XIR_I64;
  n->imm.i = v;
  return b->p->nnodes - 1;
}

static xir_value ref_leaf(xir_builder *b, int op, int ref, int limit, const char *what) {
  if (!b || b->failed) return -1;
  if (ref < 0 || ref >= limit) {
    fail(b, XIR_ERR_INVALID_ARG, "unknown %s", what);
    return -1;
  }
  xir_node *n = new_node(b, op, 0);
  if (!n) return -1;
  n->ref = ref;
  return b->p->nnodes - 1;
}

xir_value xir_builder_dim_value(xir_builder *b, int dim) {
  return ref_leaf(b, XIR_OP_DIM, dim, b ? b->p->ndims : 0, "dim");
}
xir_value xir_builder_param_value(xir_builder *b, int param) {
  return ref_leaf(b, XIR_OP_PARAM, param, b ? b->p->nparams : 0, "parameter");
}
xir_value xir_builder_root_value(xir_builder *b, int root_axis) {
  return ref_leaf(b, XIR_OP_ROOT, root_axis, b ? b->p->nroot : 0, "root axis");
}
xir_value xir_builder_iota(xir_builder *b, int dim) {
  return ref_leaf(b, XIR_OP_IOTA, dim, b ? b->p->ndims : 0, "dim");
}

xir_value xir_builder_op(xir_builder *b, xir_op op, int nargs, const xir_value *args) {
  if (!b || b->failed) return -1;
  if ((int)op < 0 || op >= XIR_OP_COUNT_) {
    fail(b, XIR_ERR_INVALID_ARG, "unknown op%s", "");
    return -1;
  }
  int ty = xir__op_info[op].typing;
  if (op != XIR_OP_TOF32 && (ty == XIR_TY_LEAF || ty == XIR_TY_IOTA || ty == XIR_TY_LOAD ||
                             ty == XIR_TY_STORE || ty == XIR_TY_REDUCE)) {
    fail(b, XIR_ERR_INVALID_ARG, "'%s' is not an elementwise op", xir__op_info[op].name);
    return -1;
  }
  if (nargs != xir__op_info[op].nargs) {
    char m[160];
    snprintf(m, sizeof m, "'%s' takes %d operand%s, got %d", xir__op_info[op].name,
             xir__op_info[op].nargs, xir__op_info[op].nargs == 1 ? "" : "s", nargs);
    fail(b, XIR_ERR_VERIFY, "%s", m);
    return -1;
  }
  if (nargs > 0 && !args) {
    fail(b, XIR_ERR_INVALID_ARG, "'%s' has no operand array", xir__op_info[op].name);
    return -1;
  }
  for (int i = 0; i < nargs; i++)
    if (!check_value(b, args[i])) return -1;
  xir_node *n = new_node(b, op, nargs);
  if (!n) return -1;
  for (int i = 0; i < nargs; i++) n->args[i] = args[i];
  return b->p->nnodes - 1;
}

xir_value xir_builder_reduce(xir_builder *b, xir_op op, xir_value v, int dim) {
  if (!b || b->failed) return -1;
  if (op != XIR_OP_REDUCE_SUM && op != XIR_OP_REDUCE_MAX && op != XIR_OP_REDUCE_MIN) {
    fail(b, XIR_ERR_INVALID_ARG, "not a reduction%s", "");
    return -1;
  }
  if (!check_value(b, v)) return -1;
  if (dim < -1 || dim >= b->p->ndims) {
    fail(b, XIR_ERR_INVALID_ARG, "unknown reduction axis%s", "");
    return -1;
  }
  xir_node *n = new_node(b, op, 1);
  if (!n) return -1;
  n->args[0] = v;
  n->ref = dim;
  return b->p->nnodes - 1;
}

static xir_node *access(xir_builder *b, int op, int buffer, int nidx, const xir_index *idx,
                        int extra) {
  if (!b || b->failed) return NULL;
  if (buffer < 0 || buffer >= b->p->nparams || b->p->params[buffer].kind != XIR_PARAM_BUFFER) {
    fail(b, XIR_ERR_VERIFY, "%s of something that is not a buffer", xir__op_info[op].name);
    return NULL;
  }
  if (nidx < 0 || nidx > XIR_MAX_RANK) {
    fail(b, XIR_ERR_VERIFY, "too many indices%s", "");
    return NULL;
  }
  if (nidx > 0 && !idx) {
    fail(b, XIR_ERR_INVALID_ARG, "%s has no index array", xir__op_info[op].name);
    return NULL;
  }
  for (int i = 0; i < nidx; i++)
    if (!idx[i].is_slice && !check_value(b, idx[i].value)) return NULL;
  xir_node *n = new_node(b, op, nidx + extra);
  if (!n) return NULL;
  n->ref = buffer;
  for (int i = 0; i < nidx; i++) n->args[i] = idx[i].is_slice ? -1 : idx[i].value;
  return n;
}

xir_value xir_builder_load(xir_builder *b, int buffer, int nidx, const xir_index *idx) {
  return access(b, XIR_OP_LOAD, buffer, nidx, idx, 0) ? b->p->nnodes - 1 : -1;
}

void xir_builder_store(xir_builder *b, int buffer, int nidx, const xir_index *idx,
                       xir_value value) {
  if (!b || b->failed) return;
  if (!check_value(b, value)) return;
  xir_node *n = access(b, XIR_OP_STORE, buffer, nidx, idx, 1);
  if (n) n->args[nidx] = value;
}

void xir_builder_name(xir_builder *b, xir_value v, const char *name) {
  if (!b || b->failed) return;
  if (!check_value(b, v)) return;
  xir_node *n = &b->p->nodes[v];
  if (xir__is_inline_leaf(n->op)) {
    fail(b, XIR_ERR_VERIFY, "cannot name '%s': it is a constant or a declared name", name);
    return;
  }
  if (n->name) {
    fail(b, XIR_ERR_VERIFY, "value is already named; cannot rename it to '%s'", name);
    return;
  }
  const char *s = decl_name(b, name, "value", XIR__NAME_VALUE, v);
  if (s) n->name = s;
}

void xir_builder_require(xir_builder *b, xir_value cond) {
  if (!b || b->failed) return;
  if (b->p->nroot > 0) {
    fail(b, XIR_ERR_VERIFY, "`require` clauses must come before the root domain%s", "");
    return;
  }
  if (!check_value(b, cond)) return;
  xir_program *p = b->p;
  if (xir__grow((void **)&p->reqs, &b->req_cap, (size_t)p->nreq + 1, sizeof(int32_t))) {
    fail(b, XIR_ERR_NOMEM, "out of memory%s", "");
    return;
  }
  p->reqs[p->nreq++] = cond;
}

xir_status xir_builder_finish(xir_builder *b, xir_program **out, xir_diag *d) {
  if (!out) {
    xir_builder_free(b); /* consumed either way */
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_builder_finish: out is NULL");
  }
  *out = NULL;
  if (!b) return xir__err(d, XIR_ERR_INVALID_ARG, "no builder");
  xir_status s;
  if (b->failed) {
    if (d) *d = b->err;
    s = b->err.status;
  } else {
    s = xir__verify(b->p, d);
    if (s == XIR_OK) {
      *out = b->p;
      b->p = NULL;
    }
  }
  xir_builder_free(b);
  return s;
}

xir_program *xir__builder_program(xir_builder *b) { return b->p; }

int xir__builder_error(const xir_builder *b, xir_diag *d) {
  if (!b->failed) return 0;
  if (d) *d = b->err;
  return 1;
}

/* ---- accessors ---- */

void xir_program_free(xir_program *p) {
  if (!p) return;
  xir__free(p->nodes);
  xir__free(p->reqs);
  xir__arena_free(&p->arena);
  xir__free(p);
}

void xir_free(void *ptr) { xir__free(ptr); }

const char *xir_program_name(const xir_program *p) { return p ? p->name : NULL; }
int xir_program_num_dims(const xir_program *p) { return p ? p->ndims : 0; }
const char *xir_program_dim_name(const xir_program *p, int dim) {
  return p && dim >= 0 && dim < p->ndims ? p->dims[dim] : NULL;
}
int xir_program_find_dim(const xir_program *p, const char *name) {
  for (int i = 0; p && name && i < p->ndims; i++)
    if (strcmp(p->dims[i], name) == 0) return i;
  return -1;
}
int xir_program_num_params(const xir_program *p) { return p ? p->nparams : 0; }
int xir_program_find_param(const xir_program *p, const char *name) {
  for (int i = 0; p && name && i < p->nparams; i++)
    if (strcmp(p->params[i].name, name) == 0) return i;
  return -1;
}
xir_status xir_program_param(const xir_program *p, int i, xir_param_info *info) {
  if (!p || !info || i < 0 || i >= p->nparams) return XIR_ERR_INVALID_ARG;
  const xir_param *q = &p->params[i];
  memset(info, 0, sizeof *info);
  info->name = q->name;
  info->kind = (xir_param_kind)q->kind;
  info->elem = (xir_elem)q->elem;
  info->is_output = q->is_output;
  info->rank = q->rank;
  memcpy(info->dims, q->dims, sizeof q->dims);
  info->has_default = q->has_default;
  info->default_value = q->default_value;
  return XIR_OK;
}
int xir_program_num_root(const xir_program *p) { return p ? p->nroot : 0; }
const char *xir_program_root_name(const xir_program *p, int k) {
  return p && k >= 0 && k < p->nroot ? p->root[k].var : NULL;
}
int xir_program_root_dim(const xir_program *p, int k) {
  return p && k >= 0 && k < p->nroot ? p->root[k].dim : -1;
}

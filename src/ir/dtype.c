/* dtype.c — element types: names and sizes, the exact f32 <-> bf16/f16 conversions of xir.h, and
 * re-typing a program's floating-point buffers (one kernel text for every dtype).
 *
 * A retyped program is a deep copy (every name, node and source position) with new buffer
 * element types, verified again. Loads of bf16/f16 buffers are f32 values and stores take f32
 * values, so retyping never changes the body's typing: the verifier only re-checks the buffer
 * rules (an i64 buffer never retypes, outputs are floating point). */
#include <string.h>

#include "ir/program.h"
#include "util/half.h"

const char *xir_elem_name(xir_elem e) {
  switch (e) {
    case XIR_F32: return "f32";
    case XIR_I64: return "i64";
    case XIR_BOOL: return "bool";
    case XIR_BF16: return "bf16";
    case XIR_F16: return "f16";
    default: return NULL;
  }
}

xir_elem xir_elem_from_name(const char *name) {
  if (!name) return XIR_ELEM_NONE;
  for (int e = XIR_F32; e <= XIR_F16; e++)
    if (!strcmp(name, xir_elem_name((xir_elem)e))) return (xir_elem)e;
  return XIR_ELEM_NONE;
}

size_t xir_elem_size(xir_elem e) {
  switch (e) {
    case XIR_F32: return 4;
    case XIR_I64: return 8;
    case XIR_BF16:
    case XIR_F16: return 2;
    default: return 0;
  }
}

uint16_t xir_f32_to_bf16(float x) { return xir__f32_to_bf16(x); }
float xir_bf16_to_f32(uint16_t h) { return xir__bf16_to_f32(h); }
uint16_t xir_f32_to_f16(float x) { return xir__f32_to_f16(x); }
float xir_f16_to_f32(uint16_t h) { return xir__f16_to_f32(h); }

void xir_f32_to_bf16_n(const float *in, uint16_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = xir__f32_to_bf16(in[i]);
}
void xir_bf16_to_f32_n(const uint16_t *in, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = xir__bf16_to_f32(in[i]);
}
void xir_f32_to_f16_n(const float *in, uint16_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = xir__f32_to_f16(in[i]);
}
void xir_f16_to_f32_n(const uint16_t *in, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = xir__f16_to_f32(in[i]);
}

/* A deep copy of p: strings and operand arrays into the copy's own arena. NULL when out of
 * memory. */
static xir_program *clone(const xir_program *p) {
  xir_program *q = xir__calloc(1, sizeof *q);
  if (!q) return NULL;
  *q = *p;
  memset(&q->arena, 0, sizeof q->arena);
  q->nodes = NULL;
  q->reqs = NULL;
  xir_arena *a = &q->arena;
  int oom = 0;
#define DUP(s) ((s) ? (oom |= !((s) = xir__arena_strdup(a, (s))), (s)) : (s))
  DUP(q->name);
  DUP(q->file);
  for (int i = 0; i < q->ndims; i++) DUP(q->dims[i]);
  for (int i = 0; i < q->nparams; i++) DUP(q->params[i].name);
  for (int k = 0; k < q->nroot; k++) DUP(q->root[k].var);
  q->nodes = xir__malloc(sizeof(xir_node) * ((size_t)p->nnodes + 1));
  q->reqs = xir__malloc(sizeof(int32_t) * ((size_t)p->nreq + 1));
  if (!q->nodes || !q->reqs) oom = 1;
  if (!oom) {
    if (p->nreq) memcpy(q->reqs, p->reqs, sizeof(int32_t) * (size_t)p->nreq);
    for (int i = 0; i < p->nnodes && !oom; i++) {
      xir_node *n = &q->nodes[i];
      *n = p->nodes[i];
      DUP(n->name);
      if (n->nargs) {
        int32_t *args = xir__arena_alloc(a, sizeof(int32_t) * n->nargs);
        if (!args) oom = 1;
        else memcpy(args, p->nodes[i].args, sizeof(int32_t) * n->nargs);
        n->args = args;
      }
    }
  }
#undef DUP
  if (oom) {
    if (!q->nodes) q->nnodes = 0;
    xir_program_free(q);
    return NULL;
  }
  return q;
}

static int is_float_buffer(const xir_param *q) {
  return q->kind == XIR_PARAM_BUFFER && (q->elem == XIR_F32 || q->elem == XIR_BF16 ||
                                         q->elem == XIR_F16);
}

static int is_float_elem(xir_elem e) { return e == XIR_F32 || e == XIR_BF16 || e == XIR_F16; }

/* Applies one retyping to elem[]; errors name the parameter. */
static xir_status retype_one(const xir_program *p, int param, xir_elem e, uint8_t *elem,
                             xir_diag *d) {
  const xir_param *q = &p->params[param];
  if (!is_float_elem(e))
    return xir__err(d, XIR_ERR_INVALID_ARG, "cannot retype '%s' to %s: buffers retype to f32, "
                    "bf16 or f16 only", q->name, xir_elem_name(e) ? xir_elem_name(e) : "?");
  if (q->kind != XIR_PARAM_BUFFER)
    return xir__err(d, XIR_ERR_INVALID_ARG, "cannot retype '%s' of kernel '%s': it is a scalar "
                    "(scalars stay %s)", q->name, p->name, xir_elem_name((xir_elem)q->elem));
  if (!is_float_buffer(q))
    return xir__err(d, XIR_ERR_INVALID_ARG, "cannot retype '%s' of kernel '%s': it is an %s "
                    "buffer (only floating-point buffers retype)", q->name, p->name,
                    xir_elem_name((xir_elem)q->elem));
  elem[param] = (uint8_t)e;
  return XIR_OK;
}

static xir_status finish(const xir_program *p, const uint8_t *elem, xir_program **out,
                         xir_diag *d) {
  xir_program *q = clone(p);
  if (!q) return xir__err(d, XIR_ERR_NOMEM, "out of memory copying '%s'", p->name);
  for (int i = 0; i < q->nparams; i++) q->params[i].elem = elem[i];
  xir_status s = xir__verify(q, d);
  if (s) {
    xir_program_free(q);
    return s;
  }
  *out = q;
  return XIR_OK;
}

xir_status xir_program_retype_param(const xir_program *p, int param, xir_elem elem,
                                    xir_program **out, xir_diag *d) {
  if (out) *out = NULL;
  if (!p || !out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_program_retype_param: %s is NULL",
                    !p ? "the program" : "out");
  if (param < 0 || param >= p->nparams)
    return xir__err(d, XIR_ERR_INVALID_ARG, "kernel '%s' has no parameter %d", p->name, param);
  uint8_t el[XIR_MAX_PARAMS];
  for (int i = 0; i < p->nparams; i++) el[i] = p->params[i].elem;
  xir_status s = retype_one(p, param, elem, el, d);
  return s ? s : finish(p, el, out, d);
}

xir_status xir_program_retype(const xir_program *p, const char *spec, xir_program **out,
                              xir_diag *d) {
  if (out) *out = NULL;
  if (!p || !out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_program_retype: %s is NULL",
                    !p ? "the program" : "out");
  uint8_t el[XIR_MAX_PARAMS];
  for (int i = 0; i < p->nparams; i++) el[i] = p->params[i].elem;
  const char *s = spec ? spec : "";
  while (*s) {
    const char *end = strchr(s, ',');
    if (!end) end = s + strlen(s);
    const char *eq = memchr(s, '=', (size_t)(end - s));
    char name[64] = "", ty[16];
    const char *t = eq ? eq + 1 : s;
    size_t nl = eq ? (size_t)(eq - s) : 0, tl = (size_t)(end - t);
    if ((eq && (nl == 0 || nl >= sizeof name)) || tl == 0 || tl >= sizeof ty)
      return xir__err(d, XIR_ERR_INVALID_ARG, "dtype spec '%s': expected TYPE or NAME=TYPE, found "
                      "'%.*s'", spec, (int)(end - s), s);
    memcpy(name, s, nl);
    name[nl] = 0;
    memcpy(ty, t, tl);
    ty[tl] = 0;
    xir_elem e = xir_elem_from_name(ty);
    if (!is_float_elem(e))
      return xir__err(d, XIR_ERR_INVALID_ARG, "dtype spec '%s': unknown type '%s' (expected f32, "
                      "bf16 or f16)", spec, ty);
    if (!eq) {
      for (int i = 0; i < p->nparams; i++)
        if (is_float_buffer(&p->params[i])) el[i] = (uint8_t)e;
    } else {
      int prm = xir_program_find_param(p, name);
      if (prm < 0)
        return xir__err(d, XIR_ERR_NOT_FOUND, "dtype spec '%s': kernel '%s' has no parameter "
                        "'%s'", spec, p->name, name);
      xir_status st = retype_one(p, prm, e, el, d);
      if (st) return st;
    }
    s = *end ? end + 1 : end;
  }
  return finish(p, el, out, d);
}

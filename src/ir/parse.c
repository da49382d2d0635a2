/* parse.c — XIR text to program, through the builder.
 *
 * A hand-written recursive-descent parser over a small tokenizer. Each parse function consumes
 * tokens and returns an xir_value (or -1 after recording the first error with its line:col).
 * The grammar (docs/xir.md has it with examples):
 *
 *   program  := 'kernel' NAME '[' dims ']' '(' params ')' require* root '{' stmt* '}'
 *   param    := NAME ':' ['out'] ('f32'|'bf16'|'f16'|'i64') '[' dims ']'
 *             | NAME ':' ('f32'|'i64') ['=' literal]
 *   require  := 'require' expr
 *   root     := 'root' NAME 'in' DIM (',' NAME 'in' DIM)*
 *   stmt     := NAME '=' expr | 'store' NAME '[' index (',' index)* ']' '=' expr
 *   index    := ':' | expr
 *   expr     := || && (== != < <= > >=) (+ -) (* / %) unary(- !) primary
 *   primary  := literal | NAME | '(' expr ')' | 'load' NAME '[' ... ']' | 'iota' '(' DIM ')'
 *             | 'reduce.sum|max|min' '(' expr [',' DIM] ')' | OP '(' expr, ... ')'
 * Comments run from '#' to the end of the line. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/program.h"

typedef enum tok_kind { T_EOF, T_NAME, T_INT, T_FLOAT, T_PUNCT } tok_kind;

typedef struct tok {
  tok_kind kind;
  const char *s;
  size_t len;
  int line, col;
} tok;

typedef struct parser {
  const char *src, *end, *cur;
  const char *file;
  int line, col;
  tok t;
  xir_builder *b;
  xir_diag err;
  int failed;
  int depth; /* expression nesting, bounded so that no input can exhaust the stack */
} parser;

static void perr(parser *ps, const tok *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void perr(parser *ps, const tok *at, const char *fmt, ...) {
  if (ps->failed) return;
  ps->failed = 1;
  char msg[800];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  xir__err_at(&ps->err, XIR_ERR_PARSE, ps->file, at->line, at->col, "%s", msg);
}

/* Describes a token for messages: 'x', end of input, ... */
static const char *tdesc(const tok *t, char *buf, size_t cap) {
  if (t->kind == T_EOF) return "end of input";
  size_t n = t->len > 40 ? 40 : t->len, o = 0;
  o += (size_t)snprintf(buf, cap, "'");
  for (size_t i = 0; i < n && o + 6 < cap; i++) {
    unsigned char ch = (unsigned char)t->s[i];
    if (ch >= 0x20 && ch < 0x7f) buf[o++] = (char)ch;
    else o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
  }
  snprintf(buf + o, cap - o, "'");
  return buf;
}

static void next(parser *ps) {
  const char *c = ps->cur;
  for (;;) {
    while (c < ps->end && (*c == ' ' || *c == '\t' || *c == '\r' || *c == '\n')) {
      if (*c == '\n') {
        ps->line++;
        ps->col = 1;
      } else {
        ps->col++;
      }
      c++;
    }
    if (c < ps->end && *c == '#') {
      while (c < ps->end && *c != '\n') c++;
      continue;
    }
    break;
  }
  tok t = {T_EOF, c, 0, ps->line, ps->col};
  if (c >= ps->end) {
    ps->t = t;
    ps->cur = c;
    return;
  }
  const char *s = c;
  if (isalpha((unsigned char)*c) || *c == '_') {
    while (c < ps->end && (isalnum((unsigned char)*c) || *c == '_')) c++;
    /* reduce.sum and friends are one token */
    if ((size_t)(c - s) == 6 && memcmp(s, "reduce", 6) == 0 && c < ps->end && *c == '.') {
      c++;
      while (c < ps->end && isalpha((unsigned char)*c)) c++;
    }
    t.kind = T_NAME;
  } else if (isdigit((unsigned char)*c) || (*c == '.' && c + 1 < ps->end && isdigit((unsigned char)c[1]))) {
    int is_float = 0;
    while (c < ps->end && isdigit((unsigned char)*c)) c++;
    if (c < ps->end && *c == '.') {
      is_float = 1;
      c++;
      while (c < ps->end && isdigit((unsigned char)*c)) c++;
    }
    if (c < ps->end && (*c == 'e' || *c == 'E')) {
      const char *e = c + 1;
      if (e < ps->end && (*e == '+' || *e == '-')) e++;
      if (e < ps->end && isdigit((unsigned char)*e)) {
        is_float = 1;
        c = e;
        while (c < ps->end && isdigit((unsigned char)*c)) c++;
      }
    }
    t.kind = is_float ? T_FLOAT : T_INT;
    /* "2e", "0x10", "1.5f": keep the whole thing as one token; literal() rejects it */
    while (c < ps->end && (isalnum((unsigned char)*c) || *c == '_' || *c == '.')) c++;
  } else {
    static const char *two[] = {"==", "!=", "<=", ">=", "&&", "||"};
    t.kind = T_PUNCT;
    c++;
    for (size_t i = 0; i < XIR_ARRAY_LEN(two); i++)
      if (s + 1 < ps->end && s[0] == two[i][0] && s[1] == two[i][1]) {
        c = s + 2;
        break;
      }
  }
  t.len = (size_t)(c - s);
  ps->col += (int)t.len;
  ps->cur = c;
  ps->t = t;
}

static int is(const parser *ps, const char *s) {
  size_t n = strlen(s);
  return ps->t.kind != T_EOF && ps->t.len == n && memcmp(ps->t.s, s, n) == 0;
}

static int accept(parser *ps, const char *s) {
  if (!is(ps, s)) return 0;
  next(ps);
  return 1;
}

static int expect(parser *ps, const char *s, const char *context) {
  if (accept(ps, s)) return 1;
  char buf[64];
  perr(ps, &ps->t, "expected '%s' %s, found %s", s, context, tdesc(&ps->t, buf, sizeof buf));
  return 0;
}

/* Copies the current NAME token into buf; error if it is not a name. */
static int take_name(parser *ps, char *buf, size_t cap, const char *what) {
  if (ps->t.kind != T_NAME) {
    char d[64];
    perr(ps, &ps->t, "expected %s, found %s", what, tdesc(&ps->t, d, sizeof d));
    return 0;
  }
  if (ps->t.len >= cap || ps->t.len >= 64) {
    perr(ps, &ps->t, "%s is too long (at most 63 characters)", what);
    return 0;
  }
  memcpy(buf, ps->t.s, ps->t.len);
  buf[ps->t.len] = 0;
  next(ps);
  return 1;
}

static void loc(parser *ps, const tok *t) { xir_builder_set_loc(ps->b, ps->file, t->line, t->col); }

/* Looks up a dim by name; error at `at` if unknown. */
static int want_dim(parser *ps, const tok *at, const char *name, xir_program *p) {
  int d = xir_program_find_dim(p, name);
  if (d < 0) perr(ps, at, "unknown dim '%s'", name);
  return d;
}

/* The builder's program (the parser reads declarations back while it builds). */
static xir_program *bp(parser *ps);

static xir_value expr(parser *ps);

static xir_value literal(parser *ps, int negate) {
  tok t = ps->t;
  char buf[128];
  if (t.len >= sizeof buf) {
    perr(ps, &t, "number too long");
    return -1;
  }
  memcpy(buf, t.s, t.len);
  buf[t.len] = 0;
  loc(ps, &t);
  next(ps);
  if (t.kind == T_INT) {
    errno = 0;
    char *endp;
    unsigned long long u = strtoull(buf, &endp, 10);
    if (*endp) {
      perr(ps, &t, "malformed number '%s'", buf);
      return -1;
    }
    if (errno || u > (negate ? (unsigned long long)INT64_MAX + 1 : (unsigned long long)INT64_MAX)) {
      perr(ps, &t, "integer literal %s%s does not fit in i64", negate ? "-" : "", buf);
      return -1;
    }
    int64_t v = negate ? (int64_t)(0 - u) : (int64_t)u;
    return xir_builder_const_i64(ps->b, v);
  }
  char *endf;
  double v = strtod(buf, &endf);
  if (*endf) {
    perr(ps, &t, "malformed number '%s'", buf);
    return -1;
  }
  float f = (float)v;
  /* A literal is digits, never "inf": an infinite value (1e39, or 1e400 which already overflows
   * the double) is out of range. Write `inf` for infinity. */
  if (isinf(f)) {
    perr(ps, &t, "literal %s is out of the f32 range (write inf for infinity)", buf);
    return -1;
  }
  return xir_builder_const_f32(ps->b, negate ? -f : f);
}

static xir_value access_indices(parser *ps, xir_index *idx, int *nidx) {
  *nidx = 0;
  if (!expect(ps, "[", "after the buffer name")) return -1;
  do {
    if (*nidx >= XIR_MAX_RANK) {
      perr(ps, &ps->t, "too many indices (at most %d)", XIR_MAX_RANK);
      return -1;
    }
    if (accept(ps, ":")) {
      idx[(*nidx)++] = xir_slice();
    } else {
      xir_value v = expr(ps);
      if (v < 0) return -1;
      idx[(*nidx)++] = xir_at(v);
    }
  } while (accept(ps, ","));
  if (!expect(ps, "]", "after the indices")) return -1;
  return 0;
}

static int buffer_ref(parser *ps, const tok *at, const char *name) {
  int prm = xir_program_find_param(bp(ps), name);
  if (prm < 0) {
    perr(ps, at, "unknown buffer '%s'", name);
    return -1;
  }
  xir_param_info info;
  xir_program_param(bp(ps), prm, &info);
  if (info.kind != XIR_PARAM_BUFFER) {
    perr(ps, at, "'%s' is a scalar, not a buffer", name);
    return -1;
  }
  return prm;
}

static xir_value call(parser *ps, const tok *at, const char *name) {
  /* iota(DIM) */
  if (strcmp(name, "iota") == 0) {
    char dn[64];
    tok dt = ps->t;
    if (!take_name(ps, dn, sizeof dn, "a dim name in iota(...)")) return -1;
    int d = want_dim(ps, &dt, dn, bp(ps));
    if (d < 0 || !expect(ps, ")", "after iota's dim")) return -1;
    loc(ps, at);
    return xir_builder_iota(ps->b, d);
  }
  int op = -1;
  for (int i = 0; i < XIR_OP_COUNT_; i++)
    if (strcmp(xir__op_info[i].name, name) == 0) op = i;
  if (op == XIR_OP_REDUCE_SUM || op == XIR_OP_REDUCE_MAX || op == XIR_OP_REDUCE_MIN) {
    xir_value v = expr(ps);
    if (v < 0) return -1;
    int d = -1;
    if (accept(ps, ",")) {
      char dn[64];
      tok dt = ps->t;
      if (!take_name(ps, dn, sizeof dn, "the dim to reduce along")) return -1;
      if ((d = want_dim(ps, &dt, dn, bp(ps))) < 0) return -1;
    }
    if (!expect(ps, ")", "after the reduction's operand")) return -1;
    loc(ps, at);
    return xir_builder_reduce(ps->b, (xir_op)op, v, d);
  }
  if (op < 0 || xir__is_inline_leaf(op) || op == XIR_OP_IOTA || op == XIR_OP_LOAD ||
      op == XIR_OP_STORE) {
    perr(ps, at, "unknown function '%s'", name);
    return -1;
  }
  xir_value args[8];
  int n = 0;
  if (!is(ps, ")")) {
    do {
      if (n >= 8) {
        perr(ps, &ps->t, "too many operands for '%s'", name);
        return -1;
      }
      if ((args[n++] = expr(ps)) < 0) return -1;
    } while (accept(ps, ","));
  }
  if (!expect(ps, ")", "after the operands")) return -1;
  if (n != xir__op_info[op].nargs) {
    perr(ps, at, "'%s' takes %d operand%s, got %d", name, xir__op_info[op].nargs,
         xir__op_info[op].nargs == 1 ? "" : "s", n);
    return -1;
  }
  loc(ps, at);
  return xir_builder_op(ps->b, (xir_op)op, n, args);
}

static xir_value primary(parser *ps) {
  tok t = ps->t;
  char d[64];
  if (ps->failed) return -1;
  if (t.kind == T_INT || t.kind == T_FLOAT) return literal(ps, 0);
  if (accept(ps, "(")) {
    xir_value v = expr(ps);
    if (v < 0 || !expect(ps, ")", "to close '('")) return -1;
    return v;
  }
  if (t.kind != T_NAME) {
    perr(ps, &t, "expected an expression, found %s", tdesc(&t, d, sizeof d));
    return -1;
  }
  char name[64];
  if (!take_name(ps, name, sizeof name, "a name")) return -1;
  if (strcmp(name, "inf") == 0 || strcmp(name, "nan") == 0) {
    loc(ps, &t);
    return xir_builder_const_f32(ps->b, name[0] == 'i' ? INFINITY : NAN);
  }
  if (strcmp(name, "load") == 0) {
    char bn[64];
    tok bt = ps->t;
    if (!take_name(ps, bn, sizeof bn, "a buffer name after 'load'")) return -1;
    int prm = buffer_ref(ps, &bt, bn);
    if (prm < 0) return -1;
    xir_index idx[XIR_MAX_RANK];
    int nidx;
    if (access_indices(ps, idx, &nidx) < 0) return -1;
    loc(ps, &t);
    return xir_builder_load(ps->b, prm, nidx, idx);
  }
  if (accept(ps, "(")) return call(ps, &t, name);
  loc(ps, &t);
  int kind, idx;
  if (xir__builder_lookup(ps->b, name, &kind, &idx)) {
    switch (kind) {
      case XIR__NAME_VALUE: return idx;
      case XIR__NAME_ROOT: return xir_builder_root_value(ps->b, idx);
      case XIR__NAME_PARAM: return xir_builder_param_value(ps->b, idx);
      default: return xir_builder_dim_value(ps->b, idx);
    }
  }
  perr(ps, &t, "unknown name '%s'", name);
  return -1;
}

static xir_value unary_inner(parser *ps);

/* Every level of nesting passes through here: the depth bound lives in one place. */
static xir_value unary(parser *ps) {
  if (++ps->depth > 200) {
    perr(ps, &ps->t, "expression nested too deeply (at most 200 levels)");
    ps->depth--;
    return -1;
  }
  xir_value v = unary_inner(ps);
  ps->depth--;
  return v;
}

static xir_value unary_inner(parser *ps) {
  tok t = ps->t;
  if (accept(ps, "-")) {
    if (ps->t.kind == T_INT || ps->t.kind == T_FLOAT) return literal(ps, 1);
    if (is(ps, "inf")) {
      next(ps);
      loc(ps, &t);
      return xir_builder_const_f32(ps->b, -INFINITY);
    }
    xir_value a = unary(ps);
    if (a < 0) return -1;
    loc(ps, &t);
    return xir_builder_op(ps->b, XIR_OP_NEG, 1, &a);
  }
  if (accept(ps, "!")) {
    xir_value a = unary(ps);
    if (a < 0) return -1;
    loc(ps, &t);
    return xir_builder_op(ps->b, XIR_OP_NOT, 1, &a);
  }
  return primary(ps);
}

typedef struct binop {
  const char *text;
  xir_op op;
  int prec;
} binop;

static const binop kBinops[] = {
    {"||", XIR_OP_OR, 1}, {"&&", XIR_OP_AND, 2}, {"==", XIR_OP_EQ, 3}, {"!=", XIR_OP_NE, 3},
    {"<", XIR_OP_LT, 3},  {"<=", XIR_OP_LE, 3},  {">", XIR_OP_GT, 3},  {">=", XIR_OP_GE, 3},
    {"+", XIR_OP_ADD, 4}, {"-", XIR_OP_SUB, 4},  {"*", XIR_OP_MUL, 5}, {"/", XIR_OP_DIV, 5},
    {"%", XIR_OP_REM, 5},
};

static const binop *peek_binop(parser *ps) {
  if (ps->t.kind != T_PUNCT) return NULL;
  for (size_t i = 0; i < XIR_ARRAY_LEN(kBinops); i++)
    if (is(ps, kBinops[i].text)) return &kBinops[i];
  return NULL;
}

/* Precedence climbing; comparisons do not chain. */
static xir_value binary(parser *ps, int min_prec) {
  xir_value lhs = unary(ps);
  const binop *op;
  while (lhs >= 0 && (op = peek_binop(ps)) && op->prec >= min_prec) {
    tok t = ps->t;
    next(ps);
    xir_value rhs = binary(ps, op->prec + 1);
    if (rhs < 0) return -1;
    loc(ps, &t);
    xir_value args[2] = {lhs, rhs};
    lhs = xir_builder_op(ps->b, op->op, 2, args);
    if (op->prec == 3 && (op = peek_binop(ps)) && op->prec == 3) {
      perr(ps, &ps->t, "comparisons cannot be chained; use && between them");
      return -1;
    }
  }
  return lhs;
}

static xir_value expr(parser *ps) {
  if (ps->failed) return -1;
  return binary(ps, 1);
}

static void dims_decl(parser *ps) {
  if (!expect(ps, "[", "after the kernel name (the list of dims, e.g. [R, C])")) return;
  do {
    char n[64];
    tok t = ps->t;
    if (!take_name(ps, n, sizeof n, "a dim name")) return;
    loc(ps, &t);
    if (xir_builder_dim(ps->b, n) < 0) return;
  } while (accept(ps, ","));
  expect(ps, "]", "after the dims");
}

static void param_decl(parser *ps) {
  char name[64];
  tok nt = ps->t;
  if (!take_name(ps, name, sizeof name, "a parameter name")) return;
  if (!expect(ps, ":", "after the parameter name")) return;
  int is_out = accept(ps, "out");
  tok tt = ps->t;
  char ty[64];
  if (!take_name(ps, ty, sizeof ty, "a type (f32, bf16, f16 or i64)")) return;
  xir_elem elem = xir_elem_from_name(ty);
  if (!elem || elem == XIR_BOOL) {
    perr(ps, &tt, "unknown type '%s' (expected f32, bf16, f16 or i64)", ty);
    return;
  }
  if ((elem == XIR_BF16 || elem == XIR_F16) && !is(ps, "[")) {
    perr(ps, &tt, "scalar '%s' cannot be %s: scalars are f32 or i64 (only buffers hold bf16 or "
         "f16)", name, ty);
    return;
  }
  if (is(ps, "[")) {
    next(ps);
    int dims[XIR_MAX_RANK], rank = 0;
    do {
      char dn[64];
      tok dt = ps->t;
      if (!take_name(ps, dn, sizeof dn, "a dim name")) return;
      if (rank >= XIR_MAX_RANK) {
        perr(ps, &dt, "buffer '%s' has more than %d dims", name, XIR_MAX_RANK);
        return;
      }
      int d = want_dim(ps, &dt, dn, bp(ps));
      if (d < 0) return;
      dims[rank++] = d;
    } while (accept(ps, ","));
    if (!expect(ps, "]", "after the buffer's dims")) return;
    loc(ps, &nt); /* an f32, bf16, f16 or i64 buffer (i64: inputs only, see verify.c) */
    xir_builder_buffer(ps->b, name, elem, rank, dims, is_out);
    return;
  }
  if (is_out) {
    perr(ps, &nt, "scalar '%s' cannot be an output (only buffers can)", name);
    return;
  }
  int has_default = 0;
  double dv = 0;
  if (accept(ps, "=")) {
    int neg = accept(ps, "-");
    tok lt = ps->t;
    char lb[128];
    if (lt.kind == T_NAME && lt.len == 3 && memcmp(lt.s, "inf", 3) == 0) {
      if (elem == XIR_I64) {
        perr(ps, &lt, "default of i64 scalar '%s' must be an integer, not inf", name);
        return;
      }
      dv = INFINITY;
      next(ps);
    } else if (lt.kind == T_INT || lt.kind == T_FLOAT) {
      if (lt.len >= sizeof lb) {
        perr(ps, &lt, "number too long");
        return;
      }
      memcpy(lb, lt.s, lt.len);
      lb[lt.len] = 0;
      if (elem == XIR_I64 && lt.kind != T_INT) {
        perr(ps, &lt, "default of i64 scalar '%s' must be an integer", name);
        return;
      }
      char *endd;
      errno = 0;
      if (elem == XIR_I64) {
        unsigned long long u = strtoull(lb, &endd, 10);
        if (*endd || errno || u > (1ull << 53)) {
          perr(ps, &lt, "default of '%s' is too large (at most 2^53 in magnitude)", name);
          return;
        }
        dv = (double)u;
      } else {
        dv = strtod(lb, &endd);
        if (*endd) {
          perr(ps, &lt, "malformed number '%s'", lb);
          return;
        }
      }
      if (elem == XIR_F32 && isinf((float)dv)) {
        perr(ps, &lt, "default of '%s' is out of the f32 range", name);
        return;
      }
      next(ps);
    } else {
      char d[64];
      perr(ps, &lt, "expected a number after '=', found %s", tdesc(&lt, d, sizeof d));
      return;
    }
    if (neg) dv = -dv;
    has_default = 1;
  }
  loc(ps, &nt);
  xir_builder_scalar(ps->b, name, elem, has_default, dv);
}

static void statement(parser *ps) {
  tok t = ps->t;
  char d[64];
  if (accept(ps, "store")) {
    char bn[64];
    tok bt = ps->t;
    if (!take_name(ps, bn, sizeof bn, "a buffer name after 'store'")) return;
    int prm = buffer_ref(ps, &bt, bn);
    if (prm < 0) return;
    xir_index idx[XIR_MAX_RANK];
    int nidx;
    if (access_indices(ps, idx, &nidx) < 0) return;
    if (!expect(ps, "=", "after the store's indices")) return;
    xir_value v = expr(ps);
    if (v < 0) return;
    loc(ps, &t);
    xir_builder_store(ps->b, prm, nidx, idx, v);
    return;
  }
  if (t.kind != T_NAME) {
    perr(ps, &t, "expected a statement (NAME = expr, or store), found %s",
         tdesc(&t, d, sizeof d));
    return;
  }
  char name[64];
  if (!take_name(ps, name, sizeof name, "a value name")) return;
  if (!expect(ps, "=", "after the value name (statements are NAME = expr or store ...)")) return;
  xir_value v = expr(ps);
  if (v < 0) return;
  const xir_node *n = &bp(ps)->nodes[v];
  if (xir__is_inline_leaf(n->op) || n->name) {
    perr(ps, &t, "'%s = ...' names nothing new: the right side is a literal, a declared name or "
         "an existing value; use it directly", name);
    return;
  }
  loc(ps, &t);
  xir_builder_name(ps->b, v, name);
}

static void program(parser *ps) {
  if (!expect(ps, "kernel", "at the start of the program")) return;
  char name[64];
  if (!take_name(ps, name, sizeof name, "the kernel name")) return;
  xir_status s = xir_builder_new(name, &ps->b);
  if (s) {
    xir__err(&ps->err, s, "out of memory");
    ps->failed = 1;
    return;
  }
  dims_decl(ps);
  if (ps->failed || !expect(ps, "(", "before the parameters")) return;
  if (!is(ps, ")")) {
    do {
      param_decl(ps);
      if (ps->failed) return;
    } while (accept(ps, ","));
  }
  if (!expect(ps, ")", "after the parameters")) return;
  while (accept(ps, "require")) {
    tok t = ps->t;
    xir_value v = expr(ps);
    if (v < 0) return;
    loc(ps, &t);
    xir_builder_require(ps->b, v);
  }
  if (!expect(ps, "root", "(the root domain, e.g. root r in R)")) return;
  do {
    char var[64], dn[64];
    tok vt = ps->t;
    if (!take_name(ps, var, sizeof var, "a root variable")) return;
    if (!expect(ps, "in", "after the root variable")) return;
    tok dt = ps->t;
    if (!take_name(ps, dn, sizeof dn, "the dim the root variable ranges over")) return;
    int dim = want_dim(ps, &dt, dn, bp(ps));
    if (dim < 0) return;
    loc(ps, &vt);
    if (xir_builder_root(ps->b, var, dim) < 0) return;
  } while (accept(ps, ","));
  if (!expect(ps, "{", "to open the body")) return;
  while (!ps->failed && !is(ps, "}")) {
    if (ps->t.kind == T_EOF) {
      perr(ps, &ps->t, "missing '}' at the end of the body");
      return;
    }
    statement(ps);
    if (bp(ps) == NULL) return;
  }
  if (!expect(ps, "}", "to close the body")) return;
  if (ps->t.kind != T_EOF) {
    char d[64];
    perr(ps, &ps->t, "unexpected %s after the end of the kernel", tdesc(&ps->t, d, sizeof d));
  }
}

static xir_program *bp(parser *ps) { return xir__builder_program(ps->b); }

xir_status xir_program_parse(const char *text, size_t len, const char *filename,
                             xir_program **out, xir_diag *d) {
  if (!out) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_program_parse: out is NULL");
  *out = NULL;
  if (!text) return xir__err(d, XIR_ERR_INVALID_ARG, "no text");
  const char *nul = memchr(text, 0, len);
  if (nul) {
    int line = 1, col = 1;
    for (const char *c = text; c < nul; c++) {
      if (*c == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    return xir__err_at(d, XIR_ERR_PARSE, filename ? filename : "<input>", line, col,
                       "input contains a NUL byte");
  }
  parser ps = {.src = text, .end = text + len, .cur = text, .file = filename ? filename : "<input>",
               .line = 1, .col = 1};
  next(&ps);
  program(&ps);
  if (ps.b && !ps.failed && xir__builder_error(ps.b, &ps.err)) ps.failed = 1;
  if (ps.failed) {
    /* A builder error (duplicate name, ...) wins when it came first. */
    xir_diag be;
    if (ps.b && xir__builder_error(ps.b, &be)) ps.err = be;
    if (d) *d = ps.err;
    xir_builder_free(ps.b);
    return ps.err.status ? ps.err.status : XIR_ERR_PARSE;
  }
  return xir_builder_finish(ps.b, out, d);
}

xir_status xir_program_parse_file(const char *path, xir_program **out, xir_diag *d) {
  if (out) *out = NULL;
  if (!path || !out)
    return xir__err(d, XIR_ERR_INVALID_ARG, "xir_program_parse_file: %s is NULL",
                    !path ? "the path" : "out");
  FILE *f = fopen(path, "rb");
  if (!f) return xir__err(d, XIR_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  size_t cap = 0, len = 0;
  char *buf = NULL;
  for (;;) {
    if (xir__grow((void **)&buf, &cap, len + 65536, 1)) {
      fclose(f);
      xir__free(buf);
      return xir__err(d, XIR_ERR_NOMEM, "out of memory reading '%s'", path);
    }
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (n == 0) break;
    if (len > (64u << 20)) {
      fclose(f);
      xir__free(buf);
      return xir__err(d, XIR_ERR_IO, "'%s' is larger than 64 MiB", path);
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    xir__free(buf);
    return xir__err(d, XIR_ERR_IO, "cannot read '%s'", path);
  }
  xir_status s = xir_program_parse(buf, len, path, out, d);
  xir__free(buf);
  return s;
}

/* xir_ops.h — the XIR op table: every op is defined once here.
 *
 * O(ID, text, nargs, typing, f64 semantics, i64 semantics)
 *   ID       enum suffix (XIR_OP_ID)
 *   text     the op's name in XIR text, e.g. "exp"
 *   nargs    operand count (-1 = variable: load/store)
 *   typing   the typing rule (XIR_TY_*, see verify.c)
 *   f64      the fp64 meaning over doubles a, b, c (the oracle); 0 when not applicable
 *   i64      the integer meaning over int64 ia, ib (0 when the op has no integer form)
 * The enum, the names, the printer, the parser's call table and the interpreter all derive from
 * this list; adding an op touches this file and, if it needs native code, lower/. */
#ifndef XIR_OPS_H_
#define XIR_OPS_H_

/* Leaves and structure. */
#define XIR_OPS_STRUCT(O)                                                  \
  O(CONST, "const", 0, XIR_TY_LEAF, 0, 0)                                  \
  O(DIM, "dim", 0, XIR_TY_LEAF, 0, 0)                                      \
  O(PARAM, "param", 0, XIR_TY_LEAF, 0, 0)                                  \
  O(ROOT, "root", 0, XIR_TY_LEAF, 0, 0)                                    \
  O(IOTA, "iota", 0, XIR_TY_IOTA, 0, 0)                                    \
  O(LOAD, "load", -1, XIR_TY_LOAD, 0, 0)                                   \
  O(STORE, "store", -1, XIR_TY_STORE, 0, 0)                                \
  O(REDUCE_SUM, "reduce.sum", 1, XIR_TY_REDUCE, 0, 0)                      \
  O(REDUCE_MAX, "reduce.max", 1, XIR_TY_REDUCE, 0, 0)                      \
  O(REDUCE_MIN, "reduce.min", 1, XIR_TY_REDUCE, 0, 0)                      \
  O(TOF32, "f32", 1, XIR_TY_TOF32, a, 0)

/* Elementwise ops. */
#define XIR_OPS_ELEM(O)                                                    \
  O(NEG, "neg", 1, XIR_TY_NUM1, -a, xir__isub(0, ia))                     \
  O(ABS, "abs", 1, XIR_TY_NUM1, fabs(a), (ia < 0 ? xir__isub(0, ia) : ia)) \
  O(EXP, "exp", 1, XIR_TY_F1, exp(a), 0)                                   \
  O(LOG, "log", 1, XIR_TY_F1, log(a), 0)                                   \
  O(TANH, "tanh", 1, XIR_TY_F1, tanh(a), 0)                                \
  O(ERF, "erf", 1, XIR_TY_F1, erf(a), 0)                                   \
  O(SQRT, "sqrt", 1, XIR_TY_F1, sqrt(a), 0)                                \
  O(RSQRT, "rsqrt", 1, XIR_TY_F1, 1.0 / sqrt(a), 0)                        \
  O(SIGMOID, "sigmoid", 1, XIR_TY_F1, 1.0 / (1.0 + exp(-a)), 0)            \
  O(SIN, "sin", 1, XIR_TY_F1, sin(a), 0)                                   \
  O(COS, "cos", 1, XIR_TY_F1, cos(a), 0)                                   \
  O(ADD, "add", 2, XIR_TY_NUM2, a + b, xir__iadd(ia, ib))                  \
  O(SUB, "sub", 2, XIR_TY_NUM2, a - b, xir__isub(ia, ib))                  \
  O(MUL, "mul", 2, XIR_TY_NUM2, a * b, xir__imul(ia, ib))                  \
  O(DIV, "div", 2, XIR_TY_NUM2, a / b, xir__idiv(ia, ib))                  \
  O(REM, "rem", 2, XIR_TY_I2, 0, xir__irem(ia, ib))                        \
  O(MAX, "max", 2, XIR_TY_NUM2, xir__fmax(a, b), (ia > ib ? ia : ib))      \
  O(MIN, "min", 2, XIR_TY_NUM2, xir__fmin(a, b), (ia < ib ? ia : ib))      \
  O(POW, "pow", 2, XIR_TY_F2, pow(a, b), 0)                                \
  O(LT, "lt", 2, XIR_TY_CMP, (a < b), (ia < ib))                           \
  O(LE, "le", 2, XIR_TY_CMP, (a <= b), (ia <= ib))                         \
  O(GT, "gt", 2, XIR_TY_CMP, (a > b), (ia > ib))                           \
  O(GE, "ge", 2, XIR_TY_CMP, (a >= b), (ia >= ib))                         \
  O(EQ, "eq", 2, XIR_TY_CMP, (a == b), (ia == ib))                         \
  O(NE, "ne", 2, XIR_TY_CMP, (a != b), (ia != ib))                         \
  O(AND, "and", 2, XIR_TY_BOOL2, (a != 0 && b != 0), 0)                    \
  O(OR, "or", 2, XIR_TY_BOOL2, (a != 0 || b != 0), 0)                      \
  O(NOT, "not", 1, XIR_TY_BOOL1, (a == 0), 0)                              \
  O(FMA, "fma", 3, XIR_TY_F3, a * b + c, 0)                                \
  O(SELECT, "select", 3, XIR_TY_SELECT, (a != 0 ? b : c), 0)

#define XIR_OPS(O) XIR_OPS_STRUCT(O) XIR_OPS_ELEM(O)

#endif

/* test_i64_buffers.c — i64 input buffers end to end: the builder and parser accept them as
 * inputs only (an i64 output is an error naming line:col), a load of one is an i64 value that can
 * index other buffers and takes part in i64 arithmetic, the printer writes `i64[...]` (print∘parse
 * identity), the fp64 interpreter reads int64 data (strides too; out-of-range indices and values
 * beyond 2^53 are errors), native code computes what the interpreter computes for every
 * candidate, and the execution work counts 8 bytes per i64 element. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "check/check.h"
#include "xir.h"
#include "xir_compile.h"
#include "xir_plan.h"

static void die(const xir_diag *d) {
  char b[2048];
  fail_msg("%s", xir_diag_format(d, b, sizeof b));
}

static xir_program *parse_ok(const char *text) {
  xir_program *p = NULL;
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "t.xir", &p, &d)) die(&d);
  return p;
}

/* Parsing fails with XIR_ERR_VERIFY or XIR_ERR_PARSE at line:col with a message holding `want`. */
static void parse_fails(const char *text, int line, int col, const char *want) {
  xir_program *p = NULL;
  xir_diag d;
  xir_status s = xir_program_parse(text, strlen(text), "t.xir", &p, &d);
  char b[2048];
  if (s == XIR_OK) fail_msg("accepted:\n%s", text);
  assert_null(p);
  xir_diag_format(&d, b, sizeof b);
  if (d.line != line || d.col != col || !strstr(d.msg, want))
    fail_msg("expected %d:%d '%s', got '%s'", line, col, want, b);
  char where[64];
  snprintf(where, sizeof where, "t.xir:%d:%d", line, col);
  if (!strstr(b, where)) fail_msg("'%s' does not name %s", b, where);
}

static const char *kGather =
    "kernel g[R, C, P](pos: i64[R], tab: f32[P, C], idx: i64[R, C], y: out f32[R, C])\n"
    "root r in R {\n"
    "  p = load pos[r]\n"
    "  q = (load idx[r, :] + p) % P\n"
    "  store y[r, :] = load tab[p, :] + load tab[q, iota(C)] * f32(p)\n"
    "}\n";

static void test_parse_verify_rules(void **state) {
  (void)state;
  xir_program *p = parse_ok(kGather);
  xir_param_info in;
  assert_int_equal(xir_program_param(p, 0, &in), XIR_OK);
  assert_int_equal(in.kind, XIR_PARAM_BUFFER);
  assert_int_equal(in.elem, XIR_I64);
  assert_int_equal(in.is_output, 0);
  assert_int_equal(xir_program_param(p, 1, &in), XIR_OK);
  assert_int_equal(in.elem, XIR_F32);
  xir_program_free(p);
  /* i64 buffers are inputs only */
  parse_fails("kernel k[R](x: f32[R],\n    y: out i64[R])\nroot r in R {\n  store y[r] = load x[r]\n}\n",
              2, 5, "output buffer 'y' must be f32, bf16 or f16: i64 buffers can only be inputs");
  /* a load of an i64 buffer is i64: no implicit conversion to f32 */
  parse_fails("kernel k[R](pos: i64[R], y: out f32[R])\nroot r in R {\n  store y[r] = load pos[r] * 2.0\n}\n",
              3, 28, "operands of 'mul' have different types i64 and f32");
  parse_fails("kernel k[R](pos: i64[R], y: out f32[R])\nroot r in R {\n  store y[r] = load pos[r]\n}\n",
              3, 3, "store to 'y' needs an f32 value, but it is i64");
  parse_fails("kernel k[R](pos: i64[R], y: out f32[R])\nroot r in R {\n  store y[r] = exp(load pos[r])\n}\n",
              3, 16, "operand 1 of 'exp' must be f32, but it is i64");
  /* an f32 load cannot index */
  parse_fails("kernel k[R](w: f32[R], x: f32[R], y: out f32[R])\nroot r in R {\n"
              "  store y[r] = load x[load w[r]]\n}\n",
              3, 16, "index 1 of 'x' must be i64, but it is f32");
  /* i64 buffers are still buffers: not values, never stored to */
  parse_fails("kernel k[R](pos: i64[R], y: out f32[R])\nroot r in R {\n  store y[r] = f32(pos)\n}\n",
              3, 20, "buffer 'pos' used as a value");
  parse_fails("kernel k[R](pos: i64[R], y: out f32[R])\nroot r in R {\n  store pos[r] = 1.0\n"
              "  store y[r] = 1.0\n}\n",
              3, 3, "'pos' is an input: only `out` buffers can be stored to");
  /* the element type must still be known */
  parse_fails("kernel k[R](pos: i32[R], y: out f32[R])\nroot r in R {\n  store y[r] = 1.0\n}\n",
              1, 18, "unknown type 'i32'");
}

static void test_builder(void **state) {
  (void)state;
  xir_builder *b;
  assert_int_equal(xir_builder_new("b", &b), XIR_OK);
  int R = xir_builder_dim(b, "R"), P = xir_builder_dim(b, "P");
  int dp[1] = {R}, dt[1] = {P};
  int pos = xir_builder_buffer(b, "pos", XIR_I64, 1, dp, 0);
  int tab = xir_builder_buffer(b, "tab", XIR_F32, 1, dt, 0);
  int y = xir_builder_buffer(b, "y", XIR_F32, 1, dp, 1);
  assert_true(pos >= 0 && tab >= 0 && y >= 0);
  assert_int_equal(xir_builder_root(b, "r", R), 0);
  xir_index ir = xir_at(xir_builder_root_value(b, 0));
  xir_value p = xir_builder_load(b, pos, 1, &ir);
  xir_index ip = xir_at(p);
  xir_value v = xir_builder_load(b, tab, 1, &ip);
  xir_builder_store(b, y, 1, &ir, v);
  xir_program *prog;
  xir_diag d;
  if (xir_builder_finish(b, &prog, &d)) die(&d);
  char *t = NULL;
  assert_int_equal(xir_program_print(prog, &t, &d), XIR_OK);
  assert_non_null(strstr(t, "kernel b[R, P](pos: i64[R], tab: f32[P], y: out f32[R])"));
  xir_free(t);
  xir_program_free(prog);
  /* an i64 output: rejected by the verifier at its declaration */
  assert_int_equal(xir_builder_new("c", &b), XIR_OK);
  R = xir_builder_dim(b, "R");
  int dr[1] = {R};
  xir_builder_set_loc(b, "c.xir", 7, 9);
  xir_builder_buffer(b, "y", XIR_I64, 1, dr, 1);
  xir_builder_set_loc(b, "c.xir", 8, 1);
  xir_builder_root(b, "r", R);
  assert_int_equal(xir_builder_finish(b, &prog, &d), XIR_ERR_VERIFY);
  assert_int_equal(d.line, 7);
  assert_int_equal(d.col, 9);
  assert_non_null(strstr(d.msg, "output buffer 'y' must be f32"));
  /* bool buffers do not exist */
  assert_int_equal(xir_builder_new("e", &b), XIR_OK);
  R = xir_builder_dim(b, "R");
  assert_int_equal(xir_builder_buffer(b, "x", XIR_BOOL, 1, dr, 0), -1);
  assert_int_equal(xir_builder_finish(b, &prog, &d), XIR_ERR_VERIFY);
  assert_non_null(strstr(d.msg, "buffer 'x' must have element type f32, bf16, f16 or i64"));
}

static void test_print_roundtrip(void **state) {
  (void)state;
  xir_program *p = parse_ok(kGather);
  char *t1 = NULL, *t2 = NULL;
  xir_diag d;
  assert_int_equal(xir_program_print(p, &t1, &d), XIR_OK);
  const char *head =
      "kernel g[R, C, P](pos: i64[R], tab: f32[P, C], idx: i64[R, C], y: out f32[R, C])\n"
      "root r in R {\n  p = load pos[r]\n  _1 = load idx[r, :]\n  _2 = add(_1, p)\n"
      "  q = rem(_2, P)\n";
  if (strncmp(t1, head, strlen(head)) != 0) fail_msg("printed:\n%s", t1);
  xir_program *q = parse_ok(t1);
  assert_int_equal(xir_program_print(q, &t2, &d), XIR_OK);
  assert_string_equal(t1, t2);
  xir_free(t1);
  xir_free(t2);
  xir_program_free(p);
  xir_program_free(q);
}

/* The interpreter on hand-computed values: R = 3, C = 4, P = 5. */
static void test_interpreter(void **state) {
  (void)state;
  xir_program *p = parse_ok(kGather);
  xir_shape sh;
  xir_diag d;
  if (xir_shape_parse(p, "R=3,C=4,P=5", &sh, &d)) die(&d);
  int64_t pos[3] = {4, 0, 2};
  int64_t idx[12] = {0, 1, -1, 7, 3, 3, 3, 3, -6, 0, 1, 2};
  float tab[20];
  for (int i = 0; i < 20; i++) tab[i] = (float)(10 * (i / 4) + i % 4); /* tab[p, c] = 10p + c */
  double y[12];
  xir_arg args[4] = {{.in = pos}, {.in = tab}, {.in = idx}, {.out64 = y}};
  if (xir_interpret(p, &sh, args, &d)) die(&d);
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++) {
      int64_t q = ((idx[r * 4 + c] + pos[r]) % 5 + 5) % 5; /* floor modulo */
      double want = (10.0 * pos[r] + c) + (10.0 * q + c) * (double)pos[r];
      if (y[r * 4 + c] != want) fail_msg("y[%d,%d] = %g, want %g", r, c, y[r * 4 + c], want);
    }
  /* row-major strides given explicitly: pos read every other element */
  int64_t pos2[6] = {4, -99, 0, -99, 2, -99}, st[1] = {2};
  double y2[12];
  xir_arg a2[4] = {{.in = pos2, .strides = st}, {.in = tab}, {.in = idx}, {.out64 = y2}};
  if (xir_interpret(p, &sh, a2, &d)) die(&d);
  assert_memory_equal(y, y2, sizeof y);
  /* a position outside [0, P): an error naming the load */
  pos[1] = 5;
  assert_int_equal(xir_interpret(p, &sh, args, &d), XIR_ERR_RUNTIME);
  assert_int_equal(d.line, 5);
  assert_non_null(strstr(d.msg, "index 1 of 'tab' is 5, outside [0, 5) (dim 'P')"));
  pos[1] = -1;
  assert_int_equal(xir_interpret(p, &sh, args, &d), XIR_ERR_RUNTIME);
  assert_non_null(strstr(d.msg, "is -1, outside [0, 5)"));
  /* beyond the exact range of a double: refused rather than rounded */
  pos[1] = ((int64_t)1 << 53) + 1;
  assert_int_equal(xir_interpret(p, &sh, args, &d), XIR_ERR_RUNTIME);
  assert_non_null(strstr(d.msg, "i64 input 'pos'"));
  assert_non_null(strstr(d.msg, "2^53"));
  pos[1] = INT64_MIN;
  assert_int_equal(xir_interpret(p, &sh, args, &d), XIR_ERR_RUNTIME);
  /* 2^53 itself is exact, and (2^53 + c) % P works as i64: idx holds the large values here */
  pos[1] = 0;
  for (int i = 0; i < 12; i++) idx[i] = ((int64_t)1 << 53) - i;
  if (xir_interpret(p, &sh, args, &d)) die(&d);
  /* a missing input */
  args[2].in = NULL;
  assert_int_equal(xir_interpret(p, &sh, args, &d), XIR_ERR_INVALID_ARG);
  assert_non_null(strstr(d.msg, "buffer 'idx' has no input data"));
  xir_program_free(p);
}

/* Native code of every candidate equals the oracle (random positions from the seeded case). */
static void test_native_every_candidate(void **state) {
  (void)state;
  xir_compiler *cc;
  xir_diag d;
  xir_compiler_options o = {.force_width = 8};
  if (xir_compiler_create(&o, &cc, &d)) {
    print_message("no native compiler: %s\n", d.msg);
    skip();
  }
  xir_program *p = parse_ok(kGather);
  const char *shapes[] = {"R=7,C=13,P=3", "R=33,C=16,P=40", "R=1,C=1,P=1"};
  for (int s = 0; s < 3; s++) {
    xir_shape sh;
    if (xir_shape_parse(p, shapes[s], &sh, &d)) die(&d);
    xir_case c;
    if (xir__case_init(&c, p, &sh, 17, &d) || xir__case_oracle(&c, &d)) die(&d);
    xir_candidate *cands;
    size_t n;
    if (xir_candidates(p, &sh, 8, &cands, &n, &d)) die(&d);
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++) {
      const xir_kernel *k;
      if (xir_compile(cc, p, &sh, &cands[i], &k, &d)) die(&d);
      xir__case_reset_outputs(&c);
      uint64_t slots[XIR_MAX_ARG_SLOTS];
      if (xir_kernel_pack_args(k, c.args, slots, &d)) die(&d);
      assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
      assert_true(xir__case_sentinels_ok(&c));
      xir_compare r = xir__case_compare(&c, 3, xir__kernel_tolerance(NULL));
      if (!r.pass) fail_msg("%s candidate %zu: %zu bad", shapes[s], i, r.bad);
    }
    xir_free(cands);
    xir__case_free(&c);
  }
  xir_program_free(p);
  xir_compiler_destroy(cc);
}

/* The execution work counts 8 bytes per i64 element: copying an i64 row into an f32 row moves
 * 8 + 4 bytes per element where an f32 copy moves 4 + 4. */
static void test_work_counts_8_bytes(void **state) {
  (void)state;
  xir_program *a = parse_ok("kernel k[R, C](x: f32[R, C], y: out f32[R, C])\nroot r in R {\n"
                            "  store y[r, :] = load x[r, :]\n}\n");
  xir_program *b = parse_ok("kernel k[R, C](x: i64[R, C], y: out f32[R, C])\nroot r in R {\n"
                            "  store y[r, :] = f32(load x[r, :])\n}\n");
  xir_diag d;
  xir_shape sa, sb;
  if (xir_shape_parse(a, "R=8,C=64", &sa, &d) || xir_shape_parse(b, "R=8,C=64", &sb, &d)) die(&d);
  uint8_t perm[1] = {0};
  xir_candidate ca, cb;
  if (xir_candidate_make(a, &sa, 16, 16, 16, perm, &ca, &d) ||
      xir_candidate_make(b, &sb, 16, 16, 16, perm, &cb, &d))
    die(&d);
  xir_execution_work wa, wb;
  if (xir_execution_work_make(a, &sa, &ca, 1, 1, &wa, &d) ||
      xir_execution_work_make(b, &sb, &cb, 1, 1, &wb, &d))
    die(&d);
  assert_true(wa.memory_per_packet > 0);
  if (fabs(wb.memory_per_packet - 1.5 * wa.memory_per_packet) > 1e-9)
    fail_msg("i64 copy moves %g bytes per packet, f32 copy %g (want 1.5x)", wb.memory_per_packet,
             wa.memory_per_packet);
  xir_program_free(a);
  xir_program_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_verify_rules), cmocka_unit_test(test_builder),
      cmocka_unit_test(test_print_roundtrip),    cmocka_unit_test(test_interpreter),
      cmocka_unit_test(test_native_every_candidate), cmocka_unit_test(test_work_counts_8_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

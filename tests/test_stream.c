/* test_stream.c — the memory side of the row kernels (docs/lowering.md, "Next-row prefetch" and
 * "Streaming stores"):
 *  - xir__next_row_loads marks the loads whose row the next root program reads, in programs
 *    with two or more consumer loops over the inner axis, and nothing else;
 *  - the IR of an ℓ ≥ W candidate of such a program prefetches, that of ℓ < W does not;
 *  - a prefetch past the last row never faults (the input ends at an inaccessible page), and
 *    none is issued past a buffer's end: every prefetch address is chosen by a test against it
 *    (memory there may be another buffer that another core writes);
 *  - streaming (non-temporal) stores: every candidate of the norms and softmaxes at W = 16 and
 *    8 with streaming forced on matches the fp64 oracle on the whole output with sentinels, and
 *    gives the same bits as with regular stores — on aligned outputs, on outputs whose rows or
 *    base are not aligned (the regular stores then serve), f32 and bf16 outputs;
 *  - the launch asks for streaming by the footprint (more than half the last-level cache) or as
 *    xir__stream_stores_set says, in the argument block's flags. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "check/check.h"
#include "ir/program.h"
#include "lower/pack.h"
#include "lower/stream.h"
#include "xir_compile.h"
#include "xir_runtime.h"

static void die(const xir_diag *d) {
  char b[2048];
  fail_msg("%s", xir_diag_format(d, b, sizeof b));
}

/* Packs a launch of k on args and returns its streaming bits (XIR__ARGS_STREAM and
 * XIR__ARGS_STREAM_ROWBUF of the block's last slot, lower.h). */
static int stream_bits(const xir_kernel *k, const xir_arg *args, uint64_t *slots) {
  xir_diag d;
  if (xir_kernel_pack_args(k, args, slots, &d)) die(&d);
  return (int)(slots[xir_kernel_args_size(k) / 8 - 1] & (XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF));
}

/* The same, 1 when the launch streams (XIR__ARGS_STREAM). */
static int stream_flag(const xir_kernel *k, const xir_arg *args, uint64_t *slots) {
  return (stream_bits(k, args, slots) & XIR__ARGS_STREAM) != 0;
}

static xir_program *builtin(const char *name) {
  xir_program *p;
  xir_diag d;
  if (xir_kernel_load(name, &p, &d)) die(&d);
  return p;
}

static xir_program *parse(const char *text) {
  xir_program *p;
  xir_diag d;
  if (xir_program_parse(text, strlen(text), "stream.xir", &p, &d)) die(&d);
  return p;
}

static int param_named(const xir_program *p, const char *name) {
  for (int i = 0; i < p->nparams; i++)
    if (!strcmp(p->params[i].name, name)) return i;
  fail_msg("no parameter %s", name);
  return -1;
}

/* p's legal candidates at shape spec for cc's width (xir_free them); *shape gets the shape. */
static size_t candidates_at(const xir_program *p, const char *spec, xir_compiler *cc,
                            xir_shape *shape, xir_candidate **cands) {
  xir_diag d;
  size_t n;
  if (xir_shape_parse(p, spec, shape, &d) ||
      xir_candidates(p, shape, xir_compiler_width(cc), cands, &n, &d))
    die(&d);
  return n;
}

/* The optimized IR text of candidate c (owned by cc's kernel cache). */
static const char *ir_of(xir_compiler *cc, const xir_program *p, const xir_shape *shape,
                         const xir_candidate *c) {
  xir_diag d;
  const xir_kernel *k;
  if (xir_compile(cc, p, shape, c, &k, &d)) die(&d);
  xir_kernel_info info;
  xir_kernel_get_info(k, &info);
  return info.ir_text;
}

/* Packs args for k and runs all its blocks on this thread. */
static void run_blocks(const xir_kernel *k, const xir_arg *args) {
  xir_diag d;
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  if (xir_kernel_pack_args(k, args, slots, &d)) die(&d);
  assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
}

/* A compiler for the host tuned as an Intel CPU of its width (skylake-avx512 at W = 16,
 * haswell at W = 8), whose next-row prefetch goes into the norms' store loop too: on AMD Zen
 * (xir__cpu_math_prefetch_only) only softmax's exp loop prefetches, and the prefetch tests below
 * would check nothing for rmsnorm and layernorm there. */
static xir_compiler *prefetch_compiler(void) {
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  unsigned w = xir_compiler_width(cc);
  if (w < 8) return cc;
  xir_compiler_destroy(cc);
  xir_compiler_options o = {.cpu = w >= 16 ? "skylake-avx512" : "haswell"};
  if (xir_compiler_create(&o, &cc, &d)) die(&d);
  return cc;
}

/* The names of the buffers whose loads xir__next_row_loads marks, comma-separated, and the op
 * of the node it returns (or -1). */
static int marked_for(const xir_program *p, int math_only, char *out, size_t cap) {
  uint8_t pf[512];
  assert_true(p->nnodes < 512);
  int at = xir__next_row_loads(p, 1, 0, math_only, pf);
  out[0] = 0;
  for (int i = 0; i < p->nnodes; i++) {
    if (!pf[i]) continue;
    assert_int_equal(p->nodes[i].op, XIR_OP_LOAD);
    size_t o = strlen(out);
    snprintf(out + o, cap - o, "%s%s", o ? "," : "", p->params[p->nodes[i].ref].name);
  }
  return at < 0 ? at : p->nodes[at].op;
}

static int marked(const xir_program *p, char *out, size_t cap) { return marked_for(p, 0, out, cap); }

static const char *kOnePass =
    "kernel scale[R, C](x: f32[R, C], y: out f32[R, C])\n"
    "root r in R {\n  store y[r, :] = mul(load x[r, :], 2.0)\n}\n";
static const char *kComputedRow =
    "kernel half_rows[R, C](x: f32[R, C], y: out f32[R, C])\n"
    "root r in R {\n  v = load x[div(r, 2), :]\n  s = reduce.sum(v, C)\n"
    "  store y[r, :] = mul(v, s)\n}\n";
static const char *kTwice =
    "kernel twice[R, C](x: f32[R, C], y: out f32[R, C])\n"
    "root r in R {\n  a = load x[r, :]\n  s = reduce.sum(a, C)\n  b = load x[r, :]\n"
    "  store y[r, :] = mul(b, s)\n}\n";

static void test_next_row_loads(void **state) {
  (void)state;
  char names[256];
  const struct { const char *kernel, *want; int op; } cases[] = {
      {"layernorm", "x", XIR_OP_STORE},
      {"rmsnorm", "x", XIR_OP_STORE},
      /* softmax: the loop of the sum of exp (the vector math), not the store's */
      {"softmax_mask", "x,mask", XIR_OP_REDUCE_SUM},
      {"softmax_causal", "x", XIR_OP_REDUCE_SUM},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    xir_program *p = builtin(cases[i].kernel);
    int op = marked(p, names, sizeof names);
    if (op != cases[i].op || strcmp(names, cases[i].want))
      fail_msg("%s: marked '%s' (op %d), expected '%s'", cases[i].kernel, names, op, cases[i].want);
    /* math_only (AMD Zen): the norms, whose later loops evaluate no vector math, prefetch
     * nothing; softmax keeps its exp loop */
    op = marked_for(p, 1, names, sizeof names);
    int want = cases[i].op == XIR_OP_STORE ? -1 : cases[i].op;
    if (op != want) fail_msg("%s, math only: op %d, expected %d", cases[i].kernel, op, want);
    xir_program_free(p);
  }
  /* one loop over the row: nothing to overlap */
  xir_program *p = parse(kOnePass);
  assert_int_equal(marked(p, names, sizeof names), -1);
  assert_string_equal(names, "");
  xir_program_free(p);
  /* a row chosen by a computed index: the next root program's row is not one stride on */
  p = parse(kComputedRow);
  assert_int_equal(marked(p, names, sizeof names), -1);
  xir_program_free(p);
  /* the same row loaded twice: one prefetch */
  p = parse(kTwice);
  assert_int_equal(marked(p, names, sizeof names), XIR_OP_STORE);
  assert_string_equal(names, "x");
  xir_program_free(p);
}

/* The next-row prefetches of a chunk (xir__prefetch_offsets): one per 64 bytes of packets, at the
 * group's last existing element — on a row that starts 16 bytes into a line each 64-byte load
 * touches two lines, and the prefetch takes the later one; never past the chunk's last element
 * (the tail's packets beyond the row prefetch nothing). */
static void test_prefetch_offsets(void **state) {
  (void)state;
  int64_t at[8];
  /* f32, W = 16, ℓ = 128: the last element of every packet */
  assert_int_equal(xir__prefetch_offsets(16, 8, 128, 4, at), 8);
  for (int q = 0; q < 8; q++) assert_int_equal(at[q], 16 * q + 15);
  /* the tail of ℓ = 32 at C = 52 (20 elements): the second packet's group ends at element 19 */
  assert_int_equal(xir__prefetch_offsets(16, 2, 20, 4, at), 2);
  assert_int_equal(at[0], 15);
  assert_int_equal(at[1], 19);
  /* a tail of 8 at ℓ = 128: one prefetch, at its last element; the other packets lie past it */
  assert_int_equal(xir__prefetch_offsets(16, 8, 8, 4, at), 1);
  assert_int_equal(at[0], 7);
  /* 17 elements: the second packet holds one */
  assert_int_equal(xir__prefetch_offsets(16, 4, 17, 4, at), 2);
  assert_int_equal(at[1], 16);
  /* bf16, W = 16 (32-byte packets): one prefetch per two packets, at the pair's last element */
  assert_int_equal(xir__prefetch_offsets(16, 8, 128, 2, at), 4);
  for (int q = 0; q < 4; q++) assert_int_equal(at[q], 32 * q + 31);
  /* bf16 at ℓ = 16: a 32-byte chunk, prefetched at its own last element */
  assert_int_equal(xir__prefetch_offsets(16, 1, 16, 2, at), 1);
  assert_int_equal(at[0], 15);
  /* f32 at W = 8 (32-byte packets) */
  assert_int_equal(xir__prefetch_offsets(8, 4, 32, 4, at), 2);
  assert_int_equal(at[0], 15);
  assert_int_equal(at[1], 31);
  /* i64 at W = 16 (128-byte packets): two groups a packet */
  assert_int_equal(xir__prefetch_offsets(16, 2, 32, 8, at), 4);
  for (int g = 0; g < 4; g++) assert_int_equal(at[g], 8 * g + 7);
  assert_int_equal(xir__prefetch_offsets(16, 2, 20, 8, at), 3);
  assert_int_equal(at[2], 19);
  assert_int_equal(xir__prefetch_offsets(16, 8, 0, 4, at), 0);
}

static void test_prefetch_in_ir(void **state) {
  (void)state;
  xir_program *p = builtin("layernorm");
  xir_compiler *cc;
  cc = prefetch_compiler();
  xir_shape shape;
  xir_candidate *cands;
  size_t n = candidates_at(p, "R=8,C=256", cc, &shape, &cands);
  int with = 0, without = 0;
  for (size_t i = 0; i < n; i++) {
    if (cands[i].B != (cands[i].local > cands[i].W ? cands[i].local : cands[i].W)) continue;
    const char *ir = ir_of(cc, p, &shape, &cands[i]);
    int pf = strstr(ir, "@llvm.prefetch") != NULL;
    if (cands[i].local >= cands[i].W) {
      assert_true(pf);
      assert_non_null(strstr(ir, "!nontemporal"));
      assert_non_null(strstr(ir, "@llvm.x86.sse.sfence"));
      with++;
    } else {
      assert_false(pf);
      without++;
    }
  }
  assert_true(with > 0 && without > 0);
  xir_free(cands);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* The target decides how a norm's store loop prefetches the next row (lower.c, via
 * xir__cpu_math_prefetch_only): for znver4 the ℓ ≥ W code of rmsnorm and layernorm prefetches
 * into L2 (locality 2) only in a copy of its streamed store loop that launches with
 * XIR__ARGS_FAR enter (the IR tests the flag: a value named "farflag", whose test LLVM drops
 * where nothing depends on it), and
 * softmax_mask's exp loop into L1 (locality 3) always; for skylake-avx512 all three prefetch
 * into L1 always. Only the IR is inspected (nothing runs), so the test needs a W = 16 host, not
 * an AMD one. */
/* The value that pointer %name in ir is a getelementptr chain from: the name of the first
 * operand that no getelementptr defines, copied to out (cap bytes); its defining line's text
 * after "= " in *def (NULL when an argument). */
static void gep_root(const char *ir, const char *name, char *out, size_t cap, const char **def) {
  char cur[64];
  snprintf(cur, sizeof cur, "%s", name);
  *def = NULL;
  for (int hop = 0; hop < 16; hop++) {
    char key[80];
    snprintf(key, sizeof key, "\n  %%%s = ", cur);
    const char *at = strstr(ir, key);
    if (!at) break;
    at += strlen(key);
    *def = at;
    if (strncmp(at, "getelementptr ", 14)) break;
    const char *ptr = strstr(at, "ptr %");
    const char *eol = strchr(at, '\n');
    if (!ptr || (eol && ptr > eol)) break;
    ptr += 5;
    size_t n = strcspn(ptr, ", \n");
    if (n >= sizeof cur) break;
    memcpy(cur, ptr, n);
    cur[n] = 0;
    *def = NULL;
  }
  snprintf(out, cap, "%s", cur);
}

/* The far copy's prefetch addresses are computed from opaque copies of the buffer's base (an
 * empty asm "=r,0" in the copy, lower.c opaque), so that LICM cannot hoist them into the entry
 * of every call: each L2 prefetch's pointer is a getelementptr chain from such a copy. */
static void assert_far_prefetch_bases_opaque(const char *ir, const char *what) {
  int seen = 0;
  for (const char *at = ir; (at = strstr(at, "@llvm.prefetch.p0(ptr %")) != NULL; at++) {
    const char *name = at + strlen("@llvm.prefetch.p0(ptr %");
    const char *eol = strchr(name, '\n');
    const char *loc = strstr(name, "i32 0, i32 2, i32 1)");
    if (!loc || (eol && loc > eol)) continue; /* not an L2 prefetch */
    char nm[64], root[64];
    size_t n = strcspn(name, ",");
    if (n >= sizeof nm) continue;
    memcpy(nm, name, n);
    nm[n] = 0;
    const char *def;
    gep_root(ir, nm, root, sizeof root, &def);
    static const char opq[] = "call ptr asm \"\", \"=r,0\"";
    if (!def || strncmp(def, opq, sizeof opq - 1))
      fail_msg("%s: L2 prefetch of %%%s from %%%s, not from an opaque base", what, nm, root);
    seen++;
  }
  if (!seen) fail_msg("%s: no L2 prefetch", what);
}

static void test_prefetch_math_only_on_zen(void **state) {
  (void)state;
  xir_diag d;
  xir_compiler *probe;
  if (xir_compiler_create(NULL, &probe, &d)) die(&d);
  unsigned w = xir_compiler_width(probe);
  xir_compiler_destroy(probe);
  if (w != 16) skip();
  assert_true(xir__cpu_math_prefetch_only("znver4") && xir__cpu_math_prefetch_only("znver3"));
  assert_false(xir__cpu_math_prefetch_only("skylake-avx512") ||
               xir__cpu_math_prefetch_only("sapphirerapids") || xir__cpu_math_prefetch_only(NULL));
  const char *cpus[] = {"znver4", "skylake-avx512"};
  const char *kernels[] = {"rmsnorm", "layernorm", "softmax_mask"};
  for (int c = 0; c < 2; c++) {
    xir_compiler_options o = {.cpu = cpus[c]};
    xir_compiler *cc;
    if (xir_compiler_create(&o, &cc, &d)) die(&d);
    for (int k = 0; k < 3; k++) {
      xir_program *p = builtin(kernels[k]);
      xir_shape shape;
      xir_candidate *cands;
      size_t n = candidates_at(p, "R=8,C=256", cc, &shape, &cands), seen = 0;
      for (size_t i = 0; i < n; i++) {
        if (cands[i].local < cands[i].W || cands[i].B != cands[i].local) continue;
        const char *ir = ir_of(cc, p, &shape, &cands[i]);
        int far = c == 0 && k < 2; /* a norm on znver4 */
        int l2 = strstr(ir, "i32 0, i32 2, i32 1)") != NULL, l1 = strstr(ir, "i32 0, i32 3, i32 1)") != NULL;
        int blk = strstr(ir, "farflag") != NULL;
        if (l2 != far || l1 == far || blk != far)
          fail_msg("%s %s l=%u: L2 prefetch %d, L1 prefetch %d, far block %d (a far-only norm: %d)",
                   cpus[c], kernels[k], cands[i].local, l2, l1, blk, far);
        if (far) assert_far_prefetch_bases_opaque(ir, kernels[k]);
        seen++;
      }
      assert_true(seen > 0);
      xir_free(cands);
      xir_program_free(p);
    }
    xir_compiler_destroy(cc);
  }
}

/* The next-row prefetches of an ℓ > W chunk are spread over its packets (lower.c
 * next_row_prefetch): softmax_mask at ℓ = 64 (k = 4 packets) has one empty asm per packet in the
 * prefetching block, tying a group of prefetches to the packet's value, and exp arithmetic
 * (llvm.fma) between its first and last prefetch; at ℓ = 16 (one packet) there is no asm. The
 * values are the oracle's at every ℓ ≥ W (test_placed_inputs and the native tests run them). */
static void test_prefetch_spread_over_packets(void **state) {
  (void)state;
  xir_program *p = builtin("softmax_mask");
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  xir_shape shape;
  xir_candidate *cands;
  if (xir_compiler_width(cc) != 16) { /* the spread needs 64-byte packets (AVX-512) */
    xir_compiler_destroy(cc);
    xir_program_free(p);
    skip();
  }
  size_t n = candidates_at(p, "R=64,C=1024", cc, &shape, &cands), seen = 0;
  for (size_t i = 0; i < n; i++) {
    if (cands[i].W != 16 || cands[i].B != cands[i].local || cands[i].local < 16) continue;
    unsigned k = cands[i].local / cands[i].W;
    char name[128];
    xir_candidate_name(p, &cands[i], name, sizeof name);
    const char *ir = ir_of(cc, p, &shape, &cands[i]);
    const char *first = strstr(ir, "@llvm.prefetch");
    assert_non_null(first);
    /* the block holding the first prefetch: from the label before it to the next blank line */
    const char *start = first;
    while (start > ir && !(start[-1] == '\n' && start[0] == '\n')) start--;
    const char *end = strstr(first, "\n\n");
    size_t len = end ? (size_t)(end - start) : strlen(start);
    char *blk = strndup(start, len);
    assert_non_null(blk);
    unsigned asms = 0;
    for (const char *a = blk; (a = strstr(a, "asm sideeffect \"\"")); a++) asms++;
    const char *last = first;
    for (const char *a = blk; (a = strstr(a, "@llvm.prefetch")); a++) last = a;
    int fma_between = 0;
    for (const char *a = strstr(blk, "@llvm.prefetch"); a && a < last; a++)
      if (!strncmp(a, "@llvm.fma", 9)) fma_between = 1;
    if (k > 1 && (asms != k || !fma_between))
      fail_msg("%s: %u asm ties for %u packets, exp between the prefetches: %d", name, asms, k,
               fma_between);
    if (k == 1 && asms != 0) fail_msg("%s: an asm tie for one packet", name);
    free(blk);
    seen++;
  }
  assert_true(seen >= 3);
  xir_free(cands);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* The early zero fill of a causal row (lower.c aligned_zero_fill) writes whole aligned 64-byte
 * lines plus a masked line at each end, wherever the row starts: rows of 203 elements (each row
 * at another offset inside a line) and of 43 (short masked ranges), each also as a strided output
 * view (rows 205 / 45 apart, the gaps hold sentinels), and the output a line + 1 byte past (its
 * floats not 4-byte aligned: the same bytes, no fault). Every row candidate against the oracle,
 * sentinels intact; on AVX-512 the IR of the ℓ ≥ W candidates has the fill's blocks (fill.head,
 * the masked head/tail stores in fill.part, full-line zero stores), after the row's 1 / s. */
static void test_early_fill_aligned_lines(void **state) {
  (void)state;
  xir_program *p = builtin("softmax_causal");
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  xir_shape shape;
  xir_candidate *cands;
  int w16 = xir_compiler_width(cc) == 16; /* the aligned fill needs 64-byte packets (AVX-512) */
  xir_tolerance tol = xir__kernel_tolerance(p->name);
  size_t ran = 0, heads = 0;
  /* C = 203: masked ranges of 75+ elements (head, full lines, tail); C = 43 with rows 45 apart:
   * short ranges whose end lies in the head line (a head mask one lane too long overwrites the
   * gap's sentinels) */
  static const struct {
    const char *spec;
    int64_t stride;
  } shapes[] = {{"R=37,C=203", 205}, {"R=37,C=43", 45}};
  for (int sh = 0; sh < 2; sh++) {
    size_t n = candidates_at(p, shapes[sh].spec, cc, &shape, &cands);
    for (int view = 0; view < 2; view++) {
      xir_case c;
      if (xir__case_init(&c, p, &shape, 9, &d)) die(&d);
      if (view && xir__case_set_row_stride(&c, 1, shapes[sh].stride, &d)) die(&d);
      if (xir__case_oracle(&c, &d)) die(&d);
      for (size_t i = 0; i < n; i++) {
        uint32_t want = cands[i].local > cands[i].W ? cands[i].local : cands[i].W;
        if (cands[i].B != want) continue;
        char name[128];
        xir_candidate_name(p, &cands[i], name, sizeof name);
        const xir_kernel *k;
        if (xir_compile(cc, p, &shape, &cands[i], &k, &d)) die(&d);
        xir__case_reset_outputs(&c);
        run_blocks(k, c.args);
        if (!xir__case_compare(&c, 1, tol).pass)
          fail_msg("softmax_causal %s %s%s: differs from the oracle", shapes[sh].spec, name,
                   view ? " (output rows strided)" : "");
        if (!xir__case_sentinels_ok(&c))
          fail_msg("%s %s: a sentinel was overwritten", shapes[sh].spec, name);
        ran++;
        if (!view) {
          /* the output one byte past a line (elements not 4-byte aligned: the fill's lines are
           * then unaligned too, and must not fault): the same bytes as the aligned run */
          size_t bytes = (size_t)shape.dims[0] * (size_t)shape.dims[1] * sizeof(float);
          unsigned char *raw = aligned_alloc(64, (bytes + 64) / 64 * 64 + 64); /* C11: a multiple */
          assert_non_null(raw);
          xir_arg a2[XIR_MAX_PARAMS];
          memcpy(a2, c.args, sizeof a2);
          a2[1].out = raw + 1;
          run_blocks(k, a2);
          if (memcmp(raw + 1, c.args[1].out, bytes))
            fail_msg("%s %s: the output at a line + 1 byte differs", shapes[sh].spec, name);
          free(raw);
        }
        if (view || sh || !w16 || cands[i].local < cands[i].W) continue;
        const char *ir = ir_of(cc, p, &shape, &cands[i]);
        const char *h = strstr(ir, "\nfill.head");
        if (!h) fail_msg("%s: no aligned fill (block fill.head)", name);
        /* the fill comes after the chain it does not wait for (lower.c emit_early_fill): the
         * row's 1 / s is computed before it, so the chain's loads and latency are not behind
         * the whole fill (placed at the unit's start, fill.head came before any fdiv) */
        const char *dv = strstr(ir, "fdiv float 1.000000e+00");
        if (!dv || dv > h) fail_msg("%s: the fill is emitted before the row's 1 / s", name);
        /* the head and tail lines: masked stores in blocks of their own (fill.part) */
        const char *part = strstr(ir, "\nfill.part");
        if (!part) fail_msg("%s: no masked head or tail line (block fill.part)", name);
        const char *next = strstr(part + 1, "\n\n");
        const char *ms = strstr(part, "@llvm.masked.store");
        assert_true(ms && (!next || ms < next));
        assert_non_null(strstr(ir, "store <16 x float> zeroinitializer, ptr %"));
        heads++;
      }
      xir__case_free(&c);
    }
    xir_free(cands);
  }
  assert_true(ran >= 16);
  if (w16) assert_true(heads >= 3);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* The masked tail of a causal row is filled with zeros by a loop of its own (masked-work
 * skipping): that loop issues no next-row prefetch (the next row's elements there are masked
 * too), while the computing loops still do. Checked per basic block of the optimized IR: no block
 * of the fill loop (its body is named "fill", lower.c loop_begin) prefetches. */
static void test_fill_loop_does_not_prefetch(void **state) {
  (void)state;
  xir_program *p = builtin("softmax_causal");
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  xir_shape shape;
  xir_candidate *cands;
  size_t n = candidates_at(p, "R=8,C=256", cc, &shape, &cands), checked = 0;
  for (size_t i = 0; i < n; i++) {
    if (cands[i].local < cands[i].W || cands[i].B != cands[i].local) continue;
    const char *ir = ir_of(cc, p, &shape, &cands[i]);
    char name[128];
    xir_candidate_name(p, &cands[i], name, sizeof name);
    assert_non_null(strstr(ir, "@llvm.prefetch"));
    int fills = 0;
    /* blocks: from a label line ("name:" at the start of a line) to the next */
    for (const char *b = ir; b && *b;) {
      const char *e = b;
      for (;;) {
        e = strchr(e, '\n');
        if (!e) break;
        e++;
        const char *c = e;
        while (*c && *c != '\n' && *c != ' ' && *c != ':') c++;
        if (c > e && *c == ':') break; /* the next label */
      }
      size_t len = e ? (size_t)(e - b) : strlen(b);
      char *blk = strndup(b, len);
      assert_non_null(blk);
      if (!strncmp(blk, "fill", 4)) {
        fills++;
        if (strstr(blk, "@llvm.prefetch")) fail_msg("%s: the zero-fill loop prefetches", name);
      }
      free(blk);
      b = e;
    }
    assert_true(fills > 0);
    checked++;
  }
  assert_true(checked > 0);
  xir_free(cands);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* ℓ = 1 (swiglu): a row-major candidate's packet is one contiguous vector, and its store can
 * stream (a non-temporal store behind the per-packet offset test, and the sfence); a
 * column-major one scatters its packet and keeps regular stores. */
static void test_streaming_stores_in_ir_at_l1(void **state) {
  (void)state;
  xir_program *p = builtin("swiglu");
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  xir_shape shape;
  xir_candidate *cands;
  size_t n = candidates_at(p, "R=8,C=256", cc, &shape, &cands);
  int rows = 0, cols = 0;
  for (size_t i = 0; i < n; i++) {
    char name[128];
    xir_candidate_name(p, &cands[i], name, sizeof name);
    assert_int_equal(cands[i].local, 1);
    const char *ir = ir_of(cc, p, &shape, &cands[i]);
    int nt = strstr(ir, "!nontemporal") != NULL;
    int fence = strstr(ir, "@llvm.x86.sse.sfence") != NULL;
    int pf = strstr(ir, "@llvm.prefetch") != NULL;
    if (strstr(name, "perm=r.c")) {
      /* f32 packets are whole 64-byte lines at W = 16 only (at W = 8 a packet is half a line,
       * which ℓ = 1 never streams: below) */
      int lines = xir_compiler_width(cc) * 4 >= 64;
      if (lines && (!nt || !fence))
        fail_msg("%s: no streaming store (nontemporal %d, sfence %d)", name, nt, fence);
      if (!lines && (nt || fence)) fail_msg("%s: a half-line packet streams", name);
      /* each contiguous packet load prefetches 4 KiB ahead (lower.c ahead_prefetch) */
      if (!pf) fail_msg("%s: no prefetch ahead of the contiguous loads", name);
      rows++;
    } else {
      if (nt || fence) fail_msg("%s: a scattered packet streams", name);
      if (pf) fail_msg("%s: a gathered packet prefetches", name);
      cols++;
    }
  }
  assert_true(rows > 0 && cols > 0);
  xir_free(cands);
  /* ℓ = 1 streams whole 64-byte lines only: a bf16 output (32-byte packets at W = 16) and an f32
   * one at W = 8 have no streaming store of a packet; a bf16 pair unit's 64-byte store (two
   * packets, <32 x i16>) may stream, and does for the row-major candidates with an even number
   * of packets a block */
  xir_program *b;
  if (xir_program_retype(p, "y=bf16", &b, &d)) die(&d);
  n = candidates_at(b, "R=8,C=256", cc, &shape, &cands);
  int paired = 0;
  for (size_t i = 0; i < n && xir_compiler_width(cc) == 16; i++) {
    const char *ir = ir_of(cc, b, &shape, &cands[i]);
    for (const char *at = strstr(ir, "!nontemporal"); at; at = strstr(at + 1, "!nontemporal")) {
      const char *line = at;
      while (line > ir && line[-1] != '\n') line--;
      if (!(strncmp(line, "  store <32 x i16>", 18) == 0))
        fail_msg("a bf16 store streams other than as a 64-byte pair: %.*s", (int)(at - line), line);
      paired++;
    }
  }
  if (xir_compiler_width(cc) == 16 && strstr(xir_compiler_features(cc), "+avx512bf16") &&
      strstr(xir_compiler_features(cc), "+avx512dq"))
    assert_true(paired > 0);
  xir_free(cands);
  xir_program_free(b);
  xir_compiler_destroy(cc);
  xir_compiler_options o8 = {.force_width = 8};
  if (xir_compiler_create(&o8, &cc, &d)) die(&d);
  n = candidates_at(p, "R=8,C=256", cc, &shape, &cands);
  for (size_t i = 0; i < n; i++) assert_null(strstr(ir_of(cc, p, &shape, &cands[i]), "!nontemporal"));
  xir_free(cands);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* The number of non-temporal stores in ir. */
static int count_nontemporal(const char *ir) {
  int n = 0;
  for (const char *at = strstr(ir, "!nontemporal"); at; at = strstr(at + 1, "!nontemporal")) n++;
  return n;
}

/* A row's tail chunk streams its full packets like the other chunks: rmsnorm with rows of 1008
 * floats (4032 bytes: every row starts on a 64-byte boundary) at ℓ = 8W has seven full chunks and
 * a tail of 1008 mod 8W elements, all full packets at W = 16; the rows of 896 (seven chunks, no
 * tail) have the same chunk loop. Before, the tail's packets took masked stores (their lanes'
 * c < N fold to true) and never streamed: with streaming on, rmsnorm 20000x1008 ran 1.19-1.21x
 * the stream probe against 0.99-1.01 after. The values are checked by test_streaming_stores. */
static void test_tail_packets_stream(void **state) {
  (void)state;
  xir_program *p = builtin("rmsnorm");
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  int counted = 0, nt[2] = {0, 0}, copies = 1;
  const char *specs[2] = {"R=3,C=896", "R=3,C=1008"};
  for (int s = 0; s < 2; s++) {
    xir_shape shape;
    xir_candidate *cands;
    size_t n = candidates_at(p, specs[s], cc, &shape, &cands);
    for (size_t i = 0; i < n; i++)
      if (cands[i].local == 8 * W && cands[i].B == 8 * W) {
        const char *ir = ir_of(cc, p, &shape, &cands[i]);
        nt[s] = count_nontemporal(ir);
        /* a norm on AMD Zen streams in two copies of its store loop, the far one prefetching */
        if (strstr(ir, "farflag")) copies = 2;
        counted++;
      }
    xir_free(cands);
  }
  assert_int_equal(counted, 2);
  assert_true(nt[0] > 0);
  /* (1008 mod 8W) / W tail packets: 7 at W = 16, 6 at W = 8 (plus a masked one) */
  assert_int_equal(nt[1] - nt[0], copies * (int)((1008 % (8 * W)) / W));
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* Rows that do not start on a vector boundary stream through a row buffer (lower.c realign_ok):
 * the streaming branch of rmsnorm at ℓ = 8W has a "realign" block, with its own non-temporal
 * stores, for rows of 300 floats (1200 bytes, every fourth row aligned at W = 16) and for rows
 * of 256 (alignment is a run-time matter: the base may be off), but not for rows of 100 (400
 * bytes: shorter than REALIGN_MIN_BYTES) nor for a bf16 output. The values are checked by
 * test_streaming_stores (forced streaming, outputs placed 0 and 12 bytes off a boundary). */
static void test_unaligned_rows_stream(void **state) {
  (void)state;
  xir_program *p = builtin("rmsnorm"), *b;
  xir_diag d;
  if (xir_program_retype(p, "y=bf16", &b, &d)) die(&d);
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  uint32_t W = xir_compiler_width(cc);
  struct {
    xir_program *p;
    const char *spec;
    int realign;
  } cases[] = {{p, "R=3,C=300", 1}, {p, "R=3,C=256", 1}, {p, "R=3,C=100", 0}, {b, "R=3,C=300", 0}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    xir_shape shape;
    xir_candidate *cands;
    size_t n = candidates_at(cases[c].p, cases[c].spec, cc, &shape, &cands);
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
      if (cands[i].local != 8 * W || cands[i].B != 8 * W) continue;
      const char *ir = ir_of(cc, cases[c].p, &shape, &cands[i]);
      int has = strstr(ir, "\nrealign") != NULL;
      if (has != cases[c].realign) fail_msg("%s: realign block %d, want %d", cases[c].spec, has, cases[c].realign);
      /* the row buffer only when the launch sets both streaming bits (xir__stream_launch: not
       * between the cache's size and the threshold for a kernel that reduces) */
      if (has && !strstr(ir, "%rowbufflag = icmp eq i64"))
        fail_msg("%s: the realign block does not wait for XIR__ARGS_STREAM_ROWBUF", cases[c].spec);
      seen++;
    }
    assert_int_equal(seen, 1);
    xir_free(cands);
  }
  xir_compiler_destroy(cc);
  xir_program_free(b);
  xir_program_free(p);
}

/* Runs every candidate (one block width per local width) of p at spec at widths 0 (the host's)
 * and 8 with streaming forced on and then off, on the case's output or, with offset, on a copy
 * of it `offset` floats into a 64-byte aligned allocation (sentinels around it); checks the
 * oracle, the sentinels and that both runs give the same bytes. */
static void every_candidate(xir_program *p, const char *spec, int offset) {
  xir_diag d;
  xir_shape shape;
  if (xir_shape_parse(p, spec, &shape, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &shape, 11, &d) || xir__case_oracle(&c, &d)) die(&d);
  int y = param_named(p, "y");
  int half = p->params[y].elem != XIR_F32;
  size_t es = half ? 2 : 4, n = c.numel[y], guard = 64;
  unsigned char *own = NULL, *out = half ? (unsigned char *)c.hdata[y] : (unsigned char *)c.data[y];
  if (offset) {
    own = aligned_alloc(64, ((n + 2 * guard) * es + 64 + 63) / 64 * 64); /* a multiple of 64 */
    assert_non_null(own);
    out = own + guard * es + (size_t)offset * es;
  }
  unsigned char *first = malloc(n * es);
  assert_non_null(first);
  xir_tolerance tol = xir__kernel_tolerance(p->name);
  uint32_t widths[] = {0, 8}, host_w = 0;
  size_t ran = 0;
  for (int w = 0; w < 2; w++) {
    if (w > 0 && widths[w] == host_w) continue; /* the host's width ran as width 0 */
    xir_compiler_options o = {.force_width = widths[w]};
    xir_compiler *cc;
    if (xir_compiler_create(&o, &cc, &d)) die(&d);
    if (w == 0) host_w = xir_compiler_width(cc);
    xir_candidate *cands;
    size_t nc;
    if (xir_candidates(p, &shape, xir_compiler_width(cc), &cands, &nc, &d)) die(&d);
    for (size_t i = 0; i < nc; i++) {
      uint32_t W = cands[i].W, want = cands[i].local > 2 * W ? cands[i].local : 2 * W;
      if (cands[i].B != want) continue;
      char name[128];
      xir_candidate_name(p, &cands[i], name, sizeof name);
      const xir_kernel *k;
      if (xir_compile(cc, p, &shape, &cands[i], &k, &d)) die(&d);
      for (int mode = 1; mode >= 0; mode--) {
        xir__stream_stores_set(mode);
        xir__case_reset_outputs(&c);
        xir_arg args[XIR_MAX_PARAMS];
        memcpy(args, c.args, sizeof args);
        if (offset) {
          memset(own, 0xA5, (n + 2 * guard) * es + 64);
          args[y].out = out;
        }
        uint64_t slots[XIR_MAX_ARG_SLOTS];
        assert_int_equal(stream_flag(k, args, slots), mode);
        /* streamed as a launch whose rows come from memory: a norm's store loop prefetches the
         * next row into L2 there (on AMD Zen; the flag changes nothing elsewhere) */
        if (mode == 1) slots[xir_kernel_args_size(k) / 8 - 1] |= XIR__ARGS_FAR;
        assert_int_equal(xir_kernel_entry(k)(slots, 0, xir_kernel_blocks(k)), 0);
        if (offset) {
          for (size_t b = 0; b < guard * es + (size_t)offset * es; b++)
            if (own[b] != 0xA5) fail_msg("%s %s: a byte before the output was written", spec, name);
          for (size_t b = guard * es + (size_t)offset * es + n * es; b < (n + 2 * guard) * es + 64; b++)
            if (own[b] != 0xA5) fail_msg("%s %s: a byte after the output was written", spec, name);
          memcpy(half ? (void *)c.hdata[y] : (void *)c.data[y], out, n * es);
        }
        if (!xir__case_sentinels_ok(&c)) fail_msg("%s %s: a sentinel was overwritten", spec, name);
        xir_compare r = xir__case_compare(&c, y, tol);
        if (!r.pass)
          fail_msg("%s %s %s streaming %d: %zu of %zu elements out of tolerance", p->name, spec,
                   name, mode, r.bad, r.n);
        const void *got = half ? (const void *)c.hdata[y] : (const void *)c.data[y];
        if (mode == 1) memcpy(first, got, n * es);
        else if (memcmp(first, got, n * es))
          fail_msg("%s %s %s: streaming stores changed the output", p->name, spec, name);
      }
      ran++;
    }
    xir_free(cands);
    xir_compiler_destroy(cc);
  }
  xir__stream_stores_set(-1);
  assert_true(ran > 0);
  free(first);
  free(own);
  xir__case_free(&c);
}

/* A hoisted bf16 weight (rmsnorm's w, converted to f32 once per call) is read with contiguous
 * loads; only the step past the last whole one clamps its indices. It was read with a clamped
 * 16-bit gather, which has no instruction: 16 scalar inserts per 16 elements, rmsnorm bf16 1x4096
 * 2.7 us against 0.5 after (session 24). Every row candidate vs the oracle, rows of 1000 (a
 * partial last step) and of 2048 (whole steps). */
static void test_half_hoist_loads_are_contiguous(void **state) {
  (void)state;
  xir_program *p = builtin("rmsnorm"), *bf;
  xir_diag d;
  if (xir_program_retype(p, "bf16", &bf, &d)) die(&d);
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  const char *specs[] = {"R=4,C=1000", "R=4,C=2048"};
  for (int s = 0; s < 2; s++) {
    xir_shape shape;
    xir_candidate *cands;
    size_t n = candidates_at(bf, specs[s], cc, &shape, &cands);
    size_t hoisted = 0;
    for (size_t i = 0; i < n; i++) {
      const char *ir = ir_of(cc, bf, &shape, &cands[i]);
      if (!strstr(ir, "%hoist = alloca")) continue;
      hoisted++;
      int gathers = 0; /* addresses of w's elements as a vector: a gather of w */
      const char *pat = "getelementptr i16, ptr %w, <";
      for (const char *at = strstr(ir, pat); at; at = strstr(at + 1, pat)) gathers++;
      if (gathers > (s == 0 ? 1 : 0)) /* C = 1000: the last, partial step only */
        fail_msg("%s candidate %zu: %d gathers of the hoisted weight", specs[s], i, gathers);
    }
    assert_true(hoisted > 0);
    xir_free(cands);
    every_candidate(bf, specs[s], 0);
  }
  xir_compiler_destroy(cc);
  xir_program_free(bf);
  xir_program_free(p);
}

static void test_streaming_stores(void **state) {
  (void)state;
  /* swiglu, gelu_residual: ℓ = 1 (and 2, 4, 8), a packet of W root programs streams where its
   * offset is a multiple of W */
  const char *kernels[] = {"layernorm", "rmsnorm", "softmax_mask", "softmax_causal", "swiglu",
                           "gelu_residual"};
  for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++) {
    xir_program *p = builtin(kernels[i]);
    every_candidate(p, "R=13,C=256", 0);  /* rows of 1 KiB: every vector aligned */
    every_candidate(p, "R=9,C=100", 0);   /* rows of 400 bytes: the regular stores serve */
    every_candidate(p, "R=7,C=160", 4);   /* the output's base 16 bytes off a boundary */
    every_candidate(p, "R=3,C=1008", 0);  /* aligned rows with a tail chunk of full packets */
    every_candidate(p, "R=5,C=300", 0);   /* rows of 1200 bytes: streamed through a row buffer */
    every_candidate(p, "R=5,C=300", 3);   /* ... with the output 12 bytes off a boundary */
    xir_program_free(p);
  }
  xir_program *p = builtin("layernorm"), *b;
  xir_diag d;
  if (xir_program_retype(p, "y=bf16", &b, &d)) die(&d);
  every_candidate(b, "R=13,C=256", 0);    /* bf16: 32-byte vectors at W = 16 */
  every_candidate(b, "R=5,C=96", 0);
  /* pairs of bf16 packets (one 64-byte store): an output 32 bytes off a 64-byte boundary streams
   * each pair's halves, one 8 bytes off stores regularly */
  every_candidate(b, "R=13,C=256", 16);
  every_candidate(b, "R=13,C=256", 4);
  xir_program_free(b);
  xir_program_free(p);
}

/* Inputs placed at a chosen offset past a page boundary (xir__case_place_inputs, what the
 * benchmark does for every configuration alike): every input array moves there with the same
 * bytes (the input fingerprint is unchanged), and every row candidate of f32, bf16 and i64-input
 * kernels still matches the oracle on them (rows that start inside a cache line, loads that
 * straddle two). Bad offsets are refused and leave the case as it was. */
static void test_placed_inputs(void **state) {
  (void)state;
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  xir_program *base = builtin("layernorm"), *bf;
  if (xir_program_retype(base, "bf16", &bf, &d)) die(&d);
  struct {
    xir_program *p;
    const char *spec;
  } cases[] = {{builtin("rmsnorm"), "R=7,C=100"},
               {builtin("softmax_mask"), "R=5,C=200"},
               {bf, "R=5,C=96"},
               {builtin("rope_cache"), "R=33,C=1000,HD=100,P=33,H2=50"}};
  static const int offsets[] = {16, 8, 48};
  size_t ran = 0;
  for (size_t kc = 0; kc < sizeof cases / sizeof *cases; kc++) {
    xir_program *p = cases[kc].p;
    xir_shape shape;
    xir_candidate *cands;
    size_t n = candidates_at(p, cases[kc].spec, cc, &shape, &cands);
    xir_case c;
    if (xir__case_init(&c, p, &shape, 5, &d)) die(&d);
    char fp0[65], fp[65];
    xir__case_input_fingerprint(&c, fp0);
    /* refused: the case keeps its buffers */
    const void *before = c.args[0].in;
    static const int bad[] = {-8, 12, 64};
    for (size_t b = 0; b < 3; b++) {
      assert_int_equal(xir__case_place_inputs(&c, bad[b], &d), XIR_ERR_INVALID_ARG);
      assert_non_null(strstr(d.msg, "multiple of 8"));
      assert_ptr_equal(c.args[0].in, before);
    }
    for (size_t o = 0; o < sizeof offsets / sizeof *offsets; o++) {
      if (xir__case_place_inputs(&c, offsets[o], &d)) die(&d);
      for (int i = 0; i < p->nparams; i++) {
        if (p->params[i].kind != XIR_PARAM_BUFFER || p->params[i].is_output) continue;
        assert_int_equal((uintptr_t)c.args[i].in % 4096, (uintptr_t)offsets[o]);
        if (c.data[i]) assert_int_equal((uintptr_t)c.data[i] % 4096, (uintptr_t)offsets[o]);
      }
      xir__case_input_fingerprint(&c, fp);
      assert_string_equal(fp, fp0);
      if (o == 0 && xir__case_oracle(&c, &d)) die(&d);
      xir_tolerance tol = xir__kernel_tolerance(p->name);
      for (size_t i = 0; i < n; i++) {
        /* the row candidates (one root program a packet or more) and one of each other ℓ */
        uint32_t want = cands[i].local > cands[i].W ? cands[i].local : cands[i].W;
        if (cands[i].B != want) continue;
        const xir_kernel *k;
        if (xir_compile(cc, p, &shape, &cands[i], &k, &d)) die(&d);
        xir__case_reset_outputs(&c);
        run_blocks(k, c.args);
        char name[128];
        xir_candidate_name(p, &cands[i], name, sizeof name);
        for (int j = 0; j < p->nparams; j++)
          if (p->params[j].is_output && !xir__case_compare(&c, j, tol).pass)
            fail_msg("%s %s %s, inputs at +%d: differs from the oracle", p->name,
                     cases[kc].spec, name, offsets[o]);
        if (!xir__case_sentinels_ok(&c))
          fail_msg("%s %s %s: a sentinel was overwritten", p->name, cases[kc].spec, name);
        ran++;
      }
    }
    if (kc == 0) {
      /* an input with a strided view is not moved (its view would keep the old rows) */
      if (xir__case_set_row_stride(&c, 0, shape.dims[p->params[0].dims[1]] + 3, &d)) die(&d);
      const void *view = c.args[0].in;
      assert_int_equal(xir__case_place_inputs(&c, 16, &d), XIR_ERR_INVALID_ARG);
      assert_non_null(strstr(d.msg, "strided view"));
      assert_ptr_equal(c.args[0].in, view);
    }
    xir__case_free(&c);
    xir_free(cands);
    xir_program_free(p);
  }
  assert_true(ran > 40);
  xir_program_free(base);
  xir_compiler_destroy(cc);
}

/* The definition line of IR value `name` (e.g. "%158") in text, or NULL: the line that starts,
 * after blanks, with "name = ". */
static const char *ir_def(const char *ir, const char *name, char *line, size_t cap) {
  char pat[96];
  snprintf(pat, sizeof pat, "%s = ", name);
  for (const char *q = ir; (q = strstr(q, pat)); q++) {
    const char *b = q;
    while (b > ir && (b[-1] == ' ' || b[-1] == '\t')) b--;
    if (b != ir && b[-1] != '\n') continue;
    const char *e = strchr(q, '\n');
    size_t n = e ? (size_t)(e - q) : strlen(q);
    if (n >= cap) n = cap - 1;
    memcpy(line, q, n);
    line[n] = 0;
    return line;
  }
  return NULL;
}

/* The %operands after the '=' of IR line `line` (at most 16, each under 96 characters). */
static int ir_operands(const char *line, char ops[16][96]) {
  int n = 0;
  const char *q = strchr(line, '=');
  for (q = q ? q + 1 : line + strlen(line); n < 16 && (q = strchr(q, '%')); q++) {
    size_t m = strcspn(q, ", )");
    if (m >= 96) continue;
    memcpy(ops[n], q, m);
    ops[n++][m] = 0;
  }
  return n;
}

/* The condition of IR line `line` when it is a `select i1`, into cond (96 bytes); 0 if not. */
static int select_cond(const char *line, char cond[96]) {
  const char *sel = strstr(line, " = select i1 ");
  if (!sel) return 0;
  const char *c = sel + strlen(" = select i1 ");
  size_t cm = strcspn(c, ", ");
  if (cm == 0 || cm >= 96) return 0;
  memcpy(cond, c, cm);
  cond[cm] = 0;
  return 1;
}

/* The pointer operand's name of the prefetch call at `q` ("call void @llvm.prefetch…(ptr %x, …"),
 * into name (96 bytes). */
static void prefetch_ptr(const char *q, char name[96]) {
  const char *a = strstr(q, "(ptr ");
  assert_non_null(a);
  size_t m = strcspn(a + 5, ", ");
  assert_true(m > 0 && m < 96);
  memcpy(name, a + 5, m);
  name[m] = 0;
}

/* 1 when i1 value `cond` is an icmp slt, or a conjunction (`and i1`, or `select i1 a, i1 b, i1
 * false`) with one (at most depth steps down): the select it drives keeps its first operand only
 * where that comparison holds (next_row_prefetch: inside the buffer and inside this call). */
static int cond_has_slt(const char *ir, const char *cond, int depth) {
  char cl[1024];
  if (depth < 0 || !ir_def(ir, cond, cl, sizeof cl)) return 0;
  if (strstr(cl, "icmp slt")) return 1;
  if (!strstr(cl, " = and i1 ") && !(strstr(cl, " = select i1 ") && strstr(cl, "i1 false")))
    return 0;
  char ops[16][96];
  int nops = ir_operands(cl, ops);
  for (int i = 0; i < nops; i++)
    if (cond_has_slt(ir, ops[i], depth - 1)) return 1;
  return 0;
}

/* 1 when IR value `name` is, or is computed through getelementptr and add (at most depth
 * steps) from, a select whose condition is (or requires) an icmp slt: an address bounded by a
 * comparison. */
static int bounded(const char *ir, const char *name, int depth) {
  char line[1024];
  if (depth < 0 || !ir_def(ir, name, line, sizeof line)) return 0;
  char cond[96];
  if (strstr(line, " = select i1 ")) return select_cond(line, cond) && cond_has_slt(ir, cond, 2);
  if (!strstr(line, " = getelementptr ") && !strstr(line, " = add ")) return 0;
  char ops[16][96];
  int nops = ir_operands(line, ops);
  for (int i = 0; i < nops; i++)
    if (bounded(ir, ops[i], depth - 1)) return 1;
  return 0;
}

/* Every prefetch of the row kernels' ℓ ≥ W candidates (the next row) and of attention's
 * candidates (K and V rows 16 keys ahead) takes its address from a select on a comparison with
 * the buffer's end (the current row where the prefetched one would leave the buffer). */
static void test_prefetch_stays_inside(void **state) {
  (void)state;
  static const char *const kernels[][2] = {
      {"rmsnorm", "R=3,C=1500"},
      {"layernorm", "R=5,C=700"},
      {"softmax_mask", "R=3,C=333"},
      {"attention", "B=1,HQ=4,HKV=2,Q=1,K=40,D=32,DV=32"},
      {"attention", "B=1,HQ=2,HKV=1,Q=8,K=24,D=16,DV=16"},
      {"swiglu", "R=3,C=1500"}, /* ℓ = 1: the loads' prefetch ahead (lower.c ahead_prefetch) */
      {"gelu_residual", "R=5,C=700"}};
  xir_compiler *cc;
  cc = prefetch_compiler();
  size_t checked = 0;
  for (size_t kk = 0; kk < sizeof kernels / sizeof *kernels; kk++) {
    xir_program *p = builtin(kernels[kk][0]);
    int attn = !strcmp(kernels[kk][0], "attention");
    int ew = !strcmp(kernels[kk][0], "swiglu") || !strcmp(kernels[kk][0], "gelu_residual");
    xir_shape shape;
    xir_candidate *cands;
    size_t n = candidates_at(p, kernels[kk][1], cc, &shape, &cands);
    for (size_t i = 0; i < n; i++) {
      if (!attn && !ew && cands[i].local < cands[i].W) continue;
      const char *ir = ir_of(cc, p, &shape, &cands[i]);
      for (const char *q = ir; (q = strstr(q, "call void @llvm.prefetch")); q++) {
        char name[96];
        prefetch_ptr(q, name);
        if (!bounded(ir, name, 4)) {
          char nm[96];
          xir_candidate_name(p, &cands[i], nm, sizeof nm);
          fail_msg("%s %s %s: a prefetch whose address is not bounded by the buffer's end: %.80s",
                   kernels[kk][0], kernels[kk][1], nm, q);
        }
        checked++;
      }
    }
    xir_free(cands);
    xir_program_free(p);
  }
  assert_true(checked > 0);
  xir_compiler_destroy(cc);
}

/* 1 when IR value `name` is `param` or computed from it (at most depth steps). */
static int depends_on(const char *ir, const char *name, const char *param, int depth) {
  if (!strcmp(name, param)) return 1;
  char line[1024];
  if (depth <= 0 || !ir_def(ir, name, line, sizeof line)) return 0;
  char ops[16][96];
  int nops = ir_operands(line, ops);
  for (int i = 0; i < nops; i++)
    if (depends_on(ir, ops[i], param, depth - 1)) return 1;
  return 0;
}

/* 1 when i1 value `cond` is, or is a conjunction with (at most depth steps down), an icmp slt
 * whose operands come from `param`. */
static int cond_bounds_by(const char *ir, const char *cond, const char *param, int depth) {
  char cl[1024];
  if (depth < 0 || !ir_def(ir, cond, cl, sizeof cl)) return 0;
  int slt = strstr(cl, "icmp slt") != NULL;
  if (!slt && !strstr(cl, " = and i1 ") && !(strstr(cl, " = select i1 ") && strstr(cl, "i1 false")))
    return 0;
  char ops[16][96];
  int nops = ir_operands(cl, ops);
  for (int i = 0; i < nops; i++)
    if (slt ? depends_on(ir, ops[i], param, 2) : cond_bounds_by(ir, ops[i], param, depth - 1)) return 1;
  return 0;
}

/* 1 when some IR value among `name` and what it is computed from (at most depth steps, each
 * value visited once) has a definition line for which hit(ir, line, ctx) holds. */
typedef int (*line_pred)(const char *ir, const char *line, const void *ctx);
static int reaches_line(const char *ir, const char *name, int depth, line_pred hit, const void *ctx,
                        char seen[][48], int *nseen) {
  for (int i = 0; i < *nseen; i++)
    if (!strcmp(seen[i], name)) return 0;
  if (*nseen < 256 && strlen(name) < 48) strcpy(seen[(*nseen)++], name);
  char line[1024];
  if (depth < 0 || !ir_def(ir, name, line, sizeof line)) return 0;
  if (hit(ir, line, ctx)) return 1;
  char ops[16][96];
  int nops = ir_operands(line, ops);
  for (int i = 0; i < nops; i++)
    if (reaches_line(ir, ops[i], depth - 1, hit, ctx, seen, nseen)) return 1;
  return 0;
}

/* a select whose condition bounds by the parameter named ctx (cond_bounds_by) */
static int is_call_bound(const char *ir, const char *line, const void *ctx) {
  char cond[96];
  return select_cond(line, cond) && cond_bounds_by(ir, cond, ctx, 2);
}

/* an `lshr i64 …, 32`: the flags slot's high half */
static int is_lshr32(const char *ir, const char *line, const void *ctx) {
  (void)ir, (void)ctx;
  return strstr(line, " = lshr i64 ") && strstr(line, ", 32");
}

/* The constant K of the `add i64 %o, K` that the comparison guarding prefetch call q (its
 * pointer's select, icmp slt against the buffer's end) adds to the row offset; -1 if none. */
static long long guard_const(const char *ir, const char *q) {
  char name[96], line[1024], cond[96], ops[16][96];
  prefetch_ptr(q, name);
  /* from the pointer down to the select (a gep, an add or two on the way) */
  for (int depth = 0; depth < 4; depth++) {
    if (!ir_def(ir, name, line, sizeof line)) return -1;
    if (select_cond(line, cond)) break;
    int n = ir_operands(line, ops), next = -1;
    for (int i = 0; i < n; i++) {
      char l2[1024];
      if (ir_def(ir, ops[i], l2, sizeof l2) &&
          (strstr(l2, " = select i1 ") || strstr(l2, " = getelementptr ") || strstr(l2, " = add ")))
        next = i;
    }
    if (next < 0) return -1;
    snprintf(name, sizeof name, "%s", ops[next]);
  }
  if (!select_cond(line, cond) || !ir_def(ir, cond, line, sizeof line) || !strstr(line, "icmp slt"))
    return -1;
  if (ir_operands(line, ops) < 1 || !ir_def(ir, ops[0], line, sizeof line) || !strstr(line, " = add "))
    return -1;
  const char *k = strrchr(line, ',');
  return k ? strtoll(k + 1, NULL, 10) : -1;
}

/* The next row's chunk is prefetched only while the last element prefetched lies inside the
 * buffer: rmsnorm at C = 1500 and ℓ = 128 compares offset + 127 (a full chunk: the line of its
 * last element) and offset + 91 (the tail of 92) with the buffer's end. */
static void test_prefetch_guard_is_the_last_element(void **state) {
  (void)state;
  xir_program *p = builtin("rmsnorm");
  xir_compiler *cc;
  cc = prefetch_compiler();
  xir_shape shape;
  xir_candidate *cands;
  if (xir_compiler_width(cc) != 16) { /* the constants below are W = 16's (AVX-512) */
    xir_compiler_destroy(cc);
    xir_program_free(p);
    skip();
  }
  size_t n = candidates_at(p, "R=3,C=1500", cc, &shape, &cands), checked = 0;
  for (size_t i = 0; i < n; i++) {
    if (cands[i].W != 16 || cands[i].local != 128 || cands[i].B != 128) continue;
    const char *ir = ir_of(cc, p, &shape, &cands[i]);
    int full = 0, tail = 0;
    for (const char *q = ir; (q = strstr(q, "call void @llvm.prefetch")); q++) {
      long long k = guard_const(ir, q);
      if (k != 127 && k != 91) fail_msg("a prefetch guarded by offset + %lld (want 127 or 91)", k);
      full += k == 127;
      tail += k == 91;
    }
    assert_true(full > 0 && tail > 0);
    checked++;
  }
  assert_int_equal(checked, 1);
  xir_free(cands);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* The next-row prefetch stays inside the call's root programs: the runtime deals tasks
 * round-robin, so the row after a task's last is another worker's, and prefetching it cost this
 * core its fill buffers and pulled that row away from the core that reads it (next_row_prefetch).
 * Every prefetch of the row kernels' l >= W candidates computes its address through a select on
 * a comparison with the entry's block_end (its third parameter): the rows ahead, 1 inside the
 * call. */
static void test_prefetch_stays_in_call(void **state) {
  (void)state;
  static const char *const kernels[][2] = {
      {"rmsnorm", "R=3,C=1500"}, {"layernorm", "R=5,C=700"}, {"softmax_mask", "R=3,C=333"}};
  xir_compiler *cc;
  cc = prefetch_compiler();
  size_t checked = 0;
  for (size_t kk = 0; kk < sizeof kernels / sizeof *kernels; kk++) {
    xir_program *p = builtin(kernels[kk][0]);
    xir_shape shape;
    xir_candidate *cands;
    size_t n = candidates_at(p, kernels[kk][1], cc, &shape, &cands);
    for (size_t i = 0; i < n; i++) {
      if (cands[i].local < cands[i].W) continue;
      const char *ir = ir_of(cc, p, &shape, &cands[i]);
      /* the entry's third parameter: the last %name of the define line */
      const char *def = strstr(ir, "\ndefine ");
      assert_non_null(def);
      const char *close = strchr(def, ')');
      assert_non_null(close);
      const char *pc = close;
      while (pc > def && *pc != '%') pc--;
      char param[32];
      size_t pm = (size_t)(close - pc);
      assert_true(*pc == '%' && pm < sizeof param);
      memcpy(param, pc, pm);
      param[pm] = 0;
      for (const char *q = ir; (q = strstr(q, "call void @llvm.prefetch")); q++) {
        char name[96];
        prefetch_ptr(q, name);
        /* on the way to the address, a select chosen by a comparison with the call's end */
        char seen[256][48];
        int nseen = 0;
        if (!reaches_line(ir, name, 10, is_call_bound, param, seen, &nseen)) {
          char nm[96];
          xir_candidate_name(p, &cands[i], nm, sizeof nm);
          fail_msg("%s %s %s: a prefetch not bounded by the call's block_end (%s): %.80s",
                   kernels[kk][0], kernels[kk][1], nm, param, q);
        }
        checked++;
      }
    }
    xir_free(cands);
    xir_program_free(p);
  }
  assert_true(checked > 0);
  xir_compiler_destroy(cc);
}

/* xir_launch_task_stride is h·G (0 when one worker runs the launch, or for a bad pool), and
 * xir_kernel_set_task_stride writes it into the flags slot's high half, keeps the low flags and
 * refuses NULL; every prefetch
 * of an l >= W row candidate takes its address through it (an lshr by 32 of the flags); and
 * the outputs are the same bits with the stride set, run task by task as the runtime deals them. */
static void test_launch_tasks_home_stride(void **state) {
  (void)state;
  xir_program *p = builtin("softmax_mask");
  xir_diag d;
  xir_shape shape;
  if (xir_shape_parse(p, "R=10,C=333", &shape, &d)) die(&d);
  xir_compiler *cc;
  cc = prefetch_compiler();
  uint32_t W = xir_compiler_width(cc);
  uint8_t perm[1] = {0};
  xir_candidate cand;
  if (xir_candidate_make(p, &shape, W, 2 * W, 2 * W, perm, &cand, &d)) die(&d);
  const xir_kernel *k;
  if (xir_compile(cc, p, &shape, &cand, &k, &d)) die(&d);
  xir_kernel_info info;
  xir_kernel_get_info(k, &info);
  assert_non_null(strstr(info.ir_text, "lshr i64"));
  int found = 0;
  for (const char *q = info.ir_text; (q = strstr(q, "call void @llvm.prefetch")); q++) {
    char name[96];
    prefetch_ptr(q, name);
    /* the address reaches the flags' high half: some value on the way is an lshr by 32 */
    char seen[256][48];
    int nseen = 0;
    if (!reaches_line(info.ir_text, name, 12, is_lshr32, NULL, seen, &nseen))
      fail_msg("a prefetch address that does not use the home stride: %.80s", q);
    found++;
  }
  assert_true(found > 0);
  xir_case c;
  if (xir__case_init(&c, p, &shape, 9, &d)) die(&d);
  size_t nslots = xir_kernel_args_size(k) / 8;
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  if (xir_kernel_pack_args(k, c.args, slots, &d)) die(&d);
  uint64_t low = slots[nslots - 1];
  assert_int_equal(low >> 32, 0);
  uint64_t L = xir_kernel_blocks(k);
  assert_int_equal(L, 10);
  assert_int_equal(xir_kernel_set_task_stride(k, slots, xir_launch_task_stride(2, L, 1, 2), &d), XIR_OK);
  assert_int_equal(slots[nslots - 1] >> 32, 2);
  assert_int_equal(slots[nslots - 1] & 0xffffffffu, low);
  assert_int_equal(xir_kernel_set_task_stride(k, slots, xir_launch_task_stride(2, L, 3, 2), &d), XIR_OK);
  assert_int_equal(slots[nslots - 1] >> 32, 6);
  assert_int_equal(xir_kernel_set_task_stride(k, slots, xir_launch_task_stride(2, L, 1, 1), &d), XIR_OK);
  assert_int_equal(slots[nslots - 1] >> 32, 0); /* one worker */
  assert_int_equal(xir_kernel_set_task_stride(k, slots, xir_launch_task_stride(2, L, UINT32_MAX, 2), &d), XIR_OK);
  assert_int_equal(slots[nslots - 1] >> 32, 0); /* one task */
  assert_int_equal(slots[nslots - 1] & 0xffffffffu, low);
  assert_int_equal(xir_launch_task_stride(0, L, 1, 2), 0); /* no pool */
  assert_int_equal(xir_kernel_set_task_stride(k, slots, (uint64_t)1 << 32, &d), XIR_OK);
  assert_int_equal(slots[nslots - 1] >> 32, 0); /* too far: none */
  assert_int_equal(xir_kernel_set_task_stride(NULL, slots, 2, &d), XIR_ERR_INVALID_ARG);
  assert_int_equal(xir_kernel_set_task_stride(k, NULL, 2, &d), XIR_ERR_INVALID_ARG);
  /* the same bits with and without the stride: tasks of one block dealt to 2 workers, run in
   * the order worker 0's, then worker 1's */
  int y = param_named(p, "y");
  float *ref = malloc(c.numel[y] * sizeof(float));
  assert_non_null(ref);
  xir__case_reset_outputs(&c);
  assert_int_equal(xir_kernel_entry(k)(slots, 0, L), 0);
  memcpy(ref, c.data[y], c.numel[y] * sizeof(float));
  assert_int_equal(xir_kernel_set_task_stride(k, slots, 2, &d), XIR_OK);
  xir__case_reset_outputs(&c);
  for (uint64_t w = 0; w < 2; w++)
    for (uint64_t t = w; t < L; t += 2) assert_int_equal(xir_kernel_entry(k)(slots, t, t + 1), 0);
  assert_true(xir__case_sentinels_ok(&c));
  assert_memory_equal(ref, c.data[y], c.numel[y] * sizeof(float));
  free(ref);
  xir__case_free(&c);
  xir_compiler_destroy(cc);
  xir_program_free(p);
}

/* The input ends at an inaccessible page right after the last row: the next-row prefetch of the
 * last root program points there and must not fault. */
static void test_prefetch_past_the_end(void **state) {
  (void)state;
  xir_program *p = builtin("layernorm");
  xir_diag d;
  xir_shape shape;
  if (xir_shape_parse(p, "R=16,C=1024", &shape, &d)) die(&d);
  xir_case c;
  if (xir__case_init(&c, p, &shape, 3, &d) || xir__case_oracle(&c, &d)) die(&d);
  int x = param_named(p, "x"), y = param_named(p, "y");
  size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = 16 * 1024 * 4;
  size_t pages = (bytes + page - 1) / page;
  uint8_t *map = mmap(NULL, (pages + 4) * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(map != MAP_FAILED);
  float *gx = (float *)(map + pages * page - bytes);
  memcpy(gx, c.data[x], bytes);
  assert_int_equal(mprotect(map + pages * page, 4 * page, PROT_NONE), 0);
  xir_arg args[XIR_MAX_PARAMS];
  memcpy(args, c.args, sizeof args);
  args[x].in = gx;
  xir_compiler *cc;
  cc = prefetch_compiler();
  xir_candidate *cands;
  size_t n, ran = 0;
  if (xir_candidates(p, &shape, xir_compiler_width(cc), &cands, &n, &d)) die(&d);
  for (size_t i = 0; i < n; i++) {
    if (cands[i].local < cands[i].W || cands[i].B != cands[i].local) continue;
    const xir_kernel *k;
    if (xir_compile(cc, p, &shape, &cands[i], &k, &d)) die(&d);
    xir__case_reset_outputs(&c);
    run_blocks(k, args);
    assert_true(xir__case_sentinels_ok(&c));
    assert_true(xir__case_compare(&c, y, xir__kernel_tolerance("layernorm")).pass);
    ran++;
  }
  assert_true(ran > 0);
  xir_free(cands);
  xir_compiler_destroy(cc);
  munmap(map, (pages + 4) * page);
  xir__case_free(&c);
  xir_program_free(p);
}

/* Which launches are far (xir__far_launch): past one and a half times a last-level cache of at
 * least 4 MiB, else past twice the streaming threshold; the packed flags carry the bit. */
/* rmsnorm's first candidate at spec, compiled with a new compiler (*cc, *cands: the caller frees
 * them). */
static const xir_kernel *rmsnorm_first(const xir_program *p, const char *spec, xir_compiler **cc,
                                       xir_candidate **cands) {
  xir_diag d;
  xir_shape shape;
  size_t n;
  const xir_kernel *k;
  if (xir_shape_parse(p, spec, &shape, &d) || xir_compiler_create(NULL, cc, &d) ||
      xir_candidates(p, &shape, xir_compiler_width(*cc), cands, &n, &d) ||
      xir_compile(*cc, p, &shape, &(*cands)[0], &k, &d))
    die(&d);
  return k;
}

/* The flags slot of rmsnorm kernel k (at most 512 x 2048) packed with dense zeroed buffers. */
static uint64_t rmsnorm_packed_flags(const xir_kernel *k) {
  xir_diag d;
  float *x = calloc(512 * 2048, 4), *w = calloc(2048, 4), *y = calloc(512 * 2048, 4);
  assert_true(x && w && y);
  xir_arg args[XIR_MAX_PARAMS] = {{.in = x}, {.in = w}, {.out = y}, {.use_default = 1}};
  uint64_t slots[XIR_MAX_ARG_SLOTS];
  if (xir_kernel_pack_args(k, args, slots, &d)) die(&d);
  free(x);
  free(w);
  free(y);
  return slots[xir_kernel_args_size(k) / 8 - 1];
}

static void test_far_launch(void **state) {
  (void)state;
  int64_t llc0 = xir__llc_bytes_set(32 << 20), t0 = xir__stream_threshold_set(0);
  assert_int_equal(xir__far_launch((uint64_t)48 << 20), 0);
  assert_int_equal(xir__far_launch(((uint64_t)48 << 20) + 1), XIR__ARGS_FAR);
  xir__llc_bytes_set(1 << 20); /* below 4 MiB: the measured threshold decides */
  xir__stream_threshold_set(3 << 20);
  assert_int_equal(xir__far_launch((uint64_t)6 << 20), 0);
  assert_int_equal(xir__far_launch(((uint64_t)6 << 20) + 1), XIR__ARGS_FAR);
  xir__llc_bytes_set(0);
  xir__stream_threshold_set(0);
  assert_int_equal(xir__far_launch(UINT64_C(1) << 40), 0); /* nothing known: never */
  /* the packed flags: rmsnorm 512x2048 (8 MiB and 8 KiB) is far with a 4 MiB cache, 256x2048
   * (4 MiB and 8 KiB) is not */
  xir__llc_bytes_set(4 << 20);
  xir_program *p = builtin("rmsnorm");
  const char *shapes[2] = {"R=512,C=2048", "R=256,C=2048"};
  for (int s = 0; s < 2; s++) {
    xir_compiler *cc;
    xir_candidate *cands;
    const xir_kernel *k = rmsnorm_first(p, shapes[s], &cc, &cands);
    assert_int_equal((int)(rmsnorm_packed_flags(k) & XIR__ARGS_FAR), s == 0 ? XIR__ARGS_FAR : 0);
    xir_free(cands);
    xir_compiler_destroy(cc);
  }
  xir_program_free(p);
  xir__llc_bytes_set(llc0 > 0 ? llc0 : -1);
  xir__stream_threshold_set(t0);
}

/* A dense launch keeps its streaming and far bits until what decides them changes
 * (xir__stream_generation, launch.c pack_dense): one kernel packed again after each change of
 * the cache size, the threshold and the mode carries the bits of the change. */
static void test_packed_bits_follow_changes(void **state) {
  (void)state;
  int64_t llc0 = xir__llc_bytes_set(4 << 20), t0 = xir__stream_threshold_set(0);
  int m0 = xir__stream_stores_mode();
  xir__stream_stores_set(-1);
  xir_program *p = builtin("rmsnorm");
  xir_compiler *cc;
  xir_candidate *cands;
  const xir_kernel *k = rmsnorm_first(p, "R=512,C=2048", &cc, &cands);
  const uint64_t both = XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF, all = both | XIR__ARGS_FAR;
  assert_int_equal(rmsnorm_packed_flags(k) & all, all); /* 8 MiB past a 4 MiB cache */
  xir__llc_bytes_set(64 << 20);                          /* now inside the cache: neither */
  assert_int_equal(rmsnorm_packed_flags(k) & all, 0);
  xir__stream_stores_set(1); /* always streaming */
  assert_int_equal(rmsnorm_packed_flags(k) & both, both);
  xir__stream_stores_set(-1);
  xir__stream_threshold_set(1 << 20); /* a measured threshold of 1 MiB: streaming, not far */
  assert_int_equal(rmsnorm_packed_flags(k) & all, both);
  xir__llc_bytes_set(0); /* no cache known: the threshold decides, 8 MiB past twice 1 MiB */
  assert_int_equal(rmsnorm_packed_flags(k) & all, all);
  uint32_t g = xir__stream_generation();
  xir__stream_threshold_set(0);
  assert_true(xir__stream_generation() != g && xir__stream_generation() != 0);
  xir_free(cands);
  xir_compiler_destroy(cc);
  xir_program_free(p);
  xir__stream_stores_set(m0);
  xir__llc_bytes_set(llc0 > 0 ? llc0 : -1);
  xir__stream_threshold_set(t0);
}

static void test_stream_launch_rule(void **state) {
  (void)state;
  xir__stream_stores_set(-1);
  int64_t llc = xir__llc_bytes();
  assert_true(llc >= 0);
  if (llc > 0) {
    assert_false(xir__stream_launch((uint64_t)llc / 2, 0, 0));
    assert_true(xir__stream_launch((uint64_t)llc / 2 + 1, 0, 0));
  } else {
    assert_false(xir__stream_launch(UINT64_C(1) << 40, 0, 0)); /* unknown cache: never */
  }
  assert_false(xir__stream_launch(4096, 0, 0));
  xir__stream_stores_set(1);
  assert_int_equal(xir__stream_stores_mode(), 1);
  assert_true(xir__stream_launch(4096, 0, 0));
  xir__stream_stores_set(0);
  assert_false(xir__stream_launch(UINT64_C(1) << 40, 0, 0));
  xir__stream_stores_set(-1);
  assert_int_equal(xir__stream_stores_mode(), -1);
}

/* A measured threshold (the service model's stream_bytes) replaces the cache-size prior; the
 * forced modes still win over it; 0 restores the prior. */
static void test_stream_measured_threshold(void **state) {
  (void)state;
  xir__stream_stores_set(-1);
  int64_t llc = xir__llc_bytes(), prior = xir__stream_threshold(0);
  assert_int_equal(prior, llc > 0 ? llc / 2 : 0);
  const int64_t t = 6 << 20;
  int64_t before = xir__stream_threshold_set(t);
  assert_int_equal(xir__stream_threshold(0), t);
  assert_int_equal(xir__stream_threshold(1), prior); /* measured with f32 outputs only */
  assert_int_equal(xir__stream_launch((uint64_t)t + 1, 1, 0) != 0, prior > 0 && t + 1 > prior);
  assert_false(xir__stream_launch((uint64_t)t, 0, 0));
  assert_true(xir__stream_launch((uint64_t)t + 1, 0, 0));
  xir__stream_stores_set(0);
  assert_false(xir__stream_launch((uint64_t)t * 4, 0, 0));
  xir__stream_stores_set(1);
  assert_true(xir__stream_launch(4096, 0, 0));
  xir__stream_stores_set(-1);
  assert_int_equal(xir__stream_threshold_set(-5), t); /* returns the previous setting */
  assert_int_equal(xir__stream_threshold(0), prior);
  /* a kernel that reduces streams from the cache's size on when the measured threshold is
   * above it (not below 4 MiB: an implausible cache); a 16-bit output keeps the prior */
  int64_t llc0 = xir__llc_bytes_set(32 << 20);
  xir__stream_threshold_set(45 << 20);
  /* between the cache's size and the threshold only the aligned rows stream (no row buffer);
   * the row buffer from the threshold, or from twice the cache when the threshold is above */
  const int both = XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF;
  assert_int_equal(xir__stream_launch((UINT64_C(32) << 20) + 1, 0, 1), XIR__ARGS_STREAM);
  assert_int_equal(xir__stream_launch(UINT64_C(45) << 20, 0, 1), XIR__ARGS_STREAM);
  assert_int_equal(xir__stream_launch((UINT64_C(45) << 20) + 1, 0, 1), both);
  xir__stream_threshold_set(181 << 20);
  assert_int_equal(xir__stream_launch(UINT64_C(64) << 20, 0, 1), XIR__ARGS_STREAM);
  assert_int_equal(xir__stream_launch((UINT64_C(64) << 20) + 1, 0, 1), both);
  assert_false(xir__stream_launch((UINT64_C(64) << 20) + 1, 0, 0)); /* one pass: the threshold */
  /* a body with vector math (softmax): the row buffer from the cache's size on */
  assert_int_equal(xir__stream_launch((UINT64_C(32) << 20) + 1, 0, 2), both);
  assert_false(xir__stream_launch(UINT64_C(32) << 20, 0, 2));
  assert_int_equal(xir__stream_launch((UINT64_C(181) << 20) + 1, 0, 0), both);
  xir__stream_threshold_set(45 << 20);
  assert_false(xir__stream_launch(UINT64_C(32) << 20, 0, 1));
  assert_false(xir__stream_launch((UINT64_C(32) << 20) + 1, 0, 0));
  assert_int_equal(xir__stream_launch((UINT64_C(45) << 20) + 1, 0, 0), both);
  assert_true(xir__stream_launch((UINT64_C(16) << 20) + 1, 1, 1)); /* the prior: half the cache */
  xir__stream_threshold_set(6 << 20); /* below the cache: the same for both */
  assert_true(xir__stream_launch((UINT64_C(6) << 20) + 1, 0, 0));
  assert_true(xir__stream_launch((UINT64_C(6) << 20) + 1, 0, 1));
  assert_false(xir__stream_launch(UINT64_C(6) << 20, 0, 1));
  xir__llc_bytes_set(1 << 20);
  xir__stream_threshold_set(45 << 20);
  assert_false(xir__stream_launch((UINT64_C(2) << 20), 0, 1));
  xir__llc_bytes_set(0); /* unknown */
  assert_false(xir__stream_launch((UINT64_C(40) << 20), 0, 1));
  assert_true(xir__stream_launch((UINT64_C(46) << 20), 0, 1));
  xir__llc_bytes_set(llc0);
  assert_int_equal(xir__llc_bytes(), llc0);
  xir__stream_threshold_set(before);
}

/* The launch flag past the cache: norms and softmax (a reduction before the store) stream from
 * the last-level cache's size when the measured threshold is above it; swiglu, gelu_residual
 * and rope_cache (one pass, like the calibration's copy) keep the measured threshold. */
static void test_stream_launch_reduces(void **state) {
  (void)state;
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  int64_t llc0 = xir__llc_bytes_set(4 << 20), before = xir__stream_threshold_set(256 << 20);
  xir__stream_stores_set(-1);
  const char *kernels[] = {"rmsnorm", "layernorm", "softmax_mask", "swiglu", "gelu_residual",
                           "rope_cache"};
  const char *shapes[] = {"R=1024,C=1024", "R=1024,C=1024", "R=1024,C=1024", "R=1024,C=1024",
                          "R=1024,C=1024", "R=1024,C=1024,HD=64,P=64,H2=32"};
  for (int kn = 0; kn < 6; kn++) {
    xir_program *p = builtin(kernels[kn]);
    xir_shape shape;
    xir_candidate *cands;
    size_t n = candidates_at(p, shapes[kn], cc, &shape, &cands);
    assert_true(n > 0);
    xir_case c;
    memset(&c, 0, sizeof c);
    if (xir__case_init(&c, p, &shape, 1, &d)) die(&d);
    const xir_kernel *k;
    if (xir_compile(cc, p, &shape, &cands[0], &k, &d)) die(&d);
    uint64_t slots[XIR_MAX_ARG_SLOTS];
    int flag = stream_flag(k, c.args, slots);
    if (flag != (kn < 3)) fail_msg("%s %s: stream flag %d", kernels[kn], shapes[kn], flag);
    /* past a 6 MiB cache (8 MiB of norm, 12 of softmax_mask, under twice the cache): the norms'
     * unaligned rows keep regular stores, softmax's (vector math) go through the row buffer */
    xir__llc_bytes_set(6 << 20);
    int bits = stream_bits(k, c.args, slots);
    int want = kn < 2 ? XIR__ARGS_STREAM : kn == 2 ? XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF : 0;
    if (bits != want) fail_msg("%s %s: stream bits %d, want %d", kernels[kn], shapes[kn], bits, want);
    /* the store choice at launch time (8-12 MiB: in the zone from 3 MiB to 1 GiB): arm 0 the
     * rule's bits, arm 1 none against streaming (the norms' aligned rows only is every row
     * here: rows of 4 KiB), full streaming against none; not chosen with XIR_STREAM_STORES's
     * `rule` */
    const int both = XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF;
    int arms[2];
    assert_int_equal(xir__kernel_stream_choice(k, arms), 1);
    if (arms[0] != want || arms[1] != (want ? 0 : both))
      fail_msg("%s %s: store arms %d %d", kernels[kn], shapes[kn], arms[0], arms[1]);
    xir__stream_stores_set(2);
    assert_int_equal(xir__kernel_stream_choice(k, arms), 0);
    xir__stream_stores_set(-1);
    xir__llc_bytes_set(4 << 20);
    xir__case_free(&c);
    xir_free(cands);
    xir_program_free(p);
  }
  /* rows of 1001 floats (not on a vector boundary at any width): the rule streams the aligned
   * ones only, and the other arm is full streaming through the row buffer */
  {
    xir__llc_bytes_set(6 << 20);
    xir_program *p = builtin("rmsnorm");
    xir_shape shape;
    xir_candidate *cands;
    assert_true(candidates_at(p, "R=1024,C=1001", cc, &shape, &cands) > 0);
    const xir_kernel *k;
    if (xir_compile(cc, p, &shape, &cands[0], &k, &d)) die(&d);
    int arms[2];
    assert_int_equal(xir__kernel_stream_choice(k, arms), 1);
    assert_int_equal(arms[0], XIR__ARGS_STREAM);
    assert_int_equal(arms[1], XIR__ARGS_STREAM | XIR__ARGS_STREAM_ROWBUF);
    xir_free(cands);
    xir_program_free(p);
  }
  xir__stream_threshold_set(before);
  xir__llc_bytes_set(llc0);
  xir_compiler_destroy(cc);
}

/* The launch flag with a measured threshold: a bf16 output at l = 1 (which streams only as pair
 * units' 64-byte stores) follows the measured threshold like an f32 one; at l >= W a bf16 output
 * keeps the cache-size prior (src/lower/launch.c). */
static void test_stream_launch_half_l1(void **state) {
  (void)state;
  xir_diag d;
  xir_compiler *cc;
  if (xir_compiler_create(NULL, &cc, &d)) die(&d);
  const char *kernels[2] = {"swiglu", "rmsnorm"};
  int64_t before = xir__stream_threshold_set(1024), prior = xir__stream_threshold(1);
  xir__stream_stores_set(-1);
  for (int kn = 0; kn < 2; kn++) {
    xir_program *p0 = builtin(kernels[kn]), *p;
    if (xir_program_retype(p0, "bf16", &p, &d)) die(&d);
    xir_shape shape;
    xir_candidate *cands;
    size_t n = candidates_at(p, "R=8,C=256", cc, &shape, &cands), ran = 0;
    xir_case c;
    memset(&c, 0, sizeof c);
    if (xir__case_init(&c, p, &shape, 1, &d)) die(&d);
    uint64_t footprint = 0;
    for (int i = 0; i < xir_program_num_params(p); i++) {
      xir_param_info in;
      xir_program_param(p, i, &in);
      if (in.kind == XIR_PARAM_BUFFER) footprint += xir_param_numel(p, i, &shape) * xir_elem_size(in.elem);
    }
    assert_true(footprint > 1024);
    for (size_t i = 0; i < n; i++) {
      if (!(cands[i].local == 1 || cands[i].local == cands[i].W)) continue;
      const xir_kernel *k;
      if (xir_compile(cc, p, &shape, &cands[i], &k, &d)) die(&d);
      uint64_t slots[XIR_MAX_ARG_SLOTS];
      int flag = stream_flag(k, c.args, slots);
      int want = cands[i].local == 1 ? 1 : prior > 0 && footprint > (uint64_t)prior;
      char name[128];
      xir_candidate_name(p, &cands[i], name, sizeof name);
      if (flag != want) fail_msg("bf16 %s %s: stream flag %d, expected %d", kernels[kn], name, flag, want);
      ran++;
    }
    assert_true(ran > 0);
    xir__case_free(&c);
    xir_free(cands);
    xir_program_free(p);
    xir_program_free(p0);
  }
  xir__stream_threshold_set(before);
  xir_compiler_destroy(cc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_next_row_loads),
      cmocka_unit_test(test_stream_measured_threshold),
      cmocka_unit_test(test_stream_launch_reduces),
      cmocka_unit_test(test_prefetch_offsets),
      cmocka_unit_test(test_placed_inputs),
      cmocka_unit_test(test_prefetch_in_ir),
      cmocka_unit_test(test_prefetch_math_only_on_zen),
      cmocka_unit_test(test_prefetch_past_the_end),
      cmocka_unit_test(test_prefetch_stays_inside),
      cmocka_unit_test(test_prefetch_guard_is_the_last_element),
      cmocka_unit_test(test_prefetch_stays_in_call),
      cmocka_unit_test(test_launch_tasks_home_stride),
      cmocka_unit_test(test_fill_loop_does_not_prefetch),
      cmocka_unit_test(test_early_fill_aligned_lines),
      cmocka_unit_test(test_prefetch_spread_over_packets),
      cmocka_unit_test(test_streaming_stores),
      cmocka_unit_test(test_tail_packets_stream),
      cmocka_unit_test(test_unaligned_rows_stream),
      cmocka_unit_test(test_half_hoist_loads_are_contiguous),
      cmocka_unit_test(test_streaming_stores_in_ir_at_l1),
      cmocka_unit_test(test_stream_launch_rule),
      cmocka_unit_test(test_far_launch),
      cmocka_unit_test(test_packed_bits_follow_changes),
      cmocka_unit_test(test_stream_launch_half_l1),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

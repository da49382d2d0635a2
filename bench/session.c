/* bench/session.c — what a call of the one-call API costs beyond the kernel (not a test; never
 * run by CTest).
 *
 *   bench_session [kernel] [shape] [calls]   (default rmsnorm R=1,C=64 200000)
 *
 * A session of 2 workers with the default plan options; the kernel prepared once. Prints the
 * best of 5 rounds of `calls` back-to-back calls each, ns a call, for:
 *   session_run     xir_session_run with the kernel's name and the shape text (the run memo)
 *   session_launch  xir_session_launch of the prepared kernel
 *   pack            xir_kernel_pack_args alone (the slots of the prepared kernel)
 *   pack + entry    xir_kernel_pack_args, then the kernel's entry on every block, no runtime
 *   entry           the entry alone on slots packed once
 * Buffers are 64-byte aligned, inputs nonzero; the trailing defaulted scalars are left out of
 * the session calls (as a user writes them). rmsnorm and layernorm only (their parameter lists
 * are written here). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xir_session.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void die(const char *what, const xir_diag *d) {
  fprintf(stderr, "bench_session: %s: %s\n", what, d->msg);
  exit(1);
}

int main(int argc, char **argv) {
  const char *kern = argc > 1 ? argv[1] : "rmsnorm";
  const char *shape = argc > 2 ? argv[2] : "R=1,C=64";
  long calls = argc > 3 ? atol(argv[3]) : 200000;
  int ln = !strcmp(kern, "layernorm");
  if ((!ln && strcmp(kern, "rmsnorm")) || calls < 1) {
    fprintf(stderr, "usage: bench_session [rmsnorm|layernorm] [shape] [calls]\n");
    return 2;
  }
  xir_diag d;
  xir_session *s;
  xir_session_options so = {.workers = 2};
  if (xir_session_create(&so, &s, &d)) die("session", &d);
  const xir_program *p;
  xir_shape sh;
  const xir_prepared *k;
  if (xir_session_program(s, kern, &p, &d) || xir_shape_parse(p, shape, &sh, &d) ||
      xir_session_prepare(s, p, &sh, &k, &d))
    die(shape, &d);
  size_t n = 1, cols = 1;
  for (int i = 0; i < xir_program_num_dims(p); i++) n *= (size_t)sh.dims[i];
  cols = (size_t)sh.dims[xir_program_num_dims(p) - 1];
  size_t bytes = (n * sizeof(float) + 63) / 64 * 64, wbytes = (cols * sizeof(float) + 63) / 64 * 64;
  float *x = aligned_alloc(64, bytes), *y = aligned_alloc(64, bytes);
  float *w = aligned_alloc(64, wbytes), *b = aligned_alloc(64, wbytes);
  if (!x || !y || !w || !b) return 1;
  for (size_t i = 0; i < n; i++) x[i] = 0.3f + 0.1f * (float)(i % 7);
  for (size_t i = 0; i < cols; i++) w[i] = 1.0f + 0.01f * (float)(i % 5), b[i] = 0.5f;
  xir_arg a[5] = {{.in = x}, {.in = w}, {.out = y}};
  if (ln) a[2] = (xir_arg){.in = b}, a[3] = (xir_arg){.out = y};
  int na = ln ? 4 : 3, np = xir_program_num_params(p);
  xir_arg full[5];
  memcpy(full, a, sizeof a);
  for (int i = na; i < np; i++) full[i] = (xir_arg){.use_default = 1};
  const xir_kernel *kk = xir_prepared_kernel(k);
  _Alignas(64) unsigned char slots[4096];
  if (xir_kernel_args_size(kk) > sizeof slots) return 1;
  xir_entry_fn fn = xir_kernel_entry(kk);
  uint64_t L = xir_kernel_blocks(kk);
  if (xir_kernel_pack_args(kk, full, slots, &d)) die("pack", &d);
  double best[5] = {1e300, 1e300, 1e300, 1e300, 1e300};
  for (int round = 0; round < 5; round++) {
    double t[6];
    t[0] = now_ns();
    for (long i = 0; i < calls; i++)
      if (xir_session_run(s, kern, shape, a, na, &d)) die("run", &d);
    t[1] = now_ns();
    for (long i = 0; i < calls; i++)
      if (xir_session_launch(s, k, a, na, &d)) die("launch", &d);
    t[2] = now_ns();
    for (long i = 0; i < calls; i++) xir_kernel_pack_args(kk, full, slots, &d);
    t[3] = now_ns();
    for (long i = 0; i < calls; i++) {
      xir_kernel_pack_args(kk, full, slots, &d);
      fn(slots, 0, L);
    }
    t[4] = now_ns();
    for (long i = 0; i < calls; i++) fn(slots, 0, L);
    t[5] = now_ns();
    for (int j = 0; j < 5; j++)
      if ((t[j + 1] - t[j]) / (double)calls < best[j]) best[j] = (t[j + 1] - t[j]) / (double)calls;
  }
  printf("%s %s (2 workers, best of 5 x %ld calls), ns a call:\n", kern, shape, calls);
  static const char *names[5] = {"session_run", "session_launch", "pack", "pack + entry", "entry"};
  for (int j = 0; j < 5; j++) printf("  %-16s %8.1f\n", names[j], best[j]);
  free(x), free(y), free(w), free(b);
  xir_session_destroy(s);
  return 0;
}

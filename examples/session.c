/* session.c — RMSNorm then SwiGLU through a session, checked against plain C (the README's example). */
#include <math.h>
#include <stdio.h>
#include "xir_session.h"
enum { R = 64, C = 4096 };
static float x[R * C], w[C], g[R * C], h[R * C], y[R * C];

int main(void) {
  for (int i = 0; i < R * C; i++) x[i] = sinf(i * 0.01f), g[i] = cosf(i * 0.02f);
  for (int j = 0; j < C; j++) w[j] = 1.0f + 0.001f * j;
  xir_diag d = {0};
  xir_session *s = NULL;
  xir_arg norm[] = {{.in = x}, {.in = w}, {.out = h}}; /* h = rmsnorm(x, w), eps = 1e-5 */
  xir_arg act[] = {{.in = g}, {.in = h}, {.out = y}};  /* y = silu(g) * h */
  xir_status st = xir_session_create(NULL, &s, &d);
  if (!st) st = xir_session_run(s, "rmsnorm", "R=64,C=4096", norm, 3, &d);
  if (!st) st = xir_session_run(s, "swiglu", "R=64,C=4096", act, 3, &d);
  xir_session_destroy(s);
  if (st) return fprintf(stderr, "xir: %s\n", d.msg), 1;
  double err = 0;
  for (int r = 0; r < R; r++) {
    double ss = 0;
    for (int j = 0; j < C; j++) ss += (double)x[r * C + j] * x[r * C + j];
    for (int j = 0, i = r * C; j < C; j++, i++)
      err = fmax(err, fabs(y[i] - g[i] / (1 + exp(-g[i])) * x[i] / sqrt(ss / C + 1e-5) * w[j]));
  }
  printf("xir %s: rmsnorm + swiglu %dx%d max abs err %.2g: %s\n", xir_version(), R, C, err,
         err < 1e-4 ? "ok" : "FAIL");
  return err >= 1e-4;
}

/* testutil.c — guarded buffers (see testutil.h). */
#include "testutil.h"
#include <stdlib.h>
#include <string.h>

static const uint32_t kSentinel = 0x7fa5a5a5u; /* a quiet NaN with a payload */

int guarded_alloc(guarded_f32 *g, size_t n) {
  g->n = n;
  g->base = malloc((n + 2 * XIR_GUARD_FLOATS) * sizeof(float));
  if (!g->base) return -1;
  for (size_t i = 0; i < n + 2 * XIR_GUARD_FLOATS; i++) memcpy(&g->base[i], &kSentinel, 4);
  g->data = g->base + XIR_GUARD_FLOATS;
  return 0;
}

int guarded_intact(const guarded_f32 *g) {
  for (size_t i = 0; i < XIR_GUARD_FLOATS; i++) {
    uint32_t a, b;
    memcpy(&a, &g->base[i], 4);
    memcpy(&b, &g->data[g->n + i], 4);
    if (a != kSentinel || b != kSentinel) return 0;
  }
  return 1;
}

void guarded_free(guarded_f32 *g) {
  free(g->base);
  g->base = g->data = NULL;
}

int test_quick(void) { return getenv("XIR_TEST_QUICK") != NULL; }

size_t thin_start(size_t n, size_t first, size_t step) {
  size_t i = step ? first % step : 0;
  return i < n ? i : 0;
}

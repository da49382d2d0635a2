/* faultalloc.c — see faultalloc.h. */
#include "faultalloc.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "xir_status.h"

static _Atomic long g_calls, g_fail_at, g_live;
static _Atomic int g_persistent, g_injected;

static int should_fail(void) {
  long n = atomic_fetch_add(&g_calls, 1) + 1;
  long k = atomic_load(&g_fail_at);
  if (k > 0 && (n == k || (atomic_load(&g_persistent) && n > k))) {
    atomic_store(&g_injected, 1);
    return 1;
  }
  return 0;
}

static void *fa_alloc(void *ud, size_t n) {
  (void)ud;
  if (should_fail()) return NULL;
  void *p = malloc(n);
  if (p) atomic_fetch_add(&g_live, 1);
  return p;
}

static void *fa_realloc(void *ud, void *p, size_t n) {
  (void)ud;
  if (should_fail()) return NULL;
  void *q = realloc(p, n);
  if (q && !p) atomic_fetch_add(&g_live, 1);
  return q;
}

static void fa_free(void *ud, void *p) {
  (void)ud;
  if (!p) return;
  atomic_fetch_sub(&g_live, 1);
  free(p);
}

void fa_install(void) {
  xir_allocator a = {fa_alloc, fa_realloc, fa_free, NULL};
  fa_arm(0, 0);
  xir_set_allocator(&a);
}

void fa_uninstall(void) { xir_set_allocator(NULL); }

void fa_arm(long k, int persistent) {
  atomic_store(&g_fail_at, k);
  atomic_store(&g_persistent, persistent);
  atomic_store(&g_injected, 0);
  atomic_store(&g_calls, 0);
}

long fa_calls(void) { return atomic_load(&g_calls); }
int fa_injected(void) { return atomic_load(&g_injected); }
long fa_live(void) { return atomic_load(&g_live); }

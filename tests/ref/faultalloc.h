/* faultalloc.h — an injectable allocator for allocation-failure sweeps (tests only).
 *
 * Installed through xir_set_allocator. It counts the calls to alloc and realloc together, can fail
 * the k-th of them (once, or that one and every later one), and counts the blocks alive, so that
 * a test can check that an error path freed everything even without LeakSanitizer. Thread-safe
 * (the runtime's pool threads may allocate while it is installed). */
#ifndef XIR_FAULTALLOC_H
#define XIR_FAULTALLOC_H

#include <stdint.h>

void fa_install(void);   /* xir_set_allocator(the fault allocator), disarmed */
void fa_uninstall(void); /* xir_set_allocator(NULL) */
/* Resets the call count; fails call k (1-based) and, when persistent, every call after it.
 * k = 0 disarms. */
void fa_arm(long k, int persistent);
long fa_calls(void);     /* alloc + realloc calls since the last fa_arm */
int fa_injected(void);   /* 1 when a failure was injected since the last fa_arm */
long fa_live(void);      /* blocks allocated through the fault allocator and not yet freed */

#endif

/* util.h — internal helpers every module uses: allocation through the injectable allocator,
 * diagnostics, growable arrays and a bump arena. Nothing here is public API. */
#ifndef XIR_UTIL_H
#define XIR_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "xir_status.h"

void *xir__malloc(size_t n);
void *xir__calloc(size_t n, size_t size);
void *xir__realloc(void *p, size_t n);
void xir__free(void *p);
char *xir__strdup(const char *s);

/* Sets d (if not NULL) and returns s. Position-free. */
xir_status xir__err(xir_diag *d, xir_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets d with a source position. */
xir_status xir__err_at(xir_diag *d, xir_status s, const char *file, int line, int col,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Grows *buf (element size esz) so that it holds at least need elements; *cap is updated.
 * Returns 0 on success, -1 when out of memory (the old buffer stays valid). */
int xir__grow(void **buf, size_t *cap, size_t need, size_t esz);

/* A bump arena: many small allocations freed in one call. */
typedef struct xir_arena_chunk xir_arena_chunk;
typedef struct xir_arena {
  xir_arena_chunk *head;
} xir_arena;
void *xir__arena_alloc(xir_arena *a, size_t n); /* zeroed, 16-byte aligned; NULL on OOM */
char *xir__arena_strdup(xir_arena *a, const char *s);
void xir__arena_free(xir_arena *a);

/* CLOCK_MONOTONIC in nanoseconds (all of xir's timings use it). */
double xir__now_ns(void);

#define XIR_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif

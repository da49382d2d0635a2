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

/* A growing string: xir__sbuf_put appends printf-style; on out-of-memory `oom` is set and later
 * puts do nothing. Zero-initialize; free `s` with xir__free. */
typedef struct xir__sbuf {
  char *s;
  size_t len, cap;
  int oom;
} xir__sbuf;
void xir__sbuf_put(xir__sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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

/* Median of n values (the array is sorted in place). n = 0 gives NaN; an even count gives the
 * mean of the middle two. The one median of xir: the runtime, calibration, bench records and the
 * micro-benchmarks all use it. */
double xir__median(double *v, size_t n);

/* ---- memory actually available ------------------------------------------------------------
 * Linux overcommits: a huge malloc succeeds and the process is OOM-killed later, when the pages
 * are touched. So before allocating large buffers, xir compares the bytes it needs with what the
 * machine can give: the smallest of
 *   - every cgroup limit on the way from this process's cgroup up to the hierarchy's root:
 *     v2 memory.max - memory.current, v1 memory.limit_in_bytes - memory.usage_in_bytes;
 *   - /proc/meminfo MemAvailable;
 *   - the environment variable XIR_MEM_AVAILABLE (bytes), a test hook that lowers the limit.
 * Unknown figures (no cgroup limit, no /proc) impose nothing. */
typedef struct xir_mem_info {
  uint64_t available;     /* the smallest of the known figures (UINT64_MAX: none known) */
  uint64_t cgroup;        /* cgroup limit minus usage (UINT64_MAX: no limit found) */
  uint64_t meminfo;       /* MemAvailable (UINT64_MAX: unknown) */
  uint64_t env;           /* XIR_MEM_AVAILABLE (UINT64_MAX: not set) */
  char cgroup_dir[512];   /* where the tightest cgroup limit was found */
} xir_mem_info;

/* Probes the figures. root: where the cgroup hierarchies are mounted ("/sys/fs/cgroup");
 * proc_cgroup, meminfo: "/proc/self/cgroup", "/proc/meminfo". Any of them may be NULL (skipped);
 * the parameters exist so that tests can point them at fake files. */
void xir__mem_probe(const char *root, const char *proc_cgroup, const char *meminfo,
                    xir_mem_info *out);

/* The bytes this process may still allocate (xir_mem_info.available of this process's cgroup,
 * /proc/meminfo and XIR_MEM_AVAILABLE; UINT64_MAX when none says). */
uint64_t xir__mem_available(void);

/* XIR_ERR_NOMEM, with a message giving the bytes needed and the bytes available (and where the
 * figure comes from), when `bytes` exceed the memory available; XIR_OK otherwise. `what` names
 * the buffers ("the buffers of 'rmsnorm'"). */
xir_status xir__mem_check(uint64_t bytes, const char *what, xir_diag *d);

#define XIR_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif

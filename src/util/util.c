/* util.c — the injectable allocator, diagnostics and the bump arena (see util.h). */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *default_alloc(void *ud, size_t n) { (void)ud; return malloc(n); }
static void *default_realloc(void *ud, void *p, size_t n) { (void)ud; return realloc(p, n); }
static void default_free(void *ud, void *p) { (void)ud; free(p); }

static xir_allocator g_alloc = {default_alloc, default_realloc, default_free, NULL};

void xir_set_allocator(const xir_allocator *a) {
  if (a && a->alloc && a->realloc && a->free) g_alloc = *a;
  else g_alloc = (xir_allocator){default_alloc, default_realloc, default_free, NULL};
}

void *xir__malloc(size_t n) { return g_alloc.alloc(g_alloc.ud, n ? n : 1); }
void *xir__calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  size_t total = n * size;
  void *p = xir__malloc(total);
  if (p) memset(p, 0, total ? total : 1);
  return p;
}
void *xir__realloc(void *p, size_t n) { return g_alloc.realloc(g_alloc.ud, p, n ? n : 1); }
void xir__free(void *p) {
  if (p) g_alloc.free(g_alloc.ud, p);
}
char *xir__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *r = xir__malloc(n);
  if (r) memcpy(r, s, n);
  return r;
}

const char *xir_status_name(xir_status s) {
  switch (s) {
    case XIR_OK: return "ok";
    case XIR_ERR_NOMEM: return "out of memory";
    case XIR_ERR_INVALID_ARG: return "invalid argument";
    case XIR_ERR_PARSE: return "parse error";
    case XIR_ERR_VERIFY: return "verification error";
    case XIR_ERR_IO: return "i/o error";
    case XIR_ERR_FORMAT: return "format error";
    case XIR_ERR_NOT_FOUND: return "not found";
    case XIR_ERR_UNSUPPORTED: return "unsupported";
    case XIR_ERR_LLVM: return "llvm error";
    case XIR_ERR_RUNTIME: return "runtime error";
    case XIR_ERR_BUDGET: return "search budget exceeded";
    case XIR_ERR_COST: return "cost error";
    case XIR_ERR_BUSY: return "busy";
  }
  return "unknown status";
}

void xir_diag_clear(xir_diag *d) {
  if (!d) return;
  memset(d, 0, sizeof *d);
}

char *xir_diag_format(const xir_diag *d, char *buf, size_t cap) {
  if (!buf || !cap) return buf;
  if (!d) {
    snprintf(buf, cap, "error: (no diagnostic)");
  } else if (d->line > 0) {
    snprintf(buf, cap, "%s:%d:%d: error: %s", d->file[0] ? d->file : "<input>", d->line, d->col,
             d->msg);
  } else {
    snprintf(buf, cap, "error: %s", d->msg[0] ? d->msg : xir_status_name(d->status));
  }
  return buf;
}

static void vset(xir_diag *d, xir_status s, const char *file, int line, int col, const char *fmt,
                 va_list ap) {
  if (!d) return;
  d->status = s;
  d->line = line;
  d->col = col;
  snprintf(d->file, sizeof d->file, "%s", file ? file : "");
  vsnprintf(d->msg, sizeof d->msg, fmt, ap);
}

xir_status xir__err(xir_diag *d, xir_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vset(d, s, NULL, 0, 0, fmt, ap);
  va_end(ap);
  return s;
}

xir_status xir__err_at(xir_diag *d, xir_status s, const char *file, int line, int col,
                       const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vset(d, s, file, line, col, fmt, ap);
  va_end(ap);
  return s;
}

int xir__grow(void **buf, size_t *cap, size_t need, size_t esz) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap : 8;
  while (nc < need) {
    if (nc > SIZE_MAX / 2 / esz) return -1;
    nc *= 2;
  }
  void *nb = xir__realloc(*buf, nc * esz);
  if (!nb) return -1;
  *buf = nb;
  *cap = nc;
  return 0;
}

struct xir_arena_chunk {
  xir_arena_chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

void *xir__arena_alloc(xir_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (!n) n = 16;
  xir_arena_chunk *c = a->head;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > 8192 ? n : 8192;
    c = xir__malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->next = a->head;
    c->used = 0;
    c->cap = cap;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}

char *xir__arena_strdup(xir_arena *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *r = xir__arena_alloc(a, n);
  if (r) memcpy(r, s, n);
  return r;
}

void xir__arena_free(xir_arena *a) {
  xir_arena_chunk *c = a->head;
  while (c) {
    xir_arena_chunk *n = c->next;
    xir__free(c);
    c = n;
  }
  a->head = NULL;
}

double xir__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

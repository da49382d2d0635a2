/* util.c — the injectable allocator, diagnostics and the bump arena (see util.h). */
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
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

/* ---- memory actually available ------------------------------------------------------------ */

/* Reads the first line of dir/name as an unsigned number; "max" (no limit) and errors give -1. */
static int read_u64_file(const char *dir, const char *name, uint64_t *v) {
  char path[1024], line[64];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return -1;
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char *ok = fgets(line, sizeof line, f);
  fclose(f);
  if (!ok || line[0] < '0' || line[0] > '9') return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(line, &end, 10);
  if (errno || (*end && *end != '\n')) return -1;
  *v = (uint64_t)x;
  return 0;
}

/* Limits of cgroup dir `dir` (v2, then v1 names); updates out when tighter. */
static void cgroup_dir_limit(const char *dir, xir_mem_info *out) {
  static const char *names[2][2] = {{"memory.max", "memory.current"},
                                    {"memory.limit_in_bytes", "memory.usage_in_bytes"}};
  for (int k = 0; k < 2; k++) {
    uint64_t lim, cur;
    if (read_u64_file(dir, names[k][0], &lim) || read_u64_file(dir, names[k][1], &cur)) continue;
    if (lim >= ((uint64_t)1 << 62)) continue; /* v1 writes "no limit" as a huge number */
    uint64_t a = lim > cur ? lim - cur : 0;
    if (a < out->cgroup) {
      out->cgroup = a;
      snprintf(out->cgroup_dir, sizeof out->cgroup_dir, "%s", dir);
    }
  }
}

/* Every directory from root/<sub><path> up to root/<sub>. */
static void cgroup_walk(const char *root, const char *sub, const char *path, xir_mem_info *out) {
  char dir[1024];
  int n = snprintf(dir, sizeof dir, "%s%s%s%s", root, *sub ? "/" : "", sub, path);
  if (n <= 0 || n >= (int)sizeof dir) return;
  size_t base = strlen(root) + (*sub ? 1 + strlen(sub) : 0);
  for (;;) {
    size_t len = strlen(dir);
    while (len > base && dir[len - 1] == '/') dir[--len] = 0;
    cgroup_dir_limit(dir, out);
    if (len <= base) break;
    char *slash = strrchr(dir + base, '/');
    if (!slash) {
      dir[base] = 0;
      continue;
    }
    *slash = 0;
  }
}

void xir__mem_probe(const char *root, const char *proc_cgroup, const char *meminfo,
                    xir_mem_info *out) {
  out->available = out->cgroup = out->meminfo = out->env = UINT64_MAX;
  out->cgroup_dir[0] = 0;
  if (root) {
    FILE *f = proc_cgroup ? fopen(proc_cgroup, "r") : NULL;
    int walked = 0;
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
      /* "0::/path" (v2) or "4:memory:/path" (v1) */
      line[strcspn(line, "\n")] = 0;
      char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
      if (!c2) continue;
      *c2 = 0;
      const char *ctrl = c1 + 1, *path = c2 + 1;
      if (!*ctrl) cgroup_walk(root, "", path, out), walked = 1;
      else if (strstr(ctrl, "memory")) cgroup_walk(root, "memory", path, out), walked = 1;
    }
    if (f) fclose(f);
    /* a namespaced view (or no /proc): the hierarchies' roots are this process's cgroups */
    cgroup_dir_limit(root, out);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/memory", root);
    cgroup_dir_limit(dir, out);
    (void)walked;
  }
  FILE *f = meminfo ? fopen(meminfo, "r") : NULL;
  char line[256];
  while (f && fgets(line, sizeof line, f)) {
    unsigned long long kb;
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
      out->meminfo = kb > UINT64_MAX / 1024 ? UINT64_MAX : (uint64_t)kb * 1024;
      break;
    }
  }
  if (f) fclose(f);
  const char *env = getenv("XIR_MEM_AVAILABLE");
  if (env && *env >= '0' && *env <= '9') {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(env, &end, 10);
    if (!errno && !*end) out->env = (uint64_t)v;
  }
  out->available = out->cgroup;
  if (out->meminfo < out->available) out->available = out->meminfo;
  if (out->env < out->available) out->available = out->env;
}

static void fmt_bytes(uint64_t b, char *buf, size_t cap) {
  if (b == UINT64_MAX) snprintf(buf, cap, "unknown");
  else snprintf(buf, cap, "%" PRIu64 " bytes (%.1f MiB)", b, (double)b / 1048576.0);
}

static void mem_probe_here(xir_mem_info *m) {
  xir__mem_probe("/sys/fs/cgroup", "/proc/self/cgroup", "/proc/meminfo", m);
}

uint64_t xir__mem_available(void) {
  xir_mem_info m;
  mem_probe_here(&m);
  return m.available;
}

xir_status xir__mem_check(uint64_t bytes, const char *what, xir_diag *d) {
  xir_mem_info m;
  mem_probe_here(&m);
  if (bytes <= m.available) return XIR_OK;
  char need[64], avail[64], cg[64], mi[64], env[64] = "";
  fmt_bytes(bytes, need, sizeof need);
  fmt_bytes(m.available, avail, sizeof avail);
  fmt_bytes(m.cgroup, cg, sizeof cg);
  fmt_bytes(m.meminfo, mi, sizeof mi);
  if (m.env != UINT64_MAX) snprintf(env, sizeof env, "; XIR_MEM_AVAILABLE %" PRIu64, m.env);
  return xir__err(d, XIR_ERR_NOMEM,
                  "out of memory: %s need %s, but only %s are available (cgroup limit minus "
                  "usage: %s%s%s; MemAvailable: %s%s)", what, need, avail, cg,
                  m.cgroup_dir[0] ? " in " : "", m.cgroup_dir, mi, env);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

double xir__median(double *v, size_t n) {
  if (!n) return NAN;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- the version and the cache directory (public: xir.h) ---- */

#ifndef XIR_VERSION
#define XIR_VERSION "0"
#endif
#ifndef XIR_SOURCE_FINGERPRINT /* a build outside CMake (tests/fuzz/run_fuzz.sh) defines it */
#include "xir_fingerprint.h"   /* generated in the build tree by cmake/fingerprint.cmake */
#endif

const char *xir_version(void) { return XIR_VERSION; }

const char *xir_source_fingerprint(void) { return XIR_SOURCE_FINGERPRINT; }

xir_status xir_cache_dir(char *buf, size_t cap, xir_diag *d) {
  if (!buf || cap == 0) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_cache_dir needs a buffer");
  const char *x = getenv("XIR_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (x && *x) n = snprintf(buf, cap, "%s", x);
  else if (xdg && *xdg) n = snprintf(buf, cap, "%s/xir", xdg);
  else if (home && *home) n = snprintf(buf, cap, "%s/.cache/xir", home);
  else return xir__err(d, XIR_ERR_NOT_FOUND, "no cache directory: XIR_CACHE_DIR, XDG_CACHE_HOME and HOME are unset");
  if (n < 0 || (size_t)n >= cap) return xir__err(d, XIR_ERR_INVALID_ARG, "the cache directory path is too long");
  return XIR_OK;
}

void xir__sbuf_put(xir__sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = 1;
      return;
    }
    if (b->s && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    if (xir__grow((void **)&b->s, &b->cap, b->len + (size_t)n + 256, 1)) {
      b->oom = 1;
      return;
    }
  }
}

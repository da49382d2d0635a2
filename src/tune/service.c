/* service.c — the machine's service model, measured once and kept in the user's cache, and the
 * planner defaults built on it.
 *
 *   xir_plan_options_default ─► xir_service_model (once per process) ─► cache file valid for
 *   this CPU, worker count, xir version and source fingerprint?  ── yes ─► its figures
 *                                             └─ no ──► xir_calibrate (≈ 1 s) ─► write the file
 *
 * This module sits above plan, lower and runtime: the calibration compiles and runs kernels. The
 * planner itself never measures anything; it only receives coefficients. The file is plain text,
 * one `name value` line per figure, closed by the SHA-256 of everything before it; a file that
 * does not parse, whose hash or key differs, or whose figures are not finite and ≥ 0 is measured
 * again and replaced (written to a temporary name and renamed, so concurrent processes never read
 * half a file). XIR_NO_CALIBRATION_FILE=1 neither reads nor writes it. Every build of other
 * sources leaves a file of its own; a process that writes its file removes the service files
 * nobody has written for XIR__SERVICE_STALE_DAYS days (prune_stale). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lower/jit.h"
#include "lower/stream.h"
#include "tune/service.h"
#include "util/util.h"
#include "xir_compile.h"
#include "xir_plan.h"

static const char kMagic[] = "xir service model 5";


/* mkdir -p */
static int make_dirs(const char *path) {
  char tmp[1024];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return -1;
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      if (mkdir(tmp, 0755) && errno != EEXIST) return -1;
      *p = '/';
    }
  return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

/* The figures of a calibration, in file order. */
#define SERVICE_FIELDS(X) \
  X(ns_per_arith) X(ns_per_byte) X(ns_per_block) X(ns_per_task) X(ns_activation) X(probe_ns[0]) \
  X(probe_ns[1]) X(mem_bytes[0]) X(mem_bytes[1]) X(mem_bytes[2]) X(mem_ns[0]) X(mem_ns[1])        \
  X(mem_ns[2]) X(ns_per_math) X(ns_per_step[0]) X(ns_per_step[1]) X(stream_bytes) \
  X(ns_per_task_far) X(ns_per_hw_math)

static void key_of(const char *cpu, const char *features, uint32_t workers, char *key, size_t cap) {
  snprintf(key, cap, "xir %s source %s llvm %s cpu %s workers %u features %s", XIR_VERSION,
           xir_source_fingerprint(), xir_llvm_version(), cpu, workers, features);
}

static void file_of(const char *dir, const char *key, char *path, size_t cap) {
  char h[65];
  xir__jit_sha256_hex(key, strlen(key), h);
  h[16] = 0;
  if (snprintf(path, cap, "%s/service-%s.txt", dir, h) >= (int)cap) path[0] = 0;
}

static size_t format_body(const char *key, const xir_calibration *c, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "%s\nkey %s\n", kMagic, key);
#define PUT(f) \
  if (n < cap) n += (size_t)snprintf(buf + n, cap - n, "%s %.17g\n", #f, c->f);
  SERVICE_FIELDS(PUT)
#undef PUT
  return n;
}

/* Parses and validates a file's text; 0 when it is a valid model for `key`. */
static int parse_file(const char *text, const char *key, xir_calibration *out) {
  const char *h = strstr(text, "\nsha256 ");
  if (!h) return -1;
  size_t body = (size_t)(h - text) + 1;
  char want[65];
  xir__jit_sha256_hex(text, body, want);
  if (strncmp(h + 8, want, 64) != 0 || (h[72] != '\n' && h[72] != 0)) return -1;
  xir_calibration c;
  memset(&c, 0, sizeof c);
  char expect[4096];
  size_t n = format_body(key, &c, expect, sizeof expect);
  (void)n;
  /* the header and key must match exactly */
  size_t head = strlen(kMagic) + 1 + 4 + strlen(key) + 1;
  if (body < head || strncmp(text, expect, head) != 0) return -1;
  const char *p = text + head;
#define GET(f)                                                              \
  {                                                                         \
    size_t l = strlen(#f);                                                  \
    if (strncmp(p, #f, l) || p[l] != ' ') return -1;                        \
    char *end;                                                              \
    errno = 0;                                                              \
    c.f = strtod(p + l + 1, &end);                                          \
    /* below 0 only a reduction step (the step credit, XIR_STEP_CREDIT_OPS) */ \
    if (errno || end == p + l + 1 || *end != '\n' || !isfinite(c.f) ||        \
        (c.f < 0 && strncmp(#f, "ns_per_step", 11)))                          \
      return -1;                                                            \
    p = end + 1;                                                            \
  }
  SERVICE_FIELDS(GET)
#undef GET
  if (p != text + body) return -1;
  *out = c;
  return 0;
}

static int read_file(const char *path, const char *key, xir_calibration *out) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  int big = !feof(f);
  fclose(f);
  if (big) return -1;
  buf[n] = 0;
  if (strlen(buf) != n) return -1; /* a NUL byte */
  return parse_file(buf, key, out);
}

static xir_status write_file(const char *dir, const char *path, const char *key,
                             const xir_calibration *c, xir_diag *d) {
  char body[8192], h[65], tmp[1100];
  size_t n = format_body(key, c, body, sizeof body - 80);
  xir__jit_sha256_hex(body, n, h);
  n += (size_t)snprintf(body + n, sizeof body - n, "sha256 %s\n", h);
  if (make_dirs(dir))
    return xir__err(d, XIR_ERR_IO, "cannot create the cache directory '%s': %s", dir, strerror(errno));
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return xir__err(d, XIR_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
  int bad = fwrite(body, 1, n, f) != n;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path)) {
    remove(tmp);
    return xir__err(d, XIR_ERR_IO, "cannot write '%s'", path);
  }
  return XIR_OK;
}

/* 1 when name is a service file of this directory's layout: service-<16 hex>.txt, its lock
 * (.txt.lock) or a temporary of write_file (.txt.<pid>.tmp). */
static int service_name(const char *name) {
  if (strncmp(name, "service-", 8) != 0) return 0;
  const char *p = name + 8;
  for (int i = 0; i < 16; i++, p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return 0;
  if (strncmp(p, ".txt", 4) != 0) return 0;
  p += 4;
  if (!*p || !strcmp(p, ".lock")) return 1;
  if (*p++ != '.' || !(*p >= '0' && *p <= '9')) return 0;
  while (*p >= '0' && *p <= '9') p++;
  return !strcmp(p, ".tmp");
}

/* Removes the service files of dir (service_name) last written more than
 * XIR__SERVICE_STALE_DAYS days ago, except the file at keep and its lock: another build's model
 * is never read by this one, and a build still in use after that long measures again (seconds). */
static void prune_stale(const char *dir, const char *keep) {
  DIR *dp = opendir(dir);
  if (!dp) return;
  time_t now = time(NULL);
  size_t kn = strlen(keep);
  struct dirent *e;
  while ((e = readdir(dp))) {
    char p[1400];
    if (!service_name(e->d_name) ||
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || !strncmp(p, keep, kn))
      continue;
    struct stat sb;
    if (!stat(p, &sb) && S_ISREG(sb.st_mode) &&
        difftime(now, sb.st_mtime) > XIR__SERVICE_STALE_DAYS * 86400.0)
      remove(p);
  }
  closedir(dp);
}

static uint32_t host_workers(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > XIR_RUNTIME_MAX_WORKERS) n = XIR_RUNTIME_MAX_WORKERS;
  return (uint32_t)n;
}

/* workers 0: the count the planner defaults use (the online CPUs, at least 2). */
static uint32_t model_workers(uint32_t workers) {
  if (workers) return workers;
  uint32_t w = host_workers();
  return w < 2 ? 2 : w;
}

xir_status xir_service_model_path(uint32_t workers, char *buf, size_t cap, xir_diag *d) {
  workers = model_workers(workers);
  if (!buf || cap == 0) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_service_model_path needs a buffer");
  xir_compiler *cc = NULL;
  xir_status st = xir_compiler_create(NULL, &cc, d);
  if (st) return st;
  char dir[1024], key[2048];
  if (!(st = xir_cache_dir(dir, sizeof dir, d))) {
    key_of(xir_compiler_cpu(cc), xir_compiler_features(cc), workers, key, sizeof key);
    char path[1100];
    file_of(dir, key, path, sizeof path);
    if (strlen(path) >= cap) st = xir__err(d, XIR_ERR_INVALID_ARG, "buffer too small");
    else snprintf(buf, cap, "%s", path);
  }
  xir_compiler_destroy(cc);
  return st;
}

static xir__measure_fn g_measure = xir_calibrate;

xir__measure_fn xir__service_set_measure(xir__measure_fn fn) {
  xir__measure_fn old = g_measure;
  g_measure = fn ? fn : xir_calibrate;
  return old;
}

xir_status xir_service_model(uint32_t workers, int refresh, xir_calibration *out, int *from_file,
                             xir_diag *d) {
  if (!out) return xir__err(d, XIR_ERR_INVALID_ARG, "xir_service_model needs an output");
  if (from_file) *from_file = 0;
  workers = model_workers(workers);
  if (workers < 2 || workers > XIR_RUNTIME_MAX_WORKERS)
    return xir__err(d, XIR_ERR_INVALID_ARG,
                    "the service model is measured with 2 to %d workers, not %u",
                    XIR_RUNTIME_MAX_WORKERS, workers);
  xir_compiler *cc = NULL;
  xir_runtime *rt = NULL;
  /* the probes' kernels stay out of the user's kernel cache */
  xir_compiler_options co = {.no_kernel_cache = 1};
  xir_status st = xir_compiler_create(&co, &cc, d);
  if (st) return st;
  const char *off = getenv("XIR_NO_CALIBRATION_FILE");
  int use_file = !(off && *off && strcmp(off, "0") != 0);
  char dir[1024] = "", key[2048], path[1100] = "";
  int lock_fd = -1; /* the lock on path.lock while this process measures (closing releases it) */
  if (use_file && xir_cache_dir(dir, sizeof dir, NULL) != XIR_OK) use_file = 0;
  if (use_file) {
    key_of(xir_compiler_cpu(cc), xir_compiler_features(cc), workers, key, sizeof key);
    file_of(dir, key, path, sizeof path);
    if (!path[0]) use_file = 0;
    if (use_file && !refresh && read_file(path, key, out) == 0) {
      if (from_file) *from_file = 1;
      goto done;
    }
    /* One process measures, the others wait for its file: processes that calibrate at the same
     * time slow each other's probes down, and their planners would disagree. */
    char lpath[1200];
    snprintf(lpath, sizeof lpath, "%s.lock", path);
    if (use_file && !make_dirs(dir) && (lock_fd = open(lpath, O_RDWR | O_CREAT, 0644)) >= 0) {
      struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
      while (fcntl(lock_fd, F_SETLKW, &fl) == -1 && errno == EINTR) {
      }
      if (!refresh && read_file(path, key, out) == 0) { /* another process measured it */
        if (from_file) *from_file = 1;
        goto done;
      }
    }
  }
  xir_runtime_options ro;
  xir_runtime_options_default(&ro);
  ro.workers = workers;
  if ((st = xir_runtime_create(&ro, &rt, d)) || (st = g_measure(cc, rt, out, d))) goto done;
  /* a file that cannot be written is not an error: the figures are still good for this process */
  if (use_file && write_file(dir, path, key, out, NULL) == XIR_OK) prune_stale(dir, path);
done:
  if (lock_fd >= 0) close(lock_fd);
  xir_runtime_destroy(rt);
  xir_compiler_destroy(cc);
  return st;
}

/* ---- the planner defaults ---- */

static struct {
  pthread_mutex_t mu;
  int state; /* 0 not tried, 1 measured/loaded, -1 failed (priors) */
  xir_cost_coefficients coef;
} g_default = {PTHREAD_MUTEX_INITIALIZER, 0, {{0}, {0}, {0}, 0, 0, {0}, 0}};


const xir_cost_coefficients *xir_service_coefficients(void) {
  pthread_mutex_lock(&g_default.mu);
  if (g_default.state == 0) {
    xir_calibration cal;
    if (xir_service_model(0, 0, &cal, NULL, NULL) == XIR_OK) {
      xir_cost_coefficients_from_calibration(&cal, &g_default.coef);
      /* where this machine's launches start to stream their outputs (0 keeps the prior) */
      xir__stream_threshold_set((int64_t)cal.stream_bytes);
      g_default.state = 1;
    } else {
      g_default.state = -1;
    }
  }
  const xir_cost_coefficients *c = g_default.state == 1 ? &g_default.coef : NULL;
  pthread_mutex_unlock(&g_default.mu);
  return c;
}

void xir_plan_options_default(xir_plan_options *o) {
  if (!o) return;
  xir_plan_options_base(o);
  o->local_lanes = 0;
  o->search_task_grain = 1;
  o->width = 0;
  o->workers = host_workers();
  o->coefficients = xir_service_coefficients();
}

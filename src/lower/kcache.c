/* kcache.c — the on-disk kernel cache (see kcache.h and docs/cache.md).
 *
 * How it thinks:
 * - The key must name everything that determines the object bytes. The versions alone do not:
 *   xir's version string does not change when lower.c or vmath.c does. So the key includes the
 *   GNU build-id of the ELF module that holds this code (libxir.so when xir is a shared library,
 *   the executable when it is linked statically): any rebuilt code gives a new build-id. No
 *   build-id, no disk cache.
 * - Readers trust nothing: magic, key, lengths and the payload SHA-256 are checked before a
 *   byte is used. A damaged file is a miss (and is overwritten by the rebuild).
 * - Writers write <dir>/.<key>.<pid>.<n>.tmp and rename it to <dir>/<key>.xk: rename is atomic,
 *   so a reader opens either the old file or the new one, both whole.
 * - Eviction scans the folder only when this process's running estimate of its size passes the
 *   cap (or every 64 writes, to see other processes' entries), then deletes the oldest entries
 *   (by mtime) until the folder is at 90% of the cap, so a full cache is not rescanned on every
 *   write. */
#include "lower/kcache.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#include "util/util.h"
#include "util/sha256.h"
#include "xir.h"

static const char kMagic[8] = {'X', 'I', 'R', 'K', 'C', '0', '0', '1'};

/* ---- hashing ---- */


void xir__kcache_key(const char *const *parts, size_t n, char out[65]) {
  xir__sha256 c;
  xir__sha256_init(&c);
  for (size_t i = 0; i < n; i++) {
    const char *p = parts[i] ? parts[i] : "";
    char len[24];
    int l = snprintf(len, sizeof len, "%zu:", strlen(p));
    xir__sha256_update(&c, len, (size_t)l);
    xir__sha256_update(&c, p, strlen(p));
  }
  xir__sha256_final_hex(&c, out);
}

/* ---- build-id ---- */

static pthread_once_t g_bid_once = PTHREAD_ONCE_INIT;
static char g_bid[2 * 64 + 1];

static int bid_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t addr = *(const uintptr_t *)data;
  int mine = 0;
  for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && addr >= lo && addr < lo + ph->p_memsz) mine = 1;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    const unsigned char *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) nh;
      memcpy(&nh, p, sizeof nh);
      const unsigned char *name = p + sizeof nh;
      const unsigned char *desc = name + ((nh.n_namesz + 3u) & ~3u);
      const unsigned char *next = desc + ((nh.n_descsz + 3u) & ~3u);
      if (next > end) break;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(name, "GNU", 4) &&
          nh.n_descsz > 0 && nh.n_descsz <= 64) {
        static const char hx[] = "0123456789abcdef";
        for (unsigned k = 0; k < nh.n_descsz; k++) {
          g_bid[2 * k] = hx[desc[k] >> 4];
          g_bid[2 * k + 1] = hx[desc[k] & 15];
        }
        g_bid[2 * nh.n_descsz] = 0;
        return 1;
      }
      p = next;
    }
  }
  return 1; /* the module holding this code has no build-id */
}

static void bid_once(void) {
  const char *(*self)(void) = xir__kcache_build_id;
  uintptr_t addr;
  memcpy(&addr, &self, sizeof addr);
  dl_iterate_phdr(bid_cb, &addr);
}

const char *xir__kcache_build_id(void) {
  pthread_once(&g_bid_once, bid_once);
  return g_bid[0] ? g_bid : NULL;
}

/* ---- configuration ---- */

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

xir_status xir__kcache_open(xir__kcache *kc, int disable, const char *dir, uint64_t max_bytes,
                            xir_diag *d) {
  memset(kc, 0, sizeof *kc);
  kc->max_bytes = max_bytes;
  if (!kc->max_bytes) {
    const char *v = getenv("XIR_KERNEL_CACHE_MAX_BYTES");
    if (v && *v) {
      char *end;
      errno = 0;
      unsigned long long n = strtoull(v, &end, 10);
      if (errno || *end || v[0] == '-' || n == 0)
        return xir__err(d, XIR_ERR_INVALID_ARG,
                        "XIR_KERNEL_CACHE_MAX_BYTES='%s' is not a positive byte count", v);
      kc->max_bytes = n;
    } else {
      kc->max_bytes = XIR__KCACHE_DEFAULT_MAX_BYTES;
    }
  }
  const char *kv = getenv("XIR_KERNEL_CACHE_KEY");
  if (kv && *kv && strcmp(kv, "build") != 0) {
    if (strcmp(kv, "ir") != 0)
      return xir__err(d, XIR_ERR_INVALID_ARG,
                      "XIR_KERNEL_CACHE_KEY='%.60s' is neither 'build' nor 'ir'", kv);
    kc->by_ir = 1;
  }
  if (disable) {
    snprintf(kc->why_off, sizeof kc->why_off, "disabled by the compiler options");
    return XIR_OK;
  }
  if (env_on("XIR_NO_KERNEL_CACHE")) {
    snprintf(kc->why_off, sizeof kc->why_off, "disabled by XIR_NO_KERNEL_CACHE");
    return XIR_OK;
  }
  if (!kc->by_ir && !xir__kcache_build_id()) {
    snprintf(kc->why_off, sizeof kc->why_off,
             "disabled: the module holding xir has no GNU build-id to key the code by");
    return XIR_OK;
  }
  int n;
  if (dir && *dir) {
    n = snprintf(kc->dir, sizeof kc->dir, "%s", dir);
  } else {
    char base[1024];
    xir_diag dd;
    if (xir_cache_dir(base, sizeof base, &dd) != XIR_OK) {
      snprintf(kc->why_off, sizeof kc->why_off, "disabled: %.170s", dd.msg);
      return XIR_OK;
    }
    n = snprintf(kc->dir, sizeof kc->dir, "%s/kernels", base);
  }
  if (n < 0 || (size_t)n >= sizeof kc->dir - 80) {
    snprintf(kc->why_off, sizeof kc->why_off, "disabled: the cache folder path is too long");
    kc->dir[0] = 0;
    return XIR_OK;
  }
  kc->enabled = 1;
  return XIR_OK;
}

int xir__kcache_path(const xir__kcache *kc, const char key[65], char *buf, size_t cap) {
  int n = snprintf(buf, cap, "%s/%.64s.xk", kc->dir, key);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* ---- little-endian fields ---- */

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static int is_hex64(const unsigned char *p) {
  for (int i = 0; i < 64; i++)
    if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) return 0;
  return 1;
}

/* Header layout (offsets): 0 magic[8], 8 key[64], 72 payload sha[64] (over bytes 136..end),
 * 136 ir_len u64, 144 obj_size u64, 152 ir sha[64], 216 obj sha[64], 280 IR, then the object. */
enum { OFF_KEY = 8, OFF_PSHA = 72, OFF_PAYLOAD = 136, OFF_IRLEN = 136, OFF_OBJLEN = 144,
       OFF_IRSHA = 152, OFF_OBJSHA = 216 };

/* ---- load ---- */

void xir__kcache_entry_free(xir__kcache_entry *e) {
  if (!e) return;
  xir__free(e->buf);
  memset(e, 0, sizeof *e);
}

xir__kcache_load_result xir__kcache_load(const xir__kcache *kc, const char key[65],
                                         xir__kcache_entry *e, char *note, size_t cap) {
  memset(e, 0, sizeof *e);
  if (note && cap) note[0] = 0;
  if (!kc->enabled) return XIR__KC_MISS;
  char path[1200];
  if (xir__kcache_path(kc, key, path, sizeof path)) return XIR__KC_MISS;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT && note)
      snprintf(note, cap, "cannot read kernel cache entry '%s': %s", path, strerror(errno));
    return XIR__KC_MISS;
  }
  xir__kcache_load_result r = XIR__KC_CORRUPT;
  const char *why = NULL;
  struct stat st;
  unsigned char *buf = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "not a regular file";
    goto out;
  }
  if (st.st_size < XIR__KCACHE_HEADER || (uint64_t)st.st_size > kc->max_bytes ||
      (uint64_t)st.st_size > (1ull << 31)) {
    why = st.st_size < XIR__KCACHE_HEADER ? "shorter than its header" : "larger than the cap";
    goto out;
  }
  size_t size = (size_t)st.st_size;
  buf = xir__malloc(size);
  if (!buf) {
    r = XIR__KC_MISS;
    why = "out of memory reading it";
    goto out;
  }
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, buf + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  if (got != size) {
    why = "short read (the file changed size)";
    goto out;
  }
  if (memcmp(buf, kMagic, sizeof kMagic) != 0) {
    why = "bad magic (not a kernel cache entry of this format)";
    goto out;
  }
  if (!is_hex64(buf + OFF_KEY) || !is_hex64(buf + OFF_PSHA) || !is_hex64(buf + OFF_IRSHA) ||
      !is_hex64(buf + OFF_OBJSHA)) {
    why = "a hash field is not hex";
    goto out;
  }
  uint64_t ir_len = get_u64(buf + OFF_IRLEN), obj_size = get_u64(buf + OFF_OBJLEN);
  if (ir_len > size || obj_size > size || XIR__KCACHE_HEADER + ir_len + obj_size != size ||
      obj_size == 0) {
    why = "its lengths do not match its size";
    goto out;
  }
  char hex[65];
  xir__sha256_hex(buf + OFF_PAYLOAD, size - OFF_PAYLOAD, hex);
  if (memcmp(hex, buf + OFF_PSHA, 64) != 0) {
    why = "its payload hash does not match";
    goto out;
  }
  if (memcmp(buf + OFF_KEY, key, 64) != 0) {
    r = XIR__KC_FOREIGN;
    why = "it holds another key";
    goto out;
  }
  e->buf = buf;
  e->size = size;
  e->ir_text = (const char *)buf + XIR__KCACHE_HEADER;
  e->ir_len = (size_t)ir_len;
  e->obj = buf + XIR__KCACHE_HEADER + ir_len;
  e->obj_size = (size_t)obj_size;
  memcpy(e->ir_sha256, buf + OFF_IRSHA, 64);
  e->ir_sha256[64] = 0;
  memcpy(e->obj_sha256, buf + OFF_OBJSHA, 64);
  e->obj_sha256[64] = 0;
  buf = NULL;
  r = XIR__KC_HIT;
  (void)futimens(fd, NULL); /* LRU: a hit is a use (a read-only cache just stays unordered) */
out:
  close(fd);
  xir__free(buf);
  if (why && note) snprintf(note, cap, "kernel cache entry '%s' %s: %s", path,
                            r == XIR__KC_MISS ? "not used" : "rebuilt", why);
  return r;
}

/* ---- store ---- */

static int make_dirs(const char *path) {
  char tmp[1200];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return -1;
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      if (mkdir(tmp, 0755) && errno != EEXIST) return -1;
      *p = '/';
    }
  return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

static int write_all(int fd, const void *data, size_t n) {
  const unsigned char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* This process's estimate of each folder's size (see the top of the file). */
static pthread_mutex_t g_est_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char dir[1024];
  uint64_t bytes;
  unsigned writes;
} g_est[8];
static unsigned g_est_next;
static unsigned long g_tmp_counter;

int xir__kcache_store(const xir__kcache *kc, const char key[65], const char *ir, size_t ir_len,
                      const char ir_sha256[65], const unsigned char *obj, size_t obj_size,
                      const char obj_sha256[65], char *note, size_t cap) {
  if (note && cap) note[0] = 0;
  if (!kc->enabled) return 0;
  uint64_t total = (uint64_t)XIR__KCACHE_HEADER + ir_len + obj_size;
  if (total > kc->max_bytes) {
    if (note)
      snprintf(note, cap, "kernel cache entry not written: %llu bytes exceed the cap of %llu",
               (unsigned long long)total, (unsigned long long)kc->max_bytes);
    return -1;
  }
  char path[1200], tmp[1300];
  if (xir__kcache_path(kc, key, path, sizeof path)) return -1;
  pthread_mutex_lock(&g_est_mu);
  unsigned long serial = ++g_tmp_counter;
  pthread_mutex_unlock(&g_est_mu);
  snprintf(tmp, sizeof tmp, "%s/.%.64s.%ld.%lu.tmp", kc->dir, key, (long)getpid(), serial);
  unsigned char h[XIR__KCACHE_HEADER];
  memset(h, 0, sizeof h);
  memcpy(h, kMagic, sizeof kMagic);
  memcpy(h + OFF_KEY, key, 64);
  put_u64(h + OFF_IRLEN, ir_len);
  put_u64(h + OFF_OBJLEN, obj_size);
  memcpy(h + OFF_IRSHA, ir_sha256, 64);
  memcpy(h + OFF_OBJSHA, obj_sha256, 64);
  xir__sha256 c;
  char hex[65];
  xir__sha256_init(&c);
  xir__sha256_update(&c, h + OFF_PAYLOAD, XIR__KCACHE_HEADER - OFF_PAYLOAD);
  xir__sha256_update(&c, ir, ir_len);
  xir__sha256_update(&c, obj, obj_size);
  xir__sha256_final_hex(&c, hex);
  memcpy(h + OFF_PSHA, hex, 64);

  const char *what = "creating the folder";
  int fd = -1;
  if (make_dirs(kc->dir) != 0) goto fail;
  what = "creating a temporary file";
  fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) goto fail;
  what = "writing";
  if (write_all(fd, h, sizeof h) || write_all(fd, ir, ir_len) || write_all(fd, obj, obj_size))
    goto fail;
  what = "closing";
  int rc = close(fd);
  fd = -1;
  if (rc != 0) goto fail;
  what = "renaming the temporary file";
  if (rename(tmp, path) != 0) goto fail;

  /* keep the folder under the cap */
  int scan = 1;
  unsigned slot = 0;
  pthread_mutex_lock(&g_est_mu);
  for (slot = 0; slot < 8; slot++)
    if (!strcmp(g_est[slot].dir, kc->dir)) break;
  if (slot < 8 && g_est[slot].writes < 64 && g_est[slot].bytes + total <= kc->max_bytes) {
    g_est[slot].bytes += total;
    g_est[slot].writes++;
    scan = 0;
  }
  pthread_mutex_unlock(&g_est_mu);
  if (scan) {
    uint64_t left = xir__kcache_evict(kc->dir, kc->max_bytes, kc->max_bytes - kc->max_bytes / 10, path);
    pthread_mutex_lock(&g_est_mu);
    if (slot == 8) {
      slot = g_est_next++ % 8;
      snprintf(g_est[slot].dir, sizeof g_est[slot].dir, "%s", kc->dir);
    }
    g_est[slot].bytes = left;
    g_est[slot].writes = 0;
    pthread_mutex_unlock(&g_est_mu);
  }
  return 0;
fail:;
  int e = errno;
  if (fd >= 0) close(fd);
  if (fd >= 0 || !strcmp(what, "closing") || !strcmp(what, "renaming the temporary file"))
    unlink(tmp);
  if (note) snprintf(note, cap, "kernel cache entry not written (%s in '%s'): %s", what, kc->dir,
                     strerror(e));
  return -1;
}

/* ---- eviction ---- */

typedef struct kc_file {
  char name[80];
  uint64_t size;
  struct timespec mtime;
} kc_file;

static int older(const void *a, const void *b) {
  const kc_file *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int is_entry_name(const char *n) {
  size_t l = strlen(n);
  return l == 67 && !strcmp(n + 64, ".xk") && is_hex64((const unsigned char *)n);
}

uint64_t xir__kcache_evict(const char *dir, uint64_t high, uint64_t low, const char *keep) {
  DIR *dp = opendir(dir);
  if (!dp) return 0;
  const char *keep_name = keep ? strrchr(keep, '/') : NULL;
  keep_name = keep_name ? keep_name + 1 : keep;
  kc_file *fs = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  time_t now = time(NULL);
  struct dirent *de;
  while ((de = readdir(dp)) != NULL) {
    const char *nm = de->d_name;
    struct stat st;
    if (fstatat(dirfd(dp), nm, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    size_t l = strlen(nm);
    if (nm[0] == '.' && l > 4 && !strcmp(nm + l - 4, ".tmp")) {
      /* a writer that died between create and rename; live writers take milliseconds */
      if (now - st.st_mtime > 600) unlinkat(dirfd(dp), nm, 0);
      continue;
    }
    if (!is_entry_name(nm)) continue;
    total += (uint64_t)st.st_size;
    if (xir__grow((void **)&fs, &cap, n + 1, sizeof *fs)) continue; /* not evictable, counted */
    snprintf(fs[n].name, sizeof fs[n].name, "%s", nm);
    fs[n].size = (uint64_t)st.st_size;
    fs[n].mtime = st.st_mtim;
    n++;
  }
  if (total > high && n) {
    qsort(fs, n, sizeof *fs, older);
    for (size_t i = 0; i < n && total > low; i++) {
      if (keep_name && !strcmp(fs[i].name, keep_name)) continue;
      if (unlinkat(dirfd(dp), fs[i].name, 0) == 0 || errno == ENOENT) total -= fs[i].size;
    }
  }
  closedir(dp);
  xir__free(fs);
  return total;
}
